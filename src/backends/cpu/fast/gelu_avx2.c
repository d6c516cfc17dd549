/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernel piece: Gelu (the erf form), Erf and Exp on the AVX2 path, 8 lanes of AVX2 + FMA
 * intrinsics.
 *
 * The operations of gelu_avx512.c (and so of elementwise.c's el_geluf) in the same order with
 * the same roundings: each polynomial step one vfmadd (fmaf in el_geluf), every other multiply
 * and add rounded on its own, n rounded to the nearest integer by vroundps (the value of adding
 * and subtracting 1.5 * 2^23 for |n| < 2^22), the powers of two built with integer shifts, the
 * selects as blends of compare masks. So the AVX2 path gives the other paths' bits
 * (test_fast_vs_ref checks that). */
#include <math.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx2,fma")))
#define C(v) _mm256_set1_ps(v)
/* fmaf(p, s, c) */
#define MADD(p, s, c) _mm256_fmadd_ps(p, s, c)
/* m ? b : a, m a compare mask */
#define SEL(a, b, m) _mm256_blendv_ps(a, b, m)

/* 2^k for integer lanes k in [-126, 127]: the exponent field */
ATTR static inline __m256 g2_pow2i(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

/* el_gelu_expf: e^x for x <= 0 (Gelu's -hi). */
ATTR static inline __m256 g2_exp_neg(__m256 x) {
  __m256 under = _mm256_cmp_ps(x, C(-104.0f), _CMP_LT_OQ);
  __m256 xc = SEL(x, C(-104.0f), under);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, C(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, C(0.693145751953125f), xc); /* fmaf(-n, c, xc) */
  r = _mm256_fnmadd_ps(n, C(1.42860682030941723e-6f), r);
  __m256 p = C(1.98412698e-4f);
  p = MADD(p, r, C(1.38888889e-3f));
  p = MADD(p, r, C(8.33333333e-3f));
  p = MADD(p, r, C(4.16666667e-2f));
  p = MADD(p, r, C(1.66666667e-1f));
  p = MADD(p, r, C(0.5f));
  p = MADD(p, r, C(1.0f));
  p = MADD(p, r, C(1.0f));
  __m256i k = _mm256_cvtps_epi32(n); /* n is an integer already */
  /* k1 = k / 2 rounded toward zero (C's division), k2 = k - k1 */
  __m256i k1 = _mm256_srai_epi32(_mm256_add_epi32(k, _mm256_srli_epi32(k, 31)), 1);
  __m256i k2 = _mm256_sub_epi32(k, k1);
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, g2_pow2i(k1)), g2_pow2i(k2));
  return SEL(y, _mm256_setzero_ps(), under);
}

ATTR static inline __m256 g2_erf_small(__m256 a) {
  __m256 s = _mm256_mul_ps(a, a);
  __m256 p = C(9.471655549e-05f);
  p = MADD(p, s, C(-8.355894246e-04f));
  p = MADD(p, s, C(5.216628335e-03f));
  p = MADD(p, s, C(-2.686468780e-02f));
  p = MADD(p, s, C(1.128377680e-01f));
  p = MADD(p, s, C(-3.761263829e-01f));
  p = MADD(p, s, C(1.128379167e+00f));
  return _mm256_mul_ps(a, p);
}

ATTR static inline __m256 g2_erfc_scaled(__m256 a) {
  __m256 z = _mm256_div_ps(C(1.0f), _mm256_add_ps(C(1.0f), _mm256_mul_ps(C(0.5f), a)));
  __m256 h = C(4.885304277e-02f);
  h = MADD(h, z, C(-1.818811246e-01f));
  h = MADD(h, z, C(2.130541271e-01f));
  h = MADD(h, z, C(-9.430128156e-03f));
  h = MADD(h, z, C(-1.044477244e-01f));
  h = MADD(h, z, C(-2.432880995e-02f));
  h = MADD(h, z, C(-1.449690701e-02f));
  h = MADD(h, z, C(8.553981138e-02f));
  h = MADD(h, z, C(1.761287879e-01f));
  h = MADD(h, z, C(2.468422711e-01f));
  h = MADD(h, z, C(2.820945966e-01f));
  h = MADD(h, z, C(2.820947927e-01f));
  return _mm256_mul_ps(z, h);
}

ATTR static inline __m256 g2_gelu8(__m256 x) {
  /* clamp to [-15, 15]; NaN stays NaN (the compares are false for it) */
  __m256 xc = SEL(x, C(-15.0f), _mm256_cmp_ps(x, C(-15.0f), _CMP_LT_OQ));
  xc = SEL(xc, C(15.0f), _mm256_cmp_ps(xc, C(15.0f), _CMP_GT_OQ));
  __m256 t = _mm256_mul_ps(xc, C(-0.70710678118654752f));
  __m256 a = _mm256_and_ps(t, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
  __m256 xh = _mm256_and_ps(xc, _mm256_castsi256_ps(_mm256_set1_epi32((int)0xFFFFF000u)));
  __m256 hi = _mm256_mul_ps(C(0.5f), _mm256_mul_ps(xh, xh));
  __m256 lo = _mm256_mul_ps(C(0.5f), _mm256_mul_ps(_mm256_sub_ps(xc, xh), _mm256_add_ps(xc, xh)));
  __m256 el = MADD(lo, C(4.16666667e-2f), C(-1.66666667e-1f));
  el = MADD(el, lo, C(0.5f));
  el = MADD(el, lo, C(-1.0f));
  el = MADD(el, lo, C(1.0f));
  __m256 neg_hi = _mm256_xor_ps(hi, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
  __m256 small = _mm256_cmp_ps(a, C(0.5f), _CMP_LT_OQ);
  __m256 tail = _mm256_mul_ps(_mm256_mul_ps(g2_exp_neg(neg_hi), el), g2_erfc_scaled(SEL(a, C(0.5f), small)));
  __m256 pos = _mm256_cmp_ps(t, _mm256_setzero_ps(), _CMP_GT_OQ);
  __m256 ec = SEL(_mm256_sub_ps(C(2.0f), tail), tail, pos);
  ec = SEL(ec, _mm256_sub_ps(C(1.0f), g2_erf_small(t)), small);
  return _mm256_mul_ps(_mm256_mul_ps(C(0.5f), x), ec);
}

ATTR void fk_gelu_avx2(const float *restrict x, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) { /* two independent vectors in flight: the chains are long */
    __m256 a = g2_gelu8(_mm256_loadu_ps(x + i)), b = g2_gelu8(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, g2_gelu8(_mm256_loadu_ps(x + i)));
  if (i < n) { /* the last 1..7: masked (the other lanes compute on zeros and are not stored) */
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, m, g2_gelu8(_mm256_maskload_ps(x + i, m)));
  }
}

/* ---- Erf: elementwise.c's el_erff (el_expf, el_erf_small, el_erfc_scaled) on 8 lanes. Those
 * polynomials are written as separate multiplies and adds (no fmaf), and so is this: every
 * operation rounded on its own, in the same order, the same bits. (The compiler's AVX2 build of
 * the scalar loop ran at about 22 ns per element here; the encoder's Gelu is exported as
 * x * 0.5 * (1 + erf(x / sqrt 2)), an ElementwiseRegion around this Erf.) ---- */

/* el_expf for any x (here -(a^2), in [-100, 0]) */
ATTR static inline __m256 e2_exp(__m256 x) {
  __m256 xc = SEL(x, C(-104.0f), _mm256_cmp_ps(x, C(-104.0f), _CMP_LT_OQ));
  xc = SEL(xc, C(89.0f), _mm256_cmp_ps(xc, C(89.0f), _CMP_GT_OQ));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, C(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(n, C(0.693145751953125f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, C(1.42860682030941723e-6f)));
  __m256 p = C(1.98412698e-4f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(1.38888889e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(8.33333333e-3f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(4.16666667e-2f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(1.66666667e-1f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(0.5f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(1.0f));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), C(1.0f));
  __m256i k = _mm256_cvtps_epi32(n);
  __m256i k1 = _mm256_srai_epi32(_mm256_add_epi32(k, _mm256_srli_epi32(k, 31)), 1);
  __m256i k2 = _mm256_sub_epi32(k, k1);
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, g2_pow2i(k1)), g2_pow2i(k2));
  y = SEL(y, C(INFINITY), _mm256_cmp_ps(x, C(88.7228394f), _CMP_GT_OQ));
  y = SEL(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, C(-104.0f), _CMP_LT_OQ));
  return SEL(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

ATTR static inline __m256 e2_erf8(__m256 x) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
  __m256 a = _mm256_andnot_ps(sign, x);
  a = SEL(a, C(10.0f), _mm256_cmp_ps(a, C(10.0f), _CMP_GT_OQ));
  /* el_erf_small */
  __m256 s = _mm256_mul_ps(a, a);
  __m256 p = C(9.471655549e-05f);
  p = _mm256_sub_ps(_mm256_mul_ps(p, s), C(8.355894246e-04f));
  p = _mm256_add_ps(_mm256_mul_ps(p, s), C(5.216628335e-03f));
  p = _mm256_sub_ps(_mm256_mul_ps(p, s), C(2.686468780e-02f));
  p = _mm256_add_ps(_mm256_mul_ps(p, s), C(1.128377680e-01f));
  p = _mm256_sub_ps(_mm256_mul_ps(p, s), C(3.761263829e-01f));
  p = _mm256_add_ps(_mm256_mul_ps(p, s), C(1.128379167e+00f));
  __m256 small = _mm256_mul_ps(a, p);
  /* el_erfc_scaled */
  __m256 z = _mm256_div_ps(C(1.0f), _mm256_add_ps(C(1.0f), _mm256_mul_ps(C(0.5f), a)));
  __m256 h = C(4.885304277e-02f);
  h = _mm256_sub_ps(_mm256_mul_ps(h, z), C(1.818811246e-01f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(2.130541271e-01f));
  h = _mm256_sub_ps(_mm256_mul_ps(h, z), C(9.430128156e-03f));
  h = _mm256_sub_ps(_mm256_mul_ps(h, z), C(1.044477244e-01f));
  h = _mm256_sub_ps(_mm256_mul_ps(h, z), C(2.432880995e-02f));
  h = _mm256_sub_ps(_mm256_mul_ps(h, z), C(1.449690701e-02f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(8.553981138e-02f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(1.761287879e-01f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(2.468422711e-01f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(2.820945966e-01f));
  h = _mm256_add_ps(_mm256_mul_ps(h, z), C(2.820947927e-01f));
  __m256 neg_s = _mm256_xor_ps(s, sign); /* -(a * a) */
  __m256 big = _mm256_sub_ps(C(1.0f), _mm256_mul_ps(e2_exp(neg_s), _mm256_mul_ps(z, h)));
  __m256 v = SEL(big, small, _mm256_cmp_ps(a, C(0.75f), _CMP_LT_OQ));
  return _mm256_or_ps(_mm256_andnot_ps(sign, v), _mm256_and_ps(sign, x)); /* copysignf(v, x) */
}

/* Exp: el_expf on 8 lanes (the attention's softmax calls it through fk_act_f32: 196608
 * exponentials per encoder layer at batch 1; the AVX2 build of the scalar loop ran at about
 * 8.6 ns per element here) */
ATTR void fk_exp_avx2(const float *restrict x, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = e2_exp(_mm256_loadu_ps(x + i)), b = e2_exp(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, e2_exp(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, m, e2_exp(_mm256_maskload_ps(x + i, m)));
  }
}

ATTR void fk_erf_avx2(const float *restrict x, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 a = e2_erf8(_mm256_loadu_ps(x + i)), b = e2_erf8(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, e2_erf8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + i, m, e2_erf8(_mm256_maskload_ps(x + i, m)));
  }
}
#else
void fk_gelu_avx2(const float *restrict x, float *restrict y, size_t n) { (void)x, (void)y, (void)n; }
void fk_erf_avx2(const float *restrict x, float *restrict y, size_t n) { (void)x, (void)y, (void)n; }
void fk_exp_avx2(const float *restrict x, float *restrict y, size_t n) { (void)x, (void)y, (void)n; }
#endif
