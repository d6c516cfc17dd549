/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Sample graphs shared by the format tests: one small, shape-correct graph per op kind with every
 * attribute field set to a non-default value, plus graphs with nested bodies and region chains. */
#ifndef RLX_GRAPH_SAMPLES_H
#define RLX_GRAPH_SAMPLES_H

#include "rlx/rlx.h"

/* Builds @sample_<Op>: one Input per operand, the op node (named), outputs = that node.
 * Allocations use `al`; on failure (e.g. an injected OOM) nothing is leaked. */
rlx_status sample_op_graph(rlx_op op, const rlx_allocator *al, rlx_graph **out);

/* Extra samples: bodies nested several levels deep, a chain using every step kind, symbolic
 * dims, odd names. */
int sample_extra_count(void);
const char *sample_extra_name(int i);
rlx_status sample_extra_graph(int i, const rlx_allocator *al, rlx_graph **out);

/* Index of the node that carries the sample op in sample_op_graph's result. */
rlx_id sample_op_node(const rlx_graph *g);

/* True when every attribute field of `attrs` differs from its default (enums with a single
 * value are exempt); otherwise names the first default field in `which`. */
bool sample_all_fields_set(rlx_op op, const void *attrs, char *which, size_t cap);

#endif
