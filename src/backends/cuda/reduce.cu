/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Reductions: Reduce (every dtype, CPU-reference semantics: floats summed in double with
 * compensation, integers exact and saturating, NaN-propagating max/min), Softmax, and the
 * row-wise LayerNorm / RmsNorm. One block per output line; threads split the line and combine
 * through shared memory. */
#include <string.h>

#include "backends/cuda/colsum.cuh"
#include "rlx/ops.h"

#define RED_THREADS 256

__device__ inline double nan_max(double a, double b) { return (a != a || b != b) ? nan("") : (a > b ? a : b); }
__device__ inline double nan_min(double a, double b) { return (a != a || b != b) ? nan("") : (a < b ? a : b); }

struct red_params {
  int op, t;
  const void *x;
  int n_kept, n_red;
  int64_t kept_dims[RLX_CU_MAX_RANK], kept_stride[RLX_CU_MAX_RANK];
  int64_t red_dims[RLX_CU_MAX_RANK], red_stride[RLX_CU_MAX_RANK];
  int64_t n_out, n_red_elems;
  void *out;
};

/* fold one real float value: product, NaN-propagating max / min, or a Neumaier-compensated sum */
__device__ inline void acc_fold_f(const red_params &p, acc_t &s, double v) {
  switch (p.op) {
  case RLX_REDUCE_PROD: s.a *= v; break;
  case RLX_REDUCE_MAX: s.a = nan_max(s.a, v); break;
  case RLX_REDUCE_MIN: s.a = nan_min(s.a, v); break;
  default: neumaier_add(s.a, s.b, v); break;
  }
}

__device__ inline void acc_fold(const red_params &p, acc_t &s, int64_t off) {
  int t = p.t;
  if (dt_is_complex(t)) {
    double re, im;
    ld_c(p.x, t, off, &re, &im);
    if (p.op == RLX_REDUCE_PROD) {
      double r = s.a * re - s.b * im, q = s.a * im + s.b * re;
      s.a = r;
      s.b = q;
    } else {
      s.a += re;
      s.b += im;
    }
  } else if (dt_is_int(t)) {
    int64_t v = ld_i(p.x, t, off);
    switch (p.op) {
    case RLX_REDUCE_PROD: s.i = sat_mul(s.i, v); break;
    case RLX_REDUCE_MAX: s.i = v > s.i ? v : s.i; break;
    case RLX_REDUCE_MIN: s.i = v < s.i ? v : s.i; break;
    default: s.i = sat_add(s.i, v); break;
    }
  } else {
    acc_fold_f(p, s, ld_f(p.x, t, off));
  }
}

/* acc_fold of an offset list: the loads first, then the folds in list order (same result as
 * folding one at a time; the loads overlap). Real float dtypes only. */
template <int K> __device__ inline void acc_fold_k(const red_params &p, acc_t &s, const int64_t (&off)[K]) {
  double v[K];
#pragma unroll
  for (int k = 0; k < K; k++) v[k] = ld_f(p.x, p.t, off[k]);
#pragma unroll
  for (int k = 0; k < K; k++) acc_fold_f(p, s, v[k]);
}
__device__ inline bool real_float(int t) { return !dt_is_int(t) && !dt_is_complex(t); }

__device__ inline void acc_merge(const red_params &p, acc_t &s, const acc_t &o) {
  int t = p.t;
  if (dt_is_complex(t)) {
    if (p.op == RLX_REDUCE_PROD) {
      double r = s.a * o.a - s.b * o.b, q = s.a * o.b + s.b * o.a;
      s.a = r;
      s.b = q;
    } else {
      s.a += o.a;
      s.b += o.b;
    }
  } else if (dt_is_int(t)) {
    switch (p.op) {
    case RLX_REDUCE_PROD: s.i = sat_mul(s.i, o.i); break;
    case RLX_REDUCE_MAX: s.i = o.i > s.i ? o.i : s.i; break;
    case RLX_REDUCE_MIN: s.i = o.i < s.i ? o.i : s.i; break;
    default: s.i = sat_add(s.i, o.i); break;
    }
  } else {
    switch (p.op) {
    case RLX_REDUCE_PROD: s.a *= o.a; break;
    case RLX_REDUCE_MAX: s.a = nan_max(s.a, o.a); break;
    case RLX_REDUCE_MIN: s.a = nan_min(s.a, o.a); break;
    default: acc_merge_sum(s, o); break;
    }
  }
}

__device__ inline int64_t int_min_of(int t) {
  switch (t) {
  case RLX_I8: return INT8_MIN;
  case RLX_I16: return INT16_MIN;
  case RLX_I32: return INT32_MIN;
  case RLX_I64: return INT64_MIN;
  default: return 0;
  }
}
__device__ inline int64_t int_max_of(int t) {
  switch (t) {
  case RLX_I8: return INT8_MAX;
  case RLX_I16: return INT16_MAX;
  case RLX_I32: return INT32_MAX;
  case RLX_U8: return UINT8_MAX;
  case RLX_U32: return UINT32_MAX;
  case RLX_BOOL: return 1;
  default: return INT64_MAX;
  }
}

__device__ inline acc_t acc_init(const red_params &p) {
  acc_t s;
  s.a = p.op == RLX_REDUCE_PROD ? 1 : p.op == RLX_REDUCE_MAX ? -INFINITY : p.op == RLX_REDUCE_MIN ? INFINITY : 0;
  s.b = 0;
  if (dt_is_complex(p.t)) s.a = p.op == RLX_REDUCE_PROD ? 1 : 0;
  s.i = p.op == RLX_REDUCE_PROD ? 1 : p.op == RLX_REDUCE_MAX ? int_min_of(p.t) : p.op == RLX_REDUCE_MIN ? int_max_of(p.t) : 0;
  return s;
}

__device__ inline int64_t line_base(const red_params &p, int64_t o) {
  int64_t base = 0, rem = o;
  for (int d = p.n_kept - 1; d >= 0; d--) {
    int64_t c = rem % p.kept_dims[d];
    rem /= p.kept_dims[d];
    base += c * p.kept_stride[d];
  }
  return base;
}

__device__ inline int64_t red_offset(const red_params &p, int64_t base, int64_t j) {
  if (p.n_red == 1) return base + j * p.red_stride[0];
  int64_t off = base, r2 = j;
  for (int d = p.n_red - 1; d >= 0; d--) {
    int64_t c = r2 % p.red_dims[d];
    r2 /= p.red_dims[d];
    off += c * p.red_stride[d];
  }
  return off;
}

__device__ inline void acc_store(const red_params &p, acc_t tot, int64_t o) {
  bool mean = p.op == RLX_REDUCE_MEAN;
  double n = (double)p.n_red_elems;
  if (dt_is_complex(p.t)) {
    if (mean) { tot.a /= n; tot.b /= n; }
    st_c(p.out, p.t, o, tot.a, tot.b);
  } else if (dt_is_int(p.t)) {
    if (mean) tot.i = p.n_red_elems ? tot.i / p.n_red_elems : 0;
    st_i(p.out, p.t, o, tot.i);
  } else {
    double v = tot.a;
    if (p.op == RLX_REDUCE_SUM || mean) v = (isinf(tot.a) || tot.a != tot.a) ? tot.a : tot.a + tot.b;
    if (mean) v /= n;
    st_f(p.out, p.t, o, v);
  }
}

/* The end of a split block: the threads' accumulators merged as a fixed tree, the block's total
 * (from init) stored at *dst. */
__device__ inline void split_block_store(const red_params &p, acc_t *sh, const acc_t &a, const acc_t &init, acc_t *dst) {
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) acc_merge(p, sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    acc_t tot = init;
    acc_merge(p, tot, sh[0]);
    *dst = tot;
  }
}

/* Split reduction for few long lines: block (s, o) folds chunk s of line o into part[o * S + s];
 * then one thread per line merges its S partials in order. */
__global__ void reduce_split_kernel(red_params p, int64_t S, acc_t *part) {
  __shared__ acc_t sh[RED_THREADS];
  int64_t o = blockIdx.y, s = blockIdx.x, chunk = (p.n_red_elems + S - 1) / S;
  int64_t base = line_base(p, o), lo = s * chunk, hi = lo + chunk < p.n_red_elems ? lo + chunk : p.n_red_elems;
  acc_t a = acc_init(p);
  const acc_t init = a;
  int64_t j = lo + threadIdx.x;
  const int64_t bd = blockDim.x;
  if (real_float(p.t))
    for (; j + 3 * bd < hi; j += 4 * bd) {
      int64_t off[4] = {red_offset(p, base, j), red_offset(p, base, j + bd), red_offset(p, base, j + 2 * bd),
                        red_offset(p, base, j + 3 * bd)};
      acc_fold_k<4>(p, a, off);
    }
  for (; j < hi; j += bd) acc_fold(p, a, red_offset(p, base, j));
  split_block_store(p, sh, a, init, part + o * S + s);
}
/* reduce_split_kernel for sums / means of contiguous f32 / bf16 / f16 lines (the loss sum of a
 * training step): the dtype fixed at compile time, four neighbouring elements per load (16 or 8
 * bytes), four loads in flight per thread, the same Neumaier double sums and block tree; chunks
 * are multiples of 4 elements and lines too (sum_split4_fits), so every load is whole. The
 * generic kernel's per-element dtype switch and offset arithmetic took 32 us for the 6.3M floats
 * of the GPT-2 block's loss on the H200. */
template <typename T>
__global__ void __launch_bounds__(RED_THREADS) sum_split4_kernel(red_params p, int64_t S, int64_t chunk, acc_t *part) {
  __shared__ acc_t sh[RED_THREADS];
  const int64_t o = blockIdx.y, s = blockIdx.x, len = p.n_red_elems;
  const T *x = (const T *)p.x + o * len;
  const int64_t lo = s * chunk, hi = lo + chunk < len ? lo + chunk : len, step = 4 * (int64_t)blockDim.x;
  acc_t a = acc_init(p);
  const acc_t init = a;
  int64_t j = lo + 4 * (int64_t)threadIdx.x;
  for (; j + 3 * step < hi; j += 4 * step) {
    double v[4][4];
#pragma unroll
    for (int k = 0; k < 4; k++) ld4_d<T>(x + j + k * step, v[k]);
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
      for (int e = 0; e < 4; e++) neumaier_add(a.a, a.b, v[k][e]);
  }
  for (; j < hi; j += step) {
    double v[4];
    ld4_d<T>(x + j, v);
#pragma unroll
    for (int e = 0; e < 4; e++) neumaier_add(a.a, a.b, v[e]);
  }
  split_block_store(p, sh, a, init, part + o * S + s);
}
/* whole lines of x (the kept axes lead: line o starts at o * len), a multiple of 4 elements,
 * x aligned to 4 elements */
static bool sum_split4_fits(const red_params &p, size_t esz) {
  const bool lines =
      p.n_red == 1 && p.red_stride[0] == 1 && (p.n_kept == 0 || p.kept_stride[p.n_kept - 1] == p.n_red_elems);
  return (p.op == RLX_REDUCE_SUM || p.op == RLX_REDUCE_MEAN) && lines && p.n_red_elems % 4 == 0 &&
         (uintptr_t)p.x % (4 * esz) == 0 && (p.t == RLX_F32 || p.t == RLX_BF16 || p.t == RLX_F16);
}

/* One block per line: thread k merges its run of the S partials in order, then the block merges
 * the runs as a fixed tree (deterministic; a single thread walking all S partials serially took
 * 138 us for S = 512 on the H200, one dependent load after another). */
__global__ void reduce_merge_kernel(red_params p, int64_t S, const acc_t *part) {
  __shared__ acc_t sh[RED_THREADS];
  const int64_t o = blockIdx.x, per = (S + RED_THREADS - 1) / RED_THREADS, lo = threadIdx.x * per;
  const int64_t hi = lo + per < S ? lo + per : S;
  acc_t a = acc_init(p);
  for (int64_t s = lo; s < hi; s++) acc_merge(p, a, part[o * S + s]);
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int w = RED_THREADS / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) acc_merge(p, sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) acc_store(p, sh[0], o);
}

/* Column reduction: the reduced axes lead and the kept ones trail, so x is [R, n_out] and
 * neighbouring threads read neighbouring columns (coalesced). Block (cb, s): 32 columns x 8 row
 * lanes over row chunk s; the lanes merge in order into part[s * n_out + o], then one thread per
 * column merges the S chunks in order (deterministic). */
__global__ void reduce_cols_kernel(red_params p, int64_t S, acc_t *part) {
  __shared__ acc_t sh[8][33];
  int64_t o = blockIdx.x * 32 + threadIdx.x, R = p.n_red_elems, chunk = (R + S - 1) / S, lo = blockIdx.y * chunk;
  int64_t hi = lo + chunk < R ? lo + chunk : R;
  acc_t a = acc_init(p);
  if (o < p.n_out) {
    int64_t j = lo + threadIdx.y;
    if (real_float(p.t))
      for (; j + 24 < hi; j += 32) {
        int64_t off[4] = {j * p.n_out + o, (j + 8) * p.n_out + o, (j + 16) * p.n_out + o, (j + 24) * p.n_out + o};
        acc_fold_k<4>(p, a, off);
      }
    for (; j < hi; j += 8) acc_fold(p, a, j * p.n_out + o);
  }
  sh[threadIdx.y][threadIdx.x] = a;
  __syncthreads();
  if (threadIdx.y == 0 && o < p.n_out) {
    acc_t tot = acc_init(p);
    for (int k = 0; k < 8; k++) acc_merge(p, tot, sh[k][threadIdx.x]);
    part[blockIdx.y * p.n_out + o] = tot;
  }
}
/* Block of 32 columns x 8 lanes: lane y merges chunk partials y, y + 8, ... of its column in
 * order (eight loads issued before they are merged), then the 8 lanes merge in lane order
 * (deterministic; one thread walking all S partials of a column took 10-25 us per bias gradient
 * of the bf16 GPT-2 block on the H200). */
__global__ void reduce_cols_merge_kernel(red_params p, int64_t S, const acc_t *part) {
  __shared__ acc_t sh[8][33];
  const int64_t o = blockIdx.x * 32 + threadIdx.x;
  acc_t tot = acc_init(p);
  if (o < p.n_out) {
    int64_t s = threadIdx.y;
    for (; s + 56 < S; s += 64) {
      acc_t v[8];
#pragma unroll
      for (int k = 0; k < 8; k++) v[k] = part[(s + 8 * k) * p.n_out + o];
#pragma unroll
      for (int k = 0; k < 8; k++) acc_merge(p, tot, v[k]);
    }
    for (; s < S; s += 8) acc_merge(p, tot, part[s * p.n_out + o]);
  }
  sh[threadIdx.y][threadIdx.x] = tot;
  __syncthreads();
  if (threadIdx.y == 0 && o < p.n_out) {
    acc_t all = acc_init(p);
    for (int k = 0; k < 8; k++) acc_merge(p, all, sh[k][threadIdx.x]);
    acc_store(p, all, o);
  }
}

/* Column sums / means of f32 / bf16 / f16 (the bias gradients: [R, C] summed over R): the
 * dtype fixed at compile time, 2 neighbouring columns per thread (one 4- or 8-byte load, so a
 * warp reads 64 columns in one coalesced access), 8 row lanes per block, 8 rows' loads issued
 * before they are folded; the same Neumaier-compensated double sums in row order per lane and
 * the same partial layout as reduce_cols_kernel, so reduce_cols_merge_kernel finishes both. */
template <typename T> __global__ void __launch_bounds__(256) sum_cols2_kernel(red_params p, int64_t S, acc_t *part) {
  __shared__ acc_t sh[8][65];
  const int64_t C = p.n_out, R = p.n_red_elems, chunk = (R + S - 1) / S, lo = blockIdx.y * chunk;
  const int64_t hi = lo + chunk < R ? lo + chunk : R, o = blockIdx.x * 64 + 2 * threadIdx.x;
  const T *x = (const T *)p.x;
  double s0 = 0, c0 = 0, s1 = 0, c1 = 0;
  if (o < C) {
    int64_t j = lo + threadIdx.y;
    for (; j + 56 < hi; j += 64) {
      double v[8][2];
#pragma unroll
      for (int k = 0; k < 8; k++) ld2_d<T>(x + (j + 8 * k) * C + o, v[k][0], v[k][1]);
#pragma unroll
      for (int k = 0; k < 8; k++) {
        neumaier_add(s0, c0, v[k][0]);
        neumaier_add(s1, c1, v[k][1]);
      }
    }
    for (; j < hi; j += 8) {
      double a, b;
      ld2_d<T>(x + j * C + o, a, b);
      neumaier_add(s0, c0, a);
      neumaier_add(s1, c1, b);
    }
  }
  /* lane-ordered merge as in reduce_cols_kernel: 64 columns, one thread each */
  colsum2_block_store(sh, s0, c0, s1, c1, C, part);
}

template <typename T> static bool sum_cols2_fits(const red_params &p) {
  return (p.op == RLX_REDUCE_SUM || p.op == RLX_REDUCE_MEAN) && p.n_out % 2 == 0 &&
         (uintptr_t)p.x % (2 * sizeof(T)) == 0;
}

rlx_status cu_scratch(rlx_cu_ctx *c, size_t need, void **out) {
  if (c->scratch_bytes < need) {
    if (c->scratch) cudaFree(c->scratch);
    c->scratch = NULL;
    c->scratch_bytes = 0;
    cudaError_t e = cudaMalloc(&c->scratch, need);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return rlx_errorf(RLX_ERR_OOM, "cuda: %zu bytes of reduction scratch: %s", need, cudaGetErrorString(e));
    }
    c->scratch_bytes = need;
  }
  *out = c->scratch;
  return RLX_OK;
}

__global__ void reduce_kernel(red_params p) {
  __shared__ acc_t sh[RED_THREADS];
  for (int64_t o = blockIdx.x; o < p.n_out; o += gridDim.x) {
    int64_t base = 0, rem = o;
    for (int d = p.n_kept - 1; d >= 0; d--) {
      int64_t c = rem % p.kept_dims[d];
      rem /= p.kept_dims[d];
      base += c * p.kept_stride[d];
    }
    acc_t s;
    bool cplx = dt_is_complex(p.t);
    s.a = p.op == RLX_REDUCE_PROD ? 1 : p.op == RLX_REDUCE_MAX ? -INFINITY : p.op == RLX_REDUCE_MIN ? INFINITY : 0;
    s.b = 0;
    if (cplx) s.a = p.op == RLX_REDUCE_PROD ? 1 : 0;
    s.i = p.op == RLX_REDUCE_PROD ? 1 : p.op == RLX_REDUCE_MAX ? int_min_of(p.t) : p.op == RLX_REDUCE_MIN ? int_max_of(p.t) : 0;
    const acc_t init = s;
    for (int64_t j = threadIdx.x; j < p.n_red_elems; j += blockDim.x) {
      int64_t off = base, r2 = j;
      for (int d = p.n_red - 1; d >= 0; d--) {
        int64_t c = r2 % p.red_dims[d];
        r2 /= p.red_dims[d];
        off += c * p.red_stride[d];
      }
      acc_fold(p, s, off);
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      acc_t tot = init;
      for (int k = 0; k < (int)blockDim.x; k++) acc_merge(p, tot, sh[k]);
      bool mean = p.op == RLX_REDUCE_MEAN;
      double n = (double)p.n_red_elems;
      if (cplx) {
        if (mean) { tot.a /= n; tot.b /= n; }
        st_c(p.out, p.t, o, tot.a, tot.b);
      } else if (dt_is_int(p.t)) {
        if (mean) tot.i = p.n_red_elems ? tot.i / p.n_red_elems : 0;
        st_i(p.out, p.t, o, tot.i);
      } else {
        double v = tot.a;
        if (p.op == RLX_REDUCE_SUM || mean) v = (isinf(tot.a) || tot.a != tot.a) ? tot.a : tot.a + tot.b;
        if (mean) v /= n;
        st_f(p.out, p.t, o, v);
      }
    }
    __syncthreads();
  }
}

rlx_status cu_colsum2_merge(rlx_cu_ctx *c, int dtype, int op, int64_t rows, int64_t C, int64_t S, const acc_t *part,
                            void *out) {
  red_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.t = dtype;
  p.n_out = C;
  p.n_red_elems = rows;
  p.out = out;
  reduce_cols_merge_kernel<<<(unsigned)((C + 31) / 32), dim3(32, 8), 0, c->stream>>>(p, S, part);
  return cu_launch_status("column sum merge kernel");
}

/* The conditions under which rlx_cu_reduce sums the rows of [rows, C] with the two-column kernel
 * (sum_cols2_fits and the leading-axes test below). */
extern "C" int rlx_cu_colsum_fits(int op, int dtype, int64_t rows, int64_t C, const void *const *ptrs, int n_ptrs) {
  if (op != RLX_REDUCE_SUM && op != RLX_REDUCE_MEAN) return 0;
  if (dtype != RLX_F32 && dtype != RLX_BF16 && dtype != RLX_F16) return 0;
  if (C < 16 || rows < 64 || C % 2) return 0;
  const uintptr_t al = 2 * (dtype == RLX_F32 ? 4 : 2) - 1;
  for (int k = 0; k < n_ptrs; k++)
    if ((uintptr_t)ptrs[k] & al) return 0;
  return 1;
}

extern "C" rlx_status rlx_cu_reduce(rlx_cu_ctx *c, int op, int dtype, const void *x, int rank, const int64_t *dims,
                                    uint32_t mask, void *out) {
  red_params p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.t = dtype;
  p.x = x;
  p.out = out;
  int64_t st[RLX_CU_MAX_RANK], s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= dims[d];
  }
  p.n_out = 1;
  p.n_red_elems = 1;
  for (int d = 0; d < rank; d++) {
    if (mask & (1u << d)) {
      p.red_dims[p.n_red] = dims[d];
      p.red_stride[p.n_red++] = st[d];
      p.n_red_elems *= dims[d];
    } else {
      p.kept_dims[p.n_kept] = dims[d];
      p.kept_stride[p.n_kept++] = st[d];
      p.n_out *= dims[d];
    }
  }
  if (p.n_out == 0) return RLX_OK;
  /* neighbouring reduced axes that are contiguous in x as one (a full sum is then one axis) */
  int nr = 0;
  for (int k = 0; k < p.n_red; k++) {
    if (nr > 0 && p.red_stride[nr - 1] == p.red_stride[k] * p.red_dims[k]) {
      p.red_dims[nr - 1] *= p.red_dims[k];
      p.red_stride[nr - 1] = p.red_stride[k];
      continue;
    }
    p.red_dims[nr] = p.red_dims[k];
    p.red_stride[nr++] = p.red_stride[k];
  }
  const int n_red_axes = p.n_red; /* the mask's count, for the leading-axes test below */
  p.n_red = nr;
  bool leading = n_red_axes > 0 && p.n_kept > 0 && mask == (1u << n_red_axes) - 1u;
  if (leading && p.n_out >= 16 && p.n_red_elems >= 64) {
    const bool two = (p.t == RLX_F32 && sum_cols2_fits<float>(p)) ||
                     (p.t == RLX_BF16 && sum_cols2_fits<__nv_bfloat16>(p)) ||
                     (p.t == RLX_F16 && sum_cols2_fits<__half>(p));
    int64_t cb = (p.n_out + 31) / 32, S = (132 * 8 + cb - 1) / cb, most = p.n_red_elems / 32;
    if (S > most) S = most;
    if (S > 65535) S = 65535;
    if (S < 1) S = 1;
    if (two) S = cu_colsum2_chunks(p.n_red_elems, p.n_out), cb = (p.n_out + 63) / 64;
    void *part;
    RLX_TRY(cu_scratch(c, (size_t)(S * p.n_out) * sizeof(acc_t), &part));
    dim3 grid((unsigned)cb, (unsigned)S), block(32, 8);
    if (two && p.t == RLX_F32) sum_cols2_kernel<float><<<grid, block, 0, c->stream>>>(p, S, (acc_t *)part);
    else if (two && p.t == RLX_BF16) sum_cols2_kernel<__nv_bfloat16><<<grid, block, 0, c->stream>>>(p, S, (acc_t *)part);
    else if (two) sum_cols2_kernel<__half><<<grid, block, 0, c->stream>>>(p, S, (acc_t *)part);
    else reduce_cols_kernel<<<grid, block, 0, c->stream>>>(p, S, (acc_t *)part);
    RLX_TRY(cu_launch_status("column reduce kernel"));
    reduce_cols_merge_kernel<<<(unsigned)((p.n_out + 31) / 32), dim3(32, 8), 0, c->stream>>>(p, S,
                                                                                         (const acc_t *)part);
    return cu_launch_status("column reduce merge kernel");
  }
  if (p.n_out <= 1024 && p.n_red_elems >= ((int64_t)1 << 16)) {
    int64_t S = p.n_red_elems / 8192;
    if (S > 512) S = 512;
    if (S * p.n_out > 132 * 8 && p.n_out > 1) S = (132 * 8 + p.n_out - 1) / p.n_out;
    if (S < 2) S = 2;
    void *part;
    RLX_TRY(cu_scratch(c, (size_t)(S * p.n_out) * sizeof(acc_t), &part));
    const dim3 grid((unsigned)S, (unsigned)p.n_out);
    if (sum_split4_fits(p, p.t == RLX_F32 ? 4 : 2)) {
      const int64_t chunk = ((p.n_red_elems + S - 1) / S + 3) & ~(int64_t)3;
      if (p.t == RLX_F32)
        sum_split4_kernel<float><<<grid, RED_THREADS, 0, c->stream>>>(p, S, chunk, (acc_t *)part);
      else if (p.t == RLX_BF16)
        sum_split4_kernel<__nv_bfloat16><<<grid, RED_THREADS, 0, c->stream>>>(p, S, chunk, (acc_t *)part);
      else
        sum_split4_kernel<__half><<<grid, RED_THREADS, 0, c->stream>>>(p, S, chunk, (acc_t *)part);
    } else {
      reduce_split_kernel<<<grid, RED_THREADS, 0, c->stream>>>(p, S, (acc_t *)part);
    }
    rlx_status st = cu_launch_status("split reduce kernel");
    if (st != RLX_OK) return st;
    reduce_merge_kernel<<<(unsigned)p.n_out, RED_THREADS, 0, c->stream>>>(p, S, (const acc_t *)part);
    return cu_launch_status("reduce merge kernel");
  }
  int64_t blocks = p.n_out < 65535 * 4 ? p.n_out : 65535 * 4;
  int threads = p.n_red_elems >= RED_THREADS ? RED_THREADS : 32;
  reduce_kernel<<<(unsigned)blocks, threads, 0, c->stream>>>(p);
  return cu_launch_status("reduce kernel");
}

/* ---- block-wide max of doubles (the sum is cu_block_sum, dev.cuh) ---- */
__device__ double block_max(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_down_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  double r = -INFINITY;
  for (int k = 0; k < (int)(blockDim.x + 31) / 32; k++) r = nan_max(r, sh[k]);
  return r;
}

/* One block per (outer, inner) line of `len` elements at stride `inner`. */
__global__ void softmax_kernel(int t, const void *x, int64_t outer, int64_t len, int64_t inner, void *out) {
  __shared__ double sh[32];
  for (int64_t line = blockIdx.x; line < outer * inner; line += gridDim.x) {
    int64_t o = line / inner, i = line % inner, base = o * len * inner + i;
    double m = -INFINITY;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) m = nan_max(m, ld_f(x, t, base + k * inner));
    m = block_max(m, sh);
    double s = 0;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) s += exp(ld_f(x, t, base + k * inner) - m);
    s = cu_block_sum(s, sh);
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
      st_f(out, t, base + k * inner, exp(ld_f(x, t, base + k * inner) - m) / s);
    __syncthreads();
  }
}

extern "C" rlx_status rlx_cu_softmax(rlx_cu_ctx *c, int dtype, const void *x, int64_t outer, int64_t len, int64_t inner,
                                     void *out) {
  int64_t lines = outer * inner;
  if (lines == 0 || len == 0) return RLX_OK;
  int threads = len >= 1024 ? 256 : len >= 128 ? 128 : 32;
  unsigned blocks = (unsigned)(lines < 65535 * 8 ? lines : 65535 * 8);
  softmax_kernel<<<blocks, threads, 0, c->stream>>>(dtype, x, outer, len, inner, out);
  return cu_launch_status("softmax kernel");
}

/* LayerNorm (two-pass mean / biased variance) or RmsNorm over rows of `len`. */
__global__ void norm_kernel(int rms, int t, const void *x, const void *g, const void *b, int64_t rows, int64_t len,
                            double eps, void *out, double *st) {
  __shared__ double sh[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * len;
    double m = 0;
    if (!rms) {
      for (int64_t k = threadIdx.x; k < len; k += blockDim.x) m += ld_f(x, t, base + k);
      m = cu_block_sum(m, sh) / (double)len;
    }
    double v = 0;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) {
      double d = ld_f(x, t, base + k) - m;
      v += d * d;
    }
    v = cu_block_sum(v, sh) / (double)len;
    double inv = 1.0 / sqrt(v + eps);
    if (st && threadIdx.x == 0) st[2 * r] = m, st[2 * r + 1] = inv;
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x)
      st_f(out, t, base + k, (ld_f(x, t, base + k) - m) * inv * ld_f(g, t, k) + ld_f(b, t, k));
    __syncthreads();
  }
}

/* The same for f32 / bf16 / f16 rows of up to 1024 elements (a multiple of 4): one warp per row,
 * the row held in registers as floats (exactly the stored values), 4 consecutive elements per
 * lane and 128-element chunk with one 8- or 16-byte access; the statistics in double and the
 * same two-pass formula, summed per lane then across the warp by shuffles (no block barriers:
 * the block-per-row kernel above took 59 us for the bf16 block's [8192, 768] LayerNorm on the
 * H200, this one the bytes' time). */
template <typename T> struct norm_vec;
template <> struct norm_vec<float> {
  typedef float4 V;
  __device__ static void get(const float *p, float (&v)[4]) {
    float4 u = *(const float4 *)p;
    v[0] = u.x, v[1] = u.y, v[2] = u.z, v[3] = u.w;
  }
  __device__ static void put(float *p, const double (&v)[4]) {
    *(float4 *)p = make_float4((float)v[0], (float)v[1], (float)v[2], (float)v[3]);
  }
};
template <typename H> struct norm_vec16 {
  __device__ static void get(const H *p, float (&v)[4]) {
    uint2 u = *(const uint2 *)p;
    H h[4];
    memcpy(h, &u, 8);
    for (int i = 0; i < 4; i++) v[i] = to_f(h[i]);
  }
  __device__ static void put(H *p, const double (&v)[4]) {
    H h[4];
    for (int i = 0; i < 4; i++) h[i] = st_t<H>(v[i]);
    uint2 u;
    memcpy(&u, h, 8);
    *(uint2 *)p = u;
  }
};
template <> struct norm_vec<__nv_bfloat16> : norm_vec16<__nv_bfloat16> {};
template <> struct norm_vec<__half> : norm_vec16<__half> {};

template <typename T, int NC>
__global__ void __launch_bounds__(256) norm_warp_kernel(int rms, const T *x, const T *g, const T *b, int64_t rows,
                                                        int len, double eps, T *out, double *st) {
  typedef norm_vec<T> NV;
  const int lane = threadIdx.x & 31;
  for (int64_t r = blockIdx.x * 8 + threadIdx.x / 32; r < rows; r += (int64_t)gridDim.x * 8) {
    const T *xr = x + r * len;
    float v[NC][4];
    double s = 0;
#pragma unroll
    for (int i = 0; i < NC; i++) {
      int k = 128 * i + 4 * lane;
      if (k < len) {
        NV::get(xr + k, v[i]);
        for (int c = 0; c < 4; c++) s += v[i][c];
      } else {
        for (int c = 0; c < 4; c++) v[i][c] = 0.f;
      }
    }
    const double m = rms ? 0.0 : warp_sum_d(s) / (double)len;
    double q = 0;
#pragma unroll
    for (int i = 0; i < NC; i++)
      if (128 * i + 4 * lane < len)
        for (int c = 0; c < 4; c++) {
          double d = v[i][c] - m;
          q += d * d;
        }
    const double inv = 1.0 / sqrt(warp_sum_d(q) / (double)len + eps);
    if (st && lane == 0) st[2 * r] = m, st[2 * r + 1] = inv; /* the backward's statistics */
#pragma unroll
    for (int i = 0; i < NC; i++) {
      int k = 128 * i + 4 * lane;
      if (k >= len) continue;
      float gv[4], bv[4] = {0.f, 0.f, 0.f, 0.f};
      NV::get(g + k, gv);
      if (b) NV::get(b + k, bv);
      double y[4];
      for (int c = 0; c < 4; c++) y[c] = (v[i][c] - m) * inv * gv[c] + bv[c];
      NV::put(out + r * len + k, y);
    }
  }
}

extern "C" int rlx_cu_norm_warp_fits(int dtype, int64_t len, const void *const *ptrs, int n_ptrs) {
  if (dtype != RLX_F32 && dtype != RLX_BF16 && dtype != RLX_F16) return 0;
  const size_t align = dtype == RLX_F32 ? 16 : 8;
  for (int i = 0; i < n_ptrs; i++)
    if ((uintptr_t)ptrs[i] % align) return 0;
  return len % 4 == 0 && len <= 1024;
}

template <typename T>
static bool norm_warp_launch(int rms, int dtype, const void *x, const void *g, const void *b, int64_t rows, int64_t len,
                             double eps, void *out, double *st, cudaStream_t s) {
  const void *ptrs[4] = {x, g, b, out};
  if (!rlx_cu_norm_warp_fits(dtype, len, ptrs, 4)) return false;
  int64_t blocks = (rows + 7) / 8;
  if (blocks > 132 * 64) blocks = 132 * 64;
  const T *xt = (const T *)x, *gt = (const T *)g, *bt = (const T *)b;
  T *o = (T *)out;
  switch ((len + 127) / 128) {
#define RLX_NORM_CASE(K) \
  case K: norm_warp_kernel<T, K><<<(unsigned)blocks, 256, 0, s>>>(rms, xt, gt, bt, rows, (int)len, eps, o, st); break;
    RLX_NORM_CASE(1)
    RLX_NORM_CASE(2)
    RLX_NORM_CASE(3)
    RLX_NORM_CASE(4)
    RLX_NORM_CASE(5)
    RLX_NORM_CASE(6)
    RLX_NORM_CASE(7)
    RLX_NORM_CASE(8)
#undef RLX_NORM_CASE
  default: return false;
  }
  return true;
}

extern "C" rlx_status rlx_cu_norm(rlx_cu_ctx *c, int rms, int dtype, const void *x, const void *gamma, const void *beta,
                                  int64_t rows, int64_t len, double eps, void *out, void *stats_out) {
  if (rows == 0 || len == 0) return RLX_OK;
  bool done = false;
  double *st = (double *)stats_out;
  if (dtype == RLX_F32) done = norm_warp_launch<float>(rms, dtype, x, gamma, beta, rows, len, eps, out, st, c->stream);
  if (dtype == RLX_BF16)
    done = norm_warp_launch<__nv_bfloat16>(rms, dtype, x, gamma, beta, rows, len, eps, out, st, c->stream);
  if (dtype == RLX_F16) done = norm_warp_launch<__half>(rms, dtype, x, gamma, beta, rows, len, eps, out, st, c->stream);
  if (done) return cu_launch_status("norm kernel (one warp per row)");
  int threads = len >= 1024 ? 256 : len >= 128 ? 128 : 32;
  unsigned blocks = (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8);
  norm_kernel<<<blocks, threads, 0, c->stream>>>(rms, dtype, x, gamma, beta, rows, len, eps, out, st);
  return cu_launch_status("norm kernel");
}
