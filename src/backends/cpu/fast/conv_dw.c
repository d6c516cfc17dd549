/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Depthwise convolution forward (one input plane per output plane), any stride and dilation,
 * non-negative padding, with the bias and an activation fused into the store; and the in-place
 * activation the other convolution paths apply after their GEMM.
 *
 * Phases: the zero-padded plane xpad [Hp][Wp] is stored as sh*sw phase planes [Hq][Wq],
 *   phase (pr, pc) [i][j] = xpad[i*sh + pr][j*sw + pc],
 * so that the tap (ki, kj) of output (oh, ow) — xpad[oh*sh + ki*dh][ow*sw + kj*dw] — is phase
 * ((ki*dh) % sh, (kj*dw) % sw) at [oh + (ki*dh)/sh][ow + (kj*dw)/sw]: a fixed shift of the "wide"
 * grid q = oh*Wq + ow. Every tap is then one long unit-stride pass over the grid,
 *   yw[q] = sum_t w[t] * buf[off[t] + q]
 * computed in register blocks (AVX-512 / AVX2 + FMA, or plain C on the scalar path); columns
 * ow >= Wo of the grid are garbage and dropped when the rows are stored. The sum of a block runs
 * over the taps in (ki, kj) order, so results do not depend on the thread split. */
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DW_X86 1
#endif

#define DW_MAX_STRIDE 8 /* column phases with precomputed starts */
#define DW_QALIGN 16    /* the wide grid is computed in whole 16-float vectors */

bool fk_dw_init(fk_dw *d, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw, size_t sh, size_t sw,
                size_t dh, size_t dw, int64_t pt, int64_t pl) {
  memset(d, 0, sizeof *d);
  if (pt < 0 || pl < 0 || kh * kw > FK_DW_MAX_TAPS || sh == 0 || sw == 0 || sw > DW_MAX_STRIDE || Ho == 0 || Wo == 0)
    return false;
  d->H = H;
  d->W = W;
  d->Ho = Ho;
  d->Wo = Wo;
  d->kh = kh;
  d->kw = kw;
  d->sh = sh;
  d->sw = sw;
  d->dh = dh;
  d->dw = dw;
  d->pt = (size_t)pt;
  d->pl = (size_t)pl;
  /* rows / columns the last window reaches, and at least the whole (padded) input */
  size_t Hp = (Ho - 1) * sh + dh * (kh - 1) + 1, Wp = (Wo - 1) * sw + dw * (kw - 1) + 1;
  if (Hp < d->pt + H) Hp = d->pt + H;
  if (Wp < d->pl + W) Wp = d->pl + W;
  d->Hq = (Hp + sh - 1) / sh;
  d->Wq = (Wp + sw - 1) / sw;
  d->plane_q = d->Hq * d->Wq;
  d->Q = Ho * d->Wq;
  d->Qpad = (d->Q + DW_QALIGN - 1) / DW_QALIGN * DW_QALIGN;
  size_t rr = (kh - 1) * dh, cc = (kw - 1) * dw;
  size_t max_off = (sh * sw - 1) * d->plane_q + rr / sh * d->Wq + cc / sw;
  size_t need = max_off + d->Qpad, body = sh * sw * d->plane_q;
  d->buf_floats = fk_align64((need > body ? need : body) * sizeof(float)) / sizeof(float);
  size_t t = 0;
  for (size_t ki = 0; ki < kh; ki++)
    for (size_t kj = 0; kj < kw; kj++) {
      size_t r = ki * dh, c = kj * dw;
      d->off[t++] = (int32_t)(((r % sh) * sw + c % sw) * d->plane_q + r / sh * d->Wq + c / sw);
    }
  /* per column phase: the first input column (c0 + pl) % sw == pc, its place and the count */
  for (size_t pc = 0; pc < sw && pc < DW_MAX_STRIDE; pc++) {
    size_t c0 = (pc + sw - d->pl % sw) % sw;
    d->col0[pc] = c0;
    d->colj[pc] = (c0 + d->pl) / sw;
    d->coln[pc] = c0 < W ? (W - c0 + sw - 1) / sw : 0;
  }
  return true;
}

size_t fk_dw_scratch_floats(const fk_dw *d) {
  return d->buf_floats + fk_align64(d->Qpad * sizeof(float)) / sizeof(float);
}

void fk_dw_prepare(const fk_dw *d, float *scratch) { memset(scratch, 0, d->buf_floats * sizeof(float)); }

/* Writes the interior of the phase planes (the zero border stays from fk_dw_prepare). */
/* The fill, compiled for the baseline, AVX2 and AVX-512 (the rows are short: plain loops, which the
 * compiler vectorises, instead of memcpy calls; stride 2 with permutes). */
#define DW_FILL_BODY                                                                          \
  size_t pr = d->pt % d->sh, i = d->pt / d->sh; /* padded row r + pt = i * sh + pr */         \
  for (size_t r = 0; r < d->H; r++) {                                                         \
    const float *restrict src = x + r * d->W;                                                 \
    if (d->sw == 1) {                                                                         \
      float *restrict dst = buf + pr * d->plane_q + i * d->Wq + d->pl;                        \
      for (size_t k = 0; k < d->W; k++) dst[k] = src[k];                                      \
    } else {                                                                                  \
      for (size_t pc = 0; pc < d->sw; pc++) {                                                 \
        size_t n = d->coln[pc];                                                               \
        float *restrict dst = buf + (pr * d->sw + pc) * d->plane_q + i * d->Wq + d->colj[pc]; \
        const float *restrict s = src + d->col0[pc];                                          \
        if (d->sw == 2) /* a constant stride: the loads vectorise */                          \
          for (size_t k = 0; k < n; k++) dst[k] = s[2 * k];                                   \
        else                                                                                  \
          for (size_t k = 0; k < n; k++) dst[k] = s[k * d->sw];                               \
      }                                                                                       \
    }                                                                                         \
    if (++pr == d->sh) {                                                                      \
      pr = 0;                                                                                 \
      i++;                                                                                    \
    }                                                                                         \
  }

static void fill_base(const fk_dw *d, const float *x, float *buf) { DW_FILL_BODY }
#if DW_X86

/* Strides 1 and 2 with masked AVX-512 loads and stores: a row of mobilenet's 7x7 / 14x14 planes
 * is one or two vectors instead of a compiled loop's scalar remainder (the fill was 11% of
 * mobilenet_v3_small at batch 1). Stride 2 deinterleaves 32 input columns into the two column
 * phases with one permute each. Other strides: the plain body. */
__attribute__((target("avx512f"))) static void fill_avx512(const fk_dw *d, const float *x, float *buf) {
  if (d->sw > 2) {
    DW_FILL_BODY
    return;
  }
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  size_t pr = d->pt % d->sh, i = d->pt / d->sh; /* padded row r + pt = i * sh + pr */
  for (size_t r = 0; r < d->H; r++) {
    const float *src = x + r * d->W;
    if (d->sw == 1) {
      float *dst = buf + pr * d->plane_q + i * d->Wq + d->pl;
      for (size_t k = 0; k < d->W; k += 16) {
        __mmask16 m = fk_lanes16(d->W - k);
        _mm512_mask_storeu_ps(dst + k, m, _mm512_maskz_loadu_ps(m, src + k));
      }
    } else { /* input column c0 + 2k of phase pc goes to its column colj + k; c0 is 0 or 1 */
      float *dst0 = buf + (pr * 2 + 0) * d->plane_q + i * d->Wq + d->colj[0];
      float *dst1 = buf + (pr * 2 + 1) * d->plane_q + i * d->Wq + d->colj[1];
      float *dst_even = d->col0[0] == 0 ? dst0 : dst1, *dst_odd = d->col0[0] == 0 ? dst1 : dst0;
      size_t n_even = (d->W + 1) / 2, n_odd = d->W / 2;
      for (size_t k = 0; 2 * k < d->W; k += 16) { /* input columns 2k .. 2k + 31 */
        size_t left = d->W - 2 * k;
        __m512 lo = _mm512_maskz_loadu_ps(fk_lanes16(left), src + 2 * k);
        __m512 hi = _mm512_maskz_loadu_ps(left > 16 ? fk_lanes16(left - 16) : 0, src + 2 * k + 16);
        _mm512_mask_storeu_ps(dst_even + k, fk_lanes16(n_even - k), _mm512_permutex2var_ps(lo, even, hi));
        if (n_odd > k) _mm512_mask_storeu_ps(dst_odd + k, fk_lanes16(n_odd - k), _mm512_permutex2var_ps(lo, odd, hi));
      }
    }
    if (++pr == d->sh) {
      pr = 0;
      i++;
    }
  }
}
__attribute__((target("avx2"))) static void fill_avx2(const fk_dw *d, const float *x, float *buf) { DW_FILL_BODY }
#endif

void fk_dw_fill(const fk_dw *d, const float *x, float *buf) {
#if DW_X86
  if (fk_isa_active() == FK_ISA_AVX512) {
    fill_avx512(d, x, buf);
    return;
  }
  if (fk_isa_active() == FK_ISA_AVX2) {
    fill_avx2(d, x, buf);
    return;
  }
#endif
  fill_base(d, x, buf);
}

/* ---- the wide-grid sums, yw[q] = sum_t w[t] * buf[off[t] + q] (+ bias), q < Qpad ---- */

static void wide_base(const fk_dw *d, const float *buf, const int32_t *off, const float *w, const float *bias,
                      float *yw) {
  size_t kk = d->kh * d->kw;
  for (size_t q0 = 0; q0 < d->Qpad; q0 += DW_QALIGN) {
    float acc[DW_QALIGN];
    for (int l = 0; l < DW_QALIGN; l++) acc[l] = 0.0f;
    for (size_t t = 0; t < kk; t++) {
      float wv = w[t];
      const float *src = buf + off[t] + q0;
      for (int l = 0; l < DW_QALIGN; l++) acc[l] += wv * src[l];
    }
    for (int l = 0; l < DW_QALIGN; l++) yw[q0 + l] = bias ? acc[l] + *bias : acc[l];
  }
}

#if DW_X86
/* NV vectors of 16 per block (independent FMA chains), then single vectors for the rest. */
#define DW512_BLOCK(NV)                                                                                           \
  for (; q0 + (NV)*16 <= d->Qpad; q0 += (NV)*16) {                                                                \
    __m512 acc[NV];                                                                                               \
    for (int v = 0; v < (NV); v++) acc[v] = _mm512_setzero_ps();                                                  \
    for (size_t t = 0; t < kk; t++) {                                                                             \
      __m512 wv = _mm512_set1_ps(w[t]);                                                                           \
      const float *src = buf + off[t] + q0;                                                                       \
      for (int v = 0; v < (NV); v++) acc[v] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + v * 16), acc[v]);         \
    }                                                                                                             \
    for (int v = 0; v < (NV); v++) _mm512_storeu_ps(yw + q0 + v * 16, bias ? _mm512_add_ps(acc[v], bv) : acc[v]); \
  }

__attribute__((target("avx512f"))) static void wide_avx512(const fk_dw *d, const float *buf, const int32_t *off,
                                                           const float *w, const float *bias, float *yw) {
  size_t kk = d->kh * d->kw, q0 = 0;
  __m512 bv = _mm512_set1_ps(bias ? *bias : 0.0f);
  DW512_BLOCK(6)
  DW512_BLOCK(2)
  DW512_BLOCK(1)
}

#define DW256_BLOCK(NV)                                                                                          \
  for (; q0 + (NV)*8 <= d->Qpad; q0 += (NV)*8) {                                                                 \
    __m256 acc[NV];                                                                                              \
    for (int v = 0; v < (NV); v++) acc[v] = _mm256_setzero_ps();                                                 \
    for (size_t t = 0; t < kk; t++) {                                                                            \
      __m256 wv = _mm256_set1_ps(w[t]);                                                                          \
      const float *src = buf + off[t] + q0;                                                                      \
      for (int v = 0; v < (NV); v++) acc[v] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src + v * 8), acc[v]);         \
    }                                                                                                            \
    for (int v = 0; v < (NV); v++) _mm256_storeu_ps(yw + q0 + v * 8, bias ? _mm256_add_ps(acc[v], bv) : acc[v]); \
  }

__attribute__((target("avx2,fma"))) static void wide_avx2(const fk_dw *d, const float *buf, const int32_t *off,
                                                          const float *w, const float *bias, float *yw) {
  size_t kk = d->kh * d->kw, q0 = 0;
  __m256 bv = _mm256_set1_ps(bias ? *bias : 0.0f);
  DW256_BLOCK(6)
  DW256_BLOCK(2)
}
#endif

#if DW_X86
static void store_rows_avx512(const fk_dw *d, const float *yw, rlx_act act, float *z, float *r);
#endif

void fk_dw_plane(const fk_dw *d, const float *x, const float *w, const float *bias, rlx_act act, bool has_act, float *z,
                 float *r, float *scratch) {
  float *buf = scratch, *yw = scratch + d->buf_floats;
  const int32_t *off = d->off;
  fk_dw_fill(d, x, buf);
#if DW_X86
  fk_isa isa = fk_isa_active();
  if (isa == FK_ISA_AVX512)
    wide_avx512(d, buf, off, w, bias, yw);
  else if (isa == FK_ISA_AVX2)
    wide_avx2(d, buf, off, w, bias, yw);
  else
#endif
    wide_base(d, buf, off, w, bias, yw);
#if DW_X86
  if (isa == FK_ISA_AVX512) {
    store_rows_avx512(d, yw, act, z, r && has_act ? r : NULL);
    return;
  }
#endif
  /* the rows into z (or, when the sum is not kept, into r), then the activation over the plane
     in one call */
  float *dst = z ? z : (r && has_act ? r : NULL);
  if (!dst) return;
  for (size_t oh = 0; oh < d->Ho; oh++) { /* short rows: a plain loop, not memcpy calls */
    float *restrict o = dst + oh * d->Wo;
    const float *restrict q = yw + oh * d->Wq;
    for (size_t k = 0; k < d->Wo; k++) o[k] = q[k];
  }
  if (r && has_act) fk_conv_act(act, dst, r, d->Ho * d->Wo);
}

/* ---- the epilogue's activations ----
 * The values of the Activation kernel (fk_act_f32, the reference's formulas in double), bit for
 * bit: HardSwish x * clamp(x + 3, 0, 6) / 6 and HardSigmoid clamp(x / 6 + 1/2, 0, 1) in double,
 * with the division by 6 done as a product with the double nearest 1/6, which rounds to the same
 * float for every one of the 2^32 inputs (checked exhaustively when this was written; the unit
 * test compares the two over sweeps of the range that matters). Multiplies and divides vectorise
 * at different speeds: the product is several times faster. NaN passes the clamps. */
#define ACT_RELU(v) ((v) < 0 ? 0.0f : (v)) /* NaN and -0 pass, like Relu */
static inline float act_hswish(float x) {
  double v = x, c = v + 3.0;
  c = c < 0.0 ? 0.0 : c;
  c = c > 6.0 ? 6.0 : c;
  return (float)(v * c * (1.0 / 6.0));
}
static inline float act_hsigmoid(float x) {
  double v = (double)x * (1.0 / 6.0) + 0.5;
  v = v < 0.0 ? 0.0 : v;
  v = v > 1.0 ? 1.0 : v;
  return (float)v;
}

#define ACT_SWITCH(SRC, DST)                                      \
  switch (act) {                                                  \
  case RLX_ACT_RELU:                                              \
    for (size_t i = 0; i < n; i++) DST[i] = ACT_RELU(SRC[i]);     \
    break;                                                        \
  case RLX_ACT_HARD_SWISH:                                        \
    for (size_t i = 0; i < n; i++) DST[i] = act_hswish(SRC[i]);   \
    break;                                                        \
  default: /* RLX_ACT_HARD_SIGMOID */                             \
    for (size_t i = 0; i < n; i++) DST[i] = act_hsigmoid(SRC[i]); \
    break;                                                        \
  }

#define ACT_PATH(SUFFIX, ATTR)                                                                           \
  ATTR static void act_copy_##SUFFIX(rlx_act act, const float *restrict x, float *restrict y, size_t n){ \
      ACT_SWITCH(x, y)} ATTR static void act_inplace_##SUFFIX(rlx_act act, float *y, size_t n) {         \
    ACT_SWITCH(y, y)                                                                                     \
  }

ACT_PATH(base, )
#if DW_X86
ACT_PATH(avx2, __attribute__((target("avx2"))))
#endif

#if DW_X86
/* HardSwish and HardSigmoid with AVX2 intrinsics, 4 doubles per vector: the compiled loops above
 * (conditional clamps as blends) ran at 0.63 and 2.1 ns per element on Zen 3, these at a fraction
 * of that. The same double operations in the same order as act_hswish / act_hsigmoid; the clamps
 * are vmaxpd / vminpd with the constant first, which return the second operand when it is NaN
 * (and keep -0), as the conditionals do. In place allowed (x == y). */
__attribute__((target("avx2"))) static void hswish_avx2(const float *x, float *y, size_t n) {
  const __m256d three = _mm256_set1_pd(3.0), zero = _mm256_setzero_pd(), six = _mm256_set1_pd(6.0),
                k = _mm256_set1_pd(1.0 / 6.0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    __m256d c = _mm256_min_pd(six, _mm256_max_pd(zero, _mm256_add_pd(v, three)));
    _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_mul_pd(v, c), k)));
  }
  for (; i < n; i++) y[i] = act_hswish(x[i]);
}

__attribute__((target("avx2"))) static void hsigmoid_avx2(const float *x, float *y, size_t n) {
  const __m256d half = _mm256_set1_pd(0.5), zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0),
                k = _mm256_set1_pd(1.0 / 6.0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d v = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), k), half);
    _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_min_pd(one, _mm256_max_pd(zero, v))));
  }
  for (; i < n; i++) y[i] = act_hsigmoid(x[i]);
}

/* act on 16 floats with AVX-512, the operations of act_hswish / act_hsigmoid / ACT_RELU in the
 * same order (HardSwish and HardSigmoid as two vectors of 8 doubles, the clamps as vmaxpd / vminpd
 * with the constant first, as on the AVX2 path): the compiled double loop took 12% of
 * mobilenet_v3_small's time at batch 1 (Zen 4). */
__attribute__((target("avx512f"))) static inline __m512d act_pd_avx512(rlx_act act, __m512d v) {
  const __m512d zero = _mm512_setzero_pd(), k = _mm512_set1_pd(1.0 / 6.0);
  if (act == RLX_ACT_HARD_SWISH) {
    __m512d c = _mm512_min_pd(_mm512_set1_pd(6.0), _mm512_max_pd(zero, _mm512_add_pd(v, _mm512_set1_pd(3.0))));
    return _mm512_mul_pd(_mm512_mul_pd(v, c), k);
  }
  v = _mm512_add_pd(_mm512_mul_pd(v, k), _mm512_set1_pd(0.5));
  return _mm512_min_pd(_mm512_set1_pd(1.0), _mm512_max_pd(zero, v));
}

__attribute__((target("avx512f"))) static inline __m512 act_ps_avx512(rlx_act act, __m512 v) {
  if (act == RLX_ACT_RELU) /* v < 0 ? 0 : v: NaN and -0 pass */
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_setzero_ps());
  __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m256 l = _mm512_cvtpd_ps(act_pd_avx512(act, lo)), h = _mm512_cvtpd_ps(act_pd_avx512(act, hi));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(l)), _mm256_castps_pd(h), 1));
}

/* y = act(x) over n floats, the last vector masked; in place allowed (x == y). */
__attribute__((target("avx512f"))) static void act_avx512(rlx_act act, const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = fk_lanes16(n - i);
    _mm512_mask_storeu_ps(y + i, m, act_ps_avx512(act, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

/* The wide grid's rows (Wq apart) into z [Ho][Wo] when z is not NULL and act of them into r
 * when r is not NULL, with masked vectors: one pass instead of a row copy and an activation pass
 * over the plane. */
__attribute__((target("avx512f"))) static void store_rows_avx512(const fk_dw *d, const float *yw, rlx_act act, float *z,
                                                                 float *r) {
  for (size_t oh = 0; oh < d->Ho; oh++) {
    const float *q = yw + oh * d->Wq;
    for (size_t k = 0; k < d->Wo; k += 16) {
      __mmask16 m = fk_lanes16(d->Wo - k);
      __m512 v = _mm512_maskz_loadu_ps(m, q + k);
      if (z) _mm512_mask_storeu_ps(z + oh * d->Wo + k, m, v);
      if (r) _mm512_mask_storeu_ps(r + oh * d->Wo + k, m, act_ps_avx512(act, v));
    }
  }
}
#endif

void fk_conv_act(rlx_act act, const float *x, float *y, size_t n) {
#if DW_X86
  fk_isa isa = fk_isa_active();
  if (isa == FK_ISA_AVX2 && act == RLX_ACT_HARD_SWISH) {
    hswish_avx2(x, y, n);
    return;
  }
  if (isa == FK_ISA_AVX2 && act == RLX_ACT_HARD_SIGMOID) {
    hsigmoid_avx2(x, y, n);
    return;
  }
  if (isa == FK_ISA_AVX512) {
    act_avx512(act, x, y, n);
    return;
  }
  if (isa == FK_ISA_AVX2) {
    if (x == y)
      act_inplace_avx2(act, y, n);
    else
      act_copy_avx2(act, x, y, n);
    return;
  }
#endif
  if (x == y)
    act_inplace_base(act, y, n);
  else
    act_copy_base(act, x, y, n);
}

bool fk_conv_act_ok(rlx_act act) {
  return act == RLX_ACT_RELU || act == RLX_ACT_HARD_SWISH || act == RLX_ACT_HARD_SIGMOID;
}

/* ---- depthwise on channel blocks (AVX-512): 16 channels of one image as the vector lanes ----
 * The phase planes compute a 7x7 output through a wide grid of 80 lanes for its 49 positions and
 * pay a fill and a row store per plane; here 16 planes are transposed (16 x 16 in registers, 16
 * plane positions at a time) into one zero-padded tile [Hp][Wp][16], every output position is one vector of 16 channels,
 * and the result is transposed back. Each element is the phase-plane kernel's chain: zero, one
 * FMA per tap in (ki, kj) order, then + bias, then the activation of act_ps_avx512: the same
 * bits. */
#define DWC_LANES 16
#define DWC_MAX_TILE 1024 /* Hp * Wp: the tile at most 64 KiB */

bool fk_dwc_init(fk_dwc *d, size_t C, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw, size_t sh,
                 size_t sw, size_t dh, size_t dw, int64_t pt, int64_t pl) {
  memset(d, 0, sizeof *d);
#if DW_X86
  if (fk_isa_active() != FK_ISA_AVX512) return false;
#else
  return false;
#endif
  if (pt < 0 || pl < 0 || kh * kw > FK_DW_MAX_TAPS || sh == 0 || sw == 0 || Ho == 0 || Wo == 0 || C == 0) return false;
  size_t Hp = (Ho - 1) * sh + dh * (kh - 1) + 1, Wp = (Wo - 1) * sw + dw * (kw - 1) + 1;
  if (Hp < (size_t)pt + H) Hp = (size_t)pt + H;
  if (Wp < (size_t)pl + W) Wp = (size_t)pl + W;
  if (Hp * Wp > DWC_MAX_TILE) return false;
  *d = (fk_dwc){.C = C,
                .H = H,
                .W = W,
                .Ho = Ho,
                .Wo = Wo,
                .kh = kh,
                .kw = kw,
                .sh = sh,
                .sw = sw,
                .dh = dh,
                .dw = dw,
                .pt = (size_t)pt,
                .pl = (size_t)pl,
                .Hp = Hp,
                .Wp = Wp};
  return true;
}

size_t fk_dwc_blocks(const fk_dwc *d) { return (d->C + DWC_LANES - 1) / DWC_LANES; }

/* tile [Hp*Wp][16], two output tiles [Ho*Wo][16] (the sum, its activation), weights [taps][16] */
size_t fk_dwc_scratch_floats(const fk_dwc *d) {
  return (d->Hp * d->Wp + 2 * d->Ho * d->Wo + d->kh * d->kw + 1) * DWC_LANES;
}

#if DW_X86
/* a[j][i] <- a[i][j]: 16 x 16 floats in registers (unpacks, then 128-bit lane shuffles) */
__attribute__((target("avx512f"))) static inline void dwc_transpose16(__m512 a[16]) {
  __m512 t[16], u[16];
  for (int k = 0; k < 8; k++) {
    t[2 * k] = _mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]);
  }
  for (int k = 0; k < 4; k++) { /* u[4k + m], 128-bit lane L: rows 4k..4k+3 at column 4L + m */
    u[4 * k + 0] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  for (int m = 0; m < 4; m++) {
    __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
    __m512 w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
    a[m] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    a[8 + m] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    a[4 + m] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    a[12 + m] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

/* Channel planes [nc][P] (nc <= 16, plane stride `stride`) -> position vectors dst[p][16] for
 * p < P, where position p goes to dst + place(p) * 16: 16 positions per transpose. */
__attribute__((target("avx512f"))) static inline void dwc_planes_to_lanes(const float *src, size_t stride, size_t nc,
                                                                          size_t p0, size_t n, __m512 a[16]) {
  __mmask16 m = fk_lanes16(n);
  for (size_t c = 0; c < DWC_LANES; c++)
    a[c] = c < nc ? _mm512_maskz_loadu_ps(m, src + c * stride + p0) : _mm512_setzero_ps();
  dwc_transpose16(a);
}

/* NB output positions of row oh from column ow: acc = sum over taps (ki, kj) of w * x, + bias */
#define DWC_RUN(NB)                                                                                          \
  for (; ow + (NB) <= d->Wo; ow += (NB)) {                                                                   \
    __m512 acc[NB];                                                                                          \
    for (int b = 0; b < (NB); b++) acc[b] = _mm512_setzero_ps();                                             \
    for (size_t ki = 0; ki < d->kh; ki++)                                                                    \
      for (size_t kj = 0; kj < d->kw; kj++) {                                                                \
        __m512 wv = _mm512_loadu_ps(wt + (ki * d->kw + kj) * DWC_LANES);                                     \
        const float *src = tile + ((oh * d->sh + ki * d->dh) * d->Wp + ow * d->sw + kj * d->dw) * DWC_LANES; \
        for (int b = 0; b < (NB); b++)                                                                       \
          acc[b] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(src + (size_t)b * d->sw * DWC_LANES), acc[b]);        \
      }                                                                                                      \
    for (int b = 0; b < (NB); b++) {                                                                         \
      __m512 s = bias ? _mm512_add_ps(acc[b], bv) : acc[b];                                                  \
      size_t at = (oh * d->Wo + ow + (size_t)b) * DWC_LANES;                                                 \
      if (z) _mm512_storeu_ps(oz + at, s);                                                                   \
      if (r) _mm512_storeu_ps(orr + at, act_ps_avx512(act, s));                                              \
    }                                                                                                        \
  }

__attribute__((target("avx512f"))) static void dwc_block_avx512(const fk_dwc *d, const float *x, const float *w,
                                                                const float *bias, size_t c0, rlx_act act, float *z,
                                                                float *r, float *scratch) {
  size_t nc = d->C - c0 < DWC_LANES ? d->C - c0 : DWC_LANES, kk = d->kh * d->kw;
  size_t Pin = d->H * d->W, P = d->Ho * d->Wo;
  float *tile = scratch, *oz = tile + d->Hp * d->Wp * DWC_LANES, *orr = oz + P * DWC_LANES;
  float *wt = orr + P * DWC_LANES, *bl = wt + kk * DWC_LANES;
  /* the interior of the tile, 16 input positions (in plane order) per transpose; its border
     stays zero from fk_dwc_prepare, lanes >= nc are zero */
  for (size_t p0 = 0; p0 < Pin; p0 += DWC_LANES) {
    size_t n = Pin - p0 < DWC_LANES ? Pin - p0 : DWC_LANES;
    __m512 a[DWC_LANES];
    dwc_planes_to_lanes(x + c0 * Pin, Pin, nc, p0, n, a);
    size_t h = p0 / d->W, k = p0 % d->W;
    for (size_t q = 0; q < n; q++) {
      _mm512_storeu_ps(tile + ((d->pt + h) * d->Wp + d->pl + k) * DWC_LANES, a[q]);
      if (++k == d->W) k = 0, h++;
    }
  }
  for (size_t t = 0; t < kk; t++)
    for (size_t c = 0; c < DWC_LANES; c++) wt[t * DWC_LANES + c] = c < nc ? w[(c0 + c) * kk + t] : 0.0f;
  for (size_t c = 0; c < DWC_LANES; c++) bl[c] = bias && c < nc ? bias[c0 + c] : 0.0f;
  __m512 bv = _mm512_loadu_ps(bl);
  for (size_t oh = 0; oh < d->Ho; oh++) {
    size_t ow = 0;
    DWC_RUN(14)
    DWC_RUN(7)
    DWC_RUN(4)
    DWC_RUN(1)
  }
  /* back to planes: 16 output positions per transpose */
  for (int k = 0; k < 2; k++) {
    const float *o = k ? orr : oz;
    float *dst = k ? r : z;
    if (!dst) continue;
    for (size_t p0 = 0; p0 < P; p0 += DWC_LANES) {
      size_t n = P - p0 < DWC_LANES ? P - p0 : DWC_LANES;
      __m512 a[DWC_LANES];
      for (size_t q = 0; q < DWC_LANES; q++)
        a[q] = q < n ? _mm512_loadu_ps(o + (p0 + q) * DWC_LANES) : _mm512_setzero_ps();
      dwc_transpose16(a);
      for (size_t c = 0; c < nc; c++) _mm512_mask_storeu_ps(dst + (c0 + c) * P + p0, fk_lanes16(n), a[c]);
    }
  }
}
#endif

void fk_dwc_prepare(const fk_dwc *d, float *scratch) { memset(scratch, 0, d->Hp * d->Wp * DWC_LANES * sizeof(float)); }

void fk_dwc_block(const fk_dwc *d, const float *x, const float *w, const float *bias, size_t c0, rlx_act act,
                  bool has_act, float *z, float *r, float *scratch) {
#if DW_X86
  dwc_block_avx512(d, x, w, bias, c0, act, z, r && has_act ? r : NULL, scratch);
#else
  (void)d, (void)x, (void)w, (void)bias, (void)c0, (void)act, (void)has_act, (void)z, (void)r, (void)scratch;
#endif
}
