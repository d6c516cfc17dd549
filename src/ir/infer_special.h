/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Small helpers shared by the shape rules of the special op families (quant, synth, recurrent,
 * control, splat, custom, signal, spd). Private to src/ir/infer_*.c.
 *
 * Symbolic dimensions: two dims "conflict" only when both are static and different (a symbol may
 * still be bound to the other value; re-inference after binding catches real mismatches). A dim
 * computed arithmetically from a symbolic one cannot be expressed, so rules write SP_UNKNOWN and
 * sp_resolve() takes that dim from the declared shape, or fails asking for one. */
#ifndef RLX_INFER_SPECIAL_H
#define RLX_INFER_SPECIAL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer_checked.h"
#include "ir_internal.h"

#define SP_UNKNOWN INT64_MIN

static inline bool sp_static(rlx_dim d) { return d >= 0; }
static inline bool sp_conflict(rlx_dim a, rlx_dim b) { return a >= 0 && b >= 0 && a != b; }
/* The more informative of two agreeing dims (a static one wins over a symbol). */
static inline rlx_dim sp_pick(rlx_dim a, rlx_dim b) { return a >= 0 ? a : b; }

static inline const char *sp_dt(const rlx_shape *s) { return rlx_dtype_name((rlx_dtype)s->dtype); }

/* "12" or "?0", from a small rotating buffer (error messages only). */
static inline const char *sp_dim(rlx_dim d) {
  static _Thread_local char bufs[8][32];
  static _Thread_local unsigned k;
  char *b = bufs[k++ & 7];
  if (d >= 0)
    snprintf(b, sizeof bufs[0], "%lld", (long long)d);
  else if (d == SP_UNKNOWN)
    snprintf(b, sizeof bufs[0], "?");
  else
    snprintf(b, sizeof bufs[0], "?%u", rlx_dim_symbol(d));
  return b;
}

static inline rlx_status sp_overflow(const char *what) {
  return rlx_errorf(RLX_ERR_OVERFLOW, "%s overflows a 64-bit dimension", what);
}

/* Checked dim arithmetic; a symbolic or unknown operand gives SP_UNKNOWN. */
static inline rlx_status sp_mul(rlx_dim a, rlx_dim b, rlx_dim *out) {
  if (a < 0 || b < 0) {
    *out = SP_UNKNOWN;
    return RLX_OK;
  }
  return ck_mul_or(a, b, out, "output size");
}
static inline rlx_status sp_add(rlx_dim a, rlx_dim b, rlx_dim *out) {
  if (a < 0 || b < 0) {
    *out = SP_UNKNOWN;
    return RLX_OK;
  }
  return ck_add_or(a, b, out, "output size");
}

/* Element count of a shape: *n = -1 when a dim is symbolic; overflow is an error. */
static inline rlx_status sp_numel(const rlx_shape *s, int64_t *n) {
  int64_t r = 1;
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) {
      *n = -1;
      return RLX_OK;
    }
    if (!ck_mul(r, s->dims[i], &r)) return sp_overflow("element count");
  }
  *n = r;
  return RLX_OK;
}

/* Shapes agree: scalar-compatible, or same dtype and rank with no conflicting dims. */
static inline bool sp_agree(const rlx_shape *a, const rlx_shape *b) {
  if (rlx_shape_compatible(a, b)) return true;
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (uint32_t i = 0; i < a->rank; i++)
    if (sp_conflict(a->dims[i], b->dims[i])) return false;
  return true;
}
/* Same as sp_agree but ignoring dtype (gradients and tangents). */
static inline bool sp_agree_dims(const rlx_shape *a, const rlx_shape *b) {
  rlx_shape t = *b;
  t.dtype = a->dtype;
  return sp_agree(a, &t);
}

static inline rlx_shape sp_make(rlx_dtype t, uint32_t rank, const rlx_dim *dims) {
  return rlx_shape_make(t, rank, dims);
}

/* Replaces SP_UNKNOWN dims of `out` by the declared shape's (which must have out's rank). */
static inline rlx_status sp_resolve(const rlx_infer_ctx *c, rlx_shape *out) {
  for (uint32_t i = 0; i < out->rank; i++) {
    if (out->dims[i] != SP_UNKNOWN) continue;
    if (!c->declared || c->declared->rank != out->rank)
      return rlx_shape_error("output axis %u of %s depends on a symbolic dimension; give the output "
                             "shape explicitly (rank %u)",
                             i, rlx_op_name(c->op), out->rank);
    out->dims[i] = c->declared->dims[i];
  }
  return RLX_OK;
}

/* ---- operand checks; `role` names the operand in messages ("operand 1 (w)") ---- */
static inline rlx_status sp_arity(const rlx_infer_ctx *c, uint32_t n, const char *why) {
  return rlx_need_inputs(c, n, why);
}
static inline rlx_status sp_rank(const rlx_infer_ctx *c, uint32_t i, const char *role, uint32_t rank) {
  if (c->in[i]->rank != rank)
    return rlx_shape_error("operand %u (%s) has shape %s; expected rank %u", i, role, rlx_fmt_shape(c->in[i]), rank);
  return RLX_OK;
}
static inline rlx_status sp_min_rank(const rlx_infer_ctx *c, uint32_t i, const char *role, uint32_t rank) {
  if (c->in[i]->rank < rank)
    return rlx_shape_error("operand %u (%s) has shape %s; expected rank >= %u", i, role, rlx_fmt_shape(c->in[i]), rank);
  return RLX_OK;
}
static inline rlx_status sp_float(const rlx_infer_ctx *c, uint32_t i, const char *role) {
  if (!rlx_dtype_is_float((rlx_dtype)c->in[i]->dtype))
    return rlx_shape_error("operand %u (%s) has dtype %s; expected a floating-point dtype", i, role, sp_dt(c->in[i]));
  return RLX_OK;
}
static inline rlx_status sp_dtype(const rlx_infer_ctx *c, uint32_t i, const char *role, rlx_dtype t) {
  if (c->in[i]->dtype != t)
    return rlx_shape_error("operand %u (%s) has dtype %s; expected %s", i, role, sp_dt(c->in[i]), rlx_dtype_name(t));
  return RLX_OK;
}
static inline rlx_status sp_same_dtype(const rlx_infer_ctx *c, uint32_t i, const char *role, uint32_t j) {
  if (c->in[i]->dtype != c->in[j]->dtype)
    return rlx_shape_error("operand %u (%s) has dtype %s; expected %s like operand %u", i, role, sp_dt(c->in[i]),
                           sp_dt(c->in[j]), j);
  return RLX_OK;
}
/* Operand i's axis `ax` must agree with `want`; `what` explains where `want` comes from. */
static inline rlx_status sp_dim_eq(const rlx_infer_ctx *c, uint32_t i, const char *role, uint32_t ax, rlx_dim want,
                                   const char *what) {
  if (sp_conflict(c->in[i]->dims[ax], want))
    return rlx_shape_error("operand %u (%s) has shape %s; axis %u must be %s (%s)", i, role, rlx_fmt_shape(c->in[i]),
                           ax, sp_dim(want), what);
  return RLX_OK;
}
/* Operand i must agree with shape `want` (dtype included). */
static inline rlx_status sp_shape_eq(const rlx_infer_ctx *c, uint32_t i, const char *role, const rlx_shape *want,
                                     const char *what) {
  if (!sp_agree(c->in[i], want))
    return rlx_shape_error("operand %u (%s) has shape %s; expected %s (%s)", i, role, rlx_fmt_shape(c->in[i]),
                           rlx_fmt_shape(want), what);
  return RLX_OK;
}
/* Operand i must hold exactly `want` elements (any rank), when both are known. */
static inline rlx_status sp_count_eq(const rlx_infer_ctx *c, uint32_t i, const char *role, int64_t want,
                                     const char *what) {
  int64_t n = 0;
  RLX_TRY(sp_numel(c->in[i], &n));
  if (n >= 0 && want >= 0 && n != want)
    return rlx_shape_error("operand %u (%s) has shape %s (%lld elements); expected %lld elements (%s)", i, role,
                           rlx_fmt_shape(c->in[i]), (long long)n, (long long)want, what);
  return RLX_OK;
}
static inline bool sp_finite(float v) { return isfinite(v); }

/* "[2, ?0, ?]" for a dim list (error messages only; rotating buffer). */
static inline const char *sp_fmt_dims(uint32_t rank, const rlx_dim *d) {
  static _Thread_local char bufs[4][200];
  static _Thread_local unsigned k;
  char *b = bufs[k++ & 3];
  size_t used = 0;
  b[0] = 0;
  for (uint32_t i = 0; i < rank && used < sizeof bufs[0]; i++) {
    int w = snprintf(b + used, sizeof bufs[0] - used, "%s%s", i ? ", " : "[", sp_dim(d[i]));
    if (w < 0) break;
    used += (size_t)w;
  }
  if (used < sizeof bufs[0]) snprintf(b + used, sizeof bufs[0] - used, "%s", rank ? "]" : "[]");
  return b;
}

/* Operand i must have rank `rank` and dims agreeing with `want` (SP_UNKNOWN = any); `pattern`
 * names the expected layout, e.g. "[B, S, H]". */
static inline rlx_status sp_expect(const rlx_infer_ctx *c, uint32_t i, const char *role, const char *pattern,
                                   uint32_t rank, const rlx_dim *want) {
  const rlx_shape *s = c->in[i];
  bool ok = s->rank == rank;
  for (uint32_t k = 0; ok && k < rank; k++) ok = !sp_conflict(s->dims[k], want[k]);
  if (!ok)
    return rlx_shape_error("operand %u (%s) has shape %s; expected %s = %s", i, role, rlx_fmt_shape(s), pattern,
                           sp_fmt_dims(rank, want));
  return RLX_OK;
}

/* ---- bodies of control-flow ops and CustomFn ----
 * A body's Input nodes, in node order, bind positionally to outer values; its Params bind by name
 * to the enclosing graph's Params. */
#define SP_MAX_BODY_INPUTS (2 * RLX_INFER_MAX_INPUTS + 2) /* CustomFn jvp: 2n + 1 */

/* The interface of one body: its Input shapes in node order and its outputs. */
typedef struct sp_body {
  const char *attr; /* attribute name, for messages */
  const rlx_graph *g;
  uint32_t n_inputs;
  const rlx_node *inputs[SP_MAX_BODY_INPUTS]; /* the first SP_MAX_BODY_INPUTS Inputs */
  uint32_t n_outputs;
} sp_body;

/* Body Params must exist in the enclosing graph under the same name with an agreeing shape. */
static inline rlx_status sp_body_params(const rlx_infer_ctx *c, const sp_body *v) {
  if (!c->g) return RLX_OK;
  uint32_t n = rlx_graph_node_count(v->g);
  for (uint32_t i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(v->g, i);
    if (nd->op != RLX_OP_Param || !nd->attrs.Param.name) continue;
    const char *name = nd->attrs.Param.name;
    rlx_id outer = rlx_graph_find_leaf(c->g, RLX_OP_Param, name);
    if (outer == RLX_NO_ID)
      return rlx_shape_error("attribute %s: body Param \"%s\" has no Param of that name in the enclosing graph @%s",
                             v->attr, name, rlx_graph_name(c->g));
    const rlx_shape *os = &rlx_graph_node(c->g, outer)->shape;
    if (!sp_agree(&nd->shape, os))
      return rlx_shape_error("attribute %s: body Param \"%s\" has shape %s but the enclosing graph's is %s", v->attr,
                             name, rlx_fmt_shape(&nd->shape), rlx_fmt_shape(os));
  }
  return RLX_OK;
}

static inline rlx_status sp_open_body(const rlx_infer_ctx *c, const char *attr, const rlx_graph *g, sp_body *v) {
  memset(v, 0, sizeof *v);
  v->attr = attr;
  v->g = g;
  if (!g) return rlx_shape_error("attribute %s: body graph missing", attr);
  uint32_t n = rlx_graph_node_count(g);
  for (uint32_t i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    if (nd->op != RLX_OP_Input) continue;
    if (v->n_inputs < SP_MAX_BODY_INPUTS) v->inputs[v->n_inputs] = nd;
    v->n_inputs++;
  }
  v->n_outputs = rlx_graph_output_count(g);
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t k = 0; k < v->n_outputs; k++)
    if (!rlx_graph_node(g, outs[k]))
      return rlx_shape_error("attribute %s: body output %u refers to %%%u, which does not exist", attr, k, outs[k]);
  return sp_body_params(c, v);
}

static inline const rlx_shape *sp_body_out(const sp_body *v, uint32_t k) {
  return &rlx_graph_node(v->g, rlx_graph_outputs(v->g)[k])->shape;
}

static inline rlx_status sp_body_inputs(const sp_body *v, uint32_t n, const char *why) {
  if (v->n_inputs != n)
    return rlx_shape_error("attribute %s: body @%s has %u Input%s; expected %u (%s)", v->attr, rlx_graph_name(v->g),
                           v->n_inputs, v->n_inputs == 1 ? "" : "s", n, why);
  return RLX_OK;
}

static inline rlx_status sp_body_outputs(const sp_body *v, uint32_t n, const char *why) {
  if (v->n_outputs != n)
    return rlx_shape_error("attribute %s: body @%s has %u output%s; expected %u (%s)", v->attr, rlx_graph_name(v->g),
                           v->n_outputs, v->n_outputs == 1 ? "" : "s", n, why);
  return RLX_OK;
}

/* Body Input k must agree with `want` (dims only when `dims_only`). */
static inline rlx_status sp_bind_input(const sp_body *v, uint32_t k, const rlx_shape *want, bool dims_only,
                                       const char *what) {
  if (k >= v->n_inputs || k >= SP_MAX_BODY_INPUTS)
    return rlx_errorf(RLX_ERR_INTERNAL, "attribute %s: body Input %u is out of range", v->attr, k);
  const rlx_shape *s = &v->inputs[k]->shape;
  if (dims_only ? !sp_agree_dims(s, want) : !sp_agree(s, want))
    return rlx_shape_error("attribute %s: body Input %u has shape %s but binds to %s of shape %s", v->attr, k,
                           rlx_fmt_shape(s), what, rlx_fmt_shape(want));
  return RLX_OK;
}

static inline rlx_status sp_check_output(const sp_body *v, uint32_t k, const rlx_shape *want, bool dims_only,
                                         const char *what) {
  const rlx_shape *s = sp_body_out(v, k);
  if (dims_only ? !sp_agree_dims(s, want) : !sp_agree(s, want))
    return rlx_shape_error("attribute %s: body output %u has shape %s; expected %s (%s)", v->attr, k, rlx_fmt_shape(s),
                           rlx_fmt_shape(want), what);
  return RLX_OK;
}

/* Binds body Inputs [0, n) to operands [first, first + n). */
static inline rlx_status sp_bind_operands(const rlx_infer_ctx *c, const sp_body *v, uint32_t first, uint32_t n) {
  char what[32];
  for (uint32_t k = 0; k < n; k++) {
    snprintf(what, sizeof what, "operand %u", first + k);
    RLX_TRY(sp_bind_input(v, k, c->in[first + k], false, what));
  }
  return RLX_OK;
}

#endif
