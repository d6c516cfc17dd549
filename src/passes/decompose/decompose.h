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

/* The generic builders (rlx_binary, rlx_narrow, rlx_concat, ...) are the public layer of rlx/build.h,
 * shared with autodiff and the importers. */

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
