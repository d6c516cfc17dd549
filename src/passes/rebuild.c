/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Graph rebuilding: passes build a fresh graph by copying (or replacing) the nodes of the old one in
 * order, through a map from old ids to new ids. Node copies deep-copy attributes and clone bodies
 * into the new graph. */
#include <string.h>

#include "passes/decompose/decompose.h"
#include "rlx/verify.h"

uint32_t rlx_pass_body_count(rlx_op op) {
  uint32_t nf, count = 0;
  const rlx_field *f = rlx_op_fields(op, &nf);
  for (uint32_t i = 0; i < nf; i++)
    if (f[i].type == RLX_FT_GRAPH || f[i].type == RLX_FT_OGRAPH) count++;
  return count;
}

static const rlx_field *body_field(rlx_op op, uint32_t i) {
  uint32_t nf, k = 0;
  const rlx_field *f = rlx_op_fields(op, &nf);
  for (uint32_t j = 0; j < nf; j++) {
    if (f[j].type != RLX_FT_GRAPH && f[j].type != RLX_FT_OGRAPH) continue;
    if (k++ == i) return &f[j];
  }
  return NULL;
}

rlx_graph **rlx_pass_body_slot(rlx_op op, rlx_attrs *attrs, uint32_t i) {
  const rlx_field *f = body_field(op, i);
  return f ? (rlx_graph **)((char *)attrs + f->offset) : NULL;
}

const char *rlx_pass_body_name(rlx_op op, uint32_t i) {
  const rlx_field *f = body_field(op, i);
  return f ? f->name : "?";
}

rlx_status rlx_pass_copy_node_bodies(rlx_graph *dst, const rlx_node *n, const rlx_id *inputs, rlx_graph *const *bodies,
                                     rlx_id *out) {
  rlx_attrs a = n->attrs;
  uint32_t nb = rlx_pass_body_count(n->op);
  for (uint32_t i = 0; i < nb; i++) *rlx_pass_body_slot(n->op, &a, i) = bodies[i];
  return rlx_graph_add_unchecked(dst, n->op, inputs, n->n_inputs, &a, &n->shape, n->name, out);
}

rlx_status rlx_pass_copy_node(rlx_graph *dst, const rlx_node *n, const rlx_id *inputs, bool reinfer, rlx_id *out) {
  rlx_attrs a = n->attrs;
  uint32_t nb = rlx_pass_body_count(n->op);
  for (uint32_t i = 0; i < nb; i++) {
    rlx_graph **slot = rlx_pass_body_slot(n->op, &a, i);
    if (!*slot) continue;
    rlx_graph *copy;
    RLX_TRY(rlx_graph_clone_child(dst, *slot, &copy));
    *slot = copy;
  }
  rlx_shape shape = n->shape;
  if (reinfer && !rlx_op_has(n->op, RLX_PROP_LEAF)) {
    rlx_status s = rlx_infer_shape(dst, n->op, inputs, n->n_inputs, &a, &n->shape, &shape);
    if (s)
      return rlx_error_context(s, "re-inferring %s%s%s%s", rlx_op_name(n->op), n->name ? " \"" : "",
                               n->name ? n->name : "", n->name ? "\"" : "");
  }
  return rlx_graph_add_unchecked(dst, n->op, inputs, n->n_inputs, &a, &shape, n->name, out);
}

rlx_status rlx_rebuild_begin(const rlx_graph *src, rlx_rebuild *rb) {
  if (!src || !rb) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_rebuild_begin: NULL argument");
  memset(rb, 0, sizeof *rb);
  const rlx_allocator *al = rlx_graph_allocator(src);
  uint32_t n = rlx_graph_node_count(src);
  rlx_id *map = al->alloc(al->ctx, (size_t)(n ? n : 1) * sizeof *map);
  if (!map) return rlx_errorf(RLX_ERR_OOM, "out of memory while rebuilding graph @%s", rlx_graph_name(src));
  for (uint32_t i = 0; i < n; i++) map[i] = RLX_NO_ID;
  rlx_graph *dst;
  rlx_status s = rlx_graph_create(al, rlx_graph_name(src), &dst);
  if (s) {
    al->free(al->ctx, map);
    return s;
  }
  rb->src = src;
  rb->dst = dst;
  rb->map = map;
  return RLX_OK;
}

rlx_status rlx_rebuild_copy(rlx_rebuild *rb, rlx_id id) {
  const rlx_node *n = rlx_graph_node(rb->src, id);
  if (!n) return rlx_errorf(RLX_ERR_INVALID_ARG, "rebuild: node %%%u does not exist", id);
  rlx_id small[8], *in = small;
  const rlx_allocator *al = rlx_graph_allocator(rb->src);
  if (n->n_inputs > 8) {
    in = al->alloc(al->ctx, n->n_inputs * sizeof *in);
    if (!in) return rlx_errorf(RLX_ERR_OOM, "out of memory while rebuilding graph @%s", rlx_graph_name(rb->src));
  }
  rlx_status s = RLX_OK;
  for (uint32_t i = 0; i < n->n_inputs && !s; i++) {
    in[i] = n->inputs[i] < id ? rb->map[n->inputs[i]] : RLX_NO_ID;
    if (in[i] == RLX_NO_ID)
      s = rlx_errorf(RLX_ERR_INTERNAL, "rebuild: operand %u of %%%u (%s) has not been copied yet", i, id,
                     rlx_op_name(n->op));
  }
  if (!s) s = rlx_pass_copy_node(rb->dst, n, in, false, &rb->map[id]);
  if (in != small) al->free(al->ctx, in);
  return s;
}

rlx_status rlx_rebuild_finish(rlx_rebuild *rb, rlx_graph **out) {
  uint32_t n = rlx_graph_output_count(rb->src);
  const rlx_id *o = rlx_graph_outputs(rb->src);
  const rlx_allocator *al = rlx_graph_allocator(rb->src);
  rlx_id *mapped = al->alloc(al->ctx, (size_t)(n ? n : 1) * sizeof *mapped);
  if (!mapped) return rlx_errorf(RLX_ERR_OOM, "out of memory while rebuilding graph @%s", rlx_graph_name(rb->src));
  for (uint32_t i = 0; i < n; i++) {
    mapped[i] = rb->map[o[i]];
    if (mapped[i] == RLX_NO_ID) {
      al->free(al->ctx, mapped);
      return rlx_errorf(RLX_ERR_INTERNAL, "rebuild: output %u (%%%u) was never copied", i, o[i]);
    }
  }
  rlx_status s = rlx_graph_set_outputs(rb->dst, mapped, n);
  al->free(al->ctx, mapped);
  if (s) return s;
  al->free(al->ctx, rb->map);
  *out = rb->dst;
  rb->map = NULL;
  rb->dst = NULL;
  return RLX_OK;
}

void rlx_rebuild_abort(rlx_rebuild *rb) {
  if (!rb) return;
  if (rb->src) {
    const rlx_allocator *al = rlx_graph_allocator(rb->src);
    al->free(al->ctx, rb->map);
  }
  rlx_graph_free(rb->dst);
  rb->map = NULL;
  rb->dst = NULL;
}
