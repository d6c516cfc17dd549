/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Convolution and pooling geometry shared by infer_conv.c, infer_backward.c and infer_fused.c.
 *
 * Geometry attributes are lists, one entry per spatial axis (2 for NCHW ops, 3 for NCDHW ops):
 *   kernel_size  nsp entries (or empty where the weight supplies it)
 *   stride       empty (= all 1) or nsp entries, each >= 1
 *   dilation     empty (= all 1) or nsp entries, each >= 1
 *   padding      empty (= 0), nsp entries (symmetric) or 2*nsp entries ([begin..., end...])
 *   output_padding (transposed convs) empty (= 0) or nsp entries, each < max(stride, dilation)
 * Every entry must be <= CU_MAX_ATTR so that the size arithmetic below stays inside int64.
 *
 *   conv:       out = floor((in + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1
 *   transposed: out = (in-1)*stride - pad_begin - pad_end + dilation*(k-1) + output_padding + 1
 */
#ifndef RLX_INFER_CONV_UTIL_H
#define RLX_INFER_CONV_UTIL_H

#include "infer_util.h"

#define CU_MAX_ATTR ((int64_t)1 << 31)

typedef struct cu_geom {
  uint32_t nsp;             /* number of spatial axes: 2 or 3 */
  int64_t k[3], s[3], d[3]; /* kernel, stride, dilation */
  int64_t pb[3], pe[3];     /* padding at the begin / end of each axis */
  int64_t op[3];            /* output padding (transposed convs only; 0 otherwise) */
} cu_geom;

/* Reads a per-axis list attribute: empty -> every entry `dflt`; otherwise exactly nsp entries in
 * [min, CU_MAX_ATTR]. */
static inline rlx_status cu_list(const rlx_ilist *l, const char *attr, uint32_t nsp, int64_t dflt, int64_t min,
                                 int64_t *out) {
  if (l->n == 0) {
    for (uint32_t i = 0; i < nsp; i++) out[i] = dflt;
    return RLX_OK;
  }
  if (l->n != nsp)
    return rlx_shape_error("attribute %s has %u entries; expected %u (one per spatial axis) or none", attr, l->n, nsp);
  for (uint32_t i = 0; i < nsp; i++) {
    if (l->v[i] < min || l->v[i] > CU_MAX_ATTR)
      return rlx_shape_error("attribute %s: entry %u is %" PRId64 "; it must be in [%" PRId64 ", %" PRId64 "]", attr, i,
                             l->v[i], min, CU_MAX_ATTR);
    out[i] = l->v[i];
  }
  return RLX_OK;
}

/* Reads `padding`: empty, nsp entries (symmetric) or 2*nsp entries (all begins, then all ends). */
static inline rlx_status cu_padding(const rlx_ilist *l, uint32_t nsp, cu_geom *g) {
  if (l->n != 0 && l->n != nsp && l->n != 2 * nsp)
    return rlx_shape_error("attribute padding has %u entries; expected none, %u (symmetric) or %u ([begin..., end...])",
                           l->n, nsp, 2 * nsp);
  for (uint32_t i = 0; i < l->n; i++)
    if (l->v[i] < 0 || l->v[i] > CU_MAX_ATTR)
      return rlx_shape_error("attribute padding: entry %u is %" PRId64 "; it must be in [0, %" PRId64 "]", i, l->v[i],
                             CU_MAX_ATTR);
  for (uint32_t i = 0; i < nsp; i++) {
    g->pb[i] = l->n ? l->v[i] : 0;
    g->pe[i] = l->n == 2 * nsp ? l->v[nsp + i] : g->pb[i];
  }
  return RLX_OK;
}

/* Stride, padding, dilation and (optional, may be NULL) output padding. The kernel is read
 * separately (cu_kernel_*). */
static inline rlx_status cu_parse(uint32_t nsp, const rlx_ilist *stride, const rlx_ilist *padding,
                                  const rlx_ilist *dilation, const rlx_ilist *output_padding, cu_geom *g) {
  memset(g, 0, sizeof *g);
  g->nsp = nsp;
  RLX_TRY(cu_list(stride, "stride", nsp, 1, 1, g->s));
  RLX_TRY(cu_padding(padding, nsp, g));
  RLX_TRY(cu_list(dilation, "dilation", nsp, 1, 1, g->d));
  for (uint32_t i = 0; i < nsp; i++) g->k[i] = 1;
  if (output_padding) {
    RLX_TRY(cu_list(output_padding, "output_padding", nsp, 0, 0, g->op));
    for (uint32_t i = 0; i < nsp; i++) {
      int64_t lim = g->s[i] > g->d[i] ? g->s[i] : g->d[i];
      if (g->op[i] >= lim)
        return rlx_shape_error("attribute output_padding: entry %u is %" PRId64
                               "; it must be smaller than max(stride, dilation) = %" PRId64,
                               i, g->op[i], lim);
    }
  }
  return RLX_OK;
}

/* Kernel from the attribute alone (required: nsp entries >= 1). */
static inline rlx_status cu_kernel_attr(const rlx_ilist *ks, uint32_t nsp, cu_geom *g) {
  if (ks->n == 0)
    return rlx_shape_error("attribute kernel_size is empty; this op needs %u entries (the window size)", nsp);
  return cu_list(ks, "kernel_size", nsp, 1, 1, g->k);
}

/* Kernel from the weight operand `w` (spatial dims from axis 2 on); `ks` may be NULL (op has no
 * kernel_size) or empty, else it must repeat the weight's dims. */
static inline rlx_status cu_kernel_weight(const rlx_infer_ctx *c, uint32_t w, const rlx_ilist *ks, cu_geom *g) {
  const rlx_shape *ws = c->in[w];
  for (uint32_t i = 0; i < g->nsp; i++) {
    rlx_dim k = ws->dims[2 + i];
    if (k < 1 || k > CU_MAX_ATTR)
      return rlx_shape_error("operand %u (weight) has shape %s; its kernel dims (axes 2..) must be static and in [1, "
                             "%" PRId64 "]",
                             w, rlx_fmt_shape(ws), CU_MAX_ATTR);
    g->k[i] = k;
  }
  if (ks && ks->n) {
    int64_t k[3];
    RLX_TRY(cu_list(ks, "kernel_size", g->nsp, 1, 1, k));
    for (uint32_t i = 0; i < g->nsp; i++)
      if (k[i] != g->k[i])
        return rlx_shape_error("attribute kernel_size: entry %u is %" PRId64 ", but operand %u (weight) %s has kernel "
                               "extent %" PRId64 " there",
                               i, k[i], w, rlx_fmt_shape(ws), g->k[i]);
  }
  return RLX_OK;
}

/* Pooling window: kernel_size required, stride empty = kernel_size, padding as for convs but
 * smaller than the kernel on both sides, no dilation. */
static inline rlx_status cu_pool_geom(uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                      const rlx_ilist *padding, cu_geom *g) {
  static const rlx_ilist none = {.v = NULL, .n = 0};
  RLX_TRY(cu_parse(nsp, &none, padding, &none, NULL, g));
  RLX_TRY(cu_kernel_attr(ks, nsp, g));
  RLX_TRY(cu_list(stride, "stride", nsp, 1, 1, g->s));
  if (stride->n == 0) memcpy(g->s, g->k, sizeof g->s);
  for (uint32_t i = 0; i < nsp; i++)
    if (g->pb[i] >= g->k[i] || g->pe[i] >= g->k[i])
      return rlx_shape_error("attribute padding: spatial axis %u is padded by %" PRId64 " / %" PRId64
                             "; padding must be smaller than the kernel size %" PRId64,
                             2 + i, g->pb[i], g->pe[i], g->k[i]);
  return RLX_OK;
}

/* Does the geometry keep the extent of spatial axis i (so a symbolic extent passes through)? */
static inline bool cu_same_extent(const cu_geom *g, uint32_t i, bool transposed) {
  int64_t span = g->d[i] * (g->k[i] - 1) + (transposed ? g->op[i] : 0);
  return g->s[i] == 1 && g->pb[i] + g->pe[i] == span;
}

/* Output extent of spatial axis i for input extent `in` of operand `operand`.
 * *known = false when `in` is symbolic and the geometry changes the extent. An empty (or negative)
 * output is an error naming the operand and the attributes involved. */
static inline rlx_status cu_extent(const cu_geom *g, uint32_t i, bool transposed, rlx_dim in, uint32_t operand,
                                   bool *known, rlx_dim *out) {
  *known = true;
  if (in < 0) {
    *known = cu_same_extent(g, i, transposed);
    *out = in;
    return RLX_OK;
  }
  int64_t span = g->d[i] * (g->k[i] - 1); /* both <= 2^31: fits */
  if (!transposed) {
    int64_t padded;
    RLX_TRY(ck_add_or(in, g->pb[i] + g->pe[i], &padded, "a spatial extent plus padding"));
    if (padded < span + 1)
      return rlx_shape_error("operand %u: spatial axis %u has extent %" PRId64 " (%" PRId64 " with padding), smaller "
                             "than the dilated kernel extent %" PRId64 " (attributes kernel_size, dilation, padding)",
                             operand, 2 + i, in, padded, span + 1);
    *out = (padded - span - 1) / g->s[i] + 1;
    return RLX_OK;
  }
  if (in < 1)
    return rlx_shape_error("operand %u: spatial axis %u has extent 0; a transposed convolution needs at least 1",
                           operand, 2 + i);
  int64_t v;
  if (!ck_mul(in - 1, g->s[i], &v) || !ck_add(v, span + g->op[i] + 1, &v))
    return rlx_errorf(RLX_ERR_OVERFLOW, "operand %u: transposed output extent of axis %u overflows", operand, 2 + i);
  v -= g->pb[i] + g->pe[i];
  if (v < 1)
    return rlx_shape_error("operand %u: spatial axis %u of extent %" PRId64 " gives an empty transposed output "
                           "(%" PRId64 "); attribute padding is too large",
                           operand, 2 + i, in, v);
  *out = v;
  return RLX_OK;
}

/* Like cu_extent, but an unknown result falls back to the declared output shape (rank out_rank,
 * dim out_axis) and is an error without one. */
static inline rlx_status cu_extent_or_declared(const rlx_infer_ctx *c, const cu_geom *g, uint32_t i, bool transposed,
                                               uint32_t operand, uint32_t in_axis, uint32_t out_rank, uint32_t out_axis,
                                               rlx_dim *out) {
  bool known;
  RLX_TRY(cu_extent(g, i, transposed, c->in[operand]->dims[in_axis], operand, &known, out));
  if (known) return RLX_OK;
  if (c->declared && c->declared->rank == out_rank) {
    *out = c->declared->dims[out_axis];
    return RLX_OK;
  }
  return rlx_shape_error("operand %u %s: axis %u is symbolic and the geometry changes its extent; give the output "
                         "shape explicitly",
                         operand, rlx_fmt_shape(c->in[operand]), in_axis);
}

/* Attribute groups: >= 1 (bounded so products stay in range). */
static inline rlx_status cu_groups(int64_t groups) {
  if (groups < 1 || groups > CU_MAX_ATTR)
    return rlx_shape_error("attribute groups is %" PRId64 "; it must be in [1, %" PRId64 "]", groups, CU_MAX_ATTR);
  return RLX_OK;
}

/* A static channel count must be divisible by groups. */
static inline rlx_status cu_divisible(rlx_dim ch, int64_t groups, uint32_t operand, const char *what) {
  if (ch >= 0 && ch % groups != 0)
    return rlx_shape_error("attribute groups is %" PRId64 "; it must divide %s = %" PRId64 " of operand %u", groups,
                           what, ch, operand);
  return RLX_OK;
}

/* Operand i has rank 2+nsp (layout given for the message). */
static inline rlx_status cu_need_layout(const rlx_infer_ctx *c, uint32_t i, const char *what, uint32_t nsp,
                                        const char *layout) {
  if (c->in[i]->rank != 2 + nsp)
    return rlx_shape_error("operand %u (%s) has shape %s; expected rank %u %s", i, what, rlx_fmt_shape(c->in[i]),
                           2 + nsp, layout);
  return RLX_OK;
}

/* Forward convolution rule shared by Conv, Conv3d and FusedConvBiasAct: operands 0 (x) and 1
 * (weight [C_out, C_in/groups, k...]); `ks` may be NULL (kernel from the weight only).
 * Defined in infer_conv.c. */
rlx_status rlx_conv_forward_shape(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                  const rlx_ilist *padding, const rlx_ilist *dilation, int64_t groups, rlx_shape *out);

#endif
