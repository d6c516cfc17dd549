/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Forward mode and Hessian-vector products, both built on the reverse-mode engine.
 *
 * jvp, by the linearity trick: the reverse pass G(u) = J^T u is linear in the cotangent u, so
 * J v = d/du <J^T u, v>. We build G with seed Inputs u_k (one per output of f), append
 * s = sum_j <G_j, tangent_j>, differentiate s with respect to the u_k (a second reverse pass, which
 * only ever differentiates the backward graph with respect to its linear cotangent operands), and
 * finally replace the u_k by zeros and the second seed by one (the result does not depend on u).
 *
 * hvp = grad of (grad . v): G = grad f, s = sum_j <G_j, v_j>, H v = d s / d wrt, with the seeds
 * set to one. Both use primitive VJPs in the inner pass (use_backward_ops = false) so that the outer
 * pass differentiates primitives wherever a backward op has a decomposition. */
#include <stdio.h>
#include <string.h>

#include "autodiff/ad_internal.h"
#include "passes/decompose/decompose.h"

static void *ad_alloc(const rlx_allocator *al, size_t n, size_t size) {
  size_t bytes;
  if (!rlx_mul_size(n ? n : 1, size, &bytes)) return NULL;
  return al->alloc(al->ctx, bytes);
}

static const char *leaf_name(const rlx_node *n) {
  return n->op == RLX_OP_Param ? n->attrs.Param.name : n->op == RLX_OP_Input ? n->attrs.Input.name : NULL;
}

/* A new graph equal to g, with each Input named names[i] replaced by a constant filled with
 * values[i] (scalar + Expand). */
static rlx_status replace_inputs(const rlx_graph *g, const char *const *names, const double *values, uint32_t n,
                                 rlx_graph **out) {
  rlx_rebuild rb;
  RLX_TRY(rlx_rebuild_begin(g, &rb));
  uint32_t nn = rlx_graph_node_count(g);
  rlx_status s = RLX_OK;
  for (rlx_id id = 0; id < nn && !s; id++) {
    const rlx_node *nd = rlx_graph_node(g, id);
    int which = -1;
    if (nd->op == RLX_OP_Input)
      for (uint32_t k = 0; k < n; k++)
        if (strcmp(nd->attrs.Input.name, names[k]) == 0) which = (int)k;
    if (which < 0) {
      s = rlx_rebuild_copy(&rb, id);
      continue;
    }
    rlx_shape sh = nd->shape;
    rlx_id k;
    s = rlx_scalar(rb.dst, (rlx_dtype)sh.dtype, values[which], &k);
    if (!s && sh.rank > 0) s = rlx_expand_dims(rb.dst, k, sh.rank, sh.dims, &k);
    rb.map[id] = k;
  }
  if (!s) s = rlx_rebuild_finish(&rb, out);
  if (s) rlx_rebuild_abort(&rb);
  return s;
}

/* Appends s = sum_j sum(a_j * b_j) (rank 0, dtype of a_0) to g. */
static rlx_status inner_product(rlx_graph *g, const rlx_id *a, const rlx_id *b, uint32_t n, rlx_id *out) {
  rlx_id acc = RLX_NO_ID;
  rlx_dtype t = (rlx_dtype)rlx_graph_node(g, a[0])->shape.dtype;
  for (uint32_t j = 0; j < n; j++) {
    rlx_id p, r;
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, a[j], b[j], &p));
    rlx_shape s = rlx_graph_node(g, p)->shape;
    int64_t axes[RLX_MAX_RANK];
    for (uint32_t i = 0; i < s.rank; i++) axes[i] = i;
    r = p;
    if (s.rank) RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, p, s.rank, axes, false, &r));
    RLX_TRY(rlx_cast_to(g, r, t, &r));
    if (acc == RLX_NO_ID)
      acc = r;
    else
      RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, acc, r, &acc));
  }
  *out = acc;
  return RLX_OK;
}

/* Adds an Input named prefix + leaf name with the leaf's shape for each wrt leaf. */
static rlx_status direction_inputs(rlx_graph *g, const rlx_graph *f, const rlx_id *wrt, uint32_t n, const char *prefix,
                                   rlx_id *ids) {
  for (uint32_t j = 0; j < n; j++) {
    const rlx_node *leaf = rlx_graph_node(f, wrt[j]);
    char name[512];
    snprintf(name, sizeof name, "%s%s", prefix, leaf_name(leaf));
    if (rlx_graph_find_leaf(g, RLX_OP_Input, name) != RLX_NO_ID) {
      /* the same leaf listed twice shares its direction */
      ids[j] = rlx_graph_find_leaf(g, RLX_OP_Input, name);
      continue;
    }
    RLX_TRY(rlx_input(g, name, leaf->shape, &ids[j]));
  }
  return RLX_OK;
}

static rlx_status resolve_wrt(const rlx_graph *f, const char *const *wrt, uint32_t n, const char *who, rlx_id *ids) {
  if (!f) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: the graph is NULL", who);
  if (n == 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: no leaf to differentiate with respect to", who);
  if (!wrt) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: wrt is NULL", who);
  for (uint32_t k = 0; k < n; k++) RLX_TRY(rlx_ad_find_leaf(f, wrt[k], &ids[k]));
  return RLX_OK;
}

rlx_status rlx_jvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_jvp: NULL output pointer");
  *out = NULL;
  if (!f) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_jvp: the graph is NULL");
  const rlx_allocator *al = rlx_graph_allocator(f);
  uint32_t n_out = rlx_graph_output_count(f);
  if (n_out == 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_jvp: graph @%s has no output", rlx_graph_name(f));
  if (n_out > 64) return rlx_errorf(RLX_ERR_UNSUPPORTED, "rlx_jvp: more than 64 outputs");
  rlx_id *ids = ad_alloc(al, n_wrt, sizeof *ids), *tid = ad_alloc(al, n_wrt, sizeof *tid);
  rlx_id *gw = ad_alloc(al, n_wrt, sizeof *gw);
  char(*seed)[32] = ad_alloc(al, n_out, sizeof *seed);
  const char **seeds = ad_alloc(al, n_out, sizeof *seeds);
  rlx_graph *G = NULL, *H = NULL;
  rlx_status s = RLX_OK;
  if (!ids || !tid || !gw || !seed || !seeds) s = rlx_errorf(RLX_ERR_OOM, "out of memory in rlx_jvp");
  if (!s) s = resolve_wrt(f, wrt, n_wrt, "rlx_jvp", ids);
  for (uint32_t k = 0; k < n_out && !s; k++) {
    snprintf(seed[k], sizeof seed[k], "jvp.cotangent.%u", k);
    seeds[k] = seed[k];
  }
  /* pass 1: G = [f outputs..., J^T u] */
  if (!s) {
    rlx_ad_request r = {f, rlx_graph_outputs(f), n_out, seeds, ids, n_wrt, NULL, 0, false, true};
    s = rlx_ad_reverse(&r, &G);
  }
  /* s = sum_j <G_j, tangent_j> */
  rlx_id sum = RLX_NO_ID, u[64];
  if (!s) s = direction_inputs(G, f, ids, n_wrt, "tangent_", tid);
  if (!s) {
    for (uint32_t j = 0; j < n_wrt; j++) gw[j] = rlx_graph_outputs(G)[n_out + j];
    s = inner_product(G, gw, tid, n_wrt, &sum);
  }
  if (!s) {
    rlx_id keep[64];
    memcpy(keep, rlx_graph_outputs(G), n_out * sizeof *keep);
    s = rlx_graph_set_outputs(G, keep, n_out);
  }
  for (uint32_t k = 0; k < n_out && !s; k++) u[k] = rlx_graph_find_leaf(G, RLX_OP_Input, seeds[k]);
  /* pass 2: d s / d u_k = J_k v */
  if (!s) {
    const char *seed2 = "jvp.seed";
    rlx_ad_request r = {G, &sum, 1, &seed2, u, n_out, NULL, 0, false, true};
    s = rlx_ad_reverse(&r, &H);
  }
  /* u_k = 0 (the result is independent of them), seed = 1 */
  if (!s) {
    const char *names[65];
    double vals[65];
    for (uint32_t k = 0; k < n_out; k++) {
      names[k] = seeds[k];
      vals[k] = 0.0;
    }
    names[n_out] = "jvp.seed";
    vals[n_out] = 1.0;
    s = replace_inputs(H, names, vals, n_out + 1, out);
  }
  rlx_graph_free(G);
  rlx_graph_free(H);
  al->free(al->ctx, ids);
  al->free(al->ctx, tid);
  al->free(al->ctx, gw);
  al->free(al->ctx, seed);
  al->free(al->ctx, seeds);
  return s;
}

rlx_status rlx_hvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_hvp: NULL output pointer");
  *out = NULL;
  if (!f) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_hvp: the graph is NULL");
  if (rlx_graph_output_count(f) != 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_hvp: graph @%s has %u outputs; it needs exactly one scalar",
                      rlx_graph_name(f), rlx_graph_output_count(f));
  const rlx_shape *ls = &rlx_graph_node(f, rlx_graph_outputs(f)[0])->shape;
  size_t numel;
  if (rlx_shape_numel(ls, &numel) || numel != 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_hvp: the output of graph @%s is not a scalar", rlx_graph_name(f));
  const rlx_allocator *al = rlx_graph_allocator(f);
  rlx_id *ids = ad_alloc(al, n_wrt, sizeof *ids), *vid = ad_alloc(al, n_wrt, sizeof *vid);
  rlx_id *gw = ad_alloc(al, n_wrt, sizeof *gw), *w2 = ad_alloc(al, n_wrt, sizeof *w2);
  rlx_graph *G = NULL, *H = NULL;
  rlx_status s = RLX_OK;
  if (!ids || !vid || !gw || !w2) s = rlx_errorf(RLX_ERR_OOM, "out of memory in rlx_hvp");
  if (!s) s = resolve_wrt(f, wrt, n_wrt, "rlx_hvp", ids);
  const char *seed1 = "d_output", *seed2 = "hvp.seed";
  if (!s) {
    rlx_ad_request r = {f, rlx_graph_outputs(f), 1, &seed1, ids, n_wrt, NULL, 0, false, false};
    s = rlx_ad_reverse(&r, &G);
  }
  rlx_id sum = RLX_NO_ID;
  if (!s) s = direction_inputs(G, f, ids, n_wrt, "v_", vid);
  if (!s) {
    for (uint32_t j = 0; j < n_wrt; j++) gw[j] = rlx_graph_outputs(G)[j];
    s = inner_product(G, gw, vid, n_wrt, &sum);
  }
  for (uint32_t j = 0; j < n_wrt && !s; j++) s = rlx_ad_find_leaf(G, leaf_name(rlx_graph_node(f, ids[j])), &w2[j]);
  if (!s) {
    rlx_ad_request r = {G, &sum, 1, &seed2, w2, n_wrt, NULL, 0, true, false};
    s = rlx_ad_reverse(&r, &H);
  }
  if (!s) {
    const char *names[2] = {seed1, seed2};
    double vals[2] = {1.0, 1.0};
    s = replace_inputs(H, names, vals, 2, out);
  }
  rlx_graph_free(G);
  rlx_graph_free(H);
  al->free(al->ctx, ids);
  al->free(al->ctx, vid);
  al->free(al->ctx, gw);
  al->free(al->ctx, w2);
  return s;
}
