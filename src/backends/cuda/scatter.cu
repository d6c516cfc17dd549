/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ScatterAdd, ScatterElements, GatherElements, ScatterNd and GatherNd. Scatter accumulates in a scratch buffer in the
 * CPU reference's domains (double for floats, double pairs for complex, int64 for integers):
 * Add through atomics (float sums are exact up to the order of double additions), None through
 * an atomic "last update wins" index, Mul / Max / Min by a scan over the updates per output
 * element (their order-dependence stays exactly the CPU's). */
#include "backends/cuda/dev.cuh"
#include "rlx/ops.h"

__device__ inline bool read_idx(const void *p, int t, int64_t i, int64_t *v) {
  if (dt_is_int(t)) {
    *v = ld_i(p, t, i);
    return true;
  }
  double d = ld_f(p, t, i);
  if (!(d == floor(d)) || fabs(d) >= 9.2e18) return false;
  *v = (int64_t)d;
  return true;
}

/* target offset of update p in the output; false (and the flag raised) when out of range */
__device__ inline bool target_of(const rlx_cu_scatter &s, int64_t p, int64_t *off, int *kerr) {
  if (s.mode == 1) {
    int64_t j = p % s.inner, i = (p / s.inner) % s.U, b = p / (s.inner * s.U), v;
    if (!read_idx(s.index, s.idx_dtype, i, &v) || v < 0 || v >= s.axis_len) {
      cu_raise(kerr, RLX_CU_KERR_INDEX);
      return false;
    }
    *off = (b * s.axis_len + v) * s.inner + j;
    return true;
  }
  if (s.mode == 2) {
    /* ScatterNd / GatherNd: update p = (tuple j, element e of the slice); tuples of rank index
     * values address data axes with extents idx_dims and strides data_stride, after the batch */
    int64_t j = p / s.inner, o = (j / s.U) * s.outer + p % s.inner, v;
    for (int c = 0; c < s.rank; c++) {
      if (!read_idx(s.index, s.idx_dtype, j * s.rank + c, &v)) {
        cu_raise(kerr, RLX_CU_KERR_INDEX);
        return false;
      }
      if (v < 0) v += s.idx_dims[c];
      if (v < 0 || v >= s.idx_dims[c]) {
        cu_raise(kerr, RLX_CU_KERR_INDEX);
        return false;
      }
      o += v * s.data_stride[c];
    }
    *off = o;
    return true;
  }
  int64_t rem = p, o = 0, v;
  if (!read_idx(s.index, s.idx_dtype, p, &v)) {
    cu_raise(kerr, RLX_CU_KERR_INDEX);
    return false;
  }
  if (s.wrap && v < 0) v += s.axis_len;
  if (v < 0 || v >= s.axis_len) {
    cu_raise(kerr, RLX_CU_KERR_INDEX);
    return false;
  }
  for (int d = s.rank - 1; d >= 0; d--) {
    int64_t c = rem % s.idx_dims[d];
    rem /= s.idx_dims[d];
    o += (d == s.axis ? v : c) * s.data_stride[d];
  }
  *off = o;
  return true;
}

struct acc3 {
  double re, im;
  long long i;
};

__global__ void sc_init(rlx_cu_scatter s) {
  acc3 *a = (acc3 *)s.scratch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < s.n_out; e += (int64_t)gridDim.x * blockDim.x) {
    acc3 v = {0, 0, -1};
    if (s.data) {
      if (dt_is_int(s.dtype)) v.re = 0, v.i = ld_i(s.data, s.dtype, e);
      else ld_c(s.data, s.dtype, e, &v.re, &v.im);
    } else if (dt_is_int(s.dtype)) {
      v.i = 0;
    }
    a[e] = v;
  }
}

/* winner index per output lives in a separate int64 array after the acc3 array */
__global__ void sc_winner_init(long long *w, int64_t n) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) w[e] = -1;
}

__global__ void sc_add(rlx_cu_scatter s, int *kerr) {
  acc3 *a = (acc3 *)s.scratch;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < s.n_updates; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t o;
    if (!target_of(s, p, &o, kerr)) continue;
    if (dt_is_int(s.dtype)) {
      atomicAdd((unsigned long long *)&a[o].i, (unsigned long long)ld_i(s.updates, s.dtype, p));
    } else {
      double re, im;
      ld_c(s.updates, s.dtype, p, &re, &im);
      atomicAdd(&a[o].re, re);
      if (dt_is_complex(s.dtype)) atomicAdd(&a[o].im, im);
    }
  }
}

__global__ void sc_none_pick(rlx_cu_scatter s, long long *win, int *kerr) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < s.n_updates; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t o;
    if (target_of(s, p, &o, kerr)) atomicMax(&win[o], (long long)p);
  }
}
__global__ void sc_none_write(rlx_cu_scatter s, const long long *win, int *kerr) {
  acc3 *a = (acc3 *)s.scratch;
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < s.n_updates; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t o;
    if (!target_of(s, p, &o, kerr) || win[o] != p) continue;
    if (dt_is_int(s.dtype)) a[o].i = ld_i(s.updates, s.dtype, p);
    else ld_c(s.updates, s.dtype, p, &a[o].re, &a[o].im);
  }
}

/* Mul / Max / Min: each output element folds the updates aimed at it, in update order. */
__global__ void sc_scan(rlx_cu_scatter s, int *kerr) {
  acc3 *a = (acc3 *)s.scratch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < s.n_out; e += (int64_t)gridDim.x * blockDim.x) {
    acc3 v = a[e];
    for (int64_t p = 0; p < s.n_updates; p++) {
      int64_t o;
      if (!target_of(s, p, &o, kerr) || o != e) continue;
      if (dt_is_int(s.dtype)) {
        int64_t u = ld_i(s.updates, s.dtype, p);
        v.i = s.red == RLX_SCATTER_REDUCTION_MUL ? sat_mul(v.i, u) : s.red == RLX_SCATTER_REDUCTION_MAX ? (u > v.i ? u : v.i) : (u < v.i ? u : v.i);
      } else if (dt_is_complex(s.dtype)) {
        double ur, ui;
        ld_c(s.updates, s.dtype, p, &ur, &ui);
        double r = v.re * ur - v.im * ui, q = v.re * ui + v.im * ur;
        v.re = r;
        v.im = q;
      } else {
        double u = ld_f(s.updates, s.dtype, p);
        if (s.red == RLX_SCATTER_REDUCTION_MUL) v.re *= u;
        else if (s.red == RLX_SCATTER_REDUCTION_MAX) v.re = (u != u || v.re != v.re) ? nan("") : (u > v.re ? u : v.re);
        else v.re = (u != u || v.re != v.re) ? nan("") : (u < v.re ? u : v.re);
      }
    }
    a[e] = v;
  }
}

__global__ void sc_store(rlx_cu_scatter s) {
  const acc3 *a = (const acc3 *)s.scratch;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < s.n_out; e += (int64_t)gridDim.x * blockDim.x) {
    if (dt_is_int(s.dtype)) st_i(s.out, s.dtype, e, a[e].i);
    else if (dt_is_complex(s.dtype)) st_c(s.out, s.dtype, e, a[e].re, a[e].im);
    else st_f(s.out, s.dtype, e, a[e].re);
  }
}

extern "C" rlx_status rlx_cu_scatter_run(rlx_cu_ctx *c, const rlx_cu_scatter *p) {
  if (p->n_out == 0) return RLX_OK;
  const int th = 256;
  unsigned bo = cu_blocks(p->n_out, th), bu = cu_blocks(p->n_updates, th);
  long long *win = (long long *)((acc3 *)p->scratch + p->n_out);
  sc_init<<<bo, th, 0, c->stream>>>(*p);
  if (p->n_updates > 0) {
    switch (p->red) {
    case RLX_SCATTER_REDUCTION_ADD: sc_add<<<bu, th, 0, c->stream>>>(*p, c->kerr); break;
    case RLX_SCATTER_REDUCTION_NONE:
      sc_winner_init<<<bo, th, 0, c->stream>>>(win, p->n_out);
      sc_none_pick<<<bu, th, 0, c->stream>>>(*p, win, c->kerr);
      sc_none_write<<<bu, th, 0, c->stream>>>(*p, win, c->kerr);
      break;
    default: sc_scan<<<bo, th, 0, c->stream>>>(*p, c->kerr); break;
    }
  }
  sc_store<<<bo, th, 0, c->stream>>>(*p);
  return cu_launch_status("scatter kernels");
}

__global__ void gather_el_kernel(rlx_cu_scatter s, int esz, int *kerr) {
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < s.n_updates; p += (int64_t)gridDim.x * blockDim.x) {
    int64_t o;
    if (!target_of(s, p, &o, kerr)) o = -1;
    const uint8_t *src = (const uint8_t *)s.data + o * esz;
    uint8_t *dst = (uint8_t *)s.out + p * esz;
    for (int b = 0; b < esz; b++) dst[b] = o < 0 ? 0 : src[b];
  }
}

extern "C" rlx_status rlx_cu_gather_elements(rlx_cu_ctx *c, const rlx_cu_scatter *p, int esz) {
  if (p->n_updates == 0) return RLX_OK;
  const int th = 256;
  gather_el_kernel<<<cu_blocks(p->n_updates, th), th, 0, c->stream>>>(*p, esz, c->kerr);
  return cu_launch_status("gather-elements kernel");
}
