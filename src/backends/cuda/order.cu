/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Ordering and sequence kernels with the CPU reference's semantics (src/backends/cpu/ref/
 * reduce.c, random.c, shape.c): ArgMax / ArgMin (first extreme wins, NaN wins), CumProd /
 * CumMax, Sort / ArgSort / TopK (stable; NaN last for Sort, largest for TopK), the Philox
 * random tensors (the same values as the CPU for a key) and Trilu. */
#include "backends/cuda/dev.cuh"

/* ---- ArgMax / ArgMin: one thread per line ---- */
__global__ void argext_kernel(int want_max, int t, const void *x, int64_t outer, int64_t len, int64_t inner, int ot,
                              void *out) {
  int64_t lines = outer * inner;
  bool ints = dt_is_int(t);
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = l / inner, i = l % inner, base = o * len * inner + i, best = 0;
    if (ints) {
      int64_t bv = ld_i(x, t, base);
      for (int64_t k = 1; k < len; k++) {
        int64_t v = ld_i(x, t, base + k * inner);
        if (want_max ? v > bv : v < bv) {
          bv = v;
          best = k;
        }
      }
    } else {
      double bv = ld_f(x, t, base);
      for (int64_t k = 1; k < len && bv == bv; k++) {
        double v = ld_f(x, t, base + k * inner);
        if (v != v || (want_max ? v > bv : v < bv)) {
          bv = v;
          best = k;
        }
      }
    }
    st_i(out, ot, l, best);
  }
}

extern "C" rlx_status rlx_cu_argext(rlx_cu_ctx *c, int want_max, int dtype, const void *x, int64_t outer, int64_t len,
                                    int64_t inner, int out_dtype, void *out) {
  int64_t lines = outer * inner;
  if (lines == 0) return RLX_OK;
  argext_kernel<<<cu_blocks(lines, 128), 128, 0, c->stream>>>(want_max, dtype, x, outer, len, inner, out_dtype, out);
  return cu_launch_status("arg-extreme kernel");
}

/* ---- CumProd (1) / CumMax (2): one thread per line ---- */
__global__ void cum_kernel(int kind, int t, const void *x, int64_t outer, int64_t len, int64_t inner, int exclusive,
                           void *out) {
  int64_t lines = outer * inner;
  bool ints = dt_is_int(t), cx = dt_is_complex(t);
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = l / inner, i = l % inner;
    if (kind == 3) { /* suffix sums (CumsumBackward): plain double sums like the CPU reference */
      double s = 0;
      int64_t is = 0;
      for (int64_t k = len - 1; k >= 0; k--) {
        int64_t at = o * len * inner + k * inner + i;
        if (exclusive) {
          if (ints) st_i(out, t, at, is);
          else st_f(out, t, at, s);
        }
        if (ints) is = sat_add(is, ld_i(x, t, at));
        else s += ld_f(x, t, at);
        if (!exclusive) {
          if (ints) st_i(out, t, at, is);
          else st_f(out, t, at, s);
        }
      }
      continue;
    }
    double acc = kind == 1 ? 1.0 : -INFINITY, re = 1, im = 0;
    int64_t iacc = kind == 1 ? 1 : INT64_MIN;
    if (ints && kind == 2) {
      /* the dtype's minimum, as the CPU starts */
      switch (t) {
      case RLX_I8: iacc = INT8_MIN; break;
      case RLX_I16: iacc = INT16_MIN; break;
      case RLX_I32: iacc = INT32_MIN; break;
      case RLX_U8: case RLX_U32: case RLX_BOOL: iacc = 0; break;
      default: break;
      }
    }
    for (int64_t k = 0; k < len; k++) {
      int64_t at = o * len * inner + k * inner + i;
      for (int pass = 0; pass < 2; pass++) {
        if (pass == (exclusive ? 0 : 1)) {
          if (cx) st_c(out, t, at, re, im);
          else if (ints) st_i(out, t, at, iacc);
          else st_f(out, t, at, acc);
        } else {
          if (cx) {
            double a, b;
            ld_c(x, t, at, &a, &b);
            double r2 = re * a - im * b, i2 = re * b + im * a;
            re = r2;
            im = i2;
          } else if (ints) {
            int64_t v = ld_i(x, t, at);
            iacc = kind == 1 ? sat_mul(iacc, v) : (v > iacc ? v : iacc);
          } else {
            double v = ld_f(x, t, at);
            acc = kind == 1 ? acc * v : ((v != v || acc != acc) ? nan("") : (v > acc ? v : acc));
          }
        }
      }
    }
  }
}

extern "C" rlx_status rlx_cu_cumulative(rlx_cu_ctx *c, int kind, int dtype, const void *x, int64_t outer, int64_t len,
                                        int64_t inner, int exclusive, void *out) {
  int64_t lines = outer * inner;
  if (lines == 0 || len == 0) return RLX_OK;
  cum_kernel<<<cu_blocks(lines, 128), 128, 0, c->stream>>>(kind, dtype, x, outer, len, inner, exclusive, out);
  return cu_launch_status("cumulative kernel");
}

/* ---- Sort / ArgSort / TopK: one thread per line, a stable bottom-up merge sort of positions ---- */
struct sort_cmp {
  int t, desc, nan_first;
  bool ints;
  const void *x;
  int64_t base, inner;
  /* < 0: position a goes before b */
  __device__ int operator()(int64_t a, int64_t b) const {
    if (ints) {
      int64_t u = ld_i(x, t, base + a * inner), v = ld_i(x, t, base + b * inner);
      if (u == v) return 0;
      return (u < v) != (desc != 0) ? -1 : 1;
    }
    double u = ld_f(x, t, base + a * inner), v = ld_f(x, t, base + b * inner);
    bool un = u != u, vn = v != v;
    if (un || vn) return un == vn ? 0 : (un != (nan_first != 0) ? 1 : -1);
    if (u == v) return 0;
    return (u < v) != (desc != 0) ? -1 : 1;
  }
};

__device__ inline void copy_bytes(void *dst, int64_t di, const void *src, int64_t si, int esz) {
  const uint8_t *s = (const uint8_t *)src + si * esz;
  uint8_t *d = (uint8_t *)dst + di * esz;
  for (int b = 0; b < esz; b++) d[b] = s[b];
}

__device__ inline int dtype_bytes(int t) {
  switch (t) {
  case RLX_I8: case RLX_U8: case RLX_BOOL: return 1;
  case RLX_I16: case RLX_F16: case RLX_BF16: return 2;
  case RLX_I32: case RLX_U32: case RLX_F32: return 4;
  case RLX_C128: return 16;
  default: return 8;
  }
}

__global__ void sort_kernel(int mode, int desc, int t, const void *x, int64_t outer, int64_t len, int64_t inner,
                            int64_t k, int ot, void *out, int64_t *scratch) {
  int64_t lines = outer * inner;
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = l / inner, i = l % inner;
    sort_cmp cmp = {t, mode == 2 ? 1 : desc, mode == 2, dt_is_int(t), x, o * len * inner + i, inner};
    int64_t *a = scratch + l * 2 * len, *b = a + len;
    for (int64_t j = 0; j < len; j++) a[j] = j;
    for (int64_t w = 1; w < len; w *= 2) {
      for (int64_t lo = 0; lo < len; lo += 2 * w) {
        int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
        int64_t p = lo, q = mid, r = lo;
        while (p < mid && q < hi) b[r++] = cmp(a[q], a[p]) < 0 ? a[q++] : a[p++];
        while (p < mid) b[r++] = a[p++];
        while (q < hi) b[r++] = a[q++];
      }
      int64_t *tmp = a;
      a = b;
      b = tmp;
    }
    if (mode == 2) {
      for (int64_t j = 0; j < k; j++) st_i(out, ot, l * k + j, a[j]);
    } else {
      int esz = dtype_bytes(t);
      for (int64_t j = 0; j < len; j++) {
        int64_t at = cmp.base + j * inner;
        if (mode == 1) st_i(out, ot, at, a[j]);
        else copy_bytes(out, at, x, cmp.base + a[j] * inner, esz);
      }
    }
  }
}

extern "C" rlx_status rlx_cu_sort(rlx_cu_ctx *c, int mode, int desc, int dtype, const void *x, int64_t outer,
                                  int64_t len, int64_t inner, int64_t k, int out_dtype, void *out, void *scratch) {
  int64_t lines = outer * inner;
  if (lines == 0 || len == 0 || (mode == 2 && k == 0)) return RLX_OK;
  sort_kernel<<<cu_blocks(lines, 64), 64, 0, c->stream>>>(mode, desc, dtype, x, outer, len, inner, k, out_dtype, out,
                                                          (int64_t *)scratch);
  return cu_launch_status("sort kernel");
}

/* ---- Philox-4x32-10 (the CPU reference's generator, src/backends/cpu/ref/common.c) ---- */
__device__ inline void philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                              uint32_t out[4]) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}
__device__ inline double u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}
__device__ inline double u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

__global__ void rng_kernel(int normal, int t, uint64_t key, double a, double b, int64_t n, void *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    philox((uint32_t)i, (uint32_t)((uint64_t)i >> 32), 0, 0, (uint32_t)key, (uint32_t)(key >> 32), w);
    if (normal) {
      double u1 = u53(w[0], w[1]), u2 = u53(w[2], w[3]);
      double z = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586476925286766559 * u2);
      st_f(out, t, i, a + b * z);
    } else {
      double u = t == RLX_F64 ? u53(w[0], w[1]) : u24(w[0]);
      st_f(out, t, i, a + (b - a) * u);
      if (ld_f(out, t, i) >= b) { /* the interval is half-open: the largest value below b */
        if (t == RLX_F64) {
          long long bits = __double_as_longlong(b);
          ((double *)out)[i] = b == 0 ? -4.9406564584124654e-324 : __longlong_as_double(b > 0 ? bits - 1 : bits + 1);
        } else if (t == RLX_F32) {
          float f = (float)b;
          int bits = __float_as_int(f);
          ((float *)out)[i] = f == 0 ? -1.40129846e-45f : __int_as_float(f > 0 ? bits - 1 : bits + 1);
        } else {
          uint16_t h;
          st_f(&h, t, 0, b);
          bool neg = (h & 0x8000u) != 0;
          h = (h & 0x7fffu) == 0 ? (uint16_t)0x8001u : (uint16_t)(neg ? h + 1 : h - 1);
          ((uint16_t *)out)[i] = h;
        }
      }
    }
  }
}

extern "C" rlx_status rlx_cu_rng(rlx_cu_ctx *c, int normal, int dtype, uint64_t key, double a, double b, int64_t n,
                                 void *out) {
  if (n == 0) return RLX_OK;
  rng_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(normal, dtype, key, a, b, n, out);
  return cu_launch_status("random kernel");
}

/* ---- Trilu ---- */
__global__ void trilu_kernel(int upper, int64_t diag, const void *x, void *out, int64_t n, int64_t rows, int64_t cols,
                             int esz) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t col = i % cols, row = (i / cols) % rows;
    bool keep = upper ? col - row >= diag : col - row <= diag;
    uint8_t *d = (uint8_t *)out + i * esz;
    const uint8_t *s = (const uint8_t *)x + i * esz;
    for (int b = 0; b < esz; b++) d[b] = keep ? s[b] : 0;
  }
}

extern "C" rlx_status rlx_cu_trilu(rlx_cu_ctx *c, int upper, int64_t diag, const void *x, void *out, int64_t n,
                                   int64_t rows, int64_t cols, int esz) {
  if (n == 0) return RLX_OK;
  trilu_kernel<<<cu_blocks(n, 256), 256, 0, c->stream>>>(upper, diag, x, out, n, rows, cols, esz);
  return cu_launch_status("trilu kernel");
}
