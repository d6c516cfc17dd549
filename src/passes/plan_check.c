/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Independent checker of a memory plan. It trusts only the plan's placement (offset, size, root,
 * schedule, arena size) and re-derives everything else from the graph: tensor sizes, which nodes
 * may alias, and the lifetimes (it never reads the planner's first_use/last_use). It then checks
 *   - the schedule: every node exactly once, operands before their consumers;
 *   - every slot: size matches the node's shape, aligned, inside the arena;
 *   - views: only aliasing ops alias, at the right offset inside their root;
 *   - no node's output shares bytes with any of its operands;
 *   - no two slots that are live at the same step share bytes (so nothing is read after being
 *     overwritten, and no graph output, input, param or constant is clobbered). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/plan.h"

static rlx_status plan_bad(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static rlx_status plan_bad(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_verrorf(RLX_ERR_VERIFY, fmt, ap);
  va_end(ap);
  return rlx_error_context(RLX_ERR_VERIFY, "memory plan rejected");
}

static bool ranges_overlap(size_t a_off, size_t a_size, size_t b_off, size_t b_size) {
  if (a_size == 0 || b_size == 0) return false;
  return a_off < b_off + b_size && b_off < a_off + a_size;
}

typedef struct slot {
  size_t off, end;
  rlx_id id;
} slot;

/* (key, index) pairs for the sorts of the sweep. */
typedef struct keyed {
  size_t key;
  uint32_t idx;
} keyed;

/* Sorts out[0..n) = (key[k], k) by key, keys in [0, max]: a counting sort (stable). */
static bool sort_by_step(const uint32_t *key, uint32_t n, uint32_t max, keyed *out) {
  uint32_t *cnt = calloc((size_t)max + 2, sizeof *cnt);
  if (!cnt) return false;
  for (uint32_t k = 0; k < n; k++) cnt[key[k] + 1]++;
  for (uint32_t v = 0; v <= max; v++) cnt[v + 1] += cnt[v];
  for (uint32_t k = 0; k < n; k++) out[cnt[key[k]]++] = (keyed){key[k], k};
  free(cnt);
  return true;
}

/* Sorts size_t values ascending: quicksort with a three-way partition, insertion sort below 16. */
static void sort_sizes(size_t *a, uint32_t n) {
  while (n > 16) {
    size_t m = a[n / 2], x = a[0], z = a[n - 1];
    size_t piv = x < m ? (m < z ? m : (x < z ? z : x)) : (x < z ? x : (m < z ? z : m));
    uint32_t lt = 0, i = 0, gt = n;
    while (i < gt) {
      if (a[i] < piv) {
        size_t t = a[i];
        a[i++] = a[lt];
        a[lt++] = t;
      } else if (a[i] > piv) {
        size_t t = a[i];
        a[i] = a[--gt];
        a[gt] = t;
      } else
        i++;
    }
    if (lt < n - gt) {
      sort_sizes(a, lt);
      a += gt;
      n -= gt;
    } else {
      sort_sizes(a + gt, n - gt);
      n = lt;
    }
  }
  for (uint32_t i = 1; i < n; i++) {
    size_t t = a[i];
    uint32_t j = i;
    while (j > 0 && a[j - 1] > t) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = t;
  }
}

/* A segment tree over the elementary address intervals [xs[i], xs[i+1]): how many live slots
 * cover each one, with range add and range max (the add of a node applies to its whole range,
 * so nothing is pushed down). */
typedef struct segtree {
  int32_t *mx, *add;
  uint32_t n; /* leaves: a power of two >= the elementary intervals */
} segtree;

static void seg_add(segtree *t, uint32_t node, uint32_t l, uint32_t r, uint32_t ql, uint32_t qr, int32_t v) {
  if (qr <= l || r <= ql) return;
  if (ql <= l && r <= qr) {
    t->add[node] += v;
    t->mx[node] += v;
    return;
  }
  uint32_t m = l + (r - l) / 2;
  seg_add(t, 2 * node, l, m, ql, qr, v);
  seg_add(t, 2 * node + 1, m, r, ql, qr, v);
  int32_t a = t->mx[2 * node], b = t->mx[2 * node + 1];
  t->mx[node] = t->add[node] + (a > b ? a : b);
}

static int32_t seg_max(const segtree *t, uint32_t node, uint32_t l, uint32_t r, uint32_t ql, uint32_t qr) {
  if (qr <= l || r <= ql) return INT32_MIN / 2;
  if (ql <= l && r <= qr) return t->mx[node];
  uint32_t m = l + (r - l) / 2;
  int32_t a = seg_max(t, 2 * node, l, m, ql, qr), b = seg_max(t, 2 * node + 1, m, r, ql, qr);
  return t->add[node] + (a > b ? a : b);
}

/* Index of v in the sorted, unique xs[0..n). */
static uint32_t coord(const size_t *xs, uint32_t n, size_t v) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t m = lo + (hi - lo) / 2;
    if (xs[m] < v)
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

static const char *node_label(const rlx_graph *g, rlx_id id, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, id);
  if (n->name)
    snprintf(buf, cap, "%%%u (%s '%s')", id, rlx_op_name(n->op), n->name);
  else
    snprintf(buf, cap, "%%%u (%s)", id, rlx_op_name(n->op));
  return buf;
}

/* The root whose bytes Activation i takes in place (rlx_plan_memory), or RLX_NO_ID: exactly its
 * operand's transient root's bytes, that root's last read being step i. */
static rlx_id inplace_base(const rlx_graph *g, const rlx_plan *p, rlx_id i, const uint32_t *step,
                           const uint32_t *death) {
  const rlx_node *nd = rlx_graph_node(g, i);
  if (nd->op != RLX_OP_Activation || nd->n_inputs != 1 || p->root[i] != i || p->size[i] == 0) return RLX_NO_ID;
  rlx_id r = p->root[nd->inputs[0]];
  if (r == i || rlx_op_has(rlx_graph_node(g, r)->op, RLX_PROP_LEAF) || p->offset[r] != p->offset[i] ||
      p->size[r] != p->size[i] || death[r] != step[i] || step[i] == 0)
    return RLX_NO_ID;
  return r;
}

static rlx_status check_structure(const rlx_graph *g, const rlx_plan *p, uint32_t *step) {
  uint32_t n = rlx_graph_node_count(g);
  char a[160];
  /* Schedule: a permutation of the nodes that respects operand order. */
  if (p->n_schedule != n)
    return plan_bad("the schedule has %u steps but the graph has %u nodes (every node must be scheduled once)",
                    p->n_schedule, n);
  for (uint32_t i = 0; i < n; i++) step[i] = UINT32_MAX;
  for (uint32_t s = 0; s < n; s++) {
    rlx_id id = p->schedule[s];
    if (id >= n) return plan_bad("schedule step %u names node %%%u, which does not exist", s, id);
    if (step[id] != UINT32_MAX) return plan_bad("node %%%u is scheduled twice (steps %u and %u)", id, step[id], s);
    step[id] = s;
  }
  for (uint32_t s = 0; s < n; s++) {
    rlx_id id = p->schedule[s];
    const rlx_node *nd = rlx_graph_node(g, id);
    for (uint32_t k = 0; k < nd->n_inputs; k++)
      if (step[nd->inputs[k]] >= s)
        return plan_bad("order violation: %s runs at step %u before its operand %u (%%%u, step %u)",
                        node_label(g, id, a, sizeof a), s, k, nd->inputs[k], step[nd->inputs[k]]);
  }

  /* Slots. */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    size_t want;
    if (rlx_shape_nbytes(&nd->shape, &want) != RLX_OK)
      return plan_bad("%s has no static size", node_label(g, i, a, sizeof a));
    if (p->size[i] != want)
      return plan_bad("%s has a slot of %zu bytes but its shape needs %zu", node_label(g, i, a, sizeof a), p->size[i],
                      want);
    rlx_id r = p->root[i];
    if (r >= n) return plan_bad("%s has root %%%u, which does not exist", node_label(g, i, a, sizeof a), r);
    if (r == i) {
      size_t end;
      if (p->offset[i] % p->alignment != 0)
        return plan_bad("misaligned slot: %s at offset %zu is not a multiple of %zu", node_label(g, i, a, sizeof a),
                        p->offset[i], p->alignment);
      if (!rlx_add_size(p->offset[i], p->size[i], &end) || end > p->arena_size)
        return plan_bad("slot out of arena: %s occupies [%zu, %zu + %zu) but the arena has %zu bytes",
                        node_label(g, i, a, sizeof a), p->offset[i], p->offset[i], p->size[i], p->arena_size);
      continue;
    }
    /* An alias: only views may alias, at their own offset inside their operand's root. */
    size_t voff;
    if (!rlx_plan_is_view(g, i, &voff))
      return plan_bad("%s aliases %%%u but is not a view (only Reshape, same-dtype Cast and contiguous "
                      "Narrow may alias)",
                      node_label(g, i, a, sizeof a), r);
    rlx_id x = nd->inputs[0];
    if (p->root[x] != r || (p->root[r] != r))
      return plan_bad("view %s has root %%%u but its operand %%%u lives in %%%u", node_label(g, i, a, sizeof a), r, x,
                      p->root[x]);
    size_t want_off, end, root_end;
    if (!rlx_add_size(p->offset[x], voff, &want_off) || p->offset[i] != want_off)
      return plan_bad("view %s is at offset %zu but its window starts at %zu", node_label(g, i, a, sizeof a),
                      p->offset[i], p->offset[x] + voff);
    if (!rlx_add_size(p->offset[i], p->size[i], &end) || !rlx_add_size(p->offset[r], p->size[r], &root_end) ||
        p->offset[i] < p->offset[r] || end > root_end)
      return plan_bad("view %s reaches outside its root %%%u", node_label(g, i, a, sizeof a), r);
  }
  return RLX_OK;
}

rlx_status rlx_plan_check(const rlx_graph *g, const rlx_plan *p) {
  if (!g || !p) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_plan_check: graph and plan must not be NULL");
  uint32_t n = rlx_graph_node_count(g);
  if (p->n_nodes != n) return plan_bad("the plan covers %u nodes but the graph has %u", p->n_nodes, n);
  if (n > 0 && (!p->offset || !p->size || !p->root || !p->schedule))
    return plan_bad("the plan is missing its per-node arrays");
  if (p->alignment == 0 || (p->alignment & (p->alignment - 1)) != 0)
    return plan_bad("alignment %zu is not a power of two", p->alignment);

  size_t cnt = n ? n : 1;
  uint32_t *step = malloc(cnt * sizeof *step), *birth = malloc(cnt * sizeof *birth),
           *death = malloc(cnt * sizeof *death);
  bool *is_out = calloc(cnt, sizeof *is_out);
  slot *slots = malloc(cnt * sizeof *slots);
  rlx_status st = RLX_OK;
  char a[160], b[160];
  if (!step || !birth || !death || !is_out || !slots) {
    st = rlx_errorf(RLX_ERR_OOM, "memory plan check: out of memory");
    goto done;
  }
  st = check_structure(g, p, step);
  if (st != RLX_OK) goto done;

  /* Lifetimes from the graph: leaves persist across runs; outputs must survive to the end; any
   * read of a node or of a view of it keeps the root alive until that step. */
  const uint32_t end_step = n;
  for (rlx_id i = 0; i < n; i++) {
    bool leaf = rlx_op_has(rlx_graph_node(g, i)->op, RLX_PROP_LEAF);
    birth[i] = leaf ? 0 : step[i];
    death[i] = leaf ? end_step : step[i];
  }
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t k = 0; k < rlx_graph_output_count(g); k++) {
    rlx_id r = p->root[outs[k]];
    is_out[r] = true;
    death[r] = end_step;
  }
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id r = p->root[nd->inputs[k]];
      if (death[r] < step[i]) death[r] = step[i];
    }
    if (p->root[i] != i && death[p->root[i]] < step[i]) death[p->root[i]] = step[i];
  }
  /* The one overlap allowed: an Activation over exactly the bytes of its operand's transient
   * root, which no later step reads (in place, rlx_plan_memory); that root is then dead before
   * the activation's step. Steps in node order, so a chain is seen from its base. */
  for (rlx_id i = 0; i < n; i++) {
    rlx_id r = inplace_base(g, p, i, step, death);
    if (r != RLX_NO_ID) death[r] = step[i] - 1;
  }

  /* A node's output never shares bytes with its operands (the in-place activation aside). */
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] != i) continue;
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id r = p->root[nd->inputs[k]];
      if (nd->op == RLX_OP_Activation && r != i && p->offset[r] == p->offset[i] && p->size[r] == p->size[i] &&
          death[r] + 1 == step[i])
        continue; /* in place (accepted above) */
      if (ranges_overlap(p->offset[i], p->size[i], p->offset[r], p->size[r])) {
        st = plan_bad("the output of %s overlaps its operand %u (slot of %s)", node_label(g, i, a, sizeof a), k,
                      node_label(g, r, b, sizeof b));
        goto done;
      }
    }
  }

  /* Slots live at the same time never share bytes. A sweep over the steps (O(n log n)): at step
   * t the slots born at t are checked against the slots live at t (a segment tree counts, per
   * address interval, the live slots covering it) and added; then the slots whose last step is t
   * leave. Only on a collision is the partner looked for, by a linear scan. */
  uint32_t ns = 0;
  for (rlx_id i = 0; i < n; i++)
    if (p->root[i] == i && p->size[i] > 0) slots[ns++] = (slot){p->offset[i], p->offset[i] + p->size[i], i};
  if (ns > 1) {
    size_t *xs = malloc(2 * (size_t)ns * sizeof *xs);
    keyed *births = malloc((size_t)ns * sizeof *births), *deaths = malloc((size_t)ns * sizeof *deaths);
    uint32_t nx = 0, cap = 1;
    segtree t = {0};
    if (xs) {
      for (uint32_t k = 0; k < ns; k++) {
        xs[nx++] = slots[k].off;
        xs[nx++] = slots[k].end;
      }
      sort_sizes(xs, nx);
      uint32_t u = 0;
      for (uint32_t k = 0; k < nx; k++)
        if (u == 0 || xs[k] != xs[u - 1]) xs[u++] = xs[k];
      nx = u;
      while (cap < nx - 1) cap *= 2; /* nx - 1 >= 1 elementary intervals: every slot has end > off */
      t.n = cap;                     /* a full tree over [0, cap): node k has children 2k, 2k + 1 */
      t.mx = calloc(2 * (size_t)cap, sizeof *t.mx);
      t.add = calloc(2 * (size_t)cap, sizeof *t.add);
    }
    uint32_t *kb = malloc((size_t)ns * sizeof *kb), *kd = malloc((size_t)ns * sizeof *kd);
    if (kb && kd)
      for (uint32_t k = 0; k < ns; k++) {
        kb[k] = birth[slots[k].id];
        kd[k] = death[slots[k].id];
      }
    bool sorted = kb && kd && births && deaths && sort_by_step(kb, ns, n, births) && sort_by_step(kd, ns, n, deaths);
    free(kb);
    free(kd);
    if (!xs || !sorted || !t.mx || !t.add) {
      st = rlx_errorf(RLX_ERR_OOM, "memory plan check: out of memory");
    } else {
      uint32_t bi = 0, di = 0;
      while (bi < ns && st == RLX_OK) {
        size_t now = births[bi].key;
        while (di < ns && deaths[di].key < now) { /* leave before the next births */
          const slot *sl = &slots[deaths[di++].idx];
          seg_add(&t, 1, 0, t.n, coord(xs, nx, sl->off), coord(xs, nx, sl->end), -1);
        }
        for (; bi < ns && births[bi].key == now && st == RLX_OK; bi++) {
          const slot *sl = &slots[births[bi].idx];
          uint32_t lo = coord(xs, nx, sl->off), hi = coord(xs, nx, sl->end);
          if (seg_max(&t, 1, 0, t.n, lo, hi) > 0) {
            /* Find the live slot it collides with (born no later, not yet dead). */
            rlx_id late = sl->id, early = RLX_NO_ID;
            for (uint32_t k = 0; k < ns && early == RLX_NO_ID; k++) {
              rlx_id v = slots[k].id;
              if (v != late && birth[v] <= birth[late] && death[v] >= birth[late] && slots[k].off < sl->end &&
                  sl->off < slots[k].end)
                early = v;
            }
            if (early == RLX_NO_ID) early = late; /* unreachable: the tree counted a live slot */
            if (is_out[early])
              st = plan_bad("graph output %s is clobbered by %s (same bytes, written at step %u)",
                            node_label(g, early, a, sizeof a), node_label(g, late, b, sizeof b), step[late]);
            else
              st = plan_bad("%s (live steps %u..%u) and %s (live steps %u..%u) share arena bytes",
                            node_label(g, early, a, sizeof a), birth[early], death[early],
                            node_label(g, late, b, sizeof b), birth[late], death[late]);
            break;
          }
          seg_add(&t, 1, 0, t.n, lo, hi, +1);
        }
      }
    }
    free(xs);
    free(births);
    free(deaths);
    free(t.mx);
    free(t.add);
  }

done:
  free(step);
  free(birth);
  free(death);
  free(is_out);
  free(slots);
  return st;
}
