/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Test helper: ONNX models built with the protobuf-c structs generated from onnx.proto and packed
 * into bytes for rlx_onnx_import_bytes. Every allocation belongs to the builder and is released by
 * ob_model_free; out of memory aborts (tests only). */
#ifndef RLX_TEST_ONNX_BUILD_H
#define RLX_TEST_ONNX_BUILD_H

#include <onnx/onnx.pb-c.h>
#include <stddef.h>
#include <stdint.h>

/* ONNX TensorProto.DataType values used by the tests. */
enum {
  OB_FLOAT = 1,
  OB_UINT8 = 2,
  OB_INT8 = 3,
  OB_INT32 = 6,
  OB_INT64 = 7,
  OB_STRING = 8,
  OB_BOOL = 9,
  OB_DOUBLE = 11,
  OB_COMPLEX64 = 14
};

typedef struct ob_model ob_model;

/* A model importing the default domain at `opset` (0: not at all), with an empty main graph. */
ob_model *ob_model_new(int64_t opset);
void ob_model_free(ob_model *m);
/* One more opset_import entry: `domain` at `version`. */
void ob_opset_import(ob_model *m, const char *domain, int64_t version);
/* Graph inputs / outputs of tensor type; rank < 0 leaves the shape out; -1 is the symbolic dim
 * "N", any other negative dim "M". */
void ob_input(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims);
void ob_output(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims);
/* Graph outputs without a type: comma-separated names. */
void ob_outputs_untyped(ob_model *m, const char *names);
/* An initializer holding `nbytes` of little-endian raw data. */
void ob_initializer(ob_model *m, const char *name, int32_t elem, int rank, const int64_t *dims, const void *raw,
                    size_t nbytes);
/* An int64 initializer holding `dims`' product of values in TensorProto.int64_data. */
void ob_initializer_i64(ob_model *m, const char *name, int rank, const int64_t *dims, const int64_t *v);
/* A node of the default domain; inputs / outputs are comma-separated names (an empty entry is an
 * omitted optional input). */
Onnx__NodeProto *ob_node(ob_model *m, const char *op, const char *inputs, const char *outputs);
/* A node of `domain` (NULL: the default domain). */
Onnx__NodeProto *ob_node_in(ob_model *m, const char *domain, const char *op, const char *inputs, const char *outputs);
void ob_attr_int(ob_model *m, Onnx__NodeProto *n, const char *name, int64_t v);
void ob_attr_float(ob_model *m, Onnx__NodeProto *n, const char *name, float v);
void ob_attr_string(ob_model *m, Onnx__NodeProto *n, const char *name, const char *v);
void ob_attr_ints(ob_model *m, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t count);
void ob_attr_floats(ob_model *m, Onnx__NodeProto *n, const char *name, const float *v, size_t count);
void ob_attr_strings(ob_model *m, Onnx__NodeProto *n, const char *name, const char *const *v, size_t count);
void ob_attr_graph(ob_model *m, Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g);
/* Subgraphs: between ob_begin_graph and ob_end_graph, ob_input, ob_output*, ob_initializer* and
 * ob_node* add to a new graph named `name` (nesting allowed, 8 deep); ob_end_graph returns it
 * for ob_attr_graph and goes back to the enclosing graph. */
void ob_begin_graph(ob_model *m, const char *name);
Onnx__GraphProto *ob_end_graph(ob_model *m);
/* The serialized model (owned by the builder, valid until the next ob_pack or ob_model_free). */
const uint8_t *ob_pack(ob_model *m, size_t *len);

#endif
