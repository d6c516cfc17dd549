/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Autodiff and batching transforms: graph -> graph. Every result is a new graph (the caller frees
 * it) that verifies and compiles like any other. */
#ifndef RLX_AUTODIFF_H
#define RLX_AUTODIFF_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_grad_options {
  /* Gradient checkpointing: forward nodes listed here (ids of the forward graph) start segments
   * (a segment runs to the next checkpoint, the last one to the end of the graph; nodes before the
   * first checkpoint are not recomputed). The checkpoint values are kept; the backward pass
   * recomputes each segment's other activations from them instead of keeping them alive. */
  const rlx_id *checkpoints;
  uint32_t n_checkpoints;
  /* Emit the dedicated *Backward ops (true, default) or their primitive decompositions. */
  bool use_backward_ops;
} rlx_grad_options;
void rlx_grad_options_init(rlx_grad_options *o);

/* Reverse mode. `f` must have exactly one output (the loss, any float shape). `wrt` names Params
 * (preferred) or Inputs of f. The result has the Inputs and Params of f plus an Input "d_output"
 * (the seed, of the loss's shape; usually 1) and outputs [d loss/d wrt[0], ...], each of its
 * leaf's shape; a leaf the loss does not depend on gets zeros. When f already has an Input
 * "d_output" (f is a gradient graph: repeated grad gives higher derivatives) the seed is the first
 * free name of "d_output_2", "d_output_3", ...
 * An op on the gradient path without a VJP rule is an RLX_ERR_UNSUPPORTED error naming the op
 * and node; non-differentiable operands (indices, predicates, integer tensors) get no gradient.
 * Fused ops, regions and If/While are differentiated through their shared decompositions. */
rlx_status rlx_grad(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, const rlx_grad_options *opt,
                    rlx_graph **out);
/* Same, with outputs [loss, d loss/d wrt...]. */
rlx_status rlx_grad_with_loss(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, const rlx_grad_options *opt,
                              rlx_graph **out);

/* Forward mode (exact: built from reverse mode by linearity). The result has f's leaves plus one
 * Input "tangent_<name>" per wrt leaf and outputs [f's outputs..., their tangents...] (one
 * tangent per output, J v with v the tangents). */
rlx_status rlx_jvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out);

/* Hessian-vector product of a scalar-output f: result has f's leaves plus Inputs "v_<name>" and
 * outputs [H·v restricted to each wrt]. */
rlx_status rlx_hvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out);

/* Batching over a new leading axis of size `batch` for the named Inputs (Params stay shared).
 * Every output gains the leading axis. Ops without a batching rule of their own are batched by
 * the generic fallback (one copy per batch element, then Concat). */
rlx_status rlx_vmap(const rlx_graph *f, const char *const *batched_inputs, uint32_t n, int64_t batch, rlx_graph **out);

/* Does op kind k have a VJP rule? (Used by the coverage doc and tests.) */
bool rlx_has_vjp(rlx_op k);

#ifdef __cplusplus
}
#endif
#endif
