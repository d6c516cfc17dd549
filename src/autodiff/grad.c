/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Reverse mode: rlx_grad / rlx_grad_with_loss and the engine (rlx_ad_reverse) that jvp and hvp
 * reuse.
 *
 *  1. prepare: nodes on the gradient path whose kind is fused, a region, control flow without a
 *     rule of its own, or a *Backward op without a direct rule are rewritten with the shared
 *     decompositions (src/passes/decompose/), round after round; AdaLayerNorm / GatedResidual,
 *     Scan and CustomFn with a vjp_body keep their own rules;
 *  2. the prepared forward is copied into the result graph; every root is seeded by an Input
 *     ("d_output" for rlx_grad);
 *  3. sweep: nodes in reverse order; each node that received a cotangent and depends on a wrt
 *     leaf runs its VJP rule; operand gradients are accumulated with Add;
 *  4. outputs: the cotangent of each wrt leaf (zeros when the output does not depend on it).
 * Gradient checkpointing: the checkpoint nodes start segments; the first time the sweep enters a
 * segment it emits a recomputation of the segment's nodes from the segment's boundary values
 * (read through StopGradient, so CSE cannot merge the copies back into the forward), and the
 * rules of that segment read the recomputed values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff/ad_internal.h"
#include "passes/decompose/decompose.h"
#include "rlx/verify.h"

#define AD_PREPARE_MAX_ROUNDS 16

void rlx_grad_options_init(rlx_grad_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->use_backward_ops = true;
}

bool rlx_has_vjp(rlx_op k) { return (unsigned)k < RLX_OP_COUNT && rlx_vjp_table[k] != NULL; }

static bool is_float(const rlx_shape *s) { return rlx_dtype_is_float((rlx_dtype)s->dtype); }

static void *ad_alloc(const rlx_allocator *al, size_t n, size_t size) {
  size_t bytes;
  if (!rlx_mul_size(n ? n : 1, size, &bytes)) return NULL;
  return al->alloc(al->ctx, bytes);
}

rlx_status rlx_ad_find_leaf(const rlx_graph *f, const char *name, rlx_id *out) {
  if (!name) return rlx_errorf(RLX_ERR_INVALID_ARG, "a wrt name is NULL");
  rlx_id id = rlx_graph_find_leaf(f, RLX_OP_Param, name);
  if (id == RLX_NO_ID) id = rlx_graph_find_leaf(f, RLX_OP_Input, name);
  if (id == RLX_NO_ID)
    return rlx_errorf(RLX_ERR_NOT_FOUND,
                      "graph @%s has no Param or Input named \"%s\" to differentiate with respect to",
                      rlx_graph_name(f), name);
  *out = id;
  return RLX_OK;
}

/* ---- gradient-path analysis ---- */

/* dep[i] = index of a wrt leaf node i depends on differentiably, or -1. Gradients never flow
 * through StopGradient, into leaves other than the wrt ones, or through non-float values. */
static void compute_dep(const rlx_graph *g, const rlx_id *wrt, uint32_t n_wrt, int32_t *dep) {
  uint32_t nn = rlx_graph_node_count(g);
  for (uint32_t i = 0; i < nn; i++) dep[i] = -1;
  for (uint32_t k = n_wrt; k-- > 0;) dep[wrt[k]] = (int32_t)k;
  for (uint32_t i = 0; i < nn; i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (rlx_op_has(n->op, RLX_PROP_LEAF) || n->op == RLX_OP_StopGradient || !is_float(&n->shape)) continue;
    for (uint32_t k = 0; k < n->n_inputs; k++)
      if (dep[n->inputs[k]] >= 0) {
        dep[i] = dep[n->inputs[k]];
        break;
      }
  }
}

/* live[i] = node i feeds one of the roots. */
static void compute_live(const rlx_graph *g, const rlx_id *roots, uint32_t n_roots, uint8_t *live) {
  uint32_t nn = rlx_graph_node_count(g);
  memset(live, 0, nn ? nn : 1);
  for (uint32_t k = 0; k < n_roots; k++) live[roots[k]] = 1;
  for (uint32_t i = nn; i-- > 0;) {
    if (!live[i]) continue;
    const rlx_node *n = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < n->n_inputs; k++) live[n->inputs[k]] = 1;
  }
}

/* ---- prepare: decompositions before differentiation ---- */

/* Should node n (on the gradient path) be rewritten with its shared decomposition first? */
static bool wants_decomposition(const rlx_node *n) {
  rlx_op op = n->op;
  /* Kinds that are not differentiable (Histogram, ...) are not rewritten into primitives whose
   * gradient would silently be zero: a gradient reaching them is an error. Backward ops are
   * decomposed for second-order differentiation. */
  if (!rlx_decompose_table[op] || !rlx_op_has(op, RLX_PROP_DIFF | RLX_PROP_BACKWARD)) return false;
  switch (op) {
  case RLX_OP_AdaLayerNorm:
  case RLX_OP_GatedResidual:
  case RLX_OP_Scan: return false;
  case RLX_OP_CustomFn: return n->attrs.CustomFn.vjp_body == NULL;
  case RLX_OP_Pad: return n->attrs.Pad.mode != RLX_PAD_MODE_CONSTANT;
  case RLX_OP_DotGeneral:
  case RLX_OP_If:
  case RLX_OP_While: return true;
  default: return rlx_vjp_table[op] == NULL;
  }
}

typedef struct ad_prep {
  rlx_graph *g;   /* prepared forward */
  rlx_id *map;    /* f id -> prepared id */
  rlx_id *origin; /* prepared id -> f id it stems from */
  char **why;     /* prepared id -> why its decomposition was refused (or NULL) */
  uint32_t n;     /* node count of g */
} ad_prep;

static void prep_free(const rlx_allocator *al, ad_prep *p) {
  if (p->why)
    for (uint32_t i = 0; i < p->n; i++) al->free(al->ctx, p->why[i]);
  al->free(al->ctx, p->why);
  al->free(al->ctx, p->origin);
  al->free(al->ctx, p->map);
  rlx_graph_free(p->g);
  memset(p, 0, sizeof *p);
}

static char *dup_str(const rlx_allocator *al, const char *s) {
  size_t n = strlen(s);
  char *r = al->alloc(al->ctx, n + 1);
  if (r) memcpy(r, s, n + 1);
  return r;
}

/* Grows per-node arrays of a graph being built to hold `need` entries. */
static rlx_status grow(const rlx_allocator *al, rlx_id **origin, char ***why, uint32_t *cap, uint32_t need) {
  if (need <= *cap) return RLX_OK;
  uint32_t nc = *cap ? *cap : 64;
  while (nc < need) nc *= 2;
  rlx_id *o = ad_alloc(al, nc, sizeof *o);
  char **w = ad_alloc(al, nc, sizeof *w);
  if (!o || !w) {
    al->free(al->ctx, o);
    al->free(al->ctx, w);
    return rlx_errorf(RLX_ERR_OOM, "out of memory while preparing a graph for autodiff");
  }
  for (uint32_t i = 0; i < nc; i++) {
    o[i] = i < *cap ? (*origin)[i] : RLX_NO_ID;
    w[i] = i < *cap ? (*why)[i] : NULL;
  }
  al->free(al->ctx, *origin);
  al->free(al->ctx, *why);
  *origin = o;
  *why = w;
  *cap = nc;
  return RLX_OK;
}

/* One round over `cur`: copies every node, decomposing those on the gradient path that want it.
 * `cur_origin`/`cur_why` describe cur's nodes; the result describes the new graph. */
static rlx_status prepare_round(const rlx_graph *cur, const rlx_id *cur_origin, char **cur_why, const rlx_id *wrt,
                                uint32_t n_wrt, const rlx_id *roots, uint32_t n_roots, ad_prep *next, rlx_id *map,
                                bool *changed) {
  const rlx_allocator *al = rlx_graph_allocator(cur);
  uint32_t nn = rlx_graph_node_count(cur);
  int32_t *dep = ad_alloc(al, nn, sizeof *dep);
  uint8_t *live = ad_alloc(al, nn, 1);
  rlx_id *in = NULL;
  uint32_t in_cap = 0, cap = 0;
  rlx_status s = RLX_OK;
  *changed = false;
  memset(next, 0, sizeof *next);
  if (!dep || !live) s = rlx_errorf(RLX_ERR_OOM, "out of memory while preparing a graph for autodiff");
  if (!s) {
    compute_dep(cur, wrt, n_wrt, dep);
    compute_live(cur, roots, n_roots, live);
    s = rlx_graph_create(al, rlx_graph_name(cur), &next->g);
  }
  for (rlx_id id = 0; id < nn && !s; id++) {
    const rlx_node *n = rlx_graph_node(cur, id);
    if (n->n_inputs > in_cap) {
      al->free(al->ctx, in);
      in_cap = n->n_inputs;
      in = ad_alloc(al, in_cap, sizeof *in);
      if (!in) {
        s = rlx_errorf(RLX_ERR_OOM, "out of memory while preparing a graph for autodiff");
        break;
      }
    }
    for (uint32_t k = 0; k < n->n_inputs; k++) in[k] = map[n->inputs[k]];
    uint32_t before = rlx_graph_node_count(next->g);
    bool done = false;
    bool scan = rlx_ad_scan_needs_prepare(n);
    if (dep[id] >= 0 && live[id] && !cur_why[id] && (scan || wants_decomposition(n))) {
      rlx_id o = RLX_NO_ID;
      rlx_status d =
          scan ? rlx_ad_prepare_scan(next->g, n, in, &o) : rlx_decompose_table[n->op](next->g, cur, n, in, &o);
      if (d == RLX_OK) {
        const rlx_node *r = rlx_graph_node(next->g, o);
        if (!r || !rlx_shape_compatible(&r->shape, &n->shape)) {
          s = rlx_errorf(RLX_ERR_INTERNAL, "the decomposition of %s changed its shape", rlx_op_name(n->op));
          break;
        }
        map[id] = o;
        done = true;
        *changed = true;
      } else if (d != RLX_ERR_UNSUPPORTED) {
        s = rlx_error_context(d, "decomposing %%%u %s for autodiff", id, rlx_op_name(n->op));
        break;
      } else {
        /* Keep the node; remember why (reported if it has no rule and a gradient reaches it).
         * Nodes the refused decomposition already emitted are dead and removed by DCE. */
        char *msg = dup_str(al, rlx_last_error());
        s = grow(al, &next->origin, &next->why, &cap, rlx_graph_node_count(next->g) + 1);
        uint32_t at = rlx_graph_node_count(next->g);
        if (!s) s = rlx_pass_copy_node(next->g, n, in, false, &map[id]);
        if (s) {
          al->free(al->ctx, msg);
          break;
        }
        next->why[at] = msg;
        before = at;
        done = true;
      }
    }
    if (!done) s = rlx_pass_copy_node(next->g, n, in, false, &map[id]);
    if (s) break;
    uint32_t after = rlx_graph_node_count(next->g);
    s = grow(al, &next->origin, &next->why, &cap, after);
    for (uint32_t k = before; k < after && !s; k++)
      if (next->origin[k] == RLX_NO_ID) next->origin[k] = cur_origin[id];
    if (!s && after > 0 && cur_why[id] && map[id] == after - 1 && !next->why[after - 1])
      next->why[after - 1] = dup_str(al, cur_why[id]);
  }
  if (!s) {
    uint32_t no = rlx_graph_output_count(cur);
    const rlx_id *outs = rlx_graph_outputs(cur);
    rlx_id *m = ad_alloc(al, no, sizeof *m);
    if (!m) s = rlx_errorf(RLX_ERR_OOM, "out of memory while preparing a graph for autodiff");
    for (uint32_t k = 0; k < no && !s; k++) m[k] = map[outs[k]];
    if (!s) s = rlx_graph_set_outputs(next->g, m, no);
    al->free(al->ctx, m);
  }
  if (!s) {
    next->n = rlx_graph_node_count(next->g);
    s = grow(al, &next->origin, &next->why, &cap, next->n);
  }
  al->free(al->ctx, in);
  al->free(al->ctx, dep);
  al->free(al->ctx, live);
  if (s) {
    next->n = cap;
    prep_free(al, next);
  }
  return s;
}

/* Prepares f; p->map maps f ids to prepared ids. */
static rlx_status prepare(const rlx_graph *f, const rlx_id *wrt, uint32_t n_wrt, const rlx_id *roots, uint32_t n_roots,
                          ad_prep *p) {
  const rlx_allocator *al = rlx_graph_allocator(f);
  uint32_t nf = rlx_graph_node_count(f);
  memset(p, 0, sizeof *p);
  ad_prep cur;
  memset(&cur, 0, sizeof cur);
  rlx_status s = rlx_graph_clone(f, al, &cur.g);
  cur.n = nf;
  cur.map = ad_alloc(al, nf, sizeof *cur.map);
  cur.origin = ad_alloc(al, nf, sizeof *cur.origin);
  cur.why = ad_alloc(al, nf, sizeof *cur.why);
  if (!s && (!cur.map || !cur.origin || !cur.why)) s = rlx_errorf(RLX_ERR_OOM, "out of memory preparing autodiff");
  if (s) {
    if (cur.why) memset(cur.why, 0, (size_t)nf * sizeof *cur.why);
    prep_free(al, &cur);
    return s;
  }
  for (uint32_t i = 0; i < nf; i++) {
    cur.map[i] = i;
    cur.origin[i] = i;
    cur.why[i] = NULL;
  }
  /* wrt leaves and roots of the current graph */
  rlx_id *w = ad_alloc(al, n_wrt, sizeof *w), *r = ad_alloc(al, n_roots, sizeof *r);
  rlx_id *m = NULL;
  if (!w || !r) s = rlx_errorf(RLX_ERR_OOM, "out of memory preparing autodiff");
  for (uint32_t round = 0; round < AD_PREPARE_MAX_ROUNDS && !s; round++) {
    for (uint32_t k = 0; k < n_wrt; k++) w[k] = cur.map[wrt[k]];
    for (uint32_t k = 0; k < n_roots; k++) r[k] = cur.map[roots[k]];
    m = ad_alloc(al, cur.n, sizeof *m);
    if (!m) {
      s = rlx_errorf(RLX_ERR_OOM, "out of memory preparing autodiff");
      break;
    }
    ad_prep next;
    bool changed = false;
    s = prepare_round(cur.g, cur.origin, cur.why, w, n_wrt, r, n_roots, &next, m, &changed);
    if (s) break;
    /* compose f -> cur -> next */
    next.map = ad_alloc(al, nf, sizeof *next.map);
    if (!next.map) {
      prep_free(al, &next);
      s = rlx_errorf(RLX_ERR_OOM, "out of memory preparing autodiff");
      break;
    }
    for (uint32_t i = 0; i < nf; i++) next.map[i] = m[cur.map[i]];
    al->free(al->ctx, m);
    m = NULL;
    prep_free(al, &cur);
    cur = next;
    if (!changed) break;
  }
  al->free(al->ctx, m);
  al->free(al->ctx, w);
  al->free(al->ctx, r);
  if (s) {
    prep_free(al, &cur);
    return s;
  }
  *p = cur;
  return RLX_OK;
}

/* ---- the sweep ---- */

typedef struct ad_sweep {
  rlx_ad_ctx c;
  ad_prep prep;
  int32_t *dep;
  rlx_id *ct; /* prepared id -> dst id of its accumulated cotangent */
  /* checkpointing */
  rlx_id *cps; /* sorted prepared ids of the checkpoints */
  uint32_t n_cps;
  int32_t *seg; /* prepared id -> segment index or -1 */
  uint8_t *recomputed;
  rlx_id *boundary; /* prepared id -> StopGradient copy for the current segment */
} ad_sweep;

static int cmp_id(const void *a, const void *b) {
  rlx_id x = *(const rlx_id *)a, y = *(const rlx_id *)b;
  return x < y ? -1 : x > y;
}

static rlx_status setup_checkpoints(ad_sweep *w, const rlx_ad_request *r) {
  const rlx_allocator *al = w->c.al;
  uint32_t nn = w->prep.n;
  w->seg = ad_alloc(al, nn, sizeof *w->seg);
  w->cps = ad_alloc(al, r->n_checkpoints, sizeof *w->cps);
  w->recomputed = ad_alloc(al, r->n_checkpoints, 1);
  w->boundary = ad_alloc(al, nn, sizeof *w->boundary);
  if (!w->seg || !w->cps || !w->recomputed || !w->boundary)
    return rlx_errorf(RLX_ERR_OOM, "out of memory setting up gradient checkpoints");
  uint32_t nf = rlx_graph_node_count(r->f), k = 0;
  for (uint32_t i = 0; i < r->n_checkpoints; i++) {
    rlx_id id = r->checkpoints[i];
    if (id >= nf)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "checkpoint %u is node %%%u, but graph @%s has %u nodes", i, id,
                        rlx_graph_name(r->f), nf);
    w->cps[k++] = w->prep.map[id];
  }
  qsort(w->cps, k, sizeof *w->cps, cmp_id);
  uint32_t u = 0;
  for (uint32_t i = 0; i < k; i++)
    if (u == 0 || w->cps[u - 1] != w->cps[i]) w->cps[u++] = w->cps[i];
  w->n_cps = u;
  memset(w->recomputed, 0, u ? u : 1);
  int32_t cur = -1;
  uint32_t next = 0;
  for (uint32_t i = 0; i < nn; i++) {
    while (next < u && w->cps[next] == i) cur = (int32_t)next++;
    w->seg[i] = cur;
    w->boundary[i] = RLX_NO_ID;
  }
  return RLX_OK;
}

/* Must node i be recomputed inside its segment (rather than read from the forward)? */
static bool recomputable(const rlx_node *n) {
  return !rlx_op_has(n->op, RLX_PROP_LEAF | RLX_PROP_RANDOM | RLX_PROP_INPLACE) && n->op != RLX_OP_Custom;
}

/* Emits the recomputation of segment s: every recomputable node strictly after the segment's
 * checkpoint and before the next one, with operands outside the segment read through a
 * StopGradient copy of their forward value. */
static rlx_status recompute_segment(ad_sweep *w, uint32_t s) {
  rlx_id lo = w->cps[s], hi = s + 1 < w->n_cps ? w->cps[s + 1] : w->prep.n;
  const rlx_graph *g = w->prep.g;
  rlx_id *in = NULL;
  uint32_t in_cap = 0;
  rlx_status st = RLX_OK;
  uint8_t *inside = ad_alloc(w->c.al, hi - lo, 1);
  if (!inside) return rlx_errorf(RLX_ERR_OOM, "out of memory recomputing a checkpoint segment");
  memset(inside, 0, hi - lo);
  for (rlx_id id = lo + 1; id < hi && !st; id++) {
    const rlx_node *n = rlx_graph_node(g, id);
    if (!recomputable(n)) continue;
    if (n->n_inputs > in_cap) {
      w->c.al->free(w->c.al->ctx, in);
      in_cap = n->n_inputs;
      in = ad_alloc(w->c.al, in_cap, sizeof *in);
      if (!in) {
        st = rlx_errorf(RLX_ERR_OOM, "out of memory recomputing a checkpoint segment");
        break;
      }
    }
    for (uint32_t k = 0; k < n->n_inputs && !st; k++) {
      rlx_id x = n->inputs[k];
      if (x > lo && inside[x - lo]) {
        in[k] = w->c.fmap[x];
        continue;
      }
      if (w->boundary[x] == RLX_NO_ID) {
        rlx_id v = w->c.fmap[x];
        st = rlx_build_StopGradient(w->c.dst, &v, 1, NULL, &w->boundary[x]);
      }
      in[k] = w->boundary[x];
    }
    if (st) break;
    rlx_id o;
    st = rlx_pass_copy_node(w->c.dst, n, in, false, &o);
    if (st) break;
    w->c.fmap[id] = o;
    inside[id - lo] = 1;
  }
  w->c.al->free(w->c.al->ctx, in);
  w->c.al->free(w->c.al->ctx, inside);
  w->recomputed[s] = 1;
  return st;
}

static rlx_status no_rule_error(ad_sweep *w, rlx_id id, const rlx_ad_request *r) {
  char who[400];
  ad_describe_fwd(&w->c, id, who, sizeof who);
  const rlx_node *leaf = rlx_graph_node(r->f, r->wrt[w->dep[id]]);
  const char *lname = leaf->op == RLX_OP_Param ? leaf->attrs.Param.name : leaf->attrs.Input.name;
  const char *why = w->prep.why[id];
  return rlx_errorf(RLX_ERR_UNSUPPORTED,
                    "node %s: no VJP rule; the gradient with respect to \"%s\" flows through it (differentiate "
                    "another graph, or wrap its operand in StopGradient if it should be treated as a constant)%s%s%s",
                    who, lname ? lname : "?", why ? " (its decomposition was refused: " : "", why ? why : "",
                    why ? ")" : "");
}

/* Runs the VJP of prepared node id. */
static rlx_status vjp_node(ad_sweep *w, rlx_id id, const rlx_ad_request *r) {
  const rlx_node *n = rlx_graph_node(w->prep.g, id);
  rlx_vjp_fn rule = rlx_vjp_table[n->op];
  if (!rule) return no_rule_error(w, id, r);
  if (w->n_cps && w->seg[id] >= 0 && !w->recomputed[w->seg[id]]) RLX_TRY(recompute_segment(w, (uint32_t)w->seg[id]));
  uint32_t ni = n->n_inputs;
  rlx_id *x = ad_alloc(w->c.al, ni, sizeof *x), *dx = ad_alloc(w->c.al, ni, sizeof *dx);
  bool *want = ad_alloc(w->c.al, ni, sizeof *want);
  rlx_status s = RLX_OK;
  if (!x || !dx || !want) s = rlx_errorf(RLX_ERR_OOM, "out of memory during the backward sweep");
  bool any = false;
  for (uint32_t k = 0; k < ni && !s; k++) {
    rlx_id a = n->inputs[k];
    x[k] = w->c.fmap[a];
    dx[k] = RLX_NO_ID;
    want[k] = w->dep[a] >= 0 && is_float(&rlx_graph_node(w->prep.g, a)->shape);
    any |= want[k];
  }
  if (!s && any) {
    w->c.want = want;
    w->c.node = id;
    s = rule(&w->c, n, w->c.fmap[id], x, w->ct[id], dx);
    if (s && s != RLX_ERR_UNSUPPORTED && s != RLX_ERR_OOM) {
      char who[400];
      ad_describe_fwd(&w->c, id, who, sizeof who);
      s = rlx_error_context(s, "differentiating node %s", who);
    }
  }
  for (uint32_t k = 0; k < ni && !s && any; k++) {
    if (dx[k] == RLX_NO_ID || !want[k]) continue;
    rlx_id a = n->inputs[k];
    rlx_shape want_s = rlx_graph_node(w->prep.g, a)->shape, got = ad_shape(&w->c, dx[k]);
    if (!rlx_shape_equal(&want_s, &got)) {
      if (rlx_shape_compatible(&want_s, &got)) {
        s = ad_reshape(&w->c, dx[k], &want_s, &dx[k]);
        if (s) break;
      } else {
        char who[400], a1[128], a2[128];
        ad_describe_fwd(&w->c, id, who, sizeof who);
        rlx_shape_format(&want_s, a1, sizeof a1);
        rlx_shape_format(&got, a2, sizeof a2);
        s = rlx_errorf(RLX_ERR_INTERNAL, "node %s: the VJP rule gave operand %u a gradient of shape %s instead of %s",
                       who, k, a2, a1);
        break;
      }
    }
    if (w->ct[a] == RLX_NO_ID)
      w->ct[a] = dx[k];
    else
      s = ad_add(&w->c, w->ct[a], dx[k], &w->ct[a]);
  }
  w->c.al->free(w->c.al->ctx, x);
  w->c.al->free(w->c.al->ctx, dx);
  w->c.al->free(w->c.al->ctx, want);
  return s;
}

static void sweep_free(ad_sweep *w) {
  const rlx_allocator *al = w->c.al;
  al->free(al->ctx, w->dep);
  al->free(al->ctx, w->ct);
  al->free(al->ctx, w->cps);
  al->free(al->ctx, w->seg);
  al->free(al->ctx, w->recomputed);
  al->free(al->ctx, w->boundary);
  al->free(al->ctx, w->c.fmap);
  prep_free(al, &w->prep);
}

static rlx_status check_request(const rlx_ad_request *r) {
  if (!r->f) return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: the forward graph is NULL");
  uint32_t nf = rlx_graph_node_count(r->f);
  if (r->n_roots == 0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: graph @%s has no output", rlx_graph_name(r->f));
  for (uint32_t k = 0; k < r->n_roots; k++) {
    if (r->roots[k] >= nf) return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: root %%%u does not exist", r->roots[k]);
    const rlx_shape *s = &rlx_graph_node(r->f, r->roots[k])->shape;
    if (!is_float(s)) {
      char b[128];
      rlx_shape_format(s, b, sizeof b);
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "the differentiated output %%%u of graph @%s is %s; it must be a "
                        "floating-point tensor",
                        r->roots[k], rlx_graph_name(r->f), b);
    }
    if (rlx_graph_find_leaf(r->f, RLX_OP_Input, r->seeds[k]) != RLX_NO_ID)
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "graph @%s already has an Input named \"%s\"; autodiff needs that name for "
                        "the seed of the output's cotangent",
                        rlx_graph_name(r->f), r->seeds[k]);
  }
  for (uint32_t k = 0; k < r->n_wrt; k++) {
    if (r->wrt[k] >= nf) return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: wrt %%%u does not exist", r->wrt[k]);
    const rlx_node *n = rlx_graph_node(r->f, r->wrt[k]);
    if (n->op != RLX_OP_Input && n->op != RLX_OP_Param)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: wrt %%%u is a %s, not an Input or Param", r->wrt[k],
                        rlx_op_name(n->op));
    if (!is_float(&n->shape)) {
      char b[128];
      rlx_shape_format(&n->shape, b, sizeof b);
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "cannot differentiate with respect to \"%s\": it is %s; only "
                        "floating-point leaves have gradients",
                        n->op == RLX_OP_Param ? n->attrs.Param.name : n->attrs.Input.name, b);
    }
  }
  return RLX_OK;
}

/* Drops nodes no output needs (forward values no rule read, refused decompositions, ...); every
 * Input and Param is kept so the result binds the same names as f. */
static rlx_status prune(rlx_graph *g, rlx_graph **out) {
  const rlx_allocator *al = rlx_graph_allocator(g);
  uint32_t nn = rlx_graph_node_count(g);
  uint8_t *live = ad_alloc(al, nn, 1);
  if (!live) return rlx_errorf(RLX_ERR_OOM, "out of memory pruning the gradient graph");
  compute_live(g, rlx_graph_outputs(g), rlx_graph_output_count(g), live);
  rlx_rebuild rb;
  rlx_status s = rlx_rebuild_begin(g, &rb);
  for (rlx_id id = 0; id < nn && !s; id++) {
    rlx_op op = rlx_graph_node(g, id)->op;
    if (live[id] || op == RLX_OP_Input || op == RLX_OP_Param) s = rlx_rebuild_copy(&rb, id);
  }
  al->free(al->ctx, live);
  if (!s) s = rlx_rebuild_finish(&rb, out);
  if (s) rlx_rebuild_abort(&rb);
  return s;
}

rlx_status rlx_ad_reverse(const rlx_ad_request *r, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "autodiff: NULL output pointer");
  *out = NULL;
  RLX_TRY(check_request(r));
  const rlx_allocator *al = rlx_graph_allocator(r->f);
  ad_sweep w;
  memset(&w, 0, sizeof w);
  w.c.al = al;
  w.c.use_backward_ops = r->use_backward_ops;
  w.c.orig = r->f;
  rlx_status s = prepare(r->f, r->wrt, r->n_wrt, r->roots, r->n_roots, &w.prep);
  if (s) return s;
  w.c.fwd = w.prep.g;
  w.c.origin = w.prep.origin;
  uint32_t nn = w.prep.n;
  w.dep = ad_alloc(al, nn, sizeof *w.dep);
  w.ct = ad_alloc(al, nn, sizeof *w.ct);
  w.c.fmap = ad_alloc(al, nn, sizeof *w.c.fmap);
  rlx_id *wrt = ad_alloc(al, r->n_wrt, sizeof *wrt);
  rlx_id *outs = NULL;
  if (!w.dep || !w.ct || !w.c.fmap || !wrt) s = rlx_errorf(RLX_ERR_OOM, "out of memory during autodiff");
  if (!s) s = rlx_graph_clone(w.prep.g, al, &w.c.dst);
  if (!s) {
    for (uint32_t k = 0; k < r->n_wrt; k++) wrt[k] = w.prep.map[r->wrt[k]];
    compute_dep(w.prep.g, wrt, r->n_wrt, w.dep);
    w.c.dep = w.dep;
    for (uint32_t i = 0; i < nn; i++) {
      w.ct[i] = RLX_NO_ID;
      w.c.fmap[i] = i;
    }
  }
  if (!s && r->n_checkpoints) s = setup_checkpoints(&w, r);
  /* seeds */
  for (uint32_t k = 0; k < r->n_roots && !s; k++) {
    rlx_id root = w.prep.map[r->roots[k]], seed;
    s = rlx_input(w.c.dst, r->seeds[k], rlx_graph_node(w.prep.g, root)->shape, &seed);
    if (s) break;
    if (w.ct[root] == RLX_NO_ID)
      w.ct[root] = seed;
    else
      s = ad_add(&w.c, w.ct[root], seed, &w.ct[root]);
  }
  /* sweep */
  for (uint32_t i = nn; i-- > 0 && !s;) {
    if (w.ct[i] == RLX_NO_ID || w.dep[i] < 0) continue;
    const rlx_node *n = rlx_graph_node(w.prep.g, i);
    if (rlx_op_has(n->op, RLX_PROP_LEAF)) continue;
    s = vjp_node(&w, i, r);
  }
  /* outputs */
  uint32_t n_keep = r->keep_outputs ? rlx_graph_output_count(r->f) : 0, n_out = n_keep + r->n_wrt;
  if (!s) {
    outs = ad_alloc(al, n_out, sizeof *outs);
    if (!outs) s = rlx_errorf(RLX_ERR_OOM, "out of memory during autodiff");
  }
  for (uint32_t k = 0; k < n_keep && !s; k++) outs[k] = w.prep.map[rlx_graph_outputs(r->f)[k]];
  for (uint32_t k = 0; k < r->n_wrt && !s; k++) {
    rlx_id g = w.ct[wrt[k]];
    if (g == RLX_NO_ID) s = ad_zeros_like(&w.c, wrt[k], &g);
    outs[n_keep + k] = g;
  }
  if (!s) s = rlx_graph_set_outputs(w.c.dst, outs, n_out);
  if (!s) {
    rlx_graph *pruned = NULL;
    s = prune(w.c.dst, &pruned);
    if (!s) {
      rlx_graph_free(w.c.dst);
      w.c.dst = pruned;
    }
  }
  if (!s) {
    s = rlx_verify(w.c.dst);
    if (s && s != RLX_ERR_OOM)
      s = rlx_error_context(RLX_ERR_INTERNAL, "autodiff produced a graph that does not verify");
  }
  al->free(al->ctx, outs);
  al->free(al->ctx, wrt);
  if (s) {
    rlx_graph_free(w.c.dst);
    w.c.dst = NULL;
  }
  *out = w.c.dst;
  sweep_free(&w);
  return s;
}

/* ---- public entry points ---- */

static rlx_status grad_common(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, const rlx_grad_options *opt,
                              bool with_loss, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_grad: NULL output pointer");
  *out = NULL;
  if (!f) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_grad: the graph is NULL");
  if (n_wrt && !wrt) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_grad: wrt is NULL");
  if (rlx_graph_output_count(f) != 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_grad: graph @%s has %u outputs; it needs exactly one (the loss)",
                      rlx_graph_name(f), rlx_graph_output_count(f));
  rlx_grad_options def;
  rlx_grad_options_init(&def);
  if (!opt) opt = &def;
  if (opt->n_checkpoints && !opt->checkpoints)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_grad: n_checkpoints is %u but checkpoints is NULL", opt->n_checkpoints);
  const rlx_allocator *al = rlx_graph_allocator(f);
  rlx_id *ids = ad_alloc(al, n_wrt, sizeof *ids);
  if (!ids) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  rlx_status s = RLX_OK;
  for (uint32_t k = 0; k < n_wrt && !s; k++) s = rlx_ad_find_leaf(f, wrt[k], &ids[k]);
  if (!s) {
    /* "d_output", or the first free "d_output_<k>" when f already has one (f is itself a gradient
     * graph: repeated grad for higher derivatives) */
    char seed_buf[32] = "d_output";
    for (int k = 2; rlx_graph_find_leaf(f, RLX_OP_Input, seed_buf) != RLX_NO_ID && k < 1000; k++)
      snprintf(seed_buf, sizeof seed_buf, "d_output_%d", k);
    const char *seed = seed_buf;
    rlx_ad_request r = {f,
                        rlx_graph_outputs(f),
                        1,
                        &seed,
                        ids,
                        n_wrt,
                        opt->checkpoints,
                        opt->n_checkpoints,
                        opt->use_backward_ops,
                        with_loss};
    s = rlx_ad_reverse(&r, out);
  }
  al->free(al->ctx, ids);
  return s;
}

rlx_status rlx_grad(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, const rlx_grad_options *opt,
                    rlx_graph **out) {
  return grad_common(f, wrt, n_wrt, opt, false, out);
}

rlx_status rlx_grad_with_loss(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, const rlx_grad_options *opt,
                              rlx_graph **out) {
  return grad_common(f, wrt, n_wrt, opt, true, out);
}
