/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tiled flash attention, forward and backward, for f32 / bf16 / f16 operands with the masks
 * decided by position (None, Causal, SlidingWindow), soft-capping and grouped-query heads, head
 * dims up to 128. Arithmetic is fp32 (FFMA, no TF32): tiles of BQ = 64 query rows and BK = 64 keys
 * live in shared memory as floats (head lanes padded with zeros to DP = 64 or 128, rows padded by
 * one word against bank conflicts); each of the 256 threads owns a 4 x 4 block of the score tile
 * (rows tr .. tr + 3, columns tc + 16 j) and the matching 4 x DP/16 block of the output, so a
 * row's softmax statistics combine over the 16 lanes of half a warp (shuffles). Tiles that the
 * mask hides entirely are skipped, so causal attention does about half the work.
 *
 * Forward (one block per 64 query rows of one (b, h)): the online softmax over the key tiles
 * (running max m, sum l, rescaled accumulator), no score matrix in device memory. In stats mode
 * the same pass writes, per query row, lse = m + log l and delta = <dy, out> instead of out.
 * Backward (FlashAttention-2's recomputation): dq one block per 64 query rows, looping over key
 * tiles: p = exp(s - lse), dp = dy . v, ds = p (dp - delta) (times 1 - tanh^2 when soft-capped);
 * dq += scale ds k. dk / dv one block per 64 keys of one K/V head, looping over the query heads
 * of its group and the query tiles: dv += p^T dy, dk += scale ds^T q. Nothing is accumulated
 * across blocks, so the results are deterministic. */
#include <string.h>

#include "backends/cuda/attn.cuh"

namespace {

constexpr int BQ = FLASH_BQ, BK = FLASH_BK, NT = 256;

/* rows x DP floats (pitch DP + 1) from rows r0 .. of src (row stride rs, D lanes); zeros past the
 * operand's rows and lanes. */
template <typename T, int DP>
__device__ inline void load_tile(float *dst, const T *src, int64_t rs, int64_t r0, int64_t nrows, int D) {
  constexpr int P = DP + 1;
  for (int e = threadIdx.x; e < 64 * DP; e += NT) {
    int r = e / DP, d = e % DP;
    float v = 0.f;
    if (r0 + r < nrows && d < D) v = to_f(src[(r0 + r) * rs + d]);
    dst[r * P + d] = v;
  }
}

__device__ inline float half_warp_max(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float half_warp_sum(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T, int DP, bool STATS>
__global__ void __launch_bounds__(NT) flash_fwd(rlx_cu_attn p, const T *G, float2 *stats) {
  extern __shared__ float sm[];
  constexpr int P = DP + 1, PP = BK + 1, NJ = DP / 16;
  float *Qs = sm, *Ks = Qs + BQ * P, *Vs = Ks + BK * P, *Ps = Vs + BK * P;
  const int tid = threadIdx.x, tr = (tid >> 4) * 4, tc = tid & 15;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * BQ;
  const T *Qg = (const T *)p.Q + base_of(p.q, b, h), *Kg = (const T *)p.K + base_of(p.k, b, kh),
          *Vg = (const T *)p.V + base_of(p.v, b, kh);
  const int64_t qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const int D = (int)p.q.D, Dv = (int)p.v.D;
  load_tile<T, DP>(Qs, Qg, qs, q0, p.Sq, D);
  float acc[4][NJ], m[4], l[4];
  bool bad[4];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    m[i] = -INFINITY;
    l[i] = 0.f;
    bad[i] = false;
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[i][j] = 0.f;
  }
  tile_range kr = key_tiles(p, q0);
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += BK) {
    __syncthreads();
    load_tile<T, DP>(Ks, Kg, ks, k0, p.Sk, D);
    load_tile<T, DP>(Vs, Vg, vs, k0, p.Sk, Dv);
    __syncthreads();
    float s[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) s[i][j] = 0.f;
#pragma unroll 8
    for (int d = 0; d < DP; d++) {
      float a[4], k[4];
#pragma unroll
      for (int i = 0; i < 4; i++) a[i] = Qs[(tr + i) * P + d];
#pragma unroll
      for (int j = 0; j < 4; j++) k[j] = Ks[(tc + 16 * j) * P + d];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) s[i][j] = fmaf(a[i], k[j], s[i][j]);
    }
    const bool full = tile_full(p, q0, k0);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      int64_t qi = q0 + tr + i;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float th, v = score(p, s[i][j], &th);
        if (!full && !visible(p, qi, k0 + tc + 16 * j))
          v = -INFINITY;
        else if (v != v) {
          bad[i] = true;
          v = -INFINITY;
        }
        s[i][j] = v;
        mx = fmaxf(mx, v);
      }
      mx = half_warp_max(mx);
      float mn = fmaxf(m[i], mx), corr = mn == -INFINITY ? 1.f : __expf(m[i] - mn), rs = 0.f;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float e = mn == -INFINITY ? 0.f : __expf(s[i][j] - mn);
        Ps[(tr + i) * PP + tc + 16 * j] = e;
        rs += e;
      }
      rs = half_warp_sum(rs);
      l[i] = l[i] * corr + rs;
      m[i] = mn;
#pragma unroll
      for (int j = 0; j < NJ; j++) acc[i][j] *= corr;
    }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < BK; k++) {
      float pv[4], vv[NJ];
#pragma unroll
      for (int i = 0; i < 4; i++) pv[i] = Ps[(tr + i) * PP + k];
#pragma unroll
      for (int j = 0; j < NJ; j++) vv[j] = Vs[k * P + tc + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) acc[i][j] = fmaf(pv[i], vv[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + tr + i;
    bool nan_row = half_warp_sum(bad[i] ? 1.f : 0.f) > 0.f;
    float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
    if (!STATS) {
      if (qi >= p.Sq) continue;
      const int64_t off = base_of(p.o, b, h) + qi * row_stride(p.o);
      T *o = (T *)p.out + off, *sv = p.save_out ? (T *)p.save_out + off : NULL;
#pragma unroll
      for (int j = 0; j < NJ; j++) {
        int d = tc + 16 * j;
        if (d >= Dv) continue;
        T y = from_f<T>(nan_row ? NAN : acc[i][j] * inv);
        o[d] = y;
        if (sv) sv[d] = y;
      }
      if (p.save_lse && tc == 0)
        ((float2 *)p.save_lse)[bh * p.Sq + qi] =
            make_float2(nan_row ? NAN : l[i] > 0.f ? m[i] + __logf(l[i]) : INFINITY, 0.f);
    } else {
      float dl = 0.f;
      if (qi < p.Sq) {
        const T *g = G + base_of(p.q, b, h) + qi * qs;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
          int d = tc + 16 * j;
          if (d < Dv) dl = fmaf(to_f(g[d]), acc[i][j] * inv, dl);
        }
      }
      dl = half_warp_sum(dl);
      if (tc == 0 && qi < p.Sq)
        stats[bh * p.Sq + qi] = make_float2(nan_row ? NAN : l[i] > 0.f ? m[i] + __logf(l[i]) : INFINITY, dl);
    }
  }
}

/* dq for 64 query rows of one (b, h). */
template <typename T, int DP>
__global__ void __launch_bounds__(NT) flash_bwd_dq(rlx_cu_attn p, const T *G, const float2 *stats, T *dq) {
  extern __shared__ float sm[];
  constexpr int P = DP + 1, PP = BK + 1, NJ = DP / 16;
  float *Qs = sm, *Gs = Qs + BQ * P, *Ks = Gs + BQ * P, *Vs = Ks + BK * P, *Ss = Vs + BK * P;
  const int tid = threadIdx.x, tr = (tid >> 4) * 4, tc = tid & 15;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * BQ;
  const int64_t qb = base_of(p.q, b, h), qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const T *Kg = (const T *)p.K + base_of(p.k, b, kh), *Vg = (const T *)p.V + base_of(p.v, b, kh);
  const int D = (int)p.q.D;
  load_tile<T, DP>(Qs, (const T *)p.Q + qb, qs, q0, p.Sq, D);
  load_tile<T, DP>(Gs, G + qb, qs, q0, p.Sq, D);
  float acc[4][NJ], lse[4], dl[4];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + tr + i;
    float2 st = qi < p.Sq ? stats[bh * p.Sq + qi] : make_float2(INFINITY, 0.f);
    lse[i] = st.x;
    dl[i] = st.y;
#pragma unroll
    for (int j = 0; j < NJ; j++) acc[i][j] = 0.f;
  }
  const float scale = (float)p.scale;
  tile_range kr = key_tiles(p, q0);
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += BK) {
    __syncthreads();
    load_tile<T, DP>(Ks, Kg, ks, k0, p.Sk, D);
    load_tile<T, DP>(Vs, Vg, vs, k0, p.Sk, D);
    __syncthreads();
    float s[4][4], dp[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) s[i][j] = dp[i][j] = 0.f;
#pragma unroll 4
    for (int d = 0; d < DP; d++) {
      float a[4], g[4], k[4], v[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        a[i] = Qs[(tr + i) * P + d];
        g[i] = Gs[(tr + i) * P + d];
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        k[j] = Ks[(tc + 16 * j) * P + d];
        v[j] = Vs[(tc + 16 * j) * P + d];
      }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
          s[i][j] = fmaf(a[i], k[j], s[i][j]);
          dp[i][j] = fmaf(g[i], v[j], dp[i][j]);
        }
    }
    const bool full = tile_full(p, q0, k0);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float ds = 0.f, th;
        float sc = score(p, s[i][j], &th);
        if (full || visible(p, q0 + tr + i, k0 + tc + 16 * j)) {
          float pr = __expf(sc - lse[i]);
          ds = pr * (dp[i][j] - dl[i]) * (1.f - th * th) * scale;
        }
        Ss[(tr + i) * PP + tc + 16 * j] = ds;
      }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < BK; k++) {
      float sv[4], kv[NJ];
#pragma unroll
      for (int i = 0; i < 4; i++) sv[i] = Ss[(tr + i) * PP + k];
#pragma unroll
      for (int j = 0; j < NJ; j++) kv[j] = Ks[k * P + tc + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++) acc[i][j] = fmaf(sv[i], kv[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t qi = q0 + tr + i;
    if (qi >= p.Sq) continue;
    T *o = dq + qb + qi * qs;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      int d = tc + 16 * j;
      if (d < D) o[d] = from_f<T>(acc[i][j]);
    }
  }
}

/* dk and / or dv for 64 keys of one (b, K/V head), summed over the query heads of its group. */
template <typename T, int DP, bool WK, bool WV>
__global__ void __launch_bounds__(NT) flash_bwd_dkv(rlx_cu_attn p, const T *G, const float2 *stats, T *dk, T *dv) {
  extern __shared__ float sm[];
  constexpr int P = DP + 1, PP = BQ + 1, NJ = DP / 16;
  float *Ks = sm, *Vs = Ks + BK * P, *Qs = Vs + BK * P, *Gs = Qs + BQ * P, *Ss = Gs + BQ * P, *Ls = Ss + BK * PP,
        *Dl = Ls + BQ;
  const int tid = threadIdx.x, tr = (tid >> 4) * 4, tc = tid & 15;
  const int64_t Hk = p.H / p.group, bk = blockIdx.y, b = bk / Hk, kh = bk % Hk, k0 = (int64_t)blockIdx.x * BK;
  const int64_t qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const int D = (int)p.q.D;
  load_tile<T, DP>(Ks, (const T *)p.K + base_of(p.k, b, kh), ks, k0, p.Sk, D);
  if (WK) load_tile<T, DP>(Vs, (const T *)p.V + base_of(p.v, b, kh), vs, k0, p.Sk, D);
  float ak[4][NJ], av[4][NJ];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < NJ; j++) ak[i][j] = av[i][j] = 0.f;
  const float scale = (float)p.scale;
  tile_range qr = query_tiles(p, k0);
  for (int64_t h = kh * p.group; h < (kh + 1) * p.group; h++) {
    const int64_t qb = base_of(p.q, b, h), bh = b * p.H + h;
    for (int64_t q0 = qr.beg; q0 < qr.end; q0 += BQ) {
      __syncthreads();
      load_tile<T, DP>(Qs, (const T *)p.Q + qb, qs, q0, p.Sq, D);
      load_tile<T, DP>(Gs, G + qb, qs, q0, p.Sq, D);
      if (tid < BQ) {
        float2 st = q0 + tid < p.Sq ? stats[bh * p.Sq + q0 + tid] : make_float2(INFINITY, 0.f);
        Ls[tid] = st.x;
        Dl[tid] = st.y;
      }
      __syncthreads();
      /* rows: keys tr + i; columns: queries tc + 16 j */
      float s[4][4], dp[4][4];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) s[i][j] = dp[i][j] = 0.f;
#pragma unroll 4
      for (int d = 0; d < DP; d++) {
        float k[4], v[4], q[4], g[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
          k[i] = Ks[(tr + i) * P + d];
          if (WK) v[i] = Vs[(tr + i) * P + d];
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
          q[j] = Qs[(tc + 16 * j) * P + d];
          if (WK) g[j] = Gs[(tc + 16 * j) * P + d];
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) {
            s[i][j] = fmaf(k[i], q[j], s[i][j]);
            if (WK) dp[i][j] = fmaf(v[i], g[j], dp[i][j]);
          }
      }
      float pr[4][4];
      const bool full = tile_full(p, q0, k0);
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
          int qj = tc + 16 * j;
          float th, sc = score(p, s[i][j], &th);
          bool vis = full || visible(p, q0 + qj, k0 + tr + i);
          pr[i][j] = vis ? __expf(sc - Ls[qj]) : 0.f;
          s[i][j] = vis ? pr[i][j] * (dp[i][j] - Dl[qj]) * (1.f - th * th) * scale : 0.f; /* ds */
        }
      if (WV) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) Ss[(tr + i) * PP + tc + 16 * j] = pr[i][j];
        __syncthreads();
#pragma unroll 4
        for (int q = 0; q < BQ; q++) {
          float sv[4], gv[NJ];
#pragma unroll
          for (int i = 0; i < 4; i++) sv[i] = Ss[(tr + i) * PP + q];
#pragma unroll
          for (int j = 0; j < NJ; j++) gv[j] = Gs[q * P + tc + 16 * j];
#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++) av[i][j] = fmaf(sv[i], gv[j], av[i][j]);
        }
        __syncthreads();
      }
      if (WK) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) Ss[(tr + i) * PP + tc + 16 * j] = s[i][j];
        __syncthreads();
#pragma unroll 4
        for (int q = 0; q < BQ; q++) {
          float sv[4], qv[NJ];
#pragma unroll
          for (int i = 0; i < 4; i++) sv[i] = Ss[(tr + i) * PP + q];
#pragma unroll
          for (int j = 0; j < NJ; j++) qv[j] = Qs[q * P + tc + 16 * j];
#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++) ak[i][j] = fmaf(sv[i], qv[j], ak[i][j]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; i++) {
    int64_t ki = k0 + tr + i;
    if (ki >= p.Sk) continue;
#pragma unroll
    for (int j = 0; j < NJ; j++) {
      int d = tc + 16 * j;
      if (d >= D) continue;
      if (WK) dk[base_of(p.k, b, kh) + ki * ks + d] = from_f<T>(ak[i][j]);
      if (WV) dv[base_of(p.v, b, kh) + ki * vs + d] = from_f<T>(av[i][j]);
    }
  }
}

constexpr size_t fwd_smem(int dp) { return (size_t)(BQ * (dp + 1) + 2 * BK * (dp + 1) + BQ * (BK + 1)) * 4; }
constexpr size_t dq_smem(int dp) { return (size_t)(2 * BQ * (dp + 1) + 2 * BK * (dp + 1) + BQ * (BK + 1)) * 4; }
constexpr size_t dkv_smem(int dp) {
  return (size_t)(2 * BK * (dp + 1) + 2 * BQ * (dp + 1) + BK * (BQ + 1) + 2 * BQ) * 4;
}

/* Raises a kernel's dynamic shared-memory limit once. */
template <typename K> static cudaError_t allow_smem(K kernel, size_t bytes, bool *done) {
  if (*done) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess) *done = true;
  return e;
}

template <typename T, int DP, bool STATS>
rlx_status launch_fwd(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  static bool ok;
  size_t sm = fwd_smem(DP);
  if (allow_smem(flash_fwd<T, DP, STATS>, sm, &ok) != cudaSuccess) return cu_launch_status("flash forward setup");
  dim3 grid((unsigned)((p->Sq + BQ - 1) / BQ), (unsigned)(p->B * p->H));
  flash_fwd<T, DP, STATS><<<grid, NT, sm, c->stream>>>(*p, (const T *)G, (float2 *)stats);
  return cu_launch_status("flash attention forward");
}

template <typename T, int DP> rlx_status launch_bwd(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  const rlx_cu_attn *a = &p->a;
  if (p->compute_stats == 1) RLX_TRY((launch_fwd<T, DP, true>(c, a, p->G, p->stats)));
  if (p->compute_stats == 2) RLX_TRY(rlx_cu_flash_delta(c, p));
  const T *G = (const T *)p->G;
  const float2 *st = (const float2 *)p->stats;
  if (p->dq) {
    static bool ok;
    size_t sm = dq_smem(DP);
    if (allow_smem(flash_bwd_dq<T, DP>, sm, &ok) != cudaSuccess) return cu_launch_status("flash dq setup");
    dim3 grid((unsigned)((a->Sq + BQ - 1) / BQ), (unsigned)(a->B * a->H));
    flash_bwd_dq<T, DP><<<grid, NT, sm, c->stream>>>(*a, G, st, (T *)p->dq);
    RLX_TRY(cu_launch_status("flash attention dq"));
  }
  if (p->dk || p->dv) {
    size_t sm = dkv_smem(DP);
    dim3 grid((unsigned)((a->Sk + BK - 1) / BK), (unsigned)(a->B * (a->H / a->group)));
    T *dk = (T *)p->dk, *dv = (T *)p->dv;
    if (dk && dv) {
      static bool ok;
      if (allow_smem(flash_bwd_dkv<T, DP, true, true>, sm, &ok) != cudaSuccess) return cu_launch_status("flash dkv");
      flash_bwd_dkv<T, DP, true, true><<<grid, NT, sm, c->stream>>>(*a, G, st, dk, dv);
    } else if (dk) {
      static bool ok;
      if (allow_smem(flash_bwd_dkv<T, DP, true, false>, sm, &ok) != cudaSuccess) return cu_launch_status("flash dk");
      flash_bwd_dkv<T, DP, true, false><<<grid, NT, sm, c->stream>>>(*a, G, st, dk, dv);
    } else {
      static bool ok;
      if (allow_smem(flash_bwd_dkv<T, DP, false, true>, sm, &ok) != cudaSuccess) return cu_launch_status("flash dv");
      flash_bwd_dkv<T, DP, false, true><<<grid, NT, sm, c->stream>>>(*a, G, st, dk, dv);
    }
    RLX_TRY(cu_launch_status("flash attention dk / dv"));
  }
  return RLX_OK;
}

int head_pad(const rlx_cu_attn *p) {
  int64_t d = p->q.D > p->v.D ? p->q.D : p->v.D;
  return d <= 64 ? 64 : 128;
}

} // namespace

/* delta = <dy, out> of each query row from the forward's saved output, in float (as the
 * statistics pass of the forward kernels sums it): L lanes per row (32 / L rows per warp), 4
 * lanes per access with VEC, the lanes' parts summed by shuffles within the row's L lanes. With
 * L = 32 for every D the GPT-2 block's 64-lane rows left half of each warp idle (33 us for its
 * [8, 12, 1024, 64] f32 rows on the H200); L is the smallest power of two covering D / 4, and a
 * lane that a wider group would have added holds 0, so the sums keep their bits. */
template <typename T, bool VEC, int L>
__global__ void flash_delta_kernel(rlx_cu_attn p, const T *G, const T *O, float2 *stats) {
  constexpr int PER = 32 / L; /* rows per warp */
  const int64_t rows = p.B * p.H * p.Sq, warps = (int64_t)gridDim.x * (blockDim.x / 32);
  const int lane = threadIdx.x % L, sub = (threadIdx.x % 32) / L;
  /* warp-uniform trip count: every lane reaches the shuffles */
  for (int64_t r0 = (blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32) * PER; r0 < rows; r0 += warps * PER) {
    const int64_t r = r0 + sub;
    float dl = 0.f;
    const int64_t bh = r / p.Sq, qi = r % p.Sq, b = bh / p.H, h = bh % p.H;
    const T *g = G + base_of(p.q, b, h) + qi * row_stride(p.q), *o = O + base_of(p.o, b, h) + qi * row_stride(p.o);
    if (r < rows && VEC) { /* 4 lanes per access: D, the row starts and the bases are multiples of 4 */
      for (int64_t d = 4 * lane; d < p.o.D; d += 4 * L) {
        T gv[4], ov[4];
        ld4_t<T>(g + d, gv);
        ld4_t<T>(o + d, ov);
        for (int k = 0; k < 4; k++) dl = fmaf(to_f(gv[k]), to_f(ov[k]), dl);
      }
    } else if (r < rows) {
      for (int64_t d = lane; d < p.o.D; d += L) dl = fmaf(to_f(g[d]), to_f(o[d]), dl);
    }
    for (int k = L / 2; k > 0; k >>= 1) dl += __shfl_xor_sync(0xffffffffu, dl, k, L);
    if (lane == 0 && r < rows) stats[r].y = dl;
  }
}

rlx_status rlx_cu_flash_delta(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  const rlx_cu_attn *a = &p->a;
  const int64_t rows = a->B * a->H * a->Sq;
  if (rows == 0) return RLX_OK;
  float2 *st = (float2 *)p->stats;
  const size_t esz = a->dtype == RLX_F32 ? 4 : 2;
  /* q's and out's layouts share the row stride and bases (multiples of D) */
  const bool vec = a->o.D == a->q.D && a->q.D % 4 == 0 && (uintptr_t)p->G % (4 * esz) == 0 &&
                   (uintptr_t)p->saved_out % (4 * esz) == 0;
  /* lanes per row: 32, or 8 / 16 when D / 4 fits them (two or four rows per warp) */
  const int L = vec && a->o.D <= 32 ? 8 : vec && a->o.D <= 64 ? 16 : 32;
  int64_t blocks = (rows + 256 / L - 1) / (256 / L);
  if (blocks > 132 * 64) blocks = 132 * 64;
  const unsigned nb = (unsigned)blocks;
  const void *Gp = p->G, *Op = p->saved_out;
#define RLX_DELTA(T)                                                               \
  do {                                                                             \
    const T *g_ = (const T *)Gp, *o_ = (const T *)Op;                              \
    if (!vec)                                                                      \
      flash_delta_kernel<T, false, 32><<<nb, 256, 0, c->stream>>>(*a, g_, o_, st); \
    else if (L == 8)                                                               \
      flash_delta_kernel<T, true, 8><<<nb, 256, 0, c->stream>>>(*a, g_, o_, st);   \
    else if (L == 16)                                                              \
      flash_delta_kernel<T, true, 16><<<nb, 256, 0, c->stream>>>(*a, g_, o_, st);  \
    else                                                                           \
      flash_delta_kernel<T, true, 32><<<nb, 256, 0, c->stream>>>(*a, g_, o_, st);  \
  } while (0)
  switch (a->dtype) {
  case RLX_F32: RLX_DELTA(float); break;
  case RLX_BF16: RLX_DELTA(__nv_bfloat16); break;
  default: RLX_DELTA(__half); break;
  }
#undef RLX_DELTA
  return cu_launch_status("flash attention delta");
}

extern "C" int rlx_cu_flash_fits(const rlx_cu_attn *p) {
  bool dt = p->dtype == RLX_F32 || p->dtype == RLX_BF16 || p->dtype == RLX_F16;
  bool mk = p->mask == RLX_MASK_NONE || p->mask == RLX_MASK_CAUSAL || p->mask == RLX_MASK_SLIDING_WINDOW;
  return dt && mk && p->q.D <= 128 && p->v.D <= 128 && p->B * p->H <= 65535 && p->Sq > 0 && p->Sk > 0;
}

extern "C" rlx_status rlx_cu_flash_forward(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  if (rlx_cu_flash_tc_fits(c, p)) return rlx_cu_flash_tc_forward(c, p, G, stats);
  bool s = stats != NULL, wide = head_pad(p) == 128;
  switch (p->dtype) {
  case RLX_F32:
    return s ? (wide ? launch_fwd<float, 128, true>(c, p, G, stats) : launch_fwd<float, 64, true>(c, p, G, stats))
             : (wide ? launch_fwd<float, 128, false>(c, p, G, stats) : launch_fwd<float, 64, false>(c, p, G, stats));
  case RLX_BF16:
    return s ? (wide ? launch_fwd<__nv_bfloat16, 128, true>(c, p, G, stats)
                     : launch_fwd<__nv_bfloat16, 64, true>(c, p, G, stats))
             : (wide ? launch_fwd<__nv_bfloat16, 128, false>(c, p, G, stats)
                     : launch_fwd<__nv_bfloat16, 64, false>(c, p, G, stats));
  default:
    return s ? (wide ? launch_fwd<__half, 128, true>(c, p, G, stats) : launch_fwd<__half, 64, true>(c, p, G, stats))
             : (wide ? launch_fwd<__half, 128, false>(c, p, G, stats) : launch_fwd<__half, 64, false>(c, p, G, stats));
  }
}

extern "C" rlx_status rlx_cu_flash_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  if (rlx_cu_flash_tc_fits(c, &p->a)) return rlx_cu_flash_tc_backward(c, p);
  bool wide = head_pad(&p->a) == 128;
  switch (p->a.dtype) {
  case RLX_F32: return wide ? launch_bwd<float, 128>(c, p) : launch_bwd<float, 64>(c, p);
  case RLX_BF16: return wide ? launch_bwd<__nv_bfloat16, 128>(c, p) : launch_bwd<__nv_bfloat16, 64>(c, p);
  default: return wide ? launch_bwd<__half, 128>(c, p) : launch_bwd<__half, 64>(c, p);
  }
}
