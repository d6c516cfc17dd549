/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules of the quantization family (spec ir-special §1.4, §8):
 *   Quantize          straight-through: dx = dy (cast to x's dtype);
 *   ScaledQuantize    straight-through: dx = dy; the scale gets none;
 *   FakeQuantizeLSQ   dx = FakeQuantizeLSQBackwardX, dscale = FakeQuantizeLSQBackwardScale;
 *   Dequantize, QMatMul, QConv2d, ScaledMatMul (codes and scales): integer / code operands get no
 *                     gradient (the framework's rule for integer tensors; the spec's STE would cast
 *                     float gradients into i8 / u8 codes, which truncates them). ScaledMatMul's
 *                     bias gets dbias = sum over rows of dy;
 *   DequantGroupedMatMul  dx = GroupedMatMul(dy, W^T) with W = DequantMoEWeights of the packed
 *                     experts ([E, K, N], transposed to [E, N, K]); the packed bytes get none;
 *   SynthMatMul       dx = SynthMatMulBackward{Dx}, dcodebook = SynthMatMulBackward{Codebook};
 *   SplineActivation  dx = SplineActivationBackwardX, dcoeffs = SplineActivationBackwardCoeff.
 * DequantMatMul, ScaledGroupedMatMul and SynthReconstruct have no rule: autodiff differentiates
 * their shared decompositions (passes/decompose/quant.c). */
#include "autodiff/ad_internal.h"

RLX_VJP_DECL(Quantize) {
  if (!c->want[0]) return RLX_OK;
  return ad_cast(c, dy, (rlx_dtype)ad_shape(c, x[0]).dtype, &dx[0]);
}

RLX_VJP_DECL(ScaledQuantize) {
  if (!c->want[0]) return RLX_OK;
  return ad_cast(c, dy, (rlx_dtype)ad_shape(c, x[0]).dtype, &dx[0]);
}

RLX_VJP_DECL(Dequantize) {
  (void)c;
  (void)dy;
  dx[0] = RLX_NO_ID; /* i8 codes */
  return RLX_OK;
}

RLX_VJP_DECL(QMatMul) {
  (void)c;
  (void)dy;
  for (int i = 0; i < 3; i++) dx[i] = RLX_NO_ID; /* i8 / i32 operands */
  return RLX_OK;
}

RLX_VJP_DECL(QConv2d) {
  (void)c;
  (void)dy;
  for (int i = 0; i < 3; i++) dx[i] = RLX_NO_ID; /* i8 / i32 operands */
  return RLX_OK;
}

RLX_VJP_DECL(ScaledMatMul) {
  for (uint32_t i = 0; i < n->n_inputs; i++) dx[i] = RLX_NO_ID;
  if (n->attrs.ScaledMatMul.has_bias && c->want[4]) {
    int64_t ax0[1] = {0};
    rlx_id g;
    RLX_TRY(ad_reduce(c, RLX_REDUCE_SUM, dy, 1, ax0, false, &g));
    RLX_TRY(ad_cast(c, g, (rlx_dtype)ad_shape(c, x[4]).dtype, &dx[4]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(FakeQuantizeLSQ) {
  const rlx_attrs_FakeQuantizeLSQ *a = &n->attrs.FakeQuantizeLSQ;
  rlx_id in[3] = {x[0], x[1], dy};
  if (c->want[0]) {
    rlx_attrs_FakeQuantizeLSQBackwardX ax = {.bits = a->bits, .axis = a->axis};
    RLX_TRY(ad_emit(c, RLX_OP_FakeQuantizeLSQBackwardX, in, 3, &ax, NULL, &dx[0]));
  }
  if (c->want[1]) {
    rlx_attrs_FakeQuantizeLSQBackwardScale as = {.bits = a->bits, .axis = a->axis};
    RLX_TRY(ad_emit(c, RLX_OP_FakeQuantizeLSQBackwardScale, in, 3, &as, NULL, &dx[1]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(DequantGroupedMatMul) {
  const rlx_attrs_DequantGroupedMatMul *a = &n->attrs.DequantGroupedMatMul;
  dx[1] = dx[2] = RLX_NO_ID;
  if (!c->want[0]) return RLX_OK;
  rlx_shape xs = ad_shape(c, x[0]), ws = ad_shape(c, x[1]);
  int64_t K = xs.dims[1], N = n->shape.dims[1], be = 1, bb = 1, bytes = 1;
  static const struct {
    int32_t s;
    int64_t e, b;
  } geo[] = {
      {RLX_QUANT_SCHEME_GGUF_Q4K, 256, 144},   {RLX_QUANT_SCHEME_GGUF_Q5K, 256, 176},
      {RLX_QUANT_SCHEME_GGUF_Q6K, 256, 210},   {RLX_QUANT_SCHEME_GGUF_Q8K, 256, 292},
      {RLX_QUANT_SCHEME_GGUF_Q2K, 256, 84},    {RLX_QUANT_SCHEME_GGUF_Q3K, 256, 110},
      {RLX_QUANT_SCHEME_GGUF_IQ4NL, 32, 18},   {RLX_QUANT_SCHEME_GGUF_IQ4XS, 256, 136},
      {RLX_QUANT_SCHEME_GGUF_TQ1_0, 256, 54},  {RLX_QUANT_SCHEME_GGUF_TQ2_0, 256, 66},
      {RLX_QUANT_SCHEME_GGUF_MXFP4, 32, 17},   {RLX_QUANT_SCHEME_GGUF_NVFP4, 16, 9},
      {RLX_QUANT_SCHEME_GGUF_IQ2XXS, 256, 66}, {RLX_QUANT_SCHEME_GGUF_IQ2XS, 256, 74},
      {RLX_QUANT_SCHEME_GGUF_IQ2S, 256, 82},   {RLX_QUANT_SCHEME_GGUF_IQ3XXS, 256, 98},
      {RLX_QUANT_SCHEME_GGUF_IQ3S, 256, 110},  {RLX_QUANT_SCHEME_GGUF_IQ1S, 256, 50},
      {RLX_QUANT_SCHEME_GGUF_IQ1M, 256, 56},   {RLX_QUANT_SCHEME_GGUF_Q4_0, 32, 18},
      {RLX_QUANT_SCHEME_GGUF_Q8_0, 32, 34},    {RLX_QUANT_SCHEME_GGUF_Q4_1, 32, 20},
      {RLX_QUANT_SCHEME_GGUF_Q5_0, 32, 22},    {RLX_QUANT_SCHEME_GGUF_Q5_1, 32, 24},
      {RLX_QUANT_SCHEME_GGUF_Q1_0, 128, 18},   {RLX_QUANT_SCHEME_GGUF_Q2_0, 128, 34},
      {RLX_QUANT_SCHEME_GGUF_FV5, 256, 104},   {RLX_QUANT_SCHEME_GGUF_FV5B, 256, 260},
  };
  bool found = false;
  for (size_t i = 0; i < sizeof geo / sizeof geo[0]; i++)
    if (geo[i].s == a->scheme) be = geo[i].e, bb = geo[i].b, found = true;
  for (uint32_t i = 0; i < ws.rank; i++) bytes *= ws.dims[i];
  if (!found || K < 0 || N <= 0 || bytes < 0 || K % be)
    return ad_unsupported(c, "DequantGroupedMatMul needs a GGUF scheme and static shapes to differentiate");
  int64_t slab = N * (K / be) * bb, E = slab ? bytes / slab : 0;
  rlx_shape d3 = {.dtype = RLX_F32, .rank = 3, .dims = {E, K, N}};
  rlx_attrs_DequantMoEWeights ma = {
      .scheme = a->scheme, .block_size = a->block_size, .bits = a->bits, .group_size = a->group_size};
  rlx_id w, g, in[3];
  RLX_TRY(rlx_graph_add(c->dst, RLX_OP_DequantMoEWeights, &x[1], 1, &ma, &d3, NULL, &w));
  RLX_TRY(ad_mT(c, w, &w)); /* [E, N, K] */
  RLX_TRY(ad_cast(c, dy, RLX_F32, &g));
  in[0] = g, in[1] = w, in[2] = x[2];
  RLX_TRY(rlx_build_GroupedMatMul(c->dst, in, 3, NULL, &g));
  return ad_cast(c, g, (rlx_dtype)xs.dtype, &dx[0]);
}

RLX_VJP_DECL(SynthMatMul) {
  const rlx_attrs_SynthMatMul *a = &n->attrs.SynthMatMul;
  dx[1] = RLX_NO_ID;
  rlx_id in[4] = {x[0], x[1], x[2], dy};
  if (c->want[0]) {
    rlx_attrs_SynthMatMulBackward b = {
        .kind = a->kind, .entry_dim = a->entry_dim, .num_entries = a->num_entries, .wrt = RLX_SYNTH_WRT_DX};
    RLX_TRY(ad_emit(c, RLX_OP_SynthMatMulBackward, in, 4, &b, NULL, &dx[0]));
  }
  if (c->want[2]) {
    rlx_attrs_SynthMatMulBackward b = {
        .kind = a->kind, .entry_dim = a->entry_dim, .num_entries = a->num_entries, .wrt = RLX_SYNTH_WRT_CODEBOOK};
    RLX_TRY(ad_emit(c, RLX_OP_SynthMatMulBackward, in, 4, &b, NULL, &dx[2]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(SplineActivation) {
  const rlx_attrs_SplineActivation *a = &n->attrs.SplineActivation;
  rlx_id in[3] = {x[0], x[1], dy};
  if (c->want[0]) {
    rlx_attrs_SplineActivationBackwardX b = {
        .num_knots = a->num_knots, .grid_min = a->grid_min, .grid_max = a->grid_max};
    RLX_TRY(ad_emit(c, RLX_OP_SplineActivationBackwardX, in, 3, &b, NULL, &dx[0]));
  }
  if (c->want[1]) {
    rlx_attrs_SplineActivationBackwardCoeff b = {
        .num_knots = a->num_knots, .grid_min = a->grid_min, .grid_max = a->grid_max};
    RLX_TRY(ad_emit(c, RLX_OP_SplineActivationBackwardCoeff, in, 3, &b, NULL, &dx[1]));
  }
  return RLX_OK;
}
