/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 2-D pooling (NCHW), threads over the N*C planes.
 *   Pool Max / Mean      the reference's semantics exactly: Max skips padded cells, keeps the
 *                        earlier of equal values and propagates NaN; Mean divides the sum of the
 *                        real cells by kh*kw (in f32 here)
 *   MaxPool2dBackward    each output cell's dy goes to the first maximum of its window (row-major,
 *                        NaN wins, padding never does); overlapping windows accumulate
 * A 2x2 window with stride 2 and no padding (the common case) has its own loop. */
#include <limits.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"
#include "infer_conv_util.h"

typedef struct pgeo {
  size_t planes, H, W, Ho, Wo, kh, kw, sh, sw;
  int64_t ph, pw;
} pgeo;

/* Reads the window attributes and checks x -> y extents. */
static bool pool_geo(const rlx_ilist *ks, const rlx_ilist *stride, const rlx_ilist *padding, const rlx_shape *x,
                     const rlx_shape *y, pgeo *g) {
  cu_geom c;
  if (cu_pool_geom(2, ks, stride, padding, &c) != RLX_OK) return false;
  if (x->rank != 4 || y->rank != 4 || x->dims[0] != y->dims[0] || x->dims[1] != y->dims[1]) return false;
  for (uint32_t i = 0; i < 2; i++) {
    int64_t padded = x->dims[2 + i] + c.pb[i] + c.pe[i];
    if (padded < c.k[i] || (padded - c.k[i]) / c.s[i] + 1 != y->dims[2 + i]) return false;
  }
  g->planes = (size_t)x->dims[0] * (size_t)x->dims[1];
  g->H = (size_t)x->dims[2];
  g->W = (size_t)x->dims[3];
  g->Ho = (size_t)y->dims[2];
  g->Wo = (size_t)y->dims[3];
  g->kh = (size_t)c.k[0];
  g->kw = (size_t)c.k[1];
  g->sh = (size_t)c.s[0];
  g->sw = (size_t)c.s[1];
  g->ph = c.pb[0];
  g->pw = c.pb[1];
  return g->kh * g->kw <= INT_MAX;
}

static bool is_2x2s2(const pgeo *g) {
  return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0;
}

/* The reference's running max: a later value wins only when larger; NaN sticks. */
static inline float run_max(float acc, float v) { return (v > acc || v != v) ? v : acc; }

/* Valid window rows / cols of output cell (o) along one axis: taps [lo, hi). */
static inline void taps(size_t o, size_t s, int64_t p, size_t k, size_t in, size_t *lo, size_t *hi) {
  int64_t start = (int64_t)(o * s) - p, l = start < 0 ? -start : 0, h = (int64_t)k;
  if (start + h > (int64_t)in) h = (int64_t)in - start;
  if (h < l) h = l;
  *lo = (size_t)l;
  *hi = (size_t)h;
}

/* ======================================================================================
 * Pool
 * ====================================================================================== */

FK_APPLIES(Pool) {
  if (n_in != 1) return false;
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN) return false;
  if (!fk_static_f32(&in[0].shape) || !fk_static_f32(&n->shape)) return false;
  pgeo g;
  return pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &n->shape, &g);
}

typedef struct pool_job {
  pgeo g;
  bool is_max;
  const float *x, *dy;
  float *y;
} pool_job;

static void pool_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const pool_job *j = arg;
  const pgeo *g = &j->g;
  float inv = 1.0f / (float)(g->kh * g->kw);
  for (size_t p = lo; p < hi; p++) {
    const float *x = j->x + p * g->H * g->W;
    float *restrict y = j->y + p * g->Ho * g->Wo;
    if (is_2x2s2(g) && j->is_max) {
      for (size_t oh = 0; oh < g->Ho; oh++) {
        const float *r0 = x + 2 * oh * g->W, *r1 = r0 + g->W;
        float *yr = y + oh * g->Wo;
        for (size_t ow = 0; ow < g->Wo; ow++) {
          float m = run_max(r0[2 * ow], r0[2 * ow + 1]); /* -inf < r0[2ow] unless it is -inf: same */
          m = run_max(m, r1[2 * ow]);
          yr[ow] = run_max(m, r1[2 * ow + 1]);
        }
      }
      continue;
    }
    for (size_t oh = 0; oh < g->Ho; oh++) {
      size_t il, ih;
      taps(oh, g->sh, g->ph, g->kh, g->H, &il, &ih);
      for (size_t ow = 0; ow < g->Wo; ow++) {
        size_t jl, jh;
        taps(ow, g->sw, g->pw, g->kw, g->W, &jl, &jh);
        /* window origin (may lie in the padding: unsigned wrap-around cancels in r + i) */
        size_t r = (size_t)((int64_t)(oh * g->sh) - g->ph), c = (size_t)((int64_t)(ow * g->sw) - g->pw);
        float acc = j->is_max ? -__builtin_inff() : 0.0f;
        for (size_t i = il; i < ih; i++)
          for (size_t k = jl; k < jh; k++) {
            float v = x[(r + i) * g->W + c + k];
            acc = j->is_max ? run_max(acc, v) : acc + v;
          }
        y[oh * g->Wo + ow] = j->is_max ? acc : acc * inv;
      }
    }
  }
}

FK_KERNEL(Pool) {
  (void)n_in;
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  pool_job j;
  memset(&j, 0, sizeof j);
  pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &out->shape, &j.g);
  j.is_max = a->kind == RLX_REDUCE_MAX;
  j.x = in[0].data;
  j.y = out->data;
  if (fk_numel(&out->shape) == 0) return RLX_OK;
  size_t per_plane = j.g.Ho * j.g.Wo * j.g.kh * j.g.kw + 1;
  fk_parallel_for(ctx, j.g.planes, 32768 / per_plane + 1, pool_task, &j);
  return RLX_OK;
}

/* ======================================================================================
 * MaxPool2dBackward: [x, dy] -> dx
 * ====================================================================================== */

FK_APPLIES(MaxPool2dBackward) {
  if (n_in != 2) return false;
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  const rlx_shape *x = &in[0].shape, *dy = &in[1].shape;
  if (!fk_static_f32(x) || !fk_static_f32(dy) || !fk_static_f32(&n->shape) || !fk_same_dims(x, &n->shape))
    return false;
  pgeo g;
  return pool_geo(&a->kernel_size, &a->stride, &a->padding, x, dy, &g);
}

/* Does a beat the current best b (first maximum wins; NaN beats everything; the first NaN stays)? */
static inline bool beats(float a, float b) { return b == b && (a != a || a > b); }

static void maxpool_bwd_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const pool_job *j = arg;
  const pgeo *g = &j->g;
  for (size_t p = lo; p < hi; p++) {
    const float *x = j->x + p * g->H * g->W, *dy = j->dy + p * g->Ho * g->Wo;
    float *dx = j->y + p * g->H * g->W;
    memset(dx, 0, g->H * g->W * sizeof *dx);
    if (is_2x2s2(g)) {
      for (size_t oh = 0; oh < g->Ho; oh++) {
        size_t r0 = 2 * oh * g->W, r1 = r0 + g->W;
        for (size_t ow = 0; ow < g->Wo; ow++) {
          size_t c = 2 * ow, best = r0 + c;
          if (beats(x[r0 + c + 1], x[best])) best = r0 + c + 1;
          if (beats(x[r1 + c], x[best])) best = r1 + c;
          if (beats(x[r1 + c + 1], x[best])) best = r1 + c + 1;
          dx[best] = dy[oh * g->Wo + ow]; /* windows do not overlap */
        }
      }
      continue;
    }
    for (size_t oh = 0; oh < g->Ho; oh++) {
      size_t il, ih;
      taps(oh, g->sh, g->ph, g->kh, g->H, &il, &ih);
      for (size_t ow = 0; ow < g->Wo; ow++) {
        size_t jl, jh;
        taps(ow, g->sw, g->pw, g->kw, g->W, &jl, &jh);
        if (il >= ih || jl >= jh) continue; /* a window of padding only */
        size_t r = (size_t)((int64_t)(oh * g->sh) - g->ph), c = (size_t)((int64_t)(ow * g->sw) - g->pw);
        size_t best = (r + il) * g->W + c + jl;
        for (size_t i = il; i < ih; i++)
          for (size_t k = jl; k < jh; k++) {
            size_t at = (r + i) * g->W + c + k;
            if (beats(x[at], x[best])) best = at;
          }
        dx[best] += dy[oh * g->Wo + ow];
      }
    }
  }
}

FK_KERNEL(MaxPool2dBackward) {
  (void)n_in;
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  pool_job j;
  memset(&j, 0, sizeof j);
  pool_geo(&a->kernel_size, &a->stride, &a->padding, &in[0].shape, &in[1].shape, &j.g);
  j.is_max = true;
  j.x = in[0].data;
  j.dy = in[1].data;
  j.y = out->data;
  if (fk_numel(&out->shape) == 0) return RLX_OK;
  size_t per_plane = j.g.H * j.g.W + j.g.Ho * j.g.Wo * j.g.kh * j.g.kw + 1;
  fk_parallel_for(ctx, j.g.planes, 32768 / per_plane + 1, maxpool_bwd_task, &j);
  return RLX_OK;
}
