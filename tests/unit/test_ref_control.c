/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The runtime's control-flow drivers (src/runtime/control.c): If (bool / numeric / [1,1]
 * predicates, multi-output branches), While (condition, max_iterations, a loop that never runs)
 * and Scan (final carry, trajectory, checkpoints, length 0, broadcast operands). Bodies run
 * through a small interpreter written here (node by node on the reference kernel table), so the
 * drivers are tested without the executor; one case also goes through rlx_compile /
 * rlx_executable_run end to end. */
#include "ref_b_test.h"
#include "runtime/control.h"

static rlx_graph *G;
static int body_runs; /* run_body invocations */

/* ---- a tiny body interpreter: inputs bind positionally to the body's Input nodes ---- */

static rlx_status interp(void *state, const rlx_graph *body, const rlx_tensor *inputs, uint32_t n_inputs,
                         rlx_tensor *outputs, uint32_t n_outputs) {
  rlx_cpu_ctx *ctx = state;
  body_runs++;
  uint32_t nn = rlx_graph_node_count(body), next_in = 0;
  rlx_tensor *val = calloc(nn, sizeof *val);
  bool *owned = calloc(nn, sizeof *owned);
  rlx_status s = RLX_OK;
  for (uint32_t id = 0; id < nn && s == RLX_OK; id++) {
    const rlx_node *n = rlx_graph_node(body, id);
    if (n->op == RLX_OP_Input) {
      if (next_in >= n_inputs)
        s = rlx_errorf(RLX_ERR_INVALID_ARG, "interp: too few inputs");
      else
        val[id] = inputs[next_in++];
      continue;
    }
    if (n->op == RLX_OP_Constant) {
      val[id] = (rlx_tensor){n->attrs.Constant.data.p, n->shape};
      continue;
    }
    rlx_tensor ops[8];
    for (uint32_t k = 0; k < n->n_inputs && k < 8; k++) ops[k] = val[n->inputs[k]];
    val[id].shape = n->shape;
    val[id].data = rt_tensor_data(&n->shape, NULL);
    owned[id] = true;
    s = rlx_cpu_ref_table[n->op](n, ops, n->n_inputs, &val[id], ctx);
  }
  if (s == RLX_OK && (n_outputs != rlx_graph_output_count(body) || next_in != n_inputs))
    s = rlx_errorf(RLX_ERR_INVALID_ARG, "interp: %u outputs / %u inputs do not match the body", n_outputs, n_inputs);
  for (uint32_t i = 0; s == RLX_OK && i < n_outputs; i++) {
    const rlx_tensor *v = &val[rlx_graph_outputs(body)[i]];
    memcpy(outputs[i].data, v->data, rt_numel(&v->shape) * rlx_dtype_size((rlx_dtype)v->shape.dtype));
    outputs[i].shape = v->shape;
  }
  for (uint32_t id = 0; id < nn; id++)
    if (owned[id]) free(val[id].data);
  free(val);
  free(owned);
  return s;
}

/* ---- graph building helpers ---- */

static rlx_id input(rlx_graph *g, const char *name, rlx_shape s) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_input(g, name, s, &id));
  return id;
}
static rlx_id konst(rlx_graph *g, float v) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_scalar_f32(g, v, &id));
  return id;
}
static rlx_id bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_binary(g, op, a, b, &id));
  return id;
}
static rlx_graph *child(const char *name) {
  rlx_graph *b = NULL;
  CHECK_OK(rlx_graph_create_child(G, name, &b));
  return b;
}
static void outs(rlx_graph *g, uint32_t n, const rlx_id *ids) { CHECK_OK(rlx_graph_set_outputs(g, ids, n)); }

/* Adds `op` to G over fresh Inputs of the given shapes; runs its kernel with the interpreter. */
static rlx_status run_node(rlx_op op, const void *attrs, uint32_t n, const rt_arg *args, rt *c) {
  static int k;
  memset(c, 0, sizeof *c);
  c->ctx.threads = 1;
  rlx_id ids[RT_MAX_IN], id;
  for (uint32_t i = 0; i < n; i++) {
    char name[24];
    snprintf(name, sizeof name, "in%d", k++);
    ids[i] = input(G, name, args[i].shape);
    c->in[i] = (rlx_tensor){rt_tensor_data(&args[i].shape, args[i].v), args[i].shape};
  }
  c->n_in = n;
  rlx_status s = rlx_graph_add(G, op, ids, n, attrs, NULL, "node", &id);
  if (s != RLX_OK) {
    fprintf(stderr, "  building %s: %s\n", rlx_op_name(op), rlx_last_error());
    return s;
  }
  c->node = rlx_graph_node(G, id);
  c->out = (rlx_tensor){rt_tensor_data(&c->node->shape, NULL), c->node->shape};
  body_runs = 0;
  return rlx_rt_control_run(c->node, c->in, c->n_in, &c->out, interp, &c->ctx);
}

static void free_case(rt *c) {
  for (uint32_t i = 0; i < c->n_in; i++) free(c->in[i].data);
  free(c->out.data);
  memset(c, 0, sizeof *c);
}

/* ---- If ---- */

static void test_if(void) {
  rlx_shape m = SHP(F32, 2, 2);
  /* then: (a + b, a - b), else: (a * b, a) (two outputs; the node takes output 0) */
  rlx_graph *t = child("then"), *e = child("else");
  rlx_id ta = input(t, "a", m), tb = input(t, "b", m);
  outs(t, 2, (rlx_id[]){bin(t, RLX_BINOP_ADD, ta, tb), bin(t, RLX_BINOP_SUB, ta, tb)});
  rlx_id ea = input(e, "a", m), eb = input(e, "b", m);
  outs(e, 2, (rlx_id[]){bin(e, RLX_BINOP_MUL, ea, eb), ea});
  rlx_attrs_If a = {.then_branch = t, .else_branch = e};
  const double *x = VALS(1, 2, 3, 4), *y = VALS(5, 6, 7, 8);
  rt c;
  const rlx_shape preds[4] = {SHP(BOOL), SHP(F32), SHP(I32, 1, 1), SHP(BOOL)};
  const double pv[4] = {1, 0, -3, 0};
  const bool take_then[4] = {true, false, true, false};
  for (int k = 0; k < 4; k++) {
    CHECK_OK(run_node(RLX_OP_If, &a, 3, (rt_arg[]){{preds[k], &pv[k]}, {m, x}, {m, y}}, &c));
    CHECK(body_runs == 1);
    if (take_then[k])
      CHECK_OUT(&c, VALS(6, 8, 10, 12), 4, 0, 0);
    else
      CHECK_OUT(&c, VALS(5, 12, 21, 32), 4, 0, 0);
    free_case(&c);
  }
  /* no run_body: an error, not a crash */
  CHECK_OK(run_node(RLX_OP_If, &a, 3, (rt_arg[]){{SHP(BOOL), VALS(1)}, {m, x}, {m, y}}, &c));
  CHECK_ERR(rlx_rt_control_run(c.node, c.in, c.n_in, &c.out, NULL, NULL), RLX_ERR_INTERNAL, "body runner");
  free_case(&c);
}

/* ---- While ---- */

static void test_while(void) {
  rlx_shape v2 = SHP(F32, 2), s = SHP(F32);
  /* carried (acc [2], i []); cond: i < 5; body: (acc * 2, i + 1) */
  rlx_graph *cond = child("cond"), *body = child("body");
  rlx_id ca = input(cond, "acc", v2), ci = input(cond, "i", s);
  (void)ca;
  rlx_id lt = RLX_NO_ID;
  CHECK_OK(rlx_compare(cond, RLX_CMP_LT, ci, konst(cond, 5.0f), &lt));
  outs(cond, 1, &lt);
  rlx_id ba = input(body, "acc", v2), bi = input(body, "i", s);
  outs(body, 2,
       (rlx_id[]){bin(body, RLX_BINOP_MUL, ba, konst(body, 2.0f)), bin(body, RLX_BINOP_ADD, bi, konst(body, 1.0f))});
  rlx_attrs_While w;
  rlx_attrs_init(RLX_OP_While, &w);
  w.cond = cond;
  w.body = body;
  rt c;
  CHECK_OK(run_node(RLX_OP_While, &w, 2, (rt_arg[]){{v2, VALS(1, 3)}, {s, VALS(0)}}, &c));
  CHECK_OUT(&c, VALS(32, 96), 2, 0, 0);
  CHECK(body_runs == 11); /* 6 conditions, 5 bodies */
  free_case(&c);
  w.max_iterations = (rlx_oi64){.has = true, .v = 3};
  CHECK_OK(run_node(RLX_OP_While, &w, 2, (rt_arg[]){{v2, VALS(1, 3)}, {s, VALS(0)}}, &c));
  CHECK_OUT(&c, VALS(8, 24), 2, 0, 0);
  CHECK(body_runs == 6);
  free_case(&c);
  w.max_iterations = (rlx_oi64){.has = true, .v = 0};
  CHECK_OK(run_node(RLX_OP_While, &w, 2, (rt_arg[]){{v2, VALS(1, 3)}, {s, VALS(0)}}, &c));
  CHECK_OUT(&c, VALS(1, 3), 2, 0, 0);
  CHECK(body_runs == 0);
  free_case(&c);
  /* condition false from the start */
  w.max_iterations = (rlx_oi64){.has = false, .v = 0};
  CHECK_OK(run_node(RLX_OP_While, &w, 2, (rt_arg[]){{v2, VALS(1, 3)}, {s, VALS(7)}}, &c));
  CHECK_OUT(&c, VALS(1, 3), 2, 0, 0);
  CHECK(body_runs == 1);
  free_case(&c);
}

/* ---- Scan ---- */

static void test_scan(void) {
  rlx_shape v2 = SHP(F32, 2);
  /* carry' = carry * b + x_t, b broadcast [2], xs [4, 2] */
  rlx_graph *body = child("step");
  rlx_id cr = input(body, "carry", v2), bb = input(body, "b", v2), xt = input(body, "x", v2);
  outs(body, 1, (rlx_id[]){bin(body, RLX_BINOP_ADD, bin(body, RLX_BINOP_MUL, cr, bb), xt)});
  const double *init = VALS(1, -1), *b = VALS(2, 3), *xs = VALS(1, 2, 3, 4, 5, 6, 7, 8);
  double traj[4][2], cur[2] = {1, -1};
  for (int t = 0; t < 4; t++)
    for (int j = 0; j < 2; j++) traj[t][j] = cur[j] = cur[j] * b[j] + xs[t * 2 + j];
  rlx_attrs_Scan a;
  rlx_attrs_init(RLX_OP_Scan, &a);
  a.body = body;
  a.length = 4;
  a.num_bcast = 1;
  a.num_xs = 1;
  rt c;
  rt_arg args[3] = {{v2, init}, {v2, b}, {SHP(F32, 4, 2), xs}};
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, args, &c));
  CHECK_OUT(&c, traj[3], 2, 0, 0);
  CHECK(body_runs == 4);
  free_case(&c);
  a.save_trajectory = true;
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, args, &c));
  CHECK_OUT(&c, &traj[0][0], 8, 0, 0);
  free_case(&c);
  /* checkpoints: K = 3 -> rows floor(j*4/3) = 0, 1, 2; K = 2 -> rows 0, 2 */
  a.num_checkpoints = 3;
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, args, &c));
  CHECK(c.out.shape.dims[0] == 3);
  CHECK_OUT(&c, &traj[0][0], 6, 0, 0);
  free_case(&c);
  a.num_checkpoints = 2;
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, args, &c));
  CHECK_OUT(&c, VALS(traj[0][0], traj[0][1], traj[2][0], traj[2][1]), 4, 0, 0);
  free_case(&c);
  /* length 0: the final carry is init, the trajectory is empty */
  a.num_checkpoints = 0;
  a.length = 0;
  a.save_trajectory = false;
  rt_arg empty[3] = {{v2, init}, {v2, b}, {SHP(F32, 0, 2), NULL}};
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, empty, &c));
  CHECK_OUT(&c, init, 2, 0, 0);
  CHECK(body_runs == 0);
  free_case(&c);
  a.save_trajectory = true;
  CHECK_OK(run_node(RLX_OP_Scan, &a, 3, empty, &c));
  CHECK(rt_out_n(&c) == 0 && c.out.shape.rank == 2);
  free_case(&c);
}

/* ---- end to end through the executor (its run_body compiles the bodies) ---- */

static void test_end_to_end(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "loop", &g));
  rlx_shape s = SHP(F32);
  rlx_graph *cond = NULL, *body = NULL;
  CHECK_OK(rlx_graph_create_child(g, "cond", &cond));
  CHECK_OK(rlx_graph_create_child(g, "body", &body));
  rlx_id lt = RLX_NO_ID;
  CHECK_OK(rlx_compare(cond, RLX_CMP_LT, input(cond, "x", s), konst(cond, 100.0f), &lt));
  outs(cond, 1, &lt);
  rlx_id bx = input(body, "x", s);
  outs(body, 1, (rlx_id[]){bin(body, RLX_BINOP_MUL, bx, konst(body, 3.0f))});
  rlx_attrs_While w;
  rlx_attrs_init(RLX_OP_While, &w);
  w.cond = cond;
  w.body = body;
  rlx_id x = input(g, "x", s), loop = RLX_NO_ID;
  CHECK_OK(rlx_build_While(g, &x, 1, &w, "loop", &loop));
  CHECK_OK(rlx_graph_set_outputs(g, &loop, 1));
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(g, "cpu", NULL, &e);
  CHECK_MSG(st == RLX_OK, "compile: %s", rlx_last_error());
  if (st == RLX_OK) {
    float one = 1.0f;
    rlx_named_tensor in = {"x", {&one, s}};
    const rlx_tensor *out = NULL;
    uint32_t nout = 0;
    st = rlx_executable_run(e, &in, 1, &out, &nout);
    CHECK_MSG(st == RLX_OK, "run: %s", rlx_last_error());
    if (st == RLX_OK) CHECK(nout == 1 && *(const float *)out[0].data == 243.0f); /* 1, 3, ..., 81, 243 */
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
}

int main(void) {
  CHECK_OK(rlx_graph_create(NULL, "outer", &G));
  test_if();
  test_while();
  test_scan();
  rlx_graph_free(G);
  test_end_to_end();
  return rlx_test_finish("ref_control");
}
