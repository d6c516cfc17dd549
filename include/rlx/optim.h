/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Host optimizers for training: f32 parameter buffers owned by the caller are updated in place
 * from one gradient per parameter after each forward+backward run. The update rules follow
 * torch.optim (SGD, Adam, AdamW, RMSprop, Adagrad) and the published algorithms of Lion and Muon;
 * docs/optim.md gives every formula, the LR schedules and the deliberate differences.
 *
 * Typical loop:
 *   rlx_optim_config c;
 *   rlx_optim_config_init(&c, RLX_OPTIM_ADAMW);
 *   c.lr = 3e-4; c.clip_grad_norm = 1.0;
 *   c.schedule.kind = RLX_LR_COSINE; c.schedule.warmup_steps = 100; c.schedule.decay_steps = 900;
 *   rlx_optim *opt; RLX_TRY(rlx_optim_create(&c, &opt));
 *   RLX_TRY(rlx_optim_add_param(opt, "w1", w1, &w1_shape));   ... one call per parameter
 *   each iteration: run the gradient executable, then
 *   RLX_TRY(rlx_optim_step_tensors(opt, outputs + 1, n_outputs - 1));   (outputs = [loss, grads])
 *   and copy the updated buffers back with rlx_executable_set_param.
 *
 * Several parameter groups (a different lr, no weight decay on biases, AdamW for the embeddings
 * of a Muon model) are several rlx_optim objects. Nothing here is thread-safe per object. */
#ifndef RLX_OPTIM_H
#define RLX_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/graph.h"
#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_optim_kind {
  RLX_OPTIM_SGD,     /* momentum, dampening, Nesterov; L2 weight decay (torch.optim.SGD) */
  RLX_OPTIM_ADAM,    /* L2 weight decay added to the gradient, amsgrad (torch.optim.Adam) */
  RLX_OPTIM_ADAMW,   /* decoupled weight decay (torch.optim.AdamW) */
  RLX_OPTIM_LION,    /* sign update, decoupled weight decay (Chen et al. 2023) */
  RLX_OPTIM_RMSPROP, /* alpha, momentum, centered; L2 weight decay (torch.optim.RMSprop) */
  RLX_OPTIM_ADAGRAD, /* lr_decay, initial_accumulator_value; L2 decay (torch.optim.Adagrad) */
  RLX_OPTIM_MUON,    /* momentum + Newton-Schulz orthogonalisation of matrices (Jordan et al. 2024);
                        params of rank 0 and 1 get an AdamW update (see muon_aux_lr) */
  RLX_OPTIM_KIND_COUNT
} rlx_optim_kind;

/* "sgd", "adam", "adamw", "lion", "rmsprop", "adagrad", "muon" (NULL for an invalid kind). */
const char *rlx_optim_kind_name(rlx_optim_kind k);
/* Parses one of the names above; false when unknown. */
bool rlx_optim_kind_from_name(const char *s, rlx_optim_kind *out);

typedef enum rlx_lr_schedule_kind {
  RLX_LR_CONSTANT, /* lr (after the warmup, if any) */
  RLX_LR_COSINE,   /* min_lr + (lr - min_lr) * (1 + cos(pi * s / decay_steps)) / 2, then min_lr */
  RLX_LR_LINEAR,   /* lr + (min_lr - lr) * s / decay_steps, then min_lr */
  RLX_LR_STEP,     /* lr * gamma^floor(s / step_size) */
  RLX_LR_SCHEDULE_COUNT
} rlx_lr_schedule_kind;

/* The learning rate of step t (0-based) for base rate lr. With warmup_steps = W > 0, steps t < W
 * use lr * (warmup_start_factor + (1 - warmup_start_factor) * t / W) and the schedule above runs
 * on s = t - W afterwards (torch: SequentialLR of LinearLR then the main scheduler). */
typedef struct rlx_lr_schedule {
  rlx_lr_schedule_kind kind;
  uint64_t warmup_steps;      /* 0 = no warmup */
  double warmup_start_factor; /* in [0, 1]; the warmup starts at lr * this */
  uint64_t decay_steps;       /* COSINE / LINEAR: steps from lr down to min_lr (>= 1) */
  double min_lr;              /* COSINE / LINEAR: final rate (>= 0) */
  uint64_t step_size;         /* STEP: steps between decays (>= 1) */
  double gamma;               /* STEP: factor per decay (>= 0) */
} rlx_lr_schedule;

/* How Muon scales the lr of an orthogonalised [A, B] update. */
typedef enum rlx_muon_lr_adjust {
  RLX_MUON_LR_ORIGINAL,        /* lr * sqrt(max(1, A / B)) (Jordan's reference implementation) */
  RLX_MUON_LR_MATCH_RMS_ADAMW, /* lr * 0.2 * sqrt(max(A, B)) (update RMS comparable to AdamW) */
} rlx_muon_lr_adjust;

typedef struct rlx_optim_config {
  rlx_optim_kind kind;
  double lr;                        /* base learning rate, >= 0 */
  double weight_decay;              /* >= 0. L2 (added to the gradient) for SGD, Adam, RMSProp, Adagrad;
                          decoupled (p *= 1 - lr * weight_decay) for AdamW, Lion, Muon */
  double eps;                       /* > 0; denominator term of Adam/AdamW/RMSProp/Adagrad and of Muon's
                          AdamW fallback (unused by SGD and Lion) */
  double beta1, beta2;              /* in [0, 1): Adam/AdamW moments, Lion interpolation/momentum,
                          Muon's AdamW fallback */
  bool maximize;                    /* ascend instead of descend (the gradient is negated) */
  bool amsgrad;                     /* Adam / AdamW: normalise by the running maximum of the 2nd moment */
  double momentum;                  /* SGD, RMSProp: >= 0; Muon: in [0, 1) */
  double dampening;                 /* SGD: in [0, 1] */
  bool nesterov;                    /* SGD (needs momentum > 0 and dampening 0), Muon */
  double alpha;                     /* RMSProp smoothing constant, in [0, 1] */
  bool centered;                    /* RMSProp: normalise by the estimated variance */
  double lr_decay;                  /* Adagrad: lr / (1 + (step - 1) * lr_decay), >= 0 */
  double initial_accumulator_value; /* Adagrad: start of the sum of squares, >= 0 */
  uint32_t ns_steps;                /* Muon: Newton-Schulz iterations, 1..100 */
  rlx_muon_lr_adjust muon_lr_adjust;
  double muon_aux_lr; /* Muon: base lr of the AdamW fallback for rank-0/1 params (0 = lr); the
                         schedule scales it by the same factor as lr */
  /* Gradient clipping, applied to the gradients before anything else, in this order: */
  double clip_grad_value; /* > 0: clamp every element to [-v, v] (clip_grad_value_) */
  double clip_grad_norm;  /* > 0: scale all gradients by min(1, max / (norm + 1e-6)) where norm
                             is their global L2 norm (clip_grad_norm_) */
  rlx_lr_schedule schedule;
  const rlx_allocator *allocator; /* NULL = malloc/free; all memory is taken before step() */
} rlx_optim_config;

/* Fills *c with the defaults of `kind` (torch's where torch has the optimizer; SGD lr 0.01,
 * Lion lr 1e-4 betas (0.9, 0.99), Muon lr 0.02 momentum 0.95 Nesterov 5 steps aux AdamW lr 3e-4
 * betas (0.9, 0.95) eps 1e-10), no clipping, constant schedule. */
void rlx_optim_config_init(rlx_optim_config *c, rlx_optim_kind kind);

/* Checks every hyper-parameter the kind uses; RLX_ERR_INVALID_ARG names the bad field. */
rlx_status rlx_optim_config_check(const rlx_optim_config *c);

/* The scheduled learning rate of step t (0-based) for base rate lr (no checks: a schedule that
 * fails rlx_optim_config_check gives unspecified values). */
double rlx_lr_schedule_at(const rlx_lr_schedule *s, double lr, uint64_t t);

typedef struct rlx_optim rlx_optim;

/* Validates the config (see rlx_optim_config_check) and creates an optimizer without params. */
rlx_status rlx_optim_create(const rlx_optim_config *c, rlx_optim **out);
void rlx_optim_free(rlx_optim *opt); /* NULL is a no-op */

/* Registers a parameter: `data` (borrowed; it must stay valid while opt is used) holds the f32
 * elements of `shape` (static, dtype f32), updated in place by every step. The name must be new
 * to this optimizer; the state is keyed by it and zero-initialised here (Adagrad:
 * initial_accumulator_value). Params may be added between steps; a new param starts its own
 * step count at 0 (bias correction, Adagrad lr_decay) as in torch. */
rlx_status rlx_optim_add_param(rlx_optim *opt, const char *name, float *data, const rlx_shape *shape);

/* One optimisation step: grads[i] holds the gradient of the i-th param (add order) with the
 * param's element count; n_grads must equal the number of params. The gradients are not
 * modified. Does not allocate. On error nothing is updated. Non-finite gradients are an error
 * (RLX_ERR_RUNTIME naming the param) only when clip_grad_norm > 0 (which computes their norm). */
rlx_status rlx_optim_step(rlx_optim *opt, const float *const *grads, uint32_t n_grads);

/* Same, from tensors (e.g. the gradient outputs of an executable): each must be f32 with exactly
 * its param's shape. */
rlx_status rlx_optim_step_tensors(rlx_optim *opt, const rlx_tensor *grads, uint32_t n_grads);

/* The learning rate the next step will use (the schedule at step_count). */
double rlx_optim_current_lr(const rlx_optim *opt);
/* Number of completed steps. */
uint64_t rlx_optim_step_count(const rlx_optim *opt);
/* Global L2 norm of the gradients of the last step, before norm clipping (after value clipping);
 * NaN when clip_grad_norm is 0 (the norm is then not computed) or before the first step. */
double rlx_optim_last_grad_norm(const rlx_optim *opt);
uint32_t rlx_optim_param_count(const rlx_optim *opt);

/* Read access to one state buffer of a param, by torch's state names: "momentum_buffer" (SGD with
 * momentum, RMSProp with momentum, Muon matrices), "exp_avg", "exp_avg_sq", "max_exp_avg_sq"
 * (Adam/AdamW, Muon's fallback), "exp_avg" (Lion), "square_avg", "grad_avg" (RMSProp), "sum"
 * (Adagrad). RLX_ERR_NOT_FOUND for an unknown param or a state the param does not have. */
rlx_status rlx_optim_state(const rlx_optim *opt, const char *param, const char *state, const float **data, size_t *n);

/* ---- in-graph updates (src/optim/graph_update.c; docs/optim.md) ----
 * The optimizer as graph ops, so that a compiled training step keeps parameters and optimizer
 * state on its backend:
 *   rlx_optim_graph *og;
 *   RLX_TRY(rlx_optim_graph_build(&cfg, grad_graph, params, grads, n, &og));  appends the updates
 *   outputs = [loss, rlx_optim_graph_output(og, 0..count-1)]; compile; set the params once;
 *   RLX_TRY(rlx_optim_graph_bind(og, exe, 1));     outputs 1.. become their Params after each run,
 *                                                   optimizer state starts at its initial value
 *   per step: set the batch inputs, rlx_optim_graph_prepare_step(og, exe), run_resident.
 * Every kind but Muon; the same formulas as the host optimizer. */
typedef struct rlx_optim_graph rlx_optim_graph;
/* params[i]: named f32 Param nodes of g; grads[i]: nodes of g holding their gradients. Adds the
 * Input "optim.hyper" f32[8] and one state Param per moment ("optim.<slot>.<param>"). */
rlx_status rlx_optim_graph_build(const rlx_optim_config *c, rlx_graph *g, const rlx_id *params, const rlx_id *grads,
                                 uint32_t n, rlx_optim_graph **out);
/* The new values (params and state), in the order they must follow as outputs. */
uint32_t rlx_optim_graph_output_count(const rlx_optim_graph *og);
rlx_id rlx_optim_graph_output(const rlx_optim_graph *og, uint32_t i);
const char *rlx_optim_graph_target(const rlx_optim_graph *og, uint32_t i); /* the Param it becomes */
/* Binds outputs first_output.. to their Params and sets the optimizer state to its initial value
 * (the params themselves must be set by the caller). Restarts the step count. */
rlx_status rlx_optim_graph_bind(rlx_optim_graph *og, rlx_executable *e, uint32_t first_output);
/* Uploads the scalars of the next step (scheduled lr, bias corrections) as "optim.hyper". */
rlx_status rlx_optim_graph_prepare_step(rlx_optim_graph *og, rlx_executable *e);
void rlx_optim_graph_free(rlx_optim_graph *og);

#ifdef __cplusplus
}
#endif
#endif
