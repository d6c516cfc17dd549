/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* IDX readers (MNIST / Fashion-MNIST) over zlib. A file is read whole (gunzipped when needed),
 * then its header is checked before anything is converted: magic, rank, non-zero dimensions and
 * an exact match between the dimensions and the number of element bytes. */
#include "rlx/datasets.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "rlx/types.h"

rlx_status rlx_read_gz_file(const char *path, size_t max_bytes, uint8_t **out, size_t *len) {
  if (!path || !out || !len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_read_gz_file: NULL argument");
  *out = NULL;
  *len = 0;
  /* fopen first: its errno gives the clearest message for a missing or unreadable file. */
  FILE *probe = fopen(path, "rb");
  if (!probe) return rlx_errorf(RLX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  fclose(probe);
  gzFile gz = gzopen(path, "rb");
  if (!gz) return rlx_errorf(RLX_ERR_IO, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib failed");
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) {
    gzclose(gz);
    return rlx_errorf(RLX_ERR_OOM, "%s: out of memory", path);
  }
  rlx_status st = RLX_OK;
  for (;;) {
    if (n == cap) {
      if (cap >= max_bytes + 1) {
        st = rlx_errorf(RLX_ERR_FORMAT, "%s: more than %zu bytes of data (too large for this reader)", path, max_bytes);
        break;
      }
      size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        st = rlx_errorf(RLX_ERR_OOM, "%s: out of memory reading %zu bytes", path, ncap);
        break;
      }
      buf = nb;
      cap = ncap;
    }
    size_t want = cap - n;
    if (want > (1u << 30)) want = 1u << 30;
    int got = gzread(gz, buf + n, (unsigned)want);
    if (got < 0) {
      int zerr = 0;
      const char *msg = gzerror(gz, &zerr);
      st = rlx_errorf(RLX_ERR_IO, "%s: corrupt or truncated gzip data: %s", path,
                      zerr == Z_ERRNO ? strerror(errno) : msg);
      break;
    }
    if (got == 0) {
      int zerr = 0;
      const char *msg = gzerror(gz, &zerr);
      if (zerr != Z_OK && zerr != Z_STREAM_END)
        st = rlx_errorf(RLX_ERR_IO, "%s: corrupt or truncated gzip data: %s", path, msg);
      break;
    }
    n += (size_t)got;
  }
  if (st == RLX_OK && n > max_bytes)
    st = rlx_errorf(RLX_ERR_FORMAT, "%s: more than %zu bytes of data (too large for this reader)", path, max_bytes);
  gzclose(gz);
  if (st != RLX_OK) {
    free(buf);
    return st;
  }
  *out = buf;
  *len = n;
  return RLX_OK;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Checks magic and dims of an IDX file of `rank` dimensions; dims[] receives them and *numel
 * their product (checked). */
static rlx_status idx_header(const uint8_t *data, size_t len, const char *what, uint32_t magic, const char *kind,
                             uint32_t rank, uint32_t *dims, size_t *numel) {
  if (!what) what = "idx data";
  if (len < 4)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: truncated: %zu bytes, too short for the 4-byte IDX magic", what, len);
  uint32_t m = be32(data);
  if (m != magic) {
    if ((m >> 16) != 0 || ((m >> 8) & 0xff) != 0x08)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "%s: wrong magic 0x%08x: not an IDX file of unsigned bytes (expected 0x%08x for %s)", what, m,
                        magic, kind);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: wrong magic 0x%08x: an IDX file of rank %u, expected 0x%08x (%s, rank %u)",
                      what, m, m & 0xff, magic, kind, rank);
  }
  size_t hdr = 4 + 4 * (size_t)rank;
  if (len < hdr)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: truncated: %zu bytes, the IDX header of %s needs %zu", what, len, kind, hdr);
  size_t n = 1;
  for (uint32_t i = 0; i < rank; i++) {
    dims[i] = be32(data + 4 + 4 * i);
    if (dims[i] == 0) return rlx_errorf(RLX_ERR_FORMAT, "%s: dimension %u is 0", what, i);
    if (!rlx_mul_size(n, dims[i], &n))
      return rlx_errorf(RLX_ERR_FORMAT, "%s: dimensions overflow the address space", what);
  }
  size_t body = len - hdr;
  if (body < n)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: truncated: the header announces %zu bytes of %s but only %zu follow", what,
                      n, kind, body);
  if (body > n)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: %zu unexpected trailing bytes after the %zu bytes of %s", what, body - n, n,
                      kind);
  *numel = n;
  return RLX_OK;
}

rlx_status rlx_idx_parse_images(const uint8_t *data, size_t len, const char *what, float **out, size_t *count,
                                uint32_t *rows, uint32_t *cols) {
  if ((!data && len) || !out || !count || !rows || !cols)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_idx_parse_images: NULL argument");
  *out = NULL;
  uint32_t d[3] = {0, 0, 0};
  size_t n = 0;
  RLX_TRY(idx_header(data, len, what, RLX_IDX_MAGIC_IMAGES, "images", 3, d, &n));
  size_t bytes;
  if (!rlx_mul_size(n, sizeof(float), &bytes))
    return rlx_errorf(RLX_ERR_FORMAT, "%s: too many pixels", what ? what : "idx data");
  float *px = malloc(bytes);
  if (!px) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for %zu pixels", what ? what : "idx data", n);
  const uint8_t *src = data + 16;
  for (size_t i = 0; i < n; i++) px[i] = (float)src[i] / 255.0f;
  *out = px;
  *count = d[0];
  *rows = d[1];
  *cols = d[2];
  return RLX_OK;
}

rlx_status rlx_idx_parse_labels(const uint8_t *data, size_t len, const char *what, int32_t **out, size_t *count) {
  if ((!data && len) || !out || !count) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_idx_parse_labels: NULL argument");
  *out = NULL;
  uint32_t d[1] = {0};
  size_t n = 0;
  RLX_TRY(idx_header(data, len, what, RLX_IDX_MAGIC_LABELS, "labels", 1, d, &n));
  int32_t *lab = malloc(n * sizeof *lab); /* n <= len: cannot overflow */
  if (!lab) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for %zu labels", what ? what : "idx data", n);
  for (size_t i = 0; i < n; i++) lab[i] = data[8 + i];
  *out = lab;
  *count = n;
  return RLX_OK;
}

rlx_status rlx_idx_load_images(const char *path, float **out, size_t *count, uint32_t *rows, uint32_t *cols) {
  uint8_t *buf;
  size_t len;
  RLX_TRY(rlx_read_gz_file(path, RLX_IDX_MAX_BYTES, &buf, &len));
  rlx_status st = rlx_idx_parse_images(buf, len, path, out, count, rows, cols);
  free(buf);
  return st;
}

rlx_status rlx_idx_load_labels(const char *path, int32_t **out, size_t *count) {
  uint8_t *buf;
  size_t len;
  RLX_TRY(rlx_read_gz_file(path, RLX_IDX_MAX_BYTES, &buf, &len));
  rlx_status st = rlx_idx_parse_labels(buf, len, path, out, count);
  free(buf);
  return st;
}

/* DIR/NAME.gz, or DIR/NAME when only the uncompressed file exists. */
static rlx_status dataset_path(const char *dir, const char *split, const char *kind, char *out, size_t cap) {
  int k = snprintf(out, cap, "%s/%s-%s-ubyte.gz", dir, split, kind);
  if (k < 0 || (size_t)k >= cap) return rlx_errorf(RLX_ERR_INVALID_ARG, "data folder path too long: %s", dir);
  FILE *f = fopen(out, "rb");
  if (f) {
    fclose(f);
    return RLX_OK;
  }
  char plain[4096];
  snprintf(plain, sizeof plain, "%.*s", k - 3, out);
  f = fopen(plain, "rb");
  if (f) {
    fclose(f);
    memcpy(out, plain, (size_t)k - 2);
  }
  return RLX_OK; /* a missing file is reported by the reader, naming the .gz path */
}

void rlx_dataset_free(rlx_dataset *d) {
  if (!d) return;
  free(d->images);
  free(d->labels);
  memset(d, 0, sizeof *d);
}

rlx_status rlx_fashion_mnist_load(const char *dir, const char *split, rlx_dataset *out) {
  if (!split || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_fashion_mnist_load: NULL argument");
  memset(out, 0, sizeof *out);
  if (!dir) dir = RLX_FASHION_MNIST_DIR;
  if (strcmp(split, "train") != 0 && strcmp(split, "t10k") != 0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "split '%s': expected \"train\" or \"t10k\"", split);
  char ipath[4096], lpath[4096];
  RLX_TRY(dataset_path(dir, split, "images-idx3", ipath, sizeof ipath));
  RLX_TRY(dataset_path(dir, split, "labels-idx1", lpath, sizeof lpath));
  rlx_dataset d = {0};
  size_t nl = 0;
  rlx_status st = rlx_idx_load_images(ipath, &d.images, &d.count, &d.rows, &d.cols);
  if (st == RLX_OK) st = rlx_idx_load_labels(lpath, &d.labels, &nl);
  if (st == RLX_OK && nl != d.count)
    st = rlx_errorf(RLX_ERR_FORMAT, "%s holds %zu labels but %s holds %zu images: the counts must match", lpath, nl,
                    ipath, d.count);
  d.n_classes = 10;
  for (size_t i = 0; st == RLX_OK && i < nl; i++)
    if (d.labels[i] >= 10)
      st = rlx_errorf(RLX_ERR_FORMAT, "%s: label %zu is %d, expected a class in 0..9", lpath, i, (int)d.labels[i]);
  if (st != RLX_OK) {
    rlx_dataset_free(&d);
    return st;
  }
  *out = d;
  return RLX_OK;
}
