/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, linear algebra: MatMul (batch broadcasting, every dtype class, empty
 * extents), DotGeneral (general contraction), solves (singular -> runtime error), Cholesky,
 * TriangularSolve, Det/LogDet, Svd, Qr, Eigh/EighBatch (checked through their defining identities
 * and the canonical sign conventions) and GroupedMatMul (OOB expert -> runtime error). */
#include "ref_b_test.h"

/* ---- MatMul ---- */

/* Naive [M,K] x [K,N] in double. */
static void naive_mm(const double *a, const double *b, double *c, int M, int N, int K) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int p = 0; p < K; p++) s += a[i * K + p] * b[p * N + j];
      c[i * N + j] = s;
    }
}

static void test_matmul(void) {
  rt c;
  /* hand-worked 2x2 */
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F32, 2, 2), VALS(1, 2, 3, 4)}, {SHP(F32, 2, 2), VALS(5, 6, 7, 8)}));
  CHECK_OUT(&c, VALS(19, 22, 43, 50), 4, 0, 0);
  rt_free(&c);

  /* random [3,5] x [5,4] in f32 and f64 */
  double a[15], b[20], want[12];
  rt_fill(a, 15, 1);
  rt_fill(b, 20, 2);
  naive_mm(a, b, want, 3, 4, 5);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F32, 3, 5), a}, {SHP(F32, 5, 4), b}));
  CHECK_OUT(&c, want, 12, 1e-6, 1e-6);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F64, 3, 5), a}, {SHP(F64, 5, 4), b}));
  CHECK_OUT(&c, want, 12, 1e-14, 0);
  rt_free(&c);
  /* f16 / bf16: f32 accumulation, one rounding (values are exact multiples of 1/1024 here) */
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F16, 3, 5), a}, {SHP(F16, 5, 4), b}));
  for (int i = 0; i < 12; i++) CHECK(rt_out(&c, i) == (double)rlx_f16_to_f32(rlx_f32_to_f16((float)want[i])));
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(BF16, 3, 5), a}, {SHP(BF16, 5, 4), b}));
  for (int i = 0; i < 12; i++) CHECK(rt_out(&c, i) == (double)rlx_bf16_to_f32(rlx_f32_to_bf16((float)want[i])));
  rt_free(&c);

  /* batch broadcasting: a [2,1,3,4] x b [3,4,2] -> [2,3,3,2] */
  double A[24], B[24], W[36];
  rt_fill(A, 24, 3);
  rt_fill(B, 24, 4);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) naive_mm(A + i * 12, B + j * 8, W + (i * 3 + j) * 6, 3, 2, 4);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F32, 2, 1, 3, 4), A}, {SHP(F32, 3, 4, 2), B}));
  CHECK(c.out.shape.rank == 4 && c.out.shape.dims[0] == 2 && c.out.shape.dims[1] == 3);
  CHECK_OUT(&c, W, 36, 1e-6, 1e-6);
  rt_free(&c);

  /* integers: exact, saturating; bool: OR of ANDs */
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(I32, 1, 3), VALS(100000, 2, -3)},
                  {SHP(I32, 3, 2), VALS(100000, 1, 7, 1, 1, 1)}));
  CHECK_OUT(&c, VALS(2147483647, 100000 + 2 - 3), 2, 0, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(I8, 2, 2), VALS(100, 100, -100, 1)}, {SHP(I8, 2, 1), VALS(1, 1)}));
  CHECK_OUT(&c, VALS(127, -99), 2, 0, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(BOOL, 2, 2), VALS(1, 0, 0, 0)}, {SHP(BOOL, 2, 2), VALS(1, 1, 1, 0)}));
  CHECK_OUT(&c, VALS(1, 1, 0, 0), 4, 0, 0);
  rt_free(&c);

  /* empty contraction -> zeros; empty rows -> empty output */
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F32, 2, 0), NULL}, {SHP(F32, 0, 3), NULL}));
  for (int i = 0; i < 6; i++) ((float *)c.out.data)[i] = 7.0f;
  CHECK_OK(rt_exec(&c));
  CHECK_OUT(&c, VALS(0, 0, 0, 0, 0, 0), 6, 0, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, MatMul, NULL, NULL, {SHP(F64, 0, 4), NULL}, {SHP(F64, 4, 3), b}));
  CHECK(rt_out_n(&c) == 0);
  rt_free(&c);

  /* mismatched operand handed to the kernel directly */
  CHECK_OK(rt_build(&c, RLX_OP_MatMul, NULL, NULL, false, 2, (rt_arg[]){{SHP(F32, 2, 3), a}, {SHP(F32, 3, 2), b}}));
  c.in[1].shape = SHP(F32, 2, 2);
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "rows");
  rt_free(&c);
}

/* ---- DotGeneral ---- */

static void test_dot_general(void) {
  rt c;
  /* lhs [3,2,4,6]: batch axis 1, contracting (2, 0); rhs [4,5,2,3]: batch axis 2, contracting
   * (0, 3). out [2, 6, 5] = sum_{c,i} lhs[i][b][c][f] * rhs[c][j][b][i]. */
  double L[144], R[120], W[60];
  rt_fill(L, 144, 5);
  rt_fill(R, 120, 6);
  for (int b = 0; b < 2; b++)
    for (int f = 0; f < 6; f++)
      for (int j = 0; j < 5; j++) {
        double s = 0;
        for (int cc = 0; cc < 4; cc++)
          for (int i = 0; i < 3; i++) s += L[((i * 2 + b) * 4 + cc) * 6 + f] * R[((cc * 5 + j) * 2 + b) * 3 + i];
        W[(b * 6 + f) * 5 + j] = s;
      }
  rlx_attrs_DotGeneral at = {
      .lhs_contracting = IL(2, 0), .rhs_contracting = IL(0, 3), .lhs_batch = IL(1), .rhs_batch = IL(2)};
  CHECK_OK(RT_RUN(&c, DotGeneral, &at, NULL, {SHP(F64, 3, 2, 4, 6), L}, {SHP(F64, 4, 5, 2, 3), R}));
  CHECK(c.out.shape.rank == 3 && c.out.shape.dims[0] == 2 && c.out.shape.dims[1] == 6 && c.out.shape.dims[2] == 5);
  CHECK_OUT(&c, W, 60, 1e-12, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, DotGeneral, &at, NULL, {SHP(F32, 3, 2, 4, 6), L}, {SHP(F32, 4, 5, 2, 3), R}));
  CHECK_OUT(&c, W, 60, 1e-5, 1e-6);
  rt_free(&c);

  /* no contraction: outer product [2] x [3] -> [2,3] */
  rlx_attrs_DotGeneral outer = {0};
  CHECK_OK(RT_RUN(&c, DotGeneral, &outer, NULL, {SHP(F32, 2), VALS(1, 2)}, {SHP(F32, 3), VALS(3, 4, 5)}));
  CHECK_OUT(&c, VALS(3, 4, 5, 6, 8, 10), 6, 0, 0);
  rt_free(&c);
  /* full contraction to a scalar; integer dtype */
  rlx_attrs_DotGeneral full = {.lhs_contracting = IL(0), .rhs_contracting = IL(0)};
  CHECK_OK(RT_RUN(&c, DotGeneral, &full, NULL, {SHP(I64, 3), VALS(1, 2, 3)}, {SHP(I64, 3), VALS(4, 5, 6)}));
  CHECK_OUT(&c, VALS(32), 1, 0, 0);
  rt_free(&c);
}

/* ---- solves ---- */

/* A well-conditioned (diagonally dominant) n x n matrix. */
static void dominant(double *a, int n, uint32_t seed) {
  rt_fill(a, (size_t)n * n, seed);
  for (int i = 0; i < n; i++) a[i * n + i] += 2.0 * n;
}

static void test_solves(void) {
  rt c;
  double A[16], b[12], ax[12];
  dominant(A, 4, 7);
  rt_fill(b, 12, 8);
  /* A x = b with b [4] and [4, 3]; check the residual */
  for (int r = 1; r <= 3; r += 2) {
    rlx_shape bs = r == 1 ? SHP(F64, 4) : SHP(F64, 4, 3);
    CHECK_OK(RT_RUN(&c, DenseSolve, NULL, NULL, {SHP(F64, 4, 4), A}, {bs, b}));
    double x[12];
    for (int i = 0; i < 4 * r; i++) x[i] = rt_out(&c, i);
    naive_mm(A, x, ax, 4, r, 4);
    bool ok = true;
    for (int i = 0; i < 4 * r; i++) ok = ok && fabs(ax[i] - b[i]) < 1e-12;
    CHECK(ok);
    rt_free(&c);
  }
  CHECK_OK(RT_RUN(&c, DenseSolve, NULL, NULL, {SHP(F32, 4, 4), A}, {SHP(F32, 4, 3), b}));
  {
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = rt_out(&c, i);
    naive_mm(A, x, ax, 4, 3, 4);
    bool ok = true;
    for (int i = 0; i < 12; i++) ok = ok && fabs(ax[i] - b[i]) < 1e-5;
    CHECK(ok);
  }
  rt_free(&c);
  /* hand-worked: [[2,1],[1,3]] x = [3,5] -> x = [0.8, 1.4] */
  CHECK_OK(RT_RUN(&c, DenseSolve, NULL, NULL, {SHP(F64, 2, 2), VALS(2, 1, 1, 3)}, {SHP(F64, 2), VALS(3, 5)}));
  CHECK_OUT(&c, VALS(0.8, 1.4), 2, 1e-15, 0);
  rt_free(&c);
  /* singular */
  CHECK_OK(rt_build(&c, RLX_OP_DenseSolve, NULL, NULL, false, 2,
                    (rt_arg[]){{SHP(F64, 2, 2), VALS(1, 2, 2, 4)}, {SHP(F64, 2), VALS(1, 1)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "singular");
  CHECK(strstr(rlx_last_error(), "DenseSolve node 'node'") != NULL);
  rt_free(&c);
  /* non-finite input -> NaN result */
  CHECK_OK(RT_RUN(&c, DenseSolve, NULL, NULL, {SHP(F32, 2, 2), VALS(1, NAN, 0, 1)}, {SHP(F32, 2), VALS(1, 1)}));
  CHECK(isnan(rt_out(&c, 0)) && isnan(rt_out(&c, 1)));
  rt_free(&c);
  /* f16 reaches the kernel: rejected */
  CHECK_OK(rt_build(&c, RLX_OP_DenseSolve, NULL, NULL, false, 2,
                    (rt_arg[]){{SHP(F16, 2, 2), VALS(1, 0, 0, 1)}, {SHP(F16, 2), VALS(1, 1)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_UNSUPPORTED, "f16");
  rt_free(&c);

  /* batched: [2,3,3] x [2,3,2]; then a singular second matrix */
  double BA[18], Bb[12];
  dominant(BA, 3, 9);
  dominant(BA + 9, 3, 10);
  rt_fill(Bb, 12, 11);
  CHECK_OK(RT_RUN(&c, BatchedDenseSolve, NULL, NULL, {SHP(F64, 2, 3, 3), BA}, {SHP(F64, 2, 3, 2), Bb}));
  {
    bool ok = true;
    for (int k = 0; k < 2; k++) {
      double x[6], r[6];
      for (int i = 0; i < 6; i++) x[i] = rt_out(&c, (size_t)(k * 6 + i));
      naive_mm(BA + k * 9, x, r, 3, 2, 3);
      for (int i = 0; i < 6; i++) ok = ok && fabs(r[i] - Bb[k * 6 + i]) < 1e-12;
    }
    CHECK(ok);
  }
  rt_free(&c);
  for (int i = 0; i < 9; i++) BA[9 + i] = i < 3 ? 1 : i < 6 ? 2 : 3; /* rank 1 */
  CHECK_OK(rt_build(&c, RLX_OP_BatchedDenseSolve, NULL, NULL, false, 2,
                    (rt_arg[]){{SHP(F64, 2, 3, 3), BA}, {SHP(F64, 2, 3), Bb}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "matrix 1 of the batch is singular");
  rt_free(&c);
}

/* ---- Cholesky, TriangularSolve ---- */

static void test_cholesky_trsm(void) {
  rt c;
  /* SPD A = M M^T + 4 I */
  double M[16], A[16];
  rt_fill(M, 16, 12);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      double s = i == j ? 4.0 : 0.0;
      for (int k = 0; k < 4; k++) s += M[i * 4 + k] * M[j * 4 + k];
      A[i * 4 + j] = s;
    }
  for (int f = 0; f < 2; f++) {
    CHECK_OK(RT_RUN(&c, Cholesky, NULL, NULL, {f ? SHP(F32, 4, 4) : SHP(F64, 4, 4), A}));
    double L[16];
    bool upper_zero = true, diag_pos = true, ok = true;
    for (int i = 0; i < 16; i++) L[i] = rt_out(&c, i);
    for (int i = 0; i < 4; i++) {
      diag_pos = diag_pos && L[i * 4 + i] > 0;
      for (int j = i + 1; j < 4; j++) upper_zero = upper_zero && L[i * 4 + j] == 0.0;
    }
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        double s = 0;
        for (int k = 0; k < 4; k++) s += L[i * 4 + k] * L[j * 4 + k];
        ok = ok && fabs(s - A[i * 4 + j]) < (f ? 1e-4 : 1e-12);
      }
    CHECK(upper_zero && diag_pos && ok);
    rt_free(&c);
  }
  /* hand-worked: [[4,2],[2,5]] -> [[2,0],[1,2]] */
  CHECK_OK(RT_RUN(&c, Cholesky, NULL, NULL, {SHP(F64, 2, 2), VALS(4, 2, 2, 5)}));
  CHECK_OUT(&c, VALS(2, 0, 1, 2), 4, 1e-15, 0);
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_Cholesky, NULL, NULL, false, 1, (rt_arg[]){{SHP(F64, 2, 2), VALS(1, 2, 2, 1)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "not positive definite");
  rt_free(&c);

  /* TriangularSolve: op(T) X = B, the unused triangle holds junk that must be ignored */
  double T[9] = {2, 99, 99, 1, 3, 99, -1, 2, 4}, B[6];
  rt_fill(B, 6, 13);
  for (int lower = 0; lower < 2; lower++)
    for (int tr = 0; tr < 2; tr++) {
      double Tm[9], X[6];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
          /* upper variant: transpose of the lower data, junk below */
          double lo = j <= i ? T[i * 3 + j] : 0.0, up = i <= j ? T[j * 3 + i] : 0.0;
          Tm[i * 3 + j] = lower ? lo : up;
        }
      double data[9];
      for (int i = 0; i < 9; i++) data[i] = Tm[i];
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
          if (lower ? j > i : j < i) data[i * 3 + j] = 77; /* junk */
      rlx_attrs_TriangularSolve at = {.lower = lower, .transpose = tr};
      CHECK_OK(RT_RUN(&c, TriangularSolve, &at, NULL, {SHP(F64, 3, 3), data}, {SHP(F64, 3, 2), B}));
      for (int i = 0; i < 6; i++) X[i] = rt_out(&c, i);
      bool ok = true;
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
          double s = 0;
          for (int k = 0; k < 3; k++) s += (tr ? Tm[k * 3 + i] : Tm[i * 3 + k]) * X[k * 2 + j];
          ok = ok && fabs(s - B[i * 2 + j]) < 1e-12;
        }
      CHECK_MSG(ok, "TriangularSolve lower=%d transpose=%d", lower, tr);
      rt_free(&c);
    }
  rlx_attrs_TriangularSolve at = {.lower = true};
  CHECK_OK(RT_RUN(&c, TriangularSolve, &at, NULL, {SHP(F32, 2, 2), VALS(2, 0, 1, 4)}, {SHP(F32, 2), VALS(4, 10)}));
  CHECK_OUT(&c, VALS(2, 2), 2, 0, 0);
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_TriangularSolve, &at, NULL, false, 2,
                    (rt_arg[]){{SHP(F32, 2, 2), VALS(2, 0, 1, 0)}, {SHP(F32, 2), VALS(1, 1)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "diagonal entry 1 is zero");
  rt_free(&c);
}

/* ---- Det, LogDet ---- */

static double det3(const double *m) {
  return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

static void test_det(void) {
  rt c;
  CHECK_OK(RT_RUN(&c, Det, NULL, NULL, {SHP(F64, 2, 2), VALS(1, 2, 3, 4)}));
  CHECK(c.out.shape.rank == 0);
  CHECK_OUT(&c, VALS(-2), 1, 1e-14, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, Det, NULL, NULL, {SHP(F32, 2, 2), VALS(0, 1, 1, 0)}));
  CHECK_OUT(&c, VALS(-1), 1, 0, 0);
  rt_free(&c);
  double m[9];
  for (uint32_t seed = 20; seed < 25; seed++) {
    rt_fill(m, 9, seed);
    double d = det3(m);
    CHECK_OK(RT_RUN(&c, Det, NULL, NULL, {SHP(F64, 3, 3), m}));
    CHECK_OUT(&c, &d, 1, 1e-12, 1e-12);
    rt_free(&c);
    double ld = log(fabs(d));
    CHECK_OK(RT_RUN(&c, LogDet, NULL, NULL, {SHP(F64, 3, 3), m}));
    CHECK_OUT(&c, &ld, 1, 1e-12, 1e-12);
    rt_free(&c);
  }
  /* singular: det 0, logdet -inf (not an error) */
  CHECK_OK(RT_RUN(&c, Det, NULL, NULL, {SHP(F64, 2, 2), VALS(1, 2, 2, 4)}));
  CHECK_OUT(&c, VALS(0), 1, 0, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, LogDet, NULL, NULL, {SHP(F64, 2, 2), VALS(1, 2, 2, 4)}));
  CHECK(isinf(rt_out(&c, 0)) && rt_out(&c, 0) < 0);
  rt_free(&c);
  /* empty matrix: det 1, logdet 0 */
  CHECK_OK(RT_RUN(&c, Det, NULL, NULL, {SHP(F64, 0, 0), NULL}));
  CHECK_OUT(&c, VALS(1), 1, 0, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, LogDet, NULL, NULL, {SHP(F32, 0, 0), NULL}));
  CHECK_OUT(&c, VALS(0), 1, 0, 0);
  rt_free(&c);
}

/* ---- Svd, Qr, Eigh ---- */

/* The documented sign pivot: first entry with magnitude >= (1 - 1e-3) * the largest magnitude. */
static int pivot(const double *v, int count, int stride) {
  double mx = 0;
  for (int i = 0; i < count; i++) mx = fabs(v[i * stride]) > mx ? fabs(v[i * stride]) : mx;
  for (int i = 0; i < count; i++)
    if (fabs(v[i * stride]) >= mx * 0.999) return i;
  return 0;
}

/* Runs a one-operand factorisation op with the given attrs and copies its output. */
static bool run_part(rlx_op op, const void *attrs, rlx_shape s, const double *a, double *dst, size_t *count) {
  rt c;
  rlx_status st = rt_build(&c, op, attrs, NULL, false, 1, (rt_arg[]){{s, a}});
  if (st == RLX_OK) st = rt_exec(&c);
  if (st != RLX_OK) {
    fprintf(stderr, "  %s failed: %s\n", rlx_op_name(op), rlx_last_error());
    rt_free(&c);
    return false;
  }
  *count = rt_out_n(&c);
  for (size_t i = 0; i < *count; i++) dst[i] = rt_out(&c, i);
  rt_free(&c);
  return true;
}

static void test_svd(int m, int n, rlx_dtype t, double tol) {
  int k = m < n ? m : n;
  double A[64], U[64], S[8], Vt[64];
  size_t cu, cs, cv;
  rt_fill(A, (size_t)m * n, (uint32_t)(30 + m * 7 + n));
  rlx_shape s = rlx_shape_make(t, 2, (rlx_dim[]){m, n});
  rlx_attrs_Svd pu = {.part = RLX_SVD_PART_U}, ps = {.part = RLX_SVD_PART_S}, pv = {.part = RLX_SVD_PART_VT};
  CHECK(run_part(RLX_OP_Svd, &pu, s, A, U, &cu) && cu == (size_t)(m * k));
  CHECK(run_part(RLX_OP_Svd, &ps, s, A, S, &cs) && cs == (size_t)k);
  CHECK(run_part(RLX_OP_Svd, &pv, s, A, Vt, &cv) && cv == (size_t)(k * n));
  bool rec = true, desc = true, orth = true, sign = true;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double v = 0;
      for (int p = 0; p < k; p++) v += U[i * k + p] * S[p] * Vt[p * n + j];
      rec = rec && fabs(v - A[i * n + j]) < tol;
    }
  for (int p = 0; p < k; p++) {
    desc = desc && S[p] >= 0 && (p == 0 || S[p] <= S[p - 1]);
    for (int q = 0; q < k; q++) {
      double uu = 0, vv = 0;
      for (int i = 0; i < m; i++) uu += U[i * k + p] * U[i * k + q];
      for (int j = 0; j < n; j++) vv += Vt[p * n + j] * Vt[q * n + j];
      orth = orth && fabs(uu - (p == q)) < tol && fabs(vv - (p == q)) < tol;
    }
    sign = sign && U[pivot(U + p, m, k) * k + p] > 0;
  }
  CHECK_MSG(rec && desc && orth && sign, "Svd %dx%d %s: rec %d desc %d orth %d sign %d", m, n, rlx_dtype_name(t), rec,
            desc, orth, sign);
}

static void test_qr(int m, int n, rlx_dtype t, double tol) {
  int k = m < n ? m : n;
  double A[64], Q[64], R[64];
  size_t cq, cr;
  rt_fill(A, (size_t)m * n, (uint32_t)(50 + m * 7 + n));
  rlx_shape s = rlx_shape_make(t, 2, (rlx_dim[]){m, n});
  rlx_attrs_Qr pq = {.part = RLX_QR_PART_Q}, pr = {.part = RLX_QR_PART_R};
  CHECK(run_part(RLX_OP_Qr, &pq, s, A, Q, &cq) && cq == (size_t)(m * k));
  CHECK(run_part(RLX_OP_Qr, &pr, s, A, R, &cr) && cr == (size_t)(k * n));
  bool rec = true, orth = true, tri = true;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double v = 0;
      for (int p = 0; p < k; p++) v += Q[i * k + p] * R[p * n + j];
      rec = rec && fabs(v - A[i * n + j]) < tol;
    }
  for (int p = 0; p < k; p++) {
    tri = tri && R[p * n + p] >= 0;
    for (int j = 0; j < p && j < n; j++) tri = tri && R[p * n + j] == 0.0;
    for (int q = 0; q < k; q++) {
      double v = 0;
      for (int i = 0; i < m; i++) v += Q[i * k + p] * Q[i * k + q];
      orth = orth && fabs(v - (p == q)) < tol;
    }
  }
  CHECK_MSG(rec && orth && tri, "Qr %dx%d %s: rec %d orth %d tri %d", m, n, rlx_dtype_name(t), rec, orth, tri);
}

static void check_eigh(const double *A, const double *pk, int n, double tol) {
  const double *lam = pk, *U = pk + n;
  bool asc = true, eig = true, orth = true, sign = true;
  for (int j = 0; j < n; j++) {
    asc = asc && (j == 0 || lam[j] >= lam[j - 1]);
    for (int i = 0; i < n; i++) {
      double av = 0;
      for (int p = 0; p < n; p++) av += A[i * n + p] * U[p * n + j];
      eig = eig && fabs(av - lam[j] * U[i * n + j]) < tol;
    }
    for (int q = 0; q < n; q++) {
      double v = 0;
      for (int i = 0; i < n; i++) v += U[i * n + j] * U[i * n + q];
      orth = orth && fabs(v - (j == q)) < tol;
    }
    sign = sign && U[pivot(U + j, n, n) * n + j] > 0;
  }
  CHECK_MSG(asc && eig && orth && sign, "Eigh n=%d: asc %d eig %d orth %d sign %d", n, asc, eig, orth, sign);
}

static void test_eigh(void) {
  double M[16], A[16], pk[20];
  size_t cnt;
  rt_fill(M, 16, 70);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) A[i * 4 + j] = M[i * 4 + j] + M[j * 4 + i];
  CHECK(run_part(RLX_OP_Eigh, NULL, SHP(F64, 4, 4), A, pk, &cnt) && cnt == 20);
  check_eigh(A, pk, 4, 1e-12);
  CHECK(run_part(RLX_OP_Eigh, NULL, SHP(F32, 4, 4), A, pk, &cnt) && cnt == 20);
  check_eigh(A, pk, 4, 1e-4);
  /* hand-worked: [[2,1],[1,2]] -> lambda (1, 3), eigenvectors (1,-1)/sqrt2 and (1,1)/sqrt2 (the
   * entries tie in magnitude, so the first one is made positive) */
  CHECK(run_part(RLX_OP_Eigh, NULL, SHP(F64, 2, 2), VALS(2, 1, 1, 2), pk, &cnt) && cnt == 6);
  double r = sqrt(0.5);
  const double want[6] = {1, 3, r, r, -r, r};
  bool ok = true;
  for (int i = 0; i < 6; i++) ok = ok && fabs(pk[i] - want[i]) < 1e-14;
  CHECK_MSG(ok, "Eigh 2x2: %g %g | %g %g %g %g", pk[0], pk[1], pk[2], pk[3], pk[4], pk[5]);
  /* EighBatch [2,3,3] */
  double B[18], pb[24];
  rt_fill(M, 9, 71);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) B[i * 3 + j] = M[i * 3 + j] + M[j * 3 + i];
  rt_fill(M, 9, 72);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) B[9 + i * 3 + j] = M[i * 3 + j] + M[j * 3 + i];
  CHECK(run_part(RLX_OP_EighBatch, NULL, SHP(F64, 2, 3, 3), B, pb, &cnt) && cnt == 24);
  check_eigh(B, pb, 3, 1e-12);
  check_eigh(B + 9, pb + 12, 3, 1e-12);
}

/* ---- GroupedMatMul ---- */

static void test_grouped(void) {
  rt c;
  double x[15], w[18], want[10];
  rt_fill(x, 15, 80);
  rt_fill(w, 18, 81);
  const int idx[5] = {2, 0, 2, 1, 0};
  for (int i = 0; i < 5; i++) naive_mm(x + i * 3, w + idx[i] * 6, want + i * 2, 1, 2, 3);
  CHECK_OK(RT_RUN(&c, GroupedMatMul, NULL, NULL, {SHP(F32, 5, 3), x}, {SHP(F32, 3, 3, 2), w},
                  {SHP(F32, 5), VALS(2, 0, 2, 1, 0)}));
  CHECK_OUT(&c, want, 10, 1e-6, 1e-6);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, GroupedMatMul, NULL, NULL, {SHP(F64, 5, 3), x}, {SHP(F64, 3, 3, 2), w},
                  {SHP(I64, 5), VALS(2, 0, 2, 1, 0)}));
  CHECK_OUT(&c, want, 10, 1e-14, 0);
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_GroupedMatMul, NULL, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 5, 3), x}, {SHP(F32, 3, 3, 2), w}, {SHP(I32, 5), VALS(2, 0, 3, 1, 0)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "index 3 (element 2 of operand 2)");
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_GroupedMatMul, NULL, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 5, 3), x}, {SHP(F32, 3, 3, 2), w}, {SHP(F32, 5), VALS(2, 0, -1, 1, 0.5)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "index -1");
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_GroupedMatMul, NULL, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 5, 3), x}, {SHP(F32, 3, 3, 2), w}, {SHP(F32, 5), VALS(2, 0, 1, 1, 0.5)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "not an integer");
  rt_free(&c);
}

int main(void) {
  test_matmul();
  test_dot_general();
  test_solves();
  test_cholesky_trsm();
  test_det();
  test_svd(4, 3, RLX_F64, 1e-12);
  test_svd(3, 5, RLX_F64, 1e-12);
  test_svd(4, 4, RLX_F32, 1e-4);
  test_qr(5, 3, RLX_F64, 1e-12);
  test_qr(3, 5, RLX_F64, 1e-12);
  test_qr(4, 4, RLX_F32, 1e-4);
  test_eigh();
  test_grouped();
  return rlx_test_finish("ref_linalg");
}
