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

static int slot_by_offset(const void *pa, const void *pb) {
  const slot *a = pa, *b = pb;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

static const char *node_label(const rlx_graph *g, rlx_id id, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, id);
  if (n->name)
    snprintf(buf, cap, "%%%u (%s '%s')", id, rlx_op_name(n->op), n->name);
  else
    snprintf(buf, cap, "%%%u (%s)", id, rlx_op_name(n->op));
  return buf;
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

  /* A node's output never shares bytes with its operands. */
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] != i) continue;
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id r = p->root[nd->inputs[k]];
      if (ranges_overlap(p->offset[i], p->size[i], p->offset[r], p->size[r])) {
        st = plan_bad("the output of %s overlaps its operand %u (slot of %s)", node_label(g, i, a, sizeof a), k,
                      node_label(g, r, b, sizeof b));
        goto done;
      }
    }
  }

  /* Slots live at the same time never share bytes: sweep the slots by offset. */
  uint32_t ns = 0;
  for (rlx_id i = 0; i < n; i++)
    if (p->root[i] == i && p->size[i] > 0) slots[ns++] = (slot){p->offset[i], p->offset[i] + p->size[i], i};
  qsort(slots, ns, sizeof *slots, slot_by_offset);
  for (uint32_t x = 0; x < ns; x++) {
    for (uint32_t y = x + 1; y < ns && slots[y].off < slots[x].end; y++) {
      rlx_id u = slots[x].id, v = slots[y].id;
      if (birth[u] > death[v] || birth[v] > death[u]) continue;
      /* Report the later-born one as the writer. */
      rlx_id early = birth[u] <= birth[v] ? u : v, late = early == u ? v : u;
      if (is_out[early])
        st = plan_bad("graph output %s is clobbered by %s (same bytes, written at step %u)",
                      node_label(g, early, a, sizeof a), node_label(g, late, b, sizeof b), step[late]);
      else
        st = plan_bad("%s (live steps %u..%u) and %s (live steps %u..%u) share arena bytes",
                      node_label(g, early, a, sizeof a), birth[early], death[early], node_label(g, late, b, sizeof b),
                      birth[late], death[late]);
      goto done;
    }
  }

done:
  free(step);
  free(birth);
  free(death);
  free(is_out);
  free(slots);
  return st;
}
