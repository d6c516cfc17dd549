/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers shared by the CPU reference kernels (ref/common.c): operand checks that keep a kernel
 * inside its buffers whatever tensors it is handed, index arithmetic, correctly rounded stores,
 * a stable index sort and the counter-based random generator (Philox-4x32-10). */
#ifndef RLX_REF_UTIL_H
#define RLX_REF_UTIL_H

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "core/elem.h"

/* ---- dtype classes ---- */
static inline bool ru_is_complex(rlx_dtype t) { return rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX; }
/* Integers and bool: values handled exactly as int64. */
static inline bool ru_is_intlike(rlx_dtype t) {
  return rlx_dtype_class_of(t) == RLX_CLASS_INT || rlx_dtype_class_of(t) == RLX_CLASS_BOOL;
}
static inline rlx_dtype ru_dt(const rlx_tensor *t) { return (rlx_dtype)t->shape.dtype; }
static inline size_t ru_esz(const rlx_tensor *t) { return rlx_dtype_size((rlx_dtype)t->shape.dtype); }

/* re + im*i without the NaN that re + im*I makes of infinite parts (CMPLX is not everywhere). */
static inline double complex ru_cplx(double re, double im) {
  double parts[2] = {re, im};
  double complex z;
  memcpy(&z, parts, sizeof z);
  return z;
}

/* ---- errors ---- */
/* Sets an error "<Op> node '<name>': <message>" with the given code and returns the code. */
rlx_status ru_error(rlx_status code, const rlx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Formats a shape into a small rotating thread-local buffer (for messages only). */
const char *ru_fmt(const rlx_shape *s);

/* ---- operand checks (RLX_ERR_INVALID_ARG on tensors that do not fit the node) ---- */
/* Operand count in [lo, hi]; every operand and the output static with data for its elements;
 * the output has the node's declared dims and dtype. */
rlx_status ru_prologue(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t lo, uint32_t hi,
                       const rlx_tensor *out);
/* Operand `i` broadcasts (NumPy, right-aligned) onto the output shape `out`. */
rlx_status ru_need_bcast(const rlx_node *n, const rlx_tensor *in, uint32_t i, const rlx_shape *out);
/* Operand `i` has dtype t. */
rlx_status ru_need_dtype(const rlx_node *n, const rlx_tensor *in, uint32_t i, rlx_dtype t);
/* The output has exactly these dims (rank and extents). */
rlx_status ru_need_out_dims(const rlx_node *n, const rlx_tensor *out, uint32_t rank, const int64_t *dims);
/* Normalises a possibly negative axis attribute against `rank`. */
rlx_status ru_axis(const rlx_node *n, const char *attr, int64_t axis, uint32_t rank, uint32_t *out);

/* ---- index arithmetic ---- */
/* Element count of a static shape (0 when a dim is symbolic or the product overflows). */
size_t ru_numel(const rlx_shape *s);
/* Row-major coordinates of flat index `flat` in shape s. */
void ru_unravel(const rlx_shape *s, size_t flat, int64_t coord[RLX_MAX_RANK]);
/* View of shape s around `axis`: s = [outer..., len, inner...] (products). */
void ru_split_axis(const rlx_shape *s, uint32_t axis, size_t *outer, size_t *len, size_t *inner);

/* ---- element access ---- */
/* Stores v with correct rounding to the dtype: floats round to nearest even from the double
 * (f16/bf16 without double rounding), integers truncate toward zero and saturate (NaN -> 0),
 * bool is v != 0, complex gets imag 0. */
void ru_store(void *base, rlx_dtype t, size_t i, double v);
/* Stores an exact integer: integers and bool saturate, floats round to nearest even. */
void ru_store_i64(void *base, rlx_dtype t, size_t i, int64_t v);
/* Rounds the exact sum hi + lo (|lo| <= ulp(hi)/2, as from a two-sum) to the nearest double with
 * "round to odd", so a later rounding to any format of <= 51 bits is correctly rounded. */
double ru_round_odd_sum(double hi, double lo);
/* Copies one element of `esz` bytes. */
void ru_copy_elem(void *dst, size_t di, const void *src, size_t si, size_t esz);

/* ---- sorting ---- */
/* Comparator over two element indices: < 0 when a sorts before b, 0 when they tie. */
typedef int (*ru_cmp_fn)(const void *ctx, size_t a, size_t b);
/* Stable merge sort of idx[0..n) (ties keep their order); RLX_ERR_OOM if scratch fails. */
rlx_status ru_stable_sort(size_t *idx, size_t n, ru_cmp_fn cmp, const void *ctx);

/* ---- counter-based random numbers ---- */
/* Philox-4x32-10 (Salmon et al., SC'11): one 128-bit block for counter `ctr` under `key`. */
void ru_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* The splitmix64 finaliser (a bijection; 0 maps to 0). */
uint64_t ru_mix64(uint64_t x);
/* Random block for element `index` of stream `stream` under the 64-bit key. */
void ru_rng_block(uint64_t key, uint64_t index, uint32_t stream, uint32_t out[4]);
/* Uniform in [0, 1) from 53 bits (two words) / 24 bits (one word). */
double ru_u53(uint32_t hi, uint32_t lo);
double ru_u24(uint32_t w);

#endif
