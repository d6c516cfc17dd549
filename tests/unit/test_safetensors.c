/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* safetensors: the writer's exact bytes, round trips through writer and reader (file and memory),
 * hand-written headers the reader must accept, and every malformed case of the bad-input list
 * (spec bad-inputs.md, safetensors 1-7) plus the JSON details of our own parser. */
#include <stdint.h>
#include <stdlib.h>

#include "rlx/safetensors.h"
#include "rlx_test.h"

/* 8-byte little-endian length n + header text + data. Returns a malloc'ed buffer. */
static uint8_t *make_raw(uint64_t n, const char *header, size_t hlen, const void *data, size_t dlen, size_t *len) {
  *len = 8 + hlen + dlen;
  uint8_t *b = malloc(*len ? *len : 1);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
  memcpy(b + 8, header, hlen);
  if (dlen) memcpy(b + 8 + hlen, data, dlen);
  return b;
}

static uint8_t *make_st(const char *header, const void *data, size_t dlen, size_t *len) {
  return make_raw(strlen(header), header, strlen(header), data, dlen, len);
}

static const uint8_t zeros[256];

/* Parses header + dlen zero bytes of data and expects `code` with `substr` in the message. */
#define BAD(header, dlen, code, substr)                           \
  do {                                                            \
    size_t len_;                                                  \
    uint8_t *b_ = make_st(header, zeros, dlen, &len_);            \
    rlx_safetensors *f_ = NULL;                                   \
    CHECK_ERR(rlx_safetensors_read(b_, len_, &f_), code, substr); \
    CHECK(f_ == NULL);                                            \
    free(b_);                                                     \
  } while (0)

static void test_exact_bytes(void) {
  float v[2] = {1.5f, -2.0f};
  rlx_named_tensor t = {"a", {v, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2})}};
  uint8_t *buf = NULL;
  size_t len = 0;
  CHECK_OK(rlx_safetensors_write(&t, 1, NULL, 0, &buf, &len));
  const char *json = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  size_t jl = strlen(json); /* 54 characters, padded with 2 spaces to 56: 8 + 56 = 64 */
  CHECK(jl == 54);
  CHECK(len == 8 + 56 + 8);
  if (buf && len == 72) {
    CHECK(buf[0] == 56 && buf[1] == 0 && buf[7] == 0);
    CHECK(memcmp(buf + 8, json, jl) == 0);
    CHECK(buf[61] == '}' && buf[62] == ' ' && buf[63] == ' ');
    CHECK(memcmp(buf + 64, v, 8) == 0);
  }
  free(buf);

  /* Metadata goes first; escapes for quote, backslash and control characters. */
  rlx_safetensors_kv kv = {"fo\"o", "b\\a\nr"};
  CHECK_OK(rlx_safetensors_write(NULL, 0, &kv, 1, &buf, &len));
  const char *mj = "{\"__metadata__\":{\"fo\\\"o\":\"b\\\\a\\u000ar\"}}";
  CHECK(buf && len >= 8 + strlen(mj) && memcmp(buf + 8, mj, strlen(mj)) == 0);
  CHECK(len % 8 == 0);
  free(buf);
}

static void test_round_trip(void) {
  float w[6] = {1, 2, 3, 4, 5, 6.25f};
  int64_t idx[3] = {-1, 0, 1LL << 40};
  uint8_t scalar = 200;
  uint16_t half[5] = {0x3c00, 0x4000, 0xbc00, 0, 0x7c00};
  rlx_named_tensor ts[] = {
      {"conv1.weight", {w, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){1, 2, 3, 1})}},
      {"idx", {idx, rlx_shape_make(RLX_I64, 1, (rlx_dim[]){3})}},
      {"s", {&scalar, rlx_shape_make(RLX_U8, 0, NULL)}},
      {"empty", {NULL, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){0, 7})}},
      {"h", {half, rlx_shape_make(RLX_F16, 1, (rlx_dim[]){5})}},
      {"caf\xc3\xa9 \"q\"", {w, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){1})}},
  };
  rlx_safetensors_kv meta[] = {{"format", "pt"}, {"epochs", "1"}};
  uint8_t *buf = NULL;
  size_t len = 0;
  CHECK_OK(rlx_safetensors_write(ts, 6, meta, 2, &buf, &len));
  size_t expect_data = 24 + 24 + 1 + 0 + 10 + 4;
  uint64_t n = 0;
  for (int i = 7; buf && i >= 0; i--) n = n << 8 | buf[i];
  CHECK((8 + n) % 8 == 0);
  CHECK(len == 8 + n + expect_data);
  rlx_safetensors *f = NULL;
  CHECK_OK(rlx_safetensors_read(buf, len, &f));
  if (f) {
    CHECK(f->n_tensors == 6);
    CHECK(f->n_metadata == 2);
    CHECK(rlx_safetensors_meta(f, "format") && strcmp(rlx_safetensors_meta(f, "format"), "pt") == 0);
    CHECK(rlx_safetensors_meta(f, "epochs") && strcmp(rlx_safetensors_meta(f, "epochs"), "1") == 0);
    CHECK(rlx_safetensors_meta(f, "nope") == NULL);
    for (int i = 0; i < 6; i++) {
      const rlx_named_tensor *t = rlx_safetensors_find(f, ts[i].name);
      CHECK_MSG(t != NULL, "tensor %s", ts[i].name);
      if (!t) continue;
      CHECK(rlx_shape_equal(&t->tensor.shape, &ts[i].tensor.shape));
      size_t nb = 0;
      CHECK_OK(rlx_shape_nbytes(&t->tensor.shape, &nb));
      CHECK(nb == 0 || memcmp(t->tensor.data, ts[i].tensor.data, nb) == 0);
      CHECK(((uintptr_t)t->tensor.data & 63) == 0);
    }
    /* Tensors come back in data-offset order = write order. */
    CHECK(strcmp(f->tensors[0].name, "conv1.weight") == 0 && strcmp(f->tensors[5].name, "caf\xc3\xa9 \"q\"") == 0);
    CHECK(rlx_safetensors_find(f, "missing") == NULL);
  }
  rlx_safetensors_free(f);

  /* Through a file. */
  const char *path = "/tmp/rlx_test_safetensors.safetensors";
  CHECK_OK(rlx_safetensors_save(path, ts, 6, NULL, 0));
  f = NULL;
  CHECK_OK(rlx_safetensors_load(path, &f));
  CHECK(f && f->n_tensors == 6 && f->n_metadata == 0);
  rlx_safetensors_free(f);
  remove(path);
  CHECK_ERR(rlx_safetensors_load("/tmp/rlx-no-such-dir/x.safetensors", &f), RLX_ERR_IO, "x.safetensors: cannot open");
  free(buf);

  /* No tensors at all. */
  CHECK_OK(rlx_safetensors_write(NULL, 0, NULL, 0, &buf, &len));
  CHECK(len == 16 && buf && memcmp(buf + 8, "{}      ", 8) == 0);
  f = NULL;
  CHECK_OK(rlx_safetensors_read(buf, len, &f));
  CHECK(f && f->n_tensors == 0);
  rlx_safetensors_free(f);
  free(buf);
}

/* Headers written by hand (as other tools write them) that must be accepted. */
static void test_accepts(void) {
  uint8_t data[12] = {0, 0, 128, 63, 0, 0, 0, 64, 7, 0, 0, 0};
  const char *h = "{ \"b\" : { \"data_offsets\" : [8, 12], \"shape\":[1],\"dtype\":\"I32\" },\n"
                  "\t\"a\\u00e9\\ud83d\\ude00\\/\":{\"shape\":[2],\"dtype\":\"F32\",\"data_offsets\":[0,8]},"
                  "\"__metadata__\":{}}   ";
  size_t len;
  uint8_t *b = make_st(h, data, 12, &len);
  rlx_safetensors *f = NULL;
  CHECK_OK(rlx_safetensors_read(b, len, &f));
  if (f && f->n_tensors == 2) {
    CHECK(strcmp(f->tensors[0].name, "a\xc3\xa9\xf0\x9f\x98\x80/") == 0);
    CHECK(strcmp(f->tensors[1].name, "b") == 0);
    CHECK(((const float *)f->tensors[0].tensor.data)[0] == 1.0f);
    CHECK(((const float *)f->tensors[0].tensor.data)[1] == 2.0f);
    CHECK(((const int32_t *)f->tensors[1].tensor.data)[0] == 7);
    CHECK(f->tensors[1].tensor.shape.dtype == RLX_I32);
  } else
    CHECK(0);
  rlx_safetensors_free(f);
  free(b);

  /* Two zero-size tensors on the same offset, between two real ones (what writers produce). */
  const char *z = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                  "\"z1\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]},"
                  "\"z2\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[2,2]},"
                  "\"c\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[2,3]}}";
  b = make_st(z, data, 3, &len);
  f = NULL;
  CHECK_OK(rlx_safetensors_read(b, len, &f));
  CHECK(f && f->n_tensors == 4);
  rlx_safetensors_free(f);
  free(b);
}

/* bad-inputs 1: lengths. */
static void test_bad_lengths(void) {
  rlx_safetensors *f = NULL;
  uint8_t small[7] = {2, 0, 0, 0, 0, 0, 0};
  CHECK_ERR(rlx_safetensors_read(small, 7, &f), RLX_ERR_FORMAT, "too short");
  CHECK_ERR(rlx_safetensors_read(small, 0, &f), RLX_ERR_FORMAT, "too short");
  size_t len;
  uint8_t *b = make_raw(0, "{}", 2, NULL, 0, &len);
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT, "header length is 0");
  free(b);
  b = make_raw(100000001, "{}", 2, NULL, 0, &len);
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT, "exceeds the limit");
  free(b);
  b = make_raw(3, "{}", 2, NULL, 0, &len);
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT, "larger than the 2 bytes");
  free(b);
  b = make_raw(UINT64_MAX - 3, "{}", 2, NULL, 0, &len); /* n + 8 overflows 64 bits */
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT, "header length");
  free(b);
  b = make_raw(UINT64_MAX, "{}", 2, NULL, 0, &len);
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT, "header length");
  free(b);
  CHECK(f == NULL);
}

/* bad-inputs 2: encoding and top-level shape of the header. */
static void test_bad_header_text(void) {
  BAD("{\"a\xff\":{}}", 0, RLX_ERR_FORMAT, "byte 3: invalid UTF-8");
  BAD("{\"\xc0\xaf\":{}}", 0, RLX_ERR_FORMAT, "invalid UTF-8");     /* overlong '/' */
  BAD("{\"\xed\xa0\x80\":{}}", 0, RLX_ERR_FORMAT, "invalid UTF-8"); /* UTF-16 surrogate */
  /* an empty tensor name: the writer refuses it, so the reader does too (found by fuzz_safetensors) */
  BAD("{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, RLX_ERR_FORMAT, "a tensor has an empty name");
  BAD("{\"\xf4\x90\x80\x80\":{}}", 0, RLX_ERR_FORMAT, "invalid UTF-8"); /* above U+10FFFF */
  BAD("{\"\xe2\x82\":{}}", 0, RLX_ERR_FORMAT, "invalid UTF-8");         /* cut sequence */
  BAD(" {}", 0, RLX_ERR_FORMAT, "starting with '{'");
  BAD("[]", 0, RLX_ERR_FORMAT, "starting with '{'");
  BAD("\"x\"", 0, RLX_ERR_FORMAT, "starting with '{'");
  BAD("{", 0, RLX_ERR_FORMAT, "expected a tensor name");
  BAD("{\"a\"", 0, RLX_ERR_FORMAT, "':' after a tensor name");
  BAD("{} {}", 0, RLX_ERR_FORMAT, "unexpected text after");
  BAD("{}x", 0, RLX_ERR_FORMAT, "unexpected text after");
  BAD("{\"a\":1}", 0, RLX_ERR_FORMAT, "'{' to start the entry");
  BAD("{\"a\":{}}", 0, RLX_ERR_FORMAT, "empty entry");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[]}}", 0, RLX_ERR_FORMAT, "missing field data_offsets");
  BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "missing field shape");
  BAD("{\"a\":{\"shape\":[],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "missing field dtype");
  BAD("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT,
      "dtype given twice");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"extra\":1}}", 4, RLX_ERR_FORMAT,
      "unknown field 'extra'");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4,8]}}", 4, RLX_ERR_FORMAT, "more than 2");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[4]}}", 4, RLX_ERR_FORMAT, "needs 2 integers");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "non-negative integer");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "fraction or exponent");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "fraction or exponent");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "leading zero");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", 4, RLX_ERR_FORMAT,
      "does not fit in 64 bits");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT,
      "shape has more than 8");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1 1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "',' or ']'");
  BAD("{\"a\":{\"dtype\":F32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "expected dtype");
  BAD("{\"a\\q\":{}}", 0, RLX_ERR_FORMAT, "unknown escape");
  BAD("{\"a\\u12\":{}}", 0, RLX_ERR_FORMAT, "bad \\u escape");
  BAD("{\"a\\udc00\":{}}", 0, RLX_ERR_FORMAT, "lone low surrogate");
  BAD("{\"a\\ud800x\":{}}", 0, RLX_ERR_FORMAT, "without a low surrogate");
  BAD("{\"a\\u0000\":{}}", 0, RLX_ERR_FORMAT, "NUL character");
  BAD("{\"a\tb\":{}}", 0, RLX_ERR_FORMAT, "control character 0x09");
  BAD("{\"ab", 0, RLX_ERR_FORMAT, "unterminated string");
  BAD("{\"a\\", 0, RLX_ERR_FORMAT, "unterminated escape");
}

/* bad-inputs 3: the entry cap. */
static void test_too_many(void) {
  uint32_t n = RLX_SAFETENSORS_MAX_TENSORS + 1;
  size_t cap = (size_t)n * 64 + 16, at = 0;
  char *h = malloc(cap);
  h[at++] = '{';
  for (uint32_t i = 0; i < n; i++)
    at += (size_t)snprintf(h + at, cap - at, "%s\"t%u\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}",
                           i ? "," : "", i);
  h[at++] = '}';
  h[at] = '\0';
  BAD(h, 0, RLX_ERR_FORMAT, "more than 65536 tensors");
  /* Exactly at the cap is fine. */
  char key[32];
  snprintf(key, sizeof key, ",\"t%u\":", n - 1);
  char *last = strstr(h, key);
  CHECK(last != NULL);
  if (!last) {
    free(h);
    return;
  }
  last[0] = '}';
  last[1] = '\0';
  size_t len;
  uint8_t *b = make_st(h, NULL, 0, &len);
  rlx_safetensors *f = NULL;
  CHECK_OK(rlx_safetensors_read(b, len, &f));
  CHECK(f && f->n_tensors == RLX_SAFETENSORS_MAX_TENSORS);
  rlx_safetensors_free(f);
  free(b);
  free(h);
}

/* bad-inputs 4: duplicates and metadata. */
static void test_bad_names_metadata(void) {
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
      2, RLX_ERR_FORMAT, "duplicate tensor name 'a'");
  /* The same name spelled with an escape is the same name. */
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"\\u0061\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
      2, RLX_ERR_FORMAT, "duplicate tensor name 'a'");
  BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, RLX_ERR_FORMAT, "duplicate entry '__metadata__'");
  BAD("{\"__metadata__\":{\"k\":1}}", 0, RLX_ERR_FORMAT, "value of 'k' is not a string");
  BAD("{\"__metadata__\":{\"k\":null}}", 0, RLX_ERR_FORMAT, "value of 'k' is not a string");
  BAD("{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0, RLX_ERR_FORMAT, "value of 'k' is not a string");
  BAD("{\"__metadata__\":{\"k\":[\"y\"]}}", 0, RLX_ERR_FORMAT, "value of 'k' is not a string");
  BAD("{\"__metadata__\":[]}", 0, RLX_ERR_FORMAT, "__metadata__ must be an object");
  BAD("{\"__metadata__\":\"x\"}", 0, RLX_ERR_FORMAT, "__metadata__ must be an object");
  BAD("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, RLX_ERR_FORMAT, "duplicate __metadata__ key 'k'");
}

/* bad-inputs 5: offsets. */
static void test_bad_offsets(void) {
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, RLX_ERR_FORMAT, "end 0 is before begin 4");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8, RLX_ERR_FORMAT, "gap of 4 unused bytes");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[6,10]}}",
      10, RLX_ERR_FORMAT, "tensor 'b': gap of 2");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
      6, RLX_ERR_FORMAT, "overlaps the previous tensor");
  /* Two tensors sharing the same bytes. */
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
      4, RLX_ERR_FORMAT, "overlaps");
  /* A zero-size tensor pointing into the middle of another one. */
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]}}",
      4, RLX_ERR_FORMAT, "overlaps");
  /* Last end beyond the data (truncated file) and short of it (trailing bytes). */
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", 4, RLX_ERR_FORMAT, "past the end of the data");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 6, RLX_ERR_FORMAT, "2 trailing bytes");
  BAD("{}", 1, RLX_ERR_FORMAT, "1 trailing bytes");
}

/* bad-inputs 6: dtypes and sizes. */
static void test_bad_dtypes_sizes(void) {
  BAD("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "unknown dtype 'F33'");
  BAD("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT, "unknown dtype 'f32'");
  BAD("{\"a\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, RLX_ERR_UNSUPPORTED,
      "U16 has no RLX equivalent");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4194305,4194305,211106198978564],\"data_offsets\":[0,4]}}", 4,
      RLX_ERR_FORMAT, "overflows");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT,
      "overflows");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, RLX_ERR_FORMAT,
      "span 4 bytes but F32 of its shape needs 8");
  BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, RLX_ERR_FORMAT,
      "span 8 bytes but F32 of its shape needs 4");
}

/* bad-inputs 7: a valid file with bytes appended (e.g. a polyglot). */
static void test_trailing(void) {
  float v[2] = {1, 2};
  rlx_named_tensor t = {"x", {v, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2})}};
  uint8_t *buf = NULL;
  size_t len = 0;
  CHECK_OK(rlx_safetensors_write(&t, 1, NULL, 0, &buf, &len));
  uint8_t *longer = malloc(len + 5);
  memcpy(longer, buf, len);
  memcpy(longer + len, "<?php", 5);
  rlx_safetensors *f = NULL;
  CHECK_ERR(rlx_safetensors_read(longer, len + 5, &f), RLX_ERR_FORMAT, "5 trailing bytes");
  /* Every truncation of the valid file is rejected too. */
  int rejected = 0;
  for (size_t k = 0; k < len; k++) {
    if (rlx_safetensors_read(buf, k, &f) == RLX_ERR_FORMAT && f == NULL) rejected++;
  }
  CHECK(rejected == (int)len);
  free(longer);
  free(buf);
}

static void test_writer_errors(void) {
  float v = 1;
  uint8_t *buf = NULL;
  size_t len = 0;
  rlx_named_tensor dup[2] = {{"w", {&v, rlx_shape_make(RLX_F32, 0, NULL)}},
                             {"w", {&v, rlx_shape_make(RLX_F32, 0, NULL)}}};
  CHECK_ERR(rlx_safetensors_write(dup, 2, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "duplicate tensor name 'w'");
  rlx_named_tensor meta = {"__metadata__", {&v, rlx_shape_make(RLX_F32, 0, NULL)}};
  CHECK_ERR(rlx_safetensors_write(&meta, 1, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "not allowed");
  rlx_named_tensor empty = {"", {&v, rlx_shape_make(RLX_F32, 0, NULL)}};
  CHECK_ERR(rlx_safetensors_write(&empty, 1, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "not allowed");
  rlx_named_tensor sym = {"s", {&v, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){RLX_DIM_SYM(0)})}};
  CHECK_ERR(rlx_safetensors_write(&sym, 1, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "static");
  double c[2] = {0, 0};
  rlx_named_tensor cplx = {"c", {c, rlx_shape_make(RLX_C128, 0, NULL)}};
  CHECK_ERR(rlx_safetensors_write(&cplx, 1, NULL, 0, &buf, &len), RLX_ERR_UNSUPPORTED, "c128");
  rlx_named_tensor badutf = {"a\xff", {&v, rlx_shape_make(RLX_F32, 0, NULL)}};
  CHECK_ERR(rlx_safetensors_write(&badutf, 1, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "not valid UTF-8");
  rlx_named_tensor nodata = {"n", {NULL, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2})}};
  CHECK_ERR(rlx_safetensors_write(&nodata, 1, NULL, 0, &buf, &len), RLX_ERR_INVALID_ARG, "NULL data");
  rlx_safetensors_kv kv[2] = {{"k", "1"}, {"k", "2"}};
  CHECK_ERR(rlx_safetensors_write(NULL, 0, kv, 2, &buf, &len), RLX_ERR_INVALID_ARG, "duplicate metadata key");
  CHECK(buf == NULL);
  CHECK_ERR(rlx_safetensors_save("/tmp/rlx-no-such-dir/out.safetensors", NULL, 0, NULL, 0), RLX_ERR_IO,
            "cannot open for writing");
}

int main(void) {
  test_exact_bytes();
  test_round_trip();
  test_accepts();
  test_bad_lengths();
  test_bad_header_text();
  test_too_many();
  test_bad_names_metadata();
  test_bad_offsets();
  test_bad_dtypes_sizes();
  test_trailing();
  test_writer_errors();
  return rlx_test_finish("safetensors");
}
