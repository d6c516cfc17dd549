/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shape-rule table (one rule per op kind, expanded from ops.def) and helpers for rules. */
#include <stdio.h>
#include <string.h>

#include "ir_internal.h"

const rlx_infer_fn rlx_infer_table[RLX_OP_COUNT] = {
#define RLX_OP(N, FAM, LO, HI, PROPS) [RLX_OP_##N] = rlx_infer_##N,
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) RLX_OP(N, FAM, LO, HI, PROPS)
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
};

rlx_status rlx_infer(const rlx_graph *g, rlx_op op, const rlx_shape *const *in, uint32_t n_in, const rlx_attrs *attrs,
                     const rlx_shape *declared, rlx_shape *out) {
  rlx_infer_ctx c = {g, op, attrs, in, n_in, declared};
  memset(out, 0, sizeof *out);
  /* Rules read c->in[k] for k below the op's arity: check the range once for every rule. */
  uint32_t lo = rlx_op_min_inputs(op), hi = rlx_op_max_inputs(op);
  if (n_in < lo || n_in > hi) {
    if (lo == hi) return rlx_errorf(RLX_ERR_VERIFY, "%s needs exactly %u operands, got %u", rlx_op_name(op), lo, n_in);
    if (hi == RLX_ARITY_VARIADIC)
      return rlx_errorf(RLX_ERR_VERIFY, "%s needs at least %u operands, got %u", rlx_op_name(op), lo, n_in);
    return rlx_errorf(RLX_ERR_VERIFY, "%s needs %u to %u operands, got %u", rlx_op_name(op), lo, hi, n_in);
  }
  /* Rules index dims by rank and tables by dtype: reject malformed operand shapes up front
   * (nodes added with rlx_graph_add_unchecked or read from files may carry them). */
  for (uint32_t i = 0; i < n_in; i++)
    if (in[i]->rank > RLX_MAX_RANK || in[i]->dtype >= RLX_DTYPE_COUNT)
      return rlx_shape_error("operand %u has a malformed shape (rank %u, dtype %u)", i, in[i]->rank, in[i]->dtype);
  if (declared && (declared->rank > RLX_MAX_RANK || declared->dtype >= RLX_DTYPE_COUNT))
    return rlx_shape_error("declared shape is malformed (rank %u, dtype %u)", declared->rank, declared->dtype);
  return rlx_infer_table[op](&c, out);
}

rlx_status rlx_shape_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_verrorf(RLX_ERR_SHAPE, fmt, ap);
  va_end(ap);
  return RLX_ERR_SHAPE;
}

const char *rlx_fmt_shape(const rlx_shape *s) {
  static _Thread_local char bufs[4][160];
  static _Thread_local int k;
  char *b = bufs[k++ & 3];
  rlx_shape_format(s, b, sizeof bufs[0]);
  return b;
}

rlx_status rlx_need_inputs(const rlx_infer_ctx *c, uint32_t n, const char *why) {
  if (c->n_in != n) return rlx_errorf(RLX_ERR_VERIFY, "needs exactly %u operands (%s), got %u", n, why, c->n_in);
  return RLX_OK;
}

rlx_status rlx_need_rank(const rlx_infer_ctx *c, uint32_t i, uint32_t lo, uint32_t hi) {
  uint32_t r = c->in[i]->rank;
  if (r < lo || r > hi) {
    if (lo == hi) return rlx_shape_error("operand %u has shape %s; expected rank %u", i, rlx_fmt_shape(c->in[i]), lo);
    return rlx_shape_error("operand %u has shape %s; expected rank %u..%u", i, rlx_fmt_shape(c->in[i]), lo, hi);
  }
  return RLX_OK;
}

rlx_status rlx_need_dtype_float(const rlx_infer_ctx *c, uint32_t i) {
  if (!rlx_dtype_is_float((rlx_dtype)c->in[i]->dtype))
    return rlx_shape_error("operand %u has dtype %s; expected a floating-point dtype", i,
                           rlx_dtype_name((rlx_dtype)c->in[i]->dtype));
  return RLX_OK;
}

bool rlx_dim_equal(rlx_dim a, rlx_dim b) { return a == b; }

rlx_status rlx_infer_from_declared(const rlx_infer_ctx *c, rlx_shape *out) {
  if (!c->declared)
    return rlx_shape_error("%s has no shape rule: give its output shape explicitly", rlx_op_name(c->op));
  *out = *c->declared;
  return RLX_OK;
}
