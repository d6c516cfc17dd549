/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of CumsumBackward, GatherBackward, ScanBackward and ScanBackwardXs (kernels in
 * ref/backward_misc.c).
 *
 *   CumsumBackward = Reverse(Cumsum(Reverse(dy), exclusive)) along the axis.
 *   GatherBackward = ScatterAdd(dy with the index axes flattened to one, indices flattened to [U])
 *                    along the axis, with the declared table shape.
 *   ScanBackward(Xs) = the reverse sweep unrolled: for t = length-1 .. 0, body_vjp is inlined on
 *       (carry_{t-1}, the xs rows at t, dcarry). Carries come from init and the trajectory rows
 *       (Narrow + Reshape); between checkpoints they are recomputed by inlining forward_body from
 *       the previous saved carry. The xs gradients are stacked with Concat. */
#include "passes/decompose/decompose.h"

RLX_DECOMPOSE_DECL(CumsumBackward) {
  (void)src;
  const rlx_attrs_CumsumBackward *a = &n->attrs.CumsumBackward;
  rlx_shape s = dc_shape(dst, in[0]);
  if (s.rank == 0) { /* a sequence of one element */
    if (!a->exclusive) {
      *out = in[0];
      return RLX_OK;
    }
    return rlx_scalar(dst, (rlx_dtype)s.dtype, 0.0, out);
  }
  uint32_t ax;
  RLX_TRY(dc_axis(n, "axis", a->axis, s.rank, &ax));
  int64_t axes[1] = {ax};
  rlx_id r;
  RLX_TRY(rlx_reverse_axes(dst, in[0], 1, axes, &r));
  rlx_attrs_Cumsum ca = {.axis = ax, .exclusive = a->exclusive};
  RLX_TRY(rlx_build_Cumsum(dst, &r, 1, &ca, NULL, &r));
  return rlx_reverse_axes(dst, r, 1, axes, out);
}

RLX_DECOMPOSE_DECL(GatherBackward) {
  (void)src;
  const rlx_shape *tab = &n->shape;
  rlx_shape dy = dc_shape(dst, in[0]), idx = dc_shape(dst, in[1]);
  uint32_t ax;
  RLX_TRY(dc_axis(n, "axis", n->attrs.GatherBackward.axis, tab->rank, &ax));
  int64_t U = 1;
  for (uint32_t i = 0; i < idx.rank; i++) {
    if (idx.dims[i] < 0) return dc_unsupported(n, "the indices need a static shape");
    U *= idx.dims[i];
  }
  rlx_dim d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < tab->rank; i++) d[i] = i < ax ? dy.dims[i] : i == ax ? U : dy.dims[i + idx.rank - 1];
  rlx_id upd, ix;
  RLX_TRY(rlx_reshape_dims(dst, in[0], tab->rank, d, &upd));
  RLX_TRY(rlx_reshape_dims(dst, in[1], 1, &U, &ix));
  rlx_attrs_ScatterAdd sa = {.axis = ax};
  rlx_id args[2] = {upd, ix};
  return rlx_graph_add(dst, RLX_OP_ScatterAdd, args, 2, &sa, tab, NULL, out);
}

/* ---- Scan backward by unrolling ---- */

#define SCAN_BW_NODE_LIMIT (4u << 20)

/* Row t of a stacked tensor x [T, ...] as [...]. */
static rlx_status row(rlx_graph *g, rlx_id x, int64_t t, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  rlx_id r;
  RLX_TRY(rlx_narrow(g, x, 0, t, 1, &r));
  return rlx_reshape_dims(g, r, s.rank - 1u, s.dims + 1, out);
}

/* The i-th Input (node order) of body. */
static const rlx_node *body_input(const rlx_graph *body, uint32_t k) {
  uint32_t seen = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(body); i++) {
    const rlx_node *nd = rlx_graph_node(body, i);
    if (nd->op == RLX_OP_Input && seen++ == k) return nd;
  }
  return NULL;
}

static rlx_status scan_unroll(rlx_graph *dst, const rlx_node *n, const rlx_id *in, const rlx_graph *vjp,
                              const rlx_graph *fwd, int64_t L, bool save_traj, int64_t nx, int64_t K, int64_t xs_idx,
                              rlx_id *out) {
  if (L < 0 || nx < 0 || K < 0 || K > L || !vjp)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: invalid attributes", rlx_op_name(n->op));
  int64_t rows = K > 0 && K < L ? K : L;
  uint64_t per = rlx_graph_node_count(vjp) + (fwd ? rlx_graph_node_count(fwd) : 0) + 8u + 2u * (uint64_t)nx;
  if ((uint64_t)L * per > SCAN_BW_NODE_LIMIT)
    return dc_unsupported(n, "unrolling %lld steps exceeds the limit of %u nodes", (long long)L, SCAN_BW_NODE_LIMIT);
  if (rows < L && !fwd)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: checkpoints need attribute forward_body", rlx_op_name(n->op));
  const rlx_node *dout_in = body_input(vjp, (uint32_t)nx + 1);
  if (!dout_in) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: body_vjp has too few Inputs", rlx_op_name(n->op));
  rlx_dtype dt = (rlx_dtype)dout_in->shape.dtype;
  rlx_shape cs = dc_shape(dst, in[0]);
  const rlx_allocator *al = rlx_graph_allocator(dst);
  size_t cnt = (size_t)(L ? L : 1);
  rlx_id *carry = al->alloc(al->ctx, cnt * sizeof *carry); /* carry[t] = carry after step t */
  int64_t *row_at = al->alloc(al->ctx, cnt * sizeof *row_at);
  rlx_id *grads = al->alloc(al->ctx, cnt * sizeof *grads);
  rlx_id *args = al->alloc(al->ctx, (size_t)(nx + 2) * sizeof *args);
  rlx_id *outs = al->alloc(al->ctx, (size_t)(nx + 1) * sizeof *outs);
  rlx_status s = RLX_OK;
  if (!carry || !row_at || !grads || !args || !outs) s = rlx_errorf(RLX_ERR_OOM, "out of memory unrolling a scan");
  /* Carries: saved rows, and forward recomputation in between. */
  for (int64_t t = 0; t < L && !s; t++) row_at[t] = -1;
  for (int64_t j = 0; j < rows && !s; j++) row_at[(int64_t)((unsigned __int128)j * (uint64_t)L / (uint64_t)rows)] = j;
  for (int64_t t = 0; t + 1 < L && !s; t++) { /* carry after step L-1 is never needed */
    if (row_at[t] >= 0) {
      s = row(dst, in[1], row_at[t], &carry[t]);
      continue;
    }
    args[0] = t == 0 ? in[0] : carry[t - 1];
    for (int64_t k = 0; k < nx && !s; k++) s = row(dst, in[3 + k], t, &args[1 + k]);
    if (!s) s = rlx_inline_graph(dst, fwd, args, (uint32_t)nx + 1, &carry[t], 1);
  }
  /* dcarry after the last step. */
  rlx_id dc = 0;
  if (!s) {
    if (save_traj) {
      if (!dc_all_static(&cs))
        s = dc_unsupported(n, "the carry needs a static shape");
      else
        s = rlx_fill(dst, dt, cs.rank, cs.dims, 0.0, &dc);
    } else {
      s = rlx_cast_to(dst, in[2], dt, &dc);
    }
  }
  for (int64_t t = L; t-- > 0 && !s;) {
    if (save_traj && row_at[t] >= 0) {
      rlx_id u;
      s = row(dst, in[2], row_at[t], &u);
      if (!s) s = rlx_cast_to(dst, u, dt, &u);
      if (!s) s = rlx_binary(dst, RLX_BINOP_ADD, dc, u, &dc);
    }
    args[0] = t == 0 ? in[0] : carry[t - 1];
    for (int64_t k = 0; k < nx && !s; k++) s = row(dst, in[3 + k], t, &args[1 + k]);
    args[nx + 1] = dc;
    if (!s) s = rlx_inline_graph(dst, vjp, args, (uint32_t)nx + 2, outs, (uint32_t)nx + 1);
    if (!s) dc = outs[0];
    if (!s && xs_idx >= 0) s = rlx_unsqueeze(dst, outs[1 + xs_idx], 0, &grads[t]);
  }
  if (!s) {
    if (xs_idx < 0) {
      s = rlx_cast_to(dst, dc, (rlx_dtype)cs.dtype, out);
    } else if (L == 0) {
      s = dc_unsupported(n, "a scan of length 0 has no rows to stack");
    } else {
      s = rlx_concat(dst, grads, (uint32_t)L, 0, out);
      if (!s) s = rlx_cast_to(dst, *out, (rlx_dtype)n->shape.dtype, out);
    }
  }
  al->free(al->ctx, carry);
  al->free(al->ctx, row_at);
  al->free(al->ctx, grads);
  al->free(al->ctx, args);
  al->free(al->ctx, outs);
  return s;
}

RLX_DECOMPOSE_DECL(ScanBackward) {
  (void)src;
  const rlx_attrs_ScanBackward *a = &n->attrs.ScanBackward;
  return scan_unroll(dst, n, in, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                     a->num_checkpoints, -1, out);
}

RLX_DECOMPOSE_DECL(ScanBackwardXs) {
  (void)src;
  const rlx_attrs_ScanBackwardXs *a = &n->attrs.ScanBackwardXs;
  if (a->xs_idx < 0 || a->xs_idx >= a->num_xs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "ScanBackwardXs: attribute xs_idx is out of range");
  return scan_unroll(dst, n, in, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                     a->num_checkpoints, a->xs_idx, out);
}
