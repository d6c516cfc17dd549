/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's device runtime: probe, context (device, stream, cuBLAS handle), memory,
 * copies, and the kernel error flag. */
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/dev.cuh"
#include "backends/cuda/libs.cuh"

static rlx_status cu_err(cudaError_t e, const char *what) {
  return rlx_errorf(e == cudaErrorMemoryAllocation ? RLX_ERR_OOM : RLX_ERR_INTERNAL, "cuda: %s failed: %s (%s)", what,
                    cudaGetErrorString(e), cudaGetErrorName(e));
}

rlx_status cu_launch_status(const char *what) {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? RLX_OK : cu_err(e, what);
}

extern "C" int rlx_cu_available(const char **why) {
  static char msg[256];
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(msg, sizeof msg, "no CUDA device: the CUDA runtime reports %s (%s); the cuda backend needs an NVIDIA "
             "GPU and its driver", cudaGetErrorName(e), cudaGetErrorString(e));
    (void)cudaGetLastError();
    if (why) *why = msg;
    return 0;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device: the driver is present but lists no GPU";
    return 0;
  }
  return rlx_cu_libs_load(why);
}

extern "C" rlx_status rlx_cu_ctx_create(int device, void *stream, int precision, rlx_cu_ctx **out) {
  *out = NULL;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return cu_err(e, "cudaGetDeviceCount");
  const char *why = NULL;
  if (!rlx_cu_libs_load(&why)) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s", why);
  if (device < 0 || device >= n)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: option device = %d, but this machine has %d CUDA device%s", device, n,
                      n == 1 ? "" : "s");
  if ((e = cudaSetDevice(device)) != cudaSuccess) return cu_err(e, "cudaSetDevice");
  rlx_cu_ctx *c = (rlx_cu_ctx *)calloc(1, sizeof *c);
  if (!c) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  c->device = device;
  c->precision = precision;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) snprintf(c->name, sizeof c->name, "%.120s", prop.name);
  /* Without a stream of the caller's, every executable queues on the device's default stream:
   * buffers pass between executables (a step's outputs are the next step's inputs) and stay
   * ordered without extra synchronisation. */
  c->stream = stream ? (cudaStream_t)stream : (cudaStream_t)0;
  c->own_stream = 0;
  cublasHandle_t h;
  cublasStatus_t bs = CUL(cublasCreate)(&h);
  if (bs != CUBLAS_STATUS_SUCCESS) {
    rlx_cu_ctx_destroy(c);
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cublasCreate failed: %s", CUL(cublasGetStatusString)(bs));
  }
  c->blas = h;
  cublasLtHandle_t lt;
  if ((bs = CUL(cublasLtCreate)(&lt)) != CUBLAS_STATUS_SUCCESS) {
    rlx_cu_ctx_destroy(c);
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cublasLtCreate failed: %s", CUL(cublasGetStatusString)(bs));
  }
  c->blas_lt = lt;
  if ((e = cudaMalloc((void **)&c->kerr, sizeof(int))) != cudaSuccess || (e = cudaMemset(c->kerr, 0, sizeof(int))) != cudaSuccess) {
    rlx_cu_ctx_destroy(c);
    return cu_err(e, "allocating the kernel error flag");
  }
  CUL(cublasSetStream)(h, c->stream);
  /* Pointer-mode host (alpha/beta on the host); math mode chosen per call by compute type. */
  CUL(cublasSetMathMode)(h, CUBLAS_DEFAULT_MATH);
  const char *ped = getenv("RLX_CUDA_FP32_PEDANTIC");
  c->fp32_pedantic = ped && *ped && strcmp(ped, "0") != 0;
  *out = c;
  return RLX_OK;
}

extern "C" void rlx_cu_ctx_destroy(rlx_cu_ctx *c) {
  if (!c) return;
  if (c->blas) CUL(cublasDestroy)((cublasHandle_t)c->blas);
  if (c->blas_lt) CUL(cublasLtDestroy)((cublasLtHandle_t)c->blas_lt);
  rlx_cu_dnn_ctx_release(c);
  if (c->lt_ws) cudaFree(c->lt_ws);
  if (c->kerr) cudaFree(c->kerr);
  if (c->scratch) cudaFree(c->scratch);
  if (c->capture) cudaStreamDestroy(c->capture);
  if (c->own_stream && c->stream) cudaStreamDestroy(c->stream);
  free(c);
}

extern "C" rlx_status rlx_cu_malloc(rlx_cu_ctx *c, size_t bytes, void **out) {
  (void)c;
  *out = NULL;
  cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return rlx_errorf(RLX_ERR_OOM, "cuda: cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
  }
  return RLX_OK;
}

extern "C" void rlx_cu_free(rlx_cu_ctx *c, void *p) {
  (void)c;
  if (p) cudaFree(p);
}

extern "C" rlx_status rlx_cu_h2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n) {
  if (!n) return RLX_OK;
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream); /* src may be reused at once */
  return e == cudaSuccess ? RLX_OK : cu_err(e, "host-to-device copy");
}

extern "C" rlx_status rlx_cu_d2h(rlx_cu_ctx *c, void *dst, const void *src, size_t n) {
  if (!n) return RLX_OK;
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, c->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(c->stream);
  return e == cudaSuccess ? RLX_OK : cu_err(e, "device-to-host copy");
}

extern "C" rlx_status rlx_cu_d2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n) {
  if (!n || dst == src) return RLX_OK;
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c->stream);
  return e == cudaSuccess ? RLX_OK : cu_err(e, "device-to-device copy");
}

extern "C" rlx_status rlx_cu_memset(rlx_cu_ctx *c, void *dst, int value, size_t n) {
  if (!n) return RLX_OK;
  cudaError_t e = cudaMemsetAsync(dst, value, n, c->stream);
  return e == cudaSuccess ? RLX_OK : cu_err(e, "memset");
}

extern "C" rlx_status rlx_cu_sync(rlx_cu_ctx *c) {
  cudaError_t e = cudaStreamSynchronize(c->stream);
  if (e != cudaSuccess) return cu_err(e, "stream synchronize (a kernel failed)");
  int code = 0, zero = 0;
  e = cudaMemcpy(&code, c->kerr, sizeof code, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return cu_err(e, "reading the kernel error flag");
  if (code) {
    cudaMemcpy(c->kerr, &zero, sizeof zero, cudaMemcpyHostToDevice);
    switch (code) {
    case RLX_CU_KERR_DIV_ZERO: return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: integer division or modulo by zero");
    case RLX_CU_KERR_POW_ZERO_NEG: return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: integer Pow: 0 raised to a negative power");
    case RLX_CU_KERR_INDEX: return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: an index is out of range (Gather)");
    case RLX_CU_KERR_SINGULAR:
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: a matrix is singular (a zero pivot or diagonal entry) or, for "
                                             "Cholesky, not positive definite");
    case RLX_CU_KERR_NOCONV:
      return rlx_errorf(RLX_ERR_RUNTIME, "cuda: an SVD or eigendecomposition did not converge (cuSOLVER info > 0)");
    default: return rlx_errorf(RLX_ERR_INTERNAL, "cuda: kernel error code %d", code);
    }
  }
  return RLX_OK;
}

extern "C" const char *rlx_cu_device_name(rlx_cu_ctx *c) { return c->name; }

/* ---- CUDA graphs: a program's launches captured once, replayed by one launch ---- */
extern "C" rlx_status rlx_cu_capture_begin(rlx_cu_ctx *c) {
  cudaError_t e = cudaSuccess;
  if (!c->capture) e = cudaStreamCreateWithFlags(&c->capture, cudaStreamNonBlocking);
  cudaEvent_t ev = NULL;
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  /* the captured work comes after what the stream holds now */
  if (e == cudaSuccess) e = cudaEventRecord(ev, c->stream);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(c->capture, ev, 0);
  if (ev) cudaEventDestroy(ev);
  if (e == cudaSuccess) e = cudaStreamBeginCapture(c->capture, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cu_err(e, "beginning a graph capture");
  }
  c->saved = c->stream;
  c->stream = c->capture;
  CUL(cublasSetStream)((cublasHandle_t)c->blas, c->stream);
  return RLX_OK;
}

extern "C" rlx_status rlx_cu_capture_end(rlx_cu_ctx *c, int ok, void **exec) {
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(c->capture, &g);
  c->stream = c->saved;
  CUL(cublasSetStream)((cublasHandle_t)c->blas, c->stream);
  *exec = NULL;
  cudaGraphExec_t x = NULL;
  if (e == cudaSuccess && ok && g) e = cudaGraphInstantiate(&x, g, 0);
  if (g) cudaGraphDestroy(g);
  if (e != cudaSuccess || !ok || !x) {
    (void)cudaGetLastError();
    if (x) cudaGraphExecDestroy(x);
    return e != cudaSuccess ? cu_err(e, "capturing the program as a CUDA graph")
                            : rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: a step cannot be captured");
  }
  *exec = x;
  return RLX_OK;
}

extern "C" rlx_status rlx_cu_graph_launch(rlx_cu_ctx *c, void *exec) {
  cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)exec, c->stream);
  return e == cudaSuccess ? RLX_OK : cu_err(e, "launching the program's CUDA graph");
}

extern "C" void rlx_cu_graph_free(void *exec) {
  if (exec) cudaGraphExecDestroy((cudaGraphExec_t)exec);
}
