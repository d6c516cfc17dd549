/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer: the training-domain ops (Adagrad, Momentum, Adam, Gradient), MaxPool's Indices
 * output, MaxUnpool, Einsum diagonals and opset-8 Scan. Models are built with the protobuf-c
 * builder of tests/common/onnx_build.h, imported, compiled and run on the CPU (onnx_run.h), and
 * compared with values computed here by plain loops from the ONNX operator definitions. Each
 * family also checks an error path. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

#define TRAINING "ai.onnx.preview.training"
#define DIMS(...) ((int64_t[]){__VA_ARGS__})

/* A model importing the default domain at `opset` (0 = not at all) and the training domain at
 * `training` (0 = not at all); tests/common/onnx_build.h. */
static ob_model *model(int64_t opset, int64_t training) {
  ob_model *m = ob_model_new(opset);
  if (training) ob_opset_import(m, TRAINING, training);
  return m;
}
/* f32 graph inputs of one shape, comma-separated names. */
static void f32_inputs(ob_model *m, const char *names, int rank, const int64_t *dims) {
  char buf[64];
  for (const char *p = names;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    memcpy(buf, p, n);
    buf[n] = 0;
    ob_input(m, buf, OB_FLOAT, rank, dims);
    if (!e) return;
    p = e + 1;
  }
}
/* One CHECK: importing fails with `code` and `sub` in the message. Frees the model; returns
 * whether no graph came back (the callers check that once for all their failed imports). */
static bool expect_error(ob_model *m, rlx_status code, const char *sub) {
  rlx_graph *g = NULL;
  CHECK_ERR(ob_import(m, NULL, &g), code, sub);
  bool none = g == NULL;
  rlx_graph_free(g);
  ob_model_free(m);
  return none;
}
/* Output k holds n floats (f32 or f64) close to want (relative tolerance tol). */
static bool close_to(const runner *r, uint32_t k, const double *want, size_t n, double tol) {
  if (k >= r->n_outs) return false;
  return out_close(&r->outs[k], want, n, tol);
}
static bool equal_i64(const runner *r, uint32_t k, const int64_t *want, size_t n) {
  return k < r->n_outs && out_equal_i64(&r->outs[k], want, n);
}
static float frand(unsigned *st) {
  *st = *st * 1103515245u + 12345u;
  return (float)((*st >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* ======================================================================================
 * Optimizers (ai.onnx.preview.training)
 * ====================================================================================== */

/* X1 [2], X2 [3] with their gradients and states: values fed to every optimizer test. */
static const float X1[2] = {1.0f, -2.0f}, G1[2] = {0.5f, -1.5f}, S1[2] = {0.25f, 2.0f}, Q1[2] = {1.0f, 0.5f};
static const float X2[3] = {3.0f, 0.5f, -1.0f}, G2[3] = {-2.0f, 0.25f, 4.0f}, S2[3] = {1.0f, 0.0f, 3.0f},
                   Q2[3] = {2.0f, 0.1f, 0.3f};

static void opt_inputs(ob_model *m, const char *const *names, int n) {
  ob_input(m, "R", OB_FLOAT, 0, NULL);
  ob_input(m, "T", OB_INT64, 0, NULL);
  for (int i = 2; i < n; i++) ob_input(m, names[i], OB_FLOAT, 1, DIMS(names[i][1] == '1' ? 2 : 3));
}

static void test_adagrad(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "H1", "H2"};
  const float decay = 0.5f, eps = 1e-3f, norm = 0.01f;
  for (int64_t step = 0; step < 3; step += 2) {
    ob_model *m = model(0, 1);
    Onnx__NodeProto *n = ob_node_in(m, TRAINING, "Adagrad", "R,T,X1,X2,G1,G2,H1,H2", "X1n,X2n,H1n,H2n");
    ob_attr_float(m, n, "decay_factor", decay);
    ob_attr_float(m, n, "epsilon", eps);
    ob_attr_float(m, n, "norm_coefficient", norm);
    opt_inputs(m, names, 8);
    ob_outputs_untyped(m, "X1n,X2n,H1n,H2n");
    float r = 0.1f;
    rlx_named_tensor ins[8] = {tin("R", &r, RLX_F32, 0, NULL),     tin("T", &step, RLX_I64, 0, NULL),
                               tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                               tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                               tin("H1", S1, RLX_F32, 1, DIMS(2)), tin("H2", S2, RLX_F32, 1, DIMS(3))};
    runner rr;
    if (run_ob(m, NULL, ins, 8, &rr)) {
      double lr = 0.1 / (1 + (double)step * decay);
      for (int t = 0; t < 2; t++) {
        const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *h = t ? S2 : S1;
        int n = t ? 3 : 2;
        double wx[3], wh[3];
        for (int i = 0; i < n; i++) {
          double gr_ = norm * x[i] + gg[i];
          wh[i] = h[i] + gr_ * gr_;
          wx[i] = x[i] - lr * gr_ / (sqrt(wh[i]) + eps);
        }
        CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(2 + t), wh, (size_t)n, 1e-5));
      }
    }
    runner_free(&rr);
    ob_model_free(m);
  }
}

static void test_momentum(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "V1", "V2"};
  const float alpha = 0.9f, beta = 0.25f, norm = 0.02f;
  for (int nesterov = 0; nesterov < 2; nesterov++)
    for (int64_t step = 0; step < 2; step++) {
      ob_model *m = model(0, 1);
      Onnx__NodeProto *n = ob_node_in(m, TRAINING, "Momentum", "R,T,X1,X2,G1,G2,V1,V2", "X1n,X2n,V1n,V2n");
      ob_attr_float(m, n, "alpha", alpha);
      ob_attr_float(m, n, "beta", beta);
      ob_attr_float(m, n, "norm_coefficient", norm);
      ob_attr_string(m, n, "mode", nesterov ? "nesterov" : "standard");
      opt_inputs(m, names, 8);
      ob_outputs_untyped(m, "X1n,X2n,V1n,V2n");
      float r = 0.05f;
      rlx_named_tensor ins[8] = {tin("R", &r, RLX_F32, 0, NULL),     tin("T", &step, RLX_I64, 0, NULL),
                                 tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                                 tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                                 tin("V1", S1, RLX_F32, 1, DIMS(2)), tin("V2", S2, RLX_F32, 1, DIMS(3))};
      runner rr;
      if (run_ob(m, NULL, ins, 8, &rr)) {
        double ba = step > 0 ? beta : 1.0;
        for (int t = 0; t < 2; t++) {
          const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *v = t ? S2 : S1;
          int n = t ? 3 : 2;
          double wx[3], wv[3];
          for (int i = 0; i < n; i++) {
            double gr_ = norm * x[i] + gg[i];
            wv[i] = alpha * v[i] + ba * gr_;
            wx[i] = x[i] - 0.05 * (nesterov ? gr_ + alpha * wv[i] : wv[i]);
          }
          CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
          CHECK(close_to(&rr, (uint32_t)(2 + t), wv, (size_t)n, 1e-5));
        }
      }
      runner_free(&rr);
      ob_model_free(m);
    }
}

static void test_adam(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "V1", "V2", "H1", "H2"};
  const float alpha = 0.8f, beta = 0.95f, eps = 1e-2f, norm = 0.01f, post = 0.1f;
  for (int64_t step = 0; step < 4; step += 3) {
    ob_model *m = model(0, 1);
    Onnx__NodeProto *n = ob_node_in(m, TRAINING, "Adam", "R,T,X1,X2,G1,G2,V1,V2,H1,H2", "X1n,X2n,V1n,V2n,H1n,H2n");
    ob_attr_float(m, n, "alpha", alpha);
    ob_attr_float(m, n, "beta", beta);
    ob_attr_float(m, n, "epsilon", eps);
    ob_attr_float(m, n, "norm_coefficient", norm);
    ob_attr_float(m, n, "norm_coefficient_post", post);
    opt_inputs(m, names, 10);
    ob_outputs_untyped(m, "X1n,X2n,V1n,V2n,H1n,H2n");
    float r = 0.1f;
    rlx_named_tensor ins[10] = {tin("R", &r, RLX_F32, 0, NULL),     tin("T", &step, RLX_I64, 0, NULL),
                                tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                                tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                                tin("V1", S1, RLX_F32, 1, DIMS(2)), tin("V2", S2, RLX_F32, 1, DIMS(3)),
                                tin("H1", Q1, RLX_F32, 1, DIMS(2)), tin("H2", Q2, RLX_F32, 1, DIMS(3))};
    runner rr;
    if (run_ob(m, NULL, ins, 10, &rr)) {
      double lr = 0.1;
      if (step > 0) lr = 0.1 * sqrt(1 - pow(beta, (double)step)) / (1 - pow(alpha, (double)step));
      for (int t = 0; t < 2; t++) {
        const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *v = t ? S2 : S1, *h = t ? Q2 : Q1;
        int n = t ? 3 : 2;
        double wx[3], wv[3], wh[3];
        for (int i = 0; i < n; i++) {
          double gr_ = norm * x[i] + gg[i];
          wv[i] = alpha * v[i] + (1 - alpha) * gr_;
          wh[i] = beta * h[i] + (1 - beta) * gr_ * gr_;
          wx[i] = (1 - post) * (x[i] - lr * wv[i] / (sqrt(wh[i]) + eps));
        }
        CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(2 + t), wv, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(4 + t), wh, (size_t)n, 1e-5));
      }
    }
    runner_free(&rr);
    ob_model_free(m);
  }
}

/* A model of one training-domain optimizer node over graph inputs `names` (R, T, then [2] floats)
 * with the output X1n; training opset `training`. */
static ob_model *optimizer(const char *domain, const char *op, const char *const *names, int n, const char *ins,
                           const char *outs, int64_t training, Onnx__NodeProto **node) {
  ob_model *m = model(0, training);
  *node = ob_node_in(m, domain, op, ins, outs);
  opt_inputs(m, names, n);
  ob_outputs_untyped(m, "X1n");
  return m;
}

static void test_training_errors(void) {
  const char *names[] = {"R", "T", "X1", "G1", "V1"};
  Onnx__NodeProto *n;
  bool none = true;
  /* Momentum's mode must be "standard" or "nesterov" */
  ob_model *m = optimizer(TRAINING, "Momentum", names, 5, "R,T,X1,G1,V1", "X1n,V1n", 1, &n);
  ob_attr_float(m, n, "alpha", 0.9f);
  ob_attr_float(m, n, "beta", 1.0f);
  ob_attr_float(m, n, "norm_coefficient", 0.0f);
  ob_attr_string(m, n, "mode", "heavy_ball");
  none &= expect_error(m, RLX_ERR_FORMAT, "mode is \"heavy_ball\"; expected \"standard\" or \"nesterov\"");
  /* its attributes are required */
  m = optimizer(TRAINING, "Momentum", names, 5, "R,T,X1,G1,V1", "X1n,V1n", 1, &n);
  none &= expect_error(m, RLX_ERR_FORMAT, "attribute alpha is required");
  /* inputs must come in whole groups */
  const char *names4[] = {"R", "T", "X1", "G1"};
  m = optimizer(TRAINING, "Adagrad", names4, 4, "R,T,X1,G1", "X1n", 1, &n);
  none &= expect_error(m, RLX_ERR_FORMAT, "takes R, T and 3 groups");
  /* other ops of the training domain, and other domains, are gaps naming the domain */
  m = optimizer(TRAINING, "Sgd", names4, 4, "R,T,X1,G1", "X1n", 1, &n);
  none &=
      expect_error(m, RLX_ERR_UNSUPPORTED, "Sgd: no RLX mapping for this op of domain \"ai.onnx.preview.training\"");
  m = optimizer("com.example", "Adam", names4, 4, "R,T,X1,G1", "X1n", 1, &n);
  none &= expect_error(m, RLX_ERR_UNSUPPORTED, "domain \"com.example\" is not supported");
  /* a training opset this importer does not know */
  m = optimizer(TRAINING, "Adagrad", names, 5, "R,T,X1,G1,V1", "X1n", 2, &n);
  none &= expect_error(m, RLX_ERR_UNSUPPORTED, "opset 2 of domain ai.onnx.preview.training is not supported");
  CHECK(none);
}

/* ======================================================================================
 * Gradient
 * ====================================================================================== */

static void test_gradient(void) {
  /* y = (a + b) * a, listed after the Gradient node that names it (the importer must order the
   * Gradient after y's producer); the gradient is taken at the Gradient's inputs (p, q), which
   * differ from the forward values (a, b) */
  ob_model *m = model(13, 1);
  Onnx__NodeProto *n = ob_node_in(m, TRAINING, "Gradient", "p,q", "dy_da,dy_db");
  ob_attr_strings(m, n, "xs", (const char *[]){"a", "b"}, 2);
  ob_attr_string(m, n, "y", "y");
  ob_node(m, "Add", "a,b", "c");
  ob_node(m, "Mul", "c,a", "y");
  f32_inputs(m, "a,b,p,q", 1, DIMS(3));
  ob_outputs_untyped(m, "y,dy_da,dy_db");
  const float a[3] = {1, 2, -3}, b[3] = {0.5f, -1, 4}, p[3] = {2, 0, 1}, q[3] = {-1, 3, 0.25f};
  rlx_named_tensor ins[4] = {tin("a", a, RLX_F32, 1, DIMS(3)), tin("b", b, RLX_F32, 1, DIMS(3)),
                             tin("p", p, RLX_F32, 1, DIMS(3)), tin("q", q, RLX_F32, 1, DIMS(3))};
  runner rr;
  if (run_ob(m, NULL, ins, 4, &rr)) {
    double wy[3], wda[3], wdb[3];
    for (int i = 0; i < 3; i++) {
      wy[i] = ((double)a[i] + b[i]) * a[i];
      wda[i] = 2.0 * p[i] + q[i]; /* d/da (a + b) a = 2a + b */
      wdb[i] = p[i];
    }
    CHECK(close_to(&rr, 0, wy, 3, 1e-6));
    CHECK(close_to(&rr, 1, wda, 3, 1e-6));
    CHECK(close_to(&rr, 2, wdb, 3, 1e-6));
  }
  runner_free(&rr);
  ob_model_free(m);

  /* zs: y = sum(w * x) with x held fixed through zs; d y / d w = x (at the given x) */
  m = model(13, 1);
  ob_node(m, "Mul", "w,x", "wx");
  ob_attr_int(m, ob_node(m, "ReduceSum", "wx", "y"), "keepdims", 0);
  n = ob_node_in(m, TRAINING, "Gradient", "w,x", "dy_dw");
  ob_attr_strings(m, n, "xs", (const char *[]){"w"}, 1);
  ob_attr_strings(m, n, "zs", (const char *[]){"x"}, 1);
  ob_attr_string(m, n, "y", "y");
  f32_inputs(m, "w,x", 1, DIMS(3));
  ob_outputs_untyped(m, "dy_dw");
  rlx_named_tensor ins2[2] = {tin("w", a, RLX_F32, 1, DIMS(3)), tin("x", b, RLX_F32, 1, DIMS(3))};
  if (run_ob(m, NULL, ins2, 2, &rr)) {
    double want[3] = {b[0], b[1], b[2]};
    CHECK(close_to(&rr, 0, want, 3, 1e-6));
  }
  runner_free(&rr);
  ob_model_free(m);

  /* errors: an unknown name, an input count that does not match xs + zs */
  bool none = true;
  for (int k = 0; k < 2; k++) {
    m = model(13, 1);
    ob_node(m, "Add", "a,b", "c");
    n = ob_node_in(m, TRAINING, "Gradient", k ? "a,b" : "a", "d");
    ob_attr_strings(m, n, "xs", (const char *[]){"a"}, 1);
    ob_attr_string(m, n, "y", k ? "c" : "nope");
    f32_inputs(m, "a,b", 1, DIMS(3));
    ob_outputs_untyped(m, "d");
    none &= expect_error(m, RLX_ERR_FORMAT,
                         k ? "has 2 inputs; it needs one per name of xs and zs (1)"
                           : "\"nope\", which no node, graph input or initializer defines");
  }
  CHECK(none);
}

/* ======================================================================================
 * MaxPool Indices, MaxUnpool
 * ====================================================================================== */

/* Reference max pooling with indices over x [N, C, H, W] (1-D: H = 1), first maximum in window
 * order, pads never chosen; index (n * C + c) * H * W + (row major h * W + w | column major
 * h + w * H). */
static void ref_maxpool(const float *x, int N, int C, int H, int W, const int *k, const int *st, const int *dl,
                        const int *pb, int OH, int OW, int order, double *y, int64_t *idx) {
  for (int nc = 0; nc < N * C; nc++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int a = 0; a < k[0]; a++)
          for (int b = 0; b < k[1]; b++) {
            int h = oh * st[0] - pb[0] + a * dl[0], w = ow * st[1] - pb[1] + b * dl[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            double v = x[(nc * H + h) * W + w];
            if (v > best) {
              best = v;
              bi = (int64_t)nc * H * W + (order ? h + (int64_t)w * H : (int64_t)h * W + w);
            }
          }
        y[(nc * OH + oh) * OW + ow] = best;
        idx[(nc * OH + oh) * OW + ow] = bi;
      }
}

static void test_maxpool_indices(void) {
  unsigned seed = 7;
  float x[2 * 2 * 5 * 6];
  for (int i = 0; i < 2 * 2 * 5 * 6; i++) x[i] = frand(&seed);
  x[2] = x[3] = 5.0f; /* a tie inside one window (row 0, columns 2 and 3): the first cell wins */
  /* 2-D, kernel 3x2, strides 2x2, asymmetric pads, both storage orders; output [2, 2, 3, 3] */
  for (int order = 0; order < 2; order++) {
    ob_model *m = model(12, 0);
    Onnx__NodeProto *n = ob_node(m, "MaxPool", "x", "y,i");
    ob_attr_ints(m, n, "kernel_shape", DIMS(3, 2), 2);
    ob_attr_ints(m, n, "strides", DIMS(2, 2), 2);
    ob_attr_ints(m, n, "pads", DIMS(1, 0, 1, 1), 4);
    ob_attr_int(m, n, "storage_order", order);
    ob_input(m, "x", OB_FLOAT, 4, DIMS(2, 2, 5, 6));
    ob_outputs_untyped(m, "y,i");
    runner rr;
    rlx_named_tensor in = tin("x", x, RLX_F32, 4, DIMS(2, 2, 5, 6));
    if (run_ob(m, NULL, &in, 1, &rr)) {
      double wy[36];
      int64_t wi[36];
      ref_maxpool(x, 2, 2, 5, 6, (int[]){3, 2}, (int[]){2, 2}, (int[]){1, 1}, (int[]){1, 0}, 3, 3, order, wy, wi);
      CHECK(close_to(&rr, 0, wy, 36, 0));
      CHECK(equal_i64(&rr, 1, wi, 36));
    }
    runner_free(&rr);
    ob_model_free(m);
  }
  /* 1-D with dilation (the strided-slice path) and ceil_mode: x [1, 2, 8], kernel 3, dilation 2,
   * stride 2 -> output length 3 with ceil_mode */
  ob_model *m = model(12, 0);
  Onnx__NodeProto *n = ob_node(m, "MaxPool", "x", "y,i");
  ob_attr_ints(m, n, "kernel_shape", DIMS(3), 1);
  ob_attr_ints(m, n, "strides", DIMS(2), 1);
  ob_attr_ints(m, n, "dilations", DIMS(2), 1);
  ob_attr_int(m, n, "ceil_mode", 1);
  ob_input(m, "x", OB_FLOAT, 3, DIMS(1, 2, 8));
  ob_outputs_untyped(m, "y,i");
  runner rr;
  rlx_named_tensor in = tin("x", x, RLX_F32, 3, DIMS(1, 2, 8));
  if (run_ob(m, NULL, &in, 1, &rr)) {
    double wy[6];
    int64_t wi[6];
    ref_maxpool(x, 1, 2, 1, 8, (int[]){1, 3}, (int[]){1, 2}, (int[]){1, 2}, (int[]){0, 0}, 1, 3, 0, wy, wi);
    CHECK(close_to(&rr, 0, wy, 6, 0));
    CHECK(equal_i64(&rr, 1, wi, 6));
  }
  runner_free(&rr);
  ob_model_free(m);
  /* storage_order must be 0 or 1 */
  m = model(12, 0);
  n = ob_node(m, "MaxPool", "x", "y,i");
  ob_attr_ints(m, n, "kernel_shape", DIMS(2, 2), 2);
  ob_attr_int(m, n, "storage_order", 2);
  ob_input(m, "x", OB_FLOAT, 4, DIMS(1, 1, 4, 4));
  ob_outputs_untyped(m, "y,i");
  CHECK(expect_error(m, RLX_ERR_FORMAT, "attribute storage_order is 2"));
}

/* MaxUnpool (opset 11), kernel 2x2, stride 2, over x and i [1, 2, 2, 2]. */
static ob_model *unpool_model(const char *ins) {
  ob_model *m = model(11, 0);
  Onnx__NodeProto *n = ob_node(m, "MaxUnpool", ins, "y");
  ob_attr_ints(m, n, "kernel_shape", DIMS(2, 2), 2);
  ob_attr_ints(m, n, "strides", DIMS(2, 2), 2);
  ob_input(m, "x", OB_FLOAT, 4, DIMS(1, 2, 2, 2));
  ob_input(m, "i", OB_INT64, 4, DIMS(1, 2, 2, 2));
  ob_outputs_untyped(m, "y");
  return m;
}

static void test_maxunpool(void) {
  /* X [1, 2, 2, 2] with indices into the 4x4 planes (flat over N, C too), kernel 2, stride 2 */
  const float x[8] = {5, 6, 7, 8, -1, -2, -3, -4};
  const int64_t ix[8] = {5, 3, 8, 14, 16 + 0, 16 + 7, 16 + 9, 16 + 15};
  for (int shaped = 0; shaped < 2; shaped++) {
    ob_model *m = unpool_model(shaped ? "x,i,shape" : "x,i");
    if (shaped) ob_initializer_i64(m, "shape", 1, DIMS(4), DIMS(1, 2, 5, 6));
    runner rr;
    rlx_named_tensor ins[2] = {tin("x", x, RLX_F32, 4, DIMS(1, 2, 2, 2)), tin("i", ix, RLX_I64, 4, DIMS(1, 2, 2, 2))};
    if (run_ob(m, NULL, ins, 2, &rr)) {
      /* scattered into [1, 2, 4, 4]; a larger output_shape extends each axis with zeros at the end */
      int H = shaped ? 5 : 4, W = shaped ? 6 : 4;
      double want[2 * 5 * 6] = {0};
      for (int e = 0; e < 8; e++) {
        int64_t c = ix[e] / 16, h = ix[e] % 16 / 4, w = ix[e] % 4;
        want[(c * H + h) * W + w] = x[e];
      }
      CHECK(close_to(&rr, 0, want, (size_t)(2 * H * W), 0));
      CHECK(rr.n_outs == 1 && rr.outs[0].shape.rank == 4 && rr.outs[0].shape.dims[2] == H &&
            rr.outs[0].shape.dims[3] == W);
    }
    runner_free(&rr);
    ob_model_free(m);
  }
  /* an output_shape smaller than the unpooled shape is an error */
  ob_model *m = unpool_model("x,i,shape");
  ob_initializer_i64(m, "shape", 1, DIMS(4), DIMS(1, 2, 3, 4));
  CHECK(expect_error(m, RLX_ERR_FORMAT, "output_shape[2] is 3; it must be at least 4"));
}

/* ======================================================================================
 * Einsum diagonals
 * ====================================================================================== */

static void test_einsum_diagonal(void) {
  unsigned seed = 3;
  float x[2 * 3 * 3], m[3 * 3 * 2];
  for (int i = 0; i < 18; i++) x[i] = frand(&seed), m[i] = frand(&seed);
  /* batch diagonal, implicit batch trace, and a repeated letter met again in another operand:
   * "iij,ki->kj" sums m[i, i, j] * w[k, i] */
  ob_model *mo = model(12, 0);
  ob_attr_string(mo, ob_node(mo, "Einsum", "x", "d"), "equation", "bii->bi");
  ob_attr_string(mo, ob_node(mo, "Einsum", "x", "t"), "equation", "bii");
  ob_attr_string(mo, ob_node(mo, "Einsum", "m,x", "z"), "equation", "iij,kli->kj");
  ob_input(mo, "x", OB_FLOAT, 3, DIMS(2, 3, 3));
  ob_input(mo, "m", OB_FLOAT, 3, DIMS(3, 3, 2));
  ob_outputs_untyped(mo, "d,t,z");
  runner rr;
  rlx_named_tensor ins[2] = {tin("x", x, RLX_F32, 3, DIMS(2, 3, 3)), tin("m", m, RLX_F32, 3, DIMS(3, 3, 2))};
  if (run_ob(mo, NULL, ins, 2, &rr)) {
    double wd[6], wt[2] = {0, 0}, wz[4] = {0, 0, 0, 0};
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 3; i++) {
        wd[b * 3 + i] = x[(b * 3 + i) * 3 + i];
        wt[b] += x[(b * 3 + i) * 3 + i];
      }
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++)
          for (int l = 0; l < 3; l++) wz[k * 2 + j] += (double)m[(i * 3 + i) * 2 + j] * x[(k * 3 + l) * 3 + i];
    CHECK(close_to(&rr, 0, wd, 6, 1e-6));
    CHECK(close_to(&rr, 1, wt, 2, 1e-6));
    CHECK(close_to(&rr, 2, wz, 4, 1e-5));
  }
  runner_free(&rr);
  ob_model_free(mo);
  /* errors: a repeated letter over axes of different sizes, a repeated output letter */
  bool none = true;
  for (int k = 0; k < 2; k++) {
    mo = model(12, 0);
    ob_attr_string(mo, ob_node(mo, "Einsum", "m", "d"), "equation", k ? "ijk->ii" : "iji->j");
    ob_input(mo, "m", OB_FLOAT, 3, DIMS(3, 3, 2));
    ob_outputs_untyped(mo, "d");
    none &= expect_error(mo, RLX_ERR_FORMAT,
                         k ? "output letter 'i' appears twice" : "letter 'i' labels axes of sizes 3 and 2");
  }
  CHECK(none);
}

/* ======================================================================================
 * Scan opset 8
 * ====================================================================================== */

/* An opset-8 Scan node reading `ins` (sequence_lens, initial state, scan input) into final,outs,
 * with the body (sum_in [2], next [2]) -> (sum_in + next, (sum_in + next) * 2), num_scan_inputs
 * 1 and, when `reverse`, directions [1]. */
static void scan_node(ob_model *m, const char *ins, bool reverse) {
  ob_begin_graph(m, "body");
  ob_node(m, "Add", "sum_in,next", "sum_out");
  ob_node(m, "Add", "sum_out,sum_out", "scan_out");
  ob_input(m, "sum_in", OB_FLOAT, 1, DIMS(2));
  ob_input(m, "next", OB_FLOAT, 1, DIMS(2));
  ob_outputs_untyped(m, "sum_out,scan_out");
  Onnx__GraphProto *body = ob_end_graph(m);
  Onnx__NodeProto *n = ob_node(m, "Scan", ins, "final,outs");
  ob_attr_graph(m, n, "body", body);
  ob_attr_int(m, n, "num_scan_inputs", 1);
  if (reverse) ob_attr_ints(m, n, "directions", DIMS(1), 1);
}

static void test_scan8(void) {
  const float init[4] = {1, 2, -1, 0.5f};
  float xs[2 * 3 * 2];
  unsigned seed = 11;
  for (int i = 0; i < 12; i++) xs[i] = frand(&seed);
  /* 0: forward, sequence_lens {3, 2}; 1: reverse over whole sequences; 2: reverse, lengths {3, 2}
   * (only the first len elements are read, from len - 1 down to 0) */
  for (int variant = 0; variant < 3; variant++) {
    bool rev = variant > 0, lens = variant != 1;
    ob_model *m = model(8, 0);
    scan_node(m, lens ? "lens,init,x" : ",init,x", rev);
    ob_input(m, "init", OB_FLOAT, 2, DIMS(2, 2));
    ob_input(m, "x", OB_FLOAT, 3, DIMS(2, 3, 2));
    ob_outputs_untyped(m, "final,outs");
    if (lens) ob_initializer_i64(m, "lens", 1, DIMS(2), DIMS(3, 2));
    runner rr;
    rlx_named_tensor ins[2] = {tin("init", init, RLX_F32, 2, DIMS(2, 2)), tin("x", xs, RLX_F32, 3, DIMS(2, 3, 2))};
    if (run_ob(m, NULL, ins, 2, &rr)) {
      double wf[4], wo[12] = {0};
      for (int b = 0; b < 2; b++) {
        int len = lens && b == 1 ? 2 : 3;
        for (int e = 0; e < 2; e++) {
          double acc = init[b * 2 + e];
          for (int t = 0; t < len; t++) {
            int src = rev ? len - 1 - t : t;
            acc += xs[(b * 3 + src) * 2 + e];
            wo[(b * 3 + t) * 2 + e] = 2 * acc; /* steps past len stay 0 */
          }
          wf[b * 2 + e] = acc;
        }
      }
      CHECK(close_to(&rr, 0, wf, 4, 1e-6));
      CHECK(close_to(&rr, 1, wo, 12, 1e-6));
    }
    runner_free(&rr);
    ob_model_free(m);
  }
  /* errors: a scan input without a sequence axis; a sequence length past the sequence */
  bool none = true;
  ob_model *m = model(8, 0);
  scan_node(m, ",init,x", false);
  ob_input(m, "init", OB_FLOAT, 2, DIMS(2, 2));
  ob_input(m, "x", OB_FLOAT, 1, DIMS(2));
  ob_outputs_untyped(m, "final");
  none &= expect_error(m, RLX_ERR_FORMAT, "Scan-8 scan inputs need a leading batch axis and a sequence axis");
  m = model(8, 0);
  scan_node(m, "lens,init,x", false);
  ob_input(m, "init", OB_FLOAT, 2, DIMS(2, 2));
  ob_input(m, "x", OB_FLOAT, 3, DIMS(2, 3, 2));
  ob_outputs_untyped(m, "final");
  ob_initializer_i64(m, "lens", 1, DIMS(2), DIMS(3, 4));
  none &= expect_error(m, RLX_ERR_FORMAT, "sequence_lens[1] is 4; expected 1..3");
  CHECK(none);
}

int main(void) {
  test_adagrad();
  test_momentum();
  test_adam();
  test_training_errors();
  test_gradient();
  test_maxpool_indices();
  test_maxunpool();
  test_einsum_diagonal();
  test_scan8();
  return rlx_test_finish("onnx_gapsa");
}
