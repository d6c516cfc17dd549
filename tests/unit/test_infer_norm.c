/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the normalisation family and the DiT modulation blocks. */
#include "infer_test.h"

static void test_layer_norm(void) {
  rlx_attrs_LayerNorm ln;
  rlx_attrs_init(RLX_OP_LayerNorm, &ln);
  EXPECT(LayerNorm, &ln, NULL, SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8), SH(F32, 8));
  /* gamma/beta of higher rank with element count C */
  EXPECT(LayerNorm, &ln, NULL, SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 1, 1, 8), SH(F32, 1, 8));
  EXPECT(LayerNorm, &ln, NULL, SH(F16, 8), SH(F16, 8), SH(F16, 8), SH(F16, 8));
  /* any static shape with element count C is accepted; the kernels read gamma flat */
  EXPECT(LayerNorm, &ln, NULL, SH(F32, 3, 8), SH(F32, 3, 8), SH(F32, 2, 4), SH(F32, 8, 1));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 3, 8), SH(F32, 2, 3), SH(F32, 8));
  /* symbolic dims: a single non-unit axis that is the same symbol */
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 2 (beta)", SH(F32, 3, SYM(5)), SH(F32, SYM(5)),
             SH(F32, 2, SYM(5)));
  /* symbolic leading dims pass through; a symbolic width must be the same symbol */
  EXPECT(LayerNorm, &ln, NULL, SH(F32, SYM(0), SYM(1), 8), SH(F32, SYM(0), SYM(1), 8), SH(F32, 8), SH(F32, 8));
  EXPECT(LayerNorm, &ln, NULL, SH(F32, 3, SYM(5)), SH(F32, 3, SYM(5)), SH(F32, SYM(5)), SH(F32, 1, SYM(5)));
  ln.axis = 2; /* rank - 1 names the last axis too */
  EXPECT(LayerNorm, &ln, NULL, SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8), SH(F32, 8));
  ln.axis = 1;
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 5, 8), SH(F32, 8), SH(F32, 8));
  ln.axis = -2;
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 5, 8), SH(F32, 8), SH(F32, 8));
  ln.axis = -1;
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 2, 8), SH(F32, 5), SH(F32, 8));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 2 (beta)", SH(F32, 2, 8), SH(F32, 8), SH(F32, 2, 8));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 2, 8), SCALAR(F32), SH(F32, 8));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 3, SYM(5)), SH(F32, SYM(6)),
             SH(F32, SYM(5)));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "operand 2 has dtype f16", SH(F32, 2, 8), SH(F32, 8), SH(F16, 8));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SH(F32, 1), SH(F32, 1));
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "floating-point", SH(I32, 2, 8), SH(I32, 8), SH(I32, 8));
  ln.eps = -1.0f;
  EXPECT_ERR(LayerNorm, &ln, NULL, SHAPE_ERR, "attribute eps", SH(F32, 2, 8), SH(F32, 8), SH(F32, 8));
}

static void test_rms_norm(void) {
  rlx_attrs_RmsNorm rn;
  rlx_attrs_init(RLX_OP_RmsNorm, &rn);
  EXPECT(RmsNorm, &rn, NULL, SH(BF16, 4, 16), SH(BF16, 4, 16), SH(BF16, 16), SH(BF16, 16));
  /* a folded following reshape: declared [prod(leading), H] is accepted */
  rlx_shape folded = SH(F32, 6, 16);
  EXPECT(RmsNorm, &rn, &folded, SH(F32, 6, 16), SH(F32, 2, 3, 16), SH(F32, 16), SH(F32, 16));
  /* ... but only with the right element count; otherwise the plain shape comes back */
  rlx_shape wrong = SH(F32, 5, 16);
  EXPECT(RmsNorm, &rn, &wrong, SH(F32, 2, 3, 16), SH(F32, 2, 3, 16), SH(F32, 16), SH(F32, 16));
  rn.axis = 0;
  EXPECT_ERR(RmsNorm, &rn, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 16), SH(F32, 16), SH(F32, 16));
  rn.axis = -1;
  EXPECT_ERR(RmsNorm, &rn, NULL, SHAPE_ERR, "operand 2 (beta)", SH(F32, 4, 16), SH(F32, 16), SH(F32, 4));
}

static void test_layer_norm_2d(void) {
  EXPECT(LayerNorm2d, NULL, NULL, SH(F32, 2, 3, 4, 5), SH(F32, 2, 3, 4, 5), SH(F32, 3), SH(F32, 3));
  EXPECT(LayerNorm2d, NULL, NULL, SH(F32, SYM(0), 3, 4, 5), SH(F32, SYM(0), 3, 4, 5), SH(F32, 1, 3, 1, 1), SH(F32, 3));
  EXPECT_ERR(LayerNorm2d, NULL, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 2, 3, 4, 5), SH(F32, 5), SH(F32, 3));
  EXPECT_ERR(LayerNorm2d, NULL, NULL, SHAPE_ERR, "expected rank 4", SH(F32, 3, 4, 5), SH(F32, 3), SH(F32, 3));
}

static void test_group_norm(void) {
  rlx_attrs_GroupNorm gn = {.num_groups = 2, .eps = 1e-5f};
  EXPECT(GroupNorm, &gn, NULL, SH(F32, 2, 6, 4, 4), SH(F32, 2, 6, 4, 4), SH(F32, 6), SH(F32, 6));
  EXPECT(GroupNorm, &gn, NULL, SH(F32, 2, 6, 10), SH(F32, 2, 6, 10), SH(F32, 6), SH(F32, 6));
  /* a symbolic channel count cannot be checked for divisibility */
  EXPECT(GroupNorm, &gn, NULL, SH(F32, 2, SYM(3), 10), SH(F32, 2, SYM(3), 10), SH(F32, SYM(3)), SH(F32, SYM(3)));
  gn.num_groups = 4;
  EXPECT_ERR(GroupNorm, &gn, NULL, SHAPE_ERR, "attribute num_groups", SH(F32, 2, 6, 4, 4), SH(F32, 6), SH(F32, 6));
  gn.num_groups = 0;
  EXPECT_ERR(GroupNorm, &gn, NULL, SHAPE_ERR, "attribute num_groups", SH(F32, 2, 6, 4, 4), SH(F32, 6), SH(F32, 6));
  gn.num_groups = 3;
  EXPECT_ERR(GroupNorm, &gn, NULL, SHAPE_ERR, "rank >= 3", SH(F32, 2, 6), SH(F32, 6), SH(F32, 6));
  EXPECT_ERR(GroupNorm, &gn, NULL, SHAPE_ERR, "operand 2 (beta)", SH(F32, 2, 6, 4), SH(F32, 6), SH(F32, 4));
}

static void test_batch_norm(void) {
  /* features are the LAST axis */
  EXPECT(BatchNormInference, NULL, NULL, SH(F32, 2, 3, 7), SH(F32, 2, 3, 7), SH(F32, 7), SH(F32, 7), SH(F32, 7),
         SH(F32, 7));
  EXPECT_ERR(BatchNormInference, NULL, NULL, SHAPE_ERR, "operand 1 (gamma)", SH(F32, 2, 3, 7), SH(F32, 3), SH(F32, 3),
             SH(F32, 3), SH(F32, 3));
  EXPECT_ERR(BatchNormInference, NULL, NULL, SHAPE_ERR, "operand 4 (var)", SH(F32, 2, 7), SH(F32, 7), SH(F32, 7),
             SH(F32, 7), SH(F32, 6));
  EXPECT_ERR(BatchNormInference, NULL, NULL, SHAPE_ERR, "operand 3 has dtype f64", SH(F32, 2, 7), SH(F32, 7),
             SH(F32, 7), SH(F64, 7), SH(F32, 7));
  EXPECT_ERR(BatchNormInference, NULL, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SH(F32, 1), SH(F32, 1), SH(F32, 1),
             SH(F32, 1));
}

static void test_ada_and_gated(void) {
  rlx_attrs_AdaLayerNorm ad;
  rlx_attrs_init(RLX_OP_AdaLayerNorm, &ad);
  EXPECT(AdaLayerNorm, &ad, NULL, SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 2, 1, 8), SH(F32, 2, 1, 8));
  EXPECT(AdaLayerNorm, &ad, NULL, SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 8), SH(F32, 8));
  EXPECT(AdaLayerNorm, &ad, NULL, SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 2, 9, 8));
  EXPECT_ERR(AdaLayerNorm, &ad, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 2, 9, 8), SH(F32, 2, 1, 1),
             SH(F32, 2, 1, 1));
  EXPECT_ERR(AdaLayerNorm, &ad, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 2, 9, 8), SH(F32, 3, 1, 8),
             SH(F32, 3, 1, 8));
  EXPECT_ERR(AdaLayerNorm, &ad, NULL, SHAPE_ERR, "operand 2 (shift)", SH(F32, 2, 9, 8), SH(F32, 2, 1, 8), SH(F32, 8));
  EXPECT_ERR(AdaLayerNorm, &ad, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 9, 8), SH(F32, 2, 9, 8),
             SH(F32, 2, 9, 8));
  ad.norm = 5;
  EXPECT_ERR(AdaLayerNorm, &ad, NULL, SHAPE_ERR, "attribute norm", SH(F32, 2, 8), SH(F32, 8), SH(F32, 8));

  EXPECT(GatedResidual, NULL, NULL, SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 2, 1, 8));
  EXPECT(GatedResidual, NULL, NULL, SH(F32, SYM(0), 9, 8), SH(F32, SYM(0), 9, 8), SH(F32, SYM(0), 9, 8), SH(F32, 8));
  EXPECT_ERR(GatedResidual, NULL, NULL, SHAPE_ERR, "operand 1 (y)", SH(F32, 2, 9, 8), SH(F32, 2, 1, 8), SH(F32, 8));
  EXPECT_ERR(GatedResidual, NULL, NULL, SHAPE_ERR, "operand 2 (gate)", SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SH(F32, 1));
  EXPECT_ERR(GatedResidual, NULL, NULL, SHAPE_ERR, "operand 2 (gate)", SH(F32, 2, 9, 8), SH(F32, 2, 9, 8), SCALAR(F32));
  EXPECT_ERR(GatedResidual, NULL, NULL, SHAPE_ERR, "operand 2 has dtype bf16", SH(F32, 2, 8), SH(F32, 2, 8),
             SH(BF16, 8));
}

int main(void) {
  test_layer_norm();
  test_rms_norm();
  test_layer_norm_2d();
  test_group_norm();
  test_batch_norm();
  test_ada_and_gated();
  return rlx_test_finish("infer_norm");
}
