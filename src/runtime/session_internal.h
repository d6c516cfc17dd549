/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Session entry points used inside the library: executors compile and run the bodies of
 * If/While/Scan/CustomFn as executables of their own, binding inputs by position. */
#ifndef RLX_SESSION_INTERNAL_H
#define RLX_SESSION_INTERNAL_H

#include "rlx/backend.h"

/* Compiles a body graph like rlx_compile, except that its Inputs bind by position (in node
 * order), so they need not be named. Params keep their names. */
rlx_status rlx_compile_body(const rlx_graph *body, const char *backend, const rlx_compile_options *opt,
                            rlx_executable **out);

/* Runs with inputs[i] bound to the i-th Input node of the graph (exact dtype and shape). */
rlx_status rlx_executable_run_positional(rlx_executable *e, const rlx_tensor *inputs, uint32_t n_inputs,
                                         const rlx_tensor **outputs, uint32_t *n_outputs);

/* The body graphs a node carries (If branches, While cond/body, Scan body, ...): writes up to
 * `cap` of them to out and returns how many there are (absent optional bodies are skipped). */
uint32_t rlx_node_bodies(const rlx_node *n, const rlx_graph **out, uint32_t cap);

#endif
