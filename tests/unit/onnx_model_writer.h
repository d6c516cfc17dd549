/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A tiny protobuf writer for ONNX test models (ModelProto, GraphProto, NodeProto, TypeProto
 * including sequence and optional types, TensorProto, SequenceProto), so importer tests build
 * their inputs without protobuf tooling and can write what a protobuf library would refuse
 * (truncated messages, wrong wire types, stray fields: mw_tag, mw_varint and mw_put write raw
 * pieces). Field numbers follow onnx.proto / onnx-data.proto. Models that are well-formed can
 * also be built with tests/common/onnx_build.h (protobuf-c). Header-only: every function is
 * static inline. */
#ifndef RLX_ONNX_MODEL_WRITER_H
#define RLX_ONNX_MODEL_WRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_run.h"

typedef struct mw_buf {
  uint8_t *p;
  size_t n, cap;
} mw_buf;

static inline void mw_put(mw_buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = (b->cap + n) * 2 + 64;
    uint8_t *q = realloc(b->p, cap);
    if (!q) abort();
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}
static inline void mw_varint(mw_buf *b, uint64_t v) {
  for (;;) {
    uint8_t byte = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (!v) {
      mw_put(b, &byte, 1);
      return;
    }
    byte |= 0x80;
    mw_put(b, &byte, 1);
  }
}
/* A field key: field number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
static inline void mw_tag(mw_buf *b, unsigned field, unsigned wire) { mw_varint(b, ((uint64_t)field << 3) | wire); }
static inline void mw_int(mw_buf *b, unsigned field, int64_t v) {
  mw_tag(b, field, 0);
  mw_varint(b, (uint64_t)v);
}
static inline void mw_float(mw_buf *b, unsigned field, float v) {
  mw_tag(b, field, 5);
  mw_put(b, &v, 4);
}
static inline void mw_bytes(mw_buf *b, unsigned field, const void *d, size_t n) {
  mw_tag(b, field, 2);
  mw_varint(b, n);
  mw_put(b, d, n);
}
static inline void mw_str(mw_buf *b, unsigned field, const char *s) { mw_bytes(b, field, s, strlen(s)); }
/* Appends message m as field `field` of b and releases m. */
static inline void mw_msg(mw_buf *b, unsigned field, mw_buf *m) {
  mw_bytes(b, field, m->p, m->n);
  free(m->p);
  memset(m, 0, sizeof *m);
}
static inline void mw_free(mw_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* TensorProto.DataType values */
enum { MW_F32 = 1, MW_U8 = 2, MW_I8 = 3, MW_U16 = 4, MW_I32 = 6, MW_I64 = 7, MW_STR = 8, MW_BOOL = 9, MW_F64 = 11 };

/* TypeProto of a tensor of `rank` dims (rank < 0: no shape); a negative dim is the symbolic dim
 * "N" (-1) or "M" (other negative values). */
static inline mw_buf mw_tensor_type(int elem, int rank, const int64_t *dims) {
  mw_buf t = {0}, tt = {0}, shape = {0};
  mw_int(&tt, 1, elem);
  for (int i = 0; i < rank; i++) {
    mw_buf d = {0};
    if (dims[i] >= 0)
      mw_int(&d, 1, dims[i]);
    else
      mw_str(&d, 2, dims[i] == -1 ? "N" : "M");
    mw_msg(&shape, 1, &d);
  }
  if (rank >= 0) mw_msg(&tt, 2, &shape);
  mw_msg(&t, 1, &tt);
  return t;
}
/* TypeProto of a sequence (field 4) or an optional (field 9) of `elem_type`. */
static inline mw_buf mw_wrap_type(unsigned field, mw_buf elem_type) {
  mw_buf t = {0}, w = {0};
  mw_msg(&w, 1, &elem_type);
  mw_msg(&t, field, &w);
  return t;
}
static inline mw_buf mw_seq_type(mw_buf elem_type) { return mw_wrap_type(4, elem_type); }
static inline mw_buf mw_opt_type(mw_buf elem_type) { return mw_wrap_type(9, elem_type); }

/* ValueInfoProto; an empty type (no bytes) leaves the type out. */
static inline mw_buf mw_value(const char *name, mw_buf type) {
  mw_buf v = {0};
  mw_str(&v, 1, name);
  if (type.n)
    mw_msg(&v, 2, &type);
  else
    mw_free(&type);
  return v;
}
static inline mw_buf mw_untyped(void) { return (mw_buf){0}; }
/* ValueInfoProto of a tensor (mw_tensor_type). */
static inline mw_buf mw_tensor_value(const char *name, int elem, int rank, const int64_t *dims) {
  return mw_value(name, mw_tensor_type(elem, rank, dims));
}

/* TensorProto with raw data. */
static inline mw_buf mw_tensor(const char *name, int dt, int rank, const int64_t *dims, const void *raw, size_t nb) {
  mw_buf t = {0};
  for (int i = 0; i < rank; i++) mw_int(&t, 1, dims[i]);
  mw_int(&t, 2, dt);
  if (name) mw_str(&t, 8, name);
  mw_bytes(&t, 9, raw, nb);
  return t;
}
/* SequenceProto of tensors (elem_type 1 = tensor); consumes the tensors. */
static inline mw_buf mw_sequence(const char *name, mw_buf *tensors, int n) {
  mw_buf s = {0};
  if (name) mw_str(&s, 1, name);
  mw_int(&s, 2, 1);
  for (int i = 0; i < n; i++) mw_msg(&s, 3, &tensors[i]);
  return s;
}

/* Attributes (AttributeProto.type: 1 float, 2 int, 3 string, 4 tensor, 5 graph, 7 ints,
 * 13 type_proto). */
static inline mw_buf mw_attr_int(const char *name, int64_t v) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_int(&a, 3, v);
  mw_int(&a, 20, 2);
  return a;
}
static inline mw_buf mw_attr_ints(const char *name, int n, const int64_t *v) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  for (int i = 0; i < n; i++) mw_int(&a, 8, v[i]);
  mw_int(&a, 20, 7);
  return a;
}
static inline mw_buf mw_attr_float(const char *name, float v) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_float(&a, 2, v);
  mw_int(&a, 20, 1);
  return a;
}
static inline mw_buf mw_attr_str(const char *name, const char *s) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_str(&a, 4, s);
  mw_int(&a, 20, 3);
  return a;
}
static inline mw_buf mw_attr_graph(const char *name, mw_buf g) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_msg(&a, 6, &g);
  mw_int(&a, 20, 5);
  return a;
}
static inline mw_buf mw_attr_tensor(const char *name, mw_buf t) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_msg(&a, 5, &t);
  mw_int(&a, 20, 4);
  return a;
}
static inline mw_buf mw_attr_type(const char *name, mw_buf tp) {
  mw_buf a = {0};
  mw_str(&a, 1, name);
  mw_msg(&a, 14, &tp);
  mw_int(&a, 20, 13);
  return a;
}

/* Comma-separated names; empty entries stand for omitted optional inputs. */
static inline void mw_names(mw_buf *b, unsigned field, const char *list) {
  if (!list) return;
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    mw_bytes(b, field, p, n);
    if (!e) return;
    p = e + 1;
  }
}
/* NodeProto named `name` (NULL: unnamed); consumes the attributes. */
static inline mw_buf mw_node_named(const char *name, const char *op, const char *ins, const char *outs, mw_buf *attrs,
                                   int na) {
  mw_buf n = {0};
  mw_names(&n, 1, ins);
  mw_names(&n, 2, outs);
  if (name) mw_str(&n, 3, name);
  mw_str(&n, 4, op);
  for (int i = 0; i < na; i++) mw_msg(&n, 5, &attrs[i]);
  return n;
}
static inline mw_buf mw_node(const char *op, const char *ins, const char *outs, mw_buf *attrs, int na) {
  return mw_node_named(NULL, op, ins, outs, attrs, na);
}
/* A Constant node holding a 1-element or scalar int64. */
static inline mw_buf mw_const_i64(const char *out, int64_t v, int rank) {
  int64_t one = 1;
  mw_buf t = mw_tensor(NULL, MW_I64, rank, &one, &v, 8);
  mw_buf a = mw_attr_tensor("value", t);
  return mw_node("Constant", NULL, out, &a, 1);
}

/* GraphProto with initializers (TensorProtos); consumes the parts. */
static inline mw_buf mw_graph_inits(const char *name, mw_buf *nodes, int nn, mw_buf *inits, int ni, mw_buf *ins,
                                    int nin, mw_buf *outs, int nout) {
  mw_buf g = {0};
  for (int i = 0; i < nn; i++) mw_msg(&g, 1, &nodes[i]);
  mw_str(&g, 2, name);
  for (int i = 0; i < ni; i++) mw_msg(&g, 5, &inits[i]);
  for (int i = 0; i < nin; i++) mw_msg(&g, 11, &ins[i]);
  for (int i = 0; i < nout; i++) mw_msg(&g, 12, &outs[i]);
  return g;
}
static inline mw_buf mw_graph(const char *name, mw_buf *nodes, int nn, mw_buf *ins, int nin, mw_buf *outs, int nout) {
  return mw_graph_inits(name, nodes, nn, NULL, 0, ins, nin, outs, nout);
}
static inline mw_buf mw_model(int opset, mw_buf g) {
  mw_buf m = {0}, o = {0};
  mw_int(&m, 1, 8);
  mw_str(&o, 1, "");
  mw_int(&o, 2, opset);
  mw_msg(&m, 8, &o);
  mw_msg(&m, 7, &g);
  return m;
}

/* Imports / runs a written model through tests/common/onnx_run.h. */
static inline rlx_status mw_import(const mw_buf *m, const rlx_onnx_options *o, rlx_graph **g) {
  return onnx_import(m->p, m->n, o, g);
}
static inline bool mw_run(const mw_buf *m, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n,
                          runner *r) {
  return run_bytes(m->p, m->n, o, ins, n, r);
}

#define MW_ARR(...) ((mw_buf[]){__VA_ARGS__})
#define MW_N(...) ((int)(sizeof((mw_buf[]){__VA_ARGS__}) / sizeof(mw_buf)))

#endif
