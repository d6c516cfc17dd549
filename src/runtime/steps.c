/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Cutting a compiled graph into steps (see exec_internal.h), compiling each step and allocating
 * the executable's buffers.
 *
 * When the backend lowers every node itself, the whole graph is one segment and nothing is
 * copied (this is the common case, and costs what a single backend executable costs). Otherwise
 * nodes are taken in schedule (node) order: each host-staged or runtime-control node is a step of
 * its own, and every maximal run of other nodes between them is a segment, compiled as a graph
 * whose Inputs are the values it reads from other steps (and the executable's Inputs), whose
 * Params and Constants are copies of the ones it reads, and whose outputs are the values other
 * steps read (and the executable's outputs). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passes/decompose/decompose.h"
#include "passes/passes.h"
#include "rlx/verify.h"
#include "runtime/control.h"
#include "runtime/compile_cache.h"
#include "runtime/exec_internal.h"

static void *st_alloc(const rlx_allocator *al, size_t n, size_t elem) {
  size_t bytes;
  if (!rlx_mul_size(n, elem, &bytes)) return NULL;
  void *p = al->alloc(al->ctx, bytes ? bytes : 1);
  if (p) memset(p, 0, bytes ? bytes : 1);
  return p;
}

static const char *node_label(const rlx_graph *g, rlx_id id, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, id);
  char sh[96];
  rlx_shape_format(&n->shape, sh, sizeof sh);
  if (n->name)
    snprintf(buf, cap, "%%%u (%s '%s', %s)", id, rlx_op_name(n->op), n->name, sh);
  else
    snprintf(buf, cap, "%%%u (%s, %s)", id, rlx_op_name(n->op), sh);
  return buf;
}

static bool is_special(const rlx_backend *be, rlx_op op) {
  return rlx_backend_host_stages(be, op) || rlx_backend_runtime_controls(be, op);
}

static size_t node_bytes(const rlx_node *n) {
  size_t b = 0;
  if (rlx_shape_nbytes(&n->shape, &b) != RLX_OK) return 0;
  return b;
}

/* The machine's available memory (bytes), for the default memory limit. */
static size_t available_memory(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[128];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
        fclose(f);
        return kb > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kb * 1024;
      }
    fclose(f);
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return (size_t)pages * (size_t)page;
  return SIZE_MAX;
}

/* ---- buffers ---- */

/* Reserves a buffer record of `bytes` (allocated later by alloc_buffers). */
static rlx_status new_buf(rlx_executable *e, size_t bytes, rt_buf **out) {
  if (e->n_pool == e->cap_pool)
    return rlx_errorf(RLX_ERR_INTERNAL, "runtime: buffer pool of %u records exhausted", e->cap_pool);
  rt_buf *b = &e->pool[e->n_pool++];
  b->bytes = bytes;
  *out = b;
  return RLX_OK;
}

/* ---- segment graphs ---- */

typedef struct seg_builder {
  rlx_executable *e;
  const rlx_graph *g;
  rlx_graph *dst;
  rlx_id *map;  /* g id -> dst id (per segment) */
  rt_buf **val; /* g id -> buffer holding its value (cross-step values and leaves) */
  rt_step *step;
  uint32_t cap_in, cap_par;
} seg_builder;

static exe_leaf *find_param(rlx_executable *e, const char *name) {
  int k = rlx_rt_find_param(e, name);
  return k >= 0 ? &e->params[k] : NULL;
}

/* Makes g's node `id` available in the segment graph: a copy (Param, Constant) or an Input bound
 * to its buffer. */
static rlx_status seg_operand(seg_builder *sb, rlx_id id) {
  if (sb->map[id] != RLX_NO_ID) return RLX_OK;
  const rlx_node *n = rlx_graph_node(sb->g, id);
  rt_step *s = sb->step;
  if (n->op == RLX_OP_Constant || n->op == RLX_OP_Param) {
    RLX_TRY(rlx_pass_copy_node(sb->dst, n, NULL, false, &sb->map[id]));
    return RLX_OK;
  }
  if (!sb->val[id]) return rlx_errorf(RLX_ERR_INTERNAL, "runtime: value %%%u has no buffer", id);
  char name[32];
  snprintf(name, sizeof name, "v%u", id);
  RLX_TRY(rlx_input(sb->dst, name, n->shape, &sb->map[id]));
  if (s->n_in == sb->cap_in) return rlx_errorf(RLX_ERR_INTERNAL, "runtime: segment input list overflow");
  s->in[s->n_in++] = sb->val[id];
  return RLX_OK;
}

/* Builds the graph of segment `s` (nodes first..last of the schedule that belong to it). */
static rlx_status build_segment(seg_builder *sb, const uint32_t *step_of, uint32_t index, const bool *needed, rlx_id lo,
                                rlx_id hi) {
  rlx_executable *e = sb->e;
  const rlx_graph *g = sb->g;
  rt_step *s = sb->step;
  /* the members are the nodes lo..hi of this step (node order is step order); only they and
   * their operands are looked at, so building every segment is linear in the graph */
  uint32_t members = 0, n_out = 0, max_in = 0;
  for (rlx_id i = lo; i <= hi; i++) {
    if (step_of[i] != index) continue;
    members++;
    max_in += rlx_graph_node(g, i)->n_inputs;
    n_out += needed[i];
  }
  char name[64];
  snprintf(name, sizeof name, "%s.segment%u", rlx_graph_name(g), index);
  RLX_TRY(rlx_graph_create(&e->al, name, &sb->dst));
  s->graph = sb->dst;
  s->owns_graph = true;
  sb->cap_in = max_in;
  s->in = st_alloc(&e->al, max_in, sizeof *s->in);
  s->out = st_alloc(&e->al, n_out, sizeof *s->out);
  rlx_id *outs = st_alloc(&e->al, n_out, sizeof *outs);
  if (!s->in || !s->out || !outs) {
    e->al.free(e->al.ctx, outs);
    return rlx_errorf(RLX_ERR_OOM, "out of memory building a segment");
  }
  for (rlx_id i = lo; i <= hi; i++) {
    if (step_of[i] != index) continue;
    const rlx_node *nd = rlx_graph_node(g, i);
    sb->map[i] = RLX_NO_ID;
    for (uint32_t k = 0; k < nd->n_inputs; k++) sb->map[nd->inputs[k]] = RLX_NO_ID;
  }
  rlx_status st = RLX_OK;
  rlx_id small[16];
  for (rlx_id i = lo; i <= hi && st == RLX_OK; i++) {
    if (step_of[i] != index) continue;
    const rlx_node *nd = rlx_graph_node(g, i);
    rlx_id *in = nd->n_inputs <= 16 ? small : st_alloc(&e->al, nd->n_inputs, sizeof *in);
    if (!in) {
      st = rlx_errorf(RLX_ERR_OOM, "out of memory building a segment");
      break;
    }
    for (uint32_t k = 0; k < nd->n_inputs && st == RLX_OK; k++) {
      st = seg_operand(sb, nd->inputs[k]);
      in[k] = sb->map[nd->inputs[k]];
    }
    if (st == RLX_OK) st = rlx_pass_copy_node(sb->dst, nd, in, false, &sb->map[i]);
    if (in != small) e->al.free(e->al.ctx, in);
    if (st == RLX_OK && needed[i]) {
      outs[s->n_out] = sb->map[i];
      s->out[s->n_out++] = sb->val[i];
    }
  }
  (void)members;
  if (st == RLX_OK) st = rlx_graph_set_outputs(sb->dst, outs, s->n_out);
  e->al.free(e->al.ctx, outs);
  return st;
}

/* The Params of a segment graph and their leaves. */
static rlx_status segment_params(rlx_executable *e, rt_step *s) {
  uint32_t n = rlx_graph_node_count(s->graph), count = 0;
  for (rlx_id i = 0; i < n; i++) count += rlx_graph_node(s->graph, i)->op == RLX_OP_Param;
  s->par_node = st_alloc(&e->al, count, sizeof *s->par_node);
  s->par = st_alloc(&e->al, count, sizeof *s->par);
  s->par_seen = st_alloc(&e->al, count, sizeof *s->par_seen);
  if (!s->par_node || !s->par || !s->par_seen) return rlx_errorf(RLX_ERR_OOM, "out of memory building a segment");
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(s->graph, i);
    if (nd->op != RLX_OP_Param) continue;
    exe_leaf *p = find_param(e, nd->attrs.Param.name ? nd->attrs.Param.name : "");
    if (!p)
      return rlx_errorf(RLX_ERR_INTERNAL, "runtime: segment param '%s' is not a param of the executable",
                        nd->attrs.Param.name ? nd->attrs.Param.name : "");
    s->par_node[s->n_par] = i;
    s->par[s->n_par] = p;
    s->n_par++;
  }
  return RLX_OK;
}

/* Lets buffer b be node `id`'s own storage in segment s's executable, when the backend lends it
 * (slot_buffer) and no earlier segment already did. The bytes are b's for as long as the runtime
 * needs them: the plan keeps Inputs and Params live for the whole run and persists them across
 * runs, and a graph output's root from its step to the end of the run. */
static rlx_status lend_slot(rt_step *s, rlx_id id, rt_buf *b) {
  if (!b || b->live) return RLX_OK;
  rlx_buffer_handle h = NULL;
  RLX_TRY(s->bx->vt->slot_buffer(s->bx, id, &h));
  if (!h) return RLX_OK;
  b->h = h;
  b->live = b->lent = true;
  return RLX_OK;
}

/* The buffers a segment's executable can hold in its own storage: its Inputs, its Params (root
 * executables only: a body reads its root's), and its outputs that are computed values. An output
 * whose slot is a leaf's (the output is an Input, a Param, a Constant or a view of one) keeps a
 * buffer of its own, so that setting an input after a run cannot change what the run returned. */
static rlx_status lend_slots(rt_step *s) {
  if (!s->bx || !s->bx->vt->slot_buffer) return RLX_OK;
  const rlx_graph *g = s->graph;
  uint32_t n = rlx_graph_node_count(g), k = 0;
  for (rlx_id id = 0; id < n && k < s->n_in; id++)
    if (rlx_graph_node(g, id)->op == RLX_OP_Input) RLX_TRY(lend_slot(s, id, s->in[k++]));
  for (uint32_t i = 0; i < s->n_par; i++) RLX_TRY(lend_slot(s, s->par_node[i], s->par[i]->buf));
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t i = 0; i < s->n_out; i++) {
    rlx_op root = rlx_graph_node(g, s->plan->root[outs[i]])->op;
    if (root == RLX_OP_Input || root == RLX_OP_Param || root == RLX_OP_Constant) continue;
    RLX_TRY(lend_slot(s, outs[i], s->out[i]));
  }
  return RLX_OK;
}

/* The one-node graph of a host-staged node: its operands as Inputs, the node, its output. */
static rlx_status staged_graph(rlx_executable *e, const rlx_node *n, rlx_graph **out) {
  rlx_graph *g;
  char name[64];
  snprintf(name, sizeof name, "%s.staged.%s", rlx_graph_name(e->graph), rlx_op_name(n->op));
  RLX_TRY(rlx_graph_create(&e->al, name, &g));
  rlx_id small[16], *in = n->n_inputs <= 16 ? small : st_alloc(&e->al, n->n_inputs, sizeof *in);
  rlx_status st = in ? RLX_OK : rlx_errorf(RLX_ERR_OOM, "out of memory staging a node");
  for (uint32_t k = 0; k < n->n_inputs && st == RLX_OK; k++) {
    char nm[32];
    snprintf(nm, sizeof nm, "arg%u", k);
    st = rlx_input(g, nm, rlx_graph_node(e->graph, n->inputs[k])->shape, &in[k]);
  }
  rlx_id id;
  if (st == RLX_OK) st = rlx_pass_copy_node(g, n, in, false, &id);
  if (st == RLX_OK) st = rlx_graph_set_outputs(g, &id, 1);
  if (in && in != small) e->al.free(e->al.ctx, in);
  if (st != RLX_OK) {
    rlx_graph_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}

/* ---- the pass ---- */

void rlx_rt_free_steps(rlx_executable *e) {
  const rlx_allocator *al = &e->al;
  /* executables first (they borrow their graphs and plans); the device executable, which
     allocated the buffers, after the buffers */
  for (uint32_t i = 0; e->steps && i < e->n_steps; i++) {
    rt_step *s = &e->steps[i];
    if (s->bx && s->bx != e->dev) s->bx->vt->destroy(s->bx);
    s->bx = NULL;
    rlx_executable_free(s->cpu);
    s->cpu = NULL;
    for (uint32_t k = 0; s->bodies && k < s->n_bodies; k++) rlx_executable_free(s->bodies[k]);
  }
  for (uint32_t i = 0; e->dev && i < e->n_pool; i++)
    if (e->pool[i].live && !e->pool[i].lent) e->dev->vt->buffer_free(e->dev, e->pool[i].h);
  if (e->dev) e->dev->vt->destroy(e->dev);
  e->dev = NULL;
  for (uint32_t i = 0; e->steps && i < e->n_steps; i++) {
    rt_step *s = &e->steps[i];
    al->free(al->ctx, s->bodies);
    al->free(al->ctx, s->body_graphs);
    al->free(al->ctx, s->host_in ? s->host_in[0].data : NULL);
    al->free(al->ctx, s->host_in);
    al->free(al->ctx, s->host_out.data);
    al->free(al->ctx, s->in);
    al->free(al->ctx, s->out);
    al->free(al->ctx, s->in_h);
    al->free(al->ctx, s->out_h);
    al->free(al->ctx, s->par_node);
    al->free(al->ctx, s->par);
    al->free(al->ctx, s->par_seen);
    if (s->plan) rlx_plan_free(s->plan, al);
    if (s->owns_graph) rlx_graph_free(s->graph);
  }
  al->free(al->ctx, e->pool);
  al->free(al->ctx, e->steps);
  e->pool = NULL;
  e->steps = NULL;
  e->n_pool = e->n_steps = 0;
}

/* Plans the memory of segment s and compiles it for the backend (after the memory check). */
static rlx_status plan_segment(rlx_executable *e, rt_step *s, const rlx_compile_options *opt) {
  /* The plan of a graph shared with the compile cache comes from (and goes to) its entry. */
  bool shared = e->cache_hold && s->graph == e->graph;
  if (shared) s->plan = rlx_cc_plan_get(e->cache_hold, &e->al);
  if (!s->plan) {
    rlx_status st = rlx_plan_memory(s->graph, &e->al, &s->plan);
    if (st != RLX_OK) return rlx_error_context(st, "memory plan");
    if (opt->check_plan) {
      st = rlx_plan_check(s->graph, s->plan);
      if (st != RLX_OK)
        return rlx_error_context(RLX_ERR_INTERNAL, "compile: the memory planner produced a bad plan (a compiler bug)");
    }
    if (shared) rlx_cc_plan_put(e->cache_hold, s->plan);
  }
  e->report.arena_bytes += s->plan->arena_size;
  e->report.tensor_bytes += s->plan->tensor_bytes;
  return RLX_OK;
}

static rlx_status check_memory(rlx_executable *e, const rlx_compile_options *opt) {
  size_t limit = opt->memory_limit ? opt->memory_limit : available_memory();
  size_t total = e->report.arena_bytes, bufs = 0;
  for (uint32_t i = 0; i < e->n_pool; i++) bufs += e->pool[i].bytes;
  if (total + bufs >= total)
    total += bufs;
  else
    total = SIZE_MAX;
  if (total <= limit) return RLX_OK;
  /* name the largest tensor */
  rlx_id big = RLX_NO_ID;
  size_t big_bytes = 0;
  for (rlx_id i = 0; i < rlx_graph_node_count(e->graph); i++) {
    size_t b = node_bytes(rlx_graph_node(e->graph, i));
    if (b > big_bytes) big_bytes = b, big = i;
  }
  char lb[192] = "(none)";
  if (big != RLX_NO_ID) node_label(e->graph, big, lb, sizeof lb);
  return rlx_errorf(RLX_ERR_OOM,
                    "graph '%s' needs %zu bytes (arena %zu + buffers %zu), over the memory limit of %zu "
                    "bytes (%s); its largest tensor is %s with %zu bytes — reduce the shapes, or raise "
                    "rlx_compile_options.memory_limit",
                    rlx_graph_name(e->graph), total, e->report.arena_bytes, bufs, limit,
                    opt->memory_limit ? "rlx_compile_options.memory_limit" : "the machine's available memory", lb,
                    big_bytes);
}

rlx_status rlx_rt_build_steps(rlx_executable *e, const rlx_compile_options *opt) {
  const rlx_allocator *al = &e->al;
  const rlx_graph *g = e->graph;
  const rlx_backend *be = e->backend;
  uint32_t n = rlx_graph_node_count(g);
  bool any_special = false;
  for (rlx_id i = 0; i < n; i++) any_special |= is_special(be, rlx_graph_node(g, i)->op);

  /* Steps: step_of[node] for every non-leaf node. */
  uint32_t *step_of = st_alloc(al, n, sizeof *step_of);
  bool *needed = st_alloc(al, n, sizeof *needed);
  rt_buf **val = st_alloc(al, n, sizeof *val);
  rlx_id *map = st_alloc(al, n, sizeof *map);
  if (!step_of || !needed || !val || !map) {
    al->free(al->ctx, step_of), al->free(al->ctx, needed), al->free(al->ctx, val), al->free(al->ctx, map);
    return rlx_errorf(RLX_ERR_OOM, "out of memory cutting graph '%s' into steps", rlx_graph_name(g));
  }
  uint32_t n_steps = 0;
  bool open = false;
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    step_of[i] = UINT32_MAX;
    if (rlx_op_has(nd->op, RLX_PROP_LEAF)) continue;
    if (any_special && is_special(be, nd->op)) {
      step_of[i] = n_steps++;
      open = false;
    } else {
      if (!open) n_steps++, open = true;
      step_of[i] = n_steps - 1;
    }
  }
  bool need_dev_segment = true; /* the first segment allocates the buffers */
  for (rlx_id i = 0; i < n && need_dev_segment; i++)
    if (step_of[i] != UINT32_MAX && !is_special(be, rlx_graph_node(g, i)->op)) need_dev_segment = false;
  if (!any_special) need_dev_segment = n_steps == 0;
  uint32_t total_steps = n_steps + (need_dev_segment ? 1 : 0);

  rlx_status st = RLX_OK;
  e->steps = st_alloc(al, total_steps, sizeof *e->steps);
  e->cap_pool = n + e->n_inputs + e->n_params + e->n_outputs + 1;
  e->pool = st_alloc(al, e->cap_pool, sizeof *e->pool);
  if (!e->steps || !e->pool)
    st = rlx_errorf(RLX_ERR_OOM, "out of memory cutting graph '%s' into steps", rlx_graph_name(g));
  e->n_steps = total_steps;

  /* Buffers of the interface. */
  for (uint32_t i = 0; st == RLX_OK && i < e->n_inputs; i++) {
    exe_leaf *in = &e->inputs[i];
    if (in->node == RLX_NO_ID) continue; /* not read: nothing to upload */
    st = new_buf(e, node_bytes(rlx_graph_node(g, in->node)), &in->buf);
    if (st == RLX_OK) val[in->node] = in->buf;
  }
  for (uint32_t i = 0; st == RLX_OK && i < e->n_params; i++) {
    exe_leaf *p = &e->params[i];
    if (e->root == e) {
      size_t b = 0;
      rlx_shape_nbytes(&p->shape, &b);
      st = new_buf(e, b, &p->buf);
    }
    if (st == RLX_OK && p->node != RLX_NO_ID) val[p->node] = p->buf;
  }

  if (st == RLX_OK && !any_special) {
    /* One segment: the whole graph. */
    rt_step *s = &e->steps[0];
    s->kind = STEP_SEGMENT;
    s->graph = e->graph;
    uint32_t n_in = 0;
    for (rlx_id i = 0; i < n; i++) n_in += rlx_graph_node(g, i)->op == RLX_OP_Input;
    s->in = st_alloc(al, n_in, sizeof *s->in);
    s->out = st_alloc(al, e->n_outputs, sizeof *s->out);
    if (!s->in || !s->out) st = rlx_errorf(RLX_ERR_OOM, "out of memory building the executable");
    for (rlx_id i = 0; st == RLX_OK && i < n; i++)
      if (rlx_graph_node(g, i)->op == RLX_OP_Input) {
        if (!val[i]) st = rlx_errorf(RLX_ERR_INTERNAL, "runtime: Input %%%u is not an input of the executable", i);
        s->in[s->n_in++] = val[i];
      }
    for (uint32_t k = 0; st == RLX_OK && k < e->n_outputs; k++) {
      st = new_buf(e, node_bytes(rlx_graph_node(g, rlx_graph_outputs(g)[k])), &s->out[k]);
      e->outs[k] = s->out[k];
    }
    s->n_out = e->n_outputs;
    if (st == RLX_OK) st = segment_params(e, s);
    if (st == RLX_OK) st = plan_segment(e, s, opt);
  } else if (st == RLX_OK) {
    /* Values that cross steps, and the outputs. */
    for (uint32_t k = 0; k < e->n_outputs; k++) needed[rlx_graph_outputs(g)[k]] = true;
    for (rlx_id i = 0; i < n; i++) {
      const rlx_node *nd = rlx_graph_node(g, i);
      for (uint32_t k = 0; k < nd->n_inputs; k++) {
        rlx_id o = nd->inputs[k];
        if (step_of[i] != step_of[o] || is_special(be, nd->op)) needed[o] = true;
      }
    }
    for (rlx_id i = 0; st == RLX_OK && i < n; i++) {
      const rlx_node *nd = rlx_graph_node(g, i);
      if (!needed[i] || val[i]) continue;
      if (nd->op == RLX_OP_Input || nd->op == RLX_OP_Param) continue; /* unreachable: they have buffers */
      st = new_buf(e, node_bytes(nd), &val[i]);
    }
    for (uint32_t k = 0; st == RLX_OK && k < e->n_outputs; k++) {
      e->outs[k] = val[rlx_graph_outputs(g)[k]];
      if (!e->outs[k]) st = rlx_errorf(RLX_ERR_INTERNAL, "runtime: output %u has no buffer", k);
    }
    seg_builder sb = {e, g, NULL, map, val, NULL, 0, 0};
    rlx_id at = 0; /* steps are numbered in node order: the next step starts after this node */
    for (uint32_t si = 0; st == RLX_OK && si < n_steps; si++) {
      rt_step *s = &e->steps[si];
      rlx_id first = RLX_NO_ID, last;
      for (; at < n && first == RLX_NO_ID; at++)
        if (step_of[at] == si) first = at;
      for (last = first; at < n && (step_of[at] == si || step_of[at] == UINT32_MAX); at++)
        if (step_of[at] == si) last = at;
      const rlx_node *nd = rlx_graph_node(g, first);
      if (!is_special(be, nd->op)) {
        s->kind = STEP_SEGMENT;
        sb.step = s;
        st = build_segment(&sb, step_of, si, needed, first, last);
        if (st == RLX_OK) st = rlx_verify(s->graph);
        if (st != RLX_OK) st = rlx_error_context(st, "runtime: segment %u of graph '%s'", si, rlx_graph_name(g));
        if (st == RLX_OK) st = segment_params(e, s);
        if (st == RLX_OK) st = plan_segment(e, s, opt);
        continue;
      }
      s->kind = rlx_backend_host_stages(be, nd->op) ? STEP_STAGED : STEP_CONTROL;
      s->node = nd;
      s->node_id = first;
      s->in = st_alloc(al, nd->n_inputs, sizeof *s->in);
      s->out = st_alloc(al, 1, sizeof *s->out);
      if (!s->in || !s->out) {
        st = rlx_errorf(RLX_ERR_OOM, "out of memory building the executable");
        break;
      }
      s->n_in = nd->n_inputs;
      s->n_out = 1;
      s->out[0] = val[first];
      for (uint32_t k = 0; st == RLX_OK && k < nd->n_inputs; k++) {
        rlx_id o = nd->inputs[k];
        if (!val[o]) st = new_buf(e, node_bytes(rlx_graph_node(g, o)), &val[o]); /* a Constant operand */
        s->in[k] = val[o];
      }
    }
    if (st == RLX_OK && need_dev_segment) {
      rt_step *s = &e->steps[total_steps - 1]; /* an empty segment: the buffer allocator */
      s->kind = STEP_SEGMENT;
      st = rlx_graph_create(al, "buffers", &s->graph);
      s->owns_graph = st == RLX_OK;
      if (st == RLX_OK) st = plan_segment(e, s, opt);
    }
  }
  if (st == RLX_OK) st = check_memory(e, opt);

  /* Compile the segments (the first one also allocates the buffers). */
  for (uint32_t si = 0; st == RLX_OK && si < e->n_steps; si++) {
    rt_step *s = &e->steps[si];
    if (s->kind != STEP_SEGMENT) continue;
    rlx_backend_compile_args args = {
        .graph = s->graph, .plan = s->plan, .options = opt, .backend_options = opt->backend_options};
    st = be->compile(be, &args, &s->bx);
    if (st != RLX_OK) {
      s->bx = NULL;
      st = rlx_error_context(st, "compile for '%s'", be->name);
      break;
    }
    if (!e->dev) e->dev = s->bx;
    s->in_h = st_alloc(al, s->n_in, sizeof *s->in_h);
    s->out_h = st_alloc(al, s->n_out, sizeof *s->out_h);
    if (!s->in_h || !s->out_h) st = rlx_errorf(RLX_ERR_OOM, "out of memory building the executable");
  }
  /* Borrow the segments' own slots where they lend them, allocate every other buffer, then fill
   * the handle lists and upload constants read across steps. */
  for (uint32_t si = 0; st == RLX_OK && si < e->n_steps; si++)
    if (e->steps[si].kind == STEP_SEGMENT) st = lend_slots(&e->steps[si]);
  for (uint32_t i = 0; st == RLX_OK && i < e->n_pool; i++) {
    if (e->pool[i].live) continue; /* lent */
    st = e->dev->vt->buffer_alloc(e->dev, e->pool[i].bytes, &e->pool[i].h);
    if (st == RLX_OK)
      e->pool[i].live = true;
    else
      st = rlx_error_context(st, "allocating a buffer of %zu bytes on '%s'", e->pool[i].bytes, be->name);
  }
  for (uint32_t si = 0; st == RLX_OK && si < e->n_steps; si++) {
    rt_step *s = &e->steps[si];
    if (s->kind != STEP_SEGMENT) continue;
    for (uint32_t k = 0; k < s->n_in; k++) s->in_h[k] = s->in[k]->h;
    for (uint32_t k = 0; k < s->n_out; k++) s->out_h[k] = s->out[k]->h;
  }
  for (rlx_id i = 0; st == RLX_OK && any_special && i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    if (nd->op == RLX_OP_Constant && val[i] && nd->attrs.Constant.data.n) {
      if (nd->attrs.Constant.data.n != val[i]->bytes)
        st = rlx_errorf(RLX_ERR_INVALID_ARG, "constant %%%u holds %zu bytes but its shape needs %zu", i,
                        nd->attrs.Constant.data.n, val[i]->bytes);
      else
        st = e->dev->vt->upload(e->dev, val[i]->h, 0, nd->attrs.Constant.data.p, val[i]->bytes);
    }
  }

  /* Staged nodes on "cpu"; control-flow bodies on this backend. */
  rlx_compile_options sub = *opt;
  sub.backend_options = NULL;
  for (uint32_t si = 0; st == RLX_OK && si < e->n_steps; si++) {
    rt_step *s = &e->steps[si];
    if (s->kind == STEP_SEGMENT) continue;
    const rlx_node *nd = s->node;
    char lb[192];
    size_t in_total = 0;
    for (uint32_t k = 0; k < s->n_in; k++) in_total += s->in[k]->bytes;
    s->host_in = st_alloc(al, s->n_in ? s->n_in : 1, sizeof *s->host_in);
    if (s->host_in) s->host_in[0].data = st_alloc(al, in_total, 1);
    s->host_out.data = st_alloc(al, s->out[0]->bytes, 1);
    s->host_out.shape = nd->shape;
    if (!s->host_in || !s->host_in[0].data || !s->host_out.data) {
      st = rlx_errorf(RLX_ERR_OOM, "out of memory staging %s", node_label(g, s->node_id, lb, sizeof lb));
      break;
    }
    size_t off = 0;
    for (uint32_t k = 0; k < s->n_in; k++) {
      s->host_in[k].data = (char *)s->host_in[0].data + off;
      s->host_in[k].shape = rlx_graph_node(g, nd->inputs[k])->shape;
      off += s->in[k]->bytes;
    }
    if (s->kind == STEP_STAGED) {
      const rlx_backend *cpu = rlx_backend_find("cpu");
      rlx_graph *one = NULL;
      if (!cpu) st = rlx_errorf(RLX_ERR_UNSUPPORTED, "host staging needs the 'cpu' backend, which is not registered");
      if (st == RLX_OK) st = staged_graph(e, nd, &one);
      if (st == RLX_OK) st = rlx_rt_compile_positional(one, cpu, &sub, &s->cpu);
      if (one) rlx_graph_free(one);
      if (st != RLX_OK) st = rlx_error_context(st, "host-staging %s", node_label(g, s->node_id, lb, sizeof lb));
      continue;
    }
    const rlx_graph *bodies[8];
    uint32_t nb = rlx_node_bodies(nd, bodies, 8);
    s->body_graphs = st_alloc(al, nb, sizeof *s->body_graphs);
    s->bodies = st_alloc(al, nb, sizeof *s->bodies);
    if (!s->body_graphs || !s->bodies) {
      st = rlx_errorf(RLX_ERR_OOM, "out of memory compiling bodies");
      break;
    }
    rlx_compile_options bo = *opt;
    for (uint32_t k = 0; k < nb && k < 8 && st == RLX_OK; k++) {
      s->body_graphs[k] = bodies[k];
      st = rlx_rt_compile_body(bodies[k], be, &bo, e->root, &s->bodies[k]);
      if (st == RLX_OK)
        s->n_bodies++;
      else
        st = rlx_error_context(st, "body '%s' of %s", rlx_graph_name(bodies[k]),
                               node_label(g, s->node_id, lb, sizeof lb));
    }
  }
  e->report.steps = e->n_steps;
  al->free(al->ctx, step_of);
  al->free(al->ctx, needed);
  al->free(al->ctx, val);
  al->free(al->ctx, map);
  return st;
}
