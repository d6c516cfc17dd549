/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Backward kernels with the CPU reference's numerics (src/backends/cpu/ref/backward_*.c): the
 * elementwise activation backward ops, the softmax cross-entropy losses and their backward, the
 * LayerNorm / RmsNorm backward ops over the last axis, max-pool backward and the convolution
 * weight gradient. Everything is computed in double and rounded once to the output dtype. */
#include <string.h>

#include "backends/cuda/act_f32.cuh"
#include "backends/cuda/colsum.cuh"
#include "rlx/ops.h"

#define BW_THREADS 256

/* ---- activation backward ---- */
__device__ inline double bw_sigmoid(double x) {
  if (x >= 0) return 1 / (1 + exp(-x));
  double e = exp(x);
  return e / (1 + e);
}
__device__ inline double bw_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

__device__ double act_derivative(int k, double x) {
  const double inv_sqrt_2pi = 0.39894228040143267794, two_over_sqrt_pi = 1.12837916709551257390;
  switch (k) {
  case RLX_ACT_GELU: return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * inv_sqrt_2pi * exp(-0.5 * x * x);
  case RLX_ACT_GELU_APPROX: {
    const double c = 0.79788456080286535588, a = 0.044715;
    double t = tanh(c * (x + a * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * a * x * x);
  }
  case RLX_ACT_SILU: {
    double s = bw_sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
  }
  case RLX_ACT_SIGMOID: {
    double s = bw_sigmoid(x);
    return s * (1.0 - s);
  }
  case RLX_ACT_TANH: {
    double t = tanh(x);
    return 1.0 - t * t;
  }
  case RLX_ACT_EXP: return exp(x);
  case RLX_ACT_LOG: return 1.0 / x;
  case RLX_ACT_NEG: return -1.0;
  case RLX_ACT_ABS: return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x;
  case RLX_ACT_SIN: return cos(x);
  case RLX_ACT_COS: return -sin(x);
  case RLX_ACT_TAN: {
    double t = tan(x);
    return 1.0 + t * t;
  }
  case RLX_ACT_ATAN: return 1.0 / (1.0 + x * x);
  case RLX_ACT_RECIP: return -1.0 / (x * x);
  case RLX_ACT_ROUND: return 1.0;
  case RLX_ACT_FLOOR:
  case RLX_ACT_CEIL:
  case RLX_ACT_SIGN: return 0.0;
  case RLX_ACT_SOFTPLUS: return bw_sigmoid(x);
  case RLX_ACT_ELU: return x > 0 ? 1.0 : exp(x);
  case RLX_ACT_ERF: return two_over_sqrt_pi * exp(-x * x);
  case RLX_ACT_HARD_SWISH: return x < -3.0 ? 0.0 : x <= 3.0 ? (2.0 * x + 3.0) / 6.0 : 1.0;
  case RLX_ACT_HARD_SIGMOID: return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0;
  case RLX_ACT_MISH: {
    double t = tanh(bw_softplus(x));
    return t + x * (1.0 - t * t) * bw_sigmoid(x);
  }
  case RLX_ACT_SOFTSIGN: {
    double d = 1.0 + fabs(x);
    return 1.0 / (d * d);
  }
  case RLX_ACT_LOG_SIGMOID: return bw_sigmoid(-x);
  default: return nan("");
  }
}

__device__ inline double act_backward(int k, double x, double dy) {
  switch (k) {
  case RLX_ACT_RELU: return x > 0 ? dy : 0.0;
  case RLX_ACT_SQRT: {
    double s = sqrt(x);
    return s <= 0 ? 0.0 : dy * 0.5 / s;
  }
  case RLX_ACT_RSQRT: {
    double s = sqrt(x);
    return s <= 0 ? 0.0 : dy * -0.5 / (x * s);
  }
  default: return dy * act_derivative(k, x);
  }
}

__global__ void act_backward_kernel(int act, int t, const void *x, const void *dy, void *dx, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    if (act < 0 && dt_is_int(t)) {
      st_i(dx, t, i, ld_i(x, t, i) > 0 ? ld_i(dy, t, i) : 0);
    } else if (t == RLX_F32 && (act < 0 || act == RLX_ACT_RELU)) {
      float xv = ((const float *)x)[i];
      ((float *)dx)[i] = xv > 0 ? ((const float *)dy)[i] : 0.0f;
    } else {
      st_f(dx, t, i, act_backward(act < 0 ? RLX_ACT_RELU : act, ld_f(x, t, i), ld_f(dy, t, i)));
    }
  }
}

/* dx of one bf16 / f16 / f32 element: act_f32.cuh's float derivative where it has one (GELU,
 * SiLU: dy * f'(x) in float, rounded once), else the double formula */
/* the double formula out of line (inlined per element it made the kernel 10k PTX lines) */
__device__ __noinline__ double typed_act_backward_slow(int act, double x, double dy) { return act_backward(act, x, dy); }
template <typename T> __device__ inline T typed_act_backward(int act, T x, T dy) {
  float d;
  if (act_f32_derivative(act, (float)ld_t(x), &d)) return st_t<T>((double)((float)ld_t(dy) * d));
  return st_t<T>(typed_act_backward_slow(act, ld_t(x), ld_t(dy)));
}
/* Float dtypes typed at compile time, 4 elements per thread (FULL: n a multiple of 4 and the
 * pointers aligned to 4 elements, one 8-byte (16-bit dtypes) or 16-byte (f32) access per
 * operand). f32 takes it by default (not under RLX_CUDA_FP32_PEDANTIC): the float derivatives of
 * GELU / SiLU, the double formula for the rest (the double erf made the f32 GPT-2 block's GELU
 * backward FP64-bound on the H200, 178 us for 25M elements). */
template <typename T, bool FULL>
__global__ void act_backward_typed(int act, const T *x, const T *dy, T *dx, int64_t n) {
  using V = vec4_of<T>;
  const int64_t groups = (n + 3) / 4, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < groups; g += step) {
    int64_t e = 4 * g;
    if (FULL) {
      T xv[4], gv[4], r[4];
      V u = *(const V *)(x + e), w = *(const V *)(dy + e);
      memcpy(xv, &u, sizeof(V));
      memcpy(gv, &w, sizeof(V));
#pragma unroll
      for (int c = 0; c < 4; c++) r[c] = typed_act_backward<T>(act, xv[c], gv[c]);
      memcpy(&u, r, sizeof(V));
      *(V *)(dx + e) = u;
    } else {
      for (int c = 0; c < 4 && e + c < n; c++) dx[e + c] = typed_act_backward<T>(act, x[e + c], dy[e + c]);
    }
  }
}
template <typename T>
static void act_backward_launch(int act, const void *x, const void *dy, void *dx, int64_t n, cudaStream_t s) {
  unsigned blocks = cu_blocks((n + 3) / 4, BW_THREADS);
  const uintptr_t al = 4 * sizeof(T) - 1;
  if (n % 4 == 0 && ((uintptr_t)x & al) == 0 && ((uintptr_t)dy & al) == 0 && ((uintptr_t)dx & al) == 0)
    act_backward_typed<T, true><<<blocks, BW_THREADS, 0, s>>>(act, (const T *)x, (const T *)dy, (T *)dx, n);
  else
    act_backward_typed<T, false><<<blocks, BW_THREADS, 0, s>>>(act, (const T *)x, (const T *)dy, (T *)dx, n);
}

extern "C" rlx_status rlx_cu_act_backward(rlx_cu_ctx *c, int act, int dtype, const void *x, const void *dy, void *dx,
                                          int64_t n) {
  if (n == 0) return RLX_OK;
  if ((dtype == RLX_BF16 || dtype == RLX_F16) && act >= 0) {
    if (dtype == RLX_BF16)
      act_backward_launch<__nv_bfloat16>(act, x, dy, dx, n, c->stream);
    else
      act_backward_launch<__half>(act, x, dy, dx, n, c->stream);
    return cu_launch_status("activation backward kernel (16-bit)");
  }
  if (dtype == RLX_F32 && act >= 0 && !c->fp32_pedantic) {
    act_backward_launch<float>(act, x, dy, dx, n, c->stream);
    return cu_launch_status("activation backward kernel (f32)");
  }
  act_backward_kernel<<<cu_blocks(n, BW_THREADS), BW_THREADS, 0, c->stream>>>(act, dtype, x, dy, dx, n);
  return cu_launch_status("activation backward kernel");
}

/* act_backward_typed's values for [rows, C], written and summed over the rows in the layout of
 * colsum.cuh (the Reduce's two-column kernel reading dx: the same doubles in the same order), 4
 * rows' loads issued before they are used. */
template <typename T>
__global__ void __launch_bounds__(256)
    act_backward_colsum_kernel(int act, const T *x, const T *dy, T *dx, int64_t R, int64_t C, int64_t S, acc_t *part) {
  __shared__ acc_t sh[8][65];
  const int64_t chunk = (R + S - 1) / S, lo = blockIdx.y * chunk;
  const int64_t hi = lo + chunk < R ? lo + chunk : R, o = blockIdx.x * 64 + 2 * threadIdx.x;
  double s0 = 0, c0 = 0, s1 = 0, c1 = 0;
  if (o < C) {
    int64_t j = lo + threadIdx.y;
    for (; j + 24 < hi; j += 32) {
      T xv[4][2], gv[4][2];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        ld2_t<T>(x + (j + 8 * k) * C + o, xv[k][0], xv[k][1]);
        ld2_t<T>(dy + (j + 8 * k) * C + o, gv[k][0], gv[k][1]);
      }
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const T r0 = typed_act_backward<T>(act, xv[k][0], gv[k][0]),
                r1 = typed_act_backward<T>(act, xv[k][1], gv[k][1]);
        st2_t<T>(dx + (j + 8 * k) * C + o, r0, r1);
        neumaier_add(s0, c0, ld_t(r0));
        neumaier_add(s1, c1, ld_t(r1));
      }
    }
    for (; j < hi; j += 8) {
      T x0, x1, g0, g1;
      ld2_t<T>(x + j * C + o, x0, x1);
      ld2_t<T>(dy + j * C + o, g0, g1);
      const T r0 = typed_act_backward<T>(act, x0, g0), r1 = typed_act_backward<T>(act, x1, g1);
      st2_t<T>(dx + j * C + o, r0, r1);
      neumaier_add(s0, c0, ld_t(r0));
      neumaier_add(s1, c1, ld_t(r1));
    }
  }
  colsum2_block_store(sh, s0, c0, s1, c1, C, part);
}

extern "C" int rlx_cu_act_colsum_fits(const rlx_cu_ctx *c, int act, int dtype) {
  return act >= 0 && (dtype == RLX_BF16 || dtype == RLX_F16 || (dtype == RLX_F32 && !c->fp32_pedantic));
}

extern "C" rlx_status rlx_cu_act_backward_colsum(rlx_cu_ctx *c, int act, int dtype, const void *x, const void *dy,
                                                 void *dx, int64_t rows, int64_t C, int red_op, void *colsum) {
  const void *ptrs[3] = {x, dy, dx};
  if (!rlx_cu_act_colsum_fits(c, act, dtype) || !rlx_cu_colsum_fits(red_op, dtype, rows, C, ptrs, 3))
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: the fused activation backward and column sum does not take %s",
                      rlx_dtype_name((rlx_dtype)dtype));
  const int64_t S = cu_colsum2_chunks(rows, C);
  void *part;
  RLX_TRY(cu_scratch(c, (size_t)(S * C) * sizeof(acc_t), &part));
  dim3 grid((unsigned)((C + 63) / 64), (unsigned)S), block(32, 8);
  if (dtype == RLX_F32)
    act_backward_colsum_kernel<float><<<grid, block, 0, c->stream>>>(act, (const float *)x, (const float *)dy,
                                                                     (float *)dx, rows, C, S, (acc_t *)part);
  else if (dtype == RLX_BF16)
    act_backward_colsum_kernel<__nv_bfloat16><<<grid, block, 0, c->stream>>>(
        act, (const __nv_bfloat16 *)x, (const __nv_bfloat16 *)dy, (__nv_bfloat16 *)dx, rows, C, S, (acc_t *)part);
  else
    act_backward_colsum_kernel<__half><<<grid, block, 0, c->stream>>>(act, (const __half *)x, (const __half *)dy,
                                                                      (__half *)dx, rows, C, S, (acc_t *)part);
  RLX_TRY(cu_launch_status("activation backward with column sums kernel"));
  return cu_colsum2_merge(c, dtype, red_op, rows, C, S, (const acc_t *)part, colsum);
}

/* ---- block-wide max of doubles (the sum is cu_block_sum, dev.cuh) ---- */
__device__ inline double block_max(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) {
    double u = __shfl_down_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  double r = -INFINITY;
  int nw = (blockDim.x + 31) >> 5;
  for (int i = 0; i < nw; i++) r = sh[i] > r ? sh[i] : r;
  return r;
}

/* label r as an index in [0, C): integers, or floats holding integers */
__device__ inline bool read_label(const void *p, int t, int64_t r, int64_t C, int64_t *v) {
  if (dt_is_int(t)) {
    *v = ld_i(p, t, r);
  } else {
    double d = ld_f(p, t, r);
    if (!(d == floor(d)) || fabs(d) >= 9.2e18) return false;
    *v = (int64_t)d;
  }
  return *v >= 0 && *v < C;
}

/* One block per row: max (NaN noted), log-sum-exp, then the mode's result. */
__global__ void sce_kernel(int mode, int t, const void *logits, const void *tgt, int lt, const void *dloss, int64_t N,
                           int64_t C, void *out, int *kerr) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
    int64_t base = r * C;
    double m = -INFINITY, nan_seen = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      double v = ld_f(logits, t, base + c);
      if (v != v)
        nan_seen = 1;
      else if (v > m)
        m = v;
    }
    m = block_max(m, sh);
    nan_seen = cu_block_sum(nan_seen, sh);
    double lse;
    if (nan_seen > 0 || C == 0 || m == -INFINITY || m == INFINITY) {
      lse = nan_seen > 0 ? nan("") : C == 0 ? -INFINITY : m;
    } else {
      double s = 0;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += exp(ld_f(logits, t, base + c) - m);
      lse = m + log(cu_block_sum(s, sh));
    }
    if (mode == 0) {
      double dot = 0;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dot += ld_f(tgt, t, base + c) * ld_f(logits, t, base + c);
      dot = cu_block_sum(dot, sh);
      if (threadIdx.x == 0) st_f(out, t, r, lse - dot);
    } else {
      int64_t label = 0;
      bool ok = read_label(tgt, lt, r, C, &label);
      if (!ok) {
        if (threadIdx.x == 0) cu_raise(kerr, RLX_CU_KERR_INDEX);
        label = -1;
      }
      if (mode == 1) {
        if (threadIdx.x == 0) st_f(out, t, r, ok ? lse - ld_f(logits, t, base + label) : nan(""));
      } else {
        double g = ld_f(dloss, t, r);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
          double p = exp(ld_f(logits, t, base + c) - lse);
          st_f(out, t, base + c, (p - (c == label ? 1.0 : 0.0)) * g);
        }
      }
    }
    __syncthreads();
  }
}

extern "C" rlx_status rlx_cu_sce(rlx_cu_ctx *c, int mode, int dtype, const void *logits, const void *tgt, int lab_dtype,
                                 const void *dloss, int64_t N, int64_t C, void *out) {
  if (N == 0) return RLX_OK;
  unsigned blocks = (unsigned)(N < 65535 * 4 ? N : 65535 * 4);
  int threads = C >= 256 ? 256 : C > 32 ? 128 : 32;
  sce_kernel<<<blocks, threads, 0, c->stream>>>(mode, dtype, logits, tgt, lab_dtype, dloss, N, C, out, c->kerr);
  return cu_launch_status("softmax cross-entropy kernel");
}

/* ---- LayerNorm / RmsNorm backward (last axis) ---- */
/* mean and r = 1/sqrt(var + eps) of a row (two-pass, biased variance; rms: mean 0). */
__device__ inline void row_stats(int t, const void *x, int64_t base, int64_t C, double eps, int rms, double *sh,
                                 double *mean, double *r) {
  double m = 0;
  if (!rms) {
    double s = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += ld_f(x, t, base + c);
    m = cu_block_sum(s, sh) / (double)C;
  }
  double v = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    double d = ld_f(x, t, base + c) - m;
    v += d * d;
  }
  v = cu_block_sum(v, sh);
  *mean = m;
  *r = 1.0 / sqrt(v / (double)C + eps);
}

__global__ void norm_dx_kernel(int rms, int t, const void *x, const void *gamma, const void *dy, int64_t rows,
                               int64_t C, double eps, void *out) {
  __shared__ double sh[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = row * C;
    double mean, r;
    row_stats(t, x, base, C, eps, rms, sh, &mean, &r);
    double ms = 0, msx = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      double s = ld_f(dy, t, base + c) * ld_f(gamma, t, c), xh = (ld_f(x, t, base + c) - mean) * r;
      ms += s;
      msx += s * xh;
    }
    ms = cu_block_sum(ms, sh) / (double)C;
    msx = cu_block_sum(msx, sh) / (double)C;
    if (rms) ms = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      double s = ld_f(dy, t, base + c) * ld_f(gamma, t, c), xh = (ld_f(x, t, base + c) - mean) * r;
      st_f(out, t, base + c, r * (s - ms - xh * msx));
    }
    __syncthreads();
  }
}

__global__ void norm_stats_kernel(int rms, int t, const void *x, int64_t rows, int64_t C, double eps, double *st) {
  __shared__ double sh[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    double mean, r;
    row_stats(t, x, row * C, C, eps, rms, sh, &mean, &r);
    if (threadIdx.x == 0) {
      st[2 * row] = mean;
      st[2 * row + 1] = r;
    }
    __syncthreads();
  }
}

/* one thread per column: sum over rows of dy * xh (want_xh) or dy */
__global__ void norm_param_kernel(int want_xh, int t, const void *x, const void *dy, int64_t rows, int64_t C,
                                  const double *st, void *out) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
    double acc = 0;
    for (int64_t r = 0; r < rows; r++) {
      double g = ld_f(dy, t, r * C + c);
      acc += want_xh ? g * (ld_f(x, t, r * C + c) - st[2 * r]) * st[2 * r + 1] : g;
    }
    st_f(out, t, c, acc);
  }
}

/* The same over row chunks: block (cb, s) sums 32 columns over chunk s of the rows with 8 row
 * lanes (coalesced reads), merged in lane order into part[s * C + c]; norm_param_merge adds the
 * chunks in order (deterministic). */
__global__ void norm_param_cols_kernel(int want_xh, int t, const void *x, const void *dy, int64_t rows, int64_t C,
                                       const double *st, int64_t S, double *part) {
  __shared__ double sh[8][33];
  int64_t c = blockIdx.x * 32 + threadIdx.x, chunk = (rows + S - 1) / S, lo = blockIdx.y * chunk;
  int64_t hi = lo + chunk < rows ? lo + chunk : rows;
  double acc = 0;
  if (c < C)
    for (int64_t r = lo + threadIdx.y; r < hi; r += 8) {
      double g = ld_f(dy, t, r * C + c);
      acc += want_xh ? g * (ld_f(x, t, r * C + c) - st[2 * r]) * st[2 * r + 1] : g;
    }
  sh[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    double tot = 0;
    for (int k = 0; k < 8; k++) tot += sh[k][threadIdx.x];
    part[blockIdx.y * C + c] = tot;
  }
}
/* The same for f32 / 16-bit x and dy with the dtype fixed at compile time: two neighbouring
 * columns per thread (one 8- or 4-byte load of each operand; a warp reads 64 columns), 8 rows'
 * loads issued before they are summed, the same row order per lane and the same lane-ordered
 * partials (the one-column kernel took 57 us per LayerNorm gamma gradient of the bf16 GPT-2
 * block on the H200). */
template <typename T, bool XH, bool BETA>
__global__ void __launch_bounds__(256)
    norm_param_cols2_kernel(const T *x, const T *dy, int64_t rows, int64_t C, const double *st, int64_t S, double *part,
                            acc_t *beta_part) {
  __shared__ double sh[8][65];
  const int64_t c = blockIdx.x * 64 + 2 * threadIdx.x, chunk = (rows + S - 1) / S, lo = blockIdx.y * chunk;
  const int64_t hi = lo + chunk < rows ? lo + chunk : rows;
  double a0 = 0, a1 = 0;
  double b0 = 0, bc0 = 0, b1 = 0, bc1 = 0; /* BETA: dy's column sums, as the Reduce makes them */
  if (c < C) {
    int64_t r = lo + threadIdx.y;
    for (; r + 56 < hi; r += 64) {
      double g[8][2], xv[8][2];
#pragma unroll
      for (int k = 0; k < 8; k++) {
        ld2_d<T>(dy + (r + 8 * k) * C + c, g[k][0], g[k][1]);
        if (XH) ld2_d<T>(x + (r + 8 * k) * C + c, xv[k][0], xv[k][1]);
      }
#pragma unroll
      for (int k = 0; k < 8; k++) {
        if (BETA) {
          neumaier_add(b0, bc0, g[k][0]);
          neumaier_add(b1, bc1, g[k][1]);
        }
        if (XH) {
          const double m = st[2 * (r + 8 * k)], rs = st[2 * (r + 8 * k) + 1];
          a0 += g[k][0] * (xv[k][0] - m) * rs;
          a1 += g[k][1] * (xv[k][1] - m) * rs;
        } else {
          a0 += g[k][0];
          a1 += g[k][1];
        }
      }
    }
    for (; r < hi; r += 8) {
      double g0, g1, x0 = 0, x1 = 0;
      ld2_d<T>(dy + r * C + c, g0, g1);
      if (BETA) {
        neumaier_add(b0, bc0, g0);
        neumaier_add(b1, bc1, g1);
      }
      if (XH) {
        ld2_d<T>(x + r * C + c, x0, x1);
        a0 += g0 * (x0 - st[2 * r]) * st[2 * r + 1];
        a1 += g1 * (x1 - st[2 * r]) * st[2 * r + 1];
      } else {
        a0 += g0;
        a1 += g1;
      }
    }
  }
  sh[threadIdx.y][2 * threadIdx.x] = a0;
  sh[threadIdx.y][2 * threadIdx.x + 1] = a1;
  __syncthreads();
  const int t = threadIdx.y * 32 + threadIdx.x;
  if (t < 64 && blockIdx.x * 64 + t < C) {
    double tot = 0;
    for (int k = 0; k < 8; k++) tot += sh[k][t];
    part[blockIdx.y * C + blockIdx.x * 64 + t] = tot;
  }
  if (BETA) {
    __shared__ acc_t shb[8][65];
    colsum2_block_store(shb, b0, bc0, b1, bc1, C, beta_part);
  }
}
template <typename T>
static void norm_param_cols2_launch(bool xh, const void *x, const void *dy, int64_t rows, int64_t C, const void *st,
                                    int64_t S, void *part, void *beta_part, dim3 grid, cudaStream_t s) {
  const T *xt = (const T *)x, *dt = (const T *)dy;
  const double *stt = (const double *)st;
  double *pt = (double *)part;
  acc_t *bt = (acc_t *)beta_part;
  if (xh && beta_part)
    norm_param_cols2_kernel<T, true, true><<<grid, dim3(32, 8), 0, s>>>(xt, dt, rows, C, stt, S, pt, bt);
  else if (xh)
    norm_param_cols2_kernel<T, true, false><<<grid, dim3(32, 8), 0, s>>>(xt, dt, rows, C, stt, S, pt, bt);
  else
    norm_param_cols2_kernel<T, false, false><<<grid, dim3(32, 8), 0, s>>>(xt, dt, rows, C, stt, S, pt, bt);
}

/* 32 columns x 8 lanes per block: lane y sums chunks y, y + 8, ... in order, then the lanes in
 * lane order (deterministic) */
__global__ void norm_param_merge_kernel(int t, int64_t C, int64_t S, const double *part, void *out) {
  __shared__ double sh[8][33];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  double tot = 0;
  if (c < C)
    for (int64_t s = threadIdx.y; s < S; s += 8) tot += part[s * C + c];
  sh[threadIdx.y][threadIdx.x] = tot;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    double all = 0;
    for (int k = 0; k < 8; k++) all += sh[k][threadIdx.x];
    st_f(out, t, c, all);
  }
}

/* dx for rows of up to 32 * PER elements (a multiple of 4): one warp per row, x and dy * gamma
 * held in registers (read once), norm_dx_kernel's double formula with warp-shuffle sums. Each
 * lane holds 4 consecutive elements of every 128-element chunk (one 8- or 16-byte access) and
 * sums them in the order of the forward's norm_warp_kernel (reduce.cu), so the row statistics
 * here, in norm_stats_warp_kernel and in the forward have the same bits (the forward can hand
 * them to the gamma step: lower_fold.c). The registers hold floats where that is exact (x of f32
 * / 16-bit rows, dy * gamma of 16-bit rows: a product of two 8- or 11-bit significands), else
 * doubles: with doubles throughout the kernel took 196 registers (one block per SM) and 60 us
 * for the bf16 block's [8192, 768] rows on the H200. */
template <typename T> struct norm_bw_regs {
  typedef float X;  /* x */
  typedef double S; /* dy * gamma */
};
template <> struct norm_bw_regs<double> {
  typedef double X;
  typedef double S;
};
template <> struct norm_bw_regs<__nv_bfloat16> {
  typedef float X;
  typedef float S;
};
template <> struct norm_bw_regs<__half> {
  typedef float X;
  typedef float S;
};
/* Row `x` (C elements, 4 consecutive per lane per 128-element chunk) into registers, and its
 * statistics as the forward's norm_warp_kernel sums them: m (0 for RmsNorm) and r = 1 / sqrt(var
 * + eps); lanes past C hold 0. */
template <typename T, typename XR, int NC>
__device__ inline void norm_row_stats(const T *x, int lane, int C, int rms, double eps, XR (&xv)[NC][4], double &m,
                                      double &r) {
  m = 0;
#pragma unroll
  for (int i = 0; i < NC; i++) {
    const int k = 128 * i + 4 * lane;
    if (k < C) {
      T xt[4];
      ld4_t<T>(x + k, xt);
#pragma unroll
      for (int c = 0; c < 4; c++) {
        xv[i][c] = (XR)ld_t(xt[c]);
        m += xv[i][c];
      }
    } else {
#pragma unroll
      for (int c = 0; c < 4; c++) xv[i][c] = (XR)0;
    }
  }
  m = rms ? 0.0 : warp_sum_d(m) / (double)C;
  double v = 0;
#pragma unroll
  for (int i = 0; i < NC; i++)
    if (128 * i + 4 * lane < C)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const double d = xv[i][c] - m;
        v += d * d;
      }
  r = 1.0 / sqrt(warp_sum_d(v) / (double)C + eps);
}
template <typename T, int PER>
__global__ void __launch_bounds__(256)
    norm_dx_warp_kernel(int rms, const T *x, const T *gamma, const T *dy, int64_t rows, int C, double eps, T *out,
                        double *st_out, const T *add) {
  typedef typename norm_bw_regs<T>::X XR;
  typedef typename norm_bw_regs<T>::S SR;
  constexpr int NC = PER / 4; /* 128-element chunks */
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
    const int64_t base = row * C;
    XR xv[NC][4];
    SR sv[NC][4];
#pragma unroll
    for (int i = 0; i < NC; i++) { /* dy * gamma, loaded before the statistics' shuffles */
      const int k = 128 * i + 4 * lane;
      if (k < C) {
        T dt[4], gt[4];
        ld4_t<T>(dy + base + k, dt);
        ld4_t<T>(gamma + k, gt);
#pragma unroll
        for (int c = 0; c < 4; c++) sv[i][c] = (SR)(ld_t(dt[c]) * ld_t(gt[c]));
      } else {
#pragma unroll
        for (int c = 0; c < 4; c++) sv[i][c] = (SR)0;
      }
    }
    double m, r;
    norm_row_stats<T, XR, NC>(x + base, lane, C, rms, eps, xv, m, r);
    /* the added tensor's row, loaded while the sums below are reduced (loaded one by one at the
     * stores, the f32 GPT-2 block's dx + residual kernel took twice its time) */
    T av[sizeof(T) == 4 ? NC : 1][4];
    if constexpr (sizeof(T) == 4)
      if (add) {
#pragma unroll
        for (int i = 0; i < NC; i++)
          if (128 * i + 4 * lane < C) ld4_t<T>(add + base + 128 * i + 4 * lane, av[i]);
      }
    if (st_out && lane == 0) { /* norm_stats_warp_kernel's values */
      st_out[2 * row] = m;
      st_out[2 * row + 1] = r;
    }
    double ms = 0, msx = 0;
#pragma unroll
    for (int i = 0; i < NC; i++)
#pragma unroll
      for (int c = 0; c < 4; c++) {
        ms += sv[i][c];
        msx += sv[i][c] * ((xv[i][c] - m) * r);
      }
    ms = rms ? 0.0 : warp_sum_d(ms) / (double)C;
    msx = warp_sum_d(msx) / (double)C;
#pragma unroll
    for (int i = 0; i < NC; i++) {
      const int k = 128 * i + 4 * lane;
      if (k >= C) continue;
      T o[4];
#pragma unroll
      for (int c = 0; c < 4; c++) {
        o[c] = st_t<T>(r * (sv[i][c] - ms - ((xv[i][c] - m) * r) * msx));
        if constexpr (sizeof(T) == 4) /* f32: the Add's float sum */
          if (add) o[c] = o[c] + av[i][c];
      }
      st4_t<T>(out + base + k, o);
    }
  }
}

/* row_stats for rows of up to 32 * PER elements (a multiple of 4) of a typed float dtype: one
 * warp per row, the row read once into registers in norm_dx_warp_kernel's layout and order (the
 * block-per-row kernel took 35 us for [8192, 768] bf16). */
template <typename T, int PER>
__global__ void __launch_bounds__(256)
    norm_stats_warp_kernel(int rms, const T *x, int64_t rows, int C, double eps, double *st) {
  typedef typename norm_bw_regs<T>::X XR;
  constexpr int NC = PER / 4;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
    XR xv[NC][4];
    double m, r;
    norm_row_stats<T, XR, NC>(x + row * C, lane, C, rms, eps, xv, m, r);
    if (lane == 0) {
      st[2 * row] = m;
      st[2 * row + 1] = r;
    }
  }
}

/* Launches KERNEL<T, PER> over `rows` rows of C <= 1024 elements, one warp per row: PER = 8, 16,
 * 24 or 32 lanes' worth of registers, blocks of 2 warps, so that as many warps fit an SM as
 * their registers allow (these kernels take 64-210 registers). */
#define RLX_NORM_WARPS 2
#define RLX_NORM_PER_DISPATCH(KERNEL, rows, C, ...)                                  \
  do {                                                                               \
    int64_t blocks = ((rows) + RLX_NORM_WARPS - 1) / RLX_NORM_WARPS;                 \
    if (blocks > 65535LL * 32) blocks = 65535LL * 32;                                \
    if ((C) <= 256)                                                                  \
      KERNEL<T, 8><<<(unsigned)blocks, 32 * RLX_NORM_WARPS, 0, s>>>(__VA_ARGS__);  \
    else if ((C) <= 512)                                                             \
      KERNEL<T, 16><<<(unsigned)blocks, 32 * RLX_NORM_WARPS, 0, s>>>(__VA_ARGS__); \
    else if ((C) <= 768)                                                             \
      KERNEL<T, 24><<<(unsigned)blocks, 32 * RLX_NORM_WARPS, 0, s>>>(__VA_ARGS__); \
    else                                                                             \
      KERNEL<T, 32><<<(unsigned)blocks, 32 * RLX_NORM_WARPS, 0, s>>>(__VA_ARGS__); \
  } while (0)

template <typename T>
static void norm_dx_warp_launch(int rms, const void *x, const void *gamma, const void *dy, int64_t rows, int C,
                                double eps, void *out, void *st_out, const void *add, cudaStream_t s) {
  const T *xt = (const T *)x, *gt = (const T *)gamma, *dt = (const T *)dy, *at = (const T *)add;
  RLX_NORM_PER_DISPATCH(norm_dx_warp_kernel, rows, C, rms, xt, gt, dt, rows, C, eps, (T *)out, (double *)st_out, at);
}
template <typename T>
static void norm_stats_warp_launch(int rms, const void *x, int64_t rows, int C, double eps, void *st, cudaStream_t s) {
  RLX_NORM_PER_DISPATCH(norm_stats_warp_kernel, rows, C, rms, (const T *)x, rows, C, eps, (double *)st);
}

/* the warp kernels' rows: 4-element accesses of every operand (C a multiple of 4, the pointers
 * aligned to 4 elements) */
extern "C" int rlx_cu_norm_rows_fit(int dtype, int64_t C, const void *const *ptrs, int n) {
  const bool typed = dtype == RLX_F32 || dtype == RLX_F64 || dtype == RLX_BF16 || dtype == RLX_F16;
  if (!typed || C % 4 || C > 1024) return false;
  const uintptr_t al = 4 * rlx_dtype_size((rlx_dtype)dtype) - 1;
  for (int i = 0; i < n; i++)
    if ((uintptr_t)ptrs[i] & al) return false;
  return true;
}
extern "C" int rlx_cu_norm_dx_warp_fits(int dtype, int64_t rows, int64_t C, const void *const *ptrs, int n_ptrs) {
  return rlx_cu_norm_rows_fit(dtype, C, ptrs, n_ptrs) && C >= 64 && rows >= 264;
}

extern "C" rlx_status rlx_cu_norm_backward(rlx_cu_ctx *c, int what, int rms, int dtype, const void *x,
                                           const void *gamma, const void *dy, int64_t rows, int64_t C, double eps,
                                           void *out, void *scratch, const rlx_cu_norm_fuse *fuse) {
  static const rlx_cu_norm_fuse none = {0};
  if (!fuse) fuse = &none;
  if (C == 0) return RLX_OK;
  bool typed = dtype == RLX_F32 || dtype == RLX_F64 || dtype == RLX_BF16 || dtype == RLX_F16;
  const void *ptrs[5] = {x, gamma, dy, out, fuse->add};
  if (what == 0 && rlx_cu_norm_dx_warp_fits(dtype, rows, C, ptrs, fuse->add ? 5 : 4)) {
    void *so = fuse->stats_out;
    const void *ad = dtype == RLX_F32 ? fuse->add : NULL;
    if (fuse->add && !ad) return rlx_errorf(RLX_ERR_INTERNAL, "cuda: a fused norm backward Add needs %s", "f32");
    switch (dtype) {
    case RLX_F32: norm_dx_warp_launch<float>(rms, x, gamma, dy, rows, (int)C, eps, out, so, ad, c->stream); break;
    case RLX_F64: norm_dx_warp_launch<double>(rms, x, gamma, dy, rows, (int)C, eps, out, so, ad, c->stream); break;
    case RLX_BF16:
      norm_dx_warp_launch<__nv_bfloat16>(rms, x, gamma, dy, rows, (int)C, eps, out, so, ad, c->stream);
      break;
    default: norm_dx_warp_launch<__half>(rms, x, gamma, dy, rows, (int)C, eps, out, so, ad, c->stream); break;
    }
    return cu_launch_status("norm backward kernel (warp per row)");
  }
  if (fuse->stats_out || fuse->add || (what == 1 && fuse->stats_ready && !typed))
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: a fused norm backward step of %lld x %lld rows takes no warp kernel",
                      (long long)rows, (long long)C);
  unsigned blocks = (unsigned)(rows < 65535 * 4 ? (rows ? rows : 1) : 65535 * 4);
  int threads = C >= 256 ? 256 : C > 32 ? 128 : 32;
  if (what == 0) {
    if (rows == 0) return RLX_OK;
    norm_dx_kernel<<<blocks, threads, 0, c->stream>>>(rms, dtype, x, gamma, dy, rows, C, eps, out);
    return cu_launch_status("norm backward kernel");
  }
  if (what == 1 && rows && !fuse->stats_ready) {
    if (rlx_cu_norm_rows_fit(dtype, C, &x, 1)) {
      switch (dtype) {
      case RLX_F32: norm_stats_warp_launch<float>(rms, x, rows, (int)C, eps, scratch, c->stream); break;
      case RLX_F64: norm_stats_warp_launch<double>(rms, x, rows, (int)C, eps, scratch, c->stream); break;
      case RLX_BF16: norm_stats_warp_launch<__nv_bfloat16>(rms, x, rows, (int)C, eps, scratch, c->stream); break;
      default: norm_stats_warp_launch<__half>(rms, x, rows, (int)C, eps, scratch, c->stream); break;
      }
    } else {
      norm_stats_kernel<<<blocks, threads, 0, c->stream>>>(rms, dtype, x, rows, C, eps, (double *)scratch);
    }
    rlx_status s = cu_launch_status("norm statistics kernel");
    if (s != RLX_OK) return s;
  }
  if (rows >= 256) {
    const size_t esz = dtype == RLX_F32 ? 4 : 2;
    const bool two = (dtype == RLX_F32 || dtype == RLX_BF16 || dtype == RLX_F16) && C % 2 == 0 &&
                     (uintptr_t)dy % (2 * esz) == 0 && (what != 1 || (uintptr_t)x % (2 * esz) == 0);
    /* beta's column sums beside gamma's: with the Reduce's chunks (colsum.cuh) */
    const bool beta = what == 1 && fuse->colsum;
    const void *dyp = dy;
    if (beta && (!two || !rlx_cu_colsum_fits(fuse->colsum_op, dtype, rows, C, &dyp, 1)))
      return rlx_errorf(RLX_ERR_INTERNAL, "cuda: the fused beta gradient does not take %s",
                        rlx_dtype_name((rlx_dtype)dtype));
    const int cols = two ? 64 : 32;
    int64_t cb = (C + cols - 1) / cols, S = (132 * 8 + cb - 1) / cb, most = rows / 32;
    if (S > most) S = most;
    if (S > 65535) S = 65535;
    if (S < 1) S = 1;
    if (two) S = cu_colsum2_chunks(rows, C);
    void *part;
    const size_t gbytes = ((size_t)(S * C) * sizeof(double) + 255) & ~(size_t)255;
    RLX_TRY(cu_scratch(c, gbytes + (beta ? (size_t)(S * C) * sizeof(acc_t) : 0), &part));
    void *beta_part = beta ? (void *)((char *)part + gbytes) : NULL;
    dim3 grid((unsigned)cb, (unsigned)S);
    if (two && dtype == RLX_F32)
      norm_param_cols2_launch<float>(what == 1, x, dy, rows, C, scratch, S, part, beta_part, grid, c->stream);
    else if (two && dtype == RLX_BF16)
      norm_param_cols2_launch<__nv_bfloat16>(what == 1, x, dy, rows, C, scratch, S, part, beta_part, grid, c->stream);
    else if (two)
      norm_param_cols2_launch<__half>(what == 1, x, dy, rows, C, scratch, S, part, beta_part, grid, c->stream);
    else
      norm_param_cols_kernel<<<grid, dim3(32, 8), 0, c->stream>>>(what == 1, dtype, x, dy, rows, C,
                                                                  (const double *)scratch, S, (double *)part);
    RLX_TRY(cu_launch_status("norm parameter backward kernel"));
    norm_param_merge_kernel<<<(unsigned)((C + 31) / 32), dim3(32, 8), 0, c->stream>>>(dtype, C, S, (const double *)part,
                                                                                      out);
    RLX_TRY(cu_launch_status("norm parameter merge kernel"));
    if (beta) return cu_colsum2_merge(c, dtype, fuse->colsum_op, rows, C, S, (const acc_t *)beta_part, fuse->colsum);
    return RLX_OK;
  }
  if (fuse->colsum) return rlx_errorf(RLX_ERR_INTERNAL, "cuda: the fused beta gradient needs at least %s rows", "256");
  norm_param_kernel<<<cu_blocks(C, 128), 128, 0, c->stream>>>(what == 1, dtype, x, dy, rows, C, (const double *)scratch,
                                                              out);
  return cu_launch_status("norm parameter backward kernel");
}

/* ---- max-pool backward: one thread per input cell, gathering from the windows that hold it ---- */
__device__ inline bool pool_beats(bool ints, int t, const void *x, int64_t a, int64_t b) {
  if (ints) return ld_i(x, t, a) > ld_i(x, t, b);
  double va = ld_f(x, t, a), vb = ld_f(x, t, b);
  return vb == vb && (va != va || va > vb);
}

__global__ void maxpool_bw_kernel(int t, const void *x, const void *dy, void *dx, rlx_cu_pool3 g) {
  int64_t Pin = g.in[0] * g.in[1] * g.in[2], P = g.out[0] * g.out[1] * g.out[2], total = g.NC * Pin;
  bool ints = dt_is_int(t);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = e / Pin, ip = e % Pin;
    int64_t i3[3] = {ip / (g.in[1] * g.in[2]), (ip / g.in[2]) % g.in[1], ip % g.in[2]};
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
      /* windows o with o*s - pb <= i < o*s - pb + k */
      int64_t num = i3[a] + g.pb[a] - g.k[a] + 1;
      lo[a] = num <= 0 ? 0 : (num + g.s[a] - 1) / g.s[a];
      hi[a] = (i3[a] + g.pb[a]) / g.s[a];
      if (hi[a] >= g.out[a]) hi[a] = g.out[a] - 1;
    }
    double acc = 0;
    int64_t iacc = 0;
    for (int64_t od = lo[0]; od <= hi[0]; od++)
      for (int64_t oh = lo[1]; oh <= hi[1]; oh++)
        for (int64_t ow = lo[2]; ow <= hi[2]; ow++) {
          int64_t best = -1;
          for (int64_t kd = 0; kd < g.k[0]; kd++) {
            int64_t id = od * g.s[0] - g.pb[0] + kd;
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; kh++) {
              int64_t ih = oh * g.s[1] - g.pb[1] + kh;
              if (ih < 0 || ih >= g.in[1]) continue;
              for (int64_t kw = 0; kw < g.k[2]; kw++) {
                int64_t iw = ow * g.s[2] - g.pb[2] + kw;
                if (iw < 0 || iw >= g.in[2]) continue;
                int64_t o = (id * g.in[1] + ih) * g.in[2] + iw;
                if (best < 0 || pool_beats(ints, t, x, c * Pin + o, c * Pin + best)) best = o;
              }
            }
          }
          if (best != ip) continue;
          int64_t src = c * P + (od * g.out[1] + oh) * g.out[2] + ow;
          if (ints)
            iacc = sat_add(iacc, ld_i(dy, t, src));
          else
            acc += ld_f(dy, t, src);
        }
    if (ints)
      st_i(dx, t, e, iacc);
    else
      st_f(dx, t, e, acc);
  }
}

extern "C" rlx_status rlx_cu_maxpool_backward(rlx_cu_ctx *c, int dtype, const void *x, const void *dy, void *dx,
                                              const rlx_cu_pool3 *g) {
  int64_t total = g->NC * g->in[0] * g->in[1] * g->in[2];
  if (total == 0) return RLX_OK;
  maxpool_bw_kernel<<<cu_blocks(total, BW_THREADS), BW_THREADS, 0, c->stream>>>(dtype, x, dy, dx, *g);
  return cu_launch_status("max-pool backward kernel");
}

/* ---- convolution weight gradient: one block per weight element, threads split N x out ---- */
__global__ void conv_bw_weight_kernel(int t, const void *x, const void *dy, void *dw, rlx_cu_conv_geom g) {
  __shared__ double sh[32];
  int64_t cg = g.Cin / g.G, og = g.Cout / g.G, kv = g.k[0] * g.k[1] * g.k[2];
  int64_t total = g.Cout * cg * kv, P = g.out[0] * g.out[1] * g.out[2], Pin = g.in[0] * g.in[1] * g.in[2];
  for (int64_t e = blockIdx.x; e < total; e += gridDim.x) {
    int64_t kk = e % kv, ci = (e / kv) % cg, co = e / (kv * cg);
    int64_t k3[3] = {kk / (g.k[1] * g.k[2]), (kk / g.k[2]) % g.k[1], kk % g.k[2]};
    int64_t cin = (co / og) * cg + ci;
    double acc = 0;
    for (int64_t q = threadIdx.x; q < g.N * P; q += blockDim.x) {
      int64_t b = q / P, p = q % P;
      int64_t o3[3] = {p / (g.out[1] * g.out[2]), (p / g.out[2]) % g.out[1], p % g.out[2]};
      int64_t i3[3];
      bool in = true;
      for (int a = 0; a < 3; a++) {
        i3[a] = o3[a] * g.s[a] + k3[a] * g.d[a] - g.pb[a];
        in = in && i3[a] >= 0 && i3[a] < g.in[a];
      }
      if (!in) continue;
      acc += ld_f(dy, t, (b * g.Cout + co) * P + p) *
             ld_f(x, t, (b * g.Cin + cin) * Pin + (i3[0] * g.in[1] + i3[1]) * g.in[2] + i3[2]);
    }
    acc = cu_block_sum(acc, sh);
    if (threadIdx.x == 0) st_f(dw, t, e, acc);
    __syncthreads();
  }
}

extern "C" rlx_status rlx_cu_conv_backward_weight(rlx_cu_ctx *c, int dtype, const void *x, const void *dy, void *dw,
                                                  const rlx_cu_conv_geom *g) {
  int64_t total = g->Cout * (g->Cin / g->G) * g->k[0] * g->k[1] * g->k[2];
  if (total == 0) return RLX_OK;
  unsigned blocks = (unsigned)(total < 65535 * 16 ? total : 65535 * 16);
  conv_bw_weight_kernel<<<blocks, BW_THREADS, 0, c->stream>>>(dtype, x, dy, dw, *g);
  return cu_launch_status("convolution weight-gradient kernel");
}
