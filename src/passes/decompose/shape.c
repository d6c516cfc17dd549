/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of shape and data-movement ops into Narrow / Concat / Reverse / Expand / Gather /
 * Reshape / Where: Slice, Pad, Tile, Trilu, Roll, KvAppend and ResizeNearest2x. */
#include <stdlib.h>

#include "passes/decompose/decompose.h"

/* Slice: step 1 -> Narrow; step -1 -> Narrow + Reverse; any other step -> Gather with a constant
 * I64 index list. */
RLX_DECOMPOSE_DECL(Slice) {
  (void)src;
  const rlx_attrs_Slice *a = &n->attrs.Slice;
  rlx_shape xs = dc_shape(dst, in[0]);
  uint32_t ax;
  RLX_TRY(dc_axis(n, "axis", a->axis, xs.rank, &ax));
  if (a->len == 0) return rlx_narrow(dst, in[0], ax, 0, 0, out);
  if (a->step == 1) return rlx_narrow(dst, in[0], ax, a->start, a->len, out);
  if (a->step == -1) {
    rlx_id w;
    RLX_TRY(rlx_narrow(dst, in[0], ax, a->start - a->len + 1, a->len, &w));
    int64_t axes[1] = {ax};
    return rlx_reverse_axes(dst, w, 1, axes, out);
  }
  if (a->len > UINT32_MAX) return dc_unsupported(n, "attribute len %lld is too large", (long long)a->len);
  const rlx_allocator *al = rlx_graph_allocator(dst);
  int64_t *idx = al->alloc(al->ctx, (size_t)a->len * sizeof *idx);
  if (!idx) return rlx_errorf(RLX_ERR_OOM, "out of memory for Slice indices");
  for (int64_t j = 0; j < a->len; j++) idx[j] = a->start + j * a->step; /* range checked by the shape rule */
  rlx_id c;
  rlx_status s = rlx_i64s(dst, (uint32_t)a->len, idx, &c);
  al->free(al->ctx, idx);
  RLX_TRY(s);
  return rlx_gather_axis(dst, in[0], c, ax, out);
}

/* A block shaped like `x` but with extent `len` on `axis`, filled with `value` (x's dtype). Static
 * shapes use a one-element constant expanded to the block; symbolic extents on other axes take
 * their size from an edge slice of x through Where(false, edge, value). */
static rlx_status const_block(rlx_graph *g, rlx_id x, uint32_t axis, int64_t len, double value, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  rlx_dtype t = (rlx_dtype)xs.dtype;
  uint32_t r = xs.rank;
  rlx_dim dims[RLX_MAX_RANK], ones[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) {
    dims[i] = i == axis ? len : xs.dims[i];
    ones[i] = 1;
  }
  rlx_id src;
  if (dc_all_static(&xs)) {
    RLX_TRY(rlx_fill(g, t, r, ones, value, &src));
  } else {
    rlx_id edge, no, v;
    RLX_TRY(rlx_narrow(g, x, axis, 0, 1, &edge));
    RLX_TRY(rlx_scalar(g, RLX_BOOL, 0.0, &no));
    RLX_TRY(rlx_scalar(g, t, value, &v));
    RLX_TRY(rlx_where(g, no, edge, v, &src));
  }
  return rlx_expand_dims(g, src, r, dims, out);
}

/* Pad, axis by axis (so corners see the earlier axes' padding, as NumPy does): each padded axis
 * becomes Concat(before, x, after) with
 *   Constant  : blocks filled with `value`
 *   Reflect   : Narrow(1, b) / Narrow(d-1-a, a) reversed (the edge itself is not repeated)
 *   Replicate : the edge element expanded
 *   Circular  : the tail / head of the axis. */
RLX_DECOMPOSE_DECL(Pad) {
  (void)src;
  const rlx_attrs_Pad *a = &n->attrs.Pad;
  rlx_id cur = in[0];
  uint32_t r = dc_shape(dst, cur).rank;
  if (a->pads.n != 2 * r) return rlx_errorf(RLX_ERR_INVALID_ARG, "Pad: attribute pads needs %u entries", 2 * r);
  for (uint32_t k = 0; k < r; k++) {
    int64_t b = a->pads.v[2 * k], e = a->pads.v[2 * k + 1];
    if (b == 0 && e == 0) continue;
    rlx_shape cs = dc_shape(dst, cur);
    int64_t d = cs.dims[k];
    if (d < 0) return dc_unsupported(n, "axis %u is symbolic", k);
    rlx_id parts[3], blk;
    uint32_t np = 0;
    int64_t axes[1] = {k};
    int64_t lens[2] = {b, e};
    for (int side = 0; side < 2; side++) {
      int64_t len = lens[side];
      if (len == 0) {
        if (side == 0) parts[np++] = cur;
        continue;
      }
      switch (a->mode) {
      case RLX_PAD_MODE_CONSTANT: RLX_TRY(const_block(dst, cur, k, len, a->value, &blk)); break;
      case RLX_PAD_MODE_REFLECT:
        RLX_TRY(rlx_narrow(dst, cur, k, side == 0 ? 1 : d - 1 - len, len, &blk));
        RLX_TRY(rlx_reverse_axes(dst, blk, 1, axes, &blk));
        break;
      case RLX_PAD_MODE_REPLICATE: {
        RLX_TRY(rlx_narrow(dst, cur, k, side == 0 ? 0 : d - 1, 1, &blk));
        rlx_dim dims[RLX_MAX_RANK];
        rlx_shape bs = dc_shape(dst, blk);
        for (uint32_t i = 0; i < r; i++) dims[i] = i == k ? len : bs.dims[i];
        RLX_TRY(rlx_expand_dims(dst, blk, r, dims, &blk));
        break;
      }
      case RLX_PAD_MODE_CIRCULAR: RLX_TRY(rlx_narrow(dst, cur, k, side == 0 ? d - len : 0, len, &blk)); break;
      default: return rlx_errorf(RLX_ERR_INVALID_ARG, "Pad: attribute mode %d is not a PadMode", (int)a->mode);
      }
      parts[np++] = blk;
      if (side == 0) parts[np++] = cur;
    }
    RLX_TRY(rlx_concat(dst, parts, np, k, &cur));
  }
  *out = cur;
  return RLX_OK;
}

/* `rep` copies of x along `axis`, by doubling: x, x2 = [x, x], x4 = [x2, x2], ... and one Concat of
 * the powers of two that make up rep. */
static rlx_status repeat_concat(rlx_graph *g, rlx_id x, uint32_t axis, int64_t rep, rlx_id *out) {
  rlx_id parts[64], pow2 = x;
  uint32_t np = 0;
  for (int64_t r = rep; r > 0; r >>= 1) {
    if (r & 1) parts[np++] = pow2;
    if (r > 1) {
      rlx_id two[2] = {pow2, pow2};
      RLX_TRY(rlx_concat(g, two, 2, axis, &pow2));
    }
  }
  return rlx_concat(g, parts, np, axis, out);
}

/* Tile: per axis, Concat of `rep` copies (rep 0: an empty Narrow). */
RLX_DECOMPOSE_DECL(Tile) {
  (void)src;
  const rlx_ilist *reps = &n->attrs.Tile.reps;
  rlx_id cur = in[0];
  uint32_t r = dc_shape(dst, cur).rank;
  if (reps->n != r) return rlx_errorf(RLX_ERR_INVALID_ARG, "Tile: attribute reps needs %u entries", r);
  for (uint32_t k = 0; k < r; k++) {
    int64_t rep = reps->v[k];
    if (rep == 1) continue;
    if (rep == 0)
      RLX_TRY(rlx_narrow(dst, cur, k, 0, 0, &cur));
    else
      RLX_TRY(repeat_concat(dst, cur, k, rep, &cur));
  }
  *out = cur;
  return RLX_OK;
}

/* Trilu: Where(mask, x, 0) with a constant [R, C] Bool mask; Where rather than a 0/1 multiply so
 * that inf and NaN in the zeroed triangle do not leak through as NaN. */
RLX_DECOMPOSE_DECL(Trilu) {
  (void)src;
  const rlx_attrs_Trilu *a = &n->attrs.Trilu;
  rlx_shape xs = dc_shape(dst, in[0]);
  if (xs.rank < 2) return rlx_errorf(RLX_ERR_INVALID_ARG, "Trilu needs rank >= 2");
  rlx_dim R = xs.dims[xs.rank - 2], C = xs.dims[xs.rank - 1];
  if (R < 0 || C < 0) return dc_unsupported(n, "the last two axes must be static to build the mask");
  size_t cells;
  if (!rlx_mul_size((size_t)R, (size_t)C, &cells)) return rlx_errorf(RLX_ERR_OVERFLOW, "Trilu mask size overflows");
  const rlx_allocator *al = rlx_graph_allocator(dst);
  double *m = al->alloc(al->ctx, (cells ? cells : 1) * sizeof *m);
  if (!m) return rlx_errorf(RLX_ERR_OOM, "out of memory for the Trilu mask");
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) {
      int64_t diff = j - i;
      m[i * C + j] = a->upper ? diff >= a->diagonal : diff <= a->diagonal;
    }
  rlx_dim md[2] = {R, C};
  rlx_id mask, zero;
  rlx_status s = rlx_values(dst, RLX_BOOL, 2, md, m, &mask);
  al->free(al->ctx, m);
  RLX_TRY(s);
  RLX_TRY(rlx_scalar(dst, (rlx_dtype)xs.dtype, 0.0, &zero));
  return rlx_where(dst, mask, in[0], zero, out);
}

/* Roll: per (shift, dim) pair in order, Concat(tail k, head n-k) with k = shift mod n. */
RLX_DECOMPOSE_DECL(Roll) {
  (void)src;
  const rlx_attrs_Roll *a = &n->attrs.Roll;
  rlx_id cur = in[0];
  uint32_t r = dc_shape(dst, cur).rank;
  if (a->shifts.n != a->dims.n) return rlx_errorf(RLX_ERR_INVALID_ARG, "Roll: shifts and dims differ in length");
  for (uint32_t p = 0; p < a->dims.n; p++) {
    uint32_t ax;
    RLX_TRY(dc_axis(n, "dims", a->dims.v[p], r, &ax));
    int64_t len = dc_shape(dst, cur).dims[ax];
    if (len < 0) return dc_unsupported(n, "axis %u is symbolic", ax);
    if (len == 0) continue;
    int64_t k = a->shifts.v[p] % len;
    if (k < 0) k += len;
    if (k == 0) continue;
    rlx_id parts[2];
    RLX_TRY(rlx_narrow(dst, cur, ax, len - k, k, &parts[0]));
    RLX_TRY(rlx_narrow(dst, cur, ax, 0, len - k, &parts[1]));
    RLX_TRY(rlx_concat(dst, parts, 2, ax, &cur));
  }
  *out = cur;
  return RLX_OK;
}

/* KvAppend: the value is the cache prefix [0, pos) followed by the row. The in-place write into
 * the cache (and the aliasing) is not kept. */
RLX_DECOMPOSE_DECL(KvAppend) {
  (void)src;
  const rlx_attrs_KvAppend *a = &n->attrs.KvAppend;
  uint32_t ax;
  RLX_TRY(dc_axis(n, "axis", a->axis, dc_shape(dst, in[0]).rank, &ax));
  if (a->pos == 0) {
    *out = in[1];
    return RLX_OK;
  }
  rlx_id parts[2];
  RLX_TRY(rlx_narrow(dst, in[0], ax, 0, a->pos, &parts[0]));
  parts[1] = in[1];
  return rlx_concat(dst, parts, 2, ax, out);
}

/* Nearest-neighbour 2x on the last two axes: [.., H, W] -> [.., H, 1, W, 1] -> expand
 * [.., H, 2, W, 2] -> [.., 2H, 2W], so out[2i+a][2j+b] = in[i][j] (each pixel duplicated, not the
 * image tiled). */
rlx_status dc_nearest2x(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  uint32_t r = xs.rank;
  if (r < 2 || r + 2 > RLX_MAX_RANK) return dc_unsupported(n, "nearest 2x resizing of a rank-%u tensor", r);
  rlx_dim H = xs.dims[r - 2], W = xs.dims[r - 1];
  if (H < 0 || W < 0) return dc_unsupported(n, "symbolic spatial extents");
  rlx_dim up[RLX_MAX_RANK], ex[RLX_MAX_RANK], fin[RLX_MAX_RANK];
  for (uint32_t i = 0; i + 2 < r; i++) up[i] = ex[i] = fin[i] = xs.dims[i];
  up[r - 2] = ex[r - 2] = H;
  up[r - 1] = 1, ex[r - 1] = 2;
  up[r] = ex[r] = W;
  up[r + 1] = 1, ex[r + 1] = 2;
  fin[r - 2] = 2 * H;
  fin[r - 1] = 2 * W;
  rlx_id u, e;
  RLX_TRY(rlx_reshape_dims(g, x, r + 2, up, &u));
  RLX_TRY(rlx_expand_dims(g, u, r + 2, ex, &e));
  return rlx_reshape_dims(g, e, r, fin, out);
}

rlx_status dc_resize2x(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id *out) {
  if (dc_shape(g, x).rank == 4) return rlx_build_ResizeNearest2x(g, &x, 1, NULL, out);
  return dc_nearest2x(g, n, x, out);
}

RLX_DECOMPOSE_DECL(ResizeNearest2x) {
  (void)src;
  return dc_nearest2x(dst, n, in[0], out);
}
