/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Running a body graph from a reference kernel (control.c: If / While / Scan; backward_misc.c:
 * ScanBackward): buffers for every body output, sized from the body's declared static shapes, and
 * the call into the executor's run_body. */
#ifndef RLX_REF_BODY_UTIL_H
#define RLX_REF_BODY_UTIL_H

#include "backends/cpu/ref/ref_util_b.h"

typedef struct body_outs {
  rlx_tensor *t;
  uint32_t n;
} body_outs;

void rlx_ref_body_outs_free(body_outs *o);

/* Allocates o for every output of `body` (attribute `attr` of node n). want > 0: the body must
 * have exactly that many outputs; want = 0: at least one. */
rlx_status rlx_ref_body_outs_alloc(const rlx_node *n, const rlx_graph *body, const char *attr, uint32_t want,
                                   body_outs *o);

/* Runs body on args into o through ctx->run_body; errors name the node and the attribute. */
rlx_status rlx_ref_body_run(const rlx_node *n, rlx_cpu_ctx *ctx, const rlx_graph *body, const char *attr,
                            const rlx_tensor *args, uint32_t n_args, body_outs *o);

#endif
