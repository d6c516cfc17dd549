/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The elementwise fusion pass (src/passes/fuse_elementwise.c): it turns a chain into one
 * ElementwiseRegion with the expected steps and operands, does not fuse across a broadcast that
 * does not tile the trailing axes, keeps graph outputs and multi-user values materialised, caps a
 * region at 16 operands, makes exactly 3 regions per tensor of the in-graph Adam / AdamW update
 * and 2 of SGD with momentum, gives the same numbers as the unfused graph when compiled for the
 * CPU (fused and unfused runs compared bit for bit, at 1 and 2 threads), and stays linear on a
 * 200k-node graph. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/passes.h"
#include "rlx/cpu.h"
#include "rlx/optim.h"
#include "rlx/verify.h"
#include "rlx_test.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})

static uint32_t count_op(const rlx_graph *g, rlx_op op) {
  uint32_t c = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) c += rlx_graph_node(g, i)->op == op;
  return c;
}

static const rlx_node *first_op(const rlx_graph *g, rlx_op op) {
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++)
    if (rlx_graph_node(g, i)->op == op) return rlx_graph_node(g, i);
  return NULL;
}

static rlx_graph *fused(const rlx_graph *g, uint32_t *regions) {
  rlx_graph *f = NULL;
  CHECK_OK(rlx_fuse_elementwise(g, &f, regions));
  if (f) CHECK_MSG(rlx_verify(f) == RLX_OK, "the fused graph does not verify: %s", rlx_last_error());
  return f;
}

/* x [4, 8], y [8]: silu(x * y) + x -> one region of 3 steps over 2 operands. */
static void test_chain(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "chain", &g));
  rlx_id x, y, a, b, c;
  CHECK_OK(rlx_input(g, "x", SH(F32, 4, 8), &x));
  CHECK_OK(rlx_input(g, "y", SH(F32, 8), &y));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, y, &a));
  CHECK_OK(rlx_activation(g, RLX_ACT_SILU, a, &b));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, b, x, &c));
  CHECK_OK(rlx_graph_set_outputs(g, &c, 1));
  uint32_t r = 0;
  rlx_graph *f = fused(g, &r);
  CHECK(r == 1);
  if (f) {
    CHECK(count_op(f, RLX_OP_ElementwiseRegion) == 1);
    CHECK(count_op(f, RLX_OP_Binary) == 0 && count_op(f, RLX_OP_Activation) == 0);
    const rlx_node *n = first_op(f, RLX_OP_ElementwiseRegion);
    if (n) {
      const rlx_chain *ch = &n->attrs.ElementwiseRegion.chain;
      CHECK(n->n_inputs == 2 && n->attrs.ElementwiseRegion.num_inputs == 2);
      CHECK(ch->n == 3);
      if (ch->n == 3) {
        CHECK(ch->steps[0].kind == RLX_CHAIN_STEP_BINARY && ch->steps[0].sub == RLX_BINOP_MUL);
        CHECK(!ch->steps[0].a.is_step && !ch->steps[0].b.is_step);
        CHECK(ch->steps[1].kind == RLX_CHAIN_STEP_ACTIVATION && ch->steps[1].sub == RLX_ACT_SILU);
        CHECK(ch->steps[1].a.is_step && ch->steps[1].a.index == 0);
        CHECK(ch->steps[2].kind == RLX_CHAIN_STEP_BINARY && ch->steps[2].sub == RLX_BINOP_ADD);
        CHECK(ch->steps[2].a.is_step && ch->steps[2].a.index == 1 && !ch->steps[2].b.is_step);
      }
      CHECK(rlx_shape_equal(&n->shape, &rlx_graph_node(g, c)->shape));
      CHECK(rlx_graph_outputs(f)[0] == (rlx_id)(n - rlx_graph_node(f, 0)));
    }
  }
  rlx_graph_free(f);
  rlx_graph_free(g);
}

/* x [4, 8] + z [4, 1] broadcasts a middle axis: Add cannot join a region, so relu stays alone and
 * nothing fuses. A single elementwise node is never wrapped either. */
static void test_no_tile(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "notile", &g));
  rlx_id x, z, a, b;
  CHECK_OK(rlx_input(g, "x", SH(F32, 4, 8), &x));
  CHECK_OK(rlx_input(g, "z", SH(F32, 4, 1), &z));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, z, &a));
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, a, &b));
  CHECK_OK(rlx_graph_set_outputs(g, &b, 1));
  uint32_t r = 7;
  rlx_graph *f = fused(g, &r);
  CHECK(r == 0);
  if (f) {
    CHECK(count_op(f, RLX_OP_ElementwiseRegion) == 0);
    CHECK(rlx_graph_equal(f, g));
  }
  rlx_graph_free(f);
  rlx_graph_free(g);
}

/* a = x * y is a graph output and b = exp(a) is read twice: both stay materialised. */
static void test_outputs_and_users(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "outs", &g));
  rlx_id x, y, a, b, c, d, e, outs[2];
  CHECK_OK(rlx_input(g, "x", SH(F32, 16), &x));
  CHECK_OK(rlx_input(g, "y", SH(F32, 16), &y));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, y, &a));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, a, &b));
  CHECK_OK(rlx_activation(g, RLX_ACT_TANH, b, &c));
  CHECK_OK(rlx_activation(g, RLX_ACT_SIGMOID, b, &d));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, c, d, &e));
  outs[0] = a;
  outs[1] = e;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  uint32_t r = 0;
  rlx_graph *f = fused(g, &r);
  /* regions: {tanh, sigmoid, add} (root add, operand b); a and b stay nodes: exp alone is not wrapped */
  CHECK_MSG(r == 1, "%u regions", r);
  if (f) {
    CHECK(rlx_graph_output_count(f) == 2);
    const rlx_node *o0 = rlx_graph_node(f, rlx_graph_outputs(f)[0]);
    const rlx_node *o1 = rlx_graph_node(f, rlx_graph_outputs(f)[1]);
    CHECK(o0->op == RLX_OP_Binary && o0->attrs.Binary.op == RLX_BINOP_MUL);
    CHECK(o1->op == RLX_OP_ElementwiseRegion);
    if (o1->op == RLX_OP_ElementwiseRegion) {
      CHECK(o1->attrs.ElementwiseRegion.chain.n == 3 && o1->n_inputs == 1);
      const rlx_node *bn = rlx_graph_node(f, o1->inputs[0]);
      CHECK(bn->op == RLX_OP_Activation && bn->attrs.Activation.kind == RLX_ACT_EXP);
    }
  }
  rlx_graph_free(f);
  rlx_graph_free(g);
}

/* sum of 20 distinct inputs in a left fold: every region has at most 16 operands. */
static void test_operand_cap(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "cap", &g));
  rlx_id x[20], acc;
  for (int i = 0; i < 20; i++) {
    char nm[8];
    snprintf(nm, sizeof nm, "x%d", i);
    CHECK_OK(rlx_input(g, nm, SH(F32, 5), &x[i]));
  }
  acc = x[0];
  for (int i = 1; i < 20; i++) CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, acc, x[i], &acc));
  CHECK_OK(rlx_graph_set_outputs(g, &acc, 1));
  uint32_t r = 0;
  rlx_graph *f = fused(g, &r);
  CHECK(r >= 2);
  if (f)
    for (uint32_t i = 0; i < rlx_graph_node_count(f); i++) {
      const rlx_node *n = rlx_graph_node(f, i);
      if (n->op == RLX_OP_ElementwiseRegion) CHECK(n->n_inputs <= 16);
      CHECK(n->op != RLX_OP_Binary); /* 19 adds: two regions cover them all */
    }
  rlx_graph_free(f);
  rlx_graph_free(g);
}

/* ---- numerics: compiled with and without the pass, same bits ---- */

static float *run_graph(const rlx_graph *g, bool fuse, int threads, const rlx_tensor *in, const char *const *names,
                        uint32_t n_in, size_t *count, uint32_t *regions) {
  setenv("RLX_FUSE_ELEMENTWISE", fuse ? "1" : "0", 1);
  rlx_cpu_options co;
  rlx_cpu_options_init(&co);
  co.threads = threads;
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.backend_options = &co;
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(g, "cpu", &o, &e);
  unsetenv("RLX_FUSE_ELEMENTWISE");
  CHECK_MSG(st == RLX_OK, "compile: %s", rlx_last_error());
  if (st) return NULL;
  *regions = count_op(rlx_executable_graph(e), RLX_OP_ElementwiseRegion);
  rlx_named_tensor nt[8];
  for (uint32_t i = 0; i < n_in; i++) nt[i] = (rlx_named_tensor){.name = names[i], .tensor = in[i]};
  const rlx_tensor *outs;
  uint32_t n_outs;
  st = rlx_executable_run(e, nt, n_in, &outs, &n_outs);
  CHECK_MSG(st == RLX_OK, "run: %s", rlx_last_error());
  float *r = NULL;
  if (!st) {
    size_t c = 1;
    for (uint32_t k = 0; k < outs[0].shape.rank; k++) c *= (size_t)outs[0].shape.dims[k];
    r = malloc(c * sizeof *r);
    memcpy(r, outs[0].data, c * sizeof *r);
    *count = c;
  }
  rlx_executable_free(e);
  return r;
}

static uint64_t rs = 88172645463325252ull;
static float frand(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (float)((double)(rs >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

/* A GELU-ish block with a bias tile, a comparison, a select, Pow, Sqrt and a scalar. */
static void test_numerics(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "num", &g));
  rlx_id x, b, h, t0, t1, t2, t3, t4, t5, c, t6, t7, three;
  CHECK_OK(rlx_input(g, "x", SH(F32, 33, 130), &x));
  CHECK_OK(rlx_input(g, "b", SH(F32, 130), &b));
  CHECK_OK(rlx_input(g, "h", SH(F32), &h));
  CHECK_OK(rlx_scalar_f32(g, 3.0f, &three));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, x, b, &t0));
  CHECK_OK(rlx_activation(g, RLX_ACT_GELU, t0, &t1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_POW, t1, three, &t2));
  CHECK_OK(rlx_activation(g, RLX_ACT_ABS, t0, &t3));
  CHECK_OK(rlx_activation(g, RLX_ACT_SQRT, t3, &t4));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, t4, h, &t5));
  CHECK_OK(rlx_compare(g, RLX_CMP_GT, t2, t5, &c));
  CHECK_OK(rlx_build_Where(g, (rlx_id[]){c, t2, t5}, 3, NULL, &t6));
  CHECK_OK(rlx_activation(g, RLX_ACT_TANH, t6, &t7));
  CHECK_OK(rlx_graph_set_outputs(g, &t7, 1));
  size_t nx = 33 * 130;
  float *xv = malloc(nx * sizeof *xv), bv[130], hv = 0.75f;
  for (size_t i = 0; i < nx; i++) xv[i] = frand();
  for (int i = 0; i < 130; i++) bv[i] = frand();
  rlx_tensor in[3] = {{xv, SH(F32, 33, 130)}, {bv, SH(F32, 130)}, {&hv, SH(F32)}};
  const char *names[3] = {"x", "b", "h"};
  size_t c0 = 0, c1 = 0;
  uint32_t r0 = 9, r1 = 0;
  float *plain = run_graph(g, false, 1, in, names, 3, &c0, &r0);
  CHECK(r0 == 0);
  for (int th = 1; th <= 2; th++) {
    float *fz = run_graph(g, true, th, in, names, 3, &c1, &r1);
    CHECK_MSG(r1 >= 1, "threads %d: %u regions in the compiled graph", th, r1);
    if (plain && fz && c0 == c1) CHECK_MSG(memcmp(plain, fz, c0 * sizeof *fz) == 0, "threads %d: fused != unfused", th);
    free(fz);
  }
  free(plain);
  free(xv);
  rlx_graph_free(g);
}

/* The in-graph update of two parameters: `want` regions per tensor (Adam: m, v, the parameter;
 * SGD with momentum: the buffer, the parameter), and no elementwise node left on a
 * parameter-sized tensor. */
static void update_regions(rlx_optim_kind kind, double momentum, uint32_t want) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "adam", &g));
  rlx_id p[2], gr[2];
  CHECK_OK(rlx_param(g, "w", SH(F32, 6, 5), &p[0]));
  CHECK_OK(rlx_param(g, "b", SH(F32, 5), &p[1]));
  CHECK_OK(rlx_input(g, "gw", SH(F32, 6, 5), &gr[0]));
  CHECK_OK(rlx_input(g, "gb", SH(F32, 5), &gr[1]));
  rlx_optim_config cfg;
  rlx_optim_config_init(&cfg, kind);
  cfg.momentum = momentum;
  rlx_optim_graph *og = NULL;
  CHECK_OK(rlx_optim_graph_build(&cfg, g, p, gr, 2, &og));
  if (!og) {
    rlx_graph_free(g);
    return;
  }
  uint32_t n = rlx_optim_graph_output_count(og);
  rlx_id outs[16];
  for (uint32_t i = 0; i < n && i < 16; i++) outs[i] = rlx_optim_graph_output(og, i);
  CHECK_OK(rlx_graph_set_outputs(g, outs, n));
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", &o, &e));
  if (e) {
    const rlx_graph *cg = rlx_executable_graph(e);
    CHECK_MSG(count_op(cg, RLX_OP_ElementwiseRegion) == 2 * want, "%s: %u regions, want %u", rlx_optim_kind_name(kind),
              count_op(cg, RLX_OP_ElementwiseRegion), 2 * want);
    for (uint32_t i = 0; i < rlx_graph_node_count(cg); i++) {
      const rlx_node *nd = rlx_graph_node(cg, i);
      bool elem = nd->op == RLX_OP_Binary || nd->op == RLX_OP_Activation || nd->op == RLX_OP_Where;
      CHECK_MSG(!elem || nd->shape.rank == 0 || (nd->shape.rank == 1 && nd->shape.dims[0] == 1),
                "an unfused %s on %%%u", rlx_op_name(nd->op), i);
    }
  }
  rlx_executable_free(e);
  rlx_optim_graph_free(og);
  rlx_graph_free(g);
}

/* 200k nodes: a long chain and a fan of multi-user values. Linear: well under a second. */
static void test_linear(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "big", &g));
  rlx_id x, cur, acc;
  CHECK_OK(rlx_input(g, "x", SH(F32, 8), &x));
  cur = x;
  for (int i = 0; i < 100000; i++) CHECK_OK(rlx_activation(g, i % 2 ? RLX_ACT_NEG : RLX_ACT_ABS, cur, &cur));
  acc = cur;
  for (int i = 0; i < 50000; i++) {
    rlx_id t;
    CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, acc, acc, &t)); /* acc read twice by one node */
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, t, acc, &acc)); /* and by a second one: ends regions */
  }
  CHECK_OK(rlx_graph_set_outputs(g, &acc, 1));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  uint32_t r = 0;
  rlx_graph *f = NULL;
  CHECK_OK(rlx_fuse_elementwise(g, &f, &r));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  CHECK_MSG(s < 2.0, "fusing 200k nodes took %.2f s", s);
  CHECK_MSG(r >= 100000 / 256, "%u regions", r);
  if (f) {
    for (uint32_t i = 0; i < rlx_graph_node_count(f); i++) {
      const rlx_node *n = rlx_graph_node(f, i);
      if (n->op == RLX_OP_ElementwiseRegion) CHECK(n->attrs.ElementwiseRegion.chain.n <= 256);
    }
  }
  fprintf(stderr, "fused a 200k-node graph in %.3f s: %u regions\n", s, r);
  rlx_graph_free(f);
  rlx_graph_free(g);
}

int main(void) {
  test_chain();
  test_no_tile();
  test_outputs_and_users();
  test_operand_cap();
  test_numerics();
  update_regions(RLX_OPTIM_ADAM, 0, 3);
  update_regions(RLX_OPTIM_ADAMW, 0, 3);
  update_regions(RLX_OPTIM_SGD, 0.9, 2);
  test_linear();
  return rlx_test_finish("test_fuse_elementwise");
}
