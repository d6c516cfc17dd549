/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: fused / composite ops and fusion regions (FusedSwiGLU, FusedMatMulBiasAct,
 * FusedMatMulResidual, FusedConvBiasAct, FusedResidualLN, FusedResidualRmsNorm,
 * FusedAttentionBlock, FusedTransformerLayer, LoraMatMul, ElementwiseRegion, TransformRegion,
 * BatchElementwiseRegion) and FakeQuantize (PerBatch, decomposed). See cases.h for the row format. */
#include "cases.h"

/* chain operands and steps */
#define OPI(I) \
  { 0, I }
#define OPS(I) \
  { 1, I }
#define S_ACT(K, A)                                             \
  {                                                             \
    RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_##K, A, {0, 0}, { 0, 0 } \
  }
#define S_CAST(T, A)                                  \
  {                                                   \
    RLX_CHAIN_STEP_CAST, RLX_##T, A, {0, 0}, { 0, 0 } \
  }
#define S_BIN(K, A, B)                                   \
  {                                                      \
    RLX_CHAIN_STEP_BINARY, RLX_BINOP_##K, A, B, { 0, 0 } \
  }
#define S_CMP(K, A, B)                                  \
  {                                                     \
    RLX_CHAIN_STEP_COMPARE, RLX_CMP_##K, A, B, { 0, 0 } \
  }
#define S_WHERE(C, A, B) \
  { RLX_CHAIN_STEP_WHERE, 0, C, A, B }
#define CHAIN(...) \
  { (rlx_chain_step[]){__VA_ARGS__}, sizeof((rlx_chain_step[]){__VA_ARGS__}) / sizeof(rlx_chain_step) }

#define MMBA(ACT) AT(FusedMatMulBiasAct, .activation = ACT)
#define CBA(K, P, G, ACT, RES)                                                                                         \
  AT(FusedConvBiasAct, .kernel_size = K, .stride = IL0, .padding = P, .dilation = IL0, .groups = G, .activation = ACT, \
     .has_residual = RES)
#define FAB(H, D, BIAS, ROPE) AT(FusedAttentionBlock, .num_heads = H, .head_dim = D, .has_bias = BIAS, .has_rope = ROPE)
#define FTL(H, D, I, ACT, BIAS)                                                                                  \
  AT(FusedTransformerLayer, .num_heads = H, .head_dim = D, .intermediate_size = I, .eps1 = 1e-5f, .eps2 = 1e-6f, \
     .activation = RLX_ACT_##ACT, .has_bias = BIAS)
#define KEEP(...) INF(F32, CF_CONST, 1, 0, __VA_ARGS__)
#define W(...) INF(F32, CF_NORMAL, 0.3, 0, __VA_ARGS__)

static const conf_case conf_cases_fused[] = {
    /* ---- FusedSwiGLU (both gate orders) ---- */
    {"swiglu_up_first", RLX_OP_FusedSwiGLU, AT(FusedSwiGLU, .gate_first = false), 1, {IN(F32, 3, 8)}},
    {"swiglu_gate_first", RLX_OP_FusedSwiGLU, AT(FusedSwiGLU, .gate_first = true), 1, {IN(F32, 3, 8)}},
    {"swiglu_cast_f16",
     RLX_OP_FusedSwiGLU,
     AT(FusedSwiGLU, .cast_to = {true, RLX_F16}, .gate_first = false),
     1,
     {IN(F32, 2, 2, 6)}},
    {"swiglu_f64_gate_first", RLX_OP_FusedSwiGLU, AT(FusedSwiGLU, .gate_first = true), 1, {IN(F64, 4)}},

    /* ---- FusedMatMulBiasAct / FusedMatMulResidual / LoraMatMul ---- */
    {"matmul_bias_gelu", RLX_OP_FusedMatMulBiasAct, MMBA(RLX_ACT_GELU), 3, {IN(F32, 3, 4), IN(F32, 4, 5), IN(F32, 5)}},
    {"matmul_bias_relu_batched",
     RLX_OP_FusedMatMulBiasAct,
     MMBA(RLX_ACT_RELU),
     3,
     {IN(F32, 2, 3, 4), IN(F32, 4, 5), IN(F32, 5)}},
    {"matmul_bias_none", RLX_OP_FusedMatMulBiasAct, MMBA(-1), 3, {IN(F64, 3, 2), IN(F64, 2, 4), IN(F64, 4)}},
    {"matmul_bias_silu", RLX_OP_FusedMatMulBiasAct, MMBA(RLX_ACT_SILU), 3, {IN(F32, 4, 6), IN(F32, 6, 3), IN(F32, 3)}},
    {"matmul_residual", RLX_OP_FusedMatMulResidual, NULL, 3, {IN(F32, 3, 4), IN(F32, 4, 5), IN(F32, 3, 5)}},
    {"matmul_residual_batched",
     RLX_OP_FusedMatMulResidual,
     NULL,
     3,
     {IN(F32, 2, 3, 4), IN(F32, 2, 4, 2), IN(F32, 2, 3, 2)}},
    {"lora_matmul",
     RLX_OP_LoraMatMul,
     AT(LoraMatMul, .scale = 0.5f),
     4,
     {IN(F32, 3, 4), IN(F32, 4, 5), IN(F32, 4, 2), IN(F32, 2, 5)}},
    {"lora_matmul_batched",
     RLX_OP_LoraMatMul,
     AT(LoraMatMul, .scale = 2.0f),
     4,
     {IN(F32, 2, 3, 4), IN(F32, 4, 3), IN(F32, 4, 1), IN(F32, 1, 3)}},

    /* ---- FusedConvBiasAct ---- */
    {"conv_bias_relu",
     RLX_OP_FusedConvBiasAct,
     CBA(IL(3, 3), IL(1, 1), 1, RLX_ACT_RELU, false),
     3,
     {IN(F32, 1, 3, 5, 5), IN(F32, 4, 3, 3, 3), IN(F32, 4)}},
    {"conv_bias_residual_silu",
     RLX_OP_FusedConvBiasAct,
     CBA(IL(3, 3), IL(1, 1), 2, RLX_ACT_SILU, true),
     4,
     {IN(F32, 1, 4, 4, 4), IN(F32, 4, 2, 3, 3), IN(F32, 4), IN(F32, 1, 4, 4, 4)}},
    {"conv_bias_no_act",
     RLX_OP_FusedConvBiasAct,
     CBA(IL(2, 2), IL0, 1, -1, false),
     3,
     {IN(F32, 2, 2, 3, 3), IN(F32, 3, 2, 2, 2), IN(F32, 3)}},

    /* ---- FusedResidualLN / FusedResidualRmsNorm ---- */
    {"residual_ln",
     RLX_OP_FusedResidualLN,
     AT(FusedResidualLN, .has_bias = false, .eps = 1e-5f),
     4,
     {IN(F32, 2, 3, 8), IN(F32, 2, 3, 8), IN(F32, 8), IN(F32, 8)}},
    {"residual_ln_bias",
     RLX_OP_FusedResidualLN,
     AT(FusedResidualLN, .has_bias = true, .eps = 1e-5f),
     5,
     {IN(F32, 3, 6), IN(F32, 3, 6), IN(F32, 6), IN(F32, 6), IN(F32, 6)}},
    {"residual_ln_bias_long_f64",
     RLX_OP_FusedResidualLN,
     AT(FusedResidualLN, .has_bias = true, .eps = 1e-5f),
     5,
     {IN(F64, 4, 300), IN(F64, 4, 300), IN(F64, 300), IN(F64, 300), IN(F64, 300)}},
    {"residual_rms",
     RLX_OP_FusedResidualRmsNorm,
     AT(FusedResidualRmsNorm, .has_bias = false, .eps = 1e-6f),
     4,
     {IN(F32, 2, 3, 8), IN(F32, 2, 3, 8), IN(F32, 8), IN(F32, 8)}},
    {"residual_rms_bias",
     RLX_OP_FusedResidualRmsNorm,
     AT(FusedResidualRmsNorm, .has_bias = true, .eps = 1e-5f),
     5,
     {IN(F64, 3, 6), IN(F64, 3, 6), IN(F64, 6), IN(F64, 6), IN(F64, 6)}},
    {"residual_rms_long",
     RLX_OP_FusedResidualRmsNorm,
     AT(FusedResidualRmsNorm, .has_bias = false, .eps = 1e-6f),
     4,
     {IN(F32, 3, 1100), IN(F32, 3, 1100), IN(F32, 1100), IN(F32, 1100)}},

    /* ---- FusedAttentionBlock (hidden, qkv_w, out_w, mask, [qkv_b, out_b], [cos, sin]) ---- */
    {"attention_block",
     RLX_OP_FusedAttentionBlock,
     FAB(2, 4, false, false),
     4,
     {IN(F32, 2, 3, 8), W(8, 24), W(8, 8), KEEP(2, 3)}},
    {"attention_block_bias_mask",
     RLX_OP_FusedAttentionBlock,
     FAB(2, 4, true, false),
     6,
     {IN(F32, 1, 4, 8), W(8, 24), W(8, 8), INF(F32, CF_INT, 0, 1, 1, 4), IN(F32, 24), IN(F32, 8)}},
    {"attention_block_rope",
     RLX_OP_FusedAttentionBlock,
     FAB(2, 4, true, true),
     8,
     {IN(F32, 1, 4, 8), W(8, 24), W(8, 8), KEEP(1, 4), IN(F32, 24), IN(F32, 8), INF(F32, CF_UNIFORM, -1, 1, 4, 2),
      INF(F32, CF_UNIFORM, -1, 1, 4, 2)}},

    /* ---- FusedTransformerLayer ---- */
    /* no bias (8): hidden, qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask */
    {"transformer_layer_no_bias",
     RLX_OP_FusedTransformerLayer,
     FTL(2, 4, 16, GELU, false),
     8,
     {IN(F32, 1, 4, 8), W(8, 24), W(8, 8), IN(F32, 8), W(8, 16), W(16, 8), IN(F32, 8), KEEP(1, 4)}},
    /* bias (14): hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b, ln2_g, ln2_b, mask */
    {"transformer_layer_bias",
     RLX_OP_FusedTransformerLayer,
     FTL(2, 4, 12, RELU, true),
     14,
     {IN(F32, 2, 3, 8), W(8, 24), IN(F32, 24), W(8, 8), IN(F32, 8), IN(F32, 8), IN(F32, 8), W(8, 12), IN(F32, 12),
      W(12, 8), IN(F32, 8), IN(F32, 8), IN(F32, 8), INF(F32, CF_INT, 0, 1, 2, 3)}},

    /* ---- ElementwiseRegion ---- */
    {"region_mul_silu_add",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion, .chain = CHAIN(S_BIN(MUL, OPI(0), OPI(1)), S_ACT(SILU, OPS(0)), S_BIN(ADD, OPS(1), OPI(2))),
        .num_inputs = 3, .input_modulus = IL0, .prologue = RLX_PROLOGUE_NONE),
     3,
     {IN(F32, 2, 3, 4), IN(F32, 2, 3, 4), IN(F32, 4)}},
    {"region_compare_where_cast",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion,
        .chain = CHAIN(S_CMP(GT, OPI(0), OPI(1)), S_WHERE(OPS(0), OPI(0), OPI(1)), S_CAST(F64, OPS(1))),
        .num_inputs = 2, .input_modulus = IL0, .prologue = RLX_PROLOGUE_NONE),
     2,
     {IN(F32, 3, 5), IN(F32, 3, 5)}},
    {"region_scalar_input",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion, .chain = CHAIN(S_BIN(MUL, OPI(0), OPI(1)), S_ACT(TANH, OPS(0))), .num_inputs = 2,
        .scalar_input_mask = 2, .input_modulus = IL0, .prologue = RLX_PROLOGUE_NONE),
     2,
     {IN(F32, 4, 3), IN(F32, 1)}},
    {"region_input_modulus",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion, .chain = CHAIN(S_BIN(SUB, OPI(0), OPI(1)), S_BIN(POW, OPS(0), OPI(2))), .num_inputs = 3,
        .input_modulus = IL(0, 4, 1), .prologue = RLX_PROLOGUE_NONE),
     3,
     {IN(F32, 3, 4), IN(F32, 4), INF(F32, CF_CONST, 2, 0, 1)}},
    {"region_prologue_resize",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion, .chain = CHAIN(S_BIN(ADD, OPI(0), OPI(1)), S_ACT(RELU, OPS(0))), .num_inputs = 2,
        .input_modulus = IL0, .prologue = RLX_PROLOGUE_RESIZE_NEAREST2X, .prologue_input = 0),
     2,
     {IN(F32, 1, 2, 2, 3), IN(F32, 1, 2, 4, 6)}},
    {"region_f16_chain",
     RLX_OP_ElementwiseRegion,
     AT(ElementwiseRegion, .chain = CHAIN(S_ACT(GELU_APPROX, OPI(0)), S_BIN(MAX, OPS(0), OPI(0))), .num_inputs = 1,
        .input_modulus = IL0, .prologue = RLX_PROLOGUE_NONE),
     1,
     {IN(F16, 2, 8)}},

    /* ---- TransformRegion ---- */
    {"transform_region_one_step",
     RLX_OP_TransformRegion,
     AT(TransformRegion, .steps = IL(0), .num_inputs = 1),
     1,
     {IN(F32, 1, 2, 3, 4)}},
    {"transform_region_two_steps",
     RLX_OP_TransformRegion,
     AT(TransformRegion, .steps = IL(0, 0), .num_inputs = 1),
     1,
     {IN(F64, 1, 1, 2, 2)}},

    /* ---- BatchElementwiseRegion ---- */
    {"batch_region_relu_square",
     RLX_OP_BatchElementwiseRegion,
     AT(BatchElementwiseRegion, .chain = CHAIN(S_ACT(RELU, OPI(0)), S_BIN(MUL, OPS(0), OPS(0))), .num_batch_inputs = 2,
        .input_modulus = IL0, .prologue = RLX_PROLOGUE_NONE),
     2,
     {IN(F32, 2, 3), IN(F32, 4, 3)}},
    {"batch_region_prologue",
     RLX_OP_BatchElementwiseRegion,
     AT(BatchElementwiseRegion, .chain = CHAIN(S_ACT(NEG, OPI(0))), .num_batch_inputs = 3, .input_modulus = IL0,
        .prologue = RLX_PROLOGUE_RESIZE_NEAREST2X),
     3,
     {IN(F32, 1, 2, 2, 2), IN(F32, 2, 2, 2, 2), IN(F32, 1, 2, 2, 2)}},

    /* ---- FakeQuantize (PerBatch: decomposed) ---- */
    {"fake_quantize_8bit",
     RLX_OP_FakeQuantize,
     AT(FakeQuantize, .bits = 8, .axis = -1, .ste = RLX_STE_IDENTITY, .scale_mode = RLX_SCALE_MODE_PER_BATCH,
        .decay = 0.99f),
     1,
     {IN(F32, 4, 3)}},
    {"fake_quantize_4bit_axis0",
     RLX_OP_FakeQuantize,
     AT(FakeQuantize, .bits = 4, .axis = 0, .ste = RLX_STE_IDENTITY, .scale_mode = RLX_SCALE_MODE_PER_BATCH,
        .decay = 0.99f),
     1,
     {IN(F32, 3, 5)}},
};

#undef OPI
#undef OPS
#undef S_ACT
#undef S_CAST
#undef S_BIN
#undef S_CMP
#undef S_WHERE
#undef CHAIN
#undef MMBA
#undef CBA
#undef FAB
#undef FTL
#undef KEEP
#undef W
