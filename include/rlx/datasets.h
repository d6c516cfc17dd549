/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Image-classification data sets stored as IDX files (the MNIST / Fashion-MNIST format), plain or
 * gzip-compressed. An IDX file is a 4-byte magic (two zero bytes, the element type 0x08 = unsigned
 * byte, the number of dimensions), one big-endian u32 per dimension, then the elements row-major.
 * Images are rank 3 ([count, rows, cols], magic 0x00000803), labels rank 1 ([count], magic
 * 0x00000801). Every reader checks the magic, the dimensions and that the element bytes match the
 * dimensions exactly; errors name the file and what is wrong (RLX_ERR_IO when the file cannot be
 * read, RLX_ERR_FORMAT when its content is malformed). */
#ifndef RLX_DATASETS_H
#define RLX_DATASETS_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_IDX_MAGIC_IMAGES 0x00000803u
#define RLX_IDX_MAGIC_LABELS 0x00000801u
/* Largest decompressed IDX file accepted (the Fashion-MNIST training images are 47 MB). */
#define RLX_IDX_MAX_BYTES ((size_t)1 << 30)

/* Folder of Debian's dataset-fashion-mnist package. */
#define RLX_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* A labelled image set: images[i * rows * cols + r * cols + c] in [0, 1], labels[i] in
 * [0, n_classes). */
typedef struct rlx_dataset {
  float *images;
  int32_t *labels;
  size_t count;
  uint32_t rows, cols;
  uint32_t n_classes;
} rlx_dataset;

/* Parses an in-memory IDX image file (already decompressed). `what` names it in errors (e.g. the
 * path). On success *out (malloc'ed, count * rows * cols floats = byte / 255) is the caller's. */
rlx_status rlx_idx_parse_images(const uint8_t *data, size_t len, const char *what, float **out, size_t *count,
                                uint32_t *rows, uint32_t *cols);
/* Parses an in-memory IDX label file; *out (malloc'ed, count values 0..255) is the caller's. */
rlx_status rlx_idx_parse_labels(const uint8_t *data, size_t len, const char *what, int32_t **out, size_t *count);

/* Reads a whole file, gunzipping it when it is gzip-compressed (zlib reads plain files as they
 * are). Gives RLX_ERR_IO for a missing/unreadable or truncated/corrupt gzip file, RLX_ERR_FORMAT
 * when the content exceeds `max_bytes`. *out is malloc'ed. */
rlx_status rlx_read_gz_file(const char *path, size_t max_bytes, uint8_t **out, size_t *len);

/* File variants of the parsers (path may name a .gz file). */
rlx_status rlx_idx_load_images(const char *path, float **out, size_t *count, uint32_t *rows, uint32_t *cols);
rlx_status rlx_idx_load_labels(const char *path, int32_t **out, size_t *count);

/* Loads split "train" or "t10k" of Fashion-MNIST (or MNIST) from folder `dir` (NULL = the Debian
 * folder): DIR/<split>-images-idx3-ubyte.gz and DIR/<split>-labels-idx1-ubyte.gz, or the same
 * names without .gz when only those exist. Checks that both files hold the same number of
 * examples and that every label is below 10. Free with rlx_dataset_free. */
rlx_status rlx_fashion_mnist_load(const char *dir, const char *split, rlx_dataset *out);
void rlx_dataset_free(rlx_dataset *d);

#ifdef __cplusplus
}
#endif
#endif
