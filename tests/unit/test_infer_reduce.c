/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of reductions, scans, selection, sampling and random generation. */
#include <math.h>

#include "infer_test.h"

static void test_reduce(void) {
  rlx_attrs_Reduce r = {.op = RLX_REDUCE_SUM, .axes = IL(1), .keep_dim = false};
  EXPECT(Reduce, &r, NULL, SH(F32, 2, 4), SH(F32, 2, 3, 4));
  r.keep_dim = true;
  EXPECT(Reduce, &r, NULL, SH(F32, 2, 1, 4), SH(F32, 2, 3, 4));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_MEAN, .axes = IL(-1, 0), .keep_dim = false};
  EXPECT(Reduce, &r, NULL, SH(F32, 3), SH(F32, 2, 3, 4));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_MAX, .axes = NOLIST, .keep_dim = false}; /* empty axes: everything */
  EXPECT(Reduce, &r, NULL, SCALAR(I32), SH(I32, 2, 3, 4));
  r.keep_dim = true;
  EXPECT(Reduce, &r, NULL, SH(I32, 1, 1, 1), SH(I32, 2, 3, 4));
  EXPECT(Reduce, &r, NULL, SCALAR(F32), SCALAR(F32));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_PROD, .axes = IL(0), .keep_dim = false};
  EXPECT(Reduce, &r, NULL, SH(F64, SYM(1)), SH(F64, SYM(0), SYM(1)));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_MIN, .axes = IL(1, -2), .keep_dim = false};
  EXPECT_ERR(Reduce, &r, NULL, SHAPE_ERR, "more than once", SH(F32, 2, 3, 4));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = IL(3), .keep_dim = false};
  EXPECT_ERR(Reduce, &r, NULL, SHAPE_ERR, "attribute axes", SH(F32, 2, 3, 4));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = IL(0), .keep_dim = false};
  EXPECT_ERR(Reduce, &r, NULL, SHAPE_ERR, "attribute axes", SCALAR(F32));
  r = (rlx_attrs_Reduce){.op = 7, .axes = IL(0), .keep_dim = false};
  EXPECT_ERR(Reduce, &r, NULL, SHAPE_ERR, "attribute op", SH(F32, 2));
  r = (rlx_attrs_Reduce){.op = RLX_REDUCE_MAX, .axes = IL(0), .keep_dim = false};
  EXPECT_ERR(Reduce, &r, NULL, SHAPE_ERR, "attribute op Max", SH(C64, 2));
}

static void test_histogram(void) {
  rlx_attrs_Histogram h = {.bins = 16, .min = -1.0f, .max = 1.0f};
  EXPECT(Histogram, &h, NULL, SH(F32, 16), SH(F16, 3, 100));
  EXPECT(Histogram, &h, NULL, SH(F32, 16), SCALAR(I32));
  EXPECT(Histogram, &h, NULL, SH(F32, 16), SH(F32, SYM(0)));
  h.bins = 0;
  EXPECT_ERR(Histogram, &h, NULL, SHAPE_ERR, "attribute bins", SH(F32, 4));
  h = (rlx_attrs_Histogram){.bins = 4, .min = 1.0f, .max = 1.0f};
  EXPECT_ERR(Histogram, &h, NULL, SHAPE_ERR, "attributes min", SH(F32, 4));
  h = (rlx_attrs_Histogram){.bins = 4, .min = 0.0f, .max = INFINITY};
  EXPECT_ERR(Histogram, &h, NULL, SHAPE_ERR, "attributes min", SH(F32, 4));
  h = (rlx_attrs_Histogram){.bins = 4, .min = 0.0f, .max = 1.0f};
  EXPECT_ERR(Histogram, &h, NULL, SHAPE_ERR, "operand 0 has dtype c64", SH(C64, 4));
}

static void test_softmax_and_scans(void) {
  rlx_attrs_Softmax s = {.axis = -1};
  EXPECT(Softmax, &s, NULL, SH(F32, 2, SYM(1)), SH(F32, 2, SYM(1)));
  s.axis = 0;
  EXPECT(Softmax, &s, NULL, SH(BF16, 2, 3), SH(BF16, 2, 3));
  s.axis = -3;
  EXPECT_ERR(Softmax, &s, NULL, SHAPE_ERR, "attribute axis is -3", SH(F32, 2, 3));
  s.axis = -1;
  EXPECT_ERR(Softmax, &s, NULL, SHAPE_ERR, "scalar", SCALAR(F32));
  EXPECT_ERR(Softmax, &s, NULL, SHAPE_ERR, "floating-point", SH(I32, 3));

  rlx_attrs_Cumsum cs = {.axis = -1, .exclusive = true};
  EXPECT(Cumsum, &cs, NULL, SH(I64, 4, 5), SH(I64, 4, 5));
  cs.axis = 2;
  EXPECT_ERR(Cumsum, &cs, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 5));
  cs.axis = 0;
  EXPECT_ERR(Cumsum, &cs, NULL, SHAPE_ERR, "bool", SH(BOOL, 4, 5));
  rlx_attrs_CumProd cp = {.axis = -2, .exclusive = false};
  EXPECT(CumProd, &cp, NULL, SH(F32, 4, 5), SH(F32, 4, 5));
  EXPECT_ERR(CumProd, &cp, NULL, SHAPE_ERR, "attribute axis", SH(F32, 5));
  rlx_attrs_CumMax cm = {.axis = 0, .exclusive = false};
  EXPECT(CumMax, &cm, NULL, SH(F16, SYM(0), 5), SH(F16, SYM(0), 5));
  EXPECT_ERR(CumMax, &cm, NULL, SHAPE_ERR, "real", SH(C128, 5));
  EXPECT_ERR(CumMax, &cm, NULL, SHAPE_ERR, "scalar", SCALAR(F32));
}

static void test_arg_and_topk(void) {
  rlx_attrs_ArgMax a = {.axis = 1, .keep_dim = false};
  EXPECT(ArgMax, &a, NULL, SH(I64, 2, 4), SH(F32, 2, 3, 4));
  a.keep_dim = true;
  EXPECT(ArgMax, &a, NULL, SH(I64, 2, 1, 4), SH(F32, 2, 3, 4));
  a = (rlx_attrs_ArgMax){.axis = -1, .keep_dim = false};
  rlx_shape df = SH(F32, 2, 3), di = SH(I32, 2, 3), dh = SH(F16, 2, 3);
  EXPECT(ArgMax, &a, &df, SH(F32, 2, 3), SH(F32, 2, 3, 4));
  EXPECT(ArgMax, &a, &di, SH(I32, 2, 3), SH(F32, 2, 3, 4));
  EXPECT(ArgMax, &a, &dh, SH(I64, 2, 3), SH(F32, 2, 3, 4)); /* f16 is not an index dtype */
  EXPECT(ArgMax, &a, NULL, SCALAR(I64), SH(I32, 7));
  EXPECT_ERR(ArgMax, &a, NULL, SHAPE_ERR, "attribute axis", SCALAR(F32));
  a.axis = 3;
  EXPECT_ERR(ArgMax, &a, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 3, 4));
  a.axis = 0;
  EXPECT_ERR(ArgMax, &a, NULL, SHAPE_ERR, "empty along axis 0", SH(F32, 0, 3));
  EXPECT_ERR(ArgMax, &a, NULL, SHAPE_ERR, "real", SH(BOOL, 3));

  rlx_attrs_ArgMin m = {.axis = -2, .keep_dim = true};
  EXPECT(ArgMin, &m, NULL, SH(I64, SYM(0), 1, 4), SH(F32, SYM(0), 3, 4));
  m.axis = -4;
  EXPECT_ERR(ArgMin, &m, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 3, 4));

  rlx_attrs_TopK k = {.k = 3};
  EXPECT(TopK, &k, NULL, SH(I64, 2, 3), SH(F32, 2, 10));
  rlx_shape dk = SH(F32, 2, 3);
  EXPECT(TopK, &k, &dk, SH(F32, 2, 3), SH(F32, 2, 10));
  EXPECT(TopK, &k, NULL, SH(I64, 2, 3), SH(F32, 2, SYM(1)));
  EXPECT(TopK, &k, NULL, SH(I64, 3), SH(F32, 3));
  k.k = 11;
  EXPECT_ERR(TopK, &k, NULL, SHAPE_ERR, "attribute k is 11", SH(F32, 2, 10));
  k.k = 0;
  EXPECT_ERR(TopK, &k, NULL, SHAPE_ERR, "attribute k is 0", SH(F32, 2, 10));
  k.k = 1;
  EXPECT_ERR(TopK, &k, NULL, SHAPE_ERR, "scalar", SCALAR(F32));
}

static void test_sample(void) {
  rlx_attrs_Sample s;
  rlx_attrs_init(RLX_OP_Sample, &s);
  EXPECT(Sample, &s, NULL, SH(I64, 4), SH(F32, 4, 32000));
  EXPECT(Sample, &s, NULL, SH(I64, 1), SH(F32, 32000));
  EXPECT(Sample, &s, NULL, SH(I64, SYM(0)), SH(F16, SYM(0), 32000));
  rlx_shape df = SH(F32, 4);
  EXPECT(Sample, &s, &df, SH(F32, 4), SH(F32, 4, 32000));
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "operand 0 (logits)", SH(F32, 2, 4, 32000));
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "operand 0 (logits)", SCALAR(F32));
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "vocabulary", SH(F32, 4, 0));
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "floating-point", SH(I32, 4, 10));
  s.top_p = 0.0f;
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "attribute top_p", SH(F32, 10));
  s.top_p = 1.5f;
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "attribute top_p", SH(F32, 10));
  s.top_p = 0.9f;
  s.temperature = 0.0f;
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "attribute temperature", SH(F32, 10));
  s.temperature = 0.7f;
  s.top_k = -1;
  EXPECT_ERR(Sample, &s, NULL, SHAPE_ERR, "attribute top_k", SH(F32, 10));
  s.top_k = 40;
  EXPECT(Sample, &s, NULL, SH(I64, 1), SH(F32, 10));
}

static void test_rng(void) {
  rlx_attrs_RngNormal n;
  rlx_attrs_init(RLX_OP_RngNormal, &n);
  rlx_shape d16 = SH(F16, 3, 4), di = SH(I32, 3, 4);
  EXPECT0(RngNormal, &n, &d16, SH(F16, 3, 4));
  EXPECT0_ERR(RngNormal, &n, NULL, SHAPE_ERR, "declared output shape");
  EXPECT0_ERR(RngNormal, &n, &di, SHAPE_ERR, "floating-point");
  /* a shape template gives the dims; dtype = declared, else F32 */
  EXPECT(RngNormal, &n, NULL, SH(F32, 2, SYM(0)), SH(I64, 2, SYM(0)));
  rlx_shape d64 = SH(F64, 2, 5);
  EXPECT(RngNormal, &n, &d64, SH(F64, 2, 5), SH(I64, 2, 5));
  EXPECT_ERR(RngNormal, &n, &di, SHAPE_ERR, "floating-point", SH(F32, 3, 4));
  n.scale = -1.0f;
  EXPECT0_ERR(RngNormal, &n, &d16, SHAPE_ERR, "attribute scale");
  n.scale = 0.0f; /* a constant "distribution" is fine */
  EXPECT0(RngNormal, &n, &d16, SH(F16, 3, 4));
  n.mean = NAN;
  EXPECT0_ERR(RngNormal, &n, &d16, SHAPE_ERR, "attribute mean");

  rlx_attrs_RngUniform u;
  rlx_attrs_init(RLX_OP_RngUniform, &u);
  rlx_shape dsc = SCALAR(F32);
  EXPECT0(RngUniform, &u, &dsc, SCALAR(F32));
  EXPECT(RngUniform, &u, NULL, SH(F32, 7), SH(F32, 7));
  u.low = 2.0f;
  u.high = 2.0f;
  EXPECT0_ERR(RngUniform, &u, &dsc, SHAPE_ERR, "attributes low");
  u.high = 1.0f;
  EXPECT_ERR(RngUniform, &u, NULL, SHAPE_ERR, "attributes low", SH(F32, 7));
  u.low = 0.0f;
  EXPECT_ERR(RngUniform, &u, NULL, RLX_ERR_VERIFY, "0 to 1", SH(F32, 7), SH(F32, 7));
}

int main(void) {
  test_reduce();
  test_histogram();
  test_softmax_and_scans();
  test_arg_and_topk();
  test_sample();
  test_rng();
  return rlx_test_finish("infer_reduce");
}
