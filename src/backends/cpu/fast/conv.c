/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 2-D convolution (NCHW) and its two backward ops, im2col + sgemm, threads over
 * the images of the batch (each worker with its own column buffer):
 *   Conv                  y_bg [og, P]    = w_g [og, cg*kk] . col_bg [cg*kk, P]
 *   Conv2dBackwardInput   col [cg*kk, P]  = w_g^T . dy_bg, then col2im adds it into dx_b
 *   Conv2dBackwardWeight  dw_g           += dy_bg . col_bg^T   (per-worker partial sums added in
 *                                           worker order, so the result depends on the thread
 *                                           count only)
 * with groups, stride, dilation and (asymmetric) padding; a 1x1 stride-1 unpadded convolution
 * uses the image itself as the column matrix. Geometry follows infer_conv_util.h. */
#include <limits.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"
#include "infer_conv_util.h"

/* 2-D geometry of one convolution (x: [N, Cin, H, W], y: [N, Cout, Ho, Wo]). */
typedef struct fgeo {
  size_t N, Cin, Cout, G;
  size_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw;
  int64_t ph, pw; /* begin padding */
} fgeo;

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
  return true;
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
  if (W - 1 - off < 0) h = 0;
  else h = (W - 1 - off) / sw + 1;
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
          if (g->sw == 1) memcpy(r + lo, xr + (int64_t)lo + off, (hi - lo) * sizeof *r);
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
  float *y;        /* forward output, or dx / dw */
  float *scratch;  /* per chunk: col (+ dw partial) */
  size_t per_chunk; /* floats of scratch per chunk */
} conv_job;

static void conv_fwd_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, Pin = g->H * g->W;
  float *col = j->scratch + (size_t)chunk * j->per_chunk;
  for (size_t b = lo; b < hi; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      const float *xg = j->x + (b * g->Cin + gr * cg) * Pin;
      const float *cm = xg;
      if (!direct_cols(g)) {
        im2col(g, xg, cg, col);
        cm = col;
      }
      fk_sgemm(false, false, og, P, rows, j->w + gr * og * rows, rows, cm, P, false, j->y + (b * g->Cout + gr * og) * P,
               P);
    }
}

FK_KERNEL(Conv) {
  conv_job j;
  memset(&j, 0, sizeof j);
  conv_geo(n, in, n_in, &j.g);
  j.x = in[0].data;
  j.w = in[1].data;
  j.y = out->data;
  const fgeo *g = &j.g;
  if (g->N == 0 || g->Cout == 0 || g->Ho * g->Wo == 0) return RLX_OK;
  if (cg_rows(g) == 0) {
    memset(out->data, 0, fk_numel(&out->shape) * sizeof(float));
    return RLX_OK;
  }
  int chunks = fk_chunks(ctx, g->N, 1);
  j.per_chunk = direct_cols(g) ? 0 : fk_align64(cg_rows(g) * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
  j.scratch = fk_scratch(ctx, j.per_chunk * (size_t)chunks * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv: out of memory for the column buffers");
  fk_parallel_for(ctx, g->N, 1, conv_fwd_task, &j);
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
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

/* Chunk 0 accumulates into the output, chunk c > 0 into its partial buffer after its columns. */
static void bwd_weight_task(void *arg, size_t lo, size_t hi, int chunk) {
  const conv_job *j = arg;
  const fgeo *g = &j->g;
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, rows = cg_rows(g), P = g->Ho * g->Wo, Pin = g->H * g->W;
  float *col = j->scratch + (size_t)chunk * j->per_chunk;
  size_t col_floats = direct_cols(g) ? 0 : fk_align64(rows * P * sizeof(float)) / sizeof(float);
  float *dw = chunk == 0 ? j->y : col + col_floats;
  memset(dw, 0, g->Cout * rows * sizeof *dw);
  for (size_t b = lo; b < hi; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      const float *xg = j->x + (b * g->Cin + gr * cg) * Pin, *cm = xg;
      if (!direct_cols(g)) {
        im2col(g, xg, cg, col);
        cm = col;
      }
      fk_sgemm(false, true, og, rows, P, j->dy + (b * g->Cout + gr * og) * P, P, cm, P, true, dw + gr * og * rows, rows);
    }
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
  int chunks = fk_chunks(ctx, g->N, 1);
  size_t col_floats = direct_cols(g) ? 0 : fk_align64(rows * g->Ho * g->Wo * sizeof(float)) / sizeof(float);
  j.per_chunk = col_floats + fk_align64(g->Cout * rows * sizeof(float)) / sizeof(float);
  j.scratch = fk_scratch(ctx, j.per_chunk * (size_t)chunks * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Conv2dBackwardWeight: out of memory for the column buffers");
  fk_parallel_for(ctx, g->N, 1, bwd_weight_task, &j);
  /* Partial sums of chunks 1.. in order. */
  float *restrict dw = out->data;
  for (int c = 1; c < chunks; c++) {
    const float *restrict part = j.scratch + (size_t)c * j.per_chunk + col_floats;
    for (size_t i = 0; i < total; i++) dw[i] += part[i];
  }
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}
