/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: elementwise ops (spec ir-core §8.1-§8.3, §10.1).
 *
 * Arithmetic domains: floats are computed in double and rounded once to the output dtype
 * (correctly rounded for f16/bf16 too); integers and bool are computed exactly in int64 and
 * saturate to the output dtype; complex values use C99 complex arithmetic in double. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

/* Operand i has exactly as many elements as the output (same-shape unary ops). */
static rlx_status need_same_numel(const rlx_node *n, const rlx_tensor *in, uint32_t i, const rlx_tensor *out) {
  if (rlx_tensor_numel(&in[i]) != rlx_tensor_numel(out))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u %s and the output %s differ in element count", i,
                    ru_fmt(&in[i].shape), ru_fmt(&out->shape));
  return RLX_OK;
}

static bool is_truthy(const void *base, rlx_dtype t, size_t i) {
  if (ru_is_complex(t)) {
    double re, im;
    rlx_elem_get_c(base, t, i, &re, &im);
    return re != 0 || im != 0;
  }
  if (ru_is_intlike(t)) return rlx_elem_get_i64(base, t, i) != 0;
  return rlx_elem_get(base, t, i) != 0; /* NaN is non-zero */
}

/* Saturating int64 arithmetic: results that do not fit clamp to the int64 range. */
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static int64_t sat_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

/* ======================================================================================
 * Activation
 * ====================================================================================== */

/* Nearest integer, ties to even, independent of the floating-point environment. */
static double round_half_even(double x) {
  if (!isfinite(x)) return x;
  double f = floor(x), d = x - f;
  double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2.0) == 0 ? f : f + 1);
  return r == 0 ? copysign(0.0, x) : r;
}

/* Clamp that lets NaN through. */
static double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

static double sigmoid(double x) {
  if (x >= 0) return 1 / (1 + exp(-x));
  double e = exp(x);
  return e / (1 + e);
}

/* ln(1 + e^x) without overflow. */
static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static double act_real(rlx_act k, double x) {
  switch (k) {
  case RLX_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case RLX_ACT_GELU_APPROX: {
    const double c = sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1 + tanh(c * (x + 0.044715 * x * x * x)));
  }
  case RLX_ACT_SILU: return x * sigmoid(x);
  case RLX_ACT_RELU: return x < 0 ? 0 : x;
  case RLX_ACT_SIGMOID: return sigmoid(x);
  case RLX_ACT_TANH: return tanh(x);
  case RLX_ACT_EXP: return exp(x);
  case RLX_ACT_LOG: return log(x);
  case RLX_ACT_SQRT: return sqrt(x);
  case RLX_ACT_RSQRT: return 1 / sqrt(x);
  case RLX_ACT_NEG: return -x;
  case RLX_ACT_ABS: return fabs(x);
  case RLX_ACT_SIN: return sin(x);
  case RLX_ACT_COS: return cos(x);
  case RLX_ACT_TAN: return tan(x);
  case RLX_ACT_ATAN: return atan(x);
  case RLX_ACT_RECIP: return 1 / x;
  case RLX_ACT_ROUND: return round_half_even(x);
  case RLX_ACT_FLOOR: return floor(x);
  case RLX_ACT_CEIL: return ceil(x);
  case RLX_ACT_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x;
  case RLX_ACT_SOFTPLUS: return softplus(x);
  case RLX_ACT_ELU: return x > 0 ? x : expm1(x);
  case RLX_ACT_ERF: return erf(x);
  case RLX_ACT_HARD_SWISH: return x * clampd(x + 3, 0, 6) / 6;
  case RLX_ACT_HARD_SIGMOID: return clampd(x / 6 + 0.5, 0, 1);
  case RLX_ACT_MISH: return x * tanh(softplus(x));
  case RLX_ACT_SOFTSIGN: return x / (1 + fabs(x));
  case RLX_ACT_LOG_SIGMOID: return (x < 0 ? x : 0) - log1p(exp(-fabs(x)));
  default: return NAN;
  }
}

/* Kinds that map integers to integers exactly; false for the others (computed in double). */
static bool act_int(rlx_act k, int64_t x, int64_t *r) {
  switch (k) {
  case RLX_ACT_RELU: *r = x < 0 ? 0 : x; return true;
  case RLX_ACT_NEG: *r = sat_sub(0, x); return true;
  case RLX_ACT_ABS: *r = x < 0 ? sat_sub(0, x) : x; return true;
  case RLX_ACT_SIGN: *r = (x > 0) - (x < 0); return true;
  case RLX_ACT_ROUND:
  case RLX_ACT_FLOOR:
  case RLX_ACT_CEIL: *r = x; return true;
  default: return false;
  }
}

/* Complex kinds with an obvious meaning; false for the others. */
static bool act_complex(rlx_act k, double complex z, double complex *r) {
  switch (k) {
  case RLX_ACT_NEG: *r = -z; return true;
  case RLX_ACT_ABS: *r = cabs(z); return true;
  case RLX_ACT_EXP: *r = cexp(z); return true;
  case RLX_ACT_LOG: *r = clog(z); return true;
  case RLX_ACT_SQRT: *r = csqrt(z); return true;
  case RLX_ACT_RSQRT: *r = 1 / csqrt(z); return true;
  case RLX_ACT_RECIP: *r = 1 / z; return true;
  case RLX_ACT_SIN: *r = csin(z); return true;
  case RLX_ACT_COS: *r = ccos(z); return true;
  case RLX_ACT_TAN: *r = ctan(z); return true;
  case RLX_ACT_TANH: *r = ctanh(z); return true;
  case RLX_ACT_SIGMOID: *r = 1 / (1 + cexp(-z)); return true;
  default: return false;
  }
}

RLX_CPU_KERNEL(Activation) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_act k = (rlx_act)n->attrs.Activation.kind;
  if ((unsigned)k >= RLX_ACT_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kind %d is not an Activation", (int)k);
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  RLX_TRY(need_same_numel(n, in, 0, out));
  rlx_dtype t = ru_dt(out);
  size_t count = rlx_tensor_numel(out);
  if (t == RLX_BOOL) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 is bool; activations need a numeric dtype");
  if (ru_is_complex(t)) {
    double complex r;
    if (count > 0 && !act_complex(k, 0, &r))
      return ru_error(RLX_ERR_UNSUPPORTED, n, "activation %s is not defined for complex dtype %s",
                      rlx_enum_act.names[k], rlx_dtype_name(t));
    for (size_t i = 0; i < count; i++) {
      double re, im;
      rlx_elem_get_c(in[0].data, t, i, &re, &im);
      act_complex(k, ru_cplx(re, im), &r);
      rlx_elem_set_c(out->data, t, i, creal(r), cimag(r));
    }
    return RLX_OK;
  }
  for (size_t i = 0; i < count; i++) {
    int64_t r;
    if (ru_is_intlike(t) && act_int(k, rlx_elem_get_i64(in[0].data, t, i), &r))
      ru_store_i64(out->data, t, i, r);
    else
      ru_store(out->data, t, i, act_real(k, rlx_elem_get(in[0].data, t, i)));
  }
  return RLX_OK;
}

/* ======================================================================================
 * Cast and StopGradient
 * ====================================================================================== */

/* Two's-complement wrap of v into integer dtype t (Cast between integer dtypes is modular). */
static int64_t wrap_int(int64_t v, rlx_dtype t) {
  unsigned bits = (unsigned)rlx_dtype_size(t) * 8;
  if (bits >= 64) return v;
  uint64_t u = (uint64_t)v & ((UINT64_C(1) << bits) - 1);
  if (rlx_dtype_is_signed_int(t) && u >= (UINT64_C(1) << (bits - 1))) return -(int64_t)((UINT64_C(1) << bits) - u);
  return (int64_t)u;
}

RLX_CPU_KERNEL(Cast) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_same_numel(n, in, 0, out));
  rlx_dtype st = ru_dt(&in[0]), dt = ru_dt(out);
  size_t count = rlx_tensor_numel(out);
  if (st == dt) {
    if (count) memcpy(out->data, in[0].data, count * ru_esz(out));
    return RLX_OK;
  }
  const void *src = in[0].data;
  void *dst = out->data;
  for (size_t i = 0; i < count; i++) {
    if (ru_is_complex(st)) {
      double re, im;
      rlx_elem_get_c(src, st, i, &re, &im);
      if (ru_is_complex(dt))
        rlx_elem_set_c(dst, dt, i, re, im);
      else if (dt == RLX_BOOL)
        ((uint8_t *)dst)[i] = re != 0 || im != 0;
      else
        ru_store(dst, dt, i, re); /* complex -> real keeps the real part */
    } else if (ru_is_intlike(st)) {
      int64_t v = rlx_elem_get_i64(src, st, i);
      if (dt == RLX_BOOL)
        ((uint8_t *)dst)[i] = v != 0;
      else if (ru_is_intlike(dt))
        rlx_elem_set_i64(dst, dt, i, wrap_int(v, dt));
      else
        ru_store_i64(dst, dt, i, v);
    } else {
      /* float source: ->float rounds to nearest even, ->int truncates and saturates (NaN -> 0),
       * ->bool is x != 0, ->complex has imag 0. */
      ru_store(dst, dt, i, rlx_elem_get(src, st, i));
    }
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(StopGradient) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  RLX_TRY(need_same_numel(n, in, 0, out));
  size_t count = rlx_tensor_numel(out);
  if (count) memcpy(out->data, in[0].data, count * ru_esz(out));
  return RLX_OK;
}

/* ======================================================================================
 * Binary
 * ====================================================================================== */

static double float_max(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a; /* max(-0, +0) = +0 */
  return a > b ? a : b;
}
static double float_min(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b; /* min(-0, +0) = -0 */
  return a < b ? a : b;
}

static double binary_float(rlx_binop op, double a, double b) {
  switch (op) {
  case RLX_BINOP_ADD: return a + b;
  case RLX_BINOP_SUB: return a - b;
  case RLX_BINOP_MUL: return a * b;
  case RLX_BINOP_DIV: return a / b;
  case RLX_BINOP_MAX: return float_max(a, b);
  case RLX_BINOP_MIN: return float_min(a, b);
  case RLX_BINOP_POW: return pow(a, b);
  case RLX_BINOP_MOD: return fmod(a, b);
  case RLX_BINOP_ATAN2: return atan2(a, b);
  default: return NAN; /* bitwise ops are rejected before the loop */
  }
}

/* a^b on integers, saturating to the int64 range. b < 0 gives the truncated reciprocal: +-1 when
 * |a| = 1, else 0 (a = 0 is rejected by the caller). At most 63 multiplications when |a| >= 2. */
static int64_t int_pow(int64_t a, int64_t b) {
  if (a == 1) return 1;
  if (a == -1) return (b & 1) ? -1 : 1;
  if (b < 0) return 0;
  if (a == 0) return b == 0 ? 1 : 0;
  int64_t r = 1;
  for (int64_t i = 0; i < b; i++)
    if (__builtin_mul_overflow(r, a, &r)) return (a < 0 && (b & 1)) ? INT64_MIN : INT64_MAX;
  return r;
}

/* Shift within the bit width of dtype t. Amounts outside [0, width) give 0 for Shl and the sign
 * fill (0 or -1) for Shr; Shl drops the bits shifted out of the dtype (wrapping). */
static int64_t int_shift(bool left, int64_t a, int64_t b, rlx_dtype t) {
  int64_t width = (int64_t)rlx_dtype_size(t) * 8;
  if (b < 0 || b >= width) return left ? 0 : (a < 0 ? -1 : 0);
  if (left) return wrap_int((int64_t)((uint64_t)a << b), t);
  return a < 0 ? ~(~a >> b) : a >> b;
}

/* Integer op; false on division by zero (Div, Mod, and Pow of 0 to a negative power). */
static bool binary_int(rlx_binop op, int64_t a, int64_t b, rlx_dtype t, int64_t *r) {
  switch (op) {
  case RLX_BINOP_ADD: *r = sat_add(a, b); return true;
  case RLX_BINOP_SUB: *r = sat_sub(a, b); return true;
  case RLX_BINOP_MUL: *r = sat_mul(a, b); return true;
  case RLX_BINOP_DIV:
    if (b == 0) return false;
    *r = (a == INT64_MIN && b == -1) ? INT64_MAX : a / b; /* C division truncates toward zero */
    return true;
  case RLX_BINOP_MOD:
    if (b == 0) return false;
    *r = b == -1 ? 0 : a % b; /* sign of the dividend, like fmod */
    return true;
  case RLX_BINOP_MAX: *r = a > b ? a : b; return true;
  case RLX_BINOP_MIN: *r = a < b ? a : b; return true;
  case RLX_BINOP_POW:
    if (a == 0 && b < 0) return false;
    *r = int_pow(a, b);
    return true;
  case RLX_BINOP_BIT_AND: *r = a & b; return true;
  case RLX_BINOP_BIT_OR: *r = a | b; return true;
  case RLX_BINOP_BIT_XOR: *r = a ^ b; return true;
  case RLX_BINOP_SHL: *r = int_shift(true, a, b, t); return true;
  case RLX_BINOP_SHR: *r = int_shift(false, a, b, t); return true;
  case RLX_BINOP_ATAN2: *r = 0; return true; /* handled in double by the caller */
  default: *r = 0; return true;
  }
}

static bool is_bitwise(rlx_binop op) {
  return op == RLX_BINOP_BIT_AND || op == RLX_BINOP_BIT_OR || op == RLX_BINOP_BIT_XOR || op == RLX_BINOP_SHL ||
         op == RLX_BINOP_SHR;
}

RLX_CPU_KERNEL(Binary) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_binop op = (rlx_binop)n->attrs.Binary.op;
  if ((unsigned)op >= RLX_BINOP_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute op %d is not a BinaryOp", (int)op);
  rlx_dtype t = ru_dt(out);
  const char *opname = rlx_enum_binop.names[op];
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  RLX_TRY(ru_need_bcast(n, in, 0, &out->shape));
  RLX_TRY(ru_need_bcast(n, in, 1, &out->shape));
  size_t count = rlx_tensor_numel(out);
  const rlx_shape *sa = &in[0].shape, *sb = &in[1].shape, *so = &out->shape;

  if (ru_is_complex(t)) {
    if (op != RLX_BINOP_ADD && op != RLX_BINOP_SUB && op != RLX_BINOP_MUL && op != RLX_BINOP_DIV)
      return ru_error(RLX_ERR_UNSUPPORTED, n, "%s is not defined for complex dtype %s (only Add, Sub, Mul, Div)",
                      opname, rlx_dtype_name(t));
    for (size_t i = 0; i < count; i++) {
      double ar, ai, br, bi;
      rlx_elem_get_c(in[0].data, t, rlx_broadcast_offset(sa, so, i), &ar, &ai);
      rlx_elem_get_c(in[1].data, t, rlx_broadcast_offset(sb, so, i), &br, &bi);
      double complex a = ru_cplx(ar, ai), b = ru_cplx(br, bi);
      double complex r = op == RLX_BINOP_ADD   ? a + b
                         : op == RLX_BINOP_SUB ? a - b
                         : op == RLX_BINOP_MUL ? a * b
                                               : a / b;
      rlx_elem_set_c(out->data, t, i, creal(r), cimag(r));
    }
    return RLX_OK;
  }

  if (ru_is_intlike(t)) {
    if (t == RLX_BOOL && (op == RLX_BINOP_SHL || op == RLX_BINOP_SHR))
      return ru_error(RLX_ERR_INVALID_ARG, n, "%s needs integer operands; bool cannot be shifted", opname);
    for (size_t i = 0; i < count; i++) {
      size_t ia = rlx_broadcast_offset(sa, so, i), ib = rlx_broadcast_offset(sb, so, i);
      if (op == RLX_BINOP_ATAN2) {
        ru_store(out->data, t, i, atan2(rlx_elem_get(in[0].data, t, ia), rlx_elem_get(in[1].data, t, ib)));
        continue;
      }
      int64_t a = rlx_elem_get_i64(in[0].data, t, ia), b = rlx_elem_get_i64(in[1].data, t, ib), r;
      if (!binary_int(op, a, b, t, &r)) {
        if (op == RLX_BINOP_POW)
          return rlx_kernel_error(n, "integer Pow: 0 raised to the negative power %lld (output element %zu)",
                                  (long long)b, i);
        return rlx_kernel_error(n, "integer %s by zero: %lld %s 0 at output element %zu", opname, (long long)a,
                                op == RLX_BINOP_DIV ? "/" : "%", i);
      }
      ru_store_i64(out->data, t, i, r);
    }
    return RLX_OK;
  }

  if (is_bitwise(op))
    return ru_error(RLX_ERR_INVALID_ARG, n, "%s needs integer (or bool) operands, got %s", opname, rlx_dtype_name(t));
  for (size_t i = 0; i < count; i++) {
    double a = rlx_elem_get(in[0].data, t, rlx_broadcast_offset(sa, so, i));
    double b = rlx_elem_get(in[1].data, t, rlx_broadcast_offset(sb, so, i));
    ru_store(out->data, t, i, binary_float(op, a, b));
  }
  return RLX_OK;
}

/* ======================================================================================
 * Compare, Where
 * ====================================================================================== */

static bool cmp_result(rlx_cmp op, int order, bool unordered) {
  if (unordered) return op == RLX_CMP_NE; /* NaN compares false except Ne */
  switch (op) {
  case RLX_CMP_EQ: return order == 0;
  case RLX_CMP_NE: return order != 0;
  case RLX_CMP_LT: return order < 0;
  case RLX_CMP_LE: return order <= 0;
  case RLX_CMP_GT: return order > 0;
  case RLX_CMP_GE: return order >= 0;
  default: return false;
  }
}

RLX_CPU_KERNEL(Compare) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_cmp op = (rlx_cmp)n->attrs.Compare.op;
  if ((unsigned)op >= RLX_CMP_COUNT) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute op %d is not a CmpOp", (int)op);
  rlx_dtype t = ru_dt(&in[0]);
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  RLX_TRY(ru_need_bcast(n, in, 0, &out->shape));
  RLX_TRY(ru_need_bcast(n, in, 1, &out->shape));
  if (ru_is_complex(t) && op != RLX_CMP_EQ && op != RLX_CMP_NE)
    return ru_error(RLX_ERR_UNSUPPORTED, n, "%s is not defined for complex dtype %s (only Eq and Ne)",
                    rlx_enum_cmp.names[op], rlx_dtype_name(t));
  size_t count = rlx_tensor_numel(out);
  const rlx_shape *sa = &in[0].shape, *sb = &in[1].shape, *so = &out->shape;
  for (size_t i = 0; i < count; i++) {
    size_t ia = rlx_broadcast_offset(sa, so, i), ib = rlx_broadcast_offset(sb, so, i);
    int order = 0;
    bool unordered = false;
    if (ru_is_intlike(t)) {
      int64_t a = rlx_elem_get_i64(in[0].data, t, ia), b = rlx_elem_get_i64(in[1].data, t, ib);
      order = (a > b) - (a < b);
    } else if (ru_is_complex(t)) {
      double ar, ai, br, bi;
      rlx_elem_get_c(in[0].data, t, ia, &ar, &ai);
      rlx_elem_get_c(in[1].data, t, ib, &br, &bi);
      unordered = isnan(ar) || isnan(ai) || isnan(br) || isnan(bi);
      order = (ar == br && ai == bi) ? 0 : 1;
    } else {
      double a = rlx_elem_get(in[0].data, t, ia), b = rlx_elem_get(in[1].data, t, ib);
      unordered = isnan(a) || isnan(b);
      order = (a > b) - (a < b);
    }
    ru_store_i64(out->data, ru_dt(out), i, cmp_result(op, order, unordered));
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Where) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(ru_need_dtype(n, in, 1, ru_dt(out)));
  RLX_TRY(ru_need_dtype(n, in, 2, ru_dt(out)));
  for (uint32_t k = 0; k < 3; k++) RLX_TRY(ru_need_bcast(n, in, k, &out->shape));
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  const rlx_shape *so = &out->shape;
  for (size_t i = 0; i < count; i++) {
    bool c = is_truthy(in[0].data, ru_dt(&in[0]), rlx_broadcast_offset(&in[0].shape, so, i));
    const rlx_tensor *pick = c ? &in[1] : &in[2];
    ru_copy_elem(out->data, i, pick->data, rlx_broadcast_offset(&pick->shape, so, i), esz);
  }
  return RLX_OK;
}

/* ======================================================================================
 * Fma, Clamp
 * ====================================================================================== */

/* a*b + c rounded once. For f32/f16/bf16 the product is exact in double; the sum is formed
 * exactly as hi + lo (two-sum) and rounded to odd, so the final rounding is the only one. */
static double fma_narrow(double a, double b, double c) {
  double p = a * b, s = p + c;
  if (!isfinite(s)) return s;
  double bp = s - p, lo = (p - (s - bp)) + (c - bp);
  return ru_round_odd_sum(s, lo);
}

RLX_CPU_KERNEL(Fma) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  rlx_dtype t = ru_dt(out);
  for (uint32_t k = 0; k < 3; k++) {
    RLX_TRY(ru_need_dtype(n, in, k, t));
    RLX_TRY(ru_need_bcast(n, in, k, &out->shape));
  }
  size_t count = rlx_tensor_numel(out);
  const rlx_shape *so = &out->shape;
  for (size_t i = 0; i < count; i++) {
    size_t ia = rlx_broadcast_offset(&in[0].shape, so, i), ib = rlx_broadcast_offset(&in[1].shape, so, i),
           ic = rlx_broadcast_offset(&in[2].shape, so, i);
    if (ru_is_complex(t)) {
      double ar, ai, br, bi, cr, ci;
      rlx_elem_get_c(in[0].data, t, ia, &ar, &ai);
      rlx_elem_get_c(in[1].data, t, ib, &br, &bi);
      rlx_elem_get_c(in[2].data, t, ic, &cr, &ci);
      double complex r = ru_cplx(ar, ai) * ru_cplx(br, bi) + ru_cplx(cr, ci);
      rlx_elem_set_c(out->data, t, i, creal(r), cimag(r));
    } else if (ru_is_intlike(t)) {
      int64_t a = rlx_elem_get_i64(in[0].data, t, ia), b = rlx_elem_get_i64(in[1].data, t, ib),
              c = rlx_elem_get_i64(in[2].data, t, ic);
      ru_store_i64(out->data, t, i, sat_add(sat_mul(a, b), c));
    } else {
      double a = rlx_elem_get(in[0].data, t, ia), b = rlx_elem_get(in[1].data, t, ib),
             c = rlx_elem_get(in[2].data, t, ic);
      ru_store(out->data, t, i, t == RLX_F64 ? fma(a, b, c) : fma_narrow(a, b, c));
    }
  }
  return RLX_OK;
}

/* Converts a bound to int64, saturating (the bound is already integral or infinite). */
static int64_t bound_i64(double v) {
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

RLX_CPU_KERNEL(Clamp) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(need_same_numel(n, in, 0, out));
  double lo = n->attrs.Clamp.min, hi = n->attrs.Clamp.max;
  if (isnan(lo) || isnan(hi)) return ru_error(RLX_ERR_INVALID_ARG, n, "attributes min and max must not be NaN");
  if (ru_is_complex(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "Clamp is not defined for complex dtype %s", rlx_dtype_name(t));
  size_t count = rlx_tensor_numel(out);
  if (ru_is_intlike(t)) {
    /* Integers: the integral bounds inside [min, max]. */
    int64_t ilo = bound_i64(ceil(lo)), ihi = bound_i64(floor(hi));
    for (size_t i = 0; i < count; i++) {
      int64_t x = rlx_elem_get_i64(in[0].data, t, i);
      x = x < ilo ? ilo : x;
      x = x > ihi ? ihi : x;
      ru_store_i64(out->data, t, i, x);
    }
    return RLX_OK;
  }
  for (size_t i = 0; i < count; i++) {
    double x = rlx_elem_get(in[0].data, t, i);
    x = x < lo ? lo : x; /* NaN passes through */
    x = x > hi ? hi : x;
    ru_store(out->data, t, i, x);
  }
  return RLX_OK;
}
