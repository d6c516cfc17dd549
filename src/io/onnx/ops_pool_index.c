/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pooling with flat indices: MaxPool's second output Indices (built here for ops_nn.c's MaxPool
 * only when a model reads it) and MaxUnpool, which scatters values back to those indices.
 *
 * Indices: the input is padded with -inf, every pooling window is gathered from it with a
 * constant table of padded offsets ([N, C, positions * taps]), ArgMax picks the first maximal
 * tap of each window, and a second constant table turns (position, tap) into the flat index of
 * that cell in the unpadded input (row-major, or column-major over the spatial axes for
 * storage_order 1), offset by (n * C + c) times the spatial size as ONNX counts them. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* Product of n extents; false when it passes `limit`. */
static bool extent_product(const int64_t *v, uint32_t n, int64_t limit, int64_t *out) {
  int64_t p = 1;
  for (uint32_t i = 0; i < n; i++) {
    if (v[i] < 0 || (v[i] && p > limit / v[i])) return false;
    p *= v[i];
  }
  *out = p;
  return true;
}

rlx_status oi_maxpool_indices(oi_node *c, rlx_id x, uint32_t nsp, const int64_t *k, const int64_t *s, const int64_t *d,
                              const int64_t *pb, const int64_t *pe, const int64_t *out, int64_t storage_order,
                              rlx_id *idx) {
  const rlx_shape xs = *oi_shape(c, x);
  if (!rlx_dtype_is_float((rlx_dtype)xs.dtype)) return oi_unsupported(c, "output Indices of an integer MaxPool");
  if (storage_order != 0 && storage_order != 1)
    return oi_bad(c, "attribute storage_order is %lld; expected 0 (row major) or 1 (column major)",
                  (long long)storage_order);
  int64_t in[3], padded[3], positions, taps, spatial, padded_n;
  for (uint32_t i = 0; i < nsp; i++) {
    in[i] = xs.dims[2 + i];
    padded[i] = in[i] + pb[i] + pe[i];
  }
  const int64_t lim = (int64_t)OI_MAX_CONST_BYTES / 8;
  if (!extent_product(out, nsp, lim, &positions) || !extent_product(k, nsp, lim, &taps) ||
      !extent_product(in, nsp, INT64_MAX / 2, &spatial) || !extent_product(padded, nsp, lim, &padded_n) ||
      (taps && positions > lim / taps))
    return oi_unsupported(c, "output Indices with index tables over %lld entries", (long long)lim);
  size_t cells = (size_t)(positions * taps);
  int64_t *gat = oi_scratch(c, cells * sizeof *gat), *flat = oi_scratch(c, cells * sizeof *flat);
  if (!gat || !flat) return oi_nomem(c);
  /* window cell (position p, tap t): its offset in the padded input and its index in the input */
  for (size_t p = 0; p < (size_t)positions; p++)
    for (size_t t = 0; t < (size_t)taps; t++) {
      size_t rp = p, rt = t;
      int64_t co[3];
      for (int i = (int)nsp - 1; i >= 0; i--) {
        int64_t o = (int64_t)(rp % (size_t)out[i]), j = (int64_t)(rt % (size_t)k[i]);
        rp /= (size_t)out[i];
        rt /= (size_t)k[i];
        co[i] = o * s[i] + j * d[i]; /* padded coordinate */
      }
      int64_t po = 0, fi = 0, stride = 1;
      bool inside = true;
      for (uint32_t i = 0; i < nsp; i++) po = po * padded[i] + co[i];
      for (uint32_t i = 0; i < nsp; i++) {
        uint32_t a = storage_order ? i : nsp - 1 - i; /* fastest axis first */
        int64_t u = co[a] - pb[a];
        inside &= u >= 0 && u < in[a];
        fi += u * stride;
        stride *= in[a];
      }
      gat[p * (size_t)taps + t] = po;
      flat[p * (size_t)taps + t] = inside ? fi : 0; /* a pad cell holds -inf and never wins */
    }
  rlx_id xp = x, g_ids, f_ids, win, am, sel, pos_base, off, nc;
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  bool any_pad = false;
  for (uint32_t i = 0; i < nsp; i++) {
    pads[2 * (2 + i)] = pb[i];
    pads[2 * (2 + i) + 1] = pe[i];
    any_pad |= pb[i] || pe[i];
  }
  if (any_pad) {
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 2 * xs.rank}, .mode = RLX_PAD_MODE_CONSTANT, .value = -INFINITY};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &xp, 1, &pa, &xp));
  }
  int64_t n = xs.dims[0], ch = xs.dims[1];
  int64_t d3[3] = {n, ch, padded_n};
  RLX_TRY(oi_reshape(c, xp, 3, d3, &xp));
  RLX_TRY(oi_i64s(c, gat, (uint32_t)cells, &g_ids));
  rlx_attrs_Gather ga = {.axis = 2};
  rlx_id gin[2] = {xp, g_ids};
  RLX_TRY(oi_emit(c, RLX_OP_Gather, gin, 2, &ga, &win));
  int64_t d4[4] = {n, ch, positions, taps};
  RLX_TRY(oi_reshape(c, win, 4, d4, &win));
  rlx_attrs_ArgMax aa = {.axis = 3, .keep_dim = false};
  RLX_TRY(oi_emit(c, RLX_OP_ArgMax, &win, 1, &aa, &am)); /* [N, C, positions], first maximum */
  RLX_TRY(oi_cast(c, am, RLX_I64, &am));
  /* the chosen cell's input index: flat[p * taps + tap] */
  int64_t *base = oi_scratch(c, (size_t)positions * sizeof *base);
  if (!base) return oi_nomem(c);
  for (int64_t p = 0; p < positions; p++) base[p] = p * taps;
  RLX_TRY(oi_i64s(c, base, (uint32_t)positions, &pos_base));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, am, pos_base, &sel));
  RLX_TRY(oi_i64s(c, flat, (uint32_t)cells, &f_ids));
  rlx_attrs_Gather g0 = {0};
  rlx_id fin[2] = {f_ids, sel};
  RLX_TRY(oi_emit(c, RLX_OP_Gather, fin, 2, &g0, &off));
  /* + (n * C + c) * spatial */
  size_t nch = (size_t)(n * ch);
  int64_t *chan = oi_scratch(c, (nch ? nch : 1) * sizeof *chan);
  if (!chan) return oi_nomem(c);
  for (size_t i = 0; i < nch; i++) chan[i] = (int64_t)i * spatial;
  rlx_dim cd[3] = {n, ch, 1};
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 3, cd), chan, nch * sizeof *chan, &nc));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, off, nc, &off));
  int64_t od[2 + 3] = {n, ch};
  for (uint32_t i = 0; i < nsp; i++) od[2 + i] = out[i];
  return oi_reshape(c, off, 2 + nsp, od, idx);
}

/* MaxUnpool(X, I[, output_shape]): zeros of the pooling geometry's inverse shape,
 * (in - 1) * stride + kernel - pads per spatial axis, with X's values written at the flat indices
 * I (ScatterElements on the flattened tensors); a given output_shape (at least that large) then
 * extends it with zeros at the end of each axis, as the ONNX reference does. */
static rlx_status map_maxunpool(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "I"));
  const rlx_shape xs = *oi_in_shape(c, 0), is = *oi_in_shape(c, 1);
  if (xs.rank < 3 || xs.rank > 5)
    return oi_bad(c, "input X must be [N, C, D1, ...] with 1 to 3 spatial axes, got %s", rlx_fmt_shape(&xs));
  bool same = is.dtype == RLX_I64 && is.rank == xs.rank;
  for (uint32_t i = 0; i < xs.rank && same; i++) same = is.dims[i] == xs.dims[i];
  if (!same) return oi_bad(c, "input I must be int64 of X's shape %s, got %s", rlx_fmt_shape(&xs), rlx_fmt_shape(&is));
  RLX_TRY(oi_need_static(c, &xs, "input X"));
  uint32_t nsp = xs.rank - 2u;
  int64_t k[3], s[3], pads[6];
  if (!oi_attr(c, "kernel_shape")) return oi_bad(c, "attribute kernel_shape is required");
  RLX_TRY(oi_spatial_list(c, "kernel_shape", nsp, 0, 1, k));
  RLX_TRY(oi_spatial_list(c, "strides", nsp, 1, 1, s));
  const int64_t *pv;
  size_t npv;
  bool has_pads;
  RLX_TRY(oi_attr_ints(c, "pads", &pv, &npv, &has_pads));
  if (has_pads && npv != 2 * nsp)
    return oi_bad(c, "attribute pads has %zu entries; expected %u (begin and end per spatial axis)", npv, 2 * nsp);
  for (uint32_t i = 0; i < 2 * nsp; i++) {
    pads[i] = has_pads ? pv[i] : 0;
    if (pads[i] < 0 || pads[i] > ((int64_t)1 << 31))
      return oi_bad(c, "attribute pads[%u] is %lld", i, (long long)pads[i]);
  }
  int64_t od[5] = {xs.dims[0], xs.dims[1]}, want[5];
  for (uint32_t i = 0; i < nsp; i++) {
    od[2 + i] = (xs.dims[2 + i] - 1) * s[i] + k[i] - pads[i] - pads[nsp + i];
    if (od[2 + i] < 0)
      return oi_bad(c, "the pads make spatial axis %u of the output negative (%lld)", i, (long long)od[2 + i]);
  }
  memcpy(want, od, sizeof od);
  if (oi_has(c, 2)) {
    int64_t *v;
    size_t nv;
    RLX_TRY(oi_in_ints(c, 2, "output_shape", &v, &nv));
    if (nv != xs.rank) return oi_bad(c, "input output_shape has %zu entries; X has rank %u", nv, xs.rank);
    for (uint32_t i = 0; i < xs.rank; i++) {
      if (v[i] < od[i] || v[i] > ((int64_t)1 << 40) || (i < 2 && v[i] != od[i]))
        return oi_bad(c, "output_shape[%u] is %lld; it must be %s%lld", i, (long long)v[i], i < 2 ? "" : "at least ",
                      (long long)od[i]);
      want[i] = v[i];
    }
  }
  int64_t total, grown, numel;
  if (!extent_product(od, xs.rank, (int64_t)1 << 40, &total) ||
      !extent_product(want, xs.rank, (int64_t)1 << 40, &grown) ||
      !extent_product(xs.dims, xs.rank, INT64_MAX / 2, &numel))
    return oi_unsupported(c, "an output of more than 2^40 elements");
  rlx_id zero, zeros, xf, ifl, y;
  RLX_TRY(oi_fill(c, rlx_shape_make((rlx_dtype)xs.dtype, 1, (rlx_dim[]){1}), 0, &zero));
  rlx_attrs_Expand ea = {.target_shape = {.v = &total, .n = 1}};
  RLX_TRY(oi_emit(c, RLX_OP_Expand, &zero, 1, &ea, &zeros));
  RLX_TRY(oi_reshape(c, c->in[0], 1, &numel, &xf));
  RLX_TRY(oi_reshape(c, c->in[1], 1, &numel, &ifl));
  rlx_attrs_ScatterElements sa = {.axis = 0, .reduction = RLX_SCATTER_REDUCTION_NONE};
  rlx_id in3[3] = {zeros, ifl, xf};
  RLX_TRY(oi_emit(c, RLX_OP_ScatterElements, in3, 3, &sa, &y));
  RLX_TRY(oi_reshape(c, y, xs.rank, od, &y));
  int64_t ends[2 * 5] = {0};
  bool grow = false;
  for (uint32_t i = 0; i < xs.rank; i++) {
    ends[2 * i + 1] = want[i] - od[i];
    grow |= want[i] != od[i];
  }
  if (!grow) {
    c->out[0] = y;
    return RLX_OK;
  }
  rlx_attrs_Pad pa = {.pads = {.v = ends, .n = 2 * xs.rank}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
  return oi_emit(c, RLX_OP_Pad, &y, 1, &pa, &c->out[0]);
}

const oi_op_entry oi_ops_pool_index[] = {
    {"MaxUnpool", 9, OI_MAX_OPSET, map_maxunpool},
};
const uint32_t oi_ops_pool_index_len = sizeof oi_ops_pool_index / sizeof oi_ops_pool_index[0];
