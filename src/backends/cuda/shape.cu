/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Data movement: one strided-copy kernel (Transpose, Expand, Narrow, Concat pieces) and Gather. */
#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

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

/* ---- Pad / Tile / Roll ---- */
__global__ void remap_kernel(rlx_cu_remap p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, off = 0;
    bool constant = false;
    for (int d = p.rank - 1; d >= 0; d--) {
      int64_t c = rem % p.out_dims[d], n = p.in_dims[d];
      rem /= p.out_dims[d];
      if (p.kind == 0) {
        c -= p.shift[d];
        if (c < 0 || c >= n) {
          switch (p.mode) {
          case RLX_PAD_MODE_REFLECT: c = c < 0 ? -c : 2 * (n - 1) - c; break;
          case RLX_PAD_MODE_REPLICATE: c = c < 0 ? 0 : n - 1; break;
          case RLX_PAD_MODE_CIRCULAR: c = ((c % n) + n) % n; break;
          default: constant = true; break;
          }
        }
      } else if (p.kind == 1) {
        c %= n;
      } else {
        c = (c - p.shift[d] + n) % n;
      }
      off += c * p.in_stride[d];
    }
    uint8_t *dst = (uint8_t *)p.dst + i * p.esz;
    const uint8_t *src = constant ? p.fill : (const uint8_t *)p.src + off * p.esz;
    for (int b = 0; b < p.esz; b++) dst[b] = src[b];
  }
}

extern "C" rlx_status rlx_cu_remap_run(rlx_cu_ctx *c, const rlx_cu_remap *p) {
  if (p->n == 0) return RLX_OK;
  remap_kernel<<<cu_blocks(p->n, 256), 256, 0, c->stream>>>(*p);
  return cu_launch_status("pad / tile / roll kernel");
}

/* ---- GatherBackward: one thread per table element, summing the dy slices gathered from it ---- */
__global__ void gather_bw_kernel(int t, const void *dy, const void *index, int it, int64_t outer, int64_t L,
                                 int64_t inner, int64_t n_idx, void *out, int *kerr) {
  int64_t total = outer * L * inner;
  bool ints = dt_is_int(t);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = e % inner, l = (e / inner) % L, o = e / (inner * L);
    double acc = 0;
    int64_t iacc = 0;
    for (int64_t j = 0; j < n_idx; j++) {
      int64_t v;
      if (!read_index(index, it, j, &v) || v < 0 || v >= L) {
        cu_raise(kerr, RLX_CU_KERR_INDEX);
        continue;
      }
      if (v != l) continue;
      int64_t src = (o * n_idx + j) * inner + i;
      if (ints) iacc = sat_add(iacc, ld_i(dy, t, src));
      else acc += ld_f(dy, t, src);
    }
    if (ints) st_i(out, t, e, iacc);
    else st_f(out, t, e, acc);
  }
}

extern "C" rlx_status rlx_cu_gather_backward(rlx_cu_ctx *c, int dtype, const void *dy, const void *index,
                                             int idx_dtype, int64_t outer, int64_t L, int64_t inner, int64_t n_idx,
                                             void *out) {
  int64_t total = outer * L * inner;
  if (total == 0) return RLX_OK;
  gather_bw_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(dtype, dy, index, idx_dtype, outer, L, inner, n_idx,
                                                                 out, c->kerr);
  return cu_launch_status("gather backward kernel");
}
