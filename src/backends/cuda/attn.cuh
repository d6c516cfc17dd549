/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Device helpers shared by the attention kernels (attention.cu: the forward's row kernels,
 * flash.cu: the tiled forward and backward, attention_bw.cu: the general backward): element
 * addressing of the three layouts, block-wide sums, float conversions and the score rule with
 * every mask kind (the CPU reference's, src/backends/cpu/ref/attention_util.c). */
#ifndef RLX_CUDA_ATTN_CUH
#define RLX_CUDA_ATTN_CUH

#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

/* Element (b, h, s, d) of an operand: kind 0 [B, H, S, D], 1 [B, S, H, D], 2 packed [B, S, H*D]. */
__device__ inline int64_t at(const rlx_cu_attn_view &v, int64_t b, int64_t h, int64_t s, int64_t d) {
  switch (v.kind) {
  case 0: return ((b * v.H + h) * v.S + s) * v.D + d;
  case 1: return ((b * v.S + s) * v.H + h) * v.D + d;
  default: return (b * v.S + s) * (v.H * v.D) + h * v.D + d;
  }
}
/* Elements between consecutive sequence rows of one (b, h): lane d of row s is at
 * at(v, b, h, 0, 0) + s * row_stride(v) + d in every layout. */
__device__ inline int64_t row_stride(const rlx_cu_attn_view &v) { return v.kind == 0 ? v.D : v.H * v.D; }

__device__ inline double to_d(float v) { return v; }
__device__ inline double to_d(double v) { return v; }
__device__ inline double to_d(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ inline double to_d(__half v) { return (double)__half2float(v); }

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ inline T from_f(float v);
template <> __device__ inline float from_f<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ inline __half from_f<__half>(float v) { return __float2half_rn(v); }

/* Visibility by position (None / Causal / SlidingWindow; the query sits at S_k - S_q + qi). */
__device__ inline bool attn_pos_visible(const rlx_cu_attn &p, int64_t qi, int64_t ki) {
  int64_t pos = p.Sk - p.Sq + qi;
  if (p.mask == RLX_MASK_CAUSAL) return ki <= pos;
  if (p.mask == RLX_MASK_SLIDING_WINDOW) return ki <= pos && ki >= pos - p.window;
  return true;
}

/* The score of (b, h, qi) against key ki from the raw dot product <q, k>, with every mask kind:
 * false when the key is hidden; *th = tanh(r / cap) for the soft-cap derivative (0 uncapped). */
__device__ inline bool attn_score(const rlx_cu_attn &p, int64_t b, int64_t h, int64_t qi, int64_t ki, double dot,
                                  double *sc, double *th) {
  if (!attn_pos_visible(p, qi, ki)) return false;
  if (p.mask == RLX_MASK_CUSTOM) {
    int64_t mi = p.per_query ? (b * p.Sq + qi) * p.Sk + ki : b * p.Sk + ki;
    if (ld_f(p.M, p.mask_dtype, mi) < 0.5) return false;
  }
  double r = dot * p.scale, t = 0;
  if (p.capped) {
    t = tanh(r / p.cap);
    r = p.cap * t;
  }
  if (p.mask == RLX_MASK_BIAS)
    r += ld_f(p.M, p.mask_dtype,
              b * p.bias_stride[0] + h * p.bias_stride[1] + qi * p.bias_stride[2] + ki * p.bias_stride[3]);
  *sc = r;
  *th = t;
  return true;
}

#endif
