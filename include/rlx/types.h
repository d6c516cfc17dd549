/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Element types, dimensions and shapes of the RLX IR. */
#ifndef RLX_TYPES_H
#define RLX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM, text name, bytes, class, promotion rank, C lane type, codec); order = RLX's declaration
 * order. The lane type is what one element (complex: one of its two parts) is stored as; the codec
 * says how elements are read and written (src/core/elem.c): FLOAT and INT natively, HALF and
 * BFLOAT through their f32 conversions, BOOL as a 0/1 byte, COMPLEX as (re, im) lane pairs. */
#define RLX_DTYPE_LIST(X)                                \
  X(F32, f32, 4, RLX_CLASS_FLOAT, 6, float, FLOAT)       \
  X(F16, f16, 2, RLX_CLASS_FLOAT, 3, uint16_t, HALF)     \
  X(BF16, bf16, 2, RLX_CLASS_FLOAT, 2, uint16_t, BFLOAT) \
  X(F64, f64, 8, RLX_CLASS_FLOAT, 7, double, FLOAT)      \
  X(I8, i8, 1, RLX_CLASS_INT, 1, int8_t, INT)            \
  X(I16, i16, 2, RLX_CLASS_INT, 2, int16_t, INT)         \
  X(I32, i32, 4, RLX_CLASS_INT, 4, int32_t, INT)         \
  X(I64, i64, 8, RLX_CLASS_INT, 5, int64_t, INT)         \
  X(U8, u8, 1, RLX_CLASS_INT, 1, uint8_t, INT)           \
  X(U32, u32, 4, RLX_CLASS_INT, 4, uint32_t, INT)        \
  X(BOOL, bool, 1, RLX_CLASS_BOOL, 0, uint8_t, BOOL)     \
  X(C64, c64, 8, RLX_CLASS_COMPLEX, 8, float, COMPLEX)   \
  X(C128, c128, 16, RLX_CLASS_COMPLEX, 9, double, COMPLEX)

typedef enum rlx_dtype {
#define RLX_X(e, ...) RLX_##e,
  RLX_DTYPE_LIST(RLX_X)
#undef RLX_X
      RLX_DTYPE_COUNT
} rlx_dtype;

typedef enum rlx_dtype_class { RLX_CLASS_FLOAT, RLX_CLASS_INT, RLX_CLASS_BOOL, RLX_CLASS_COMPLEX } rlx_dtype_class;

size_t rlx_dtype_size(rlx_dtype t);
const char *rlx_dtype_name(rlx_dtype t); /* "f32" */
rlx_dtype_class rlx_dtype_class_of(rlx_dtype t);
bool rlx_dtype_is_float(rlx_dtype t);
bool rlx_dtype_is_int(rlx_dtype t);
bool rlx_dtype_is_signed_int(rlx_dtype t);
/* Parses a text name ("f32"); returns false when unknown. */
bool rlx_dtype_from_name(const char *s, size_t len, rlx_dtype *out);
/* NumPy-like promotion helper (spec ir-core §3). Shape inference does NOT apply it. */
rlx_dtype rlx_dtype_promote(rlx_dtype a, rlx_dtype b);

/* A dimension: >= 0 is a static extent; < 0 is the symbolic dimension ?k with k = -d - 1. */
typedef int64_t rlx_dim;
#define RLX_MAX_RANK 8
#define RLX_DIM_SYM(k) ((rlx_dim)(-(int64_t)(k)-1))
#define RLX_SYM_BATCH 0
#define RLX_SYM_SEQ 1
#define RLX_SYM_ROWS 2
#define RLX_SYM_PAST_SEQ 3
static inline bool rlx_dim_is_static(rlx_dim d) { return d >= 0; }
static inline uint32_t rlx_dim_symbol(rlx_dim d) { return (uint32_t)(-(d + 1)); }

typedef struct rlx_shape {
  rlx_dim dims[RLX_MAX_RANK];
  uint8_t rank;
  uint8_t dtype; /* rlx_dtype */
} rlx_shape;

rlx_shape rlx_shape_make(rlx_dtype t, uint32_t rank, const rlx_dim *dims);
rlx_shape rlx_shape_scalar(rlx_dtype t);
bool rlx_shape_is_static(const rlx_shape *s);
bool rlx_shape_equal(const rlx_shape *a, const rlx_shape *b);
/* Equal, or both hold exactly one element of the same dtype ([] ~ [1] ~ [1,1]). */
bool rlx_shape_compatible(const rlx_shape *a, const rlx_shape *b);
/* Checked element count; RLX_ERR_SHAPE if a dim is symbolic, RLX_ERR_OVERFLOW on overflow. */
rlx_status rlx_shape_numel(const rlx_shape *s, size_t *out);
rlx_status rlx_shape_nbytes(const rlx_shape *s, size_t *out);
/* Writes "[4, ?0, 3] f32"; returns the number of chars that would be written (snprintf-like). */
int rlx_shape_format(const rlx_shape *s, char *buf, size_t cap);
/* NumPy right-aligned broadcast of dims; result dtype = a's dtype (spec ir-core §4). */
rlx_status rlx_broadcast(const rlx_shape *a, const rlx_shape *b, rlx_shape *out);
/* Normalizes a possibly negative axis into [0, rank); false if out of range. */
bool rlx_norm_axis(int64_t axis, uint32_t rank, uint32_t *out);

/* Checked size arithmetic: false on overflow. */
bool rlx_mul_size(size_t a, size_t b, size_t *out);
bool rlx_add_size(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif
#endif
