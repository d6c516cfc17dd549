/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The codebook ("synth") kinds (cu_ext.h), the CPU reference's definitions in double: W[k, n] =
 * codebook[codes[k / D, n], k % D] (K = R D); SynthReconstruct writes W, SynthMatMul x . W,
 * SynthMatMulBackward dy . W^T (wrt Dx) or dcb[e, d] = sum over (k, n) with codes[k / D, n] = e
 * and k % D = d of (x^T dy)[k, n] (wrt Codebook). Products are direct sums in double in the
 * CPU's order (one thread per output element), so they round once, as the CPU does; the codebook
 * gradient adds each (k, n) term with a double atomic (then one rounding). A code outside
 * [0, num_entries) raises the kernel error flag (an index out of range) and reads entry 0.
 * Fields: len = D, C = NE, rows = M, S = K, N = N; G = codes' dtype, want_xh = x's dtype,
 * in_dtype the codebook's, qmode = dy's. */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__device__ inline int64_t code_at(const rlx_cu_ext &e, int64_t k, int64_t j, int *kerr) {
  int64_t v;
  const void *codes = e.mode == RLX_CU_EXT_SYNTH_REC ? e.in[0] : e.in[1];
  int64_t i = (k / e.len) * e.N + j;
  if (dt_is_int((int)e.G)) {
    v = ld_i(codes, (int)e.G, i);
  } else {
    double d = ld_f(codes, (int)e.G, i);
    v = (d == floor(d) && fabs(d) < 9.2e18) ? (int64_t)d : -1;
  }
  if (v < 0 || v >= e.C) {
    cu_raise(kerr, RLX_CU_KERR_INDEX);
    return 0;
  }
  return v;
}

__device__ inline double w_at(const rlx_cu_ext &e, int64_t k, int64_t j, int *kerr) {
  const void *cb = e.mode == RLX_CU_EXT_SYNTH_REC ? e.in[1] : e.in[2];
  return ld_f(cb, e.in_dtype, code_at(e, k, j, kerr) * e.len + k % e.len);
}

__global__ void synth_kernel(rlx_cu_ext e, int *kerr) {
  int64_t K = e.S, N = e.N, xt = e.want_xh, dt = e.qmode;
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < e.count; o += (int64_t)gridDim.x * blockDim.x) {
    double v = 0;
    if (e.mode == RLX_CU_EXT_SYNTH_REC) {
      v = w_at(e, o / N, o % N, kerr);
    } else if (e.mode == RLX_CU_EXT_SYNTH_MM) {
      int64_t i = o / N, j = o % N;
      for (int64_t k = 0; k < K; k++) v += ld_f(e.in[0], (int)xt, i * K + k) * w_at(e, k, j, kerr);
    } else if (e.mode == RLX_CU_EXT_SYNTH_BW_DX) {
      int64_t i = o / K, k = o % K;
      for (int64_t j = 0; j < N; j++) v += ld_f(e.in[3], (int)dt, i * N + j) * w_at(e, k, j, kerr);
    }
    st_f(e.out, e.dtype, o, v);
  }
}

__global__ void zero_kernel(double *acc, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    acc[i] = 0.0;
}

/* one thread per (k, n): g = sum_i x[i, k] dy[i, n] added onto dcb[code, k % D] */
__global__ void cb_grad_kernel(rlx_cu_ext e, double *acc, int *kerr) {
  int64_t K = e.S, N = e.N, M = e.rows;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < K * N; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t k = p / N, j = p % N;
    int64_t code = code_at(e, k, j, kerr);
    double g = 0;
    for (int64_t i = 0; i < M; i++) g += ld_f(e.in[0], e.want_xh, i * K + k) * ld_f(e.in[3], e.qmode, i * N + j);
    atomicAdd(&acc[code * e.len + k % e.len], g);
  }
}

__global__ void store_kernel(rlx_cu_ext e, const double *acc, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    st_f(e.out, e.dtype, i, acc[i]);
}

} // namespace

extern "C" rlx_status rlx_cu_synth_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->mode != RLX_CU_EXT_SYNTH_BW_CB) {
    if (e->count == 0) return RLX_OK;
    synth_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, c->kerr);
    return cu_launch_status("synth kernel");
  }
  int64_t n = e->C * e->len;
  if (n == 0) return RLX_OK;
  double *acc = (double *)e->scratch;
  zero_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(acc, n);
  RLX_TRY(cu_launch_status("synth zero kernel"));
  if (e->S * e->N > 0) {
    cb_grad_kernel<<<cu_blocks(e->S * e->N, 256), 256, 0, c->stream>>>(*e, acc, c->kerr);
    RLX_TRY(cu_launch_status("synth codebook gradient kernel"));
  }
  store_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(*e, acc, n);
  return cu_launch_status("synth store kernel");
}
