/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* vmap: batching over a new leading axis of size B for the named Inputs (Params and constants
 * stay shared). Every node is rebuilt in order; a node none of whose operands is batched is
 * copied unchanged, otherwise its batching rule emits the batched computation:
 *   - elementwise ops (broadcasting): batched operands get unit axes after B so they right-align
 *     with the other operands; unbatched operands broadcast as they are;
 *   - shape ops: axes shift by one (Reshape/Expand targets gain B);
 *   - Reduce / Softmax / cumulative ops / ArgMax / Sort: axes shift by one;
 *   - MatMul: batch dims broadcast (batched operands padded with unit batch axes);
 *   - DenseSolve -> BatchedDenseSolve;
 *   - NCHW ops (Conv, Conv3d, Pool, ResizeNearest2x, GroupNorm, LayerNorm2d, Interpolate3d) and
 *     last-axis norms: the vmap axis is folded into N (or simply leads);
 *   - anything else: the generic fallback slices every batched operand per batch element, applies
 *     the op to each slice and concatenates the results, so vmap never fails for lack of a rule.
 * Every output gains the leading axis (unbatched outputs are broadcast). */
#include <string.h>

#include "autodiff/ad_internal.h"
#include "passes/decompose/decompose.h"

typedef struct vm_ctx {
  const rlx_graph *f;
  rlx_graph *g;
  rlx_id *map;  /* f id -> g id */
  uint8_t *bat; /* f id -> batched */
  int64_t B;
  const rlx_allocator *al;
} vm_ctx;

static rlx_shape gshape(const vm_ctx *v, rlx_id x) { return rlx_graph_node(v->g, x)->shape; }

/* A batched value [B, *s] reshaped to [B, 1 x k, *s] so that its unbatched rank becomes `rank`. */
static rlx_status lift_rank(vm_ctx *v, rlx_id x, uint32_t rank, rlx_id *out) {
  rlx_shape s = gshape(v, x);
  uint32_t have = s.rank - 1u;
  if (have >= rank) {
    *out = x;
    return RLX_OK;
  }
  if (rank + 1u > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "vmap: rank %u + the batch axis is too large", rank);
  rlx_dim d[RLX_MAX_RANK];
  d[0] = s.dims[0];
  uint32_t k = 1;
  for (uint32_t i = have; i < rank; i++) d[k++] = 1;
  for (uint32_t i = 1; i < s.rank; i++) d[k++] = s.dims[i];
  return rlx_reshape_dims(v->g, x, rank + 1u, d, out);
}

/* An unbatched value broadcast to [B, *s]. */
static rlx_status batch_expand(vm_ctx *v, rlx_id x, rlx_id *out) {
  rlx_shape s = gshape(v, x);
  if (s.rank + 1u > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "vmap: rank %u + the batch axis is too large", s.rank);
  rlx_id u;
  RLX_TRY(rlx_unsqueeze(v->g, x, 0, &u));
  rlx_dim d[RLX_MAX_RANK];
  d[0] = v->B;
  for (uint32_t i = 0; i < s.rank; i++) d[1 + i] = s.dims[i];
  return rlx_expand_dims(v->g, u, s.rank + 1u, d, out);
}

/* Appends n's op with operands `in` and attributes `attrs` (n's when NULL); the output shape is
 * inferred from the operands (n's declared shape is the unbatched one). Ops with bodies never get
 * here (they take the fallback). */
static rlx_status emit(vm_ctx *v, const rlx_node *n, const rlx_id *in, const rlx_attrs *attrs, rlx_id *out) {
  return rlx_graph_add(v->g, n->op, in, n->n_inputs, attrs ? attrs : &n->attrs, NULL, n->name, out);
}

/* Normalises axis against the unbatched rank r and shifts it past the batch axis. */
static bool shift_axis(int64_t axis, uint32_t r, int64_t *out) {
  uint32_t a;
  if (!rlx_norm_axis(axis, r, &a)) return false;
  *out = (int64_t)a + 1;
  return true;
}

/* ---- the generic fallback: per batch element ---- */

static rlx_status fallback(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  uint32_t ni = n->n_inputs;
  rlx_id *sl = v->al->alloc(v->al->ctx, (ni ? ni : 1) * sizeof *sl);
  rlx_id *parts = v->al->alloc(v->al->ctx, (size_t)v->B * sizeof *parts);
  rlx_status s = RLX_OK;
  if (!sl || !parts) s = rlx_errorf(RLX_ERR_OOM, "out of memory in vmap");
  for (int64_t b = 0; b < v->B && !s; b++) {
    for (uint32_t i = 0; i < ni && !s; i++) {
      if (!v->bat[n->inputs[i]]) {
        sl[i] = in[i];
        continue;
      }
      rlx_shape fs = rlx_graph_node(v->f, n->inputs[i])->shape;
      rlx_id t;
      s = rlx_narrow(v->g, in[i], 0, b, 1, &t);
      if (!s) s = rlx_reshape_dims(v->g, t, fs.rank, fs.dims, &sl[i]);
    }
    rlx_id r;
    if (!s) s = rlx_pass_copy_node(v->g, n, sl, true, &r);
    if (!s) s = rlx_unsqueeze(v->g, r, 0, &parts[b]);
  }
  if (!s) s = rlx_concat(v->g, parts, (uint32_t)v->B, 0, out);
  v->al->free(v->al->ctx, sl);
  v->al->free(v->al->ctx, parts);
  return s;
}

/* ---- rules ---- */

/* Elementwise with NumPy broadcasting: batched operands are lifted to the output's unbatched rank. */
static rlx_status rule_elementwise(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  uint32_t R = n->shape.rank;
  rlx_id tmp[16];
  if (n->n_inputs > 16) return fallback(v, n, in, out);
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    if (v->bat[n->inputs[i]])
      RLX_TRY(lift_rank(v, in[i], R, &tmp[i]));
    else
      tmp[i] = in[i];
  }
  return emit(v, n, tmp, NULL, out);
}

/* Single-operand ops whose attributes name axes of operand 0. */
static rlx_status rule_axes(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  rlx_attrs a = n->attrs;
  uint32_t r = rlx_graph_node(v->f, n->inputs[0])->shape.rank;
  int64_t buf[2 * RLX_MAX_RANK + 2];
  rlx_id x0 = in[0];
  if (n->n_inputs != 1 && n->op != RLX_OP_Gather) return fallback(v, n, in, out);
  switch (n->op) {
  case RLX_OP_Reshape: {
    const rlx_ilist *ns = &n->attrs.Reshape.new_shape;
    if (ns->n + 1u > RLX_MAX_RANK) return fallback(v, n, in, out);
    buf[0] = v->B;
    for (uint32_t i = 0; i < ns->n; i++) buf[1 + i] = ns->v[i];
    a.Reshape.new_shape = (rlx_ilist){.v = buf, .n = ns->n + 1u};
    break;
  }
  case RLX_OP_Transpose: {
    const rlx_ilist *p = &n->attrs.Transpose.perm;
    buf[0] = 0;
    for (uint32_t i = 0; i < p->n; i++) buf[1 + i] = p->v[i] + 1;
    a.Transpose.perm = (rlx_ilist){.v = buf, .n = p->n + 1u};
    break;
  }
  case RLX_OP_Narrow: a.Narrow.axis = n->attrs.Narrow.axis + 1; break;
  case RLX_OP_Expand: {
    const rlx_ilist *t = &n->attrs.Expand.target_shape;
    RLX_TRY(lift_rank(v, in[0], t->n, &x0));
    buf[0] = v->B;
    for (uint32_t i = 0; i < t->n; i++) buf[1 + i] = t->v[i];
    a.Expand.target_shape = (rlx_ilist){.v = buf, .n = t->n + 1u};
    break;
  }
  case RLX_OP_Gather:
    if (v->bat[n->inputs[1]]) return fallback(v, n, in, out);
    if (!shift_axis(n->attrs.Gather.axis, r, &a.Gather.axis)) return fallback(v, n, in, out);
    break;
  case RLX_OP_Reverse: {
    const rlx_ilist *ax = &n->attrs.Reverse.axes;
    for (uint32_t i = 0; i < ax->n; i++)
      if (!shift_axis(ax->v[i], r, &buf[i])) return fallback(v, n, in, out);
    a.Reverse.axes = (rlx_ilist){.v = buf, .n = ax->n};
    break;
  }
  case RLX_OP_Pad: {
    const rlx_ilist *p = &n->attrs.Pad.pads;
    buf[0] = buf[1] = 0;
    for (uint32_t i = 0; i < p->n; i++) buf[2 + i] = p->v[i];
    a.Pad.pads = (rlx_ilist){.v = buf, .n = p->n + 2u};
    break;
  }
  case RLX_OP_Slice:
    if (!shift_axis(n->attrs.Slice.axis, r, &a.Slice.axis)) return fallback(v, n, in, out);
    break;
  case RLX_OP_Tile: {
    const rlx_ilist *p = &n->attrs.Tile.reps;
    buf[0] = 1;
    for (uint32_t i = 0; i < p->n; i++) buf[1 + i] = p->v[i];
    a.Tile.reps = (rlx_ilist){.v = buf, .n = p->n + 1u};
    break;
  }
  case RLX_OP_Roll: {
    const rlx_ilist *d = &n->attrs.Roll.dims;
    for (uint32_t i = 0; i < d->n; i++)
      if (!shift_axis(d->v[i], r, &buf[i])) return fallback(v, n, in, out);
    a.Roll.dims = (rlx_ilist){.v = buf, .n = d->n};
    break;
  }
  case RLX_OP_Trilu: break;
  case RLX_OP_Reduce: {
    const rlx_ilist *ax = &n->attrs.Reduce.axes;
    uint32_t k = 0;
    if (ax->n == 0)
      for (uint32_t i = 0; i < r; i++) buf[k++] = i + 1;
    for (uint32_t i = 0; i < ax->n; i++)
      if (!shift_axis(ax->v[i], r, &buf[k++])) return fallback(v, n, in, out);
    if (k == 0) { /* reducing a scalar: nothing to reduce */
      *out = in[0];
      return RLX_OK;
    }
    a.Reduce.axes = (rlx_ilist){.v = buf, .n = k};
    break;
  }
#define AXIS_OP(OP, F)                                                          \
  case RLX_OP_##OP:                                                             \
    if (!shift_axis(n->attrs.OP.F, r, &a.OP.F)) return fallback(v, n, in, out); \
    break;
    AXIS_OP(Softmax, axis)
    AXIS_OP(Cumsum, axis)
    AXIS_OP(CumProd, axis)
    AXIS_OP(CumMax, axis)
    AXIS_OP(ArgMax, axis)
    AXIS_OP(ArgMin, axis)
    AXIS_OP(Sort, axis)
    AXIS_OP(ArgSort, axis)
#undef AXIS_OP
  case RLX_OP_TopK:
  case RLX_OP_Fft:
  case RLX_OP_LayerNorm:
  case RLX_OP_RmsNorm:
  case RLX_OP_BatchNormInference: break; /* last axis: unaffected by a leading axis */
  default: return fallback(v, n, in, out);
  }
  rlx_id tin[2] = {x0, n->n_inputs > 1 ? in[1] : RLX_NO_ID};
  rlx_status s = emit(v, n, tin, &a, out);
  if (s == RLX_ERR_OOM) return s;
  if (s) {
    rlx_clear_error();
    return fallback(v, n, in, out);
  }
  return RLX_OK;
}

static rlx_status rule_concat(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  uint32_t ni = n->n_inputs, r = n->shape.rank;
  rlx_id *tmp = v->al->alloc(v->al->ctx, ni * sizeof *tmp);
  if (!tmp) return rlx_errorf(RLX_ERR_OOM, "out of memory in vmap");
  rlx_status s = RLX_OK;
  for (uint32_t i = 0; i < ni && !s; i++) {
    if (v->bat[n->inputs[i]])
      tmp[i] = in[i];
    else
      s = batch_expand(v, in[i], &tmp[i]);
  }
  rlx_attrs a = n->attrs;
  if (!s && !shift_axis(n->attrs.Concat.axis, r, &a.Concat.axis)) s = rlx_errorf(RLX_ERR_INVALID_ARG, "Concat axis");
  if (!s) s = emit(v, n, tmp, &a, out);
  v->al->free(v->al->ctx, tmp);
  return s;
}

/* MatMul: batched operands padded with unit batch axes up to the largest batch rank. */
static rlx_status rule_matmul(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  uint32_t ra = rlx_graph_node(v->f, n->inputs[0])->shape.rank, rb = rlx_graph_node(v->f, n->inputs[1])->shape.rank;
  uint32_t r = ra > rb ? ra : rb;
  rlx_id t[2];
  for (uint32_t i = 0; i < 2; i++) {
    if (v->bat[n->inputs[i]])
      RLX_TRY(lift_rank(v, in[i], r, &t[i]));
    else
      t[i] = in[i];
  }
  return emit(v, n, t, NULL, out);
}

static rlx_status rule_solve(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  rlx_id t[2];
  for (uint32_t i = 0; i < 2; i++) {
    if (v->bat[n->inputs[i]])
      t[i] = in[i];
    else
      RLX_TRY(batch_expand(v, in[i], &t[i]));
  }
  return rlx_build_BatchedDenseSolve(v->g, t, 2, NULL, out);
}

/* NCHW-style ops: operand 0 [B, N, ...] folded to [B*N, ...]; the other operands must be shared. */
static rlx_status rule_fold_batch(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  for (uint32_t i = 1; i < n->n_inputs; i++)
    if (v->bat[n->inputs[i]]) return fallback(v, n, in, out);
  rlx_shape s = gshape(v, in[0]);
  if (s.rank < 2 || s.dims[0] < 0 || s.dims[1] < 0) return fallback(v, n, in, out);
  rlx_dim d[RLX_MAX_RANK];
  d[0] = s.dims[0] * s.dims[1];
  for (uint32_t i = 2; i < s.rank; i++) d[i - 1] = s.dims[i];
  rlx_id x, y, tmp[16];
  if (n->n_inputs > 16) return fallback(v, n, in, out);
  RLX_TRY(rlx_reshape_dims(v->g, in[0], s.rank - 1u, d, &x));
  tmp[0] = x;
  for (uint32_t i = 1; i < n->n_inputs; i++) tmp[i] = in[i];
  rlx_status st = emit(v, n, tmp, NULL, &y);
  if (st == RLX_ERR_OOM) return st;
  if (st) {
    rlx_clear_error();
    return fallback(v, n, in, out);
  }
  rlx_shape ys = gshape(v, y);
  d[0] = v->B;
  d[1] = ys.dims[0] / v->B;
  for (uint32_t i = 1; i < ys.rank; i++) d[i + 1] = ys.dims[i];
  return rlx_reshape_dims(v->g, y, ys.rank + 1u, d, out);
}

static rlx_status batch_node(vm_ctx *v, const rlx_node *n, const rlx_id *in, rlx_id *out) {
  switch (n->op) {
  case RLX_OP_Activation:
  case RLX_OP_Cast:
  case RLX_OP_StopGradient:
  case RLX_OP_Binary:
  case RLX_OP_Compare:
  case RLX_OP_Where:
  case RLX_OP_Fma:
  case RLX_OP_Clamp:
  case RLX_OP_ReluBackward:
  case RLX_OP_ActivationBackward: return rule_elementwise(v, n, in, out);
  case RLX_OP_Reshape:
  case RLX_OP_Transpose:
  case RLX_OP_Narrow:
  case RLX_OP_Expand:
  case RLX_OP_Gather:
  case RLX_OP_Reverse:
  case RLX_OP_Pad:
  case RLX_OP_Slice:
  case RLX_OP_Tile:
  case RLX_OP_Roll:
  case RLX_OP_Trilu:
  case RLX_OP_Reduce:
  case RLX_OP_Softmax:
  case RLX_OP_Cumsum:
  case RLX_OP_CumProd:
  case RLX_OP_CumMax:
  case RLX_OP_ArgMax:
  case RLX_OP_ArgMin:
  case RLX_OP_Sort:
  case RLX_OP_ArgSort:
  case RLX_OP_TopK:
  case RLX_OP_Fft: return rule_axes(v, n, in, out);
  case RLX_OP_LayerNorm:
  case RLX_OP_RmsNorm:
  case RLX_OP_BatchNormInference:
    for (uint32_t i = 1; i < n->n_inputs; i++)
      if (v->bat[n->inputs[i]]) return fallback(v, n, in, out);
    return rule_axes(v, n, in, out);
  case RLX_OP_Concat: return rule_concat(v, n, in, out);
  case RLX_OP_MatMul: return rule_matmul(v, n, in, out);
  case RLX_OP_DenseSolve: return rule_solve(v, n, in, out);
  case RLX_OP_Conv:
  case RLX_OP_Conv3d:
  case RLX_OP_ConvTranspose2d:
  case RLX_OP_ConvTranspose3d:
  case RLX_OP_Pool:
  case RLX_OP_ResizeNearest2x:
  case RLX_OP_Interpolate3d:
  case RLX_OP_GroupNorm:
  case RLX_OP_LayerNorm2d: return rule_fold_batch(v, n, in, out);
  default: return fallback(v, n, in, out);
  }
}

rlx_status rlx_vmap(const rlx_graph *f, const char *const *batched_inputs, uint32_t n, int64_t batch, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_vmap: NULL output pointer");
  *out = NULL;
  if (!f) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_vmap: the graph is NULL");
  if (n && !batched_inputs) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_vmap: batched_inputs is NULL");
  if (batch < 1 || batch > (1 << 20))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_vmap: batch is %lld; it must be in [1, 2^20]", (long long)batch);
  for (uint32_t k = 0; k < n; k++) {
    if (!batched_inputs[k] || rlx_graph_find_leaf(f, RLX_OP_Input, batched_inputs[k]) == RLX_NO_ID)
      return rlx_errorf(RLX_ERR_NOT_FOUND, "rlx_vmap: graph @%s has no Input named \"%s\"", rlx_graph_name(f),
                        batched_inputs[k] ? batched_inputs[k] : "(null)");
  }
  const rlx_allocator *al = rlx_graph_allocator(f);
  uint32_t nn = rlx_graph_node_count(f);
  vm_ctx v = {f, NULL, NULL, NULL, batch, al};
  v.map = al->alloc(al->ctx, (size_t)(nn ? nn : 1) * sizeof *v.map);
  v.bat = al->alloc(al->ctx, nn ? nn : 1);
  rlx_id *in = NULL, *outs = NULL;
  uint32_t in_cap = 0;
  rlx_status s = RLX_OK;
  if (!v.map || !v.bat) s = rlx_errorf(RLX_ERR_OOM, "out of memory in vmap");
  if (!s) s = rlx_graph_create(al, rlx_graph_name(f), &v.g);
  for (rlx_id id = 0; id < nn && !s; id++) {
    const rlx_node *nd = rlx_graph_node(f, id);
    v.bat[id] = 0;
    if (nd->op == RLX_OP_Input) {
      bool b = false;
      for (uint32_t k = 0; k < n && !b; k++) b = strcmp(batched_inputs[k], nd->attrs.Input.name) == 0;
      if (b) {
        if (nd->shape.rank + 1u > RLX_MAX_RANK) {
          s = rlx_errorf(RLX_ERR_UNSUPPORTED, "rlx_vmap: Input \"%s\" has rank %u; adding the batch axis exceeds %d",
                         nd->attrs.Input.name, nd->shape.rank, RLX_MAX_RANK);
          break;
        }
        rlx_shape bs = nd->shape;
        for (uint32_t i = bs.rank; i > 0; i--) bs.dims[i] = bs.dims[i - 1];
        bs.dims[0] = batch;
        bs.rank++;
        s = rlx_input(v.g, nd->attrs.Input.name, bs, &v.map[id]);
        v.bat[id] = 1;
        continue;
      }
    }
    if (nd->n_inputs > in_cap) {
      al->free(al->ctx, in);
      in_cap = nd->n_inputs;
      in = al->alloc(al->ctx, in_cap * sizeof *in);
      if (!in) {
        s = rlx_errorf(RLX_ERR_OOM, "out of memory in vmap");
        break;
      }
    }
    bool any = false;
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      in[k] = v.map[nd->inputs[k]];
      any |= v.bat[nd->inputs[k]];
    }
    if (!any) {
      s = rlx_pass_copy_node(v.g, nd, in, false, &v.map[id]);
      continue;
    }
    s = batch_node(&v, nd, in, &v.map[id]);
    if (s) {
      s = rlx_error_context(s, "vmap of @%s/%%%u %s", rlx_graph_name(f), id, rlx_op_name(nd->op));
      break;
    }
    v.bat[id] = 1;
  }
  uint32_t no = rlx_graph_output_count(f);
  if (!s) {
    outs = al->alloc(al->ctx, (no ? no : 1) * sizeof *outs);
    if (!outs) s = rlx_errorf(RLX_ERR_OOM, "out of memory in vmap");
  }
  for (uint32_t k = 0; k < no && !s; k++) {
    rlx_id o = rlx_graph_outputs(f)[k];
    if (v.bat[o])
      outs[k] = v.map[o];
    else
      s = batch_expand(&v, v.map[o], &outs[k]);
  }
  if (!s) s = rlx_graph_set_outputs(v.g, outs, no);
  al->free(al->ctx, outs);
  al->free(al->ctx, in);
  al->free(al->ctx, v.map);
  al->free(al->ctx, v.bat);
  if (s) {
    rlx_graph_free(v.g);
    return s;
  }
  *out = v.g;
  return RLX_OK;
}
