/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the fused / composite ops (ir-core §10.12). */
#include <math.h>

#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY

static void test_swiglu(void) {
  rlx_attrs_FusedSwiGLU a;
  rlx_attrs_init(RLX_OP_FusedSwiGLU, &a);
  EXPECT(FusedSwiGLU, &a, NULL, SH(F32, 2, 5, 64), SH(F32, 2, 5, 128));
  a.gate_first = true;
  a.cast_to = (rlx_odtype){.has = true, .v = RLX_BF16};
  EXPECT(FusedSwiGLU, &a, NULL, SH(BF16, SYM(0), 3), SH(F32, SYM(0), 6));
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "must be even", SH(F32, 2, 7));
  rlx_shape decl = SH(BF16, 4, SYM(2));
  EXPECT(FusedSwiGLU, &a, &decl, SH(BF16, 4, SYM(2)), SH(F32, 4, SYM(1)));
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "symbolic", SH(F32, 4, SYM(1)));
  a.cast_to = (rlx_odtype){.has = true, .v = RLX_I32};
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "attribute cast_to", SH(F32, 2, 8));
  a.cast_to = (rlx_odtype){.has = true, .v = 99};
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "attribute cast_to", SH(F32, 2, 8));
  a.cast_to.has = false;
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "scalar", SCALAR(F32));
  EXPECT_ERR(FusedSwiGLU, &a, NULL, SHAPE_ERR, "operand 0 has dtype i8", SH(I8, 4));
}

static void test_matmul_family(void) {
  rlx_attrs_FusedMatMulBiasAct a;
  rlx_attrs_init(RLX_OP_FusedMatMulBiasAct, &a);
  CHECK(a.activation == -1);
  EXPECT(FusedMatMulBiasAct, &a, NULL, SH(F32, 4, 6), SH(F32, 4, 5), SH(F32, 5, 6), SH(F32, 6));
  a.activation = RLX_ACT_GELU;
  /* batched x: [2, 4, 5] x [5, 6] -> [2, 4, 6] */
  EXPECT(FusedMatMulBiasAct, &a, NULL, SH(F32, 2, 4, 6), SH(F32, 2, 4, 5), SH(F32, 5, 6), SH(F32, 6));
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "operand 2 (bias)", SH(F32, 4, 5), SH(F32, 5, 6), SH(F32, 5));
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "operand 2 (bias)", SH(F32, 4, 5), SH(F32, 5, 6), SH(F32, 4, 6));
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "operand 1", SH(F32, 4, 5), SH(F32, 4, 6), SH(F32, 6));
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "operand 2 has dtype f16", SH(F32, 4, 5), SH(F32, 5, 6),
             SH(F16, 6));
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "rank >= 2", SH(F32, 5), SH(F32, 5, 6), SH(F32, 6));
  a.activation = RLX_ACT_COUNT;
  EXPECT_ERR(FusedMatMulBiasAct, &a, NULL, SHAPE_ERR, "attribute activation", SH(F32, 4, 5), SH(F32, 5, 6), SH(F32, 6));

  EXPECT(FusedMatMulResidual, NULL, NULL, SH(F32, 3, 7), SH(F32, 3, 2), SH(F32, 2, 7), SH(F32, 3, 7));
  EXPECT(FusedMatMulResidual, NULL, NULL, SH(F32, SYM(0), 7), SH(F32, SYM(0), 2), SH(F32, 2, 7), SH(F32, SYM(0), 7));
  EXPECT_ERR(FusedMatMulResidual, NULL, NULL, SHAPE_ERR, "operand 2 (residual)", SH(F32, 3, 2), SH(F32, 2, 7),
             SH(F32, 7));
  EXPECT_ERR(FusedMatMulResidual, NULL, NULL, SHAPE_ERR, "operand 2 has dtype f64", SH(F32, 3, 2), SH(F32, 2, 7),
             SH(F64, 3, 7));

  rlx_attrs_LoraMatMul l = {.scale = 0.5f};
  /* x [3, 16], W [16, 32], A [16, 4], B [4, 32] -> [3, 32] */
  EXPECT(LoraMatMul, &l, NULL, SH(F32, 3, 32), SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 16, 4), SH(F32, 4, 32));
  EXPECT(LoraMatMul, &l, NULL, SH(F32, 2, 3, 32), SH(F32, 2, 3, 16), SH(F32, 16, 32), SH(F32, 16, 4), SH(F32, 4, 32));
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "operand 3 (b)", SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 16, 4),
             SH(F32, 8, 32));
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "operand 3 (b)", SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 16, 4),
             SH(F32, 4, 31));
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "operand 2", SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 15, 4),
             SH(F32, 4, 32));
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "operand 2 (a)", SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 1, 16, 4),
             SH(F32, 4, 32));
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "operand 3 has dtype f16", SH(F32, 3, 16), SH(F32, 16, 32),
             SH(F32, 16, 4), SH(F16, 4, 32));
  l.scale = INFINITY;
  EXPECT_ERR(LoraMatMul, &l, NULL, SHAPE_ERR, "attribute scale", SH(F32, 3, 16), SH(F32, 16, 32), SH(F32, 16, 4),
             SH(F32, 4, 32));
}

static void test_conv_bias_act(void) {
  rlx_attrs_FusedConvBiasAct a;
  rlx_attrs_init(RLX_OP_FusedConvBiasAct, &a);
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  a.activation = RLX_ACT_RELU;
  /* (16 + 2 - 3)/2 + 1 = 8 */
  rlx_shape x = SH(F32, 1, 3, 16, 16), w = SH(F32, 8, 3, 3, 3), b = SH(F32, 8), y = SH(F32, 1, 8, 8, 8);
  EXPECT(FusedConvBiasAct, &a, NULL, y, x, w, b);
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, SHAPE_ERR, "operand 2 (bias)", x, w, SH(F32, 3));
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, VERIFY_ERR, "needs exactly 3 operands", x, w, b, y);
  a.has_residual = true;
  EXPECT(FusedConvBiasAct, &a, NULL, y, x, w, b, y);
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, SHAPE_ERR, "operand 3 (residual)", x, w, b, SH(F32, 1, 8, 16, 16));
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, VERIFY_ERR, "needs exactly 4 operands", x, w, b);
  a.groups = 3;
  EXPECT(FusedConvBiasAct, &a, NULL, SH(F32, 1, 6, 8, 8), x, SH(F32, 6, 1, 3, 3), SH(F32, 6), SH(F32, 1, 6, 8, 8));
  a.groups = 2;
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, SHAPE_ERR, "attribute groups", x, w, b, y);
  a.groups = 1;
  a.activation = 55;
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, SHAPE_ERR, "attribute activation", x, w, b, y);
  a.activation = -1;
  a.kernel_size = IL(5, 5);
  EXPECT_ERR(FusedConvBiasAct, &a, NULL, SHAPE_ERR, "attribute kernel_size", x, w, b, y);
}

static void test_residual_norm(void) {
  rlx_attrs_FusedResidualLN a;
  rlx_attrs_init(RLX_OP_FusedResidualLN, &a);
  rlx_shape x = SH(F32, 2, 5, 16), g = SH(F32, 16);
  EXPECT(FusedResidualLN, &a, NULL, x, x, x, g, g);
  EXPECT(FusedResidualLN, &a, NULL, x, x, x, g, SH(F32, 1, 1, 16));
  EXPECT_ERR(FusedResidualLN, &a, NULL, VERIFY_ERR, "needs exactly 4 operands", x, x, g, g, g);
  EXPECT_ERR(FusedResidualLN, &a, NULL, SHAPE_ERR, "operand 1 (residual)", x, SH(F32, 2, 16), g, g);
  EXPECT_ERR(FusedResidualLN, &a, NULL, SHAPE_ERR, "operand 3 (beta)", x, x, g, SH(F32, 8));
  a.has_bias = true;
  EXPECT(FusedResidualLN, &a, NULL, x, x, x, g, g, g);
  EXPECT_ERR(FusedResidualLN, &a, NULL, SHAPE_ERR, "operand 2 (bias)", x, x, SH(F32, 2, 16), g, g);
  EXPECT_ERR(FusedResidualLN, &a, NULL, VERIFY_ERR, "needs exactly 5 operands", x, x, g, g);
  a.eps = -0.5f;
  EXPECT_ERR(FusedResidualLN, &a, NULL, SHAPE_ERR, "attribute eps", x, x, g, g, g);

  rlx_attrs_FusedResidualRmsNorm r;
  rlx_attrs_init(RLX_OP_FusedResidualRmsNorm, &r);
  EXPECT(FusedResidualRmsNorm, &r, NULL, SH(F16, SYM(0), 8), SH(F16, SYM(0), 8), SH(F16, SYM(0), 8), SH(F16, 8),
         SH(F16, 8));
  EXPECT_ERR(FusedResidualRmsNorm, &r, NULL, SHAPE_ERR, "operand 2 (gamma)", x, x, SH(F32, 17), g);
  EXPECT_ERR(FusedResidualRmsNorm, &r, NULL, SHAPE_ERR, "operand 1 has dtype f16", x, SH(F16, 2, 5, 16), g, g);
  r.has_bias = true;
  EXPECT(FusedResidualRmsNorm, &r, NULL, x, x, x, g, g, g);
}

static void test_attention_block(void) {
  rlx_attrs_FusedAttentionBlock a;
  rlx_attrs_init(RLX_OP_FusedAttentionBlock, &a);
  a.num_heads = 4;
  a.head_dim = 8;
  rlx_shape h = SH(F32, 2, 5, 32), qkv = SH(F32, 32, 96), ow = SH(F32, 32, 32), m = SH(F32, 2, 5);
  EXPECT(FusedAttentionBlock, &a, NULL, h, h, qkv, ow, m);
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 1 (qkv_w)", h, SH(F32, 32, 64), ow, m);
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 2 (out_w)", h, qkv, SH(F32, 32, 16), m);
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 3 (mask)", h, qkv, ow, SH(F32, 2, 6));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 3 (mask) has dtype i32", h, qkv, ow, SH(I32, 2, 5));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 0 (hidden)", SH(F32, 2, 5, 24), qkv, ow, m);
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, VERIFY_ERR, "needs exactly 4 operands", h, qkv, ow, m, SH(F32, 96));
  a.has_bias = true;
  EXPECT(FusedAttentionBlock, &a, NULL, h, h, qkv, ow, m, SH(F32, 96), SH(F32, 32));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 4 (qkv_b)", h, qkv, ow, m, SH(F32, 32), SH(F32, 32));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 5 (out_b)", h, qkv, ow, m, SH(F32, 96), SH(F32, 96));
  a.has_rope = true;
  rlx_shape cs = SH(F32, 5, 4);
  EXPECT(FusedAttentionBlock, &a, NULL, h, h, qkv, ow, m, SH(F32, 96), SH(F32, 32), cs, cs);
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 6 (cos)", h, qkv, ow, m, SH(F32, 96), SH(F32, 32),
             SH(F32, 5, 3), SH(F32, 5, 3));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "operand 7 (sin)", h, qkv, ow, m, SH(F32, 96), SH(F32, 32), cs,
             SH(F32, 5, 5));
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, VERIFY_ERR, "needs exactly 8 operands", h, qkv, ow, m, cs, cs);
  a.has_bias = false;
  EXPECT(FusedAttentionBlock, &a, NULL, h, h, qkv, ow, m, cs, cs);
  a.head_dim = 7;
  a.num_heads = 1;
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 5, 7), SH(F32, 7, 21),
             SH(F32, 7, 7), m, cs, cs);
  a.num_heads = 0;
  EXPECT_ERR(FusedAttentionBlock, &a, NULL, SHAPE_ERR, "attribute num_heads", h, qkv, ow, m, cs, cs);
}

static void test_transformer_layer(void) {
  rlx_attrs_FusedTransformerLayer a;
  rlx_attrs_init(RLX_OP_FusedTransformerLayer, &a);
  CHECK(a.has_bias);
  a.num_heads = 2;
  a.head_dim = 4;
  a.intermediate_size = 16;
  rlx_shape h = SH(F32, 3, 6, 8), qkv_w = SH(F32, 8, 24), qkv_b = SH(F32, 24), out_w = SH(F32, 8, 8), v8 = SH(F32, 8),
            fc1_w = SH(F32, 8, 16), fc1_b = SH(F32, 16), fc2_w = SH(F32, 16, 8), m = SH(F32, 3, 6);
  EXPECT(FusedTransformerLayer, &a, NULL, h, h, qkv_w, qkv_b, out_w, v8, v8, v8, fc1_w, fc1_b, fc2_w, v8, v8, v8, m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 7 (fc1_w)", h, qkv_w, qkv_b, out_w, v8, v8, v8,
             SH(F32, 8, 12), fc1_b, fc2_w, v8, v8, v8, m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 8 (fc1_b)", h, qkv_w, qkv_b, out_w, v8, v8, v8, fc1_w,
             v8, fc2_w, v8, v8, v8, m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 13 (mask)", h, qkv_w, qkv_b, out_w, v8, v8, v8, fc1_w,
             fc1_b, fc2_w, v8, v8, v8, SH(F32, 3, 5));
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 12 (ln2_b)", h, qkv_w, qkv_b, out_w, v8, v8, v8,
             fc1_w, fc1_b, fc2_w, v8, v8, SH(F32, 9), m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, VERIFY_ERR, "needs exactly 14 operands", h, qkv_w, out_w, v8, fc1_w,
             fc2_w, v8, m);
  a.has_bias = false;
  EXPECT(FusedTransformerLayer, &a, NULL, h, h, qkv_w, out_w, v8, fc1_w, fc2_w, v8, m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 5 (fc2_w)", h, qkv_w, out_w, v8, fc1_w,
             SH(F32, 8, 16), v8, m);
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "operand 3 (ln1_g)", h, qkv_w, out_w, SH(F32, 16), fc1_w,
             fc2_w, v8, m);
  a.intermediate_size = 0;
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "attribute intermediate_size", h, qkv_w, out_w, v8, fc1_w,
             fc2_w, v8, m);
  a.intermediate_size = 16;
  a.eps2 = NAN;
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "attribute eps2", h, qkv_w, out_w, v8, fc1_w, fc2_w, v8, m);
  a.eps2 = 1e-5f;
  a.activation = -1;
  EXPECT_ERR(FusedTransformerLayer, &a, NULL, SHAPE_ERR, "attribute activation", h, qkv_w, out_w, v8, fc1_w, fc2_w, v8,
             m);
}

int main(void) {
  test_swiglu();
  test_matmul_family();
  test_conv_bias_act();
  test_residual_norm();
  test_attention_block();
  test_transformer_layer();
  return rlx_test_finish("infer_fused");
}
