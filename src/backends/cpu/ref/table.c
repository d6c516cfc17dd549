/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU reference kernel table: [op kind] = kernel, by family (see ref/<family>.c). Kinds absent
 * here have no CPU kernel and are decomposed by the shared legalizer before reaching the CPU. */
#include "backends/cpu/cpu_kernels.h"

/* ref/elementwise.c */
RLX_CPU_KERNEL(Activation);
RLX_CPU_KERNEL(Cast);
RLX_CPU_KERNEL(StopGradient);
RLX_CPU_KERNEL(Binary);
RLX_CPU_KERNEL(Compare);
RLX_CPU_KERNEL(Where);
RLX_CPU_KERNEL(Fma);
RLX_CPU_KERNEL(Clamp);
/* ref/shape.c */
RLX_CPU_KERNEL(Reshape);
RLX_CPU_KERNEL(Transpose);
RLX_CPU_KERNEL(Narrow);
RLX_CPU_KERNEL(Concat);
RLX_CPU_KERNEL(Expand);
RLX_CPU_KERNEL(Gather);
RLX_CPU_KERNEL(Reverse);
RLX_CPU_KERNEL(Pad);
RLX_CPU_KERNEL(Slice);
RLX_CPU_KERNEL(Tile);
RLX_CPU_KERNEL(Trilu);
RLX_CPU_KERNEL(Roll);
RLX_CPU_KERNEL(KvAppend);
/* ref/reduce.c */
RLX_CPU_KERNEL(Reduce);
RLX_CPU_KERNEL(Softmax);
RLX_CPU_KERNEL(Cumsum);
RLX_CPU_KERNEL(CumProd);
RLX_CPU_KERNEL(CumMax);
RLX_CPU_KERNEL(ArgMax);
RLX_CPU_KERNEL(ArgMin);
RLX_CPU_KERNEL(TopK);
RLX_CPU_KERNEL(Sort);
RLX_CPU_KERNEL(ArgSort);
RLX_CPU_KERNEL(Histogram);
RLX_CPU_KERNEL(Sample);
/* ref/random.c */
RLX_CPU_KERNEL(RngNormal);
RLX_CPU_KERNEL(RngUniform);
/* ref/linalg.c */
RLX_CPU_KERNEL(MatMul);
RLX_CPU_KERNEL(DotGeneral);
RLX_CPU_KERNEL(DenseSolve);
RLX_CPU_KERNEL(BatchedDenseSolve);
RLX_CPU_KERNEL(Cholesky);
RLX_CPU_KERNEL(TriangularSolve);
RLX_CPU_KERNEL(Det);
RLX_CPU_KERNEL(LogDet);
RLX_CPU_KERNEL(Svd);
RLX_CPU_KERNEL(Qr);
RLX_CPU_KERNEL(Eigh);
RLX_CPU_KERNEL(EighBatch);
RLX_CPU_KERNEL(GroupedMatMul);
/* ref/norm.c */
RLX_CPU_KERNEL(LayerNorm);
RLX_CPU_KERNEL(LayerNorm2d);
RLX_CPU_KERNEL(GroupNorm);
RLX_CPU_KERNEL(BatchNormInference);
RLX_CPU_KERNEL(RmsNorm);
RLX_CPU_KERNEL(AdaLayerNorm);
RLX_CPU_KERNEL(GatedResidual);
/* ref/attention.c */
RLX_CPU_KERNEL(Attention);
RLX_CPU_KERNEL(Rope);
RLX_CPU_KERNEL(AxialRope2d);
/* ref/conv.c */
RLX_CPU_KERNEL(Conv);
RLX_CPU_KERNEL(Conv3d);
RLX_CPU_KERNEL(Im2Col);
RLX_CPU_KERNEL(ConvTranspose2d);
RLX_CPU_KERNEL(ConvTranspose3d);
RLX_CPU_KERNEL(Pool);
RLX_CPU_KERNEL(ResizeNearest2x);
RLX_CPU_KERNEL(Interpolate3d);
/* ref/scatter.c */
RLX_CPU_KERNEL(ScatterAdd);
RLX_CPU_KERNEL(ScatterNd);
RLX_CPU_KERNEL(ScatterElements);
RLX_CPU_KERNEL(GatherNd);
RLX_CPU_KERNEL(GatherElements);
/* ref/control.c */
RLX_CPU_KERNEL(If);
RLX_CPU_KERNEL(While);
RLX_CPU_KERNEL(Scan);
/* ref/signal.c */
RLX_CPU_KERNEL(Fft);
/* ref/backward_*.c */
RLX_CPU_KERNEL(ReluBackward);
RLX_CPU_KERNEL(ActivationBackward);
RLX_CPU_KERNEL(SoftmaxCrossEntropy);
RLX_CPU_KERNEL(SoftmaxCrossEntropyWithLogits);
RLX_CPU_KERNEL(SoftmaxCrossEntropyBackward);
RLX_CPU_KERNEL(AttentionBackward);
RLX_CPU_KERNEL(AttentionBackwardAll);
RLX_CPU_KERNEL(RopeBackward);
RLX_CPU_KERNEL(LayerNormBackwardInput);
RLX_CPU_KERNEL(LayerNormBackwardGamma);
RLX_CPU_KERNEL(RmsNormBackwardInput);
RLX_CPU_KERNEL(RmsNormBackwardGamma);
RLX_CPU_KERNEL(RmsNormBackwardBeta);
RLX_CPU_KERNEL(GroupNormBackwardInput);
RLX_CPU_KERNEL(GroupNormBackwardGamma);
RLX_CPU_KERNEL(GroupNormBackwardBeta);
RLX_CPU_KERNEL(BatchNormInferenceBackwardInput);
RLX_CPU_KERNEL(BatchNormInferenceBackwardGamma);
RLX_CPU_KERNEL(BatchNormInferenceBackwardBeta);
RLX_CPU_KERNEL(AdaLayerNormBackward);
RLX_CPU_KERNEL(GatedResidualBackward);
RLX_CPU_KERNEL(Conv2dBackwardInput);
RLX_CPU_KERNEL(Conv2dBackwardWeight);
RLX_CPU_KERNEL(Conv3dBackwardInput);
RLX_CPU_KERNEL(Conv3dBackwardWeight);
RLX_CPU_KERNEL(MaxPool2dBackward);
RLX_CPU_KERNEL(MaxPool3dBackward);
RLX_CPU_KERNEL(CumsumBackward);
RLX_CPU_KERNEL(GatherBackward);
RLX_CPU_KERNEL(ScanBackward);
RLX_CPU_KERNEL(ScanBackwardXs);

const rlx_cpu_kernel rlx_cpu_ref_table[RLX_OP_COUNT] = {
    /* ref/elementwise.c */
    [RLX_OP_Activation] = rlx_cpu_ref_Activation,
    [RLX_OP_Cast] = rlx_cpu_ref_Cast,
    [RLX_OP_StopGradient] = rlx_cpu_ref_StopGradient,
    [RLX_OP_Binary] = rlx_cpu_ref_Binary,
    [RLX_OP_Compare] = rlx_cpu_ref_Compare,
    [RLX_OP_Where] = rlx_cpu_ref_Where,
    [RLX_OP_Fma] = rlx_cpu_ref_Fma,
    [RLX_OP_Clamp] = rlx_cpu_ref_Clamp,
    /* ref/shape.c */
    [RLX_OP_Reshape] = rlx_cpu_ref_Reshape,
    [RLX_OP_Transpose] = rlx_cpu_ref_Transpose,
    [RLX_OP_Narrow] = rlx_cpu_ref_Narrow,
    [RLX_OP_Concat] = rlx_cpu_ref_Concat,
    [RLX_OP_Expand] = rlx_cpu_ref_Expand,
    [RLX_OP_Gather] = rlx_cpu_ref_Gather,
    [RLX_OP_Reverse] = rlx_cpu_ref_Reverse,
    [RLX_OP_Pad] = rlx_cpu_ref_Pad,
    [RLX_OP_Slice] = rlx_cpu_ref_Slice,
    [RLX_OP_Tile] = rlx_cpu_ref_Tile,
    [RLX_OP_Trilu] = rlx_cpu_ref_Trilu,
    [RLX_OP_Roll] = rlx_cpu_ref_Roll,
    [RLX_OP_KvAppend] = rlx_cpu_ref_KvAppend,
    /* ref/reduce.c */
    [RLX_OP_Reduce] = rlx_cpu_ref_Reduce,
    [RLX_OP_Softmax] = rlx_cpu_ref_Softmax,
    [RLX_OP_Cumsum] = rlx_cpu_ref_Cumsum,
    [RLX_OP_CumProd] = rlx_cpu_ref_CumProd,
    [RLX_OP_CumMax] = rlx_cpu_ref_CumMax,
    [RLX_OP_ArgMax] = rlx_cpu_ref_ArgMax,
    [RLX_OP_ArgMin] = rlx_cpu_ref_ArgMin,
    [RLX_OP_TopK] = rlx_cpu_ref_TopK,
    [RLX_OP_Sort] = rlx_cpu_ref_Sort,
    [RLX_OP_ArgSort] = rlx_cpu_ref_ArgSort,
    [RLX_OP_Histogram] = rlx_cpu_ref_Histogram,
    [RLX_OP_Sample] = rlx_cpu_ref_Sample,
    /* ref/random.c */
    [RLX_OP_RngNormal] = rlx_cpu_ref_RngNormal,
    [RLX_OP_RngUniform] = rlx_cpu_ref_RngUniform,
    /* ref/linalg.c */
    [RLX_OP_MatMul] = rlx_cpu_ref_MatMul,
    [RLX_OP_DotGeneral] = rlx_cpu_ref_DotGeneral,
    [RLX_OP_DenseSolve] = rlx_cpu_ref_DenseSolve,
    [RLX_OP_BatchedDenseSolve] = rlx_cpu_ref_BatchedDenseSolve,
    [RLX_OP_Cholesky] = rlx_cpu_ref_Cholesky,
    [RLX_OP_TriangularSolve] = rlx_cpu_ref_TriangularSolve,
    [RLX_OP_Det] = rlx_cpu_ref_Det,
    [RLX_OP_LogDet] = rlx_cpu_ref_LogDet,
    [RLX_OP_Svd] = rlx_cpu_ref_Svd,
    [RLX_OP_Qr] = rlx_cpu_ref_Qr,
    [RLX_OP_Eigh] = rlx_cpu_ref_Eigh,
    [RLX_OP_EighBatch] = rlx_cpu_ref_EighBatch,
    [RLX_OP_GroupedMatMul] = rlx_cpu_ref_GroupedMatMul,
    /* ref/norm.c */
    [RLX_OP_LayerNorm] = rlx_cpu_ref_LayerNorm,
    [RLX_OP_LayerNorm2d] = rlx_cpu_ref_LayerNorm2d,
    [RLX_OP_GroupNorm] = rlx_cpu_ref_GroupNorm,
    [RLX_OP_BatchNormInference] = rlx_cpu_ref_BatchNormInference,
    [RLX_OP_RmsNorm] = rlx_cpu_ref_RmsNorm,
    [RLX_OP_AdaLayerNorm] = rlx_cpu_ref_AdaLayerNorm,
    [RLX_OP_GatedResidual] = rlx_cpu_ref_GatedResidual,
    /* ref/attention.c */
    [RLX_OP_Attention] = rlx_cpu_ref_Attention,
    [RLX_OP_Rope] = rlx_cpu_ref_Rope,
    [RLX_OP_AxialRope2d] = rlx_cpu_ref_AxialRope2d,
    /* ref/conv.c */
    [RLX_OP_Conv] = rlx_cpu_ref_Conv,
    [RLX_OP_Conv3d] = rlx_cpu_ref_Conv3d,
    [RLX_OP_Im2Col] = rlx_cpu_ref_Im2Col,
    [RLX_OP_ConvTranspose2d] = rlx_cpu_ref_ConvTranspose2d,
    [RLX_OP_ConvTranspose3d] = rlx_cpu_ref_ConvTranspose3d,
    [RLX_OP_Pool] = rlx_cpu_ref_Pool,
    [RLX_OP_ResizeNearest2x] = rlx_cpu_ref_ResizeNearest2x,
    [RLX_OP_Interpolate3d] = rlx_cpu_ref_Interpolate3d,
    /* ref/scatter.c */
    [RLX_OP_ScatterAdd] = rlx_cpu_ref_ScatterAdd,
    [RLX_OP_ScatterNd] = rlx_cpu_ref_ScatterNd,
    [RLX_OP_ScatterElements] = rlx_cpu_ref_ScatterElements,
    [RLX_OP_GatherNd] = rlx_cpu_ref_GatherNd,
    [RLX_OP_GatherElements] = rlx_cpu_ref_GatherElements,
    /* ref/control.c */
    [RLX_OP_If] = rlx_cpu_ref_If,
    [RLX_OP_While] = rlx_cpu_ref_While,
    [RLX_OP_Scan] = rlx_cpu_ref_Scan,
    /* ref/signal.c */
    [RLX_OP_Fft] = rlx_cpu_ref_Fft,
    /* ref/backward_*.c */
    [RLX_OP_ReluBackward] = rlx_cpu_ref_ReluBackward,
    [RLX_OP_ActivationBackward] = rlx_cpu_ref_ActivationBackward,
    [RLX_OP_SoftmaxCrossEntropy] = rlx_cpu_ref_SoftmaxCrossEntropy,
    [RLX_OP_SoftmaxCrossEntropyWithLogits] = rlx_cpu_ref_SoftmaxCrossEntropyWithLogits,
    [RLX_OP_SoftmaxCrossEntropyBackward] = rlx_cpu_ref_SoftmaxCrossEntropyBackward,
    [RLX_OP_AttentionBackward] = rlx_cpu_ref_AttentionBackward,
    [RLX_OP_AttentionBackwardAll] = rlx_cpu_ref_AttentionBackwardAll,
    [RLX_OP_RopeBackward] = rlx_cpu_ref_RopeBackward,
    [RLX_OP_LayerNormBackwardInput] = rlx_cpu_ref_LayerNormBackwardInput,
    [RLX_OP_LayerNormBackwardGamma] = rlx_cpu_ref_LayerNormBackwardGamma,
    [RLX_OP_RmsNormBackwardInput] = rlx_cpu_ref_RmsNormBackwardInput,
    [RLX_OP_RmsNormBackwardGamma] = rlx_cpu_ref_RmsNormBackwardGamma,
    [RLX_OP_RmsNormBackwardBeta] = rlx_cpu_ref_RmsNormBackwardBeta,
    [RLX_OP_GroupNormBackwardInput] = rlx_cpu_ref_GroupNormBackwardInput,
    [RLX_OP_GroupNormBackwardGamma] = rlx_cpu_ref_GroupNormBackwardGamma,
    [RLX_OP_GroupNormBackwardBeta] = rlx_cpu_ref_GroupNormBackwardBeta,
    [RLX_OP_BatchNormInferenceBackwardInput] = rlx_cpu_ref_BatchNormInferenceBackwardInput,
    [RLX_OP_BatchNormInferenceBackwardGamma] = rlx_cpu_ref_BatchNormInferenceBackwardGamma,
    [RLX_OP_BatchNormInferenceBackwardBeta] = rlx_cpu_ref_BatchNormInferenceBackwardBeta,
    [RLX_OP_AdaLayerNormBackward] = rlx_cpu_ref_AdaLayerNormBackward,
    [RLX_OP_GatedResidualBackward] = rlx_cpu_ref_GatedResidualBackward,
    [RLX_OP_Conv2dBackwardInput] = rlx_cpu_ref_Conv2dBackwardInput,
    [RLX_OP_Conv2dBackwardWeight] = rlx_cpu_ref_Conv2dBackwardWeight,
    [RLX_OP_Conv3dBackwardInput] = rlx_cpu_ref_Conv3dBackwardInput,
    [RLX_OP_Conv3dBackwardWeight] = rlx_cpu_ref_Conv3dBackwardWeight,
    [RLX_OP_MaxPool2dBackward] = rlx_cpu_ref_MaxPool2dBackward,
    [RLX_OP_MaxPool3dBackward] = rlx_cpu_ref_MaxPool3dBackward,
    [RLX_OP_CumsumBackward] = rlx_cpu_ref_CumsumBackward,
    [RLX_OP_GatherBackward] = rlx_cpu_ref_GatherBackward,
    [RLX_OP_ScanBackward] = rlx_cpu_ref_ScanBackward,
    [RLX_OP_ScanBackwardXs] = rlx_cpu_ref_ScanBackwardXs,
};
