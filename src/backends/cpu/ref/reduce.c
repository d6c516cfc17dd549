/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: reductions, scans, selection, sorting and sampling (spec ir-core §8.4,
 * §10.3 Sort/ArgSort, §10.8, §10.9 Sample).
 *
 * Floats accumulate in double (sums compensated), integers exactly in int64 with saturation,
 * complex in double complex. Index outputs are written in the node's dtype (I64, I32, F32...). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

/* Smallest / largest value of an integer (or bool) dtype, as int64. */
static int64_t int_min_of(rlx_dtype t) {
  switch (t) {
  case RLX_I8: return INT8_MIN;
  case RLX_I16: return INT16_MIN;
  case RLX_I32: return INT32_MIN;
  case RLX_I64: return INT64_MIN;
  default: return 0; /* unsigned and bool */
  }
}
static int64_t int_max_of(rlx_dtype t) {
  switch (t) {
  case RLX_I8: return INT8_MAX;
  case RLX_I16: return INT16_MAX;
  case RLX_I32: return INT32_MAX;
  case RLX_U8: return UINT8_MAX;
  case RLX_U32: return UINT32_MAX;
  case RLX_BOOL: return 1;
  default: return INT64_MAX;
  }
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

/* NaN-propagating max / min. */
static double nan_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double nan_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

/* Compensated (Neumaier) running sum. */
typedef struct ksum {
  double sum, comp;
} ksum;
static void ksum_add(ksum *k, double x) {
  double t = k->sum + x;
  if (fabs(k->sum) >= fabs(x))
    k->comp += (k->sum - t) + x;
  else
    k->comp += (x - t) + k->sum;
  k->sum = t;
}
static double ksum_value(const ksum *k) { return isfinite(k->sum) ? k->sum + k->comp : k->sum; }

/* Output dims must be `dims`, or both sides hold one element (the verifier's scalar rule). */
static rlx_status need_out(const rlx_node *n, const rlx_tensor *out, uint32_t rank, const int64_t *dims) {
  size_t want = 1;
  for (uint32_t k = 0; k < rank; k++) want *= (size_t)dims[k];
  if (want == 1 && rlx_tensor_numel(out) == 1) return RLX_OK;
  return ru_need_out_dims(n, out, rank, dims);
}

static rlx_status need_real(const rlx_node *n, const rlx_tensor *in, uint32_t i) {
  if (ru_is_complex(ru_dt(&in[i])))
    return ru_error(RLX_ERR_UNSUPPORTED, n,
                    "operand %u has complex dtype %s; this op orders values and needs a real dtype", i,
                    rlx_dtype_name(ru_dt(&in[i])));
  return RLX_OK;
}

/* Index outputs are I64, I32 or F32 (RLX's f32-encoded indices); every index up to `largest`
 * must be exact in that dtype. */
static rlx_status need_index_out(const rlx_node *n, const rlx_tensor *out, size_t largest) {
  rlx_dtype t = ru_dt(out);
  if (t != RLX_I64 && t != RLX_I32 && t != RLX_F32)
    return ru_error(RLX_ERR_INVALID_ARG, n, "the output dtype is %s; indices are written as i64, i32 or f32",
                    rlx_dtype_name(t));
  if ((t == RLX_F32 && largest > (size_t)1 << 24) || (t == RLX_I32 && largest > (size_t)INT32_MAX))
    return ru_error(RLX_ERR_INVALID_ARG, n, "index %zu is not exact in the output dtype %s; declare the node as i64",
                    largest, rlx_dtype_name(t));
  return RLX_OK;
}

/* ======================================================================================
 * Reduce
 * ====================================================================================== */

RLX_CPU_KERNEL(Reduce) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_Reduce *a = &n->attrs.Reduce;
  rlx_reduce op = (rlx_reduce)a->op;
  const rlx_shape *x = &in[0].shape;
  rlx_dtype t = ru_dt(out);
  if ((unsigned)op >= RLX_REDUCE_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute op %d is not a ReduceOp", (int)op);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (ru_is_complex(t) && (op == RLX_REDUCE_MAX || op == RLX_REDUCE_MIN))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "%s is not defined for complex dtype %s", rlx_enum_reduce.names[op],
                    rlx_dtype_name(t));
  /* Reduced axes (an empty list reduces every axis). */
  uint32_t mask = 0;
  for (uint32_t k = 0; k < a->axes.n; k++) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axes", a->axes.v[k], x->rank, &ax));
    mask |= 1u << ax;
  }
  if (a->axes.n == 0) mask = (1u << x->rank) - 1;
  rlx_shape kept = {.rank = 0}, red = {.rank = 0};
  uint32_t kept_ax[RLX_MAX_RANK], red_ax[RLX_MAX_RANK];
  int64_t dims[RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t k = 0; k < x->rank; k++) {
    if (mask & (1u << k)) {
      red_ax[red.rank] = k;
      red.dims[red.rank++] = x->dims[k];
      if (a->keep_dim) dims[r++] = 1;
    } else {
      kept_ax[kept.rank] = k;
      kept.dims[kept.rank++] = x->dims[k];
      dims[r++] = x->dims[k];
    }
  }
  RLX_TRY(need_out(n, out, r, dims));
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t nout = rlx_tensor_numel(out), nred = ru_numel(&red);
  for (size_t o = 0; o < nout; o++) {
    size_t base = 0;
    ru_unravel(&kept, o, c);
    for (uint32_t k = 0; k < kept.rank; k++) base += (size_t)c[k] * (size_t)st[kept_ax[k]];
    /* One accumulator per domain; only the one matching t is used. */
    ksum ks = {0, 0};
    double acc = op == RLX_REDUCE_PROD ? 1 : op == RLX_REDUCE_MAX ? -INFINITY : op == RLX_REDUCE_MIN ? INFINITY : 0;
    int64_t iacc = op == RLX_REDUCE_PROD  ? 1
                   : op == RLX_REDUCE_MAX ? int_min_of(t)
                   : op == RLX_REDUCE_MIN ? int_max_of(t)
                                          : 0;
    double complex cacc = op == RLX_REDUCE_PROD ? 1 : 0;
    for (size_t j = 0; j < nred; j++) {
      size_t off = base;
      ru_unravel(&red, j, c);
      for (uint32_t k = 0; k < red.rank; k++) off += (size_t)c[k] * (size_t)st[red_ax[k]];
      if (ru_is_complex(t)) {
        double re, im;
        rlx_elem_get_c(in[0].data, t, off, &re, &im);
        cacc = op == RLX_REDUCE_PROD ? cacc * ru_cplx(re, im) : cacc + ru_cplx(re, im);
      } else if (ru_is_intlike(t)) {
        int64_t v = rlx_elem_get_i64(in[0].data, t, off);
        switch (op) {
        case RLX_REDUCE_PROD: iacc = sat_mul(iacc, v); break;
        case RLX_REDUCE_MAX: iacc = v > iacc ? v : iacc; break;
        case RLX_REDUCE_MIN: iacc = v < iacc ? v : iacc; break;
        default: iacc = sat_add(iacc, v); break;
        }
      } else {
        double v = rlx_elem_get(in[0].data, t, off);
        switch (op) {
        case RLX_REDUCE_PROD: acc *= v; break;
        case RLX_REDUCE_MAX: acc = nan_max(acc, v); break;
        case RLX_REDUCE_MIN: acc = nan_min(acc, v); break;
        default: ksum_add(&ks, v); break;
        }
      }
    }
    bool mean = op == RLX_REDUCE_MEAN;
    if (ru_is_complex(t)) {
      if (mean) cacc /= (double)nred; /* 0/0 = NaN for an empty reduction */
      rlx_elem_set_c(out->data, t, o, creal(cacc), cimag(cacc));
    } else if (ru_is_intlike(t)) {
      if (mean) iacc = nred ? iacc / (int64_t)nred : 0; /* truncates toward zero */
      ru_store_i64(out->data, t, o, iacc);
    } else {
      if (op == RLX_REDUCE_SUM || mean) acc = ksum_value(&ks);
      if (mean) acc /= (double)nred;
      ru_store(out->data, t, o, acc);
    }
  }
  return RLX_OK;
}

/* ======================================================================================
 * Softmax
 * ====================================================================================== */

RLX_CPU_KERNEL(Softmax) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(need_real(n, in, 0));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (x->rank == 0) { /* a single element: softmax is 1 (NaN stays NaN) */
    double v = rlx_elem_get(in[0].data, t, 0);
    ru_store(out->data, t, 0, isnan(v) ? v : exp(v - v));
    return RLX_OK;
  }
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.Softmax.axis, x->rank, &ax));
  size_t outer, len, inner;
  ru_split_axis(x, ax, &outer, &len, &inner);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      size_t base = o * len * inner + i;
      double m = -INFINITY;
      for (size_t k = 0; k < len; k++) m = nan_max(m, rlx_elem_get(in[0].data, t, base + k * inner));
      ksum s = {0, 0};
      for (size_t k = 0; k < len; k++) ksum_add(&s, exp(rlx_elem_get(in[0].data, t, base + k * inner) - m));
      double sum = ksum_value(&s);
      for (size_t k = 0; k < len; k++)
        ru_store(out->data, t, base + k * inner, exp(rlx_elem_get(in[0].data, t, base + k * inner) - m) / sum);
    }
  return RLX_OK;
}

/* ======================================================================================
 * Cumsum, CumProd, CumMax
 * ====================================================================================== */

typedef enum cum_kind { CUM_SUM, CUM_PROD, CUM_MAX } cum_kind;

/* Running value of a scan; only the member of the dtype's domain is used. */
typedef struct cum_state {
  cum_kind kind;
  rlx_dtype t;
  ksum sum;
  double acc;
  int64_t iacc;
  double complex cacc;
} cum_state;

static void cum_init(cum_state *s, cum_kind kind, rlx_dtype t) {
  s->kind = kind;
  s->t = t;
  s->sum = (ksum){0, 0};
  s->acc = kind == CUM_PROD ? 1 : -INFINITY; /* CUM_SUM uses s->sum */
  s->iacc = kind == CUM_PROD ? 1 : kind == CUM_MAX ? int_min_of(t) : 0;
  s->cacc = kind == CUM_PROD ? 1 : 0;
}

static void cum_fold(cum_state *s, const void *x, size_t at) {
  if (ru_is_complex(s->t)) {
    double re, im;
    rlx_elem_get_c(x, s->t, at, &re, &im);
    s->cacc = s->kind == CUM_PROD ? s->cacc * ru_cplx(re, im) : s->cacc + ru_cplx(re, im);
  } else if (ru_is_intlike(s->t)) {
    int64_t v = rlx_elem_get_i64(x, s->t, at);
    if (s->kind == CUM_SUM)
      s->iacc = sat_add(s->iacc, v);
    else if (s->kind == CUM_PROD)
      s->iacc = sat_mul(s->iacc, v);
    else
      s->iacc = v > s->iacc ? v : s->iacc;
  } else {
    double v = rlx_elem_get(x, s->t, at);
    if (s->kind == CUM_SUM)
      ksum_add(&s->sum, v);
    else if (s->kind == CUM_PROD)
      s->acc *= v;
    else
      s->acc = nan_max(s->acc, v);
  }
}

static void cum_write(const cum_state *s, void *y, size_t at) {
  if (ru_is_complex(s->t))
    rlx_elem_set_c(y, s->t, at, creal(s->cacc), cimag(s->cacc));
  else if (ru_is_intlike(s->t))
    ru_store_i64(y, s->t, at, s->iacc);
  else
    ru_store(y, s->t, at, s->kind == CUM_SUM ? ksum_value(&s->sum) : s->acc);
}

static rlx_status cumulative(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, cum_kind kind,
                             int64_t axis_attr, bool exclusive) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (kind == CUM_MAX) RLX_TRY(need_real(n, in, 0));
  /* A scalar is a sequence of one element. */
  size_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axis", axis_attr, x->rank, &ax));
    ru_split_axis(x, ax, &outer, &len, &inner);
  }
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      cum_state s;
      cum_init(&s, kind, t);
      for (size_t k = 0; k < len; k++) {
        size_t at = o * len * inner + k * inner + i;
        if (exclusive) cum_write(&s, out->data, at); /* the value before element k */
        cum_fold(&s, in[0].data, at);
        if (!exclusive) cum_write(&s, out->data, at);
      }
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(Cumsum) {
  (void)ctx;
  return cumulative(n, in, n_in, out, CUM_SUM, n->attrs.Cumsum.axis, n->attrs.Cumsum.exclusive);
}
RLX_CPU_KERNEL(CumProd) {
  (void)ctx;
  return cumulative(n, in, n_in, out, CUM_PROD, n->attrs.CumProd.axis, n->attrs.CumProd.exclusive);
}
RLX_CPU_KERNEL(CumMax) {
  (void)ctx;
  return cumulative(n, in, n_in, out, CUM_MAX, n->attrs.CumMax.axis, n->attrs.CumMax.exclusive);
}

/* ======================================================================================
 * ArgMax, ArgMin
 * ====================================================================================== */

/* Index of the largest (or smallest) element along the axis; the first one wins ties, and the
 * first NaN wins outright (NaN is treated as the extreme value, as NumPy and PyTorch do). */
static rlx_status arg_extreme(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, bool want_max,
                              int64_t axis_attr, bool keep_dim) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_real(n, in, 0));
  const rlx_shape *x = &in[0].shape;
  rlx_dtype t = ru_dt(&in[0]);
  size_t outer = 1, len = 1, inner = 1;
  int64_t dims[RLX_MAX_RANK];
  uint32_t r = 0;
  if (x->rank > 0) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axis", axis_attr, x->rank, &ax));
    ru_split_axis(x, ax, &outer, &len, &inner);
    for (uint32_t k = 0; k < x->rank; k++)
      if (k != ax)
        dims[r++] = x->dims[k];
      else if (keep_dim)
        dims[r++] = 1;
  }
  RLX_TRY(need_out(n, out, r, dims));
  RLX_TRY(need_index_out(n, out, len));
  if (len == 0 && outer * inner > 0)
    return rlx_kernel_error(n, "the reduced axis of operand 0 %s is empty; there is no element to pick", ru_fmt(x));
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      size_t base = o * len * inner + i, best = 0;
      if (ru_is_intlike(t)) {
        int64_t bv = rlx_elem_get_i64(in[0].data, t, base);
        for (size_t k = 1; k < len; k++) {
          int64_t v = rlx_elem_get_i64(in[0].data, t, base + k * inner);
          if (want_max ? v > bv : v < bv) {
            bv = v;
            best = k;
          }
        }
      } else {
        double bv = rlx_elem_get(in[0].data, t, base);
        for (size_t k = 1; k < len && !isnan(bv); k++) {
          double v = rlx_elem_get(in[0].data, t, base + k * inner);
          if (isnan(v) || (want_max ? v > bv : v < bv)) {
            bv = v;
            best = k;
          }
        }
      }
      ru_store_i64(out->data, ru_dt(out), o * inner + i, (int64_t)best);
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(ArgMax) {
  (void)ctx;
  return arg_extreme(n, in, n_in, out, true, n->attrs.ArgMax.axis, n->attrs.ArgMax.keep_dim);
}
RLX_CPU_KERNEL(ArgMin) {
  (void)ctx;
  return arg_extreme(n, in, n_in, out, false, n->attrs.ArgMin.axis, n->attrs.ArgMin.keep_dim);
}

/* ======================================================================================
 * Sort, ArgSort, TopK
 * ====================================================================================== */

/* One row of values, extracted for sorting: doubles for floats, exact int64 for integers. */
typedef struct sort_row {
  double *dv;
  int64_t *iv;
  bool desc;      /* larger values first */
  bool nan_first; /* NaN before every number (TopK) instead of after (Sort) */
} sort_row;

static int cmp_row(const void *ctx, size_t a, size_t b) {
  const sort_row *r = ctx;
  if (r->iv) {
    int64_t x = r->iv[a], y = r->iv[b];
    if (x == y) return 0;
    return (x < y) != r->desc ? -1 : 1;
  }
  double x = r->dv[a], y = r->dv[b];
  bool xn = isnan(x), yn = isnan(y);
  if (xn || yn) return xn == yn ? 0 : (xn != r->nan_first ? 1 : -1);
  if (x == y) return 0;
  return (x < y) != r->desc ? -1 : 1;
}

/* Scratch for sorting rows of `len` elements. */
typedef struct sort_buf {
  size_t *idx;
  sort_row row;
} sort_buf;

static rlx_status sort_buf_init(const rlx_node *n, sort_buf *b, size_t len, bool intlike) {
  memset(b, 0, sizeof *b);
  size_t m = len ? len : 1;
  b->idx = calloc(m, sizeof *b->idx);
  if (intlike)
    b->row.iv = calloc(m, sizeof *b->row.iv);
  else
    b->row.dv = calloc(m, sizeof *b->row.dv);
  if (!b->idx || (!b->row.iv && !b->row.dv))
    return ru_error(RLX_ERR_OOM, n, "out of memory for a row of %zu elements", len);
  return RLX_OK;
}

static void sort_buf_free(sort_buf *b) {
  free(b->idx);
  free(b->row.dv);
  free(b->row.iv);
}

/* Loads the row (base, base + inner, ...) and sorts its positions stably. */
static rlx_status sort_one_row(sort_buf *b, const rlx_tensor *x, size_t base, size_t len, size_t inner) {
  rlx_dtype t = ru_dt(x);
  for (size_t k = 0; k < len; k++) {
    b->idx[k] = k;
    if (b->row.iv)
      b->row.iv[k] = rlx_elem_get_i64(x->data, t, base + k * inner);
    else
      b->row.dv[k] = rlx_elem_get(x->data, t, base + k * inner);
  }
  return ru_stable_sort(b->idx, len, cmp_row, &b->row);
}

/* Sort (values) or ArgSort (positions) along an axis; stable; NaN sorts last either way. */
static rlx_status sort_axis(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, int64_t axis_attr,
                            bool desc, bool want_indices) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_real(n, in, 0));
  if (!want_indices) RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axis", axis_attr, x->rank, &ax));
    ru_split_axis(x, ax, &outer, &len, &inner);
  }
  if (want_indices) RLX_TRY(need_index_out(n, out, len));
  if (rlx_tensor_numel(out) == 0) return RLX_OK;
  sort_buf b;
  rlx_status s = sort_buf_init(n, &b, len, ru_is_intlike(ru_dt(&in[0])));
  b.row.desc = desc;
  b.row.nan_first = false;
  size_t esz = ru_esz(out);
  for (size_t o = 0; o < outer && s == RLX_OK; o++)
    for (size_t i = 0; i < inner && s == RLX_OK; i++) {
      size_t base = o * len * inner + i;
      s = sort_one_row(&b, &in[0], base, len, inner);
      for (size_t k = 0; k < len && s == RLX_OK; k++) {
        if (want_indices)
          ru_store_i64(out->data, ru_dt(out), base + k * inner, (int64_t)b.idx[k]);
        else
          ru_copy_elem(out->data, base + k * inner, in[0].data, base + b.idx[k] * inner, esz);
      }
    }
  sort_buf_free(&b);
  return s;
}

RLX_CPU_KERNEL(Sort) {
  (void)ctx;
  return sort_axis(n, in, n_in, out, n->attrs.Sort.axis, n->attrs.Sort.descending, false);
}
RLX_CPU_KERNEL(ArgSort) {
  (void)ctx;
  return sort_axis(n, in, n_in, out, n->attrs.ArgSort.axis, n->attrs.ArgSort.descending, true);
}

RLX_CPU_KERNEL(TopK) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_real(n, in, 0));
  const rlx_shape *x = &in[0].shape;
  if (x->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 is a scalar; TopK works on the last axis");
  int64_t k = n->attrs.TopK.k, len = x->dims[x->rank - 1];
  if (k < 0 || k > len)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute k is %lld; the last axis of operand 0 %s has %lld elements",
                    (long long)k, ru_fmt(x), (long long)len);
  int64_t dims[RLX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[x->rank - 1] = k;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  RLX_TRY(need_index_out(n, out, (size_t)len));
  size_t rows = len ? rlx_tensor_numel(&in[0]) / (size_t)len : 0;
  if (rows == 0 || k == 0) return RLX_OK;
  sort_buf b;
  rlx_status s = sort_buf_init(n, &b, (size_t)len, ru_is_intlike(ru_dt(&in[0])));
  b.row.desc = true;
  b.row.nan_first = true; /* NaN counts as the largest value */
  for (size_t r = 0; r < rows && s == RLX_OK; r++) {
    s = sort_one_row(&b, &in[0], r * (size_t)len, (size_t)len, 1);
    for (int64_t j = 0; j < k && s == RLX_OK; j++)
      ru_store_i64(out->data, ru_dt(out), r * (size_t)k + (size_t)j, (int64_t)b.idx[j]);
  }
  sort_buf_free(&b);
  return s;
}

/* ======================================================================================
 * Histogram
 * ====================================================================================== */

RLX_CPU_KERNEL(Histogram) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_real(n, in, 0));
  const rlx_attrs_Histogram *a = &n->attrs.Histogram;
  double lo = a->min, hi = a->max;
  if (a->bins < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute bins is %lld; it must be >= 1", (long long)a->bins);
  if (!(lo < hi) || !isfinite(lo) || !isfinite(hi))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes min %g and max %g must be finite with min < max", lo, hi);
  int64_t dims[1] = {a->bins};
  RLX_TRY(ru_need_out_dims(n, out, 1, dims));
  size_t bins = (size_t)a->bins, count = rlx_tensor_numel(&in[0]);
  double *counts = calloc(bins, sizeof *counts);
  if (!counts) return ru_error(RLX_ERR_OOM, n, "out of memory for %zu bins", bins);
  /* Edge i = lo + i * (hi - lo) / bins; bin i holds [edge i, edge i+1), the last bin also hi. */
  double step = (hi - lo) / (double)bins;
  for (size_t j = 0; j < count; j++) {
    double v = rlx_elem_get(in[0].data, ru_dt(&in[0]), j);
    if (isnan(v) || v < lo || v > hi) continue; /* dropped */
    size_t b = bins - 1;
    if (v < hi) {
      double f = floor((v - lo) / step);
      b = f < 0 ? 0 : f >= (double)bins ? bins - 1 : (size_t)f;
      /* Correct the estimate against the edges themselves. */
      while (b > 0 && v < lo + (double)b * step) b--;
      while (b + 1 < bins && v >= lo + (double)(b + 1) * step) b++;
    }
    counts[b] += 1;
  }
  for (size_t b = 0; b < bins; b++) ru_store(out->data, ru_dt(out), b, counts[b]);
  free(counts);
  return RLX_OK;
}

/* ======================================================================================
 * Sample
 * ====================================================================================== */

/* Stream word of Sample's counter, so that a Sample seed and an Rng key never share numbers. */
#define SAMPLE_STREAM UINT32_C(0x53414D50) /* "SAMP" */

typedef struct sample_scratch {
  double *z, *p;
  size_t *idx;
} sample_scratch;

/* Orders token positions by descending value (ties: smaller token id first, via stability). */
static int cmp_desc(const void *ctx, size_t a, size_t b) {
  const double *v = ctx;
  return v[a] > v[b] ? -1 : v[a] < v[b] ? 1 : 0;
}

/* Draws one token of a row of V logits; returns its id in *tok. */
static rlx_status sample_row(const rlx_node *n, const rlx_tensor *x, size_t row, size_t V, sample_scratch *s,
                             int64_t *tok) {
  const rlx_attrs_Sample *a = &n->attrs.Sample;
  rlx_dtype t = ru_dt(x);
  double temp = a->temperature >= 1e-6 ? a->temperature : 1e-6; /* also catches NaN */
  double *z = s->z, *p = s->p;
  size_t kept = 0;
  /* 1. temperature; NaN and -inf logits are never drawn */
  for (size_t i = 0; i < V; i++) {
    double v = rlx_elem_get(x->data, t, row * V + i) / temp;
    z[i] = isnan(v) ? -INFINITY : v;
    kept += z[i] > -INFINITY;
  }
  if (kept == 0) return rlx_kernel_error(n, "row %zu of the logits has no finite value to sample from", row);
  /* 2. top-k: keep values >= the k-th largest (ties with it are kept) */
  if (a->top_k > 0 && (uint64_t)a->top_k < kept) {
    for (size_t i = 0; i < V; i++) s->idx[i] = i;
    RLX_TRY(ru_stable_sort(s->idx, V, cmp_desc, z));
    double thr = z[s->idx[a->top_k - 1]];
    for (size_t i = 0; i < V; i++)
      if (z[i] < thr) z[i] = -INFINITY;
  }
  /* 3. stable softmax over the kept logits (+inf logits share the mass equally) */
  double m = -INFINITY, total = 0;
  for (size_t i = 0; i < V; i++) m = z[i] > m ? z[i] : m;
  for (size_t i = 0; i < V; i++) {
    p[i] = z[i] == -INFINITY ? 0 : isinf(m) ? (z[i] == m) : exp(z[i] - m);
    total += p[i];
  }
  for (size_t i = 0; i < V; i++) p[i] /= total;
  /* 4. nucleus: the most probable tokens until their mass reaches top_p, renormalised */
  if (a->top_p < 1) {
    for (size_t i = 0; i < V; i++) s->idx[i] = i;
    RLX_TRY(ru_stable_sort(s->idx, V, cmp_desc, p));
    double cum = 0;
    size_t keep = 0;
    while (keep < V && p[s->idx[keep]] > 0) {
      cum += p[s->idx[keep++]];
      if (cum >= a->top_p) break;
    }
    if (keep == 0) keep = 1;
    for (size_t j = keep; j < V; j++) p[s->idx[j]] = 0;
    total = 0;
    for (size_t i = 0; i < V; i++) total += p[i];
  } else {
    total = 1;
  }
  /* 5. inverse CDF over token ids in ascending order */
  uint32_t w[4];
  ru_rng_block(a->seed, row, SAMPLE_STREAM, w);
  double target = ru_u53(w[0], w[1]) * total, cum = 0;
  int64_t last = -1;
  for (size_t i = 0; i < V; i++) {
    if (p[i] <= 0) continue;
    last = (int64_t)i;
    cum += p[i];
    if (cum > target) break;
  }
  *tok = last; /* rounding can leave target >= cum: the last candidate then */
  return RLX_OK;
}

RLX_CPU_KERNEL(Sample) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_real(n, in, 0));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 1 && x->rank != 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (logits) %s must be [V] or [B, V]", ru_fmt(x));
  size_t V = (size_t)x->dims[x->rank - 1], rows = x->rank == 2 ? (size_t)x->dims[0] : 1;
  if (rlx_tensor_numel(out) != rows)
    return ru_error(RLX_ERR_INVALID_ARG, n, "output %s must hold one token per row of the logits %s",
                    ru_fmt(&out->shape), ru_fmt(x));
  RLX_TRY(need_index_out(n, out, V));
  if (rows == 0) return RLX_OK;
  if (V == 0) return rlx_kernel_error(n, "the logits %s have no tokens to sample from", ru_fmt(x));
  sample_scratch s = {calloc(V, sizeof(double)), calloc(V, sizeof(double)), calloc(V, sizeof(size_t))};
  rlx_status st = RLX_OK;
  if (!s.z || !s.p || !s.idx) st = ru_error(RLX_ERR_OOM, n, "out of memory for %zu tokens", V);
  for (size_t r = 0; r < rows && st == RLX_OK; r++) {
    int64_t tok = 0;
    st = sample_row(n, &in[0], r, V, &s, &tok);
    if (st == RLX_OK) ru_store_i64(out->data, ru_dt(out), r, tok);
  }
  free(s.z);
  free(s.p);
  free(s.idx);
  return st;
}
