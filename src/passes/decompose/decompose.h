/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions: one rlx_decompose_<Op> per op kind that can be rewritten into other ops,
 * plus the small emit helpers they are written with. Every helper appends nodes through the typed
 * builders, so shapes are inferred and checked as the decomposition is built.
 *
 * Conventions:
 *  - a decomposition returns RLX_ERR_UNSUPPORTED (with a message saying why) when this particular
 *    node cannot be rewritten (symbolic extents it needs, an unbounded While, ...); legalize then
 *    keeps the node and reports it if no backend claims it. Any other error is a real failure;
 *  - operands arrive already mapped into `dst` (`in[i]`); bodies of `n` live in `src`. */
#ifndef RLX_DECOMPOSE_H
#define RLX_DECOMPOSE_H

#include "rlx/build.h"
#include "passes/passes.h"

/* ---- the decompositions (one file per family) ---- */
#define RLX_DECOMPOSE_DECL(N) \
  rlx_status rlx_decompose_##N(rlx_graph *dst, const rlx_graph *src, const rlx_node *n, const rlx_id *in, rlx_id *out)
/* elementwise.c */
RLX_DECOMPOSE_DECL(Fma);
RLX_DECOMPOSE_DECL(Clamp);
RLX_DECOMPOSE_DECL(FakeQuantize);
/* shape.c */
RLX_DECOMPOSE_DECL(Slice);
RLX_DECOMPOSE_DECL(Pad);
RLX_DECOMPOSE_DECL(Tile);
RLX_DECOMPOSE_DECL(Trilu);
RLX_DECOMPOSE_DECL(Roll);
RLX_DECOMPOSE_DECL(KvAppend);
RLX_DECOMPOSE_DECL(ResizeNearest2x);
/* reduce.c */
RLX_DECOMPOSE_DECL(CumProd);
RLX_DECOMPOSE_DECL(CumMax);
RLX_DECOMPOSE_DECL(Histogram);
/* linalg.c */
RLX_DECOMPOSE_DECL(DotGeneral);
/* norm.c */
RLX_DECOMPOSE_DECL(GroupNorm);
RLX_DECOMPOSE_DECL(BatchNormInference);
RLX_DECOMPOSE_DECL(AdaLayerNorm);
RLX_DECOMPOSE_DECL(GatedResidual);
/* attention.c */
RLX_DECOMPOSE_DECL(AxialRope2d);
RLX_DECOMPOSE_DECL(FusedAttentionBlock);
RLX_DECOMPOSE_DECL(FusedTransformerLayer);
/* conv.c */
RLX_DECOMPOSE_DECL(ConvTranspose2d);
RLX_DECOMPOSE_DECL(FusedConvBiasAct);
/* fused.c */
RLX_DECOMPOSE_DECL(FusedSwiGLU);
RLX_DECOMPOSE_DECL(FusedMatMulBiasAct);
RLX_DECOMPOSE_DECL(FusedMatMulResidual);
RLX_DECOMPOSE_DECL(FusedResidualLN);
RLX_DECOMPOSE_DECL(FusedResidualRmsNorm);
RLX_DECOMPOSE_DECL(LoraMatMul);
/* region.c */
RLX_DECOMPOSE_DECL(ElementwiseRegion);
RLX_DECOMPOSE_DECL(TransformRegion);
RLX_DECOMPOSE_DECL(BatchElementwiseRegion);
/* control.c */
RLX_DECOMPOSE_DECL(If);
RLX_DECOMPOSE_DECL(While);
RLX_DECOMPOSE_DECL(Scan);
RLX_DECOMPOSE_DECL(CustomFn);
/* backward_*.c */
RLX_DECOMPOSE_DECL(ReluBackward);
RLX_DECOMPOSE_DECL(ActivationBackward);
RLX_DECOMPOSE_DECL(SoftmaxCrossEntropy);
RLX_DECOMPOSE_DECL(SoftmaxCrossEntropyWithLogits);
RLX_DECOMPOSE_DECL(SoftmaxCrossEntropyBackward);
RLX_DECOMPOSE_DECL(AttentionBackward);
RLX_DECOMPOSE_DECL(AttentionBackwardAll);
RLX_DECOMPOSE_DECL(RopeBackward);
RLX_DECOMPOSE_DECL(LayerNormBackwardInput);
RLX_DECOMPOSE_DECL(LayerNormBackwardGamma);
RLX_DECOMPOSE_DECL(RmsNormBackwardInput);
RLX_DECOMPOSE_DECL(RmsNormBackwardGamma);
RLX_DECOMPOSE_DECL(RmsNormBackwardBeta);
RLX_DECOMPOSE_DECL(GroupNormBackwardInput);
RLX_DECOMPOSE_DECL(GroupNormBackwardGamma);
RLX_DECOMPOSE_DECL(GroupNormBackwardBeta);
RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardInput);
RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardGamma);
RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardBeta);
RLX_DECOMPOSE_DECL(AdaLayerNormBackward);
RLX_DECOMPOSE_DECL(GatedResidualBackward);
RLX_DECOMPOSE_DECL(Conv2dBackwardInput);
RLX_DECOMPOSE_DECL(Conv2dBackwardWeight);
RLX_DECOMPOSE_DECL(Conv3dBackwardInput);
RLX_DECOMPOSE_DECL(Conv3dBackwardWeight);
RLX_DECOMPOSE_DECL(MaxPool2dBackward);
RLX_DECOMPOSE_DECL(MaxPool3dBackward);
RLX_DECOMPOSE_DECL(CumsumBackward);
RLX_DECOMPOSE_DECL(GatherBackward);
RLX_DECOMPOSE_DECL(ScanBackward);
RLX_DECOMPOSE_DECL(ScanBackwardXs);
/* spd.c (issue 11: SPD / eigen) */
RLX_DECOMPOSE_DECL(BiMap);
/* quant.c (quantization family) */
RLX_DECOMPOSE_DECL(FakeQuantizeBackward);
RLX_DECOMPOSE_DECL(DequantMatMul);
RLX_DECOMPOSE_DECL(ScaledGroupedMatMul);
RLX_DECOMPOSE_DECL(SynthReconstruct);
RLX_DECOMPOSE_DECL(SynthMatMul);
RLX_DECOMPOSE_DECL(SynthMatMulBackward);
RLX_DECOMPOSE_DECL(SplineActivation);
RLX_DECOMPOSE_DECL(SplineActivationBackwardX);
RLX_DECOMPOSE_DECL(SplineActivationBackwardCoeff);

/* ---- sequence models and signal ops (issue 11 items 2-3) ---- */
/* recurrent.c */
RLX_DECOMPOSE_DECL(Lstm);
RLX_DECOMPOSE_DECL(Gru);
RLX_DECOMPOSE_DECL(Rnn);
RLX_DECOMPOSE_DECL(SelectiveScan);
RLX_DECOMPOSE_DECL(Mamba2);
RLX_DECOMPOSE_DECL(GatedDeltaNet);
RLX_DECOMPOSE_DECL(GatedDeltaNetBackward);
/* signal.c */
RLX_DECOMPOSE_DECL(PartitionedConv);
RLX_DECOMPOSE_DECL(ComplexNormSqBackward);
/* ---- end of sequence models and signal ops ---- */

/* ---- emit helpers (emit.c) ---- */

/* Shape of node x of g (x must exist), by value (node storage moves as nodes are added). */
rlx_shape dc_shape(const rlx_graph *g, rlx_id x);
bool dc_all_static(const rlx_shape *s);

/* RLX_ERR_UNSUPPORTED "cannot be decomposed: <why>" (legalize prefixes the node). */
rlx_status dc_unsupported(const rlx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The generic builders are the public layer of rlx/build.h; these names adapt it to the
 * decompositions' call style (no logic of their own). */
static inline rlx_status dc_const_fill(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, double v,
                                       rlx_id *out) {
  return rlx_fill(g, t, rank, dims, v, out);
}
static inline rlx_status dc_const_values(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, const double *v,
                                         rlx_id *out) {
  return rlx_values(g, t, rank, dims, v, out);
}
static inline rlx_status dc_scalar(rlx_graph *g, rlx_dtype t, double v, rlx_id *out) {
  return rlx_scalar(g, t, v, out);
}
static inline rlx_status dc_const_i64(rlx_graph *g, uint32_t n, const int64_t *v, rlx_id *out) {
  return rlx_i64s(g, n, v, out);
}
static inline rlx_status dc_bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_binary(g, op, a, b, out);
}
static inline rlx_status dc_bin_scalar(rlx_graph *g, rlx_binop op, rlx_id x, double v, rlx_id *out) {
  return rlx_binary_scalar(g, op, x, v, out);
}
static inline rlx_status dc_act(rlx_graph *g, rlx_act act, rlx_id x, rlx_id *out) {
  return rlx_activation(g, act, x, out);
}
static inline rlx_status dc_cmp(rlx_graph *g, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_compare(g, op, a, b, out);
}
static inline rlx_status dc_where(rlx_graph *g, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out) {
  return rlx_where(g, cond, t, f, out);
}
static inline rlx_status dc_cast(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out) {
  return rlx_cast_to(g, x, to, out);
}
static inline rlx_status dc_narrow(rlx_graph *g, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out) {
  return rlx_narrow(g, x, axis, start, len, out);
}
static inline rlx_status dc_concat(rlx_graph *g, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out) {
  return rlx_concat(g, xs, n, axis, out);
}
static inline rlx_status dc_reshape(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  return rlx_reshape_dims(g, x, rank, dims, out);
}
static inline rlx_status dc_expand(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  return rlx_expand_dims(g, x, rank, dims, out);
}
static inline rlx_status dc_transpose(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out) {
  return rlx_permute(g, x, rank, perm, out);
}
static inline rlx_status dc_reverse(rlx_graph *g, rlx_id x, uint32_t n_axes, const int64_t *axes, rlx_id *out) {
  return rlx_reverse_axes(g, x, n_axes, axes, out);
}
static inline rlx_status dc_gather(rlx_graph *g, rlx_id table, rlx_id idx, uint32_t axis, rlx_id *out) {
  return rlx_gather_axis(g, table, idx, axis, out);
}
static inline rlx_status dc_reduce(rlx_graph *g, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes,
                                   bool keep_dim, rlx_id *out) {
  return rlx_reduce_axes(g, op, x, n_axes, axes, keep_dim, out);
}
static inline rlx_status dc_matmul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_matmul(g, a, b, out); }
static inline rlx_status dc_unsqueeze(rlx_graph *g, rlx_id x, uint32_t pos, rlx_id *out) {
  return rlx_unsqueeze(g, x, pos, out);
}

rlx_status dc_channel_vector(rlx_graph *g, rlx_id v, uint32_t trailing, rlx_id *out);

/* Nearest-neighbour 2x upsampling of the last two axes (rank 2..6) by Reshape + Expand +
 * Reshape (shape.c); dc_resize2x emits a ResizeNearest2x node instead when x is 4-D. */
rlx_status dc_nearest2x(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id *out);
rlx_status dc_resize2x(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id *out);

/* Normalises an i64 axis attribute against `rank`; RLX_ERR_INVALID_ARG naming `attr` if invalid. */
rlx_status dc_axis(const rlx_node *n, const char *attr, int64_t axis, uint32_t rank, uint32_t *out);

/* ---- pass plumbing shared by rebuild, inline, legalize and simplify (rebuild.c) ---- */

/* Appends a copy of node `n` (of any graph) to dst with operands `inputs` (dst ids): attributes
 * deep-copied, bodies cloned as children of dst, name kept. With `reinfer`, the output shape is
 * inferred again from the new operands (n's declared shape is only the fallback of rules that
 * trust it); otherwise n's declared shape is kept as is. */
rlx_status rlx_pass_copy_node(rlx_graph *dst, const rlx_node *n, const rlx_id *inputs, bool reinfer, rlx_id *out);
/* Like rlx_pass_copy_node but with the body fields replaced by `bodies` (one per graph field of the
 * op, in field order; already children of dst; NULL entries keep "no body" for optional fields). */
rlx_status rlx_pass_copy_node_bodies(rlx_graph *dst, const rlx_node *n, const rlx_id *inputs, rlx_graph *const *bodies,
                                     rlx_id *out);
/* Number of graph fields (bodies) of op, and a pointer to the i-th one inside `attrs`. */
uint32_t rlx_pass_body_count(rlx_op op);
rlx_graph **rlx_pass_body_slot(rlx_op op, rlx_attrs *attrs, uint32_t i);
const char *rlx_pass_body_name(rlx_op op, uint32_t i);

#endif
