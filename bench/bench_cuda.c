/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CUDA backend benchmarks through the public API with device residency (inputs set once,
 * run_resident repeated, one read at the end that waits for the queue):
 *   GEMM n x n x n, f32 under the fp32 / TF32 / bf16 policies, in TFLOP/s;
 *   elementwise Add of two f32 vectors (the dense fast path) and Relu (the generic kernel), in
 *   GB/s counting bytes read + written (elementwise inputs are 2-D [2^14, 2^14] here so the
 *   output's first row is a view).
 * Each timing is the median of 5 repeats of `iters` runs after 3 warm-up runs. Prints one line
 * per measurement: "name value unit". bench/bench_cuda_torch.py measures the same on PyTorch. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/cuda.h"
#include "rlx/rlx.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* seconds per run (median of 5) */
static double time_runs(rlx_executable *e, int iters) {
  const rlx_tensor *out;
  for (int i = 0; i < 3; i++)
    if (rlx_executable_run_resident(e) != RLX_OK) return -1;
  if (rlx_executable_read_output(e, 0, &out) != RLX_OK) return -1;
  double t[5];
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < iters; i++)
      if (rlx_executable_run_resident(e) != RLX_OK) return -1;
    if (rlx_executable_read_output(e, 0, &out) != RLX_OK) return -1; /* waits; small outputs */
    t[r] = (now() - t0) / iters;
  }
  qsort(t, 5, sizeof t[0], cmp);
  return t[2];
}

static float *rnd(size_t n) {
  float *v = malloc(n * sizeof *v);
  uint32_t s = 12345;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

/* The graph's output is the first row of y (a view: no kernel), so the final read moves almost
 * nothing while y itself is still computed in full. */
static rlx_executable *compile_head_of(rlx_graph *g, rlx_id y, const rlx_cuda_options *co) {
  rlx_id s;
  rlx_attrs_Narrow na = {.axis = 0, .start = 0, .len = 1};
  if (rlx_build_Narrow(g, &y, 1, &na, NULL, &s) != RLX_OK) return NULL;
  if (rlx_graph_set_outputs(g, &s, 1) != RLX_OK) return NULL;
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.backend_options = co;
  rlx_executable *e = NULL;
  if (rlx_compile(g, "cuda", &o, &e) != RLX_OK) {
    fprintf(stderr, "compile: %s\n", rlx_last_error());
    return NULL;
  }
  return e;
}

static void gemm(int64_t n, rlx_cuda_precision prec, const char *name) {
  rlx_graph *g = NULL;
  rlx_id a, b, c;
  rlx_shape sh = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){n, n});
  rlx_graph_create(NULL, "gemm", &g);
  rlx_input(g, "a", sh, &a);
  rlx_input(g, "b", sh, &b);
  rlx_matmul(g, a, b, &c);
  rlx_cuda_options co;
  rlx_cuda_options_init(&co);
  co.matmul = prec;
  rlx_executable *e = compile_head_of(g, c, &co);
  float *va = rnd((size_t)(n * n)), *vb = rnd((size_t)(n * n));
  rlx_tensor ta = {va, sh}, tb = {vb, sh};
  if (e && rlx_executable_set_input(e, "a", &ta) == RLX_OK && rlx_executable_set_input(e, "b", &tb) == RLX_OK) {
    double s = time_runs(e, n >= 8192 ? 5 : 20);
    printf("gemm_%s_%lld %.1f TFLOP/s (%.3f ms; includes the input slot copies)\n", name, (long long)n,
           2.0 * n * n * n / s / 1e12, s * 1e3);
  } else {
    printf("gemm_%s_%lld FAILED: %s\n", name, (long long)n, rlx_last_error());
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
  free(va), free(vb);
}

static void elementwise(int64_t n, int add) {
  rlx_graph *g = NULL;
  rlx_id a, b, y;
  rlx_shape sh = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){(int64_t)1 << 14, n >> 14});
  rlx_graph_create(NULL, "ew", &g);
  rlx_input(g, "a", sh, &a);
  if (add) {
    rlx_input(g, "b", sh, &b);
    rlx_binary(g, RLX_BINOP_ADD, a, b, &y);
  } else {
    rlx_activation(g, RLX_ACT_RELU, a, &y);
  }
  rlx_cuda_options co;
  rlx_cuda_options_init(&co);
  rlx_executable *e = compile_head_of(g, y, &co);
  float *va = rnd((size_t)n);
  rlx_tensor ta = {va, sh};
  bool ok = e && rlx_executable_set_input(e, "a", &ta) == RLX_OK;
  if (ok && add) ok = rlx_executable_set_input(e, "b", &ta) == RLX_OK;
  if (ok) {
    /* per run: input slot copies (read + write each input) and the op */
    double s = time_runs(e, 20);
    double op_bytes = (add ? 3.0 : 2.0) * 4.0 * n, all_bytes = op_bytes + (add ? 4.0 : 2.0) * 4.0 * n;
    printf("%s_%lld %.0f GB/s of the op's bytes, %.0f GB/s of all bytes moved per run (%.3f ms)\n",
           add ? "add_f32" : "relu_f32", (long long)n, op_bytes / s / 1e9, all_bytes / s / 1e9, s * 1e3);
  } else {
    printf("%s FAILED: %s\n", add ? "add_f32" : "relu_f32", rlx_last_error());
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
  free(va);
}

int main(void) {
  const rlx_backend *b = rlx_backend_find("cuda");
  const char *why = NULL;
  if (!b || !b->available(&why)) {
    fprintf(stderr, "bench_cuda: the cuda backend is not available: %s\n", why ? why : "not built");
    return 1;
  }
  static const int64_t sizes[] = {1024, 2048, 4096, 8192};
  for (int i = 0; i < 4; i++) {
    gemm(sizes[i], RLX_CUDA_FP32, "fp32");
    gemm(sizes[i], RLX_CUDA_TF32, "tf32");
    gemm(sizes[i], RLX_CUDA_BF16, "bf16");
  }
  elementwise((int64_t)1 << 28, 1);
  elementwise((int64_t)1 << 28, 0);
  return 0;
}
