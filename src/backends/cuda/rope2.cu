/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* RopeBackward and AxialRope2d (cu_ext.h), one thread per output element, in double as the CPU
 * reference. RopeBackward rotates each pair (NeoX: i, i + n_rot/2; GptJ: 2i, 2i + 1) of every
 * head back by the table row's angle (dx_first = dy_first c + dy_second s, dx_second =
 * dy_second c - dy_first s); lanes >= n_rot pass through. AxialRope2d: token t -> p = t / repeat,
 * (px, py) = (p mod end_x, p div end_x); the first half of each head rotates with px, the second
 * with py; inside a half, lanes (2c, 2c+1) rotate by coord * theta^(-4c/D). */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__global__ void rope_bw_kernel(rlx_cu_rope p, int64_t total) {
  int64_t half = p.nr / 2, hidden = p.heads * p.hd;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t tok = i / hidden, l = (i % hidden) % p.hd, base = i - l;
    if (l >= p.nr) {
      st_f(p.out, p.dtype, i, ld_f(p.x, p.dtype, i));
      continue;
    }
    int64_t s = tok % p.S, row = (p.per_token ? tok : s) * p.width;
    int64_t k = p.neox ? (l < half ? l : l - half) : l / 2;
    bool first = p.neox ? l < half : (l % 2) == 0;
    int64_t i0 = p.neox ? k : 2 * k, i1 = p.neox ? k + half : 2 * k + 1;
    double c = ld_f(p.cos, p.dtype, row + k), sn = -ld_f(p.sin, p.dtype, row + k);
    double a = ld_f(p.x, p.dtype, base + i0), z = ld_f(p.x, p.dtype, base + i1);
    st_f(p.out, p.dtype, i, first ? a * c - z * sn : z * c + a * sn);
  }
}

__global__ void axial_rope_kernel(rlx_cu_ext e) {
  int64_t D = e.hd, W = e.heads * D, half = D / 2;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t tk = (i / W) % e.tokens, l = (i % W) % D, base = i - l;
    int64_t pl = l - (l % 2); /* the pair's first lane */
    int64_t p = tk / e.rep;
    double px = (double)(p % e.ex), py = (double)(p / e.ex);
    int64_t q = pl < half ? pl : pl - half, c = q / 2;
    double ang = (pl < half ? px : py) * pow(e.theta, -4.0 * (double)c / (double)D);
    double cs = cos(ang), sn = sin(ang);
    double a = ld_f(e.in[0], e.dtype, base + pl), z = ld_f(e.in[0], e.dtype, base + pl + 1);
    st_f(e.out, e.dtype, i, (l % 2) == 0 ? a * cs - z * sn : z * cs + a * sn);
  }
}

} // namespace

extern "C" rlx_status rlx_cu_rope2_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->mode == RLX_CU_EXT_ROPE_BW) {
    int64_t total = e->rope.batch * e->rope.S * e->rope.heads * e->rope.hd;
    if (total == 0) return RLX_OK;
    rope_bw_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(e->rope, total);
    return cu_launch_status("rope backward kernel");
  }
  if (e->count == 0) return RLX_OK;
  axial_rope_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e);
  return cu_launch_status("axial rope kernel");
}
