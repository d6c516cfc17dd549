/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Column sums of [rows, C] tensors of f32 / bf16 / f16 (the bias gradients), shared by the
 * Reduce kernels (reduce.cu) and the kernels that produce a tensor and sum its columns in the
 * same pass (backward.cu, lower_fold.c): Neumaier-compensated double sums, two neighbouring
 * columns per thread, 8 row lanes per block of 32 x 8 threads, each lane folding its rows in
 * order; the lanes' partials are merged in lane order into part[chunk * C + column] and
 * cu_colsum2_merge finishes them. A fused kernel that folds the same values in the same order
 * with these helpers gives the Reduce's bits. */
#ifndef RLX_CUDA_COLSUM_CUH
#define RLX_CUDA_COLSUM_CUH

#include "backends/cuda/dev.cuh"

/* Two doubles per thread (sum, compensation) or one int64 or one complex pair. */
struct acc_t {
  double a, b;
  int64_t i;
};

/* s += v with the compensation term comp (Neumaier) */
__device__ inline void neumaier_add(double &s, double &comp, double v) {
  double t2 = s + v;
  if (fabs(s) >= fabs(v))
    comp += (s - t2) + v;
  else
    comp += (v - t2) + s;
  s = t2;
}
/* s += o for two compensated sums */
__device__ inline void acc_merge_sum(acc_t &s, const acc_t &o) {
  neumaier_add(s.a, s.b, o.a);
  s.b += o.b;
}

/* Row chunks of the two-column kernels for [rows, C]: about 8 blocks per SM of the H200's 132. */
static inline int64_t cu_colsum2_chunks(int64_t rows, int64_t C) {
  int64_t cb = (C + 63) / 64, S = (132 * 8 + cb - 1) / cb, most = rows / 32;
  if (S > most) S = most;
  if (S > 65535) S = 65535;
  if (S < 1) S = 1;
  return S;
}

/* End of a two-column block: lane threadIdx.y's sums of columns o, o + 1 (o = blockIdx.x * 64 +
 * 2 * threadIdx.x) merged in lane order into part[blockIdx.y * C + column]. */
__device__ inline void colsum2_block_store(acc_t (*sh)[65], double s0, double c0, double s1, double c1, int64_t C,
                                           acc_t *part) {
  sh[threadIdx.y][2 * threadIdx.x] = acc_t{s0, c0, 0};
  sh[threadIdx.y][2 * threadIdx.x + 1] = acc_t{s1, c1, 0};
  __syncthreads();
  const int t = threadIdx.y * 32 + threadIdx.x;
  if (t < 64 && blockIdx.x * 64 + t < C) {
    acc_t tot = {0, 0, 0};
    for (int k = 0; k < 8; k++) acc_merge_sum(tot, sh[k][t]);
    part[blockIdx.y * C + blockIdx.x * 64 + t] = tot;
  }
}

/* Merges the S chunk partials of each of the C columns in order and stores the sum (op
 * RLX_REDUCE_SUM) or mean over `rows` (RLX_REDUCE_MEAN) in out, of dtype. */
rlx_status cu_colsum2_merge(rlx_cu_ctx *c, int dtype, int op, int64_t rows, int64_t C, int64_t S, const acc_t *part,
                            void *out);

#endif
