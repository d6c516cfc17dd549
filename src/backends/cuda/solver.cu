/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Dense linear algebra on the device (cu_ext.h): Cholesky (cuSOLVER potrf), Det / LogDet (getrf
 * and the product / log-sum of U's diagonal with the pivots' parity), DenseSolve /
 * BatchedDenseSolve (getrf + getrs per matrix), TriangularSolve (cuBLAS trsm), f32 and f64, with
 * the CPU reference's rules: a non-finite value anywhere in a factorisation input gives an
 * all-NaN result; a singular matrix (a zero pivot of the solves, a zero diagonal entry of the
 * triangular solve, a leading minor that is not positive for Cholesky) raises the kernel error
 * flag, which the next sync reports. Row-major data is the column-major transpose, so: Cholesky
 * factors the column-major upper triangle (the row-major lower one), the LU of A^T has A's
 * determinant, A X = B is getrs with op T on the LU of A^T against B^T, and the triangular solve
 * is X^T op(A)^T = B^T from the right. The LU copy, pivots, info words, flag and cuSOLVER's
 * workspace live in the context's scratch (sized at the first run). One cuSOLVER handle per
 * device for the process. */
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <mutex>

#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

std::mutex g_solver_mu;
cusolverDnHandle_t g_solver[64];

rlx_status solver_handle(rlx_cu_ctx *c, cusolverDnHandle_t *out) {
  std::lock_guard<std::mutex> lock(g_solver_mu);
  if (c->device < 0 || c->device >= 64) return rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: device index %d", c->device);
  if (!g_solver[c->device]) {
    cusolverStatus_t s = cusolverDnCreate(&g_solver[c->device]);
    if (s != CUSOLVER_STATUS_SUCCESS) {
      g_solver[c->device] = NULL;
      return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cusolverDnCreate failed (status %d)", (int)s);
    }
  }
  *out = g_solver[c->device];
  if (cusolverDnSetStream(*out, c->stream) != CUSOLVER_STATUS_SUCCESS)
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cusolverDnSetStream failed");
  return RLX_OK;
}

rlx_status sv(cusolverStatus_t s, const char *what) {
  if (s == CUSOLVER_STATUS_SUCCESS) return RLX_OK;
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: %s failed (cuSOLVER status %d)", what, (int)s);
}

/* flag[0] = 1 when any of the n values at p is not finite */
__global__ void nonfinite_kernel(const void *p, int t, int64_t n, int *flag) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double v = ld_f(p, t, i);
    if (!isfinite(v)) atomicExch(flag, 1);
  }
}

__global__ void zero_int_kernel(int *p, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] = 0;
}

/* Cholesky's result: NaN everywhere when the input had a non-finite value, else the error flag
 * on a failed factorisation and zeros above the diagonal. */
__global__ void chol_finish_kernel(void *L, int t, int64_t n, const int *flag, const int *info, int *kerr) {
  bool bad = flag[0] != 0;
  if (!bad && info[0] > 0 && blockIdx.x == 0 && threadIdx.x == 0) cu_raise(kerr, RLX_CU_KERR_SINGULAR);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / n, col = i % n;
    if (bad)
      st_f(L, t, i, nan(""));
    else if (col > r)
      st_f(L, t, i, 0.0);
  }
}

/* Det / LogDet from the LU (its diagonal) and the 1-based pivots. */
__global__ void det_finish_kernel(const void *lu, int t, int64_t n, const int *piv, const int *flag, int logdet,
                                  void *out) {
  if (blockIdx.x || threadIdx.x) return;
  if (flag[0]) {
    st_f(out, t, 0, nan(""));
    return;
  }
  double det = 1.0, logabs = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double u = ld_f(lu, t, i * n + i);
    if (piv[i] != i + 1) det = -det;
    det *= u;
    logabs += log(fabs(u));
  }
  st_f(out, t, 0, logdet ? logabs : det);
}

__global__ void empty_det_kernel(void *out, int t, double v) { st_f(out, t, 0, v); }

/* dst[j, i] = src[i, j] for an m x r matrix (esz-byte elements) */
__global__ void transpose_kernel(const void *src, void *dst, int64_t m, int64_t r, int esz) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < m * r; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = p / r, j = p % r;
    const uint8_t *s = (const uint8_t *)src + p * esz;
    uint8_t *d = (uint8_t *)dst + (j * m + i) * esz;
    for (int b = 0; b < esz; b++) d[b] = s[b];
  }
}

/* after the solves: NaN where a system's input had a non-finite value; the error flag where a
 * system's LU had a zero pivot */
__global__ void solve_finish_kernel(void *x, int t, int64_t per, int64_t batches, const int *flags, const int *info,
                                    int *kerr) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < per * batches;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = i / per;
    if (flags[b])
      st_f(x, t, i, nan(""));
    else if (info[b] > 0 && i % per == 0)
      cu_raise(kerr, RLX_CU_KERR_SINGULAR);
  }
}

__global__ void diag_check_kernel(const void *A, int t, int64_t n, int *kerr) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    if (ld_f(A, t, i * n + i) == 0.0) cu_raise(kerr, RLX_CU_KERR_SINGULAR);
}

size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

rlx_status cholesky(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  int64_t n = e->len;
  if (n == 0) return RLX_OK;
  bool f64 = e->dtype == RLX_F64;
  size_t esz = f64 ? 8 : 4;
  cusolverDnHandle_t h;
  RLX_TRY(solver_handle(c, &h));
  int lwork = 0;
  if (f64)
    RLX_TRY(sv(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, (int)n, (double *)e->out, (int)n, &lwork),
               "potrf_bufferSize"));
  else
    RLX_TRY(sv(cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, (int)n, (float *)e->out, (int)n, &lwork),
               "potrf_bufferSize"));
  void *scr;
  RLX_TRY(cu_scratch(c, 256 + align_up((size_t)lwork * esz), &scr));
  int *flag = (int *)scr, *info = flag + 1;
  void *work = (uint8_t *)scr + 256;
  zero_int_kernel<<<1, 32, 0, c->stream>>>(flag, 2);
  nonfinite_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(e->in[0], e->dtype, n * n, flag);
  RLX_TRY(cu_launch_status("cholesky check kernel"));
  if (cudaMemcpyAsync(e->out, e->in[0], (size_t)(n * n) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
    return cu_launch_status("cholesky copy");
  if (f64)
    RLX_TRY(sv(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_UPPER, (int)n, (double *)e->out, (int)n, (double *)work, lwork,
                                info),
               "potrf"));
  else
    RLX_TRY(sv(cusolverDnSpotrf(h, CUBLAS_FILL_MODE_UPPER, (int)n, (float *)e->out, (int)n, (float *)work, lwork, info),
               "potrf"));
  chol_finish_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(e->out, e->dtype, n, flag, info, c->kerr);
  return cu_launch_status("cholesky finish kernel");
}

rlx_status getrf(cusolverDnHandle_t h, bool f64, int n, void *A, void *work, int *piv, int *info) {
  if (f64) return sv(cusolverDnDgetrf(h, n, n, (double *)A, n, (double *)work, piv, info), "getrf");
  return sv(cusolverDnSgetrf(h, n, n, (float *)A, n, (float *)work, piv, info), "getrf");
}

rlx_status getrf_lwork(cusolverDnHandle_t h, bool f64, int n, void *A, int *lwork) {
  if (f64) return sv(cusolverDnDgetrf_bufferSize(h, n, n, (double *)A, n, lwork), "getrf_bufferSize");
  return sv(cusolverDnSgetrf_bufferSize(h, n, n, (float *)A, n, lwork), "getrf_bufferSize");
}

rlx_status det(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  int64_t n = e->len;
  bool f64 = e->dtype == RLX_F64;
  size_t esz = f64 ? 8 : 4;
  if (n == 0) { /* the empty product */
    empty_det_kernel<<<1, 1, 0, c->stream>>>(e->out, e->dtype, e->mode == RLX_CU_EXT_LOGDET ? 0.0 : 1.0);
    return cu_launch_status("det kernel");
  }
  cusolverDnHandle_t h;
  RLX_TRY(solver_handle(c, &h));
  int lwork = 0;
  void *scr;
  size_t lu_b = align_up((size_t)(n * n) * esz), piv_b = align_up((size_t)n * sizeof(int));
  RLX_TRY(getrf_lwork(h, f64, (int)n, e->out, &lwork));
  RLX_TRY(cu_scratch(c, 256 + lu_b + piv_b + align_up((size_t)lwork * esz), &scr));
  int *flag = (int *)scr, *info = flag + 1;
  uint8_t *lu = (uint8_t *)scr + 256;
  int *piv = (int *)(lu + lu_b);
  void *work = lu + lu_b + piv_b;
  zero_int_kernel<<<1, 32, 0, c->stream>>>(flag, 2);
  nonfinite_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(e->in[0], e->dtype, n * n, flag);
  RLX_TRY(cu_launch_status("det check kernel"));
  if (cudaMemcpyAsync(lu, e->in[0], (size_t)(n * n) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
    return cu_launch_status("det copy");
  RLX_TRY(getrf(h, f64, (int)n, lu, work, piv, info));
  det_finish_kernel<<<1, 32, 0, c->stream>>>(lu, e->dtype, n, piv, flag, e->mode == RLX_CU_EXT_LOGDET, e->out);
  return cu_launch_status("det finish kernel");
}

/* A [batches, n, n], B [batches, n, r] -> X, row-major */
rlx_status dense_solve(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  int64_t n = e->len, r = e->S, batches = e->N;
  if (n == 0 || r == 0 || batches == 0) return RLX_OK;
  bool f64 = e->dtype == RLX_F64;
  size_t esz = f64 ? 8 : 4;
  cusolverDnHandle_t h;
  RLX_TRY(solver_handle(c, &h));
  int lwork = 0;
  void *scr;
  size_t flags_b = align_up((size_t)(2 * batches + 1) * sizeof(int)), lu_b = align_up((size_t)(n * n) * esz),
         bt_b = align_up((size_t)(n * r) * esz), piv_b = align_up((size_t)n * sizeof(int));
  RLX_TRY(getrf_lwork(h, f64, (int)n, e->out, &lwork));
  RLX_TRY(cu_scratch(c, flags_b + lu_b + bt_b + piv_b + align_up((size_t)lwork * esz), &scr));
  int *flags = (int *)scr, *info = flags + batches;
  uint8_t *lu = (uint8_t *)scr + flags_b, *bt = lu + lu_b;
  int *piv = (int *)(bt + bt_b);
  void *work = (uint8_t *)piv + piv_b;
  zero_int_kernel<<<1, 256, 0, c->stream>>>(flags, (int)(2 * batches + 1));
  RLX_TRY(cu_launch_status("solve init kernel"));
  for (int64_t b = 0; b < batches; b++) {
    const uint8_t *A = (const uint8_t *)e->in[0] + (size_t)(b * n * n) * esz;
    const uint8_t *B = (const uint8_t *)e->in[1] + (size_t)(b * n * r) * esz;
    uint8_t *X = (uint8_t *)e->out + (size_t)(b * n * r) * esz;
    nonfinite_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(A, e->dtype, n * n, flags + b);
    nonfinite_kernel<<<cu_blocks(n * r, 256), 256, 0, c->stream>>>(B, e->dtype, n * r, flags + b);
    RLX_TRY(cu_launch_status("solve check kernel"));
    if (cudaMemcpyAsync(lu, A, (size_t)(n * n) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
      return cu_launch_status("solve copy");
    transpose_kernel<<<cu_blocks(n * r, 256), 256, 0, c->stream>>>(B, bt, n, r, (int)esz);
    RLX_TRY(cu_launch_status("solve transpose kernel"));
    RLX_TRY(getrf(h, f64, (int)n, lu, work, piv, info + b));
    /* getrs reports only argument errors, into its own word; a zero pivot is in getrf's info */
    int *ginfo = flags + 2 * batches;
    if (f64)
      RLX_TRY(sv(cusolverDnDgetrs(h, CUBLAS_OP_T, (int)n, (int)r, (const double *)lu, (int)n, piv, (double *)bt,
                                  (int)n, ginfo),
                 "getrs"));
    else
      RLX_TRY(sv(cusolverDnSgetrs(h, CUBLAS_OP_T, (int)n, (int)r, (const float *)lu, (int)n, piv, (float *)bt, (int)n,
                                  ginfo),
                 "getrs"));
    transpose_kernel<<<cu_blocks(n * r, 256), 256, 0, c->stream>>>(bt, X, r, n, (int)esz);
    RLX_TRY(cu_launch_status("solve transpose kernel"));
  }
  solve_finish_kernel<<<cu_blocks(n * r * batches, 256), 256, 0, c->stream>>>(e->out, e->dtype, n * r, batches, flags,
                                                                               info, c->kerr);
  return cu_launch_status("solve finish kernel");
}

/* op(A) X = B with A [n, n] lower or upper, B [n, r], row-major: X^T op(A)^T = B^T from the right. */
rlx_status triangular(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  int64_t n = e->len, r = e->S;
  if (n == 0 || r == 0) return RLX_OK;
  bool f64 = e->dtype == RLX_F64;
  size_t esz = f64 ? 8 : 4;
  diag_check_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(e->in[0], e->dtype, n, c->kerr);
  RLX_TRY(cu_launch_status("triangular check kernel"));
  if (cudaMemcpyAsync(e->out, e->in[1], (size_t)(n * r) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
    return cu_launch_status("triangular copy");
  cublasHandle_t h = (cublasHandle_t)c->blas;
  /* row-major A is column-major A^T: lower becomes upper; op(A)^T = A^T (no transpose) or A (transpose) */
  cublasFillMode_t fill = e->rms ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  cublasOperation_t op = e->want_xh ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t s;
  if (f64) {
    const double one = 1.0;
    s = cublasDtrsm(h, CUBLAS_SIDE_RIGHT, fill, op, CUBLAS_DIAG_NON_UNIT, (int)r, (int)n, &one,
                    (const double *)e->in[0], (int)n, (double *)e->out, (int)r);
  } else {
    const float one = 1.0f;
    s = cublasStrsm(h, CUBLAS_SIDE_RIGHT, fill, op, CUBLAS_DIAG_NON_UNIT, (int)r, (int)n, &one, (const float *)e->in[0],
                    (int)n, (float *)e->out, (int)r);
  }
  if (s != CUBLAS_STATUS_SUCCESS) return rlx_errorf(RLX_ERR_INTERNAL, "cuda: trsm failed: %s", cublasGetStatusString(s));
  return RLX_OK;
}

} // namespace

extern "C" rlx_status rlx_cu_solver_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  switch (e->mode) {
  case RLX_CU_EXT_CHOLESKY: return cholesky(c, e);
  case RLX_CU_EXT_DET:
  case RLX_CU_EXT_LOGDET: return det(c, e);
  case RLX_CU_EXT_SOLVE: return dense_solve(c, e);
  case RLX_CU_EXT_TRSM: return triangular(c, e);
  default: return rlx_errorf(RLX_ERR_INTERNAL, "cuda: solver mode %d", e->mode);
  }
}
