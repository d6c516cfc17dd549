/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* PartitionedConv (cu_ext.h): the full linear convolution y[t] = sum_m x[t - m] ir[m] of every
 * line of x [..., L] with ir [M], y [..., L + M - 1], computed directly in double as the CPU
 * reference does (the block attribute only shapes an FFT decomposition); one thread per output
 * element, the sum in increasing m. */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__global__ void partconv_kernel(rlx_cu_ext e, int x_t, int h_t) {
  int64_t L = e.len, M = e.C, Y = L + M - 1;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t l = i / Y, t = i % Y;
    int64_t m0 = t >= L ? t - L + 1 : 0, m1 = t < M ? t : M - 1;
    double acc = 0.0;
    for (int64_t m = m0; m <= m1; m++) acc += ld_f(e.in[0], x_t, l * L + t - m) * ld_f(e.in[1], h_t, m);
    st_f(e.out, e.dtype, i, acc);
  }
}

} // namespace

extern "C" rlx_status rlx_cu_partconv_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->count == 0) return RLX_OK;
  partconv_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, e->in_dtype, (int)e->N);
  return cu_launch_status("partitioned conv kernel");
}
