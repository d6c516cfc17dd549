/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 2-D pooling (NCHW), threads over the N*C planes.
 *   Pool Max / Mean      the reference's semantics exactly: Max skips padded cells, keeps the
 *                        earlier of equal values and propagates NaN; Mean divides the sum of the
 *                        real cells by kh*kw (in f32 here)
 *   MaxPool2dBackward    each output cell's dy goes to the first maximum of its window (row-major,
 *                        NaN wins, padding never does); overlapping windows accumulate
 * A 2x2 window with stride 2 and no padding (the common case) has its own loop; other max windows
 * (resnet's 3x3 stride 2 pad 1) run separably, a row pass then a column pass over vectors. */
#include <limits.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"
#include "infer_conv_util.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct pgeo {
  size_t planes, H, W, Ho, Wo, kh, kw, sh, sw;
  int64_t ph, pw;
} pgeo;

/* Reads the window attributes and checks x -> y extents. */
static bool pool_geo(const rlx_ilist *ks, const rlx_ilist *stride, const rlx_ilist *padding, const rlx_shape *x,
                     const rlx_shape *y, pgeo *g) {
  cu_geom c;
  if (cu_pool_geom(2, ks, stride, padding, &c) != RLX_OK) return false;
  if (x->rank != 4 || y->rank != 4 || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1]) return false;
  for (uint32_t i = 0; i < 2; i++) {
    int64_t padded = x->dims[2 + i] + c.pb[i] + c.pe[i];
    if (padded < c.k[i] || (padded - c.k[i]) / c.s[i] + 1 != y->dims[2 + i]) return false;
  }
  g->planes = (size_t)x->dims[0] * (size_t)x->dims[1];
  g->H = (size_t)x->dims[2];
  g->W = (size_t)x->dims[3];
  g->Ho = (size_t)y->dims[2];
  g->Wo = (size_t)y->dims[3];
  g->kh = (size_t)c.k[0];
  g->kw = (size_t)c.k[1];
  g->sh = (size_t)c.s[0];
  g->sw = (size_t)c.s[1];
  g->ph = c.pb[0];
  g->pw = c.pb[1];
  return g->kh * g->kw <= INT_MAX;
}

static bool is_2x2s2(const pgeo *g) {
  return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0;
}

/* The reference's running max: a later value wins only when larger; NaN sticks. */
static inline float run_max(float acc, float v) { return (v > acc || v != v) ? v : acc; }

/* Valid window rows / cols of output cell (o) along one axis: taps [lo, hi). */
static inline void taps(size_t o, size_t s, int64_t p, size_t k, size_t in, size_t *lo, size_t *hi) {
  int64_t start = (int64_t)(o * s) - p, l = start < 0 ? -start : 0, h = (int64_t)k;
  if (start + h > (int64_t)in) h = (int64_t)in - start;
  if (h < l) h = l;
  *lo = (size_t)l;
  *hi = (size_t)h;
}

/* ======================================================================================
 * The 2x2 stride-2 rows (SSE2 where available: 4 windows per step)
 * ====================================================================================== */

#if defined(__SSE2__)
/* x <- v where mask, else x */
static inline __m128 sel(__m128 mask, __m128 v, __m128 x) {
  return _mm_or_ps(_mm_and_ps(mask, v), _mm_andnot_ps(mask, x));
}
/* run_max of 4 lanes: v wins when larger or NaN */
static inline __m128 run_max4(__m128 acc, __m128 v) {
  return sel(_mm_or_ps(_mm_cmpgt_ps(v, acc), _mm_cmpunord_ps(v, v)), v, acc);
}
/* beats(v, best) of 4 lanes */
static inline __m128 beats4(__m128 v, __m128 best) {
  return _mm_and_ps(_mm_cmpord_ps(best, best), _mm_or_ps(_mm_cmpunord_ps(v, v), _mm_cmpgt_ps(v, best)));
}
#endif

/* y[ow] = max of the window (r0, r1) x (2ow, 2ow+1), in the reference's order. */
static void max2x2_row(const float *r0, const float *r1, float *y, size_t Wo) {
  size_t ow = 0;
#if defined(__SSE2__)
  /* 4 windows per step; a ragged end redoes the last 4 (same values) */
  for (size_t next = 0; Wo >= 4 && next < Wo; next += 4) {
    ow = next + 4 <= Wo ? next : Wo - 4;
    __m128 p = _mm_loadu_ps(r0 + 2 * ow), q = _mm_loadu_ps(r0 + 2 * ow + 4);
    __m128 u = _mm_loadu_ps(r1 + 2 * ow), w = _mm_loadu_ps(r1 + 2 * ow + 4);
    __m128 a = _mm_shuffle_ps(p, q, _MM_SHUFFLE(2, 0, 2, 0)), b = _mm_shuffle_ps(p, q, _MM_SHUFFLE(3, 1, 3, 1));
    __m128 c = _mm_shuffle_ps(u, w, _MM_SHUFFLE(2, 0, 2, 0)), e = _mm_shuffle_ps(u, w, _MM_SHUFFLE(3, 1, 3, 1));
    _mm_storeu_ps(y + ow, run_max4(run_max4(run_max4(a, b), c), e));
    ow = Wo;
  }
#endif
  for (; ow < Wo; ow++) /* -inf < r0[2ow] unless it is -inf: starting from it is the same */
    y[ow] = run_max(run_max(run_max(r0[2 * ow], r0[2 * ow + 1]), r1[2 * ow]), r1[2 * ow + 1]);
}

/* Does a beat the current best b (first maximum wins; NaN beats everything; the first NaN stays)? */
static inline bool beats(float a, float b) { return (b == b) & ((a != a) | (a > b)); }

/* dy of each window to its first maximum, 0 to the window's other cells (all four written). With
 * z0 / z1 (the executor's MaxPool2dBackward + ReluBackward fusion) a cell keeps its value only
 * where z > 0. o0 / o1 may be x0 / x1 themselves: every window is read before it is written (the
 * ragged last step, which redoes windows, reads copies taken before any store). */
static void max2x2_bwd_row(const float *x0, const float *x1, const float *d, const float *z0, const float *z1,
                           bool mask_x, float *o0, float *o1, size_t Wo) {
  size_t ow = 0;
#if defined(__SSE2__)
  float t0[8], t1[8];
  if (Wo >= 4 && Wo % 4) {
    memcpy(t0, x0 + 2 * (Wo - 4), sizeof t0);
    memcpy(t1, x1 + 2 * (Wo - 4), sizeof t1);
  }
  for (size_t next = 0; Wo >= 4 && next < Wo; next += 4) {
    bool redo = next + 4 > Wo;
    ow = redo ? Wo - 4 : next;
    const float *a0 = redo ? t0 : x0 + 2 * ow, *a1 = redo ? t1 : x1 + 2 * ow;
    __m128 p = _mm_loadu_ps(a0), q = _mm_loadu_ps(a0 + 4);
    __m128 u = _mm_loadu_ps(a1), w = _mm_loadu_ps(a1 + 4);
    __m128 a = _mm_shuffle_ps(p, q, _MM_SHUFFLE(2, 0, 2, 0)), b = _mm_shuffle_ps(p, q, _MM_SHUFFLE(3, 1, 3, 1));
    __m128 c = _mm_shuffle_ps(u, w, _MM_SHUFFLE(2, 0, 2, 0)), e = _mm_shuffle_ps(u, w, _MM_SHUFFLE(3, 1, 3, 1));
    /* one-hot lane masks of the winner: s0 (a), s1 (b), s2 (c), s3 (e) */
    __m128 best = a, s0 = _mm_castsi128_ps(_mm_set1_epi32(-1));
    __m128 s1 = beats4(b, best);
    best = sel(s1, b, best);
    s0 = _mm_andnot_ps(s1, s0);
    __m128 s2 = beats4(c, best);
    best = sel(s2, c, best);
    s0 = _mm_andnot_ps(s2, s0);
    s1 = _mm_andnot_ps(s2, s1);
    __m128 s3 = beats4(e, best);
    s0 = _mm_andnot_ps(s3, s0);
    s1 = _mm_andnot_ps(s3, s1);
    s2 = _mm_andnot_ps(s3, s2);
    __m128 gv = _mm_loadu_ps(d + ow);
    __m128 ga = _mm_and_ps(s0, gv), gb = _mm_and_ps(s1, gv), gc = _mm_and_ps(s2, gv), ge = _mm_and_ps(s3, gv);
    __m128 r0 = _mm_unpacklo_ps(ga, gb), r1 = _mm_unpackhi_ps(ga, gb), r2 = _mm_unpacklo_ps(gc, ge),
           r3 = _mm_unpackhi_ps(gc, ge);
    if (mask_x) { /* x = relu(z): the loaded cells themselves */
      __m128 zero = _mm_setzero_ps();
      r0 = _mm_and_ps(r0, _mm_cmpgt_ps(p, zero));
      r1 = _mm_and_ps(r1, _mm_cmpgt_ps(q, zero));
      r2 = _mm_and_ps(r2, _mm_cmpgt_ps(u, zero));
      r3 = _mm_and_ps(r3, _mm_cmpgt_ps(w, zero));
    } else if (z0) {
      __m128 zero = _mm_setzero_ps();
      r0 = _mm_and_ps(r0, _mm_cmpgt_ps(_mm_loadu_ps(z0 + 2 * ow), zero));
      r1 = _mm_and_ps(r1, _mm_cmpgt_ps(_mm_loadu_ps(z0 + 2 * ow + 4), zero));
      r2 = _mm_and_ps(r2, _mm_cmpgt_ps(_mm_loadu_ps(z1 + 2 * ow), zero));
      r3 = _mm_and_ps(r3, _mm_cmpgt_ps(_mm_loadu_ps(z1 + 2 * ow + 4), zero));
    }
    _mm_storeu_ps(o0 + 2 * ow, r0);
    _mm_storeu_ps(o0 + 2 * ow + 4, r1);
    _mm_storeu_ps(o1 + 2 * ow, r2);
    _mm_storeu_ps(o1 + 2 * ow + 4, r3);
    ow = Wo;
  }
#endif
  for (; ow < Wo; ow++) {
    float a = x0[2 * ow], b = x0[2 * ow + 1], c = x1[2 * ow], e = x1[2 * ow + 1], gv = d[ow], bv = a;
    int bi = 0;
    if (beats(b, bv)) bv = b, bi = 1;
    if (beats(c, bv)) bv = c, bi = 2;
    if (beats(e, bv)) bi = 3;
    bool m0 = mask_x ? a > 0 : !z0 || z0[2 * ow] > 0, m1 = mask_x ? b > 0 : !z0 || z0[2 * ow + 1] > 0;
    bool m2 = mask_x ? c > 0 : !z1 || z1[2 * ow] > 0, m3 = mask_x ? e > 0 : !z1 || z1[2 * ow + 1] > 0;
    o0[2 * ow] = bi == 0 && m0 ? gv : 0.0f;
    o0[2 * ow + 1] = bi == 1 && m1 ? gv : 0.0f;
    o1[2 * ow] = bi == 2 && m2 ? gv : 0.0f;
    o1[2 * ow + 1] = bi == 3 && m3 ? gv : 0.0f;
  }
}

/* ---- the same rows with AVX-512 (16 windows per step, masked at the end of a row), and the
 * bias gradient's plane sums four planes at a time; same values: selections, copies and
 * fk_sum_run's additions in fk_sum_run's order (per plane, lane l of 8 doubles sums the elements
 * i = l mod 8 in order), only the planes' chains interleaved ---- */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_POOL512 1
#define TGT512 __attribute__((target("avx512f")))


/* Windows [ow, ow + n) (n <= 16) of rows r0, r1: the window cells a (r0, 2ow), b (r0, 2ow+1),
 * c (r1, 2ow), e (r1, 2ow+1), and the raw rows p, q (r0) and u, w (r1). */
typedef struct win16 {
  __m512 a, b, c, e, p, q, u, w;
} win16;

TGT512 static inline void load_win16(const float *r0, const float *r1, size_t n, win16 *t) {
  __mmask16 m0 = fk_lanes16(2 * n), m1 = fk_lanes16(2 * n > 16 ? 2 * n - 16 : 0);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  t->p = _mm512_maskz_loadu_ps(m0, r0);
  t->q = _mm512_maskz_loadu_ps(m1, r0 + 16);
  t->u = _mm512_maskz_loadu_ps(m0, r1);
  t->w = _mm512_maskz_loadu_ps(m1, r1 + 16);
  t->a = _mm512_permutex2var_ps(t->p, even, t->q);
  t->b = _mm512_permutex2var_ps(t->p, odd, t->q);
  t->c = _mm512_permutex2var_ps(t->u, even, t->w);
  t->e = _mm512_permutex2var_ps(t->u, odd, t->w);
}

/* run_max: v wins when larger or NaN */
TGT512 static inline __m512 run_max16(__m512 acc, __m512 v) {
  __mmask16 m = _mm512_cmp_ps_mask(v, acc, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(acc, m, v);
}

/* beats(v, best) */
TGT512 static inline __mmask16 beats16(__m512 v, __m512 best) {
  return _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q) &
         (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ));
}

TGT512 static void max2x2_row512(const float *r0, const float *r1, float *y, size_t Wo) {
  for (size_t ow = 0; ow < Wo; ow += 16) {
    size_t n = Wo - ow < 16 ? Wo - ow : 16;
    win16 t;
    load_win16(r0 + 2 * ow, r1 + 2 * ow, n, &t);
    _mm512_mask_storeu_ps(y + ow, fk_lanes16(n), run_max16(run_max16(run_max16(t.a, t.b), t.c), t.e));
  }
}

TGT512 static void max2x2_bwd_row512(const float *x0, const float *x1, const float *d, const float *z0, const float *z1,
                                     bool mask_x, float *o0, float *o1, size_t Wo) {
  const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  const __m512 zero = _mm512_setzero_ps();
  for (size_t ow = 0; ow < Wo; ow += 16) {
    size_t n = Wo - ow < 16 ? Wo - ow : 16;
    __mmask16 m0 = fk_lanes16(2 * n), m1 = fk_lanes16(2 * n > 16 ? 2 * n - 16 : 0);
    win16 t;
    load_win16(x0 + 2 * ow, x1 + 2 * ow, n, &t); /* the whole step is read before it is written */
    /* one-hot masks of the winner: s0 (a), s1 (b), s2 (c), s3 (e) */
    __m512 best = t.a;
    __mmask16 s1 = beats16(t.b, best);
    best = _mm512_mask_mov_ps(best, s1, t.b);
    __mmask16 s2 = beats16(t.c, best);
    best = _mm512_mask_mov_ps(best, s2, t.c);
    __mmask16 s3 = beats16(t.e, best);
    s2 &= (__mmask16)~s3;
    s1 &= (__mmask16) ~(s2 | s3);
    __mmask16 s0 = (__mmask16) ~(s1 | s2 | s3);
    __m512 g = _mm512_maskz_loadu_ps(fk_lanes16(n), d + ow);
    __m512 ga = _mm512_maskz_mov_ps(s0, g), gb = _mm512_maskz_mov_ps(s1, g), gc = _mm512_maskz_mov_ps(s2, g),
           ge = _mm512_maskz_mov_ps(s3, g);
    __m512 r0 = _mm512_permutex2var_ps(ga, lo, gb), r1 = _mm512_permutex2var_ps(ga, hi, gb);
    __m512 r2 = _mm512_permutex2var_ps(gc, lo, ge), r3 = _mm512_permutex2var_ps(gc, hi, ge);
    if (mask_x) { /* x = relu(z): the loaded cells themselves */
      r0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t.p, zero, _CMP_GT_OQ), r0);
      r1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t.q, zero, _CMP_GT_OQ), r1);
      r2 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t.u, zero, _CMP_GT_OQ), r2);
      r3 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t.w, zero, _CMP_GT_OQ), r3);
    } else if (z0) {
      r0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m0, z0 + 2 * ow), zero, _CMP_GT_OQ), r0);
      r1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m1, z0 + 2 * ow + 16), zero, _CMP_GT_OQ), r1);
      r2 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m0, z1 + 2 * ow), zero, _CMP_GT_OQ), r2);
      r3 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m1, z1 + 2 * ow + 16), zero, _CMP_GT_OQ), r3);
    }
    _mm512_mask_storeu_ps(o0 + 2 * ow, m0, r0);
    _mm512_mask_storeu_ps(o0 + 2 * ow + 16, m1, r1);
    _mm512_mask_storeu_ps(o1 + 2 * ow, m0, r2);
    _mm512_mask_storeu_ps(o1 + 2 * ow + 16, m1, r3);
  }
}

/* out[k] = fk_sum_run(x + k * stride, len) for k < np (np <= 4). */
TGT512 static void sum_planes512(const float *x, size_t stride, size_t len, int np, double *out) {
  __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
  size_t i = 0;
  for (; i + 8 <= len; i += 8)
    for (int k = 0; k < 4; k++)
      if (k < np) acc[k] = _mm512_add_pd(acc[k], _mm512_cvtps_pd(_mm256_loadu_ps(x + k * stride + i)));
  for (int k = 0; k < np; k++) {
    double a[8];
    _mm512_storeu_pd(a, acc[k]);
    double s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (size_t t = i; t < len; t++) s += (double)x[k * stride + t];
    out[k] = s;
  }
}
#endif

/* Rows of fewer windows keep the SSE2 loops (one 16-window step would be mostly masked lanes and
 * permutes: the CNN's 7-window rows ran slower with it). */
#define POOL512_MIN_WO 12

static bool pool512(void) {
#if HAVE_POOL512
  return fk_isa_active() >= FK_ISA_AVX512;
#else
  return false;
#endif
}

/* ======================================================================================
 * Max windows of any size, stride and padding: separable
 * hmax[r][ow] = the running max over the taps of input row r (the reference's order), then
 * y[oh][ow] = the running max of hmax over the window's rows. This is the reference's value
 * exactly: without NaN the reference keeps the first maximum in row-major order, which is the
 * first maximum of the first row holding the window's maximum (what the two passes keep); with
 * NaN it keeps the last NaN in row-major order, the last NaN of the last row holding one. Padded
 * cells are -inf, which never wins a comparison.
 * ====================================================================================== */

/* The max-pool rows of one plane need a padded row (wp floats), its sw phases (sw * lp) and the
 * row maxima of every input row (H * Wo). */
typedef struct sepmax {
  size_t wp, lp;
} sepmax;

static sepmax sepmax_geo(const pgeo *g) {
  sepmax s = {.lp = g->Wo + (g->kw - 1) / g->sw + 1};
  s.wp = s.lp * g->sw; /* >= Wo*sw + kw: every tap, and every phase cell */
  return s;
}

static size_t sepmax_floats(const pgeo *g) {
  sepmax s = sepmax_geo(g);
  return fk_align64((s.wp + g->sw * s.lp + g->H * g->Wo) * sizeof(float)) / sizeof(float);
}

#if HAVE_POOL512
TGT512 static void runmax_span512(float *restrict acc, const float *restrict v, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = fk_lanes16(n - i);
    __m512 a = _mm512_maskz_loadu_ps(m, acc + i);
    _mm512_mask_storeu_ps(acc + i, m, run_max16(a, _mm512_maskz_loadu_ps(m, v + i)));
  }
}

/* even[j] = r[2j], odd[j] = r[2j + 1] for j < n */
TGT512 static void deinterleave512(const float *r, float *restrict even, float *restrict odd, size_t n) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (size_t j = 0; j < n; j += 16) {
    size_t m = n - j < 16 ? n - j : 16;
    __m512 p = _mm512_maskz_loadu_ps(fk_lanes16(2 * m), r + 2 * j);
    __m512 q = _mm512_maskz_loadu_ps(fk_lanes16(2 * m > 16 ? 2 * m - 16 : 0), r + 2 * j + 16);
    _mm512_mask_storeu_ps(even + j, fk_lanes16(m), _mm512_permutex2var_ps(p, ev, q));
    _mm512_mask_storeu_ps(odd + j, fk_lanes16(m), _mm512_permutex2var_ps(p, od, q));
  }
}
#endif

#if HAVE_POOL512
/* Lanes l of a 16-float load at column s (may be negative) with 0 <= s + l < W. */
TGT512 static inline __mmask16 cols16(int64_t s, size_t W) {
  int64_t lo = s < 0 ? -s : 0, hi = (int64_t)W - s;
  if (lo > 16) lo = 16;
  if (hi > 16) hi = 16;
  if (hi <= lo) return 0;
  return (__mmask16)((((uint32_t)1 << hi) - 1u) & ~(((uint32_t)1 << lo) - 1u));
}

/* The 3x3 stride-2 max-pool of one plane (resnet's, begin padding 0..2) with the window in
 * registers: per 16 outputs of a row, each valid input row's three taps (columns 2 ow - pw + k,
 * two deinterleaved pairs of masked loads, -inf outside the row; the address formed as an integer
 * so that no pointer goes before the row) in tap order, then the rows in order, a row's maxima
 * computed once for the two output rows that share it, the input read row by row in order with
 * the next rows prefetched: the running maxima of maxpool_plane's two passes, so its values (first
 * maximum, NaN sticks, padding -inf), without the passes over memory (resnet18's pool, 1 thread:
 * 0.50-0.55 -> 0.25-0.33 ms at b1, 19.6-21 -> 11.4-14 ms at b32). */
static bool is_3x3s2(const pgeo *g) {
  return g->kh == 3 && g->kw == 3 && g->sh == 2 && g->sw == 2 && g->ph >= 0 && g->ph <= 2 && g->pw >= 0 && g->pw <= 2 &&
         g->Wo <= 1024;
}

/* The row maxima of 16 windows: taps 0, 1, 2 of input row `row` at columns c + 2j + k, in order */
TGT512 static inline __m512 rowmax3s2(const float *row, int64_t c, const __mmask16 m[4]) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  const float *p = (const float *)((uintptr_t)row + (uintptr_t)(c * (int64_t)sizeof(float)));
  __m512 a = _mm512_mask_loadu_ps(ninf, m[0], p), b = _mm512_mask_loadu_ps(ninf, m[1], p + 16);
  __m512 a2 = _mm512_mask_loadu_ps(ninf, m[2], p + 2), b2 = _mm512_mask_loadu_ps(ninf, m[3], p + 18);
  __m512 h = run_max16(ninf, _mm512_permutex2var_ps(a, ev, b));
  h = run_max16(h, _mm512_permutex2var_ps(a, od, b));
  return run_max16(h, _mm512_permutex2var_ps(a2, ev, b2));
}

#define MAX3_BLOCKS 64 /* output rows of at most 1024 windows (else the separable passes) */
TGT512 static void max3x3s2_plane512(const pgeo *g, const float *x, float *y) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  size_t nb = (g->Wo + 15) / 16;
  __mmask16 m[MAX3_BLOCKS][4];
  __m512 acc[MAX3_BLOCKS], shared[MAX3_BLOCKS]; /* shared: the maxima of input row `last` */
  for (size_t b = 0; b < nb; b++) {
    int64_t c = (int64_t)(32 * b) - g->pw;
    m[b][0] = cols16(c, g->W), m[b][1] = cols16(c + 16, g->W), m[b][2] = cols16(c + 2, g->W);
    m[b][3] = cols16(c + 18, g->W);
  }
  int64_t last = -1;
  for (size_t oh = 0; oh < g->Ho; oh++) { /* row by row, so that the input streams in order */
    size_t il, ih;
    taps(oh, 2, g->ph, 3, g->H, &il, &ih);
    int64_t r0 = (int64_t)(2 * oh) - g->ph;
    for (size_t b = 0; b < nb; b++) acc[b] = ninf;
    for (size_t i = il; i < ih; i++) {
      int64_t r = r0 + (int64_t)i;
      const float *row = x + (size_t)r * g->W;
      bool keep = i + 1 == ih; /* the next output row starts at this input row */
      /* the rows the next output row adds, ahead of time (the pool streams its input from memory at
         batch 32: without this the window kernel was slower there than the separable passes) */
      if (r != last && r + 2 < (int64_t)g->H)
        for (size_t k = 0; k < g->W; k += 16) _mm_prefetch((const char *)(row + 2 * g->W + k), _MM_HINT_T0);
      for (size_t b = 0; b < nb; b++) {
        __m512 h = r == last ? shared[b] : rowmax3s2(row, (int64_t)(32 * b) - g->pw, m[b]);
        if (keep) shared[b] = h;
        acc[b] = run_max16(acc[b], h);
      }
      if (keep) last = r;
    }
    for (size_t b = 0; b < nb; b++)
      _mm512_mask_storeu_ps(y + oh * g->Wo + 16 * b, fk_lanes16(g->Wo - 16 * b < 16 ? g->Wo - 16 * b : 16), acc[b]);
  }
}
#endif

/* acc[i] = run_max(acc[i], v[i]) for i < n */
static void runmax_span(bool wide, float *restrict acc, const float *restrict v, size_t n) {
  size_t i = 0;
#if HAVE_POOL512
  if (wide) {
    runmax_span512(acc, v, n);
    return;
  }
#else
  (void)wide;
#endif
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(acc + i, run_max4(_mm_loadu_ps(acc + i), _mm_loadu_ps(v + i)));
#endif
  for (; i < n; i++) acc[i] = run_max(acc[i], v[i]);
}

static void maxpool_plane(const pgeo *g, bool wide, const float *x, float *restrict y, float *scratch) {
  sepmax s = sepmax_geo(g);
  const float ninf = -__builtin_inff();
  float *prow = scratch, *phase = prow + s.wp, *hmax = phase + g->sw * s.lp;
  size_t pw = (size_t)g->pw; /* >= 0 (cu_pool_geom) */
  for (size_t j = 0; j < s.wp; j++) prow[j] = ninf;
  size_t ncopy = g->W < s.wp - pw ? g->W : s.wp - pw; /* columns past the last window are never read */
  for (size_t r = 0; r < g->H; r++) {
    float *h = hmax + r * g->Wo;
    memcpy(prow + pw, x + r * g->W, ncopy * sizeof(float));
    for (size_t ow = 0; ow < g->Wo; ow++) h[ow] = ninf;
    if (g->sw == 1) {
      for (size_t k = 0; k < g->kw; k++) runmax_span(wide, h, prow + k, g->Wo);
      continue;
    }
#if HAVE_POOL512
    if (wide && g->sw == 2) {
      deinterleave512(prow, phase, phase + s.lp, s.lp);
      for (size_t k = 0; k < g->kw; k++) runmax_span(wide, h, phase + (k % 2) * s.lp + k / 2, g->Wo);
      continue;
    }
#endif
    for (size_t m = 0; m < g->sw && m < g->kw; m++) {
      float *restrict ph = phase + m * s.lp;
      for (size_t j = 0; j < s.lp; j++) ph[j] = prow[j * g->sw + m];
    }
    for (size_t k = 0; k < g->kw; k++) runmax_span(wide, h, phase + (k % g->sw) * s.lp + k / g->sw, g->Wo);
  }
  for (size_t oh = 0; oh < g->Ho; oh++) {
    size_t il, ih;
    taps(oh, g->sh, g->ph, g->kh, g->H, &il, &ih);
    float *yr = y + oh * g->Wo;
    for (size_t ow = 0; ow < g->Wo; ow++) yr[ow] = ninf;
    size_t r0 = (size_t)((int64_t)(oh * g->sh) - g->ph); /* may wrap: cancels in r0 + i */
    for (size_t i = il; i < ih; i++) runmax_span(wide, yr, hmax + (r0 + i) * g->Wo, g->Wo);
  }
}

/* ======================================================================================
 * Pool
 * ====================================================================================== */

FK_APPLIES(Pool) {
  if (n_in != 1) return false;
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN) return false;
  if (!fk_static_f32(&in[0].shape) || !fk_static_f32(&n->shape)) return false;
  pgeo g;
  return pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &n->shape, &g);
}

typedef struct pool_job {
  pgeo g;
  bool is_max;
  const float *x, *dy;
  const float *z; /* MaxPool2dBackward + ReluBackward: the relu's input */
  bool mask_x;    /* ... whose mask is x > 0 (x = relu(z)) */
  float *y;
  double *plane_sums; /* ... + the bias gradient: fk_sum_run of every output plane */
  float *sep;         /* Pool Max off the 2x2 path: per chunk sep_floats of maxpool_plane's buffers */
  size_t sep_floats;
} pool_job;

static void pool_task(void *arg, size_t lo, size_t hi, int chunk) {
  const pool_job *j = arg;
  const pgeo *g = &j->g;
  float inv = 1.0f / (float)(g->kh * g->kw);
  bool wide = pool512() && g->Wo >= POOL512_MIN_WO;
  for (size_t p = lo; p < hi; p++) {
    const float *x = j->x + p * g->H * g->W;
    float *restrict y = j->y + p * g->Ho * g->Wo;
    if (is_2x2s2(g) && j->is_max) {
      for (size_t oh = 0; oh < g->Ho; oh++) {
        const float *r0 = x + 2 * oh * g->W, *r1 = r0 + g->W;
#if HAVE_POOL512
        if (wide) {
          max2x2_row512(r0, r1, y + oh * g->Wo, g->Wo);
          continue;
        }
#endif
        max2x2_row(r0, r1, y + oh * g->Wo, g->Wo);
      }
      continue;
    }
#if HAVE_POOL512
    if (j->is_max && pool512() && is_3x3s2(g)) {
      max3x3s2_plane512(g, x, y);
      continue;
    }
#endif
    if (j->sep) {
      maxpool_plane(g, pool512() && g->Wo >= 16, x, y, j->sep + (size_t)chunk * j->sep_floats);
      continue;
    }
    for (size_t oh = 0; oh < g->Ho; oh++) {
      size_t il, ih;
      taps(oh, g->sh, g->ph, g->kh, g->H, &il, &ih);
      for (size_t ow = 0; ow < g->Wo; ow++) {
        size_t jl, jh;
        taps(ow, g->sw, g->pw, g->kw, g->W, &jl, &jh);
        /* window origin (may lie in the padding: unsigned wrap-around cancels in r + i) */
        size_t r = (size_t)((int64_t)(oh * g->sh) - g->ph), c = (size_t)((int64_t)(ow * g->sw) - g->pw);
        float acc = j->is_max ? -__builtin_inff() : 0.0f;
        for (size_t i = il; i < ih; i++)
          for (size_t k = jl; k < jh; k++) {
            float v = x[(r + i) * g->W + c + k];
            acc = j->is_max ? run_max(acc, v) : acc + v;
          }
        y[oh * g->Wo + ow] = j->is_max ? acc : acc * inv;
      }
    }
  }
}

FK_KERNEL(Pool) {
  (void)n_in;
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  pool_job j;
  memset(&j, 0, sizeof j);
  pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &out->shape, &j.g);
  j.is_max = a->kind == RLX_REDUCE_MAX;
  j.x = in[0].data;
  j.y = out->data;
  if (fk_numel(&out->shape) == 0) return RLX_OK;
  size_t per_plane = j.g.Ho * j.g.Wo * j.g.kh * j.g.kw + 1, grain = 32768 / per_plane + 1;
  if (j.is_max && !is_2x2s2(&j.g) && j.g.pw >= 0 && j.g.ph >= 0) {
    j.sep_floats = sepmax_floats(&j.g);
    j.sep = fk_scratch(ctx, j.sep_floats * (size_t)fk_chunks(ctx, j.g.planes, grain) * sizeof(float));
    if (!j.sep) return rlx_errorf(RLX_ERR_OOM, "Pool: out of memory for the max-pool row buffers");
  }
  fk_parallel_for(ctx, j.g.planes, grain, pool_task, &j);
  if (j.sep) fk_scratch_release(ctx, j.sep);
  return RLX_OK;
}

/* ======================================================================================
 * MaxPool2dBackward: [x, dy] -> dx
 * ====================================================================================== */

FK_APPLIES(MaxPool2dBackward) {
  if (n_in != 2) return false;
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  const rlx_shape *x = &in[0].shape, *dy = &in[1].shape;
  if (!fk_static_f32(x) || !fk_static_f32(dy) || !fk_static_f32(&n->shape) || !fk_same_dims(x, &n->shape)) return false;
  pgeo g;
  return pool_geo(&a->kernel_size, &a->stride, &a->padding, x, dy, &g);
}

static void maxpool_bwd_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const pool_job *j = arg;
  const pgeo *g = &j->g;
  bool wide = pool512(), rows512 = wide && g->Wo >= POOL512_MIN_WO;
  size_t summed = lo; /* AVX-512: planes lo .. summed-1 have their sums (taken four at a time) */
  for (size_t p = lo; p < hi; p++) {
    const float *x = j->x + p * g->H * g->W, *dy = j->dy + p * g->Ho * g->Wo;
    float *dx = j->y + p * g->H * g->W;
    const float *z = j->z ? j->z + p * g->H * g->W : NULL;
    if (is_2x2s2(g)) {
      /* Windows tile the plane (an odd last row / column belongs to none): every covered cell is
         written, branch-free, the rest zeroed. */
      for (size_t oh = 0; oh < g->Ho; oh++) {
        float *o0 = dx + 2 * oh * g->W, *o1 = o0 + g->W;
        const float *z0 = z ? z + 2 * oh * g->W : NULL, *z1 = z ? z0 + g->W : NULL;
        const float *x0 = x + 2 * oh * g->W, *x1 = x0 + g->W, *d = dy + oh * g->Wo;
#if HAVE_POOL512
        if (rows512)
          max2x2_bwd_row512(x0, x1, d, z0, z1, j->mask_x, o0, o1, g->Wo);
        else
#endif
          max2x2_bwd_row(x0, x1, d, z0, z1, j->mask_x, o0, o1, g->Wo);
        if (g->W > 2 * g->Wo) o0[g->W - 1] = o1[g->W - 1] = 0.0f;
      }
      if (g->H > 2 * g->Ho) memset(dx + (g->H - 1) * g->W, 0, g->W * sizeof *dx);
      if (!j->plane_sums) continue;
#if HAVE_POOL512
      if (wide) {
        if (p + 1 - summed == 4 || p + 1 == hi) {
          sum_planes512(j->y + summed * g->H * g->W, g->H * g->W, g->H * g->W, (int)(p + 1 - summed),
                        j->plane_sums + summed);
          summed = p + 1;
        }
        continue;
      }
#endif
      j->plane_sums[p] = fk_sum_run(dx, g->H * g->W);
      continue;
    }
    memset(dx, 0, g->H * g->W * sizeof *dx);
    for (size_t oh = 0; oh < g->Ho; oh++) {
      size_t il, ih;
      taps(oh, g->sh, g->ph, g->kh, g->H, &il, &ih);
      for (size_t ow = 0; ow < g->Wo; ow++) {
        size_t jl, jh;
        taps(ow, g->sw, g->pw, g->kw, g->W, &jl, &jh);
        if (il >= ih || jl >= jh) continue; /* a window of padding only */
        size_t r = (size_t)((int64_t)(oh * g->sh) - g->ph), c = (size_t)((int64_t)(ow * g->sw) - g->pw);
        size_t best = (r + il) * g->W + c + jl;
        for (size_t i = il; i < ih; i++)
          for (size_t k = jl; k < jh; k++) {
            size_t at = (r + i) * g->W + c + k;
            if (beats(x[at], x[best])) best = at;
          }
        dx[best] += dy[oh * g->Wo + ow];
      }
    }
    if (z || j->mask_x) { /* (never in place here: only 2x2 windows are fused in place) */
      const float *m = z ? z : x;
      for (size_t i = 0; i < g->H * g->W; i++) dx[i] = m[i] > 0 ? dx[i] : 0.0f;
    }
    if (j->plane_sums) j->plane_sums[p] = fk_sum_run(dx, g->H * g->W);
  }
}

static rlx_status maxpool_bwd(const rlx_node *n, const rlx_tensor *in, bool relu, const float *z, float *dx,
                              double *plane_sums, rlx_cpu_ctx *ctx) {
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  pool_job j;
  memset(&j, 0, sizeof j);
  pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &in[1].shape, &j.g);
  j.is_max = true;
  j.x = in[0].data;
  j.dy = in[1].data;
  j.z = z;
  j.mask_x = relu && !z;
  j.y = dx;
  j.plane_sums = plane_sums;
  if (fk_numel(&in[0].shape) == 0) return RLX_OK;
  size_t per_plane = j.g.H * j.g.W + j.g.Ho * j.g.Wo * j.g.kh * j.g.kw + 1;
  fk_parallel_for(ctx, j.g.planes, 32768 / per_plane + 1, maxpool_bwd_task, &j);
  return RLX_OK;
}

FK_KERNEL(MaxPool2dBackward) {
  (void)n_in;
  return maxpool_bwd(n, in, false, NULL, out->data, NULL, ctx);
}

bool rlx_fast_maxpool_relu_bwd_applies(const rlx_node *mpb, const rlx_tensor *in, uint32_t n_in, const rlx_shape *z) {
  if (!rlx_fast_applies_MaxPool2dBackward(mpb, in, n_in) || !fk_static_f32(z) || !fk_same_dims(z, &in[0].shape))
    return false;
  pgeo g;
  const rlx_attrs_MaxPool2dBackward *a = &mpb->attrs.MaxPool2dBackward;
  return pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &in[1].shape, &g) && is_2x2s2(&g);
}

rlx_status rlx_fast_maxpool_relu_bwd(const rlx_node *mpb, const rlx_tensor *in, const float *z, float *dx,
                                     const rlx_node *reduce, float *reduce_out, rlx_cpu_ctx *ctx) {
  if (!reduce) return maxpool_bwd(mpb, in, true, z, dx, NULL, ctx);
  size_t planes = (size_t)in[0].shape.dims[0] * (size_t)in[0].shape.dims[1];
  double *sums = fk_scratch(ctx, planes * sizeof *sums);
  if (!sums) return rlx_errorf(RLX_ERR_OOM, "MaxPool2dBackward: out of memory for %zu plane sums", planes);
  rlx_status st = maxpool_bwd(mpb, in, true, z, dx, sums, ctx);
  if (st == RLX_OK) rlx_fast_reduce_planes_finish(reduce, &in[0].shape, sums, reduce_out);
  fk_scratch_release(ctx, sums);
  return st;
}
