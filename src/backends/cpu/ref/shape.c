/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: shape manipulation and data movement (spec ir-core §8.6, §10.7).
 * Every kernel moves whole elements (bytes), so every dtype is supported. Most of them walk the
 * output in row-major order and compute the source element from the output coordinates. */
#include <math.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

/* Output element i of every kernel here has the same dtype as operand 0. */
static rlx_status need_out_dtype(const rlx_node *n, const rlx_tensor *in, const rlx_tensor *out) {
  return ru_need_dtype(n, in, 0, ru_dt(out));
}

/* Flat source offset of coordinates `c` in a tensor with strides `st`. */
static size_t offset_of(const int64_t *c, const int64_t *st, uint32_t rank) {
  size_t off = 0;
  for (uint32_t k = 0; k < rank; k++) off += (size_t)c[k] * (size_t)st[k];
  return off;
}

RLX_CPU_KERNEL(Reshape) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  size_t count = rlx_tensor_numel(out);
  if (rlx_tensor_numel(&in[0]) != count)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 %s and the output %s differ in element count",
                    ru_fmt(&in[0].shape), ru_fmt(&out->shape));
  if (count) memcpy(out->data, in[0].data, count * ru_esz(out));
  return RLX_OK;
}

RLX_CPU_KERNEL(Transpose) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_ilist *perm = &n->attrs.Transpose.perm;
  const rlx_shape *x = &in[0].shape;
  if (perm->n != x->rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute perm has %u entries; operand 0 %s has rank %u", perm->n,
                    ru_fmt(x), x->rank);
  int64_t dims[RLX_MAX_RANK];
  uint32_t seen = 0;
  for (uint32_t k = 0; k < perm->n; k++) {
    int64_t a = perm->v[k];
    if (a < 0 || a >= (int64_t)x->rank || (seen & (1u << a)))
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute perm is not a permutation of the %u axes", x->rank);
    seen |= 1u << a;
    dims[k] = x->dims[a];
  }
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK], src[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(&out->shape, i, c);
    for (uint32_t k = 0; k < x->rank; k++) src[perm->v[k]] = c[k];
    ru_copy_elem(out->data, i, in[0].data, offset_of(src, st, x->rank), esz);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Narrow) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_attrs_Narrow *a = &n->attrs.Narrow;
  const rlx_shape *x = &in[0].shape;
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", a->axis, x->rank, &ax));
  int64_t d = x->dims[ax];
  if (a->start < 0 || a->len < 0 || a->start > d || a->len > d - a->start)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes start %lld, len %lld do not fit axis %u of operand 0 %s",
                    (long long)a->start, (long long)a->len, ax, ru_fmt(x));
  int64_t dims[RLX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[ax] = a->len;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  size_t outer, len, inner, esz = ru_esz(out);
  ru_split_axis(x, ax, &outer, &len, &inner);
  size_t chunk = (size_t)a->len * inner * esz;
  for (size_t o = 0; o < outer && chunk; o++)
    memcpy((char *)out->data + o * chunk, (const char *)in[0].data + (o * len + (size_t)a->start) * inner * esz, chunk);
  return RLX_OK;
}

RLX_CPU_KERNEL(Concat) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, UINT32_MAX, out));
  const rlx_shape *so = &out->shape;
  if (so->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "the output is a scalar; Concat needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.Concat.axis, so->rank, &ax));
  int64_t total = 0;
  for (uint32_t i = 0; i < n_in; i++) {
    const rlx_shape *s = &in[i].shape;
    RLX_TRY(ru_need_dtype(n, in, i, ru_dt(out)));
    bool ok = s->rank == so->rank;
    for (uint32_t k = 0; ok && k < so->rank; k++) ok = k == ax || s->dims[k] == so->dims[k];
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u %s does not fit the output %s outside axis %u", i, ru_fmt(s),
                      ru_fmt(so), ax);
    total += s->dims[ax];
  }
  if (total != so->dims[ax])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands add up to %lld along axis %u; the output %s has %lld",
                    (long long)total, ax, ru_fmt(so), (long long)so->dims[ax]);
  size_t outer, len, inner, esz = ru_esz(out);
  ru_split_axis(so, ax, &outer, &len, &inner);
  char *dst = out->data;
  for (size_t o = 0; o < outer; o++)
    for (uint32_t i = 0; i < n_in; i++) {
      size_t chunk = (size_t)in[i].shape.dims[ax] * inner * esz;
      if (!chunk) continue;
      memcpy(dst, (const char *)in[i].data + o * chunk, chunk);
      dst += chunk;
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(Expand) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  RLX_TRY(ru_need_bcast(n, in, 0, &out->shape));
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++)
    ru_copy_elem(out->data, i, in[0].data, rlx_broadcast_offset(&in[0].shape, &out->shape, i), esz);
  return RLX_OK;
}

/* Reads index element i as an integer; false when it is not an integral value (NaN, 1.5). */
static bool read_index(const void *base, rlx_dtype t, size_t i, int64_t *v) {
  if (ru_is_intlike(t)) {
    *v = rlx_elem_get_i64(base, t, i);
    return true;
  }
  double d = rlx_elem_get(base, t, i);
  if (!(d == floor(d)) || fabs(d) >= 9.2e18) return false;
  *v = (int64_t)d;
  return true;
}

RLX_CPU_KERNEL(Gather) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_shape *tab = &in[0].shape, *idx = &in[1].shape;
  rlx_dtype it = ru_dt(&in[1]);
  if (tab->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (table) is a scalar; Gather needs rank >= 1");
  if (ru_is_complex(it) || it == RLX_BOOL)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (indices) has dtype %s; indices must be an integer dtype or f32",
                    rlx_dtype_name(it));
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.Gather.axis, tab->rank, &ax));
  uint32_t rank = tab->rank - 1 + idx->rank;
  if (rank > RLX_MAX_RANK) return ru_error(RLX_ERR_INVALID_ARG, n, "the result would have rank %u", rank);
  int64_t dims[RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t k = 0; k < ax; k++) dims[r++] = tab->dims[k];
  for (uint32_t k = 0; k < idx->rank; k++) dims[r++] = idx->dims[k];
  for (uint32_t k = ax + 1; k < tab->rank; k++) dims[r++] = tab->dims[k];
  RLX_TRY(ru_need_out_dims(n, out, rank, dims));
  size_t outer, len, inner, esz = ru_esz(out), nidx = rlx_tensor_numel(&in[1]);
  ru_split_axis(tab, ax, &outer, &len, &inner);
  /* Check every index once before moving data, so an error leaves a clear message. */
  for (size_t j = 0; j < nidx; j++) {
    int64_t v;
    if (!read_index(in[1].data, it, j, &v))
      return rlx_kernel_error(n, "index %zu of operand 1 is %g, which is not an integer", j,
                              rlx_elem_get(in[1].data, it, j));
    if (v < 0 || (uint64_t)v >= len)
      return rlx_kernel_error(n,
                              "index %lld (element %zu of operand 1) is out of range: axis %u of the table %s has "
                              "size %zu, valid indices are [0, %zu)",
                              (long long)v, j, ax, ru_fmt(tab), len, len);
  }
  size_t chunk = inner * esz;
  char *dst = out->data;
  for (size_t o = 0; o < outer && chunk; o++)
    for (size_t j = 0; j < nidx; j++) {
      int64_t v = 0;
      read_index(in[1].data, it, j, &v);
      memcpy(dst, (const char *)in[0].data + (o * len + (size_t)v) * chunk, chunk);
      dst += chunk;
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(Reverse) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  const rlx_ilist *axes = &n->attrs.Reverse.axes;
  uint32_t flip = 0;
  for (uint32_t k = 0; k < axes->n; k++) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axes", axes->v[k], x->rank, &ax));
    flip |= 1u << ax;
  }
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(x, i, c);
    for (uint32_t k = 0; k < x->rank; k++)
      if (flip & (1u << k)) c[k] = x->dims[k] - 1 - c[k];
    ru_copy_elem(out->data, i, in[0].data, offset_of(c, st, x->rank), esz);
  }
  return RLX_OK;
}

/* Source coordinate for padded coordinate p (p - before in [-before, d + after)) of an axis of
 * extent d; -1 means "the constant". Valid modes keep the result inside [0, d). */
static int64_t pad_source(rlx_pad_mode mode, int64_t i, int64_t d) {
  if (i >= 0 && i < d) return i;
  switch (mode) {
  case RLX_PAD_MODE_REFLECT: return i < 0 ? -i : 2 * (d - 1) - i; /* mirror, edge not repeated */
  case RLX_PAD_MODE_REPLICATE: return i < 0 ? 0 : d - 1;
  case RLX_PAD_MODE_CIRCULAR: return ((i % d) + d) % d;
  default: return -1;
  }
}

RLX_CPU_KERNEL(Pad) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_attrs_Pad *a = &n->attrs.Pad;
  const rlx_shape *x = &in[0].shape;
  rlx_pad_mode mode = (rlx_pad_mode)a->mode;
  if ((unsigned)mode >= RLX_PAD_MODE_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mode %d is not a PadMode", (int)mode);
  if (a->pads.n != 2u * x->rank)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attribute pads has %u entries; operand 0 %s needs %u (before, after per axis)", a->pads.n,
                    ru_fmt(x), 2u * x->rank);
  int64_t dims[RLX_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t before = a->pads.v[2 * k], after = a->pads.v[2 * k + 1], d = x->dims[k];
    int64_t most = before > after ? before : after;
    bool ok = before >= 0 && after >= 0 && before <= INT32_MAX && after <= INT32_MAX;
    if (ok && most > 0) {
      if (mode == RLX_PAD_MODE_REFLECT)
        ok = most < d;
      else if (mode == RLX_PAD_MODE_CIRCULAR)
        ok = most <= d;
      else if (mode == RLX_PAD_MODE_REPLICATE)
        ok = d > 0;
    }
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "attribute pads: (%lld, %lld) on axis %u of extent %lld is not valid for %s "
                      "padding",
                      (long long)before, (long long)after, k, (long long)d, rlx_enum_pad_mode.names[mode]);
    dims[k] = d + before + after;
  }
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  /* The fill value as one element of the output dtype. */
  unsigned char fill[16] = {0};
  ru_store(fill, ru_dt(out), 0, (double)a->value);
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(&out->shape, i, c);
    bool constant = false;
    for (uint32_t k = 0; k < x->rank && !constant; k++) {
      c[k] = pad_source(mode, c[k] - a->pads.v[2 * k], x->dims[k]);
      constant = c[k] < 0;
    }
    if (constant)
      memcpy((char *)out->data + i * esz, fill, esz);
    else
      ru_copy_elem(out->data, i, in[0].data, offset_of(c, st, x->rank), esz);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Slice) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_attrs_Slice *a = &n->attrs.Slice;
  const rlx_shape *x = &in[0].shape;
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", a->axis, x->rank, &ax));
  int64_t d = x->dims[ax];
  if (a->step == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute step is 0");
  if (a->len < 0) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute len is %lld; it must be >= 0", (long long)a->len);
  if (a->len > 0) {
    int64_t span, last;
    bool ok = !__builtin_mul_overflow(a->len - 1, a->step, &span) && !__builtin_add_overflow(a->start, span, &last) &&
              a->start >= 0 && a->start < d && last >= 0 && last < d;
    if (!ok)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "attributes start %lld, len %lld, step %lld leave axis %u of operand 0 %s", (long long)a->start,
                      (long long)a->len, (long long)a->step, ax, ru_fmt(x));
  }
  int64_t dims[RLX_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[ax] = a->len;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  size_t outer, len, inner, esz = ru_esz(out);
  ru_split_axis(x, ax, &outer, &len, &inner);
  char *dst = out->data;
  for (size_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < a->len; j++) {
      size_t src = (size_t)(a->start + j * a->step);
      memcpy(dst, (const char *)in[0].data + (o * len + src) * inner * esz, inner * esz);
      dst += inner * esz;
    }
  return RLX_OK;
}

RLX_CPU_KERNEL(Tile) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_ilist *reps = &n->attrs.Tile.reps;
  const rlx_shape *x = &in[0].shape;
  if (reps->n != x->rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute reps has %u entries; operand 0 %s has rank %u", reps->n,
                    ru_fmt(x), x->rank);
  int64_t dims[RLX_MAX_RANK];
  for (uint32_t k = 0; k < x->rank; k++)
    if (reps->v[k] < 0 || __builtin_mul_overflow(x->dims[k], reps->v[k], &dims[k]))
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute reps: entry %u is %lld", k, (long long)reps->v[k]);
  RLX_TRY(ru_need_out_dims(n, out, x->rank, dims));
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(&out->shape, i, c);
    for (uint32_t k = 0; k < x->rank; k++) c[k] %= x->dims[k]; /* non-empty output: every extent > 0 */
    ru_copy_elem(out->data, i, in[0].data, offset_of(c, st, x->rank), esz);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Trilu) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_shape *x = &in[0].shape;
  if (x->rank < 2) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 %s needs rank >= 2", ru_fmt(x));
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  bool upper = n->attrs.Trilu.upper;
  int64_t diag = n->attrs.Trilu.diagonal;
  size_t rows = (size_t)x->dims[x->rank - 2], cols = (size_t)x->dims[x->rank - 1];
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  if (count) memcpy(out->data, in[0].data, count * esz);
  for (size_t i = 0; i < count; i++) {
    int64_t col = (int64_t)(i % cols), row = (int64_t)((i / cols) % rows);
    bool keep = upper ? col - row >= diag : col - row <= diag;
    if (!keep) memset((char *)out->data + i * esz, 0, esz);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Roll) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_out_dtype(n, in, out));
  const rlx_attrs_Roll *a = &n->attrs.Roll;
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (a->shifts.n != a->dims.n)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute shifts has %u entries but dims has %u", a->shifts.n, a->dims.n);
  /* Pairs apply in order; shifts on one axis add up (mod its extent). */
  int64_t shift[RLX_MAX_RANK] = {0};
  for (uint32_t k = 0; k < a->dims.n; k++) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "dims", a->dims.v[k], x->rank, &ax));
    int64_t d = x->dims[ax];
    if (d > 0) shift[ax] = (shift[ax] + ((a->shifts.v[k] % d) + d) % d) % d;
  }
  int64_t st[RLX_MAX_RANK], c[RLX_MAX_RANK];
  rlx_strides(x, st);
  size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
  for (size_t i = 0; i < count; i++) {
    ru_unravel(x, i, c);
    for (uint32_t k = 0; k < x->rank; k++) c[k] = (c[k] - shift[k] + x->dims[k]) % x->dims[k];
    ru_copy_elem(out->data, i, in[0].data, offset_of(c, st, x->rank), esz);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(KvAppend) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(need_out_dtype(n, in, out));
  RLX_TRY(ru_need_dtype(n, in, 1, ru_dt(out)));
  const rlx_shape *cache = &in[0].shape, *row = &in[1].shape;
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.KvAppend.axis, cache->rank, &ax));
  int64_t pos = n->attrs.KvAppend.pos;
  bool ok = row->rank == cache->rank && row->dims[ax] == 1;
  for (uint32_t k = 0; ok && k < cache->rank; k++) ok = k == ax || row->dims[k] == cache->dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (row) %s does not fit the cache %s with extent 1 on axis %u",
                    ru_fmt(row), ru_fmt(cache), ax);
  if (pos < 0 || pos >= cache->dims[ax])
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute pos is %lld; the cache %s holds positions [0, %lld) on axis %u",
                    (long long)pos, ru_fmt(cache), (long long)cache->dims[ax], ax);
  int64_t dims[RLX_MAX_RANK];
  memcpy(dims, cache->dims, sizeof dims);
  dims[ax] = pos + 1;
  RLX_TRY(ru_need_out_dims(n, out, cache->rank, dims));
  /* out[.., k, ..] = cache[.., k, ..] for k < pos, and row[.., 0, ..] at k = pos. */
  size_t outer, cap, inner, esz = ru_esz(out);
  ru_split_axis(cache, ax, &outer, &cap, &inner);
  size_t prefix = (size_t)pos * inner * esz, slab = inner * esz;
  char *dst = out->data;
  for (size_t o = 0; o < outer && slab; o++) {
    if (prefix) memcpy(dst, (const char *)in[0].data + o * cap * slab, prefix);
    memcpy(dst + prefix, (const char *)in[1].data + o * slab, slab);
    dst += prefix + slab;
  }
  return RLX_OK;
}
