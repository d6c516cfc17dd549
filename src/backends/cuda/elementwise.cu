/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The generic elementwise kernel: Activation, Cast, StopGradient, Binary, Compare, Where, Fma and
 * Clamp on every dtype, with NumPy broadcasting through per-operand strides. The arithmetic
 * mirrors the CPU reference (src/backends/cpu/ref/elementwise.c): floats in double rounded once
 * to the output dtype, integers exact in int64 saturating to the dtype, complex in double. */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/act_f32.cuh"
#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

struct cplx {
  double re, im;
};
__device__ inline cplx cmul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
__device__ inline cplx cdiv(cplx a, cplx b) {
  /* Smith's algorithm */
  if (fabs(b.re) >= fabs(b.im)) {
    double r = b.im / b.re, d = b.re + b.im * r;
    return {(a.re + a.im * r) / d, (a.im - a.re * r) / d};
  }
  double r = b.re / b.im, d = b.re * r + b.im;
  return {(a.re * r + a.im) / d, (a.im * r - a.re) / d};
}
__device__ inline cplx cexp_(cplx z) {
  double e = exp(z.re);
  return {e * cos(z.im), e * sin(z.im)};
}
__device__ inline cplx clog_(cplx z) { return {log(hypot(z.re, z.im)), atan2(z.im, z.re)}; }
__device__ inline cplx csqrt_(cplx z) {
  double m = hypot(z.re, z.im);
  double re = sqrt((m + z.re) / 2), im = sqrt((m - z.re) / 2);
  return {re, copysign(im, z.im)};
}
__device__ inline cplx ctanh_(cplx z) {
  cplx e2 = cexp_({2 * z.re, 2 * z.im});
  return cdiv({e2.re - 1, e2.im}, {e2.re + 1, e2.im});
}

__device__ inline int dt_bytes(int t) {
  switch (t) {
  case RLX_I8:
  case RLX_U8:
  case RLX_BOOL: return 1;
  case RLX_I16:
  case RLX_F16:
  case RLX_BF16: return 2;
  case RLX_I32:
  case RLX_U32:
  case RLX_F32: return 4;
  case RLX_C128: return 16;
  default: return 8;
  }
}

__device__ inline int64_t wrap_int(int64_t v, int t) {
  unsigned bits = (unsigned)dt_bytes(t) * 8;
  if (bits >= 64) return v;
  uint64_t u = (uint64_t)v & ((1ull << bits) - 1);
  bool is_signed = t == RLX_I8 || t == RLX_I16 || t == RLX_I32;
  if (is_signed && u >= (1ull << (bits - 1))) return -(int64_t)((1ull << bits) - u);
  return (int64_t)u;
}

/* ---- activation ---- */
__device__ inline double sigmoid_(double x) {
  if (x >= 0) return 1 / (1 + exp(-x));
  double e = exp(x);
  return e / (1 + e);
}
__device__ inline double softplus_(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
__device__ inline double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
__device__ inline double round_half_even(double x) {
  if (isinf(x) || x != x) return x;
  double f = floor(x), d = x - f;
  double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2.0) == 0 ? f : f + 1);
  return r == 0 ? copysign(0.0, x) : r;
}

__device__ double act_real(int k, double x) {
  switch (k) {
  case RLX_ACT_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case RLX_ACT_GELU_APPROX: {
    const double c = sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1 + tanh(c * (x + 0.044715 * x * x * x)));
  }
  case RLX_ACT_SILU: return x * sigmoid_(x);
  case RLX_ACT_RELU: return x < 0 ? 0 : x;
  case RLX_ACT_SIGMOID: return sigmoid_(x);
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
  case RLX_ACT_SOFTPLUS: return softplus_(x);
  case RLX_ACT_ELU: return x > 0 ? x : expm1(x);
  case RLX_ACT_ERF: return erf(x);
  case RLX_ACT_HARD_SWISH: return x * clampd(x + 3, 0, 6) / 6;
  case RLX_ACT_HARD_SIGMOID: return clampd(x / 6 + 0.5, 0, 1);
  case RLX_ACT_MISH: return x * tanh(softplus_(x));
  case RLX_ACT_SOFTSIGN: return x / (1 + fabs(x));
  case RLX_ACT_LOG_SIGMOID: return (x < 0 ? x : 0) - log1p(exp(-fabs(x)));
  default: return nan("");
  }
}

__device__ inline bool act_int(int k, int64_t x, int64_t *r) {
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

__device__ cplx act_complex(int k, cplx z) {
  switch (k) {
  case RLX_ACT_NEG: return {-z.re, -z.im};
  case RLX_ACT_ABS: return {hypot(z.re, z.im), 0};
  case RLX_ACT_EXP: return cexp_(z);
  case RLX_ACT_LOG: return clog_(z);
  case RLX_ACT_SQRT: return csqrt_(z);
  case RLX_ACT_RSQRT: return cdiv({1, 0}, csqrt_(z));
  case RLX_ACT_RECIP: return cdiv({1, 0}, z);
  case RLX_ACT_SIN: return {sin(z.re) * cosh(z.im), cos(z.re) * sinh(z.im)};
  case RLX_ACT_COS: return {cos(z.re) * cosh(z.im), -sin(z.re) * sinh(z.im)};
  case RLX_ACT_TAN: { /* tan z = -i tanh(i z) */ cplx t = ctanh_({-z.im, z.re}); return {t.im, -t.re};
  }
  case RLX_ACT_TANH: return ctanh_(z);
  case RLX_ACT_SIGMOID: {
    cplx e = cexp_({-z.re, -z.im});
    return cdiv({1, 0}, {1 + e.re, e.im});
  }
  default: return {nan(""), nan("")};
  }
}

/* ---- binary ---- */
__device__ inline double float_max(double a, double b) {
  if (a != a || b != b) return nan("");
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
__device__ inline double float_min(double a, double b) {
  if (a != a || b != b) return nan("");
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
__device__ double binary_float(int op, double a, double b) {
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
  default: return nan("");
  }
}
__device__ inline int64_t int_pow(int64_t a, int64_t b) {
  if (a == 1) return 1;
  if (a == -1) return (b & 1) ? -1 : 1;
  if (b < 0) return 0;
  if (a == 0) return b == 0 ? 1 : 0;
  int64_t r = 1;
  for (int64_t i = 0; i < b; i++)
    if (!mul_ok(r, a, &r)) return (a < 0 && (b & 1)) ? INT64_MIN : INT64_MAX;
  return r;
}
__device__ inline int64_t int_shift(bool left, int64_t a, int64_t b, int t) {
  int64_t width = (int64_t)dt_bytes(t) * 8;
  if (b < 0 || b >= width) return left ? 0 : (a < 0 ? -1 : 0);
  if (left) return wrap_int((int64_t)((uint64_t)a << b), t);
  return a < 0 ? ~(~a >> b) : a >> b;
}
__device__ int64_t binary_int(int op, int64_t a, int64_t b, int t, int *kerr) {
  switch (op) {
  case RLX_BINOP_ADD: return sat_add(a, b);
  case RLX_BINOP_SUB: return sat_sub(a, b);
  case RLX_BINOP_MUL: return sat_mul(a, b);
  case RLX_BINOP_DIV:
    if (b == 0) {
      cu_raise(kerr, RLX_CU_KERR_DIV_ZERO);
      return 0;
    }
    return (a == INT64_MIN && b == -1) ? INT64_MAX : a / b;
  case RLX_BINOP_MOD:
    if (b == 0) {
      cu_raise(kerr, RLX_CU_KERR_DIV_ZERO);
      return 0;
    }
    return b == -1 ? 0 : a % b;
  case RLX_BINOP_MAX: return a > b ? a : b;
  case RLX_BINOP_MIN: return a < b ? a : b;
  case RLX_BINOP_POW:
    if (a == 0 && b < 0) {
      cu_raise(kerr, RLX_CU_KERR_POW_ZERO_NEG);
      return 0;
    }
    return int_pow(a, b);
  case RLX_BINOP_BIT_AND: return a & b;
  case RLX_BINOP_BIT_OR: return a | b;
  case RLX_BINOP_BIT_XOR: return a ^ b;
  case RLX_BINOP_SHL: return int_shift(true, a, b, t);
  case RLX_BINOP_SHR: return int_shift(false, a, b, t);
  default: return 0;
  }
}

__device__ inline bool cmp_result(int op, int order, bool unordered) {
  if (unordered) return op == RLX_CMP_NE;
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

__device__ inline bool truthy(const void *p, int t, int64_t i) {
  if (dt_is_complex(t)) {
    double re, im;
    ld_c(p, t, i, &re, &im);
    return re != 0 || im != 0;
  }
  if (dt_is_int(t)) return ld_i(p, t, i) != 0;
  return ld_f(p, t, i) != 0;
}

__device__ inline double round_odd_sum(double hi, double lo) {
  if (lo == 0 || isinf(hi) || hi != hi) return hi;
  unsigned long long bits = (unsigned long long)__double_as_longlong(hi);
  if (bits & 1ull) return hi;
  /* one ulp toward the side of lo (hi is finite and nonzero-or-zero; lo != 0) */
  long long b = __double_as_longlong(hi);
  bool away = (lo > 0) == (hi > 0 || (hi == 0 && lo > 0));
  if (hi == 0) return lo > 0 ? 4.9406564584124654e-324 : -4.9406564584124654e-324;
  return __longlong_as_double(away ? b + 1 : b - 1);
}
__device__ inline double fma_narrow(double a, double b, double c) {
  double p = a * b, s = p + c;
  if (isinf(s) || s != s) return s;
  double bp = s - p, lo = (p - (s - bp)) + (c - bp);
  return round_odd_sum(s, lo);
}
__device__ inline int64_t bound_i64(double v) {
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

__device__ inline void copy_elem(void *dst, int64_t di, const void *src, int64_t si, int esz) {
  switch (esz) {
  case 1: ((uint8_t *)dst)[di] = ((const uint8_t *)src)[si]; break;
  case 2: ((uint16_t *)dst)[di] = ((const uint16_t *)src)[si]; break;
  case 4: ((uint32_t *)dst)[di] = ((const uint32_t *)src)[si]; break;
  case 8: ((uint64_t *)dst)[di] = ((const uint64_t *)src)[si]; break;
  default: ((ulonglong2 *)dst)[di] = ((const ulonglong2 *)src)[si]; break;
  }
}

/* I: the index type of the coordinate arithmetic (32-bit division when the tensor allows it) */
template <typename I> __global__ void ew_kernel(rlx_cu_ew p, int *kerr) {
  const int t = p.out_dtype;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[RLX_CU_MAX_IN] = {0, 0, 0};
    I rem = (I)i;
    for (int d = p.rank - 1; d >= 0; d--) {
      I c = rem % (I)p.dims[d];
      rem /= (I)p.dims[d];
      for (int k = 0; k < p.n_in; k++) off[k] += (int64_t)c * p.stride[k][d];
    }
    const int t0 = p.in_dtype[0];
    switch (p.kind) {
    case RLX_CU_EW_ACT:
      if (dt_is_complex(t)) {
        cplx z;
        ld_c(p.in[0], t0, off[0], &z.re, &z.im);
        cplx r = act_complex(p.sub, z);
        st_c(p.out, t, i, r.re, r.im);
      } else {
        int64_t r;
        if (dt_is_int(t) && act_int(p.sub, ld_i(p.in[0], t0, off[0]), &r))
          st_i(p.out, t, i, r);
        else
          st_f(p.out, t, i, act_real(p.sub, ld_f(p.in[0], t0, off[0])));
      }
      break;
    case RLX_CU_EW_CAST:
      if (dt_is_complex(t0)) {
        double re, im;
        ld_c(p.in[0], t0, off[0], &re, &im);
        if (dt_is_complex(t))
          st_c(p.out, t, i, re, im);
        else if (t == RLX_BOOL)
          ((uint8_t *)p.out)[i] = re != 0 || im != 0;
        else
          st_f(p.out, t, i, re);
      } else if (dt_is_int(t0)) {
        int64_t v = ld_i(p.in[0], t0, off[0]);
        if (t == RLX_BOOL)
          ((uint8_t *)p.out)[i] = v != 0;
        else if (dt_is_int(t))
          st_i(p.out, t, i, wrap_int(v, t));
        else
          st_i(p.out, t, i, v);
      } else {
        st_f(p.out, t, i, ld_f(p.in[0], t0, off[0]));
      }
      break;
    case RLX_CU_EW_COPY: copy_elem(p.out, i, p.in[0], off[0], dt_bytes(t)); break;
    case RLX_CU_EW_BINARY:
      if (dt_is_complex(t)) {
        cplx a, b, r;
        ld_c(p.in[0], t, off[0], &a.re, &a.im);
        ld_c(p.in[1], t, off[1], &b.re, &b.im);
        switch (p.sub) {
        case RLX_BINOP_ADD: r = {a.re + b.re, a.im + b.im}; break;
        case RLX_BINOP_SUB: r = {a.re - b.re, a.im - b.im}; break;
        case RLX_BINOP_MUL: r = cmul(a, b); break;
        default: r = cdiv(a, b); break;
        }
        st_c(p.out, t, i, r.re, r.im);
      } else if (dt_is_int(t)) {
        if (p.sub == RLX_BINOP_ATAN2)
          st_f(p.out, t, i, atan2(ld_f(p.in[0], t, off[0]), ld_f(p.in[1], t, off[1])));
        else
          st_i(p.out, t, i, binary_int(p.sub, ld_i(p.in[0], t, off[0]), ld_i(p.in[1], t, off[1]), t, kerr));
      } else {
        st_f(p.out, t, i, binary_float(p.sub, ld_f(p.in[0], t, off[0]), ld_f(p.in[1], t, off[1])));
      }
      break;
    case RLX_CU_EW_COMPARE: {
      int order = 0;
      bool unordered = false;
      if (dt_is_int(t0)) {
        int64_t a = ld_i(p.in[0], t0, off[0]), b = ld_i(p.in[1], t0, off[1]);
        order = (a > b) - (a < b);
      } else if (dt_is_complex(t0)) {
        double ar, ai, br, bi;
        ld_c(p.in[0], t0, off[0], &ar, &ai);
        ld_c(p.in[1], t0, off[1], &br, &bi);
        unordered = ar != ar || ai != ai || br != br || bi != bi;
        order = (ar == br && ai == bi) ? 0 : 1;
      } else {
        double a = ld_f(p.in[0], t0, off[0]), b = ld_f(p.in[1], t0, off[1]);
        unordered = a != a || b != b;
        order = (a > b) - (a < b);
      }
      st_i(p.out, t, i, cmp_result(p.sub, order, unordered));
      break;
    }
    case RLX_CU_EW_WHERE: {
      bool c = truthy(p.in[0], t0, off[0]);
      copy_elem(p.out, i, c ? p.in[1] : p.in[2], c ? off[1] : off[2], dt_bytes(t));
      break;
    }
    case RLX_CU_EW_FMA:
      if (dt_is_complex(t)) {
        cplx a, b, c;
        ld_c(p.in[0], t, off[0], &a.re, &a.im);
        ld_c(p.in[1], t, off[1], &b.re, &b.im);
        ld_c(p.in[2], t, off[2], &c.re, &c.im);
        cplx r = cmul(a, b);
        st_c(p.out, t, i, r.re + c.re, r.im + c.im);
      } else if (dt_is_int(t)) {
        st_i(p.out, t, i,
             sat_add(sat_mul(ld_i(p.in[0], t, off[0]), ld_i(p.in[1], t, off[1])), ld_i(p.in[2], t, off[2])));
      } else {
        double a = ld_f(p.in[0], t, off[0]), b = ld_f(p.in[1], t, off[1]), c = ld_f(p.in[2], t, off[2]);
        st_f(p.out, t, i, t == RLX_F64 ? fma(a, b, c) : fma_narrow(a, b, c));
      }
      break;
    case RLX_CU_EW_CLAMP:
      if (dt_is_int(t)) {
        int64_t ilo = bound_i64(ceil(p.lo)), ihi = bound_i64(floor(p.hi));
        int64_t x = ld_i(p.in[0], t, off[0]);
        x = x < ilo ? ilo : x;
        x = x > ihi ? ihi : x;
        st_i(p.out, t, i, x);
      } else {
        double x = ld_f(p.in[0], t, off[0]);
        x = x < p.lo ? p.lo : x;
        x = x > p.hi ? p.hi : x;
        st_f(p.out, t, i, x);
      }
      break;
    default: break;
    }
  }
}

/* f32 fast paths for same-shape (all strides dense) unary and binary ops on float32. */
__global__ void ew_f32_binary_dense(const float *a, const float *b, float *o, int64_t n, int op) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float x = a[i], y = b[i];
    switch (op) {
    case RLX_BINOP_ADD: o[i] = x + y; break;
    case RLX_BINOP_SUB: o[i] = x - y; break;
    case RLX_BINOP_MUL: o[i] = x * y; break;
    default: o[i] = (float)binary_float(op, x, y); break;
    }
  }
}

/* The same for Add / Sub / Mul, 4 elements per thread (n a multiple of 4, the pointers 16-byte
 * aligned): one 16-byte access per operand (the scalar kernel moved 2.7 TB/s on the H200's
 * residual Adds of [8192, 768]). */
__global__ void ew_f32_binary_dense4(const float4 *a, const float4 *b, float4 *o, int64_t n4, int op) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
    const float4 x = a[i], y = b[i];
    if (op == RLX_BINOP_ADD)
      o[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    else if (op == RLX_BINOP_SUB)
      o[i] = make_float4(x.x - y.x, x.y - y.y, x.z - y.z, x.w - y.w);
    else
      o[i] = make_float4(x.x * y.x, x.y * y.y, x.z * y.z, x.w * y.w);
  }
}

/* Binary with tiled operands: operand k repeats every cnt_k elements (cnt = n: dense), e.g. a
 * bias row [C] broadcast over [R, C]. Add / Sub / Mul in float are the double results rounded
 * once. vec: 4 elements per thread (n and both counts multiples of 4, 16-byte aligned). */
template <bool VEC>
__global__ void ew_f32_binary_tiled(const float *a, const float *b, float *o, int64_t n, int64_t ca, int64_t cb,
                                    int op) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  if (VEC) {
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < n / 4; g += step) {
      int64_t e = 4 * g;
      float4 x = *(const float4 *)(a + e % ca), y = *(const float4 *)(b + e % cb), r;
      if (op == RLX_BINOP_ADD)
        r = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
      else if (op == RLX_BINOP_SUB)
        r = make_float4(x.x - y.x, x.y - y.y, x.z - y.z, x.w - y.w);
      else
        r = make_float4(x.x * y.x, x.y * y.y, x.z * y.z, x.w * y.w);
      __stcs((float4 *)(o + e), r);
    }
  } else {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += step) {
      float x = a[i % ca], y = b[i % cb];
      o[i] = op == RLX_BINOP_ADD ? x + y : op == RLX_BINOP_SUB ? x - y : x * y;
    }
  }
}

/* Dense f32 activations: the double formula of the general kernel, without its indexing (under
 * RLX_CUDA_FP32_PEDANTIC; by default f32 takes typed_act_launch below, as bf16 / f16 do). */
__global__ void ew_f32_act_dense(const float *a, float *o, int64_t n, int sub) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    o[i] = (float)act_real(sub, (double)a[i]);
}

/* The same two for f16 / bf16: double arithmetic rounded once to the dtype (the general kernel's
 * formula and rounding), typed at compile time, 4 elements per thread (one 8-byte load per
 * operand when dense and aligned), the tiled operands' index computed once per 4 elements in
 * 32-bit arithmetic when n < 2^32. */
template <typename T> __device__ inline void lp_unpack(const vec4_of<T> &u, T (&x)[4]) { memcpy(x, &u, sizeof u); }
template <typename T> __device__ inline vec4_of<T> lp_pack(const T (&x)[4]) {
  vec4_of<T> u;
  memcpy(&u, x, sizeof u);
  return u;
}
__device__ inline int64_t lp_mod(int64_t e, int64_t c, bool small) {
  return small ? (int64_t)((uint32_t)e % (uint32_t)c) : e % c;
}

/* VEC: n, ca, cb multiples of 8 and every pointer 16-byte aligned: 8 elements per thread, one
 * 16-byte access per operand, the sum / difference / product in float (of two values of one
 * 16-bit dtype it is exact or rounds to the same 16-bit value as the double formula); else 4
 * elements per thread in double. 8 elements with 16-byte accesses moved the block's bias adds at
 * twice the rate of the 4-element, 8-byte version on the H200. */
template <typename T> __device__ inline T lp_bin_f(int op, T a, T b) {
  float u = to_f(a), v = to_f(b);
  return from_f<T>(op == RLX_BINOP_ADD ? u + v : op == RLX_BINOP_SUB ? u - v : u * v);
}
template <typename T, bool VEC>
__global__ void ew_lowp_binary_tiled(const T *a, const T *b, T *o, int64_t n, int64_t ca, int64_t cb, int op) {
  const bool small = n < ((int64_t)1 << 32);
  const int W = VEC ? 8 : 4;
  const int64_t groups = (n + W - 1) / W, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += step) {
    int64_t e = W * g;
    if (VEC) {
      T x[8], y[8], r[8];
      uint4 u = __ldcs((const uint4 *)(a + (ca == n ? e : lp_mod(e, ca, small))));
      uint4 w = __ldcs((const uint4 *)(b + (cb == n ? e : lp_mod(e, cb, small))));
      memcpy(x, &u, 16);
      memcpy(y, &w, 16);
#pragma unroll
      for (int c = 0; c < 8; c++) r[c] = lp_bin_f<T>(op, x[c], y[c]);
      memcpy(&u, r, 16);
      __stcs((uint4 *)(o + e), u);
    } else {
      int64_t ia = ca == n ? e : lp_mod(e, ca, small), ib = cb == n ? e : lp_mod(e, cb, small);
      for (int c = 0; c < 4 && e + c < n; c++) {
        double u = ld_t(a[ia]), v = ld_t(b[ib]);
        o[e + c] = st_t<T>(op == RLX_BINOP_ADD ? u + v : op == RLX_BINOP_SUB ? u - v : u * v);
        if (++ia == ca) ia = 0;
        if (++ib == cb) ib = 0;
      }
    }
  }
}
/* Dense activations of bf16 / f16, and of f32 unless RLX_CUDA_FP32_PEDANTIC: act_f32.cuh's float
 * form where it has one (GELU, tanh-GELU, SiLU; for f32 the double erf was FP64-bound, 123 us for
 * the GPT-2 block's 25M elements on the H200), else the double formula; one 8-byte (16-bit) or
 * 16-byte (f32) access per 4 elements when aligned. */
__device__ __noinline__ double typed_act_slow(int sub, double x) { return act_real(sub, x); }
/* the double formula out of line: inlined four times per thread it made the f32 kernel 14k PTX
 * lines for a few float instructions on the hot path */
template <typename T> __device__ inline T typed_act(int sub, T x) {
  float y;
  if (act_f32_forward(sub, (float)ld_t(x), &y)) return st_t<T>((double)y);
  return st_t<T>(typed_act_slow(sub, ld_t(x)));
}
template <typename T, bool VEC> __global__ void ew_typed_act_dense(const T *a, T *o, int64_t n, int sub) {
  const int64_t groups = (n + 3) / 4, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += step) {
    int64_t e = 4 * g;
    if (VEC) {
      T x[4], r[4];
      const vec4_of<T> u = *(const vec4_of<T> *)(a + e); /* one vector load (a reference into global
                                                            memory made memcpy copy byte by byte) */
      lp_unpack<T>(u, x);
#pragma unroll
      for (int c = 0; c < 4; c++) r[c] = typed_act<T>(sub, x[c]);
      *(vec4_of<T> *)(o + e) = lp_pack(r);
    } else {
      for (int c = 0; c < 4 && e + c < n; c++) o[e + c] = typed_act<T>(sub, a[e + c]);
    }
  }
}
template <typename T>
static void lowp_binary_launch(const rlx_cu_ew *p, int64_t ca, int64_t cb, unsigned blocks, cudaStream_t s) {
  const T *a = (const T *)p->in[0], *b = (const T *)p->in[1];
  T *o = (T *)p->out;
  bool vec = p->n % 8 == 0 && ca % 8 == 0 && cb % 8 == 0 && ((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0 &&
             ((uintptr_t)o & 15) == 0;
  if (vec)
    ew_lowp_binary_tiled<T, true><<<cu_blocks(p->n / 8, 256), 256, 0, s>>>(a, b, o, p->n, ca, cb, p->sub);
  else
    ew_lowp_binary_tiled<T, false><<<blocks, 256, 0, s>>>(a, b, o, p->n, ca, cb, p->sub);
}
template <typename T> static void typed_act_launch(const rlx_cu_ew *p, unsigned blocks, cudaStream_t s) {
  const T *a = (const T *)p->in[0];
  T *o = (T *)p->out;
  const uintptr_t al = sizeof(vec4_of<T>) - 1;
  bool vec = p->n % 4 == 0 && ((uintptr_t)a & al) == 0 && ((uintptr_t)o & al) == 0;
  if (vec)
    ew_typed_act_dense<T, true><<<blocks, 256, 0, s>>>(a, o, p->n, p->sub);
  else
    ew_typed_act_dense<T, false><<<blocks, 256, 0, s>>>(a, o, p->n, p->sub);
}

/* Operand k repeats every *cnt elements of the output (dense trailing axes, stride-0 leading
 * ones); false for any other pattern. */
static bool tiled(const rlx_cu_ew *p, int k, int64_t *cnt) {
  int64_t s = 1;
  int d = p->rank - 1;
  for (; d >= 0; d--) {
    if (p->dims[d] == 1) continue;
    if (p->stride[k][d] != s) break;
    s *= p->dims[d];
  }
  for (; d >= 0; d--)
    if (p->dims[d] != 1 && p->stride[k][d] != 0) return false;
  *cnt = s;
  return s > 0;
}

static bool dense(const rlx_cu_ew *p, int k) {
  int64_t s = 1;
  for (int d = p->rank - 1; d >= 0; d--) {
    if (p->dims[d] != 1 && p->stride[k][d] != s) return false;
    s *= p->dims[d];
  }
  return true;
}

extern "C" rlx_status rlx_cu_elementwise(rlx_cu_ctx *c, const rlx_cu_ew *p) {
  if (p->n == 0) return RLX_OK;
  const int threads = 256;
  int64_t ca = 0, cb = 0;
  bool lowp = p->out_dtype == RLX_BF16 || p->out_dtype == RLX_F16;
  if (p->kind == RLX_CU_EW_BINARY && p->out_dtype == RLX_F32 &&
      (p->sub == RLX_BINOP_ADD || p->sub == RLX_BINOP_SUB || p->sub == RLX_BINOP_MUL) && dense(p, 0) && dense(p, 1)) {
    if (p->n % 4 == 0 && (((uintptr_t)p->in[0] | (uintptr_t)p->in[1] | (uintptr_t)p->out) & 15) == 0)
      ew_f32_binary_dense4<<<cu_blocks(p->n / 4, threads), threads, 0, c->stream>>>(
          (const float4 *)p->in[0], (const float4 *)p->in[1], (float4 *)p->out, p->n / 4, p->sub);
    else
      ew_f32_binary_dense<<<cu_blocks(p->n, threads), threads, 0, c->stream>>>(
          (const float *)p->in[0], (const float *)p->in[1], (float *)p->out, p->n, p->sub);
  } else if (p->kind == RLX_CU_EW_BINARY && p->out_dtype == RLX_F32 && p->in_dtype[0] == RLX_F32 &&
             p->in_dtype[1] == RLX_F32 &&
             (p->sub == RLX_BINOP_ADD || p->sub == RLX_BINOP_SUB || p->sub == RLX_BINOP_MUL) && tiled(p, 0, &ca) &&
             tiled(p, 1, &cb)) {
    bool vec = p->n % 4 == 0 && ca % 4 == 0 && cb % 4 == 0 && ((uintptr_t)p->in[0] & 15) == 0 &&
               ((uintptr_t)p->in[1] & 15) == 0 && ((uintptr_t)p->out & 15) == 0;
    const float *a = (const float *)p->in[0], *b = (const float *)p->in[1];
    if (vec)
      ew_f32_binary_tiled<true>
          <<<cu_blocks(p->n / 4, threads), threads, 0, c->stream>>>(a, b, (float *)p->out, p->n, ca, cb, p->sub);
    else
      ew_f32_binary_tiled<false>
          <<<cu_blocks(p->n, threads), threads, 0, c->stream>>>(a, b, (float *)p->out, p->n, ca, cb, p->sub);
  } else if (p->kind == RLX_CU_EW_ACT && p->out_dtype == RLX_F32 && p->in_dtype[0] == RLX_F32 && dense(p, 0)) {
    if (c->fp32_pedantic)
      ew_f32_act_dense<<<cu_blocks(p->n, threads), threads, 0, c->stream>>>((const float *)p->in[0], (float *)p->out,
                                                                            p->n, p->sub);
    else
      typed_act_launch<float>(p, cu_blocks((p->n + 3) / 4, threads), c->stream);
  } else if (p->kind == RLX_CU_EW_BINARY && lowp && p->in_dtype[0] == p->out_dtype && p->in_dtype[1] == p->out_dtype &&
             (p->sub == RLX_BINOP_ADD || p->sub == RLX_BINOP_SUB || p->sub == RLX_BINOP_MUL) && tiled(p, 0, &ca) &&
             tiled(p, 1, &cb)) {
    unsigned blocks = cu_blocks((p->n + 3) / 4, threads);
    if (p->out_dtype == RLX_BF16)
      lowp_binary_launch<__nv_bfloat16>(p, ca, cb, blocks, c->stream);
    else
      lowp_binary_launch<__half>(p, ca, cb, blocks, c->stream);
  } else if (p->kind == RLX_CU_EW_ACT && lowp && p->in_dtype[0] == p->out_dtype && dense(p, 0)) {
    unsigned blocks = cu_blocks((p->n + 3) / 4, threads);
    if (p->out_dtype == RLX_BF16)
      typed_act_launch<__nv_bfloat16>(p, blocks, c->stream);
    else
      typed_act_launch<__half>(p, blocks, c->stream);
  } else if (p->n < ((int64_t)1 << 31)) {
    ew_kernel<uint32_t><<<cu_blocks(p->n, threads), threads, 0, c->stream>>>(*p, c->kerr);
  } else {
    ew_kernel<int64_t><<<cu_blocks(p->n, threads), threads, 0, c->stream>>>(*p, c->kerr);
  }
  return cu_launch_status("elementwise kernel");
}

/* ---- fused elementwise regions: the whole chain per element, in registers ----
 * Each step's value is kept exactly as the unfused graph would hold it: a double for float
 * dtypes (rounded to the step's dtype), an int64 for integer and bool dtypes (saturated to the
 * step's dtype), so the result is the same as running the steps as separate nodes. */
struct rv {
  double f;
  int64_t i;
};

__device__ inline void rv_load(const void *p, int t, int64_t i, rv &r) {
  if (dt_is_int(t))
    r.i = ld_i(p, t, i);
  else
    r.f = ld_f(p, t, i);
}
/* store-then-load through a local buffer: exactly the dtype's rounding / saturation rules */
__device__ inline void rv_put_f(int t, double v, rv &r) {
  if (t == RLX_F64) {
    r.f = v;
    return;
  }
  if (t == RLX_F32) {
    r.f = (double)(float)v;
    return;
  }
  unsigned long long buf[2];
  st_f(buf, t, 0, v);
  rv_load(buf, t, 0, r);
}
__device__ inline void rv_put_i(int t, int64_t v, rv &r) {
  unsigned long long buf[2];
  st_i(buf, t, 0, v);
  rv_load(buf, t, 0, r);
}

__device__ inline int64_t region_index(const rlx_cu_region &p, int k, int64_t e) {
  int64_t cnt = p.in_count[k];
  int64_t j = cnt == p.n ? e : e % cnt;
  if (k == p.pro) {
    int64_t W2 = 2 * p.pro_w, H2 = 2 * p.pro_h;
    int64_t w2 = j % W2, h2 = (j / W2) % H2, lead = j / (W2 * H2);
    j = (lead * p.pro_h + h2 / 2) * p.pro_w + w2 / 2;
  }
  return j;
}

__global__ void region_kernel(rlx_cu_region p, int *kerr) {
  rv vals[RLX_CU_REGION_MAX_STEPS];
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < p.n; e += (int64_t)gridDim.x * blockDim.x) {
    for (int s = 0; s < p.n_steps; s++) {
      const rlx_cu_region_step &st = p.steps[s];
      rv a[3];
      int ta[3];
      int used = st.kind == RLX_CHAIN_STEP_WHERE                                           ? 3
                 : (st.kind == RLX_CHAIN_STEP_BINARY || st.kind == RLX_CHAIN_STEP_COMPARE) ? 2
                                                                                           : 1;
      for (int k = 0; k < used; k++) {
        int src = st.src[k];
        if (src >= RLX_CU_REGION_MAX_IN) {
          a[k] = vals[src - RLX_CU_REGION_MAX_IN];
          ta[k] = p.steps[src - RLX_CU_REGION_MAX_IN].dtype;
        } else {
          ta[k] = p.in_dtype[src];
          rv_load(p.in[src], ta[k], region_index(p, src, e), a[k]);
        }
      }
      int t = st.dtype;
      rv r = {0, 0};
      switch (st.kind) {
      case RLX_CHAIN_STEP_ACTIVATION:
        if (dt_is_int(t)) {
          int64_t q;
          if (act_int(st.sub, a[0].i, &q))
            rv_put_i(t, q, r);
          else
            rv_put_f(t, act_real(st.sub, (double)a[0].i), r);
        } else {
          rv_put_f(t, act_real(st.sub, a[0].f), r);
        }
        break;
      case RLX_CHAIN_STEP_CAST:
        if (dt_is_int(ta[0])) {
          if (t == RLX_BOOL)
            r.i = a[0].i != 0;
          else if (dt_is_int(t))
            rv_put_i(t, wrap_int(a[0].i, t), r);
          else
            rv_put_i(t, a[0].i, r);
        } else {
          rv_put_f(t, a[0].f, r);
        }
        break;
      case RLX_CHAIN_STEP_BINARY:
        if (dt_is_int(t)) {
          if (st.sub == RLX_BINOP_ATAN2)
            rv_put_f(t, atan2((double)a[0].i, (double)a[1].i), r);
          else
            rv_put_i(t, binary_int(st.sub, a[0].i, a[1].i, t, kerr), r);
        } else {
          rv_put_f(t, binary_float(st.sub, a[0].f, a[1].f), r);
        }
        break;
      case RLX_CHAIN_STEP_COMPARE: {
        int order;
        bool unordered = false;
        if (dt_is_int(ta[0])) {
          order = (a[0].i > a[1].i) - (a[0].i < a[1].i);
        } else {
          unordered = a[0].f != a[0].f || a[1].f != a[1].f;
          order = (a[0].f > a[1].f) - (a[0].f < a[1].f);
        }
        r.i = cmp_result(st.sub, order, unordered);
        break;
      }
      default: { /* Where */
        bool c = dt_is_int(ta[0]) ? a[0].i != 0 : a[0].f != 0;
        r = c ? a[1] : a[2];
        break;
      }
      }
      vals[s] = r;
    }
    const rv &last = vals[p.n_steps - 1];
    if (dt_is_int(p.out_dtype))
      st_i(p.out, p.out_dtype, e, last.i);
    else
      st_f(p.out, p.out_dtype, e, last.f);
  }
}

/* All-f32 chains of arithmetic steps: float registers. Add / Sub / Mul / Div in float are the
 * correctly rounded results the double path gives; other steps go through double once. */
__device__ __noinline__ float region_f32_binary_slow(int sub, float x, float y) {
  return (float)binary_float(sub, x, y);
}
__device__ __noinline__ float region_f32_act_slow(int sub, float x) { return (float)act_real(sub, x); }
__device__ inline float region_f32_step(int kind, int sub, float x, float y) {
  if (kind == RLX_CHAIN_STEP_BINARY) {
    switch (sub) {
    case RLX_BINOP_ADD: return x + y;
    case RLX_BINOP_SUB: return x - y;
    case RLX_BINOP_MUL: return x * y;
    case RLX_BINOP_DIV: return x / y;
    default: return region_f32_binary_slow(sub, x, y);
    }
  }
  switch (sub) {
  case RLX_ACT_RELU: return x < 0 ? 0.0f : x;
  case RLX_ACT_NEG: return -x;
  case RLX_ACT_ABS: return fabsf(x);
  default: return region_f32_act_slow(sub, x);
  }
}

/* One step on a float4: the kind and sub are uniform, so one branch decides the whole step. */
__device__ inline float4 region_f32_step4(int kind, int sub, const float4 &x, const float4 &y) {
  int code = kind == RLX_CHAIN_STEP_BINARY ? sub : 1000 + sub;
  switch (code) {
  case RLX_BINOP_ADD: return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  case RLX_BINOP_SUB: return make_float4(x.x - y.x, x.y - y.y, x.z - y.z, x.w - y.w);
  case RLX_BINOP_MUL: return make_float4(x.x * y.x, x.y * y.y, x.z * y.z, x.w * y.w);
  case 1000 + RLX_ACT_RELU:
    return make_float4(x.x < 0 ? 0.f : x.x, x.y < 0 ? 0.f : x.y, x.z < 0 ? 0.f : x.z, x.w < 0 ? 0.f : x.w);
  default:
    return make_float4(region_f32_step(kind, sub, x.x, y.x), region_f32_step(kind, sub, x.y, y.y),
                       region_f32_step(kind, sub, x.z, y.z), region_f32_step(kind, sub, x.w, y.w));
  }
}

/* operand src of a step (T: float4 or double): inputs 0 .. NI-1 are r[0 .. NI-1], step j's value is r[NI + j] (a
 * uniform switch: one indirect branch, and r stays in registers since every index is constant) */
template <int NI, typename T, int NR> __device__ inline T region_pick(int src, const T (&r)[NR]) {
  int i = src < RLX_CU_REGION_MAX_IN ? src : NI + (src - RLX_CU_REGION_MAX_IN);
  T v{};
  switch (i) {
#define RLX_PICK(J)                    \
  case J:                              \
    if (J < NR) v = r[J < NR ? J : 0]; \
    break;
    RLX_PICK(0)
    RLX_PICK(1)
    RLX_PICK(2)
    RLX_PICK(3)
    RLX_PICK(4)
    RLX_PICK(5)
    RLX_PICK(6)
    RLX_PICK(7)
    RLX_PICK(8)
    RLX_PICK(9)
    RLX_PICK(10)
    RLX_PICK(11)
#undef RLX_PICK
  default: break;
  }
  return v;
}

/* N steps and NI inputs known at compile time: the loops unroll and every value stays in the
 * register array r (operands picked by region_pick, never by a run-time index, which would put
 * the array in local memory). Each thread handles 4 consecutive elements as one float4 per
 * operand, each step once per float4; U float4 groups per thread per iteration. */
template <int N, int NI, int U> __global__ void __launch_bounds__(256) region_f32_kernel(rlx_cu_region p) {
  const int64_t groups = p.n / 4, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g0 < groups; g0 += U * stride) {
    float4 r[U][NI + N];
#pragma unroll
    for (int u = 0; u < U; u++) {
      int64_t g = g0 + u * stride;
#pragma unroll
      for (int k = 0; k < NI; k++) {
        r[u][k] = make_float4(0, 0, 0, 0);
        if (g >= groups) continue;
        int64_t cnt = p.in_count[k];
        const float *src = (const float *)p.in[k];
        if (cnt == p.n) {
          r[u][k] = __ldcs((const float4 *)src + g);
        } else {
          int64_t e = 4 * g;
          r[u][k] = make_float4(src[e % cnt], src[(e + 1) % cnt], src[(e + 2) % cnt], src[(e + 3) % cnt]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      int64_t g = g0 + u * stride;
#pragma unroll
      for (int s = 0; s < N; s++) {
        const rlx_cu_region_step &st = p.steps[s];
        r[u][NI + s] =
            region_f32_step4(st.kind, st.sub, region_pick<NI>(st.src[0], r[u]), region_pick<NI>(st.src[1], r[u]));
      }
      if (g < groups) __stcs((float4 *)p.out + g, r[u][NI + N - 1]);
    }
  }
}

template <int N, int U> static void region_f32_launch_u(const rlx_cu_region *p, unsigned blocks, cudaStream_t s) {
  switch (p->n_in) {
  case 1: region_f32_kernel<N, 1, U><<<blocks, 256, 0, s>>>(*p); break;
  case 2: region_f32_kernel<N, 2, U><<<blocks, 256, 0, s>>>(*p); break;
  case 3: region_f32_kernel<N, 3, U><<<blocks, 256, 0, s>>>(*p); break;
  default: region_f32_kernel<N, 4, U><<<blocks, 256, 0, s>>>(*p); break;
  }
}
/* RLX_CUDA_REGION_UNROLL (1 or 2 float4 groups per thread per iteration) and
 * RLX_CUDA_REGION_BLOCKS (grid size cap) are tuning knobs for the benchmark. The default cap,
 * 132 x 64 blocks of 256 threads (a grid-stride loop), measured best on the H200 for
 * relu(a*b + c)*a at 2^28 f32 (bench_cuda_block region, three interleaved rounds, 17:12 UTC
 * 2026-12-02): 3415-3454 GB/s at 2112 blocks, 3621-3624 at 8448, 3591-3610 at 33792, 3201-3227
 * with a covering grid (one float4 group per thread), 2852-2891 with 2 groups per thread. */
static int region_unroll = -1;
static int64_t region_block_cap = -1;
template <int N> static void region_f32_launch(const rlx_cu_region *p, unsigned blocks, cudaStream_t s) {
  if (region_unroll == 2)
    region_f32_launch_u<N, 2>(p, blocks, s);
  else
    region_f32_launch_u<N, 1>(p, blocks, s);
}

/* Float chains that are not all f32 (f16 / bf16 / f64 operands or steps; up to 8 Activation,
 * Binary and Cast steps over 1-4 operands, no prologue): the general kernel's arithmetic exactly
 * (double, each step rounded to its dtype, region_round = rv_put_f), but specialised on the step
 * and operand counts so the values stay in registers (the general kernel keeps them in a
 * run-time indexed array, i.e. local memory, and rounds through a local buffer), 4 elements per
 * thread with the tiled operands' index computed once per 4 elements. */
__device__ inline double region_round(int t, double v) {
  switch (t) {
  case RLX_F32: return (double)(float)v;
  case RLX_BF16: return ld_t(st_t<__nv_bfloat16>(v));
  case RLX_F16: return ld_t(st_t<__half>(v));
  default: return v;
  }
}
/* the rarer steps out of line, so the 32 specialisations stay small */
__device__ __noinline__ double region_binary_slow(int sub, double x, double y) { return binary_float(sub, x, y); }
__device__ __noinline__ double region_act_slow(int sub, double x) { return act_real(sub, x); }
template <int N, int NI> __global__ void __launch_bounds__(256) region_lowp_kernel(rlx_cu_region p) {
  const bool small = p.n < ((int64_t)1 << 32);
  const int64_t groups = (p.n + 3) / 4, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t e0 = 4 * g;
    double r[4][NI + N];
#pragma unroll
    for (int k = 0; k < NI; k++) {
      const int t = p.in_dtype[k];
      const int64_t cnt = p.in_count[k], i0 = cnt == p.n ? e0 : lp_mod(e0, cnt, small);
#pragma unroll
      for (int c = 0; c < 4; c++) {
        int64_t i = cnt >= 4 ? (i0 + c >= cnt ? i0 + c - cnt : i0 + c) : lp_mod(e0 + c, cnt, small);
        r[c][k] = e0 + c < p.n ? ld_f(p.in[k], t, i) : 0.0;
      }
    }
#pragma unroll
    for (int s = 0; s < N; s++) {
      const rlx_cu_region_step &st = p.steps[s];
#pragma unroll
      for (int c = 0; c < 4; c++) {
        double x = region_pick<NI>(st.src[0], r[c]), v;
        if (st.kind == RLX_CHAIN_STEP_BINARY) {
          double y = region_pick<NI>(st.src[1], r[c]);
          switch (st.sub) {
          case RLX_BINOP_ADD: v = x + y; break;
          case RLX_BINOP_SUB: v = x - y; break;
          case RLX_BINOP_MUL: v = x * y; break;
          case RLX_BINOP_DIV: v = x / y; break;
          default: v = region_binary_slow(st.sub, x, y); break;
          }
        } else if (st.kind == RLX_CHAIN_STEP_ACTIVATION) {
          v = st.sub == RLX_ACT_NEG ? -x : region_act_slow(st.sub, x);
        } else {
          v = x; /* Cast */
        }
        r[c][NI + s] = region_round(st.dtype, v);
      }
    }
#pragma unroll
    for (int c = 0; c < 4; c++)
      if (e0 + c < p.n) st_f(p.out, p.out_dtype, e0 + c, r[c][NI + N - 1]);
  }
}
template <int N> static void region_lowp_launch(const rlx_cu_region *p, unsigned blocks, cudaStream_t s) {
  switch (p->n_in) {
  case 1: region_lowp_kernel<N, 1><<<blocks, 256, 0, s>>>(*p); break;
  case 2: region_lowp_kernel<N, 2><<<blocks, 256, 0, s>>>(*p); break;
  case 3: region_lowp_kernel<N, 3><<<blocks, 256, 0, s>>>(*p); break;
  default: region_lowp_kernel<N, 4><<<blocks, 256, 0, s>>>(*p); break;
  }
}
/* Chains whose operands, steps and output are all one 16-bit float dtype T (the bf16 block's
 * bias + residual adds and the summed qkv gradients): values are held as floats (each exactly a
 * T value), Add / Sub / Mul / Div computed in float and rounded to T, which is the double path's
 * result (a float sum or product of two T values is exact or already past T's rounding point,
 * and a float quotient cannot cross a T rounding midpoint), Neg / Abs / Relu exact; the other
 * steps through double, rounded once to T as region_round does. W elements per thread (4 or 8):
 * one 8- or 16-byte load per operand when dense or tiled by a multiple of W and aligned, each
 * step applied once per group; a grid-stride loop. The double kernel above moved these at
 * 0.3 TB/s on the H200 (per-element dtype switches and 2-byte accesses). */
template <typename T> __device__ inline float lp16_round(float v) { return to_f(from_f<T>(v)); }
template <typename T> __device__ __noinline__ float lp16_slow(int kind, int sub, float x, float y) {
  double v = kind == RLX_CHAIN_STEP_BINARY ? binary_float(sub, x, y) : act_real(sub, x);
  return to_f(st_t<T>(v));
}
/* W (4 or 8) consecutive elements of one operand or step: one step applies once per group,
 * with one uniform branch on its op (as region_f32_step4 does for float4s) */
template <int W> struct lp16_group {
  float v[W];
};
template <int W> struct lp16_word; /* W 16-bit values as one access */
template <> struct lp16_word<4> {
  typedef uint2 V;
};
template <> struct lp16_word<8> {
  typedef uint4 V;
};
template <typename T, int W>
__device__ inline lp16_group<W> lp16_step(int kind, int sub, const lp16_group<W> &x, const lp16_group<W> &y) {
  lp16_group<W> r;
  int code = kind == RLX_CHAIN_STEP_CAST ? -1 : kind == RLX_CHAIN_STEP_BINARY ? sub : 1000 + sub;
  switch (code) {
  case -1: return x;
#define RLX_LP16_EACH(EXPR)                       \
  _Pragma("unroll") for (int i = 0; i < W; i++) { \
    float a = x.v[i], b = y.v[i];                 \
    (void)b;                                      \
    r.v[i] = EXPR;                                \
  }                                               \
  break;
  case RLX_BINOP_ADD: RLX_LP16_EACH(lp16_round<T>(a + b))
  case RLX_BINOP_SUB: RLX_LP16_EACH(lp16_round<T>(a - b))
  case RLX_BINOP_MUL: RLX_LP16_EACH(lp16_round<T>(a * b))
  case RLX_BINOP_DIV: RLX_LP16_EACH(lp16_round<T>(a / b))
  case 1000 + RLX_ACT_NEG: RLX_LP16_EACH(-a)
  case 1000 + RLX_ACT_ABS: RLX_LP16_EACH(fabsf(a))
  case 1000 + RLX_ACT_RELU: RLX_LP16_EACH(a < 0 ? 0.f : a)
  default: RLX_LP16_EACH(lp16_slow<T>(kind, sub, a, b))
#undef RLX_LP16_EACH
  }
  return r;
}
template <typename T, int N, int NI, int W>
__global__ void __launch_bounds__(256) region_lp16_kernel(rlx_cu_region p) {
  typedef typename lp16_word<W>::V V;
  const bool small = p.n < ((int64_t)1 << 32);
  const int64_t groups = (p.n + W - 1) / W, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t e0 = W * g;
    const bool whole = e0 + W <= p.n;
    lp16_group<W> r[NI + N];
#pragma unroll
    for (int k = 0; k < NI; k++) {
      const T *src = (const T *)p.in[k];
      const int64_t cnt = p.in_count[k], i0 = cnt == p.n ? e0 : lp_mod(e0, cnt, small);
      if (whole && cnt % W == 0 && ((uintptr_t)src % sizeof(V)) == 0) {
        V u = __ldcs((const V *)(src + i0));
        T x[W];
        memcpy(x, &u, sizeof u);
#pragma unroll
        for (int c = 0; c < W; c++) r[k].v[c] = to_f(x[c]);
      } else {
#pragma unroll
        for (int c = 0; c < W; c++) {
          int64_t i = cnt >= W ? (i0 + c >= cnt ? i0 + c - cnt : i0 + c) : lp_mod(e0 + c, cnt, small);
          r[k].v[c] = e0 + c < p.n ? to_f(src[i]) : 0.f;
        }
      }
    }
#pragma unroll
    for (int s = 0; s < N; s++) {
      const rlx_cu_region_step &st = p.steps[s];
      r[NI + s] = lp16_step<T, W>(st.kind, st.sub, region_pick<NI>(st.src[0], r), region_pick<NI>(st.src[1], r));
    }
    T y[W];
#pragma unroll
    for (int c = 0; c < W; c++) y[c] = from_f<T>(r[NI + N - 1].v[c]);
    T *out = (T *)p.out + e0;
    if (whole && ((uintptr_t)out % sizeof(V)) == 0) {
      V u;
      memcpy(&u, y, sizeof u);
      __stcs((V *)out, u);
    } else {
      for (int c = 0; c < W; c++)
        if (e0 + c < p.n) out[c] = y[c];
    }
  }
}
/* Elements per thread: 4 (8-byte accesses) by default, RLX_CUDA_LP16_WIDTH=8 for 16-byte ones (a
 * tuning knob for the benchmark). ncu on the H200, the bf16 block's three regions together
 * (2026-12-03): 138 us at 4, 150 us at 8; a 4-element version with one branch per element and
 * step took 246 us. */
static int lp16_width = 0;
template <typename T, int N> static void region_lp16_launch(const rlx_cu_region *p, cudaStream_t s) {
  if (!lp16_width) {
    const char *w = getenv("RLX_CUDA_LP16_WIDTH");
    lp16_width = w && atoi(w) == 8 ? 8 : 4;
  }
  const int threads = 256;
  int64_t blocks = ((p->n + lp16_width - 1) / lp16_width + threads - 1) / threads;
  if (blocks > 132 * 64) blocks = 132 * 64;
  unsigned nb = (unsigned)blocks;
  if (lp16_width == 4) {
    switch (p->n_in) {
    case 1: region_lp16_kernel<T, N, 1, 4><<<nb, threads, 0, s>>>(*p); break;
    case 2: region_lp16_kernel<T, N, 2, 4><<<nb, threads, 0, s>>>(*p); break;
    case 3: region_lp16_kernel<T, N, 3, 4><<<nb, threads, 0, s>>>(*p); break;
    default: region_lp16_kernel<T, N, 4, 4><<<nb, threads, 0, s>>>(*p); break;
    }
    return;
  }
  switch (p->n_in) {
  case 1: region_lp16_kernel<T, N, 1, 8><<<nb, threads, 0, s>>>(*p); break;
  case 2: region_lp16_kernel<T, N, 2, 8><<<nb, threads, 0, s>>>(*p); break;
  case 3: region_lp16_kernel<T, N, 3, 8><<<nb, threads, 0, s>>>(*p); break;
  default: region_lp16_kernel<T, N, 4, 8><<<nb, threads, 0, s>>>(*p); break;
  }
}
/* one 16-bit dtype throughout (within the region_lowp_fits shapes) */
static bool region_lp16_fits(const rlx_cu_region *p) {
  const int t = p->out_dtype;
  if (t != RLX_BF16 && t != RLX_F16) return false;
  for (int k = 0; k < p->n_in; k++)
    if (p->in_dtype[k] != t) return false;
  for (int s = 0; s < p->n_steps; s++)
    if (p->steps[s].dtype != t) return false;
  return true;
}

static bool float_dt(int t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }
static bool region_lowp_fits(const rlx_cu_region *p) {
  if (p->pro >= 0 || p->n_steps < 1 || p->n_steps > 8 || p->n_in < 1 || p->n_in > 4 || !float_dt(p->out_dtype))
    return false;
  for (int k = 0; k < p->n_in; k++)
    if (!float_dt(p->in_dtype[k]) || p->in_count[k] < 1) return false;
  for (int s = 0; s < p->n_steps; s++) {
    const rlx_cu_region_step *st = &p->steps[s];
    if (!float_dt(st->dtype) ||
        (st->kind != RLX_CHAIN_STEP_ACTIVATION && st->kind != RLX_CHAIN_STEP_BINARY && st->kind != RLX_CHAIN_STEP_CAST))
      return false;
  }
  return true;
}

/* the step counts the specialised region kernels are instantiated for (a case each below) */
#define RLX_REGION_STEP_COUNTS(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8)

/* the tail (n % 4 elements) and chains longer than 8 steps: the general kernel */
extern "C" rlx_status rlx_cu_region_run(rlx_cu_ctx *c, const rlx_cu_region *p) {
  if (p->n == 0) return RLX_OK;
  const int threads = 256;
  bool vec = p->fast_f32 && p->n_steps <= 8 && p->n_in >= 1 && p->n_in <= 4 && ((uintptr_t)p->out & 15) == 0;
  for (int k = 0; vec && k < p->n_in; k++) vec = p->in_count[k] != p->n || ((uintptr_t)p->in[k] & 15) == 0;
  if (vec) {
    if (region_unroll < 0) {
      const char *u = getenv("RLX_CUDA_REGION_UNROLL"), *b = getenv("RLX_CUDA_REGION_BLOCKS");
      region_unroll = u && atoi(u) == 2 ? 2 : 1;
      region_block_cap = b && atoll(b) > 0 ? atoll(b) : 132 * 64;
    }
    int64_t groups = p->n / 4, blocks = (groups + threads * region_unroll - 1) / (threads * region_unroll);
    if (blocks > region_block_cap) blocks = region_block_cap;
    if (blocks > 65535LL * 16) blocks = 65535LL * 16;
    if (blocks < 1) blocks = 1;
    switch (p->n_steps) {
#define RLX_REGION_CASE(K) \
  case K: region_f32_launch<K>(p, (unsigned)blocks, c->stream); break;
      RLX_REGION_STEP_COUNTS(RLX_REGION_CASE)
#undef RLX_REGION_CASE
    default: break;
    }
    rlx_status st = cu_launch_status("elementwise region kernel (f32)");
    if (st != RLX_OK || p->n % 4 == 0) return st;
    /* the last n % 4 elements through the general kernel */
    rlx_cu_region tail = *p;
    int64_t done = groups * 4;
    tail.n = p->n - done;
    for (int k = 0; k < p->n_in; k++)
      if (p->in_count[k] == p->n) {
        tail.in[k] = (const float *)p->in[k] + done;
        tail.in_count[k] = tail.n;
      } else if (done % p->in_count[k]) {
        /* a tiled operand whose phase would shift: run everything in the general kernel */
        tail = *p;
        break;
      }
    if (tail.n != p->n) tail.out = (float *)p->out + done;
    region_kernel<<<1, threads, 0, c->stream>>>(tail, c->kerr);
    return cu_launch_status("elementwise region kernel");
  }
  if (region_lowp_fits(p) && region_lp16_fits(p)) {
    const bool bf = p->out_dtype == RLX_BF16;
    switch (p->n_steps) {
#define RLX_REGION_CASE(K)                              \
  case K:                                               \
    if (bf)                                             \
      region_lp16_launch<__nv_bfloat16, K>(p, c->stream); \
    else                                                \
      region_lp16_launch<__half, K>(p, c->stream);       \
    break;
      RLX_REGION_STEP_COUNTS(RLX_REGION_CASE)
#undef RLX_REGION_CASE
    default: break;
    }
    return cu_launch_status("elementwise region kernel (one 16-bit dtype)");
  }
  if (region_lowp_fits(p)) {
    int64_t blocks = ((p->n + 3) / 4 + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16;
    switch (p->n_steps) {
#define RLX_REGION_CASE(K) \
  case K: region_lowp_launch<K>(p, (unsigned)blocks, c->stream); break;
      RLX_REGION_STEP_COUNTS(RLX_REGION_CASE)
#undef RLX_REGION_CASE
    default: break;
    }
    return cu_launch_status("elementwise region kernel (16-bit floats)");
  }
  int64_t blocks = (p->n + threads - 1) / threads;
  if (blocks > 132 * 32) blocks = 132 * 32;
  region_kernel<<<(unsigned)blocks, threads, 0, c->stream>>>(*p, c->kerr);
  return cu_launch_status("elementwise region kernel");
}
