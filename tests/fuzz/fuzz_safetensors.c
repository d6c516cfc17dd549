/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the safetensors reader: any input must either be rejected with an error or
 * parse into tensors that write back and re-read to the same names, shapes, bytes and metadata. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_safetensors *f = NULL;
  if (rlx_safetensors_read(data, size, &f) != RLX_OK) {
    if (f) abort();
    return 0;
  }
  uint8_t *buf = NULL;
  size_t len = 0;
  if (rlx_safetensors_write(f->tensors, f->n_tensors, f->metadata, f->n_metadata, &buf, &len) != RLX_OK) abort();
  rlx_safetensors *back = NULL;
  if (rlx_safetensors_read(buf, len, &back) != RLX_OK) abort();
  if (back->n_tensors != f->n_tensors || back->n_metadata != f->n_metadata) abort();
  for (uint32_t i = 0; i < f->n_tensors; i++) {
    const rlx_named_tensor *a = &f->tensors[i], *b = &back->tensors[i];
    if (strcmp(a->name, b->name) != 0 || !rlx_shape_equal(&a->tensor.shape, &b->tensor.shape)) abort();
    size_t nb = 0;
    if (rlx_shape_nbytes(&a->tensor.shape, &nb) != RLX_OK) abort();
    if (nb && memcmp(a->tensor.data, b->tensor.data, nb) != 0) abort();
  }
  for (uint32_t i = 0; i < f->n_metadata; i++)
    if (strcmp(f->metadata[i].key, back->metadata[i].key) != 0 ||
        strcmp(f->metadata[i].value, back->metadata[i].value) != 0)
      abort();
  rlx_safetensors_free(back);
  rlx_safetensors_free(f);
  free(buf);
  return 0;
}
