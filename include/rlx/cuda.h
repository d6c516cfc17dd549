/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend ("cuda"; docs/cuda.md): its descriptor and its options, passed as
 * rlx_compile_options.backend_options. Built when CMake finds nvcc (option RLX_CUDA, which
 * defines RLX_HAVE_CUDA); without a usable device it registers as unavailable and says why. */
#ifndef RLX_CUDA_H
#define RLX_CUDA_H

#include <stdbool.h>

#include "rlx/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How float32 matrix products (MatMul and what decomposes into it) are computed. */
typedef enum rlx_cuda_precision {
  RLX_CUDA_FP32 = 0, /* fp32 MatMul, no TF32 (default: matches the CPU within 1e-4); f32 flash
                      * attention multiplies its tiles as three TF32 products of split operands
                      * (about 3e-6 from the CPU) and GELU / SiLU run in float (about 2e-7);
                      * RLX_CUDA_FP32_PEDANTIC=1 in the environment keeps all of it in fp32 /
                      * double arithmetic (docs/cuda.md) */
  RLX_CUDA_TF32,     /* fp32 operands rounded to TF32 on the tensor cores (about 3e-4 relative) */
  RLX_CUDA_BF16      /* fp32 operands rounded to bf16 on the tensor cores, fp32 accumulation */
} rlx_cuda_precision;

typedef struct rlx_cuda_options {
  rlx_backend_options_header header; /* .backend = "cuda" (set by rlx_cuda_options_init) */
  int device;                        /* CUDA device index (default 0) */
  void *stream;                      /* a cudaStream_t to queue work on; NULL = the default stream */
  rlx_cuda_precision matmul;         /* default RLX_CUDA_FP32 */
} rlx_cuda_options;

void rlx_cuda_options_init(rlx_cuda_options *o);

/* The backend descriptor (registered as "cuda" in builds with RLX_CUDA). Without a usable device
 * its available() is false and says why ("no CUDA device: ..."). */
const rlx_backend *rlx_cuda_backend(void);

#ifdef __cplusplus
}
#endif
#endif
