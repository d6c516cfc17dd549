/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: signal ops (spec ir-special §4, ir-core §10.10 for PartitionedConv). Real tensors
 * carry complex data in "real-block" layout along the last axis: [re_0..re_{N-1}, im_0..im_{N-1}]
 * (2N values); C64/C128 tensors hold N complex values. */
#include "infer_special.h"

static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* Last axis of operand 0 as an FFT: real-block floats (and ints when `allow_int`) of even length
 * 2N, or complex of length N; N >= 1 and a power of two when `pow2`. */
static rlx_status check_fft_input(const rlx_infer_ctx *c, bool allow_int, bool pow2) {
  const rlx_shape *x = c->in[0];
  rlx_dtype t = (rlx_dtype)x->dtype;
  bool cplx = t == RLX_C64 || t == RLX_C128;
  bool real = t == RLX_F32 || t == RLX_F64 || (allow_int && (t == RLX_I16 || t == RLX_I32));
  if (!cplx && !real)
    return rlx_shape_error("operand 0 has dtype %s; expected %s", rlx_dtype_name(t),
                           allow_int ? "i16/i32/f32/f64 real-block or c64/c128" : "f32/f64 real-block or c64/c128");
  RLX_TRY(sp_min_rank(c, 0, "x", 1));
  rlx_dim last = x->dims[x->rank - 1];
  if (!sp_static(last)) return RLX_OK;
  if (!cplx && (last < 2 || last % 2))
    return rlx_shape_error("operand 0 has shape %s; a real-block FFT axis needs an even length 2N >= 2",
                           rlx_fmt_shape(x));
  int64_t n = cplx ? last : last / 2;
  if (n < 1) return rlx_shape_error("operand 0 has shape %s; the FFT axis is empty", rlx_fmt_shape(x));
  if (pow2 && !is_pow2(n))
    return rlx_shape_error("operand 0 has shape %s; the fixed-point FFT needs a power-of-two N, got %lld",
                           rlx_fmt_shape(x), (long long)n);
  return RLX_OK;
}

static rlx_status check_norm(int32_t norm) {
  if (norm < 0 || norm >= RLX_FFT_NORM_COUNT) return rlx_shape_error("attribute norm: %d is not an FftNorm", norm);
  return RLX_OK;
}

rlx_status rlx_infer_Fft(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(check_norm(c->a->Fft.norm));
  RLX_TRY(check_fft_input(c, false, false));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_FftQ(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FftQ *a = &c->a->FftQ;
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(check_norm(a->norm));
  if (a->scale < 0 || a->scale >= RLX_FFTQ_SCALE_COUNT)
    return rlx_shape_error("attribute scale: %d is not an FftQScale", a->scale);
  RLX_TRY(check_fft_input(c, true, true));
  *out = *c->in[0];
  return RLX_OK;
}

/* state [B, 2*n_fft] (or [B, n_fft, 2]); gate, rev, tw_re, tw_im [n_fft/2]. */
rlx_status rlx_infer_FftButterflyStage(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"state", "gate", "rev", "tw_re", "tw_im"};
  const rlx_attrs_FftButterflyStage *a = &c->a->FftButterflyStage;
  RLX_TRY(sp_arity(c, 5, "state, gate, rev, tw_re, tw_im"));
  if (a->n_fft < 2 || !is_pow2(a->n_fft) || a->n_fft > INT64_MAX / 2)
    return rlx_shape_error("attribute n_fft: %lld must be a power of two >= 2", (long long)a->n_fft);
  int64_t stages = 0;
  while ((INT64_C(1) << stages) < a->n_fft) stages++;
  if (a->stage < 0 || a->stage >= stages)
    return rlx_shape_error("attribute stage: %lld must be in 0..%lld (log2(n_fft) - 1)", (long long)a->stage,
                           (long long)(stages - 1));
  for (uint32_t i = 0; i < 5; i++) RLX_TRY(sp_float(c, i, roles[i]));
  const rlx_shape *s = c->in[0];
  rlx_dim flat[2] = {s->dims[0], 2 * a->n_fft}, pairs[3] = {s->dims[0], a->n_fft, 2};
  if (s->rank == 3)
    RLX_TRY(sp_expect(c, 0, "state", "[B, n_fft, 2]", 3, pairs));
  else
    RLX_TRY(sp_expect(c, 0, "state", "[B, 2 * n_fft] interleaved (re, im)", 2, flat));
  rlx_dim half = a->n_fft / 2;
  for (uint32_t i = 1; i < 5; i++) RLX_TRY(sp_expect(c, i, roles[i], "[n_fft / 2]", 1, &half));
  *out = *s;
  return RLX_OK;
}

/* spectrum [..., 2*n_fft] against filters [n_mels, n_fft/2 + 1]; *mels = n_mels. */
static rlx_status check_logmel(const rlx_infer_ctx *c, rlx_dim *mels) {
  RLX_TRY(sp_float(c, 0, "spectrum"));
  RLX_TRY(sp_same_dtype(c, 1, "filters", 0));
  RLX_TRY(sp_min_rank(c, 0, "spectrum", 1));
  RLX_TRY(sp_rank(c, 1, "filters", 2));
  const rlx_shape *x = c->in[0];
  rlx_dim last = x->dims[x->rank - 1];
  if (sp_static(last)) {
    if (last < 2 || last % 2)
      return rlx_shape_error("operand 0 (spectrum) has shape %s; expected a real-block last axis 2 * n_fft >= 2",
                             rlx_fmt_shape(x));
    RLX_TRY(sp_dim_eq(c, 1, "filters", 1, last / 4 + 1, "n_bins = n_fft / 2 + 1"));
  }
  *mels = c->in[1]->dims[0];
  return RLX_OK;
}

rlx_status rlx_infer_LogMel(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 2, "spectrum, filters"));
  rlx_dim mels;
  RLX_TRY(check_logmel(c, &mels));
  *out = *c->in[0];
  out->dims[out->rank - 1] = mels;
  return RLX_OK;
}

rlx_status rlx_infer_LogMelBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 3, "spectrum, filters, dy"));
  rlx_dim mels;
  RLX_TRY(check_logmel(c, &mels));
  rlx_shape dy = *c->in[0];
  dy.dims[dy.rank - 1] = mels;
  RLX_TRY(sp_shape_eq(c, 2, "dy", &dy, "the gradient of LogMel's output [..., n_mels]"));
  *out = *c->in[0];
  return RLX_OK;
}

/* spectrum [batch * n_segments, 2 * n_fft] -> [batch, 2k] (bin, power) pairs. */
rlx_status rlx_infer_WelchPeaks(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_WelchPeaks *a = &c->a->WelchPeaks;
  RLX_TRY(sp_arity(c, 1, "spectrum"));
  if (a->k < 1) return rlx_shape_error("attribute k: %lld must be >= 1", (long long)a->k);
  if (a->n_segments < 1) return rlx_shape_error("attribute n_segments: %lld must be >= 1", (long long)a->n_segments);
  RLX_TRY(sp_float(c, 0, "spectrum"));
  RLX_TRY(sp_rank(c, 0, "spectrum", 2));
  const rlx_shape *x = c->in[0];
  rlx_dim rows = x->dims[0], last = x->dims[1], batch = SP_UNKNOWN, pairs;
  if (sp_static(last) && (last < 2 || last % 2))
    return rlx_shape_error("operand 0 (spectrum) has shape %s; expected a real-block last axis 2 * n_fft >= 2",
                           rlx_fmt_shape(x));
  if (sp_static(rows)) {
    if (rows % a->n_segments)
      return rlx_shape_error("operand 0 (spectrum) has %lld rows, not a multiple of attribute n_segments (%lld)",
                             (long long)rows, (long long)a->n_segments);
    batch = rows / a->n_segments;
  } else if (a->n_segments == 1) {
    batch = rows;
  }
  RLX_TRY(sp_mul(a->k, 2, &pairs));
  rlx_dim d[2] = {batch, pairs};
  *out = sp_make((rlx_dtype)x->dtype, 2, d);
  return sp_resolve(c, out);
}

/* x [..., L] (*) ir [M] -> [..., L + M - 1], full linear convolution. */
rlx_status rlx_infer_PartitionedConv(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sp_arity(c, 2, "x, ir"));
  if (c->a->PartitionedConv.block < 1)
    return rlx_shape_error("attribute block: %lld must be >= 1", (long long)c->a->PartitionedConv.block);
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(sp_same_dtype(c, 1, "ir", 0));
  RLX_TRY(sp_min_rank(c, 0, "x", 1));
  RLX_TRY(sp_rank(c, 1, "ir", 1));
  const rlx_shape *x = c->in[0];
  rlx_dim l = x->dims[x->rank - 1], m = c->in[1]->dims[0], len;
  if (l == 0) return rlx_shape_error("operand 0 (x) has shape %s; the signal axis is empty", rlx_fmt_shape(x));
  if (m == 0)
    return rlx_shape_error("operand 1 (ir) has shape %s; the impulse response is empty", rlx_fmt_shape(c->in[1]));
  RLX_TRY(sp_add(l, m, &len));
  if (len != SP_UNKNOWN) len -= 1;
  *out = *x;
  out->dims[out->rank - 1] = len;
  return sp_resolve(c, out);
}
