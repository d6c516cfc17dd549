/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct convolution forward of any stride on phase planes (AVX-512F, or AVX2 + FMA), for
 * conv.c's strided and large-kernel convolutions of one group.
 *
 * Every input channel is stored as the sh*sw phase planes of conv_dw.c (fk_dw_fill), one channel
 * after the other (cs floats each), so that tap r = (c, ki, kj) of output q = oh*Wq + ow on the
 * wide grid reads buf[off[r] + q] with off[r] = c*cs + (the plane's tap offset): the convolution
 * is the GEMM
 *   yw[o][q] = sum_r w[o][r] * buf[off[r] + q]
 * whose B operand needs no im2col: its rows are unaligned loads from buf. Tiles of 4 output
 * channels x 64 positions (16 accumulators; with AVX2, slices of 24, 24 and 16 positions, 12 or
 * 8 accumulators) run over the taps in order; every output element is one fused multiply-add
 * chain over the taps, so both paths give the same bits, and
 * the same sum whatever the split across threads. Each tile goes through a small stack buffer
 * straight to the output rows, the garbage columns ow >= Wo of the grid dropped and the bias
 * added on the way (and Relu when the sum is not kept: resnet's stem at b32 8% faster than with
 * the separate pass, measured); other activations are one pass over the output planes afterwards. */
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PC_X86 1
#endif

#define PMR 4  /* output channels per tile */
#define PNQ 64 /* wide positions per tile (4 vectors of 16) */

bool fk_pconv_init(fk_pconv *d, size_t C, size_t O, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw,
                   size_t sh, size_t sw, size_t dh, size_t dw, int64_t pt, int64_t pl) {
  memset(d, 0, sizeof *d);
  if (C == 0 || O == 0 || !fk_dw_init(&d->p, H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl)) return false;
  const fk_dw *p = &d->p;
  size_t kk = kh * kw, max_off = 0;
  for (size_t t = 0; t < kk; t++)
    if ((size_t)p->off[t] > max_off) max_off = (size_t)p->off[t];
  d->C = C;
  d->O = O;
  d->Op = (O + PMR - 1) / PMR * PMR;
  d->R = C * kk;
  d->cs = sh * sw * p->plane_q;
  d->Qt = (p->Q + PNQ - 1) / PNQ * PNQ;
  size_t need = (C - 1) * d->cs + max_off + d->Qt, body = C * d->cs;
  d->buf_floats = fk_align64((need > body ? need : body) * sizeof(float)) / sizeof(float);
  /* int32 offsets, and a sane size */
  return need < ((size_t)1 << 31) && d->R < ((size_t)1 << 24);
}

size_t fk_pconv_tiles_count(const fk_pconv *d) { return d->Qt / PNQ * (d->Op / PMR); }

void fk_pconv_offsets(const fk_pconv *d, int32_t *off) {
  size_t kk = d->p.kh * d->p.kw;
  for (size_t c = 0; c < d->C; c++)
    for (size_t t = 0; t < kk; t++) off[c * kk + t] = (int32_t)(c * d->cs + (size_t)d->p.off[t]);
}

void fk_pconv_fill(const fk_pconv *d, const float *x, float *buf) {
  size_t plane = d->p.H * d->p.W;
  for (size_t c = 0; c < d->C; c++) fk_dw_fill(&d->p, x + c * plane, buf + c * d->cs);
}

bool fk_pconv_available(void) {
#if PC_X86
  return fk_isa_active() >= FK_ISA_AVX2;
#else
  return false;
#endif
}

#if PC_X86
#define PC_FMA4(ROW, AV)                          \
  c##ROW##0 = _mm512_fmadd_ps(AV, b0, c##ROW##0); \
  c##ROW##1 = _mm512_fmadd_ps(AV, b1, c##ROW##1); \
  c##ROW##2 = _mm512_fmadd_ps(AV, b2, c##ROW##2); \
  c##ROW##3 = _mm512_fmadd_ps(AV, b3, c##ROW##3)
#define PC_STORE4(ROW)                         \
  _mm512_storeu_ps(tile[ROW], c##ROW##0);      \
  _mm512_storeu_ps(tile[ROW] + 16, c##ROW##1); \
  _mm512_storeu_ps(tile[ROW] + 32, c##ROW##2); \
  _mm512_storeu_ps(tile[ROW] + 48, c##ROW##3)

/* The valid positions of a tile (q0 .. q0 + 63 of the wide grid; columns ow >= Wo dropped) of
 * channels o0 .. o0 + n - 1 into y [O][Ho][Wo], + bias. */
static void tile_out(const fk_pconv *d, const float (*tile)[PNQ], size_t q0, size_t o0, size_t n, const float *bias,
                     float *y, bool relu) {
  size_t Wq = d->p.Wq, Wo = d->p.Wo, P = d->p.Ho * Wo, qend = q0 + PNQ < d->p.Q ? q0 + PNQ : d->p.Q;
  for (size_t q = q0; q < qend;) {
    size_t oh = q / Wq, ow = q % Wq, len = Wq - ow; /* the rest of this grid row */
    if (q + len > qend) len = qend - q;
    if (ow < Wo) {
      size_t m = ow + len > Wo ? Wo - ow : len;
      for (size_t i = 0; i < n; i++) {
        float *restrict dst = y + (o0 + i) * P + oh * Wo + ow;
        const float *restrict src = tile[i] + (q - q0);
        float b = bias ? bias[o0 + i] : 0.0f;
        if (relu) /* Relu in place of the pass: v < 0 ? 0 : v (NaN and -0 pass), as fk_conv_act */
          for (size_t k = 0; k < m; k++) {
            float v = bias ? src[k] + b : src[k];
            dst[k] = v < 0 ? 0.0f : v;
          }
        else if (bias)
          for (size_t k = 0; k < m; k++) dst[k] = src[k] + b;
        else
          for (size_t k = 0; k < m; k++) dst[k] = src[k];
      }
    }
    q += len;
  }
}

__attribute__((target("avx512f"))) static void tiles512(const fk_pconv *d, const float *buf, const float *w,
                                                        const int32_t *off, const float *bias, float *y, bool relu,
                                                        size_t t0, size_t t1) {
  size_t R = d->R, MB = d->Op / PMR;
  float tile[PMR][PNQ];
  for (size_t t = t0; t < t1; t++) {
    size_t tq = t / MB, mb = t % MB;
    const float *B = buf + tq * PNQ;
    {
      /* the weight rows of the tile's 4 channels as stored (w [O][R]); past O the last row again,
         into tile rows that are never stored */
      const float *a0 = w + (mb * PMR < d->O ? mb * PMR : d->O - 1) * R;
      const float *a1 = w + (mb * PMR + 1 < d->O ? mb * PMR + 1 : d->O - 1) * R;
      const float *a2 = w + (mb * PMR + 2 < d->O ? mb * PMR + 2 : d->O - 1) * R;
      const float *a3 = w + (mb * PMR + 3 < d->O ? mb * PMR + 3 : d->O - 1) * R;
      __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
      __m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
      for (size_t r = 0; r < R; r++) {
        const float *bp = B + off[r];
        __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16), b2 = _mm512_loadu_ps(bp + 32),
               b3 = _mm512_loadu_ps(bp + 48);
        __m512 w0 = _mm512_set1_ps(a0[r]), w1 = _mm512_set1_ps(a1[r]), w2 = _mm512_set1_ps(a2[r]),
               w3 = _mm512_set1_ps(a3[r]);
        PC_FMA4(0, w0);
        PC_FMA4(1, w1);
        PC_FMA4(2, w2);
        PC_FMA4(3, w3);
      }
      PC_STORE4(0);
      PC_STORE4(1);
      PC_STORE4(2);
      PC_STORE4(3);
      size_t o0 = mb * PMR;
      tile_out(d, (const float(*)[PNQ])tile, tq * PNQ, o0, d->O - o0 < PMR ? d->O - o0 : PMR, bias, y, relu);
    }
  }
}

/* The same tiles with AVX2 + FMA, as 16 ymm registers allow: the 64 positions in slices of 24,
 * 24 and 16 (4 x 3 or 4 x 2 accumulators, the slice's B vectors, one weight broadcast at a time;
 * the weights are re-read from L1 by each slice). 0-30% faster on the stems than four passes of
 * 16 positions (8 accumulators), measured on a Zen 3 EPYC at 1 thread. */
#define PA_SLICE(NV, Q0)                                                                           \
  do {                                                                                             \
    __m256 acc[PMR][NV];                                                                           \
    _Pragma("GCC unroll 4") for (int i = 0; i < PMR; i++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) \
        acc[i][v] = _mm256_setzero_ps();                                                           \
    for (size_t r = 0; r < R; r++) {                                                               \
      const float *bp = B + off[r] + (Q0);                                                         \
      __m256 bv[NV];                                                                               \
      _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) bv[v] = _mm256_loadu_ps(bp + 8 * v);   \
      _Pragma("GCC unroll 4") for (int i = 0; i < PMR; i++) {                                     \
        __m256 wv = _mm256_broadcast_ss(a[i] + r);                                                 \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) acc[i][v] = _mm256_fmadd_ps(wv, bv[v], acc[i][v]); \
      }                                                                                            \
    }                                                                                              \
    _Pragma("GCC unroll 4") for (int i = 0; i < PMR; i++) _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) \
        _mm256_storeu_ps(tile[i] + (Q0) + 8 * v, acc[i][v]);                                       \
  } while (0)

__attribute__((target("avx2,fma"))) static void tiles2(const fk_pconv *d, const float *buf, const float *w,
                                                      const int32_t *off, const float *bias, float *y, bool relu,
                                                      size_t t0, size_t t1) {
  size_t R = d->R, MB = d->Op / PMR;
  float tile[PMR][PNQ];
  for (size_t t = t0; t < t1; t++) {
    size_t tq = t / MB, mb = t % MB;
    const float *B = buf + tq * PNQ, *a[PMR];
    for (size_t i = 0; i < PMR; i++) /* past O the last row again, into tile rows never stored */
      a[i] = w + (mb * PMR + i < d->O ? mb * PMR + i : d->O - 1) * R;
    PA_SLICE(3, 0);
    PA_SLICE(3, 24);
    PA_SLICE(2, 48);
    size_t o0 = mb * PMR;
    tile_out(d, (const float(*)[PNQ])tile, tq * PNQ, o0, d->O - o0 < PMR ? d->O - o0 : PMR, bias, y, relu);
  }
}
#undef PA_SLICE

void fk_pconv_tiles(const fk_pconv *d, const float *buf, const float *w, const int32_t *off, const float *bias,
                    float *y, bool relu, size_t t0, size_t t1) {
  if (fk_isa_active() == FK_ISA_AVX512)
    tiles512(d, buf, w, off, bias, y, relu, t0, t1);
  else
    tiles2(d, buf, w, off, bias, y, relu, t0, t1);
}
#else
void fk_pconv_tiles(const fk_pconv *d, const float *buf, const float *w, const int32_t *off, const float *bias,
                    float *y, bool relu, size_t t0, size_t t1) {
  (void)d, (void)buf, (void)w, (void)off, (void)bias, (void)y, (void)relu, (void)t0, (void)t1;
}
#endif

void fk_pconv_act(const fk_pconv *d, size_t o0, size_t o1, rlx_act act, const float *sum, float *r) {
  size_t P = d->p.Ho * d->p.Wo;
  fk_conv_act(act, sum + o0 * P, r + o0 * P, (o1 - o0) * P);
}
