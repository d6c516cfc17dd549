/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the quantization ops and of the codebook / spline ("synth") ops. Expected shapes
 * are worked out by hand from the definitions in docs/ir-decisions.d/special-shapes.md. */
#include <math.h>

#include "infer_test.h"
#include "attr_lists.h"

#define VERIFY_ERR RLX_ERR_VERIFY

static void test_quantize(void) {
  rlx_attrs_Quantize q;
  rlx_attrs_init(RLX_OP_Quantize, &q);
  q.scales = FL(0.5f);
  EXPECT(Quantize, &q, NULL, SH(I8, 2, 3), SH(F32, 2, 3));
  EXPECT(Quantize, &q, NULL, SCALAR(I8), SCALAR(F32)); /* per-tensor needs no axis */
  q.scales = FL(0.1f, 0.2f, 0.3f);
  q.axis = 1;
  q.zero_points = IL(1, -2, 3);
  EXPECT(Quantize, &q, NULL, SH(I8, 2, 3), SH(F32, 2, 3));
  q.axis = -1;
  EXPECT(Quantize, &q, NULL, SH(I8, 4, 3), SH(F32, 4, 3));
  q.zero_points = IL(7);
  EXPECT(Quantize, &q, NULL, SH(I8, 4, 3), SH(F32, 4, 3));
  q.axis = 0; /* a symbolic channel axis cannot be checked against the scale count */
  EXPECT(Quantize, &q, NULL, SH(I8, SYM(0), 3), SH(F32, SYM(0), 3));
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute scales", SH(F32, 4, 3));
  q.axis = 2;
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 3));
  q.axis = -1;
  q.zero_points = IL(1, 2);
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute zero_points", SH(F32, 4, 3));
  q.zero_points = IL(0, 128, 0);
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute zero_points", SH(F32, 4, 3));
  q.zero_points = NOLIST;
  q.scales = FL(0.1f, 0.0f, 0.3f);
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute scales", SH(F32, 4, 3));
  q.scales = FL(NAN);
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute scales", SH(F32, 4, 3));
  q.scales = (rlx_flist){.v = NULL, .n = 0};
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "attribute scales", SH(F32, 4, 3));
  q.scales = FL(1.0f);
  EXPECT_ERR(Quantize, &q, NULL, SHAPE_ERR, "operand 0 (x) has dtype i32", SH(I32, 4, 3));
}

static void test_dequantize(void) {
  rlx_attrs_Dequantize q;
  rlx_attrs_init(RLX_OP_Dequantize, &q);
  q.scales = FL(0.25f, 0.5f);
  q.axis = 0;
  q.zero_points = IL(3, 4);
  EXPECT(Dequantize, &q, NULL, SH(F32, 2, 5), SH(I8, 2, 5));
  EXPECT_ERR(Dequantize, &q, NULL, SHAPE_ERR, "operand 0 (q) has dtype f32", SH(F32, 2, 5));
  EXPECT_ERR(Dequantize, &q, NULL, SHAPE_ERR, "attribute scales", SH(I8, 3, 5));
}

static void test_fake_quantize(void) {
  rlx_attrs_FakeQuantize f;
  rlx_attrs_init(RLX_OP_FakeQuantize, &f);
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3));
  EXPECT(FakeQuantize, &f, NULL, SH(F16, 2, 3), SH(F16, 2, 3));
  EXPECT_ERR(FakeQuantize, &f, NULL, VERIFY_ERR, "needs exactly 1", SH(F32, 2, 3), SH(F32, 3));
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "operand 0 (x)", SH(I8, 2, 3));
  f.bits = 4;
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3));
  f.bits = 2;
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3));
  f.bits = 3;
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "attribute bits", SH(F32, 2, 3));
  f.bits = 8;
  f.axis = 2;
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 3));
  f.axis = -1;
  f.scale_mode = RLX_SCALE_MODE_EMA;
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3), SH(F32, 3));
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3), SH(F32, 1));
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "operand 1 (state)", SH(F32, 2, 3), SH(F32, 2));
  EXPECT_ERR(FakeQuantize, &f, NULL, VERIFY_ERR, "EMA/Fixed", SH(F32, 2, 3));
  f.decay = 1.5f;
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "attribute decay", SH(F32, 2, 3), SH(F32, 3));
  f.decay = 0.9f;
  f.scale_mode = RLX_SCALE_MODE_FIXED;
  f.axis = 0;
  EXPECT(FakeQuantize, &f, NULL, SH(F32, 2, 3), SH(F32, 2, 3), SH(F32, 2));
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "operand 1 (state)", SH(F32, 2, 3), SH(F32, 3));
  f.scale_mode = 7;
  EXPECT_ERR(FakeQuantize, &f, NULL, SHAPE_ERR, "attribute scale_mode", SH(F32, 2, 3));
}

static void test_lsq(void) {
  rlx_attrs_FakeQuantizeLSQ l;
  rlx_attrs_init(RLX_OP_FakeQuantizeLSQ, &l);
  EXPECT(FakeQuantizeLSQ, &l, NULL, SH(F32, 4, 3), SH(F32, 4, 3), SH(F32, 3));
  EXPECT(FakeQuantizeLSQ, &l, NULL, SH(F32, 4, 3), SH(F32, 4, 3), SH(F32, 1));
  EXPECT_ERR(FakeQuantizeLSQ, &l, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 4, 3), SH(F32, 4));
  l.bits = 16;
  EXPECT_ERR(FakeQuantizeLSQ, &l, NULL, SHAPE_ERR, "attribute bits", SH(F32, 4, 3), SH(F32, 3));

  rlx_attrs_FakeQuantizeLSQBackwardX bx;
  rlx_attrs_init(RLX_OP_FakeQuantizeLSQBackwardX, &bx);
  EXPECT(FakeQuantizeLSQBackwardX, &bx, NULL, SH(F32, 4, 3), SH(F32, 4, 3), SH(F32, 3), SH(F32, 4, 3));
  EXPECT_ERR(FakeQuantizeLSQBackwardX, &bx, NULL, SHAPE_ERR, "operand 2 (dy)", SH(F32, 4, 3), SH(F32, 3),
             SH(F32, 3, 4));
  EXPECT_ERR(FakeQuantizeLSQBackwardX, &bx, NULL, VERIFY_ERR, "needs exactly 3", SH(F32, 4, 3), SH(F32, 3));

  rlx_attrs_FakeQuantizeLSQBackwardScale bs;
  rlx_attrs_init(RLX_OP_FakeQuantizeLSQBackwardScale, &bs);
  EXPECT(FakeQuantizeLSQBackwardScale, &bs, NULL, SH(F32, 3), SH(F32, 4, 3), SH(F32, 3), SH(F32, 4, 3));
  EXPECT(FakeQuantizeLSQBackwardScale, &bs, NULL, SH(F32, 1), SH(F32, 4, 3), SH(F32, 1), SH(F32, 4, 3));
  bs.axis = 0;
  EXPECT(FakeQuantizeLSQBackwardScale, &bs, NULL, SH(F32, 4), SH(F32, 4, 3), SH(F32, 4), SH(F32, 4, 3));
  EXPECT_ERR(FakeQuantizeLSQBackwardScale, &bs, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 4, 3), SH(F32, 3),
             SH(F32, 4, 3));
}

static void test_qmatmul(void) {
  rlx_attrs_QMatMul q;
  rlx_attrs_init(RLX_OP_QMatMul, &q);
  q.x_zp = -3;
  q.out_zp = 5;
  q.mult = 0.01f;
  EXPECT(QMatMul, &q, NULL, SH(I8, 4, 5), SH(I8, 4, 8), SH(I8, 8, 5), SH(I32, 5));
  EXPECT(QMatMul, &q, NULL, SH(I8, SYM(0), 5), SH(I8, SYM(0), 8), SH(I8, 8, 5), SH(I32, 5));
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "operand 1 (w)", SH(I8, 4, 8), SH(I8, 7, 5), SH(I32, 5));
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "operand 2 (bias)", SH(I8, 4, 8), SH(I8, 8, 5), SH(I32, 4));
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "operand 2 (bias) has dtype i8", SH(I8, 4, 8), SH(I8, 8, 5), SH(I8, 5));
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "operand 0 (x) has dtype f32", SH(F32, 4, 8), SH(I8, 8, 5), SH(I32, 5));
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "operand 0 (x)", SH(I8, 2, 4, 8), SH(I8, 8, 5), SH(I32, 5));
  q.w_zp = 200;
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "attribute w_zp", SH(I8, 4, 8), SH(I8, 8, 5), SH(I32, 5));
  q.w_zp = 0;
  q.mult = INFINITY;
  EXPECT_ERR(QMatMul, &q, NULL, SHAPE_ERR, "attribute mult", SH(I8, 4, 8), SH(I8, 8, 5), SH(I32, 5));
}

static void test_qconv2d(void) {
  rlx_attrs_QConv2d q;
  rlx_attrs_init(RLX_OP_QConv2d, &q);
  /* H: (10 + 1 + 1 - 3) / 2 + 1 = 5; W: (12 + 2 - 3) / 2 + 1 = 6 */
  q.groups = 2;
  q.stride = IL(2, 2);
  q.padding = IL(1, 1);
  EXPECT(QConv2d, &q, NULL, SH(I8, 1, 6, 5, 6), SH(I8, 1, 4, 10, 12), SH(I8, 6, 2, 3, 3), SH(I32, 6));
  q.kernel_size = IL(3, 3);
  EXPECT(QConv2d, &q, NULL, SH(I8, SYM(0), 6, 5, 6), SH(I8, SYM(0), 4, 10, 12), SH(I8, 6, 2, 3, 3), SH(I32, 6));
  q.kernel_size = IL(5, 5);
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute kernel_size", SH(I8, 1, 4, 10, 12), SH(I8, 6, 2, 3, 3),
             SH(I32, 6));
  q.kernel_size = NOLIST;
  /* begin/end padding (0,1 | 2,3), dilation (2,1): H = 10 + 0 + 2 - 5 + 1 = 8, W = 12 + 1 + 3 - 3 + 1 = 14 */
  q.groups = 1;
  q.stride = NOLIST;
  q.padding = IL(0, 1, 2, 3);
  q.dilation = IL(2, 1);
  EXPECT(QConv2d, &q, NULL, SH(I8, 1, 6, 8, 14), SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.padding = IL(1, 1, 1);
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute padding", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.padding = NOLIST;
  q.dilation = NOLIST;
  q.stride = IL(0, 1);
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute stride", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.stride = NOLIST;
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "operand 1 (w)", SH(I8, 1, 4, 10, 12), SH(I8, 6, 2, 3, 3), SH(I32, 6));
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "operand 2 (bias)", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 4));
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "operand 1 (w)", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 0, 3), SH(I32, 6));
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "padded height", SH(I8, 1, 4, 2, 2), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.groups = 3;
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute groups", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.groups = 0;
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute groups", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.groups = 1;
  /* a symbolic height is taken from the declared shape */
  rlx_shape decl = SH(I8, 1, 6, SYM(1), 10);
  EXPECT(QConv2d, &q, &decl, decl, SH(I8, 1, 4, SYM(1), 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "symbolic", SH(I8, 1, 4, SYM(1), 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
  q.out_zp = -129;
  EXPECT_ERR(QConv2d, &q, NULL, SHAPE_ERR, "attribute out_zp", SH(I8, 1, 4, 10, 12), SH(I8, 6, 4, 3, 3), SH(I32, 6));
}

static void test_scaled_quant_scale(void) {
  rlx_attrs_ScaledQuantScale s;
  rlx_attrs_init(RLX_OP_ScaledQuantScale, &s);
  EXPECT(ScaledQuantScale, &s, NULL, SH(F32, 1), SH(F32, 4, 64));
  s.layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0;
  s.block = 32;
  EXPECT(ScaledQuantScale, &s, NULL, SH(U8, 4, 3), SH(F32, 4, 70)); /* ceil(70 / 32) = 3 */
  EXPECT(ScaledQuantScale, &s, NULL, SH(U8, 2, 3, 2), SH(F32, 2, 3, 64));
  s.layout = RLX_SCALE_LAYOUT_NVFP4;
  s.block = 16;
  EXPECT(ScaledQuantScale, &s, NULL, SH(U8, 4, 5), SH(BF16, 4, 65));
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "operand 0 (x)", SH(U8, 4, 64));
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "symbolic", SH(F32, 4, SYM(1)));
  s.block = 0;
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "attribute block", SH(F32, 4, 64));
  s.block = 32;
  s.layout = 9;
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "attribute layout", SH(F32, 4, 64));
  s.layout = RLX_SCALE_LAYOUT_PER_TENSOR;
  s.format = RLX_SCALED_FORMAT_CUSTOM;
  s.custom_exp = 4;
  s.custom_mant = 3;
  s.custom_bias = 7;
  EXPECT(ScaledQuantScale, &s, NULL, SH(F32, 1), SH(F32, 4, 64));
  s.custom_exp = 0;
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "attribute custom_exp", SH(F32, 4, 64));
  s.custom_exp = 5; /* 1 + 5 + 3 = 9 bits */
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "attribute custom_mant", SH(F32, 4, 64));
  s.format = 8;
  EXPECT_ERR(ScaledQuantScale, &s, NULL, SHAPE_ERR, "attribute format", SH(F32, 4, 64));
}

static void test_scaled_quantize_dequantize(void) {
  rlx_attrs_ScaledQuantize q;
  rlx_attrs_init(RLX_OP_ScaledQuantize, &q);
  EXPECT(ScaledQuantize, &q, NULL, SH(U8, 4, 64), SH(F32, 4, 64), SH(F32, 1));
  EXPECT(ScaledQuantize, &q, NULL, SH(U8, 4, 64), SH(F32, 4, 64), SCALAR(F32));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 4, 64), SH(F32, 2));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 1 (scale) has dtype u8", SH(F32, 4, 64), SH(U8, 1));
  q.layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0;
  EXPECT(ScaledQuantize, &q, NULL, SH(U8, 4, 70), SH(F32, 4, 70), SH(U8, 4, 3));
  EXPECT(ScaledQuantize, &q, NULL, SH(U8, 2, 3, 64), SH(F32, 2, 3, 64), SH(U8, 6, 2)); /* rows flattened */
  EXPECT(ScaledQuantize, &q, NULL, SH(U8, 2, 3, 64), SH(F32, 2, 3, 64), SH(U8, 2, 3, 2));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 4, 70), SH(U8, 4, 2));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 1 (scale)", SH(F32, 4, 70), SH(U8, 3, 3));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 1 (scale) has dtype f32", SH(F32, 4, 70), SH(F32, 4, 3));
  EXPECT_ERR(ScaledQuantize, &q, NULL, SHAPE_ERR, "operand 0 (x) has dtype i32", SH(I32, 4, 70), SH(U8, 4, 3));

  rlx_attrs_ScaledDequantize d;
  rlx_attrs_init(RLX_OP_ScaledDequantize, &d);
  d.format = RLX_SCALED_FORMAT_F4E2M1;
  EXPECT(ScaledDequantize, &d, NULL, SH(F32, 4, 64), SH(U8, 4, 64), SH(F32, 1));
  EXPECT_ERR(ScaledDequantize, &d, NULL, SHAPE_ERR, "operand 0 (codes)", SH(F32, 4, 64), SH(F32, 1));
  d.layout = RLX_SCALE_LAYOUT_NVFP4;
  d.block = 16;
  EXPECT(ScaledDequantize, &d, NULL, SH(F32, 4, 64), SH(U8, 4, 64), SH(U8, 4, 4));
  EXPECT_ERR(ScaledDequantize, &d, NULL, SHAPE_ERR, "operand 1 (scale)", SH(U8, 4, 64), SH(U8, 4, 2));
}

static void test_scaled_matmul(void) {
  rlx_attrs_ScaledMatMul m;
  rlx_attrs_init(RLX_OP_ScaledMatMul, &m);
  EXPECT(ScaledMatMul, &m, NULL, SH(F32, 4, 5), SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1), SH(F32, 1));
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "operand 1 (rhs)", SH(U8, 4, 64), SH(U8, 5, 32), SH(F32, 1),
             SH(F32, 1));
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "operand 0 (lhs) has dtype f32", SH(F32, 4, 64), SH(U8, 5, 64),
             SH(F32, 1), SH(F32, 1));
  EXPECT_ERR(ScaledMatMul, &m, NULL, VERIFY_ERR, "needs exactly 4", SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1),
             SH(F32, 1), SH(F32, 5));
  m.has_bias = true;
  EXPECT(ScaledMatMul, &m, NULL, SH(F32, 4, 5), SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1), SH(F32, 1), SH(F32, 5));
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "operand 4 (bias)", SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1),
             SH(F32, 1), SH(F32, 4));
  EXPECT_ERR(ScaledMatMul, &m, NULL, VERIFY_ERR, "has_bias", SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1), SH(F32, 1));
  m.has_bias = false;
  m.layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0;
  EXPECT(ScaledMatMul, &m, NULL, SH(F32, 4, 5), SH(U8, 4, 64), SH(U8, 5, 64), SH(U8, 4, 2), SH(U8, 5, 2));
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "operand 3 (rhs_scale)", SH(U8, 4, 64), SH(U8, 5, 64), SH(U8, 4, 2),
             SH(U8, 4, 2));
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "operand 2 (lhs_scale)", SH(U8, 4, 64), SH(U8, 5, 64), SH(F32, 1),
             SH(U8, 5, 2));
  m.lhs_format = RLX_SCALED_FORMAT_CUSTOM;
  EXPECT_ERR(ScaledMatMul, &m, NULL, SHAPE_ERR, "attribute lhs_format", SH(U8, 4, 64), SH(U8, 5, 64), SH(U8, 4, 2),
             SH(U8, 5, 2));
}

static void test_synth_matmul(void) {
  rlx_attrs_SynthMatMul s;
  rlx_attrs_init(RLX_OP_SynthMatMul, &s);
  s.entry_dim = 4;
  s.num_entries = 16;
  /* x [3, 8], codes [8/4 = 2, 5], codebook [16, 4] -> [3, 5] */
  EXPECT(SynthMatMul, &s, NULL, SH(F32, 3, 5), SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4));
  EXPECT(SynthMatMul, &s, NULL, SH(F32, SYM(0), 5), SH(F32, SYM(0), 8), SH(F32, 2, 5), SH(F32, 16, 4));
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 3, 10), SH(I32, 2, 5), SH(F32, 16, 4));
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "operand 1 (codes)", SH(F32, 3, 8), SH(I32, 3, 5), SH(F32, 16, 4));
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "operand 1 (codes) has dtype bool", SH(F32, 3, 8), SH(BOOL, 2, 5),
             SH(F32, 16, 4));
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "operand 2 (codebook)", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 3));
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "operand 2 (codebook)", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 15, 4));
  s.entry_dim = 0;
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "attribute entry_dim", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4));
  s.entry_dim = 4;
  s.num_entries = 0;
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "attribute num_entries", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4));
  s.num_entries = 16;
  s.kind = 1;
  EXPECT_ERR(SynthMatMul, &s, NULL, SHAPE_ERR, "attribute kind", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4));

  rlx_attrs_SynthMatMulBackward b;
  rlx_attrs_init(RLX_OP_SynthMatMulBackward, &b);
  b.entry_dim = 4;
  b.num_entries = 16;
  EXPECT(SynthMatMulBackward, &b, NULL, SH(F32, 3, 8), SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4), SH(F32, 3, 5));
  b.wrt = RLX_SYNTH_WRT_CODEBOOK;
  EXPECT(SynthMatMulBackward, &b, NULL, SH(F32, 16, 4), SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4), SH(F32, 3, 5));
  EXPECT_ERR(SynthMatMulBackward, &b, NULL, SHAPE_ERR, "operand 3 (dy)", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4),
             SH(F32, 3, 4));
  b.wrt = 5;
  EXPECT_ERR(SynthMatMulBackward, &b, NULL, SHAPE_ERR, "attribute wrt", SH(F32, 3, 8), SH(I32, 2, 5), SH(F32, 16, 4),
             SH(F32, 3, 5));

  rlx_attrs_SynthReconstruct r = {.entry_dim = 4, .num_entries = 16};
  EXPECT(SynthReconstruct, &r, NULL, SH(F32, 8, 5), SH(I64, 2, 5), SH(F32, 16, 4));
  EXPECT(SynthReconstruct, &r, NULL, SH(F16, 8, 5), SH(I64, 2, 5), SH(F16, 16, 4));
  EXPECT_ERR(SynthReconstruct, &r, NULL, SHAPE_ERR, "operand 1 (codebook)", SH(I64, 2, 5), SH(F32, 16, 5));
  EXPECT_ERR(SynthReconstruct, &r, NULL, SHAPE_ERR, "symbolic", SH(I64, SYM(0), 5), SH(F32, 16, 4));
  rlx_shape decl = SH(F32, SYM(3), 5);
  EXPECT(SynthReconstruct, &r, &decl, decl, SH(I64, SYM(0), 5), SH(F32, 16, 4));
}

static void test_spline(void) {
  rlx_attrs_SplineActivation s;
  rlx_attrs_init(RLX_OP_SplineActivation, &s); /* 8 knots on [-1, 1] */
  EXPECT(SplineActivation, &s, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4), SH(F32, 4, 8));
  EXPECT(SplineActivation, &s, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4), SH(F32, 8));
  EXPECT(SplineActivation, &s, NULL, SCALAR(F32), SCALAR(F32), SH(F32, 8));
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "operand 1 (coeffs)", SH(F32, 2, 3, 4), SH(F32, 3, 8));
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "operand 1 (coeffs)", SH(F32, 2, 3, 4), SH(F32, 4, 7));
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "operand 1 (coeffs)", SH(F32, 2, 3, 4), SH(F32, 1, 4, 8));
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "operand 0 (x)", SCALAR(F32), SH(F32, 1, 8));
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "operand 0 (x) has dtype i32", SH(I32, 4), SH(F32, 8));
  s.num_knots = 1;
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "attribute num_knots", SH(F32, 4), SH(F32, 1));
  s.num_knots = 8;
  s.grid_min = 1.0f;
  EXPECT_ERR(SplineActivation, &s, NULL, SHAPE_ERR, "attribute grid_min", SH(F32, 4), SH(F32, 8));

  rlx_attrs_SplineActivationBackwardX bx;
  rlx_attrs_init(RLX_OP_SplineActivationBackwardX, &bx);
  bx.num_knots = 5;
  EXPECT(SplineActivationBackwardX, &bx, NULL, SH(F32, 6, 4), SH(F32, 6, 4), SH(F32, 4, 5), SH(F32, 6, 4));
  EXPECT_ERR(SplineActivationBackwardX, &bx, NULL, SHAPE_ERR, "operand 2 (dy)", SH(F32, 6, 4), SH(F32, 4, 5),
             SH(F32, 6, 5));

  rlx_attrs_SplineActivationBackwardCoeff bc;
  rlx_attrs_init(RLX_OP_SplineActivationBackwardCoeff, &bc);
  bc.num_knots = 5;
  EXPECT(SplineActivationBackwardCoeff, &bc, NULL, SH(F32, 4, 5), SH(F32, 6, 4), SH(F32, 4, 5), SH(F32, 6, 4));
  EXPECT(SplineActivationBackwardCoeff, &bc, NULL, SH(F32, 5), SH(F32, 6, 4), SH(F32, 5), SH(F32, 6, 4));
  bc.grid_max = NAN;
  EXPECT_ERR(SplineActivationBackwardCoeff, &bc, NULL, SHAPE_ERR, "attribute grid_min", SH(F32, 6, 4), SH(F32, 5),
             SH(F32, 6, 4));
}

int main(void) {
  test_quantize();
  test_dequantize();
  test_fake_quantize();
  test_lsq();
  test_qmatmul();
  test_qconv2d();
  test_scaled_quant_scale();
  test_scaled_quantize_dequantize();
  test_scaled_matmul();
  test_synth_matmul();
  test_spline();
  return rlx_test_finish("infer_quant");
}
