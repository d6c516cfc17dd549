/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: normalisation (LayerNorm, LayerNorm2d, GroupNorm, BatchNormInference,
 * RmsNorm, AdaLayerNorm, GatedResidual). See cases.h for the row format. */
#include "cases.h"

#define LN(EPS) AT(LayerNorm, .axis = -1, .eps = EPS)
#define RMS(EPS) AT(RmsNorm, .axis = -1, .eps = EPS)
#define GN(G, EPS) AT(GroupNorm, .num_groups = G, .eps = EPS)
#define ADA(KIND, EPS) AT(AdaLayerNorm, .norm = RLX_ADA_NORM_##KIND, .eps = EPS)

static const conf_case conf_cases_norm[] = {
    /* ---- LayerNorm (last axis) ---- */
    {"layer_norm_f32", RLX_OP_LayerNorm, LN(1e-5f), 3, {INF(F32, CF_NORMAL, 2, 1, 2, 3, 8), IN(F32, 8), IN(F32, 8)}},
    {"layer_norm_f64", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(F64, 4, 6), IN(F64, 6), IN(F64, 6)}},
    {"layer_norm_f16", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(F16, 3, 16), IN(F16, 16), IN(F16, 16)}},
    {"layer_norm_bf16", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(BF16, 3, 16), IN(BF16, 16), IN(BF16, 16)}},
    {"layer_norm_param_rank3", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(F32, 2, 5, 4), IN(F32, 1, 1, 4), IN(F32, 1, 1, 4)}},
    {"layer_norm_big_eps", RLX_OP_LayerNorm, LN(0.5f), 3, {INF(F32, CF_NORMAL, 0.3, 0, 3, 5), IN(F32, 5), IN(F32, 5)}},
    {"layer_norm_axis_pos",
     RLX_OP_LayerNorm,
     AT(LayerNorm, .axis = 1, .eps = 1e-5f),
     3,
     {IN(F32, 3, 7), IN(F32, 7), IN(F32, 7)}},
    {"layer_norm_rank1", RLX_OP_LayerNorm, LN(1e-6f), 3, {IN(F32, 10), IN(F32, 10), IN(F32, 10)}},
    {"layer_norm_wide_offset",
     RLX_OP_LayerNorm,
     LN(1e-5f),
     3,
     {INF(F32, CF_NORMAL, 0.01, 100, 4, 1024), IN(F32, 1024), IN(F32, 1024)}},
    {"layer_norm_empty_rows", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(F32, 0, 8), IN(F32, 8), IN(F32, 8)}},
    {"layer_norm_param_weights", RLX_OP_LayerNorm, LN(1e-5f), 3, {IN(F32, 3, 6), PARAM(F32, 6), PARAM(F32, 6)}},
    {"layer_norm_constant_row",
     RLX_OP_LayerNorm,
     LN(1e-5f),
     3,
     {INF(F32, CF_CONST, 3, 0, 2, 4), IN(F32, 4), IN(F32, 4)}},

    /* ---- LayerNorm2d (across C of NCHW) ---- */
    {"layer_norm2d_f32",
     RLX_OP_LayerNorm2d,
     AT(LayerNorm2d, .eps = 1e-6f),
     3,
     {IN(F32, 2, 4, 3, 3), IN(F32, 4), IN(F32, 4)}},
    {"layer_norm2d_f64",
     RLX_OP_LayerNorm2d,
     AT(LayerNorm2d, .eps = 1e-3f),
     3,
     {IN(F64, 1, 3, 2, 5), IN(F64, 3), IN(F64, 3)}},

    /* ---- GroupNorm ---- */
    {"group_norm_g3", RLX_OP_GroupNorm, GN(3, 1e-5f), 3, {IN(F32, 2, 6, 3, 3), IN(F32, 6), IN(F32, 6)}},
    {"group_norm_g1", RLX_OP_GroupNorm, GN(1, 1e-5f), 3, {IN(F32, 2, 4, 2, 3), IN(F32, 4), IN(F32, 4)}},
    {"group_norm_per_channel", RLX_OP_GroupNorm, GN(4, 1e-5f), 3, {IN(F32, 1, 4, 3, 3), IN(F32, 4), IN(F32, 4)}},
    {"group_norm_rank3", RLX_OP_GroupNorm, GN(2, 1e-4f), 3, {IN(F64, 2, 4, 5), IN(F64, 4), IN(F64, 4)}},
    {"group_norm_rank5", RLX_OP_GroupNorm, GN(2, 1e-5f), 3, {IN(F32, 1, 4, 2, 2, 3), IN(F32, 4), IN(F32, 4)}},

    /* ---- BatchNormInference (features = last axis) ---- */
    {"batch_norm_2d",
     RLX_OP_BatchNormInference,
     AT(BatchNormInference, .eps = 1e-5f),
     5,
     {IN(F32, 4, 6), IN(F32, 6), IN(F32, 6), IN(F32, 6), INF(F32, CF_UNIFORM, 0.5, 2, 6)}},
    {"batch_norm_3d",
     RLX_OP_BatchNormInference,
     AT(BatchNormInference, .eps = 1e-3f),
     5,
     {IN(F32, 2, 3, 5), IN(F32, 5), IN(F32, 5), IN(F32, 5), INF(F32, CF_UNIFORM, 0.1, 3, 5)}},
    {"batch_norm_f64",
     RLX_OP_BatchNormInference,
     AT(BatchNormInference, .eps = 1e-5f),
     5,
     {IN(F64, 3, 4), IN(F64, 4), IN(F64, 4), IN(F64, 4), INF(F64, CF_UNIFORM, 0.5, 2, 4)}},

    /* ---- RmsNorm (with beta) ---- */
    {"rms_norm_f32", RLX_OP_RmsNorm, RMS(1e-6f), 3, {INF(F32, CF_NORMAL, 3, 0, 3, 8), IN(F32, 8), IN(F32, 8)}},
    {"rms_norm_f64", RLX_OP_RmsNorm, RMS(1e-5f), 3, {IN(F64, 2, 3, 6), IN(F64, 6), IN(F64, 6)}},
    {"rms_norm_f16", RLX_OP_RmsNorm, RMS(1e-6f), 3, {IN(F16, 4, 16), IN(F16, 16), IN(F16, 16)}},
    {"rms_norm_big_eps", RLX_OP_RmsNorm, RMS(1.0f), 3, {INF(F32, CF_NORMAL, 0.2, 0, 2, 5), IN(F32, 5), IN(F32, 5)}},

    /* ---- AdaLayerNorm ---- */
    {"ada_layer_norm_ln",
     RLX_OP_AdaLayerNorm,
     ADA(LAYER_NORM, 1e-6f),
     3,
     {IN(F32, 2, 3, 8), IN(F32, 2, 1, 8), IN(F32, 2, 1, 8)}},
    {"ada_layer_norm_rms",
     RLX_OP_AdaLayerNorm,
     ADA(RMS_NORM, 1e-6f),
     3,
     {IN(F32, 2, 3, 8), IN(F32, 2, 1, 8), IN(F32, 2, 1, 8)}},
    {"ada_layer_norm_vec_mod", RLX_OP_AdaLayerNorm, ADA(LAYER_NORM, 1e-5f), 3, {IN(F64, 4, 6), IN(F64, 6), IN(F64, 6)}},
    {"ada_layer_norm_full_mod",
     RLX_OP_AdaLayerNorm,
     ADA(RMS_NORM, 1e-5f),
     3,
     {IN(F32, 3, 4), IN(F32, 3, 4), IN(F32, 3, 4)}},

    /* ---- GatedResidual ---- */
    {"gated_residual_bcast_gate",
     RLX_OP_GatedResidual,
     NULL,
     3,
     {IN(F32, 2, 3, 8), IN(F32, 2, 3, 8), IN(F32, 2, 1, 8)}},
    {"gated_residual_vec_gate", RLX_OP_GatedResidual, NULL, 3, {IN(F64, 4, 5), IN(F64, 4, 5), IN(F64, 5)}},
    {"gated_residual_full_gate", RLX_OP_GatedResidual, NULL, 3, {IN(F32, 3, 4), IN(F32, 3, 4), IN(F32, 3, 4)}},
    {"gated_residual_f16", RLX_OP_GatedResidual, NULL, 3, {IN(F16, 2, 8), IN(F16, 2, 8), IN(F16, 8)}},
};

#undef LN
#undef RMS
#undef GN
#undef ADA
