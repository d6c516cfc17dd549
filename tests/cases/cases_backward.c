/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: the backward ops autodiff emits (spec ir-special §8), checked against PyTorch
 * autograd of the forward op (tests/reference/ref_backward.py). Operand lists follow the spec:
 * e.g. ActivationBackward [x, dy], Conv2dBackwardInput [dy, w] with the declared input shape,
 * AttentionBackward [q, k, v, dy, (mask)]. See cases.h for the row format. */
#include "cases.h"

#define ACTB(K) AT(ActivationBackward, .kind = RLX_ACT_##K)
#define POS(...) INF(F32, CF_UNIFORM, 0.2, 3, __VA_ARGS__)
#define ATTNB(H, D, MASK, WRT)                                                                      \
  AT(AttentionBackward, .num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_##MASK, .window = 0,                   \
     .wrt = RLX_ATTN_WRT_##WRT)
#define CONVB(OP, K, S, P, D, G) AT(OP, .kernel_size = K, .stride = S, .padding = P, .dilation = D, .groups = G)
#define POOLB(OP, K, S, P) AT(OP, .kernel_size = K, .stride = S, .padding = P)

static const conf_case conf_cases_backward[] = {
    /* ---- ReluBackward / ActivationBackward [x, dy] ---- */
    {"relu_backward", RLX_OP_ReluBackward, NULL, 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"relu_backward_f64", RLX_OP_ReluBackward, NULL, 2, {IN(F64, 7), IN(F64, 7)}},
    {"act_backward_gelu", RLX_OP_ActivationBackward, ACTB(GELU), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_gelu_approx", RLX_OP_ActivationBackward, ACTB(GELU_APPROX), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_silu", RLX_OP_ActivationBackward, ACTB(SILU), 2, {INF(F32, CF_NORMAL, 3, 0, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_relu", RLX_OP_ActivationBackward, ACTB(RELU), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_sigmoid", RLX_OP_ActivationBackward, ACTB(SIGMOID), 2, {INF(F32, CF_NORMAL, 3, 0, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_tanh", RLX_OP_ActivationBackward, ACTB(TANH), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_exp", RLX_OP_ActivationBackward, ACTB(EXP), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_log", RLX_OP_ActivationBackward, ACTB(LOG), 2, {POS(3, 5), IN(F32, 3, 5)}},
    {"act_backward_sqrt", RLX_OP_ActivationBackward, ACTB(SQRT), 2, {POS(3, 5), IN(F32, 3, 5)}},
    {"act_backward_rsqrt", RLX_OP_ActivationBackward, ACTB(RSQRT), 2, {POS(3, 5), IN(F32, 3, 5)}},
    {"act_backward_neg", RLX_OP_ActivationBackward, ACTB(NEG), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_abs", RLX_OP_ActivationBackward, ACTB(ABS), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_sin", RLX_OP_ActivationBackward, ACTB(SIN), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_cos", RLX_OP_ActivationBackward, ACTB(COS), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_tan", RLX_OP_ActivationBackward, ACTB(TAN), 2, {INF(F32, CF_UNIFORM, -1.2, 1.2, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_atan", RLX_OP_ActivationBackward, ACTB(ATAN), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_recip", RLX_OP_ActivationBackward, ACTB(RECIP), 2, {POS(3, 5), IN(F32, 3, 5)}},
    {"act_backward_round_ste", RLX_OP_ActivationBackward, ACTB(ROUND), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_floor", RLX_OP_ActivationBackward, ACTB(FLOOR), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_softplus", RLX_OP_ActivationBackward, ACTB(SOFTPLUS), 2, {INF(F32, CF_NORMAL, 3, 0, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_elu", RLX_OP_ActivationBackward, ACTB(ELU), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_erf", RLX_OP_ActivationBackward, ACTB(ERF), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_mish", RLX_OP_ActivationBackward, ACTB(MISH), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_softsign", RLX_OP_ActivationBackward, ACTB(SOFTSIGN), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_log_sigmoid", RLX_OP_ActivationBackward, ACTB(LOG_SIGMOID), 2, {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"act_backward_gelu_f64", RLX_OP_ActivationBackward, ACTB(GELU), 2, {IN(F64, 6), IN(F64, 6)}},

    /* ---- losses ---- */
    {"sce_dense_targets", RLX_OP_SoftmaxCrossEntropy, NULL, 2, {INF(F32, CF_NORMAL, 2, 0, 4, 5), INF(F32, CF_UNIFORM, 0, 1, 4, 5)}},
    {"sce_with_logits_f32_labels", RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, 2, {INF(F32, CF_NORMAL, 2, 0, 4, 6), INF(F32, CF_INT, 0, 5, 4)}},
    {"sce_with_logits_i64_labels", RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, 2, {IN(F64, 3, 4), INF(I64, CF_INT, 0, 3, 3)}},
    {"sce_backward", RLX_OP_SoftmaxCrossEntropyBackward, NULL, 3, {IN(F32, 4, 6), INF(I32, CF_INT, 0, 5, 4), IN(F32, 4)}},

    /* ---- attention [q, k, v, dy, (mask)] ---- */
    {"attn_backward_dq", RLX_OP_AttentionBackward, ATTNB(2, 4, NONE, QUERY), 4,
     {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 3, 4)}},
    {"attn_backward_dk_causal", RLX_OP_AttentionBackward, ATTNB(2, 4, CAUSAL, KEY), 4,
     {IN(F32, 1, 4, 8), IN(F32, 1, 4, 8), IN(F32, 1, 4, 8), IN(F32, 1, 4, 8)}},
    {"attn_backward_dv_custom", RLX_OP_AttentionBackward, ATTNB(2, 4, CUSTOM, VALUE), 5,
     {IN(F32, 2, 3, 8), IN(F32, 2, 4, 8), IN(F32, 2, 4, 8), IN(F32, 2, 3, 8), INF(F32, CF_INT, 0, 1, 2, 4)}},
    {"attn_backward_dk_gqa", RLX_OP_AttentionBackward, ATTNB(4, 2, NONE, KEY), 4,
     {IN(F64, 1, 4, 3, 2), IN(F64, 1, 2, 3, 2), IN(F64, 1, 2, 3, 2), IN(F64, 1, 4, 3, 2)}},
    {"attn_backward_dq_bias_softcap", RLX_OP_AttentionBackward,
     AT(AttentionBackward, .num_heads = 2, .head_dim = 4, .mask_kind = RLX_MASK_BIAS, .window = 0, .wrt = RLX_ATTN_WRT_QUERY,
        .score_scale = {true, 0.7f}, .attn_logit_softcap = {true, 2.0f}),
     5, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 3)}},
    {"attn_backward_all", RLX_OP_AttentionBackwardAll,
     AT(AttentionBackwardAll, .num_heads = 2, .head_dim = 4, .mask_kind = RLX_MASK_SLIDING_WINDOW, .window = 1), 4,
     {IN(F32, 1, 3, 2, 4), IN(F32, 1, 4, 2, 4), IN(F32, 1, 4, 2, 4), IN(F32, 1, 3, 2, 4)}},

    /* ---- norms ---- */
    {"layer_norm_backward_input", RLX_OP_LayerNormBackwardInput, AT(LayerNormBackwardInput, .axis = -1, .eps = 1e-5f), 3,
     {IN(F32, 3, 6), IN(F32, 6), IN(F32, 3, 6)}},
    {"layer_norm_backward_gamma", RLX_OP_LayerNormBackwardGamma, AT(LayerNormBackwardGamma, .axis = -1, .eps = 1e-5f), 2,
     {IN(F32, 2, 3, 6), IN(F32, 2, 3, 6)}},
    {"rms_norm_backward_input", RLX_OP_RmsNormBackwardInput, AT(RmsNormBackwardInput, .axis = -1, .eps = 1e-6f), 4,
     {IN(F32, 3, 6), IN(F32, 6), IN(F32, 6), IN(F32, 3, 6)}},
    {"rms_norm_backward_gamma", RLX_OP_RmsNormBackwardGamma, AT(RmsNormBackwardGamma, .axis = -1, .eps = 1e-6f), 4,
     {IN(F64, 2, 3, 6), IN(F64, 6), IN(F64, 6), IN(F64, 2, 3, 6)}},
    {"rms_norm_backward_beta", RLX_OP_RmsNormBackwardBeta, AT(RmsNormBackwardBeta, .axis = -1, .eps = 1e-6f), 4,
     {IN(F32, 4, 6), IN(F32, 6), IN(F32, 6), IN(F32, 4, 6)}},
    {"group_norm_backward_input", RLX_OP_GroupNormBackwardInput, AT(GroupNormBackwardInput, .num_groups = 2, .eps = 1e-5f), 4,
     {IN(F32, 2, 4, 3, 3), IN(F32, 4), IN(F32, 4), IN(F32, 2, 4, 3, 3)}},
    {"group_norm_backward_gamma", RLX_OP_GroupNormBackwardGamma, AT(GroupNormBackwardGamma, .num_groups = 2, .eps = 1e-5f), 2,
     {IN(F32, 2, 4, 3, 3), IN(F32, 2, 4, 3, 3)}},
    {"group_norm_backward_beta", RLX_OP_GroupNormBackwardBeta, AT(GroupNormBackwardBeta, .num_groups = 2, .eps = 1e-5f), 2,
     {IN(F32, 2, 4, 3, 3), IN(F32, 2, 4, 3, 3)}},
    {"batch_norm_backward_input", RLX_OP_BatchNormInferenceBackwardInput, AT(BatchNormInferenceBackwardInput, .eps = 1e-5f), 5,
     {IN(F32, 3, 4), IN(F32, 4), IN(F32, 4), INF(F32, CF_UNIFORM, 0.5, 2, 4), IN(F32, 3, 4)}},
    {"batch_norm_backward_gamma", RLX_OP_BatchNormInferenceBackwardGamma, AT(BatchNormInferenceBackwardGamma, .eps = 1e-5f), 4,
     {IN(F32, 2, 3, 4), IN(F32, 4), INF(F32, CF_UNIFORM, 0.5, 2, 4), IN(F32, 2, 3, 4)}},
    {"batch_norm_backward_beta", RLX_OP_BatchNormInferenceBackwardBeta, NULL, 1, {IN(F32, 2, 3, 4)}},
    {"ada_layer_norm_backward_ln", RLX_OP_AdaLayerNormBackward, AT(AdaLayerNormBackward, .norm = RLX_ADA_NORM_LAYER_NORM, .eps = 1e-6f), 4,
     {IN(F32, 2, 3, 4), IN(F32, 2, 1, 4), IN(F32, 2, 1, 4), IN(F32, 2, 3, 4)}},
    {"ada_layer_norm_backward_rms", RLX_OP_AdaLayerNormBackward, AT(AdaLayerNormBackward, .norm = RLX_ADA_NORM_RMS_NORM, .eps = 1e-6f), 4,
     {IN(F64, 3, 4), IN(F64, 4), IN(F64, 4), IN(F64, 3, 4)}},
    {"gated_residual_backward", RLX_OP_GatedResidualBackward, NULL, 4, {IN(F32, 2, 3, 4), IN(F32, 2, 3, 4), IN(F32, 2, 1, 4), IN(F32, 2, 3, 4)}},

    /* ---- Rope / Cumsum / Gather ---- */
    {"rope_backward_neox", RLX_OP_RopeBackward, AT(RopeBackward, .head_dim = 8, .n_rot = 8, .style = RLX_ROPE_STYLE_NEOX), 3,
     {IN(F32, 1, 2, 4, 8), INF(F32, CF_UNIFORM, -1, 1, 4, 4), INF(F32, CF_UNIFORM, -1, 1, 4, 4)}},
    {"rope_backward_gptj_partial", RLX_OP_RopeBackward, AT(RopeBackward, .head_dim = 8, .n_rot = 4, .style = RLX_ROPE_STYLE_GPTJ), 3,
     {IN(F32, 1, 3, 16), INF(F32, CF_UNIFORM, -1, 1, 3, 2), INF(F32, CF_UNIFORM, -1, 1, 3, 2)}},
    {"cumsum_backward", RLX_OP_CumsumBackward, AT(CumsumBackward, .axis = -1, .exclusive = false), 1, {IN(F32, 3, 5)}},
    {"cumsum_backward_exclusive_axis0", RLX_OP_CumsumBackward, AT(CumsumBackward, .axis = 0, .exclusive = true), 1, {IN(F64, 4, 3)}},
    {"gather_backward_axis1", RLX_OP_GatherBackward, AT(GatherBackward, .axis = 1), 2, {IN(F32, 3, 4), INF(I64, CF_INT, 0, 4, 4)}, OUT(F32, 3, 5)},
    {"gather_backward_axis0", RLX_OP_GatherBackward, AT(GatherBackward, .axis = 0), 2, {IN(F32, 2, 3, 2), INF(F32, CF_INT, 0, 3, 2, 3)}, OUT(F32, 4, 2)},

    /* ---- convolution and pooling ---- */
    {"conv2d_backward_input", RLX_OP_Conv2dBackwardInput, CONVB(Conv2dBackwardInput, IL(3, 3), IL(2, 2), IL(1, 1), IL0, 2), 2,
     {IN(F32, 1, 6, 4, 4), IN(F32, 6, 2, 3, 3)}, OUT(F32, 1, 4, 7, 7)},
    {"conv2d_backward_input_dilation", RLX_OP_Conv2dBackwardInput, CONVB(Conv2dBackwardInput, IL0, IL0, IL(1, 0), IL(2, 1), 1), 2,
     {IN(F64, 2, 3, 4, 3), IN(F64, 3, 2, 2, 2)}, OUT(F64, 2, 2, 4, 4)},
    {"conv2d_backward_weight", RLX_OP_Conv2dBackwardWeight, CONVB(Conv2dBackwardWeight, IL(3, 3), IL0, IL(1, 1), IL0, 1), 2,
     {IN(F32, 2, 3, 5, 5), IN(F32, 2, 4, 5, 5)}},
    {"conv2d_backward_weight_groups", RLX_OP_Conv2dBackwardWeight, CONVB(Conv2dBackwardWeight, IL(2, 2), IL(1, 1), IL0, IL(2, 2), 2), 2,
     {IN(F32, 1, 4, 6, 6), IN(F32, 1, 2, 4, 4)}},
    {"conv3d_backward_input", RLX_OP_Conv3dBackwardInput, CONVB(Conv3dBackwardInput, IL0, IL(2, 2, 2), IL0, IL0, 1), 2,
     {IN(F32, 1, 3, 2, 2, 2), IN(F32, 3, 2, 2, 2, 2)}, OUT(F32, 1, 2, 4, 4, 4)},
    {"conv3d_backward_weight", RLX_OP_Conv3dBackwardWeight, CONVB(Conv3dBackwardWeight, IL(3, 3, 3), IL0, IL(1, 1, 1), IL0, 1), 2,
     {IN(F32, 1, 2, 3, 4, 4), IN(F32, 1, 2, 3, 4, 4)}},
    {"max_pool2d_backward", RLX_OP_MaxPool2dBackward, POOLB(MaxPool2dBackward, IL(2, 2), IL(2, 2), IL0), 2, {IN(F32, 1, 2, 4, 6), IN(F32, 1, 2, 2, 3)}},
    {"max_pool2d_backward_overlap_pad", RLX_OP_MaxPool2dBackward, POOLB(MaxPool2dBackward, IL(3, 3), IL(1, 1), IL(1, 1)), 2,
     {IN(F32, 1, 1, 4, 4), IN(F32, 1, 1, 4, 4)}},
    {"max_pool3d_backward", RLX_OP_MaxPool3dBackward, POOLB(MaxPool3dBackward, IL(2, 2, 2), IL(2, 2, 2), IL0), 2,
     {IN(F32, 1, 1, 4, 4, 4), IN(F32, 1, 1, 2, 2, 2)}},
};

#undef ACTB
#undef POS
#undef ATTNB
#undef CONVB
#undef POOLB
