/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Unfusing fusion regions: one node per chain step (ElementwiseRegion, BatchElementwiseRegion) and
 * one ResizeNearest2x per step (TransformRegion). */
#include "passes/decompose/decompose.h"

/* Emits the chain over `ops` (region operands already mapped and aligned); writes the last step. */
static rlx_status run_chain(rlx_graph *g, const rlx_node *n, const rlx_chain *ch, const rlx_id *ops, uint32_t n_ops,
                            rlx_id *out) {
  if (ch->n == 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: the chain has no steps", rlx_op_name(n->op));
  const rlx_allocator *al = rlx_graph_allocator(g);
  rlx_id *vals = al->alloc(al->ctx, ch->n * sizeof *vals);
  if (!vals) return rlx_errorf(RLX_ERR_OOM, "out of memory while unfusing a region");
  rlx_status s = RLX_OK;
  for (uint32_t j = 0; j < ch->n && !s; j++) {
    const rlx_chain_step *st = &ch->steps[j];
    const rlx_chain_operand *refs[3] = {&st->a, &st->b, &st->c};
    uint32_t used = st->kind == RLX_CHAIN_STEP_WHERE                                          ? 3
                    : st->kind == RLX_CHAIN_STEP_BINARY || st->kind == RLX_CHAIN_STEP_COMPARE ? 2
                                                                                              : 1;
    rlx_id v[3] = {0, 0, 0};
    for (uint32_t k = 0; k < used && !s; k++) {
      const rlx_chain_operand *r = refs[k];
      if (r->is_step ? r->index >= j : r->index >= n_ops)
        s = dc_unsupported(n, "step %u operand %u refers to %s %u, which is not available", j, k,
                           r->is_step ? "step" : "input", r->index);
      else
        v[k] = r->is_step ? vals[r->index] : ops[r->index];
    }
    if (s) break;
    switch (st->kind) {
    case RLX_CHAIN_STEP_ACTIVATION: s = rlx_activation(g, (rlx_act)st->sub, v[0], &vals[j]); break;
    case RLX_CHAIN_STEP_CAST: s = rlx_cast_to(g, v[0], (rlx_dtype)st->sub, &vals[j]); break;
    case RLX_CHAIN_STEP_BINARY: s = rlx_binary(g, (rlx_binop)st->sub, v[0], v[1], &vals[j]); break;
    case RLX_CHAIN_STEP_COMPARE: s = rlx_compare(g, (rlx_cmp)st->sub, v[0], v[1], &vals[j]); break;
    case RLX_CHAIN_STEP_WHERE: s = rlx_where(g, v[0], v[1], v[2], &vals[j]); break;
    default:
      s = rlx_errorf(RLX_ERR_INVALID_ARG, "%s: chain step %u has unknown kind %d", rlx_op_name(n->op), j, st->kind);
    }
  }
  if (!s) *out = vals[ch->n - 1];
  al->free(al->ctx, vals);
  return s;
}

/* NumPy right-aligned one-way broadcast of s onto t. */
static bool broadcasts_to(const rlx_shape *s, const rlx_shape *t) {
  if (s->rank > t->rank) return false;
  for (uint32_t k = 0; k < s->rank; k++) {
    rlx_dim a = s->dims[s->rank - 1 - k], b = t->dims[t->rank - 1 - k];
    if (a != 1 && a != b) return false;
  }
  return true;
}

/* Regions broadcast by trailing tiling (element gid reads operand element gid % k). An operand
 * whose shape does not already broadcast NumPy-style is reshaped to the shortest suffix of the
 * output dims holding its k elements, which reads the same elements. */
static rlx_status align_operand(rlx_graph *g, const rlx_node *n, rlx_id x, const rlx_shape *o, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  *out = x;
  if (broadcasts_to(&xs, o)) return RLX_OK;
  size_t k;
  if (rlx_shape_numel(&xs, &k) != RLX_OK)
    return dc_unsupported(n, "an operand with symbolic extents does not broadcast");
  size_t p = 1;
  for (uint32_t r = 0; r < o->rank; r++) {
    rlx_dim d = o->dims[o->rank - 1 - r];
    if (d < 0 || !rlx_mul_size(p, (size_t)d, &p)) break;
    if (p == k) return rlx_reshape_dims(g, x, r + 1, o->dims + (o->rank - 1 - r), out);
    if (p > k) break;
  }
  return dc_unsupported(n, "operand shape does not tile the output %s", "trailing axes");
}

RLX_DECOMPOSE_DECL(ElementwiseRegion) {
  (void)src;
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  uint32_t m = n->n_inputs;
  if (m == 0 || m > 16) return rlx_errorf(RLX_ERR_INVALID_ARG, "ElementwiseRegion: 1..16 operands expected");
  rlx_id ops[16];
  for (uint32_t i = 0; i < m; i++) ops[i] = in[i];
  if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) {
    if (a->prologue_input < 0 || a->prologue_input >= (int64_t)m)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "ElementwiseRegion: attribute prologue_input is out of range");
    uint32_t p = (uint32_t)a->prologue_input;
    RLX_TRY(dc_resize2x(dst, n, ops[p], &ops[p]));
  }
  for (uint32_t i = 0; i < m; i++) RLX_TRY(align_operand(dst, n, ops[i], &n->shape, &ops[i]));
  rlx_id y;
  RLX_TRY(run_chain(dst, n, &a->chain, ops, m, &y));
  /* A chain that never reads the widest operand still produces the region's full shape. */
  rlx_shape ys = dc_shape(dst, y), want = rlx_shape_make((rlx_dtype)ys.dtype, n->shape.rank, n->shape.dims);
  if (!rlx_shape_equal(&ys, &want)) RLX_TRY(rlx_expand_dims(dst, y, n->shape.rank, n->shape.dims, &y));
  *out = y;
  return RLX_OK;
}

/* TransformRegion: operand 0 upsampled (nearest 2x on the last two axes) once per step. */
RLX_DECOMPOSE_DECL(TransformRegion) {
  (void)src;
  const rlx_attrs_TransformRegion *a = &n->attrs.TransformRegion;
  rlx_id cur = in[0];
  for (uint32_t i = 0; i < a->steps.n; i++) RLX_TRY(dc_resize2x(dst, n, cur, &cur));
  *out = cur;
  return RLX_OK;
}

/* BatchElementwiseRegion: the chain (reading Input(0)) applied to every operand separately (after
 * the optional 2x prologue), the results concatenated on axis 0. */
RLX_DECOMPOSE_DECL(BatchElementwiseRegion) {
  (void)src;
  const rlx_attrs_BatchElementwiseRegion *a = &n->attrs.BatchElementwiseRegion;
  uint32_t m = n->n_inputs;
  if (m == 0 || m > 16) return rlx_errorf(RLX_ERR_INVALID_ARG, "BatchElementwiseRegion: 1..16 operands expected");
  rlx_id parts[16];
  for (uint32_t i = 0; i < m; i++) {
    rlx_id x = in[i];
    if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) RLX_TRY(dc_resize2x(dst, n, x, &x));
    RLX_TRY(run_chain(dst, n, &a->chain, &x, 1, &parts[i]));
  }
  return rlx_concat(dst, parts, m, 0, out);
}
