/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: codebook ("synth") matmuls and spline activations. The spec does not define these
 * ops; the definitions are ours (docs/ir-decisions.d/special-shapes.md):
 *   SynthMatMul [x [M,K], codes [K/entry_dim, N], codebook [num_entries, entry_dim]] -> [M,N] f32,
 *     W[k,n] = codebook[codes[k/entry_dim, n], k % entry_dim], out = x . W;
 *   SplineActivation [x [..,C], coeffs [C, num_knots] or [num_knots]] -> x: per-channel
 *     piecewise-linear interpolation of num_knots values on a uniform grid over [grid_min, grid_max],
 *     clamped outside. */
#include "infer_special.h"

static rlx_status check_codebook_attrs(int32_t kind, int64_t entry_dim, int64_t num_entries) {
  if (kind != RLX_SYNTH_KIND_CODEBOOK) return rlx_shape_error("attribute kind: %d is not a SynthKind", kind);
  if (entry_dim < 1) return rlx_shape_error("attribute entry_dim: %lld must be >= 1", (long long)entry_dim);
  if (num_entries < 1) return rlx_shape_error("attribute num_entries: %lld must be >= 1", (long long)num_entries);
  return RLX_OK;
}

/* codes: rank 2, integer or f32 indices; codebook: float [num_entries, entry_dim]. */
static rlx_status check_codes_codebook(const rlx_infer_ctx *c, uint32_t ci, uint32_t bi, int64_t entry_dim,
                                       int64_t num_entries) {
  rlx_dtype ct = (rlx_dtype)c->in[ci]->dtype;
  if (!rlx_dtype_is_int(ct) && ct != RLX_F32)
    return rlx_shape_error("operand %u (codes) has dtype %s; expected integer or f32-encoded indices", ci,
                           rlx_dtype_name(ct));
  RLX_TRY(sp_rank(c, ci, "codes", 2));
  RLX_TRY(sp_float(c, bi, "codebook"));
  RLX_TRY(sp_rank(c, bi, "codebook", 2));
  RLX_TRY(sp_dim_eq(c, bi, "codebook", 0, num_entries, "attribute num_entries"));
  return sp_dim_eq(c, bi, "codebook", 1, entry_dim, "attribute entry_dim");
}

/* x [M,K] against codes [K/entry_dim, N]. */
static rlx_status check_synth_x(const rlx_infer_ctx *c, int64_t entry_dim) {
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(sp_rank(c, 0, "x", 2));
  rlx_dim k = c->in[0]->dims[1];
  if (!sp_static(k)) return RLX_OK;
  if (k % entry_dim)
    return rlx_shape_error("operand 0 (x) has K = %lld, not a multiple of attribute entry_dim (%lld)", (long long)k,
                           (long long)entry_dim);
  return sp_dim_eq(c, 1, "codes", 0, k / entry_dim, "K / entry_dim code rows");
}

rlx_status rlx_infer_SynthMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SynthMatMul *a = &c->a->SynthMatMul;
  RLX_TRY(sp_arity(c, 3, "x, codes, codebook"));
  RLX_TRY(check_codebook_attrs(a->kind, a->entry_dim, a->num_entries));
  RLX_TRY(check_codes_codebook(c, 1, 2, a->entry_dim, a->num_entries));
  RLX_TRY(check_synth_x(c, a->entry_dim));
  rlx_dim d[2] = {c->in[0]->dims[0], c->in[1]->dims[1]};
  *out = sp_make(RLX_F32, 2, d);
  return RLX_OK;
}

rlx_status rlx_infer_SynthMatMulBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SynthMatMulBackward *a = &c->a->SynthMatMulBackward;
  RLX_TRY(sp_arity(c, 4, "x, codes, codebook, dy"));
  RLX_TRY(check_codebook_attrs(a->kind, a->entry_dim, a->num_entries));
  if (a->wrt != RLX_SYNTH_WRT_DX && a->wrt != RLX_SYNTH_WRT_CODEBOOK)
    return rlx_shape_error("attribute wrt: %d is not a SynthBwdWrt", a->wrt);
  RLX_TRY(check_codes_codebook(c, 1, 2, a->entry_dim, a->num_entries));
  RLX_TRY(check_synth_x(c, a->entry_dim));
  RLX_TRY(sp_float(c, 3, "dy"));
  RLX_TRY(sp_rank(c, 3, "dy", 2));
  RLX_TRY(sp_dim_eq(c, 3, "dy", 0, c->in[0]->dims[0], "M = x's axis 0"));
  RLX_TRY(sp_dim_eq(c, 3, "dy", 1, c->in[1]->dims[1], "N = codes' axis 1"));
  *out = *c->in[a->wrt == RLX_SYNTH_WRT_DX ? 0 : 2];
  return RLX_OK;
}

rlx_status rlx_infer_SynthReconstruct(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SynthReconstruct *a = &c->a->SynthReconstruct;
  RLX_TRY(sp_arity(c, 2, "codes, codebook"));
  RLX_TRY(check_codebook_attrs(RLX_SYNTH_KIND_CODEBOOK, a->entry_dim, a->num_entries));
  RLX_TRY(check_codes_codebook(c, 0, 1, a->entry_dim, a->num_entries));
  rlx_dim d[2] = {0, c->in[0]->dims[1]};
  RLX_TRY(sp_mul(c->in[0]->dims[0], a->entry_dim, &d[0]));
  *out = sp_make((rlx_dtype)c->in[1]->dtype, 2, d);
  return sp_resolve(c, out);
}

/* ---- spline activations ---- */

static rlx_status check_spline(const rlx_infer_ctx *c, int64_t knots, float lo, float hi) {
  if (knots < 2) return rlx_shape_error("attribute num_knots: %lld must be >= 2", (long long)knots);
  if (!sp_finite(lo) || !sp_finite(hi) || !(lo < hi))
    return rlx_shape_error("attribute grid_min (%g) must be finite and below attribute grid_max (%g)", (double)lo,
                           (double)hi);
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(sp_float(c, 1, "coeffs"));
  const rlx_shape *x = c->in[0], *k = c->in[1];
  if (k->rank == 1) return sp_dim_eq(c, 1, "coeffs", 0, knots, "attribute num_knots");
  if (k->rank != 2)
    return rlx_shape_error("operand 1 (coeffs) has shape %s; expected [num_knots] or [C, num_knots]", rlx_fmt_shape(k));
  RLX_TRY(sp_dim_eq(c, 1, "coeffs", 1, knots, "attribute num_knots"));
  if (!x->rank)
    return rlx_shape_error("operand 0 (x) is a scalar; per-channel coeffs [C, num_knots] need a channel (last) axis");
  return sp_dim_eq(c, 1, "coeffs", 0, x->dims[x->rank - 1], "C = x's last axis");
}

rlx_status rlx_infer_SplineActivation(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SplineActivation *a = &c->a->SplineActivation;
  RLX_TRY(sp_arity(c, 2, "x, coeffs"));
  RLX_TRY(check_spline(c, a->num_knots, a->grid_min, a->grid_max));
  *out = *c->in[0];
  return RLX_OK;
}

static rlx_status spline_backward(const rlx_infer_ctx *c, int64_t knots, float lo, float hi) {
  RLX_TRY(sp_arity(c, 3, "x, coeffs, dy"));
  RLX_TRY(check_spline(c, knots, lo, hi));
  return sp_shape_eq(c, 2, "dy", c->in[0], "the upstream gradient has x's shape");
}

rlx_status rlx_infer_SplineActivationBackwardX(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SplineActivationBackwardX *a = &c->a->SplineActivationBackwardX;
  RLX_TRY(spline_backward(c, a->num_knots, a->grid_min, a->grid_max));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_SplineActivationBackwardCoeff(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_SplineActivationBackwardCoeff *a = &c->a->SplineActivationBackwardCoeff;
  RLX_TRY(spline_backward(c, a->num_knots, a->grid_min, a->grid_max));
  *out = *c->in[1];
  return RLX_OK;
}
