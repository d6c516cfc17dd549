/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers of the sequence-model and signal reference kernels (ref/recurrent.c, ref/ssm.c,
 * ref/signal_ops.c): operands read whole into double, float checks. */
#ifndef RLX_REF_SEQ_UTIL_H
#define RLX_REF_SEQ_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "backends/cpu/ref/ref_util.h"

/* numel(t) doubles holding t's elements (real dtypes), or NULL on OOM (also for 0 elements: a
 * one-element buffer is returned then). */
static inline double *sq_load(const rlx_tensor *t) {
  size_t n = rlx_tensor_numel(t);
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < n; i++) v[i] = rlx_elem_get(t->data, ru_dt(t), i);
  return v;
}

/* Stores n doubles into out, rounded once to out's dtype. */
static inline void sq_store(rlx_tensor *out, const double *v, size_t n) {
  for (size_t i = 0; i < n; i++) ru_store(out->data, ru_dt(out), i, v[i]);
}

/* Every operand in [0, n_in) and the output have operand 0's floating dtype (f32/f64/f16/bf16). */
static inline rlx_status sq_need_float_all(const rlx_node *n, const rlx_tensor *in, uint32_t n_in,
                                           const rlx_tensor *out) {
  rlx_dtype t = ru_dt(&in[0]);
  if (rlx_dtype_class_of(t) != RLX_CLASS_FLOAT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has dtype %s; expected a floating dtype", rlx_dtype_name(t));
  for (uint32_t i = 1; i < n_in; i++) RLX_TRY(ru_need_dtype(n, in, i, t));
  if (ru_dt(out) != t)
    return ru_error(RLX_ERR_INVALID_ARG, n, "the output has dtype %s; expected %s", rlx_dtype_name(ru_dt(out)),
                    rlx_dtype_name(t));
  return RLX_OK;
}

/* Operand i has exactly `want` elements. */
static inline rlx_status sq_need_count(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *role,
                                       size_t want) {
  if (rlx_tensor_numel(&in[i]) != want)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s (%zu elements); expected %zu elements", i,
                    role, ru_fmt(&in[i].shape), rlx_tensor_numel(&in[i]), want);
  return RLX_OK;
}

static inline double sq_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

#endif
