/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: linear algebra (spec ir-core §10.3, ir-special §1.4 GroupedMatMul,
 * §6 Eigh packing).
 *
 * Products: F32 through cblas_sgemm, F64 through cblas_dgemm, F16/BF16 widened to f32 and
 * multiplied with sgemm (f32 accumulation, one rounding at the end), integers and bool exactly in
 * int64 with saturation (the house rule of the integer kernels), complex in double complex.
 *
 * Factorisations (solves, Cholesky, determinants, SVD, QR, Eigh) run in the operand's precision
 * through LAPACKE (s* for F32, d* for F64); other dtypes are rejected. A NaN or infinity anywhere in
 * a factorisation input gives an all-NaN result (LAPACK's behaviour on such input is unspecified).
 * Sign conventions are made canonical so that every backend can be compared exactly:
 *   - Svd: in each column of U the sign pivot (the first entry whose magnitude is within a relative
 *     1e-3 of the column's largest) is positive; Vt's row flips with it;
 *   - Qr: R has a non-negative diagonal (Q's column flips with R's row);
 *   - Eigh: each eigenvector (column of U) has a positive sign pivot, as for Svd. */
#include <cblas.h>
#include <complex.h>
#ifndef CMPLX /* glibc defines CMPLX for gcc only */
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util_b.h"

/* ======================================================================================
 * Shared GEMM core
 * ====================================================================================== */

/* BLAS and LAPACK take int extents. */
static rlx_status need_blas_int(const rlx_node *n, size_t v, const char *what) {
  if (v > (size_t)INT_MAX)
    return ru_error(RLX_ERR_UNSUPPORTED, n, "%s = %zu exceeds the BLAS/LAPACK index range (%d)", what, v, INT_MAX);
  return RLX_OK;
}

/* Scratch of a half-precision product: widened A, B and the f32 result. */
typedef struct mm_scratch {
  float *buf;
  size_t cap; /* floats */
} mm_scratch;

static rlx_status scratch_reserve(const rlx_node *n, mm_scratch *s, size_t floats) {
  if (floats <= s->cap) return RLX_OK;
  float *p = NULL;
  RLX_TRY(rb_alloc(n, floats, sizeof *p, &p));
  free(s->buf);
  s->buf = p;
  s->cap = floats;
  return RLX_OK;
}

/* C[M, N] = A[M, K] . B[K, N] for one slice. A, B, C are row-major and contiguous from the given
 * element offsets, all of dtype t. */
static rlx_status gemm_slice(const rlx_node *n, rlx_dtype t, const void *A, size_t ao, const void *B, size_t bo,
                             void *C, size_t co, size_t M, size_t N, size_t K, mm_scratch *scr) {
  if (M == 0 || N == 0) return RLX_OK;
  bool blas = t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16;
  if (blas) {
    RLX_TRY(need_blas_int(n, M, "M"));
    RLX_TRY(need_blas_int(n, N, "N"));
    RLX_TRY(need_blas_int(n, K, "K"));
  }
  if (blas && K == 0) { /* an empty sum: zeros (BLAS would reject the leading dimension 0) */
    for (size_t i = 0; i < M * N; i++) ru_store(C, t, co + i, 0.0);
    return RLX_OK;
  }
  int m = (int)M, nn = (int)N, k = (int)K;
  switch (t) {
  case RLX_F32:
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, nn, k, 1.0f, (const float *)A + ao, k,
                (const float *)B + bo, nn, 0.0f, (float *)C + co, nn);
    return RLX_OK;
  case RLX_F64:
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, nn, k, 1.0, (const double *)A + ao, k,
                (const double *)B + bo, nn, 0.0, (double *)C + co, nn);
    return RLX_OK;
  case RLX_F16:
  case RLX_BF16: {
    size_t total = M * K + K * N + M * N; /* each part <= an operand's element count */
    RLX_TRY(scratch_reserve(n, scr, total));
    float *a = scr->buf, *b = a + M * K, *c = b + K * N;
    for (size_t i = 0; i < M * K; i++) a[i] = (float)rlx_elem_get(A, t, ao + i);
    for (size_t i = 0; i < K * N; i++) b[i] = (float)rlx_elem_get(B, t, bo + i);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, nn, k, 1.0f, a, k, b, nn, 0.0f, c, nn);
    for (size_t i = 0; i < M * N; i++) ru_store(C, t, co + i, c[i]);
    return RLX_OK;
  }
  default: break;
  }
  if (ru_is_complex(t)) {
    for (size_t i = 0; i < M; i++)
      for (size_t j = 0; j < N; j++) {
        double complex acc = 0;
        for (size_t p = 0; p < K; p++) {
          double ar, ai, br, bi;
          rlx_elem_get_c(A, t, ao + i * K + p, &ar, &ai);
          rlx_elem_get_c(B, t, bo + p * N + j, &br, &bi);
          acc += CMPLX(ar, ai) * CMPLX(br, bi);
        }
        rlx_elem_set_c(C, t, co + i * N + j, creal(acc), cimag(acc));
      }
    return RLX_OK;
  }
  /* integers and bool: exact int64 with saturation */
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      int64_t acc = 0;
      for (size_t p = 0; p < K; p++)
        acc =
            rb_sat_add(acc, rb_sat_mul(rlx_elem_get_i64(A, t, ao + i * K + p), rlx_elem_get_i64(B, t, bo + p * N + j)));
      ru_store_i64(C, t, co + i * N + j, acc);
    }
  return RLX_OK;
}

/* ======================================================================================
 * MatMul, DotGeneral
 * ====================================================================================== */

RLX_CPU_KERNEL(MatMul) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  const rlx_shape *a = &in[0].shape, *b = &in[1].shape;
  for (uint32_t i = 0; i < 2; i++)
    if (in[i].shape.rank < 2)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u has shape %s; MatMul needs rank >= 2", i,
                      ru_fmt(&in[i].shape));
  size_t M = (size_t)a->dims[a->rank - 2], K = (size_t)a->dims[a->rank - 1];
  size_t K2 = (size_t)b->dims[b->rank - 2], N = (size_t)b->dims[b->rank - 1];
  if (K != K2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 %s has %zu rows but operand 0 %s has %zu columns", ru_fmt(b), K2,
                    ru_fmt(a), K);
  rlx_shape ba = *a, bb = *b, bo;
  ba.rank = (uint8_t)(a->rank - 2);
  bb.rank = (uint8_t)(b->rank - 2);
  if (rlx_broadcast(&ba, &bb, &bo) != RLX_OK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "batch dims of operand 0 %s and operand 1 %s do not broadcast", ru_fmt(a),
                    ru_fmt(b));
  int64_t dims[RLX_MAX_RANK];
  if (bo.rank + 2u > RLX_MAX_RANK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "the result would exceed rank %d", RLX_MAX_RANK);
  for (uint32_t k = 0; k < bo.rank; k++) dims[k] = bo.dims[k];
  dims[bo.rank] = (int64_t)M;
  dims[bo.rank + 1] = (int64_t)N;
  RLX_TRY(ru_need_out_dims(n, out, bo.rank + 2u, dims));
  size_t batches = ru_numel(&bo);
  mm_scratch scr = {NULL, 0};
  rlx_status s = RLX_OK;
  for (size_t i = 0; i < batches && s == RLX_OK; i++) {
    size_t ao = rlx_broadcast_offset(&ba, &bo, i) * M * K, bofs = rlx_broadcast_offset(&bb, &bo, i) * K * N;
    s = gemm_slice(n, t, in[0].data, ao, in[1].data, bofs, out->data, i * M * N, M, N, K, &scr);
  }
  free(scr.buf);
  return s;
}

/* dst = src transposed by perm (dst axis k = src axis perm[k]); element size esz. */
static void permute_copy(const void *src, const rlx_shape *s, const uint32_t *perm, void *dst, size_t esz) {
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(s, st);
  rlx_shape p = *s;
  for (uint32_t k = 0; k < s->rank; k++) p.dims[k] = s->dims[perm[k]];
  size_t count = ru_numel(s);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(&p, i, c);
    size_t off = 0;
    for (uint32_t k = 0; k < s->rank; k++) off += (size_t)c[k] * (size_t)st[perm[k]];
    ru_copy_elem(dst, i, src, off, esz);
  }
}

/* Checks one side's batch + contracting axis lists; returns the used-axis mask. */
static rlx_status dot_side(const rlx_node *n, const rlx_shape *s, uint32_t operand, const rlx_ilist *batch,
                           const char *bname, const rlx_ilist *contract, const char *cname, uint32_t *used) {
  *used = 0;
  const rlx_ilist *lists[2] = {batch, contract};
  const char *names[2] = {bname, cname};
  for (int l = 0; l < 2; l++)
    for (uint32_t k = 0; k < lists[l]->n; k++) {
      int64_t ax = lists[l]->v[k];
      if (ax < 0 || ax >= (int64_t)s->rank)
        return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s: entry %u is %lld; operand %u %s has axes 0..%d",
                        names[l], k, (long long)ax, operand, ru_fmt(s), (int)s->rank - 1);
      if (*used & (1u << ax))
        return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s: axis %lld of operand %u is used twice", names[l],
                        (long long)ax, operand);
      *used |= 1u << ax;
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(DotGeneral) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  const rlx_attrs_DotGeneral *at = &n->attrs.DotGeneral;
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  const rlx_shape *a = &in[0].shape, *b = &in[1].shape;
  if (at->lhs_batch.n != at->rhs_batch.n || at->lhs_contracting.n != at->rhs_contracting.n)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes lhs_batch/rhs_batch (%u/%u) and lhs_contracting/"
                    "rhs_contracting (%u/%u) must pair up",
                    at->lhs_batch.n, at->rhs_batch.n, at->lhs_contracting.n, at->rhs_contracting.n);
  uint32_t ua, ub;
  RLX_TRY(dot_side(n, a, 0, &at->lhs_batch, "lhs_batch", &at->lhs_contracting, "lhs_contracting", &ua));
  RLX_TRY(dot_side(n, b, 1, &at->rhs_batch, "rhs_batch", &at->rhs_contracting, "rhs_contracting", &ub));
  size_t B = 1, M = 1, K = 1, N = 1;
  uint32_t pa[RLX_MAX_RANK], pb[RLX_MAX_RANK], na = 0, nb = 0;
  int64_t dims[2 * RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t k = 0; k < at->lhs_batch.n; k++) {
    int64_t da = a->dims[at->lhs_batch.v[k]], db = b->dims[at->rhs_batch.v[k]];
    if (da != db)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "batch pair %u: operand 0 axis %lld has extent %lld, operand 1 axis %lld "
                      "has %lld",
                      k, (long long)at->lhs_batch.v[k], (long long)da, (long long)at->rhs_batch.v[k], (long long)db);
    B *= (size_t)da;
    dims[r++] = da;
    pa[na++] = (uint32_t)at->lhs_batch.v[k];
    pb[nb++] = (uint32_t)at->rhs_batch.v[k];
  }
  for (uint32_t i = 0; i < a->rank; i++)
    if (!(ua & (1u << i))) {
      M *= (size_t)a->dims[i];
      dims[r++] = a->dims[i];
      pa[na++] = i;
    }
  for (uint32_t k = 0; k < at->lhs_contracting.n; k++) {
    int64_t da = a->dims[at->lhs_contracting.v[k]], db = b->dims[at->rhs_contracting.v[k]];
    if (da != db)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "contracting pair %u: operand 0 axis %lld has extent %lld, operand 1 "
                      "axis %lld has %lld",
                      k, (long long)at->lhs_contracting.v[k], (long long)da, (long long)at->rhs_contracting.v[k],
                      (long long)db);
    K *= (size_t)da;
    pa[na++] = (uint32_t)at->lhs_contracting.v[k];
    pb[nb++] = (uint32_t)at->rhs_contracting.v[k];
  }
  for (uint32_t i = 0; i < b->rank; i++)
    if (!(ub & (1u << i))) {
      N *= (size_t)b->dims[i];
      dims[r++] = b->dims[i];
      pb[nb++] = i;
    }
  if (r > RLX_MAX_RANK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "the result would have rank %u (at most %d)", r, RLX_MAX_RANK);
  RLX_TRY(ru_need_out_dims(n, out, r, dims));
  /* lhs -> [B, M, K], rhs -> [B, K, N], then one GEMM per batch straight into the output. */
  size_t esz = rlx_dtype_size(t);
  void *ta = NULL, *tb = NULL;
  rlx_status s = rb_alloc(n, rlx_tensor_numel(&in[0]), esz, &ta);
  if (s == RLX_OK) s = rb_alloc(n, rlx_tensor_numel(&in[1]), esz, &tb);
  mm_scratch scr = {NULL, 0};
  if (s == RLX_OK) {
    permute_copy(in[0].data, a, pa, ta, esz);
    permute_copy(in[1].data, b, pb, tb, esz);
    for (size_t i = 0; i < B && s == RLX_OK; i++)
      s = gemm_slice(n, t, ta, i * M * K, tb, i * K * N, out->data, i * M * N, M, N, K, &scr);
  }
  free(ta);
  free(tb);
  free(scr.buf);
  return s;
}

/* ======================================================================================
 * GroupedMatMul: out[i] = x[i] . W[idx[i]]
 * ====================================================================================== */

RLX_CPU_KERNEL(GroupedMatMul) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  RLX_TRY(rb_need_index(n, in, 2, "expert_idx"));
  const rlx_shape *x = &in[0].shape, *w = &in[1].shape, *ix = &in[2].shape;
  if (x->rank != 2 || w->rank != 3 || w->dims[1] != x->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands x %s and weight %s must be [M, K] and [E, K, N]", ru_fmt(x),
                    ru_fmt(w));
  if (ix->rank != 1 || ix->dims[0] != x->dims[0])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 2 (expert_idx) has shape %s; expected [%lld]", ru_fmt(ix),
                    (long long)x->dims[0]);
  size_t M = (size_t)x->dims[0], K = (size_t)x->dims[1], E = (size_t)w->dims[0], N = (size_t)w->dims[2];
  int64_t dims[2] = {(int64_t)M, (int64_t)N};
  RLX_TRY(ru_need_out_dims(n, out, 2, dims));
  int64_t *eid = NULL;
  RLX_TRY(rb_alloc(n, M, sizeof *eid, &eid));
  rlx_status s = RLX_OK;
  for (size_t i = 0; i < M && s == RLX_OK; i++)
    s = rb_read_index(n, in, 2, i, (int64_t)E, false, "the expert axis of operand 1 (weight)", &eid[i]);
  /* Rows of one expert are packed together and multiplied with one GEMM. */
  size_t esz = rlx_dtype_size(t), *rows = NULL;
  void *xe = NULL, *ce = NULL;
  mm_scratch scr = {NULL, 0};
  if (s == RLX_OK) s = rb_alloc(n, M, sizeof *rows, &rows);
  if (s == RLX_OK) s = rb_alloc(n, M * K, esz, &xe);
  if (s == RLX_OK) s = rb_alloc(n, M * N, esz, &ce);
  for (size_t e = 0; e < E && s == RLX_OK; e++) {
    size_t cnt = 0;
    for (size_t i = 0; i < M; i++)
      if ((size_t)eid[i] == e) rows[cnt++] = i;
    if (cnt == 0) continue;
    for (size_t r = 0; r < cnt; r++)
      if (K) memcpy((char *)xe + r * K * esz, (const char *)in[0].data + rows[r] * K * esz, K * esz);
    s = gemm_slice(n, t, xe, 0, in[1].data, e * K * N, ce, 0, cnt, N, K, &scr);
    for (size_t r = 0; r < cnt && s == RLX_OK; r++)
      if (N) memcpy((char *)out->data + rows[r] * N * esz, (const char *)ce + r * N * esz, N * esz);
  }
  free(eid);
  free(rows);
  free(xe);
  free(ce);
  free(scr.buf);
  return s;
}

/* ======================================================================================
 * LAPACK-based factorisations (F32 / F64)
 * ====================================================================================== */

static rlx_status need_f32_f64(const rlx_node *n, const rlx_tensor *in, uint32_t i, rlx_dtype out_t) {
  rlx_dtype t = ru_dt(&in[i]);
  if (t != RLX_F32 && t != RLX_F64)
    return ru_error(RLX_ERR_UNSUPPORTED, n,
                    "operand %u has dtype %s; the CPU reference runs this op in f32 or f64 only "
                    "(insert a Cast)",
                    i, rlx_dtype_name(t));
  return ru_need_dtype(n, in, i, out_t);
}

/* Operand i is a square matrix [n, n] (after `lead` batch axes); returns n. */
static rlx_status need_square(const rlx_node *n, const rlx_tensor *in, uint32_t i, uint32_t lead, size_t *size) {
  const rlx_shape *s = &in[i].shape;
  if (s->rank != lead + 2 || s->dims[lead] != s->dims[lead + 1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u has shape %s; expected %s", i, ru_fmt(s),
                    lead ? "[B, n, n]" : "a square matrix [n, n]");
  *size = (size_t)s->dims[lead];
  return need_blas_int(n, *size, "the matrix size n");
}

static bool all_finite(const void *p, rlx_dtype t, size_t off, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (!isfinite(rlx_elem_get(p, t, off + i))) return false;
  return true;
}

static void fill_nan(void *p, rlx_dtype t, size_t off, size_t count) {
  for (size_t i = 0; i < count; i++) ru_store(p, t, off + i, NAN);
}

/* Maps a negative LAPACKE status (bad argument or its own allocation failure) to an error. */
static rlx_status lapack_fail(const rlx_node *n, const char *routine, lapack_int info) {
  if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
    return ru_error(RLX_ERR_OOM, n, "%s ran out of memory", routine);
  return ru_error(RLX_ERR_INTERNAL, n, "%s rejected argument %d", routine, (int)-info);
}

/* Solves A X = B for one system: A [nn, nn] at a_off, B [nn, r] at b_off of `bout` (in place). */
static rlx_status solve_one(const rlx_node *n, rlx_dtype t, const void *A, size_t a_off, void *bout, size_t b_off,
                            size_t nn, size_t r, void *lu, lapack_int *ipiv, long batch) {
  if (nn == 0 || r == 0) return RLX_OK;
  size_t esz = rlx_dtype_size(t);
  if (!all_finite(A, t, a_off, nn * nn) || !all_finite(bout, t, b_off, nn * r)) {
    fill_nan(bout, t, b_off, nn * r);
    return RLX_OK;
  }
  memcpy(lu, (const char *)A + a_off * esz, nn * nn * esz);
  lapack_int info;
  if (t == RLX_F32)
    info = LAPACKE_sgesv(LAPACK_ROW_MAJOR, (lapack_int)nn, (lapack_int)r, lu, (lapack_int)nn, ipiv,
                         (float *)bout + b_off, (lapack_int)r);
  else
    info = LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)nn, (lapack_int)r, lu, (lapack_int)nn, ipiv,
                         (double *)bout + b_off, (lapack_int)r);
  if (info < 0) return lapack_fail(n, "?gesv", info);
  if (info > 0 && batch >= 0)
    return rlx_kernel_error(n, "matrix %ld of the batch is singular: U(%d, %d) of its LU factorisation is exactly zero",
                            batch, (int)info - 1, (int)info - 1);
  if (info > 0)
    return rlx_kernel_error(n, "the matrix is singular: U(%d, %d) of its LU factorisation is exactly zero",
                            (int)info - 1, (int)info - 1);
  return RLX_OK;
}

/* DenseSolve ([n, n], [n] | [n, k]) and BatchedDenseSolve ([B, n, n], [B, n] | [B, n, k]). */
static rlx_status dense_solve(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, uint32_t lead) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(need_f32_f64(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  size_t nn = 0;
  RLX_TRY(need_square(n, in, 0, lead, &nn));
  const rlx_shape *b = &in[1].shape;
  bool ok = (b->rank == lead + 1 || b->rank == lead + 2) && (size_t)b->dims[lead] == nn;
  if (ok && lead) ok = b->dims[0] == in[0].shape.dims[0];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (b) has shape %s; expected %s with n = %zu (A is %s)", ru_fmt(b),
                    lead ? "[B, n] or [B, n, k]" : "[n] or [n, k]", nn, ru_fmt(&in[0].shape));
  RLX_TRY(ru_need_out_dims(n, out, b->rank, b->dims));
  size_t batches = lead ? (size_t)in[0].shape.dims[0] : 1;
  size_t r = b->rank == lead + 2 ? (size_t)b->dims[lead + 1] : 1;
  RLX_TRY(need_blas_int(n, r, "the right-hand-side count"));
  size_t esz = rlx_dtype_size(t);
  if (rlx_tensor_numel(out)) memcpy(out->data, in[1].data, rlx_tensor_numel(out) * esz);
  void *lu = NULL;
  lapack_int *ipiv = NULL;
  rlx_status s = rb_alloc(n, nn * nn, esz, &lu);
  if (s == RLX_OK) s = rb_alloc(n, nn, sizeof *ipiv, &ipiv);
  for (size_t i = 0; i < batches && s == RLX_OK; i++) {
    s = solve_one(n, t, in[0].data, i * nn * nn, out->data, i * nn * r, nn, r, lu, ipiv, lead ? (long)i : -1);
  }
  free(lu);
  free(ipiv);
  return s;
}

RLX_CPU_KERNEL(DenseSolve) {
  (void)ctx;
  return dense_solve(n, in, n_in, out, 0);
}

RLX_CPU_KERNEL(BatchedDenseSolve) {
  (void)ctx;
  return dense_solve(n, in, n_in, out, 1);
}

RLX_CPU_KERNEL(Cholesky) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(need_f32_f64(n, in, 0, t));
  size_t nn = 0;
  RLX_TRY(need_square(n, in, 0, 0, &nn));
  RLX_TRY(ru_need_out_dims(n, out, 2, in[0].shape.dims));
  if (nn == 0) return RLX_OK;
  if (!all_finite(in[0].data, t, 0, nn * nn)) {
    fill_nan(out->data, t, 0, nn * nn);
    return RLX_OK;
  }
  memcpy(out->data, in[0].data, nn * nn * rlx_dtype_size(t));
  /* Only the lower triangle of A is read (A is taken to be symmetric). */
  lapack_int info = t == RLX_F32 ? LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)nn, out->data, (lapack_int)nn)
                                 : LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)nn, out->data, (lapack_int)nn);
  if (info < 0) return lapack_fail(n, "?potrf", info);
  if (info > 0)
    return rlx_kernel_error(n, "the matrix is not positive definite: its leading minor of order %d is not positive",
                            (int)info);
  for (size_t i = 0; i < nn; i++)
    for (size_t j = i + 1; j < nn; j++) ru_store(out->data, t, i * nn + j, 0.0);
  return RLX_OK;
}

RLX_CPU_KERNEL(TriangularSolve) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(need_f32_f64(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  size_t nn = 0;
  RLX_TRY(need_square(n, in, 0, 0, &nn));
  const rlx_shape *b = &in[1].shape;
  if ((b->rank != 1 && b->rank != 2) || (size_t)b->dims[0] != nn)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (B) has shape %s; expected [n] or [n, r] with n = %zu",
                    ru_fmt(b), nn);
  RLX_TRY(ru_need_out_dims(n, out, b->rank, b->dims));
  size_t r = b->rank == 2 ? (size_t)b->dims[1] : 1;
  RLX_TRY(need_blas_int(n, r, "the right-hand-side count"));
  if (nn == 0 || r == 0) return RLX_OK;
  bool lower = n->attrs.TriangularSolve.lower, trans = n->attrs.TriangularSolve.transpose;
  for (size_t i = 0; i < nn; i++)
    if (rlx_elem_get(in[0].data, t, i * nn + i) == 0.0)
      return rlx_kernel_error(n, "the triangular matrix is singular: diagonal entry %zu is zero", i);
  memcpy(out->data, in[1].data, nn * r * rlx_dtype_size(t));
  CBLAS_UPLO uplo = lower ? CblasLower : CblasUpper;
  CBLAS_TRANSPOSE tr = trans ? CblasTrans : CblasNoTrans;
  if (t == RLX_F32)
    cblas_strsm(CblasRowMajor, CblasLeft, uplo, tr, CblasNonUnit, (int)nn, (int)r, 1.0f, in[0].data, (int)nn, out->data,
                (int)r);
  else
    cblas_dtrsm(CblasRowMajor, CblasLeft, uplo, tr, CblasNonUnit, (int)nn, (int)r, 1.0, in[0].data, (int)nn, out->data,
                (int)r);
  return RLX_OK;
}

/* Det / LogDet through the LU factorisation P A = L U: det = (-1)^swaps * prod U_ii,
 * LogDet = sum log|U_ii| = log|det| (the sign is dropped). */
static rlx_status lu_det(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, bool logdet) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(need_f32_f64(n, in, 0, t));
  size_t nn = 0;
  RLX_TRY(need_square(n, in, 0, 0, &nn));
  if (rlx_tensor_numel(out) != 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "output tensor %s must hold one element", ru_fmt(&out->shape));
  if (nn == 0) { /* empty product */
    ru_store(out->data, t, 0, logdet ? 0.0 : 1.0);
    return RLX_OK;
  }
  if (!all_finite(in[0].data, t, 0, nn * nn)) {
    ru_store(out->data, t, 0, NAN);
    return RLX_OK;
  }
  size_t esz = rlx_dtype_size(t);
  void *lu = NULL;
  lapack_int *ipiv = NULL;
  rlx_status s = rb_alloc(n, nn * nn, esz, &lu);
  if (s == RLX_OK) s = rb_alloc(n, nn, sizeof *ipiv, &ipiv);
  if (s == RLX_OK) {
    memcpy(lu, in[0].data, nn * nn * esz);
    lapack_int info = t == RLX_F32
                          ? LAPACKE_sgetrf(LAPACK_ROW_MAJOR, (lapack_int)nn, (lapack_int)nn, lu, (lapack_int)nn, ipiv)
                          : LAPACKE_dgetrf(LAPACK_ROW_MAJOR, (lapack_int)nn, (lapack_int)nn, lu, (lapack_int)nn, ipiv);
    if (info < 0) {
      s = lapack_fail(n, "?getrf", info);
    } else {
      /* det = parity(P) * prod U_ii; info > 0 means some U_ii is exactly zero (det 0, log -inf). */
      double det = 1.0, logabs = 0.0;
      for (size_t i = 0; i < nn; i++) {
        double u = rlx_elem_get(lu, t, i * nn + i);
        if ((size_t)ipiv[i] != i + 1) det = -det;
        det *= u;
        logabs += log(fabs(u));
      }
      ru_store(out->data, t, 0, logdet ? logabs : det);
    }
  }
  free(lu);
  free(ipiv);
  return s;
}

RLX_CPU_KERNEL(Det) {
  (void)ctx;
  return lu_det(n, in, n_in, out, false);
}

RLX_CPU_KERNEL(LogDet) {
  (void)ctx;
  return lu_det(n, in, n_in, out, true);
}

/* ---- thin SVD and QR ---- */

/* Operand 0 is a matrix [m, n] of F32/F64; returns m, n, k = min(m, n). */
static rlx_status need_matrix(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, size_t *m,
                              size_t *nc, size_t *k) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_f32_f64(n, in, 0, ru_dt(out)));
  const rlx_shape *s = &in[0].shape;
  if (s->rank != 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; expected a matrix [m, n]", ru_fmt(s));
  *m = (size_t)s->dims[0];
  *nc = (size_t)s->dims[1];
  *k = *m < *nc ? *m : *nc;
  RLX_TRY(need_blas_int(n, *m, "m"));
  return need_blas_int(n, *nc, "n");
}

/* Sign pivot of a singular vector / eigenvector: the first entry whose magnitude is within a
 * relative 1e-3 of the largest magnitude. Exact ties (common in symmetric problems) thus resolve to
 * the first such entry, and rounding noise cannot flip the choice between near-equal entries. */
static size_t sign_pivot(const double *v, size_t count, size_t stride) {
  double mx = 0.0;
  for (size_t i = 0; i < count; i++) mx = fmax(mx, fabs(v[i * stride]));
  for (size_t i = 0; i < count; i++)
    if (fabs(v[i * stride]) >= mx * (1.0 - 1e-3)) return i;
  return 0;
}

/* A scratch copy of x in its own dtype (LAPACK overwrites its input). */
static rlx_status load_copy(const rlx_node *n, const rlx_tensor *x, void **out) {
  size_t count = rlx_tensor_numel(x), esz = ru_esz(x);
  RLX_TRY(rb_alloc(n, count, esz, out));
  if (count) memcpy(*out, x->data, count * esz);
  return RLX_OK;
}

/* Widens `count` elements of dtype t to double. */
static void widen(const void *src, rlx_dtype t, double *dst, size_t count) {
  for (size_t i = 0; i < count; i++) dst[i] = rlx_elem_get(src, t, i);
}

RLX_CPU_KERNEL(Svd) {
  (void)ctx;
  size_t m, nc, k;
  RLX_TRY(need_matrix(n, in, n_in, out, &m, &nc, &k));
  rlx_dtype t = ru_dt(out);
  int part = n->attrs.Svd.part;
  int64_t dims[2];
  uint32_t rank = 2;
  switch (part) {
  case RLX_SVD_PART_U: dims[0] = (int64_t)m, dims[1] = (int64_t)k; break;
  case RLX_SVD_PART_S: dims[0] = (int64_t)k, rank = 1; break;
  case RLX_SVD_PART_VT: dims[0] = (int64_t)k, dims[1] = (int64_t)nc; break;
  default: return ru_error(RLX_ERR_INVALID_ARG, n, "attribute part: %d is not a SvdPart", part);
  }
  RLX_TRY(ru_need_out_dims(n, out, rank, dims));
  if (k == 0) return RLX_OK;
  if (!all_finite(in[0].data, t, 0, m * nc)) {
    fill_nan(out->data, t, 0, rlx_tensor_numel(out));
    return RLX_OK;
  }
  size_t esz = rlx_dtype_size(t);
  void *a = NULL, *sv = NULL, *u = NULL, *vt = NULL;
  double *du = NULL, *dvt = NULL, *ds = NULL;
  rlx_status s = load_copy(n, &in[0], &a);
  if (s == RLX_OK) s = rb_alloc(n, k, esz, &sv);
  if (s == RLX_OK) s = rb_alloc(n, m * k, esz, &u);
  if (s == RLX_OK) s = rb_alloc(n, k * nc, esz, &vt);
  if (s == RLX_OK) s = rb_alloc(n, m * k, sizeof(double), &du);
  if (s == RLX_OK) s = rb_alloc(n, k * nc, sizeof(double), &dvt);
  if (s == RLX_OK) s = rb_alloc(n, k, sizeof(double), &ds);
  if (s == RLX_OK) {
    lapack_int info = t == RLX_F32 ? LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)m, (lapack_int)nc, a,
                                                    (lapack_int)nc, sv, u, (lapack_int)k, vt, (lapack_int)nc)
                                   : LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)m, (lapack_int)nc, a,
                                                    (lapack_int)nc, sv, u, (lapack_int)k, vt, (lapack_int)nc);
    if (info < 0)
      s = lapack_fail(n, "?gesdd", info);
    else if (info > 0)
      s = rlx_kernel_error(n, "the SVD did not converge (?gesdd info %d)", (int)info);
  }
  if (s == RLX_OK) {
    widen(u, t, du, m * k);
    widen(vt, t, dvt, k * nc);
    widen(sv, t, ds, k);
    for (size_t j = 0; j < k; j++) {
      size_t i = sign_pivot(du + j, m, k);
      if (du[i * k + j] < 0) {
        for (size_t r = 0; r < m; r++) du[r * k + j] = -du[r * k + j];
        for (size_t c = 0; c < nc; c++) dvt[j * nc + c] = -dvt[j * nc + c];
      }
    }
    rb_store_all(out, part == RLX_SVD_PART_U ? du : part == RLX_SVD_PART_S ? ds : dvt);
  }
  free(a);
  free(sv);
  free(u);
  free(vt);
  free(du);
  free(dvt);
  free(ds);
  return s;
}

RLX_CPU_KERNEL(Qr) {
  (void)ctx;
  size_t m, nc, k;
  RLX_TRY(need_matrix(n, in, n_in, out, &m, &nc, &k));
  rlx_dtype t = ru_dt(out);
  int part = n->attrs.Qr.part;
  int64_t dims[2];
  switch (part) {
  case RLX_QR_PART_Q: dims[0] = (int64_t)m, dims[1] = (int64_t)k; break;
  case RLX_QR_PART_R: dims[0] = (int64_t)k, dims[1] = (int64_t)nc; break;
  default: return ru_error(RLX_ERR_INVALID_ARG, n, "attribute part: %d is not a QrPart", part);
  }
  RLX_TRY(ru_need_out_dims(n, out, 2, dims));
  if (k == 0) return RLX_OK;
  if (!all_finite(in[0].data, t, 0, m * nc)) {
    fill_nan(out->data, t, 0, rlx_tensor_numel(out));
    return RLX_OK;
  }
  size_t esz = rlx_dtype_size(t);
  void *a = NULL, *tau = NULL;
  double *q = NULL, *r = NULL;
  rlx_status s = load_copy(n, &in[0], &a);
  if (s == RLX_OK) s = rb_alloc(n, k, esz, &tau);
  if (s == RLX_OK) s = rb_alloc(n, m * k, sizeof *q, &q);
  if (s == RLX_OK) s = rb_calloc(n, k * nc, sizeof *r, &r);
  lapack_int info = 0;
  if (s == RLX_OK) {
    info = t == RLX_F32 ? LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)nc, a, (lapack_int)nc, tau)
                        : LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)nc, a, (lapack_int)nc, tau);
    if (info != 0) s = lapack_fail(n, "?geqrf", info);
  }
  if (s == RLX_OK) {
    /* R = upper triangle of the first k rows; then Q from the reflectors (first k columns). */
    for (size_t i = 0; i < k; i++)
      for (size_t j = i; j < nc; j++) r[i * nc + j] = rlx_elem_get(a, t, i * nc + j);
    info = t == RLX_F32
               ? LAPACKE_sorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)k, (lapack_int)k, a, (lapack_int)nc, tau)
               : LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)k, (lapack_int)k, a, (lapack_int)nc, tau);
    if (info != 0) s = lapack_fail(n, "?orgqr", info);
  }
  if (s == RLX_OK) {
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < k; j++) q[i * k + j] = rlx_elem_get(a, t, i * nc + j);
    for (size_t j = 0; j < k; j++)
      if (r[j * nc + j] < 0) {
        for (size_t c = 0; c < nc; c++) r[j * nc + c] = -r[j * nc + c];
        for (size_t i = 0; i < m; i++) q[i * k + j] = -q[i * k + j];
      }
    rb_store_all(out, part == RLX_QR_PART_Q ? q : r);
  }
  free(a);
  free(tau);
  free(q);
  free(r);
  return s;
}

/* ---- symmetric eigendecomposition ---- */

/* Eigh of the nn x nn matrix at element offset `off` of x, packed as [lambda (nn) | U (nn*nn)] into
 * out at element offset `ooff`. */
static rlx_status eigh_one(const rlx_node *n, const rlx_tensor *x, size_t off, rlx_tensor *out, size_t ooff, size_t nn,
                           void *a, void *w, double *pk, long batch) {
  rlx_dtype t = ru_dt(out);
  size_t esz = rlx_dtype_size(t), total = nn + nn * nn;
  if (nn == 0) return RLX_OK;
  if (!all_finite(x->data, t, off, nn * nn)) {
    fill_nan(out->data, t, ooff, total);
    return RLX_OK;
  }
  memcpy(a, (const char *)x->data + off * esz, nn * nn * esz);
  /* Only the lower triangle is read (A is taken to be symmetric). */
  lapack_int info = t == RLX_F32 ? LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)nn, a, (lapack_int)nn, w)
                                 : LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)nn, a, (lapack_int)nn, w);
  if (info < 0) return lapack_fail(n, "?syevd", info);
  if (info > 0)
    return rlx_kernel_error(n, "the eigensolver did not converge on matrix %ld (?syevd info %d)", batch < 0 ? 0 : batch,
                            (int)info);
  widen(w, t, pk, nn);
  widen(a, t, pk + nn, nn * nn);
  double *U = pk + nn;
  for (size_t j = 0; j < nn; j++) {
    size_t i = sign_pivot(U + j, nn, nn);
    if (U[i * nn + j] < 0)
      for (size_t r = 0; r < nn; r++) U[r * nn + j] = -U[r * nn + j];
  }
  for (size_t i = 0; i < total; i++) ru_store(out->data, t, ooff + i, pk[i]);
  return RLX_OK;
}

static rlx_status eigh(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, uint32_t lead) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(need_f32_f64(n, in, 0, t));
  size_t nn = 0;
  RLX_TRY(need_square(n, in, 0, lead, &nn));
  size_t batches = lead ? (size_t)in[0].shape.dims[0] : 1, total = nn + nn * nn;
  int64_t dims[2] = {(int64_t)batches, (int64_t)total};
  RLX_TRY(ru_need_out_dims(n, out, lead + 1, lead ? dims : dims + 1));
  size_t esz = rlx_dtype_size(t);
  void *a = NULL, *w = NULL;
  double *pk = NULL;
  rlx_status s = rb_alloc(n, nn * nn, esz, &a);
  if (s == RLX_OK) s = rb_alloc(n, nn, esz, &w);
  if (s == RLX_OK) s = rb_alloc(n, total, sizeof *pk, &pk);
  for (size_t b = 0; b < batches && s == RLX_OK; b++) {
    s = eigh_one(n, &in[0], b * nn * nn, out, b * total, nn, a, w, pk, (long)b);
  }
  free(a);
  free(w);
  free(pk);
  return s;
}

RLX_CPU_KERNEL(Eigh) {
  (void)ctx;
  return eigh(n, in, n_in, out, 0);
}

RLX_CPU_KERNEL(EighBatch) {
  (void)ctx;
  return eigh(n, in, n_in, out, 1);
}
