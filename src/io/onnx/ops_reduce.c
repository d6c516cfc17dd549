/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX reductions (Reduce* with axes as attribute or input, keepdims, noop_with_empty_axes),
 * ArgMax / ArgMin (select_last_index through a reversed axis), TopK (any axis, largest or
 * smallest, values through GatherElements) and CumSum (exclusive, reverse). */
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* Reads the reduce axes: attribute before `input_from`, else input 1. *all = reduce every axis;
 * *noop = return the input unchanged. */
static rlx_status reduce_axes(oi_node *c, int64_t input_from, int64_t *axes, uint32_t *n, bool *noop) {
  const rlx_shape *xs = oi_in_shape(c, 0);
  int64_t *v = NULL;
  size_t cnt = 0;
  bool present;
  if (c->opset < input_from) {
    const int64_t *a;
    RLX_TRY(oi_attr_ints(c, "axes", &a, &cnt, &present));
    v = (int64_t *)a;
  } else {
    present = oi_has(c, 1);
    if (present) RLX_TRY(oi_in_ints(c, 1, "axes", &v, &cnt));
  }
  int64_t noop_empty = 0;
  if (c->opset >= input_from) RLX_TRY(oi_attr_i(c, "noop_with_empty_axes", 0, &noop_empty));
  *noop = false;
  *n = 0;
  if (!present || cnt == 0) {
    *noop = noop_empty != 0;
    for (uint32_t i = 0; i < xs->rank; i++) axes[(*n)++] = i;
    return RLX_OK;
  }
  if (cnt > RLX_MAX_RANK) return oi_bad(c, "axes has %zu entries", cnt);
  bool seen[RLX_MAX_RANK] = {false};
  for (size_t i = 0; i < cnt; i++) {
    uint32_t a;
    RLX_TRY(oi_axis(c, v[i], xs->rank, "axes entry", &a));
    if (seen[a]) return oi_bad(c, "axis %u is listed twice", a);
    seen[a] = true;
    axes[(*n)++] = a;
  }
  return RLX_OK;
}

static rlx_status map_reduce(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  const char *op = c->np->op_type + 6; /* after "Reduce" */
  int64_t axes[RLX_MAX_RANK], keep;
  uint32_t n;
  bool noop;
  RLX_TRY(reduce_axes(c, strcmp(op, "Sum") == 0 ? 13 : 18, axes, &n, &noop));
  RLX_TRY(oi_attr_i(c, "keepdims", 1, &keep));
  rlx_id x = c->in[0], y;
  if (noop) {
    c->out[0] = x;
    return RLX_OK;
  }
  if (oi_shape(c, x)->rank == 0) { /* a scalar reduces to itself (through the element function) */
    n = 0;
  }
  if (strcmp(op, "Sum") == 0) return oi_reduce(c, RLX_REDUCE_SUM, x, axes, n, keep, &c->out[0]);
  if (strcmp(op, "Mean") == 0) return oi_reduce(c, RLX_REDUCE_MEAN, x, axes, n, keep, &c->out[0]);
  bool mx = strcmp(op, "Max") == 0;
  if (mx || strcmp(op, "Min") == 0) {
    rlx_reduce r = mx ? RLX_REDUCE_MAX : RLX_REDUCE_MIN;
    if (oi_shape(c, x)->dtype != RLX_BOOL) return oi_reduce(c, r, x, axes, n, keep, &c->out[0]);
    /* opset 20: bool max = any, min = all (through u8) */
    RLX_TRY(oi_cast(c, x, RLX_U8, &y));
    RLX_TRY(oi_reduce(c, r, y, axes, n, keep, &y));
    return oi_cast(c, y, RLX_BOOL, &c->out[0]);
  }
  if (strcmp(op, "Prod") == 0) return oi_reduce(c, RLX_REDUCE_PROD, x, axes, n, keep, &c->out[0]);
  if (strcmp(op, "L1") == 0) {
    RLX_TRY(oi_unary(c, RLX_ACT_ABS, x, &y));
    return oi_reduce(c, RLX_REDUCE_SUM, y, axes, n, keep, &c->out[0]);
  }
  if (strcmp(op, "L2") == 0 || strcmp(op, "SumSquare") == 0) {
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &y));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, y, axes, n, keep, &y));
    if (op[0] == 'S') {
      c->out[0] = y;
      return RLX_OK;
    }
    if (!rlx_dtype_is_float((rlx_dtype)oi_shape(c, y)->dtype)) return oi_unsupported(c, "integer ReduceL2");
    return oi_unary(c, RLX_ACT_SQRT, y, &c->out[0]);
  }
  if (!rlx_dtype_is_float((rlx_dtype)oi_shape(c, x)->dtype)) return oi_unsupported(c, "integer Reduce%s", op);
  if (strcmp(op, "LogSum") == 0) {
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, x, axes, n, keep, &y));
    return oi_unary(c, RLX_ACT_LOG, y, &c->out[0]);
  }
  if (strcmp(op, "LogSumExp") == 0) { /* m + log(sum(exp(x - m))), m = max (finite-safe) */
    rlx_id m, z, s, zero, fin, mk;
    RLX_TRY(oi_reduce(c, RLX_REDUCE_MAX, x, axes, n, true, &m));
    /* an all -inf (or +inf) slice would give inf - inf: shift by 0 there */
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, m, m, &fin));
    RLX_TRY(oi_cmp(c, RLX_CMP_EQ, fin, fin, &fin));
    RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, x)->dtype, 0, &zero));
    RLX_TRY(oi_where(c, fin, m, zero, &mk));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, mk, &z));
    RLX_TRY(oi_unary(c, RLX_ACT_EXP, z, &z));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, z, axes, n, true, &s));
    RLX_TRY(oi_unary(c, RLX_ACT_LOG, s, &s));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, s, mk, &y));
    if (keep) {
      c->out[0] = y;
      return RLX_OK;
    }
    return oi_reduce(c, RLX_REDUCE_SUM, y, axes, n, false, &c->out[0]); /* drop the unit axes */
  }
  return rlx_errorf(RLX_ERR_INTERNAL, "no reduction for %s", c->np->op_type);
}

static rlx_status reverse_axis(oi_node *c, rlx_id x, uint32_t a, rlx_id *out) {
  int64_t ax = a;
  rlx_attrs_Reverse ra = {.axes = {.v = &ax, .n = 1}};
  return oi_emit(c, RLX_OP_Reverse, &x, 1, &ra, out);
}

static rlx_status map_argmax(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  int64_t axis, keep, last = 0;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  RLX_TRY(oi_attr_i(c, "keepdims", 1, &keep));
  if (c->opset >= 12) RLX_TRY(oi_attr_i(c, "select_last_index", 0, &last));
  rlx_id x = c->in[0], y;
  const rlx_shape *xs = oi_shape(c, x);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs->rank, "attribute axis", &a));
  rlx_dim d = xs->dims[a];
  if (last) {
    if (!rlx_dim_is_static(d)) return oi_unsupported(c, "select_last_index over a symbolic axis");
    RLX_TRY(reverse_axis(c, x, a, &x));
  }
  bool is_max = strcmp(c->np->op_type, "ArgMax") == 0;
  if (is_max) {
    rlx_attrs_ArgMax aa = {.axis = a, .keep_dim = keep != 0};
    RLX_TRY(oi_emit(c, RLX_OP_ArgMax, &x, 1, &aa, &y));
  } else {
    rlx_attrs_ArgMin aa = {.axis = a, .keep_dim = keep != 0};
    RLX_TRY(oi_emit(c, RLX_OP_ArgMin, &x, 1, &aa, &y));
  }
  RLX_TRY(oi_cast(c, y, RLX_I64, &y));
  if (last) { /* index in the reversed axis -> d - 1 - index */
    rlx_id top;
    RLX_TRY(oi_scalar(c, RLX_I64, (double)(d - 1), &top));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, top, y, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

static rlx_status map_topk(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  int64_t k, axis, largest = 1, sorted = 1;
  if (c->opset < 10) {
    RLX_TRY(oi_attr_i(c, "k", -1, &k));
  } else {
    int64_t *kv;
    size_t kn;
    RLX_TRY(oi_in_ints(c, 1, "K", &kv, &kn));
    if (kn != 1) return oi_bad(c, "input K must hold one value");
    k = kv[0];
  }
  RLX_TRY(oi_attr_i(c, "axis", -1, &axis));
  if (c->opset >= 11) {
    RLX_TRY(oi_attr_i(c, "largest", 1, &largest));
    RLX_TRY(oi_attr_i(c, "sorted", 1, &sorted));
  }
  (void)sorted; /* results are always sorted, which "unsorted" allows */
  rlx_id x = c->in[0], xt, key, idx, vals;
  const rlx_shape xs = *oi_shape(c, x);
  uint32_t a, last = xs.rank ? xs.rank - 1u : 0;
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  rlx_dim n = xs.dims[a];
  if (k < 0 || (rlx_dim_is_static(n) && k > n))
    return oi_bad(c, "k = %lld is out of range for an axis of %lld", (long long)k, (long long)n);
  int64_t perm[RLX_MAX_RANK];
  for (uint32_t i = 0; i < xs.rank; i++) perm[i] = i;
  perm[a] = last, perm[last] = a;
  RLX_TRY(oi_transpose(c, x, perm, &xt));
  key = xt;
  if (!largest) {
    rlx_dtype t = (rlx_dtype)xs.dtype;
    if (t == RLX_U8 || t == RLX_U32) {
      rlx_id top;
      RLX_TRY(oi_scalar(c, t, t == RLX_U8 ? 255.0 : 4294967295.0, &top));
      RLX_TRY(oi_bin(c, RLX_BINOP_SUB, top, xt, &key));
    } else {
      RLX_TRY(oi_unary(c, RLX_ACT_NEG, xt, &key));
    }
  }
  if (k == 0) return oi_unsupported(c, "k = 0 (an empty result)");
  rlx_attrs_TopK ta = {.k = k};
  RLX_TRY(oi_emit(c, RLX_OP_TopK, &key, 1, &ta, &idx));
  RLX_TRY(oi_cast(c, idx, RLX_I64, &idx));
  rlx_attrs_GatherElements ga = {.axis = last};
  rlx_id gin[2] = {xt, idx};
  RLX_TRY(oi_emit(c, RLX_OP_GatherElements, gin, 2, &ga, &vals));
  RLX_TRY(oi_transpose(c, vals, perm, &c->out[0]));
  if (c->n_out > 1) RLX_TRY(oi_transpose(c, idx, perm, &c->out[1]));
  return RLX_OK;
}

static rlx_status map_cumsum(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "x"));
  int64_t *av;
  size_t an;
  RLX_TRY(oi_in_ints(c, 1, "axis", &av, &an));
  if (an != 1) return oi_bad(c, "input axis must hold one value");
  int64_t excl, rev;
  RLX_TRY(oi_attr_i(c, "exclusive", 0, &excl));
  RLX_TRY(oi_attr_i(c, "reverse", 0, &rev));
  rlx_id x = c->in[0], y;
  uint32_t a;
  RLX_TRY(oi_axis(c, av[0], oi_shape(c, x)->rank, "input axis", &a));
  if (rev) RLX_TRY(reverse_axis(c, x, a, &x));
  if (strcmp(c->np->op_type, "CumProd") == 0) { /* opset 26 */
    rlx_attrs_CumProd pa = {.axis = a, .exclusive = excl != 0};
    RLX_TRY(oi_emit(c, RLX_OP_CumProd, &x, 1, &pa, &y));
  } else {
    rlx_attrs_Cumsum ca = {.axis = a, .exclusive = excl != 0};
    RLX_TRY(oi_emit(c, RLX_OP_Cumsum, &x, 1, &ca, &y));
  }
  if (rev) RLX_TRY(reverse_axis(c, y, a, &y));
  c->out[0] = y;
  return RLX_OK;
}

const oi_op_entry oi_ops_reduce[] = {
    {"ReduceSum", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceMean", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceMax", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceMin", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceProd", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceL1", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceL2", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceLogSum", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceLogSumExp", 1, OI_MAX_OPSET, map_reduce},
    {"ReduceSumSquare", 1, OI_MAX_OPSET, map_reduce},
    {"ArgMax", 1, OI_MAX_OPSET, map_argmax},
    {"ArgMin", 1, OI_MAX_OPSET, map_argmax},
    {"TopK", 1, OI_MAX_OPSET, map_topk},
    {"CumSum", 11, OI_MAX_OPSET, map_cumsum},
    {"CumProd", 26, OI_MAX_OPSET, map_cumsum},
};
const uint32_t oi_ops_reduce_len = sizeof oi_ops_reduce / sizeof oi_ops_reduce[0];
