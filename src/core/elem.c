/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "core/elem.h"

#include <math.h>
#include <string.h>

float rlx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0)
      bits = sign;
    else { /* subnormal: value = mant * 2^-24 */
      float v = (float)mant * 0x1p-24f;
      memcpy(&bits, &v, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t rlx_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (ax < 0x38800000u) {                                  /* below the smallest normal half: subnormal or zero */
    float a;
    memcpy(&a, &ax, 4);
    float q = a * 0x1p24f;   /* in units of 2^-24 */
    float r = nearbyintf(q); /* default rounding mode: to nearest even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t exp = ((ax >> 23) - 112) << 10, mant = (ax >> 13) & 0x3ff;
  uint32_t rest = ax & 0x1fff, half = exp | mant;
  if (rest > 0x1000 || (rest == 0x1000 && (mant & 1))) half++;
  return (uint16_t)(sign | half);
}

float rlx_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t rlx_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

/* double -> float rounding to odd: a second rounding (to f16/bf16) then rounds correctly. */
static float f32_round_odd(double v) {
  float f = (float)v;
  if (isnan(v) || (double)f == v) return f;
  if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f); /* truncate toward zero */
  uint32_t b;
  memcpy(&b, &f, 4);
  b |= 1;
  memcpy(&f, &b, 4);
  return f;
}

static int64_t sat_i64(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v; /* truncates toward zero */
}

double rlx_elem_get(const void *b, rlx_dtype t, size_t i) {
  switch (t) {
  case RLX_F32: return ((const float *)b)[i];
  case RLX_F16: return rlx_f16_to_f32(((const uint16_t *)b)[i]);
  case RLX_BF16: return rlx_bf16_to_f32(((const uint16_t *)b)[i]);
  case RLX_F64: return ((const double *)b)[i];
  case RLX_I8: return ((const int8_t *)b)[i];
  case RLX_I16: return ((const int16_t *)b)[i];
  case RLX_I32: return ((const int32_t *)b)[i];
  case RLX_I64: return (double)((const int64_t *)b)[i];
  case RLX_U8: return ((const uint8_t *)b)[i];
  case RLX_U32: return ((const uint32_t *)b)[i];
  case RLX_BOOL: return ((const uint8_t *)b)[i] ? 1.0 : 0.0;
  case RLX_C64: return ((const float *)b)[2 * i];
  case RLX_C128: return ((const double *)b)[2 * i];
  default: return 0;
  }
}

void rlx_elem_set(void *b, rlx_dtype t, size_t i, double v) {
  switch (t) {
  case RLX_F32: ((float *)b)[i] = (float)v; break;
  case RLX_F16: ((uint16_t *)b)[i] = rlx_f32_to_f16(f32_round_odd(v)); break;
  case RLX_BF16: ((uint16_t *)b)[i] = rlx_f32_to_bf16(f32_round_odd(v)); break;
  case RLX_F64: ((double *)b)[i] = v; break;
  case RLX_I8: ((int8_t *)b)[i] = (int8_t)sat_i64(v, INT8_MIN, INT8_MAX); break;
  case RLX_I16: ((int16_t *)b)[i] = (int16_t)sat_i64(v, INT16_MIN, INT16_MAX); break;
  case RLX_I32: ((int32_t *)b)[i] = (int32_t)sat_i64(v, INT32_MIN, INT32_MAX); break;
  case RLX_I64:
    ((int64_t *)b)[i] = isnan(v)                      ? 0
                        : v >= 9223372036854775807.0  ? INT64_MAX
                        : v <= -9223372036854775808.0 ? INT64_MIN
                                                      : (int64_t)v;
    break;
  case RLX_U8: ((uint8_t *)b)[i] = (uint8_t)sat_i64(v, 0, UINT8_MAX); break;
  case RLX_U32: ((uint32_t *)b)[i] = (uint32_t)sat_i64(v, 0, UINT32_MAX); break;
  case RLX_BOOL: ((uint8_t *)b)[i] = v != 0; break;
  case RLX_C64:
    ((float *)b)[2 * i] = (float)v;
    ((float *)b)[2 * i + 1] = 0;
    break;
  case RLX_C128:
    ((double *)b)[2 * i] = v;
    ((double *)b)[2 * i + 1] = 0;
    break;
  default: break;
  }
}

int64_t rlx_elem_get_i64(const void *b, rlx_dtype t, size_t i) {
  switch (t) {
  case RLX_I8: return ((const int8_t *)b)[i];
  case RLX_I16: return ((const int16_t *)b)[i];
  case RLX_I32: return ((const int32_t *)b)[i];
  case RLX_I64: return ((const int64_t *)b)[i];
  case RLX_U8: return ((const uint8_t *)b)[i];
  case RLX_U32: return ((const uint32_t *)b)[i];
  case RLX_BOOL: return ((const uint8_t *)b)[i] != 0;
  default: {
    double v = rlx_elem_get(b, t, i);
    return isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
  }
  }
}

void rlx_elem_set_i64(void *b, rlx_dtype t, size_t i, int64_t v) {
  switch (t) {
  case RLX_I8: ((int8_t *)b)[i] = (int8_t)(v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v); break;
  case RLX_I16: ((int16_t *)b)[i] = (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v); break;
  case RLX_I32: ((int32_t *)b)[i] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); break;
  case RLX_I64: ((int64_t *)b)[i] = v; break;
  case RLX_U8: ((uint8_t *)b)[i] = (uint8_t)(v < 0 ? 0 : v > UINT8_MAX ? UINT8_MAX : v); break;
  case RLX_U32: ((uint32_t *)b)[i] = (uint32_t)(v < 0 ? 0 : v > (int64_t)UINT32_MAX ? UINT32_MAX : v); break;
  case RLX_BOOL: ((uint8_t *)b)[i] = v != 0; break;
  default: rlx_elem_set(b, t, i, (double)v); break;
  }
}

void rlx_elem_get_c(const void *b, rlx_dtype t, size_t i, double *re, double *im) {
  if (t == RLX_C64) {
    *re = ((const float *)b)[2 * i];
    *im = ((const float *)b)[2 * i + 1];
  } else if (t == RLX_C128) {
    *re = ((const double *)b)[2 * i];
    *im = ((const double *)b)[2 * i + 1];
  } else {
    *re = rlx_elem_get(b, t, i);
    *im = 0;
  }
}

void rlx_elem_set_c(void *b, rlx_dtype t, size_t i, double re, double im) {
  if (t == RLX_C64) {
    ((float *)b)[2 * i] = (float)re;
    ((float *)b)[2 * i + 1] = (float)im;
  } else if (t == RLX_C128) {
    ((double *)b)[2 * i] = re;
    ((double *)b)[2 * i + 1] = im;
  } else
    rlx_elem_set(b, t, i, re);
}

void rlx_elem_convert(const void *src, rlx_dtype st, void *dst, rlx_dtype dt, size_t n) {
  if (st == dt) {
    memcpy(dst, src, n * rlx_dtype_size(st));
    return;
  }
  bool sc = rlx_dtype_class_of(st) == RLX_CLASS_COMPLEX, dc = rlx_dtype_class_of(dt) == RLX_CLASS_COMPLEX;
  bool si = rlx_dtype_class_of(st) != RLX_CLASS_FLOAT && !sc;
  bool di = rlx_dtype_class_of(dt) != RLX_CLASS_FLOAT && !dc;
  for (size_t i = 0; i < n; i++) {
    if (sc || dc) {
      double re, im;
      rlx_elem_get_c(src, st, i, &re, &im);
      rlx_elem_set_c(dst, dt, i, re, im);
    } else if (si && di) {
      /* integer -> integer wraps (two's complement), like NumPy and the Cast kernel */
      int64_t v = rlx_elem_get_i64(src, st, i);
      switch (dt) {
      case RLX_I8: ((int8_t *)dst)[i] = (int8_t)v; break;
      case RLX_I16: ((int16_t *)dst)[i] = (int16_t)v; break;
      case RLX_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
      case RLX_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
      case RLX_U32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
      default: rlx_elem_set_i64(dst, dt, i, v); break; /* I64, BOOL */
      }
    } else {
      rlx_elem_set(dst, dt, i, rlx_elem_get(src, st, i));
    }
  }
}
