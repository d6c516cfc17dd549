/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: LogMel and the complex helpers (spec ir-special §4). Complex cotangents follow the
 * Wirtinger convention (the cotangent carried is dL/dz-bar). */
#include "autodiff/ad_internal.h"

/* LogMel: d spectrum = LogMelBackward(spectrum, filters, dy) (the frame maximum is held constant
 * and clamped entries pass nothing, as the spec defines it). The spec gives the filter bank no
 * gradient: asking for one is an error rather than a silent zero. */
RLX_VJP_DECL(LogMel) {
  if (c->want[1])
    return ad_unsupported(
        c, "the mel filter bank (operand 1) has no gradient rule; LogMelBackward covers the spectrum only");
  rlx_id in[3] = {x[0], x[1], dy};
  dx[1] = RLX_NO_ID;
  return ad_emit(c, RLX_OP_LogMelBackward, in, 3, NULL, NULL, &dx[0]);
}

/* |z|^2: dz = g z (ComplexNormSqBackward). */
RLX_VJP_DECL(ComplexNormSq) {
  rlx_id in[2] = {x[0], dy};
  return ad_emit(c, RLX_OP_ComplexNormSqBackward, in, 2, NULL, NULL, &dx[0]);
}

/* conj(z): dz = conj(dy). */
RLX_VJP_DECL(Conjugate) { return ad_emit(c, RLX_OP_Conjugate, &dy, 1, NULL, NULL, &dx[0]); }
