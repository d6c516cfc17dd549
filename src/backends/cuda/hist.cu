/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Histogram (cu_ext.h): bins + 1 edges lo + i (hi - lo) / bins; bin i holds [edge i, edge i+1),
 * the last bin also hi; NaN and values outside [lo, hi] are dropped (the CPU reference's rule,
 * including its correction of the floor estimate against the edges). Counts are 64-bit integer
 * atomics into the step's scratch (exact and order-independent), then stored in the output
 * dtype. */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__global__ void zero_kernel(unsigned long long *counts, int64_t bins) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < bins; b += (int64_t)gridDim.x * blockDim.x)
    counts[b] = 0;
}

__global__ void count_kernel(rlx_cu_ext e, unsigned long long *counts) {
  int64_t bins = e.len;
  double step = (e.hi - e.lo) / (double)bins;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    double v = ld_f(e.in[0], e.in_dtype, i);
    if (isnan(v) || v < e.lo || v > e.hi) continue;
    int64_t b = bins - 1;
    if (v < e.hi) {
      double f = floor((v - e.lo) / step);
      b = f < 0 ? 0 : f >= (double)bins ? bins - 1 : (int64_t)f;
      while (b > 0 && v < e.lo + (double)b * step) b--;
      while (b + 1 < bins && v >= e.lo + (double)(b + 1) * step) b++;
    }
    atomicAdd(&counts[b], 1ull);
  }
}

__global__ void store_kernel(rlx_cu_ext e, const unsigned long long *counts) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < e.len; b += (int64_t)gridDim.x * blockDim.x)
    st_f(e.out, e.dtype, b, (double)counts[b]);
}

} // namespace

extern "C" rlx_status rlx_cu_histogram_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  unsigned long long *counts = (unsigned long long *)e->scratch;
  if (e->len == 0) return RLX_OK;
  zero_kernel<<<cu_blocks(e->len, 256), 256, 0, c->stream>>>(counts, e->len);
  RLX_TRY(cu_launch_status("histogram zero kernel"));
  if (e->count > 0) {
    count_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, counts);
    RLX_TRY(cu_launch_status("histogram count kernel"));
  }
  store_kernel<<<cu_blocks(e->len, 256), 256, 0, c->stream>>>(*e, counts);
  return cu_launch_status("histogram store kernel");
}
