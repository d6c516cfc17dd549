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
#include "backends/cuda/libs.cuh"

namespace {

std::mutex g_solver_mu;
cusolverDnHandle_t g_solver[64];

rlx_status solver_handle(rlx_cu_ctx *c, cusolverDnHandle_t *out) {
  std::lock_guard<std::mutex> lock(g_solver_mu);
  if (c->device < 0 || c->device >= 64) return rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: device index %d", c->device);
  if (!g_solver[c->device]) {
    cusolverStatus_t s = CUL(cusolverDnCreate)(&g_solver[c->device]);
    if (s != CUSOLVER_STATUS_SUCCESS) {
      g_solver[c->device] = NULL;
      return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cusolverDnCreate failed (status %d)", (int)s);
    }
  }
  *out = g_solver[c->device];
  if (CUL(cusolverDnSetStream)(*out, c->stream) != CUSOLVER_STATUS_SUCCESS)
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
  cusolverDnHandle_t h = NULL;
  RLX_TRY(solver_handle(c, &h));
  int lwork = 0;
  if (f64)
    RLX_TRY(sv(CUL(cusolverDnDpotrf_bufferSize)(h, CUBLAS_FILL_MODE_UPPER, (int)n, (double *)e->out, (int)n, &lwork),
               "potrf_bufferSize"));
  else
    RLX_TRY(sv(CUL(cusolverDnSpotrf_bufferSize)(h, CUBLAS_FILL_MODE_UPPER, (int)n, (float *)e->out, (int)n, &lwork),
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
    RLX_TRY(sv(CUL(cusolverDnDpotrf)(h, CUBLAS_FILL_MODE_UPPER, (int)n, (double *)e->out, (int)n, (double *)work, lwork,
                                info),
               "potrf"));
  else
    RLX_TRY(sv(CUL(cusolverDnSpotrf)(h, CUBLAS_FILL_MODE_UPPER, (int)n, (float *)e->out, (int)n, (float *)work, lwork, info),
               "potrf"));
  chol_finish_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(e->out, e->dtype, n, flag, info, c->kerr);
  return cu_launch_status("cholesky finish kernel");
}

rlx_status getrf(cusolverDnHandle_t h, bool f64, int n, void *A, void *work, int *piv, int *info) {
  if (f64) return sv(CUL(cusolverDnDgetrf)(h, n, n, (double *)A, n, (double *)work, piv, info), "getrf");
  return sv(CUL(cusolverDnSgetrf)(h, n, n, (float *)A, n, (float *)work, piv, info), "getrf");
}

rlx_status getrf_lwork(cusolverDnHandle_t h, bool f64, int n, void *A, int *lwork) {
  if (f64) return sv(CUL(cusolverDnDgetrf_bufferSize)(h, n, n, (double *)A, n, lwork), "getrf_bufferSize");
  return sv(CUL(cusolverDnSgetrf_bufferSize)(h, n, n, (float *)A, n, lwork), "getrf_bufferSize");
}

rlx_status det(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  int64_t n = e->len;
  bool f64 = e->dtype == RLX_F64;
  size_t esz = f64 ? 8 : 4;
  if (n == 0) { /* the empty product */
    empty_det_kernel<<<1, 1, 0, c->stream>>>(e->out, e->dtype, e->mode == RLX_CU_EXT_LOGDET ? 0.0 : 1.0);
    return cu_launch_status("det kernel");
  }
  cusolverDnHandle_t h = NULL;
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
  cusolverDnHandle_t h = NULL;
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
      RLX_TRY(sv(CUL(cusolverDnDgetrs)(h, CUBLAS_OP_T, (int)n, (int)r, (const double *)lu, (int)n, piv, (double *)bt,
                                  (int)n, ginfo),
                 "getrs"));
    else
      RLX_TRY(sv(CUL(cusolverDnSgetrs)(h, CUBLAS_OP_T, (int)n, (int)r, (const float *)lu, (int)n, piv, (float *)bt, (int)n,
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
    s = CUL(cublasDtrsm)(h, CUBLAS_SIDE_RIGHT, fill, op, CUBLAS_DIAG_NON_UNIT, (int)r, (int)n, &one,
                    (const double *)e->in[0], (int)n, (double *)e->out, (int)r);
  } else {
    const float one = 1.0f;
    s = CUL(cublasStrsm)(h, CUBLAS_SIDE_RIGHT, fill, op, CUBLAS_DIAG_NON_UNIT, (int)r, (int)n, &one, (const float *)e->in[0],
                    (int)n, (float *)e->out, (int)r);
  }
  if (s != CUBLAS_STATUS_SUCCESS) return rlx_errorf(RLX_ERR_INTERNAL, "cuda: trsm failed: %s", CUL(cublasGetStatusString)(s));
  return RLX_OK;
}

/* ---- Qr, Svd, Eigh / EighBatch: geqrf + orgqr, gesvd, syevd, with the CPU reference's sign
 * conventions (src/backends/cpu/ref/linalg.c): R's diagonal made non-negative (Q's columns follow),
 * each singular vector / eigenvector turned so that its sign pivot (the first entry within a
 * relative 1e-3 of the largest magnitude) is positive (an SVD flips U's column and VT's row
 * together). Workspace sizes are queried at lowering (la_lwork); the matrices, vectors, pivots and
 * workspace live in the context's scratch. These routines are not captured into CUDA graphs
 * (syevd fails under stream capture; lower_ext.c marks their steps). ---- */

/* typed cuSOLVER entry points */
cusolverStatus_t geqrf_bs(cusolverDnHandle_t h, int m, int n, float *A, int *lw) {
  return CUL(cusolverDnSgeqrf_bufferSize)(h, m, n, A, m, lw);
}
cusolverStatus_t geqrf_bs(cusolverDnHandle_t h, int m, int n, double *A, int *lw) {
  return CUL(cusolverDnDgeqrf_bufferSize)(h, m, n, A, m, lw);
}
cusolverStatus_t orgqr_bs(cusolverDnHandle_t h, int m, int k, const float *A, const float *tau, int *lw) {
  return CUL(cusolverDnSorgqr_bufferSize)(h, m, k, k, A, m, tau, lw);
}
cusolverStatus_t orgqr_bs(cusolverDnHandle_t h, int m, int k, const double *A, const double *tau, int *lw) {
  return CUL(cusolverDnDorgqr_bufferSize)(h, m, k, k, A, m, tau, lw);
}
cusolverStatus_t geqrf_run(cusolverDnHandle_t h, int m, int n, float *A, float *tau, float *w, int lw, int *info) {
  return CUL(cusolverDnSgeqrf)(h, m, n, A, m, tau, w, lw, info);
}
cusolverStatus_t geqrf_run(cusolverDnHandle_t h, int m, int n, double *A, double *tau, double *w, int lw, int *info) {
  return CUL(cusolverDnDgeqrf)(h, m, n, A, m, tau, w, lw, info);
}
cusolverStatus_t orgqr_run(cusolverDnHandle_t h, int m, int k, float *A, const float *tau, float *w, int lw,
                           int *info) {
  return CUL(cusolverDnSorgqr)(h, m, k, k, A, m, tau, w, lw, info);
}
cusolverStatus_t orgqr_run(cusolverDnHandle_t h, int m, int k, double *A, const double *tau, double *w, int lw,
                           int *info) {
  return CUL(cusolverDnDorgqr)(h, m, k, k, A, m, tau, w, lw, info);
}
cusolverStatus_t gesvd_bs(cusolverDnHandle_t h, int m, int n, float *, int *lw) {
  return CUL(cusolverDnSgesvd_bufferSize)(h, m, n, lw);
}
cusolverStatus_t gesvd_bs(cusolverDnHandle_t h, int m, int n, double *, int *lw) {
  return CUL(cusolverDnDgesvd_bufferSize)(h, m, n, lw);
}
cusolverStatus_t gesvd_run(cusolverDnHandle_t h, int m, int n, float *A, float *S, float *U, float *VT, float *w,
                           int lw, float *rw, int *info) {
  int k = m < n ? m : n;
  return CUL(cusolverDnSgesvd)(h, 'S', 'S', m, n, A, m, S, U, m, VT, k, w, lw, rw, info);
}
cusolverStatus_t gesvd_run(cusolverDnHandle_t h, int m, int n, double *A, double *S, double *U, double *VT, double *w,
                           int lw, double *rw, int *info) {
  int k = m < n ? m : n;
  return CUL(cusolverDnDgesvd)(h, 'S', 'S', m, n, A, m, S, U, m, VT, k, w, lw, rw, info);
}
cusolverStatus_t syevd_bs(cusolverDnHandle_t h, int n, const float *A, const float *W, int *lw) {
  return CUL(cusolverDnSsyevd_bufferSize)(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, A, n, W, lw);
}
cusolverStatus_t syevd_bs(cusolverDnHandle_t h, int n, const double *A, const double *W, int *lw) {
  return CUL(cusolverDnDsyevd_bufferSize)(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, A, n, W, lw);
}
cusolverStatus_t syevd_run(cusolverDnHandle_t h, int n, float *A, float *W, float *w, int lw, int *info) {
  return CUL(cusolverDnSsyevd)(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, A, n, W, w, lw, info);
}
cusolverStatus_t syevd_run(cusolverDnHandle_t h, int n, double *A, double *W, double *w, int lw, int *info) {
  return CUL(cusolverDnDsyevd)(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, A, n, W, w, lw, info);
}

/* The sign of column j of a matrix read at v[i * si] (count entries): +1 or -1 so that the entry at
 * the CPU's sign pivot becomes non-negative. Block-wide (every thread gets it). */
template <typename T> __device__ double pivot_sign(const T *v, int64_t count, int64_t si) {
  __shared__ double smax[256];
  __shared__ int64_t sidx[256];
  double mx = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) mx = fmax(mx, fabs((double)v[i * si]));
  smax[threadIdx.x] = mx;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) smax[threadIdx.x] = fmax(smax[threadIdx.x], smax[threadIdx.x + w]);
    __syncthreads();
  }
  mx = smax[0];
  int64_t first = count;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    if (fabs((double)v[i * si]) >= mx * (1.0 - 1e-3)) {
      first = i;
      break;
    }
  __syncthreads();
  sidx[threadIdx.x] = first;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w && sidx[threadIdx.x + w] < sidx[threadIdx.x]) sidx[threadIdx.x] = sidx[threadIdx.x + w];
    __syncthreads();
  }
  int64_t p = sidx[0] < count ? sidx[0] : 0;
  double sg = count && (double)v[p * si] < 0 ? -1.0 : 1.0;
  __syncthreads();
  return sg;
}

/* dst (column-major m x n) from src (row-major m x n) */
template <typename T> __global__ void to_colmajor_kernel(const T *src, T *dst, int64_t m, int64_t n) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < m * n; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = p / n, j = p % n;
    dst[i + j * m] = src[p];
  }
}

/* QR: sg[j] = the sign of R[j, j] (column-major A after geqrf, lda m) */
template <typename T> __global__ void qr_signs_kernel(const T *A, int64_t m, int64_t k, T *sg) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < k; j += (int64_t)gridDim.x * blockDim.x)
    sg[j] = A[j + j * m] < 0 ? (T)-1 : (T)1;
}

/* R [k, n] row-major from the geqrf result, or Q [m, k] row-major from the orgqr result (part Q) */
template <typename T>
__global__ void qr_finish_kernel(const T *A, int64_t m, int64_t n, int64_t k, const T *sg, int part_r,
                                 const int *flag, T *out) {
  int64_t total = part_r ? k * n : m * k;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < total; p += (int64_t)gridDim.x * blockDim.x) {
    if (flag[0]) {
      out[p] = (T)nan("");
      continue;
    }
    if (part_r) {
      int64_t j = p / n, c = p % n;
      out[p] = c >= j ? A[j + c * m] * sg[j] : (T)0;
    } else {
      int64_t i = p / k, j = p % k;
      out[p] = A[i + j * m] * sg[j];
    }
  }
}

/* SVD: U_A(i, j) = U[i us_i + j us_j] (m x k), VT_A(j, c) = V[j vs_j + c vs_c] (k x n); one block
 * per singular triple j writes its part */
struct svd_geom {
  int64_t m, n, k, us_i, us_j, vs_j, vs_c;
  int part; /* 0 U, 1 S, 2 VT */
};
template <typename T>
__global__ void svd_finish_kernel(const T *U, const T *S, const T *V, svd_geom g, const int *flag, const int *info,
                                  int *kerr, T *out) {
  for (int64_t j = blockIdx.x; j < g.k; j += gridDim.x) {
    bool bad = flag[0] != 0;
    if (!bad && info[0] > 0 && j == 0 && threadIdx.x == 0) cu_raise(kerr, RLX_CU_KERR_NOCONV);
    double sg = bad ? 1.0 : pivot_sign(U + j * g.us_j, g.m, g.us_i);
    if (g.part == 1) {
      if (threadIdx.x == 0) out[j] = bad ? (T)nan("") : S[j];
    } else if (g.part == 0) {
      for (int64_t i = threadIdx.x; i < g.m; i += blockDim.x)
        out[i * g.k + j] = bad ? (T)nan("") : (T)(sg * (double)U[i * g.us_i + j * g.us_j]);
    } else {
      for (int64_t c = threadIdx.x; c < g.n; c += blockDim.x)
        out[j * g.n + c] = bad ? (T)nan("") : (T)(sg * (double)V[j * g.vs_j + c * g.vs_c]);
    }
  }
}

/* EIGH: matrix b's eigenvalues W and column-major eigenvectors V (n x n) into out's [lambda | U] */
template <typename T>
__global__ void eigh_finish_kernel(const T *V, const T *W, int64_t n, const int *flag, const int *info, int *kerr,
                                   T *out) {
  for (int64_t j = blockIdx.x; j < n; j += gridDim.x) {
    bool bad = flag[0] != 0;
    if (!bad && info[0] > 0 && j == 0 && threadIdx.x == 0) cu_raise(kerr, RLX_CU_KERR_NOCONV);
    double sg = bad ? 1.0 : pivot_sign(V + j * n, n, 1);
    if (threadIdx.x == 0) out[j] = bad ? (T)nan("") : W[j];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      out[n + i * n + j] = bad ? (T)nan("") : (T)(sg * (double)V[i + j * n]);
  }
}

template <typename T> rlx_status la_lwork_t(cusolverDnHandle_t h, rlx_cu_ext *e) {
  int64_t m = e->rows, n = e->len, k = m < n ? m : n;
  int lw = 0, lw2 = 0;
  T *A = (T *)e->out;
  switch (e->mode) {
  case RLX_CU_EXT_QR:
    RLX_TRY(sv(geqrf_bs(h, (int)m, (int)n, A, &lw), "geqrf_bufferSize"));
    RLX_TRY(sv(orgqr_bs(h, (int)m, (int)k, A, A, &lw2), "orgqr_bufferSize"));
    break;
  case RLX_CU_EXT_SVD: /* gesvd on the column-major matrix with at least as many rows as columns */
    RLX_TRY(sv(gesvd_bs(h, (int)(m > n ? m : n), (int)k, A, &lw), "gesvd_bufferSize"));
    break;
  case RLX_CU_EXT_EIGH: RLX_TRY(sv(syevd_bs(h, (int)n, A, A, &lw), "syevd_bufferSize")); break;
  default: return rlx_errorf(RLX_ERR_INTERNAL, "cuda: la mode %d", e->mode);
  }
  e->S = lw > lw2 ? lw : lw2;
  return RLX_OK;
}

template <typename T> rlx_status la_run_t(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  cusolverDnHandle_t h = NULL;
  RLX_TRY(solver_handle(c, &h));
  const size_t esz = sizeof(T);
  const int lw = (int)e->S;
  if (e->mode == RLX_CU_EXT_EIGH) {
    int64_t n = e->len, B = e->N, total = n + n * n;
    if (n == 0 || B == 0) return RLX_OK;
    size_t hdr = align_up((size_t)(2 * B + 1) * sizeof(int)), a_b = align_up((size_t)(n * n) * esz),
           w_b = align_up((size_t)n * esz);
    void *scr;
    RLX_TRY(cu_scratch(c, hdr + a_b + w_b + align_up((size_t)lw * esz), &scr));
    int *flags = (int *)scr, *info = flags + B;
    T *A = (T *)((uint8_t *)scr + hdr), *W = (T *)((uint8_t *)A + a_b), *work = (T *)((uint8_t *)W + w_b);
    zero_int_kernel<<<1, 256, 0, c->stream>>>(flags, (int)(2 * B + 1));
    RLX_TRY(cu_launch_status("eigh init kernel"));
    for (int64_t b = 0; b < B; b++) {
      const T *Ab = (const T *)e->in[0] + b * n * n;
      nonfinite_kernel<<<cu_blocks(n * n, 256), 256, 0, c->stream>>>(Ab, e->dtype, n * n, flags + b);
      RLX_TRY(cu_launch_status("eigh check kernel"));
      /* row-major lower triangle = column-major upper triangle of the same buffer */
      if (cudaMemcpyAsync(A, Ab, (size_t)(n * n) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
        return cu_launch_status("eigh copy");
      RLX_TRY(sv(syevd_run(h, (int)n, A, W, work, lw, info + b), "syevd"));
      eigh_finish_kernel<T><<<(unsigned)(n < 65535 ? n : 65535), 256, 0, c->stream>>>(
          A, W, n, flags + b, info + b, c->kerr, (T *)e->out + b * total);
      RLX_TRY(cu_launch_status("eigh finish kernel"));
    }
    return RLX_OK;
  }
  int64_t m = e->rows, n = e->len, k = m < n ? m : n;
  if (k == 0) return RLX_OK;
  size_t hdr = 256, a_b = align_up((size_t)(m * n) * esz), k_b = align_up((size_t)k * esz);
  size_t vec_b = e->mode == RLX_CU_EXT_SVD ? 2 * align_up((size_t)((m > n ? m : n) * k) * esz) : 0;
  void *scr;
  RLX_TRY(cu_scratch(c, hdr + a_b + 3 * k_b + vec_b + align_up((size_t)lw * esz), &scr));
  int *flag = (int *)scr, *info = flag + 1;
  T *A = (T *)((uint8_t *)scr + hdr), *v1 = (T *)((uint8_t *)A + a_b), *v2 = (T *)((uint8_t *)v1 + k_b),
    *v3 = (T *)((uint8_t *)v2 + k_b), *mats = (T *)((uint8_t *)v3 + k_b), *work = (T *)((uint8_t *)mats + vec_b);
  zero_int_kernel<<<1, 32, 0, c->stream>>>(flag, 4);
  nonfinite_kernel<<<cu_blocks(m * n, 256), 256, 0, c->stream>>>(e->in[0], e->dtype, m * n, flag);
  RLX_TRY(cu_launch_status("factorisation check kernel"));
  T *out = (T *)e->out;
  if (e->mode == RLX_CU_EXT_QR) {
    to_colmajor_kernel<T><<<cu_blocks(m * n, 256), 256, 0, c->stream>>>((const T *)e->in[0], A, m, n);
    RLX_TRY(cu_launch_status("qr transpose kernel"));
    T *tau = v1, *sg = v2;
    RLX_TRY(sv(geqrf_run(h, (int)m, (int)n, A, tau, work, lw, info), "geqrf"));
    qr_signs_kernel<T><<<cu_blocks(k, 256), 256, 0, c->stream>>>(A, m, k, sg);
    RLX_TRY(cu_launch_status("qr signs kernel"));
    int part_r = e->want_xh == 1;
    if (!part_r) RLX_TRY(sv(orgqr_run(h, (int)m, (int)k, A, tau, work, lw, info + 1), "orgqr"));
    qr_finish_kernel<T><<<cu_blocks(part_r ? k * n : m * k, 256), 256, 0, c->stream>>>(A, m, n, k, sg, part_r, flag,
                                                                                          out);
    return cu_launch_status("qr finish kernel");
  }
  /* SVD. Wide or square (n >= m): the buffer is column-major A^T (n x m) = U' S V'^T, so A's U is
   * V' (its transpose VT' read row by row) and A's VT is U'^T. Tall: A copied column-major first. */
  svd_geom g = {m, n, k, 0, 0, 0, 0, e->want_xh};
  T *Ub = mats, *Vb = (T *)((uint8_t *)mats + vec_b / 2), *S = v1, *rw = v2;
  if (n >= m) {
    if (cudaMemcpyAsync(A, e->in[0], (size_t)(m * n) * esz, cudaMemcpyDeviceToDevice, c->stream) != cudaSuccess)
      return cu_launch_status("svd copy");
    RLX_TRY(sv(gesvd_run(h, (int)n, (int)m, A, S, Ub, Vb, work, lw, rw, info), "gesvd"));
    /* U' is n x k (ld n), VT' is k x m (ld k): U_A(i, j) = VT'(j, i), VT_A(j, c) = U'(c, j) */
    svd_geom w = {m, n, k, k, 1, n, 1, e->want_xh};
    svd_finish_kernel<T><<<(unsigned)(k < 65535 ? k : 65535), 256, 0, c->stream>>>(Vb, S, Ub, w, flag, info, c->kerr,
                                                                                     out);
    return cu_launch_status("svd finish kernel");
  }
  to_colmajor_kernel<T><<<cu_blocks(m * n, 256), 256, 0, c->stream>>>((const T *)e->in[0], A, m, n);
  RLX_TRY(cu_launch_status("svd transpose kernel"));
  RLX_TRY(sv(gesvd_run(h, (int)m, (int)n, A, S, Ub, Vb, work, lw, rw, info), "gesvd"));
  /* U is m x k (ld m), VT is k x n (ld k) */
  g.us_i = 1, g.us_j = m, g.vs_j = 1, g.vs_c = k;
  svd_finish_kernel<T><<<(unsigned)(k < 65535 ? k : 65535), 256, 0, c->stream>>>(Ub, S, Vb, g, flag, info, c->kerr,
                                                                                   out);
  return cu_launch_status("svd finish kernel");
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

extern "C" rlx_status rlx_cu_la_lwork(rlx_cu_ctx *c, rlx_cu_ext *e) {
  cusolverDnHandle_t h = NULL;
  RLX_TRY(solver_handle(c, &h));
  return e->dtype == RLX_F64 ? la_lwork_t<double>(h, e) : la_lwork_t<float>(h, e);
}

extern "C" rlx_status rlx_cu_la_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  return e->dtype == RLX_F64 ? la_run_t<double>(c, e) : la_run_t<float>(c, e);
}
