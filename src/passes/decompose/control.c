/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of control flow by inlining bodies (ir-special §3): If evaluates both branches
 * and selects, While is unrolled up to max_iterations with an active mask, Scan is unrolled step by
 * step, CustomFn inlines its forward body. */
#include "passes/decompose/decompose.h"

/* Unrolling stops with RLX_ERR_UNSUPPORTED beyond this many inlined body nodes. */
#define DC_UNROLL_NODE_LIMIT (4u << 20)

static rlx_status unroll_budget(const rlx_node *n, uint64_t steps, uint64_t nodes_per_step) {
  if (steps * (nodes_per_step + 4) > DC_UNROLL_NODE_LIMIT)
    return dc_unsupported(n, "unrolling %llu steps of a %llu-node body exceeds the limit of %u nodes",
                          (unsigned long long)steps, (unsigned long long)nodes_per_step, DC_UNROLL_NODE_LIMIT);
  return RLX_OK;
}

/* A single-element predicate becomes a scalar so it broadcasts onto any branch shape. */
static rlx_status scalar_pred(rlx_graph *g, rlx_id p, rlx_id *out) {
  rlx_shape s = dc_shape(g, p);
  size_t k;
  if (s.rank > 0 && rlx_shape_numel(&s, &k) == RLX_OK && k == 1) return rlx_reshape_dims(g, p, 0, NULL, out);
  *out = p;
  return RLX_OK;
}

/* Bool view of a condition value: non-zero is true. */
static rlx_status truthy(rlx_graph *g, rlx_id c, rlx_id *out) {
  rlx_shape s = dc_shape(g, c);
  if (s.dtype == RLX_BOOL) {
    *out = c;
    return RLX_OK;
  }
  rlx_id zero;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)s.dtype, 0.0, &zero));
  return rlx_compare(g, RLX_CMP_NE, c, zero, out);
}

/* If: both branches inlined on the captures, Where(pred, then, else). Only output 0 is the value
 * of the node. */
RLX_DECOMPOSE_DECL(If) {
  (void)src;
  const rlx_attrs_If *a = &n->attrs.If;
  rlx_id t, e, p;
  RLX_TRY(rlx_inline_graph(dst, a->then_branch, in + 1, n->n_inputs - 1, &t, 1));
  RLX_TRY(rlx_inline_graph(dst, a->else_branch, in + 1, n->n_inputs - 1, &e, 1));
  RLX_TRY(scalar_pred(dst, in[0], &p));
  return rlx_where(dst, p, t, e, out);
}

/* While with max_iterations = N: N times { c = cond(carried); active = active && c;
 * next = body(carried); carried = Where(active, next, carried) }. Once the condition fails, the
 * carried values freeze. The node's value is carried[0]. */
RLX_DECOMPOSE_DECL(While) {
  (void)src;
  const rlx_attrs_While *a = &n->attrs.While;
  if (!a->max_iterations.has) return dc_unsupported(n, "no max_iterations: the loop cannot be unrolled");
  int64_t iters = a->max_iterations.v;
  if (iters < 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "While: attribute max_iterations is negative");
  uint32_t m = n->n_inputs;
  if (m == 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "While needs at least one carried value");
  if (rlx_graph_output_count(a->body) != m)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "While: body has %u outputs for %u carried values",
                      rlx_graph_output_count(a->body), m);
  RLX_TRY(unroll_budget(n, (uint64_t)iters, rlx_graph_node_count(a->body) + rlx_graph_node_count(a->cond) + m));
  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *cur = al->alloc(al->ctx, 2 * m * sizeof *cur);
  if (!cur) return rlx_errorf(RLX_ERR_OOM, "out of memory while unrolling While");
  rlx_id *next = cur + m, active = RLX_NO_ID, no = RLX_NO_ID;
  rlx_status s = RLX_OK;
  for (uint32_t k = 0; k < m; k++) cur[k] = in[k];
  for (int64_t it = 0; it < iters && !s; it++) {
    rlx_id c;
    s = rlx_inline_graph(dst, a->cond, cur, m, &c, 1);
    if (!s) s = truthy(dst, c, &c);
    if (!s) s = scalar_pred(dst, c, &c);
    if (!s && active == RLX_NO_ID) {
      active = c;
    } else if (!s) {
      if (no == RLX_NO_ID) s = rlx_scalar(dst, RLX_BOOL, 0.0, &no);
      if (!s) s = rlx_where(dst, active, c, no, &active);
    }
    if (!s) s = rlx_inline_graph(dst, a->body, cur, m, next, m);
    for (uint32_t k = 0; k < m && !s; k++) s = rlx_where(dst, active, next[k], cur[k], &cur[k]);
  }
  if (!s) *out = cur[0];
  al->free(al->ctx, cur);
  return s;
}

/* Scan: carry = body(carry, bcast..., xs_i[t]...) for t = 0..length-1, xs_i[t] taken with
 * Narrow + Reshape. The value is the final carry, or with save_trajectory the rows
 * [length, ..carry] (row t = carry after step t+1), or with 0 < num_checkpoints = K < length only
 * the K rows floor(j * length / K), j = 0..K-1. */
RLX_DECOMPOSE_DECL(Scan) {
  (void)src;
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  int64_t L = a->length, nb = a->num_bcast, nx = a->num_xs, K = a->num_checkpoints;
  if (L < 0 || nb < 0 || nx < 0 || K < 0 || (uint64_t)(1 + nb + nx) != n->n_inputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "Scan: %u operands do not match 1 + num_bcast + num_xs", n->n_inputs);
  RLX_TRY(unroll_budget(n, (uint64_t)L, rlx_graph_node_count(a->body) + 2u * (uint32_t)nx));
  uint32_t nargs = n->n_inputs;
  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *args = al->alloc(al->ctx, nargs * sizeof *args);
  rlx_id *rows = a->save_trajectory && L > 0 ? al->alloc(al->ctx, (size_t)L * sizeof *rows) : NULL;
  if (!args || (a->save_trajectory && L > 0 && !rows)) {
    al->free(al->ctx, args);
    al->free(al->ctx, rows);
    return rlx_errorf(RLX_ERR_OOM, "out of memory while unrolling Scan");
  }
  rlx_status s = RLX_OK;
  for (uint32_t i = 0; i < nargs; i++) args[i] = in[i];
  for (int64_t t = 0; t < L && !s; t++) {
    for (int64_t i = 0; i < nx && !s; i++) {
      rlx_id xs = in[1 + nb + i], row;
      rlx_shape ss = dc_shape(dst, xs);
      if (ss.rank == 0) {
        s = rlx_errorf(RLX_ERR_INVALID_ARG, "Scan: xs operand %lld is a scalar", (long long)i);
        break;
      }
      s = rlx_narrow(dst, xs, 0, t, 1, &row);
      if (!s) s = rlx_reshape_dims(dst, row, ss.rank - 1u, ss.dims + 1, &args[1 + nb + i]);
    }
    if (!s) s = rlx_inline_graph(dst, a->body, args, nargs, &args[0], 1);
    if (!s && rows) s = rlx_unsqueeze(dst, args[0], 0, &rows[t]);
  }
  if (!s) {
    if (!a->save_trajectory) {
      *out = args[0];
    } else if (L == 0) {
      rlx_id r;
      s = rlx_unsqueeze(dst, in[0], 0, &r);
      if (!s) s = rlx_narrow(dst, r, 0, 0, 0, out);
    } else {
      uint32_t nrows = (uint32_t)L;
      if (K > 0 && K < L) {
        for (int64_t j = 0; j < K; j++) rows[j] = rows[(j * L) / K];
        nrows = (uint32_t)K;
      }
      s = rlx_concat(dst, rows, nrows, 0, out);
    }
  }
  al->free(al->ctx, args);
  al->free(al->ctx, rows);
  return s;
}

/* CustomFn: the forward body inlined on the operands. */
RLX_DECOMPOSE_DECL(CustomFn) {
  (void)src;
  return rlx_inline_graph(dst, n->attrs.CustomFn.fwd_body, in, n->n_inputs, out, 1);
}
