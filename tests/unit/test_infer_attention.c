/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of Attention, Rope and AxialRope2d. */
#include "infer_test.h"

static rlx_attrs_Attention attn(int64_t heads, int64_t dim, rlx_mask mask) {
  rlx_attrs_Attention a;
  rlx_attrs_init(RLX_OP_Attention, &a);
  a.num_heads = heads;
  a.head_dim = dim;
  a.mask_kind = mask;
  return a;
}

static void test_attention_layouts(void) {
  rlx_attrs_Attention a = attn(4, 8, RLX_MASK_NONE);
  /* [B, S, H, D]: dim 1 (5) != num_heads */
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 4, 8), SH(F32, 2, 5, 4, 8), SH(F32, 2, 7, 4, 8), SH(F32, 2, 7, 4, 8));
  /* [B, H, S, D]: dim 1 == num_heads */
  EXPECT(Attention, &a, NULL, SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 7, 8), SH(F32, 2, 4, 7, 8));
  /* packed heads [B, S, H*D] and [S, H*D] */
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32));
  EXPECT(Attention, &a, NULL, SH(F16, 5, 32), SH(F16, 5, 32), SH(F16, 7, 32), SH(F16, 7, 32));
  /* asymmetric V head width */
  a.v_head_dim = (rlx_oi64){.has = true, .v = 16};
  EXPECT(Attention, &a, NULL, SH(F32, 2, 4, 5, 16), SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 7, 8), SH(F32, 2, 4, 7, 16));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 64), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 64));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 2 (V)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32));
  a.v_head_dim = (rlx_oi64){.has = true, .v = 0};
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute v_head_dim", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32));
  a.v_head_dim = (rlx_oi64){.has = false, .v = 0};
  /* grouped-query attention: K/V heads divide Q heads */
  EXPECT(Attention, &a, NULL, SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 5, 8), SH(F32, 2, 2, 7, 8), SH(F32, 2, 2, 7, 8));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 4, 8), SH(F32, 2, 5, 4, 8), SH(F32, 2, 7, 1, 8), SH(F32, 2, 7, 1, 8));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 16), SH(F32, 2, 7, 16));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "must divide", SH(F32, 2, 4, 5, 8), SH(F32, 2, 3, 7, 8),
             SH(F32, 2, 3, 7, 8));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "must divide", SH(F32, 2, 5, 32), SH(F32, 2, 7, 24), SH(F32, 2, 7, 24));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "heads", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 16));
  /* symbolic batch and sequence lengths */
  EXPECT(Attention, &a, NULL, SH(F32, SYM(0), SYM(1), 32), SH(F32, SYM(0), SYM(1), 32), SH(F32, SYM(0), SYM(3), 32),
         SH(F32, SYM(0), SYM(3), 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 2 (V)", SH(F32, SYM(0), SYM(1), 32), SH(F32, SYM(0), SYM(3), 32),
             SH(F32, SYM(0), SYM(4), 32));
}

static void test_attention_errors(void) {
  rlx_attrs_Attention a = attn(4, 8, RLX_MASK_NONE);
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "neither axis 1", SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3, 8),
             SH(F32, 2, 5, 3, 8));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 5, 4, 6), SH(F32, 2, 5, 4, 6),
             SH(F32, 2, 5, 4, 6));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "num_heads * head_dim", SH(F32, 2, 5, 30), SH(F32, 2, 5, 30),
             SH(F32, 2, 5, 30));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 1 (K)", SH(F32, 2, 5, 32), SH(F32, 5, 32), SH(F32, 5, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 2, 5, 32), SH(F16, 2, 5, 32),
             SH(F32, 2, 5, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 1 (K)", SH(F32, 2, 5, 32), SH(F32, 3, 5, 32), SH(F32, 3, 5, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 2 (V)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 6, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 0 (Q)", SH(F32, 32), SH(F32, 32), SH(F32, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 0 (Q)", SH(F32, 1, 2, 5, 4, 8), SH(F32, 1, 2, 5, 4, 8),
             SH(F32, 1, 2, 5, 4, 8));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "floating-point", SH(I32, 2, 5, 32), SH(I32, 2, 5, 32), SH(I32, 2, 5, 32));
  a.num_heads = 0;
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute num_heads", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));
  a = attn(4, 0, RLX_MASK_NONE);
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));
  a = attn(4, 8, RLX_MASK_NONE);
  a.attn_logit_softcap = (rlx_of32){.has = true, .v = 0.0f};
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute attn_logit_softcap", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));
  a.attn_logit_softcap = (rlx_of32){.has = true, .v = 30.0f};
  a.score_scale = (rlx_of32){.has = true, .v = 0.125f};
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 5, 32));
  a = attn(4, 8, (rlx_mask)9);
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute mask_kind", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));
}

static void test_attention_masks(void) {
  rlx_attrs_Attention a = attn(4, 8, RLX_MASK_CAUSAL);
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "S_k >= S_q", SH(F32, 2, 5, 32), SH(F32, 2, 3, 32), SH(F32, 2, 3, 32));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "S_k >= S_q", SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 3, 8),
             SH(F32, 2, 4, 3, 8));
  /* symbolic lengths cannot be compared */
  EXPECT(Attention, &a, NULL, SH(F32, 2, SYM(1), 32), SH(F32, 2, SYM(1), 32), SH(F32, 2, 3, 32), SH(F32, 2, 3, 32));
  /* arity follows mask_kind */
  EXPECT_ERR(Attention, &a, NULL, RLX_ERR_VERIFY, "mask_kind Causal", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32), SH(F32, 2, 5));
  a.window = 3;
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute window", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));
  a = attn(4, 8, RLX_MASK_SLIDING_WINDOW);
  a.window = 3;
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 9, 32), SH(F32, 2, 9, 32));
  a.window = -1;
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "attribute window", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));

  a = attn(4, 8, RLX_MASK_CUSTOM);
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32),
         SH(F32, 2, 7));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32),
         SH(BOOL, 2, 5, 7));
  EXPECT(Attention, &a, NULL, SH(F32, 5, 32), SH(F32, 5, 32), SH(F32, 7, 32), SH(F32, 7, 32), SH(I64, 1, 7));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 3 (mask)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32), SH(F32, 2, 5));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 3 (mask)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32), SH(F32, 2, 4, 5, 7));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 3 (mask)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32), SH(C64, 2, 7));
  EXPECT_ERR(Attention, &a, NULL, RLX_ERR_VERIFY, "mask_kind Custom", SH(F32, 2, 5, 32), SH(F32, 2, 5, 32),
             SH(F32, 2, 5, 32));

  a = attn(4, 8, RLX_MASK_BIAS);
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32),
         SH(F32, 2, 4, 5, 7));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32),
         SH(F32, 1, 1, 5, 7));
  EXPECT(Attention, &a, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 7, 32), SH(F32, 2, 7, 32), SH(F32, 7));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 3 (mask)", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32), SH(F32, 2, 3, 5, 7));
  EXPECT_ERR(Attention, &a, NULL, SHAPE_ERR, "operand 3 has dtype f16", SH(F32, 2, 5, 32), SH(F32, 2, 7, 32),
             SH(F32, 2, 7, 32), SH(F16, 2, 4, 5, 7));
}

static rlx_attrs_Rope rope(int64_t hd, int64_t nr) {
  rlx_attrs_Rope r;
  rlx_attrs_init(RLX_OP_Rope, &r);
  r.head_dim = hd;
  r.n_rot = nr;
  return r;
}

static void test_rope(void) {
  rlx_attrs_Rope r = rope(8, 8);
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F32, 5, 4));
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 5, 8), SH(F32, 5, 8));
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 20), SH(F32, 20)); /* rank 1: 5 rows of 4 */
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 10, 4), SH(F32, 10, 4)); /* per token */
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 2, 5, 4), SH(F32, 2, 5, 4));
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 64, 4), SH(F32, 64, 4));   /* longer table */
  EXPECT(Rope, &r, NULL, SH(F32, 2, 4, 5, 8), SH(F32, 2, 4, 5, 8), SH(F32, 5, 4), SH(F32, 5, 4)); /* BHSD rows */
  EXPECT(Rope, &r, NULL, SH(F32, 5, 8), SH(F32, 5, 8), SH(F32, 5, 4), SH(F32, 5, 4));
  EXPECT(Rope, &r, NULL, SH(F32, 1, SYM(1), 32), SH(F32, 1, SYM(1), 32), SH(F32, SYM(1), 4), SH(F32, SYM(1), 4));
  EXPECT(Rope, &r, NULL, SH(F32, 1, SYM(1), 32), SH(F32, 1, SYM(1), 32), SH(F32, 3, 4), SH(F32, 3, 4));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 1 (cos)", SH(F32, 2, 5, 32), SH(F32, 3, 4), SH(F32, 3, 4));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 1 (cos)", SH(F32, 2, 5, 32), SH(F32, 5, 3), SH(F32, 5, 3));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 1 (cos)", SH(F32, 2, 5, 32), SH(F32, 18), SH(F32, 18));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 1 (cos)", SH(F32, 2, 5, 32), SCALAR(F32), SCALAR(F32));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 2 (sin)", SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F32, 5, 8));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 2 has dtype f16", SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F16, 5, 4));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 2, 5, 30), SH(F32, 5, 4), SH(F32, 5, 4));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 32), SH(F32, 5, 4), SH(F32, 5, 4));
  r = rope(8, 4); /* partial rotation: rows need n_rot/2 = 2 values */
  EXPECT(Rope, &r, NULL, SH(F32, 2, 5, 32), SH(F32, 2, 5, 32), SH(F32, 5, 2), SH(F32, 5, 2));
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "operand 1 (cos)", SH(F32, 2, 5, 32), SH(F32, 5, 1), SH(F32, 5, 1));
  r = rope(7, 4);
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 5, 28), SH(F32, 5, 2), SH(F32, 5, 2));
  r = rope(8, 10);
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "attribute n_rot", SH(F32, 2, 5, 32), SH(F32, 5, 5), SH(F32, 5, 5));
  r = rope(8, 3);
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "attribute n_rot", SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F32, 5, 4));
  r = rope(8, 0);
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "attribute n_rot", SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F32, 5, 4));
  r = rope(8, 8);
  r.style = 2;
  EXPECT_ERR(Rope, &r, NULL, SHAPE_ERR, "attribute style", SH(F32, 2, 5, 32), SH(F32, 5, 4), SH(F32, 5, 4));
}

static void test_axial_rope(void) {
  rlx_attrs_AxialRope2d a;
  rlx_attrs_init(RLX_OP_AxialRope2d, &a);
  a.end_x = 4;
  a.end_y = 3;
  a.head_dim = 8;
  a.num_heads = 2;
  EXPECT(AxialRope2d, &a, NULL, SH(F32, 2, 12, 16), SH(F32, 2, 12, 16));
  EXPECT(AxialRope2d, &a, NULL, SH(F32, SYM(0), SYM(1), 16), SH(F32, SYM(0), SYM(1), 16));
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "token axis", SH(F32, 2, 13, 16));
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "num_heads * head_dim", SH(F32, 2, 12, 12));
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 12, 16));
  a.repeat_factor = 2;
  EXPECT(AxialRope2d, &a, NULL, SH(F32, 2, 24, 16), SH(F32, 2, 24, 16));
  a.repeat_factor = 0;
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "attribute repeat_factor", SH(F32, 2, 24, 16));
  a.repeat_factor = 1;
  a.head_dim = 6;
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 12, 12));
  a.head_dim = 8;
  a.theta = 0.0f;
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "attribute theta", SH(F32, 2, 12, 16));
  a.theta = 100.0f;
  a.end_x = 0;
  EXPECT_ERR(AxialRope2d, &a, NULL, SHAPE_ERR, "attribute end_x", SH(F32, 2, 0, 16));
}

int main(void) {
  test_attention_layouts();
  test_attention_errors();
  test_attention_masks();
  test_rope();
  test_axial_rope();
  return rlx_test_finish("infer_attention");
}
