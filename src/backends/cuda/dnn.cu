/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Convolutions on cuDNN (9.x, its convolution API): the forward, the input gradient (backward
 * data) and the weight gradient (backward filter) of a convolution with symmetric padding, for
 * f32 / bf16 / f16. cuDNN is loaded at run time like the other libraries (libs.cu), but is
 * optional: where it is missing, or declines a geometry, the direct kernels of conv.cu run.
 * Plans (descriptors, the algorithm, a workspace of its own) are made at compile time, so a run
 * is one cuDNN call on the stream (capturable into a CUDA graph).
 *
 * Numerics: f32 with CUDNN_FMA_MATH (no TF32: the same fp32 policy as the MatMuls), 16-bit with
 * tensor cores; fp32 accumulation in both, rounded once to the output. The direct kernels sum in
 * double, so results differ from them by fp32 summation error. Only algorithms cuDNN reports
 * deterministic are taken. RLX_CUDA_CUDNN=0 turns the path off. */
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/dev.cuh"
#include "backends/cuda/libs.cuh"
#include "rlx/ops.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>


#define RLX_CUDNN_FUNCTIONS(X)                                                                                         \
  X(cudnnCreate)                                                                                                       \
  X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)                              \
      X(cudnnDestroyTensorDescriptor) X(cudnnSetTensorNdDescriptor) X(cudnnCreateFilterDescriptor)                     \
          X(cudnnDestroyFilterDescriptor) X(cudnnSetFilterNdDescriptor) X(cudnnCreateConvolutionDescriptor)            \
              X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolutionNdDescriptor) X(cudnnSetConvolutionGroupCount) \
                  X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7)                             \
                      X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)  \
                          X(cudnnGetConvolutionForwardWorkspaceSize) X(cudnnGetConvolutionBackwardDataWorkspaceSize)   \
                              X(cudnnGetConvolutionBackwardFilterWorkspaceSize) X(cudnnConvolutionForward)             \
                                  X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)

namespace {

struct dnn_fns {
#define RLX_DNN_FIELD(f) decltype(&f) fn_##f;
  RLX_CUDNN_FUNCTIONS(RLX_DNN_FIELD)
#undef RLX_DNN_FIELD
} g_dnn;
#define DNN(f) (g_dnn.fn_##f)
std::once_flag g_dnn_once;
bool g_dnn_ok;

void dnn_load() {
  void *h = rlx_cu_lib_open("cudnn", CUDNN_MAJOR);
  if (!h) return;
  bool ok = true;
#define RLX_DNN_FIND(f) ok = ok && (*(void **)&g_dnn.fn_##f = dlsym(h, #f)) != NULL;
  RLX_CUDNN_FUNCTIONS(RLX_DNN_FIND)
#undef RLX_DNN_FIND
  g_dnn_ok = ok;
}

bool dnn_available() {
  const char *e = getenv("RLX_CUDA_CUDNN");
  if (e && strcmp(e, "0") == 0) return false;
  std::call_once(g_dnn_once, dnn_load);
  return g_dnn_ok;
}

/* The first algorithm of cuDNN's heuristic order (r[0 .. got)) that ran, is deterministic and,
 * for f32, does not use tensor cores (no TF32); -1 when none is. */
template <typename Perf> int first_deterministic(const Perf *r, int got, int dtype) {
  for (int i = 0; i < got; i++)
    if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].determinism == CUDNN_DETERMINISTIC &&
        (dtype != RLX_F32 || r[i].mathType != CUDNN_TENSOR_OP_MATH))
      return (int)r[i].algo;
  return -1;
}

} // namespace

struct rlx_cu_dnn {
  int mode; /* rlx_cu_dnn_mode */
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  int algo;
  void *ws;
  size_t ws_bytes;
  const void *a, *b; /* operands as the call takes them */
  void *out;
};

extern "C" void rlx_cu_dnn_destroy(rlx_cu_dnn *p) {
  if (!p) return;
  if (p->x) DNN(cudnnDestroyTensorDescriptor)(p->x);
  if (p->y) DNN(cudnnDestroyTensorDescriptor)(p->y);
  if (p->w) DNN(cudnnDestroyFilterDescriptor)(p->w);
  if (p->conv) DNN(cudnnDestroyConvolutionDescriptor)(p->conv);
  if (p->ws) cudaFree(p->ws);
  free(p);
}

extern "C" void rlx_cu_dnn_ctx_release(rlx_cu_ctx *c) {
  if (c->dnn) DNN(cudnnDestroy)((cudnnHandle_t)c->dnn);
  c->dnn = NULL;
}

/* A plan for geometry g (the forward convolution's: x [N, Cin, in], w [Cout, Cin / G, k], y [N,
 * Cout, out]); *out stays NULL (and RLX_OK) where cuDNN is absent or declines. */
extern "C" rlx_status rlx_cu_dnn_create(rlx_cu_ctx *c, int mode, int dtype, int nsp, const rlx_cu_conv_geom *g,
                                        const void *a, const void *b, void *out_ptr, rlx_cu_dnn **out) {
  *out = NULL;
  cudnnDataType_t dt;
  switch (dtype) {
  case RLX_F32: dt = CUDNN_DATA_FLOAT; break;
  case RLX_BF16: dt = CUDNN_DATA_BFLOAT16; break;
  case RLX_F16: dt = CUDNN_DATA_HALF; break;
  default: return RLX_OK;
  }
  if (c->fp32_pedantic || (nsp != 2 && nsp != 3) || !dnn_available()) return RLX_OK;
  const int off = 3 - nsp;
  int pad[3], str[3], dil[3], xd[5], yd[5], wd[5], xs[5], ys[5];
  xd[0] = (int)g->N, xd[1] = (int)g->Cin, yd[0] = (int)g->N, yd[1] = (int)g->Cout;
  wd[0] = (int)g->Cout, wd[1] = (int)(g->Cin / g->G);
  int64_t nx = g->N * g->Cin, ny = g->N * g->Cout;
  for (int i = 0; i < nsp; i++) {
    const int j = off + i;
    /* symmetric padding only: the output size must be the one cuDNN derives (then the windows
     * are the ones of the begin padding, whatever the end padding was) */
    const int64_t span = g->in[j] + 2 * g->pb[j] - g->d[j] * (g->k[j] - 1) - 1;
    if (span < 0 || g->pb[j] < 0 || span / g->s[j] + 1 != g->out[j]) return RLX_OK;
    nx *= g->in[j], ny *= g->out[j];
    if (nx > INT32_MAX || ny > INT32_MAX) return RLX_OK; /* cuDNN's int dimensions and strides */
    pad[i] = (int)g->pb[j], str[i] = (int)g->s[j], dil[i] = (int)g->d[j];
    xd[2 + i] = (int)g->in[j], yd[2 + i] = (int)g->out[j], wd[2 + i] = (int)g->k[j];
  }
  const int nd = 2 + nsp;
  xs[nd - 1] = ys[nd - 1] = 1;
  for (int i = nd - 2; i >= 0; i--) xs[i] = xs[i + 1] * xd[i + 1], ys[i] = ys[i + 1] * yd[i + 1];
  if (!c->dnn) {
    cudnnHandle_t h;
    if (DNN(cudnnCreate)(&h) != CUDNN_STATUS_SUCCESS) return RLX_OK;
    c->dnn = h;
  }
  cudnnHandle_t h = (cudnnHandle_t)c->dnn; /* its stream is set at each run */
  rlx_cu_dnn *p = (rlx_cu_dnn *)calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  p->mode = mode;
  bool ok = DNN(cudnnCreateTensorDescriptor)(&p->x) == 0 && DNN(cudnnCreateTensorDescriptor)(&p->y) == 0 &&
            DNN(cudnnCreateFilterDescriptor)(&p->w) == 0 && DNN(cudnnCreateConvolutionDescriptor)(&p->conv) == 0;
  ok = ok && DNN(cudnnSetTensorNdDescriptor)(p->x, dt, nd, xd, xs) == 0;
  ok = ok && DNN(cudnnSetTensorNdDescriptor)(p->y, dt, nd, yd, ys) == 0;
  ok = ok && DNN(cudnnSetFilterNdDescriptor)(p->w, dt, CUDNN_TENSOR_NCHW, nd, wd) == 0;
  ok = ok && DNN(cudnnSetConvolutionNdDescriptor)(p->conv, nsp, pad, str, dil, CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT) == 0;
  ok = ok && DNN(cudnnSetConvolutionGroupCount)(p->conv, (int)g->G) == 0;
  const cudnnMathType_t math = dtype == RLX_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  ok = ok && DNN(cudnnSetConvolutionMathType)(p->conv, math) == 0;
  int got = 0;
  p->algo = -1;
  if (ok && mode == RLX_CU_DNN_FWD) {
    cudnnConvolutionFwdAlgoPerf_t r[8];
    ok = DNN(cudnnGetConvolutionForwardAlgorithm_v7)(h, p->x, p->w, p->conv, p->y, 8, &got, r) == 0;
    if (ok) p->algo = first_deterministic(r, got, dtype);
    ok = ok && p->algo >= 0 &&
         DNN(cudnnGetConvolutionForwardWorkspaceSize)(h, p->x, p->w, p->conv, p->y, (cudnnConvolutionFwdAlgo_t)p->algo,
                                                      &p->ws_bytes) == 0;
  } else if (ok && mode == RLX_CU_DNN_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t r[8];
    ok = DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7)(h, p->w, p->y, p->conv, p->x, 8, &got, r) == 0;
    if (ok) p->algo = first_deterministic(r, got, dtype);
    ok = ok && p->algo >= 0 &&
         DNN(cudnnGetConvolutionBackwardDataWorkspaceSize)(h, p->w, p->y, p->conv, p->x,
                                                           (cudnnConvolutionBwdDataAlgo_t)p->algo, &p->ws_bytes) == 0;
  } else if (ok) {
    cudnnConvolutionBwdFilterAlgoPerf_t r[8];
    ok = DNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7)(h, p->x, p->y, p->conv, p->w, 8, &got, r) == 0;
    if (ok) p->algo = first_deterministic(r, got, dtype);
    ok = ok && p->algo >= 0 &&
         DNN(cudnnGetConvolutionBackwardFilterWorkspaceSize)(
             h, p->x, p->y, p->conv, p->w, (cudnnConvolutionBwdFilterAlgo_t)p->algo, &p->ws_bytes) == 0;
  }
  if (ok && p->ws_bytes && cudaMalloc(&p->ws, p->ws_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    p->ws = NULL;
    ok = false;
  }
  if (!ok) {
    rlx_cu_dnn_destroy(p);
    return RLX_OK;
  }
  p->a = a;
  p->b = b;
  p->out = out_ptr;
  const char *lg = getenv("RLX_CUDA_FOLD_LOG");
  if (lg && *lg && strcmp(lg, "0") != 0)
    fprintf(stderr, "cuda: cuDNN convolution (%s, %s), algorithm %d, %zu bytes of workspace\n",
            mode == RLX_CU_DNN_FWD        ? "forward"
            : mode == RLX_CU_DNN_BWD_DATA ? "backward data"
                                          : "backward filter",
            rlx_dtype_name((rlx_dtype)dtype), p->algo, p->ws_bytes);
  *out = p;
  return RLX_OK;
}

extern "C" rlx_status rlx_cu_dnn_run(rlx_cu_ctx *c, const rlx_cu_dnn *p) {
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = (cudnnHandle_t)c->dnn;
  cudnnStatus_t s = DNN(cudnnSetStream)(h, c->stream); /* the capture stream while capturing */
  if (s != CUDNN_STATUS_SUCCESS) {
  } else if (p->mode == RLX_CU_DNN_FWD) /* a = x, b = w */
    s = DNN(cudnnConvolutionForward)(h, &one, p->x, p->a, p->w, p->b, p->conv, (cudnnConvolutionFwdAlgo_t)p->algo,
                                     p->ws, p->ws_bytes, &zero, p->y, p->out);
  else if (p->mode == RLX_CU_DNN_BWD_DATA) /* a = dy, b = w */
    s = DNN(cudnnConvolutionBackwardData)(h, &one, p->w, p->b, p->y, p->a, p->conv,
                                          (cudnnConvolutionBwdDataAlgo_t)p->algo, p->ws, p->ws_bytes, &zero, p->x,
                                          p->out);
  else /* a = x, b = dy */
    s = DNN(cudnnConvolutionBackwardFilter)(h, &one, p->x, p->a, p->y, p->b, p->conv,
                                            (cudnnConvolutionBwdFilterAlgo_t)p->algo, p->ws, p->ws_bytes, &zero, p->w,
                                            p->out);
  if (s == CUDNN_STATUS_SUCCESS) return RLX_OK;
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cuDNN convolution failed: %s", DNN(cudnnGetErrorString)(s));
}

#else /* built without cuDNN's headers: every convolution takes the direct kernels */

extern "C" void rlx_cu_dnn_destroy(rlx_cu_dnn *p) { (void)p; }
extern "C" void rlx_cu_dnn_ctx_release(rlx_cu_ctx *c) { (void)c; }
extern "C" rlx_status rlx_cu_dnn_create(rlx_cu_ctx *c, int mode, int dtype, int nsp, const rlx_cu_conv_geom *g,
                                        const void *a, const void *b, void *out_ptr, rlx_cu_dnn **out) {
  (void)c, (void)mode, (void)dtype, (void)nsp, (void)g, (void)a, (void)b, (void)out_ptr;
  *out = NULL;
  return RLX_OK;
}
extern "C" rlx_status rlx_cu_dnn_run(rlx_cu_ctx *c, const rlx_cu_dnn *p) {
  (void)c, (void)p;
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: a cuDNN plan in a build without cuDNN%s", "");
}

#endif
