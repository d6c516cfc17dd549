/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: the SPD manifold family and the backward ops of the symmetric eigen
 * family (spec ir-special §6).
 *
 * Every kernel reads its operands into double, computes in double and rounds once to the output
 * dtype (any float dtype: f64, f32, f16, bf16). Matrices are row-major [n, n]; a matrix that the
 * math takes to be symmetric is symmetrised first (sym(A) = (A + A^T) / 2), so a non-symmetric
 * operand behaves like its symmetric part. Eigendecompositions go through LAPACKE_dsyevd:
 * ascending eigenvalues, eigenvector j = column j of U, made canonical like Eigh's (the first
 * entry whose magnitude is within a relative 1e-3 of the vector's largest is positive). A NaN or
 * infinity in a matrix that has to be decomposed gives an all-NaN result.
 *
 * Matrix functions f(A) = U diag(f(lambda)) U^T use the spec's floors: logm ln(max(l, 1e-12)),
 * sqrtm sqrt(max(l, 0)), invsqrtm 1 / sqrt(max(l, 1e-12)), expm e^l. Their adjoint is the
 * Daleckii-Krein formula DK(f, f'; A; Ybar): G = sym(Ybar), C = U^T G U,
 * P_ab = (f(l_a) - f(l_b)) / (l_a - l_b) when |l_a - l_b| > 1e-9 max(1, max |l|), else f'(l_a)
 * (so repeated and near-repeated eigenvalues use the derivative), and Xbar = sym(U (P o C) U^T).
 *
 * Packings: ReEig / LogEig [2n^2 + n] = Y | lambda | U with ROWS = eigenvectors; Eigh [n^2 + n] =
 * lambda | U with COLUMNS = eigenvectors (the Eigh forward lives in ref/linalg.c); the map
 * backwards are [2, n, n] = d_base | d_x and [3, n, n] = d_from | d_to | d_v. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util_b.h"

typedef double (*spd_scalar_fn)(double);

static double f_log(double l) { return log(fmax(l, 1e-12)); }
static double d_log(double l) { return 1.0 / fmax(l, 1e-12); }
static double f_exp(double l) { return exp(l); }
static double f_sqrt(double l) { return sqrt(fmax(l, 0.0)); }
static double d_sqrt(double l) { return l > 0 ? 0.5 / sqrt(l) : 0.0; }
static double f_isqrt(double l) { return 1.0 / sqrt(fmax(l, 1e-12)); }
static double d_isqrt(double l) { return l > 1e-12 ? -0.5 / (l * sqrt(l)) : 0.0; }

/* One of the four SpdMatFn kinds: value and derivative. */
static void fn_of_kind(int32_t kind, spd_scalar_fn *f, spd_scalar_fn *df) {
  switch (kind) {
  case RLX_SPD_FN_EXPM:
    *f = f_exp;
    *df = f_exp;
    break;
  case RLX_SPD_FN_SQRTM:
    *f = f_sqrt;
    *df = d_sqrt;
    break;
  case RLX_SPD_FN_INVSQRTM:
    *f = f_isqrt;
    *df = d_isqrt;
    break;
  default:
    *f = f_log;
    *df = d_log;
    break;
  }
}

/* ---- small dense helpers on n x n row-major doubles ---- */

/* C = op(A) op(B), op = transpose when the flag is set. C must not alias A or B. */
static void mm(size_t n, const double *A, bool ta, const double *B, bool tb, double *C) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0.0;
      for (size_t k = 0; k < n; k++) s += (ta ? A[k * n + i] : A[i * n + k]) * (tb ? B[j * n + k] : B[k * n + j]);
      C[i * n + j] = s;
    }
}

/* D = A B C (tmp: n*n scratch). */
static void mm3(size_t n, const double *A, const double *B, const double *C, double *D, double *tmp) {
  mm(n, A, false, B, false, tmp);
  mm(n, tmp, false, C, false, D);
}

static void sym_inplace(size_t n, double *A) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      double v = 0.5 * (A[i * n + j] + A[j * n + i]);
      A[i * n + j] = A[j * n + i] = v;
    }
}

/* M + M^T into out (out may alias nothing). */
static void plus_t(size_t n, const double *M, double *out) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) out[i * n + j] = M[i * n + j] + M[j * n + i];
}

static bool finite_all(const double *v, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!isfinite(v[i])) return false;
  return true;
}

static void nan_all(double *v, size_t count) {
  for (size_t i = 0; i < count; i++) v[i] = NAN;
}

/* Scratch shared by one kernel call: `count` matrices of n x n plus the eigen workspace. */
typedef struct spd_ws {
  size_t n;
  double *m;   /* count * n * n */
  double *lam; /* n */
  double *lam2;
} spd_ws;

static rlx_status ws_open(const rlx_node *n, spd_ws *w, size_t nn, size_t count) {
  memset(w, 0, sizeof *w);
  w->n = nn;
  RLX_TRY(rb_calloc(n, count * nn * nn + 1, sizeof(double), &w->m));
  rlx_status s = rb_alloc(n, nn + 1, sizeof(double), &w->lam);
  if (s == RLX_OK) s = rb_alloc(n, nn + 1, sizeof(double), &w->lam2);
  return s;
}

static void ws_close(spd_ws *w) {
  free(w->m);
  free(w->lam);
  free(w->lam2);
}

static double *ws_mat(spd_ws *w, size_t k) { return w->m + k * w->n * w->n; }

/* Eigendecomposition of sym(A): ascending lam, U with columns = eigenvectors (canonical signs).
 * Returns false when A holds a non-finite value or the solver fails (the caller writes NaN). */
static bool eig_sym(size_t n, const double *A, double *lam, double *U) {
  if (n == 0) return true;
  if (!finite_all(A, n * n)) return false;
  memcpy(U, A, n * n * sizeof *U);
  sym_inplace(n, U);
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n, U, (lapack_int)n, lam) != 0) return false;
  for (size_t j = 0; j < n; j++) {
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(U[i * n + j]));
    size_t piv = 0;
    for (size_t i = 0; i < n; i++)
      if (fabs(U[i * n + j]) >= mx * (1.0 - 1e-3)) {
        piv = i;
        break;
      }
    if (U[piv * n + j] < 0)
      for (size_t i = 0; i < n; i++) U[i * n + j] = -U[i * n + j];
  }
  return true;
}

/* out = U diag(g(lam)) U^T. */
static void recompose(size_t n, const double *lam, const double *U, spd_scalar_fn g, double *out) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0.0;
      for (size_t k = 0; k < n; k++) s += U[i * n + k] * g(lam[k]) * U[j * n + k];
      out[i * n + j] = s;
    }
}

/* out = f(sym(A)); false on non-finite input. lam / U are scratch. */
static bool mat_fn(size_t n, const double *A, spd_scalar_fn f, double *lam, double *U, double *out) {
  if (!eig_sym(n, A, lam, U)) return false;
  recompose(n, lam, U, f, out);
  return true;
}

/* Daleckii-Krein adjoint for a precomputed (lam, U): out = sym(U (P o (U^T sym(Ybar) U)) U^T).
 * tmp1 and tmp2 are n*n scratch; out may alias Ybar. */
static void dk_eig(size_t n, const double *lam, const double *U, spd_scalar_fn f, spd_scalar_fn df, const double *Ybar,
                   double *out, double *tmp1, double *tmp2) {
  double mx = 1.0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(lam[i]));
  double gap = 1e-9 * mx;
  memcpy(tmp2, Ybar, n * n * sizeof *tmp2);
  sym_inplace(n, tmp2);
  mm(n, U, true, tmp2, false, tmp1);  /* U^T G */
  mm(n, tmp1, false, U, false, tmp2); /* C = U^T G U */
  for (size_t a = 0; a < n; a++)
    for (size_t b = 0; b < n; b++) {
      double la = lam[a], lb = lam[b];
      double p = fabs(la - lb) > gap ? (f(la) - f(lb)) / (la - lb) : df(la);
      tmp2[a * n + b] *= p;
    }
  mm(n, U, false, tmp2, false, tmp1);
  mm(n, tmp1, false, U, true, out);
  sym_inplace(n, out);
}

/* DK adjoint at the matrix A (decomposed here). false on non-finite A. */
static bool dk_at(size_t n, const double *A, spd_scalar_fn f, spd_scalar_fn df, const double *Ybar, double *out,
                  double *lam, double *U, double *tmp1, double *tmp2) {
  if (!eig_sym(n, A, lam, U)) return false;
  dk_eig(n, lam, U, f, df, Ybar, out, tmp1, tmp2);
  return true;
}

/* ---- operand plumbing ---- */

/* Every operand is a float; loads all of them into doubles (v[i]); the output buffer too. */
typedef struct spd_io {
  double *v[4];
  uint32_t count;
  double *y;
} spd_io;

static rlx_status io_open(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t arity, rlx_tensor *out,
                          spd_io *io) {
  static const char *const what[4] = {"operand 0", "operand 1", "operand 2", "operand 3"};
  memset(io, 0, sizeof *io);
  RLX_TRY(ru_prologue(n, in, n_in, arity, arity, out));
  if (!rlx_dtype_is_float(ru_dt(out)))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "output dtype %s; SPD ops need a float dtype", rlx_dtype_name(ru_dt(out)));
  for (uint32_t i = 0; i < arity; i++) RLX_TRY(rb_need_float(n, in, i, what[i]));
  for (uint32_t i = 0; i < arity; i++) {
    RLX_TRY(rb_load(n, &in[i], &io->v[i]));
    io->count = i + 1;
  }
  return rb_calloc(n, rlx_tensor_numel(out) + 1, sizeof(double), &io->y);
}

static void io_close(spd_io *io, rlx_tensor *out, rlx_status s) {
  if (s == RLX_OK) rb_store_all(out, io->y);
  for (uint32_t i = 0; i < io->count; i++) free(io->v[i]);
  free(io->y);
}

/* Side n of a square operand [.., n, n] (the shape rule checked it). */
static size_t side(const rlx_tensor *t) { return t->shape.rank ? (size_t)t->shape.dims[t->shape.rank - 1] : 0; }

/* ======================================================================================
 * BiMap, ReEig, LogEig and their backwards
 * ====================================================================================== */

RLX_CPU_KERNEL(BiMap) {
  (void)ctx;
  spd_io io;
  rlx_status s = io_open(n, in, n_in, 2, out, &io);
  if (s == RLX_OK) {
    size_t m = (size_t)in[0].shape.dims[0], k = (size_t)in[0].shape.dims[1];
    const double *W = io.v[0], *X = io.v[1];
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < m; j++) {
        double acc = 0.0;
        for (size_t a = 0; a < k; a++) {
          double t = 0.0;
          for (size_t b = 0; b < k; b++) t += X[a * k + b] * W[j * k + b];
          acc += W[i * k + a] * t;
        }
        io.y[i * m + j] = acc;
      }
  }
  io_close(&io, out, s);
  return s;
}

static float eig_eps(const rlx_node *n) { return n->op == RLX_OP_ReEig ? n->attrs.ReEig.eps : n->attrs.LogEig.eps; }

/* The eps of the running ReEig / LogEig (backward) kernel, read by the scalar functions below. */
static _Thread_local double t_eps;
static double f_rect(double l) { return fmax(l, t_eps); }
static double d_rect(double l) { return l > t_eps ? 1.0 : 0.0; }
static double f_logeps(double l) { return log(fmax(l, t_eps)); }
static double d_logeps(double l) { return 1.0 / fmax(l, t_eps); }

static rlx_status eig_forward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, bool log_fn) {
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 1, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 1);
  if (s == RLX_OK) {
    t_eps = eig_eps(n);
    double *U = ws_mat(&w, 0), *Y = io.y, *lam = io.y + nn * nn, *Urows = io.y + nn * nn + nn;
    if (!eig_sym(nn, io.v[0], w.lam, U)) {
      nan_all(io.y, 2 * nn * nn + nn);
    } else {
      recompose(nn, w.lam, U, log_fn ? f_logeps : f_rect, Y);
      memcpy(lam, w.lam, nn * sizeof *lam);
      for (size_t i = 0; i < nn; i++)
        for (size_t j = 0; j < nn; j++) Urows[i * nn + j] = U[j * nn + i]; /* row i = eigenvector i */
    }
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(ReEig) {
  (void)ctx;
  return eig_forward(n, in, n_in, out, false);
}

RLX_CPU_KERNEL(LogEig) {
  (void)ctx;
  return eig_forward(n, in, n_in, out, true);
}

static rlx_status eig_backward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, bool log_fn) {
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 3, out, &io);
  size_t nn = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 3);
  if (s == RLX_OK) {
    t_eps = log_fn ? n->attrs.LogEigBackward.eps : n->attrs.ReEigBackward.eps;
    double *U = ws_mat(&w, 0);
    for (size_t i = 0; i < nn; i++)
      for (size_t j = 0; j < nn; j++) U[j * nn + i] = io.v[1][i * nn + j]; /* rows -> columns */
    dk_eig(nn, io.v[0], U, log_fn ? f_logeps : f_rect, log_fn ? d_logeps : d_rect, io.v[2], io.y, ws_mat(&w, 1),
           ws_mat(&w, 2));
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(ReEigBackward) {
  (void)ctx;
  return eig_backward(n, in, n_in, out, false);
}

RLX_CPU_KERNEL(LogEigBackward) {
  (void)ctx;
  return eig_backward(n, in, n_in, out, true);
}

/* ======================================================================================
 * Eigh / EighBatch backward
 * ====================================================================================== */

/* fwd / bar packed [lambda | U (columns = eigenvectors)] per slice -> sym(U mid U^T). */
static rlx_status eigh_backward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, bool batch) {
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 2, out, &io);
  size_t nn = s == RLX_OK ? side(out) : 0, B = batch && s == RLX_OK ? (size_t)out->shape.dims[0] : 1;
  size_t L = nn * nn + nn;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 3);
  for (size_t b = 0; s == RLX_OK && b < B; b++) {
    const double *lam = io.v[0] + b * L, *U = lam + nn, *lbar = io.v[1] + b * L, *Ubar = lbar + nn;
    double *mid = ws_mat(&w, 0), *t = ws_mat(&w, 1), *y = io.y + b * nn * nn;
    double mx = 1.0;
    for (size_t i = 0; i < nn; i++) mx = fmax(mx, fabs(lam[i]));
    mm(nn, U, true, Ubar, false, mid); /* C = U^T Ubar */
    for (size_t i = 0; i < nn; i++)
      for (size_t j = 0; j < nn; j++) {
        double gap = lam[j] - lam[i];
        if (i == j)
          mid[i * nn + j] = lbar[i];
        else
          mid[i * nn + j] = fabs(gap) > 1e-9 * mx ? mid[i * nn + j] / gap : 0.0;
      }
    mm(nn, U, false, mid, false, t);
    mm(nn, t, false, U, true, y);
    sym_inplace(nn, y);
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(EighBackward) {
  (void)ctx;
  return eigh_backward(n, in, n_in, out, false);
}

RLX_CPU_KERNEL(EighBatchBackward) {
  (void)ctx;
  return eigh_backward(n, in, n_in, out, true);
}

/* ======================================================================================
 * SpdBatchNorm and its backwards
 * ====================================================================================== */

static _Thread_local double t_floor;
static double f_sqrt_fl(double l) { return sqrt(fmax(l, t_floor)); }
static double d_sqrt_fl(double l) { return 0.5 / sqrt(fmax(l, t_floor)); }
static double f_isqrt_fl(double l) { return 1.0 / sqrt(fmax(l, t_floor)); }

/* Mis = M^{-1/2} and Gs = G^{1/2}, both with spectra floored at eps. */
static bool bn_factors(size_t nn, const double *M, const double *G, double *Mis, double *Gs, spd_ws *w, double *U) {
  return mat_fn(nn, M, f_isqrt_fl, w->lam, U, Mis) && mat_fn(nn, G, f_sqrt_fl, w->lam, U, Gs);
}

RLX_CPU_KERNEL(SpdBatchNorm) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 3, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0, B = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 5);
  if (s == RLX_OK) {
    t_floor = n->attrs.SpdBatchNorm.eps;
    double *Mis = ws_mat(&w, 0), *Gs = ws_mat(&w, 1), *U = ws_mat(&w, 2), *C = ws_mat(&w, 3), *t = ws_mat(&w, 4);
    if (!bn_factors(nn, io.v[1], io.v[2], Mis, Gs, &w, U)) {
      nan_all(io.y, B * nn * nn);
    } else {
      for (size_t b = 0; b < B; b++) {
        mm3(nn, Mis, io.v[0] + b * nn * nn, Mis, C, t);
        mm3(nn, Gs, C, Gs, io.y + b * nn * nn, t);
      }
    }
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdBatchNormBackwardX) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 3, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0, B = s == RLX_OK ? (size_t)in[2].shape.dims[0] : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 5);
  if (s == RLX_OK) {
    t_floor = n->attrs.SpdBatchNormBackwardX.eps;
    double *Mis = ws_mat(&w, 0), *Gs = ws_mat(&w, 1), *U = ws_mat(&w, 2), *Q = ws_mat(&w, 3), *t = ws_mat(&w, 4);
    if (!bn_factors(nn, io.v[0], io.v[1], Mis, Gs, &w, U)) {
      nan_all(io.y, B * nn * nn);
    } else {
      mm(nn, Mis, false, Gs, false, Q); /* Q = M^{-1/2} G^{1/2} */
      for (size_t b = 0; b < B; b++) {
        double *y = io.y + b * nn * nn;
        mm(nn, Q, false, io.v[2] + b * nn * nn, false, t);
        mm(nn, t, false, Q, true, y);
        sym_inplace(nn, y);
      }
    }
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdBatchNormBackwardG) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 4, out, &io);
  size_t nn = s == RLX_OK ? side(&in[1]) : 0, B = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 8);
  if (s == RLX_OK) {
    t_floor = n->attrs.SpdBatchNormBackwardG.eps;
    double *Mis = ws_mat(&w, 0), *Gs = ws_mat(&w, 1), *U = ws_mat(&w, 2), *C = ws_mat(&w, 3), *t = ws_mat(&w, 4);
    double *acc = ws_mat(&w, 5), *t2 = ws_mat(&w, 6), *t3 = ws_mat(&w, 7);
    if (!bn_factors(nn, io.v[1], io.v[2], Mis, Gs, &w, U)) {
      nan_all(io.y, nn * nn);
    } else {
      for (size_t b = 0; b < B; b++) {
        const double *dY = io.v[3] + b * nn * nn;
        mm3(nn, Mis, io.v[0] + b * nn * nn, Mis, C, t);
        mm3(nn, dY, Gs, C, t2, t); /* dY G^{1/2} C */
        mm3(nn, C, Gs, dY, t3, t); /* C G^{1/2} dY */
        for (size_t i = 0; i < nn * nn; i++) acc[i] += t2[i] + t3[i];
      }
      if (!dk_at(nn, io.v[2], f_sqrt_fl, d_sqrt_fl, acc, io.y, w.lam, U, t, t2)) nan_all(io.y, nn * nn);
    }
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

/* ======================================================================================
 * Karcher means
 * ====================================================================================== */

/* Weighted Karcher (Frechet) mean of B matrices under the affine-invariant metric; weights wt
 * (normalised by the caller). */
static bool karcher(size_t nn, size_t B, const double *X, const double *wt, int64_t iters, double tol, double *M,
                    spd_ws *w) {
  double *Ms = ws_mat(w, 0), *Mis = ws_mat(w, 1), *U = ws_mat(w, 2), *S = ws_mat(w, 3), *T = ws_mat(w, 4);
  double *t = ws_mat(w, 5), *L = ws_mat(w, 6);
  memset(M, 0, nn * nn * sizeof *M);
  for (size_t b = 0; b < B; b++)
    for (size_t i = 0; i < nn * nn; i++) M[i] += wt[b] * X[b * nn * nn + i];
  sym_inplace(nn, M);
  for (int64_t it = 0; it < iters; it++) {
    if (!mat_fn(nn, M, f_sqrt, w->lam, U, Ms) || !mat_fn(nn, M, f_isqrt, w->lam, U, Mis)) return false;
    memset(S, 0, nn * nn * sizeof *S);
    for (size_t b = 0; b < B; b++) {
      mm3(nn, Mis, X + b * nn * nn, Mis, T, t);
      if (!mat_fn(nn, T, f_log, w->lam, U, L)) return false;
      for (size_t i = 0; i < nn * nn; i++) S[i] += wt[b] * L[i];
    }
    if (!mat_fn(nn, S, f_exp, w->lam, U, T)) return false;
    mm3(nn, Ms, T, Ms, M, t);
    sym_inplace(nn, M);
    double fro = 0.0;
    for (size_t i = 0; i < nn * nn; i++) fro += S[i] * S[i];
    if (sqrt(fro) < tol) break;
  }
  return true;
}

static rlx_status karcher_kernel(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                 bool weighted) {
  spd_io io;
  spd_ws w = {0};
  double *wt = NULL;
  rlx_status s = io_open(n, in, n_in, weighted ? 2 : 1, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0, B = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 7);
  if (s == RLX_OK) s = rb_alloc(n, B + 1, sizeof *wt, &wt);
  if (s == RLX_OK) {
    double total = 0.0;
    for (size_t b = 0; b < B; b++) total += weighted ? io.v[1][b] : 1.0;
    for (size_t b = 0; b < B; b++) wt[b] = total != 0.0 ? (weighted ? io.v[1][b] : 1.0) / total : 1.0 / (double)B;
    int64_t iters = weighted ? n->attrs.SpdKarcherMeanWeighted.iters : n->attrs.SpdKarcherMean.iters;
    double tol = weighted ? n->attrs.SpdKarcherMeanWeighted.tol : n->attrs.SpdKarcherMean.tol;
    if (B == 0 || !karcher(nn, B, io.v[0], wt, iters, tol, io.y, &w)) nan_all(io.y, nn * nn);
  }
  free(wt);
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdKarcherMean) {
  (void)ctx;
  return karcher_kernel(n, in, n_in, out, false);
}

RLX_CPU_KERNEL(SpdKarcherMeanWeighted) {
  (void)ctx;
  return karcher_kernel(n, in, n_in, out, true);
}

/* ======================================================================================
 * Log / exp maps and parallel transport, with their backwards
 * ====================================================================================== */

/* P^{1/2} f(P^{-1/2} X P^{-1/2}) P^{1/2}. */
static bool map_fwd(size_t nn, const double *P, const double *X, spd_scalar_fn f, double *y, spd_ws *w) {
  double *A = ws_mat(w, 0), *W = ws_mat(w, 1), *U = ws_mat(w, 2), *M = ws_mat(w, 3), *F = ws_mat(w, 4),
         *t = ws_mat(w, 5);
  if (!mat_fn(nn, P, f_sqrt, w->lam, U, A) || !mat_fn(nn, P, f_isqrt, w->lam, U, W)) return false;
  mm3(nn, W, X, W, M, t);
  if (!mat_fn(nn, M, f, w->lam, U, F)) return false;
  mm3(nn, A, F, A, y, t);
  return true;
}

static rlx_status map_kernel(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, spd_scalar_fn f) {
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 2, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 6);
  if (s == RLX_OK && !map_fwd(nn, io.v[0], io.v[1], f, io.y, &w)) nan_all(io.y, nn * nn);
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdLogMap) {
  (void)ctx;
  return map_kernel(n, in, n_in, out, f_log);
}

RLX_CPU_KERNEL(SpdExpMap) {
  (void)ctx;
  return map_kernel(n, in, n_in, out, f_exp);
}

/* dP = sym(DK_sqrt(P; Abar) + DK_{-1/2}(P; Wbar)) into dP. */
static bool base_grad(size_t nn, const double *P, const double *Abar, const double *Wbar, double *dP, spd_ws *w,
                      size_t k) {
  double *U = ws_mat(w, k), *t1 = ws_mat(w, k + 1), *t2 = ws_mat(w, k + 2), *g2 = ws_mat(w, k + 3);
  if (!dk_at(nn, P, f_sqrt, d_sqrt, Abar, dP, w->lam, U, t1, t2)) return false;
  if (!dk_at(nn, P, f_isqrt, d_isqrt, Wbar, g2, w->lam, U, t1, t2)) return false;
  for (size_t i = 0; i < nn * nn; i++) dP[i] += g2[i];
  sym_inplace(nn, dP);
  return true;
}

/* Log/exp map backward: [P, X, dY] -> [2, n, n] = dP | dX. */
static bool map_bwd(size_t nn, const double *P, const double *X, const double *dY, spd_scalar_fn f, spd_scalar_fn df,
                    double *y, spd_ws *w) {
  double *A = ws_mat(w, 0), *W = ws_mat(w, 1), *U = ws_mat(w, 2), *M = ws_mat(w, 3), *F = ws_mat(w, 4),
         *t = ws_mat(w, 5), *g = ws_mat(w, 6), *Mb = ws_mat(w, 7), *Ab = ws_mat(w, 8), *Wb = ws_mat(w, 9),
         *t2 = ws_mat(w, 10);
  if (!mat_fn(nn, P, f_sqrt, w->lam, U, A) || !mat_fn(nn, P, f_isqrt, w->lam, U, W)) return false;
  mm3(nn, W, X, W, M, t);
  if (!mat_fn(nn, M, f, w->lam, U, F)) return false;
  memcpy(g, dY, nn * nn * sizeof *g);
  sym_inplace(nn, g);
  mm3(nn, A, g, A, t2, t); /* Fbar = A g A */
  if (!dk_at(nn, M, f, df, t2, Mb, w->lam, U, t, Ab)) return false;
  double *dX = y + nn * nn;
  mm3(nn, W, Mb, W, dX, t);
  sym_inplace(nn, dX);
  mm3(nn, g, A, F, t2, t); /* g A F */
  plus_t(nn, t2, Ab);
  mm3(nn, Mb, W, X, t2, t); /* Mbar W X */
  plus_t(nn, t2, Wb);
  return base_grad(nn, P, Ab, Wb, y, w, 11);
}

static rlx_status map_bwd_kernel(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                 spd_scalar_fn f, spd_scalar_fn df) {
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 3, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 15);
  if (s == RLX_OK && !map_bwd(nn, io.v[0], io.v[1], io.v[2], f, df, io.y, &w)) nan_all(io.y, 2 * nn * nn);
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdLogMapBackward) {
  (void)ctx;
  return map_bwd_kernel(n, in, n_in, out, f_log, d_log);
}

RLX_CPU_KERNEL(SpdExpMapBackward) {
  (void)ctx;
  return map_bwd_kernel(n, in, n_in, out, f_exp, f_exp);
}

/* E = P^{1/2} (P^{-1/2} Q P^{-1/2})^{1/2} P^{-1/2}; A, W, S, E land in ws matrices 0, 1, 3, 4. */
static bool transport_e(size_t nn, const double *P, const double *Q, spd_ws *w) {
  double *A = ws_mat(w, 0), *W = ws_mat(w, 1), *U = ws_mat(w, 2), *S = ws_mat(w, 3), *E = ws_mat(w, 4),
         *t = ws_mat(w, 5), *Mq = ws_mat(w, 6);
  if (!mat_fn(nn, P, f_sqrt, w->lam, U, A) || !mat_fn(nn, P, f_isqrt, w->lam, U, W)) return false;
  mm3(nn, W, Q, W, Mq, t);
  if (!mat_fn(nn, Mq, f_sqrt, w->lam, U, S)) return false;
  mm3(nn, A, S, W, E, t);
  return true;
}

RLX_CPU_KERNEL(SpdParallelTransport) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 3, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 8);
  if (s == RLX_OK) {
    if (!transport_e(nn, io.v[0], io.v[1], &w)) {
      nan_all(io.y, nn * nn);
    } else {
      double *E = ws_mat(&w, 4), *t = ws_mat(&w, 5), *t2 = ws_mat(&w, 7);
      mm(nn, E, false, io.v[2], false, t);
      mm(nn, t, false, E, true, t2);
      memcpy(io.y, t2, nn * nn * sizeof *t2);
      sym_inplace(nn, io.y);
    }
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

static bool transport_bwd(size_t nn, const double *P, const double *Q, const double *V, const double *dY, double *y,
                          spd_ws *w) {
  if (!transport_e(nn, P, Q, w)) return false;
  double *A = ws_mat(w, 0), *W = ws_mat(w, 1), *U = ws_mat(w, 2), *S = ws_mat(w, 3), *E = ws_mat(w, 4),
         *t = ws_mat(w, 5), *Mq = ws_mat(w, 6), *g = ws_mat(w, 7), *Eb = ws_mat(w, 8), *Ab = ws_mat(w, 9),
         *Sb = ws_mat(w, 10), *Wb = ws_mat(w, 11), *Mqb = ws_mat(w, 12), *t2 = ws_mat(w, 13);
  double *dP = y, *dQ = y + nn * nn, *dV = y + 2 * nn * nn;
  memcpy(g, dY, nn * nn * sizeof *g);
  sym_inplace(nn, g);
  /* dV = sym(E^T g E) */
  mm(nn, E, true, g, false, t);
  mm(nn, t, false, E, false, dV);
  sym_inplace(nn, dV);
  /* Ebar = 2 g E V */
  mm3(nn, g, E, V, Eb, t);
  for (size_t i = 0; i < nn * nn; i++) Eb[i] *= 2.0;
  mm3(nn, Eb, W, S, Ab, t); /* Abar = Ebar W S */
  mm3(nn, A, Eb, W, Sb, t); /* Sbar = A Ebar W */
  mm3(nn, S, A, Eb, Wb, t); /* Wbar1 = S A Ebar */
  if (!dk_at(nn, Mq, f_sqrt, d_sqrt, Sb, Mqb, w->lam, U, t, t2)) return false;
  mm3(nn, W, Mqb, W, dQ, t);
  sym_inplace(nn, dQ);
  mm3(nn, Mqb, W, Q, t2, t); /* Mqbar W Q */
  for (size_t i = 0; i < nn; i++)
    for (size_t j = 0; j < nn; j++) Wb[i * nn + j] += t2[i * nn + j] + t2[j * nn + i];
  return base_grad(nn, P, Ab, Wb, dP, w, 14);
}

RLX_CPU_KERNEL(SpdParallelTransportBackward) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 4, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0;
  if (s == RLX_OK) s = ws_open(n, &w, nn, 18);
  if (s == RLX_OK && !transport_bwd(nn, io.v[0], io.v[1], io.v[2], io.v[3], io.y, &w)) nan_all(io.y, 3 * nn * nn);
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

/* ======================================================================================
 * SpdMatrixFnBatch and its backward
 * ====================================================================================== */

RLX_CPU_KERNEL(SpdMatrixFnBatch) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 1, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0, B = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  spd_scalar_fn f, df;
  fn_of_kind(n->attrs.SpdMatrixFnBatch.kind, &f, &df);
  if (s == RLX_OK) s = ws_open(n, &w, nn, 1);
  for (size_t b = 0; s == RLX_OK && b < B; b++)
    if (!mat_fn(nn, io.v[0] + b * nn * nn, f, w.lam, ws_mat(&w, 0), io.y + b * nn * nn))
      nan_all(io.y + b * nn * nn, nn * nn);
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}

RLX_CPU_KERNEL(SpdMatrixFnBatchBackward) {
  (void)ctx;
  spd_io io;
  spd_ws w = {0};
  rlx_status s = io_open(n, in, n_in, 2, out, &io);
  size_t nn = s == RLX_OK ? side(&in[0]) : 0, B = s == RLX_OK ? (size_t)in[0].shape.dims[0] : 0;
  spd_scalar_fn f, df;
  fn_of_kind(n->attrs.SpdMatrixFnBatchBackward.kind, &f, &df);
  if (s == RLX_OK) s = ws_open(n, &w, nn, 3);
  for (size_t b = 0; s == RLX_OK && b < B; b++) {
    double *y = io.y + b * nn * nn;
    if (!dk_at(nn, io.v[0] + b * nn * nn, f, df, io.v[1] + b * nn * nn, y, w.lam, ws_mat(&w, 0), ws_mat(&w, 1),
               ws_mat(&w, 2)))
      nan_all(y, nn * nn);
  }
  ws_close(&w);
  io_close(&io, out, s);
  return s;
}
