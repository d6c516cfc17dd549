/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: scatter / gather (ScatterAdd, ScatterNd, ScatterElements, GatherNd,
 * GatherElements). Indices are filled in range (unique where overwriting makes the order
 * matter). See cases.h for the row format. */
#include "cases.h"

#define SND(RED) AT(ScatterNd, .reduction = RLX_SCATTER_REDUCTION_##RED)
#define SEL(AX, RED) AT(ScatterElements, .axis = AX, .reduction = RLX_SCATTER_REDUCTION_##RED)

static const conf_case conf_cases_scatter[] = {
    /* ---- ScatterAdd (declared output; duplicates accumulate) ---- */
    {"scatter_add_axis0", RLX_OP_ScatterAdd, AT(ScatterAdd, .axis = 0), 2, {IN(F32, 6, 3), INF(I64, CF_INT, 0, 3, 6)}, OUT(F32, 4, 3)},
    {"scatter_add_axis1_f32_idx", RLX_OP_ScatterAdd, AT(ScatterAdd, .axis = 1), 2, {IN(F32, 2, 5), INF(F32, CF_INT, 0, 2, 5)}, OUT(F32, 2, 3)},
    {"scatter_add_axis_neg", RLX_OP_ScatterAdd, AT(ScatterAdd, .axis = -1), 2, {IN(F64, 2, 2, 4), INF(I32, CF_INT, 0, 5, 4)}, OUT(F64, 2, 2, 6)},
    {"scatter_add_1d", RLX_OP_ScatterAdd, AT(ScatterAdd, .axis = 0), 2, {IN(F32, 8), INF(I64, CF_INT, 0, 2, 8)}, OUT(F32, 3)},

    /* ---- ScatterNd: every reduction ---- */
    {"scatter_nd_rows", RLX_OP_ScatterNd, SND(NONE), 3, {IN(F32, 4, 3), INF(I64, CF_NDUNIQUE, 0, 0, 2, 1), IN(F32, 2, 3)}},
    {"scatter_nd_elements", RLX_OP_ScatterNd, SND(NONE), 3, {IN(F32, 4, 3), INF(I64, CF_NDUNIQUE, 0, 0, 5, 2), IN(F32, 5)}},
    {"scatter_nd_add_dups", RLX_OP_ScatterNd, SND(ADD), 3, {IN(F32, 4, 3), INF(I64, CF_INT, 0, 3, 6, 1), IN(F32, 6, 3)}},
    {"scatter_nd_mul", RLX_OP_ScatterNd, SND(MUL), 3, {IN(F32, 5), INF(I32, CF_INT, 0, 4, 4, 1), IN(F32, 4)}},
    {"scatter_nd_max", RLX_OP_ScatterNd, SND(MAX), 3, {IN(F32, 3, 4), INF(I64, CF_INT, 0, 2, 4, 1), IN(F32, 4, 4)}},
    {"scatter_nd_min", RLX_OP_ScatterNd, SND(MIN), 3, {IN(F64, 3, 4), INF(I64, CF_NDUNIQUE, 0, 0, 5, 2), IN(F64, 5)}},
    {"scatter_nd_negative_idx", RLX_OP_ScatterNd, SND(ADD), 3, {IN(F32, 4, 2), INF(I64, CF_INT, -4, 3, 5, 1), IN(F32, 5, 2)}},
    {"scatter_nd_f32_idx", RLX_OP_ScatterNd, SND(NONE), 3, {IN(F32, 2, 3, 2), INF(F32, CF_NDUNIQUE, 0, 0, 3, 2), IN(F32, 3, 2)}},
    {"scatter_nd_i32_data", RLX_OP_ScatterNd, SND(ADD), 3, {IN(I32, 6), INF(I64, CF_INT, 0, 5, 4, 1), IN(I32, 4)}},

    /* ---- ScatterElements ---- */
    {"scatter_elements_axis0", RLX_OP_ScatterElements, SEL(0, NONE), 3, {IN(F32, 3, 4), INF(I64, CF_PERM, 0, 3, 2, 4), IN(F32, 2, 4)}},
    {"scatter_elements_axis1", RLX_OP_ScatterElements, SEL(1, NONE), 3, {IN(F32, 3, 5), INF(I64, CF_PERM, 1, 5, 2, 3), IN(F32, 2, 3)}},
    {"scatter_elements_add", RLX_OP_ScatterElements, SEL(-1, ADD), 3, {IN(F32, 2, 4), INF(I64, CF_INT, 0, 3, 2, 6), IN(F32, 2, 6)}},
    {"scatter_elements_mul", RLX_OP_ScatterElements, SEL(0, MUL), 3, {IN(F64, 3, 3), INF(I32, CF_INT, 0, 2, 4, 3), IN(F64, 4, 3)}},
    {"scatter_elements_max", RLX_OP_ScatterElements, SEL(1, MAX), 3, {IN(F32, 2, 3), INF(I64, CF_INT, 0, 2, 2, 5), IN(F32, 2, 5)}},
    {"scatter_elements_min", RLX_OP_ScatterElements, SEL(0, MIN), 3, {IN(F32, 4, 2), INF(I64, CF_INT, 0, 3, 3, 2), IN(F32, 3, 2)}},
    {"scatter_elements_negative_idx", RLX_OP_ScatterElements, SEL(1, ADD), 3, {IN(F32, 2, 4), INF(I64, CF_INT, -4, 3, 2, 3), IN(F32, 2, 3)}},

    /* ---- GatherNd ---- */
    {"gather_nd_full", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 0), 2, {IN(F32, 4, 3, 2), INF(I64, CF_INT, 0, 1, 5, 3)}},
    {"gather_nd_rows", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 0), 2, {IN(F32, 4, 3, 2), INF(I64, CF_INT, 0, 3, 2, 1)}},
    {"gather_nd_pairs", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 0), 2, {IN(F64, 4, 3, 2), INF(I32, CF_INT, 0, 2, 2, 2, 2)}},
    {"gather_nd_batch_dims", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 1), 2, {IN(F32, 2, 3, 4), INF(I64, CF_INT, 0, 2, 2, 2, 1)}},
    {"gather_nd_negative_idx", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 0), 2, {IN(F32, 3, 4), INF(I64, CF_INT, -3, 2, 4, 1)}},
    {"gather_nd_f32_idx", RLX_OP_GatherNd, AT(GatherNd, .batch_dims = 0), 2, {IN(I32, 3, 3), INF(F32, CF_INT, 0, 2, 4, 2)}},

    /* ---- GatherElements ---- */
    {"gather_elements_axis1", RLX_OP_GatherElements, AT(GatherElements, .axis = 1), 2, {IN(F32, 3, 4), INF(I64, CF_INT, 0, 3, 3, 2)}},
    {"gather_elements_axis0", RLX_OP_GatherElements, AT(GatherElements, .axis = 0), 2, {IN(F32, 3, 4), INF(I64, CF_INT, 0, 2, 2, 4)}},
    {"gather_elements_axis_neg_3d", RLX_OP_GatherElements, AT(GatherElements, .axis = -2), 2, {IN(F64, 2, 4, 3), INF(I32, CF_INT, 0, 3, 2, 5, 3)}},
    {"gather_elements_negative_idx", RLX_OP_GatherElements, AT(GatherElements, .axis = 1), 2, {IN(F32, 2, 5), INF(I64, CF_INT, -5, 4, 2, 4)}},
    {"gather_elements_f32_idx", RLX_OP_GatherElements, AT(GatherElements, .axis = 0), 2, {IN(I64, 4, 2), INF(F32, CF_INT, 0, 3, 3, 2)}},
    {"gather_elements_empty", RLX_OP_GatherElements, AT(GatherElements, .axis = 0), 2, {IN(F32, 3, 2), IN(I64, 0, 2)}},
};

#undef SND
#undef SEL
