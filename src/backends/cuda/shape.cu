/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Data movement: one strided-copy kernel (Transpose, Expand, Narrow, Concat pieces) and Gather. */
#include "backends/cuda/dev.cuh"

template <typename T>
__global__ void strided_copy_kernel(rlx_cu_copy p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t so = 0, doff = 0, rem = i;
    for (int d = p.rank - 1; d >= 0; d--) {
      int64_t c = rem % p.dims[d];
      rem /= p.dims[d];
      so += c * p.src_stride[d];
      doff += c * p.dst_stride[d];
    }
    ((T *)p.dst)[doff] = ((const T *)p.src)[so];
  }
}

extern "C" rlx_status rlx_cu_strided_copy(rlx_cu_ctx *c, const rlx_cu_copy *p) {
  if (p->n == 0) return RLX_OK;
  const int threads = 256;
  unsigned blocks = cu_blocks(p->n, threads);
  switch (p->esz) {
  case 1: strided_copy_kernel<uint8_t><<<blocks, threads, 0, c->stream>>>(*p); break;
  case 2: strided_copy_kernel<uint16_t><<<blocks, threads, 0, c->stream>>>(*p); break;
  case 4: strided_copy_kernel<uint32_t><<<blocks, threads, 0, c->stream>>>(*p); break;
  case 8: strided_copy_kernel<uint64_t><<<blocks, threads, 0, c->stream>>>(*p); break;
  case 16: strided_copy_kernel<ulonglong2><<<blocks, threads, 0, c->stream>>>(*p); break;
  default: return rlx_errorf(RLX_ERR_INTERNAL, "cuda: strided copy of %d-byte elements", p->esz);
  }
  return cu_launch_status("strided copy kernel");
}

__device__ inline bool read_index(const void *p, int t, int64_t i, int64_t *v) {
  if (dt_is_int(t)) {
    *v = ld_i(p, t, i);
    return true;
  }
  double d = ld_f(p, t, i);
  if (!(d == floor(d)) || fabs(d) >= 9.2e18) return false;
  *v = (int64_t)d;
  return true;
}

/* one thread per output byte-chunk element (inner elements of esz bytes, moved as bytes) */
__global__ void gather_kernel(const uint8_t *x, int64_t outer, int64_t len, int64_t inner_bytes, const void *index,
                              int idx_dtype, int64_t n_idx, uint8_t *out, int *kerr) {
  int64_t total = outer * n_idx * inner_bytes;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t b = i % inner_bytes, r = i / inner_bytes, j = r % n_idx, o = r / n_idx, v;
    if (!read_index(index, idx_dtype, j, &v) || v < 0 || v >= len) {
      cu_raise(kerr, RLX_CU_KERR_INDEX);
      out[i] = 0;
      continue;
    }
    out[i] = x[(o * len + v) * inner_bytes + b];
  }
}

extern "C" rlx_status rlx_cu_gather(rlx_cu_ctx *c, const void *x, int64_t outer, int64_t len, int64_t inner, int esz,
                                    const void *index, int idx_dtype, int64_t n_idx, void *out) {
  int64_t total = outer * n_idx * inner * esz;
  if (total == 0) return RLX_OK;
  const int threads = 256;
  gather_kernel<<<cu_blocks(total, threads), threads, 0, c->stream>>>((const uint8_t *)x, outer, len, inner * esz,
                                                                       index, idx_dtype, n_idx, (uint8_t *)out, c->kerr);
  return cu_launch_status("gather kernel");
}
