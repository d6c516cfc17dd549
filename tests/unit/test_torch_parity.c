/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C side of the PyTorch autograd parity check (tests/autodiff/torch_parity.py, run by
 * tests/cli/test_torch_parity.sh): three models in f64 -- an MLP, the CNN
 * conv3x3(16)-relu-maxpool2 -> conv3x3(32)-relu-maxpool2 -> fc128-relu -> fc10 with softmax
 * cross-entropy over integer labels, and a pre-norm transformer block (LayerNorm, causal
 * attention, Gelu MLP, residuals) -- are built, differentiated with rlx_grad_with_loss (with the
 * backward ops and with their primitive decompositions) and run on the CPU.
 * As a unit test it checks that both modes agree and spot-checks gradients with central
 * differences. With RLX_TORCH_DUMP_DIR set it also writes, per model, every input and param, the
 * loss and every gradient as .npy files into <dir>/<model>/ for the Python side. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "ad_check.h"
#include "rlx/npy.h"

#define TRY(x)                   \
  do {                           \
    rlx_status s_ = (x);         \
    if (s_ != RLX_OK) return s_; \
  } while (0)

static rlx_shape f64s(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F64, rank, d); }

/* A model: its graph, its leaf values, and which leaves are differentiated (the params). */
typedef struct model {
  const char *name;
  rlx_graph *g;
  adt_value leaf[24];
  uint32_t n_leaf;
  const char *wrt[24];
  uint32_t n_wrt;
} model;

static rlx_status leaf(model *m, bool param, const char *name, uint32_t rank, const rlx_dim *d, double lo, double hi,
                       rlx_id *out) {
  rlx_shape s = f64s(rank, d);
  TRY(param ? rlx_param(m->g, name, s, out) : rlx_input(m->g, name, s, out));
  adt_value *v = &m->leaf[m->n_leaf++];
  v->name = name;
  v->shape = s;
  size_t n = adt_numel(&s);
  v->v = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) v->v[i] = adt_uniform(lo, hi);
  if (param) m->wrt[m->n_wrt++] = name;
  return RLX_OK;
}

/* Kaiming-ish uniform init bound for a layer with `fan_in` inputs. */
static double bound(double fan_in) { return 1.0 / sqrt(fan_in); }

static rlx_status dense(model *m, rlx_id x, const char *wn, const char *bn, rlx_dim in, rlx_dim out, rlx_id *y) {
  rlx_id w, b, t;
  TRY(leaf(m, true, wn, 2, (rlx_dim[]){in, out}, -bound(in), bound(in), &w));
  TRY(leaf(m, true, bn, 1, (rlx_dim[]){out}, -bound(in), bound(in), &b));
  TRY(rlx_matmul(m->g, x, w, &t));
  return rlx_binary(m->g, RLX_BINOP_ADD, t, b, y);
}

/* Integer class labels, f32-encoded (RLX's index convention). */
static rlx_status labels(model *m, rlx_dim n, int classes, rlx_id *out) {
  rlx_shape s = rlx_shape_make(RLX_F32, 1, &n);
  TRY(rlx_input(m->g, "labels", s, out));
  adt_value *v = &m->leaf[m->n_leaf++];
  v->name = "labels";
  v->shape = s;
  v->v = malloc((size_t)n * sizeof(double));
  for (rlx_dim i = 0; i < n; i++) v->v[i] = (double)((i * 7 + 3) % classes);
  return RLX_OK;
}

/* mean over the batch of softmax cross-entropy with integer labels (f64-encoded) */
static rlx_status ce_loss(model *m, rlx_id logits, rlx_id lab, rlx_id *loss) {
  rlx_id l;
  TRY(rlx_build_SoftmaxCrossEntropyWithLogits(m->g, (rlx_id[]){logits, lab}, 2, NULL, &l));
  return rlx_reduce_axes(m->g, RLX_REDUCE_MEAN, l, 1, (int64_t[]){0}, false, loss);
}

/* ---- MLP: x [8, 10] -> dense 16, gelu -> dense 12, tanh -> dense 5 -> CE ---- */
static rlx_status build_mlp(model *m) {
  rlx_id x, h, lab, loss;
  TRY(leaf(m, false, "x", 2, (rlx_dim[]){8, 10}, -1, 1, &x));
  TRY(labels(m, 8, 5, &lab));
  TRY(dense(m, x, "w1", "b1", 10, 16, &h));
  TRY(rlx_activation(m->g, RLX_ACT_GELU, h, &h));
  TRY(dense(m, h, "w2", "b2", 16, 12, &h));
  TRY(rlx_activation(m->g, RLX_ACT_TANH, h, &h));
  TRY(dense(m, h, "w3", "b3", 12, 5, &h));
  TRY(ce_loss(m, h, lab, &loss));
  return rlx_graph_set_outputs(m->g, &loss, 1);
}

/* ---- CNN on [4, 1, 16, 16] ---- */
static rlx_status conv_relu_pool(model *m, rlx_id x, const char *wn, const char *bn, rlx_dim cin, rlx_dim cout,
                                 rlx_id *y) {
  rlx_id w, b, c, bb;
  double fan = (double)cin * 9;
  TRY(leaf(m, true, wn, 4, (rlx_dim[]){cout, cin, 3, 3}, -bound(fan), bound(fan), &w));
  TRY(leaf(m, true, bn, 1, (rlx_dim[]){cout}, -bound(fan), bound(fan), &b));
  int64_t k[2] = {3, 3}, one[2] = {1, 1}, two[2] = {2, 2};
  rlx_attrs_Conv ca = {.kernel_size = {.v = k, .n = 2},
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = one, .n = 2},
                       .dilation = {.v = one, .n = 2},
                       .groups = 1};
  TRY(rlx_build_Conv(m->g, (rlx_id[]){x, w}, 2, &ca, NULL, &c));
  TRY(rlx_reshape(m->g, b, 4, (int64_t[]){1, cout, 1, 1}, &bb));
  TRY(rlx_binary(m->g, RLX_BINOP_ADD, c, bb, &c));
  TRY(rlx_activation(m->g, RLX_ACT_RELU, c, &c));
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = two, .n = 2},
                       .stride = {.v = two, .n = 2},
                       .padding = {.v = NULL, .n = 0}};
  return rlx_build_Pool(m->g, &c, 1, &pa, NULL, y);
}

static rlx_status build_cnn(model *m) {
  rlx_id x, h, lab, loss;
  TRY(leaf(m, false, "x", 4, (rlx_dim[]){4, 1, 16, 16}, -1, 1, &x));
  TRY(labels(m, 4, 10, &lab));
  TRY(conv_relu_pool(m, x, "conv1_w", "conv1_b", 1, 16, &h));
  TRY(conv_relu_pool(m, h, "conv2_w", "conv2_b", 16, 32, &h));
  TRY(rlx_reshape(m->g, h, 2, (int64_t[]){4, 32 * 4 * 4}, &h));
  TRY(dense(m, h, "fc1_w", "fc1_b", 512, 128, &h));
  TRY(rlx_activation(m->g, RLX_ACT_RELU, h, &h));
  TRY(dense(m, h, "fc2_w", "fc2_b", 128, 10, &h));
  TRY(ce_loss(m, h, lab, &loss));
  return rlx_graph_set_outputs(m->g, &loss, 1);
}

/* ---- pre-norm transformer block: x [2, 5, 8], 2 heads of 4 ---- */
static rlx_status layer_norm(model *m, rlx_id x, const char *gn, const char *bn, rlx_id *y) {
  rlx_id g, b;
  TRY(leaf(m, true, gn, 1, (rlx_dim[]){8}, 0.5, 1.5, &g));
  TRY(leaf(m, true, bn, 1, (rlx_dim[]){8}, -0.2, 0.2, &b));
  rlx_attrs_LayerNorm a = {.axis = -1, .eps = 1e-5f};
  return rlx_build_LayerNorm(m->g, (rlx_id[]){x, g, b}, 3, &a, NULL, y);
}

static rlx_status build_transformer(model *m) {
  rlx_id x, h, q, k, v, att, r1, h2, r2, t, loss, wq, wk, wv;
  TRY(leaf(m, false, "x", 3, (rlx_dim[]){2, 5, 8}, -1, 1, &x));
  TRY(layer_norm(m, x, "ln1_g", "ln1_b", &h));
  TRY(leaf(m, true, "wq", 2, (rlx_dim[]){8, 8}, -bound(8), bound(8), &wq));
  TRY(leaf(m, true, "wk", 2, (rlx_dim[]){8, 8}, -bound(8), bound(8), &wk));
  TRY(leaf(m, true, "wv", 2, (rlx_dim[]){8, 8}, -bound(8), bound(8), &wv));
  TRY(rlx_matmul(m->g, h, wq, &q));
  TRY(rlx_matmul(m->g, h, wk, &k));
  TRY(rlx_matmul(m->g, h, wv, &v));
  rlx_attrs_Attention aa;
  rlx_attrs_init(RLX_OP_Attention, &aa);
  aa.num_heads = 2;
  aa.head_dim = 4;
  aa.mask_kind = RLX_MASK_CAUSAL;
  TRY(rlx_build_Attention(m->g, (rlx_id[]){q, k, v}, 3, &aa, NULL, &att));
  TRY(dense(m, att, "wo", "bo", 8, 8, &att));
  TRY(rlx_binary(m->g, RLX_BINOP_ADD, x, att, &r1));
  TRY(layer_norm(m, r1, "ln2_g", "ln2_b", &h2));
  TRY(dense(m, h2, "fc1_w", "fc1_b", 8, 16, &h2));
  TRY(rlx_activation(m->g, RLX_ACT_GELU, h2, &h2));
  TRY(dense(m, h2, "fc2_w", "fc2_b", 16, 8, &h2));
  TRY(rlx_binary(m->g, RLX_BINOP_ADD, r1, h2, &r2));
  /* loss = mean((r2 - target)^2) */
  TRY(leaf(m, false, "target", 3, (rlx_dim[]){2, 5, 8}, -1, 1, &t));
  TRY(rlx_binary(m->g, RLX_BINOP_SUB, r2, t, &r2));
  TRY(rlx_binary(m->g, RLX_BINOP_MUL, r2, r2, &r2));
  TRY(rlx_reduce_axes(m->g, RLX_REDUCE_MEAN, r2, 3, (int64_t[]){0, 1, 2}, false, &loss));
  return rlx_graph_set_outputs(m->g, &loss, 1);
}

/* ---- running and dumping ---- */

static rlx_status save(const char *dir, const char *prefix, const char *name, const rlx_shape *s, const double *v) {
  char path[2048];
  int len = snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix, name);
  if (len < 0 || (size_t)len >= sizeof path) return rlx_errorf(RLX_ERR_INVALID_ARG, "path too long: %s/...", dir);
  rlx_tensor t = {(void *)v, *s}; /* host values are doubles whatever the leaf's dtype */
  t.shape.dtype = RLX_F64;
  return rlx_npy_save(path, &t);
}

/* Runs grad_with_loss of m in one mode; fills loss and grads (one buffer per wrt). */
static bool run_grads(model *m, bool use_bw, double *loss, double **grads) {
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  o.use_backward_ops = use_bw;
  rlx_graph *gr = NULL;
  rlx_status s = rlx_grad_with_loss(m->g, m->wrt, m->n_wrt, &o, &gr);
  if (s) {
    fprintf(stderr, "%s: rlx_grad_with_loss: %s\n", m->name, rlx_last_error());
    return false;
  }
  adt_exe e;
  s = adt_compile(gr, "cpu", &e);
  if (s) fprintf(stderr, "%s: compile: %s\n", m->name, rlx_last_error());
  double one = 1.0;
  adt_value vals[25];
  memcpy(vals, m->leaf, m->n_leaf * sizeof *vals);
  vals[m->n_leaf] = (adt_value){"d_output", f64s(0, NULL), &one};
  double *outs[25];
  outs[0] = loss;
  for (uint32_t i = 0; i < m->n_wrt; i++) outs[1 + i] = grads[i];
  if (!s) s = adt_set_params(&e, vals, m->n_leaf);
  if (!s) s = adt_run(&e, vals, m->n_leaf + 1, outs, 1 + m->n_wrt);
  if (s) fprintf(stderr, "%s: run: %s\n", m->name, rlx_last_error());
  if (e.e) adt_free(&e);
  rlx_graph_free(gr);
  return s == RLX_OK;
}

static const adt_value *find_leaf(const model *m, const char *name) {
  for (uint32_t i = 0; i < m->n_leaf; i++)
    if (strcmp(m->leaf[i].name, name) == 0) return &m->leaf[i];
  return NULL;
}

static void check_model(model *m, const char *dump) {
  double loss[2], *g[2][24];
  for (int k = 0; k < 2; k++)
    for (uint32_t i = 0; i < m->n_wrt; i++)
      g[k][i] = calloc(adt_numel(&find_leaf(m, m->wrt[i])->shape), sizeof(double));
  bool ok = run_grads(m, true, &loss[0], g[0]) && run_grads(m, false, &loss[1], g[1]);
  CHECK_MSG(ok, "%s: gradient graphs run", m->name);
  if (ok) {
    CHECK_MSG(isfinite(loss[0]) && adt_close(loss[0], loss[1], 1e-13), "%s: loss %g vs %g", m->name, loss[0], loss[1]);
    double worst = 0;
    for (uint32_t i = 0; i < m->n_wrt; i++) {
      size_t n = adt_numel(&find_leaf(m, m->wrt[i])->shape);
      for (size_t k = 0; k < n; k++) worst = fmax(worst, fabs(g[0][i][k] - g[1][i][k]) / (1 + fabs(g[0][i][k])));
    }
    CHECK_MSG(worst < 1e-10, "%s: backward ops and primitives disagree by %g", m->name, worst);
    /* central-difference spot checks on a few elements of every param */
    adt_exe e;
    if (adt_compile(m->g, "cpu", &e) == RLX_OK) {
      adt_set_params(&e, m->leaf, m->n_leaf);
      double fd_worst = 0;
      for (uint32_t i = 0; i < m->n_wrt; i++) {
        adt_value *p = (adt_value *)find_leaf(m, m->wrt[i]);
        size_t n = adt_numel(&p->shape);
        for (size_t k = 0; k < n; k += n / 3 + 1) {
          double v0 = p->v[k], h = 1e-5, fp, fm;
          rlx_status st;
          p->v[k] = v0 + h;
          adt_set_params(&e, p, 1);
          fp = adt_run_scalar(&e, m->leaf, m->n_leaf, &st);
          p->v[k] = v0 - h;
          adt_set_params(&e, p, 1);
          fm = adt_run_scalar(&e, m->leaf, m->n_leaf, &st);
          p->v[k] = v0;
          adt_set_params(&e, p, 1);
          double fd = (fp - fm) / (2 * h);
          fd_worst = fmax(fd_worst, fabs(g[0][i][k] - fd) / (1 + fabs(fd)));
        }
      }
      CHECK_MSG(fd_worst < 1e-6, "%s: finite-difference spot checks off by %g", m->name, fd_worst);
      adt_free(&e);
    }
    if (dump) {
      char dir[1024];
      int len = snprintf(dir, sizeof dir, "%s/%s", dump, m->name);
      if (len < 0 || (size_t)len >= sizeof dir || (mkdir(dir, 0777) != 0 && errno != EEXIST)) {
        CHECK_MSG(false, "cannot create %s", dir);
      } else {
        bool w = true;
        for (uint32_t i = 0; i < m->n_leaf; i++)
          w &= save(dir, "", m->leaf[i].name, &m->leaf[i].shape, m->leaf[i].v) == RLX_OK;
        rlx_shape sc = f64s(0, NULL);
        w &= save(dir, "", "loss", &sc, &loss[0]) == RLX_OK;
        for (uint32_t i = 0; i < m->n_wrt; i++) {
          const adt_value *p = find_leaf(m, m->wrt[i]);
          w &= save(dir, "grad_", p->name, &p->shape, g[0][i]) == RLX_OK;
          w &= save(dir, "gradp_", p->name, &p->shape, g[1][i]) == RLX_OK;
        }
        CHECK_MSG(w, "%s: writing .npy files: %s", m->name, rlx_last_error());
      }
    }
  }
  for (int k = 0; k < 2; k++)
    for (uint32_t i = 0; i < m->n_wrt; i++) free(g[k][i]);
}

int main(void) {
  const char *dump = getenv("RLX_TORCH_DUMP_DIR");
  static const struct {
    const char *name;
    rlx_status (*build)(model *);
  } models[] = {{"mlp", build_mlp}, {"cnn", build_cnn}, {"transformer", build_transformer}};
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    model m;
    memset(&m, 0, sizeof m);
    m.name = models[k].name;
    CHECK_OK(rlx_graph_create(NULL, m.name, &m.g));
    rlx_status s = models[k].build(&m);
    CHECK_MSG(s == RLX_OK, "%s: building: %s", m.name, rlx_last_error());
    if (s == RLX_OK) check_model(&m, dump);
    for (uint32_t i = 0; i < m.n_leaf; i++) free(m.leaf[i].v);
    rlx_graph_free(m.g);
  }
  return rlx_test_finish("torch_parity (C side)");
}
