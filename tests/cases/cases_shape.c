/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: shape and data movement (Reshape, Transpose, Narrow, Concat, Expand, Gather,
 * Reverse, Pad, Slice, Tile, Trilu, Roll, KvAppend). See cases.h for the row format. */
#include "cases.h"

#define PAD(MODE, V, ...) AT(Pad, .pads = IL(__VA_ARGS__), .mode = RLX_PAD_MODE_##MODE, .value = V)
#define SLICE(AX, START, LEN, STEP) AT(Slice, .axis = AX, .start = START, .len = LEN, .step = STEP)

static const conf_case conf_cases_shape[] = {
    /* ---- Reshape ---- */
    {"reshape_merge", RLX_OP_Reshape, AT(Reshape, .new_shape = IL(6, 4)), 1, {IN(F32, 2, 3, 4)}},
    {"reshape_infer_minus1", RLX_OP_Reshape, AT(Reshape, .new_shape = IL(4, -1, 3)), 1, {IN(F32, 2, 3, 4)}},
    {"reshape_to_rank0", RLX_OP_Reshape, AT(Reshape, .new_shape = IL0), 1, {IN(F32, 1, 1)}},
    {"reshape_from_rank0", RLX_OP_Reshape, AT(Reshape, .new_shape = IL(1, 1, 1)), 1, {IN0(I32)}},
    {"reshape_empty", RLX_OP_Reshape, AT(Reshape, .new_shape = IL(3, 0)), 1, {IN(F32, 0, 3)}},
    {"reshape_i64", RLX_OP_Reshape, AT(Reshape, .new_shape = IL(12)), 1, {IN(I64, 3, 4)}},

    /* ---- Transpose ---- */
    {"transpose_2d", RLX_OP_Transpose, AT(Transpose, .perm = IL(1, 0)), 1, {IN(F32, 3, 5)}},
    {"transpose_3d", RLX_OP_Transpose, AT(Transpose, .perm = IL(2, 0, 1)), 1, {IN(F32, 2, 3, 4)}},
    {"transpose_4d_bhsd", RLX_OP_Transpose, AT(Transpose, .perm = IL(0, 2, 1, 3)), 1, {IN(F32, 2, 3, 4, 5)}},
    {"transpose_identity", RLX_OP_Transpose, AT(Transpose, .perm = IL(0, 1)), 1, {IN(F64, 2, 3)}},
    {"transpose_f16", RLX_OP_Transpose, AT(Transpose, .perm = IL(1, 0)), 1, {IN(F16, 4, 3)}},
    {"transpose_bool", RLX_OP_Transpose, AT(Transpose, .perm = IL(1, 0)), 1, {IN(BOOL, 2, 5)}},
    {"transpose_empty", RLX_OP_Transpose, AT(Transpose, .perm = IL(1, 0)), 1, {IN(F32, 0, 3)}},
    {"transpose_rank0", RLX_OP_Transpose, AT(Transpose, .perm = IL0), 1, {IN0(F32)}},

    /* ---- Narrow ---- */
    {"narrow_axis0", RLX_OP_Narrow, AT(Narrow, .axis = 0, .start = 1, .len = 2), 1, {IN(F32, 4, 3)}},
    {"narrow_axis1", RLX_OP_Narrow, AT(Narrow, .axis = 1, .start = 2, .len = 3), 1, {IN(F32, 2, 6, 2)}},
    {"narrow_len0", RLX_OP_Narrow, AT(Narrow, .axis = 1, .start = 3, .len = 0), 1, {IN(F32, 2, 3)}},
    {"narrow_i32", RLX_OP_Narrow, AT(Narrow, .axis = 0, .start = 0, .len = 1), 1, {IN(I32, 3)}},

    /* ---- Concat ---- */
    {"concat_axis0", RLX_OP_Concat, AT(Concat, .axis = 0), 2, {IN(F32, 2, 3), IN(F32, 4, 3)}},
    {"concat_axis_neg", RLX_OP_Concat, AT(Concat, .axis = -1), 3, {IN(F32, 2, 1), IN(F32, 2, 3), IN(F32, 2, 2)}},
    {"concat_middle", RLX_OP_Concat, AT(Concat, .axis = 1), 2, {IN(F64, 2, 2, 3), IN(F64, 2, 1, 3)}},
    {"concat_with_empty", RLX_OP_Concat, AT(Concat, .axis = 0), 3, {IN(F32, 2, 3), IN(F32, 0, 3), IN(F32, 1, 3)}},
    {"concat_single", RLX_OP_Concat, AT(Concat, .axis = 0), 1, {IN(I64, 5)}},
    {"concat_bool", RLX_OP_Concat, AT(Concat, .axis = 0), 2, {IN(BOOL, 3), IN(BOOL, 2)}},

    /* ---- Expand ---- */
    {"expand_basic", RLX_OP_Expand, AT(Expand, .target_shape = IL(2, 3, 4)), 1, {IN(F32, 3, 1)}},
    {"expand_vector", RLX_OP_Expand, AT(Expand, .target_shape = IL(5)), 1, {IN(F32, 1)}},
    {"expand_rank0", RLX_OP_Expand, AT(Expand, .target_shape = IL(2, 3)), 1, {IN0(F32)}},
    {"expand_keep_minus1", RLX_OP_Expand, AT(Expand, .target_shape = IL(-1, 4)), 1, {IN(F32, 3, 1)}},
    {"expand_bool", RLX_OP_Expand, AT(Expand, .target_shape = IL(3, 2)), 1, {IN(BOOL, 1, 2)}},
    {"expand_same", RLX_OP_Expand, AT(Expand, .target_shape = IL(2, 2)), 1, {IN(I32, 2, 2)}},

    /* ---- Gather ---- */
    {"gather_axis0_i64", RLX_OP_Gather, AT(Gather, .axis = 0), 2, {IN(F32, 5, 3), INF(I64, CF_INT, 0, 4, 4)}},
    {"gather_axis1_f32_idx", RLX_OP_Gather, AT(Gather, .axis = 1), 2, {IN(F32, 2, 6), INF(F32, CF_INT, 0, 5, 2, 2)}},
    {"gather_axis_neg", RLX_OP_Gather, AT(Gather, .axis = -1), 2, {IN(F64, 2, 3, 4), INF(I32, CF_INT, 0, 3, 3)}},
    {"gather_idx_rank0", RLX_OP_Gather, AT(Gather, .axis = 0), 2, {IN(F32, 4, 3), INF0(I64, CF_INT, 0, 3)}},
    {"gather_idx_empty", RLX_OP_Gather, AT(Gather, .axis = 0), 2, {IN(F32, 4, 3), IN(I64, 0)}},
    {"gather_embedding", RLX_OP_Gather, AT(Gather, .axis = 0), 2, {IN(F16, 10, 4), INF(I64, CF_INT, 0, 9, 2, 3)}},
    {"gather_i32_table", RLX_OP_Gather, AT(Gather, .axis = 0), 2, {IN(I32, 6), INF(U8, CF_INT, 0, 5, 6)}},
    {"gather_empty_table_axis", RLX_OP_Gather, AT(Gather, .axis = 1), 2, {IN(F32, 0, 3), INF(I64, CF_INT, 0, 2, 2)}},

    /* ---- Reverse ---- */
    {"reverse_axis0", RLX_OP_Reverse, AT(Reverse, .axes = IL(0)), 1, {IN(F32, 4, 3)}},
    {"reverse_two_axes", RLX_OP_Reverse, AT(Reverse, .axes = IL(0, 2)), 1, {IN(F32, 2, 3, 4)}},
    {"reverse_neg_axis", RLX_OP_Reverse, AT(Reverse, .axes = IL(-1)), 1, {IN(I32, 2, 5)}},
    {"reverse_none", RLX_OP_Reverse, AT(Reverse, .axes = IL0), 1, {IN(F32, 3)}},

    /* ---- Pad: every mode ---- */
    {"pad_constant", RLX_OP_Pad, PAD(CONSTANT, 1.5f, 1, 2, 0, 1), 1, {IN(F32, 3, 4)}},
    {"pad_constant_zero_3d", RLX_OP_Pad, PAD(CONSTANT, 0.0f, 0, 0, 2, 1, 1, 0), 1, {IN(F32, 2, 2, 3)}},
    {"pad_reflect", RLX_OP_Pad, PAD(REFLECT, 0.0f, 2, 1, 1, 3), 1, {IN(F32, 3, 4)}},
    {"pad_replicate", RLX_OP_Pad, PAD(REPLICATE, 0.0f, 2, 1, 3, 2), 1, {IN(F32, 3, 4)}},
    {"pad_circular", RLX_OP_Pad, PAD(CIRCULAR, 0.0f, 3, 1, 2, 4), 1, {IN(F32, 3, 4)}},
    {"pad_reflect_nchw", RLX_OP_Pad, PAD(REFLECT, 0.0f, 0, 0, 0, 0, 1, 1, 2, 2), 1, {IN(F32, 1, 2, 3, 4)}},
    {"pad_constant_i32", RLX_OP_Pad, PAD(CONSTANT, -7.0f, 1, 1), 1, {IN(I32, 4)}},
    {"pad_constant_f64", RLX_OP_Pad, PAD(CONSTANT, 2.0f, 0, 3), 1, {IN(F64, 2)}},
    {"pad_zero_pads", RLX_OP_Pad, PAD(REPLICATE, 0.0f, 0, 0, 0, 0), 1, {IN(F32, 2, 3)}},
    {"pad_constant_empty_axis", RLX_OP_Pad, PAD(CONSTANT, 3.0f, 1, 1, 0, 0), 1, {IN(F32, 0, 2)}},

    /* ---- Slice (positive and negative steps) ---- */
    {"slice_step1", RLX_OP_Slice, SLICE(0, 1, 3, 1), 1, {IN(F32, 5, 2)}},
    {"slice_step2", RLX_OP_Slice, SLICE(1, 0, 3, 2), 1, {IN(F32, 2, 6)}},
    {"slice_step_neg1", RLX_OP_Slice, SLICE(1, 5, 4, -1), 1, {IN(F32, 2, 6)}},
    {"slice_step_neg2", RLX_OP_Slice, SLICE(0, 6, 4, -2), 1, {IN(F32, 7, 3)}},
    {"slice_step3_axis_neg", RLX_OP_Slice, SLICE(-1, 1, 3, 3), 1, {IN(I32, 2, 3, 9)}},
    {"slice_len0", RLX_OP_Slice, SLICE(0, 2, 0, 1), 1, {IN(F32, 4, 2)}},
    {"slice_full_reverse", RLX_OP_Slice, SLICE(0, 4, 5, -1), 1, {IN(F64, 5)}},

    /* ---- Tile ---- */
    {"tile_rows", RLX_OP_Tile, AT(Tile, .reps = IL(2, 1)), 1, {IN(F32, 2, 3)}},
    {"tile_cols", RLX_OP_Tile, AT(Tile, .reps = IL(1, 3)), 1, {IN(F32, 2, 3)}},
    {"tile_3d", RLX_OP_Tile, AT(Tile, .reps = IL(2, 1, 2)), 1, {IN(I32, 1, 2, 3)}},
    {"tile_zero_rep", RLX_OP_Tile, AT(Tile, .reps = IL(0, 2)), 1, {IN(F32, 2, 3)}},
    {"tile_rank1", RLX_OP_Tile, AT(Tile, .reps = IL(4)), 1, {IN(F64, 3)}},

    /* ---- Trilu ---- */
    {"trilu_lower", RLX_OP_Trilu, AT(Trilu, .upper = false, .diagonal = 0), 1, {IN(F32, 4, 4)}},
    {"trilu_upper_diag1", RLX_OP_Trilu, AT(Trilu, .upper = true, .diagonal = 1), 1, {IN(F32, 4, 5)}},
    {"trilu_lower_diag_neg1", RLX_OP_Trilu, AT(Trilu, .upper = false, .diagonal = -1), 1, {IN(F32, 5, 3)}},
    {"trilu_upper_batched", RLX_OP_Trilu, AT(Trilu, .upper = true, .diagonal = -2), 1, {IN(F64, 2, 3, 4)}},
    {"trilu_lower_i32", RLX_OP_Trilu, AT(Trilu, .upper = false, .diagonal = 2), 1, {IN(I32, 3, 6)}},

    /* ---- Roll ---- */
    {"roll_axis0", RLX_OP_Roll, AT(Roll, .shifts = IL(1), .dims = IL(0)), 1, {IN(F32, 4, 3)}},
    {"roll_neg_shift", RLX_OP_Roll, AT(Roll, .shifts = IL(-2), .dims = IL(1)), 1, {IN(F32, 2, 5)}},
    {"roll_two_pairs", RLX_OP_Roll, AT(Roll, .shifts = IL(1, 3), .dims = IL(0, -1)), 1, {IN(F32, 3, 4)}},
    {"roll_repeated_dim", RLX_OP_Roll, AT(Roll, .shifts = IL(2, 2), .dims = IL(0, 0)), 1, {IN(I64, 7)}},
    {"roll_big_shift", RLX_OP_Roll, AT(Roll, .shifts = IL(13), .dims = IL(1)), 1, {IN(F32, 2, 5)}},
    {"roll_zero_shift", RLX_OP_Roll, AT(Roll, .shifts = IL(0), .dims = IL(0)), 1, {IN(F32, 3)}},

    /* ---- KvAppend ---- */
    {"kv_append_seq_axis", RLX_OP_KvAppend, AT(KvAppend, .axis = 1, .pos = 3), 2, {IN(F32, 1, 8, 4), IN(F32, 1, 1, 4)}},
    {"kv_append_pos0", RLX_OP_KvAppend, AT(KvAppend, .axis = 0, .pos = 0), 2, {IN(F32, 6, 3), IN(F32, 1, 3)}},
    {"kv_append_last_pos", RLX_OP_KvAppend, AT(KvAppend, .axis = 0, .pos = 5), 2, {IN(F32, 6, 3), IN(F32, 1, 3)}},
    {"kv_append_batched", RLX_OP_KvAppend, AT(KvAppend, .axis = 1, .pos = 2), 2, {IN(F32, 2, 5, 3), IN(F32, 2, 1, 3)}},
    {"kv_append_neg_axis",
     RLX_OP_KvAppend,
     AT(KvAppend, .axis = -2, .pos = 1),
     2,
     {IN(F16, 1, 2, 4, 2), IN(F16, 1, 2, 1, 2)}},
};

#undef PAD
#undef SLICE
