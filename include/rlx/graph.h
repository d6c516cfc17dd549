/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The graph (MIR): an append-only, topologically ordered list of single-output nodes. */
#ifndef RLX_GRAPH_H
#define RLX_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/ops.h"
#include "rlx/status.h"
#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Caller-supplied allocator. `alloc` returns NULL on failure; `free(ctx, NULL)` is a no-op. */
typedef struct rlx_allocator {
  void *(*alloc)(void *ctx, size_t size);
  void (*free)(void *ctx, void *ptr);
  void *ctx;
} rlx_allocator;

/* malloc/free. */
const rlx_allocator *rlx_default_allocator(void);

typedef uint32_t rlx_id;
#define RLX_NO_ID UINT32_MAX

typedef struct rlx_node {
  rlx_op op;
  uint32_t n_inputs;
  const rlx_id *inputs; /* owned by the graph */
  rlx_shape shape;      /* declared output shape and dtype */
  const char *name;     /* optional debug label (NULL if none), owned by the graph */
  rlx_attrs attrs;      /* the member named after `op` is valid */
} rlx_node;

typedef struct rlx_graph rlx_graph;

/* Creates an empty graph. `al` may be NULL for the default allocator; it must outlive the graph. */
rlx_status rlx_graph_create(const rlx_allocator *al, const char *name, rlx_graph **out);
/* Creates an empty child graph (a body for If/While/Scan/CustomFn) owned by `parent`:
 * it is freed with the parent and may only be referenced by the parent's nodes. */
rlx_status rlx_graph_create_child(rlx_graph *parent, const char *name, rlx_graph **out);
/* Frees the graph, its nodes, attributes and child graphs. NULL is a no-op. */
void rlx_graph_free(rlx_graph *g);

const char *rlx_graph_name(const rlx_graph *g);
uint32_t rlx_graph_node_count(const rlx_graph *g);
const rlx_node *rlx_graph_node(const rlx_graph *g, rlx_id id); /* NULL when out of range */
uint32_t rlx_graph_output_count(const rlx_graph *g);
const rlx_id *rlx_graph_outputs(const rlx_graph *g);
rlx_graph *rlx_graph_parent(const rlx_graph *g);
const rlx_allocator *rlx_graph_allocator(const rlx_graph *g);
/* Allocates from the graph's arena (freed with the graph). */
void *rlx_graph_arena_alloc(rlx_graph *g, size_t size);

/* Sets the graph's outputs (copied). Each id must exist. */
rlx_status rlx_graph_set_outputs(rlx_graph *g, const rlx_id *ids, uint32_t n);

/* Appends a node. `attrs` points at an rlx_attrs_<Op> (NULL = defaults); lists, strings and
 * bytes are deep-copied into the graph. `declared` is the output shape; NULL asks shape
 * inference for it (an error when the op has no rule). When both are available they must agree.
 * `name` may be NULL. Errors name the op, the node and the offending operand or attribute. */
rlx_status rlx_graph_add(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                         const rlx_shape *declared, const char *name, rlx_id *out);

/* Appends a node without inferring or checking its shape (importers and passes that already
 * know it). The verifier still checks it later. */
rlx_status rlx_graph_add_unchecked(rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                                   const rlx_shape *shape, const char *name, rlx_id *out);

/* Looks up an Input/Param leaf by its binding name; RLX_NO_ID if absent. */
rlx_id rlx_graph_find_leaf(const rlx_graph *g, rlx_op leaf_kind, const char *name);

/* A hook rlx_graph_add (and so every builder) calls once a node's attributes are copied and its
 * shape inferred, before it is appended: it may give the node's value another way — e.g. fold
 * it into a Constant — by setting *done and *out (the importers fold constants this way). Nodes
 * the hook itself adds do not reach it. Child graphs created later inherit it. NULL removes it. */
typedef rlx_status (*rlx_graph_add_hook)(void *ctx, rlx_graph *g, const rlx_node *proposed, bool *done, rlx_id *out);
void rlx_graph_set_add_hook(rlx_graph *g, rlx_graph_add_hook hook, void *ctx);

/* Deep-copies `src` (and its child graphs) into a new graph with allocator `al` (NULL=default). */
rlx_status rlx_graph_clone(const rlx_graph *src, const rlx_allocator *al, rlx_graph **out);
/* Deep-copies `src` as a new child graph of `parent` (for passes that move bodies between graphs). */
rlx_status rlx_graph_clone_child(rlx_graph *parent, const rlx_graph *src, rlx_graph **out);
/* Structural equality: names, nodes (op, inputs, shape, name, attributes), outputs, bodies. */
bool rlx_graph_equal(const rlx_graph *a, const rlx_graph *b);
/* Structural 128-bit hash of everything rlx_graph_equal compares (constant bytes and bodies
 * included): equal graphs hash alike; a change of any op, operand, attribute, shape, dtype, name
 * or constant byte changes it (up to hash collisions). The compile cache keys on it. */
void rlx_graph_hash(const rlx_graph *g, uint64_t out[2]);

/* ---- one builder per op kind (expanded from ops.def) ----
 * rlx_build_<Op>(g, inputs, n_inputs, attrs, name, &out) appends the op with an inferred shape.
 * Ops without an inference rule (leaves, Custom, ...) need rlx_graph_add with a declared shape. */
#define RLX_OP(N, FAM, LO, HI, PROPS) \
  rlx_status rlx_build_##N(rlx_graph *g, const rlx_id *inputs, uint32_t n_inputs, const char *name, rlx_id *out);
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS)                                                                \
  rlx_status rlx_build_##N(rlx_graph *g, const rlx_id *inputs, uint32_t n_inputs, const rlx_attrs_##N *attrs, \
                           const char *name, rlx_id *out);
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA

/* ---- convenience builders for the common cases ---- */
rlx_status rlx_input(rlx_graph *g, const char *name, rlx_shape shape, rlx_id *out);
rlx_status rlx_param(rlx_graph *g, const char *name, rlx_shape shape, rlx_id *out);
/* `data` holds numel * dtype-size bytes, little-endian row-major (copied). */
rlx_status rlx_constant(rlx_graph *g, rlx_shape shape, const void *data, size_t nbytes, rlx_id *out);
rlx_status rlx_scalar_f32(rlx_graph *g, float v, rlx_id *out);
rlx_status rlx_activation(rlx_graph *g, rlx_act act, rlx_id x, rlx_id *out);
rlx_status rlx_binary(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out);
rlx_status rlx_compare(rlx_graph *g, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out);
rlx_status rlx_matmul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out);
rlx_status rlx_reshape(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *new_shape, rlx_id *out);
rlx_status rlx_transpose(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out);
rlx_status rlx_reduce_axes(rlx_graph *g, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes, bool keep_dim,
                           rlx_id *out);
rlx_status rlx_cast(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out);

#ifdef __cplusplus
}
#endif
#endif
