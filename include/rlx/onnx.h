/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX import: .onnx (protobuf, parsed by protobuf-c code generated from Debian's onnx.proto) ->
 * RLX graph. One ONNX node may become several RLX nodes. docs/onnx.md lists the supported ops,
 * opsets and the limits applied to untrusted files. */
#ifndef RLX_ONNX_H
#define RLX_ONNX_H

#include "rlx/graph.h"
#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits applied to every model (violations are RLX_ERR_FORMAT naming the field). */
#define RLX_ONNX_MAX_FILE_BYTES ((size_t)1 << 31) /* protobuf's own limit: 2 GiB */
#define RLX_ONNX_MAX_MESSAGE_DEPTH 64             /* nested protobuf messages */
#define RLX_ONNX_MAX_GRAPH_DEPTH 16               /* If/Loop/Scan bodies inside bodies */
#define RLX_ONNX_MAX_NAME_BYTES 4096              /* value, node and op names */

/* Initializer values handed back when importing with initializers_as_constants = false. */
typedef struct rlx_onnx_weights {
  rlx_named_tensor *v; /* names and data allocated with the importer's allocator */
  uint32_t n;
} rlx_onnx_weights;
void rlx_onnx_weights_free(rlx_onnx_weights *w, const rlx_allocator *al);

typedef struct rlx_onnx_options {
  /* Initializers become Constant nodes (true, default) or Params named after the initializer
   * (false); their values then go to *weights when `weights` is not NULL. */
  bool initializers_as_constants;
  rlx_onnx_weights *weights;
  /* Bindings for symbolic input dims (dim_param name -> size). Unbound ones become RLX
   * symbolic dims (which rlx_compile rejects: bind them to run the graph). */
  const char *const *dim_names;
  const int64_t *dim_values;
  uint32_t n_dims;
  /* Known graph inputs. Each shape binds the dim_params of the input of that name and is checked
   * against its static dims. A non-NULL data pointer additionally lets the importer use the
   * input's VALUE where an op needs one at import time (the shape operand of Reshape, Slice's
   * starts, TopK's k, a Loop's trip count ...): the graph is then specialized to that value. */
  const rlx_named_tensor *inputs;
  uint32_t n_inputs;
  /* Sequence and optional graph inputs. RLX graphs hold tensors only, so their lengths must be
   * known at import time: a sequence input NAME of N elements becomes N Inputs named "NAME.0",
   * ..., "NAME.<N-1>" (shapes and values from the `inputs` entries of those names, else from
   * the sequence's element type); a present optional tensor is an Input named NAME; an absent
   * optional has no Input. `seq_names[i]` has `seq_lengths[i]` elements (RLX_ONNX_ABSENT: an
   * empty optional; an optional tensor that is present: any length >= 0). Without an entry, a
   * sequence input's length is the number of consecutive NAME.0, NAME.1, ... entries in
   * `inputs` (at least one); an optional input is present when `inputs` holds NAME or NAME.0.
   * Sequence graph outputs are returned the same way: N outputs "NAME.0" ... "NAME.<N-1>" (none
   * for an empty sequence or an absent optional; NAME for a present optional tensor). */
  const char *const *seq_names;
  const int64_t *seq_lengths;
  uint32_t n_seqs;
} rlx_onnx_options;
#define RLX_ONNX_ABSENT (-1) /* seq_lengths entry of an empty optional */
void rlx_onnx_options_init(rlx_onnx_options *o);

/* Imports a model file. External data is resolved relative to the model's folder with path
 * containment (relative paths only, no "..", the real path must stay inside the folder, regular
 * files with one link only, a file extension from docs/onnx.md's allow-list or none,
 * offset/length checked against the file). On failure the message
 * names the node (name + op_type) and field; RLX_ERR_UNSUPPORTED lists EVERY unsupported
 * op/opset/dtype of the model at once. */
rlx_status rlx_onnx_import_file(const char *path, const rlx_onnx_options *opt, const rlx_allocator *al,
                                rlx_graph **out);
/* Same from memory; `base_dir` (may be NULL: then external data is an error) is the folder
 * external data paths are relative to. */
rlx_status rlx_onnx_import_bytes(const uint8_t *data, size_t len, const char *base_dir, const rlx_onnx_options *opt,
                                 const rlx_allocator *al, rlx_graph **out);

/* Lists every unsupported op / opset / dtype of a model (one per line, grouped by op and
 * reason, with the node names) without keeping the graph. *n_gaps = 0 means the model is fully
 * supported. `opt` may be NULL (defaults). The string is allocated with `al` (NULL = default).
 * Malformed models fail as in rlx_onnx_import_file. */
rlx_status rlx_onnx_report(const char *path, const rlx_onnx_options *opt, const rlx_allocator *al, char **out,
                           size_t *len, uint32_t *n_gaps);

/* ONNX TensorProto files (input_K.pb / output_K.pb of the ONNX test suite): one tensor
 * with raw or typed data. out->data is allocated with `al` (NULL = default); release it with
 * rlx_onnx_tensor_free. `name_out` (may be NULL) receives the tensor's name (allocated with `al`,
 * NULL when it has none). Malformed files give RLX_ERR_FORMAT naming the field. */
rlx_status rlx_onnx_tensor_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_tensor *out,
                                char **name_out);
rlx_status rlx_onnx_tensor_load(const char *path, const rlx_allocator *al, rlx_tensor *out, char **name_out);
void rlx_onnx_tensor_free(rlx_tensor *t, const rlx_allocator *al);

/* ONNX SequenceProto / OptionalProto files (input_K.pb / output_K.pb of graph inputs and
 * outputs of sequence or optional type). Elements must be tensors. */
typedef struct rlx_onnx_seq_value {
  rlx_tensor *v;    /* the elements (data and array allocated with the reader's allocator) */
  uint32_t n;       /* sequence length; 1 for an optional tensor; 0 when absent */
  bool is_sequence; /* a sequence (of n tensors) rather than one tensor */
  bool absent;      /* an optional without a value */
} rlx_onnx_seq_value;
/* Reads an OptionalProto when `optional`, else a SequenceProto. Malformed files give
 * RLX_ERR_FORMAT naming the field; sparse, map and nested sequence elements RLX_ERR_UNSUPPORTED. */
rlx_status rlx_onnx_sequence_read(const uint8_t *data, size_t len, bool optional, const rlx_allocator *al,
                                  rlx_onnx_seq_value *out);
rlx_status rlx_onnx_sequence_load(const char *path, bool optional, const rlx_allocator *al, rlx_onnx_seq_value *out);
void rlx_onnx_seq_value_free(rlx_onnx_seq_value *s, const rlx_allocator *al);

#ifdef __cplusplus
}
#endif
#endif
