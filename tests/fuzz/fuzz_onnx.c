/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the ONNX importer and the TensorProto / SequenceProto / OptionalProto
 * readers: any input must either be rejected with an error (and a message) or import into a graph
 * that verifies. */
#include <stdint.h>
#include <stdlib.h>

#include "rlx/onnx.h"
#include "rlx/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_graph *g = NULL;
  rlx_status s = rlx_onnx_import_bytes(data, size, NULL, NULL, NULL, &g);
  if (s == RLX_OK) {
    if (!g || rlx_verify(g) != RLX_OK) abort();
    rlx_graph_free(g);
  } else if (g || !rlx_last_error()[0]) {
    abort(); /* failures leave no graph and always say why */
  }
  rlx_tensor t;
  if (rlx_onnx_tensor_read(data, size, NULL, &t, NULL) == RLX_OK) rlx_onnx_tensor_free(&t, NULL);
  for (int optional = 0; optional < 2; optional++) {
    rlx_onnx_seq_value v;
    s = rlx_onnx_sequence_read(data, size, optional, NULL, &v);
    if (s != RLX_OK && (v.v || v.n || !rlx_last_error()[0])) abort(); /* failures hand back nothing */
    rlx_onnx_seq_value_free(&v, NULL);
  }
  return 0;
}
