/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 elementwise ops, threaded over contiguous blocks.
 *   Binary        Add Sub Mul Div Max Min; same shapes, scalars and every broadcast whose merged
 *                 form has at most 4 axes ([N, C, H, W] + [1, C, 1, 1], [N, F] + [F], ...).
 *                 Add/Sub/Mul/Div round once like the reference (f32 arithmetic is correctly
 *                 rounded), so they match it bit for bit; Max/Min keep its NaN / signed-zero rules.
 *   Activation    Relu Neg Abs Sqrt Recip Exp Log Sigmoid Tanh Silu Gelu GeluApprox Softplus,
 *                 with f32 libm (formulas chosen to avoid cancellation: Gelu through erfc,
 *                 GeluApprox as x * sigmoid(2z))
 *   ReluBackward  x > 0 ? dy : 0 (exact)
 *   ActivationBackward  Relu Sigmoid Tanh Silu Gelu Exp (derivatives written without cancellation;
 *                 Silu's and Gelu's, which cross zero, in double)
 *   Where         bool condition, 4-byte values; operands of the output's shape or single elements
 *   Cast          f32 <-> f64 / i32 / i64 / u8 / bool (the reference's rounding and saturation) */
#include <math.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

/* Elements per work item of a parallel elementwise loop. */
#define BLOCK 16384

/* ======================================================================================
 * Binary
 * ====================================================================================== */

/* The output's axes merged by broadcast pattern: strides 0 where an operand is broadcast. */
typedef struct bview {
  uint32_t rank;
  size_t dims[4], sa[4], sb[4];
} bview;

static bool binary_view(const rlx_shape *a, const rlx_shape *b, const rlx_shape *o, bview *v) {
  if (a->rank > o->rank || b->rank > o->rank) return false;
  uint32_t r = o->rank;
  size_t dims[RLX_MAX_RANK];
  int pat[RLX_MAX_RANK]; /* bit 0: a broadcast, bit 1: b broadcast */
  uint32_t m = 0;
  for (uint32_t k = 0; k < r; k++) {
    size_t od = (size_t)o->dims[k];
    int64_t ad = k + a->rank >= r ? a->dims[k + a->rank - r] : 1;
    int64_t bd = k + b->rank >= r ? b->dims[k + b->rank - r] : 1;
    if ((ad != 1 && (size_t)ad != od) || (bd != 1 && (size_t)bd != od)) return false;
    if (od == 1) continue;
    int p = (ad == 1 ? 1 : 0) | (bd == 1 ? 2 : 0);
    if (m && pat[m - 1] == p) {
      dims[m - 1] *= od;
      continue;
    }
    pat[m] = p;
    dims[m++] = od;
  }
  if (m == 0) { /* a single element */
    pat[0] = 0;
    dims[0] = 1;
    m = 1;
  }
  if (m > 4) return false;
  v->rank = m;
  size_t st_a = 1, st_b = 1;
  for (int k = (int)m - 1; k >= 0; k--) {
    v->dims[k] = dims[k];
    v->sa[k] = (pat[k] & 1) ? 0 : st_a;
    v->sb[k] = (pat[k] & 2) ? 0 : st_b;
    if (!(pat[k] & 1)) st_a *= dims[k];
    if (!(pat[k] & 2)) st_b *= dims[k];
  }
  return true;
}

static bool binary_op_ok(rlx_binop op) {
  return op == RLX_BINOP_ADD || op == RLX_BINOP_SUB || op == RLX_BINOP_MUL || op == RLX_BINOP_DIV ||
         op == RLX_BINOP_MAX || op == RLX_BINOP_MIN;
}

FK_APPLIES(Binary) {
  if (n_in != 2) return false;
  rlx_binop op = (rlx_binop)n->attrs.Binary.op;
  /* Pow: with a single-element exponent (the constant exponents of ONNX models) */
  if (!binary_op_ok(op) && !(op == RLX_BINOP_POW && fk_is_f32(&in[1].shape) && fk_numel(&in[1].shape) == 1))
    return false;
  if (!fk_static_f32(&in[0].shape) || !fk_static_f32(&in[1].shape) || !fk_static_f32(&n->shape)) return false;
  bview v;
  return binary_view(&in[0].shape, &in[1].shape, &n->shape, &v);
}

/* The reference's Max / Min: NaN if either is NaN; max(-0, +0) = +0, min(-0, +0) = -0. */
static inline float ref_max(float a, float b) {
  if (a != a || b != b) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static inline float ref_min(float a, float b) {
  if (a != a || b != b) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

typedef struct bin_job {
  bview v;
  rlx_binop op;
  const float *a, *b;
  float *c;
} bin_job;

/* One contiguous inner run of `len` output elements; sa / sb are the operands' inner strides. */
#define BIN_RUN(EXPR)                            \
  do {                                           \
    if (sa && sb)                                \
      for (size_t i = 0; i < len; i++) {         \
        float x = a[i], y = b[i];                \
        c[i] = (EXPR);                           \
      }                                          \
    else if (sa)                                 \
      for (size_t i = 0; i < len; i++) {         \
        float x = a[i], y = b[0];                \
        c[i] = (EXPR);                           \
      }                                          \
    else if (sb)                                 \
      for (size_t i = 0; i < len; i++) {         \
        float x = a[0], y = b[i];                \
        c[i] = (EXPR);                           \
      }                                          \
    else {                                       \
      float x = a[0], y = b[0], r = (EXPR);      \
      for (size_t i = 0; i < len; i++) c[i] = r; \
    }                                            \
  } while (0)

/* e^x in f32 arithmetic that vectorises (no libm call): x = n ln2 + r with n = round(x / ln2) and
 * |r| <= ln2 / 2 (Cody-Waite: ln2 in two parts), e^r by its Taylor polynomial of degree 7
 * (truncation < 6e-9 relative), scaled by 2^n as two powers of two so that subnormal results
 * come out right. Max error 2 ulp on [-104, 89] (tests/unit/test_fast_vs_ref.c measures it);
 * overflow gives +inf, x < -104 gives +0, NaN stays NaN. */
static inline float el_pow2i(int32_t k) {
  uint32_t u = (uint32_t)(k + 127) << 23;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline float el_expf(float x) {
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.42860682030941723e-6f;
  float p = 1.98412698e-4f; /* 1/7! */
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333333e-3f;
  p = p * r + 4.16666667e-2f;
  p = p * r + 1.66666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t k = (int32_t)n, k1 = k / 2, k2 = k - k1;
  float y = p * el_pow2i(k1) * el_pow2i(k2);
  y = x > 88.7228394f ? INFINITY : y;
  y = x < -104.0f ? 0.0f : y;
  return x != x ? x : y;
}
/* 1 / (1 + e^-x) without overflow: e = e^-|x|; x >= 0: 1 / (1 + e), else e / (1 + e). */
static inline float el_sigmoidf(float x) {
  float e = el_expf(-fabsf(x)), d = 1.0f + e;
  return x >= 0.0f ? 1.0f / d : e / d;
}

/* erf and erfc in f32 arithmetic that vectorises (no libm call), for the Erf and Gelu loops.
 * |a| <= 3/4: erf(a) = a P(a^2), P of degree 6; a >= 1/2: erfc(a) = e^(-a^2) z H(z) with
 * z = 1 / (1 + a/2), H of degree 11 (relative error 2e-9 on [1/2, inf) in exact arithmetic).
 * Both polynomials are Chebyshev least-squares fits to erf(a) / a and erfc(a) e^(a^2) / z, made
 * for this file in double with Python's math.erf / math.erfc. */
static inline float el_erf_small(float a) {
  float s = a * a;
  float p = 9.471655549e-05f;
  p = p * s - 8.355894246e-04f;
  p = p * s + 5.216628335e-03f;
  p = p * s - 2.686468780e-02f;
  p = p * s + 1.128377680e-01f;
  p = p * s - 3.761263829e-01f;
  p = p * s + 1.128379167e+00f;
  return a * p;
}
/* erfc(a) / e^(-a^2) for a >= 1/2 (callers keep a <= 11, where e^(-a^2) is 0 already). */
static inline float el_erfc_scaled(float a) {
  float z = 1.0f / (1.0f + 0.5f * a);
  float h = 4.885304277e-02f;
  h = h * z - 1.818811246e-01f;
  h = h * z + 2.130541271e-01f;
  h = h * z - 9.430128156e-03f;
  h = h * z - 1.044477244e-01f;
  h = h * z - 2.432880995e-02f;
  h = h * z - 1.449690701e-02f;
  h = h * z + 8.553981138e-02f;
  h = h * z + 1.761287879e-01f;
  h = h * z + 2.468422711e-01f;
  h = h * z + 2.820945966e-01f;
  h = h * z + 2.820947927e-01f;
  return z * h;
}
/* erf(x): the small form below 3/4, 1 - erfc above (the square's rounding moves e^(-a^2) by
 * at most a^2 2^-24 relative, small next to 1 - erfc); the sign restored. NaN stays NaN. */
static inline float el_erff(float x) {
  float a = fabsf(x);
  a = a > 10.0f ? 10.0f : a;
  float big = 1.0f - el_expf(-(a * a)) * el_erfc_scaled(a);
  return copysignf(a < 0.75f ? el_erf_small(a) : big, x);
}
/* Gelu = 0.5 x erfc(t), t = -x / sqrt 2: 1 - erf(t) for |t| < 1/2, the scaled form for t >= 1/2
 * (x < 0) with t^2 = x^2 / 2 taken in two parts (x's upper 12 bits squared exactly, plus the
 * rest; the rounding of one f32 square would be amplified by x^2 / 2), and 2 - erfc(-t) for
 * t <= -1/2. Every polynomial step (and the exponential's reduction) is one fused multiply-add
 * (fmaf: rounded once, the same value on every path), which the AVX-512 path computes with
 * vfmadd instructions 16 lanes at a time (gelu_avx512.c, the same operations in the same order,
 * so the same bits); the other paths compile fmaf to the scalar FMA instruction (the avx2 path
 * is built for AVX2 + FMA) or call libm's. Same polynomials as el_expf / el_erf_small /
 * el_erfc_scaled. */
static inline float el_gelu_expf(float x) { /* x <= 0, not NaN (a NaN Gelu argument gives NaN below) */
  float xc = x < -104.0f ? -104.0f : x;
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
  float r = fmaf(-n, 0.693145751953125f, xc);
  r = fmaf(-n, 1.42860682030941723e-6f, r);
  float p = 1.98412698e-4f;
  p = fmaf(p, r, 1.38888889e-3f);
  p = fmaf(p, r, 8.33333333e-3f);
  p = fmaf(p, r, 4.16666667e-2f);
  p = fmaf(p, r, 1.66666667e-1f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  int32_t k = (int32_t)n, k1 = k / 2, k2 = k - k1;
  float y = p * el_pow2i(k1) * el_pow2i(k2);
  return x < -104.0f ? 0.0f : y;
}
static inline float el_gelu_erf_small(float a) {
  float s = a * a;
  float p = 9.471655549e-05f;
  p = fmaf(p, s, -8.355894246e-04f);
  p = fmaf(p, s, 5.216628335e-03f);
  p = fmaf(p, s, -2.686468780e-02f);
  p = fmaf(p, s, 1.128377680e-01f);
  p = fmaf(p, s, -3.761263829e-01f);
  p = fmaf(p, s, 1.128379167e+00f);
  return a * p;
}
static inline float el_gelu_erfc_scaled(float a) {
  float z = 1.0f / (1.0f + 0.5f * a);
  float h = 4.885304277e-02f;
  h = fmaf(h, z, -1.818811246e-01f);
  h = fmaf(h, z, 2.130541271e-01f);
  h = fmaf(h, z, -9.430128156e-03f);
  h = fmaf(h, z, -1.044477244e-01f);
  h = fmaf(h, z, -2.432880995e-02f);
  h = fmaf(h, z, -1.449690701e-02f);
  h = fmaf(h, z, 8.553981138e-02f);
  h = fmaf(h, z, 1.761287879e-01f);
  h = fmaf(h, z, 2.468422711e-01f);
  h = fmaf(h, z, 2.820945966e-01f);
  h = fmaf(h, z, 2.820947927e-01f);
  return z * h;
}
static inline float el_geluf(float x) {
  float xc = x < -15.0f ? -15.0f : x;
  xc = xc > 15.0f ? 15.0f : xc;
  float t = xc * -0.70710678118654752f, a = fabsf(t);
  uint32_t u;
  memcpy(&u, &xc, sizeof u);
  u &= 0xFFFFF000u;
  float xh;
  memcpy(&xh, &u, sizeof xh);
  float hi = 0.5f * (xh * xh), lo = 0.5f * ((xc - xh) * (xc + xh));
  /* |lo| < 0.06: e^-lo by its Taylor polynomial of degree 4 (truncation < 7e-9 relative) */
  float el = fmaf(fmaf(fmaf(fmaf(lo, 4.16666667e-2f, -1.66666667e-1f), lo, 0.5f), lo, -1.0f), lo, 1.0f);
  float tail = el_gelu_expf(-hi) * el * el_gelu_erfc_scaled(a < 0.5f ? 0.5f : a);
  float ec = a < 0.5f ? 1.0f - el_gelu_erf_small(t) : t > 0.0f ? tail : 2.0f - tail;
  return 0.5f * x * ec;
}

/* The loops of elem_loops.h for each instruction-set path. */
#define EL_ATTR
#define EL_NAME(x) x##_base
#include "backends/cpu/fast/elem_loops.h"
#undef EL_ATTR
#undef EL_NAME
#define EL_ATTR __attribute__((target("avx2,fma"))) /* the avx2 path requires FMA (fk_isa_cpu) */
#define EL_NAME(x) x##_avx2
#include "backends/cpu/fast/elem_loops.h"
#undef EL_ATTR
#undef EL_NAME
#define EL_ATTR __attribute__((target("avx512f")))
#define EL_NAME(x) x##_avx512
#include "backends/cpu/fast/elem_loops.h"
#undef EL_ATTR
#undef EL_NAME

bool fk_bin_f32_ok(rlx_binop op) { return binary_op_ok(op) || op == RLX_BINOP_POW; }

/* a ^ b, b a single element: the short forms of elem_loops.h; anything else through double pow,
 * rounded once (the reference's value). */
static void pow_run(const float *restrict a, size_t sa, const float *restrict b, size_t sb, float *restrict c,
                    size_t len) {
  if (sb == 0 && sa == 1) {
    fk_isa isa = fk_isa_active();
    bool done = isa == FK_ISA_AVX512 ? powc_avx512(b[0], a, c, len)
                : isa == FK_ISA_AVX2 ? powc_avx2(b[0], a, c, len)
                                     : powc_base(b[0], a, c, len);
    if (done) return;
  }
  for (size_t i = 0; i < len; i++) c[i] = (float)pow((double)a[i * sa], (double)b[i * sb]);
}

void fk_bin_f32(rlx_binop op, const float *restrict a, size_t sa, const float *restrict b, size_t sb, float *restrict c,
                size_t len) {
  if (op == RLX_BINOP_POW) {
    pow_run(a, sa, b, sb, c, len);
    return;
  }
  switch (fk_isa_active()) {
  case FK_ISA_AVX512: bin_avx512(op, a, sa, b, sb, c, len); break;
  case FK_ISA_AVX2: bin_avx2(op, a, sa, b, sb, c, len); break;
  default: bin_base(op, a, sa, b, sb, c, len); break;
  }
}

/* Work item = one row of the merged view (all axes but the last), or a BLOCK-sized piece of the
 * only axis when the view has rank 1. */
static void bin_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const bin_job *j = arg;
  const bview *v = &j->v;
  uint32_t r = v->rank;
  size_t inner = v->dims[r - 1];
  if (r == 1) {
    size_t s = lo * BLOCK, e = hi * BLOCK < inner ? hi * BLOCK : inner;
    fk_bin_f32(j->op, j->a + s * v->sa[0], v->sa[0], j->b + s * v->sb[0], v->sb[0], j->c + s, e - s);
    return;
  }
  for (size_t row = lo; row < hi; row++) {
    size_t rem = row, oa = 0, ob = 0;
    for (int k = (int)r - 2; k >= 0; k--) {
      size_t c = rem % v->dims[k];
      rem /= v->dims[k];
      oa += c * v->sa[k];
      ob += c * v->sb[k];
    }
    fk_bin_f32(j->op, j->a + oa, v->sa[r - 1], j->b + ob, v->sb[r - 1], j->c + row * inner, inner);
  }
}

FK_KERNEL(Binary) {
  (void)n_in;
  bin_job j;
  memset(&j, 0, sizeof j);
  binary_view(&in[0].shape, &in[1].shape, &out->shape, &j.v);
  j.op = (rlx_binop)n->attrs.Binary.op;
  j.a = in[0].data;
  j.b = in[1].data;
  j.c = out->data;
  if (fk_numel(&out->shape) == 0) return RLX_OK;
  size_t inner = j.v.dims[j.v.rank - 1];
  if (j.v.rank == 1)
    fk_parallel_for(ctx, (inner + BLOCK - 1) / BLOCK, 1, bin_task, &j);
  else
    fk_parallel_for(ctx, fk_numel(&out->shape) / inner, BLOCK / inner + 1, bin_task, &j);
  return RLX_OK;
}

/* ======================================================================================
 * Unary helpers: a parallel loop over [0, count) in BLOCK pieces
 * ====================================================================================== */

typedef void (*unary_fn)(const void *job, size_t s, size_t e);

typedef struct unary_job {
  unary_fn fn;
  const void *job;
  size_t count;
} unary_job;

static void unary_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const unary_job *u = arg;
  size_t s = lo * BLOCK, e = hi * BLOCK < u->count ? hi * BLOCK : u->count;
  u->fn(u->job, s, e);
}

static void run_blocks(rlx_cpu_ctx *ctx, size_t count, unary_fn fn, const void *job, size_t grain) {
  if (count == 0) return;
  unary_job u = {fn, job, count};
  fk_parallel_for(ctx, (count + BLOCK - 1) / BLOCK, grain, unary_task, &u);
}

/* ======================================================================================
 * Activation
 * ====================================================================================== */

static bool act_ok(rlx_act k) {
  switch (k) {
  case RLX_ACT_RELU:
  case RLX_ACT_NEG:
  case RLX_ACT_ABS:
  case RLX_ACT_SQRT:
  case RLX_ACT_RECIP:
  case RLX_ACT_EXP:
  case RLX_ACT_LOG:
  case RLX_ACT_SIGMOID:
  case RLX_ACT_TANH:
  case RLX_ACT_SILU:
  case RLX_ACT_GELU:
  case RLX_ACT_GELU_APPROX:
  case RLX_ACT_SOFTPLUS:
  case RLX_ACT_ERF:
  case RLX_ACT_HARD_SWISH:
  case RLX_ACT_HARD_SIGMOID: return true;
  default: return false;
  }
}

/* Same element count, f32 everywhere. */
static bool same_f32(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t want) {
  if (n_in != want || !fk_static_f32(&n->shape)) return false;
  for (uint32_t i = 0; i < n_in; i++)
    if (!fk_static_f32(&in[i].shape) || fk_numel(&in[i].shape) != fk_numel(&n->shape)) return false;
  return true;
}

FK_APPLIES(Activation) { return act_ok((rlx_act)n->attrs.Activation.kind) && same_f32(n, in, n_in, 1); }

static inline float sigmoidf(float x) {
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

static inline float softplusf(float x) { return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

typedef struct act_job {
  rlx_act kind;
  const float *x, *dy;
  float *y;
} act_job;

bool fk_act_f32_ok(rlx_act k) { return act_ok(k); }

void fk_act_f32(rlx_act kind, const float *restrict x, float *restrict y, size_t len) {
  fk_isa isa = fk_isa_active();
  if (isa == FK_ISA_AVX512 && kind == RLX_ACT_GELU) { /* FMA form: gelu_avx512.c */
    fk_gelu_avx512(x, y, len);
    return;
  }
  if (isa == FK_ISA_AVX2 && (kind == RLX_ACT_GELU || kind == RLX_ACT_ERF || kind == RLX_ACT_EXP)) {
    /* 8 lanes of intrinsics, the same bits: gelu_avx2.c */
    (kind == RLX_ACT_GELU ? fk_gelu_avx2 : kind == RLX_ACT_ERF ? fk_erf_avx2 : fk_exp_avx2)(x, y, len);
    return;
  }
  bool done = isa == FK_ISA_AVX512 ? act_avx512(kind, x, y, len)
              : isa == FK_ISA_AVX2 ? act_avx2(kind, x, y, len)
                                   : act_base(kind, x, y, len);
  if (done) return;
  const size_t s = 0, e = len;
  switch (kind) {
  case RLX_ACT_LOG:
    for (size_t i = s; i < e; i++) y[i] = logf(x[i]);
    break;
  case RLX_ACT_TANH:
    for (size_t i = s; i < e; i++) y[i] = tanhf(x[i]);
    break;
  default: /* RLX_ACT_SOFTPLUS */
    for (size_t i = s; i < e; i++) y[i] = softplusf(x[i]);
    break;
  }
}

static void act_block(const void *job, size_t s, size_t e) {
  const act_job *j = job;
  fk_act_f32(j->kind, j->x + s, j->y + s, e - s);
}

FK_KERNEL(Activation) {
  (void)n_in;
  act_job j = {(rlx_act)n->attrs.Activation.kind, in[0].data, NULL, out->data};
  bool cheap = j.kind == RLX_ACT_RELU || j.kind == RLX_ACT_NEG || j.kind == RLX_ACT_ABS;
  run_blocks(ctx, fk_numel(&out->shape), act_block, &j, cheap ? 4 : 1);
  return RLX_OK;
}

/* ======================================================================================
 * ReluBackward, ActivationBackward: [x, dy] -> dx
 * ====================================================================================== */

static bool x_dy_f32(const rlx_node *n, const rlx_tensor *in, uint32_t n_in) {
  return same_f32(n, in, n_in, 2) && fk_same_dims(&in[0].shape, &in[1].shape) && fk_same_dims(&in[0].shape, &n->shape);
}

FK_APPLIES(ReluBackward) { return x_dy_f32(n, in, n_in); }

static void relu_bwd_block(const void *job, size_t s, size_t e) {
  const act_job *j = job;
  const float *restrict x = j->x, *restrict dy = j->dy;
  float *restrict dx = j->y;
  for (size_t i = s; i < e; i++) {
    float d = dy[i]; /* read unconditionally: the select then vectorises (no branch) */
    dx[i] = x[i] > 0 ? d : 0.0f;
  }
}

FK_KERNEL(ReluBackward) {
  (void)n;
  (void)n_in;
  act_job j = {RLX_ACT_RELU, in[0].data, in[1].data, out->data};
  run_blocks(ctx, fk_numel(&out->shape), relu_bwd_block, &j, 4);
  return RLX_OK;
}

static bool act_bwd_ok(rlx_act k) {
  return k == RLX_ACT_RELU || k == RLX_ACT_SIGMOID || k == RLX_ACT_TANH || k == RLX_ACT_SILU || k == RLX_ACT_GELU ||
         k == RLX_ACT_EXP;
}

FK_APPLIES(ActivationBackward) {
  int k = n->attrs.ActivationBackward.kind;
  return k >= 0 && k < RLX_ACT_COUNT && act_bwd_ok((rlx_act)k) && x_dy_f32(n, in, n_in);
}

static void act_bwd_block(const void *job, size_t s, size_t e) {
  const act_job *j = job;
  const float *restrict x = j->x, *restrict dy = j->dy;
  float *restrict dx = j->y;
  switch (j->kind) {
  case RLX_ACT_RELU:
    for (size_t i = s; i < e; i++) {
      float d = dy[i];
      dx[i] = x[i] > 0 ? d : 0.0f;
    }
    break;
  case RLX_ACT_SIGMOID: /* s (1 - s) = sigmoid(x) sigmoid(-x) */
    for (size_t i = s; i < e; i++) dx[i] = dy[i] * (sigmoidf(x[i]) * sigmoidf(-x[i]));
    break;
  case RLX_ACT_TANH: /* 1 - tanh^2 = 1 / cosh^2 */
    for (size_t i = s; i < e; i++) {
      float c = 1.0f / coshf(x[i]);
      dx[i] = dy[i] * (c * c);
    }
    break;
  case RLX_ACT_SILU: /* s (1 + x (1 - s)), 1 - s = sigmoid(-x); 1 + x (1 - s) cancels near x = -1.28 */
    for (size_t i = s; i < e; i++) {
      double v = x[i], sg = v >= 0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v));
      dx[i] = (float)((double)dy[i] * (sg * (1.0 + v * (1.0 - sg))));
    }
    break;
  case RLX_ACT_GELU: /* Phi(x) + x phi(x): the two terms cancel near x = -2.4, so in double */
    for (size_t i = s; i < e; i++) {
      double v = x[i];
      dx[i] = (float)((double)dy[i] *
                      (0.5 * erfc(-v * 0.70710678118654752440) + v * 0.39894228040143267794 * exp(-0.5 * v * v)));
    }
    break;
  default: /* RLX_ACT_EXP */
    for (size_t i = s; i < e; i++) dx[i] = dy[i] * expf(x[i]);
    break;
  }
}

FK_KERNEL(ActivationBackward) {
  (void)n_in;
  act_job j = {(rlx_act)n->attrs.ActivationBackward.kind, in[0].data, in[1].data, out->data};
  run_blocks(ctx, fk_numel(&out->shape), act_bwd_block, &j, j.kind == RLX_ACT_RELU ? 4 : 1);
  return RLX_OK;
}

/* ======================================================================================
 * Where: [cond (bool), a, b] -> out, 4-byte values
 * ====================================================================================== */

FK_APPLIES(Where) {
  if (n_in != 3) return false;
  const rlx_shape *o = &n->shape;
  if (!rlx_shape_is_static(o) || rlx_dtype_size((rlx_dtype)o->dtype) != 4) return false;
  if (in[0].shape.dtype != RLX_BOOL || in[1].shape.dtype != o->dtype || in[2].shape.dtype != o->dtype) return false;
  for (uint32_t i = 0; i < 3; i++) {
    const rlx_shape *s = &in[i].shape;
    if (!rlx_shape_is_static(s)) return false;
    if (!fk_same_dims(s, o) && fk_numel(s) != 1) return false;
    if (fk_numel(s) == 1 && s->rank > o->rank) return false; /* a [1, 1] operand cannot broadcast to [3] */
  }
  return true;
}

typedef struct where_job {
  const uint8_t *c;
  const uint32_t *a, *b;
  uint32_t *o;
  bool cs, as, bs; /* single-element operands */
} where_job;

static void where_block(const void *job, size_t s, size_t e) {
  const where_job *j = job;
  uint32_t *restrict o = j->o;
  for (size_t i = s; i < e; i++) {
    bool c = j->c[j->cs ? 0 : i] != 0;
    o[i] = c ? j->a[j->as ? 0 : i] : j->b[j->bs ? 0 : i];
  }
}

FK_KERNEL(Where) {
  (void)n;
  (void)n_in;
  size_t count = fk_numel(&out->shape);
  where_job j = {in[0].data,
                 in[1].data,
                 in[2].data,
                 out->data,
                 fk_numel(&in[0].shape) == 1 && count != 1,
                 fk_numel(&in[1].shape) == 1 && count != 1,
                 fk_numel(&in[2].shape) == 1 && count != 1};
  run_blocks(ctx, count, where_block, &j, 4);
  return RLX_OK;
}

/* ======================================================================================
 * Clamp (f32): the reference clamps in double, but f32 values, f32 bounds and the result (one of
 * them) are exact in either, so the f32 compares give its bits (NaN passes, -0 stays).
 * mobilenet_v3's squeeze-excite HardSigmoid arrives from ONNX as a Clamp.
 * ====================================================================================== */

FK_APPLIES(Clamp) {
  if (n_in != 1) return false;
  const rlx_attrs_Clamp *a = &n->attrs.Clamp;
  if (a->min != a->min || a->max != a->max) return false; /* NaN bounds (the graph rejects them) */
  return fk_static_f32(&n->shape) && fk_static_f32(&in[0].shape) && fk_numel(&in[0].shape) == fk_numel(&n->shape);
}

typedef struct clamp_job {
  const float *x;
  float *y;
  float lo, hi;
} clamp_job;

static void clamp_block(const void *job, size_t s, size_t e) {
  const clamp_job *j = job;
  const float *restrict x = j->x;
  float *restrict y = j->y;
  float lo = j->lo, hi = j->hi;
  for (size_t i = s; i < e; i++) {
    float v = x[i];
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

FK_KERNEL(Clamp) {
  (void)n_in;
  clamp_job j = {.x = in[0].data, .y = out->data, .lo = n->attrs.Clamp.min, .hi = n->attrs.Clamp.max};
  run_blocks(ctx, fk_numel(&out->shape), clamp_block, &j, 4);
  return RLX_OK;
}

/* ======================================================================================
 * Cast: f32 <-> f64 / i32 / i64 / u8 / bool
 * ====================================================================================== */

static bool cast_side_ok(rlx_dtype t) {
  return t == RLX_F64 || t == RLX_I32 || t == RLX_I64 || t == RLX_U8 || t == RLX_BOOL;
}

FK_APPLIES(Cast) {
  if (n_in != 1) return false;
  const rlx_shape *x = &in[0].shape, *o = &n->shape;
  if (!rlx_shape_is_static(x) || !rlx_shape_is_static(o) || fk_numel(x) != fk_numel(o)) return false;
  rlx_dtype s = (rlx_dtype)x->dtype, t = (rlx_dtype)o->dtype;
  return (s == RLX_F32 && (t == RLX_F32 || cast_side_ok(t))) || (t == RLX_F32 && cast_side_ok(s));
}

typedef struct cast_job {
  rlx_dtype from, to;
  const void *x;
  void *y;
} cast_job;

/* f32 -> integer: truncate toward zero, saturate, NaN -> 0 (the reference's rule). */
static inline int32_t f2i32(float v) {
  return v != v ? 0 : v >= 2147483648.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : (int32_t)v;
}
static inline int64_t f2i64(float v) {
  return v != v ? 0 : v >= 9223372036854775808.0f ? INT64_MAX : v <= -9223372036854775808.0f ? INT64_MIN : (int64_t)v;
}
static inline uint8_t f2u8(float v) { return v != v ? 0 : v >= 255.0f ? 255 : v <= 0.0f ? 0 : (uint8_t)v; }

static void cast_block(const void *job, size_t s, size_t e) {
  const cast_job *j = job;
  if (j->from == RLX_F32) {
    const float *restrict x = j->x;
    switch (j->to) {
    case RLX_F32: memcpy((float *)j->y + s, x + s, (e - s) * sizeof *x); break;
    case RLX_F64:
      for (size_t i = s; i < e; i++) ((double *)j->y)[i] = x[i];
      break;
    case RLX_I32:
      for (size_t i = s; i < e; i++) ((int32_t *)j->y)[i] = f2i32(x[i]);
      break;
    case RLX_I64:
      for (size_t i = s; i < e; i++) ((int64_t *)j->y)[i] = f2i64(x[i]);
      break;
    case RLX_U8:
      for (size_t i = s; i < e; i++) ((uint8_t *)j->y)[i] = f2u8(x[i]);
      break;
    default: /* bool: x != 0 (NaN is true) */
      for (size_t i = s; i < e; i++) ((uint8_t *)j->y)[i] = x[i] != 0;
      break;
    }
    return;
  }
  float *restrict y = j->y;
  switch (j->from) {
  case RLX_F64:
    for (size_t i = s; i < e; i++) y[i] = (float)((const double *)j->x)[i];
    break;
  case RLX_I32:
    for (size_t i = s; i < e; i++) y[i] = (float)((const int32_t *)j->x)[i];
    break;
  case RLX_I64:
    for (size_t i = s; i < e; i++) y[i] = (float)((const int64_t *)j->x)[i];
    break;
  case RLX_U8:
    for (size_t i = s; i < e; i++) y[i] = (float)((const uint8_t *)j->x)[i];
    break;
  default: /* bool */
    for (size_t i = s; i < e; i++) y[i] = ((const uint8_t *)j->x)[i] != 0 ? 1.0f : 0.0f;
    break;
  }
}

FK_KERNEL(Cast) {
  (void)n;
  (void)n_in;
  cast_job j = {(rlx_dtype)in[0].shape.dtype, (rlx_dtype)out->shape.dtype, in[0].data, out->data};
  run_blocks(ctx, fk_numel(&out->shape), cast_block, &j, 4);
  return RLX_OK;
}
