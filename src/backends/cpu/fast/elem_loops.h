/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The simple f32 elementwise loops of fast/elementwise.c, written once and compiled once per
 * instruction-set path: elementwise.c includes this file three times with EL_ATTR = nothing
 * (baseline x86-64, SSE2), target("avx2") and target("avx512f"), and EL_NAME(x) = x_<path>; the
 * compiler vectorises each loop for that path. No loop here contains a multiply followed by an
 * add (and the build is ISO C, so -ffp-contract=off): every path gives the same bits.
 *
 * Needs BIN_RUN, ref_max, ref_min, el_expf, el_sigmoidf, el_erff, el_geluf (elementwise.c) before
 * inclusion. */

/* c[i] = a[i*sa] op b[i*sb], sa and sb in {0, 1}: Add Sub Mul Div Max Min. */
EL_ATTR static void EL_NAME(bin)(rlx_binop op, const float *restrict a, size_t sa, const float *restrict b, size_t sb,
                                 float *restrict c, size_t len) {
  switch (op) {
  case RLX_BINOP_ADD: BIN_RUN(x + y); break;
  case RLX_BINOP_SUB: BIN_RUN(x - y); break;
  case RLX_BINOP_MUL: BIN_RUN(x * y); break;
  case RLX_BINOP_DIV: BIN_RUN(x / y); break;
  case RLX_BINOP_MAX: BIN_RUN(ref_max(x, y)); break;
  default: BIN_RUN(ref_min(x, y)); break;
  }
}

/* The activations made of arithmetic only (Exp, Sigmoid, Silu, GeluApprox, Erf and Gelu through el_expf);
 * false for the others. HardSwish and HardSigmoid are
 * computed in double like the reference (x * clamp(x + 3, 0, 6) / 6, clamp(x / 6 + 1/2, 0, 1);
 * NaN passes the clamps), then rounded once. */
EL_ATTR static bool EL_NAME(act)(rlx_act k, const float *restrict x, float *restrict y, size_t n) {
  switch (k) {
  case RLX_ACT_RELU:
    for (size_t i = 0; i < n; i++) y[i] = x[i] < 0 ? 0.0f : x[i]; /* NaN and -0 pass, like the reference */
    return true;
  case RLX_ACT_NEG:
    for (size_t i = 0; i < n; i++) y[i] = -x[i];
    return true;
  case RLX_ACT_ABS:
    for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
    return true;
  case RLX_ACT_SQRT:
    for (size_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
    return true;
  case RLX_ACT_RECIP:
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
    return true;
  case RLX_ACT_HARD_SWISH:
    for (size_t i = 0; i < n; i++) {
      double v = x[i], c = v + 3.0;
      c = c < 0.0 ? 0.0 : c;
      c = c > 6.0 ? 6.0 : c;
      y[i] = (float)(v * c / 6.0);
    }
    return true;
  case RLX_ACT_HARD_SIGMOID:
    for (size_t i = 0; i < n; i++) {
      double v = x[i] / 6.0 + 0.5;
      v = v < 0.0 ? 0.0 : v;
      v = v > 1.0 ? 1.0 : v;
      y[i] = (float)v;
    }
    return true;
  case RLX_ACT_EXP:
    for (size_t i = 0; i < n; i++) y[i] = el_expf(x[i]);
    return true;
  case RLX_ACT_SIGMOID:
    for (size_t i = 0; i < n; i++) y[i] = el_sigmoidf(x[i]);
    return true;
  case RLX_ACT_SILU:
    for (size_t i = 0; i < n; i++) y[i] = x[i] * el_sigmoidf(x[i]);
    return true;
  case RLX_ACT_ERF:
    for (size_t i = 0; i < n; i++) y[i] = el_erff(x[i]);
    return true;
  case RLX_ACT_GELU:
    for (size_t i = 0; i < n; i++) y[i] = el_geluf(x[i]);
    return true;
  case RLX_ACT_GELU_APPROX: /* 0.5 x (1 + tanh z) = x * sigmoid(2z), z = sqrt(2/pi) (x + 0.044715 x^3) */
    for (size_t i = 0; i < n; i++) {
      float v = x[i], z = 0.79788456080286535588f * (v + 0.044715f * v * v * v);
      y[i] = v * el_sigmoidf(2.0f * z);
    }
    return true;
  default: return false;
  }
}

/* y[i] = x[i] ^ e for the exponents with a short exact-or-nearly form; false for the others.
 * 2: x*x (one rounding: the reference's value); 3, 4: products in double, rounded to f32 (like
 * pow, rounded from double); 1/2: sqrt, with pow's special cases (pow(-0, 1/2) = +0, pow(-inf,
 * 1/2) = +inf); -1: 1/x; -1/2: 1/sqrt in double (pow(-0, -1/2) = +inf, pow(-inf, -1/2) = +0);
 * 1: x; 0: 1 (also for NaN, like pow). */
EL_ATTR static bool EL_NAME(powc)(float e, const float *restrict x, float *restrict y, size_t n) {
  if (e == 2.0f) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] * x[i];
  } else if (e == 3.0f) {
    for (size_t i = 0; i < n; i++) {
      double v = x[i];
      y[i] = (float)(v * v * v);
    }
  } else if (e == 4.0f) {
    for (size_t i = 0; i < n; i++) {
      double v = x[i], s = v * v;
      y[i] = (float)(s * s);
    }
  } else if (e == 0.5f) {
    for (size_t i = 0; i < n; i++) {
      float v = x[i], r = sqrtf(v) + 0.0f; /* + 0: sqrt(-0) = -0 becomes +0 */
      y[i] = v == -INFINITY ? INFINITY : r;
    }
  } else if (e == -0.5f) {
    for (size_t i = 0; i < n; i++) {
      double v = x[i], r = 1.0 / (sqrt(v) + 0.0);
      y[i] = v == -INFINITY ? 0.0f : (float)r;
    }
  } else if (e == -1.0f) {
    for (size_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
  } else if (e == 1.0f) {
    for (size_t i = 0; i < n; i++) y[i] = x[i];
  } else if (e == 0.0f) {
    for (size_t i = 0; i < n; i++) y[i] = 1.0f;
  } else {
    return false;
  }
  return true;
}
