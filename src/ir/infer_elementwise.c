/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: leaves and elementwise ops (spec ir-core §10.1). */
#include "ir_internal.h"

rlx_status rlx_infer_Input(const rlx_infer_ctx *c, rlx_shape *out) { return rlx_infer_from_declared(c, out); }
rlx_status rlx_infer_Param(const rlx_infer_ctx *c, rlx_shape *out) { return rlx_infer_from_declared(c, out); }
rlx_status rlx_infer_Constant(const rlx_infer_ctx *c, rlx_shape *out) { return rlx_infer_from_declared(c, out); }

static rlx_status same_as_operand0(const rlx_infer_ctx *c, rlx_shape *out) {
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_Activation(const rlx_infer_ctx *c, rlx_shape *out) {
  rlx_dtype t = (rlx_dtype)c->in[0]->dtype;
  if (t == RLX_BOOL) return rlx_shape_error("operand 0 is bool; activations need a numeric dtype");
  return same_as_operand0(c, out);
}

rlx_status rlx_infer_Cast(const rlx_infer_ctx *c, rlx_shape *out) {
  *out = *c->in[0];
  out->dtype = (uint8_t)c->a->Cast.to;
  return RLX_OK;
}

rlx_status rlx_infer_StopGradient(const rlx_infer_ctx *c, rlx_shape *out) { return same_as_operand0(c, out); }

rlx_status rlx_infer_Binary(const rlx_infer_ctx *c, rlx_shape *out) {
  rlx_binop op = (rlx_binop)c->a->Binary.op;
  rlx_dtype t = (rlx_dtype)c->in[0]->dtype;
  bool bitwise = op == RLX_BINOP_BIT_AND || op == RLX_BINOP_BIT_OR || op == RLX_BINOP_BIT_XOR || op == RLX_BINOP_SHL ||
                 op == RLX_BINOP_SHR;
  if (bitwise && (rlx_dtype_is_float(t) || rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX) &&
      !(op != RLX_BINOP_SHL && op != RLX_BINOP_SHR && t == RLX_BOOL))
    return rlx_shape_error("attribute op: %s needs integer (or bool) operands, operand 0 is %s",
                           rlx_enum_binop.names[op], rlx_dtype_name(t));
  if (c->in[0]->dtype != c->in[1]->dtype)
    return rlx_shape_error("operands have different dtypes (%s and %s); insert a Cast", rlx_dtype_name(t),
                           rlx_dtype_name((rlx_dtype)c->in[1]->dtype));
  return rlx_broadcast(c->in[0], c->in[1], out);
}

rlx_status rlx_infer_Compare(const rlx_infer_ctx *c, rlx_shape *out) {
  if (c->in[0]->dtype != c->in[1]->dtype)
    return rlx_shape_error("operands have different dtypes (%s and %s); insert a Cast",
                           rlx_dtype_name((rlx_dtype)c->in[0]->dtype), rlx_dtype_name((rlx_dtype)c->in[1]->dtype));
  RLX_TRY(rlx_broadcast(c->in[0], c->in[1], out));
  out->dtype = RLX_BOOL;
  return RLX_OK;
}

rlx_status rlx_infer_Where(const rlx_infer_ctx *c, rlx_shape *out) {
  if (c->in[1]->dtype != c->in[2]->dtype)
    return rlx_shape_error("operands 1 and 2 have different dtypes (%s and %s)",
                           rlx_dtype_name((rlx_dtype)c->in[1]->dtype), rlx_dtype_name((rlx_dtype)c->in[2]->dtype));
  rlx_shape tf;
  RLX_TRY(rlx_broadcast(c->in[1], c->in[2], &tf));
  RLX_TRY(rlx_broadcast(c->in[0], &tf, out));
  out->dtype = c->in[1]->dtype;
  return RLX_OK;
}

rlx_status rlx_infer_Fma(const rlx_infer_ctx *c, rlx_shape *out) {
  for (uint32_t i = 1; i < 3; i++)
    if (c->in[i]->dtype != c->in[0]->dtype)
      return rlx_shape_error("operand %u has dtype %s; Fma needs all operands of dtype %s", i,
                             rlx_dtype_name((rlx_dtype)c->in[i]->dtype), rlx_dtype_name((rlx_dtype)c->in[0]->dtype));
  rlx_shape ab;
  RLX_TRY(rlx_broadcast(c->in[0], c->in[1], &ab));
  return rlx_broadcast(&ab, c->in[2], out);
}

rlx_status rlx_infer_Clamp(const rlx_infer_ctx *c, rlx_shape *out) {
  if (!(c->a->Clamp.min <= c->a->Clamp.max))
    return rlx_shape_error("attribute min (%g) must not exceed attribute max (%g)", (double)c->a->Clamp.min,
                           (double)c->a->Clamp.max);
  return same_as_operand0(c, out);
}
