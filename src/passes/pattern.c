/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pattern fusion: the matcher and the rewrite (pattern.h describes the rule tables; the rules
 * are in pattern_rules.c). Nodes are tried as roots from the last to the first, so the largest
 * pattern ending at a node wins (LayerNorm with its affine tail before LayerNorm without), and a
 * node consumed inside one match is not the root of another. The rewritten graph keeps every
 * node (the consumed ones become dead and simplify's DCE drops them); each matched root is
 * replaced by what its rule emits. */
#include <math.h>
#include <string.h>

#include "passes/pattern.h"

const rlx_node *pat_node(const pat_match *m, uint8_t slot) {
  return m->bound[slot] == RLX_NO_ID ? NULL : rlx_graph_node(m->g, m->bound[slot]);
}

/* Every element of a constant node, as double, equal to one value? (f32 and f64 only.) */
static bool const_uniform(const rlx_node *n, double *v) {
  if (n->op != RLX_OP_Constant || !rlx_shape_is_static(&n->shape)) return false;
  const rlx_bytes *b = &n->attrs.Constant.data;
  size_t es = n->shape.dtype == RLX_F32 ? 4 : n->shape.dtype == RLX_F64 ? 8 : 0;
  if (!es || b->n == 0 || b->n % es != 0 || !b->p) return false;
  size_t count = b->n / es;
  double first = 0;
  for (size_t i = 0; i < count; i++) {
    double x;
    if (es == 4) {
      float f;
      memcpy(&f, b->p + i * 4, 4);
      x = f;
    } else {
      memcpy(&x, b->p + i * 8, 8);
    }
    if (i == 0)
      first = x;
    else if (x != first)
      return false;
  }
  *v = first;
  return isfinite(first);
}

/* Constants written by exporters are f32 roundings of the exact numbers (sqrt(2), 1/6, ...). */
static bool near(double got, double want) { return fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want)); }

static bool commutes(const rlx_node *n) {
  if (n->op != RLX_OP_Binary) return false;
  rlx_binop o = n->attrs.Binary.op;
  return o == RLX_BINOP_ADD || o == RLX_BINOP_MUL || o == RLX_BINOP_MAX || o == RLX_BINOP_MIN;
}

static int node_sub(const rlx_node *n) {
  switch (n->op) {
  case RLX_OP_Binary: return (int)n->attrs.Binary.op;
  case RLX_OP_Activation: return (int)n->attrs.Activation.kind;
  case RLX_OP_Reduce: return (int)n->attrs.Reduce.op;
  default: return -1;
  }
}

static bool match_slot(const pat_rule *r, pat_match *m, uint8_t s, rlx_id id);

static bool match_operands(const pat_rule *r, pat_match *m, const pat_slot *ps, const rlx_node *n, bool swap) {
  for (uint8_t i = 0; i < ps->n_in; i++) {
    uint8_t k = swap ? (uint8_t)(1 - i) : i;
    if (!match_slot(r, m, ps->in[i], n->inputs[k])) return false;
  }
  return true;
}

static bool match_slot(const pat_rule *r, pat_match *m, uint8_t s, rlx_id id) {
  if (m->bound[s] != RLX_NO_ID) return m->bound[s] == id;
  const pat_slot *ps = &r->slots[s];
  const rlx_node *n = rlx_graph_node(m->g, id);
  if (!n) return false;
  switch (ps->kind) {
  case PS_VAR: m->bound[s] = id; return true;
  case PS_CONST: {
    double v;
    if (!const_uniform(n, &v)) return false;
    if (!ps->any_value && !near(v, ps->value)) return false;
    m->bound[s] = id;
    m->cval[s] = v;
    return true;
  }
  case PS_ALT:
    for (uint8_t i = 0; i < ps->n_in; i++) {
      pat_match save = *m;
      if (match_slot(r, m, ps->in[i], id)) {
        m->bound[s] = id;
        return true;
      }
      *m = save;
    }
    return false;
  case PS_OP: {
    if (n->op != ps->op || n->n_inputs != ps->n_in) return false;
    if (ps->sub >= 0 && node_sub(n) != ps->sub) return false;
    m->bound[s] = id;
    pat_match save = *m;
    if (match_operands(r, m, ps, n, false)) return true;
    if (ps->n_in != 2 || !commutes(n)) return false;
    *m = save;
    return match_operands(r, m, ps, n, true);
  }
  default: return false;
  }
}

/* The nodes bound to PS_OP slots other than the root, each once. */
static uint32_t inner_nodes(const pat_rule *r, const pat_match *m, rlx_id *ids) {
  uint32_t k = 0;
  for (uint8_t s = 0; s < r->n_slots; s++) {
    if (r->slots[s].kind != PS_OP || m->bound[s] == RLX_NO_ID || m->bound[s] == m->bound[r->root]) continue;
    bool seen = false;
    for (uint32_t j = 0; j < k && !seen; j++) seen = ids[j] == m->bound[s];
    if (!seen) ids[k++] = m->bound[s];
  }
  return k;
}

/* Uses of each inner node by the matched nodes (root included) equal all its uses? */
static bool inner_uses_closed(const pat_rule *r, const pat_match *m, const uint32_t *uses) {
  rlx_id inner[PAT_MAX_SLOTS + 1];
  uint32_t k = inner_nodes(r, m, inner);
  inner[k] = m->bound[r->root];
  for (uint32_t i = 0; i < k; i++) {
    uint32_t inside = 0;
    for (uint32_t j = 0; j <= k; j++) {
      const rlx_node *u = rlx_graph_node(m->g, inner[j]);
      for (uint32_t a = 0; a < u->n_inputs; a++) inside += u->inputs[a] == inner[i];
    }
    if (inside != uses[inner[i]]) return false;
  }
  return true;
}

/* Can the node be the root of slot s at all (its kind, through alternatives)? A cheap filter
 * before the full match. */
static bool root_kind_ok(const pat_rule *r, uint8_t s, const rlx_node *n) {
  const pat_slot *ps = &r->slots[s];
  if (ps->kind == PS_OP) return ps->op == n->op && (ps->sub < 0 || node_sub(n) == ps->sub);
  if (ps->kind != PS_ALT) return true;
  for (uint8_t i = 0; i < ps->n_in; i++)
    if (root_kind_ok(r, ps->in[i], n)) return true;
  return false;
}

static bool consumed_any(const pat_rule *r, const pat_match *m, const uint8_t *consumed) {
  for (uint8_t s = 0; s < r->n_slots; s++)
    if (r->slots[s].kind == PS_OP && m->bound[s] != RLX_NO_ID && consumed[m->bound[s]]) return true;
  return false;
}

rlx_status rlx_pattern_fuse(const rlx_graph *g, const uint8_t claimed[RLX_OP_COUNT], uint32_t *fired, rlx_graph **out) {
  const rlx_allocator *al = rlx_graph_allocator(g);
  uint32_t n = rlx_graph_node_count(g);
  if (fired) memset(fired, 0, rlx_pattern_rule_count * sizeof *fired);
  size_t cells = n ? n : 1;
  /* uses[id]: operand references plus graph outputs; consumed[id]: inside an accepted match;
   * match_of[id]: index + 1 into matches / match_rule of the match rooted at id (0: none). */
  uint32_t *uses = al->alloc(al->ctx, cells * sizeof *uses);
  uint8_t *consumed = al->alloc(al->ctx, cells);
  uint32_t *match_of = al->alloc(al->ctx, cells * sizeof *match_of);
  pat_match *matches = NULL;
  uint32_t *match_rule = NULL;
  uint32_t n_matches = 0, cap = 0;
  rlx_status st = RLX_OK;
  rlx_rebuild rb = {0};
  if (!uses || !consumed || !match_of) {
    st = rlx_errorf(RLX_ERR_OOM, "out of memory in pattern fusion of graph @%s", rlx_graph_name(g));
    goto done;
  }
  memset(uses, 0, cells * sizeof *uses);
  memset(consumed, 0, cells);
  memset(match_of, 0, cells * sizeof *match_of);
  for (uint32_t i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t a = 0; a < nd->n_inputs; a++) uses[nd->inputs[a]]++;
  }
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t i = 0; i < rlx_graph_output_count(g); i++) uses[outs[i]]++;

  bool any_rule = false;
  for (uint32_t r = 0; r < rlx_pattern_rule_count; r++) any_rule |= claimed[rlx_pattern_rules[r].fused] != 0;
  for (uint32_t i = n; any_rule && i-- > 0;) {
    if (consumed[i]) continue;
    for (uint32_t r = 0; r < rlx_pattern_rule_count; r++) {
      const pat_rule *rule = &rlx_pattern_rules[r];
      if (!claimed[rule->fused] || !root_kind_ok(rule, rule->root, rlx_graph_node(g, i))) continue;
      pat_match m = {.g = g};
      for (uint32_t s = 0; s < PAT_MAX_SLOTS; s++) m.bound[s] = RLX_NO_ID;
      if (!match_slot(rule, &m, rule->root, i)) continue;
      if (consumed_any(rule, &m, consumed) || !inner_uses_closed(rule, &m, uses)) continue;
      if (rule->check && !rule->check(&m)) continue;
      if (n_matches == cap) {
        uint32_t nc = cap ? cap * 2 : 16;
        pat_match *nm = al->alloc(al->ctx, nc * sizeof *nm);
        uint32_t *nr = al->alloc(al->ctx, nc * sizeof *nr);
        if (!nm || !nr) {
          al->free(al->ctx, nm);
          al->free(al->ctx, nr);
          st = rlx_errorf(RLX_ERR_OOM, "out of memory in pattern fusion of graph @%s", rlx_graph_name(g));
          goto done;
        }
        if (n_matches) {
          memcpy(nm, matches, n_matches * sizeof *nm);
          memcpy(nr, match_rule, n_matches * sizeof *nr);
        }
        al->free(al->ctx, matches);
        al->free(al->ctx, match_rule);
        matches = nm;
        match_rule = nr;
        cap = nc;
      }
      matches[n_matches] = m;
      match_rule[n_matches] = r;
      for (uint8_t s = 0; s < rule->n_slots; s++)
        if (rule->slots[s].kind == PS_OP && m.bound[s] != RLX_NO_ID) consumed[m.bound[s]] = 1;
      match_of[i] = ++n_matches;
      if (fired) fired[r]++;
      break;
    }
  }

  if (n_matches == 0) { /* nothing to rewrite: the caller keeps using g */
    *out = NULL;
    goto done;
  }
  st = rlx_rebuild_begin(g, &rb);
  for (uint32_t i = 0; i < n && st == RLX_OK; i++) {
    if (!match_of[i]) {
      st = rlx_rebuild_copy(&rb, i);
      continue;
    }
    const pat_rule *rule = &rlx_pattern_rules[match_rule[match_of[i] - 1]];
    const pat_match *m = &matches[match_of[i] - 1];
    st = rule->emit(m, rb.dst, rb.map, rlx_graph_node(g, i)->name, &rb.map[i]);
    if (st != RLX_OK) rlx_error_context(st, "pattern fusion: rule %s at node %%%u", rule->name, i);
  }
  if (st == RLX_OK) st = rlx_rebuild_finish(&rb, out);
  if (st != RLX_OK) rlx_rebuild_abort(&rb);
done:
  al->free(al->ctx, uses);
  al->free(al->ctx, consumed);
  al->free(al->ctx, match_of);
  al->free(al->ctx, matches);
  al->free(al->ctx, match_rule);
  return st;
}
