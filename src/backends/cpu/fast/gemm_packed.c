/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernel: f32 MatMul by a constant right operand, B packed once at compile time.
 *
 * A MatMul whose B is a Constant node of rank 2 (a layer's weights) spends a large share of an
 * sgemm call repacking B on every run (OpenBLAS packs both operands per call; on the MiniLM-sized
 * encoder at batch 1 the packing was a third of the GEMM time). Here the executor packs B once
 * into column panels of GP_NR = 48 columns, [panel][k][48] with the last panel zero-padded, and
 * every run multiplies A (its batch axes folded into M; packed per block of up to 192 rows into
 * tiles [K][8], reused across all panels) by the packed panels, GP_KC = 128 k steps at a time
 * (a panel's 128 x 48 floats, 24 KiB, stay in L1 across the tiles), with an AVX-512 register
 * tile of GP_MR = 8 rows by 48 columns (24 accumulators). 8 x 48 instead of 12 x 32: the same
 * accumulator count, but M = 128 (a batch-1 sequence) is a whole number of tiles (12-row tiles
 * computed 132 rows), and the encoder's N = 384 / 1152 / 1536 whole panels; 4% less model time
 * at batch 1, the same at batch 8. The one-thread API at the end (fk_gemm_pack_b /
 * fk_gemm_packed, for the attention and the Winograd convolution, whose input transform writes
 * 32-column panels itself) keeps 12 x 32 tiles and 256-step passes (GA_*) on AVX-512; on AVX2 the
 * same panels go through 6-row tiles of one 16-column half panel (12 ymm accumulators), the same
 * passes, so the same bits.
 *
 * Every element of C is one sequential chain of fused multiply-adds over k = 0..K-1 from zero
 * (between k passes the partial sum waits in C, exactly), whatever the split: results do not depend on the thread count (deterministic mode included).
 * The rounding differs from OpenBLAS's (it accumulates K in blocks and may reduce in lanes),
 * within f32 GEMM rounding. Only on the AVX-512 path (fk_isa_active); otherwise the MatMul keeps
 * its sgemm kernel. Rows of a tile beyond M read the last valid row again and are not stored;
 * columns beyond N are computed on the zero padding and not stored (masked stores). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define GP_X86 1
#endif

#ifndef GP_NV
#define GP_NV 3 /* vectors of 16 columns per tile */
#endif
#ifndef GP_MR
#define GP_MR 8
#endif
#define GP_NR (16 * GP_NV)
/* The tiles of the one-thread API below (fk_gemm_pack_b / fk_gemm_packed: the attention's
 * products, the Winograd point GEMMs of conv_winograd.c, which writes its V straight into these
 * 32-column panels): 12 rows by 32 columns, 256 k steps per pass. */
#define GA_NV 2
#define GA_MR 12
#define GA_NR (16 * GA_NV)
#define GA_KC 256
#define GP_TILES_PER_BLOCK 24 /* row block: up to 24 tiles (192 rows) of A reused across the panels */

bool rlx_fast_matmul_packed_applies(const rlx_node *n, const rlx_shape *a, const rlx_shape *b) {
#if GP_X86
  if (fk_isa_active() != FK_ISA_AVX512) return false;
  if (!rlx_fast_matmul_ex_applies(n, a, false, b, false)) return false;
  if (b->rank != 2 || a->rank < 2) return false;
  /* the output's batch axes are A's: A's rows of every batch are consecutive, one [M', K] matrix */
  if (n->shape.rank != a->rank) return false;
  for (uint32_t i = 0; i + 2 < a->rank; i++)
    if (n->shape.dims[i] != a->dims[i]) return false;
  size_t K = (size_t)b->dims[0], N = (size_t)b->dims[1];
  return K >= 1 && N >= 1 && K <= ((size_t)1 << 24) && N <= ((size_t)1 << 24);
#else
  (void)n;
  (void)a;
  (void)b;
  return false;
#endif
}

float *rlx_fast_matmul_pack_b(const rlx_shape *b, const float *B) {
  size_t K = (size_t)b->dims[0], N = (size_t)b->dims[1], panels = (N + GP_NR - 1) / GP_NR;
  float *bp = aligned_alloc(64, fk_align64(panels * K * GP_NR * sizeof(float)));
  if (!bp) return NULL;
  for (size_t p = 0; p < panels; p++) {
    size_t c0 = p * GP_NR, w = N - c0 < GP_NR ? N - c0 : GP_NR;
    float *dst = bp + p * K * GP_NR;
    for (size_t k = 0; k < K; k++) {
      memcpy(dst + k * GP_NR, B + k * N + c0, w * sizeof(float));
      for (size_t c = w; c < GP_NR; c++) dst[k * GP_NR + c] = 0.0f;
    }
  }
  return bp;
}

void rlx_fast_matmul_pack_free(float *bp) { free(bp); }

#if GP_X86
/* C[rows, cols of one panel] (+)= Ap . panel over kc steps: ap = one packed A tile [kc][GP_MR],
 * bp = the panel's rows [kc][GP_NR]; rows <= GP_MR, cols <= GP_NR; acc: continue from C. */
__attribute__((target("avx512f"))) static void gp_tile(size_t kc, const float *ap, const float *bp, float *C,
                                                       size_t ldc, size_t rows, size_t cols, bool acc,
                                                       const float *pf) {
  __mmask16 m[GP_NV];
  for (size_t v = 0; v < GP_NV; v++)
    m[v] = cols >= 16 * (v + 1) ? (__mmask16)0xFFFF : cols > 16 * v ? (__mmask16)((1u << (cols - 16 * v)) - 1) : 0;
  __m512 c[GP_MR][GP_NV];
#pragma GCC unroll 16
  for (size_t r = 0; r < GP_MR; r++) {
    bool ld = acc && r < rows;
#pragma GCC unroll 4
    for (size_t v = 0; v < GP_NV; v++)
      c[r][v] = ld ? _mm512_maskz_loadu_ps(m[v], C + r * ldc + 16 * v) : _mm512_setzero_ps();
  }
  for (size_t k = 0; k < kc; k++) {
    __m512 b[GP_NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < GP_NV; v++) b[v] = _mm512_load_ps(bp + k * GP_NR + 16 * v);
    if (pf) {
#pragma GCC unroll 4
      for (size_t v = 0; v < GP_NV; v++) _mm_prefetch((const char *)(pf + k * GP_NR + 16 * v), _MM_HINT_T1);
    }
#pragma GCC unroll 16
    for (size_t r = 0; r < GP_MR; r++) {
      __m512 a = _mm512_set1_ps(ap[k * GP_MR + r]);
#pragma GCC unroll 4
      for (size_t v = 0; v < GP_NV; v++) c[r][v] = _mm512_fmadd_ps(a, b[v], c[r][v]);
    }
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < GP_MR; r++) {
    if (r >= rows) break;
#pragma GCC unroll 4
    for (size_t v = 0; v < GP_NV; v++) _mm512_mask_storeu_ps(C + r * ldc + 16 * v, m[v], c[r][v]);
  }
}
/* The same with A read in place (row-major, row stride lda; rows past `rows` read the last one
 * again): for short K, where packing A would cost more than the strided broadcasts. */
__attribute__((target("avx512f"))) static void gp_tile_rows(size_t kc, const float *A, size_t lda, const float *bp,
                                                            float *C, size_t ldc, size_t rows, size_t cols, bool acc,
                                                            const float *pf) {
  const float *ar[GA_MR];
  for (size_t r = 0; r < GA_MR; r++) ar[r] = A + (r < rows ? r : rows - 1) * lda;
  __mmask16 m[GA_NV];
  for (size_t v = 0; v < GA_NV; v++)
    m[v] = cols >= 16 * (v + 1) ? (__mmask16)0xFFFF : cols > 16 * v ? (__mmask16)((1u << (cols - 16 * v)) - 1) : 0;
  __m512 c[GA_MR][GA_NV];
#pragma GCC unroll 16
  for (size_t r = 0; r < GA_MR; r++) {
    bool ld = acc && r < rows;
#pragma GCC unroll 4
    for (size_t v = 0; v < GA_NV; v++)
      c[r][v] = ld ? _mm512_maskz_loadu_ps(m[v], C + r * ldc + 16 * v) : _mm512_setzero_ps();
  }
  for (size_t k = 0; k < kc; k++) {
    __m512 b[GA_NV];
#pragma GCC unroll 4
    for (size_t v = 0; v < GA_NV; v++) b[v] = _mm512_load_ps(bp + k * GA_NR + 16 * v);
    if (pf) {
#pragma GCC unroll 4
      for (size_t v = 0; v < GA_NV; v++) _mm_prefetch((const char *)(pf + k * GA_NR + 16 * v), _MM_HINT_T1);
    }
#pragma GCC unroll 16
    for (size_t r = 0; r < GA_MR; r++) {
      __m512 a = _mm512_set1_ps(ar[r][k]);
#pragma GCC unroll 4
      for (size_t v = 0; v < GA_NV; v++) c[r][v] = _mm512_fmadd_ps(a, b[v], c[r][v]);
    }
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < GA_MR; r++) {
    if (r >= rows) break;
#pragma GCC unroll 4
    for (size_t v = 0; v < GA_NV; v++) _mm512_mask_storeu_ps(C + r * ldc + 16 * v, m[v], c[r][v]);
  }
}
#endif

/* Rows r0..r1 of A [M, K] (row stride lda) into tiles [tile][K][GP_MR]; rows past r1 repeat
 * row r1 - 1. */
static void gp_pack_a(const float *A, size_t lda, size_t K, size_t r0, size_t r1, float *ap) {
  for (size_t t = 0; r0 + t * GP_MR < r1; t++) {
    float *dst = ap + t * K * GP_MR;
    const float *rows[GP_MR];
    for (size_t r = 0; r < GP_MR; r++) {
      size_t i = r0 + t * GP_MR + r;
      rows[r] = A + (i < r1 ? i : r1 - 1) * lda;
    }
    for (size_t k = 0; k < K; k++)
      for (size_t r = 0; r < GP_MR; r++) dst[k * GP_MR + r] = rows[r][k];
  }
}

typedef struct gp_job {
  const float *a, *bp;
  float *c, *scratch;
  size_t M, N, K, panels, blocks, block_rows, scratch_per_chunk;
} gp_job;

#define GP_KC 128 /* k steps per pass: a panel's 128 x 48 floats (24 KiB) stay in L1 across the tiles */

/* Work item w = (row block w / panels, panel w % panels); the row block's A is packed into the
 * chunk's scratch when the block changes. */
static void gp_task(void *arg, size_t lo, size_t hi, int chunk) {
  const gp_job *j = arg;
#if GP_X86
  float *ap = j->scratch + (size_t)chunk * j->scratch_per_chunk;
  size_t packed = SIZE_MAX;
  for (size_t w = lo; w < hi; w++) {
    size_t rb = w / j->panels, p = w % j->panels;
    size_t r0 = rb * j->block_rows, r1 = r0 + j->block_rows < j->M ? r0 + j->block_rows : j->M;
    if (rb != packed) gp_pack_a(j->a, j->K, j->K, r0, r1, ap), packed = rb;
    size_t c0 = p * GP_NR, cols = j->N - c0 < GP_NR ? j->N - c0 : GP_NR;
    const float *panel = j->bp + p * j->K * GP_NR;
    for (size_t k0 = 0; k0 < j->K; k0 += GP_KC) {
      size_t kc = j->K - k0 < GP_KC ? j->K - k0 : GP_KC;
      /* the B block used next: this panel's next k block, else the next panel's first (its
         first kc rows; the panels are consecutive in memory either way) */
      const float *next = panel + (k0 + kc) * GP_NR, *end = j->bp + j->panels * j->K * GP_NR;
      if (next + kc * GP_NR > end) next = NULL;
      for (size_t r = r0, t = 0; r < r1; r += GP_MR, t++)
        gp_tile(kc, ap + t * j->K * GP_MR + k0 * GP_MR, panel + k0 * GP_NR, j->c + r * j->N + c0, j->N,
                r1 - r < GP_MR ? r1 - r : GP_MR, cols, k0 > 0, t == 0 ? next : NULL);
    }
  }
#else
  (void)j;
  (void)lo;
  (void)hi;
  (void)chunk;
#endif
}

rlx_status rlx_fast_matmul_packed(const rlx_node *n, const rlx_tensor *a, const float *bp, rlx_tensor *out,
                                  rlx_cpu_ctx *ctx) {
  (void)n;
  gp_job j = {.a = a->data, .bp = bp, .c = out->data};
  j.K = (size_t)a->shape.dims[a->shape.rank - 1];
  j.N = (size_t)out->shape.dims[out->shape.rank - 1];
  j.M = fk_numel(&a->shape) / j.K;
  if (j.M == 0) return RLX_OK;
  j.panels = (j.N + GP_NR - 1) / GP_NR;
  /* row blocks of at most GP_TILES_PER_BLOCK tiles, of about equal size (whole tiles) */
  size_t tiles = (j.M + GP_MR - 1) / GP_MR;
  j.blocks = (tiles + GP_TILES_PER_BLOCK - 1) / GP_TILES_PER_BLOCK;
  j.block_rows = (tiles + j.blocks - 1) / j.blocks * GP_MR;
  j.blocks = (j.M + j.block_rows - 1) / j.block_rows;
  double flops_per_item = 2.0 * (double)j.block_rows * (double)j.K * GP_NR;
  size_t grain = flops_per_item > 2e5 ? 1 : (size_t)(2e5 / flops_per_item) + 1;
  size_t items = j.blocks * j.panels;
  int chunks = fk_chunks(ctx, items, grain);
  j.scratch_per_chunk = fk_align64(j.block_rows * j.K * sizeof(float)) / sizeof(float);
  j.scratch = fk_scratch(ctx, (size_t)chunks * j.scratch_per_chunk * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "MatMul: out of memory for packed rows of A");
  fk_parallel_for(ctx, items, grain, gp_task, &j);
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}

/* ---- the same tiles for other kernels (attention.c): one thread, any operands ---- */

bool fk_gemm_packed_fast(void) {
#if GP_X86
  return fk_isa_active() >= FK_ISA_AVX2;
#else
  return false;
#endif
}

size_t fk_gemm_packed_b_floats(size_t K, size_t N) { return (N + GA_NR - 1) / GA_NR * GA_NR * K; }

void fk_gemm_pack_b(size_t K, size_t N, const float *B, size_t ldb, bool trans, float *bp) {
  size_t panels = (N + GA_NR - 1) / GA_NR;
  for (size_t p = 0; p < panels; p++) {
    size_t c0 = p * GA_NR, w = N - c0 < GA_NR ? N - c0 : GA_NR;
    float *dst = bp + p * K * GA_NR;
    if (trans) { /* B stored [N, K]: read each of its rows once, in order (strided reads down the
                    columns of a row-strided B, the attention's K in place, hit few cache sets) */
      for (size_t c = 0; c < w; c++) {
        const float *row = B + (c0 + c) * ldb;
        for (size_t k = 0; k < K; k++) dst[k * GA_NR + c] = row[k];
      }
      for (size_t k = 0; k < K; k++)
        for (size_t c = w; c < GA_NR; c++) dst[k * GA_NR + c] = 0.0f;
      continue;
    }
    for (size_t k = 0; k < K; k++) {
      for (size_t c = 0; c < w; c++) dst[k * GA_NR + c] = B[k * ldb + c0 + c];
      for (size_t c = w; c < GA_NR; c++) dst[k * GA_NR + c] = 0.0f;
    }
  }
}

#if GP_X86
/* The AVX2 + FMA tile of the one-thread API: GA2_MR = 6 rows by one half (16 columns, two ymm
 * vectors) of a 32-column panel, 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm
 * registers. bp = the half panel's first k row (row stride GA_NR); cols <= 16 of them are stored
 * (masked when fewer); A read in place as in gp_tile_rows. The same chain per element. */
#define GA2_MR 6
__attribute__((target("avx2,fma"))) static void ga_tile_avx2(size_t kc, const float *A, size_t lda, const float *bp,
                                                            float *C, size_t ldc, size_t rows, size_t cols,
                                                            bool acc) {
  const float *ar[GA2_MR];
  for (size_t r = 0; r < GA2_MR; r++) ar[r] = A + (r < rows ? r : rows - 1) * lda;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i m[2];
  for (int v = 0; v < 2; v++) m[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cols - 8 * v), lane);
  bool full = cols == 16;
  __m256 c[GA2_MR][2];
#pragma GCC unroll 8
  for (size_t r = 0; r < GA2_MR; r++) {
    bool ld = acc && r < rows;
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++)
      c[r][v] = !ld     ? _mm256_setzero_ps()
                : full ? _mm256_loadu_ps(C + r * ldc + 8 * v)
                       : _mm256_maskload_ps(C + r * ldc + 8 * v, m[v]);
  }
  for (size_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_load_ps(bp + k * GA_NR), b1 = _mm256_load_ps(bp + k * GA_NR + 8);
#pragma GCC unroll 8
    for (size_t r = 0; r < GA2_MR; r++) {
      __m256 a = _mm256_broadcast_ss(ar[r] + k);
      c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < GA2_MR; r++) {
    if (r >= rows) break;
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++) {
      if (full)
        _mm256_storeu_ps(C + r * ldc + 8 * v, c[r][v]);
      else
        _mm256_maskstore_ps(C + r * ldc + 8 * v, m[v], c[r][v]);
    }
  }
}
#endif

/* Without AVX2 (the scalar path, non-x86): the same chains one element at a time (fmaf rounds
 * once, as the vector FMAs do, so the bits are the tiles'). */
static void ga_gemm_plain(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *bp, float *C,
                          size_t ldc) {
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      const float *b = bp + j / GA_NR * K * GA_NR + j % GA_NR;
      float s = 0.0f;
      for (size_t k = 0; k < K; k++) s = fmaf(A[i * lda + k], b[k * GA_NR], s);
      C[i * ldc + j] = s;
    }
}

void fk_gemm_packed(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *bp, float *C, size_t ldc) {
  if (M == 0 || N == 0) return;
  fk_isa isa = fk_isa_active();
  if (K == 0 || isa == FK_ISA_SCALAR) {
    ga_gemm_plain(M, N, K, A, lda, bp, C, ldc);
    return;
  }
#if GP_X86
  size_t panels = (N + GA_NR - 1) / GA_NR;
  if (isa == FK_ISA_AVX2) {
    for (size_t p = 0; p < panels; p++) {
      size_t c0 = p * GA_NR, cols = N - c0 < GA_NR ? N - c0 : GA_NR;
      const float *panel = bp + p * K * GA_NR;
      for (size_t k0 = 0; k0 < K; k0 += GA_KC) {
        size_t kc = K - k0 < GA_KC ? K - k0 : GA_KC;
        for (size_t h = 0; h * 16 < cols; h++) /* the two 16-column halves of the panel */
          for (size_t r = 0; r < M; r += GA2_MR)
            ga_tile_avx2(kc, A + r * lda + k0, lda, panel + k0 * GA_NR + 16 * h, C + r * ldc + c0 + 16 * h, ldc,
                         M - r < GA2_MR ? M - r : GA2_MR, cols - 16 * h < 16 ? cols - 16 * h : 16, k0 > 0);
      }
    }
    return;
  }
  for (size_t p = 0; p < panels; p++) {
    size_t c0 = p * GA_NR, cols = N - c0 < GA_NR ? N - c0 : GA_NR;
    const float *panel = bp + p * K * GA_NR;
    for (size_t k0 = 0; k0 < K; k0 += GA_KC) {
      size_t kc = K - k0 < GA_KC ? K - k0 : GA_KC;
      for (size_t r = 0; r < M; r += GA_MR)
        gp_tile_rows(kc, A + r * lda + k0, lda, panel + k0 * GA_NR, C + r * ldc + c0, ldc,
                     M - r < GA_MR ? M - r : GA_MR, cols, k0 > 0, NULL);
    }
  }
#endif
}
