/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the IDX readers (the Fashion-MNIST loader of `rlx train`): any input, plain
 * or gzip-compressed, must either be rejected with an error that says why and hands back nothing,
 * or parse into exactly the elements its header announces (pixels = byte / 255, labels = byte). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlx/datasets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parse(const uint8_t *data, size_t size) {
  float *px = NULL;
  size_t count = 0;
  uint32_t rows = 0, cols = 0;
  if (rlx_idx_parse_images(data, size, "fuzz", &px, &count, &rows, &cols) == RLX_OK) {
    size_t n = count * rows * cols;
    if (!px || count == 0 || rows == 0 || cols == 0 || size != 16 + n) abort();
    for (size_t i = 0; i < n; i++)
      if (px[i] != (float)data[16 + i] / 255.0f) abort();
  } else if (px || !rlx_last_error()[0]) {
    abort();
  }
  free(px);
  int32_t *lab = NULL;
  if (rlx_idx_parse_labels(data, size, "fuzz", &lab, &count) == RLX_OK) {
    if (!lab || count == 0 || size != 8 + count) abort();
    for (size_t i = 0; i < count; i++)
      if (lab[i] != data[8 + i]) abort();
  } else if (lab || !rlx_last_error()[0]) {
    abort();
  }
  free(lab);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_parse(data, size);
  /* The file readers: the input as a file, gunzipped by zlib when it is gzip data. */
  char path[] = "/tmp/rlx-fuzz-idx-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  FILE *f = fdopen(fd, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size)) abort();
  fclose(f);
  uint8_t *buf = NULL;
  size_t len = 0;
  if (rlx_read_gz_file(path, (size_t)1 << 24, &buf, &len) == RLX_OK) {
    if (!buf) abort();
    check_parse(buf, len);
  } else if (buf || !rlx_last_error()[0]) {
    abort();
  }
  free(buf);
  float *px = NULL;
  size_t count = 0;
  uint32_t rows = 0, cols = 0;
  if (rlx_idx_load_images(path, &px, &count, &rows, &cols) != RLX_OK && px) abort();
  free(px);
  unlink(path);
  return 0;
}
