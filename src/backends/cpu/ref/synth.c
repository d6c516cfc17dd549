/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: codebook ("synth") matmuls and spline activations (our definitions,
 * docs/ir-decisions.d/special-shapes.md):
 *   SynthReconstruct  W[k, n] = codebook[codes[k / D, n], k % D]   (D = entry_dim)
 *   SynthMatMul       out = x . W
 *   SynthMatMulBackward  wrt Dx: dx = dy . W^T;  wrt Codebook: dcb[e, d] = sum over (k, n) with
 *                     codes[k / D, n] = e and k % D = d of (x^T dy)[k, n]
 *   SplineActivation  per channel c (x's last axis), knots t_j = lo + j h, h = (hi - lo)/(nk - 1):
 *                     y = coeffs[c, 0] for x <= lo, coeffs[c, nk-1] for x >= hi, else linear
 *                     interpolation between the knots around x (segment j = floor((x - lo)/h));
 *   BackwardX         dy times the segment's slope inside (lo, hi), 0 outside (the clamped
 *                     regions; at x = lo or hi the inner segment's slope);
 *   BackwardCoeff     dy distributed onto the two knots with the interpolation weights (all of it
 *                     onto knot 0 / nk-1 outside). Shared coeffs [nk] sum over channels.
 * Arithmetic in double, one rounding to the output dtype. NaN x gives NaN. */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/ref/ref_util_b.h"

/* ---- codebook weights ---- */

static rlx_status synth_weight(const rlx_node *n, const rlx_tensor *in, uint32_t ci, uint32_t bi, int64_t D, int64_t NE,
                               size_t *K, size_t *N, double **W) {
  RLX_TRY(rb_need_index(n, in, ci, "codes"));
  RLX_TRY(rb_need_float(n, in, bi, "codebook"));
  const rlx_shape *cs = &in[ci].shape, *bs = &in[bi].shape;
  if (cs->rank != 2 || bs->rank != 2 || bs->dims[0] != NE || bs->dims[1] != D)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operands codes %s / codebook %s do not fit entry_dim %lld, num_entries %lld", ru_fmt(cs),
                    ru_fmt(bs), (long long)D, (long long)NE);
  size_t R = (size_t)cs->dims[0];
  *N = (size_t)cs->dims[1];
  *K = R * (size_t)D;
  double *w = NULL;
  RLX_TRY(rb_alloc(n, *K * *N, sizeof *w, &w));
  for (size_t r = 0; r < R; r++)
    for (size_t j = 0; j < *N; j++) {
      int64_t e = 0;
      rlx_status st = rb_read_index(n, in, ci, r * *N + j, NE, false, "the codebook entries", &e);
      if (st != RLX_OK) {
        free(w);
        return st;
      }
      for (int64_t d = 0; d < D; d++)
        w[(r * (size_t)D + (size_t)d) * *N + j] = rlx_elem_get(in[bi].data, ru_dt(&in[bi]), (size_t)(e * D + d));
    }
  *W = w;
  return RLX_OK;
}

RLX_CPU_KERNEL(SynthReconstruct) {
  (void)ctx;
  const rlx_attrs_SynthReconstruct *a = &n->attrs.SynthReconstruct;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  size_t K, N;
  double *W = NULL;
  RLX_TRY(synth_weight(n, in, 0, 1, a->entry_dim, a->num_entries, &K, &N, &W));
  for (size_t i = 0; i < K * N; i++) ru_store(out->data, ru_dt(out), i, W[i]);
  free(W);
  return RLX_OK;
}

RLX_CPU_KERNEL(SynthMatMul) {
  (void)ctx;
  const rlx_attrs_SynthMatMul *a = &n->attrs.SynthMatMul;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  size_t K, N;
  double *W = NULL;
  RLX_TRY(synth_weight(n, in, 1, 2, a->entry_dim, a->num_entries, &K, &N, &W));
  size_t M = (size_t)in[0].shape.dims[0];
  if (in[0].shape.rank != 2 || (size_t)in[0].shape.dims[1] != K) {
    free(W);
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) %s must be [M, %zu]", ru_fmt(&in[0].shape), K);
  }
  rlx_dtype tx = ru_dt(&in[0]);
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double acc = 0;
      for (size_t k = 0; k < K; k++) acc += rlx_elem_get(in[0].data, tx, i * K + k) * W[k * N + j];
      ru_store(out->data, ru_dt(out), i * N + j, acc);
    }
  free(W);
  return RLX_OK;
}

RLX_CPU_KERNEL(SynthMatMulBackward) {
  (void)ctx;
  const rlx_attrs_SynthMatMulBackward *a = &n->attrs.SynthMatMulBackward;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(rb_need_float(n, in, 3, "dy"));
  size_t K, N;
  double *W = NULL;
  RLX_TRY(synth_weight(n, in, 1, 2, a->entry_dim, a->num_entries, &K, &N, &W));
  size_t M = (size_t)in[0].shape.dims[0];
  rlx_dtype tx = ru_dt(&in[0]), td = ru_dt(&in[3]);
  if (in[0].shape.rank != 2 || (size_t)in[0].shape.dims[1] != K || ru_numel(&in[3].shape) != M * N) {
    free(W);
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands x %s / dy %s do not fit the codes", ru_fmt(&in[0].shape),
                    ru_fmt(&in[3].shape));
  }
  if (a->wrt == RLX_SYNTH_WRT_DX) {
    for (size_t i = 0; i < M; i++)
      for (size_t k = 0; k < K; k++) {
        double acc = 0;
        for (size_t j = 0; j < N; j++) acc += rlx_elem_get(in[3].data, td, i * N + j) * W[k * N + j];
        ru_store(out->data, ru_dt(out), i * K + k, acc);
      }
    free(W);
    return RLX_OK;
  }
  free(W);
  size_t D = (size_t)a->entry_dim, NE = (size_t)a->num_entries;
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, NE * D, sizeof *acc, &acc));
  for (size_t k = 0; k < K; k++)
    for (size_t j = 0; j < N; j++) {
      int64_t e = 0;
      rb_index(in[1].data, ru_dt(&in[1]), (k / D) * N + j, &e); /* checked by synth_weight */
      double g = 0;
      for (size_t i = 0; i < M; i++)
        g += rlx_elem_get(in[0].data, tx, i * K + k) * rlx_elem_get(in[3].data, td, i * N + j);
      acc[(size_t)e * D + k % D] += g;
    }
  for (size_t i = 0; i < NE * D; i++) ru_store(out->data, ru_dt(out), i, acc[i]);
  free(acc);
  return RLX_OK;
}

/* ---- spline activations ---- */

typedef struct spline {
  size_t nk, C; /* knots; channels of coeffs (1 = shared) */
  double lo, hi, h;
  const rlx_tensor *coeffs;
} spline;

static rlx_status spline_setup(const rlx_node *n, const rlx_tensor *in, int64_t nk, float lo, float hi, spline *s) {
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(rb_need_float(n, in, 1, "coeffs"));
  const rlx_shape *x = &in[0].shape, *k = &in[1].shape;
  if (nk < 2 || !(lo < hi))
    return ru_error(RLX_ERR_INVALID_ARG, n, "num_knots >= 2 and grid_min < grid_max are required");
  s->nk = (size_t)nk;
  s->lo = lo, s->hi = hi, s->h = ((double)hi - (double)lo) / (double)(nk - 1);
  s->coeffs = &in[1];
  s->C = k->rank == 2 ? (size_t)k->dims[0] : 1;
  if ((k->rank == 1 && (size_t)k->dims[0] != s->nk) ||
      (k->rank == 2 && ((size_t)k->dims[1] != s->nk || x->rank == 0 || (size_t)x->dims[x->rank - 1] != s->C)) ||
      k->rank > 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (coeffs) %s does not fit x %s and num_knots %lld", ru_fmt(k),
                    ru_fmt(x), (long long)nk);
  return RLX_OK;
}

/* Channel of element i and (for inside points) segment j and weight f. */
typedef enum { SP_BELOW, SP_INSIDE, SP_ABOVE, SP_NAN } sp_where;
static sp_where spline_locate(const spline *s, double x, size_t *j, double *f) {
  if (isnan(x)) return SP_NAN;
  if (x < s->lo) return SP_BELOW;
  if (x > s->hi) return SP_ABOVE;
  double u = (x - s->lo) / s->h, fl = floor(u);
  if (fl > (double)(s->nk - 2)) fl = (double)(s->nk - 2);
  if (fl < 0) fl = 0;
  *j = (size_t)fl;
  *f = u - fl;
  return SP_INSIDE;
}
static double coeff(const spline *s, size_t c, size_t j) {
  return rlx_elem_get(s->coeffs->data, ru_dt(s->coeffs), (s->C == 1 ? 0 : c) * s->nk + j);
}

RLX_CPU_KERNEL(SplineActivation) {
  (void)ctx;
  const rlx_attrs_SplineActivation *a = &n->attrs.SplineActivation;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  spline s;
  RLX_TRY(spline_setup(n, in, a->num_knots, a->grid_min, a->grid_max, &s));
  size_t total = ru_numel(&in[0].shape);
  rlx_dtype t = ru_dt(&in[0]);
  for (size_t i = 0; i < total; i++) {
    size_t c = i % s.C, j = 0;
    double x = rlx_elem_get(in[0].data, t, i), f = 0, y;
    switch (spline_locate(&s, x, &j, &f)) {
    case SP_BELOW: y = coeff(&s, c, 0); break;
    case SP_ABOVE: y = coeff(&s, c, s.nk - 1); break;
    case SP_INSIDE: y = (1.0 - f) * coeff(&s, c, j) + f * coeff(&s, c, j + 1); break;
    default: y = NAN; break;
    }
    ru_store(out->data, ru_dt(out), i, y);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(SplineActivationBackwardX) {
  (void)ctx;
  const rlx_attrs_SplineActivationBackwardX *a = &n->attrs.SplineActivationBackwardX;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  spline s;
  RLX_TRY(spline_setup(n, in, a->num_knots, a->grid_min, a->grid_max, &s));
  RLX_TRY(rb_need_float(n, in, 2, "dy"));
  size_t total = ru_numel(&in[0].shape);
  rlx_dtype t = ru_dt(&in[0]), td = ru_dt(&in[2]);
  for (size_t i = 0; i < total; i++) {
    size_t c = i % s.C, j = 0;
    double x = rlx_elem_get(in[0].data, t, i), dy = rlx_elem_get(in[2].data, td, i), f = 0, g;
    switch (spline_locate(&s, x, &j, &f)) {
    case SP_INSIDE: g = dy * (coeff(&s, c, j + 1) - coeff(&s, c, j)) / s.h; break;
    case SP_NAN: g = NAN; break;
    default: g = 0.0; break;
    }
    ru_store(out->data, ru_dt(out), i, g);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(SplineActivationBackwardCoeff) {
  (void)ctx;
  const rlx_attrs_SplineActivationBackwardCoeff *a = &n->attrs.SplineActivationBackwardCoeff;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  spline s;
  RLX_TRY(spline_setup(n, in, a->num_knots, a->grid_min, a->grid_max, &s));
  RLX_TRY(rb_need_float(n, in, 2, "dy"));
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, s.C * s.nk, sizeof *acc, &acc));
  size_t total = ru_numel(&in[0].shape);
  rlx_dtype t = ru_dt(&in[0]), td = ru_dt(&in[2]);
  for (size_t i = 0; i < total; i++) {
    size_t c = s.C == 1 ? 0 : i % s.C, j = 0;
    double x = rlx_elem_get(in[0].data, t, i), dy = rlx_elem_get(in[2].data, td, i), f = 0;
    double *row = acc + c * s.nk;
    switch (spline_locate(&s, x, &j, &f)) {
    case SP_BELOW: row[0] += dy; break;
    case SP_ABOVE: row[s.nk - 1] += dy; break;
    case SP_INSIDE:
      row[j] += (1.0 - f) * dy;
      row[j + 1] += f * dy;
      break;
    default: row[0] += NAN; break;
    }
  }
  for (size_t i = 0; i < s.C * s.nk; i++) ru_store(out->data, ru_dt(out), i, acc[i]);
  free(acc);
  return RLX_OK;
}
