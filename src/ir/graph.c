/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Graph storage: nodes in an growable array, everything else in the graph's arena. */
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

static void *std_alloc(void *ctx, size_t n) {
  (void)ctx;
  return malloc(n ? n : 1);
}
static void std_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}
static const rlx_allocator std_allocator = {std_alloc, std_free, NULL};
const rlx_allocator *rlx_default_allocator(void) { return &std_allocator; }

static rlx_status oom(const char *what) { return rlx_errorf(RLX_ERR_OOM, "out of memory while allocating %s", what); }

rlx_status rlx_graph_create(const rlx_allocator *al, const char *name, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_graph_create: out is NULL");
  *out = NULL;
  if (!al) al = &std_allocator;
  rlx_graph *g = al->alloc(al->ctx, sizeof *g);
  if (!g) return oom("a graph");
  memset(g, 0, sizeof *g);
  g->al = *al;
  g->arena.al = &g->al;
  const char *nm = name ? name : "main";
  g->name = rlx_arena_strndup(&g->arena, nm, strlen(nm));
  if (!g->name) {
    rlx_graph_free(g);
    return oom("a graph name");
  }
  *out = g;
  return RLX_OK;
}

rlx_status rlx_graph_create_child(rlx_graph *parent, const char *name, rlx_graph **out) {
  if (!parent || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_graph_create_child: NULL argument");
  *out = NULL;
  if (parent->n_children == parent->cap_children) {
    uint32_t cap = parent->cap_children ? parent->cap_children * 2 : 4;
    rlx_graph **c = parent->al.alloc(parent->al.ctx, cap * sizeof *c);
    if (!c) return oom("the child-graph list");
    if (parent->n_children) memcpy(c, parent->children, parent->n_children * sizeof *c);
    parent->al.free(parent->al.ctx, parent->children);
    parent->children = c;
    parent->cap_children = cap;
  }
  rlx_graph *g;
  RLX_TRY(rlx_graph_create(&parent->al, name, &g));
  g->parent = parent;
  g->add_hook = parent->add_hook;
  g->add_hook_ctx = parent->add_hook_ctx;
  parent->children[parent->n_children++] = g;
  *out = g;
  return RLX_OK;
}

void rlx_graph_free(rlx_graph *g) {
  if (!g) return;
  for (uint32_t i = 0; i < g->n_children; i++) {
    g->children[i]->parent = NULL;
    rlx_graph_free(g->children[i]);
  }
  rlx_allocator al = g->al;
  al.free(al.ctx, g->children);
  al.free(al.ctx, g->nodes);
  al.free(al.ctx, g->outputs);
  al.free(al.ctx, g->leaf_index);
  rlx_arena_release(&g->arena);
  al.free(al.ctx, g);
}

const char *rlx_graph_name(const rlx_graph *g) { return g->name; }
uint32_t rlx_graph_node_count(const rlx_graph *g) { return g->n_nodes; }
const rlx_node *rlx_graph_node(const rlx_graph *g, rlx_id id) { return id < g->n_nodes ? &g->nodes[id] : NULL; }
uint32_t rlx_graph_output_count(const rlx_graph *g) { return g->n_outputs; }
const rlx_id *rlx_graph_outputs(const rlx_graph *g) { return g->outputs; }
rlx_graph *rlx_graph_parent(const rlx_graph *g) { return g->parent; }
const rlx_allocator *rlx_graph_allocator(const rlx_graph *g) { return &g->al; }
void *rlx_graph_arena_alloc(rlx_graph *g, size_t size) { return rlx_arena_alloc(&g->arena, size, 16); }

bool rlx_graph_owns_child(const rlx_graph *g, const rlx_graph *child) {
  for (uint32_t i = 0; i < g->n_children; i++)
    if (g->children[i] == child) return true;
  return false;
}

rlx_status rlx_graph_set_outputs(rlx_graph *g, const rlx_id *ids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (ids[i] >= g->n_nodes)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "graph @%s: output %u refers to %%%u, which does not exist (%u nodes)",
                        g->name, i, ids[i], g->n_nodes);
  rlx_id *o = NULL;
  if (n) {
    o = g->al.alloc(g->al.ctx, n * sizeof *o);
    if (!o) return oom("graph outputs");
    memcpy(o, ids, n * sizeof *o);
  }
  g->al.free(g->al.ctx, g->outputs);
  g->outputs = o;
  g->n_outputs = n;
  return RLX_OK;
}

/* Copies one attribute list's n elements of `elem` bytes into g's arena and points *v at the copy
 * (NULL for an empty list). */
static rlx_status copy_list(rlx_graph *g, rlx_op op, const char *field, void **v, uint32_t n, size_t elem) {
  if (!n) {
    *v = NULL;
    return RLX_OK;
  }
  if (!*v)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: attribute %s has %u entries but no data", rlx_op_name(op), field, n);
  void *c = rlx_arena_alloc(&g->arena, n * elem, elem);
  if (!c) return oom("an attribute list");
  memcpy(c, *v, n * elem);
  *v = c;
  return RLX_OK;
}

/* Copies attribute payloads into g's arena. Graph fields go through `map` (NULL = must already be
 * children of g). */
typedef rlx_graph *(*graph_map_fn)(void *ctx, const rlx_graph *old);
static rlx_status copy_attrs(rlx_graph *g, rlx_op op, const void *src, rlx_attrs *dst, graph_map_fn map,
                             void *map_ctx) {
  size_t sz = rlx_op_attrs_size(op);
  memset(dst, 0, sizeof *dst);
  if (!sz) return RLX_OK;
  if (src)
    memcpy(dst, src, sz);
  else
    rlx_attrs_init(op, dst);
  uint32_t n;
  const rlx_field *f = rlx_op_fields(op, &n);
  for (uint32_t i = 0; i < n; i++) {
    char *p = (char *)dst + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_ILIST: {
      rlx_ilist *l = (rlx_ilist *)p;
      rlx_status st = copy_list(g, op, f[i].name, (void **)&l->v, l->n, sizeof *l->v);
      if (st) return st;
      break;
    }
    case RLX_FT_FLIST: {
      rlx_flist *l = (rlx_flist *)p;
      rlx_status st = copy_list(g, op, f[i].name, (void **)&l->v, l->n, sizeof *l->v);
      if (st) return st;
      break;
    }
    case RLX_FT_STR: {
      const char **s = (const char **)p;
      if (!*s) break;
      char *c = rlx_arena_strndup(&g->arena, *s, strlen(*s));
      if (!c) return oom("an attribute string");
      *s = c;
      break;
    }
    case RLX_FT_BYTES: {
      rlx_bytes *b = (rlx_bytes *)p;
      if (!b->n) {
        b->p = NULL;
        break;
      }
      if (!b->p)
        return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: attribute %s has %zu bytes but no data", rlx_op_name(op), f[i].name,
                          b->n);
      uint8_t *c = rlx_arena_alloc(&g->arena, b->n, 16);
      if (!c) return oom("attribute bytes");
      memcpy(c, b->p, b->n);
      b->p = c;
      break;
    }
    case RLX_FT_CHAIN: {
      rlx_chain *ch = (rlx_chain *)p;
      if (!ch->n) {
        ch->steps = NULL;
        break;
      }
      if (!ch->steps)
        return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: chain has %u steps but no data", rlx_op_name(op), ch->n);
      rlx_chain_step *s = rlx_arena_alloc(&g->arena, ch->n * sizeof *s, 8);
      if (!s) return oom("a region chain");
      memcpy(s, ch->steps, ch->n * sizeof *s);
      ch->steps = s;
      break;
    }
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: {
      rlx_graph **gp = (rlx_graph **)p;
      if (!*gp) {
        if (f[i].type == RLX_FT_GRAPH)
          return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: attribute %s needs a body graph", rlx_op_name(op), f[i].name);
        break;
      }
      if (map) {
        *gp = map(map_ctx, *gp);
        if (!*gp) return rlx_errorf(RLX_ERR_INTERNAL, "%s: body %s could not be mapped", rlx_op_name(op), f[i].name);
      } else if (!rlx_graph_owns_child(g, *gp)) {
        return rlx_errorf(RLX_ERR_INVALID_ARG,
                          "%s: attribute %s must be a child graph of @%s (create it with rlx_graph_create_child)",
                          rlx_op_name(op), f[i].name, g->name);
      }
      break;
    }
    default: break;
    }
  }
  return RLX_OK;
}

rlx_status rlx_attrs_copy_into(rlx_graph *g, rlx_op op, const void *src, rlx_attrs *dst) {
  return copy_attrs(g, op, src, dst, NULL, NULL);
}

/* ---- the leaf index ---- */

static const char *leaf_binding(const rlx_node *n) {
  return n->op == RLX_OP_Input ? n->attrs.Input.name : n->op == RLX_OP_Param ? n->attrs.Param.name : NULL;
}

static uint64_t leaf_hash(rlx_op op, const char *name) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)op;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h ^ (h >> 29);
}

/* Puts leaf `id` into the table unless a leaf of its kind and name is there already. */
static void leaf_index_put(rlx_graph *g, rlx_id id) {
  const rlx_node *n = &g->nodes[id];
  const char *nm = leaf_binding(n);
  if (!nm) return;
  uint32_t mask = g->leaf_index_cap - 1;
  for (uint32_t i = (uint32_t)leaf_hash(n->op, nm) & mask;; i = (i + 1) & mask) {
    rlx_id k = g->leaf_index[i];
    if (k == RLX_NO_ID) {
      g->leaf_index[i] = id;
      g->leaf_index_used++;
      return;
    }
    const rlx_node *o = &g->nodes[k];
    if (o->op == n->op && strcmp(leaf_binding(o), nm) == 0) return;
  }
}

/* (Re)builds the table with room for at least `need` leaves at load factor <= 1/2. On OOM it
 * returns false and leaves the old table as it was. */
static bool leaf_index_build(rlx_graph *g, uint32_t need) {
  uint32_t cap = 16;
  while (cap < 2 * (uint64_t)need + 2 && cap < (1u << 31)) cap *= 2;
  rlx_id *t = g->al.alloc(g->al.ctx, (size_t)cap * sizeof *t);
  if (!t) return false;
  g->al.free(g->al.ctx, g->leaf_index);
  g->leaf_index = t;
  g->leaf_index_cap = cap;
  g->leaf_index_used = 0;
  g->leaf_index_broken = false;
  for (uint32_t i = 0; i < cap; i++) t[i] = RLX_NO_ID;
  for (rlx_id i = 0; i < g->n_nodes; i++) leaf_index_put(g, i);
  return true;
}

void rlx_graph_leaf_index_rebuild(rlx_graph *g) {
  if (!g) return;
  uint32_t leaves = 0;
  for (rlx_id i = 0; i < g->n_nodes; i++) leaves += leaf_binding(&g->nodes[i]) != NULL;
  if (leaf_index_build(g, leaves)) return;
  g->al.free(g->al.ctx, g->leaf_index); /* stale now: lookups scan */
  g->leaf_index = NULL;
  g->leaf_index_cap = g->leaf_index_used = 0;
  g->leaf_index_broken = true;
}

/* Before appending a leaf named `name`: room in the table for one more (growing it at load factor
 * 1/2). False when out of memory (the append then fails, as any allocation failure does). */
static bool leaf_index_reserve(rlx_graph *g) {
  if (g->leaf_index_broken || 2 * (uint64_t)(g->leaf_index_used + 1) <= g->leaf_index_cap) return true;
  return leaf_index_build(g, 2 * g->leaf_index_used + 1);
}

static rlx_status append_node(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs,
                              const rlx_attrs *attrs_copied, const rlx_shape *shape, const char *name, rlx_id *out) {
  if (g->n_nodes == UINT32_MAX - 1) return rlx_errorf(RLX_ERR_OVERFLOW, "graph @%s is full", g->name);
  if (g->n_nodes == g->cap_nodes) {
    uint32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 16;
    rlx_node *nn = g->al.alloc(g->al.ctx, (size_t)cap * sizeof *nn);
    if (!nn) return oom("the node array");
    if (g->n_nodes) memcpy(nn, g->nodes, (size_t)g->n_nodes * sizeof *nn);
    g->al.free(g->al.ctx, g->nodes);
    g->nodes = nn;
    g->cap_nodes = cap;
  }
  bool named_leaf =
      (op == RLX_OP_Input && attrs_copied->Input.name) || (op == RLX_OP_Param && attrs_copied->Param.name);
  if (named_leaf && !leaf_index_reserve(g)) return oom("the leaf index");
  rlx_id *in = NULL;
  if (n_inputs) {
    in = rlx_arena_alloc(&g->arena, n_inputs * sizeof *in, 4);
    if (!in) return oom("node inputs");
    memcpy(in, inputs, n_inputs * sizeof *in);
  }
  const char *nm = NULL;
  if (name) {
    char *c = rlx_arena_strndup(&g->arena, name, strlen(name));
    if (!c) return oom("a node name");
    nm = c;
  }
  rlx_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->n_inputs = n_inputs;
  n->inputs = in;
  n->shape = *shape;
  n->name = nm;
  n->attrs = *attrs_copied;
  if (out) *out = g->n_nodes;
  g->n_nodes++;
  if (named_leaf && !g->leaf_index_broken) leaf_index_put(g, g->n_nodes - 1);
  return RLX_OK;
}

static rlx_status check_call(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs) {
  if (!g) return rlx_errorf(RLX_ERR_INVALID_ARG, "graph is NULL");
  if ((unsigned)op >= RLX_OP_COUNT) return rlx_errorf(RLX_ERR_INVALID_ARG, "op kind %d is not an RLX op", (int)op);
  if (n_inputs && !inputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: %u inputs but no input array", rlx_op_name(op), n_inputs);
  uint32_t lo = rlx_op_min_inputs(op), hi = rlx_op_max_inputs(op);
  if (n_inputs < lo || n_inputs > hi) {
    if (hi == RLX_ARITY_VARIADIC)
      return rlx_errorf(RLX_ERR_VERIFY, "%s takes at least %u operands, got %u", rlx_op_name(op), lo, n_inputs);
    if (lo == hi)
      return rlx_errorf(RLX_ERR_VERIFY, "%s takes %u operand%s, got %u", rlx_op_name(op), lo, lo == 1 ? "" : "s",
                        n_inputs);
    return rlx_errorf(RLX_ERR_VERIFY, "%s takes %u to %u operands, got %u", rlx_op_name(op), lo, hi, n_inputs);
  }
  for (uint32_t i = 0; i < n_inputs; i++)
    if (inputs[i] >= g->n_nodes)
      return rlx_errorf(RLX_ERR_VERIFY, "%s: operand %u refers to %%%u, which is not defined yet (graph has %u nodes)",
                        rlx_op_name(op), i, inputs[i], g->n_nodes);
  return RLX_OK;
}

rlx_status rlx_graph_add(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                         const rlx_shape *declared, const char *name, rlx_id *out) {
  RLX_TRY(check_call(g, op, inputs, n_inputs));
  /* Copy first: the rule reads the same arena-owned attributes the node will keep. The arena
   * space of a rejected node is reclaimed when the graph is freed. */
  rlx_attrs a;
  rlx_status s = copy_attrs(g, op, attrs, &a, NULL, NULL);
  if (s) return rlx_error_context(s, "building %s%s%s", rlx_op_name(op), name ? " " : "", name ? name : "");
  const rlx_shape *in_shapes[RLX_INFER_MAX_INPUTS];
  if (n_inputs > RLX_INFER_MAX_INPUTS)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: %u operands exceed the limit of %d", rlx_op_name(op), n_inputs,
                      RLX_INFER_MAX_INPUTS);
  for (uint32_t i = 0; i < n_inputs; i++) in_shapes[i] = &g->nodes[inputs[i]].shape;
  rlx_shape shape;
  s = rlx_infer(g, op, in_shapes, n_inputs, &a, declared, &shape);
  if (s)
    return rlx_error_context(s, "node %%%u%s%s%s (%s)", g->n_nodes, name ? " \"" : "", name ? name : "",
                             name ? "\"" : "", rlx_op_name(op));
  if (declared && !rlx_shape_compatible(declared, &shape)) {
    char d[128], i[128];
    rlx_shape_format(declared, d, sizeof d);
    rlx_shape_format(&shape, i, sizeof i);
    return rlx_errorf(RLX_ERR_SHAPE, "node %%%u (%s): declared shape %s differs from inferred %s", g->n_nodes,
                      rlx_op_name(op), d, i);
  }
  if (g->add_hook && !g->in_hook) {
    rlx_node tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.op = op;
    tmp.inputs = inputs;
    tmp.n_inputs = n_inputs;
    tmp.attrs = a;
    tmp.shape = declared ? *declared : shape;
    tmp.name = name;
    bool done = false;
    g->in_hook = true;
    s = g->add_hook(g->add_hook_ctx, g, &tmp, &done, out);
    g->in_hook = false;
    if (s != RLX_OK || done) return s;
  }
  return append_node(g, op, inputs, n_inputs, &a, declared ? declared : &shape, name, out);
}

void rlx_graph_set_add_hook(rlx_graph *g, rlx_graph_add_hook hook, void *ctx) {
  if (!g) return;
  g->add_hook = hook;
  g->add_hook_ctx = ctx;
}

rlx_status rlx_graph_add_unchecked(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                                   const rlx_shape *shape, const char *name, rlx_id *out) {
  if (!shape) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_graph_add_unchecked needs a shape");
  if (!g) return rlx_errorf(RLX_ERR_INVALID_ARG, "graph is NULL");
  if ((unsigned)op >= RLX_OP_COUNT) return rlx_errorf(RLX_ERR_INVALID_ARG, "op kind %d is not an RLX op", (int)op);
  if (n_inputs && !inputs) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: inputs missing", rlx_op_name(op));
  rlx_attrs a;
  RLX_TRY(copy_attrs(g, op, attrs, &a, NULL, NULL));
  return append_node(g, op, inputs, n_inputs, &a, shape, name, out);
}

rlx_id rlx_graph_find_leaf(const rlx_graph *g, rlx_op leaf_kind, const char *name) {
  if (!g || !name || (leaf_kind != RLX_OP_Input && leaf_kind != RLX_OP_Param)) return RLX_NO_ID;
  if (!g->leaf_index_broken) {
    if (!g->leaf_index) return RLX_NO_ID; /* no named leaf yet */
    uint32_t mask = g->leaf_index_cap - 1;
    for (uint32_t i = (uint32_t)leaf_hash(leaf_kind, name) & mask;; i = (i + 1) & mask) {
      rlx_id k = g->leaf_index[i];
      if (k == RLX_NO_ID) return RLX_NO_ID;
      const rlx_node *o = &g->nodes[k];
      if (o->op == leaf_kind && strcmp(leaf_binding(o), name) == 0) return k;
    }
  }
  for (uint32_t i = 0; i < g->n_nodes; i++) { /* no memory for the index */
    const rlx_node *n = &g->nodes[i];
    if (n->op != leaf_kind) continue;
    const char *nm = leaf_binding(n);
    if (nm && strcmp(nm, name) == 0) return i;
  }
  return RLX_NO_ID;
}

/* ---- clone ---- */
typedef struct clone_map {
  const rlx_graph *src;
  rlx_graph *dst;
} clone_map;

static rlx_graph *map_child(void *ctx, const rlx_graph *old) {
  clone_map *m = ctx;
  for (uint32_t i = 0; i < m->src->n_children; i++)
    if (m->src->children[i] == old) return m->dst->children[i];
  return NULL;
}

static rlx_status clone_into(const rlx_graph *src, rlx_graph *dst) {
  for (uint32_t i = 0; i < src->n_children; i++) {
    rlx_graph *c;
    RLX_TRY(rlx_graph_create_child(dst, src->children[i]->name, &c));
    RLX_TRY(clone_into(src->children[i], c));
  }
  clone_map m = {src, dst};
  for (uint32_t i = 0; i < src->n_nodes; i++) {
    const rlx_node *n = &src->nodes[i];
    rlx_attrs a;
    RLX_TRY(copy_attrs(dst, n->op, &n->attrs, &a, map_child, &m));
    RLX_TRY(append_node(dst, n->op, n->inputs, n->n_inputs, &a, &n->shape, n->name, NULL));
  }
  return rlx_graph_set_outputs(dst, src->outputs, src->n_outputs);
}

rlx_status rlx_graph_clone(const rlx_graph *src, const rlx_allocator *al, rlx_graph **out) {
  *out = NULL;
  rlx_graph *g;
  RLX_TRY(rlx_graph_create(al, src->name, &g));
  rlx_status s = clone_into(src, g);
  if (s) {
    rlx_graph_free(g);
    return s;
  }
  *out = g;
  return RLX_OK;
}

rlx_status rlx_graph_clone_child(rlx_graph *parent, const rlx_graph *src, rlx_graph **out) {
  *out = NULL;
  rlx_graph *c;
  RLX_TRY(rlx_graph_create_child(parent, src->name, &c));
  RLX_TRY(clone_into(src, c)); /* on failure the half-built child is freed with the parent */
  *out = c;
  return RLX_OK;
}

bool rlx_graph_equal(const rlx_graph *a, const rlx_graph *b) {
  if (strcmp(a->name, b->name) || a->n_nodes != b->n_nodes || a->n_outputs != b->n_outputs) return false;
  if (a->n_outputs && memcmp(a->outputs, b->outputs, a->n_outputs * sizeof *a->outputs)) return false;
  for (uint32_t i = 0; i < a->n_nodes; i++) {
    const rlx_node *x = &a->nodes[i], *y = &b->nodes[i];
    if (x->op != y->op || x->n_inputs != y->n_inputs || !rlx_shape_equal(&x->shape, &y->shape)) return false;
    if (x->n_inputs && memcmp(x->inputs, y->inputs, x->n_inputs * sizeof *x->inputs)) return false;
    if ((x->name == NULL) != (y->name == NULL) || (x->name && strcmp(x->name, y->name))) return false;
    if (!rlx_attrs_equal(x->op, &x->attrs, &y->attrs)) return false;
  }
  return true;
}
