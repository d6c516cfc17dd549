/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: signal ops (Fft). See cases.h for the row format. f32/f64 lines are in
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
};
