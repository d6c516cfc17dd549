/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The fast kernels' worker pool: threads - 1 persistent workers and a static split of every
 * parallel loop into at most `threads` chunks (chunk c always covers the same index range and has
 * its own scratch, so a result depends on the thread count only, never on timing or on which
 * thread ran which chunk). A job is published by bumping a generation counter; worker i takes
 * chunk i, and the caller runs chunk 0 and then any chunk still untaken, so a worker that is
 * descheduled on a busy machine does not stall the loop. Workers spin briefly on the counter
 * (kernels follow each other within microseconds) and then sleep on a condition variable.
 * The pool also caches one scratch buffer for the kernels of its executable.
 *
 * OpenBLAS keeps a thread pool of its own; GEMMs of the fast kernels run inside this pool's tasks,
 * so the first pool created switches OpenBLAS to one thread per call (openblas_set_num_threads(1))
 * to keep the two pools from oversubscribing the cores. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/fast/fast.h"

/* OpenBLAS's thread-count control (cblas.h of OpenBLAS declares it). */
void openblas_set_num_threads(int num_threads);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_thread(void) { openblas_set_num_threads(1); }
void fk_blas_serial(void) { pthread_once(&blas_once, blas_single_thread); }

static pthread_once_t ways_once = PTHREAD_ONCE_INIT;
static int det_gemm_ways = 1;
static void count_ways(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  det_gemm_ways = n < 1 ? 1 : n > 8 ? 8 : (int)n;
}
int fk_det_gemm_ways(void) {
  pthread_once(&ways_once, count_ways);
  return det_gemm_ways;
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

/* Spin iterations before a worker (or the caller waiting for workers) blocks: some tens of
 * microseconds. */
#define SPIN_ITERS 2000

typedef struct worker_arg {
  rlx_cpu_pool *pool;
  int index; /* 1 .. n_workers: the chunk it runs unless the caller got there first */
} worker_arg;

#define MAX_THREADS 256

struct rlx_cpu_pool {
  int threads;
  int n_workers;
  pthread_t *tids;
  worker_arg *args;
  pthread_mutex_t mu;
  pthread_cond_t wake, done_cv;
  int sleepers; /* workers blocked on `wake` (under mu) */
  atomic_bool stop;
  atomic_uint_fast64_t state;                /* (job generation << 16) | chunks; published with release */
  atomic_uint_fast64_t claimed[MAX_THREADS]; /* generation of the job whose chunk c was taken */
  atomic_int done;                           /* chunks of the current job finished */
  atomic_int busy;                           /* a parallel loop is running */
  /* the current job: written before `state`, stable until every chunk is done */
  fk_task fn;
  void *arg;
  size_t n;
  int chunks;
  /* scratch */
  void *scratch;
  size_t scratch_cap;
  bool scratch_out;
};

static void chunk_range(size_t n, int k, int c, size_t *lo, size_t *hi) {
  *lo = (size_t)((unsigned __int128)n * (unsigned)c / (unsigned)k);
  *hi = (size_t)((unsigned __int128)n * (unsigned)(c + 1) / (unsigned)k);
}

/* Takes chunk c of job generation g unless someone already has; runs it and counts it done. */
static bool run_chunk(rlx_cpu_pool *p, int c, uint_fast64_t g) {
  uint_fast64_t v = atomic_load_explicit(&p->claimed[c], memory_order_relaxed);
  do {
    if (v >= g) return false;
  } while (!atomic_compare_exchange_weak_explicit(&p->claimed[c], &v, g, memory_order_acq_rel, memory_order_relaxed));
  size_t lo, hi;
  int k = p->chunks; /* the job may be replaced as soon as `done` reaches k */
  chunk_range(p->n, k, c, &lo, &hi);
  p->fn(p->arg, lo, hi, c);
  if (atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel) + 1 == k) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
  }
  return true;
}

static void *worker_main(void *arg) {
  worker_arg *wa = arg;
  rlx_cpu_pool *p = wa->pool;
  uint_fast64_t seen = 0;
  for (;;) {
    uint_fast64_t st;
    int spins = 0;
    while (((st = atomic_load_explicit(&p->state, memory_order_acquire)) >> 16) == seen) {
      if (++spins < SPIN_ITERS) {
        cpu_relax();
        continue;
      }
      pthread_mutex_lock(&p->mu);
      while (((st = atomic_load_explicit(&p->state, memory_order_acquire)) >> 16) == seen) {
        p->sleepers++;
        pthread_cond_wait(&p->wake, &p->mu);
        p->sleepers--;
      }
      pthread_mutex_unlock(&p->mu);
      break;
    }
    seen = st >> 16;
    if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
    /* The chunk count comes with the generation, so a late worker never takes a chunk of a job
       it did not see; a chunk the caller already ran is skipped. */
    if (wa->index < (int)(st & 0xFFFF)) run_chunk(p, wa->index, seen);
  }
}

static void stop_workers(rlx_cpu_pool *p, int started) {
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->stop, true, memory_order_release);
  uint_fast64_t g = (atomic_load_explicit(&p->state, memory_order_relaxed) >> 16) + 1;
  atomic_store_explicit(&p->state, g << 16, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < started; i++) pthread_join(p->tids[i], NULL);
}

rlx_status rlx_cpu_pool_create(int threads, rlx_cpu_pool **out) {
  *out = NULL;
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  pthread_once(&blas_once, blas_single_thread);
  rlx_cpu_pool *p = calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cpu: out of memory creating the worker pool");
  p->threads = threads;
  p->n_workers = threads - 1;
  atomic_init(&p->stop, false);
  atomic_init(&p->state, 0);
  for (int i = 0; i < MAX_THREADS; i++) atomic_init(&p->claimed[i], 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->busy, 0);
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p);
    return rlx_errorf(RLX_ERR_OOM, "cpu: cannot create the worker pool's mutex");
  }
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  if (p->n_workers > 0) {
    p->tids = calloc((size_t)p->n_workers, sizeof *p->tids);
    p->args = calloc((size_t)p->n_workers, sizeof *p->args);
    if (!p->tids || !p->args) {
      p->n_workers = 0;
      rlx_cpu_pool_free(p);
      return rlx_errorf(RLX_ERR_OOM, "cpu: out of memory creating the worker pool");
    }
    for (int i = 0; i < p->n_workers; i++) {
      p->args[i].pool = p;
      p->args[i].index = i + 1;
      if (pthread_create(&p->tids[i], NULL, worker_main, &p->args[i]) != 0) {
        stop_workers(p, i);
        p->n_workers = 0; /* the started ones are joined */
        rlx_cpu_pool_free(p);
        return rlx_errorf(RLX_ERR_RUNTIME, "cpu: cannot start worker thread %d of %d", i + 1, threads - 1);
      }
    }
  }
  *out = p;
  return RLX_OK;
}

void rlx_cpu_pool_free(rlx_cpu_pool *p) {
  if (!p) return;
  if (p->n_workers > 0) stop_workers(p, p->n_workers);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done_cv);
  pthread_mutex_destroy(&p->mu);
  free(p->tids);
  free(p->args);
  free(p->scratch);
  free(p);
}

int fk_chunks(const rlx_cpu_ctx *ctx, size_t n, size_t grain) {
  if (!ctx || !ctx->pool) return 1;
  int t = ctx->threads > 1 ? ctx->threads : 1;
  if (t > ctx->pool->threads) t = ctx->pool->threads;
  if (grain < 1) grain = 1;
  size_t by_grain = n / grain;
  if (by_grain < 1) by_grain = 1;
  return by_grain < (size_t)t ? (int)by_grain : t;
}

int fk_parts(const rlx_cpu_ctx *ctx, size_t n) {
  if (ctx && ctx->deterministic) {
    size_t p = (n + FK_DET_PART_ITEMS - 1) / FK_DET_PART_ITEMS;
    if (p < FK_DET_MIN_PARTS) p = n < FK_DET_MIN_PARTS ? n : FK_DET_MIN_PARTS;
    if (p > FK_DET_MAX_PARTS) p = FK_DET_MAX_PARTS;
    return p ? (int)p : 1;
  }
  return fk_chunks(ctx, n, 1);
}

void fk_parallel_for(rlx_cpu_ctx *ctx, size_t n, size_t grain, fk_task fn, void *arg) {
  if (n == 0) return;
  int k = fk_chunks(ctx, n, grain);
  rlx_cpu_pool *p = ctx ? ctx->pool : NULL;
  int expected = 0;
  if (k <= 1 || !p || p->n_workers == 0 ||
      !atomic_compare_exchange_strong_explicit(&p->busy, &expected, 1, memory_order_acquire, memory_order_relaxed)) {
    for (int c = 0; c < k; c++) {
      size_t lo, hi;
      chunk_range(n, k, c, &lo, &hi);
      fn(arg, lo, hi, c);
    }
    return;
  }
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  p->chunks = k;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  uint_fast64_t g = (atomic_load_explicit(&p->state, memory_order_relaxed) >> 16) + 1;
  atomic_store_explicit(&p->state, (g << 16) | (uint_fast64_t)k, memory_order_release);
  pthread_mutex_lock(&p->mu);
  if (p->sleepers) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  /* The caller runs chunk 0, then every chunk no worker has taken yet (a descheduled or sleeping
     worker does not hold the loop up). */
  for (int c = 0; c < k; c++) run_chunk(p, c, g);
  int spins = 0;
  while (atomic_load_explicit(&p->done, memory_order_acquire) < k) {
    if (++spins < SPIN_ITERS) {
      cpu_relax();
      continue;
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->done, memory_order_acquire) < k) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  atomic_store_explicit(&p->busy, 0, memory_order_release);
}

void *fk_scratch(rlx_cpu_ctx *ctx, size_t bytes) {
  bytes = fk_align64(bytes ? bytes : 1);
  rlx_cpu_pool *p = ctx ? ctx->pool : NULL;
  if (!p || p->scratch_out) return aligned_alloc(64, bytes);
  if (bytes > p->scratch_cap) {
    free(p->scratch);
    p->scratch_cap = 0;
    p->scratch = aligned_alloc(64, bytes);
    if (!p->scratch) return NULL;
    p->scratch_cap = bytes;
  }
  p->scratch_out = true;
  return p->scratch;
}

void fk_scratch_release(rlx_cpu_ctx *ctx, void *ptr) {
  rlx_cpu_pool *p = ctx ? ctx->pool : NULL;
  if (p && p->scratch_out && ptr == p->scratch) {
    p->scratch_out = false;
    return;
  }
  free(ptr);
}
