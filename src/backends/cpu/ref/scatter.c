/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: the scatter / gather family (spec ir-core §10.11, ONNX semantics).
 *
 * Indices may be any integer dtype or a float dtype holding integers (RLX's f32-encoded indices).
 * ScatterNd, ScatterElements, GatherNd and GatherElements wrap a negative index once (i += extent);
 * ScatterAdd does not. An index still outside [0, extent) is a runtime error naming the node, the
 * operand and the element — never clamped.
 *
 * Scatters build the result in an accumulator (double for floats, int64 with saturation for
 * integers and bool, double complex pairs for complex), applying updates in index order (so with
 * reduction None the last duplicate wins), then round once into the output dtype. */
#include <complex.h>
#ifndef CMPLX /* glibc defines CMPLX for gcc only */
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <math.h>
#include <stdio.h>

#include "backends/cpu/ref/ref_util_b.h"

/* ======================================================================================
 * Accumulator
 * ====================================================================================== */

typedef struct acc {
  rlx_dtype t;
  size_t n;
  double *re, *im; /* floats: re; complex: re + im */
  int64_t *iv;     /* integers and bool */
} acc;

/* Accumulator of `count` values of dtype t: a copy of `from` (same count), or zeros. */
static rlx_status acc_init(const rlx_node *n, acc *a, rlx_dtype t, size_t count, const rlx_tensor *from) {
  memset(a, 0, sizeof *a);
  a->t = t;
  a->n = count;
  if (ru_is_intlike(t)) {
    RLX_TRY(rb_calloc(n, count, sizeof *a->iv, &a->iv));
    if (from)
      for (size_t i = 0; i < count; i++) a->iv[i] = rlx_elem_get_i64(from->data, t, i);
    return RLX_OK;
  }
  RLX_TRY(rb_calloc(n, count, sizeof *a->re, &a->re));
  if (ru_is_complex(t)) {
    rlx_status s = rb_calloc(n, count, sizeof *a->im, &a->im);
    if (s != RLX_OK) {
      free(a->re);
      return s;
    }
  }
  if (from)
    for (size_t i = 0; i < count; i++) {
      if (a->im)
        rlx_elem_get_c(from->data, t, i, &a->re[i], &a->im[i]);
      else
        a->re[i] = rlx_elem_get(from->data, t, i);
    }
  return RLX_OK;
}

static void acc_free(acc *a) {
  free(a->re);
  free(a->im);
  free(a->iv);
}

static double fmax_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double fmin_nan(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

/* a[i] = a[i] (reduction) src[j]. */
static void acc_apply(acc *a, size_t i, const rlx_tensor *src, size_t j, int red) {
  rlx_dtype t = a->t;
  if (a->iv) {
    int64_t v = rlx_elem_get_i64(src->data, t, j), *d = &a->iv[i];
    switch (red) {
    case RLX_SCATTER_REDUCTION_ADD: *d = rb_sat_add(*d, v); break;
    case RLX_SCATTER_REDUCTION_MUL: *d = rb_sat_mul(*d, v); break;
    case RLX_SCATTER_REDUCTION_MAX: *d = v > *d ? v : *d; break;
    case RLX_SCATTER_REDUCTION_MIN: *d = v < *d ? v : *d; break;
    default: *d = v; break;
    }
  } else if (a->im) {
    double vr, vi;
    rlx_elem_get_c(src->data, t, j, &vr, &vi);
    double complex d = CMPLX(a->re[i], a->im[i]), v = CMPLX(vr, vi);
    d = red == RLX_SCATTER_REDUCTION_ADD ? d + v : red == RLX_SCATTER_REDUCTION_MUL ? d * v : v;
    a->re[i] = creal(d);
    a->im[i] = cimag(d);
  } else {
    double v = rlx_elem_get(src->data, t, j), *d = &a->re[i];
    switch (red) {
    case RLX_SCATTER_REDUCTION_ADD: *d += v; break;
    case RLX_SCATTER_REDUCTION_MUL: *d *= v; break;
    case RLX_SCATTER_REDUCTION_MAX: *d = fmax_nan(*d, v); break;
    case RLX_SCATTER_REDUCTION_MIN: *d = fmin_nan(*d, v); break;
    default: *d = v; break;
    }
  }
}

static void acc_store(const acc *a, rlx_tensor *out) {
  for (size_t i = 0; i < a->n; i++) {
    if (a->iv)
      ru_store_i64(out->data, a->t, i, a->iv[i]);
    else if (a->im)
      rlx_elem_set_c(out->data, a->t, i, a->re[i], a->im[i]);
    else
      ru_store(out->data, a->t, i, a->re[i]);
  }
}

/* The reduction attribute is a ScatterNdReduction; Max/Min need an ordered dtype. */
static rlx_status need_reduction(const rlx_node *n, int red, rlx_dtype t) {
  if (red < 0 || red >= RLX_SCATTER_REDUCTION_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute reduction: %d is not a ScatterNdReduction", red);
  if (ru_is_complex(t) && (red == RLX_SCATTER_REDUCTION_MAX || red == RLX_SCATTER_REDUCTION_MIN))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "reduction %s is not defined for complex dtype %s",
                    rlx_enum_scatter_reduction.names[red], rlx_dtype_name(t));
  return RLX_OK;
}

/* ======================================================================================
 * ScatterAdd: zero-initialised output; out[.., idx[i], ..] += updates[.., i, ..] along axis
 * ====================================================================================== */

RLX_CPU_KERNEL(ScatterAdd) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  const rlx_shape *u = &in[0].shape, *o = &out->shape;
  if (u->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (updates) is a scalar; it needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.ScatterAdd.axis, u->rank, &ax));
  bool ok = o->rank == u->rank;
  for (uint32_t k = 0; ok && k < u->rank; k++) ok = k == ax || o->dims[k] == u->dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "output %s must equal operand 0 (updates) %s except along axis %u",
                    ru_fmt(o), ru_fmt(u), ax);
  size_t outer, U, inner, L = (size_t)o->dims[ax];
  ru_split_axis(u, ax, &outer, &U, &inner);
  if (in[1].shape.rank != 1 || (size_t)in[1].shape.dims[0] != U)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (indices) has shape %s; expected [%zu]", ru_fmt(&in[1].shape),
                    U);
  int64_t *idx = NULL;
  RLX_TRY(rb_alloc(n, U, sizeof *idx, &idx));
  rlx_status s = RLX_OK;
  for (size_t i = 0; i < U && s == RLX_OK; i++)
    s = rb_read_index(n, in, 1, i, (int64_t)L, false, "the output axis", &idx[i]);
  acc a = {0};
  if (s == RLX_OK) s = acc_init(n, &a, t, rlx_tensor_numel(out), NULL);
  if (s == RLX_OK) {
    for (size_t b = 0; b < outer; b++)
      for (size_t i = 0; i < U; i++)
        for (size_t j = 0; j < inner; j++)
          acc_apply(&a, (b * L + (size_t)idx[i]) * inner + j, &in[0], (b * U + i) * inner + j,
                    RLX_SCATTER_REDUCTION_ADD);
    acc_store(&a, out);
  }
  acc_free(&a);
  free(idx);
  return s;
}

/* ======================================================================================
 * ScatterNd: out = data; out[indices[j]] (reduce)= updates[j] (slices of data[k:])
 * ====================================================================================== */

RLX_CPU_KERNEL(ScatterNd) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  rlx_dtype t = ru_dt(out);
  int red = n->attrs.ScatterNd.reduction;
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 2, t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  RLX_TRY(need_reduction(n, red, t));
  const rlx_shape *d = &in[0].shape, *ix = &in[1].shape, *u = &in[2].shape;
  RLX_TRY(ru_need_out_dims(n, out, d->rank, d->dims));
  if (ix->rank == 0 || ix->dims[ix->rank - 1] < 1 || ix->dims[ix->rank - 1] > d->rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (indices) has shape %s; its last dim must be in [1, %u]",
                    ru_fmt(ix), d->rank);
  uint32_t k = (uint32_t)ix->dims[ix->rank - 1];
  bool ok = u->rank == ix->rank - 1 + d->rank - k;
  for (uint32_t i = 0; ok && i + 1 < ix->rank; i++) ok = u->dims[i] == ix->dims[i];
  for (uint32_t i = k; ok && i < d->rank; i++) ok = u->dims[ix->rank - 1 + i - k] == d->dims[i];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 2 (updates) has shape %s; expected indices.shape[:-1] ++ "
                    "data.shape[%u:] (indices %s, data %s)",
                    ru_fmt(u), k, ru_fmt(ix), ru_fmt(d));
  int64_t st[RLX_MAX_RANK];
  rlx_strides(d, st);
  size_t tuples = rb_prod(ix, 0, ix->rank - 1), slice = rb_prod(d, k, d->rank);
  size_t *offs = NULL;
  RLX_TRY(rb_alloc(n, tuples, sizeof *offs, &offs));
  rlx_status s = RLX_OK;
  char where[32];
  for (size_t j = 0; j < tuples && s == RLX_OK; j++) {
    offs[j] = 0;
    for (uint32_t c = 0; c < k && s == RLX_OK; c++) {
      int64_t v = 0;
      snprintf(where, sizeof where, "data axis %u", c);
      s = rb_read_index(n, in, 1, j * k + c, d->dims[c], true, where, &v);
      offs[j] += (size_t)v * (size_t)st[c];
    }
  }
  acc a = {0};
  if (s == RLX_OK) s = acc_init(n, &a, t, rlx_tensor_numel(out), &in[0]);
  if (s == RLX_OK) {
    for (size_t j = 0; j < tuples; j++)
      for (size_t e = 0; e < slice; e++) acc_apply(&a, offs[j] + e, &in[2], j * slice + e, red);
    acc_store(&a, out);
  }
  acc_free(&a);
  free(offs);
  return s;
}

/* ======================================================================================
 * ScatterElements / GatherElements (per-element along one axis)
 * ====================================================================================== */

/* indices (operand i) have data's rank and do not exceed data off the axis. */
static rlx_status need_elem_indices(const rlx_node *n, const rlx_tensor *in, uint32_t i, uint32_t ax) {
  const rlx_shape *d = &in[0].shape, *ix = &in[i].shape;
  bool ok = ix->rank == d->rank;
  for (uint32_t k = 0; ok && k < d->rank; k++) ok = k == ax || ix->dims[k] <= d->dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand %u (indices) has shape %s; it needs data's rank and must fit inside "
                    "operand 0 (data) %s off axis %u",
                    i, ru_fmt(ix), ru_fmt(d), ax);
  return RLX_OK;
}

/* Offset in data of index position p of the indices tensor, with its axis coordinate replaced by
 * the (checked, wrapped) index value. */
static rlx_status elem_target(const rlx_node *n, const rlx_tensor *in, uint32_t ax, size_t p, const int64_t *dst,
                              size_t *off) {
  const rlx_shape *d = &in[0].shape;
  int64_t c[RLX_MAX_RANK], v = 0;
  char where[32];
  snprintf(where, sizeof where, "data axis %u", ax);
  RLX_TRY(rb_read_index(n, in, 1, p, d->dims[ax], true, where, &v));
  ru_unravel(&in[1].shape, p, c);
  c[ax] = v;
  size_t o = 0;
  for (uint32_t k = 0; k < d->rank; k++) o += (size_t)c[k] * (size_t)dst[k];
  *off = o;
  return RLX_OK;
}

RLX_CPU_KERNEL(ScatterElements) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  rlx_dtype t = ru_dt(out);
  int red = n->attrs.ScatterElements.reduction;
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 2, t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  RLX_TRY(need_reduction(n, red, t));
  const rlx_shape *d = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, d->rank, d->dims));
  if (d->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (data) is a scalar; it needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.ScatterElements.axis, d->rank, &ax));
  RLX_TRY(need_elem_indices(n, in, 1, ax));
  if (in[1].shape.rank != in[2].shape.rank ||
      memcmp(in[1].shape.dims, in[2].shape.dims, in[1].shape.rank * sizeof(rlx_dim)) != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 2 (updates) has shape %s; it must have the dims of operand 1 "
                    "(indices) %s",
                    ru_fmt(&in[2].shape), ru_fmt(&in[1].shape));
  int64_t st[RLX_MAX_RANK];
  rlx_strides(d, st);
  size_t count = rlx_tensor_numel(&in[1]), *offs = NULL;
  RLX_TRY(rb_alloc(n, count, sizeof *offs, &offs));
  rlx_status s = RLX_OK;
  for (size_t p = 0; p < count && s == RLX_OK; p++) s = elem_target(n, in, ax, p, st, &offs[p]);
  acc a = {0};
  if (s == RLX_OK) s = acc_init(n, &a, t, rlx_tensor_numel(out), &in[0]);
  if (s == RLX_OK) {
    for (size_t p = 0; p < count; p++) acc_apply(&a, offs[p], &in[2], p, red);
    acc_store(&a, out);
  }
  acc_free(&a);
  free(offs);
  return s;
}

RLX_CPU_KERNEL(GatherElements) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  const rlx_shape *d = &in[0].shape;
  if (d->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (data) is a scalar; it needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.GatherElements.axis, d->rank, &ax));
  RLX_TRY(need_elem_indices(n, in, 1, ax));
  RLX_TRY(ru_need_out_dims(n, out, in[1].shape.rank, in[1].shape.dims));
  int64_t st[RLX_MAX_RANK];
  rlx_strides(d, st);
  size_t count = rlx_tensor_numel(&in[1]), esz = rlx_dtype_size(t), *offs = NULL;
  RLX_TRY(rb_alloc(n, count, sizeof *offs, &offs));
  rlx_status s = RLX_OK;
  for (size_t p = 0; p < count && s == RLX_OK; p++) s = elem_target(n, in, ax, p, st, &offs[p]);
  if (s == RLX_OK)
    for (size_t p = 0; p < count; p++) ru_copy_elem(out->data, p, in[0].data, offs[p], esz);
  free(offs);
  return s;
}

/* ======================================================================================
 * GatherNd (ONNX, with batch_dims)
 * ====================================================================================== */

/* data [b..., rest...], indices [b..., m..., k] -> out [b..., m..., data[b + k:]...]. */
RLX_CPU_KERNEL(GatherNd) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  const rlx_shape *d = &in[0].shape, *ix = &in[1].shape;
  int64_t bd = n->attrs.GatherNd.batch_dims;
  uint32_t min_rank = d->rank < ix->rank ? d->rank : ix->rank;
  if (bd < 0 || bd >= (int64_t)min_rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute batch_dims is %lld; it must be in [0, %u)", (long long)bd,
                    min_rank);
  uint32_t b = (uint32_t)bd;
  for (uint32_t i = 0; i < b; i++)
    if (ix->dims[i] != d->dims[i])
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (indices) %s: batch axis %u must equal operand 0 (data) %s's",
                      ru_fmt(ix), i, ru_fmt(d));
  int64_t kk = ix->dims[ix->rank - 1];
  if (kk < 1 || kk > (int64_t)(d->rank - b))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (indices) has shape %s; its last dim must be in [1, %u]",
                    ru_fmt(ix), d->rank - b);
  uint32_t k = (uint32_t)kk, rank = ix->rank - 1 + d->rank - b - k;
  if (rank > RLX_MAX_RANK) return ru_error(RLX_ERR_INVALID_ARG, n, "the result would have rank %u", rank);
  int64_t dims[RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i + 1 < ix->rank; i++) dims[r++] = ix->dims[i];
  for (uint32_t i = b + k; i < d->rank; i++) dims[r++] = d->dims[i];
  RLX_TRY(ru_need_out_dims(n, out, rank, dims));
  int64_t st[RLX_MAX_RANK];
  rlx_strides(d, st);
  size_t batches = rb_prod(ix, 0, b), per_batch = rb_prod(ix, b, ix->rank - 1), slice = rb_prod(d, b + k, d->rank);
  size_t data_batch = rb_prod(d, b, d->rank), esz = rlx_dtype_size(t);
  char where[32];
  for (size_t bb = 0; bb < batches; bb++)
    for (size_t j = 0; j < per_batch; j++) {
      size_t tuple = bb * per_batch + j, off = bb * data_batch;
      for (uint32_t c = 0; c < k; c++) {
        int64_t v = 0;
        snprintf(where, sizeof where, "data axis %u", b + c);
        RLX_TRY(rb_read_index(n, in, 1, tuple * k + c, d->dims[b + c], true, where, &v));
        off += (size_t)v * (size_t)st[b + c];
      }
      if (slice) memcpy((char *)out->data + tuple * slice * esz, (const char *)in[0].data + off * esz, slice * esz);
    }
  return RLX_OK;
}
