/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: recurrent ops (spec ir-special §2). Lstm, Gru, Rnn, SelectiveScan and Mamba2 have no
 * rule: autodiff differentiates through their shared decompositions (src/passes/decompose/
 * recurrent.c), as the spec prescribes. GatedDeltaNet has its own backward op. */
#include "autodiff/ad_internal.h"

/* GatedDeltaNet: one GatedDeltaNetBackward node (packed dq | dk | dv | dg | dbeta | (dstate)),
 * whose pieces are narrowed out and reshaped to the operands' shapes. Without backward ops the
 * node is replaced by its decomposition (the reverse sweep in primitives). */
RLX_VJP_DECL(GatedDeltaNet) {
  const rlx_attrs_GatedDeltaNet *a = &n->attrs.GatedDeltaNet;
  uint32_t n_in = a->carry_state ? 6 : 5;
  rlx_id in[7];
  for (uint32_t i = 0; i < n_in; i++) in[i] = x[i];
  in[n_in] = dy;
  for (uint32_t i = 0; i < n_in; i++) {
    rlx_shape s = ad_shape(c, x[i]);
    if (!rlx_shape_is_static(&s)) return ad_unsupported(c, "operand %u has a symbolic extent", i);
  }
  rlx_attrs_GatedDeltaNetBackward b = {
      .state_size = a->state_size, .carry_state = a->carry_state, .gate_per_channel = a->gate_per_channel};
  rlx_id packed;
  RLX_TRY(ad_emit(c, RLX_OP_GatedDeltaNetBackward, in, n_in + 1, &b, NULL, &packed));
  int64_t off = 0;
  for (uint32_t i = 0; i < n_in; i++) {
    rlx_shape s = ad_shape(c, x[i]);
    int64_t cnt = 1;
    for (uint32_t k = 0; k < s.rank; k++) cnt *= s.dims[k];
    dx[i] = RLX_NO_ID;
    if (c->want[i]) {
      rlx_id t;
      RLX_TRY(ad_narrow(c, packed, 0, off, cnt, &t));
      RLX_TRY(ad_reshape(c, t, &s, &dx[i]));
    }
    off += cnt;
  }
  return RLX_OK;
}
