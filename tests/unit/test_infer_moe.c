/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the grouped / dequantizing matmuls (ir-special §1.1, §1.4). Byte counts are
 * worked out by hand from the block tables in the comments next to each case. */
#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY

static rlx_attrs_DequantMatMul dq(rlx_quant_scheme s) {
  rlx_attrs_DequantMatMul a;
  rlx_attrs_init(RLX_OP_DequantMatMul, &a);
  a.scheme = s;
  return a;
}

static void test_grouped_matmul(void) {
  EXPECT(GroupedMatMul, NULL, NULL, SH(F32, 6, 16), SH(F32, 6, 8), SH(F32, 4, 8, 16), SH(F32, 6));
  EXPECT(GroupedMatMul, NULL, NULL, SH(F16, SYM(2), 16), SH(F16, SYM(2), 8), SH(F16, 4, 8, 16), SH(I64, SYM(2)));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 6, 8), SH(F32, 4, 9, 16), SH(F32, 6));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 6, 8), SH(F32, 8, 16), SH(F32, 6));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 2 (expert_idx)", SH(F32, 6, 8), SH(F32, 4, 8, 16),
             SH(F32, 5));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 2 (expert_idx) has dtype f16", SH(F32, 6, 8),
             SH(F32, 4, 8, 16), SH(F16, 6));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 1 has dtype bf16", SH(F32, 6, 8), SH(BF16, 4, 8, 16),
             SH(F32, 6));
  EXPECT_ERR(GroupedMatMul, NULL, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 2, 6, 8), SH(F32, 4, 8, 16), SH(F32, 6));
}

static void test_dequant_gguf(void) {
  rlx_attrs_DequantMatMul a = dq(RLX_QUANT_SCHEME_GGUF_Q4_0);
  /* Q4_0: 32 elements in 18 bytes; K 64, N 8 -> 2 * 8 * 18 = 288 bytes */
  rlx_shape d = SH(F32, 3, 8), x = SH(F32, 3, 64);
  EXPECT(DequantMatMul, &a, &d, SH(F32, 3, 8), x, SH(U8, 288));
  EXPECT(DequantMatMul, &a, &d, SH(F32, 3, 8), x, SH(U8, 8, 36));
  EXPECT(DequantMatMul, &a, &d, SH(F32, 3, 8), x, SH(U8, 8, 64)); /* logical [N, K] */
  EXPECT(DequantMatMul, &a, &d, SH(F32, 3, 8), SH(F16, 3, 64), SH(U8, 288));
  EXPECT_ERR(DequantMatMul, &a, &d, SHAPE_ERR, "operand 1 (packed weight)", x, SH(U8, 287));
  EXPECT_ERR(DequantMatMul, &a, &d, SHAPE_ERR, "operand 0 (x) has K = 48", SH(F32, 3, 48), SH(U8, 216));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "must be declared", x, SH(U8, 288));
  rlx_shape d3 = SH(F32, 1, 3, 8);
  EXPECT_ERR(DequantMatMul, &a, &d3, SHAPE_ERR, "declared shape", x, SH(U8, 288));
  EXPECT_ERR(DequantMatMul, &a, &d, SHAPE_ERR, "operand 1 (packed weight) has dtype f32", x, SH(F32, 72));
  EXPECT_ERR(DequantMatMul, &a, &d, VERIFY_ERR, "needs exactly 2 operands", x, SH(U8, 288), SH(F32, 8), SH(F32, 8));
  /* Q4_K: 256 elements in 144 bytes; K 512, N 3 -> 2 * 3 * 144 = 864 */
  a = dq(RLX_QUANT_SCHEME_GGUF_Q4K);
  rlx_shape d2 = SH(F32, 2, 3);
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 512), SH(U8, 864));
  EXPECT_ERR(DequantMatMul, &a, &d2, SHAPE_ERR, "operand 1 (packed weight)", SH(F32, 2, 512), SH(U8, 863));
  EXPECT_ERR(DequantMatMul, &a, &d2, SHAPE_ERR, "K = 288", SH(F32, 2, 288), SH(U8, 864));
  /* Q8_K: 292 bytes per 256 (not 276); Q6_K: 210; IQ4_NL: 18 per 32; NVFP4: 9 per 16 */
  a = dq(RLX_QUANT_SCHEME_GGUF_Q8K);
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 256), SH(U8, 876));
  a = dq(RLX_QUANT_SCHEME_GGUF_Q6K);
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 256), SH(U8, 630));
  a = dq(RLX_QUANT_SCHEME_GGUF_IQ4NL);
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 64), SH(U8, 108));
  a = dq(RLX_QUANT_SCHEME_GGUF_NVFP4);
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 16), SH(U8, 27));
  a = dq(RLX_QUANT_SCHEME_GGUF_Q1_0); /* 18 bytes per 128 */
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, 128), SH(U8, 54));
  /* symbolic K: the byte count cannot be checked */
  EXPECT(DequantMatMul, &a, &d2, SH(F32, 2, 3), SH(F32, 2, SYM(1)), SH(U8, 7));
  a.scheme = 99;
  EXPECT_ERR(DequantMatMul, &a, &d2, SHAPE_ERR, "attribute scheme", SH(F32, 2, 128), SH(U8, 54));
}

static void test_dequant_blocks(void) {
  /* Int8Block, block 32: W [K, N] i8, scale [ceil(K/32), N] */
  rlx_attrs_DequantMatMul a = dq(RLX_QUANT_SCHEME_INT8_BLOCK);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 4, 10), SH(F32, 4, 64), SH(I8, 64, 10), SH(F32, 2, 10), SH(F32, 1));
  /* K 70 -> ceil(70/32) = 3 scale rows */
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 4, 10), SH(F32, 4, 70), SH(I8, 70, 10), SH(F32, 3, 10), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scale)", SH(F32, 4, 70), SH(I8, 70, 10), SH(F32, 2, 10),
             SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_q)", SH(F32, 4, 64), SH(I8, 64, 9), SH(F32, 2, 10),
             SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_q) has dtype f32", SH(F32, 4, 64), SH(F32, 64, 10),
             SH(F32, 2, 10), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, VERIFY_ERR, "needs exactly 4 operands", SH(F32, 4, 64), SH(I8, 64, 10));
  a.block_size = 0;
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "attribute block_size", SH(F32, 4, 64), SH(I8, 64, 10), SH(F32, 2, 10),
             SH(F32, 1));
  /* asymmetric: zero point has the scale's shape */
  a = dq(RLX_QUANT_SCHEME_INT8_BLOCK_ASYM);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 4, 10), SH(F32, 4, 64), SH(I8, 64, 10), SH(F32, 2, 10), SH(F32, 2, 10));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 3 (zero point)", SH(F32, 4, 64), SH(I8, 64, 10),
             SH(F32, 2, 10), SH(F32, 1));
  /* Int4Block: K 7, N 3 -> 21 nibbles in ceil(21/2) = 11 bytes */
  a = dq(RLX_QUANT_SCHEME_INT4_BLOCK);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 3), SH(F32, 2, 7), SH(U8, 11), SH(F32, 1, 3), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_q)", SH(F32, 2, 7), SH(U8, 10), SH(F32, 1, 3),
             SH(F32, 1));
  /* Fp8: scale [N]; K 16, N 5 -> 80 bytes */
  a = dq(RLX_QUANT_SCHEME_FP8_E4M3);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 5), SH(F32, 2, 16), SH(U8, 16, 5), SH(F32, 5), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scale)", SH(F32, 2, 16), SH(U8, 16, 5), SH(F32, 1, 5),
             SH(F32, 1));
  /* Nvfp4Block: group 16, scale u8 [ceil(K/16), N], global f32 [1]; K 32, N 4 -> 64 bytes */
  a = dq(RLX_QUANT_SCHEME_NVFP4_BLOCK);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 1, 4), SH(F32, 1, 32), SH(U8, 64), SH(U8, 2, 4), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 3 (global scale)", SH(F32, 1, 32), SH(U8, 64), SH(U8, 2, 4),
             SH(F32, 2));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scale (E4M3 codes)) has dtype f32", SH(F32, 1, 32),
             SH(U8, 64), SH(F32, 2, 4), SH(F32, 1));
}

static void test_dequant_mlx(void) {
  /* MlxAffine 4-bit, group 64: W [N, K] packed; K 128, N 6 -> 6*128*4/8 = 384 bytes = 96 u32 words */
  rlx_attrs_DequantMatMul a = dq(RLX_QUANT_SCHEME_MLX_AFFINE);
  rlx_shape x = SH(F32, 2, 128), s = SH(F32, 6, 2);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 6), x, SH(U32, 6, 16), s, s);
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 6), x, SH(U8, 384), s, s);
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_q)", x, SH(U32, 6, 15), s, s);
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 3 (biases)", x, SH(U32, 6, 16), s, SH(F32, 6, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scales)", x, SH(U32, 6, 16), SH(F32, 6, 4), SH(F32, 6, 4));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "attribute group_size", SH(F32, 2, 96), SH(U8, 288), s, s);
  /* 3-bit: 6*128*3/8 = 288 bytes */
  a.bits = 3;
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 6), x, SH(U8, 288), s, s);
  a.bits = 7;
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "attribute bits", x, SH(U8, 336), s, s);
  /* MlxMxfp4, group 32: scales u8 [6, 4], 6*128/2 = 384 bytes */
  a = dq(RLX_QUANT_SCHEME_MLX_MXFP4);
  a.group_size = 32;
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 6), x, SH(U8, 384), SH(U8, 6, 4), SH(F32, 1));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scales (E8M0 codes)) has dtype f32", x, SH(U8, 384),
             SH(F32, 6, 4), SH(F32, 1));
  /* MlxMxfp8: one byte per weight */
  a = dq(RLX_QUANT_SCHEME_MLX_MXFP8);
  a.group_size = 32;
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 2, 6), x, SH(U8, 768), SH(U8, 6, 4), SH(F32, 1));
  /* MxFp4x2Block, group 32: K 64, N 5 -> scale 2*2*5 = 20 f32, w_q 2*ceil(320/2) = 320 bytes */
  a = dq(RLX_QUANT_SCHEME_MXFP4X2_BLOCK);
  a.group_size = 32;
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 3, 5), SH(F32, 3, 64), SH(U8, 320), SH(F32, 20));
  EXPECT(DequantMatMul, &a, NULL, SH(F32, 3, 5), SH(F32, 3, 64), SH(U8, 2, 160), SH(F32, 2, 2, 5));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 2 (scale)", SH(F32, 3, 64), SH(U8, 320), SH(F32, 21));
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_q)", SH(F32, 3, 64), SH(U8, 300), SH(F32, 20));
  EXPECT_ERR(DequantMatMul, &a, NULL, VERIFY_ERR, "needs exactly 3 operands", SH(F32, 3, 64), SH(U8, 320), SH(F32, 20),
             SH(F32, 1));
  a.group_size = 0;
  EXPECT_ERR(DequantMatMul, &a, NULL, SHAPE_ERR, "attribute group_size", SH(F32, 3, 64), SH(U8, 320), SH(F32, 20));
}

static void test_dequant_grouped(void) {
  rlx_attrs_DequantGroupedMatMul a;
  rlx_attrs_init(RLX_OP_DequantGroupedMatMul, &a);
  a.scheme = RLX_QUANT_SCHEME_GGUF_Q8_0;
  /* Q8_0: 34 bytes per 32; K 64, N 10 -> slab 2*10*34 = 680; E 3 -> 2040 bytes */
  rlx_shape d = SH(F32, 5, 10), x = SH(F32, 5, 64), idx = SH(F32, 5);
  EXPECT(DequantGroupedMatMul, &a, &d, SH(F32, 5, 10), x, SH(U8, 2040), idx);
  EXPECT(DequantGroupedMatMul, &a, &d, SH(F32, 5, 10), x, SH(U8, 3, 10, 64), idx); /* logical [E, N, K] */
  EXPECT_ERR(DequantGroupedMatMul, &a, &d, SHAPE_ERR, "operand 1 (packed weights)", x, SH(U8, 2000), idx);
  EXPECT_ERR(DequantGroupedMatMul, &a, &d, SHAPE_ERR, "operand 1 (packed weights)", x, SH(U8, 0), idx);
  EXPECT_ERR(DequantGroupedMatMul, &a, NULL, SHAPE_ERR, "must be declared", x, SH(U8, 2040), idx);
  EXPECT_ERR(DequantGroupedMatMul, &a, &d, SHAPE_ERR, "operand 2 (expert_idx)", x, SH(U8, 2040), SH(F32, 4));
  EXPECT_ERR(DequantGroupedMatMul, &a, &d, SHAPE_ERR, "K = 40", SH(F32, 5, 40), SH(U8, 2040), idx);
  a.scheme = RLX_QUANT_SCHEME_MLX_AFFINE;
  EXPECT_ERR(DequantGroupedMatMul, &a, &d, SHAPE_ERR, "attribute scheme is MlxAffine", x, SH(U8, 2040), idx);

  rlx_attrs_DequantGroupedMatMulMlx m;
  rlx_attrs_init(RLX_OP_DequantGroupedMatMulMlx, &m);
  m.group_size = 32;
  /* E 2, out 12, K 64, 4 bits: 2*12*64*4/8 = 768 bytes = 192 u32 */
  rlx_shape sc = SH(F32, 2, 12, 2);
  EXPECT(DequantGroupedMatMulMlx, &m, NULL, SH(F32, 5, 12), x, SH(U32, 192), sc, sc, idx);
  EXPECT_ERR(DequantGroupedMatMulMlx, &m, NULL, SHAPE_ERR, "operand 1 (weight)", x, SH(U32, 191), sc, sc, idx);
  EXPECT_ERR(DequantGroupedMatMulMlx, &m, NULL, SHAPE_ERR, "operand 2 (scales)", x, SH(U32, 192), SH(F32, 2, 12, 3),
             SH(F32, 2, 12, 3), idx);
  EXPECT_ERR(DequantGroupedMatMulMlx, &m, NULL, SHAPE_ERR, "operand 3 (biases)", x, SH(U32, 192), sc, SH(F32, 2, 12, 1),
             idx);
  EXPECT_ERR(DequantGroupedMatMulMlx, &m, NULL, SHAPE_ERR, "operand 4 (expert_idx)", x, SH(U32, 192), sc, sc,
             SH(F32, 6));
  m.scheme = RLX_QUANT_SCHEME_MLX_MXFP4; /* 2*12*64/2 = 768 bytes, u8 E8M0 scales, biases unused */
  EXPECT(DequantGroupedMatMulMlx, &m, NULL, SH(F32, 5, 12), x, SH(U8, 768), SH(U8, 2, 12, 2), SH(F32, 1), idx);
  m.scheme = RLX_QUANT_SCHEME_INT8_BLOCK;
  EXPECT_ERR(DequantGroupedMatMulMlx, &m, NULL, SHAPE_ERR, "attribute scheme", x, SH(U32, 192), sc, sc, idx);

  rlx_attrs_DequantMoEWeights w;
  rlx_attrs_init(RLX_OP_DequantMoEWeights, &w);
  /* Q4_0: E 2, K 64, N 8 -> 2 * (2*8*18) = 576 bytes */
  rlx_shape dw = SH(F32, 2, 64, 8);
  EXPECT(DequantMoEWeights, &w, &dw, SH(F32, 2, 64, 8), SH(U8, 576));
  EXPECT(DequantMoEWeights, &w, &dw, SH(F32, 2, 64, 8), SH(U8, 2, 8, 64));
  EXPECT_ERR(DequantMoEWeights, &w, &dw, SHAPE_ERR, "operand 0 (packed weights)", SH(U8, 575));
  EXPECT_ERR(DequantMoEWeights, &w, NULL, SHAPE_ERR, "must be declared", SH(U8, 576));
  rlx_shape dk = SH(F32, 2, 48, 8);
  EXPECT_ERR(DequantMoEWeights, &w, &dk, SHAPE_ERR, "K = 48", SH(U8, 432));
  w.scheme = RLX_QUANT_SCHEME_FP8_E4M3;
  EXPECT_ERR(DequantMoEWeights, &w, &dw, SHAPE_ERR, "attribute scheme", SH(U8, 576));
}

static void test_scaled_grouped(void) {
  rlx_attrs_ScaledGroupedMatMul a;
  rlx_attrs_init(RLX_OP_ScaledGroupedMatMul, &a);
  rlx_shape x = SH(U8, 6, 32), w = SH(U8, 4, 10, 32), one = SH(F32, 1), idx = SH(F32, 6);
  EXPECT(ScaledGroupedMatMul, &a, NULL, SH(F32, 6, 10), x, w, one, one, idx);
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 1 (w_codes)", x, SH(U8, 4, 10, 16), one, one, idx);
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 0 (in_codes) has dtype f32", SH(F32, 6, 32), w, one,
             one, idx);
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 2 (in_scale)", x, w, SH(F32, 2), one, idx);
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 4 (expert_idx)", x, w, one, one, SH(F32, 5));
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, VERIFY_ERR, "needs exactly 5 operands", x, w, one, one, idx,
             SH(F32, 4, 10));
  a.has_bias = true;
  EXPECT(ScaledGroupedMatMul, &a, NULL, SH(F32, 6, 10), x, w, one, one, idx, SH(F32, 4, 10));
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 5 (bias)", x, w, one, one, idx, SH(F32, 10));
  /* MX block scales: ceil(32/32) = 1 per row -> in 6, w 4*10 = 40 */
  a.has_bias = false;
  a.layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0;
  EXPECT(ScaledGroupedMatMul, &a, NULL, SH(F32, 6, 10), x, w, SH(U8, 6, 1), SH(U8, 40), idx);
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "operand 3 (w_scale)", x, w, SH(U8, 6, 1), SH(U8, 39), idx);
  /* block 16 -> 2 per row */
  a.block = 16;
  EXPECT(ScaledGroupedMatMul, &a, NULL, SH(F32, 6, 10), x, w, SH(U8, 12), SH(U8, 4, 10, 2), idx);
  a.block = 0;
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "attribute block", x, w, SH(U8, 12), SH(U8, 80), idx);
  a.block = 32;
  a.rhs_format = RLX_SCALED_FORMAT_CUSTOM;
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "attribute rhs_format is Custom", x, w, SH(U8, 6), SH(U8, 40),
             idx);
  a.rhs_format = 42;
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "attribute rhs_format", x, w, SH(U8, 6), SH(U8, 40), idx);
  a.rhs_format = RLX_SCALED_FORMAT_F4E2M1;
  a.layout = 9;
  EXPECT_ERR(ScaledGroupedMatMul, &a, NULL, SHAPE_ERR, "attribute layout", x, w, SH(U8, 6), SH(U8, 40), idx);
}

int main(void) {
  test_grouped_matmul();
  test_dequant_gguf();
  test_dequant_blocks();
  test_dequant_mlx();
  test_dequant_grouped();
  test_scaled_grouped();
  return rlx_test_finish("infer_moe");
}
