/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of scans and histograms: CumProd and CumMax as O(L^2) masked reductions, and
 * Histogram as one masked count per bin. */
#include <math.h>

#include "passes/decompose/decompose.h"

/* Lowest value of dtype t: -inf for floats, the minimum for integers (CumMax's identity). */
static double lowest_of(rlx_dtype t) {
  switch (t) {
  case RLX_I8: return -128.0;
  case RLX_I16: return -32768.0;
  case RLX_I32: return -2147483648.0;
  case RLX_I64: return -9223372036854775808.0;
  case RLX_U8:
  case RLX_U32:
  case RLX_BOOL: return 0.0;
  default: return -INFINITY;
  }
}

/* out[.., i, ..] = reduce_{j <= i (or j < i if exclusive)} x[.., j, ..] along `axis`:
 * x gets a query axis inserted before `axis` ([pre, 1, L, post]), a constant [L, L, 1..] Bool
 * mask selects the prefix of every query row ([pre, L, L, post]), cells outside it become the
 * reduction's identity, and one Reduce over the source axis removes it again. */
static rlx_status masked_scan(rlx_graph *dst, const rlx_node *n, rlx_id x, int64_t axis_attr, bool exclusive,
                              rlx_reduce op, double identity, rlx_id *out) {
  rlx_shape xs = dc_shape(dst, x);
  uint32_t ax;
  RLX_TRY(dc_axis(n, "axis", axis_attr, xs.rank, &ax));
  int64_t L = xs.dims[ax];
  if (L < 0) return dc_unsupported(n, "the scanned axis %u is symbolic", ax);
  if (L == 0) {
    *out = x;
    return RLX_OK;
  }
  size_t cells;
  if (!rlx_mul_size((size_t)L, (size_t)L, &cells)) return rlx_errorf(RLX_ERR_OVERFLOW, "scan mask size overflows");
  uint32_t post = xs.rank - ax - 1;
  rlx_dim md[RLX_MAX_RANK];
  md[0] = L;
  md[1] = L;
  for (uint32_t i = 0; i < post; i++) md[2 + i] = 1;
  if (2 + post > RLX_MAX_RANK) return dc_unsupported(n, "rank too large for the mask");
  const rlx_allocator *al = rlx_graph_allocator(dst);
  double *m = al->alloc(al->ctx, cells * sizeof *m);
  if (!m) return rlx_errorf(RLX_ERR_OOM, "out of memory for a scan mask");
  for (int64_t i = 0; i < L; i++)
    for (int64_t j = 0; j < L; j++) m[i * L + j] = exclusive ? j < i : j <= i;
  rlx_id mask, xe, fill, masked;
  rlx_status s = rlx_values(dst, RLX_BOOL, 2 + post, md, m, &mask);
  al->free(al->ctx, m);
  RLX_TRY(s);
  RLX_TRY(rlx_unsqueeze(dst, x, ax, &xe));
  RLX_TRY(rlx_scalar(dst, (rlx_dtype)xs.dtype, identity, &fill));
  RLX_TRY(rlx_where(dst, mask, xe, fill, &masked));
  int64_t red[1] = {(int64_t)ax + 1};
  return rlx_reduce_axes(dst, op, masked, 1, red, false, out);
}

RLX_DECOMPOSE_DECL(CumProd) {
  (void)src;
  const rlx_attrs_CumProd *a = &n->attrs.CumProd;
  return masked_scan(dst, n, in[0], a->axis, a->exclusive, RLX_REDUCE_PROD, 1.0, out);
}

RLX_DECOMPOSE_DECL(CumMax) {
  (void)src;
  const rlx_attrs_CumMax *a = &n->attrs.CumMax;
  return masked_scan(dst, n, in[0], a->axis, a->exclusive, RLX_REDUCE_MAX,
                     lowest_of((rlx_dtype)dc_shape(dst, in[0]).dtype), out);
}

/* The smallest float >= e, so that for float x: x >= e  <=>  x >= up_to_float(e). */
static double up_to_float(double e) {
  float f = (float)e;
  if ((double)f < e) f = nextafterf(f, INFINITY);
  return f;
}

/* Histogram: bin b counts lo_b <= x < hi_b (the last bin also takes x == max) with the edges
 * lo_b = min + b * (max - min) / bins computed in double; NaN and values outside [min, max] fail the
 * compares and are dropped. Each bin is Cast(Ge)·Cast(Lt) as F32, summed over every axis and
 * reshaped to [1]; the bins are concatenated into [bins] F32. Float data of up to 32 bits is
 * compared in F32 against edges rounded up to the next float (the same outcome as comparing in
 * double); F64 and integer data are compared in F64. */
RLX_DECOMPOSE_DECL(Histogram) {
  (void)src;
  const rlx_attrs_Histogram *a = &n->attrs.Histogram;
  if (a->bins < 1) return rlx_errorf(RLX_ERR_INVALID_ARG, "Histogram: attribute bins must be >= 1");
  if (a->bins > 65536) return dc_unsupported(n, "%lld bins would unroll into too many nodes", (long long)a->bins);
  rlx_dtype dt = (rlx_dtype)dc_shape(dst, in[0]).dtype;
  rlx_dtype t = dt == RLX_F32 || dt == RLX_F16 || dt == RLX_BF16 ? RLX_F32 : RLX_F64;
  rlx_id x;
  RLX_TRY(rlx_cast_to(dst, in[0], t, &x));
  uint32_t r = dc_shape(dst, x).rank;
  int64_t axes[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) axes[i] = i;
  uint32_t bins = (uint32_t)a->bins;
  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *parts = al->alloc(al->ctx, bins * sizeof *parts);
  if (!parts) return rlx_errorf(RLX_ERR_OOM, "out of memory for Histogram bins");
  double lo = a->min, hi = a->max, step = (hi - lo) / (double)bins;
  rlx_status s = RLX_OK;
  for (uint32_t b = 0; b < bins && !s; b++) {
    bool last = b + 1 == bins;
    double e0 = lo + (double)b * step, e1 = last ? hi : lo + (double)(b + 1) * step;
    if (t == RLX_F32) {
      e0 = up_to_float(e0);
      if (!last) e1 = up_to_float(e1); /* x < e1 <=> x < up(e1); max itself is a float */
    }
    rlx_id c0, c1, ge, lt, both, cnt;
    rlx_dim one = 1;
    s = rlx_scalar(dst, t, e0, &c0);
    if (!s) s = rlx_scalar(dst, t, e1, &c1);
    if (!s) s = rlx_compare(dst, RLX_CMP_GE, x, c0, &ge);
    if (!s) s = rlx_compare(dst, last ? RLX_CMP_LE : RLX_CMP_LT, x, c1, &lt);
    if (!s) s = rlx_cast_to(dst, ge, RLX_F32, &ge);
    if (!s) s = rlx_cast_to(dst, lt, RLX_F32, &lt);
    if (!s) s = rlx_binary(dst, RLX_BINOP_MUL, ge, lt, &both);
    if (!s) s = r ? rlx_reduce_axes(dst, RLX_REDUCE_SUM, both, r, axes, false, &cnt) : (cnt = both, RLX_OK);
    if (!s) s = rlx_reshape_dims(dst, cnt, 1, &one, &parts[b]);
  }
  if (!s) s = rlx_concat(dst, parts, bins, 0, out);
  al->free(al->ctx, parts);
  return s;
}
