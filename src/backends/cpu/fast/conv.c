/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 2-D convolution (NCHW) and its two backward ops, threads over the images of
 * the batch (each worker with its own buffers). Forward: depthwise convolutions run on the phase
 * planes of conv_dw.c; where the AVX2 or AVX-512 path is active, one-group 3x3 stride-1 ones with
 * many channels run Winograd F(2x2, 3x3) (conv_winograd.c); on the AVX-512 path one-group
 * strided ones (and stride-1 ones of small planes with many taps) the phase planes of
 * conv_phase.c. Stride-1 convolutions
 * on a CPU with AVX2 + FMA run the direct kernels of conv_direct.c (backward-input as the forward convolution of dy
 * with the flipped, transposed weight); everything else uses im2col + sgemm:
 *   Conv                  y_bg [og, P]    = w_g [og, cg*kk] . col_bg [cg*kk, P]
 *   Conv2dBackwardInput   col [cg*kk, P]  = w_g^T . dy_bg, then col2im adds it into dx_b
 *   Conv2dBackwardWeight  dw_g           += dy_bg . col_bg^T   (per-worker partial sums added in
 *                                           worker order, so the result depends on the thread
 *                                           count only)
 * with groups, stride, dilation and (asymmetric) padding; a 1x1 stride-1 unpadded convolution
 * uses the image itself as the column matrix. Geometry follows infer_conv_util.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"
#include "infer_conv_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CONV_X86 1
#endif

/* 2-D geometry of one convolution (x: [N, Cin, H, W], y: [N, Cout, Ho, Wo]). */
typedef struct fgeo {
  size_t N, Cin, Cout, G;
  size_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw;
  int64_t ph, pw; /* begin padding */
  int64_t eh, ew; /* end padding the last window reaches (the attribute's, for stride 1) */
} fgeo;

/* Largest tap count of the direct kernels (a forward tile reads taps x 96 bytes of input). */
#define DIRECT_MAX_TAPS 1024

static size_t cg_rows(const fgeo *g) { return g->Cin / g->G * g->kh * g->kw; }

/* Forward extent of `in` along spatial axis i; false when empty. */
static bool fwd_extent(const cu_geom *c, uint32_t i, int64_t in, int64_t *out) {
  int64_t span = c->d[i] * (c->k[i] - 1), padded = in + c->pb[i] + c->pe[i];
  if (padded < span + 1) return false;
  *out = (padded - span - 1) / c->s[i] + 1;
  return true;
}

/* Parses the attributes and checks x / y spatial extents against them. k must be set in *c. */
static bool fill_geo(const cu_geom *c, const rlx_shape *x, const rlx_shape *y, fgeo *g) {
  for (uint32_t i = 0; i < 2; i++) {
    int64_t e;
    if (!fwd_extent(c, i, x->dims[2 + i], &e) || e != y->dims[2 + i]) return false;
  }
  g->N = (size_t)x->dims[0];
  g->H = (size_t)x->dims[2];
  g->W = (size_t)x->dims[3];
  g->Ho = (size_t)y->dims[2];
  g->Wo = (size_t)y->dims[3];
  g->kh = (size_t)c->k[0];
  g->kw = (size_t)c->k[1];
  g->sh = (size_t)c->s[0];
  g->sw = (size_t)c->s[1];
  g->dh = (size_t)c->d[0];
  g->dw = (size_t)c->d[1];
  g->ph = c->pb[0];
  g->pw = c->pb[1];
  g->eh = (int64_t)((g->Ho - 1) * g->sh + g->dh * (g->kh - 1) + 1) - (int64_t)g->H - g->ph;
  g->ew = (int64_t)((g->Wo - 1) * g->sw + g->dw * (g->kw - 1) + 1) - (int64_t)g->W - g->pw;
  return true;
}

/* The direct kernels apply: stride 1, AVX2 + FMA, a bounded tap count and no negative padding. */
static bool direct_ok(const fgeo *g, size_t taps) {
  return g->sh == 1 && g->sw == 1 && taps <= DIRECT_MAX_TAPS && g->eh >= 0 && g->ew >= 0 && fk_dconv_available();
}

/* The direct geometry of the forward convolution of one group (x planes -> y planes). */
static void dconv_forward_geo(const fgeo *g, fk_dconv *d) {
  fk_dconv_init(d, g->Cin / g->G, g->Cout / g->G, g->H, g->W, g->kh, g->kw, g->dh, g->dw, (size_t)g->ph, (size_t)g->pw,
                (size_t)g->eh, (size_t)g->ew);
}

/* Backward-input as a forward convolution of dy with the flipped weight: padding span - p. */
static bool dconv_input_geo(const fgeo *g, fk_dconv *d) {
  int64_t sh = (int64_t)(g->dh * (g->kh - 1)), sw = (int64_t)(g->dw * (g->kw - 1));
  int64_t pt = sh - g->ph, pb = sh - g->eh, pl = sw - g->pw, pr = sw - g->ew;
  if (pt < 0 || pb < 0 || pl < 0 || pr < 0) return false;
  fk_dconv_init(d, g->Cout / g->G, g->Cin / g->G, g->Ho, g->Wo, g->kh, g->kw, g->dh, g->dw, (size_t)pt, (size_t)pl,
                (size_t)pb, (size_t)pr);
  return d->Ho == g->H && d->Wo == g->W;
}

/* Every GEMM extent and buffer fits int / a sane size. */
static bool fits(const fgeo *g) {
  size_t og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, col;
  if (og > INT_MAX || rows > INT_MAX || P > INT_MAX || g->H * g->W > INT_MAX) return false;
  return rlx_mul_size(rows, P, &col) && col <= ((size_t)1 << 32);
}

/* Common checks: f32 rank-4 operands and output, groups in range, attributes parse. */
static bool common(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_ilist *stride,
                   const rlx_ilist *padding, const rlx_ilist *dilation, int64_t groups, cu_geom *c) {
  if (n_in != 2) return false;
  if (!fk_static_f32(&in[0].shape) || !fk_static_f32(&in[1].shape) || !fk_static_f32(&n->shape)) return false;
  if (in[0].shape.rank != 4 || in[1].shape.rank != 4 || n->shape.rank != 4) return false;
  if (groups < 1 || groups > INT_MAX) return false;
  return cu_parse(2, stride, padding, dilation, NULL, c) == RLX_OK;
}

/* Kernel extents from the weight (axes 2, 3); kernel_size, when given, must repeat them. */
static bool weight_kernel(const rlx_shape *w, const rlx_ilist *ks, cu_geom *c) {
  for (uint32_t i = 0; i < 2; i++) {
    if (w->dims[2 + i] < 1 || w->dims[2 + i] > CU_MAX_ATTR) return false;
    c->k[i] = w->dims[2 + i];
    if (ks->n && (ks->n != 2 || ks->v[i] != c->k[i])) return false;
  }
  return true;
}

/* ---- im2col / col2im for one image and one group (channels c0 .. c0 + C) ---- */

/* Output columns [lo, hi) of a row whose tap reads input column ow*sw + off, off = kj*dw - pw. */
static void valid_cols(const fgeo *g, int64_t off, size_t *lo, size_t *hi) {
  int64_t sw = (int64_t)g->sw, W = (int64_t)g->W, l = 0, h;
  if (off < 0) l = (-off + sw - 1) / sw;
  if (W - 1 - off < 0)
    h = 0;
  else
    h = (W - 1 - off) / sw + 1;
  if (h > (int64_t)g->Wo) h = (int64_t)g->Wo;
  if (l > h) l = h;
  *lo = (size_t)l;
  *hi = (size_t)h;
}

static void im2col(const fgeo *g, const float *x, size_t C, float *restrict col) {
  size_t P = g->Ho * g->Wo;
  for (size_t c = 0; c < C; c++) {
    const float *xc = x + c * g->H * g->W;
    for (size_t ki = 0; ki < g->kh; ki++)
      for (size_t kj = 0; kj < g->kw; kj++) {
        float *row = col + ((c * g->kh + ki) * g->kw + kj) * P;
        int64_t off = (int64_t)(kj * g->dw) - g->pw;
        size_t lo, hi;
        valid_cols(g, off, &lo, &hi);
        for (size_t oh = 0; oh < g->Ho; oh++) {
          float *r = row + oh * g->Wo;
          int64_t ih = (int64_t)(oh * g->sh + ki * g->dh) - g->ph;
          if (ih < 0 || ih >= (int64_t)g->H || lo >= hi) {
            memset(r, 0, g->Wo * sizeof *r);
            continue;
          }
          const float *xr = xc + (size_t)ih * g->W;
          for (size_t ow = 0; ow < lo; ow++) r[ow] = 0.0f;
          if (g->sw == 1)
            memcpy(r + lo, xr + (int64_t)lo + off, (hi - lo) * sizeof *r);
          else
            for (size_t ow = lo; ow < hi; ow++) r[ow] = xr[(int64_t)(ow * g->sw) + off];
          for (size_t ow = hi; ow < g->Wo; ow++) r[ow] = 0.0f;
        }
      }
  }
}

static void col2im(const fgeo *g, const float *restrict col, size_t C, float *x) {
  size_t P = g->Ho * g->Wo;
  for (size_t c = 0; c < C; c++) {
    float *xc = x + c * g->H * g->W;
    for (size_t ki = 0; ki < g->kh; ki++)
      for (size_t kj = 0; kj < g->kw; kj++) {
        const float *row = col + ((c * g->kh + ki) * g->kw + kj) * P;
        int64_t off = (int64_t)(kj * g->dw) - g->pw;
        size_t lo, hi;
        valid_cols(g, off, &lo, &hi);
        if (lo >= hi) continue;
        for (size_t oh = 0; oh < g->Ho; oh++) {
          int64_t ih = (int64_t)(oh * g->sh + ki * g->dh) - g->ph;
          if (ih < 0 || ih >= (int64_t)g->H) continue;
          const float *r = row + oh * g->Wo;
          float *xr = xc + (size_t)ih * g->W;
          if (g->sw == 1) {
            float *restrict d = xr + (int64_t)lo + off;
            const float *restrict s = r + lo;
            for (size_t i = 0; i < hi - lo; i++) d[i] += s[i];
          } else {
            for (size_t ow = lo; ow < hi; ow++) xr[(int64_t)(ow * g->sw) + off] += r[ow];
          }
        }
      }
  }
}

/* A 1x1, stride-1, unpadded convolution reads the image as its own column matrix. */
static bool direct_cols(const fgeo *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->Ho == g->H &&
         g->Wo == g->W;
}

/* ---- 1x1 expansion convolutions on the AVX2 path: gemm_packed.c's one-thread tiles ----
 * A 1x1 stride-1 convolution of one group with at least as many output as input channels
 * (mobilenet's expansions) is y [O, P] = w [O, C] . x [C, P]: columns [p0, p1) of x packed into
 * 32-column panels, then fk_gemm_packed with w read in place (sgemm packs both operands on every
 * call, and zeroes C first). Measured on Zen 3, 1 thread, hot operands, against cblas_sgemm:
 * 72x16 . 16x3136 0.18 against 0.26 ms, 96x24 . 24x784 0.072 against 0.099, 288x48 . 48x196
 * 0.103 against 0.120, 576x96 . 96x49 0.116 against 0.126; the projections (C > O) were 10-20%
 * slower and P = 1 (the squeeze-excite convolutions) 17-65% slower, so they keep sgemm. Every
 * element is one fused multiply-add chain over C: the same bits whatever the column split.
 * The AVX-512 path keeps sgemm (not measured there). */
#define PACKED_1X1_MIN_P 32
static bool packed_1x1(const fgeo *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->Ho == g->H &&
         g->Wo == g->W && g->G == 1 && g->Cout >= g->Cin && g->Ho * g->Wo >= PACKED_1X1_MIN_P &&
         fk_isa_active() == FK_ISA_AVX2 && fk_gemm_packed_fast();
}

/* floats of one chunk's packed panels (all P columns) */
static size_t packed_1x1_floats(const fgeo *g) {
  return fk_align64(fk_gemm_packed_b_floats(g->Cin, g->Ho * g->Wo) * sizeof(float)) / sizeof(float);
}

/* y [O, P] rows [o0, o1), columns [p0, p1) = w . x (x, y: one image, row stride P); bp:
 * packed_1x1_floats */
static void gemm_1x1(const fgeo *g, const float *w, const float *x, float *y, size_t o0, size_t o1, size_t p0,
                     size_t p1, float *bp) {
  size_t P = g->Ho * g->Wo;
  fk_gemm_pack_b(g->Cin, p1 - p0, x + p0, P, false, bp);
  fk_gemm_packed(o1 - o0, p1 - p0, g->Cin, w + o0 * g->Cin, g->Cin, bp, y + o0 * P + p0, P);
}

/* ---- 1x1 convolutions of one position (squeeze-excite) on the AVX2 and AVX-512 paths: a GEMV ----
 * y [O] = w [O, C] . x [C]. sgemm with N = 1 packs the whole weight matrix on every call (0.08-0.11
 * ms per squeeze-excite convolution of mobilenet_v3_small at b1); here each row is one pass over
 * w: 4 x 8 lanes of fused multiply-adds over c, the lanes summed in a fixed order, the C % 8 tail
 * added last. The same bits whatever the row split. The AVX-512 path takes it too (bench_kernels
 * mobilenet, Zen 4, 1 thread: 144 -> 576 5.1 -> 3.5 us, 64 -> 240 1.3 -> 0.8 us against sgemm). */
static bool gemv_1x1(const fgeo *g) {
#if CONV_X86
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->Ho == 1 && g->Wo == 1 &&
         g->H == 1 && g->W == 1 && g->G == 1 && fk_isa_active() >= FK_ISA_AVX2;
#else
  (void)g;
  return false;
#endif
}

#if CONV_X86
__attribute__((target("avx2,fma"))) static void gemv_rows(const float *w, const float *x, float *y, size_t C,
                                                          size_t o0, size_t o1) {
  for (size_t o = o0; o < o1; o++) {
    const float *r = w + o * C;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t c = 0;
    for (; c + 32 <= C; c += 32) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + c), _mm256_loadu_ps(x + c), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(r + c + 8), _mm256_loadu_ps(x + c + 8), a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(r + c + 16), _mm256_loadu_ps(x + c + 16), a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(r + c + 24), _mm256_loadu_ps(x + c + 24), a3);
    }
    for (; c + 8 <= C; c += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(r + c), _mm256_loadu_ps(x + c), a0);
    __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float sum = _mm_cvtss_f32(h);
    for (; c < C; c++) sum += r[c] * x[c];
    y[o] = sum;
  }
}
#else
static void gemv_rows(const float *w, const float *x, float *y, size_t C, size_t o0, size_t o1) {
  (void)w, (void)x, (void)y, (void)C, (void)o0, (void)o1;
}
#endif

/* ======================================================================================
 * Conv (forward)
 * ====================================================================================== */

static bool conv_geo(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, fgeo *g) {
  const rlx_attrs_Conv *a = &n->attrs.Conv;
  cu_geom c;
  if (!common(n, in, n_in, &a->stride, &a->padding, &a->dilation, a->groups, &c)) return false;
  const rlx_shape *x = &in[0].shape, *w = &in[1].shape, *y = &n->shape;
  if (!weight_kernel(w, &a->kernel_size, &c)) return false;
  g->G = (size_t)a->groups;
  g->Cin = (size_t)x->dims[1];
  g->Cout = (size_t)w->dims[0];
  if (g->Cin % g->G || g->Cout % g->G || (size_t)w->dims[1] != g->Cin / g->G) return false;
  if (y->dims[0] != x->dims[0] || (size_t)y->dims[1] != g->Cout) return false;
  return fill_geo(&c, x, y, g) && fits(g);
}

FK_APPLIES(Conv) {
  fgeo g;
  return conv_geo(n, in, n_in, &g);
}

typedef struct conv_job {
  fgeo g;
  const float *x, *w, *dy;
  float *y;         /* forward output, or dx / dw */
  float *scratch;   /* per chunk: col (+ dw partial), or the direct kernels' buffers */
  size_t per_chunk; /* floats of scratch per chunk */
  /* weight gradient: the batch is cut into n_parts parts (fk_parts), each summed into its own
     partial buffer of part_floats at `parts` (part 0 of the im2col path: the output itself) */
  float *parts;
  size_t part_floats;
  int n_parts;
  /* direct kernels */
  bool direct;
  fk_dconv d;
  const float *wpk; /* packed weights of every group */
  const int32_t *off;
  /* forward epilogue (the executor's Conv + bias + activation fusion): y is then z = conv +
     bias[channel] and r, when not NULL, receives act(z); with relu_in_y (named when Relu was the
     only activation), y itself becomes act(conv + bias) (z is not kept) */
  const float *bias; /* NULL: no bias (the activation only) */
  float *r;
  bool epi; /* the epilogue runs (bias and / or activation) */
  bool relu_in_y;
  rlx_act act;
} conv_job;

/* The activation of the epilogue over n elements whose z = conv + bias is at y (at offset `at`
 * of the output): in place with relu_in_y, else into r when there is one. */
static void epilogue_act(const conv_job *j, size_t at, size_t n) {
  if (j->relu_in_y)
    fk_conv_act(j->act, j->y + at, j->y + at, n);
  else if (j->r)
    fk_conv_act(j->act, j->y + at, j->r + at, n);
}

/* The epilogue over channels [c0, c0 + C) of image b (output planes of P elements). */
static void epilogue_planes(const conv_job *j, size_t b, size_t c0, size_t C, size_t P) {
  if (!j->epi) return;
  for (size_t c = c0; c < c0 + C; c++) {
    size_t at = (b * j->g.Cout + c) * P;
    if (j->bias) {
      float *restrict z = j->y + at, bias = j->bias[c];
      for (size_t i = 0; i < P; i++) z[i] += bias;
    }
    epilogue_act(j, at, P);
  }
}

/* Shared part of the direct kernels' scratch: packed weights (G groups) and tap offsets. */
static size_t direct_shared_floats(const fgeo *g, const fk_dconv *d) {
  return fk_align64((g->G * fk_dconv_wpk_floats(d) + d->Rp) * sizeof(float)) / sizeof(float);
}

/* Fills the shared part (weights of every group, flipped for backward-input). */
static void direct_prepare(conv_job *j, bool flipped) {
  const fgeo *g = &j->g;
  float *wpk = j->scratch;
  size_t per_group = fk_dconv_wpk_floats(&j->d), wg = g->Cout / g->G * (g->Cin / g->G) * g->kh * g->kw;
  for (size_t gr = 0; gr < g->G; gr++) fk_dconv_pack_weight(&j->d, j->w + gr * wg, flipped, wpk + gr * per_group);
  int32_t *off = (int32_t *)(wpk + g->G * per_group);
  fk_dconv_offsets(&j->d, off);
  j->wpk = wpk;
  j->off = off;
}

/* Direct forward convolution of images lo..hi (forward: x -> y; backward-input: dy -> dx). */
static void direct_conv_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  const fk_dconv *d = &j->d;
  size_t shared = direct_shared_floats(g, d), per_group = fk_dconv_wpk_floats(d);
  float *xp = j->scratch + shared + (size_t)chunk * j->per_chunk;
  float *yw = xp + fk_align64(d->xp_floats * sizeof(float)) / sizeof(float);
  const float *src = j->x ? j->x : j->dy;
  for (size_t b = lo; b < hi; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      fk_dconv_pad(d, src + (b * g->G + gr) * d->C * d->H * d->W, xp, b > lo || gr > 0);
      size_t at = (b * g->G + gr) * d->O * d->Ho * d->Wo;
      const float *bias = j->bias ? j->bias + gr * d->O : NULL;
      if (fk_dconv_fused_out(d)) { /* no wide buffer: the tiles write y (and r) themselves */
        float *y = j->relu_in_y ? NULL : j->y + at, *r = j->relu_in_y ? j->y + at : (j->r ? j->r + at : NULL);
        fk_dconv_forward_out(d, xp, j->wpk + gr * per_group, j->off, bias, y, r, 0, fk_dconv_tile_count(d));
        continue;
      }
      fk_dconv_forward(d, xp, j->wpk + gr * per_group, j->off, yw);
      if (j->relu_in_y)
        fk_dconv_compact(d, yw, bias, NULL, j->y + at);
      else
        fk_dconv_compact(d, yw, bias, j->y + at, j->r ? j->r + at : NULL);
    }
}

/* One image and group of the direct kernel across the threads: tiles of the wide grid, then the
 * compaction by output channel (each tile is computed the same way whatever the split). */
typedef struct dintra_job {
  const conv_job *j;
  const float *xp, *wpk;
  float *yw, *y, *r;
  const float *bias;
} dintra_job;

static void dintra_tiles_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const dintra_job *t = arg;
  if (fk_dconv_fused_out(&t->j->d))
    fk_dconv_forward_out(&t->j->d, t->xp, t->wpk, t->j->off, t->bias, t->y, t->r, lo, hi);
  else
    fk_dconv_forward_tiles(&t->j->d, t->xp, t->wpk, t->j->off, t->yw, lo, hi);
}

static void dintra_compact_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const dintra_job *t = arg;
  fk_dconv sub = t->j->d;
  sub.O = hi - lo;
  size_t plane = sub.Ho * sub.Wo;
  float *y = t->y ? t->y + lo * plane : NULL, *r = t->r ? t->r + lo * plane : NULL;
  fk_dconv_compact(&sub, t->yw + lo * sub.Qpad, t->bias ? t->bias + lo : NULL, y, r);
}

static void direct_intra(conv_job *j, rlx_cpu_ctx *ctx) {
  const fgeo *g = &j->g;
  const fk_dconv *d = &j->d;
  size_t shared = direct_shared_floats(g, d), per_group = fk_dconv_wpk_floats(d);
  float *xp = j->scratch + shared;
  float *yw = xp + fk_align64(d->xp_floats * sizeof(float)) / sizeof(float);
  const float *src = j->x ? j->x : j->dy;
  for (size_t b = 0; b < g->N; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      fk_dconv_pad(d, src + (b * g->G + gr) * d->C * d->H * d->W, xp, b > 0 || gr > 0);
      size_t at = (b * g->G + gr) * d->O * d->Ho * d->Wo;
      dintra_job t = {.j = j, .xp = xp, .wpk = j->wpk + gr * per_group, .yw = yw};
      t.bias = j->bias ? j->bias + gr * d->O : NULL;
      t.y = j->relu_in_y ? NULL : j->y + at;
      t.r = j->relu_in_y ? j->y + at : (j->r ? j->r + at : NULL);
      fk_parallel_for(ctx, fk_dconv_tile_count(d), 1, dintra_tiles_task, &t);
      if (!fk_dconv_fused_out(d)) fk_parallel_for(ctx, d->O, 1, dintra_compact_task, &t);
    }
}

/* Runs direct_conv_task over the batch (j->x or j->dy set, j->d filled). */
static rlx_status direct_conv(conv_job *j, bool flipped, rlx_cpu_ctx *ctx, const char *op) {
  const fk_dconv *d = &j->d;
  if (fk_chunks(ctx, (size_t)FK_DET_MAX_PARTS, 1) > (int)(j->g.N < INT_MAX ? j->g.N : INT_MAX)) {
    j->per_chunk = fk_align64(d->xp_floats * sizeof(float)) / sizeof(float) + d->Op * d->Qpad;
    j->scratch = fk_scratch(ctx, (direct_shared_floats(&j->g, d) + j->per_chunk) * sizeof(float));
    if (!j->scratch) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for the convolution buffers", op);
    direct_prepare(j, flipped);
    direct_intra(j, ctx);
    fk_scratch_release(ctx, j->scratch);
    return RLX_OK;
  }
  int chunks = fk_chunks(ctx, j->g.N, 1);
  j->per_chunk = fk_align64(d->xp_floats * sizeof(float)) / sizeof(float) + d->Op * d->Qpad;
  size_t total = direct_shared_floats(&j->g, d) + j->per_chunk * (size_t)chunks;
  j->scratch = fk_scratch(ctx, total * sizeof(float));
  if (!j->scratch) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for the convolution buffers", op);
  direct_prepare(j, flipped);
  fk_parallel_for(ctx, j->g.N, 1, direct_conv_task, j);
  fk_scratch_release(ctx, j->scratch);
  return RLX_OK;
}

static void conv_fwd_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, Pin = g->H * g->W;
  float *col = j->scratch + (size_t)chunk * j->per_chunk;
  for (size_t item = lo; item < hi; item++) { /* item = image * G + group */
    size_t b = item / g->G, gr = item % g->G;
    const float *xg = j->x + (b * g->Cin + gr * cg) * Pin;
    const float *cm = xg;
    if (!direct_cols(g)) {
      im2col(g, xg, cg, col);
      cm = col;
    }
    if (packed_1x1(g))
      gemm_1x1(g, j->w, cm, j->y + b * g->Cout * P, 0, og, 0, P, col);
    else if (gemv_1x1(g))
      gemv_rows(j->w, cm, j->y + b * g->Cout, g->Cin, 0, og);
    else
      fk_sgemm(false, false, og, P, rows, j->w + gr * og * rows, rows, cm, P, false,
               j->y + (b * g->Cout + gr * og) * P, P);
    epilogue_planes(j, b, gr * og, og, P);
  }
}

/* ---- one image and group across every thread (batch 1, few groups) ----
 * The GEMM y_bg [og, P] = w_g . col_bg is cut into `ways` blocks of columns (when P has at least
 * 64 per block) or else of output channels: ways = fk_det_gemm_ways() in deterministic mode (the
 * machine's cores, whatever `threads` is), else the thread count. Every block is one sgemm call,
 * which repacks its operands, so there are no more blocks than threads can use. Each output
 * element is computed by one call over the same K. */
typedef struct intra_job {
  const conv_job *j;
  size_t b, gr;
  const float *cm;           /* the column matrix [rows, P] */
  float *col;                /* im2col target */
  size_t col_step, row_step; /* block extents (one of them the whole extent) */
  size_t n_blocks;
  bool packed; /* packed_1x1 (col: per chunk, packed_1x1_floats) */
  bool gemv;   /* gemv_1x1 */
} intra_job;

static void intra_im2col_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const intra_job *t = arg;
  const fgeo *g = &t->j->g;
  size_t cg = g->Cin / g->G, kk = g->kh * g->kw, P = g->Ho * g->Wo, Pin = g->H * g->W;
  const float *xg = t->j->x + (t->b * g->Cin + t->gr * cg) * Pin;
  im2col(g, xg + lo * Pin, hi - lo, t->col + lo * kk * P);
}

static void intra_gemm_task(void *arg, size_t lo, size_t hi, int chunk) {
  const intra_job *t = arg;
  const conv_job *j = t->j;
  const fgeo *g = &j->g;
  size_t og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo;
  const float *w = j->w + t->gr * og * rows;
  float *y = j->y + (t->b * g->Cout + t->gr * og) * P;
  for (size_t blk = lo; blk < hi; blk++) {
    size_t o0 = 0, o1 = og, p0 = 0, p1 = P;
    if (t->col_step < P) {
      p0 = blk * t->col_step;
      p1 = p0 + t->col_step < P ? p0 + t->col_step : P;
    } else {
      o0 = blk * t->row_step;
      o1 = o0 + t->row_step < og ? o0 + t->row_step : og;
    }
    if (t->packed)
      gemm_1x1(g, w, t->cm, y, o0, o1, p0, p1, t->col + (size_t)chunk * packed_1x1_floats(g));
    else if (t->gemv)
      gemv_rows(w, t->cm, y, rows, o0, o1);
    else
      fk_sgemm(false, false, o1 - o0, p1 - p0, rows, w + o0 * rows, rows, t->cm + p0, P, false, y + o0 * P + p0, P);
    if (!j->epi) continue;
    /* the epilogue on this block */
    for (size_t o = o0; o < o1; o++) {
      size_t c = t->gr * og + o;
      float *restrict z = y + o * P, bias = j->bias ? j->bias[c] : 0.0f;
      if (j->bias)
        for (size_t i = p0; i < p1; i++) z[i] += bias;
      epilogue_act(j, (t->b * g->Cout + c) * P + p0, p1 - p0);
    }
  }
}

/* The whole forward convolution image by image, each image's GEMM split across the threads. */
static void intra_forward(conv_job *j, rlx_cpu_ctx *ctx) {
  const fgeo *g = &j->g;
  size_t P = g->Ho * g->Wo, og = g->Cout / g->G, cg = g->Cin / g->G, Pin = g->H * g->W;
  intra_job t = {.j = j, .col = j->scratch, .col_step = P, .row_step = og, .packed = packed_1x1(g), .gemv = gemv_1x1(g)};
  size_t ways = ctx && ctx->deterministic ? (size_t)fk_det_gemm_ways() : (size_t)fk_chunks(ctx, FK_DET_MAX_PARTS, 1);
  if (ways > 1 && P >= 64 * ways)
    t.col_step = (P / ways + 15) / 16 * 16; /* whole 16-column panels */
  else if (ways > 1 && og >= 8 * ways)
    t.row_step = (og / ways + 7) / 8 * 8;
  t.n_blocks = (P + t.col_step - 1) / t.col_step * ((og + t.row_step - 1) / t.row_step);
  for (size_t b = 0; b < g->N; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      t.b = b;
      t.gr = gr;
      if (direct_cols(g)) {
        t.cm = j->x + (b * g->Cin + gr * cg) * Pin;
      } else {
        fk_parallel_for(ctx, cg, 1, intra_im2col_task, &t);
        t.cm = t.col;
      }
      fk_parallel_for(ctx, t.n_blocks, 1, intra_gemm_task, &t);
    }
}

/* Images x groups too few to occupy the threads? In deterministic mode the answer depends on
 * the shape and the machine only (as if for fk_det_gemm_ways() threads), so every thread count
 * takes one path. */
static bool use_intra(const fgeo *g, rlx_cpu_ctx *ctx) {
  size_t items = g->N * g->G;
  if (ctx && ctx->deterministic) return items < (size_t)fk_det_gemm_ways();
  return (size_t)fk_chunks(ctx, (size_t)FK_DET_MAX_PARTS, 1) > items;
}

/* ---- depthwise: groups == C_in == C_out, one input plane per output plane ----
 * Each plane is copied into a zero-padded buffer [Hp][Wp] (the window's reach on every side), so
 * the tap loops need no bounds checks. Stride 1: every tap adds w * xp[q + offset] over the whole
 * wide grid q < Ho * Wp in one long loop (columns >= Wo are dropped when compacting); other
 * strides: per output row and tap, a strided loop over the row. Taps in (ki, kj) order, f32;
 * planes split across the threads (each plane by one thread, whatever the split). */
static bool depthwise(const fgeo *g) { return g->G > 1 && g->G == g->Cin && g->G == g->Cout; }

/* Tests: force the plain depthwise loops instead of conv_dw.c's phase-plane kernels. */
static bool dw_plain, dw_no_blocks;
void fk_dw_disable(bool off) { dw_plain = off; }
void fk_dwc_disable(bool off) { dw_no_blocks = off; }

typedef struct dw_geo {
  size_t Hp, Wp, pt, pl, wide; /* padded plane; wide grid (stride 1) or 0 */
} dw_geo;

static void dw_geometry(const fgeo *g, dw_geo *d) {
  d->pt = (size_t)(g->ph > 0 ? g->ph : 0);
  d->pl = (size_t)(g->pw > 0 ? g->pw : 0);
  /* rows / columns the last window reaches (covers negative end padding too) */
  d->Hp = (g->Ho - 1) * g->sh + g->dh * (g->kh - 1) + 1;
  d->Wp = (g->Wo - 1) * g->sw + g->dw * (g->kw - 1) + 1;
  if (d->Hp < d->pt + g->H) d->Hp = d->pt + g->H;
  if (d->Wp < d->pl + g->W) d->Wp = d->pl + g->W;
  d->wide = g->sh == 1 && g->sw == 1 ? g->Ho * d->Wp : 0;
}

static size_t dw_scratch_floats(const dw_geo *d) {
  return fk_align64((d->Hp * d->Wp + d->wide + 8) * sizeof(float)) / sizeof(float);
}

typedef struct dw_job {
  const conv_job *j;
  dw_geo d;
  fk_dw f; /* the phase-plane kernels of conv_dw.c, when fast */
  bool fast;
  fk_dwc cb; /* conv_dw.c's channel blocks, when blocks */
  bool blocks;
  float *scratch;
} dw_job;

/* Items lo..hi (image x channel block) on conv_dw.c's channel-block kernel. */
static void depthwise_blocks_task(void *arg, size_t lo, size_t hi, int chunk) {
  const dw_job *t = arg;
  const conv_job *j = t->j;
  const fgeo *g = &j->g;
  float *s = t->scratch + (size_t)chunk * fk_dwc_scratch_floats(&t->cb);
  size_t nb = fk_dwc_blocks(&t->cb), P = g->Ho * g->Wo, Pin = g->H * g->W;
  fk_dwc_prepare(&t->cb, s);
  for (size_t item = lo; item < hi; item++) {
    size_t n = item / nb, c0 = item % nb * 16, at = n * g->Cin * P;
    float *z = j->relu_in_y ? NULL : j->y + at;
    float *r = j->relu_in_y ? j->y + at : (j->r ? j->r + at : NULL);
    fk_dwc_block(&t->cb, j->x + n * g->Cin * Pin, j->w, j->bias, c0, j->act, j->epi, z, r, s);
  }
}

/* Planes lo..hi on conv_dw.c's kernels, the epilogue fused into the store. */
static void depthwise_fast_task(void *arg, size_t lo, size_t hi, int chunk) {
  const dw_job *t = arg;
  const conv_job *j = t->j;
  const fgeo *g = &j->g;
  float *s = t->scratch + (size_t)chunk * fk_dw_scratch_floats(&t->f);
  size_t kk = g->kh * g->kw, P = g->Ho * g->Wo, Pin = g->H * g->W;
  fk_dw_prepare(&t->f, s);
  for (size_t plane = lo; plane < hi; plane++) {
    size_t c = plane % g->Cin;
    float *z = j->relu_in_y ? NULL : j->y + plane * P;
    float *r = j->relu_in_y ? j->y + plane * P : (j->r ? j->r + plane * P : NULL);
    fk_dw_plane(&t->f, j->x + plane * Pin, j->w + c * kk, j->bias ? j->bias + c : NULL, j->act, j->epi, z, r, s);
  }
}

static void depthwise_task(void *arg, size_t lo, size_t hi, int chunk) {
  const dw_job *t = arg;
  const conv_job *j = t->j;
  const fgeo *g = &j->g;
  const dw_geo *d = &t->d;
  float *xp = t->scratch + (size_t)chunk * dw_scratch_floats(d), *yw = xp + d->Hp * d->Wp;
  size_t kk = g->kh * g->kw, P = g->Ho * g->Wo, Pin = g->H * g->W;
  /* the input offset of padded row 0 / column 0 (negative begin padding crops) */
  size_t crop_r = (size_t)(g->ph < 0 ? -g->ph : 0), crop_c = (size_t)(g->pw < 0 ? -g->pw : 0);
  memset(xp, 0, d->Hp * d->Wp * sizeof *xp);
  for (size_t plane = lo; plane < hi; plane++) {
    size_t c = plane % g->Cin;
    const float *x = j->x + plane * Pin, *w = j->w + c * kk;
    float *y = j->y + plane * P;
    for (size_t r = crop_r; r < g->H && d->pt + r - crop_r < d->Hp; r++) {
      size_t n = g->W - crop_c < d->Wp - d->pl ? g->W - crop_c : d->Wp - d->pl;
      memcpy(xp + (d->pt + r - crop_r) * d->Wp + d->pl, x + r * g->W + crop_c, n * sizeof *xp);
    }
    if (d->wide) {
      float *restrict acc = yw;
      for (size_t q = 0; q < d->wide; q++) acc[q] = 0.0f;
      for (size_t ki = 0; ki < g->kh; ki++)
        for (size_t kj = 0; kj < g->kw; kj++) {
          float wv = w[ki * g->kw + kj];
          const float *restrict src = xp + ki * g->dh * d->Wp + kj * g->dw;
          for (size_t q = 0; q < d->wide; q++) acc[q] += wv * src[q];
        }
      for (size_t oh = 0; oh < g->Ho; oh++) memcpy(y + oh * g->Wo, acc + oh * d->Wp, g->Wo * sizeof *y);
    } else {
      for (size_t oh = 0; oh < g->Ho; oh++) {
        float *restrict yr = y + oh * g->Wo;
        for (size_t ow = 0; ow < g->Wo; ow++) yr[ow] = 0.0f;
        for (size_t ki = 0; ki < g->kh; ki++)
          for (size_t kj = 0; kj < g->kw; kj++) {
            float wv = w[ki * g->kw + kj];
            const float *restrict src = xp + (oh * g->sh + ki * g->dh) * d->Wp + kj * g->dw;
            for (size_t ow = 0; ow < g->Wo; ow++) yr[ow] += wv * src[ow * g->sw];
          }
      }
    }
    epilogue_planes(j, plane / g->Cin, c, 1, P);
  }
}

static rlx_status depthwise_forward(conv_job *j, rlx_cpu_ctx *ctx) {
  dw_job t = {.j = j};
  const fgeo *g = &j->g;
  dw_geometry(g, &t.d);
  t.blocks =
      !dw_plain && !dw_no_blocks &&
      fk_dwc_init(&t.cb, g->Cin, g->H, g->W, g->Ho, g->Wo, g->kh, g->kw, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw);
  if (t.blocks) {
    size_t items = g->N * fk_dwc_blocks(&t.cb);
    int chunks = fk_chunks(ctx, items, 1);
    t.scratch = fk_scratch(ctx, (size_t)chunks * fk_dwc_scratch_floats(&t.cb) * sizeof(float));
    if (!t.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the depthwise buffers");
    fk_parallel_for(ctx, items, 1, depthwise_blocks_task, &t);
    fk_scratch_release(ctx, t.scratch);
    return RLX_OK;
  }
  t.fast =
      !dw_plain && fk_dw_init(&t.f, g->H, g->W, g->Ho, g->Wo, g->kh, g->kw, g->sh, g->sw, g->dh, g->dw, g->ph, g->pw);
  size_t planes = g->N * g->Cin, per = t.fast ? fk_dw_scratch_floats(&t.f) : dw_scratch_floats(&t.d);
  int chunks = fk_chunks(ctx, planes, 1);
  t.scratch = fk_scratch(ctx, (size_t)chunks * per * sizeof(float));
  if (!t.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the depthwise buffers");
  fk_parallel_for(ctx, planes, 1, t.fast ? depthwise_fast_task : depthwise_task, &t);
  fk_scratch_release(ctx, t.scratch);
  return RLX_OK;
}

/* ---- one group, strided (or large-kernel) on the phase planes of conv_phase.c (AVX-512) ---- */

static bool pconv_plain;
void fk_pconv_disable(bool off) { pconv_plain = off; }

/* The strided convolutions with kernels larger than 1x1 go to the phase planes (1x1 strided:
 * im2col is a cheap gather there, and the GEMM is faster, measured), and so do the stride-1 ones
 * of small planes and many taps, the deep layers of a CNN (resnet18's 3x3 convolutions on 28x28
 * to 7x7 planes: 2.1-2.4 ms each at batch 1 against 2.2-3.4 ms on the AVX-512 direct tiles,
 * measured on this branch's Xeon); the direct kernels (conv_direct.c) keep the large planes
 * (56x56: 1.6 against 2.0 ms) and the few-channel layers of small CNNs.
 * On AVX2 (measured with 4 x 16 tiles, Zen 3, 1 thread, CPU time; the 24/24/16 slices now in
 * conv_phase.c are faster still) the phase planes win on the stems only:
 * resnet18's 7x7 from 3 channels at b1 about 6-6.7 against 7.8-9 ms, mobilenet_v3_small's 3x3
 * from 3 channels 0.82-0.85 against 0.91-1.3 ms; resnet's 3x3 stride-2 convolutions from 64 to
 * 256 channels were slower than im2col + sgemm (2.9-4.2 against 2.3-2.9 ms). */
#define PCONV_AVX2_MAX_CIN 16
#define PCONV_S1_MAX_PLANE 1024
#define PCONV_S1_MIN_TAPS 256
static bool pconv_pick(const fgeo *g, fk_pconv *d) {
  if (pconv_plain || g->G != 1 || !fk_pconv_available() || g->kh * g->kw == 1) return false;
  /* AVX2: the strided ones of few input channels only (the stems); stride 1 stays on the direct
     kernels and Winograd, and im2col + sgemm is faster where the channels are many */
  if (fk_isa_active() != FK_ISA_AVX512 && ((g->sh == 1 && g->sw == 1) || g->Cin > PCONV_AVX2_MAX_CIN)) return false;
  if (g->sh == 1 && g->sw == 1 && (g->Ho * g->Wo > PCONV_S1_MAX_PLANE || cg_rows(g) < PCONV_S1_MIN_TAPS)) return false;
  return fk_pconv_init(d, g->Cin, g->Cout, g->H, g->W, g->Ho, g->Wo, g->kh, g->kw, g->sh, g->sw, g->dh, g->dw, g->ph,
                       g->pw);
}

typedef struct pconv_job {
  const conv_job *j;
  fk_pconv d;
  const int32_t *off;
  float *bufs; /* per chunk: the phase planes */
  size_t per_chunk;
  size_t b; /* the image (one image across the threads) */
} pconv_job;

/* Where image b's sum goes (z, or r when the sum is not kept) and its activation (r, or NULL). */
static void pconv_targets(const conv_job *j, size_t b, float **sum, float **r) {
  size_t at = b * j->g.Cout * j->g.Ho * j->g.Wo;
  float *z = j->relu_in_y ? NULL : j->y + at, *rr = j->relu_in_y ? j->y + at : (j->r ? j->r + at : NULL);
  *sum = z ? z : rr;
  *r = j->epi ? rr : NULL;
}

/* Relu on the sum itself (the sum not kept): the tiles apply it as they store the rows */
static bool pconv_relu_in_y(const conv_job *j) { return j->epi && j->relu_in_y && j->act == RLX_ACT_RELU; }

static void pconv_image_task(void *arg, size_t lo, size_t hi, int chunk) {
  const pconv_job *t = arg;
  const conv_job *j = t->j;
  float *buf = t->bufs + (size_t)chunk * t->per_chunk, *sum, *r;
  memset(buf, 0, t->d.buf_floats * sizeof *buf);
  for (size_t b = lo; b < hi; b++) {
    fk_pconv_fill(&t->d, j->x + b * j->g.Cin * j->g.H * j->g.W, buf);
    pconv_targets(j, b, &sum, &r);
    fk_pconv_tiles(&t->d, buf, j->w, t->off, j->bias, sum, pconv_relu_in_y(j), 0, fk_pconv_tiles_count(&t->d));
    if (r && !pconv_relu_in_y(j)) fk_pconv_act(&t->d, 0, j->g.Cout, j->act, sum, r);
  }
}

static void pconv_tiles_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const pconv_job *t = arg;
  float *sum, *r;
  pconv_targets(t->j, t->b, &sum, &r);
  fk_pconv_tiles(&t->d, t->bufs, t->j->w, t->off, t->j->bias, sum, pconv_relu_in_y(t->j), lo, hi);
}

static void pconv_act_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const pconv_job *t = arg;
  float *sum, *r;
  pconv_targets(t->j, t->b, &sum, &r);
  if (r) fk_pconv_act(&t->d, lo, hi, t->j->act, sum, r);
}

static rlx_status pconv_forward(conv_job *j, const fk_pconv *d, rlx_cpu_ctx *ctx) {
  pconv_job t = {.j = j, .d = *d};
  const fgeo *g = &j->g;
  bool intra = use_intra(g, ctx);
  int chunks = intra ? 1 : fk_chunks(ctx, g->N, 1);
  size_t offs = fk_align64(d->R * sizeof(int32_t)) / sizeof(float);
  t.per_chunk = d->buf_floats;
  float *scratch = fk_scratch(ctx, (offs + t.per_chunk * (size_t)chunks) * sizeof(float));
  if (!scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the convolution buffers");
  int32_t *off = (int32_t *)scratch;
  fk_pconv_offsets(d, off);
  t.off = off;
  t.bufs = scratch + offs;
  if (!intra) {
    fk_parallel_for(ctx, g->N, 1, pconv_image_task, &t);
  } else {
    memset(t.bufs, 0, d->buf_floats * sizeof(float));
    for (size_t b = 0; b < g->N; b++) {
      t.b = b;
      fk_pconv_fill(d, j->x + b * g->Cin * g->H * g->W, t.bufs);
      fk_parallel_for(ctx, fk_pconv_tiles_count(d), 1, pconv_tiles_task, &t);
      if (j->epi && !pconv_relu_in_y(j)) fk_parallel_for(ctx, g->Cout, 1, pconv_act_task, &t);
    }
  }
  fk_scratch_release(ctx, scratch);
  return RLX_OK;
}

/* ---- Winograd F(2x2, 3x3): stride-1 3x3 convolutions of one group with many channels ----
 * Picked where it beat the direct and phase-plane kernels (measured on resnet18's layers, this
 * branch's Xeon, 1 thread, ms per image at b1 / b32): at least WINO_MIN_CH input and output
 * channels (64 ch 56x56: 1.3-1.5 / 1.5 against 1.55 / 1.8 direct; 128 ch 28x28: 1.2 / 1.3 against
 * 1.9 / 2.2; 256 ch 14x14: 1.5-1.6 / 1.1 against 2.1 / 2.2). Larger weights (512 ch 7x7) only with
 * many tiles: at batch 1 their 16 MB transform domain made the GEMMs memory bound and 16 tiles
 * fill half a panel (4.4-5.3 against 2.3-2.4 ms; at b32 1.4-1.6 against 2.2). The weights are
 * transformed on every call (up to 0.36 ms for 256 x 256 channels; a copy transformed once at
 * compile time, kept by the executor, was slower in the model: resnet18's Winograd layers at b1
 * 18.3-18.5 against 16.7-18.4 ms; it is read cold, the per-call U is written just before).
 * On AVX2 (Zen 3, 1 thread, resnet18's layers, CPU time per layer against the direct kernels in
 * the same runs): b1 64 ch 56x56 about 12% less, 128 ch 28x28 about 30% less, 256 ch 14x14
 * about 5% less; b32 25-35% less on every size, 512 ch 7x7 included; 512 ch at b1 (declined
 * above) 9.2 against about 5 ms. So the same choice on both paths. */
#define WINO_MIN_CH 32
#define WINO_SMALL_WEIGHTS ((size_t)256 * 256 * 9)
#define WINO_BIG_MIN_TILES 256

static bool wino_plain;
void fk_wino_disable(bool off) { wino_plain = off; }

static bool wino_pick(const fgeo *g, fk_wino *d) {
  if (wino_plain || g->G != 1 || !fk_wino_available()) return false;
  if (g->kh != 3 || g->kw != 3 || g->sh != 1 || g->sw != 1 || g->dh != 1 || g->dw != 1) return false;
  if (g->ph < 0 || g->pw < 0 || g->eh != g->ph || g->ew != g->pw) return false; /* symmetric padding */
  if (g->Cin < WINO_MIN_CH || g->Cout < WINO_MIN_CH) return false;
  if (!fk_wino_init(d, g->N, g->Cin, g->Cout, g->H, g->W, (size_t)g->ph, (size_t)g->pw)) return false;
  if (d->Ho != g->Ho || d->Wo != g->Wo) return false;
  return g->Cin * g->Cout * 9 <= WINO_SMALL_WEIGHTS || g->N * d->T >= WINO_BIG_MIN_TILES;
}

typedef struct wino_job {
  const conv_job *j;
  fk_wino d;
  float *u, *v, *m, *pads;
  size_t b0, nb;
  float *sum, *r; /* where the sum goes (the output, or r when the sum is not kept); r: act */
} wino_job;

static void wino_weights_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const wino_job *t = arg;
  fk_wino_weights(&t->d, t->j->w, t->u, lo, hi);
}

static void wino_input_task(void *arg, size_t lo, size_t hi, int chunk) {
  const wino_job *t = arg;
  fk_wino_input(&t->d, t->j->x, t->b0, t->nb, t->v, lo, hi, t->pads + (size_t)chunk * t->d.pad_floats);
}

static void wino_gemm_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const wino_job *t = arg;
  fk_wino_gemm(&t->d, t->u, t->v, t->m, t->nb, lo, hi);
}

static void wino_output_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const wino_job *t = arg;
  fk_wino_output(&t->d, t->m, t->b0, t->nb, t->j->bias, t->sum, lo, hi);
  if (!t->r) return;
  size_t P = t->d.Ho * t->d.Wo;
  for (size_t b = t->b0; b < t->b0 + t->nb; b++) {
    size_t at = (b * t->d.O + lo) * P;
    fk_conv_act(t->j->act, t->sum + at, t->r + at, (hi - lo) * P);
  }
}

/* u: the weights transformed once (rlx_fast_conv_wino_weights), or NULL: transformed here. */
static rlx_status wino_forward(conv_job *j, const fk_wino *d, const float *u, rlx_cpu_ctx *ctx) {
  wino_job t = {.j = j, .d = *d};
  size_t chunks = (size_t)fk_chunks(ctx, d->imgs * d->th, 1);
  size_t uf = u ? 0 : fk_wino_u_floats(d), vmf = fk_wino_vm_floats(d);
  size_t total = uf + vmf + d->pad_floats * chunks;
  float *scratch = fk_scratch(ctx, total * sizeof(float));
  if (!scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the Winograd buffers");
  t.u = u ? (float *)u : scratch;
  t.v = scratch + uf;
  t.pads = scratch + uf + vmf;
  pconv_targets(j, 0, &t.sum, &t.r);
  if (!u) fk_parallel_for(ctx, d->O, 1, wino_weights_task, &t);
  for (size_t b0 = 0; b0 < d->N; b0 += d->imgs) {
    t.b0 = b0;
    t.nb = d->N - b0 < d->imgs ? d->N - b0 : d->imgs;
    t.m = t.v + fk_wino_v_floats(d);
    fk_parallel_for(ctx, t.nb * d->th, 1, wino_input_task, &t);
    fk_parallel_for(ctx, 16, 1, wino_gemm_task, &t);
    fk_parallel_for(ctx, d->O, 1, wino_output_task, &t);
  }
  fk_scratch_release(ctx, scratch);
  return RLX_OK;
}

/* Conv, optionally with the epilogue (epi: z = conv (+ bias when not NULL), r = act(z) when r is
 * not NULL; with z NULL only r is written); wino_u: the Winograd weights transformed once, or
 * NULL. */
static rlx_status conv_forward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const float *wino_u, float *z,
                               const float *bias, float *r, bool epi, rlx_act act, rlx_cpu_ctx *ctx) {
  conv_job j;
  memset(&j, 0, sizeof j);
  conv_geo(n, in, n_in, &j.g);
  j.x = in[0].data;
  j.w = in[1].data;
  j.y = z ? z : r;
  j.bias = bias;
  j.r = z ? r : NULL;
  j.epi = epi;
  j.relu_in_y = epi && !z;
  j.act = act;
  float *y = j.y;
  const fgeo *g = &j.g;
  if (g->N == 0 || g->Cout == 0 || g->Ho * g->Wo == 0) return RLX_OK;
  if (cg_rows(g) == 0) {
    size_t P = g->Ho * g->Wo;
    memset(y, 0, g->N * g->Cout * P * sizeof(float));
    for (size_t b = 0; b < g->N; b++) epilogue_planes(&j, b, 0, g->Cout, P);
    return RLX_OK;
  }
  if (depthwise(g)) return depthwise_forward(&j, ctx);
  fk_wino wd;
  if (wino_pick(g, &wd)) return wino_forward(&j, &wd, wino_u, ctx);
  fk_pconv pd;
  if (pconv_pick(g, &pd)) return pconv_forward(&j, &pd, ctx);
  if (direct_ok(g, cg_rows(g)) && !direct_cols(g)) {
    dconv_forward_geo(g, &j.d);
    if (!j.epi || (j.bias && j.act == RLX_ACT_RELU)) return direct_conv(&j, false, ctx, "Conv");
    /* the direct kernels fuse bias + relu only: the plain convolution into y, then the epilogue
       over it */
    conv_job k = j;
    k.bias = NULL;
    k.r = NULL;
    k.relu_in_y = false;
    k.epi = false;
    rlx_status st = direct_conv(&k, false, ctx, "Conv");
    for (size_t b = 0; st == RLX_OK && b < g->N; b++) epilogue_planes(&j, b, 0, g->Cout, g->Ho * g->Wo);
    return st;
  }
  if (use_intra(g, ctx)) {
    j.per_chunk = direct_cols(g) ? 0 : fk_align64(cg_rows(g) * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
    if (packed_1x1(g)) j.per_chunk = packed_1x1_floats(g) * (size_t)fk_chunks(ctx, FK_DET_MAX_PARTS, 1);
    j.scratch = fk_scratch(ctx, (j.per_chunk ? j.per_chunk : 1) * sizeof(float));
    if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the column buffer");
    intra_forward(&j, ctx);
    fk_scratch_release(ctx, j.scratch);
    return RLX_OK;
  }
  int chunks = fk_chunks(ctx, g->N * g->G, 1);
  j.per_chunk = direct_cols(g) ? 0 : fk_align64(cg_rows(g) * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
  if (packed_1x1(g)) j.per_chunk = packed_1x1_floats(g);
  j.scratch = fk_scratch(ctx, j.per_chunk * (size_t)chunks * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the column buffers");
  fk_parallel_for(ctx, g->N * g->G, 1, conv_fwd_task, &j);
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}

FK_KERNEL(Conv) { return conv_forward(n, in, n_in, NULL, out->data, NULL, NULL, false, RLX_ACT_RELU, ctx); }

/* The Winograd transform of constant weights, made once when the executable is built (resnet18's
 * 3x3 layers at batch 1 spent 11% of their time transforming the same weights on every run), for
 * convolutions of at most WINO_PREPARE_MAX_TILES tiles per run: with more, the transform is a
 * small part of the run, and the copy (16/9 of the weights) would add 64 MB to resnet18's peak
 * memory at batch 32 (358 -> 422 MiB, measured), above ONNX Runtime's. */
#define WINO_PREPARE_MAX_TILES 256
float *rlx_fast_conv_wino_weights(const rlx_node *n, const rlx_tensor *in, uint32_t n_in) {
  fgeo g;
  fk_wino d;
  if (!conv_geo(n, in, n_in, &g) || depthwise(&g) || cg_rows(&g) == 0 || !wino_pick(&g, &d)) return NULL;
  if (d.N * d.T > WINO_PREPARE_MAX_TILES) return NULL;
  size_t bytes = fk_align64(fk_wino_u_floats(&d) * sizeof(float));
  float *u = aligned_alloc(64, bytes);
  if (!u) return NULL;
  fk_wino_weights(&d, in[1].data, u, 0, d.O);
  return u;
}

rlx_status rlx_fast_conv_run(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const float *wino_u,
                             const float *bias, float *z, float *r, bool epi, rlx_act act, rlx_cpu_ctx *ctx) {
  if (epi && !fk_conv_act_ok(act))
    return rlx_errorf(RLX_ERR_INTERNAL, "Conv epilogue: activation %d is not one the epilogue fuses", (int)act);
  return conv_forward(conv, in, n_in, wino_u, z, bias, r, epi, act, ctx);
}

bool rlx_fast_conv_epilogue_applies(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const rlx_shape *bias) {
  fgeo g;
  if (!conv_geo(conv, in, n_in, &g)) return false;
  if (!bias) return true; /* the activation only */
  if (!fk_static_f32(bias) || fk_numel(bias) != g.Cout) return false;
  /* the bias broadcasts along the channel axis only: [C], [C, 1, 1] or [1, C, 1, 1] */
  if (bias->rank > 4) return false;
  for (uint32_t k = 0; k < bias->rank; k++) {
    uint32_t axis = 4 - bias->rank + k; /* aligned to [N, C, H, W] */
    if (axis != 1 && bias->dims[k] != 1) return false;
  }
  return bias->rank >= 3 || g.Cout == 1;
}

rlx_status rlx_fast_conv_epilogue(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const float *bias,
                                  float *z, float *r, rlx_act act, rlx_cpu_ctx *ctx) {
  if (!fk_conv_act_ok(act))
    return rlx_errorf(RLX_ERR_INTERNAL, "Conv epilogue: activation %d is not one the epilogue fuses", (int)act);
  return conv_forward(conv, in, n_in, NULL, z, bias, r, true, act, ctx);
}

/* ======================================================================================
 * Conv2dBackwardInput: [dy, w] -> dx (shape = the node's)
 * ====================================================================================== */

static bool bwd_input_geo(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, fgeo *g) {
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  cu_geom c;
  if (!common(n, in, n_in, &a->stride, &a->padding, &a->dilation, a->groups, &c)) return false;
  const rlx_shape *dy = &in[0].shape, *w = &in[1].shape, *x = &n->shape;
  if (!weight_kernel(w, &a->kernel_size, &c)) return false;
  g->G = (size_t)a->groups;
  g->Cin = (size_t)x->dims[1];
  g->Cout = (size_t)dy->dims[1];
  if ((size_t)w->dims[0] != g->Cout || g->Cout % g->G || g->Cin % g->G || (size_t)w->dims[1] != g->Cin / g->G ||
      x->dims[0] != dy->dims[0])
    return false;
  return fill_geo(&c, x, dy, g) && fits(g);
}

FK_APPLIES(Conv2dBackwardInput) {
  fgeo g;
  return bwd_input_geo(n, in, n_in, &g);
}

static void bwd_input_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, Pin = g->H * g->W;
  float *col = j->scratch + (size_t)chunk * j->per_chunk;
  for (size_t b = lo; b < hi; b++) {
    float *dxb = j->y + b * g->Cin * Pin;
    for (size_t gr = 0; gr < g->G; gr++) {
      const float *dyg = j->dy + (b * g->Cout + gr * og) * P;
      float *dxg = dxb + gr * cg * Pin;
      if (direct_cols(g)) { /* dx_g = w_g^T . dy_g directly */
        fk_sgemm(true, false, rows, P, og, j->w + gr * og * rows, rows, dyg, P, false, dxg, P);
        continue;
      }
      fk_sgemm(true, false, rows, P, og, j->w + gr * og * rows, rows, dyg, P, false, col, P);
      memset(dxg, 0, cg * Pin * sizeof *dxg);
      col2im(g, col, cg, dxg);
    }
  }
}

FK_KERNEL(Conv2dBackwardInput) {
  conv_job j;
  memset(&j, 0, sizeof j);
  bwd_input_geo(n, in, n_in, &j.g);
  j.dy = in[0].data;
  j.w = in[1].data;
  j.y = out->data;
  const fgeo *g = &j.g;
  size_t total = fk_numel(&out->shape);
  if (total == 0) return RLX_OK;
  if (g->Cout == 0 || g->Ho * g->Wo == 0 || cg_rows(g) == 0) {
    memset(out->data, 0, total * sizeof(float));
    return RLX_OK;
  }
  if (direct_ok(g, g->Cout / g->G * g->kh * g->kw) && !direct_cols(g) && dconv_input_geo(g, &j.d)) {
    j.x = NULL;
    return direct_conv(&j, true, ctx, "Conv2dBackwardInput");
  }
  int chunks = fk_chunks(ctx, g->N, 1);
  j.per_chunk = direct_cols(g) ? 0 : fk_align64(cg_rows(g) * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
  j.scratch = fk_scratch(ctx, j.per_chunk * (size_t)chunks * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv2dBackwardInput: out of memory for the column buffers");
  fk_parallel_for(ctx, g->N, 1, bwd_input_task, &j);
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}

/* ======================================================================================
 * Conv2dBackwardWeight: [x, dy] -> dw [Cout, Cin/G, kh, kw] (kernel from kernel_size)
 * ====================================================================================== */

static bool bwd_weight_geo(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, fgeo *g) {
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  cu_geom c;
  if (!common(n, in, n_in, &a->stride, &a->padding, &a->dilation, a->groups, &c)) return false;
  if (cu_kernel_attr(&a->kernel_size, 2, &c) != RLX_OK) return false;
  const rlx_shape *x = &in[0].shape, *dy = &in[1].shape, *dw = &n->shape;
  g->G = (size_t)a->groups;
  g->Cin = (size_t)x->dims[1];
  g->Cout = (size_t)dy->dims[1];
  if (g->Cin % g->G || g->Cout % g->G || x->dims[0] != dy->dims[0]) return false;
  if ((size_t)dw->dims[0] != g->Cout || (size_t)dw->dims[1] != g->Cin / g->G || dw->dims[2] != c.k[0] ||
      dw->dims[3] != c.k[1])
    return false;
  return fill_geo(&c, x, dy, g) && fits(g);
}

FK_APPLIES(Conv2dBackwardWeight) {
  fgeo g;
  return bwd_weight_geo(n, in, n_in, &g);
}

/* Images of part p of the batch. */
static void part_images(const conv_job *j, size_t p, size_t *b0, size_t *b1) {
  *b0 = p * j->g.N / (size_t)j->n_parts;
  *b1 = (p + 1) * j->g.N / (size_t)j->n_parts;
}

/* Parts lo..hi: part 0 accumulates into the output, part p > 0 into its partial buffer; the
 * column buffer belongs to the chunk. */
static void bwd_weight_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, Pin = g->H * g->W;
  float *col = j->scratch + (size_t)chunk * j->per_chunk;
  for (size_t part = lo; part < hi; part++) {
    float *dw = part == 0 ? j->y : j->parts + (part - 1) * j->part_floats;
    memset(dw, 0, g->Cout * rows * sizeof *dw);
    size_t b0, b1;
    part_images(j, part, &b0, &b1);
    for (size_t b = b0; b < b1; b++)
      for (size_t gr = 0; gr < g->G; gr++) {
        const float *xg = j->x + (b * g->Cin + gr * cg) * Pin, *cm = xg;
        if (!direct_cols(g)) {
          im2col(g, xg, cg, col);
          cm = col;
        }
        fk_sgemm(false, true, og, rows, P, j->dy + (b * g->Cout + gr * og) * P, P, cm, P, true, dw + gr * og * rows,
                 rows);
      }
  }
}

/* Direct backward-weight: part p accumulates lane sums for every group into its own buffer; the
 * chunk owns FK_DCONV_DW_IMAGES slots of padded input + wide dy, so that the kernel sums several
 * images (in order) per pass over its accumulators. */
static void direct_dw_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  const fk_dconv *d = &j->d;
  size_t accf = fk_dconv_acc_floats(d), og = g->Cout / g->G, slot = j->per_chunk / FK_DCONV_DW_IMAGES;
  size_t xpf = fk_align64(d->xp_floats * sizeof(float)) / sizeof(float), ready = 0; /* slots padded once */
  float *xp = j->scratch + fk_align64(d->Rp * sizeof(int32_t)) / sizeof(float) + (size_t)chunk * j->per_chunk;
  for (size_t part = lo; part < hi; part++) {
    float *acc = j->parts + part * j->part_floats;
    memset(acc, 0, g->G * accf * sizeof *acc);
    size_t b0, b1;
    part_images(j, part, &b0, &b1);
    for (size_t gr = 0; gr < g->G; gr++)
      for (size_t b = b0; b < b1; b += FK_DCONV_DW_IMAGES) {
        size_t n = b1 - b < FK_DCONV_DW_IMAGES ? b1 - b : FK_DCONV_DW_IMAGES;
        for (size_t k = 0; k < n; k++) {
          float *xk = xp + k * slot;
          fk_dconv_pad(d, j->x + ((b + k) * g->G + gr) * d->C * d->H * d->W, xk, k < ready);
          fk_dconv_wide_dy(d, j->dy + ((b + k) * g->Cout + gr * og) * d->Ho * d->Wo, xk + xpf, k < ready);
        }
        if (n > ready) ready = n;
        fk_dconv_dw(d, xp, xp + xpf, slot, n, j->off, acc + gr * accf);
      }
  }
}

static rlx_status direct_dw(conv_job *j, rlx_tensor *out, rlx_cpu_ctx *ctx) {
  const fgeo *g = &j->g;
  const fk_dconv *d = &j->d;
  j->n_parts = fk_parts(ctx, g->N);
  int chunks = fk_chunks(ctx, (size_t)j->n_parts, 1);
  size_t accf = fk_dconv_acc_floats(d), shared = fk_align64(d->Rp * sizeof(int32_t)) / sizeof(float);
  j->per_chunk = (fk_align64(d->xp_floats * sizeof(float)) / sizeof(float) +
                  fk_align64(d->Op * d->Qv * sizeof(float)) / sizeof(float)) *
                 FK_DCONV_DW_IMAGES;
  j->part_floats = fk_align64(g->G * accf * sizeof(float)) / sizeof(float);
  size_t total = shared + j->per_chunk * (size_t)chunks + j->part_floats * (size_t)j->n_parts;
  j->scratch = fk_scratch(ctx, total * sizeof(float));
  if (!j->scratch) return rlx_errorf(RLX_ERR_OOM, "Conv2dBackwardWeight: out of memory for the convolution buffers");
  int32_t *off = (int32_t *)j->scratch;
  fk_dconv_offsets(d, off);
  j->off = off;
  j->parts = j->scratch + shared + j->per_chunk * (size_t)chunks;
  fk_parallel_for(ctx, (size_t)j->n_parts, 1, direct_dw_task, j);
  /* partial sums in part order, then across lanes */
  float *acc0 = j->parts;
  for (int c = 1; c < j->n_parts; c++) {
    const float *restrict part = acc0 + (size_t)c * j->part_floats;
    for (size_t i = 0; i < g->G * accf; i++) acc0[i] += part[i];
  }
  size_t wg = d->O * d->R;
  for (size_t gr = 0; gr < g->G; gr++) fk_dconv_dw_finish(d, acc0 + gr * accf, false, (float *)out->data + gr * wg);
  fk_scratch_release(ctx, j->scratch);
  return RLX_OK;
}

FK_KERNEL(Conv2dBackwardWeight) {
  conv_job j;
  memset(&j, 0, sizeof j);
  bwd_weight_geo(n, in, n_in, &j.g);
  j.x = in[0].data;
  j.dy = in[1].data;
  j.y = out->data;
  const fgeo *g = &j.g;
  size_t total = fk_numel(&out->shape), rows = cg_rows(g);
  if (total == 0) return RLX_OK;
  if (g->N == 0 || g->Ho * g->Wo == 0) {
    memset(out->data, 0, total * sizeof(float));
    return RLX_OK;
  }
  if (direct_ok(g, rows) && !direct_cols(g)) {
    dconv_forward_geo(g, &j.d);
    return direct_dw(&j, out, ctx);
  }
  j.n_parts = fk_parts(ctx, g->N);
  int chunks = fk_chunks(ctx, (size_t)j.n_parts, 1);
  j.per_chunk = direct_cols(g) ? 0 : fk_align64(rows * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
  j.part_floats = fk_align64(g->Cout * rows * sizeof(float)) / sizeof(float);
  j.scratch = fk_scratch(ctx, (j.per_chunk * (size_t)chunks + j.part_floats * (size_t)(j.n_parts - 1)) * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv2dBackwardWeight: out of memory for the column buffers");
  j.parts = j.scratch + j.per_chunk * (size_t)chunks;
  fk_parallel_for(ctx, (size_t)j.n_parts, 1, bwd_weight_task, &j);
  /* Partial sums of parts 1.. in order. */
  float *restrict dw = out->data;
  for (int c = 1; c < j.n_parts; c++) {
    const float *restrict part = j.parts + (size_t)(c - 1) * j.part_floats;
    for (size_t i = 0; i < total; i++) dw[i] += part[i];
  }
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}
