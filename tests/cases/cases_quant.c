/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: the quantization family (spec ir-special §1) — Quantize, Dequantize,
 * FakeQuantize (EMA / Fixed; PerBatch lives in cases_fused.c), FakeQuantizeBackward (every STE
 * kind), FakeQuantizeLSQ and its backwards, QMatMul, QConv2d, DequantMatMul in the non-GGUF schemes
 * and the GGUF formats the float64 reference decodes (tests/reference/ref_quant.py), the grouped /
 * MoE dequantizing matmuls, the Scaled* FP8/FP6/FP4 family, and the codebook (synth) and spline ops.
 * Packed weights are random bytes (CF_INT 0..255): the reference decodes the same bytes. Every
 * GGUF format is also checked bit for bit against the PyPI gguf package (test_gguf_dequant). */
#include "cases.h"

#define QZ(AX, S, Z) AT(Quantize, .axis = AX, .scales = S, .zero_points = Z)
#define DQ(AX, S, Z) AT(Dequantize, .axis = AX, .scales = S, .zero_points = Z)
#define FQ(BITS, AX, MODE, DECAY)                                                                  \
  AT(FakeQuantize, .bits = BITS, .axis = AX, .ste = RLX_STE_IDENTITY, .scale_mode = RLX_SCALE_MODE_##MODE, .decay = DECAY)
#define FQB(BITS, AX, STE) AT(FakeQuantizeBackward, .bits = BITS, .axis = AX, .ste = RLX_STE_##STE)
#define DMM(SCHEME, BS, BITS, GS)                                                                  \
  AT(DequantMatMul, .scheme = RLX_QUANT_SCHEME_##SCHEME, .block_size = BS, .bits = BITS, .group_size = GS)
#define MOEW(SCHEME) AT(DequantMoEWeights, .scheme = RLX_QUANT_SCHEME_##SCHEME, .block_size = 32, .bits = 4, .group_size = 64)
#define DGMM(SCHEME) AT(DequantGroupedMatMul, .scheme = RLX_QUANT_SCHEME_##SCHEME, .block_size = 32, .bits = 4, .group_size = 64)
#define SQ(OP, FMT, LAYOUT, BLOCK)                                                                 \
  AT(OP, .format = RLX_SCALED_FORMAT_##FMT, .layout = RLX_SCALE_LAYOUT_##LAYOUT, .block = BLOCK)
#define SQC(OP, E, M, B)                                                                           \
  AT(OP, .format = RLX_SCALED_FORMAT_CUSTOM, .layout = RLX_SCALE_LAYOUT_PER_TENSOR, .block = 32, .custom_exp = E,    \
     .custom_mant = M, .custom_bias = B)
#define SMM(L, R, LAYOUT, BLOCK, BIAS)                                                             \
  AT(ScaledMatMul, .lhs_format = RLX_SCALED_FORMAT_##L, .rhs_format = RLX_SCALED_FORMAT_##R,         \
     .layout = RLX_SCALE_LAYOUT_##LAYOUT, .block = BLOCK, .has_bias = BIAS)
#define SGMM(L, R, LAYOUT, BLOCK, BIAS)                                                            \
  AT(ScaledGroupedMatMul, .lhs_format = RLX_SCALED_FORMAT_##L, .rhs_format = RLX_SCALED_FORMAT_##R,  \
     .layout = RLX_SCALE_LAYOUT_##LAYOUT, .block = BLOCK, .has_bias = BIAS)
#define BYTES(...) INF(U8, CF_INT, 0, 255, __VA_ARGS__)
#define SPL(OP, NK, LO, HI) AT(OP, .num_knots = NK, .grid_min = LO, .grid_max = HI)
/* One GGUF DequantMoEWeights row: E experts of [N, K] (K = KB blocks of BE elements, BB bytes). */
#define MOE_ROW(NAME, SCHEME, BE, BB, E, KB, N)                                                    \
  {NAME, RLX_OP_DequantMoEWeights, MOEW(SCHEME), 1, {BYTES((E) * (N) * (KB) * (BB))}, OUT(F32, E, (KB) * (BE), N)}

static const conf_case conf_cases_quant[] = {
    /* ---- Quantize / Dequantize ---- */
    {"quantize_per_tensor", RLX_OP_Quantize, QZ(-1, FL(0.02f), IL(3)), 1, {IN(F32, 4, 6)}},
    {"quantize_per_channel", RLX_OP_Quantize, QZ(1, FL(0.05f, 0.01f, 0.2f), IL(0, -5, 10)), 1, {IN(F32, 2, 3, 4)}},
    {"quantize_no_zp_f64", RLX_OP_Quantize, QZ(-1, FL(0.01f), IL0), 1, {IN(F64, 5, 3)}},
    {"quantize_f16_saturate", RLX_OP_Quantize, QZ(0, FL(0.001f, 0.5f), IL(-100)), 1, {IN(F16, 2, 8)}},
    {"quantize_special", RLX_OP_Quantize, QZ(-1, FL(0.25f), IL(1)), 1, {INF(F32, CF_SPECIAL, 0, 0, 3, 5)}},
    {"quantize_ties", RLX_OP_Quantize, QZ(-1, FL(0.5f), IL0), 1, {INF(F32, CF_ARANGE, -3.25, 0.25, 27)}},
    {"quantize_bf16", RLX_OP_Quantize, QZ(-1, FL(0.05f), IL(-2)), 1, {IN(BF16, 3, 4)}},
    {"quantize_empty", RLX_OP_Quantize, QZ(-1, FL(0.1f), IL0), 1, {IN(F32, 0, 3)}},
    {"dequantize_per_tensor", RLX_OP_Dequantize, DQ(-1, FL(0.03f), IL(-7)), 1, {INF(I8, CF_INT, -128, 127, 4, 6)}},
    {"dequantize_per_channel", RLX_OP_Dequantize, DQ(0, FL(0.5f, 0.125f), IL(1, 2)), 1, {INF(I8, CF_INT, -128, 127, 2, 5)}},

    /* ---- FakeQuantize: EMA / Fixed (state operand) ---- */
    {"fake_quantize_fixed", RLX_OP_FakeQuantize, FQ(8, -1, FIXED, 0.99f), 2,
     {IN(F32, 3, 4), INF(F32, CF_UNIFORM, 0.005, 0.02, 4)}},
    {"fake_quantize_fixed_shared", RLX_OP_FakeQuantize, FQ(4, 0, FIXED, 0.99f), 2,
     {IN(F32, 3, 4), INF(F32, CF_UNIFORM, 0.1, 0.3, 1)}},
    {"fake_quantize_ema", RLX_OP_FakeQuantize, FQ(8, -1, EMA, 0.9f), 2,
     {IN(F32, 5, 3), INF(F32, CF_UNIFORM, 0.01, 0.02, 3)}},
    {"fake_quantize_ema_empty_state", RLX_OP_FakeQuantize, FQ(2, 1, EMA, 0.5f), 2,
     {IN(F32, 2, 3, 2), INF(F32, CF_CONST, 0, 0, 3)}},
    {"fake_quantize_f16_fixed", RLX_OP_FakeQuantize, FQ(4, -1, FIXED, 0.99f), 2,
     {IN(F16, 3, 4), INF(F16, CF_UNIFORM, 0.1, 0.3, 4)}},
    {"fake_quantize_bf16_ema", RLX_OP_FakeQuantize, FQ(8, 0, EMA, 0.75f), 2,
     {IN(BF16, 3, 4), INF(F32, CF_UNIFORM, 0.005, 0.02, 3)}},
    {"fake_quantize_f64_per_batch", RLX_OP_FakeQuantize, FQ(8, 0, PER_BATCH, 0.99f), 1, {IN(F64, 4, 5)}},

    /* ---- FakeQuantizeBackward: every STE kind ---- */
    {"fq_backward_identity", RLX_OP_FakeQuantizeBackward, FQB(8, -1, IDENTITY), 2, {IN(F32, 3, 4), IN(F32, 3, 4)}},
    {"fq_backward_clipped", RLX_OP_FakeQuantizeBackward, FQB(4, 0, CLIPPED_IDENTITY), 2, {IN(F32, 4, 3), IN(F32, 4, 3)}},
    {"fq_backward_tanh", RLX_OP_FakeQuantizeBackward, FQB(8, -1, TANH), 2, {IN(F32, 2, 5), IN(F32, 2, 5)}},
    {"fq_backward_tanh_f16", RLX_OP_FakeQuantizeBackward, FQB(8, -1, TANH), 2, {IN(F16, 2, 5), IN(F16, 2, 5)}},
    {"fq_backward_hard_tanh", RLX_OP_FakeQuantizeBackward, FQB(2, 1, HARD_TANH), 2, {IN(F64, 3, 4), IN(F64, 3, 4)}},

    /* ---- LSQ ---- */
    {"lsq_per_channel", RLX_OP_FakeQuantizeLSQ, AT(FakeQuantizeLSQ, .bits = 4, .axis = -1), 2,
     {IN(F32, 6, 3), INF(F32, CF_UNIFORM, 0.05, 0.3, 3)}},
    {"lsq_shared_8bit", RLX_OP_FakeQuantizeLSQ, AT(FakeQuantizeLSQ, .bits = 8, .axis = 0), 2,
     {IN(F32, 4, 5), INF(F32, CF_UNIFORM, 0.005, 0.02, 1)}},
    {"lsq_bf16", RLX_OP_FakeQuantizeLSQ, AT(FakeQuantizeLSQ, .bits = 4, .axis = -1), 2,
     {IN(BF16, 4, 3), INF(BF16, CF_UNIFORM, 0.1, 0.4, 3)}},
    {"lsq_backward_x", RLX_OP_FakeQuantizeLSQBackwardX, AT(FakeQuantizeLSQBackwardX, .bits = 2, .axis = -1), 3,
     {IN(F32, 5, 4), INF(F32, CF_UNIFORM, 0.3, 1.0, 4), IN(F32, 5, 4)}},
    {"lsq_backward_scale", RLX_OP_FakeQuantizeLSQBackwardScale, AT(FakeQuantizeLSQBackwardScale, .bits = 4, .axis = -1), 3,
     {IN(F32, 6, 3), INF(F32, CF_UNIFORM, 0.05, 0.3, 3), IN(F32, 6, 3)}},
    {"lsq_backward_scale_shared", RLX_OP_FakeQuantizeLSQBackwardScale,
     AT(FakeQuantizeLSQBackwardScale, .bits = 2, .axis = 0), 3,
     {IN(F64, 4, 3), INF(F64, CF_UNIFORM, 0.3, 0.6, 1), IN(F64, 4, 3)}},

    /* ---- QMatMul / QConv2d ---- */
    {"qmatmul_zero_points", RLX_OP_QMatMul, AT(QMatMul, .x_zp = 3, .w_zp = -2, .out_zp = 5, .mult = 0.002f), 3,
     {INF(I8, CF_INT, -128, 127, 4, 16), INF(I8, CF_INT, -128, 127, 16, 5), INF(I32, CF_INT, -2000, 2000, 5)}},
    {"qmatmul_saturate", RLX_OP_QMatMul, AT(QMatMul, .x_zp = 0, .w_zp = 0, .out_zp = 0, .mult = 0.5f), 3,
     {INF(I8, CF_INT, -128, 127, 3, 8), INF(I8, CF_INT, -128, 127, 8, 4), INF(I32, CF_INT, -10, 10, 4)}},
    {"qmatmul_large_k", RLX_OP_QMatMul, AT(QMatMul, .x_zp = -128, .w_zp = 127, .out_zp = 0, .mult = 1.0e-6f), 3,
     {INF(I8, CF_INT, -128, 127, 2, 300), INF(I8, CF_INT, -128, 127, 300, 3), INF(I32, CF_INT, -100000, 100000, 3)}},
    {"qconv2d_pad_stride", RLX_OP_QConv2d,
     AT(QConv2d, .kernel_size = IL0, .stride = IL(2, 1), .padding = IL(1, 1), .dilation = IL0, .groups = 1, .x_zp = 2,
        .w_zp = -1, .out_zp = -3, .mult = 0.004f),
     3, {INF(I8, CF_INT, -128, 127, 2, 3, 5, 6), INF(I8, CF_INT, -128, 127, 4, 3, 3, 3), INF(I32, CF_INT, -500, 500, 4)}},
    {"qconv2d_groups_dilation", RLX_OP_QConv2d,
     AT(QConv2d, .kernel_size = IL0, .stride = IL0, .padding = IL(1, 0, 0, 1), .dilation = IL(2, 1), .groups = 2,
        .x_zp = 0, .w_zp = 0, .out_zp = 1, .mult = 0.01f),
     3, {INF(I8, CF_INT, -128, 127, 1, 4, 5, 5), INF(I8, CF_INT, -128, 127, 6, 2, 2, 2), INF(I32, CF_INT, -100, 100, 6)}},

    /* ---- DequantMatMul: per-column / block / MLX schemes ---- */
    {"dqmm_int8_block", RLX_OP_DequantMatMul, DMM(INT8_BLOCK, 4, 4, 64), 4,
     {IN(F32, 3, 10), INF(I8, CF_INT, -128, 127, 10, 4), INF(F32, CF_UNIFORM, 0.01, 0.1, 3, 4), IN(F32, 3, 4)}},
    {"dqmm_int8_block_asym", RLX_OP_DequantMatMul, DMM(INT8_BLOCK_ASYM, 8, 4, 64), 4,
     {IN(F32, 2, 16), INF(I8, CF_INT, -128, 127, 16, 3), INF(F32, CF_UNIFORM, 0.01, 0.1, 2, 3),
      INF(F32, CF_INT, -5, 5, 2, 3)}},
    {"dqmm_int4_block", RLX_OP_DequantMatMul, DMM(INT4_BLOCK, 4, 4, 64), 4,
     {IN(F32, 3, 8), BYTES(12), INF(F32, CF_UNIFORM, 0.01, 0.1, 2, 3), IN(F32, 2, 3)}},
    {"dqmm_fp8_e4m3", RLX_OP_DequantMatMul, DMM(FP8_E4M3, 32, 4, 64), 4,
     {IN(F32, 3, 6), INF(U8, CF_INT, 128, 254, 6, 4), INF(F32, CF_UNIFORM, 0.5, 2, 4), IN(F32, 4)}},
    {"dqmm_fp8_e5m2", RLX_OP_DequantMatMul, DMM(FP8_E5M2, 32, 4, 64), 4,
     {IN(F32, 2, 5), INF(U8, CF_INT, 0, 123, 5, 3), INF(F32, CF_UNIFORM, 0.5, 2, 3), IN(F32, 3)}},
    {"dqmm_nvfp4_block", RLX_OP_DequantMatMul, DMM(NVFP4_BLOCK, 16, 4, 64), 4,
     {IN(F32, 2, 32), BYTES(48), INF(U8, CF_INT, 0, 126, 2, 3), INF(F32, CF_UNIFORM, 0.5, 2, 1)}},
    {"dqmm_mlx_affine4", RLX_OP_DequantMatMul, DMM(MLX_AFFINE, 32, 4, 32), 4,
     {IN(F32, 2, 64), BYTES(96), INF(F32, CF_UNIFORM, 0.01, 0.1, 3, 2), IN(F32, 3, 2)}},
    {"dqmm_mlx_affine3", RLX_OP_DequantMatMul, DMM(MLX_AFFINE, 32, 3, 32), 4,
     {IN(F32, 2, 64), BYTES(72), INF(F32, CF_UNIFORM, 0.01, 0.1, 3, 2), IN(F32, 3, 2)}},
    {"dqmm_mlx_affine5", RLX_OP_DequantMatMul, DMM(MLX_AFFINE, 32, 5, 16), 4,
     {IN(F32, 2, 32), BYTES(40), INF(F32, CF_UNIFORM, 0.01, 0.1, 2, 2), IN(F32, 2, 2)}},
    {"dqmm_mlx_mxfp4", RLX_OP_DequantMatMul, DMM(MLX_MXFP4, 32, 4, 32), 4,
     {IN(F32, 2, 64), BYTES(96), INF(U8, CF_INT, 120, 130, 3, 2), IN(F32, 3, 2)}},
    {"dqmm_mlx_mxfp8", RLX_OP_DequantMatMul, DMM(MLX_MXFP8, 32, 8, 32), 4,
     {IN(F32, 2, 32), INF(U8, CF_INT, 0, 126, 64), INF(U8, CF_INT, 120, 130, 2, 1), IN(F32, 2, 1)}},
    {"dqmm_mxfp4x2", RLX_OP_DequantMatMul, DMM(MXFP4X2_BLOCK, 32, 4, 8), 3,
     {IN(F32, 3, 16), BYTES(48), INF(F32, CF_UNIFORM, 0.1, 1, 2 * 2 * 3)}},
    /* ---- DequantMatMul: GGUF (declared [M, N]) ---- */
    {"dqmm_gguf_q4_0", RLX_OP_DequantMatMul, DMM(GGUF_Q4_0, 32, 4, 64), 2, {IN(F32, 3, 64), BYTES(2 * 4 * 18)},
     OUT(F32, 3, 4)},
    {"dqmm_gguf_q4k", RLX_OP_DequantMatMul, DMM(GGUF_Q4K, 32, 4, 64), 2, {IN(F32, 2, 256), BYTES(3 * 144)},
     OUT(F32, 2, 3)},
    {"dqmm_int8_block_f16x", RLX_OP_DequantMatMul, DMM(INT8_BLOCK, 4, 4, 64), 4,
     {IN(F16, 2, 8), INF(I8, CF_INT, -128, 127, 8, 3), INF(F32, CF_UNIFORM, 0.01, 0.1, 2, 3), IN(F32, 2, 3)}},
    {"dqmm_gguf_q8_0_f64x", RLX_OP_DequantMatMul, DMM(GGUF_Q8_0, 32, 4, 64), 2, {IN(F64, 2, 32), BYTES(5 * 34)},
     OUT(F32, 2, 5)},

    /* ---- DequantMoEWeights: GGUF formats decoded by the float64 reference ---- */
    MOE_ROW("moe_w_q4_0", GGUF_Q4_0, 32, 18, 2, 2, 3),
    MOE_ROW("moe_w_q4_1", GGUF_Q4_1, 32, 20, 2, 2, 3),
    MOE_ROW("moe_w_q5_0", GGUF_Q5_0, 32, 22, 2, 2, 3),
    MOE_ROW("moe_w_q5_1", GGUF_Q5_1, 32, 24, 2, 2, 3),
    MOE_ROW("moe_w_q8_0", GGUF_Q8_0, 32, 34, 2, 2, 3),
    MOE_ROW("moe_w_q2k", GGUF_Q2K, 256, 84, 2, 1, 2),
    MOE_ROW("moe_w_q3k", GGUF_Q3K, 256, 110, 2, 1, 2),
    MOE_ROW("moe_w_q4k", GGUF_Q4K, 256, 144, 2, 1, 2),
    MOE_ROW("moe_w_q5k", GGUF_Q5K, 256, 176, 2, 1, 2),
    MOE_ROW("moe_w_q6k", GGUF_Q6K, 256, 210, 2, 1, 2),
    MOE_ROW("moe_w_q8k", GGUF_Q8K, 256, 292, 1, 1, 2),
    MOE_ROW("moe_w_tq1_0", GGUF_TQ1_0, 256, 54, 1, 1, 3),
    MOE_ROW("moe_w_tq2_0", GGUF_TQ2_0, 256, 66, 1, 1, 3),
    MOE_ROW("moe_w_mxfp4", GGUF_MXFP4, 32, 17, 2, 2, 3),
    MOE_ROW("moe_w_nvfp4", GGUF_NVFP4, 16, 9, 2, 2, 3),
    MOE_ROW("moe_w_iq4_nl", GGUF_IQ4NL, 32, 18, 2, 2, 3),
    MOE_ROW("moe_w_iq4_xs", GGUF_IQ4XS, 256, 136, 1, 1, 3),
    MOE_ROW("moe_w_q1_0", GGUF_Q1_0, 128, 18, 2, 1, 2),
    MOE_ROW("moe_w_q2_0", GGUF_Q2_0, 128, 34, 2, 1, 2),
    MOE_ROW("moe_w_fv5", GGUF_FV5, 256, 104, 1, 1, 2),
    MOE_ROW("moe_w_fv5b", GGUF_FV5B, 256, 260, 1, 1, 2),
    /* ---- grouped / MoE matmuls ---- */
    {"dgmm_q4_0", RLX_OP_DequantGroupedMatMul, DGMM(GGUF_Q4_0), 3,
     {IN(F32, 5, 64), BYTES(3 * 4 * 2 * 18), INF(I32, CF_INT, 0, 2, 5)}, OUT(F32, 5, 4)},
    {"dgmm_q6k_f32_idx", RLX_OP_DequantGroupedMatMul, DGMM(GGUF_Q6K), 3,
     {IN(F32, 4, 256), BYTES(2 * 3 * 210), INF(F32, CF_INT, 0, 1, 4)}, OUT(F32, 4, 3)},
    {"dgmm_q8_0_f16x", RLX_OP_DequantGroupedMatMul, DGMM(GGUF_Q8_0), 3,
     {IN(F16, 3, 32), BYTES(2 * 2 * 34), INF(I32, CF_INT, 0, 1, 3)}, OUT(F32, 3, 2)},
    {"dqmm_gguf_empty_m", RLX_OP_DequantMatMul, DMM(GGUF_Q4_1, 32, 4, 64), 2, {IN(F32, 0, 32), BYTES(2 * 20)},
     OUT(F32, 0, 2)},
    {"dgmm_mlx_affine4", RLX_OP_DequantGroupedMatMulMlx,
     AT(DequantGroupedMatMulMlx, .scheme = RLX_QUANT_SCHEME_MLX_AFFINE, .block_size = 32, .bits = 4, .group_size = 16), 5,
     {IN(F32, 4, 32), BYTES(2 * 3 * 32 / 2), INF(F32, CF_UNIFORM, 0.01, 0.1, 2, 3, 2), IN(F32, 2, 3, 2),
      INF(I64, CF_INT, 0, 1, 4)}},
    {"dgmm_mlx_mxfp4", RLX_OP_DequantGroupedMatMulMlx,
     AT(DequantGroupedMatMulMlx, .scheme = RLX_QUANT_SCHEME_MLX_MXFP4, .block_size = 32, .bits = 4, .group_size = 32), 5,
     {IN(F32, 3, 32), BYTES(2 * 2 * 32 / 2), INF(U8, CF_INT, 122, 130, 2, 2, 1), IN(F32, 2, 2, 1),
      INF(I32, CF_INT, 0, 1, 3)}},

    /* ---- Scaled* ---- */
    {"sq_scale_per_tensor_e4m3", RLX_OP_ScaledQuantScale, SQ(ScaledQuantScale, F8E4M3, PER_TENSOR, 32), 1, {IN(F32, 4, 8)}},
    {"sq_scale_e8m0_e2m1", RLX_OP_ScaledQuantScale, SQ(ScaledQuantScale, F4E2M1, BLOCK_MX_E8M0, 32), 1, {IN(F32, 3, 70)}},
    {"sq_scale_nvfp4", RLX_OP_ScaledQuantScale, SQ(ScaledQuantScale, F4E2M1, NVFP4, 16), 1, {IN(F32, 2, 40)}},
    {"sq_scale_e8m0_zero_block", RLX_OP_ScaledQuantScale, SQ(ScaledQuantScale, F8E5M2, BLOCK_MX_E8M0, 4), 1,
     {INF(F32, CF_CONST, 0, 0, 2, 8)}},
    {"sq_scale_custom_e8m0", RLX_OP_ScaledQuantScale,
     AT(ScaledQuantScale, .format = RLX_SCALED_FORMAT_CUSTOM, .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0, .block = 8,
        .custom_exp = 4, .custom_mant = 2, .custom_bias = 6),
     1, {IN(F32, 2, 24)}},
    {"sq_quantize_e4m3", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F8E4M3, PER_TENSOR, 32), 2,
     {INF(F32, CF_NORMAL, 100, 0, 4, 16), INF(F32, CF_CONST, 0.5, 0, 1)}},
    {"sq_quantize_e5m2_special", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F8E5M2, PER_TENSOR, 32), 2,
     {INF(F32, CF_SPECIAL, 0, 0, 3, 7), INF(F32, CF_CONST, 0.25, 0, 1)}},
    {"sq_quantize_e4m3fnuz", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F8E4M3FNUZ, PER_TENSOR, 32), 2,
     {INF(F32, CF_NORMAL, 60, 0, 3, 9), INF(F32, CF_CONST, 0.5, 0, 1)}},
    {"sq_quantize_e5m2fnuz", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F8E5M2FNUZ, PER_TENSOR, 32), 2,
     {INF(F32, CF_SPECIAL, 0, 0, 3, 7), INF(F32, CF_CONST, 0.001, 0, 1)}},
    {"sq_quantize_e2m3_e8m0", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F6E2M3, BLOCK_MX_E8M0, 8), 2,
     {IN(F32, 3, 20), INF(U8, CF_INT, 124, 129, 3, 3)}},
    {"sq_quantize_e3m2_nvfp4", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F6E3M2, NVFP4, 16), 2,
     {IN(F32, 2, 32), INF(U8, CF_INT, 30, 60, 2, 2)}},
    {"sq_quantize_e2m1", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F4E2M1, BLOCK_MX_E8M0, 32), 2,
     {IN(F32, 2, 64), INF(U8, CF_INT, 124, 128, 2, 2)}},
    {"sq_quantize_bf16_e4m3", RLX_OP_ScaledQuantize, SQ(ScaledQuantize, F8E4M3, BLOCK_MX_E8M0, 16), 2,
     {IN(BF16, 2, 32), INF(U8, CF_INT, 124, 128, 2, 2)}},
    {"sq_scale_f16_e8m0", RLX_OP_ScaledQuantScale, SQ(ScaledQuantScale, F8E4M3, BLOCK_MX_E8M0, 8), 1, {IN(F16, 3, 20)}},
    {"sq_quantize_custom_e3m3", RLX_OP_ScaledQuantize, SQC(ScaledQuantize, 3, 3, 5), 2,
     {IN(F32, 4, 10), INF(F32, CF_CONST, 0.125, 0, 1)}},
    {"sq_dequantize_e4m3_all", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F8E4M3, PER_TENSOR, 32), 2,
     {INF(U8, CF_ARANGE, 0, 1, 256), INF(F32, CF_CONST, 0.5, 0, 1)}},
    {"sq_dequantize_e5m2_all", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F8E5M2, PER_TENSOR, 32), 2,
     {INF(U8, CF_ARANGE, 0, 1, 256), INF(F32, CF_CONST, 2, 0, 1)}},
    {"sq_dequantize_fnuz_all", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F8E4M3FNUZ, PER_TENSOR, 32), 2,
     {INF(U8, CF_ARANGE, 0, 1, 256), INF(F32, CF_CONST, 1, 0, 1)}},
    {"sq_dequantize_e5m2fnuz_all", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F8E5M2FNUZ, PER_TENSOR, 32), 2,
     {INF(U8, CF_ARANGE, 0, 1, 256), INF(F32, CF_CONST, 1, 0, 1)}},
    {"sq_dequantize_e2m3_e8m0", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F6E2M3, BLOCK_MX_E8M0, 32), 2,
     {INF(U8, CF_INT, 0, 63, 2, 64), INF(U8, CF_INT, 120, 134, 2, 2)}},
    {"sq_dequantize_e3m2_all", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F6E3M2, PER_TENSOR, 32), 2,
     {INF(U8, CF_ARANGE, 0, 1, 64), INF(F32, CF_CONST, 1, 0, 1)}},
    {"sq_dequantize_e2m1_nvfp4", RLX_OP_ScaledDequantize, SQ(ScaledDequantize, F4E2M1, NVFP4, 16), 2,
     {INF(U8, CF_INT, 0, 15, 2, 32), INF(U8, CF_INT, 0, 126, 2, 2)}},
    {"sq_dequantize_custom_e2m2", RLX_OP_ScaledDequantize, SQC(ScaledDequantize, 2, 2, 1), 2,
     {INF(U8, CF_ARANGE, 0, 1, 32), INF(F32, CF_CONST, 1, 0, 1)}},
    {"scaled_matmul_e4m3", RLX_OP_ScaledMatMul, SMM(F8E4M3, F8E4M3, PER_TENSOR, 32, 0), 4,
     {INF(U8, CF_INT, 0, 126, 3, 8), INF(U8, CF_INT, 128, 254, 4, 8), INF(F32, CF_CONST, 0.5, 0, 1),
      INF(F32, CF_CONST, 0.25, 0, 1)}},
    {"scaled_matmul_mixed_bias", RLX_OP_ScaledMatMul, SMM(F8E4M3, F8E5M2, PER_TENSOR, 32, 1), 5,
     {INF(U8, CF_INT, 0, 126, 2, 6), INF(U8, CF_INT, 0, 123, 3, 6), INF(F32, CF_CONST, 0.5, 0, 1),
      INF(F32, CF_CONST, 0.01, 0, 1), IN(F32, 3)}},
    {"scaled_matmul_mx_e2m1", RLX_OP_ScaledMatMul, SMM(F4E2M1, F4E2M1, BLOCK_MX_E8M0, 32, 0), 4,
     {INF(U8, CF_INT, 0, 15, 2, 64), INF(U8, CF_INT, 0, 15, 3, 64), INF(U8, CF_INT, 124, 130, 2, 2),
      INF(U8, CF_INT, 124, 130, 3, 2)}},
    {"scaled_matmul_nvfp4", RLX_OP_ScaledMatMul, SMM(F4E2M1, F4E2M1, NVFP4, 16, 0), 4,
     {INF(U8, CF_INT, 0, 15, 2, 40), INF(U8, CF_INT, 0, 15, 3, 40), INF(U8, CF_INT, 40, 60, 2, 3),
      INF(U8, CF_INT, 40, 60, 3, 3)}},
    {"scaled_grouped_matmul", RLX_OP_ScaledGroupedMatMul, SGMM(F8E4M3, F8E4M3, PER_TENSOR, 32, 1), 6,
     {INF(U8, CF_INT, 0, 126, 5, 8), INF(U8, CF_INT, 0, 126, 3, 4, 8), INF(F32, CF_CONST, 0.01, 0, 1),
      INF(F32, CF_CONST, 0.02, 0, 1), INF(I32, CF_INT, 0, 2, 5), IN(F32, 3, 4)}},
    {"scaled_grouped_matmul_mx", RLX_OP_ScaledGroupedMatMul, SGMM(F6E3M2, F8E5M2, BLOCK_MX_E8M0, 16, 0), 5,
     {INF(U8, CF_INT, 0, 63, 4, 32), INF(U8, CF_INT, 0, 123, 2, 3, 32), INF(U8, CF_INT, 120, 127, 4, 2),
      INF(U8, CF_INT, 120, 127, 6, 2), INF(F32, CF_INT, 0, 1, 4)}},

    /* ---- codebook (synth) ---- */
    {"synth_matmul", RLX_OP_SynthMatMul, AT(SynthMatMul, .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 2, .num_entries = 5), 3,
     {IN(F32, 3, 8), INF(I32, CF_INT, 0, 4, 4, 6), IN(F32, 5, 2)}},
    {"synth_matmul_f32_codes", RLX_OP_SynthMatMul, AT(SynthMatMul, .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 4, .num_entries = 3), 3,
     {IN(F64, 2, 8), INF(F32, CF_INT, 0, 2, 2, 3), IN(F64, 3, 4)}},
    {"synth_matmul_f16", RLX_OP_SynthMatMul, AT(SynthMatMul, .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 2, .num_entries = 3), 3,
     {IN(F16, 2, 4), INF(U8, CF_INT, 0, 2, 2, 3), IN(F16, 3, 2)}},
    {"synth_backward_dx", RLX_OP_SynthMatMulBackward,
     AT(SynthMatMulBackward, .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 2, .num_entries = 4, .wrt = RLX_SYNTH_WRT_DX), 4,
     {IN(F32, 3, 6), INF(I64, CF_INT, 0, 3, 3, 5), IN(F32, 4, 2), IN(F32, 3, 5)}},
    {"synth_backward_codebook", RLX_OP_SynthMatMulBackward,
     AT(SynthMatMulBackward, .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 3, .num_entries = 4, .wrt = RLX_SYNTH_WRT_CODEBOOK), 4,
     {IN(F32, 2, 9), INF(I32, CF_INT, 0, 3, 3, 4), IN(F32, 4, 3), IN(F32, 2, 4)}},
    {"synth_reconstruct", RLX_OP_SynthReconstruct, AT(SynthReconstruct, .entry_dim = 3, .num_entries = 6), 2,
     {INF(I32, CF_INT, 0, 5, 2, 4), IN(F32, 6, 3)}},

    /* ---- spline ---- */
    {"spline_per_channel", RLX_OP_SplineActivation, SPL(SplineActivation, 6, -1.0f, 1.0f), 2,
     {INF(F32, CF_UNIFORM, -1.5, 1.5, 4, 3), IN(F32, 3, 6)}},
    {"spline_shared_scalar", RLX_OP_SplineActivation, SPL(SplineActivation, 4, -2.0f, 0.5f), 2,
     {INF0(F32, CF_CONST, -0.3, 0), IN(F32, 4)}},
    {"spline_f64_special", RLX_OP_SplineActivation, SPL(SplineActivation, 5, -1.0f, 2.0f), 2,
     {INF(F64, CF_SPECIAL, 0, 0, 2, 5), IN(F64, 5, 5)}},
    {"spline_backward_x", RLX_OP_SplineActivationBackwardX, SPL(SplineActivationBackwardX, 6, -1.0f, 1.0f), 3,
     {INF(F32, CF_UNIFORM, -1.5, 1.5, 4, 3), IN(F32, 3, 6), IN(F32, 4, 3)}},
    {"spline_backward_coeff", RLX_OP_SplineActivationBackwardCoeff, SPL(SplineActivationBackwardCoeff, 6, -1.0f, 1.0f), 3,
     {INF(F32, CF_UNIFORM, -1.5, 1.5, 5, 3), IN(F32, 3, 6), IN(F32, 5, 3)}},
    {"spline_empty", RLX_OP_SplineActivation, SPL(SplineActivation, 3, 0.0f, 1.0f), 2, {IN(F32, 0, 2), IN(F32, 2, 3)}},
    {"spline_bf16", RLX_OP_SplineActivation, SPL(SplineActivation, 5, -1.0f, 1.0f), 2,
     {INF(BF16, CF_UNIFORM, -1.2, 1.2, 3, 2), IN(BF16, 2, 5)}},
    {"spline_backward_x_f16", RLX_OP_SplineActivationBackwardX, SPL(SplineActivationBackwardX, 4, -1.0f, 1.0f), 3,
     {INF(F16, CF_UNIFORM, -1.2, 1.2, 3, 2), IN(F16, 2, 4), IN(F16, 3, 2)}},
    {"spline_backward_coeff_shared", RLX_OP_SplineActivationBackwardCoeff, SPL(SplineActivationBackwardCoeff, 5, -1.0f, 1.0f), 3,
     {INF(F64, CF_UNIFORM, -1.2, 1.2, 4, 3), IN(F64, 5), IN(F64, 4, 3)}},
};

#undef QZ
#undef DQ
#undef FQ
#undef FQB
#undef DMM
#undef MOEW
#undef DGMM
#undef SQ
#undef SQC
#undef SMM
#undef SGMM
#undef BYTES
#undef SPL
#undef MOE_ROW
