/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Legalize: rewrite every op kind the backend does not claim with its shared decomposition, round
 * after round (a decomposition may emit other unclaimed kinds), until every node is claimed or
 * nothing changes. Bodies of claimed control-flow ops are legalized recursively. Every node left
 * without a path is reported in one message; nothing silently falls back to another backend. */
#include <stdio.h>
#include <string.h>

#include "passes/decompose/decompose.h"
#include "rlx/verify.h"
#include "strbuf.h"

#define LEGALIZE_MAX_ROUNDS 16
#define RLX_STR_(x) #x
#define RLX_STR(x) RLX_STR_(x)
#define LEGALIZE_MAX_LISTED 100

typedef struct lg_ctx {
  const uint8_t *claimed;
  const rlx_allocator *al;
  rlx_strbuf problems; /* one line per node without a path */
  uint32_t n_problems;
} lg_ctx;

/* Per-node state of one round over a graph: decompositions that refused, with their reason. */
typedef struct lg_stuck {
  uint8_t *flag;
  char **reason;
  uint32_t n;
} lg_stuck;

static void stuck_free(const rlx_allocator *al, lg_stuck *st) {
  if (st->reason)
    for (uint32_t i = 0; i < st->n; i++) al->free(al->ctx, st->reason[i]);
  al->free(al->ctx, st->reason);
  al->free(al->ctx, st->flag);
  memset(st, 0, sizeof *st);
}

static rlx_status stuck_init(const rlx_allocator *al, lg_stuck *st, uint32_t n) {
  stuck_free(al, st);
  st->flag = al->alloc(al->ctx, n ? n : 1);
  st->reason = al->alloc(al->ctx, (n ? n : 1) * sizeof *st->reason);
  if (!st->flag || !st->reason) {
    stuck_free(al, st);
    return rlx_errorf(RLX_ERR_OOM, "out of memory while legalizing");
  }
  memset(st->flag, 0, n ? n : 1);
  memset(st->reason, 0, (n ? n : 1) * sizeof *st->reason);
  st->n = n;
  return RLX_OK;
}

static void stuck_set(const rlx_allocator *al, lg_stuck *st, rlx_id id, const char *why) {
  st->flag[id] = 1;
  size_t len = strlen(why);
  char *r = al->alloc(al->ctx, len + 1);
  if (r) memcpy(r, why, len + 1); /* a missing reason only shortens the report */
  al->free(al->ctx, st->reason[id]);
  st->reason[id] = r;
}

static bool wants_rewrite(const lg_ctx *c, const rlx_node *n) {
  return !c->claimed[n->op] && rlx_decompose_table[n->op] != NULL;
}

/* Moves the stuck marks of `st` (ids of the old graph) to `next` (ids of the rebuilt graph, through
 * `map`): a node whose decomposition refused is not tried again in later rounds. */
static rlx_status carry_stuck(const rlx_allocator *al, lg_stuck *st, const rlx_id *map, uint32_t n_new,
                              lg_stuck *next) {
  RLX_TRY(stuck_init(al, next, n_new));
  for (uint32_t id = 0; id < st->n; id++)
    if (st->flag[id] && map[id] < n_new) stuck_set(al, next, map[id], st->reason[id] ? st->reason[id] : "");
  return RLX_OK;
}

/* Rebuilds `cur` with every unclaimed, decomposable, not-stuck node replaced by its
 * decomposition. A decomposition that refuses (RLX_ERR_UNSUPPORTED) marks its node stuck and the
 * round starts over, so nothing it half-emitted survives. On success `next_st` holds the stuck
 * marks for the new graph. */
static rlx_status one_round(lg_ctx *c, const rlx_graph *cur, lg_stuck *st, bool *changed, rlx_graph **out,
                            lg_stuck *next_st) {
  uint32_t nn = rlx_graph_node_count(cur);
  rlx_id small[16];
  for (;;) {
    rlx_rebuild rb;
    RLX_TRY(rlx_rebuild_begin(cur, &rb));
    rlx_status s = RLX_OK;
    bool restart = false;
    *changed = false;
    for (rlx_id id = 0; id < nn && !s && !restart; id++) {
      const rlx_node *n = rlx_graph_node(cur, id);
      if (!wants_rewrite(c, n) || st->flag[id]) {
        s = rlx_rebuild_copy(&rb, id);
        continue;
      }
      rlx_id *in = small;
      if (n->n_inputs > 16) {
        in = c->al->alloc(c->al->ctx, n->n_inputs * sizeof *in);
        if (!in) {
          s = rlx_errorf(RLX_ERR_OOM, "out of memory while legalizing");
          break;
        }
      }
      for (uint32_t i = 0; i < n->n_inputs; i++) in[i] = rb.map[n->inputs[i]];
      rlx_id o = RLX_NO_ID;
      s = rlx_decompose_table[n->op](rb.dst, cur, n, in, &o);
      if (in != small) c->al->free(c->al->ctx, in);
      if (s == RLX_ERR_UNSUPPORTED) {
        stuck_set(c->al, st, id, rlx_last_error());
        restart = true;
        s = RLX_OK;
        break;
      }
      if (s) {
        s = rlx_error_context(s, "decomposing @%s/%%%u %s%s%s%s", rlx_graph_name(cur), id, rlx_op_name(n->op),
                              n->name ? " \"" : "", n->name ? n->name : "", n->name ? "\"" : "");
        break;
      }
      const rlx_node *r = rlx_graph_node(rb.dst, o);
      if (!r || !rlx_shape_compatible(&r->shape, &n->shape)) {
        char want[160], got[160] = "(no node)";
        rlx_shape_format(&n->shape, want, sizeof want);
        if (r) rlx_shape_format(&r->shape, got, sizeof got);
        s = rlx_errorf(RLX_ERR_INTERNAL, "the decomposition of @%s/%%%u %s produced %s instead of %s",
                       rlx_graph_name(cur), id, rlx_op_name(n->op), got, want);
        break;
      }
      rb.map[id] = o;
      *changed = true;
    }
    if (!s && !restart) s = carry_stuck(c->al, st, rb.map, rlx_graph_node_count(rb.dst), next_st);
    if (!s && !restart) s = rlx_rebuild_finish(&rb, out);
    if (s || restart) rlx_rebuild_abort(&rb);
    if (s) return s;
    if (!restart) return RLX_OK;
  }
}

static void add_problem(lg_ctx *c, const char *path, rlx_id id, const rlx_node *n, const char *why) {
  c->n_problems++;
  if (c->n_problems > LEGALIZE_MAX_LISTED) return;
  rlx_sb_printf(&c->problems, "\n  %s%%%u %s", path, id, rlx_op_name(n->op));
  if (n->name) rlx_sb_printf(&c->problems, " \"%s\"", n->name);
  if (why) rlx_sb_printf(&c->problems, ": %s", why);
}

static rlx_status legalize_graph(lg_ctx *c, const rlx_graph *g, const char *path, rlx_graph **out);

static const char *why_unclaimed(const lg_stuck *st, rlx_id id, rlx_op op) {
  if (id < st->n && st->flag[id]) return st->reason[id] && *st->reason[id] ? st->reason[id] : "cannot be decomposed";
  if (!rlx_decompose_table[op]) return "no kernel on this backend and no decomposition";
  return "still not claimed after " RLX_STR(LEGALIZE_MAX_ROUNDS) " rounds of decomposition";
}

/* Copies `cur` into the result: claimed nodes with bodies get legalized bodies, unclaimed nodes
 * are reported (with the reason their decomposition gave, if any). */
static rlx_status finish_graph(lg_ctx *c, const rlx_graph *cur, const lg_stuck *st, const char *path, rlx_graph **out) {
  rlx_rebuild rb;
  RLX_TRY(rlx_rebuild_begin(cur, &rb));
  rlx_status s = RLX_OK;
  uint32_t nn = rlx_graph_node_count(cur);
  for (rlx_id id = 0; id < nn && !s; id++) {
    const rlx_node *n = rlx_graph_node(cur, id);
    uint32_t nb = rlx_pass_body_count(n->op);
    if (!c->claimed[n->op] || nb == 0) {
      s = rlx_rebuild_copy(&rb, id);
      if (!s && !c->claimed[n->op]) add_problem(c, path, id, n, why_unclaimed(st, id, n->op));
      continue;
    }
    rlx_graph *bodies[4] = {NULL, NULL, NULL, NULL};
    rlx_attrs tmp = n->attrs;
    for (uint32_t b = 0; b < nb && b < 4 && !s; b++) {
      rlx_graph *body = *rlx_pass_body_slot(n->op, &tmp, b);
      if (!body) continue;
      char sub[512];
      snprintf(sub, sizeof sub, "%s@%s/", path, rlx_graph_name(body));
      rlx_graph *lb = NULL;
      s = legalize_graph(c, body, sub, &lb);
      if (!s) s = rlx_graph_clone_child(rb.dst, lb, &bodies[b]);
      rlx_graph_free(lb);
    }
    if (!s && nb > 4) s = rlx_errorf(RLX_ERR_INTERNAL, "%s has more than 4 bodies", rlx_op_name(n->op));
    if (s) break;
    rlx_id small[16], *in = small;
    if (n->n_inputs > 16) {
      in = c->al->alloc(c->al->ctx, n->n_inputs * sizeof *in);
      if (!in) {
        s = rlx_errorf(RLX_ERR_OOM, "out of memory while legalizing");
        break;
      }
    }
    for (uint32_t i = 0; i < n->n_inputs; i++) in[i] = rb.map[n->inputs[i]];
    s = rlx_pass_copy_node_bodies(rb.dst, n, in, bodies, &rb.map[id]);
    if (in != small) c->al->free(c->al->ctx, in);
  }
  if (!s) s = rlx_rebuild_finish(&rb, out);
  if (s) rlx_rebuild_abort(&rb);
  return s;
}

/* Legalizes one graph (top level or body) into a new standalone graph. Nodes without a path are
 * recorded in c->problems; only real failures (OOM, broken decompositions) return an error. */
static rlx_status legalize_graph(lg_ctx *c, const rlx_graph *g, const char *path, rlx_graph **out) {
  const rlx_graph *cur = g;
  rlx_graph *owned = NULL;
  lg_stuck st = {0}, next_st = {0};
  rlx_status s = stuck_init(c->al, &st, rlx_graph_node_count(g));
  for (int round = 0; round < LEGALIZE_MAX_ROUNDS && !s; round++) {
    uint32_t nn = rlx_graph_node_count(cur);
    bool work = false;
    for (rlx_id id = 0; id < nn && !work; id++) work = !st.flag[id] && wants_rewrite(c, rlx_graph_node(cur, id));
    if (!work) break;
    rlx_graph *next = NULL;
    bool changed = false;
    s = one_round(c, cur, &st, &changed, &next, &next_st);
    if (s) break;
    if (!changed) { /* every candidate refused: the marks in st describe cur */
      rlx_graph_free(next);
      stuck_free(c->al, &next_st);
      break;
    }
    stuck_free(c->al, &st);
    st = next_st;
    memset(&next_st, 0, sizeof next_st);
    rlx_graph_free(owned);
    owned = next;
    cur = next;
  }
  if (!s) s = finish_graph(c, cur, &st, path, out);
  stuck_free(c->al, &st);
  stuck_free(c->al, &next_st);
  rlx_graph_free(owned);
  return s;
}

static void count_kinds(const rlx_graph *g, uint32_t *count, unsigned depth) {
  if (depth > 64) return;
  uint32_t nn = rlx_graph_node_count(g);
  for (rlx_id id = 0; id < nn; id++) {
    const rlx_node *n = rlx_graph_node(g, id);
    count[n->op]++;
    rlx_attrs tmp = n->attrs;
    for (uint32_t b = 0; b < rlx_pass_body_count(n->op); b++) {
      rlx_graph *body = *rlx_pass_body_slot(n->op, &tmp, b);
      if (body) count_kinds(body, count, depth + 1);
    }
  }
}

rlx_status rlx_legalize(const rlx_graph *g, const uint8_t claimed[RLX_OP_COUNT],
                        const uint8_t host_staged[RLX_OP_COUNT], rlx_dispatch_report *rep, rlx_graph **out) {
  if (!g || !claimed || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_legalize: NULL argument");
  *out = NULL;
  lg_ctx c = {claimed, rlx_graph_allocator(g), {0}, 0};
  rlx_sb_init(&c.problems, c.al);
  char root[300];
  snprintf(root, sizeof root, "@%s/", rlx_graph_name(g));
  rlx_graph *res = NULL;
  rlx_status s = legalize_graph(&c, g, root, &res);
#ifndef NDEBUG
  if (!s && !c.n_problems) {
    rlx_status v = rlx_verify(res);
    if (v) s = rlx_error_context(v == RLX_ERR_OOM ? v : RLX_ERR_INTERNAL, "legalize produced an invalid graph");
  }
#endif

  if (rep && !s) {
    uint32_t before[RLX_OP_COUNT] = {0}, after[RLX_OP_COUNT] = {0};
    count_kinds(g, before, 0);
    count_kinds(res, after, 0);
    memset(rep, 0, sizeof *rep);
    for (int k = 0; k < RLX_OP_COUNT; k++) {
      rep->count[k] = before[k];
      if (!before[k]) continue;
      if (claimed[k])
        rep->path[k] = host_staged && host_staged[k] ? RLX_PATH_HOST_STAGED : RLX_PATH_NATIVE;
      else
        rep->path[k] = after[k] ? RLX_PATH_UNSUPPORTED : RLX_PATH_DECOMPOSED;
    }
    rep->nodes_before = rlx_graph_node_count(g);
    rep->nodes_after = rlx_graph_node_count(res);
  }
  if (!s && c.n_problems) {
    char *list = NULL;
    size_t len = 0;
    if (c.n_problems > LEGALIZE_MAX_LISTED)
      rlx_sb_printf(&c.problems, "\n  ... and %u more", c.n_problems - LEGALIZE_MAX_LISTED);
    if (rlx_sb_finish(&c.problems, &list, &len) != RLX_OK) list = NULL;
    s = rlx_errorf(RLX_ERR_UNSUPPORTED,
                   "%u node%s ha%s no path on this backend (not claimed, no applicable decomposition):%s", c.n_problems,
                   c.n_problems == 1 ? "" : "s", c.n_problems == 1 ? "s" : "ve",
                   list ? list : " (list lost: out of memory)");
    if (list) c.al->free(c.al->ctx, list);
  }
  rlx_sb_free(&c.problems);
  if (s) {
    rlx_graph_free(res);
    return s;
  }
  *out = res;
  return RLX_OK;
}
