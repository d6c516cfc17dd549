/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: signal ops (spec ir-special §4).
 *
 * Fft{inverse, norm}: the discrete Fourier transform of every line along the last axis,
 *   y[k] = scale * sum_n x[n] * exp(-+2 pi i n k / N)   (minus forward, plus inverse),
 * scale = 1 (Backward), 1/N on the inverse only (Forward), 1/sqrt(N) both ways (Ortho).
 * f32/f64 tensors hold each line in real-block layout [re_0..re_{N-1}, im_0..im_{N-1}] (2N
 * values); c64/c128 tensors hold N complex values.
 *
 * Each line is read into double complex and transformed in double: an iterative radix-2 FFT
 * when N is a power of two, otherwise Bluestein's chirp-z identity, which writes the DFT of any
 * length as a circular convolution of power-of-two length M >= 2N - 1 (three radix-2 FFTs). The
 * result is rounded once to the output dtype. */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/ref/ref_util.h"

static const double TWO_PI = 6.283185307179586476925286766559;

static bool is_pow2(size_t v) { return v && (v & (v - 1)) == 0; }

/* a * b by the textbook formula. C's complex `*` also recovers infinities from NaN products
 * (Annex G), through a library call per product; a transform whose input holds Inf or NaN gives
 * NaN in the affected bins either way. */
static inline double complex cmul(double complex a, double complex b) {
  double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
  return ru_cplx(ar * br - ai * bi, ar * bi + ai * br);
}

/* exp(sign * 2 pi i k / n), with k reduced mod n so the angle stays small and exact-ish. */
static double complex unit_root(size_t k, size_t n, int sign) {
  double ang = TWO_PI * (double)(k % n) / (double)n;
  return ru_cplx(cos(ang), sign * sin(ang));
}

/* In-place radix-2 decimation-in-time FFT of a[0..n), n a power of two; sign -1 forward, +1
 * inverse (no scaling). tw[0..n/2) holds exp(sign * 2 pi i k / n). */
static void fft_radix2(double complex *a, size_t n, const double complex *tw) {
  /* bit-reversal permutation */
  for (size_t i = 1, j = 0; i < n; i++) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      double complex t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
  /* butterflies: spans of len = 2, 4, ..., n; twiddle stride n / len */
  for (size_t len = 2; len <= n; len <<= 1) {
    size_t half = len / 2, step = n / len;
    for (size_t start = 0; start < n; start += len)
      for (size_t k = 0; k < half; k++) {
        double complex u = a[start + k], v = cmul(a[start + k + half], tw[k * step]);
        a[start + k] = u + v;
        a[start + k + half] = u - v;
      }
  }
}

/* Plan for one line length: twiddles, and for non-power-of-two N the Bluestein chirp and the
 * transformed convolution kernel. */
typedef struct fft_plan {
  size_t n, m;           /* line length; transform length (n when a power of two, else >= 2n - 1) */
  double complex *tw;    /* [m / 2] twiddles of the length-m transform, direction `sign` */
  double complex *itw;   /* [m / 2] opposite direction (Bluestein's inverse convolution FFT) */
  double complex *chirp; /* [n] exp(sign * pi i k^2 / n) (Bluestein only) */
  double complex *kern;  /* [m] FFT of the conjugate chirp, wrapped (Bluestein only) */
  double complex *work;  /* [m] scratch */
} fft_plan;

static void plan_free(fft_plan *p) {
  free(p->tw);
  free(p->itw);
  free(p->chirp);
  free(p->kern);
  free(p->work);
}

static bool plan_init(fft_plan *p, size_t n, int sign) {
  *p = (fft_plan){.n = n, .m = n};
  if (!is_pow2(n)) {
    p->m = 1;
    while (p->m < 2 * n - 1) p->m <<= 1;
  }
  size_t m = p->m, half = m / 2 ? m / 2 : 1;
  p->tw = malloc(half * sizeof *p->tw);
  p->work = malloc(m * sizeof *p->work);
  if (!p->tw || !p->work) return false;
  for (size_t k = 0; k < m / 2; k++) p->tw[k] = unit_root(k, m, sign);
  if (m == n) return true;

  p->itw = malloc(half * sizeof *p->itw);
  p->chirp = malloc(n * sizeof *p->chirp);
  p->kern = calloc(m, sizeof *p->kern);
  if (!p->itw || !p->chirp || !p->kern) return false;
  for (size_t k = 0; k < m / 2; k++) p->itw[k] = conj(p->tw[k]);
  /* j k = (j^2 + k^2 - (k - j)^2) / 2, so w^(jk) = chirp[j] chirp[k] conj(chirp[k - j]) with
   * chirp[k] = exp(sign pi i k^2 / n) = exp(sign 2 pi i (k^2 mod 2n) / (2n)) */
  for (size_t k = 0; k < n; k++) p->chirp[k] = unit_root((k * k) % (2 * n), 2 * n, sign);
  /* kern[j] = conj(chirp[|j|]) for j in (-n, n), stored circularly */
  p->kern[0] = conj(p->chirp[0]);
  for (size_t k = 1; k < n; k++) p->kern[k] = p->kern[m - k] = conj(p->chirp[k]);
  fft_radix2(p->kern, m, p->tw);
  return true;
}

/* a[0..n) <- its unscaled DFT in the plan's direction. */
static void plan_run(fft_plan *p, double complex *a) {
  size_t n = p->n, m = p->m;
  if (m == n) {
    fft_radix2(a, n, p->tw);
    return;
  }
  /* X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]) : a circular convolution */
  double complex *w = p->work;
  for (size_t j = 0; j < m; j++) w[j] = j < n ? cmul(a[j], p->chirp[j]) : 0;
  fft_radix2(w, m, p->tw);
  for (size_t j = 0; j < m; j++) w[j] = cmul(w[j], p->kern[j]);
  fft_radix2(w, m, p->itw);
  for (size_t k = 0; k < n; k++) a[k] = cmul(w[k], p->chirp[k]) / (double)m;
}

/* The norm's factor for a length-n transform in the given direction. */
static double fft_scale(rlx_fft_norm norm, size_t n, bool inverse) {
  switch (norm) {
  case RLX_FFT_NORM_FORWARD: return inverse ? 1.0 / (double)n : 1.0;
  case RLX_FFT_NORM_ORTHO: return 1.0 / sqrt((double)n);
  default: return 1.0;
  }
}

RLX_CPU_KERNEL(Fft) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  bool cplx = t == RLX_C64 || t == RLX_C128;
  if (!cplx && t != RLX_F32 && t != RLX_F64)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has dtype %s; Fft takes f32/f64 (real-block) or c64/c128",
                    rlx_dtype_name(t));
  if (x->rank < 1) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 is a scalar; Fft transforms the last axis");
  size_t last = (size_t)x->dims[x->rank - 1];
  size_t len = cplx ? last : last / 2; /* N */
  if (len < 1 || (!cplx && last % 2))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; the last axis must hold %s", ru_fmt(x),
                    cplx ? "N >= 1 complex values" : "an even number 2N >= 2 of real-block values");
  size_t lines = ru_numel(x) / last;
  if (lines == 0) return RLX_OK;

  const rlx_attrs_Fft *a = &n->attrs.Fft;
  bool inverse = a->inverse;
  double scale = fft_scale((rlx_fft_norm)a->norm, len, inverse);
  fft_plan plan = {0};
  double complex *line = malloc(len * sizeof *line);
  bool ok = line && plan_init(&plan, len, inverse ? +1 : -1);
  if (!ok) {
    free(line);
    plan_free(&plan);
    return ru_error(RLX_ERR_OOM, n, "out of memory for a transform of length %zu", len);
  }
  for (size_t r = 0; r < lines; r++) {
    size_t base = r * last;
    for (size_t k = 0; k < len; k++) {
      double re, im;
      if (cplx)
        rlx_elem_get_c(in[0].data, t, base + k, &re, &im);
      else {
        re = rlx_elem_get(in[0].data, t, base + k);
        im = rlx_elem_get(in[0].data, t, base + len + k);
      }
      line[k] = ru_cplx(re, im);
    }
    plan_run(&plan, line);
    for (size_t k = 0; k < len; k++) {
      double re = creal(line[k]) * scale, im = cimag(line[k]) * scale;
      if (cplx)
        rlx_elem_set_c(out->data, t, base + k, re, im);
      else {
        ru_store(out->data, t, base + k, re);
        ru_store(out->data, t, base + len + k, im);
      }
    }
  }
  free(line);
  plan_free(&plan);
  return RLX_OK;
}
