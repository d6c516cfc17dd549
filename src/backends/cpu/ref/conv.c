/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: convolution, pooling and resampling, NCHW / NCDHW (spec ir-core §10.5,
 * §10.10). Geometry attributes follow infer_conv_util.h (shared with the shape rules):
 *   stride / dilation: empty = 1, else one entry per spatial axis;
 *   padding: empty = 0, one entry per axis (symmetric) or [begin..., end...];
 *   kernel_size: Conv/ConvTranspose2d may leave it empty (taken from the weight).
 *
 * Convolutions work in double whatever the float dtype: im2col + dgemm per (image, group) for the
 * forward ops, dgemm + col2im for the transposed ones; every output is rounded once. 2-D ops run
 * as 3-D ops with a unit depth axis. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "backends/cpu/ref/ref_util_b.h"
#include "infer_conv_util.h"

/* Geometry of one convolution, always with 3 spatial axes (2-D ops: axis 0 has extent 1). */
typedef struct cgeo {
  size_t N, Cin, Cout, G;
  size_t in[3], out[3], k[3], s[3], d[3], pb[3];
} cgeo;

/* Re-raises an error of the shared geometry helpers (RLX_ERR_SHAPE, no context) for node n. */
static rlx_status attr_error(const rlx_node *n, rlx_status s) {
  if (s == RLX_ERR_OVERFLOW) return ru_error(s, n, "%s", rlx_last_error());
  return ru_error(RLX_ERR_INVALID_ARG, n, "%s", rlx_last_error());
}

/* Parses stride/padding/dilation(/output_padding) for nsp spatial axes into g (3-axis form) and
 * returns the per-axis output padding and end padding. */
static rlx_status parse_geom(const rlx_node *n, uint32_t nsp, const rlx_ilist *stride, const rlx_ilist *padding,
                             const rlx_ilist *dilation, const rlx_ilist *output_padding, cu_geom *cg) {
  rlx_status s = cu_parse(nsp, stride, padding, dilation, output_padding, cg);
  return s == RLX_OK ? RLX_OK : attr_error(n, s);
}

/* Kernel extents from the weight's axes 2.. (and the optional kernel_size attribute, which must
 * repeat them). */
static rlx_status weight_kernel(const rlx_node *n, const rlx_shape *w, const rlx_ilist *ks, cu_geom *cg) {
  for (uint32_t i = 0; i < cg->nsp; i++) {
    if (w->dims[2 + i] < 1)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (weight) has shape %s; kernel extents must be >= 1",
                      ru_fmt(w));
    cg->k[i] = w->dims[2 + i];
  }
  if (ks && ks->n) {
    if (ks->n != cg->nsp)
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kernel_size has %u entries; expected %u", ks->n, cg->nsp);
    for (uint32_t i = 0; i < cg->nsp; i++)
      if (ks->v[i] != cg->k[i])
        return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kernel_size: entry %u is %lld but the weight %s has %lld", i,
                        (long long)ks->v[i], ru_fmt(w), (long long)cg->k[i]);
  }
  return RLX_OK;
}

/* Output extent of axis i; *ok = false when the output would be empty or not representable. */
static int64_t out_extent(const cu_geom *g, uint32_t i, int64_t in, bool transposed, bool *ok) {
  int64_t span = g->d[i] * (g->k[i] - 1), v; /* attributes <= 2^31: no overflow */
  *ok = false;
  if (!transposed) {
    int64_t padded;
    if (__builtin_add_overflow(in, g->pb[i] + g->pe[i], &padded) || padded < span + 1) return 0;
    *ok = true;
    return (padded - span - 1) / g->s[i] + 1;
  }
  if (in < 1 || __builtin_mul_overflow(in - 1, g->s[i], &v) || __builtin_add_overflow(v, span + g->op[i] + 1, &v))
    return 0;
  v -= g->pb[i] + g->pe[i];
  *ok = v >= 1;
  return v;
}

/* Fills the 3-axis geometry of x [N, C, spatial...] and checks the output dims
 * [N, out_channels, out spatial...]. Extents are bounded by the tensors and attributes by
 * CU_MAX_ATTR, so the int64 arithmetic above cannot overflow. */
static rlx_status finish_geom(const rlx_node *n, const rlx_shape *x, const cu_geom *cg, bool transposed,
                              size_t out_channels, const rlx_tensor *out, cgeo *g) {
  uint32_t nsp = cg->nsp, off = 3 - nsp;
  int64_t dims[5];
  dims[0] = x->dims[0];
  dims[1] = (int64_t)out_channels;
  g->N = (size_t)x->dims[0];
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    bool ok;
    int64_t e = out_extent(cg, i, x->dims[2 + i], transposed, &ok);
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "operand 0 %s: spatial axis %u gives an empty output with these "
                      "kernel_size / stride / padding / dilation attributes",
                      ru_fmt(x), 2 + i);
    dims[2 + i] = e;
    g->in[off + i] = (size_t)x->dims[2 + i];
    g->out[off + i] = (size_t)e;
    g->k[off + i] = (size_t)cg->k[i];
    g->s[off + i] = (size_t)cg->s[i];
    g->d[off + i] = (size_t)cg->d[i];
    g->pb[off + i] = (size_t)cg->pb[i];
  }
  return ru_need_out_dims(n, out, 2 + nsp, dims);
}

static size_t vol(const size_t v[3]) { return v[0] * v[1] * v[2]; }

/* Input coordinate of output position o and kernel tap kk along one axis; false when it falls in
 * the padding. */
static bool src_coord(size_t o, size_t kk, size_t s, size_t d, size_t pb, size_t in, size_t *i) {
  int64_t v = (int64_t)(o * s + kk * d) - (int64_t)pb;
  if (v < 0 || v >= (int64_t)in) return false;
  *i = (size_t)v;
  return true;
}

static rlx_status need_gemm_ints(const rlx_node *n, size_t a, size_t b, size_t c) {
  if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
    return ru_error(RLX_ERR_UNSUPPORTED, n, "a GEMM extent exceeds the BLAS index range (%d)", INT_MAX);
  return RLX_OK;
}

/* Forward convolution: x [N, Cin, D, H, W] (doubles), w [Cout, Cin/G, kD, kH, kW] -> y. */
static rlx_status conv_forward(const rlx_node *n, const cgeo *g, const double *x, const double *w, double *y) {
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, kv = vol(g->k), P = vol(g->out), Pin = vol(g->in), rows = cg * kv;
  RLX_TRY(need_gemm_ints(n, og, P, rows));
  if (P == 0 || og == 0) return RLX_OK;
  if (rows == 0) { /* no input channels: zeros */
    memset(y, 0, g->N * g->Cout * P * sizeof *y);
    return RLX_OK;
  }
  double *col = NULL;
  RLX_TRY(rb_alloc(n, rows, P * sizeof *col, &col));
  for (size_t b = 0; b < g->N; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      /* col[(c, kd, kh, kw), (od, oh, ow)] */
      for (size_t c = 0; c < cg; c++) {
        const double *xc = x + (b * g->Cin + gr * cg + c) * Pin;
        for (size_t kd = 0; kd < g->k[0]; kd++)
          for (size_t kh = 0; kh < g->k[1]; kh++)
            for (size_t kw = 0; kw < g->k[2]; kw++) {
              double *row = col + (((c * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * P;
              size_t p = 0;
              for (size_t od = 0; od < g->out[0]; od++)
                for (size_t oh = 0; oh < g->out[1]; oh++)
                  for (size_t ow = 0; ow < g->out[2]; ow++, p++) {
                    size_t id, ih, iw;
                    bool in = src_coord(od, kd, g->s[0], g->d[0], g->pb[0], g->in[0], &id) &&
                              src_coord(oh, kh, g->s[1], g->d[1], g->pb[1], g->in[1], &ih) &&
                              src_coord(ow, kw, g->s[2], g->d[2], g->pb[2], g->in[2], &iw);
                    row[p] = in ? xc[(id * g->in[1] + ih) * g->in[2] + iw] : 0.0;
                  }
            }
      }
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)og, (int)P, (int)rows, 1.0, w + gr * og * rows,
                  (int)rows, col, (int)P, 0.0, y + (b * g->Cout + gr * og) * P, (int)P);
    }
  free(col);
  return RLX_OK;
}

/* Transposed convolution: x [N, Cin, D, H, W], w [Cin, Cout/G, kD, kH, kW] -> y (zeroed here):
 * y[b, g*og + oc, o] += x[b, g*cg + ic, i] * w[g*cg + ic, oc, k] with o = i*s - pb + k*d. */
static rlx_status conv_transposed(const rlx_node *n, const cgeo *g, const double *x, const double *w, double *y) {
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, kv = vol(g->k), P = vol(g->out), Pin = vol(g->in), rows = og * kv;
  memset(y, 0, g->N * g->Cout * P * sizeof *y);
  RLX_TRY(need_gemm_ints(n, rows, Pin, cg));
  if (rows == 0 || Pin == 0 || cg == 0) return RLX_OK;
  double *col = NULL;
  RLX_TRY(rb_alloc(n, rows, Pin * sizeof *col, &col));
  for (size_t b = 0; b < g->N; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      /* col[(oc, kd, kh, kw), i] = sum_ic w[gr*cg + ic, (oc, k)] * x[b, gr*cg + ic, i] */
      cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)Pin, (int)cg, 1.0, w + gr * cg * rows,
                  (int)rows, x + (b * g->Cin + gr * cg) * Pin, (int)Pin, 0.0, col, (int)Pin);
      for (size_t oc = 0; oc < og; oc++) {
        double *yc = y + (b * g->Cout + gr * og + oc) * P;
        for (size_t kd = 0; kd < g->k[0]; kd++)
          for (size_t kh = 0; kh < g->k[1]; kh++)
            for (size_t kw = 0; kw < g->k[2]; kw++) {
              const double *row = col + (((oc * g->k[0] + kd) * g->k[1] + kh) * g->k[2] + kw) * Pin;
              size_t p = 0;
              for (size_t id = 0; id < g->in[0]; id++)
                for (size_t ih = 0; ih < g->in[1]; ih++)
                  for (size_t iw = 0; iw < g->in[2]; iw++, p++) {
                    int64_t od = (int64_t)(id * g->s[0] + kd * g->d[0]) - (int64_t)g->pb[0];
                    int64_t oh = (int64_t)(ih * g->s[1] + kh * g->d[1]) - (int64_t)g->pb[1];
                    int64_t ow = (int64_t)(iw * g->s[2] + kw * g->d[2]) - (int64_t)g->pb[2];
                    if (od < 0 || oh < 0 || ow < 0 || od >= (int64_t)g->out[0] || oh >= (int64_t)g->out[1] ||
                        ow >= (int64_t)g->out[2])
                      continue; /* cropped by the padding */
                    yc[((size_t)od * g->out[1] + (size_t)oh) * g->out[2] + (size_t)ow] += row[p];
                  }
            }
      }
    }
  free(col);
  return RLX_OK;
}

/* Shared driver of Conv, Conv3d, ConvTranspose2d and ConvTranspose3d. */
static rlx_status conv_op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, uint32_t nsp,
                          bool transposed, const rlx_ilist *ks, const rlx_ilist *stride, const rlx_ilist *padding,
                          const rlx_ilist *dilation, const rlx_ilist *output_padding, int64_t groups) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  const rlx_shape *x = &in[0].shape, *w = &in[1].shape;
  if (x->rank != 2 + nsp || w->rank != 2 + nsp)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands x %s and weight %s must both have rank %u", ru_fmt(x), ru_fmt(w),
                    2 + nsp);
  if (groups < 1 || groups > CU_MAX_ATTR)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute groups is %lld; it must be >= 1", (long long)groups);
  size_t G = (size_t)groups, Cin = (size_t)x->dims[1], Cout;
  if (Cin % G != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute groups = %zu does not divide the input channels %zu", G, Cin);
  if (!transposed) {
    Cout = (size_t)w->dims[0];
    if (Cout % G != 0 || (size_t)w->dims[1] != Cin / G)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "operand 1 (weight) has shape %s; expected [C_out, C_in/groups = %zu, "
                      "k...] with C_out divisible by groups = %zu",
                      ru_fmt(w), Cin / G, G);
  } else {
    if ((size_t)w->dims[0] != Cin)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "operand 1 (weight) has shape %s; expected [C_in = %zu, C_out/groups, "
                      "k...]",
                      ru_fmt(w), Cin);
    if (!rlx_mul_size((size_t)w->dims[1], G, &Cout))
      return ru_error(RLX_ERR_OVERFLOW, n, "output channel count overflows");
  }
  cu_geom cgm;
  RLX_TRY(parse_geom(n, nsp, stride, padding, dilation, output_padding, &cgm));
  RLX_TRY(weight_kernel(n, w, ks, &cgm));
  cgeo g;
  RLX_TRY(finish_geom(n, x, &cgm, transposed, Cout, out, &g));
  g.Cin = Cin;
  g.Cout = Cout;
  g.G = G;
  if (rlx_tensor_numel(out) == 0) return RLX_OK;
  double *xd = NULL, *wd = NULL, *yd = NULL;
  rlx_status s = rb_load(n, &in[0], &xd);
  if (s == RLX_OK) s = rb_load(n, &in[1], &wd);
  if (s == RLX_OK) s = rb_alloc(n, rlx_tensor_numel(out), sizeof *yd, &yd);
  if (s == RLX_OK) s = transposed ? conv_transposed(n, &g, xd, wd, yd) : conv_forward(n, &g, xd, wd, yd);
  if (s == RLX_OK) rb_store_all(out, yd);
  free(xd);
  free(wd);
  free(yd);
  return s;
}

RLX_CPU_KERNEL(Conv) {
  (void)ctx;
  const rlx_attrs_Conv *a = &n->attrs.Conv;
  return conv_op(n, in, n_in, out, 2, false, &a->kernel_size, &a->stride, &a->padding, &a->dilation, NULL, a->groups);
}

RLX_CPU_KERNEL(Conv3d) {
  (void)ctx;
  const rlx_attrs_Conv3d *a = &n->attrs.Conv3d;
  return conv_op(n, in, n_in, out, 3, false, NULL, &a->stride, &a->padding, &a->dilation, NULL, a->groups);
}

RLX_CPU_KERNEL(ConvTranspose2d) {
  (void)ctx;
  const rlx_attrs_ConvTranspose2d *a = &n->attrs.ConvTranspose2d;
  return conv_op(n, in, n_in, out, 2, true, &a->kernel_size, &a->stride, &a->padding, &a->dilation, &a->output_padding,
                 a->groups);
}

RLX_CPU_KERNEL(ConvTranspose3d) {
  (void)ctx;
  const rlx_attrs_ConvTranspose3d *a = &n->attrs.ConvTranspose3d;
  return conv_op(n, in, n_in, out, 3, true, NULL, &a->stride, &a->padding, &a->dilation, &a->output_padding, a->groups);
}

/* ======================================================================================
 * Im2Col: [N, C, H, W] -> [N*Ho*Wo, C*kH*kW]; row (n, oh, ow), column (c, kh, kw)
 * ====================================================================================== */

RLX_CPU_KERNEL(Im2Col) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_Im2Col *a = &n->attrs.Im2Col;
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 4) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; expected NCHW", ru_fmt(x));
  cu_geom cgm;
  RLX_TRY(parse_geom(n, 2, &a->stride, &a->padding, &a->dilation, NULL, &cgm));
  rlx_status st = cu_kernel_attr(&a->kernel_size, 2, &cgm);
  if (st != RLX_OK) return attr_error(n, st);
  size_t ext[2];
  for (uint32_t i = 0; i < 2; i++) {
    bool ok;
    int64_t e = out_extent(&cgm, i, x->dims[2 + i], false, &ok);
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 %s: spatial axis %u is smaller than the dilated kernel",
                      ru_fmt(x), 2 + i);
    ext[i] = (size_t)e;
  }
  size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], H = (size_t)x->dims[2], W = (size_t)x->dims[3];
  size_t kh = (size_t)cgm.k[0], kw = (size_t)cgm.k[1], Ho = ext[0], Wo = ext[1], cols, nrows;
  if (!rlx_mul_size(C, kh * kw, &cols) || !rlx_mul_size(N, Ho, &nrows) || !rlx_mul_size(nrows, Wo, &nrows) ||
      cols > INT64_MAX || nrows > INT64_MAX)
    return ru_error(RLX_ERR_OVERFLOW, n, "operand 0 %s: the patch matrix size overflows", ru_fmt(x));
  int64_t dims[2] = {(int64_t)nrows, (int64_t)cols};
  RLX_TRY(ru_need_out_dims(n, out, 2, dims));
  size_t esz = rlx_dtype_size(t), total = rlx_tensor_numel(out);
  if (total == 0) return RLX_OK;
  memset(out->data, 0, total * esz); /* padded cells: all-zero bytes are 0 in every dtype */
  for (size_t b = 0; b < N; b++)
    for (size_t oh = 0; oh < Ho; oh++)
      for (size_t ow = 0; ow < Wo; ow++) {
        size_t row = (b * Ho + oh) * Wo + ow;
        for (size_t c = 0; c < C; c++)
          for (size_t i = 0; i < kh; i++)
            for (size_t j = 0; j < kw; j++) {
              size_t ih, iw;
              if (!src_coord(oh, i, (size_t)cgm.s[0], (size_t)cgm.d[0], (size_t)cgm.pb[0], H, &ih) ||
                  !src_coord(ow, j, (size_t)cgm.s[1], (size_t)cgm.d[1], (size_t)cgm.pb[1], W, &iw))
                continue;
              ru_copy_elem(out->data, row * cols + (c * kh + i) * kw + j, in[0].data, ((b * C + c) * H + ih) * W + iw,
                           esz);
            }
      }
  return RLX_OK;
}

/* ======================================================================================
 * Pool (Max / Mean over NCHW windows)
 * ====================================================================================== */

/* Max ignores padded cells (NaN propagates; a window of padding only, possible on an empty input
 * axis, gives the identity -inf / the dtype's minimum); Mean sums the real cells and divides by
 * kH*kW (the padding counts as zeros). Integers stay exact in int64 (Mean truncates toward zero). */
RLX_CPU_KERNEL(Pool) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 has dtype %s; Pool needs a real dtype", rlx_dtype_name(t));
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kind is %d; Pool supports Max and Mean only", (int)a->kind);
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 4) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; expected NCHW", ru_fmt(x));
  cu_geom cgm;
  rlx_status st = cu_pool_geom(2, &a->kernel_size, &a->stride, &a->padding, &cgm);
  if (st != RLX_OK) return attr_error(n, st);
  int64_t dims[4] = {x->dims[0], x->dims[1], 0, 0};
  for (uint32_t i = 0; i < 2; i++) {
    bool ok;
    dims[2 + i] = out_extent(&cgm, i, x->dims[2 + i], false, &ok);
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 %s: spatial axis %u is smaller than the window", ru_fmt(x),
                      2 + i);
  }
  RLX_TRY(ru_need_out_dims(n, out, 4, dims));
  if (rlx_tensor_numel(out) == 0) return RLX_OK;
  size_t NC = (size_t)x->dims[0] * (size_t)x->dims[1], H = (size_t)x->dims[2], W = (size_t)x->dims[3];
  size_t Ho = (size_t)dims[2], Wo = (size_t)dims[3], kh = (size_t)cgm.k[0], kw = (size_t)cgm.k[1];
  bool is_max = a->kind == RLX_REDUCE_MAX, ints = rlx_dtype_is_int(t);
  for (size_t p = 0; p < NC; p++)
    for (size_t oh = 0; oh < Ho; oh++)
      for (size_t ow = 0; ow < Wo; ow++) {
        double acc = is_max ? -INFINITY : 0.0;
        int64_t iacc = is_max ? INT64_MIN : 0;
        for (size_t i = 0; i < kh; i++)
          for (size_t j = 0; j < kw; j++) {
            size_t ih, iw;
            if (!src_coord(oh, i, (size_t)cgm.s[0], 1, (size_t)cgm.pb[0], H, &ih) ||
                !src_coord(ow, j, (size_t)cgm.s[1], 1, (size_t)cgm.pb[1], W, &iw))
              continue;
            size_t off = (p * H + ih) * W + iw;
            if (ints) {
              int64_t v = rlx_elem_get_i64(in[0].data, t, off);
              iacc = is_max ? (v > iacc ? v : iacc) : rb_sat_add(iacc, v);
            } else {
              double v = rlx_elem_get(in[0].data, t, off);
              acc = is_max ? (isnan(v) || isnan(acc) ? NAN : (v > acc ? v : acc)) : acc + v;
            }
          }
        size_t o = (p * Ho + oh) * Wo + ow;
        if (ints) {
          if (!is_max) iacc /= (int64_t)(kh * kw);
          ru_store_i64(out->data, t, o, iacc);
        } else {
          ru_store(out->data, t, o, is_max ? acc : acc / (double)(kh * kw));
        }
      }
  return RLX_OK;
}

/* ======================================================================================
 * Resampling
 * ====================================================================================== */

/* [N, C, H, W] -> [N, C, 2H, 2W], out[2i + a][2j + b] = in[i][j]. */
RLX_CPU_KERNEL(ResizeNearest2x) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 4) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; expected NCHW", ru_fmt(x));
  if (x->dims[2] > INT64_MAX / 2 || x->dims[3] > INT64_MAX / 2)
    return ru_error(RLX_ERR_OVERFLOW, n, "operand 0 %s: doubled extents overflow", ru_fmt(x));
  int64_t dims[4] = {x->dims[0], x->dims[1], 2 * x->dims[2], 2 * x->dims[3]};
  RLX_TRY(ru_need_out_dims(n, out, 4, dims));
  if (rlx_tensor_numel(out) == 0) return RLX_OK;
  size_t NC = (size_t)x->dims[0] * (size_t)x->dims[1], H = (size_t)x->dims[2], W = (size_t)x->dims[3];
  size_t esz = ru_esz(out);
  for (size_t p = 0; p < NC; p++)
    for (size_t i = 0; i < 2 * H; i++)
      for (size_t j = 0; j < 2 * W; j++)
        ru_copy_elem(out->data, (p * 2 * H + i) * 2 * W + j, in[0].data, (p * H + i / 2) * W + j / 2, esz);
  return RLX_OK;
}

/* Nearest source index along one axis: min(floor(dst * in / out), in - 1). */
static size_t nearest(size_t dst, size_t in, size_t out) {
  unsigned __int128 v = (unsigned __int128)dst * in / out;
  return v >= in ? in - 1 : (size_t)v;
}

/* [N, C, D, H, W] -> [N, C, D', H', W'] with size = [D', H', W'] (nearest). */
RLX_CPU_KERNEL(Interpolate3d) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  const rlx_ilist *sz = &n->attrs.Interpolate3d.size;
  if (x->rank != 5) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; expected NCDHW", ru_fmt(x));
  if (sz->n != 3) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute size has %u entries; expected 3", sz->n);
  int64_t dims[5] = {x->dims[0], x->dims[1], sz->v[0], sz->v[1], sz->v[2]};
  for (uint32_t k = 0; k < 3; k++)
    if (sz->v[k] < 1 || x->dims[2 + k] < 1)
      return ru_error(RLX_ERR_INVALID_ARG, n, "axis %u: size %lld and input extent %lld must both be >= 1", 2 + k,
                      (long long)sz->v[k], (long long)x->dims[2 + k]);
  RLX_TRY(ru_need_out_dims(n, out, 5, dims));
  if (rlx_tensor_numel(out) == 0) return RLX_OK;
  size_t NC = (size_t)x->dims[0] * (size_t)x->dims[1], esz = ru_esz(out);
  size_t id = (size_t)x->dims[2], ih = (size_t)x->dims[3], iw = (size_t)x->dims[4];
  size_t od = (size_t)dims[2], oh = (size_t)dims[3], ow = (size_t)dims[4];
  size_t o = 0;
  for (size_t p = 0; p < NC; p++)
    for (size_t d = 0; d < od; d++)
      for (size_t h = 0; h < oh; h++)
        for (size_t w = 0; w < ow; w++, o++) {
          size_t src = ((p * id + nearest(d, id, od)) * ih + nearest(h, ih, oh)) * iw + nearest(w, iw, ow);
          ru_copy_elem(out->data, o, in[0].data, src, esz);
        }
  return RLX_OK;
}
