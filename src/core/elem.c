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

/* ---- per-dtype access, generated from RLX_DTYPE_LIST's lane type and codec ---- */

/* double -> integer like Cast: truncates toward zero, saturates at [lo, hi], NaN -> 0. The bounds
 * are powers of two (lo) or one less (hi), so v >= (double)hi means v is at or past hi. */
static int64_t sat_int(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}
static int64_t clamp_int(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* element i as double */
#define GET_FLOAT(T, b, i) ((double)((const T *)(b))[i])
#define GET_INT(T, b, i) ((double)((const T *)(b))[i])
#define GET_HALF(T, b, i) ((double)rlx_f16_to_f32(((const T *)(b))[i]))
#define GET_BFLOAT(T, b, i) ((double)rlx_bf16_to_f32(((const T *)(b))[i]))
#define GET_BOOL(T, b, i) (((const T *)(b))[i] ? 1.0 : 0.0)
#define GET_COMPLEX(T, b, i) ((double)((const T *)(b))[2 * (i)])
/* store v (double) with Cast semantics */
#define SET_FLOAT(T, b, i, v) (((T *)(b))[i] = (T)(v))
#define SET_INT(T, b, i, v) (((T *)(b))[i] = (T)sat_int(v, RLX_LANE_MIN(T), RLX_LANE_MAX(T)))
#define SET_HALF(T, b, i, v) (((T *)(b))[i] = rlx_f32_to_f16(f32_round_odd(v)))
#define SET_BFLOAT(T, b, i, v) (((T *)(b))[i] = rlx_f32_to_bf16(f32_round_odd(v)))
#define SET_BOOL(T, b, i, v) (((T *)(b))[i] = (v) != 0)
#define SET_COMPLEX(T, b, i, v) (((T *)(b))[2 * (i)] = (T)(v), ((T *)(b))[2 * (i) + 1] = 0)
/* exact integer read: integers natively, bool 0/1, everything else through double like Cast */
#define GETI_INT(T, b, i) ((int64_t)((const T *)(b))[i])
#define GETI_BOOL(T, b, i) ((int64_t)(((const T *)(b))[i] != 0))
#define GETI_VIA_DOUBLE(T, b, i, get) sat_int(get(T, b, i), INT64_MIN, INT64_MAX)
#define GETI_FLOAT(T, b, i) GETI_VIA_DOUBLE(T, b, i, GET_FLOAT)
#define GETI_HALF(T, b, i) GETI_VIA_DOUBLE(T, b, i, GET_HALF)
#define GETI_BFLOAT(T, b, i) GETI_VIA_DOUBLE(T, b, i, GET_BFLOAT)
#define GETI_COMPLEX(T, b, i) GETI_VIA_DOUBLE(T, b, i, GET_COMPLEX)
/* exact integer store: integers saturate, bool is v != 0, the rest through double */
#define SETI_INT(T, b, i, v) (((T *)(b))[i] = (T)clamp_int(v, RLX_LANE_MIN(T), RLX_LANE_MAX(T)))
#define SETI_BOOL(T, b, i, v) (((T *)(b))[i] = (v) != 0)
#define SETI_FLOAT(T, b, i, v) SET_FLOAT(T, b, i, (double)(v))
#define SETI_HALF(T, b, i, v) SET_HALF(T, b, i, (double)(v))
#define SETI_BFLOAT(T, b, i, v) SET_BFLOAT(T, b, i, (double)(v))
#define SETI_COMPLEX(T, b, i, v) SET_COMPLEX(T, b, i, (double)(v))
/* integer -> integer conversion wraps (two's complement), like NumPy and the Cast kernel */
#define WRAP_INT(T, b, i, v) (((T *)(b))[i] = (T)(v))
#define WRAP_BOOL SETI_BOOL
#define WRAP_FLOAT SETI_FLOAT
#define WRAP_HALF SETI_HALF
#define WRAP_BFLOAT SETI_BFLOAT
#define WRAP_COMPLEX SETI_COMPLEX

typedef struct elem_codec {
  double (*get)(const void *b, size_t i);
  void (*set)(void *b, size_t i, double v);
  int64_t (*get_i64)(const void *b, size_t i);
  void (*set_i64)(void *b, size_t i, int64_t v);
  void (*set_wrap)(void *b, size_t i, int64_t v);
  void (*get_c)(const void *b, size_t i, double *re, double *im);
  void (*set_c)(void *b, size_t i, double re, double im);
} elem_codec;

/* complex access: (re, im) pairs natively, every other codec has im = 0 */
#define GETC_COMPLEX(T, b, i, re, im) (*(re) = ((const T *)(b))[2 * (i)], *(im) = ((const T *)(b))[2 * (i) + 1])
#define GETC_REAL(T, b, i, re, im, get) (*(re) = get(T, b, i), *(im) = 0)
#define GETC_FLOAT(T, b, i, re, im) GETC_REAL(T, b, i, re, im, GET_FLOAT)
#define GETC_INT(T, b, i, re, im) GETC_REAL(T, b, i, re, im, GET_INT)
#define GETC_HALF(T, b, i, re, im) GETC_REAL(T, b, i, re, im, GET_HALF)
#define GETC_BFLOAT(T, b, i, re, im) GETC_REAL(T, b, i, re, im, GET_BFLOAT)
#define GETC_BOOL(T, b, i, re, im) GETC_REAL(T, b, i, re, im, GET_BOOL)
#define SETC_COMPLEX(T, b, i, re, im) (((T *)(b))[2 * (i)] = (T)(re), ((T *)(b))[2 * (i) + 1] = (T)(im))
#define SETC_FLOAT(T, b, i, re, im) SET_FLOAT(T, b, i, re)
#define SETC_INT(T, b, i, re, im) SET_INT(T, b, i, re)
#define SETC_HALF(T, b, i, re, im) SET_HALF(T, b, i, re)
#define SETC_BFLOAT(T, b, i, re, im) SET_BFLOAT(T, b, i, re)
#define SETC_BOOL(T, b, i, re, im) SET_BOOL(T, b, i, re)
/* lanes per element */
#define LANES_FLOAT 1
#define LANES_INT 1
#define LANES_HALF 1
#define LANES_BFLOAT 1
#define LANES_BOOL 1
#define LANES_COMPLEX 2

#define ELEM_FNS(E, name, bytes, cls, rank, T, codec)                                                        \
  _Static_assert(sizeof(T) * LANES_##codec == (bytes), "dtype " #name ": lane type and byte size disagree"); \
  static void get_c_##E(const void *b, size_t i, double *re, double *im) { GETC_##codec(T, b, i, re, im); }  \
  static void set_c_##E(void *b, size_t i, double re, double im) {                                           \
    (void)im;                                                                                                \
    SETC_##codec(T, b, i, re, im);                                                                           \
  }                                                                                                          \
  static double get_##E(const void *b, size_t i) { return GET_##codec(T, b, i); }                            \
  static void set_##E(void *b, size_t i, double v) { SET_##codec(T, b, i, v); }                              \
  static int64_t get_i64_##E(const void *b, size_t i) { return GETI_##codec(T, b, i); }                      \
  static void set_i64_##E(void *b, size_t i, int64_t v) { SETI_##codec(T, b, i, v); }                        \
  static void set_wrap_##E(void *b, size_t i, int64_t v) { WRAP_##codec(T, b, i, v); }
RLX_DTYPE_LIST(ELEM_FNS)
#undef ELEM_FNS

static const elem_codec codecs[RLX_DTYPE_COUNT] = {
#define ELEM_ROW(E, ...) [RLX_##E] = {get_##E, set_##E, get_i64_##E, set_i64_##E, set_wrap_##E, get_c_##E, set_c_##E},
    RLX_DTYPE_LIST(ELEM_ROW)
#undef ELEM_ROW
};

static bool known(rlx_dtype t) { return (unsigned)t < RLX_DTYPE_COUNT; }

double rlx_elem_get(const void *b, rlx_dtype t, size_t i) { return known(t) ? codecs[t].get(b, i) : 0; }

void rlx_elem_set(void *b, rlx_dtype t, size_t i, double v) {
  if (known(t)) codecs[t].set(b, i, v);
}

int64_t rlx_elem_get_i64(const void *b, rlx_dtype t, size_t i) { return known(t) ? codecs[t].get_i64(b, i) : 0; }

void rlx_elem_set_i64(void *b, rlx_dtype t, size_t i, int64_t v) {
  if (known(t)) codecs[t].set_i64(b, i, v);
}

void rlx_elem_get_c(const void *b, rlx_dtype t, size_t i, double *re, double *im) {
  if (known(t))
    codecs[t].get_c(b, i, re, im);
  else
    *re = *im = 0;
}

void rlx_elem_set_c(void *b, rlx_dtype t, size_t i, double re, double im) {
  if (known(t)) codecs[t].set_c(b, i, re, im);
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
      codecs[dt].set_wrap(dst, i, rlx_elem_get_i64(src, st, i));
    } else {
      rlx_elem_set(dst, dt, i, rlx_elem_get(src, st, i));
    }
  }
}
