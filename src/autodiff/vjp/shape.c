/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: shape manipulation and data movement (Reshape, Transpose, Narrow, Concat, Expand,
 * Gather, Reverse, Pad, Slice, Tile, Trilu, Roll, KvAppend) and GatherBackward (second order). */
#include <stdlib.h>

#include "autodiff/ad_internal.h"

RLX_VJP_DECL(Reshape) {
  (void)n;
  (void)y;
  rlx_shape xs = ad_shape(c, x[0]);
  return ad_reshape(c, dy, &xs, &dx[0]);
}

RLX_VJP_DECL(Transpose) {
  (void)y;
  const rlx_ilist *p = &n->attrs.Transpose.perm;
  int64_t inv[RLX_MAX_RANK];
  for (uint32_t i = 0; i < p->n; i++) inv[p->v[i]] = i;
  return ad_transpose(c, dy, p->n, inv, &dx[0]);
}

RLX_VJP_DECL(Narrow) {
  (void)y;
  const rlx_attrs_Narrow *a = &n->attrs.Narrow;
  rlx_shape xs = ad_shape(c, x[0]);
  rlx_dim d = xs.dims[a->axis];
  if (d < 0) return ad_unsupported(c, "the narrowed axis %lld is symbolic", (long long)a->axis);
  return ad_pad_axis(c, dy, (uint32_t)a->axis, a->start, d - a->start - a->len, &dx[0]);
}

RLX_VJP_DECL(Concat) {
  (void)y;
  rlx_shape ys = ad_shape(c, dy);
  uint32_t ax;
  if (!rlx_norm_axis(n->attrs.Concat.axis, ys.rank, &ax)) return ad_unsupported(c, "attribute axis is out of range");
  int64_t off = 0;
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    rlx_dim len = ad_shape(c, x[i]).dims[ax];
    if (len < 0) return ad_unsupported(c, "operand %u has a symbolic extent on the concatenated axis", i);
    if (c->want[i]) RLX_TRY(ad_narrow(c, dy, ax, off, len, &dx[i]));
    off += len;
  }
  return RLX_OK;
}

RLX_VJP_DECL(Expand) {
  (void)n;
  (void)y;
  rlx_shape xs = ad_shape(c, x[0]);
  return ad_unbroadcast(c, dy, &xs, &dx[0]);
}

/* table[..axis] ++ idx.dims ++ table[axis+1..]: the idx axes of dy folded into one. */
static rlx_status fold_index_axes(rlx_ad_ctx *c, rlx_id g, rlx_id idx, uint32_t ax, rlx_id *gf, rlx_id *idxf) {
  rlx_shape gs = ad_shape(c, g), is = ad_shape(c, idx);
  rlx_dim u = 1;
  for (uint32_t i = 0; i < is.rank; i++) {
    if (is.dims[i] < 0) return ad_unsupported(c, "the indices have a symbolic extent");
    u *= is.dims[i];
  }
  rlx_dim d[RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i < ax; i++) d[r++] = gs.dims[i];
  d[r++] = u;
  for (uint32_t i = ax + is.rank; i < gs.rank; i++) d[r++] = gs.dims[i];
  RLX_TRY(ad_reshape_dims(c, g, r, d, gf));
  return ad_reshape_dims(c, idx, 1, &u, idxf);
}

RLX_VJP_DECL(Gather) {
  (void)y;
  if (!c->want[0]) return RLX_OK;
  rlx_shape ts = ad_shape(c, x[0]);
  uint32_t ax;
  if (!rlx_norm_axis(n->attrs.Gather.axis, ts.rank, &ax)) return ad_unsupported(c, "attribute axis is out of range");
  if (ax == 0) {
    rlx_id gf, idxf;
    RLX_TRY(fold_index_axes(c, dy, x[1], 0, &gf, &idxf));
    rlx_attrs_ScatterAdd a = {0};
    rlx_id in[2] = {gf, idxf};
    return ad_emit(c, RLX_OP_ScatterAdd, in, 2, &a, &ts, &dx[0]);
  }
  rlx_attrs_GatherBackward a = {.axis = ax};
  rlx_id in[2] = {dy, x[1]};
  return ad_emit(c, RLX_OP_GatherBackward, in, 2, &a, &ts, &dx[0]);
}

/* GatherBackward is linear in dy; its adjoint is the Gather itself. */
RLX_VJP_DECL(GatherBackward) {
  (void)y;
  if (!c->want[0]) return RLX_OK;
  rlx_attrs_Gather a = {.axis = n->attrs.GatherBackward.axis};
  rlx_id in[2] = {dy, x[1]};
  return rlx_build_Gather(c->dst, in, 2, &a, NULL, &dx[0]);
}

RLX_VJP_DECL(Reverse) {
  (void)y;
  const rlx_ilist *a = &n->attrs.Reverse.axes;
  return ad_reverse_axes(c, dy, a->n, a->v, &dx[0]);
}

/* Constant padding: the gradient is dy's interior. (Other modes are decomposed before AD.) */
RLX_VJP_DECL(Pad) {
  (void)y;
  const rlx_attrs_Pad *a = &n->attrs.Pad;
  if (a->mode != RLX_PAD_MODE_CONSTANT) return ad_unsupported(c, "only constant padding has a direct VJP");
  rlx_shape xs = ad_shape(c, x[0]);
  rlx_id g = dy;
  for (uint32_t k = 0; k < xs.rank; k++) {
    if (a->pads.v[2 * k] == 0 && a->pads.v[2 * k + 1] == 0) continue;
    RLX_TRY(ad_narrow(c, g, k, a->pads.v[2 * k], xs.dims[k], &g));
  }
  dx[0] = g;
  return RLX_OK;
}

/* out[j] = x[start + j*step]: dy is spread back with zeros between (|step| > 1) and around. */
RLX_VJP_DECL(Slice) {
  (void)y;
  const rlx_attrs_Slice *a = &n->attrs.Slice;
  rlx_shape xs = ad_shape(c, x[0]);
  uint32_t ax;
  if (!rlx_norm_axis(a->axis, xs.rank, &ax)) return ad_unsupported(c, "attribute axis is out of range");
  rlx_dim d = xs.dims[ax];
  if (d < 0) return ad_unsupported(c, "the sliced axis is symbolic");
  if (a->len == 0) return ad_zeros_like(c, x[0], &dx[0]);
  int64_t step = a->step < 0 ? -a->step : a->step, len = a->len;
  int64_t first = a->step < 0 ? a->start - (len - 1) * step : a->start; /* lowest index read */
  rlx_id g = dy;
  if (a->step < 0) {
    int64_t axis = ax;
    RLX_TRY(ad_reverse_axes(c, g, 1, &axis, &g));
  }
  if (step > 1) {
    /* [.., len, ..] -> [.., len, 1, ..] -> pad to [.., len, step, ..] -> [.., len*step, ..] */
    rlx_shape gs = ad_shape(c, g);
    if (gs.rank + 1u > RLX_MAX_RANK) return ad_unsupported(c, "a strided slice of a rank-%u tensor", gs.rank);
    RLX_TRY(ad_unsqueeze(c, g, ax + 1, &g));
    RLX_TRY(ad_pad_axis(c, g, ax + 1, 0, step - 1, &g));
    gs.dims[ax] = len * step;
    RLX_TRY(ad_reshape(c, g, &gs, &g));
    RLX_TRY(ad_narrow(c, g, ax, 0, (len - 1) * step + 1, &g));
  }
  int64_t span = (len - 1) * step + 1;
  return ad_pad_axis(c, g, ax, first, d - first - span, &dx[0]);
}

/* Sum of the tiles: [.., r*d, ..] -> [.., r, d, ..] -> sum over r, one axis at a time. */
RLX_VJP_DECL(Tile) {
  (void)y;
  const rlx_ilist *reps = &n->attrs.Tile.reps;
  rlx_shape xs = ad_shape(c, x[0]);
  rlx_id g = dy;
  for (uint32_t k = 0; k < xs.rank; k++) {
    int64_t r = reps->v[k];
    if (r == 1) continue;
    if (r == 0) return ad_zeros_like(c, x[0], &dx[0]);
    if (xs.rank + 1u > RLX_MAX_RANK) return ad_unsupported(c, "tiling a rank-%u tensor", xs.rank);
    rlx_shape gs = ad_shape(c, g);
    rlx_dim d[RLX_MAX_RANK];
    uint32_t m = 0;
    for (uint32_t i = 0; i < gs.rank; i++) {
      if (i == k) {
        d[m++] = r;
        d[m++] = xs.dims[k];
      } else {
        d[m++] = gs.dims[i];
      }
    }
    RLX_TRY(ad_reshape_dims(c, g, m, d, &g));
    int64_t axis = k;
    RLX_TRY(ad_reduce(c, RLX_REDUCE_SUM, g, 1, &axis, false, &g));
  }
  dx[0] = g;
  return RLX_OK;
}

RLX_VJP_DECL(Trilu) {
  (void)x;
  (void)y;
  return rlx_build_Trilu(c->dst, &dy, 1, &n->attrs.Trilu, NULL, &dx[0]);
}

RLX_VJP_DECL(Roll) {
  (void)x;
  (void)y;
  const rlx_attrs_Roll *a = &n->attrs.Roll;
  int64_t shifts[64];
  if (a->shifts.n > 64) return ad_unsupported(c, "more than 64 roll pairs");
  for (uint32_t i = 0; i < a->shifts.n; i++) shifts[i] = -a->shifts.v[i];
  rlx_attrs_Roll r = {.shifts = {.v = shifts, .n = a->shifts.n}, .dims = a->dims};
  return rlx_build_Roll(c->dst, &dy, 1, &r, NULL, &dx[0]);
}

/* out = cache[0..pos) ++ row along axis: the cache rows past pos (and the overwritten row pos)
 * get no gradient. */
RLX_VJP_DECL(KvAppend) {
  (void)y;
  const rlx_attrs_KvAppend *a = &n->attrs.KvAppend;
  rlx_shape cs = ad_shape(c, x[0]);
  uint32_t ax = (uint32_t)a->axis;
  if (cs.dims[ax] < 0) return ad_unsupported(c, "the cache axis is symbolic");
  if (c->want[0]) {
    if (a->pos == 0) {
      RLX_TRY(ad_zeros_like(c, x[0], &dx[0]));
    } else {
      rlx_id t;
      RLX_TRY(ad_narrow(c, dy, ax, 0, a->pos, &t));
      RLX_TRY(ad_pad_axis(c, t, ax, 0, cs.dims[ax] - a->pos, &dx[0]));
    }
  }
  if (c->want[1]) RLX_TRY(ad_narrow(c, dy, ax, a->pos, 1, &dx[1]));
  return RLX_OK;
}
