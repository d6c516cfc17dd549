/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer, opsets 18..28 (onnx 1.23): the opset gate, the TensorProto dtypes 17..28 named in
 * gaps, fields newer than Debian's onnx.proto (unknown fields), model-local functions inlined,
 * and semantic changes the generated onnx 1.23 node tests (tests/cli/test_onnx_conformance_new.sh)
 * do not pin down: Range's stash_type for 16-bit floats, Mod with fmod = 0 on floats (signed
 * zeros), SpaceToDepth's mode before and after opset 28, GroupNormalization's per-group (18) and
 * per-channel (21) parameters, BitCast (26) at run time and of constants. Models are built with protobuf-c (tests/common/onnx_build.h);
 * expected values are worked out by hand in the comments. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})

/* Output t holds n f32 values equal to want, signed zeros included. */
static bool is_f32_bits(const rlx_tensor *t, const float *want, size_t n) {
  size_t got;
  if (t->shape.dtype != RLX_F32 || rlx_shape_numel(&t->shape, &got) || got != n) {
    fprintf(stderr, "  got dtype %d rank %u\n", (int)t->shape.dtype, (unsigned)t->shape.rank);
    return false;
  }
  const float *v = t->data;
  for (size_t i = 0; i < n; i++)
    if (v[i] != want[i] || signbit(v[i]) != signbit(want[i])) {
      fprintf(stderr, "  element %zu: got %g, want %g\n", i, (double)v[i], (double)want[i]);
      return false;
    }
  return true;
}

/* f16 bits -> float (normal numbers only; enough for the values below) */
static float f16_value(uint16_t h) {
  int e = (h >> 10) & 31;
  float m = 1.0f + (float)(h & 1023) / 1024.0f;
  return (h & 0x8000 ? -1.0f : 1.0f) * ldexpf(m, e - 15);
}

/* ---- the opset gate ---- */

static ob_model *relu_model(int64_t opset) {
  ob_model *m = ob_model_new(opset);
  ob_input(m, "x", OB_FLOAT, 1, DIMS(3));
  ob_node(m, "Relu", "x", "y");
  ob_output(m, "y", OB_FLOAT, 1, DIMS(3));
  return m;
}

static void test_opset_gate(void) {
  /* every opset up to 28 imports an op that never changed (Relu: versions 1, 6, 13, 14) */
  for (int64_t o = 18; o <= 28; o++) {
    ob_model *m = relu_model(o);
    rlx_graph *g = NULL;
    rlx_status s = ob_import(m, NULL, &g);
    CHECK_MSG(s == RLX_OK, "Relu at opset %lld: %s", (long long)o, rlx_last_error());
    rlx_graph_free(g);
    ob_model_free(m);
  }
  ob_model *m = relu_model(29);
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "Relu: opset 29 is not supported (supported: 1..28)");
  ob_model_free(m);
}

/* ---- dtypes 17..28 are named ---- */

static void test_new_dtypes_named(void) {
  static const struct {
    int32_t code;
    const char *name;
  } dts[] = {{17, "FLOAT8E4M3FN"}, {18, "FLOAT8E4M3FNUZ"}, {19, "FLOAT8E5M2"}, {20, "FLOAT8E5M2FNUZ"},
             {21, "UINT4"},        {22, "INT4"},           {23, "FLOAT4E2M1"}, {24, "FLOAT8E8M0"},
             {25, "UINT2"},        {26, "INT2"},           {27, "FLOAT6E2M3"}, {28, "FLOAT6E3M2"}};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    char want[96];
    /* a graph input of that dtype */
    ob_model *m = ob_model_new(25);
    ob_input(m, "x", dts[i].code, 1, DIMS(4));
    ob_node(m, "Identity", "x", "y");
    ob_output(m, "y", dts[i].code, 1, DIMS(4));
    snprintf(want, sizeof want, "graph input \"x\" has dtype %s, which RLX does not have", dts[i].name);
    expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, want);
    ob_model_free(m);
    /* a Cast to it */
    m = ob_model_new(25);
    ob_input(m, "x", OB_FLOAT, 1, DIMS(4));
    Onnx__NodeProto *n = ob_node(m, "Cast", "x", "y");
    ob_attr_int(m, n, "to", dts[i].code);
    ob_output(m, "y", dts[i].code, 1, DIMS(4));
    snprintf(want, sizeof want, "cast to %s (RLX has no such dtype)", dts[i].name);
    expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, want);
    ob_model_free(m);
  }
  /* past the known list: a number */
  ob_model *m = ob_model_new(25);
  ob_input(m, "x", 40, 1, DIMS(4));
  ob_node(m, "Identity", "x", "y");
  ob_output(m, "y", 40, 1, DIMS(4));
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "has dtype data type 40");
  ob_model_free(m);
}

/* ---- fields newer than Debian's onnx.proto 1.12 are skipped ---- */

static void append_field(uint8_t **buf, size_t *len, unsigned field, const char *payload) {
  size_t pl = strlen(payload), n = *len;
  uint8_t *p = malloc(n + pl + 12);
  if (!p) abort();
  memcpy(p, *buf, n);
  uint64_t tag = ((uint64_t)field << 3) | 2;
  do { /* varint tag */
    p[n++] = (uint8_t)((tag & 0x7f) | (tag > 0x7f ? 0x80 : 0));
    tag >>= 7;
  } while (tag);
  p[n++] = (uint8_t)pl; /* payloads here are < 128 bytes */
  memcpy(p + n, payload, pl);
  *buf = p;
  *len = n + pl;
}

static void test_unknown_fields(void) {
  /* NodeProto.metadata_props (9) and device_configurations (10), added after 1.12; the node is
   * built with unknown fields that protobuf-c packs as they are */
  ob_model *m = ob_model_new(20);
  ob_input(m, "x", OB_FLOAT, 1, DIMS(3));
  Onnx__NodeProto *n = ob_node(m, "Relu", "x", "y");
  /* protobuf-c keeps an unknown field's bytes after the tag: here the length, then the message */
  static uint8_t meta[] = {6, 0x0a, 0x01, 'k', 0x12, 0x01, 'v'}; /* StringStringEntryProto {key "k", value "v"} */
  static uint8_t devcfg[] = {3, 0x0a, 0x01, 'k'}; /* NodeDeviceConfigurationProto {configuration_id "k"} */
  ProtobufCMessageUnknownField uf[2] = {{9, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, sizeof meta, meta},
                                        {10, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, sizeof devcfg, devcfg}};
  n->base.n_unknown_fields = 2;
  n->base.unknown_fields = uf;
  ob_output(m, "y", OB_FLOAT, 1, DIMS(3));
  size_t len;
  const uint8_t *packed = ob_pack(m, &len);
  n->base.n_unknown_fields = 0; /* the builder must not free uf */
  n->base.unknown_fields = NULL;
  /* and ModelProto.configuration (26), also newer */
  uint8_t *bytes = (uint8_t *)packed;
  append_field(&bytes, &len, 26,
               "\x0a\x03"
               "cpu");
  /* ir_version 12 (field 1 again: the last value wins); the importer has no IR version limit */
  uint8_t *p2 = realloc(bytes, len + 2);
  if (!p2) abort();
  bytes = p2;
  bytes[len++] = 0x08, bytes[len++] = 12;
  rlx_graph *g = NULL;
  rlx_status s = onnx_import(bytes, len, NULL, &g);
  CHECK_MSG(s == RLX_OK, "unknown fields: %s", rlx_last_error());
  if (g) {
    rlx_executable *e = NULL;
    float x[3] = {-1, 0.5f, 2}, want[3] = {0, 0.5f, 2};
    rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_F32, 1, DIMS(3))}};
    const rlx_tensor *outs;
    uint32_t no;
    CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
    if (e && rlx_executable_run(e, &in, 1, &outs, &no) == RLX_OK) CHECK(no == 1 && is_f32_bits(&outs[0], want, 3));
    rlx_executable_free(e);
  }
  rlx_graph_free(g);
  free(bytes);
  ob_model_free(m);
}

/* ---- model-local functions are inlined ---- */

/* Appends ModelProto.functions (field 25) = FunctionProto {name, domain "local", inputs, outputs,
 * nodes} to the packed model. `extra` adds raw FunctionProto bytes (e.g. unknown fields). */
static void append_function(uint8_t **buf, size_t *len, const char *name, char **ins, size_t nin, char **outs,
                            size_t nout, Onnx__NodeProto **nodes, size_t nn, const uint8_t *extra, size_t nextra) {
  Onnx__FunctionProto f;
  onnx__function_proto__init(&f);
  f.name = (char *)name;
  f.domain = "local";
  f.input = ins, f.n_input = nin;
  f.output = outs, f.n_output = nout;
  f.node = nodes, f.n_node = nn;
  size_t fl = onnx__function_proto__get_packed_size(&f), n = *len;
  uint8_t *p = malloc(n + fl + nextra + 12);
  if (!p) abort();
  memcpy(p, *buf, n);
  p[n++] = (25 << 3) | 2, p[n++] = 1; /* tag 25 (two varint bytes: 0xca 0x01) */
  p[n - 2] = 0xca;
  size_t body = fl + nextra;
  do {
    p[n++] = (uint8_t)((body & 0x7f) | (body > 0x7f ? 0x80 : 0));
    body >>= 7;
  } while (body);
  n += onnx__function_proto__pack(&f, p + n);
  if (nextra) memcpy(p + n, extra, nextra);
  *buf = p;
  *len = n + nextra;
}

static Onnx__NodeProto body_node(const char *op, char **in, size_t nin, char **out, size_t nout, const char *domain) {
  Onnx__NodeProto n;
  onnx__node_proto__init(&n);
  n.op_type = (char *)op;
  n.domain = (char *)domain;
  n.input = in, n.n_input = nin;
  n.output = out, n.n_output = nout;
  return n;
}

/* The caller model: y = F(x) with F of domain "local"; `alpha` set on the call when >= 0. */
static ob_model *call_model(const char *fname, float alpha) {
  ob_model *m = ob_model_new(20);
  ob_input(m, "x", OB_FLOAT, 1, DIMS(3));
  Onnx__NodeProto *call = ob_node(m, fname, "x", "y");
  call->domain = "local";
  if (alpha >= 0) ob_attr_float(m, call, "alpha", alpha);
  ob_output(m, "y", OB_FLOAT, 1, DIMS(3));
  return m;
}

/* The caller model plus function `fname` (one input "a", one output "b", body `nodes`, extra raw
 * FunctionProto bytes), packed into a malloc'ed buffer. */
static uint8_t *function_model(const char *fname, float alpha, Onnx__NodeProto **nodes, size_t nn, const uint8_t *extra,
                               size_t nextra, size_t *len) {
  char *a[] = {"a"}, *b[] = {"b"};
  ob_model *m = call_model(fname, alpha);
  uint8_t *bytes = (uint8_t *)ob_pack(m, len);
  append_function(&bytes, len, fname, a, 1, b, 1, nodes, nn, extra, nextra);
  ob_model_free(m);
  return bytes;
}

/* Imports `bytes`, runs it on x and checks y bit for bit against want (what names the case). */
static void expect_y(const uint8_t *bytes, size_t len, const rlx_named_tensor *in, const float *want,
                     const char *what) {
  rlx_graph *g = NULL;
  rlx_status s = onnx_import(bytes, len, NULL, &g);
  CHECK_MSG(s == RLX_OK, "%s: %s", what, rlx_last_error());
  if (g) {
    rlx_executable *e = NULL;
    const rlx_tensor *outs;
    uint32_t no;
    CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
    if (e && rlx_executable_run(e, in, 1, &outs, &no) == RLX_OK) CHECK(no == 1 && is_f32_bits(&outs[0], want, 3));
    rlx_executable_free(e);
  }
  rlx_graph_free(g);
}

/* Imports `bytes` and expects the error `code` with `substr` in its message. */
static void expect_import_error(const uint8_t *bytes, size_t len, rlx_status code, const char *substr) {
  rlx_graph *g = NULL;
  CHECK_ERR(onnx_import(bytes, len, NULL, &g), code, substr);
  rlx_graph_free(g);
}

static void test_local_functions(void) {
  char *a[] = {"a"}, *b[] = {"b"}, *t[] = {"t"}, *bt[] = {"b"};
  float x[3] = {-2, 0.5f, 4};
  rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_F32, 1, DIMS(3))}};
  size_t len;
  uint8_t *bytes;
  /* F(a) = LeakyRelu(a, alpha = @alpha) then Neg: with alpha 0.25 the call gives {0.5, -0.5, -4} */
  {
    Onnx__AttributeProto ref;
    onnx__attribute_proto__init(&ref);
    ref.name = "alpha";
    ref.ref_attr_name = "alpha";
    ref.has_type = 1;
    ref.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    Onnx__AttributeProto *refs[1] = {&ref};
    Onnx__NodeProto n0 = body_node("LeakyRelu", a, 1, t, 1, ""), n1 = body_node("Neg", t, 1, bt, 1, "");
    n0.attribute = refs, n0.n_attribute = 1;
    Onnx__NodeProto *nodes[2] = {&n0, &n1};
    bytes = function_model("F", 0.25f, nodes, 2, NULL, 0, &len);
    expect_y(bytes, len, &in, (const float[]){0.5f, -0.5f, -4}, "inlining");
    free(bytes);
    /* the same function declaring alpha = 0.5 as its default (attribute_proto, field 11, unknown
     * to Debian's onnx.proto) and called without alpha: the default applies -> {1, -0.5, -4} */
    static const uint8_t defaults[] = {0x5a, 0x0c, 0x0a, 0x05, 'a', 'l', 'p',
                                       'h',  'a',  0x15, 0,    0,   0,   0x3f}; /* {name "alpha", f 0.5} */
    bytes = function_model("F", -1, nodes, 2, defaults, sizeof defaults, &len);
    expect_y(bytes, len, &in, (const float[]){1.0f, -0.5f, -4}, "function defaults");
    free(bytes);
    /* a malformed default (an AttributeProto holding a field of wire type 7) */
    static const uint8_t bad[] = {0x5a, 0x02, 0x0f, 0x00};
    bytes = function_model("F", -1, nodes, 2, bad, sizeof bad, &len);
    expect_import_error(bytes, len, RLX_ERR_FORMAT, "attribute_proto");
    free(bytes);
  }
  /* a function that calls itself: stopped at the nesting limit */
  {
    Onnx__NodeProto n0 = body_node("R", a, 1, b, 1, "local");
    Onnx__NodeProto *nodes[1] = {&n0};
    bytes = function_model("R", -1, nodes, 1, NULL, 0, &len);
    expect_import_error(bytes, len, RLX_ERR_UNSUPPORTED, "model-local functions nested more than 16 deep");
    free(bytes);
  }
  /* two functions of one name (IR 10 overloads): not told apart, a gap */
  {
    Onnx__NodeProto n0 = body_node("Relu", a, 1, b, 1, ""), n1 = body_node("Neg", a, 1, b, 1, "");
    Onnx__NodeProto *nodes1[1] = {&n1};
    Onnx__NodeProto *nodes0[1] = {&n0};
    uint8_t *first = function_model("O", -1, nodes0, 1, NULL, 0, &len);
    bytes = first;
    append_function(&bytes, &len, "O", a, 1, b, 1, nodes1, 1, NULL, 0);
    free(first);
    expect_import_error(bytes, len, RLX_ERR_UNSUPPORTED, "several model-local functions are named \"O\"");
    free(bytes);
  }
  /* a body reading a name nothing defines is malformed */
  {
    Onnx__NodeProto n0 = body_node("Relu", t, 1, b, 1, "");
    Onnx__NodeProto *nodes[1] = {&n0};
    bytes = function_model("B", -1, nodes, 1, NULL, 0, &len);
    expect_import_error(bytes, len, RLX_ERR_FORMAT,
                        "reads \"t\", which no formal input or earlier node of the function defines");
    free(bytes);
  }
}

/* ---- Range stash_type (27) ---- */

/* Range(2048, 2052, 1) in f16, where f16 steps by 2: with stash_type 1 (f32 accumulation)
 * 2048, 2049, 2050, 2051 round (ties to even) to 2048, 2048, 2050, 2052; with stash_type 0 each
 * step rounds in f16, so 2048 + 1 = 2049 rounds back to 2048 and the sequence never moves. */
static void test_range_stash_type(void) {
  static const uint16_t start = 0x6800 /* 2048 */, limit = 0x6802 /* 2052 */, delta = 0x3c00 /* 1 */;
  for (int stash = 0; stash <= 1; stash++) {
    ob_model *m = ob_model_new(27);
    ob_initializer(m, "s", 10, 0, NULL, &start, 2);
    ob_initializer(m, "l", 10, 0, NULL, &limit, 2);
    ob_initializer(m, "d", 10, 0, NULL, &delta, 2);
    Onnx__NodeProto *n = ob_node(m, "Range", "s,l,d", "y");
    ob_attr_int(m, n, "stash_type", stash);
    ob_output(m, "y", 10, 1, DIMS(4));
    runner r;
    if (run_ob(m, NULL, NULL, 0, &r)) {
      const float want[2][4] = {{2048, 2048, 2048, 2048}, {2048, 2048, 2050, 2052}};
      CHECK(r.n_outs == 1 && r.outs[0].shape.dtype == RLX_F16 && r.outs[0].shape.dims[0] == 4);
      const uint16_t *v = r.outs[0].data;
      for (int i = 0; i < 4 && r.n_outs == 1; i++)
        CHECK_MSG(f16_value(v[i]) == want[stash][i], "stash_type %d element %d: got %g, want %g", stash, i,
                  (double)f16_value(v[i]), (double)want[stash][i]);
    }
    runner_free(&r);
    ob_model_free(m);
  }
}

/* ---- Mod fmod = 0 on floats (28) ---- */

static void test_mod_float_floor(void) {
  /* A - floor(A / B) * B: 5.5 mod 2 = 1.5; -5.5 mod 2 = 0.5; 5.5 mod -2 = -0.5; a zero result
   * takes B's sign: -0 mod 3 = +0, 0 mod -3 = -0, 4 mod -2 = -0; x mod inf of the other sign = inf */
  float a[7] = {5.5f, -5.5f, 5.5f, -0.0f, 0.0f, 4.0f, -1.0f}, b[7] = {2, 2, -2, 3, -3, -2, INFINITY};
  float want[7] = {1.5f, 0.5f, -0.5f, 0.0f, -0.0f, -0.0f, INFINITY};
  ob_model *m = ob_model_new(28);
  ob_initializer(m, "a", OB_FLOAT, 1, DIMS(7), a, sizeof a);
  ob_initializer(m, "b", OB_FLOAT, 1, DIMS(7), b, sizeof b);
  ob_node(m, "Mod", "a,b", "y");
  ob_output(m, "y", OB_FLOAT, 1, DIMS(7));
  runner r;
  if (run_ob(m, NULL, NULL, 0, &r)) CHECK(r.n_outs == 1 && is_f32_bits(&r.outs[0], want, 7));
  runner_free(&r);
  ob_model_free(m);
  /* before opset 28, fmod = 0 on floats is malformed */
  m = ob_model_new(27);
  ob_initializer(m, "a", OB_FLOAT, 1, DIMS(7), a, sizeof a);
  ob_initializer(m, "b", OB_FLOAT, 1, DIMS(7), b, sizeof b);
  ob_node(m, "Mod", "a,b", "y");
  ob_output(m, "y", OB_FLOAT, 1, DIMS(7));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "attribute fmod must be 1 for floating-point inputs before opset 28");
  ob_model_free(m);
}

/* ---- SpaceToDepth mode (28) ---- */

/* x = [1, 2, 2, 2] holding 0..7 (channel c, row h, col w at 4c + 2h + w), blocksize 2. DCR puts
 * the block offset first: out channel (2 dh + dw) * 2 + c = x[c, dh, dw]; CRD puts the channel
 * first: out channel c * 4 + 2 dh + dw = x[c, dh, dw]. An opset-27 model has no mode: DCR even
 * when the attribute is there. */
static void test_space_to_depth_mode(void) {
  float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const float dcr[8] = {0, 4, 1, 5, 2, 6, 3, 7}, crd[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const struct {
    int64_t opset;
    const char *mode;
    const float *want;
  } cases[] = {{28, NULL, dcr}, {28, "DCR", dcr}, {28, "CRD", crd}, {27, "CRD", dcr}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ob_model *m = ob_model_new(cases[i].opset);
    ob_initializer(m, "x", OB_FLOAT, 4, DIMS(1, 2, 2, 2), x, sizeof x);
    Onnx__NodeProto *n = ob_node(m, "SpaceToDepth", "x", "y");
    ob_attr_int(m, n, "blocksize", 2);
    if (cases[i].mode) ob_attr_string(m, n, "mode", cases[i].mode);
    ob_output(m, "y", OB_FLOAT, 4, DIMS(1, 8, 1, 1));
    runner r;
    if (run_ob(m, NULL, NULL, 0, &r))
      CHECK_MSG(r.n_outs == 1 && is_f32_bits(&r.outs[0], cases[i].want, 8), "case %zu", i);
    runner_free(&r);
    ob_model_free(m);
  }
}

/* ---- GroupNormalization: per-group parameters (18) vs per-channel (21) ---- */

/* x = [1, 4, 1] = {1, 3, 5, 7}, 2 groups: group 0 = {1, 3} and group 1 = {5, 7}, each normalized
 * to {-1, 1} (epsilon 0: mean 2 / 6, variance 1). Opset 18: scale {2, 3}, bias {10, 20} per group
 * -> {8, 12, 17, 23}. Opset 21: scale {1, 2, 3, 4}, bias {0, 0, 0, 100} per channel ->
 * {-1, 2, -3, 104}. */
static void test_group_norm_versions(void) {
  float x[4] = {1, 3, 5, 7};
  float sg[2] = {2, 3}, bg[2] = {10, 20}, sc[4] = {1, 2, 3, 4}, bc[4] = {0, 0, 0, 100};
  const float w18[4] = {8, 12, 17, 23}, w21[4] = {-1, 2, -3, 104};
  for (int v = 0; v < 2; v++) {
    int64_t opset = v ? 21 : 18, np = v ? 4 : 2;
    ob_model *m = ob_model_new(opset);
    ob_input(m, "x", OB_FLOAT, 3, DIMS(1, 4, 1));
    ob_initializer(m, "s", OB_FLOAT, 1, &np, v ? sc : sg, (size_t)np * 4);
    ob_initializer(m, "b", OB_FLOAT, 1, &np, v ? bc : bg, (size_t)np * 4);
    Onnx__NodeProto *n = ob_node(m, "GroupNormalization", "x,s,b", "y");
    ob_attr_int(m, n, "num_groups", 2);
    ob_attr_float(m, n, "epsilon", 0.0f);
    ob_output(m, "y", OB_FLOAT, 3, DIMS(1, 4, 1));
    rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_F32, 3, DIMS(1, 4, 1))}};
    runner r;
    if (run_ob(m, NULL, &in, 1, &r)) {
      CHECK(r.n_outs == 1);
      const float *y = r.outs[0].data, *want = v ? w21 : w18;
      for (int i = 0; i < 4 && r.n_outs == 1; i++)
        CHECK_MSG(fabsf(y[i] - want[i]) < 1e-4f, "opset %lld element %d: got %g, want %g", (long long)opset, i,
                  (double)y[i], (double)want[i]);
    }
    runner_free(&r);
    ob_model_free(m);
    /* the other version's parameter shape is rejected */
    m = ob_model_new(opset);
    ob_input(m, "x", OB_FLOAT, 3, DIMS(1, 4, 1));
    int64_t wrong = v ? 2 : 4;
    ob_initializer(m, "s", OB_FLOAT, 1, &wrong, sc, (size_t)wrong * 4);
    ob_initializer(m, "b", OB_FLOAT, 1, &wrong, bc, (size_t)wrong * 4);
    n = ob_node(m, "GroupNormalization", "x,s,b", "y");
    ob_attr_int(m, n, "num_groups", 2);
    ob_output(m, "y", OB_FLOAT, 3, DIMS(1, 4, 1));
    expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, v ? "must be [channels]" : "must be [num_groups]");
    ob_model_free(m);
  }
}

/* ---- BitCast (26) ---- */

static void test_bitcast(void) {
  /* int8 -> uint8 at run time: the same bytes, -1 -> 255, -128 -> 128 */
  ob_model *m = ob_model_new(26);
  ob_input(m, "x", OB_INT8, 1, DIMS(3));
  Onnx__NodeProto *n = ob_node(m, "BitCast", "x", "y");
  ob_attr_int(m, n, "to", OB_UINT8);
  ob_output(m, "y", OB_UINT8, 1, DIMS(3));
  int8_t x[3] = {-1, 5, -128};
  rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_I8, 1, DIMS(3))}};
  runner r;
  if (run_ob(m, NULL, &in, 1, &r)) {
    const uint8_t *y = r.outs[0].data;
    CHECK(r.outs[0].shape.dtype == RLX_U8 && y[0] == 255 && y[1] == 5 && y[2] == 128);
  }
  runner_free(&r);
  ob_model_free(m);
  /* float32 -> int32 of a constant: the IEEE bits (1.0f = 0x3f800000, -2.0f = 0xc0000000) */
  m = ob_model_new(26);
  float f[2] = {1.0f, -2.0f};
  ob_initializer(m, "x", OB_FLOAT, 1, DIMS(2), f, sizeof f);
  n = ob_node(m, "BitCast", "x", "y");
  ob_attr_int(m, n, "to", OB_INT32);
  ob_output(m, "y", OB_INT32, 1, DIMS(2));
  if (run_ob(m, NULL, NULL, 0, &r)) {
    const int32_t *y = r.outs[0].data;
    CHECK(r.outs[0].shape.dtype == RLX_I32 && y[0] == 0x3f800000 && (uint32_t)y[1] == 0xc0000000u);
  }
  runner_free(&r);
  ob_model_free(m);
  /* the same of a run-time value: a gap; a size change: malformed */
  m = ob_model_new(26);
  ob_input(m, "x", OB_FLOAT, 1, DIMS(2));
  n = ob_node(m, "BitCast", "x", "y");
  ob_attr_int(m, n, "to", OB_INT32);
  ob_output(m, "y", OB_INT32, 1, DIMS(2));
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "bit cast from f32 to i32 of a value known only at run time");
  ob_model_free(m);
  m = ob_model_new(26);
  ob_input(m, "x", OB_FLOAT, 1, DIMS(2));
  n = ob_node(m, "BitCast", "x", "y");
  ob_attr_int(m, n, "to", OB_INT64);
  ob_output(m, "y", OB_INT64, 1, DIMS(2));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "changes the element size");
  ob_model_free(m);
}

int main(void) {
  test_opset_gate();
  test_new_dtypes_named();
  test_unknown_fields();
  test_local_functions();
  test_range_stash_type();
  test_mod_float_floor();
  test_space_to_depth_mode();
  test_group_norm_versions();
  test_bitcast();
  return rlx_test_finish("test_onnx_opset");
}
