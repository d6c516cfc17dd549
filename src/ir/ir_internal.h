/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Internals of the IR layer shared by graph.c, verify.c, the infer_*.c rules and the formats. */
#ifndef RLX_IR_INTERNAL_H
#define RLX_IR_INTERNAL_H

#include "rlx/graph.h"

/* ---- arena: bump allocation in blocks from the graph's allocator ---- */
typedef struct rlx_arena_block rlx_arena_block;
typedef struct rlx_arena {
  const rlx_allocator *al;
  rlx_arena_block *head;
} rlx_arena;
void *rlx_arena_alloc(rlx_arena *a, size_t size, size_t align);
char *rlx_arena_strndup(rlx_arena *a, const char *s, size_t n);
void rlx_arena_release(rlx_arena *a);

struct rlx_graph {
  rlx_allocator al; /* copied: graphs do not depend on the caller's struct staying alive */
  rlx_arena arena;
  char *name;
  rlx_node *nodes;
  uint32_t n_nodes, cap_nodes;
  rlx_id *outputs;
  uint32_t n_outputs;
  rlx_graph *parent;
  rlx_graph **children;
  uint32_t n_children, cap_children;
  rlx_graph_add_hook add_hook; /* rlx_graph_set_add_hook; inherited by child graphs */
  void *add_hook_ctx;
  bool in_hook;
  /* Index of the Input/Param leaves by (kind, binding name) for rlx_graph_find_leaf: an open-
   * addressing table of node ids (RLX_NO_ID = empty), kept up to date by every append (so a
   * lookup only reads: graphs may be shared by threads); the first leaf of a name wins, as in a
   * scan. NULL with leaf_index_broken false = no named leaf yet; leaf_index_broken = no memory
   * for it, lookups scan. */
  rlx_id *leaf_index;
  uint32_t leaf_index_cap, leaf_index_used;
  bool leaf_index_broken;
};

/* Rebuilds the leaf index: for code that renames a leaf of a graph it owns in place. */
void rlx_graph_leaf_index_rebuild(rlx_graph *g);

/* Deep-copies attribute lists/strings/bytes of `src` into g's arena, writing `dst`.
 * Subgraph fields must be children of g (checked). */
rlx_status rlx_attrs_copy_into(rlx_graph *g, rlx_op op, const void *src, rlx_attrs *dst);

/* Is `child` a direct child graph of `g`? */
bool rlx_graph_owns_child(const rlx_graph *g, const rlx_graph *child);

/* ---- shape inference ---- */
#define RLX_INFER_MAX_INPUTS 64
typedef struct rlx_infer_ctx {
  const rlx_graph *g; /* graph the node lives in (for leaf/body lookups) */
  rlx_op op;
  const rlx_attrs *a;         /* attributes (member named after op) */
  const rlx_shape *const *in; /* operand shapes */
  uint32_t n_in;
  const rlx_shape *declared; /* declared shape, or NULL while building without one */
} rlx_infer_ctx;

/* Computes the output shape of one node or rejects its operands/attributes with a message that
 * names the offending operand ("operand 1") or attribute ("attribute axis"). Ops whose shape
 * cannot be derived (leaves, Custom) return the declared shape and fail when there is none. */
typedef rlx_status (*rlx_infer_fn)(const rlx_infer_ctx *c, rlx_shape *out);

/* Every op kind has a rule: rlx_infer_<Op>, defined in one infer_<family>.c file. */
#define RLX_OP(N, FAM, LO, HI, PROPS) rlx_status rlx_infer_##N(const rlx_infer_ctx *c, rlx_shape *out);
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) RLX_OP(N, FAM, LO, HI, PROPS)
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
extern const rlx_infer_fn rlx_infer_table[RLX_OP_COUNT];

/* Runs the rule for (op, operand shapes, attrs, declared) without touching the graph. */
rlx_status rlx_infer(const rlx_graph *g, rlx_op op, const rlx_shape *const *in, uint32_t n_in, const rlx_attrs *attrs,
                     const rlx_shape *declared, rlx_shape *out);

/* ---- helpers for rules (infer_common.c) ---- */
/* Error with code RLX_ERR_SHAPE; message prefixed by nothing (the caller adds node context). */
rlx_status rlx_shape_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Formats a shape into a small rotating static buffer, for error messages only. */
const char *rlx_fmt_shape(const rlx_shape *s);
/* Requires exactly n operands (attribute-dependent arity). */
rlx_status rlx_need_inputs(const rlx_infer_ctx *c, uint32_t n, const char *why);
rlx_status rlx_need_rank(const rlx_infer_ctx *c, uint32_t operand, uint32_t lo, uint32_t hi);
rlx_status rlx_need_dtype_float(const rlx_infer_ctx *c, uint32_t operand);
/* Two dims agree (equal statics or the same symbol). */
bool rlx_dim_equal(rlx_dim a, rlx_dim b);
/* Declared shape if present, else an error saying the op needs one. */
rlx_status rlx_infer_from_declared(const rlx_infer_ctx *c, rlx_shape *out);

#endif
