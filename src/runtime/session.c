/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The compile pipeline and the executable API.
 *
 *   rlx_compile: verify -> legalize (against the backend's claims; fills the dispatch report) ->
 *   simplify -> verify -> steps (segments, host-staged nodes, runtime control flow; steps.c) ->
 *   per segment: memory plan -> plan check (default on) -> backend compile.
 *
 * The executable's interface is the graph the user built: its Inputs (top level, in node order)
 * and its Params (top level and inside bodies, by name). Optimization may remove some of them from
 * the compiled graph; they are still accepted (and still required), so behaviour never depends on
 * what the optimizer managed to remove. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir_internal.h"
#include "passes/passes.h"
#include "passes/pattern.h"
#include "rlx/verify.h"
#include "runtime/compile_cache.h"
#include "runtime/exec_internal.h"
#include "strbuf.h"

#define MAX_BODY_DEPTH 64

void rlx_compile_options_init(rlx_compile_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->fold_constants = true;
  o->cse = true;
  o->dce = true;
  o->check_plan = true;
  o->rng_seed = 0;
  o->memory_limit = 0;
  o->backend_options = NULL;
  o->compile_cache = true;
}

/* ---- small helpers ---- */

static void *ex_alloc(const rlx_allocator *al, size_t n, size_t elem) {
  size_t bytes;
  if (!rlx_mul_size(n, elem, &bytes)) return NULL;
  void *p = al->alloc(al->ctx, bytes ? bytes : 1);
  if (p) memset(p, 0, bytes ? bytes : 1);
  return p;
}

static char *ex_strdup(const rlx_allocator *al, const char *s) {
  size_t n = strlen(s);
  char *p = al->alloc(al->ctx, n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

static const char *fmt_shape(const rlx_shape *s, char *buf, size_t cap) {
  rlx_shape_format(s, buf, cap);
  return buf;
}

uint32_t rlx_node_bodies(const rlx_node *n, const rlx_graph **out, uint32_t cap) {
  if (!rlx_op_has(n->op, RLX_PROP_SUBGRAPH)) return 0;
  uint32_t nf, k = 0;
  const rlx_field *f = rlx_op_fields(n->op, &nf);
  for (uint32_t i = 0; i < nf; i++) {
    if (f[i].type != RLX_FT_GRAPH && f[i].type != RLX_FT_OGRAPH) continue;
    const rlx_graph *b = *(rlx_graph *const *)((const char *)&n->attrs + f[i].offset);
    if (!b) continue;
    if (k < cap) out[k] = b;
    k++;
  }
  return k;
}

static const char *leaf_name(const rlx_node *n) {
  const char *s = n->op == RLX_OP_Input ? n->attrs.Input.name : n->attrs.Param.name;
  return s ? s : "";
}

/* ---- the interface of a graph: inputs and params ---- */

typedef struct iface {
  exe_leaf *inputs;
  uint32_t n_inputs;
  exe_leaf *params;
  uint32_t n_params, cap_params;
  rlx_name_map pmap; /* param name -> index while collecting */
} iface;

static void iface_free(iface *f, const rlx_allocator *al) {
  rlx_name_map_free(&f->pmap, al);
  for (uint32_t i = 0; i < f->n_inputs; i++) al->free(al->ctx, f->inputs[i].name);
  for (uint32_t i = 0; i < f->n_params; i++) al->free(al->ctx, f->params[i].name);
  al->free(al->ctx, f->inputs);
  al->free(al->ctx, f->params);
  memset(f, 0, sizeof *f);
}

static rlx_status collect_params(iface *f, const rlx_graph *g, const rlx_allocator *al, unsigned depth) {
  if (depth > MAX_BODY_DEPTH)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s': bodies are nested deeper than %d levels", rlx_graph_name(g),
                      MAX_BODY_DEPTH);
  char a[96], b[96];
  for (rlx_id i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (n->op == RLX_OP_Param) {
      const char *name = leaf_name(n);
      if (!name[0])
        return rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s': Param %%%u has no name; every Param needs one to be set",
                          rlx_graph_name(g), i);
      uint32_t k = rlx_name_map_get(&f->pmap, name);
      if (k != RLX_NAME_MAP_NONE) {
        if (!rlx_shape_equal(&f->params[k].shape, &n->shape))
          return rlx_errorf(RLX_ERR_INVALID_ARG, "param '%s' is declared twice with different shapes: %s and %s", name,
                            fmt_shape(&f->params[k].shape, a, sizeof a), fmt_shape(&n->shape, b, sizeof b));
        continue;
      }
      if (f->n_params == f->cap_params) {
        uint32_t cap = f->cap_params ? 2 * f->cap_params : 8;
        exe_leaf *np = ex_alloc(al, cap, sizeof *np);
        if (!np) return rlx_errorf(RLX_ERR_OOM, "out of memory collecting params");
        if (f->n_params) memcpy(np, f->params, f->n_params * sizeof *np);
        al->free(al->ctx, f->params);
        f->params = np;
        f->cap_params = cap;
      }
      exe_leaf *p = &f->params[f->n_params];
      p->name = ex_strdup(al, name);
      if (!p->name) return rlx_errorf(RLX_ERR_OOM, "out of memory collecting params");
      p->shape = n->shape;
      p->node = RLX_NO_ID;
      if (!rlx_name_map_put(&f->pmap, al, p->name, f->n_params, NULL)) {
        al->free(al->ctx, p->name);
        return rlx_errorf(RLX_ERR_OOM, "out of memory collecting params");
      }
      f->n_params++;
    }
    const rlx_graph *bodies[8];
    uint32_t nb = rlx_node_bodies(n, bodies, 8);
    for (uint32_t k = 0; k < nb && k < 8; k++) RLX_TRY(collect_params(f, bodies[k], al, depth + 1));
  }
  return RLX_OK;
}

/* Inputs of the top graph in node order. Named compiles need unique non-empty names. */
static rlx_status collect_inputs(iface *f, const rlx_graph *g, const rlx_allocator *al, bool positional) {
  rlx_name_map seen = {0};
  rlx_status st = RLX_OK;
  uint32_t n = 0;
  for (rlx_id i = 0; i < rlx_graph_node_count(g); i++) n += rlx_graph_node(g, i)->op == RLX_OP_Input;
  f->inputs = ex_alloc(al, n, sizeof *f->inputs);
  if (!f->inputs) return rlx_errorf(RLX_ERR_OOM, "out of memory collecting inputs");
  for (rlx_id i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    if (nd->op != RLX_OP_Input) continue;
    const char *name = leaf_name(nd);
    if (!positional && !name[0]) {
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s': Input %%%u has no name; inputs are bound by name",
                      rlx_graph_name(g), i);
      break;
    }
    exe_leaf *in = &f->inputs[f->n_inputs++];
    in->name = ex_strdup(al, name);
    if (!in->name) {
      st = rlx_errorf(RLX_ERR_OOM, "out of memory collecting inputs");
      break;
    }
    in->shape = nd->shape;
    in->node = i; /* id in the source graph until mapped */
    if (positional) continue;
    uint32_t k;
    if (!rlx_name_map_put(&seen, al, in->name, f->n_inputs - 1, &k)) {
      st = rlx_errorf(RLX_ERR_OOM, "out of memory collecting inputs");
      break;
    }
    if (k != RLX_NAME_MAP_NONE) {
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s': two Inputs are named '%s' (%%%u and %%%u)", rlx_graph_name(g),
                      name, f->inputs[k].node, i);
      break;
    }
  }
  rlx_name_map_free(&seen, al);
  return st;
}

/* For positional binding: are the Input names usable as keys (non-empty, unique)? */
static bool inputs_have_unique_names(const iface *f, const rlx_allocator *al) {
  rlx_name_map seen = {0};
  bool unique = true;
  for (uint32_t i = 0; i < f->n_inputs && unique; i++) {
    uint32_t k;
    if (!f->inputs[i].name[0])
      unique = false;
    else if (!rlx_name_map_put(&seen, al, f->inputs[i].name, i, &k)) {
      for (uint32_t j = 0; j < i && unique; j++) /* no memory for the map: scan */
        unique = strcmp(f->inputs[j].name, f->inputs[i].name) != 0;
    } else
      unique = k == RLX_NAME_MAP_NONE;
  }
  rlx_name_map_free(&seen, al);
  return unique;
}

/* A copy of `body` whose Inputs are named arg0, arg1, ... (for bodies with unnamed inputs). */
static rlx_status rename_inputs(const rlx_graph *body, const rlx_allocator *al, iface *f, rlx_graph **out) {
  rlx_graph *c;
  RLX_TRY(rlx_graph_clone(body, al, &c));
  uint32_t k = 0;
  for (rlx_id i = 0; i < rlx_graph_node_count(c); i++) {
    rlx_node *nd = (rlx_node *)rlx_graph_node(c, i);
    if (nd->op != RLX_OP_Input) continue;
    char name[32];
    snprintf(name, sizeof name, "arg%u", k);
    char *s = rlx_graph_arena_alloc(c, strlen(name) + 1);
    char *dup = ex_strdup(al, name);
    if (!s || !dup) {
      if (dup) al->free(al->ctx, dup);
      rlx_graph_free(c);
      return rlx_errorf(RLX_ERR_OOM, "out of memory naming body inputs");
    }
    memcpy(s, name, strlen(name) + 1);
    nd->attrs.Input.name = s;
    al->free(al->ctx, f->inputs[k].name);
    f->inputs[k].name = dup;
    k++;
  }
  rlx_graph_leaf_index_rebuild(c); /* the names changed in place */
  *out = c;
  return RLX_OK;
}

/* ---- compile ---- */

void rlx_executable_free(rlx_executable *e) {
  if (!e) return;
  const rlx_allocator *al = &e->al;
  rlx_rt_free_steps(e);
  for (uint32_t i = 0; e->out_host && i < e->n_outputs; i++) al->free(al->ctx, e->out_host[i]);
  al->free(al->ctx, e->out_host);
  al->free(al->ctx, e->outputs);
  al->free(al->ctx, e->out_fresh);
  al->free(al->ctx, e->outs);
  al->free(al->ctx, e->bind_out);
  al->free(al->ctx, e->bind_par);
  iface f = {e->inputs, e->n_inputs, e->params, e->n_params, e->n_params, e->param_map};
  iface_free(&f, al);
  rlx_name_map_free(&e->input_map, al);
  al->free(al->ctx, e->by_pos);
  if (e->cache_hold)
    rlx_cc_release(e->cache_hold); /* the graph is the cache entry's */
  else
    rlx_graph_free(e->graph);
  al->free(al->ctx, e);
}

/* RLX_DISPATCH_REPORT=1 prints the report of every top-level compile to stderr. */
static void maybe_print_report(const rlx_dispatch_report *r, const char *graph, const char *backend) {
  const char *env = getenv("RLX_DISPATCH_REPORT");
  if (!env || !env[0] || strcmp(env, "0") == 0 || r->nodes_before == 0) return;
  char *text = NULL;
  size_t len;
  if (rlx_dispatch_report_format(r, NULL, &text, &len) != RLX_OK) return; /* only on OOM: skip it */
  fprintf(stderr, "rlx: dispatch report for graph '%s' on %s\n%s", graph, backend, text);
  free(text);
}

static rlx_status unknown_backend(const char *name) {
  return rlx_errorf(RLX_ERR_NOT_FOUND, "no backend named '%s' (registered: %s)", name, rlx_backend_names());
}

/* `root` is NULL for a top-level compile; for a body it is the executable whose params the body
 * shares. */
static rlx_status compile_impl(const rlx_graph *g, const rlx_backend *be, const rlx_compile_options *user_opt,
                               bool positional, rlx_executable *root, rlx_dispatch_report *rep_out,
                               rlx_executable **out) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_compile: graph and out must not be NULL");
  *out = NULL;
  rlx_compile_options opt;
  if (user_opt)
    opt = *user_opt;
  else
    rlx_compile_options_init(&opt);
  const char *why = NULL;
  if (be->available && !be->available(&why))
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "backend '%s' is not available on this machine%s%s", be->name,
                      why ? ": " : "", why ? why : "");
  if (opt.backend_options) {
    const rlx_backend_options_header *h = opt.backend_options;
    if (!h->backend || strcmp(h->backend, be->name) != 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "compile: the backend options are for '%s', but the graph is compiled "
                        "for '%s'",
                        h->backend ? h->backend : "(no name)", be->name);
  }

  const rlx_allocator *al = rlx_graph_allocator(g);
  /* compile cache: a hit stands for an identical graph that verified, legalized and simplified */
  rlx_cc_key cc_key;
  bool cc_on = rlx_cc_key_make(g, be, &opt, positional, &cc_key);
  rlx_cc_entry *cc_hit = cc_on ? rlx_cc_lookup(&cc_key) : NULL;
  rlx_status st = cc_hit ? RLX_OK : rlx_verify(g);
  if (st == RLX_ERR_OOM) return st;
  if (st != RLX_OK) return rlx_error_context(st, "compile: the graph does not verify");

  rlx_executable *e = ex_alloc(al, 1, sizeof *e);
  if (!e) {
    rlx_cc_release(cc_hit);
    return rlx_errorf(RLX_ERR_OOM, "out of memory creating an executable");
  }
  e->cache_hold = cc_hit; /* freed with e from here on */
  e->al = *al;
  e->backend = be;
  e->root = root ? root : e;
  rlx_graph *src_copy = NULL, *legal = NULL;
  iface f = {0};
  const rlx_graph *src = g;

  st = collect_inputs(&f, g, al, positional);
  if (st == RLX_OK) st = collect_params(&f, g, al, 0);
  if (st == RLX_OK && positional && !inputs_have_unique_names(&f, al)) {
    st = rename_inputs(g, al, &f, &src_copy);
    if (st == RLX_OK) src = src_copy;
  }
  if (st != RLX_OK) goto fail;

  if (cc_hit) {
    e->graph = rlx_cc_graph(cc_hit);
    e->report = *rlx_cc_report(cc_hit);
    goto pipeline_done;
  }
  uint8_t claimed[RLX_OP_COUNT], staged[RLX_OP_COUNT];
  rlx_backend_claim_set(be, claimed);
  for (int k = 0; k < RLX_OP_COUNT; k++) staged[k] = rlx_backend_host_stages(be, (rlx_op)k);
  e->report.nodes_before = rlx_graph_node_count(g);
  /* Decomposed forms of the kinds the backend claims (LayerNorm, GELU, attention...) become
   * those kinds (src/passes/pattern.c). */
  rlx_graph *fused = NULL;
  st = rlx_pattern_fuse(src, claimed, NULL, &fused);
  if (st != RLX_OK) {
    rlx_error_context(st, "compile for '%s'", be->name);
    goto fail;
  }
  st = rlx_legalize(fused ? fused : src, claimed, staged, &e->report, &legal);
  rlx_graph_free(fused);
  e->report.nodes_after = 0; /* set once the compiled graph exists */
  if (st != RLX_OK) {
    rlx_error_context(st, "compile for '%s'", be->name);
    goto fail;
  }
  for (int k = 0; k < RLX_OP_COUNT; k++)
    if (e->report.path[k] == RLX_PATH_NATIVE && rlx_backend_runtime_controls(be, (rlx_op)k))
      e->report.path[k] = RLX_PATH_RUNTIME;
  st = rlx_simplify(legal, &opt, &e->graph);
  if (st != RLX_OK) {
    rlx_error_context(st, "simplify");
    goto fail;
  }
  if (claimed[RLX_OP_ElementwiseRegion] && !rlx_fuse_disabled()) {
    rlx_graph *fused = NULL;
    st = rlx_fuse_elementwise(e->graph, &fused, NULL);
    if (st != RLX_OK) {
      rlx_error_context(st, "elementwise fusion");
      goto fail;
    }
    rlx_graph_free(e->graph);
    e->graph = fused;
  }
  st = rlx_verify(e->graph);
  if (st == RLX_ERR_OOM) goto fail;
  if (st != RLX_OK) {
    st = rlx_error_context(RLX_ERR_INTERNAL, "compile: the graph after legalization and simplification does not "
                                             "verify (a compiler bug)");
    goto fail;
  }
  e->report.nodes_after = rlx_graph_node_count(e->graph);
  if (cc_on) { /* the entry takes the graph and shares it; NULL: e keeps it */
    e->cache_hold = rlx_cc_insert(&cc_key, e->graph, &e->report);
  }

pipeline_done:

  /* Map the interface onto the compiled graph. */
  for (uint32_t i = 0; i < f.n_inputs; i++) {
    rlx_id id = rlx_graph_find_leaf(e->graph, RLX_OP_Input, f.inputs[i].name);
    if (id != RLX_NO_ID && !rlx_shape_equal(&rlx_graph_node(e->graph, id)->shape, &f.inputs[i].shape)) {
      st = rlx_errorf(RLX_ERR_INTERNAL, "compile: input '%s' changed shape during compilation", f.inputs[i].name);
      goto fail;
    }
    f.inputs[i].node = id;
  }
  for (uint32_t i = 0; i < f.n_params; i++) {
    rlx_id id = rlx_graph_find_leaf(e->graph, RLX_OP_Param, f.params[i].name);
    if (id != RLX_NO_ID && !rlx_shape_equal(&rlx_graph_node(e->graph, id)->shape, &f.params[i].shape)) {
      st = rlx_errorf(RLX_ERR_INTERNAL, "compile: param '%s' changed shape during compilation", f.params[i].name);
      goto fail;
    }
    f.params[i].node = id;
    if (root) { /* a body: the value lives in the root's buffer */
      int rk = rlx_rt_find_param(root, f.params[i].name);
      exe_leaf *rp = rk >= 0 ? &root->params[rk] : NULL;
      if (!rp || !rlx_shape_equal(&rp->shape, &f.params[i].shape)) {
        st = rlx_errorf(RLX_ERR_INVALID_ARG,
                        "body '%s' reads param '%s', which the enclosing graph does not have "
                        "with that shape",
                        rlx_graph_name(g), f.params[i].name);
        goto fail;
      }
      f.params[i].buf = rp->buf;
    }
  }
  e->inputs = f.inputs;
  e->n_inputs = f.n_inputs;
  e->params = f.params;
  e->n_params = f.n_params;
  e->param_map = f.pmap; /* built while collecting: index into params */
  memset(&f, 0, sizeof f);
  for (uint32_t i = 0; i < e->n_inputs; i++) /* positional names may repeat: the first wins, as in a scan */
    if (!rlx_name_map_put(&e->input_map, al, e->inputs[i].name, i, NULL)) {
      rlx_name_map_free(&e->input_map, al); /* lookups scan */
      break;
    }

  e->n_outputs = rlx_graph_output_count(e->graph);
  if (e->n_outputs != rlx_graph_output_count(g)) {
    st = rlx_errorf(RLX_ERR_INTERNAL, "compile: the graph had %u outputs, the compiled graph has %u",
                    rlx_graph_output_count(g), e->n_outputs);
    goto fail;
  }
  e->outputs = ex_alloc(al, e->n_outputs, sizeof *e->outputs);
  e->out_fresh = ex_alloc(al, e->n_outputs, sizeof *e->out_fresh);
  e->out_host = ex_alloc(al, e->n_outputs, sizeof *e->out_host);
  e->outs = ex_alloc(al, e->n_outputs, sizeof *e->outs);
  e->by_pos = ex_alloc(al, e->n_inputs, sizeof *e->by_pos);
  if (!e->outputs || !e->out_fresh || !e->out_host || !e->outs || !e->by_pos) {
    st = rlx_errorf(RLX_ERR_OOM, "out of memory creating an executable");
    goto fail;
  }
  for (uint32_t i = 0; i < e->n_outputs; i++)
    e->outputs[i].shape = rlx_graph_node(e->graph, rlx_graph_outputs(e->graph)[i])->shape;

  st = rlx_rt_build_steps(e, &opt);
  if (st != RLX_OK) goto fail;
  rlx_graph_free(legal);
  rlx_graph_free(src_copy);
  if (rep_out) *rep_out = e->report;
  if (!positional) maybe_print_report(&e->report, rlx_graph_name(g), be->name);
  *out = e;
  return RLX_OK;

fail:
  if (rep_out) *rep_out = e->report;
  if (!positional) {
    /* keep the compile error: the report printer may set its own on failure */
    rlx_status keep = st;
    char *msg = NULL;
    size_t n = strlen(rlx_last_error());
    msg = malloc(n + 1);
    if (msg) memcpy(msg, rlx_last_error(), n + 1);
    maybe_print_report(&e->report, rlx_graph_name(g), be->name);
    if (msg) {
      rlx_errorf(keep, "%s", msg);
      free(msg);
    }
  }
  iface_free(&f, al);
  rlx_graph_free(legal);
  rlx_graph_free(src_copy);
  rlx_executable_free(e);
  return st;
}

static rlx_status compile_named(const rlx_graph *g, const char *backend, const rlx_compile_options *opt,
                                rlx_dispatch_report *report, rlx_executable **out) {
  if (out) *out = NULL;
  if (!backend) backend = "cpu";
  const rlx_backend *be = rlx_backend_find(backend);
  if (!be) return unknown_backend(backend);
  return compile_impl(g, be, opt, false, NULL, report, out);
}

rlx_status rlx_compile(const rlx_graph *g, const char *backend, const rlx_compile_options *opt, rlx_executable **out) {
  return compile_named(g, backend, opt, NULL, out);
}

rlx_status rlx_compile_with_report(const rlx_graph *g, const char *backend, const rlx_compile_options *opt,
                                   rlx_dispatch_report *report, rlx_executable **out) {
  if (report) memset(report, 0, sizeof *report);
  return compile_named(g, backend, opt, report, out);
}

rlx_status rlx_rt_compile_body(const rlx_graph *body, const rlx_backend *be, const rlx_compile_options *opt,
                               rlx_executable *root, rlx_executable **out) {
  return compile_impl(body, be, opt, true, root, NULL, out);
}

rlx_status rlx_rt_compile_positional(const rlx_graph *g, const rlx_backend *be, const rlx_compile_options *opt,
                                     rlx_executable **out) {
  return compile_impl(g, be, opt, true, NULL, NULL, out);
}

/* ---- params ---- */

static int find_leaf(const exe_leaf *v, uint32_t n, const rlx_name_map *m, const char *name) {
  if (m->cap) {
    uint32_t k = rlx_name_map_get(m, name);
    return k == RLX_NAME_MAP_NONE ? -1 : (int)k;
  }
  for (uint32_t i = 0; i < n; i++) /* no map (out of memory when it was built) */
    if (strcmp(v[i].name, name) == 0) return (int)i;
  return -1;
}

int rlx_rt_find_param(const rlx_executable *e, const char *name) {
  return find_leaf(e->params, e->n_params, &e->param_map, name);
}

/* "'a' [2, 3] f32, 'b' [] f32" for the leaves selected by `pick` (NULL = all). */
static char *list_leaves(const exe_leaf *v, uint32_t n, const bool *pick) {
  rlx_strbuf b;
  rlx_sb_init(&b, NULL);
  bool first = true;
  char s[96];
  for (uint32_t i = 0; i < n; i++) {
    if (pick && !pick[i]) continue;
    rlx_sb_printf(&b, "%s'%s' %s", first ? "" : ", ", v[i].name, fmt_shape(&v[i].shape, s, sizeof s));
    first = false;
  }
  if (first) rlx_sb_puts(&b, "(none)");
  char *out = NULL;
  size_t len;
  if (rlx_sb_finish(&b, &out, &len) != RLX_OK) return NULL;
  return out;
}

static rlx_status check_tensor(const char *what, const char *name, const rlx_shape *want, const rlx_tensor *t) {
  char a[96], b[96];
  if (!t) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s '%s': no tensor given", what, name);
  if (!rlx_shape_equal(want, &t->shape))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s '%s': expected %s, given %s", what, name, fmt_shape(want, a, sizeof a),
                      fmt_shape(&t->shape, b, sizeof b));
  size_t nb;
  if (rlx_shape_nbytes(want, &nb) != RLX_OK)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s '%s': shape %s has no static size", what, name,
                      fmt_shape(want, a, sizeof a));
  if (nb && !t->data) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s '%s': the tensor has no data", what, name);
  return RLX_OK;
}

static rlx_status no_such_param(const rlx_executable *e, const char *name) {
  char *list = list_leaves(e->params, e->n_params, NULL);
  rlx_status st =
      rlx_errorf(RLX_ERR_INVALID_ARG, "no param named '%s'; the graph's params are: %s", name, list ? list : "?");
  free(list);
  return st;
}

rlx_status rlx_executable_set_param(rlx_executable *e, const char *name, const rlx_tensor *value) {
  if (!e || !name)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_set_param: executable and name must not be NULL");
  int k = find_leaf(e->params, e->n_params, &e->param_map, name);
  if (k < 0) return no_such_param(e, name);
  exe_leaf *p = &e->params[k];
  RLX_TRY(check_tensor("param", name, &p->shape, value));
  RLX_TRY(rlx_rt_upload(e, p->buf, value->data, p->buf->bytes, true));
  p->buf->version++;
  p->set = true;
  return RLX_OK;
}

rlx_status rlx_executable_get_param(rlx_executable *e, const char *name, rlx_tensor *value) {
  if (!e || !name || !value)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_get_param: executable, name and value must not be NULL");
  int k = find_leaf(e->params, e->n_params, &e->param_map, name);
  if (k < 0) return no_such_param(e, name);
  exe_leaf *p = &e->params[k];
  RLX_TRY(check_tensor("param", name, &p->shape, value));
  if (!p->set) return rlx_errorf(RLX_ERR_INVALID_ARG, "param '%s' has no value yet (set it first)", name);
  return rlx_rt_download(e, p->buf, value->data, p->buf->bytes, true);
}

rlx_status rlx_executable_bind_output_to_param(rlx_executable *e, uint32_t output, const char *param) {
  if (!e || !param)
    return rlx_errorf(RLX_ERR_INVALID_ARG,
                      "rlx_executable_bind_output_to_param: executable and param must not be NULL");
  if (output >= e->n_outputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "output %u does not exist: the graph has %u outputs", output, e->n_outputs);
  int k = find_leaf(e->params, e->n_params, &e->param_map, param);
  if (k < 0) return no_such_param(e, param);
  char a[96], b[96];
  if (!rlx_shape_equal(&e->outputs[output].shape, &e->params[k].shape))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "output %u is %s but param '%s' is %s: they cannot be bound", output,
                      fmt_shape(&e->outputs[output].shape, a, sizeof a), param,
                      fmt_shape(&e->params[k].shape, b, sizeof b));
  for (uint32_t i = 0; i < e->n_bind; i++)
    if (e->bind_out[i] == output || e->bind_par[i] == &e->params[k]) {
      e->bind_out[i] = output;
      e->bind_par[i] = &e->params[k];
      return RLX_OK;
    }
  uint32_t *bo = ex_alloc(&e->al, e->n_bind + 1, sizeof *bo);
  exe_leaf **bp = ex_alloc(&e->al, e->n_bind + 1, sizeof *bp);
  if (!bo || !bp) {
    e->al.free(e->al.ctx, bo);
    e->al.free(e->al.ctx, bp);
    return rlx_errorf(RLX_ERR_OOM, "out of memory binding an output");
  }
  if (e->n_bind) {
    memcpy(bo, e->bind_out, e->n_bind * sizeof *bo);
    memcpy(bp, e->bind_par, e->n_bind * sizeof *bp);
  }
  e->al.free(e->al.ctx, e->bind_out);
  e->al.free(e->al.ctx, e->bind_par);
  bo[e->n_bind] = output;
  bp[e->n_bind] = &e->params[k];
  e->bind_out = bo;
  e->bind_par = bp;
  e->n_bind++;
  return RLX_OK;
}

/* ---- inputs and runs ---- */

static rlx_status set_input_at(rlx_executable *e, uint32_t k, const rlx_tensor *value) {
  exe_leaf *in = &e->inputs[k];
  RLX_TRY(check_tensor("input", in->name, &in->shape, value));
  if (in->buf) RLX_TRY(rlx_rt_upload(e, in->buf, value->data, in->buf->bytes, false));
  in->set = true;
  return RLX_OK;
}

rlx_status rlx_executable_set_input(rlx_executable *e, const char *name, const rlx_tensor *value) {
  if (!e || !name)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_set_input: executable and name must not be NULL");
  int k = find_leaf(e->inputs, e->n_inputs, &e->input_map, name);
  if (k < 0) {
    char *list = list_leaves(e->inputs, e->n_inputs, NULL);
    rlx_status st =
        rlx_errorf(RLX_ERR_INVALID_ARG, "unknown input '%s'; the graph's inputs are: %s", name, list ? list : "?");
    free(list);
    return st;
  }
  return set_input_at(e, (uint32_t)k, value);
}

static rlx_status check_all_set(const rlx_executable *e, const exe_leaf *v, uint32_t n, const char *what,
                                const char *how) {
  uint32_t unset = 0;
  for (uint32_t i = 0; i < n; i++) unset += !v[i].set;
  if (!unset) return RLX_OK;
  bool *pick = calloc(n, sizeof *pick);
  if (!pick) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  for (uint32_t i = 0; i < n; i++) pick[i] = !v[i].set;
  char *list = list_leaves(v, n, pick);
  free(pick);
  rlx_status st = rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s': %u %s%s not set: %s (%s)", rlx_graph_name(e->graph),
                             unset, what, unset == 1 ? " is" : "s are", list ? list : "?", how);
  free(list);
  return st;
}

rlx_status rlx_executable_run_resident(rlx_executable *e) {
  if (!e) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_run_resident: executable must not be NULL");
  RLX_TRY(check_all_set(e, e->inputs, e->n_inputs, "input", "every input must be given once"));
  if (e->root == e)
    RLX_TRY(check_all_set(e, e->params, e->n_params, "param",
                          "set every param with rlx_executable_set_param "
                          "before running"));
  for (uint32_t i = 0; i < e->n_outputs; i++) e->out_fresh[i] = false;
  e->ran = false;
  RLX_TRY(rlx_rt_run_steps(e));
  e->ran = true;
  for (uint32_t i = 0; i < e->n_bind; i++) {
    rt_buf *dst = e->bind_par[i]->buf, *src = e->outs[e->bind_out[i]];
    if (dst != src) RLX_TRY(rlx_rt_device_copy(e, dst, src, dst->bytes));
    dst->version++;
    e->bind_par[i]->set = true;
  }
  return RLX_OK;
}

rlx_status rlx_executable_read_output(rlx_executable *e, uint32_t i, const rlx_tensor **out) {
  if (!e || !out)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_read_output: executable and out must not be NULL");
  if (i >= e->n_outputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "output %u does not exist: the graph has %u outputs", i, e->n_outputs);
  if (!e->ran) return rlx_errorf(RLX_ERR_INVALID_ARG, "output %u: the executable has not run yet", i);
  if (!e->out_fresh[i]) {
    rt_buf *b = e->outs[i];
    if (e->backend->host_memory) {
      e->outputs[i].data = b->h;
    } else {
      if (!e->out_host[i]) {
        e->out_host[i] = e->al.alloc(e->al.ctx, b->bytes ? b->bytes : 1);
        if (!e->out_host[i]) return rlx_errorf(RLX_ERR_OOM, "out of memory for output %u (%zu bytes)", i, b->bytes);
      }
      RLX_TRY(rlx_rt_download(e, b, e->out_host[i], b->bytes, false));
      e->outputs[i].data = e->out_host[i];
    }
    e->out_fresh[i] = true;
  }
  *out = &e->outputs[i];
  return RLX_OK;
}

static rlx_status run_and_read(rlx_executable *e, const rlx_tensor **outputs, uint32_t *n_outputs) {
  RLX_TRY(rlx_executable_run_resident(e));
  const rlx_tensor *t;
  for (uint32_t i = 0; i < e->n_outputs; i++) RLX_TRY(rlx_executable_read_output(e, i, &t));
  if (outputs) *outputs = e->outputs;
  if (n_outputs) *n_outputs = e->n_outputs;
  return RLX_OK;
}

rlx_status rlx_executable_run(rlx_executable *e, const rlx_named_tensor *inputs, uint32_t n_inputs,
                              const rlx_tensor **outputs, uint32_t *n_outputs) {
  if (!e || (n_inputs && !inputs))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_run: executable and inputs must not be NULL");
  for (uint32_t i = 0; i < e->n_inputs; i++) e->by_pos[i] = NULL;
  for (uint32_t j = 0; j < n_inputs; j++) {
    const char *name = inputs[j].name;
    if (!name) return rlx_errorf(RLX_ERR_INVALID_ARG, "input %u has no name", j);
    int k = find_leaf(e->inputs, e->n_inputs, &e->input_map, name);
    if (k < 0) {
      char *list = list_leaves(e->inputs, e->n_inputs, NULL);
      rlx_status st =
          rlx_errorf(RLX_ERR_INVALID_ARG, "unknown input '%s'; the graph's inputs are: %s", name, list ? list : "?");
      free(list);
      return st;
    }
    if (e->by_pos[k]) return rlx_errorf(RLX_ERR_INVALID_ARG, "input '%s' is given twice", name);
    RLX_TRY(check_tensor("input", name, &e->inputs[k].shape, &inputs[j].tensor));
    e->by_pos[k] = &inputs[j].tensor;
  }
  uint32_t missing = 0;
  for (uint32_t i = 0; i < e->n_inputs; i++) missing += e->by_pos[i] == NULL;
  if (missing) {
    bool *pick = calloc(e->n_inputs, sizeof *pick);
    if (!pick) return rlx_errorf(RLX_ERR_OOM, "out of memory");
    for (uint32_t i = 0; i < e->n_inputs; i++) pick[i] = e->by_pos[i] == NULL;
    char *list = list_leaves(e->inputs, e->n_inputs, pick);
    free(pick);
    rlx_status st = rlx_errorf(RLX_ERR_INVALID_ARG, "missing input%s: %s (every input must be given once)",
                               missing == 1 ? "" : "s", list ? list : "?");
    free(list);
    return st;
  }
  for (uint32_t i = 0; i < e->n_inputs; i++) RLX_TRY(set_input_at(e, i, e->by_pos[i]));
  return run_and_read(e, outputs, n_outputs);
}

rlx_status rlx_executable_run_positional(rlx_executable *e, const rlx_tensor *inputs, uint32_t n_inputs,
                                         const rlx_tensor **outputs, uint32_t *n_outputs) {
  if (!e || (n_inputs && !inputs))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_executable_run_positional: executable and inputs must not be NULL");
  if (n_inputs != e->n_inputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "graph '%s' takes %u inputs, %u given", rlx_graph_name(e->graph),
                      e->n_inputs, n_inputs);
  for (uint32_t i = 0; i < n_inputs; i++) {
    rlx_status st = set_input_at(e, i, &inputs[i]);
    if (st != RLX_OK) return rlx_error_context(st, "graph '%s', input %u", rlx_graph_name(e->graph), i);
  }
  return run_and_read(e, outputs, n_outputs);
}

rlx_status rlx_rt_run_body(rlx_executable *body, const rlx_tensor *inputs, uint32_t n_inputs, rlx_tensor *outputs,
                           uint32_t n_outputs) {
  const rlx_tensor *outs;
  uint32_t n_outs;
  RLX_TRY(rlx_executable_run_positional(body, inputs, n_inputs, &outs, &n_outs));
  if (n_outs != n_outputs)
    return rlx_errorf(RLX_ERR_INTERNAL, "body '%s' has %u outputs but its caller expects %u",
                      rlx_graph_name(body->graph), n_outs, n_outputs);
  for (uint32_t i = 0; i < n_outs; i++) {
    size_t nb = body->outs[i]->bytes;
    if (nb && !outputs[i].data)
      return rlx_errorf(RLX_ERR_INTERNAL, "body '%s': no buffer for output %u", rlx_graph_name(body->graph), i);
    if (nb) memcpy(outputs[i].data, outs[i].data, nb);
    outputs[i].shape = outs[i].shape;
  }
  return RLX_OK;
}

void rlx_executable_transfer_stats(const rlx_executable *e, rlx_transfer_stats *out) {
  if (!out) return;
  if (!e) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = e->root->stats;
}

/* ---- accessors ---- */

const rlx_dispatch_report *rlx_executable_report(const rlx_executable *e) { return e ? &e->report : NULL; }
const rlx_graph *rlx_executable_graph(const rlx_executable *e) { return e ? e->graph : NULL; }
uint32_t rlx_executable_input_count(const rlx_executable *e) { return e ? e->n_inputs : 0; }
const char *rlx_executable_input_name(const rlx_executable *e, uint32_t i) {
  return e && i < e->n_inputs ? e->inputs[i].name : NULL;
}
const rlx_shape *rlx_executable_input_shape(const rlx_executable *e, uint32_t i) {
  return e && i < e->n_inputs ? &e->inputs[i].shape : NULL;
}
uint32_t rlx_executable_param_count(const rlx_executable *e) { return e ? e->n_params : 0; }
const char *rlx_executable_param_name(const rlx_executable *e, uint32_t i) {
  return e && i < e->n_params ? e->params[i].name : NULL;
}
const rlx_shape *rlx_executable_param_shape(const rlx_executable *e, uint32_t i) {
  return e && i < e->n_params ? &e->params[i].shape : NULL;
}
uint32_t rlx_executable_output_count(const rlx_executable *e) { return e ? e->n_outputs : 0; }
