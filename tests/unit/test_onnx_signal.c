/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer, signal ops (src/io/onnx/ops_signal.c): DFT at opsets 17 (axis attribute) and 20
 * (axis input), with real / complex input, inverse, one-sided (RFFT / IRFFT) and dft_length
 * padding and cutting; STFT with and without a window; MelWeightMatrix. Models are built with
 * protobuf-c (tests/common/onnx_build.h), imported, compiled and run on the CPU and compared with
 * DFT sums written out here as plain O(N^2) loops over the ONNX definitions (the mel matrix is
 * worked out by hand below). Malformed nodes must fail with a message naming the problem. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})

static const double PI = 3.14159265358979323846;

/* Imports, compiles and runs with one f32 input "x" (none when x is NULL). */
static bool run_model(ob_model *m, const float *x, int rank, const int64_t *dims, runner *r) {
  rlx_named_tensor in = tin("x", x, RLX_F32, rank, dims);
  return run_ob(m, NULL, &in, x ? 1 : 0, r);
}

/* Output t is an f32 tensor of the given dims whose values match want to within 1e-5 of the
 * largest |want| (f32 outputs of sums of many terms). */
static bool close_to(const rlx_tensor *t, int rank, const int64_t *dims, const double *want) {
  if (!out_shape_is(t, RLX_F32, rank, dims)) return false;
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  double scale = 1;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  const float *v = t->data;
  for (size_t i = 0; i < n; i++)
    if (!(fabs(v[i] - want[i]) <= 1e-5 * scale)) {
      fprintf(stderr, "  element %zu: got %.7g, want %.7g\n", i, (double)v[i], want[i]);
      return false;
    }
  return true;
}

/* Deterministic test data in [-1, 1). */
static void fill(float *x, size_t n, unsigned seed) {
  uint32_t s = 2463534242u ^ seed;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x[i] = (float)((double)(s >> 8) / (double)(1u << 23) - 1.0);
  }
}

/* One DFT line written out: out[k] = scale * sum_{j < n} z[j] e^{sign 2 pi i j k / len} for
 * k < bins, where z[j] = (re[j * stride], im[j * stride]) (im NULL: real) and samples at or past
 * n count as zero. */
static void dft_line(const float *re, const float *im, size_t stride, int64_t n, int64_t len, int64_t bins, int sign,
                     double scale, double *out_re, double *out_im) {
  for (int64_t k = 0; k < bins; k++) {
    double sr = 0, si = 0;
    for (int64_t j = 0; j < n && j < len; j++) {
      double a = re[j * stride], b = im ? im[j * stride] : 0;
      double ang = sign * 2 * PI * (double)((j * k) % len) / (double)len;
      sr += a * cos(ang) - b * sin(ang);
      si += a * sin(ang) + b * cos(ang);
    }
    out_re[k] = sr * scale;
    out_im[k] = si * scale;
  }
}

/* A one-node DFT model over input x; dft_length / axis become initializers when >= 0 / present. */
static ob_model *dft_model(int64_t opset, int rank, const int64_t *dims, int64_t inverse, int64_t onesided,
                           int64_t dft_length, bool with_axis, int64_t axis) {
  ob_model *m = ob_model_new(opset);
  ob_input(m, "x", OB_FLOAT, rank, dims);
  if (dft_length >= 0) ob_initializer(m, "len", OB_INT64, 0, NULL, &dft_length, 8);
  bool axis_input = opset >= 20 && with_axis;
  if (axis_input) ob_initializer(m, "axis", OB_INT64, 0, NULL, &axis, 8);
  const char *ins = axis_input ? (dft_length >= 0 ? "x,len,axis" : "x,,axis") : (dft_length >= 0 ? "x,len" : "x");
  Onnx__NodeProto *n = ob_node(m, "DFT", ins, "y");
  if (inverse) ob_attr_int(m, n, "inverse", inverse);
  if (onesided) ob_attr_int(m, n, "onesided", onesided);
  if (opset < 20 && with_axis) ob_attr_int(m, n, "axis", axis);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  return m;
}

/* ======================================================================================
 * DFT
 * ====================================================================================== */

/* Real input [2, 5, 1] along axis 1 (N = 5, not a power of two), opset 17. */
static void test_dft_real(void) {
  float x[10];
  fill(x, 10, 1);
  double want[2 * 5 * 2], re[5], im[5];
  for (int b = 0; b < 2; b++) {
    dft_line(x + b * 5, NULL, 1, 5, 5, 5, -1, 1.0, re, im);
    for (int k = 0; k < 5; k++) want[(b * 5 + k) * 2] = re[k], want[(b * 5 + k) * 2 + 1] = im[k];
  }
  ob_model *m = dft_model(17, 3, DIMS(2, 5, 1), 0, 0, -1, false, 0);
  runner r;
  if (run_model(m, x, 3, DIMS(2, 5, 1), &r)) CHECK(close_to(&r.outs[0], 3, DIMS(2, 5, 2), want));
  runner_free(&r);
  ob_model_free(m);
}

/* Complex input [1, 4, 3, 2], inverse (1/N) along axis 1 (the first signal axis: lines are
 * strided by 3 pairs) and, at opset 20, along axis -2 (the default) with the axis input omitted. */
static void test_dft_complex_inverse(void) {
  float x[24];
  fill(x, 24, 2);
  double want[24], re[4], im[4];
  for (int c = 0; c < 3; c++) {
    dft_line(x + 2 * c, x + 2 * c + 1, 6, 4, 4, 4, +1, 0.25, re, im);
    for (int k = 0; k < 4; k++) want[(k * 3 + c) * 2] = re[k], want[(k * 3 + c) * 2 + 1] = im[k];
  }
  ob_model *m = dft_model(17, 4, DIMS(1, 4, 3, 2), 1, 0, -1, true, 1);
  runner r;
  if (run_model(m, x, 4, DIMS(1, 4, 3, 2), &r)) CHECK(close_to(&r.outs[0], 4, DIMS(1, 4, 3, 2), want));
  runner_free(&r);
  ob_model_free(m);

  /* axis -2 = axis 2 (extent 3): lines are contiguous pairs */
  double want2[24], re3[3], im3[3];
  for (int row = 0; row < 4; row++) {
    dft_line(x + row * 6, x + row * 6 + 1, 2, 3, 3, 3, +1, 1.0 / 3, re3, im3);
    for (int k = 0; k < 3; k++) want2[row * 6 + 2 * k] = re3[k], want2[row * 6 + 2 * k + 1] = im3[k];
  }
  m = dft_model(20, 4, DIMS(1, 4, 3, 2), 1, 0, -1, false, 0);
  if (run_model(m, x, 4, DIMS(1, 4, 3, 2), &r)) CHECK(close_to(&r.outs[0], 4, DIMS(1, 4, 3, 2), want2));
  runner_free(&r);
  ob_model_free(m);
}

/* Opset 20, axis input 1: RFFT of [3, 6, 1] zero-padded to dft_length 8 (bins 0..4), and cut to
 * dft_length 4 (bins 0..2). */
static void test_dft_onesided_length(void) {
  float x[18];
  fill(x, 18, 3);
  for (int pass = 0; pass < 2; pass++) {
    int64_t len = pass == 0 ? 8 : 4, bins = len / 2 + 1;
    double want[3 * 5 * 2], re[5], im[5];
    for (int b = 0; b < 3; b++) {
      dft_line(x + b * 6, NULL, 1, 6, len, bins, -1, 1.0, re, im);
      for (int k = 0; k < bins; k++) want[(b * bins + k) * 2] = re[k], want[(b * bins + k) * 2 + 1] = im[k];
    }
    ob_model *m = dft_model(20, 3, DIMS(3, 6, 1), 0, 1, len, true, 1);
    runner r;
    if (run_model(m, x, 3, DIMS(3, 6, 1), &r))
      CHECK_MSG(close_to(&r.outs[0], 3, DIMS(3, bins, 2), want), "RFFT length %lld", (long long)len);
    runner_free(&r);
    ob_model_free(m);
  }
}

/* IRFFT: one-sided complex [2, 4, 2] (bins 0..3) to a real signal of dft_length 7 (bins 0..3
 * extended by X[k] = conj(X[7 - k])) and, by default, of 2 * (4 - 1) = 6. The imaginary parts of
 * bin 0 (and of the Nyquist bin for even lengths) do not reach the real output. */
static void test_dft_irfft(void) {
  float x[16];
  fill(x, 16, 4);
  for (int pass = 0; pass < 2; pass++) {
    int64_t len = pass == 0 ? 7 : 6, used = len / 2 + 1;
    double want[2 * 7];
    for (int b = 0; b < 2; b++) {
      const float *z = x + b * 8;
      for (int64_t t = 0; t < len; t++) {
        double s = 0;
        for (int64_t k = 0; k < len; k++) {
          /* the full spectrum: stored bins below `used`, mirrored conjugates above */
          int64_t src = k < used ? k : len - k;
          double a = z[2 * src], bi = k < used ? z[2 * src + 1] : -z[2 * src + 1];
          double ang = 2 * PI * (double)((k * t) % len) / (double)len;
          s += a * cos(ang) - bi * sin(ang);
        }
        want[b * len + t] = s / (double)len;
      }
    }
    ob_model *m = dft_model(17, 3, DIMS(2, 4, 2), 1, 1, pass == 0 ? len : -1, true, 1);
    runner r;
    if (run_model(m, x, 3, DIMS(2, 4, 2), &r))
      CHECK_MSG(close_to(&r.outs[0], 3, DIMS(2, len, 1), want), "IRFFT length %lld", (long long)len);
    runner_free(&r);
    ob_model_free(m);
  }
}

static void test_dft_errors(void) {
  ob_model *m = dft_model(17, 3, DIMS(2, 5, 1), 0, 0, -1, true, 2); /* the complex axis */
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "axis 2 is out of range");
  ob_model_free(m);
  m = dft_model(20, 3, DIMS(2, 5, 1), 0, 0, -1, true, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "axis -1 is out of range");
  ob_model_free(m);
  m = dft_model(17, 3, DIMS(2, 5, 2), 0, 1, -1, true, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "needs a real input");
  ob_model_free(m);
  m = dft_model(17, 3, DIMS(2, 5, 1), 1, 1, -1, true, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "needs a complex input");
  ob_model_free(m);
  m = dft_model(17, 3, DIMS(2, 5, 1), 0, 0, 0, true, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "dft_length 0");
  ob_model_free(m);
  m = dft_model(17, 3, DIMS(2, 5, 3), 0, 0, -1, true, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "last axis of 1 (real) or 2 (complex)");
  ob_model_free(m);
  m = dft_model(17, 3, DIMS(2, 5, 1), 2, 0, -1, true, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "must be 0 or 1");
  ob_model_free(m);
  /* dft_length computed at run time */
  m = ob_model_new(17);
  ob_input(m, "x", OB_FLOAT, 3, DIMS(2, 5, 1));
  ob_input(m, "len", OB_INT64, 0, NULL);
  ob_node(m, "DFT", "x,len", "y");
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "dft_length");
  ob_model_free(m);
}

/* ======================================================================================
 * STFT
 * ====================================================================================== */

/* signal [1, 20, 1], frame_step 3: with a window of length 8 (6 frames, bins 0..4), and without
 * one but with frame_length 6 and onesided=0 (5 frames, 6 bins). */
static void test_stft(void) {
  float x[20], w[8];
  fill(x, 20, 5);
  fill(w, 8, 6);
  int64_t step = 3;
  for (int pass = 0; pass < 2; pass++) {
    bool windowed = pass == 0;
    int64_t len = windowed ? 8 : 6, frames = (20 - len) / step + 1, bins = windowed ? len / 2 + 1 : len;
    double want[6 * 6 * 2], re[8], im[8];
    for (int64_t f = 0; f < frames; f++) {
      float fr[8];
      for (int64_t j = 0; j < len; j++) fr[j] = x[f * step + j] * (windowed ? w[j] : 1.0f);
      dft_line(fr, NULL, 1, len, len, bins, -1, 1.0, re, im);
      for (int64_t k = 0; k < bins; k++) want[(f * bins + k) * 2] = re[k], want[(f * bins + k) * 2 + 1] = im[k];
    }
    ob_model *m = ob_model_new(17);
    ob_input(m, "x", OB_FLOAT, 3, DIMS(1, 20, 1));
    ob_initializer(m, "step", OB_INT64, 0, NULL, &step, 8);
    Onnx__NodeProto *n;
    if (windowed) {
      ob_initializer(m, "w", OB_FLOAT, 1, DIMS(8), w, sizeof w);
      n = ob_node(m, "STFT", "x,step,w", "y");
    } else {
      ob_initializer(m, "len", OB_INT64, 0, NULL, &len, 8);
      n = ob_node(m, "STFT", "x,step,,len", "y");
      ob_attr_int(m, n, "onesided", 0);
    }
    ob_output(m, "y", OB_FLOAT, -1, NULL);
    runner r;
    if (run_model(m, x, 3, DIMS(1, 20, 1), &r))
      CHECK_MSG(close_to(&r.outs[0], 4, DIMS(1, frames, bins, 2), want), "STFT %s", windowed ? "windowed" : "plain");
    runner_free(&r);
    ob_model_free(m);
  }
}

/* An STFT model whose scalar inputs are initializers (frame_length < 0: omitted). */
static ob_model *stft_model(int srank, const int64_t *sdims, int64_t step, int64_t wlen, int64_t flen,
                            int64_t onesided) {
  ob_model *m = ob_model_new(17);
  ob_input(m, "x", OB_FLOAT, srank, sdims);
  ob_initializer(m, "step", OB_INT64, 0, NULL, &step, 8);
  float w[64] = {0};
  if (wlen > 0) ob_initializer(m, "w", OB_FLOAT, 1, DIMS(wlen), w, (size_t)wlen * sizeof(float));
  if (flen >= 0) ob_initializer(m, "len", OB_INT64, 0, NULL, &flen, 8);
  const char *ins = wlen > 0 ? (flen >= 0 ? "x,step,w,len" : "x,step,w") : (flen >= 0 ? "x,step,,len" : "x,step");
  Onnx__NodeProto *n = ob_node(m, "STFT", ins, "y");
  if (onesided >= 0) ob_attr_int(m, n, "onesided", onesided);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  return m;
}

static void test_stft_errors(void) {
  ob_model *m = stft_model(3, DIMS(1, 20, 1), 3, 8, 6, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "differs from the window's length");
  ob_model_free(m);
  m = stft_model(3, DIMS(1, 20, 1), 3, -1, 21, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "frame_length 21 must be in [1, signal length 20]");
  ob_model_free(m);
  m = stft_model(3, DIMS(1, 20, 1), 0, -1, 4, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "frame_step 0");
  ob_model_free(m);
  m = stft_model(3, DIMS(1, 20, 2), 2, -1, 4, -1); /* complex signal, onesided by default */
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "onesided=1 needs a real signal");
  ob_model_free(m);
  m = stft_model(2, DIMS(20, 1), 2, -1, 4, 0);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "input 0 (signal)");
  ob_model_free(m);
  m = stft_model(3, DIMS(0, 1 << 26, 1), 1, -1, 1 << 20, -1); /* 2^26 frames of 2^20: too large a table */
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "index table would exceed");
  ob_model_free(m);
}

/* ======================================================================================
 * MelWeightMatrix
 * ====================================================================================== */

static ob_model *mel_model(int64_t bins, int64_t dft_len, int64_t rate, float lo, float hi) {
  ob_model *m = ob_model_new(17);
  ob_initializer(m, "bins", OB_INT64, 0, NULL, &bins, 8);
  ob_initializer(m, "dft", OB_INT64, 0, NULL, &dft_len, 8);
  ob_initializer(m, "rate", OB_INT64, 0, NULL, &rate, 8);
  ob_initializer(m, "lo", OB_FLOAT, 0, NULL, &lo, 4);
  ob_initializer(m, "hi", OB_FLOAT, 0, NULL, &hi, 4);
  ob_node(m, "MelWeightMatrix", "bins,dft,rate,lo,hi", "y");
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  return m;
}

/* 2 mel bins over a 16-point DFT at 16 kHz, 0..8000 Hz. mel(8000) = 2595 log10(1 + 8000/700)
 * = 2840.0; the 4 edges are 0, 710.0, 1420.0, 2130.0 mel = 0, 614.4, 1768.4, 3935.2 Hz, on bins
 * floor(17 hz / 16000) = 0, 0, 1, 4. Band 0 (0, 0, 1): 1 at bin 0. Band 1 (0, 1, 4): rises 0 -> 1
 * over bins 0..1, falls 1, 2/3, 1/3 over bins 1..3. */
static void test_mel(void) {
  ob_model *m = mel_model(2, 16, 16000, 0.0f, 8000.0f);
  runner r;
  double want[9 * 2] = {1, 0, 0, 1, 0, 2.0 / 3, 0, 1.0 / 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (run_model(m, NULL, 0, NULL, &r)) CHECK(close_to(&r.outs[0], 2, DIMS(9, 2), want));
  runner_free(&r);
  ob_model_free(m);

  m = mel_model(2, 16, 16000, 0.0f, 40000.0f); /* the top edge lands past the Nyquist bin */
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "keep upper_edge_hertz <= sample_rate / 2");
  ob_model_free(m);
  m = mel_model(0, 16, 16000, 0.0f, 8000.0f);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "num_mel_bins (0)");
  ob_model_free(m);
  m = mel_model(2, 16, 16000, 500.0f, 100.0f);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "lower_edge_hertz <= upper_edge_hertz");
  ob_model_free(m);
}

int main(void) {
  test_dft_real();
  test_dft_complex_inverse();
  test_dft_onesided_length();
  test_dft_irfft();
  test_dft_errors();
  test_stft();
  test_stft_errors();
  test_mel();
  return rlx_test_finish("onnx_signal");
}
