/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct stride-1 convolution: the geometry and buffers, and the AVX2 + FMA register tiles (used by
 * conv.c when the CPU has them; conv.c's im2col + sgemm path is the portable fallback). On the
 * avx512 path fk_dconv_init picks the AVX-512 tiles of conv_direct_avx512.c instead.
 *
 * The input channel planes are copied once into a zero-padded buffer xp [C][Hp][Wp]. On the
 * "wide" output grid q = oh * Wp + ow (ow up to Wp, the last Wp - Wo columns are garbage that is
 * dropped) every kernel tap reads xp at a fixed shift: tap r = (c, ki, kj) reads
 * xp[off[r] + q] with off[r] = c*Hp*Wp + ki*dh*Wp + kj*dw. So the convolution is a GEMM
 *   yw[o][q] = sum_r w[o][r] * xp[off[r] + q]
 * whose B operand needs no packing: its rows are unaligned loads from xp.
 *   forward / backward-input: tiles of 4 output channels x 24 positions (12 accumulators),
 *                             written to a wide buffer, then compacted to [O][Ho][Wo];
 *   backward-weight:          dw[o][r] = sum_q dyw[o][q] * xp[off[r] + q], tiles of
 *                             4 channels x 3 taps accumulating 8 positions per lane, kept in
 *                             memory across images and reduced across lanes at the end. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

#define MR 4   /* output channels per tile */
#define NRQ 24 /* wide positions per forward tile */
#define NRT 3  /* taps per backward-weight tile */

void fk_dconv_init(fk_dconv *d, size_t C, size_t O, size_t H, size_t W, size_t kh, size_t kw, size_t dh, size_t dw,
                   size_t pt, size_t pl, size_t pb, size_t pr) {
  memset(d, 0, sizeof *d);
  d->C = C;
  d->O = O;
  d->H = H;
  d->W = W;
  d->kh = kh;
  d->kw = kw;
  d->dh = dh;
  d->dw = dw;
  d->pt = pt;
  d->pl = pl;
  d->Hp = H + pt + pb;
  d->Wp = W + pl + pr;
  d->Ho = d->Hp - dh * (kh - 1);
  d->Wo = d->Wp - dw * (kw - 1);
  d->R = C * kh * kw;
  d->Rp = (d->R + NRT - 1) / NRT * NRT;
  d->avx512 = fk_isa_active() >= FK_ISA_AVX512;
  d->mr = d->avx512 ? FK_DCONV512_MR : MR;
  d->lanes = d->avx512 ? 16 : 8;
  d->nq = d->avx512 ? FK_DCONV512_NQ : NRQ;
  d->Op = (O + d->mr - 1) / d->mr * d->mr;
  d->dwt = d->avx512 && O % 16 == 0 && kw == 3 && dw == 1;
  d->Q = d->Ho * d->Wp;
  d->Qv = (d->Q + d->lanes - 1) / d->lanes * d->lanes;
  /* AVX-512: tiles of nq positions, the last one narrower (whole vectors); AVX2: whole tiles */
  d->Qpad = d->avx512 ? d->Qv : (d->Q + NRQ - 1) / NRQ * NRQ;
  /* every read stays below C*Hp*Wp + (kw-1)*dw + the tile overrun (< one tile) */
  d->xp_floats = C * d->Hp * d->Wp + (kw - 1) * dw + FK_DCONV512_NQ + 16;
}

size_t fk_dconv_wpk_floats(const fk_dconv *d) { return d->Op * d->R; }
size_t fk_dconv_tile_count(const fk_dconv *d) { return (d->Qpad + d->nq - 1) / d->nq; }
size_t fk_dconv_acc_floats(const fk_dconv *d) { return d->dwt ? d->R * d->O : d->Op * d->Rp * d->lanes; }

void fk_dconv_offsets(const fk_dconv *d, int32_t *off) {
  size_t r = 0;
  for (size_t c = 0; c < d->C; c++)
    for (size_t ki = 0; ki < d->kh; ki++)
      for (size_t kj = 0; kj < d->kw; kj++) off[r++] = (int32_t)(c * d->Hp * d->Wp + ki * d->dh * d->Wp + kj * d->dw);
  for (; r < d->Rp; r++) off[r] = 0; /* padding taps: read valid memory, results dropped */
}

void fk_dconv_pack_weight(const fk_dconv *d, const float *w, bool flipped, float *wpk) {
  size_t kk = d->kh * d->kw;
  for (size_t o = 0; o < d->Op; o++)
    for (size_t r = 0; r < d->R; r++) {
      float v = 0.0f;
      if (o < d->O) {
        if (!flipped) {
          v = w[o * d->R + r]; /* w [O][C][kh][kw] */
        } else {               /* w [C][O][kh][kw], taps reversed */
          size_t c = r / kk, t = r % kk, ki = t / d->kw, kj = t % d->kw;
          v = w[(c * d->O + o) * kk + (d->kh - 1 - ki) * d->kw + (d->kw - 1 - kj)];
        }
      }
      wpk[(o / d->mr * d->R + r) * d->mr + o % d->mr] = v;
    }
}

void fk_dconv_pad(const fk_dconv *d, const float *x, float *xp, bool again) {
  if (d->avx512) {
    fk_dconv512_pad(d, x, xp, again);
    return;
  }
  if (!again) memset(xp, 0, d->xp_floats * sizeof *xp);
  for (size_t c = 0; c < d->C; c++)
    for (size_t i = 0; i < d->H; i++)
      memcpy(xp + (c * d->Hp + d->pt + i) * d->Wp + d->pl, x + (c * d->H + i) * d->W, d->W * sizeof *x);
}

void fk_dconv_wide_dy(const fk_dconv *d, const float *dy, float *dyw, bool again) {
  if (d->dwt) {
    fk_dconv512_transpose_dy(d, dy, dyw);
    return;
  }
  if (d->avx512) {
    fk_dconv512_wide_dy(d, dy, dyw, again);
    return;
  }
  (void)again; /* the AVX2 path rewrites every element */
  for (size_t o = 0; o < d->O; o++) {
    float *row = dyw + o * d->Qv;
    for (size_t i = 0; i < d->Ho; i++) {
      memcpy(row + i * d->Wp, dy + (o * d->Ho + i) * d->Wo, d->Wo * sizeof *dy);
      memset(row + i * d->Wp + d->Wo, 0, (d->Wp - d->Wo) * sizeof *dyw); /* garbage columns add 0 */
    }
    memset(row + d->Q, 0, (d->Qv - d->Q) * sizeof *dyw);
  }
  memset(dyw + d->O * d->Qv, 0, (d->Op - d->O) * d->Qv * sizeof *dyw);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

static bool forced_off;
void fk_dconv_disable(bool off) { forced_off = off; }

/* ---- instruction-set path ---- */

static const char *const isa_names[] = {[FK_ISA_SCALAR] = "scalar", [FK_ISA_AVX2] = "avx2", [FK_ISA_AVX512] = "avx512"};

fk_isa fk_isa_cpu(void) {
#if HAVE_X86
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx2 && avx512 ? FK_ISA_AVX512 : avx2 ? FK_ISA_AVX2 : FK_ISA_SCALAR;
#else
  return FK_ISA_SCALAR;
#endif
}

const char *fk_isa_name(fk_isa isa) { return isa_names[isa]; }

static _Atomic int isa_forced = -1; /* -1: the CPU's own level */

rlx_status fk_isa_configure(void) {
  const char *v = getenv("RLX_CPU_ISA");
  fk_isa cpu = fk_isa_cpu();
  if (!v || !v[0] || strcmp(v, "auto") == 0) {
    isa_forced = -1;
    return RLX_OK;
  }
  for (int i = 0; i <= FK_ISA_AVX512; i++) {
    if (strcmp(v, isa_names[i]) != 0) continue;
    if ((fk_isa)i > cpu)
      return rlx_errorf(RLX_ERR_UNSUPPORTED,
                        "cpu: RLX_CPU_ISA=%s: this CPU cannot run the %s path (it runs up to %s); "
                        "unset RLX_CPU_ISA or pick a lower path",
                        v, v, isa_names[cpu]);
    isa_forced = i;
    return RLX_OK;
  }
  return rlx_errorf(RLX_ERR_INVALID_ARG, "cpu: RLX_CPU_ISA='%s' is not a path: expected scalar, avx2, avx512 or auto",
                    v);
}

fk_isa fk_isa_active(void) {
  int f = isa_forced;
  return f >= 0 ? (fk_isa)f : fk_isa_cpu();
}

bool fk_dconv_available(void) {
#if HAVE_X86
  static int cached = -1;
  if (forced_off) return false;
  if (cached < 0) cached = fk_isa_cpu() >= FK_ISA_AVX2;
  int f = isa_forced;
  return cached == 1 && (f < 0 || f >= FK_ISA_AVX2);
#else
  return false;
#endif
}

#if HAVE_X86

void fk_dconv_forward(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw) {
  fk_dconv_forward_tiles(d, xp, wpk, off, yw, 0, fk_dconv_tile_count(d));
}

__attribute__((target("avx2,fma"))) static void forward_tiles_avx2(const fk_dconv *d, const float *xp, const float *wpk,
                                                                   const int32_t *off, float *yw, size_t t0,
                                                                   size_t t1) {
  size_t R = d->R, MB = d->Op / MR;
  for (size_t q0 = t0 * NRQ; q0 < t1 * NRQ; q0 += NRQ) {
    const float *B = xp + q0;
    for (size_t mb = 0; mb < MB; mb++) {
      const float *A = wpk + mb * R * MR;
      __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
      __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
      for (size_t r = 0; r < R; r++) {
        const float *bp = B + off[r];
        __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8), b2 = _mm256_loadu_ps(bp + 16);
        __m256 a = _mm256_broadcast_ss(A + r * MR);
        c00 = _mm256_fmadd_ps(a, b0, c00);
        c01 = _mm256_fmadd_ps(a, b1, c01);
        c02 = _mm256_fmadd_ps(a, b2, c02);
        a = _mm256_broadcast_ss(A + r * MR + 1);
        c10 = _mm256_fmadd_ps(a, b0, c10);
        c11 = _mm256_fmadd_ps(a, b1, c11);
        c12 = _mm256_fmadd_ps(a, b2, c12);
        a = _mm256_broadcast_ss(A + r * MR + 2);
        c20 = _mm256_fmadd_ps(a, b0, c20);
        c21 = _mm256_fmadd_ps(a, b1, c21);
        c22 = _mm256_fmadd_ps(a, b2, c22);
        a = _mm256_broadcast_ss(A + r * MR + 3);
        c30 = _mm256_fmadd_ps(a, b0, c30);
        c31 = _mm256_fmadd_ps(a, b1, c31);
        c32 = _mm256_fmadd_ps(a, b2, c32);
      }
      float *y = yw + mb * MR * d->Qpad + q0;
      _mm256_storeu_ps(y, c00);
      _mm256_storeu_ps(y + 8, c01);
      _mm256_storeu_ps(y + 16, c02);
      y += d->Qpad;
      _mm256_storeu_ps(y, c10);
      _mm256_storeu_ps(y + 8, c11);
      _mm256_storeu_ps(y + 16, c12);
      y += d->Qpad;
      _mm256_storeu_ps(y, c20);
      _mm256_storeu_ps(y + 8, c21);
      _mm256_storeu_ps(y + 16, c22);
      y += d->Qpad;
      _mm256_storeu_ps(y, c30);
      _mm256_storeu_ps(y + 8, c31);
      _mm256_storeu_ps(y + 16, c32);
    }
  }
}

void fk_dconv_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                            size_t t0, size_t t1) {
  if (d->avx512)
    fk_dconv512_forward_tiles(d, xp, wpk, off, yw, t0, t1);
  else
    forward_tiles_avx2(d, xp, wpk, off, yw, t0, t1);
}

__attribute__((target("avx2,fma"))) static void dw_avx2(const fk_dconv *d, const float *xp, const float *dyw,
                                                        const int32_t *off, float *acc) {
  size_t MB = d->Op / MR, TB = d->Rp / NRT, steps = d->Qv / 8;
  for (size_t mb = 0; mb < MB; mb++) {
    const float *y0 = dyw + mb * MR * d->Qv, *y1 = y0 + d->Qv, *y2 = y1 + d->Qv, *y3 = y2 + d->Qv;
    for (size_t tb = 0; tb < TB; tb++) {
      const float *x0 = xp + off[tb * NRT], *x1 = xp + off[tb * NRT + 1], *x2 = xp + off[tb * NRT + 2];
      float *a = acc + (mb * TB + tb) * 12 * 8;
      __m256 c00 = _mm256_loadu_ps(a), c01 = _mm256_loadu_ps(a + 8), c02 = _mm256_loadu_ps(a + 16);
      __m256 c10 = _mm256_loadu_ps(a + 24), c11 = _mm256_loadu_ps(a + 32), c12 = _mm256_loadu_ps(a + 40);
      __m256 c20 = _mm256_loadu_ps(a + 48), c21 = _mm256_loadu_ps(a + 56), c22 = _mm256_loadu_ps(a + 64);
      __m256 c30 = _mm256_loadu_ps(a + 72), c31 = _mm256_loadu_ps(a + 80), c32 = _mm256_loadu_ps(a + 88);
      for (size_t s = 0; s < steps; s++) {
        size_t q = s * 8;
        __m256 b0 = _mm256_loadu_ps(x0 + q), b1 = _mm256_loadu_ps(x1 + q), b2 = _mm256_loadu_ps(x2 + q);
        __m256 g = _mm256_loadu_ps(y0 + q);
        c00 = _mm256_fmadd_ps(g, b0, c00);
        c01 = _mm256_fmadd_ps(g, b1, c01);
        c02 = _mm256_fmadd_ps(g, b2, c02);
        g = _mm256_loadu_ps(y1 + q);
        c10 = _mm256_fmadd_ps(g, b0, c10);
        c11 = _mm256_fmadd_ps(g, b1, c11);
        c12 = _mm256_fmadd_ps(g, b2, c12);
        g = _mm256_loadu_ps(y2 + q);
        c20 = _mm256_fmadd_ps(g, b0, c20);
        c21 = _mm256_fmadd_ps(g, b1, c21);
        c22 = _mm256_fmadd_ps(g, b2, c22);
        g = _mm256_loadu_ps(y3 + q);
        c30 = _mm256_fmadd_ps(g, b0, c30);
        c31 = _mm256_fmadd_ps(g, b1, c31);
        c32 = _mm256_fmadd_ps(g, b2, c32);
      }
      _mm256_storeu_ps(a, c00);
      _mm256_storeu_ps(a + 8, c01);
      _mm256_storeu_ps(a + 16, c02);
      _mm256_storeu_ps(a + 24, c10);
      _mm256_storeu_ps(a + 32, c11);
      _mm256_storeu_ps(a + 40, c12);
      _mm256_storeu_ps(a + 48, c20);
      _mm256_storeu_ps(a + 56, c21);
      _mm256_storeu_ps(a + 64, c22);
      _mm256_storeu_ps(a + 72, c30);
      _mm256_storeu_ps(a + 80, c31);
      _mm256_storeu_ps(a + 88, c32);
    }
  }
}

void fk_dconv_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n, const int32_t *off,
                 float *acc) {
  if (d->dwt) {
    fk_dconv512_dwt(d, xp, dyw, stride, n, off, acc);
    return;
  }
  if (d->avx512) {
    fk_dconv512_dw(d, xp, dyw, stride, n, off, acc);
    return;
  }
  for (size_t k = 0; k < n; k++) dw_avx2(d, xp + k * stride, dyw + k * stride, off, acc);
}

#else

void fk_dconv_forward(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw) {
  (void)d, (void)xp, (void)wpk, (void)off, (void)yw; /* never called: fk_dconv_available() is false */
}
void fk_dconv_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                            size_t t0, size_t t1) {
  (void)d, (void)xp, (void)wpk, (void)off, (void)yw, (void)t0, (void)t1;
}
void fk_dconv_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n, const int32_t *off,
                 float *acc) {
  (void)d, (void)xp, (void)dyw, (void)stride, (void)n, (void)off, (void)acc;
}

#endif

bool fk_dconv_fused_out(const fk_dconv *d) { return d->avx512; }

void fk_dconv_forward_out(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, const float *bias,
                          float *y, float *r, size_t t0, size_t t1) {
  fk_dconv512_forward_out(d, xp, wpk, off, bias, y, r, t0, t1);
}

void fk_dconv_compact(const fk_dconv *d, const float *yw, const float *bias, float *y, float *r) {
  if (d->avx512) {
    fk_dconv512_compact(d, yw, bias, y, r);
    return;
  }
  for (size_t o = 0; o < d->O; o++)
    for (size_t i = 0; i < d->Ho; i++) {
      const float *restrict src = yw + o * d->Qpad + i * d->Wp;
      float *restrict dst = y ? y + (o * d->Ho + i) * d->Wo : NULL;
      if (!bias) {
        memcpy(dst, src, d->Wo * sizeof *y);
        continue;
      }
      float b = bias[o];
      float *restrict rr = r ? r + (o * d->Ho + i) * d->Wo : NULL;
      if (!y) { /* relu(conv + bias) only */
        for (size_t k = 0; k < d->Wo; k++) {
          float v = src[k] + b;
          rr[k] = v < 0 ? 0.0f : v;
        }
        continue;
      }
      for (size_t k = 0; k < d->Wo; k++) dst[k] = src[k] + b;
      if (rr)
        for (size_t k = 0; k < d->Wo; k++) rr[k] = dst[k] < 0 ? 0.0f : dst[k]; /* NaN and -0 pass, like Relu */
    }
}

void fk_dconv_dw_finish(const fk_dconv *d, const float *acc, bool accumulate, float *dw) {
  if (d->dwt) { /* acc [R][O] */
    for (size_t o = 0; o < d->O; o++)
      for (size_t r = 0; r < d->R; r++)
        dw[o * d->R + r] = accumulate ? dw[o * d->R + r] + acc[r * d->O + o] : acc[r * d->O + o];
    return;
  }
  size_t TB = d->Rp / NRT, mr = d->mr, L = d->lanes;
  for (size_t o = 0; o < d->O; o++)
    for (size_t r = 0; r < d->R; r++) {
      const float *lanes = acc + ((o / mr * TB + r / NRT) * mr * NRT + (o % mr) * NRT + r % NRT) * L;
      float l[8];
      for (int k = 0; k < 8; k++) l[k] = L == 16 ? lanes[k] + lanes[k + 8] : lanes[k];
      float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
      dw[o * d->R + r] = accumulate ? dw[o * d->R + r] + s : s;
    }
}
