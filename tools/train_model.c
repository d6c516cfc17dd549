/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The models of `rlx train`: their parameters (PyTorch names and layouts, PyTorch's default
 * initialization) and their graphs, built with the builder API.
 *
 *   cnn: conv3x3(1->16, padding 1) + bias -> relu -> maxpool 2 -> conv3x3(16->32, padding 1) + bias
 *        -> relu -> maxpool 2 -> flatten -> fc(32*(rows/4)*(cols/4) -> 128) + bias -> relu
 *        -> fc(128 -> classes) + bias
 *   mlp: flatten -> fc(rows*cols -> 256) + bias -> relu -> fc(256 -> classes) + bias
 *
 * Linear layers keep PyTorch's [out, in] weight layout (so weights.safetensors loads into the
 * equivalent torch.nn module as is) and compute x @ transpose(W) + b. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

/* ---- PRNG ---- */

uint64_t train_rng_next(train_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float train_rng_uniform(train_rng *r) { return (float)(train_rng_next(r) >> 40) * (1.0f / 16777216.0f); }

uint64_t train_rng_below(train_rng *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* reject the incomplete last block */
  for (;;) {
    uint64_t v = train_rng_next(r);
    if (v < limit) return v % n;
  }
}

/* ---- params ---- */

bool train_model_kind_from_name(const char *s, train_model_kind *out) {
  if (strcmp(s, "cnn") == 0)
    *out = TRAIN_MODEL_CNN;
  else if (strcmp(s, "mlp") == 0)
    *out = TRAIN_MODEL_MLP;
  else
    return false;
  return true;
}

const char *train_model_kind_name(train_model_kind k) { return k == TRAIN_MODEL_CNN ? "cnn" : "mlp"; }

static void add_param(train_model *m, const char *name, uint32_t rank, const rlx_dim *dims, uint32_t fan_in) {
  train_param *p = &m->params[m->n_params++];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->shape = rlx_shape_make(RLX_F32, rank, dims);
  p->fan_in = fan_in;
  p->numel = 1;
  for (uint32_t i = 0; i < rank; i++) p->numel *= (size_t)dims[i];
}

void train_model_free(train_model *m) {
  for (uint32_t i = 0; i < m->n_params; i++) {
    free(m->params[i].data);
    m->params[i].data = NULL;
  }
  m->n_params = 0;
}

rlx_status train_model_init(train_model *m, train_model_kind kind, uint32_t rows, uint32_t cols, uint32_t classes,
                            uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->kind = kind;
  m->rows = rows;
  m->cols = cols;
  m->classes = classes;
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096 || classes == 0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "images of %ux%u with %u classes are not supported", rows, cols, classes);
  if (kind == TRAIN_MODEL_CNN) {
    if (rows < 4 || cols < 4)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "the cnn needs images of at least 4x4 (got %ux%u)", rows, cols);
    uint32_t flat = 32 * (rows / 2 / 2) * (cols / 2 / 2);
    add_param(m, "conv1.weight", 4, (rlx_dim[]){16, 1, 3, 3}, 1 * 9);
    add_param(m, "conv1.bias", 1, (rlx_dim[]){16}, 1 * 9);
    add_param(m, "conv2.weight", 4, (rlx_dim[]){32, 16, 3, 3}, 16 * 9);
    add_param(m, "conv2.bias", 1, (rlx_dim[]){32}, 16 * 9);
    add_param(m, "fc1.weight", 2, (rlx_dim[]){128, flat}, flat);
    add_param(m, "fc1.bias", 1, (rlx_dim[]){128}, flat);
    add_param(m, "fc2.weight", 2, (rlx_dim[]){classes, 128}, 128);
    add_param(m, "fc2.bias", 1, (rlx_dim[]){classes}, 128);
  } else {
    uint32_t flat = rows * cols;
    add_param(m, "fc1.weight", 2, (rlx_dim[]){256, flat}, flat);
    add_param(m, "fc1.bias", 1, (rlx_dim[]){256}, flat);
    add_param(m, "fc2.weight", 2, (rlx_dim[]){classes, 256}, 256);
    add_param(m, "fc2.bias", 1, (rlx_dim[]){classes}, 256);
  }
  train_rng rng = {seed};
  for (uint32_t i = 0; i < m->n_params; i++) {
    train_param *p = &m->params[i];
    p->data = malloc(p->numel * sizeof(float));
    if (!p->data) {
      train_model_free(m);
      return rlx_errorf(RLX_ERR_OOM, "out of memory for parameter %s", p->name);
    }
    /* kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) =
     * 1 / sqrt(fan_in); the biases use the same bound. */
    float bound = (float)(1.0 / sqrt((double)p->fan_in));
    for (size_t k = 0; k < p->numel; k++) p->data[k] = (2.0f * train_rng_uniform(&rng) - 1.0f) * bound;
  }
  return RLX_OK;
}

/* ---- graphs ---- */

typedef struct gb {
  rlx_graph *g;
  const train_model *m;
} gb;

static rlx_status param(gb *b, const char *name, rlx_id *out) {
  for (uint32_t i = 0; i < b->m->n_params; i++)
    if (strcmp(b->m->params[i].name, name) == 0) return rlx_param(b->g, name, b->m->params[i].shape, out);
  return rlx_errorf(RLX_ERR_INTERNAL, "model has no parameter %s", name);
}

/* conv3x3 (stride 1, padding 1) + bias, then relu and 2x2 max pooling. */
static rlx_status conv_block(gb *b, rlx_id x, const char *layer, int64_t out_ch, rlx_id *out) {
  char wn[32], bn[32];
  snprintf(wn, sizeof wn, "%s.weight", layer);
  snprintf(bn, sizeof bn, "%s.bias", layer);
  rlx_id w, bias, y, bias4, z, r;
  RLX_TRY(param(b, wn, &w));
  RLX_TRY(param(b, bn, &bias));
  int64_t k[2] = {3, 3}, one[2] = {1, 1}, two[2] = {2, 2}, zero[2] = {0, 0};
  rlx_attrs_Conv ca = {.kernel_size = {.v = k, .n = 2},
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = one, .n = 2},
                       .dilation = {.v = one, .n = 2},
                       .groups = 1};
  RLX_TRY(rlx_build_Conv(b->g, (rlx_id[]){x, w}, 2, &ca, layer, &y));
  RLX_TRY(rlx_reshape(b->g, bias, 4, (int64_t[]){1, out_ch, 1, 1}, &bias4));
  RLX_TRY(rlx_binary(b->g, RLX_BINOP_ADD, y, bias4, &z));
  RLX_TRY(rlx_activation(b->g, RLX_ACT_RELU, z, &r));
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = two, .n = 2},
                       .stride = {.v = two, .n = 2},
                       .padding = {.v = zero, .n = 2}};
  char pn[40];
  snprintf(pn, sizeof pn, "%s.pool", layer);
  return rlx_build_Pool(b->g, &r, 1, &pa, pn, out);
}

/* x @ transpose(W) + b, optionally followed by relu. */
static rlx_status linear(gb *b, rlx_id x, const char *layer, bool relu, rlx_id *out) {
  char wn[32], bn[32];
  snprintf(wn, sizeof wn, "%s.weight", layer);
  snprintf(bn, sizeof bn, "%s.bias", layer);
  rlx_id w, bias, wt, y, z;
  RLX_TRY(param(b, wn, &w));
  RLX_TRY(param(b, bn, &bias));
  RLX_TRY(rlx_transpose(b->g, w, 2, (int64_t[]){1, 0}, &wt));
  RLX_TRY(rlx_matmul(b->g, x, wt, &y));
  RLX_TRY(rlx_binary(b->g, RLX_BINOP_ADD, y, bias, &z));
  if (!relu) {
    *out = z;
    return RLX_OK;
  }
  return rlx_activation(b->g, RLX_ACT_RELU, z, out);
}

static rlx_status build(gb *b, int64_t batch, bool with_loss) {
  const train_model *m = b->m;
  rlx_id x, h, logits;
  RLX_TRY(rlx_input(b->g, "x", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){batch, 1, m->rows, m->cols}), &x));
  if (m->kind == TRAIN_MODEL_CNN) {
    rlx_id c1, c2;
    RLX_TRY(conv_block(b, x, "conv1", 16, &c1));
    RLX_TRY(conv_block(b, c1, "conv2", 32, &c2));
    int64_t flat = 32 * (int64_t)(m->rows / 4) * (int64_t)(m->cols / 4);
    RLX_TRY(rlx_reshape(b->g, c2, 2, (int64_t[]){batch, flat}, &h));
  } else {
    RLX_TRY(rlx_reshape(b->g, x, 2, (int64_t[]){batch, (int64_t)m->rows * m->cols}, &h));
  }
  rlx_id f1;
  RLX_TRY(linear(b, h, "fc1", true, &f1));
  RLX_TRY(linear(b, f1, "fc2", false, &logits));
  if (!with_loss) return rlx_graph_set_outputs(b->g, &logits, 1);
  rlx_id y, per_example, loss;
  RLX_TRY(rlx_input(b->g, "y", rlx_shape_make(RLX_I32, 1, (rlx_dim[]){batch}), &y));
  RLX_TRY(rlx_build_SoftmaxCrossEntropyWithLogits(b->g, (rlx_id[]){logits, y}, 2, "cross_entropy", &per_example));
  RLX_TRY(rlx_reduce_axes(b->g, RLX_REDUCE_MEAN, per_example, 1, (int64_t[]){0}, false, &loss));
  return rlx_graph_set_outputs(b->g, &loss, 1);
}

rlx_status train_build_graph(const train_model *m, int64_t batch, bool with_loss, rlx_graph **out) {
  *out = NULL;
  gb b = {NULL, m};
  RLX_TRY(rlx_graph_create(NULL, with_loss ? "train_loss" : "forward", &b.g));
  rlx_status st = build(&b, batch, with_loss);
  if (st != RLX_OK) {
    rlx_graph_free(b.g);
    return rlx_error_context(st, "building the %s graph", train_model_kind_name(m->kind));
  }
  *out = b.g;
  return RLX_OK;
}
