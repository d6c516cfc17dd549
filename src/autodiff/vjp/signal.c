/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: signal ops (spec ir-special §4). */
#include <math.h>

#include "autodiff/ad_internal.h"

/* Fft is linear: y = s * F x with F the (unscaled) DFT matrix in the op's direction and s the
 * norm's factor. F is symmetric, so its adjoint is conj(F), the unscaled transform in the other
 * direction (in real-block layout too: the real form of conj(F)^T is the transpose of F's real
 * form). Hence dx = s * Fft{!inverse, Backward}(dy). */
RLX_VJP_DECL(Fft) {
  (void)x;
  (void)y;
  const rlx_attrs_Fft *a = &n->attrs.Fft;
  double scale = 1.0;
  if (a->norm == RLX_FFT_NORM_ORTHO || (a->norm == RLX_FFT_NORM_FORWARD && a->inverse)) {
    rlx_shape s = ad_shape(c, dy);
    rlx_dim last = s.rank ? s.dims[s.rank - 1] : 0;
    if (s.rank == 0 || !rlx_dim_is_static(last))
      return ad_unsupported(c, "the Fft axis has a symbolic length; its norm's scale 1/N (or 1/sqrt(N)) needs N");
    bool cplx = s.dtype == RLX_C64 || s.dtype == RLX_C128;
    double len = (double)(cplx ? last : last / 2);
    scale = a->norm == RLX_FFT_NORM_ORTHO ? 1.0 / sqrt(len) : 1.0 / len;
  }
  rlx_attrs_Fft adj = {.inverse = !a->inverse, .norm = RLX_FFT_NORM_BACKWARD};
  rlx_id t;
  RLX_TRY(ad_emit(c, RLX_OP_Fft, &dy, 1, &adj, NULL, &t));
  if (scale == 1.0) {
    dx[0] = t;
    return RLX_OK;
  }
  return ad_bin_s(c, RLX_BINOP_MUL, t, scale, &dx[0]);
}
