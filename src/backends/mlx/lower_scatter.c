/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of the scatter / gather family (ONNX semantics, as the CPU kernels):
 * GatherElements (take_along_axis), GatherNd with batch_dims = 0 (gather with one index array per
 * leading axis), ScatterAdd (scatter_add along the axis moved to the front), ScatterElements and
 * ScatterNd with the Add / Mul / Max / Min reductions (MLX's scatter_*). Negative indices wrap once
 * where the CPU wraps them. Not lowered here (they run on the CPU kernel): reduction None (the
 * CPU lets the last duplicate win; MLX leaves the order of duplicates open), integer and bool
 * scatters (the CPU accumulates with saturation), GatherNd with batch dims. MLX does not check
 * index ranges: an out-of-range index, an error on the CPU, is not detected here. */
#include "backends/mlx/mlx_internal.h"

static rlxm_arr *index_of(mlx_lower_ctx *c, rlxm_arr *idx, int64_t extent, bool wrap) {
  rlxm_scope *s = c->s;
  int t = rlxm_dtype(idx);
  rlxm_arr *i = t == RLX_I32 || t == RLX_I64 ? idx : rlxm_astype(s, idx, RLX_I64);
  if (!wrap) return i;
  int it = rlxm_dtype(i);
  return rlxm_where(s, rlxm_binary(s, RLXM_LT, i, rlxm_scalar(s, 0, it)),
                    rlxm_binary(s, RLXM_ADD, i, rlxm_scalar(s, (double)extent, it)), i);
}

static bool index_dtype_ok(rlxm_arr *a) {
  int t = rlxm_dtype(a);
  return t >= 0 && t != RLX_BOOL && t != RLX_C64 && t != RLX_F16 && t != RLX_BF16;
}

static int reduction_op(int red) {
  switch (red) {
  case RLX_SCATTER_REDUCTION_ADD: return 1;
  case RLX_SCATTER_REDUCTION_MUL: return 2;
  case RLX_SCATTER_REDUCTION_MAX: return 3;
  case RLX_SCATTER_REDUCTION_MIN: return 4;
  default: return -1;
  }
}

static rlx_status lower_GatherElements(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  uint32_t ax, r = rlxm_rank(in[0]);
  if (!rlx_norm_axis(n->attrs.GatherElements.axis, r, &ax) || rlxm_rank(in[1]) != r || !index_dtype_ok(in[1]))
    return mlx_decline(c, "operands: the CPU kernel checks them");
  rlxm_arr *data = in[0];
  /* take_along_axis needs the indices' extents off the axis: slice data down to them */
  int64_t st[RLX_MAX_RANK], sp[RLX_MAX_RANK], step[RLX_MAX_RANK];
  for (uint32_t k = 0; k < r; k++) {
    st[k] = 0, step[k] = 1;
    sp[k] = k == ax ? rlxm_dim(in[0], k) : rlxm_dim(in[1], k);
    if (k != ax && sp[k] > rlxm_dim(in[0], k))
      return mlx_decline(c, "indices larger than data: the CPU kernel reports it");
  }
  data = rlxm_slice(c->s, data, st, sp, step);
  return mlx_check(c, rlxm_take_along(c->s, data, index_of(c, in[1], rlxm_dim(in[0], ax), true), ax), out);
}

static rlx_status lower_GatherNd(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  uint32_t dr = rlxm_rank(in[0]), ir = rlxm_rank(in[1]);
  if (n->attrs.GatherNd.batch_dims != 0 || ir < 1 || !index_dtype_ok(in[1]))
    return mlx_decline(c, "GatherNd with batch dims");
  int64_t K = rlxm_dim(in[1], ir - 1);
  if (K < 1 || K > dr) return mlx_decline(c, "index depth: the CPU kernel checks it");
  rlxm_arr *idx[RLX_MAX_RANK];
  int64_t sl[RLX_MAX_RANK], idims[RLX_MAX_RANK];
  for (uint32_t k = 0; k + 1 < ir; k++) idims[k] = rlxm_dim(in[1], k);
  for (int64_t j = 0; j < K; j++) {
    rlxm_arr *col = rlxm_narrow(s, in[1], ir - 1, j, 1, 1);
    idx[j] = index_of(c, rlxm_reshape(s, col, ir - 1, idims), rlxm_dim(in[0], (uint32_t)j), true);
  }
  for (uint32_t k = 0; k < dr; k++) sl[k] = (int64_t)k < K ? 1 : rlxm_dim(in[0], k);
  rlxm_arr *g = rlxm_gather(s, in[0], idx, (uint32_t)K, sl);
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < n->shape.rank; i++) d[i] = n->shape.dims[i];
  return mlx_check(c, rlxm_reshape(s, g, n->shape.rank, d), out);
}

/* ScatterAdd(updates [.., U, ..], indices [U]) -> zeros [.., L, ..] with out[.., idx[i], ..] += upd[.., i, ..]. */
static rlx_status lower_ScatterAdd(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  uint32_t ax, r = rlxm_rank(in[0]);
  if (!mlx_is_float(t) || !rlx_norm_axis(n->attrs.ScatterAdd.axis, r, &ax) || rlxm_rank(in[1]) != 1 ||
      !index_dtype_ok(in[1]))
    return mlx_decline(c, "this case runs on the CPU kernel");
  int64_t perm[RLX_MAX_RANK], inv[RLX_MAX_RANK], zd[RLX_MAX_RANK], ud[RLX_MAX_RANK + 1];
  uint32_t k = 0;
  perm[k++] = ax;
  for (uint32_t i = 0; i < r; i++)
    if (i != ax) perm[k++] = i;
  for (uint32_t i = 0; i < r; i++) inv[perm[i]] = i;
  for (uint32_t i = 0; i < r; i++) zd[i] = n->shape.dims[perm[i]];
  rlxm_arr *zeros = rlxm_full(s, 0, t, r, zd);
  rlxm_arr *u = rlxm_transpose(s, in[0], r, perm);
  ud[0] = rlxm_dim(in[0], ax);
  ud[1] = 1;
  for (uint32_t i = 1; i < r; i++) ud[i + 1] = zd[i];
  u = rlxm_reshape(s, u, r + 1, ud);
  rlxm_arr *idx = index_of(c, in[1], zd[0], false);
  rlxm_arr *y = rlxm_scatter(s, 1, zeros, &idx, 1, u);
  return mlx_check(c, rlxm_transpose(s, y, r, inv), out);
}

static rlx_status lower_ScatterElements(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  int op = reduction_op(n->attrs.ScatterElements.reduction);
  uint32_t ax, r = rlxm_rank(in[0]);
  if (op < 0 || !mlx_is_float(t) || !rlx_norm_axis(n->attrs.ScatterElements.axis, r, &ax) || rlxm_rank(in[1]) != r ||
      !index_dtype_ok(in[1]))
    return mlx_decline(c, "this case (reduction None, integers) runs on the CPU kernel");
  /* one index array per axis: the indices along `ax`, the position elsewhere */
  rlxm_arr *idx[RLX_MAX_RANK];
  int64_t id[RLX_MAX_RANK], ud[2 * RLX_MAX_RANK];
  for (uint32_t k = 0; k < r; k++) id[k] = rlxm_dim(in[1], k);
  for (uint32_t k = 0; k < r; k++) {
    if (k == ax) {
      idx[k] = index_of(c, in[1], rlxm_dim(in[0], ax), true);
      continue;
    }
    int64_t bd[RLX_MAX_RANK];
    for (uint32_t j = 0; j < r; j++) bd[j] = j == k ? id[k] : 1;
    idx[k] = rlxm_broadcast(s, rlxm_reshape(s, rlxm_arange(s, 0, (double)id[k], 1, RLX_I32), r, bd), r, id);
  }
  for (uint32_t k = 0; k < r; k++) ud[k] = id[k], ud[r + k] = 1;
  rlxm_arr *u = rlxm_reshape(s, in[2], 2 * r, ud);
  return mlx_check(c, rlxm_scatter(s, op, in[0], idx, r, u), out);
}

static rlx_status lower_ScatterNd(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  int op = reduction_op(n->attrs.ScatterNd.reduction);
  uint32_t dr = rlxm_rank(in[0]), ir = rlxm_rank(in[1]);
  if (op < 0 || !mlx_is_float(t) || ir < 1 || !index_dtype_ok(in[1]))
    return mlx_decline(c, "this case (reduction None, integers) runs on the CPU kernel");
  int64_t K = rlxm_dim(in[1], ir - 1);
  if (K < 1 || K > dr) return mlx_decline(c, "index depth: the CPU kernel checks it");
  rlxm_arr *idx[RLX_MAX_RANK];
  int64_t idims[RLX_MAX_RANK], ud[2 * RLX_MAX_RANK];
  for (uint32_t k = 0; k + 1 < ir; k++) idims[k] = rlxm_dim(in[1], k);
  for (int64_t j = 0; j < K; j++)
    idx[j] = index_of(c, rlxm_reshape(s, rlxm_narrow(s, in[1], ir - 1, j, 1, 1), ir - 1, idims),
                      rlxm_dim(in[0], (uint32_t)j), true);
  uint32_t ur = 0;
  for (uint32_t k = 0; k + 1 < ir; k++) ud[ur++] = idims[k];
  for (int64_t j = 0; j < K; j++) ud[ur++] = 1;
  for (uint32_t k = (uint32_t)K; k < dr; k++) ud[ur++] = rlxm_dim(in[0], k);
  if (ur > RLX_MAX_RANK + 2) return mlx_decline(c, "rank");
  rlxm_arr *u = rlxm_reshape(s, in[2], ur, ud);
  return mlx_check(c, rlxm_scatter(s, op, in[0], idx, (uint32_t)K, u), out);
}

const mlx_lower_fn mlx_lower_scatter[RLX_OP_COUNT] = {
    [RLX_OP_GatherElements] = lower_GatherElements, [RLX_OP_GatherNd] = lower_GatherNd,
    [RLX_OP_ScatterAdd] = lower_ScatterAdd,         [RLX_OP_ScatterElements] = lower_ScatterElements,
    [RLX_OP_ScatterNd] = lower_ScatterNd,
};
