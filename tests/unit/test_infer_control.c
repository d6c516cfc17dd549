/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of control flow (If, While, Scan, ScanBackward, ScanBackwardXs) and of the extension
 * surface (Custom, CustomFn). Bodies are real child graphs built through the public API. */
#include <stdio.h>

#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY

static rlx_graph *G; /* the enclosing graph of every test */

static rlx_id in_(rlx_graph *g, const char *name, rlx_shape s) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_input(g, name, s, &id));
  return id;
}

/* An outer operand with a fresh name. */
static rlx_id op_(rlx_shape s) {
  static int k;
  char name[24];
  snprintf(name, sizeof name, "v%d", k++);
  return in_(G, name, s);
}

static rlx_graph *child(const char *name) {
  rlx_graph *b = NULL;
  CHECK_OK(rlx_graph_create_child(G, name, &b));
  return b;
}

static rlx_id bin_(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_binary(g, op, a, b, &id));
  return id;
}

static void outputs(rlx_graph *g, uint32_t n, const rlx_id *ids) { CHECK_OK(rlx_graph_set_outputs(g, ids, n)); }
static void output1(rlx_graph *g, rlx_id id) { outputs(g, 1, &id); }

/* Adds op to G with inferred shape; *out = the node's shape. */
static rlx_status add(rlx_op op, const void *attrs, uint32_t n, const rlx_id *ids, rlx_shape *out) {
  rlx_id id;
  rlx_clear_error();
  rlx_status s = rlx_graph_add(G, op, ids, n, attrs, NULL, NULL, &id);
  if (!s) *out = rlx_graph_node(G, id)->shape;
  return s;
}

#define ADD_OK(op, attrs, want, ...)                                                                                   \
  do {                                                                                                                 \
    rlx_id ids_[] = {__VA_ARGS__};                                                                                     \
    rlx_shape got_, want_ = (want);                                                                                    \
    rlx_status st_ = add(RLX_OP_##op, attrs, (uint32_t)(sizeof ids_ / sizeof *ids_), ids_, &got_);                     \
    CHECK_MSG(st_ == RLX_OK, #op ": expected success, got %s: %s", rlx_status_text(st_), rlx_last_error());            \
    if (st_ == RLX_OK)                                                                                                 \
      CHECK_MSG(rlx_shape_equal(&got_, &want_), #op ": got %s, want %s", rlx_fmt_shape(&got_), rlx_fmt_shape(&want_)); \
  } while (0)

#define ADD_ERR(op, attrs, code, substr, ...)                                                              \
  do {                                                                                                     \
    rlx_id ids_[] = {__VA_ARGS__};                                                                         \
    rlx_shape got_;                                                                                        \
    CHECK_ERR(add(RLX_OP_##op, attrs, (uint32_t)(sizeof ids_ / sizeof *ids_), ids_, &got_), code, substr); \
  } while (0)

/* body(a, b) = a <op> b over two Inputs of shape s. */
static rlx_graph *binary_body(const char *name, rlx_binop op, rlx_shape s) {
  rlx_graph *b = child(name);
  rlx_id x = in_(b, "a", s), y = in_(b, "b", s);
  output1(b, bin_(b, op, x, y));
  return b;
}

static void test_if(void) {
  rlx_shape m23 = SH(F32, 2, 3);
  rlx_id pred = op_(SCALAR(BOOL)), x = op_(m23), y = op_(m23);
  rlx_attrs_If a = {.then_branch = binary_body("then", RLX_BINOP_ADD, m23),
                    .else_branch = binary_body("else", RLX_BINOP_MUL, m23)};
  ADD_OK(If, &a, m23, pred, x, y);
  ADD_OK(If, &a, m23, op_(SH(F32, 1)), x, y); /* a one-element numeric predicate */
  ADD_OK(If, &a, m23, op_(SH(I32, 1, 1)), x, y);
  ADD_ERR(If, &a, SHAPE_ERR, "operand 0 (predicate)", op_(SH(BOOL, 2)), x, y);
  ADD_ERR(If, &a, SHAPE_ERR, "operand 0 (predicate)", op_(SCALAR(C64)), x, y);
  ADD_ERR(If, &a, SHAPE_ERR, "attribute then_branch", pred, x); /* 2 Inputs, 1 capture */
  ADD_ERR(If, &a, SHAPE_ERR, "binds to operand 2", pred, x, op_(SH(F32, 3, 2)));

  /* else branch returning another shape */
  rlx_graph *e = child("else_bad");
  in_(e, "a", m23);
  in_(e, "b", m23);
  float vals[3] = {1, 2, 3};
  rlx_id k;
  CHECK_OK(rlx_constant(e, SH(F32, 3), vals, sizeof vals, &k));
  output1(e, k);
  rlx_attrs_If bad = {.then_branch = a.then_branch, .else_branch = e};
  ADD_ERR(If, &bad, SHAPE_ERR, "attribute else_branch: body output 0", pred, x, y);

  /* output counts must agree */
  rlx_graph *e2 = child("else_two");
  rlx_id ea = in_(e2, "a", m23), eb = in_(e2, "b", m23);
  outputs(e2, 2, (rlx_id[]){ea, eb});
  rlx_attrs_If two = {.then_branch = a.then_branch, .else_branch = e2};
  ADD_ERR(If, &two, SHAPE_ERR, "attribute else_branch", pred, x, y);

  /* no captures: branches are constants; node shape = then-branch output 0 */
  rlx_graph *t0 = child("then_k"), *e0 = child("else_k");
  rlx_id kt, ke;
  CHECK_OK(rlx_constant(t0, SH(F32, 3), vals, sizeof vals, &kt));
  CHECK_OK(rlx_constant(e0, SH(F32, 3), vals, sizeof vals, &ke));
  output1(t0, kt);
  output1(e0, ke);
  rlx_attrs_If none = {.then_branch = t0, .else_branch = e0};
  ADD_OK(If, &none, SH(F32, 3), pred);

  /* body Params bind by name to the enclosing graph's Params */
  rlx_graph *tp = child("then_param");
  rlx_id pa = in_(tp, "a", m23);
  in_(tp, "b", m23);
  rlx_id pw;
  CHECK_OK(rlx_param(tp, "w", SH(F32, 3), &pw));
  output1(tp, bin_(tp, RLX_BINOP_MUL, pa, pw));
  rlx_attrs_If par = {.then_branch = tp, .else_branch = a.else_branch};
  ADD_ERR(If, &par, SHAPE_ERR, "body Param \"w\"", pred, x, y);
  rlx_id outer_w;
  CHECK_OK(rlx_param(G, "w", SH(F32, 4), &outer_w));
  ADD_ERR(If, &par, SHAPE_ERR, "body Param \"w\" has shape", pred, x, y);
  rlx_id outer_w3;
  CHECK_OK(rlx_param(G, "w3", SH(F32, 3), &outer_w3));
  rlx_graph *tp2 = child("then_param3");
  rlx_id qa = in_(tp2, "a", m23);
  in_(tp2, "b", m23);
  rlx_id qw;
  CHECK_OK(rlx_param(tp2, "w3", SH(F32, 3), &qw));
  output1(tp2, bin_(tp2, RLX_BINOP_MUL, qa, qw));
  rlx_attrs_If par3 = {.then_branch = tp2, .else_branch = a.else_branch};
  ADD_OK(If, &par3, m23, pred, x, y);

  /* a missing body reaches the rule only through rlx_infer_shape (rlx_graph_add rejects it earlier) */
  rlx_attrs_If miss = {.then_branch = a.then_branch, .else_branch = NULL};
  rlx_shape out;
  CHECK_ERR(rlx_infer_shape(G, RLX_OP_If, (rlx_id[]){pred, x, y}, 3, &miss, NULL, &out), SHAPE_ERR,
            "attribute else_branch: body graph missing");
}

static void test_while(void) {
  rlx_shape v4 = SH(F32, 4), si = SCALAR(I32);
  rlx_id x = op_(v4), i = op_(si);
  int32_t ten = 10, one = 1;
  /* cond(x, i) = i < 10 */
  rlx_graph *cond = child("cond");
  in_(cond, "x", v4);
  rlx_id ci = in_(cond, "i", si), c10;
  CHECK_OK(rlx_constant(cond, si, &ten, sizeof ten, &c10));
  rlx_id lt;
  CHECK_OK(rlx_compare(cond, RLX_CMP_LT, ci, c10, &lt));
  output1(cond, lt);
  /* body(x, i) = (x * x, i + 1) */
  rlx_graph *body = child("body");
  rlx_id bx = in_(body, "x", v4), bi = in_(body, "i", si), c1;
  CHECK_OK(rlx_constant(body, si, &one, sizeof one, &c1));
  outputs(body, 2, (rlx_id[]){bin_(body, RLX_BINOP_MUL, bx, bx), bin_(body, RLX_BINOP_ADD, bi, c1)});

  rlx_attrs_While w = {.cond = cond, .body = body, .max_iterations = {.has = false, .v = 0}};
  ADD_OK(While, &w, v4, x, i);
  w.max_iterations = (rlx_oi64){.has = true, .v = 0};
  ADD_OK(While, &w, v4, x, i);
  w.max_iterations = (rlx_oi64){.has = true, .v = -1};
  ADD_ERR(While, &w, SHAPE_ERR, "attribute max_iterations", x, i);
  w.max_iterations = (rlx_oi64){.has = true, .v = 100};
  ADD_ERR(While, &w, SHAPE_ERR, "attribute cond", x);                       /* 2 Inputs, 1 carried */
  ADD_ERR(While, &w, SHAPE_ERR, "binds to operand 1", x, op_(SCALAR(F32))); /* i must be i32 */

  /* a condition with an elementwise (4-element) result */
  rlx_graph *cond4 = child("cond4");
  rlx_id c4x = in_(cond4, "x", v4);
  in_(cond4, "i", si);
  rlx_id gt;
  CHECK_OK(rlx_compare(cond4, RLX_CMP_GT, c4x, c4x, &gt));
  output1(cond4, gt);
  rlx_attrs_While w4 = {.cond = cond4, .body = body, .max_iterations = {.has = false, .v = 0}};
  ADD_ERR(While, &w4, SHAPE_ERR, "attribute cond: body output", x, i);

  /* a body returning the wrong number or shapes of values */
  rlx_graph *b1 = child("body1");
  rlx_id b1x = in_(b1, "x", v4);
  in_(b1, "i", si);
  output1(b1, b1x);
  rlx_attrs_While wb1 = {.cond = cond, .body = b1, .max_iterations = {.has = false, .v = 0}};
  ADD_ERR(While, &wb1, SHAPE_ERR, "attribute body", x, i);
  rlx_graph *b2 = child("body2");
  rlx_id b2x = in_(b2, "x", v4);
  in_(b2, "i", si);
  outputs(b2, 2, (rlx_id[]){b2x, b2x});
  rlx_attrs_While wb2 = {.cond = cond, .body = b2, .max_iterations = {.has = false, .v = 0}};
  ADD_ERR(While, &wb2, SHAPE_ERR, "attribute body: body output 1", x, i);
}

/* scan body(c, w, x) = c * w + x over [3]-vectors */
static rlx_graph *scan_body(const char *name, rlx_shape row) {
  rlx_graph *b = child(name);
  rlx_id c = in_(b, "c", SH(F32, 3)), w = in_(b, "w", SH(F32, 3)), x = in_(b, "x", row);
  output1(b, bin_(b, RLX_BINOP_ADD, bin_(b, RLX_BINOP_MUL, c, w), x));
  return b;
}

static void test_scan(void) {
  rlx_id init = op_(SH(F32, 3)), w = op_(SH(F32, 3)), xs = op_(SH(F32, 5, 3));
  rlx_attrs_Scan s;
  rlx_attrs_init(RLX_OP_Scan, &s);
  s.body = scan_body("scan", SH(F32, 3));
  s.length = 5;
  s.num_bcast = 1;
  s.num_xs = 1;
  ADD_OK(Scan, &s, SH(F32, 3), init, w, xs);
  s.save_trajectory = true;
  ADD_OK(Scan, &s, SH(F32, 5, 3), init, w, xs);
  s.num_checkpoints = 2;
  ADD_OK(Scan, &s, SH(F32, 2, 3), init, w, xs);
  s.num_checkpoints = 5; /* K == length keeps every row */
  ADD_OK(Scan, &s, SH(F32, 5, 3), init, w, xs);
  s.num_checkpoints = 6;
  ADD_ERR(Scan, &s, SHAPE_ERR, "attribute num_checkpoints", init, w, xs);
  s.num_checkpoints = 0;
  ADD_ERR(Scan, &s, SHAPE_ERR, "operand 2 (xs 0)", init, w, op_(SH(F32, 4, 3)));
  ADD_ERR(Scan, &s, VERIFY_ERR, "needs exactly 3", init, w);
  s.length = -1;
  ADD_ERR(Scan, &s, SHAPE_ERR, "attribute length", init, w, xs);
  s.length = 5;
  s.num_bcast = -1;
  ADD_ERR(Scan, &s, SHAPE_ERR, "attribute num_bcast", init, w, xs);
  s.num_bcast = 1;
  ADD_ERR(Scan, &s, SHAPE_ERR, "binds to operand 0", op_(SH(F32, 4)), op_(SH(F32, 4)), op_(SH(F32, 5, 4)));
  /* the xs row binds to the body's third Input */
  s.body = scan_body("scan_row23", SH(F32, 2, 3));
  ADD_ERR(Scan, &s, SHAPE_ERR, "one row of operand 2", init, w, xs);
  /* a scalar row: xs [5] gives rows [] */
  s.body = scan_body("scan_scalar", SCALAR(F32));
  ADD_OK(Scan, &s, SH(F32, 5, 3), init, w, op_(SH(F32, 5)));
  /* body with the wrong number of Inputs */
  s.num_bcast = 0;
  s.body = scan_body("scan_3in", SH(F32, 3));
  ADD_ERR(Scan, &s, SHAPE_ERR, "attribute body", init, xs);

  /* a carry of rank 8 cannot be stacked into a trajectory */
  rlx_shape r8 = SH(F32, 1, 1, 1, 1, 1, 1, 1, 2);
  rlx_graph *id = child("scan_id");
  output1(id, in_(id, "c", r8));
  rlx_attrs_Scan s8;
  rlx_attrs_init(RLX_OP_Scan, &s8);
  s8.body = id;
  s8.length = 3;
  rlx_id c8 = op_(r8);
  ADD_OK(Scan, &s8, r8, c8);
  s8.save_trajectory = true;
  ADD_ERR(Scan, &s8, SHAPE_ERR, "rank", c8);
  /* a body whose result is not the carry */
  rlx_graph *wrong = child("scan_wrong");
  in_(wrong, "c", SH(F32, 3));
  output1(wrong, in_(wrong, "x", SH(F32, 3)));
  rlx_attrs_Scan sw;
  rlx_attrs_init(RLX_OP_Scan, &sw);
  sw.body = wrong;
  sw.length = 5;
  sw.num_xs = 1;
  ADD_OK(Scan, &sw, SH(F32, 3), init, xs);
  rlx_graph *wrong2 = child("scan_wrong2");
  in_(wrong2, "c", SH(F32, 3));
  in_(wrong2, "x", SH(F32, 3));
  float z[2] = {0, 0};
  rlx_id kz;
  CHECK_OK(rlx_constant(wrong2, SH(F32, 2), z, sizeof z, &kz));
  output1(wrong2, kz);
  sw.body = wrong2;
  ADD_ERR(Scan, &sw, SHAPE_ERR, "attribute body: body output 0", init, xs);
}

/* body_vjp(carry [3], x [3], d_output [3]) -> (dcarry [3], dx [3]) */
static rlx_graph *vjp_body(const char *name, uint32_t n_out) {
  rlx_graph *b = child(name);
  rlx_id c = in_(b, "carry", SH(F32, 3)), x = in_(b, "x", SH(F32, 3)), d = in_(b, "d_output", SH(F32, 3));
  rlx_id outs[2] = {bin_(b, RLX_BINOP_MUL, d, c), bin_(b, RLX_BINOP_MUL, d, x)};
  outputs(b, n_out, outs);
  return b;
}

static void test_scan_backward(void) {
  rlx_id init = op_(SH(F32, 3)), traj = op_(SH(F32, 5, 3)), xs = op_(SH(F32, 5, 3));
  rlx_attrs_ScanBackward b;
  rlx_attrs_init(RLX_OP_ScanBackward, &b);
  b.body_vjp = vjp_body("vjp", 2);
  b.length = 5;
  b.num_xs = 1;
  b.save_trajectory = true;
  ADD_OK(ScanBackward, &b, SH(F32, 3), init, traj, traj, xs);
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "operand 2 (upstream)", init, traj, init, xs);
  b.save_trajectory = false;
  ADD_OK(ScanBackward, &b, SH(F32, 3), init, traj, init, xs);
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "operand 1 (trajectory)", init, op_(SH(F32, 4, 3)), init, xs);
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "operand 3 (xs 0)", init, traj, init, op_(SH(F32, 6, 3)));
  ADD_ERR(ScanBackward, &b, VERIFY_ERR, "needs exactly 4", init, traj, init);
  b.body_vjp = vjp_body("vjp1", 1);
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "attribute body_vjp", init, traj, init, xs);
  b.body_vjp = vjp_body("vjp2", 2);
  /* checkpointed: trajectory holds K rows and forward_body recomputes the rest */
  b.num_checkpoints = 2;
  rlx_id traj2 = op_(SH(F32, 2, 3));
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "attribute forward_body", init, traj2, init, xs);
  rlx_graph *fwd = child("fwd");
  rlx_id fc = in_(fwd, "c", SH(F32, 3)), fx = in_(fwd, "x", SH(F32, 3));
  output1(fwd, bin_(fwd, RLX_BINOP_ADD, fc, fx));
  b.forward_body = fwd;
  ADD_OK(ScanBackward, &b, SH(F32, 3), init, traj2, init, xs);
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "operand 1 (trajectory)", init, traj, init, xs);
  rlx_graph *fwd_bad = child("fwd_bad");
  output1(fwd_bad, in_(fwd_bad, "c", SH(F32, 3)));
  b.forward_body = fwd_bad;
  ADD_ERR(ScanBackward, &b, SHAPE_ERR, "attribute forward_body", init, traj2, init, xs);

  rlx_attrs_ScanBackwardXs bx;
  rlx_attrs_init(RLX_OP_ScanBackwardXs, &bx);
  bx.body_vjp = vjp_body("vjpx", 2);
  bx.length = 5;
  bx.num_xs = 1;
  bx.save_trajectory = true;
  ADD_OK(ScanBackwardXs, &bx, SH(F32, 5, 3), init, traj, traj, xs);
  bx.xs_idx = 1;
  ADD_ERR(ScanBackwardXs, &bx, SHAPE_ERR, "attribute xs_idx", init, traj, traj, xs);
  bx.xs_idx = -1;
  ADD_ERR(ScanBackwardXs, &bx, SHAPE_ERR, "attribute xs_idx", init, traj, traj, xs);
}

/* fwd(a, b) = a + b over [2, 3] */
static void test_custom_fn(void) {
  rlx_shape m = SH(F32, 2, 3);
  rlx_id x = op_(m), y = op_(m);
  rlx_attrs_CustomFn f;
  rlx_attrs_init(RLX_OP_CustomFn, &f);
  f.fwd_body = binary_body("fwd", RLX_BINOP_ADD, m);
  f.num_inputs = 2;
  ADD_OK(CustomFn, &f, m, x, y);
  ADD_ERR(CustomFn, &f, VERIFY_ERR, "needs exactly 2", x);
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute fwd_body", x, op_(SH(F32, 3)));
  f.num_inputs = -1;
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute num_inputs", x, y);
  f.num_inputs = 2;

  rlx_graph *two = child("fwd_two");
  rlx_id ta = in_(two, "a", m), tb = in_(two, "b", m);
  outputs(two, 2, (rlx_id[]){ta, tb});
  rlx_attrs_CustomFn f2 = f;
  f2.fwd_body = two;
  ADD_ERR(CustomFn, &f2, SHAPE_ERR, "attribute fwd_body", x, y);

  /* vjp: primal Inputs, primal_output, d_output -> one gradient per input */
  rlx_graph *vjp = child("vjp");
  rlx_id va = in_(vjp, "a", m), vb = in_(vjp, "b", m);
  in_(vjp, "primal_output", m);
  rlx_id vd = in_(vjp, "d_output", m);
  outputs(vjp, 2, (rlx_id[]){bin_(vjp, RLX_BINOP_MUL, vd, va), bin_(vjp, RLX_BINOP_MUL, vd, vb)});
  f.vjp_body = vjp;
  ADD_OK(CustomFn, &f, m, x, y);
  rlx_graph *vjp_bad = child("vjp_bad");
  in_(vjp_bad, "a", m);
  in_(vjp_bad, "b", m);
  in_(vjp_bad, "y", m);
  rlx_id gd = in_(vjp_bad, "d_output", m);
  outputs(vjp_bad, 2, (rlx_id[]){gd, gd});
  f.vjp_body = vjp_bad;
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute vjp_body", x, y);
  rlx_graph *vjp_one = child("vjp_one");
  in_(vjp_one, "a", m);
  in_(vjp_one, "b", m);
  in_(vjp_one, "primal_output", m);
  output1(vjp_one, in_(vjp_one, "d_output", m));
  f.vjp_body = vjp_one;
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute vjp_body", x, y);
  f.vjp_body = NULL;

  /* jvp: primal Inputs, tangent_0, tangent_1 (+ optional primal_output) -> one tangent */
  rlx_graph *jvp = child("jvp");
  in_(jvp, "a", m);
  in_(jvp, "b", m);
  rlx_id t0 = in_(jvp, "tangent_0", m), t1 = in_(jvp, "tangent_1", m);
  in_(jvp, "primal_output", m);
  output1(jvp, bin_(jvp, RLX_BINOP_ADD, t0, t1));
  f.jvp_body = jvp;
  ADD_OK(CustomFn, &f, m, x, y);
  rlx_graph *jvp_bad = child("jvp_bad");
  in_(jvp_bad, "a", m);
  in_(jvp_bad, "b", m);
  rlx_id u0 = in_(jvp_bad, "tangent_0", m);
  in_(jvp_bad, "tangent_2", m);
  output1(jvp_bad, u0);
  f.jvp_body = jvp_bad;
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute jvp_body", x, y);
  rlx_graph *jvp_short = child("jvp_short");
  in_(jvp_short, "a", m);
  output1(jvp_short, in_(jvp_short, "tangent_0", m));
  f.jvp_body = jvp_short;
  ADD_ERR(CustomFn, &f, SHAPE_ERR, "attribute jvp_body", x, y);
}

static void test_custom(void) {
  rlx_id x = op_(SH(F32, 4));
  rlx_attrs_Custom a = {.name = "my_op", .num_inputs = 1, .attrs = {.p = NULL, .n = 0}};
  rlx_shape decl = SH(F32, 7), got;
  rlx_id id;
  CHECK_OK(rlx_graph_add(G, RLX_OP_Custom, &x, 1, &a, &decl, NULL, &id));
  CHECK(rlx_shape_equal(&rlx_graph_node(G, id)->shape, &decl));
  ADD_ERR(Custom, &a, SHAPE_ERR, "give its output shape", x);
  a.num_inputs = 2;
  CHECK_ERR(rlx_graph_add(G, RLX_OP_Custom, &x, 1, &a, &decl, NULL, &id), VERIFY_ERR, "attribute num_inputs");
  a.num_inputs = 1;
  a.name = "";
  CHECK_ERR(rlx_graph_add(G, RLX_OP_Custom, &x, 1, &a, &decl, NULL, &id), SHAPE_ERR, "attribute name");
  (void)got;
}

/* A whole graph with an If and a Scan goes through the verifier (which re-infers every node). */
static void test_verify_roundtrip(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_graph *saved = G;
  G = g;
  rlx_shape m = SH(F32, 2, 3);
  rlx_id p = op_(SCALAR(BOOL)), x = op_(m), y = op_(m), r;
  rlx_attrs_If a = {.then_branch = binary_body("then", RLX_BINOP_ADD, m),
                    .else_branch = binary_body("else", RLX_BINOP_SUB, m)};
  rlx_id ids[3] = {p, x, y};
  CHECK_OK(rlx_graph_add(g, RLX_OP_If, ids, 3, &a, NULL, "if", &r));
  CHECK_OK(rlx_graph_set_outputs(g, &r, 1));
  CHECK_OK(rlx_verify(g));
  rlx_graph_free(g);
  G = saved;
}

int main(void) {
  CHECK_OK(rlx_graph_create(NULL, "main", &G));
  test_if();
  test_while();
  test_scan();
  test_scan_backward();
  test_custom_fn();
  test_custom();
  test_verify_roundtrip();
  rlx_graph_free(G);
  return rlx_test_finish("infer_control");
}
