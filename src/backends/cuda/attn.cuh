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

/* ---- shared by the tiled flash kernels (flash.cu: FFMA, flash_tc.cu: tensor cores); both use
 * tiles of 64 query rows and 64 keys ---- */
constexpr int FLASH_BQ = 64, FLASH_BK = 64;

struct tile_range {
  int64_t beg, end;
};

/* The key tiles query rows [q0, q0 + FLASH_BQ) can see. */
__device__ inline tile_range key_tiles(const rlx_cu_attn &p, int64_t q0) {
  int64_t off = p.Sk - p.Sq, beg = 0, end = p.Sk;
  if (p.mask == RLX_MASK_CAUSAL || p.mask == RLX_MASK_SLIDING_WINDOW) {
    int64_t last = off + q0 + FLASH_BQ; /* one past the largest visible key */
    end = last < end ? last : end;
  }
  if (p.mask == RLX_MASK_SLIDING_WINDOW) {
    int64_t first = off + q0 - p.window;
    beg = first > 0 ? first / FLASH_BK * FLASH_BK : 0;
  }
  return {beg, end};
}

/* The query tiles keys [k0, k0 + FLASH_BK) are seen by. */
__device__ inline tile_range query_tiles(const rlx_cu_attn &p, int64_t k0) {
  int64_t off = p.Sk - p.Sq, beg = 0, end = p.Sq;
  if (p.mask == RLX_MASK_CAUSAL || p.mask == RLX_MASK_SLIDING_WINDOW) {
    int64_t first = k0 - off; /* the first query whose position reaches k0 */
    beg = first > 0 ? first / FLASH_BQ * FLASH_BQ : 0;
  }
  if (p.mask == RLX_MASK_SLIDING_WINDOW) {
    int64_t last = k0 + FLASH_BK + p.window - off;
    end = last < end ? last : end;
  }
  return {beg, end};
}

__device__ inline bool visible(const rlx_cu_attn &p, int64_t qi, int64_t ki) {
  return qi < p.Sq && ki < p.Sk && attn_pos_visible(p, qi, ki);
}

/* Every (query, key) of the tile pair [q0, q0 + 64) x [k0, k0 + 64) is in range and visible, so
 * the per-element mask test can be skipped (uniform over the block). */
__device__ inline bool tile_full(const rlx_cu_attn &p, int64_t q0, int64_t k0) {
  if (q0 + FLASH_BQ > p.Sq || k0 + FLASH_BK > p.Sk) return false;
  int64_t off = p.Sk - p.Sq; /* query qi sits at position off + qi */
  if (p.mask == RLX_MASK_CAUSAL) return k0 + FLASH_BK - 1 <= off + q0;
  if (p.mask == RLX_MASK_SLIDING_WINDOW)
    return k0 + FLASH_BK - 1 <= off + q0 && k0 >= off + q0 + FLASH_BQ - 1 - p.window;
  return true;
}

__device__ inline int64_t base_of(const rlx_cu_attn_view &v, int64_t b, int64_t h) { return at(v, b, h, 0, 0); }
/* Where a gradient of operand layout v goes: rows of ld elements (kinds 1, 2: rlx_cu_attn_bw's
 * out_ld), or v's own layout when ld is 0. */
__device__ inline int64_t out_base(const rlx_cu_attn_view &v, int64_t ld, int64_t b, int64_t h) {
  return ld ? b * v.S * ld + h * v.D : base_of(v, b, h);
}
__device__ inline int64_t out_stride(const rlx_cu_attn_view &v, int64_t ld) { return ld ? ld : row_stride(v); }

/* The query tile of a forward / dq block, the last first: under a causal or sliding mask the last
 * query tiles see the most keys, so the heaviest blocks are dispatched first and the light ones
 * fill the tail of the grid (no measurable change for the GPT-2 block's 16 x 96 tiles on the
 * H200, 2026-12-03; it matters for grids of few waves). */
__device__ inline unsigned heavy_first_tile() { return gridDim.x - 1 - blockIdx.x; }

/* score of a raw dot product: scale, then the soft-cap (th = tanh(r / cap), else 0) */
__device__ inline float score(const rlx_cu_attn &p, float dot, float *th) {
  float r = dot * (float)p.scale;
  if (!p.capped) {
    *th = 0.f;
    return r;
  }
  float t = tanhf(r / (float)p.cap);
  *th = t;
  return (float)p.cap * t;
}

/* The tensor-core kernels (flash_tc.cu): bf16 / f16, and f32 unless RLX_CUDA_FP32_PEDANTIC (three
 * TF32 products per product), head dims up to 64, within what rlx_cu_flash_fits takes;
 * rlx_cu_flash_forward / _backward hand such problems to them. */
extern "C" int rlx_cu_flash_tc_fits(const rlx_cu_ctx *c, const rlx_cu_attn *p);
extern "C" rlx_status rlx_cu_flash_tc_forward(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats);
extern "C" rlx_status rlx_cu_flash_tc_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p);
/* compute_stats 2 (flash.cu): delta = <dy, saved out> per query row into stats' second floats */
rlx_status rlx_cu_flash_delta(rlx_cu_ctx *c, const rlx_cu_attn_bw *p);

#endif
