/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Simplify: one forward rebuild doing, per node,
 *   1. shape-exact algebraic identities (x*1, x+0, x-0, x/1, Reshape of Reshape, Reshape/Transpose/
 *      Cast that change nothing, Neg of Neg)                             [fold_constants]
 *   2. constant folding of pure ops whose operands are all Constants, evaluated with the CPU
 *      reference kernels                                                   [fold_constants]
 *   3. common-subexpression elimination by hashing (op, operands, attributes, shape) [cse]
 * followed by dead-code elimination from the outputs (Inputs and Params are always kept, so
 * binding by name keeps working, and so are in-place writers) [dce]. Bodies of control-flow ops are simplified recursively. */
#include <string.h>

#include "passes/decompose/decompose.h"
#include "core/elem.h"

/* Folding stops at this output size, and at a quarter of it for results much larger than their
 * operands (materialising a broadcast would only bloat the graph). */
#define FOLD_MAX_BYTES ((size_t)16 << 20)
#define FOLD_BLOAT_BYTES ((size_t)1 << 20)
#define FOLD_MAX_OPERANDS 64

typedef struct smp {
  bool fold, cse, dce;
  uint64_t rng_seed;
  const rlx_compile_options *opt;
  const rlx_allocator *al;
  rlx_graph *dst;
  rlx_id *slots; /* CSE hash table of dst ids (RLX_NO_ID = empty) */
  uint32_t cap, used;
} smp;

static rlx_status simplify_graph(const rlx_graph *g, const rlx_compile_options *opt, rlx_graph **out);

static const rlx_node *dnode(const smp *s, rlx_id id) { return rlx_graph_node(s->dst, id); }

/* ---- identities ---- */

/* Is dst node `id` a Constant whose every element equals v (complex: v + 0i)? */
static bool const_all(const smp *s, rlx_id id, double v) {
  const rlx_node *n = dnode(s, id);
  if (n->op != RLX_OP_Constant) return false;
  size_t numel;
  if (rlx_shape_numel(&n->shape, &numel) || numel == 0) return false;
  const rlx_bytes *b = &n->attrs.Constant.data;
  size_t nb;
  if (rlx_shape_nbytes(&n->shape, &nb) || nb != b->n) return false;
  for (size_t i = 0; i < numel; i++) {
    double re, im;
    rlx_elem_get_c(b->p, (rlx_dtype)n->shape.dtype, i, &re, &im);
    if (re != v || im != 0.0) return false;
  }
  return true;
}

static bool same_shape(const smp *s, rlx_id x, const rlx_shape *want) {
  return rlx_shape_equal(&dnode(s, x)->shape, want);
}

/* If node w (operands in[]) is an identity, writes the dst id it equals and returns true. May
 * rewrite w's operands instead (Reshape of Reshape) and return false. */
static bool identity(const smp *s, rlx_node *w, rlx_id *in, rlx_id *res) {
  const rlx_shape *S = &w->shape;
  switch (w->op) {
  case RLX_OP_Binary: {
    rlx_id a = in[0], b = in[1];
    switch (w->attrs.Binary.op) {
    case RLX_BINOP_MUL:
      if (const_all(s, b, 1.0) && same_shape(s, a, S)) return *res = a, true;
      if (const_all(s, a, 1.0) && same_shape(s, b, S)) return *res = b, true;
      break;
    case RLX_BINOP_ADD:
      if (const_all(s, b, 0.0) && same_shape(s, a, S)) return *res = a, true;
      if (const_all(s, a, 0.0) && same_shape(s, b, S)) return *res = b, true;
      break;
    case RLX_BINOP_SUB:
      if (const_all(s, b, 0.0) && same_shape(s, a, S)) return *res = a, true;
      break;
    case RLX_BINOP_DIV:
      if (const_all(s, b, 1.0) && same_shape(s, a, S)) return *res = a, true;
      break;
    default: break;
    }
    return false;
  }
  case RLX_OP_Reshape: {
    const rlx_node *x = dnode(s, in[0]);
    /* reshape(reshape(y)) = reshape(y); only with static shapes, where -1 cannot resolve to a
     * different symbol */
    if (x->op == RLX_OP_Reshape && rlx_shape_is_static(S) && rlx_shape_is_static(&dnode(s, x->inputs[0])->shape))
      in[0] = x->inputs[0];
    if (same_shape(s, in[0], S)) return *res = in[0], true;
    return false;
  }
  case RLX_OP_Transpose: {
    const rlx_ilist *p = &w->attrs.Transpose.perm;
    for (uint32_t i = 0; i < p->n; i++)
      if (p->v[i] != (int64_t)i) return false;
    if (same_shape(s, in[0], S)) return *res = in[0], true;
    return false;
  }
  case RLX_OP_Cast:
    if (same_shape(s, in[0], S)) return *res = in[0], true;
    return false;
  case RLX_OP_Activation: {
    const rlx_node *x = dnode(s, in[0]);
    if (w->attrs.Activation.kind == RLX_ACT_NEG && x->op == RLX_OP_Activation &&
        x->attrs.Activation.kind == RLX_ACT_NEG && same_shape(s, x->inputs[0], S))
      return *res = x->inputs[0], true;
    return false;
  }
  default: return false;
  }
}

/* ---- constant folding ---- */

/* Evaluates w on its constant operands; *folded = false (and no error) when it does not apply. */
static rlx_status try_fold(smp *s, const rlx_node *w, const rlx_id *in, bool *folded, rlx_id *res) {
  *folded = false;
  if (!rlx_const_foldable(w->op) || w->n_inputs > FOLD_MAX_OPERANDS) return RLX_OK;
  size_t in_bytes = 0, out_bytes;
  for (uint32_t i = 0; i < w->n_inputs; i++) {
    const rlx_node *x = dnode(s, in[i]);
    if (x->op != RLX_OP_Constant) return RLX_OK;
    in_bytes += x->attrs.Constant.data.n;
  }
  if (!rlx_shape_is_static(&w->shape) || rlx_shape_nbytes(&w->shape, &out_bytes)) return RLX_OK;
  if (out_bytes > FOLD_MAX_BYTES) return RLX_OK;
  if (out_bytes > FOLD_BLOAT_BYTES && out_bytes / 4 > in_bytes) return RLX_OK;

  rlx_tensor tin[FOLD_MAX_OPERANDS];
  for (uint32_t i = 0; i < w->n_inputs; i++) {
    const rlx_node *x = dnode(s, in[i]);
    tin[i].data = x->attrs.Constant.data.p;
    tin[i].shape = x->shape;
  }
  void *buf;
  bool done;
  RLX_TRY(rlx_const_eval(s->al, w, tin, w->n_inputs, s->rng_seed, &done, &buf, &out_bytes));
  if (!done) return RLX_OK;
  rlx_attrs_Constant c = {.data = {.p = buf, .n = out_bytes}};
  rlx_status st = rlx_graph_add_unchecked(s->dst, RLX_OP_Constant, NULL, 0, &c, &w->shape, w->name, res);
  if (st == RLX_OK) *folded = true;
  s->al->free(s->al->ctx, buf);
  return st;
}

/* ---- CSE ---- */

static uint64_t node_hash(rlx_op op, const rlx_id *in, uint32_t n_in, const rlx_attrs *a, const rlx_shape *sh) {
  uint64_t h = rlx_attrs_hash(op, a);
  for (uint32_t i = 0; i < n_in; i++) h = (h ^ in[i]) * 1099511628211ull;
  h = (h ^ sh->dtype) * 1099511628211ull;
  for (uint32_t i = 0; i < sh->rank; i++) h = (h ^ (uint64_t)sh->dims[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* Leaves, random ops, ops with bodies, in-place ops and Custom extensions (whose effects are
 * unknown) are never merged. */
static bool cse_eligible(rlx_op op) {
  return !rlx_op_has(op, RLX_PROP_LEAF | RLX_PROP_RANDOM | RLX_PROP_SUBGRAPH | RLX_PROP_INPLACE) &&
         rlx_op_family(op) != RLX_FAMILY_CUSTOM;
}

static bool same_node(const rlx_node *x, rlx_op op, const rlx_id *in, uint32_t n_in, const rlx_attrs *a,
                      const rlx_shape *sh) {
  if (x->op != op || x->n_inputs != n_in || !rlx_shape_equal(&x->shape, sh)) return false;
  if (n_in && memcmp(x->inputs, in, n_in * sizeof *in)) return false;
  return rlx_attrs_equal(op, &x->attrs, a);
}

static rlx_id cse_find(const smp *s, const rlx_node *w, const rlx_id *in) {
  if (!s->cap) return RLX_NO_ID;
  uint64_t h = node_hash(w->op, in, w->n_inputs, &w->attrs, &w->shape);
  for (uint32_t k = 0; k < s->cap; k++) {
    rlx_id id = s->slots[(h + k) & (s->cap - 1)];
    if (id == RLX_NO_ID) return RLX_NO_ID;
    if (same_node(dnode(s, id), w->op, in, w->n_inputs, &w->attrs, &w->shape)) return id;
  }
  return RLX_NO_ID;
}

static void cse_put(smp *s, rlx_id id) {
  const rlx_node *x = dnode(s, id);
  uint64_t h = node_hash(x->op, x->inputs, x->n_inputs, &x->attrs, &x->shape);
  for (uint32_t k = 0;; k++) {
    rlx_id *slot = &s->slots[(h + k) & (s->cap - 1)];
    if (*slot == RLX_NO_ID) {
      *slot = id;
      s->used++;
      return;
    }
  }
}

static rlx_status cse_insert(smp *s, rlx_id id) {
  if ((s->used + 1) * 2 > s->cap) {
    uint32_t old_cap = s->cap, cap = old_cap ? old_cap * 2 : 256;
    rlx_id *old = s->slots;
    s->slots = s->al->alloc(s->al->ctx, cap * sizeof *s->slots);
    if (!s->slots) {
      s->slots = old;
      return rlx_errorf(RLX_ERR_OOM, "out of memory in common-subexpression elimination");
    }
    for (uint32_t i = 0; i < cap; i++) s->slots[i] = RLX_NO_ID;
    s->cap = cap;
    s->used = 0;
    for (uint32_t i = 0; i < old_cap; i++)
      if (old[i] != RLX_NO_ID) cse_put(s, old[i]);
    s->al->free(s->al->ctx, old);
  }
  cse_put(s, id);
  return RLX_OK;
}

/* ---- the forward rebuild ---- */

static rlx_status copy_with_simplified_bodies(smp *s, const rlx_node *n, const rlx_id *in, rlx_id *res) {
  uint32_t nb = rlx_pass_body_count(n->op);
  rlx_graph *bodies[4] = {NULL, NULL, NULL, NULL};
  if (nb > 4) return rlx_errorf(RLX_ERR_INTERNAL, "%s has more than 4 bodies", rlx_op_name(n->op));
  rlx_attrs tmp = n->attrs;
  for (uint32_t b = 0; b < nb; b++) {
    rlx_graph *body = *rlx_pass_body_slot(n->op, &tmp, b), *sb = NULL;
    if (!body) continue;
    RLX_TRY(simplify_graph(body, s->opt, &sb));
    rlx_status st = rlx_graph_clone_child(s->dst, sb, &bodies[b]);
    rlx_graph_free(sb);
    RLX_TRY(st);
  }
  return rlx_pass_copy_node_bodies(s->dst, n, in, bodies, res);
}

static rlx_status forward(smp *s, const rlx_graph *g, rlx_id *map) {
  uint32_t nn = rlx_graph_node_count(g);
  rlx_id small[16];
  for (rlx_id id = 0; id < nn; id++) {
    const rlx_node *n = rlx_graph_node(g, id);
    rlx_id *in = small;
    if (n->n_inputs > 16) {
      in = s->al->alloc(s->al->ctx, n->n_inputs * sizeof *in);
      if (!in) return rlx_errorf(RLX_ERR_OOM, "out of memory while simplifying");
    }
    for (uint32_t i = 0; i < n->n_inputs; i++) in[i] = map[n->inputs[i]];
    rlx_node w = *n;
    w.inputs = in;
    rlx_status st = RLX_OK;
    bool done = false;
    if (rlx_pass_body_count(n->op)) {
      st = copy_with_simplified_bodies(s, n, in, &map[id]);
      done = true;
    }
    if (!done && s->fold && !rlx_op_has(n->op, RLX_PROP_LEAF)) {
      done = identity(s, &w, in, &map[id]);
      if (!done) st = try_fold(s, &w, in, &done, &map[id]);
    }
    if (!st && !done && s->cse && cse_eligible(n->op)) {
      rlx_id hit = cse_find(s, &w, in);
      if (hit != RLX_NO_ID) map[id] = hit, done = true;
    }
    if (!st && !done) {
      st = rlx_pass_copy_node(s->dst, &w, in, false, &map[id]);
      if (!st && s->cse && cse_eligible(n->op)) st = cse_insert(s, map[id]);
    }
    if (in != small) s->al->free(s->al->ctx, in);
    if (st) return rlx_error_context(st, "simplifying @%s/%%%u (%s)", rlx_graph_name(g), id, rlx_op_name(n->op));
  }
  return RLX_OK;
}

/* ---- DCE ---- */

static rlx_status dce(const rlx_graph *g, rlx_graph **out) {
  const rlx_allocator *al = rlx_graph_allocator(g);
  uint32_t nn = rlx_graph_node_count(g);
  uint8_t *live = al->alloc(al->ctx, nn ? nn : 1);
  if (!live) return rlx_errorf(RLX_ERR_OOM, "out of memory in dead-code elimination");
  memset(live, 0, nn ? nn : 1);
  const rlx_id *o = rlx_graph_outputs(g);
  for (uint32_t i = 0; i < rlx_graph_output_count(g); i++) live[o[i]] = 1;
  for (uint32_t k = nn; k-- > 0;) {
    const rlx_node *n = rlx_graph_node(g, k);
    /* Inputs and Params stay bindable by name; in-place writers (KvAppend) keep their effect. */
    if (n->op == RLX_OP_Input || n->op == RLX_OP_Param || rlx_op_has(n->op, RLX_PROP_INPLACE)) live[k] = 1;
    if (!live[k]) continue;
    for (uint32_t i = 0; i < n->n_inputs; i++) live[n->inputs[i]] = 1;
  }
  rlx_rebuild rb;
  rlx_status s = rlx_rebuild_begin(g, &rb);
  for (rlx_id id = 0; id < nn && !s; id++)
    if (live[id]) s = rlx_rebuild_copy(&rb, id);
  if (!s) s = rlx_rebuild_finish(&rb, out);
  if (s) rlx_rebuild_abort(&rb);
  al->free(al->ctx, live);
  return s;
}

static rlx_status simplify_graph(const rlx_graph *g, const rlx_compile_options *opt, rlx_graph **out) {
  smp s;
  memset(&s, 0, sizeof s);
  s.fold = opt ? opt->fold_constants : true;
  s.cse = opt ? opt->cse : true;
  s.dce = opt ? opt->dce : true;
  s.rng_seed = opt ? opt->rng_seed : 0;
  s.opt = opt;
  s.al = rlx_graph_allocator(g);
  uint32_t nn = rlx_graph_node_count(g);
  rlx_id *map = s.al->alloc(s.al->ctx, (nn ? nn : 1) * sizeof *map);
  if (!map) return rlx_errorf(RLX_ERR_OOM, "out of memory while simplifying");
  rlx_status st = rlx_graph_create(s.al, rlx_graph_name(g), &s.dst);
  if (!st) st = forward(&s, g, map);
  if (!st) {
    uint32_t no = rlx_graph_output_count(g);
    const rlx_id *o = rlx_graph_outputs(g);
    rlx_id *mo = s.al->alloc(s.al->ctx, (no ? no : 1) * sizeof *mo);
    if (!mo) st = rlx_errorf(RLX_ERR_OOM, "out of memory while simplifying");
    for (uint32_t i = 0; i < no && !st; i++) mo[i] = map[o[i]];
    if (!st) st = rlx_graph_set_outputs(s.dst, mo, no);
    s.al->free(s.al->ctx, mo);
  }
  s.al->free(s.al->ctx, s.slots);
  s.al->free(s.al->ctx, map);
  if (!st && s.dce) {
    rlx_graph *d = NULL;
    st = dce(s.dst, &d);
    if (!st) {
      rlx_graph_free(s.dst);
      s.dst = d;
    }
  }
  if (st) {
    rlx_graph_free(s.dst);
    return st;
  }
  *out = s.dst;
  return RLX_OK;
}

rlx_status rlx_simplify(const rlx_graph *g, const rlx_compile_options *opt, rlx_graph **out) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_simplify: NULL argument");
  *out = NULL;
  return simplify_graph(g, opt, out);
}
