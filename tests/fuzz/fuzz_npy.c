/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the .npy reader: any input must either be rejected with an error or parse
 * into a tensor that writes back and re-reads to the same shape and bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_tensor t;
  if (rlx_npy_read(data, size, NULL, &t) != RLX_OK) return 0;
  size_t nbytes = 0;
  if (rlx_shape_nbytes(&t.shape, &nbytes) != RLX_OK) abort();
  uint8_t *buf = NULL;
  size_t len = 0;
  if (rlx_npy_write(&t, NULL, &buf, &len) != RLX_OK) abort();
  rlx_tensor back;
  if (rlx_npy_read(buf, len, NULL, &back) != RLX_OK) abort();
  if (!rlx_shape_equal(&t.shape, &back.shape)) abort();
  if (nbytes && memcmp(t.data, back.data, nbytes) != 0) abort();
  rlx_npy_tensor_free(&back, NULL);
  rlx_npy_tensor_free(&t, NULL);
  free(buf);
  return 0;
}
