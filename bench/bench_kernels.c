/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Kernel throughput of the CPU fast kernels against OpenBLAS (and the reference kernels):
 *   - cblas_sgemm alone at square and CNN-shaped sizes (the peer figure);
 *   - the fast MatMul kernel at the same sizes;
 *   - Conv / Conv2dBackwardInput / Conv2dBackwardWeight of the Fashion-MNIST CNN's two layers
 *     (batch 64), fast vs reference, in GFLOP/s (2 * MACs of the convolution);
 *   - a few memory-bound kernels (bias add, relu backward, max-pool backward) in GB/s.
 *
 *   bench_kernels [threads] [min_ms]
 *
 * Each figure is the best of repeated runs lasting at least min_ms (default 300) in total. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "rlx/rlx.h"
#include "attr_lists.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

static float *rand_buf(size_t n) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  uint32_t s = 2463534242u;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }
  return p;
}

static double min_s = 0.3;

/* Best seconds per call of fn over repeated calls. */
typedef void (*bench_fn)(void *arg);
static double best_time(bench_fn fn, void *arg) {
  fn(arg); /* warm-up */
  double best = 1e30, start = now_s();
  int runs = 0;
  while (runs < 3 || now_s() - start < min_s) {
    double t = now_s();
    fn(arg);
    t = now_s() - t;
    if (t < best) best = t;
    if (++runs > 100000) break;
  }
  return best;
}

/* ---- sgemm ---- */

typedef struct gemm_arg {
  int M, N, K;
  float *A, *B, *C;
} gemm_arg;

static void run_sgemm(void *p) {
  gemm_arg *g = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->M, g->N, g->K, 1.0f, g->A, g->K, g->B, g->N, 0.0f, g->C,
              g->N);
}

/* ---- one node run by a kernel ---- */

typedef struct node_arg {
  rlx_graph *g;
  const rlx_node *n;
  rlx_tensor in[3];
  uint32_t n_in;
  rlx_tensor out;
  rlx_cpu_kernel k;
  rlx_cpu_ctx *ctx;
} node_arg;

static void run_node(void *p) {
  node_arg *a = p;
  rlx_status st = a->k(a->n, a->in, a->n_in, &a->out, a->ctx);
  if (st != RLX_OK) {
    fprintf(stderr, "kernel failed: %s\n", rlx_last_error());
    exit(1);
  }
}

static void make_node(node_arg *a, rlx_op op, const void *attrs, const rlx_shape *declared, uint32_t n,
                      const rlx_shape *shapes, rlx_cpu_ctx *ctx) {
  memset(a, 0, sizeof *a);
  rlx_graph_create(NULL, "bench", &a->g);
  rlx_id ids[3], id;
  for (uint32_t i = 0; i < n; i++) {
    char nm[8] = {'x', (char)('0' + i), 0};
    rlx_input(a->g, nm, shapes[i], &ids[i]);
    a->in[i].shape = shapes[i];
    a->in[i].data = rand_buf(numel(&shapes[i]));
  }
  a->n_in = n;
  if (rlx_graph_add(a->g, op, ids, n, attrs, declared, NULL, &id) != RLX_OK) {
    fprintf(stderr, "building %s: %s\n", rlx_op_name(op), rlx_last_error());
    exit(1);
  }
  a->n = rlx_graph_node(a->g, id);
  a->out.shape = a->n->shape;
  a->out.data = rand_buf(numel(&a->out.shape));
  a->ctx = ctx;
}

static void free_node(node_arg *a) {
  for (uint32_t i = 0; i < a->n_in; i++) free(a->in[i].data);
  free(a->out.data);
  rlx_graph_free(a->g);
}

/* Times the fast kernel (and the reference one when with_ref) of the node. */
static void bench_node(const char *name, node_arg *a, double flops, double bytes, bool with_ref) {
  const rlx_cpu_fast_kernel *f = &rlx_cpu_fast_table[a->n->op];
  if (!f->applies || !f->applies(a->n, a->in, a->n_in)) {
    printf("| %-44s | (no fast kernel applies) |\n", name);
    return;
  }
  a->k = f->kernel;
  double tf = best_time(run_node, a), tr = 0;
  if (with_ref) {
    a->k = rlx_cpu_ref_table[a->n->op];
    tr = best_time(run_node, a);
  }
  char fr[64] = "-", rr[64] = "-", rt[32] = "-";
  if (with_ref) snprintf(rt, sizeof rt, "%.3f ms", tr * 1e3);
  if (flops > 0) {
    snprintf(fr, sizeof fr, "%.1f GFLOP/s", flops / tf * 1e-9);
    if (with_ref) snprintf(rr, sizeof rr, "%.1f GFLOP/s", flops / tr * 1e-9);
  } else {
    snprintf(fr, sizeof fr, "%.1f GB/s", bytes / tf * 1e-9);
    if (with_ref) snprintf(rr, sizeof rr, "%.1f GB/s", bytes / tr * 1e-9);
  }
  printf("| %-44s | %9.3f ms | %-14s | %12s | %-14s |\n", name, tf * 1e3, fr, rt, rr);
}

/* The convolutions of mobilenet_v3_small at batch 1 (torchvision's layout: 1x1 expansions and
 * projections, the squeeze-excite 1x1 convolutions on 1x1 planes, the depthwise 3x3 / 5x5 ones),
 * each on the fast kernel without a fused epilogue, and their sum. */
static void bench_mobilenet_convs(rlx_cpu_ctx *ctx) {
  struct {
    int64_t C, H, O, k, s, g; /* input channels, plane side, output channels, kernel, stride, groups */
  } l[] = {{16, 56, 72, 1, 1, 1},     {72, 28, 24, 1, 1, 1},     {24, 28, 88, 1, 1, 1},     {88, 28, 24, 1, 1, 1},
           {24, 28, 96, 1, 1, 1},     {96, 14, 40, 1, 1, 1},     {40, 14, 240, 1, 1, 1},    {240, 14, 40, 1, 1, 1},
           {40, 14, 120, 1, 1, 1},    {120, 14, 48, 1, 1, 1},    {48, 14, 144, 1, 1, 1},    {144, 14, 48, 1, 1, 1},
           {48, 14, 288, 1, 1, 1},    {288, 7, 96, 1, 1, 1},     {96, 7, 576, 1, 1, 1},     {576, 7, 96, 1, 1, 1},
           {576, 1, 144, 1, 1, 1},    {144, 1, 576, 1, 1, 1},    {240, 1, 64, 1, 1, 1},     {64, 1, 240, 1, 1, 1},
           {16, 112, 16, 3, 2, 16},   {72, 56, 72, 3, 2, 72},    {88, 28, 88, 3, 1, 88},    {96, 28, 96, 5, 2, 96},
           {240, 14, 240, 5, 1, 240}, {144, 14, 144, 5, 1, 144}, {288, 14, 288, 5, 2, 288}, {576, 7, 576, 5, 1, 576}};
  printf("| mobilenet_v3_small conv (b1) | fast | fast rate |\n|---|---|---|\n");
  double total = 0;
  for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
    int64_t C = l[i].C, H = l[i].H, O = l[i].O, k = l[i].k, st = l[i].s, p = k / 2, Ho = (H + 2 * p - k) / st + 1;
    rlx_attrs_Conv ca = {
        .kernel_size = NOLIST, .stride = IL(st, st), .padding = IL(p, p), .dilation = IL(1, 1), .groups = l[i].g};
    rlx_shape fs[2] = {SHP(F32, 1, C, H, H), SHP(F32, O, C / l[i].g, k, k)};
    node_arg a;
    make_node(&a, RLX_OP_Conv, &ca, NULL, 2, fs, ctx);
    char name[96];
    snprintf(name, sizeof name,
             "%s%" PRId64 "x%" PRId64 " s%" PRId64 " %" PRId64 " -> %" PRId64 " on %" PRId64 "x%" PRId64,
             l[i].g > 1 ? "dw " : "", k, k, st, C, O, H, H);
    const rlx_cpu_fast_kernel *f = &rlx_cpu_fast_table[RLX_OP_Conv];
    if (f->applies && f->applies(a.n, a.in, a.n_in)) {
      a.k = f->kernel;
      double t = best_time(run_node, &a);
      total += t;
      printf("| %-36s | %8.4f ms | %6.1f GFLOP/s |\n", name, t * 1e3,
             2.0 * (double)(O * Ho * Ho) * (double)(C / l[i].g * k * k) / t * 1e-9);
    }
    free_node(&a);
  }
  printf("| sum | %8.4f ms | |\n", total * 1e3);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 2) min_s = atof(argv[2]) * 1e-3;
  if (threads < 1) threads = 1;
  rlx_cpu_pool *pool = NULL;
  if (rlx_cpu_pool_create(threads, &pool) != RLX_OK) { /* also sets OpenBLAS to one thread */
    fprintf(stderr, "pool: %s\n", rlx_last_error());
    return 1;
  }
  rlx_cpu_ctx ctx = {.threads = threads, .pool = pool};
  printf("threads: %d (OpenBLAS: 1 thread per call)\n\n", threads);
  if (argc > 3 && strcmp(argv[3], "mobilenet") == 0) {
    bench_mobilenet_convs(&ctx);
    rlx_cpu_pool_free(pool);
    return 0;
  }

  printf("| sgemm M x N x K (OpenBLAS, one call) | ms | GFLOP/s |\n|---|---|---|\n");
  int sizes[][3] = {{256, 256, 256},  {512, 512, 512}, {1024, 1024, 1024}, {32, 196, 144}, {16, 784, 9},
                    {32, 12544, 144}, {64, 128, 1568}, {1568, 128, 64},    {144, 196, 32}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gemm_arg g = {sizes[i][0], sizes[i][1], sizes[i][2], NULL, NULL, NULL};
    g.A = rand_buf((size_t)g.M * g.K);
    g.B = rand_buf((size_t)g.K * g.N);
    g.C = rand_buf((size_t)g.M * g.N);
    double t = best_time(run_sgemm, &g);
    printf("| %d x %d x %d | %.3f | %.1f |\n", g.M, g.N, g.K, t * 1e3, 2.0 * g.M * g.N * g.K / t * 1e-9);
    free(g.A);
    free(g.B);
    free(g.C);
  }

  printf("\n| kernel | fast | fast rate | reference | reference rate |\n|---|---|---|---|---|\n");
  node_arg a;
  {
    rlx_shape s[2] = {SHP(F32, 64, 1568), SHP(F32, 1568, 128)};
    make_node(&a, RLX_OP_MatMul, NULL, NULL, 2, s, &ctx);
    bench_node("MatMul [64,1568] x [1568,128]", &a, 2.0 * 64 * 1568 * 128, 0, true);
    free_node(&a);
  }
  struct {
    const char *name;
    int64_t N, C, H, W, O;
  } layers[2] = {{"conv1 [64,1,28,28] -> 16", 64, 1, 28, 28, 16}, {"conv2 [64,16,14,14] -> 32", 64, 16, 14, 14, 32}};
  for (int l = 0; l < 2; l++) {
    int64_t N = layers[l].N, C = layers[l].C, H = layers[l].H, W = layers[l].W, O = layers[l].O;
    double flops = 2.0 * (double)(N * O * H * W) * (double)(C * 9);
    rlx_shape xs = SHP(F32, N, C, H, W), ws = SHP(F32, O, C, 3, 3), ys = SHP(F32, N, O, H, W);
    char name[96];
    rlx_attrs_Conv ca = {
        .kernel_size = NOLIST, .stride = IL(1, 1), .padding = IL(1, 1), .dilation = IL(1, 1), .groups = 1};
    rlx_shape fs[2] = {xs, ws};
    make_node(&a, RLX_OP_Conv, &ca, NULL, 2, fs, &ctx);
    snprintf(name, sizeof name, "Conv %s", layers[l].name);
    bench_node(name, &a, flops, 0, true);
    free_node(&a);
    rlx_attrs_Conv2dBackwardInput bi = {
        .kernel_size = IL(3, 3), .stride = IL(1, 1), .padding = IL(1, 1), .dilation = IL(1, 1), .groups = 1};
    rlx_shape is[2] = {ys, ws};
    make_node(&a, RLX_OP_Conv2dBackwardInput, &bi, &xs, 2, is, &ctx);
    snprintf(name, sizeof name, "Conv2dBackwardInput %s", layers[l].name);
    bench_node(name, &a, flops, 0, true);
    free_node(&a);
    rlx_attrs_Conv2dBackwardWeight bw = {
        .kernel_size = IL(3, 3), .stride = IL(1, 1), .padding = IL(1, 1), .dilation = IL(1, 1), .groups = 1};
    rlx_shape wsh[2] = {xs, ys};
    make_node(&a, RLX_OP_Conv2dBackwardWeight, &bw, &ws, 2, wsh, &ctx);
    snprintf(name, sizeof name, "Conv2dBackwardWeight %s", layers[l].name);
    bench_node(name, &a, flops, 0, true);
    free_node(&a);
  }
  {
    rlx_shape s[2] = {SHP(F32, 64, 16, 28, 28), SHP(F32, 1, 16, 1, 1)};
    rlx_attrs_Binary ba = {.op = RLX_BINOP_ADD};
    make_node(&a, RLX_OP_Binary, &ba, NULL, 2, s, &ctx);
    bench_node("Binary add [64,16,28,28] + [1,16,1,1]", &a, 0, 2.0 * 64 * 16 * 784 * 4, false);
    free_node(&a);
    rlx_shape r[2] = {SHP(F32, 64, 16, 28, 28), SHP(F32, 64, 16, 28, 28)};
    make_node(&a, RLX_OP_ReluBackward, NULL, NULL, 2, r, &ctx);
    bench_node("ReluBackward [64,16,28,28]", &a, 0, 3.0 * 64 * 16 * 784 * 4, false);
    free_node(&a);
    rlx_shape m[2] = {SHP(F32, 64, 16, 28, 28), SHP(F32, 64, 16, 14, 14)};
    rlx_attrs_MaxPool2dBackward ma = {.kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = NOLIST};
    make_node(&a, RLX_OP_MaxPool2dBackward, &ma, NULL, 2, m, &ctx);
    bench_node("MaxPool2dBackward [64,16,28,28]", &a, 0, (2.0 * 784 + 196) * 64 * 16 * 4, false);
    free_node(&a);
    rlx_shape p[1] = {SHP(F32, 64, 16, 28, 28)};
    rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX, .kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = NOLIST};
    make_node(&a, RLX_OP_Pool, &pa, NULL, 1, p, &ctx);
    bench_node("Pool max 2x2 [64,16,28,28]", &a, 0, (784.0 + 196) * 64 * 16 * 4, false);
    free_node(&a);
    rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = IL(0, 2, 3), .keep_dim = true};
    make_node(&a, RLX_OP_Reduce, &ra, NULL, 1, p, &ctx);
    bench_node("Reduce sum axes 0,2,3 [64,16,28,28]", &a, 0, 784.0 * 64 * 16 * 4, false);
    free_node(&a);
  }
  rlx_cpu_pool_free(pool);
  return 0;
}
