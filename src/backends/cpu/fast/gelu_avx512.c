/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernel piece: Gelu (the erf form) on the AVX-512 path, 16 lanes of intrinsics.
 *
 * Exactly the operations of elementwise.c's el_geluf, in the same order and with the same
 * roundings (its polynomial steps are fmaf, one vfmadd here; every other multiply and add is
 * rounded on its own), so the AVX-512 path gives the other paths' bits (test_fast_vs_ref checks
 * that). The compiler's vectorisation of the previous el_geluf (separate multiplies and adds,
 * since ISO C does not contract) ran at 1.78 ns per element on this machine, a third of the
 * encoder's non-GEMM time; this loop runs at about 0.9 ns: FMAs, the rounding of n by one
 * vrndscaleps (the same value as adding and subtracting 1.5 * 2^23, for |n| < 2^22), the two
 * powers of two built with integer shifts, the selects as mask moves, four vectors in flight. */
#include <math.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx512f")))
#define C(v) _mm512_set1_ps(v)
/* fmaf(p, s, c) */
#define MADD(p, s, c) _mm512_fmadd_ps(p, s, c)

/* 2^k for integer lanes k in [-126, 127]: the exponent field */
ATTR static inline __m512 ge_pow2i(__m512i k) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23));
}

/* el_gelu_expf: e^x for x <= 0 (Gelu's -hi). */
ATTR static inline __m512 ge_exp_neg(__m512 x) {
  __mmask16 under = _mm512_cmp_ps_mask(x, C(-104.0f), _CMP_LT_OQ);
  __m512 xc = _mm512_mask_mov_ps(x, under, C(-104.0f));
  __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(xc, C(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, C(0.693145751953125f), xc); /* fmaf(-n, c, xc) */
  r = _mm512_fnmadd_ps(n, C(1.42860682030941723e-6f), r);
  __m512 p = C(1.98412698e-4f);
  p = MADD(p, r, C(1.38888889e-3f));
  p = MADD(p, r, C(8.33333333e-3f));
  p = MADD(p, r, C(4.16666667e-2f));
  p = MADD(p, r, C(1.66666667e-1f));
  p = MADD(p, r, C(0.5f));
  p = MADD(p, r, C(1.0f));
  p = MADD(p, r, C(1.0f));
  __m512i k = _mm512_cvtps_epi32(n); /* n is an integer already */
  /* k1 = k / 2 rounded toward zero (C's division), k2 = k - k1 */
  __m512i k1 = _mm512_srai_epi32(_mm512_add_epi32(k, _mm512_srli_epi32(k, 31)), 1);
  __m512i k2 = _mm512_sub_epi32(k, k1);
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, ge_pow2i(k1)), ge_pow2i(k2));
  return _mm512_mask_mov_ps(y, under, _mm512_setzero_ps());
}

ATTR static inline __m512 ge_erf_small(__m512 a) {
  __m512 s = _mm512_mul_ps(a, a);
  __m512 p = C(9.471655549e-05f);
  p = MADD(p, s, C(-8.355894246e-04f));
  p = MADD(p, s, C(5.216628335e-03f));
  p = MADD(p, s, C(-2.686468780e-02f));
  p = MADD(p, s, C(1.128377680e-01f));
  p = MADD(p, s, C(-3.761263829e-01f));
  p = MADD(p, s, C(1.128379167e+00f));
  return _mm512_mul_ps(a, p);
}

ATTR static inline __m512 ge_erfc_scaled(__m512 a) {
  __m512 z = _mm512_div_ps(C(1.0f), _mm512_add_ps(C(1.0f), _mm512_mul_ps(C(0.5f), a)));
  __m512 h = C(4.885304277e-02f);
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
  return _mm512_mul_ps(z, h);
}

ATTR static inline __m512 ge_gelu16(__m512 x) {
  /* clamp to [-15, 15]; NaN stays NaN (the compares are false for it) */
  __m512 xc = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, C(-15.0f), _CMP_LT_OQ), C(-15.0f));
  xc = _mm512_mask_mov_ps(xc, _mm512_cmp_ps_mask(xc, C(15.0f), _CMP_GT_OQ), C(15.0f));
  __m512 t = _mm512_mul_ps(xc, C(-0.70710678118654752f));
  __m512 a = _mm512_abs_ps(t);
  __m512 xh = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(xc), _mm512_set1_epi32((int)0xFFFFF000u)));
  __m512 hi = _mm512_mul_ps(C(0.5f), _mm512_mul_ps(xh, xh));
  __m512 lo = _mm512_mul_ps(C(0.5f), _mm512_mul_ps(_mm512_sub_ps(xc, xh), _mm512_add_ps(xc, xh)));
  __m512 el = MADD(lo, C(4.16666667e-2f), C(-1.66666667e-1f));
  el = MADD(el, lo, C(0.5f));
  el = MADD(el, lo, C(-1.0f));
  el = MADD(el, lo, C(1.0f));
  __m512 neg_hi = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(hi), _mm512_set1_epi32((int)0x80000000u)));
  __mmask16 small = _mm512_cmp_ps_mask(a, C(0.5f), _CMP_LT_OQ);
  __m512 tail =
      _mm512_mul_ps(_mm512_mul_ps(ge_exp_neg(neg_hi), el), ge_erfc_scaled(_mm512_mask_mov_ps(a, small, C(0.5f))));
  __mmask16 pos = _mm512_cmp_ps_mask(t, _mm512_setzero_ps(), _CMP_GT_OQ);
  __m512 ec = _mm512_mask_mov_ps(_mm512_sub_ps(C(2.0f), tail), pos, tail);
  ec = _mm512_mask_mov_ps(ec, small, _mm512_sub_ps(C(1.0f), ge_erf_small(t)));
  return _mm512_mul_ps(_mm512_mul_ps(C(0.5f), x), ec);
}

ATTR void fk_gelu_avx512(const float *restrict x, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) { /* four independent vectors in flight: the chains are long */
    __m512 a = ge_gelu16(_mm512_loadu_ps(x + i)), b = ge_gelu16(_mm512_loadu_ps(x + i + 16));
    __m512 c = ge_gelu16(_mm512_loadu_ps(x + i + 32)), d = ge_gelu16(_mm512_loadu_ps(x + i + 48));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
    _mm512_storeu_ps(y + i + 32, c);
    _mm512_storeu_ps(y + i + 48, d);
  }
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, ge_gelu16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, ge_gelu16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}
#else
void fk_gelu_avx512(const float *restrict x, float *restrict y, size_t n) { (void)x, (void)y, (void)n; }
#endif
