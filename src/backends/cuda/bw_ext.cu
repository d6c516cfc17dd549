/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The packed backward kinds (cu_ext.h), with the CPU reference's formulas in double:
 *   AdaLayerNormBackward [x, scale, shift, dy] -> [dx (nx), dscale (ns), dshift (nh)]: per row
 *     of D, xh = (x - mean) r (RmsNorm: mean 0), s = dy (1 + scale), dx = r (s - mean(s) -
 *     xh mean(s xh)) (mean(s) = 0 for RmsNorm); dscale = sum of dy xh and dshift = sum of dy over
 *     the elements of x each broadcast element covers;
 *   GatedResidualBackward [x, y, gate, dy] -> [dx = dy (nx), dy gate (nx), dgate = sum dy y].
 * Row statistics go to the step's scratch; each broadcast sum is one block per target element
 * (cu_block_sum: deterministic). */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__device__ inline int64_t bcast_off(const rlx_cu_ext &e, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int k = e.rank - 1; k >= 0; k--) {
    off += (i % e.dims[k]) * st[k];
    i /= e.dims[k];
  }
  return off;
}

/* AdaLayerNormBackward dx, one block per row; writes (mean, r) per row into stats. */
__global__ void ada_dx_kernel(rlx_cu_ext e, double *stats) {
  __shared__ double sh[32];
  int t = e.dtype;
  for (int64_t r = blockIdx.x; r < e.rows; r += gridDim.x) {
    int64_t base = r * e.len;
    double m = 0;
    if (!e.rms) {
      for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) m += ld_f(e.in[0], t, base + j);
      m = cu_block_sum(m, sh) / (double)e.len;
    }
    double v = 0;
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      double d = ld_f(e.in[0], t, base + j) - m;
      v += d * d;
    }
    v = cu_block_sum(v, sh) / (double)e.len;
    double rs = 1.0 / sqrt(v + e.eps), ms = 0, msx = 0;
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      int64_t i = base + j;
      double s = ld_f(e.in[3], t, i) * (1.0 + ld_f(e.in[1], t, bcast_off(e, e.bstride[0], i)));
      ms += s;
      msx += s * (ld_f(e.in[0], t, i) - m) * rs;
    }
    ms = cu_block_sum(ms, sh) / (double)e.len;
    msx = cu_block_sum(msx, sh) / (double)e.len;
    if (e.rms) ms = 0;
    for (int64_t j = threadIdx.x; j < e.len; j += blockDim.x) {
      int64_t i = base + j;
      double s = ld_f(e.in[3], t, i) * (1.0 + ld_f(e.in[1], t, bcast_off(e, e.bstride[0], i)));
      double xh = (ld_f(e.in[0], t, i) - m) * rs;
      st_f(e.out, t, i, rs * (s - ms - xh * msx));
    }
    if (threadIdx.x == 0) {
      stats[2 * r] = m;
      stats[2 * r + 1] = rs;
    }
    __syncthreads();
  }
}

/* GatedResidualBackward's first two parts, elementwise. */
__global__ void gated_ew_kernel(rlx_cu_ext e) {
  int t = e.dtype;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    double g = ld_f(e.in[3], t, i);
    st_f(e.out, t, i, g);
    st_f(e.out, t, e.count + i, g * ld_f(e.in[2], t, bcast_off(e, e.bstride[0], i)));
  }
}

/* what: 0 = sum dy, 1 = sum dy xh (row statistics), 2 = sum dy y; reduction k; into out + at. */
__global__ void bcast_sum_kernel(rlx_cu_ext e, int k, int what, const double *stats, int64_t at) {
  __shared__ double sh[32];
  int t = e.dtype;
  const int nk = e.red[k].nkeep, nr = e.red[k].nred;
  int64_t total = 1;
  for (int q = 0; q < nr; q++) total *= e.red[k].rd[q];
  for (int64_t tg = blockIdx.x; tg < e.red[k].ntarget; tg += gridDim.x) {
    int64_t base = 0, rem = tg;
    for (int q = nk - 1; q >= 0; q--) {
      base += (rem % e.red[k].kd[q]) * e.red[k].ks[q];
      rem /= e.red[k].kd[q];
    }
    double acc = 0;
    for (int64_t p = threadIdx.x; p < total; p += blockDim.x) {
      int64_t o = base, rr = p;
      for (int q = nr - 1; q >= 0; q--) {
        o += (rr % e.red[k].rd[q]) * e.red[k].rs[q];
        rr /= e.red[k].rd[q];
      }
      double g = ld_f(e.in[3], t, o);
      if (what == 1) {
        int64_t row = o / e.len;
        g *= (ld_f(e.in[0], t, o) - stats[2 * row]) * stats[2 * row + 1];
      } else if (what == 2) {
        g *= ld_f(e.in[1], t, o);
      }
      acc += g;
    }
    acc = cu_block_sum(acc, sh);
    if (threadIdx.x == 0) st_f(e.out, t, at + tg, acc);
    __syncthreads();
  }
}

unsigned grid_of(int64_t n) { return (unsigned)(n < 65535 * 8 ? (n > 0 ? n : 1) : 65535 * 8); }
int threads_of(int64_t len) { return len >= 1024 ? 256 : len >= 128 ? 128 : 32; }

int64_t red_total(const rlx_cu_ext *e, int k) {
  int64_t t = 1;
  for (int q = 0; q < e->red[k].nred; q++) t *= e->red[k].rd[q];
  return t;
}

} // namespace

extern "C" rlx_status rlx_cu_bw_ext_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->mode == RLX_CU_EXT_ADA_BW) {
    if (e->rows > 0 && e->len > 0) {
      ada_dx_kernel<<<grid_of(e->rows), threads_of(e->len), 0, c->stream>>>(*e, (double *)e->scratch);
      RLX_TRY(cu_launch_status("ada norm backward kernel"));
    }
    for (int k = 0; k < 2; k++) {
      if (e->red[k].ntarget == 0) continue;
      int64_t at = e->count + (k ? e->red[0].ntarget : 0);
      bcast_sum_kernel<<<grid_of(e->red[k].ntarget), threads_of(red_total(e, k)), 0, c->stream>>>(
          *e, k, k == 0 ? 1 : 0, (const double *)e->scratch, at);
      RLX_TRY(cu_launch_status("ada norm parameter kernel"));
    }
    return RLX_OK;
  }
  if (e->count > 0) {
    gated_ew_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e);
    RLX_TRY(cu_launch_status("gated residual backward kernel"));
  }
  if (e->red[0].ntarget == 0) return RLX_OK;
  bcast_sum_kernel<<<grid_of(e->red[0].ntarget), threads_of(red_total(e, 0)), 0, c->stream>>>(*e, 0, 2, NULL,
                                                                                             2 * e->count);
  return cu_launch_status("gated residual gate kernel");
}
