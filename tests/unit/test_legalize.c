/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Legalize, rebuild and inline: unsupported kinds are all reported in one message, decompositions
 * that emit further unclaimed kinds run for more rounds, bodies of claimed control flow are
 * legalized too, the dispatch report names each kind's path, and every allocation failure is
 * reported without leaks. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "rlx_test.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})

/* Every kind claimed except the listed ones. */
static void claim_all_but(uint8_t claimed[RLX_OP_COUNT], const rlx_op *without, uint32_t n) {
  memset(claimed, 1, RLX_OP_COUNT);
  for (uint32_t i = 0; i < n; i++) claimed[without[i]] = 0;
}

static uint32_t count_op(const rlx_graph *g, rlx_op op) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) c += rlx_graph_node(g, i)->op == op;
  return c;
}

static rlx_id un(rlx_graph *g, rlx_op op, rlx_id x, const void *attrs, const char *name) {
  rlx_id out = RLX_NO_ID;
  CHECK_OK(rlx_graph_add(g, op, &x, 1, attrs, NULL, name, &out));
  return out;
}

/* Two kinds without a kernel or a decomposition: one message naming both nodes. */
static void test_reports_every_node(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, d, s, out;
  CHECK_OK(rlx_input(g, "x", SH(F32, 3, 3), &x));
  d = un(g, RLX_OP_Det, x, NULL, "det");
  rlx_attrs_Sort sa = {.axis = -1, .descending = false};
  s = un(g, RLX_OP_Sort, x, &sa, "sorted");
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, s, d, &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  rlx_op without[] = {RLX_OP_Det, RLX_OP_Sort};
  uint8_t claimed[RLX_OP_COUNT];
  claim_all_but(claimed, without, 2);
  rlx_dispatch_report rep;
  rlx_graph *res = (rlx_graph *)1;
  CHECK_ERR(rlx_legalize(g, claimed, NULL, &rep, &res), RLX_ERR_UNSUPPORTED, "2 nodes have no path");
  const char *msg = rlx_last_error();
  CHECK_MSG(strstr(msg, "@main/%1 Det \"det\"") != NULL, "%s", msg);
  CHECK_MSG(strstr(msg, "@main/%2 Sort \"sorted\"") != NULL, "%s", msg);
  CHECK(res == NULL);
  CHECK(rep.path[RLX_OP_Det] == RLX_PATH_UNSUPPORTED && rep.count[RLX_OP_Det] == 1);
  CHECK(rep.path[RLX_OP_Sort] == RLX_PATH_UNSUPPORTED);
  CHECK(rep.path[RLX_OP_Binary] == RLX_PATH_NATIVE && rep.path[RLX_OP_Input] == RLX_PATH_NATIVE);
  CHECK(rep.path[RLX_OP_MatMul] == RLX_PATH_NONE && rep.count[RLX_OP_MatMul] == 0);
  rlx_graph_free(g);
}

/* FakeQuantize emits a Clamp; with Clamp unclaimed too, a second round decomposes it. The report
 * says decomposed for both, native and host-staged for the rest. */
static void test_rounds_and_report(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, fq, c, out;
  CHECK_OK(rlx_input(g, "x", SH(F32, 2, 3), &x));
  rlx_attrs_FakeQuantize fa;
  rlx_attrs_init(RLX_OP_FakeQuantize, &fa);
  fa.axis = 0;
  fq = un(g, RLX_OP_FakeQuantize, x, &fa, "fq");
  rlx_attrs_Clamp ca = {.min = -1.0f, .max = 1.0f};
  c = un(g, RLX_OP_Clamp, fq, &ca, NULL);
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, c, x, &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  rlx_op without[] = {RLX_OP_FakeQuantize, RLX_OP_Clamp};
  uint8_t claimed[RLX_OP_COUNT], staged[RLX_OP_COUNT] = {0};
  claim_all_but(claimed, without, 2);
  staged[RLX_OP_Reduce] = 1;
  rlx_dispatch_report rep;
  rlx_graph *res = NULL;
  CHECK_OK(rlx_legalize(g, claimed, staged, &rep, &res));
  if (res) {
    CHECK(count_op(res, RLX_OP_FakeQuantize) == 0 && count_op(res, RLX_OP_Clamp) == 0);
    CHECK(count_op(res, RLX_OP_Reduce) == 1);
    CHECK(count_op(res, RLX_OP_Binary) >= 6); /* div, max, div, (clamp) max, min, mul, add */
    CHECK_OK(rlx_verify(res));
    CHECK(rlx_graph_output_count(res) == 1);
    CHECK(rep.nodes_before == rlx_graph_node_count(g) && rep.nodes_after == rlx_graph_node_count(res));
  }
  CHECK(rep.path[RLX_OP_FakeQuantize] == RLX_PATH_DECOMPOSED && rep.count[RLX_OP_FakeQuantize] == 1);
  CHECK(rep.path[RLX_OP_Clamp] == RLX_PATH_DECOMPOSED);
  CHECK(rep.path[RLX_OP_Binary] == RLX_PATH_NATIVE && rep.count[RLX_OP_Binary] == 1);
  CHECK(rep.path[RLX_OP_Reduce] == RLX_PATH_NONE); /* not in the input graph */
  rlx_graph_free(res);

  /* Everything claimed: the graph is copied unchanged; Reduce host-staged shows up when present. */
  rlx_graph *g2;
  CHECK_OK(rlx_graph_create(NULL, "main", &g2));
  rlx_id y, r;
  CHECK_OK(rlx_input(g2, "y", SH(F32, 2, 3), &y));
  int64_t ax[1] = {1};
  CHECK_OK(rlx_reduce_axes(g2, RLX_REDUCE_SUM, y, 1, ax, false, &r));
  CHECK_OK(rlx_graph_set_outputs(g2, &r, 1));
  memset(claimed, 1, sizeof claimed);
  CHECK_OK(rlx_legalize(g2, claimed, staged, &rep, &res));
  if (res) CHECK(rlx_graph_equal(res, g2));
  CHECK(rep.path[RLX_OP_Reduce] == RLX_PATH_HOST_STAGED);
  CHECK(rep.path[RLX_OP_Input] == RLX_PATH_NATIVE);
  rlx_graph_free(res);
  rlx_graph_free(g2);
  rlx_graph_free(g);
}

/* If(pred, x) whose then-branch holds a Clamp (unclaimed) and else-branch a plain Neg. */
static rlx_graph *if_graph(rlx_op then_op) {
  rlx_graph *g, *tb, *eb;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id p, x, out, bx, by;
  CHECK_OK(rlx_input(g, "p", rlx_shape_scalar(RLX_BOOL), &p));
  CHECK_OK(rlx_input(g, "x", SH(F32, 4), &x));
  CHECK_OK(rlx_graph_create_child(g, "then", &tb));
  CHECK_OK(rlx_graph_create_child(g, "else", &eb));
  CHECK_OK(rlx_input(tb, "x", SH(F32, 4), &bx));
  if (then_op == RLX_OP_Clamp) {
    rlx_attrs_Clamp ca = {.min = 0.0f, .max = 1.0f};
    by = un(tb, RLX_OP_Clamp, bx, &ca, "clip");
  } else {
    rlx_attrs_Sort sa = {.axis = -1, .descending = true};
    by = un(tb, RLX_OP_Sort, bx, &sa, "sort");
  }
  CHECK_OK(rlx_graph_set_outputs(tb, &by, 1));
  CHECK_OK(rlx_input(eb, "x", SH(F32, 4), &bx));
  CHECK_OK(rlx_activation(eb, RLX_ACT_NEG, bx, &by));
  CHECK_OK(rlx_graph_set_outputs(eb, &by, 1));
  rlx_attrs_If ia = {.then_branch = tb, .else_branch = eb};
  rlx_id in[2] = {p, x};
  CHECK_OK(rlx_graph_add(g, RLX_OP_If, in, 2, &ia, NULL, "branch", &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  return g;
}

static void test_bodies_of_claimed_control_flow(void) {
  /* Claimed If, unclaimed Clamp inside: the body is legalized, the If stays. */
  rlx_graph *g = if_graph(RLX_OP_Clamp), *res = NULL;
  rlx_op without[] = {RLX_OP_Clamp};
  uint8_t claimed[RLX_OP_COUNT];
  claim_all_but(claimed, without, 1);
  rlx_dispatch_report rep;
  CHECK_OK(rlx_legalize(g, claimed, NULL, &rep, &res));
  if (res) {
    CHECK(count_op(res, RLX_OP_If) == 1);
    const rlx_node *n = rlx_graph_node(res, rlx_graph_outputs(res)[0]);
    CHECK(n->op == RLX_OP_If);
    if (n->op == RLX_OP_If) {
      CHECK(count_op(n->attrs.If.then_branch, RLX_OP_Clamp) == 0);
      CHECK(count_op(n->attrs.If.then_branch, RLX_OP_Binary) == 2);
      CHECK(count_op(n->attrs.If.else_branch, RLX_OP_Activation) == 1);
    }
    CHECK_OK(rlx_verify(res));
  }
  CHECK(rep.path[RLX_OP_Clamp] == RLX_PATH_DECOMPOSED && rep.count[RLX_OP_Clamp] == 1);
  CHECK(rep.path[RLX_OP_If] == RLX_PATH_NATIVE);
  rlx_graph_free(res);

  /* Unclaimed If: both bodies are inlined and selected with Where; the Clamp inside follows. */
  rlx_op without2[] = {RLX_OP_Clamp, RLX_OP_If};
  claim_all_but(claimed, without2, 2);
  CHECK_OK(rlx_legalize(g, claimed, NULL, &rep, &res));
  if (res) {
    CHECK(count_op(res, RLX_OP_If) == 0 && count_op(res, RLX_OP_Clamp) == 0);
    CHECK(count_op(res, RLX_OP_Where) == 1);
    CHECK_OK(rlx_verify(res));
  }
  rlx_graph_free(res);
  rlx_graph_free(g);

  /* Claimed If, a kind without any path inside its body: reported with the body's path. */
  g = if_graph(RLX_OP_Sort);
  rlx_op without3[] = {RLX_OP_Sort};
  claim_all_but(claimed, without3, 1);
  res = NULL;
  CHECK_ERR(rlx_legalize(g, claimed, NULL, &rep, &res), RLX_ERR_UNSUPPORTED, "@main/@then/%1 Sort \"sort\"");
  CHECK(strstr(rlx_last_error(), "1 node has no path") != NULL);
  CHECK(res == NULL);
  rlx_graph_free(g);
}

/* An unbounded While cannot be unrolled: its node is listed with the reason, also after a later
 * node (a Clamp) was decomposed in the same round and the graph was rebuilt. */
static void test_stuck_decomposition(void) {
  rlx_graph *g, *cb, *bb;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, out, bx, by, lim, cl;
  CHECK_OK(rlx_input(g, "x", rlx_shape_scalar(RLX_F32), &x));
  CHECK_OK(rlx_graph_create_child(g, "cond", &cb));
  CHECK_OK(rlx_graph_create_child(g, "body", &bb));
  CHECK_OK(rlx_input(cb, "x", rlx_shape_scalar(RLX_F32), &bx));
  CHECK_OK(rlx_scalar_f32(cb, 10.0f, &lim));
  CHECK_OK(rlx_compare(cb, RLX_CMP_LT, bx, lim, &by));
  CHECK_OK(rlx_graph_set_outputs(cb, &by, 1));
  CHECK_OK(rlx_input(bb, "x", rlx_shape_scalar(RLX_F32), &bx));
  CHECK_OK(rlx_binary(bb, RLX_BINOP_ADD, bx, bx, &by));
  CHECK_OK(rlx_graph_set_outputs(bb, &by, 1));
  rlx_attrs_While wa = {.cond = cb, .body = bb, .max_iterations = {.has = false, .v = 0}};
  CHECK_OK(rlx_graph_add(g, RLX_OP_While, &x, 1, &wa, NULL, "loop", &out));
  rlx_attrs_Clamp ca = {.min = 0.0f, .max = 1.0f};
  cl = un(g, RLX_OP_Clamp, out, &ca, NULL);
  CHECK_OK(rlx_graph_set_outputs(g, &cl, 1));
  rlx_op without[] = {RLX_OP_While, RLX_OP_Clamp};
  uint8_t claimed[RLX_OP_COUNT];
  claim_all_but(claimed, without, 2);
  rlx_dispatch_report rep;
  rlx_graph *res = NULL;
  CHECK_ERR(rlx_legalize(g, claimed, NULL, &rep, &res), RLX_ERR_UNSUPPORTED,
            "@main/%1 While \"loop\": cannot be decomposed");
  CHECK(strstr(rlx_last_error(), "max_iterations") != NULL);
  CHECK(strstr(rlx_last_error(), "Clamp") == NULL);
  CHECK(rep.path[RLX_OP_While] == RLX_PATH_UNSUPPORTED && rep.path[RLX_OP_Clamp] == RLX_PATH_DECOMPOSED);
  rlx_graph_free(g);
}

/* rebuild: copying every node gives an equal graph, bodies included. */
static void test_rebuild(void) {
  rlx_graph *g = if_graph(RLX_OP_Clamp), *copy = NULL;
  rlx_rebuild rb;
  CHECK_OK(rlx_rebuild_begin(g, &rb));
  for (rlx_id i = 0; i < rlx_graph_node_count(g); i++) CHECK_OK(rlx_rebuild_copy(&rb, i));
  CHECK_OK(rlx_rebuild_finish(&rb, &copy));
  if (copy) CHECK(rlx_graph_equal(copy, g));
  rlx_graph_free(copy);
  /* Finishing before an output was copied is an error; abort releases everything. */
  CHECK_OK(rlx_rebuild_begin(g, &rb));
  CHECK_OK(rlx_rebuild_copy(&rb, 0));
  CHECK_ERR(rlx_rebuild_copy(&rb, 2), RLX_ERR_INTERNAL, "not been copied");
  CHECK_ERR(rlx_rebuild_finish(&rb, &copy), RLX_ERR_INTERNAL, "never copied");
  rlx_rebuild_abort(&rb);
  rlx_graph_free(g);
}

/* inline: Inputs bind positionally, Params by name (matched or created), shapes are checked. */
static void test_inline(void) {
  rlx_graph *g, *body;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  CHECK_OK(rlx_graph_create(NULL, "body", &body));
  rlx_id a, b, w, x, y, wp, u, v, t, outs[2];
  CHECK_OK(rlx_input(body, "a", SH(F32, 3), &a));
  CHECK_OK(rlx_param(body, "w", SH(F32, 3), &wp));
  CHECK_OK(rlx_param(body, "fresh", SH(F32, 3), &u));
  CHECK_OK(rlx_input(body, "b", SH(F32, 3), &b));
  CHECK_OK(rlx_binary(body, RLX_BINOP_SUB, a, b, &v));
  CHECK_OK(rlx_binary(body, RLX_BINOP_MUL, v, wp, &t));
  CHECK_OK(rlx_binary(body, RLX_BINOP_ADD, t, u, &t));
  rlx_id bo[2] = {t, v};
  CHECK_OK(rlx_graph_set_outputs(body, bo, 2));

  CHECK_OK(rlx_param(g, "w", SH(F32, 3), &w));
  CHECK_OK(rlx_input(g, "x", SH(F32, 3), &x));
  CHECK_OK(rlx_input(g, "y", SH(F32, 3), &y));
  rlx_id args[2] = {y, x};
  uint32_t before = rlx_graph_node_count(g);
  CHECK_OK(rlx_inline_graph(g, body, args, 2, outs, 2));
  CHECK(rlx_graph_node_count(g) == before + 4); /* Param "fresh" + sub, mul, add */
  CHECK(rlx_graph_find_leaf(g, RLX_OP_Param, "fresh") != RLX_NO_ID);
  const rlx_node *sub = rlx_graph_node(g, outs[1]);
  CHECK(sub->op == RLX_OP_Binary && sub->inputs[0] == y && sub->inputs[1] == x);
  const rlx_node *mul = rlx_graph_node(g, rlx_graph_node(g, outs[0])->inputs[0]);
  CHECK(mul->inputs[1] == w);
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  CHECK_OK(rlx_verify(g));

  rlx_id bad;
  CHECK_ERR(rlx_inline_graph(g, body, args, 1, outs, 1), RLX_ERR_INVALID_ARG, "2 Input nodes but 1 arguments");
  CHECK_ERR(rlx_inline_graph(g, body, args, 2, outs, 3), RLX_ERR_INVALID_ARG, "3 outputs requested");
  CHECK_OK(rlx_input(g, "z", SH(F32, 4), &bad));
  rlx_id args2[2] = {bad, x};
  CHECK_ERR(rlx_inline_graph(g, body, args2, 2, outs, 1), RLX_ERR_SHAPE, "argument 0");
  rlx_graph_free(body);
  rlx_graph_free(g);

  /* A body written for a symbolic batch, inlined on a static argument: shapes are inferred again. */
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  CHECK_OK(rlx_graph_create(NULL, "body", &body));
  CHECK_OK(rlx_input(body, "a", SH(F32, RLX_DIM_SYM(0), 3), &a));
  CHECK_OK(rlx_activation(body, RLX_ACT_EXP, a, &v));
  CHECK_OK(rlx_reduce_axes(body, RLX_REDUCE_SUM, v, 1, (int64_t[]){1}, true, &t));
  CHECK_OK(rlx_graph_set_outputs(body, &t, 1));
  CHECK_OK(rlx_input(g, "x", SH(F32, 2, 3), &x));
  CHECK_OK(rlx_inline_graph(g, body, &x, 1, outs, 1));
  rlx_shape want = SH(F32, 2, 1);
  CHECK(rlx_shape_equal(&rlx_graph_node(g, outs[0])->shape, &want));
  CHECK_OK(rlx_graph_set_outputs(g, outs, 1));
  CHECK_OK(rlx_verify(g));
  rlx_graph_free(body);
  rlx_graph_free(g);
}

/* Decompositions keep a symbolic batch axis: -1 reshapes, Expand with kept axes, Where-built pad
 * blocks. The result verifies with the symbol in place. DotGeneral needs static shapes and says so. */
static void test_symbolic(void) {
  rlx_dim B = RLX_DIM_SYM(0);
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, img, gm, bt, p, gn, rz, tl, outs[4];
  CHECK_OK(rlx_input(g, "x", SH(F32, B, 3), &x));
  CHECK_OK(rlx_input(g, "img", SH(F32, B, 4, 2, 2), &img));
  CHECK_OK(rlx_input(g, "gamma", SH(F32, 4), &gm));
  CHECK_OK(rlx_input(g, "beta", SH(F32, 4), &bt));
  rlx_attrs_Pad pa = {.pads = {.v = (int64_t[]){0, 0, 1, 2}, .n = 4}, .mode = RLX_PAD_MODE_CONSTANT, .value = 7.0f};
  p = un(g, RLX_OP_Pad, x, &pa, NULL);
  rlx_attrs_GroupNorm ga = {.num_groups = 2, .eps = 1e-5f};
  rlx_id gin[3] = {img, gm, bt};
  CHECK_OK(rlx_graph_add(g, RLX_OP_GroupNorm, gin, 3, &ga, NULL, NULL, &gn));
  rz = un(g, RLX_OP_ResizeNearest2x, img, NULL, NULL);
  rlx_attrs_Tile ta = {.reps = {.v = (int64_t[]){1, 3}, .n = 2}};
  tl = un(g, RLX_OP_Tile, x, &ta, NULL);
  outs[0] = p, outs[1] = gn, outs[2] = rz, outs[3] = tl;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 4));
  rlx_op without[] = {RLX_OP_Pad, RLX_OP_GroupNorm, RLX_OP_ResizeNearest2x, RLX_OP_Tile};
  uint8_t claimed[RLX_OP_COUNT];
  claim_all_but(claimed, without, 4);
  rlx_graph *res = NULL;
  CHECK_OK(rlx_legalize(g, claimed, NULL, NULL, &res));
  if (res) {
    for (uint32_t i = 0; i < 4; i++) {
      CHECK(count_op(res, without[i]) == 0);
      rlx_shape a = rlx_graph_node(res, rlx_graph_outputs(res)[i])->shape, b = rlx_graph_node(g, outs[i])->shape;
      CHECK(rlx_shape_equal(&a, &b));
    }
    CHECK(count_op(res, RLX_OP_Where) == 2); /* the two constant blocks of the padded axis */
    CHECK_OK(rlx_verify(res));
  }
  rlx_graph_free(res);
  rlx_graph_free(g);

  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id l, r, d;
  CHECK_OK(rlx_input(g, "l", SH(F32, B, 3), &l));
  CHECK_OK(rlx_input(g, "r", SH(F32, 3, 2), &r));
  rlx_attrs_DotGeneral da = {.lhs_contracting = {.v = (int64_t[]){1}, .n = 1},
                             .rhs_contracting = {.v = (int64_t[]){0}, .n = 1},
                             .lhs_batch = {.v = NULL, .n = 0},
                             .rhs_batch = {.v = NULL, .n = 0}};
  rlx_id din[2] = {l, r};
  CHECK_OK(rlx_graph_add(g, RLX_OP_DotGeneral, din, 2, &da, NULL, "dot", &d));
  CHECK_OK(rlx_graph_set_outputs(g, &d, 1));
  rlx_op w2[] = {RLX_OP_DotGeneral};
  claim_all_but(claimed, w2, 1);
  CHECK_ERR(rlx_legalize(g, claimed, NULL, NULL, &res), RLX_ERR_UNSUPPORTED,
            "DotGeneral \"dot\": cannot be decomposed: operands have symbolic extents");
  rlx_graph_free(g);
}

/* The kinds this project decomposes all have a table entry; primitives without one do not. */
static void test_table(void) {
  const rlx_op have[] = {RLX_OP_Fma,
                         RLX_OP_Clamp,
                         RLX_OP_FakeQuantize,
                         RLX_OP_DotGeneral,
                         RLX_OP_GroupNorm,
                         RLX_OP_BatchNormInference,
                         RLX_OP_Slice,
                         RLX_OP_Pad,
                         RLX_OP_Tile,
                         RLX_OP_Trilu,
                         RLX_OP_Roll,
                         RLX_OP_KvAppend,
                         RLX_OP_CumProd,
                         RLX_OP_CumMax,
                         RLX_OP_Histogram,
                         RLX_OP_ResizeNearest2x,
                         RLX_OP_ConvTranspose2d,
                         RLX_OP_AxialRope2d,
                         RLX_OP_FusedSwiGLU,
                         RLX_OP_FusedMatMulBiasAct,
                         RLX_OP_FusedMatMulResidual,
                         RLX_OP_FusedConvBiasAct,
                         RLX_OP_FusedResidualLN,
                         RLX_OP_FusedResidualRmsNorm,
                         RLX_OP_FusedAttentionBlock,
                         RLX_OP_FusedTransformerLayer,
                         RLX_OP_LoraMatMul,
                         RLX_OP_AdaLayerNorm,
                         RLX_OP_GatedResidual,
                         RLX_OP_ElementwiseRegion,
                         RLX_OP_TransformRegion,
                         RLX_OP_BatchElementwiseRegion,
                         RLX_OP_If,
                         RLX_OP_While,
                         RLX_OP_Scan,
                         RLX_OP_CustomFn};
  for (size_t i = 0; i < sizeof have / sizeof *have; i++)
    CHECK_MSG(rlx_decompose_table[have[i]] != NULL, "%s has no decomposition", rlx_op_name(have[i]));
  const rlx_op none[] = {RLX_OP_Input, RLX_OP_Binary, RLX_OP_MatMul, RLX_OP_Reshape, RLX_OP_Det, RLX_OP_Attention};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++) CHECK(rlx_decompose_table[none[i]] == NULL);
}

/* Graphs for the allocation-failure sweep; each returns the kinds to leave unclaimed. */
static uint32_t build_pad(rlx_graph *g, rlx_op *without) {
  rlx_id x, y;
  rlx_attrs_Pad pa = {.pads = {.v = (int64_t[]){1, 1, 2, 0}, .n = 4}, .mode = RLX_PAD_MODE_REFLECT, .value = 0.0f};
  CHECK_OK(rlx_input(g, "x", SH(F32, 3, 4), &x));
  CHECK_OK(rlx_graph_add(g, RLX_OP_Pad, &x, 1, &pa, NULL, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  without[0] = RLX_OP_Pad;
  return 1;
}

/* Unclaimed Scan (trajectory) whose body holds an unclaimed Clamp and reads a Param. */
static uint32_t build_scan(rlx_graph *g, rlx_op *without) {
  rlx_graph *b;
  rlx_id init, xs, y, c, xt, w, o;
  CHECK_OK(rlx_input(g, "init", SH(F32, 2), &init));
  CHECK_OK(rlx_input(g, "xs", SH(F32, 3, 2), &xs));
  CHECK_OK(rlx_param(g, "w", SH(F32, 2), &w));
  CHECK_OK(rlx_graph_create_child(g, "step", &b));
  CHECK_OK(rlx_input(b, "c", SH(F32, 2), &c));
  CHECK_OK(rlx_input(b, "x", SH(F32, 2), &xt));
  CHECK_OK(rlx_param(b, "w", SH(F32, 2), &w));
  CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, c, w, &o));
  CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, o, xt, &o));
  rlx_attrs_Clamp ca = {.min = -1.0f, .max = 1.0f};
  o = un(b, RLX_OP_Clamp, o, &ca, NULL);
  CHECK_OK(rlx_graph_set_outputs(b, &o, 1));
  rlx_attrs_Scan sa = {
      .body = b, .length = 3, .save_trajectory = true, .num_bcast = 0, .num_xs = 1, .num_checkpoints = 0};
  rlx_id in[2] = {init, xs};
  CHECK_OK(rlx_graph_add(g, RLX_OP_Scan, in, 2, &sa, NULL, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  without[0] = RLX_OP_Scan;
  without[1] = RLX_OP_Clamp;
  return 2;
}

/* Claimed If around an unclaimed Clamp, next to an unclaimed If. */
static uint32_t build_if(rlx_graph *g, rlx_op *without) {
  rlx_graph *tb, *eb;
  rlx_id p, x, bx, by, y;
  CHECK_OK(rlx_input(g, "p", rlx_shape_scalar(RLX_BOOL), &p));
  CHECK_OK(rlx_input(g, "x", SH(F32, 4), &x));
  CHECK_OK(rlx_graph_create_child(g, "then", &tb));
  CHECK_OK(rlx_graph_create_child(g, "else", &eb));
  CHECK_OK(rlx_input(tb, "x", SH(F32, 4), &bx));
  rlx_attrs_Clamp ca = {.min = 0.0f, .max = 1.0f};
  by = un(tb, RLX_OP_Clamp, bx, &ca, NULL);
  CHECK_OK(rlx_graph_set_outputs(tb, &by, 1));
  CHECK_OK(rlx_input(eb, "x", SH(F32, 4), &bx));
  CHECK_OK(rlx_activation(eb, RLX_ACT_NEG, bx, &by));
  CHECK_OK(rlx_graph_set_outputs(eb, &by, 1));
  rlx_attrs_If ia = {.then_branch = tb, .else_branch = eb};
  rlx_id in[2] = {p, x};
  CHECK_OK(rlx_graph_add(g, RLX_OP_If, in, 2, &ia, NULL, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  without[0] = RLX_OP_Clamp;
  return 1;
}

/* Every allocation failure inside legalize surfaces as OOM and leaks nothing. */
static void test_alloc_failures(uint32_t (*build)(rlx_graph *, rlx_op *), const char *what) {
  int ok_at = 0;
  for (long n = 1; n < 20000 && !ok_at; n++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, 0);
    rlx_graph *g = NULL, *res = NULL;
    if (rlx_graph_create(&fa.al, "main", &g) != RLX_OK) break;
    rlx_op without[4];
    uint32_t nw = build(g, without);
    fa.count = 0;
    fa.fail_at = n;
    long live_before = fa.live;
    uint8_t claimed[RLX_OP_COUNT];
    claim_all_but(claimed, without, nw);
    rlx_status s = rlx_legalize(g, claimed, NULL, NULL, &res);
    if (s == RLX_OK) {
      ok_at = 1;
      for (uint32_t i = 0; i < nw; i++) CHECK(count_op(res, without[i]) == 0);
      rlx_graph_free(res);
    } else {
      CHECK_MSG(s == RLX_ERR_OOM, "%s: fail_at %ld gave %s: %s", what, n, rlx_status_text(s), rlx_last_error());
      CHECK(res == NULL);
    }
    CHECK_MSG(fa.live == live_before, "%s: fail_at %ld leaked %ld blocks", what, n, fa.live - live_before);
    rlx_graph_free(g);
    CHECK(fa.live == 0);
  }
  CHECK_MSG(ok_at, "%s never succeeded", what);
}

int main(void) {
  test_reports_every_node();
  test_rounds_and_report();
  test_bodies_of_claimed_control_flow();
  test_stuck_decomposition();
  test_rebuild();
  test_inline();
  test_symbolic();
  test_table();
  test_alloc_failures(build_pad, "Pad");
  test_alloc_failures(build_scan, "Scan");
  test_alloc_failures(build_if, "If");
  return rlx_test_finish("legalize");
}
