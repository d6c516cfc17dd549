/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, elementwise family: every Activation kind, Cast between dtype classes
 * (with f16/bf16 rounding), every Binary op on f32 and i32, integer edge cases, broadcasting,
 * Compare with NaN, Where, Fma single rounding, Clamp. Expected values are worked by hand or
 * computed here with independent math.h formulas. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_a_test.h"
#include "core/elem.h"

/* ---- Activation ---- */

static double ref_act(rlx_act k, double x) {
  /* Written independently of the kernel (naive or alternative formulas, fine for |x| < 10). */
  switch (k) {
  case RLX_ACT_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
  case RLX_ACT_GELU_APPROX: return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * pow(x, 3))));
  case RLX_ACT_SILU: return x / (1 + exp(-x));
  case RLX_ACT_RELU: return x > 0 ? x : 0;
  case RLX_ACT_SIGMOID: return 1 / (1 + exp(-x));
  case RLX_ACT_TANH: return (exp(2 * x) - 1) / (exp(2 * x) + 1);
  case RLX_ACT_EXP: return exp(x);
  case RLX_ACT_LOG: return log(x);
  case RLX_ACT_SQRT: return sqrt(x);
  case RLX_ACT_RSQRT: return pow(x, -0.5);
  case RLX_ACT_NEG: return -x;
  case RLX_ACT_ABS: return x < 0 ? -x : x;
  case RLX_ACT_SIN: return sin(x);
  case RLX_ACT_COS: return cos(x);
  case RLX_ACT_TAN: return sin(x) / cos(x);
  case RLX_ACT_ATAN: return atan2(x, 1);
  case RLX_ACT_RECIP: return 1 / x;
  case RLX_ACT_ROUND: return nearbyint(x); /* default rounding mode: ties to even */
  case RLX_ACT_FLOOR: return floor(x);
  case RLX_ACT_CEIL: return ceil(x);
  case RLX_ACT_SIGN: return x > 0 ? 1 : x < 0 ? -1 : 0;
  case RLX_ACT_SOFTPLUS: return log(1 + exp(x));
  case RLX_ACT_ELU: return x > 0 ? x : exp(x) - 1;
  case RLX_ACT_ERF: return 1 - erfc(x);
  case RLX_ACT_HARD_SWISH: return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
  case RLX_ACT_HARD_SIGMOID: return x <= -3 ? 0 : x >= 3 ? 1 : (x + 3) / 6;
  case RLX_ACT_MISH: return x * tanh(log(1 + exp(x)));
  case RLX_ACT_SOFTSIGN: return x / (1 + fabs(x));
  case RLX_ACT_LOG_SIGMOID: return -log(1 + exp(-x));
  default: return NAN;
  }
}

static void test_activation_all_kinds(void) {
  const double xs[] = {-4.0, -2.5, -1.0, -0.3, 0.0, 0.4, 1.0, 2.5, 3.5, 5.0};
  const double pos[] = {0.01, 0.25, 0.5, 1.0, 2.0, 3.0, 4.5, 7.0, 9.0, 10.0};
  enum { N = 10 };
  for (int k = 0; k < RLX_ACT_COUNT; k++) {
    bool positive = k == RLX_ACT_LOG || k == RLX_ACT_SQRT || k == RLX_ACT_RSQRT || k == RLX_ACT_RECIP;
    const double *src = positive ? pos : xs;
    rlx_attrs_Activation a = {.kind = k};
    double x64[N], y64[N];
    float x32[N], y32[N];
    for (int i = 0; i < N; i++) {
      x64[i] = src[i];
      x32[i] = (float)src[i];
    }
    CHECK_OK(RUN(Activation, &a, &T(y64, SH(F64, N)), T(x64, SH(F64, N))));
    CHECK_OK(RUN(Activation, &a, &T(y32, SH(F32, 2, 5)), T(x32, SH(F32, 2, 5))));
    for (int i = 0; i < N; i++) {
      double w = ref_act((rlx_act)k, src[i]);
      CHECK_MSG(near(y64[i], w, 1e-13), "%s(%g): f64 got %.17g want %.17g", rlx_enum_act.names[k], src[i], y64[i], w);
      CHECK_MSG(near(y32[i], w, 2e-7), "%s(%g): f32 got %.9g want %.9g", rlx_enum_act.names[k], src[i], y32[i], w);
    }
  }
}

static void test_activation_edges(void) {
  /* Round: ties to even, keeps the sign of zero. */
  double x[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -0.2, 1e300}, y[10];
  double want[] = {0, 2, 2, -0.0, -2, -2, 2, 3, -0.0, 1e300};
  rlx_attrs_Activation a = {.kind = RLX_ACT_ROUND};
  CHECK_OK(RUN(Activation, &a, &T(y, SH(F64, 10)), T(x, SH(F64, 10))));
  for (int i = 0; i < 10; i++)
    CHECK_MSG(y[i] == want[i] && signbit(y[i]) == signbit(want[i]), "round(%g) = %g", x[i], y[i]);

  /* NaN / Inf inputs */
  float xf[] = {NAN, INFINITY, -INFINITY, 0.0f}, yf[4];
  a.kind = RLX_ACT_RELU;
  CHECK_OK(RUN(Activation, &a, &T(yf, SH(F32, 4)), T(xf, SH(F32, 4))));
  CHECK(isnan(yf[0]) && yf[1] == INFINITY && yf[2] == 0 && yf[3] == 0);
  a.kind = RLX_ACT_SIGN;
  CHECK_OK(RUN(Activation, &a, &T(yf, SH(F32, 4)), T(xf, SH(F32, 4))));
  CHECK(isnan(yf[0]) && yf[1] == 1 && yf[2] == -1 && yf[3] == 0);
  a.kind = RLX_ACT_SIGMOID;
  CHECK_OK(RUN(Activation, &a, &T(yf, SH(F32, 4)), T(xf, SH(F32, 4))));
  CHECK(isnan(yf[0]) && yf[1] == 1 && yf[2] == 0 && yf[3] == 0.5f);
  a.kind = RLX_ACT_SOFTPLUS; /* large arguments must not overflow */
  float big[] = {1000.0f, -1000.0f}, ybig[2];
  CHECK_OK(RUN(Activation, &a, &T(ybig, SH(F32, 2)), T(big, SH(F32, 2))));
  CHECK(ybig[0] == 1000.0f && ybig[1] == 0.0f);
  a.kind = RLX_ACT_LOG_SIGMOID;
  CHECK_OK(RUN(Activation, &a, &T(ybig, SH(F32, 2)), T(big, SH(F32, 2))));
  CHECK(ybig[0] == 0.0f && ybig[1] == -1000.0f);

  /* f16: exp(1) rounds to 2.71875 (0x4170); Gelu(-3) in bf16 */
  uint16_t h = rlx_f32_to_f16(1.0f), hy;
  a.kind = RLX_ACT_EXP;
  CHECK_OK(RUN(Activation, &a, &T(&hy, SCALAR(F16)), T(&h, SCALAR(F16))));
  CHECK_MSG(hy == 0x4170, "exp(1) in f16 = 0x%04x", hy);

  /* Integers: exact kinds stay exact and saturate; others truncate. */
  int32_t xi[] = {INT32_MIN, -7, 0, 9, 10}, yi[5];
  a.kind = RLX_ACT_NEG;
  CHECK_OK(RUN(Activation, &a, &T(yi, SH(I32, 5)), T(xi, SH(I32, 5))));
  CHECK(yi[0] == INT32_MAX && yi[1] == 7 && yi[2] == 0 && yi[3] == -9);
  a.kind = RLX_ACT_ABS;
  CHECK_OK(RUN(Activation, &a, &T(yi, SH(I32, 5)), T(xi, SH(I32, 5))));
  CHECK(yi[0] == INT32_MAX && yi[1] == 7 && yi[4] == 10);
  a.kind = RLX_ACT_SQRT;
  CHECK_OK(RUN(Activation, &a, &T(yi + 3, SH(I32, 2)), T(xi + 3, SH(I32, 2))));
  CHECK(yi[3] == 3 && yi[4] == 3);
  a.kind = RLX_ACT_SIGN;
  CHECK_OK(RUN(Activation, &a, &T(yi, SH(I32, 5)), T(xi, SH(I32, 5))));
  CHECK(yi[0] == -1 && yi[2] == 0 && yi[4] == 1);

  /* Complex exp(i*pi) = -1; Gelu on complex is unsupported. */
  float c[2] = {0, 3.14159265358979f}, cy[2];
  a.kind = RLX_ACT_EXP;
  CHECK_OK(RUN(Activation, &a, &T(cy, SCALAR(C64)), T(c, SCALAR(C64))));
  CHECK(fabsf(cy[0] + 1) < 1e-6f && fabsf(cy[1]) < 1e-6f);
  a.kind = RLX_ACT_GELU;
  CHECK_ERR(RUN(Activation, &a, &T(cy, SCALAR(C64)), T(c, SCALAR(C64))), RLX_ERR_UNSUPPORTED, "complex");
  uint8_t bl[1] = {1}, bo[1];
  CHECK_ERR(RUN(Activation, &a, &T(bo, SCALAR(BOOL)), T(bl, SCALAR(BOOL))), RLX_ERR_INVALID_ARG, "bool");

  /* Empty and rank-0 tensors. */
  float dummy[1] = {2}, dout[1] = {-1};
  a.kind = RLX_ACT_EXP;
  CHECK_OK(RUN(Activation, &a, &T(dout, SH(F32, 0, 3)), T(dummy, SH(F32, 0, 3))));
  CHECK(dout[0] == -1);
  a.kind = RLX_ACT_NEG;
  CHECK_OK(RUN(Activation, &a, &T(dout, SCALAR(F32)), T(dummy, SCALAR(F32))));
  CHECK(dout[0] == -2);
  /* A mismatched output is refused rather than overrun. */
  CHECK_ERR(RUN(Activation, &a, &T(dout, SCALAR(F32)), T(x, SH(F64, 4))), RLX_ERR_INVALID_ARG, "operand 0");
}

/* ---- Cast ---- */

static void test_cast(void) {
  rlx_attrs_Cast a = {0};
  float f[] = {2.7f, -2.7f, NAN, 1e10f, -1e10f, INFINITY, -0.5f};
  int32_t i32[7];
  a.to = RLX_I32;
  CHECK_OK(RUN(Cast, &a, &T(i32, SH(I32, 7)), T(f, SH(F32, 7))));
  CHECK(i32[0] == 2 && i32[1] == -2 && i32[2] == 0 && i32[3] == INT32_MAX && i32[4] == INT32_MIN &&
        i32[5] == INT32_MAX && i32[6] == 0);

  float fu[] = {-1, 300, 255.9f, 3.5f};
  uint8_t u8[4];
  a.to = RLX_U8;
  CHECK_OK(RUN(Cast, &a, &T(u8, SH(U8, 4)), T(fu, SH(F32, 4))));
  CHECK(u8[0] == 0 && u8[1] == 255 && u8[2] == 255 && u8[3] == 3);

  float fb[] = {0.0f, -0.0f, NAN, 0.1f};
  uint8_t b[4];
  a.to = RLX_BOOL;
  CHECK_OK(RUN(Cast, &a, &T(b, SH(BOOL, 4)), T(fb, SH(F32, 4))));
  CHECK(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 1);

  /* integer -> integer wraps (two's complement) */
  int32_t iw[] = {300, -129, 127, -128};
  int8_t i8[4];
  a.to = RLX_I8;
  CHECK_OK(RUN(Cast, &a, &T(i8, SH(I8, 4)), T(iw, SH(I32, 4))));
  CHECK(i8[0] == 44 && i8[1] == 127 && i8[2] == 127 && i8[3] == -128);
  int64_t il[] = {-1, 4294967296LL + 5};
  uint32_t u32[2];
  a.to = RLX_U32;
  CHECK_OK(RUN(Cast, &a, &T(u32, SH(U32, 2)), T(il, SH(I64, 2))));
  CHECK(u32[0] == 4294967295u && u32[1] == 5);
  uint32_t uu[] = {4294967295u};
  int32_t iu[1];
  a.to = RLX_I32;
  CHECK_OK(RUN(Cast, &a, &T(iu, SH(I32, 1)), T(uu, SH(U32, 1))));
  CHECK(iu[0] == -1);
  int32_t ib[] = {0, 256, -1};
  a.to = RLX_BOOL;
  CHECK_OK(RUN(Cast, &a, &T(b, SH(BOOL, 3)), T(ib, SH(I32, 3))));
  CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1);
  uint8_t bsrc[] = {0, 1};
  float bf[2];
  a.to = RLX_F32;
  CHECK_OK(RUN(Cast, &a, &T(bf, SH(F32, 2)), T(bsrc, SH(BOOL, 2))));
  CHECK(bf[0] == 0 && bf[1] == 1);
  int32_t bi[2];
  a.to = RLX_I32;
  CHECK_OK(RUN(Cast, &a, &T(bi, SH(I32, 2)), T(bsrc, SH(BOOL, 2))));
  CHECK(bi[0] == 0 && bi[1] == 1);
  double di[2];
  a.to = RLX_F64;
  CHECK_OK(RUN(Cast, &a, &T(di, SH(F64, 2)), T(ib, SH(I32, 2))));
  CHECK(di[0] == 0 && di[1] == 256);

  /* integer -> float rounds to nearest even */
  int64_t big[] = {16777217, 16777219, (1LL << 60) + (1LL << 52) + 1};
  float fbig[3];
  a.to = RLX_F32;
  CHECK_OK(RUN(Cast, &a, &T(fbig, SH(F32, 3)), T(big, SH(I64, 3))));
  CHECK(fbig[0] == 16777216.0f && fbig[1] == 16777220.0f);
  uint16_t hb[3];
  a.to = RLX_BF16; /* 2^60 + 2^52 + 1 lies just above a bf16 tie: rounds up to 2^60 * (1 + 2^-7) */
  CHECK_OK(RUN(Cast, &a, &T(hb, SH(BF16, 3)), T(big, SH(I64, 3))));
  CHECK_MSG(rlx_bf16_to_f32(hb[2]) == ldexpf(1.0f + 0x1p-7f, 60), "bf16 got %g", (double)rlx_bf16_to_f32(hb[2]));
  int32_t ih[] = {65519, 65520, 2049, 2051, -2049};
  uint16_t hh[5];
  a.to = RLX_F16;
  CHECK_OK(RUN(Cast, &a, &T(hh, SH(F16, 5)), T(ih, SH(I32, 5))));
  CHECK(hh[0] == 0x7bff && hh[1] == 0x7c00 && rlx_f16_to_f32(hh[2]) == 2048 && rlx_f16_to_f32(hh[3]) == 2052 &&
        rlx_f16_to_f32(hh[4]) == -2048);

  /* f64 -> f16 / bf16 without double rounding: just above a tie of the narrow format. */
  double d[] = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1.0 / 3, 1e-8, 3e-8, 1e6};
  uint16_t h[6];
  a.to = RLX_F16;
  CHECK_OK(RUN(Cast, &a, &T(h, SH(F16, 6)), T(d, SH(F64, 6))));
  CHECK_MSG(h[0] == 0x3c01 && h[1] == 0x3c00 && h[2] == 0x3555 && h[3] == 0x0000 && h[4] == 0x0001 && h[5] == 0x7c00,
            "f16 %04x %04x %04x %04x %04x %04x", h[0], h[1], h[2], h[3], h[4], h[5]);
  double d2[] = {1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-8, 3.0};
  a.to = RLX_BF16;
  CHECK_OK(RUN(Cast, &a, &T(h, SH(BF16, 3)), T(d2, SH(F64, 3))));
  CHECK_MSG(h[0] == 0x3f81 && h[1] == 0x3f80 && h[2] == 0x4040, "bf16 %04x %04x %04x", h[0], h[1], h[2]);
  /* f16 -> f32 exact, f16 -> i8 saturates */
  uint16_t hs[] = {rlx_f32_to_f16(200.0f), rlx_f32_to_f16(-1.5f)};
  int8_t hi8[2];
  a.to = RLX_I8;
  CHECK_OK(RUN(Cast, &a, &T(hi8, SH(I8, 2)), T(hs, SH(F16, 2))));
  CHECK(hi8[0] == 127 && hi8[1] == -1);
  double dl[] = {9.3e18, -9.3e18, 123.9};
  int64_t l[3];
  a.to = RLX_I64;
  CHECK_OK(RUN(Cast, &a, &T(l, SH(I64, 3)), T(dl, SH(F64, 3))));
  CHECK(l[0] == INT64_MAX && l[1] == INT64_MIN && l[2] == 123);

  /* complex */
  float c[] = {1.5f, -2.0f, 0.0f, 3.0f};
  float re[2];
  a.to = RLX_F32;
  CHECK_OK(RUN(Cast, &a, &T(re, SH(F32, 2)), T(c, SH(C64, 2))));
  CHECK(re[0] == 1.5f && re[1] == 0.0f);
  a.to = RLX_BOOL;
  CHECK_OK(RUN(Cast, &a, &T(b, SH(BOOL, 2)), T(c, SH(C64, 2))));
  CHECK(b[0] == 1 && b[1] == 1); /* (0, 3i) is non-zero */
  double cz[4];
  a.to = RLX_C128;
  CHECK_OK(RUN(Cast, &a, &T(cz, SH(C128, 2)), T(c, SH(C64, 2))));
  CHECK(cz[0] == 1.5 && cz[1] == -2.0 && cz[2] == 0 && cz[3] == 3.0);
  float fr[] = {2.5f, -1.0f};
  a.to = RLX_C128;
  CHECK_OK(RUN(Cast, &a, &T(cz, SH(C128, 2)), T(fr, SH(F32, 2))));
  CHECK(cz[0] == 2.5 && cz[1] == 0 && cz[2] == -1 && cz[3] == 0);
  int32_t ci[] = {-7};
  a.to = RLX_C64;
  CHECK_OK(RUN(Cast, &a, &T(re, SCALAR(C64)), T(ci, SCALAR(I32))));
  CHECK(re[0] == -7 && re[1] == 0);

  /* same dtype: a copy; StopGradient: a copy */
  float s[] = {1, 2, 3}, so[3];
  a.to = RLX_F32;
  CHECK_OK(RUN(Cast, &a, &T(so, SH(F32, 3)), T(s, SH(F32, 3))));
  CHECK(memcmp(s, so, sizeof s) == 0);
  memset(so, 0, sizeof so);
  CHECK_OK(RUN(StopGradient, NULL, &T(so, SH(F32, 3)), T(s, SH(F32, 3))));
  CHECK(memcmp(s, so, sizeof s) == 0);
}

/* ---- Binary ---- */

static void test_binary_f32(void) {
  /* a is [2, 3], b is [3] (broadcast over rows) */
  float a[] = {1.5f, -2.0f, 7.5f, 0.0f, 3.0f, -7.5f}, b[] = {2.0f, 0.5f, -2.0f};
  for (int op = 0; op < RLX_BINOP_COUNT; op++) {
    rlx_attrs_Binary at = {.op = op};
    float y[6];
    bool bitwise = op >= RLX_BINOP_BIT_AND && op <= RLX_BINOP_SHR;
    rlx_status s = RUN(Binary, &at, &T(y, SH(F32, 2, 3)), T(a, SH(F32, 2, 3)), T(b, SH(F32, 3)));
    if (bitwise) {
      CHECK_ERR(s, RLX_ERR_INVALID_ARG, "integer");
      continue;
    }
    CHECK_OK(s);
    for (int i = 0; i < 6; i++) {
      double x = a[i], z = b[i % 3], w;
      switch (op) {
      case RLX_BINOP_ADD: w = x + z; break;
      case RLX_BINOP_SUB: w = x - z; break;
      case RLX_BINOP_MUL: w = x * z; break;
      case RLX_BINOP_DIV: w = x / z; break;
      case RLX_BINOP_MAX: w = x > z ? x : z; break;
      case RLX_BINOP_MIN: w = x < z ? x : z; break;
      case RLX_BINOP_POW: w = pow(x, z); break;
      case RLX_BINOP_MOD: w = x - z * trunc(x / z); break;
      default: w = atan2(x, z); break;
      }
      CHECK_MSG(near(y[i], (float)w, 1e-6), "%s(%g, %g) = %.9g, want %.9g", rlx_enum_binop.names[op], x, z, y[i], w);
    }
  }
  /* IEEE specials */
  float p[] = {1.0f, -1.0f, 0.0f, NAN}, q[] = {0.0f, 0.0f, 0.0f, 1.0f}, y[4];
  rlx_attrs_Binary at = {.op = RLX_BINOP_DIV};
  CHECK_OK(RUN(Binary, &at, &T(y, SH(F32, 4)), T(p, SH(F32, 4)), T(q, SH(F32, 4))));
  CHECK(y[0] == INFINITY && y[1] == -INFINITY && isnan(y[2]) && isnan(y[3]));
  at.op = RLX_BINOP_MAX;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(F32, 4)), T(p, SH(F32, 4)), T(q, SH(F32, 4))));
  CHECK(y[0] == 1 && y[1] == 0 && isnan(y[3]));
  /* f16: 1 + 3*2^-11 is a tie between 1+2^-10 and 1+2^-9: to even (0x3c02) */
  uint16_t h1 = rlx_f32_to_f16(1.0f), h2 = rlx_f32_to_f16(3 * 0x1p-11f), hy;
  at.op = RLX_BINOP_ADD;
  CHECK_OK(RUN(Binary, &at, &T(&hy, SCALAR(F16)), T(&h1, SCALAR(F16)), T(&h2, SCALAR(F16))));
  CHECK_MSG(hy == 0x3c02, "f16 sum 0x%04x", hy);
  /* bf16 Mul in double, rounded once */
  uint16_t b1 = rlx_f32_to_bf16(3.0f), b2 = rlx_f32_to_bf16(1.0f / 3), by;
  at.op = RLX_BINOP_MUL;
  CHECK_OK(RUN(Binary, &at, &T(&by, SCALAR(BF16)), T(&b1, SCALAR(BF16)), T(&b2, SCALAR(BF16))));
  CHECK(rlx_bf16_to_f32(by) == rlx_bf16_to_f32(rlx_f32_to_bf16((float)(3.0 * rlx_bf16_to_f32(b2)))));
}

static void test_binary_i32(void) {
  int32_t a[] = {7, -7, 7, -7, 0, 100}, b[] = {2, 2, -2, -2, 5, 3};
  static const int32_t want[RLX_BINOP_COUNT][6] = {
      [RLX_BINOP_ADD] = {9, -5, 5, -9, 5, 103},     [RLX_BINOP_SUB] = {5, -9, 9, -5, -5, 97},
      [RLX_BINOP_MUL] = {14, -14, -14, 14, 0, 300}, [RLX_BINOP_DIV] = {3, -3, -3, 3, 0, 33},
      [RLX_BINOP_MAX] = {7, 2, 7, -2, 5, 100},      [RLX_BINOP_MIN] = {2, -7, -2, -7, 0, 3},
      [RLX_BINOP_POW] = {49, 49, 0, 0, 0, 1000000}, [RLX_BINOP_MOD] = {1, -1, 1, -1, 0, 1},
      [RLX_BINOP_BIT_AND] = {2, 0, 6, -8, 0, 0},    [RLX_BINOP_BIT_OR] = {7, -5, -1, -1, 5, 103},
      [RLX_BINOP_BIT_XOR] = {5, -5, -7, 7, 5, 103}, [RLX_BINOP_SHL] = {28, -28, 0, 0, 0, 800},
      [RLX_BINOP_SHR] = {1, -2, 0, -1, 0, 12},      [RLX_BINOP_ATAN2] = {1, -1, 1, -1, 0, 1},
  };
  for (int op = 0; op < RLX_BINOP_COUNT; op++) {
    rlx_attrs_Binary at = {.op = op};
    int32_t y[6];
    CHECK_OK(RUN(Binary, &at, &T(y, SH(I32, 6)), T(a, SH(I32, 6)), T(b, SH(I32, 6))));
    for (int i = 0; i < 6; i++)
      CHECK_MSG(y[i] == want[op][i], "%s(%d, %d) = %d, want %d", rlx_enum_binop.names[op], a[i], b[i], y[i],
                want[op][i]);
  }
  /* division and modulo by zero are runtime errors naming the node */
  int32_t p[] = {1, 2}, q[] = {1, 0}, y[2];
  rlx_attrs_Binary at = {.op = RLX_BINOP_DIV};
  CHECK_ERR(RUN(Binary, &at, &T(y, SH(I32, 2)), T(p, SH(I32, 2)), T(q, SH(I32, 2))), RLX_ERR_RUNTIME,
            "Binary node 't'");
  CHECK(strstr(rlx_last_error(), "by zero") != NULL);
  at.op = RLX_BINOP_MOD;
  CHECK_ERR(RUN(Binary, &at, &T(y, SH(I32, 2)), T(p, SH(I32, 2)), T(q, SH(I32, 2))), RLX_ERR_RUNTIME, "by zero");
  int32_t zero[] = {0}, neg[] = {-1};
  at.op = RLX_BINOP_POW;
  CHECK_ERR(RUN(Binary, &at, &T(y, SCALAR(I32)), T(zero, SCALAR(I32)), T(neg, SCALAR(I32))), RLX_ERR_RUNTIME,
            "negative");
  /* saturation and the int64 corner cases */
  int32_t m[] = {INT32_MAX, INT32_MIN, INT32_MIN}, o[] = {1, -1, 1};
  at.op = RLX_BINOP_ADD;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(I32, 1)), T(m, SH(I32, 1)), T(o, SH(I32, 1))));
  CHECK(y[0] == INT32_MAX);
  at.op = RLX_BINOP_DIV;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(I32, 1)), T(m + 1, SH(I32, 1)), T(o + 1, SH(I32, 1))));
  CHECK(y[0] == INT32_MAX);
  int64_t lm[] = {INT64_MIN, INT64_MAX, 3}, lo[] = {-1, 1, 40}, ly[3];
  CHECK_OK(RUN(Binary, &at, &T(ly, SH(I64, 1)), T(lm, SH(I64, 1)), T(lo, SH(I64, 1))));
  CHECK(ly[0] == INT64_MAX);
  at.op = RLX_BINOP_MOD;
  CHECK_OK(RUN(Binary, &at, &T(ly, SH(I64, 1)), T(lm, SH(I64, 1)), T(lo, SH(I64, 1))));
  CHECK(ly[0] == 0);
  at.op = RLX_BINOP_ADD;
  CHECK_OK(RUN(Binary, &at, &T(ly, SH(I64, 1)), T(lm + 1, SH(I64, 1)), T(lo + 1, SH(I64, 1))));
  CHECK(ly[0] == INT64_MAX);
  at.op = RLX_BINOP_POW;
  CHECK_OK(RUN(Binary, &at, &T(ly, SH(I64, 1)), T(lm + 2, SH(I64, 1)), T(lo + 2, SH(I64, 1))));
  CHECK(ly[0] == INT64_MAX); /* 3^40 overflows */
  /* shifts at the bit width of the dtype */
  int32_t s1[] = {1, 1, -1, 5}, s2[] = {31, 32, 40, 0};
  at.op = RLX_BINOP_SHL;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(I32, 2)), T(s1, SH(I32, 2)), T(s2, SH(I32, 2))));
  CHECK(y[0] == INT32_MIN && y[1] == 0);
  at.op = RLX_BINOP_SHR;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(I32, 2)), T(s1 + 2, SH(I32, 2)), T(s2 + 2, SH(I32, 2))));
  CHECK(y[0] == -1 && y[1] == 5);
  int8_t c1[] = {64}, c2[] = {1}, cy[1];
  at.op = RLX_BINOP_SHL;
  CHECK_OK(RUN(Binary, &at, &T(cy, SCALAR(I8)), T(c1, SCALAR(I8)), T(c2, SCALAR(I8))));
  CHECK(cy[0] == -128);
  uint8_t u1[] = {200}, u2[] = {1}, uy[1];
  at.op = RLX_BINOP_SHR;
  CHECK_OK(RUN(Binary, &at, &T(uy, SCALAR(U8)), T(u1, SCALAR(U8)), T(u2, SCALAR(U8))));
  CHECK(uy[0] == 100);
  at.op = RLX_BINOP_SUB; /* unsigned results below zero saturate at 0 */
  CHECK_OK(RUN(Binary, &at, &T(uy, SCALAR(U8)), T(u2, SCALAR(U8)), T(u1, SCALAR(U8))));
  CHECK(uy[0] == 0);
  /* bitwise on bool */
  uint8_t ba[] = {0, 0, 1, 1}, bb[] = {0, 1, 0, 1}, by[4];
  at.op = RLX_BINOP_BIT_AND;
  CHECK_OK(RUN(Binary, &at, &T(by, SH(BOOL, 4)), T(ba, SH(BOOL, 4)), T(bb, SH(BOOL, 4))));
  CHECK(by[0] == 0 && by[1] == 0 && by[2] == 0 && by[3] == 1);
  at.op = RLX_BINOP_BIT_XOR;
  CHECK_OK(RUN(Binary, &at, &T(by, SH(BOOL, 4)), T(ba, SH(BOOL, 4)), T(bb, SH(BOOL, 4))));
  CHECK(by[0] == 0 && by[1] == 1 && by[2] == 1 && by[3] == 0);
  at.op = RLX_BINOP_SHL;
  CHECK_ERR(RUN(Binary, &at, &T(by, SH(BOOL, 4)), T(ba, SH(BOOL, 4)), T(bb, SH(BOOL, 4))), RLX_ERR_INVALID_ARG, "bool");
}

static void test_broadcast_and_complex(void) {
  /* [2,1,3] + [4,1] -> [2,4,3] */
  float a[6], b[4], y[24];
  for (int i = 0; i < 6; i++) a[i] = (float)(i * 10);
  for (int i = 0; i < 4; i++) b[i] = (float)i;
  rlx_attrs_Binary at = {.op = RLX_BINOP_SUB};
  CHECK_OK(RUN(Binary, &at, &T(y, SH(F32, 2, 4, 3)), T(a, SH(F32, 2, 1, 3)), T(b, SH(F32, 4, 1))));
  int bad = 0;
  for (int i0 = 0; i0 < 2; i0++)
    for (int i1 = 0; i1 < 4; i1++)
      for (int i2 = 0; i2 < 3; i2++) bad += y[(i0 * 4 + i1) * 3 + i2] != a[i0 * 3 + i2] - b[i1];
  CHECK(bad == 0);
  /* rank-0 operand against a matrix, and rank-0 with rank-0 */
  float s = 2.0f, s2[1];
  at.op = RLX_BINOP_MUL;
  CHECK_OK(RUN(Binary, &at, &T(y, SH(F32, 2, 3)), T(&s, SCALAR(F32)), T(a, SH(F32, 2, 3))));
  CHECK(y[0] == 0 && y[5] == 100);
  CHECK_OK(RUN(Binary, &at, &T(s2, SCALAR(F32)), T(&s, SCALAR(F32)), T(&s, SCALAR(F32))));
  CHECK(s2[0] == 4);
  /* empty output */
  CHECK_OK(RUN(Binary, &at, &T(y, SH(F32, 0, 3)), T(a, SH(F32, 0, 3)), T(a, SH(F32, 3))));
  /* shapes that do not broadcast are refused */
  CHECK_ERR(RUN(Binary, &at, &T(y, SH(F32, 2, 3)), T(a, SH(F32, 2, 3)), T(b, SH(F32, 4))), RLX_ERR_INVALID_ARG,
            "broadcast");
  /* complex: (1+2i)(3-i) = 5+5i, (5+5i)/(3-i) = 1+2i */
  float c1[] = {1, 2}, c2[] = {3, -1}, c3[] = {5, 5}, cy[2];
  at.op = RLX_BINOP_MUL;
  CHECK_OK(RUN(Binary, &at, &T(cy, SCALAR(C64)), T(c1, SCALAR(C64)), T(c2, SCALAR(C64))));
  CHECK(cy[0] == 5 && cy[1] == 5);
  at.op = RLX_BINOP_DIV;
  CHECK_OK(RUN(Binary, &at, &T(cy, SCALAR(C64)), T(c3, SCALAR(C64)), T(c2, SCALAR(C64))));
  CHECK(fabsf(cy[0] - 1) < 1e-6f && fabsf(cy[1] - 2) < 1e-6f);
  double d1[] = {1, 2}, d2[] = {3, -1}, dy[2];
  at.op = RLX_BINOP_SUB;
  CHECK_OK(RUN(Binary, &at, &T(dy, SCALAR(C128)), T(d1, SCALAR(C128)), T(d2, SCALAR(C128))));
  CHECK(dy[0] == -2 && dy[1] == 3);
  at.op = RLX_BINOP_MAX;
  CHECK_ERR(RUN(Binary, &at, &T(dy, SCALAR(C128)), T(d1, SCALAR(C128)), T(d2, SCALAR(C128))), RLX_ERR_UNSUPPORTED,
            "complex");
}

/* ---- Compare, Where ---- */

static void test_compare_where(void) {
  float a[] = {1, NAN, 2, 3, -0.0f}, b[] = {1, 1, NAN, 2, 0.0f};
  static const uint8_t want[RLX_CMP_COUNT][5] = {
      [RLX_CMP_EQ] = {1, 0, 0, 0, 1}, [RLX_CMP_NE] = {0, 1, 1, 1, 0}, [RLX_CMP_LT] = {0, 0, 0, 0, 0},
      [RLX_CMP_LE] = {1, 0, 0, 0, 1}, [RLX_CMP_GT] = {0, 0, 0, 1, 0}, [RLX_CMP_GE] = {1, 0, 0, 1, 1},
  };
  for (int op = 0; op < RLX_CMP_COUNT; op++) {
    rlx_attrs_Compare at = {.op = op};
    uint8_t y[5];
    CHECK_OK(RUN(Compare, &at, &T(y, SH(BOOL, 5)), T(a, SH(F32, 5)), T(b, SH(F32, 5))));
    for (int i = 0; i < 5; i++) CHECK_MSG(y[i] == want[op][i], "%s element %d", rlx_enum_cmp.names[op], i);
  }
  /* int64 compares exactly (2^53 + 1 > 2^53 although both are the same double) */
  int64_t l1[] = {(1LL << 53) + 1}, l2[] = {1LL << 53};
  uint8_t y[6];
  rlx_attrs_Compare at = {.op = RLX_CMP_GT};
  CHECK_OK(RUN(Compare, &at, &T(y, SCALAR(BOOL)), T(l1, SCALAR(I64)), T(l2, SCALAR(I64))));
  CHECK(y[0] == 1);
  /* broadcasting [2,1] < [3] */
  int32_t p[] = {1, 5}, q[] = {0, 2, 6};
  at.op = RLX_CMP_LT;
  CHECK_OK(RUN(Compare, &at, &T(y, SH(BOOL, 2, 3)), T(p, SH(I32, 2, 1)), T(q, SH(I32, 3))));
  CHECK(y[0] == 0 && y[1] == 1 && y[2] == 1 && y[3] == 0 && y[4] == 0 && y[5] == 1);
  /* Where: cond [2,1] (f32, NaN counts as true), t [1,3], f [] -> [2,3] */
  float cond[] = {0.0f, NAN};
  int64_t t[] = {1, 2, 3}, f[] = {-9}, w[6];
  CHECK_OK(RUN(Where, NULL, &T(w, SH(I64, 2, 3)), T(cond, SH(F32, 2, 1)), T(t, SH(I64, 1, 3)), T(f, SCALAR(I64))));
  CHECK(w[0] == -9 && w[1] == -9 && w[2] == -9 && w[3] == 1 && w[4] == 2 && w[5] == 3);
  uint8_t bc[] = {1, 0, 2};
  double dt[] = {1.5, 2.5, 3.5}, df[] = {-1, -2, -3}, dw[3];
  CHECK_OK(RUN(Where, NULL, &T(dw, SH(F64, 3)), T(bc, SH(U8, 3)), T(dt, SH(F64, 3)), T(df, SH(F64, 3))));
  CHECK(dw[0] == 1.5 && dw[1] == -2 && dw[2] == 3.5);
}

/* ---- Fma, Clamp ---- */

static void test_fma_clamp(void) {
  /* (1 + 2^-12)^2 + 2^-80 = 1 + 2^-11 + 2^-24 + 2^-80: one rounding gives 1 + 2^-11 + 2^-23, while
   * rounding twice (to double, then to float) would land on the tie and give 1 + 2^-11. */
  float a[] = {1 + 0x1p-12f, 2.0f, 1 + 0x1p-12f}, b[] = {1 + 0x1p-12f, 3.0f, 1 + 0x1p-12f},
        c[] = {0x1p-80f, 1.0f, -1.0f};
  float y[3];
  CHECK_OK(RUN(Fma, NULL, &T(y, SH(F32, 3)), T(a, SH(F32, 3)), T(b, SH(F32, 3)), T(c, SH(F32, 3))));
  CHECK_MSG(y[0] == fmaf(a[0], b[0], c[0]) && y[0] == 1 + 0x1p-11f + 0x1p-23f, "fma got %.10g", (double)y[0]);
  CHECK(y[1] == 7.0f && y[2] == 0x1p-11f + 0x1p-24f);
  double da[] = {0.1}, db[] = {10}, dc[] = {-1}, dy[1];
  CHECK_OK(RUN(Fma, NULL, &T(dy, SCALAR(F64)), T(da, SCALAR(F64)), T(db, SCALAR(F64)), T(dc, SCALAR(F64))));
  CHECK(dy[0] == fma(0.1, 10, -1) && dy[0] != 0); /* 0.1*10 - 1 in two roundings is exactly 0 */
  int32_t ia[] = {3, INT32_MAX}, ib[] = {4, 2}, ic[] = {5}, iy[2];
  CHECK_OK(RUN(Fma, NULL, &T(iy, SH(I32, 2)), T(ia, SH(I32, 2)), T(ib, SH(I32, 2)), T(ic, SCALAR(I32))));
  CHECK(iy[0] == 17 && iy[1] == INT32_MAX);

  rlx_attrs_Clamp at = {.min = 0.0f, .max = 1.0f};
  float x[] = {-2, 0.5f, 3, NAN, -INFINITY}, cy[5];
  CHECK_OK(RUN(Clamp, &at, &T(cy, SH(F32, 5)), T(x, SH(F32, 5))));
  CHECK(cy[0] == 0 && cy[1] == 0.5f && cy[2] == 1 && isnan(cy[3]) && cy[4] == 0);
  at.min = 0.5f;
  at.max = 3.7f;
  int32_t xi[] = {-5, 0, 1, 5}, yi[4];
  CHECK_OK(RUN(Clamp, &at, &T(yi, SH(I32, 4)), T(xi, SH(I32, 4))));
  CHECK(yi[0] == 1 && yi[1] == 1 && yi[2] == 1 && yi[3] == 3);
  uint16_t hx[] = {rlx_f32_to_f16(-1.0f), rlx_f32_to_f16(10.0f)}, hy[2];
  at.min = -0.1f;
  at.max = 2.0f;
  CHECK_OK(RUN(Clamp, &at, &T(hy, SH(F16, 2)), T(hx, SH(F16, 2))));
  CHECK(hy[0] == rlx_f32_to_f16(-0.1f) && rlx_f16_to_f32(hy[1]) == 2.0f);
}

int main(void) {
  if (rlx_graph_create(NULL, "ref_elementwise", &G) != RLX_OK) return 1;
  test_activation_all_kinds();
  test_activation_edges();
  test_cast();
  test_binary_f32();
  test_binary_i32();
  test_broadcast_and_complex();
  test_compare_where();
  test_fma_clamp();
  rlx_graph_free(G);
  return rlx_test_finish("ref_elementwise");
}
