/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The AVX-512 register tiles of the direct stride-1 convolution (conv_direct.c has the geometry,
 * the buffers and the AVX2 tiles; it calls these when fk_dconv_init chose the AVX-512 set, that is
 * when the active path is avx512). Same wide grid as the AVX2 tiles:
 *   forward / backward-input: 8 output channels x 48 wide positions (3 vectors of 16; 24
 *     accumulators), the last tile of the grid 1 or 2 vectors wide; each tile writes its own
 *     outputs (the dropped columns compressed away, the bias / Relu epilogue in registers). Every
 *     output is one fused multiply-add chain over the taps in order, as in the AVX2 tile, so both
 *     paths give the same bits;
 *   backward-weight, 3-wide kernel rows and multiples of 16 channels (d->dwt): the channels in the
 *     lanes, dw [R][O] accumulated in registers over the compact output grid (below);
 *   backward-weight, other shapes: 8 channels x 3 taps, 16 lanes each (lane l sums the positions
 *     q = l mod 16), accumulated in memory across the images, reduced across lanes by
 *     fk_dconv_dw_finish.
 * Only this file is compiled with AVX-512 enabled (function attributes), so the library still
 * runs on any x86-64. */
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR FK_DCONV512_MR /* 8 channels */
#define NZ 3              /* vectors per forward tile (FK_DCONV512_NQ / 16) */
#define NT 3              /* taps per backward-weight tile (conv_direct.c's NRT) */
#define TGT __attribute__((target("avx512f,fma")))

/* Where the lanes of a tile's vectors go in the compact output [Ho][Wo]: vector j of the tile at
 * wide position q0 keeps the lanes m[j] (positions q < Q with ow < Wo), which are consecutive
 * outputs from start[j] on (a row's last valid column is followed by the next row's first). */
typedef struct tile_map {
  __mmask16 m[NZ];
  size_t start[NZ];
} tile_map;

static void map_tile(const fk_dconv *d, size_t q0, int nz, tile_map *t) {
  size_t oh = q0 / d->Wp, ow = q0 % d->Wp; /* of position q, walked row segment by row segment */
  for (int j = 0; j < nz; j++) {
    size_t base = q0 + 16 * (size_t)j, q = base, end = base + 16 < d->Q ? base + 16 : d->Q;
    unsigned m = 0;
    size_t start = 0;
    while (q < end) {
      size_t seg = d->Wp - ow < end - q ? d->Wp - ow : end - q; /* to the row's end or the vector's */
      if (ow < d->Wo) {
        size_t a = q - base, b = a + (d->Wo - ow < seg ? d->Wo - ow : seg);
        if (!m) start = oh * d->Wo + ow;
        m |= ((1u << b) - 1u) ^ ((1u << a) - 1u); /* lanes [a, b) */
      }
      q += seg;
      ow += seg;
      if (ow == d->Wp) {
        ow = 0;
        oh++;
      }
    }
    t->m[j] = (__mmask16)m;
    t->start[j] = start;
  }
}

/* The fused output of a tile: y / r planes of the 8 channels (NULL: not written), bias or NULL. */
typedef struct tile_out {
  const tile_map *map;
  const float *bias;
  float *y, *r;
  size_t plane; /* Ho * Wo */
  int nch;      /* channels of this block that exist (< 8 in the last block) */
} tile_out;

TGT static inline __mmask16 tail_mask(size_t n) { return (__mmask16)((1u << n) - 1u); }

/* z = v + b; relu(z) = z < 0 ? 0 : z (NaN and -0 pass, like Relu) */
TGT static inline __m512 relu16(__m512 v) {
  __m512 zero = _mm512_setzero_ps();
  return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
}

/* One tile: c[i][0 .. 16*nz) = sum_r A[r][i] * B[off[r] + ...] for the 8 channels i, stored to
 * the wide buffer y (row stride ldy) or, with `out`, compacted into the output planes. */
TGT static inline __attribute__((always_inline)) void fwd_tile(size_t R, const float *B, const float *A,
                                                               const int32_t *off, float *y, size_t ldy,
                                                               const tile_out *out, const int nz) {
  __m512 c[MR][NZ];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
    for (int j = 0; j < NZ; j++) c[i][j] = _mm512_setzero_ps();
  for (size_t r = 0; r < R; r++) {
    const float *bp = B + off[r];
    __m512 b[NZ];
#pragma GCC unroll 3
    for (int j = 0; j < nz; j++) b[j] = _mm512_loadu_ps(bp + 16 * j);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      __m512 a = _mm512_set1_ps(A[r * MR + i]);
#pragma GCC unroll 3
      for (int j = 0; j < nz; j++) c[i][j] = _mm512_fmadd_ps(a, b[j], c[i][j]);
    }
  }
  if (!out) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
      for (int j = 0; j < nz; j++) _mm512_storeu_ps(y + (size_t)i * ldy + 16 * j, c[i][j]);
    return;
  }
  const tile_map *t = out->map;
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    if (i >= out->nch) break;
    __m512 bias = _mm512_set1_ps(out->bias ? out->bias[i] : 0.0f);
#pragma GCC unroll 3
    for (int j = 0; j < nz; j++) {
      if (!t->m[j]) continue;
      __m512 v = _mm512_maskz_compress_ps(t->m[j], c[i][j]);
      __mmask16 st = tail_mask((size_t)__builtin_popcount(t->m[j]));
      size_t at = (size_t)i * out->plane + t->start[j];
      if (out->bias) v = _mm512_add_ps(v, bias);
      if (out->y) _mm512_mask_storeu_ps(out->y + at, st, v);
      if (out->r) _mm512_mask_storeu_ps(out->r + at, st, relu16(v));
    }
  }
}

/* Tiles [t0, t1): to the wide buffer yw (out_y, out_r and bias unused, fused false) or, fused,
 * compacted into y / r [O][Ho][Wo] with the bias. */
TGT static void forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                              bool fused, const float *bias, float *out_y, float *out_r, size_t t0, size_t t1) {
  size_t R = d->R, MB = d->Op / MR;
  for (size_t t = t0; t < t1; t++) {
    size_t q0 = t * FK_DCONV512_NQ, left = (d->Qpad - q0) / 16;
    int nz = left >= 3 ? 3 : (int)left;
    const float *B = xp + q0;
    tile_map map;
    if (fused) map_tile(d, q0, nz, &map);
    for (size_t mb = 0; mb < MB; mb++) {
      const float *A = wpk + mb * R * MR;
      float *y = yw ? yw + mb * MR * d->Qpad + q0 : NULL;
      size_t plane = d->Ho * d->Wo, c0 = mb * MR;
      tile_out o = {.map = &map,
                    .bias = bias ? bias + c0 : NULL,
                    .y = out_y ? out_y + c0 * plane : NULL,
                    .r = out_r ? out_r + c0 * plane : NULL,
                    .plane = plane,
                    .nch = (int)(d->O - c0 < MR ? d->O - c0 : MR)};
      const tile_out *op = fused ? &o : NULL;
      if (nz == 3)
        fwd_tile(R, B, A, off, y, d->Qpad, op, 3);
      else if (nz == 2)
        fwd_tile(R, B, A, off, y, d->Qpad, op, 2);
      else
        fwd_tile(R, B, A, off, y, d->Qpad, op, 1);
    }
  }
}

TGT void fk_dconv512_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                                   size_t t0, size_t t1) {
  forward_tiles(d, xp, wpk, off, yw, false, NULL, NULL, NULL, t0, t1);
}

TGT void fk_dconv512_forward_out(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off,
                                 const float *bias, float *y, float *r, size_t t0, size_t t1) {
  forward_tiles(d, xp, wpk, off, NULL, true, bias, y, r, t0, t1);
}

TGT void fk_dconv512_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n,
                        const int32_t *off, float *acc) {
  size_t MB = d->Op / MR, TB = d->Rp / NT, steps = d->Qv / 16;
  for (size_t mb = 0; mb < MB; mb++)
    for (size_t tb = 0; tb < TB; tb++) {
      float *a = acc + (mb * TB + tb) * MR * NT * 16;
      __m512 c[MR][NT];
#pragma GCC unroll 8
      for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int k = 0; k < NT; k++) c[i][k] = _mm512_loadu_ps(a + (i * NT + k) * 16);
      for (size_t img = 0; img < n; img++) {
        const float *xi = xp + img * stride, *g0 = dyw + img * stride + mb * MR * d->Qv;
        const float *x0 = xi + off[tb * NT], *x1 = xi + off[tb * NT + 1], *x2 = xi + off[tb * NT + 2];
        for (size_t s = 0; s < steps; s++) {
          size_t q = s * 16;
          __m512 b0 = _mm512_loadu_ps(x0 + q), b1 = _mm512_loadu_ps(x1 + q), b2 = _mm512_loadu_ps(x2 + q);
#pragma GCC unroll 8
          for (int i = 0; i < MR; i++) {
            __m512 g = _mm512_loadu_ps(g0 + (size_t)i * d->Qv + q);
            __asm__("" : "+v"(g)); /* one load used three times (the compiler would fold it into each FMA) */
            c[i][0] = _mm512_fmadd_ps(g, b0, c[i][0]);
            c[i][1] = _mm512_fmadd_ps(g, b1, c[i][1]);
            c[i][2] = _mm512_fmadd_ps(g, b2, c[i][2]);
          }
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < MR; i++)
#pragma GCC unroll 3
        for (int k = 0; k < NT; k++) _mm512_storeu_ps(a + (i * NT + k) * 16, c[i][k]);
    }
}

/* ---- backward-weight with the output channels in the lanes (d->dwt) ----
 * dw[r][o] += dyt[p][o] * x[c][oh + ki*dh][ow + kj] over the output positions p = (oh, ow), the
 * compact grid only (no wide-grid columns). A tile is 16*nv channels x np (c, ki) kernel rows x
 * their 3 taps kj (nv <= 2, np <= 4: 24 accumulators), kept in registers across the images; per
 * position it loads nv vectors of dyt and broadcasts 3*np input values. Each dw element is one
 * FMA chain over the images and positions in order. */

/* dyt [P][O] = dy [O][P]^T in 16 x 16 blocks (O is a multiple of 16; the last block of
 * positions masked). */
TGT void fk_dconv512_transpose_dy(const fk_dconv *d, const float *dy, float *dyt) {
  size_t P = d->Ho * d->Wo, O = d->O;
  for (size_t o0 = 0; o0 < O; o0 += 16)
    for (size_t p0 = 0; p0 < P; p0 += 16) {
      size_t np = P - p0 < 16 ? P - p0 : 16;
      __mmask16 m = tail_mask(np);
      __m512 r[16], t[16], u[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(m, dy + (o0 + (size_t)i) * P + p0);
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
      }
      /* u[4g + k], 128-bit lane L: channels 4g .. 4g+3 at position 4L + k */
#pragma GCC unroll 4
      for (int g = 0; g < 4; g++) {
        __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
        __m512d c = _mm512_castps_pd(t[4 * g + 2]), e = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; k++) {
        __m512 v = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44), w = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
        __m512 v2 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xEE), w2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xEE);
        r[k] = _mm512_shuffle_f32x4(v, w, 0x88);       /* position k */
        r[4 + k] = _mm512_shuffle_f32x4(v, w, 0xDD);   /* 4 + k */
        r[8 + k] = _mm512_shuffle_f32x4(v2, w2, 0x88); /* 8 + k */
        r[12 + k] = _mm512_shuffle_f32x4(v2, w2, 0xDD);
      }
#pragma GCC unroll 16
      for (int j = 0; j < 16; j++)
        if ((size_t)j < np) _mm512_storeu_ps(dyt + (p0 + (size_t)j) * O + o0, r[j]);
    }
}

TGT static inline __attribute__((always_inline)) void dwt_tile(const fk_dconv *d, const float *xp, const float *dyt,
                                                               size_t stride, size_t n, const int32_t *off, float *acc,
                                                               size_t ob, size_t pair0, const int nv, const int np) {
  size_t O = d->O;
  __m512 c[2][12];
#pragma GCC unroll 2
  for (int v = 0; v < nv; v++)
#pragma GCC unroll 12
    for (int t = 0; t < 3 * np; t++) c[v][t] = _mm512_loadu_ps(acc + (pair0 * 3 + (size_t)t) * O + ob + 16 * (size_t)v);
  for (size_t img = 0; img < n; img++) {
    const float *xi = xp + img * stride, *g = dyt + img * stride + ob;
    const float *px[4];
#pragma GCC unroll 4
    for (int k = 0; k < np; k++) px[k] = xi + off[(pair0 + (size_t)k) * 3];
    for (size_t oh = 0; oh < d->Ho; oh++) {
      size_t q = oh * d->Wp;
      for (size_t ow = 0; ow < d->Wo; ow++, q++, g += O) {
        __m512 g0 = _mm512_loadu_ps(g), g1 = nv > 1 ? _mm512_loadu_ps(g + 16) : g0;
#pragma GCC unroll 4
        for (int k = 0; k < np; k++)
#pragma GCC unroll 3
          for (int kj = 0; kj < 3; kj++) {
            __m512 b = _mm512_set1_ps(px[k][q + (size_t)kj]);
            c[0][k * 3 + kj] = _mm512_fmadd_ps(g0, b, c[0][k * 3 + kj]);
            if (nv > 1) c[1][k * 3 + kj] = _mm512_fmadd_ps(g1, b, c[1][k * 3 + kj]);
          }
      }
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < nv; v++)
#pragma GCC unroll 12
    for (int t = 0; t < 3 * np; t++) _mm512_storeu_ps(acc + (pair0 * 3 + (size_t)t) * O + ob + 16 * (size_t)v, c[v][t]);
}

TGT void fk_dconv512_dwt(const fk_dconv *d, const float *xp, const float *dyt, size_t stride, size_t n,
                         const int32_t *off, float *acc) {
  size_t pairs = d->C * d->kh;
  for (size_t ob = 0; ob < d->O; ob += 32) {
    bool two = d->O - ob >= 32;
    for (size_t p0 = 0; p0 < pairs; p0 += 4) {
      size_t np = pairs - p0 < 4 ? pairs - p0 : 4;
#define DWT_CASE(NV, NP) dwt_tile(d, xp, dyt, stride, n, off, acc, ob, p0, NV, NP)
      if (two) {
        if (np == 4)
          DWT_CASE(2, 4);
        else if (np == 3)
          DWT_CASE(2, 3);
        else if (np == 2)
          DWT_CASE(2, 2);
        else
          DWT_CASE(2, 1);
      } else {
        if (np == 4)
          DWT_CASE(1, 4);
        else if (np == 3)
          DWT_CASE(1, 3);
        else if (np == 2)
          DWT_CASE(1, 2);
        else
          DWT_CASE(1, 1);
      }
#undef DWT_CASE
    }
  }
}

/* ---- the copies around the tiles: rows of a few to a few tens of floats, so 16-lane chunks with
 * a masked tail instead of a memcpy call per row (same values: copies, and the epilogue's add and
 * Relu compare, which are exact IEEE operations like the scalar loops of conv_direct.c) ---- */

TGT static inline void copy_row(float *dst, const float *src, size_t n) {
  size_t k = 0;
  for (; k + 16 <= n; k += 16) _mm512_storeu_ps(dst + k, _mm512_loadu_ps(src + k));
  if (k < n) {
    __mmask16 m = tail_mask(n - k);
    _mm512_mask_storeu_ps(dst + k, m, _mm512_maskz_loadu_ps(m, src + k));
  }
}

TGT void fk_dconv512_pad(const fk_dconv *d, const float *x, float *xp, bool again) {
  if (!again) memset(xp, 0, d->xp_floats * sizeof *xp);
  for (size_t c = 0; c < d->C; c++)
    for (size_t i = 0; i < d->H; i++)
      copy_row(xp + (c * d->Hp + d->pt + i) * d->Wp + d->pl, x + (c * d->H + i) * d->W, d->W);
}

TGT void fk_dconv512_wide_dy(const fk_dconv *d, const float *dy, float *dyw, bool again) {
  if (!again) memset(dyw, 0, d->Op * d->Qv * sizeof *dyw);
  for (size_t o = 0; o < d->O; o++)
    for (size_t i = 0; i < d->Ho; i++) copy_row(dyw + o * d->Qv + i * d->Wp, dy + (o * d->Ho + i) * d->Wo, d->Wo);
}

TGT void fk_dconv512_compact(const fk_dconv *d, const float *yw, const float *bias, float *y, float *r) {
  for (size_t o = 0; o < d->O; o++) {
    __m512 b = _mm512_set1_ps(bias ? bias[o] : 0.0f);
    for (size_t i = 0; i < d->Ho; i++) {
      const float *src = yw + o * d->Qpad + i * d->Wp;
      size_t at = (o * d->Ho + i) * d->Wo;
      if (!bias) {
        copy_row(y + at, src, d->Wo);
        continue;
      }
      for (size_t k = 0; k < d->Wo; k += 16) {
        __mmask16 m = d->Wo - k >= 16 ? (__mmask16)0xFFFF : tail_mask(d->Wo - k);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, src + k), b);
        if (y) _mm512_mask_storeu_ps(y + at + k, m, v);
        if (r) _mm512_mask_storeu_ps(r + at + k, m, relu16(v));
      }
    }
  }
}

#else

void fk_dconv512_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                               size_t t0, size_t t1) {
  (void)d, (void)xp, (void)wpk, (void)off, (void)yw, (void)t0, (void)t1; /* never called: d->avx512 is false */
}
void fk_dconv512_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n, const int32_t *off,
                    float *acc) {
  (void)d, (void)xp, (void)dyw, (void)stride, (void)n, (void)off, (void)acc;
}
void fk_dconv512_forward_out(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off,
                             const float *bias, float *y, float *r, size_t t0, size_t t1) {
  (void)d, (void)xp, (void)wpk, (void)off, (void)bias, (void)y, (void)r, (void)t0, (void)t1;
}
void fk_dconv512_pad(const fk_dconv *d, const float *x, float *xp, bool again) {
  (void)d, (void)x, (void)xp, (void)again;
}
void fk_dconv512_dwt(const fk_dconv *d, const float *xp, const float *dyt, size_t stride, size_t n, const int32_t *off,
                     float *acc) {
  (void)d, (void)xp, (void)dyt, (void)stride, (void)n, (void)off, (void)acc;
}
void fk_dconv512_transpose_dy(const fk_dconv *d, const float *dy, float *dyt) { (void)d, (void)dy, (void)dyt; }
void fk_dconv512_wide_dy(const fk_dconv *d, const float *dy, float *dyw, bool again) {
  (void)d, (void)dy, (void)dyw, (void)again;
}
void fk_dconv512_compact(const fk_dconv *d, const float *yw, const float *bias, float *y, float *r) {
  (void)d, (void)yw, (void)bias, (void)y, (void)r;
}

#endif
