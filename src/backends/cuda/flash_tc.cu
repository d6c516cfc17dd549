/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tensor-core flash attention, forward and backward, for bf16 / f16 / f32 operands with head dims
 * up to 64 and the masks decided by position (None, Causal, SlidingWindow), soft-capping and
 * grouped-query heads: the same algorithm and tiling as flash.cu (64 query rows x 64 keys, tiles
 * the mask hides skipped, FlashAttention-2's recomputation for the backward, no atomics), with
 * every product of two tiles on the tensor cores: mma.sync m16n8k16 for 16-bit operands (fp32
 * accumulation), three TF32 mma.sync m16n8k8 of split operands for f32 (op_x3 below). The
 * kernels are written once over an operand policy (op16<T>, op_x3): the tile type and pitch, the
 * A fragments of a warp's rows, and the two products nt (A x Y^T) and kn (P x Y).
 *
 * A block is 4 warps; warp w owns 16 rows of its tile (query rows in the forward and dq, keys in
 * dk / dv). 16-bit operand tiles sit in shared memory as the operand dtype, 64 rows of 64 lanes
 * (zeros past the operand's rows and lanes) with a pitch of 72 elements, so the fragment loads
 * (one 32-bit word per thread, rows g = lane / 4, words t = lane % 4) hit 32 distinct banks;
 * where a tile is the k-major B operand of a product (V in the forward, K in dq, q and dy in dk /
 * dv) its fragments come from the same row-major tile through ldmatrix .trans instead of a
 * transposed copy stored element by element (docs/cuda.md has the timings). The warp's own rows
 * of the first operand stay in registers as A fragments for the whole block. Score accumulators
 * are fp32; the probabilities (forward, dv) and ds (dq, dk) are rounded to the operand dtype
 * for their product, as in FlashAttention-2; softmax statistics, the scale, the soft-cap and the
 * masks are fp32 as in flash.cu. The per-row statistics (lse, delta) have flash.cu's layout, so
 * either kernel family can read what the other wrote. RLX_CUDA_FLASH_TC=0 turns this path off
 * (flash.cu's FFMA kernels then take every dtype). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/attn.cuh"

namespace {

constexpr int TQ = FLASH_BQ, TK = FLASH_BK, TD = 64, TT = 128;

/* ---- 16-bit operands (bf16 / f16): mma.sync m16n8k16 ---- */

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

/* The operand policy of the 16-bit kernels: tiles in shared memory as the operand dtype with a
 * pitch of 72 elements (144 bytes), so fragment loads (one 32-bit word per thread, rows g = lane /
 * 4, words t = lane % 4) and ldmatrix rows hit 32 distinct banks. A warp's 16 rows of a first
 * operand are held as four k-steps of A fragments. */
template <typename T> struct op16 {
  using E = T;
  static constexpr int PT = TD + 8;
  static constexpr int FWD_BLOCKS = 4, DQ_BLOCKS = 3; /* the launch bounds' minimum blocks per SM */
  static constexpr int RESIDENT = 0; /* first operands pass through a streaming buffer */
  struct afrag {
    uint32_t r[4][4];
  };

  /* The A fragments of rows r0 .. r0 + 15 of a row-major tile, all 64 lanes. */
  static __device__ inline void load_a(afrag &a, const T *X, int r0, int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      const T *p = X + (r0 + g) * PT + 16 * kk + 2 * t;
      a.r[kk][0] = ld32(p);
      a.r[kk][1] = ld32(p + 8 * PT);
      a.r[kk][2] = ld32(p + 8);
      a.r[kk][3] = ld32(p + 8 * PT + 8);
    }
  }

  /* The B fragments of the n-tiles at n0 and n0 + 8, lanes k0 .. k0 + 15, of a tile stored [n][k]
   * (keys or queries by rows): one ldmatrix.x4 without transpose. Lane i addresses row i % 8 of
   * matrix i / 8 (b0 and b1 of n0, then of n0 + 8). */
  static __device__ inline void frag_b2(uint32_t *b, const T *Y, int n0, int k0, int lane) {
    const int m = lane >> 3, r = lane & 7;
    const T *p = Y + (n0 + (m >> 1) * 8 + r) * PT + k0 + (m & 1) * 8;
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "r"(addr));
  }

  /* The B fragments of the n-tiles at n0 and n0 + 8, rows k0 .. k0 + 15, of a tile stored
   * row-major [k][n] (V in the forward, K in dq, q and dy in dk / dv): ldmatrix .trans hands each
   * thread the elements Y[k0 + 2t (+1) (+8)][n0 + g] of the two n-tiles, so no transposed copy of
   * the tile is kept. Lane i addresses row i % 8 of matrix i / 8 (b0 of n0, b1 of n0, b0 of n0 +
   * 8, b1 of n0 + 8). */
  static __device__ inline void frag_bt2(uint32_t *b, const T *Y, int k0, int n0, int lane) {
    const int m = lane >> 3, r = lane & 7;
    const T *p = Y + (k0 + (m & 1) * 8 + r) * PT + n0 + (m >> 1) * 8;
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                 : "r"(addr));
  }

  /* acc = A x Y^T for the warp's 16 rows: Y a 64 x 64 tile stored [n][k]; acc[j] is the n-tile of
   * columns 8 j .. 8 j + 7. */
  static __device__ inline void nt(float (*acc)[4], const afrag &a, const T *Y, int lane) {
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[j][e] = 0.f;
#pragma unroll
    for (int j = 0; j < 8; j += 2)
#pragma unroll
      for (int kk = 0; kk < 4; kk++) {
        uint32_t b[4];
        frag_b2(b, Y, 8 * j, 16 * kk, lane);
        mma16816<T>(acc[j], a.r[kk], b[0], b[1]);
        mma16816<T>(acc[j + 1], a.r[kk], b[2], b[3]);
      }
  }

  /* acc += P x Y for the warp's 16 rows: P is the fp32 16 x 64 tile s (accumulator layout),
   * rounded to the operand dtype as A fragments; Y is a 64 x 64 tile stored row-major [k][n]. */
  static __device__ inline void kn(float (*acc)[4], const float (*s)[4], const T *Y, int lane) {
#pragma unroll
    for (int kc = 0; kc < 4; kc++) {
      const uint32_t pa[4] = {pack2<T>(s[2 * kc][0], s[2 * kc][1]), pack2<T>(s[2 * kc][2], s[2 * kc][3]),
                              pack2<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                              pack2<T>(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
      for (int n = 0; n < 8; n += 2) {
        uint32_t b[4];
        frag_bt2(b, Y, 16 * kc, 8 * n, lane);
        mma16816<T>(acc[n], pa, b[0], b[1]);
        mma16816<T>(acc[n + 1], pa, b[2], b[3]);
      }
    }
  }
};

/* ---- f32 operands: three TF32 products per product (mma.sync m16n8k8) ---- */

/* x = hi + lo: hi is x rounded to TF32 (10 mantissa bits, ties away from zero) by integer
 * arithmetic, lo = x - hi exactly (|lo| <= 2^-11 |x|), handed to the tensor core whole, which
 * reads its top 11 bits; hi x hi + hi x lo + lo x hi then misses a product by about 2^-21 of it.
 * Three instructions: cvt.rna.tf32.f32 costs several, and the splits are most of these kernels'
 * instructions. A NaN stays NaN in lo (the NaN 0x7fffffff rounds to -0 in hi); an infinity
 * becomes NaN, as 0 x inf already does in every flash kernel for the keys a mask hides. */
__device__ inline void split_tf32(float x, uint32_t &hi, uint32_t &lo) {
  hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}
__device__ inline void mma1688(float *c, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* c += a b from the split parts: the two small cross terms first, then hi x hi (lo x lo, below
 * 2^-22 of the product, is dropped) */
__device__ inline void mma_x3(float *c, const uint32_t *ah, const uint32_t *al, const uint32_t *bh,
                              const uint32_t *bl) {
  mma1688(c, al, bh[0], bh[1]);
  mma1688(c, ah, bl[0], bl[1]);
  mma1688(c, ah, bh[0], bh[1]);
}
__device__ inline void split4(const float *v, uint32_t *hi, uint32_t *lo) {
#pragma unroll
  for (int i = 0; i < 4; i++) split_tf32(v[i], hi[i], lo[i]);
}

/* The operand policy of the f32 kernels: every product of two fp32 tiles as three TF32 products
 * of their split parts (hi x hi + hi x lo + lo x hi, fp32 accumulation), which keeps about 21 of
 * fp32's 24 bits per product where one TF32 product keeps 11 (docs/cuda.md has the measured
 * error against flash.cu's FFMA kernels). Tiles sit in shared memory as floats with a pitch of
 * 68, so that both fragment patterns below (rows g, lanes t and t + 4; rows 2t and 2t + 1, lanes
 * g) hit 32 distinct banks. The first operands (q, dy; k, v) keep tiles of their own, read and
 * split at each use: held in registers they would take 32 per operand and spill. */
struct op_x3 {
  using E = float;
  static constexpr int PT = TD + 4;
  static constexpr int FWD_BLOCKS = 2, DQ_BLOCKS = 2;
  static constexpr int RESIDENT = 1; /* first operands stay in their own shared tiles */
  struct afrag {
    const float *X; /* element (g, t) of the warp's 16 rows in a resident tile */
  };

  static __device__ inline void load_a(afrag &a, const float *X, int r0, int lane) {
    a.X = X + (r0 + (lane >> 2)) * PT + (lane & 3);
  }
  /* k-step kk of the A layout of m16n8k8: a0 (row g, k t), a1 (g + 8, t), a2 (g, t + 4), a3 (g +
   * 8, t + 4) */
  static __device__ inline void a_step(float *v, const afrag &a, int kk) {
    v[0] = a.X[8 * kk];
    v[1] = a.X[8 * PT + 8 * kk];
    v[2] = a.X[8 * kk + 4];
    v[3] = a.X[8 * PT + 8 * kk + 4];
  }

  /* acc = A x Y^T, Y stored [n][k]: B layout b0 (k t, n g), b1 (k t + 4, n g) */
  static __device__ inline void nt(float (*acc)[4], const afrag &a, const float *Y, int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < 8; kk++) {
      float v[4];
      a_step(v, a, kk);
      uint32_t ah[4], al[4];
      split4(v, ah, al);
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const float *q = Y + (8 * j + g) * PT + 8 * kk + t;
        uint32_t bh[2], bl[2];
        split_tf32(q[0], bh[0], bl[0]);
        split_tf32(q[4], bh[1], bl[1]);
        mma_x3(acc[j], ah, al, bh, bl);
      }
    }
  }

  /* acc += P x Y, Y stored [k][n]. The accumulator layout gives this thread the columns (keys)
   * 2t and 2t + 1 of each n-tile of P, where the A layout wants k-indices t and t + 4; the sum over
   * k does not depend on its order, so k-step j runs over n-tile j's keys with k = t standing for
   * key 2t and k = t + 4 for key 2t + 1, and the B fragments read Y's rows in the same order. */
  static __device__ inline void kn(float (*acc)[4], const float (*s)[4], const float *Y, int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const float pa[4] = {s[j][0], s[j][2], s[j][1], s[j][3]};
      uint32_t ah[4], al[4];
      split4(pa, ah, al);
#pragma unroll
      for (int n = 0; n < 8; n++) {
        const float *q = Y + (8 * j + 2 * t) * PT + 8 * n + g;
        uint32_t bh[2], bl[2];
        split_tf32(q[0], bh[0], bl[0]);
        split_tf32(q[PT], bh[1], bl[1]);
        mma_x3(acc[n], ah, al, bh, bl);
      }
    }
  }
};

/* A 64 x 64 operand tile of a policy's dtype in shared memory; the kernels take theirs from
 * dynamic shared memory (the f32 tiles, 17 KB each, pass the 48 KB of static shared memory). */
template <typename Op> using tile_t = typename Op::E[TK * Op::PT];

/* 64 rows x TD lanes of src (rows r0 .., row stride rs, D lanes) into dst [row][lane]; zeros past
 * the operand's rows and lanes. 16-byte loads when the rows are full and aligned. */
template <typename Op> __device__ inline bool rows_async_ok(const void *src, int64_t rs, int D) {
  constexpr int V = 16 / sizeof(typename Op::E);
  return D == TD && rs % V == 0 && ((uintptr_t)src & 15) == 0;
}
template <typename Op, typename T>
__device__ inline void tile_rows(T *dst, const T *src, int64_t rs, int64_t r0, int64_t nrows, int D) {
  constexpr int V = 16 / sizeof(T), PT = Op::PT;
  if (rows_async_ok<Op>(src, rs, D)) {
    for (int e = threadIdx.x; e < 64 * (TD / V); e += TT) {
      int r = e / (TD / V), d = e % (TD / V) * V;
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
template <typename Op, typename T>
__device__ inline void tile_rows_async(T *dst, const T *src, int64_t rs, int64_t r0, int64_t nrows) {
  constexpr int V = 16 / sizeof(T);
  for (int e = threadIdx.x; e < 64 * (TD / V); e += TT) {
    int r = e / (TD / V), d = e % (TD / V) * V;
    bool in = r0 + r < nrows;
    const T *g = in ? src + (r0 + r) * rs + d : src;
    uint32_t sa = (uint32_t)__cvta_generic_to_shared(dst + r * Op::PT + d);
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

/* 2^x on the special-function unit (-inf -> +0, NaN -> NaN) */
__device__ inline float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
constexpr float LOG2E = 1.4426950408889634f, LN2 = 0.6931471805599453f;

/* The score rule of attn.cuh's score() in log2 units, as FlashAttention-2 keeps it: the softmax
 * runs on 2^(s log2 e) so that each probability costs one subtraction and one ex2. Uncapped the
 * score is dot * (scale log2 e); soft-capped it is (cap log2 e) tanh(dot scale / cap), with
 * th = tanh(...) for the derivative. */
struct score_rule {
  float mul, pre;
};
__device__ inline score_rule score_rule_of(const rlx_cu_attn &p) {
  if (p.capped) return {(float)(p.cap * (double)LOG2E), (float)(p.scale / p.cap)};
  return {(float)(p.scale * (double)LOG2E), 0.f};
}
template <bool CAP> __device__ inline float score2(const score_rule &k, float dot, float *th) {
  if (!CAP) {
    *th = 0.f;
    return dot * k.mul;
  }
  float t = tanhf(dot * k.pre);
  *th = t;
  return k.mul * t;
}

/* The key / value stream of a forward or dq block: kv_first issues the copies of the first pair
 * of tiles, kv_next makes the pair of k0 ready in buffer cur (issuing the next pair's copies into
 * the other buffer first, so that they run under this tile's products) and ends with the barrier
 * after which the tiles can be read. Without cp.async (rows not full-width or not aligned) the
 * tiles are loaded synchronously. */
template <typename Op> struct kv_stream {
  const typename Op::E *K, *V;
  int64_t ks, vs, Sk, end;
  int D, Dv;
  bool async;
};
template <typename Op> __device__ inline void kv_first(const kv_stream<Op> &st, tile_t<Op> *Ks, tile_t<Op> *Vs, int64_t beg) {
  if (st.async && beg < st.end) {
    tile_rows_async<Op>(Ks[0], st.K, st.ks, beg, st.Sk);
    tile_rows_async<Op>(Vs[0], st.V, st.vs, beg, st.Sk);
    cp_commit();
  }
}
template <typename Op>
__device__ inline void kv_next(const kv_stream<Op> &st, tile_t<Op> *Ks, tile_t<Op> *Vs, int cur, int64_t k0) {
  if (st.async) {
    if (k0 + TK < st.end) {
      tile_rows_async<Op>(Ks[cur ^ 1], st.K, st.ks, k0 + TK, st.Sk);
      tile_rows_async<Op>(Vs[cur ^ 1], st.V, st.vs, k0 + TK, st.Sk);
      cp_commit();
      cp_wait<1>();
    } else {
      cp_wait<0>();
    }
  } else {
    tile_rows<Op>(Ks[cur], st.K, st.ks, k0, st.Sk, st.D);
    tile_rows<Op>(Vs[cur], st.V, st.vs, k0, st.Sk, st.Dv);
  }
  __syncthreads();
}

extern __shared__ __align__(16) unsigned char flash_smem[];

/* Forward: one block per 64 query rows of one (b, h); the 16-bit policy compiles it for 4 blocks
 * per SM (128 registers, 16-24 bytes of spills; f32: 2, bounded by shared memory): 16 warps instead of 12 at 167 registers hide more of its
 * latency (ncu on the H200, bf16 GPT-2 block: 156 against 164 us; 128-row blocks with two m-tiles
 * per warp were slower still, 253 us: docs/cuda.md). Accumulator element e of n-tile j is row
 * (e < 2 ? g : g + 8) of the warp's 16, column 8 j + 2 t + (e & 1). The running maximum m is in
 * log2 units (score2); a NaN score is not hidden from the sums, so it reaches the row's l, and a
 * row whose l is NaN is written as NaN (the CPU reference's rule). */
template <typename Op, bool STATS, bool CAP>
__global__ void __launch_bounds__(TT, Op::FWD_BLOCKS) tc_fwd(rlx_cu_attn p, const typename Op::E *G, float2 *stats) {
  using T = typename Op::E;
  tile_t<Op> *Ks = (tile_t<Op> *)flash_smem, *Vs = Ks + 2, *Qt = Op::RESIDENT ? Ks + 4 : Ks;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * TQ;
  const T *Qg = (const T *)p.Q + base_of(p.q, b, h);
  const int64_t qs = row_stride(p.q);
  const int D = (int)p.q.D, Dv = (int)p.v.D;
  const score_rule sr = score_rule_of(p);
  tile_rows<Op>(Qt[0], Qg, qs, q0, p.Sq, D); /* the query tile (16-bit: passing through Ks[0]) */
  __syncthreads();
  typename Op::afrag qa;
  Op::load_a(qa, Qt[0], 16 * w, lane);
  const tile_range kr = key_tiles(p, q0);
  kv_stream<Op> kv = {(const T *)p.K + base_of(p.k, b, kh), (const T *)p.V + base_of(p.v, b, kh), row_stride(p.k),
                     row_stride(p.v), p.Sk, kr.end, D, Dv, false};
  kv.async = rows_async_ok<Op>(kv.K, kv.ks, D) && rows_async_ok<Op>(kv.V, kv.vs, Dv);
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[j][e] = 0.f;
  const int64_t row[2] = {q0 + 16 * w + g, q0 + 16 * w + g + 8};
  __syncthreads(); /* the query fragments are read before Ks[0] is refilled */
  kv_first(kv, Ks, Vs, kr.beg);
  int cur = 0;
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += TK, cur ^= 1) {
    kv_next(kv, Ks, Vs, cur, k0);
    float s[8][4];
    Op::nt(s, qa, Ks[cur], lane);
    const bool full = tile_full(p, q0, k0);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float th, v = score2<CAP>(sr, s[j][e], &th);
        if (!full && !visible(p, row[e >> 1], k0 + 8 * j + 2 * t + (e & 1))) v = -INFINITY;
        s[j][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    float mu[2], corr[2], rs[2] = {0.f, 0.f};
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const float mn = fmaxf(m[r], quad_max(mx[r]));
      mu[r] = mn == -INFINITY ? 0.f : mn; /* a row with nothing visible yet: 2^(-inf - 0) = 0 */
      corr[r] = ex2(m[r] - mu[r]);
      m[r] = mn;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = e >> 1;
        const float x = ex2(s[j][e] - mu[r]);
        s[j][e] = x;
        rs[r] += x;
        o[j][e] *= corr[r];
      }
#pragma unroll
    for (int r = 0; r < 2; r++) l[r] = l[r] * corr[r] + rs[r]; /* this thread's columns; quad-summed at the end */
    Op::kn(o, s, Vs[cur], lane);
    __syncthreads(); /* buffer cur is read before it is refilled */
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const float lt = quad_sum(l[r]);
    const bool nan_row = lt != lt;
    const float inv = lt > 0.f ? 1.f / lt : 0.f;
    const float lse = nan_row ? NAN : lt > 0.f ? (m[r] + __log2f(lt)) * LN2 : INFINITY;
    const int64_t qi = row[r];
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
      if (p.save_lse && t == 0) ((float2 *)p.save_lse)[bh * p.Sq + qi] = make_float2(lse, 0.f);
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
      if (t == 0 && qi < p.Sq) stats[bh * p.Sq + qi] = make_float2(lse, dl);
    }
  }
}

/* dq for 64 query rows of one (b, h); the 16-bit policy compiles it for 3 blocks per SM (168
 * registers, 40-112 bytes of spills; f32: 2) rather than 2 at 249 registers: 149 against 161 us in the bf16 GPT-2 block on the
 * H200 (ncu). s = q k^T, dp = dy v^T, ds = p (dp - delta) (1 - th^2)
 * scale with p = 2^(s log2 e - lse log2 e), dq += ds k. */
template <typename Op, bool CAP>
__global__ void __launch_bounds__(TT, Op::DQ_BLOCKS)
    tc_dq(rlx_cu_attn p, const typename Op::E *G, const float2 *stats, typename Op::E *dq, int64_t out_ld) {
  using T = typename Op::E;
  tile_t<Op> *Ks = (tile_t<Op> *)flash_smem, *Vs = Ks + 2;
  tile_t<Op> *Qt = Op::RESIDENT ? Ks + 4 : Ks, *Gt = Op::RESIDENT ? Qt + 1 : Vs;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t bh = blockIdx.y, b = bh / p.H, h = bh % p.H, kh = h / p.group, q0 = (int64_t)heavy_first_tile() * TQ;
  const int64_t qb = base_of(p.q, b, h), qs = row_stride(p.q);
  const int D = (int)p.q.D;
  const score_rule sr = score_rule_of(p);
  tile_rows<Op>(Qt[0], (const T *)p.Q + qb, qs, q0, p.Sq, D);
  tile_rows<Op>(Gt[0], G + qb, qs, q0, p.Sq, D);
  __syncthreads();
  typename Op::afrag qa, ga;
  Op::load_a(qa, Qt[0], 16 * w, lane);
  Op::load_a(ga, Gt[0], 16 * w, lane);
  const tile_range kr = key_tiles(p, q0);
  kv_stream<Op> kv = {(const T *)p.K + base_of(p.k, b, kh), (const T *)p.V + base_of(p.v, b, kh), row_stride(p.k),
                     row_stride(p.v), p.Sk, kr.end, D, D, false};
  kv.async = rows_async_ok<Op>(kv.K, kv.ks, D) && rows_async_ok<Op>(kv.V, kv.vs, D);
  const int64_t row[2] = {q0 + 16 * w + g, q0 + 16 * w + g + 8};
  const float scale = (float)p.scale;
  float lse2[2], dls[2], acc[8][4];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float2 st = row[r] < p.Sq ? stats[bh * p.Sq + row[r]] : make_float2(INFINITY, 0.f);
    lse2[r] = st.x * LOG2E;
    dls[r] = st.y * scale;
  }
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) acc[j][e] = 0.f;
  __syncthreads(); /* the fragments are read before buffer 0 is refilled */
  kv_first(kv, Ks, Vs, kr.beg);
  int cur = 0;
  for (int64_t k0 = kr.beg; k0 < kr.end; k0 += TK, cur ^= 1) {
    kv_next(kv, Ks, Vs, cur, k0);
    float s[8][4], dp[8][4];
    Op::nt(s, qa, Ks[cur], lane);
    Op::nt(dp, ga, Vs[cur], lane);
    const bool full = tile_full(p, q0, k0);
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = e >> 1;
        float th, ds = 0.f;
        const float v = score2<CAP>(sr, s[j][e], &th);
        if (full || visible(p, row[r], k0 + 8 * j + 2 * t + (e & 1))) {
          ds = ex2(v - lse2[r]) * fmaf(dp[j][e], scale, -dls[r]);
          if (CAP) ds *= 1.f - th * th;
        }
        s[j][e] = ds;
      }
    Op::kn(acc, s, Ks[cur], lane);
    __syncthreads(); /* buffer cur is read before it is refilled */
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    if (row[r] >= p.Sq) continue;
    T *out = dq + out_base(p.q, out_ld, b, h) + row[r] * out_stride(p.q, out_ld);
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
 * s^T = k q^T, p^T = 2^(s^T log2 e - lse log2 e), dv += p^T dy; dp^T = v dy^T, ds^T = p^T (dp^T -
 * delta) (1 - th^2) scale, dk += ds^T q. Rows of the accumulators are keys, columns queries /
 * lanes. The query tile's statistics sit in shared memory as (lse log2 e, delta scale) pairs, so
 * the two adjacent queries of a thread's accumulator pair come in one 16-byte load. */
template <typename Op, bool WK, bool WV, bool CAP>
__global__ void __launch_bounds__(TT) tc_dkv(rlx_cu_attn p, const typename Op::E *G, const float2 *stats,
                                             typename Op::E *dk, typename Op::E *dv, int64_t out_ld) {
  using T = typename Op::E;
  tile_t<Op> *Qs = (tile_t<Op> *)flash_smem, *Gs = Qs + 2;
  tile_t<Op> *Kt = Op::RESIDENT ? Qs + 4 : Qs, *Vt = Op::RESIDENT ? Qs + 5 : Gs;
  float2 *St = (float2 *)(Qs + 4 + 2 * Op::RESIDENT);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int64_t Hk = p.H / p.group, bk = blockIdx.y, b = bk / Hk, kh = bk % Hk, k0 = (int64_t)blockIdx.x * TK;
  const int64_t qs = row_stride(p.q), ks = row_stride(p.k), vs = row_stride(p.v);
  const int D = (int)p.q.D;
  const score_rule sr = score_rule_of(p);
  tile_rows<Op>(Kt[0], (const T *)p.K + base_of(p.k, b, kh), ks, k0, p.Sk, D); /* 16-bit: passing through Qs / Gs */
  if (WK) tile_rows<Op>(Vt[0], (const T *)p.V + base_of(p.v, b, kh), vs, k0, p.Sk, D);
  __syncthreads();
  typename Op::afrag ka, va;
  Op::load_a(ka, Kt[0], 16 * w, lane);
  if (WK) Op::load_a(va, Vt[0], 16 * w, lane);
  /* the streamed (head, query tile) pairs in order, double-buffered through cp.async when every
   * head's rows are full-width and aligned (bases are multiples of D = 64 elements) */
  const bool async = rows_async_ok<Op>(p.Q, qs, D) && rows_async_ok<Op>(G, qs, D);
  const int64_t h_end = (kh + 1) * p.group;
  float ak[8][4], av[8][4];
#pragma unroll
  for (int j = 0; j < 8; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) ak[j][e] = av[j][e] = 0.f;
  const int64_t key[2] = {k0 + 16 * w + g, k0 + 16 * w + g + 8};
  const float scale = (float)p.scale;
  const tile_range qr = query_tiles(p, k0);
  __syncthreads(); /* the fragments are read before buffer 0 is refilled */
  if (async && qr.beg < qr.end) {
    const int64_t qb = base_of(p.q, b, kh * p.group);
    tile_rows_async<Op>(Qs[0], (const T *)p.Q + qb, qs, qr.beg, p.Sq);
    tile_rows_async<Op>(Gs[0], G + qb, qs, qr.beg, p.Sq);
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
          tile_rows_async<Op>(Qs[cur ^ 1], (const T *)p.Q + nb, qs, nq, p.Sq);
          tile_rows_async<Op>(Gs[cur ^ 1], G + nb, qs, nq, p.Sq);
          cp_commit();
          cp_wait<1>();
        } else {
          cp_wait<0>();
        }
      } else {
        tile_rows<Op>(Qs[cur], Qg, qs, q0, p.Sq, D);
        tile_rows<Op>(Gs[cur], Gg, qs, q0, p.Sq, D);
      }
      if (threadIdx.x < TQ) {
        float2 st = q0 + threadIdx.x < p.Sq ? stats[bh * p.Sq + q0 + threadIdx.x] : make_float2(INFINITY, 0.f);
        St[threadIdx.x] = make_float2(st.x * LOG2E, st.y * scale);
      }
      __syncthreads();
      const T *Qc = Qs[cur], *Gc = Gs[cur];
      float s[8][4], dp[8][4];
      Op::nt(s, ka, Qc, lane);
      if (WK) Op::nt(dp, va, Gc, lane);
      const bool full = tile_full(p, q0, k0);
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const float4 st = *(const float4 *)&St[8 * j + 2 * t]; /* queries 8 j + 2 t and + 1 */
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int q = 8 * j + 2 * t + (e & 1);
          const float l2 = e & 1 ? st.z : st.x, dls = e & 1 ? st.w : st.y;
          float th;
          const float v = score2<CAP>(sr, s[j][e], &th);
          const bool vis = full || visible(p, q0 + q, key[e >> 1]);
          const float pr = vis ? ex2(v - l2) : 0.f;
          if (WK) {
            float ds = pr * fmaf(dp[j][e], scale, -dls);
            if (CAP) ds *= 1.f - th * th;
            dp[j][e] = ds;
          }
          s[j][e] = pr;
        }
      }
      if (WV) Op::kn(av, s, Gc, lane);
      if (WK) Op::kn(ak, dp, Qc, lane);
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
        if (WK) dk[out_base(p.k, out_ld, b, kh) + key[r] * out_stride(p.k, out_ld) + d] = from_f<T>(ak[j][2 * r + c]);
        if (WV) dv[out_base(p.v, out_ld, b, kh) + key[r] * out_stride(p.v, out_ld) + d] = from_f<T>(av[j][2 * r + c]);
      }
  }
}

/* Dynamic shared memory of a kernel with n tiles plus extra bytes, the kernel's limit raised past
 * the default 48 KB where it needs more (an attribute of the function on the current device, set
 * at each launch: not a stream operation, so also fine while a CUDA graph is being captured). */
template <typename Op, typename K> rlx_status smem_for(K kernel, int n, size_t extra, size_t *bytes) {
  *bytes = (size_t)n * sizeof(tile_t<Op>) + extra;
  if (*bytes <= 48 * 1024) return RLX_OK;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*bytes);
  if (e != cudaSuccess)
    return rlx_errorf(RLX_ERR_RUNTIME, "cuda: flash attention needs %zu bytes of shared memory per block: %s", *bytes,
                      cudaGetErrorString(e));
  return RLX_OK;
}

template <typename Op, bool STATS, bool CAP> rlx_status fwd_launch(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  using T = typename Op::E;
  dim3 grid((unsigned)((p->Sq + TQ - 1) / TQ), (unsigned)(p->B * p->H));
  size_t sm;
  RLX_TRY(smem_for<Op>(tc_fwd<Op, STATS, CAP>, 4 + Op::RESIDENT, 0, &sm));
  tc_fwd<Op, STATS, CAP><<<grid, TT, sm, c->stream>>>(*p, (const T *)G, (float2 *)stats);
  return cu_launch_status("tensor-core flash attention forward");
}
template <typename Op, bool CAP> rlx_status fwd(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  return stats ? fwd_launch<Op, true, CAP>(c, p, G, stats) : fwd_launch<Op, false, CAP>(c, p, G, stats);
}

template <typename Op, bool WK, bool WV, bool CAP> rlx_status dkv_launch(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  using T = typename Op::E;
  const rlx_cu_attn *a = &p->a;
  dim3 grid((unsigned)((a->Sk + TK - 1) / TK), (unsigned)(a->B * (a->H / a->group)));
  size_t sm;
  RLX_TRY(smem_for<Op>(tc_dkv<Op, WK, WV, CAP>, 4 + 2 * Op::RESIDENT, TQ * sizeof(float2), &sm));
  tc_dkv<Op, WK, WV, CAP>
      <<<grid, TT, sm, c->stream>>>(*a, (const T *)p->G, (const float2 *)p->stats, (T *)p->dk, (T *)p->dv, p->out_ld);
  return cu_launch_status("tensor-core flash attention dk / dv");
}

template <typename Op, bool CAP> rlx_status bwd(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  using T = typename Op::E;
  const rlx_cu_attn *a = &p->a;
  if (p->compute_stats == 1) RLX_TRY((fwd<Op, CAP>(c, a, p->G, p->stats)));
  if (p->compute_stats == 2) RLX_TRY(rlx_cu_flash_delta(c, p));
  if (p->dq) {
    dim3 grid((unsigned)((a->Sq + TQ - 1) / TQ), (unsigned)(a->B * a->H));
    size_t sm;
    RLX_TRY(smem_for<Op>(tc_dq<Op, CAP>, 4 + 2 * Op::RESIDENT, 0, &sm));
    tc_dq<Op, CAP><<<grid, TT, sm, c->stream>>>(*a, (const T *)p->G, (const float2 *)p->stats, (T *)p->dq, p->out_ld);
    RLX_TRY(cu_launch_status("tensor-core flash attention dq"));
  }
  if (p->dk && p->dv) return dkv_launch<Op, true, true, CAP>(c, p);
  if (p->dk) return dkv_launch<Op, true, false, CAP>(c, p);
  if (p->dv) return dkv_launch<Op, false, true, CAP>(c, p);
  return RLX_OK;
}

} // namespace

/* The tensor-core path takes bf16 / f16 and, unless RLX_CUDA_FP32_PEDANTIC asks for fp32
 * arithmetic throughout, f32 (three TF32 products each); head dims up to 64. */
extern "C" int rlx_cu_flash_tc_fits(const rlx_cu_ctx *c, const rlx_cu_attn *p) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *e = getenv("RLX_CUDA_FLASH_TC");
    enabled = !(e && strcmp(e, "0") == 0);
  }
  const bool dt = p->dtype == RLX_BF16 || p->dtype == RLX_F16 || (p->dtype == RLX_F32 && !c->fp32_pedantic);
  return enabled && dt && p->q.D <= TD && p->v.D <= TD;
}

#define RLX_TC_DISPATCH(dt, capped, F, ...)                                                                 \
  ((dt) == RLX_BF16 ? ((capped) ? F<op16<__nv_bfloat16>, true>(__VA_ARGS__) : F<op16<__nv_bfloat16>, false>(__VA_ARGS__)) \
   : (dt) == RLX_F16 ? ((capped) ? F<op16<__half>, true>(__VA_ARGS__) : F<op16<__half>, false>(__VA_ARGS__))            \
                     : ((capped) ? F<op_x3, true>(__VA_ARGS__) : F<op_x3, false>(__VA_ARGS__)))

extern "C" rlx_status rlx_cu_flash_tc_forward(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats) {
  return RLX_TC_DISPATCH(p->dtype, p->capped, fwd, c, p, G, stats);
}

extern "C" rlx_status rlx_cu_flash_tc_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  return RLX_TC_DISPATCH(p->a.dtype, p->a.capped, bwd, c, p);
}
