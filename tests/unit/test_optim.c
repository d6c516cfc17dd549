/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx_optim: first steps of every optimizer against values worked out by hand (the arithmetic is
 * spelled out next to each check), LR schedules, gradient clipping, state access, allocation
 * failures and error cases.
 *
 * With `--torch DIR` it instead replays the gradients written by tests/optim/torch_optim_ref.py
 * through rlx_optim and compares the lr, the clipped gradient norm and every param after every
 * step with torch.optim's trajectory (tests/cli/test_optim_torch.sh drives this mode). */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include <math.h>
#include <stdlib.h>

#include "rlx/optim.h"
#include "rlx_test.h"

#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

static rlx_shape shape1(int64_t n) {
  rlx_dim d[1] = {n};
  return rlx_shape_make(RLX_F32, 1, d);
}
static rlx_shape shape2(int64_t r, int64_t c) {
  rlx_dim d[2] = {r, c};
  return rlx_shape_make(RLX_F32, 2, d);
}

/* Creates an optimizer over one 1-D param p[n]; NULL (and a failed check) on error. */
static rlx_optim *make1(const rlx_optim_config *c, float *p, int64_t n) {
  rlx_optim *o = NULL;
  CHECK_OK(rlx_optim_create(c, &o));
  if (!o) return NULL;
  rlx_shape s = shape1(n);
  CHECK_OK(rlx_optim_add_param(o, "p", p, &s));
  return o;
}

static void step1(rlx_optim *o, const float *g) {
  const float *gs[1] = {g};
  CHECK_OK(rlx_optim_step(o, gs, 1));
}

static void test_sgd(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.lr = 0.1;
  /* plain: p - lr g */
  float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f};
  rlx_optim *o = make1(&c, p, 2);
  step1(o, g);
  CHECK(NEAR(p[0], 0.95, 1e-7) && NEAR(p[1], -2.025, 1e-7));
  CHECK(rlx_optim_step_count(o) == 1);
  rlx_optim_free(o);

  /* momentum 0.9, dampening 0.5: step 1 buf = g1 = 1 (no dampening), p = 1 - 0.1 = 0.9;
   * step 2 buf = 0.9 * 1 + 0.5 * 2 = 1.9, p = 0.9 - 0.19 = 0.71 */
  c.momentum = 0.9;
  c.dampening = 0.5;
  float q[1] = {1.0f}, g1[1] = {1.0f}, g2[1] = {2.0f};
  o = make1(&c, q, 1);
  step1(o, g1);
  CHECK(NEAR(q[0], 0.9, 1e-7));
  step1(o, g2);
  CHECK(NEAR(q[0], 0.71, 1e-6));
  const float *buf;
  size_t n = 0;
  CHECK_OK(rlx_optim_state(o, "p", "momentum_buffer", &buf, &n));
  CHECK(n == 1 && NEAR(buf[0], 1.9, 1e-6));
  rlx_optim_free(o);

  /* Nesterov: step 1 buf = 1, d = 1 + 0.9 * 1 = 1.9, p = 1 - 0.19 = 0.81;
   * step 2 buf = 0.9 + 2 = 2.9, d = 2 + 0.9 * 2.9 = 4.61, p = 0.81 - 0.461 = 0.349 */
  c.dampening = 0;
  c.nesterov = true;
  q[0] = 1.0f;
  o = make1(&c, q, 1);
  step1(o, g1);
  CHECK(NEAR(q[0], 0.81, 1e-6));
  step1(o, g2);
  CHECK(NEAR(q[0], 0.349, 1e-6));
  rlx_optim_free(o);

  /* L2 weight decay 0.1: d = 1 + 0.1 * 1 = 1.1, p = 1 - 0.11; maximize: p = 1 + 0.1 * 1 */
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.lr = 0.1;
  c.weight_decay = 0.1;
  q[0] = 1.0f;
  o = make1(&c, q, 1);
  step1(o, g1);
  CHECK(NEAR(q[0], 0.89, 1e-7));
  CHECK_ERR(rlx_optim_state(o, "p", "momentum_buffer", &buf, &n), RLX_ERR_NOT_FOUND, "no state");
  rlx_optim_free(o);
  c.weight_decay = 0;
  c.maximize = true;
  q[0] = 1.0f;
  o = make1(&c, q, 1);
  step1(o, g1);
  CHECK(NEAR(q[0], 1.1, 1e-7));
  rlx_optim_free(o);
}

static void test_adam(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_ADAM);
  c.lr = 0.1;
  /* step 1: m = 0.1 g, v = 0.001 g^2, bias-corrected m/sqrt(v) = sign(g): p = 1 - 0.1 * 0.5 /
   * (0.5 + 1e-8). step 2 with g = -1: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001,
   * p += 0.1 / 0.19 * 0.055 / (sqrt(0.00124975) / sqrt(0.001999) + 1e-8) -> 0.93661035 */
  float p[1] = {1.0f}, g1[1] = {0.5f}, g2[1] = {-1.0f};
  rlx_optim *o = make1(&c, p, 1);
  step1(o, g1);
  CHECK(NEAR(p[0], 0.9, 1e-6));
  const float *m, *v;
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg", &m, NULL));
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg_sq", &v, NULL));
  CHECK(NEAR(m[0], 0.05, 1e-8) && NEAR(v[0], 0.00025, 1e-10));
  step1(o, g2);
  CHECK(NEAR(p[0], 0.93661035, 2e-6));
  CHECK_ERR(rlx_optim_state(o, "p", "max_exp_avg_sq", &m, NULL), RLX_ERR_NOT_FOUND, "max_exp_avg_sq");
  rlx_optim_free(o);

  /* L2 (Adam): the gradient becomes 0.5 + 0.1 * 1 = 0.6 and the first step is still ~lr * sign */
  c.weight_decay = 0.1;
  p[0] = 1.0f;
  o = make1(&c, p, 1);
  step1(o, g1);
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg", &m, NULL));
  CHECK(NEAR(m[0], 0.06, 1e-7) && NEAR(p[0], 0.9, 1e-6));
  rlx_optim_free(o);

  /* AdamW decoupled: p = 1 * (1 - 0.1 * 0.1) - 0.1 * 1 = 0.89, moments see the raw gradient */
  rlx_optim_config_init(&c, RLX_OPTIM_ADAMW);
  c.lr = 0.1;
  c.weight_decay = 0.1;
  c.amsgrad = true;
  p[0] = 1.0f;
  o = make1(&c, p, 1);
  step1(o, g1);
  CHECK(NEAR(p[0], 0.89, 1e-6));
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg", &m, NULL));
  CHECK(NEAR(m[0], 0.05, 1e-8));
  /* amsgrad keeps the max of v: after a tiny gradient v drops to 0.999 * 0.00025, the max not */
  float tiny[1] = {0.0f};
  step1(o, tiny);
  const float *vmax;
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg_sq", &v, NULL));
  CHECK_OK(rlx_optim_state(o, "p", "max_exp_avg_sq", &vmax, NULL));
  CHECK(NEAR(v[0], 0.00024975, 1e-10) && NEAR(vmax[0], 0.00025, 1e-10));
  rlx_optim_free(o);
}

static void test_lion(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_LION);
  c.lr = 0.01;
  c.weight_decay = 0.5;
  /* m = 0: c = 0.1 g -> sign = (1, -1, 0); p = p (1 - 0.005) - 0.01 sign; m = 0.01 g */
  float p[3] = {1.0f, 2.0f, -1.0f}, g[3] = {0.3f, -0.2f, 0.0f};
  rlx_optim *o = make1(&c, p, 3);
  step1(o, g);
  CHECK(NEAR(p[0], 0.995 - 0.01, 1e-7) && NEAR(p[1], 1.99 + 0.01, 1e-7) && NEAR(p[2], -0.995, 1e-7));
  const float *m;
  CHECK_OK(rlx_optim_state(o, "p", "exp_avg", &m, NULL));
  CHECK(NEAR(m[0], 0.003, 1e-9) && NEAR(m[1], -0.002, 1e-9) && m[2] == 0.0f);
  /* step 2 with g = (-0.001, 0, 0): c0 = 0.9 * 0.003 - 0.0001 > 0 -> still +1 (momentum wins) */
  float g2[3] = {-0.001f, 0.0f, 0.0f};
  float before = p[0];
  step1(o, g2);
  CHECK(NEAR(p[0], before * 0.995 - 0.01, 1e-7));
  /* a NaN gradient is not hidden by the sign: the param becomes NaN (torch.sign(NaN) = NaN) */
  float g3[3] = {NAN, 0.0f, 0.0f};
  step1(o, g3);
  CHECK(isnan(p[0]) && !isnan(p[1]));
  rlx_optim_free(o);
}

static void test_rmsprop(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_RMSPROP);
  c.lr = 0.01;
  /* sq = 0.01 * 4 = 0.04, p = 1 - 0.01 * 2 / (0.2 + 1e-8) = 0.9 */
  float p[1] = {1.0f}, g[1] = {2.0f};
  rlx_optim *o = make1(&c, p, 1);
  step1(o, g);
  CHECK(NEAR(p[0], 0.9, 1e-6));
  rlx_optim_free(o);
  /* centered: ga = 0.02, avg = sqrt(0.04 - 0.0004) = 0.19899749, p = 1 - 0.02 / avg */
  c.centered = true;
  p[0] = 1.0f;
  o = make1(&c, p, 1);
  step1(o, g);
  CHECK(NEAR(p[0], 1.0 - 0.02 / sqrt(0.0396), 1e-6));
  const float *ga;
  CHECK_OK(rlx_optim_state(o, "p", "grad_avg", &ga, NULL));
  CHECK(NEAR(ga[0], 0.02, 1e-8));
  rlx_optim_free(o);
  /* momentum 0.9: step 1 buf = g / avg = 10, p = 1 - 0.1; step 2 (same g): sq = 0.0796,
   * buf = 9 + 2 / sqrt(0.0796), p -= 0.01 * buf */
  c.centered = false;
  c.momentum = 0.9;
  p[0] = 1.0f;
  o = make1(&c, p, 1);
  step1(o, g);
  CHECK(NEAR(p[0], 0.9, 1e-6));
  step1(o, g);
  CHECK(NEAR(p[0], 0.9 - 0.01 * (9.0 + 2.0 / sqrt(0.0796)), 1e-6));
  rlx_optim_free(o);
}

static void test_adagrad(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_ADAGRAD);
  c.lr = 0.1;
  c.lr_decay = 0.5;
  c.initial_accumulator_value = 0.1;
  float p[1] = {1.0f}, g[1] = {0.3f};
  rlx_optim *o = make1(&c, p, 1);
  const float *sum;
  CHECK_OK(rlx_optim_state(o, "p", "sum", &sum, NULL));
  CHECK(NEAR(sum[0], 0.1, 1e-8)); /* initial_accumulator_value before any step */
  /* step 1: sum = 0.19, p = 1 - 0.1 * 0.3 / sqrt(0.19); step 2: clr = 0.1 / 1.5, sum = 0.28 */
  step1(o, g);
  double e1 = 1.0 - 0.1 * 0.3 / sqrt(0.19);
  CHECK(NEAR(p[0], e1, 1e-6));
  step1(o, g);
  CHECK(NEAR(p[0], e1 - 0.1 / 1.5 * 0.3 / sqrt(0.28), 1e-6));
  CHECK(NEAR(sum[0], 0.28, 1e-7));
  rlx_optim_free(o);
}

/* The scalar map s -> a s + b s^3 + c s^5 applied `steps` times: what Newton-Schulz does to each
 * singular value. */
static double ns_scalar(double s, int steps) {
  for (int i = 0; i < steps; i++) s = 3.4445 * s - 4.7750 * s * s * s + 2.0315 * s * s * s * s * s;
  return s;
}

static void test_muon(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_MUON);
  c.lr = 0.1;
  /* diag(3, 1): normalised singular values 3/sqrt(10) and 1/sqrt(10), mapped one by one; the
   * momentum only rescales the first update, which the normalisation removes. */
  float w[4] = {0, 0, 0, 0}, g[4] = {3, 0, 0, 1};
  rlx_optim *o = NULL;
  CHECK_OK(rlx_optim_create(&c, &o));
  rlx_shape s22 = shape2(2, 2), s23 = shape2(3, 2), s1 = shape1(2);
  CHECK_OK(rlx_optim_add_param(o, "w", w, &s22));
  /* tall 3 x 2 rank one u v^T (|u| = 3, |v| = 5): one singular value 1, adjust sqrt(3 / 2) */
  float t[6] = {0}, gt[6] = {1 * 3, 1 * 4, 2 * 3, 2 * 4, 2 * 3, 2 * 4};
  CHECK_OK(rlx_optim_add_param(o, "t", t, &s23));
  /* rank-1 params get AdamW at the aux lr 3e-4: first step -3e-4 * sign(g) */
  float b[2] = {1, 1}, gb[2] = {0.5f, -2.0f};
  CHECK_OK(rlx_optim_add_param(o, "b", b, &s1));
  const float *gs[3] = {g, gt, gb};
  CHECK_OK(rlx_optim_step(o, gs, 3));
  double n = sqrt(10.0) + 1e-7;
  CHECK_MSG(NEAR(w[0], -0.1 * ns_scalar(3 / n, 5), 2e-6), "w0 %g want %g", w[0], -0.1 * ns_scalar(3 / n, 5));
  CHECK(NEAR(w[3], -0.1 * ns_scalar(1 / n, 5), 2e-6));
  CHECK(NEAR(w[1], 0, 1e-6) && NEAR(w[2], 0, 1e-6));
  double f = ns_scalar(15.0 / (15.0 + 1e-7), 5) * sqrt(1.5) * 0.1;
  static const double u[3] = {1, 2, 2}, vv[2] = {3, 4};
  int ok = 1;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) ok &= NEAR(t[i * 2 + j], -f * u[i] / 3 * vv[j] / 5, 2e-6);
  CHECK(ok);
  CHECK(NEAR(b[0], 1 - 3e-4, 1e-7) && NEAR(b[1], 1 + 3e-4, 1e-7));
  const float *buf;
  CHECK_OK(rlx_optim_state(o, "w", "momentum_buffer", &buf, NULL));
  CHECK(NEAR(buf[0], 0.05 * 3, 1e-7)); /* buf = lerp(0, g, 1 - 0.95) */
  CHECK_ERR(rlx_optim_state(o, "w", "exp_avg", &buf, NULL), RLX_ERR_NOT_FOUND, "exp_avg");
  CHECK_OK(rlx_optim_state(o, "b", "exp_avg", &buf, NULL));
  rlx_optim_free(o);

  /* match_rms_adamw on the tall matrix: lr * 0.2 * sqrt(3); weight decay 0.5: p *= 1 - 0.05 */
  c.muon_lr_adjust = RLX_MUON_LR_MATCH_RMS_ADAMW;
  c.weight_decay = 0.5;
  c.ns_steps = 2;
  for (int i = 0; i < 6; i++) t[i] = 1.0f;
  o = NULL;
  CHECK_OK(rlx_optim_create(&c, &o));
  CHECK_OK(rlx_optim_add_param(o, "t", t, &s23));
  const float *g1[1] = {gt};
  CHECK_OK(rlx_optim_step(o, g1, 1));
  f = ns_scalar(15.0 / (15.0 + 1e-7), 2) * 0.1 * 0.2 * sqrt(3.0);
  ok = 1;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) ok &= NEAR(t[i * 2 + j], 0.95 - f * u[i] / 3 * vv[j] / 5, 2e-6);
  CHECK(ok);
  rlx_optim_free(o);
}

static void test_clipping(void) {
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.lr = 1.0;
  c.clip_grad_norm = 1.0;
  rlx_optim *o = NULL;
  CHECK_OK(rlx_optim_create(&c, &o));
  CHECK(isnan(rlx_optim_last_grad_norm(o)));
  float a[1] = {0}, b[1] = {0}, ga[1] = {3}, gb[1] = {4};
  rlx_shape s = shape1(1);
  CHECK_OK(rlx_optim_add_param(o, "a", a, &s));
  CHECK_OK(rlx_optim_add_param(o, "b", b, &s));
  const float *gs[2] = {ga, gb};
  CHECK_OK(rlx_optim_step(o, gs, 2));
  /* norm 5, scale 1 / (5 + 1e-6) */
  CHECK(NEAR(rlx_optim_last_grad_norm(o), 5.0, 1e-9));
  CHECK(NEAR(a[0], -3 / 5.000001, 1e-7) && NEAR(b[0], -4 / 5.000001, 1e-7));
  CHECK(ga[0] == 3 && gb[0] == 4); /* gradients are not modified */
  /* a non-finite gradient: error, nothing updated, no step counted */
  float bad[1] = {NAN};
  const float *gbad[2] = {ga, bad};
  CHECK_ERR(rlx_optim_step(o, gbad, 2), RLX_ERR_RUNTIME, "param 'b'");
  CHECK(NEAR(a[0], -3 / 5.000001, 1e-7) && rlx_optim_step_count(o) == 1);
  /* below the threshold: untouched (scale 1) */
  float sa[1] = {0.3f}, sb[1] = {0.4f};
  const float *gsmall[2] = {sa, sb};
  CHECK_OK(rlx_optim_step(o, gsmall, 2));
  CHECK(NEAR(a[0], -3 / 5.000001 - 0.3, 1e-6));
  rlx_optim_free(o);

  /* value clipping then norm clipping: (2, -3, 0.1) -> (0.5, -0.5, 0.1), norm 0.7141428 < 1 */
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.lr = 1.0;
  c.clip_grad_value = 0.5;
  c.clip_grad_norm = 1.0;
  float p[3] = {0, 0, 0}, g[3] = {2, -3, 0.1f};
  o = make1(&c, p, 3);
  step1(o, g);
  CHECK(NEAR(p[0], -0.5, 1e-7) && NEAR(p[1], 0.5, 1e-7) && NEAR(p[2], -0.1, 1e-7));
  CHECK(NEAR(rlx_optim_last_grad_norm(o), sqrt(0.51), 1e-7));
  rlx_optim_free(o);
}

static void test_schedules(void) {
  rlx_lr_schedule s;
  memset(&s, 0, sizeof s);
  s.kind = RLX_LR_CONSTANT;
  CHECK(rlx_lr_schedule_at(&s, 0.5, 1000) == 0.5);
  s.kind = RLX_LR_COSINE;
  s.decay_steps = 10;
  s.min_lr = 0.1;
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 0), 1.0, 1e-12));
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 5), 0.55, 1e-12));
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 10), 0.1, 1e-12));
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 100), 0.1, 1e-12)); /* stays at min_lr (torch rises) */
  s.warmup_steps = 4; /* warmup from 0: 0, 0.25, 0.5, 0.75, then the cosine from its start */
  CHECK(rlx_lr_schedule_at(&s, 1.0, 0) == 0.0);
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 2), 0.5, 1e-12));
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 4), 1.0, 1e-12));
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 9), 0.55, 1e-12));
  s.warmup_start_factor = 0.2; /* 0.2 + 0.8 * 1 / 4 = 0.4 */
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 1), 0.4, 1e-12));
  memset(&s, 0, sizeof s);
  s.kind = RLX_LR_LINEAR;
  s.decay_steps = 4;
  CHECK(NEAR(rlx_lr_schedule_at(&s, 1.0, 1), 0.75, 1e-12));
  CHECK(rlx_lr_schedule_at(&s, 1.0, 4) == 0.0 && rlx_lr_schedule_at(&s, 1.0, 9) == 0.0);
  s.kind = RLX_LR_STEP;
  s.step_size = 3;
  s.gamma = 0.5;
  CHECK(rlx_lr_schedule_at(&s, 1.0, 2) == 1.0 && rlx_lr_schedule_at(&s, 1.0, 3) == 0.5 &&
        rlx_lr_schedule_at(&s, 1.0, 6) == 0.25);

  /* the optimizer follows it: SGD lr 1 with a step schedule, g = 1 */
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.lr = 1.0;
  c.schedule = s;
  float p[1] = {0}, g[1] = {1};
  rlx_optim *o = make1(&c, p, 1);
  CHECK(rlx_optim_current_lr(o) == 1.0);
  for (int i = 0; i < 4; i++) step1(o, g); /* 1 + 1 + 1 + 0.5 */
  CHECK(NEAR(p[0], -3.5, 1e-6));
  CHECK(rlx_optim_current_lr(o) == 0.5 && rlx_optim_step_count(o) == 4);
  rlx_optim_free(o);
}

static void test_api(void) {
  for (int k = 0; k < RLX_OPTIM_KIND_COUNT; k++) {
    rlx_optim_kind back;
    CHECK(rlx_optim_kind_from_name(rlx_optim_kind_name((rlx_optim_kind)k), &back) && back == (rlx_optim_kind)k);
    rlx_optim_config c;
    rlx_optim_config_init(&c, (rlx_optim_kind)k);
    CHECK_OK(rlx_optim_config_check(&c)); /* every default config is valid */
  }
  CHECK(!rlx_optim_kind_from_name("adamax", NULL) && rlx_optim_kind_name(RLX_OPTIM_KIND_COUNT) == NULL);

  /* step_tensors = step; a param added later starts its own Adam step count */
  rlx_optim_config c;
  rlx_optim_config_init(&c, RLX_OPTIM_ADAM);
  c.lr = 0.1;
  float p[2] = {1, 1}, q[1] = {1}, g[2] = {0.5f, -0.5f}, gq[1] = {2};
  rlx_optim *o = make1(&c, p, 2);
  rlx_tensor t = {g, shape1(2)};
  CHECK_OK(rlx_optim_step_tensors(o, &t, 1));
  CHECK(NEAR(p[0], 0.9, 1e-6) && NEAR(p[1], 1.1, 1e-6));
  rlx_shape s1 = shape1(1);
  CHECK_OK(rlx_optim_add_param(o, "q", q, &s1));
  CHECK(rlx_optim_param_count(o) == 2);
  rlx_tensor ts[2] = {{g, shape1(2)}, {gq, shape1(1)}};
  CHECK_OK(rlx_optim_step_tensors(o, ts, 2));
  CHECK(NEAR(q[0], 0.9, 1e-6)); /* bias-corrected first step for q */
  /* zero-element params are accepted and skipped */
  rlx_dim z[2] = {0, 3};
  rlx_shape sz = rlx_shape_make(RLX_F32, 2, z);
  float dummy[1] = {7};
  CHECK_OK(rlx_optim_add_param(o, "empty", dummy, &sz));
  const float *gs3[3] = {g, gq, NULL};
  CHECK_OK(rlx_optim_step(o, gs3, 3));
  CHECK(dummy[0] == 7);
  rlx_optim_free(o);
  rlx_optim_free(NULL);
}

static void test_errors(void) {
  rlx_optim_config c;
  rlx_optim *o = NULL;
  rlx_optim_config_init(&c, RLX_OPTIM_ADAM);
  c.lr = -0.1;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "lr must be a finite number >= 0");
  CHECK(o == NULL);
  c.lr = NAN;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "lr");
  rlx_optim_config_init(&c, RLX_OPTIM_ADAM);
  c.beta1 = 1.0;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "beta1 must be in [0, 1)");
  c.beta1 = 0.9;
  c.beta2 = -0.1;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "beta2");
  c.beta2 = 0.999;
  c.eps = 0;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "eps must be a finite number > 0");
  c.eps = 1e-8;
  c.weight_decay = -1;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "weight_decay");
  c.weight_decay = 0;
  c.clip_grad_norm = INFINITY;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "clip_grad_norm");
  c.clip_grad_norm = 0;
  c.schedule.kind = RLX_LR_COSINE;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "schedule.decay_steps");
  c.schedule.decay_steps = 10;
  c.schedule.warmup_steps = 2;
  c.schedule.warmup_start_factor = 1.5;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "schedule.warmup_start_factor");
  c.schedule.kind = RLX_LR_STEP;
  c.schedule.warmup_start_factor = 0;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "schedule.step_size");
  c.schedule.kind = (rlx_lr_schedule_kind)42;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "schedule.kind");
  c.kind = (rlx_optim_kind)99;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "kind 99");
  CHECK_ERR(rlx_optim_create(NULL, &o), RLX_ERR_INVALID_ARG, "NULL");
  CHECK_ERR(rlx_optim_create(&c, NULL), RLX_ERR_INVALID_ARG, "out is NULL");

  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  c.eps = 0; /* unused by SGD: fine */
  c.nesterov = true;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "nesterov needs momentum > 0");
  c.momentum = 0.9;
  c.dampening = 0.1;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "dampening 0");
  rlx_optim_config_init(&c, RLX_OPTIM_RMSPROP);
  c.alpha = 1.5;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "alpha must be in [0, 1]");
  rlx_optim_config_init(&c, RLX_OPTIM_ADAGRAD);
  c.lr_decay = -1;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "lr_decay");
  rlx_optim_config_init(&c, RLX_OPTIM_MUON);
  c.ns_steps = 0;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "ns_steps");
  c.ns_steps = 5;
  c.momentum = 1.0;
  CHECK_ERR(rlx_optim_create(&c, &o), RLX_ERR_INVALID_ARG, "momentum must be in [0, 1)");

  /* params and steps */
  rlx_optim_config_init(&c, RLX_OPTIM_SGD);
  CHECK_OK(rlx_optim_create(&c, &o));
  float g[2] = {1, 1}, p[2] = {0, 0}, p2[2] = {0, 0};
  const float *gs[1] = {g};
  CHECK_ERR(rlx_optim_step(o, gs, 1), RLX_ERR_INVALID_ARG, "no params");
  CHECK_ERR(rlx_optim_step(o, NULL, 0), RLX_ERR_INVALID_ARG, "no params");
  rlx_shape s = shape1(2);
  CHECK_ERR(rlx_optim_add_param(o, "", p, &s), RLX_ERR_INVALID_ARG, "non-empty");
  CHECK_ERR(rlx_optim_add_param(o, "w", NULL, &s), RLX_ERR_INVALID_ARG, "data is NULL");
  CHECK_ERR(rlx_optim_add_param(o, "w", p, NULL), RLX_ERR_INVALID_ARG, "shape is NULL");
  rlx_shape s16 = s;
  s16.dtype = RLX_F16;
  CHECK_ERR(rlx_optim_add_param(o, "w", p, &s16), RLX_ERR_INVALID_ARG, "dtype must be f32, got f16");
  rlx_dim sym[2] = {RLX_DIM_SYM(0), 2};
  rlx_shape ssym = rlx_shape_make(RLX_F32, 2, sym);
  CHECK_ERR(rlx_optim_add_param(o, "w", p, &ssym), RLX_ERR_SHAPE, "param 'w'");
  rlx_shape sbig = s;
  sbig.rank = 200;
  CHECK_ERR(rlx_optim_add_param(o, "w", p, &sbig), RLX_ERR_SHAPE, "rank");
  CHECK_OK(rlx_optim_add_param(o, "w", p, &s));
  CHECK_ERR(rlx_optim_add_param(o, "w", p2, &s), RLX_ERR_INVALID_ARG, "already registered");
  CHECK_ERR(rlx_optim_step(o, gs, 2), RLX_ERR_INVALID_ARG, "got 2 gradients for 1 params");
  CHECK_ERR(rlx_optim_step(o, NULL, 1), RLX_ERR_INVALID_ARG, "grads is NULL");
  const float *gnull[1] = {NULL};
  CHECK_ERR(rlx_optim_step(o, gnull, 1), RLX_ERR_INVALID_ARG, "gradient 0 (param 'w') is NULL");
  rlx_tensor t = {g, shape1(3)};
  CHECK_ERR(rlx_optim_step_tensors(o, &t, 1), RLX_ERR_SHAPE, "has shape [3] f32, expected [2] f32");
  t.shape = shape1(2);
  t.shape.dtype = RLX_F64;
  CHECK_ERR(rlx_optim_step_tensors(o, &t, 1), RLX_ERR_SHAPE, "expected [2] f32");
  t.shape.rank = 99;
  CHECK_ERR(rlx_optim_step_tensors(o, &t, 1), RLX_ERR_SHAPE, "rank 99");
  CHECK(p[0] == 0 && rlx_optim_step_count(o) == 0); /* failed steps change nothing */
  const float *d;
  CHECK_ERR(rlx_optim_state(o, "v", "momentum_buffer", &d, NULL), RLX_ERR_NOT_FOUND, "no param named 'v'");
  CHECK_ERR(rlx_optim_step(NULL, gs, 1), RLX_ERR_INVALID_ARG, "NULL");
  CHECK_ERR(rlx_optim_add_param(NULL, "w", p, &s), RLX_ERR_INVALID_ARG, "NULL");
  rlx_optim_free(o);
}

/* Every allocation of create + add_param failing in turn: a clean error, no leak. */
static void test_alloc_failures(void) {
  int failures = 0, leaks = 0;
  for (long k = 1; k < 40; k++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, k);
    rlx_optim_config c;
    rlx_optim_config_init(&c, RLX_OPTIM_MUON);
    c.allocator = &fa.al;
    rlx_optim *o = NULL;
    float w[12] = {0}, b[3] = {0};
    rlx_shape sw = shape2(3, 4), sb = shape1(3);
    rlx_status st = rlx_optim_create(&c, &o);
    if (st == RLX_OK) st = rlx_optim_add_param(o, "w", w, &sw);
    if (st == RLX_OK) st = rlx_optim_add_param(o, "b", b, &sb);
    if (st != RLX_OK) failures += st == RLX_ERR_OOM;
    rlx_optim_free(o);
    if (fa.live != 0) leaks++;
    if (fa.count < k) break; /* every allocation has been made to fail once */
  }
  CHECK(failures >= 5);
  CHECK(leaks == 0);
}

/* ---------------------------------------------------------------------------------------------
 * --torch DIR: replay of torch_optim_ref.py's trajectories. */

typedef struct ref_param {
  char name[32];
  rlx_shape shape;
  size_t n;
} ref_param;

static bool set_field(rlx_optim_config *c, const char *key, const char *val) {
  double v = strtod(val, NULL);
  struct {
    const char *k;
    double *f;
  } dbl[] = {{"lr", &c->lr},
             {"weight_decay", &c->weight_decay},
             {"eps", &c->eps},
             {"beta1", &c->beta1},
             {"beta2", &c->beta2},
             {"momentum", &c->momentum},
             {"dampening", &c->dampening},
             {"alpha", &c->alpha},
             {"lr_decay", &c->lr_decay},
             {"initial_accumulator_value", &c->initial_accumulator_value},
             {"muon_aux_lr", &c->muon_aux_lr},
             {"clip_grad_value", &c->clip_grad_value},
             {"clip_grad_norm", &c->clip_grad_norm},
             {"schedule.warmup_start_factor", &c->schedule.warmup_start_factor},
             {"schedule.min_lr", &c->schedule.min_lr},
             {"schedule.gamma", &c->schedule.gamma}};
  for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++)
    if (strcmp(key, dbl[i].k) == 0) return *dbl[i].f = v, true;
  struct {
    const char *k;
    bool *f;
  } flags[] = {
      {"maximize", &c->maximize}, {"amsgrad", &c->amsgrad}, {"nesterov", &c->nesterov}, {"centered", &c->centered}};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (strcmp(key, flags[i].k) == 0) return *flags[i].f = v != 0, true;
  if (strcmp(key, "ns_steps") == 0) return c->ns_steps = (uint32_t)v, true;
  if (strcmp(key, "schedule.warmup_steps") == 0) return c->schedule.warmup_steps = (uint64_t)v, true;
  if (strcmp(key, "schedule.decay_steps") == 0) return c->schedule.decay_steps = (uint64_t)v, true;
  if (strcmp(key, "schedule.step_size") == 0) return c->schedule.step_size = (uint64_t)v, true;
  if (strcmp(key, "muon_lr_adjust") == 0) {
    c->muon_lr_adjust = strcmp(val, "original") == 0 ? RLX_MUON_LR_ORIGINAL : RLX_MUON_LR_MATCH_RMS_ADAMW;
    return strcmp(val, "original") == 0 || strcmp(val, "match_rms_adamw") == 0;
  }
  if (strcmp(key, "schedule.kind") == 0) {
    static const char *const names[] = {"constant", "cosine", "linear", "step"};
    for (int k = 0; k < 4; k++)
      if (strcmp(val, names[k]) == 0) return c->schedule.kind = (rlx_lr_schedule_kind)k, true;
  }
  return false;
}

static float *load_f32(const char *dir, const char *file, size_t want) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  rlx_tensor t;
  if (rlx_npy_load(path, NULL, &t) != RLX_OK) {
    fprintf(stderr, "cannot load %s: %s\n", path, rlx_last_error());
    return NULL;
  }
  size_t n = 0;
  size_t es = rlx_dtype_size((rlx_dtype)t.shape.dtype);
  if (rlx_shape_numel(&t.shape, &n) != RLX_OK || n != want || (es != 4 && es != 8)) {
    fprintf(stderr, "%s: expected %zu elements of f32/f64\n", path, want);
    rlx_npy_tensor_free(&t, NULL);
    return NULL;
  }
  float *out = malloc(want * sizeof *out + (want == 0));
  for (size_t i = 0; out && i < n; i++)
    out[i] = t.shape.dtype == RLX_F64 ? (float)((double *)t.data)[i] : ((float *)t.data)[i];
  rlx_npy_tensor_free(&t, NULL);
  return out;
}

static double *load_f64(const char *dir, const char *file, size_t want) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  rlx_tensor t;
  if (rlx_npy_load(path, NULL, &t) != RLX_OK) {
    fprintf(stderr, "cannot load %s: %s\n", path, rlx_last_error());
    return NULL;
  }
  size_t n = 0;
  double *out = NULL;
  if (t.shape.dtype == RLX_F64 && rlx_shape_numel(&t.shape, &n) == RLX_OK && n == want) {
    out = malloc(want * sizeof *out + 1);
    if (out) memcpy(out, t.data, want * sizeof *out);
  } else {
    fprintf(stderr, "%s: expected %zu f64 elements\n", path, want);
  }
  rlx_npy_tensor_free(&t, NULL);
  return out;
}

enum { MAX_REF_PARAMS = 8 };

/* Runs one configuration; returns true when every step matches. */
static bool replay(const char *dir, const char *name, const rlx_optim_config *c, const ref_param *ps, uint32_t np,
                   uint32_t steps, float *const *init, float *const *grads) {
  const double rtol = 1e-5, atol = 1e-6;
  bool ok = false;
  float *cur[MAX_REF_PARAMS] = {0}, *want[MAX_REF_PARAMS] = {0};
  double *lrs = NULL, *norms = NULL;
  rlx_optim *o = NULL;
  char file[256];
  if (rlx_optim_create(c, &o) != RLX_OK) {
    printf("FAIL config %s: create: %s\n", name, rlx_last_error());
    goto done;
  }
  for (uint32_t i = 0; i < np; i++) {
    snprintf(file, sizeof file, "%s_p%u.npy", name, i);
    want[i] = load_f32(dir, file, ps[i].n * steps);
    cur[i] = malloc(ps[i].n * sizeof(float));
    if (!want[i] || !cur[i]) goto done;
    memcpy(cur[i], init[i], ps[i].n * sizeof(float));
    if (rlx_optim_add_param(o, ps[i].name, cur[i], &ps[i].shape) != RLX_OK) {
      printf("FAIL config %s: add_param: %s\n", name, rlx_last_error());
      goto done;
    }
  }
  snprintf(file, sizeof file, "%s_lr.npy", name);
  if (!(lrs = load_f64(dir, file, steps))) goto done;
  if (c->clip_grad_norm > 0) {
    snprintf(file, sizeof file, "%s_norm.npy", name);
    if (!(norms = load_f64(dir, file, steps))) goto done;
  }
  for (uint32_t t = 0; t < steps; t++) {
    double lr = rlx_optim_current_lr(o);
    if (!(fabs(lr - lrs[t]) <= 1e-9 * fabs(lrs[t]) + 1e-15)) {
      printf("FAIL config %s: step %u: lr %.12g, torch %.12g\n", name, t, lr, lrs[t]);
      goto done;
    }
    const float *g[MAX_REF_PARAMS];
    for (uint32_t i = 0; i < np; i++) g[i] = grads[i] + (size_t)t * ps[i].n;
    if (rlx_optim_step(o, g, np) != RLX_OK) {
      printf("FAIL config %s: step %u: %s\n", name, t, rlx_last_error());
      goto done;
    }
    if (norms) {
      double nm = rlx_optim_last_grad_norm(o);
      if (!(fabs(nm - norms[t]) <= rtol * fabs(norms[t]))) {
        printf("FAIL config %s: step %u: grad norm %.9g, torch %.9g\n", name, t, nm, norms[t]);
        goto done;
      }
    }
    for (uint32_t i = 0; i < np; i++) {
      const float *w = want[i] + (size_t)t * ps[i].n;
      for (size_t k = 0; k < ps[i].n; k++) {
        double a = cur[i][k], b = w[k];
        if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
          printf("FAIL config %s: step %u: param %s[%zu] = %.9g, torch %.9g (diff %.3g)\n", name, t, ps[i].name, k, a,
                 b, fabs(a - b));
          goto done;
        }
      }
    }
  }
  printf("ok config %s (%s, %u steps)\n", name, rlx_optim_kind_name(c->kind), steps);
  ok = true;
done:
  rlx_optim_free(o);
  for (uint32_t i = 0; i < np; i++) {
    free(cur[i]);
    free(want[i]);
  }
  free(lrs);
  free(norms);
  return ok;
}

static int torch_mode(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  ref_param ps[MAX_REF_PARAMS];
  float *init[MAX_REF_PARAMS] = {0}, *grads[MAX_REF_PARAMS] = {0};
  uint32_t np = 0, steps = 0, configs = 0;
  bool loaded = false;
  char line[2048];
  while (fgets(line, sizeof line, f)) {
    char *save = NULL, *tok = strtok_r(line, " \n", &save);
    if (!tok) continue;
    if (strcmp(tok, "steps") == 0) {
      steps = (uint32_t)atoi(strtok_r(NULL, " \n", &save));
    } else if (strcmp(tok, "param") == 0 && np < MAX_REF_PARAMS) {
      ref_param *p = &ps[np];
      snprintf(p->name, sizeof p->name, "%s", strtok_r(NULL, " \n", &save));
      rlx_dim d[RLX_MAX_RANK];
      uint32_t r = 0;
      char *ds;
      while ((ds = strtok_r(NULL, " \n", &save)) && r < RLX_MAX_RANK) d[r++] = atoll(ds);
      p->shape = rlx_shape_make(RLX_F32, r, d);
      rlx_shape_numel(&p->shape, &p->n);
      np++;
    } else if (strcmp(tok, "config") == 0) {
      if (!loaded) {
        for (uint32_t i = 0; i < np; i++) {
          char file[64];
          snprintf(file, sizeof file, "init_p%u.npy", i);
          init[i] = load_f32(dir, file, ps[i].n);
          snprintf(file, sizeof file, "grads_p%u.npy", i);
          grads[i] = load_f32(dir, file, ps[i].n * steps);
          CHECK_MSG(init[i] && grads[i], "reference inputs of param %u", i);
          if (!init[i] || !grads[i]) goto out;
        }
        loaded = true;
      }
      char *name = strtok_r(NULL, " \n", &save), *kind = strtok_r(NULL, " \n", &save);
      rlx_optim_kind k;
      if (!name || !kind || !rlx_optim_kind_from_name(kind, &k)) {
        CHECK_MSG(0, "bad config line in manifest");
        continue;
      }
      rlx_optim_config c;
      rlx_optim_config_init(&c, k);
      char *kv;
      bool parsed = true;
      while ((kv = strtok_r(NULL, " \n", &save))) {
        char *eq = strchr(kv, '=');
        if (!eq) {
          parsed = false;
          break;
        }
        *eq = 0;
        if (!set_field(&c, kv, eq + 1)) {
          printf("FAIL config %s: unknown setting %s=%s\n", name, kv, eq + 1);
          parsed = false;
        }
      }
      configs++;
      CHECK_MSG(parsed && replay(dir, name, &c, ps, np, steps, init, grads), "config %s", name);
    }
  }
out:
  fclose(f);
  for (uint32_t i = 0; i < np; i++) {
    free(init[i]);
    free(grads[i]);
  }
  CHECK_MSG(configs > 0 && steps > 0, "manifest %s lists no configuration", path);
  return rlx_test_finish("test_optim --torch");
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--torch") == 0) return torch_mode(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: test_optim [--torch DIR]\n");
    return 2;
  }
  test_sgd();
  test_adam();
  test_lion();
  test_rmsprop();
  test_adagrad();
  test_muon();
  test_clipping();
  test_schedules();
  test_api();
  test_errors();
  test_alloc_failures();
  return rlx_test_finish("test_optim");
}
