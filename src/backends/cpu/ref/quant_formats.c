/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Storage formats of the quantization ops: GGUF block decoders (ggml's layouts, f32 arithmetic in
 * ggml's order so that results are bit-exact), the scaled FP8/FP6/FP4 element formats and the
 * small scalar codecs. Written from the format descriptions (spec ir-special §1.1-§1.3). */
#include "backends/cpu/ref/quant_formats.h"

#include <math.h>
#include <string.h>

#include "rlx/rlx.h"
#include "core/elem.h"

/* ======================================================================================
 * Little helpers
 * ====================================================================================== */

static float f16_at(const uint8_t *p) { return rlx_f16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }
static float f32_at(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t u16_at(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t u32_at(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The IQ2/IQ3 sign bytes: 7 stored bits, the 8th makes the number of set bits even. */
static uint8_t ksign(uint32_t i) {
  i &= 127;
  return (uint8_t)(i | ((uint32_t)(__builtin_popcount(i) & 1) << 7));
}
/* v * (neg ? -1 : 1) as the f32 product computes it: a NaN keeps its sign (x86 multiplication
 * returns the NaN operand unchanged, which is what ggml and gguf produce). */
static float signed_by(float v, int neg) { return neg && !isnan(v) ? -v : v; }
/* Element j of a packed grid row. */
static int grid_el(uint16_t row, int bits, int j) { return (row >> (bits * j)) & ((1 << bits) - 1); }
static const float iq2_map[3] = {8, 25, 43};
static const float iq3xxs_map[8] = {4, 12, 20, 28, 36, 44, 52, 62};
static const float iq3s_map[8] = {1, 3, 5, 7, 9, 11, 13, 15};
static const float iq1_map[3] = {-1, 0, 1};
static const int8_t iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
/* E2M1 magnitudes doubled (ggml's MXFP4 / NVFP4 integer tables). */
static const int8_t e2m1_x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ggml's E8M0 "half" scale: 2^(e - 128) as an f32 bit pattern (subnormal below e = 2). */
static float e8m0_half(uint8_t e) { return e < 2 ? bits_f32(0x00200000u << e) : bits_f32((uint32_t)(e - 1) << 23); }
/* Unsigned E4M3 scale of ggml's NVFP4, halved (the doubled E2M1 table); 0 and 0x7F read as 0. */
static float ue4m3_half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  int e = (x >> 3) & 0xF, m = x & 7;
  float raw = e == 0 ? (float)m * 0x1p-9f : (1.0f + (float)m / 8.0f) * ldexpf(1.0f, e - 7);
  return raw * 0.5f;
}

/* 6-bit scale j and min j (0..7) of the 12 packed bytes of Q4_K / Q5_K. */
static void k_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *mn) {
  if (j < 4) {
    *sc = s[j] & 63;
    *mn = s[j + 4] & 63;
  } else {
    *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *mn = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

/* ======================================================================================
 * GGUF block geometry
 * ====================================================================================== */

bool rq_gguf_block(int32_t scheme, size_t *elems, size_t *bytes) {
  int64_t e, b;
  if (!rlx_quant_scheme_gguf_block(scheme, &e, &b)) return false;
  *elems = (size_t)e;
  *bytes = (size_t)b;
  return true;
}

/* ======================================================================================
 * Legacy 32-element blocks
 * ====================================================================================== */

/* Q4_0: f16 d, 16 bytes; element j < 16 is the low nibble of byte j, j + 16 the high one. */
static void dec_q4_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)((b[2 + j] & 0xF) - 8);
    y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
  }
}
/* Q4_1: f16 d, f16 m, 16 bytes; q * d + m. */
static void dec_q4_1(const uint8_t *b, float *y) {
  float d = f16_at(b), m = f16_at(b + 2);
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)(b[4 + j] & 0xF) + m;
    y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
  }
}
/* Q5_0: f16 d, u32 high bits (bit j for element j), 16 bytes of low nibbles; (q - 16) * d. */
static void dec_q5_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  uint32_t qh = u32_at(b + 2);
  for (int j = 0; j < 16; j++) {
    int lo = (b[6 + j] & 0xF) | (int)(((qh >> j) & 1) << 4);
    int hi = (b[6 + j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * (float)(lo - 16);
    y[j + 16] = d * (float)(hi - 16);
  }
}
/* Q5_1: f16 d, f16 m, u32 high bits, 16 bytes; q * d + m. */
static void dec_q5_1(const uint8_t *b, float *y) {
  float d = f16_at(b), m = f16_at(b + 2);
  uint32_t qh = u32_at(b + 4);
  for (int j = 0; j < 16; j++) {
    int lo = (b[8 + j] & 0xF) | (int)(((qh >> j) & 1) << 4);
    int hi = (b[8 + j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
    y[j] = d * (float)lo + m;
    y[j + 16] = d * (float)hi + m;
  }
}
/* Q8_0: f16 d, 32 signed bytes. */
static void dec_q8_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* ======================================================================================
 * K-quants (256-element super-blocks)
 * ====================================================================================== */

/* Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of 2-bit codes, f16 d, f16
 * dmin. Code bytes: element h*128 + s*32 + l is bits 2s..2s+1 of byte h*32 + l. */
static void dec_q2_k(const uint8_t *b, float *y) {
  const uint8_t *sc = b, *qs = b + 16;
  float d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int e = 0; e < 256; e++) {
    int h = e / 128, s = (e % 128) / 32, l = e % 32, g = e / 16;
    float dl = d * (float)(sc[g] & 0xF), ml = dmin * (float)(sc[g] >> 4);
    int q = (qs[h * 32 + l] >> (2 * s)) & 3;
    y[e] = dl * (float)q - ml;
  }
}
/* Q3_K: 32 bytes high-bit mask, 64 bytes 2-bit codes, 12 bytes of 6-bit scales, f16 d. A clear mask
 * bit subtracts 4. Scale i: low 4 bits from byte i (i < 8) or the high nibble of byte i - 8; high 2
 * bits from byte 8 + i % 4 at bit 2 * (i / 4); minus 32. */
static void dec_q3_k(const uint8_t *b, float *y) {
  const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
  float d = f16_at(b + 108);
  float dl[16];
  for (int i = 0; i < 16; i++) {
    int lo = i < 8 ? (sc[i] & 0xF) : (sc[i - 8] >> 4);
    int hi = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
    dl[i] = d * (float)((int8_t)(uint8_t)(lo | (hi << 4)) - 32);
  }
  for (int e = 0; e < 256; e++) {
    int h = e / 128, s = (e % 128) / 32, l = e % 32;
    int q2 = (qs[h * 32 + l] >> (2 * s)) & 3;
    int hb = (hm[l] >> (e / 32)) & 1;
    y[e] = dl[e / 16] * (float)(q2 - (hb ? 0 : 4));
  }
}
/* Q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales/mins, 128 bytes of nibbles; element
 * c*64 + s*32 + l is nibble s of byte c*32 + l; sub-block of 32 = c*2 + s. */
static void dec_q4_k(const uint8_t *b, float *y) {
  float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t *sc = b + 4, *qs = b + 16;
  for (int j = 0; j < 8; j++) {
    uint8_t s, m;
    k_scale_min(sc, j, &s, &m);
    float d1 = d * (float)s, m1 = dmin * (float)m;
    int c = j / 2, sh = 4 * (j % 2);
    for (int l = 0; l < 32; l++) y[j * 32 + l] = d1 * (float)((qs[c * 32 + l] >> sh) & 0xF) - m1;
  }
}
/* Q5_K: as Q4_K plus 32 bytes of fifth bits (element j*32 + l: bit j of byte l) before the nibbles. */
static void dec_q5_k(const uint8_t *b, float *y) {
  float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t *sc = b + 4, *qh = b + 16, *qs = b + 48;
  for (int j = 0; j < 8; j++) {
    uint8_t s, m;
    k_scale_min(sc, j, &s, &m);
    float d1 = d * (float)s, m1 = dmin * (float)m;
    int c = j / 2, sh = 4 * (j % 2);
    for (int l = 0; l < 32; l++) {
      int q = ((qs[c * 32 + l] >> sh) & 0xF) | (((qh[l] >> j) & 1) << 4);
      y[j * 32 + l] = d1 * (float)q - m1;
    }
  }
}
/* Q6_K: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 signed scales, f16 d. Element
 * h*128 + r (r < 128): low nibble (r / 64) of byte h*64 + r % 64; high bits 2*(r / 32) of byte
 * h*32 + r % 32; q - 32, scale per 16 elements. */
static void dec_q6_k(const uint8_t *b, float *y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = f16_at(b + 208);
  for (int e = 0; e < 256; e++) {
    int h = e / 128, r = e % 128;
    int lo = (ql[h * 64 + r % 64] >> (4 * (r / 64))) & 0xF;
    int hi = (qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3;
    int q = (lo | (hi << 4)) - 32;
    y[e] = (d * (float)sc[e / 16]) * (float)q;
  }
}
/* Q8_K: f32 d, 256 signed bytes, 16 i16 block sums (unused here). */
static void dec_q8_k(const uint8_t *b, float *y) {
  float d = f32_at(b);
  for (int j = 0; j < 256; j++) y[j] = d * (float)(int8_t)b[4 + j];
}

/* ======================================================================================
 * Ternary and FP4 formats
 * ====================================================================================== */

/* TQ1_0: 48 bytes of 5 base-3 digits each, 4 bytes of 4 digits, f16 d. A byte holds its digits as a
 * fixed-point fraction: digit p is floor(((byte * 3^p) mod 256) * 3 / 256). Elements: bytes 0..31
 * give element p*32 + l, bytes 32..47 element 160 + p*16 + l, bytes 48..51 element 240 + p*4 + l. */
static int tq1_digit(uint8_t byte, int p) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  uint8_t v = (uint8_t)(byte * pow3[p]);
  return ((uint16_t)v * 3) >> 8;
}
static void dec_tq1_0(const uint8_t *b, float *y) {
  float d = f16_at(b + 52);
  for (int p = 0; p < 5; p++)
    for (int l = 0; l < 32; l++) y[p * 32 + l] = d * (float)(tq1_digit(b[l], p) - 1);
  for (int p = 0; p < 5; p++)
    for (int l = 0; l < 16; l++) y[160 + p * 16 + l] = d * (float)(tq1_digit(b[32 + l], p) - 1);
  for (int p = 0; p < 4; p++)
    for (int l = 0; l < 4; l++) y[240 + p * 4 + l] = d * (float)(tq1_digit(b[48 + l], p) - 1);
}
/* TQ2_0: 64 bytes of 2-bit codes (element h*128 + s*32 + l: bits 2s of byte h*32 + l), f16 d; q - 1. */
static void dec_tq2_0(const uint8_t *b, float *y) {
  float d = f16_at(b + 64);
  for (int e = 0; e < 256; e++) {
    int h = e / 128, s = (e % 128) / 32, l = e % 32;
    y[e] = d * (float)(((b[h * 32 + l] >> (2 * s)) & 3) - 1);
  }
}
/* MXFP4: E8M0 exponent byte, 16 bytes of E2M1 nibbles (low nibbles first, then high). */
static void dec_mxfp4(const uint8_t *b, float *y) {
  float d = e8m0_half(b[0]);
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)e2m1_x2[b[1 + j] & 0xF];
    y[j + 16] = d * (float)e2m1_x2[b[1 + j] >> 4];
  }
}
/* NVFP4 (16 elements): unsigned E4M3 scale byte, 8 bytes of E2M1 nibbles (low nibbles first). */
static void dec_nvfp4(const uint8_t *b, float *y) {
  float d = ue4m3_half(b[0]);
  for (int j = 0; j < 8; j++) {
    y[j] = d * (float)e2m1_x2[b[1 + j] & 0xF];
    y[j + 8] = d * (float)e2m1_x2[b[1 + j] >> 4];
  }
}

/* ======================================================================================
 * IQ formats (codebook grids)
 * ====================================================================================== */

/* IQ4_NL: f16 d, 16 bytes of nibbles into the non-linear table. */
static void dec_iq4_nl(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)iq4nl_values[b[2 + j] & 0xF];
    y[j + 16] = d * (float)iq4nl_values[b[2 + j] >> 4];
  }
}
/* IQ4_XS: f16 d, u16 high scale bits (2 per sub-block), 4 bytes of low scale nibbles, 128 bytes of
 * nibbles (sub-block ib: 16 low nibbles then 16 high nibbles of bytes ib*16..). */
static void dec_iq4_xs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  uint16_t sh = u16_at(b + 2);
  const uint8_t *sl = b + 4, *qs = b + 8;
  for (int ib = 0; ib < 8; ib++) {
    int lo = (sl[ib / 2] >> (4 * (ib % 2))) & 0xF, hi = (sh >> (2 * ib)) & 3;
    float dl = d * (float)((int8_t)(uint8_t)(lo | (hi << 4)) - 32);
    for (int l = 0; l < 16; l++) {
      y[ib * 32 + l] = dl * (float)iq4nl_values[qs[ib * 16 + l] & 0xF];
      y[ib * 32 + 16 + l] = dl * (float)iq4nl_values[qs[ib * 16 + l] >> 4];
    }
  }
}
/* IQ2_XXS: f16 d, 8 sub-blocks of two u32: four grid indices (bytes of the first), four 7-bit sign
 * codes and a 4-bit scale (the second). */
static void dec_iq2_xxs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int ib = 0; ib < 8; ib++) {
    uint32_t a0 = u32_at(b + 2 + 8 * ib), a1 = u32_at(b + 6 + 8 * ib);
    float db = d * (0.5f + (float)(a1 >> 28)) * 0.25f;
    for (int l = 0; l < 4; l++) {
      uint16_t row = rq_grid_iq2xxs[(a0 >> (8 * l)) & 0xFF];
      uint8_t sg = ksign(a1 >> (7 * l));
      for (int j = 0; j < 8; j++) y[ib * 32 + l * 8 + j] = signed_by(db * iq2_map[grid_el(row, 2, j)], (sg >> j) & 1);
    }
  }
}
/* IQ2_XS: f16 d, 32 u16 (9-bit grid index, 7-bit sign code), 8 scale bytes (a nibble per 16 elements). */
static void dec_iq2_xs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  const uint8_t *sc = b + 66;
  for (int i = 0; i < 32; i++) {
    uint16_t q = u16_at(b + 2 + 2 * i);
    int s = (sc[i / 4] >> (4 * ((i / 2) % 2))) & 0xF;
    float db = d * (0.5f + (float)s) * 0.25f;
    uint16_t row = rq_grid_iq2xs[q & 511];
    uint8_t sg = ksign(q >> 9);
    for (int j = 0; j < 8; j++) y[i * 8 + j] = signed_by(db * iq2_map[grid_el(row, 2, j)], (sg >> j) & 1);
  }
}
/* IQ2_S: f16 d, 32 low index bytes, 32 sign bytes, 8 bytes of 2-bit high index parts, 8 scale bytes. */
static void dec_iq2_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
  for (int i = 0; i < 32; i++) {
    int idx = qs[i] | (((qh[i / 4] >> (2 * (i % 4))) & 3) << 8);
    int s = (sc[i / 4] >> (4 * ((i / 2) % 2))) & 0xF;
    float db = d * (0.5f + (float)s) * 0.25f;
    uint16_t row = rq_grid_iq2s[idx];
    for (int j = 0; j < 8; j++) y[i * 8 + j] = signed_by(db * iq2_map[grid_el(row, 2, j)], (signs[i] >> j) & 1);
  }
}
/* IQ3_XXS: f16 d, 64 grid index bytes (4 elements each), 8 u32 of four 7-bit sign codes + scale. */
static void dec_iq3_xxs(const uint8_t *b, float *y) {
  float d = f16_at(b);
  const uint8_t *qs = b + 2;
  for (int ib = 0; ib < 8; ib++) {
    uint32_t aux = u32_at(b + 66 + 4 * ib);
    float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
    for (int e = 0; e < 32; e++) {
      uint16_t row = rq_grid_iq3xxs[qs[ib * 8 + e / 4]];
      uint8_t sg = ksign(aux >> (7 * (e / 8)));
      y[ib * 32 + e] = signed_by(db * iq3xxs_map[grid_el(row, 3, e % 4)], (sg >> (e % 8)) & 1);
    }
  }
}
/* IQ3_S: f16 d, 64 low index bytes, 8 bytes of index ninth bits, 32 sign bytes, 4 scale bytes. */
static void dec_iq3_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
  for (int e = 0; e < 256; e++) {
    int i = e / 4, ib = e / 32;
    int idx = qs[i] | (((qh[i / 8] >> (i % 8)) & 1) << 8);
    int s = (sc[ib / 2] >> (4 * (ib % 2))) & 0xF;
    float db = d * (float)(1 + 2 * s);
    y[e] = signed_by(db * iq3s_map[grid_el(rq_grid_iq3s[idx], 3, e % 4)], (signs[e / 8] >> (e % 8)) & 1);
  }
}
/* IQ1_S: f16 d, 32 low index bytes, 8 u16 (4 x 3-bit high index parts, 3-bit scale, delta sign). */
static void dec_iq1_s(const uint8_t *b, float *y) {
  float d = f16_at(b);
  const uint8_t *qs = b + 2;
  for (int ib = 0; ib < 8; ib++) {
    uint16_t qh = u16_at(b + 34 + 2 * ib);
    float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
    float delta = (qh & 0x8000) ? -0.125f : 0.125f;
    for (int l = 0; l < 4; l++) {
      uint16_t row = rq_grid_iq1s[qs[ib * 4 + l] | (((qh >> (3 * l)) & 7) << 8)];
      for (int j = 0; j < 8; j++) y[ib * 32 + l * 8 + j] = dl * (iq1_map[grid_el(row, 2, j)] + delta);
    }
  }
}
/* IQ1_M: 32 low index bytes, 16 bytes of two 4-bit parts (3 high index bits + delta sign), 4 u16
 * holding 3-bit scales (one per 16 elements) and, in their top nibbles, the f16 d. */
static void dec_iq1_m(const uint8_t *b, float *y) {
  const uint8_t *qs = b, *qh = b + 32;
  uint16_t sc[4];
  for (int k = 0; k < 4; k++) sc[k] = u16_at(b + 48 + 2 * k);
  uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  float d = rlx_f16_to_f32(dbits);
  for (int i = 0; i < 32; i++) {
    int g = i / 2; /* 16-element scale group */
    int s = (sc[g / 4] >> (3 * (g % 4))) & 7;
    float dl = d * (float)(2 * s + 1);
    int nib = (qh[i / 2] >> (4 * (i % 2))) & 0xF;
    float delta = (nib & 8) ? -0.125f : 0.125f;
    uint16_t row = rq_grid_iq1s[qs[i] | ((nib & 7) << 8)];
    for (int j = 0; j < 8; j++) y[i * 8 + j] = dl * (iq1_map[grid_el(row, 2, j)] + delta);
  }
}

/* ======================================================================================
 * Non-upstream formats (bit order not checked against an external implementation)
 * ====================================================================================== */

/* Q1_0: f16 d, 128 sign bits (element j: bit j % 8 of byte j / 8; set = +d). */
static void dec_q1_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 128; j++) y[j] = ((b[2 + j / 8] >> (j % 8)) & 1) ? d : -d;
}
/* Q2_0: f16 d, 128 2-bit codes (element j: bits 2*(j % 4) of byte j / 4); (q - 1) * d. */
static void dec_q2_0(const uint8_t *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 128; j++) y[j] = (float)(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}
/* FV5: f32 s_lo, f32 s_hi, bit planes bp, bn, br of 32 bytes; (bp - bn) * (br ? s_hi : s_lo). */
static void dec_fv5(const uint8_t *b, float *y) {
  float lo = f32_at(b), hi = f32_at(b + 4);
  const uint8_t *bp = b + 8, *bn = b + 40, *br = b + 72;
  for (int j = 0; j < 256; j++) {
    int p = (bp[j / 8] >> (j % 8)) & 1, m = (bn[j / 8] >> (j % 8)) & 1, r = (br[j / 8] >> (j % 8)) & 1;
    y[j] = (float)(p - m) * (r ? hi : lo);
  }
}
/* FV5B: f32 s, 256 signed bytes. */
static void dec_fv5b(const uint8_t *b, float *y) {
  float s = f32_at(b);
  for (int j = 0; j < 256; j++) y[j] = s * (float)(int8_t)b[4 + j];
}

void rq_gguf_decode(int32_t scheme, const uint8_t *blk, float *out) {
  switch (scheme) {
  case RLX_QUANT_SCHEME_GGUF_Q4_0: dec_q4_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q4_1: dec_q4_1(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q5_0: dec_q5_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q5_1: dec_q5_1(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q8_0: dec_q8_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q2K: dec_q2_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q3K: dec_q3_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q4K: dec_q4_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q5K: dec_q5_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q6K: dec_q6_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q8K: dec_q8_k(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_TQ1_0: dec_tq1_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_TQ2_0: dec_tq2_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_MXFP4: dec_mxfp4(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_NVFP4: dec_nvfp4(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ4NL: dec_iq4_nl(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ4XS: dec_iq4_xs(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ2XXS: dec_iq2_xxs(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ2XS: dec_iq2_xs(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ2S: dec_iq2_s(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ3XXS: dec_iq3_xxs(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ3S: dec_iq3_s(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ1S: dec_iq1_s(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_IQ1M: dec_iq1_m(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q1_0: dec_q1_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_Q2_0: dec_q2_0(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_FV5: dec_fv5(blk, out); break;
  case RLX_QUANT_SCHEME_GGUF_FV5B: dec_fv5b(blk, out); break;
  default: break;
  }
}

void rq_gguf_decode_rows(int32_t scheme, const uint8_t *src, size_t rows, size_t k, float *out) {
  size_t be = 1, bb = 0;
  if (!rq_gguf_block(scheme, &be, &bb)) return;
  size_t nblk = rows * (k / be);
  for (size_t i = 0; i < nblk; i++) rq_gguf_decode(scheme, src + i * bb, out + i * be);
}

/* ======================================================================================
 * Reference quantizers (ggml's round-to-nearest encoders, f32 arithmetic in their order)
 * ====================================================================================== */

static void put_f16(uint8_t *p, float v) {
  uint16_t h = rlx_f32_to_f16(v);
  p[0] = (uint8_t)(h & 0xFF);
  p[1] = (uint8_t)(h >> 8);
}
/* Round half away from zero of an f32. */
static float round_away_f(float v) { return roundf(v); }

/* The value of largest magnitude (the first of equal magnitudes), with its sign. */
static float signed_absmax(const float *x, int n) {
  float m = x[0];
  for (int i = 1; i < n; i++)
    if (fabsf(x[i]) > fabsf(m)) m = x[i];
  return m;
}
static void min_max(const float *x, int n, float *lo, float *hi) {
  *lo = *hi = x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < *lo) *lo = x[i];
    if (x[i] > *hi) *hi = x[i];
  }
}
/* trunc(v) as an unsigned code, clipped to top (v >= 0 here). */
static int trunc_code(float v, int top) {
  int q = (int)v;
  return q > top ? top : q;
}

static void enc_q4_0(const float *x, uint8_t *b) {
  float d = signed_absmax(x, 32) / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  for (int j = 0; j < 16; j++) {
    int lo = trunc_code(x[j] * id + 8.5f, 15), hi = trunc_code(x[j + 16] * id + 8.5f, 15);
    b[2 + j] = (uint8_t)(lo | (hi << 4));
  }
}
static void enc_q4_1(const float *x, uint8_t *b) {
  float lo, hi;
  min_max(x, 32, &lo, &hi);
  float d = (hi - lo) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  put_f16(b + 2, lo);
  for (int j = 0; j < 16; j++) {
    int a = trunc_code((x[j] - lo) * id + 0.5f, 15), c = trunc_code((x[j + 16] - lo) * id + 0.5f, 15);
    b[4 + j] = (uint8_t)(a | (c << 4));
  }
}
static void enc_q5(const float *x, uint8_t *b, bool affine) {
  float d, lo = 0, hi, id;
  int q[32];
  if (affine) {
    min_max(x, 32, &lo, &hi);
    d = (hi - lo) / 31.0f;
  } else {
    d = signed_absmax(x, 32) / -16.0f;
  }
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; j++) q[j] = trunc_code(affine ? (x[j] - lo) * id + 0.5f : x[j] * id + 16.5f, 31);
  uint32_t qh = 0;
  for (int j = 0; j < 32; j++) qh |= (uint32_t)(q[j] >> 4) << j;
  int off = 0;
  put_f16(b, d);
  off = 2;
  if (affine) {
    put_f16(b + 2, lo);
    off = 4;
  }
  for (int k = 0; k < 4; k++) b[off + k] = (uint8_t)(qh >> (8 * k));
  for (int j = 0; j < 16; j++) b[off + 4 + j] = (uint8_t)((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
}
static void enc_q8_0(const float *x, uint8_t *b) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
  float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  put_f16(b, d);
  for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)round_away_f(x[j] * id);
}
/* Ternary code (0, 1, 2) of x / amax. */
static void ternary(const float *x, int *q, float *dout) {
  float d = 0;
  for (int j = 0; j < 256; j++) d = fmaxf(d, fabsf(x[j]));
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 256; j++) q[j] = (int)round_away_f(x[j] * id) + 1;
  *dout = d;
}
static void enc_tq1_0(const float *x, uint8_t *b) {
  int q[256];
  float d;
  ternary(x, q, &d);
  /* five (four for the last bytes) base-3 digits per byte, most significant first, stored as the
   * fixed-point fraction ceil(v * 256 / 243) */
  int v[52];
  for (int l = 0; l < 32; l++) v[l] = q[l] * 81 + q[32 + l] * 27 + q[64 + l] * 9 + q[96 + l] * 3 + q[128 + l];
  for (int l = 0; l < 16; l++)
    v[32 + l] = q[160 + l] * 81 + q[176 + l] * 27 + q[192 + l] * 9 + q[208 + l] * 3 + q[224 + l];
  for (int l = 0; l < 4; l++) v[48 + l] = q[240 + l] * 81 + q[244 + l] * 27 + q[248 + l] * 9 + q[252 + l] * 3;
  for (int k = 0; k < 52; k++) b[k] = (uint8_t)((v[k] * 256 + 242) / 243);
  put_f16(b + 52, d);
}
static void enc_tq2_0(const float *x, uint8_t *b) {
  int q[256];
  float d;
  ternary(x, q, &d);
  for (int h = 0; h < 2; h++)
    for (int l = 0; l < 32; l++) {
      int v = 0;
      for (int s = 0; s < 4; s++) v |= q[h * 128 + s * 32 + l] << (2 * s);
      b[h * 32 + l] = (uint8_t)v;
    }
  put_f16(b + 64, d);
}

/* MXFP4: exponent e = floor(log2(amax)) - 2 + 127 (0 for an all-zero block; log2 rounded to f32
 * first, as the f32 reference computes it), then per element the nearest doubled-E2M1 value
 * d * k (d = 2^(e - 128)), the first of equal distances. */
static void enc_mxfp4(const float *x, uint8_t *b) {
  float amax = 0;
  for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
  int e = 0;
  if (amax > 0) {
    float l2 = (float)log2((double)amax);
    e = (int)floorf(l2) - 2 + 127;
  }
  b[0] = (uint8_t)e;
  float d = e8m0_half((uint8_t)e);
  uint8_t q[32];
  for (int j = 0; j < 32; j++) {
    int best = 0;
    float berr = fabsf(d * (float)e2m1_x2[0] - x[j]);
    for (int k = 1; k < 16; k++) {
      float err = fabsf(d * (float)e2m1_x2[k] - x[j]);
      if (err < berr) best = k, berr = err;
    }
    q[j] = (uint8_t)best;
  }
  for (int j = 0; j < 16; j++) b[1 + j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}

bool rq_gguf_encode(int32_t scheme, const float *x, uint8_t *blk) {
  switch (scheme) {
  case RLX_QUANT_SCHEME_GGUF_Q4_0: enc_q4_0(x, blk); return true;
  case RLX_QUANT_SCHEME_GGUF_Q4_1: enc_q4_1(x, blk); return true;
  case RLX_QUANT_SCHEME_GGUF_Q5_0: enc_q5(x, blk, false); return true;
  case RLX_QUANT_SCHEME_GGUF_Q5_1: enc_q5(x, blk, true); return true;
  case RLX_QUANT_SCHEME_GGUF_Q8_0: enc_q8_0(x, blk); return true;
  case RLX_QUANT_SCHEME_GGUF_TQ1_0: enc_tq1_0(x, blk); return true;
  case RLX_QUANT_SCHEME_GGUF_TQ2_0: enc_tq2_0(x, blk); return true;
  case RLX_QUANT_SCHEME_GGUF_MXFP4: enc_mxfp4(x, blk); return true;
  default: return false;
  }
}

/* ======================================================================================
 * Scalar codecs
 * ====================================================================================== */

float rq_e8m0(uint8_t e) { return e == 0xFF ? NAN : ldexpf(1.0f, (int)e - 127); }

static float minifloat(uint8_t c, int ebits, int mbits, int bias) {
  int sign = (c >> (ebits + mbits)) & 1, e = (c >> mbits) & ((1 << ebits) - 1), m = c & ((1 << mbits) - 1);
  double v = e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp((double)((1 << mbits) + m), e - bias - mbits);
  return (float)(sign ? -v : v);
}
float rq_e4m3(uint8_t c) { return (c & 0x7F) == 0x7F ? NAN : minifloat(c, 4, 3, 7); }
float rq_e4m3_scale(uint8_t c) { return (c & 0x7F) == 0x7F ? 0.0f : minifloat(c, 4, 3, 7); }
float rq_e5m2(uint8_t c) {
  if (((c >> 2) & 31) == 31) return (c & 3) ? NAN : ((c & 0x80) ? -INFINITY : INFINITY);
  return minifloat(c, 5, 2, 15);
}
float rq_e2m1(uint8_t nibble) { return minifloat(nibble & 0xF, 2, 1, 1); }

/* ======================================================================================
 * Scaled element formats
 * ====================================================================================== */

rq_fmt rq_fmt_of(int32_t kind, int64_t custom_exp, int64_t custom_mant, int64_t custom_bias) {
  rq_fmt f = {.kind = kind};
  switch (kind) {
  case RLX_SCALED_FORMAT_F8E4M3: f.ebits = 4, f.mbits = 3, f.bias = 7; break;
  case RLX_SCALED_FORMAT_F8E5M2: f.ebits = 5, f.mbits = 2, f.bias = 15; break;
  case RLX_SCALED_FORMAT_F8E4M3FNUZ: f.ebits = 4, f.mbits = 3, f.bias = 8; break;
  case RLX_SCALED_FORMAT_F8E5M2FNUZ: f.ebits = 5, f.mbits = 2, f.bias = 16; break;
  case RLX_SCALED_FORMAT_F6E2M3: f.ebits = 2, f.mbits = 3, f.bias = 1; break;
  case RLX_SCALED_FORMAT_F6E3M2: f.ebits = 3, f.mbits = 2, f.bias = 3; break;
  case RLX_SCALED_FORMAT_F4E2M1: f.ebits = 2, f.mbits = 1, f.bias = 1; break;
  default: f.ebits = (int)custom_exp, f.mbits = (int)custom_mant, f.bias = (int)custom_bias; break;
  }
  return f;
}

/* Magnitude of code c (sign bit clear); NaN for the format's NaN codes, inf for E5M2's. */
static double fmt_mag(const rq_fmt *f, unsigned c) {
  int e = (int)(c >> f->mbits) & ((1 << f->ebits) - 1), m = (int)c & ((1 << f->mbits) - 1);
  int emax = (1 << f->ebits) - 1;
  if (f->kind == RLX_SCALED_FORMAT_F8E4M3 && e == emax && m == (1 << f->mbits) - 1) return NAN;
  if (f->kind == RLX_SCALED_FORMAT_F8E5M2 && e == emax) return m ? NAN : INFINITY;
  return e == 0 ? ldexp((double)m, 1 - f->bias - f->mbits)
                : ldexp((double)((1 << f->mbits) + m), e - f->bias - f->mbits);
}
static bool fmt_fnuz(const rq_fmt *f) {
  return f->kind == RLX_SCALED_FORMAT_F8E4M3FNUZ || f->kind == RLX_SCALED_FORMAT_F8E5M2FNUZ;
}

double rq_fmt_decode(const rq_fmt *f, uint8_t code) {
  int nb = f->ebits + f->mbits;
  unsigned mag = code & ((1u << nb) - 1), sign = (code >> nb) & 1;
  if (fmt_fnuz(f) && sign && mag == 0) return NAN; /* 0x80: the sole NaN */
  double v = fmt_mag(f, mag);
  return sign ? -v : v;
}

double rq_fmt_max(const rq_fmt *f) {
  double best = 0;
  for (unsigned c = 0; c < (1u << (f->ebits + f->mbits)); c++) {
    double v = fmt_mag(f, c);
    if (isfinite(v) && v > best) best = v;
  }
  return best;
}

uint8_t rq_fmt_encode(const rq_fmt *f, double v) {
  if (isnan(v)) return 0;
  int nb = f->ebits + f->mbits;
  bool neg = signbit(v);
  double a = fabs(v);
  if (isinf(a)) a = rq_fmt_max(f);
  unsigned best = 0;
  double berr = INFINITY;
  for (unsigned c = 0; c < (1u << nb); c++) {
    double m = fmt_mag(f, c);
    if (!isfinite(m)) continue;
    double err = fabs(m - a);
    if (err < berr || (err == berr && (c & 1) == 0 && (best & 1) == 1)) {
      best = c;
      berr = err;
    }
  }
  if (neg && !(fmt_fnuz(f) && best == 0)) best |= 1u << nb;
  return (uint8_t)best;
}

uint8_t rq_e4m3_encode(double v) {
  rq_fmt f = rq_fmt_of(RLX_SCALED_FORMAT_F8E4M3, 0, 0, 0);
  return rq_fmt_encode(&f, fabs(v));
}
