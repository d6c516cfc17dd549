/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Finite-difference checks of the complex gradient formulas of the signal ops (spec ir-special
 * §4, Wirtinger convention: the cotangent of a complex value z is dL/dz-bar =
 * (dL/dre + i dL/dim) / 2). Autodiff does not propagate complex cotangents through real <-> complex
 * casts yet, so test_gradcheck cannot reach these ops; here the backward ops their VJP rules emit
 * are run on the CPU and compared with central differences of the forward ops:
 *   - ComplexNormSq's rule emits ComplexNormSqBackward(z, g): for L = sum g |z|^2 it must equal
 *     dL/dz-bar;
 *   - Conjugate's rule emits Conjugate(dy): for L = sum Re(conj(w) conj(z)) (so dy = w / 2 at
 *     y = conj(z)), Conjugate(dy) must equal dL/dz-bar.
 * Also: LogMel's rule refuses a gradient for the filter bank (an error, never a silent zero). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#define N 6

/* Runs op on the given c128 [N] operand z and optional f64 [N] operand g; out gets the N
 * results (2N doubles for complex results, N for real ones). */
static void run(rlx_op op, const double *z, const double *g, double *out) {
  rlx_graph *gr;
  CHECK_OK(rlx_graph_create(NULL, "signal_grad", &gr));
  rlx_dim d = N;
  rlx_id in[2], y;
  CHECK_OK(rlx_input(gr, "z", rlx_shape_make(RLX_C128, 1, &d), &in[0]));
  uint32_t n_in = 1;
  if (g) CHECK_OK(rlx_input(gr, "g", rlx_shape_make(RLX_F64, 1, &d), &in[n_in++]));
  CHECK_OK(rlx_graph_add(gr, op, in, n_in, NULL, NULL, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(gr, &y, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(gr, "cpu", NULL, &e));
  rlx_named_tensor t[2] = {{"z", {(void *)z, rlx_shape_make(RLX_C128, 1, &d)}},
                           {"g", {(void *)g, rlx_shape_make(RLX_F64, 1, &d)}}};
  const rlx_tensor *outs = NULL;
  uint32_t no = 0;
  CHECK_OK(rlx_executable_run(e, t, n_in, &outs, &no));
  if (no == 1) {
    size_t cnt = outs[0].shape.dtype == RLX_C128 ? 2 * N : N;
    for (size_t i = 0; i < cnt; i++) out[i] = ((const double *)outs[0].data)[i];
  }
  rlx_executable_free(e);
  rlx_graph_free(gr);
}

static double uni(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (double)(*s >> 8) / 8388608.0 - 1.0;
}

/* L(z) = sum_i g_i |z_i|^2 through the ComplexNormSq kernel. */
static double loss_normsq(const double *z, const double *g) {
  double p[N], s = 0;
  run(RLX_OP_ComplexNormSq, z, NULL, p);
  for (int i = 0; i < N; i++) s += g[i] * p[i];
  return s;
}

/* L(z) = sum_i Re(conj(w_i) conj(z_i)) through the Conjugate kernel. */
static double loss_conj(const double *z, const double *w) {
  double c[2 * N], s = 0;
  run(RLX_OP_Conjugate, z, NULL, c);
  for (int i = 0; i < N; i++) s += w[2 * i] * c[2 * i] + w[2 * i + 1] * c[2 * i + 1];
  return s;
}

/* Central differences of L along re / im of each element: the expected dL/dz-bar. */
static void fd(double (*loss)(const double *, const double *), const double *z, const double *aux, double *g) {
  const double h = 1e-6;
  double zz[2 * N];
  for (int i = 0; i < 2 * N; i++) zz[i] = z[i];
  for (int i = 0; i < 2 * N; i++) {
    zz[i] = z[i] + h;
    double lp = loss(zz, aux);
    zz[i] = z[i] - h;
    double lm = loss(zz, aux);
    zz[i] = z[i];
    g[i] = 0.5 * (lp - lm) / (2 * h);
  }
}

/* LogMel's rule gives the filter bank no gradient: asking for one is an error naming it. */
static void logmel_filters_refused(void) {
  rlx_graph *g, *gr = NULL;
  CHECK_OK(rlx_graph_create(NULL, "logmel_grad", &g));
  rlx_dim sd[2] = {2, 16}, fd_[2] = {4, 5};
  rlx_id in[2], y, loss;
  CHECK_OK(rlx_param(g, "spectrum", rlx_shape_make(RLX_F64, 2, sd), &in[0]));
  CHECK_OK(rlx_param(g, "filters", rlx_shape_make(RLX_F64, 2, fd_), &in[1]));
  CHECK_OK(rlx_build_LogMel(g, in, 2, NULL, &y));
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, y, 0, NULL, false, &loss));
  CHECK_OK(rlx_graph_set_outputs(g, &loss, 1));
  const char *wrt[2] = {"spectrum", "filters"};
  CHECK_ERR(rlx_grad(g, wrt, 2, NULL, &gr), RLX_ERR_UNSUPPORTED, "filter bank");
  rlx_graph_free(gr);
  gr = NULL;
  CHECK_OK(rlx_grad(g, wrt, 1, NULL, &gr)); /* the spectrum alone is fine */
  rlx_graph_free(gr);
  rlx_graph_free(g);
}

int main(void) {
  logmel_filters_refused();
  unsigned s = 12345u;
  double z[2 * N], g[N], w[2 * N], got[2 * N], want[2 * N], half_w[2 * N];
  for (int i = 0; i < 2 * N; i++) z[i] = uni(&s), w[i] = uni(&s), half_w[i] = 0.5 * w[i];
  for (int i = 0; i < N; i++) g[i] = uni(&s);

  run(RLX_OP_ComplexNormSqBackward, z, g, got);
  fd(loss_normsq, z, g, want);
  for (int i = 0; i < 2 * N; i++)
    CHECK_MSG(fabs(got[i] - want[i]) <= 1e-7 * (1 + fabs(want[i])), "ComplexNormSqBackward [%d]: %.10g, FD %.10g", i,
              got[i], want[i]);

  run(RLX_OP_Conjugate, half_w, NULL, got); /* dy = w / 2 */
  fd(loss_conj, z, w, want);
  for (int i = 0; i < 2 * N; i++)
    CHECK_MSG(fabs(got[i] - want[i]) <= 1e-7 * (1 + fabs(want[i])), "Conjugate VJP [%d]: %.10g, FD %.10g", i, got[i],
              want[i]);
  return rlx_test_finish("signal_grad");
}
