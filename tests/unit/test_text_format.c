/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The text format: hand-written canonical texts print back unchanged and parse to the values
 * they spell; non-canonical spellings normalise; malformed texts fail with a located message;
 * the example graphs under tests/graphs load and verify; rlx_load_graph_file and dot. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rlx_test.h"

static rlx_graph *parse_ok(const char *text) {
  rlx_graph *g = NULL;
  rlx_status s = rlx_text_parse(text, strlen(text), "t.rlx", NULL, &g);
  CHECK_MSG(s == RLX_OK, "parse failed: %s\n%s", rlx_last_error(), text);
  return g;
}

/* print(parse(text)) must equal `expect` (text itself when NULL). */
static void check_canonical(const char *text, const char *expect) {
  rlx_graph *g = parse_ok(text);
  if (!g) return;
  char *out = NULL;
  size_t len = 0;
  CHECK_OK(rlx_text_print(g, NULL, &out, &len));
  const char *want = expect ? expect : text;
  CHECK_MSG(out && strcmp(out, want) == 0, "printed text differs.\n--- want\n%s--- got\n%s", want, out ? out : "");
  free(out);
  rlx_graph_free(g);
}

/* ---- canonical texts ---- */

static const char *const canonical[] = {
    "graph @main {\n"
    "  %0 = Input {name = \"x\"} : [4, ?0] f32\n"
    "  %1 = Param {name = \"w\"} : [?0, 8] f32\n"
    "  %2 = MatMul(%0, %1) : [4, 8] f32 \"proj\"\n"
    "  %3 = Constant {data = 0x0000803f} : [] f32\n"
    "  %4 = Binary(%2, %3) {op = Mul} : [4, 8] f32\n"
    "  return %2, %4\n"
    "}\n",

    "graph @empty {\n"
    "}\n",

    "graph @\"odd name\\t1\" {\n"
    "  %0 = Input {name = \"q\\\"\\\\\\n\\x7f\"} : [] bool \"\"\n"
    "  return %0, %0\n"
    "}\n",

    "graph @conv {\n"
    "  %0 = Input {name = \"a\"} : [1, 4, 8, 8] f32\n"
    "  %1 = Param {name = \"b\"} : [8, 2, 3, 3] f32\n"
    "  %2 = Conv(%0, %1) {kernel_size = [3, 3], groups = 2} : [1, 8, 6, 6] f32\n"
    "  %3 = Clamp(%2) {min = -inf, max = 0.1} : [1, 8, 6, 6] f32\n"
    "  return %3\n"
    "}\n",

    "graph @main {\n"
    "  %0 = Input {name = \"p\"} : [] bool\n"
    "  %1 = Input {name = \"x\"} : [4, 8] f32\n"
    "  %2 = If(%0, %1) {then_branch = graph @then {\n"
    "      %0 = Input {name = \"c0\"} : [4, 8] f32\n"
    "      return %0\n"
    "    }, else_branch = graph @else {\n"
    "      %0 = Input {name = \"c0\"} : [4, 8] f32\n"
    "      %1 = Activation(%0) {kind = Neg} : [4, 8] f32\n"
    "      return %1\n"
    "    }} : [4, 8] f32\n"
    "  return %2\n"
    "}\n",

    "graph @region {\n"
    "  %0 = Input {name = \"a\"} : [2, 3] f32\n"
    "  %1 = Input {name = \"b\"} : [2, 3] f32\n"
    "  %2 = ElementwiseRegion(%0, %1) {chain = [Activation(Gelu, in0), Binary(Add, step0, in1), "
    "Compare(Lt, in0, in1), Where(step2, step1, in0), Cast(f16, step3)], num_inputs = 2} : [2, 3] f16\n"
    "  return %2\n"
    "}\n",

    "graph @opts {\n"
    "  %0 = Input {name = \"x\"} : [2, 8] f32\n"
    "  %1 = FusedSwiGLU(%0) {cast_to = bf16} : [2, 4] bf16\n"
    "  %2 = Input {name = \"q\"} : [1, 3, 8] f32\n"
    "  %3 = Attention(%2, %2, %2) {num_heads = 2, head_dim = 4, score_scale = 0.125, "
    "attn_logit_softcap = 50} : [1, 3, 8] f32\n"
    "  %4 = RngUniform {low = 1e-07, high = 3.4028235e+38, key = 18446744073709551615, "
    "op_seed = nan(0x7fc00001)} : [2] f32\n"
    "  return %1, %3, %4\n"
    "}\n",
};

/* Concrete values of the first canonical text, read through the public API. */
static void check_values(void) {
  rlx_graph *g = parse_ok(canonical[0]);
  if (!g) return;
  CHECK(strcmp(rlx_graph_name(g), "main") == 0);
  CHECK(rlx_graph_node_count(g) == 5);
  CHECK(rlx_graph_output_count(g) == 2 && rlx_graph_outputs(g)[0] == 2 && rlx_graph_outputs(g)[1] == 4);
  const rlx_node *x = rlx_graph_node(g, 0), *mm = rlx_graph_node(g, 2), *k = rlx_graph_node(g, 3);
  CHECK(x->op == RLX_OP_Input && strcmp(x->attrs.Input.name, "x") == 0 && x->name == NULL);
  CHECK(x->shape.rank == 2 && x->shape.dims[0] == 4 && x->shape.dims[1] == RLX_DIM_SYM(0) && x->shape.dtype == RLX_F32);
  CHECK(mm->op == RLX_OP_MatMul && mm->n_inputs == 2 && mm->inputs[0] == 0 && mm->inputs[1] == 1);
  CHECK(mm->name && strcmp(mm->name, "proj") == 0);
  float one;
  CHECK(k->attrs.Constant.data.n == 4);
  memcpy(&one, k->attrs.Constant.data.p, 4);
  CHECK(one == 1.0f);
  CHECK(rlx_graph_node(g, 4)->attrs.Binary.op == RLX_BINOP_MUL);
  rlx_graph_free(g);

  g = parse_ok(canonical[2]);
  if (g) {
    CHECK(strcmp(rlx_graph_name(g), "odd name\t1") == 0);
    CHECK(strcmp(rlx_graph_node(g, 0)->attrs.Input.name, "q\"\\\n\x7f") == 0);
    CHECK(rlx_graph_node(g, 0)->name && rlx_graph_node(g, 0)->name[0] == 0);
    rlx_graph_free(g);
  }
  g = parse_ok(canonical[6]);
  if (g) {
    const rlx_node *a = rlx_graph_node(g, 3);
    uint32_t bits;
    memcpy(&bits, &rlx_graph_node(g, 4)->attrs.RngUniform.op_seed.v, 4);
    CHECK(rlx_graph_node(g, 4)->attrs.RngUniform.op_seed.has && bits == 0x7fc00001u);
    CHECK(a->attrs.Attention.attn_logit_softcap.has && a->attrs.Attention.attn_logit_softcap.v == 50.0f);
    CHECK(a->attrs.Attention.score_scale.has && a->attrs.Attention.score_scale.v == 0.125f);
    CHECK(!a->attrs.Attention.v_head_dim.has);
    CHECK(rlx_graph_node(g, 1)->attrs.FusedSwiGLU.cast_to.has &&
          rlx_graph_node(g, 1)->attrs.FusedSwiGLU.cast_to.v == RLX_BF16);
    CHECK(rlx_graph_node(g, 4)->attrs.RngUniform.key == UINT64_MAX);
    CHECK(rlx_graph_node(g, 4)->attrs.RngUniform.high == 3.4028235e38f);
    rlx_graph_free(g);
  }
  g = parse_ok(canonical[5]);
  if (g) {
    const rlx_chain *ch = &rlx_graph_node(g, 2)->attrs.ElementwiseRegion.chain;
    CHECK(ch->n == 5);
    if (ch->n == 5) {
      CHECK(ch->steps[1].kind == RLX_CHAIN_STEP_BINARY && ch->steps[1].sub == RLX_BINOP_ADD);
      CHECK(ch->steps[1].a.is_step == 1 && ch->steps[1].a.index == 0 && ch->steps[1].b.is_step == 0 &&
            ch->steps[1].b.index == 1);
      CHECK(ch->steps[3].kind == RLX_CHAIN_STEP_WHERE && ch->steps[3].c.is_step == 0 && ch->steps[3].c.index == 0);
      CHECK(ch->steps[4].kind == RLX_CHAIN_STEP_CAST && ch->steps[4].sub == RLX_F16);
    }
    rlx_graph_free(g);
  }
}

/* Spellings that are accepted but not canonical, with their canonical form. */
static void check_normalisation(void) {
  check_canonical("// leading comment\n"
                  "\n"
                  "graph   @g{%7=Input{name=\"a\"}:[2,3]f32 // trailing comment\n"
                  "  %3 = Activation ( %7 ) { kind = Relu } : [ 2 , 3 ] f32\r\n"
                  "  %100 = Softmax(%3) {axis = -1} : [2, 3] f32 // default attribute spelled out\n"
                  "  %5 = Sort(%100) {descending = true, axis = 0} : [2, 3] f32\n"
                  "  %6 = Attention(%5, %5, %5) {num_heads = 1, head_dim = 3, score_scale = none} : [2, 3] f32\n"
                  "  %8 = Constant {data = 0xABCD} : [1] i16 \"caf\xc3\xa9\"\n"
                  "  return %5,%8}\n"
                  "// done\n",
                  "graph @g {\n"
                  "  %0 = Input {name = \"a\"} : [2, 3] f32\n"
                  "  %1 = Activation(%0) {kind = Relu} : [2, 3] f32\n"
                  "  %2 = Softmax(%1) : [2, 3] f32\n"
                  "  %3 = Sort(%2) {axis = 0, descending = true} : [2, 3] f32\n"
                  "  %4 = Attention(%3, %3, %3) {head_dim = 3} : [2, 3] f32\n"
                  "  %5 = Constant {data = 0xabcd} : [1] i16 \"caf\\xc3\\xa9\"\n"
                  "  return %3, %5\n"
                  "}\n");
  /* Floats print as the shortest decimal that reads back exactly. */
  check_canonical("graph @f {\n"
                  "  %0 = Input {name = \"x\"} : [3] f32\n"
                  "  %1 = Clamp(%0) {min = -0.100000001490116, max = 1.0e2} : [3] f32\n"
                  "  %2 = Clamp(%1) {min = 1e-45, max = 16777217} : [3] f32\n"
                  "  return %2\n"
                  "}\n",
                  "graph @f {\n"
                  "  %0 = Input {name = \"x\"} : [3] f32\n"
                  "  %1 = Clamp(%0) {min = -0.1, max = 100} : [3] f32\n"
                  "  %2 = Clamp(%1) {min = 1.4013e-45, max = 16777216} : [3] f32\n"
                  "  return %2\n"
                  "}\n");
}

/* ---- malformed texts ---- */

typedef struct bad_case {
  const char *text;
  rlx_status code;
  const char *substr;
} bad_case;

#define HDR "graph @g {\n  %0 = Input {name = \"x\"} : [2, 3] f32\n"

static const bad_case bad[] = {
    {"", RLX_ERR_PARSE, "t.rlx:1:1: expected 'graph', found end of input"},
    {"// only a comment\n", RLX_ERR_PARSE, "t.rlx:2:1: expected 'graph', found end of input"},
    {"grph @g {}", RLX_ERR_PARSE, "t.rlx:1:1: expected 'graph', found \"grph\""},
    {"graph g {}", RLX_ERR_PARSE, "1:7: expected '@' and the graph name, found \"g\""},
    {"graph @ {}", RLX_ERR_PARSE, "1:8: expected a graph name"},
    {"graph @g {", RLX_ERR_PARSE,
     "1:11: expected a node (%N = ...), 'return' or '}' to close graph @g (opened at 1:1), found end of input"},
    {HDR "  %1 = Activation(%0) : [2, 3] f32\n", RLX_ERR_PARSE,
     "4:1: expected a node (%N = ...), 'return' or '}' to close graph @g"},
    {HDR "  %1 = Foo(%0) : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:8: expected an op name (e.g. MatMul; see rlx ops), found \"Foo\""},
    {HDR "  %1 = Activation(%5) : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:19: expected a node defined earlier in @g, found %5, which is not defined yet"},
    {HDR "  %1 = Activation(%1) : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:19: expected a node defined earlier"},
    {HDR "  %0 = Activation(%0) : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:3: expected a new node number, found %0, which is already defined in @g"},
    {HDR "  %1 = Activation(%0) {knd = Relu} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:24: expected an attribute of Activation (kind), found \"knd\""},
    {HDR "  %1 = Sort(%0) {axis = 0, axis = 1} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:28: expected each attribute once, found axis a second time"},
    {HDR "  %1 = Activation(%0) {kind = 3} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:31: expected a value of Activation (Gelu, GeluApprox,"},
    {HDR "  %1 = Sort(%0) {axis = x} : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:25: expected a 64-bit integer, found \"x\""},
    {HDR "  %1 = Sort(%0) {axis = none} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:25: expected a 64-bit integer, found \"none\""},
    {HDR "  %1 = Sort(%0) {descending = yes} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:31: expected true or false, found \"yes\""},
    {HDR "  %1 = Activation(%0) : [2, 3] f33\n}\n", RLX_ERR_PARSE, "3:32: expected a dtype (f32, f16, bf16"},
    {HDR "  %1 = Activation(%0) : [2, -3] f32\n}\n", RLX_ERR_PARSE,
     "3:29: expected a dimension (an integer >= 0 or ?k), found \"-3\""},
    {HDR "  %1 = Activation(%0) : [1, 1, 1, 1, 1, 1, 1, 1, 1] f32\n}\n", RLX_ERR_PARSE,
     "3:50: expected ']' (shapes have at most 8 dims)"},
    {HDR "  %1 = Activation(%0) : [9223372036854775808] f32\n}\n", RLX_ERR_PARSE,
     "3:26: expected a dimension below 2^63, found 9223372036854775808"},
    {HDR "  %1 = Activation(%0) : [? 2] f32\n}\n", RLX_ERR_PARSE,
     "3:26: expected a symbol (?k with a number k right after the '?'), found '?'"},
    {HDR "  %1 = Activation(%0) : [99999999999999999999] f32\n}\n", RLX_ERR_PARSE,
     "3:26: expected a dimension (an integer >= 0 or ?k) (the number overflows)"},
    {HDR "  %1 = Activation(%0) : [?4294967296] f32\n}\n", RLX_ERR_PARSE,
     "3:27: expected a symbol number (?0 .. ?4294967295) (the number overflows)"},
    {HDR "  %1 = Sort(%0) {axis = 9223372036854775808} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:25: expected a 64-bit integer (the number overflows)"},
    {HDR "  %1 = Sort(%0) {axis = -9223372036854775809} : [2, 3] f32\n}\n", RLX_ERR_PARSE, "(the number overflows)"},
    {HDR "  %4294967296 = Activation(%0) : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:4: expected a node number below 2^32 (the number overflows)"},
    {HDR "  %1 = LayerNorm2d(%0, %0, %0) {eps = 1e39} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:39: expected a float within the f32 range, found 1e39"},
    {HDR "  %1 = LayerNorm2d(%0, %0, %0) {eps = 1.} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:41: expected a digit after '.'"},
    {HDR "  %1 = LayerNorm2d(%0, %0, %0) {eps = nan(0x3f800000)} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "expected the bit pattern of a NaN, found 0x3f800000"},
    {"graph @g {\n  %0 = Input {name = \"a\\qb\"} : [] f32\n}\n", RLX_ERR_PARSE,
     "2:25: expected an escape (\\\" \\\\ \\n \\t \\xHH), found \"qb\""},
    {"graph @g {\n  %0 = Input {name = \"a\\x4\"} : [] f32\n}\n", RLX_ERR_PARSE,
     "2:24: expected \\x followed by two hex digits"},
    {"graph @g {\n  %0 = Input {name = \"a\\x00\"} : [] f32\n}\n", RLX_ERR_PARSE, "2:24: expected a non-NUL byte"},
    {"graph @g {\n  %0 = Input {name = \"abc} : [] f32\n}\n", RLX_ERR_PARSE,
     "2:22: expected a closing '\"' for this string, found end of line"},
    {"graph @g {\n  %0 = Input {name = \"abc", RLX_ERR_PARSE,
     "2:22: expected a closing '\"' for this string, found end of input"},
    {"graph @g {\n  %0 = Input {name = \"a\xff\"} : [] f32\n}\n", RLX_ERR_PARSE, "2:24: expected valid UTF-8"},
    {"graph @g {\n  %0 = Input {name = \"a\tb\"} : [] f32\n}\n", RLX_ERR_PARSE,
     "2:24: expected a printable character or an escape"},
    {"graph @g {\n}\n}\n", RLX_ERR_PARSE, "3:1: expected end of input after the graph, found '}'"},
    {"graph @g {\n}\ngraph @h {\n}\n", RLX_ERR_PARSE, "3:1: expected end of input after the graph, found \"graph\""},
    {HDR "  %1 = MatMul(%0) : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:8: expected 2 operands for MatMul, found 1"},
    {HDR "  %1 = Concat : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:8: expected at least 1 operand for Concat, found 0"},
    {HDR "  %1 = MatMul(%0, %0) {axis = 1} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:23: expected ':' (MatMul has no attributes), found '{'"},
    {HDR "  %1 = Activation(%0) [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:23: expected ':' before the shape, found '['"},
    {HDR "  %1 = Activation() : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:19: expected a node reference (%N), found ')'"},
    {HDR "  %1 = Activation(%0 %0) : [2, 3] f32\n}\n", RLX_ERR_PARSE, "3:22: expected ',' or ')', found \"%0\""},
    {HDR "  %1 = If(%0) : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:15: expected attribute then_branch (the body graph If needs), found ':'"},
    {HDR "  %1 = If(%0) {then_branch = 3} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:30: expected a body graph (graph @name { ... }), found \"3\""},
    {HDR "  %1 = Constant {data = 0x123} : [2] u8\n}\n", RLX_ERR_PARSE,
     "3:25: expected an even number of hex digits, found 3"},
    {HDR "  %1 = Constant {data = 0x12g4} : [2] u8\n}\n", RLX_ERR_PARSE, "3:29: expected a hex digit"},
    {HDR "  %1 = ElementwiseRegion(%0) {chain = [Activation(Gelu, x0)]} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:57: expected a chain operand"},
    {HDR "  %1 = ElementwiseRegion(%0) {chain = [Binary(Add, in0)]} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:55: expected ',', found ')'"},
    {HDR "  %1 = ElementwiseRegion(%0) {chain = [Frob(in0)]} : [2, 3] f32\n}\n", RLX_ERR_PARSE,
     "3:40: expected a value of ChainStepKind (Activation, Cast, Binary, Compare, Where)"},
    {HDR "  return\n}\n", RLX_ERR_PARSE, "4:1: expected a node reference (%N), found '}'"},
    {HDR "  return %0 %0\n}\n", RLX_ERR_PARSE, "3:13: expected ',' or '}' to close the graph, found \"%0\""},
    /* graph-level problems reported by the verifier */
    {HDR "  %1 = MatMul(%0, %0) : [2, 2] f32\n  return %1\n}\n", RLX_ERR_SHAPE, "t.rlx: graph @g has 1 problem"},
    {HDR "  %1 = Input {name = \"x\"} : [2] f32\n}\n", RLX_ERR_VERIFY, "attribute name: \"x\" is already bound by %0"},
    {"graph @g {\n  %0 = Input : [2] f32\n}\n", RLX_ERR_VERIFY, "a leaf needs a binding name"},
    {HDR "  %1 = Constant {data = 0x0102} : [2, 3] f32\n}\n", RLX_ERR_VERIFY,
     "attribute data: has 2 bytes; shape [2, 3] f32 needs 24"},
};

static void check_bad(void) {
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rlx_graph *g = (rlx_graph *)&g; /* must be reset to NULL */
    rlx_status s = rlx_text_parse(bad[i].text, strlen(bad[i].text), "t.rlx", NULL, &g);
    CHECK_MSG(s == bad[i].code && strstr(rlx_last_error(), bad[i].substr) && g == NULL,
              "case %zu: expected %s containing \"%s\", got %s: %s", i, rlx_status_text(bad[i].code), bad[i].substr,
              rlx_status_text(s), rlx_last_error());
    if (s == RLX_OK) rlx_graph_free(g);
  }
  /* Embedded NUL bytes and a missing source name. */
  static const char nul_text[] = "graph @g {\n\0}\n";
  rlx_graph *g = NULL;
  CHECK_ERR(
      rlx_text_parse(nul_text, sizeof nul_text - 1, NULL, NULL, &g), RLX_ERR_PARSE,
      "<text>:2:1: expected a node (%N = ...), 'return' or '}' to close graph @g (opened at 1:1), found byte 0x00");
  /* The length is honoured: the text below is cut right after "graph @g {\n}". */
  CHECK_OK(rlx_text_parse("graph @g {\n} trailing", 12, NULL, NULL, &g));
  rlx_graph_free(g);
  CHECK_ERR(rlx_text_parse(NULL, 0, NULL, NULL, &g), RLX_ERR_PARSE, "expected 'graph', found end of input");
}

/* Bodies nested exactly 64 deep parse; 65 are rejected without deep recursion problems. */
static void check_depth(void) {
  for (int depth = 64; depth <= 65; depth++) {
    size_t cap = 1 << 16, len = 0;
    char *t = malloc(cap);
    len += (size_t)snprintf(t + len, cap - len, "graph @g {\n");
    for (int d = 0; d < depth; d++)
      len += (size_t)snprintf(
          t + len, cap - len,
          "%%0 = Input {name = \"x\"} : [2] f32\n%%1 = CustomFn(%%0) {num_inputs = 1, fwd_body = graph @b {\n");
    len += (size_t)snprintf(t + len, cap - len, "%%0 = Input {name = \"x\"} : [2] f32\nreturn %%0\n");
    for (int d = 0; d < depth; d++) len += (size_t)snprintf(t + len, cap - len, "}} : [2] f32\nreturn %%1\n");
    len += (size_t)snprintf(t + len, cap - len, "}\n");
    rlx_graph *g = NULL;
    rlx_status s = rlx_text_parse(t, len, "deep", NULL, &g);
    if (depth == 64)
      CHECK_MSG(s == RLX_OK, "64 levels: %s", rlx_last_error());
    else
      CHECK_ERR(s, RLX_ERR_PARSE, "expected at most 64 levels of nested bodies, found a body at depth 65");
    rlx_graph_free(g);
    free(t);
  }
  /* Graphs built through the API beyond the limit are refused by the printer and the writer. */
  rlx_graph *top = NULL;
  CHECK_OK(rlx_graph_create(NULL, "top", &top));
  rlx_graph *levels[66];
  levels[0] = top;
  for (int d = 1; d <= 65; d++) CHECK_OK(rlx_graph_create_child(levels[d - 1], "b", &levels[d]));
  rlx_shape two = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2});
  for (int d = 65; d >= 0; d--) {
    rlx_id x, y;
    rlx_attrs_Input in = {.name = "x"};
    CHECK_OK(rlx_graph_add_unchecked(levels[d], RLX_OP_Input, NULL, 0, &in, &two, NULL, &x));
    y = x;
    if (d < 65) {
      rlx_attrs_CustomFn cf = {.fwd_body = levels[d + 1], .vjp_body = NULL, .jvp_body = NULL, .num_inputs = 1};
      CHECK_OK(rlx_graph_add_unchecked(levels[d], RLX_OP_CustomFn, &x, 1, &cf, &two, NULL, &y));
    }
    CHECK_OK(rlx_graph_set_outputs(levels[d], &y, 1));
  }
  char *txt = NULL;
  uint8_t *bin = NULL;
  size_t tl = 0;
  CHECK_ERR(rlx_text_print(top, NULL, &txt, &tl), RLX_ERR_INVALID_ARG,
            "cannot print @b: bodies nested deeper than 64 levels");
  CHECK_ERR(rlx_binary_write(top, NULL, &bin, &tl), RLX_ERR_INVALID_ARG,
            "cannot write @b: bodies nested deeper than 64 levels");
  CHECK(txt == NULL && bin == NULL);
  rlx_graph_free(top);

  /* A long flat chain of brackets or braces cannot recurse at all. */
  size_t n = 100000;
  char *t = malloc(n + 32);
  memcpy(t, "graph @g {\n %0 = Input {name = ", 31);
  memset(t + 31, '[', n);
  rlx_graph *g = NULL;
  CHECK_ERR(rlx_text_parse(t, n + 31, "flat", NULL, &g), RLX_ERR_PARSE,
            "flat:2:21: expected a string literal, found '['");
  free(t);
}

/* The example graphs load, verify and are stable under print/parse. */
static void check_examples(void) {
  static const char *const files[] = {"tests/graphs/mlp.rlx", "tests/graphs/conv_block.rlx",
                                      "tests/graphs/attention.rlx", "tests/graphs/control_flow.rlx"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s", rlx_test_src_path(files[i]));
    rlx_graph *g = NULL;
    rlx_status s = rlx_load_graph_file(path, NULL, &g);
    CHECK_MSG(s == RLX_OK, "%s: %s", files[i], rlx_last_error());
    if (!g) continue;
    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0;
    CHECK_OK(rlx_text_print(g, NULL, &t1, &l1));
    rlx_graph *g2 = NULL;
    if (t1) CHECK_OK(rlx_text_parse(t1, l1, files[i], NULL, &g2));
    if (g2) {
      CHECK(rlx_graph_equal(g, g2));
      CHECK_OK(rlx_text_print(g2, NULL, &t2, &l2));
      CHECK(t2 && strcmp(t1, t2) == 0);
    }
    free(t1);
    free(t2);
    rlx_graph_free(g2);
    rlx_graph_free(g);
  }
}

/* rlx_load_graph_file: missing file, text with the path in messages, binary by magic. */
static void check_load(void) {
  rlx_graph *g = NULL;
  CHECK_ERR(rlx_load_graph_file("/nonexistent/dir/x.rlx", NULL, &g), RLX_ERR_IO, "/nonexistent/dir/x.rlx: cannot open");
  CHECK(g == NULL);
  CHECK_ERR(rlx_load_graph_file("/", NULL, &g), RLX_ERR_IO, "/: cannot read");

  char path[] = "/tmp/rlx_text_format_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  const char *bad_text = "graph @g {\n  %0 = Nope : [] f32\n}\n";
  CHECK(write(fd, bad_text, strlen(bad_text)) == (ssize_t)strlen(bad_text));
  close(fd);
  char want[128];
  snprintf(want, sizeof want, "%s:2:8: expected an op name", path);
  CHECK_ERR(rlx_load_graph_file(path, NULL, &g), RLX_ERR_PARSE, want);

  /* the same file in binary form */
  rlx_graph *src = parse_ok(canonical[0]);
  uint8_t *bin = NULL;
  size_t blen = 0;
  if (src) CHECK_OK(rlx_binary_write(src, NULL, &bin, &blen));
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f && bin) {
    CHECK(fwrite(bin, 1, blen, f) == blen);
    fclose(f);
    CHECK_OK(rlx_load_graph_file(path, NULL, &g));
    CHECK(g && rlx_graph_equal(g, src));
    rlx_graph_free(g);
    /* a corrupt binary file names the path and the offset */
    f = fopen(path, "wb");
    fwrite(bin, 1, blen - 1, f);
    fclose(f);
    snprintf(want, sizeof want, "%s: binary graph, byte offset", path);
    CHECK_ERR(rlx_load_graph_file(path, NULL, &g), RLX_ERR_FORMAT, want);
  } else if (f) {
    fclose(f);
  }
  free(bin);
  rlx_graph_free(src);
  unlink(path);
}

/* Values the formats cannot express are refused by the printer, the writer and dot alike. */
static void check_unprintable(void) {
  struct {
    const char *what;
    rlx_op op;
    rlx_dim dim;
    int32_t kind;
    const char *msg;
  } cases[] = {
      {"dim", RLX_OP_Input, INT64_MIN, 0, "shape dim 0 is -9223372036854775808, neither an extent nor a symbol ?k"},
      {"enum", RLX_OP_Activation, 2, 77, "attribute kind: 77 is not a Activation"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(NULL, "u", &g));
    rlx_shape sh = rlx_shape_make(RLX_F32, 1, &cases[i].dim);
    rlx_id x;
    rlx_attrs_Input in = {.name = "x"};
    if (cases[i].op == RLX_OP_Input) {
      CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Input, NULL, 0, &in, &sh, NULL, &x));
    } else {
      CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Input, NULL, 0, &in, &sh, NULL, &x));
      rlx_attrs_Activation a = {.kind = cases[i].kind};
      CHECK_OK(rlx_graph_add_unchecked(g, cases[i].op, &x, 1, &a, &sh, NULL, &x));
    }
    char *t = NULL;
    uint8_t *b = NULL;
    size_t n = 0;
    CHECK_ERR(rlx_text_print(g, NULL, &t, &n), RLX_ERR_INVALID_ARG, cases[i].msg);
    CHECK_ERR(rlx_binary_write(g, NULL, &b, &n), RLX_ERR_INVALID_ARG, cases[i].msg);
    CHECK_ERR(rlx_graph_to_dot(g, NULL, &t, &n), RLX_ERR_INVALID_ARG, cases[i].msg);
    CHECK(t == NULL && b == NULL);
    rlx_graph_free(g);
  }
}

static void check_dot(void) {
  rlx_graph *g = parse_ok(canonical[4]);
  if (!g) return;
  char *d = NULL;
  size_t n = 0;
  CHECK_OK(rlx_graph_to_dot(g, NULL, &d, &n));
  if (d) {
    CHECK(strncmp(d, "digraph \"main\" {\n", 17) == 0);
    CHECK(strstr(d, "g0n2 [label=\"%2 If\\nthen_branch = @then\\nelse_branch = @else\\n[4, 8] f32\"];") != NULL);
    CHECK(strstr(d, "g0n0 -> g0n2;") && strstr(d, "g0n1 -> g0n2;"));
    CHECK(strstr(d, "g0n2 -> g0out0;") && strstr(d, "g0out0 [shape=ellipse, label=\"output 0\"];"));
    CHECK(strstr(d, "subgraph cluster_g1 {") && strstr(d, "label=\"@then (then_branch of %2)\";"));
    CHECK(strstr(d, "g2n1 [label=\"%1 Activation\\nkind = Neg\\n[4, 8] f32\"];") != NULL);
    CHECK(strstr(d, "g2out0 -> g0n2 [style=dashed, label=\"else_branch\"];") != NULL);
    CHECK(n == strlen(d) && strcmp(d + n - 2, "}\n") == 0);
  }
  free(d);
  rlx_graph_free(g);
}

/* The example in docs/ir-format.md is canonical text. */
static void check_doc_example(void) {
  size_t len = 0;
  char *doc = rlx_test_read_file(rlx_test_src_path("docs/ir-format.md"), &len);
  CHECK_MSG(doc != NULL, "cannot read docs/ir-format.md");
  if (!doc) return;
  const char *sec = strstr(doc, "### 1.1 Example");
  const char *start = sec ? strstr(sec, "```\n") : NULL;
  const char *end = start ? strstr(start + 4, "```") : NULL;
  CHECK(start && end);
  if (start && end) {
    size_t n = (size_t)(end - (start + 4));
    char *text = malloc(n + 1);
    memcpy(text, start + 4, n);
    text[n] = 0;
    rlx_graph *g = parse_ok(text);
    if (g) {
      CHECK(rlx_graph_node_count(g) == 7 && rlx_graph_output_count(g) == 2);
      char *out = NULL;
      size_t olen = 0;
      CHECK_OK(rlx_text_print(g, NULL, &out, &olen));
      /* the same text without its first (comment) line */
      const char *body = strchr(text, '\n') + 1;
      CHECK_MSG(out && strcmp(out, body) == 0, "doc example is not canonical:\n%s", out ? out : "");
      free(out);
    }
    rlx_graph_free(g);
    free(text);
  }
  free(doc);
}

int main(void) {
  check_doc_example();
  for (size_t i = 0; i < sizeof canonical / sizeof *canonical; i++) check_canonical(canonical[i], NULL);
  check_values();
  check_normalisation();
  check_bad();
  check_depth();
  check_examples();
  check_load();
  check_unprintable();
  check_dot();
  return rlx_test_finish("text_format");
}
