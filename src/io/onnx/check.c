/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Validation of an unpacked ONNX model before import: names, value types, dims, tensors, dangling
 * inputs, duplicate outputs, subgraph nesting depth, and a topological order of every graph's
 * nodes (ONNX allows unsorted nodes; a cycle is an error naming a node on it). Subgraph bodies
 * may read values of enclosing graphs: those "free variables" are computed here and count as
 * inputs of the node that owns the body, both for sorting and for import (captures). */
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

static const char *str(const char *s) { return s ? s : ""; }

const char *oi_node_label(const Onnx__NodeProto *np, char *buf, size_t cap) {
  const char *op = str(np->op_type);
  if (np->name && np->name[0])
    snprintf(buf, cap, "node \"%.200s\" (%.100s)", np->name, op);
  else if (np->n_output && np->output[0][0])
    snprintf(buf, cap, "node (%.100s) with output \"%.200s\"", op, np->output[0]);
  else
    snprintf(buf, cap, "node (%.100s) without name", op);
  return buf;
}

Onnx__AttributeProto__AttributeType oi_attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return a->type;
  if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
  if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
  if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
  if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
  if (a->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
  if (a->tp) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
  if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
  if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  if (a->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
  if (a->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
  if (a->n_sparse_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS;
  if (a->n_type_protos) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
  return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* Names visible from a graph: its own definitions, then the enclosing graphs'. */
typedef struct defs {
  oi_map names; /* name -> producing node index + 1, or 0 for inputs / initializers */
  const struct defs *parent;
} defs;

typedef struct chk {
  const rlx_allocator *al;
  oi_model_info *info;
} chk;

static bool outer_has(const defs *d, const char *name) {
  for (; d; d = d->parent)
    if (oi_map_get(&d->names, name, NULL)) return true;
  return false;
}

static rlx_status check_name(const char *s, const char *what, const char *where) {
  if (!s || !s[0]) return rlx_errorf(RLX_ERR_FORMAT, "%s: %s is empty", where, what);
  size_t n = strlen(s);
  if (n > RLX_ONNX_MAX_NAME_BYTES)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: %s is %zu bytes long; the limit is %d", where, what, n,
                      RLX_ONNX_MAX_NAME_BYTES);
  return RLX_OK;
}

/* Value info: types are optional except where `need_type`; a present tensor type needs a
 * defined elem_type and dims >= 0. */
static rlx_status check_value_info(const Onnx__ValueInfoProto *v, bool need_type, const char *role, const char *where) {
  char what[300];
  snprintf(what, sizeof what, "%s: %s \"%.200s\"", where, role, str(v->name));
  RLX_TRY(check_name(v->name, "field name", what));
  const Onnx__TypeProto *tp = v->type;
  if (!tp) {
    if (need_type) return rlx_errorf(RLX_ERR_FORMAT, "%s: field type is missing", what);
    return RLX_OK;
  }
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET && need_type)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field type holds no type", what);
    return RLX_OK; /* sequence / map / optional / sparse: reported as unsupported at import */
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  if (!tt->has_elem_type || tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: field type.tensor_type.elem_type is %s", what,
                      tt->has_elem_type ? "UNDEFINED" : "missing");
  if (tt->shape)
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
      const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value < 0)
        return rlx_errorf(RLX_ERR_FORMAT, "%s: field type.tensor_type.shape.dim[%zu] is %lld; dims must be >= 0", what,
                          i, (long long)d->dim_value);
      if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        RLX_TRY(check_name(d->dim_param, "a dim_param", what));
    }
  return RLX_OK;
}

static rlx_status check_tensor(const Onnx__TensorProto *t, const char *what) {
  rlx_shape s;
  rlx_status st = oi_tensor_check(t, what, &s);
  return st == RLX_ERR_UNSUPPORTED ? RLX_OK : st; /* gaps are collected during import */
}

static rlx_status check_graph(chk *k, const Onnx__GraphProto *g, uint32_t depth, const defs *outer, const char *where,
                              uint32_t *index_out);

static rlx_status push_dep(chk *k, const char *label, const char *name, const char ***deps, uint32_t *n_deps,
                           uint32_t *cap_deps) {
  if (*n_deps == *cap_deps) {
    uint32_t cap = *cap_deps ? *cap_deps * 2 : 8;
    const char **nd = k->al->alloc(k->al->ctx, cap * sizeof *nd);
    if (!nd) return rlx_errorf(RLX_ERR_OOM, "out of memory checking %s", label);
    if (*n_deps) memcpy(nd, *deps, *n_deps * sizeof *nd);
    k->al->free(k->al->ctx, *deps);
    *deps = nd;
    *cap_deps = cap;
  }
  (*deps)[(*n_deps)++] = name;
  return RLX_OK;
}

/* Gradient (domain ai.onnx.preview.training) names values in its attributes xs, zs and y: they
 * are read like inputs, so the node is ordered after their producers. */
static rlx_status gradient_deps(chk *k, const Onnx__NodeProto *n, const char *label, const char ***deps,
                                uint32_t *n_deps, uint32_t *cap_deps) {
  if (!n->domain || strcmp(n->domain, OI_TRAINING_DOMAIN) != 0 || strcmp(str(n->op_type), "Gradient") != 0)
    return RLX_OK;
  for (size_t a = 0; a < n->n_attribute; a++) {
    const Onnx__AttributeProto *at = n->attribute[a];
    const char *an = str(at->name);
    bool one = strcmp(an, "y") == 0;
    if (!one && strcmp(an, "xs") != 0 && strcmp(an, "zs") != 0) continue;
    size_t cnt = one ? (at->has_s ? 1 : 0) : at->n_strings;
    for (size_t i = 0; i < cnt; i++) {
      const ProtobufCBinaryData *b = one ? &at->s : &at->strings[i];
      if (!b->len || b->len > RLX_ONNX_MAX_NAME_BYTES || memchr(b->data, 0, b->len))
        return rlx_errorf(RLX_ERR_FORMAT, "%s: attribute %s names an empty, overlong or NUL-holding value", label, an);
      char *name = rlx_arena_strndup(&k->info->strings, (const char *)b->data, b->len);
      if (!name) return rlx_errorf(RLX_ERR_OOM, "out of memory checking %s", label);
      RLX_TRY(push_dep(k, label, name, deps, n_deps, cap_deps));
    }
  }
  return RLX_OK;
}

/* Collects the free variables of node n's bodies (and the values a Gradient node names) into
 * `deps`. */
static rlx_status check_node_attrs(chk *k, const Onnx__NodeProto *n, uint32_t depth, const defs *scope,
                                   const char *label, const char ***deps, uint32_t *n_deps, uint32_t *cap_deps) {
  RLX_TRY(gradient_deps(k, n, label, deps, n_deps, cap_deps));
  for (size_t a = 0; a < n->n_attribute; a++) {
    const Onnx__AttributeProto *at = n->attribute[a];
    char where[1024];
    if (snprintf(where, sizeof where, "%s: attribute #%zu", label, a) < 0) where[0] = 0;
    RLX_TRY(check_name(at->name, "field name", where));
    if (snprintf(where, sizeof where, "%s: attribute \"%.100s\"", label, at->name) < 0) where[0] = 0;
    Onnx__AttributeProto__AttributeType t = oi_attr_type(at);
    if (t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED && !(at->ref_attr_name && at->ref_attr_name[0]))
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field type is UNDEFINED and no value is set", where);
    if (at->t) RLX_TRY(check_tensor(at->t, where));
    for (size_t i = 0; i < at->n_tensors; i++) RLX_TRY(check_tensor(at->tensors[i], where));
    const Onnx__GraphProto *bodies[1];
    size_t nb = 0;
    if (at->g) bodies[nb++] = at->g;
    for (size_t i = 0; i < nb + at->n_graphs; i++) {
      const Onnx__GraphProto *body = i < nb ? bodies[i] : at->graphs[i - nb];
      uint32_t idx;
      RLX_TRY(check_graph(k, body, depth + 1, scope, where, &idx));
      const oi_graph_info *gi = &k->info->graphs[idx];
      for (uint32_t f = 0; f < gi->n_free; f++) RLX_TRY(push_dep(k, label, gi->free[f], deps, n_deps, cap_deps));
    }
  }
  return RLX_OK;
}

typedef struct edge_list {
  uint32_t *from, *to;
  uint32_t n, cap;
} edge_list;

static rlx_status add_edge(chk *k, edge_list *e, uint32_t from, uint32_t to) {
  if (e->n == e->cap) {
    uint32_t cap = e->cap ? e->cap * 2 : 64;
    if (cap < e->cap) return rlx_errorf(RLX_ERR_OVERFLOW, "too many node dependencies");
    uint32_t *f = k->al->alloc(k->al->ctx, (size_t)cap * sizeof *f),
             *t = k->al->alloc(k->al->ctx, (size_t)cap * sizeof *t);
    if (!f || !t) {
      k->al->free(k->al->ctx, f);
      k->al->free(k->al->ctx, t);
      return rlx_errorf(RLX_ERR_OOM, "out of memory sorting nodes");
    }
    if (e->n) {
      memcpy(f, e->from, e->n * sizeof *f);
      memcpy(t, e->to, e->n * sizeof *t);
    }
    k->al->free(k->al->ctx, e->from);
    k->al->free(k->al->ctx, e->to);
    e->from = f;
    e->to = t;
    e->cap = cap;
  }
  e->from[e->n] = from;
  e->to[e->n] = to;
  e->n++;
  return RLX_OK;
}

static rlx_status register_graph(chk *k, const Onnx__GraphProto *g, uint32_t depth, uint32_t *index) {
  oi_model_info *info = k->info;
  if (oi_map_get(&info->by_graph, g, NULL))
    return rlx_errorf(RLX_ERR_FORMAT, "graph \"%s\" appears twice in the model", str(g->name));
  if (info->n_graphs == info->cap_graphs) {
    uint32_t cap = info->cap_graphs ? info->cap_graphs * 2 : 8;
    oi_graph_info *ng = k->al->alloc(k->al->ctx, (size_t)cap * sizeof *ng);
    if (!ng) return rlx_errorf(RLX_ERR_OOM, "out of memory checking the model");
    if (info->n_graphs) memcpy(ng, info->graphs, info->n_graphs * sizeof *ng);
    k->al->free(k->al->ctx, info->graphs);
    info->graphs = ng;
    info->cap_graphs = cap;
  }
  *index = info->n_graphs++;
  memset(&info->graphs[*index], 0, sizeof info->graphs[*index]);
  info->graphs[*index].g = g;
  info->graphs[*index].depth = depth;
  return oi_map_put(&info->by_graph, g, *index);
}

static rlx_status check_graph_body(chk *k, const Onnx__GraphProto *g, uint32_t depth, const defs *outer,
                                   const char *where, uint32_t gi, defs *local, oi_map *free_seen, edge_list *edges,
                                   uint32_t **indeg_out) {
  const rlx_allocator *al = k->al;
  bool top = depth == 0;
  char what[1400];
  /* initializers, then inputs, then node outputs */
  for (size_t i = 0; i < g->n_initializer; i++) {
    const Onnx__TensorProto *t = g->initializer[i];
    snprintf(what, sizeof what, "%s: initializer #%zu", where, i);
    RLX_TRY(check_name(t->name, "field name", what));
    snprintf(what, sizeof what, "%s: initializer \"%.200s\"", where, t->name);
    if (oi_map_get(&local->names, t->name, NULL))
      return rlx_errorf(RLX_ERR_FORMAT, "%s: duplicate initializer name", what);
    RLX_TRY(check_tensor(t, what));
    RLX_TRY(oi_map_put(&local->names, t->name, 0));
  }
  oi_map inputs;
  oi_map_init(&inputs, al, false);
  rlx_status s = RLX_OK;
  for (size_t i = 0; i < g->n_input && s == RLX_OK; i++) {
    const Onnx__ValueInfoProto *v = g->input[i];
    bool is_init = v->name && oi_map_get(&local->names, v->name, NULL);
    s = check_value_info(v, top && !is_init, "input", where);
    if (s == RLX_OK && oi_map_get(&inputs, v->name, NULL))
      s = rlx_errorf(RLX_ERR_FORMAT, "%s: input \"%s\" is listed twice", where, v->name);
    if (s == RLX_OK) s = oi_map_put(&inputs, v->name, 1);
    if (s == RLX_OK && !is_init) s = oi_map_put(&local->names, v->name, 0);
  }
  oi_map_free(&inputs);
  RLX_TRY(s);
  for (size_t i = 0; i < g->n_value_info; i++) RLX_TRY(check_value_info(g->value_info[i], false, "value_info", where));
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    char label[400];
    oi_node_label(n, label, sizeof label);
    snprintf(what, sizeof what, "%s: %s", where, label);
    RLX_TRY(check_name(n->op_type, "field op_type", what));
    if (n->name && strlen(n->name) > RLX_ONNX_MAX_NAME_BYTES)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field name is longer than %d bytes", what, RLX_ONNX_MAX_NAME_BYTES);
    if (n->domain && strlen(n->domain) > RLX_ONNX_MAX_NAME_BYTES)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field domain is longer than %d bytes", what, RLX_ONNX_MAX_NAME_BYTES);
    if (n->n_input > OI_MAX_NODE_IO || n->n_output > OI_MAX_NODE_IO)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: %zu inputs / %zu outputs exceed the limit of %u", what, n->n_input,
                        n->n_output, OI_MAX_NODE_IO);
    for (size_t j = 0; j < n->n_input; j++)
      if (strlen(n->input[j]) > RLX_ONNX_MAX_NAME_BYTES)
        return rlx_errorf(RLX_ERR_FORMAT, "%s: input[%zu] is longer than %d bytes", what, j, RLX_ONNX_MAX_NAME_BYTES);
    for (size_t j = 0; j < n->n_output; j++) {
      const char *o = n->output[j];
      if (!o[0]) continue; /* an optional output left out */
      if (strlen(o) > RLX_ONNX_MAX_NAME_BYTES)
        return rlx_errorf(RLX_ERR_FORMAT, "%s: output[%zu] is longer than %d bytes", what, j, RLX_ONNX_MAX_NAME_BYTES);
      uint64_t prev;
      if (oi_map_get(&local->names, o, &prev)) {
        if (prev == 0)
          return rlx_errorf(RLX_ERR_FORMAT, "%s: output[%zu] \"%s\" redefines a graph input or initializer", what, j,
                            o);
        char other[400];
        return rlx_errorf(RLX_ERR_FORMAT, "%s: output[%zu] \"%s\" is also produced by %s (duplicate output)", what, j,
                          o, oi_node_label(g->node[prev - 1], other, sizeof other));
      }
      RLX_TRY(oi_map_put(&local->names, o, i + 1));
    }
  }
  /* dependencies */
  size_t nn = g->n_node;
  uint32_t *indeg = al->alloc(al->ctx, (nn ? nn : 1) * sizeof *indeg);
  if (!indeg) return rlx_errorf(RLX_ERR_OOM, "out of memory checking %s", where);
  memset(indeg, 0, (nn ? nn : 1) * sizeof *indeg);
  *indeg_out = indeg;
  oi_graph_info *info = &k->info->graphs[gi];
  const char **deps = NULL;
  uint32_t n_deps = 0, cap_deps = 0;
  const char **frees = NULL;
  uint32_t n_free = 0, cap_free = 0;
  for (size_t i = 0; i < nn && s == RLX_OK; i++) {
    const Onnx__NodeProto *n = g->node[i];
    char label[400];
    oi_node_label(n, label, sizeof label);
    snprintf(what, sizeof what, "%s: %s", where, label);
    n_deps = 0;
    s = check_node_attrs(k, n, depth, local, what, &deps, &n_deps, &cap_deps);
    for (size_t j = 0; j < n->n_input + n_deps && s == RLX_OK; j++) {
      bool implicit = j >= n->n_input;
      const char *name = implicit ? deps[j - n->n_input] : n->input[j];
      if (!name[0]) continue;
      s = oi_map_put(&k->info->used, name, 1);
      if (s) break;
      uint64_t prod;
      if (oi_map_get(&local->names, name, &prod)) {
        if (prod) s = add_edge(k, edges, (uint32_t)(prod - 1), (uint32_t)i);
        if (s == RLX_OK && prod) indeg[i]++;
        continue;
      }
      if (outer_has(outer, name)) {
        if (!oi_map_get(free_seen, name, NULL)) {
          s = oi_map_put(free_seen, name, 1);
          if (s == RLX_OK && n_free == cap_free) {
            uint32_t cap = cap_free ? cap_free * 2 : 8;
            const char **nf = al->alloc(al->ctx, cap * sizeof *nf);
            if (!nf)
              s = rlx_errorf(RLX_ERR_OOM, "out of memory checking %s", where);
            else {
              if (n_free) memcpy(nf, frees, n_free * sizeof *nf);
              al->free(al->ctx, frees);
              frees = nf;
              cap_free = cap;
            }
          }
          if (s == RLX_OK) frees[n_free++] = name;
        }
        continue;
      }
      if (implicit)
        s = rlx_errorf(RLX_ERR_FORMAT, "%s: a body reads \"%s\", which no node, graph input or initializer defines",
                       what, name);
      else
        s = rlx_errorf(RLX_ERR_FORMAT,
                       "%s: input[%zu] \"%s\" is not produced by any node, graph input or initializer (dangling input)",
                       what, j, name);
    }
  }
  al->free(al->ctx, deps);
  /* graph outputs: the model's graph lists each value once (a repeated output would give two
   * results of one name, and the caller could not tell which it binds); a body may repeat one
   * (a Loop value that is both carried and scanned) */
  oi_map outs;
  oi_map_init(&outs, al, false);
  for (size_t i = 0; i < g->n_output && s == RLX_OK; i++) {
    const Onnx__ValueInfoProto *v = g->output[i];
    s = check_value_info(v, false, "output", where); /* output types are optional: the import computes them */
    if (s) break;
    uint64_t first = 0;
    if (depth == 0 && oi_map_get(&outs, v->name, &first)) {
      s = rlx_errorf(RLX_ERR_FORMAT,
                     "%s: output[%zu] \"%s\" repeats output[%llu]; each graph output must be listed "
                     "once",
                     where, i, v->name, (unsigned long long)first);
      break;
    }
    s = oi_map_put(&outs, v->name, i);
    if (s) break;
    s = oi_map_put(&k->info->used, v->name, 1);
    if (s) break;
    if (oi_map_get(&local->names, v->name, NULL)) continue;
    if (outer_has(outer, v->name)) {
      if (!oi_map_get(free_seen, v->name, NULL)) {
        s = oi_map_put(free_seen, v->name, 1);
        if (s == RLX_OK && n_free == cap_free) {
          uint32_t cap = cap_free ? cap_free * 2 : 8;
          const char **nf = al->alloc(al->ctx, cap * sizeof *nf);
          if (!nf)
            s = rlx_errorf(RLX_ERR_OOM, "out of memory checking %s", where);
          else {
            if (n_free) memcpy(nf, frees, n_free * sizeof *nf);
            al->free(al->ctx, frees);
            frees = nf;
            cap_free = cap;
          }
        }
        if (s == RLX_OK) frees[n_free++] = v->name;
      }
      continue;
    }
    s = rlx_errorf(RLX_ERR_FORMAT, "%s: output \"%s\" is not produced by any node, graph input or initializer", where,
                   v->name);
  }
  oi_map_free(&outs);
  info = &k->info->graphs[gi]; /* the array may have moved while checking bodies */
  info->free = frees;
  info->n_free = n_free;
  return s;
}

static rlx_status check_graph(chk *k, const Onnx__GraphProto *g, uint32_t depth, const defs *outer, const char *where,
                              uint32_t *index_out) {
  if (depth > RLX_ONNX_MAX_GRAPH_DEPTH)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: subgraph \"%s\" is nested %u levels deep; the limit is %d", where,
                      str(g->name), depth, RLX_ONNX_MAX_GRAPH_DEPTH);
  uint32_t gi = 0;
  RLX_TRY(register_graph(k, g, depth, &gi));
  *index_out = gi;
  char gwhere[800];
  if (depth == 0)
    snprintf(gwhere, sizeof gwhere, "graph \"%.200s\"", str(g->name));
  else
    snprintf(gwhere, sizeof gwhere, "%.600s: body \"%.150s\"", where, str(g->name));
  defs local = {{0}, outer};
  oi_map_init(&local.names, k->al, false);
  oi_map free_seen;
  oi_map_init(&free_seen, k->al, false);
  edge_list edges = {0};
  uint32_t *indeg = NULL;
  rlx_status s = check_graph_body(k, g, depth, outer, gwhere, gi, &local, &free_seen, &edges, &indeg);
  /* Kahn's algorithm, seeded and continued in node order so sorted graphs keep their order. */
  size_t nn = g->n_node;
  uint32_t *order = NULL, *start = NULL, *adj = NULL, *queue = NULL;
  if (s == RLX_OK) {
    order = k->al->alloc(k->al->ctx, (nn ? nn : 1) * sizeof *order);
    start = k->al->alloc(k->al->ctx, (nn + 1) * sizeof *start);
    adj = k->al->alloc(k->al->ctx, (edges.n ? edges.n : 1) * sizeof *adj);
    queue = k->al->alloc(k->al->ctx, (nn ? nn : 1) * sizeof *queue);
    if (!order || !start || !adj || !queue) s = rlx_errorf(RLX_ERR_OOM, "out of memory sorting %s", gwhere);
  }
  if (s == RLX_OK) {
    memset(start, 0, (nn + 1) * sizeof *start);
    for (uint32_t e = 0; e < edges.n; e++) start[edges.from[e] + 1]++;
    for (size_t i = 0; i < nn; i++) start[i + 1] += start[i];
    for (uint32_t e = 0; e < edges.n; e++) adj[start[edges.from[e]]++] = edges.to[e];
    for (size_t i = nn; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
    size_t head = 0, tail = 0, done = 0;
    for (size_t i = 0; i < nn; i++)
      if (indeg[i] == 0) queue[tail++] = (uint32_t)i;
    while (head < tail) {
      uint32_t v = queue[head++];
      order[done++] = v;
      for (uint32_t e = start[v]; e < start[v + 1]; e++)
        if (--indeg[adj[e]] == 0) queue[tail++] = adj[e];
    }
    if (done < nn) {
      /* walk producers backwards from an unsorted node: after nn steps we are on the cycle */
      uint32_t v = 0;
      while (indeg[v] == 0) v++;
      for (size_t step = 0; step < nn; step++) {
        const Onnx__NodeProto *n = g->node[v];
        for (size_t j = 0; j < n->n_input; j++) {
          uint64_t prod;
          if (n->input[j][0] && oi_map_get(&local.names, n->input[j], &prod) && prod && indeg[prod - 1]) {
            v = (uint32_t)(prod - 1);
            break;
          }
        }
      }
      char label[400];
      s = rlx_errorf(RLX_ERR_FORMAT,
                     "%s: the nodes form a cycle: %s depends on its own output through its inputs (%zu of %zu nodes "
                     "cannot be ordered)",
                     gwhere, oi_node_label(g->node[v], label, sizeof label), nn - done, nn);
    }
  }
  if (s == RLX_OK) {
    k->info->graphs[gi].order = order;
    order = NULL;
  }
  k->al->free(k->al->ctx, order);
  k->al->free(k->al->ctx, start);
  k->al->free(k->al->ctx, adj);
  k->al->free(k->al->ctx, queue);
  k->al->free(k->al->ctx, indeg);
  k->al->free(k->al->ctx, edges.from);
  k->al->free(k->al->ctx, edges.to);
  oi_map_free(&local.names);
  oi_map_free(&free_seen);
  return s;
}

/* A model-local function (ModelProto.functions): names, attribute types and tensors of its
 * nodes, and every node input a formal input or an output of an earlier node (function bodies
 * are topologically sorted by definition). Subgraph attributes are refused when the function is
 * inlined (ops_function.c). Every name read inside counts as used. */
static rlx_status check_function(chk *k, const Onnx__FunctionProto *f, size_t fi) {
  char where[600];
  if (snprintf(where, sizeof where, "model: functions[%zu]", fi) < 0) where[0] = 0;
  RLX_TRY(check_name(f->name, "field name", where));
  if (f->domain && strlen(f->domain) > RLX_ONNX_MAX_NAME_BYTES)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: field domain is too long", where);
  if (snprintf(where, sizeof where, "model-local function \"%.200s\"", f->name) < 0) where[0] = 0;
  if (f->n_input > OI_MAX_NODE_IO || f->n_output > OI_MAX_NODE_IO)
    return rlx_errorf(RLX_ERR_FORMAT, "%s has more than %u inputs or outputs", where, OI_MAX_NODE_IO);
  defs d = {{0}, NULL};
  oi_map_init(&d.names, k->al, false);
  rlx_status st = RLX_OK;
  for (size_t i = 0; i < f->n_input && st == RLX_OK; i++) {
    st = check_name(f->input[i], "an input name", where);
    if (st == RLX_OK && oi_map_get(&d.names, f->input[i], NULL))
      st = rlx_errorf(RLX_ERR_FORMAT, "%s: input \"%s\" is listed twice", where, f->input[i]);
    if (st == RLX_OK) st = oi_map_put(&d.names, f->input[i], 0);
  }
  for (size_t i = 0; i < f->n_node && st == RLX_OK; i++) {
    const Onnx__NodeProto *n = f->node[i];
    char label[800];
    if (snprintf(label, sizeof label, "%s: node #%zu (%.100s)", where, i, str(n->op_type)) < 0) label[0] = 0;
    if (!n->op_type || !n->op_type[0]) st = rlx_errorf(RLX_ERR_FORMAT, "%s: field op_type is empty", label);
    if (st == RLX_OK && (n->n_input > OI_MAX_NODE_IO || n->n_output > OI_MAX_NODE_IO))
      st = rlx_errorf(RLX_ERR_FORMAT, "%s has more than %u inputs or outputs", label, OI_MAX_NODE_IO);
    for (size_t j = 0; j < n->n_input && st == RLX_OK; j++) {
      if (!n->input[j][0]) continue;
      if (!oi_map_get(&d.names, n->input[j], NULL))
        st =
            rlx_errorf(RLX_ERR_FORMAT, "%s reads \"%s\", which no formal input or earlier node of the function defines",
                       label, n->input[j]);
      if (st == RLX_OK) st = oi_map_put(&k->info->used, n->input[j], 1);
    }
    for (size_t a = 0; a < n->n_attribute && st == RLX_OK; a++) {
      const Onnx__AttributeProto *at = n->attribute[a];
      st = check_name(at->name, "an attribute name", label);
      if (st == RLX_OK && oi_attr_type(at) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED &&
          !(at->ref_attr_name && at->ref_attr_name[0]))
        st = rlx_errorf(RLX_ERR_FORMAT, "%s: attribute \"%s\": field type is UNDEFINED and no value is set", label,
                        at->name);
      if (st == RLX_OK && at->t) st = check_tensor(at->t, label);
      for (size_t t = 0; t < at->n_tensors && st == RLX_OK; t++) st = check_tensor(at->tensors[t], label);
    }
    for (size_t j = 0; j < n->n_output && st == RLX_OK; j++) {
      if (!n->output[j][0]) continue;
      if (oi_map_get(&d.names, n->output[j], NULL))
        st = rlx_errorf(RLX_ERR_FORMAT, "%s defines \"%s\" a second time", label, n->output[j]);
      if (st == RLX_OK) st = oi_map_put(&d.names, n->output[j], i + 1);
    }
  }
  for (size_t i = 0; i < f->n_output && st == RLX_OK; i++) {
    st = check_name(f->output[i], "an output name", where);
    if (st == RLX_OK && !oi_map_get(&d.names, f->output[i], NULL))
      st = rlx_errorf(RLX_ERR_FORMAT, "%s: output \"%s\" is not defined in its body", where, f->output[i]);
  }
  oi_map_free(&d.names);
  return st;
}

rlx_status oi_check_model(const Onnx__ModelProto *m, const rlx_allocator *al, oi_model_info *info) {
  memset(info, 0, sizeof *info);
  info->al = al;
  oi_map_init(&info->by_graph, al, true);
  oi_map_init(&info->used, al, false);
  info->strings.al = al;
  if (!m->graph) return rlx_errorf(RLX_ERR_FORMAT, "model: field graph is missing");
  bool has_default = false;
  int64_t default_version = 0; /* a second import of the default domain must agree */
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (o->domain && strlen(o->domain) > RLX_ONNX_MAX_NAME_BYTES)
      return rlx_errorf(RLX_ERR_FORMAT, "model: opset_import[%zu].domain is too long", i);
    if (!o->has_version)
      return rlx_errorf(RLX_ERR_FORMAT, "model: opset_import[%zu] (domain \"%s\") has no field version", i,
                        str(o->domain));
    if (o->version < 1)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "model: opset_import[%zu] (domain \"%s\") has version %lld; versions start at 1", i,
                        str(o->domain), (long long)o->version);
    if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) {
      if (has_default && o->version != default_version)
        return rlx_errorf(RLX_ERR_FORMAT,
                          "model: opset_import[%zu] imports the default domain at version %lld, but an "
                          "earlier entry imports it at %lld",
                          i, (long long)o->version, (long long)default_version);
      has_default = true;
      default_version = o->version;
    }
  }
  /* Without it the operator versions are unknowable (guessing opset 1 silently picks the oldest
   * semantics of every op); ONNX requires it since IR version 3. A model may leave the default
   * domain out when no node uses it (the importer rejects a node of a domain not imported). */
  if (m->n_opset_import == 0)
    return rlx_errorf(RLX_ERR_FORMAT, "model: field opset_import is missing, so the operator set version is unknown "
                                      "(ONNX requires it since IR version 3; the exporter must record it)");
  uint32_t idx;
  chk k = {al, info};
  for (size_t i = 0; i < m->n_functions; i++) RLX_TRY(check_function(&k, m->functions[i], i));
  return check_graph(&k, m->graph, 0, NULL, "model", &idx);
}

void oi_model_info_free(oi_model_info *info) {
  if (!info->al) return;
  for (uint32_t i = 0; i < info->n_graphs; i++) {
    info->al->free(info->al->ctx, info->graphs[i].order);
    info->al->free(info->al->ctx, (void *)info->graphs[i].free);
  }
  info->al->free(info->al->ctx, info->graphs);
  oi_map_free(&info->by_graph);
  oi_map_free(&info->used);
  rlx_arena_release(&info->strings);
  memset(info, 0, sizeof *info);
}

const oi_graph_info *oi_graph_info_of(const oi_model_info *info, const Onnx__GraphProto *g) {
  uint64_t i;
  if (!oi_map_get(&info->by_graph, g, &i)) return NULL;
  return &info->graphs[i];
}
