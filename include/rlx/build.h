/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Convenience builders over the typed ones of graph.h: constants from values, scalar operands,
 * and shape helpers that return their operand unchanged when the op would be the identity. One
 * layer shared by autodiff, the decompositions, the optimizers and the importers
 * (src/ir/build.c). Every function appends to g and writes the new (or reused) id to *out. */
#ifndef RLX_BUILD_H
#define RLX_BUILD_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Constants of dtype t and static dims: all `v`, or the values vals[0..numel) (converted like Cast). */
rlx_status rlx_fill(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, double v, rlx_id *out);
rlx_status rlx_values(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, const double *vals, rlx_id *out);
rlx_status rlx_scalar(rlx_graph *g, rlx_dtype t, double v, rlx_id *out);
rlx_status rlx_i64s(rlx_graph *g, uint32_t n, const int64_t *v, rlx_id *out); /* i64 [n] */

/* x op v / v op x / compare x with v, the scalar in x's dtype. */
rlx_status rlx_binary_scalar(rlx_graph *g, rlx_binop op, rlx_id x, double v, rlx_id *out);
rlx_status rlx_scalar_binary(rlx_graph *g, rlx_binop op, double v, rlx_id x, rlx_id *out);
rlx_status rlx_compare_scalar(rlx_graph *g, rlx_cmp op, rlx_id x, double v, rlx_id *out);
rlx_status rlx_where(rlx_graph *g, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out);
/* Cast, or x itself when it already has dtype `to`. */
rlx_status rlx_cast_to(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out);

/* Shape ops (identity cases return x). Dims may be symbolic where the operand has the same
 * symbol at that place (reshape: at most one symbolic extent). */
rlx_status rlx_narrow(rlx_graph *g, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out);
rlx_status rlx_concat(rlx_graph *g, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out); /* any n >= 1 */
rlx_status rlx_reshape_dims(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out);
rlx_status rlx_expand_dims(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out);
rlx_status rlx_permute(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out);
rlx_status rlx_reverse_axes(rlx_graph *g, rlx_id x, uint32_t n_axes, const int64_t *axes, rlx_id *out);
rlx_status rlx_gather_axis(rlx_graph *g, rlx_id table, rlx_id idx, uint32_t axis, rlx_id *out);
rlx_status rlx_unsqueeze(rlx_graph *g, rlx_id x, uint32_t pos, rlx_id *out);
/* Zero padding of one axis. */
rlx_status rlx_pad_axis(rlx_graph *g, rlx_id x, uint32_t axis, int64_t before, int64_t after, rlx_id *out);
/* Sum over every axis (rank 0: x). */
rlx_status rlx_sum_all(rlx_graph *g, rlx_id x, rlx_id *out);

#ifdef __cplusplus
}
#endif
#endif
