/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The memory planner (spec pipeline §3): one arena per executable.
 *
 *  1. Views (Reshape, same-dtype Cast, Narrow whose window is contiguous) get no slot of their own:
 *     they alias the slot of their root at a byte offset.
 *  2. Liveness over the schedule (the graph's own order): a slot is live from the step that
 *     produces its root to the last step that reads the root or any view of it. Inputs, params and
 *     constants live for the whole run (they persist across runs); the roots of graph outputs live
 *     to the end.
 *  3. Placement in O(n log n): leaves are packed into a prefix; the other slots are placed by a
 *     sweep over the schedule with best fit over the free gaps (64-byte aligned), freeing a slot
 *     after its last read. Intervals are inclusive, so a node's output never shares bytes with
 *     any of its operands (whose lifetimes reach the step that produces it). */
#include "rlx/plan.h"

#include <stdlib.h>
#include <string.h>

#define PLAN_ALIGN 64u

static void *al_alloc(const rlx_allocator *al, size_t n) { return al->alloc(al->ctx, n ? n : 1); }

/* Allocates n elements of `elem` bytes with an overflow check. */
static void *al_array(const rlx_allocator *al, size_t n, size_t elem) {
  size_t bytes;
  if (!rlx_mul_size(n, elem, &bytes)) return NULL;
  return al_alloc(al, bytes);
}

bool rlx_plan_is_view(const rlx_graph *g, rlx_id id, size_t *byte_offset) {
  const rlx_node *n = rlx_graph_node(g, id);
  if (!n || n->n_inputs != 1) return false;
  const rlx_node *x = rlx_graph_node(g, n->inputs[0]);
  if (!x || !rlx_shape_is_static(&n->shape) || !rlx_shape_is_static(&x->shape)) return false;
  if (n->shape.dtype != x->shape.dtype) return false;
  size_t nb, xb;
  if (rlx_shape_nbytes(&n->shape, &nb) != RLX_OK || rlx_shape_nbytes(&x->shape, &xb) != RLX_OK) return false;
  switch (n->op) {
  case RLX_OP_Reshape:
  case RLX_OP_Cast:
    if (nb != xb) return false;
    if (byte_offset) *byte_offset = 0;
    return true;
  case RLX_OP_Narrow: {
    const rlx_attrs_Narrow *a = &n->attrs.Narrow;
    if (a->axis < 0 || a->axis >= (int64_t)x->shape.rank || a->start < 0 || a->len < 0) return false;
    uint32_t axis = (uint32_t)a->axis;
    if (a->start > x->shape.dims[axis] || a->len > x->shape.dims[axis] - a->start) return false;
    /* The window is contiguous only when every axis before `axis` has extent 1. */
    for (uint32_t i = 0; i < axis; i++)
      if (x->shape.dims[i] != 1) return false;
    size_t inner = rlx_dtype_size((rlx_dtype)x->shape.dtype), off;
    for (uint32_t i = axis + 1; i < x->shape.rank; i++)
      if (!rlx_mul_size(inner, (size_t)x->shape.dims[i], &inner)) return false;
    if (!rlx_mul_size(inner, (size_t)a->start, &off) || off > xb || nb > xb - off) return false;
    if (byte_offset) *byte_offset = off;
    return true;
  }
  default: return false;
  }
}

void rlx_plan_free(rlx_plan *p, const rlx_allocator *al) {
  if (!p) return;
  if (!al) al = rlx_default_allocator();
  al->free(al->ctx, p->offset);
  al->free(al->ctx, p->size);
  al->free(al->ctx, p->root);
  al->free(al->ctx, p->first_use);
  al->free(al->ctx, p->last_use);
  al->free(al->ctx, p->schedule);
  al->free(al->ctx, p);
}

rlx_status rlx_plan_clone(const rlx_plan *p, const rlx_allocator *al, rlx_plan **out) {
  if (!p || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_plan_clone: plan and out must not be NULL");
  *out = NULL;
  if (!al) al = rlx_default_allocator();
  rlx_plan *c = al_alloc(al, sizeof *c);
  if (!c) return rlx_errorf(RLX_ERR_OOM, "memory plan: out of memory copying a plan");
  *c = *p;
  c->offset = c->size = NULL;
  c->root = c->schedule = NULL;
  c->first_use = c->last_use = NULL;
  size_t n = p->n_nodes, ns = p->n_schedule;
  c->offset = al_array(al, n, sizeof *c->offset);
  c->size = al_array(al, n, sizeof *c->size);
  c->root = al_array(al, n, sizeof *c->root);
  c->first_use = al_array(al, n, sizeof *c->first_use);
  c->last_use = al_array(al, n, sizeof *c->last_use);
  c->schedule = al_array(al, ns, sizeof *c->schedule);
  if (!c->offset || !c->size || !c->root || !c->first_use || !c->last_use || !c->schedule) {
    rlx_plan_free(c, al);
    return rlx_errorf(RLX_ERR_OOM, "memory plan: out of memory copying a plan of %zu nodes", n);
  }
  if (n) {
    memcpy(c->offset, p->offset, n * sizeof *c->offset);
    memcpy(c->size, p->size, n * sizeof *c->size);
    memcpy(c->root, p->root, n * sizeof *c->root);
    memcpy(c->first_use, p->first_use, n * sizeof *c->first_use);
    memcpy(c->last_use, p->last_use, n * sizeof *c->last_use);
  }
  if (ns) memcpy(c->schedule, p->schedule, ns * sizeof *c->schedule);
  *out = c;
  return RLX_OK;
}

static size_t align_up(size_t v, size_t a, bool *ok) {
  size_t r;
  if (!rlx_add_size(v, a - 1, &r)) {
    *ok = false;
    return 0;
  }
  return r & ~(a - 1);
}

/* ---- the free structure: gaps of the arena, in two treaps ----
 * A treap (randomized balanced search tree) keyed by a pair (a, b), compared lexicographically.
 * The planner keeps every free gap below the top of the arena in two of them: by (offset, 0), to
 * find the neighbours a freed block coalesces with, and by (size, offset), for best fit. Nodes
 * live in one pool with a free list; every operation is O(log n) expected. */
typedef struct tnode {
  size_t a, b, val;
  uint32_t prio, left, right;
} tnode;

#define TNIL UINT32_MAX

typedef struct treap {
  tnode *pool;
  uint32_t free_head, root;
  uint32_t rng;
} treap;

static bool key_less(size_t a1, size_t b1, size_t a2, size_t b2) { return a1 < a2 || (a1 == a2 && b1 < b2); }

/* Splits t into (keys < (a, b)) and (keys >= (a, b)). */
static void tr_split(tnode *P, uint32_t t, size_t a, size_t b, uint32_t *l, uint32_t *r) {
  uint32_t *lo = l, *hi = r;
  while (t != TNIL) {
    if (key_less(P[t].a, P[t].b, a, b)) {
      *lo = t;
      lo = &P[t].right;
      t = P[t].right;
    } else {
      *hi = t;
      hi = &P[t].left;
      t = P[t].left;
    }
  }
  *lo = TNIL;
  *hi = TNIL;
}

/* Merges l and r, every key of l below every key of r. */
static uint32_t tr_merge(tnode *P, uint32_t l, uint32_t r) {
  uint32_t root = TNIL, *at = &root;
  while (l != TNIL && r != TNIL) {
    if (P[l].prio > P[r].prio) {
      *at = l;
      at = &P[l].right;
      l = P[l].right;
    } else {
      *at = r;
      at = &P[r].left;
      r = P[r].left;
    }
  }
  *at = l != TNIL ? l : r;
  return root;
}

static void tr_insert(treap *t, size_t a, size_t b, size_t val) {
  uint32_t k = t->free_head;
  t->free_head = t->pool[k].right;
  t->rng = t->rng * 1664525u + 1013904223u;
  t->pool[k] = (tnode){.a = a, .b = b, .val = val, .prio = t->rng, .left = TNIL, .right = TNIL};
  uint32_t l, r;
  tr_split(t->pool, t->root, a, b, &l, &r);
  t->root = tr_merge(t->pool, tr_merge(t->pool, l, k), r);
}

/* Removes the node with key exactly (a, b), which must exist: it is the minimum of the part
 * >= (a, b), and a minimum is replaced by its right subtree (whose priorities are lower). */
static void tr_erase(treap *t, size_t a, size_t b) {
  tnode *P = t->pool;
  uint32_t l, m;
  tr_split(P, t->root, a, b, &l, &m);
  uint32_t *at = &m;
  while (P[*at].left != TNIL) at = &P[*at].left;
  uint32_t k = *at;
  *at = P[k].right;
  P[k].right = t->free_head;
  t->free_head = k;
  t->root = tr_merge(P, l, m);
}

/* The node with the smallest key >= (a, b), or TNIL. */
static uint32_t tr_lower_bound(const treap *t, size_t a, size_t b) {
  uint32_t best = TNIL, k = t->root;
  while (k != TNIL) {
    if (key_less(t->pool[k].a, t->pool[k].b, a, b))
      k = t->pool[k].right;
    else {
      best = k;
      k = t->pool[k].left;
    }
  }
  return best;
}

/* The node with the largest key < (a, b), or TNIL. */
static uint32_t tr_before(const treap *t, size_t a, size_t b) {
  uint32_t best = TNIL, k = t->root;
  while (k != TNIL) {
    if (key_less(t->pool[k].a, t->pool[k].b, a, b)) {
      best = k;
      k = t->pool[k].right;
    } else
      k = t->pool[k].left;
  }
  return best;
}

static void tr_init(treap *t, tnode *pool, uint32_t cap, uint32_t seed) {
  t->pool = pool;
  t->root = TNIL;
  t->rng = seed;
  for (uint32_t i = 0; i < cap; i++) pool[i].right = i + 1 < cap ? i + 1 : TNIL;
  t->free_head = cap ? 0 : TNIL;
}

/* The arena above the persistent prefix: [base, top) holds live blocks and free gaps (a gap never
 * touches top: freeing the highest block lowers top instead). */
typedef struct arena_state {
  treap by_off, by_size;
  size_t top, peak;
} arena_state;

static void gap_add(arena_state *s, size_t off, size_t size) {
  tr_insert(&s->by_off, off, 0, size);
  tr_insert(&s->by_size, size, off, 0);
}

static void gap_remove(arena_state *s, size_t off, size_t size) {
  tr_erase(&s->by_off, off, 0);
  tr_erase(&s->by_size, size, off);
}

/* Best fit: the smallest gap that holds `size` (lowest offset among equals), else the top. */
static bool arena_take(arena_state *s, size_t size, size_t *off) {
  uint32_t k = tr_lower_bound(&s->by_size, size, 0);
  if (k != TNIL) {
    size_t gsize = s->by_size.pool[k].a, goff = s->by_size.pool[k].b;
    gap_remove(s, goff, gsize);
    if (gsize > size) gap_add(s, goff + size, gsize - size);
    *off = goff;
    return true;
  }
  size_t end;
  if (!rlx_add_size(s->top, size, &end)) return false;
  *off = s->top;
  s->top = end;
  if (end > s->peak) s->peak = end;
  return true;
}

/* Returns [off, off + size) to the free gaps, merged with the gaps on either side. */
static void arena_give(arena_state *s, size_t off, size_t size) {
  uint32_t k = tr_before(&s->by_off, off, 0);
  if (k != TNIL && s->by_off.pool[k].a + s->by_off.pool[k].val == off) {
    size_t poff = s->by_off.pool[k].a, psize = s->by_off.pool[k].val;
    gap_remove(s, poff, psize);
    off = poff;
    size += psize;
  }
  k = tr_lower_bound(&s->by_off, off + size, 0);
  if (k != TNIL && s->by_off.pool[k].a == off + size) {
    size_t nsize = s->by_off.pool[k].val;
    gap_remove(s, off + size, nsize);
    size += nsize;
  }
  if (off + size == s->top)
    s->top = off;
  else
    gap_add(s, off, size);
}

/* ---- greedy by size, when the graph is small enough for it ----
 * Slots by size (largest first), each at the lowest aligned offset >= base where it meets no
 * placed slot live at the same time. It packs closer to the lower bound than the sweep (which
 * cannot see the future), but costs O(P log P) for P pairs of slots live at the same time, which
 * grows quadratically with the depth of a training graph; so it runs only while P is at most
 * the budget — PLAN_GREEDY_PAIRS, or RLX_PLAN_GREEDY_PAIRS from the environment (0 = sweep only;
 * the tests use it to check the sweep on its own) — and the planner keeps whichever of the two
 * arenas is smaller. */
#define PLAN_GREEDY_PAIRS (1u << 16)

static uint64_t greedy_budget(void) {
  const char *e = getenv("RLX_PLAN_GREEDY_PAIRS");
  if (!e || !*e) return PLAN_GREEDY_PAIRS;
  char *end;
  unsigned long long v = strtoull(e, &end, 10);
  return *end ? PLAN_GREEDY_PAIRS : (v > (1ull << 28) ? (1ull << 28) : v);
}

typedef struct span {
  size_t off, end;
} span;

/* Sorts spans by offset (quicksort with the comparisons inline, insertion sort below 16): the
 * greedy's inner loop, several times faster than qsort's callback. */
static void sort_spans(span *a, uint32_t n) {
  while (n > 16) {
    size_t m = a[n / 2].off, x = a[0].off, z = a[n - 1].off; /* median of three */
    size_t piv = x < m ? (m < z ? m : (x < z ? z : x)) : (x < z ? x : (m < z ? z : m));
    /* three-way partition: [0, lt) < piv, [lt, gt) == piv (never empty), [gt, n) > piv */
    uint32_t lt = 0, i = 0, gt = n;
    while (i < gt) {
      if (a[i].off < piv) {
        span t = a[i];
        a[i++] = a[lt];
        a[lt++] = t;
      } else if (a[i].off > piv) {
        span t = a[i];
        a[i] = a[--gt];
        a[gt] = t;
      } else
        i++;
    }
    /* recurse into the smaller side, loop on the larger */
    if (lt < n - gt) {
      sort_spans(a, lt);
      a += gt;
      n -= gt;
    } else {
      sort_spans(a + gt, n - gt);
      n = lt;
    }
  }
  for (uint32_t i = 1; i < n; i++) {
    span t = a[i];
    uint32_t j = i;
    while (j > 0 && a[j - 1].off > t.off) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = t;
  }
}

typedef struct size_key {
  size_t size;
  rlx_id id;
} size_key;

static int key_by_size(const void *pa, const void *pb) {
  const size_key *a = pa, *b = pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* `t` lists the transient slots in schedule order (first_use ascending), `asz` their aligned
 * sizes. On success writes off[t[k]] for each and *top (the end of the highest) and returns true;
 * false when over budget or out of memory (nothing written). */
static bool greedy_by_size(const rlx_plan *p, const rlx_allocator *al, const rlx_id *t, uint32_t nt, const size_t *asz,
                           size_t base, size_t *off, size_t *top) {
  uint64_t budget = greedy_budget();
  if (nt < 2 || budget == 0) return false;
  /* Pairs live at the same time: a sweep in schedule order over an active set. */
  uint32_t *active = al_array(al, nt, sizeof *active), *deg = al_array(al, nt, sizeof *deg);
  uint32_t *adj = NULL, *fill = NULL;
  size_key *keys = NULL;
  span *sp = NULL;
  bool *placed = NULL, ok = false;
  if (!active || !deg) goto out;
  /* t is in birth order. At each birth every slot of the active set is either dead (dropped:
   * once per slot) or live (one pair), so a pass costs O(nt + pairs) and stops at the budget.
   * Pass 0 counts each slot's pairs, pass 1 fills the lists (deg[k] .. fill[k]). */
  uint64_t pairs = 0;
  uint32_t na = 0;
  memset(deg, 0, (size_t)nt * sizeof *deg);
  for (int pass = 0; pass < 2; pass++) {
    na = 0;
    for (uint32_t k = 0; k < nt; k++) {
      uint32_t born = p->first_use[t[k]];
      for (uint32_t j = 0; j < na;) { /* every active slot is visited: that is one pair each */
        uint32_t o = active[j];
        if (p->last_use[t[o]] < born) {
          active[j] = active[--na];
          continue;
        }
        if (pass == 0) {
          if (++pairs > budget) goto out;
          deg[o]++, deg[k]++;
        } else {
          adj[fill[o]++] = k;
          adj[fill[k]++] = o;
        }
        j++;
      }
      active[na++] = k;
    }
    if (pass == 0) {
      adj = al_array(al, 2 * pairs + 1, sizeof *adj);
      fill = al_array(al, nt, sizeof *fill);
      if (!adj || !fill) goto out;
      uint32_t acc = 0;
      for (uint32_t k = 0; k < nt; k++) {
        fill[k] = acc;
        acc += deg[k];
        deg[k] = fill[k]; /* from now on: the start of k's list */
      }
    }
  }
  keys = al_array(al, nt, sizeof *keys);
  sp = al_array(al, nt, sizeof *sp);
  placed = al_array(al, nt, sizeof *placed);
  if (!keys || !sp || !placed) goto out;
  for (uint32_t k = 0; k < nt; k++) {
    keys[k] = (size_key){asz[k], k};
    placed[k] = false;
  }
  qsort(keys, nt, sizeof *keys, key_by_size);
  size_t hi = base;
  for (uint32_t q = 0; q < nt; q++) {
    uint32_t k = keys[q].id, ns = 0;
    for (uint32_t j = deg[k]; j < fill[k]; j++) {
      uint32_t o = adj[j];
      if (placed[o]) sp[ns++] = (span){off[t[o]], off[t[o]] + asz[o]};
    }
    sort_spans(sp, ns);
    size_t cand = base;
    for (uint32_t j = 0; j < ns; j++) {
      if (sp[j].end <= cand) continue;
      if (sp[j].off >= cand + asz[k]) break;
      cand = sp[j].end; /* ends are aligned: sizes were rounded up */
    }
    off[t[k]] = cand;
    placed[k] = true;
    if (cand + asz[k] > hi) hi = cand + asz[k];
  }
  *top = hi;
  ok = true;
out:
  al->free(al->ctx, active);
  al->free(al->ctx, deg);
  al->free(al->ctx, adj);
  al->free(al->ctx, fill);
  al->free(al->ctx, keys);
  al->free(al->ctx, sp);
  al->free(al->ctx, placed);
  return ok;
}

static bool is_leaf(rlx_op op) { return rlx_op_has(op, RLX_PROP_LEAF); }

rlx_status rlx_plan_memory(const rlx_graph *g, const rlx_allocator *al, rlx_plan **out) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_plan_memory: graph and out must not be NULL");
  *out = NULL;
  if (!al) al = rlx_default_allocator();
  uint32_t n = rlx_graph_node_count(g);

  /* Every tensor needs a static shape and a size that fits. */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    if (!rlx_shape_is_static(&nd->shape)) {
      char buf[96];
      rlx_shape_format(&nd->shape, buf, sizeof buf);
      return rlx_errorf(RLX_ERR_SHAPE,
                        "memory plan: node %%%u (%s%s%s) has the dynamic shape %s; bind every symbolic "
                        "dimension before compiling",
                        i, rlx_op_name(nd->op), nd->name ? " " : "", nd->name ? nd->name : "", buf);
    }
  }

  rlx_plan *p = al_alloc(al, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "memory plan: out of memory");
  memset(p, 0, sizeof *p);
  p->alignment = PLAN_ALIGN;
  p->n_nodes = n;
  p->n_schedule = n;
  p->offset = al_array(al, n, sizeof *p->offset);
  p->size = al_array(al, n, sizeof *p->size);
  p->root = al_array(al, n, sizeof *p->root);
  p->first_use = al_array(al, n, sizeof *p->first_use);
  p->last_use = al_array(al, n, sizeof *p->last_use);
  p->schedule = al_array(al, n, sizeof *p->schedule);
  /* Work arrays: the last-step buckets and the gap trees' node pool (at most one gap per slot
   * plus one, per tree). */
  rlx_id *head = al_array(al, (size_t)n + 1, sizeof *head), *inplace = NULL;
  uint32_t *own_last = NULL;
  rlx_id *next = al_array(al, n, sizeof *next);
  tnode *pool = al_array(al, 2 * ((size_t)n + 2), sizeof *pool);
  rlx_status st = RLX_OK;
  if (!p->offset || !p->size || !p->root || !p->first_use || !p->last_use || !p->schedule || !head || !next || !pool) {
    st = rlx_errorf(RLX_ERR_OOM, "memory plan: out of memory for %u nodes", n);
    goto done;
  }

  /* Schedule = graph order; sizes; view roots and offsets (relative to the root for now). */
  size_t *view_off = p->offset; /* reused: view byte offset into the root until placement */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    p->schedule[i] = i;
    if (rlx_shape_nbytes(&nd->shape, &p->size[i]) != RLX_OK) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: node %%%u (%s) is too large to address", i, rlx_op_name(nd->op));
      goto done;
    }
    size_t off = 0;
    if (rlx_plan_is_view(g, i, &off)) {
      rlx_id x = nd->inputs[0];
      p->root[i] = p->root[x];
      if (!rlx_add_size(view_off[x], off, &view_off[i])) {
        st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: view offset of node %%%u overflows", i);
        goto done;
      }
    } else {
      p->root[i] = i;
      view_off[i] = 0;
    }
    p->first_use[i] = is_leaf(nd->op) ? 0 : i;
    p->last_use[i] = is_leaf(nd->op) ? n : i;
  }

  /* Liveness: a read of a node (or of a view of it) at step s keeps its root alive to s. */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id x = nd->inputs[k];
      if (p->last_use[x] < i) p->last_use[x] = i;
      rlx_id r = p->root[x];
      if (p->last_use[r] < i) p->last_use[r] = i;
    }
  }
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t k = 0; k < rlx_graph_output_count(g); k++) {
    p->last_use[outs[k]] = n;
    p->last_use[p->root[outs[k]]] = n;
  }

  /* In place: an Activation whose operand is a transient root of its size that no later step
   * reads (nor the graph's outputs) writes over the operand's bytes (elementwise: every element is
   * read before it is written; rlx_plan_check accepts exactly this overlap). The pair is placed as
   * one slot, the operand's (the base of a chain of such activations), live to the last read of
   * the chain; last_use keeps each tensor's own last read. */
  inplace = al_array(al, n, sizeof *inplace);
  own_last = al_array(al, n, sizeof *own_last);
  if (!inplace || !own_last) {
    st = rlx_errorf(RLX_ERR_OOM, "memory plan: out of memory for %u nodes", n);
    goto done;
  }
  for (rlx_id i = 0; i < n; i++) {
    inplace[i] = RLX_NO_ID;
    own_last[i] = p->last_use[i];
  }
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    if (nd->op != RLX_OP_Activation || nd->n_inputs != 1 || p->root[i] != i || p->size[i] == 0) continue;
    rlx_id x = nd->inputs[0];
    if (p->root[x] != x || is_leaf(rlx_graph_node(g, x)->op) || p->size[x] != p->size[i] || own_last[x] != i) continue;
    rlx_id b = inplace[x] != RLX_NO_ID ? inplace[x] : x;
    inplace[i] = b;
    if (p->last_use[b] < p->last_use[i]) p->last_use[b] = p->last_use[i]; /* placement only: restored */
  }

  /* Placement (O(n log n)): the persistent slots (leaves, live for the whole run) are packed
   * into a prefix in node order; the others are placed by a sweep over the schedule: before step
   * t, every slot whose last read was step t-1 returns to the free gaps; then the slot produced at
   * step t takes the best-fitting gap (or the top of the arena). Lifetimes are inclusive, so a
   * node's output never takes the bytes of an operand it reads. */
  bool ok = true;
  size_t prefix = 0;
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] != i) continue;
    if (!rlx_add_size(p->tensor_bytes, p->size[i], &p->tensor_bytes)) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: total tensor size overflows");
      goto done;
    }
    p->offset[i] = 0;
    if (!is_leaf(rlx_graph_node(g, i)->op) || p->size[i] == 0) continue;
    size_t sz = align_up(p->size[i], PLAN_ALIGN, &ok), end;
    if (!ok || !rlx_add_size(prefix, sz, &end)) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: arena size overflows");
      goto done;
    }
    p->offset[i] = prefix;
    prefix = end;
  }
  /* Bucket the transient roots by their last step (a counting sort: head[s] lists the roots last
   * read at step s, linked through next[]). */
  for (uint32_t s = 0; s <= n; s++) head[s] = RLX_NO_ID;
  for (rlx_id i = n; i-- > 0;) {
    if (p->root[i] != i || inplace[i] != RLX_NO_ID || p->size[i] == 0 || is_leaf(rlx_graph_node(g, i)->op)) continue;
    uint32_t s = p->last_use[i];
    next[i] = head[s];
    head[s] = i;
  }
  arena_state as = {.top = prefix, .peak = prefix};
  tr_init(&as.by_off, pool, n + 2, 0x2545f491u);
  tr_init(&as.by_size, pool + (n + 2), n + 2, 0x9e3779b9u);
  for (rlx_id t = 0; t < n; t++) {
    if (t > 0)
      for (rlx_id r = head[t - 1]; r != RLX_NO_ID; r = next[r])
        arena_give(&as, p->offset[r], align_up(p->size[r], PLAN_ALIGN, &ok));
    if (p->root[t] != t || inplace[t] != RLX_NO_ID || p->size[t] == 0 || is_leaf(rlx_graph_node(g, t)->op)) continue;
    size_t sz = align_up(p->size[t], PLAN_ALIGN, &ok);
    if (!ok || !arena_take(&as, sz, &p->offset[t])) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: arena size overflows");
      goto done;
    }
  }
  size_t arena = as.peak;
  /* The same sweep backwards in time (a plan is valid read either way): slots that live to the
   * end — a training graph's gradients — then come first and pack at the bottom instead of
   * piling up above the holes the freed activations leave. The smaller arena wins. */
  {
    size_t *roff = al_array(al, n, sizeof *roff);
    arena_state rs = {.top = prefix, .peak = prefix};
    bool rev_ok = roff != NULL;
    if (rev_ok) {
      tr_init(&rs.by_off, pool, n + 2, 0x2545f491u);
      tr_init(&rs.by_size, pool + (n + 2), n + 2, 0x9e3779b9u);
    }
    for (uint32_t t = n + 1; rev_ok && t-- > 0;) {
      rlx_id d = t + 1; /* a transient root first written at step t + 1 is dead before t */
      if (d < n && p->root[d] == d && inplace[d] == RLX_NO_ID && p->size[d] > 0 && !is_leaf(rlx_graph_node(g, d)->op))
        arena_give(&rs, roff[d], align_up(p->size[d], PLAN_ALIGN, &ok));
      for (rlx_id r = head[t]; r != RLX_NO_ID && rev_ok; r = next[r])
        rev_ok = arena_take(&rs, align_up(p->size[r], PLAN_ALIGN, &ok), &roff[r]);
    }
    if (rev_ok && ok && rs.peak < arena) {
      for (rlx_id i = 0; i < n; i++)
        if (p->root[i] == i && inplace[i] == RLX_NO_ID && p->size[i] > 0 && !is_leaf(rlx_graph_node(g, i)->op))
          p->offset[i] = roff[i];
      arena = rs.peak;
    }
    al->free(al->ctx, roff);
  }
  /* Greedy by size over the same slots, when affordable; the smaller arena wins. */
  {
    uint32_t nt = 0;
    for (rlx_id i = 0; i < n; i++)
      if (p->root[i] == i && inplace[i] == RLX_NO_ID && p->size[i] > 0 && !is_leaf(rlx_graph_node(g, i)->op))
        next[nt++] = i; /* birth order */
    size_t *asz = nt ? al_array(al, nt, sizeof *asz) : NULL, *goff = nt ? al_array(al, n, sizeof *goff) : NULL, top = 0;
    if (asz && goff) {
      for (uint32_t k = 0; k < nt; k++) asz[k] = align_up(p->size[next[k]], PLAN_ALIGN, &ok);
      if (ok && greedy_by_size(p, al, next, nt, asz, prefix, goff, &top) && top < arena) {
        for (uint32_t k = 0; k < nt; k++) p->offset[next[k]] = goff[next[k]];
        arena = top;
      }
    }
    al->free(al->ctx, asz);
    al->free(al->ctx, goff);
  }
  /* In-place activations take their base's bytes; every tensor gets its own last read back. */
  for (rlx_id i = 0; i < n; i++) {
    if (inplace[i] != RLX_NO_ID) p->offset[i] = p->offset[inplace[i]];
    p->last_use[i] = own_last[i];
  }
  /* Views: absolute offset = root offset + relative offset (roots precede their views). */
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] == i) continue;
    if (!rlx_add_size(p->offset[p->root[i]], view_off[i], &p->offset[i])) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: view offset of node %%%u overflows", i);
      goto done;
    }
  }
  p->arena_size = align_up(arena, PLAN_ALIGN, &ok);
  if (!ok) st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: arena size overflows");

done:
  al->free(al->ctx, inplace);
  al->free(al->ctx, own_last);
  al->free(al->ctx, head);
  al->free(al->ctx, next);
  al->free(al->ctx, pool);
  if (st != RLX_OK) {
    rlx_plan_free(p, al);
    return st;
  }
  *out = p;
  return RLX_OK;
}
