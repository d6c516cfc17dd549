/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fft through cuFFT (cu_ext.h). The CPU reference (src/backends/cpu/ref/signal.c) transforms
 * every line in double complex and rounds once to the output dtype, for c64 and the f32
 * real-block layout too; so does this: one batched Z2Z plan (lines transforms of length N, in
 * place on a double-complex buffer in the context's scratch) made at lowering, a pack kernel
 * (x in its layout and dtype -> double2), the plan's execution (CUFFT_FORWARD = exp(-2 pi i jk/N),
 * CUFFT_INVERSE = exp(+2 pi i jk/N), neither scaled: the CPU's signs), and an unpack kernel that
 * applies the norm's scale and rounds to the output's layout and dtype. cuFFT picks the algorithm
 * (radix kernels, Bluestein for large prime factors), so the sums are not in the CPU's order;
 * the results agree to double rounding before the final rounding. The plan holds its own work
 * area; the execution is queued on the context's stream (captured into CUDA graphs with the
 * rest). */
#include <cufft.h>
#include <stdlib.h>

#include "backends/cuda/cu_ext.h"
#include "backends/cuda/dev.cuh"
#include "backends/cuda/libs.cuh"

struct rlx_cu_fft {
  cufftHandle plan;
  int64_t lines, N;
};

namespace {

rlx_status fft_err(cufftResult r, const char *what) {
  return rlx_errorf(RLX_ERR_INTERNAL, "cuda: cuFFT %s failed (cufftResult %d)", what, (int)r);
}

/* line l, value j of x: complex dtypes hold [lines, N] complex values; f32 / f64 the real-block
 * layout [lines, 2N] = [re 0..N | im 0..N] per line */
__global__ void fft_pack_kernel(int t, const void *x, double2 *buf, int64_t lines, int64_t N) {
  int64_t total = lines * N;
  bool cplx = dt_is_complex(t);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    double re, im;
    if (cplx) {
      ld_c(x, t, e, &re, &im);
    } else {
      int64_t line = e / N, j = e % N;
      re = ld_f(x, t, line * 2 * N + j);
      im = ld_f(x, t, line * 2 * N + N + j);
    }
    buf[e] = make_double2(re, im);
  }
}

__global__ void fft_unpack_kernel(int t, const double2 *buf, void *out, int64_t lines, int64_t N, double scale) {
  int64_t total = lines * N;
  bool cplx = dt_is_complex(t);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    double2 v = buf[e];
    double re = v.x * scale, im = v.y * scale;
    if (cplx) {
      st_c(out, t, e, re, im);
    } else {
      int64_t line = e / N, k = e % N;
      st_f(out, t, line * 2 * N + k, re);
      st_f(out, t, line * 2 * N + N + k, im);
    }
  }
}

} // namespace

extern "C" rlx_status rlx_cu_fft_create(rlx_cu_ctx *c, int64_t lines, int64_t N, rlx_cu_fft **out) {
  (void)c;
  *out = NULL;
  rlx_cu_fft *f = (rlx_cu_fft *)calloc(1, sizeof *f);
  if (!f) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  f->lines = lines;
  f->N = N;
  cufftResult r = CUL(cufftCreate)(&f->plan);
  if (r != CUFFT_SUCCESS) {
    free(f);
    return fft_err(r, "cufftCreate");
  }
  long long n = N, dist = N;
  size_t work = 0;
  r = CUL(cufftMakePlanMany64)(f->plan, 1, &n, NULL, 1, dist, NULL, 1, dist, CUFFT_Z2Z, (long long)lines, &work);
  if (r != CUFFT_SUCCESS) {
    CUL(cufftDestroy)(f->plan);
    free(f);
    return r == CUFFT_ALLOC_FAILED ? rlx_errorf(RLX_ERR_OOM, "cuda: no device memory for a cuFFT plan of %lld x %lld",
                                                (long long)lines, (long long)N)
                                   : fft_err(r, "plan creation (cufftMakePlanMany64, Z2Z)");
  }
  *out = f;
  return RLX_OK;
}

extern "C" void rlx_cu_fft_destroy(rlx_cu_ctx *c, rlx_cu_fft *f) {
  (void)c;
  if (!f) return;
  CUL(cufftDestroy)(f->plan);
  free(f);
}

extern "C" rlx_status rlx_cu_fft_run(rlx_cu_ctx *c, const rlx_cu_fft *f, int dtype, const void *x, void *out,
                                     int inverse, double scale) {
  if (!f || f->lines == 0 || f->N == 0) return RLX_OK;
  int64_t total = f->lines * f->N;
  void *scr;
  RLX_TRY(cu_scratch(c, (size_t)total * sizeof(double2), &scr));
  double2 *buf = (double2 *)scr;
  fft_pack_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(dtype, x, buf, f->lines, f->N);
  RLX_TRY(cu_launch_status("fft pack kernel"));
  cufftResult r = CUL(cufftSetStream)(f->plan, c->stream);
  if (r != CUFFT_SUCCESS) return fft_err(r, "cufftSetStream");
  r = CUL(cufftExecZ2Z)(f->plan, (cufftDoubleComplex *)buf, (cufftDoubleComplex *)buf, inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
  if (r != CUFFT_SUCCESS) return fft_err(r, "cufftExecZ2Z");
  fft_unpack_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(dtype, buf, out, f->lines, f->N, scale);
  return cu_launch_status("fft unpack kernel");
}
