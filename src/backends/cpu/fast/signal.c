/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast CPU kernel: Fft on f32 real-block tensors. The real-block layout already stores a line's
 * real and imaginary parts as two contiguous runs, so each line is transformed in split form
 * (re[], im[]) rather than as the reference's (ref/signal.c) array of double complex read element
 * by element: iterative radix-2 with per-stage contiguous twiddles (the inner loop vectorises)
 * when N is a power of two; a mixed-radix Stockham transform (radices 4, 2, 3 and 5 written out;
 * 7, 11, 13 by a generic small DFT) when N's prime factors are all <= 13; Bluestein's chirp-z
 * convolution of power-of-two length M >= 2N - 1 otherwise; lines are split over the worker
 * pool. The arithmetic stays in double, as in the
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

/* ---- mixed radix (Stockham autosort, decimation in frequency) ----
 * A stage of radix p on the current length nl = p * m with stride s reads x[q + s (j + r m)]
 * (r < p), forms b_t = sum_r x_r w_p^(r t) and writes y[q + s (p j + t)] = b_t w_nl^(j t), for
 * j < m, q < s; the next stage has length m and stride s p. After the last stage the result is
 * in natural order. */

#define FK_MR_MAX_STAGES 64
#define FK_MR_MAX_RADIX 13

typedef struct fk_mr_plan {
  int stages;
  int radix[FK_MR_MAX_STAGES];
  size_t tw_off[FK_MR_MAX_STAGES]; /* offset of the stage's [m][p - 1] twiddles */
} fk_mr_plan;

/* Factors n into 4s, 2s, then 3, 5, 7, 11, 13; false when another prime divides n. */
static bool fk_mr_factor(size_t n, fk_mr_plan *pl) {
  static const int primes[] = {3, 5, 7, 11, 13};
  pl->stages = 0;
  while (n % 4 == 0 && pl->stages < FK_MR_MAX_STAGES) pl->radix[pl->stages++] = 4, n /= 4;
  while (n % 2 == 0 && pl->stages < FK_MR_MAX_STAGES) pl->radix[pl->stages++] = 2, n /= 2;
  for (int i = 0; i < 5; i++)
    while (n % (size_t)primes[i] == 0 && pl->stages < FK_MR_MAX_STAGES)
      pl->radix[pl->stages++] = primes[i], n /= (size_t)primes[i];
  return n == 1;
}

/* Twiddles w_nl^(j t) of every stage (at most 2n values), direction `sign`; returns the count. */
static size_t fk_mr_twiddles(size_t n, int sign, fk_mr_plan *pl, double *tr, double *ti) {
  size_t off = 0, nl = n;
  for (int st = 0; st < pl->stages; st++) {
    size_t p = (size_t)pl->radix[st], m = nl / p;
    pl->tw_off[st] = off;
    if (tr)
      for (size_t j = 0; j < m; j++)
        for (size_t t = 1; t < p; t++)
          fk_root(j * t, nl, sign, &tr[off + j * (p - 1) + t - 1], &ti[off + j * (p - 1) + t - 1]);
    off += m * (p - 1);
    nl = m;
  }
  return off;
}

/* Runs the plan on (xr, xi)[0..n), using (yr, yi) as the other buffer; returns the buffer pair
 * holding the result through *rr / *ri. */
static void fk_mr_run(const fk_mr_plan *pl, size_t n, int sign, double *xr, double *xi, double *yr, double *yi,
                      const double *tr, const double *ti, double **rr, double **ri) {
  size_t nl = n, s = 1;
  double wpr[FK_MR_MAX_RADIX], wpi[FK_MR_MAX_RADIX];
  for (int st = 0; st < pl->stages; st++) {
    size_t p = (size_t)pl->radix[st], m = nl / p;
    const double *wr = tr + pl->tw_off[st], *wi = ti + pl->tw_off[st];
    if (p == 2) {
      for (size_t j = 0; j < m; j++) {
        double w1r = wr[j], w1i = wi[j];
        for (size_t q = 0; q < s; q++) {
          size_t i0 = q + s * j, i1 = i0 + s * m, o = q + s * 2 * j;
          double ar = xr[i0], ai = xi[i0], br = xr[i1], bi = xi[i1];
          double dr = ar - br, di = ai - bi;
          yr[o] = ar + br, yi[o] = ai + bi;
          yr[o + s] = dr * w1r - di * w1i, yi[o + s] = dr * w1i + di * w1r;
        }
      }
    } else if (p == 4) {
      double sg = (double)sign; /* w_4 = sign * i */
      for (size_t j = 0; j < m; j++) {
        const double *jr = wr + 3 * j, *ji = wi + 3 * j;
        for (size_t q = 0; q < s; q++) {
          size_t i0 = q + s * j, o = q + s * 4 * j;
          double a0r = xr[i0], a0i = xi[i0], a1r = xr[i0 + s * m], a1i = xi[i0 + s * m];
          double a2r = xr[i0 + 2 * s * m], a2i = xi[i0 + 2 * s * m], a3r = xr[i0 + 3 * s * m], a3i = xi[i0 + 3 * s * m];
          double s02r = a0r + a2r, s02i = a0i + a2i, d02r = a0r - a2r, d02i = a0i - a2i;
          double s13r = a1r + a3r, s13i = a1i + a3i, d13r = a1r - a3r, d13i = a1i - a3i;
          /* w_4 * d13 = sign * i * d13 = (-sign d13i, sign d13r) */
          double ur = -sg * d13i, ui = sg * d13r;
          double b1r = d02r + ur, b1i = d02i + ui, b2r = s02r - s13r, b2i = s02i - s13i, b3r = d02r - ur,
                 b3i = d02i - ui;
          yr[o] = s02r + s13r, yi[o] = s02i + s13i;
          yr[o + s] = b1r * jr[0] - b1i * ji[0], yi[o + s] = b1r * ji[0] + b1i * jr[0];
          yr[o + 2 * s] = b2r * jr[1] - b2i * ji[1], yi[o + 2 * s] = b2r * ji[1] + b2i * jr[1];
          yr[o + 3 * s] = b3r * jr[2] - b3i * ji[2], yi[o + 3 * s] = b3r * ji[2] + b3i * jr[2];
        }
      }
    } else if (p == 3) {
      const double c = -0.5, sn = (double)sign * 0.86602540378443864676372317075294; /* sin(2 pi / 3) */
      for (size_t j = 0; j < m; j++) {
        const double *jr = wr + 2 * j, *ji = wi + 2 * j;
        for (size_t q = 0; q < s; q++) {
          size_t i0 = q + s * j, o = q + s * 3 * j;
          double a0r = xr[i0], a0i = xi[i0], a1r = xr[i0 + s * m], a1i = xi[i0 + s * m];
          double a2r = xr[i0 + 2 * s * m], a2i = xi[i0 + 2 * s * m];
          double sr = a1r + a2r, si = a1i + a2i, tr0 = a0r + c * sr, ti0 = a0i + c * si;
          double ur = -sn * (a1i - a2i), ui = sn * (a1r - a2r); /* i sign sin * (a1 - a2) */
          double b1r = tr0 + ur, b1i = ti0 + ui, b2r = tr0 - ur, b2i = ti0 - ui;
          yr[o] = a0r + sr, yi[o] = a0i + si;
          yr[o + s] = b1r * jr[0] - b1i * ji[0], yi[o + s] = b1r * ji[0] + b1i * jr[0];
          yr[o + 2 * s] = b2r * jr[1] - b2i * ji[1], yi[o + 2 * s] = b2r * ji[1] + b2i * jr[1];
        }
      }
    } else if (p == 5) {
      const double c1 = 0.30901699437494742410229341718282, c2 = -0.80901699437494742410229341718282;
      const double s1 = (double)sign * 0.95105651629515357211643933337938;
      const double s2 = (double)sign * 0.58778525229247312916870595463907;
      for (size_t j = 0; j < m; j++) {
        const double *jr = wr + 4 * j, *ji = wi + 4 * j;
        for (size_t q = 0; q < s; q++) {
          size_t i0 = q + s * j, o = q + s * 5 * j, sm = s * m;
          double a0r = xr[i0], a0i = xi[i0];
          double s1r = xr[i0 + sm] + xr[i0 + 4 * sm], s1i = xi[i0 + sm] + xi[i0 + 4 * sm];
          double d1r = xr[i0 + sm] - xr[i0 + 4 * sm], d1i = xi[i0 + sm] - xi[i0 + 4 * sm];
          double s2r = xr[i0 + 2 * sm] + xr[i0 + 3 * sm], s2i = xi[i0 + 2 * sm] + xi[i0 + 3 * sm];
          double d2r = xr[i0 + 2 * sm] - xr[i0 + 3 * sm], d2i = xi[i0 + 2 * sm] - xi[i0 + 3 * sm];
          /* b1,4 = a0 + c1 S1 + c2 S2 +- i (s1 D1 + s2 D2); b2,3 = a0 + c2 S1 + c1 S2 +- i (s2 D1 - s1 D2) */
          double p1r = a0r + c1 * s1r + c2 * s2r, p1i = a0i + c1 * s1i + c2 * s2i;
          double p2r = a0r + c2 * s1r + c1 * s2r, p2i = a0i + c2 * s1i + c1 * s2i;
          double q1r = -(s1 * d1i + s2 * d2i), q1i = s1 * d1r + s2 * d2r;
          double q2r = -(s2 * d1i - s1 * d2i), q2i = s2 * d1r - s1 * d2r;
          double br[4] = {p1r + q1r, p2r + q2r, p2r - q2r, p1r - q1r};
          double bi[4] = {p1i + q1i, p2i + q2i, p2i - q2i, p1i - q1i};
          yr[o] = a0r + s1r + s2r, yi[o] = a0i + s1i + s2i;
          for (int t = 0; t < 4; t++) {
            yr[o + s * (size_t)(t + 1)] = br[t] * jr[t] - bi[t] * ji[t];
            yi[o + s * (size_t)(t + 1)] = br[t] * ji[t] + bi[t] * jr[t];
          }
        }
      }
    } else {
      for (size_t k = 0; k < p; k++) fk_root(k, p, sign, &wpr[k], &wpi[k]); /* p <= 13 roots per line */
      double ar[FK_MR_MAX_RADIX], ai[FK_MR_MAX_RADIX];
      for (size_t j = 0; j < m; j++) {
        const double *jr = wr + (p - 1) * j, *ji = wi + (p - 1) * j;
        for (size_t q = 0; q < s; q++) {
          for (size_t r = 0; r < p; r++) ar[r] = xr[q + s * (j + r * m)], ai[r] = xi[q + s * (j + r * m)];
          size_t o = q + s * p * j;
          for (size_t t = 0; t < p; t++) {
            double br = ar[0], bi = ai[0];
            for (size_t r = 1, e = t; r < p; r++, e = e + t >= p ? e + t - p : e + t) {
              br += ar[r] * wpr[e] - ai[r] * wpi[e];
              bi += ar[r] * wpi[e] + ai[r] * wpr[e];
            }
            if (t == 0) {
              yr[o] = br, yi[o] = bi;
            } else {
              yr[o + s * t] = br * jr[t - 1] - bi * ji[t - 1];
              yi[o + s * t] = br * ji[t - 1] + bi * jr[t - 1];
            }
          }
        }
      }
    }
    double *t0 = xr, *t1 = xi;
    xr = yr, xi = yi, yr = t0, yi = t1;
    s *= p;
    nl = m;
  }
  *rr = xr;
  *ri = xi;
}

typedef struct fft_job {
  const float *x;
  float *y;
  size_t n, m; /* line length N; transform length */
  double scale;
  const double *tr, *ti;   /* [m - 1] twiddles, the op's direction */
  const double *itr, *iti; /* [m - 1] the other direction (Bluestein) */
  const double *cr, *ci;   /* [n] chirp (Bluestein) */
  const double *kr, *ki;   /* [m] spectrum of the conjugate chirp (Bluestein) */
  double *work;            /* 2m doubles per chunk (4n in the mixed-radix case) */
  const fk_mr_plan *mr;    /* mixed-radix plan (m == n, n not a power of two) or NULL */
  int sign;
} fft_job;

static void fft_task(void *arg, size_t lo, size_t hi, int chunk) {
  const fft_job *j = arg;
  size_t n = j->n, m = j->m;
  double *wr = j->work + (size_t)chunk * (j->mr ? 4 * n : 2 * m), *wi = wr + m;
  for (size_t r = lo; r < hi; r++) {
    const float *xr = j->x + r * 2 * n, *xi = xr + n;
    float *yr = j->y + r * 2 * n, *yi = yr + n;
    if (j->mr) {
      double *vr = wr, *vi = wr + n, *pr = wr + 2 * n, *pi = wr + 3 * n, *rr, *ri;
      for (size_t k = 0; k < n; k++) vr[k] = xr[k], vi[k] = xi[k];
      fk_mr_run(j->mr, n, j->sign, vr, vi, pr, pi, j->tr, j->ti, &rr, &ri);
      for (size_t k = 0; k < n; k++) yr[k] = (float)(rr[k] * j->scale), yi[k] = (float)(ri[k] * j->scale);
      continue;
    }
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
  int sign = a->inverse ? +1 : -1;
  double scale = a->norm == RLX_FFT_NORM_ORTHO                   ? 1.0 / sqrt((double)len)
                 : a->norm == RLX_FFT_NORM_FORWARD && a->inverse ? 1.0 / (double)len
                                                                 : 1.0;
  fk_mr_plan plan;
  if (!fk_pow2(len) && fk_mr_factor(len, &plan)) {
    size_t ntw = fk_mr_twiddles(len, sign, &plan, NULL, NULL);
    int chunks = fk_chunks(ctx, lines, 1 + 65536 / (len * 8));
    size_t tw = fk_align64((ntw ? ntw : 1) * sizeof(double)), wk = fk_align64(4 * len * sizeof(double));
    char *buf = fk_scratch(ctx, 2 * tw + (size_t)chunks * wk);
    if (!buf) return rlx_errorf(RLX_ERR_OOM, "Fft: out of memory for a transform of length %zu", len);
    double *tr = (double *)buf, *ti = (double *)(buf + tw);
    fk_mr_twiddles(len, sign, &plan, tr, ti);
    fft_job j = {.x = in[0].data,
                 .y = out->data,
                 .n = len,
                 .m = len,
                 .scale = scale,
                 .tr = tr,
                 .ti = ti,
                 .work = (double *)(buf + 2 * tw),
                 .mr = &plan,
                 .sign = sign};
    fk_parallel_for(ctx, lines, 1 + 65536 / (len * 8), fft_task, &j);
    fk_scratch_release(ctx, buf);
    return RLX_OK;
  }
  if (!fk_pow2(len)) {
    m = 1;
    while (m < 2 * len - 1) m <<= 1;
  }
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
    for (size_t k = 0; k < len; k++)
      fk_root((k * k) % (2 * len), 2 * len, sign, &cr[k], &ci[k]); /* e^(sign pi i k^2/n) */
    /* spectrum of conj(chirp[|j|]), j in (-n, n) stored circularly */
    memset(kr, 0, m * sizeof *kr);
    memset(ki, 0, m * sizeof *ki);
    kr[0] = cr[0], ki[0] = -ci[0];
    for (size_t k = 1; k < len; k++) kr[k] = kr[m - k] = cr[k], ki[k] = ki[m - k] = -ci[k];
    fk_fft2(kr, ki, m, tr, ti);
  }
  fft_job j = {in[0].data, out->data, len, m, scale, tr, ti, itr, iti, cr, ci, kr, ki, work, NULL, sign};
  fk_parallel_for(ctx, lines, 1 + 65536 / (m * 8), fft_task, &j);
  fk_scratch_release(ctx, buf);
  return RLX_OK;
}
