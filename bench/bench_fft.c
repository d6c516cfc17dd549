/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fft on f32 real-block lines: RLX's fast kernel (fast/signal.c) and reference kernel
 * (ref/signal.c) against KISS FFT (Debian's libkissfft-dev, BSD-3-Clause, float build), the
 * permissive FFT library that Debian 12 packages. Every contender does the same job: a batch of
 * lines [lines, 2N] (N real parts, then N imaginary parts) transformed forward into the same
 * layout, so KISS FFT's time includes packing each line into its interleaved complex type and
 * back. Also reports each result's largest error against the reference kernel (double inside),
 * relative to the largest output magnitude.
 *
 *   bench_fft [min_ms]         (one thread; best of repeated runs of at least min_ms, default 300) */
#define _POSIX_C_SOURCE 200809L
#include <kissfft/kiss_fft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "rlx/rlx.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double min_s = 0.3;

typedef struct job {
  size_t lines, n;
  const rlx_node *node;
  rlx_tensor in, out;
  rlx_cpu_kernel k;
  rlx_cpu_ctx *ctx;
  kiss_fft_cfg cfg;
  kiss_fft_cpx *ci, *co;
} job;

static void run_kernel(job *j) {
  if (j->k(j->node, &j->in, 1, &j->out, j->ctx) != RLX_OK) {
    fprintf(stderr, "kernel failed: %s\n", rlx_last_error());
    exit(1);
  }
}

static void run_kiss(job *j) {
  const float *x = j->in.data;
  float *y = j->out.data;
  size_t n = j->n;
  for (size_t l = 0; l < j->lines; l++) {
    const float *xl = x + l * 2 * n;
    float *yl = y + l * 2 * n;
    for (size_t k = 0; k < n; k++) j->ci[k].r = xl[k], j->ci[k].i = xl[n + k];
    kiss_fft(j->cfg, j->ci, j->co);
    for (size_t k = 0; k < n; k++) yl[k] = j->co[k].r, yl[n + k] = j->co[k].i;
  }
}

static double best(void (*fn)(job *), job *j) {
  fn(j);
  double b = 1e30, start = now_s();
  int runs = 0;
  while (runs < 3 || now_s() - start < min_s) {
    double t0 = now_s();
    fn(j);
    double t = now_s() - t0;
    if (t < b) b = t;
    runs++;
  }
  return b;
}

static double max_err(const float *a, const float *ref, size_t cnt) {
  double e = 0, m = 0;
  for (size_t i = 0; i < cnt; i++) {
    double d = fabs((double)a[i] - (double)ref[i]);
    if (d > e) e = d;
    if (fabs(ref[i]) > m) m = fabs(ref[i]);
  }
  return m > 0 ? e / m : e;
}

int main(int argc, char **argv) {
  if (argc > 1) min_s = atof(argv[1]) * 1e-3;
  rlx_cpu_pool *pool = NULL;
  if (rlx_cpu_pool_create(1, &pool) != RLX_OK) return 1;
  rlx_cpu_ctx ctx = {.threads = 1, .pool = pool};
  size_t sizes[] = {64, 256, 1024, 4096, 65536, 100, 1000, 4099, 1 << 12 | 1};
  printf("| N | lines | fast kernel ms | reference ms | KISS FFT ms | KISS / fast | err fast | err KISS |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t n = sizes[si], lines = (size_t)1 << 20 >> 1;
    lines = lines / n ? lines / n : 1;
    job j = {.lines = lines, .n = n, .ctx = &ctx};
    rlx_graph *g;
    rlx_graph_create(NULL, "bench_fft", &g);
    rlx_dim d[2] = {(rlx_dim)lines, (rlx_dim)(2 * n)};
    rlx_shape s = rlx_shape_make(RLX_F32, 2, d);
    rlx_id x, y;
    rlx_input(g, "x", s, &x);
    rlx_attrs_Fft a = {.inverse = false, .norm = RLX_FFT_NORM_BACKWARD};
    if (rlx_build_Fft(g, &x, 1, &a, NULL, &y) != RLX_OK) return 1;
    j.node = rlx_graph_node(g, y);
    size_t cnt = lines * 2 * n;
    float *xin = malloc(cnt * sizeof *xin), *yf = malloc(cnt * sizeof *yf), *yr = malloc(cnt * sizeof *yr),
          *yk = malloc(cnt * sizeof *yk);
    uint32_t r = 2463534242u;
    for (size_t i = 0; i < cnt; i++) {
      r ^= r << 13, r ^= r >> 17, r ^= r << 5;
      xin[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
    }
    j.in = (rlx_tensor){.shape = s, .data = xin};
    j.out = (rlx_tensor){.shape = s, .data = yf};
    const rlx_cpu_fast_kernel *f = &rlx_cpu_fast_table[RLX_OP_Fft];
    if (!f->applies || !f->applies(j.node, &j.in, 1)) {
      fprintf(stderr, "the fast Fft kernel does not apply\n");
      return 1;
    }
    j.k = f->kernel;
    double tf = best(run_kernel, &j);
    j.k = rlx_cpu_ref_table[RLX_OP_Fft];
    j.out.data = yr;
    double tr = best(run_kernel, &j);
    j.cfg = kiss_fft_alloc((int)n, 0, NULL, NULL);
    j.ci = malloc(n * sizeof *j.ci);
    j.co = malloc(n * sizeof *j.co);
    j.out.data = yk;
    double tk = best(run_kiss, &j);
    printf("| %zu | %zu | %.3f | %.3f | %.3f | %.2f | %.1e | %.1e |\n", n, lines, tf * 1e3, tr * 1e3, tk * 1e3, tk / tf,
           max_err(yf, yr, cnt), max_err(yk, yr, cnt));
    kiss_fft_free(j.cfg);
    free(j.ci);
    free(j.co);
    free(xin);
    free(yf);
    free(yr);
    free(yk);
    rlx_graph_free(g);
  }
  rlx_cpu_pool_free(pool);
  return 0;
}
