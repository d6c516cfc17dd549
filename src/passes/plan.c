/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The memory planner (spec pipeline §3): one arena per executable.
 *
 *  1. Views (Reshape, same-dtype Cast, Narrow whose window is contiguous) get no slot of their own:
 *     they alias the slot of their root at a byte offset.
 *  2. Liveness over the schedule (the graph's own order): a slot is live from the step that
 *     produces its root to the last step that reads the root or any view of it. Inputs, params and
 *     constants live for the whole run (they persist across runs); the roots of graph outputs live
 *     to the end.
 *  3. Placement: slots sorted by size (largest first) go to the lowest 64-byte aligned offset
 *     among {0, end of every placed slot live at the same time} that collides with no placed slot
 *     live at the same time. Intervals are inclusive, so a node's output never shares bytes with
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

static size_t align_up(size_t v, size_t a, bool *ok) {
  size_t r;
  if (!rlx_add_size(v, a - 1, &r)) {
    *ok = false;
    return 0;
  }
  return r & ~(a - 1);
}

/* Sorting helpers (qsort has no context argument, so the keys travel with the ids). */
typedef struct slot_key {
  size_t size;
  rlx_id id;
} slot_key;

static int by_size_desc(const void *pa, const void *pb) {
  const slot_key *a = pa, *b = pb;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

typedef struct placed {
  size_t off, end;
} placed;

static int by_offset(const void *pa, const void *pb) {
  const placed *a = pa, *b = pb;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
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
  slot_key *keys = al_array(al, n, sizeof *keys);
  placed *live = al_array(al, n, sizeof *live);
  rlx_status st = RLX_OK;
  if (!p->offset || !p->size || !p->root || !p->first_use || !p->last_use || !p->schedule || !keys || !live) {
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

  /* Placement of the roots, largest first. */
  uint32_t n_keys = 0;
  for (rlx_id i = 0; i < n; i++) {
    if (p->root[i] != i) continue;
    if (!rlx_add_size(p->tensor_bytes, p->size[i], &p->tensor_bytes)) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: total tensor size overflows");
      goto done;
    }
    keys[n_keys++] = (slot_key){p->size[i], i};
  }
  qsort(keys, n_keys, sizeof *keys, by_size_desc);
  bool ok = true;
  size_t arena = 0;
  for (uint32_t k = 0; k < n_keys; k++) {
    rlx_id id = keys[k].id;
    size_t size = keys[k].size, cand = 0;
    if (size > 0) {
      /* Placed slots whose lifetime overlaps this one, by offset. */
      uint32_t n_live = 0;
      for (uint32_t j = 0; j < k; j++) {
        rlx_id o = keys[j].id;
        if (keys[j].size == 0) continue;
        if (p->first_use[o] <= p->last_use[id] && p->first_use[id] <= p->last_use[o])
          live[n_live++] = (placed){p->offset[o], p->offset[o] + p->size[o]};
      }
      qsort(live, n_live, sizeof *live, by_offset);
      for (uint32_t j = 0; j < n_live && ok; j++) {
        if (live[j].end <= cand) continue;
        size_t cend;
        if (!rlx_add_size(cand, size, &cend))
          ok = false;
        else if (live[j].off >= cend)
          break; /* the gap before this slot fits */
        else
          cand = align_up(live[j].end, PLAN_ALIGN, &ok);
      }
    }
    size_t end;
    if (!ok || !rlx_add_size(cand, size, &end)) {
      st = rlx_errorf(RLX_ERR_OVERFLOW, "memory plan: arena size overflows");
      goto done;
    }
    p->offset[id] = cand; /* a root's relative offset was 0; now it is absolute */
    if (end > arena) arena = end;
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
  if (keys) al->free(al->ctx, keys);
  if (live) al->free(al->ctx, live);
  if (st != RLX_OK) {
    rlx_plan_free(p, al);
    return st;
  }
  *out = p;
  return RLX_OK;
}
