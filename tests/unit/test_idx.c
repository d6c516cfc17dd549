/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* IDX readers: hand-made image/label files (plain and gzip), every malformed header, the
 * Fashion-MNIST folder loader (count mismatch, bad labels, missing files) and the real files of
 * Debian's dataset-fashion-mnist (60,000 / 10,000 examples, 6,000 / 1,000 per class; the test
 * fails when they are not installed). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "rlx/datasets.h"
#include "rlx_test.h"

static size_t make_idx(uint8_t *b, uint32_t magic, uint32_t rank, const uint32_t *dims, const uint8_t *body, size_t n) {
  size_t p = 0;
  for (int i = 3; i >= 0; i--) b[p++] = (uint8_t)(magic >> (8 * i));
  for (uint32_t d = 0; d < rank; d++)
    for (int i = 3; i >= 0; i--) b[p++] = (uint8_t)(dims[d] >> (8 * i));
  memcpy(b + p, body, n);
  return p + n;
}

static void test_parse(void) {
  uint8_t b[256], px[12];
  for (int i = 0; i < 12; i++) px[i] = (uint8_t)(i * 23);
  px[11] = 255;
  size_t len = make_idx(b, 0x803, 3, (uint32_t[]){2, 3, 2}, px, 12);
  float *img = NULL;
  size_t count = 0;
  uint32_t rows = 0, cols = 0;
  CHECK_OK(rlx_idx_parse_images(b, len, "x", &img, &count, &rows, &cols));
  CHECK(count == 2 && rows == 3 && cols == 2);
  if (img) {
    CHECK(img[0] == 0.0f && img[11] == 1.0f);
    CHECK(img[1] > 0.0901f && img[1] < 0.0903f); /* 23 / 255 */
  }
  free(img);

  uint8_t lab[3] = {9, 0, 3};
  len = make_idx(b, 0x801, 1, (uint32_t[]){3}, lab, 3);
  int32_t *l = NULL;
  CHECK_OK(rlx_idx_parse_labels(b, len, "y", &l, &count));
  CHECK(count == 3 && l && l[0] == 9 && l[1] == 0 && l[2] == 3);
  free(l);

  /* Truncated body, trailing bytes, short header, wrong magic, zero dimension. */
  len = make_idx(b, 0x803, 3, (uint32_t[]){2, 3, 2}, px, 11);
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT,
            "imgs.idx: truncated: the header announces 12 bytes of images but only 11 follow");
  len = make_idx(b, 0x803, 3, (uint32_t[]){1, 3, 2}, px, 12);
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT,
            "6 unexpected trailing bytes");
  CHECK_ERR(rlx_idx_parse_images(b, 10, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT,
            "the IDX header of images needs 16");
  CHECK_ERR(rlx_idx_parse_images(b, 3, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT, "too short");
  len = make_idx(b, 0x801, 1, (uint32_t[]){3}, lab, 3);
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT,
            "wrong magic 0x00000801");
  len = make_idx(b, 0x803, 3, (uint32_t[]){2, 3, 2}, px, 12);
  CHECK_ERR(rlx_idx_parse_labels(b, len, "labs.idx", &l, &count), RLX_ERR_FORMAT, "wrong magic 0x00000803");
  b[0] = 0x1f;
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT, "not an IDX file");
  len = make_idx(b, 0xd03, 3, (uint32_t[]){2, 3, 2}, px, 12); /* floats, not bytes */
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT,
            "not an IDX file of unsigned bytes");
  len = make_idx(b, 0x803, 3, (uint32_t[]){0, 3, 2}, px, 0);
  CHECK_ERR(rlx_idx_parse_images(b, len, "imgs.idx", &img, &count, &rows, &cols), RLX_ERR_FORMAT, "dimension 0 is 0");
  CHECK(img == NULL && l == NULL);
}

static bool write_gz(const char *path, const uint8_t *data, size_t n) {
  gzFile g = gzopen(path, "wb");
  if (!g) return false;
  bool ok = gzwrite(g, data, (unsigned)n) == (int)n;
  return gzclose(g) == Z_OK && ok;
}

static bool write_plain(const char *path, const uint8_t *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

static void test_folder(void) {
  char dir[] = "/tmp/rlx_test_idx_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp failed");
    return;
  }
  char ip[256], lp[256], tip[256], tlp[256];
  snprintf(ip, sizeof ip, "%s/train-images-idx3-ubyte.gz", dir);
  snprintf(lp, sizeof lp, "%s/train-labels-idx1-ubyte.gz", dir);
  snprintf(tip, sizeof tip, "%s/t10k-images-idx3-ubyte", dir); /* uncompressed */
  snprintf(tlp, sizeof tlp, "%s/t10k-labels-idx1-ubyte", dir);

  uint8_t b[4096], px[4 * 28 * 28];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i % 256);
  size_t len = make_idx(b, 0x803, 3, (uint32_t[]){4, 28, 28}, px, sizeof px);
  CHECK(write_gz(ip, b, len));
  CHECK(write_plain(tip, b, len));
  uint8_t lab[4] = {1, 2, 3, 9};
  len = make_idx(b, 0x801, 1, (uint32_t[]){4}, lab, 4);
  CHECK(write_gz(lp, b, len));
  CHECK(write_plain(tlp, b, len));

  rlx_dataset d;
  CHECK_OK(rlx_fashion_mnist_load(dir, "train", &d));
  CHECK(d.count == 4 && d.rows == 28 && d.cols == 28 && d.n_classes == 10);
  CHECK(d.labels && d.labels[3] == 9);
  CHECK(d.images && d.images[255] == 1.0f && d.images[256] == 0.0f);
  rlx_dataset_free(&d);
  CHECK_OK(rlx_fashion_mnist_load(dir, "t10k", &d));
  CHECK(d.count == 4 && d.labels && d.labels[0] == 1);
  rlx_dataset_free(&d);
  CHECK_ERR(rlx_fashion_mnist_load(dir, "valid", &d), RLX_ERR_INVALID_ARG, "expected \"train\" or \"t10k\"");

  /* Label/image count mismatch. */
  len = make_idx(b, 0x801, 1, (uint32_t[]){3}, lab, 3);
  CHECK(write_gz(lp, b, len));
  CHECK_ERR(rlx_fashion_mnist_load(dir, "train", &d), RLX_ERR_FORMAT, "holds 3 labels but");
  /* A label out of range. */
  lab[2] = 10;
  len = make_idx(b, 0x801, 1, (uint32_t[]){4}, lab, 4);
  CHECK(write_gz(lp, b, len));
  CHECK_ERR(rlx_fashion_mnist_load(dir, "train", &d), RLX_ERR_FORMAT, "label 2 is 10");
  /* A truncated gzip stream. */
  len = make_idx(b, 0x803, 3, (uint32_t[]){4, 28, 28}, px, sizeof px);
  CHECK(write_gz(ip, b, len));
  FILE *f = fopen(ip, "rb");
  uint8_t gz[8192];
  size_t gl = f ? fread(gz, 1, sizeof gz, f) : 0;
  if (f) fclose(f);
  CHECK(gl > 40);
  CHECK(write_plain(ip, gz, gl / 2));
  CHECK_ERR(rlx_fashion_mnist_load(dir, "train", &d), RLX_ERR_IO, "corrupt or truncated gzip data");
  /* A gzip file whose content is a truncated IDX file. */
  CHECK(write_gz(ip, b, len - 100));
  CHECK_ERR(rlx_fashion_mnist_load(dir, "train", &d), RLX_ERR_FORMAT, "train-images-idx3-ubyte.gz: truncated");
  /* Missing files. */
  remove(ip);
  CHECK_ERR(rlx_fashion_mnist_load(dir, "train", &d), RLX_ERR_IO, "train-images-idx3-ubyte.gz: cannot open");
  CHECK_ERR(rlx_fashion_mnist_load("/tmp/rlx-no-such-folder", "train", &d), RLX_ERR_IO,
            "/tmp/rlx-no-such-folder/train-images-idx3-ubyte.gz: cannot open: No such file");
  CHECK(d.images == NULL && d.labels == NULL);

  remove(lp);
  remove(tip);
  remove(tlp);
  CHECK(rmdir(dir) == 0);
}

static void test_real(void) {
  FILE *f = fopen(RLX_FASHION_MNIST_DIR "/t10k-labels-idx1-ubyte.gz", "rb");
  if (!f) { /* a requirement (scripts/setup.sh installs it), not a reason to skip */
    CHECK_MSG(
        false,
        "%s/t10k-labels-idx1-ubyte.gz cannot be read: install Debian's dataset-fashion-mnist (scripts/setup.sh does)",
        RLX_FASHION_MNIST_DIR);
    return;
  }
  fclose(f);
  const char *splits[2] = {"train", "t10k"};
  size_t counts[2] = {60000, 10000};
  for (int s = 0; s < 2; s++) {
    rlx_dataset d;
    CHECK_OK(rlx_fashion_mnist_load(NULL, splits[s], &d));
    CHECK(d.count == counts[s] && d.rows == 28 && d.cols == 28);
    size_t per[10] = {0};
    for (size_t i = 0; i < d.count; i++) per[d.labels[i]]++;
    for (int c = 0; c < 10; c++) CHECK_MSG(per[c] == counts[s] / 10, "%s class %d: %zu", splits[s], c, per[c]);
    float lo = 1, hi = 0;
    for (size_t i = 0; i < d.count * 28 * 28; i++) {
      if (d.images[i] < lo) lo = d.images[i];
      if (d.images[i] > hi) hi = d.images[i];
    }
    CHECK(lo == 0.0f && hi == 1.0f);
    CHECK(d.labels[0] == 9); /* both splits start with an ankle boot */
    rlx_dataset_free(&d);
  }
}

int main(void) {
  test_parse();
  test_folder();
  test_real();
  return rlx_test_finish("idx");
}
