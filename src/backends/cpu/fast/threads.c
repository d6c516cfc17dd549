/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The fast kernels' worker pool: threads - 1 persistent workers and a static split of every
 * parallel loop (chunk c always runs the same index range, so a result depends on the thread count
 * only, never on timing). A job is published by bumping a generation counter; workers spin on it
 * briefly (kernels follow each other within microseconds) and then sleep on a condition variable.
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

#include "backends/cpu/fast/fast.h"

/* OpenBLAS's thread-count control (cblas.h of OpenBLAS declares it). */
void openblas_set_num_threads(int num_threads);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_thread(void) { openblas_set_num_threads(1); }

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#else
static inline void cpu_relax(void) {}
#endif

/* Spin iterations before a worker (or the caller waiting for workers) blocks: some tens of
 * microseconds. */
#define SPIN_ITERS 8000

typedef struct worker_arg {
  rlx_cpu_pool *pool;
  int index; /* 1 .. n_workers: the chunk it runs */
} worker_arg;

struct rlx_cpu_pool {
  int threads;
  int n_workers;
  pthread_t *tids;
  worker_arg *args;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  int sleepers;         /* workers blocked on `wake` (under mu) */
  atomic_bool stop;
  atomic_uint_fast64_t gen; /* bumped once per job */
  atomic_int pending;   /* workers that have not finished the current job */
  atomic_int busy;      /* a parallel loop is running */
  /* the current job (written before gen is bumped) */
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

static void *worker_main(void *p) {
  worker_arg *wa = p;
  rlx_cpu_pool *pool = wa->pool;
  uint_fast64_t seen = 0;
  for (;;) {
    uint_fast64_t g;
    int spins = 0;
    while ((g = atomic_load_explicit(&pool->gen, memory_order_acquire)) == seen) {
      if (++spins < SPIN_ITERS) {
        cpu_relax();
        continue;
      }
      pthread_mutex_lock(&pool->mu);
      while ((g = atomic_load_explicit(&pool->gen, memory_order_acquire)) == seen) {
        pool->sleepers++;
        pthread_cond_wait(&pool->wake, &pool->mu);
        pool->sleepers--;
      }
      pthread_mutex_unlock(&pool->mu);
      break;
    }
    seen = g;
    if (atomic_load_explicit(&pool->stop, memory_order_acquire)) return NULL;
    if (wa->index < pool->chunks) {
      size_t lo, hi;
      chunk_range(pool->n, pool->chunks, wa->index, &lo, &hi);
      pool->fn(pool->arg, lo, hi, wa->index);
    }
    if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_broadcast(&pool->done);
      pthread_mutex_unlock(&pool->mu);
    }
  }
}

static void stop_workers(rlx_cpu_pool *p, int started) {
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->stop, true, memory_order_release);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < started; i++) pthread_join(p->tids[i], NULL);
}

rlx_status rlx_cpu_pool_create(int threads, rlx_cpu_pool **out) {
  *out = NULL;
  if (threads < 1) threads = 1;
  if (threads > 256) threads = 256;
  pthread_once(&blas_once, blas_single_thread);
  rlx_cpu_pool *p = calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cpu: out of memory creating the worker pool");
  p->threads = threads;
  p->n_workers = threads - 1;
  atomic_init(&p->stop, false);
  atomic_init(&p->gen, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->busy, 0);
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p);
    return rlx_errorf(RLX_ERR_OOM, "cpu: cannot create the worker pool's mutex");
  }
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (p->n_workers > 0) {
    p->tids = calloc((size_t)p->n_workers, sizeof *p->tids);
    p->args = calloc((size_t)p->n_workers, sizeof *p->args);
    if (!p->tids || !p->args) {
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
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  free(p->tids);
  free(p->args);
  free(p->scratch);
  free(p);
}

int fk_chunks(const rlx_cpu_ctx *ctx, size_t n, size_t grain) {
  int t = ctx && ctx->threads > 1 ? ctx->threads : 1;
  if (ctx && ctx->pool && t > ctx->pool->threads) t = ctx->pool->threads;
  if (!ctx || !ctx->pool) t = 1;
  if (grain < 1) grain = 1;
  size_t by_grain = n / grain;
  if (by_grain < 1) by_grain = 1;
  return by_grain < (size_t)t ? (int)by_grain : t;
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
  atomic_store_explicit(&p->pending, p->n_workers, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
  pthread_mutex_lock(&p->mu);
  if (p->sleepers) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  size_t lo, hi;
  chunk_range(n, k, 0, &lo, &hi);
  fn(arg, lo, hi, 0);
  int spins = 0;
  while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
    if (++spins < SPIN_ITERS) {
      cpu_relax();
      continue;
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) pthread_cond_wait(&p->done, &p->mu);
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
