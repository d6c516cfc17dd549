/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Times graphs on a backend (cpu or mlx), for the MLX-backend benchmark (bench/run_mlx_bench.sh,
 * peer: bench/bench_mlx_peer.py, the same computations written against MLX's Python API):
 *
 *   bench_mlx BACKEND gemm N [reps]          C = A @ B, f32 [N, N] x [N, N]
 *   bench_mlx BACKEND block B S D H [reps]   a pre-norm transformer block, f32:
 *       h = x + Wo(attn(LN1(x) Wq, LN1(x) Wk, LN1(x) Wv)), y = h + W2(gelu(W1 LN2(h)))
 *       (x [B, S, D], H heads, MLP 4D, causal attention)
 *
 * Prints one line: "<what> <backend> median_ms <m> best_ms <b> gflops <g>" (GFLOP/s of the
 * median for gemm, 0 otherwise). Inputs and params are uploaded once; each timed run is
 * rlx_executable_run (inputs set, run, outputs read back). RLX_MLX_MODE picks MLX's mode. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/rlx.h"

#define TRY(expr)                                                                                    \
  do {                                                                                               \
    rlx_status s_ = (expr);                                                                          \
    if (s_ != RLX_OK) {                                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, rlx_status_text(s_), rlx_last_error()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static float *rnd(size_t n, unsigned seed, float scale) {
  float *p = malloc(n * sizeof *p);
  if (!p) exit(1);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
  }
  return p;
}

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

/* Sets every param to random values, builds random inputs, times `reps` runs. */
static void time_graph(const rlx_graph *g, const char *backend, int reps, const char *what, double flops) {
  rlx_executable *e = NULL;
  TRY(rlx_compile(g, backend, NULL, &e));
  for (uint32_t i = 0; i < rlx_executable_param_count(e); i++) {
    const rlx_shape *s = rlx_executable_param_shape(e, i);
    float *v = rnd(numel(s), 100 + i, 1.0f / sqrtf((float)s->dims[0]));
    rlx_tensor t = {v, *s};
    TRY(rlx_executable_set_param(e, rlx_executable_param_name(e, i), &t));
    free(v);
  }
  uint32_t ni = rlx_executable_input_count(e);
  rlx_named_tensor *in = calloc(ni ? ni : 1, sizeof *in);
  for (uint32_t i = 0; i < ni; i++) {
    const rlx_shape *s = rlx_executable_input_shape(e, i);
    in[i] = (rlx_named_tensor){rlx_executable_input_name(e, i), {rnd(numel(s), 7 + i, 1.0f), *s}};
  }
  double *t = calloc((size_t)reps, sizeof *t);
  for (int r = -2; r < reps; r++) { /* two warm-up runs */
    const rlx_tensor *out = NULL;
    uint32_t no = 0;
    double t0 = now();
    TRY(rlx_executable_run(e, in, ni, &out, &no));
    if (r >= 0) t[r] = now() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  double med = t[reps / 2];
  printf("%s %s median_ms %.3f best_ms %.3f gflops %.2f\n", what, backend, med * 1e3, t[0] * 1e3,
         flops ? flops / med / 1e9 : 0.0);
  for (uint32_t i = 0; i < ni; i++) free(in[i].tensor.data);
  free(in);
  free(t);
  rlx_executable_free(e);
}

static rlx_shape sh(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F32, rank, d); }

static rlx_id layer_norm(rlx_graph *g, rlx_id x, int64_t D, const char *name) {
  char gn[64], bn[64];
  snprintf(gn, sizeof gn, "%s.g", name);
  snprintf(bn, sizeof bn, "%s.b", name);
  rlx_id ga, be, y;
  TRY(rlx_param(g, gn, sh(1, (rlx_dim[]){D}), &ga));
  TRY(rlx_param(g, bn, sh(1, (rlx_dim[]){D}), &be));
  rlx_attrs_LayerNorm a;
  rlx_attrs_init(RLX_OP_LayerNorm, &a);
  TRY(rlx_build_LayerNorm(g, (rlx_id[]){x, ga, be}, 3, &a, NULL, &y));
  return y;
}

static rlx_id linear(rlx_graph *g, rlx_id x, int64_t in, int64_t out, const char *name) {
  rlx_id w, y;
  TRY(rlx_param(g, name, sh(2, (rlx_dim[]){in, out}), &w));
  TRY(rlx_matmul(g, x, w, &y));
  return y;
}

static void bench_block(const char *backend, int64_t B, int64_t S, int64_t D, int64_t H, int reps) {
  rlx_graph *g = NULL;
  rlx_id x, h, q, k, v, a, y;
  TRY(rlx_graph_create(NULL, "block", &g));
  TRY(rlx_input(g, "x", sh(3, (rlx_dim[]){B, S, D}), &x));
  h = layer_norm(g, x, D, "ln1");
  q = linear(g, h, D, D, "wq");
  k = linear(g, h, D, D, "wk");
  v = linear(g, h, D, D, "wv");
  rlx_attrs_Attention at;
  rlx_attrs_init(RLX_OP_Attention, &at);
  at.num_heads = H;
  at.head_dim = D / H;
  at.mask_kind = RLX_MASK_CAUSAL;
  TRY(rlx_build_Attention(g, (rlx_id[]){q, k, v}, 3, &at, NULL, &a));
  a = linear(g, a, D, D, "wo");
  TRY(rlx_binary(g, RLX_BINOP_ADD, x, a, &h));
  y = layer_norm(g, h, D, "ln2");
  y = linear(g, y, D, 4 * D, "w1");
  TRY(rlx_activation(g, RLX_ACT_GELU, y, &y));
  y = linear(g, y, 4 * D, D, "w2");
  TRY(rlx_binary(g, RLX_BINOP_ADD, h, y, &y));
  TRY(rlx_graph_set_outputs(g, &y, 1));
  char what[96];
  snprintf(what, sizeof what, "block_B%lld_S%lld_D%lld_H%lld", (long long)B, (long long)S, (long long)D, (long long)H);
  double flops = 2.0 * (double)(B * S) * (double)(12 * D * D) + 4.0 * (double)(B * S * S * D);
  time_graph(g, backend, reps, what, flops);
  rlx_graph_free(g);
}

static void bench_gemm(const char *backend, int64_t n, int reps) {
  rlx_graph *g = NULL;
  rlx_id a, b, c;
  TRY(rlx_graph_create(NULL, "gemm", &g));
  TRY(rlx_input(g, "a", sh(2, (rlx_dim[]){n, n}), &a));
  TRY(rlx_input(g, "b", sh(2, (rlx_dim[]){n, n}), &b));
  TRY(rlx_matmul(g, a, b, &c));
  TRY(rlx_graph_set_outputs(g, &c, 1));
  char what[64];
  snprintf(what, sizeof what, "gemm_%lld", (long long)n);
  time_graph(g, backend, reps, what, 2.0 * (double)n * (double)n * (double)n);
  rlx_graph_free(g);
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[2], "gemm") == 0) {
    bench_gemm(argv[1], atoll(argv[3]), argc > 4 ? atoi(argv[4]) : 20);
    return 0;
  }
  if (argc >= 7 && strcmp(argv[2], "block") == 0) {
    bench_block(argv[1], atoll(argv[3]), atoll(argv[4]), atoll(argv[5]), atoll(argv[6]), argc > 7 ? atoi(argv[7]) : 20);
    return 0;
  }
  fprintf(stderr, "usage: bench_mlx cpu|mlx gemm N [reps] | bench_mlx cpu|mlx block B S D H [reps]\n");
  return 2;
}
