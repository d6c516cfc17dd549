/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Winograd F(2x2, 3x3) forward convolution (AVX-512F, or AVX2 + FMA), for conv.c's stride-1 3x3
 * convolutions of one group with many channels (resnet's 56x56 to 14x14 layers).
 *
 * Each 2x2 output tile is Y = A^T [ sum_c (G g_oc G^T) .* (B^T d_c B) ] A over the 4x4 input patch
 * d_c of every input channel, with
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
 *   A^T = [1 1 1 0; 0 1 -1 -1]
 * (Lavin and Gray's minimal filtering; the numbers are the standard ones). The channel sum is 16
 * independent GEMMs, one per point p of the 4x4 transform domain:
 *   M[p] [O][T] = U[p] [O][C] . V[p] [C][T]      (T = tiles of a group of images)
 * on gemm_packed.c's register tiles (the input transform writes V straight into that file's
 * column panels [panel][c][32]); the transforms run over 16 tiles at a time in AVX-512 lanes, or 8
 * in AVX2 lanes (the same additions in the same order, so the same transform bits). The
 * multiply count drops from 9 to 4 per output and channel pair; the rounding differs from the
 * direct sum (more terms, the 1/2 of G): about 2.3x the direct f32 error in a NumPy model of a
 * 128-channel layer (tested against the reference; F(4x4, 3x3) was 30x there, so not used).
 * Every output element is computed the same way whatever the thread split: the stages (weight
 * transform by output channel, input transform by tile row, the GEMMs by point, output
 * transform by output channel) split work items, never a sum. */
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WG_X86 1
#define TGT512 __attribute__((target("avx512f")))
#define TGT2 __attribute__((target("avx2,fma")))
#endif

/* The image group's V and M together stay under this many floats (at least one image). */
#define WG_GROUP_FLOATS ((size_t)3 << 20)

bool fk_wino_init(fk_wino *d, size_t N, size_t C, size_t O, size_t H, size_t W, size_t ph, size_t pw) {
  memset(d, 0, sizeof *d);
  if (N == 0 || C == 0 || O == 0 || H + 2 * ph < 3 || W + 2 * pw < 3 || ph > 2 || pw > 2) return false;
  d->N = N;
  d->C = C;
  d->O = O;
  d->H = H;
  d->W = W;
  d->ph = ph;
  d->pw = pw;
  /* 'same' or 'valid'-like extents: Ho = H + 2ph - 2 (the caller checks its node) */
  d->Ho = H + 2 * ph - 2;
  d->Wo = W + 2 * pw - 2;
  d->th = (d->Ho + 1) / 2;
  d->tw = (d->Wo + 1) / 2;
  d->T = d->th * d->tw;
  d->Wp = 2 * d->tw + 2 + 32; /* + read slack of the 32-float loads */
  size_t per_image = 16 * d->T * (C + O);
  d->imgs = WG_GROUP_FLOATS / per_image;
  if (d->imgs < 1) d->imgs = 1;
  if (d->imgs > N) d->imgs = N;
  d->pad_floats = fk_align64((4 * d->Wp + 32) * sizeof(float)) / sizeof(float);
  return d->T < ((size_t)1 << 26);
}

bool fk_wino_available(void) {
#if WG_X86
  return fk_isa_active() >= FK_ISA_AVX2 && fk_gemm_packed_fast();
#else
  return false;
#endif
}

/* The 16 points of U and M lie O * C (O * NT) + 16 floats apart: 64 bytes off a multiple of 4 KiB,
 * so that the transforms' 16 streams (one per point) do not share L1 sets. */
static size_t u_point(const fk_wino *d) { return d->O * d->C + 16; }
static size_t m_point(const fk_wino *d, size_t nb) { return d->O * nb * d->T + 16; }

size_t fk_wino_u_floats(const fk_wino *d) { return fk_align64(16 * u_point(d) * sizeof(float)) / sizeof(float); }

/* V of nb images: per point, the column panels of gemm_packed.c ([panel][c][32], tile t in
 * panel t / 32, lane t % 32) over NT = nb * T tiles */
static size_t v_point_floats(const fk_wino *d, size_t nb) {
  return (nb * d->T + 31) / 32 * 32 * d->C + 16; /* + 64 bytes: the points' panels do not alias in L1 */
}

size_t fk_wino_v_floats(const fk_wino *d) {
  return fk_align64(16 * v_point_floats(d, d->imgs) * sizeof(float)) / sizeof(float);
}

size_t fk_wino_vm_floats(const fk_wino *d) { return fk_wino_v_floats(d) + 16 * m_point(d, d->imgs); }

#if WG_X86
/* The weight transform of channels [c, c + n) of output channel o in AVX-512 lanes (n <= 16):
 * the same operations as the scalar loop below, in the same order. */
TGT512 static void wino_weights16(const fk_wino *d, const float *w, float *u, size_t o, size_t c, size_t n) {
  size_t OC = u_point(d);
  const __m512i idx =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(9));
  __mmask16 m = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
  const float *g = w + (o * d->C + c) * 9;
  const __m512 half = _mm512_set1_ps(0.5f);
  __m512 t[4][3];
  for (int k = 0; k < 3; k++) {
    __m512 g0 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, g + k, 4);
    __m512 g1 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, g + 3 + k, 4);
    __m512 g2 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, g + 6 + k, 4);
    t[0][k] = g0;
    t[1][k] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(g0, g1), g2));
    t[2][k] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(g0, g1), g2));
    t[3][k] = g2;
  }
  for (int r = 0; r < 4; r++) {
    __m512 a = t[r][0], b = t[r][1], e = t[r][2];
    float *dst = u + (size_t)(r * 4) * OC + o * d->C + c;
    _mm512_mask_storeu_ps(dst, m, a);
    _mm512_mask_storeu_ps(dst + OC, m, _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(a, b), e)));
    _mm512_mask_storeu_ps(dst + 2 * OC, m, _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(a, b), e)));
    _mm512_mask_storeu_ps(dst + 3 * OC, m, e);
  }
}

/* lanes [0, n) of a vector, as vmaskmovps takes them */
TGT2 static inline __m256i wg_mask8(size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 8 ? n : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* vmaskmovps stores are slow on AMD's cores (tens of micro-ops each): the ragged ends go
 * through a buffer instead */
TGT2 static inline void wg_store8(float *dst, size_t n, __m256 v) {
  if (n >= 8) {
    _mm256_storeu_ps(dst, v);
    return;
  }
  float b[8];
  _mm256_storeu_ps(b, v);
  memcpy(dst, b, n * sizeof(float));
}

/* wino_weights16 in 8 lanes: the same operations in the same order (the 8 channels' taps are
 * transposed through a buffer: gathers are slow on AMD's cores) */
TGT2 static void wino_weights8(const fk_wino *d, const float *w, float *u, size_t o, size_t c, size_t n) {
  size_t OC = u_point(d);
  const float *g = w + (o * d->C + c) * 9;
  float tap[9][8];
  for (size_t i = 0; i < 8; i++)
    for (int k = 0; k < 9; k++) tap[k][i] = i < n ? g[i * 9 + (size_t)k] : 0.0f;
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256 t[4][3];
  for (int k = 0; k < 3; k++) {
    __m256 g0 = _mm256_loadu_ps(tap[k]), g1 = _mm256_loadu_ps(tap[3 + k]), g2 = _mm256_loadu_ps(tap[6 + k]);
    t[0][k] = g0;
    t[1][k] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(g0, g1), g2));
    t[2][k] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(g0, g1), g2));
    t[3][k] = g2;
  }
  for (int r = 0; r < 4; r++) {
    __m256 a = t[r][0], b = t[r][1], e = t[r][2];
    float *dst = u + (size_t)(r * 4) * OC + o * d->C + c;
    wg_store8(dst, n, a);
    wg_store8(dst + OC, n, _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(a, b), e)));
    wg_store8(dst + 2 * OC, n, _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(a, b), e)));
    wg_store8(dst + 3 * OC, n, e);
  }
}
#endif

/* U[p][o][c] = (G g G^T)[p] of w [O][C][3][3], output channels [o0, o1) */
void fk_wino_weights(const fk_wino *d, const float *w, float *u, size_t o0, size_t o1) {
  size_t OC = u_point(d);
#if WG_X86
  if (fk_isa_active() == FK_ISA_AVX512) {
    for (size_t o = o0; o < o1; o++)
      for (size_t c = 0; c < d->C; c += 16) wino_weights16(d, w, u, o, c, d->C - c < 16 ? d->C - c : 16);
    return;
  }
  if (fk_isa_active() == FK_ISA_AVX2) {
    for (size_t o = o0; o < o1; o++)
      for (size_t c = 0; c < d->C; c += 8) wino_weights8(d, w, u, o, c, d->C - c < 8 ? d->C - c : 8);
    return;
  }
#endif
  for (size_t o = o0; o < o1; o++)
    for (size_t c = 0; c < d->C; c++) {
      const float *g = w + (o * d->C + c) * 9;
      float t[4][3]; /* G g: rows */
      for (int k = 0; k < 3; k++) {
        float g0 = g[k], g1 = g[3 + k], g2 = g[6 + k];
        t[0][k] = g0;
        t[1][k] = 0.5f * (g0 + g1 + g2);
        t[2][k] = 0.5f * (g0 - g1 + g2);
        t[3][k] = g2;
      }
      for (int r = 0; r < 4; r++) {
        float a = t[r][0], b = t[r][1], e = t[r][2];
        float *dst = u + (size_t)(r * 4) * OC + o * d->C + c;
        dst[0] = a;
        dst[OC] = 0.5f * (a + b + e);
        dst[2 * OC] = 0.5f * (a - b + e);
        dst[3 * OC] = e;
      }
    }
}

#if WG_X86
TGT512 static inline __mmask16 wg_lanes(size_t n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u); }

/* Lanes [0, n) of v to tiles t0 .. t0 + n - 1 of one channel's panel rows: dst is tile t0's
 * cell; past the end of its 32-lane panel the rest goes to the next panel (c32 = C * 32 floats
 * further, at lane 0). */
TGT512 static inline void store_panel(float *dst, size_t c32, size_t t0, size_t n, __m512 v) {
  size_t room = 32 - t0 % 32;
  if (n <= room) {
    _mm512_mask_storeu_ps(dst, wg_lanes(n), v);
    return;
  }
  _mm512_mask_storeu_ps(dst, wg_lanes(room), v);
  __m512 rest = _mm512_maskz_compress_ps((__mmask16)(wg_lanes(n) & ~wg_lanes(room)), v);
  _mm512_mask_storeu_ps(dst - t0 % 32 + c32, wg_lanes(n - room), rest);
}

/* V[p] (column panels) of the tile rows [g0, g1) (g = image * th + tile row, counted from image
 * b0) of an image group of nb images, every input channel: x [N][C][H][W]; rb: pad_floats of this
 * worker's scratch (4 zero-padded input rows). The channel loop is innermost, so that successive
 * stores of a point walk its panels' rows in order (a loop over the tiles of one channel strides
 * by whole panels, C * 128 bytes, and its 16 x panels streams thrashed the L1 sets). */
TGT512 static void wino_input512(const fk_wino *d, const float *x, size_t b0, size_t nb, float *v, size_t g0,
                                 size_t g1, float *rb) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  size_t NT = nb * d->T, PS = v_point_floats(d, nb), Wp = d->Wp, C32 = d->C * 32, plane = d->H * d->W;
  memset(rb, 0, d->pad_floats * sizeof(float));
  for (size_t g = g0; g < g1; g++) {
    size_t b = g / d->th, ti = g % d->th;
    for (size_t c = 0; c < d->C; c++) {
      const float *src = x + ((b0 + b) * d->C + c) * plane;
      for (size_t r = 0; r < 4; r++) { /* padded rows 2ti .. 2ti + 3 (columns pw .. pw + W - 1) */
        size_t i = 2 * ti + r;
        float *dst = rb + r * Wp + d->pw;
        if (i < d->ph || i - d->ph >= d->H)
          memset(dst, 0, d->W * sizeof(float));
        else
          memcpy(dst, src + (i - d->ph) * d->W, d->W * sizeof(float));
      }
      float *vc = v + c * 32;
      for (size_t tj = 0; tj < d->tw; tj += 16) {
        size_t n = d->tw - tj < 16 ? d->tw - tj : 16;
        __m512 q[4][4];
        for (int r = 0; r < 4; r++) {
          const float *p = rb + r * Wp + 2 * tj;
          __m512 lo = _mm512_loadu_ps(p), hi = _mm512_loadu_ps(p + 16);
          __m512 lo2 = _mm512_loadu_ps(p + 2), hi2 = _mm512_loadu_ps(p + 18);
          q[r][0] = _mm512_permutex2var_ps(lo, ev, hi);
          q[r][1] = _mm512_permutex2var_ps(lo, od, hi);
          q[r][2] = _mm512_permutex2var_ps(lo2, ev, hi2);
          q[r][3] = _mm512_permutex2var_ps(lo2, od, hi2);
        }
        __m512 s[4][4]; /* B^T d */
        for (int k = 0; k < 4; k++) {
          s[0][k] = _mm512_sub_ps(q[0][k], q[2][k]);
          s[1][k] = _mm512_add_ps(q[1][k], q[2][k]);
          s[2][k] = _mm512_sub_ps(q[2][k], q[1][k]);
          s[3][k] = _mm512_sub_ps(q[1][k], q[3][k]);
        }
        size_t t0 = b * d->T + ti * d->tw + tj;
        float *dst = vc + (t0 / 32) * C32 + t0 % 32;
        for (int r = 0; r < 4; r++) { /* (B^T d) B */
          store_panel(dst + (size_t)(r * 4 + 0) * PS, C32, t0, n, _mm512_sub_ps(s[r][0], s[r][2]));
          store_panel(dst + (size_t)(r * 4 + 1) * PS, C32, t0, n, _mm512_add_ps(s[r][1], s[r][2]));
          store_panel(dst + (size_t)(r * 4 + 2) * PS, C32, t0, n, _mm512_sub_ps(s[r][2], s[r][1]));
          store_panel(dst + (size_t)(r * 4 + 3) * PS, C32, t0, n, _mm512_sub_ps(s[r][1], s[r][3]));
        }
      }
      if (g + 1 == nb * d->th && NT % 32) /* the last panel's lanes past NT: zero (never stored) */
        for (size_t p = 0; p < 16; p++) {
          float *tail = v + p * PS + (NT / 32) * C32 + c * 32 + NT % 32;
          size_t z = 32 - NT % 32;
          _mm512_mask_storeu_ps(tail, wg_lanes(z), _mm512_setzero_ps());
          if (z > 16) _mm512_mask_storeu_ps(tail + 16, wg_lanes(z - 16), _mm512_setzero_ps());
        }
    }
  }
}

/* y [N][O][Ho][Wo] of output channels [o0, o1) of images [b0, b0 + nb) = A^T M A (+ bias[o]). */
TGT512 static void wino_output512(const fk_wino *d, const float *mm, size_t b0, size_t nb, const float *bias,
                                  float *y, size_t o0, size_t o1) {
  const __m512i lo_i = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_i = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
  size_t NT = nb * d->T, ONT = m_point(d, nb), P = d->Ho * d->Wo;
  for (size_t b = 0; b < nb; b++)
    for (size_t o = o0; o < o1; o++) {
      const float *mo = mm + o * NT + b * d->T;
      float *yo = y + ((b0 + b) * d->O + o) * P;
      __m512 bv = _mm512_set1_ps(bias ? bias[o] : 0.0f);
      for (size_t ti = 0; ti < d->th; ti++)
        for (size_t tj = 0; tj < d->tw; tj += 16) {
          size_t n = d->tw - tj < 16 ? d->tw - tj : 16;
          __mmask16 m = wg_lanes(n);
          const float *src = mo + ti * d->tw + tj;
          __m512 s0[4], s1[4]; /* A^T M */
          for (int k = 0; k < 4; k++) {
            __m512 m0 = _mm512_maskz_loadu_ps(m, src + (size_t)k * ONT);
            __m512 m1 = _mm512_maskz_loadu_ps(m, src + (size_t)(4 + k) * ONT);
            __m512 m2 = _mm512_maskz_loadu_ps(m, src + (size_t)(8 + k) * ONT);
            __m512 m3 = _mm512_maskz_loadu_ps(m, src + (size_t)(12 + k) * ONT);
            s0[k] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
            s1[k] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
          }
          __m512 y00 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]), bv);
          __m512 y01 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]), bv);
          __m512 y10 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]), bv);
          __m512 y11 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]), bv);
          size_t col = 2 * tj, ncol = d->Wo - col < 32 ? d->Wo - col : 32;
          __mmask16 ml = wg_lanes(ncol), mh = wg_lanes(ncol > 16 ? ncol - 16 : 0);
          float *r0 = yo + 2 * ti * d->Wo + col;
          _mm512_mask_storeu_ps(r0, ml, _mm512_permutex2var_ps(y00, lo_i, y01));
          _mm512_mask_storeu_ps(r0 + 16, mh, _mm512_permutex2var_ps(y00, hi_i, y01));
          if (2 * ti + 1 < d->Ho) {
            float *r1 = r0 + d->Wo;
            _mm512_mask_storeu_ps(r1, ml, _mm512_permutex2var_ps(y10, lo_i, y11));
            _mm512_mask_storeu_ps(r1 + 16, mh, _mm512_permutex2var_ps(y10, hi_i, y11));
          }
        }
    }
}

/* ---- the same transforms with AVX2 + FMA, 8 tiles (or channels) per vector ---- */

/* store_panel in 8 lanes */
TGT2 static inline void store_panel8(float *dst, size_t c32, size_t t0, size_t n, __m256 v) {
  size_t room = 32 - t0 % 32;
  if (n <= room) {
    wg_store8(dst, n, v);
    return;
  }
  float b[8];
  _mm256_storeu_ps(b, v);
  memcpy(dst, b, room * sizeof(float));
  memcpy(dst - t0 % 32 + c32, b + room, (n - room) * sizeof(float));
}

/* the even and odd elements of p[0, 16) */
TGT2 static inline void wg_deinterleave8(const float *p, __m256 *ev, __m256 *od) {
  __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)); /* l0 l2 h0 h2 | l4 l6 h4 h6 */
  __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  *ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  *od = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* wino_input512 in 8 lanes (the same loops, the same additions) */
TGT2 static void wino_input2(const fk_wino *d, const float *x, size_t b0, size_t nb, float *v, size_t g0, size_t g1,
                             float *rb) {
  size_t NT = nb * d->T, PS = v_point_floats(d, nb), Wp = d->Wp, C32 = d->C * 32, plane = d->H * d->W;
  memset(rb, 0, d->pad_floats * sizeof(float));
  for (size_t g = g0; g < g1; g++) {
    size_t b = g / d->th, ti = g % d->th;
    for (size_t c = 0; c < d->C; c++) {
      const float *src = x + ((b0 + b) * d->C + c) * plane;
      for (size_t r = 0; r < 4; r++) {
        size_t i = 2 * ti + r;
        float *dst = rb + r * Wp + d->pw;
        if (i < d->ph || i - d->ph >= d->H)
          memset(dst, 0, d->W * sizeof(float));
        else
          memcpy(dst, src + (i - d->ph) * d->W, d->W * sizeof(float));
      }
      float *vc = v + c * 32;
      for (size_t tj = 0; tj < d->tw; tj += 8) {
        size_t n = d->tw - tj < 8 ? d->tw - tj : 8;
        __m256 q[4][4];
        for (int r = 0; r < 4; r++) {
          const float *p = rb + r * Wp + 2 * tj;
          wg_deinterleave8(p, &q[r][0], &q[r][1]);
          wg_deinterleave8(p + 2, &q[r][2], &q[r][3]);
        }
        __m256 s[4][4]; /* B^T d */
        for (int k = 0; k < 4; k++) {
          s[0][k] = _mm256_sub_ps(q[0][k], q[2][k]);
          s[1][k] = _mm256_add_ps(q[1][k], q[2][k]);
          s[2][k] = _mm256_sub_ps(q[2][k], q[1][k]);
          s[3][k] = _mm256_sub_ps(q[1][k], q[3][k]);
        }
        size_t t0 = b * d->T + ti * d->tw + tj;
        float *dst = vc + (t0 / 32) * C32 + t0 % 32;
        for (int r = 0; r < 4; r++) { /* (B^T d) B */
          store_panel8(dst + (size_t)(r * 4 + 0) * PS, C32, t0, n, _mm256_sub_ps(s[r][0], s[r][2]));
          store_panel8(dst + (size_t)(r * 4 + 1) * PS, C32, t0, n, _mm256_add_ps(s[r][1], s[r][2]));
          store_panel8(dst + (size_t)(r * 4 + 2) * PS, C32, t0, n, _mm256_sub_ps(s[r][2], s[r][1]));
          store_panel8(dst + (size_t)(r * 4 + 3) * PS, C32, t0, n, _mm256_sub_ps(s[r][1], s[r][3]));
        }
      }
      if (g + 1 == nb * d->th && NT % 32) /* the last panel's lanes past NT: zero (never stored) */
        for (size_t p = 0; p < 16; p++)
          memset(v + p * PS + (NT / 32) * C32 + c * 32 + NT % 32, 0, (32 - NT % 32) * sizeof(float));
    }
  }
}

/* wino_output512 in 8 lanes */
TGT2 static void wino_output2(const fk_wino *d, const float *mm, size_t b0, size_t nb, const float *bias, float *y,
                              size_t o0, size_t o1) {
  size_t NT = nb * d->T, ONT = m_point(d, nb), P = d->Ho * d->Wo;
  for (size_t b = 0; b < nb; b++)
    for (size_t o = o0; o < o1; o++) {
      const float *mo = mm + o * NT + b * d->T;
      float *yo = y + ((b0 + b) * d->O + o) * P;
      __m256 bv = _mm256_set1_ps(bias ? bias[o] : 0.0f);
      for (size_t ti = 0; ti < d->th; ti++)
        for (size_t tj = 0; tj < d->tw; tj += 8) {
          size_t n = d->tw - tj < 8 ? d->tw - tj : 8;
          __m256i m = wg_mask8(n);
          const float *src = mo + ti * d->tw + tj;
          __m256 s0[4], s1[4]; /* A^T M */
          for (int k = 0; k < 4; k++) {
            __m256 m0, m1, m2, m3;
            if (n == 8) {
              m0 = _mm256_loadu_ps(src + (size_t)k * ONT);
              m1 = _mm256_loadu_ps(src + (size_t)(4 + k) * ONT);
              m2 = _mm256_loadu_ps(src + (size_t)(8 + k) * ONT);
              m3 = _mm256_loadu_ps(src + (size_t)(12 + k) * ONT);
            } else {
              m0 = _mm256_maskload_ps(src + (size_t)k * ONT, m);
              m1 = _mm256_maskload_ps(src + (size_t)(4 + k) * ONT, m);
              m2 = _mm256_maskload_ps(src + (size_t)(8 + k) * ONT, m);
              m3 = _mm256_maskload_ps(src + (size_t)(12 + k) * ONT, m);
            }
            s0[k] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
            s1[k] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
          }
          __m256 y00 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]), bv);
          __m256 y01 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]), bv);
          __m256 y10 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]), bv);
          __m256 y11 = _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]), bv);
          size_t col = 2 * tj, ncol = d->Wo - col < 16 ? d->Wo - col : 16;
          float *r0 = yo + 2 * ti * d->Wo + col;
          for (int h = 0; h < 2 && (h == 0 || 2 * ti + 1 < d->Ho); h++) {
            __m256 a = h ? y10 : y00, e = h ? y11 : y01;
            __m256 lo = _mm256_unpacklo_ps(a, e), hi = _mm256_unpackhi_ps(a, e); /* a0 e0 a1 e1 | a4 e4 a5 e5 */
            __m256 v0 = _mm256_permute2f128_ps(lo, hi, 0x20), v1 = _mm256_permute2f128_ps(lo, hi, 0x31);
            float *rr = r0 + (size_t)h * d->Wo;
            wg_store8(rr, ncol, v0);
            if (ncol > 8) wg_store8(rr + 8, ncol - 8, v1);
          }
        }
    }
}

void fk_wino_input(const fk_wino *d, const float *x, size_t b0, size_t nb, float *v, size_t g0, size_t g1, float *rb) {
  if (fk_isa_active() == FK_ISA_AVX512)
    wino_input512(d, x, b0, nb, v, g0, g1, rb);
  else
    wino_input2(d, x, b0, nb, v, g0, g1, rb);
}

void fk_wino_output(const fk_wino *d, const float *mm, size_t b0, size_t nb, const float *bias, float *y, size_t o0,
                    size_t o1) {
  if (fk_isa_active() == FK_ISA_AVX512)
    wino_output512(d, mm, b0, nb, bias, y, o0, o1);
  else
    wino_output2(d, mm, b0, nb, bias, y, o0, o1);
}
#else
void fk_wino_input(const fk_wino *d, const float *x, size_t b0, size_t nb, float *v, size_t g0, size_t g1, float *rb) {
  (void)d, (void)x, (void)b0, (void)nb, (void)v, (void)g0, (void)g1, (void)rb;
}
void fk_wino_output(const fk_wino *d, const float *mm, size_t b0, size_t nb, const float *bias, float *y, size_t o0,
                    size_t o1) {
  (void)d, (void)mm, (void)b0, (void)nb, (void)bias, (void)y, (void)o0, (void)o1;
}
#endif

/* M[p] = U[p] . V[p] for points [p0, p1) of an image group of nb images (gemm_packed.c's
 * register tiles over V's panels) */
void fk_wino_gemm(const fk_wino *d, const float *u, const float *v, float *mm, size_t nb, size_t p0, size_t p1) {
  size_t NT = nb * d->T, PS = v_point_floats(d, nb);
  for (size_t p = p0; p < p1; p++)
    fk_gemm_packed(d->O, NT, d->C, u + p * u_point(d), d->C, v + p * PS, mm + p * m_point(d, nb), NT);
}
