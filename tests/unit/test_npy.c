/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* .npy reading and writing: byte-exact output for a known array, round trips for every dtype,
 * hand-made files of all three versions, and clean rejection of malformed files. */
#include <stdlib.h>

#include "rlx_test.h"
#include "rlx/npy.h"

/* Builds magic + version + length + header (+ data) into buf; returns the total length. */
static size_t make_npy(uint8_t *buf, int major, const char *header, const void *data, size_t n) {
  size_t h = strlen(header), p = 0;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (uint8_t)major;
  buf[7] = 0;
  if (major == 1) {
    buf[8] = (uint8_t)(h & 0xff);
    buf[9] = (uint8_t)(h >> 8);
    p = 10;
  } else {
    for (int i = 0; i < 4; i++) buf[8 + i] = (uint8_t)(h >> (8 * i));
    p = 12;
  }
  memcpy(buf + p, header, h);
  p += h;
  if (n) memcpy(buf + p, data, n);
  return p + n;
}

static void test_exact_bytes(void) {
  float v[6] = {1, 2, 3, 4, 5, -6.5f};
  rlx_tensor t = {v, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){2, 3})};
  uint8_t *buf = NULL;
  size_t len = 0;
  CHECK_OK(rlx_npy_write(&t, NULL, &buf, &len));
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  /* 10 prefix bytes + 60 dict chars + newline = 71, padded to 128. */
  CHECK(len == 128 + 24);
  if (buf && len == 152) {
    CHECK(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
    CHECK(buf[8] == 118 && buf[9] == 0);
    CHECK(memcmp(buf + 10, dict, strlen(dict)) == 0);
    bool spaces = true;
    for (size_t i = 10 + strlen(dict); i < 127; i++) spaces &= buf[i] == ' ';
    CHECK(spaces && buf[127] == '\n');
    CHECK(memcmp(buf + 128, v, 24) == 0);
  }
  free(buf);

  /* Rank 1 gets the trailing comma, rank 0 the empty tuple. */
  int32_t one = 7;
  rlx_tensor s = {&one, rlx_shape_make(RLX_I32, 0, NULL)};
  CHECK_OK(rlx_npy_write(&s, NULL, &buf, &len));
  CHECK(buf && strstr((char *)buf + 10, "'descr': '<i4'") && strstr((char *)buf + 10, "'shape': ()"));
  free(buf);
  rlx_tensor r1 = {&one, rlx_shape_make(RLX_I32, 1, (rlx_dim[]){1})};
  CHECK_OK(rlx_npy_write(&r1, NULL, &buf, &len));
  CHECK(buf && strstr((char *)buf + 10, "'shape': (1,)"));
  CHECK(len % 64 == 4);
  free(buf);
}

static void test_round_trips(void) {
  for (int d = 0; d < RLX_DTYPE_COUNT; d++) {
    rlx_dtype dt = (rlx_dtype)d;
    size_t es = rlx_dtype_size(dt);
    uint8_t data[3 * 4 * 16];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 37 + 11);
    if (dt == RLX_BOOL)
      for (size_t i = 0; i < sizeof data; i++) data[i] &= 1;
    rlx_tensor t = {data, rlx_shape_make(dt, 3, (rlx_dim[]){3, 1, 4})};
    uint8_t *buf = NULL;
    size_t len;
    if (dt == RLX_BF16) {
      CHECK_ERR(rlx_npy_write(&t, NULL, &buf, &len), RLX_ERR_UNSUPPORTED, "bf16 has no .npy code");
      CHECK(rlx_npy_descr(dt) == NULL);
      continue;
    }
    CHECK_OK(rlx_npy_write(&t, NULL, &buf, &len));
    rlx_tensor back;
    CHECK_OK(rlx_npy_read(buf, len, NULL, &back));
    CHECK_MSG(rlx_shape_equal(&back.shape, &t.shape), "dtype %s", rlx_dtype_name(dt));
    CHECK_MSG(back.data && memcmp(back.data, data, 12 * es) == 0, "dtype %s data", rlx_dtype_name(dt));
    rlx_npy_tensor_free(&back, NULL);
    free(buf);
  }
  /* Zero-size arrays round-trip too. */
  rlx_tensor z = {NULL, rlx_shape_make(RLX_F64, 2, (rlx_dim[]){0, 5})};
  uint8_t *buf;
  size_t len;
  CHECK_OK(rlx_npy_write(&z, NULL, &buf, &len));
  rlx_tensor back;
  CHECK_OK(rlx_npy_read(buf, len, NULL, &back));
  CHECK(back.shape.rank == 2 && back.shape.dims[0] == 0 && back.shape.dims[1] == 5 && back.shape.dtype == RLX_F64);
  rlx_npy_tensor_free(&back, NULL);
  free(buf);
}

/* Hand-made files, as other writers produce them. */
static void test_hand_made(void) {
  uint8_t buf[512];
  rlx_tensor t;
  int16_t v16[3] = {-1, 2, 300};
  size_t n = make_npy(buf, 1, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i2\"}\n", v16, 6);
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  CHECK(t.shape.dtype == RLX_I16 && t.shape.rank == 1 && t.shape.dims[0] == 3);
  CHECK(t.data && ((int16_t *)t.data)[2] == 300 && ((int16_t *)t.data)[0] == -1);
  rlx_npy_tensor_free(&t, NULL);

  double d = 2.5;
  n = make_npy(buf, 2, "{'descr':'<f8','fortran_order':False,'shape':()}  \n", &d, 8);
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  CHECK(t.shape.rank == 0 && t.shape.dtype == RLX_F64 && *(double *)t.data == 2.5);
  rlx_npy_tensor_free(&t, NULL);

  uint8_t bools[4] = {0, 1, 2, 255};
  n = make_npy(buf, 3, "{'descr': '|b1', 'fortran_order': False, 'shape': (2L, 2L), }\n", bools, 4);
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  CHECK(t.shape.dtype == RLX_BOOL && t.shape.rank == 2);
  if (t.data) {
    const uint8_t *b = t.data;
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1); /* normalized to 0/1 */
  }
  rlx_npy_tensor_free(&t, NULL);

  uint8_t u[2] = {7, 9};
  n = make_npy(buf, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (1, 2), }", u, 2);
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  CHECK(t.shape.dtype == RLX_U8 && ((uint8_t *)t.data)[1] == 9);
  rlx_npy_tensor_free(&t, NULL);

  float c[4] = {1, 2, 3, 4};
  n = make_npy(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", c, 16);
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  CHECK(t.shape.dtype == RLX_C64 && t.shape.dims[0] == 2 && ((float *)t.data)[3] == 4);
  rlx_npy_tensor_free(&t, NULL);
}

static void bad(const uint8_t *buf, size_t n, const char *substr) {
  rlx_tensor t;
  memset(&t, 0xab, sizeof t);
  CHECK_ERR(rlx_npy_read(buf, n, NULL, &t), RLX_ERR_FORMAT, substr);
  CHECK(t.data == NULL);
}

static void bad_header(int major, const char *header, size_t data_bytes, const char *substr) {
  uint8_t buf[1024], data[256] = {0};
  size_t n = make_npy(buf, major, header, data, data_bytes);
  bad(buf, n, substr);
}

static void test_malformed(void) {
  const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  uint8_t buf[1024];
  float two[2] = {1, 2};
  size_t n = make_npy(buf, 1, ok, two, 8);
  rlx_tensor t;
  CHECK_OK(rlx_npy_read(buf, n, NULL, &t));
  rlx_npy_tensor_free(&t, NULL);

  bad((const uint8_t *)"", 0, "not a .npy file");
  bad((const uint8_t *)"\x93NUMPX\x01\x00\x00\x00", 10, "magic");
  buf[6] = 4;
  bad(buf, n, "version 4.0");
  buf[6] = 1;
  buf[7] = 1;
  bad(buf, n, "version 1.1");
  buf[7] = 0;
  bad(buf, 9, "inside the header length");
  for (size_t cut = 10; cut < n; cut += 7) bad(buf, cut, NULL); /* every truncation fails */
  buf[8] = 0xff;                                                /* header length 0x..ff: past the end */
  bad(buf, n, "past the end of the file");
  n = make_npy(buf, 1, ok, two, 8);
  buf[8] = 0x00;
  buf[9] = 0x00; /* empty header */
  bad(buf, n, "not a dict");
  /* v2 length beyond the limit */
  n = make_npy(buf, 2, ok, two, 8);
  buf[11] = 0x7f;
  bad(buf, n, "exceeds the limit");

  bad_header(1, "[1, 2]", 8, "not a dict");
  bad_header(1, "{'fortran_order': False, 'shape': (2,), }", 8, "missing key 'descr'");
  bad_header(1, "{'descr': '<f4', 'shape': (2,), }", 8, "missing key 'fortran_order'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False}", 8, "missing key 'shape'");
  bad_header(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8, "duplicate key 'descr'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", 8, "duplicate key 'shape'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "only C-order");
  bad_header(1, "{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", 8, "True or False");
  bad_header(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian");
  bad_header(1, "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", 8, "native byte order");
  bad_header(1, "{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }", 8, "unsupported descr '<f3'");
  bad_header(1, "{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }", 8, "unsupported descr");
  bad_header(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", 8, "bf16");
  bad_header(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, "expected a quoted descr");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8, "unexpected key 'extra'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, "not a tuple");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }", 8, "must be a tuple");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, "negative dimension");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 2), }", 8, "expected ',' or ')'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,2), }", 8, "more than 8");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8, "overflows");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", 8,
             "too large");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807, 2), }", 8, "too large");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8,
             "truncated: 8 bytes present, the shape needs 12");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8, "4 trailing bytes");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8, "after the header dict");
  bad_header(1, "{'descr': '<f4 , 'fortran_order': False, 'shape': (2,)", 8, NULL);
  bad_header(1, "{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", 8, "expected ':'");
  bad_header(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", 8, "expected ',' or '}'");
  bad_header(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8, NULL);
  bad_header(1, "{'de\\scr': '<f4'}", 8, "unsupported character");
}

static void test_oom_and_files(void) {
  float v[2] = {1, 2};
  rlx_tensor t = {v, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2})};
  rlx_fail_alloc fa;
  rlx_fail_alloc_init(&fa, 1);
  uint8_t *buf;
  size_t len;
  CHECK_ERR(rlx_npy_write(&t, &fa.al, &buf, &len), RLX_ERR_OOM, NULL);
  CHECK(fa.live == 0);
  CHECK_OK(rlx_npy_write(&t, NULL, &buf, &len));
  rlx_tensor back;
  rlx_fail_alloc_init(&fa, 1);
  CHECK_ERR(rlx_npy_read(buf, len, &fa.al, &back), RLX_ERR_OOM, NULL);
  CHECK(fa.live == 0);
  free(buf);

  const char *path = "/tmp/rlx_test_npy_roundtrip.npy";
  CHECK_OK(rlx_npy_save(path, &t));
  CHECK_OK(rlx_npy_load(path, NULL, &back));
  CHECK(back.data && ((float *)back.data)[1] == 2);
  rlx_npy_tensor_free(&back, NULL);
  remove(path);
  CHECK_ERR(rlx_npy_load(path, NULL, &back), RLX_ERR_IO, "cannot open");
  CHECK_ERR(rlx_npy_save("/nonexistent-dir/x.npy", &t), RLX_ERR_IO, "/nonexistent-dir/x.npy");
}

int main(void) {
  test_exact_bytes();
  test_round_trips();
  test_hand_made();
  test_malformed();
  test_oom_and_files();
  return rlx_test_finish("npy");
}
