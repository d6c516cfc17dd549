/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX signal ops: DFT (opsets 17 and 20), STFT and MelWeightMatrix (opset 17).
 *
 * ONNX keeps a complex number in a trailing axis of extent 2 ([..., N, 2]; real signals have
 * [..., N, 1]); RLX's Fft transforms the last axis of a real-block tensor, [re_0..re_{N-1},
 * im_0..im_{N-1}]. A DFT along `axis` therefore moves that axis last and the (re, im) axis just
 * before it ([others..., 2, N], zero imaginary parts appended for real input), pads or cuts the
 * signal to dft_length, flattens the last two axes into the real-block axis, runs Fft and undoes
 * the moves. ONNX's inverse DFT divides by N: that is RLX's norm Forward (1/N on the inverse only).
 * STFT frames the signal with one Gather of a constant [frames, frame_length] index table,
 * multiplies by the window and runs the same DFT along the frame axis. MelWeightMatrix is computed
 * at import time from its scalar inputs. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "core/elem.h"

/* Largest transform length accepted (dft_length, frame_length): the real-block axis holds 2N. */
#define OI_MAX_DFT_LENGTH ((int64_t)1 << 28)

/* The DFT of x ([..., c], c = 1 real or 2 complex) along `axis` (< rank - 1). The signal is cut
 * or zero-padded to `len` samples, or, for the one-sided inverse (IRFFT), to len / 2 + 1 bins
 * that are extended by conjugate symmetry. Output [..., 2] (or [..., 1] for the IRFFT) with
 * `axis` holding len, or len / 2 + 1 bins for the one-sided forward transform (RFFT). */
static rlx_status dft_along(oi_node *c, rlx_id x, uint32_t axis, int64_t len, bool inverse, bool onesided,
                            rlx_id *out) {
  const rlx_shape xs = *oi_shape(c, x);
  uint32_t r = xs.rank;
  int64_t cdim = xs.dims[r - 1], n = xs.dims[axis];
  if (!rlx_dim_is_static(n)) return oi_unsupported(c, "a DFT along an axis of symbolic length");
  rlx_dtype t = (rlx_dtype)xs.dtype, ct = t == RLX_F64 ? RLX_F64 : RLX_F32;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input must be floating-point, not %s", rlx_dtype_name(t));
  RLX_TRY(oi_cast(c, x, ct, &x));

  /* [others..., c, n]: `others` keeps the remaining axes in order */
  int64_t perm[RLX_MAX_RANK], back[RLX_MAX_RANK];
  rlx_dim dims[RLX_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 0; i + 1 < r; i++)
    if (i != axis) {
      back[i] = k;
      dims[k] = xs.dims[i];
      perm[k++] = i;
    }
  perm[r - 2] = r - 1;
  perm[r - 1] = axis;
  back[r - 1] = r - 2;
  back[axis] = r - 1;
  RLX_TRY(oi_transpose(c, x, perm, &x));
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  if (cdim == 1) { /* append zero imaginary parts */
    pads[2 * (r - 2) + 1] = 1;
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 2 * r}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &x, 1, &pa, &x));
    pads[2 * (r - 2) + 1] = 0;
  }

  /* the samples (or one-sided bins) the transform reads: cut or zero-padded */
  bool irfft = inverse && onesided;
  int64_t use = irfft ? len / 2 + 1 : len;
  if (n > use) RLX_TRY(oi_narrow(c, x, r - 1, 0, use, &x));
  if (n < use) {
    pads[2 * (r - 1) + 1] = use - n;
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 2 * r}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &x, 1, &pa, &x));
  }
  if (irfft && len - use > 0) { /* X[k] = conj(X[len - k]) for k >= use */
    rlx_id tail, sign, parts[2] = {x, RLX_NO_ID};
    int64_t rev_axis = r - 1;
    RLX_TRY(oi_narrow(c, x, r - 1, 1, len - use, &tail));
    rlx_attrs_Reverse ra = {.axes = {.v = &rev_axis, .n = 1}};
    RLX_TRY(oi_emit(c, RLX_OP_Reverse, &tail, 1, &ra, &tail));
    float conj_sign[2] = {1.0f, -1.0f};
    rlx_dim sd[2] = {2, 1};
    RLX_TRY(oi_const(c, rlx_shape_make(RLX_F32, 2, sd), conj_sign, sizeof conj_sign, &sign));
    RLX_TRY(oi_cast(c, sign, ct, &sign));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, tail, sign, &parts[1]));
    RLX_TRY(oi_concat(c, parts, 2, r - 1, &x));
  }

  /* [others..., 2 * len] real-block -> Fft -> [others..., 2, len] */
  dims[r - 2] = 2 * len;
  RLX_TRY(oi_reshape_dims(c, x, r - 1, dims, &x));
  rlx_attrs_Fft fa = {.inverse = inverse, .norm = inverse ? RLX_FFT_NORM_FORWARD : RLX_FFT_NORM_BACKWARD};
  RLX_TRY(oi_emit(c, RLX_OP_Fft, &x, 1, &fa, &x));
  dims[r - 2] = 2;
  dims[r - 1] = len;
  RLX_TRY(oi_reshape_dims(c, x, r, dims, &x));
  if (onesided && !inverse) RLX_TRY(oi_narrow(c, x, r - 1, 0, len / 2 + 1, &x));
  if (irfft) RLX_TRY(oi_narrow(c, x, r - 2, 0, 1, &x)); /* the real signal */
  RLX_TRY(oi_transpose(c, x, back, &x));
  return oi_cast(c, x, t, out);
}

/* A scalar (or one-element) integer input known at import time. */
static rlx_status scalar_int(oi_node *c, uint32_t k, const char *what, int64_t *out) {
  int64_t *v;
  size_t n;
  RLX_TRY(oi_in_ints(c, k, what, &v, &n));
  if (n != 1) return oi_bad(c, "input %u (%s) must be a scalar, got %zu values", k, what, n);
  *out = v[0];
  return RLX_OK;
}

/* The input's trailing axis must be the complex axis: 1 (real) or 2 (complex). */
static rlx_status need_complex_axis(oi_node *c, const rlx_shape *s, const char *what, uint32_t min_rank) {
  if (s->rank < min_rank || s->dims[s->rank - 1] < 1 || s->dims[s->rank - 1] > 2)
    return oi_bad(c, "input %s has shape %s; it needs rank >= %u and a last axis of 1 (real) or 2 (complex)", what,
                  rlx_fmt_shape(s), min_rank);
  return RLX_OK;
}

static rlx_status map_dft(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  const rlx_shape xs = *oi_in_shape(c, 0);
  RLX_TRY(need_complex_axis(c, &xs, "0 (input)", 2));
  int64_t inverse, onesided, axis;
  RLX_TRY(oi_attr_i(c, "inverse", 0, &inverse));
  RLX_TRY(oi_attr_i(c, "onesided", 0, &onesided));
  if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
    return oi_bad(c, "attributes inverse (%lld) and onesided (%lld) must be 0 or 1", (long long)inverse,
                  (long long)onesided);
  if (c->opset >= 20) {
    axis = -2;
    if (oi_has(c, 2)) RLX_TRY(scalar_int(c, 2, "axis", &axis));
  } else {
    RLX_TRY(oi_attr_i(c, "axis", 1, &axis));
  }
  int64_t r = xs.rank;
  if (axis < -r || axis > r - 2 || axis == -1)
    return oi_bad(c,
                  "axis %lld is out of range for input %s: it must be in [%lld, -2] or [0, %lld] (the last axis "
                  "holds the complex parts)",
                  (long long)axis, rlx_fmt_shape(&xs), (long long)-r, (long long)(r - 2));
  if (axis < 0) axis += r;
  bool real = xs.dims[r - 1] == 1;
  if (onesided && !inverse && !real)
    return oi_bad(c, "onesided=1 with inverse=0 (RFFT) needs a real input [..., 1], got %s", rlx_fmt_shape(&xs));
  if (onesided && inverse && real)
    return oi_bad(c, "onesided=1 with inverse=1 (IRFFT) needs a complex input [..., 2], got %s", rlx_fmt_shape(&xs));
  int64_t n = xs.dims[axis], len = 0;
  if (!rlx_dim_is_static(n)) return oi_unsupported(c, "a DFT along an axis of symbolic length");
  if (oi_has(c, 1)) {
    RLX_TRY(scalar_int(c, 1, "dft_length", &len));
  } else {
    len = onesided && inverse ? 2 * (n - 1) : n;
  }
  if (len < 1 || len > OI_MAX_DFT_LENGTH)
    return oi_bad(c, "dft_length %lld must be in [1, 2^28] (input %s)", (long long)len, rlx_fmt_shape(&xs));
  return dft_along(c, c->in[0], (uint32_t)axis, len, inverse, onesided, &c->out[0]);
}

static rlx_status map_stft(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "signal"));
  const rlx_shape xs = *oi_in_shape(c, 0);
  RLX_TRY(need_complex_axis(c, &xs, "0 (signal)", 3));
  if (xs.rank != 3)
    return oi_bad(c, "input 0 (signal) has shape %s; STFT needs [batch, length, 1 or 2]", rlx_fmt_shape(&xs));
  int64_t s_len = xs.dims[1];
  if (!rlx_dim_is_static(s_len)) return oi_unsupported(c, "an STFT of a signal of symbolic length");
  int64_t step = 0, onesided = 1, len = s_len;
  RLX_TRY(scalar_int(c, 1, "frame_step", &step));
  RLX_TRY(oi_attr_i(c, "onesided", 1, &onesided));
  if (onesided != 0 && onesided != 1) return oi_bad(c, "attribute onesided (%lld) must be 0 or 1", (long long)onesided);
  if (onesided && xs.dims[2] == 2)
    return oi_bad(c, "onesided=1 needs a real signal [batch, length, 1], got %s", rlx_fmt_shape(&xs));
  bool has_window = oi_has(c, 2);
  rlx_shape ws = {0};
  if (has_window) {
    ws = *oi_in_shape(c, 2);
    if (ws.rank != 1 || !rlx_dim_is_static(ws.dims[0]))
      return oi_bad(c, "input 2 (window) has shape %s; it must be 1-D with a static length", rlx_fmt_shape(&ws));
    len = ws.dims[0];
  }
  if (oi_has(c, 3)) {
    RLX_TRY(scalar_int(c, 3, "frame_length", &len));
    if (has_window && ws.dims[0] != len)
      return oi_bad(c, "frame_length %lld differs from the window's length %lld", (long long)len,
                    (long long)ws.dims[0]);
  }
  if (step < 1) return oi_bad(c, "frame_step %lld must be >= 1", (long long)step);
  if (len < 1 || len > s_len || len > OI_MAX_DFT_LENGTH)
    return oi_bad(c, "frame_length %lld must be in [1, signal length %lld]", (long long)len, (long long)s_len);
  int64_t frames = (s_len - len) / step + 1;
  if (frames > (int64_t)(OI_MAX_CONST_BYTES / sizeof(int64_t)) / len)
    return oi_unsupported(c, "an STFT of %lld frames of %lld samples (its index table would exceed %zu bytes)",
                          (long long)frames, (long long)len, (size_t)OI_MAX_CONST_BYTES);

  /* framed[b, f, j, :] = signal[b, f * step + j, :] */
  size_t count = (size_t)frames * (size_t)len;
  int64_t *idx = oi_scratch(c, count * sizeof *idx);
  if (!idx) return oi_nomem(c);
  for (int64_t f = 0; f < frames; f++)
    for (int64_t j = 0; j < len; j++) idx[f * len + j] = f * step + j;
  rlx_dim id[2] = {frames, len};
  rlx_id table, framed;
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 2, id), idx, count * sizeof *idx, &table));
  rlx_attrs_Gather ga = {.axis = 1};
  rlx_id gin[2] = {c->in[0], table};
  RLX_TRY(oi_emit(c, RLX_OP_Gather, gin, 2, &ga, &framed));
  if (has_window) {
    rlx_id w;
    int64_t wd[4] = {1, 1, len, 1};
    if (!rlx_dtype_is_float((rlx_dtype)ws.dtype))
      return oi_bad(c, "input 2 (window) must be floating-point, not %s", rlx_dtype_name((rlx_dtype)ws.dtype));
    RLX_TRY(oi_cast(c, c->in[2], (rlx_dtype)xs.dtype, &w));
    RLX_TRY(oi_reshape(c, w, 4, wd, &w));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, framed, w, &framed));
  }
  return dft_along(c, framed, 2, len, false, onesided, &c->out[0]);
}

/* Triangular mel filters over the one-sided bins of a dft_length DFT, as ONNX defines them: the
 * band edges are num_mel_bins + 2 points equally spaced in mel (step = mel range / (bins + 2)),
 * mapped back to hertz and then to integer bin indices floor((dft_length + 1) * hz / rate); band
 * i rises linearly from edge i to edge i + 1 (value 1 at the centre) and falls to 0 at edge i + 2. */
static rlx_status map_mel_weight_matrix(oi_node *c) {
  int64_t bins = 0, dft_len = 0, rate = 0, odt = 0;
  double *lo, *hi;
  size_t nlo, nhi;
  RLX_TRY(scalar_int(c, 0, "num_mel_bins", &bins));
  RLX_TRY(scalar_int(c, 1, "dft_length", &dft_len));
  RLX_TRY(scalar_int(c, 2, "sample_rate", &rate));
  RLX_TRY(oi_in_f64s(c, 3, "lower_edge_hertz", &lo, &nlo));
  RLX_TRY(oi_in_f64s(c, 4, "upper_edge_hertz", &hi, &nhi));
  if (nlo != 1 || nhi != 1) return oi_bad(c, "lower_edge_hertz and upper_edge_hertz must be scalars");
  RLX_TRY(oi_attr_i(c, "output_datatype", 1, &odt));
  rlx_dtype t;
  if (odt < 0 || odt > 64 || !oi_dtype_from_onnx((int32_t)odt, &t))
    return oi_unsupported(c, "output_datatype %s", oi_onnx_dtype_name((int32_t)odt));
  if (bins < 1 || bins > (1 << 20) || dft_len < 1 || dft_len > OI_MAX_DFT_LENGTH || rate < 1)
    return oi_bad(c,
                  "num_mel_bins (%lld) must be in [1, 2^20], dft_length (%lld) in [1, 2^28] and sample_rate "
                  "(%lld) >= 1",
                  (long long)bins, (long long)dft_len, (long long)rate);
  if (!(lo[0] >= 0 && lo[0] <= hi[0]))
    return oi_bad(c, "the hertz range [%g, %g] must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz", lo[0], hi[0]);
  int64_t spec_bins = dft_len / 2 + 1, points = bins + 2;
  int64_t *edge = oi_scratch(c, (size_t)points * sizeof *edge);
  if (!edge) return oi_nomem(c);
  double mel_lo = 2595.0 * log10(1.0 + lo[0] / 700.0), mel_hi = 2595.0 * log10(1.0 + hi[0] / 700.0);
  double mel_step = (mel_hi - mel_lo) / (double)points;
  for (int64_t i = 0; i < points; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * mel_step + mel_lo) / 2595.0) - 1.0);
    double b = floor((double)(dft_len + 1) * hz / (double)rate);
    if (!(b >= 0 && b < (double)spec_bins))
      return oi_bad(c,
                    "mel band edge %lld (%g Hz) falls on DFT bin %g, outside the %lld one-sided bins; keep "
                    "upper_edge_hertz <= sample_rate / 2",
                    (long long)i, hz, b, (long long)spec_bins);
    edge[i] = (int64_t)b;
  }
  rlx_dim od[2] = {spec_bins, bins};
  rlx_shape s = rlx_shape_make(t, 2, od);
  size_t nb;
  RLX_TRY(rlx_shape_nbytes(&s, &nb));
  double *w = oi_scratch(c, (size_t)spec_bins * (size_t)bins * sizeof *w);
  void *buf = oi_scratch(c, nb);
  if (!w || !buf) return oi_nomem(c);
  memset(w, 0, (size_t)spec_bins * (size_t)bins * sizeof *w);
  for (int64_t m = 0; m < bins; m++) {
    int64_t left = edge[m], centre = edge[m + 1], right = edge[m + 2];
    if (centre == left)
      w[centre * bins + m] = 1.0;
    else
      for (int64_t j = left; j <= centre; j++) w[j * bins + m] = (double)(j - left) / (double)(centre - left);
    for (int64_t j = centre; j < right; j++) w[j * bins + m] = (double)(right - j) / (double)(right - centre);
  }
  for (size_t i = 0; i < (size_t)spec_bins * (size_t)bins; i++) rlx_elem_set(buf, t, i, w[i]);
  return oi_const(c, s, buf, nb, &c->out[0]);
}

const oi_op_entry oi_ops_signal[] = {
    {"DFT", 17, OI_MAX_OPSET, map_dft}, /* axis became an input at 20; unchanged since */
    {"STFT", 17, OI_MAX_OPSET, map_stft},
    {"MelWeightMatrix", 17, OI_MAX_OPSET, map_mel_weight_matrix},
};
const uint32_t oi_ops_signal_len = sizeof oi_ops_signal / sizeof oi_ops_signal[0];
