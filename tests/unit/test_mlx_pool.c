/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Max pooling on the MLX backend against the CPU where the conformance cases do not reach: NaN
 * cells (a window holding one has a NaN maximum, and its gradient goes to the first NaN cell) and
 * ties (the first maximal cell in row-major order gets the gradient), with non-overlapping windows
 * (the contiguous window-slot path) and overlapping, padded ones. Forward Pool and
 * MaxPool2dBackward, f32, compared bit for bit (NaN equals NaN). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
enum { N = 2, C = 3, H = 6, W = 8 };

static bool run(const rlx_graph *g, const char *b, const rlx_named_tensor *in, uint32_t n_in, float *out, size_t n) {
  rlx_executable *e = NULL;
  if (rlx_compile(g, b, NULL, &e) != RLX_OK) {
    fprintf(stderr, "compile on %s: %s\n", b, rlx_last_error());
    return false;
  }
  const rlx_tensor *o = NULL;
  uint32_t no = 0;
  bool ok = rlx_executable_run(e, in, n_in, &o, &no) == RLX_OK && no == 1;
  if (ok)
    memcpy(out, o[0].data, n * sizeof(float));
  else
    fprintf(stderr, "run on %s: %s\n", b, rlx_last_error());
  rlx_executable_free(e);
  return ok;
}

static size_t mismatches(const float *a, const float *b, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += !(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])));
  return bad;
}

/* geometry 0: 2x2 stride 2 (tiles); 1: 3x3 stride 1 padding 1 (overlapping, padded) */
static void check(int geometry, bool backward) {
  int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, one[2] = {1, 1}, zero[2] = {0, 0};
  int64_t *k = geometry ? k3 : k2, *st = geometry ? one : k2, *pad = geometry ? one : zero;
  int64_t OH = geometry ? H : H / 2, OW = geometry ? W : W / 2;
  rlx_shape xs = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, C, H, W});
  rlx_shape ys = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, C, OH, OW});
  rlx_graph *g = NULL;
  rlx_id x, dy, y;
  CHECK_OK(rlx_graph_create(NULL, "pool", &g));
  CHECK_OK(rlx_input(g, "x", xs, &x));
  if (backward) {
    CHECK_OK(rlx_input(g, "dy", ys, &dy));
    rlx_attrs_MaxPool2dBackward a = {
        .kernel_size = {.v = k, .n = 2}, .stride = {.v = st, .n = 2}, .padding = {.v = pad, .n = 2}};
    CHECK_OK(rlx_graph_add(g, RLX_OP_MaxPool2dBackward, (rlx_id[]){x, dy}, 2, &a, &xs, NULL, &y));
  } else {
    rlx_attrs_Pool a;
    rlx_attrs_init(RLX_OP_Pool, &a);
    a.kind = RLX_REDUCE_MAX;
    a.kernel_size = (rlx_ilist){.v = k, .n = 2};
    a.stride = (rlx_ilist){.v = st, .n = 2};
    a.padding = (rlx_ilist){.v = pad, .n = 2};
    CHECK_OK(rlx_build_Pool(g, &x, 1, &a, NULL, &y));
  }
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  static float xv[N * C * H * W], dyv[N * C * H * W], want[N * C * H * W], got[N * C * H * W];
  unsigned seed = 9;
  for (int i = 0; i < N * C * H * W; i++) {
    seed = seed * 1103515245u + 12345u;
    xv[i] = (float)((seed >> 12) % 5); /* few distinct values: many ties */
    dyv[i] = (float)(i % 7) + 0.5f;
  }
  xv[3] = NAN, xv[17] = NAN, xv[18] = NAN, xv[100] = NAN, xv[W * 2 + 5] = NAN;
  size_t ny = backward ? (size_t)N * C * H * W : (size_t)(N * C * OH * OW);
  rlx_named_tensor in[2] = {{"x", {xv, xs}}, {"dy", {dyv, ys}}};
  bool ok = run(g, "cpu", in, backward ? 2 : 1, want, ny) && run(g, "mlx", in, backward ? 2 : 1, got, ny);
  CHECK(ok);
  if (ok) {
    size_t nan = 0;
    for (size_t i = 0; i < ny; i++) nan += isnan(want[i]);
    CHECK_MSG(backward || nan > 0, "the forward test has no NaN window");
    CHECK_MSG(mismatches(got, want, ny) == 0, "%s geometry %d: %zu of %zu values differ from the CPU",
              backward ? "MaxPool2dBackward" : "Pool", geometry, mismatches(got, want, ny), ny);
  }
  rlx_graph_free(g);
}

int main(void) {
  for (int geometry = 0; geometry < 2; geometry++)
    for (int backward = 0; backward < 2; backward++) check(geometry, backward);
  return rlx_test_finish("test_mlx_pool");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_pool: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
