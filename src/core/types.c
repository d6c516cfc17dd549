/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "rlx/types.h"

#include "core/elem.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  size_t size;
  rlx_dtype_class cls;
  int rank;
  bool is_signed; /* integer lanes that hold negative values */
} dtype_info[RLX_DTYPE_COUNT] = {
#define RLX_X(e, name, bytes, cls, rank, lane, codec) {#name, bytes, cls, rank, RLX_LANE_SIGNED(lane)},
    RLX_DTYPE_LIST(RLX_X)
#undef RLX_X
};

size_t rlx_dtype_size(rlx_dtype t) { return (unsigned)t < RLX_DTYPE_COUNT ? dtype_info[t].size : 0; }
const char *rlx_dtype_name(rlx_dtype t) { return (unsigned)t < RLX_DTYPE_COUNT ? dtype_info[t].name : "?"; }
rlx_dtype_class rlx_dtype_class_of(rlx_dtype t) { return dtype_info[t].cls; }
bool rlx_dtype_is_float(rlx_dtype t) { return dtype_info[t].cls == RLX_CLASS_FLOAT; }
bool rlx_dtype_is_int(rlx_dtype t) { return dtype_info[t].cls == RLX_CLASS_INT; }
bool rlx_dtype_is_signed_int(rlx_dtype t) { return dtype_info[t].cls == RLX_CLASS_INT && dtype_info[t].is_signed; }

bool rlx_dtype_from_name(const char *s, size_t len, rlx_dtype *out) {
  for (int i = 0; i < RLX_DTYPE_COUNT; i++) {
    if (strlen(dtype_info[i].name) == len && memcmp(dtype_info[i].name, s, len) == 0) {
      *out = (rlx_dtype)i;
      return true;
    }
  }
  return false;
}

rlx_dtype rlx_dtype_promote(rlx_dtype a, rlx_dtype b) {
  if (a == b) return a;
  if ((a == RLX_F16 && b == RLX_BF16) || (a == RLX_BF16 && b == RLX_F16)) return RLX_F32;
  bool af = rlx_dtype_is_float(a), bf = rlx_dtype_is_float(b);
  bool ai = rlx_dtype_is_int(a), bi = rlx_dtype_is_int(b);
  if ((ai && bf) || (af && bi)) {
    rlx_dtype f = af ? a : b, i = ai ? a : b;
    return (f == RLX_F64 || i == RLX_I64) ? RLX_F64 : RLX_F32;
  }
  return dtype_info[b].rank > dtype_info[a].rank ? b : a;
}

rlx_shape rlx_shape_make(rlx_dtype t, uint32_t rank, const rlx_dim *dims) {
  rlx_shape s;
  memset(&s, 0, sizeof s);
  s.dtype = (uint8_t)t;
  s.rank = (uint8_t)(rank > RLX_MAX_RANK ? RLX_MAX_RANK : rank);
  for (uint32_t i = 0; i < s.rank; i++) s.dims[i] = dims[i];
  return s;
}

rlx_shape rlx_shape_scalar(rlx_dtype t) { return rlx_shape_make(t, 0, NULL); }

bool rlx_shape_is_static(const rlx_shape *s) {
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) return false;
  return true;
}

bool rlx_shape_equal(const rlx_shape *a, const rlx_shape *b) {
  if (a->rank != b->rank || a->dtype != b->dtype) return false;
  for (uint32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool is_one_element(const rlx_shape *s) {
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] != 1) return false;
  return true;
}

bool rlx_shape_compatible(const rlx_shape *a, const rlx_shape *b) {
  if (rlx_shape_equal(a, b)) return true;
  return a->dtype == b->dtype && is_one_element(a) && is_one_element(b);
}

bool rlx_mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
bool rlx_add_size(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }

rlx_status rlx_shape_numel(const rlx_shape *s, size_t *out) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0)
      return rlx_errorf(RLX_ERR_SHAPE, "shape has symbolic dimension ?%u at axis %u; bind it first",
                        rlx_dim_symbol(s->dims[i]), i);
    if (!rlx_mul_size(n, (size_t)s->dims[i], &n))
      return rlx_errorf(RLX_ERR_OVERFLOW, "element count of shape overflows size_t at axis %u", i);
  }
  *out = n;
  return RLX_OK;
}

rlx_status rlx_shape_nbytes(const rlx_shape *s, size_t *out) {
  size_t n;
  RLX_TRY(rlx_shape_numel(s, &n));
  if (!rlx_mul_size(n, rlx_dtype_size((rlx_dtype)s->dtype), out))
    return rlx_errorf(RLX_ERR_OVERFLOW, "byte size of shape overflows size_t");
  return RLX_OK;
}

int rlx_shape_format(const rlx_shape *s, char *buf, size_t cap) {
  size_t used = 0;
  int total = 0;
#define PUT(...)                                                                                 \
  do {                                                                                           \
    int k_ = snprintf(buf ? buf + used : NULL, buf && used < cap ? cap - used : 0, __VA_ARGS__); \
    if (k_ < 0) return k_;                                                                       \
    total += k_;                                                                                 \
    used = (size_t)total < cap ? (size_t)total : cap;                                            \
  } while (0)
  PUT("[");
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] >= 0)
      PUT("%s%lld", i ? ", " : "", (long long)s->dims[i]);
    else
      PUT("%s?%u", i ? ", " : "", rlx_dim_symbol(s->dims[i]));
  }
  PUT("] %s", rlx_dtype_name((rlx_dtype)s->dtype));
#undef PUT
  return total;
}

rlx_status rlx_broadcast(const rlx_shape *a, const rlx_shape *b, rlx_shape *out) {
  uint32_t r = a->rank > b->rank ? a->rank : b->rank;
  rlx_shape o;
  memset(&o, 0, sizeof o);
  o.rank = (uint8_t)r;
  o.dtype = a->dtype;
  for (uint32_t i = 0; i < r; i++) {
    int ia = (int)a->rank - (int)r + (int)i, ib = (int)b->rank - (int)r + (int)i;
    rlx_dim da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    rlx_dim d;
    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da >= 0 && db >= 0)
      return rlx_errorf(RLX_ERR_SHAPE, "cannot broadcast %lld with %lld at output axis %u", (long long)da,
                        (long long)db, i);
    else
      d = da; /* a dynamic dim against another: the left operand wins (spec §4) */
    o.dims[i] = d;
  }
  *out = o;
  return RLX_OK;
}

bool rlx_norm_axis(int64_t axis, uint32_t rank, uint32_t *out) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= (int64_t)rank) return false;
  *out = (uint32_t)axis;
  return true;
}
