/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, reduction family: Reduce (several axes, keep_dim, all axes, NaN, empty,
 * compensated sums), Softmax on a non-last axis, Cumsum/CumProd/CumMax (inclusive and exclusive),
 * ArgMax/ArgMin and TopK ties, Sort/ArgSort stability and NaN, Histogram edges, Sample. Expected
 * values are hand-worked or computed here with plain loops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_a_test.h"
#include "core/elem.h"

/* ---- Reduce ---- */

static void test_reduce(void) {
  /* x[i][j][k] = some irregular values, shape [2,3,4]; reduce over axes {0, 2} */
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = sin(i * 1.7) * 10;
  for (int op = 0; op < RLX_REDUCE_COUNT; op++)
    for (int keep = 0; keep < 2; keep++) {
      rlx_attrs_Reduce a = {.op = op, .axes = IL(2, 0), .keep_dim = keep};
      double y[3];
      rlx_shape os = keep ? SH(F64, 1, 3, 1) : SH(F64, 3);
      CHECK_OK(RUN(Reduce, &a, &T(y, os), T(x, SH(F64, 2, 3, 4))));
      for (int j = 0; j < 3; j++) {
        double w = op == RLX_REDUCE_PROD ? 1 : op == RLX_REDUCE_MAX ? -1e300 : op == RLX_REDUCE_MIN ? 1e300 : 0;
        for (int i = 0; i < 2; i++)
          for (int k = 0; k < 4; k++) {
            double v = x[(i * 3 + j) * 4 + k];
            if (op == RLX_REDUCE_PROD)
              w *= v;
            else if (op == RLX_REDUCE_MAX)
              w = v > w ? v : w;
            else if (op == RLX_REDUCE_MIN)
              w = v < w ? v : w;
            else
              w += v;
          }
        if (op == RLX_REDUCE_MEAN) w /= 8;
        CHECK_MSG(near(y[j], w, 1e-12), "%s keep=%d j=%d: %g vs %g", rlx_enum_reduce.names[op], keep, j, y[j], w);
      }
    }
  /* empty axis list = every axis; a negative axis */
  float f[] = {1, 2, 3, 4, 5, 6}, fy[3];
  rlx_attrs_Reduce a = {.op = RLX_REDUCE_SUM, .axes = NOLIST};
  CHECK_OK(RUN(Reduce, &a, &T(fy, SCALAR(F32)), T(f, SH(F32, 2, 3))));
  CHECK(fy[0] == 21);
  a.keep_dim = true;
  CHECK_OK(RUN(Reduce, &a, &T(fy, SH(F32, 1, 1)), T(f, SH(F32, 2, 3))));
  CHECK(fy[0] == 21);
  a = (rlx_attrs_Reduce){.op = RLX_REDUCE_MEAN, .axes = IL(-2)};
  CHECK_OK(RUN(Reduce, &a, &T(fy, SH(F32, 3)), T(f, SH(F32, 2, 3))));
  CHECK(fy[0] == 2.5f && fy[1] == 3.5f && fy[2] == 4.5f);
  /* Max / Min propagate NaN */
  float fn[] = {1, NAN, 3, 4, 5, 6};
  a = (rlx_attrs_Reduce){.op = RLX_REDUCE_MAX, .axes = IL(1)};
  CHECK_OK(RUN(Reduce, &a, &T(fy, SH(F32, 2)), T(fn, SH(F32, 2, 3))));
  CHECK(isnan(fy[0]) && fy[1] == 6);
  a.op = RLX_REDUCE_MIN;
  CHECK_OK(RUN(Reduce, &a, &T(fy, SH(F32, 2)), T(fn, SH(F32, 2, 3))));
  CHECK(isnan(fy[0]) && fy[1] == 4);
  /* empty reductions give the identities (Mean: NaN) */
  float ey[3];
  for (int op = 0; op < RLX_REDUCE_COUNT; op++) {
    a = (rlx_attrs_Reduce){.op = op, .axes = IL(0)};
    CHECK_OK(RUN(Reduce, &a, &T(ey, SH(F32, 3)), T(f, SH(F32, 0, 3))));
    float w = op == RLX_REDUCE_SUM    ? 0
              : op == RLX_REDUCE_PROD ? 1
              : op == RLX_REDUCE_MAX  ? -INFINITY
              : op == RLX_REDUCE_MIN  ? INFINITY
                                      : NAN;
    CHECK_MSG(near(ey[2], w, 0), "empty %s gives %g", rlx_enum_reduce.names[op], (double)ey[2]);
  }
  /* compensated f64 sum: 1e16 + 1 - 1e16 + 1 = 2 (a plain left-to-right sum gives 1) */
  double c[] = {1e16, 1, -1e16, 1}, cy[1];
  a = (rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = IL(0)};
  CHECK_OK(RUN(Reduce, &a, &T(cy, SCALAR(F64)), T(c, SH(F64, 4))));
  CHECK_MSG(cy[0] == 2, "sum = %g", cy[0]);
  /* integers: exact, mean truncates toward zero, sums saturate */
  int32_t iv[] = {-1, -2, 7, 8}, iy[2];
  a = (rlx_attrs_Reduce){.op = RLX_REDUCE_MEAN, .axes = IL(1)};
  CHECK_OK(RUN(Reduce, &a, &T(iy, SH(I32, 2)), T(iv, SH(I32, 2, 2))));
  CHECK(iy[0] == -1 && iy[1] == 7);
  int32_t im[] = {INT32_MAX, 1};
  a.op = RLX_REDUCE_SUM;
  CHECK_OK(RUN(Reduce, &a, &T(iy, SH(I32, 1)), T(im, SH(I32, 1, 2))));
  CHECK(iy[0] == INT32_MAX);
  int64_t lv[] = {(1LL << 53) + 1, 1, INT64_MAX, 1}, ly[2];
  CHECK_OK(RUN(Reduce, &a, &T(ly, SH(I64, 2)), T(lv, SH(I64, 2, 2))));
  CHECK(ly[0] == (1LL << 53) + 2 && ly[1] == INT64_MAX);
  /* bool: Sum = any, Prod = all */
  uint8_t bv[] = {0, 1, 1, 1}, by[2];
  CHECK_OK(RUN(Reduce, &a, &T(by, SH(BOOL, 2)), T(bv, SH(BOOL, 2, 2))));
  CHECK(by[0] == 1 && by[1] == 1);
  a.op = RLX_REDUCE_PROD;
  CHECK_OK(RUN(Reduce, &a, &T(by, SH(BOOL, 2)), T(bv, SH(BOOL, 2, 2))));
  CHECK(by[0] == 0 && by[1] == 1);
  /* complex sum and product */
  float cv[] = {1, 2, 3, -1}, cz[2];
  a.op = RLX_REDUCE_SUM;
  CHECK_OK(RUN(Reduce, &a, &T(cz, SH(C64, 1)), T(cv, SH(C64, 1, 2))));
  CHECK(cz[0] == 4 && cz[1] == 1);
  a.op = RLX_REDUCE_PROD;
  CHECK_OK(RUN(Reduce, &a, &T(cz, SH(C64, 1)), T(cv, SH(C64, 1, 2))));
  CHECK(cz[0] == 5 && cz[1] == 5);
  /* rank 0 */
  float s = 4.5f;
  a = (rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = NOLIST};
  CHECK_OK(RUN(Reduce, &a, &T(fy, SCALAR(F32)), T(&s, SCALAR(F32))));
  CHECK(fy[0] == 4.5f);
  a.axes = IL(3);
  CHECK_ERR(RUN(Reduce, &a, &T(fy, SH(F32, 2)), T(f, SH(F32, 2, 3))), RLX_ERR_INVALID_ARG, "axes");
}

/* ---- Softmax ---- */

static void test_softmax(void) {
  /* [2,3] over axis 0 (not the last axis) */
  float x[] = {0.5f, -1.0f, 2.0f, 1.5f, 0.0f, -3.0f}, y[6];
  rlx_attrs_Softmax a = {.axis = 0};
  CHECK_OK(RUN(Softmax, &a, &T(y, SH(F32, 2, 3)), T(x, SH(F32, 2, 3))));
  for (int j = 0; j < 3; j++) {
    double e0 = exp(x[j]), e1 = exp(x[3 + j]);
    CHECK(near(y[j], e0 / (e0 + e1), 1e-7) && near(y[3 + j], e1 / (e0 + e1), 1e-7));
  }
  /* axis -1 with huge and -inf values */
  float b[] = {1000, 1001, -INFINITY}, by[3];
  a.axis = -1;
  CHECK_OK(RUN(Softmax, &a, &T(by, SH(F32, 3)), T(b, SH(F32, 3))));
  double p = 1 / (1 + exp(1.0));
  CHECK(near(by[0], p, 1e-7) && near(by[1], 1 - p, 1e-7) && by[2] == 0);
  /* f64 on a middle axis of [2,2,2] */
  double d[8], dy[8];
  for (int i = 0; i < 8; i++) d[i] = i * 0.3 - 1;
  a.axis = 1;
  CHECK_OK(RUN(Softmax, &a, &T(dy, SH(F64, 2, 2, 2)), T(d, SH(F64, 2, 2, 2))));
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++) {
      double e0 = exp(d[i * 4 + k]), e1 = exp(d[i * 4 + 2 + k]);
      CHECK(near(dy[i * 4 + k], e0 / (e0 + e1), 1e-14) && near(dy[i * 4 + 2 + k], e1 / (e0 + e1), 1e-14));
    }
  float s = 7, sy;
  CHECK_OK(RUN(Softmax, &a, &T(&sy, SCALAR(F32)), T(&s, SCALAR(F32))));
  CHECK(sy == 1);
}

/* ---- scans ---- */

static bool same_f(const float *got, const float *want, int n) {
  for (int i = 0; i < n; i++)
    if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])))) {
      fprintf(stderr, "  element %d: got %g, want %g\n", i, (double)got[i], (double)want[i]);
      return false;
    }
  return true;
}

static void test_scans(void) {
  float x[] = {1, 2, 3, 4, 5, 6}, y[6];
  struct {
    int kind, axis, excl;
    float want[6];
  } cases[] = {
      {0, 1, 0, {1, 3, 6, 4, 9, 15}},  {0, -1, 1, {0, 1, 3, 0, 4, 9}},   {0, 0, 0, {1, 2, 3, 5, 7, 9}},
      {0, 0, 1, {0, 0, 0, 1, 2, 3}},   {1, 1, 0, {1, 2, 6, 4, 20, 120}}, {1, 1, 1, {1, 1, 2, 1, 4, 20}},
      {1, 0, 0, {1, 2, 3, 4, 10, 18}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    rlx_status s;
    if (cases[c].kind == 0) {
      rlx_attrs_Cumsum a = {.axis = cases[c].axis, .exclusive = cases[c].excl};
      s = RUN(Cumsum, &a, &T(y, SH(F32, 2, 3)), T(x, SH(F32, 2, 3)));
    } else {
      rlx_attrs_CumProd a = {.axis = cases[c].axis, .exclusive = cases[c].excl};
      s = RUN(CumProd, &a, &T(y, SH(F32, 2, 3)), T(x, SH(F32, 2, 3)));
    }
    CHECK_OK(s);
    CHECK_MSG(same_f(y, cases[c].want, 6), "scan case %zu", c);
  }
  float m[] = {3, 1, 4, 1, 5, 9};
  rlx_attrs_CumMax cm = {.axis = 1};
  CHECK_OK(RUN(CumMax, &cm, &T(y, SH(F32, 2, 3)), T(m, SH(F32, 2, 3))));
  CHECK(same_f(y, (float[]){3, 3, 4, 1, 5, 9}, 6));
  cm.exclusive = true;
  CHECK_OK(RUN(CumMax, &cm, &T(y, SH(F32, 2, 3)), T(m, SH(F32, 2, 3))));
  CHECK(same_f(y, (float[]){-INFINITY, 3, 3, -INFINITY, 1, 5}, 6));
  float mn[] = {1, NAN, 3};
  cm = (rlx_attrs_CumMax){.axis = -1};
  CHECK_OK(RUN(CumMax, &cm, &T(y, SH(F32, 3)), T(mn, SH(F32, 3))));
  CHECK(same_f(y, (float[]){1, NAN, NAN}, 3));
  /* integers: exact, identities are the dtype's own */
  int32_t iv[] = {5, -2, 7}, iy[3];
  rlx_attrs_CumMax cm0 = {.axis = 0, .exclusive = true};
  rlx_attrs_Cumsum cs0 = {.axis = 0}, cs1 = {.axis = 1};
  rlx_attrs_CumProd cpx = {.axis = -1, .exclusive = true};
  CHECK_OK(RUN(CumMax, &cm0, &T(iy, SH(I32, 3)), T(iv, SH(I32, 3))));
  CHECK(iy[0] == INT32_MIN && iy[1] == 5 && iy[2] == 5);
  CHECK_OK(RUN(Cumsum, &cs0, &T(iy, SH(I32, 3)), T(iv, SH(I32, 3))));
  CHECK(iy[0] == 5 && iy[1] == 3 && iy[2] == 10);
  int64_t lv[] = {1LL << 53, 1, 1}, ly[3];
  CHECK_OK(RUN(Cumsum, &cs0, &T(ly, SH(I64, 3)), T(lv, SH(I64, 3))));
  CHECK(ly[2] == (1LL << 53) + 2);
  /* empty and rank 0 */
  CHECK_OK(RUN(Cumsum, &cs1, &T(y, SH(F32, 2, 0)), T(x, SH(F32, 2, 0))));
  float s = 2.5f, sy;
  CHECK_OK(RUN(CumProd, &cpx, &T(&sy, SCALAR(F32)), T(&s, SCALAR(F32))));
  CHECK(sy == 1);
}

/* ---- ArgMax / ArgMin / TopK ---- */

static void test_arg_topk(void) {
  float x[] = {1, 3, 3, 2, /**/ 2, 1, 1, 0, /**/ 1, NAN, 5, NAN};
  int64_t l[3];
  rlx_attrs_ArgMax a = {.axis = 1};
  CHECK_OK(RUN(ArgMax, &a, &T(l, SH(I64, 3)), T(x, SH(F32, 3, 4))));
  CHECK(l[0] == 1 && l[1] == 0 && l[2] == 1);
  rlx_attrs_ArgMin b = {.axis = -1};
  int32_t i[3];
  CHECK_OK(RUN(ArgMin, &b, &T(i, SH(I32, 3)), T(x, SH(F32, 3, 4))));
  CHECK(i[0] == 0 && i[1] == 3 && i[2] == 1);
  /* axis 0 with keep_dim, F32 indices */
  float f[4];
  a = (rlx_attrs_ArgMax){.axis = 0, .keep_dim = true};
  CHECK_OK(RUN(ArgMax, &a, &T(f, SH(F32, 1, 4)), T(x, SH(F32, 2, 4))));
  CHECK(f[0] == 1 && f[1] == 0 && f[2] == 0 && f[3] == 0);
  b = (rlx_attrs_ArgMin){.axis = 0};
  int64_t iv[] = {(1LL << 53) + 1, 1LL << 53, (1LL << 53) + 2};
  CHECK_OK(RUN(ArgMin, &b, &T(l, SCALAR(I64)), T(iv, SH(I64, 3))));
  CHECK(l[0] == 1);
  CHECK_ERR(RUN(ArgMax, &a, &T(l, SH(I64, 1, 2)), T(x, SH(F32, 0, 2))), RLX_ERR_RUNTIME, "empty");
  uint8_t u8[4];
  CHECK_ERR(RUN(ArgMax, &a, &T(u8, SH(U8, 1, 4)), T(x, SH(F32, 2, 4))), RLX_ERR_INVALID_ARG, "i64, i32 or f32");

  /* TopK: descending, ties -> smaller index, NaN counts as the largest */
  float t[] = {1, 5, 3, 5, 2, /**/ NAN, 0, 0, -1, 7};
  rlx_attrs_TopK k = {.k = 3};
  int64_t l6[6];
  CHECK_OK(RUN(TopK, &k, &T(l6, SH(I64, 2, 3)), T(t, SH(F32, 2, 5))));
  CHECK(l6[0] == 1 && l6[1] == 3 && l6[2] == 2 && l6[3] == 0 && l6[4] == 4 && l6[5] == 1);
  float f6[6];
  CHECK_OK(RUN(TopK, &k, &T(f6, SH(F32, 2, 3)), T(t, SH(F32, 2, 5))));
  CHECK(f6[0] == 1 && f6[1] == 3 && f6[2] == 2 && f6[5] == 1);
  int32_t it[] = {4, 4, 4}, i2[2];
  k.k = 2;
  CHECK_OK(RUN(TopK, &k, &T(i2, SH(I32, 2)), T(it, SH(I32, 3))));
  CHECK(i2[0] == 0 && i2[1] == 1);
  k.k = 4;
  CHECK_ERR(RUN(TopK, &k, &T(i2, SH(I32, 4)), T(it, SH(I32, 3))), RLX_ERR_INVALID_ARG, "k");
}

/* ---- Sort / ArgSort ---- */

static void test_sort(void) {
  float x[] = {3, NAN, -1, 3, 0.0f, -0.0f, NAN}, y[7];
  rlx_attrs_Sort s = {.axis = 0};
  CHECK_OK(RUN(Sort, &s, &T(y, SH(F32, 7)), T(x, SH(F32, 7))));
  CHECK(y[0] == -1 && y[1] == 0 && !signbit(y[1]) && y[2] == 0 && signbit(y[2]) && y[3] == 3 && y[4] == 3 &&
        isnan(y[5]) && isnan(y[6]));
  s.descending = true;
  CHECK_OK(RUN(Sort, &s, &T(y, SH(F32, 7)), T(x, SH(F32, 7))));
  CHECK(y[0] == 3 && y[1] == 3 && !signbit(y[2]) && signbit(y[3]) && y[4] == -1 && isnan(y[5]) && isnan(y[6]));
  int64_t idx[7];
  rlx_attrs_ArgSort as = {.axis = -1};
  CHECK_OK(RUN(ArgSort, &as, &T(idx, SH(I64, 7)), T(x, SH(F32, 7))));
  int64_t w1[] = {2, 4, 5, 0, 3, 1, 6};
  CHECK(memcmp(idx, w1, sizeof w1) == 0);
  as.descending = true;
  float fidx[7];
  CHECK_OK(RUN(ArgSort, &as, &T(fidx, SH(F32, 7)), T(x, SH(F32, 7))));
  float w2[] = {0, 3, 4, 5, 2, 1, 6};
  CHECK(memcmp(fidx, w2, sizeof w2) == 0);
  /* along axis 0 of [3,2] int64, exact beyond 2^53 */
  int64_t m[] = {(1LL << 53) + 1, 5, 1LL << 53, -5, (1LL << 53) + 2, 0}, my[6];
  s = (rlx_attrs_Sort){.axis = 0};
  CHECK_OK(RUN(Sort, &s, &T(my, SH(I64, 3, 2)), T(m, SH(I64, 3, 2))));
  CHECK(my[0] == 1LL << 53 && my[2] == (1LL << 53) + 1 && my[4] == (1LL << 53) + 2 && my[1] == -5 && my[3] == 0 &&
        my[5] == 5);
  int32_t ai[6];
  as = (rlx_attrs_ArgSort){.axis = 0};
  CHECK_OK(RUN(ArgSort, &as, &T(ai, SH(I32, 3, 2)), T(m, SH(I64, 3, 2))));
  CHECK(ai[0] == 1 && ai[2] == 0 && ai[4] == 2 && ai[1] == 1 && ai[3] == 2 && ai[5] == 0);
  /* a longer random row against a simple insertion sort (stable by construction) */
  enum { N = 257 };
  double r[N], ry[N], ref[N];
  for (int i = 0; i < N; i++) r[i] = ref[i] = (double)((i * 7919) % 101) - 50;
  for (int i = 1; i < N; i++)
    for (int j = i; j > 0 && ref[j - 1] > ref[j]; j--) {
      double t = ref[j];
      ref[j] = ref[j - 1];
      ref[j - 1] = t;
    }
  CHECK_OK(RUN(Sort, &s, &T(ry, SH(F64, N)), T(r, SH(F64, N))));
  CHECK(memcmp(ry, ref, sizeof ref) == 0);
  CHECK_OK(RUN(Sort, &s, &T(ry, SH(F64, 0)), T(r, SH(F64, 0))));
}

/* ---- Histogram ---- */

static void test_histogram(void) {
  float x[] = {0, 0.25f, 0.5f, 0.999f, 1.0f, -0.1f, 1.1f, NAN, 0.2499999f, INFINITY};
  float h[4];
  rlx_attrs_Histogram a = {.bins = 4, .min = 0, .max = 1};
  CHECK_OK(RUN(Histogram, &a, &T(h, SH(F32, 4)), T(x, SH(F32, 10))));
  CHECK_MSG(h[0] == 2 && h[1] == 1 && h[2] == 1 && h[3] == 2, "%g %g %g %g", h[0], h[1], h[2], h[3]);
  /* edges that are not exact in binary (10 bins over [0, 1]): the double 0.3 lies below 3/10 and
   * below the computed edge 3 * 0.1 = 0.30000000000000004, so it belongs to bin 2 (as in NumPy);
   * likewise 0.7 -> bin 6, while 0.1 and 0.9 (just above 1/10 and 9/10) open bins 1 and 9. */
  double d[] = {0.3, 0.7, 0.1, 0.9, 0.0999999999};
  float h10[10];
  a = (rlx_attrs_Histogram){.bins = 10, .min = 0, .max = 1};
  CHECK_OK(RUN(Histogram, &a, &T(h10, SH(F32, 10)), T(d, SH(F64, 5))));
  CHECK_MSG(h10[2] == 1 && h10[6] == 1 && h10[1] == 1 && h10[9] == 1 && h10[0] == 1 && h10[3] == 0 && h10[7] == 0,
            "%g %g %g %g %g", h10[0], h10[1], h10[2], h10[6], h10[9]);
  /* 100 bins: the computed edges 29 * 0.01 = 0.29 and 35 * 0.01 = 0.35000000000000003 decide, not
   * the quotient (0.29 / 0.01 = 28.999999999999996, 0.35 / 0.01 = 35.0) */
  double e[] = {0.29, 0.35};
  float h100[100];
  a = (rlx_attrs_Histogram){.bins = 100, .min = 0, .max = 1};
  CHECK_OK(RUN(Histogram, &a, &T(h100, SH(F32, 100)), T(e, SH(F64, 2))));
  CHECK(h100[29] == 1 && h100[34] == 1 && h100[28] == 0 && h100[35] == 0);
  int32_t iv[] = {-5, -4, 0, 3, 4, 5};
  float hi[3];
  a = (rlx_attrs_Histogram){.bins = 3, .min = -4, .max = 5}; /* edges -4, -1, 2, 5 */
  CHECK_OK(RUN(Histogram, &a, &T(hi, SH(F32, 3)), T(iv, SH(I32, 6))));
  CHECK(hi[0] == 1 && hi[1] == 1 && hi[2] == 3);
  int64_t hl[3];
  CHECK_OK(RUN(Histogram, &a, &T(hl, SH(I64, 3)), T(iv, SH(I32, 0))));
  CHECK(hl[0] == 0 && hl[1] == 0 && hl[2] == 0);
  a.min = 5;
  CHECK_ERR(RUN(Histogram, &a, &T(hi, SH(F32, 3)), T(iv, SH(I32, 6))), RLX_ERR_INVALID_ARG, "min");
}

/* ---- Sample ---- */

static void test_sample(void) {
  enum { R = 20000 };
  float *lg = malloc(sizeof(float) * R * 4);
  float *tok = malloc(sizeof(float) * R);
  const double p[4] = {0.1, 0.2, 0.3, 0.4};
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 4; v++) lg[r * 4 + v] = (float)log(p[v]) + 3; /* shift: softmax is invariant */
  /* plain draw: frequencies match the softmax */
  rlx_attrs_Sample a = {.top_k = 0, .top_p = 1, .temperature = 1, .seed = 42};
  CHECK_OK(RUN(Sample, &a, &T(tok, SH(F32, R)), T(lg, SH(F32, R, 4))));
  int cnt[4] = {0};
  for (int r = 0; r < R; r++) cnt[(int)tok[r]]++;
  for (int v = 0; v < 4; v++) CHECK_MSG(fabs(cnt[v] / (double)R - p[v]) < 0.015, "token %d: %d draws", v, cnt[v]);
  /* nucleus 0.5: keep 0.4 and 0.3 (cumulative 0.7), renormalised to 4/7 and 3/7 */
  a.top_p = 0.5f;
  CHECK_OK(RUN(Sample, &a, &T(tok, SH(F32, R)), T(lg, SH(F32, R, 4))));
  memset(cnt, 0, sizeof cnt);
  for (int r = 0; r < R; r++) cnt[(int)tok[r]]++;
  CHECK(cnt[0] == 0 && cnt[1] == 0 && fabs(cnt[3] / (double)R - 4.0 / 7) < 0.015);
  /* top-k 2: keeps 0.3 and 0.4 -> 3/7 and 4/7 as well */
  a = (rlx_attrs_Sample){.top_k = 2, .top_p = 1, .temperature = 1, .seed = 7};
  CHECK_OK(RUN(Sample, &a, &T(tok, SH(F32, R)), T(lg, SH(F32, R, 4))));
  memset(cnt, 0, sizeof cnt);
  for (int r = 0; r < R; r++) cnt[(int)tok[r]]++;
  CHECK(cnt[0] == 0 && cnt[1] == 0 && fabs(cnt[2] / (double)R - 3.0 / 7) < 0.015);
  /* temperature -> 0 is greedy */
  a = (rlx_attrs_Sample){.top_k = 0, .top_p = 1, .temperature = 0, .seed = 1};
  CHECK_OK(RUN(Sample, &a, &T(tok, SH(F32, 100)), T(lg, SH(F32, 100, 4))));
  int greedy = 0;
  for (int r = 0; r < 100; r++) greedy += tok[r] == 3;
  CHECK(greedy == 100);
  /* top-k 1 with a tie keeps both tied tokens */
  float tie[] = {1, 3, 3, 2};
  int seen[4] = {0};
  for (uint64_t seed = 1; seed <= 200; seed++) {
    int64_t t1;
    a = (rlx_attrs_Sample){.top_k = 1, .top_p = 1, .temperature = 1, .seed = seed};
    CHECK_OK(RUN(Sample, &a, &T(&t1, SCALAR(I64)), T(tie, SH(F32, 4))));
    if (t1 >= 0 && t1 < 4) seen[t1]++;
  }
  CHECK(seen[0] == 0 && seen[3] == 0 && seen[1] > 50 && seen[2] > 50);
  /* deterministic in the seed; a different seed gives a different sequence */
  float *t2 = malloc(sizeof(float) * R);
  a = (rlx_attrs_Sample){.top_k = 0, .top_p = 1, .temperature = 1, .seed = 42};
  CHECK_OK(RUN(Sample, &a, &T(t2, SH(F32, 1000)), T(lg, SH(F32, 1000, 4))));
  CHECK_OK(RUN(Sample, &a, &T(tok, SH(F32, 1000)), T(lg, SH(F32, 1000, 4))));
  CHECK(memcmp(tok, t2, 1000 * sizeof(float)) == 0);
  a.seed = 43;
  CHECK_OK(RUN(Sample, &a, &T(t2, SH(F32, 1000)), T(lg, SH(F32, 1000, 4))));
  CHECK(memcmp(tok, t2, 1000 * sizeof(float)) != 0);
  /* a row with no finite logit, and -inf / NaN logits are never drawn */
  float bad[] = {-INFINITY, NAN}, one[] = {-INFINITY, 0, NAN};
  CHECK_ERR(RUN(Sample, &a, &T(t2, SH(F32, 1)), T(bad, SH(F32, 1, 2))), RLX_ERR_RUNTIME, "no finite");
  for (uint64_t seed = 0; seed < 50; seed++) {
    a.seed = seed;
    CHECK_OK(RUN(Sample, &a, &T(t2, SH(F32, 1)), T(one, SH(F32, 1, 3))));
    CHECK(t2[0] == 1);
  }
  free(lg);
  free(tok);
  free(t2);
}

int main(void) {
  if (rlx_graph_create(NULL, "ref_reduce", &G) != RLX_OK) return 1;
  test_reduce();
  test_softmax();
  test_scans();
  test_arg_topk();
  test_sort();
  test_histogram();
  test_sample();
  rlx_graph_free(G);
  return rlx_test_finish("ref_reduce");
}
