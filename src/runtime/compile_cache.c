/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The compile cache: a small table of entries (least recently used goes first) under one mutex.
 * Bounds: RLX_COMPILE_CACHE_ENTRIES entries (default 16), RLX_COMPILE_CACHE_NODES compiled nodes
 * in all (default 4,000,000) and RLX_COMPILE_CACHE_MB megabytes of graph memory in all (nodes plus
 * constant data: a model's weights; default 1024); RLX_COMPILE_CACHE=0 turns it off. An evicted
 * entry lives on until the last executable that shares its graph is freed. */
#include "runtime/compile_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "rlx/cpu.h"
#include "runtime/exec_internal.h" /* rlx_node_bodies */

struct rlx_cc_entry {
  rlx_cc_key key;
  rlx_graph *graph;
  rlx_dispatch_report report;
  rlx_plan *plan; /* default allocator; NULL until the first compile of the entry planned it */
  uint32_t refs;  /* the table's (while in it) + one per holder */
  uint64_t used;  /* tick of the last lookup */
  size_t bytes;   /* nodes and constant data of the graph (bodies included) */
  bool in_table;
};

#define CC_MAX_ENTRIES 256

static pthread_mutex_t cc_lock = PTHREAD_MUTEX_INITIALIZER;
static rlx_cc_entry *cc_table[CC_MAX_ENTRIES];
static uint32_t cc_n;
static uint64_t cc_tick, cc_hits, cc_misses;

static long env_long(const char *name, long def, long lo, long hi) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || v < lo) return def;
  return v > hi ? hi : v;
}

static uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t mix_str(uint64_t h, const char *s) {
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return mix(h, 0x73747221ull);
}

bool rlx_cc_key_make(const rlx_graph *g, const rlx_backend *be, const rlx_compile_options *opt, bool positional,
                     rlx_cc_key *key) {
  if (!opt->compile_cache || env_long("RLX_COMPILE_CACHE", 1, 0, 1) == 0) return false;
  const rlx_allocator *al = rlx_graph_allocator(g), *def = rlx_default_allocator();
  if (al->alloc != def->alloc || al->free != def->free || al->ctx != def->ctx) return false;
  uint64_t h = 0x636f6d70696c65ull;
  h = mix(h, opt->fold_constants);
  h = mix(h, opt->cse);
  h = mix(h, opt->dce);
  h = mix(h, opt->check_plan);
  h = mix(h, opt->rng_seed);
  h = mix(h, positional);
  h = mix_str(h, be->name);
  h = mix(h, rlx_fuse_disabled()); /* RLX_FUSE_ELEMENTWISE=0 compiles another graph */
  if (opt->backend_options) {
    const rlx_backend_options_header *hd = opt->backend_options;
    if (!hd->backend || strcmp(hd->backend, "cpu") != 0) return false; /* options we cannot read */
    const rlx_cpu_options *co = opt->backend_options;
    h = mix(h, 1);
    h = mix(h, (uint64_t)(int64_t)co->threads);
    h = mix(h, co->deterministic);
  }
  key->opts = h;
  key->backend = be;
  rlx_graph_hash(g, key->graph);
  return true;
}

static bool key_eq(const rlx_cc_key *a, const rlx_cc_key *b) {
  return a->graph[0] == b->graph[0] && a->graph[1] == b->graph[1] && a->opts == b->opts && a->backend == b->backend;
}

/* Under the lock: drops one reference, freeing the entry with the last. */
static void unref_locked(rlx_cc_entry *e) {
  if (--e->refs) return;
  rlx_graph_free(e->graph);
  rlx_plan_free(e->plan, NULL);
  free(e);
}

static void remove_at_locked(uint32_t i) {
  rlx_cc_entry *e = cc_table[i];
  cc_table[i] = cc_table[--cc_n];
  e->in_table = false;
  unref_locked(e);
}

rlx_cc_entry *rlx_cc_lookup(const rlx_cc_key *key) {
  rlx_cc_entry *hit = NULL;
  pthread_mutex_lock(&cc_lock);
  for (uint32_t i = 0; i < cc_n && !hit; i++)
    if (key_eq(&cc_table[i]->key, key)) hit = cc_table[i];
  if (hit) {
    hit->refs++;
    hit->used = ++cc_tick;
    cc_hits++;
  } else
    cc_misses++;
  pthread_mutex_unlock(&cc_lock);
  return hit;
}

/* Memory a graph holds: its nodes and the data of its Constants, bodies included. */
static size_t graph_bytes(const rlx_graph *g, unsigned depth) {
  size_t b = (size_t)rlx_graph_node_count(g) * sizeof(rlx_node);
  for (rlx_id i = 0; i < rlx_graph_node_count(g) && depth < 64; i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    size_t nb = 0;
    if (n->op == RLX_OP_Constant && rlx_shape_nbytes(&n->shape, &nb) == RLX_OK) b += nb;
    const rlx_graph *bodies[8];
    uint32_t nbod = rlx_node_bodies(n, bodies, 8);
    for (uint32_t k = 0; k < nbod && k < 8; k++) b += graph_bytes(bodies[k], depth + 1);
  }
  return b;
}

rlx_cc_entry *rlx_cc_insert(const rlx_cc_key *key, rlx_graph *graph, const rlx_dispatch_report *report) {
  long max_entries = env_long("RLX_COMPILE_CACHE_ENTRIES", 16, 1, CC_MAX_ENTRIES);
  long max_nodes = env_long("RLX_COMPILE_CACHE_NODES", 4000000, 1, 1L << 40);
  size_t max_bytes = (size_t)env_long("RLX_COMPILE_CACHE_MB", 1024, 1, 1L << 24) << 20;
  uint32_t nodes = rlx_graph_node_count(graph);
  size_t bytes = graph_bytes(graph, 0);
  if ((long)nodes > max_nodes || bytes > max_bytes) return NULL;
  rlx_cc_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->key = *key;
  e->graph = graph;
  e->report = *report;
  e->bytes = bytes;
  e->refs = 2; /* the table's and the caller's */
  e->in_table = true;
  pthread_mutex_lock(&cc_lock);
  for (uint32_t i = 0; i < cc_n; i++)
    if (key_eq(&cc_table[i]->key, key)) {
      pthread_mutex_unlock(&cc_lock);
      free(e);
      return NULL;
    }
  /* evict the least recently used until the new one fits */
  for (;;) {
    long total = nodes;
    size_t total_bytes = bytes;
    for (uint32_t i = 0; i < cc_n; i++) {
      total += rlx_graph_node_count(cc_table[i]->graph);
      total_bytes += cc_table[i]->bytes;
    }
    if (cc_n == 0 || ((long)cc_n < max_entries && total <= max_nodes && total_bytes <= max_bytes)) break;
    uint32_t old = 0;
    for (uint32_t i = 1; i < cc_n; i++)
      if (cc_table[i]->used < cc_table[old]->used) old = i;
    remove_at_locked(old);
  }
  e->used = ++cc_tick;
  cc_table[cc_n++] = e;
  pthread_mutex_unlock(&cc_lock);
  return e;
}

rlx_graph *rlx_cc_graph(const rlx_cc_entry *e) { return e->graph; }
const rlx_dispatch_report *rlx_cc_report(const rlx_cc_entry *e) { return &e->report; }

rlx_plan *rlx_cc_plan_get(rlx_cc_entry *e, const rlx_allocator *al) {
  pthread_mutex_lock(&cc_lock);
  const rlx_plan *p = e->plan;
  pthread_mutex_unlock(&cc_lock); /* once set, a plan is never changed or freed while e is held */
  rlx_plan *c = NULL;
  if (p && rlx_plan_clone(p, al, &c) != RLX_OK) return NULL;
  return c;
}

void rlx_cc_plan_put(rlx_cc_entry *e, const rlx_plan *p) {
  pthread_mutex_lock(&cc_lock);
  bool has = e->plan != NULL;
  pthread_mutex_unlock(&cc_lock);
  if (has) return;
  rlx_plan *c = NULL;
  if (rlx_plan_clone(p, NULL, &c) != RLX_OK) return; /* best effort */
  pthread_mutex_lock(&cc_lock);
  if (!e->plan) {
    e->plan = c;
    c = NULL;
  }
  pthread_mutex_unlock(&cc_lock);
  rlx_plan_free(c, NULL);
}

void rlx_cc_release(rlx_cc_entry *e) {
  if (!e) return;
  pthread_mutex_lock(&cc_lock);
  unref_locked(e);
  pthread_mutex_unlock(&cc_lock);
}

void rlx_compile_cache_clear(void) {
  pthread_mutex_lock(&cc_lock);
  while (cc_n) remove_at_locked(cc_n - 1);
  pthread_mutex_unlock(&cc_lock);
}

void rlx_compile_cache_stats(rlx_compile_cache_stats_t *out) {
  if (!out) return;
  pthread_mutex_lock(&cc_lock);
  out->hits = cc_hits;
  out->misses = cc_misses;
  out->entries = cc_n;
  pthread_mutex_unlock(&cc_lock);
}
