/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: control flow with bodies (If, While, Scan), CustomFn and the leaves (Input,
 * Param, Constant). Each body is built by a hook below and named in the row's `body`; the float64
 * reference implements the same body by name (tests/reference/ref_fused.py). See cases.h for the
 * row format. */
#include "cases.h"

/* An Input of child graph b with the shape of node `id` of g. */
static rlx_status ctl_input(rlx_graph *b, const rlx_graph *g, rlx_id id, const char *name, rlx_id *out) {
  return rlx_input(b, name, rlx_graph_node(g, id)->shape, out);
}

/* A constant of `like`'s shape (one element) holding v, in `like`'s float dtype. */
static rlx_status ctl_scalar(rlx_graph *b, const rlx_shape *like, double v, rlx_id *out) {
  rlx_shape s = *like;
  double d = v;
  float f = (float)v;
  if (s.dtype == RLX_F64) return rlx_constant(b, s, &d, sizeof d, out);
  s.dtype = RLX_F32;
  return rlx_constant(b, s, &f, sizeof f, out);
}

static rlx_status ctl_bin(rlx_graph *b, rlx_binop op, rlx_id x, rlx_id y, rlx_id *out) {
  return rlx_binary(b, op, x, y, out);
}

/* If(pred, x): then x * x, else -x. */
static rlx_status build_if_square_else_neg(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  rlx_graph *t = NULL, *e = NULL;
  rlx_id tx, ex, ty, ey;
  RLX_TRY(rlx_graph_create_child(g, "then", &t));
  RLX_TRY(rlx_graph_create_child(g, "else", &e));
  RLX_TRY(ctl_input(t, g, in[1], "x", &tx));
  RLX_TRY(ctl_bin(t, RLX_BINOP_MUL, tx, tx, &ty));
  RLX_TRY(rlx_graph_set_outputs(t, &ty, 1));
  RLX_TRY(ctl_input(e, g, in[1], "x", &ex));
  RLX_TRY(rlx_activation(e, RLX_ACT_NEG, ex, &ey));
  RLX_TRY(rlx_graph_set_outputs(e, &ey, 1));
  rlx_attrs_If a = {.then_branch = t, .else_branch = e};
  return rlx_build_If(g, in, 2, &a, NULL, out);
}

/* If(pred, a, b): then a + b, else a - b. */
static rlx_status build_if_add_else_sub(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  rlx_graph *br[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    rlx_id a, b, y;
    RLX_TRY(rlx_graph_create_child(g, k ? "else" : "then", &br[k]));
    RLX_TRY(ctl_input(br[k], g, in[1], "a", &a));
    RLX_TRY(ctl_input(br[k], g, in[2], "b", &b));
    RLX_TRY(ctl_bin(br[k], k ? RLX_BINOP_SUB : RLX_BINOP_ADD, a, b, &y));
    RLX_TRY(rlx_graph_set_outputs(br[k], &y, 1));
  }
  rlx_attrs_If a = {.then_branch = br[0], .else_branch = br[1]};
  return rlx_build_If(g, in, 3, &a, NULL, out);
}

/* While(x, i): while i < 4 { x = x + i; i = i + 1 }; the node's value is x. */
static rlx_status build_while(rlx_graph *g, const rlx_id *in, rlx_oi64 max_iterations, rlx_id *out) {
  rlx_graph *cond = NULL, *body = NULL;
  rlx_id cx, ci, four, lt, bx, bi, one, outs[2];
  const rlx_shape *ishape = &rlx_graph_node(g, in[1])->shape;
  RLX_TRY(rlx_graph_create_child(g, "cond", &cond));
  RLX_TRY(ctl_input(cond, g, in[0], "x", &cx));
  RLX_TRY(ctl_input(cond, g, in[1], "i", &ci));
  RLX_TRY(ctl_scalar(cond, ishape, 4.0, &four));
  RLX_TRY(rlx_compare(cond, RLX_CMP_LT, ci, four, &lt));
  RLX_TRY(rlx_graph_set_outputs(cond, &lt, 1));
  RLX_TRY(rlx_graph_create_child(g, "body", &body));
  RLX_TRY(ctl_input(body, g, in[0], "x", &bx));
  RLX_TRY(ctl_input(body, g, in[1], "i", &bi));
  RLX_TRY(ctl_bin(body, RLX_BINOP_ADD, bx, bi, &outs[0]));
  RLX_TRY(ctl_scalar(body, ishape, 1.0, &one));
  RLX_TRY(ctl_bin(body, RLX_BINOP_ADD, bi, one, &outs[1]));
  RLX_TRY(rlx_graph_set_outputs(body, outs, 2));
  rlx_attrs_While a = {.cond = cond, .body = body, .max_iterations = max_iterations};
  return rlx_build_While(g, in, 2, &a, NULL, out);
}

static rlx_status build_while_unbounded(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_while(g, in, (rlx_oi64){.has = false, .v = 0}, out);
}

static rlx_status build_while_max2(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_while(g, in, (rlx_oi64){.has = true, .v = 2}, out);
}

static rlx_status build_while_max10(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_while(g, in, (rlx_oi64){.has = true, .v = 10}, out);
}

/* Scan(c, [b], xs): body(c, [b], x_row) = c + x_row, or c * b + x_row with a broadcast operand. */
static rlx_status build_scan(rlx_graph *g, const rlx_id *in, uint32_t n, bool save, rlx_id *out) {
  bool bcast = n == 3;
  rlx_graph *body = NULL;
  rlx_id c, b = 0, x, y;
  const rlx_shape *xs = &rlx_graph_node(g, in[n - 1])->shape;
  rlx_shape row = rlx_shape_make((rlx_dtype)xs->dtype, xs->rank - 1, xs->dims + 1);
  RLX_TRY(rlx_graph_create_child(g, "body", &body));
  RLX_TRY(ctl_input(body, g, in[0], "c", &c));
  if (bcast) RLX_TRY(ctl_input(body, g, in[1], "b", &b));
  RLX_TRY(rlx_input(body, "x", row, &x));
  if (bcast) {
    rlx_id cb;
    RLX_TRY(ctl_bin(body, RLX_BINOP_MUL, c, b, &cb));
    RLX_TRY(ctl_bin(body, RLX_BINOP_ADD, cb, x, &y));
  } else {
    RLX_TRY(ctl_bin(body, RLX_BINOP_ADD, c, x, &y));
  }
  RLX_TRY(rlx_graph_set_outputs(body, &y, 1));
  rlx_attrs_Scan a = {.body = body,
                      .length = xs->dims[0],
                      .save_trajectory = save,
                      .num_bcast = bcast ? 1 : 0,
                      .num_xs = 1,
                      .num_checkpoints = 0};
  return rlx_build_Scan(g, in, n, &a, NULL, out);
}

static rlx_status build_scan_final(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  return build_scan(g, in, n, false, out);
}

static rlx_status build_scan_trajectory(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  return build_scan(g, in, n, true, out);
}

/* CustomFn(a, b): fwd_body = a * sigmoid(b). */
static rlx_status build_customfn(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  rlx_graph *fwd = NULL;
  rlx_id a, b, s, y;
  RLX_TRY(rlx_graph_create_child(g, "fwd", &fwd));
  RLX_TRY(ctl_input(fwd, g, in[0], "a", &a));
  RLX_TRY(ctl_input(fwd, g, in[1], "b", &b));
  RLX_TRY(rlx_activation(fwd, RLX_ACT_SIGMOID, b, &s));
  RLX_TRY(ctl_bin(fwd, RLX_BINOP_MUL, a, s, &y));
  RLX_TRY(rlx_graph_set_outputs(fwd, &y, 1));
  rlx_attrs_CustomFn at = {.fwd_body = fwd, .num_inputs = 2};
  return rlx_build_CustomFn(g, in, 2, &at, NULL, out);
}

/* Scan backward over the forward c_t = c_{t-1} * x_t. Operands: init, xs, upstream. The graph runs
 * the forward Scan (saving its trajectory) and feeds ScanBackward(Xs) [init, trajectory, upstream,
 * xs] with body_vjp(c, x, d) = (d * x, d * c). save_trajectory: upstream is per trajectory row. */
static rlx_status scan_mul_body(rlx_graph *g, const rlx_id *in, bool vjp, rlx_graph **out) {
  const rlx_shape *xs = &rlx_graph_node(g, in[1])->shape;
  rlx_shape row = rlx_shape_make((rlx_dtype)xs->dtype, xs->rank - 1, xs->dims + 1);
  rlx_id c, x, d, y[2];
  RLX_TRY(rlx_graph_create_child(g, vjp ? "body_vjp" : "body", out));
  RLX_TRY(ctl_input(*out, g, in[0], "c", &c));
  RLX_TRY(rlx_input(*out, "x", row, &x));
  if (!vjp) {
    RLX_TRY(ctl_bin(*out, RLX_BINOP_MUL, c, x, &y[0]));
    return rlx_graph_set_outputs(*out, y, 1);
  }
  RLX_TRY(ctl_input(*out, g, in[0], "d", &d));
  RLX_TRY(ctl_bin(*out, RLX_BINOP_MUL, d, x, &y[0]));
  RLX_TRY(ctl_bin(*out, RLX_BINOP_MUL, d, c, &y[1]));
  return rlx_graph_set_outputs(*out, y, 2);
}

static rlx_status build_scan_backward(rlx_graph *g, const rlx_id *in, bool save, bool wrt_xs, rlx_id *out) {
  rlx_graph *fwd = NULL, *fwd2 = NULL, *vjp = NULL;
  int64_t length = rlx_graph_node(g, in[1])->shape.dims[0];
  RLX_TRY(scan_mul_body(g, in, false, &fwd));
  RLX_TRY(scan_mul_body(g, in, false, &fwd2));
  RLX_TRY(scan_mul_body(g, in, true, &vjp));
  rlx_attrs_Scan sa = {.body = fwd, .length = length, .save_trajectory = true, .num_bcast = 0, .num_xs = 1};
  rlx_id traj, ops[4];
  RLX_TRY(rlx_build_Scan(g, in, 2, &sa, NULL, &traj));
  ops[0] = in[0], ops[1] = traj, ops[2] = in[2], ops[3] = in[1];
  if (wrt_xs) {
    rlx_attrs_ScanBackwardXs a = {
        .body_vjp = vjp, .length = length, .save_trajectory = save, .num_xs = 1, .forward_body = fwd2, .xs_idx = 0};
    return rlx_build_ScanBackwardXs(g, ops, 4, &a, NULL, out);
  }
  rlx_attrs_ScanBackward a = {
      .body_vjp = vjp, .length = length, .save_trajectory = save, .num_xs = 1, .forward_body = fwd2};
  return rlx_build_ScanBackward(g, ops, 4, &a, NULL, out);
}

static rlx_status build_scan_backward_final(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_scan_backward(g, in, false, false, out);
}

static rlx_status build_scan_backward_traj(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_scan_backward(g, in, true, false, out);
}

static rlx_status build_scan_backward_xs(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_scan_backward(g, in, false, true, out);
}

static rlx_status build_scan_backward_xs_traj(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return build_scan_backward(g, in, true, true, out);
}

/* The graph's output is its operand itself (an Input or a Param leaf). */
static rlx_status build_leaf_passthrough(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)g;
  (void)n;
  *out = in[0];
  return RLX_OK;
}

/* A [2, 3] f32 Constant holding 0.5 * i - 1. */
static rlx_status build_constant_ramp(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)in;
  (void)n;
  float v[6];
  for (int i = 0; i < 6; i++) v[i] = 0.5f * (float)i - 1.0f;
  return rlx_constant(g, rlx_shape_make(RLX_F32, 2, (const rlx_dim[]){2, 3}), v, sizeof v, out);
}

/* A rank-0 i64 Constant holding -42. */
static rlx_status build_constant_i64(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)in;
  (void)n;
  int64_t v = -42;
  return rlx_constant(g, rlx_shape_scalar(RLX_I64), &v, sizeof v, out);
}

static const conf_case conf_cases_control[] = {
    /* ---- leaves ---- */
    {"input_passthrough", RLX_OP_Input, NULL, 1, {IN(F32, 2, 3)}, .build = build_leaf_passthrough, .body = "identity"},
    {"input_passthrough_i8", RLX_OP_Input, NULL, 1, {IN(I8, 5)}, .build = build_leaf_passthrough, .body = "identity"},
    {"param_passthrough",
     RLX_OP_Param,
     NULL,
     1,
     {PARAM(F64, 3, 2)},
     .build = build_leaf_passthrough,
     .body = "identity"},
    {"constant_ramp", RLX_OP_Constant, NULL, 0, {{0}}, .build = build_constant_ramp, .body = "constant_ramp"},
    {"constant_i64_rank0",
     RLX_OP_Constant,
     NULL,
     0,
     {{0}},
     .build = build_constant_i64,
     .body = "constant_i64_minus42"},

    /* ---- If ---- */
    {"if_true",
     RLX_OP_If,
     NULL,
     2,
     {INF0(BOOL, CF_CONST, 1, 0), IN(F32, 3, 4)},
     .build = build_if_square_else_neg,
     .body = "if_square_else_neg"},
    {"if_false",
     RLX_OP_If,
     NULL,
     2,
     {INF0(BOOL, CF_CONST, 0, 0), IN(F32, 3, 4)},
     .build = build_if_square_else_neg,
     .body = "if_square_else_neg"},
    {"if_float_pred",
     RLX_OP_If,
     NULL,
     3,
     {INF(F32, CF_CONST, 2.5, 0, 1), IN(F64, 5), IN(F64, 5)},
     .build = build_if_add_else_sub,
     .body = "if_add_else_sub"},
    {"if_float_pred_zero",
     RLX_OP_If,
     NULL,
     3,
     {INF(F32, CF_CONST, 0, 0, 1), IN(F32, 2, 2), IN(F32, 2, 2)},
     .build = build_if_add_else_sub,
     .body = "if_add_else_sub"},

    /* ---- While (x, i): while i < 4 { x += i; i += 1 } ---- */
    {"while_four_iterations",
     RLX_OP_While,
     NULL,
     2,
     {IN(F32, 3), INF0(F32, CF_CONST, 0, 0)},
     .build = build_while_unbounded,
     .body = "while_add_counter"},
    {"while_zero_iterations",
     RLX_OP_While,
     NULL,
     2,
     {IN(F32, 2, 2), INF0(F32, CF_CONST, 5, 0)},
     .build = build_while_unbounded,
     .body = "while_add_counter"},
    {"while_max_iterations",
     RLX_OP_While,
     NULL,
     2,
     {IN(F32, 4), INF0(F32, CF_CONST, 0, 0)},
     .build = build_while_max2,
     .body = "while_add_counter"},
    {"while_max_not_reached",
     RLX_OP_While,
     NULL,
     2,
     {IN(F64, 3), INF0(F64, CF_CONST, 1, 0)},
     .build = build_while_max10,
     .body = "while_add_counter"},

    /* ---- Scan ---- */
    {"scan_sum_final",
     RLX_OP_Scan,
     NULL,
     2,
     {IN(F32, 3), IN(F32, 5, 3)},
     .build = build_scan_final,
     .body = "scan_add"},
    {"scan_sum_trajectory",
     RLX_OP_Scan,
     NULL,
     2,
     {IN(F32, 2, 2), IN(F32, 4, 2, 2)},
     .build = build_scan_trajectory,
     .body = "scan_add"},
    {"scan_bcast_final",
     RLX_OP_Scan,
     NULL,
     3,
     {IN(F64, 3), INF(F64, CF_UNIFORM, 0.5, 1, 3), IN(F64, 6, 3)},
     .build = build_scan_final,
     .body = "scan_mul_bcast_add"},
    {"scan_bcast_trajectory",
     RLX_OP_Scan,
     NULL,
     3,
     {IN(F32, 2), IN(F32, 2), IN(F32, 3, 2)},
     .build = build_scan_trajectory,
     .body = "scan_mul_bcast_add"},
    {"scan_length0", RLX_OP_Scan, NULL, 2, {IN(F32, 3), IN(F32, 0, 3)}, .build = build_scan_final, .body = "scan_add"},

    /* ---- ScanBackward / ScanBackwardXs of c_t = c_{t-1} * x_t: operands init, xs, upstream ---- */
    {"scan_backward_final",
     RLX_OP_ScanBackward,
     NULL,
     3,
     {IN(F32, 3), INF(F32, CF_UNIFORM, 0.5, 1.5, 4, 3), IN(F32, 3)},
     .build = build_scan_backward_final,
     .body = "scan_backward_mul"},
    {"scan_backward_trajectory",
     RLX_OP_ScanBackward,
     NULL,
     3,
     {IN(F64, 2), INF(F64, CF_UNIFORM, 0.5, 1.5, 5, 2), IN(F64, 5, 2)},
     .build = build_scan_backward_traj,
     .body = "scan_backward_mul"},
    {"scan_backward_xs_final",
     RLX_OP_ScanBackwardXs,
     NULL,
     3,
     {IN(F32, 3), INF(F32, CF_UNIFORM, 0.5, 1.5, 4, 3), IN(F32, 3)},
     .build = build_scan_backward_xs,
     .body = "scan_backward_mul"},
    {"scan_backward_xs_trajectory",
     RLX_OP_ScanBackwardXs,
     NULL,
     3,
     {IN(F32, 2), INF(F32, CF_UNIFORM, 0.5, 1.5, 3, 2), IN(F32, 3, 2)},
     .build = build_scan_backward_xs_traj,
     .body = "scan_backward_mul"},

    /* ---- CustomFn (decomposed: the body is inlined) ---- */
    {"customfn_gate",
     RLX_OP_CustomFn,
     NULL,
     2,
     {IN(F32, 3, 4), IN(F32, 3, 4)},
     .build = build_customfn,
     .body = "customfn_a_mul_sigmoid_b"},
};
