/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Optimizers as graph ops (docs/optim.md, "In-graph updates"): the update of every parameter is
 * appended to the training graph, so a compiled step reads the parameters and the optimizer
 * state where they live (on the backend) and writes their new values there; the executable binds
 * those outputs back to the Params (rlx_executable_bind_output_to_param). Per step only a small
 * vector of scalars computed on the host (learning rate after the schedule, bias corrections,
 * first-step flag) is uploaded, as the Input "optim.hyper".
 *
 * The formulas and their order of operations are those of the host optimizer (kernels.c), so both
 * give the same values up to the rounding of the global gradient norm (summed in f32 here, in
 * double on the host). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/optim_internal.h"
#include "rlx/optim.h"

#define HYPER_LEN 8
enum { H_LR, H_DECAY, H_STEP_SIZE, H_BC2_SQRT, H_FIRST, H_COUNT };

typedef struct og_update {
  char *target; /* the Param the output is bound to */
  rlx_id node;  /* the new value */
  bool state;   /* optimizer state (initialised by bind) */
  float init;   /* its initial value */
  rlx_shape shape;
} og_update;

struct rlx_optim_graph {
  rlx_optim_config cfg;
  og_update *up;
  uint32_t n_up, cap_up;
  uint32_t n_params;
  uint64_t t; /* steps taken */
  uint32_t first_output;
};

typedef struct og_builder {
  rlx_graph *g;
  rlx_optim_graph *og;
  rlx_id hyper[HYPER_LEN];
} og_builder;

/* ---- small builders ---- */

static rlx_status scalar(og_builder *b, double v, rlx_id *out) { return rlx_scalar_f32(b->g, (float)v, out); }

static rlx_status bin(og_builder *b, rlx_binop op, rlx_id x, rlx_id y, rlx_id *out) {
  return rlx_binary(b->g, op, x, y, out);
}

/* x * c for a constant c */
static rlx_status mulc(og_builder *b, rlx_id x, double c, rlx_id *out) {
  rlx_id k;
  RLX_TRY(scalar(b, c, &k));
  return bin(b, RLX_BINOP_MUL, x, k, out);
}

static rlx_status addc(og_builder *b, rlx_id x, double c, rlx_id *out) {
  rlx_id k;
  RLX_TRY(scalar(b, c, &k));
  return bin(b, RLX_BINOP_ADD, x, k, out);
}

/* p - h * u (h a hyper scalar): the host's p[i] + (-lr) * u[i], the same value (negation is
 * exact) in one op fewer */
static rlx_status step_by(og_builder *b, rlx_id p, rlx_id h, rlx_id u, rlx_id *out) {
  rlx_id t;
  RLX_TRY(bin(b, RLX_BINOP_MUL, h, u, &t));
  return bin(b, RLX_BINOP_SUB, p, t, out);
}

/* m * beta + c * g (the moment updates) */
static rlx_status ema(og_builder *b, rlx_id m, double beta, rlx_id g, double c, rlx_id *out) {
  rlx_id x, y;
  RLX_TRY(mulc(b, m, beta, &x));
  RLX_TRY(mulc(b, g, c, &y));
  return bin(b, RLX_BINOP_ADD, x, y, out);
}

static rlx_status add_update(rlx_optim_graph *og, const char *target, rlx_id node, bool state, float init,
                             const rlx_shape *shape) {
  if (og->n_up == og->cap_up) {
    uint32_t cap = og->cap_up ? 2 * og->cap_up : 16;
    og_update *grown = realloc(og->up, cap * sizeof *grown);
    if (!grown) return rlx_errorf(RLX_ERR_OOM, "out of memory building the optimizer update");
    og->up = grown;
    og->cap_up = cap;
  }
  size_t n = strlen(target);
  char *name = malloc(n + 1);
  if (!name) return rlx_errorf(RLX_ERR_OOM, "out of memory building the optimizer update");
  memcpy(name, target, n + 1);
  og->up[og->n_up++] = (og_update){.target = name, .node = node, .state = state, .init = init, .shape = *shape};
  return RLX_OK;
}

/* A state Param "optim.<slot>.<param>" of the param's shape, recorded as an update target. */
static rlx_status state_param(og_builder *b, const char *slot, const char *param, const rlx_shape *shape, rlx_id *out,
                              char *name, size_t cap) {
  snprintf(name, cap, "optim.%s.%s", slot, param);
  return rlx_param(b->g, name, *shape, out);
}

/* ---- the update rules ---- */

static rlx_status update_param(og_builder *b, const char *pname, rlx_id p, rlx_id g, const rlx_shape *sh) {
  const rlx_optim_config *c = &b->og->cfg;
  rlx_id *h = b->hyper;
  char n1[512], n2[512], n3[512];
  rlx_id np, s1, s2, s3;
  switch (c->kind) {
  case RLX_OPTIM_SGD: {
    if (c->momentum == 0) {
      RLX_TRY(step_by(b, p, h[H_LR], g, &np));
      break;
    }
    rlx_id blended, first, zero, buf;
    RLX_TRY(state_param(b, "momentum_buffer", pname, sh, &s1, n1, sizeof n1));
    RLX_TRY(ema(b, s1, c->momentum, g, 1.0 - c->dampening, &blended));
    RLX_TRY(scalar(b, 0.5, &zero));
    RLX_TRY(rlx_compare(b->g, RLX_CMP_GT, h[H_FIRST], zero, &first));
    RLX_TRY(rlx_build_Where(b->g, (rlx_id[]){first, g, blended}, 3, NULL, &buf)); /* first step: buf = d */
    RLX_TRY(add_update(b->og, n1, buf, true, 0.0f, sh));
    if (c->nesterov) {
      rlx_id mb, u;
      RLX_TRY(mulc(b, buf, c->momentum, &mb));
      RLX_TRY(bin(b, RLX_BINOP_ADD, g, mb, &u));
      RLX_TRY(step_by(b, p, h[H_LR], u, &np));
    } else {
      RLX_TRY(step_by(b, p, h[H_LR], buf, &np));
    }
    break;
  }
  case RLX_OPTIM_ADAM:
  case RLX_OPTIM_ADAMW: {
    rlx_id pd = p, gg, m, v, vh, den, q, t;
    if (c->kind == RLX_OPTIM_ADAMW && c->weight_decay != 0) RLX_TRY(bin(b, RLX_BINOP_MUL, p, h[H_DECAY], &pd));
    RLX_TRY(state_param(b, "exp_avg", pname, sh, &s1, n1, sizeof n1));
    RLX_TRY(state_param(b, "exp_avg_sq", pname, sh, &s2, n2, sizeof n2));
    RLX_TRY(ema(b, s1, c->beta1, g, 1.0 - c->beta1, &m));
    RLX_TRY(bin(b, RLX_BINOP_MUL, g, g, &gg));
    RLX_TRY(ema(b, s2, c->beta2, gg, 1.0 - c->beta2, &v));
    RLX_TRY(add_update(b->og, n1, m, true, 0.0f, sh));
    RLX_TRY(add_update(b->og, n2, v, true, 0.0f, sh));
    vh = v;
    if (c->amsgrad) {
      RLX_TRY(state_param(b, "max_exp_avg_sq", pname, sh, &s3, n3, sizeof n3));
      RLX_TRY(bin(b, RLX_BINOP_MAX, v, s3, &vh));
      RLX_TRY(add_update(b->og, n3, vh, true, 0.0f, sh));
    }
    RLX_TRY(rlx_activation(b->g, RLX_ACT_SQRT, vh, &t));
    RLX_TRY(bin(b, RLX_BINOP_DIV, t, h[H_BC2_SQRT], &t));
    RLX_TRY(addc(b, t, c->eps, &den));
    RLX_TRY(bin(b, RLX_BINOP_DIV, m, den, &q));
    RLX_TRY(step_by(b, pd, h[H_STEP_SIZE], q, &np));
    break;
  }
  case RLX_OPTIM_LION: {
    rlx_id cc, s, pd, ls, m;
    RLX_TRY(state_param(b, "exp_avg", pname, sh, &s1, n1, sizeof n1));
    RLX_TRY(ema(b, s1, c->beta1, g, 1.0 - c->beta1, &cc));
    RLX_TRY(rlx_activation(b->g, RLX_ACT_SIGN, cc, &s));
    RLX_TRY(bin(b, RLX_BINOP_MUL, p, h[H_DECAY], &pd));
    RLX_TRY(bin(b, RLX_BINOP_MUL, h[H_LR], s, &ls));
    RLX_TRY(bin(b, RLX_BINOP_SUB, pd, ls, &np));
    RLX_TRY(ema(b, s1, c->beta2, g, 1.0 - c->beta2, &m));
    RLX_TRY(add_update(b->og, n1, m, true, 0.0f, sh));
    break;
  }
  case RLX_OPTIM_RMSPROP: {
    rlx_id gg, sq, avg, t, u;
    RLX_TRY(state_param(b, "square_avg", pname, sh, &s1, n1, sizeof n1));
    RLX_TRY(bin(b, RLX_BINOP_MUL, g, g, &gg));
    RLX_TRY(ema(b, s1, c->alpha, gg, 1.0 - c->alpha, &sq));
    RLX_TRY(add_update(b->og, n1, sq, true, 0.0f, sh));
    if (c->centered) {
      rlx_id ga, var, zero;
      RLX_TRY(state_param(b, "grad_avg", pname, sh, &s2, n2, sizeof n2));
      RLX_TRY(ema(b, s2, c->alpha, g, 1.0 - c->alpha, &ga));
      RLX_TRY(add_update(b->og, n2, ga, true, 0.0f, sh));
      RLX_TRY(bin(b, RLX_BINOP_MUL, ga, ga, &t));
      RLX_TRY(bin(b, RLX_BINOP_SUB, sq, t, &var));
      RLX_TRY(scalar(b, 0.0, &zero));
      RLX_TRY(bin(b, RLX_BINOP_MAX, var, zero, &var));
      RLX_TRY(rlx_activation(b->g, RLX_ACT_SQRT, var, &t));
    } else {
      RLX_TRY(rlx_activation(b->g, RLX_ACT_SQRT, sq, &t));
    }
    RLX_TRY(addc(b, t, c->eps, &avg));
    RLX_TRY(bin(b, RLX_BINOP_DIV, g, avg, &u));
    if (c->momentum > 0) {
      rlx_id buf;
      RLX_TRY(state_param(b, "momentum_buffer", pname, sh, &s3, n3, sizeof n3));
      RLX_TRY(mulc(b, s3, c->momentum, &t));
      RLX_TRY(bin(b, RLX_BINOP_ADD, t, u, &buf));
      RLX_TRY(add_update(b->og, n3, buf, true, 0.0f, sh));
      u = buf;
    }
    RLX_TRY(step_by(b, p, h[H_LR], u, &np));
    break;
  }
  case RLX_OPTIM_ADAGRAD: {
    rlx_id gg, sum, t, std, u;
    RLX_TRY(state_param(b, "sum", pname, sh, &s1, n1, sizeof n1));
    RLX_TRY(bin(b, RLX_BINOP_MUL, g, g, &gg));
    RLX_TRY(bin(b, RLX_BINOP_ADD, s1, gg, &sum));
    RLX_TRY(add_update(b->og, n1, sum, true, (float)c->initial_accumulator_value, sh));
    RLX_TRY(rlx_activation(b->g, RLX_ACT_SQRT, sum, &t));
    RLX_TRY(addc(b, t, c->eps, &std));
    RLX_TRY(bin(b, RLX_BINOP_DIV, g, std, &u));
    RLX_TRY(step_by(b, p, h[H_LR], u, &np));
    break;
  }
  default:
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "the %s optimizer has no in-graph update yet; use the host optimizer "
                      "(rlx_optim_step) for it",
                      rlx_optim_kind_name(c->kind));
  }
  return add_update(b->og, pname, np, false, 0.0f, sh);
}

/* Clipping, maximize and L2 decay of every gradient, as the host's prepare_grad. */
static rlx_status prepare_grads(og_builder *b, const rlx_id *params, rlx_id *grads, uint32_t n) {
  const rlx_optim_config *c = &b->og->cfg;
  if (c->clip_grad_value > 0)
    for (uint32_t i = 0; i < n; i++)
      RLX_TRY(rlx_build_Clamp(b->g, (rlx_id[]){grads[i]}, 1,
                              &(rlx_attrs_Clamp){.min = -c->clip_grad_value, .max = c->clip_grad_value}, NULL,
                              &grads[i]));
  rlx_id scale = RLX_NO_ID;
  if (c->clip_grad_norm > 0) {
    rlx_id ss = RLX_NO_ID;
    for (uint32_t i = 0; i < n; i++) {
      rlx_id sq, s;
      const rlx_node *gn = rlx_graph_node(b->g, grads[i]);
      int64_t axes[RLX_MAX_RANK];
      for (uint32_t k = 0; k < gn->shape.rank; k++) axes[k] = k;
      RLX_TRY(bin(b, RLX_BINOP_MUL, grads[i], grads[i], &sq));
      RLX_TRY(rlx_reduce_axes(b->g, RLX_REDUCE_SUM, sq, gn->shape.rank, axes, false, &s));
      if (ss == RLX_NO_ID)
        ss = s;
      else
        RLX_TRY(bin(b, RLX_BINOP_ADD, ss, s, &ss));
    }
    rlx_id norm, den, coef, one;
    RLX_TRY(rlx_activation(b->g, RLX_ACT_SQRT, ss, &norm));
    RLX_TRY(addc(b, norm, 1e-6, &den));
    RLX_TRY(scalar(b, c->clip_grad_norm, &coef));
    RLX_TRY(bin(b, RLX_BINOP_DIV, coef, den, &coef));
    RLX_TRY(scalar(b, 1.0, &one));
    RLX_TRY(bin(b, RLX_BINOP_MIN, coef, one, &scale));
  }
  bool l2 = c->weight_decay != 0 && (c->kind == RLX_OPTIM_SGD || c->kind == RLX_OPTIM_ADAM ||
                                     c->kind == RLX_OPTIM_RMSPROP || c->kind == RLX_OPTIM_ADAGRAD);
  for (uint32_t i = 0; i < n; i++) {
    if (scale != RLX_NO_ID) RLX_TRY(bin(b, RLX_BINOP_MUL, grads[i], scale, &grads[i]));
    if (c->maximize) RLX_TRY(mulc(b, grads[i], -1.0, &grads[i]));
    if (l2) {
      rlx_id d;
      RLX_TRY(mulc(b, params[i], c->weight_decay, &d));
      RLX_TRY(bin(b, RLX_BINOP_ADD, grads[i], d, &grads[i]));
    }
  }
  return RLX_OK;
}

void rlx_optim_graph_free(rlx_optim_graph *og) {
  if (!og) return;
  for (uint32_t i = 0; i < og->n_up; i++) free(og->up[i].target);
  free(og->up);
  free(og);
}

rlx_status rlx_optim_graph_build(const rlx_optim_config *c, rlx_graph *g, const rlx_id *params, const rlx_id *grads,
                                 uint32_t n, rlx_optim_graph **out) {
  if (!c || !g || (n && (!params || !grads)) || !out)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_graph_build: NULL argument");
  *out = NULL;
  RLX_TRY(rlx_optim_config_check(c));
  rlx_optim_graph *og = calloc(1, sizeof *og);
  rlx_id *gr = malloc((n ? n : 1) * sizeof *gr);
  if (!og || !gr) {
    free(og);
    free(gr);
    return rlx_errorf(RLX_ERR_OOM, "out of memory building the optimizer update");
  }
  og->cfg = *c;
  og->n_params = n;
  og_builder b = {.g = g, .og = og};
  rlx_status st = RLX_OK;
  for (uint32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_node *p = rlx_graph_node(g, params[i]), *d = rlx_graph_node(g, grads[i]);
    if (!p || p->op != RLX_OP_Param || !p->attrs.Param.name)
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_graph_build: params[%u] (%%%u) is not a named Param", i,
                      params[i]);
    else if (!d || !rlx_shape_equal(&p->shape, &d->shape) || p->shape.dtype != RLX_F32)
      st = rlx_errorf(RLX_ERR_INVALID_ARG,
                      "rlx_optim_graph_build: param '%s' and its gradient must both be f32 "
                      "of one shape",
                      p->attrs.Param.name);
    gr[i] = grads[i];
  }
  rlx_id hv = RLX_NO_ID;
  if (st == RLX_OK) st = rlx_input(g, "optim.hyper", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){HYPER_LEN}), &hv);
  for (uint32_t k = 0; k < HYPER_LEN && st == RLX_OK; k++) {
    rlx_id nar;
    st = rlx_build_Narrow(g, &hv, 1, &(rlx_attrs_Narrow){.axis = 0, .start = k, .len = 1}, NULL, &nar);
    if (st == RLX_OK) st = rlx_reshape(g, nar, 0, NULL, &b.hyper[k]);
  }
  if (st == RLX_OK) st = prepare_grads(&b, params, gr, n);
  for (uint32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_node *p = rlx_graph_node(g, params[i]);
    rlx_shape sh = p->shape;
    st = update_param(&b, p->attrs.Param.name, params[i], gr[i], &sh);
  }
  free(gr);
  if (st != RLX_OK) {
    rlx_optim_graph_free(og);
    return st;
  }
  *out = og;
  return RLX_OK;
}

uint32_t rlx_optim_graph_output_count(const rlx_optim_graph *og) { return og ? og->n_up : 0; }

rlx_id rlx_optim_graph_output(const rlx_optim_graph *og, uint32_t i) {
  return og && i < og->n_up ? og->up[i].node : RLX_NO_ID;
}

const char *rlx_optim_graph_target(const rlx_optim_graph *og, uint32_t i) {
  return og && i < og->n_up ? og->up[i].target : NULL;
}

rlx_status rlx_optim_graph_bind(rlx_optim_graph *og, rlx_executable *e, uint32_t first_output) {
  if (!og || !e) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_graph_bind: NULL argument");
  og->first_output = first_output;
  for (uint32_t i = 0; i < og->n_up; i++) {
    og_update *u = &og->up[i];
    RLX_TRY(rlx_executable_bind_output_to_param(e, first_output + i, u->target));
    if (!u->state) continue;
    size_t n = 1;
    for (uint32_t k = 0; k < u->shape.rank; k++) n *= (size_t)u->shape.dims[k];
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return rlx_errorf(RLX_ERR_OOM, "out of memory initialising optimizer state '%s'", u->target);
    for (size_t k = 0; k < n; k++) v[k] = u->init;
    rlx_tensor t = {v, u->shape};
    rlx_status st = rlx_executable_set_param(e, u->target, &t);
    free(v);
    RLX_TRY(st);
  }
  og->t = 0;
  return RLX_OK;
}

rlx_status rlx_optim_graph_prepare_step(rlx_optim_graph *og, rlx_executable *e) {
  if (!og || !e) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_optim_graph_prepare_step: NULL argument");
  const rlx_optim_config *c = &og->cfg;
  double lr = rlx_lr_schedule_at(&c->schedule, c->lr, og->t);
  double steps = (double)(og->t + 1);
  float h[HYPER_LEN] = {0};
  h[H_LR] = (float)lr;
  h[H_FIRST] = og->t == 0 ? 1.0f : 0.0f;
  switch (c->kind) {
  case RLX_OPTIM_ADAM:
  case RLX_OPTIM_ADAMW: {
    double bc1 = 1.0 - pow(c->beta1, steps), bc2 = 1.0 - pow(c->beta2, steps);
    h[H_STEP_SIZE] = (float)(lr / bc1);
    h[H_BC2_SQRT] = (float)sqrt(bc2);
    h[H_DECAY] = (float)(1.0 - lr * c->weight_decay);
    break;
  }
  case RLX_OPTIM_LION: h[H_DECAY] = (float)(1.0 - lr * c->weight_decay); break;
  case RLX_OPTIM_ADAGRAD: h[H_LR] = (float)(lr / (1.0 + (steps - 1.0) * c->lr_decay)); break;
  default: break;
  }
  rlx_tensor t = {h, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){HYPER_LEN})};
  RLX_TRY(rlx_executable_set_input(e, "optim.hyper", &t));
  og->t++;
  return RLX_OK;
}
