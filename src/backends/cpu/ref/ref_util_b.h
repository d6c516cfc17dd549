/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Small helpers private to the reference kernels of linalg.c, norm.c, attention.c, conv.c,
 * scatter.c and control.c: index reading, checked scratch allocation and whole-tensor conversion
 * to double. Everything is static inline (no symbols leak into the library). */
#ifndef RLX_REF_UTIL_B_H
#define RLX_REF_UTIL_B_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

/* Index operands: any integer dtype, or a float dtype holding integral values (RLX's f32-encoded
 * indices). Bool and complex are rejected. */
static inline rlx_status rb_need_index(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *what) {
  rlx_dtype t = ru_dt(&in[i]);
  if (!rlx_dtype_is_int(t) && !rlx_dtype_is_float(t))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has dtype %s; indices must be an integer dtype or f32", i,
                    what, rlx_dtype_name(t));
  return RLX_OK;
}

/* Element i of an index operand as int64; false when a float element is not an integer (or is
 * too large for int64). */
static inline bool rb_index(const void *data, rlx_dtype t, size_t i, int64_t *v) {
  if (rlx_dtype_is_int(t)) {
    *v = rlx_elem_get_i64(data, t, i);
    return true;
  }
  double d = rlx_elem_get(data, t, i);
  if (!(d == floor(d)) || fabs(d) >= 9.2e18) return false;
  *v = (int64_t)d;
  return true;
}

/* Reads index i of operand `op` and checks it against [0, extent) after adding `extent` to a
 * negative value when `wrap` is set. Errors (RLX_ERR_RUNTIME) name the node, the operand and the
 * element. */
static inline rlx_status rb_read_index(const rlx_node *n, const rlx_tensor *in, uint32_t op, size_t i, int64_t extent,
                                       bool wrap, const char *where, int64_t *out) {
  int64_t v = 0;
  rlx_dtype t = ru_dt(&in[op]);
  if (!rb_index(in[op].data, t, i, &v))
    return rlx_kernel_error(n, "element %zu of operand %u (indices) is %g, which is not an integer", i, op,
                            rlx_elem_get(in[op].data, t, i));
  int64_t w = v;
  if (wrap && w < 0) w += extent;
  if (w < 0 || w >= extent) {
    if (wrap)
      return rlx_kernel_error(n,
                              "index %lld (element %zu of operand %u) is out of range for %s of extent %lld; valid "
                              "indices are [%lld, %lld)",
                              (long long)v, i, op, where, (long long)extent, (long long)-extent, (long long)extent);
    return rlx_kernel_error(n,
                            "index %lld (element %zu of operand %u) is out of range for %s of extent %lld; valid "
                            "indices are [0, %lld)",
                            (long long)v, i, op, where, (long long)extent, (long long)extent);
  }
  *out = w;
  return RLX_OK;
}

/* malloc(count * size) with an overflow check; never returns NULL on success (count 0 still gets
 * a small block). */
static inline rlx_status rb_alloc(const rlx_node *n, size_t count, size_t size, void *out) {
  size_t bytes;
  void *p = NULL;
  memcpy(out, &p, sizeof p); /* defined on every path, also for the compiler's flow analysis */
  if (!rlx_mul_size(count, size, &bytes))
    return ru_error(RLX_ERR_OVERFLOW, n, "scratch buffer of %zu x %zu bytes overflows", count, size);
  p = malloc(bytes ? bytes : 1);
  if (!p) return ru_error(RLX_ERR_OOM, n, "out of memory allocating %zu bytes of scratch", bytes);
  memcpy(out, &p, sizeof p);
  return RLX_OK;
}

/* Same, zero-filled. */
static inline rlx_status rb_calloc(const rlx_node *n, size_t count, size_t size, void *out) {
  size_t bytes;
  void *none = NULL;
  memcpy(out, &none, sizeof none);
  if (!rlx_mul_size(count, size, &bytes))
    return ru_error(RLX_ERR_OVERFLOW, n, "scratch buffer of %zu x %zu bytes overflows", count, size);
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p) return ru_error(RLX_ERR_OOM, n, "out of memory allocating %zu bytes of scratch", bytes);
  memcpy(out, &p, sizeof p);
  return RLX_OK;
}

/* A new double array holding every element of t (real part for complex). */
static inline rlx_status rb_load(const rlx_node *n, const rlx_tensor *t, double **out) {
  size_t count = rlx_tensor_numel(t);
  double *v = NULL;
  RLX_TRY(rb_alloc(n, count, sizeof *v, &v));
  rlx_dtype dt = ru_dt(t);
  if (dt == RLX_F64) {
    if (count) memcpy(v, t->data, count * sizeof *v);
  } else {
    for (size_t i = 0; i < count; i++) v[i] = rlx_elem_get(t->data, dt, i);
  }
  *out = v;
  return RLX_OK;
}

/* Stores every element of v into t with correct rounding to t's dtype. */
static inline void rb_store_all(rlx_tensor *t, const double *v) {
  size_t count = rlx_tensor_numel(t);
  rlx_dtype dt = ru_dt(t);
  for (size_t i = 0; i < count; i++) ru_store(t->data, dt, i, v[i]);
}

/* Operand i is a float dtype (f32, f64, f16, bf16). */
static inline rlx_status rb_need_float(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *what) {
  if (!rlx_dtype_is_float(ru_dt(&in[i])))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand %u (%s) has dtype %s; this op needs a float dtype", i, what,
                    rlx_dtype_name(ru_dt(&in[i])));
  return RLX_OK;
}

/* Saturating int64 arithmetic (the house rule for integer kernels). */
static inline int64_t rb_sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static inline int64_t rb_sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

/* Product of dims[lo..hi) of a static shape. */
static inline size_t rb_prod(const rlx_shape *s, uint32_t lo, uint32_t hi) {
  size_t p = 1;
  for (uint32_t k = lo; k < hi && k < s->rank; k++) p *= (size_t)s->dims[k];
  return p;
}

#endif
