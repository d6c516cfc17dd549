/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Scaled dot-product attention, forward: one block per (b, h, qi). Threads own output lanes;
 * for each visible key the block forms the score by a block-wide dot product, then updates an
 * online softmax (running max m, running sum l, accumulator per lane) in double, so no score
 * matrix is stored. Semantics follow the CPU reference (src/backends/cpu/ref/attention.c):
 * causal / sliding-window / keep-mask / bias masks, soft-capping, grouped-query heads; a row
 * with no visible finite score gives zeros, a NaN score gives NaN. The f32 / bf16 / f16 cases with
 * position masks and head dims up to 128 go to the tiled flash kernel (flash.cu); these row
 * kernels take the rest (f64, keep-masks, biases, wider heads). */
#include "backends/cuda/attn.cuh"

#define ATTN_MAX_LANES 4 /* output lanes per thread: Dv <= 4 * blockDim */

__global__ void attention_kernel(rlx_cu_attn p) {
  __shared__ double sh[32];
  const int t = p.dtype;
  int64_t rows = p.B * p.H * p.Sq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t qi = row % p.Sq, h = (row / p.Sq) % p.H, b = row / (p.Sq * p.H), kh = h / p.group;
    double acc[ATTN_MAX_LANES] = {0, 0, 0, 0};
    double m = -INFINITY, l = 0;
    bool nan_seen = false;
    int64_t pos = p.Sk - p.Sq + qi;
    for (int64_t ki = 0; ki < p.Sk; ki++) {
      bool keep = true;
      if (p.mask == RLX_MASK_CAUSAL) keep = ki <= pos;
      else if (p.mask == RLX_MASK_SLIDING_WINDOW) keep = ki <= pos && ki >= pos - p.window;
      if (p.mask == RLX_MASK_CUSTOM) {
        int64_t mi = p.per_query ? (b * p.Sq + qi) * p.Sk + ki : b * p.Sk + ki;
        if (ld_f(p.M, p.mask_dtype, mi) < 0.5) keep = false;
      }
      if (!keep) continue; /* uniform across the block */
      double part = 0;
      for (int64_t d = threadIdx.x; d < p.q.D; d += blockDim.x)
        part += ld_f(p.Q, t, at(p.q, b, h, qi, d)) * ld_f(p.K, t, at(p.k, b, kh, ki, d));
      double sc = cu_block_sum(part, sh) * p.scale;
      if (p.capped) sc = p.cap * tanh(sc / p.cap);
      if (p.mask == RLX_MASK_BIAS)
        sc += ld_f(p.M, p.mask_dtype,
                   b * p.bias_stride[0] + h * p.bias_stride[1] + qi * p.bias_stride[2] + ki * p.bias_stride[3]);
      if (sc != sc) {
        nan_seen = true;
        continue;
      }
      if (sc == -INFINITY) continue; /* weight exp(-inf) = 0 */
      double mn = sc > m ? sc : m, corr = exp(m - mn), e = exp(sc - mn);
      l = l * corr + e;
      int lane = 0;
      for (int64_t d = threadIdx.x; d < p.v.D && lane < ATTN_MAX_LANES; d += blockDim.x, lane++)
        acc[lane] = acc[lane] * corr + e * ld_f(p.V, t, at(p.v, b, kh, ki, d));
      m = mn;
    }
    int lane = 0;
    for (int64_t d = threadIdx.x; d < p.o.D && lane < ATTN_MAX_LANES; d += blockDim.x, lane++) {
      double r = nan_seen ? nan("") : l > 0 ? acc[lane] / l : 0.0;
      st_f(p.out, t, at(p.o, b, h, qi, d), r);
    }
    __syncthreads();
  }
}

/* One warp per (b, h, qi) for head dims up to 32 * WARP_LANES: each lane owns head lanes
 * d = lane, lane + 32, ...; the score is a warp-shuffle sum (no block barrier per key), the
 * online softmax runs in registers, in double as above. */
#define WARP_LANES 8
__global__ void attention_warp_kernel(rlx_cu_attn p) {
  const int t = p.dtype, lane = threadIdx.x & 31;
  int64_t rows = p.B * p.H * p.Sq, warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; row < rows; row += warps) {
    int64_t qi = row % p.Sq, h = (row / p.Sq) % p.H, b = row / (p.Sq * p.H), kh = h / p.group;
    double q[WARP_LANES], acc[WARP_LANES];
#pragma unroll
    for (int j = 0; j < WARP_LANES; j++) {
      int64_t d = lane + 32 * j;
      q[j] = d < p.q.D ? ld_f(p.Q, t, at(p.q, b, h, qi, d)) : 0.0;
      acc[j] = 0;
    }
    double m = -INFINITY, l = 0;
    bool nan_seen = false;
    int64_t pos = p.Sk - p.Sq + qi, kend = p.Sk;
    if (p.mask == RLX_MASK_CAUSAL || p.mask == RLX_MASK_SLIDING_WINDOW) kend = pos + 1 < p.Sk ? pos + 1 : p.Sk;
    int64_t kbeg = p.mask == RLX_MASK_SLIDING_WINDOW && pos - p.window > 0 ? pos - p.window : 0;
    for (int64_t ki = kbeg; ki < kend; ki++) {
      if (p.mask == RLX_MASK_CUSTOM) {
        int64_t mi = p.per_query ? (b * p.Sq + qi) * p.Sk + ki : b * p.Sk + ki;
        if (ld_f(p.M, p.mask_dtype, mi) < 0.5) continue;
      }
      double part = 0;
#pragma unroll
      for (int j = 0; j < WARP_LANES; j++) {
        int64_t d = lane + 32 * j;
        if (d < p.q.D) part += q[j] * ld_f(p.K, t, at(p.k, b, kh, ki, d));
      }
      for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
      double sc = part * p.scale;
      if (p.capped) sc = p.cap * tanh(sc / p.cap);
      if (p.mask == RLX_MASK_BIAS)
        sc += ld_f(p.M, p.mask_dtype,
                   b * p.bias_stride[0] + h * p.bias_stride[1] + qi * p.bias_stride[2] + ki * p.bias_stride[3]);
      if (sc != sc) {
        nan_seen = true;
        continue;
      }
      if (sc == -INFINITY) continue;
      double mn = sc > m ? sc : m, corr = exp(m - mn), e = exp(sc - mn);
      l = l * corr + e;
#pragma unroll
      for (int j = 0; j < WARP_LANES; j++) {
        int64_t d = lane + 32 * j;
        if (d < p.v.D) acc[j] = acc[j] * corr + e * ld_f(p.V, t, at(p.v, b, kh, ki, d));
      }
      m = mn;
    }
#pragma unroll
    for (int j = 0; j < WARP_LANES; j++) {
      int64_t d = lane + 32 * j;
      if (d < p.o.D) st_f(p.out, t, at(p.o, b, h, qi, d), nan_seen ? nan("") : l > 0 ? acc[j] / l : 0.0);
    }
  }
}

/* The same for the float dtypes and the masks decided by position (none, causal, sliding window):
 * typed loads, addresses hoisted out of the key loop (a key step is one row stride). */
template <typename T>
__global__ void attention_warp_fast(rlx_cu_attn p) {
  const int lane = threadIdx.x & 31;
  const T *Qp = (const T *)p.Q, *Kp = (const T *)p.K, *Vp = (const T *)p.V;
  T *Op = (T *)p.out;
  const int64_t ks = row_stride(p.k), vs = row_stride(p.v);
  int64_t rows = p.B * p.H * p.Sq, warps = (int64_t)gridDim.x * (blockDim.x / 32);
  for (int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32; row < rows; row += warps) {
    int64_t qi = row % p.Sq, h = (row / p.Sq) % p.H, b = row / (p.Sq * p.H), kh = h / p.group;
    const T *kb = Kp + at(p.k, b, kh, 0, 0), *vb = Vp + at(p.v, b, kh, 0, 0), *qb = Qp + at(p.q, b, h, qi, 0);
    double q[WARP_LANES], acc[WARP_LANES];
#pragma unroll
    for (int j = 0; j < WARP_LANES; j++) {
      int d = lane + 32 * j;
      q[j] = d < p.q.D ? to_d(qb[d]) : 0.0;
      acc[j] = 0;
    }
    double m = -INFINITY, l = 0;
    bool nan_seen = false;
    int64_t pos = p.Sk - p.Sq + qi, kend = p.Sk;
    if (p.mask == RLX_MASK_CAUSAL || p.mask == RLX_MASK_SLIDING_WINDOW) kend = pos + 1 < p.Sk ? pos + 1 : p.Sk;
    int64_t kbeg = p.mask == RLX_MASK_SLIDING_WINDOW && pos - p.window > 0 ? pos - p.window : 0;
    for (int64_t ki = kbeg; ki < kend; ki++) {
      const T *kr = kb + ki * ks;
      double part = 0;
#pragma unroll
      for (int j = 0; j < WARP_LANES; j++) {
        int d = lane + 32 * j;
        if (d < p.q.D) part += q[j] * to_d(kr[d]);
      }
      for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
      double sc = part * p.scale;
      if (p.capped) sc = p.cap * tanh(sc / p.cap);
      if (sc != sc) {
        nan_seen = true;
        continue;
      }
      if (sc == -INFINITY) continue;
      double mn = sc > m ? sc : m, corr = exp(m - mn), e = exp(sc - mn);
      l = l * corr + e;
      const T *vr = vb + ki * vs;
#pragma unroll
      for (int j = 0; j < WARP_LANES; j++) {
        int d = lane + 32 * j;
        if (d < p.v.D) acc[j] = acc[j] * corr + e * to_d(vr[d]);
      }
      m = mn;
    }
    int64_t obase = at(p.o, b, h, qi, 0);
#pragma unroll
    for (int j = 0; j < WARP_LANES; j++) {
      int d = lane + 32 * j;
      if (d < p.o.D) st_f(Op, p.dtype, obase + d, nan_seen ? nan("") : l > 0 ? acc[j] / l : 0.0);
    }
  }
}

extern "C" rlx_status rlx_cu_attention(rlx_cu_ctx *c, const rlx_cu_attn *p) {
  int64_t rows = p->B * p->H * p->Sq;
  if (rows == 0 || p->o.D == 0) return RLX_OK;
  if (rlx_cu_flash_fits(p)) return rlx_cu_flash_forward(c, p, NULL, NULL);
  if (p->q.D <= 32 * WARP_LANES && p->v.D <= 32 * WARP_LANES) {
    int64_t blocks = (rows + 7) / 8;
    if (blocks > 65535 * 8) blocks = 65535 * 8;
    bool fast = (p->dtype == RLX_F32 || p->dtype == RLX_F64 || p->dtype == RLX_BF16 || p->dtype == RLX_F16) &&
                (p->mask == RLX_MASK_NONE || p->mask == RLX_MASK_CAUSAL || p->mask == RLX_MASK_SLIDING_WINDOW);
    if (fast && p->dtype == RLX_F32) attention_warp_fast<float><<<(unsigned)blocks, 256, 0, c->stream>>>(*p);
    else if (fast && p->dtype == RLX_F64) attention_warp_fast<double><<<(unsigned)blocks, 256, 0, c->stream>>>(*p);
    else if (fast && p->dtype == RLX_BF16)
      attention_warp_fast<__nv_bfloat16><<<(unsigned)blocks, 256, 0, c->stream>>>(*p);
    else if (fast) attention_warp_fast<__half><<<(unsigned)blocks, 256, 0, c->stream>>>(*p);
    else attention_warp_kernel<<<(unsigned)blocks, 256, 0, c->stream>>>(*p);
    return cu_launch_status("attention kernel");
  }
  int64_t lanes = p->v.D > p->q.D ? p->v.D : p->q.D;
  int threads = 32;
  while (threads < 256 && threads < lanes) threads *= 2;
  if (p->v.D > (int64_t)threads * ATTN_MAX_LANES)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: attention value head_dim %lld is over %d", (long long)p->v.D,
                      threads * ATTN_MAX_LANES);
  unsigned blocks = (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8);
  attention_kernel<<<blocks, threads, 0, c->stream>>>(*p);
  return cu_launch_status("attention kernel");
}

/* one thread per (token, head, lane slot): slots [0, nr/2) rotate a pair, [nr/2, nr/2 + hd - nr)
 * copy a tail lane */
__global__ void rope_kernel(rlx_cu_rope p) {
  int64_t half = p.nr / 2, slots = half + (p.hd - p.nr), total = p.batch * p.S * p.heads * slots;
  const int t = p.dtype;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t sl = e % slots, h = (e / slots) % p.heads, tok = e / (slots * p.heads), s = tok % p.S;
    int64_t base = tok * p.heads * p.hd + h * p.hd;
    if (sl >= half) {
      int64_t l = p.nr + (sl - half);
      st_f(p.out, t, base + l, ld_f(p.x, t, base + l));
      continue;
    }
    int64_t row = (p.per_token ? tok : s) * p.width;
    int64_t i0 = p.neox ? sl : 2 * sl, i1 = p.neox ? sl + half : 2 * sl + 1;
    double c = ld_f(p.cos, t, row + sl), sn = ld_f(p.sin, t, row + sl);
    double a = ld_f(p.x, t, base + i0), z = ld_f(p.x, t, base + i1);
    st_f(p.out, t, base + i0, a * c - z * sn);
    st_f(p.out, t, base + i1, z * c + a * sn);
  }
}

extern "C" rlx_status rlx_cu_rope_run(rlx_cu_ctx *c, const rlx_cu_rope *p) {
  int64_t total = p->batch * p->S * p->heads * (p->nr / 2 + p->hd - p->nr);
  if (total == 0) return RLX_OK;
  rope_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(*p);
  return cu_launch_status("rope kernel");
}
