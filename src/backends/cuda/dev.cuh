/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Device helpers shared by the CUDA kernels: element loads and stores for every RLX dtype with
 * the CPU reference's conversion rules (float -> int truncates and saturates, NaN -> 0; double
 * -> f16 / bf16 rounds once, via round-to-odd f32; int -> int saturates), a kernel-side error
 * flag, and launch checking. */
#ifndef RLX_CUDA_DEV_CUH
#define RLX_CUDA_DEV_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "backends/cuda/cu.h"
#include "rlx/types.h"

/* Codes a kernel may raise (first one wins; read and cleared by rlx_cu_sync). */
enum {
  RLX_CU_KERR_NONE = 0,
  RLX_CU_KERR_DIV_ZERO = 1,
  RLX_CU_KERR_POW_ZERO_NEG = 2,
  RLX_CU_KERR_INDEX = 3,
  RLX_CU_KERR_SINGULAR = 4,
  RLX_CU_KERR_NOCONV = 5 /* an SVD or eigensolver did not converge (cuSOLVER info > 0) */
};
__device__ inline void cu_raise(int *flag, int code) { atomicCAS(flag, 0, code); }

/* Saturating int64 arithmetic (device code has no __builtin_*_overflow). */
__device__ inline int64_t sat_add(int64_t a, int64_t b) {
  uint64_t r = (uint64_t)a + (uint64_t)b;
  if (((a ^ (int64_t)r) & (b ^ (int64_t)r)) < 0) return b > 0 ? INT64_MAX : INT64_MIN;
  return (int64_t)r;
}
__device__ inline int64_t sat_sub(int64_t a, int64_t b) {
  uint64_t r = (uint64_t)a - (uint64_t)b;
  if (((a ^ b) & (a ^ (int64_t)r)) < 0) return b < 0 ? INT64_MAX : INT64_MIN;
  return (int64_t)r;
}
/* false when a * b overflows int64 */
__device__ inline bool mul_ok(int64_t a, int64_t b, int64_t *r) {
  if (a == 0 || b == 0) { *r = 0; return true; }
  int64_t hi = __mul64hi(a, b), lo = (int64_t)((uint64_t)a * (uint64_t)b);
  if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) { *r = lo; return true; }
  return false;
}
__device__ inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (!mul_ok(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

struct rlx_cu_ctx {
  int device;
  cudaStream_t stream;
  int own_stream;
  int precision;
  int fp32_pedantic; /* RLX_CUDA_FP32_PEDANTIC=1: fp32 GEMMs with CUBLAS_COMPUTE_32F_PEDANTIC */
  void *blas; /* cublasHandle_t */
  void *blas_lt; /* cublasLtHandle_t (gemm_lt.cu) */
  void *lt_ws;   /* cuBLASLt's workspace (RLX_CU_LT_WORKSPACE bytes), allocated with the first plan */
  void *dnn;     /* cudnnHandle_t, made with the first cuDNN plan (dnn.cu) */
  int *kerr;  /* device flag: first kernel-detected error code (RLX_CU_KERR_*) */
  void *scratch; /* kernels' temporary device memory (split reductions), grown on demand */
  size_t scratch_bytes;
  cudaStream_t capture;  /* the stream a CUDA graph is captured on (rlx_cu_capture_begin) */
  cudaStream_t saved;    /* stream while capturing */
  char name[128];
};

/* Launch check: the last launch error as a status. */
rlx_status cu_launch_status(const char *what);
/* The context's temporary device memory, grown to at least need bytes (reduce.cu); valid until
 * the next call (kernels on the one stream use it in turn). */
rlx_status cu_scratch(rlx_cu_ctx *c, size_t need, void **out);

__device__ inline bool dt_is_int(int t) {
  return t == RLX_I8 || t == RLX_I16 || t == RLX_I32 || t == RLX_I64 || t == RLX_U8 || t == RLX_U32 || t == RLX_BOOL;
}
__device__ inline bool dt_is_complex(int t) { return t == RLX_C64 || t == RLX_C128; }

__device__ inline double ld_f(const void *p, int t, int64_t i) {
  switch (t) {
  case RLX_F32: return ((const float *)p)[i];
  case RLX_F64: return ((const double *)p)[i];
  case RLX_F16: return (double)__half2float(((const __half *)p)[i]);
  case RLX_BF16: return (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
  case RLX_I8: return ((const int8_t *)p)[i];
  case RLX_I16: return ((const int16_t *)p)[i];
  case RLX_I32: return ((const int32_t *)p)[i];
  case RLX_I64: return (double)((const int64_t *)p)[i];
  case RLX_U8: return ((const uint8_t *)p)[i];
  case RLX_U32: return ((const uint32_t *)p)[i];
  case RLX_BOOL: return ((const uint8_t *)p)[i] != 0;
  case RLX_C64: return ((const float *)p)[2 * i];
  case RLX_C128: return ((const double *)p)[2 * i];
  default: return 0;
  }
}

__device__ inline int64_t ld_i(const void *p, int t, int64_t i) {
  switch (t) {
  case RLX_I8: return ((const int8_t *)p)[i];
  case RLX_I16: return ((const int16_t *)p)[i];
  case RLX_I32: return ((const int32_t *)p)[i];
  case RLX_I64: return ((const int64_t *)p)[i];
  case RLX_U8: return ((const uint8_t *)p)[i];
  case RLX_U32: return ((const uint32_t *)p)[i];
  case RLX_BOOL: return ((const uint8_t *)p)[i] != 0;
  default: {
    double v = ld_f(p, t, i);
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
  }
  }
}

__device__ inline void ld_c(const void *p, int t, int64_t i, double *re, double *im) {
  if (t == RLX_C64) { *re = ((const float *)p)[2 * i]; *im = ((const float *)p)[2 * i + 1]; }
  else if (t == RLX_C128) { *re = ((const double *)p)[2 * i]; *im = ((const double *)p)[2 * i + 1]; }
  else { *re = ld_f(p, t, i); *im = 0; }
}

/* double -> float rounded to odd: a second rounding to f16 / bf16 is then correct. */
__device__ inline float round_odd_f32(double v) {
  float f = (float)v;
  if (v != v || isinf(f) || (double)f == v) return f;
  unsigned bits = __float_as_uint(f);
  if (bits & 1u) return f;
  /* truncate toward zero, then set the sticky bit */
  float t = __double2float_rz(v);
  return __uint_as_float(__float_as_uint(t) | 1u);
}

__device__ inline int64_t sat_range(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }
__device__ inline int64_t sat_f(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

/* store a real value (floats round, ints truncate + saturate, bool = v != 0, complex imag 0) */
__device__ inline void st_f(void *p, int t, int64_t i, double v) {
  switch (t) {
  case RLX_F32: ((float *)p)[i] = (float)v; break;
  case RLX_F64: ((double *)p)[i] = v; break;
  case RLX_F16: ((__half *)p)[i] = __float2half_rn(round_odd_f32(v)); break;
  case RLX_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(round_odd_f32(v)); break;
  case RLX_I8: ((int8_t *)p)[i] = (int8_t)sat_f(v, INT8_MIN, INT8_MAX); break;
  case RLX_I16: ((int16_t *)p)[i] = (int16_t)sat_f(v, INT16_MIN, INT16_MAX); break;
  case RLX_I32: ((int32_t *)p)[i] = (int32_t)sat_f(v, INT32_MIN, INT32_MAX); break;
  case RLX_I64:
    ((int64_t *)p)[i] = v != v ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
    break;
  case RLX_U8: ((uint8_t *)p)[i] = (uint8_t)sat_f(v, 0, UINT8_MAX); break;
  case RLX_U32: ((uint32_t *)p)[i] = (uint32_t)sat_f(v, 0, UINT32_MAX); break;
  case RLX_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case RLX_C64: ((float *)p)[2 * i] = (float)v; ((float *)p)[2 * i + 1] = 0; break;
  case RLX_C128: ((double *)p)[2 * i] = v; ((double *)p)[2 * i + 1] = 0; break;
  default: break;
  }
}

/* |v| rounded to `bits` significant bits, nearest even (int -> f16 / bf16 exactly like the CPU) */
__device__ inline double round_int_bits(int64_t v, int bits) {
  uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  int width = m ? 64 - __clzll((long long)m) : 0;
  int drop = width > bits ? width - bits : 0;
  if (drop > 0) {
    uint64_t rest = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
    m >>= drop;
    if (rest > half || (rest == half && (m & 1u))) m++;
  }
  double r = ldexp((double)m, drop);
  return v < 0 ? -r : r;
}

/* store an integer value (ints saturate, floats convert) */
__device__ inline void st_i(void *p, int t, int64_t i, int64_t v) {
  switch (t) {
  case RLX_I8: ((int8_t *)p)[i] = (int8_t)sat_range(v, INT8_MIN, INT8_MAX); break;
  case RLX_I16: ((int16_t *)p)[i] = (int16_t)sat_range(v, INT16_MIN, INT16_MAX); break;
  case RLX_I32: ((int32_t *)p)[i] = (int32_t)sat_range(v, INT32_MIN, INT32_MAX); break;
  case RLX_I64: ((int64_t *)p)[i] = v; break;
  case RLX_U8: ((uint8_t *)p)[i] = (uint8_t)sat_range(v, 0, UINT8_MAX); break;
  case RLX_U32: ((uint32_t *)p)[i] = (uint32_t)sat_range(v, 0, (int64_t)UINT32_MAX); break;
  case RLX_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case RLX_F32: ((float *)p)[i] = (float)v; break;
  case RLX_F64: ((double *)p)[i] = (double)v; break;
  case RLX_F16: ((__half *)p)[i] = __float2half_rn((float)round_int_bits(v, 11)); break;
  case RLX_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)round_int_bits(v, 8)); break;
  case RLX_C64: ((float *)p)[2 * i] = (float)v; ((float *)p)[2 * i + 1] = 0; break;
  case RLX_C128: ((double *)p)[2 * i] = (double)v; ((double *)p)[2 * i + 1] = 0; break;
  default: break;
  }
}

__device__ inline void st_c(void *p, int t, int64_t i, double re, double im) {
  if (t == RLX_C64) { ((float *)p)[2 * i] = (float)re; ((float *)p)[2 * i + 1] = (float)im; }
  else if (t == RLX_C128) { ((double *)p)[2 * i] = re; ((double *)p)[2 * i + 1] = im; }
  else st_f(p, t, i, re);
}

/* Typed element access for kernels specialised on the element type (float, double, bf16, f16):
 * the same values as ld_f / st_f (16-bit stores round once, via round-to-odd f32). */
__device__ inline double ld_t(float v) { return v; }
__device__ inline double ld_t(double v) { return v; }
__device__ inline double ld_t(__nv_bfloat16 v) { return (double)__bfloat162float(v); }
__device__ inline double ld_t(__half v) { return (double)__half2float(v); }
template <typename T> __device__ inline T st_t(double v);
template <> __device__ inline float st_t<float>(double v) { return (float)v; }
template <> __device__ inline double st_t<double>(double v) { return v; }
template <> __device__ inline __nv_bfloat16 st_t<__nv_bfloat16>(double v) {
  return __float2bfloat16_rn(round_odd_f32(v));
}
template <> __device__ inline __half st_t<__half>(double v) { return __float2half_rn(round_odd_f32(v)); }
/* float <-> f32 / bf16 / f16 (round to nearest even): the 16-bit kernels that compute in float */
__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ inline T from_f(float v);
template <> __device__ inline float from_f<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ inline __half from_f<__half>(float v) { return __float2half_rn(v); }
/* The vector of 4 elements of a float dtype for one access (8 bytes for bf16 / f16, 16 for f32):
 * the typed activation kernels' groups. */
template <int BYTES> struct vec_bytes;
template <> struct vec_bytes<8> {
  using type = uint2;
};
template <> struct vec_bytes<16> {
  using type = uint4;
};
template <typename T> using vec4_of = typename vec_bytes<4 * sizeof(T)>::type;
/* two neighbouring elements of f32 / bf16 / f16 (p aligned to two elements): one 8- or 4-byte
 * access */
template <typename T> __device__ inline void ld2_t(const T *p, T &a, T &b) {
  if constexpr (sizeof(T) == 4) {
    float2 v = *(const float2 *)p;
    a = v.x, b = v.y;
  } else {
    uint32_t u = *(const uint32_t *)p;
    T h[2];
    memcpy(h, &u, 4);
    a = h[0], b = h[1];
  }
}
template <typename T> __device__ inline void st2_t(T *p, T a, T b) {
  if constexpr (sizeof(T) == 4) {
    *(float2 *)p = make_float2(a, b);
  } else {
    T h[2] = {a, b};
    uint32_t u;
    memcpy(&u, h, 4);
    *(uint32_t *)p = u;
  }
}

/* four consecutive elements of f32 / bf16 / f16 / f64 (p aligned to four elements): one 8- or
 * 16-byte access (two for f64) */
template <typename T> __device__ inline void ld4_t(const T *p, T (&v)[4]) {
  if constexpr (sizeof(T) == 8) {
    const double2 a = *(const double2 *)p, b = *(const double2 *)(p + 2);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
  } else {
    using W = vec4_of<T>;
    const W w = *(const W *)p;
    memcpy(v, &w, sizeof w);
  }
}
template <typename T> __device__ inline void st4_t(T *p, const T (&v)[4]) {
  if constexpr (sizeof(T) == 8) {
    *(double2 *)p = make_double2(v[0], v[1]);
    *(double2 *)(p + 2) = make_double2(v[2], v[3]);
  } else {
    using W = vec4_of<T>;
    W w;
    memcpy(&w, v, sizeof w);
    *(W *)p = w;
  }
}
/* the same as doubles: the two-column reduction kernels */
template <typename T> __device__ inline void ld2_d(const T *p, double &a, double &b) {
  T x, y;
  ld2_t<T>(p, x, y);
  a = to_f(x), b = to_f(y);
}
template <typename T> __device__ inline void ld4_d(const T *p, double *v) {
  T t[4];
  ld4_t<T>(p, t);
#pragma unroll
  for (int k = 0; k < 4; k++) v[k] = ld_t(t[k]);
}
/* sum of a double over the 32 lanes of a warp (every lane gets it) */
__device__ inline double warp_sum_d(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* grid-stride loop helpers */
static inline unsigned cu_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 16) b = 65535LL * 16;
  return (unsigned)b;
}

/* Sum over the thread block: every thread passes its part and every thread gets the total
 * (shuffles within each warp, then the warps' sums added in warp order, so the result does not
 * depend on timing). sh: 32 doubles of shared memory; calls may follow each other with the same
 * sh. */
__device__ inline double cu_block_sum(double v, double *sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  double r = 0;
  for (int k = 0; k < (int)(blockDim.x + 31) / 32; k++) r += sh[k];
  return r;
}

#endif
