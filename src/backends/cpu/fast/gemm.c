/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernels: f32 MatMul through cblas_sgemm (batched, NumPy batch broadcasting, operands
 * optionally read transposed for the executor's Transpose -> MatMul fusion) and Transpose for any
 * dtype (axes that stay adjacent are merged; the two-axis swap is tiled).
 * Also the shared helpers of fast.h (fk_sgemm, shape predicates). */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- shared helpers ---- */

bool fk_static_f32(const rlx_shape *s) {
  if (s->dtype != RLX_F32 || !rlx_shape_is_static(s)) return false;
  size_t nb;
  return rlx_shape_nbytes(s, &nb) == RLX_OK && nb <= ((size_t)1 << 40);
}

bool fk_same_dims(const rlx_shape *a, const rlx_shape *b) {
  if (a->rank != b->rank) return false;
  for (uint32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

void fk_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb,
              bool accumulate, float *C, size_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate)
      for (size_t i = 0; i < M; i++) memset(C + i * ldc, 0, N * sizeof *C);
    return;
  }
  /* A product with one row or one column is a matrix-vector product: OpenBLAS's sgemm packs both
   * operands for it anyway (4-6x slower than its sgemv on mobilenet's classifier and
   * squeeze-excite shapes, measured: docs/cpu-backend.md). C is zeroed here rather than by
   * sgemv's beta = 0, so whatever the buffer held before (NaN included) never reaches it. */
  if (M == 1 || N == 1) {
    if (!accumulate)
      for (size_t i = 0; i < M; i++) memset(C + i * ldc, 0, N * sizeof *C);
    if (M == 1) /* C[1, N] = a . op(B): a's k-th element is A[k] (or A[k * lda] when ta) */
      cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? (int)N : (int)K, tb ? (int)K : (int)N, 1.0f,
                  B, (int)ldb, A, ta ? (int)lda : 1, 1.0f, C, 1);
    else /* C[M, 1] (stride ldc) = op(A) . b: b's k-th element is B[k * ldb] (or B[k] when tb) */
      cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, ta ? (int)K : (int)M, ta ? (int)M : (int)K, 1.0f,
                  A, (int)lda, B, tb ? 1 : (int)ldb, 1.0f, C, (int)ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K,
              1.0f, A, (int)lda, B, (int)ldb, accumulate ? 1.0f : 0.0f, C, (int)ldc);
}

/* ======================================================================================
 * MatMul
 * ====================================================================================== */

/* Matrix extents of a stored operand of rank >= 2, read transposed when t. */
static void mat_dims(const rlx_shape *s, bool t, size_t *rows, size_t *cols) {
  size_t r = (size_t)s->dims[s->rank - 2], c = (size_t)s->dims[s->rank - 1];
  *rows = t ? c : r;
  *cols = t ? r : c;
}

/* Batch shape (all but the last two axes) of s. */
static rlx_shape batch_of(const rlx_shape *s) {
  rlx_shape b = *s;
  b.rank = (uint8_t)(s->rank - 2);
  return b;
}

/* Offset (in batch units) of operand batch shape `in` for flat batch index i of `out`. */
static size_t batch_offset(const rlx_shape *in, const rlx_shape *out, size_t i) {
  size_t off = 0, stride = 1;
  for (int k = 0; k < (int)out->rank; k++) {
    size_t od = (size_t)out->dims[out->rank - 1 - k];
    size_t c = i % od;
    i /= od;
    if (k >= (int)in->rank) continue;
    size_t id = (size_t)in->dims[in->rank - 1 - k];
    if (id != 1) off += c * stride;
    stride *= id;
  }
  return off;
}

bool rlx_fast_matmul_ex_applies(const rlx_node *n, const rlx_shape *a, bool ta, const rlx_shape *b, bool tb) {
  const rlx_shape *o = &n->shape;
  if (!fk_static_f32(a) || !fk_static_f32(b) || !fk_static_f32(o)) return false;
  if (a->rank < 2 || b->rank < 2) return false;
  size_t M, K, K2, N;
  mat_dims(a, ta, &M, &K);
  mat_dims(b, tb, &K2, &N);
  if (K != K2 || M > INT_MAX || N > INT_MAX || K > INT_MAX) return false;
  rlx_shape ba = batch_of(a), bb = batch_of(b), bo;
  if (rlx_broadcast(&ba, &bb, &bo) != RLX_OK || bo.rank + 2u != o->rank) return false;
  for (uint32_t k = 0; k < bo.rank; k++)
    if (bo.dims[k] != o->dims[k]) return false;
  return (size_t)o->dims[o->rank - 2] == M && (size_t)o->dims[o->rank - 1] == N;
}

typedef struct mm_job {
  const float *a, *b;
  float *c;
  size_t M, N, K;
  rlx_shape ba, bb, bo;
  size_t col_chunks; /* blocks per batch (work item = (batch, block)) */
  bool rows;         /* blocks of rows of A and C (tall products), else of columns of B and C */
} mm_job;

static void mm_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const mm_job *j = arg;
  size_t lda = j->K, ldb = j->N;
  for (size_t w = lo; w < hi; w++) {
    size_t i = w / j->col_chunks, cb = w % j->col_chunks, ext = j->rows ? j->M : j->N;
    size_t c0 = cb * ext / j->col_chunks, c1 = (cb + 1) * ext / j->col_chunks;
    if (c1 == c0) continue;
    const float *A = j->a + batch_offset(&j->ba, &j->bo, i) * j->M * j->K;
    const float *B = j->b + batch_offset(&j->bb, &j->bo, i) * j->K * j->N;
    float *C = j->c + i * j->M * j->N;
    if (j->rows) /* rows c0..c1 of A and C */
      fk_sgemm(false, false, c1 - c0, j->N, j->K, A + c0 * j->K, lda, B, ldb, false, C + c0 * j->N, j->N);
    else /* columns c0..c1 of B (row-major [K, N]) and C */
      fk_sgemm(false, false, j->M, c1 - c0, j->K, A, lda, B + c0, ldb, false, C + c0, j->N);
  }
}

static void transpose_batches(rlx_cpu_ctx *ctx, const float *src, float *dst, size_t batch, size_t rows, size_t cols);

/* The product is always computed as the non-transposed sgemm an unfused MatMul of the same
 * logical operands makes: an operand read transposed is first transposed into scratch (the bytes
 * the Transpose kernel would have written). cblas_sgemm with a transpose flag is not the same
 * arithmetic as the plain call on the transposed copy: OpenBLAS picks its kernel per CPU and per
 * (transA, transB, M, N, K) - e.g. the SkylakeX/Cooperlake small-matrix kernels, used on every
 * AVX-512 CPU, reduce along K in vector lanes for some flag combinations - so the fused thunk
 * rounded differently from the unfused run on AVX-512 machines only (docs/cpu-backend.md). */
rlx_status rlx_fast_matmul_ex(const rlx_node *n, const rlx_tensor *a, bool ta, const rlx_tensor *b, bool tb,
                              rlx_tensor *out, rlx_cpu_ctx *ctx) {
  (void)n;
  mm_job j;
  memset(&j, 0, sizeof j);
  j.a = a->data;
  j.b = b->data;
  j.c = out->data;
  mat_dims(&a->shape, ta, &j.M, &j.K);
  mat_dims(&b->shape, tb, &j.K, &j.N);
  j.ba = batch_of(&a->shape);
  j.bb = batch_of(&b->shape);
  j.bo = batch_of(&out->shape);
  size_t batches = fk_numel(&j.bo);
  if (batches == 0 || j.M == 0 || j.N == 0) return RLX_OK;
  size_t na = ta ? fk_numel(&j.ba) * j.M * j.K : 0, nb = tb ? fk_numel(&j.bb) * j.K * j.N : 0;
  float *scratch = NULL;
  if (na + nb) {
    scratch = fk_scratch(ctx, fk_align64(na * sizeof(float)) + nb * sizeof(float));
    if (!scratch)
      return rlx_errorf(RLX_ERR_OOM, "MatMul: out of memory for a transposed operand (%zu floats)", na + nb);
    float *tb_buf = scratch + fk_align64(na * sizeof(float)) / sizeof(float);
    if (ta) transpose_batches(ctx, a->data, scratch, fk_numel(&j.ba), j.K, j.M), j.a = scratch;
    if (tb) transpose_batches(ctx, b->data, tb_buf, fk_numel(&j.bb), j.N, j.K), j.b = tb_buf;
  }
  /* Enough work items for every thread: split the rows (M > N) or the columns when there are fewer
   * batches than threads and the product is big enough to be worth it. In deterministic mode the split (which
   * changes the sgemm calls, hence possibly OpenBLAS's kernel) depends on the shape only. */
  int ways = ctx && ctx->deterministic ? fk_det_gemm_ways() : fk_chunks(ctx, (size_t)1 << 30, 1);
  size_t min_cols = ctx && ctx->deterministic ? FK_DET_GEMM_MIN_COLS : 16;
  double flops = 2.0 * (double)batches * (double)j.M * (double)j.N * (double)j.K;
  j.col_chunks = 1;
  j.rows = j.M > j.N;
  if (flops > 2e5 && batches < (size_t)ways) {
    size_t want = ((size_t)ways + batches - 1) / batches, ext = j.rows ? j.M : j.N;
    size_t max_cols = ext / min_cols ? ext / min_cols : 1; /* at least min_cols rows / columns per block */
    j.col_chunks = want < max_cols ? want : max_cols;
  }
  size_t items = batches * j.col_chunks;
  size_t grain = flops / (double)items > 2e5 ? 1 : (size_t)(2e5 / (flops / (double)items)) + 1;
  fk_parallel_for(ctx, items, grain, mm_task, &j);
  if (scratch) fk_scratch_release(ctx, scratch);
  return RLX_OK;
}

FK_APPLIES(MatMul) {
  if (n_in != 2) return false;
  return rlx_fast_matmul_ex_applies(n, &in[0].shape, false, &in[1].shape, false);
}

FK_KERNEL(MatMul) {
  (void)n_in;
  return rlx_fast_matmul_ex(n, &in[0], false, &in[1], false, out, ctx);
}

/* ======================================================================================
 * Transpose
 * ====================================================================================== */

/* The permutation with adjacent source axes merged: out axis k reads merged source axis perm[k]. */
typedef struct merged_perm {
  uint32_t rank;
  size_t dims[RLX_MAX_RANK]; /* merged source dims */
  uint32_t perm[RLX_MAX_RANK];
} merged_perm;

static bool merge_perm(const rlx_shape *x, const rlx_ilist *perm, merged_perm *m) {
  if (perm->n != x->rank) return false;
  uint32_t seen = 0;
  for (uint32_t k = 0; k < perm->n; k++) {
    int64_t a = perm->v[k];
    if (a < 0 || a >= (int64_t)x->rank || (seen & (1u << a))) return false;
    seen |= 1u << a;
  }
  /* Drop unit axes, then merge runs of output axes that read consecutive source axes. */
  uint32_t p[RLX_MAX_RANK], r = 0;
  for (uint32_t k = 0; k < perm->n; k++)
    if (x->dims[perm->v[k]] != 1) p[r++] = (uint32_t)perm->v[k];
  /* groups in output order: [start source axis, length] */
  uint32_t gs[RLX_MAX_RANK], gl[RLX_MAX_RANK], ng = 0;
  for (uint32_t k = 0; k < r; k++) {
    if (ng && p[k] > gs[ng - 1] + gl[ng - 1] - 1) {
      /* consecutive in the source, ignoring unit axes in between */
      bool adjacent = true;
      for (uint32_t s = gs[ng - 1] + gl[ng - 1]; s < p[k]; s++)
        if (x->dims[s] != 1) adjacent = false;
      if (adjacent) {
        gl[ng - 1] = p[k] - gs[ng - 1] + 1;
        continue;
      }
    }
    gs[ng] = p[k];
    gl[ng] = 1;
    ng++;
  }
  /* Source order of the groups gives the merged source dims; perm maps output group -> rank. */
  m->rank = ng;
  for (uint32_t gi = 0; gi < ng; gi++) {
    uint32_t rank_in_src = 0;
    for (uint32_t o = 0; o < ng; o++)
      if (gs[o] < gs[gi]) rank_in_src++;
    size_t d = 1;
    for (uint32_t s = gs[gi]; s < gs[gi] + gl[gi]; s++) d *= (size_t)x->dims[s];
    m->dims[rank_in_src] = d;
    m->perm[gi] = rank_in_src;
  }
  return true;
}

FK_APPLIES(Transpose) {
  if (n_in != 1) return false;
  const rlx_shape *x = &in[0].shape, *o = &n->shape;
  if (!rlx_shape_is_static(x) || x->dtype != o->dtype || x->rank != o->rank) return false;
  size_t esz = rlx_dtype_size((rlx_dtype)x->dtype);
  if (esz != 1 && esz != 2 && esz != 4 && esz != 8) return false;
  const rlx_ilist *perm = &n->attrs.Transpose.perm;
  merged_perm m;
  if (!merge_perm(x, perm, &m)) return false;
  for (uint32_t k = 0; k < x->rank; k++)
    if (o->dims[k] != x->dims[perm->v[k]]) return false;
  return fk_numel(x) <= ((size_t)1 << 40);
}

typedef struct tr_job {
  const uint8_t *src;
  uint8_t *dst;
  size_t esz;
  merged_perm m;
  size_t rows, cols; /* the swapped pair of a [batch, rows, cols] -> [batch, cols, rows] case */
  size_t batch;
} tr_job;

#define TILE 32

/* dst[c, r] = src[r, c] for one [rows, cols] matrix, rows r0..r1 of the source. */
#define SWAP_BODY(T)                                                                           \
  do {                                                                                         \
    const T *s = (const T *)src;                                                               \
    T *d = (T *)dst;                                                                           \
    for (size_t rb = r0; rb < r1; rb += TILE)                                                  \
      for (size_t cb = 0; cb < cols; cb += TILE) {                                             \
        size_t re = rb + TILE < r1 ? rb + TILE : r1, ce = cb + TILE < cols ? cb + TILE : cols; \
        for (size_t r = rb; r < re; r++)                                                       \
          for (size_t c = cb; c < ce; c++) d[c * rows + r] = s[r * cols + c];                  \
      }                                                                                        \
  } while (0)

#if defined(__SSE2__)
/* 4-byte elements: 4 x 4 blocks through SSE registers, the ragged edges element by element. */
static void swap_rows4(const float *s, float *d, size_t rows, size_t cols, size_t r0, size_t r1) {
  size_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    size_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a = _mm_loadu_ps(s + r * cols + c), b = _mm_loadu_ps(s + (r + 1) * cols + c);
      __m128 e = _mm_loadu_ps(s + (r + 2) * cols + c), f = _mm_loadu_ps(s + (r + 3) * cols + c);
      _MM_TRANSPOSE4_PS(a, b, e, f);
      _mm_storeu_ps(d + c * rows + r, a);
      _mm_storeu_ps(d + (c + 1) * rows + r, b);
      _mm_storeu_ps(d + (c + 2) * rows + r, e);
      _mm_storeu_ps(d + (c + 3) * rows + r, f);
    }
    for (; c < cols; c++)
      for (size_t i = r; i < r + 4; i++) d[c * rows + i] = s[i * cols + c];
  }
  for (; r < r1; r++)
    for (size_t c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c];
}
#endif

static void swap_rows(const void *src, void *dst, size_t esz, size_t rows, size_t cols, size_t r0, size_t r1) {
  switch (esz) {
  case 1: SWAP_BODY(uint8_t); break;
  case 2: SWAP_BODY(uint16_t); break;
#if defined(__SSE2__)
  case 4: swap_rows4(src, dst, rows, cols, r0, r1); break; /* bits moved as floats: exact */
#else
  case 4: SWAP_BODY(uint32_t); break;
#endif
  default: SWAP_BODY(uint64_t); break;
  }
}

/* Work item w: batch w / rows_blocks, source rows of block w % row_blocks. */
static void tr_swap_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const tr_job *j = arg;
  size_t blocks = (j->rows + TILE - 1) / TILE, mat = j->rows * j->cols * j->esz;
  for (size_t w = lo; w < hi; w++) {
    size_t b = w / blocks, r0 = (w % blocks) * TILE, r1 = r0 + TILE < j->rows ? r0 + TILE : j->rows;
    swap_rows(j->src + b * mat, j->dst + b * mat, j->esz, j->rows, j->cols, r0, r1);
  }
}

/* Generic: output rows (all but the last merged axis) lo..hi, each a strided gather. */
static void tr_generic_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const tr_job *j = arg;
  const merged_perm *m = &j->m;
  size_t sst[RLX_MAX_RANK], odims[RLX_MAX_RANK];
  size_t st = 1;
  for (int k = (int)m->rank - 1; k >= 0; k--) {
    sst[k] = st;
    st *= m->dims[k];
  }
  for (uint32_t k = 0; k < m->rank; k++) odims[k] = m->dims[m->perm[k]];
  size_t inner = odims[m->rank - 1], istride = sst[m->perm[m->rank - 1]];
  for (size_t row = lo; row < hi; row++) {
    size_t rem = row, off = 0;
    for (int k = (int)m->rank - 2; k >= 0; k--) {
      size_t c = rem % odims[k];
      rem /= odims[k];
      off += c * sst[m->perm[k]];
    }
    uint8_t *d = j->dst + row * inner * j->esz;
    const uint8_t *s = j->src + off * j->esz;
    switch (j->esz) {
    case 1:
      for (size_t i = 0; i < inner; i++) d[i] = s[i * istride];
      break;
    case 2:
      for (size_t i = 0; i < inner; i++) memcpy(d + 2 * i, s + 2 * i * istride, 2);
      break;
    case 4:
      for (size_t i = 0; i < inner; i++) memcpy(d + 4 * i, s + 4 * i * istride, 4);
      break;
    default:
      for (size_t i = 0; i < inner; i++) memcpy(d + 8 * i, s + 8 * i * istride, 8);
      break;
    }
  }
}

FK_KERNEL(Transpose) {
  (void)n_in;
  tr_job j;
  memset(&j, 0, sizeof j);
  j.src = in[0].data;
  j.dst = out->data;
  j.esz = rlx_dtype_size((rlx_dtype)in[0].shape.dtype);
  merge_perm(&in[0].shape, &n->attrs.Transpose.perm, &j.m);
  size_t total = fk_numel(&in[0].shape);
  if (total == 0) return RLX_OK;
  const merged_perm *m = &j.m;
  if (m->rank <= 1) { /* the identity after merging */
    memcpy(j.dst, j.src, total * j.esz);
    return RLX_OK;
  }
  if ((m->rank == 2 && m->perm[0] == 1) || (m->rank == 3 && m->perm[0] == 0 && m->perm[1] == 2)) {
    j.batch = m->rank == 3 ? m->dims[0] : 1;
    j.rows = m->dims[m->rank - 2];
    j.cols = m->dims[m->rank - 1];
    size_t items = j.batch * ((j.rows + TILE - 1) / TILE);
    fk_parallel_for(ctx, items, (16384 / (TILE * j.cols + 1)) + 1, tr_swap_task, &j);
    return RLX_OK;
  }
  size_t inner = m->dims[m->perm[m->rank - 1]];
  fk_parallel_for(ctx, total / inner, 16384 / inner + 1, tr_generic_task, &j);
  return RLX_OK;
}

/* dst[b] = src[b]^T for `batch` row-major [rows, cols] matrices (the Transpose kernel's swap). */
static void transpose_batches(rlx_cpu_ctx *ctx, const float *src, float *dst, size_t batch, size_t rows, size_t cols) {
  tr_job j;
  memset(&j, 0, sizeof j);
  j.src = (const uint8_t *)src;
  j.dst = (uint8_t *)dst;
  j.esz = sizeof(float);
  j.batch = batch;
  j.rows = rows;
  j.cols = cols;
  size_t items = batch * ((rows + TILE - 1) / TILE);
  fk_parallel_for(ctx, items, (16384 / (TILE * cols + 1)) + 1, tr_swap_task, &j);
}
