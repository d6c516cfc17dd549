/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast CPU kernel: Fft on f32 real-block tensors. The real-block layout already stores a line's
 * real and imaginary parts as two contiguous runs, so each line is transformed in split form
 * (re[], im[]) rather than as the reference's (ref/signal.c) array of double complex read element
 * by element: iterative radix-2 with per-stage contiguous twiddles (the inner loop vectorises)
 * when N is a power of two, Bluestein's chirp-z convolution of power-of-two length M >= 2N - 1
 * otherwise; lines are split over the worker pool. The arithmetic stays in double, as in the
 * reference: an f32 transform leaves errors of ~eps_f32 * |y|max in bins that are exactly zero
 * (the imaginary DC bin of a real signal), which ONNX-style checks (|d| <= 1e-7 + 1e-3 |y|)
 * reject. */
#include <math.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

static const double FK_TWO_PI = 6.283185307179586476925286766559;

static bool fk_pow2(size_t v) { return v && (v & (v - 1)) == 0; }

/* exp(sign * 2 pi i k / n) in double. */
static void fk_root(size_t k, size_t n, int sign, double *re, double *im) {
  double ang = FK_TWO_PI * (double)(k % n) / (double)n;
  *re = cos(ang);
  *im = sign * sin(ang);
}

/* Twiddles of a length-m radix-2 transform, stage by stage: the stage of half-span h (1, 2, 4,
 * ... m/2) keeps exp(sign 2 pi i k / (2h)), k < h, at offset h - 1 (m - 1 values in all). */
static void fk_twiddles(size_t m, int sign, double *tr, double *ti) {
  for (size_t h = 1; h < m; h <<= 1)
    for (size_t k = 0; k < h; k++) {
      fk_root(k, 2 * h, sign, &tr[h - 1 + k], &ti[h - 1 + k]);
    }
}

/* In-place radix-2 DIT transform of (re, im)[0..m), m a power of two, unscaled. */
static void fk_fft2(double *restrict re, double *restrict im, size_t m, const double *restrict tr,
                    const double *restrict ti) {
  for (size_t i = 1, j = 0; i < m; i++) {
    size_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      double t = re[i];
      re[i] = re[j], re[j] = t;
      t = im[i];
      im[i] = im[j], im[j] = t;
    }
  }
  for (size_t h = 1; h < m; h <<= 1) {
    const double *wr = tr + h - 1, *wi = ti + h - 1;
    for (size_t s = 0; s < m; s += 2 * h) {
      double *ar = re + s, *ai = im + s, *br = re + s + h, *bi = im + s + h;
      for (size_t k = 0; k < h; k++) {
        double vr = br[k] * wr[k] - bi[k] * wi[k], vi = br[k] * wi[k] + bi[k] * wr[k];
        br[k] = ar[k] - vr, bi[k] = ai[k] - vi;
        ar[k] += vr, ai[k] += vi;
      }
    }
  }
}

typedef struct fft_job {
  const float *x;
  float *y;
  size_t n, m;                 /* line length N; transform length */
  double scale;
  const double *tr, *ti;       /* [m - 1] twiddles, the op's direction */
  const double *itr, *iti;     /* [m - 1] the other direction (Bluestein) */
  const double *cr, *ci;       /* [n] chirp (Bluestein) */
  const double *kr, *ki;       /* [m] spectrum of the conjugate chirp (Bluestein) */
  double *work;                /* 2m doubles per chunk */
} fft_job;

static void fft_task(void *arg, size_t lo, size_t hi, int chunk) {
  const fft_job *j = arg;
  size_t n = j->n, m = j->m;
  double *wr = j->work + (size_t)chunk * 2 * m, *wi = wr + m;
  for (size_t r = lo; r < hi; r++) {
    const float *xr = j->x + r * 2 * n, *xi = xr + n;
    float *yr = j->y + r * 2 * n, *yi = yr + n;
    if (m == n) {
      for (size_t k = 0; k < n; k++) wr[k] = xr[k], wi[k] = xi[k];
      fk_fft2(wr, wi, m, j->tr, j->ti);
      for (size_t k = 0; k < n; k++) yr[k] = (float)(wr[k] * j->scale), yi[k] = (float)(wi[k] * j->scale);
      continue;
    }
    /* X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]), a circular convolution */
    for (size_t k = 0; k < n; k++) {
      wr[k] = xr[k] * j->cr[k] - xi[k] * j->ci[k];
      wi[k] = xr[k] * j->ci[k] + xi[k] * j->cr[k];
    }
    memset(wr + n, 0, (m - n) * sizeof *wr);
    memset(wi + n, 0, (m - n) * sizeof *wi);
    fk_fft2(wr, wi, m, j->tr, j->ti);
    for (size_t k = 0; k < m; k++) {
      double a = wr[k] * j->kr[k] - wi[k] * j->ki[k], b = wr[k] * j->ki[k] + wi[k] * j->kr[k];
      wr[k] = a, wi[k] = b;
    }
    fk_fft2(wr, wi, m, j->itr, j->iti);
    double s = j->scale / (double)m;
    for (size_t k = 0; k < n; k++) {
      yr[k] = (float)((wr[k] * j->cr[k] - wi[k] * j->ci[k]) * s);
      yi[k] = (float)((wr[k] * j->ci[k] + wi[k] * j->cr[k]) * s);
    }
  }
}

FK_APPLIES(Fft) {
  if (n_in != 1) return false;
  const rlx_shape *x = &in[0].shape;
  if (!fk_static_f32(x) || !fk_static_f32(&n->shape) || !fk_same_dims(x, &n->shape) || x->rank == 0) return false;
  int64_t last = x->dims[x->rank - 1];
  return last >= 2 && last % 2 == 0 && last <= ((int64_t)1 << 26);
}

FK_KERNEL(Fft) {
  (void)n_in;
  const rlx_shape *x = &in[0].shape;
  const rlx_attrs_Fft *a = &n->attrs.Fft;
  size_t len = (size_t)x->dims[x->rank - 1] / 2, lines = fk_numel(x) / (2 * len), m = len;
  if (lines == 0) return RLX_OK;
  if (!fk_pow2(len)) {
    m = 1;
    while (m < 2 * len - 1) m <<= 1;
  }
  int sign = a->inverse ? +1 : -1;
  double scale = a->norm == RLX_FFT_NORM_ORTHO                  ? 1.0 / sqrt((double)len)
                 : a->norm == RLX_FFT_NORM_FORWARD && a->inverse ? 1.0 / (double)len
                                                                 : 1.0;
  bool blue = m != len;
  int chunks = fk_chunks(ctx, lines, 1 + 65536 / (m * 8));
  /* scratch: twiddles (2 directions), chirp, kernel spectrum, per-chunk work */
  size_t tw = fk_align64(m * sizeof(double)), nb = fk_align64(len * sizeof(double));
  size_t bytes = 4 * tw + 2 * nb + 2 * tw + (size_t)chunks * 2 * tw;
  char *buf = fk_scratch(ctx, bytes);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "Fft: out of memory for a transform of length %zu", len);
  double *tr = (double *)buf, *ti = (double *)(buf + tw), *itr = (double *)(buf + 2 * tw);
  double *iti = (double *)(buf + 3 * tw), *cr = (double *)(buf + 4 * tw), *ci = (double *)(buf + 4 * tw + nb);
  double *kr = (double *)(buf + 4 * tw + 2 * nb), *ki = (double *)(buf + 5 * tw + 2 * nb);
  double *work = (double *)(buf + 6 * tw + 2 * nb);
  fk_twiddles(m, sign, tr, ti);
  if (blue) {
    fk_twiddles(m, -sign, itr, iti);
    for (size_t k = 0; k < len; k++) fk_root((k * k) % (2 * len), 2 * len, sign, &cr[k], &ci[k]); /* e^(sign pi i k^2/n) */
    /* spectrum of conj(chirp[|j|]), j in (-n, n) stored circularly */
    memset(kr, 0, m * sizeof *kr);
    memset(ki, 0, m * sizeof *ki);
    kr[0] = cr[0], ki[0] = -ci[0];
    for (size_t k = 1; k < len; k++) kr[k] = kr[m - k] = cr[k], ki[k] = ki[m - k] = -ci[k];
    fk_fft2(kr, ki, m, tr, ti);
  }
  fft_job j = {in[0].data, out->data, len, m, scale, tr, ti, itr, iti, cr, ci, kr, ki, work};
  fk_parallel_for(ctx, lines, 1 + 65536 / (m * 8), fft_task, &j);
  fk_scratch_release(ctx, buf);
  return RLX_OK;
}
