/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shared decomposition table: [op kind] = rewrite into other ops (see decompose.h). Kinds
 * without an entry have no shared decomposition; a backend must claim them. */
#include "passes/decompose/decompose.h"

const rlx_decompose_fn rlx_decompose_table[RLX_OP_COUNT] = {
    /* elementwise.c */
    [RLX_OP_Fma] = rlx_decompose_Fma,
    [RLX_OP_Clamp] = rlx_decompose_Clamp,
    [RLX_OP_FakeQuantize] = rlx_decompose_FakeQuantize,
    /* shape.c */
    [RLX_OP_Slice] = rlx_decompose_Slice,
    [RLX_OP_Pad] = rlx_decompose_Pad,
    [RLX_OP_Tile] = rlx_decompose_Tile,
    [RLX_OP_Trilu] = rlx_decompose_Trilu,
    [RLX_OP_Roll] = rlx_decompose_Roll,
    [RLX_OP_KvAppend] = rlx_decompose_KvAppend,
    [RLX_OP_ResizeNearest2x] = rlx_decompose_ResizeNearest2x,
    /* reduce.c */
    [RLX_OP_CumProd] = rlx_decompose_CumProd,
    [RLX_OP_CumMax] = rlx_decompose_CumMax,
    [RLX_OP_Histogram] = rlx_decompose_Histogram,
    /* linalg.c */
    [RLX_OP_DotGeneral] = rlx_decompose_DotGeneral,
    /* norm.c */
    [RLX_OP_GroupNorm] = rlx_decompose_GroupNorm,
    [RLX_OP_BatchNormInference] = rlx_decompose_BatchNormInference,
    [RLX_OP_AdaLayerNorm] = rlx_decompose_AdaLayerNorm,
    [RLX_OP_GatedResidual] = rlx_decompose_GatedResidual,
    /* attention.c */
    [RLX_OP_AxialRope2d] = rlx_decompose_AxialRope2d,
    [RLX_OP_FusedAttentionBlock] = rlx_decompose_FusedAttentionBlock,
    [RLX_OP_FusedTransformerLayer] = rlx_decompose_FusedTransformerLayer,
    /* conv.c */
    [RLX_OP_ConvTranspose2d] = rlx_decompose_ConvTranspose2d,
    [RLX_OP_FusedConvBiasAct] = rlx_decompose_FusedConvBiasAct,
    /* fused.c */
    [RLX_OP_FusedSwiGLU] = rlx_decompose_FusedSwiGLU,
    [RLX_OP_FusedMatMulBiasAct] = rlx_decompose_FusedMatMulBiasAct,
    [RLX_OP_FusedMatMulResidual] = rlx_decompose_FusedMatMulResidual,
    [RLX_OP_FusedResidualLN] = rlx_decompose_FusedResidualLN,
    [RLX_OP_FusedResidualRmsNorm] = rlx_decompose_FusedResidualRmsNorm,
    [RLX_OP_LoraMatMul] = rlx_decompose_LoraMatMul,
    /* region.c */
    [RLX_OP_ElementwiseRegion] = rlx_decompose_ElementwiseRegion,
    [RLX_OP_TransformRegion] = rlx_decompose_TransformRegion,
    [RLX_OP_BatchElementwiseRegion] = rlx_decompose_BatchElementwiseRegion,
    /* control.c */
    [RLX_OP_If] = rlx_decompose_If,
    [RLX_OP_While] = rlx_decompose_While,
    [RLX_OP_Scan] = rlx_decompose_Scan,
    [RLX_OP_CustomFn] = rlx_decompose_CustomFn,
    /* backward_*.c */
    [RLX_OP_ReluBackward] = rlx_decompose_ReluBackward,
    [RLX_OP_ActivationBackward] = rlx_decompose_ActivationBackward,
    [RLX_OP_SoftmaxCrossEntropy] = rlx_decompose_SoftmaxCrossEntropy,
    [RLX_OP_SoftmaxCrossEntropyWithLogits] = rlx_decompose_SoftmaxCrossEntropyWithLogits,
    [RLX_OP_SoftmaxCrossEntropyBackward] = rlx_decompose_SoftmaxCrossEntropyBackward,
    [RLX_OP_AttentionBackward] = rlx_decompose_AttentionBackward,
    [RLX_OP_AttentionBackwardAll] = rlx_decompose_AttentionBackwardAll,
    [RLX_OP_RopeBackward] = rlx_decompose_RopeBackward,
    [RLX_OP_LayerNormBackwardInput] = rlx_decompose_LayerNormBackwardInput,
    [RLX_OP_LayerNormBackwardGamma] = rlx_decompose_LayerNormBackwardGamma,
    [RLX_OP_RmsNormBackwardInput] = rlx_decompose_RmsNormBackwardInput,
    [RLX_OP_RmsNormBackwardGamma] = rlx_decompose_RmsNormBackwardGamma,
    [RLX_OP_RmsNormBackwardBeta] = rlx_decompose_RmsNormBackwardBeta,
    [RLX_OP_GroupNormBackwardInput] = rlx_decompose_GroupNormBackwardInput,
    [RLX_OP_GroupNormBackwardGamma] = rlx_decompose_GroupNormBackwardGamma,
    [RLX_OP_GroupNormBackwardBeta] = rlx_decompose_GroupNormBackwardBeta,
    [RLX_OP_BatchNormInferenceBackwardInput] = rlx_decompose_BatchNormInferenceBackwardInput,
    [RLX_OP_BatchNormInferenceBackwardGamma] = rlx_decompose_BatchNormInferenceBackwardGamma,
    [RLX_OP_BatchNormInferenceBackwardBeta] = rlx_decompose_BatchNormInferenceBackwardBeta,
    [RLX_OP_AdaLayerNormBackward] = rlx_decompose_AdaLayerNormBackward,
    [RLX_OP_GatedResidualBackward] = rlx_decompose_GatedResidualBackward,
    [RLX_OP_Conv2dBackwardInput] = rlx_decompose_Conv2dBackwardInput,
    [RLX_OP_Conv2dBackwardWeight] = rlx_decompose_Conv2dBackwardWeight,
    [RLX_OP_Conv3dBackwardInput] = rlx_decompose_Conv3dBackwardInput,
    [RLX_OP_Conv3dBackwardWeight] = rlx_decompose_Conv3dBackwardWeight,
    [RLX_OP_MaxPool2dBackward] = rlx_decompose_MaxPool2dBackward,
    [RLX_OP_MaxPool3dBackward] = rlx_decompose_MaxPool3dBackward,
    [RLX_OP_CumsumBackward] = rlx_decompose_CumsumBackward,
    [RLX_OP_GatherBackward] = rlx_decompose_GatherBackward,
    [RLX_OP_ScanBackward] = rlx_decompose_ScanBackward,
    [RLX_OP_ScanBackwardXs] = rlx_decompose_ScanBackwardXs,
    /* ---- spd.c (issue 11: SPD / eigen) ---- */
    [RLX_OP_BiMap] = rlx_decompose_BiMap,
    /* quant.c (quantization family) */
    [RLX_OP_FakeQuantizeBackward] = rlx_decompose_FakeQuantizeBackward,
    [RLX_OP_DequantMatMul] = rlx_decompose_DequantMatMul,
    [RLX_OP_ScaledGroupedMatMul] = rlx_decompose_ScaledGroupedMatMul,
    [RLX_OP_SynthReconstruct] = rlx_decompose_SynthReconstruct,
    [RLX_OP_SynthMatMul] = rlx_decompose_SynthMatMul,
    [RLX_OP_SynthMatMulBackward] = rlx_decompose_SynthMatMulBackward,
    [RLX_OP_SplineActivation] = rlx_decompose_SplineActivation,
    [RLX_OP_SplineActivationBackwardX] = rlx_decompose_SplineActivationBackwardX,
    [RLX_OP_SplineActivationBackwardCoeff] = rlx_decompose_SplineActivationBackwardCoeff,
    /* ---- sequence models and signal ops (issue 11 items 2-3) ---- */
    /* recurrent.c */
    [RLX_OP_Lstm] = rlx_decompose_Lstm,
    [RLX_OP_Gru] = rlx_decompose_Gru,
    [RLX_OP_Rnn] = rlx_decompose_Rnn,
    [RLX_OP_SelectiveScan] = rlx_decompose_SelectiveScan,
    [RLX_OP_Mamba2] = rlx_decompose_Mamba2,
    [RLX_OP_GatedDeltaNet] = rlx_decompose_GatedDeltaNet,
    [RLX_OP_GatedDeltaNetBackward] = rlx_decompose_GatedDeltaNetBackward,
    /* signal.c */
    [RLX_OP_PartitionedConv] = rlx_decompose_PartitionedConv,
    [RLX_OP_ComplexNormSqBackward] = rlx_decompose_ComplexNormSqBackward,
    /* ---- end of sequence models and signal ops ---- */
};
