/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Steady-state inference latency of an ONNX model on the CPU backend:
 *
 *   bench_onnx_infer MODEL.onnx INPUT.npy THREADS WARMUP ITERS [OUT.npy]
 *
 * Imports the model (initializers as constants, the input's shape binding its dims), compiles it
 * for "cpu" with THREADS worker threads, runs WARMUP untimed runs and then ITERS timed ones.
 * Prints one JSON line: compile time, median / best / mean run time in milliseconds, the process
 * CPU time per run (all threads), the node counts of the imported and compiled graphs, and memory:
 * the process's peak resident set (getrusage; it includes the imported model and its constants),
 * the resident set at start (before the model and input) and the planned arena of the
 * executable. OUT.npy receives the first output of the last run (what
 * bench/run_infer_bench.sh compares with ONNX Runtime's). The model's first input gets INPUT.npy
 * under the model's own input name. RLX_CPU_PROFILE=1 makes the executor print a per-node time
 * table when it is freed. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rlx/cpu.h"
#include "rlx/npy.h"
#include "rlx/onnx.h"
#include "rlx/rlx.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Resident set size now (/proc/self/statm) and the process's peak so far (getrusage), in MiB. */
static double rss_now_mb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return (double)resident * 4096.0 / 1048576.0;
}

static double rss_peak_mb(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? (double)u.ru_maxrss / 1024.0 : 0.0; /* ru_maxrss: KiB */
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int fail(const char *what) {
  fprintf(stderr, "bench_onnx_infer: %s: %s\n", what, rlx_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: bench_onnx_infer MODEL.onnx INPUT.npy THREADS WARMUP ITERS [OUT.npy]\n");
    return 2;
  }
  const char *model = argv[1], *input = argv[2], *out_path = argc > 6 ? argv[6] : NULL;
  int threads = atoi(argv[3]), warmup = atoi(argv[4]), iters = atoi(argv[5]);
  double base_rss = rss_now_mb(); /* before the model and the input */
  if (threads < 0 || warmup < 0 || iters < 1) {
    fprintf(stderr, "bench_onnx_infer: THREADS >= 0, WARMUP >= 0 and ITERS >= 1 expected\n");
    return 2;
  }
  rlx_tensor x;
  if (rlx_npy_load(input, NULL, &x) != RLX_OK) return fail(input);

  /* A first import only to learn the input's name; the second binds its shape. */
  rlx_graph *g = NULL;
  rlx_onnx_options oo;
  rlx_onnx_options_init(&oo);
  double t0 = now_ms();
  if (rlx_onnx_import_file(model, &oo, NULL, &g) != RLX_OK) return fail(model);
  rlx_executable *e = NULL;
  const char *in_name = NULL;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (n->op == RLX_OP_Input) {
      in_name = n->attrs.Input.name;
      break;
    }
  }
  if (!in_name) {
    fprintf(stderr, "bench_onnx_infer: %s has no input\n", model);
    return 1;
  }
  char *name = strdup(in_name);
  rlx_graph_free(g);
  g = NULL;
  rlx_named_tensor bind = {.name = name, .tensor = {.data = NULL, .shape = x.shape}};
  oo.inputs = &bind;
  oo.n_inputs = 1;
  double t_import = now_ms();
  if (rlx_onnx_import_file(model, &oo, NULL, &g) != RLX_OK) return fail(model);
  t_import = now_ms() - t_import;

  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = threads;
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  co.backend_options = &cpu;
  double t_compile = now_ms();
  if (rlx_compile(g, "cpu", &co, &e) != RLX_OK) return fail("compile");
  t_compile = now_ms() - t_compile;
  (void)t0;
  /* the executable holds what it runs: the imported graph (a copy of the weights) goes, as it
     would in an application */
  uint32_t nodes_before = rlx_graph_node_count(g);
  rlx_graph_free(g);
  g = NULL;
  if (getenv("DBGMEM")) fprintf(stderr, "rss after compile %.1f peak %.1f\n", rss_now_mb(), rss_peak_mb());

  rlx_named_tensor in = {.name = name, .tensor = x};
  const rlx_tensor *outs = NULL;
  uint32_t n_outs = 0;
  for (int i = 0; i < warmup; i++)
    if (rlx_executable_run(e, &in, 1, &outs, &n_outs) != RLX_OK) return fail("run");
  double *t = malloc(sizeof *t * (size_t)iters), sum = 0, cpu0 = cpu_ms();
  if (!t) return 1;
  for (int i = 0; i < iters; i++) {
    double a = now_ms();
    if (rlx_executable_run(e, &in, 1, &outs, &n_outs) != RLX_OK) return fail("run");
    t[i] = now_ms() - a;
    sum += t[i];
  }
  double cpu_run = (cpu_ms() - cpu0) / iters;
  qsort(t, (size_t)iters, sizeof *t, cmp_double);
  double median = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
  if (out_path && n_outs > 0 && rlx_npy_save(out_path, &outs[0]) != RLX_OK) return fail(out_path);
  const rlx_graph *cg = rlx_executable_graph(e);
  const rlx_dispatch_report *rep = rlx_executable_report(e);
  printf("{\"import_ms\": %.3f, \"compile_ms\": %.3f, \"median_ms\": %.4f, \"best_ms\": %.4f, "
         "\"mean_ms\": %.4f, \"cpu_ms\": %.4f, \"iters\": %d, \"nodes_before\": %u, \"nodes_after\": %u, "
         "\"peak_rss_mb\": %.1f, \"base_rss_mb\": %.1f, \"arena_mb\": %.1f}\n",
         t_import, t_compile, median, t[0], sum / iters, cpu_run, iters, nodes_before, rlx_graph_node_count(cg),
         rss_peak_mb(), base_rss, rep ? (double)rep->arena_bytes / 1048576.0 : 0.0);
  free(t);
  free(name);
  rlx_executable_free(e);
  rlx_npy_tensor_free(&x, NULL);
  return 0;
}
