/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: the signal ops besides Fft (spec ir-special §4, ir-core §10.10).
 * Real tensors hold complex lines in real-block layout [re_0..re_{N-1}, im_0..im_{N-1}].
 *
 * ComplexNormSq z -> re^2 + im^2 (c64 -> f32, c128 -> f64); ComplexNormSqBackward [z, g] ->
 *   g z (Wirtinger, the cotangent is dL/dz-bar); Conjugate z -> (re, -im).
 * LogMel [spectrum [..., 2 n_fft], filters [M, n_fft/2 + 1]] -> [..., M], per frame:
 *   P_k = re_k^2 + im_k^2, E_m = sum_k F[m,k] P_k, L_m = log10(max(E_m, 1e-10)),
 *   out = (max(L_m, max_m L_m - 8) + 4) / 4 (Whisper).
 * LogMelBackward [spectrum, filters, dy] -> spectrum's shape: dL_m = dy_m / 4 except where L_m
 *   is clamped to the floor (|max(L_m, floor) - floor| <= 1e-6) or E_m <= 1e-10 (0 there);
 *   dP_k = sum_m dL_m F[m,k] / (E_m ln 10); d re_k = 2 re_k dP_k, d im_k = 2 im_k dP_k; bins past
 *   n_fft/2 get 0. The frame maximum is treated as a constant.
 * WelchPeaks{k, n_segments} [batch n_segments, 2 n_fft] -> [batch, 2k]: PSD of a batch item =
 *   (1/n_segments) sum over its (consecutive) rows of w_bin (re^2 + im^2), w = 1 at bins 0 and
 *   n_fft/2, else 2; the k strongest bins (ties: lower bin first) as (bin, power) pairs; slots
 *   past n_bins are 0 (the spec leaves them unwritten; zeros keep outputs deterministic).
 * FftButterflyStage{stage, n_fft} [state [B, 2 n_fft] (re, im) pairs, gate, rev, tw_re, tw_im
 *   [n_fft/2]]: one radix-2 stage of stride 2^stage (see ir-special §4), no bit reversal.
 * FftQ{inverse, norm, scale}: a radix-2 decimation-in-time FFT (N a power of two) that rounds
 *   after every stage on integer tensors (i16 / i32 real-block: round half to even, then wrap in
 *   two's complement, or clamp to the dtype's range with Saturating); EveryOther halves the
 *   values after every second stage (stages 1, 3, ...), PerStage after every stage; the norm's
 *   factor is applied after the last stage (rounded the same way). Twiddles are
 *   exp(-+2 pi i k / len), exact at multiples of a quarter turn. Float and complex tensors run
 *   the same stages in double without rounding.
 * PartitionedConv{block} [x [..., L], ir [M]] -> [..., L + M - 1]: the full linear convolution
 *   y[t] = sum_m x[t - m] ir[m], computed directly in double (the block size only shapes the
 *   FFT decomposition). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/seq_util.h"

static rlx_dtype real_of(rlx_dtype t) { return t == RLX_C128 ? RLX_F64 : RLX_F32; }

static rlx_status need_complex(const rlx_node *n, const rlx_tensor *in, uint32_t i) {
  rlx_dtype t = ru_dt(&in[i]);
  if (t != RLX_C64 && t != RLX_C128)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u has dtype %s; expected c64 or c128", i, rlx_dtype_name(t));
  return RLX_OK;
}

RLX_CPU_KERNEL(ComplexNormSq) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_complex(n, in, 0));
  if (ru_dt(out) != real_of(ru_dt(&in[0])))
    return ru_error(RLX_ERR_INVALID_ARG, n, "the output has dtype %s; expected %s", rlx_dtype_name(ru_dt(out)),
                    rlx_dtype_name(real_of(ru_dt(&in[0]))));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  size_t cnt = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < cnt; i++) {
    double re, im;
    rlx_elem_get_c(in[0].data, ru_dt(&in[0]), i, &re, &im);
    ru_store(out->data, ru_dt(out), i, re * re + im * im);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(ComplexNormSqBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(need_complex(n, in, 0));
  rlx_dtype t = ru_dt(&in[0]);
  RLX_TRY(ru_need_dtype(n, in, 1, real_of(t)));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  size_t cnt = rlx_tensor_numel(&in[0]);
  if (rlx_tensor_numel(&in[1]) != cnt)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (g) has shape %s; expected z's shape", ru_fmt(&in[1].shape));
  for (size_t i = 0; i < cnt; i++) {
    double re, im, g = rlx_elem_get(in[1].data, ru_dt(&in[1]), i);
    rlx_elem_get_c(in[0].data, t, i, &re, &im);
    rlx_elem_set_c(out->data, t, i, g * re, g * im);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Conjugate) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(need_complex(n, in, 0));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  size_t cnt = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < cnt; i++) {
    double re, im;
    rlx_elem_get_c(in[0].data, ru_dt(&in[0]), i, &re, &im);
    rlx_elem_set_c(out->data, ru_dt(out), i, re, -im);
  }
  return RLX_OK;
}

/* ---- LogMel ---- */

typedef struct mel_dims {
  size_t frames, nfft, bins, mels;
} mel_dims;

static rlx_status mel_check(const rlx_node *n, const rlx_tensor *in, mel_dims *d) {
  const rlx_shape *x = &in[0].shape, *f = &in[1].shape;
  if (rlx_dtype_class_of(ru_dt(&in[0])) != RLX_CLASS_FLOAT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (spectrum) has dtype %s; expected a float",
                    rlx_dtype_name(ru_dt(&in[0])));
  RLX_TRY(ru_need_dtype(n, in, 1, ru_dt(&in[0])));
  if (x->rank < 1 || x->dims[x->rank - 1] < 2 || x->dims[x->rank - 1] % 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (spectrum) has shape %s; expected [..., 2 n_fft]", ru_fmt(x));
  d->nfft = (size_t)x->dims[x->rank - 1] / 2;
  d->bins = d->nfft / 2 + 1;
  if (f->rank != 2 || (size_t)f->dims[1] != d->bins)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (filters) has shape %s; expected [n_mels, %zu]", ru_fmt(f),
                    d->bins);
  d->mels = (size_t)f->dims[0];
  d->frames = rlx_tensor_numel(&in[0]) / (2 * d->nfft);
  return RLX_OK;
}

/* L_m of one frame into L[0..mels) and E_m into E; returns the floor max_m L_m - 8. */
static double mel_frame(const mel_dims *d, const double *x, const double *F, double *E, double *L) {
  double mx = -INFINITY;
  for (size_t m = 0; m < d->mels; m++) {
    double e = 0.0;
    for (size_t k = 0; k < d->bins; k++) {
      double re = x[k], im = x[d->nfft + k];
      e += F[m * d->bins + k] * (re * re + im * im);
    }
    E[m] = e;
    L[m] = log10(e > 1e-10 ? e : 1e-10);
    if (L[m] > mx) mx = L[m];
  }
  return mx - 8.0;
}

RLX_CPU_KERNEL(LogMel) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  mel_dims d;
  RLX_TRY(mel_check(n, in, &d));
  double *x = sq_load(&in[0]), *F = sq_load(&in[1]), *E = malloc((2 * d.mels + 1) * sizeof *E);
  rlx_status st = RLX_OK;
  if (!x || !F || !E) st = ru_error(RLX_ERR_OOM, n, "out of memory");
  for (size_t fr = 0; !st && fr < d.frames; fr++) {
    double *L = E + d.mels, floor_ = mel_frame(&d, x + fr * 2 * d.nfft, F, E, L);
    for (size_t m = 0; m < d.mels; m++)
      ru_store(out->data, ru_dt(out), fr * d.mels + m, ((L[m] > floor_ ? L[m] : floor_) + 4.0) / 4.0);
  }
  free(x);
  free(F);
  free(E);
  return st;
}

RLX_CPU_KERNEL(LogMelBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  mel_dims d;
  RLX_TRY(mel_check(n, in, &d));
  RLX_TRY(ru_need_dtype(n, in, 2, ru_dt(&in[0])));
  RLX_TRY(sq_need_count(n, in, 2, "dy", d.frames * d.mels));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  double *x = sq_load(&in[0]), *F = sq_load(&in[1]), *dy = sq_load(&in[2]);
  double *E = malloc((3 * d.mels + d.bins + 1) * sizeof *E);
  rlx_status st = RLX_OK;
  if (!x || !F || !dy || !E) st = ru_error(RLX_ERR_OOM, n, "out of memory");
  for (size_t fr = 0; !st && fr < d.frames; fr++) {
    double *L = E + d.mels, *dL = L + d.mels, *dP = dL + d.mels;
    const double *xf = x + fr * 2 * d.nfft;
    double floor_ = mel_frame(&d, xf, F, E, L);
    for (size_t m = 0; m < d.mels; m++) {
      double cl = L[m] > floor_ ? L[m] : floor_;
      bool dead = fabs(cl - floor_) <= 1e-6 || E[m] <= 1e-10;
      dL[m] = dead ? 0.0 : dy[fr * d.mels + m] / 4.0 / (E[m] * log(10.0));
    }
    for (size_t k = 0; k < d.bins; k++) {
      double acc = 0.0;
      for (size_t m = 0; m < d.mels; m++) acc += dL[m] * F[m * d.bins + k];
      dP[k] = acc;
    }
    size_t base = fr * 2 * d.nfft;
    for (size_t k = 0; k < d.nfft; k++) {
      double pk = k < d.bins ? dP[k] : 0.0;
      ru_store(out->data, ru_dt(out), base + k, 2.0 * xf[k] * pk);
      ru_store(out->data, ru_dt(out), base + d.nfft + k, 2.0 * xf[d.nfft + k] * pk);
    }
  }
  free(x);
  free(F);
  free(dy);
  free(E);
  return st;
}

/* ---- WelchPeaks ---- */

RLX_CPU_KERNEL(WelchPeaks) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_WelchPeaks *a = &n->attrs.WelchPeaks;
  const rlx_shape *x = &in[0].shape;
  if (rlx_dtype_class_of(ru_dt(&in[0])) != RLX_CLASS_FLOAT || x->rank != 2 || x->dims[1] < 2 || x->dims[1] % 2 ||
      a->k < 1 || a->n_segments < 1 || x->dims[0] % a->n_segments)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (spectrum) %s %s does not fit k = %lld, n_segments = %lld",
                    rlx_dtype_name(ru_dt(&in[0])), ru_fmt(x), (long long)a->k, (long long)a->n_segments);
  size_t nseg = (size_t)a->n_segments, batch = (size_t)x->dims[0] / nseg, nfft = (size_t)x->dims[1] / 2;
  size_t bins = nfft / 2 + 1, k = (size_t)a->k;
  int64_t od[2] = {(int64_t)batch, (int64_t)(2 * k)};
  RLX_TRY(ru_need_out_dims(n, out, 2, od));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  double *xv = sq_load(&in[0]), *psd = malloc(bins * sizeof *psd);
  bool *used = malloc(bins * sizeof *used);
  rlx_status st = (xv && psd && used) ? RLX_OK : ru_error(RLX_ERR_OOM, n, "out of memory");
  for (size_t b = 0; !st && b < batch; b++) {
    for (size_t f = 0; f < bins; f++) {
      double w = (f == 0 || f == nfft / 2) ? 1.0 : 2.0, acc = 0.0;
      for (size_t s = 0; s < nseg; s++) {
        const double *row = xv + (b * nseg + s) * 2 * nfft;
        acc += w * (row[f] * row[f] + row[nfft + f] * row[nfft + f]);
      }
      psd[f] = acc / (double)nseg;
      used[f] = false;
    }
    for (size_t j = 0; j < k; j++) {
      size_t best = bins;
      for (size_t f = 0; f < bins; f++)
        if (!used[f] && (best == bins || psd[f] > psd[best])) best = f;
      double bin = 0.0, pw = 0.0;
      if (best < bins) {
        used[best] = true;
        bin = (double)best;
        pw = psd[best];
      }
      ru_store(out->data, ru_dt(out), b * 2 * k + 2 * j, bin);
      ru_store(out->data, ru_dt(out), b * 2 * k + 2 * j + 1, pw);
    }
  }
  free(xv);
  free(psd);
  free(used);
  return st;
}

/* ---- FftButterflyStage ---- */

RLX_CPU_KERNEL(FftButterflyStage) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  const rlx_attrs_FftButterflyStage *a = &n->attrs.FftButterflyStage;
  size_t nfft = (size_t)a->n_fft, half = nfft / 2;
  if (a->n_fft < 2 || (nfft & (nfft - 1)) || a->stage < 0 || (size_t)1 << a->stage >= nfft)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes stage %lld / n_fft %lld are invalid", (long long)a->stage,
                    (long long)a->n_fft);
  if (rlx_dtype_class_of(ru_dt(&in[0])) != RLX_CLASS_FLOAT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (state) must be a float tensor");
  size_t rows = in[0].shape.rank ? (size_t)in[0].shape.dims[0] : 0;
  RLX_TRY(sq_need_count(n, in, 0, "state", rows * 2 * nfft));
  static const char *const roles[] = {"state", "gate", "rev", "tw_re", "tw_im"};
  for (uint32_t i = 1; i < 5; i++) RLX_TRY(sq_need_count(n, in, i, roles[i], half));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  double *v[5] = {0};
  rlx_status st = RLX_OK;
  for (uint32_t i = 0; i < 5 && !st; i++)
    if (!(v[i] = sq_load(&in[i]))) st = ru_error(RLX_ERR_OOM, n, "out of memory");
  size_t stride = (size_t)1 << a->stage, groups = nfft / (2 * stride);
  for (size_t r = 0; !st && r < rows; r++) {
    double *s = v[0] + r * 2 * nfft; /* updated in place: each pair is read once, before writing */
    for (size_t g = 0; g < groups; g++)
      for (size_t k = 0; k < stride; k++) {
        size_t ia = g * 2 * stride + k, ib = ia + stride, bf = g * stride + k;
        double ar = s[2 * ia], ai = s[2 * ia + 1], br = s[2 * ib], bi = s[2 * ib + 1];
        if (v[1][bf] == 0.0) continue; /* gate off: copy (a, b) */
        double wr = v[3][bf], wi = v[4][bf];
        double tr = br * wr - bi * wi, ti = br * wi + bi * wr;
        double topr = ar + tr, topi = ai + ti, botr = ar - tr, boti = ai - ti;
        if (v[2][bf] >= 0.5) {
          double t0 = topr, t1 = topi;
          topr = botr, topi = boti, botr = t0, boti = t1;
        }
        s[2 * ia] = topr, s[2 * ia + 1] = topi, s[2 * ib] = botr, s[2 * ib + 1] = boti;
      }
  }
  if (!st) sq_store(out, v[0], rows * 2 * nfft);
  for (int i = 0; i < 5; i++) free(v[i]);
  return st;
}

/* ---- FftQ ---- */

/* exp(sign 2 pi i k / len), exact at quarter turns. */
static void q_root(size_t k, size_t len, int sign, double *re, double *im) {
  k %= len;
  if ((4 * k) % len == 0) {
    static const double c[4] = {1, 0, -1, 0}, s[4] = {0, 1, 0, -1};
    size_t q = 4 * k / len;
    *re = c[q];
    *im = sign * s[q];
    return;
  }
  double ang = 6.283185307179586476925286766559 * (double)k / (double)len;
  *re = cos(ang);
  *im = sign * sin(ang);
}

/* Rounds v to the integer dtype (half to even), then wraps or saturates. */
static double q_fix(double v, rlx_dtype t, bool saturate) {
  int bits = t == RLX_I16 ? 16 : 32;
  double lo = -ldexp(1.0, bits - 1), hi = ldexp(1.0, bits - 1) - 1, span = ldexp(1.0, bits);
  v = nearbyint(v);
  if (!isfinite(v)) return saturate ? (v > 0 ? hi : lo) : 0.0;
  if (saturate) return v < lo ? lo : v > hi ? hi : v;
  v = fmod(v - lo, span);
  if (v < 0) v += span;
  return v + lo;
}

RLX_CPU_KERNEL(FftQ) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_FftQ *a = &n->attrs.FftQ;
  rlx_dtype t = ru_dt(&in[0]);
  bool cplx = t == RLX_C64 || t == RLX_C128, integer = t == RLX_I16 || t == RLX_I32;
  if (!cplx && !integer && t != RLX_F32 && t != RLX_F64)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has dtype %s; FftQ takes i16/i32/f32/f64 or c64/c128",
                    rlx_dtype_name(t));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t last = x->rank ? (size_t)x->dims[x->rank - 1] : 0, N = cplx ? last : last / 2;
  if (N < 1 || (N & (N - 1)) || (!cplx && last % 2))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 has shape %s; FftQ needs a power-of-two N", ru_fmt(x));
  size_t lines = rlx_tensor_numel(&in[0]) / last;
  double *re = malloc(N * sizeof *re), *im = malloc(N * sizeof *im);
  if (!re || !im) {
    free(re);
    free(im);
    return ru_error(RLX_ERR_OOM, n, "out of memory");
  }
  int sign = a->inverse ? 1 : -1;
  bool sat = a->scale == RLX_FFTQ_SCALE_SATURATING;
  double fin = a->norm == RLX_FFT_NORM_ORTHO                     ? 1.0 / sqrt((double)N)
               : (a->norm == RLX_FFT_NORM_FORWARD && a->inverse) ? 1.0 / (double)N
                                                                 : 1.0;
  for (size_t l = 0; l < lines; l++) {
    size_t base = l * last;
    for (size_t k = 0; k < N; k++) {
      if (cplx)
        rlx_elem_get_c(in[0].data, t, base + k, &re[k], &im[k]);
      else
        re[k] = rlx_elem_get(in[0].data, t, base + k), im[k] = rlx_elem_get(in[0].data, t, base + N + k);
    }
    for (size_t i = 1, j = 0; i < N; i++) { /* bit reversal */
      size_t bit = N >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j |= bit;
      if (i < j) {
        double tr = re[i], ti = im[i];
        re[i] = re[j], im[i] = im[j], re[j] = tr, im[j] = ti;
      }
    }
    int stage = 0;
    for (size_t len = 2; len <= N; len <<= 1, stage++) {
      bool halve = a->scale == RLX_FFTQ_SCALE_PER_STAGE || (a->scale == RLX_FFTQ_SCALE_EVERY_OTHER && stage % 2 == 1);
      for (size_t s0 = 0; s0 < N; s0 += len)
        for (size_t k = 0; k < len / 2; k++) {
          size_t ia = s0 + k, ib = ia + len / 2;
          double wr, wi;
          q_root(k, len, sign, &wr, &wi);
          double tr = re[ib] * wr - im[ib] * wi, ti = re[ib] * wi + im[ib] * wr;
          double v[4] = {re[ia] + tr, im[ia] + ti, re[ia] - tr, im[ia] - ti};
          for (int q = 0; q < 4; q++) {
            if (halve) v[q] *= 0.5;
            if (integer) v[q] = q_fix(v[q], t, sat);
          }
          re[ia] = v[0], im[ia] = v[1], re[ib] = v[2], im[ib] = v[3];
        }
    }
    for (size_t k = 0; k < N; k++) {
      double r = re[k] * fin, i2 = im[k] * fin;
      if (integer && fin != 1.0) r = q_fix(r, t, sat), i2 = q_fix(i2, t, sat);
      if (cplx)
        rlx_elem_set_c(out->data, t, base + k, r, i2);
      else
        ru_store(out->data, t, base + k, r), ru_store(out->data, t, base + N + k, i2);
    }
  }
  free(re);
  free(im);
  return RLX_OK;
}

/* ---- PartitionedConv ---- */

RLX_CPU_KERNEL(PartitionedConv) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  const rlx_shape *x = &in[0].shape;
  if (x->rank < 1 || x->dims[x->rank - 1] < 1 || in[1].shape.rank != 1 || in[1].shape.dims[0] < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands %s and %s: expected x [..., L >= 1] and ir [M >= 1]", ru_fmt(x),
                    ru_fmt(&in[1].shape));
  size_t L = (size_t)x->dims[x->rank - 1], M = (size_t)in[1].shape.dims[0], Y = L + M - 1;
  int64_t od[RLX_MAX_RANK];
  memcpy(od, x->dims, x->rank * sizeof *od);
  od[x->rank - 1] = (int64_t)Y;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, od));
  size_t lines = rlx_tensor_numel(&in[0]) / L;
  double *xv = sq_load(&in[0]), *h = sq_load(&in[1]);
  rlx_status st = (xv && h) ? RLX_OK : ru_error(RLX_ERR_OOM, n, "out of memory");
  for (size_t l = 0; !st && l < lines; l++)
    for (size_t t = 0; t < Y; t++) {
      double acc = 0.0;
      size_t m0 = t >= L ? t - L + 1 : 0, m1 = t < M ? t : M - 1;
      for (size_t m = m0; m <= m1; m++) acc += xv[l * L + t - m] * h[m];
      ru_store(out->data, ru_dt(out), l * Y + t, acc);
    }
  free(xv);
  free(h);
  return st;
}
