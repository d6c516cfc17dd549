/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Hostile inputs to the IR formats and the tensor loaders (shared/spec/bad-inputs.md, issue 9):
 *  - shape-rule arithmetic on huge dims and attributes is checked (the fuzz_binary finding
 *    infer_moe.c:217 signed overflow, replayed from tests/fuzz/corpus/binary/regress_*.rlxb);
 *  - the verifier (rlx check) rejects static shapes whose element count or byte size overflows,
 *    which compile rejects too;
 *  - names are at most 4096 bytes of UTF-8 in text, binary and safetensors;
 *  - a .npy descr with an embedded NUL is not read as its prefix.
 * Each case must fail with an error naming the field and the limit, and never crash (the ASan
 * suite runs this file too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/npy.h"
#include "rlx/rlx.h"
#include "rlx/safetensors.h"
#include "rlx_test.h"

static rlx_status parse(const char *text, rlx_graph **g) {
  *g = NULL;
  return rlx_text_parse(text, strlen(text), "hostile", NULL, g);
}

/* CHECK_ERR on a text graph plus a second substring; no graph comes back. */
static void expect_text_error(const char *text, rlx_status code, const char *sub1, const char *sub2) {
  rlx_graph *g = NULL;
  rlx_status s = parse(text, &g);
  const char *e = rlx_last_error();
  CHECK_MSG(s == code && g == NULL && strstr(e, sub1) && (!sub2 || strstr(e, sub2)),
            "expected %s with \"%s\"%s%s%s, got %s: %s", rlx_status_text(code), sub1, sub2 ? " and \"" : "",
            sub2 ? sub2 : "", sub2 ? "\"" : "", rlx_status_text(s), e);
  rlx_graph_free(g);
}

/* ---- checked arithmetic in the shape rules ---- */

static void test_dequant_block_overflow(void) {
  /* block_size near INT64_MAX: ceil(K / block) used to compute K + block - 1 and overflow */
  expect_text_error("graph @g {\n"
                    "  %0 = Input {name = \"x\"} : [2, 32] f32\n"
                    "  %1 = Input {name = \"w\"} : [32, 4] i8\n"
                    "  %2 = Input {name = \"s\"} : [2, 4] f32\n"
                    "  %3 = Input {name = \"z\"} : [2, 4] f32\n"
                    "  %4 = DequantMatMul(%0, %1, %2, %3) {scheme = Int8BlockAsym, block_size = 9223372036854775000} "
                    ": [2, 4] f32\n"
                    "  return %4\n}\n",
                    RLX_ERR_SHAPE, "%4 (DequantMatMul)", "blocks of 9223372036854775000 it needs 1 rows");
  /* K = INT64_MAX - 20 with blocks of 12408 (the second fuzz input's numbers); ceil(K / 12408) =
   * 743340750874821 (Python: -(-(2**63 - 21) // 12408)) */
  expect_text_error("graph @g {\n"
                    "  %0 = Input {name = \"x\"} : [1, 9223372036854775787] f16\n"
                    "  %1 = Input {name = \"w\"} : [32, 4] i8\n"
                    "  %2 = Input {name = \"s\"} : [2, 4] f32\n"
                    "  %3 = Input {name = \"z\"} : [2, 4] f32\n"
                    "  %4 = DequantMatMul(%0, %1, %2, %3) {scheme = Int8BlockAsym, block_size = 12408} : [1, 4] f32\n"
                    "  return %4\n}\n",
                    RLX_ERR_OVERFLOW, "%0 (Input): declared shape [1, 9223372036854775787] f16",
                    "%4 (DequantMatMul): operand 2 (scale) has shape [2, 4] f32; with K = 9223372036854775787 and "
                    "blocks of 12408 it needs 743340750874821 rows");
  /* MxFp4x2Block with K = 0 used to take a remainder by zero */
  expect_text_error("graph @g {\n"
                    "  %0 = Input {name = \"x\"} : [2, 0] f32\n"
                    "  %1 = Input {name = \"w\"} : [8] u8\n"
                    "  %2 = Input {name = \"s\"} : [4] f32\n"
                    "  %3 = DequantMatMul(%0, %1, %2) {scheme = MxFp4x2Block, group_size = 32} : [2, 4] f32\n"
                    "  return %3\n}\n",
                    RLX_ERR_SHAPE, "%3 (DequantMatMul)", "K = 0; MxFp4x2Block needs K >= 1");
}

/* The crash inputs fuzz_binary found: read (and verified) cleanly, rejected with a message. */
static void test_fuzz_regressions(void) {
  const char *root = getenv("RLX_SOURCE_DIR");
  const char *files[] = {"regress_moe_block_ceil_overflow.rlxb", "regress_moe_block_ceil_overflow2.rlxb"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/binary/%s", root ? root : ".", files[i]);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s (set RLX_SOURCE_DIR)", path);
    if (!f) continue;
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    rlx_graph *g = NULL;
    rlx_status s = rlx_binary_read(buf, n, NULL, &g);
    CHECK_MSG(s != RLX_OK && g == NULL && strstr(rlx_last_error(), "DequantMatMul"), "%s: %s: %s", files[i],
              rlx_status_text(s), rlx_last_error());
    rlx_graph_free(g);
  }
}

/* ---- sizes that cannot be allocated are rejected by the verifier, as by compile ---- */

static void test_size_overflow_rejected_by_check(void) {
  /* 2^62 * 4 elements: the element count overflows int64 */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [4611686018427387904, 4] f32\n  return %0\n}\n",
                    RLX_ERR_OVERFLOW, "%0 (Input): declared shape [4611686018427387904, 4] f32",
                    "the element count overflows int64");
  /* 2^61 * 2 = 2^62 elements of 4 bytes: the byte size overflows */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [2305843009213693952, 2] f32\n  return %0\n}\n",
                    RLX_ERR_OVERFLOW, "4611686018427387904 elements of 4 bytes", "the byte size overflows int64");
  /* an inferred shape that overflows: Tile of a large extent */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [1099511627776] u8\n"
                    "  %1 = Tile(%0) {reps = [16777216]} : [18446744073709551616] u8\n  return %1\n}\n",
                    RLX_ERR_PARSE, "", NULL); /* the declared dim itself does not fit: a parse error */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [1099511627776] u8\n"
                    "  %1 = Tile(%0) {reps = [16777216]} : [?0] u8\n  return %1\n}\n",
                    RLX_ERR_OVERFLOW, "%1 (Tile): attribute reps", "1099511627776 * 16777216 overflows int64");
  /* sums: Concat and Pad name both operands */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [4611686018427387904] u8\n"
                    "  %1 = Concat(%0, %0) {axis = 0} : [?0] u8\n  return %1\n}\n",
                    RLX_ERR_OVERFLOW, "%1 (Concat)", "4611686018427387904 + 4611686018427387904 overflows int64");
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [9223372036854775000] u8\n"
                    "  %1 = Pad(%0) {pads = [0, 1000]} : [?0] u8\n  return %1\n}\n",
                    RLX_ERR_OVERFLOW, "%1 (Pad): attribute pads", "9223372036854775000 + 1000 overflows int64");
  /* the same graph built through the API: rlx_verify and rlx_compile both refuse it */
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "big", &g));
  rlx_shape s = {.dtype = RLX_F32, .rank = 2, .dims = {(int64_t)1 << 61, 2}};
  rlx_id x;
  CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Input, NULL, 0, &(rlx_attrs_Input){.name = "x"}, &s, NULL, &x));
  CHECK_OK(rlx_graph_set_outputs(g, &x, 1));
  CHECK_ERR(rlx_verify(g), RLX_ERR_OVERFLOW, "the byte size overflows int64");
  rlx_executable *e = NULL;
  CHECK(rlx_compile(g, "cpu", NULL, &e) != RLX_OK && e == NULL);
  rlx_graph_free(g);
  /* just below the limit is accepted by the verifier (2^60 f32 = 2^62 bytes) */
  CHECK_OK(rlx_graph_create(NULL, "ok", &g));
  s.dims[0] = (int64_t)1 << 59;
  CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Input, NULL, 0, &(rlx_attrs_Input){.name = "x"}, &s, NULL, &x));
  CHECK_OK(rlx_graph_set_outputs(g, &x, 1));
  CHECK_OK(rlx_verify(g));
  rlx_graph_free(g);
}

/* ---- attribute lists through the API ---- */

/* A list attribute that claims entries but has no data is refused with the op and field named; an
 * empty list and a real one are copied (the caller's buffer may go away after the add). */
static void test_attr_list_without_data(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "lists", &g));
  rlx_shape s = {.dtype = RLX_F32, .rank = 2, .dims = {2, 3}};
  rlx_id x, y;
  CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Input, NULL, 0, &(rlx_attrs_Input){.name = "x"}, &s, NULL, &x));
  CHECK_ERR(
      rlx_graph_add(g, RLX_OP_Transpose, &x, 1, &(rlx_attrs_Transpose){.perm = {.v = NULL, .n = 2}}, NULL, NULL, &y),
      RLX_ERR_INVALID_ARG, "Transpose: attribute perm has 2 entries but no data");
  int64_t *perm = malloc(2 * sizeof *perm);
  perm[0] = 1;
  perm[1] = 0;
  CHECK_OK(
      rlx_graph_add(g, RLX_OP_Transpose, &x, 1, &(rlx_attrs_Transpose){.perm = {.v = perm, .n = 2}}, NULL, NULL, &y));
  perm[0] = 7; /* the graph holds its own copy */
  free(perm);
  const rlx_attrs *a = &rlx_graph_node(g, y)->attrs;
  CHECK(a->Transpose.perm.n == 2 && a->Transpose.perm.v[0] == 1 && a->Transpose.perm.v[1] == 0);
  rlx_graph_free(g);
}

/* ---- names ---- */

/* A text graph whose node name is `n` copies of 'a' (and, when `leaf`, the Input name too). */
static char *text_with_name(size_t n, bool leaf) {
  char *name = malloc(n + 1);
  memset(name, 'a', n);
  name[n] = 0;
  size_t cap = 2 * n + 256;
  char *t = malloc(cap);
  snprintf(t, cap, "graph @g {\n  %%0 = Input {name = \"%s\"} : [2] f32 \"%s\"\n  return %%0\n}\n", leaf ? name : "x",
           leaf ? "n" : name);
  free(name);
  return t;
}

static void test_name_limits_text(void) {
  char *t = text_with_name(4096, false);
  rlx_graph *g = NULL;
  CHECK_OK(parse(t, &g));
  rlx_graph_free(g);
  free(t);
  t = text_with_name(4097, false);
  expect_text_error(t, RLX_ERR_PARSE, "hostile:2:", "names and strings are limited to 4096 bytes");
  free(t);
  t = text_with_name(64u << 20, false); /* the 64 MiB name of the issue: stops scanning at the limit */
  expect_text_error(t, RLX_ERR_PARSE, "longer than 4096 bytes", NULL);
  free(t);
  t = text_with_name(5000, true); /* a leaf's binding name */
  expect_text_error(t, RLX_ERR_PARSE, "hostile:2:", "4096 bytes");
  free(t);
  /* a graph name (identifier form) */
  size_t n = 5000;
  char *big = malloc(n + 64);
  memcpy(big, "graph @", 7);
  memset(big + 7, 'g', n);
  snprintf(big + 7 + n, 57, " {\n  return\n}\n");
  expect_text_error(big, RLX_ERR_PARSE, "this graph name is 5000 bytes long; names are limited to 4096 bytes", NULL);
  free(big);
  /* escapes must decode to UTF-8: \xff alone is not; \xc3\xa9 (é) is */
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\\xff\"} : [2] f32\n  return %0\n}\n", RLX_ERR_PARSE,
                    "not valid UTF-8", NULL);
  expect_text_error("graph @g {\n  %0 = Input {name = \"x\"} : [2] f32 \"\\xc3\"\n  return %0\n}\n", RLX_ERR_PARSE,
                    "not valid UTF-8", NULL);
  CHECK_OK(
      parse("graph @g {\n  %0 = Input {name = \"x\\xc3\\xa9\"} : [2] f32 \"caf\\xc3\\xa9\"\n  return %0\n}\n", &g));
  rlx_graph_free(g);
}

static void test_name_limits_binary_writer(void) {
  /* a graph built through the API with a name no reader accepts cannot be written either */
  char *name = malloc(5001);
  memset(name, 'n', 5000);
  name[5000] = 0;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "w", &g));
  rlx_shape s = {.dtype = RLX_F32, .rank = 1, .dims = {2}};
  rlx_id x;
  CHECK_OK(rlx_graph_add(g, RLX_OP_Input, NULL, 0, &(rlx_attrs_Input){.name = "x"}, &s, name, &x));
  CHECK_OK(rlx_graph_set_outputs(g, &x, 1));
  uint8_t *out = NULL;
  size_t len = 0;
  CHECK_ERR(rlx_binary_write(g, NULL, &out, &len), RLX_ERR_INVALID_ARG,
            "is 5000 bytes long; names and strings are limited to 4096 bytes");
  rlx_graph_free(g);
  /* invalid UTF-8 in a leaf name */
  CHECK_OK(rlx_graph_create(NULL, "w", &g));
  CHECK_OK(rlx_graph_add(g, RLX_OP_Input, NULL, 0, &(rlx_attrs_Input){.name = "x\xff"}, &s, NULL, &x));
  CHECK_OK(rlx_graph_set_outputs(g, &x, 1));
  CHECK_ERR(rlx_binary_write(g, NULL, &out, &len), RLX_ERR_INVALID_ARG, "is not valid UTF-8");
  rlx_graph_free(g);
  free(name);
}

/* A safetensors image with one f32 [1] tensor named `name` (and metadata key `key` if given). */
static uint8_t *st_image(const char *name, const char *key, size_t *len) {
  size_t hcap = strlen(name) + (key ? strlen(key) : 0) + 128;
  char *h = malloc(hcap);
  int hn;
  if (key)
    hn = snprintf(h, hcap,
                  "{\"__metadata__\":{\"%s\":\"v\"},\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                  key, name);
  else
    hn = snprintf(h, hcap, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
  *len = 8 + (size_t)hn + 4;
  uint8_t *b = calloc(1, *len);
  uint64_t n = (uint64_t)hn;
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
  memcpy(b + 8, h, (size_t)hn);
  free(h);
  return b;
}

static char *repeat(char c, size_t n) {
  char *s = malloc(n + 1);
  memset(s, c, n);
  s[n] = 0;
  return s;
}

static void test_name_limits_safetensors(void) {
  size_t len;
  rlx_safetensors *f = NULL;
  char *ok = repeat('t', 4096), *big = repeat('t', 4097), *huge = repeat('t', 50u * 1000 * 1000);
  uint8_t *b = st_image(ok, NULL, &len);
  CHECK_OK(rlx_safetensors_read(b, len, &f));
  CHECK(f && rlx_safetensors_find(f, ok) != NULL);
  rlx_safetensors_free(f);
  free(b);
  b = st_image(big, NULL, &len);
  f = NULL;
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT,
            "byte 1: a tensor name is 4097 bytes long; the limit is 4096");
  CHECK(f == NULL);
  free(b);
  b = st_image(huge, NULL, &len); /* the 50 MB name of the issue */
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT,
            "a tensor name is 50000000 bytes long; the limit is 4096");
  free(b);
  b = st_image("w", big, &len);
  CHECK_ERR(rlx_safetensors_read(b, len, &f), RLX_ERR_FORMAT,
            "a __metadata__ key is 4097 bytes long; the limit is 4096");
  free(b);
  /* the writer refuses what the reader would refuse */
  float v = 1;
  rlx_named_tensor t = {.name = big, .tensor = {.data = &v, .shape = {.dtype = RLX_F32, .rank = 1, .dims = {1}}}};
  uint8_t *out = NULL;
  CHECK_ERR(rlx_safetensors_write(&t, 1, NULL, 0, &out, &len), RLX_ERR_INVALID_ARG,
            "tensor name 0 is 4097 bytes long; the limit is 4096");
  t.name = "w";
  rlx_safetensors_kv kv = {.key = big, .value = "v"};
  CHECK_ERR(rlx_safetensors_write(&t, 1, &kv, 1, &out, &len), RLX_ERR_INVALID_ARG, "metadata key 0 is 4097 bytes long");
  kv = (rlx_safetensors_kv){.key = "k", .value = big}; /* values are not names: no limit */
  CHECK_OK(rlx_safetensors_write(&t, 1, &kv, 1, &out, &len));
  free(out);
  free(ok);
  free(big);
  free(huge);
}

/* ---- npy descr ---- */

/* A v1.0 .npy of one f32 element whose header dict is `dict` (padded with spaces and '\n'). */
static uint8_t *npy_image(const char *dict, size_t dict_len, size_t *len) {
  size_t hl = 10 + dict_len + 1;
  size_t pad = (64 - hl % 64) % 64;
  size_t hlen = dict_len + pad + 1;
  *len = 10 + hlen + 4;
  uint8_t *b = calloc(1, *len);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (uint8_t)(hlen & 0xff);
  b[9] = (uint8_t)(hlen >> 8);
  memcpy(b + 10, dict, dict_len);
  memset(b + 10 + dict_len, ' ', pad);
  b[10 + hlen - 1] = '\n';
  return b;
}

static void test_npy_descr_nul(void) {
  static const char good[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  static const char nul[] = "{'descr': '<f4\0', 'fortran_order': False, 'shape': (1,), }";
  static const char junk[] = "{'descr': '<f4\0junk', 'fortran_order': False, 'shape': (1,), }";
  size_t len;
  rlx_tensor t;
  uint8_t *b = npy_image(good, sizeof good - 1, &len);
  CHECK_OK(rlx_npy_read(b, len, NULL, &t));
  rlx_npy_tensor_free(&t, NULL);
  free(b);
  b = npy_image(nul, sizeof nul - 1, &len);
  CHECK_ERR(rlx_npy_read(b, len, NULL, &t), RLX_ERR_FORMAT, "descr contains byte 0x00");
  free(b);
  b = npy_image(junk, sizeof junk - 1, &len);
  CHECK_ERR(rlx_npy_read(b, len, NULL, &t), RLX_ERR_FORMAT, "npy header, byte 24: descr contains byte 0x00");
  free(b);
}

/* Header lengths at the u32 extremes (versions 2.0 and 3.0): refused before anything is read. */
static void test_npy_header_length(void) {
  uint8_t v2[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff};
  uint8_t v3[16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 3, 0, 0x00, 0x00, 0x00, 0x80};
  rlx_tensor t;
  CHECK_ERR(rlx_npy_read(v2, sizeof v2, NULL, &t), RLX_ERR_FORMAT,
            "byte 8: header length 4294967295 exceeds the limit of 1048576 bytes");
  CHECK_ERR(rlx_npy_read(v3, sizeof v3, NULL, &t), RLX_ERR_FORMAT, "header length 2147483648 exceeds the limit");
}

int main(void) {
  test_dequant_block_overflow();
  test_fuzz_regressions();
  test_size_overflow_rejected_by_check();
  test_attr_list_without_data();
  test_name_limits_text();
  test_name_limits_binary_writer();
  test_name_limits_safetensors();
  test_npy_descr_nul();
  test_npy_header_length();
  return rlx_test_finish("hostile_inputs");
}
