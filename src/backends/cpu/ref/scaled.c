/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: the scaled low-precision family (spec ir-special §1.3, §1.4) —
 * ScaledQuantScale, ScaledQuantize, ScaledDequantize, ScaledMatMul and ScaledGroupedMatMul.
 * Codes travel one per byte (u8). Data are viewed as [rows, K] with K the last axis; a block scale
 * of element (r, p) is byte r * ceil(K / block) + p / block (E8M0: 2^(b - 127), 0xFF NaN; Nvfp4:
 * an E4M3 value, its NaN code reading 0); PerTensor is one f32. Products accumulate in double and
 * are rounded once to f32. */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/ref/quant_formats.h"
#include "backends/cpu/ref/ref_util_b.h"

typedef struct scale_view {
  int32_t layout;
  size_t block, nblk; /* block length along K, blocks per row */
  const rlx_tensor *t;
} scale_view;

static rlx_status scale_setup(const rlx_node *n, const rlx_tensor *in, uint32_t i, int32_t layout, int64_t block,
                              size_t rows, size_t K, scale_view *v) {
  v->layout = layout;
  v->t = &in[i];
  v->block = layout == RLX_SCALE_LAYOUT_PER_TENSOR ? (K ? K : 1) : (size_t)block;
  v->nblk = layout == RLX_SCALE_LAYOUT_PER_TENSOR ? 1 : (K + v->block - 1) / v->block;
  size_t want = layout == RLX_SCALE_LAYOUT_PER_TENSOR ? 1 : rows * v->nblk;
  rlx_dtype want_t = layout == RLX_SCALE_LAYOUT_PER_TENSOR ? RLX_F32 : RLX_U8;
  if (ru_dt(&in[i]) != want_t || rlx_tensor_numel(&in[i]) != want)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (scale) %s %s; expected %zu %s", i,
                    rlx_dtype_name(ru_dt(&in[i])), ru_fmt(&in[i].shape), want, rlx_dtype_name(want_t));
  return RLX_OK;
}

static double scale_of(const scale_view *v, size_t row, size_t p) {
  if (v->layout == RLX_SCALE_LAYOUT_PER_TENSOR) return ((const float *)v->t->data)[0];
  uint8_t b = ((const uint8_t *)v->t->data)[row * v->nblk + p / v->block];
  return v->layout == RLX_SCALE_LAYOUT_BLOCK_MX_E8M0 ? (double)rq_e8m0(b) : (double)rq_e4m3_scale(b);
}

/* Rows and K of a data operand viewed as [rows, K]. */
static void rows_k(const rlx_shape *s, size_t *rows, size_t *K) {
  size_t total = ru_numel(s);
  *K = s->rank ? (size_t)s->dims[s->rank - 1] : 1;
  *rows = *K ? total / *K : 0;
}

static int clamp_i(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

#define FMT_OF(A) rq_fmt_of((A)->format, (A)->custom_exp, (A)->custom_mant, (A)->custom_bias)

RLX_CPU_KERNEL(ScaledQuantScale) {
  (void)ctx;
  const rlx_attrs_ScaledQuantScale *a = &n->attrs.ScaledQuantScale;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  rq_fmt f = FMT_OF(a);
  double fmax_ = rq_fmt_max(&f);
  size_t rows, K;
  rows_k(&in[0].shape, &rows, &K);
  rlx_dtype t = ru_dt(&in[0]);
  if (a->layout == RLX_SCALE_LAYOUT_PER_TENSOR) {
    double amax = 0;
    for (size_t i = 0; i < rows * K; i++) amax = fmax(amax, fabs(rlx_elem_get(in[0].data, t, i)));
    ((float *)out->data)[0] = amax == 0 ? 1.0f : (float)(amax / fmax_);
    return RLX_OK;
  }
  size_t blk = (size_t)a->block, nblk = (K + blk - 1) / blk;
  uint8_t *o = out->data;
  for (size_t r = 0; r < rows; r++)
    for (size_t b = 0; b < nblk; b++) {
      double amax = 0;
      for (size_t p = b * blk; p < K && p < (b + 1) * blk; p++)
        amax = fmax(amax, fabs(rlx_elem_get(in[0].data, t, r * K + p)));
      double s = amax == 0 ? 1.0 : amax / fmax_;
      uint8_t code;
      if (a->layout == RLX_SCALE_LAYOUT_BLOCK_MX_E8M0) {
        int e;
        double m = frexp(s, &e); /* s = m 2^e, m in [0.5, 1): ceil(log2 s) = e, or e - 1 when m = 0.5 */
        int up = isinf(s) ? 128 : (m == 0.5 ? e - 1 : e);
        code = isnan(s) ? 0xFF : (uint8_t)clamp_i(up + 127, 0, 254);
      } else {
        code = rq_e4m3_encode(s);
      }
      o[r * nblk + b] = code;
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(ScaledQuantize) {
  (void)ctx;
  const rlx_attrs_ScaledQuantize *a = &n->attrs.ScaledQuantize;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  rq_fmt f = FMT_OF(a);
  size_t rows, K;
  rows_k(&in[0].shape, &rows, &K);
  scale_view sv;
  RLX_TRY(scale_setup(n, in, 1, a->layout, a->block, rows, K, &sv));
  rlx_dtype t = ru_dt(&in[0]);
  uint8_t *o = out->data;
  for (size_t r = 0; r < rows; r++)
    for (size_t p = 0; p < K; p++)
      o[r * K + p] = rq_fmt_encode(&f, rlx_elem_get(in[0].data, t, r * K + p) / scale_of(&sv, r, p));
  return RLX_OK;
}

RLX_CPU_KERNEL(ScaledDequantize) {
  (void)ctx;
  const rlx_attrs_ScaledDequantize *a = &n->attrs.ScaledDequantize;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_U8));
  rq_fmt f = FMT_OF(a);
  size_t rows, K;
  rows_k(&in[0].shape, &rows, &K);
  scale_view sv;
  RLX_TRY(scale_setup(n, in, 1, a->layout, a->block, rows, K, &sv));
  const uint8_t *c = in[0].data;
  for (size_t r = 0; r < rows; r++)
    for (size_t p = 0; p < K; p++)
      ru_store(out->data, ru_dt(out), r * K + p, rq_fmt_decode(&f, c[r * K + p]) * scale_of(&sv, r, p));
  return RLX_OK;
}

/* Decoded, scaled operand [rows, K] as doubles. */
static rlx_status decode_operand(const rlx_node *n, const rlx_tensor *codes, const rq_fmt *f, const scale_view *sv,
                                 size_t rows, size_t K, double **out) {
  double *v = NULL;
  RLX_TRY(rb_alloc(n, rows * K, sizeof *v, &v));
  const uint8_t *c = codes->data;
  for (size_t r = 0; r < rows; r++)
    for (size_t p = 0; p < K; p++) v[r * K + p] = rq_fmt_decode(f, c[r * K + p]) * scale_of(sv, r, p);
  *out = v;
  return RLX_OK;
}

RLX_CPU_KERNEL(ScaledMatMul) {
  (void)ctx;
  const rlx_attrs_ScaledMatMul *a = &n->attrs.ScaledMatMul;
  RLX_TRY(ru_prologue(n, in, n_in, a->has_bias ? 5 : 4, a->has_bias ? 5 : 4, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_U8));
  RLX_TRY(ru_need_dtype(n, in, 1, RLX_U8));
  const rlx_shape *ls = &in[0].shape, *rs = &in[1].shape;
  if (ls->rank != 2 || rs->rank != 2 || ls->dims[1] != rs->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands lhs %s and rhs %s must be [M, K] and [N, K]", ru_fmt(ls),
                    ru_fmt(rs));
  size_t M = (size_t)ls->dims[0], K = (size_t)ls->dims[1], N = (size_t)rs->dims[0];
  scale_view sl, sr;
  RLX_TRY(scale_setup(n, in, 2, a->layout, a->block, M, K, &sl));
  RLX_TRY(scale_setup(n, in, 3, a->layout, a->block, N, K, &sr));
  rq_fmt fl = rq_fmt_of(a->lhs_format, 0, 0, 0), fr = rq_fmt_of(a->rhs_format, 0, 0, 0);
  double *L = NULL, *R = NULL;
  rlx_status st = decode_operand(n, &in[0], &fl, &sl, M, K, &L);
  if (st == RLX_OK) st = decode_operand(n, &in[1], &fr, &sr, N, K, &R);
  for (size_t i = 0; st == RLX_OK && i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double acc = a->has_bias ? rlx_elem_get(in[4].data, ru_dt(&in[4]), j) : 0.0;
      for (size_t p = 0; p < K; p++) acc += L[i * K + p] * R[j * K + p];
      ru_store(out->data, ru_dt(out), i * N + j, acc);
    }
  free(L);
  free(R);
  return st;
}

RLX_CPU_KERNEL(ScaledGroupedMatMul) {
  (void)ctx;
  const rlx_attrs_ScaledGroupedMatMul *a = &n->attrs.ScaledGroupedMatMul;
  RLX_TRY(ru_prologue(n, in, n_in, a->has_bias ? 6 : 5, a->has_bias ? 6 : 5, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_U8));
  RLX_TRY(ru_need_dtype(n, in, 1, RLX_U8));
  RLX_TRY(rb_need_index(n, in, 4, "expert_idx"));
  const rlx_shape *xs = &in[0].shape, *ws = &in[1].shape;
  if (xs->rank != 2 || ws->rank != 3 || ws->dims[2] != xs->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands in_codes %s and w_codes %s must be [M, K] and [E, N, K]",
                    ru_fmt(xs), ru_fmt(ws));
  size_t M = (size_t)xs->dims[0], K = (size_t)xs->dims[1], E = (size_t)ws->dims[0], N = (size_t)ws->dims[1];
  scale_view sx, sw;
  RLX_TRY(scale_setup(n, in, 2, a->layout, a->block, M, K, &sx));
  RLX_TRY(scale_setup(n, in, 3, a->layout, a->block, E * N, K, &sw));
  rq_fmt fl = rq_fmt_of(a->lhs_format, 0, 0, 0), fr = rq_fmt_of(a->rhs_format, 0, 0, 0);
  double *X = NULL, *Wd = NULL;
  rlx_status st = decode_operand(n, &in[0], &fl, &sx, M, K, &X);
  if (st == RLX_OK) st = decode_operand(n, &in[1], &fr, &sw, E * N, K, &Wd);
  for (size_t i = 0; st == RLX_OK && i < M; i++) {
    int64_t e = 0;
    st = rb_read_index(n, in, 4, i, (int64_t)E, false, "the expert axis of operand 1 (w_codes)", &e);
    for (size_t j = 0; st == RLX_OK && j < N; j++) {
      double acc = a->has_bias ? rlx_elem_get(in[5].data, ru_dt(&in[5]), (size_t)e * N + j) : 0.0;
      for (size_t p = 0; p < K; p++) acc += X[i * K + p] * Wd[((size_t)e * N + j) * K + p];
      ru_store(out->data, ru_dt(out), i * N + j, acc);
    }
  }
  free(X);
  free(Wd);
  return st;
}
