/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Unfusing the fused matmul / residual / gated-MLP ops into their primitive chains
 * (ir-core §10.12). */
#include "passes/decompose/decompose.h"

/* FusedSwiGLU on [.., 2N]: by default the low half is `up` and the high half the gate;
 * gate_first swaps them. out = silu(gate) * up, then the optional cast. */
RLX_DECOMPOSE_DECL(FusedSwiGLU) {
  (void)src;
  const rlx_attrs_FusedSwiGLU *a = &n->attrs.FusedSwiGLU;
  rlx_shape xs = dc_shape(dst, in[0]);
  if (xs.rank == 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "FusedSwiGLU needs rank >= 1");
  uint32_t last = xs.rank - 1u;
  rlx_dim w = xs.dims[last];
  if (w < 0) return dc_unsupported(n, "the last axis is symbolic");
  if (w % 2) return rlx_errorf(RLX_ERR_INVALID_ARG, "FusedSwiGLU: the last axis (%lld) must be even", (long long)w);
  rlx_id lo, hi, gate, up, y;
  RLX_TRY(rlx_narrow(dst, in[0], last, 0, w / 2, &lo));
  RLX_TRY(rlx_narrow(dst, in[0], last, w / 2, w / 2, &hi));
  gate = a->gate_first ? lo : hi;
  up = a->gate_first ? hi : lo;
  RLX_TRY(rlx_activation(dst, RLX_ACT_SILU, gate, &gate));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, gate, up, &y));
  if (a->cast_to.has) RLX_TRY(rlx_cast_to(dst, y, (rlx_dtype)a->cast_to.v, &y));
  *out = y;
  return RLX_OK;
}

/* act(x @ w + bias), bias [N] broadcasting over the rows. */
RLX_DECOMPOSE_DECL(FusedMatMulBiasAct) {
  (void)src;
  rlx_id y;
  RLX_TRY(rlx_matmul(dst, in[0], in[1], &y));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, y, in[2], &y));
  if (n->attrs.FusedMatMulBiasAct.activation >= 0)
    RLX_TRY(rlx_activation(dst, (rlx_act)n->attrs.FusedMatMulBiasAct.activation, y, &y));
  *out = y;
  return RLX_OK;
}

/* a @ b + residual. */
RLX_DECOMPOSE_DECL(FusedMatMulResidual) {
  (void)src;
  (void)n;
  rlx_id y;
  RLX_TRY(rlx_matmul(dst, in[0], in[1], &y));
  return rlx_binary(dst, RLX_BINOP_ADD, y, in[2], out);
}

/* x + res [+ bias]; operands x, res, [bias], gamma, beta. Writes the sum and the gamma index. */
static rlx_status residual_sum(rlx_graph *dst, const rlx_node *n, bool has_bias, const rlx_id *in, rlx_id *sum,
                               uint32_t *gamma_at) {
  uint32_t want = has_bias ? 5u : 4u;
  if (n->n_inputs != want)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: has %u operands, has_bias needs %u", rlx_op_name(n->op), n->n_inputs,
                      want);
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, in[0], in[1], sum));
  if (has_bias) RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, *sum, in[2], sum));
  *gamma_at = has_bias ? 3u : 2u;
  return RLX_OK;
}

/* LayerNorm(x + res [+ bias]) over the last axis. */
RLX_DECOMPOSE_DECL(FusedResidualLN) {
  (void)src;
  const rlx_attrs_FusedResidualLN *a = &n->attrs.FusedResidualLN;
  rlx_id h;
  uint32_t gi = 0;
  RLX_TRY(residual_sum(dst, n, a->has_bias, in, &h, &gi));
  rlx_attrs_LayerNorm ln = {.axis = -1, .eps = a->eps};
  rlx_id li[3] = {h, in[gi], in[gi + 1]};
  return rlx_build_LayerNorm(dst, li, 3, &ln, NULL, out);
}

/* RmsNorm(x + res [+ bias]) over the last axis (RmsNorm adds its beta). */
RLX_DECOMPOSE_DECL(FusedResidualRmsNorm) {
  (void)src;
  const rlx_attrs_FusedResidualRmsNorm *a = &n->attrs.FusedResidualRmsNorm;
  rlx_id h;
  uint32_t gi = 0;
  RLX_TRY(residual_sum(dst, n, a->has_bias, in, &h, &gi));
  rlx_attrs_RmsNorm rn = {.axis = -1, .eps = a->eps};
  rlx_id ri[3] = {h, in[gi], in[gi + 1]};
  return rlx_build_RmsNorm(dst, ri, 3, &rn, NULL, out);
}

/* x @ W + scale * ((x @ A) @ B). */
RLX_DECOMPOSE_DECL(LoraMatMul) {
  (void)src;
  rlx_id xw, xa, xab;
  RLX_TRY(rlx_matmul(dst, in[0], in[1], &xw));
  RLX_TRY(rlx_matmul(dst, in[0], in[2], &xa));
  RLX_TRY(rlx_matmul(dst, xa, in[3], &xab));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MUL, xab, n->attrs.LoraMatMul.scale, &xab));
  return rlx_binary(dst, RLX_BINOP_ADD, xw, xab, out);
}
