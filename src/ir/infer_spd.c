/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: SPD manifold and symmetric eigen ops (spec ir-special §6). Matrices are floating
 * point and every matrix operand shares operand 0's dtype. Packed outputs:
 *   ReEig/LogEig [2n^2 + n] = Y | lambda | U;  Eigh [n^2 + n] = lambda | U;  EighBatch [B, n^2 + n];
 *   SpdLogMap/ExpMapBackward [2, n, n];  SpdParallelTransportBackward [3, n, n]. */
#include "infer_special.h"

static rlx_status same_float(const rlx_infer_ctx *c, uint32_t n, const char *const *roles) {
  RLX_TRY(sp_float(c, 0, roles[0]));
  for (uint32_t i = 1; i < n; i++) RLX_TRY(sp_same_dtype(c, i, roles[i], 0));
  return RLX_OK;
}

/* Operand i is [n, n]. *n carries the size across operands (SP_UNKNOWN before the first). */
static rlx_status square(const rlx_infer_ctx *c, uint32_t i, const char *role, rlx_dim *n) {
  RLX_TRY(sp_rank(c, i, role, 2));
  const rlx_dim *d = c->in[i]->dims;
  if (sp_conflict(d[0], d[1]))
    return rlx_shape_error("operand %u (%s) has shape %s; expected a square matrix", i, role, rlx_fmt_shape(c->in[i]));
  rlx_dim want[2] = {*n, *n};
  RLX_TRY(sp_expect(c, i, role, "[n, n]", 2, want));
  rlx_dim own = sp_pick(d[0], d[1]);
  *n = *n == SP_UNKNOWN ? own : sp_pick(*n, own);
  return RLX_OK;
}

/* Operand i is [B, n, n]; *b and *n carry the sizes across operands like square(). */
static rlx_status batch_square(const rlx_infer_ctx *c, uint32_t i, const char *role, rlx_dim *b, rlx_dim *n) {
  RLX_TRY(sp_rank(c, i, role, 3));
  const rlx_dim *d = c->in[i]->dims;
  if (sp_conflict(d[1], d[2]))
    return rlx_shape_error("operand %u (%s) has shape %s; expected a batch of square matrices [B, n, n]", i, role,
                           rlx_fmt_shape(c->in[i]));
  rlx_dim want[3] = {*b, *n, *n};
  RLX_TRY(sp_expect(c, i, role, "[B, n, n]", 3, want));
  rlx_dim own = sp_pick(d[1], d[2]);
  *b = *b == SP_UNKNOWN ? d[0] : sp_pick(*b, d[0]);
  *n = *n == SP_UNKNOWN ? own : sp_pick(*n, own);
  return RLX_OK;
}

static rlx_status eps_attr(float eps, bool strict) {
  if (!sp_finite(eps) || (strict ? !(eps > 0) : eps < 0))
    return rlx_shape_error("attribute eps: %g must be finite and %s", (double)eps, strict ? "positive" : ">= 0");
  return RLX_OK;
}

static rlx_status fn_kind(int32_t kind) {
  if (kind < 0 || kind >= RLX_SPD_FN_COUNT) return rlx_shape_error("attribute kind: %d is not an SpdMatFn", kind);
  return RLX_OK;
}

static rlx_status karcher_attrs(int64_t iters, float tol) {
  if (iters < 0) return rlx_shape_error("attribute iters: %lld must be >= 0", (long long)iters);
  if (!sp_finite(tol) || tol < 0) return rlx_shape_error("attribute tol: %g must be finite and >= 0", (double)tol);
  return RLX_OK;
}

static rlx_shape mat(const rlx_infer_ctx *c, uint32_t rank, const rlx_dim *d) {
  return sp_make((rlx_dtype)c->in[0]->dtype, rank, d);
}

/* n^2 + n (and 2n^2 + n when `twice`); SP_UNKNOWN when n is symbolic. */
static rlx_status packed_eig_len(rlx_dim n, bool twice, rlx_dim *len) {
  rlx_dim sq;
  RLX_TRY(sp_mul(n, n, &sq));
  if (twice) RLX_TRY(sp_mul(sq, 2, &sq));
  return sp_add(sq, n, len);
}

/* Recovers n from a packed length L = n^2 + n; error when L has another form. */
static rlx_status eig_n_from_len(const rlx_infer_ctx *c, uint32_t i, const char *role, rlx_dim len, rlx_dim *n) {
  if (!sp_static(len)) {
    *n = SP_UNKNOWN;
    return RLX_OK;
  }
  int64_t r = (int64_t)sqrt((double)len), p;
  while (r > 0 && (!ck_mul(r, r + 1, &p) || p > len)) r--;
  while (ck_mul(r + 1, r + 2, &p) && p <= len) r++;
  if (!ck_mul(r, r + 1, &p) || p != len)
    return rlx_shape_error("operand %u (%s) has shape %s; a packed eigendecomposition has n^2 + n elements "
                           "(2, 6, 12, 20, ...), and %lld is not of that form",
                           i, role, rlx_fmt_shape(c->in[i]), (long long)len);
  *n = r;
  return RLX_OK;
}

rlx_status rlx_infer_BiMap(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"w", "x"};
  RLX_TRY(sp_arity(c, 2, "w, x"));
  RLX_TRY(same_float(c, 2, roles));
  rlx_dim n = SP_UNKNOWN;
  RLX_TRY(square(c, 1, "x", &n));
  RLX_TRY(sp_rank(c, 0, "w", 2));
  RLX_TRY(sp_dim_eq(c, 0, "w", 1, n, "n = x's size"));
  rlx_dim d[2] = {c->in[0]->dims[0], c->in[0]->dims[0]};
  *out = mat(c, 2, d);
  return RLX_OK;
}

static rlx_status eig_forward(const rlx_infer_ctx *c, float eps, bool strict_eps, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(eps_attr(eps, strict_eps));
  RLX_TRY(sp_float(c, 0, "x"));
  rlx_dim n = SP_UNKNOWN, len;
  RLX_TRY(square(c, 0, "x", &n));
  RLX_TRY(packed_eig_len(n, true, &len));
  *out = mat(c, 1, &len);
  return sp_resolve(c, out);
}

rlx_status rlx_infer_ReEig(const rlx_infer_ctx *c, rlx_shape *out) {
  return eig_forward(c, c->a->ReEig.eps, false, out);
}
rlx_status rlx_infer_LogEig(const rlx_infer_ctx *c, rlx_shape *out) {
  return eig_forward(c, c->a->LogEig.eps, true, out);
}

/* [lambda [n], U [n^2 elements], dY [n^2 elements]] -> [n, n]. */
static rlx_status eig_backward(const rlx_infer_ctx *c, float eps, bool strict_eps, rlx_shape *out) {
  static const char *const roles[] = {"lambda", "u", "dy"};
  RLX_TRY(sp_arity(c, 3, "lambda, u, dy"));
  RLX_TRY(eps_attr(eps, strict_eps));
  RLX_TRY(same_float(c, 3, roles));
  RLX_TRY(sp_rank(c, 0, "lambda", 1));
  rlx_dim n = c->in[0]->dims[0], sq;
  RLX_TRY(sp_mul(n, n, &sq));
  RLX_TRY(sp_count_eq(c, 1, "u", sq, "n^2 eigenvector entries"));
  RLX_TRY(sp_count_eq(c, 2, "dy", sq, "the n x n output gradient"));
  rlx_dim d[2] = {n, n};
  *out = mat(c, 2, d);
  return RLX_OK;
}

rlx_status rlx_infer_ReEigBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  return eig_backward(c, c->a->ReEigBackward.eps, false, out);
}
rlx_status rlx_infer_LogEigBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  return eig_backward(c, c->a->LogEigBackward.eps, true, out);
}

rlx_status rlx_infer_SpdBatchNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"x", "mean", "g"};
  RLX_TRY(sp_arity(c, 3, "x, mean, g"));
  RLX_TRY(eps_attr(c->a->SpdBatchNorm.eps, true));
  RLX_TRY(same_float(c, 3, roles));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  RLX_TRY(square(c, 1, "mean", &n));
  RLX_TRY(square(c, 2, "g", &n));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_SpdBatchNormBackwardX(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"mean", "g", "dy"};
  RLX_TRY(sp_arity(c, 3, "mean, g, dy"));
  RLX_TRY(eps_attr(c->a->SpdBatchNormBackwardX.eps, true));
  RLX_TRY(same_float(c, 3, roles));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(square(c, 0, "mean", &n));
  RLX_TRY(square(c, 1, "g", &n));
  RLX_TRY(batch_square(c, 2, "dy", &b, &n));
  *out = *c->in[2];
  return RLX_OK;
}

rlx_status rlx_infer_SpdBatchNormBackwardG(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"x", "mean", "g", "dy"};
  RLX_TRY(sp_arity(c, 4, "x, mean, g, dy"));
  RLX_TRY(eps_attr(c->a->SpdBatchNormBackwardG.eps, true));
  RLX_TRY(same_float(c, 4, roles));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  RLX_TRY(square(c, 1, "mean", &n));
  RLX_TRY(square(c, 2, "g", &n));
  RLX_TRY(batch_square(c, 3, "dy", &b, &n));
  *out = *c->in[2];
  return RLX_OK;
}

rlx_status rlx_infer_SpdKarcherMean(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(karcher_attrs(c->a->SpdKarcherMean.iters, c->a->SpdKarcherMean.tol));
  RLX_TRY(sp_float(c, 0, "x"));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  rlx_dim d[2] = {n, n};
  *out = mat(c, 2, d);
  return RLX_OK;
}

rlx_status rlx_infer_SpdKarcherMeanWeighted(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 2, "x, w"));
  RLX_TRY(karcher_attrs(c->a->SpdKarcherMeanWeighted.iters, c->a->SpdKarcherMeanWeighted.tol));
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(sp_float(c, 1, "w"));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  RLX_TRY(sp_expect(c, 1, "w", "[B], one weight per matrix", 1, &b));
  rlx_dim d[2] = {n, n};
  *out = mat(c, 2, d);
  return RLX_OK;
}

/* `count` same-size square operands; the result is [n, n], or [k, n, n] when k > 0. */
static rlx_status squares(const rlx_infer_ctx *c, uint32_t count, const char *const *roles, const char *arity,
                          int64_t k, rlx_shape *out) {
  RLX_TRY(sp_arity(c, count, arity));
  RLX_TRY(same_float(c, count, roles));
  rlx_dim n = SP_UNKNOWN;
  for (uint32_t i = 0; i < count; i++) RLX_TRY(square(c, i, roles[i], &n));
  rlx_dim d[3] = {k, n, n};
  *out = k ? mat(c, 3, d) : mat(c, 2, d + 1);
  return RLX_OK;
}

static const char *const map_roles[] = {"p", "x", "dy"};
static const char *const transport_roles[] = {"p", "q", "v", "dy"};

rlx_status rlx_infer_SpdLogMap(const rlx_infer_ctx *c, rlx_shape *out) {
  return squares(c, 2, map_roles, "p, x", 0, out);
}
rlx_status rlx_infer_SpdExpMap(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"p", "v"};
  return squares(c, 2, roles, "p, v", 0, out);
}
rlx_status rlx_infer_SpdParallelTransport(const rlx_infer_ctx *c, rlx_shape *out) {
  return squares(c, 3, transport_roles, "p, q, v", 0, out);
}
rlx_status rlx_infer_SpdLogMapBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  return squares(c, 3, map_roles, "p, x, dy", 2, out);
}
rlx_status rlx_infer_SpdExpMapBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"p", "v", "dy"};
  return squares(c, 3, roles, "p, v, dy", 2, out);
}
rlx_status rlx_infer_SpdParallelTransportBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  return squares(c, 4, transport_roles, "p, q, v, dy", 3, out);
}

rlx_status rlx_infer_SpdMatrixFnBatch(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(fn_kind(c->a->SpdMatrixFnBatch.kind));
  RLX_TRY(sp_float(c, 0, "x"));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_SpdMatrixFnBatchBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"x", "dy"};
  RLX_TRY(sp_arity(c, 2, "x, dy"));
  RLX_TRY(fn_kind(c->a->SpdMatrixFnBatchBackward.kind));
  RLX_TRY(same_float(c, 2, roles));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN;
  RLX_TRY(batch_square(c, 0, "x", &b, &n));
  RLX_TRY(batch_square(c, 1, "dy", &b, &n));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_Eigh(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "a"));
  RLX_TRY(sp_float(c, 0, "a"));
  rlx_dim n = SP_UNKNOWN, len;
  RLX_TRY(square(c, 0, "a", &n));
  RLX_TRY(packed_eig_len(n, false, &len));
  *out = mat(c, 1, &len);
  return sp_resolve(c, out);
}

rlx_status rlx_infer_EighBatch(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "a"));
  RLX_TRY(sp_float(c, 0, "a"));
  rlx_dim b = SP_UNKNOWN, n = SP_UNKNOWN, d[2];
  RLX_TRY(batch_square(c, 0, "a", &b, &n));
  d[0] = b;
  RLX_TRY(packed_eig_len(n, false, &d[1]));
  *out = mat(c, 2, d);
  return sp_resolve(c, out);
}

/* [fwd, bar] packed [.., n^2 + n] (rank `rank`) -> [.., n, n]. */
static rlx_status eigh_backward(const rlx_infer_ctx *c, uint32_t rank, rlx_shape *out) {
  static const char *const roles[] = {"fwd", "bar"};
  RLX_TRY(sp_arity(c, 2, "fwd, bar"));
  RLX_TRY(same_float(c, 2, roles));
  RLX_TRY(sp_rank(c, 0, "fwd", rank));
  RLX_TRY(sp_shape_eq(c, 1, "bar", c->in[0], "the cotangent of the packed eigendecomposition"));
  const rlx_dim *f = c->in[0]->dims, *g = c->in[1]->dims;
  uint32_t src = sp_static(f[rank - 1]) ? 0 : 1; /* the operand whose length is known, if any */
  rlx_dim n = 0;
  RLX_TRY(eig_n_from_len(c, src, roles[src], c->in[src]->dims[rank - 1], &n));
  rlx_dim d[3] = {sp_pick(f[0], g[0]), n, n};
  *out = rank == 2 ? mat(c, 3, d) : mat(c, 2, d + 1);
  return sp_resolve(c, out);
}

rlx_status rlx_infer_EighBackward(const rlx_infer_ctx *c, rlx_shape *out) { return eigh_backward(c, 1, out); }
rlx_status rlx_infer_EighBatchBackward(const rlx_infer_ctx *c, rlx_shape *out) { return eigh_backward(c, 2, out); }
