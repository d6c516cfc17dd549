/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of elementwise ops: Fma, Clamp and FakeQuantize (PerBatch). */
#include <math.h>

#include "passes/decompose/decompose.h"

/* a*b + c, with two roundings instead of one. */
RLX_DECOMPOSE_DECL(Fma) {
  (void)src;
  (void)n;
  rlx_id ab;
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, in[0], in[1], &ab));
  return rlx_binary(dst, RLX_BINOP_ADD, ab, in[2], out);
}

/* min(max(x, lo), hi) with rank-0 constants of x's dtype. NaN passes through (Max/Min propagate
 * it). For integer x the bounds are the integers inside [min, max]: ceil(min) and floor(max). */
RLX_DECOMPOSE_DECL(Clamp) {
  (void)src;
  double lo = n->attrs.Clamp.min, hi = n->attrs.Clamp.max;
  if (rlx_dtype_is_int((rlx_dtype)dc_shape(dst, in[0]).dtype)) lo = ceil(lo), hi = floor(hi);
  rlx_id y;
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MAX, in[0], lo, &y));
  return rlx_binary_scalar(dst, RLX_BINOP_MIN, y, hi, out);
}

/* PerBatch fake quantization (ir-special §1.4):
 *   s   = max(reduce_max(|x|) / qmax, 1e-12)   over every axis except `axis`, kept as size 1
 *   out = clamp(round(x / s), -qmax, qmax) * s
 * Round is the IR's Activation Round (half to even). EMA/Fixed read and update a state tensor and
 * have no decomposition. */
RLX_DECOMPOSE_DECL(FakeQuantize) {
  (void)src;
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  if (a->scale_mode != RLX_SCALE_MODE_PER_BATCH)
    return dc_unsupported(n, "scale_mode %s keeps a state tensor; only PerBatch has a decomposition",
                          rlx_enum_scale_mode.names[a->scale_mode]);
  double qmax = a->bits == 8 ? 127.0 : a->bits == 4 ? 7.0 : a->bits == 2 ? 1.0 : 0.0;
  if (qmax == 0.0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "FakeQuantize: attribute bits is %lld; use 8, 4 or 2", (long long)a->bits);
  rlx_shape xs = dc_shape(dst, in[0]);
  uint32_t ch;
  RLX_TRY(dc_axis(n, "axis", a->axis, xs.rank, &ch));
  int64_t axes[RLX_MAX_RANK];
  uint32_t na = 0;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (i != ch) axes[na++] = i;

  rlx_id absx, amax, s, q;
  RLX_TRY(rlx_activation(dst, RLX_ACT_ABS, in[0], &absx));
  if (na)
    RLX_TRY(rlx_reduce_axes(dst, RLX_REDUCE_MAX, absx, na, axes, true, &amax));
  else
    amax = absx;
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_DIV, amax, qmax, &s));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MAX, s, 1e-12, &s));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_DIV, in[0], s, &q));
  RLX_TRY(rlx_activation(dst, RLX_ACT_ROUND, q, &q));
  rlx_attrs_Clamp c = {.min = (float)-qmax, .max = (float)qmax};
  RLX_TRY(rlx_build_Clamp(dst, &q, 1, &c, NULL, &q));
  return rlx_binary(dst, RLX_BINOP_MUL, q, s, out);
}
