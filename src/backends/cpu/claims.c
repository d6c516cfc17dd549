/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Op kinds the CPU backend claims: the leaves (bound by the executor) and every kind with a
 * reference kernel in ref/table.c (a unit test keeps the two in step). */
#include "backends/cpu/cpu_backend.h"

const rlx_op rlx_cpu_claims[] = {
    RLX_OP_Input, RLX_OP_Param, RLX_OP_Constant,
    RLX_OP_Activation, RLX_OP_Cast, RLX_OP_StopGradient, RLX_OP_Binary, RLX_OP_Compare, RLX_OP_Where, RLX_OP_Fma, RLX_OP_Clamp,
    RLX_OP_Reshape, RLX_OP_Transpose, RLX_OP_Narrow, RLX_OP_Concat, RLX_OP_Expand, RLX_OP_Gather, RLX_OP_Reverse, RLX_OP_Pad, RLX_OP_Slice, RLX_OP_Tile, RLX_OP_Trilu, RLX_OP_Roll, RLX_OP_KvAppend,
    RLX_OP_Reduce, RLX_OP_Softmax, RLX_OP_Cumsum, RLX_OP_CumProd, RLX_OP_CumMax, RLX_OP_ArgMax, RLX_OP_ArgMin, RLX_OP_TopK, RLX_OP_Sort, RLX_OP_ArgSort, RLX_OP_Histogram, RLX_OP_Sample,
    RLX_OP_RngNormal, RLX_OP_RngUniform,
    RLX_OP_MatMul, RLX_OP_DotGeneral, RLX_OP_DenseSolve, RLX_OP_BatchedDenseSolve, RLX_OP_Cholesky, RLX_OP_TriangularSolve, RLX_OP_Det, RLX_OP_LogDet, RLX_OP_Svd, RLX_OP_Qr, RLX_OP_Eigh, RLX_OP_EighBatch, RLX_OP_GroupedMatMul,
    RLX_OP_LayerNorm, RLX_OP_LayerNorm2d, RLX_OP_GroupNorm, RLX_OP_BatchNormInference, RLX_OP_RmsNorm, RLX_OP_AdaLayerNorm, RLX_OP_GatedResidual,
    RLX_OP_Attention, RLX_OP_Rope, RLX_OP_AxialRope2d,
    RLX_OP_Conv, RLX_OP_Conv3d, RLX_OP_Im2Col, RLX_OP_ConvTranspose2d, RLX_OP_ConvTranspose3d, RLX_OP_Pool, RLX_OP_ResizeNearest2x, RLX_OP_Interpolate3d,
    RLX_OP_ScatterAdd, RLX_OP_ScatterNd, RLX_OP_ScatterElements, RLX_OP_GatherNd, RLX_OP_GatherElements,
    RLX_OP_If, RLX_OP_While, RLX_OP_Scan,
    RLX_OP_Fft,
    RLX_OP_ReluBackward, RLX_OP_ActivationBackward, RLX_OP_SoftmaxCrossEntropy, RLX_OP_SoftmaxCrossEntropyWithLogits, RLX_OP_SoftmaxCrossEntropyBackward, RLX_OP_AttentionBackward, RLX_OP_AttentionBackwardAll, RLX_OP_RopeBackward, RLX_OP_LayerNormBackwardInput, RLX_OP_LayerNormBackwardGamma, RLX_OP_RmsNormBackwardInput, RLX_OP_RmsNormBackwardGamma, RLX_OP_RmsNormBackwardBeta, RLX_OP_GroupNormBackwardInput, RLX_OP_GroupNormBackwardGamma, RLX_OP_GroupNormBackwardBeta, RLX_OP_BatchNormInferenceBackwardInput, RLX_OP_BatchNormInferenceBackwardGamma, RLX_OP_BatchNormInferenceBackwardBeta, RLX_OP_AdaLayerNormBackward, RLX_OP_GatedResidualBackward, RLX_OP_Conv2dBackwardInput, RLX_OP_Conv2dBackwardWeight, RLX_OP_Conv3dBackwardInput, RLX_OP_Conv3dBackwardWeight, RLX_OP_MaxPool2dBackward, RLX_OP_MaxPool3dBackward, RLX_OP_CumsumBackward, RLX_OP_GatherBackward, RLX_OP_ScanBackward, RLX_OP_ScanBackwardXs,
};
const uint32_t rlx_cpu_n_claims = sizeof rlx_cpu_claims / sizeof rlx_cpu_claims[0];
