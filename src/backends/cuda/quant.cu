/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* FakeQuantize and FakeQuantizeBackward (cu_ext.h), the CPU reference's definitions (spec
 * ir-special §1.4) in double: per channel c of x ([outer, C, inner] around the axis) a scale s[c]
 * — PerBatch max(amax_c / qmax, 1e-12) with amax_c the NaN-ignoring max |x| of the channel; Fixed
 * max(state_c, 1e-12); EMA state_c <= 0 ? the PerBatch value : decay state_c + (1 - decay) times
 * it — then y = clamp(round_half_even(x / s), -qmax, qmax) s. The backward re-derives the PerBatch
 * scale and applies the STE: Identity dy, ClippedIdentity dy where |x| <= qmax s, Tanh
 * dy (1 - tanh(x / s)^2), HardTanh dy max(0, 1 - |x| / (qmax s)). The scales go to the step's
 * scratch (one block per channel), then one thread per element. */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

namespace {

__global__ void scale_kernel(rlx_cu_ext e, double *scale) {
  __shared__ double sh[32];
  int64_t C = e.C, inner = e.S, per = e.N * inner;
  double qmax = e.lo;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double m = 0.0;
    if (e.mode == RLX_CU_EXT_FQ_BW || e.qmode != RLX_SCALE_MODE_FIXED) {
      for (int64_t k = threadIdx.x; k < per; k += blockDim.x) {
        int64_t o = k / inner, j = k % inner;
        double a = fabs(ld_f(e.in[0], e.in_dtype, (o * C + c) * inner + j));
        if (a > m) m = a; /* NaN never wins */
      }
      for (int off = 16; off > 0; off >>= 1) m = fmax(m, __shfl_down_sync(0xffffffffu, m, off));
      int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
      __syncthreads();
      if (lane == 0) sh[w] = m;
      __syncthreads();
      m = 0.0;
      for (int q = 0; q < (int)(blockDim.x + 31) / 32; q++) m = fmax(m, sh[q]);
    }
    if (threadIdx.x == 0) {
      double cur = fmax(m / qmax, 1e-12), s = cur;
      if (e.mode == RLX_CU_EXT_FQ && e.qmode != RLX_SCALE_MODE_PER_BATCH) {
        double st = ld_f(e.in[1], e.G, e.want_xh == 1 ? 0 : c);
        s = e.qmode == RLX_SCALE_MODE_FIXED ? fmax(st, 1e-12) : st <= 0.0 ? cur : e.hi * st + (1.0 - e.hi) * cur;
      }
      scale[c] = s;
    }
    __syncthreads();
  }
}

__global__ void fq_kernel(rlx_cu_ext e, const double *scale) {
  double qmax = e.lo;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    double sc = scale[(i / e.S) % e.C], x = ld_f(e.in[0], e.in_dtype, i), v;
    if (e.mode == RLX_CU_EXT_FQ) {
      double q = rint(x / sc);
      v = (q < -qmax ? -qmax : q > qmax ? qmax : q) * sc;
    } else {
      double dy = ld_f(e.in[1], e.G, i);
      switch (e.ste) {
      case RLX_STE_CLIPPED_IDENTITY: v = fabs(x) <= qmax * sc ? dy : 0.0; break;
      case RLX_STE_TANH: {
        double th = tanh(x / sc);
        v = dy * (1.0 - th * th);
        break;
      }
      case RLX_STE_HARD_TANH: v = dy * fmax(0.0, 1.0 - fabs(x) / (qmax * sc)); break;
      default: v = dy; break;
      }
    }
    st_f(e.out, e.dtype, i, v);
  }
}

} // namespace

extern "C" rlx_status rlx_cu_fq_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->count == 0 || e->C == 0) return RLX_OK;
  int64_t per = e->N * e->S;
  int threads = per >= 1024 ? 256 : per >= 128 ? 128 : 32;
  unsigned blocks = (unsigned)(e->C < 65535 * 8 ? e->C : 65535 * 8);
  scale_kernel<<<blocks, threads, 0, c->stream>>>(*e, (double *)e->scratch);
  RLX_TRY(cu_launch_status("fake-quantize scale kernel"));
  fq_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, (const double *)e->scratch);
  return cu_launch_status("fake-quantize kernel");
}

/* ---- Quantize / Dequantize: per channel c a scale (double) and a zero point (int64) in the
 * step's scratch, [C scales][C zero points]; Quantize rounds half away from zero, maps NaN to the
 * zero point and saturates to [-128, 127]; Dequantize (q - zp) scale rounded once. ---- */

namespace {

__global__ void quant_kernel(rlx_cu_ext e, const double *scale, const int64_t *zp) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / e.S) % e.C;
    if (e.mode == RLX_CU_EXT_QUANT) {
      double x = ld_f(e.in[0], e.in_dtype, i), z = (double)zp[c];
      double v = isnan(x) ? z : round(x * (1.0 / scale[c])) + z;
      ((int8_t *)e.out)[i] = (int8_t)(v < -128.0 ? -128.0 : v > 127.0 ? 127.0 : v);
    } else {
      st_f(e.out, e.dtype, i, (double)(((const int8_t *)e.in[0])[i] - zp[c]) * scale[c]);
    }
  }
}

} // namespace

extern "C" rlx_status rlx_cu_quant_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->count == 0) return RLX_OK;
  const double *scale = (const double *)e->scratch;
  quant_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e, scale, (const int64_t *)(scale + e->C));
  return cu_launch_status("quantize kernel");
}
