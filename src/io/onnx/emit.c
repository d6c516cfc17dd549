/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers for the op mappings: attributes, inputs known at import time, and node emission with
 * constant folding (an op whose operands are all Constants is evaluated right away with the CPU
 * reference kernel, so shape computations such as Shape -> Gather -> Concat -> Reshape resolve
 * while importing). */
#include "rlx/verify.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "passes/passes.h"
#include "rlx/build.h"
#include "io/onnx/onnx_internal.h"
#include "core/elem.h"

/* Folded results larger than this stay ops (the compiler's simplify pass may still fold them). */
#define FOLD_MAX_BYTES ((size_t)1 << 20)
#define FOLD_MAX_OPERANDS 8

rlx_status oi_unsupported(oi_node *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->unsupported = true;
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s", c->reason);
}

rlx_status oi_needs_value(oi_node *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->reason, sizeof c->reason, fmt, ap);
  va_end(ap);
  c->unsupported = true;
  c->m->needs_value = true;
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s", c->reason);
}

rlx_status oi_bad(oi_node *c, const char *fmt, ...) {
  (void)c;
  va_list ap;
  va_start(ap, fmt);
  rlx_status s = rlx_verrorf(RLX_ERR_FORMAT, fmt, ap);
  va_end(ap);
  return s;
}

void *oi_scratch(oi_node *c, size_t bytes) {
  if (bytes > OI_MAX_CONST_BYTES) {
    c->scratch_over = bytes;
    return NULL;
  }
  return rlx_arena_alloc(&c->scratch, bytes ? bytes : 1, 16);
}

rlx_status oi_nomem(oi_node *c) {
  if (c->scratch_over)
    return oi_unsupported(c, "a constant or index table of %zu bytes (the import limit is %zu)", c->scratch_over,
                          (size_t)OI_MAX_CONST_BYTES);
  return rlx_errorf(RLX_ERR_OOM, "out of memory");
}

/* ---- attributes ---- */

static const char *attr_type_name(Onnx__AttributeProto__AttributeType t) {
  switch (t) {
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
  default: return "UNDEFINED";
  }
}

const Onnx__AttributeProto *oi_attr(const oi_node *c, const char *name) {
  for (size_t i = 0; i < c->np->n_attribute; i++)
    if (c->np->attribute[i]->name && strcmp(c->np->attribute[i]->name, name) == 0) return c->np->attribute[i];
  return NULL;
}

static rlx_status attr_typed(oi_node *c, const char *name, Onnx__AttributeProto__AttributeType want,
                             const Onnx__AttributeProto **out) {
  *out = oi_attr(c, name);
  if (!*out) return RLX_OK;
  if ((*out)->ref_attr_name && (*out)->ref_attr_name[0])
    return oi_unsupported(c, "attribute %s refers to a function attribute (ref_attr_name)", name);
  Onnx__AttributeProto__AttributeType t = oi_attr_type(*out);
  if (t != want) return oi_bad(c, "attribute %s must be %s, not %s", name, attr_type_name(want), attr_type_name(t));
  return RLX_OK;
}

rlx_status oi_attr_i(oi_node *c, const char *name, int64_t def, int64_t *out) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, &a));
  *out = a ? a->i : def;
  return RLX_OK;
}

rlx_status oi_attr_f(oi_node *c, const char *name, float def, float *out) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, &a));
  *out = a ? a->f : def;
  return RLX_OK;
}

rlx_status oi_attr_s(oi_node *c, const char *name, const char *def, const char **out) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, &a));
  if (!a) {
    *out = def;
    return RLX_OK;
  }
  if (a->s.len && memchr(a->s.data, 0, a->s.len)) return oi_bad(c, "attribute %s contains a NUL byte", name);
  if (a->s.len > RLX_ONNX_MAX_NAME_BYTES) return oi_bad(c, "attribute %s is %zu bytes long", name, a->s.len);
  char *s = oi_scratch(c, a->s.len + 1);
  if (!s) return oi_nomem(c);
  if (a->s.len) memcpy(s, a->s.data, a->s.len);
  s[a->s.len] = 0;
  *out = s;
  return RLX_OK;
}

rlx_status oi_attr_ints(oi_node *c, const char *name, const int64_t **v, size_t *n, bool *present) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, &a));
  if (present) *present = a != NULL;
  *v = a ? a->ints : NULL;
  *n = a ? a->n_ints : 0;
  return RLX_OK;
}

rlx_status oi_attr_floats(oi_node *c, const char *name, const float **v, size_t *n, bool *present) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, &a));
  if (present) *present = a != NULL;
  *v = a ? a->floats : NULL;
  *n = a ? a->n_floats : 0;
  return RLX_OK;
}

rlx_status oi_attr_graph(oi_node *c, const char *name, const Onnx__GraphProto **g) {
  const Onnx__AttributeProto *a;
  RLX_TRY(attr_typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH, &a));
  if (!a || !a->g) return oi_bad(c, "attribute %s (a graph) is missing", name);
  *g = a->g;
  return RLX_OK;
}

/* ---- inputs ---- */

/* Sequence and optional inputs have no RLX id (c->in[k] is RLX_NO_ID) but a value in c->in_val. */
bool oi_has(const oi_node *c, uint32_t k) {
  return k < c->n_in && (c->in[k] != RLX_NO_ID || (c->in_val && c->in_val[k]));
}

/* The node array moves when nodes are added, so shapes are handed out as copies that live in the
 * node's scratch memory (stable until the ONNX node is done). */
const rlx_shape *oi_shape(const oi_node *c, rlx_id id) {
  static _Thread_local rlx_shape fallback[16];
  static _Thread_local unsigned next;
  rlx_shape *s = rlx_arena_alloc((rlx_arena *)&c->scratch, sizeof *s, 8);
  if (!s) s = &fallback[next++ % 16];
  const rlx_node *n = rlx_graph_node(c->g, id);
  if (n)
    *s = n->shape;
  else
    memset(s, 0, sizeof *s);
  return s;
}

const rlx_shape *oi_in_shape(const oi_node *c, uint32_t k) { return oi_shape(c, c->in[k]); }

rlx_status oi_need(oi_node *c, uint32_t k, const char *what) {
  if (oi_has(c, k)) return RLX_OK;
  return oi_bad(c, "input %u (%s) is required", k, what);
}

bool oi_const_value(const oi_node *c, rlx_id id, const void **data, rlx_shape *shape) {
  const rlx_node *n = rlx_graph_node(c->g, id);
  if (!n || n->op != RLX_OP_Constant || !rlx_shape_is_static(&n->shape)) return false;
  *data = n->attrs.Constant.data.p;
  *shape = n->shape;
  return true;
}

bool oi_in_value(const oi_node *c, uint32_t k, const void **data, rlx_shape *shape) {
  if (!oi_has(c, k)) return false;
  if (c->hint[k] && c->hint[k]->data) {
    *data = c->hint[k]->data;
    *shape = c->hint[k]->shape;
    return true;
  }
  return oi_const_value(c, c->in[k], data, shape);
}

rlx_status oi_in_ints(oi_node *c, uint32_t k, const char *what, int64_t **v, size_t *n) {
  const void *data;
  rlx_shape s;
  RLX_TRY(oi_need(c, k, what));
  if (!oi_in_value(c, k, &data, &s))
    return oi_needs_value(c,
                          "input %u (%s) must be known at import time (a constant or a bound input value); here "
                          "it is computed at run time",
                          k, what);
  rlx_dtype t = (rlx_dtype)s.dtype;
  if (!rlx_dtype_is_int(t) && t != RLX_BOOL)
    return oi_bad(c, "input %u (%s) must be an integer tensor, not %s", k, what, rlx_dtype_name(t));
  size_t numel;
  RLX_TRY(rlx_shape_numel(&s, &numel));
  int64_t *out = oi_scratch(c, numel * sizeof *out);
  if (!out) return oi_nomem(c);
  for (size_t i = 0; i < numel; i++) out[i] = rlx_elem_get_i64(data, t, i);
  *v = out;
  *n = numel;
  return RLX_OK;
}

rlx_status oi_in_f64s(oi_node *c, uint32_t k, const char *what, double **v, size_t *n) {
  const void *data;
  rlx_shape s;
  RLX_TRY(oi_need(c, k, what));
  if (!oi_in_value(c, k, &data, &s))
    return oi_needs_value(c,
                          "input %u (%s) must be known at import time (a constant or a bound input value); here "
                          "it is computed at run time",
                          k, what);
  rlx_dtype t = (rlx_dtype)s.dtype;
  if (rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX) return oi_bad(c, "input %u (%s) must be real", k, what);
  size_t numel;
  RLX_TRY(rlx_shape_numel(&s, &numel));
  double *out = oi_scratch(c, numel * sizeof *out);
  if (!out) return oi_nomem(c);
  for (size_t i = 0; i < numel; i++) out[i] = rlx_elem_get(data, t, i);
  *v = out;
  *n = numel;
  return RLX_OK;
}

double oi_elem_f64(const void *data, rlx_dtype t, size_t i) { return rlx_elem_get(data, t, i); }
int64_t oi_elem_i64(const void *data, rlx_dtype t, size_t i) { return rlx_elem_get_i64(data, t, i); }

/* ---- emission ---- */

/* The importer's graphs carry this add hook (oi_set_fold_hook): every node counts towards the
 * work limit, and a pure op on constant operands is evaluated at once by the shared constant
 * evaluator (the values later ops need at import time: shapes, axes, ...). */
static rlx_status fold_hook(void *ctx, rlx_graph *g, const rlx_node *n, bool *done, rlx_id *out) {
  oi_imp *m = ctx;
  m->emitted++;
  if (n->n_inputs == 0 || n->n_inputs > FOLD_MAX_OPERANDS || !rlx_const_foldable(n->op)) return RLX_OK;
  rlx_tensor tin[FOLD_MAX_OPERANDS];
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    const rlx_node *x = rlx_graph_node(g, n->inputs[i]);
    if (!x || x->op != RLX_OP_Constant || !rlx_shape_is_static(&x->shape)) return RLX_OK;
    tin[i].data = x->attrs.Constant.data.p;
    tin[i].shape = x->shape;
  }
  size_t nbytes;
  if (!rlx_shape_is_static(&n->shape) || rlx_shape_nbytes(&n->shape, &nbytes) != RLX_OK || nbytes > FOLD_MAX_BYTES)
    return RLX_OK;
  void *buf;
  bool folded;
  RLX_TRY(rlx_const_eval(m->al, n, tin, n->n_inputs, 0, &folded, &buf, &nbytes));
  if (!folded) return RLX_OK;
  rlx_status st = rlx_constant(g, n->shape, buf, nbytes, out);
  if (st == RLX_OK) *done = true;
  m->al->free(m->al->ctx, buf);
  return st;
}

void oi_set_fold_hook(oi_imp *m, rlx_graph *g) { rlx_graph_set_add_hook(g, fold_hook, m); }

/* The builders below are rlx/build.h's (the hook folds what they add); the oi_* names adapt
 * them to the importer's node context. */
rlx_status oi_emit(oi_node *c, rlx_op op, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out) {
  return rlx_graph_add(c->g, op, in, n, attrs, NULL, NULL, out);
}

rlx_status oi_const(oi_node *c, rlx_shape shape, const void *data, size_t nbytes, rlx_id *out) {
  return rlx_constant(c->g, shape, data, nbytes, out);
}

rlx_status oi_fill(oi_node *c, rlx_shape shape, double v, rlx_id *out) {
  size_t nbytes;
  RLX_TRY(rlx_shape_nbytes(&shape, &nbytes));
  if (nbytes > OI_MAX_CONST_BYTES)
    return oi_unsupported(c, "a constant %s of %zu bytes (the import limit is %zu)", rlx_fmt_shape(&shape), nbytes,
                          (size_t)OI_MAX_CONST_BYTES);
  return rlx_fill(c->g, (rlx_dtype)shape.dtype, shape.rank, shape.dims, v, out);
}

rlx_status oi_scalar(oi_node *c, rlx_dtype t, double v, rlx_id *out) { return rlx_scalar(c->g, t, v, out); }

rlx_status oi_i64s(oi_node *c, const int64_t *v, uint32_t n, rlx_id *out) { return rlx_i64s(c->g, n, v, out); }

rlx_status oi_unary(oi_node *c, rlx_act act, rlx_id x, rlx_id *out) { return rlx_activation(c->g, act, x, out); }

rlx_status oi_bin(oi_node *c, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(c->g, op, a, b, out); }

rlx_status oi_bin_s(oi_node *c, rlx_binop op, rlx_id a, double v, rlx_id *out) {
  return rlx_binary_scalar(c->g, op, a, v, out);
}

rlx_status oi_cmp(oi_node *c, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) { return rlx_compare(c->g, op, a, b, out); }

rlx_status oi_where(oi_node *c, rlx_id cond, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_where(c->g, cond, a, b, out);
}

rlx_status oi_cast(oi_node *c, rlx_id x, rlx_dtype t, rlx_id *out) { return rlx_cast_to(c->g, x, t, out); }

rlx_status oi_reshape(oi_node *c, rlx_id x, uint32_t rank, const int64_t *dims, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  bool same = s->rank == rank;
  for (uint32_t i = 0; i < rank && same; i++) same = s->dims[i] == dims[i];
  if (same) {
    *out = x;
    return RLX_OK;
  }
  return rlx_reshape(c->g, x, rank, dims, out);
}

rlx_status oi_reshape_dims(oi_node *c, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  uint32_t sym = 0;
  for (uint32_t i = 0; i < rank; i++) sym += !rlx_dim_is_static(dims[i]);
  if (sym > 1)
    return oi_unsupported(c,
                          "reshaping to a shape with %u symbolic dims; bind them (rlx_onnx_options dim bindings or "
                          "input shapes)",
                          sym);
  return rlx_reshape_dims(c->g, x, rank, dims, out);
}

rlx_status oi_transpose(oi_node *c, rlx_id x, const int64_t *perm, rlx_id *out) {
  return rlx_permute(c->g, x, oi_shape(c, x)->rank, perm, out);
}

rlx_status oi_reduce(oi_node *c, rlx_reduce op, rlx_id x, const int64_t *axes, uint32_t n, bool keep, rlx_id *out) {
  return rlx_reduce_axes(c->g, op, x, n, axes, keep, out);
}

/* ONNX axes may be negative: normalised here against the operand's rank. */
rlx_status oi_narrow(oi_node *c, rlx_id x, int64_t axis, int64_t start, int64_t len, rlx_id *out) {
  uint32_t rank = oi_shape(c, x)->rank, ax;
  RLX_TRY(oi_axis(c, axis, rank, "narrow axis", &ax));
  return rlx_narrow(c->g, x, ax, start, len, out);
}

rlx_status oi_concat(oi_node *c, const rlx_id *xs, uint32_t n, int64_t axis, rlx_id *out) {
  uint32_t rank = oi_shape(c, xs[0])->rank, ax;
  RLX_TRY(oi_axis(c, axis, rank, "concat axis", &ax));
  return rlx_concat(c->g, xs, n, ax, out);
}

rlx_status oi_bcast_axis(oi_node *c, rlx_id x, uint32_t rank, uint32_t axis, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  if (s->rank + axis > rank)
    return oi_bad(c, "a parameter of shape %s does not fit at axis %u of a rank-%u tensor", rlx_fmt_shape(s), axis,
                  rank);
  int64_t dims[RLX_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++) dims[i] = 1;
  for (uint32_t i = 0; i < s->rank; i++) dims[axis + i] = s->dims[i];
  return oi_reshape(c, x, rank, dims, out);
}

rlx_status oi_wrap_index(oi_node *c, rlx_id idx, int64_t extent, rlx_id *out) {
  rlx_dtype t = (rlx_dtype)oi_shape(c, idx)->dtype;
  if (!rlx_dtype_is_signed_int(t)) {
    *out = idx;
    return RLX_OK;
  }
  rlx_id zero, neg, shifted;
  RLX_TRY(oi_scalar(c, t, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, idx, zero, &neg));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, idx, (double)extent, &shifted));
  return oi_where(c, neg, shifted, idx, out);
}

rlx_status oi_axis(oi_node *c, int64_t axis, uint32_t rank, const char *what, uint32_t *out) {
  if (!rlx_norm_axis(axis, rank, out))
    return oi_bad(c, "%s %lld is out of range for a rank-%u input (expected %d..%d)", what, (long long)axis, rank,
                  -(int)rank, rank ? (int)rank - 1 : 0);
  return RLX_OK;
}

rlx_status oi_need_static(oi_node *c, const rlx_shape *s, const char *what) {
  if (rlx_shape_is_static(s)) return RLX_OK;
  return oi_unsupported(c, "%s has symbolic dims %s; bind them (rlx_onnx_options dim bindings or input shapes)", what,
                        rlx_fmt_shape(s));
}
