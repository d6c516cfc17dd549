/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* References for the memory planner's quality (header-only; used by tests/unit/test_plan.c and
 * bench/bench_compile.c):
 *   - plan_ref_greedy_arena: the planner this project had before the O(n log n) one — slots by
 *     size, largest first, each at the lowest 64-aligned offset where it collides with no placed
 *     slot live at the same time (O(n^2 log n)) — over the lifetimes of a given plan;
 *   - plan_ref_lower_bound: the most bytes live at one step (no placement can do better). */
#ifndef RLX_PLAN_GREEDY_REF_H
#define RLX_PLAN_GREEDY_REF_H

#include <stdlib.h>

#include "rlx/plan.h"

typedef struct plan_ref_key {
  size_t size;
  rlx_id id;
} plan_ref_key;

static int plan_ref_by_size(const void *pa, const void *pb) {
  const plan_ref_key *a = pa, *b = pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

typedef struct plan_ref_span {
  size_t off, end;
} plan_ref_span;

static int plan_ref_by_off(const void *pa, const void *pb) {
  const plan_ref_span *a = pa, *b = pb;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

static size_t plan_ref_align(size_t v) { return (v + 63) & ~(size_t)63; }

/* Arena bytes of greedy-by-size placement over p's roots and lifetimes; 0 on OOM. */
static size_t plan_ref_greedy_arena(const rlx_plan *p) {
  uint32_t n = p->n_nodes, nk = 0;
  plan_ref_key *keys = malloc((n ? n : 1) * sizeof *keys);
  plan_ref_span *live = malloc((n ? n : 1) * sizeof *live);
  size_t *off = calloc(n ? n : 1, sizeof *off), arena = 0;
  if (!keys || !live || !off) {
    free(keys), free(live), free(off);
    return 0;
  }
  for (rlx_id i = 0; i < n; i++)
    if (p->root[i] == i && p->size[i] > 0) keys[nk++] = (plan_ref_key){p->size[i], i};
  qsort(keys, nk, sizeof *keys, plan_ref_by_size);
  for (uint32_t k = 0; k < nk; k++) {
    rlx_id id = keys[k].id;
    size_t size = keys[k].size, cand = 0;
    uint32_t nl = 0;
    for (uint32_t j = 0; j < k; j++) {
      rlx_id o = keys[j].id;
      if (p->first_use[o] <= p->last_use[id] && p->first_use[id] <= p->last_use[o])
        live[nl++] = (plan_ref_span){off[o], off[o] + p->size[o]};
    }
    qsort(live, nl, sizeof *live, plan_ref_by_off);
    for (uint32_t j = 0; j < nl; j++) {
      if (live[j].end <= cand) continue;
      if (live[j].off >= cand + size) break;
      cand = plan_ref_align(live[j].end);
    }
    off[id] = cand;
    if (cand + size > arena) arena = cand + size;
  }
  free(keys), free(live), free(off);
  return plan_ref_align(arena);
}

/* The largest sum of (64-aligned) root sizes live at one step of p. */
static size_t plan_ref_lower_bound(const rlx_plan *p) {
  uint32_t n = p->n_nodes;
  long long *delta = calloc((size_t)n + 2, sizeof *delta);
  if (!delta) return 0;
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] != i || p->size[i] == 0) continue;
    delta[p->first_use[i]] += (long long)plan_ref_align(p->size[i]);
    delta[p->last_use[i] + 1] -= (long long)plan_ref_align(p->size[i]);
  }
  long long cur = 0, best = 0;
  for (uint32_t t = 0; t <= n; t++) {
    cur += delta[t];
    if (cur > best) best = cur;
  }
  free(delta);
  return (size_t)best;
}

#endif
