/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's stated errors and its While, through the public API (rlx_compile for "mlx"),
 * each with a graph kept here:
 *   - a grouped Conv2dBackwardInput / Conv2dBackwardWeight is a compile error naming the node and
 *     saying what to do; groups = 1 compiles and matches the CPU;
 *   - FakeQuantize with scale_mode EMA is a compile error naming the node; Fixed and PerBatch
 *     compile and match the CPU;
 *   - While is a bounded unroll with an active mask: with max_iterations it matches the CPU (the
 *     loop ending before the bound, and cut off by it, with a data-dependent condition); without
 *     max_iterations it is a compile error naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* Runs g (Inputs only, f32, one output of n values) on backend b; false when it did not run. */
static bool run_f32(const rlx_graph *g, const char *b, const rlx_named_tensor *in, uint32_t n_in, float *out,
                    size_t n) {
  rlx_executable *e = NULL;
  if (rlx_compile(g, b, NULL, &e) != RLX_OK) {
    fprintf(stderr, "compile on %s: %s\n", b, rlx_last_error());
    return false;
  }
  const rlx_tensor *o = NULL;
  uint32_t no = 0;
  rlx_status st = rlx_executable_run(e, in, n_in, &o, &no);
  bool ok = st == RLX_OK && no == 1 && o;
  if (!ok) fprintf(stderr, "run on %s: %s\n", b, rlx_last_error());
  if (ok) memcpy(out, o[0].data, n * sizeof(float));
  rlx_executable_free(e);
  return ok;
}

static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

/* The error of compiling g for mlx (RLX_OK when it compiled). */
static rlx_status mlx_compile_error(const rlx_graph *g, char *msg, size_t cap) {
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(g, "mlx", NULL, &e);
  snprintf(msg, cap, "%s", st == RLX_OK ? "" : rlx_last_error());
  rlx_executable_free(e);
  return st;
}

/* ---- grouped convolution backward ---- */

static void test_conv_backward(void) {
  for (int which = 0; which < 2; which++)
    for (int64_t groups = 1; groups <= 2; groups++) {
      rlx_graph *g = NULL;
      rlx_id dy, w, y;
      CHECK_OK(rlx_graph_create(NULL, "convbw", &g));
      int64_t k[2] = {3, 3}, one[2] = {1, 1}, zero[2] = {0, 0};
      /* x [1, 4, 6, 6], w [4, 4 / groups, 3, 3], dy [1, 4, 4, 4] */
      rlx_shape xs = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){1, 4, 6, 6});
      rlx_shape ws = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){4, 4 / groups, 3, 3});
      rlx_shape dys = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){1, 4, 4, 4});
      CHECK_OK(rlx_input(g, "dy", dys, &dy));
      if (which == 0) {
        CHECK_OK(rlx_input(g, "w", ws, &w));
        rlx_attrs_Conv2dBackwardInput a = {.kernel_size = {.v = k, .n = 2},
                                           .stride = {.v = one, .n = 2},
                                           .padding = {.v = zero, .n = 2},
                                           .dilation = {.v = one, .n = 2},
                                           .groups = groups};
        /* the output shape (x's) is declared: it is not derivable from dy and w */
        CHECK_OK(rlx_graph_add(g, RLX_OP_Conv2dBackwardInput, (rlx_id[]){dy, w}, 2, &a, &xs, "dx_of_conv", &y));
      } else {
        CHECK_OK(rlx_input(g, "x", xs, &w)); /* operands [x, dy] */
        rlx_attrs_Conv2dBackwardWeight a = {.kernel_size = {.v = k, .n = 2},
                                            .stride = {.v = one, .n = 2},
                                            .padding = {.v = zero, .n = 2},
                                            .dilation = {.v = one, .n = 2},
                                            .groups = groups};
        CHECK_OK(rlx_graph_add(g, RLX_OP_Conv2dBackwardWeight, (rlx_id[]){w, dy}, 2, &a, &ws, "dw_of_conv", &y));
      }
      CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
      char msg[2048];
      rlx_status st = mlx_compile_error(g, msg, sizeof msg);
      const char *name = which == 0 ? "dx_of_conv" : "dw_of_conv";
      if (groups == 2) {
        CHECK_MSG(st == RLX_ERR_UNSUPPORTED, "grouped %s compiled on mlx (status %d)", name, st);
        CHECK_MSG(strstr(msg, name) && strstr(msg, "groups = 2") && strstr(msg, "groups = 1 only") &&
                      strstr(msg, "cpu backend"),
                  "error does not name the node / say what to do: %s", msg);
      } else {
        CHECK_MSG(st == RLX_OK, "groups = 1 %s failed on mlx: %s", name, msg);
        /* and gives the CPU's values */
        rlx_shape s2 = rlx_graph_node(g, w)->shape;
        size_t n1 = 64, n2, ny;
        CHECK_OK(rlx_shape_numel(&s2, &n2));
        CHECK_OK(rlx_shape_numel(&rlx_graph_node(g, y)->shape, &ny));
        float *a1 = malloc(n1 * 4), *a2 = malloc(n2 * 4), *want = malloc(ny * 4), *got = malloc(ny * 4);
        unsigned seed = 11;
        for (size_t i = 0; i < n1; i++) a1[i] = frand(&seed);
        for (size_t i = 0; i < n2; i++) a2[i] = frand(&seed);
        rlx_named_tensor in[2] = {{"dy", {a1, dys}}, {which == 0 ? "w" : "x", {a2, s2}}};
        bool ok = run_f32(g, "cpu", in, 2, want, ny) && run_f32(g, "mlx", in, 2, got, ny);
        CHECK(ok);
        if (ok)
          CHECK_MSG(max_diff(got, want, ny) < 1e-4, "%s differs from the CPU by %g", name, max_diff(got, want, ny));
        free(a1), free(a2), free(want), free(got);
      }
      rlx_graph_free(g);
    }
}

/* ---- FakeQuantize ---- */

static void test_fake_quantize(void) {
  const rlx_scale_mode modes[3] = {RLX_SCALE_MODE_EMA, RLX_SCALE_MODE_FIXED, RLX_SCALE_MODE_PER_BATCH};
  for (int m = 0; m < 3; m++) {
    rlx_graph *g = NULL;
    rlx_id x, st = RLX_NO_ID, y;
    CHECK_OK(rlx_graph_create(NULL, "fq", &g));
    rlx_shape xs = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 4}), ss = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4});
    CHECK_OK(rlx_input(g, "x", xs, &x));
    if (modes[m] != RLX_SCALE_MODE_PER_BATCH) CHECK_OK(rlx_input(g, "state", ss, &st));
    rlx_attrs_FakeQuantize a;
    rlx_attrs_init(RLX_OP_FakeQuantize, &a);
    a.bits = 8;
    a.axis = -1;
    a.scale_mode = modes[m];
    CHECK_OK(
        rlx_build_FakeQuantize(g, (rlx_id[]){x, st}, modes[m] == RLX_SCALE_MODE_PER_BATCH ? 1 : 2, &a, "qat_fq", &y));
    CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
    char msg[2048];
    rlx_status s = mlx_compile_error(g, msg, sizeof msg);
    if (modes[m] == RLX_SCALE_MODE_EMA) {
      CHECK_MSG(s == RLX_ERR_UNSUPPORTED, "EMA compiled on mlx (status %d)", s);
      CHECK_MSG(strstr(msg, "qat_fq") && strstr(msg, "scale_mode EMA") && strstr(msg, "Fixed"),
                "EMA error does not name the node / say what to do: %s", msg);
    } else {
      CHECK_MSG(s == RLX_OK, "FakeQuantize mode %d failed on mlx: %s", m, msg);
      float xv[12], sv[4] = {0.01f, 0.02f, 0.005f, 0.03f}, want[12], got[12];
      unsigned seed = 5;
      for (int i = 0; i < 12; i++) xv[i] = frand(&seed);
      rlx_named_tensor in[2] = {{"x", {xv, xs}}, {"state", {sv, ss}}};
      uint32_t ni = modes[m] == RLX_SCALE_MODE_PER_BATCH ? 1 : 2;
      bool ok = run_f32(g, "cpu", in, ni, want, 12) && run_f32(g, "mlx", in, ni, got, 12);
      CHECK(ok);
      if (ok)
        CHECK_MSG(max_diff(got, want, 12) < 1e-6, "FakeQuantize mode %d differs by %g", m, max_diff(got, want, 12));
    }
    rlx_graph_free(g);
  }
}

/* ---- While ---- */

/* While(x [4], t scalar): while sum(x) < limit { x = x * 1.5 + t; t = t + 1 }; the value is x.
 * The condition depends on the data, so the trip count is only known at run time. */
static rlx_graph *while_graph(bool bounded, int64_t max_it, float limit) {
  rlx_graph *g = NULL, *cond = NULL, *body = NULL;
  rlx_id x, t, w;
  rlx_shape xs = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4}), ts = rlx_shape_make(RLX_F32, 0, NULL);
  CHECK_OK(rlx_graph_create(NULL, "loop", &g));
  CHECK_OK(rlx_input(g, "x", xs, &x));
  CHECK_OK(rlx_input(g, "t", ts, &t));
  rlx_id cx, ct, s, lim, lt;
  CHECK_OK(rlx_graph_create_child(g, "cond", &cond));
  CHECK_OK(rlx_input(cond, "x", xs, &cx));
  CHECK_OK(rlx_input(cond, "t", ts, &ct));
  rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = {.v = (int64_t[]){0}, .n = 1}, .keep_dim = false};
  CHECK_OK(rlx_build_Reduce(cond, &cx, 1, &ra, NULL, &s));
  CHECK_OK(rlx_constant(cond, ts, &limit, sizeof limit, &lim));
  CHECK_OK(rlx_compare(cond, RLX_CMP_LT, s, lim, &lt));
  CHECK_OK(rlx_graph_set_outputs(cond, &lt, 1));
  rlx_id bx, bt, k, one, o[2];
  float kv = 1.5f, onev = 1.0f;
  CHECK_OK(rlx_graph_create_child(g, "body", &body));
  CHECK_OK(rlx_input(body, "x", xs, &bx));
  CHECK_OK(rlx_input(body, "t", ts, &bt));
  CHECK_OK(rlx_constant(body, ts, &kv, sizeof kv, &k));
  CHECK_OK(rlx_constant(body, ts, &onev, sizeof onev, &one));
  CHECK_OK(rlx_binary(body, RLX_BINOP_MUL, bx, k, &o[0]));
  CHECK_OK(rlx_binary(body, RLX_BINOP_ADD, o[0], bt, &o[0]));
  CHECK_OK(rlx_binary(body, RLX_BINOP_ADD, bt, one, &o[1]));
  CHECK_OK(rlx_graph_set_outputs(body, o, 2));
  rlx_attrs_While a = {.cond = cond, .body = body, .max_iterations = {.has = bounded, .v = max_it}};
  CHECK_OK(rlx_build_While(g, (rlx_id[]){x, t}, 2, &a, "grow_loop", &w));
  CHECK_OK(rlx_graph_set_outputs(g, &w, 1));
  return g;
}

/* The loop by hand (float32 like the graph), stopping at `cap` iterations. */
static int while_by_hand(float *x, float t, float limit, int cap) {
  int it = 0;
  for (; it < cap; it++) {
    float s = 0;
    for (int i = 0; i < 4; i++) s += x[i];
    if (!(s < limit)) break;
    for (int i = 0; i < 4; i++) x[i] = x[i] * 1.5f + t;
    t += 1.0f;
  }
  return it;
}

static void test_while(void) {
  struct {
    int64_t max_it;
    float limit;
  } runs[3] = {{12, 40.0f}, {3, 40.0f}, {5, -100.0f}}; /* ends before the bound, cut off, zero trips */
  int trips_seen[3];
  for (int r = 0; r < 3; r++) {
    rlx_graph *g = while_graph(true, runs[r].max_it, runs[r].limit);
    float x0[4] = {0.5f, 1.0f, -0.25f, 2.0f}, t0 = 0.5f, want[4], cpu[4], got[4];
    memcpy(want, x0, sizeof want);
    trips_seen[r] = while_by_hand(want, t0, runs[r].limit, (int)runs[r].max_it);
    rlx_named_tensor in[2] = {{"x", {x0, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4})}},
                              {"t", {&t0, rlx_shape_make(RLX_F32, 0, NULL)}}};
    bool ok = run_f32(g, "cpu", in, 2, cpu, 4) && run_f32(g, "mlx", in, 2, got, 4);
    CHECK(ok);
    if (ok) {
      CHECK_MSG(max_diff(cpu, want, 4) < 1e-4, "run %d: the CPU differs from the loop by hand by %g", r,
                max_diff(cpu, want, 4));
      CHECK_MSG(max_diff(got, cpu, 4) < 1e-4, "run %d: MLX's unrolled While differs from the CPU by %g", r,
                max_diff(got, cpu, 4));
    }
    rlx_graph_free(g);
  }
  /* the three runs did exercise three regimes */
  CHECK_MSG(trips_seen[0] > 3 && trips_seen[0] < 12, "trips %d", trips_seen[0]);
  CHECK(trips_seen[1] == 3);
  CHECK(trips_seen[2] == 0);
  /* without max_iterations: a compile error naming the node, saying what to set */
  rlx_graph *g = while_graph(false, 0, 40.0f);
  char msg[2048];
  rlx_status st = mlx_compile_error(g, msg, sizeof msg);
  CHECK_MSG(st == RLX_ERR_UNSUPPORTED, "an unbounded While compiled on mlx (status %d)", st);
  CHECK_MSG(strstr(msg, "grow_loop") && strstr(msg, "max_iterations"), "error: %s", msg);
  /* the CPU runs it (runtime control) */
  float x0[4] = {0.5f, 1.0f, -0.25f, 2.0f}, t0 = 0.5f, cpu[4], want[4];
  memcpy(want, x0, sizeof want);
  while_by_hand(want, t0, 40.0f, 1000);
  rlx_named_tensor in[2] = {{"x", {x0, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4})}},
                            {"t", {&t0, rlx_shape_make(RLX_F32, 0, NULL)}}};
  CHECK(run_f32(g, "cpu", in, 2, cpu, 4) && max_diff(cpu, want, 4) < 1e-4);
  rlx_graph_free(g);
}

int main(void) {
  test_conv_backward();
  test_fake_quantize();
  test_while();
  return rlx_test_finish("test_mlx_stated");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_stated: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
