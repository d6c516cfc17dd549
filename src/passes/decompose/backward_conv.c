/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of the convolution and max-pool backward ops (kernels in ref/backward_conv.c).
 *
 *   Conv{2,3}dBackwardInput  = ConvTranspose{2,3}d(dy, w) with the forward's stride, padding,
 *       dilation and groups (w [C_out, C_in/G, k...] is exactly a transposed convolution's
 *       [C_in', C_out'/G, k...] weight) and output_padding = the rows the forward's floor dropped,
 *       so the result has the declared input extents.
 *   Conv{2,3}dBackwardWeight = one Conv with the roles of the spatial axes swapped:
 *       dw[co, ci, kk] = sum_{n, o} x[n, g*cg + ci, o*s + kk*d - pb] * dy[n, co, o]
 *       is a convolution of x viewed as [C_in/G, G*N, spatial] (batch = ci, channels = (g, n))
 *       with dy viewed as the weight [C_out, N, o...] (groups = G), stride = the forward
 *       dilation, dilation = the forward stride and the forward padding; its output
 *       [C_in/G, C_out, k'...] (k' >= k) is narrowed to k and transposed to [C_out, C_in/G, k...].
 *   MaxPool{2,3}dBackward: x is padded with -inf and each kernel tap's strided view X_t is taken
 *       (Slice); m = max_t X_t. Walking the taps from last to first, pos = where(X_t == m and the
 *       tap is a real cell, flat input position of the tap, pos), so pos ends at the FIRST maximum
 *       of each window (row-major) — the kernel's tie rule. dx = ScatterElements(zeros [N, C, P],
 *       pos, dy, reduction Add) reshaped to x. A window whose maximum is NaN matches no tap; its dy
 *       goes to the window's first real cell (the kernel picks the first NaN). */
#include <math.h>

#include "infer_conv_util.h"
#include "passes/decompose/decompose.h"

/* Geometry as 3 per-axis arrays of the op (nsp axes). */
static rlx_status parse(const rlx_node *n, uint32_t nsp, const rlx_ilist *stride, const rlx_ilist *padding,
                        const rlx_ilist *dilation, cu_geom *g) {
  rlx_status s = cu_parse(nsp, stride, padding, dilation, NULL, g);
  if (s) return rlx_error_context(s, "%s", rlx_op_name(n->op));
  return RLX_OK;
}

static rlx_ilist list_of(int64_t *v, uint32_t n) { return (rlx_ilist){.v = v, .n = n}; }

/* ---- backward input ---- */

static rlx_status conv_input(rlx_graph *dst, const rlx_node *n, const rlx_id *in, uint32_t nsp, const rlx_ilist *stride,
                             const rlx_ilist *padding, const rlx_ilist *dilation, int64_t groups, rlx_id *out) {
  cu_geom g;
  RLX_TRY(parse(n, nsp, stride, padding, dilation, &g));
  rlx_shape dy = dc_shape(dst, in[0]), w = dc_shape(dst, in[1]);
  const rlx_shape *x = &n->shape; /* the declared input shape */
  int64_t s[3], p[6], d[3], op[3];
  for (uint32_t i = 0; i < nsp; i++) {
    if (w.dims[2 + i] < 1 || x->dims[2 + i] < 0 || dy.dims[2 + i] < 0)
      return dc_unsupported(n, "spatial extents must be static");
    g.k[i] = w.dims[2 + i];
    int64_t span = g.d[i] * (g.k[i] - 1);
    int64_t base = (dy.dims[2 + i] - 1) * g.s[i] - g.pb[i] - g.pe[i] + span + 1;
    op[i] = x->dims[2 + i] - base;
    if (op[i] < 0 || op[i] >= (g.s[i] > g.d[i] ? g.s[i] : g.d[i]))
      return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: the declared input extent %lld on axis %u does not fit dy",
                        rlx_op_name(n->op), (long long)x->dims[2 + i], 2 + i);
    s[i] = g.s[i];
    d[i] = g.d[i];
    p[i] = g.pb[i];
    p[nsp + i] = g.pe[i];
  }
  if (nsp == 2) {
    rlx_attrs_ConvTranspose2d a;
    rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
    a.stride = list_of(s, 2);
    a.padding = list_of(p, 4);
    a.dilation = list_of(d, 2);
    a.output_padding = list_of(op, 2);
    a.groups = groups;
    return rlx_build_ConvTranspose2d(dst, in, 2, &a, NULL, out);
  }
  rlx_attrs_ConvTranspose3d a;
  rlx_attrs_init(RLX_OP_ConvTranspose3d, &a);
  a.stride = list_of(s, 3);
  a.padding = list_of(p, 6);
  a.dilation = list_of(d, 3);
  a.output_padding = list_of(op, 3);
  a.groups = groups;
  return rlx_build_ConvTranspose3d(dst, in, 2, &a, NULL, out);
}

RLX_DECOMPOSE_DECL(Conv2dBackwardInput) {
  (void)src;
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  return conv_input(dst, n, in, 2, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

RLX_DECOMPOSE_DECL(Conv3dBackwardInput) {
  (void)src;
  const rlx_attrs_Conv3dBackwardInput *a = &n->attrs.Conv3dBackwardInput;
  return conv_input(dst, n, in, 3, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

/* ---- backward weight ---- */

static rlx_status conv_weight(rlx_graph *dst, const rlx_node *n, const rlx_id *in, uint32_t nsp, const rlx_ilist *ks,
                              const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation,
                              int64_t groups, rlx_id *out) {
  cu_geom g;
  RLX_TRY(parse(n, nsp, stride, padding, dilation, &g));
  rlx_status st = cu_kernel_attr(ks, nsp, &g);
  if (st) return rlx_error_context(st, "%s", rlx_op_name(n->op));
  rlx_shape xs = dc_shape(dst, in[0]), ys = dc_shape(dst, in[1]);
  for (uint32_t i = 0; i < 2 + nsp; i++)
    if (xs.dims[i] < 0 || ys.dims[i] < 0) return dc_unsupported(n, "the operands need static shapes");
  int64_t G = groups, N = xs.dims[0], Cin = xs.dims[1], Cout = ys.dims[1];
  if (G < 1 || Cin % G || Cout % G)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: groups must divide the channel counts", rlx_op_name(n->op));
  int64_t cg = Cin / G;
  uint32_t r = 2 + nsp;
  /* x [N, G*cg, sp] -> [N, G, cg, sp] -> [cg, G, N, sp] -> [cg, G*N, sp] */
  rlx_dim d6[RLX_MAX_RANK] = {N, G, cg};
  for (uint32_t i = 0; i < nsp; i++) d6[3 + i] = xs.dims[2 + i];
  int64_t perm[RLX_MAX_RANK] = {2, 1, 0};
  for (uint32_t i = 0; i < nsp; i++) perm[3 + i] = 3 + i;
  rlx_id xt, yt, c;
  RLX_TRY(rlx_reshape_dims(dst, in[0], r + 1, d6, &xt));
  RLX_TRY(rlx_permute(dst, xt, r + 1, perm, &xt));
  rlx_dim d5[RLX_MAX_RANK] = {cg, G * N};
  for (uint32_t i = 0; i < nsp; i++) d5[2 + i] = xs.dims[2 + i];
  RLX_TRY(rlx_reshape_dims(dst, xt, r, d5, &xt));
  /* dy [N, Cout, o...] -> [Cout, N, o...] */
  int64_t swap[RLX_MAX_RANK] = {1, 0};
  for (uint32_t i = 0; i < nsp; i++) swap[2 + i] = 2 + i;
  RLX_TRY(rlx_permute(dst, in[1], r, swap, &yt));
  int64_t s[3], p[6], d[3];
  for (uint32_t i = 0; i < nsp; i++) {
    s[i] = g.d[i];
    d[i] = g.s[i];
    p[i] = g.pb[i];
    p[nsp + i] = g.pe[i];
  }
  rlx_id args[2] = {xt, yt};
  if (nsp == 2) {
    rlx_attrs_Conv a;
    rlx_attrs_init(RLX_OP_Conv, &a);
    a.stride = list_of(s, 2);
    a.padding = list_of(p, 4);
    a.dilation = list_of(d, 2);
    a.groups = G;
    RLX_TRY(rlx_build_Conv(dst, args, 2, &a, NULL, &c));
  } else {
    rlx_attrs_Conv3d a;
    rlx_attrs_init(RLX_OP_Conv3d, &a);
    a.stride = list_of(s, 3);
    a.padding = list_of(p, 6);
    a.dilation = list_of(d, 3);
    a.groups = G;
    RLX_TRY(rlx_build_Conv3d(dst, args, 2, &a, NULL, &c));
  }
  /* c [cg, Cout, k'...] -> narrow to k -> [Cout, cg, k...] */
  rlx_shape cs = dc_shape(dst, c);
  for (uint32_t i = 0; i < nsp; i++) {
    if (cs.dims[2 + i] < g.k[i])
      return rlx_errorf(RLX_ERR_INTERNAL, "%s: the swapped convolution is smaller than the kernel", rlx_op_name(n->op));
    if (cs.dims[2 + i] > g.k[i]) RLX_TRY(rlx_narrow(dst, c, 2 + i, 0, g.k[i], &c));
  }
  return rlx_permute(dst, c, r, swap, out);
}

RLX_DECOMPOSE_DECL(Conv2dBackwardWeight) {
  (void)src;
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  return conv_weight(dst, n, in, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

RLX_DECOMPOSE_DECL(Conv3dBackwardWeight) {
  (void)src;
  const rlx_attrs_Conv3dBackwardWeight *a = &n->attrs.Conv3dBackwardWeight;
  return conv_weight(dst, n, in, 3, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

/* ---- max-pool backward ---- */

/* Per-tap constants over the output grid [o...]: flat input position of the tap (or -1 in the
 * padding). */
static void tap_positions(const cu_geom *g, uint32_t nsp, const int64_t *in, const int64_t *od, const int64_t *tap,
                          double *pos) {
  int64_t total = 1;
  for (uint32_t i = 0; i < nsp; i++) total *= od[i];
  for (int64_t c = 0; c < total; c++) {
    int64_t rem = c, flat = 0, stride = 1, o[3];
    for (uint32_t i = nsp; i-- > 0;) {
      o[i] = rem % od[i];
      rem /= od[i];
    }
    bool inside = true;
    for (uint32_t i = nsp; i-- > 0;) {
      int64_t v = o[i] * g->s[i] + tap[i] - g->pb[i];
      if (v < 0 || v >= in[i]) inside = false;
      flat += v * stride;
      stride *= in[i];
    }
    pos[c] = inside ? (double)flat : -1.0;
  }
}

/* Row-major kernel tap number tp -> per-axis offsets. */
static void tap_of(const cu_geom *g, uint32_t nsp, int64_t tp, int64_t *tap) {
  for (uint32_t i = nsp; i-- > 0;) {
    tap[i] = tp % g->k[i];
    tp /= g->k[i];
  }
}

static rlx_status maxpool(rlx_graph *dst, const rlx_node *n, const rlx_id *in, uint32_t nsp, const rlx_ilist *ks,
                          const rlx_ilist *stride, const rlx_ilist *padding, rlx_id *out) {
  cu_geom g;
  rlx_status st = cu_pool_geom(nsp, ks, stride, padding, &g);
  if (st) return rlx_error_context(st, "%s", rlx_op_name(n->op));
  rlx_shape xs = dc_shape(dst, in[0]), ys = dc_shape(dst, in[1]);
  for (uint32_t i = 0; i < 2 + nsp; i++)
    if (xs.dims[i] < 0 || ys.dims[i] < 0) return dc_unsupported(n, "max-pool backward needs static shapes");
  rlx_dtype t = (rlx_dtype)xs.dtype;
  int64_t ind[3], od[3], P = 1, Pin = 1, kv = 1;
  for (uint32_t i = 0; i < nsp; i++) {
    ind[i] = xs.dims[2 + i];
    od[i] = ys.dims[2 + i];
    P *= od[i];
    Pin *= ind[i];
    kv *= g.k[i];
  }
  if (P > ((int64_t)1 << 26) || kv > 4096)
    return dc_unsupported(n, "the window or the output grid is too large to unroll");
  /* Pad with -inf (the Pad op takes every axis). */
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  for (uint32_t i = 0; i < nsp; i++) {
    pads[2 * (2 + i)] = g.pb[i];
    pads[2 * (2 + i) + 1] = g.pe[i];
  }
  rlx_attrs_Pad pa;
  rlx_attrs_init(RLX_OP_Pad, &pa);
  pa.pads = list_of(pads, 2 * (2 + nsp));
  pa.value = -INFINITY;
  rlx_id xp;
  RLX_TRY(rlx_build_Pad(dst, &in[0], 1, &pa, NULL, &xp));
  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *views = al->alloc(al->ctx, (size_t)kv * sizeof *views);
  double *pos = al->alloc(al->ctx, (size_t)P * sizeof *pos);
  if (!views || !pos) st = rlx_errorf(RLX_ERR_OOM, "out of memory decomposing %s", rlx_op_name(n->op));
  /* The strided view of every tap and their maximum. */
  rlx_id m = 0;
  for (int64_t tp = 0; tp < kv && !st; tp++) {
    int64_t tap[3];
    tap_of(&g, nsp, tp, tap);
    rlx_id v = xp;
    for (uint32_t i = 0; i < nsp && !st; i++) {
      rlx_attrs_Slice sa = {.axis = 2 + i, .start = tap[i], .len = od[i], .step = g.s[i]};
      st = rlx_build_Slice(dst, &v, 1, &sa, NULL, &v);
    }
    views[tp] = v;
    if (!st) st = tp == 0 ? (m = v, RLX_OK) : rlx_binary(dst, RLX_BINOP_MAX, m, v, &m);
  }
  /* cur starts as every window's first real cell (the fallback when no tap matches), then the taps
   * from last to first override it where they hold the maximum: the first maximum wins. */
  rlx_id cur = 0;
  rlx_dim gd[3];
  for (uint32_t i = 0; i < nsp; i++) gd[i] = od[i];
  double *first = st ? NULL : al->alloc(al->ctx, (size_t)P * sizeof *first);
  if (!st && !first) st = rlx_errorf(RLX_ERR_OOM, "out of memory decomposing %s", rlx_op_name(n->op));
  for (int64_t c = 0; c < P && !st; c++) first[c] = 0.0;
  for (int64_t tp = kv; tp-- > 0 && !st;) {
    int64_t tap[3];
    tap_of(&g, nsp, tp, tap);
    tap_positions(&g, nsp, ind, od, tap, pos);
    for (int64_t c = 0; c < P; c++)
      if (pos[c] >= 0) first[c] = pos[c];
  }
  if (!st) st = rlx_values(dst, RLX_I64, nsp, gd, first, &cur);
  for (int64_t tp = kv; tp-- > 0 && !st;) {
    int64_t tap[3];
    tap_of(&g, nsp, tp, tap);
    tap_positions(&g, nsp, ind, od, tap, pos);
    bool any_pad = false, any_real = false;
    for (int64_t c = 0; c < P; c++) {
      if (pos[c] < 0)
        any_pad = true;
      else
        any_real = true;
    }
    if (!any_real) continue;
    rlx_id eq, pc, valid, no;
    st = rlx_compare(dst, RLX_CMP_EQ, views[tp], m, &eq);
    if (!st && any_pad) { /* padded cells never match (first[] is scratch from here on) */
      for (int64_t c = 0; c < P; c++) first[c] = pos[c] >= 0;
      st = rlx_values(dst, RLX_BOOL, nsp, gd, first, &valid);
      if (!st) st = rlx_scalar(dst, RLX_BOOL, 0.0, &no);
      if (!st) st = rlx_where(dst, valid, eq, no, &eq);
    }
    for (int64_t c = 0; c < P; c++)
      if (pos[c] < 0) pos[c] = 0;
    if (!st) st = rlx_values(dst, RLX_I64, nsp, gd, pos, &pc);
    if (!st) st = rlx_where(dst, eq, pc, cur, &cur);
  }
  al->free(al->ctx, first);
  al->free(al->ctx, views);
  al->free(al->ctx, pos);
  RLX_TRY(st);
  rlx_shape cs = dc_shape(dst, cur);
  rlx_dim full[RLX_MAX_RANK] = {ys.dims[0], ys.dims[1]};
  for (uint32_t i = 0; i < nsp; i++) full[2 + i] = od[i];
  if (cs.rank != 2 + nsp) RLX_TRY(rlx_expand_dims(dst, cur, 2 + nsp, full, &cur));
  rlx_dim flat3[3] = {xs.dims[0], xs.dims[1], P}, flat_in[3] = {xs.dims[0], xs.dims[1], Pin};
  rlx_id idx, upd, zeros, sc;
  RLX_TRY(rlx_reshape_dims(dst, cur, 3, flat3, &idx));
  RLX_TRY(rlx_reshape_dims(dst, in[1], 3, flat3, &upd));
  RLX_TRY(rlx_fill(dst, t, 3, flat_in, 0.0, &zeros));
  rlx_attrs_ScatterElements se = {.axis = 2, .reduction = RLX_SCATTER_REDUCTION_ADD};
  rlx_id sargs[3] = {zeros, idx, upd};
  RLX_TRY(rlx_build_ScatterElements(dst, sargs, 3, &se, NULL, &sc));
  return rlx_reshape_dims(dst, sc, xs.rank, xs.dims, out);
}

RLX_DECOMPOSE_DECL(MaxPool2dBackward) {
  (void)src;
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  return maxpool(dst, n, in, 2, &a->kernel_size, &a->stride, &a->padding, out);
}

RLX_DECOMPOSE_DECL(MaxPool3dBackward) {
  (void)src;
  const rlx_attrs_MaxPool3dBackward *a = &n->attrs.MaxPool3dBackward;
  return maxpool(dst, n, in, 3, &a->kernel_size, &a->stride, &a->padding, out);
}
