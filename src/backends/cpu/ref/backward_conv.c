/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: convolution and max-pool backward, NCHW / NCDHW (spec ir-special §8;
 * forwards in ir-core §10.10). Geometry attributes follow infer_conv_util.h, like the forward ops:
 * stride / dilation empty = 1, padding empty = 0, one entry per axis (symmetric) or
 * [begin..., end...].
 *
 *   Conv{2,3}dBackwardInput  [dy [N, C_out, o...], w [C_out, C_in/G, k...]] -> dx [N, C_in, i...]
 *       (the input extents come from the node's declared shape):
 *       per image and group, col = w_g^T . dy_g  ([C_in/G * kvol, P]) scattered back (col2im):
 *       dx[c, o*s + kk*d - pad_begin] += col[(c, kk), o]
 *   Conv{2,3}dBackwardWeight [x [N, C_in, i...], dy [N, C_out, o...]] -> dw [C_out, C_in/G, k...]
 *       (k from attribute kernel_size): dw_g += dy_g . im2col(x_g)^T summed over the images
 *   MaxPool{2,3}dBackward    [x, dy] -> dx: each output cell's dy goes to the FIRST maximum of its
 *       window (row-major order over the real cells; padding never wins; a NaN in the window wins
 *       as the forward's max is NaN then); overlapping windows accumulate.
 *
 * F32 runs in float with sgemm (the training path); every other float dtype runs in double with
 * dgemm (f16 / bf16 are widened once and rounded once). 2-D ops are 3-D ops with a unit depth. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>

#include "backends/cpu/ref/ref_util_b.h"
#include "infer_conv_util.h"

/* Geometry with 3 spatial axes (2-D ops: axis 0 has extent 1). */
typedef struct bgeo {
  size_t N, Cin, Cout, G;
  size_t in[3], out[3], k[3], s[3], d[3], pb[3];
} bgeo;

static size_t vol(const size_t v[3]) { return v[0] * v[1] * v[2]; }

static rlx_status attr_error(const rlx_node *n, rlx_status s) {
  return ru_error(s == RLX_ERR_OVERFLOW ? s : RLX_ERR_INVALID_ARG, n, "%s", rlx_last_error());
}

/* Forward output extent of an input extent along axis i (conv formula); false when empty. */
static bool fwd_extent(const cu_geom *g, uint32_t i, int64_t in, int64_t *out) {
  int64_t span = g->d[i] * (g->k[i] - 1), padded;
  if (__builtin_add_overflow(in, g->pb[i] + g->pe[i], &padded) || padded < span + 1) return false;
  *out = (padded - span - 1) / g->s[i] + 1;
  return true;
}

/* Fills the 3-axis geometry from the input and output spatial dims (rank 2 + nsp shapes) and
 * checks that the forward op maps the input extents onto the output extents. */
static rlx_status fill_geom(const rlx_node *n, const cu_geom *cg, const rlx_shape *xs, const char *xname,
                            const rlx_shape *ys, const char *yname, bgeo *g) {
  uint32_t nsp = cg->nsp, off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    int64_t e;
    if (!fwd_extent(cg, i, xs->dims[2 + i], &e) || e != ys->dims[2 + i])
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "%s %s and %s %s do not fit the forward geometry on spatial axis %u "
                      "(kernel_size / stride / padding / dilation)",
                      xname, ru_fmt(xs), yname, ru_fmt(ys), 2 + i);
    g->in[off + i] = (size_t)xs->dims[2 + i];
    g->out[off + i] = (size_t)e;
    g->k[off + i] = (size_t)cg->k[i];
    g->s[off + i] = (size_t)cg->s[i];
    g->d[off + i] = (size_t)cg->d[i];
    g->pb[off + i] = (size_t)cg->pb[i];
  }
  return RLX_OK;
}

/* tab[kk * P + p] = spatial offset inside one input channel read by kernel tap kk at output cell
 * p, or -1 where that falls in the padding. */
static rlx_status tap_table(const rlx_node *n, const bgeo *g, ptrdiff_t **out) {
  size_t kv = vol(g->k), P = vol(g->out);
  ptrdiff_t *tab = NULL;
  RLX_TRY(rb_alloc(n, kv, P * sizeof *tab, &tab));
  size_t kk = 0;
  for (size_t kd = 0; kd < g->k[0]; kd++)
    for (size_t kh = 0; kh < g->k[1]; kh++)
      for (size_t kw = 0; kw < g->k[2]; kw++, kk++) {
        size_t p = 0;
        for (size_t od = 0; od < g->out[0]; od++)
          for (size_t oh = 0; oh < g->out[1]; oh++)
            for (size_t ow = 0; ow < g->out[2]; ow++, p++) {
              int64_t id = (int64_t)(od * g->s[0] + kd * g->d[0]) - (int64_t)g->pb[0];
              int64_t ih = (int64_t)(oh * g->s[1] + kh * g->d[1]) - (int64_t)g->pb[1];
              int64_t iw = (int64_t)(ow * g->s[2] + kw * g->d[2]) - (int64_t)g->pb[2];
              bool inside = id >= 0 && ih >= 0 && iw >= 0 && id < (int64_t)g->in[0] && ih < (int64_t)g->in[1] &&
                            iw < (int64_t)g->in[2];
              tab[kk * P + p] = inside ? (ptrdiff_t)(((size_t)id * g->in[1] + (size_t)ih) * g->in[2] + (size_t)iw) : -1;
            }
      }
  *out = tab;
  return RLX_OK;
}

/* Element buffers are float (f32) or double; these helpers address them by element index. */
static void *elem(void *base, bool f32, size_t i) { return (char *)base + i * (f32 ? sizeof(float) : sizeof(double)); }
static const void *celem(const void *base, bool f32, size_t i) {
  return (const char *)base + i * (f32 ? sizeof(float) : sizeof(double));
}

/* C (M x N, row-major) = alpha * op(A) . op(B) + beta * C. */
static void gemm(bool f32, bool ta, bool tb, size_t M, size_t N, size_t K, const void *A, size_t lda, const void *B,
                 size_t ldb, double beta, void *C, size_t ldc) {
  enum CBLAS_TRANSPOSE a = ta ? CblasTrans : CblasNoTrans, b = tb ? CblasTrans : CblasNoTrans;
  if (f32)
    cblas_sgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0f, A, (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
  else
    cblas_dgemm(CblasRowMajor, a, b, (int)M, (int)N, (int)K, 1.0, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* col[(c * kv + kk) * P + p] = x channel c at tab[kk * P + p] (0 in the padding), c < channels. */
static void im2col(bool f32, const void *x, size_t channels, size_t Pin, const ptrdiff_t *tab, size_t kv, size_t P,
                   void *col) {
  size_t n = kv * P;
  for (size_t c = 0; c < channels; c++) {
    if (f32) {
      const float *xc = (const float *)x + c * Pin;
      float *cc = (float *)col + c * n;
      for (size_t i = 0; i < n; i++) cc[i] = tab[i] < 0 ? 0.0f : xc[tab[i]];
    } else {
      const double *xc = (const double *)x + c * Pin;
      double *cc = (double *)col + c * n;
      for (size_t i = 0; i < n; i++) cc[i] = tab[i] < 0 ? 0.0 : xc[tab[i]];
    }
  }
}

/* The transpose of im2col: dx channel c at tab[kk * P + p] += col[(c * kv + kk) * P + p]. */
static void col2im(bool f32, const void *col, size_t channels, size_t Pin, const ptrdiff_t *tab, size_t kv, size_t P,
                   void *dx) {
  size_t n = kv * P;
  for (size_t c = 0; c < channels; c++) {
    if (f32) {
      const float *cc = (const float *)col + c * n;
      float *dc = (float *)dx + c * Pin;
      for (size_t i = 0; i < n; i++)
        if (tab[i] >= 0) dc[tab[i]] += cc[i];
    } else {
      const double *cc = (const double *)col + c * n;
      double *dc = (double *)dx + c * Pin;
      for (size_t i = 0; i < n; i++)
        if (tab[i] >= 0) dc[tab[i]] += cc[i];
    }
  }
}

static rlx_status need_gemm_ints(const rlx_node *n, size_t a, size_t b, size_t c) {
  if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
    return ru_error(RLX_ERR_UNSUPPORTED, n, "a GEMM extent exceeds the BLAS index range (%d)", INT_MAX);
  return RLX_OK;
}

/* dx = conv backward-input of dy and w (float or double buffers; dx zeroed here). */
static rlx_status backward_input(const rlx_node *n, const bgeo *g, bool f32, const void *dy, const void *w, void *dx) {
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, kv = vol(g->k), P = vol(g->out), Pin = vol(g->in), rows = cg * kv;
  memset(dx, 0, g->N * g->Cin * Pin * (f32 ? sizeof(float) : sizeof(double)));
  RLX_TRY(need_gemm_ints(n, rows, P, og));
  if (rows == 0 || P == 0 || og == 0) return RLX_OK;
  ptrdiff_t *tab = NULL;
  void *col = NULL;
  RLX_TRY(tap_table(n, g, &tab));
  rlx_status st = rb_alloc(n, rows, P * (f32 ? sizeof(float) : sizeof(double)), &col);
  for (size_t b = 0; b < g->N && !st; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      /* col [rows, P] = w_g^T [rows, og] . dy_g [og, P] */
      gemm(f32, true, false, rows, P, og, celem(w, f32, gr * og * rows), rows,
           celem(dy, f32, (b * g->Cout + gr * og) * P), P, 0.0, col, P);
      col2im(f32, col, cg, Pin, tab, kv, P, elem(dx, f32, (b * g->Cin + gr * cg) * Pin));
    }
  free(tab);
  if (!st) free(col);
  return st;
}

/* dw = conv backward-weight of x and dy (float or double buffers). */
static rlx_status backward_weight(const rlx_node *n, const bgeo *g, bool f32, const void *x, const void *dy, void *dw) {
  size_t cg = g->Cin / g->G, og = g->Cout / g->G, kv = vol(g->k), P = vol(g->out), Pin = vol(g->in), rows = cg * kv;
  memset(dw, 0, g->Cout * rows * (f32 ? sizeof(float) : sizeof(double)));
  RLX_TRY(need_gemm_ints(n, og, rows, P));
  if (rows == 0 || P == 0 || og == 0) return RLX_OK;
  ptrdiff_t *tab = NULL;
  void *col = NULL;
  RLX_TRY(tap_table(n, g, &tab));
  rlx_status st = rb_alloc(n, rows, P * (f32 ? sizeof(float) : sizeof(double)), &col);
  for (size_t b = 0; b < g->N && !st; b++)
    for (size_t gr = 0; gr < g->G; gr++) {
      im2col(f32, celem(x, f32, (b * g->Cin + gr * cg) * Pin), cg, Pin, tab, kv, P, col);
      /* dw_g [og, rows] += dy_g [og, P] . col^T [P, rows] */
      gemm(f32, false, true, og, rows, P, celem(dy, f32, (b * g->Cout + gr * og) * P), P, col, P, 1.0,
           elem(dw, f32, gr * og * rows), rows);
    }
  free(tab);
  if (!st) free(col);
  return st;
}

/* Runs `which` (0: input, 1: weight) on operands a, b with the output, converting f16 / bf16 / f64
 * through double buffers and using f32 data in place. */
static rlx_status run_conv(const rlx_node *n, const bgeo *g, int which, const rlx_tensor *a, const rlx_tensor *b,
                           rlx_tensor *out) {
  if (ru_dt(out) == RLX_F32 || ru_dt(out) == RLX_F64) {
    bool f32 = ru_dt(out) == RLX_F32;
    return which == 0 ? backward_input(n, g, f32, a->data, b->data, out->data)
                      : backward_weight(n, g, f32, a->data, b->data, out->data);
  }
  double *ad = NULL, *bd = NULL, *od = NULL;
  rlx_status st = rb_load(n, a, &ad);
  if (!st) st = rb_load(n, b, &bd);
  if (!st) st = rb_alloc(n, rlx_tensor_numel(out), sizeof *od, &od);
  if (!st) st = which == 0 ? backward_input(n, g, false, ad, bd, od) : backward_weight(n, g, false, ad, bd, od);
  if (!st) rb_store_all(out, od);
  free(ad);
  free(bd);
  free(od);
  return st;
}

/* Shared checks of the four conv backward ops: both operands float of the output's dtype and
 * rank 2 + nsp, groups valid, geometry parsed. */
static rlx_status conv_common(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_tensor *out,
                              uint32_t nsp, const rlx_ilist *stride, const rlx_ilist *padding,
                              const rlx_ilist *dilation, int64_t groups, cu_geom *cg) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "operand 0"));
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  if (in[0].shape.rank != 2 + nsp || in[1].shape.rank != 2 + nsp || out->shape.rank != 2 + nsp)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands %s, %s and the output %s must all have rank %u",
                    ru_fmt(&in[0].shape), ru_fmt(&in[1].shape), ru_fmt(&out->shape), 2 + nsp);
  if (groups < 1 || groups > CU_MAX_ATTR)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute groups is %lld; it must be >= 1", (long long)groups);
  rlx_status s = cu_parse(nsp, stride, padding, dilation, NULL, cg);
  return s ? attr_error(n, s) : RLX_OK;
}

/* [dy, w] -> dx with the declared input shape. */
static rlx_status conv_input_op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, uint32_t nsp,
                                const rlx_ilist *ks, const rlx_ilist *stride, const rlx_ilist *padding,
                                const rlx_ilist *dilation, int64_t groups) {
  cu_geom cg;
  RLX_TRY(conv_common(n, in, n_in, out, nsp, stride, padding, dilation, groups, &cg));
  const rlx_shape *dy = &in[0].shape, *w = &in[1].shape, *x = &out->shape;
  size_t G = (size_t)groups, Cin = (size_t)x->dims[1], Cout = (size_t)dy->dims[1];
  if ((size_t)w->dims[0] != Cout || Cout % G || Cin % G || (size_t)w->dims[1] != Cin / G || x->dims[0] != dy->dims[0])
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operands dy %s, weight %s and the output %s do not fit [N, C_out, ...], "
                    "[C_out, C_in/groups, k...], [N, C_in, ...] with groups = %zu",
                    ru_fmt(dy), ru_fmt(w), ru_fmt(x), G);
  for (uint32_t i = 0; i < nsp; i++) {
    if (w->dims[2 + i] < 1 || w->dims[2 + i] > CU_MAX_ATTR)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (weight) has shape %s; kernel extents must be >= 1",
                      ru_fmt(w));
    cg.k[i] = w->dims[2 + i];
    if (ks->n && (ks->n != nsp || ks->v[i] != cg.k[i]))
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kernel_size does not match the weight %s", ru_fmt(w));
  }
  bgeo g = {(size_t)x->dims[0], Cin, Cout, G, {0}, {0}, {0}, {0}, {0}, {0}};
  RLX_TRY(fill_geom(n, &cg, x, "the output (dx)", dy, "operand 0 (dy)", &g));
  return run_conv(n, &g, 0, &in[0], &in[1], out);
}

/* [x, dy] -> dw [C_out, C_in/G, k...] with k from attribute kernel_size. */
static rlx_status conv_weight_op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, uint32_t nsp,
                                 const rlx_ilist *ks, const rlx_ilist *stride, const rlx_ilist *padding,
                                 const rlx_ilist *dilation, int64_t groups) {
  cu_geom cg;
  RLX_TRY(conv_common(n, in, n_in, out, nsp, stride, padding, dilation, groups, &cg));
  rlx_status s = cu_kernel_attr(ks, nsp, &cg);
  if (s) return attr_error(n, s);
  const rlx_shape *x = &in[0].shape, *dy = &in[1].shape;
  size_t G = (size_t)groups, Cin = (size_t)x->dims[1], Cout = (size_t)dy->dims[1];
  if (Cin % G || Cout % G || x->dims[0] != dy->dims[0])
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operands x %s and dy %s: batches must agree and groups = %zu must divide "
                    "both channel counts",
                    ru_fmt(x), ru_fmt(dy), G);
  int64_t dims[5] = {(int64_t)Cout, (int64_t)(Cin / G), cg.k[0], cg.k[1], cg.k[2]};
  RLX_TRY(ru_need_out_dims(n, out, 2 + nsp, dims));
  bgeo g = {(size_t)x->dims[0], Cin, Cout, G, {0}, {0}, {0}, {0}, {0}, {0}};
  RLX_TRY(fill_geom(n, &cg, x, "operand 0 (x)", dy, "operand 1 (dy)", &g));
  return run_conv(n, &g, 1, &in[0], &in[1], out);
}

RLX_CPU_KERNEL(Conv2dBackwardInput) {
  (void)ctx;
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  return conv_input_op(n, in, n_in, out, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups);
}

RLX_CPU_KERNEL(Conv3dBackwardInput) {
  (void)ctx;
  const rlx_attrs_Conv3dBackwardInput *a = &n->attrs.Conv3dBackwardInput;
  return conv_input_op(n, in, n_in, out, 3, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups);
}

RLX_CPU_KERNEL(Conv2dBackwardWeight) {
  (void)ctx;
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  return conv_weight_op(n, in, n_in, out, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups);
}

RLX_CPU_KERNEL(Conv3dBackwardWeight) {
  (void)ctx;
  const rlx_attrs_Conv3dBackwardWeight *a = &n->attrs.Conv3dBackwardWeight;
  return conv_weight_op(n, in, n_in, out, 3, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups);
}

/* ======================================================================================
 * MaxPool backward
 * ====================================================================================== */

/* Does element a beat the current best b (the first maximum wins; NaN beats everything and the
 * first NaN stays)? */
static bool beats_f(double a, double b) { return !isnan(b) && (isnan(a) || a > b); }

static rlx_status maxpool_backward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                   uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                   const rlx_ilist *padding) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (x) has dtype %s; max pooling needs a real dtype",
                    rlx_dtype_name(t));
  const rlx_shape *x = &in[0].shape, *dy = &in[1].shape;
  if (x->rank != 2 + nsp || dy->rank != 2 + nsp || x->dims[0] != dy->dims[0] || x->dims[1] != dy->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operands x %s and dy %s must both be [N, C, spatial...] of rank %u with "
                    "equal N and C",
                    ru_fmt(x), ru_fmt(dy), 2 + nsp);
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  cu_geom cg;
  rlx_status s = cu_pool_geom(nsp, ks, stride, padding, &cg);
  if (s) return attr_error(n, s);
  bgeo g;
  RLX_TRY(fill_geom(n, &cg, x, "operand 0 (x)", dy, "operand 1 (dy)", &g));
  size_t NC = (size_t)x->dims[0] * (size_t)x->dims[1], Pin = vol(g.in), P = vol(g.out), kv = vol(g.k);
  bool ints = rlx_dtype_is_int(t);
  size_t total = NC * Pin;
  double *acc = NULL;
  int64_t *iacc = NULL;
  ptrdiff_t *tab = NULL;
  RLX_TRY(tap_table(n, &g, &tab));
  s = ints ? rb_calloc(n, total, sizeof *iacc, &iacc) : rb_calloc(n, total, sizeof *acc, &acc);
  for (size_t c = 0; c < NC && !s; c++)
    for (size_t p = 0; p < P; p++) {
      ptrdiff_t best = -1;
      for (size_t kk = 0; kk < kv; kk++) {
        ptrdiff_t o = tab[kk * P + p];
        if (o < 0) continue;
        size_t i = c * Pin + (size_t)o;
        if (best < 0)
          best = o;
        else if (ints ? rlx_elem_get_i64(in[0].data, t, i) > rlx_elem_get_i64(in[0].data, t, c * Pin + (size_t)best)
                      : beats_f(rlx_elem_get(in[0].data, t, i), rlx_elem_get(in[0].data, t, c * Pin + (size_t)best)))
          best = o;
      }
      if (best < 0) continue; /* a window of padding only (an empty input axis) */
      size_t dst = c * Pin + (size_t)best, src = c * P + p;
      if (ints)
        iacc[dst] = rb_sat_add(iacc[dst], rlx_elem_get_i64(in[1].data, t, src));
      else
        acc[dst] += rlx_elem_get(in[1].data, t, src);
    }
  if (!s) {
    if (ints)
      for (size_t i = 0; i < total; i++) ru_store_i64(out->data, t, i, iacc[i]);
    else
      rb_store_all(out, acc);
  }
  free(tab);
  free(acc);
  free(iacc);
  return s;
}

RLX_CPU_KERNEL(MaxPool2dBackward) {
  (void)ctx;
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  return maxpool_backward(n, in, n_in, out, 2, &a->kernel_size, &a->stride, &a->padding);
}

RLX_CPU_KERNEL(MaxPool3dBackward) {
  (void)ctx;
  const rlx_attrs_MaxPool3dBackward *a = &n->attrs.MaxPool3dBackward;
  return maxpool_backward(n, in, n_in, out, 3, &a->kernel_size, &a->stride, &a->padding);
}
