/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Matrix products with fused epilogues on cuBLASLt: D = A . B + bias, optionally followed by the
 * tanh GELU (with or without the pre-activation kept in aux for the backward). lower_fold.c
 * folds a MatMul, the bias Add after it and the GELU after that into one of these when cuBLASLt
 * has an algorithm for the shape; the plan (descriptors, operand addresses, the chosen algorithm)
 * is made at compile time, so a run is one cublasLtMatmul call (capturable in a CUDA graph).
 * A residual of D's shape can be added too (beta = 1 with C, the Add after the bias Add in one
 * ElementwiseRegion). Precision follows rlx_cu_matmul's policies: f32 in fp32 (or TF32 when asked), f16 / bf16 with
 * fp32 accumulation; the sum and the GELU are rounded once, at the end. f32 takes the bias
 * epilogue only (below). */
#include <cublasLt.h>

#include "backends/cuda/dev.cuh"
#include "backends/cuda/libs.cuh"
#include "backends/cuda/cu.h"
#include "rlx/cuda.h"

#define RLX_CU_LT_WORKSPACE ((size_t)32 << 20)

struct rlx_cu_lt {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld; /* cuBLASLt's A, B (our B, A: column-major D^T = B^T A^T) and D */
  cublasLtMatmulAlgo_t algo;
  const void *a, *b, *c; /* c: the residual (NULL: none) */
  void *d;
  size_t ws_bytes;
};

extern "C" void rlx_cu_lt_destroy(rlx_cu_lt *p) {
  if (!p) return;
  if (p->la) CUL(cublasLtMatrixLayoutDestroy)(p->la);
  if (p->lb) CUL(cublasLtMatrixLayoutDestroy)(p->lb);
  if (p->ld) CUL(cublasLtMatrixLayoutDestroy)(p->ld);
  if (p->desc) CUL(cublasLtMatmulDescDestroy)(p->desc);
  free(p);
}

extern "C" rlx_status rlx_cu_lt_create(rlx_cu_ctx *c, const rlx_cu_lt_args *g, rlx_cu_lt **out) {
  *out = NULL;
  cudaDataType_t dt;
  cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
  switch (g->dtype) {
  case RLX_F32:
    /* the pedantic and bf16-operand policies keep rlx_cu_matmul's separate steps */
    if (c->fp32_pedantic || c->precision == RLX_CUDA_BF16) return RLX_OK;
    /* fp32 GELU epilogues are a separate cuBLASLt kernel after the SIMT GEMM (110 us for the f32
     * GPT-2 block's 8192 x 3072 GELU_AUX_BIAS on the H200, 2026-12-03, against 48 for the bias
     * and about 50 for our GELU kernel): only the bias, which the GEMM itself adds, is fused */
    if (g->epilogue != RLX_CU_LT_BIAS) return RLX_OK;
    dt = CUDA_R_32F;
    if (c->precision == RLX_CUDA_TF32) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
    break;
  case RLX_BF16: dt = CUDA_R_16BF; break;
  case RLX_F16: dt = CUDA_R_16F; break;
  default: return RLX_OK;
  }
  if (g->M <= 0 || g->N <= 0 || g->K <= 0 || g->M > INT32_MAX || g->N > INT32_MAX || g->K > INT32_MAX) return RLX_OK;
  cublasLtEpilogue_t ep = g->epilogue == RLX_CU_LT_GELU_AUX_BIAS ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                          : g->epilogue == RLX_CU_LT_GELU_BIAS   ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                 : CUBLASLT_EPILOGUE_BIAS;
  if (!c->lt_ws && cudaMalloc(&c->lt_ws, RLX_CU_LT_WORKSPACE) != cudaSuccess) {
    c->lt_ws = NULL;
    cudaGetLastError();
    return RLX_OK; /* no workspace: the unfused steps */
  }
  rlx_cu_lt *p = (rlx_cu_lt *)calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  const uint64_t m = (uint64_t)g->N, n = (uint64_t)g->M, k = (uint64_t)g->K;
  cublasOperation_t ta = (g->trans & 2) ? CUBLAS_OP_T : CUBLAS_OP_N, tb = (g->trans & 1) ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ld_d = (int64_t)m;
  bool ok = CUL(cublasLtMatmulDescCreate)(&p->desc, ct, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == 0;
  ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == 0;
  ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep) == 0;
  ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                                 sizeof g->bias) == 0;
  if (ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
    ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux,
                                                   sizeof g->aux) == 0;
    ok = ok && CUL(cublasLtMatmulDescSetAttribute)(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld_d,
                                                   sizeof ld_d) == 0;
  }
  /* cuBLASLt's A is our B: column-major N x K (ld N), or K x N (ld K) read transposed */
  ok = ok && CUL(cublasLtMatrixLayoutCreate)(&p->la, dt, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m,
                                             ta == CUBLAS_OP_N ? (int64_t)m : (int64_t)k) == 0;
  ok = ok && CUL(cublasLtMatrixLayoutCreate)(&p->lb, dt, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k,
                                             tb == CUBLAS_OP_N ? (int64_t)k : (int64_t)n) == 0;
  ok = ok && CUL(cublasLtMatrixLayoutCreate)(&p->ld, dt, m, n, ld_d) == 0;
  cublasLtMatmulPreference_t pref = NULL;
  size_t ws = RLX_CU_LT_WORKSPACE;
  ok = ok && CUL(cublasLtMatmulPreferenceCreate)(&pref) == 0;
  ok = ok && CUL(cublasLtMatmulPreferenceSetAttribute)(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                       sizeof ws) == 0;

  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  ok = ok && CUL(cublasLtMatmulAlgoGetHeuristic)((cublasLtHandle_t)c->blas_lt, p->desc, p->la, p->lb, p->ld, p->ld,
                                                 pref, 1, &r, &found) == 0;
  if (pref) CUL(cublasLtMatmulPreferenceDestroy)(pref);
  /* with a residual, no split-K: the f32 block's 8192 x 3072 x 768 product (split in 4) then ran a
   * separate reduction-and-epilogue kernel after the GEMM (43 us, against 25 for the unfused
   * residual region; H200, 2026-12-04) */
  int32_t splits = 1;
  size_t got = 0;
  if (ok && found >= 1 && g->C &&
      CUL(cublasLtMatmulAlgoConfigGetAttribute)(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits,
                                                &got) == CUBLAS_STATUS_SUCCESS &&
      splits > 1)
    ok = false;
  if (!ok || found < 1 || r.state != CUBLAS_STATUS_SUCCESS) {
    rlx_cu_lt_destroy(p); /* no algorithm for this epilogue and shape: the unfused steps */
    return RLX_OK;
  }
  p->algo = r.algo;
  p->ws_bytes = r.workspaceSize;
  p->a = g->B; /* cuBLASLt's A */
  p->b = g->A;
  p->c = g->C;
  p->d = g->D;
  *out = p;
  return RLX_OK;
}

extern "C" rlx_status rlx_cu_lt_run(rlx_cu_ctx *c, const rlx_cu_lt *p) {
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t s =
      CUL(cublasLtMatmul)((cublasLtHandle_t)c->blas_lt, p->desc, &one, p->a, p->la, p->b, p->lb, p->c ? &one : &zero,
                          p->c ? p->c : p->d, p->ld, p->d, p->ld, &p->algo, c->lt_ws, p->ws_bytes, c->stream);
  if (s == CUBLAS_STATUS_SUCCESS) return RLX_OK;
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cublasLtMatmul (fused bias epilogue) failed: %s",
                    CUL(cublasGetStatusString)(s));
}
