/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers of the CPU reference kernels: the cpu_kernels.h API and ref_util.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

/* ---- cpu_kernels.h ---- */

size_t rlx_tensor_numel(const rlx_tensor *t) { return ru_numel(&t->shape); }

void rlx_strides(const rlx_shape *s, int64_t strides[RLX_MAX_RANK]) {
  int64_t st = 1;
  for (int i = (int)s->rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= s->dims[i] > 0 ? s->dims[i] : 1;
  }
  for (int i = s->rank; i < RLX_MAX_RANK; i++) strides[i] = 0;
}

size_t rlx_broadcast_offset(const rlx_shape *in, const rlx_shape *out, size_t out_index) {
  size_t off = 0, in_stride = 1;
  /* Walk the axes from the innermost outwards; operand axes align with the output's last ones. */
  for (int k = 0; k < (int)out->rank; k++) {
    int64_t od = out->dims[out->rank - 1 - k];
    size_t c = od > 0 ? out_index % (size_t)od : 0;
    out_index = od > 0 ? out_index / (size_t)od : 0;
    if (k >= (int)in->rank) continue;
    int64_t id = in->dims[in->rank - 1 - k];
    if (id != 1) off += c * in_stride;
    in_stride *= id > 0 ? (size_t)id : 1;
  }
  return off;
}

static void vprefix(const rlx_node *n, char *buf, size_t cap) {
  if (n && n->name)
    snprintf(buf, cap, "%s node '%s'", rlx_op_name(n->op), n->name);
  else if (n)
    snprintf(buf, cap, "%s node", rlx_op_name(n->op));
  else
    snprintf(buf, cap, "kernel");
}

static rlx_status verror(rlx_status code, const rlx_node *n, const char *fmt, va_list ap) {
  char msg[1024], pre[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  vprefix(n, pre, sizeof pre);
  return rlx_errorf(code, "%s: %s", pre, msg);
}

rlx_status rlx_kernel_error(const rlx_node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_status s = verror(RLX_ERR_RUNTIME, n, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- errors ---- */

rlx_status ru_error(rlx_status code, const rlx_node *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_status s = verror(code, n, fmt, ap);
  va_end(ap);
  return s;
}

const char *ru_fmt(const rlx_shape *s) {
  static _Thread_local char bufs[4][160];
  static _Thread_local unsigned k;
  char *b = bufs[k++ & 3];
  rlx_shape_format(s, b, sizeof bufs[0]);
  return b;
}

/* ---- operand checks ---- */

static rlx_status check_tensor(const rlx_node *n, const rlx_tensor *t, const char *what, uint32_t i) {
  size_t count = 1;
  if ((unsigned)t->shape.dtype >= RLX_DTYPE_COUNT || t->shape.rank > RLX_MAX_RANK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "%s %u has an invalid dtype or rank", what, i);
  for (uint32_t k = 0; k < t->shape.rank; k++) {
    if (t->shape.dims[k] < 0)
      return ru_error(RLX_ERR_INVALID_ARG, n, "%s %u has shape %s; kernels need static extents", what, i,
                      ru_fmt(&t->shape));
    if (!rlx_mul_size(count, (size_t)t->shape.dims[k], &count))
      return ru_error(RLX_ERR_OVERFLOW, n, "%s %u %s: element count overflows", what, i, ru_fmt(&t->shape));
  }
  size_t bytes;
  if (!rlx_mul_size(count, rlx_dtype_size((rlx_dtype)t->shape.dtype), &bytes))
    return ru_error(RLX_ERR_OVERFLOW, n, "%s %u %s: byte size overflows", what, i, ru_fmt(&t->shape));
  if (count > 0 && !t->data) return ru_error(RLX_ERR_INVALID_ARG, n, "%s %u has no data", what, i);
  return RLX_OK;
}

rlx_status ru_prologue(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t lo, uint32_t hi,
                       const rlx_tensor *out) {
  if (n_in < lo || n_in > hi) {
    if (lo == hi) return ru_error(RLX_ERR_INVALID_ARG, n, "got %u operands, expected %u", n_in, lo);
    return ru_error(RLX_ERR_INVALID_ARG, n, "got %u operands, expected %u to %u", n_in, lo, hi);
  }
  if (n_in && !in) return ru_error(RLX_ERR_INVALID_ARG, n, "operands missing");
  if (!out) return ru_error(RLX_ERR_INVALID_ARG, n, "output tensor missing");
  for (uint32_t i = 0; i < n_in; i++) RLX_TRY(check_tensor(n, &in[i], "operand", i));
  RLX_TRY(check_tensor(n, out, "output", 0));
  const rlx_shape *d = &n->shape, *o = &out->shape;
  bool ok = d->dtype == o->dtype && d->rank == o->rank;
  for (uint32_t k = 0; ok && k < d->rank; k++) ok = d->dims[k] < 0 || d->dims[k] == o->dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "output tensor %s does not match the node's shape %s", ru_fmt(o),
                    ru_fmt(d));
  return RLX_OK;
}

rlx_status ru_need_bcast(const rlx_node *n, const rlx_tensor *in, uint32_t i, const rlx_shape *out) {
  const rlx_shape *s = &in[i].shape;
  bool ok = s->rank <= out->rank;
  for (uint32_t k = 0; ok && k < s->rank; k++) {
    int64_t a = s->dims[s->rank - 1 - k], b = out->dims[out->rank - 1 - k];
    ok = a == 1 || a == b;
  }
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u %s does not broadcast to the output %s", i, ru_fmt(s),
                    ru_fmt(out));
  return RLX_OK;
}

rlx_status ru_need_dtype(const rlx_node *n, const rlx_tensor *in, uint32_t i, rlx_dtype t) {
  if (in[i].shape.dtype != t)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u has dtype %s; expected %s", i, rlx_dtype_name(ru_dt(&in[i])),
                    rlx_dtype_name(t));
  return RLX_OK;
}

rlx_status ru_need_out_dims(const rlx_node *n, const rlx_tensor *out, uint32_t rank, const int64_t *dims) {
  bool ok = out->shape.rank == rank;
  for (uint32_t k = 0; ok && k < rank; k++) ok = out->shape.dims[k] == dims[k];
  if (!ok) {
    rlx_shape want = out->shape;
    want.rank = (uint8_t)(rank <= RLX_MAX_RANK ? rank : RLX_MAX_RANK);
    for (uint32_t k = 0; k < want.rank; k++) want.dims[k] = dims[k];
    return ru_error(RLX_ERR_INVALID_ARG, n, "output tensor is %s; the operands and attributes give %s",
                    ru_fmt(&out->shape), ru_fmt(&want));
  }
  return RLX_OK;
}

rlx_status ru_axis(const rlx_node *n, const char *attr, int64_t axis, uint32_t rank, uint32_t *out) {
  if (!rlx_norm_axis(axis, rank, out))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s is %lld; the operand has rank %u", attr, (long long)axis,
                    rank);
  return RLX_OK;
}

/* ---- index arithmetic ---- */

size_t ru_numel(const rlx_shape *s) {
  size_t count = 1;
  for (uint32_t k = 0; k < s->rank; k++) {
    if (s->dims[k] < 0 || !rlx_mul_size(count, (size_t)s->dims[k], &count)) return 0;
  }
  return count;
}

void ru_unravel(const rlx_shape *s, size_t flat, int64_t coord[RLX_MAX_RANK]) {
  for (int k = (int)s->rank - 1; k >= 0; k--) {
    size_t d = s->dims[k] > 0 ? (size_t)s->dims[k] : 1;
    coord[k] = (int64_t)(flat % d);
    flat /= d;
  }
}

void ru_split_axis(const rlx_shape *s, uint32_t axis, size_t *outer, size_t *len, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (uint32_t k = 0; k < axis; k++) *outer *= (size_t)s->dims[k];
  for (uint32_t k = axis + 1; k < s->rank; k++) *inner *= (size_t)s->dims[k];
  *len = (size_t)s->dims[axis];
}

/* ---- element access ---- */

/* Rounds v to float with "round to odd": exact values stay; otherwise the float neighbour whose
 * last significand bit is 1. A following round-to-nearest-even to f16 or bf16 is then exact. */
static float round_odd_f32(double v) {
  float f = (float)v;
  if (isnan(v) || isinf(f) || (double)f == v) return f;
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if (bits & 1u) return f;
  return nextafterf(f, v > (double)f ? INFINITY : -INFINITY);
}

void ru_store(void *base, rlx_dtype t, size_t i, double v) {
  switch (t) {
  case RLX_F32: ((float *)base)[i] = (float)v; break;
  case RLX_F16: ((uint16_t *)base)[i] = rlx_f32_to_f16(round_odd_f32(v)); break;
  case RLX_BF16: ((uint16_t *)base)[i] = rlx_f32_to_bf16(round_odd_f32(v)); break;
  default: rlx_elem_set(base, t, i, v); break;
  }
}

/* |v| rounded to `bits` significant bits (nearest even), with v's sign: exact in double. */
static double round_int_bits(int64_t v, int bits) {
  uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  int width = 0;
  for (uint64_t t = m; t; t >>= 1) width++;
  int drop = width > bits ? width - bits : 0;
  if (drop > 0) {
    uint64_t rest = m & ((UINT64_C(1) << drop) - 1), half = UINT64_C(1) << (drop - 1);
    m >>= drop;
    if (rest > half || (rest == half && (m & 1u))) m++;
  }
  double r = ldexp((double)m, drop);
  return v < 0 ? -r : r;
}

void ru_store_i64(void *base, rlx_dtype t, size_t i, int64_t v) {
  switch (t) {
  case RLX_F32: ((float *)base)[i] = (float)v; break;
  case RLX_F64: ((double *)base)[i] = (double)v; break;
  case RLX_F16: ((uint16_t *)base)[i] = rlx_f32_to_f16((float)round_int_bits(v, 11)); break;
  case RLX_BF16: ((uint16_t *)base)[i] = rlx_f32_to_bf16((float)round_int_bits(v, 8)); break;
  case RLX_C64: rlx_elem_set_c(base, t, i, (double)(float)v, 0); break;
  case RLX_C128: rlx_elem_set_c(base, t, i, (double)v, 0); break;
  default: rlx_elem_set_i64(base, t, i, v); break;
  }
}

double ru_round_odd_sum(double hi, double lo) {
  if (lo == 0 || !isfinite(hi)) return hi;
  uint64_t bits;
  memcpy(&bits, &hi, 8);
  if (bits & 1u) return hi;
  return nextafter(hi, lo > 0 ? INFINITY : -INFINITY);
}

void ru_copy_elem(void *dst, size_t di, const void *src, size_t si, size_t esz) {
  memcpy((char *)dst + di * esz, (const char *)src + si * esz, esz);
}

/* ---- sorting ---- */

static void merge_pass(size_t *a, size_t *tmp, size_t lo, size_t mid, size_t hi, ru_cmp_fn cmp, const void *ctx) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) tmp[k++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
  while (i < mid) tmp[k++] = a[i++];
  while (j < hi) tmp[k++] = a[j++];
  memcpy(a + lo, tmp + lo, (hi - lo) * sizeof *a);
}

rlx_status ru_stable_sort(size_t *idx, size_t n, ru_cmp_fn cmp, const void *ctx) {
  if (n < 2) return RLX_OK;
  size_t bytes;
  if (!rlx_mul_size(n, sizeof *idx, &bytes)) return rlx_errorf(RLX_ERR_OVERFLOW, "sort of %zu elements", n);
  size_t *tmp = malloc(bytes);
  if (!tmp) return rlx_errorf(RLX_ERR_OOM, "out of memory sorting %zu elements", n);
  /* Bottom-up merge sort: runs of width 1, 2, 4, ... merged left to right. */
  for (size_t w = 1; w<n; w = w> n / 2 ? n : 2 * w)
    for (size_t lo = 0; lo + w < n; lo += 2 * w) {
      size_t hi = n - lo > 2 * w ? lo + 2 * w : n;
      merge_pass(idx, tmp, lo, lo + w, hi, cmp, ctx);
    }
  free(tmp);
  return RLX_OK;
}

/* ---- Philox-4x32-10 ---- */

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9) /* golden ratio */
#define PHILOX_W1 UINT32_C(0xBB67AE85) /* sqrt(3) - 1 */

void ru_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
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

uint64_t ru_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  x ^= x >> 31;
  return x;
}

void ru_rng_block(uint64_t key, uint64_t index, uint32_t stream, uint32_t out[4]) {
  uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), stream, 0};
  uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)};
  ru_philox4x32_10(ctr, k, out);
}

double ru_u53(uint32_t hi, uint32_t lo) {
  uint64_t bits = (((uint64_t)hi << 32) | lo) >> 11;
  return (double)bits * 0x1p-53;
}

double ru_u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }
