/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The verifier: structure, arity, attributes and shapes of every node, recursively into bodies. */
#ifndef RLX_VERIFY_H
#define RLX_VERIFY_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks the whole graph. On failure the message lists every problem found (up to a cap), each
 * naming graph, node id, node name, op and the offending operand or attribute. */
rlx_status rlx_verify(const rlx_graph *g);

/* Infers the output shape `op` would have for existing nodes `inputs` of `g`.
 * `attrs` is an rlx_attrs_<Op> (NULL = defaults); `declared` may be NULL. */
rlx_status rlx_infer_shape(const rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                           const rlx_shape *declared, rlx_shape *out);

#ifdef __cplusplus
}
#endif
#endif
