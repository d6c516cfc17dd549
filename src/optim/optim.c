/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Optimizer objects: configuration defaults and checks, LR schedules, parameter registration
 * (all memory is taken here) and the step driver: gradient clipping, the per-param gradient
 * preparation (value clip, norm scale, maximize, L2 weight decay) and the dispatch to the update
 * loops of kernels.c and muon.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "optim/optim_internal.h"
#include "rlx/optim.h"

#define RLX_OPTIM_PI 3.14159265358979323846
#define MAX_SLOTS 3
#define MAX_NS_STEPS 100u

typedef struct optim_param {
  char *name;
  float *data;
  rlx_shape shape;
  size_t n;
  bool matrix;       /* Muon: orthogonalised update of the rows x cols view */
  size_t rows, cols; /* Muon matrices: dims[0] x (product of the others) */
  uint64_t steps;    /* steps taken by this param (bias correction, Adagrad lr_decay) */
  float *block;      /* all state slots in one allocation */
  float *slot[MAX_SLOTS];
  const char *slot_name[MAX_SLOTS];
} optim_param;

struct rlx_optim {
  rlx_optim_config cfg;
  const rlx_allocator *al;
  optim_param *params;
  uint32_t n_params, cap_params;
  uint64_t t;       /* completed steps */
  double last_norm; /* NaN unless clip_grad_norm > 0 */
  float *scratch;   /* prepared gradient, max param numel */
  size_t scratch_n;
  float *ws; /* Muon workspace: 2 * numel + 2 * k * k for the largest matrix */
  size_t ws_n;
};

static const char *const kind_names[RLX_OPTIM_KIND_COUNT] = {"sgd",     "adam",    "adamw", "lion",
                                                             "rmsprop", "adagrad", "muon"};

const char *rlx_optim_kind_name(rlx_optim_kind k) { return (unsigned)k < RLX_OPTIM_KIND_COUNT ? kind_names[k] : NULL; }

bool rlx_optim_kind_from_name(const char *s, rlx_optim_kind *out) {
  if (!s) return false;
  for (unsigned k = 0; k < RLX_OPTIM_KIND_COUNT; k++)
    if (strcmp(s, kind_names[k]) == 0) {
      if (out) *out = (rlx_optim_kind)k;
      return true;
    }
  return false;
}

void rlx_optim_config_init(rlx_optim_config *c, rlx_optim_kind kind) {
  if (!c) return;
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->beta1 = 0.9;
  c->beta2 = 0.999;
  c->eps = 1e-8;
  c->alpha = 0.99;
  c->ns_steps = 5;
  c->muon_lr_adjust = RLX_MUON_LR_ORIGINAL;
  c->schedule.kind = RLX_LR_CONSTANT;
  c->schedule.warmup_start_factor = 0;
  c->schedule.gamma = 0.1;
  switch (kind) {
  case RLX_OPTIM_SGD: c->lr = 1e-2; break;
  case RLX_OPTIM_ADAM: c->lr = 1e-3; break;
  case RLX_OPTIM_ADAMW:
    c->lr = 1e-3;
    c->weight_decay = 1e-2;
    break;
  case RLX_OPTIM_LION:
    c->lr = 1e-4;
    c->beta2 = 0.99;
    break;
  case RLX_OPTIM_RMSPROP: c->lr = 1e-2; break;
  case RLX_OPTIM_ADAGRAD:
    c->lr = 1e-2;
    c->eps = 1e-10;
    break;
  case RLX_OPTIM_MUON:
    c->lr = 0.02;
    c->momentum = 0.95;
    c->nesterov = true;
    c->muon_aux_lr = 3e-4;
    c->beta2 = 0.95;
    c->eps = 1e-10;
    break;
  default: break;
  }
}

/* ---- configuration checks ---- */

static rlx_status bad_field(const char *field, const char *want, double got) {
  return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: %s must be %s, got %g", field, want, got);
}
/* The negated comparisons also reject NaN. */
static rlx_status check_nonneg(const char *field, double v) {
  if (!(v >= 0) || isinf(v)) return bad_field(field, "a finite number >= 0", v);
  return RLX_OK;
}
static rlx_status check_pos(const char *field, double v) {
  if (!(v > 0) || isinf(v)) return bad_field(field, "a finite number > 0", v);
  return RLX_OK;
}
static rlx_status check_unit_open(const char *field, double v) {
  if (!(v >= 0 && v < 1)) return bad_field(field, "in [0, 1)", v);
  return RLX_OK;
}
static rlx_status check_unit_closed(const char *field, double v) {
  if (!(v >= 0 && v <= 1)) return bad_field(field, "in [0, 1]", v);
  return RLX_OK;
}

static rlx_status check_schedule(const rlx_lr_schedule *s) {
  if ((unsigned)s->kind >= RLX_LR_SCHEDULE_COUNT)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: schedule.kind %d is not a schedule", (int)s->kind);
  if (s->warmup_steps > 0) RLX_TRY(check_unit_closed("schedule.warmup_start_factor", s->warmup_start_factor));
  switch (s->kind) {
  case RLX_LR_COSINE:
  case RLX_LR_LINEAR:
    if (s->decay_steps == 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: schedule.decay_steps must be >= 1 for a %s schedule",
                        s->kind == RLX_LR_COSINE ? "cosine" : "linear");
    RLX_TRY(check_nonneg("schedule.min_lr", s->min_lr));
    break;
  case RLX_LR_STEP:
    if (s->step_size == 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: schedule.step_size must be >= 1 for a step schedule");
    RLX_TRY(check_nonneg("schedule.gamma", s->gamma));
    break;
  default: break;
  }
  return RLX_OK;
}

rlx_status rlx_optim_config_check(const rlx_optim_config *c) {
  if (!c) return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config is NULL");
  if ((unsigned)c->kind >= RLX_OPTIM_KIND_COUNT)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: kind %d is not an optimizer", (int)c->kind);
  RLX_TRY(check_nonneg("lr", c->lr));
  RLX_TRY(check_nonneg("weight_decay", c->weight_decay));
  RLX_TRY(check_nonneg("clip_grad_value", c->clip_grad_value));
  RLX_TRY(check_nonneg("clip_grad_norm", c->clip_grad_norm));
  switch (c->kind) {
  case RLX_OPTIM_SGD:
    RLX_TRY(check_nonneg("momentum", c->momentum));
    RLX_TRY(check_unit_closed("dampening", c->dampening));
    if (c->nesterov && !(c->momentum > 0 && c->dampening == 0))
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "optimizer config: nesterov needs momentum > 0 and dampening 0 (got "
                        "momentum %g, dampening %g)",
                        c->momentum, c->dampening);
    break;
  case RLX_OPTIM_ADAM:
  case RLX_OPTIM_ADAMW:
    RLX_TRY(check_unit_open("beta1", c->beta1));
    RLX_TRY(check_unit_open("beta2", c->beta2));
    RLX_TRY(check_pos("eps", c->eps));
    break;
  case RLX_OPTIM_LION:
    RLX_TRY(check_unit_open("beta1", c->beta1));
    RLX_TRY(check_unit_open("beta2", c->beta2));
    break;
  case RLX_OPTIM_RMSPROP:
    RLX_TRY(check_unit_closed("alpha", c->alpha));
    RLX_TRY(check_pos("eps", c->eps));
    RLX_TRY(check_nonneg("momentum", c->momentum));
    break;
  case RLX_OPTIM_ADAGRAD:
    RLX_TRY(check_nonneg("lr_decay", c->lr_decay));
    RLX_TRY(check_nonneg("initial_accumulator_value", c->initial_accumulator_value));
    RLX_TRY(check_pos("eps", c->eps));
    break;
  case RLX_OPTIM_MUON:
    RLX_TRY(check_unit_open("momentum", c->momentum));
    if (c->ns_steps < 1 || c->ns_steps > MAX_NS_STEPS)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: ns_steps must be in [1, %u], got %u", MAX_NS_STEPS,
                        c->ns_steps);
    if (c->muon_lr_adjust != RLX_MUON_LR_ORIGINAL && c->muon_lr_adjust != RLX_MUON_LR_MATCH_RMS_ADAMW)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: muon_lr_adjust %d is not a mode",
                        (int)c->muon_lr_adjust);
    RLX_TRY(check_nonneg("muon_aux_lr", c->muon_aux_lr));
    RLX_TRY(check_unit_open("beta1", c->beta1));
    RLX_TRY(check_unit_open("beta2", c->beta2));
    RLX_TRY(check_pos("eps", c->eps));
    break;
  default: break;
  }
  return check_schedule(&c->schedule);
}

double rlx_lr_schedule_at(const rlx_lr_schedule *s, double lr, uint64_t t) {
  if (!s) return lr;
  if (s->warmup_steps > 0) {
    if (t < s->warmup_steps) {
      double f0 = s->warmup_start_factor;
      return lr * (f0 + (1.0 - f0) * (double)t / (double)s->warmup_steps);
    }
    t -= s->warmup_steps;
  }
  switch (s->kind) {
  case RLX_LR_COSINE:
    if (t >= s->decay_steps) return s->min_lr;
    return s->min_lr + (lr - s->min_lr) * (1.0 + cos(RLX_OPTIM_PI * (double)t / (double)s->decay_steps)) / 2.0;
  case RLX_LR_LINEAR:
    if (t >= s->decay_steps) return s->min_lr;
    return lr + (s->min_lr - lr) * (double)t / (double)s->decay_steps;
  case RLX_LR_STEP:
    if (s->step_size == 0) return lr;
    return lr * pow(s->gamma, (double)(t / s->step_size));
  default: return lr;
  }
}

/* ---- objects ---- */

static void *xalloc(const rlx_allocator *al, size_t n) { return al->alloc(al->ctx, n ? n : 1); }
static void xfree(const rlx_allocator *al, void *p) {
  if (p) al->free(al->ctx, p);
}

rlx_status rlx_optim_create(const rlx_optim_config *c, rlx_optim **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_create: out is NULL");
  *out = NULL;
  RLX_TRY(rlx_optim_config_check(c));
  const rlx_allocator *al = c->allocator ? c->allocator : rlx_default_allocator();
  if (!al->alloc || !al->free)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "optimizer config: allocator lacks alloc or free");
  rlx_optim *o = xalloc(al, sizeof *o);
  if (!o) return rlx_errorf(RLX_ERR_OOM, "out of memory while allocating an optimizer");
  memset(o, 0, sizeof *o);
  o->cfg = *c;
  o->al = al;
  o->last_norm = NAN;
  *out = o;
  return RLX_OK;
}

void rlx_optim_free(rlx_optim *o) {
  if (!o) return;
  const rlx_allocator *al = o->al;
  for (uint32_t i = 0; i < o->n_params; i++) {
    xfree(al, o->params[i].name);
    xfree(al, o->params[i].block);
  }
  xfree(al, o->params);
  xfree(al, o->scratch);
  xfree(al, o->ws);
  xfree(al, o);
}

/* Names the state slots of a param (NULL = absent); slot order is what the kernels expect. */
static void state_layout(const rlx_optim_config *c, bool matrix, const char *names[MAX_SLOTS]) {
  for (int i = 0; i < MAX_SLOTS; i++) names[i] = NULL;
  switch (c->kind) {
  case RLX_OPTIM_SGD:
    if (c->momentum > 0) names[0] = "momentum_buffer";
    break;
  case RLX_OPTIM_ADAM:
  case RLX_OPTIM_ADAMW:
    names[0] = "exp_avg";
    names[1] = "exp_avg_sq";
    if (c->amsgrad) names[2] = "max_exp_avg_sq";
    break;
  case RLX_OPTIM_LION: names[0] = "exp_avg"; break;
  case RLX_OPTIM_RMSPROP:
    names[0] = "square_avg";
    if (c->centered) names[1] = "grad_avg";
    if (c->momentum > 0) names[2] = "momentum_buffer";
    break;
  case RLX_OPTIM_ADAGRAD: names[0] = "sum"; break;
  case RLX_OPTIM_MUON:
    if (matrix)
      names[0] = "momentum_buffer";
    else {
      names[0] = "exp_avg";
      names[1] = "exp_avg_sq";
    }
    break;
  default: break;
  }
}

/* Makes *buf hold at least n floats (old contents are not kept). */
static rlx_status grow(const rlx_allocator *al, float **buf, size_t *have, size_t n, const char *what) {
  if (n <= *have) return RLX_OK;
  size_t bytes;
  if (!rlx_mul_size(n, sizeof(float), &bytes))
    return rlx_errorf(RLX_ERR_OVERFLOW, "size of the optimizer %s overflows", what);
  float *p = xalloc(al, bytes);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "out of memory while allocating the optimizer %s", what);
  xfree(al, *buf);
  *buf = p;
  *have = n;
  return RLX_OK;
}

rlx_status rlx_optim_add_param(rlx_optim *o, const char *name, float *data, const rlx_shape *shape) {
  if (!o) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: optimizer is NULL");
  if (!name || !name[0])
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: param name must be a non-empty string");
  for (uint32_t i = 0; i < o->n_params; i++)
    if (strcmp(o->params[i].name, name) == 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: param '%s' is already registered", name);
  if (!data) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: param '%s': data is NULL", name);
  if (!shape) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: param '%s': shape is NULL", name);
  if (shape->rank > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_SHAPE, "rlx_optim_add_param: param '%s': rank %u exceeds %d", name, (unsigned)shape->rank,
                      RLX_MAX_RANK);
  if (shape->dtype != RLX_F32) {
    const char *dn = shape->dtype < RLX_DTYPE_COUNT ? rlx_dtype_name((rlx_dtype)shape->dtype) : "invalid";
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_add_param: param '%s': dtype must be f32, got %s", name, dn);
  }
  size_t n, bytes;
  rlx_status st = rlx_shape_numel(shape, &n);
  if (st != RLX_OK) return rlx_error_context(st, "rlx_optim_add_param: param '%s'", name);
  if (!rlx_mul_size(n, sizeof(float), &bytes))
    return rlx_errorf(RLX_ERR_OVERFLOW, "rlx_optim_add_param: param '%s': byte size overflows", name);

  optim_param p;
  memset(&p, 0, sizeof p);
  p.data = data;
  p.shape = *shape;
  p.n = n;
  size_t ws_need = 0;
  if (o->cfg.kind == RLX_OPTIM_MUON && shape->rank >= 2 && n > 0) {
    p.matrix = true;
    p.rows = (size_t)shape->dims[0];
    p.cols = n / p.rows;
    if (p.rows > INT_MAX || p.cols > INT_MAX)
      return rlx_errorf(RLX_ERR_UNSUPPORTED,
                        "rlx_optim_add_param: param '%s': Muon matrix %zu x %zu exceeds the BLAS "
                        "index range (INT_MAX)",
                        name, p.rows, p.cols);
    size_t k = p.rows < p.cols ? p.rows : p.cols, kk, n2, kk2;
    if (!rlx_mul_size(k, k, &kk) || !rlx_mul_size(kk, 2, &kk2) || !rlx_mul_size(n, 2, &n2) ||
        !rlx_add_size(n2, kk2, &ws_need))
      return rlx_errorf(RLX_ERR_OVERFLOW, "rlx_optim_add_param: param '%s': Muon workspace overflows", name);
  }
  state_layout(&o->cfg, p.matrix, p.slot_name);
  size_t n_slots = 0;
  for (int i = 0; i < MAX_SLOTS; i++) n_slots += p.slot_name[i] != NULL;
  size_t state_bytes;
  if (!rlx_mul_size(bytes, n_slots, &state_bytes))
    return rlx_errorf(RLX_ERR_OVERFLOW, "rlx_optim_add_param: param '%s': state size overflows", name);

  /* Take every buffer first, so a failure leaves the optimizer as it was. */
  if (o->n_params == o->cap_params) {
    if (o->n_params == UINT32_MAX) return rlx_errorf(RLX_ERR_OVERFLOW, "rlx_optim_add_param: too many params");
    uint32_t cap = o->cap_params ? (o->cap_params > UINT32_MAX / 2 ? UINT32_MAX : o->cap_params * 2) : 8;
    size_t pb;
    if (!rlx_mul_size(cap, sizeof(optim_param), &pb))
      return rlx_errorf(RLX_ERR_OVERFLOW, "rlx_optim_add_param: param table overflows");
    optim_param *np = xalloc(o->al, pb);
    if (!np) return rlx_errorf(RLX_ERR_OOM, "out of memory while growing the optimizer's param table");
    if (o->n_params) memcpy(np, o->params, (size_t)o->n_params * sizeof *np);
    xfree(o->al, o->params);
    o->params = np;
    o->cap_params = cap;
  }
  RLX_TRY(grow(o->al, &o->scratch, &o->scratch_n, n, "gradient buffer"));
  if (ws_need) RLX_TRY(grow(o->al, &o->ws, &o->ws_n, ws_need, "Muon workspace"));
  size_t name_len = strlen(name);
  p.name = xalloc(o->al, name_len + 1);
  if (!p.name) return rlx_errorf(RLX_ERR_OOM, "out of memory while copying param name '%s'", name);
  memcpy(p.name, name, name_len + 1);
  if (state_bytes) {
    p.block = xalloc(o->al, state_bytes);
    if (!p.block) {
      xfree(o->al, p.name);
      return rlx_errorf(RLX_ERR_OOM, "out of memory while allocating the optimizer state of '%s' (%zu bytes)", name,
                        state_bytes);
    }
    memset(p.block, 0, state_bytes);
    float *next = p.block;
    for (int i = 0; i < MAX_SLOTS; i++)
      if (p.slot_name[i]) {
        p.slot[i] = next;
        next += n;
      }
    if (o->cfg.kind == RLX_OPTIM_ADAGRAD) {
      const float init = (float)o->cfg.initial_accumulator_value;
      for (size_t i = 0; i < n; i++) p.slot[0][i] = init;
    }
  }
  o->params[o->n_params++] = p;
  return RLX_OK;
}

/* ---- the step ---- */

static bool uses_l2(rlx_optim_kind k) {
  return k == RLX_OPTIM_SGD || k == RLX_OPTIM_ADAM || k == RLX_OPTIM_RMSPROP || k == RLX_OPTIM_ADAGRAD;
}

static void adam_update(const rlx_optim_config *c, optim_param *p, const float *g, double lr, bool decoupled,
                        bool amsgrad) {
  if (decoupled && c->weight_decay != 0) rlx_optim_scale(p->data, p->n, (float)(1.0 - lr * c->weight_decay));
  double bc1 = 1.0 - pow(c->beta1, (double)p->steps), bc2 = 1.0 - pow(c->beta2, (double)p->steps);
  rlx_optim_adam(p->data, g, p->slot[0], p->slot[1], amsgrad ? p->slot[2] : NULL, p->n, (float)c->beta1,
                 (float)(1.0 - c->beta1), (float)c->beta2, (float)(1.0 - c->beta2), (float)(lr / bc1), (float)sqrt(bc2),
                 (float)c->eps);
}

static void muon_update(rlx_optim *o, optim_param *p, const float *g, double lr, double aux_lr) {
  const rlx_optim_config *c = &o->cfg;
  if (!p->matrix) {
    adam_update(c, p, g, aux_lr, true, false);
    return;
  }
  size_t k = p->rows < p->cols ? p->rows : p->cols;
  float *x = o->ws, *y = x + p->n, *gm = y + p->n, *h = gm + k * k;
  rlx_optim_muon_momentum(x, g, p->slot[0], p->n, (float)c->momentum, (float)(1.0 - c->momentum), c->nesterov);
  float *u = rlx_muon_orthogonalize(x, y, gm, h, p->rows, p->cols, c->ns_steps);
  double r = (double)p->rows, cl = (double)p->cols, adj;
  if (c->muon_lr_adjust == RLX_MUON_LR_MATCH_RMS_ADAMW)
    adj = lr * 0.2 * sqrt(r > cl ? r : cl);
  else
    adj = lr * sqrt(r > cl ? r / cl : 1.0);
  if (c->weight_decay != 0) rlx_optim_scale(p->data, p->n, (float)(1.0 - lr * c->weight_decay));
  rlx_optim_axpy(p->data, u, p->n, (float)adj);
}

/* The gradient of param i from either form of the step's arguments. */
static inline const float *grad_ptr(const float *const *ptrs, const rlx_tensor *tens, uint32_t i) {
  return ptrs ? ptrs[i] : (const float *)tens[i].data;
}

static rlx_status step_impl(rlx_optim *o, const char *fn, const float *const *ptrs, const rlx_tensor *tens,
                            uint32_t n_grads) {
  if (!o) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: optimizer is NULL", fn);
  if (o->n_params == 0)
    return rlx_errorf(RLX_ERR_INVALID_ARG,
                      "%s: the optimizer has no params; register them with rlx_optim_add_param "
                      "before the first step",
                      fn);
  if (!ptrs && !tens) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: grads is NULL", fn);
  if (n_grads != o->n_params)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: got %u gradients for %u params (one per param, in add order)", fn,
                      n_grads, o->n_params);
  for (uint32_t i = 0; i < o->n_params; i++) {
    const optim_param *p = &o->params[i];
    if (tens && tens[i].shape.rank > RLX_MAX_RANK)
      return rlx_errorf(RLX_ERR_SHAPE, "%s: gradient %u (param '%s') has rank %u > %d", fn, i, p->name,
                        (unsigned)tens[i].shape.rank, RLX_MAX_RANK);
    if (tens && !rlx_shape_equal(&tens[i].shape, &p->shape)) {
      char want[160], got[160];
      rlx_shape_format(&p->shape, want, sizeof want);
      rlx_shape_format(&tens[i].shape, got, sizeof got);
      return rlx_errorf(RLX_ERR_SHAPE, "%s: gradient %u (param '%s') has shape %s, expected %s", fn, i, p->name, got,
                        want);
    }
    if (!grad_ptr(ptrs, tens, i) && p->n > 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: gradient %u (param '%s') is NULL", fn, i, p->name);
  }

  const rlx_optim_config *c = &o->cfg;
  const float clip = (float)c->clip_grad_value;
  double scale = 1.0;
  if (c->clip_grad_norm > 0) {
    double ss = 0;
    for (uint32_t i = 0; i < o->n_params; i++) {
      double s = rlx_optim_sum_squares(grad_ptr(ptrs, tens, i), o->params[i].n, clip);
      if (!isfinite(s))
        return rlx_errorf(RLX_ERR_RUNTIME,
                          "%s: gradient %u (param '%s') holds NaN or Inf, so the global norm "
                          "cannot be clipped; no param was updated",
                          fn, i, o->params[i].name);
      ss += s;
    }
    double norm = sqrt(ss);
    o->last_norm = norm;
    double coef = c->clip_grad_norm / (norm + 1e-6);
    scale = coef < 1.0 ? coef : 1.0;
  }

  const double lr = rlx_lr_schedule_at(&c->schedule, c->lr, o->t);
  const float gscale = (float)scale * (c->maximize ? -1.0f : 1.0f);
  const float l2 = uses_l2(c->kind) ? (float)c->weight_decay : 0.0f;
  const bool raw = !(clip > 0) && scale == 1.0 && !c->maximize && l2 == 0.0f;
  double aux_lr = 0;
  if (c->kind == RLX_OPTIM_MUON) {
    double base = c->muon_aux_lr > 0 ? c->muon_aux_lr : c->lr;
    aux_lr = c->lr > 0 ? base * (lr / c->lr) : base;
  }

  for (uint32_t i = 0; i < o->n_params; i++) {
    optim_param *p = &o->params[i];
    if (p->n == 0) continue;
    const float *g = grad_ptr(ptrs, tens, i);
    if (!raw) {
      rlx_optim_prepare_grad(o->scratch, g, p->data, p->n, clip, gscale, l2);
      g = o->scratch;
    }
    p->steps++;
    switch (c->kind) {
    case RLX_OPTIM_SGD:
      rlx_optim_sgd(p->data, g, p->slot[0], p->n, (float)lr, (float)c->momentum, (float)(1.0 - c->dampening),
                    c->nesterov, p->steps == 1);
      break;
    case RLX_OPTIM_ADAM: adam_update(c, p, g, lr, false, c->amsgrad); break;
    case RLX_OPTIM_ADAMW: adam_update(c, p, g, lr, true, c->amsgrad); break;
    case RLX_OPTIM_LION:
      rlx_optim_lion(p->data, g, p->slot[0], p->n, (float)lr, (float)(1.0 - lr * c->weight_decay), (float)c->beta1,
                     (float)(1.0 - c->beta1), (float)c->beta2, (float)(1.0 - c->beta2));
      break;
    case RLX_OPTIM_RMSPROP:
      rlx_optim_rmsprop(p->data, g, p->slot[0], p->slot[1], p->slot[2], p->n, (float)lr, (float)c->alpha,
                        (float)(1.0 - c->alpha), (float)c->eps, (float)c->momentum);
      break;
    case RLX_OPTIM_ADAGRAD: {
      double clr = lr / (1.0 + (double)(p->steps - 1) * c->lr_decay);
      rlx_optim_adagrad(p->data, g, p->slot[0], p->n, (float)clr, (float)c->eps);
      break;
    }
    case RLX_OPTIM_MUON: muon_update(o, p, g, lr, aux_lr); break;
    default: break;
    }
  }
  o->t++;
  return RLX_OK;
}

rlx_status rlx_optim_step(rlx_optim *o, const float *const *grads, uint32_t n_grads) {
  if (!grads && o && o->n_params) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_step: grads is NULL");
  return step_impl(o, "rlx_optim_step", grads, NULL, n_grads);
}

rlx_status rlx_optim_step_tensors(rlx_optim *o, const rlx_tensor *grads, uint32_t n_grads) {
  if (!grads && o && o->n_params) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_step_tensors: grads is NULL");
  return step_impl(o, "rlx_optim_step_tensors", NULL, grads, n_grads);
}

double rlx_optim_current_lr(const rlx_optim *o) {
  if (!o) return NAN;
  return rlx_lr_schedule_at(&o->cfg.schedule, o->cfg.lr, o->t);
}

uint64_t rlx_optim_step_count(const rlx_optim *o) { return o ? o->t : 0; }
double rlx_optim_last_grad_norm(const rlx_optim *o) { return o ? o->last_norm : NAN; }
uint32_t rlx_optim_param_count(const rlx_optim *o) { return o ? o->n_params : 0; }

rlx_status rlx_optim_state(const rlx_optim *o, const char *param, const char *state, const float **data, size_t *n) {
  if (!o || !param || !state || !data)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_state: optimizer, param, state and data must not be NULL");
  for (uint32_t i = 0; i < o->n_params; i++) {
    const optim_param *p = &o->params[i];
    if (strcmp(p->name, param) != 0) continue;
    for (int s = 0; s < MAX_SLOTS; s++)
      if (p->slot_name[s] && strcmp(p->slot_name[s], state) == 0) {
        *data = p->slot[s];
        if (n) *n = p->n;
        return RLX_OK;
      }
    return rlx_errorf(RLX_ERR_NOT_FOUND, "rlx_optim_state: param '%s' has no state '%s' under %s", param, state,
                      kind_names[o->cfg.kind]);
  }
  return rlx_errorf(RLX_ERR_NOT_FOUND, "rlx_optim_state: no param named '%s'", param);
}
