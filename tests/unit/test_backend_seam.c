/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The backend seam, proven on the "sim" test backend (own memory, counted copies):
 *  - the in-graph optimizers give the host optimizer's values, on cpu and on sim, and a training
 *    step on sim moves no parameter between host and device;
 *  - outputs stay on the device until read; host staging really copies; control-flow bodies run
 *    on the backend through the runtime;
 *  - the memory limit is checked before anything is allocated, and a huge arena is not
 *    zero-filled; backend options are checked against the backend. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "backends/sim/sim.h"
#include "rlx/cpu.h"
#include "rlx/optim.h"
#include "rlx_test.h"

static rlx_shape f32s(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F32, rank, d); }

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f;
}

/* loss = mean((tanh(x W + b) - y)^2) with W [4, 3], b [3], x [5, 4], y [5, 3]. */
static rlx_graph *model(void) {
  rlx_graph *g = NULL;
  rlx_id x, y, w, b, xw, h, d, sq, loss;
  CHECK_OK(rlx_graph_create(NULL, "mlp", &g));
  CHECK_OK(rlx_input(g, "x", f32s(2, (rlx_dim[]){5, 4}), &x));
  CHECK_OK(rlx_input(g, "y", f32s(2, (rlx_dim[]){5, 3}), &y));
  CHECK_OK(rlx_param(g, "w", f32s(2, (rlx_dim[]){4, 3}), &w));
  CHECK_OK(rlx_param(g, "b", f32s(1, (rlx_dim[]){3}), &b));
  CHECK_OK(rlx_matmul(g, x, w, &xw));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, xw, b, &h));
  CHECK_OK(rlx_activation(g, RLX_ACT_TANH, h, &h));
  CHECK_OK(rlx_binary(g, RLX_BINOP_SUB, h, y, &d));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, d, d, &sq));
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_MEAN, sq, 2, (int64_t[]){0, 1}, false, &loss));
  CHECK_OK(rlx_graph_set_outputs(g, &loss, 1));
  return g;
}

static float X[20], Y[15], W0[12], B0[3];

static void init_data(void) {
  uint64_t s = 42;
  for (int i = 0; i < 20; i++) X[i] = frand(&s);
  for (int i = 0; i < 15; i++) Y[i] = frand(&s);
  for (int i = 0; i < 12; i++) W0[i] = frand(&s) * 0.5f;
  for (int i = 0; i < 3; i++) B0[i] = frand(&s) * 0.1f;
}

static rlx_named_tensor batch_in[3];
static float ONE = 1.0f;

/* x, y and (for gradient graphs) the seed d_output = 1 */
static uint32_t set_batch(rlx_executable *e) {
  batch_in[0] = (rlx_named_tensor){"x", {X, f32s(2, (rlx_dim[]){5, 4})}};
  batch_in[1] = (rlx_named_tensor){"y", {Y, f32s(2, (rlx_dim[]){5, 3})}};
  batch_in[2] = (rlx_named_tensor){"d_output", {&ONE, f32s(0, NULL)}};
  uint32_t n = rlx_executable_input_count(e) >= 3 ? 3 : 2;
  for (uint32_t i = 0; i < n; i++) CHECK_OK(rlx_executable_set_input(e, batch_in[i].name, &batch_in[i].tensor));
  return n;
}

#define STEPS 6

/* The host optimizer: grads on cpu, rlx_optim_step, set_param. */
static void train_host(const rlx_optim_config *c, float *w, float *b) {
  rlx_graph *f = model(), *gr = NULL;
  const char *wrt[2] = {"w", "b"};
  rlx_grad_options go;
  rlx_grad_options_init(&go);
  CHECK_OK(rlx_grad_with_loss(f, wrt, 2, &go, &gr));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(gr, "cpu", NULL, &e));
  memcpy(w, W0, sizeof W0);
  memcpy(b, B0, sizeof B0);
  rlx_optim *opt = NULL;
  CHECK_OK(rlx_optim_create(c, &opt));
  rlx_shape ws = f32s(2, (rlx_dim[]){4, 3}), bs = f32s(1, (rlx_dim[]){3});
  CHECK_OK(rlx_optim_add_param(opt, "w", w, &ws));
  CHECK_OK(rlx_optim_add_param(opt, "b", b, &bs));
  for (int t = 0; t < STEPS && e && opt; t++) {
    rlx_tensor tw = {w, ws}, tb = {b, bs};
    CHECK_OK(rlx_executable_set_param(e, "w", &tw));
    CHECK_OK(rlx_executable_set_param(e, "b", &tb));
    uint32_t nb = set_batch(e);
    const rlx_tensor *out;
    uint32_t n;
    CHECK_OK(rlx_executable_run(e, batch_in, nb, &out, &n));
    CHECK_OK(rlx_optim_step_tensors(opt, out + 1, n - 1));
  }
  rlx_optim_free(opt);
  rlx_executable_free(e);
  rlx_graph_free(gr);
  rlx_graph_free(f);
}

/* The in-graph optimizer on `backend`; *moved = param bytes that crossed host <-> device during
 * the steps. */
static void train_graph(const rlx_optim_config *c, const char *backend, float *w, float *b, uint64_t *moved,
                        float *first_loss) {
  rlx_graph *f = model(), *gr = NULL;
  const char *wrt[2] = {"w", "b"};
  rlx_grad_options go;
  rlx_grad_options_init(&go);
  CHECK_OK(rlx_grad_with_loss(f, wrt, 2, &go, &gr));
  rlx_id params[2] = {rlx_graph_find_leaf(gr, RLX_OP_Param, "w"), rlx_graph_find_leaf(gr, RLX_OP_Param, "b")};
  rlx_id grads[2] = {rlx_graph_outputs(gr)[1], rlx_graph_outputs(gr)[2]}, loss = rlx_graph_outputs(gr)[0];
  rlx_optim_graph *og = NULL;
  CHECK_OK(rlx_optim_graph_build(c, gr, params, grads, 2, &og));
  uint32_t nu = rlx_optim_graph_output_count(og);
  rlx_id outs[16];
  outs[0] = loss;
  for (uint32_t i = 0; i < nu && i < 15; i++) outs[1 + i] = rlx_optim_graph_output(og, i);
  CHECK_OK(rlx_graph_set_outputs(gr, outs, 1 + nu));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(gr, backend, NULL, &e));
  if (!e || !og) goto done;
  rlx_tensor tw = {W0, f32s(2, (rlx_dim[]){4, 3})}, tb = {B0, f32s(1, (rlx_dim[]){3})};
  CHECK_OK(rlx_executable_set_param(e, "w", &tw));
  CHECK_OK(rlx_executable_set_param(e, "b", &tb));
  CHECK_OK(rlx_optim_graph_bind(og, e, 1));
  rlx_transfer_stats before, after;
  rlx_executable_transfer_stats(e, &before);
  for (int t = 0; t < STEPS; t++) {
    set_batch(e);
    CHECK_OK(rlx_optim_graph_prepare_step(og, e));
    CHECK_OK(rlx_executable_run_resident(e));
    const rlx_tensor *l;
    CHECK_OK(rlx_executable_read_output(e, 0, &l));
    if (t == 0 && first_loss) *first_loss = *(const float *)l->data;
  }
  rlx_executable_transfer_stats(e, &after);
  *moved = (after.param_uploads - before.param_uploads) + (after.param_downloads - before.param_downloads);
  /* every step: x, y, d_output and the hyper vector up, the loss down */
  CHECK_MSG(after.uploads - before.uploads == 4 * STEPS, "%s: %llu uploads in %d steps", backend,
            (unsigned long long)(after.uploads - before.uploads), STEPS);
  /* cpu buffers are host memory: the loss is read in place */
  uint64_t want_down = rlx_backend_find(backend)->host_memory ? 0 : STEPS;
  CHECK_MSG(after.downloads - before.downloads == want_down, "%s: %llu downloads in %d steps", backend,
            (unsigned long long)(after.downloads - before.downloads), STEPS);
  CHECK(after.device_copies - before.device_copies == (uint64_t)STEPS * nu);
  rlx_tensor rw = {w, tw.shape}, rb = {b, tb.shape};
  CHECK_OK(rlx_executable_get_param(e, "w", &rw));
  CHECK_OK(rlx_executable_get_param(e, "b", &rb));
done:
  rlx_optim_graph_free(og);
  rlx_executable_free(e);
  rlx_graph_free(gr);
  rlx_graph_free(f);
}

static double max_rel(const float *a, const float *b, int n) {
  double m = 0;
  for (int i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + 1e-6);
    if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d;
  }
  return m;
}

static void test_optimizers(void) {
  rlx_optim_config cfgs[10];
  const char *names[10];
  int n = 0;
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_SGD), names[n++] = "sgd";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_SGD);
  cfgs[n].momentum = 0.9, cfgs[n].nesterov = true, cfgs[n].weight_decay = 0.01, names[n++] = "sgd nesterov wd";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_SGD);
  cfgs[n].momentum = 0.8, cfgs[n].dampening = 0.3, cfgs[n].maximize = true, names[n++] = "sgd dampening maximize";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_ADAM), names[n++] = "adam";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_ADAMW);
  cfgs[n].amsgrad = true, cfgs[n].weight_decay = 0.1, cfgs[n].clip_grad_norm = 0.05, names[n++] = "adamw amsgrad clip";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_LION), cfgs[n].weight_decay = 0.1, names[n++] = "lion";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_RMSPROP);
  cfgs[n].centered = true, cfgs[n].momentum = 0.5, cfgs[n].clip_grad_value = 0.01, names[n++] = "rmsprop centered";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_ADAGRAD);
  cfgs[n].lr_decay = 0.1, cfgs[n].initial_accumulator_value = 0.2, cfgs[n].weight_decay = 0.01, names[n++] = "adagrad";
  rlx_optim_config_init(&cfgs[n], RLX_OPTIM_ADAM);
  cfgs[n].schedule.kind = RLX_LR_COSINE, cfgs[n].schedule.decay_steps = 4, cfgs[n].schedule.warmup_steps = 2;
  names[n++] = "adam cosine warmup";
  const char *backends[2] = {"cpu", "sim"};
  for (int k = 0; k < n; k++) {
    float hw[12], hb[3];
    train_host(&cfgs[k], hw, hb);
    CHECK_MSG(max_rel(hw, W0, 12) > 1e-4, "%s: the host optimizer did not move w", names[k]);
    for (int j = 0; j < 2; j++) {
      float gw[12], gb[3];
      uint64_t moved = 99;
      train_graph(&cfgs[k], backends[j], gw, gb, &moved, NULL);
      /* clip_grad_norm sums in f32 in the graph, in double on the host; sim computes the gradients
         with the reference kernels (another summation order than the CPU's BLAS), which centered
         RMSProp amplifies */
      double tol = j == 1 ? 2e-4 : cfgs[k].clip_grad_norm > 0 ? 1e-5 : 2e-6;
      double ew = max_rel(gw, hw, 12), eb = max_rel(gb, hb, 3);
      CHECK_MSG(ew <= tol && eb <= tol, "%s on %s: in-graph vs host optimizer differ by %g (w), %g (b)", names[k],
                backends[j], ew, eb);
      CHECK_MSG(moved == 0, "%s on %s: %llu param transfers during training", names[k], backends[j],
                (unsigned long long)moved);
    }
  }
  /* Muon has no in-graph form: a clear error */
  rlx_optim_config m;
  rlx_optim_config_init(&m, RLX_OPTIM_MUON);
  rlx_graph *f = model(), *gr = NULL;
  const char *wrt[2] = {"w", "b"};
  rlx_grad_options go;
  rlx_grad_options_init(&go);
  CHECK_OK(rlx_grad_with_loss(f, wrt, 2, &go, &gr));
  rlx_id params[2] = {rlx_graph_find_leaf(gr, RLX_OP_Param, "w"), rlx_graph_find_leaf(gr, RLX_OP_Param, "b")};
  rlx_optim_graph *og = NULL;
  CHECK_ERR(rlx_optim_graph_build(&m, gr, params, rlx_graph_outputs(gr) + 1, 2, &og), RLX_ERR_UNSUPPORTED, "muon");
  rlx_graph_free(gr);
  rlx_graph_free(f);
}

/* Outputs stay on sim until read; reading twice copies once. */
static void test_residency(void) {
  rlx_graph *f = model();
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(f, "sim", NULL, &e));
  if (!e) goto done;
  rlx_tensor tw = {W0, f32s(2, (rlx_dim[]){4, 3})}, tb = {B0, f32s(1, (rlx_dim[]){3})};
  CHECK_OK(rlx_executable_set_param(e, "w", &tw));
  CHECK_OK(rlx_executable_set_param(e, "b", &tb));
  set_batch(e);
  rlx_sim_counts c0, c1, c2;
  rlx_sim_counters(&c0);
  for (int i = 0; i < 3; i++) CHECK_OK(rlx_executable_run_resident(e));
  rlx_sim_counters(&c1);
  CHECK_MSG(c1.downloads == c0.downloads && c1.uploads == c0.uploads,
            "resident runs moved data: %llu downloads, %llu uploads", (unsigned long long)(c1.downloads - c0.downloads),
            (unsigned long long)(c1.uploads - c0.uploads));
  CHECK(c1.copies > c0.copies); /* the runs themselves copy inside the device */
  const rlx_tensor *o1, *o2;
  CHECK_OK(rlx_executable_read_output(e, 0, &o1));
  CHECK_OK(rlx_executable_read_output(e, 0, &o2));
  rlx_sim_counters(&c2);
  CHECK(c2.downloads == c1.downloads + 1 && o1 == o2);
  /* the same value as on the cpu */
  rlx_executable *ce = NULL;
  CHECK_OK(rlx_compile(f, "cpu", NULL, &ce));
  if (ce) {
    CHECK_OK(rlx_executable_set_param(ce, "w", &tw));
    CHECK_OK(rlx_executable_set_param(ce, "b", &tb));
    const rlx_tensor *co;
    uint32_t n;
    CHECK_OK(rlx_executable_run(ce, batch_in, 2, &co, &n));
    CHECK(n == 1 && fabsf(*(const float *)co[0].data - *(const float *)o1->data) < 1e-6f);
  }
  CHECK_ERR(rlx_executable_read_output(e, 1, &o1), RLX_ERR_INVALID_ARG, "output 1 does not exist");
  rlx_executable_free(ce);
done:
  rlx_executable_free(e);
  rlx_graph_free(f);
}

/* The CPU runs in place on the buffers the runtime borrows from its arena (slot_buffer): resident
 * runs on new inputs give new results, a param set between runs is seen, an output that is a view
 * of an input keeps the value of its run when the input is set again, and a bound output reaches
 * its param. Each value is checked against arithmetic done here. */
static void test_lent_slots(void) {
  rlx_graph *g = NULL;
  rlx_id x, w, xw, v, y;
  CHECK_OK(rlx_graph_create(NULL, "lent", &g));
  CHECK_OK(rlx_input(g, "x", f32s(1, (rlx_dim[]){4}), &x));
  CHECK_OK(rlx_param(g, "w", f32s(1, (rlx_dim[]){4}), &w));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, w, &xw));
  CHECK_OK(rlx_reshape(g, x, 2, (int64_t[]){2, 2}, &v));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, xw, w, &y)); /* y = x w + w, bound back to w */
  rlx_id outs[3] = {xw, v, y};
  CHECK_OK(rlx_graph_set_outputs(g, outs, 3));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  if (!e) goto done;
  float wv[4] = {1, 2, 3, 4}, xa[4] = {1, 1, 1, 1}, xb[4] = {2, 0, -1, 5};
  rlx_tensor tw = {wv, f32s(1, (rlx_dim[]){4})}, ta = {xa, f32s(1, (rlx_dim[]){4})}, tb = {xb, f32s(1, (rlx_dim[]){4})};
  CHECK_OK(rlx_executable_set_param(e, "w", &tw));
  const rlx_tensor *o0, *o1;
  CHECK_OK(rlx_executable_set_input(e, "x", &ta));
  CHECK_OK(rlx_executable_run_resident(e));
  CHECK_OK(rlx_executable_read_output(e, 0, &o0));
  CHECK_OK(rlx_executable_read_output(e, 1, &o1));
  for (int i = 0; i < 4; i++) CHECK(((const float *)o0->data)[i] == wv[i] && ((const float *)o1->data)[i] == 1.0f);
  CHECK_OK(rlx_executable_set_input(e, "x", &tb)); /* the view output still holds run 1's x */
  for (int i = 0; i < 4; i++) CHECK(((const float *)o1->data)[i] == 1.0f);
  CHECK_OK(rlx_executable_run_resident(e));
  CHECK_OK(rlx_executable_read_output(e, 0, &o0));
  CHECK_OK(rlx_executable_read_output(e, 1, &o1));
  for (int i = 0; i < 4; i++)
    CHECK(((const float *)o0->data)[i] == xb[i] * wv[i] && ((const float *)o1->data)[i] == xb[i]);
  /* bind y to w: after each run w = x w + w */
  CHECK_OK(rlx_executable_bind_output_to_param(e, 2, "w"));
  float want[4], before[4];
  for (int i = 0; i < 4; i++) want[i] = wv[i];
  for (int r = 0; r < 3; r++) {
    CHECK_OK(rlx_executable_run_resident(e));
    for (int i = 0; i < 4; i++) before[i] = want[i], want[i] = xb[i] * want[i] + want[i];
  }
  float got[4] = {0};
  rlx_tensor tg = {got, f32s(1, (rlx_dim[]){4})};
  CHECK_OK(rlx_executable_get_param(e, "w", &tg));
  for (int i = 0; i < 4; i++)
    CHECK_MSG(got[i] == want[i], "w[%d] = %g after 3 bound runs, expected %g", i, got[i], want[i]);
  CHECK_OK(rlx_executable_read_output(e, 0, &o0)); /* x w of the last run, with w before its update */
  for (int i = 0; i < 4; i++) CHECK(((const float *)o0->data)[i] == xb[i] * before[i]);
done:
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* Sort is host-staged on sim: its operand goes down, the result comes up, counted. */
static void test_host_staging(void) {
  rlx_graph *g = NULL;
  rlx_id x, e1, s, y;
  CHECK_OK(rlx_graph_create(NULL, "staged", &g));
  CHECK_OK(rlx_input(g, "x", f32s(1, (rlx_dim[]){6}), &x));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, x, &e1));
  CHECK_OK(rlx_build_Sort(g, &e1, 1, &(rlx_attrs_Sort){.axis = 0, .descending = true}, NULL, &s));
  CHECK_OK(rlx_activation(g, RLX_ACT_LOG, s, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  CHECK(rlx_backend_host_stages(rlx_backend_find("sim"), RLX_OP_Sort));
  rlx_dispatch_report rep;
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile_with_report(g, "sim", NULL, &rep, &e));
  CHECK(rep.path[RLX_OP_Sort] == RLX_PATH_HOST_STAGED && rep.steps == 3);
  float xv[6] = {0.5f, -1, 2, 0, 1.5f, -0.25f};
  rlx_named_tensor in = {"x", {xv, f32s(1, (rlx_dim[]){6})}};
  const rlx_tensor *o;
  uint32_t n;
  rlx_transfer_stats st0, st1;
  rlx_executable_transfer_stats(e, &st0);
  CHECK_OK(rlx_executable_run(e, &in, 1, &o, &n));
  rlx_executable_transfer_stats(e, &st1);
  /* x up; Sort's operand down and its result up; y down */
  CHECK(st1.staged_nodes - st0.staged_nodes == 1);
  CHECK_MSG(st1.uploads - st0.uploads == 2 && st1.downloads - st0.downloads == 2, "%llu uploads, %llu downloads",
            (unsigned long long)(st1.uploads - st0.uploads), (unsigned long long)(st1.downloads - st0.downloads));
  CHECK(st1.download_bytes - st0.download_bytes == 2 * 6 * sizeof(float));
  const float want[6] = {2, 1.5f, 0.5f, 0, -0.25f, -1};
  for (int i = 0; n == 1 && i < 6; i++) CHECK(fabsf(((const float *)o[0].data)[i] - want[i]) < 1e-6f);
  rlx_executable_free(e);
  rlx_graph_free(g);
}

/* A While on sim: the runtime drives it, the bodies run on sim (their copies are counted). */
static void test_control_on_sim(void) {
  rlx_graph *g = NULL, *cond = NULL, *body = NULL;
  rlx_id x, w, cx, lim, c, bx, two, nx;
  CHECK_OK(rlx_graph_create(NULL, "loop", &g));
  CHECK_OK(rlx_input(g, "x", f32s(0, NULL), &x));
  CHECK_OK(rlx_graph_create_child(g, "cond", &cond));
  CHECK_OK(rlx_input(cond, "x", f32s(0, NULL), &cx));
  CHECK_OK(rlx_scalar_f32(cond, 100.0f, &lim));
  CHECK_OK(rlx_compare(cond, RLX_CMP_LT, cx, lim, &c));
  CHECK_OK(rlx_graph_set_outputs(cond, &c, 1));
  CHECK_OK(rlx_graph_create_child(g, "body", &body));
  CHECK_OK(rlx_input(body, "x", f32s(0, NULL), &bx));
  CHECK_OK(rlx_scalar_f32(body, 2.0f, &two));
  CHECK_OK(rlx_binary(body, RLX_BINOP_MUL, bx, two, &nx));
  CHECK_OK(rlx_graph_set_outputs(body, &nx, 1));
  CHECK_OK(rlx_build_While(g, &x, 1, &(rlx_attrs_While){.cond = cond, .body = body}, NULL, &w));
  CHECK_OK(rlx_graph_set_outputs(g, &w, 1));
  rlx_dispatch_report rep;
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile_with_report(g, "sim", NULL, &rep, &e));
  CHECK(rep.path[RLX_OP_While] == RLX_PATH_RUNTIME);
  float xv = 3.0f;
  rlx_named_tensor in = {"x", {&xv, f32s(0, NULL)}};
  const rlx_tensor *o;
  uint32_t n;
  rlx_sim_counts c0, c1;
  rlx_sim_counters(&c0);
  CHECK_OK(rlx_executable_run(e, &in, 1, &o, &n));
  rlx_sim_counters(&c1);
  CHECK(n == 1 && *(const float *)o[0].data == 192.0f); /* 3 * 2^6 */
  /* 7 cond runs and 6 body runs, each uploading its argument */
  CHECK_MSG(c1.uploads - c0.uploads >= 13, "%llu uploads", (unsigned long long)(c1.uploads - c0.uploads));
  rlx_executable_free(e);
  rlx_graph_free(g);
}

static void test_memory_limit(void) {
  rlx_graph *g = NULL;
  rlx_id x, y;
  CHECK_OK(rlx_graph_create(NULL, "huge", &g));
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_U8, 1, (rlx_dim[]){4294967297LL}), &x));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, x, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.memory_limit = (size_t)1 << 30;
  rlx_executable *e = NULL;
  CHECK_ERR(rlx_compile(g, "cpu", &o, &e), RLX_ERR_OOM, "over the memory limit of 1073741824 bytes");
  CHECK_ERR(rlx_compile(g, "cpu", &o, &e), RLX_ERR_OOM, "with 4294967297 bytes");
  /* without a limit below it: compiled, and the 8.6 GB of arena and buffers are never touched */
  o.memory_limit = SIZE_MAX;
  CHECK_OK(rlx_compile(g, "cpu", &o, &e));
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  /* AddressSanitizer writes shadow memory for every allocation: 1 byte per 8, here ~1.07 GB */
  long limit_kib = 1024L * 1024;
#if defined(__SANITIZE_ADDRESS__)
  limit_kib += (long)(2 * 4294967297LL / 8 / 1024);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  limit_kib += (long)(2 * 4294967297LL / 8 / 1024);
#endif
#endif
  CHECK_MSG(ru.ru_maxrss < limit_kib, "peak RSS %ld KiB after compiling an 8.6 GB graph (limit %ld KiB)", ru.ru_maxrss,
            limit_kib);
  rlx_executable_free(e);
  rlx_graph_free(g);
}

static void test_backend_options(void) {
  rlx_graph *f = model();
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.backend_options = &cpu;
  rlx_executable *e = NULL;
  CHECK_ERR(rlx_compile(f, "sim", &o, &e), RLX_ERR_INVALID_ARG, "options are for 'cpu'");
  cpu.threads = -2;
  CHECK_ERR(rlx_compile(f, "cpu", &o, &e), RLX_ERR_INVALID_ARG, "threads is -2");
  cpu.threads = 1;
  CHECK_OK(rlx_compile(f, "cpu", &o, &e));
  rlx_executable_free(e);
  rlx_graph_free(f);
}

int main(void) {
  init_data();
  test_memory_limit(); /* first: it measures the peak RSS of the process */
  test_optimizers();
  test_residency();
  test_lent_slots();
  test_host_staging();
  test_control_on_sim();
  test_backend_options();
  return rlx_test_finish("backend_seam");
}
