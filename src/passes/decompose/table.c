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
};
