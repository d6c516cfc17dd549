/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Lowering a planned graph for the CUDA backend: one table row per op kind
 * ([RLX_OP_X] = lower_x) turns a node into a prepared kernel launch whose device addresses are
 * fixed at compile time (every tensor lives in the executable's arena at the plan's offset;
 * views — Reshape, same-dtype Cast, leading-axis Narrow — alias their root and need no step).
 * The claim list is the table's non-empty rows. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/ref/attention_util.h"
#include "backends/cuda/lower_internal.h"
#include "core/elem.h"
#include "infer_conv_util.h"
#include "rlx/ops.h"

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The profile by op kind, largest first, to stderr. */
static void print_profile(const rlx_cu_prog *p) {
  double total = 0;
  for (int k = 0; k < RLX_OP_COUNT; k++) total += p->prof_s[k];
  if (!p->prof_runs || total <= 0) return;
  fprintf(stderr, "cuda profile: %u runs, %.3f ms per run (steps timed one by one)\n", p->prof_runs,
          total * 1e3 / p->prof_runs);
  bool done[RLX_OP_COUNT] = {false};
  for (;;) {
    int best = -1;
    for (int k = 0; k < RLX_OP_COUNT; k++)
      if (!done[k] && p->prof_n[k] && (best < 0 || p->prof_s[k] > p->prof_s[best])) best = k;
    if (best < 0) break;
    done[best] = true;
    fprintf(stderr, "  %-28s %8.3f ms %5.1f%% (%u steps per run)\n", rlx_op_name((rlx_op)best),
            p->prof_s[best] * 1e3 / p->prof_runs, 100 * p->prof_s[best] / total, p->prof_n[best] / p->prof_runs);
  }
  /* the slowest single steps */
  for (int shown = 0; shown < 12 && p->prof_step; shown++) {
    int64_t best = -1;
    for (uint32_t i = 0; i < p->n_steps; i++)
      if (p->prof_step[i] >= 0 && (best < 0 || p->prof_step[i] > p->prof_step[best])) best = i;
    if (best < 0) break;
    const rlx_node *nd = rlx_graph_node(p->g, p->steps[best].node);
    char sb[96];
    rlx_shape_format(&nd->shape, sb, sizeof sb);
    char ib[96] = "";
    if (nd->n_inputs) rlx_shape_format(&rlx_graph_node(p->g, nd->inputs[0])->shape, ib, sizeof ib);
    fprintf(stderr, "  step %%%u %-22s %8.3f ms  out %s  in0 %s\n", p->steps[best].node, rlx_op_name(nd->op),
            p->prof_step[best] * 1e3 / p->prof_runs, sb, ib);
    p->prof_step[best] = -1;
  }
  free(p->prof_step);
}

/* ---- shape ops ---- */

static bool lower_Reshape(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  s->kind = ST_D2D; /* only reached when the plan did not alias it */
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  s->bytes = L->p->plan->size[id];
  return true;
}

static bool lower_Transpose(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  const rlx_ilist *perm = &n->attrs.Transpose.perm;
  if (perm->n != x->rank) return fail(L, "perm length does not match rank%s", "");
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  int64_t xs[RLX_MAX_RANK];
  dense_strides(x, xs);
  c->rank = x->rank;
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t pk = perm->v[k] < 0 ? perm->v[k] + x->rank : perm->v[k];
    c->dims[k] = x->dims[pk];
    c->src_stride[k] = xs[pk];
  }
  dense_strides(&n->shape, c->dst_stride);
  c->n = numel(&n->shape);
  c->src = addr(L->p, n->inputs[0]);
  c->dst = addr(L->p, id);
  c->esz = (int)rlx_dtype_size((rlx_dtype)n->shape.dtype);
  return true;
}

static bool lower_Expand(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  c->rank = n->shape.rank;
  for (uint32_t k = 0; k < n->shape.rank; k++) c->dims[k] = n->shape.dims[k];
  bcast_strides(x, &n->shape, c->src_stride);
  dense_strides(&n->shape, c->dst_stride);
  c->n = numel(&n->shape);
  c->src = addr(L->p, n->inputs[0]);
  c->dst = addr(L->p, id);
  c->esz = (int)rlx_dtype_size((rlx_dtype)n->shape.dtype);
  return true;
}

static bool lower_Narrow(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t axis = n->attrs.Narrow.axis < 0 ? n->attrs.Narrow.axis + x->rank : n->attrs.Narrow.axis;
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  size_t esz = rlx_dtype_size((rlx_dtype)x->dtype);
  c->rank = n->shape.rank;
  for (uint32_t k = 0; k < n->shape.rank; k++) c->dims[k] = n->shape.dims[k];
  dense_strides(x, c->src_stride);
  dense_strides(&n->shape, c->dst_stride);
  c->n = numel(&n->shape);
  c->src = (const uint8_t *)addr(L->p, n->inputs[0]) + (size_t)(n->attrs.Narrow.start * c->src_stride[axis]) * esz;
  c->dst = addr(L->p, id);
  c->esz = (int)esz;
  return true;
}

static bool lower_Concat(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *o = &n->shape;
  int64_t axis = n->attrs.Concat.axis < 0 ? n->attrs.Concat.axis + o->rank : n->attrs.Concat.axis;
  rlx_cu_copy *c = copies(s, n->n_inputs);
  if (!c) return fail(L, "out of %s", "memory");
  int64_t os[RLX_MAX_RANK];
  dense_strides(o, os);
  size_t esz = rlx_dtype_size((rlx_dtype)o->dtype);
  int64_t at = 0;
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    const rlx_shape *x = shape_of(L->p, n->inputs[i]);
    c[i].rank = o->rank;
    for (uint32_t k = 0; k < o->rank; k++) {
      c[i].dims[k] = x->dims[k];
      c[i].dst_stride[k] = os[k];
    }
    dense_strides(x, c[i].src_stride);
    c[i].n = numel(x);
    c[i].src = addr(L->p, n->inputs[i]);
    c[i].dst = (uint8_t *)addr(L->p, id) + (size_t)(at * os[axis]) * esz;
    c[i].esz = (int)esz;
    at += x->dims[axis];
  }
  return true;
}

static bool lower_Gather(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]);
  if (x->rank == 0) return fail(L, "operand 0 (table) is a scalar; Gather needs rank >= 1%s", "");
  if (is_complex(ix->dtype) || ix->dtype == RLX_BOOL)
    return fail(L, "indices must be an integer dtype or f32, got %s", rlx_dtype_name((rlx_dtype)ix->dtype));
  int64_t axis = n->attrs.Gather.axis < 0 ? n->attrs.Gather.axis + x->rank : n->attrs.Gather.axis;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; k++) outer *= x->dims[k];
  for (uint32_t k = (uint32_t)axis + 1; k < x->rank; k++) inner *= x->dims[k];
  s->kind = ST_GATHER;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->a = outer;
  s->b = x->dims[axis];
  s->c2 = inner;
  s->d = numel(ix);
  s->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  s->dtype = ix->dtype;
  return true;
}

/* ---- reductions and norms ---- */

static bool lower_Reduce(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  const rlx_attrs_Reduce *a = &n->attrs.Reduce;
  if (is_complex(x->dtype) && (a->op == RLX_REDUCE_MAX || a->op == RLX_REDUCE_MIN))
    return fail(L, "Max / Min are not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)x->dtype));
  uint32_t mask = 0;
  for (uint32_t k = 0; k < a->axes.n; k++) {
    int64_t ax = a->axes.v[k] < 0 ? a->axes.v[k] + x->rank : a->axes.v[k];
    if (ax < 0 || ax >= x->rank) return fail(L, "an axis is out of range%s", "");
    mask |= 1u << ax;
  }
  if (a->axes.n == 0) mask = (1u << x->rank) - 1;
  s->kind = ST_REDUCE;
  s->op = a->op;
  s->dtype = x->dtype;
  s->rank = x->rank;
  for (uint32_t k = 0; k < x->rank; k++) s->dims[k] = x->dims[k];
  s->mask = mask;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}

static bool lower_Softmax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype))
    return fail(L, "Softmax needs a float dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  int64_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    int64_t ax = n->attrs.Softmax.axis < 0 ? n->attrs.Softmax.axis + x->rank : n->attrs.Softmax.axis;
    if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
    for (int64_t k = 0; k < ax; k++) outer *= x->dims[k];
    len = x->dims[ax];
    for (uint32_t k = (uint32_t)ax + 1; k < x->rank; k++) inner *= x->dims[k];
  }
  s->kind = ST_SOFTMAX;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  s->a = outer;
  s->b = len;
  s->c2 = inner;
  return true;
}

static bool norm_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int rms, double eps) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype))
    return fail(L, "x must be a float tensor, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank == 0) return fail(L, "x needs rank >= 1%s", "");
  int64_t C = x->dims[x->rank - 1];
  for (int i = 1; i <= 2; i++) {
    const rlx_shape *gb = shape_of(L->p, n->inputs[i]);
    if (gb->dtype != x->dtype || numel(gb) != C)
      return fail(L, "gamma / beta must hold one %s per channel", rlx_dtype_name((rlx_dtype)x->dtype));
  }
  s->kind = ST_NORM;
  s->rms = rms;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->aux[1] = addr(L->p, n->inputs[2]);
  s->dst = addr(L->p, id);
  s->b = C;
  s->a = C ? numel(x) / C : 0;
  s->eps = eps;
  return true;
}
static bool lower_LayerNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return norm_setup(L, id, n, s, 0, n->attrs.LayerNorm.eps);
}
static bool lower_RmsNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return norm_setup(L, id, n, s, 1, n->attrs.RmsNorm.eps);
}

/* ---- MatMul ---- */

bool lower_MatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *a = shape_of(L->p, n->inputs[0]), *b = shape_of(L->p, n->inputs[1]), *o = &n->shape;
  if (a->rank < 2 || b->rank < 2) return fail(L, "MatMul needs rank >= 2 operands%s", "");
  int64_t M = a->dims[a->rank - 2], K = a->dims[a->rank - 1], N = b->dims[b->rank - 1];
  uint32_t br = o->rank - 2;
  int64_t batches = 1;
  for (uint32_t k = 0; k < br; k++) batches *= o->dims[k];
  s->kind = ST_MATMUL;
  s->dtype = o->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->a = M;
  s->b = N;
  s->c2 = K;
  s->d = batches;
  s->a_off = calloc((size_t)(batches ? batches : 1), sizeof(int64_t));
  s->b_off = calloc((size_t)(batches ? batches : 1), sizeof(int64_t));
  if (!s->a_off || !s->b_off) return fail(L, "out of %s", "memory");
  /* batch shapes of a and b, right-aligned against the output's */
  rlx_shape ob = *o, ab = *a, bb = *b;
  ob.rank = (uint8_t)br;
  ab.rank = (uint8_t)(a->rank - 2);
  bb.rank = (uint8_t)(b->rank - 2);
  int64_t as[RLX_MAX_RANK], bs[RLX_MAX_RANK];
  bcast_strides(&ab, &ob, as);
  bcast_strides(&bb, &ob, bs);
  for (int64_t i = 0; i < batches; i++) {
    int64_t rem = i, ao = 0, bo = 0;
    for (int k = (int)br - 1; k >= 0; k--) {
      int64_t c = rem % ob.dims[k];
      rem /= ob.dims[k];
      ao += c * as[k];
      bo += c * bs[k];
    }
    s->a_off[i] = ao * M * K;
    s->b_off[i] = bo * K * N;
  }
  return true;
}

static bool lower_Reverse(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  uint32_t flip = 0;
  for (uint32_t k = 0; k < n->attrs.Reverse.axes.n; k++) {
    int64_t ax = n->attrs.Reverse.axes.v[k] < 0 ? n->attrs.Reverse.axes.v[k] + x->rank : n->attrs.Reverse.axes.v[k];
    if (ax < 0 || ax >= x->rank) return fail(L, "attribute axes: an axis is out of range%s", "");
    flip |= 1u << ax;
  }
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  size_t esz = rlx_dtype_size((rlx_dtype)x->dtype);
  int64_t start = 0;
  c->rank = x->rank;
  dense_strides(x, c->src_stride);
  for (uint32_t k = 0; k < x->rank; k++) {
    c->dims[k] = x->dims[k];
    if ((flip & (1u << k)) && x->dims[k] > 0) {
      start += (x->dims[k] - 1) * c->src_stride[k];
      c->src_stride[k] = -c->src_stride[k];
    }
  }
  dense_strides(x, c->dst_stride);
  c->n = numel(x);
  c->src = (const uint8_t *)addr(L->p, n->inputs[0]) + (size_t)start * esz;
  c->dst = addr(L->p, id);
  c->esz = (int)esz;
  return true;
}

/* Conv / Conv3d / ConvTranspose2d / ConvTranspose3d through one geometry. */
bool conv_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, bool transposed,
                const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation,
                const rlx_ilist *output_padding, int64_t groups) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *w = shape_of(L->p, n->inputs[1]), *o = &n->shape;
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype))
    return fail(L, "x must be a float tensor, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank != 2 + nsp || w->rank != 2 + nsp || o->rank != 2 + nsp)
    return fail(L, "x and weight need rank 2 + spatial axes%s", "");
  if (groups < 1 || x->dims[1] % groups) return fail(L, "attribute groups must divide the input channels%s", "");
  cu_geom cg;
  if (cu_parse(nsp, stride, padding, dilation, output_padding, &cg) != RLX_OK)
    return fail(L, "bad geometry: %s", rlx_last_error());
  rlx_cu_conv_geom *g = &s->geom;
  g->N = x->dims[0];
  g->Cin = x->dims[1];
  g->Cout = o->dims[1];
  g->G = groups;
  uint32_t off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    g->in[off + i] = x->dims[2 + i];
    g->out[off + i] = o->dims[2 + i];
    g->k[off + i] = w->dims[2 + i];
    g->s[off + i] = cg.s[i];
    g->d[off + i] = cg.d[i];
    g->pb[off + i] = cg.pb[i];
  }
  s->kind = ST_CONV;
  s->rms = transposed;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  if (!transposed &&
      rlx_cu_dnn_create(L->p->ctx, RLX_CU_DNN_FWD, s->dtype, (int)nsp, g, s->src, s->aux[0], s->dst, &s->dnn) != RLX_OK)
    return fail(L, "%s", rlx_last_error());
  return true;
}
static bool lower_Conv(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv *a = &n->attrs.Conv;
  return conv_setup(L, id, n, s, 2, false, &a->stride, &a->padding, &a->dilation, NULL, a->groups);
}
static bool lower_Conv3d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv3d *a = &n->attrs.Conv3d;
  return conv_setup(L, id, n, s, 3, false, &a->stride, &a->padding, &a->dilation, NULL, a->groups);
}
static bool lower_ConvTranspose2d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_ConvTranspose2d *a = &n->attrs.ConvTranspose2d;
  return conv_setup(L, id, n, s, 2, true, &a->stride, &a->padding, &a->dilation, &a->output_padding, a->groups);
}
static bool lower_ConvTranspose3d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_ConvTranspose3d *a = &n->attrs.ConvTranspose3d;
  return conv_setup(L, id, n, s, 3, true, &a->stride, &a->padding, &a->dilation, &a->output_padding, a->groups);
}

static bool lower_Pool(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype) && !rlx_dtype_is_int((rlx_dtype)x->dtype))
    return fail(L, "Pool needs a real dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN) return fail(L, "Pool supports Max and Mean only%s", "");
  if (x->rank != 4) return fail(L, "operand 0 must be NCHW%s", "");
  cu_geom cg;
  if (cu_pool_geom(2, &a->kernel_size, &a->stride, &a->padding, &cg) != RLX_OK)
    return fail(L, "bad geometry: %s", rlx_last_error());
  s->kind = ST_POOL;
  s->op = a->kind == RLX_REDUCE_MAX;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  s->dims[0] = x->dims[0] * x->dims[1];
  s->dims[1] = x->dims[2];
  s->dims[2] = x->dims[3];
  s->dims[3] = n->shape.dims[2];
  s->dims[4] = n->shape.dims[3];
  for (int i = 0; i < 2; i++) {
    s->pk[i] = cg.k[i];
    s->ps[i] = cg.s[i];
    s->ppb[i] = cg.pb[i];
  }
  return true;
}

static bool lower_Cumsum(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    int64_t ax = n->attrs.Cumsum.axis < 0 ? n->attrs.Cumsum.axis + x->rank : n->attrs.Cumsum.axis;
    if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
    for (int64_t k = 0; k < ax; k++) outer *= x->dims[k];
    len = x->dims[ax];
    for (uint32_t k = (uint32_t)ax + 1; k < x->rank; k++) inner *= x->dims[k];
  }
  s->kind = ST_CUMSUM;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  s->a = outer;
  s->b = len;
  s->c2 = inner;
  s->rms = n->attrs.Cumsum.exclusive;
  return true;
}

static bool elem_addressing(lower_ctx *L, const rlx_node *n, rlx_cu_scatter *sc, int64_t axis_attr, uint32_t data_i,
                            uint32_t index_i) {
  const rlx_shape *d = shape_of(L->p, n->inputs[data_i]), *ix = shape_of(L->p, n->inputs[index_i]);
  if (d->rank == 0) return fail(L, "operand 0 (data) is a scalar; it needs rank >= %s", "1");
  if (ix->rank != d->rank) return fail(L, "indices need data's rank%s", "");
  if (is_complex(ix->dtype) || ix->dtype == RLX_BOOL)
    return fail(L, "indices must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)ix->dtype));
  int64_t ax = axis_attr < 0 ? axis_attr + d->rank : axis_attr;
  if (ax < 0 || ax >= d->rank) return fail(L, "attribute axis is out of range%s", "");
  sc->mode = 0;
  sc->wrap = 1;
  sc->rank = d->rank;
  sc->axis = (int)ax;
  sc->axis_len = d->dims[ax];
  for (uint32_t k = 0; k < d->rank; k++) sc->idx_dims[k] = ix->dims[k];
  dense_strides(d, sc->data_stride);
  sc->n_updates = numel(ix);
  sc->index = addr(L->p, n->inputs[index_i]);
  sc->idx_dtype = ix->dtype;
  return true;
}

static bool scratch_for(lower_ctx *L, rlx_cu_scatter *sc) {
  if (rlx_cu_malloc(L->p->ctx, (size_t)(sc->n_out ? sc->n_out : 1) * 32, &sc->scratch) != RLX_OK)
    return fail(L, "no device memory for the scatter scratch: %s", rlx_last_error());
  return true;
}

static bool lower_ScatterElements(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_ScatterElements *a = &n->attrs.ScatterElements;
  int t = n->shape.dtype;
  if (is_complex(t) && (a->reduction == RLX_SCATTER_REDUCTION_MAX || a->reduction == RLX_SCATTER_REDUCTION_MIN))
    return fail(L, "Max / Min are not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  rlx_cu_scatter *sc = &s->sc;
  if (!elem_addressing(L, n, sc, a->axis, 0, 1)) return false;
  sc->red = a->reduction;
  sc->dtype = t;
  sc->n_out = numel(&n->shape);
  sc->data = addr(L->p, n->inputs[0]);
  sc->updates = addr(L->p, n->inputs[2]);
  sc->out = addr(L->p, id);
  s->kind = ST_SCATTER;
  return scratch_for(L, sc);
}

static bool lower_ScatterAdd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *u = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]), *o = &n->shape;
  if (u->rank == 0 || o->rank != u->rank) return fail(L, "updates and output need the same rank >= %s", "1");
  if (is_complex(ix->dtype) || ix->dtype == RLX_BOOL)
    return fail(L, "indices must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)ix->dtype));
  int64_t ax = n->attrs.ScatterAdd.axis < 0 ? n->attrs.ScatterAdd.axis + u->rank : n->attrs.ScatterAdd.axis;
  if (ax < 0 || ax >= u->rank) return fail(L, "attribute axis is out of range%s", "");
  rlx_cu_scatter *sc = &s->sc;
  sc->mode = 1;
  sc->red = RLX_SCATTER_REDUCTION_ADD;
  sc->dtype = o->dtype;
  sc->idx_dtype = ix->dtype;
  sc->outer = 1;
  sc->inner = 1;
  for (int64_t k = 0; k < ax; k++) sc->outer *= u->dims[k];
  for (uint32_t k = (uint32_t)ax + 1; k < u->rank; k++) sc->inner *= u->dims[k];
  sc->U = u->dims[ax];
  sc->axis_len = o->dims[ax];
  sc->n_updates = numel(u);
  sc->n_out = numel(o);
  sc->data = NULL;
  sc->index = addr(L->p, n->inputs[1]);
  sc->updates = addr(L->p, n->inputs[0]);
  sc->out = addr(L->p, id);
  s->kind = ST_SCATTER;
  return scratch_for(L, sc);
}

static bool lower_GatherElements(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  rlx_cu_scatter *sc = &s->sc;
  if (!elem_addressing(L, n, sc, n->attrs.GatherElements.axis, 0, 1)) return false;
  sc->dtype = n->shape.dtype;
  sc->data = addr(L->p, n->inputs[0]);
  sc->out = addr(L->p, id);
  s->esz = (int)rlx_dtype_size((rlx_dtype)n->shape.dtype);
  s->kind = ST_GATHER_EL;
  return true;
}

static rlx_cu_attn_view attn_view_of(const attn_view *v) {
  return (rlx_cu_attn_view){
      .B = (int64_t)v->B, .S = (int64_t)v->S, .H = (int64_t)v->H, .D = (int64_t)v->D, .kind = v->kind};
}

/* Validation and layouts come from the CPU reference's checker (the same rules, one place).
 * in: the node's operands; mask_at: where a Custom / Bias mask operand sits (3 forward, 4
 * backward). Fills t's geometry, operands and mask; not t->out. */
static bool attn_fill(lower_ctx *L, const rlx_node *n, uint32_t mask_at, const attn_params *ap, rlx_cu_attn *t) {
  bool has_mask = ap->mask == RLX_MASK_CUSTOM || ap->mask == RLX_MASK_BIAS;
  if (n->n_inputs != mask_at + (has_mask ? 1u : 0u)) return fail(L, "wrong operand count for this mask kind%s", "");
  rlx_tensor in[5];
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    in[i].shape = *shape_of(L->p, n->inputs[i]);
    in[i].data = addr(L->p, n->inputs[i]);
  }
  static const char *const names[] = {"Q", "K", "V"};
  attn_geom g;
  rlx_dtype dt = (rlx_dtype)in[0].shape.dtype;
  if (!rlx_dtype_is_float(dt)) return fail(L, "attention needs a float dtype, got %s", rlx_dtype_name(dt));
  if (rlx_ref_attn_check(n, in, mask_at, dt, ap, names, &g) != RLX_OK) return fail(L, "%s", rlx_last_error());
  t->q = attn_view_of(&g.q);
  t->k = attn_view_of(&g.k);
  t->v = attn_view_of(&g.v);
  t->o = t->q;
  t->o.D = ap->v_head_dim;
  t->B = (int64_t)g.B;
  t->Sq = (int64_t)g.Sq;
  t->Sk = (int64_t)g.Sk;
  t->H = (int64_t)g.H;
  t->group = (int64_t)g.group;
  t->window = g.window;
  t->mask = g.mask;
  t->dtype = dt;
  t->per_query = g.per_query;
  t->capped = g.capped;
  t->scale = g.scale;
  t->cap = g.cap;
  t->Q = in[0].data;
  t->K = in[1].data;
  t->V = in[2].data;
  if (has_mask) {
    t->M = in[mask_at].data;
    t->mask_dtype = in[mask_at].shape.dtype;
    if (ap->mask == RLX_MASK_BIAS) bcast_strides(&in[mask_at].shape, &g.full, t->bias_stride);
  }
  return true;
}

static bool lower_Attention(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  int64_t Dv = a->v_head_dim.has ? a->v_head_dim.v : a->head_dim;
  attn_params ap = {.heads = a->num_heads,
                    .head_dim = a->head_dim,
                    .v_head_dim = Dv,
                    .window = a->window,
                    .mask = a->mask_kind,
                    .score_scale = a->score_scale,
                    .softcap = a->attn_logit_softcap};
  if (!attn_fill(L, n, 3, &ap, &s->at)) return false;
  s->at.out = addr(L->p, id);
  s->kind = ST_ATTN;
  return true;
}

static bool same_opt(rlx_of32 a, rlx_of32 b) { return a.has == b.has && (!a.has || a.v == b.v); }

/* Two AttentionBackward nodes of one attention: the same operands and attributes but wrt. */
bool attn_siblings(const rlx_node *a, const rlx_node *b) {
  if (a->op != RLX_OP_AttentionBackward || b->op != RLX_OP_AttentionBackward || a->n_inputs != b->n_inputs)
    return false;
  for (uint32_t k = 0; k < a->n_inputs; k++)
    if (a->inputs[k] != b->inputs[k]) return false;
  const rlx_attrs_AttentionBackward *x = &a->attrs.AttentionBackward, *y = &b->attrs.AttentionBackward;
  return x->num_heads == y->num_heads && x->head_dim == y->head_dim && x->mask_kind == y->mask_kind &&
         x->window == y->window && same_opt(x->score_scale, y->score_scale) &&
         same_opt(x->attn_logit_softcap, y->attn_logit_softcap);
}

/* The Attention forward of backward node bw: the same q, k, v, no mask operand, the same
 * attributes, values of q's head_dim. */
static bool attn_forward_of(const rlx_node *f, const rlx_node *bw) {
  if (f->op != RLX_OP_Attention || f->n_inputs != 3 || bw->n_inputs != 4) return false;
  for (uint32_t k = 0; k < 3; k++)
    if (f->inputs[k] != bw->inputs[k]) return false;
  const rlx_attrs_Attention *x = &f->attrs.Attention;
  int64_t mk, hd, nh, win;
  rlx_of32 sc, cap;
  if (bw->op == RLX_OP_AttentionBackward) {
    const rlx_attrs_AttentionBackward *y = &bw->attrs.AttentionBackward;
    mk = y->mask_kind, hd = y->head_dim, nh = y->num_heads, win = y->window, sc = y->score_scale,
    cap = y->attn_logit_softcap;
  } else if (bw->op == RLX_OP_AttentionBackwardAll) {
    const rlx_attrs_AttentionBackwardAll *y = &bw->attrs.AttentionBackwardAll;
    mk = y->mask_kind, hd = y->head_dim, nh = y->num_heads, win = y->window, sc = y->score_scale,
    cap = y->attn_logit_softcap;
  } else {
    return false;
  }
  return x->num_heads == nh && x->head_dim == hd && (!x->v_head_dim.has || x->v_head_dim.v == hd) &&
         (int64_t)x->mask_kind == mk && x->window == win && same_opt(x->score_scale, sc) &&
         same_opt(x->attn_logit_softcap, cap);
}

/* FlashAttention's saved statistics: when the forward of this backward runs earlier in the same
 * program on the flash kernels, it also writes each row's log-sum-exp into the backward's
 * statistics and a copy of its output (the planned output buffer may be reused before the
 * backward runs), so the backward computes only delta = <dy, out> instead of running the
 * forward again (0.30 ms of the bf16 GPT-2 block's 4.8 ms on the H200, 0.70 of 13.3 in f32). */
static void attn_bw_reuse_forward(rlx_cu_prog *p, const rlx_node *n, rlx_cu_attn_bw *w) {
  if (!rlx_cu_flash_fits(&w->a)) return;
  for (uint32_t i = 0; i < p->n_steps; i++) {
    cu_step *f = &p->steps[i];
    if (f->kind != ST_ATTN || f->at.save_lse || !attn_forward_of(rlx_graph_node(p->g, f->node), n) ||
        !rlx_cu_flash_fits(&f->at) || f->at.dtype != w->a.dtype)
      continue;
    size_t bytes = p->plan->size[f->node];
    if (rlx_cu_malloc(p->ctx, bytes ? bytes : 1, &f->scratch) != RLX_OK) return; /* then it recomputes */
    f->at.save_out = f->scratch;
    f->at.save_lse = w->stats;
    w->saved_out = f->scratch;
    w->compute_stats = 2;
    return;
  }
}

/* Common to both backward kinds: the geometry, dy, and the per-row statistics (lse, delta),
 * shared with an earlier AttentionBackward of the same operands and attributes (autodiff emits
 * one per wanted gradient): the first computes them, the others read them. */
static bool attn_bw_setup(lower_ctx *L, const rlx_node *n, const attn_params *ap, cu_step *s) {
  rlx_cu_attn_bw *w = &s->abw;
  if (!attn_fill(L, n, 4, ap, &w->a)) return false;
  if (!rlx_shape_equal(shape_of(L->p, n->inputs[3]), shape_of(L->p, n->inputs[0])))
    return fail(L, "operand 3 (dy) must have q's shape%s", "");
  if (w->a.q.D > 512) return fail(L, "attention backward head_dim over %s", "512");
  w->G = addr(L->p, n->inputs[3]);
  s->kind = ST_ATTN_BW;
  rlx_cu_prog *p = L->p;
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const cu_step *o = &p->steps[i];
    if (o->kind != ST_ATTN_BW || !o->scratch || !attn_siblings(rlx_graph_node(p->g, o->node), n)) continue;
    w->stats = o->scratch;
    w->compute_stats = 0;
    return true;
  }
  size_t rows = (size_t)(w->a.B * w->a.H * w->a.Sq);
  if (rlx_cu_malloc(p->ctx, (rows ? rows : 1) * 2 * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the attention statistics: %s", rlx_last_error());
  w->stats = s->scratch;
  w->compute_stats = 1;
  attn_bw_reuse_forward(p, n, w);
  return true;
}

/* dk and dv come from one kernel for the price of dk and a little: the first of a Key and a Value
 * sibling computes both, the other's gradient into an owned buffer (s->extra, extra_wrt), which
 * the second step copies into its slot. */
static bool attn_bw_pair(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int wrt, void *out) {
  rlx_cu_prog *p = L->p;
  size_t bytes = p->plan->size[id];
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const cu_step *o = &p->steps[i];
    if (o->kind == ST_ATTN_BW && o->extra && o->extra_wrt == wrt && attn_siblings(rlx_graph_node(p->g, o->node), n)) {
      s->kind = ST_D2D;
      s->src = o->extra;
      s->dst = out;
      s->bytes = bytes;
      return true;
    }
  }
  /* a sibling wanting the other one, scheduled after this node? */
  int other = wrt == RLX_ATTN_WRT_KEY ? RLX_ATTN_WRT_VALUE : RLX_ATTN_WRT_KEY;
  uint32_t k = 0;
  while (k < p->plan->n_schedule && p->plan->schedule[k] != id) k++;
  for (k++; k < p->plan->n_schedule; k++) {
    rlx_id j = p->plan->schedule[k];
    const rlx_node *m = rlx_graph_node(p->g, j);
    if (p->plan->root[j] != j || !attn_siblings(m, n) || m->attrs.AttentionBackward.wrt != other) continue;
    if (rlx_cu_malloc(p->ctx, bytes ? bytes : 1, &s->extra) != RLX_OK) break; /* then each computes its own */
    s->extra_wrt = other;
    if (other == RLX_ATTN_WRT_KEY)
      s->abw.dk = s->extra;
    else
      s->abw.dv = s->extra;
    break;
  }
  return false;
}

static bool lower_AttentionBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_AttentionBackward *a = &n->attrs.AttentionBackward;
  if (a->wrt < 0 || a->wrt >= RLX_ATTN_WRT_COUNT) return fail(L, "attribute wrt is not Query, Key or Value%s", "");
  attn_params ap = {.heads = a->num_heads,
                    .head_dim = a->head_dim,
                    .v_head_dim = a->head_dim,
                    .window = a->window,
                    .mask = a->mask_kind,
                    .score_scale = a->score_scale,
                    .softcap = a->attn_logit_softcap};
  void *out = addr(L->p, id);
  if (a->wrt != RLX_ATTN_WRT_QUERY && attn_bw_pair(L, id, n, s, a->wrt, out)) return true; /* a copy */
  if (!attn_bw_setup(L, n, &ap, s)) return false;
  if (a->wrt == RLX_ATTN_WRT_QUERY)
    s->abw.dq = out;
  else if (a->wrt == RLX_ATTN_WRT_KEY)
    s->abw.dk = out;
  else
    s->abw.dv = out;
  return true;
}

static bool lower_AttentionBackwardAll(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_AttentionBackwardAll *a = &n->attrs.AttentionBackwardAll;
  attn_params ap = {.heads = a->num_heads,
                    .head_dim = a->head_dim,
                    .v_head_dim = a->head_dim,
                    .window = a->window,
                    .mask = a->mask_kind,
                    .score_scale = a->score_scale,
                    .softcap = a->attn_logit_softcap};
  if (!attn_bw_setup(L, n, &ap, s)) return false;
  size_t esz = rlx_dtype_size((rlx_dtype)n->shape.dtype);
  uint8_t *out = addr(L->p, id);
  size_t nq = (size_t)numel(shape_of(L->p, n->inputs[0])), nk = (size_t)numel(shape_of(L->p, n->inputs[1]));
  s->abw.dq = out;
  s->abw.dk = out + nq * esz;
  s->abw.dv = out + (nq + nk) * esz;
  return true;
}

static bool lower_Rope(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Rope *a = &n->attrs.Rope;
  rlx_tensor in[3], out = {.data = addr(L->p, id), .shape = n->shape};
  for (uint32_t i = 0; i < 3; i++) {
    in[i].shape = *shape_of(L->p, n->inputs[i]);
    in[i].data = addr(L->p, n->inputs[i]);
  }
  rope_geom g;
  if (rlx_ref_rope_check(n, in, &out, a->head_dim, a->n_rot, (int)a->style, "x", &g) != RLX_OK)
    return fail(L, "%s", rlx_last_error());
  rlx_cu_rope *r = &s->rope;
  r->batch = (int64_t)g.batch;
  r->S = (int64_t)g.S;
  r->heads = (int64_t)g.heads;
  r->hd = (int64_t)g.hd;
  r->nr = (int64_t)g.nr;
  r->width = (int64_t)g.width;
  r->per_token = g.per_token;
  r->neox = g.neox;
  r->dtype = n->shape.dtype;
  r->x = in[0].data;
  r->cos = in[1].data;
  r->sin = in[2].data;
  r->out = out.data;
  s->kind = ST_ROPE;
  return true;
}

/* ---- the table ---- */

static const lower_fn lower_table[RLX_OP_COUNT] = {
    [RLX_OP_Activation] = lower_Activation,
    [RLX_OP_Cast] = lower_Cast,
    [RLX_OP_StopGradient] = lower_StopGradient,
    [RLX_OP_Binary] = lower_Binary,
    [RLX_OP_Compare] = lower_Compare,
    [RLX_OP_Where] = lower_Where,
    [RLX_OP_Fma] = lower_Fma,
    [RLX_OP_Clamp] = lower_Clamp,
    [RLX_OP_MatMul] = lower_MatMul,
    [RLX_OP_Reshape] = lower_Reshape,
    [RLX_OP_Transpose] = lower_Transpose,
    [RLX_OP_Narrow] = lower_Narrow,
    [RLX_OP_Concat] = lower_Concat,
    [RLX_OP_Expand] = lower_Expand,
    [RLX_OP_Gather] = lower_Gather,
    [RLX_OP_Reduce] = lower_Reduce,
    [RLX_OP_Softmax] = lower_Softmax,
    [RLX_OP_LayerNorm] = lower_LayerNorm,
    [RLX_OP_RmsNorm] = lower_RmsNorm,
    [RLX_OP_Reverse] = lower_Reverse,
    [RLX_OP_Conv] = lower_Conv,
    [RLX_OP_Conv3d] = lower_Conv3d,
    [RLX_OP_ConvTranspose2d] = lower_ConvTranspose2d,
    [RLX_OP_ConvTranspose3d] = lower_ConvTranspose3d,
    [RLX_OP_Pool] = lower_Pool,
    [RLX_OP_Cumsum] = lower_Cumsum,
    [RLX_OP_ScatterAdd] = lower_ScatterAdd,
    [RLX_OP_ScatterElements] = lower_ScatterElements,
    [RLX_OP_GatherElements] = lower_GatherElements,
    [RLX_OP_Attention] = lower_Attention,
    [RLX_OP_AttentionBackward] = lower_AttentionBackward,
    [RLX_OP_AttentionBackwardAll] = lower_AttentionBackwardAll,
    [RLX_OP_Rope] = lower_Rope,
    [RLX_OP_ReluBackward] = lower_ReluBackward,
    [RLX_OP_ActivationBackward] = lower_ActivationBackward,
    [RLX_OP_SoftmaxCrossEntropy] = lower_SoftmaxCrossEntropy,
    [RLX_OP_SoftmaxCrossEntropyWithLogits] = lower_SoftmaxCrossEntropyWithLogits,
    [RLX_OP_SoftmaxCrossEntropyBackward] = lower_SoftmaxCrossEntropyBackward,
    [RLX_OP_LayerNormBackwardInput] = lower_LayerNormBackwardInput,
    [RLX_OP_LayerNormBackwardGamma] = lower_LayerNormBackwardGamma,
    [RLX_OP_RmsNormBackwardInput] = lower_RmsNormBackwardInput,
    [RLX_OP_RmsNormBackwardGamma] = lower_RmsNormBackwardGamma,
    [RLX_OP_RmsNormBackwardBeta] = lower_RmsNormBackwardBeta,
    [RLX_OP_MaxPool2dBackward] = lower_MaxPool2dBackward,
    [RLX_OP_MaxPool3dBackward] = lower_MaxPool3dBackward,
    [RLX_OP_Conv2dBackwardInput] = lower_Conv2dBackwardInput,
    [RLX_OP_Conv3dBackwardInput] = lower_Conv3dBackwardInput,
    [RLX_OP_Conv2dBackwardWeight] = lower_Conv2dBackwardWeight,
    [RLX_OP_Conv3dBackwardWeight] = lower_Conv3dBackwardWeight,
    [RLX_OP_ArgMax] = lower_ArgMax,
    [RLX_OP_ArgMin] = lower_ArgMin,
    [RLX_OP_CumProd] = lower_CumProd,
    [RLX_OP_CumMax] = lower_CumMax,
    [RLX_OP_Sort] = lower_Sort,
    [RLX_OP_ArgSort] = lower_ArgSort,
    [RLX_OP_TopK] = lower_TopK,
    [RLX_OP_RngUniform] = lower_RngUniform,
    [RLX_OP_RngNormal] = lower_RngNormal,
    [RLX_OP_Trilu] = lower_Trilu,
    [RLX_OP_Slice] = lower_Slice,
    [RLX_OP_Pad] = lower_Pad,
    [RLX_OP_Tile] = lower_Tile,
    [RLX_OP_Roll] = lower_Roll,
    [RLX_OP_CumsumBackward] = lower_CumsumBackward,
    [RLX_OP_GatherBackward] = lower_GatherBackward,
    [RLX_OP_Fft] = lower_Fft,
    [RLX_OP_ElementwiseRegion] = lower_ElementwiseRegion,
    [RLX_OP_BatchElementwiseRegion] = lower_BatchElementwiseRegion,
    [RLX_OP_GroupNorm] = lower_GroupNorm,
    [RLX_OP_LayerNorm2d] = lower_LayerNorm2d,
    [RLX_OP_GroupNormBackwardInput] = lower_GroupNormBackwardInput,
    [RLX_OP_GroupNormBackwardGamma] = lower_GroupNormBackwardGamma,
    [RLX_OP_GroupNormBackwardBeta] = lower_GroupNormBackwardBeta,
    [RLX_OP_BatchNormInference] = lower_BatchNormInference,
    [RLX_OP_BatchNormInferenceBackwardInput] = lower_BatchNormInferenceBackwardInput,
    [RLX_OP_BatchNormInferenceBackwardGamma] = lower_BatchNormInferenceBackwardGamma,
    [RLX_OP_BatchNormInferenceBackwardBeta] = lower_BatchNormInferenceBackwardBeta,
    [RLX_OP_Conjugate] = lower_Conjugate,
    [RLX_OP_ComplexNormSq] = lower_ComplexNormSq,
    [RLX_OP_ComplexNormSqBackward] = lower_ComplexNormSqBackward,
    [RLX_OP_GatedResidual] = lower_GatedResidual,
    [RLX_OP_ResizeNearest2x] = lower_ResizeNearest2x,
    [RLX_OP_KvAppend] = lower_KvAppend,
    [RLX_OP_FusedResidualLN] = lower_FusedResidualLN,
    [RLX_OP_FusedResidualRmsNorm] = lower_FusedResidualRmsNorm,
    [RLX_OP_AdaLayerNorm] = lower_AdaLayerNorm,
    [RLX_OP_Histogram] = lower_Histogram,
    [RLX_OP_RopeBackward] = lower_RopeBackward,
    [RLX_OP_AxialRope2d] = lower_AxialRope2d,
    [RLX_OP_ScatterNd] = lower_ScatterNd,
    [RLX_OP_GatherNd] = lower_GatherNd,
    [RLX_OP_FusedMatMulBiasAct] = lower_FusedMatMulBiasAct,
    [RLX_OP_FusedMatMulResidual] = lower_FusedMatMulResidual,
    [RLX_OP_FusedSwiGLU] = lower_FusedSwiGLU,
    [RLX_OP_FusedConvBiasAct] = lower_FusedConvBiasAct,
    [RLX_OP_PartitionedConv] = lower_PartitionedConv,
    [RLX_OP_SplineActivation] = lower_SplineActivation,
    [RLX_OP_SplineActivationBackwardX] = lower_SplineActivationBackwardX,
    [RLX_OP_SplineActivationBackwardCoeff] = lower_SplineActivationBackwardCoeff,
    [RLX_OP_AdaLayerNormBackward] = lower_AdaLayerNormBackward,
    [RLX_OP_GatedResidualBackward] = lower_GatedResidualBackward,
    [RLX_OP_FakeQuantize] = lower_FakeQuantize,
    [RLX_OP_FakeQuantizeBackward] = lower_FakeQuantizeBackward,
    [RLX_OP_LoraMatMul] = lower_LoraMatMul,
    [RLX_OP_DotGeneral] = lower_DotGeneral,
    [RLX_OP_Quantize] = lower_Quantize,
    [RLX_OP_Dequantize] = lower_Dequantize,
    [RLX_OP_Interpolate3d] = lower_Interpolate3d,
    [RLX_OP_SynthReconstruct] = lower_SynthReconstruct,
    [RLX_OP_SynthMatMul] = lower_SynthMatMul,
    [RLX_OP_SynthMatMulBackward] = lower_SynthMatMulBackward,
    [RLX_OP_Cholesky] = lower_Cholesky,
    [RLX_OP_Det] = lower_Det,
    [RLX_OP_LogDet] = lower_LogDet,
    [RLX_OP_DenseSolve] = lower_DenseSolve,
    [RLX_OP_BatchedDenseSolve] = lower_BatchedDenseSolve,
    [RLX_OP_TriangularSolve] = lower_TriangularSolve,
    [RLX_OP_Qr] = lower_Qr,
    [RLX_OP_Svd] = lower_Svd,
    [RLX_OP_Eigh] = lower_Eigh,
    [RLX_OP_EighBatch] = lower_EighBatch,
};

static rlx_op claim_buf[RLX_OP_COUNT];
static uint32_t n_claim_buf;

const rlx_op *rlx_cu_claim_list(uint32_t *n) {
  if (!n_claim_buf) {
    uint32_t k = 0;
    claim_buf[k++] = RLX_OP_Input;
    claim_buf[k++] = RLX_OP_Param;
    claim_buf[k++] = RLX_OP_Constant;
    for (int op = 0; op < RLX_OP_COUNT; op++)
      if (lower_table[op]) claim_buf[k++] = (rlx_op)op;
    n_claim_buf = k;
  }
  *n = n_claim_buf;
  return claim_buf;
}

void *rlx_cu_prog_addr(const rlx_cu_prog *p, rlx_id id) { return addr(p, id); }
size_t rlx_cu_prog_size(const rlx_cu_prog *p, rlx_id id) { return p->plan->size[id]; }
size_t rlx_cu_prog_arena_bytes(const rlx_cu_prog *p) { return p->plan->arena_size; }

/* Frees what a step owns (its pre-steps' too). */
void cu_step_release(rlx_cu_ctx *c, cu_step *s) {
  for (uint32_t k = 0; k < s->n_pre; k++) cu_step_release(c, &s->pre[k]);
  free(s->pre);
  if (s->sc.scratch) rlx_cu_free(c, s->sc.scratch);
  if (s->scratch) rlx_cu_free(c, s->scratch);
  if (s->extra) rlx_cu_free(c, s->extra);
  if (s->fft) rlx_cu_fft_destroy(c, s->fft);
  free(s->regions);
  free(s->post);
  free(s->copies);
  free(s->a_off);
  free(s->b_off);
  rlx_cu_lt_destroy(s->lt);
  rlx_cu_dnn_destroy(s->dnn);
}

void rlx_cu_prog_destroy(rlx_cu_prog *p) {
  if (!p) return;
  if (p->profile) print_profile(p);
  rlx_cu_graph_free(p->graph);
  for (uint32_t i = 0; i < p->n_steps; i++) cu_step_release(p->ctx, &p->steps[i]);
  free(p->steps);
  rlx_cu_free(p->ctx, p->arena);
  free(p);
}

rlx_status rlx_cu_prog_create(rlx_cu_ctx *c, const rlx_graph *g, const rlx_plan *plan, uint64_t rng_seed,
                              rlx_cu_prog **out) {
  *out = NULL;
  uint32_t n = rlx_graph_node_count(g);
  if (plan->n_nodes != n) return rlx_errorf(RLX_ERR_INTERNAL, "cuda: the plan does not match the graph");
  rlx_cu_prog *p = calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  p->ctx = c;
  p->g = g;
  p->plan = plan;
  p->rng_seed = rng_seed;
  const char *prof = getenv("RLX_CUDA_PROFILE");
  p->profile = prof && *prof && strcmp(prof, "0") != 0;
  p->steps = calloc(plan->n_schedule ? plan->n_schedule : 1, sizeof *p->steps);
  if (!p->steps) {
    free(p);
    return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  }
  rlx_status st = rlx_cu_malloc(c, plan->arena_size, (void **)&p->arena);
  if (st != RLX_OK) {
    free(p->steps);
    free(p);
    return rlx_error_context(st, "cuda: the arena of %zu bytes", plan->arena_size);
  }
  /* Constants, once. */
  for (rlx_id id = 0; id < n && st == RLX_OK; id++) {
    const rlx_node *nd = rlx_graph_node(g, id);
    if (nd->op != RLX_OP_Constant) continue;
    const rlx_bytes *d = &nd->attrs.Constant.data;
    if (d->n != plan->size[id]) {
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: constant %%%u holds %zu bytes but its shape needs %zu", id, d->n,
                      plan->size[id]);
      break;
    }
    st = rlx_cu_h2d(c, addr(p, id), d->p, d->n);
  }
  /* One step per non-view node, in schedule order; collect every failure. */
  char msg[1024] = "";
  size_t used = 0;
  uint32_t n_bad = 0;
  lower_ctx L = {.p = p};
  for (uint32_t k = 0; k < plan->n_schedule && st == RLX_OK; k++) {
    rlx_id id = plan->schedule[k];
    const rlx_node *nd = rlx_graph_node(g, id);
    if (rlx_op_has(nd->op, RLX_PROP_LEAF) || plan->root[id] != id) continue;
    lower_fn f = lower_table[nd->op];
    cu_step *s = &p->steps[p->n_steps];
    s->node = id;
    L.why[0] = 0;
    bool ok = false;
    if (!f)
      snprintf(L.why, sizeof L.why, "not claimed by the cuda backend");
    else if (!rlx_shape_is_static(&nd->shape))
      snprintf(L.why, sizeof L.why, "symbolic output shape");
    else
      ok = f(&L, id, nd, s);
    if (ok) {
      p->n_steps++;
      continue;
    }
    cu_step_release(c, s);
    memset(s, 0, sizeof *s);
    n_bad++;
    if (used < sizeof msg - 1) {
      char sb[64];
      rlx_shape_format(&nd->shape, sb, sizeof sb);
      int w = snprintf(msg + used, sizeof msg - used, "%snode %%%u (%s%s%s, %s): %s", n_bad > 1 ? "; " : "", id,
                       rlx_op_name(nd->op), nd->name ? " " : "", nd->name ? nd->name : "", sb, L.why);
      used += w > 0 ? (size_t)w : 0;
    }
  }
  if (st == RLX_OK && n_bad)
    st = rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: %u node%s cannot be lowered: %s", n_bad, n_bad == 1 ? "" : "s", msg);
  if (st == RLX_OK) {
    cu_fold_backward_sums(p);
    cu_fold_transposes(p);
    cu_fold_bias_epilogues(p);
    cu_fold_attention_concat(p);
  }
  if (st != RLX_OK) {
    rlx_cu_prog_destroy(p);
    return st;
  }
  *out = p;
  return RLX_OK;
}

/* Queues one step: its pre-steps, its own launches, then its elementwise epilogues. */
static rlx_status run_one(rlx_cu_ctx *c, const cu_step *s) {
  rlx_status st = RLX_OK;
  for (uint32_t k = 0; k < s->n_pre && st == RLX_OK; k++) st = run_one(c, &s->pre[k]);
  if (st != RLX_OK) return st;
  switch (s->kind) {
  case ST_EW: st = rlx_cu_elementwise(c, &s->ew); break;
  case ST_COPIES:
    for (uint32_t k = 0; k < s->n_copies && st == RLX_OK; k++) st = rlx_cu_strided_copy(c, &s->copies[k]);
    break;
  case ST_GATHER: st = rlx_cu_gather(c, s->src, s->a, s->b, s->c2, s->esz, s->aux[0], s->dtype, s->d, s->dst); break;
  case ST_REDUCE: st = rlx_cu_reduce(c, s->op, s->dtype, s->src, s->rank, s->dims, s->mask, s->dst); break;
  case ST_SOFTMAX: st = rlx_cu_softmax(c, s->dtype, s->src, s->a, s->b, s->c2, s->dst); break;
  case ST_NORM:
    st = rlx_cu_norm(c, s->rms, s->dtype, s->src, s->aux[0], s->aux[1], s->a, s->b, s->eps, s->dst, s->nf.stats_out);
    break;
  case ST_MATMUL:
    if (s->lt) {
      st = rlx_cu_lt_run(c, s->lt);
      break;
    }
    st = rlx_cu_matmul(c, s->dtype, s->src, s->aux[0], s->dst, s->a, s->b, s->c2, s->d, s->a_off, s->b_off,
                         s->trans);
    break;
  case ST_D2D: st = rlx_cu_d2d(c, s->dst, s->src, s->bytes); break;
  case ST_CONV:
    st = s->dnn ? rlx_cu_dnn_run(c, s->dnn) : rlx_cu_conv(c, s->rms, s->dtype, s->src, s->aux[0], s->dst, &s->geom);
    break;
  case ST_POOL:
    st = rlx_cu_pool(c, s->op, s->dtype, s->src, s->dst, s->dims[0], s->dims[1], s->dims[2], s->dims[3], s->dims[4],
                     s->pk, s->ps, s->ppb);
    break;
  case ST_SCATTER: st = rlx_cu_scatter_run(c, &s->sc); break;
  case ST_GATHER_EL: st = rlx_cu_gather_elements(c, &s->sc, s->esz); break;
  case ST_ATTN: st = rlx_cu_attention(c, &s->at); break;
  case ST_ATTN_BW: st = rlx_cu_attention_backward(c, &s->abw); break;
  case ST_ROPE: st = rlx_cu_rope_run(c, &s->rope); break;
  case ST_CUMSUM: st = rlx_cu_cumsum(c, s->dtype, s->src, s->a, s->b, s->c2, s->rms, s->dst); break;
  case ST_ACT_BW:
    if (s->colsum)
      st = rlx_cu_act_backward_colsum(c, s->op, s->dtype, s->src, s->aux[0], s->dst, s->a, s->b, s->colsum_op,
                                      s->colsum);
    else
      st = rlx_cu_act_backward(c, s->op, s->dtype, s->src, s->aux[0], s->dst, s->d);
    break;
  case ST_SCE:
    st = rlx_cu_sce(c, s->op, s->dtype, s->src, s->aux[0], s->aux_dtype, s->aux[1], s->a, s->b, s->dst);
    break;
  case ST_NORM_BW:
    st = rlx_cu_norm_backward(c, s->op, s->rms, s->dtype, s->src, s->aux[0], s->aux[1], s->a, s->b, s->eps, s->dst,
                              s->scratch, &s->nf);
    break;
  case ST_MAXPOOL_BW: st = rlx_cu_maxpool_backward(c, s->dtype, s->src, s->aux[0], s->dst, &s->p3); break;
  case ST_CONV_BW_W:
    st = s->dnn ? rlx_cu_dnn_run(c, s->dnn)
                : rlx_cu_conv_backward_weight(c, s->dtype, s->src, s->aux[0], s->dst, &s->geom);
    break;
  case ST_ARGEXT: st = rlx_cu_argext(c, s->op, s->dtype, s->src, s->a, s->b, s->c2, s->aux_dtype, s->dst); break;
  case ST_CUM2: st = rlx_cu_cumulative(c, s->op, s->dtype, s->src, s->a, s->b, s->c2, s->rms, s->dst); break;
  case ST_SORT:
    st = rlx_cu_sort(c, s->op, s->rms, s->dtype, s->src, s->a, s->b, s->c2, s->d, s->aux_dtype, s->dst, s->scratch);
    break;
  case ST_RNG: {
    double b;
    memcpy(&b, &s->dims[1], sizeof b);
    st = rlx_cu_rng(c, s->op, s->dtype, s->key, s->eps, b, s->d, s->dst);
    break;
  }
  case ST_TRILU: st = rlx_cu_trilu(c, s->rms, s->c2, s->src, s->dst, s->d, s->a, s->b, s->esz); break;
  case ST_EXT: st = rlx_cu_ext_run(c, &s->ext); break;
  case ST_DFT: st = rlx_cu_fft_run(c, s->fft, s->dtype, s->src, s->dst, s->op > 0, s->eps); break;
  case ST_REMAP: st = rlx_cu_remap_run(c, &s->remap); break;
  case ST_GATHER_BW:
    st = rlx_cu_gather_backward(c, s->dtype, s->src, s->aux[0], s->aux_dtype, s->a, s->b, s->c2, s->d, s->dst);
    break;
  case ST_REGION:
    for (uint32_t k = 0; k < s->n_regions && st == RLX_OK; k++) st = rlx_cu_region_run(c, &s->regions[k]);
    break;
  }
  for (uint32_t k = 0; k < s->n_post && st == RLX_OK; k++) st = rlx_cu_elementwise(c, &s->post[k]);
  return st;
}

static rlx_status run_steps(rlx_cu_prog *p) {
  rlx_cu_ctx *c = p->ctx;
  if (p->profile) {
    RLX_TRY(rlx_cu_sync(c));
    p->prof_runs++;
  }
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const cu_step *s = &p->steps[i];
    double t0 = p->profile ? wall_now() : 0;
    rlx_status st = run_one(c, s);
    if (st == RLX_OK && p->profile) {
      st = rlx_cu_sync(c);
      rlx_op op = rlx_graph_node(p->g, s->node)->op;
      if (!p->prof_step) p->prof_step = calloc(p->n_steps ? p->n_steps : 1, sizeof *p->prof_step);
      if (p->prof_step) p->prof_step[i] += wall_now() - t0;
      p->prof_s[op] += wall_now() - t0;
      p->prof_n[op]++;
    }
    if (st != RLX_OK) {
      const rlx_node *nd = rlx_graph_node(p->g, s->node);
      return rlx_error_context(st, "cuda: node %%%u (%s)", s->node, rlx_op_name(nd->op));
    }
  }
  return RLX_OK;
}

/* CUDA graphs: the first run queues the steps one by one (it sizes the context's scratch and
 * sets the kernels' attributes); the second captures them into a graph, which it and every later
 * run replays with one launch (the device addresses are fixed at compile time, so the graph
 * stays valid). A program whose steps cannot be captured (a step that waits for the device, the
 * integer MatMul's offset upload; a step marked no_graph, cuSOLVER's QR / SVD / eigensolver)
 * runs step by step, as with RLX_CUDA_PROFILE or RLX_CUDA_GRAPHS=0. */
rlx_status rlx_cu_prog_run(rlx_cu_prog *p) {
  if (p->profile || p->graph_state < 0) return run_steps(p);
  if (p->graph) return rlx_cu_graph_launch(p->ctx, p->graph);
  if (p->graph_state == 0) {
    const char *env = getenv("RLX_CUDA_GRAPHS");
    bool off = env && !strcmp(env, "0");
    for (uint32_t i = 0; i < p->n_steps && !off; i++) {
      const cu_step *s = &p->steps[i];
      off = (s->kind == ST_MATMUL && !rlx_cu_blas_dtype(s->dtype)) || s->no_graph;
    }
    p->graph_state = off ? -1 : 1;
    return run_steps(p);
  }
  if (rlx_cu_capture_begin(p->ctx) != RLX_OK) {
    p->graph_state = -1;
    return run_steps(p);
  }
  rlx_status st = run_steps(p);
  void *x = NULL;
  if (rlx_cu_capture_end(p->ctx, st == RLX_OK, &x) != RLX_OK) {
    p->graph_state = -1; /* nothing of the capture ran: run the steps for real */
    return run_steps(p);
  }
  p->graph = x;
  return rlx_cu_graph_launch(p->ctx, x);
}
