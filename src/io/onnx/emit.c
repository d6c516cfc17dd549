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
  if (n) *s = n->shape;
  else memset(s, 0, sizeof *s);
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
    return oi_needs_value(c, "input %u (%s) must be known at import time (a constant or a bound input value); here "
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
    return oi_needs_value(c, "input %u (%s) must be known at import time (a constant or a bound input value); here "
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

/* Evaluates the op on constant operands; *done = false (no error) when it does not apply. */
static rlx_status try_fold(oi_node *c, rlx_op op, const rlx_id *in, uint32_t n, const void *attrs, bool *done,
                           rlx_id *out) {
  *done = false;
  if (n > FOLD_MAX_OPERANDS || !rlx_const_foldable(op)) return RLX_OK;
  rlx_tensor tin[FOLD_MAX_OPERANDS];
  for (uint32_t i = 0; i < n; i++) {
    const void *d;
    if (!oi_const_value(c, in[i], &d, &tin[i].shape)) return RLX_OK;
    tin[i].data = (void *)d;
  }
  rlx_shape sh;
  if (rlx_infer_shape(c->g, op, in, n, attrs, NULL, &sh) != RLX_OK) return RLX_OK; /* the real add reports it */
  size_t nbytes;
  if (!rlx_shape_is_static(&sh) || rlx_shape_nbytes(&sh, &nbytes) != RLX_OK || nbytes > FOLD_MAX_BYTES) return RLX_OK;
  rlx_attrs a;
  if (attrs) memcpy(&a, attrs, rlx_op_attrs_size(op));
  else rlx_attrs_init(op, &a);
  rlx_node tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.op = op;
  tmp.n_inputs = n;
  tmp.inputs = in;
  tmp.shape = sh;
  tmp.attrs = a;
  const rlx_allocator *al = c->m->al;
  void *buf;
  bool folded;
  RLX_TRY(rlx_const_eval(al, &tmp, tin, n, 0, &folded, &buf, &nbytes));
  if (!folded) return RLX_OK;
  rlx_status st = rlx_constant(c->g, sh, buf, nbytes, out);
  if (st == RLX_OK) *done = true;
  al->free(al->ctx, buf);
  return st;
}

rlx_status oi_emit(oi_node *c, rlx_op op, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out) {
  c->m->emitted++;
  bool done;
  RLX_TRY(try_fold(c, op, in, n, attrs, &done, out));
  if (done) return RLX_OK;
  return rlx_graph_add(c->g, op, in, n, attrs, NULL, NULL, out);
}

rlx_status oi_const(oi_node *c, rlx_shape shape, const void *data, size_t nbytes, rlx_id *out) {
  c->m->emitted++;
  return rlx_constant(c->g, shape, data, nbytes, out);
}

rlx_status oi_fill(oi_node *c, rlx_shape shape, double v, rlx_id *out) {
  size_t nbytes, numel;
  RLX_TRY(rlx_shape_nbytes(&shape, &nbytes));
  RLX_TRY(rlx_shape_numel(&shape, &numel));
  if (nbytes > OI_MAX_CONST_BYTES)
    return oi_unsupported(c, "a constant %s of %zu bytes (the import limit is %zu)", rlx_fmt_shape(&shape), nbytes,
                          (size_t)OI_MAX_CONST_BYTES);
  const rlx_allocator *al = c->m->al;
  uint8_t *buf = al->alloc(al->ctx, nbytes ? nbytes : 1);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "out of memory for a constant of %zu bytes", nbytes);
  rlx_dtype t = (rlx_dtype)shape.dtype;
  if (numel) {
    rlx_elem_set(buf, t, 0, v);
    size_t es = rlx_dtype_size(t);
    for (size_t i = 1; i < numel; i++) memcpy(buf + i * es, buf, es);
  }
  rlx_status s = oi_const(c, shape, buf, nbytes, out);
  al->free(al->ctx, buf);
  return s;
}

rlx_status oi_scalar(oi_node *c, rlx_dtype t, double v, rlx_id *out) { return oi_fill(c, rlx_shape_scalar(t), v, out); }

rlx_status oi_i64s(oi_node *c, const int64_t *v, uint32_t n, rlx_id *out) {
  rlx_dim d = n;
  return oi_const(c, rlx_shape_make(RLX_I64, 1, &d), v, (size_t)n * 8, out);
}

rlx_status oi_unary(oi_node *c, rlx_act act, rlx_id x, rlx_id *out) {
  rlx_attrs_Activation a = {act};
  return oi_emit(c, RLX_OP_Activation, &x, 1, &a, out);
}

rlx_status oi_bin(oi_node *c, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_attrs_Binary at = {op};
  rlx_id in[2] = {a, b};
  return oi_emit(c, RLX_OP_Binary, in, 2, &at, out);
}

rlx_status oi_bin_s(oi_node *c, rlx_binop op, rlx_id a, double v, rlx_id *out) {
  rlx_id s;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, a)->dtype, v, &s));
  return oi_bin(c, op, a, s, out);
}

rlx_status oi_cmp(oi_node *c, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_attrs_Compare at = {op};
  rlx_id in[2] = {a, b};
  return oi_emit(c, RLX_OP_Compare, in, 2, &at, out);
}

rlx_status oi_where(oi_node *c, rlx_id cond, rlx_id a, rlx_id b, rlx_id *out) {
  rlx_id in[3] = {cond, a, b};
  return oi_emit(c, RLX_OP_Where, in, 3, NULL, out);
}

rlx_status oi_cast(oi_node *c, rlx_id x, rlx_dtype t, rlx_id *out) {
  if (oi_shape(c, x)->dtype == t) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Cast a = {t};
  return oi_emit(c, RLX_OP_Cast, &x, 1, &a, out);
}

rlx_status oi_reshape(oi_node *c, rlx_id x, uint32_t rank, const int64_t *dims, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  bool same = s->rank == rank;
  for (uint32_t i = 0; i < rank && same; i++) same = s->dims[i] == dims[i];
  if (same) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Reshape a = {{(int64_t *)dims, rank}};
  return oi_emit(c, RLX_OP_Reshape, &x, 1, &a, out);
}

rlx_status oi_reshape_dims(oi_node *c, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  int64_t d[RLX_MAX_RANK];
  uint32_t sym = 0;
  for (uint32_t i = 0; i < rank; i++) {
    d[i] = rlx_dim_is_static(dims[i]) ? dims[i] : -1;
    sym += !rlx_dim_is_static(dims[i]);
  }
  if (sym > 1)
    return oi_unsupported(c, "reshaping to a shape with %u symbolic dims; bind them (rlx_onnx_options dim bindings or "
                             "input shapes)",
                          sym);
  if (sym == 1) { /* same shape as x: nothing to do */
    const rlx_shape *s = oi_shape(c, x);
    bool same = s->rank == rank;
    for (uint32_t i = 0; i < rank && same; i++) same = s->dims[i] == dims[i];
    if (same) {
      *out = x;
      return RLX_OK;
    }
  }
  return oi_reshape(c, x, rank, d, out);
}

rlx_status oi_transpose(oi_node *c, rlx_id x, const int64_t *perm, rlx_id *out) {
  uint32_t r = oi_shape(c, x)->rank;
  bool id = true;
  for (uint32_t i = 0; i < r && id; i++) id = perm[i] == (int64_t)i;
  if (id) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Transpose a = {{(int64_t *)perm, r}};
  return oi_emit(c, RLX_OP_Transpose, &x, 1, &a, out);
}

rlx_status oi_reduce(oi_node *c, rlx_reduce op, rlx_id x, const int64_t *axes, uint32_t n, bool keep, rlx_id *out) {
  rlx_attrs_Reduce a = {op, {(int64_t *)axes, n}, keep};
  return oi_emit(c, RLX_OP_Reduce, &x, 1, &a, out);
}

rlx_status oi_narrow(oi_node *c, rlx_id x, int64_t axis, int64_t start, int64_t len, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  if (axis >= 0 && axis < s->rank && start == 0 && s->dims[axis] == len) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Narrow a = {axis, start, len};
  return oi_emit(c, RLX_OP_Narrow, &x, 1, &a, out);
}

rlx_status oi_concat(oi_node *c, const rlx_id *xs, uint32_t n, int64_t axis, rlx_id *out) {
  if (n == 1) {
    *out = xs[0];
    return RLX_OK;
  }
  rlx_attrs_Concat a = {axis};
  return oi_emit(c, RLX_OP_Concat, xs, n, &a, out);
}

rlx_status oi_bcast_axis(oi_node *c, rlx_id x, uint32_t rank, uint32_t axis, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  if (s->rank + axis > rank)
    return oi_bad(c, "a parameter of shape %s does not fit at axis %u of a rank-%u tensor", rlx_fmt_shape(s), axis, rank);
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
