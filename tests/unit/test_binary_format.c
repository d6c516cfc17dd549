/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The binary format: the byte layout of docs/ir-format.md (encoded here by hand), truncation at
 * every byte of every sample, corrupted counts/lengths/enums/flags, bad magic and version,
 * trailing bytes and the nesting limit. Every failure is a clean RLX_ERR_FORMAT naming the offset. */
#include <stdlib.h>

#include "graph_samples.h"
#include "rlx_test.h"

/* ---- a tiny independent encoder ---- */

typedef struct enc {
  uint8_t b[1 << 18];
  size_t n;
} enc;

static size_t put(enc *e, uint64_t v, int bytes) {
  size_t at = e->n;
  for (int i = 0; i < bytes; i++) e->b[e->n++] = (uint8_t)(v >> (8 * i));
  return at;
}
static size_t put_str(enc *e, const char *s) {
  size_t at = put(e, strlen(s), 4);
  memcpy(e->b + e->n, s, strlen(s));
  e->n += strlen(s);
  return at;
}
static void header(enc *e) {
  e->n = 0;
  memcpy(e->b, "RLXB", 4);
  e->n = 4;
  put(e, RLX_BINARY_VERSION, 4);
  put(e, 0, 4);
}

/* Offsets of interesting fields in the hand-made graph @h. */
typedef struct h_offsets {
  size_t name_len, node_count, op0, n_in0, rank0, dtype0, dim0, nodename0, attr_name_len, attr_name_char;
  size_t op1, operand1, list_count1, output_count, output_id;
} h_offsets;

/* graph @h { %0 = Input {name = "x"} : [2, 3] f32
 *            %1 = Reshape(%0) {new_shape = [3, 2]} : [3, 2] f32 "r"
 *            return %1 } */
static void encode_h(enc *e, h_offsets *o) {
  header(e);
  o->name_len = put_str(e, "h");
  o->node_count = put(e, 2, 4);
  o->op0 = put(e, RLX_OP_Input, 2);
  o->n_in0 = put(e, 0, 4);
  o->rank0 = put(e, 2, 1);
  o->dtype0 = put(e, RLX_F32, 1);
  o->dim0 = put(e, 2, 8);
  put(e, 3, 8);
  o->nodename0 = put(e, 0xFFFFFFFFu, 4);
  o->attr_name_len = put_str(e, "x");
  o->attr_name_char = o->attr_name_len + 4;
  o->op1 = put(e, RLX_OP_Reshape, 2);
  put(e, 1, 4);
  o->operand1 = put(e, 0, 4);
  put(e, 2, 1);
  put(e, RLX_F32, 1);
  put(e, 3, 8);
  put(e, 2, 8);
  put_str(e, "r");
  o->list_count1 = put(e, 2, 4);
  put(e, 3, 8);
  put(e, 2, 8);
  o->output_count = put(e, 1, 4);
  o->output_id = put(e, 1, 4);
}

static void expect_format_error(const uint8_t *data, size_t len, const char *substr, const char *what) {
  /* copy into an exact-size heap block so that any over-read trips the address sanitizer */
  uint8_t *copy = malloc(len ? len : 1);
  if (len) memcpy(copy, data, len);
  rlx_graph *g = (rlx_graph *)&g;
  rlx_status s = rlx_binary_read(copy, len, NULL, &g);
  CHECK_MSG(s == RLX_ERR_FORMAT && g == NULL && strstr(rlx_last_error(), substr),
            "%s: expected a format error with \"%s\", got %s: %s", what, substr, rlx_status_text(s), rlx_last_error());
  if (s == RLX_OK) rlx_graph_free(g);
  free(copy);
}

static void patch(enc *e, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) e->b[at + i] = (uint8_t)(v >> (8 * i));
}

static void check_layout_and_corruption(void) {
  static enc e;
  h_offsets o;
  encode_h(&e, &o);

  /* The reader accepts the hand encoding and the writer reproduces it byte for byte. */
  rlx_graph *g = NULL;
  CHECK_OK(rlx_binary_read(e.b, e.n, NULL, &g));
  if (g) {
    CHECK(rlx_graph_node_count(g) == 2 && strcmp(rlx_graph_name(g), "h") == 0);
    const rlx_node *r = rlx_graph_node(g, 1);
    CHECK(r->op == RLX_OP_Reshape && r->attrs.Reshape.new_shape.n == 2 && r->attrs.Reshape.new_shape.v[0] == 3);
    CHECK(r->name && strcmp(r->name, "r") == 0 && rlx_graph_node(g, 0)->name == NULL);
    uint8_t *out = NULL;
    size_t n = 0;
    CHECK_OK(rlx_binary_write(g, NULL, &out, &n));
    CHECK(out && n == e.n && memcmp(out, e.b, n) == 0);
    free(out);
    rlx_graph_free(g);
  }

  struct {
    size_t at;
    uint64_t v;
    int bytes;
    const char *msg;
  } cases[] = {
      {0, 'X', 1, "byte offset 0: not a binary graph"},
      {4, 2, 4, "byte offset 4: format version 2 is not supported"},
      {8, 1, 4, "byte offset 8: flags 0x1"},
      {o.name_len, 0xFFFFFFFFu, 4, "byte offset 12: graph name is required"},
      {o.name_len, 0x7FFFFFFFu, 4,
       "byte offset 12: graph name has length 2147483647; names and strings are limited to 4096 bytes"},
      {o.name_len, 4097, 4, "byte offset 12: graph name has length 4097; names and strings are limited to 4096 bytes"},
      {o.name_len, 4096, 4, "byte offset 12: graph name has length 4096 but only"},
      {o.node_count, 0xFFFFFFFFu, 4, "byte offset 17 in graph @h: node count 4294967295 needs"},
      {o.node_count, 0x80000000u, 4, "node count 2147483648 needs"},
      {o.op0, 0xFFFF, 2, "byte offset 21 in graph @h node 0: unknown op kind 65535"},
      {o.op0, RLX_OP_COUNT, 2, "unknown op kind 187"},
      {o.n_in0, 0xFFFFFFFFu, 4, "operand count 4294967295 needs"},
      {o.n_in0, 1, 4, "Input takes 0 operands, found 1"},
      {o.rank0, 9, 1, "shape rank 9 exceeds 8"},
      {o.dtype0, RLX_DTYPE_COUNT, 1, "shape dtype 13 is not a dtype"},
      {o.dim0, (uint64_t)INT64_MIN, 8, "shape dim 0 is -9223372036854775808, neither an extent nor a symbol"},
      {o.nodename0, 0xFFFFFFFEu, 4, "node name has length 4294967294; names and strings are limited to 4096 bytes"},
      {o.nodename0, 200, 4, "node name has length 200 but only"},
      {o.attr_name_len, 0xFFFFFFF0u, 4, "attribute name: string has length"},
      {o.attr_name_char, 0, 1, "attribute name: string contains a NUL byte"},
      {o.attr_name_char, 0xff, 1, "attribute name: string is not valid UTF-8"},
      {o.attr_name_char, 0xc3, 1, "attribute name: string is not valid UTF-8"}, /* a lead byte without its tail */
      {o.attr_name_char, 0x80, 1, "attribute name: string is not valid UTF-8"}, /* a lone continuation byte */
      {o.op1, RLX_OP_MatMul, 2, "node 1 (MatMul): MatMul takes 2 operands, found 1"},
      {o.op1, 0xFFFE, 2, "in graph @h node 1: unknown op kind 65534"},
      {o.operand1, 1, 4, "node 1 (Reshape): operand 0 refers to node 1, which is not defined before node 1"},
      {o.operand1, 0xFFFFFFFFu, 4, "operand 0 refers to node 4294967295"},
      {o.list_count1, 0xFFFFFFFFu, 4, "attribute new_shape: list length 4294967295 needs 34359738360 bytes but only"},
      {o.output_count, 0xFFFFFFFFu, 4, "output count 4294967295 needs"},
      {o.output_id, 2, 4, "output 0 refers to node 2, but the graph has 2 nodes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    static enc m;
    m = e;
    patch(&m, cases[i].at, cases[i].v, cases[i].bytes);
    char what[64];
    snprintf(what, sizeof what, "corruption %zu", i);
    expect_format_error(m.b, m.n, cases[i].msg, what);
  }
  /* trailing bytes and an empty buffer */
  static enc t;
  t = e;
  t.b[t.n++] = 0;
  expect_format_error(t.b, t.n, "1 trailing byte after the graph record", "trailing");
  expect_format_error(e.b, 0, "byte offset 0: not a binary graph", "empty");
  expect_format_error(e.b, 3, "byte offset 0: not a binary graph", "3 bytes");
  /* A graph that decodes but does not verify is rejected by the verifier. */
  static enc v;
  v = e;
  patch(&v, o.list_count1 + 4, 5, 8); /* new_shape [5, 2] does not preserve 6 elements */
  g = NULL;
  rlx_status s = rlx_binary_read(v.b, v.n, NULL, &g);
  CHECK_MSG(s == RLX_ERR_SHAPE || s == RLX_ERR_VERIFY, "unverifiable graph read as %s: %s", rlx_status_text(s),
            rlx_last_error());
  CHECK(g == NULL);
}

/* Attribute encodings: enums, bools, optionals, bytes, chain steps. */
static void check_attribute_values(void) {
  /* graph @a { %0 = Input {name="x"} : [3] f32 ; %1 = Activation(%0) {kind=K} : [3] f32 ; return %1 } */
  static enc e;
  header(&e);
  put_str(&e, "a");
  put(&e, 2, 4);
  put(&e, RLX_OP_Input, 2);
  put(&e, 0, 4);
  put(&e, 1, 1);
  put(&e, RLX_F32, 1);
  put(&e, 3, 8);
  put(&e, 0xFFFFFFFFu, 4);
  put_str(&e, "x");
  put(&e, RLX_OP_Activation, 2);
  put(&e, 1, 4);
  put(&e, 0, 4);
  put(&e, 1, 1);
  put(&e, RLX_F32, 1);
  put(&e, 3, 8);
  put(&e, 0xFFFFFFFFu, 4);
  size_t kind = put(&e, RLX_ACT_TANH, 4);
  put(&e, 1, 4);
  put(&e, 1, 4);
  rlx_graph *g = NULL;
  CHECK_OK(rlx_binary_read(e.b, e.n, NULL, &g));
  if (g) CHECK(rlx_graph_node(g, 1)->attrs.Activation.kind == RLX_ACT_TANH);
  rlx_graph_free(g);
  patch(&e, kind, 99, 4);
  expect_format_error(e.b, e.n, "attribute kind: 99 is not a Activation", "enum");
  patch(&e, kind, (uint64_t)-1, 4);
  expect_format_error(e.b, e.n, "-1 is not a Activation", "negative enum");

  /* Sort {axis = i64, descending = bool}: bool byte 2 is rejected */
  rlx_graph *s = NULL;
  const char *txt = "graph @s {\n  %0 = Input {name = \"x\"} : [3] f32\n  %1 = Sort(%0) {descending = true} : [3] "
                    "f32\n  return %1\n}\n";
  CHECK_OK(rlx_text_parse(txt, strlen(txt), NULL, NULL, &s));
  uint8_t *bin = NULL;
  size_t n = 0;
  if (s) CHECK_OK(rlx_binary_write(s, NULL, &bin, &n));
  if (bin) {
    /* the bool is the byte just before the output count and id (8 bytes from the end) */
    CHECK(bin[n - 9] == 1);
    bin[n - 9] = 2;
    expect_format_error(bin, n, "attribute descending: descending must be 0 or 1, found 2", "bool");
  }
  free(bin);
  rlx_graph_free(s);

  /* optional f32 (presence byte then bits), chain steps and cast sub-ops */
  const char *txt2 = "graph @c {\n"
                     "  %0 = Input {name = \"x\"} : [3] f32\n"
                     "  %1 = ElementwiseRegion(%0) {chain = [Activation(Relu, in0)]} : [3] f32\n"
                     "  return %1\n"
                     "}\n";
  CHECK_OK(rlx_text_parse(txt2, strlen(txt2), NULL, NULL, &s));
  bin = NULL;
  if (s) CHECK_OK(rlx_binary_write(s, NULL, &bin, &n));
  if (bin) {
    /* layout of the region attributes, from the end: chain (u32 count + one 10-byte step:
     * kind u8, sub-op i32, operand (u8 is_step, u32 index)),
     * num_inputs i64, scalar_input_mask i64, input_modulus u32 count, prologue i32,
     * prologue_input i64, then outputs (8 bytes) */
    size_t tail = 8 + 8 + 4 + 4 + 8 + 8;
    size_t step = n - tail - 10;
    CHECK(bin[step - 4] == 1 && bin[step] == RLX_CHAIN_STEP_ACTIVATION && bin[step + 1] == RLX_ACT_RELU);
    uint8_t *m = malloc(n);
    memcpy(m, bin, n);
    m[step] = RLX_CHAIN_STEP_COUNT;
    expect_format_error(m, n, "chain step 0 has unknown kind 5", "chain kind");
    memcpy(m, bin, n);
    m[step + 1] = 200;
    expect_format_error(m, n, "chain step 0 has out-of-range sub-op 200", "chain sub");
    memcpy(m, bin, n);
    m[step + 5] = 7;
    expect_format_error(m, n, "chain operand kind must be 0 or 1, found 7", "chain operand");
    memcpy(m, bin, n);
    m[step - 4] = 0xFF, m[step - 3] = 0xFF, m[step - 2] = 0xFF, m[step - 1] = 0x0F;
    expect_format_error(m, n, "chain step count 268435455 needs 2684354550 bytes", "chain count");
    free(m);
  }
  free(bin);
  rlx_graph_free(s);
}

/* Hand-encoded CustomFn nesting: `depth` levels of fwd_body. */
static void encode_nest(enc *e, int depth) {
  put_str(e, "b");
  if (depth == 0) {
    put(e, 1, 4);
    put(e, RLX_OP_Input, 2), put(e, 0, 4), put(e, 1, 1), put(e, RLX_F32, 1), put(e, 2, 8), put(e, 0xFFFFFFFFu, 4);
    put_str(e, "x");
    put(e, 1, 4), put(e, 0, 4);
    return;
  }
  put(e, 2, 4);
  put(e, RLX_OP_Input, 2), put(e, 0, 4), put(e, 1, 1), put(e, RLX_F32, 1), put(e, 2, 8), put(e, 0xFFFFFFFFu, 4);
  put_str(e, "x");
  put(e, RLX_OP_CustomFn, 2), put(e, 1, 4), put(e, 0, 4), put(e, 1, 1), put(e, RLX_F32, 1), put(e, 2, 8),
      put(e, 0xFFFFFFFFu, 4);
  encode_nest(e, depth - 1); /* fwd_body */
  put(e, 0, 1);              /* vjp_body: none */
  put(e, 0, 1);              /* jvp_body: none */
  put(e, 1, 8);              /* num_inputs */
  put(e, 1, 4), put(e, 1, 4);
}

static void check_depth(void) {
  static enc e;
  header(&e);
  encode_nest(&e, 64);
  rlx_graph *g = NULL;
  rlx_status s = rlx_binary_read(e.b, e.n, NULL, &g);
  CHECK_MSG(s == RLX_OK, "64 levels: %s", rlx_last_error());
  rlx_graph_free(g);
  header(&e);
  encode_nest(&e, 65);
  expect_format_error(e.b, e.n, "bodies nested deeper than 64 levels", "depth 65");
  header(&e);
  encode_nest(&e, 1000);
  expect_format_error(e.b, e.n, "bodies nested deeper than 64 levels", "depth 1000");
}

/* Every proper prefix of every sample's encoding is rejected cleanly. */
static void truncate_everywhere(const char *what, const rlx_graph *g) {
  uint8_t *bin = NULL;
  size_t n = 0;
  rlx_status s = rlx_binary_write(g, NULL, &bin, &n);
  CHECK_MSG(s == RLX_OK, "%s: %s", what, rlx_last_error());
  if (s) return;
  int bad = 0;
  for (size_t k = 0; k < n; k++) {
    uint8_t *copy = malloc(k ? k : 1);
    memcpy(copy, bin, k);
    rlx_graph *r = NULL;
    s = rlx_binary_read(copy, k, NULL, &r);
    if (s != RLX_ERR_FORMAT || r || !strstr(rlx_last_error(), "byte offset")) {
      if (bad++ < 3)
        CHECK_MSG(false, "%s: prefix of %zu/%zu bytes: %s: %s", what, k, n, rlx_status_text(s), rlx_last_error());
    }
    if (s == RLX_OK) rlx_graph_free(r);
    free(copy);
  }
  CHECK_MSG(bad == 0, "%s: %d prefixes misbehaved", what, bad);
  /* the reported offset of a truncation lies inside the data */
  rlx_graph *r = NULL;
  rlx_binary_read(bin, n - 1, NULL, &r);
  const char *m = strstr(rlx_last_error(), "byte offset ");
  CHECK_MSG(m && strtoull(m + 12, NULL, 10) < n - 1, "%s: %s", what, rlx_last_error());
  free(bin);
}

int main(void) {
  check_layout_and_corruption();
  check_attribute_values();
  check_depth();
  for (int i = 0; i < RLX_OP_COUNT; i++) {
    rlx_graph *g = NULL;
    if (sample_op_graph((rlx_op)i, NULL, &g) != RLX_OK) {
      CHECK_MSG(false, "sample %s: %s", rlx_op_name((rlx_op)i), rlx_last_error());
      continue;
    }
    truncate_everywhere(rlx_op_name((rlx_op)i), g);
    rlx_graph_free(g);
  }
  for (int i = 0; i < sample_extra_count(); i++) {
    rlx_graph *g = NULL;
    if (sample_extra_graph(i, NULL, &g) != RLX_OK) continue;
    if (strcmp(sample_extra_name(i), "deep") != 0) truncate_everywhere(sample_extra_name(i), g);
    rlx_graph_free(g);
  }
  return rlx_test_finish("binary_format");
}
