/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: CumsumBackward and GatherBackward (spec ir-special §8).
 *
 *   CumsumBackward [dy] -> dx: the reverse (suffix) sum along axis: dx_i = sum_{j >= i} dy_j, or
 *       with exclusive sum_{j > i} dy_j. Floats sum in double, integers exactly in int64
 *       (saturating). A scalar is a sequence of one element.
 *   GatherBackward [dy, indices] -> table (declared shape): a zero table into which every slice
 *       of dy is added at its index along axis (duplicates accumulate). Indices follow Gather: any
 *       integer dtype or integral floats, no negative wrap; out of range is RLX_ERR_RUNTIME. (ScanBackward and ScanBackwardXs
 * are driven by the runtime: src/runtime/control.c). */
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

/* ======================================================================================
 * CumsumBackward
 * ====================================================================================== */

RLX_CPU_KERNEL(CumsumBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (dy) has dtype %s; CumsumBackward needs a real dtype",
                    rlx_dtype_name(t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axis", n->attrs.CumsumBackward.axis, x->rank, &ax));
    ru_split_axis(x, ax, &outer, &len, &inner);
  }
  bool exclusive = n->attrs.CumsumBackward.exclusive, ints = rlx_dtype_is_int(t);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      double acc = 0.0;
      int64_t iacc = 0;
      for (size_t k = len; k-- > 0;) {
        size_t at = (o * len + k) * inner + i;
        if (exclusive) { /* the sum of the elements after k */
          if (ints)
            ru_store_i64(out->data, t, at, iacc);
          else
            ru_store(out->data, t, at, acc);
        }
        if (ints)
          iacc = rb_sat_add(iacc, rlx_elem_get_i64(in[0].data, t, at));
        else
          acc += rlx_elem_get(in[0].data, t, at);
        if (!exclusive) {
          if (ints)
            ru_store_i64(out->data, t, at, iacc);
          else
            ru_store(out->data, t, at, acc);
        }
      }
    }
  return RLX_OK;
}

/* ======================================================================================
 * GatherBackward
 * ====================================================================================== */

RLX_CPU_KERNEL(GatherBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (dy) has dtype %s; GatherBackward needs a real dtype",
                    rlx_dtype_name(t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  const rlx_shape *tab = &out->shape, *dy = &in[0].shape, *idx = &in[1].shape;
  if (tab->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "the output (table) is a scalar; it needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.GatherBackward.axis, tab->rank, &ax));
  /* dy must be table[..ax] ++ indices ++ table[ax+1..]. */
  bool ok = dy->rank == tab->rank - 1 + idx->rank;
  for (uint32_t k = 0; ok && k < dy->rank; k++) {
    int64_t want = k < ax ? tab->dims[k] : k < ax + idx->rank ? idx->dims[k - ax] : tab->dims[k - idx->rank + 1];
    ok = dy->dims[k] == want;
  }
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 0 (dy) has shape %s; gathering the table %s along axis %u with "
                    "indices %s gives a different shape",
                    ru_fmt(dy), ru_fmt(tab), ax, ru_fmt(idx));
  size_t outer, L, inner, nidx = rlx_tensor_numel(&in[1]);
  ru_split_axis(tab, ax, &outer, &L, &inner);
  int64_t *pos;
  RLX_TRY(rb_alloc(n, nidx, sizeof *pos, &pos));
  rlx_status st = RLX_OK;
  for (size_t j = 0; j < nidx && !st; j++)
    st = rb_read_index(n, in, 1, j, (int64_t)L, false, "the table axis", &pos[j]);
  bool ints = rlx_dtype_is_int(t);
  size_t total = rlx_tensor_numel(out);
  double *acc = NULL;
  int64_t *iacc = NULL;
  if (!st) st = ints ? rb_calloc(n, total, sizeof *iacc, &iacc) : rb_calloc(n, total, sizeof *acc, &acc);
  for (size_t o = 0; o < outer && !st; o++)
    for (size_t j = 0; j < nidx; j++)
      for (size_t i = 0; i < inner; i++) {
        size_t src = (o * nidx + j) * inner + i, dst = (o * L + (size_t)pos[j]) * inner + i;
        if (ints)
          iacc[dst] = rb_sat_add(iacc[dst], rlx_elem_get_i64(in[0].data, t, src));
        else
          acc[dst] += rlx_elem_get(in[0].data, t, src);
      }
  if (!st) {
    if (ints)
      for (size_t i = 0; i < total; i++) ru_store_i64(out->data, t, i, iacc[i]);
    else
      rb_store_all(out, acc);
  }
  free(pos);
  free(acc);
  free(iacc);
  return st;
}
