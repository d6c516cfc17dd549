/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: attention and positional encodings (Attention with every mask kind and
 * layout, Rope both styles, AxialRope2d). See cases.h for the row format. */
#include "cases.h"

#define ATTN(H, D, MASK, ...) AT(Attention, .num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_##MASK, __VA_ARGS__)
#define ROPE(HD, NROT, STYLE) AT(Rope, .head_dim = HD, .n_rot = NROT, .style = RLX_ROPE_STYLE_##STYLE)
#define TABLE(...) INF(F32, CF_UNIFORM, -1, 1, __VA_ARGS__)

static const conf_case conf_cases_attention[] = {
    /* ---- Attention: layouts ---- */
    {"attn_bhsd", RLX_OP_Attention, ATTN(2, 4, NONE, .window = 0), 3, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4)}},
    {"attn_bshd", RLX_OP_Attention, ATTN(2, 4, NONE, .window = 0), 3, {IN(F32, 2, 3, 2, 4), IN(F32, 2, 4, 2, 4), IN(F32, 2, 4, 2, 4)}},
    {"attn_packed_rank3", RLX_OP_Attention, ATTN(2, 4, NONE, .window = 0), 3, {IN(F32, 2, 3, 8), IN(F32, 2, 5, 8), IN(F32, 2, 5, 8)}},
    {"attn_rank2", RLX_OP_Attention, ATTN(3, 2, NONE, .window = 0), 3, {IN(F32, 4, 6), IN(F32, 4, 6), IN(F32, 4, 6)}},
    {"attn_single_key", RLX_OP_Attention, ATTN(2, 4, CAUSAL, .window = 0), 3, {IN(F32, 1, 1, 8), IN(F32, 1, 1, 8), IN(F32, 1, 1, 8)}},
    {"attn_long_causal", RLX_OP_Attention, ATTN(2, 16, CAUSAL, .window = 0), 3, {IN(F32, 1, 2, 33, 16), IN(F32, 1, 2, 33, 16), IN(F32, 1, 2, 33, 16)}},
    {"attn_f64", RLX_OP_Attention, ATTN(2, 3, NONE, .window = 0), 3, {IN(F64, 1, 2, 4, 3), IN(F64, 1, 2, 4, 3), IN(F64, 1, 2, 4, 3)}},
    {"attn_f16", RLX_OP_Attention, ATTN(1, 8, NONE, .window = 0), 3, {IN(F16, 1, 1, 4, 8), IN(F16, 1, 1, 4, 8), IN(F16, 1, 1, 4, 8)}},
    {"attn_bf16", RLX_OP_Attention, ATTN(2, 4, CAUSAL, .window = 0), 3, {IN(BF16, 1, 3, 8), IN(BF16, 1, 3, 8), IN(BF16, 1, 3, 8)}},
    /* ---- every mask kind ---- */
    {"attn_causal", RLX_OP_Attention, ATTN(2, 4, CAUSAL, .window = 0), 3, {IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4)}},
    {"attn_causal_decode", RLX_OP_Attention, ATTN(2, 4, CAUSAL, .window = 0), 3, {IN(F32, 2, 2, 8), IN(F32, 2, 6, 8), IN(F32, 2, 6, 8)}},
    {"attn_sliding_window1", RLX_OP_Attention, ATTN(1, 4, SLIDING_WINDOW, .window = 1), 3, {IN(F32, 1, 6, 4), IN(F32, 1, 6, 4), IN(F32, 1, 6, 4)}},
    {"attn_sliding_window2_decode", RLX_OP_Attention, ATTN(2, 2, SLIDING_WINDOW, .window = 2), 3, {IN(F32, 1, 2, 3, 2), IN(F32, 1, 2, 7, 2), IN(F32, 1, 2, 7, 2)}},
    {"attn_custom_mask", RLX_OP_Attention, ATTN(2, 4, CUSTOM, .window = 0), 4, {IN(F32, 2, 3, 8), IN(F32, 2, 5, 8), IN(F32, 2, 5, 8), INF(F32, CF_INT, 0, 1, 2, 5)}},
    {"attn_custom_mask_bool_3d", RLX_OP_Attention, ATTN(2, 4, CUSTOM, .window = 0), 4, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 4, 4), IN(F32, 1, 2, 4, 4), IN(BOOL, 1, 3, 4)}},
    {"attn_custom_mask_all_masked_row", RLX_OP_Attention, ATTN(1, 4, CUSTOM, .window = 0), 4, {IN(F32, 2, 2, 4), IN(F32, 2, 3, 4), IN(F32, 2, 3, 4), INF(F32, CF_CONST, 0, 0, 2, 3)}},
    {"attn_bias_mask", RLX_OP_Attention, ATTN(2, 4, BIAS, .window = 0), 4, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 3, 5)}},
    {"attn_bias_bcast", RLX_OP_Attention, ATTN(2, 4, BIAS, .window = 0), 4, {IN(F32, 2, 3, 8), IN(F32, 2, 3, 8), IN(F32, 2, 3, 8), INF(F32, CF_NORMAL, 2, 0, 3, 3)}},
    /* ---- scale, softcap, GQA, asymmetric V ---- */
    {"attn_score_scale", RLX_OP_Attention, ATTN(2, 4, NONE, .window = 0, .score_scale = {true, 0.9f}), 3, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 3, 4)}},
    {"attn_softcap", RLX_OP_Attention, ATTN(2, 4, CAUSAL, .window = 0, .attn_logit_softcap = {true, 0.5f}), 3, {INF(F32, CF_NORMAL, 3, 0, 1, 4, 8), INF(F32, CF_NORMAL, 3, 0, 1, 4, 8), IN(F32, 1, 4, 8)}},
    {"attn_gqa", RLX_OP_Attention, ATTN(4, 4, NONE, .window = 0), 3, {IN(F32, 1, 4, 3, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 4)}},
    {"attn_mqa_packed", RLX_OP_Attention, ATTN(4, 2, CAUSAL, .window = 0), 3, {IN(F32, 1, 3, 8), IN(F32, 1, 3, 2), IN(F32, 1, 3, 2)}},
    {"attn_v_head_dim", RLX_OP_Attention, ATTN(2, 4, NONE, .window = 0, .v_head_dim = {true, 6}), 3, {IN(F32, 1, 2, 3, 4), IN(F32, 1, 2, 5, 4), IN(F32, 1, 2, 5, 6)}},

    /* ---- Rope ---- */
    {"rope_neox", RLX_OP_Rope, ROPE(8, 8, NEOX), 3, {IN(F32, 1, 2, 4, 8), TABLE(4, 4), TABLE(4, 4)}},
    {"rope_gptj", RLX_OP_Rope, ROPE(8, 8, GPTJ), 3, {IN(F32, 1, 2, 4, 8), TABLE(4, 4), TABLE(4, 4)}},
    {"rope_neox_partial", RLX_OP_Rope, ROPE(8, 4, NEOX), 3, {IN(F32, 1, 4, 8), TABLE(4, 2), TABLE(4, 2)}},
    {"rope_gptj_partial", RLX_OP_Rope, ROPE(8, 4, GPTJ), 3, {IN(F32, 1, 4, 8), TABLE(4, 2), TABLE(4, 2)}},
    {"rope_packed_heads", RLX_OP_Rope, ROPE(4, 4, NEOX), 3, {IN(F32, 2, 5, 12), TABLE(5, 2), TABLE(5, 2)}},
    {"rope_wide_table_rows", RLX_OP_Rope, ROPE(4, 4, GPTJ), 3, {IN(F32, 1, 3, 8), TABLE(3, 4), TABLE(3, 4)}},
    {"rope_long_table", RLX_OP_Rope, ROPE(4, 4, NEOX), 3, {IN(F32, 1, 5, 4), TABLE(8, 2), TABLE(8, 2)}},
    {"rope_per_token_table", RLX_OP_Rope, ROPE(4, 4, NEOX), 3, {IN(F32, 2, 3, 4), TABLE(6, 2), TABLE(6, 2)}},
    {"rope_rank1_table", RLX_OP_Rope, ROPE(4, 4, GPTJ), 3, {IN(F32, 1, 5, 8), TABLE(10), TABLE(10)}},
    {"rope_f64", RLX_OP_Rope, ROPE(6, 6, NEOX), 3, {IN(F64, 2, 3, 6), INF(F64, CF_UNIFORM, -1, 1, 3, 3), INF(F64, CF_UNIFORM, -1, 1, 3, 3)}},

    /* ---- AxialRope2d ---- */
    {"axial_rope_basic", RLX_OP_AxialRope2d,
     AT(AxialRope2d, .end_x = 3, .end_y = 2, .head_dim = 8, .num_heads = 1, .theta = 100.0f, .repeat_factor = 1), 1,
     {IN(F32, 1, 6, 8)}},
    {"axial_rope_heads_repeat", RLX_OP_AxialRope2d,
     AT(AxialRope2d, .end_x = 2, .end_y = 2, .head_dim = 8, .num_heads = 2, .theta = 10000.0f, .repeat_factor = 2), 1,
     {IN(F32, 2, 8, 16)}},
    {"axial_rope_f64", RLX_OP_AxialRope2d,
     AT(AxialRope2d, .end_x = 4, .end_y = 1, .head_dim = 4, .num_heads = 3, .theta = 10.0f, .repeat_factor = 1), 1,
     {IN(F64, 1, 4, 12)}},
};

#undef ATTN
#undef ROPE
#undef TABLE
