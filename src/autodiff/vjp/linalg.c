/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: MatMul (batch broadcasting) and the LAPACK-style ops, by standard matrix calculus:
 *   x = A^-1 b          db = A^-T g,  dA = -db x^T
 *   d = det A           dA = g d A^-T          (LogDet: g A^-T)
 *   L = chol(A)         dA = sym(L^-T Phi(L^T g) L^-1), Phi = lower triangle, halved diagonal
 *   X = op(A)^-1 B      dB = op(A)^-T g, d op(A) = -dB X^T, restricted to A's triangle
 * (DotGeneral is decomposed into Transpose/Reshape/MatMul before differentiation.) */
#include "autodiff/ad_internal.h"

RLX_VJP_DECL(MatMul) {
  (void)n;
  (void)y;
  rlx_id t;
  if (c->want[0]) {
    rlx_shape as = ad_shape(c, x[0]);
    RLX_TRY(ad_mT(c, x[1], &t));
    RLX_TRY(ad_matmul(c, dy, t, &t));
    RLX_TRY(ad_unbroadcast(c, t, &as, &dx[0]));
  }
  if (c->want[1]) {
    rlx_shape bs = ad_shape(c, x[1]);
    RLX_TRY(ad_mT(c, x[0], &t));
    RLX_TRY(ad_matmul(c, t, dy, &t));
    RLX_TRY(ad_unbroadcast(c, t, &bs, &dx[1]));
  }
  return RLX_OK;
}

/* n x n identity of dtype t. */
static rlx_status identity(rlx_ad_ctx *c, rlx_dtype t, rlx_dim n, rlx_id *out) {
  if (n < 0) return ad_unsupported(c, "a symbolic matrix size");
  if (n > 4096) return ad_unsupported(c, "matrices larger than 4096 x 4096");
  size_t nn = (size_t)n * (size_t)n;
  double *v = c->al->alloc(c->al->ctx, (nn ? nn : 1) * sizeof *v);
  if (!v) return rlx_errorf(RLX_ERR_OOM, "out of memory building an identity matrix");
  for (size_t i = 0; i < nn; i++) v[i] = (i % ((size_t)n + 1) == 0) ? 1.0 : 0.0;
  rlx_shape s = rlx_shape_make(t, 2, (const rlx_dim[]){n, n});
  rlx_status st = ad_const_values(c, &s, v, out);
  c->al->free(c->al->ctx, v);
  return st;
}

/* -db x^T, with vectors [.., N] treated as [.., N, 1] columns. */
static rlx_status neg_outer(rlx_ad_ctx *c, rlx_id db, rlx_id xs, bool vec, rlx_id *out) {
  rlx_id a = db, b = xs, t;
  if (vec) {
    rlx_shape s = ad_shape(c, db);
    RLX_TRY(ad_unsqueeze(c, db, s.rank, &a));
    RLX_TRY(ad_unsqueeze(c, xs, s.rank, &b));
  }
  RLX_TRY(ad_mT(c, b, &b));
  RLX_TRY(ad_matmul(c, a, b, &t));
  return ad_neg(c, t, out);
}

static rlx_status solve_vjp(rlx_ad_ctx *c, rlx_op op, uint32_t mat_rank, rlx_id y, const rlx_id *x, rlx_id dy,
                            rlx_id *dx) {
  rlx_id at, db;
  RLX_TRY(ad_mT(c, x[0], &at));
  rlx_id in[2] = {at, dy};
  RLX_TRY(rlx_graph_add(c->dst, op, in, 2, NULL, NULL, NULL, &db));
  if (c->want[1]) dx[1] = db;
  if (c->want[0]) {
    bool vec = ad_shape(c, x[1]).rank == mat_rank - 1;
    RLX_TRY(neg_outer(c, db, y, vec, &dx[0]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(DenseSolve) {
  (void)n;
  return solve_vjp(c, RLX_OP_DenseSolve, 2, y, x, dy, dx);
}

RLX_VJP_DECL(BatchedDenseSolve) {
  (void)n;
  return solve_vjp(c, RLX_OP_BatchedDenseSolve, 3, y, x, dy, dx);
}

/* A^-T, solving A^T X = I. */
static rlx_status inverse_transpose(rlx_ad_ctx *c, rlx_id a, rlx_id *out) {
  rlx_shape s = ad_shape(c, a);
  rlx_id at, eye;
  RLX_TRY(identity(c, (rlx_dtype)s.dtype, s.dims[0], &eye));
  RLX_TRY(ad_mT(c, a, &at));
  rlx_id in[2] = {at, eye};
  return rlx_build_DenseSolve(c->dst, in, 2, NULL, out);
}

RLX_VJP_DECL(Det) {
  (void)n;
  rlx_id inv, s;
  RLX_TRY(inverse_transpose(c, x[0], &inv));
  RLX_TRY(ad_mul(c, dy, y, &s));
  return ad_mul(c, inv, s, &dx[0]);
}

RLX_VJP_DECL(LogDet) {
  (void)n;
  (void)y;
  rlx_id inv;
  RLX_TRY(inverse_transpose(c, x[0], &inv));
  return ad_mul(c, inv, dy, &dx[0]);
}

static rlx_status tri_solve(rlx_ad_ctx *c, rlx_id a, rlx_id b, bool lower, bool transpose, rlx_id *out) {
  rlx_attrs_TriangularSolve at = {.lower = lower, .transpose = transpose};
  rlx_id in[2] = {a, b};
  return rlx_build_TriangularSolve(c->dst, in, 2, &at, NULL, out);
}

static rlx_status triangle(rlx_ad_ctx *c, rlx_id x, bool upper, rlx_id *out) {
  rlx_attrs_Trilu a = {.upper = upper, .diagonal = 0};
  return rlx_build_Trilu(c->dst, &x, 1, &a, NULL, out);
}

RLX_VJP_DECL(Cholesky) {
  (void)n;
  (void)x;
  rlx_shape s = ad_shape(c, y);
  rlx_id lt, p, eye, diag, x1, t, abar, abt;
  /* P = Phi(L^T g): lower triangle, diagonal halved */
  RLX_TRY(ad_mT(c, y, &lt));
  RLX_TRY(ad_matmul(c, lt, dy, &p));
  RLX_TRY(identity(c, (rlx_dtype)s.dtype, s.dims[0], &eye));
  RLX_TRY(ad_mul(c, p, eye, &diag));
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, diag, 0.5, &diag));
  RLX_TRY(triangle(c, p, false, &p));
  RLX_TRY(ad_sub(c, p, diag, &p));
  /* Abar = L^-T P L^-1 = (L^-T (L^-T P)^T)^T */
  RLX_TRY(tri_solve(c, y, p, true, true, &x1));
  RLX_TRY(ad_mT(c, x1, &t));
  RLX_TRY(tri_solve(c, y, t, true, true, &abt));
  RLX_TRY(ad_mT(c, abt, &abar));
  /* symmetric part */
  RLX_TRY(ad_add(c, abar, abt, &t));
  return ad_bin_s(c, RLX_BINOP_MUL, t, 0.5, &dx[0]);
}

RLX_VJP_DECL(TriangularSolve) {
  bool lower = n->attrs.TriangularSolve.lower, tr = n->attrs.TriangularSolve.transpose;
  rlx_id db;
  RLX_TRY(tri_solve(c, x[0], dy, lower, !tr, &db));
  if (c->want[1]) dx[1] = db;
  if (c->want[0]) {
    bool vec = ad_shape(c, x[1]).rank == 1;
    rlx_id d;
    RLX_TRY(neg_outer(c, db, y, vec, &d)); /* d op(A) */
    if (tr) RLX_TRY(ad_mT(c, d, &d));
    RLX_TRY(triangle(c, d, !lower, &dx[0]));
  }
  return RLX_OK;
}

/* y[m] = x[m] @ W[e(m)]: dx = GroupedMatMul(g, W^T), dW[e] = sum over rows m routed to e of
 * x[m]^T g[m] (outer products scattered by expert index). */
RLX_VJP_DECL(GroupedMatMul) {
  (void)n;
  (void)y;
  if (c->want[0]) {
    rlx_id wt, in[3];
    RLX_TRY(ad_mT(c, x[1], &wt));
    in[0] = dy;
    in[1] = wt;
    in[2] = x[2];
    RLX_TRY(rlx_build_GroupedMatMul(c->dst, in, 3, NULL, &dx[0]));
  }
  if (c->want[1]) {
    rlx_id xc, gr, outer;
    rlx_shape ws = ad_shape(c, x[1]);
    RLX_TRY(ad_unsqueeze(c, x[0], 2, &xc)); /* [M, K, 1] */
    RLX_TRY(ad_unsqueeze(c, dy, 1, &gr));   /* [M, 1, N] */
    RLX_TRY(ad_mul(c, xc, gr, &outer));     /* [M, K, N] */
    rlx_attrs_ScatterAdd a = {0};
    rlx_id in[2] = {outer, x[2]};
    RLX_TRY(rlx_graph_add(c->dst, RLX_OP_ScatterAdd, in, 2, &a, &ws, NULL, &dx[1]));
  }
  return RLX_OK;
}

/* Singular values s of A = U diag(s) V^T (thin): dA = U diag(g) V^T. Only part S is
 * differentiable (the singular vectors are defined up to sign and rotation). */
/* Thin QR of a tall or square A = QR (R square, invertible, non-negative diagonal). With
 * M = R dR^T - dQ^T Q and copyltu(M) = tril(M) + tril(M, -1)^T,
 *   dA = (dQ + Q copyltu(M)) R^-T.
 * Each part's node contributes its own term (the other part's cotangent is zero there). */
RLX_VJP_DECL(Qr) {
  (void)y;
  rlx_shape s = ad_shape(c, x[0]);
  if (s.rank != 2 || s.dims[0] < s.dims[1])
    return ad_unsupported(c,
                          "the gradient of Qr is defined here for a tall or square matrix (m >= n), not %u-D "
                          "[%lld, %lld]",
                          s.rank, (long long)(s.rank > 0 ? s.dims[0] : 0), (long long)(s.rank > 1 ? s.dims[1] : 0));
  bool part_q = n->attrs.Qr.part == RLX_QR_PART_Q;
  rlx_attrs_Qr aq = {.part = RLX_QR_PART_Q}, ar = {.part = RLX_QR_PART_R};
  rlx_id q, r, dyt, m, lo, strict, strict_t, sym, qs, b, bt, xt;
  RLX_TRY(rlx_build_Qr(c->dst, &x[0], 1, &aq, NULL, &q));
  RLX_TRY(rlx_build_Qr(c->dst, &x[0], 1, &ar, NULL, &r));
  RLX_TRY(ad_mT(c, dy, &dyt));
  if (part_q) {
    RLX_TRY(ad_matmul(c, dyt, q, &m)); /* dQ^T Q */
    RLX_TRY(ad_neg(c, m, &m));
  } else {
    RLX_TRY(ad_matmul(c, r, dyt, &m)); /* R dR^T */
  }
  RLX_TRY(triangle(c, m, false, &lo));
  rlx_attrs_Trilu below = {.upper = false, .diagonal = -1};
  RLX_TRY(rlx_build_Trilu(c->dst, &m, 1, &below, NULL, &strict));
  RLX_TRY(ad_mT(c, strict, &strict_t));
  RLX_TRY(ad_add(c, lo, strict_t, &sym));
  RLX_TRY(ad_matmul(c, q, sym, &qs));
  if (part_q)
    RLX_TRY(ad_add(c, dy, qs, &b));
  else
    b = qs;
  /* X = B R^-T  <=>  R X^T = B^T */
  RLX_TRY(ad_mT(c, b, &bt));
  RLX_TRY(tri_solve(c, r, bt, false, false, &xt));
  return ad_mT(c, xt, &dx[0]);
}

RLX_VJP_DECL(Svd) {
  (void)y;
  if (n->attrs.Svd.part != RLX_SVD_PART_S)
    return ad_unsupported(c, "only the singular values (part S) of an Svd are differentiable, not part %s",
                          rlx_enum_svd_part.names[n->attrs.Svd.part]);
  rlx_attrs_Svd au = {.part = RLX_SVD_PART_U}, av = {.part = RLX_SVD_PART_VT};
  rlx_id u, vt, t;
  RLX_TRY(rlx_build_Svd(c->dst, &x[0], 1, &au, NULL, &u));
  RLX_TRY(rlx_build_Svd(c->dst, &x[0], 1, &av, NULL, &vt));
  RLX_TRY(ad_mul(c, u, dy, &t)); /* U diag(g): column j scaled by g[j] */
  return ad_matmul(c, t, vt, &dx[0]);
}
