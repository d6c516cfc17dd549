/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 reductions and the softmax family.
 *   Reduce Sum / Mean   any axes whose merged pattern (unit axes dropped, adjacent reduced / kept
 *                       axes merged) is K R K (last-axis, leading-axes and middle reductions) or
 *                       R K R (bias gradients of NCHW tensors); sums accumulate in double, in a
 *                       fixed order (results do not depend on the thread count)
 *   Softmax             last axis, exponentials in double like the reference
 *   SoftmaxCrossEntropyWithLogits / SoftmaxCrossEntropyBackward
 *                       f32 logits [N, C], labels of i32 / i64 / f32; a bad label is reported by
 *                       the reference kernel (same message) */
#include <math.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

/* ======================================================================================
 * Reduce
 * ====================================================================================== */

/* Merged form: pattern K R K (d0 kept, d1 reduced, d2 kept) or R K R (d0, d2 reduced, d1 kept). */
typedef struct rview {
  bool rkr;
  size_t d0, d1, d2;
} rview;

static bool reduce_view(const rlx_node *n, const rlx_shape *x, rview *v) {
  const rlx_attrs_Reduce *a = &n->attrs.Reduce;
  uint32_t mask = 0;
  for (uint32_t k = 0; k < a->axes.n; k++) {
    int64_t ax = a->axes.v[k];
    if (ax < 0) ax += x->rank;
    if (ax < 0 || ax >= (int64_t)x->rank) return false;
    mask |= 1u << ax;
  }
  if (a->axes.n == 0) mask = (1u << x->rank) - 1;
  /* Output dims: the kept axes (and 1 for reduced ones with keep_dim), or one element both sides. */
  const rlx_shape *o = &n->shape;
  size_t kept = 1;
  uint32_t r = 0;
  int64_t dims[RLX_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; k++) {
    if (mask & (1u << k)) {
      if (a->keep_dim) dims[r++] = 1;
    } else {
      dims[r++] = x->dims[k];
      kept *= (size_t)x->dims[k];
    }
  }
  bool dims_ok = o->rank == r;
  for (uint32_t k = 0; k < r && dims_ok; k++) dims_ok = o->dims[k] == dims[k];
  if (!dims_ok && !(kept == 1 && fk_numel(o) == 1)) return false;
  /* Merge. */
  size_t g[RLX_MAX_RANK];
  bool red[RLX_MAX_RANK];
  uint32_t m = 0;
  for (uint32_t k = 0; k < x->rank; k++) {
    if (x->dims[k] == 1) continue;
    bool rk = (mask >> k) & 1u;
    if (m && red[m - 1] == rk) {
      g[m - 1] *= (size_t)x->dims[k];
      continue;
    }
    red[m] = rk;
    g[m++] = (size_t)x->dims[k];
  }
  v->rkr = false;
  v->d0 = v->d1 = v->d2 = 1;
  if (m == 0) return true;
  if (m > 3) return false;
  if (red[0] && m == 3) {
    v->rkr = true;
    v->d0 = g[0];
    v->d1 = g[1];
    v->d2 = g[2];
    return true;
  }
  /* K R K with absent parts as 1 */
  uint32_t i = 0;
  if (!red[0]) v->d0 = g[i++];
  if (i < m) v->d1 = g[i++];
  if (i < m) v->d2 = g[i++];
  return true;
}

FK_APPLIES(Reduce) {
  if (n_in != 1) return false;
  rlx_reduce op = (rlx_reduce)n->attrs.Reduce.op;
  if (op != RLX_REDUCE_SUM && op != RLX_REDUCE_MEAN) return false;
  if (!fk_static_f32(&in[0].shape) || !fk_static_f32(&n->shape)) return false;
  rview v;
  return reduce_view(n, &in[0].shape, &v);
}

#define COLS 512 /* kept inner columns per work item of a K R K reduction */

typedef struct red_job {
  rview v;
  double scale; /* 1 or 1 / count */
  const float *x;
  float *y;
} red_job;

/* K R K: item = (d0 index, block of COLS columns of d2). */
static void krk_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const red_job *j = arg;
  const rview *v = &j->v;
  size_t blocks = (v->d2 + COLS - 1) / COLS;
  double acc[COLS];
  for (size_t w = lo; w < hi; w++) {
    size_t i0 = w / blocks, c0 = (w % blocks) * COLS, c1 = c0 + COLS < v->d2 ? c0 + COLS : v->d2;
    const float *base = j->x + i0 * v->d1 * v->d2;
    if (v->d2 == 1) { /* a contiguous run */
      j->y[i0] = (float)(fk_sum_run(base, v->d1) * j->scale);
      continue;
    }
    size_t len = c1 - c0;
    for (size_t c = 0; c < len; c++) acc[c] = 0.0;
    for (size_t r = 0; r < v->d1; r++) {
      const float *restrict row = base + r * v->d2 + c0;
      for (size_t c = 0; c < len; c++) acc[c] += (double)row[c];
    }
    float *restrict y = j->y + i0 * v->d2 + c0;
    for (size_t c = 0; c < len; c++) y[c] = (float)(acc[c] * j->scale);
  }
}

/* R K R: item = one kept index. */
static void rkr_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const red_job *j = arg;
  const rview *v = &j->v;
  for (size_t k = lo; k < hi; k++) {
    double s = 0.0;
    for (size_t r = 0; r < v->d0; r++) s += fk_sum_run(j->x + (r * v->d1 + k) * v->d2, v->d2);
    j->y[k] = (float)(s * j->scale);
  }
}

FK_KERNEL(Reduce) {
  (void)n_in;
  red_job j;
  memset(&j, 0, sizeof j);
  reduce_view(n, &in[0].shape, &j.v);
  j.x = in[0].data;
  j.y = out->data;
  size_t total = fk_numel(&in[0].shape), outs = fk_numel(&out->shape);
  if (outs == 0) return RLX_OK;
  size_t count = outs ? total / outs : 0;
  j.scale = n->attrs.Reduce.op == RLX_REDUCE_MEAN ? 1.0 / (double)count : 1.0;
  if (n->attrs.Reduce.op == RLX_REDUCE_MEAN && count == 0) j.scale = NAN; /* 0 / 0, like the reference */
  if (j.v.rkr) {
    fk_parallel_for(ctx, j.v.d1, 16384 / (j.v.d0 * j.v.d2) + 1, rkr_task, &j);
    return RLX_OK;
  }
  size_t blocks = (j.v.d2 + COLS - 1) / COLS, per_item = j.v.d1 * (j.v.d2 < COLS ? j.v.d2 : COLS);
  fk_parallel_for(ctx, j.v.d0 * blocks, 16384 / (per_item + 1) + 1, krk_task, &j);
  return RLX_OK;
}

/* Plane sums of an [N, C, H, W] tensor (the executor's fusion of a bias gradient into the kernel
 * that produces the tensor): the Reduce must be exactly the R K R case over these three extents,
 * so that finishing gives the same bits as rkr_task. */
bool rlx_fast_reduce_planes_applies(const rlx_node *reduce, const rlx_tensor *in) {
  const rlx_shape *x = &in[0].shape;
  rview v;
  if (!rlx_fast_applies_Reduce(reduce, in, 1) || x->rank != 4 || !reduce_view(reduce, x, &v)) return false;
  return v.rkr && v.d0 == (size_t)x->dims[0] && v.d1 == (size_t)x->dims[1] &&
         v.d2 == (size_t)x->dims[2] * (size_t)x->dims[3];
}

void rlx_fast_reduce_planes_finish(const rlx_node *reduce, const rlx_shape *x, const double *plane_sums, float *out) {
  size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], count = N * (size_t)x->dims[2] * (size_t)x->dims[3];
  double scale = reduce->attrs.Reduce.op == RLX_REDUCE_MEAN ? 1.0 / (double)count : 1.0;
  for (size_t k = 0; k < C; k++) {
    double s = 0.0;
    for (size_t r = 0; r < N; r++) s += plane_sums[r * C + k];
    out[k] = (float)(s * scale);
  }
}

/* ======================================================================================
 * Softmax (last axis)
 * ====================================================================================== */

FK_APPLIES(Softmax) {
  if (n_in != 1) return false;
  const rlx_shape *x = &in[0].shape;
  if (!fk_static_f32(x) || !fk_static_f32(&n->shape) || !fk_same_dims(x, &n->shape) || x->rank == 0) return false;
  int64_t ax = n->attrs.Softmax.axis;
  return ax == -1 || ax == (int64_t)x->rank - 1;
}

typedef struct sm_job {
  const float *x;
  float *y;
  size_t len;
} sm_job;

static void softmax_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const sm_job *j = arg;
  for (size_t r = lo; r < hi; r++) {
    const float *x = j->x + r * j->len;
    float *y = j->y + r * j->len;
    double m = -INFINITY;
    for (size_t k = 0; k < j->len; k++) {
      double v = x[k];
      m = (isnan(v) || isnan(m)) ? NAN : (v > m ? v : m);
    }
    double s = 0.0;
    for (size_t k = 0; k < j->len; k++) s += exp((double)x[k] - m);
    double inv = 1.0 / s;
    for (size_t k = 0; k < j->len; k++) y[k] = (float)(exp((double)x[k] - m) * inv);
  }
}

FK_KERNEL(Softmax) {
  (void)n;
  (void)n_in;
  const rlx_shape *x = &in[0].shape;
  sm_job j = {in[0].data, out->data, (size_t)x->dims[x->rank - 1]};
  if (j.len == 0) return RLX_OK;
  size_t rows = fk_numel(x) / j.len;
  fk_parallel_for(ctx, rows, 4096 / j.len + 1, softmax_task, &j);
  return RLX_OK;
}

/* ======================================================================================
 * Softmax cross-entropy with integer labels
 * ====================================================================================== */

static bool label_dtype_ok(rlx_dtype t) { return t == RLX_I32 || t == RLX_I64 || t == RLX_F32; }

/* logits f32 [N, C], labels [N], output f32 [N] (loss) or [N, C] (backward, with d_loss [N]). */
static bool sce_common(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t want) {
  if (n_in != want) return false;
  const rlx_shape *x = &in[0].shape, *l = &in[1].shape;
  if (!fk_static_f32(x) || x->rank != 2 || !fk_static_f32(&n->shape)) return false;
  if (!rlx_shape_is_static(l) || l->rank != 1 || l->dims[0] != x->dims[0] || !label_dtype_ok((rlx_dtype)l->dtype))
    return false;
  return x->dims[1] <= ((int64_t)1 << 24); /* every class index is exact in f32 */
}

FK_APPLIES(SoftmaxCrossEntropyWithLogits) {
  if (!sce_common(n, in, n_in, 2)) return false;
  return n->shape.rank == 1 && n->shape.dims[0] == in[0].shape.dims[0];
}

FK_APPLIES(SoftmaxCrossEntropyBackward) {
  if (!sce_common(n, in, n_in, 3)) return false;
  const rlx_shape *g = &in[2].shape;
  if (!fk_static_f32(g) || g->rank != 1 || g->dims[0] != in[0].shape.dims[0]) return false;
  return fk_same_dims(&n->shape, &in[0].shape);
}

/* Label of row r in [0, C), or -1 when it is out of range or not an integer. */
static int64_t read_label(const rlx_tensor *l, size_t r, size_t C) {
  int64_t v;
  switch (l->shape.dtype) {
  case RLX_I32: v = ((const int32_t *)l->data)[r]; break;
  case RLX_I64: v = ((const int64_t *)l->data)[r]; break;
  default: {
    float f = ((const float *)l->data)[r];
    if (!(f == floorf(f)) || fabsf(f) > 16777216.0f) return -1;
    v = (int64_t)f;
  }
  }
  return v >= 0 && (uint64_t)v < C ? v : -1;
}

/* The reference's row log-sum-exp: NaN anywhere -> NaN; C = 0 -> -inf; an infinite max -> max. */
static double row_lse(const float *x, size_t C) {
  double m = -INFINITY;
  bool nan_seen = false;
  for (size_t c = 0; c < C; c++) {
    double v = x[c];
    if (isnan(v))
      nan_seen = true;
    else if (v > m)
      m = v;
  }
  if (nan_seen) return NAN;
  if (C == 0 || isinf(m)) return C == 0 ? -INFINITY : m;
  double s = 0.0;
  for (size_t c = 0; c < C; c++) s += exp((double)x[c] - m);
  return m + log(s);
}

static bool labels_valid(const rlx_tensor *l, size_t N, size_t C) {
  for (size_t r = 0; r < N; r++)
    if (read_label(l, r, C) < 0) return false;
  return true;
}

FK_KERNEL(SoftmaxCrossEntropyWithLogits) {
  size_t N = (size_t)in[0].shape.dims[0], C = (size_t)in[0].shape.dims[1];
  if (!labels_valid(&in[1], N, C))
    return rlx_cpu_ref_table[RLX_OP_SoftmaxCrossEntropyWithLogits](n, in, n_in, out, ctx);
  const float *x = in[0].data;
  float *y = out->data;
  for (size_t r = 0; r < N; r++) {
    size_t lab = (size_t)read_label(&in[1], r, C);
    y[r] = (float)(row_lse(x + r * C, C) - (double)x[r * C + lab]);
  }
  return RLX_OK;
}

typedef struct sceb_job {
  const rlx_tensor *in;
  float *y;
  size_t C;
} sceb_job;

static void sce_bwd_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const sceb_job *j = arg;
  const float *x = j->in[0].data, *g = j->in[2].data;
  for (size_t r = lo; r < hi; r++) {
    size_t lab = (size_t)read_label(&j->in[1], r, j->C);
    double lse = row_lse(x + r * j->C, j->C), gr = g[r];
    for (size_t c = 0; c < j->C; c++) {
      double p = exp((double)x[r * j->C + c] - lse);
      j->y[r * j->C + c] = (float)((p - (c == lab ? 1.0 : 0.0)) * gr);
    }
  }
}

FK_KERNEL(SoftmaxCrossEntropyBackward) {
  size_t N = (size_t)in[0].shape.dims[0], C = (size_t)in[0].shape.dims[1];
  if (!labels_valid(&in[1], N, C)) return rlx_cpu_ref_table[RLX_OP_SoftmaxCrossEntropyBackward](n, in, n_in, out, ctx);
  sceb_job j = {in, out->data, C};
  fk_parallel_for(ctx, N, 2048 / (C + 1) + 1, sce_bwd_task, &j);
  return RLX_OK;
}
