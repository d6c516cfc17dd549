/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Out-of-memory at every allocation: for each sample graph, parsing (text and binary), verifying,
 * printing, writing, rendering and building with the builder API under an allocator that fails
 * its Nth allocation, for N = 1, 2, ... until the run completes. Every step must either succeed
 * or return RLX_ERR_OOM, and afterwards no block may remain allocated. */
#include <stdlib.h>

#include "graph_samples.h"
#include "rlx_test.h"

#define MAX_RUNS 100000

typedef rlx_status (*step_fn)(const void *input, size_t len, const rlx_allocator *al);

/* Parses the text, prints it again and frees everything, all with `al`. */
static rlx_status text_cycle(const void *input, size_t len, const rlx_allocator *al) {
  rlx_graph *g = NULL;
  RLX_TRY(rlx_text_parse(input, len, "alloc", al, &g));
  char *out = NULL;
  size_t n = 0;
  rlx_status s = rlx_text_print(g, al, &out, &n);
  if (!s) {
    al->free(al->ctx, out);
    s = rlx_graph_to_dot(g, al, &out, &n);
    if (!s) al->free(al->ctx, out);
  }
  rlx_graph_free(g);
  return s;
}

/* Reads the binary encoding, writes it again and frees everything. */
static rlx_status binary_cycle(const void *input, size_t len, const rlx_allocator *al) {
  rlx_graph *g = NULL;
  RLX_TRY(rlx_binary_read(input, len, al, &g));
  uint8_t *out = NULL;
  size_t n = 0;
  rlx_status s = rlx_binary_write(g, al, &out, &n);
  if (!s) al->free(al->ctx, out);
  rlx_graph_free(g);
  return s;
}

/* Builds sample `*(int *)input` (op kinds first, then the extras), clones and verifies it. */
static rlx_status build_cycle(const void *input, size_t len, const rlx_allocator *al) {
  (void)len;
  int i = *(const int *)input;
  rlx_graph *g = NULL;
  RLX_TRY(i < RLX_OP_COUNT ? sample_op_graph((rlx_op)i, al, &g) : sample_extra_graph(i - RLX_OP_COUNT, al, &g));
  rlx_graph *c = NULL;
  rlx_status s = rlx_graph_clone(g, al, &c);
  if (!s) s = rlx_verify(c);
  rlx_graph_free(c);
  rlx_graph_free(g);
  return s;
}

/* An MLP built with the convenience builders (shape inference on every node). */
static rlx_status convenience_cycle(const void *input, size_t len, const rlx_allocator *al) {
  (void)input;
  (void)len;
  rlx_graph *g = NULL;
  RLX_TRY(rlx_graph_create(al, "mlp", &g));
  rlx_id x, w, b, h, a, r, t, k, s2, c, out;
  rlx_dim xd[2] = {4, 8}, wd[2] = {8, 16}, bd[1] = {16};
  int64_t shape[2] = {8, 8}, perm[2] = {1, 0}, axes[1] = {1};
  float bias[16] = {0};
  rlx_status s = rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, xd), &x);
  if (!s) s = rlx_param(g, "w", rlx_shape_make(RLX_F32, 2, wd), &w);
  if (!s) s = rlx_constant(g, rlx_shape_make(RLX_F32, 1, bd), bias, sizeof bias, &b);
  if (!s) s = rlx_matmul(g, x, w, &h);
  if (!s) s = rlx_binary(g, RLX_BINOP_ADD, h, b, &h);
  if (!s) s = rlx_activation(g, RLX_ACT_RELU, h, &a);
  if (!s) s = rlx_reshape(g, a, 2, shape, &r);
  if (!s) s = rlx_transpose(g, r, 2, perm, &t);
  if (!s) s = rlx_scalar_f32(g, 0.5f, &k);
  if (!s) s = rlx_binary(g, RLX_BINOP_MUL, t, k, &s2);
  if (!s) s = rlx_cast(g, s2, RLX_F16, &c);
  if (!s) s = rlx_reduce_axes(g, RLX_REDUCE_SUM, c, 1, axes, true, &out);
  if (!s) s = rlx_graph_set_outputs(g, &out, 1);
  if (!s) s = rlx_verify(g);
  rlx_graph_free(g);
  return s;
}

/* Runs `fn` failing allocation N = 1, 2, ... until it completes without hitting the failure;
 * then it must end with `final` (RLX_OK for valid input). */
static void exhaust_to(const char *what, step_fn fn, const void *input, size_t len, rlx_status final) {
  int wrong = 0;
  for (long n = 1; n < MAX_RUNS; n++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, n);
    rlx_status s = fn(input, len, &fa.al);
    if ((s != final && s != RLX_ERR_OOM) || fa.live != 0) {
      if (wrong++ < 3)
        CHECK_MSG(false, "%s: failing allocation %ld: %s (%s), %ld blocks left", what, n, rlx_status_text(s),
                  rlx_last_error(), fa.live);
    }
    if (s == RLX_ERR_OOM && fa.count < n)
      CHECK_MSG(false, "%s: out of memory reported at allocation %ld without a failure", what, n);
    if (fa.count < n) { /* the failure was never reached: the whole cycle ran */
      CHECK_MSG(s == final, "%s: completes with %s: %s", what, rlx_status_text(s), rlx_last_error());
      rlx_test_passed++;
      return;
    }
    if (s != RLX_ERR_OOM && fa.count >= n)
      CHECK_MSG(false, "%s: allocation %ld failed but the cycle reported success", what, n);
  }
  CHECK_MSG(false, "%s: did not complete within %d runs", what, MAX_RUNS);
}

static void exhaust(const char *what, step_fn fn, const void *input, size_t len) {
  exhaust_to(what, fn, input, len, RLX_OK);
}

static void exhaust_graph(const char *what, const rlx_graph *g) {
  char *text = NULL;
  size_t tlen = 0;
  uint8_t *bin = NULL;
  size_t blen = 0;
  CHECK_OK(rlx_text_print(g, NULL, &text, &tlen));
  CHECK_OK(rlx_binary_write(g, NULL, &bin, &blen));
  char w[96];
  if (text) {
    snprintf(w, sizeof w, "%s (text)", what);
    exhaust(w, text_cycle, text, tlen);
  }
  if (bin) {
    snprintf(w, sizeof w, "%s (binary)", what);
    exhaust(w, binary_cycle, bin, blen);
  }
  free(text);
  free(bin);
}

int main(void) {
  for (int i = 0; i < RLX_OP_COUNT + sample_extra_count(); i++) {
    const char *name = i < RLX_OP_COUNT ? rlx_op_name((rlx_op)i) : sample_extra_name(i - RLX_OP_COUNT);
    char w[96];
    snprintf(w, sizeof w, "%s (builders)", name);
    exhaust(w, build_cycle, &i, 0);
    rlx_graph *g = NULL;
    rlx_status s =
        i < RLX_OP_COUNT ? sample_op_graph((rlx_op)i, NULL, &g) : sample_extra_graph(i - RLX_OP_COUNT, NULL, &g);
    CHECK_MSG(s == RLX_OK, "%s: %s", name, rlx_last_error());
    if (g) exhaust_graph(name, g);
    rlx_graph_free(g);
  }
  static const char *const files[] = {"tests/graphs/mlp.rlx", "tests/graphs/conv_block.rlx",
                                      "tests/graphs/attention.rlx", "tests/graphs/control_flow.rlx"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    size_t len = 0;
    char *text = rlx_test_read_file(rlx_test_src_path(files[i]), &len);
    CHECK_MSG(text != NULL, "cannot read %s", files[i]);
    if (!text) continue;
    exhaust(files[i], text_cycle, text, len);
    rlx_graph *g = NULL;
    CHECK_OK(rlx_text_parse(text, len, files[i], NULL, &g));
    if (g) exhaust_graph(files[i], g);
    rlx_graph_free(g);
    free(text);
  }
  exhaust("convenience builders", convenience_cycle, NULL, 0);
  /* Malformed input under allocation failure still frees everything. */
  static const char broken[] =
      "graph @g {\n  %0 = Input {name = \"x\"} : [2] f32\n  %1 = If(%0) {then_branch = graph @t {\n";
  exhaust_to("broken text", text_cycle, broken, sizeof broken - 1, RLX_ERR_PARSE);
  static const uint8_t broken_bin[] = {'R', 'L', 'X', 'B', 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'g', 1, 0, 0, 0, 0, 0};
  exhaust_to("truncated binary", binary_cycle, broken_bin, sizeof broken_bin, RLX_ERR_FORMAT);
  return rlx_test_finish("alloc_failure");
}
