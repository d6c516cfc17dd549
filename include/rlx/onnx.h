/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX import: .onnx (protobuf, parsed by protobuf-c code generated from Debian's onnx.proto) ->
 * RLX graph. One ONNX node may become several RLX nodes. */
#ifndef RLX_ONNX_H
#define RLX_ONNX_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_onnx_options {
  /* Initializers become Constant nodes (true, default) or Params named after the initializer
   * whose values are available through rlx_onnx_model_param (false). */
  bool initializers_as_constants;
  /* Bindings for symbolic input dims (dim_param name -> size); unbound ones stay symbolic. */
  const char *const *dim_names;
  const int64_t *dim_values;
  uint32_t n_dims;
} rlx_onnx_options;
void rlx_onnx_options_init(rlx_onnx_options *o);

/* Imports a model file. External data is resolved relative to the model's folder with path
 * containment (no absolute paths, no "..", no symlinks leaving the folder). On failure the message
 * names the node (name + op_type) and field; RLX_ERR_UNSUPPORTED lists EVERY unsupported
 * op/opset/dtype of the model at once. */
rlx_status rlx_onnx_import_file(const char *path, const rlx_onnx_options *opt,
                                const rlx_allocator *al, rlx_graph **out);
rlx_status rlx_onnx_import_bytes(const uint8_t *data, size_t len, const char *base_dir,
                                 const rlx_onnx_options *opt, const rlx_allocator *al,
                                 rlx_graph **out);

/* Lists every unsupported op / opset / dtype of a model (one per line) without importing it.
 * *n_gaps = 0 means the model is fully supported. The string is allocated with `al`. */
rlx_status rlx_onnx_report(const char *path, const rlx_allocator *al, char **out, size_t *len,
                           uint32_t *n_gaps);

#ifdef __cplusplus
}
#endif
#endif
