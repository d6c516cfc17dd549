/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's internal interface between its C files (the contract glue in backend.c, the
 * per-op lowering in lower.c) and its CUDA files (device runtime, kernels, cuBLAS glue). Only
 * plain C types cross it, so the C side needs no CUDA headers. Every function that can fail
 * returns an rlx_status with a message (cudaGetErrorString / cuBLAS status names). */
#ifndef RLX_CUDA_CU_H
#define RLX_CUDA_CU_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_CU_MAX_RANK 8
#define RLX_CU_MAX_IN 3

/* ---- device runtime (runtime.cu) ---- */
typedef struct rlx_cu_ctx rlx_cu_ctx;

/* 0 devices or no driver: false with a static message in *why. */
int rlx_cu_available(const char **why);
/* precision: rlx_cuda_precision of rlx/cuda.h. stream: a cudaStream_t or NULL (own stream). */
rlx_status rlx_cu_ctx_create(int device, void *stream, int precision, rlx_cu_ctx **out);
void rlx_cu_ctx_destroy(rlx_cu_ctx *c);
rlx_status rlx_cu_malloc(rlx_cu_ctx *c, size_t bytes, void **out);
void rlx_cu_free(rlx_cu_ctx *c, void *p);
rlx_status rlx_cu_h2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_d2h(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_d2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_memset(rlx_cu_ctx *c, void *dst, int value, size_t n);
/* Waits for the stream; then reports a kernel-detected error (integer division by zero, an
 * index out of range) recorded since the last sync. */
rlx_status rlx_cu_sync(rlx_cu_ctx *c);
/* The device name ("NVIDIA H200") for reports. */
const char *rlx_cu_device_name(rlx_cu_ctx *c);

/* ---- generic elementwise (elementwise.cu): every dtype, NumPy broadcasting by strides ----
 * The output is dense row-major of dims; operand k is read at sum(idx[d] * stride[k][d]) (a
 * stride of 0 broadcasts). Arithmetic follows the CPU reference: floats in double rounded once,
 * integers exact in int64 saturating to the dtype, complex in double. */
typedef enum rlx_cu_ew_kind {
  RLX_CU_EW_ACT,     /* sub = rlx_act */
  RLX_CU_EW_CAST,    /* to out_dtype */
  RLX_CU_EW_COPY,    /* StopGradient / same-dtype copy */
  RLX_CU_EW_BINARY,  /* sub = rlx_binop */
  RLX_CU_EW_COMPARE, /* sub = rlx_cmp, output bool (or the declared dtype) */
  RLX_CU_EW_WHERE,   /* in0 condition, in1 / in2 values */
  RLX_CU_EW_FMA,     /* in0 * in1 + in2 */
  RLX_CU_EW_CLAMP    /* lo, hi */
} rlx_cu_ew_kind;

typedef struct rlx_cu_ew {
  int kind, sub;
  int rank;
  int64_t dims[RLX_CU_MAX_RANK];
  int64_t n; /* product of dims */
  int n_in;
  const void *in[RLX_CU_MAX_IN];
  int in_dtype[RLX_CU_MAX_IN];
  int64_t stride[RLX_CU_MAX_IN][RLX_CU_MAX_RANK]; /* in elements */
  void *out;
  int out_dtype;
  double lo, hi;
} rlx_cu_ew;
rlx_status rlx_cu_elementwise(rlx_cu_ctx *c, const rlx_cu_ew *p);

/* ---- strided copy (shape.cu): dst[idx . dst_stride] = src[idx . src_stride], esz-byte
 * elements (Transpose, Expand, Narrow, Concat, Slice...). ---- */
typedef struct rlx_cu_copy {
  int rank;
  int64_t dims[RLX_CU_MAX_RANK];
  int64_t n;
  const void *src;
  int64_t src_stride[RLX_CU_MAX_RANK];
  void *dst;
  int64_t dst_stride[RLX_CU_MAX_RANK];
  int esz;
} rlx_cu_copy;
rlx_status rlx_cu_strided_copy(rlx_cu_ctx *c, const rlx_cu_copy *p);

/* Gather along an axis: out[o, j, i] = x[o, index[j], i] (outer, axis length len, inner; n_idx
 * indices of idx_dtype, negative ones counted from the end; out of range -> error at sync). */
rlx_status rlx_cu_gather(rlx_cu_ctx *c, const void *x, int64_t outer, int64_t len, int64_t inner, int esz,
                         const void *index, int idx_dtype, int64_t n_idx, void *out);

/* ---- reductions (reduce.cu) ---- */
/* Reduce over the axes in mask of x (dims, dense); out is dense over the kept axes. */
rlx_status rlx_cu_reduce(rlx_cu_ctx *c, int op, int dtype, const void *x, int rank, const int64_t *dims,
                         uint32_t mask, void *out);
/* Softmax over the middle axis of [outer, len, inner]. */
rlx_status rlx_cu_softmax(rlx_cu_ctx *c, int dtype, const void *x, int64_t outer, int64_t len, int64_t inner,
                          void *out);
/* LayerNorm / RmsNorm over the trailing `len` elements of each of `rows` rows, gamma / beta
 * broadcast over rows (length len). rms: 1 = RmsNorm (x / rms * gamma + beta). */
rlx_status rlx_cu_norm(rlx_cu_ctx *c, int rms, int dtype, const void *x, const void *gamma, const void *beta,
                       int64_t rows, int64_t len, double eps, void *out);

/* ---- matrix products (gemm.cu): C[b] = A[b] . B[b], row-major M x K times K x N. The batch
 * offsets (in elements) come per batch; cuBLAS for float dtypes, a plain kernel for the rest. */
rlx_status rlx_cu_matmul(rlx_cu_ctx *c, int dtype, const void *A, const void *B, void *C, int64_t M, int64_t N,
                         int64_t K, int64_t batches, const int64_t *a_off, const int64_t *b_off);

#ifdef __cplusplus
}
#endif
#endif
