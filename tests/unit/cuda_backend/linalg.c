/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* test_cuda_backend, part three (GPU only): the CUDA-library paths at sizes past the conformance
 * table's, against the CPU reference — Fft through cuFFT (batched Z2Z plans: powers of two, a
 * prime length on cuFFT's Bluestein path, real-block f32 / f64 and c64 / c128 lines, both
 * directions, every norm), Qr (geqrf + orgqr), Svd (gesvd, tall and wide) and Eigh / EighBatch
 * (syevd) with the CPU's sign conventions, each executable run three times (the second run of an
 * Fft program attempts the CUDA-graph capture and the third replays it, or runs step by step when
 * the capture failed; the cuSOLVER programs run step by step every time), and one program mixing
 * a MatMul, an Eigh and an Fft. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/backend.h"
#include "rlx/graph.h"
#include "rlx/build.h"
#include "rlx/ops.h"
#include "rlx/session.h"
#include "rlx_test.h"

void cuda_linalg_checks(void);

static double *dvals(size_t n, uint32_t seed) {
  double *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = -1.0 + 2.0 * ((double)(seed >> 8) / 16777216.0);
  }
  return v;
}

/* n values of dtype t (f32 / f64 / c64 / c128: complex counts two per element) from doubles */
static void *as_dtype(const double *v, size_t n, rlx_dtype t) {
  size_t reals = (t == RLX_C64 || t == RLX_C128) ? 2 * n : n;
  bool single = t == RLX_F32 || t == RLX_C64;
  void *p = malloc(reals * (single ? 4 : 8));
  for (size_t i = 0; i < reals; i++) {
    if (single)
      ((float *)p)[i] = (float)v[i];
    else
      ((double *)p)[i] = v[i];
  }
  return p;
}

static double get_real(const rlx_tensor *t, size_t i) {
  rlx_dtype d = t->shape.dtype;
  return d == RLX_F32 || d == RLX_C64 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* Runs g on cpu once and on cuda three times; returns the worst difference of any cuda run scaled
 * by max(1, max |cpu|) per output (real and imaginary parts counted as reals). */
static double cpu_vs_cuda3(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in) {
  rlx_executable *ec = NULL, *eg = NULL;
  const rlx_tensor *oc = NULL, *og = NULL;
  uint32_t nc = 0, ng = 0;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &ec));
  CHECK_OK(rlx_compile(g, "cuda", NULL, &eg));
  if (!ec || !eg) {
    rlx_executable_free(ec);
    rlx_executable_free(eg);
    return INFINITY;
  }
  CHECK_OK(rlx_executable_run(ec, in, n_in, &oc, &nc));
  double worst = 0;
  for (int run = 0; run < 3; run++) {
    rlx_status st = rlx_executable_run(eg, in, n_in, &og, &ng);
    CHECK_OK(st);
    if (st != RLX_OK || ng != nc) return INFINITY;
    for (uint32_t o = 0; o < nc; o++) {
      size_t n = 0;
      CHECK_OK(rlx_shape_numel(&oc[o].shape, &n));
      rlx_dtype d = oc[o].shape.dtype;
      if (d == RLX_C64 || d == RLX_C128) n *= 2;
      double scale = 1;
      for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(get_real(&oc[o], i)));
      for (size_t i = 0; i < n; i++) {
        double e = fabs(get_real(&oc[o], i) - get_real(&og[o], i)) / scale;
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
      }
    }
  }
  rlx_executable_free(ec);
  rlx_executable_free(eg);
  return worst;
}

/* y = Fft(x) over the last axis of x [lines, last] */
static void fft_case(rlx_dtype t, int64_t lines, int64_t N, bool inverse, rlx_fft_norm norm, double tol) {
  bool cplx = t == RLX_C64 || t == RLX_C128;
  int64_t last = cplx ? N : 2 * N;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_fft", &g));
  rlx_shape sx = rlx_shape_make(t, 2, (rlx_dim[]){lines, last});
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", sx, &x));
  rlx_attrs_Fft a;
  rlx_attrs_init(RLX_OP_Fft, &a);
  a.inverse = inverse;
  a.norm = norm;
  CHECK_OK(rlx_build_Fft(g, (rlx_id[]){x}, 1, &a, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  size_t count = (size_t)(lines * N);
  double *v = dvals(2 * count, (uint32_t)(N * 7 + lines));
  void *xv = as_dtype(v, cplx ? count : 2 * count, t);
  rlx_named_tensor in[] = {{"x", {xv, sx}}};
  double d = cpu_vs_cuda3(g, in, 1);
  CHECK_MSG(d < tol, "Fft %s [%lld, %lld] N=%lld inverse=%d norm=%d: max scaled difference %g (tolerance %g)",
            rlx_dtype_name(t), (long long)lines, (long long)last, (long long)N, (int)inverse, (int)norm, d, tol);
  printf("cuFFT Fft %-4s %4lld lines x N=%-5lld %s norm %d: max scaled difference %.3g (3 runs, graph capture attempted)\n",
         rlx_dtype_name(t), (long long)lines, (long long)N, inverse ? "inverse" : "forward", (int)norm, d);
  free(v);
  free(xv);
  rlx_graph_free(g);
}

typedef enum { LA_QR, LA_SVD, LA_EIGH, LA_EIGH_BATCH } la_kind;

/* one factor of A [m, n] (or B symmetric [n, n] matrices for Eigh) against the CPU */
static void la_case(la_kind k, int part, rlx_dtype t, int64_t b, int64_t m, int64_t n, double tol) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_la", &g));
  bool eig = k == LA_EIGH || k == LA_EIGH_BATCH;
  rlx_shape sx = k == LA_EIGH_BATCH ? rlx_shape_make(t, 3, (rlx_dim[]){b, n, n}) : rlx_shape_make(t, 2, (rlx_dim[]){m, n});
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", sx, &x));
  const char *what = "";
  if (k == LA_QR) {
    rlx_attrs_Qr a;
    rlx_attrs_init(RLX_OP_Qr, &a);
    a.part = part;
    CHECK_OK(rlx_build_Qr(g, (rlx_id[]){x}, 1, &a, NULL, &y));
    what = part == RLX_QR_PART_Q ? "Qr Q" : "Qr R";
  } else if (k == LA_SVD) {
    rlx_attrs_Svd a;
    rlx_attrs_init(RLX_OP_Svd, &a);
    a.part = part;
    CHECK_OK(rlx_build_Svd(g, (rlx_id[]){x}, 1, &a, NULL, &y));
    what = part == RLX_SVD_PART_U ? "Svd U" : part == RLX_SVD_PART_S ? "Svd S" : "Svd VT";
  } else if (k == LA_EIGH) {
    CHECK_OK(rlx_build_Eigh(g, (rlx_id[]){x}, 1, NULL, &y));
    what = "Eigh";
  } else {
    CHECK_OK(rlx_build_EighBatch(g, (rlx_id[]){x}, 1, NULL, &y));
    what = "EighBatch";
  }
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  int64_t mats = k == LA_EIGH_BATCH ? b : 1, rows = eig ? n : m;
  size_t count = (size_t)(mats * rows * n);
  double *v = dvals(count, (uint32_t)(m * 31 + n + part));
  if (eig) /* symmetric: the lower triangle mirrored (only it is read) */
    for (int64_t q = 0; q < mats; q++)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) v[q * n * n + j * n + i] = v[q * n * n + i * n + j];
  void *xv = as_dtype(v, count, t);
  rlx_named_tensor in[] = {{"x", {xv, sx}}};
  double d = cpu_vs_cuda3(g, in, 1);
  CHECK_MSG(d < tol, "%s %s [%lld, %lld, %lld]: max scaled difference %g (tolerance %g)", what, rlx_dtype_name(t),
            (long long)mats, (long long)rows, (long long)n, d, tol);
  printf("cuSOLVER %-9s %s %lld x [%lld, %lld]: max scaled difference %.3g (3 runs)\n", what, rlx_dtype_name(t),
         (long long)mats, (long long)rows, (long long)n, d);
  free(v);
  free(xv);
  rlx_graph_free(g);
}

/* Eigh(x^T x) and Fft of a real-block view of x in one program; outputs on cpu and cuda */
static void mixed_program(void) {
  const int64_t n = 48;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_la_mixed", &g));
  rlx_shape sx = rlx_shape_make(RLX_F64, 2, (rlx_dim[]){n, n});
  rlx_id x, xt, xx, e, f, outs[2];
  CHECK_OK(rlx_input(g, "x", sx, &x));
  CHECK_OK(rlx_permute(g, x, 2, (int64_t[]){1, 0}, &xt));
  CHECK_OK(rlx_matmul(g, xt, x, &xx));
  CHECK_OK(rlx_build_Eigh(g, (rlx_id[]){xx}, 1, NULL, &e));
  rlx_attrs_Fft af;
  rlx_attrs_init(RLX_OP_Fft, &af);
  CHECK_OK(rlx_build_Fft(g, (rlx_id[]){xx}, 1, &af, NULL, &f));
  outs[0] = e;
  outs[1] = f;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  double *v = dvals((size_t)(n * n), 77);
  rlx_named_tensor in[] = {{"x", {v, sx}}};
  double d = cpu_vs_cuda3(g, in, 1);
  CHECK_MSG(d < 1e-9, "MatMul + Eigh + Fft program: max scaled difference %g", d);
  printf("MatMul -> Eigh, Fft in one program (f64 %lld x %lld, 3 runs step by step): max scaled difference %.3g\n",
         (long long)n, (long long)n, d);
  free(v);
  rlx_graph_free(g);
}

void cuda_linalg_checks(void) {
  /* Fft: real-block f32 / f64, c64 / c128; radix-2, mixed radix, prime (Bluestein) */
  fft_case(RLX_F32, 64, 1024, false, RLX_FFT_NORM_BACKWARD, 1e-5);
  fft_case(RLX_F64, 33, 4099, true, RLX_FFT_NORM_ORTHO, 1e-12);
  fft_case(RLX_C64, 17, 1000, true, RLX_FFT_NORM_FORWARD, 1e-5);
  fft_case(RLX_C128, 256, 4096, false, RLX_FFT_NORM_ORTHO, 1e-12);
  fft_case(RLX_C128, 3, 1, false, RLX_FFT_NORM_BACKWARD, 1e-12);
  /* QR / SVD: tall and wide, both dtypes; Eigh single and batched */
  la_case(LA_QR, RLX_QR_PART_Q, RLX_F64, 1, 90, 40, 1e-9);
  la_case(LA_QR, RLX_QR_PART_R, RLX_F64, 1, 90, 40, 1e-9);
  la_case(LA_QR, RLX_QR_PART_Q, RLX_F32, 1, 30, 70, 1e-3);
  la_case(LA_QR, RLX_QR_PART_R, RLX_F32, 1, 30, 70, 1e-3);
  la_case(LA_SVD, RLX_SVD_PART_U, RLX_F64, 1, 80, 30, 1e-8);
  la_case(LA_SVD, RLX_SVD_PART_S, RLX_F64, 1, 80, 30, 1e-9);
  la_case(LA_SVD, RLX_SVD_PART_VT, RLX_F64, 1, 80, 30, 1e-8);
  la_case(LA_SVD, RLX_SVD_PART_U, RLX_F64, 1, 25, 60, 1e-8);
  la_case(LA_SVD, RLX_SVD_PART_VT, RLX_F64, 1, 25, 60, 1e-8);
  la_case(LA_SVD, RLX_SVD_PART_S, RLX_F32, 1, 40, 40, 1e-4);
  la_case(LA_EIGH, 0, RLX_F64, 1, 100, 100, 1e-8);
  la_case(LA_EIGH, 0, RLX_F32, 1, 33, 33, 2e-3);
  la_case(LA_EIGH_BATCH, 0, RLX_F64, 6, 20, 20, 1e-8);
  mixed_program();
}
