/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Private interface of the CPU fast kernels (fast/): the worker pool with its scratch memory
 * (threads.c), the GEMM and shape helpers every family uses, and the applies/kernel pairs the
 * table (table.c) collects.
 *
 * Fast kernels compute in f32 (GEMMs through cblas_sgemm) where the reference kernels compute in
 * double; results agree to f32 rounding (docs/cpu-backend.md). A kernel runs only on operands for
 * which its `applies` returned true, so it does not repeat the reference kernel's checks; data-
 * dependent errors (a label out of range) are left to the reference kernel, which the fast kernel
 * calls to produce the message. */
#ifndef RLX_CPU_FAST_H
#define RLX_CPU_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/cpu_kernels.h"

/* ---- worker pool and scratch (threads.c) ---- */

/* A pool of threads - 1 persistent workers (the caller is the remaining one) plus a scratch
 * buffer reused across kernel calls. threads >= 1 (1: no workers, scratch only). */
rlx_status rlx_cpu_pool_create(int threads, rlx_cpu_pool **out);
void rlx_cpu_pool_free(rlx_cpu_pool *p);

/* fn(arg, lo, hi, chunk) over [0, n) split into fk_chunks(ctx, n, grain) contiguous chunks:
 * chunk c covers [c*n/k, (c+1)*n/k) and runs on worker c (chunk 0 on the caller). The split
 * depends only on n, grain and ctx->threads, so results are reproducible for a thread count.
 * Runs serially (chunk by chunk, in order) without a pool or when called from inside a task. */
typedef void (*fk_task)(void *arg, size_t lo, size_t hi, int chunk);
int fk_chunks(const rlx_cpu_ctx *ctx, size_t n, size_t grain);
void fk_parallel_for(rlx_cpu_ctx *ctx, size_t n, size_t grain, fk_task fn, void *arg);

/* A 64-byte aligned buffer of `bytes` for the duration of one kernel call (the pool's cached
 * scratch; malloc without a pool). Release it with fk_scratch_release. NULL when out of memory. */
void *fk_scratch(rlx_cpu_ctx *ctx, size_t bytes);
void fk_scratch_release(rlx_cpu_ctx *ctx, void *p);
/* Rounds a byte count up to a multiple of 64 (for carving one scratch block into parts). */
static inline size_t fk_align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* ---- small shape helpers ---- */

static inline size_t fk_numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}
static inline bool fk_is_f32(const rlx_shape *s) { return s->dtype == RLX_F32; }
/* Static f32 shape whose element count (and f32 byte size) fits comfortably. */
bool fk_static_f32(const rlx_shape *s);
/* The same dims (rank and extents). */
bool fk_same_dims(const rlx_shape *a, const rlx_shape *b);

/* C[M, N] = A . B (+ C when accumulate), row-major; ta / tb take A / B transposed (A is then
 * stored [K, M], B [N, K]). Extents must fit int (checked by the appliers). */
void fk_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb,
              bool accumulate, float *C, size_t ldc);

/* ---- kernels: applies + kernel per op (one family per file) ---- */

#define FK_DECL(Op)                                                                                \
  bool rlx_fast_applies_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in);             \
  rlx_status rlx_fast_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, \
                           rlx_cpu_ctx *ctx)
#define FK_APPLIES(Op) bool rlx_fast_applies_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in)
#define FK_KERNEL(Op)                                                                              \
  rlx_status rlx_fast_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, \
                           rlx_cpu_ctx *ctx)

/* gemm.c */
FK_DECL(MatMul);
FK_DECL(Transpose);
/* conv.c */
FK_DECL(Conv);
FK_DECL(Conv2dBackwardInput);
FK_DECL(Conv2dBackwardWeight);
/* pool.c */
FK_DECL(Pool);
FK_DECL(MaxPool2dBackward);
/* elementwise.c */
FK_DECL(Binary);
FK_DECL(Activation);
FK_DECL(ReluBackward);
FK_DECL(ActivationBackward);
FK_DECL(Where);
FK_DECL(Cast);
/* reduce.c */
FK_DECL(Reduce);
FK_DECL(Softmax);
FK_DECL(SoftmaxCrossEntropyWithLogits);
FK_DECL(SoftmaxCrossEntropyBackward);

/* MatMul with operands read transposed (the executor's Transpose -> MatMul fusion): a and b as
 * stored; ta / tb say that the last two axes of a / b are to be swapped first. `n` is the MatMul
 * node (its declared shape is the output's). applies_ex checks the stored shapes. */
bool rlx_fast_matmul_ex_applies(const rlx_node *n, const rlx_shape *a, bool ta, const rlx_shape *b, bool tb);
rlx_status rlx_fast_matmul_ex(const rlx_node *n, const rlx_tensor *a, bool ta, const rlx_tensor *b, bool tb,
                              rlx_tensor *out, rlx_cpu_ctx *ctx);

#endif
