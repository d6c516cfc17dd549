/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Storage formats of the quantization ops (spec ir-special §1.1-§1.3), shared by the reference
 * kernels of ref/quant.c, ref/quant_matmul.c and ref/scaled.c and by their tests:
 *   - GGUF blocks: rq_gguf_block gives a scheme's block geometry, rq_gguf_decode one block to f32
 *     exactly as ggml lays it out (the arithmetic is f32 in ggml's order, so results are bit-exact);
 *   - the scaled low-precision element formats (FP8 / FP6 / FP4 / Custom): decode and encode;
 *   - small scalar codecs (E8M0, E4M3 scales, E2M1). */
#ifndef RLX_REF_QUANT_FORMATS_H
#define RLX_REF_QUANT_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- GGUF blocks ---- */
/* Elements and bytes of one block of a GGUF scheme; false for a non-GGUF scheme. */
bool rq_gguf_block(int32_t scheme, size_t *elems, size_t *bytes);
/* Decodes one block (rq_gguf_block's bytes) into its elements. */
void rq_gguf_decode(int32_t scheme, const uint8_t *blk, float *out);
/* Decodes `rows` rows of `k` elements (k a whole number of blocks) stored row after row. */
void rq_gguf_decode_rows(int32_t scheme, const uint8_t *src, size_t rows, size_t k, float *out);

/* Encodes one block of `elems` f32 values the way ggml's reference quantizer does (and the PyPI
 * gguf package, bit for bit), for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0 and MXFP4; false for other
 * schemes. Values must be finite. */
bool rq_gguf_encode(int32_t scheme, const float *x, uint8_t *blk);

/* IQ codebook grids (ref/gguf_grids.c): element j of a row in bits [b*j, b*(j+1)) as an index into
 * the format's value map (see tools/gen_gguf_grids.py). */
extern const uint16_t rq_grid_iq2xxs[256], rq_grid_iq2xs[512], rq_grid_iq2s[1024];
extern const uint16_t rq_grid_iq3xxs[256], rq_grid_iq3s[512], rq_grid_iq1s[2048];

/* ---- scalar codecs ---- */
float rq_e8m0(uint8_t e);       /* 2^(e - 127); 0xFF is NaN */
float rq_e4m3(uint8_t c);       /* OCP F8E4M3 (sign, 4 exponent, 3 mantissa bits, bias 7) */
float rq_e4m3_scale(uint8_t c); /* an E4M3 scale: like rq_e4m3, the NaN code reads as 0 */
float rq_e5m2(uint8_t c);       /* OCP F8E5M2 (IEEE-like) */
float rq_e2m1(uint8_t nibble);  /* {0, .5, 1, 1.5, 2, 3, 4, 6}, bit 3 = sign */

/* ---- scaled element formats (ScaledFormat, §1.3) ---- */
typedef struct rq_fmt {
  int32_t kind;     /* RLX_SCALED_FORMAT_* */
  int ebits, mbits; /* exponent / mantissa bits (sign bit above them) */
  int bias;
} rq_fmt;
/* The format of a ScaledFormat value (custom_* used only for Custom). */
rq_fmt rq_fmt_of(int32_t kind, int64_t custom_exp, int64_t custom_mant, int64_t custom_bias);
double rq_fmt_decode(const rq_fmt *f, uint8_t code);
/* Nearest finite code (exhaustive search; ties to the code with an even lowest bit); overflow and
 * infinities saturate to the largest finite magnitude; NaN -> code 0. */
uint8_t rq_fmt_encode(const rq_fmt *f, double v);
double rq_fmt_max(const rq_fmt *f); /* largest finite value */
/* Nearest E4M3 code of a positive scale (no NaN code), ties to even code. */
uint8_t rq_e4m3_encode(double v);

#endif
