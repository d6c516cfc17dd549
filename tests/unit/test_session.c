/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The session API end to end on the CPU backend: small graphs compiled with rlx_compile, params
 * set, runs compared with values computed here by plain loops; the error cases of set_param and
 * run; compile failures that list every unsupported node; the registry; bodies of If reading a
 * param; allocation failures during compile. */
#include <math.h>
#include <stdlib.h>

#include "rlx_test.h"
#include "rlx/backend.h"
#include "backends/cpu/cpu_backend.h"

static uint32_t lcg_state = 12345;
static float frand(void) {
  lcg_state = lcg_state * 1664525u + 1013904223u;
  return (float)((lcg_state >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
}
static void fill(float *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = frand();
}

static rlx_shape f32s(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F32, rank, d); }

static bool close_to(const float *got, const double *want, size_t n, double tol) {
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= tol * (1.0 + fabs(want[i])))) {
      fprintf(stderr, "  element %zu: got %.9g, want %.9g\n", i, (double)got[i], want[i]);
      return false;
    }
  }
  return true;
}

/* ---- MLP: y = relu(x @ w1 + b1) @ w2 + b2, p = softmax(y) ---- */
enum { B = 4, IN = 8, HID = 16, OUT = 3 };

static rlx_graph *mlp_graph(const rlx_allocator *al) {
  rlx_graph *g = NULL;
  if (rlx_graph_create(al, "mlp", &g) != RLX_OK) return NULL;
  rlx_id x, w1, b1, w2, b2, h, y, p, t;
  bool ok = rlx_input(g, "x", f32s(2, (rlx_dim[]){B, IN}), &x) == RLX_OK &&
            rlx_param(g, "w1", f32s(2, (rlx_dim[]){IN, HID}), &w1) == RLX_OK &&
            rlx_param(g, "b1", f32s(1, (rlx_dim[]){HID}), &b1) == RLX_OK &&
            rlx_param(g, "w2", f32s(2, (rlx_dim[]){HID, OUT}), &w2) == RLX_OK &&
            rlx_param(g, "b2", f32s(1, (rlx_dim[]){OUT}), &b2) == RLX_OK && rlx_matmul(g, x, w1, &t) == RLX_OK &&
            rlx_binary(g, RLX_BINOP_ADD, t, b1, &t) == RLX_OK && rlx_activation(g, RLX_ACT_RELU, t, &h) == RLX_OK &&
            rlx_matmul(g, h, w2, &t) == RLX_OK && rlx_binary(g, RLX_BINOP_ADD, t, b2, &y) == RLX_OK;
  rlx_attrs_Softmax sa = {.axis = -1};
  ok = ok && rlx_build_Softmax(g, &y, 1, &sa, "probs", &p) == RLX_OK;
  rlx_id outs[2] = {y, p};
  ok = ok && rlx_graph_set_outputs(g, outs, 2) == RLX_OK;
  if (!ok) {
    rlx_graph_free(g);
    return NULL;
  }
  return g;
}

static void mlp_reference(const float *x, const float *w1, const float *b1, const float *w2, const float *b2, double *y,
                          double *p) {
  for (int r = 0; r < B; r++) {
    double h[HID];
    for (int j = 0; j < HID; j++) {
      double s = b1[j];
      for (int k = 0; k < IN; k++) s += (double)x[r * IN + k] * w1[k * HID + j];
      h[j] = s > 0 ? s : 0;
    }
    double mx = -INFINITY;
    for (int j = 0; j < OUT; j++) {
      double s = b2[j];
      for (int k = 0; k < HID; k++) s += h[k] * w2[k * OUT + j];
      y[r * OUT + j] = s;
      if (s > mx) mx = s;
    }
    double z = 0;
    for (int j = 0; j < OUT; j++) z += exp(y[r * OUT + j] - mx);
    for (int j = 0; j < OUT; j++) p[r * OUT + j] = exp(y[r * OUT + j] - mx) / z;
  }
}

static void test_mlp(void) {
  rlx_graph *g = mlp_graph(NULL);
  CHECK(g != NULL);
  if (!g) return;
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  if (!e) {
    rlx_graph_free(g);
    return;
  }
  float x[B * IN], w1[IN * HID], b1[HID], w2[HID * OUT], b2[OUT];
  fill(x, B * IN);
  fill(w1, IN * HID);
  fill(b1, HID);
  fill(w2, HID * OUT);
  fill(b2, OUT);
  rlx_tensor tw1 = {w1, f32s(2, (rlx_dim[]){IN, HID})}, tb1 = {b1, f32s(1, (rlx_dim[]){HID})},
             tw2 = {w2, f32s(2, (rlx_dim[]){HID, OUT})}, tb2 = {b2, f32s(1, (rlx_dim[]){OUT})};
  CHECK(rlx_executable_input_count(e) == 1 && strcmp(rlx_executable_input_name(e, 0), "x") == 0);
  CHECK(rlx_executable_param_count(e) == 4 && rlx_executable_output_count(e) == 2);

  /* Errors before everything is set. */
  rlx_named_tensor in = {"x", {x, f32s(2, (rlx_dim[]){B, IN})}};
  const rlx_tensor *outs = NULL;
  uint32_t n_outs = 0;
  CHECK_ERR(rlx_executable_run(e, &in, 1, &outs, &n_outs), RLX_ERR_INVALID_ARG, "4 params are not set");
  CHECK_OK(rlx_executable_set_param(e, "w1", &tw1));
  CHECK_OK(rlx_executable_set_param(e, "b1", &tb1));
  CHECK_ERR(rlx_executable_run(e, &in, 1, &outs, &n_outs), RLX_ERR_INVALID_ARG, "'w2' [16, 3] f32, 'b2' [3] f32");
  CHECK_ERR(rlx_executable_set_param(e, "w3", &tw2), RLX_ERR_INVALID_ARG, "no param named 'w3'");
  CHECK_ERR(rlx_executable_set_param(e, "w2", &tw1), RLX_ERR_INVALID_ARG,
            "param 'w2': expected [16, 3] f32, given [8, 16] f32");
  CHECK_OK(rlx_executable_set_param(e, "w2", &tw2));
  CHECK_OK(rlx_executable_set_param(e, "b2", &tb2));

  CHECK_OK(rlx_executable_run(e, &in, 1, &outs, &n_outs));
  double y[B * OUT], p[B * OUT];
  mlp_reference(x, w1, b1, w2, b2, y, p);
  CHECK(n_outs == 2);
  if (n_outs == 2) {
    CHECK(rlx_shape_equal(&outs[0].shape, &(rlx_shape){.rank = 2, .dims = {B, OUT}, .dtype = RLX_F32}));
    CHECK_MSG(close_to(outs[0].data, y, B * OUT, 1e-5), "mlp logits");
    CHECK_MSG(close_to(outs[1].data, p, B * OUT, 1e-5), "mlp softmax");
  }

  /* New input, same params; then a new param value. */
  fill(x, B * IN);
  CHECK_OK(rlx_executable_run(e, &in, 1, &outs, &n_outs));
  mlp_reference(x, w1, b1, w2, b2, y, p);
  if (n_outs == 2) CHECK_MSG(close_to(outs[0].data, y, B * OUT, 1e-5), "second run");
  fill(w1, IN * HID);
  CHECK_OK(rlx_executable_set_param(e, "w1", &tw1));
  float w1_set[IN * HID];
  memcpy(w1_set, w1, sizeof w1);
  fill(w1, IN * HID); /* the executable copied the value: changing ours afterwards has no effect */
  CHECK_OK(rlx_executable_run(e, &in, 1, &outs, &n_outs));
  mlp_reference(x, w1_set, b1, w2, b2, y, p);
  if (n_outs == 2) CHECK_MSG(close_to(outs[0].data, y, B * OUT, 1e-5), "run after a new param value");

  /* Input errors. */
  float xt[IN * B];
  double xd[B * IN];
  rlx_named_tensor bad_name = {"z", {x, f32s(2, (rlx_dim[]){B, IN})}};
  CHECK_ERR(rlx_executable_run(e, &bad_name, 1, &outs, &n_outs), RLX_ERR_INVALID_ARG, "unknown input 'z'");
  rlx_named_tensor bad_shape = {"x", {xt, f32s(2, (rlx_dim[]){IN, B})}};
  CHECK_ERR(rlx_executable_run(e, &bad_shape, 1, &outs, &n_outs), RLX_ERR_INVALID_ARG,
            "input 'x': expected [4, 8] f32, given [8, 4] f32");
  rlx_named_tensor bad_dtype = {"x", {xd, rlx_shape_make(RLX_F64, 2, (rlx_dim[]){B, IN})}};
  CHECK_ERR(rlx_executable_run(e, &bad_dtype, 1, &outs, &n_outs), RLX_ERR_INVALID_ARG,
            "input 'x': expected [4, 8] f32, given [4, 8] f64");
  CHECK_ERR(rlx_executable_run(e, NULL, 0, &outs, &n_outs), RLX_ERR_INVALID_ARG, "missing input: 'x' [4, 8] f32");
  rlx_named_tensor twice[2] = {in, in};
  CHECK_ERR(rlx_executable_run(e, twice, 2, &outs, &n_outs), RLX_ERR_INVALID_ARG, "input 'x' is given twice");

  /* The dispatch report. */
  const rlx_dispatch_report *r = rlx_executable_report(e);
  CHECK(r->path[RLX_OP_MatMul] == RLX_PATH_NATIVE && r->count[RLX_OP_MatMul] == 2);
  CHECK(r->path[RLX_OP_Softmax] == RLX_PATH_NATIVE && r->count[RLX_OP_Softmax] == 1);
  CHECK(r->path[RLX_OP_Conv] == RLX_PATH_NONE && r->count[RLX_OP_Conv] == 0);
  CHECK(r->nodes_before == rlx_graph_node_count(g));
  CHECK(r->arena_bytes > 0 && r->arena_bytes <= r->tensor_bytes + 64);
  char *text = NULL;
  size_t len = 0;
  CHECK_OK(rlx_dispatch_report_format(r, NULL, &text, &len));
  CHECK(text && strstr(text, "MatMul") && strstr(text, "native") && strstr(text, "arena") &&
        strstr(text, "compile-ready: yes"));
  free(text);
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* Softmax over the middle axis of [2,3,4]: each column sums to 1. */
static void test_softmax(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "softmax", &g));
  rlx_id x, s;
  CHECK_OK(rlx_input(g, "x", f32s(3, (rlx_dim[]){2, 3, 4}), &x));
  rlx_attrs_Softmax sa = {.axis = 1};
  CHECK_OK(rlx_build_Softmax(g, &x, 1, &sa, NULL, &s));
  CHECK_OK(rlx_graph_set_outputs(g, &s, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, NULL, NULL, &e));
  if (e) {
    float xv[24];
    for (int i = 0; i < 24; i++) xv[i] = (float)((i * 7) % 11) - 5.0f;
    double want[24];
    for (int a = 0; a < 2; a++)
      for (int c = 0; c < 4; c++) {
        double mx = -INFINITY, z = 0;
        for (int b = 0; b < 3; b++) mx = fmax(mx, xv[a * 12 + b * 4 + c]);
        for (int b = 0; b < 3; b++) z += exp(xv[a * 12 + b * 4 + c] - mx);
        for (int b = 0; b < 3; b++) want[a * 12 + b * 4 + c] = exp(xv[a * 12 + b * 4 + c] - mx) / z;
      }
    rlx_named_tensor in = {"x", {xv, f32s(3, (rlx_dim[]){2, 3, 4})}};
    const rlx_tensor *outs;
    uint32_t n;
    CHECK_OK(rlx_executable_run(e, &in, 1, &outs, &n));
    if (n == 1) CHECK_MSG(close_to(outs[0].data, want, 24, 1e-6), "softmax axis 1");
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* Views at run time: reshape / leading narrow / same-dtype cast alias their root; an Input and
 * a repeated node as outputs; a constant operand. */
static void test_views_and_constants(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "views", &g));
  rlx_id x, r, v, n, c, k, y, z;
  CHECK_OK(rlx_input(g, "x", f32s(3, (rlx_dim[]){1, 6, 2}), &x));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, x, &r));       /* -x, [1,6,2] */
  CHECK_OK(rlx_reshape(g, r, 2, (int64_t[]){3, 4}, &v)); /* view */
  rlx_attrs_Narrow na = {.axis = 1, .start = 2, .len = 3};
  CHECK_OK(rlx_build_Narrow(g, &r, 1, &na, NULL, &n)); /* view: rows 2..4 of -x */
  CHECK_OK(rlx_cast(g, n, RLX_F32, &c));               /* view */
  float kv[6] = {10, 20, 30, 40, 50, 60};
  CHECK_OK(rlx_constant(g, f32s(3, (rlx_dim[]){1, 3, 2}), kv, sizeof kv, &k));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, c, k, &y)); /* -x[2:5] + k */
  CHECK_OK(rlx_activation(g, RLX_ACT_ABS, v, &z));  /* |x| as [3,4] */
  rlx_id outs[] = {y, z, x, y, v};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 5));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  if (e) {
    float xv[12];
    for (int i = 0; i < 12; i++) xv[i] = (float)(i + 1) * (i % 2 ? -1.0f : 1.0f);
    rlx_named_tensor in = {"x", {xv, f32s(3, (rlx_dim[]){1, 6, 2})}};
    const rlx_tensor *o;
    uint32_t no;
    for (int rep = 0; rep < 2; rep++) {
      CHECK_OK(rlx_executable_run(e, &in, 1, &o, &no));
      CHECK(no == 5);
      if (no != 5) break;
      double wy[6], wz[12], wx[12], wv[12];
      for (int i = 0; i < 6; i++) wy[i] = -xv[4 + i] + kv[i];
      for (int i = 0; i < 12; i++) {
        wz[i] = fabs(xv[i]);
        wx[i] = xv[i];
        wv[i] = -xv[i];
      }
      CHECK_MSG(close_to(o[0].data, wy, 6, 0), "narrow view + constant");
      CHECK_MSG(close_to(o[1].data, wz, 12, 0), "reshape view");
      CHECK_MSG(close_to(o[2].data, wx, 12, 0), "input as output");
      CHECK_MSG(close_to(o[3].data, wy, 6, 0), "repeated output");
      CHECK_MSG(close_to(o[4].data, wv, 12, 0), "view as output");
      CHECK(o[4].shape.rank == 2 && o[4].shape.dims[0] == 3 && o[4].shape.dims[1] == 4);
      for (int i = 0; i < 12; i++) xv[i] *= 2; /* second round with other values */
    }
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* A CPU backend that does not claim GaussianSplatRender (which has no decomposition): the CPU
 * itself runs every kind, so the unsupported path is exercised on this narrowed copy. */
static rlx_backend partial_cpu;
static rlx_op partial_claims[RLX_OP_COUNT];
static const char *partial_backend(void) {
  const rlx_backend *cpu = rlx_cpu_backend();
  partial_cpu = *cpu;
  partial_cpu.name = "test-no-splat";
  uint32_t k = 0;
  for (uint32_t i = 0; i < cpu->n_claims; i++)
    if (cpu->claims[i] != RLX_OP_GaussianSplatRender) partial_claims[k++] = cpu->claims[i];
  partial_cpu.claims = partial_claims;
  partial_cpu.n_claims = k;
  partial_cpu.host_staged = NULL;
  partial_cpu.n_host_staged = 0;
  CHECK_OK(rlx_backend_register(&partial_cpu));
  return partial_cpu.name;
}

/* Two GaussianSplatRender nodes on a backend without them (no decomposition either): compile fails
 * naming both. */
static void test_unsupported(void) {
  const char *backend = partial_backend();
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "splat", &g));
  static const int64_t sizes[7] = {3, 3, 4, 1, 3, 3, 23};
  static const char *const names[7] = {"pos", "scale", "rot", "opa", "col", "sh", "meta"};
  rlx_id in[7], s1, s2, sum;
  for (int i = 0; i < 7; i++) CHECK_OK(rlx_input(g, names[i], f32s(1, (rlx_dim[]){sizes[i]}), &in[i]));
  rlx_attrs_GaussianSplatRender a;
  rlx_attrs_init(RLX_OP_GaussianSplatRender, &a);
  a.width = 4;
  a.height = 4;
  CHECK_OK(rlx_build_GaussianSplatRender(g, in, 7, &a, "render_a", &s1));
  a.width = 2;
  a.height = 8;
  CHECK_OK(rlx_build_GaussianSplatRender(g, in, 7, &a, "render_b", &s2));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, s1, s2, &sum));
  CHECK_OK(rlx_graph_set_outputs(g, &sum, 1));
  rlx_executable *e = (rlx_executable *)1;
  rlx_dispatch_report rep;
  CHECK_ERR(rlx_compile_with_report(g, backend, NULL, &rep, &e), RLX_ERR_UNSUPPORTED, "render_a");
  CHECK(e == NULL);
  CHECK_MSG(strstr(rlx_last_error(), "render_b") != NULL, "message lists every unsupported node: %s", rlx_last_error());
  CHECK(rep.path[RLX_OP_GaussianSplatRender] == RLX_PATH_UNSUPPORTED && rep.count[RLX_OP_GaussianSplatRender] == 2);
  CHECK(rep.path[RLX_OP_Binary] == RLX_PATH_NATIVE);
  char *text = NULL;
  size_t len;
  CHECK_OK(rlx_dispatch_report_format(&rep, NULL, &text, &len));
  CHECK(text && strstr(text, "unsupported") && strstr(text, "compile-ready: no"));
  free(text);
  rlx_graph_free(g);
}

/* If whose then-branch reads a param that the enclosing graph declares but does not use itself. */
static void test_if_with_body_param(void) {
  rlx_graph *g, *tb, *eb;
  CHECK_OK(rlx_graph_create(NULL, "cond", &g));
  rlx_id p, x, out, ps;
  CHECK_OK(rlx_input(g, "p", rlx_shape_make(RLX_BOOL, 0, NULL), &p));
  CHECK_OK(rlx_input(g, "x", f32s(1, (rlx_dim[]){3}), &x));
  CHECK_OK(rlx_param(g, "scale", f32s(1, (rlx_dim[]){3}), &ps));
  CHECK_OK(rlx_graph_create_child(g, "then", &tb));
  CHECK_OK(rlx_graph_create_child(g, "else", &eb));
  rlx_id a, w, t;
  CHECK_OK(rlx_input(tb, "a", f32s(1, (rlx_dim[]){3}), &a));
  CHECK_OK(rlx_param(tb, "scale", f32s(1, (rlx_dim[]){3}), &w));
  CHECK_OK(rlx_binary(tb, RLX_BINOP_MUL, a, w, &t));
  CHECK_OK(rlx_graph_set_outputs(tb, &t, 1));
  CHECK_OK(rlx_input(eb, "a", f32s(1, (rlx_dim[]){3}), &a));
  CHECK_OK(rlx_activation(eb, RLX_ACT_NEG, a, &t));
  CHECK_OK(rlx_graph_set_outputs(eb, &t, 1));
  rlx_attrs_If ia = {.then_branch = tb, .else_branch = eb};
  rlx_id ops[2] = {p, x};
  CHECK_OK(rlx_build_If(g, ops, 2, &ia, NULL, &out));
  CHECK_OK(rlx_graph_set_outputs(g, &out, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  if (e) {
    CHECK(rlx_executable_param_count(e) == 1 && strcmp(rlx_executable_param_name(e, 0), "scale") == 0);
    uint8_t pv = 1;
    float xv[3] = {1, -2, 3}, sv[3] = {2, 3, 4};
    rlx_named_tensor in[2] = {{"p", {&pv, rlx_shape_make(RLX_BOOL, 0, NULL)}}, {"x", {xv, f32s(1, (rlx_dim[]){3})}}};
    const rlx_tensor *o;
    uint32_t no;
    CHECK_ERR(rlx_executable_run(e, in, 2, &o, &no), RLX_ERR_INVALID_ARG, "'scale' [3] f32");
    rlx_tensor st = {sv, f32s(1, (rlx_dim[]){3})};
    CHECK_OK(rlx_executable_set_param(e, "scale", &st));
    CHECK_OK(rlx_executable_run(e, in, 2, &o, &no));
    double want_t[3] = {2, -6, 12}, want_e[3] = {-1, 2, -3}, want_t2[3] = {-1, 2, 3};
    if (no == 1) CHECK_MSG(close_to(o[0].data, want_t, 3, 0), "then branch");
    pv = 0;
    CHECK_OK(rlx_executable_run(e, in, 2, &o, &no));
    if (no == 1) CHECK_MSG(close_to(o[0].data, want_e, 3, 0), "else branch");
    /* A new param value reaches the (cached) body. */
    sv[0] = -1;
    sv[1] = -1;
    sv[2] = 1;
    CHECK_OK(rlx_executable_set_param(e, "scale", &st));
    pv = 1;
    CHECK_OK(rlx_executable_run(e, in, 2, &o, &no));
    if (no == 1) CHECK_MSG(close_to(o[0].data, want_t2, 3, 0), "then branch after set_param");
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* Same seed -> same random numbers; the values stay in [low, high). */
static void test_rng_determinism(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "rng", &g));
  rlx_attrs_RngUniform ra;
  rlx_attrs_init(RLX_OP_RngUniform, &ra);
  ra.low = 2;
  ra.high = 3;
  ra.key = 7;
  rlx_id u;
  rlx_shape s = f32s(1, (rlx_dim[]){64});
  CHECK_OK(rlx_graph_add(g, RLX_OP_RngUniform, NULL, 0, &ra, &s, NULL, &u));
  CHECK_OK(rlx_graph_set_outputs(g, &u, 1));
  float first[64], second[64];
  for (int round = 0; round < 3; round++) {
    rlx_compile_options opt;
    rlx_compile_options_init(&opt);
    opt.rng_seed = round == 2 ? 99 : 5;
    rlx_executable *e = NULL;
    CHECK_OK(rlx_compile(g, "cpu", &opt, &e));
    if (!e) break;
    const rlx_tensor *o;
    uint32_t no;
    CHECK_OK(rlx_executable_run(e, NULL, 0, &o, &no));
    if (no == 1) {
      const float *v = o[0].data;
      bool in_range = true;
      for (int i = 0; i < 64; i++) in_range &= v[i] >= 2 && v[i] < 3;
      CHECK(in_range);
      if (round == 0) memcpy(first, v, sizeof first);
      if (round == 1) CHECK_MSG(memcmp(first, v, sizeof first) == 0, "same seed, same values");
      if (round == 2) {
        memcpy(second, v, sizeof second);
        CHECK_MSG(memcmp(first, second, sizeof first) != 0, "another seed, other values");
      }
    }
    rlx_executable_free(e);
  }
  rlx_graph_free(g);
}

/* Registry: cpu is built in; another backend can be registered, found and replaced. */
static int wrapped_compiles;
static rlx_status wrapped_compile(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out) {
  (void)b;
  wrapped_compiles++;
  const rlx_backend *cpu = rlx_backend_find("cpu");
  return cpu->compile(cpu, args, out);
}

static void test_registry(void) {
  const rlx_backend *cpu = rlx_backend_find("cpu");
  CHECK(cpu != NULL && cpu == rlx_cpu_backend());
  CHECK(rlx_backend_count() >= 1);
  bool listed = false;
  for (uint32_t i = 0; i < rlx_backend_count(); i++) listed |= rlx_backend_at(i) == cpu;
  CHECK(listed && rlx_backend_at(rlx_backend_count()) == NULL);
  uint8_t claimed[RLX_OP_COUNT];
  rlx_backend_claim_set(cpu, claimed);
  CHECK(claimed[RLX_OP_MatMul] && claimed[RLX_OP_Input] && claimed[RLX_OP_GaussianSplatRender]);
  CHECK(!rlx_backend_host_stages(cpu, RLX_OP_MatMul));
  CHECK(rlx_backend_find("nosuch") == NULL);

  static rlx_backend wrapped;
  wrapped = *cpu;
  wrapped.name = "test-wrapped";
  wrapped.compile = wrapped_compile;
  uint32_t before = rlx_backend_count();
  CHECK_OK(rlx_backend_register(&wrapped));
  CHECK(rlx_backend_count() == before + 1 && rlx_backend_find("test-wrapped") == &wrapped);
  CHECK_OK(rlx_backend_register(&wrapped)); /* replacing keeps one entry */
  CHECK(rlx_backend_count() == before + 1);
  rlx_backend nameless = wrapped;
  nameless.name = "";
  CHECK_ERR(rlx_backend_register(&nameless), RLX_ERR_INVALID_ARG, "name");

  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "tiny", &g));
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", f32s(1, (rlx_dim[]){2}), &x));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, x, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "test-wrapped", NULL, &e));
  CHECK(wrapped_compiles == 1);
  if (e) {
    float xv[2] = {0, 1};
    rlx_named_tensor in = {"x", {xv, f32s(1, (rlx_dim[]){2})}};
    const rlx_tensor *o;
    uint32_t no;
    CHECK_OK(rlx_executable_run(e, &in, 1, &o, &no));
    double want[2] = {1, exp(1.0)};
    if (no == 1) CHECK(close_to(o[0].data, want, 2, 1e-6));
  }
  rlx_executable_free(e);
  CHECK_ERR(rlx_compile(g, "nosuch", NULL, &e), RLX_ERR_NOT_FOUND, "no backend named 'nosuch' (registered: cpu");
  rlx_graph_free(g);
}

/* Graph-level problems caught at compile. */
static void test_compile_errors(void) {
  rlx_graph *g;
  rlx_id a, y;
  CHECK_OK(rlx_graph_create(NULL, "dyn", &g));
  CHECK_OK(rlx_input(g, "x", f32s(2, (rlx_dim[]){RLX_DIM_SYM(0), 2}), &a));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, a, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_executable *e = (rlx_executable *)1;
  rlx_status s = rlx_compile(g, "cpu", NULL, &e);
  CHECK_MSG(s != RLX_OK && strstr(rlx_last_error(), "dynamic"), "symbolic dims rejected: %s", rlx_last_error());
  CHECK(e == NULL);
  rlx_graph_free(g);
}

/* Every allocation of a compile (graph on a failing allocator) may fail: clean errors, no leaks. */
static void test_compile_oom(void) {
  bool finished = false;
  for (long k = 1; k < 5000 && !finished; k++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, 0);
    rlx_graph *g = mlp_graph(&fa.al);
    if (!g) {
      CHECK(0);
      break;
    }
    fa.fail_at = fa.count + k;
    rlx_executable *e = NULL;
    rlx_status s = rlx_compile(g, "cpu", NULL, &e);
    if (s == RLX_OK) {
      finished = true;
      rlx_executable_free(e);
    } else {
      CHECK_MSG(s == RLX_ERR_OOM && e == NULL, "allocation %ld: %s: %s", k, rlx_status_text(s), rlx_last_error());
    }
    rlx_graph_free(g);
    CHECK_MSG(fa.live == 0, "allocation %ld failed: %ld blocks leaked", k, fa.live);
  }
  CHECK(finished);
}

int main(void) {
  test_mlp();
  test_softmax();
  test_views_and_constants();
  test_unsupported();
  test_if_with_body_param();
  test_rng_determinism();
  test_registry();
  test_compile_errors();
  test_compile_oom();
  return rlx_test_finish("session");
}
