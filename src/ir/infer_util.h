/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Small helpers shared by the shape rules in infer_linalg.c, infer_norm.c, infer_attention.c,
 * infer_shape.c, infer_reduce.c and infer_scatter.c. Everything here is static inline: each rule
 * file gets its own copy and nothing leaks into the library's symbol table.
 *
 * Conventions of the rules that use these helpers:
 *  - two dims agree iff they are equal statics or the same symbol (rlx_dim_equal);
 *  - checks that need a concrete size (ranges, divisibility) are skipped for symbolic dims;
 *  - dtypes are never promoted: data operands that must agree in dtype are compared exactly;
 *  - messages name the operand ("operand 1 (gamma)") or the attribute ("attribute axis"). */
#ifndef RLX_INFER_UTIL_H
#define RLX_INFER_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "infer_checked.h"
#include "ir_internal.h"

static inline const char *iu_dt(const rlx_shape *s) { return rlx_dtype_name((rlx_dtype)s->dtype); }

/* Formats one dim ("4" or "?2") into a rotating static buffer, for error messages only. */
static inline const char *iu_fmt_dim(rlx_dim d) {
  static _Thread_local char bufs[4][24];
  static _Thread_local unsigned k;
  char *b = bufs[k++ & 3];
  if (d >= 0)
    snprintf(b, sizeof bufs[0], "%" PRId64, d);
  else
    snprintf(b, sizeof bufs[0], "?%u", rlx_dim_symbol(d));
  return b;
}

/* An empty shape (rank 0) of dtype t, with every dim slot zeroed. */
static inline rlx_shape iu_shape(rlx_dtype t, uint32_t rank) {
  rlx_shape s;
  memset(&s, 0, sizeof s);
  s.dtype = (uint8_t)t;
  s.rank = (uint8_t)rank;
  return s;
}

/* Operand j must have operand i's dtype. */
static inline rlx_status iu_same_dtype(const rlx_infer_ctx *c, uint32_t i, uint32_t j) {
  if (c->in[i]->dtype != c->in[j]->dtype)
    return rlx_shape_error("operand %u has dtype %s; it must match operand %u's dtype %s (insert a Cast)", j,
                           iu_dt(c->in[j]), i, iu_dt(c->in[i]));
  return RLX_OK;
}

/* Index operands: any integer dtype, or F32 (RLX's f32-encoded indices). */
static inline rlx_status iu_need_index(const rlx_infer_ctx *c, uint32_t i, const char *what) {
  rlx_dtype t = (rlx_dtype)c->in[i]->dtype;
  if (!rlx_dtype_is_int(t) && t != RLX_F32)
    return rlx_shape_error("operand %u (%s) has dtype %s; indices must be an integer dtype or f32", i, what,
                           rlx_dtype_name(t));
  return RLX_OK;
}

/* Real-valued operand (float or integer): needed where values are ordered or binned. */
static inline rlx_status iu_need_real(const rlx_infer_ctx *c, uint32_t i) {
  rlx_dtype t = (rlx_dtype)c->in[i]->dtype;
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return rlx_shape_error("operand %u has dtype %s; expected a real (float or integer) dtype", i, rlx_dtype_name(t));
  return RLX_OK;
}

/* Dtype of an index-producing op: the declared dtype when it is I64, I32 or F32, else I64. */
static inline rlx_dtype iu_index_out_dtype(const rlx_infer_ctx *c) {
  if (c->declared) {
    rlx_dtype t = (rlx_dtype)c->declared->dtype;
    if (t == RLX_I64 || t == RLX_I32 || t == RLX_F32) return t;
  }
  return RLX_I64;
}

/* Normalises a possibly negative axis attribute against operand `i`'s rank. */
static inline rlx_status iu_axis(const rlx_infer_ctx *c, const char *attr, int64_t axis, uint32_t i, uint32_t *out) {
  uint32_t r = c->in[i]->rank;
  if (!rlx_norm_axis(axis, r, out)) {
    if (r == 0)
      return rlx_shape_error("attribute %s is %" PRId64 ", but operand %u is a scalar (rank 0) and has no axes", attr,
                             axis, i);
    return rlx_shape_error("attribute %s is %" PRId64 "; operand %u %s has rank %u, so it must be in [%d, %u]", attr,
                           axis, i, rlx_fmt_shape(c->in[i]), r, -(int)r, r - 1);
  }
  return RLX_OK;
}

/* Normalises a list of axes (negative allowed) into a bit mask; duplicates are an error. */
static inline rlx_status iu_axes_mask(const rlx_infer_ctx *c, const char *attr, const rlx_ilist *l, uint32_t i,
                                      uint32_t *mask) {
  *mask = 0;
  for (uint32_t k = 0; k < l->n; k++) {
    uint32_t ax;
    if (!rlx_norm_axis(l->v[k], c->in[i]->rank, &ax))
      return rlx_shape_error("attribute %s: entry %u is %" PRId64 ", out of range for operand %u %s (rank %u)", attr, k,
                             l->v[k], i, rlx_fmt_shape(c->in[i]), c->in[i]->rank);
    if (*mask & (1u << ax)) return rlx_shape_error("attribute %s: axis %u appears more than once", attr, ax);
    *mask |= 1u << ax;
  }
  return RLX_OK;
}

/* Element count of a shape. *known = false (and *n untouched) when a dim is symbolic. */
static inline rlx_status iu_numel(const rlx_shape *s, uint32_t operand, bool *known, int64_t *n) {
  int64_t p = 1;
  *known = false;
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return RLX_OK;
    if (!ck_mul(p, s->dims[i], &p))
      return rlx_errorf(RLX_ERR_OVERFLOW, "operand %u %s: element count overflows int64", operand, rlx_fmt_shape(s));
  }
  *known = true;
  *n = p;
  return RLX_OK;
}

/* Does `v` describe a per-channel vector of width `w`: rank >= 1 and either rank 1 of extent w, or
 * a higher rank holding w elements (e.g. [1, 1, w]). With symbolic dims the element count is
 * only known when v has a single non-unit axis, which must then agree with w. */
static inline bool iu_is_vector_of(const rlx_shape *v, rlx_dim w) {
  if (v->rank == 0) return false;
  if (v->rank == 1) return rlx_dim_equal(v->dims[0], w);
  if (w >= 0 && rlx_shape_is_static(v)) {
    int64_t n = 1;
    for (uint32_t i = 0; i < v->rank; i++)
      if (!ck_mul(n, v->dims[i], &n)) return false;
    return n == w;
  }
  uint32_t non_unit = 0;
  rlx_dim d = 1;
  for (uint32_t i = 0; i < v->rank; i++)
    if (v->dims[i] != 1) {
      non_unit++;
      d = v->dims[i];
    }
  if (non_unit > 1) return false;
  return rlx_dim_equal(d, w);
}

/* Operand i must be a per-channel vector of width w (see iu_is_vector_of). */
static inline rlx_status iu_need_vector(const rlx_infer_ctx *c, uint32_t i, const char *what, rlx_dim w,
                                        const char *wname) {
  if (!iu_is_vector_of(c->in[i], w))
    return rlx_shape_error("operand %u (%s) has shape %s; expected [%s] (%s) or a shape with that many elements "
                           "such as [1, %s]",
                           i, what, rlx_fmt_shape(c->in[i]), iu_fmt_dim(w), wname, iu_fmt_dim(w));
  return RLX_OK;
}

/* Does `s` broadcast one-way onto `t` (right-aligned; each axis of s is 1 or agrees with t)? */
static inline bool iu_broadcasts_to(const rlx_shape *s, const rlx_shape *t) {
  if (s->rank > t->rank) return false;
  for (uint32_t k = 0; k < s->rank; k++) {
    rlx_dim a = s->dims[s->rank - 1 - k], b = t->dims[t->rank - 1 - k];
    if (a != 1 && !rlx_dim_equal(a, b)) return false;
  }
  return true;
}

#endif
