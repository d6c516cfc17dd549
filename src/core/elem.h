/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Element access for every dtype: reference kernels and the constant folder read and write
 * elements through these (double for floats, int64 for integers, pairs for complex). */
#ifndef RLX_ELEM_H
#define RLX_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/types.h"

/* The range of an integer lane type of RLX_DTYPE_LIST (C's own limits, picked by type). */
#define RLX_LANE_MIN(T) \
  _Generic((T)0, int8_t : INT8_MIN, int16_t : INT16_MIN, int32_t : INT32_MIN, int64_t : INT64_MIN, default : 0)
#define RLX_LANE_MAX(T)           \
  _Generic((T)0, int8_t           \
           : INT8_MAX, int16_t    \
           : INT16_MAX, int32_t   \
           : INT32_MAX, int64_t   \
           : INT64_MAX, uint8_t   \
           : UINT8_MAX, uint16_t  \
           : UINT16_MAX, uint32_t \
           : (int64_t)UINT32_MAX, default : 0)
#define RLX_LANE_SIGNED(T) (RLX_LANE_MIN(T) < 0)

float rlx_f16_to_f32(uint16_t h);
uint16_t rlx_f32_to_f16(float f); /* round to nearest even; overflow -> inf */
float rlx_bf16_to_f32(uint16_t h);
uint16_t rlx_f32_to_bf16(float f); /* round to nearest even; NaN stays NaN */

/* Element i of `base` as double (complex: real part; bool: 0/1). */
double rlx_elem_get(const void *base, rlx_dtype t, size_t i);
/* Stores v into element i, converting like Cast: float->int truncates toward zero and
 * saturates (NaN -> 0); ->bool is v != 0; ->complex sets imag = 0. */
void rlx_elem_set(void *base, rlx_dtype t, size_t i, double v);
/* Exact integer access (floats truncated/saturated like Cast). */
int64_t rlx_elem_get_i64(const void *base, rlx_dtype t, size_t i);
void rlx_elem_set_i64(void *base, rlx_dtype t, size_t i, int64_t v);
/* Complex access (real dtypes: imag = 0 / ignored). */
void rlx_elem_get_c(const void *base, rlx_dtype t, size_t i, double *re, double *im);
void rlx_elem_set_c(void *base, rlx_dtype t, size_t i, double re, double im);
/* Converts n elements between dtypes with Cast semantics (integer -> integer wraps). */
void rlx_elem_convert(const void *src, rlx_dtype st, void *dst, rlx_dtype dt, size_t n);

#endif
