/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The compile cache (compile_cache.c, docs/compile.md): process-wide, bounded, thread-safe. An
 * entry holds what the pipeline derives from a graph alone — the legalized and simplified graph,
 * its dispatch report and the memory plan of its single segment — keyed by the graph's
 * structural hash, the backend, the compile options that shape the result (fold, CSE, DCE, plan
 * check, RNG seed, the backend options) and whether inputs are bound by position. Executables
 * share the entry's graph read-only (holding a reference) and copy its plan; everything with
 * state (buffers, params, the backend's executable) stays per executable. */
#ifndef RLX_COMPILE_CACHE_H
#define RLX_COMPILE_CACHE_H

#include "rlx/backend.h"
#include "rlx/plan.h"
#include "rlx/session.h"

typedef struct rlx_cc_key {
  uint64_t graph[2]; /* rlx_graph_hash */
  uint64_t opts;     /* options, backend name and options, positional */
  const rlx_backend *backend;
} rlx_cc_key;

typedef struct rlx_cc_entry rlx_cc_entry;

/* Is the cache on for this compile (the option, RLX_COMPILE_CACHE=0, a graph with the default
 * allocator: cached graphs must not outlive a caller's allocator) and, if so, its key. Backend
 * options of a backend whose options struct this file does not know make the compile uncached. */
bool rlx_cc_key_make(const rlx_graph *g, const rlx_backend *be, const rlx_compile_options *opt, bool positional,
                     rlx_cc_key *key);
/* A held reference to the entry for key, or NULL (a miss). */
rlx_cc_entry *rlx_cc_lookup(const rlx_cc_key *key);
/* Adds an entry that takes `graph` (the compiled graph, default allocator) and returns it held
 * for the caller; NULL when the key is there already (another thread) or out of memory — the
 * caller then keeps its graph. */
rlx_cc_entry *rlx_cc_insert(const rlx_cc_key *key, rlx_graph *graph, const rlx_dispatch_report *report);
rlx_graph *rlx_cc_graph(const rlx_cc_entry *e);
const rlx_dispatch_report *rlx_cc_report(const rlx_cc_entry *e);
/* A copy (allocator al) of the entry's plan, or NULL when it has none yet (or on OOM). */
rlx_plan *rlx_cc_plan_get(rlx_cc_entry *e, const rlx_allocator *al);
/* Stores a copy of plan p in the entry unless it has one. */
void rlx_cc_plan_put(rlx_cc_entry *e, const rlx_plan *p);
void rlx_cc_release(rlx_cc_entry *e);

#endif
