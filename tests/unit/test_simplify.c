/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Simplify: constant folding gives the values worked out here by hand, identities fire only when
 * they keep the shape exactly, CSE merges duplicates but never random ops or leaves, DCE drops
 * dead nodes but keeps unused Inputs and Params, every option switches its part, bodies are
 * simplified too, and allocation failures are clean. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "rlx_test.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})

static rlx_compile_options opts(bool fold, bool cse, bool dce) {
  rlx_compile_options o;
  memset(&o, 0, sizeof o);
  o.fold_constants = fold;
  o.cse = cse;
  o.dce = dce;
  o.check_plan = true;
  return o;
}

static uint32_t count_op(const rlx_graph *g, rlx_op op) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) c += rlx_graph_node(g, i)->op == op;
  return c;
}

static rlx_id cf32(rlx_graph *g, rlx_shape s, const float *v) {
  size_t n;
  rlx_shape_numel(&s, &n);
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_constant(g, s, v, n * sizeof(float), &id));
  return id;
}

static const rlx_node *out_node(const rlx_graph *g, uint32_t i) { return rlx_graph_node(g, rlx_graph_outputs(g)[i]); }

/* (a + b) * 2 reshaped to [3, 1], all constants, then added to an input: the constant part folds to
 * one Constant [3, 1] with {(1+10)*2, (2+20)*2, (3+30)*2}. */
static void test_fold(void) {
  rlx_graph *g, *s = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30}, two = 2;
  rlx_id a = cf32(g, SH(F32, 3), av), b = cf32(g, SH(F32, 3), bv), c2 = cf32(g, rlx_shape_scalar(RLX_F32), &two);
  rlx_id sum, prod, r, x, out;
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, a, b, &sum));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, sum, c2, &prod));
  CHECK_OK(rlx_reshape(g, prod, 2, (int64_t[]){3, 1}, &r));
  CHECK_OK(rlx_input(g, "x", SH(F32, 3, 4), &x));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, r, &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));

  rlx_compile_options o = opts(true, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK_MSG(rlx_graph_node_count(s) == 3, "%u nodes", rlx_graph_node_count(s)); /* x, folded constant, add */
    const rlx_node *add = out_node(s, 0);
    CHECK(add->op == RLX_OP_Binary);
    const rlx_node *k = rlx_graph_node(s, add->inputs[1]);
    CHECK(k->op == RLX_OP_Constant);
    if (k->op == RLX_OP_Constant) {
      rlx_shape want = SH(F32, 3, 1);
      CHECK(rlx_shape_equal(&k->shape, &want));
      CHECK(k->attrs.Constant.data.n == 12);
      float v[3];
      memcpy(v, k->attrs.Constant.data.p, sizeof v);
      CHECK(v[0] == 22.0f && v[1] == 44.0f && v[2] == 66.0f);
    }
    CHECK_OK(rlx_verify(s));
  }
  rlx_graph_free(s);

  /* fold_constants off: nothing folds; DCE keeps everything that is live. */
  o = opts(false, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK(count_op(s, RLX_OP_Binary) == 3);
    CHECK(count_op(s, RLX_OP_Reshape) == 1);
  }
  rlx_graph_free(s);
  rlx_graph_free(g);

  /* Folding keeps the node's dtype: an i32 Compare gives a Bool constant, Cast to f16 rounds. */
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  int32_t iv[4] = {-2, 0, 3, 7}, lim = 1;
  rlx_id ci, cl, cmp, cast, cast16;
  CHECK_OK(rlx_constant(g, SH(I32, 4), iv, sizeof iv, &ci));
  CHECK_OK(rlx_constant(g, rlx_shape_scalar(RLX_I32), &lim, sizeof lim, &cl));
  CHECK_OK(rlx_compare(g, RLX_CMP_GT, ci, cl, &cmp));
  float third = 1.0f / 3.0f;
  rlx_id cthird = cf32(g, rlx_shape_scalar(RLX_F32), &third);
  CHECK_OK(rlx_cast(g, cthird, RLX_F16, &cast16));
  CHECK_OK(rlx_cast(g, ci, RLX_F32, &cast));
  rlx_id outs[3] = {cmp, cast16, cast};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 3));
  o = opts(true, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK(count_op(s, RLX_OP_Compare) == 0 && count_op(s, RLX_OP_Cast) == 0);
    const rlx_node *k = out_node(s, 0);
    CHECK(k->op == RLX_OP_Constant && k->shape.dtype == RLX_BOOL && k->attrs.Constant.data.n == 4);
    if (k->op == RLX_OP_Constant) {
      const uint8_t *bv8 = k->attrs.Constant.data.p;
      CHECK(bv8[0] == 0 && bv8[1] == 0 && bv8[2] == 1 && bv8[3] == 1);
    }
    k = out_node(s, 1);
    CHECK(k->op == RLX_OP_Constant && k->shape.dtype == RLX_F16 && k->attrs.Constant.data.n == 2);
    if (k->op == RLX_OP_Constant) {
      uint16_t h;
      memcpy(&h, k->attrs.Constant.data.p, 2);
      CHECK(h == 0x3555); /* 1/3 rounded to half precision */
    }
    k = out_node(s, 2);
    if (k->op == RLX_OP_Constant) {
      float f[4];
      memcpy(f, k->attrs.Constant.data.p, sizeof f);
      CHECK(f[0] == -2.0f && f[1] == 0.0f && f[2] == 3.0f && f[3] == 7.0f);
    } else {
      CHECK(0);
    }
  }
  rlx_graph_free(s);
  rlx_graph_free(g);

  /* Random ops and ops with inputs that are not constants never fold. */
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id rnd, y;
  rlx_attrs_RngUniform ru;
  rlx_attrs_init(RLX_OP_RngUniform, &ru);
  rlx_shape rs = SH(F32, 4);
  CHECK_OK(rlx_graph_add(g, RLX_OP_RngUniform, NULL, 0, &ru, &rs, NULL, &rnd));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, rnd, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(count_op(s, RLX_OP_RngUniform) == 1 && count_op(s, RLX_OP_Activation) == 1);
  rlx_graph_free(s);
  rlx_graph_free(g);
}

/* Identities: x*1, 1*x, x+0, x-0, x/1 only where the result has exactly x's shape and dtype. */
static void test_identities(void) {
  rlx_graph *g, *s = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, one3, one23, zero1, mulx, mulb, add, sub, div, lmul;
  CHECK_OK(rlx_input(g, "x", SH(F32, 3), &x));
  float ones[6] = {1, 1, 1, 1, 1, 1}, zero = 0.0f;
  one3 = cf32(g, SH(F32, 3), ones);
  one23 = cf32(g, SH(F32, 2, 3), ones);
  zero1 = cf32(g, SH(F32, 1), &zero);
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, one3, &mulx));     /* -> x */
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, one23, &mulb));    /* [2, 3]: stays */
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, zero1, mulx, &add));  /* 0 + x -> x */
  CHECK_OK(rlx_binary(g, RLX_BINOP_SUB, add, zero1, &sub));   /* -> x */
  CHECK_OK(rlx_binary(g, RLX_BINOP_DIV, sub, one3, &div));    /* -> x */
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, one3, zero1, &lmul)); /* constant * constant: folds */
  rlx_id outs[3] = {div, mulb, lmul};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 3));
  rlx_compile_options o = opts(true, false, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK(out_node(s, 0)->op == RLX_OP_Input);
    const rlx_node *mb = out_node(s, 1);
    CHECK(mb->op == RLX_OP_Binary && mb->shape.rank == 2);
    CHECK(out_node(s, 2)->op == RLX_OP_Constant);
    CHECK(count_op(s, RLX_OP_Binary) == 1);
    CHECK_OK(rlx_verify(s));
  }
  rlx_graph_free(s);
  /* Sub with the zero on the left is not an identity. */
  rlx_graph_free(g);
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  CHECK_OK(rlx_input(g, "x", SH(F32, 3), &x));
  float zeros[3] = {0, 0, 0};
  rlx_id z3 = cf32(g, SH(F32, 3), zeros), neg;
  CHECK_OK(rlx_binary(g, RLX_BINOP_SUB, z3, x, &neg));
  CHECK_OK(rlx_graph_set_outputs(g, &neg, 1));
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(out_node(s, 0)->op == RLX_OP_Binary);
  rlx_graph_free(s);
  rlx_graph_free(g);

  /* Shape ops: Reshape of Reshape, Reshape / Transpose / Cast that change nothing, Neg of Neg. */
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id y, r1, r2, r3, t, c, n1, n2, tp;
  CHECK_OK(rlx_input(g, "y", SH(F32, 2, 6), &y));
  CHECK_OK(rlx_reshape(g, y, 2, (int64_t[]){3, 4}, &r1));
  CHECK_OK(rlx_reshape(g, r1, 3, (int64_t[]){4, 3, 1}, &r2)); /* -> Reshape(y) */
  CHECK_OK(rlx_reshape(g, y, 2, (int64_t[]){2, 6}, &r3));     /* -> y */
  CHECK_OK(rlx_transpose(g, r3, 2, (int64_t[]){0, 1}, &t));   /* -> y */
  CHECK_OK(rlx_cast(g, t, RLX_F32, &c));                      /* -> y */
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, c, &n1));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, n1, &n2));         /* -> y */
  CHECK_OK(rlx_transpose(g, n2, 2, (int64_t[]){1, 0}, &tp)); /* a real transpose stays */
  rlx_id o2[3] = {r2, n2, tp};
  CHECK_OK(rlx_graph_set_outputs(g, o2, 3));
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    const rlx_node *rr = out_node(s, 0);
    CHECK(rr->op == RLX_OP_Reshape && rlx_graph_node(s, rr->inputs[0])->op == RLX_OP_Input);
    CHECK(out_node(s, 1)->op == RLX_OP_Input);
    const rlx_node *tt = out_node(s, 2);
    CHECK(tt->op == RLX_OP_Transpose && rlx_graph_node(s, tt->inputs[0])->op == RLX_OP_Input);
    CHECK(count_op(s, RLX_OP_Reshape) == 1 && count_op(s, RLX_OP_Activation) == 0 && count_op(s, RLX_OP_Cast) == 0);
    CHECK_OK(rlx_verify(s));
  }
  rlx_graph_free(s);
  /* With fold_constants off the identities stay too. */
  o = opts(false, false, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(count_op(s, RLX_OP_Activation) == 2 && count_op(s, RLX_OP_Reshape) == 3);
  rlx_graph_free(s);
  /* A Cast to another dtype is no identity. */
  rlx_graph_free(g);
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  CHECK_OK(rlx_input(g, "y", SH(F32, 2), &y));
  CHECK_OK(rlx_cast(g, y, RLX_F64, &c));
  CHECK_OK(rlx_graph_set_outputs(g, &c, 1));
  o = opts(true, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(out_node(s, 0)->op == RLX_OP_Cast);
  rlx_graph_free(s);
  rlx_graph_free(g);
}

/* CSE merges equal (op, operands, attributes, shape) nodes, not Rng ops, not leaves, not ops that
 * differ in attributes. */
static void test_cse(void) {
  rlx_graph *g, *s = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, y, a1, a2, m1, m2, e1, e2, r1, r2, s1, s2, k1, k2;
  CHECK_OK(rlx_input(g, "x", SH(F32, 4), &x));
  CHECK_OK(rlx_input(g, "y", SH(F32, 4), &y));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, y, &a1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, y, &a2));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, a1, a1, &m1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, a2, a2, &m2)); /* equal once a1 == a2 */
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, m1, &e1));
  CHECK_OK(rlx_activation(g, RLX_ACT_LOG, m2, &e2)); /* different attribute */
  rlx_attrs_RngNormal rn;
  rlx_attrs_init(RLX_OP_RngNormal, &rn);
  rlx_shape rs = SH(F32, 4);
  CHECK_OK(rlx_graph_add(g, RLX_OP_RngNormal, NULL, 0, &rn, &rs, NULL, &r1));
  CHECK_OK(rlx_graph_add(g, RLX_OP_RngNormal, NULL, 0, &rn, &rs, NULL, &r2));
  CHECK_OK(rlx_binary(g, RLX_BINOP_SUB, r1, r2, &s1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_SUB, e1, e2, &s2));
  float kv[4] = {5, 5, 5, 5};
  k1 = cf32(g, SH(F32, 4), kv);
  k2 = cf32(g, SH(F32, 4), kv);
  rlx_id kk, outs[3];
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, k1, x, &kk));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, k2, kk, &kk));
  outs[0] = s1, outs[1] = s2, outs[2] = kk;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 3));
  rlx_compile_options o = opts(false, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK(count_op(s, RLX_OP_RngNormal) == 2);
    CHECK(count_op(s, RLX_OP_Activation) == 2);
    CHECK(count_op(s, RLX_OP_Constant) == 2); /* leaves are never merged */
    /* add, mul (merged), sub x2, k-adds x2 */
    CHECK_MSG(count_op(s, RLX_OP_Binary) == 6, "%u binaries", count_op(s, RLX_OP_Binary));
    const rlx_node *sub = out_node(s, 1), *ex = rlx_graph_node(s, sub->inputs[0]),
                   *lg = rlx_graph_node(s, sub->inputs[1]);
    CHECK(ex->inputs[0] == lg->inputs[0]);
    const rlx_node *rsub = out_node(s, 0);
    CHECK(rsub->inputs[0] != rsub->inputs[1]);
    CHECK_OK(rlx_verify(s));
  }
  rlx_graph_free(s);
  o = opts(false, false, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(count_op(s, RLX_OP_Binary) == 8);
  rlx_graph_free(s);
  rlx_graph_free(g);
}

/* DCE removes what no output reaches, keeps unused Inputs and Params; dce off keeps everything. */
static void test_dce(void) {
  rlx_graph *g, *s = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id x, unused_in, unused_p, w, dead1, dead2, out;
  CHECK_OK(rlx_input(g, "x", SH(F32, 3), &x));
  CHECK_OK(rlx_input(g, "unused", SH(F32, 2), &unused_in));
  CHECK_OK(rlx_param(g, "w", SH(F32, 3), &w));
  CHECK_OK(rlx_param(g, "unused_w", SH(F32, 5), &unused_p));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, x, &dead1));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, dead1, &dead2));
  float k = 3.0f;
  rlx_id dk = cf32(g, rlx_shape_scalar(RLX_F32), &k), dead3;
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, unused_in, dk, &dead3));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, w, &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  rlx_compile_options o = opts(true, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    CHECK_MSG(rlx_graph_node_count(s) == 5, "%u nodes", rlx_graph_node_count(s));
    CHECK(rlx_graph_find_leaf(s, RLX_OP_Input, "unused") != RLX_NO_ID);
    CHECK(rlx_graph_find_leaf(s, RLX_OP_Param, "unused_w") != RLX_NO_ID);
    CHECK(count_op(s, RLX_OP_Activation) == 0 && count_op(s, RLX_OP_Constant) == 0);
    /* Inputs keep their relative order (positional binding of bodies relies on it). */
    CHECK(rlx_graph_find_leaf(s, RLX_OP_Input, "x") < rlx_graph_find_leaf(s, RLX_OP_Input, "unused"));
  }
  rlx_graph_free(s);
  o = opts(true, true, false);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) CHECK(rlx_graph_node_count(s) == rlx_graph_node_count(g));
  rlx_graph_free(s);
  rlx_graph_free(g);
}

/* Bodies of control-flow ops are simplified with the same options (their Inputs stay). */
static void test_bodies(void) {
  rlx_graph *g, *tb, *eb, *s = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id p, x, out, bx, by, dead, unused;
  CHECK_OK(rlx_input(g, "p", rlx_shape_scalar(RLX_BOOL), &p));
  CHECK_OK(rlx_input(g, "x", SH(F32, 2), &x));
  CHECK_OK(rlx_graph_create_child(g, "then", &tb));
  CHECK_OK(rlx_graph_create_child(g, "else", &eb));
  CHECK_OK(rlx_input(tb, "x", SH(F32, 2), &bx));
  CHECK_OK(rlx_input(tb, "unused", SH(F32, 2), &unused));
  CHECK_OK(rlx_activation(tb, RLX_ACT_EXP, bx, &dead));
  CHECK_OK(rlx_activation(tb, RLX_ACT_NEG, bx, &by));
  CHECK_OK(rlx_activation(tb, RLX_ACT_NEG, by, &by));
  CHECK_OK(rlx_graph_set_outputs(tb, &by, 1));
  CHECK_OK(rlx_input(eb, "x", SH(F32, 2), &bx));
  CHECK_OK(rlx_input(eb, "unused", SH(F32, 2), &unused));
  CHECK_OK(rlx_binary(eb, RLX_BINOP_ADD, bx, unused, &by));
  CHECK_OK(rlx_graph_set_outputs(eb, &by, 1));
  rlx_attrs_If ia = {.then_branch = tb, .else_branch = eb};
  rlx_id in[3] = {p, x, x};
  CHECK_OK(rlx_graph_add(g, RLX_OP_If, in, 3, &ia, NULL, "branch", &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  rlx_compile_options o = opts(true, true, true);
  CHECK_OK(rlx_simplify(g, &o, &s));
  if (s) {
    const rlx_node *n = out_node(s, 0);
    CHECK(n->op == RLX_OP_If);
    if (n->op == RLX_OP_If) {
      const rlx_graph *t = n->attrs.If.then_branch;
      CHECK(rlx_graph_node_count(t) == 2); /* both Inputs; exp is dead, neg(neg(x)) = x */
      CHECK(rlx_graph_node(t, rlx_graph_outputs(t)[0])->op == RLX_OP_Input);
    }
    CHECK_OK(rlx_verify(s));
  }
  rlx_graph_free(s);
  rlx_graph_free(g);
}

static void test_alloc_failures(void) {
  int ok = 0;
  for (long n = 1; n < 3000 && !ok; n++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, 0);
    rlx_graph *g = NULL, *s = NULL;
    CHECK_OK(rlx_graph_create(&fa.al, "main", &g));
    float av[2] = {1, 2};
    rlx_id x, a, b, c, d, out;
    CHECK_OK(rlx_input(g, "x", SH(F32, 2), &x));
    CHECK_OK(rlx_constant(g, SH(F32, 2), av, sizeof av, &a));
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, a, a, &b));
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, b, &c));
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, b, &d));
    CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, c, d, &out));
    CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
    fa.count = 0;
    fa.fail_at = n;
    long live = fa.live;
    rlx_compile_options o = opts(true, true, true);
    rlx_status st = rlx_simplify(g, &o, &s);
    if (st == RLX_OK) {
      ok = 1;
      CHECK_MSG(rlx_graph_node_count(s) == 4, "%u nodes", rlx_graph_node_count(s)); /* x, a+a, x+(a+a), mul */
      rlx_graph_free(s);
    } else {
      CHECK_MSG(st == RLX_ERR_OOM, "fail_at %ld: %s", n, rlx_last_error());
      CHECK(s == NULL);
    }
    CHECK_MSG(fa.live == live, "fail_at %ld leaked %ld", n, fa.live - live);
    rlx_graph_free(g);
  }
  CHECK(ok);
}

int main(void) {
  test_fold();
  test_identities();
  test_cse();
  test_dce();
  test_bodies();
  test_alloc_failures();
  return rlx_test_finish("simplify");
}
