/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Times one training step's graph of the Fashion-MNIST CNN on the CPU backend:
 *   conv3x3(16, pad 1) + bias -> relu -> maxpool2 -> conv3x3(32, pad 1) + bias -> relu -> maxpool2
 *   -> flatten -> fc128 + bias -> relu -> fc10 + bias -> mean softmax cross-entropy
 * forward + backward (rlx_grad_with_loss over the 8 params), compiled by rlx_compile "cpu".
 *
 *   bench_cnn_step [steps] [batch] [threads]
 *
 * Prints the op kinds of the compiled graph, then the best and median step time over `steps` runs
 * after a warm-up, and the process CPU time per step (all threads; on a busy machine the best
 * single-thread figure to compare). RLX_CPU_REF_ONLY=1 times the reference kernels instead of the fast ones;
 * RLX_CPU_PROFILE=1 makes the executor print a per-node time table when it is freed. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/cpu.h"
#include "rlx/autodiff.h"
#include "rlx/rlx.h"

#define TRY(expr)                                                                                    \
  do {                                                                                               \
    rlx_status s_ = (expr);                                                                          \
    if (s_ != RLX_OK) {                                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, rlx_status_text(s_), rlx_last_error()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

#include "cnn_model.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 16777216.0));
}

static double clock_ms(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 50;
  int64_t batch = argc > 2 ? atoll(argv[2]) : 64;
  int threads = argc > 3 ? atoi(argv[3]) : 0;
  if (steps < 1 || batch < 1) {
    fprintf(stderr, "usage: bench_cnn_step [steps >= 1] [batch >= 1] [threads]\n");
    return 2;
  }
  rlx_graph *f = cnn_forward(batch);
  const char *wrt[] = {"w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4"};
  rlx_grad_options go;
  rlx_grad_options_init(&go);
  rlx_graph *gr;
  TRY(rlx_grad_with_loss(f, wrt, 8, &go, &gr));
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  rlx_cpu_options cpu_opt;
  rlx_cpu_options_init(&cpu_opt);
  cpu_opt.threads = threads;
  co.backend_options = &cpu_opt;
  rlx_executable *e;
  double t0 = now_ms();
  TRY(rlx_compile(gr, "cpu", &co, &e));
  double t_compile = now_ms() - t0;

  /* Op kinds of the compiled graph. */
  const rlx_graph *cg = rlx_executable_graph(e);
  uint32_t count[RLX_OP_COUNT] = {0};
  for (rlx_id i = 0; i < rlx_graph_node_count(cg); i++) count[rlx_graph_node(cg, i)->op]++;
  printf("compiled graph: %u nodes (compile %.1f ms):", rlx_graph_node_count(cg), t_compile);
  for (int k = 0; k < RLX_OP_COUNT; k++)
    if (count[k]) printf(" %s=%u", rlx_op_name((rlx_op)k), count[k]);
  printf("\n");

  /* Params: small uniform values; inputs: uniform pixels and labels 0..9. */
  for (uint32_t i = 0; i < rlx_executable_param_count(e); i++) {
    const rlx_shape *s = rlx_executable_param_shape(e, i);
    size_t n;
    TRY(rlx_shape_numel(s, &n));
    float *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t k = 0; k < n; k++) v[k] = (urand() - 0.5f) * 0.2f;
    rlx_tensor t = {v, *s};
    TRY(rlx_executable_set_param(e, rlx_executable_param_name(e, i), &t));
    free(v);
  }
  size_t nx = (size_t)batch * 28 * 28;
  float *xv = malloc(nx * sizeof *xv);
  int32_t *lv = malloc((size_t)batch * sizeof *lv);
  for (size_t k = 0; k < nx; k++) xv[k] = urand();
  for (int64_t k = 0; k < batch; k++) lv[k] = (int32_t)(k % 10);
  float seed = 1.0f;
  rlx_named_tensor in[3] = {
      {"x", {xv, f32s(4, (rlx_dim[]){batch, 1, 28, 28})}},
      {"labels", {lv, rlx_shape_make(RLX_I32, 1, (rlx_dim[]){batch})}},
      {"d_output", {&seed, rlx_shape_scalar(RLX_F32)}},
  };
  const rlx_tensor *outs;
  uint32_t n_outs;
  for (int i = 0; i < 3; i++) TRY(rlx_executable_run(e, in, 3, &outs, &n_outs));
  double *ms = malloc((size_t)steps * sizeof *ms);
  double cpu0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < steps; i++) {
    double a = now_ms();
    TRY(rlx_executable_run(e, in, 3, &outs, &n_outs));
    ms[i] = now_ms() - a;
  }
  double cpu = (clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / steps;
  printf("loss %.6f\n", (double)*(const float *)outs[0].data);
  qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
  printf("step (forward + backward, batch %lld): best %.3f ms, median %.3f ms over %d runs; %.3f ms CPU time per "
         "step (all threads)\n",
         (long long)batch, ms[0], ms[steps / 2], steps, cpu);
  free(ms);
  free(xv);
  free(lv);
  rlx_executable_free(e);
  rlx_graph_free(gr);
  rlx_graph_free(f);
  return 0;
}
