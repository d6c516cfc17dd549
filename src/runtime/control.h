/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The runtime's control-flow drivers (control.c): If, While, Scan, ScanBackward, ScanBackwardXs. */
#ifndef RLX_RUNTIME_CONTROL_H
#define RLX_RUNTIME_CONTROL_H

#include "rlx/session.h"

/* Runs `body` on inputs (bound positionally to its Inputs); writes each body output into
 * outputs[i].data (preallocated with the byte size of body output i) and sets outputs[i].shape. */
typedef rlx_status (*rlx_rt_body_fn)(void *state, const rlx_graph *body, const rlx_tensor *inputs, uint32_t n_inputs,
                                     rlx_tensor *outputs, uint32_t n_outputs);

/* Is op one of the kinds the drivers handle? */
bool rlx_rt_is_control(rlx_op op);

/* Computes node n (a control-flow op) from host operands into host output `out` (preallocated
 * with the node's shape). */
rlx_status rlx_rt_control_run(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                              rlx_rt_body_fn run_body, void *state);

#endif
