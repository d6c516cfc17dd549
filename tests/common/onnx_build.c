/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX model builder for tests (see onnx_build.h). */
#include "onnx_build.h"

#include <stdlib.h>
#include <string.h>

struct ob_model {
  Onnx__ModelProto model;
  Onnx__GraphProto graph;
  Onnx__GraphProto *cur;      /* where inputs, outputs, initializers and nodes go */
  Onnx__GraphProto *outer[8]; /* enclosing graphs of the subgraph being built */
  int depth;
  void **allocs; /* everything allocated for the model */
  size_t n_allocs, cap_allocs;
  uint8_t *packed;
};

static void *ob_alloc(ob_model *m, size_t bytes) {
  if (m->n_allocs == m->cap_allocs) {
    size_t cap = m->cap_allocs ? m->cap_allocs * 2 : 64;
    void **a = realloc(m->allocs, cap * sizeof *a);
    if (!a) abort();
    m->allocs = a;
    m->cap_allocs = cap;
  }
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) abort();
  m->allocs[m->n_allocs++] = p;
  return p;
}

static char *ob_strdup(ob_model *m, const char *s, size_t n) {
  char *d = ob_alloc(m, n + 1);
  memcpy(d, s, n);
  return d;
}

/* Appends one element to a repeated field of pointers (`*arr` holding `*n`). */
static void ob_push(ob_model *m, void ***arr, size_t *n, void *item) {
  void **a = ob_alloc(m, (*n + 1) * sizeof *a);
  if (*n) memcpy(a, *arr, *n * sizeof *a);
  a[(*n)++] = item;
  *arr = a;
}
#define OB_PUSH(m, arr, n, item) ob_push((m), (void ***)&(arr), &(n), (item))

ob_model *ob_model_new(int64_t opset) {
  ob_model *m = calloc(1, sizeof *m);
  if (!m) abort();
  onnx__model_proto__init(&m->model);
  onnx__graph_proto__init(&m->graph);
  m->model.has_ir_version = 1;
  m->model.ir_version = 8;
  m->model.graph = &m->graph;
  m->graph.name = "g";
  m->cur = &m->graph;
  if (opset) ob_opset_import(m, "", opset);
  return m;
}

void ob_opset_import(ob_model *m, const char *domain, int64_t version) {
  Onnx__OperatorSetIdProto *o = ob_alloc(m, sizeof *o);
  onnx__operator_set_id_proto__init(o);
  o->domain = ob_strdup(m, domain, strlen(domain));
  o->has_version = 1;
  o->version = version;
  OB_PUSH(m, m->model.opset_import, m->model.n_opset_import, o);
}

void ob_begin_graph(ob_model *m, const char *name) {
  if (m->depth == (int)(sizeof m->outer / sizeof m->outer[0])) abort(); /* a broken test */
  Onnx__GraphProto *g = ob_alloc(m, sizeof *g);
  onnx__graph_proto__init(g);
  g->name = ob_strdup(m, name, strlen(name));
  m->outer[m->depth++] = m->cur;
  m->cur = g;
}

Onnx__GraphProto *ob_end_graph(ob_model *m) {
  if (!m->depth) abort(); /* a broken test */
  Onnx__GraphProto *g = m->cur;
  m->cur = m->outer[--m->depth];
  return g;
}

void ob_model_free(ob_model *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_allocs; i++) free(m->allocs[i]);
  free(m->allocs);
  free(m->packed);
  free(m);
}

static Onnx__ValueInfoProto *ob_value(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims) {
  Onnx__ValueInfoProto *v = ob_alloc(m, sizeof *v);
  Onnx__TypeProto *tp = ob_alloc(m, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = ob_alloc(m, sizeof *tt);
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  v->name = ob_strdup(m, name, strlen(name));
  v->type = tp;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  if (rank >= 0) {
    Onnx__TensorShapeProto *sh = ob_alloc(m, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < rank; i++) {
      Onnx__TensorShapeProto__Dimension *d = ob_alloc(m, sizeof *d);
      onnx__tensor_shape_proto__dimension__init(d);
      if (dims[i] >= 0) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = dims[i];
      } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = ob_strdup(m, dims[i] == -1 ? "N" : "M", 1);
      }
      OB_PUSH(m, sh->dim, sh->n_dim, d);
    }
    tt->shape = sh;
  }
  return v;
}

void ob_input(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims) {
  OB_PUSH(m, m->cur->input, m->cur->n_input, ob_value(m, name, elem, rank, dims));
}

void ob_output(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims) {
  OB_PUSH(m, m->cur->output, m->cur->n_output, ob_value(m, name, elem, rank, dims));
}

/* An initializer of the current graph with its name, type and dims; the data is the caller's. */
static Onnx__TensorProto *ob_tensor(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims) {
  Onnx__TensorProto *t = ob_alloc(m, sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = ob_strdup(m, name, strlen(name));
  t->has_data_type = 1;
  t->data_type = elem;
  t->n_dims = (size_t)rank;
  t->dims = ob_alloc(m, (size_t)rank * sizeof *t->dims);
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *t->dims);
  OB_PUSH(m, m->cur->initializer, m->cur->n_initializer, t);
  return t;
}

void ob_initializer(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims, const void *raw,
                    size_t nbytes) {
  Onnx__TensorProto *t = ob_tensor(m, name, elem, rank, dims);
  t->has_raw_data = 1;
  t->raw_data.len = nbytes;
  t->raw_data.data = ob_alloc(m, nbytes);
  if (nbytes) memcpy(t->raw_data.data, raw, nbytes);
}

void ob_initializer_i64(ob_model *m, const char *name, int rank, const int64_t *dims, const int64_t *v) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  Onnx__TensorProto *t = ob_tensor(m, name, OB_INT64, rank, dims);
  t->n_int64_data = n;
  t->int64_data = ob_alloc(m, n * sizeof *t->int64_data);
  if (n) memcpy(t->int64_data, v, n * sizeof *t->int64_data);
}

static void ob_names(ob_model *m, const char *list, char ***arr, size_t *n) {
  if (!list) return;
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    OB_PUSH(m, *arr, *n, ob_strdup(m, p, len));
    if (!e) break;
    p = e + 1;
  }
}

void ob_outputs_untyped(ob_model *m, const char *names) {
  char **list = NULL;
  size_t n = 0;
  ob_names(m, names, &list, &n);
  for (size_t i = 0; i < n; i++) {
    Onnx__ValueInfoProto *v = ob_alloc(m, sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = list[i];
    OB_PUSH(m, m->cur->output, m->cur->n_output, v);
  }
}

Onnx__NodeProto *ob_node_in(ob_model *m, const char *domain, const char *op, const char *inputs, const char *outputs) {
  Onnx__NodeProto *n = ob_alloc(m, sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = ob_strdup(m, op, strlen(op));
  if (domain) n->domain = ob_strdup(m, domain, strlen(domain));
  ob_names(m, inputs, &n->input, &n->n_input);
  ob_names(m, outputs, &n->output, &n->n_output);
  OB_PUSH(m, m->cur->node, m->cur->n_node, n);
  return n;
}

Onnx__NodeProto *ob_node(ob_model *m, const char *op, const char *inputs, const char *outputs) {
  return ob_node_in(m, NULL, op, inputs, outputs);
}

static Onnx__AttributeProto *ob_attr(ob_model *m, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = ob_alloc(m, sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = ob_strdup(m, name, strlen(name));
  a->has_type = 1;
  a->type = type;
  OB_PUSH(m, n->attribute, n->n_attribute, a);
  return a;
}

void ob_attr_int(ob_model *m, Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}

void ob_attr_float(ob_model *m, Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}

void ob_attr_string(ob_model *m, Onnx__NodeProto *n, const char *name, const char *v) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.len = strlen(v);
  a->s.data = (uint8_t *)ob_strdup(m, v, a->s.len);
}

void ob_attr_ints(ob_model *m, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t count) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = count;
  a->ints = ob_alloc(m, count * sizeof *a->ints);
  if (count) memcpy(a->ints, v, count * sizeof *a->ints);
}

void ob_attr_floats(ob_model *m, Onnx__NodeProto *n, const char *name, const float *v, size_t count) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->n_floats = count;
  a->floats = ob_alloc(m, count * sizeof *a->floats);
  if (count) memcpy(a->floats, v, count * sizeof *a->floats);
}

void ob_attr_strings(ob_model *m, Onnx__NodeProto *n, const char *name, const char *const *v, size_t count) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  a->n_strings = count;
  a->strings = ob_alloc(m, count * sizeof *a->strings);
  for (size_t i = 0; i < count; i++) {
    a->strings[i].len = strlen(v[i]);
    a->strings[i].data = (uint8_t *)ob_strdup(m, v[i], a->strings[i].len);
  }
}

void ob_attr_graph(ob_model *m, Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g) {
  Onnx__AttributeProto *a = ob_attr(m, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = g;
}

const uint8_t *ob_pack(ob_model *m, size_t *len) {
  free(m->packed);
  size_t n = onnx__model_proto__get_packed_size(&m->model);
  m->packed = malloc(n ? n : 1);
  if (!m->packed) abort();
  *len = onnx__model_proto__pack(&m->model, m->packed);
  return m->packed;
}
