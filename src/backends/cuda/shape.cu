/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Data movement: one strided-copy kernel (Transpose, Expand, Narrow, Concat pieces) and Gather. */
#include <string.h>

#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

/* I: the index type, int32_t when every element and offset fits (the per-axis divisions are
 * then 32-bit), else int64_t. */
/* (extents and strides are read from the parameter space at each use: copied into a local array
 * indexed by the run-time axis they would live in local memory) */
template <typename T, typename I> __global__ void strided_copy_kernel(rlx_cu_copy p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    I so = 0, doff = 0, rem = (I)i;
    for (int d = p.rank - 1; d >= 0; d--) {
      I n = (I)p.dims[d], c = rem % n;
      rem /= n;
      so += c * (I)p.src_stride[d];
      doff += c * (I)p.dst_stride[d];
    }
    ((T *)p.dst)[doff] = ((const T *)p.src)[so];
  }
}

/* A batched 2-D transpose: out[z][a][b] = src[z sz + a + b sb] (out dense), through 32 x 32
 * tiles in shared memory so both the reads and the writes are coalesced. */
template <typename T>
__global__ void transpose_tile_kernel(const T *src, T *dst, int64_t A, int64_t B, int64_t sz, int64_t sb) {
  __shared__ T tile[32][33];
  const int64_t z = blockIdx.z, a0 = (int64_t)blockIdx.y * 32, b0 = (int64_t)blockIdx.x * 32;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const T *s = src + z * sz;
#pragma unroll
  for (int k = 0; k < 32; k += 8) {
    int64_t a = a0 + tx, b = b0 + ty + k;
    if (a < A && b < B) tile[ty + k][tx] = s[a + b * sb];
  }
  __syncthreads();
  T *o = dst + z * A * B;
#pragma unroll
  for (int k = 0; k < 32; k += 8) {
    int64_t a = a0 + ty + k, b = b0 + tx;
    if (a < A && b < B) o[a * B + b] = tile[tx][ty + k];
  }
}

/* The copy with axes of extent 1 dropped and neighbouring axes that are contiguous in both src
 * and dst merged (the same elements, fewer index divisions). */
static void simplify_copy(const rlx_cu_copy *p, rlx_cu_copy *q) {
  *q = *p;
  int r = 0;
  for (int d = 0; d < p->rank; d++) {
    if (p->dims[d] == 1) continue;
    if (r > 0 && q->src_stride[r - 1] == p->src_stride[d] * p->dims[d] &&
        q->dst_stride[r - 1] == p->dst_stride[d] * p->dims[d]) {
      q->dims[r - 1] *= p->dims[d];
      q->src_stride[r - 1] = p->src_stride[d];
      q->dst_stride[r - 1] = p->dst_stride[d];
      continue;
    }
    q->dims[r] = p->dims[d];
    q->src_stride[r] = p->src_stride[d];
    q->dst_stride[r] = p->dst_stride[d];
    r++;
  }
  if (r == 0) { /* one element */
    q->dims[0] = 1;
    q->src_stride[0] = q->dst_stride[0] = 1;
    r = 1;
  }
  q->rank = r;
}

/* every element index and offset below 2^31 */
static bool copy_fits_i32(const rlx_cu_copy *q) {
  const int64_t lim = (int64_t)1 << 31;
  if (q->n >= lim) return false;
  int64_t so = 0, dof = 0;
  for (int d = 0; d < q->rank; d++) {
    so += (q->src_stride[d] < 0 ? -q->src_stride[d] : q->src_stride[d]) * (q->dims[d] - 1);
    dof += (q->dst_stride[d] < 0 ? -q->dst_stride[d] : q->dst_stride[d]) * (q->dims[d] - 1);
    if (so >= lim || dof >= lim) return false;
  }
  return true;
}

template <typename T> static void copy_launch(const rlx_cu_copy *q, cudaStream_t s) {
  /* the transpose of the last two axes (a leading batch axis allowed), dst dense */
  int r = q->rank;
  if ((r == 2 || r == 3) && q->src_stride[r - 2] == 1 && q->src_stride[r - 1] != 1 && q->dst_stride[r - 1] == 1 &&
      q->dst_stride[r - 2] == q->dims[r - 1] && (r == 2 || q->dst_stride[0] == q->dims[1] * q->dims[2]) &&
      (r == 2 || q->dims[0] <= 65535) && q->src_stride[r - 1] > 0 && (r == 2 || q->src_stride[0] >= 0)) {
    int64_t A = q->dims[r - 2], B = q->dims[r - 1], Z = r == 3 ? q->dims[0] : 1;
    if ((A + 31) / 32 <= 65535) {
      dim3 grid((unsigned)((B + 31) / 32), (unsigned)((A + 31) / 32), (unsigned)Z);
      transpose_tile_kernel<T><<<grid, dim3(32, 8), 0, s>>>((const T *)q->src, (T *)q->dst, A, B,
                                                            r == 3 ? q->src_stride[0] : 0, q->src_stride[r - 1]);
      return;
    }
  }
  unsigned blocks = cu_blocks(q->n, 256);
  if (copy_fits_i32(q))
    strided_copy_kernel<T, int32_t><<<blocks, 256, 0, s>>>(*q);
  else
    strided_copy_kernel<T, int64_t><<<blocks, 256, 0, s>>>(*q);
}

/* Rows of contiguous elements at strided row starts (a Narrow of the last axis, the q / k / v
 * slices of a fused projection): one word V of 8 or 16 bytes per thread, no index divisions (the
 * general kernel moved [8192, 768] bf16 out of [8192, 2304] at 0.43 TB/s on the H200). */
template <typename V>
__global__ void copy_rows_kernel(const V *src, V *dst, int64_t rows, int64_t W, int64_t ss, int64_t ds) {
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= W) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) dst[r * ds + c] = src[r * ss + c];
}

/* the simplified copy as rows of contiguous elements, every row start a multiple of `word` bytes */
static bool copy_rows_fit(const rlx_cu_copy *q, int word) {
  if (q->rank != 2 || q->src_stride[1] != 1 || q->dst_stride[1] != 1 || q->src_stride[0] < 0 || q->dst_stride[0] < 0)
    return false;
  int64_t e = q->esz;
  return (q->dims[1] * e) % word == 0 && (q->src_stride[0] * e) % word == 0 && (q->dst_stride[0] * e) % word == 0 &&
         (uintptr_t)q->src % word == 0 && (uintptr_t)q->dst % word == 0;
}

template <typename V> static void copy_rows_launch(const rlx_cu_copy *q, cudaStream_t s) {
  int64_t w = (int64_t)sizeof(V) / q->esz, W = q->dims[1] / w, rows = q->dims[0];
  dim3 grid((unsigned)((W + 255) / 256), (unsigned)(rows < 65535 ? rows : 65535));
  copy_rows_kernel<V><<<grid, 256, 0, s>>>((const V *)q->src, (V *)q->dst, rows, W, q->src_stride[0] / w,
                                           q->dst_stride[0] / w);
}

/* One element broadcast over a dense destination (an Expand of a scalar: the loss gradient
 * of sum(x) is one): 16-byte stores of the element repeated (the strided copy wrote the 25 MB
 * of the f32 GPT-2 block's at 1.2 TB/s on the H200). */
template <typename T> __global__ void fill_one_kernel(const T *src, uint4 *dst, int64_t n16) {
  T v = *src;
  T rep[16 / sizeof(T)];
#pragma unroll
  for (unsigned k = 0; k < 16 / sizeof(T); k++) rep[k] = v;
  uint4 u;
  memcpy(&u, rep, 16);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n16; i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = u;
}
template <typename T> static void fill_one_launch(const rlx_cu_copy *q, cudaStream_t s) {
  int64_t n16 = q->n * (int64_t)sizeof(T) / 16;
  int64_t blocks = (n16 + 255) / 256;
  if (blocks > 132 * 16) blocks = 132 * 16;
  fill_one_kernel<T><<<(unsigned)(blocks ? blocks : 1), 256, 0, s>>>((const T *)q->src, (uint4 *)q->dst, n16);
}

extern "C" rlx_status rlx_cu_strided_copy(rlx_cu_ctx *c, const rlx_cu_copy *p) {
  if (p->n == 0) return RLX_OK;
  rlx_cu_copy q;
  simplify_copy(p, &q);
  if (q.rank == 1 && q.src_stride[0] == 0 && q.dst_stride[0] == 1 && ((uintptr_t)q.dst & 15) == 0 &&
      (q.n * q.esz) % 16 == 0 && ((uintptr_t)q.src & (uintptr_t)(q.esz - 1)) == 0) {
    switch (q.esz) {
    case 2: fill_one_launch<uint16_t>(&q, c->stream); return cu_launch_status("broadcast fill kernel");
    case 4: fill_one_launch<uint32_t>(&q, c->stream); return cu_launch_status("broadcast fill kernel");
    case 8: fill_one_launch<uint64_t>(&q, c->stream); return cu_launch_status("broadcast fill kernel");
    default: break;
    }
  }
  if (copy_rows_fit(&q, 16)) {
    copy_rows_launch<uint4>(&q, c->stream);
    return cu_launch_status("row copy kernel");
  }
  if (copy_rows_fit(&q, 8)) {
    copy_rows_launch<uint2>(&q, c->stream);
    return cu_launch_status("row copy kernel");
  }
  switch (p->esz) {
  case 1: copy_launch<uint8_t>(&q, c->stream); break;
  case 2: copy_launch<uint16_t>(&q, c->stream); break;
  case 4: copy_launch<uint32_t>(&q, c->stream); break;
  case 8: copy_launch<uint64_t>(&q, c->stream); break;
  case 16: copy_launch<ulonglong2>(&q, c->stream); break;
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

/* ---- Pad / Tile / Roll ----
 * T: the element moved as one word (esz 1, 2, 4, 8 or 16 bytes); I: the index type, int32_t when
 * every index fits (32-bit divisions), else int64_t. */
template <typename T, typename I> __global__ void remap_kernel(rlx_cu_remap p) {
  T fill;
  memcpy(&fill, p.fill, sizeof fill);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.n; i += (int64_t)gridDim.x * blockDim.x) {
    I rem = (I)i, off = 0;
    bool constant = false;
    for (int d = p.rank - 1; d >= 0; d--) {
      I od = (I)p.out_dims[d], c = rem % od, n = (I)p.in_dims[d];
      rem /= od;
      if (p.kind == 0) {
        c -= (I)p.shift[d];
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
        c = (c - (I)p.shift[d] + n) % n;
      }
      off += c * (I)p.in_stride[d];
    }
    ((T *)p.dst)[i] = constant ? fill : ((const T *)p.src)[off];
  }
}
/* fallback for other element sizes: bytes */
__global__ void remap_bytes_kernel(rlx_cu_remap p) {
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

template <typename T> static void remap_launch(const rlx_cu_remap *p, unsigned blocks, cudaStream_t s) {
  /* 32-bit indices: the output count, every input offset and every shifted coordinate (|c - shift|
   * <= out_dim + |shift|, reflect's 2 (n - 1) - c) below 2^30 */
  const int64_t lim = (int64_t)1 << 30;
  bool small = p->n < lim;
  int64_t span = 0;
  for (int d = 0; small && d < p->rank; d++) {
    int64_t sh = p->shift[d] < 0 ? -p->shift[d] : p->shift[d];
    span += p->in_stride[d] * (p->in_dims[d] > 0 ? p->in_dims[d] - 1 : 0);
    small = p->out_dims[d] + sh < lim && 2 * p->in_dims[d] + p->out_dims[d] < lim && span < lim;
  }
  if (small)
    remap_kernel<T, int32_t><<<blocks, 256, 0, s>>>(*p);
  else
    remap_kernel<T, int64_t><<<blocks, 256, 0, s>>>(*p);
}

/* Constant Pad of the last axis only (the gradient of a Narrow of the last axis, e.g. the q / k / v
 * slices of a fused projection): rows of W output elements, 4 elements of esz bytes as one word
 * V per thread, no index divisions (the general kernel above moved [8192, 768] -> [8192, 2304]
 * bf16 in 100 us on the H200, 8x the bytes' time). */
template <typename V> __global__ void pad_last_kernel(rlx_cu_remap p, int64_t rows, int64_t W4, int64_t N4, int64_t B4) {
  V fill;
  memcpy(&fill, p.fill, sizeof fill); /* the element repeated 4 times */
  const V *src = (const V *)p.src;
  V *dst = (V *)p.dst;
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= W4) return;
  const int64_t k = c - B4;
  const bool inside = k >= 0 && k < N4;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) dst[r * W4 + c] = inside ? src[r * N4 + k] : fill;
}

static bool pad_last_fits(const rlx_cu_remap *p) {
  if (p->kind != 0 || p->mode != RLX_PAD_MODE_CONSTANT || p->rank < 1 || (p->esz != 2 && p->esz != 4)) return false;
  int L = p->rank - 1;
  for (int d = 0; d < L; d++)
    if (p->shift[d] != 0 || p->out_dims[d] != p->in_dims[d]) return false;
  int64_t W = p->out_dims[L], N = p->in_dims[L], B = p->shift[L], align = 4 * p->esz;
  if (W % 4 || N % 4 || B % 4 || B < 0 || B + N > W || p->in_stride[L] != 1) return false;
  if (((uintptr_t)p->src % align) || ((uintptr_t)p->dst % align)) return false;
  for (int64_t d = L - 1, st = N; d >= 0; st *= p->in_dims[d], d--)
    if (p->in_stride[d] != st) return false; /* a dense operand */
  return true;
}

extern "C" rlx_status rlx_cu_remap_run(rlx_cu_ctx *c, const rlx_cu_remap *p) {
  if (p->n == 0) return RLX_OK;
  if (pad_last_fits(p)) {
    int L = p->rank - 1;
    int64_t W4 = p->out_dims[L] / 4, rows = p->n / p->out_dims[L];
    dim3 grid((unsigned)((W4 + 255) / 256), (unsigned)(rows < 65535 ? rows : 65535));
    rlx_cu_remap q = *p;
    for (int k = 1; k < 4; k++) memcpy(q.fill + k * p->esz, p->fill, (size_t)p->esz);
    if (p->esz == 2)
      pad_last_kernel<uint2><<<grid, 256, 0, c->stream>>>(q, rows, W4, p->in_dims[L] / 4, p->shift[L] / 4);
    else
      pad_last_kernel<uint4><<<grid, 256, 0, c->stream>>>(q, rows, W4, p->in_dims[L] / 4, p->shift[L] / 4);
    return cu_launch_status("pad kernel (last axis)");
  }
  unsigned blocks = cu_blocks(p->n, 256);
  switch (p->esz) {
  case 1: remap_launch<uint8_t>(p, blocks, c->stream); break;
  case 2: remap_launch<uint16_t>(p, blocks, c->stream); break;
  case 4: remap_launch<uint32_t>(p, blocks, c->stream); break;
  case 8: remap_launch<uint64_t>(p, blocks, c->stream); break;
  default: remap_bytes_kernel<<<blocks, 256, 0, c->stream>>>(*p); break;
  }
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
      if (ints)
        iacc = sat_add(iacc, ld_i(dy, t, src));
      else
        acc += ld_f(dy, t, src);
    }
    if (ints)
      st_i(out, t, e, iacc);
    else
      st_f(out, t, e, acc);
  }
}

extern "C" rlx_status rlx_cu_gather_backward(rlx_cu_ctx *c, int dtype, const void *dy, const void *index, int idx_dtype,
                                             int64_t outer, int64_t L, int64_t inner, int64_t n_idx, void *out) {
  int64_t total = outer * L * inner;
  if (total == 0) return RLX_OK;
  gather_bw_kernel<<<cu_blocks(total, 256), 256, 0, c->stream>>>(dtype, dy, index, idx_dtype, outer, L, inner, n_idx,
                                                                 out, c->kerr);
  return cu_launch_status("gather backward kernel");
}
