/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Every op kind (and the extra samples with bodies and chains) survives text and binary
 * round trips: parse(print(g)) == g, print(parse(print(g))) == print(g), read(write(g)) == g,
 * and both formats agree. Each sample sets every attribute field to a non-default value.
 *
 * With RLX_WRITE_FUZZ_CORPUS=<source dir> set, the samples and the example graphs are also
 * written as the fuzzers' seed corpus (tests/fuzz/corpus/{text,binary}). */
#include <stdlib.h>

#include "graph_samples.h"
#include "rlx_test.h"

static void write_file(const char *dir, const char *sub, const char *name, const char *ext, const void *data,
                       size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/fuzz/corpus/%s/%s.%s", dir, sub, name, ext);
  FILE *f = fopen(path, "wb");
  CHECK_MSG(f != NULL, "cannot write %s", path);
  if (!f) return;
  CHECK(fwrite(data, 1, len, f) == len);
  fclose(f);
}

static void write_corpus(const char *name, const rlx_graph *g) {
  const char *dir = getenv("RLX_WRITE_FUZZ_CORPUS");
  if (!dir) return;
  char *text = NULL;
  uint8_t *bin = NULL;
  size_t tlen = 0, blen = 0;
  CHECK_OK(rlx_text_print(g, NULL, &text, &tlen));
  CHECK_OK(rlx_binary_write(g, NULL, &bin, &blen));
  if (text) write_file(dir, "text", name, "rlx", text, tlen);
  if (bin) write_file(dir, "binary", name, "rlxb", bin, blen);
  free(text);
  free(bin);
}

static void roundtrip(const char *what, rlx_graph *g) {
  write_corpus(what, g);
  const rlx_allocator *al = rlx_default_allocator();
  CHECK_OK(rlx_verify(g));

  char *text = NULL;
  size_t tlen = 0;
  rlx_status s = rlx_text_print(g, al, &text, &tlen);
  CHECK_MSG(s == RLX_OK, "%s: print failed: %s", what, rlx_last_error());
  if (s) return;
  CHECK(strlen(text) == tlen);

  rlx_graph *p = NULL;
  s = rlx_text_parse(text, tlen, what, al, &p);
  CHECK_MSG(s == RLX_OK, "%s: parse of printed text failed: %s\n%s", what, rlx_last_error(), text);
  if (p) {
    CHECK_MSG(rlx_graph_equal(g, p), "%s: parse(print(g)) != g\n%s", what, text);
    char *text2 = NULL;
    size_t tlen2 = 0;
    CHECK_OK(rlx_text_print(p, al, &text2, &tlen2));
    CHECK_MSG(text2 && tlen2 == tlen && strcmp(text, text2) == 0, "%s: print is not stable:\n%s\n----\n%s", what, text,
              text2 ? text2 : "");
    free(text2);
  }

  uint8_t *bin = NULL, *bin2 = NULL;
  size_t blen = 0, blen2 = 0;
  s = rlx_binary_write(g, al, &bin, &blen);
  CHECK_MSG(s == RLX_OK, "%s: binary write failed: %s", what, rlx_last_error());
  if (!s) {
    CHECK(blen >= 12 && memcmp(bin, "RLXB", 4) == 0);
    rlx_graph *b = NULL;
    s = rlx_binary_read(bin, blen, al, &b);
    CHECK_MSG(s == RLX_OK, "%s: binary read failed: %s", what, rlx_last_error());
    if (b) {
      CHECK_MSG(rlx_graph_equal(g, b), "%s: read(write(g)) != g", what);
      rlx_graph_free(b);
    }
    /* The parsed graph encodes to the very same bytes. */
    if (p) {
      CHECK_OK(rlx_binary_write(p, al, &bin2, &blen2));
      CHECK_MSG(bin2 && blen2 == blen && memcmp(bin, bin2, blen) == 0, "%s: text and binary disagree", what);
    }
  }

  char *dot = NULL;
  size_t dlen = 0;
  CHECK_OK(rlx_graph_to_dot(g, al, &dot, &dlen));
  CHECK(dot && strncmp(dot, "digraph ", 8) == 0 && dlen > 20 && dot[dlen - 2] == '}');

  free(dot);
  free(bin);
  free(bin2);
  free(text);
  rlx_graph_free(p);
}

int main(void) {
  const rlx_allocator *al = rlx_default_allocator();
  int covered = 0;
  for (int i = 0; i < RLX_OP_COUNT; i++) {
    rlx_op op = (rlx_op)i;
    rlx_graph *g = NULL;
    rlx_status s = sample_op_graph(op, al, &g);
    CHECK_MSG(s == RLX_OK, "%s: building the sample failed: %s", rlx_op_name(op), rlx_last_error());
    if (s) continue;
    const rlx_node *n = rlx_graph_node(g, sample_op_node(g));
    CHECK_MSG(n && n->op == op, "%s: sample does not end with its op", rlx_op_name(op));
    char which[64] = "";
    if (n)
      CHECK_MSG(sample_all_fields_set(op, &n->attrs, which, sizeof which), "%s: attribute %s is left at its default",
                rlx_op_name(op), which);
    s = rlx_verify(g);
    CHECK_MSG(s == RLX_OK, "%s: sample does not verify: %s", rlx_op_name(op), rlx_last_error());
    if (!s) {
      roundtrip(rlx_op_name(op), g);
      covered++;
    }
    rlx_graph_free(g);
  }
  CHECK_MSG(covered == RLX_OP_COUNT, "only %d of %d op kinds round-tripped", covered, RLX_OP_COUNT);
  for (int i = 0; i < sample_extra_count(); i++) {
    rlx_graph *g = NULL;
    rlx_status s = sample_extra_graph(i, al, &g);
    CHECK_MSG(s == RLX_OK, "extra %s: building failed: %s", sample_extra_name(i), rlx_last_error());
    if (s) continue;
    s = rlx_verify(g);
    CHECK_MSG(s == RLX_OK, "extra %s does not verify: %s", sample_extra_name(i), rlx_last_error());
    if (!s) roundtrip(sample_extra_name(i), g);
    rlx_graph_free(g);
  }
  /* the example graphs seed the corpus too (their text keeps its comments) */
  static const char *const examples[] = {"mlp", "conv_block", "attention", "control_flow"};
  for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "tests/graphs/%s.rlx", examples[i]);
    rlx_graph *g = NULL;
    rlx_status s = rlx_load_graph_file(rlx_test_src_path(rel), al, &g);
    CHECK_MSG(s == RLX_OK, "%s: %s", rel, rlx_last_error());
    if (g) roundtrip(examples[i], g);
    rlx_graph_free(g);
  }
  return rlx_test_finish("roundtrip_all_ops");
}
