/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Part of test_fast_vs_ref: the one-thread packed GEMM API against fmaf chains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlx_test.h"

/* ======================================================================================
 * The one-thread packed API (fk_gemm_pack_b / fk_gemm_packed: the attention's products, the
 * Winograd point GEMMs) on whatever path is active (12 x 32 AVX-512 tiles, 6 x 16 AVX2 tiles, the
 * plain loop on the scalar path): every element is one fused multiply-add chain over k from zero,
 * so the result is bit-identical to fmaf in order, on every path. B packed as stored and
 * transposed, row strides past the extents, the tile / half-panel / 256-step pass edges; C's
 * padding columns must stay as they were.
 * ====================================================================================== */

static uint64_t gpa_state = 0x9E3779B97F4A7C15ull; /* its own stream: the later tests' data stay */
static float gpa_rand(void) {
  gpa_state = gpa_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(gpa_state >> 40) / (double)(1u << 24) * 2.0 - 1.0);
}

static void gemm_packed_api_case(size_t M, size_t N, size_t K, bool trans) {
  size_t lda = K + 3, ldb = (trans ? K : N) + 5, ldc = N + 2;
  float *A = malloc(M * lda * 4), *B = malloc((trans ? N : K) * ldb * 4), *C = malloc(M * ldc * 4);
  float *bp = aligned_alloc(64, (fk_gemm_packed_b_floats(K, N) * 4 + 63) / 64 * 64);
  CHECK(A && B && C && bp);
  if (!A || !B || !C || !bp) goto done;
  for (size_t i = 0; i < M * lda; i++) A[i] = gpa_rand();
  for (size_t i = 0; i < (trans ? N : K) * ldb; i++) B[i] = gpa_rand();
  for (size_t i = 0; i < M * ldc; i++) C[i] = 12345.0f;
  fk_gemm_pack_b(K, N, B, ldb, trans, bp);
  fk_gemm_packed(M, N, K, A, lda, bp, C, ldc);
  size_t bad = 0, pad = 0;
  for (size_t i = 0; i < M; i++) {
    for (size_t j = 0; j < N; j++) {
      float s = 0.0f;
      for (size_t k = 0; k < K; k++) s = fmaf(A[i * lda + k], trans ? B[j * ldb + k] : B[k * ldb + j], s);
      bad += memcmp(&s, &C[i * ldc + j], 4) != 0;
    }
    for (size_t j = N; j < ldc; j++) pad += C[i * ldc + j] != 12345.0f;
  }
  CHECK_MSG(bad == 0 && pad == 0,
            "fk_gemm_packed %zux%zux%zu%s (%s path): %zu elements differ from the fmaf chain, %zu padding "
            "elements written",
            M, N, K, trans ? " (B transposed)" : "", fk_isa_name(fk_isa_active()), bad, pad);
done:
  free(A);
  free(B);
  free(C);
  free(bp);
}

void test_gemm_packed_api(void) {
  static const size_t mnk[][3] = {{1, 1, 1},     {5, 7, 3},     {6, 16, 256},  {7, 17, 257},
                                  {12, 32, 512}, {13, 33, 300}, {64, 128, 64}, {64, 64, 128},
                                  {50, 100, 9},  {11, 48, 31},  {3, 15, 600}};
  for (size_t c = 0; c < sizeof mnk / sizeof mnk[0]; c++)
    for (int t = 0; t < 2; t++) gemm_packed_api_case(mnk[c][0], mnk[c][1], mnk[c][2], t);
}
