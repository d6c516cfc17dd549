/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The complex elementwise kinds (cu_ext.h): Conjugate (re, -im), ComplexNormSq (re^2 + im^2
 * into the real dtype) and ComplexNormSqBackward (g z, the Wirtinger cotangent), in double as
 * the CPU reference, one thread per element (grid-stride). */
#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"

namespace {

__global__ void complex_kernel(rlx_cu_ext e) {
  int real_t = e.in_dtype == RLX_C128 ? RLX_F64 : RLX_F32;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < e.count; i += (int64_t)gridDim.x * blockDim.x) {
    double re, im;
    ld_c(e.in[0], e.in_dtype, i, &re, &im);
    if (e.mode == RLX_CU_EXT_CONJ) {
      st_c(e.out, e.dtype, i, re, -im);
    } else if (e.mode == RLX_CU_EXT_NORMSQ) {
      st_f(e.out, e.dtype, i, re * re + im * im);
    } else {
      double g = ld_f(e.in[1], real_t, i);
      st_c(e.out, e.dtype, i, g * re, g * im);
    }
  }
}

} // namespace

extern "C" rlx_status rlx_cu_complex_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->count == 0) return RLX_OK;
  complex_kernel<<<cu_blocks(e->count, 256), 256, 0, c->stream>>>(*e);
  return cu_launch_status("complex kernel");
}
