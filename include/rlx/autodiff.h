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
   * whose activations are recomputed in the backward pass instead of being kept. */
  const rlx_id *checkpoints;
  uint32_t n_checkpoints;
  /* Emit the dedicated *Backward ops (true, default) or their primitive decompositions. */
  bool use_backward_ops;
} rlx_grad_options;
void rlx_grad_options_init(rlx_grad_options *o);

/* Reverse mode. `f` must have exactly one output (the loss, any shape). `wrt` names Params or
 * Inputs of f. The result has the Inputs and Params of f plus an Input "d_output" (the seed, of
 * the loss's shape) and outputs [d loss/d wrt[0], ...], each of its leaf's shape.
 * An op on the gradient path without a VJP rule is an RLX_ERR_UNSUPPORTED error naming the op
 * and node; non-differentiable operands (indices, predicates) get no gradient. */
rlx_status rlx_grad(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt,
                    const rlx_grad_options *opt, rlx_graph **out);
/* Same, with outputs [loss, d loss/d wrt...]. */
rlx_status rlx_grad_with_loss(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt,
                              const rlx_grad_options *opt, rlx_graph **out);

/* Forward mode. The result has f's leaves plus one Input "tangent_<name>" per wrt leaf and outputs
 * [f's outputs..., their tangents...]. */
rlx_status rlx_jvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out);

/* Hessian-vector product of a scalar-output f: result has f's leaves plus Inputs "v_<name>" and
 * outputs [H·v restricted to each wrt]. */
rlx_status rlx_hvp(const rlx_graph *f, const char *const *wrt, uint32_t n_wrt, rlx_graph **out);

/* Batching over a new leading axis of size `batch` for the named Inputs (Params stay shared).
 * Every output gains the leading axis. An op without a batching rule is an error naming it. */
rlx_status rlx_vmap(const rlx_graph *f, const char *const *batched_inputs, uint32_t n,
                    int64_t batch, rlx_graph **out);

/* Does op kind k have a VJP rule? (Used by the coverage doc and tests.) */
bool rlx_has_vjp(rlx_op k);

#ifdef __cplusplus
}
#endif
#endif
