/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: signal ops (Fft, FftQ, FftButterflyStage, LogMel, WelchPeaks, the complex
 * helpers, PartitionedConv). See cases.h for the row format. f32/f64 lines are in
 * real-block layout (last axis 2N: N real parts, then N imaginary parts); c64/c128 hold N complex
 * values. N covers the radix-2 path (1, 2, 8, 64, 4096) and the Bluestein path (3, 5, 12, 100, 4099). */
#include "cases.h"

#define FFT(INV, NORM) AT(Fft, .inverse = INV, .norm = RLX_FFT_NORM_##NORM)

static const conf_case conf_cases_signal[] = {
    /* ---- forward, every norm ---- */
    {"fft_f64_n8", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 3, 16)}},
    {"fft_f64_n8_forward_norm", RLX_OP_Fft, FFT(false, FORWARD), 1, {IN(F64, 3, 16)}},
    {"fft_f64_n8_ortho", RLX_OP_Fft, FFT(false, ORTHO), 1, {IN(F64, 3, 16)}},
    /* ---- inverse, every norm ---- */
    {"ifft_f64_n8", RLX_OP_Fft, FFT(true, BACKWARD), 1, {IN(F64, 3, 16)}},
    {"ifft_f64_n8_forward_norm", RLX_OP_Fft, FFT(true, FORWARD), 1, {IN(F64, 3, 16)}},
    {"ifft_f64_n8_ortho", RLX_OP_Fft, FFT(true, ORTHO), 1, {IN(F64, 3, 16)}},
    /* ---- lengths: powers of two and not ---- */
    {"fft_f64_n1", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 4, 2)}},
    {"fft_f64_n2", RLX_OP_Fft, FFT(false, ORTHO), 1, {IN(F64, 4, 4)}},
    {"fft_f64_n3", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 4, 6)}},
    {"ifft_f64_n5", RLX_OP_Fft, FFT(true, FORWARD), 1, {IN(F64, 2, 10)}},
    {"fft_f64_n12", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 2, 24)}},
    {"ifft_f64_n12_ortho", RLX_OP_Fft, FFT(true, ORTHO), 1, {IN(F64, 2, 24)}},
    {"fft_f64_n64", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 2, 128)}},
    {"fft_f64_n100", RLX_OP_Fft, FFT(false, FORWARD), 1, {IN(F64, 100 * 2)}},
    {"fft_f64_n4096", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 4096 * 2)}},
    {"ifft_f64_n4099_ortho", RLX_OP_Fft, FFT(true, ORTHO), 1, {IN(F64, 4099 * 2)}}, /* prime: Bluestein, M = 16384 */
    /* ---- f32 (accumulates in double, rounds once) ---- */
    {"fft_f32_n8", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F32, 2, 3, 16)}},
    {"ifft_f32_n5_forward_norm", RLX_OP_Fft, FFT(true, FORWARD), 1, {IN(F32, 2, 3, 10)}},
    {"fft_f32_n64_ortho", RLX_OP_Fft, FFT(false, ORTHO), 1, {IN(F32, 3, 128)}},
    {"fft_f32_n12", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F32, 5, 24)}},
    /* ---- complex ---- */
    {"fft_c64_n8", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(C64, 3, 8)}},
    {"fft_c64_n1", RLX_OP_Fft, FFT(false, ORTHO), 1, {IN(C64, 3, 1)}},
    {"ifft_c64_n12_forward_norm", RLX_OP_Fft, FFT(true, FORWARD), 1, {IN(C64, 2, 2, 12)}},
    {"fft_c64_n5_ortho", RLX_OP_Fft, FFT(false, ORTHO), 1, {IN(C64, 4, 5)}},
    {"fft_c128_n64", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(C128, 2, 64)}},
    {"ifft_c128_n3", RLX_OP_Fft, FFT(true, BACKWARD), 1, {IN(C128, 3)}},
    /* ---- edge cases ---- */
    {"fft_f64_empty_batch", RLX_OP_Fft, FFT(false, BACKWARD), 1, {IN(F64, 0, 8)}},
    {"fft_f64_constant", RLX_OP_Fft, FFT(false, BACKWARD), 1, {INF(F64, CF_CONST, 1.5, 0, 2, 12)}},
    /* ---- complex helpers ---- */
    {"complex_norm_sq_c64", RLX_OP_ComplexNormSq, NULL, 1, {IN(C64, 3, 5)}},
    {"complex_norm_sq_c128", RLX_OP_ComplexNormSq, NULL, 1, {IN(C128, 2, 2, 3)}},
    {"complex_norm_sq_c64_special", RLX_OP_ComplexNormSq, NULL, 1, {INF(C64, CF_SPECIAL, 0, 0, 12)}},
    {"complex_norm_sq_backward_c64", RLX_OP_ComplexNormSqBackward, NULL, 2, {IN(C64, 3, 5), IN(F32, 3, 5)}},
    {"complex_norm_sq_backward_c128", RLX_OP_ComplexNormSqBackward, NULL, 2, {IN(C128, 4), IN(F64, 4)}},
    {"conjugate_c64", RLX_OP_Conjugate, NULL, 1, {IN(C64, 2, 7)}},
    {"conjugate_c128", RLX_OP_Conjugate, NULL, 1, {IN(C128, 5)}},
    /* ---- LogMel: spectrum [..., 2 n_fft], filters [n_mels, n_fft/2 + 1] ---- */
    {"logmel_f32", RLX_OP_LogMel, NULL, 2, {IN(F32, 3, 32), INF(F32, CF_UNIFORM, 0, 1, 5, 9)}},
    {"logmel_f64_batched", RLX_OP_LogMel, NULL, 2, {IN(F64, 2, 3, 16), INF(F64, CF_UNIFORM, 0, 1, 4, 5)}},
    /* 0/1 filters: some rows are all zero, so E_m = 0 and L_m is clamped to the floor */
    {"logmel_f64_clamped", RLX_OP_LogMel, NULL, 2, {IN(F64, 4, 4), INF(F64, CF_INT, 0, 1, 12, 2)}},
    {"logmel_f64_odd_nfft", RLX_OP_LogMel, NULL, 2, {IN(F64, 2, 10), INF(F64, CF_UNIFORM, 0, 1, 3, 3)}},
    {"logmel_backward_f32", RLX_OP_LogMelBackward, NULL, 3,
     {IN(F32, 3, 32), INF(F32, CF_UNIFORM, 0, 1, 5, 9), IN(F32, 3, 5)}},
    {"logmel_backward_f64_clamped", RLX_OP_LogMelBackward, NULL, 3,
     {IN(F64, 2, 2, 4), INF(F64, CF_INT, 0, 1, 12, 2), IN(F64, 2, 2, 12)}},
    /* ---- WelchPeaks: [batch * n_segments, 2 n_fft] -> [batch, 2k] ---- */
    {"welch_peaks_f32", RLX_OP_WelchPeaks, AT(WelchPeaks, .k = 3, .n_segments = 4), 1, {IN(F32, 8, 32)}},
    {"welch_peaks_f64_one_segment", RLX_OP_WelchPeaks, AT(WelchPeaks, .k = 2, .n_segments = 1), 1, {IN(F64, 3, 12)}},
    {"welch_peaks_f64_k_past_bins", RLX_OP_WelchPeaks, AT(WelchPeaks, .k = 6, .n_segments = 2), 1, {IN(F64, 4, 8)}},
    /* ---- FftButterflyStage: state [B, 2 n_fft] (re, im) pairs; gate, rev, tw [n_fft/2] ---- */
    {"fft_butterfly_stage0_f32", RLX_OP_FftButterflyStage, AT(FftButterflyStage, .stage = 0, .n_fft = 8), 5,
     {IN(F32, 3, 16), INF(F32, CF_BOOL, 0, 0, 4), INF(F32, CF_UNIFORM, 0, 1, 4), IN(F32, 4), IN(F32, 4)}},
    {"fft_butterfly_stage2_f64", RLX_OP_FftButterflyStage, AT(FftButterflyStage, .stage = 2, .n_fft = 8), 5,
     {IN(F64, 2, 16), INF(F64, CF_BOOL, 0, 0, 4), INF(F64, CF_UNIFORM, 0, 1, 4), IN(F64, 4), IN(F64, 4)}},
    {"fft_butterfly_stage1_f64_pairs", RLX_OP_FftButterflyStage, AT(FftButterflyStage, .stage = 1, .n_fft = 16), 5,
     {IN(F64, 2, 16, 2), INF(F64, CF_BOOL, 0, 0, 8), INF(F64, CF_UNIFORM, 0, 1, 8), IN(F64, 8), IN(F64, 8)}},
    /* ---- FftQ: radix-2 with per-stage rounding on i16 / i32 ---- */
    {"fftq_i16_none", RLX_OP_FftQ, AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_NONE),
     1, {INF(I16, CF_INT, -300, 300, 3, 16)}},
    {"fftq_i16_saturating", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_SATURATING), 1,
     {INF(I16, CF_INT, -20000, 20000, 2, 32)}},
    {"fftq_i16_wrapping_overflow", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_NONE), 1,
     {INF(I16, CF_INT, -20000, 20000, 2, 32)}},
    {"fftq_i32_every_other", RLX_OP_FftQ,
     AT(FftQ, .inverse = true, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_EVERY_OTHER), 1,
     {INF(I32, CF_INT, -100000, 100000, 2, 64)}},
    {"fftq_i32_per_stage_ortho", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_ORTHO, .scale = RLX_FFTQ_SCALE_PER_STAGE), 1,
     {INF(I32, CF_INT, -100000, 100000, 3, 16)}},
    {"fftq_f64_per_stage", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_PER_STAGE), 1, {IN(F64, 2, 16)}},
    {"fftq_c64_forward_norm", RLX_OP_FftQ,
     AT(FftQ, .inverse = true, .norm = RLX_FFT_NORM_FORWARD, .scale = RLX_FFTQ_SCALE_NONE), 1, {IN(C64, 2, 8)}},
    /* ---- PartitionedConv: x [..., L] (*) ir [M] -> [..., L + M - 1] ---- */
    {"partitioned_conv_f32", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 8), 2, {IN(F32, 2, 3, 40), IN(F32, 13)}},
    {"partitioned_conv_f64_long_ir", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 4), 2, {IN(F64, 2, 5), IN(F64, 23)}},
    {"partitioned_conv_f64_l1", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 64), 2, {IN(F64, 3, 1), IN(F64, 1)}},
    {"partitioned_conv_f64_block3", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 3), 2, {IN(F64, 100), IN(F64, 17)}},
    {"partitioned_conv_f16", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 4), 2, {IN(F16, 2, 12), IN(F16, 5)}, .tol = 4},
    {"partitioned_conv_bf16", RLX_OP_PartitionedConv, AT(PartitionedConv, .block = 8), 2, {IN(BF16, 20), IN(BF16, 3)}, .tol = 4},
    {"logmel_bf16", RLX_OP_LogMel, NULL, 2, {IN(BF16, 2, 16), INF(BF16, CF_UNIFORM, 0, 1, 3, 5)}},
    {"welch_peaks_f16", RLX_OP_WelchPeaks, AT(WelchPeaks, .k = 2, .n_segments = 2), 1, {IN(F16, 4, 16)}},
    {"fft_butterfly_stage0_bf16", RLX_OP_FftButterflyStage, AT(FftButterflyStage, .stage = 0, .n_fft = 4), 5,
     {IN(BF16, 2, 8), INF(BF16, CF_BOOL, 0, 0, 2), INF(BF16, CF_UNIFORM, 0, 1, 2), IN(BF16, 2), IN(BF16, 2)}},
    {"fftq_f32_every_other", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_ORTHO, .scale = RLX_FFTQ_SCALE_EVERY_OTHER), 1, {IN(F32, 3, 32)}},
    {"fftq_c128_saturating", RLX_OP_FftQ,
     AT(FftQ, .inverse = false, .norm = RLX_FFT_NORM_BACKWARD, .scale = RLX_FFTQ_SCALE_SATURATING), 1, {IN(C128, 2, 4)}},
    {"fftq_i16_n1", RLX_OP_FftQ, AT(FftQ, .inverse = true, .norm = RLX_FFT_NORM_FORWARD, .scale = RLX_FFTQ_SCALE_NONE),
     1, {INF(I16, CF_INT, -50, 50, 3, 2)}},
    {"logmel_f16", RLX_OP_LogMel, NULL, 2, {IN(F16, 2, 16), INF(F16, CF_UNIFORM, 0, 1, 3, 5)}},
    {"logmel_backward_bf16", RLX_OP_LogMelBackward, NULL, 3,
     {IN(BF16, 2, 16), INF(BF16, CF_UNIFORM, 0, 1, 3, 5), IN(BF16, 2, 3)}},
    {"welch_peaks_bf16_n_fft1", RLX_OP_WelchPeaks, AT(WelchPeaks, .k = 2, .n_segments = 3), 1, {IN(BF16, 6, 2)}},
};
