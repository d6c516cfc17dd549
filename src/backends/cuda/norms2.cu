/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The norm family beyond LayerNorm / RmsNorm (cu_ext.h): GroupNorm and LayerNorm2d (one block
 * per normalised line, two-pass mean / biased variance in double as the CPU reference),
 * GroupNorm's backward (dx one block per group line; gamma / beta one block per channel over
 * per-line statistics computed first), BatchNormInference and its backward (elementwise, and one
 * block per channel for the parameter sums). Every value is computed in double and rounded once
 * to the output dtype. FusedResidualLN / FusedResidualRmsNorm normalise h = x + res (+ bias),
 * each sum rounded to the dtype as the shared decomposition's Adds round it; AdaLayerNorm
 * modulates by broadcast scale / shift. Block sums are cu_block_sum's (fixed order: deterministic). */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__device__ inline int64_t line_base(const rlx_cu_ext &e, int64_t r) { return (r / e.P) * e.B + r % e.P; }

/* mean and 1/sqrt(var + eps) of line r (every thread of the block gets them) */
__device__ inline void line_stats(const rlx_cu_ext &e, const void *x, int64_t base, double *sh, double *mean,
                                  double *rstd) {
  double m = 0;
  for (int64_t i = threadIdx.x; i < e.len; i += blockDim.x) m += ld_f(x, e.dtype, base + i * e.stride);
  m = cu_block_sum(m, sh) / (double)e.len;
  double v = 0;
  for (int64_t i = threadIdx.x; i < e.len; i += blockDim.x) {
    double d = ld_f(x, e.dtype, base + i * e.stride) - m;
    v += d * d;
  }
  v = cu_block_sum(v, sh) / (double)e.len;
  *mean = m;
  *rstd = 1.0 / sqrt(v + e.eps);
}

__global__ void line_norm_kernel(rlx_cu_ext e) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    int64_t base = line_base(e, r), p0 = (r % e.G) * e.cg;
    double m, rs;
    line_stats(e, e.in[0], base, sh, &m, &rs);
    for (int64_t i = threadIdx.x; i < e.len; i += blockDim.x) {
      int64_t o = base + i * e.stride, c = p0 + i / e.S;
      double y = (ld_f(e.in[0], e.dtype, o) - m) * rs;
      st_f(e.out, e.dtype, o, y * ld_f(e.in[1], e.dtype, c) + ld_f(e.in[2], e.dtype, c));
    }
    __syncthreads();
  }
}

/* GroupNorm dx over line r: s = dy * gamma, dx = rstd (s - mean(s) - xh mean(s xh)). */
__global__ void gn_dx_kernel(rlx_cu_ext e) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    int64_t base = line_base(e, r), p0 = (r % e.G) * e.cg;
    double m, rs;
    line_stats(e, e.in[0], base, sh, &m, &rs);
    double ms = 0, msx = 0;
    for (int64_t i = threadIdx.x; i < e.len; i += blockDim.x) {
      int64_t o = base + i * e.stride;
      double s = ld_f(e.in[2], e.dtype, o) * ld_f(e.in[1], e.dtype, p0 + i / e.S);
      ms += s;
      msx += s * (ld_f(e.in[0], e.dtype, o) - m) * rs;
    }
    ms = cu_block_sum(ms, sh) / (double)e.len;
    msx = cu_block_sum(msx, sh) / (double)e.len;
    for (int64_t i = threadIdx.x; i < e.len; i += blockDim.x) {
      int64_t o = base + i * e.stride;
      double s = ld_f(e.in[2], e.dtype, o) * ld_f(e.in[1], e.dtype, p0 + i / e.S);
      double xh = (ld_f(e.in[0], e.dtype, o) - m) * rs;
      st_f(e.out, e.dtype, o, rs * (s - ms - xh * msx));
    }
    __syncthreads();
  }
}

__global__ void gn_stats_kernel(rlx_cu_ext e, double *stats) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    double m, rs;
    line_stats(e, e.in[0], line_base(e, r), sh, &m, &rs);
    if (threadIdx.x == 0) {
      stats[2 * r] = m;
      stats[2 * r + 1] = rs;
    }
    __syncthreads();
  }
}

/* Channel c of x [N, C, S]: sum over b, s of dy * xh (the statistics of line b * G + c / cg) or
 * of dy. in = x, dy. */
__global__ void gn_param_kernel(rlx_cu_ext e, const double *stats) {
  __shared__ double sh[32];
  for (int64_t c = blockIdx.x; c < e.C; c += gridDim.x) {
    double acc = 0;
    int64_t g = c / e.cg, total = e.N * e.S;
    for (int64_t k = threadIdx.x; k < total; k += blockDim.x) {
      int64_t b = k / e.S, s = k % e.S, o = (b * e.C + c) * e.S + s;
      double dy = ld_f(e.in[1], e.dtype, o);
      if (e.want_xh) {
        int64_t r = b * e.G + g;
        dy *= (ld_f(e.in[0], e.dtype, o) - stats[2 * r]) * stats[2 * r + 1];
      }
      acc += dy;
    }
    acc = cu_block_sum(acc, sh);
    if (threadIdx.x == 0) st_f(e.out, e.dtype, c, acc);
    __syncthreads();
  }
}

__global__ void bn_kernel(rlx_cu_ext e) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = i % e.C;
    double y;
    if (e.mode == RLX_CU_EXT_BN)
      y = ld_f(e.in[1], e.dtype, c) * (ld_f(e.in[0], e.dtype, i) - ld_f(e.in[3], e.dtype, c)) /
              sqrt(ld_f(e.in[4], e.dtype, c) + e.eps) +
          ld_f(e.in[2], e.dtype, c);
    else /* BN_DX: in = gamma, var, dy */
      y = ld_f(e.in[2], e.dtype, i) * ld_f(e.in[0], e.dtype, c) / sqrt(ld_f(e.in[1], e.dtype, c) + e.eps);
    st_f(e.out, e.dtype, i, y);
  }
}

/* Channel sums over the rows of [rows, C]: BN_DGAMMA (in = x, mean, var, dy) or BN_DBETA (in = dy). */
__global__ void bn_param_kernel(rlx_cu_ext e) {
  __shared__ double sh[32];
  for (int64_t c = blockIdx.x; c < e.C; c += gridDim.x) {
    double acc = 0;
    for (int64_t r = threadIdx.x; r < e.rows; r += blockDim.x) {
      int64_t o = r * e.C + c;
      if (e.mode == RLX_CU_EXT_BN_DBETA)
        acc += ld_f(e.in[0], e.dtype, o);
      else
        acc += ld_f(e.in[3], e.dtype, o) * (ld_f(e.in[0], e.dtype, o) - ld_f(e.in[1], e.dtype, c));
    }
    acc = cu_block_sum(acc, sh);
    if (e.mode == RLX_CU_EXT_BN_DGAMMA) acc /= sqrt(ld_f(e.in[2], e.dtype, c) + e.eps);
    if (threadIdx.x == 0) st_f(e.out, e.dtype, c, acc);
    __syncthreads();
  }
}

/* v rounded to dtype t and back (the value an unfused graph holds between two steps) */
__device__ inline double rd(int t, double v) {
  switch (t) {
  case RLX_F32: return (double)(float)v;
  case RLX_F16: return (double)__half2float(__float2half_rn(round_odd_f32(v)));
  case RLX_BF16: return (double)__bfloat162float(__float2bfloat16_rn(round_odd_f32(v)));
  default: return v;
  }
}

/* h = x + res (+ bias), each sum rounded to the dtype as the decomposition's Adds are */
__device__ inline double res_h(const rlx_cu_ext &e, int64_t o, int64_t j) {
  double h = rd(e.dtype, ld_f(e.in[0], e.dtype, o) + ld_f(e.in[1], e.dtype, o));
  if (e.in[2]) h = rd(e.dtype, h + ld_f(e.in[2], e.dtype, j));
  return h;
}

/* LayerNorm / RmsNorm of h over each row of len (the CPU reference's two passes). */
__global__ void res_norm_kernel(rlx_cu_ext e) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    int64_t base = r * e.len;
    double m = 0;
    if (!e.rms) {
      for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) m += res_h(e, base + j, j);
      m = cu_block_sum(m, sh) / (double)e.len;
    }
    double v = 0;
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      double d = res_h(e, base + j, j) - m;
      v += d * d;
    }
    v = cu_block_sum(v, sh) / (double)e.len;
    double rs = 1.0 / sqrt(v + e.eps);
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      double y = (res_h(e, base + j, j) - m) * rs;
      st_f(e.out, e.dtype, base + j, y * ld_f(e.in[3], e.dtype, j) + ld_f(e.in[4], e.dtype, j));
    }
    __syncthreads();
  }
}

/* offset of element i of x in an operand broadcast onto x with strides st */
__device__ inline int64_t bcast_off(const rlx_cu_ext &e, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int k = e.rank - 1; k >= 0; k--) {
    off += (i % e.dims[k]) * st[k];
    i /= e.dims[k];
  }
  return off;
}

/* norm(x) (1 + scale) + shift over each row of len, no affine */
__global__ void ada_norm_kernel(rlx_cu_ext e) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    int64_t base = r * e.len;
    double m = 0;
    if (!e.rms) {
      for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) m += ld_f(e.in[0], e.dtype, base + j);
      m = cu_block_sum(m, sh) / (double)e.len;
    }
    double v = 0;
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      double d = ld_f(e.in[0], e.dtype, base + j) - m;
      v += d * d;
    }
    v = cu_block_sum(v, sh) / (double)e.len;
    double rs = 1.0 / sqrt(v + e.eps);
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      int64_t i = base + j;
      double sc = ld_f(e.in[1], e.dtype, bcast_off(e, e.bstride[0], i));
      double shf = ld_f(e.in[2], e.dtype, bcast_off(e, e.bstride[1], i));
      st_f(e.out, e.dtype, i, (ld_f(e.in[0], e.dtype, i) - m) * rs * (1.0 + sc) + shf);
    }
    __syncthreads();
  }
}

unsigned grid_of(int64_t n) { return (unsigned)(n < 65535 * 8 ? (n > 0 ? n : 1) : 65535 * 8); }
int threads_of(int64_t len) { return len >= 1024 ? 256 : len >= 128 ? 128 : 32; }

} // namespace

extern "C" rlx_status rlx_cu_norm2_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  switch (e->mode) {
  case RLX_CU_EXT_LINE_NORM:
    if (e->rows == 0 || e->len == 0) return RLX_OK;
    line_norm_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e);
    return cu_launch_status("line norm kernel");
  case RLX_CU_EXT_GN_DX:
    if (e->rows == 0 || e->len == 0) return RLX_OK;
    gn_dx_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e);
    return cu_launch_status("group norm dx kernel");
  case RLX_CU_EXT_GN_PARAM: {
    if (e->C == 0) return RLX_OK;
    if (e->want_xh && e->rows > 0 && e->len > 0) {
      gn_stats_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e, (double *)e->scratch);
      RLX_TRY(cu_launch_status("group norm statistics kernel"));
    }
    gn_param_kernel<<<grid_of(e->C), threads_of(e->N * e->S), 0, c->stream>>>(*e, (const double *)e->scratch);
    return cu_launch_status("group norm parameter kernel");
  }
  case RLX_CU_EXT_RES_NORM:
    if (e->rows == 0 || e->len == 0) return RLX_OK;
    res_norm_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e);
    return cu_launch_status("residual norm kernel");
  case RLX_CU_EXT_ADA_NORM:
    if (e->rows == 0 || e->len == 0) return RLX_OK;
    ada_norm_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e);
    return cu_launch_status("ada norm kernel");
  case RLX_CU_EXT_BN:
  case RLX_CU_EXT_BN_DX:
    if (e->count == 0) return RLX_OK;
    bn_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e);
    return cu_launch_status("batch norm kernel");
  case RLX_CU_EXT_BN_DGAMMA:
  case RLX_CU_EXT_BN_DBETA:
    if (e->C == 0) return RLX_OK;
    bn_param_kernel<<<grid_of(e->C), threads_of(e->rows), 0, c->stream>>>(*e);
    return cu_launch_status("batch norm parameter kernel");
  default: return rlx_errorf(RLX_ERR_INTERNAL, "cuda: norm2 mode %d is not a norm kernel", e->mode);
  }
}
