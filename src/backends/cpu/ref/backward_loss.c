/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: softmax cross-entropy losses and their backward (spec ir-special §8).
 *
 * logits are [N, C]; per row n, with m = max_c logits and lse = m + log(sum_c exp(logits - m)):
 *   SoftmaxCrossEntropy            [logits, targets [N, C]] -> [N]: lse - sum_c targets * logits
 *                                  (exactly the cross-entropy when each target row sums to 1)
 *   SoftmaxCrossEntropyWithLogits  [logits, labels [N]]     -> [N]: lse - logits[label]
 *   SoftmaxCrossEntropyBackward    [logits, labels, d_loss] -> [N, C]:
 *                                  (softmax(logits) - onehot(label)) * d_loss[n]
 * Labels are any integer dtype or a float dtype holding integers (f32-encoded indices); a label
 * outside [0, C) — negative ones included — or a non-integral one is RLX_ERR_RUNTIME.
 * Everything is computed in double and rounded once. */
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

/* Checks logits [N, C] (float, output dtype) and returns N and C. */
static rlx_status need_logits(const rlx_node *n, const rlx_tensor *in, const rlx_tensor *out, size_t *N, size_t *C) {
  RLX_TRY(rb_need_float(n, in, 0, "logits"));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (logits) has shape %s; expected [N, C]", ru_fmt(x));
  *N = (size_t)x->dims[0];
  *C = (size_t)x->dims[1];
  return RLX_OK;
}

/* Operand i is a rank-1 [N] vector. */
static rlx_status need_row_vector(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *what, size_t N) {
  const rlx_shape *s = &in[i].shape;
  if (s->rank != 1 || (size_t)s->dims[0] != N)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; expected [%zu] (one per row of the logits)",
                    i, what, ru_fmt(s), N);
  return RLX_OK;
}

/* Row maximum and log-sum-exp of row r of the logits. A row holding NaN gives NaN; a row of
 * -inf gives lse = -inf. */
static void row_lse(const rlx_tensor *x, size_t r, size_t C, double *max_out, double *lse_out) {
  rlx_dtype t = ru_dt(x);
  double m = -INFINITY;
  bool nan_seen = false;
  for (size_t c = 0; c < C; c++) {
    double v = rlx_elem_get(x->data, t, r * C + c);
    if (isnan(v))
      nan_seen = true;
    else if (v > m)
      m = v;
  }
  if (nan_seen || C == 0 || m == -INFINITY || m == INFINITY) {
    *max_out = m;
    *lse_out = nan_seen ? NAN : C == 0 ? -INFINITY : m;
    return;
  }
  double sum = 0.0;
  for (size_t c = 0; c < C; c++) sum += exp(rlx_elem_get(x->data, t, r * C + c) - m);
  *max_out = m;
  *lse_out = m + log(sum);
}

RLX_CPU_KERNEL(SoftmaxCrossEntropy) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  size_t N, C;
  RLX_TRY(need_logits(n, in, out, &N, &C));
  RLX_TRY(ru_need_dtype(n, in, 1, ru_dt(out)));
  if (!rlx_shape_equal(&in[1].shape, &in[0].shape))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (targets) has shape %s; it must equal operand 0 (logits) %s",
                    ru_fmt(&in[1].shape), ru_fmt(&in[0].shape));
  int64_t dims[1] = {(int64_t)N};
  RLX_TRY(ru_need_out_dims(n, out, 1, dims));
  rlx_dtype t = ru_dt(out);
  for (size_t r = 0; r < N; r++) {
    double m, lse, dot = 0.0;
    row_lse(&in[0], r, C, &m, &lse);
    for (size_t c = 0; c < C; c++)
      dot += rlx_elem_get(in[1].data, t, r * C + c) * rlx_elem_get(in[0].data, t, r * C + c);
    ru_store(out->data, t, r, lse - dot);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(SoftmaxCrossEntropyWithLogits) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  size_t N, C;
  RLX_TRY(need_logits(n, in, out, &N, &C));
  RLX_TRY(rb_need_index(n, in, 1, "labels"));
  RLX_TRY(need_row_vector(n, in, 1, "labels", N));
  int64_t dims[1] = {(int64_t)N};
  RLX_TRY(ru_need_out_dims(n, out, 1, dims));
  rlx_dtype t = ru_dt(out);
  for (size_t r = 0; r < N; r++) {
    int64_t label = 0;
    RLX_TRY(rb_read_index(n, in, 1, r, (int64_t)C, false, "the classes (axis 1 of the logits)", &label));
    double m, lse;
    row_lse(&in[0], r, C, &m, &lse);
    ru_store(out->data, t, r, lse - rlx_elem_get(in[0].data, t, r * C + (size_t)label));
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(SoftmaxCrossEntropyBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  size_t N, C;
  RLX_TRY(need_logits(n, in, out, &N, &C));
  RLX_TRY(rb_need_index(n, in, 1, "labels"));
  RLX_TRY(need_row_vector(n, in, 1, "labels", N));
  RLX_TRY(ru_need_dtype(n, in, 2, ru_dt(out)));
  RLX_TRY(need_row_vector(n, in, 2, "d_loss", N));
  RLX_TRY(ru_need_out_dims(n, out, 2, in[0].shape.dims));
  rlx_dtype t = ru_dt(out);
  for (size_t r = 0; r < N; r++) {
    int64_t label = 0;
    RLX_TRY(rb_read_index(n, in, 1, r, (int64_t)C, false, "the classes (axis 1 of the logits)", &label));
    double m, lse, g = rlx_elem_get(in[2].data, t, r);
    row_lse(&in[0], r, C, &m, &lse);
    for (size_t c = 0; c < C; c++) {
      double p = exp(rlx_elem_get(in[0].data, t, r * C + c) - lse);
      ru_store(out->data, t, r * C + c, (p - (c == (size_t)label ? 1.0 : 0.0)) * g);
    }
  }
  return RLX_OK;
}
