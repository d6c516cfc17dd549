/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Checked int64 arithmetic for the shape rules: the one set of helpers every src/ir/infer_*.c
 * (through infer_util.h, infer_special.h or infer_conv_util.h) uses for products and sums of
 * dims and attribute values. Dims and attributes come from files (text, binary, ONNX), so any
 * product or sum of two of them can leave int64; plain `a * b` on them is a bug.
 *
 *  - ck_mul / ck_add / ck_sub return false on overflow and leave *out unspecified;
 *  - ck_mul_or / ck_add_or return RLX_ERR_OVERFLOW with a message naming the quantity and both
 *    values ("scale rows ceil(K / block) * N: 4611686018427387904 * 4 overflows int64"); the
 *    verifier prefixes it with the node and the op;
 *  - ck_ceil_div is ceil(a / b) for a >= 0, b >= 1 without the (a + b - 1) that overflows. */
#ifndef RLX_INFER_CHECKED_H
#define RLX_INFER_CHECKED_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "rlx/status.h"

static inline bool ck_mul(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool ck_add(int64_t a, int64_t b, int64_t *out) { return !__builtin_add_overflow(a, b, out); }
static inline bool ck_sub(int64_t a, int64_t b, int64_t *out) { return !__builtin_sub_overflow(a, b, out); }

static inline rlx_status ck_mul_or(int64_t a, int64_t b, int64_t *out, const char *what) {
  if (ck_mul(a, b, out)) return RLX_OK;
  return rlx_errorf(RLX_ERR_OVERFLOW, "%s: %" PRId64 " * %" PRId64 " overflows int64", what, a, b);
}

static inline rlx_status ck_add_or(int64_t a, int64_t b, int64_t *out, const char *what) {
  if (ck_add(a, b, out)) return RLX_OK;
  return rlx_errorf(RLX_ERR_OVERFLOW, "%s: %" PRId64 " + %" PRId64 " overflows int64", what, a, b);
}

/* ceil(a / b) for a >= 0 and b >= 1; cannot overflow. */
static inline int64_t ck_ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

#endif
