/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* cuBLAS (with cuBLASLt), cuSOLVER and cuFFT, loaded when a CUDA device is found rather than linked. librlx then
 * starts (and runs on the CPU or MLX) on a machine that has no CUDA libraries at all, and a
 * process that never uses the GPU does not map the libraries' gigabyte of code and tables.
 * Call sites name a function through CUL: CUL(cublasGemmEx)(handle, ...). The header's macros
 * (cublasCreate -> cublasCreate_v2) apply inside CUL too, so the table holds the exported names
 * (field fn_cublasCreate_v2).
 * rlx_cu_libs_load is idempotent and thread-safe; rlx_cu_available calls it, so every context
 * (and every call site behind one) sees a loaded table. */
#ifndef RLX_CUDA_LIBS_CUH
#define RLX_CUDA_LIBS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cufft.h>
#include <cusolverDn.h>

#define RLX_CUBLAS_FUNCTIONS(X)                                                                         \
  X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasSetMathMode) X(cublasGetStatusString)   \
  X(cublasStrsm) X(cublasDtrsm)
/* C++ sees these two overloaded (an inline cudaDataType form forwards to the exported one): their
 * types are spelled out below, as the exported (cublasComputeType_t) functions have them. */
#define RLX_CUBLAS_OVERLOADED(X) X(cublasGemmEx) X(cublasGemmStridedBatchedEx)
typedef cublasStatus_t (*rlx_cublasGemmEx_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                              const void *, const void *, cudaDataType, int, const void *,
                                              cudaDataType, int, const void *, void *, cudaDataType, int,
                                              cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*rlx_cublasGemmStridedBatchedEx_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                                            int, int, int, const void *, const void *, cudaDataType,
                                                            int, long long, const void *, cudaDataType, int,
                                                            long long, const void *, void *, cudaDataType, int,
                                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
/* cuBLASLt: the products with fused epilogues (gemm_lt.cu) */
#define RLX_CUBLASLT_FUNCTIONS(X)                                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)       \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)      \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                                \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)            \
  X(cublasLtMatmulAlgoConfigGetAttribute)
#define RLX_CUSOLVER_FUNCTIONS(X)                                                                       \
  X(cusolverDnCreate) X(cusolverDnSetStream)                                                          \
  X(cusolverDnSpotrf_bufferSize) X(cusolverDnSpotrf) X(cusolverDnDpotrf_bufferSize) X(cusolverDnDpotrf) \
  X(cusolverDnSgetrf_bufferSize) X(cusolverDnSgetrf) X(cusolverDnDgetrf_bufferSize) X(cusolverDnDgetrf) \
  X(cusolverDnSgetrs) X(cusolverDnDgetrs)                                                             \
  X(cusolverDnSgeqrf_bufferSize) X(cusolverDnSgeqrf) X(cusolverDnDgeqrf_bufferSize) X(cusolverDnDgeqrf) \
  X(cusolverDnSorgqr_bufferSize) X(cusolverDnSorgqr) X(cusolverDnDorgqr_bufferSize) X(cusolverDnDorgqr) \
  X(cusolverDnSgesvd_bufferSize) X(cusolverDnSgesvd) X(cusolverDnDgesvd_bufferSize) X(cusolverDnDgesvd) \
  X(cusolverDnSsyevd_bufferSize) X(cusolverDnSsyevd) X(cusolverDnDsyevd_bufferSize) X(cusolverDnDsyevd)
#define RLX_CUFFT_FUNCTIONS(X) X(cufftCreate) X(cufftDestroy) X(cufftMakePlanMany64) X(cufftSetStream) X(cufftExecZ2Z)

/* field fn_NAME for the function NAME; RLX_CU_CAT expands NAME first (cublasCreate -> _v2) */
#define RLX_CU_CAT2(a, b) a##b
#define RLX_CU_CAT(a, b) RLX_CU_CAT2(a, b)
#define RLX_CU_LIBS_FIELD(f) decltype(&f) RLX_CU_CAT(fn_, f);
#define RLX_CU_LIBS_TYPED_FIELD(f) rlx_##f##_fn fn_##f;
struct rlx_cu_libs {
  RLX_CUBLAS_FUNCTIONS(RLX_CU_LIBS_FIELD)
  RLX_CUBLAS_OVERLOADED(RLX_CU_LIBS_TYPED_FIELD)
  RLX_CUBLASLT_FUNCTIONS(RLX_CU_LIBS_FIELD)
  RLX_CUSOLVER_FUNCTIONS(RLX_CU_LIBS_FIELD)
  RLX_CUFFT_FUNCTIONS(RLX_CU_LIBS_FIELD)
};
#undef RLX_CU_LIBS_FIELD
#undef RLX_CU_LIBS_TYPED_FIELD

extern struct rlx_cu_libs rlx_cu_libs_table;
#define CUL(f) (rlx_cu_libs_table.RLX_CU_CAT(fn_, f))

/* lib<stem>.so.<major>: by soname (LD_LIBRARY_PATH, the ld.so cache), then in the toolkit folder
 * CMake found; NULL when neither loads. */
extern "C" void *rlx_cu_lib_open(const char *stem, int major);

/* Loads the libraries once; 1 when every function was found, else 0 with *why saying which
 * library or symbol is missing and how to provide it. */
int rlx_cu_libs_load(const char **why);

#endif
