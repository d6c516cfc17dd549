/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Element access for every dtype: reference kernels and the constant folder read and write
 * elements through these (double for floats, int64 for integers, pairs for complex). */
#ifndef RLX_ELEM_H
#define RLX_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/types.h"

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
