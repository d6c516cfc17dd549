/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Matrix products. Float dtypes go to cuBLAS (row-major C = A.B computed as the column-major
 * C^T = B^T.A^T): f32 with the context's precision policy (plain fp32 by default; TF32 or bf16
 * tensor-core modes on request), f64, and f16 / bf16 with fp32 accumulation. Integer, bool and
 * complex products use a plain kernel with the CPU reference's arithmetic (int64 saturating,
 * complex in double). */
#include <cublas_v2.h>

#include "backends/cuda/dev.cuh"
#include "backends/cuda/libs.cuh"
#include "rlx/cuda.h"

static rlx_status blas_status(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return RLX_OK;
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: %s failed: %s", what, CUL(cublasGetStatusString)(s));
}


__global__ void matmul_generic(int t, const void *A, const void *B, void *C, int64_t M, int64_t N, int64_t K,
                               int64_t batches, const int64_t *a_off, const int64_t *b_off) {
  int64_t total = batches * M * N;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t j = e % N, i = (e / N) % M, bt = e / (M * N);
    int64_t ao = a_off[bt], bo = b_off[bt];
    if (dt_is_complex(t)) {
      double sr = 0, si = 0;
      for (int64_t p = 0; p < K; p++) {
        double ar, ai, br, bi;
        ld_c(A, t, ao + i * K + p, &ar, &ai);
        ld_c(B, t, bo + p * N + j, &br, &bi);
        sr += ar * br - ai * bi;
        si += ar * bi + ai * br;
      }
      st_c(C, t, e, sr, si);
    } else if (dt_is_int(t)) {
      int64_t acc = 0;
      for (int64_t p = 0; p < K; p++) acc = sat_add(acc, sat_mul(ld_i(A, t, ao + i * K + p), ld_i(B, t, bo + p * N + j)));
      st_i(C, t, e, acc);
    } else {
      double acc = 0;
      for (int64_t p = 0; p < K; p++) acc += ld_f(A, t, ao + i * K + p) * ld_f(B, t, bo + p * N + j);
      st_f(C, t, e, acc);
    }
  }
}

__global__ void f32_to_bf16(const float *x, __nv_bfloat16 *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

/* offsets form i * stride (+ first)? */
static bool affine(const int64_t *off, int64_t n, int64_t *stride) {
  *stride = n > 1 ? off[1] - off[0] : 0;
  for (int64_t i = 1; i < n; i++)
    if (off[i] - off[i - 1] != *stride) return false;
  return true;
}

extern "C" rlx_status rlx_cu_matmul(rlx_cu_ctx *c, int t, const void *A, const void *B, void *C, int64_t M, int64_t N,
                                    int64_t K, int64_t batches, const int64_t *a_off, const int64_t *b_off,
                                    int trans) {
  if (M == 0 || N == 0 || batches == 0) return RLX_OK;
  size_t esz = rlx_dtype_size((rlx_dtype)t);
  bool blas = rlx_cu_blas_dtype(t);
  if (trans && !blas)
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: a transposed MatMul operand needs a float dtype, got %s",
                      rlx_dtype_name((rlx_dtype)t));
  if (blas && K == 0) /* an empty sum: zeros (all-zero bytes are +0 in every float dtype) */
    return rlx_cu_memset(c, C, 0, (size_t)(batches * M * N) * esz);
  if (!blas) {
    /* The offsets travel to the device once per call (small: one pair per batch). */
    int64_t *d_off = NULL;
    size_t bytes = (size_t)batches * 2 * sizeof(int64_t);
    rlx_status st = rlx_cu_malloc(c, bytes, (void **)&d_off);
    if (st != RLX_OK) return st;
    cudaMemcpyAsync(d_off, a_off, bytes / 2, cudaMemcpyHostToDevice, c->stream);
    cudaMemcpyAsync(d_off + batches, b_off, bytes / 2, cudaMemcpyHostToDevice, c->stream);
    const int threads = 128;
    matmul_generic<<<cu_blocks(batches * M * N, threads), threads, 0, c->stream>>>(t, A, B, C, M, N, K, batches, d_off,
                                                                                  d_off + batches);
    st = cu_launch_status("matmul kernel");
    cudaStreamSynchronize(c->stream);
    rlx_cu_free(c, d_off);
    return st;
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: MatMul dimension over 2^31 (M=%lld N=%lld K=%lld)", (long long)M,
                      (long long)N, (long long)K);
  cublasHandle_t h = (cublasHandle_t)c->blas;
  cudaDataType_t dt;
  cublasComputeType_t ct;
  float alpha_f = 1, beta_f = 0;
  double alpha_d = 1, beta_d = 0;
  const void *alpha = &alpha_f, *beta = &beta_f;
  cudaDataType_t ab_type;
  void *bf = NULL; /* the bf16 policy's rounded copies of A and B */
  switch (t) {
  case RLX_F32:
    dt = CUDA_R_32F;
    /* fp32 policy: CUBLAS_COMPUTE_32F under CUBLAS_DEFAULT_MATH (set on the handle) uses no
     * TF32; RLX_CUDA_FP32_PEDANTIC=1 asks for the pedantic compute type instead (a diagnostic:
     * it also rules out split-K-style algorithms, which was 4x slower on some shapes). */
    ct = c->precision == RLX_CUDA_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
         : c->fp32_pedantic            ? CUBLAS_COMPUTE_32F_PEDANTIC
                                       : CUBLAS_COMPUTE_32F;
    if (c->precision == RLX_CUDA_BF16) {
      /* Round the operands to bf16 explicitly (cuBLAS's FAST_16BF compute type may choose TF32
       * kernels), then multiply on the tensor cores with fp32 accumulation and fp32 output. */
      int64_t a_len = 0, b_len = 0;
      for (int64_t i = 0; i < batches; i++) {
        if (a_off[i] + M * K > a_len) a_len = a_off[i] + M * K;
        if (b_off[i] + K * N > b_len) b_len = b_off[i] + K * N;
      }
      cudaError_t e = cudaMallocAsync(&bf, (size_t)(a_len + b_len) * 2, c->stream);
      if (e != cudaSuccess) return rlx_errorf(RLX_ERR_OOM, "cuda: bf16 operand copies: %s", cudaGetErrorString(e));
      __nv_bfloat16 *ab = (__nv_bfloat16 *)bf, *bb = ab + a_len;
      f32_to_bf16<<<cu_blocks(a_len, 256), 256, 0, c->stream>>>((const float *)A, ab, a_len);
      f32_to_bf16<<<cu_blocks(b_len, 256), 256, 0, c->stream>>>((const float *)B, bb, b_len);
      A = ab;
      B = bb;
      ct = CUBLAS_COMPUTE_32F;
    }
    break;
  case RLX_F64:
    dt = CUDA_R_64F;
    ct = CUBLAS_COMPUTE_64F;
    alpha = &alpha_d;
    beta = &beta_d;
    break;
  case RLX_F16: dt = CUDA_R_16F; ct = CUBLAS_COMPUTE_32F; break;
  default: dt = CUDA_R_16BF; ct = CUBLAS_COMPUTE_32F; break;
  }
  ab_type = bf ? CUDA_R_16BF : dt;
  size_t ab_esz = bf ? 2 : esz;
  int m = (int)M, n = (int)N, k = (int)K;
  /* Column-major, C^T = B^T . A^T: B (row-major K x N) is the column-major N x K matrix with
   * leading dimension N; stored transposed (row-major N x K) it is read with CUBLAS_OP_T and
   * leading dimension K. Likewise A: K x M with ld K, or stored as K x M row-major, OP_T, ld M. */
  cublasOperation_t op_b = (trans & 2) ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = (trans & 1) ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = (trans & 2) ? k : n, lda = (trans & 1) ? m : k;
  int64_t sa, sb;
  rlx_status st = RLX_OK;
  if (batches == 1 || (affine(a_off, batches, &sa) && affine(b_off, batches, &sb))) {
    if (batches == 1) sa = sb = 0;
    const char *a = (const char *)A + a_off[0] * ab_esz, *b = (const char *)B + b_off[0] * ab_esz;
    st = blas_status(CUL(cublasGemmStridedBatchedEx)(h, op_b, op_a, n, m, k, alpha, b, ab_type, ldb, sb, a,
                                                ab_type, lda, sa, beta, C, dt, n, (long long)M * N, (int)batches, ct,
                                                CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx");
  } else {
    for (int64_t i = 0; i < batches && st == RLX_OK; i++) {
      const char *a = (const char *)A + a_off[i] * ab_esz, *b = (const char *)B + b_off[i] * ab_esz;
      char *cc = (char *)C + (size_t)(i * M * N) * esz;
      st = blas_status(CUL(cublasGemmEx)(h, op_b, op_a, n, m, k, alpha, b, ab_type, ldb, a, ab_type, lda, beta, cc,
                                    dt, n, ct, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx");
    }
  }
  if (bf) cudaFreeAsync(bf, c->stream);
  return st;
}
