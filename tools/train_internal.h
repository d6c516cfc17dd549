/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pieces of `rlx train` (tools/cmd_train.c): the models and their graphs (train_model.c) and the
 * loss-curve chart (train_svg.c). */
#ifndef RLX_TRAIN_INTERNAL_H
#define RLX_TRAIN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/rlx.h"

#define TRAIN_MAX_PARAMS 8

typedef enum train_model_kind { TRAIN_MODEL_CNN, TRAIN_MODEL_MLP } train_model_kind;

typedef struct train_param {
  char name[32];   /* PyTorch's state_dict name: "conv1.weight", "fc2.bias", ... */
  rlx_shape shape; /* PyTorch's layout: conv [out, in, kh, kw], linear [out, in], bias [out] */
  uint32_t fan_in; /* in * kh * kw (conv) or in (linear) of the layer it belongs to */
  float *data;     /* numel floats, owned by the model */
  size_t numel;
} train_param;

typedef struct train_model {
  train_model_kind kind;
  uint32_t rows, cols, classes;
  train_param params[TRAIN_MAX_PARAMS];
  uint32_t n_params;
} train_model;

/* "cnn" / "mlp". */
bool train_model_kind_from_name(const char *s, train_model_kind *out);
const char *train_model_kind_name(train_model_kind k);

/* Declares the params of `kind` for rows x cols single-channel images and `classes` outputs and
 * initializes them like PyTorch's defaults (Conv2d / Linear reset_parameters): every weight and
 * bias uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (Kaiming-uniform with a = sqrt(5) gives
 * exactly that bound), drawn from a PRNG seeded with `seed`. */
rlx_status train_model_init(train_model *m, train_model_kind kind, uint32_t rows, uint32_t cols, uint32_t classes,
                            uint64_t seed);
void train_model_free(train_model *m);

/* The forward graph for a batch of `batch` images: Input "x" [batch, 1, rows, cols] f32, the
 * model's Params, and either (with_loss) Input "y" [batch] i32 and one output: the mean softmax
 * cross-entropy, or (without) one output: the logits [batch, classes]. */
rlx_status train_build_graph(const train_model *m, int64_t batch, bool with_loss, rlx_graph **out);

/* Writes a line chart of the per-step loss (raw and a moving average, axes, ticks, labels, epoch
 * boundaries) as a standalone SVG document to `path`. */
rlx_status train_write_loss_svg(const char *path, const float *loss, size_t n_steps, size_t steps_per_epoch,
                                const char *title);

/* A small deterministic PRNG (splitmix64). */
typedef struct train_rng {
  uint64_t s;
} train_rng;
uint64_t train_rng_next(train_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float train_rng_uniform(train_rng *r);
/* Uniform integer in [0, n) (n > 0), without modulo bias. */
uint64_t train_rng_below(train_rng *r, uint64_t n);

#endif
