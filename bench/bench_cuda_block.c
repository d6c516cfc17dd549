/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CUDA backend benchmarks of whole graphs (docs/benchmarks.md):
 *   block_<dtype>   a GPT-2-small transformer block, forward + backward (B = 8, T = 1024,
 *                   d = 768, 12 heads, causal; pre-LayerNorm, GELU MLP of 3072), loss =
 *                   sum(output); gradients of every parameter and of x. f32 runs with TF32
 *                   off (the fp32 policy), bf16 with bf16 tensors throughout. Prints the
 *                   compile time (rlx_compile of the gradient graph, the device already open)
 *                   and the time per step.
 *   device_open     printed first: the process's first compile, of a one-MatMul graph (CUDA
 *                   context, cuBLAS / cuBLASLt handles, library loading), apart from the block's.
 * RLX_BENCH_ITERS=N runs per timed repeat of the block (default 5; 1 for profilers);
 * RLX_BENCH_COMPILES=N compiles the gradient graph N times (each timed; the last one runs).
 *   gemm            one MatMul per projection shape of the block (f32, bf16), TFLOP/s
 *   region_f32      an ElementwiseRegion y = relu(a * b + c) * a over 2^28 f32 elements (one
 *                   kernel), in GB/s of the bytes it must move (3 reads + 1 write).
 * bench/bench_cuda_torch.py measures the same on PyTorch eager and torch.compile. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/autodiff.h"
#include "rlx/build.h"
#include "rlx/cuda.h"
#include "rlx/format.h"
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

/* seconds per run (median of 5 repeats of iters runs after 3 warm-up runs) */
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
    if (rlx_executable_read_output(e, 0, &out) != RLX_OK) return -1;
    t[r] = (now() - t0) / iters;
  }
  qsort(t, 5, sizeof t[0], cmp);
  return t[2];
}

static const char *backend = "cuda"; /* argv[2]: another backend (a quick check of the graphs) */
static uint32_t lcg = 12345;
static float urand(void) {
  lcg = lcg * 1664525u + 1013904223u;
  return (float)(lcg >> 8) / 16777216.0f - 0.5f;
}

/* n values of scale * U(-0.5, 0.5) (or all `fill` when scale is 0) in dtype t */
static void *values(rlx_dtype t, size_t n, float scale, float fill) {
  size_t esz = t == RLX_BF16 ? 2 : 4;
  uint8_t *p = malloc(n * esz);
  for (size_t i = 0; i < n; i++) {
    float v = scale != 0 ? scale * urand() : fill;
    if (t == RLX_BF16) {
      uint32_t b;
      memcpy(&b, &v, 4);
      b += 0x7fffu + ((b >> 16) & 1u); /* round to nearest even */
      uint16_t h = (uint16_t)(b >> 16);
      memcpy(p + 2 * i, &h, 2);
    } else {
      memcpy(p + 4 * i, &v, 4);
    }
  }
  return p;
}

#define TRY(x)                                                              \
  do {                                                                      \
    if ((x) != RLX_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, rlx_last_error()); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

static int linear(rlx_graph *g, rlx_id x, rlx_id w, rlx_id b, rlx_id *out) {
  rlx_id y;
  TRY(rlx_matmul(g, x, w, &y));
  TRY(rlx_binary(g, RLX_BINOP_ADD, y, b, out));
  return 0;
}

static int block(rlx_dtype t, int64_t B, int64_t T, int64_t d, int64_t H) {
  rlx_graph *f = NULL;
  TRY(rlx_graph_create(NULL, "gpt2_block", &f));
  int64_t N = B * T;
  struct {
    const char *name;
    int64_t r, c;
    float scale, fill;
  } ps[] = {
      {"ln1_g", d, 0, 0, 1},         {"ln1_b", d, 0, 0, 0},        {"w_qkv", d, 3 * d, 0.04f, 0},
      {"b_qkv", 3 * d, 0, 0.02f, 0}, {"w_o", d, d, 0.04f, 0},      {"b_o", d, 0, 0.02f, 0},
      {"ln2_g", d, 0, 0, 1},         {"ln2_b", d, 0, 0, 0},        {"w_fc", d, 4 * d, 0.04f, 0},
      {"b_fc", 4 * d, 0, 0.02f, 0},  {"w_pr", 4 * d, d, 0.04f, 0}, {"b_pr", d, 0, 0.02f, 0},
  };
  enum { NP = sizeof ps / sizeof ps[0] };
  rlx_id p[NP], x;
  for (int i = 0; i < NP; i++) {
    rlx_shape s =
        ps[i].c ? rlx_shape_make(t, 2, (rlx_dim[]){ps[i].r, ps[i].c}) : rlx_shape_make(t, 1, (rlx_dim[]){ps[i].r});
    TRY(rlx_param(f, ps[i].name, s, &p[i]));
  }
  TRY(rlx_input(f, "x", rlx_shape_make(t, 2, (rlx_dim[]){N, d}), &x));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  rlx_id h, qkv, q, k, v, at, y, x1, h2, fc, ge, pr, x2, loss;
  TRY(rlx_build_LayerNorm(f, (rlx_id[]){x, p[0], p[1]}, 3, &la, NULL, &h));
  if (linear(f, h, p[2], p[3], &qkv)) return 1;
  TRY(rlx_narrow(f, qkv, 1, 0, d, &q));
  TRY(rlx_narrow(f, qkv, 1, d, d, &k));
  TRY(rlx_narrow(f, qkv, 1, 2 * d, d, &v));
  rlx_dim bsd[3] = {B, T, d};
  TRY(rlx_reshape_dims(f, q, 3, bsd, &q));
  TRY(rlx_reshape_dims(f, k, 3, bsd, &k));
  TRY(rlx_reshape_dims(f, v, 3, bsd, &v));
  rlx_attrs_Attention aa = {.num_heads = H, .head_dim = d / H, .mask_kind = RLX_MASK_CAUSAL};
  TRY(rlx_build_Attention(f, (rlx_id[]){q, k, v}, 3, &aa, NULL, &at));
  TRY(rlx_reshape_dims(f, at, 2, (rlx_dim[]){N, d}, &at));
  if (linear(f, at, p[4], p[5], &y)) return 1;
  TRY(rlx_binary(f, RLX_BINOP_ADD, x, y, &x1));
  TRY(rlx_build_LayerNorm(f, (rlx_id[]){x1, p[6], p[7]}, 3, &la, NULL, &h2));
  if (linear(f, h2, p[8], p[9], &fc)) return 1;
  TRY(rlx_activation(f, RLX_ACT_GELU_APPROX, fc, &ge));
  if (linear(f, ge, p[10], p[11], &pr)) return 1;
  TRY(rlx_binary(f, RLX_BINOP_ADD, x1, pr, &x2));
  TRY(rlx_sum_all(f, x2, &loss));
  TRY(rlx_graph_set_outputs(f, &loss, 1));
  const char *wrt[NP + 1];
  for (int i = 0; i < NP; i++) wrt[i] = ps[i].name;
  wrt[NP] = "x";
  rlx_graph *gg = NULL;
  TRY(rlx_grad_with_loss(f, wrt, NP + 1, NULL, &gg));

  if (getenv("RLX_BENCH_DUMP")) { /* the gradient graph in the text format, on stderr */
    char *txt = NULL;
    size_t len = 0;
    TRY(rlx_text_print(gg, NULL, &txt, &len));
    fwrite(txt, 1, len, stderr);
    free(txt);
  }
  rlx_cuda_options co;
  rlx_cuda_options_init(&co);
  co.matmul = RLX_CUDA_FP32;
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  if (!strcmp(backend, "cuda")) o.backend_options = &co;
  rlx_executable *e = NULL;
  /* RLX_BENCH_COMPILES=N: N - 1 extra compiles first, each timed (what is paid once a process) */
  const char *nc = getenv("RLX_BENCH_COMPILES");
  for (int i = 1; nc && i < atoi(nc); i++) {
    double t1 = now();
    TRY(rlx_compile(gg, backend, &o, &e));
    printf("block_%s compile %d: %.3f s\n", t == RLX_BF16 ? "bf16" : "f32", i, now() - t1);
    rlx_executable_free(e);
    e = NULL;
  }
  double t0 = now();
  TRY(rlx_compile(gg, backend, &o, &e));
  double tc = now() - t0;
  if (getenv("RLX_BENCH_DUMP")) { /* and the compiled (legalized, simplified) graph */
    char *txt = NULL;
    size_t len = 0;
    TRY(rlx_text_print(rlx_executable_graph(e), NULL, &txt, &len));
    fwrite(txt, 1, len, stderr);
    free(txt);
  }
  void *bufs[NP + 2];
  for (int i = 0; i < NP; i++) {
    size_t n = (size_t)ps[i].r * (size_t)(ps[i].c ? ps[i].c : 1);
    bufs[i] = values(t, n, ps[i].scale, ps[i].fill);
    rlx_shape s =
        ps[i].c ? rlx_shape_make(t, 2, (rlx_dim[]){ps[i].r, ps[i].c}) : rlx_shape_make(t, 1, (rlx_dim[]){ps[i].r});
    rlx_tensor tv = {bufs[i], s};
    TRY(rlx_executable_set_param(e, ps[i].name, &tv));
  }
  bufs[NP] = values(t, (size_t)(N * d), 1.0f, 0);
  rlx_tensor tx = {bufs[NP], rlx_shape_make(t, 2, (rlx_dim[]){N, d})};
  TRY(rlx_executable_set_input(e, "x", &tx));
  bufs[NP + 1] = values(t, 1, 0, 1.0f);
  rlx_tensor ts = {bufs[NP + 1], rlx_shape_make(t, 0, NULL)};
  TRY(rlx_executable_set_input(e, "d_output", &ts));
  const char *it = getenv("RLX_BENCH_ITERS");
  double s = time_runs(e, it && atoi(it) > 0 ? atoi(it) : 5);
  printf("block_%s_fwd_bwd %.3f ms (compile %.3f s, %u nodes in the gradient graph)\n", t == RLX_BF16 ? "bf16" : "f32",
         s * 1e3, tc, rlx_graph_node_count(gg));
  fflush(stdout);
  rlx_executable_free(e);
  for (int i = 0; i < NP + 2; i++) free(bufs[i]);
  rlx_graph_free(gg);
  rlx_graph_free(f);
  return 0;
}

/* relu(a * b + c) * a as one ElementwiseRegion */
static int region(int64_t n) {
  rlx_graph *g = NULL;
  TRY(rlx_graph_create(NULL, "region", &g));
  rlx_shape sh = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){(int64_t)1 << 14, n >> 14});
  rlx_id in[3], y, head;
  const char *names[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; i++) TRY(rlx_input(g, names[i], sh, &in[i]));
  rlx_chain_step steps[4] = {
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.index = 0}, .b = {.index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_ADD, .a = {.is_step = 1, .index = 0}, .b = {.index = 2}},
      {.kind = RLX_CHAIN_STEP_ACTIVATION, .sub = RLX_ACT_RELU, .a = {.is_step = 1, .index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.is_step = 1, .index = 2}, .b = {.index = 0}},
  };
  rlx_attrs_ElementwiseRegion ra = {.chain = {.steps = steps, .n = 4}, .num_inputs = 3};
  TRY(rlx_build_ElementwiseRegion(g, in, 3, &ra, NULL, &y));
  /* the output is y's first row (a view), so the final read moves almost nothing */
  rlx_attrs_Narrow na = {.axis = 0, .start = 0, .len = 1};
  TRY(rlx_build_Narrow(g, &y, 1, &na, NULL, &head));
  TRY(rlx_graph_set_outputs(g, &head, 1));
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  rlx_executable *e = NULL;
  TRY(rlx_compile(g, backend, &o, &e));
  void *va = values(RLX_F32, (size_t)n, 1.0f, 0);
  rlx_tensor ta = {va, sh};
  for (int i = 0; i < 3; i++) TRY(rlx_executable_set_input(e, names[i], &ta));
  double s = time_runs(e, 20);
  printf("region_f32_%lld %.0f GB/s (4 x 4 bytes per element, %.3f ms)\n", (long long)n, 16.0 * (double)n / s / 1e9,
         s * 1e3);
  rlx_executable_free(e);
  free(va);
  rlx_graph_free(g);
  return 0;
}

/* One MatMul x [M, K] @ w [K, N] (w a parameter), as the block's projections are. */
static int gemm_shape(rlx_dtype t, int64_t M, int64_t K, int64_t N) {
  rlx_graph *g = NULL;
  TRY(rlx_graph_create(NULL, "gemm", &g));
  rlx_shape xs = rlx_shape_make(t, 2, (rlx_dim[]){M, K}), ws = rlx_shape_make(t, 2, (rlx_dim[]){K, N});
  rlx_id x, w, y;
  TRY(rlx_input(g, "x", xs, &x));
  TRY(rlx_param(g, "w", ws, &w));
  TRY(rlx_matmul(g, x, w, &y));
  TRY(rlx_graph_set_outputs(g, &y, 1));
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  rlx_executable *e = NULL;
  TRY(rlx_compile(g, backend, &o, &e));
  void *vx = values(t, (size_t)(M * K), 1.0f, 0), *vw = values(t, (size_t)(K * N), 0.04f, 0);
  rlx_tensor tx = {vx, xs}, tw = {vw, ws};
  TRY(rlx_executable_set_input(e, "x", &tx));
  TRY(rlx_executable_set_param(e, "w", &tw));
  double s = time_runs(e, 20);
  printf("gemm_%s %lldx%lldx%lld %.1f TFLOP/s (%.3f ms)\n", t == RLX_BF16 ? "bf16" : "f32", (long long)M, (long long)K,
         (long long)N, 2.0 * (double)M * (double)K * (double)N / s / 1e12, s * 1e3);
  rlx_executable_free(e);
  free(vx);
  free(vw);
  rlx_graph_free(g);
  return 0;
}

/* The process's first compile and run, of a one-MatMul graph: what opening the device costs
 * (context, library handles), kept out of the block's compile time. */
static int device_open(void) {
  double t0 = now();
  rlx_graph *g = NULL;
  TRY(rlx_graph_create(NULL, "open", &g));
  rlx_shape s = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){64, 64});
  rlx_id a, y;
  TRY(rlx_input(g, "a", s, &a));
  TRY(rlx_matmul(g, a, a, &y));
  TRY(rlx_graph_set_outputs(g, &y, 1));
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  rlx_executable *e = NULL;
  TRY(rlx_compile(g, backend, &o, &e));
  double tc = now() - t0;
  void *va = values(RLX_F32, 64 * 64, 1.0f, 0);
  rlx_tensor ta = {va, s};
  TRY(rlx_executable_set_input(e, "a", &ta));
  TRY(rlx_executable_run_resident(e));
  printf("device_open %.3f s (the process's first compile, a 64x64 MatMul: %.3f s; with its first run)\n", now() - t0,
         tc);
  rlx_executable_free(e);
  free(va);
  rlx_graph_free(g);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2) backend = argv[2];
  const rlx_backend *b = rlx_backend_find(backend);
  const char *why = NULL;
  if (!b || (b->available && !b->available(&why))) {
    fprintf(stderr, "bench_cuda_block: the cuda backend is not available: %s\n", why ? why : "not built");
    return 1;
  }
  const char *only = argc > 1 ? argv[1] : "";
  int rc = device_open();
  if (!*only || !strcmp(only, "region")) rc |= region((int64_t)1 << 28);
  if (!strcmp(only, "small")) return block(RLX_F32, 2, 64, 96, 4);
  if (!strcmp(only, "gemm")) {
    static const int64_t shapes[][3] = {{8192, 768, 2304}, {8192, 768, 3072}, {8192, 3072, 768}, {8192, 768, 768}};
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < 4; i++) rc |= gemm_shape(t ? RLX_BF16 : RLX_F32, shapes[i][0], shapes[i][1], shapes[i][2]);
    return rc;
  }
  if (!*only || !strcmp(only, "f32")) rc |= block(RLX_F32, 8, 1024, 768, 12);
  if (!*only || !strcmp(only, "bf16")) rc |= block(RLX_BF16, 8, 1024, 768, 12);
  return rc;
}
