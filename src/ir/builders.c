/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* One typed builder per op (expanded from ops.def) plus convenience builders. */
#include <string.h>

#include "ir_internal.h"

#define RLX_OP(N, FAM, LO, HI, PROPS)                                                                              \
  rlx_status rlx_build_##N(rlx_graph *g, const rlx_id *inputs, uint32_t n_inputs, const char *name, rlx_id *out) { \
    return rlx_graph_add(g, RLX_OP_##N, inputs, n_inputs, NULL, NULL, name, out);                                  \
  }
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS)                                                                \
  rlx_status rlx_build_##N(rlx_graph *g, const rlx_id *inputs, uint32_t n_inputs, const rlx_attrs_##N *attrs, \
                           const char *name, rlx_id *out) {                                                   \
    return rlx_graph_add(g, RLX_OP_##N, inputs, n_inputs, attrs, NULL, name, out);                            \
  }
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA

static rlx_status leaf(rlx_graph *g, rlx_op op, const char *name, rlx_shape shape, rlx_id *out) {
  if (!name || !*name) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s needs a non-empty name", rlx_op_name(op));
  if (rlx_graph_find_leaf(g, op, name) != RLX_NO_ID)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "graph @%s already has an %s named \"%s\"", rlx_graph_name(g),
                      rlx_op_name(op), name);
  rlx_attrs a;
  rlx_attrs_init(op, &a);
  if (op == RLX_OP_Input)
    a.Input.name = name;
  else
    a.Param.name = name;
  return rlx_graph_add(g, op, NULL, 0, &a, &shape, NULL, out);
}

rlx_status rlx_input(rlx_graph *g, const char *name, rlx_shape shape, rlx_id *out) {
  return leaf(g, RLX_OP_Input, name, shape, out);
}

rlx_status rlx_param(rlx_graph *g, const char *name, rlx_shape shape, rlx_id *out) {
  return leaf(g, RLX_OP_Param, name, shape, out);
}

rlx_status rlx_constant(rlx_graph *g, rlx_shape shape, const void *data, size_t nbytes, rlx_id *out) {
  rlx_attrs_Constant a = {.data = {.p = (uint8_t *)data, .n = nbytes}};
  return rlx_graph_add(g, RLX_OP_Constant, NULL, 0, &a, &shape, NULL, out);
}

rlx_status rlx_scalar_f32(rlx_graph *g, float v, rlx_id *out) {
  return rlx_constant(g, rlx_shape_scalar(RLX_F32), &v, sizeof v, out);
}

rlx_status rlx_activation(rlx_graph *g, rlx_act act, rlx_id x, rlx_id *out) {
  rlx_attrs_Activation a = {.kind = act};
  return rlx_build_Activation(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_binary(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_attrs_Binary at = {.op = op};
  rlx_id in[2] = {a, b};
  return rlx_build_Binary(g, in, 2, &at, NULL, out);
}

rlx_status rlx_compare(rlx_graph *g, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_attrs_Compare at = {.op = op};
  rlx_id in[2] = {a, b};
  return rlx_build_Compare(g, in, 2, &at, NULL, out);
}

rlx_status rlx_matmul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_id in[2] = {a, b};
  return rlx_build_MatMul(g, in, 2, NULL, out);
}

rlx_status rlx_reshape(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *new_shape, rlx_id *out) {
  rlx_attrs_Reshape a = {.new_shape = {.v = (int64_t *)new_shape, .n = rank}};
  return rlx_build_Reshape(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_transpose(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out) {
  rlx_attrs_Transpose a = {.perm = {.v = (int64_t *)perm, .n = rank}};
  return rlx_build_Transpose(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_reduce_axes(rlx_graph *g, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes, bool keep_dim,
                           rlx_id *out) {
  rlx_attrs_Reduce a = {.op = op, .axes = {.v = (int64_t *)axes, .n = n_axes}, .keep_dim = keep_dim};
  return rlx_build_Reduce(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_cast(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out) {
  rlx_attrs_Cast a = {.to = to};
  return rlx_build_Cast(g, &x, 1, &a, NULL, out);
}
