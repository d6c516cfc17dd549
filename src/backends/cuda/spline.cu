/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The spline activations (cu_ext.h), with the CPU reference's definitions: per channel c (x's
 * last axis; C = 1 shares one row), knots lo + j h, h = (hi - lo) / (nk - 1); y = coeffs[c, 0]
 * below lo, coeffs[c, nk - 1] above hi, else linear interpolation inside segment j =
 * floor((x - lo) / h) (clamped to [0, nk - 2]); BackwardX: dy times the segment's slope inside,
 * 0 outside; BackwardCoeff: dy onto the segment's two knots with the interpolation weights (all
 * onto knot 0 / nk - 1 outside) summed in double (atomics into the step's scratch, then one
 * rounding). NaN x gives NaN. Element i is in channel i % C. */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

enum { SP_BELOW, SP_INSIDE, SP_ABOVE, SP_NAN };

struct spl {
  int64_t nk, C;
  double lo, hi, h;
};

__device__ inline int locate(const spl &s, double x, int64_t *j, double *f) {
  if (isnan(x)) return SP_NAN;
  if (x < s.lo) return SP_BELOW;
  if (x > s.hi) return SP_ABOVE;
  double u = (x - s.lo) / s.h, fl = floor(u);
  if (fl > (double)(s.nk - 2)) fl = (double)(s.nk - 2);
  if (fl < 0) fl = 0;
  *j = (int64_t)fl;
  *f = u - fl;
  return SP_INSIDE;
}

__global__ void spline_kernel(rlx_cu_ext e, spl s, int ct, int dt) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = i % s.C, row = (s.C == 1 ? 0 : c) * s.nk, j = 0;
    double x = ld_f(e.in[0], e.in_dtype, i), f = 0, y;
    int w = locate(s, x, &j, &f);
    if (e.mode == RLX_CU_EXT_SPLINE) {
      y = w == SP_BELOW   ? ld_f(e.in[1], ct, row)
          : w == SP_ABOVE ? ld_f(e.in[1], ct, row + s.nk - 1)
          : w == SP_NAN   ? nan("")
                          : (1.0 - f) * ld_f(e.in[1], ct, row + j) + f * ld_f(e.in[1], ct, row + j + 1);
    } else {
      double dy = ld_f(e.in[2], dt, i);
      y = w == SP_INSIDE ? dy * (ld_f(e.in[1], ct, row + j + 1) - ld_f(e.in[1], ct, row + j)) / s.h
          : w == SP_NAN  ? nan("")
                         : 0.0;
    }
    st_f(e.out, e.dtype, i, y);
  }
}

__global__ void zero_kernel(double *acc, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    acc[i] = 0.0;
}

__global__ void coeff_kernel(rlx_cu_ext e, spl s, int dt, double *acc) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = s.C == 1 ? 0 : i % s.C, j = 0;
    double x = ld_f(e.in[0], e.in_dtype, i), dy = ld_f(e.in[2], dt, i), f = 0;
    double *row = acc + c * s.nk;
    switch (locate(s, x, &j, &f)) {
    case SP_BELOW: atomicAdd(&row[0], dy); break;
    case SP_ABOVE: atomicAdd(&row[s.nk - 1], dy); break;
    case SP_INSIDE:
      atomicAdd(&row[j], (1.0 - f) * dy);
      atomicAdd(&row[j + 1], f * dy);
      break;
    default: atomicAdd(&row[0], nan("")); break;
    }
  }
}

__global__ void store_kernel(rlx_cu_ext e, const double *acc, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    st_f(e.out, e.dtype, i, acc[i]);
}

} // namespace

/* e->len = nk, e->C = channels, e->lo / hi = the grid, e->G = coeffs' dtype, e->S = dy's dtype */
extern "C" rlx_status rlx_cu_spline_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  spl s = {e->len, e->C, e->lo, e->hi, (e->hi - e->lo) / (double)(e->len - 1)};
  if (e->mode != RLX_CU_EXT_SPLINE_DC) {
    if (e->count == 0) return RLX_OK;
    spline_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, s, (int)e->G, (int)e->S);
    return cu_launch_status("spline kernel");
  }
  int64_t n = e->C * e->len;
  double *acc = (double *)e->scratch;
  zero_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(acc, n);
  RLX_TRY(cu_launch_status("spline zero kernel"));
  if (e->count > 0) {
    coeff_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, s, (int)e->S, acc);
    RLX_TRY(cu_launch_status("spline coefficient kernel"));
  }
  store_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(*e, acc, n);
  return cu_launch_status("spline store kernel");
}
