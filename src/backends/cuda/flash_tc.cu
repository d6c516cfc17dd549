/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tensor-core flash attention, forward and backward, for bf16 / f16 operands with head dims up to
 * 64 and the masks decided by position (None, Causal, SlidingWindow), soft-capping and
 * grouped-query heads: the same algorithm and tiling as flash.cu (64 query rows x 64 keys, tiles
 * the mask hides skipped, FlashAttention-2's recomputation for the backward, no atomics), with
 * every product of two tiles on mma.sync m16n8k16 (16-bit operands, fp32 accumulation).
 *
 * A block is 4 warps; warp w owns 16 rows of its tile (query rows in the forward and dq, keys in
 * dk / dv). Operand tiles sit in shared memory as the operand dtype, 64 rows of 64 lanes (zeros
 * past the operand's rows and lanes) with a pitch of 72 elements, so the fragment loads (one
 * 32-bit word per thread, rows g = lane / 4, words t = lane % 4) hit 32 distinct banks; where a
 * tile is the k-major B operand of a product (V in the forward, K in dq, q and dy in dk / dv) its
 * fragments come from the same row-major tile through ldmatrix .trans instead of a transposed
 * copy stored element by element (docs/cuda.md has the timings). The warp's own rows of the
 * first operand stay in registers as A fragments for the whole block. Score accumulators
 * are fp32; the probabilities (forward, dv) and ds (dq, dk) are rounded to the operand dtype
 * for their product, as in FlashAttention-2; softmax statistics, the scale, the soft-cap and the
 * masks are fp32 as in flash.cu. The per-row statistics (lse, delta) have flash.cu's layout, so
 * either kernel family can read what the other wrote. RLX_CUDA_FLASH_TC=0 turns this path off
 * (flash.cu's FFMA kernels then take every dtype). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/attn.cuh"

namespace {

constexpr int TQ = FLASH_BQ, TK = FLASH_BK, TD = 64, TT = 128, PT = TD + 8;

template <typename T> __device__ inline void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1);
template <> __device__ inline void mma16816<__nv_bfloat16>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ inline void mma16816<__half>(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two floats as one word of the operand dtype (lo in the low half: the lower column) */
template <typename T> __device__ inline uint32_t pack2(float lo, float hi);
template <> __device__ inline uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}
template <> __device__ inline uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}

template <typename T> __device__ inline uint32_t ld32(const T *p) { return *(const uint32_t *)p; }

/* The A fragment of rows r0 .. r0 + 15, lanes k0 .. k0 + 15 of a row-major tile. */
template <typename T> __device__ inline void frag_a(uint32_t *a, const T *X, int r0, int k0, int g, int t) {
  const T *p = X + (r0 + g) * PT + k0 + 2 * t;
  a[0] = ld32(p);
  a[1] = ld32(p + 8 * PT);
  a[2] = ld32(p + 8);
  a[3] = ld32(p + 8 * PT + 8);
}

/* acc (16 x 8, n-tile at column n0 of Y's rows) += A (16 x 16k) x Y^T, Y stored [n][k]. */
template <typename T>
__device__ inline void mma_nt(float *acc, const uint32_t *a, const T *Y, int n0, int k0, int g, int t) {
  const T *p = Y + (n0 + g) * PT + k0 + 2 * t;
  mma16816<T>(acc, a, ld32(p), ld32(p + 8));
}

/* acc0 / acc1 (the n-tiles at columns n0 and n0 + 8) += A (16 x 16k) x Y[k0 .. k0 + 15][n0 ..
 * n0 + 15], Y stored row-major [k][n]: ldmatrix .trans hands each thread the B fragment elements
 * Y[k0 + 2t (+1) (+8)][n0 + g] of the two n-tiles, so no transposed copy of the tile is kept.
 * Lane i addresses row i % 8 of matrix i / 8 (b0 of n0, b1 of n0, b0 of n0 + 8, b1 of n0 + 8);
 * rows are 16-byte aligned (pitch 144 bytes) and the 8 rows of one matrix hit distinct banks. */
template <typename T>
__device__ inline void mma_kn2(float *acc0, float *acc1, const uint32_t *a, const T *Y, int k0, int n0, int lane) {
  const int m = lane >> 3, r = lane & 7;
  const T *p = Y + (k0 + (m & 1) * 8 + r) * PT + n0 + (m >> 1) * 8;
  uint32_t b0, b1, b2, b3, addr = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
               : "r"(addr));
  mma16816<T>(acc0, a, b0, b1);
  mma16816<T>(acc1, a, b2, b3);
}

/* 64 rows x TD lanes of src (rows r0 .., row stride rs, D lanes) into dst [row][lane]; zeros past
 * the operand's rows and lanes. 16-byte loads when the rows are full and aligned. */
template <typename T>
__device__ inline void tile_rows(T *dst, const T *src, int64_t rs, int64_t r0, int64_t nrows, int D) {
  if (D == TD && rs % 8 == 0 && ((uintptr_t)src & 15) == 0) {
    for (int e = threadIdx.x; e < 64 * (TD / 8); e += TT) {
      int r = e / (TD / 8), d = e % (TD / 8) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r0 + r < nrows) v = *(const uint4 *)(src + (r0 + r) * rs + d);
      *(uint4 *)(dst + r * PT + d) = v;
    }
    return;
  }
  const T zero = from_f<T>(0.f);
  for (int e = threadIdx.x; e < 64 * TD; e += TT) {
    int r = e / TD, d = e % TD;
    dst[r * PT + d] = r0 + r < nrows && d < D ? src[(r0 + r) * rs + d] : zero;
  }
}

/* The same load through cp.async (16-byte copies, zero-filled past nrows), for full-width rows
 * with aligned starts (rows_async_ok); completes at cp_wait. The kernels below double-buffer
 * their streamed tiles this way: the next tile's copies run while the current one is used. */
template <typename T> __device__ inline bool rows_async_ok(const void *src, int64_t rs, int D) {
  return D == TD && rs % 8 == 0 && ((uintptr_t)src & 15) == 0;
}
template <typename T>
__device__ inline void tile_rows_async(T *dst, const T *src, int64_t rs, int64_t r0, int64_t nrows) {
  for (int e = threadIdx.x; e < 64 * (TD / 8); e += TT) {
    int r = e / (TD / 8), d = e % (TD / 8) * 8;
    bool in = r0 + r < nrows;
    const T *g = in ? src + (r0 + r) * rs + d : src;
    uint32_t sa = (uint32_t)__cvta_generic_to_shared(dst + r * PT + d);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(g), "r"(in ? 16 : 0));
  }
}
__device__ inline void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ inline void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ inline float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ inline float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/* Forward: one block per 64 query rows of one (b, h). Accumulator element e of n-tile j is row
 * (e < 2 ? g : g + 8) of the warp's 16, column 8 j + 2 t + (e & 1). */
template <typename T, bool STATS>
__global__ void __launch_bounds__(TT) tc_fwd(rlx_cu_attn p, const T *G, float2 *stats) {
  __shared__ __align__(16) T Ks[2][TK * PT];
  __shared__ __align__(16) T Vs[2][TK * PT];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * TQ;
  const T *Qg = (const T *)p.Q + base_of(p.q, b, h), *Kg = (const T *)p.K + base_of(p.k, b, kh),
          *Vg = (const T *)p.V + base_of(p.v, b, kh);
  const int64_t qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const int D = (int)p.q.D, Dv = (int)p.v.D;
  tile_rows(Ks[0], Qg, qs, q0, p.Sq, D); /* the query tile passes through Ks[0] */
  __syncthreads();
  uint32_t qa[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; kk++) frag_a(qa[kk], Ks[0], 16 * w, 16 * kk, g, t);
  const bool async = rows_async_ok<T>(Kg, ks, D) && rows_async_ok<T>(Vg, vs, Dv);
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  bool bad[2] = {false, false};
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[j][e] = 0.f;
  const int64_t row[2] = {q0 + 16 * w + g, q0 + 16 * w + g + 8};
  tile_range kr = key_tiles(p, q0);
  __syncthreads(); /* the query fragments are read before Ks[0] is refilled */
  if (async && kr.beg < kr.end) {
    tile_rows_async(Ks[0], Kg, ks, kr.beg, p.Sk);
    tile_rows_async(Vs[0], Vg, vs, kr.beg, p.Sk);
    cp_commit();
  }
  int cur = 0;
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += TK, cur ^= 1) {
    if (async) {
      if (k0 + TK < kr.end) {
        tile_rows_async(Ks[cur ^ 1], Kg, ks, k0 + TK, p.Sk);
        tile_rows_async(Vs[cur ^ 1], Vg, vs, k0 + TK, p.Sk);
        cp_commit();
        cp_wait<1>();
      } else {
        cp_wait<0>();
      }
    } else {
      tile_rows(Ks[cur], Kg, ks, k0, p.Sk, D);
      tile_rows(Vs[cur], Vg, vs, k0, p.Sk, Dv);
    }
    __syncthreads();
    const T *Kc = Ks[cur], *Vc = Vs[cur];
    float s[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++) {
#pragma unroll
      for (int e = 0; e < 4; e++) s[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < 4; kk++) mma_nt(s[j], qa[kk], Kc, 8 * j, 16 * kk, g, t);
    }
    const bool full = tile_full(p, q0, k0);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float th, v = score(p, s[j][e], &th);
        if (!full && !visible(p, row[e >> 1], k0 + 8 * j + 2 * t + (e & 1)))
          v = -INFINITY;
        else if (v != v) {
          bad[e >> 1] = true;
          v = -INFINITY;
        }
        s[j][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    float mn[2], corr[2], rs[2] = {0.f, 0.f};
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mn[r] = fmaxf(m[r], quad_max(mx[r]));
      corr[r] = mn[r] == -INFINITY ? 1.f : __expf(m[r] - mn[r]);
      m[r] = mn[r];
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int r = e >> 1;
        float x = mn[r] == -INFINITY ? 0.f : __expf(s[j][e] - mn[r]);
        s[j][e] = x;
        rs[r] += x;
        o[j][e] *= corr[r];
      }
    l[0] = l[0] * corr[0] + rs[0]; /* partial over this thread's columns: summed over the quad at the end */
    l[1] = l[1] * corr[1] + rs[1];
#pragma unroll
    for (int kc = 0; kc < 4; kc++) {
      uint32_t pa[4] = {pack2<T>(s[2 * kc][0], s[2 * kc][1]), pack2<T>(s[2 * kc][2], s[2 * kc][3]),
                        pack2<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]), pack2<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
      for (int n = 0; n < 8; n += 2) mma_kn2(o[n], o[n + 1], pa, Vc, 16 * kc, 8 * n, lane);
    }
    __syncthreads(); /* buffer cur is read before it is refilled */
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float lt = quad_sum(l[r]);
    bool nan_row = quad_sum(bad[r] ? 1.f : 0.f) > 0.f;
    float inv = lt > 0.f ? 1.f / lt : 0.f;
    int64_t qi = row[r];
    if (!STATS) {
      if (qi >= p.Sq) continue;
      const int64_t off = base_of(p.o, b, h) + qi * row_stride(p.o);
      T *out = (T *)p.out + off, *sv = p.save_out ? (T *)p.save_out + off : NULL;
#pragma unroll
      for (int j = 0; j < 8; j++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
          int d = 8 * j + 2 * t + c;
          if (d >= Dv) continue;
          T y = from_f<T>(nan_row ? NAN : o[j][2 * r + c] * inv);
          out[d] = y;
          if (sv) sv[d] = y;
        }
      if (p.save_lse && t == 0)
        ((float2 *)p.save_lse)[bh * p.Sq + qi] =
            make_float2(nan_row ? NAN : lt > 0.f ? m[r] + __logf(lt) : INFINITY, 0.f);
    } else {
      float dl = 0.f;
      if (qi < p.Sq) {
        const T *gy = G + base_of(p.q, b, h) + qi * qs;
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
          for (int c = 0; c < 2; c++) {
            int d = 8 * j + 2 * t + c;
            if (d < Dv) dl = fmaf(to_f(gy[d]), o[j][2 * r + c] * inv, dl);
          }
      }
      dl = quad_sum(dl);
      if (t == 0 && qi < p.Sq)
        stats[bh * p.Sq + qi] = make_float2(nan_row ? NAN : lt > 0.f ? m[r] + __logf(lt) : INFINITY, dl);
    }
  }
}

/* dq for 64 query rows of one (b, h): s = q k^T, dp = dy v^T, ds = p (dp - delta) (1 - th^2)
 * scale, dq += ds k. */
template <typename T>
__global__ void __launch_bounds__(TT) tc_dq(rlx_cu_attn p, const T *G, const float2 *stats, T *dq) {
  __shared__ __align__(16) T Ks[2][TK * PT];
  __shared__ __align__(16) T Vs[2][TK * PT];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * TQ;
  const int64_t qb = base_of(p.q, b, h), qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const T *Kg = (const T *)p.K + base_of(p.k, b, kh), *Vg = (const T *)p.V + base_of(p.v, b, kh);
  const int D = (int)p.q.D;
  tile_rows(Ks[0], (const T *)p.Q + qb, qs, q0, p.Sq, D);
  tile_rows(Vs[0], G + qb, qs, q0, p.Sq, D);
  __syncthreads();
  uint32_t qa[4][4], ga[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; kk++) {
    frag_a(qa[kk], Ks[0], 16 * w, 16 * kk, g, t);
    frag_a(ga[kk], Vs[0], 16 * w, 16 * kk, g, t);
  }
  const bool async = rows_async_ok<T>(Kg, ks, D) && rows_async_ok<T>(Vg, vs, D);
  const int64_t row[2] = {q0 + 16 * w + g, q0 + 16 * w + g + 8};
  float lse[2], dl[2], acc[8][4];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float2 st = row[r] < p.Sq ? stats[bh * p.Sq + row[r]] : make_float2(INFINITY, 0.f);
    lse[r] = st.x;
    dl[r] = st.y;
  }
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.f;
  const float scale = (float)p.scale;
  tile_range kr = key_tiles(p, q0);
  __syncthreads(); /* the fragments are read before buffer 0 is refilled */
  if (async && kr.beg < kr.end) {
    tile_rows_async(Ks[0], Kg, ks, kr.beg, p.Sk);
    tile_rows_async(Vs[0], Vg, vs, kr.beg, p.Sk);
    cp_commit();
  }
  int cur = 0;
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += TK, cur ^= 1) {
    if (async) {
      if (k0 + TK < kr.end) {
        tile_rows_async(Ks[cur ^ 1], Kg, ks, k0 + TK, p.Sk);
        tile_rows_async(Vs[cur ^ 1], Vg, vs, k0 + TK, p.Sk);
        cp_commit();
        cp_wait<1>();
      } else {
        cp_wait<0>();
      }
    } else {
      tile_rows(Ks[cur], Kg, ks, k0, p.Sk, D);
      tile_rows(Vs[cur], Vg, vs, k0, p.Sk, D);
    }
    __syncthreads();
    const T *Kc = Ks[cur], *Vc = Vs[cur];
    float s[8][4], dp[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++) {
#pragma unroll
      for (int e = 0; e < 4; e++) s[j][e] = dp[j][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < 4; kk++) {
        mma_nt(s[j], qa[kk], Kc, 8 * j, 16 * kk, g, t);
        mma_nt(dp[j], ga[kk], Vc, 8 * j, 16 * kk, g, t);
      }
    }
    const bool full = tile_full(p, q0, k0);
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int r = e >> 1;
        float th, sc = score(p, s[j][e], &th), ds = 0.f;
        if (full || visible(p, row[r], k0 + 8 * j + 2 * t + (e & 1)))
          ds = __expf(sc - lse[r]) * (dp[j][e] - dl[r]) * (1.f - th * th) * scale;
        s[j][e] = ds;
      }
#pragma unroll
    for (int kc = 0; kc < 4; kc++) {
      uint32_t pa[4] = {pack2<T>(s[2 * kc][0], s[2 * kc][1]), pack2<T>(s[2 * kc][2], s[2 * kc][3]),
                        pack2<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]), pack2<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
      for (int n = 0; n < 8; n += 2) mma_kn2(acc[n], acc[n + 1], pa, Kc, 16 * kc, 8 * n, lane);
    }
    __syncthreads(); /* buffer cur is read before it is refilled */
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    if (row[r] >= p.Sq) continue;
    T *out = dq + qb + row[r] * qs;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int c = 0; c < 2; c++) {
        int d = 8 * j + 2 * t + c;
        if (d < D) out[d] = from_f<T>(acc[j][2 * r + c]);
      }
  }
}

/* dk and / or dv for 64 keys of one (b, K/V head), summed over the query heads of its group:
 * s^T = k q^T, p^T = exp(s^T - lse), dv += p^T dy; dp^T = v dy^T, ds^T = p^T (dp^T - delta)
 * (1 - th^2) scale, dk += ds^T q. Rows of the accumulators are keys, columns queries / lanes. */
template <typename T, bool WK, bool WV>
__global__ void __launch_bounds__(TT) tc_dkv(rlx_cu_attn p, const T *G, const float2 *stats, T *dk, T *dv) {
  __shared__ __align__(16) T Qs[2][TQ * PT];
  __shared__ __align__(16) T Gs[2][TQ * PT];
  __shared__ float Ls[TQ], Dl[TQ];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t Hk = p.H / p.group, bk = blockIdx.y, b = bk / Hk, kh = bk % Hk, k0 = (int64_t)blockIdx.x * TK;
  const int64_t qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const int D = (int)p.q.D;
  tile_rows(Qs[0], (const T *)p.K + base_of(p.k, b, kh), ks, k0, p.Sk, D); /* k and v pass through Qs / Gs */
  if (WK) tile_rows(Gs[0], (const T *)p.V + base_of(p.v, b, kh), vs, k0, p.Sk, D);
  __syncthreads();
  uint32_t ka[4][4], va[4][4];
#pragma unroll
  for (int kk = 0; kk < 4; kk++) {
    frag_a(ka[kk], Qs[0], 16 * w, 16 * kk, g, t);
    if (WK) frag_a(va[kk], Gs[0], 16 * w, 16 * kk, g, t);
  }
  /* the streamed (head, query tile) pairs in order, double-buffered through cp.async when every
   * head's rows are full-width and aligned (bases are multiples of D = 64 elements) */
  const bool async = rows_async_ok<T>(p.Q, qs, D) && rows_async_ok<T>(G, qs, D);
  const int64_t h_end = (kh + 1) * p.group;
  float ak[8][4], av[8][4];
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) ak[j][e] = av[j][e] = 0.f;
  const int64_t key[2] = {k0 + 16 * w + g, k0 + 16 * w + g + 8};
  const float scale = (float)p.scale;
  tile_range qr = query_tiles(p, k0);
  __syncthreads(); /* the fragments are read before buffer 0 is refilled */
  if (async && qr.beg < qr.end) {
    const int64_t qb = base_of(p.q, b, kh * p.group);
    tile_rows_async(Qs[0], (const T *)p.Q + qb, qs, qr.beg, p.Sq);
    tile_rows_async(Gs[0], G + qb, qs, qr.beg, p.Sq);
    cp_commit();
  }
  int cur = 0;
  for (int64_t h = kh * p.group; h < h_end; h++) {
    const int64_t qb = base_of(p.q, b, h), bh = b * p.H + h;
    const T *Qg = (const T *)p.Q + qb, *Gg = G + qb;
    for (int64_t q0 = qr.beg; q0 < qr.end; q0 += TQ, cur ^= 1) {
      if (async) {
        int64_t nq = q0 + TQ, nh = h;
        if (nq >= qr.end) nq = qr.beg, nh = h + 1;
        if (nh < h_end) {
          const int64_t nb = base_of(p.q, b, nh);
          tile_rows_async(Qs[cur ^ 1], (const T *)p.Q + nb, qs, nq, p.Sq);
          tile_rows_async(Gs[cur ^ 1], G + nb, qs, nq, p.Sq);
          cp_commit();
          cp_wait<1>();
        } else {
          cp_wait<0>();
        }
      } else {
        tile_rows(Qs[cur], Qg, qs, q0, p.Sq, D);
        tile_rows(Gs[cur], Gg, qs, q0, p.Sq, D);
      }
      if (threadIdx.x < TQ) {
        float2 st = q0 + threadIdx.x < p.Sq ? stats[bh * p.Sq + q0 + threadIdx.x] : make_float2(INFINITY, 0.f);
        Ls[threadIdx.x] = st.x;
        Dl[threadIdx.x] = st.y;
      }
      __syncthreads();
      const T *Qc = Qs[cur], *Gc = Gs[cur];
      float s[8][4], dp[8][4];
#pragma unroll
      for (int j = 0; j < 8; j++) {
#pragma unroll
        for (int e = 0; e < 4; e++) s[j][e] = dp[j][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
          mma_nt(s[j], ka[kk], Qc, 8 * j, 16 * kk, g, t);
          if (WK) mma_nt(dp[j], va[kk], Gc, 8 * j, 16 * kk, g, t);
        }
      }
      const bool full = tile_full(p, q0, k0);
#pragma unroll
      for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          int q = 8 * j + 2 * t + (e & 1);
          float th, sc = score(p, s[j][e], &th);
          bool vis = full || visible(p, q0 + q, key[e >> 1]);
          float pr = vis ? __expf(sc - Ls[q]) : 0.f;
          if (WK) dp[j][e] = vis ? pr * (dp[j][e] - Dl[q]) * (1.f - th * th) * scale : 0.f;
          s[j][e] = pr;
        }
#pragma unroll
      for (int kc = 0; kc < 4; kc++) {
        if (WV) {
          uint32_t pa[4] = {pack2<T>(s[2 * kc][0], s[2 * kc][1]), pack2<T>(s[2 * kc][2], s[2 * kc][3]),
                            pack2<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]), pack2<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
          for (int n = 0; n < 8; n += 2) mma_kn2(av[n], av[n + 1], pa, Gc, 16 * kc, 8 * n, lane);
        }
        if (WK) {
          uint32_t da[4] = {pack2<T>(dp[2 * kc][0], dp[2 * kc][1]), pack2<T>(dp[2 * kc][2], dp[2 * kc][3]),
                            pack2<T>(dp[2 * kc + 1][0], dp[2 * kc + 1][1]),
                            pack2<T>(dp[2 * kc + 1][2], dp[2 * kc + 1][3])};
#pragma unroll
          for (int n = 0; n < 8; n += 2) mma_kn2(ak[n], ak[n + 1], da, Qc, 16 * kc, 8 * n, lane);
        }
      }
      __syncthreads(); /* buffer cur and the statistics are read before they are refilled */
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    if (key[r] >= p.Sk) continue;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int c = 0; c < 2; c++) {
        int d = 8 * j + 2 * t + c;
        if (d >= D) continue;
        if (WK) dk[base_of(p.k, b, kh) + key[r] * ks + d] = from_f<T>(ak[j][2 * r + c]);
        if (WV) dv[base_of(p.v, b, kh) + key[r] * vs + d] = from_f<T>(av[j][2 * r + c]);
      }
  }
}

template <typename T> rlx_status fwd(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  dim3 grid((unsigned)((p->Sq + TQ - 1) / TQ), (unsigned)(p->B * p->H));
  if (stats)
    tc_fwd<T, true><<<grid, TT, 0, c->stream>>>(*p, (const T *)G, (float2 *)stats);
  else
    tc_fwd<T, false><<<grid, TT, 0, c->stream>>>(*p, (const T *)G, NULL);
  return cu_launch_status("tensor-core flash attention forward");
}

template <typename T> rlx_status bwd(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  const rlx_cu_attn *a = &p->a;
  if (p->compute_stats == 1) RLX_TRY(fwd<T>(c, a, p->G, p->stats));
  if (p->compute_stats == 2) RLX_TRY(rlx_cu_flash_delta(c, p));
  const T *G = (const T *)p->G;
  const float2 *st = (const float2 *)p->stats;
  if (p->dq) {
    dim3 grid((unsigned)((a->Sq + TQ - 1) / TQ), (unsigned)(a->B * a->H));
    tc_dq<T><<<grid, TT, 0, c->stream>>>(*a, G, st, (T *)p->dq);
    RLX_TRY(cu_launch_status("tensor-core flash attention dq"));
  }
  if (p->dk || p->dv) {
    dim3 grid((unsigned)((a->Sk + TK - 1) / TK), (unsigned)(a->B * (a->H / a->group)));
    T *dk = (T *)p->dk, *dv = (T *)p->dv;
    if (dk && dv)
      tc_dkv<T, true, true><<<grid, TT, 0, c->stream>>>(*a, G, st, dk, dv);
    else if (dk)
      tc_dkv<T, true, false><<<grid, TT, 0, c->stream>>>(*a, G, st, dk, dv);
    else
      tc_dkv<T, false, true><<<grid, TT, 0, c->stream>>>(*a, G, st, dk, dv);
    RLX_TRY(cu_launch_status("tensor-core flash attention dk / dv"));
  }
  return RLX_OK;
}

} // namespace

extern "C" int rlx_cu_flash_tc_fits(const rlx_cu_attn *p) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *e = getenv("RLX_CUDA_FLASH_TC");
    enabled = !(e && strcmp(e, "0") == 0);
  }
  return enabled && (p->dtype == RLX_BF16 || p->dtype == RLX_F16) && p->q.D <= TD && p->v.D <= TD;
}

extern "C" rlx_status rlx_cu_flash_tc_forward(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  return p->dtype == RLX_BF16 ? fwd<__nv_bfloat16>(c, p, G, stats) : fwd<__half>(c, p, G, stats);
}

extern "C" rlx_status rlx_cu_flash_tc_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  return p->a.dtype == RLX_BF16 ? bwd<__nv_bfloat16>(c, p) : bwd<__half>(c, p);
}
