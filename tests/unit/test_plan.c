/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Memory planner and its independent checker: plans of chains, diamonds, views and graphs with
 * many outputs pass the checker and have the expected arena sizes; deliberately corrupted plans
 * are rejected with a message naming the problem. */
#include <stdlib.h>

#include "rlx_test.h"
#include "rlx/plan.h"

static rlx_shape f32v(int64_t n) { return rlx_shape_make(RLX_F32, 1, (rlx_dim[]){n}); }

static rlx_id relu(rlx_graph *g, rlx_id x) {
  rlx_id y = RLX_NO_ID;
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, x, &y));
  return y;
}

static rlx_id add(rlx_graph *g, rlx_id a, rlx_id b) {
  rlx_id y = RLX_NO_ID;
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, a, b, &y));
  return y;
}

static rlx_id narrow(rlx_graph *g, rlx_id x, int64_t axis, int64_t start, int64_t len) {
  rlx_attrs_Narrow a = {.axis = axis, .start = start, .len = len};
  rlx_id y = RLX_NO_ID;
  CHECK_OK(rlx_build_Narrow(g, &x, 1, &a, NULL, &y));
  return y;
}

/* Plans g, checks the plan and returns it (NULL on failure). */
static rlx_plan *plan_ok(const rlx_graph *g) {
  rlx_plan *p = NULL;
  CHECK_OK(rlx_plan_memory(g, NULL, &p));
  if (!p) return NULL;
  CHECK_OK(rlx_plan_check(g, p));
  CHECK(p->arena_size % 64 == 0);
  CHECK(p->arena_size <= p->tensor_bytes + 64);
  return p;
}

/* x -> relu^6: with inclusive lifetimes the chain ping-pongs between two slots next to x. */
static void test_chain(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "chain", &g));
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", f32v(256), &x));
  y = x;
  for (int i = 0; i < 6; i++) y = relu(g, y);
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_plan *p = plan_ok(g);
  if (p) {
    CHECK(p->tensor_bytes == 7 * 1024);
    CHECK_MSG(p->arena_size == 3 * 1024, "arena %zu", p->arena_size);
    for (rlx_id i = 0; i < 7; i++) CHECK(p->root[i] == i && p->size[i] == 1024);
    /* Neighbours in the chain never share a slot; every other one does. */
    for (rlx_id i = 1; i < 7; i++) CHECK(p->offset[i] != p->offset[i - 1] && p->offset[i] != p->offset[0]);
    CHECK(p->offset[1] == p->offset[3] && p->offset[3] == p->offset[5]);
    CHECK(p->last_use[0] == 7 && p->last_use[6] == 7 && p->first_use[0] == 0);
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);
}

/* Builds x -> a = relu(x), b = sigmoid(x), c = a + b, d = relu(c) (outputs d). */
static rlx_graph *diamond(rlx_id *a, rlx_id *b, rlx_id *c) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "diamond", &g));
  rlx_id x, d;
  CHECK_OK(rlx_input(g, "x", f32v(100), &x));
  *a = relu(g, x);
  CHECK_OK(rlx_activation(g, RLX_ACT_SIGMOID, x, b));
  *c = add(g, *a, *b);
  d = relu(g, *c);
  CHECK_OK(rlx_graph_set_outputs(g, &d, 1));
  return g;
}

static void test_diamond(void) {
  rlx_id a, b, c;
  rlx_graph *g = diamond(&a, &b, &c);
  rlx_plan *p = plan_ok(g);
  if (p) {
    /* a and b are both read by c: distinct slots, neither under c. 100 floats -> 400 bytes,
     * slots on 64-byte boundaries. */
    CHECK(p->offset[a] != p->offset[b]);
    CHECK(p->offset[c] != p->offset[a] && p->offset[c] != p->offset[b]);
    CHECK(p->tensor_bytes == 5 * 400);
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);
}

static void test_views(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "views", &g));
  rlx_id x, r, v, c16, csame, n_lead, n_inner, late, y1, y2, y3, y4;
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 3, (rlx_dim[]){1, 8, 4}), &x));
  r = relu(g, x);                                        /* [1,8,4] */
  CHECK_OK(rlx_reshape(g, r, 2, (int64_t[]){8, 4}, &v)); /* view of r */
  CHECK_OK(rlx_cast(g, r, RLX_F32, &csame));             /* same-dtype cast: view */
  CHECK_OK(rlx_cast(g, r, RLX_F16, &c16));               /* converting cast: own slot */
  n_lead = narrow(g, r, 1, 2, 3);                        /* leading axis has extent 1: view at 2*4*4 */
  n_inner = narrow(g, v, 1, 1, 2);                       /* [8,4] axis 1: strided, own slot */
  /* Keep r alive only through its views: several steps later read the views. */
  rlx_id t = relu(g, n_inner);
  for (int i = 0; i < 3; i++) t = relu(g, t);
  late = relu(g, v);
  y1 = relu(g, n_lead);
  y2 = relu(g, csame);
  y3 = relu(g, c16);
  y4 = t;
  rlx_id outs[] = {late, y1, y2, y3, y4};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 5));
  size_t off = 99;
  CHECK(rlx_plan_is_view(g, v, &off) && off == 0);
  CHECK(rlx_plan_is_view(g, csame, &off) && off == 0);
  CHECK(!rlx_plan_is_view(g, c16, &off));
  CHECK(rlx_plan_is_view(g, n_lead, &off) && off == 32);
  CHECK(!rlx_plan_is_view(g, n_inner, &off));
  CHECK(!rlx_plan_is_view(g, r, &off));
  rlx_plan *p = plan_ok(g);
  if (p) {
    CHECK(p->root[v] == r && p->offset[v] == p->offset[r]);
    CHECK(p->root[csame] == r && p->offset[csame] == p->offset[r]);
    CHECK(p->root[n_lead] == r && p->offset[n_lead] == p->offset[r] + 32 && p->size[n_lead] == 48);
    CHECK(p->root[c16] == c16 && p->root[n_inner] == n_inner);
    /* Reading a view keeps the root alive. */
    CHECK(p->last_use[r] >= y2 && p->last_use[r] >= late);
    /* Views are not counted in tensor_bytes: x, r 128 each; c16 64; n_inner [8,2] 64; 4 relus of
     * it 64 each; late 128, y1 48, y2 128, y3 64. */
    CHECK_MSG(p->tensor_bytes == 128 + 128 + 64 + 64 + 4 * 64 + 128 + 48 + 128 + 64, "tensor bytes %zu",
              p->tensor_bytes);
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);
}

/* Several outputs produced early, then a long chain: the chain may not reuse any output. */
static void test_many_outputs(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "outs", &g));
  rlx_id x, outs[8];
  CHECK_OK(rlx_input(g, "x", f32v(64), &x));
  for (int i = 0; i < 5; i++) outs[i] = relu(g, x);
  rlx_id t = x;
  for (int i = 0; i < 6; i++) t = relu(g, t);
  outs[5] = t;
  outs[6] = x;       /* an input can be an output */
  outs[7] = outs[0]; /* and one node can be listed twice */
  CHECK_OK(rlx_graph_set_outputs(g, outs, 8));
  rlx_plan *p = plan_ok(g);
  if (p) {
    /* x and the 5 early outputs live to the end; the chain ping-pongs between two more slots
     * (its last node, also an output, reuses the slot of the node two steps before it). */
    CHECK_MSG(p->arena_size == 8 * 256, "arena %zu", p->arena_size);
    for (int i = 0; i < 6; i++)
      for (int j = i + 1; j < 6; j++) CHECK(p->offset[outs[i]] != p->offset[outs[j]]);
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);
}

/* A chain with an early output, for the corruption tests: x, a1 (output), a2, a3, a4 (output). */
static rlx_graph *early_output_chain(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "early", &g));
  rlx_id x, a[5];
  CHECK_OK(rlx_input(g, "x", f32v(16), &x));
  a[0] = x;
  for (int i = 1; i < 5; i++) a[i] = relu(g, a[i - 1]);
  rlx_id outs[] = {a[1], a[4]};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  return g;
}

static void test_corrupted(void) {
  rlx_id a, b, c;
  rlx_graph *g = diamond(&a, &b, &c);
  rlx_plan *p = plan_ok(g);
  if (p) {
    size_t save = p->offset[b];
    p->offset[b] = p->offset[a]; /* a and b are both live while c runs */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "share arena bytes");
    p->offset[b] = save;
    p->offset[c] = p->offset[a]; /* c written over its own operand */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "overlaps its operand 0");
    p->offset[c] = p->arena_size; /* past the end */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "out of arena");
    p->offset[c] = 8; /* misaligned */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "misaligned");
    p->offset[c] = p->arena_size - 64; /* aligned but its 400 bytes run past the end */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "out of arena");
    rlx_plan_free(p, NULL);
    p = plan_ok(g);
  }
  if (p) {
    rlx_id t = p->schedule[1];
    p->schedule[1] = p->schedule[3];
    p->schedule[3] = t;
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "order violation");
    p->schedule[3] = p->schedule[1];
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "scheduled twice");
    rlx_plan_free(p, NULL);
    p = plan_ok(g);
  }
  if (p) {
    p->root[c] = a; /* an Add pretending to be a view */
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "not a view");
    p->root[c] = c;
    p->size[c] = 4;
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "needs 400");
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);

  g = early_output_chain();
  p = plan_ok(g);
  if (p) {
    /* a1 is an output; a3 is neither its operand nor its consumer. */
    CHECK(p->offset[3] != p->offset[1]);
    p->offset[3] = p->offset[1];
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "graph output %1 (Activation) is clobbered by %3");
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);

  /* A view at the wrong offset. */
  CHECK_OK(rlx_graph_create(NULL, "badview", &g));
  rlx_id x, r, n;
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){1, 32}), &x));
  r = relu(g, x);
  n = narrow(g, r, 1, 4, 8);
  rlx_id y = relu(g, n);
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  p = plan_ok(g);
  if (p) {
    CHECK(p->root[n] == r && p->offset[n] == p->offset[r] + 16);
    p->offset[n] = p->offset[r];
    CHECK_ERR(rlx_plan_check(g, p), RLX_ERR_VERIFY, "window starts at");
    rlx_plan_free(p, NULL);
  }
  rlx_graph_free(g);
}

/* Random DAGs of elementwise ops, reshapes and narrows with random outputs: every plan passes. */
static void test_random(void) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int trial = 0; trial < 60; trial++) {
    rlx_graph *g;
    CHECK_OK(rlx_graph_create(NULL, "random", &g));
    rlx_id ids[64];
    uint32_t n = 0;
    CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){1, 24}), &ids[n++]));
    CHECK_OK(rlx_input(g, "y", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){1, 24}), &ids[n++]));
    int steps = 10 + trial % 40;
    for (int s = 0; s < steps; s++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint32_t r = (uint32_t)(seed >> 33);
      rlx_id a = ids[r % n], b = ids[(r / 7) % n], y = RLX_NO_ID;
      switch ((r / 131) % 4) {
      case 0: y = relu(g, a); break;
      case 1: y = add(g, a, b); break;
      case 2: CHECK_OK(rlx_reshape(g, a, 2, (int64_t[]){1, 24}, &y)); break;
      default: { /* narrow then pad back with a concat so shapes stay [1,24] */
        rlx_id lo = narrow(g, a, 1, 0, 12), hi = narrow(g, b, 1, 12, 12), parts[2] = {hi, lo};
        rlx_attrs_Concat ca = {.axis = 1};
        CHECK_OK(rlx_build_Concat(g, parts, 2, &ca, NULL, &y));
      }
      }
      if (y == RLX_NO_ID || n >= 64) break;
      ids[n++] = y;
    }
    rlx_id outs[3] = {ids[n - 1], ids[n / 2], ids[(seed >> 40) % n]};
    CHECK_OK(rlx_graph_set_outputs(g, outs, 3));
    rlx_plan *p = plan_ok(g);
    rlx_plan_free(p, NULL);
    rlx_graph_free(g);
  }
}

static void test_errors_and_oom(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "dyn", &g));
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){RLX_DIM_SYM(0), 4}), &x));
  y = relu(g, x);
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_plan *p = NULL;
  CHECK_ERR(rlx_plan_memory(g, NULL, &p), RLX_ERR_SHAPE, "dynamic shape");
  CHECK(p == NULL);
  rlx_graph_free(g);

  rlx_id a, b, c;
  g = diamond(&a, &b, &c);
  bool saw_ok = false;
  for (long k = 1; k < 40 && !saw_ok; k++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, k);
    rlx_status s = rlx_plan_memory(g, &fa.al, &p);
    if (s == RLX_OK) {
      saw_ok = true;
      CHECK_OK(rlx_plan_check(g, p));
      rlx_plan_free(p, &fa.al);
    } else {
      CHECK(s == RLX_ERR_OOM && p == NULL);
    }
    CHECK_MSG(fa.live == 0, "allocation %ld failed: %ld blocks leaked", k, fa.live);
  }
  CHECK(saw_ok);
  rlx_graph_free(g);
}

int main(void) {
  test_chain();
  test_diamond();
  test_views();
  test_many_outputs();
  test_corrupted();
  test_random();
  test_errors_and_oom();
  return rlx_test_finish("plan");
}
