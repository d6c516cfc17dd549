/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The VJP rule table: [op kind] = rule (see ad_internal.h). Kinds without an entry are either
 * decomposed before differentiation (fused ops, regions, If/While, DotGeneral, CumMax, ...: see
 * wants_decomposition in grad.c) or have no gradient rule at all, which is an error when a
 * gradient reaches them. */
#include "autodiff/ad_internal.h"

const rlx_vjp_fn rlx_vjp_table[RLX_OP_COUNT] = {
    /* vjp/elementwise.c */
    [RLX_OP_Activation] = rlx_vjp_Activation,
    [RLX_OP_Cast] = rlx_vjp_Cast,
    [RLX_OP_StopGradient] = rlx_vjp_StopGradient,
    [RLX_OP_Binary] = rlx_vjp_Binary,
    [RLX_OP_Where] = rlx_vjp_Where,
    [RLX_OP_Fma] = rlx_vjp_Fma,
    [RLX_OP_Clamp] = rlx_vjp_Clamp,
    [RLX_OP_ReluBackward] = rlx_vjp_ReluBackward,
    [RLX_OP_FakeQuantize] = rlx_vjp_FakeQuantize,
    /* vjp/shape.c */
    [RLX_OP_Reshape] = rlx_vjp_Reshape,
    [RLX_OP_Transpose] = rlx_vjp_Transpose,
    [RLX_OP_Narrow] = rlx_vjp_Narrow,
    [RLX_OP_Concat] = rlx_vjp_Concat,
    [RLX_OP_Expand] = rlx_vjp_Expand,
    [RLX_OP_Gather] = rlx_vjp_Gather,
    [RLX_OP_Reverse] = rlx_vjp_Reverse,
    [RLX_OP_Pad] = rlx_vjp_Pad,
    [RLX_OP_Slice] = rlx_vjp_Slice,
    [RLX_OP_Tile] = rlx_vjp_Tile,
    [RLX_OP_Trilu] = rlx_vjp_Trilu,
    [RLX_OP_Roll] = rlx_vjp_Roll,
    [RLX_OP_KvAppend] = rlx_vjp_KvAppend,
    [RLX_OP_GatherBackward] = rlx_vjp_GatherBackward,
    /* vjp/reduce.c */
    [RLX_OP_Reduce] = rlx_vjp_Reduce,
    [RLX_OP_Softmax] = rlx_vjp_Softmax,
    [RLX_OP_Cumsum] = rlx_vjp_Cumsum,
    [RLX_OP_CumProd] = rlx_vjp_CumProd,
    [RLX_OP_Sort] = rlx_vjp_Sort,
    [RLX_OP_CumsumBackward] = rlx_vjp_CumsumBackward,
    /* vjp/linalg.c */
    [RLX_OP_MatMul] = rlx_vjp_MatMul,
    [RLX_OP_DenseSolve] = rlx_vjp_DenseSolve,
    [RLX_OP_BatchedDenseSolve] = rlx_vjp_BatchedDenseSolve,
    [RLX_OP_Det] = rlx_vjp_Det,
    [RLX_OP_LogDet] = rlx_vjp_LogDet,
    [RLX_OP_Cholesky] = rlx_vjp_Cholesky,
    [RLX_OP_TriangularSolve] = rlx_vjp_TriangularSolve,
    [RLX_OP_GroupedMatMul] = rlx_vjp_GroupedMatMul,
    [RLX_OP_Svd] = rlx_vjp_Svd,
    [RLX_OP_Qr] = rlx_vjp_Qr,
    /* vjp/norm.c */
    [RLX_OP_LayerNorm] = rlx_vjp_LayerNorm,
    [RLX_OP_RmsNorm] = rlx_vjp_RmsNorm,
    [RLX_OP_GroupNorm] = rlx_vjp_GroupNorm,
    [RLX_OP_BatchNormInference] = rlx_vjp_BatchNormInference,
    [RLX_OP_LayerNorm2d] = rlx_vjp_LayerNorm2d,
    [RLX_OP_AdaLayerNorm] = rlx_vjp_AdaLayerNorm,
    [RLX_OP_GatedResidual] = rlx_vjp_GatedResidual,
    [RLX_OP_BatchNormInferenceBackwardBeta] = rlx_vjp_BatchNormInferenceBackwardBeta,
    /* vjp/attention.c */
    [RLX_OP_Attention] = rlx_vjp_Attention,
    [RLX_OP_Rope] = rlx_vjp_Rope,
    [RLX_OP_RopeBackward] = rlx_vjp_RopeBackward,
    [RLX_OP_SoftmaxCrossEntropy] = rlx_vjp_SoftmaxCrossEntropy,
    [RLX_OP_SoftmaxCrossEntropyWithLogits] = rlx_vjp_SoftmaxCrossEntropyWithLogits,
    /* vjp/conv.c */
    [RLX_OP_Conv] = rlx_vjp_Conv,
    [RLX_OP_Conv3d] = rlx_vjp_Conv3d,
    [RLX_OP_ConvTranspose2d] = rlx_vjp_ConvTranspose2d,
    [RLX_OP_ConvTranspose3d] = rlx_vjp_ConvTranspose3d,
    [RLX_OP_Pool] = rlx_vjp_Pool,
    [RLX_OP_ResizeNearest2x] = rlx_vjp_ResizeNearest2x,
    [RLX_OP_Interpolate3d] = rlx_vjp_Interpolate3d,
    [RLX_OP_Im2Col] = rlx_vjp_Im2Col,
    [RLX_OP_Conv2dBackwardInput] = rlx_vjp_Conv2dBackwardInput,
    [RLX_OP_Conv2dBackwardWeight] = rlx_vjp_Conv2dBackwardWeight,
    [RLX_OP_Conv3dBackwardInput] = rlx_vjp_Conv3dBackwardInput,
    [RLX_OP_Conv3dBackwardWeight] = rlx_vjp_Conv3dBackwardWeight,
    /* vjp/scatter.c */
    [RLX_OP_ScatterAdd] = rlx_vjp_ScatterAdd,
    [RLX_OP_GatherElements] = rlx_vjp_GatherElements,
    [RLX_OP_GatherNd] = rlx_vjp_GatherNd,
    [RLX_OP_ScatterElements] = rlx_vjp_ScatterElements,
    [RLX_OP_ScatterNd] = rlx_vjp_ScatterNd,
    /* vjp/control.c */
    [RLX_OP_Scan] = rlx_vjp_Scan,
    [RLX_OP_CustomFn] = rlx_vjp_CustomFn,
    /* vjp/signal.c */
    [RLX_OP_Fft] = rlx_vjp_Fft,
    /* ---- vjp/custom.c (issue 11: the Custom op registry) ---- */
    [RLX_OP_Custom] = rlx_vjp_Custom,
    /* ---- vjp/splat.c (issue 11: Gaussian splatting) ---- */
    [RLX_OP_GaussianSplatRender] = rlx_vjp_GaussianSplatRender,
    /* ---- vjp/spd.c (issue 11: SPD / eigen) ---- */
    [RLX_OP_Eigh] = rlx_vjp_Eigh,
    [RLX_OP_EighBatch] = rlx_vjp_EighBatch,
    [RLX_OP_ReEig] = rlx_vjp_ReEig,
    [RLX_OP_LogEig] = rlx_vjp_LogEig,
    [RLX_OP_SpdBatchNorm] = rlx_vjp_SpdBatchNorm,
    [RLX_OP_SpdLogMap] = rlx_vjp_SpdLogMap,
    [RLX_OP_SpdExpMap] = rlx_vjp_SpdExpMap,
    [RLX_OP_SpdParallelTransport] = rlx_vjp_SpdParallelTransport,
    [RLX_OP_SpdMatrixFnBatch] = rlx_vjp_SpdMatrixFnBatch,
    /* vjp/quant.c (quantization family) */
    [RLX_OP_Quantize] = rlx_vjp_Quantize,
    [RLX_OP_Dequantize] = rlx_vjp_Dequantize,
    [RLX_OP_ScaledQuantize] = rlx_vjp_ScaledQuantize,
    [RLX_OP_QMatMul] = rlx_vjp_QMatMul,
    [RLX_OP_QConv2d] = rlx_vjp_QConv2d,
    [RLX_OP_ScaledMatMul] = rlx_vjp_ScaledMatMul,
    [RLX_OP_FakeQuantizeLSQ] = rlx_vjp_FakeQuantizeLSQ,
    [RLX_OP_DequantGroupedMatMul] = rlx_vjp_DequantGroupedMatMul,
    [RLX_OP_SynthMatMul] = rlx_vjp_SynthMatMul,
    [RLX_OP_SplineActivation] = rlx_vjp_SplineActivation,
    /* ---- sequence models and signal ops (issue 11 items 2-3) ---- */
    /* vjp/recurrent.c */
    [RLX_OP_GatedDeltaNet] = rlx_vjp_GatedDeltaNet,
    /* vjp/signal_ops.c */
    [RLX_OP_LogMel] = rlx_vjp_LogMel,
    [RLX_OP_ComplexNormSq] = rlx_vjp_ComplexNormSq,
    [RLX_OP_Conjugate] = rlx_vjp_Conjugate,
    /* ---- end of sequence models and signal ops ---- */
};
