/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Graph -> graph passes of the compile pipeline. */
#ifndef RLX_PASSES_H
#define RLX_PASSES_H

#include "rlx/graph.h"
#include "rlx/session.h"

/* ---- decompositions (src/passes/decompose/): one per op kind that has one ----
 * Emits into `dst` nodes computing node `n` of `src`, whose operands have already been mapped to
 * dst ids `in`; writes the replacing dst id to *out. Bodies of `n` (If, While, Scan, CustomFn)
 * live in `src`. Decompositions build with the typed builders, so shapes are inferred. */
typedef rlx_status (*rlx_decompose_fn)(rlx_graph *dst, const rlx_graph *src, const rlx_node *n, const rlx_id *in,
                                       rlx_id *out);
extern const rlx_decompose_fn rlx_decompose_table[RLX_OP_COUNT];

/* Copies `body`'s nodes into `dst`, binding its Inputs positionally to `args` and its Params by
 * name to dst's Params (creating missing ones); writes the body's output ids to outs. */
rlx_status rlx_inline_graph(rlx_graph *dst, const rlx_graph *body, const rlx_id *args, uint32_t n_args, rlx_id *outs,
                            uint32_t n_outs);

/* Legalize: rewrites every node whose kind is not claimed with its decomposition, repeating until
 * every node is claimed or nothing changes. Fails with RLX_ERR_UNSUPPORTED and one message listing
 * every remaining node (id, op, name). Fills rep->path/count for the input graph's kinds. */
rlx_status rlx_legalize(const rlx_graph *g, const uint8_t claimed[RLX_OP_COUNT],
                        const uint8_t host_staged[RLX_OP_COUNT], rlx_dispatch_report *rep, rlx_graph **out);

/* Simplify: constant folding (evaluating pure ops on constant operands with the CPU reference
 * kernels), algebraic identities, CSE and DCE. Returns a new graph. */
rlx_status rlx_simplify(const rlx_graph *g, const rlx_compile_options *opt, rlx_graph **out);

/* Elementwise fusion (fuse_elementwise.c): groups trees of elementwise nodes (Activation,
 * Binary, Compare, Where, Cast on real floats / bool) into ElementwiseRegion nodes, for backends
 * that claim ElementwiseRegion. A value with several consumers or that is a graph output ends a
 * region (nothing is recomputed); operands must tile the region output's trailing axes; at most 16
 * operands per region. Returns a new graph (an exact copy when nothing fuses); *regions (may be
 * NULL) = regions made. Linear in the node count. */
rlx_status rlx_fuse_elementwise(const rlx_graph *g, rlx_graph **out, uint32_t *regions);
/* The environment variable RLX_FUSE_ELEMENTWISE=0 turns the pass off in the compile pipeline
 * (for measuring and for comparing fused with unfused results). */
bool rlx_fuse_disabled(void);

/* The constant evaluator (const_eval.c), shared by simplify and the importers: may `op` be
 * evaluated at compile time (pure, deterministic, with a CPU kernel)? */
bool rlx_const_foldable(rlx_op op);
/* Evaluates node n (its shape static) on constant operands. On success *done is true and *out
 * (allocated with al, *out_bytes bytes) holds the value; *done stays false, without error, when
 * the op cannot be folded or fails on these values (the failure is then reported at run time). */
rlx_status rlx_const_eval(const rlx_allocator *al, const rlx_node *n, const rlx_tensor *in, uint32_t n_in,
                          uint64_t rng_seed, bool *done, void **out, size_t *out_bytes);

/* Rebuild helper: a new graph with the same name/allocator, copying nodes through a mapping. */
typedef struct rlx_rebuild {
  const rlx_graph *src;
  rlx_graph *dst;
  rlx_id *map; /* src id -> dst id */
} rlx_rebuild;
rlx_status rlx_rebuild_begin(const rlx_graph *src, rlx_rebuild *rb);
/* Copies node `id` of src (with mapped operands, same attrs, bodies cloned) into dst. */
rlx_status rlx_rebuild_copy(rlx_rebuild *rb, rlx_id id);
/* Sets mapped outputs and hands dst to *out (rb no longer owns it). */
rlx_status rlx_rebuild_finish(rlx_rebuild *rb, rlx_graph **out);
void rlx_rebuild_abort(rlx_rebuild *rb);

#endif
