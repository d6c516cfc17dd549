/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules with bodies: Scan (ScanBackward for the initial carry, one ScanBackwardXs per scanned
 * operand, with the body's own gradient graph as body_vjp) and CustomFn with a vjp_body (inlined).
 * If / While are unrolled by their decompositions before differentiation, and CustomFn without a
 * vjp_body is inlined (fwd_body) and differentiated like any other code.
 *
 * Before the sweep, a Scan on the gradient path is normalised (rlx_ad_prepare_scan): Params its
 * body reads become broadcast operands, broadcast operands are materialised as scanned operands
 * (Expand to [length, ...]), and the full trajectory is saved (the final carry, when that was the
 * output, is its last row). The Scan rule then only sees [init, xs...] with a trajectory. */
#include <stdio.h>
#include <string.h>

#include "autodiff/ad_internal.h"
#include "passes/decompose/decompose.h"

/* ---- Scan normalisation ---- */

#define AD_MAX_BODY_PARAMS 64

/* Distinct Param names read by body (directly; not inside nested bodies). */
static uint32_t body_params(const rlx_graph *body, const char **names, uint32_t cap) {
  uint32_t k = 0, nn = rlx_graph_node_count(body);
  for (uint32_t i = 0; i < nn; i++) {
    const rlx_node *n = rlx_graph_node(body, i);
    if (n->op != RLX_OP_Param) continue;
    bool seen = false;
    for (uint32_t j = 0; j < k && !seen; j++) seen = strcmp(names[j], n->attrs.Param.name) == 0;
    if (!seen && k < cap) names[k++] = n->attrs.Param.name;
  }
  return k;
}

bool rlx_ad_scan_needs_prepare(const rlx_node *n) {
  if (n->op != RLX_OP_Scan) return false;
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  const char *names[1];
  return a->num_bcast > 0 || !a->save_trajectory || body_params(a->body, names, 1) > 0;
}

/* A child of dst equal to `body` with its Params turned into Inputs placed right after the carry
 * (in the order of `names`). */
static rlx_status body_without_params(rlx_graph *dst, const rlx_graph *body, const char *const *names, uint32_t np,
                                      rlx_graph **out) {
  rlx_graph *nb;
  RLX_TRY(rlx_graph_create_child(dst, rlx_graph_name(body), &nb));
  const rlx_allocator *al = rlx_graph_allocator(dst);
  uint32_t nn = rlx_graph_node_count(body);
  rlx_id *map = al->alloc(al->ctx, (size_t)(nn ? nn : 1) * sizeof *map), *pin = NULL, tmp[64], *in = tmp;
  if (!map) return rlx_errorf(RLX_ERR_OOM, "out of memory rewriting a Scan body");
  rlx_status s = RLX_OK;
  rlx_id pid[AD_MAX_BODY_PARAMS];
  uint32_t n_inputs = 0;
  for (uint32_t i = 0; i < nn && !s; i++) {
    const rlx_node *n = rlx_graph_node(body, i);
    if (n->op != RLX_OP_Input) continue;
    s = rlx_graph_add_unchecked(nb, RLX_OP_Input, NULL, 0, &n->attrs, &n->shape, n->name, &map[i]);
    if (!s && n_inputs++ == 0) {
      for (uint32_t k = 0; k < np && !s; k++) { /* after the carry */
        rlx_id p = rlx_graph_find_leaf(body, RLX_OP_Param, names[k]);
        char nm[256];
        snprintf(nm, sizeof nm, "param.%s", names[k]);
        rlx_attrs_Input ia = {.name = nm};
        s = rlx_graph_add_unchecked(nb, RLX_OP_Input, NULL, 0, &ia, &rlx_graph_node(body, p)->shape, NULL, &pid[k]);
      }
    }
  }
  for (uint32_t i = 0; i < nn && !s; i++) {
    const rlx_node *n = rlx_graph_node(body, i);
    if (n->op == RLX_OP_Input) continue;
    if (n->op == RLX_OP_Param) {
      for (uint32_t k = 0; k < np; k++)
        if (strcmp(names[k], n->attrs.Param.name) == 0) map[i] = pid[k];
      continue;
    }
    if (n->n_inputs > 64) {
      al->free(al->ctx, pin);
      pin = al->alloc(al->ctx, n->n_inputs * sizeof *pin);
      if (!pin) {
        s = rlx_errorf(RLX_ERR_OOM, "out of memory rewriting a Scan body");
        break;
      }
      in = pin;
    } else {
      in = tmp;
    }
    for (uint32_t k = 0; k < n->n_inputs; k++) in[k] = map[n->inputs[k]];
    s = rlx_pass_copy_node(nb, n, in, false, &map[i]);
  }
  uint32_t no = rlx_graph_output_count(body);
  for (uint32_t k = 0; k < no && k < 64 && !s; k++) tmp[k] = map[rlx_graph_outputs(body)[k]];
  if (!s) s = rlx_graph_set_outputs(nb, tmp, no < 64 ? no : 64);
  al->free(al->ctx, pin);
  al->free(al->ctx, map);
  if (!s) *out = nb;
  return s;
}

rlx_status rlx_ad_prepare_scan(rlx_graph *dst, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  if (a->save_trajectory && a->num_checkpoints > 0 && a->num_checkpoints < a->length)
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "a Scan whose output is a checkpointed trajectory (num_checkpoints %lld) "
                      "cannot be differentiated; save the full trajectory",
                      (long long)a->num_checkpoints);
  const char *names[AD_MAX_BODY_PARAMS];
  uint32_t np = body_params(a->body, names, AD_MAX_BODY_PARAMS);
  if (np >= AD_MAX_BODY_PARAMS)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "a Scan body reading %u or more Params", AD_MAX_BODY_PARAMS);
  uint32_t nb = (uint32_t)a->num_bcast, nx = (uint32_t)a->num_xs, total = np + nb + nx;
  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *ops = al->alloc(al->ctx, (1 + total) * sizeof *ops);
  if (!ops) return rlx_errorf(RLX_ERR_OOM, "out of memory rewriting a Scan");
  rlx_status s = RLX_OK;
  rlx_graph *body = a->body;
  if (np)
    s = body_without_params(dst, a->body, names, np, &body);
  else
    s = rlx_graph_clone_child(dst, a->body, &body);
  ops[0] = in[0];
  for (uint32_t k = 0; k < np + nb && !s; k++) {
    rlx_id b;
    if (k < np) {
      b = rlx_graph_find_leaf(dst, RLX_OP_Param, names[k]);
      if (b == RLX_NO_ID) {
        rlx_id p = rlx_graph_find_leaf(a->body, RLX_OP_Param, names[k]);
        s = rlx_param(dst, names[k], rlx_graph_node(a->body, p)->shape, &b);
        if (s) break;
      }
    } else {
      b = in[1 + (k - np)];
    }
    rlx_shape bs = dc_shape(dst, b);
    if (bs.rank + 1u > RLX_MAX_RANK) {
      s = rlx_errorf(RLX_ERR_UNSUPPORTED, "a Scan broadcast operand of rank %u cannot be stacked", bs.rank);
      break;
    }
    rlx_dim d[RLX_MAX_RANK];
    d[0] = a->length;
    for (uint32_t i = 0; i < bs.rank; i++) d[1 + i] = bs.dims[i];
    rlx_id u;
    s = rlx_unsqueeze(dst, b, 0, &u);
    if (!s) s = rlx_expand_dims(dst, u, bs.rank + 1u, d, &ops[1 + k]);
  }
  for (uint32_t k = 0; k < nx && !s; k++) ops[1 + np + nb + k] = in[1 + nb + k];
  rlx_id traj = RLX_NO_ID;
  if (!s) {
    rlx_attrs_Scan na = *a;
    na.body = body;
    na.num_bcast = 0;
    na.num_xs = total;
    if (!a->save_trajectory) na.num_checkpoints = 0;
    na.save_trajectory = true;
    s = rlx_graph_add(dst, RLX_OP_Scan, ops, 1 + total, &na, NULL, n->name, &traj);
  }
  al->free(al->ctx, ops);
  if (s) return s;
  if (a->save_trajectory) {
    *out = traj;
    return RLX_OK;
  }
  rlx_id last;
  RLX_TRY(rlx_narrow(dst, traj, 0, a->length - 1, 1, &last));
  rlx_shape is = dc_shape(dst, in[0]);
  return rlx_reshape_dims(dst, last, is.rank, is.dims, out);
}

/* ---- Scan VJP ---- */

RLX_VJP_DECL(Scan) {
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  if (a->num_bcast != 0 || !a->save_trajectory)
    return ad_unsupported(c, "internal: the Scan was not normalised before differentiation");
  uint32_t nx = (uint32_t)a->num_xs;
  /* body_vjp = grad(body wrt [carry, x_t...]) with seed "d_output" */
  const rlx_graph *body = a->body;
  uint32_t bn = rlx_graph_node_count(body), k = 0;
  rlx_id wrt[1 + 64];
  if (nx > 64) return ad_unsupported(c, "a Scan with more than 64 scanned operands");
  for (uint32_t i = 0; i < bn && k < 1 + nx; i++)
    if (rlx_graph_node(body, i)->op == RLX_OP_Input) wrt[k++] = i;
  if (k != 1 + nx || rlx_graph_output_count(body) != 1) return ad_unsupported(c, "the Scan body is malformed");
  const char *seed = "d_output";
  rlx_ad_request r = {body, rlx_graph_outputs(body), 1, &seed, wrt, 1 + nx, NULL, 0, c->use_backward_ops, false};
  rlx_graph *vjp_standalone = NULL, *vjp = NULL;
  rlx_status s = rlx_ad_reverse(&r, &vjp_standalone);
  if (s) return rlx_error_context(s, "differentiating the body of the Scan");
  s = rlx_graph_clone_child(c->dst, vjp_standalone, &vjp);
  rlx_graph_free(vjp_standalone);
  RLX_TRY(s);
  uint32_t n_in = 3 + nx;
  rlx_id in[3 + 64];
  in[0] = x[0];
  in[1] = y;
  in[2] = dy;
  for (uint32_t i = 0; i < nx; i++) in[3 + i] = x[1 + i];
  if (c->want[0]) {
    rlx_attrs_ScanBackward b;
    rlx_attrs_init(RLX_OP_ScanBackward, &b);
    b.body_vjp = vjp;
    b.length = a->length;
    b.save_trajectory = true;
    b.num_xs = nx;
    b.num_checkpoints = 0;
    RLX_TRY(ad_emit(c, RLX_OP_ScanBackward, in, n_in, &b, NULL, &dx[0]));
  }
  for (uint32_t i = 0; i < nx; i++) {
    if (!c->want[1 + i]) continue;
    rlx_attrs_ScanBackwardXs b;
    rlx_attrs_init(RLX_OP_ScanBackwardXs, &b);
    b.body_vjp = vjp;
    b.length = a->length;
    b.save_trajectory = true;
    b.num_xs = nx;
    b.num_checkpoints = 0;
    b.xs_idx = i;
    RLX_TRY(ad_emit(c, RLX_OP_ScanBackwardXs, in, n_in, &b, NULL, &dx[1 + i]));
  }
  return RLX_OK;
}

/* ---- CustomFn with a user VJP ---- */

/* Does `g` read a Param that carries a gradient in the enclosing forward graph? */
static const char *reads_wrt_param(const rlx_ad_ctx *c, const rlx_graph *g) {
  uint32_t nn = rlx_graph_node_count(g);
  for (uint32_t i = 0; i < nn; i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (n->op != RLX_OP_Param) continue;
    rlx_id p = rlx_graph_find_leaf(c->fwd, RLX_OP_Param, n->attrs.Param.name);
    if (p != RLX_NO_ID && c->dep && c->dep[p] >= 0) return n->attrs.Param.name;
  }
  return NULL;
}

RLX_VJP_DECL(CustomFn) {
  const rlx_attrs_CustomFn *a = &n->attrs.CustomFn;
  const rlx_graph *vb = a->vjp_body;
  if (!vb) return ad_unsupported(c, "internal: a CustomFn without vjp_body reached its VJP rule");
  const char *p = reads_wrt_param(c, a->fwd_body);
  if (p)
    return ad_unsupported(c,
                          "its fwd_body reads Param \"%s\", whose gradient the vjp_body cannot return; pass it as "
                          "an operand",
                          p);
  uint32_t bn = rlx_graph_node_count(vb), n_args = 0, prim = 0, np = n->n_inputs;
  const rlx_allocator *al = c->al;
  rlx_id *args = al->alloc(al->ctx, (size_t)(bn ? bn : 1) * sizeof *args);
  rlx_id *outs = al->alloc(al->ctx, (size_t)(np ? np : 1) * sizeof *outs);
  rlx_status s = RLX_OK;
  if (!args || !outs) s = rlx_errorf(RLX_ERR_OOM, "out of memory inlining a vjp_body");
  for (uint32_t i = 0; i < bn && !s; i++) {
    const rlx_node *b = rlx_graph_node(vb, i);
    if (b->op != RLX_OP_Input) continue;
    const char *nm = b->attrs.Input.name ? b->attrs.Input.name : "";
    if (strcmp(nm, "primal_output") == 0)
      args[n_args++] = y;
    else if (strcmp(nm, "d_output") == 0)
      args[n_args++] = dy;
    else if (prim < np)
      args[n_args++] = x[prim++];
    else
      s = ad_unsupported(c, "its vjp_body has more Inputs than primal inputs + primal_output + d_output");
  }
  if (!s && prim != np)
    s = ad_unsupported(c, "its vjp_body has %u primal Inputs; the CustomFn has %u operands", prim, np);
  if (!s && rlx_graph_output_count(vb) != np)
    s = ad_unsupported(c, "its vjp_body has %u outputs; it must return one gradient per operand (%u)",
                       rlx_graph_output_count(vb), np);
  if (!s) s = rlx_inline_graph(c->dst, vb, args, n_args, outs, np);
  for (uint32_t i = 0; i < np && !s; i++) {
    if (!c->want[i]) continue;
    rlx_shape xs = ad_shape(c, x[i]);
    s = ad_cast(c, outs[i], (rlx_dtype)xs.dtype, &dx[i]);
  }
  al->free(al->ctx, args);
  al->free(al->ctx, outs);
  return s;
}
