/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx train: trains a small CNN (or MLP) on Fashion-MNIST with the RLX pipeline end to end.
 *
 *   forward graph (builder API) -> rlx_grad_with_loss over every Param -> Adam appended as graph
 *   ops (rlx_optim_graph_build) -> rlx_compile(--backend) once -> params uploaded once, the
 *   updated params and Adam moments bound back to their Params (they never leave the backend)
 *   -> per step: upload the batch and Adam's step scalars, run, read the loss (4 bytes)
 *   -> params downloaded once -> test accuracy with a separately compiled forward graph
 *   -> weights.safetensors + loss_curve.svg
 *
 * Each epoch visits a fresh permutation of the training set (seeded) in batches of --batch; the
 * last partial batch is dropped (60,000 / 64: 937 steps, 32 images unused per epoch), like
 * DataLoader(drop_last=True). The throughput counts the whole training loop (batch gather, run,
 * optimizer, param upload) and nothing else (no loading, compiling or evaluation). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty, fileno, mkdir */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"
#include "rlx/cpu.h"
#include "rlx/datasets.h"
#include "rlx/optim.h"
#include "rlx/rlx.h"
#include "rlx/safetensors.h"
#include "train_internal.h"

const char cli_train_usage[] =
    "usage: rlx train [--model cnn|mlp] [--epochs N] [--batch N] [--lr X] [--threads N] [--seed S]\n"
    "                 [--backend NAME]\n"
    "                 [--data DIR] [--out DIR] [--json] [--limit-train N] [--limit-test N]\n"
    "                 [--deterministic | --no-deterministic]\n"
    "\n"
    "Trains a classifier on Fashion-MNIST (IDX files, gzip or plain) with the RLX pipeline: the\n"
    "forward graph is differentiated (rlx_grad_with_loss), Adam is appended to it as graph ops, and\n"
    "it is compiled once for the backend and run per batch: parameters and optimizer state stay on\n"
    "the backend. Then the test accuracy is measured on every test image. Progress goes to stderr:\n"
    "on a terminal a bar with the rate and the time left, redrawn in place; otherwise a line\n"
    "every 100 steps.\n"
    "\n"
    "models:\n"
    "  cnn   conv3x3(16)+relu+maxpool2, conv3x3(32)+relu+maxpool2, fc128+relu, fc10 (default)\n"
    "  mlp   fc256+relu, fc10\n"
    "\n"
    "options:\n"
    "  --model M          cnn or mlp (default cnn)\n"
    "  --epochs N         passes over the training set (default 1)\n"
    "  --batch N          images per step (default 64; the last partial batch is dropped)\n"
    "  --lr X             Adam learning rate (default 1e-3; betas 0.9, 0.999, eps 1e-8)\n"
    "  --threads N        CPU worker threads (default 0 = all cores; the cpu backend's option)\n"
    "  --backend NAME     the backend that trains (default cpu; see the registered ones in the\n"
    "                     error for an unknown name)\n"
    "  --seed S           seed of the initialization and the shuffling (default 0)\n"
    "  --deterministic    the same weights at every --threads: reductions split across threads use\n"
    "                     a split fixed by the shape (the default; docs/cpu-backend.md)\n"
    "  --no-deterministic splits follow the thread count (results then differ by thread count)\n"
    "  --data DIR         folder of {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]\n"
    "                     (default " RLX_FASHION_MNIST_DIR ")\n"
    "  --out DIR          where weights.safetensors and loss_curve.svg go (default ./rlx-train-out)\n"
    "  --json             end stdout with one JSON line: test_accuracy, train_images_per_second,\n"
    "                     epochs, train_images (images trained: steps x batch over all epochs),\n"
    "                     train_set_images, test_images, ... (the human-readable summary then\n"
    "                     goes to stderr)\n"
    "  --limit-train N    use only the first N training images\n"
    "  --limit-test N     evaluate only the first N test images\n"
    "\n"
    "The exit code is 1 when the data cannot be read (missing or malformed files) or training\n"
    "fails, 2 for bad options.\n";

#define EVAL_BATCH 1000

typedef struct train_opts {
  train_model_kind model;
  long epochs, batch, threads, limit_train, limit_test;
  double lr;
  unsigned long long seed;
  const char *data, *out, *backend;
  bool json;
  int deterministic; /* -1: the compile options' default */
} train_opts;

static bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

static int parse_args(const cli_command *self, int argc, char **argv, train_opts *o) {
  *o = (train_opts){.model = TRAIN_MODEL_CNN,
                    .epochs = 1,
                    .batch = 64,
                    .threads = 0,
                    .limit_train = -1,
                    .limit_test = -1,
                    .lr = 1e-3,
                    .seed = 0,
                    .data = NULL,
                    .out = "rlx-train-out",
                    .backend = "cpu",
                    .json = false};
  o->deterministic = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (cli_is_help(a)) return -1;
    if (strcmp(a, "--json") == 0) {
      o->json = true;
      continue;
    }
    if (strcmp(a, "--deterministic") == 0 || strcmp(a, "--no-deterministic") == 0) {
      o->deterministic = a[2] == 'd';
      continue;
    }
    if (strncmp(a, "--", 2) != 0) return cli_usage_error(self, "unexpected argument '%s'", a);
    if (!cli_option_value(self, argc, argv, &i, &v)) return CLI_USAGE;
    if (strcmp(a, "--model") == 0) {
      if (!train_model_kind_from_name(v, &o->model))
        return cli_usage_error(self, "--model: unknown model '%s' (expected cnn or mlp)", v);
    } else if (strcmp(a, "--epochs") == 0) {
      if (!parse_long(v, 1, 100000, &o->epochs))
        return cli_usage_error(self, "--epochs: expected 1..100000, got '%s'", v);
    } else if (strcmp(a, "--batch") == 0) {
      if (!parse_long(v, 1, 65536, &o->batch)) return cli_usage_error(self, "--batch: expected 1..65536, got '%s'", v);
    } else if (strcmp(a, "--threads") == 0) {
      if (!parse_long(v, 0, 4096, &o->threads))
        return cli_usage_error(self, "--threads: expected 0..4096, got '%s'", v);
    } else if (strcmp(a, "--limit-train") == 0) {
      if (!parse_long(v, 1, 1L << 30, &o->limit_train))
        return cli_usage_error(self, "--limit-train: expected a positive count, got '%s'", v);
    } else if (strcmp(a, "--limit-test") == 0) {
      if (!parse_long(v, 1, 1L << 30, &o->limit_test))
        return cli_usage_error(self, "--limit-test: expected a positive count, got '%s'", v);
    } else if (strcmp(a, "--lr") == 0) {
      char *end;
      errno = 0;
      o->lr = strtod(v, &end);
      if (errno || end == v || *end || !(o->lr > 0) || !isfinite(o->lr))
        return cli_usage_error(self, "--lr: expected a positive number, got '%s'", v);
    } else if (strcmp(a, "--seed") == 0) {
      char *end;
      errno = 0;
      o->seed = strtoull(v, &end, 0);
      if (errno || end == v || *end || v[0] == '-')
        return cli_usage_error(self, "--seed: expected a non-negative integer, got '%s'", v);
    } else if (strcmp(a, "--data") == 0) {
      o->data = v;
    } else if (strcmp(a, "--out") == 0) {
      o->out = v;
    } else if (strcmp(a, "--backend") == 0) {
      if (cli_check_backend(self, v) != CLI_OK) return CLI_USAGE;
      o->backend = v;
    } else {
      return cli_usage_error(self, "unknown option '%s'", a);
    }
  }
  return CLI_OK;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mkdir -p. */
static rlx_status make_dirs(const char *path) {
  char buf[4096];
  int k = snprintf(buf, sizeof buf, "%s", path);
  if (k <= 0 || (size_t)k >= sizeof buf) return rlx_errorf(RLX_ERR_INVALID_ARG, "--out: path too long");
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return rlx_errorf(RLX_ERR_IO, "%s: cannot create the folder: %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) return rlx_errorf(RLX_ERR_IO, "%s: not a folder", path);
  return RLX_OK;
}

/* Position of the executable's Input `name`, or -1. */
static int input_index(const rlx_executable *e, const char *name) {
  for (uint32_t i = 0; i < rlx_executable_input_count(e); i++)
    if (strcmp(rlx_executable_input_name(e, i), name) == 0) return (int)i;
  return -1;
}

static rlx_status set_params(rlx_executable *e, const train_model *m) {
  for (uint32_t i = 0; i < m->n_params; i++) {
    rlx_tensor t = {m->params[i].data, m->params[i].shape};
    RLX_TRY(rlx_executable_set_param(e, m->params[i].name, &t));
  }
  return RLX_OK;
}

/* Re-reads the written weights with the strict reader: same names, shapes and bytes. */
static rlx_status verify_weights(const char *path, const rlx_named_tensor *t, uint32_t n) {
  rlx_safetensors *f;
  RLX_TRY(rlx_safetensors_load(path, &f));
  rlx_status st = RLX_OK;
  if (f->n_tensors != n) st = rlx_errorf(RLX_ERR_INTERNAL, "%s: re-read %u tensors, wrote %u", path, f->n_tensors, n);
  for (uint32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_named_tensor *r = rlx_safetensors_find(f, t[i].name);
    size_t nb = 0;
    if (!r || !rlx_shape_equal(&r->tensor.shape, &t[i].tensor.shape) ||
        rlx_shape_nbytes(&t[i].tensor.shape, &nb) != RLX_OK || memcmp(r->tensor.data, t[i].tensor.data, nb) != 0)
      st = rlx_errorf(RLX_ERR_INTERNAL, "%s: tensor %s does not read back as written", path, t[i].name);
  }
  rlx_safetensors_free(f);
  return st;
}

/* ---- evaluation ---- */

/* Counts the correctly classified images of `d` (all of them: full batches of EVAL_BATCH and a
 * zero-padded last batch of which only the real rows count). */
static rlx_status evaluate(rlx_executable *e, const rlx_dataset *d, int64_t eb, size_t *correct) {
  size_t px = (size_t)d->rows * d->cols;
  float *x = calloc((size_t)eb * px, sizeof *x);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "out of memory for the evaluation batch");
  rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){eb, 1, d->rows, d->cols})}};
  *correct = 0;
  rlx_status st = RLX_OK;
  for (size_t start = 0; start < d->count && st == RLX_OK; start += (size_t)eb) {
    size_t n = d->count - start < (size_t)eb ? d->count - start : (size_t)eb;
    memcpy(x, d->images + start * px, n * px * sizeof *x);
    if (n < (size_t)eb) memset(x + n * px, 0, ((size_t)eb - n) * px * sizeof *x);
    const rlx_tensor *out;
    uint32_t n_out;
    st = rlx_executable_run(e, &in, 1, &out, &n_out);
    if (st != RLX_OK) break;
    const float *logits = out[0].data;
    for (size_t i = 0; i < n; i++) {
      const float *row = logits + i * d->n_classes;
      uint32_t best = 0;
      for (uint32_t c = 1; c < d->n_classes; c++)
        if (row[c] > row[best]) best = c;
      if ((int32_t)best == d->labels[start + i]) (*correct)++;
    }
  }
  free(x);
  return st;
}

/* ---- the command ---- */

typedef struct train_state {
  rlx_dataset train, test;
  train_model model;
  rlx_graph *fwd, *grad, *eval_g;
  rlx_executable *step_exe, *eval_exe;
  rlx_optim_graph *opt;
  float *xb, *loss;
  int32_t *yb;
  size_t *perm;
} train_state;

static void state_free(train_state *s) {
  rlx_dataset_free(&s->train);
  rlx_dataset_free(&s->test);
  train_model_free(&s->model);
  rlx_graph_free(s->fwd);
  rlx_graph_free(s->grad);
  rlx_graph_free(s->eval_g);
  rlx_executable_free(s->step_exe);
  rlx_executable_free(s->eval_exe);
  rlx_optim_graph_free(s->opt);
  free(s->xb);
  free(s->yb);
  free(s->loss);
  free(s->perm);
}

static int fail_rlx(const cli_command *self, train_state *s, const char *what) {
  const char *msg = rlx_last_error();
  int rc = what ? cli_fail(self, "%s: %s", what, msg[0] ? msg : "failed") : cli_fail(self, "%s", msg);
  state_free(s);
  return rc;
}

int cli_cmd_train(const cli_command *self, int argc, char **argv) {
  train_opts o;
  int rc = parse_args(self, argc, argv, &o);
  if (rc < 0) return cli_help(self);
  if (rc != CLI_OK) return rc;
  FILE *info = o.json ? stderr : stdout; /* where the human-readable summary goes */
  if (o.threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = n > 0 ? n : 1;
  }

  train_state s = {0};
  if (rlx_fashion_mnist_load(o.data, "train", &s.train) != RLX_OK ||
      rlx_fashion_mnist_load(o.data, "t10k", &s.test) != RLX_OK)
    return fail_rlx(self, &s, NULL);
  if (s.train.rows != s.test.rows || s.train.cols != s.test.cols) {
    rc = cli_fail(self, "training images are %ux%u but test images %ux%u", s.train.rows, s.train.cols, s.test.rows,
                  s.test.cols);
    state_free(&s);
    return rc;
  }
  if (o.limit_train > 0 && (size_t)o.limit_train < s.train.count) s.train.count = (size_t)o.limit_train;
  if (o.limit_test > 0 && (size_t)o.limit_test < s.test.count) s.test.count = (size_t)o.limit_test;
  size_t steps = s.train.count / (size_t)o.batch;
  if (steps == 0) {
    size_t have = s.train.count;
    state_free(&s);
    return cli_fail(self, "%zu training images are fewer than one batch of %ld", have, o.batch);
  }
  size_t total_steps = steps * (size_t)o.epochs;
  const size_t px = (size_t)s.train.rows * s.train.cols;

  /* Model, graphs, executables. */
  if (train_model_init(&s.model, o.model, s.train.rows, s.train.cols, s.train.n_classes, o.seed) != RLX_OK)
    return fail_rlx(self, &s, "model");
  const char *names[TRAIN_MAX_PARAMS];
  size_t n_weights = 0;
  for (uint32_t i = 0; i < s.model.n_params; i++) {
    names[i] = s.model.params[i].name;
    n_weights += s.model.params[i].numel;
  }
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = (int)o.threads;
  if (o.deterministic >= 0) cpu.deterministic = o.deterministic;
  if (strcmp(o.backend, "cpu") == 0) co.backend_options = &cpu;
  rlx_optim_config oc;
  rlx_optim_config_init(&oc, RLX_OPTIM_ADAM);
  oc.lr = o.lr;
  oc.beta1 = 0.9;
  oc.beta2 = 0.999;
  oc.eps = 1e-8;
  double tc = now_seconds();
  if (train_build_graph(&s.model, o.batch, true, &s.fwd) != RLX_OK) return fail_rlx(self, &s, NULL);
  if (rlx_grad_with_loss(s.fwd, names, s.model.n_params, NULL, &s.grad) != RLX_OK)
    return fail_rlx(self, &s, "differentiating the loss");
  if (rlx_graph_output_count(s.grad) != 1 + s.model.n_params) {
    rc = cli_fail(self, "the gradient graph has %u outputs, expected %u", rlx_graph_output_count(s.grad),
                  1 + s.model.n_params);
    state_free(&s);
    return rc;
  }
  {
    rlx_id pid[TRAIN_MAX_PARAMS], gid[TRAIN_MAX_PARAMS], outs[1 + 4 * TRAIN_MAX_PARAMS];
    for (uint32_t i = 0; i < s.model.n_params; i++) {
      pid[i] = rlx_graph_find_leaf(s.grad, RLX_OP_Param, names[i]);
      gid[i] = rlx_graph_outputs(s.grad)[1 + i];
    }
    if (rlx_optim_graph_build(&oc, s.grad, pid, gid, s.model.n_params, &s.opt) != RLX_OK)
      return fail_rlx(self, &s, "the optimizer update");
    uint32_t nu = rlx_optim_graph_output_count(s.opt);
    outs[0] = rlx_graph_outputs(s.grad)[0];
    for (uint32_t i = 0; i < nu && i < 4 * TRAIN_MAX_PARAMS; i++) outs[1 + i] = rlx_optim_graph_output(s.opt, i);
    if (rlx_graph_set_outputs(s.grad, outs, 1 + nu) != RLX_OK) return fail_rlx(self, &s, "the optimizer update");
  }
  if (rlx_compile(s.grad, o.backend, &co, &s.step_exe) != RLX_OK)
    return fail_rlx(self, &s, "compiling the training step");
  int64_t eb = s.test.count < EVAL_BATCH ? (int64_t)s.test.count : EVAL_BATCH;
  if (train_build_graph(&s.model, eb, false, &s.eval_g) != RLX_OK) return fail_rlx(self, &s, NULL);
  if (rlx_compile(s.eval_g, o.backend, &co, &s.eval_exe) != RLX_OK)
    return fail_rlx(self, &s, "compiling the evaluation");
  tc = now_seconds() - tc;
  if (set_params(s.step_exe, &s.model) != RLX_OK) return fail_rlx(self, &s, "setting the parameters");
  if (rlx_optim_graph_bind(s.opt, s.step_exe, 1) != RLX_OK) return fail_rlx(self, &s, "the optimizer state");

  /* The seed Input of the gradient graph: d loss / d loss = 1, in the loss's shape. */
  int seed_at = input_index(s.step_exe, "d_output");
  if (seed_at < 0) {
    state_free(&s);
    return cli_fail(self, "the gradient graph has no Input \"d_output\"");
  }
  float one = 1.0f;
  rlx_shape seed_shape = *rlx_executable_input_shape(s.step_exe, (uint32_t)seed_at);
  size_t seed_n = 0;
  if (rlx_shape_numel(&seed_shape, &seed_n) != RLX_OK || seed_n != 1 || seed_shape.dtype != RLX_F32) {
    state_free(&s);
    return cli_fail(self, "the loss is not one f32 value");
  }

  s.xb = malloc((size_t)o.batch * px * sizeof *s.xb);
  s.yb = malloc((size_t)o.batch * sizeof *s.yb);
  s.loss = malloc(total_steps * sizeof *s.loss);
  s.perm = malloc(s.train.count * sizeof *s.perm);
  if (!s.xb || !s.yb || !s.loss || !s.perm) {
    state_free(&s);
    return cli_fail(self, "out of memory");
  }
  for (size_t i = 0; i < s.train.count; i++) s.perm[i] = i;

  rlx_named_tensor inputs[3] = {
      {"x", {s.xb, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){o.batch, 1, s.train.rows, s.train.cols})}},
      {"y", {s.yb, rlx_shape_make(RLX_I32, 1, (rlx_dim[]){o.batch})}},
      {"d_output", {&one, seed_shape}},
  };
  if (rlx_executable_set_input(s.step_exe, "d_output", &inputs[2].tensor) != RLX_OK) /* stays resident */
    return fail_rlx(self, &s, "training step");
  fprintf(info,
          "model %s: %zu parameters; %zu training images, %zu steps of %ld per epoch, %ld epoch%s, %zu test images\n",
          train_model_kind_name(o.model), n_weights, s.train.count, steps, o.batch, o.epochs, o.epochs == 1 ? "" : "s",
          s.test.count);
  fprintf(info, "compiled the training step (%u nodes) and the evaluation in %.2f s\n",
          rlx_graph_node_count(rlx_executable_graph(s.step_exe)), tc);
  fflush(info);

  /* Training. */
  rlx_transfer_stats ts0, ts1;
  rlx_executable_transfer_stats(s.step_exe, &ts0);
  train_rng rng = {o.seed ^ 0x5eed5eed5eedull};
  cli_progress pr;
  cli_progress_start(&pr, stderr, -1, total_steps, (size_t)o.batch, "img", 100);
  double t0 = now_seconds();
  size_t done = 0;
  for (long ep = 1; ep <= o.epochs; ep++) {
    for (size_t i = s.train.count - 1; i > 0; i--) { /* Fisher-Yates */
      size_t j = (size_t)train_rng_below(&rng, i + 1);
      size_t t = s.perm[i];
      s.perm[i] = s.perm[j];
      s.perm[j] = t;
    }
    for (size_t st = 0; st < steps; st++) {
      for (long b = 0; b < o.batch; b++) {
        size_t k = s.perm[st * (size_t)o.batch + (size_t)b];
        memcpy(s.xb + (size_t)b * px, s.train.images + k * px, px * sizeof *s.xb);
        s.yb[b] = s.train.labels[k];
      }
      const rlx_tensor *out;
      if (rlx_executable_set_input(s.step_exe, "x", &inputs[0].tensor) != RLX_OK ||
          rlx_executable_set_input(s.step_exe, "y", &inputs[1].tensor) != RLX_OK ||
          rlx_optim_graph_prepare_step(s.opt, s.step_exe) != RLX_OK ||
          rlx_executable_run_resident(s.step_exe) != RLX_OK ||
          rlx_executable_read_output(s.step_exe, 0, &out) != RLX_OK)
        return fail_rlx(self, &s, "training step");
      float l = *(const float *)out->data;
      if (!isfinite(l)) {
        state_free(&s);
        return cli_fail(self, "the loss became %f at step %zu (try a smaller --lr)", l, done + 1);
      }
      s.loss[done++] = l;
      char label[48], note[48];
      size_t win = done < 50 ? done : 50;
      double mean = 0;
      for (size_t i = done - win; i < done; i++) mean += s.loss[i] / (double)win;
      snprintf(label, sizeof label, "epoch %ld/%ld", ep, o.epochs);
      snprintf(note, sizeof note, "loss %.4f", mean);
      cli_progress_update(&pr, done, label, note, done == total_steps);
    }
  }
  double train_s = now_seconds() - t0;
  rlx_executable_transfer_stats(s.step_exe, &ts1);
  uint64_t param_moves = ts1.param_uploads - ts0.param_uploads + ts1.param_downloads - ts0.param_downloads;
  double ips = train_s > 0 ? (double)(total_steps * (size_t)o.batch) / train_s : 0;

  /* The trained parameters, downloaded once. */
  for (uint32_t i = 0; i < s.model.n_params; i++) {
    rlx_tensor t = {s.model.params[i].data, s.model.params[i].shape};
    if (rlx_executable_get_param(s.step_exe, s.model.params[i].name, &t) != RLX_OK)
      return fail_rlx(self, &s, "reading the trained parameters");
  }

  /* Test accuracy. */
  size_t correct = 0;
  if (set_params(s.eval_exe, &s.model) != RLX_OK || evaluate(s.eval_exe, &s.test, eb, &correct) != RLX_OK)
    return fail_rlx(self, &s, "evaluation");
  double acc = (double)correct / (double)s.test.count;

  /* Outputs. */
  if (make_dirs(o.out) != RLX_OK) return fail_rlx(self, &s, NULL);
  char wpath[4200], spath[4200], accs[32], eps[32];
  snprintf(wpath, sizeof wpath, "%s/weights.safetensors", o.out);
  snprintf(spath, sizeof spath, "%s/loss_curve.svg", o.out);
  snprintf(accs, sizeof accs, "%.4f", acc);
  snprintf(eps, sizeof eps, "%ld", o.epochs);
  rlx_named_tensor wt[TRAIN_MAX_PARAMS];
  for (uint32_t i = 0; i < s.model.n_params; i++)
    wt[i] = (rlx_named_tensor){s.model.params[i].name, {s.model.params[i].data, s.model.params[i].shape}};
  rlx_safetensors_kv meta[4] = {
      {"format", "pt"}, {"model", train_model_kind_name(o.model)}, {"epochs", eps}, {"test_accuracy", accs}};
  if (rlx_safetensors_save(wpath, wt, s.model.n_params, meta, 4) != RLX_OK) return fail_rlx(self, &s, NULL);
  if (verify_weights(wpath, wt, s.model.n_params) != RLX_OK) return fail_rlx(self, &s, NULL);
  char title[160];
  snprintf(title, sizeof title, "rlx train --model %s: Fashion-MNIST, batch %ld, Adam lr %g, test accuracy %.4f",
           train_model_kind_name(o.model), o.batch, o.lr, acc);
  if (train_write_loss_svg(spath, s.loss, total_steps, steps, title) != RLX_OK) return fail_rlx(self, &s, NULL);

  size_t win = total_steps < 50 ? total_steps : 50;
  double tail = 0;
  for (size_t i = total_steps - win; i < total_steps; i++) tail += s.loss[i];
  tail /= (double)win;
  fprintf(info, "trained %zu images in %.2f s: %.1f images/s; mean loss of the last %zu steps %.4f\n",
          total_steps * (size_t)o.batch, train_s, ips, win, tail);
  fprintf(info, "on %s: parameters moved between host and backend during training: %llu\n", o.backend,
          (unsigned long long)param_moves);
  fprintf(info, "test accuracy %.4f (%zu of %zu)\n", acc, correct, s.test.count);
  fprintf(info, "wrote %s (re-read and verified) and %s\n", wpath, spath);
  if (o.json)
    printf("{\"test_accuracy\": %.4f, \"train_images_per_second\": %.1f, \"epochs\": %ld, \"model\": \"%s\", "
           "\"batch\": %ld, \"threads\": %ld, \"train_images\": %zu, \"train_set_images\": %zu, \"test_images\": %zu, "
           "\"train_seconds\": %.3f, \"final_loss\": %.4f, \"backend\": \"%s\", \"param_transfers_during_training\": "
           "%llu}\n",
           acc, ips, o.epochs, train_model_kind_name(o.model), o.batch, o.threads, total_steps * (size_t)o.batch,
           s.train.count, s.test.count, train_s, tail, o.backend, (unsigned long long)param_moves);
  fflush(stdout);
  state_free(&s);
  return CLI_OK;
}
