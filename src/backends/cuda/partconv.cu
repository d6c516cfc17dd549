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

/* Interpolate3d (nearest): source index along an axis min(floor(dst in / out), in - 1), as the
 * CPU reference; dims[0..3] = NC, D, H, W of x and dims[4..6] = D', H', W'; element bytes in
 * want_xh. */
namespace {

__device__ inline int64_t nearest(int64_t dst, int64_t in, int64_t out) {
  unsigned long long v = (unsigned long long)dst * (unsigned long long)in / (unsigned long long)out;
  return v >= (unsigned long long)in ? in - 1 : (int64_t)v;
}

__global__ void interp3d_kernel(rlx_cu_ext e) {
  int64_t id = e.dims[1], ih = e.dims[2], iw = e.dims[3], od = e.dims[4], oh = e.dims[5], ow = e.dims[6];
  int esz = e.want_xh;
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < e.count; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t w = o % ow, h = (o / ow) % oh, d = (o / (ow * oh)) % od, p = o / (ow * oh * od);
    int64_t src = ((p * id + nearest(d, id, od)) * ih + nearest(h, ih, oh)) * iw + nearest(w, iw, ow);
    const uint8_t *s = (const uint8_t *)e.in[0] + src * esz;
    uint8_t *t = (uint8_t *)e.out + o * esz;
    for (int b = 0; b < esz; b++) t[b] = s[b];
  }
}

} // namespace

extern "C" rlx_status rlx_cu_interp3d_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->count == 0) return RLX_OK;
  interp3d_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e);
  return cu_launch_status("interpolate3d kernel");
}
