/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Ops of the ONNX domain "ai.onnx.preview.training", versioned by that domain's opset import:
 * the optimizers Adagrad, Momentum (standard and Nesterov) and Adam, decomposed into elementwise
 * RLX nodes (one update per optimized tensor; the scalar learning-rate factors are computed in
 * f64 from the run-time inputs R and T), and Gradient, which differentiates the imported forward
 * subgraph xs -> y with RLX's reverse-mode autodiff (rlx_grad) and inlines the result. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "rlx/autodiff.h"

/* ======================================================================================
 * Optimizers
 * ====================================================================================== */

/* The shared layout of Adagrad / Momentum / Adam: inputs R, T, then `per` groups of n tensors
 * (X_1..X_n, G_1..G_n, ...), outputs (per - 1) groups of n. */
typedef struct optim {
  uint32_t n;   /* optimized tensors */
  rlx_id r, t;  /* R as an f64 scalar, T as an f64 scalar */
  rlx_id t_pos; /* T > 0 (bool scalar) */
} optim;

static rlx_status optim_setup(oi_node *c, uint32_t per, const char *const *roles, optim *o) {
  if (c->n_in < 2 + per || (c->n_in - 2) % per)
    return oi_bad(c, "takes R, T and %u groups of equally many tensors (%s, %s, ...); %u inputs given", per, roles[0],
                  roles[1], c->n_in);
  o->n = (c->n_in - 2) / per;
  if (c->n_out > (per - 1) * o->n)
    return oi_bad(c, "has %u outputs; %u optimized tensors give at most %u", c->n_out, o->n, (per - 1) * o->n);
  RLX_TRY(oi_need(c, 0, "R, the learning rate"));
  RLX_TRY(oi_need(c, 1, "T, the update count"));
  const rlx_shape *rs = oi_in_shape(c, 0), *ts = oi_in_shape(c, 1);
  size_t numel;
  if (!rlx_dtype_is_float((rlx_dtype)rs->dtype) || rlx_shape_numel(rs, &numel) || numel != 1)
    return oi_bad(c, "input R must be a float scalar, not %s", rlx_fmt_shape(rs));
  if (ts->dtype != RLX_I64 || rlx_shape_numel(ts, &numel) || numel != 1)
    return oi_bad(c, "input T must be an int64 scalar, not %s", rlx_fmt_shape(ts));
  for (uint32_t g = 0; g < per; g++)
    for (uint32_t i = 0; i < o->n; i++) {
      uint32_t k = 2 + g * o->n + i;
      RLX_TRY(oi_need(c, k, roles[g]));
      const rlx_shape *xs = oi_in_shape(c, 2 + i), *s = oi_in_shape(c, k);
      if (!rlx_dtype_is_float((rlx_dtype)s->dtype) || s->dtype != xs->dtype || !rlx_shape_equal(s, xs))
        return oi_bad(c, "input %u (%s_%u) is %s; it must match X_%u, %s", k, roles[g], i + 1, rlx_fmt_shape(s), i + 1,
                      rlx_fmt_shape(xs));
    }
  int64_t scalar_dims[1] = {0};
  rlx_id r, t, zero;
  RLX_TRY(oi_reshape(c, c->in[0], 0, scalar_dims, &r));
  RLX_TRY(oi_reshape(c, c->in[1], 0, scalar_dims, &t));
  RLX_TRY(oi_cast(c, r, RLX_F64, &o->r));
  RLX_TRY(oi_cast(c, t, RLX_F64, &o->t));
  RLX_TRY(oi_scalar(c, RLX_F64, 0, &zero));
  return oi_cmp(c, RLX_CMP_GT, o->t, zero, &o->t_pos);
}

static rlx_id in_of(const oi_node *c, const optim *o, uint32_t group, uint32_t i) {
  return c->in[2 + group * o->n + i];
}

static void set_out(oi_node *c, const optim *o, uint32_t group, uint32_t i, rlx_id v) {
  uint32_t k = group * o->n + i;
  if (k < c->n_out) c->out[k] = v;
}

/* k * x (x's dtype) */
static rlx_status scale(oi_node *c, rlx_id x, double k, rlx_id *out) { return oi_bin_s(c, RLX_BINOP_MUL, x, k, out); }

/* G + norm_coefficient * X */
static rlx_status regularized(oi_node *c, rlx_id x, rlx_id g, float norm, rlx_id *out) {
  if (norm == 0) {
    *out = g;
    return RLX_OK;
  }
  rlx_id nx;
  RLX_TRY(scale(c, x, norm, &nx));
  return oi_bin(c, RLX_BINOP_ADD, nx, g, out);
}

static rlx_status map_adagrad(oi_node *c) {
  float decay, eps, norm;
  RLX_TRY(oi_attr_f(c, "decay_factor", 0.0f, &decay));
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-6f, &eps));
  RLX_TRY(oi_attr_f(c, "norm_coefficient", 0.0f, &norm));
  static const char *const roles[] = {"X", "G", "H"};
  optim o;
  RLX_TRY(optim_setup(c, 3, roles, &o));
  /* r = R / (1 + T * decay_factor) */
  rlx_id td, den, r64;
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, o.t, decay, &td));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, td, 1.0, &den));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, o.r, den, &r64));
  for (uint32_t i = 0; i < o.n; i++) {
    rlx_id x = in_of(c, &o, 0, i), g = in_of(c, &o, 1, i), h = in_of(c, &o, 2, i);
    rlx_id r, gr, g2, h_new, sq, ad, step, upd, x_new;
    RLX_TRY(oi_cast(c, r64, (rlx_dtype)oi_shape(c, x)->dtype, &r));
    RLX_TRY(regularized(c, x, g, norm, &gr));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, gr, gr, &g2));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, h, g2, &h_new));
    RLX_TRY(oi_unary(c, RLX_ACT_SQRT, h_new, &sq));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, sq, eps, &ad));
    RLX_TRY(oi_bin(c, RLX_BINOP_DIV, gr, ad, &step));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, r, step, &upd));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, upd, &x_new));
    set_out(c, &o, 0, i, x_new);
    set_out(c, &o, 1, i, h_new);
  }
  return RLX_OK;
}

static rlx_status need_attr_f(oi_node *c, const char *name, float *out) {
  if (!oi_attr(c, name)) return oi_bad(c, "attribute %s is required", name);
  return oi_attr_f(c, name, 0.0f, out);
}

static rlx_status map_momentum(oi_node *c) {
  float alpha, beta, norm;
  RLX_TRY(need_attr_f(c, "alpha", &alpha));
  RLX_TRY(need_attr_f(c, "beta", &beta));
  RLX_TRY(need_attr_f(c, "norm_coefficient", &norm));
  if (!oi_attr(c, "mode")) return oi_bad(c, "attribute mode is required (\"standard\" or \"nesterov\")");
  const char *mode;
  RLX_TRY(oi_attr_s(c, "mode", "standard", &mode));
  bool nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0)
    return oi_bad(c, "attribute mode is \"%s\"; expected \"standard\" or \"nesterov\"", mode);
  static const char *const roles[] = {"X", "G", "V"};
  optim o;
  RLX_TRY(optim_setup(c, 3, roles, &o));
  /* beta_adjusted = T > 0 ? beta : 1 */
  rlx_id b, one, b64;
  RLX_TRY(oi_scalar(c, RLX_F64, beta, &b));
  RLX_TRY(oi_scalar(c, RLX_F64, 1.0, &one));
  RLX_TRY(oi_where(c, o.t_pos, b, one, &b64));
  for (uint32_t i = 0; i < o.n; i++) {
    rlx_id x = in_of(c, &o, 0, i), g = in_of(c, &o, 1, i), v = in_of(c, &o, 2, i);
    rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
    rlx_id r, ba, gr, av, bg, v_new, dir, upd, x_new;
    RLX_TRY(oi_cast(c, o.r, t, &r));
    RLX_TRY(oi_cast(c, b64, t, &ba));
    RLX_TRY(regularized(c, x, g, norm, &gr));
    RLX_TRY(scale(c, v, alpha, &av));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, ba, gr, &bg));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, av, bg, &v_new));
    if (nesterov) { /* X - R * (G_regularized + alpha * V_new) */
      rlx_id avn;
      RLX_TRY(scale(c, v_new, alpha, &avn));
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, gr, avn, &dir));
    } else {
      dir = v_new;
    }
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, r, dir, &upd));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, upd, &x_new));
    set_out(c, &o, 0, i, x_new);
    set_out(c, &o, 1, i, v_new);
  }
  return RLX_OK;
}

static rlx_status map_adam(oi_node *c) {
  float alpha, beta, eps, norm, norm_post;
  RLX_TRY(oi_attr_f(c, "alpha", 0.9f, &alpha));
  RLX_TRY(oi_attr_f(c, "beta", 0.999f, &beta));
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-6f, &eps));
  RLX_TRY(oi_attr_f(c, "norm_coefficient", 0.0f, &norm));
  RLX_TRY(oi_attr_f(c, "norm_coefficient_post", 0.0f, &norm_post));
  static const char *const roles[] = {"X", "G", "V", "H"};
  optim o;
  RLX_TRY(optim_setup(c, 4, roles, &o));
  /* R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R */
  rlx_id a, b, at, bt, one_a, one_b, sq, num, adj, r64;
  RLX_TRY(oi_scalar(c, RLX_F64, alpha, &a));
  RLX_TRY(oi_scalar(c, RLX_F64, beta, &b));
  RLX_TRY(oi_bin(c, RLX_BINOP_POW, a, o.t, &at));
  RLX_TRY(oi_bin(c, RLX_BINOP_POW, b, o.t, &bt));
  RLX_TRY(oi_scalar(c, RLX_F64, 1.0, &one_a));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, one_a, at, &one_a));
  RLX_TRY(oi_scalar(c, RLX_F64, 1.0, &one_b));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, one_b, bt, &one_b));
  RLX_TRY(oi_unary(c, RLX_ACT_SQRT, one_b, &sq));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, o.r, sq, &num));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, num, one_a, &adj));
  RLX_TRY(oi_where(c, o.t_pos, adj, o.r, &r64));
  for (uint32_t i = 0; i < o.n; i++) {
    rlx_id x = in_of(c, &o, 0, i), g = in_of(c, &o, 1, i), v = in_of(c, &o, 2, i), h = in_of(c, &o, 3, i);
    rlx_id r, gr, av, ag, v_new, g2, bh, bg, h_new, hs, hse, dir, upd, x_new;
    RLX_TRY(oi_cast(c, r64, (rlx_dtype)oi_shape(c, x)->dtype, &r));
    RLX_TRY(regularized(c, x, g, norm, &gr));
    RLX_TRY(scale(c, v, alpha, &av));
    RLX_TRY(scale(c, gr, 1.0 - (double)alpha, &ag));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, av, ag, &v_new));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, gr, gr, &g2));
    RLX_TRY(scale(c, h, beta, &bh));
    RLX_TRY(scale(c, g2, 1.0 - (double)beta, &bg));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, bh, bg, &h_new));
    RLX_TRY(oi_unary(c, RLX_ACT_SQRT, h_new, &hs));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, hs, eps, &hse));
    RLX_TRY(oi_bin(c, RLX_BINOP_DIV, v_new, hse, &dir));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, r, dir, &upd));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, upd, &x_new));
    if (norm_post != 0) RLX_TRY(scale(c, x_new, 1.0 - (double)norm_post, &x_new));
    set_out(c, &o, 0, i, x_new);
    set_out(c, &o, 1, i, v_new);
    set_out(c, &o, 2, i, h_new);
  }
  return RLX_OK;
}

/* ======================================================================================
 * Gradient
 * ====================================================================================== */

/* The value names of a STRINGS attribute (or the STRING attribute y when `one`), copied into the
 * node's scratch memory. */
static rlx_status attr_names(oi_node *c, const char *name, bool one, bool required, const char ***out, uint32_t *n) {
  const Onnx__AttributeProto *a = oi_attr(c, name);
  *n = 0;
  *out = NULL;
  if (!a) return required ? oi_bad(c, "attribute %s is required", name) : RLX_OK;
  Onnx__AttributeProto__AttributeType want =
      one ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
  if (oi_attr_type(a) != want) return oi_bad(c, "attribute %s must be %s", name, one ? "a STRING" : "STRINGS");
  size_t cnt = one ? 1 : a->n_strings;
  if (cnt > OI_MAX_NODE_IO) return oi_bad(c, "attribute %s lists %zu names", name, cnt);
  const char **v = oi_scratch(c, (cnt ? cnt : 1) * sizeof *v);
  if (!v) return oi_nomem(c);
  for (size_t i = 0; i < cnt; i++) {
    const ProtobufCBinaryData *b = one ? &a->s : &a->strings[i];
    char *s = oi_scratch(c, b->len + 1);
    if (!s) return oi_nomem(c);
    if (b->len) memcpy(s, b->data, b->len);
    s[b->len] = 0;
    v[i] = s;
  }
  *out = v;
  *n = (uint32_t)cnt;
  return RLX_OK;
}

/* The RLX value of a name the node's attributes refer to. A value an earlier gap poisoned makes
 * the node quietly unsupported (the gap was recorded where it happened). */
static rlx_status named_value(oi_node *c, const char *attr, const char *name, rlx_id *out) {
  const oi_value *v = oi_scope_get(c->sc, name);
  if (!v) return oi_bad(c, "attribute %s names \"%s\", which is not a value of this graph", attr, name);
  if (v->state == OI_VAL_POISONED) {
    c->reason[0] = 0;
    c->unsupported = true;
    return RLX_ERR_UNSUPPORTED;
  }
  *out = v->id;
  return RLX_OK;
}

typedef struct grad_build {
  rlx_graph *f; /* the forward subgraph xs, zs -> y as a graph of its own */
  rlx_id *map;  /* node of the importing graph -> node of f (RLX_NO_ID: not copied) */
  rlx_id *caps; /* importing-graph values that f reads as Inputs "cap<k>" */
  uint32_t n_caps;
} grad_build;

/* Copies the part of the importing graph that computes y from xs and zs into b->f: xs / zs
 * become Inputs "x<i>" / "z<j>", values that do not depend on xs become Inputs "cap<k>"
 * (Constants are copied), everything else is copied node by node. */
static rlx_status build_forward(oi_node *c, const rlx_id *xs, uint32_t n_xs, const rlx_id *zs, uint32_t n_zs, rlx_id y,
                                grad_build *b) {
  uint32_t nn = rlx_graph_node_count(c->g);
  uint8_t *dep = oi_scratch(c, nn), *cone = oi_scratch(c, nn);
  int32_t *leaf = oi_scratch(c, (size_t)nn * sizeof *leaf); /* x<i> = i, z<j> = n_xs + j, -1 otherwise */
  b->map = oi_scratch(c, (size_t)nn * sizeof *b->map);
  b->caps = oi_scratch(c, (size_t)nn * sizeof *b->caps);
  if (!dep || !cone || !leaf || !b->map || !b->caps) return oi_nomem(c);
  for (uint32_t i = 0; i < nn; i++) {
    leaf[i] = -1;
    b->map[i] = RLX_NO_ID;
  }
  for (uint32_t i = 0; i < n_xs + n_zs; i++) {
    rlx_id id = i < n_xs ? xs[i] : zs[i - n_xs];
    if (leaf[id] >= 0) return oi_unsupported(c, "xs and zs name the same value twice");
    leaf[id] = (int32_t)i;
  }
  /* dep: depends on some x (node ids are in topological order); cone: feeds y */
  memset(cone, 0, nn);
  for (uint32_t i = 0; i < nn; i++) {
    const rlx_node *n = rlx_graph_node(c->g, i);
    dep[i] = leaf[i] >= 0 && leaf[i] < (int32_t)n_xs;
    if (leaf[i] >= 0) continue;
    for (uint32_t k = 0; k < n->n_inputs && !dep[i]; k++) dep[i] = dep[n->inputs[k]];
  }
  cone[y] = 1;
  for (uint32_t i = y + 1; i-- > 0;) {
    if (!cone[i] || leaf[i] >= 0 || !dep[i]) continue;
    const rlx_node *n = rlx_graph_node(c->g, i);
    for (uint32_t k = 0; k < n->n_inputs; k++) cone[n->inputs[k]] = 1;
  }
  RLX_TRY(rlx_graph_create(c->m->al, "gradient_forward", &b->f));
  oi_set_fold_hook(c->m, b->f);
  rlx_id *ins = oi_scratch(c, (size_t)(nn + 1) * sizeof *ins);
  if (!ins) return oi_nomem(c);
  for (uint32_t i = 0; i <= y; i++) {
    if (!cone[i]) continue;
    const rlx_node *n = rlx_graph_node(c->g, i);
    char nm[32];
    if (leaf[i] >= 0) {
      if (leaf[i] < (int32_t)n_xs)
        snprintf(nm, sizeof nm, "x%d", leaf[i]);
      else
        snprintf(nm, sizeof nm, "z%d", leaf[i] - (int32_t)n_xs);
      RLX_TRY(rlx_input(b->f, nm, n->shape, &b->map[i]));
    } else if (n->op == RLX_OP_Constant) {
      RLX_TRY(rlx_constant(b->f, n->shape, n->attrs.Constant.data.p, n->attrs.Constant.data.n, &b->map[i]));
    } else if (!dep[i]) {
      snprintf(nm, sizeof nm, "cap%u", b->n_caps);
      b->caps[b->n_caps++] = i;
      RLX_TRY(rlx_input(b->f, nm, n->shape, &b->map[i]));
    } else {
      if (rlx_op_has(n->op, RLX_PROP_SUBGRAPH))
        return oi_unsupported(c, "differentiating through %s (an op with a body) is not supported", rlx_op_name(n->op));
      for (uint32_t k = 0; k < n->n_inputs; k++) ins[k] = b->map[n->inputs[k]];
      rlx_shape sh = n->shape;
      RLX_TRY(rlx_graph_add_unchecked(b->f, n->op, ins, n->n_inputs, &n->attrs, &sh, NULL, &b->map[i]));
    }
  }
  return rlx_graph_set_outputs(b->f, &b->map[y], 1);
}

/* Emits the nodes of the gradient graph gg into the importing graph; its Inputs are bound to the
 * Gradient node's inputs (x<i>, z<j>), the captured values (cap<k>) and a seed of ones. */
static rlx_status inline_gradient(oi_node *c, const rlx_graph *gg, const grad_build *b, uint32_t n_xs, rlx_id y) {
  if (gg->n_children) return oi_unsupported(c, "a gradient that needs control flow (bodies)");
  uint32_t nn = rlx_graph_node_count(gg);
  rlx_id *map = oi_scratch(c, (size_t)(nn ? nn : 1) * sizeof *map),
         *ins = oi_scratch(c, (size_t)(nn + 1) * sizeof *ins);
  if (!map || !ins) return oi_nomem(c);
  for (uint32_t i = 0; i < nn; i++) {
    const rlx_node *n = rlx_graph_node(gg, i);
    if (n->op == RLX_OP_Input) {
      const char *nm = n->attrs.Input.name;
      unsigned k;
      char tail;
      if (strcmp(nm, "d_output") == 0)
        RLX_TRY(oi_fill(c, oi_shape(c, y)[0], 1.0, &map[i]));
      else if (sscanf(nm, "x%u%c", &k, &tail) == 1 && k < n_xs)
        map[i] = c->in[k];
      else if (sscanf(nm, "z%u%c", &k, &tail) == 1 && n_xs + k < c->n_in)
        map[i] = c->in[n_xs + k];
      else if (sscanf(nm, "cap%u%c", &k, &tail) == 1 && k < b->n_caps)
        map[i] = b->caps[k];
      else
        return rlx_errorf(RLX_ERR_INTERNAL, "Gradient: the gradient graph has an unexpected input \"%s\"", nm);
    } else if (rlx_op_has(n->op, RLX_PROP_LEAF) && n->op != RLX_OP_Constant) {
      return rlx_errorf(RLX_ERR_INTERNAL, "Gradient: the gradient graph has a %s leaf", rlx_op_name(n->op));
    } else {
      for (uint32_t k = 0; k < n->n_inputs; k++) ins[k] = map[n->inputs[k]];
      if (n->op == RLX_OP_Constant)
        RLX_TRY(oi_const(c, n->shape, n->attrs.Constant.data.p, n->attrs.Constant.data.n, &map[i]));
      else
        RLX_TRY(oi_emit(c, n->op, ins, n->n_inputs, &n->attrs, &map[i]));
    }
  }
  const rlx_id *outs = rlx_graph_outputs(gg);
  for (uint32_t i = 0; i < c->n_out && i < rlx_graph_output_count(gg); i++) c->out[i] = map[outs[i]];
  return RLX_OK;
}

static rlx_status map_gradient(oi_node *c) {
  const char **xn, **zn, **yn;
  uint32_t n_xs, n_zs, n_y;
  RLX_TRY(attr_names(c, "xs", false, true, &xn, &n_xs));
  RLX_TRY(attr_names(c, "zs", false, false, &zn, &n_zs));
  RLX_TRY(attr_names(c, "y", true, true, &yn, &n_y));
  if (!n_xs) return oi_bad(c, "attribute xs is empty");
  if (c->n_in != n_xs + n_zs)
    return oi_bad(c, "has %u inputs; it needs one per name of xs and zs (%u)", c->n_in, n_xs + n_zs);
  if (c->n_out > n_xs) return oi_bad(c, "has %u outputs; xs names %u values", c->n_out, n_xs);
  rlx_id y = RLX_NO_ID, *xs = oi_scratch(c, (size_t)(n_xs + n_zs) * sizeof *xs);
  if (!xs) return oi_nomem(c);
  RLX_TRY(named_value(c, "y", yn[0], &y));
  for (uint32_t i = 0; i < n_xs + n_zs; i++) {
    const char *attr = i < n_xs ? "xs" : "zs", *nm = i < n_xs ? xn[i] : zn[i - n_xs];
    RLX_TRY(named_value(c, attr, nm, &xs[i]));
    RLX_TRY(oi_need(c, i, nm));
    const rlx_shape *want = oi_shape(c, xs[i]), *got = oi_in_shape(c, i);
    if (!rlx_shape_equal(want, got))
      return oi_bad(c, "input %u is %s but \"%s\" (%s[%u]) is %s", i, rlx_fmt_shape(got), nm, attr,
                    i < n_xs ? i : i - n_xs, rlx_fmt_shape(want));
    if (i < n_xs && !rlx_dtype_is_float((rlx_dtype)want->dtype))
      return oi_bad(c, "xs[%u] (\"%s\") is %s; gradients exist only for float values", i, nm, rlx_fmt_shape(want));
  }
  if (!rlx_dtype_is_float((rlx_dtype)oi_shape(c, y)->dtype))
    return oi_bad(c, "y (\"%s\") is %s; it must be a float value", yn[0], rlx_fmt_shape(oi_shape(c, y)));
  grad_build b = {0};
  rlx_graph *gg = NULL;
  const char **wrt = oi_scratch(c, (size_t)n_xs * sizeof *wrt);
  rlx_status st = wrt ? build_forward(c, xs, n_xs, xs + n_xs, n_zs, y, &b) : oi_nomem(c);
  for (uint32_t i = 0; i < n_xs && st == RLX_OK; i++) {
    char *nm = oi_scratch(c, 16);
    if (!nm)
      st = oi_nomem(c);
    else {
      snprintf(nm, 16, "x%u", i);
      wrt[i] = nm;
    }
  }
  if (st == RLX_OK) {
    st = rlx_grad(b.f, wrt, n_xs, NULL, &gg);
    if (st == RLX_ERR_UNSUPPORTED) st = oi_unsupported(c, "%s", rlx_last_error());
  }
  if (st == RLX_OK) st = inline_gradient(c, gg, &b, n_xs, y);
  rlx_graph_free(gg);
  rlx_graph_free(b.f);
  return st;
}

/* ======================================================================================
 * Table
 * ====================================================================================== */

const oi_op_entry oi_ops_training[] = {
    {"Adagrad", 1, 1, map_adagrad},
    {"Momentum", 1, 1, map_momentum},
    {"Adam", 1, 1, map_adam},
    {"Gradient", 1, 1, map_gradient},
};
const uint32_t oi_ops_training_len = sizeof oi_ops_training / sizeof oi_ops_training[0];

const oi_op_entry *oi_training_op_find(const char *op_type) {
  for (uint32_t i = 0; i < oi_ops_training_len; i++)
    if (strcmp(oi_ops_training[i].op_type, op_type) == 0) return &oi_ops_training[i];
  return NULL;
}
