/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* f32 GEMM: an rlx MatMul executable (compiled for "cpu", inputs resident, run_resident in a loop)
 * against one cblas_sgemm call of the OpenBLAS it links, in the same process, same thread count.
 * Square sizes 64..2048 plus the given extra sizes; best and median of repeated runs.
 *
 *   bench_gemm [threads] [min_seconds_per_case] [--no-deterministic]
 *
 * The CPU backend switches OpenBLAS to one thread per call when its pool starts (its own threads
 * split the work), so the peer's thread count is set again before each peer measurement. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/cpu.h"
#include "rlx/graph.h"
#include "rlx/session.h"

void openblas_set_num_threads(int num_threads);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct timing {
  double best, median;
} timing;

#define MAX_RUNS 4096
#define ROUNDS 6

static timing summarize(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return (timing){.best = t[0], .median = t[n / 2]};
}

static void die(const char *what) {
  fprintf(stderr, "bench_gemm: %s: %s\n", what, rlx_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  double min_s = argc > 2 ? atof(argv[2]) : 0.5;
  bool det = !(argc > 3 && strcmp(argv[3], "--no-deterministic") == 0);
  static const int sizes[] = {64, 128, 256, 512, 1024, 2048};
  printf("| n | rlx ms (best / median) | OpenBLAS ms (best / median) | rlx GFLOP/s | OpenBLAS GFLOP/s | rlx / OpenBLAS "
         "(best) |\n|---|---|---|---|---|---|\n");
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int n = sizes[si];
    size_t nn = (size_t)n * (size_t)n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    if (!a || !b || !c) return 1;
    for (size_t i = 0; i < nn; i++) a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < nn; i++) b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;

    rlx_graph *g;
    rlx_id x, w, y;
    rlx_dim d[2] = {n, n};
    rlx_shape s = rlx_shape_make(RLX_F32, 2, d);
    if (rlx_graph_create(NULL, "gemm", &g) || rlx_input(g, "a", s, &x) || rlx_input(g, "b", s, &w) ||
        rlx_matmul(g, x, w, &y) || rlx_graph_set_outputs(g, &y, 1))
      die("building the graph");
    rlx_cpu_options co;
    rlx_cpu_options_init(&co);
    co.threads = threads;
    co.deterministic = det;
    rlx_compile_options opt;
    rlx_compile_options_init(&opt);
    opt.backend_options = &co;
    rlx_executable *e;
    if (rlx_compile(g, "cpu", &opt, &e)) die("compiling");
    rlx_tensor ta = {.shape = s, .data = a}, tb = {.shape = s, .data = b};
    if (rlx_executable_set_input(e, "a", &ta) || rlx_executable_set_input(e, "b", &tb)) die("setting inputs");
    double flops = 2.0 * (double)n * (double)n * (double)n;

    /* interleaved: rounds of rlx runs and peer runs, so drifting clocks and load hit both alike */
    static double tr[MAX_RUNS], tp[MAX_RUNS];
    int nr = 0, np = 0;
    const rlx_tensor *out = NULL;
    for (int round = 0; round < ROUNDS; round++) {
      for (double start = now_s(); nr < MAX_RUNS && (now_s() - start < min_s / ROUNDS || nr < 3 * (round + 1));) {
        double t0 = now_s();
        if (rlx_executable_run_resident(e)) die("running");
        tr[nr++] = now_s() - t0;
      }
      openblas_set_num_threads(threads);
      for (double start = now_s(); np < MAX_RUNS && (now_s() - start < min_s / ROUNDS || np < 3 * (round + 1));) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        tp[np++] = now_s() - t0;
      }
    }
    timing r = summarize(tr, nr), p = summarize(tp, np);
    if (rlx_executable_read_output(e, 0, &out)) die("reading the output");
    double maxd = 0;
    for (size_t i = 0; i < nn; i++) {
      double dd = (double)((const float *)out->data)[i] - (double)c[i];
      if (dd < 0) dd = -dd;
      if (dd > maxd) maxd = dd;
    }
    if (maxd > 1e-3 * n) {
      fprintf(stderr, "bench_gemm: n=%d: rlx and OpenBLAS differ by %g\n", n, maxd);
      return 1;
    }
    printf("| %d | %.4f / %.4f | %.4f / %.4f | %.1f | %.1f | %.2f |\n", n, 1e3 * r.best, 1e3 * r.median, 1e3 * p.best,
           1e3 * p.median, flops / r.best * 1e-9, flops / p.best * 1e-9, p.best / r.best);
    rlx_executable_free(e);
    rlx_graph_free(g);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
