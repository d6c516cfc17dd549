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
#include "backends/cuda/lower.h"
#include "core/elem.h"
#include "infer_conv_util.h"
#include "rlx/ops.h"

typedef enum step_kind {
  ST_EW,
  ST_COPIES,
  ST_GATHER,
  ST_REDUCE,
  ST_SOFTMAX,
  ST_NORM,
  ST_MATMUL,
  ST_D2D,
  ST_CONV,
  ST_POOL,
  ST_CUMSUM,
  ST_SCATTER,
  ST_GATHER_EL,
  ST_ATTN,
  ST_ROPE,
  ST_ACT_BW,
  ST_SCE,
  ST_NORM_BW,
  ST_MAXPOOL_BW,
  ST_CONV_BW_W,
  ST_ARGEXT,
  ST_CUM2,
  ST_SORT,
  ST_RNG,
  ST_TRILU,
  ST_REGION,
  ST_REMAP,
  ST_GATHER_BW,
  ST_DFT
} step_kind;

typedef struct cu_step {
  step_kind kind;
  rlx_id node;
  rlx_cu_ew ew;
  rlx_cu_copy *copies; /* ST_COPIES: n_copies pieces */
  uint32_t n_copies;
  const void *src;
  void *dst;
  const void *aux[2];
  int dtype, op, rank, esz, rms;
  int64_t dims[RLX_CU_MAX_RANK];
  uint32_t mask;
  int64_t a, b, c2, d; /* outer / len / inner / count, or M N K batches */
  double eps;
  size_t bytes;
  int64_t *a_off, *b_off;       /* ST_MATMUL */
  rlx_cu_conv_geom geom;        /* ST_CONV */
  int64_t pk[2], ps[2], ppb[2]; /* ST_POOL */
  rlx_cu_scatter sc;            /* ST_SCATTER / ST_GATHER_EL; sc.scratch is owned */
  rlx_cu_attn at;               /* ST_ATTN */
  rlx_cu_rope rope;             /* ST_ROPE */
  rlx_cu_pool3 p3;              /* ST_MAXPOOL_BW */
  rlx_cu_remap remap;           /* ST_REMAP */
  rlx_cu_region *regions;       /* ST_REGION: n_regions launches */
  uint32_t n_regions;
  int aux_dtype;
  uint64_t key;  /* ST_RNG */
  void *scratch; /* owned device scratch (norm statistics, sort positions) */
} cu_step;

struct rlx_cu_prog {
  rlx_cu_ctx *ctx;
  const rlx_graph *g;
  const rlx_plan *plan;
  uint8_t *arena;
  cu_step *steps;
  uint32_t n_steps;
  uint64_t rng_seed;
  int profile;                 /* RLX_CUDA_PROFILE set: time every step (synchronously) */
  double prof_s[RLX_OP_COUNT]; /* seconds per op kind */
  double *prof_step;           /* seconds per step */
  uint32_t prof_n[RLX_OP_COUNT];
  uint32_t prof_runs;
};

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

typedef struct lower_ctx {
  rlx_cu_prog *p;
  char why[256];
} lower_ctx;

typedef bool (*lower_fn)(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);

/* ---- helpers ---- */

static void *addr(const rlx_cu_prog *p, rlx_id id) { return p->arena + p->plan->offset[id]; }
static const rlx_shape *shape_of(const rlx_cu_prog *p, rlx_id id) { return &rlx_graph_node(p->g, id)->shape; }

static int64_t numel(const rlx_shape *s) {
  int64_t n = 1;
  for (uint32_t k = 0; k < s->rank; k++) n *= s->dims[k];
  return n;
}

static void dense_strides(const rlx_shape *s, int64_t *st) {
  int64_t acc = 1;
  for (int k = (int)s->rank - 1; k >= 0; k--) {
    st[k] = acc;
    acc *= s->dims[k];
  }
}

/* Strides (elements) reading operand shape s at the indices of output shape o (right-aligned
 * broadcasting: a missing or size-1 axis gets stride 0). */
static void bcast_strides(const rlx_shape *s, const rlx_shape *o, int64_t *st) {
  int64_t ds[RLX_MAX_RANK];
  dense_strides(s, ds);
  int shift = (int)o->rank - (int)s->rank;
  for (int k = 0; k < (int)o->rank; k++) {
    int j = k - shift;
    st[k] = (j < 0 || s->dims[j] == 1) ? 0 : ds[j];
  }
}

static bool fail(lower_ctx *L, const char *fmt, const char *a) {
  snprintf(L->why, sizeof L->why, fmt, a);
  return false;
}

static bool is_complex(int t) { return t == RLX_C64 || t == RLX_C128; }

/* ---- elementwise ---- */

static bool ew_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind, int sub) {
  rlx_cu_prog *p = L->p;
  const rlx_shape *o = &n->shape;
  if (o->rank > RLX_CU_MAX_RANK) return fail(L, "rank over %s", "8");
  s->kind = ST_EW;
  rlx_cu_ew *e = &s->ew;
  e->kind = kind;
  e->sub = sub;
  e->rank = o->rank;
  for (uint32_t k = 0; k < o->rank; k++) e->dims[k] = o->dims[k];
  e->n = numel(o);
  e->n_in = (int)n->n_inputs;
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    const rlx_shape *si = shape_of(p, n->inputs[i]);
    e->in[i] = addr(p, n->inputs[i]);
    e->in_dtype[i] = si->dtype;
    if (numel(si) == e->n && si->rank != o->rank)
      dense_strides(o, e->stride[i]); /* same elements, other dims */
    else
      bcast_strides(si, o, e->stride[i]);
  }
  e->out = addr(p, id);
  e->out_dtype = o->dtype;
  return true;
}

static bool lower_Activation(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int t = n->shape.dtype, k = n->attrs.Activation.kind;
  if (t == RLX_BOOL) return fail(L, "activations need a numeric dtype, got %s", "bool");
  if (is_complex(t)) {
    static const int ok[] = {RLX_ACT_NEG,   RLX_ACT_ABS, RLX_ACT_EXP, RLX_ACT_LOG, RLX_ACT_SQRT, RLX_ACT_RSQRT,
                             RLX_ACT_RECIP, RLX_ACT_SIN, RLX_ACT_COS, RLX_ACT_TAN, RLX_ACT_TANH, RLX_ACT_SIGMOID};
    bool found = false;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) found |= ok[i] == k;
    if (!found) return fail(L, "this activation is not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  }
  return ew_setup(L, id, n, s, RLX_CU_EW_ACT, k);
}
static bool lower_Cast(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_CAST, 0);
}
static bool lower_StopGradient(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_COPY, 0);
}
static bool lower_Binary(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int t = n->shape.dtype, op = n->attrs.Binary.op;
  bool bitwise = op == RLX_BINOP_BIT_AND || op == RLX_BINOP_BIT_OR || op == RLX_BINOP_BIT_XOR || op == RLX_BINOP_SHL ||
                 op == RLX_BINOP_SHR;
  if (is_complex(t) && op != RLX_BINOP_ADD && op != RLX_BINOP_SUB && op != RLX_BINOP_MUL && op != RLX_BINOP_DIV)
    return fail(L, "only Add, Sub, Mul, Div are defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  if (bitwise && rlx_dtype_is_float((rlx_dtype)t))
    return fail(L, "bitwise ops need integer (or bool) operands, got %s", rlx_dtype_name((rlx_dtype)t));
  if (t == RLX_BOOL && (op == RLX_BINOP_SHL || op == RLX_BINOP_SHR)) return fail(L, "%s cannot be shifted", "bool");
  return ew_setup(L, id, n, s, RLX_CU_EW_BINARY, op);
}
static bool lower_Compare(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int t = shape_of(L->p, n->inputs[0])->dtype, op = n->attrs.Compare.op;
  if (is_complex(t) && op != RLX_CMP_EQ && op != RLX_CMP_NE)
    return fail(L, "only Eq and Ne are defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  return ew_setup(L, id, n, s, RLX_CU_EW_COMPARE, op);
}
static bool lower_Where(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_WHERE, 0);
}
static bool lower_Fma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_FMA, 0);
}
static bool lower_Clamp(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  double lo = n->attrs.Clamp.min, hi = n->attrs.Clamp.max;
  if (lo != lo || hi != hi) return fail(L, "attributes min and max must not be %s", "NaN");
  if (is_complex(n->shape.dtype))
    return fail(L, "Clamp is not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!ew_setup(L, id, n, s, RLX_CU_EW_CLAMP, 0)) return false;
  s->ew.lo = lo;
  s->ew.hi = hi;
  return true;
}

/* ---- shape ops ---- */

static rlx_cu_copy *copies(cu_step *s, uint32_t n) {
  s->kind = ST_COPIES;
  s->copies = calloc(n ? n : 1, sizeof *s->copies);
  s->n_copies = n;
  return s->copies;
}

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

static bool lower_MatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
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
static bool conv_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, bool transposed,
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

/* Validation and layouts come from the CPU reference's checker (the same rules, one place). */
static bool lower_Attention(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  int mk = a->mask_kind;
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  if (n->n_inputs != (has_mask ? 4u : 3u)) return fail(L, "wrong operand count for this mask kind%s", "");
  rlx_tensor in[4];
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    in[i].shape = *shape_of(L->p, n->inputs[i]);
    in[i].data = addr(L->p, n->inputs[i]);
  }
  int64_t Dv = a->v_head_dim.has ? a->v_head_dim.v : a->head_dim;
  attn_params ap = {a->num_heads, a->head_dim, Dv, a->window, mk, a->score_scale, a->attn_logit_softcap};
  static const char *const names[] = {"Q", "K", "V"};
  attn_geom g;
  if (!rlx_dtype_is_float((rlx_dtype)n->shape.dtype))
    return fail(L, "attention needs a float dtype, got %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (rlx_ref_attn_check(n, in, 3, (rlx_dtype)n->shape.dtype, &ap, names, &g) != RLX_OK)
    return fail(L, "%s", rlx_last_error());
  rlx_cu_attn *t = &s->at;
  t->q = attn_view_of(&g.q);
  t->k = attn_view_of(&g.k);
  t->v = attn_view_of(&g.v);
  t->o = t->q;
  t->o.D = Dv;
  t->B = (int64_t)g.B;
  t->Sq = (int64_t)g.Sq;
  t->Sk = (int64_t)g.Sk;
  t->H = (int64_t)g.H;
  t->group = (int64_t)g.group;
  t->window = g.window;
  t->mask = g.mask;
  t->dtype = n->shape.dtype;
  t->per_query = g.per_query;
  t->capped = g.capped;
  t->scale = g.scale;
  t->cap = g.cap;
  t->Q = in[0].data;
  t->K = in[1].data;
  t->V = in[2].data;
  if (has_mask) {
    t->M = in[3].data;
    t->mask_dtype = in[3].shape.dtype;
    if (mk == RLX_MASK_BIAS) bcast_strides(&in[3].shape, &g.full, t->bias_stride);
  }
  t->out = addr(L->p, id);
  s->kind = ST_ATTN;
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

/* ---- backward kinds ---- */

static bool same_x_dy(lower_ctx *L, const rlx_node *n, uint32_t xi, uint32_t dyi) {
  const rlx_shape *x = shape_of(L->p, n->inputs[xi]), *dy = shape_of(L->p, n->inputs[dyi]);
  if (x->dtype != n->shape.dtype || dy->dtype != n->shape.dtype)
    return fail(L, "operands must have the output's dtype %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!rlx_shape_equal(x, dy)) return fail(L, "dy must have x's shape%s", "");
  return true;
}

static bool act_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int act) {
  int t = n->shape.dtype;
  if (!same_x_dy(L, n, 0, 1)) return false;
  if (act >= 0 ? !rlx_dtype_is_float((rlx_dtype)t)
               : (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t)))
    return fail(L, "x needs a %s dtype", act >= 0 ? "float" : "real");
  if (act >= RLX_ACT_COUNT) return fail(L, "attribute kind is not an %s", "Activation");
  s->kind = ST_ACT_BW;
  s->op = act;
  s->dtype = t;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->d = numel(&n->shape);
  return true;
}
static bool lower_ReluBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return act_bw_setup(L, id, n, s, -1);
}
static bool lower_ActivationBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return act_bw_setup(L, id, n, s, n->attrs.ActivationBackward.kind);
}

static bool index_dtype_ok(int t) { return !is_complex(t) && t != RLX_BOOL; }

static bool sce_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *t1 = shape_of(L->p, n->inputs[1]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype) || x->dtype != n->shape.dtype)
    return fail(L, "logits must be a float tensor of the output's dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank != 2) return fail(L, "logits must be [N, C]%s", "");
  int64_t N = x->dims[0], C = x->dims[1];
  if (mode == 0) {
    if (!rlx_shape_equal(t1, x)) return fail(L, "targets must have the logits' shape%s", "");
  } else {
    if (!index_dtype_ok(t1->dtype))
      return fail(L, "labels must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)t1->dtype));
    if (t1->rank != 1 || t1->dims[0] != N) return fail(L, "labels must be [N]%s", "");
  }
  if (mode == 2) {
    const rlx_shape *g = shape_of(L->p, n->inputs[2]);
    if (g->rank != 1 || g->dims[0] != N || g->dtype != x->dtype)
      return fail(L, "d_loss must be [N] of the logits' dtype%s", "");
    s->aux[1] = addr(L->p, n->inputs[2]);
  }
  s->kind = ST_SCE;
  s->op = mode;
  s->dtype = x->dtype;
  s->aux_dtype = t1->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->a = N;
  s->b = C;
  return true;
}
static bool lower_SoftmaxCrossEntropy(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 0);
}
static bool lower_SoftmaxCrossEntropyWithLogits(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 1);
}
static bool lower_SoftmaxCrossEntropyBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 2);
}

/* what: 0 dx, 1 dgamma, 2 dbeta; x is operand 0, gamma operand 1 (dx only), dy operand dyi. */
static bool norm_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int what, int rms, int64_t axis,
                          double eps, uint32_t dyi) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype) || x->dtype != n->shape.dtype)
    return fail(L, "x must be a float tensor of the output's dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank < 1) return fail(L, "x needs rank >= %s", "1");
  if (axis != -1 && axis != (int64_t)x->rank - 1) return fail(L, "attribute axis must be the last axis%s", "");
  if (!same_x_dy(L, n, 0, dyi)) return false;
  int64_t C = x->dims[x->rank - 1];
  if (what == 0 || rms) {
    const rlx_shape *gm = shape_of(L->p, n->inputs[1]);
    if (gm->dtype != x->dtype || numel(gm) != C)
      return fail(L, "gamma must hold one %s per channel", rlx_dtype_name((rlx_dtype)x->dtype));
  }
  s->kind = ST_NORM_BW;
  s->op = what;
  s->rms = rms;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->aux[1] = addr(L->p, n->inputs[dyi]);
  s->dst = addr(L->p, id);
  s->b = C;
  s->a = C ? numel(x) / C : 0;
  s->eps = eps;
  if (what == 1 && rlx_cu_malloc(L->p->ctx, (size_t)(s->a ? s->a : 1) * 2 * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the row statistics: %s", rlx_last_error());
  return true;
}
static bool lower_LayerNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_LayerNormBackwardInput *a = &n->attrs.LayerNormBackwardInput;
  return norm_bw_setup(L, id, n, s, 0, 0, a->axis, a->eps, 2);
}
static bool lower_LayerNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_LayerNormBackwardGamma *a = &n->attrs.LayerNormBackwardGamma;
  return norm_bw_setup(L, id, n, s, 1, 0, a->axis, a->eps, 1);
}
static bool lower_RmsNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardInput *a = &n->attrs.RmsNormBackwardInput;
  return norm_bw_setup(L, id, n, s, 0, 1, a->axis, a->eps, 3);
}
static bool lower_RmsNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardGamma *a = &n->attrs.RmsNormBackwardGamma;
  return norm_bw_setup(L, id, n, s, 1, 1, a->axis, a->eps, 3);
}
static bool lower_RmsNormBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardBeta *a = &n->attrs.RmsNormBackwardBeta;
  return norm_bw_setup(L, id, n, s, 2, 1, a->axis, a->eps, 3);
}

static bool maxpool_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, const rlx_ilist *ks,
                             const rlx_ilist *stride, const rlx_ilist *padding) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *dy = shape_of(L->p, n->inputs[1]);
  int t = n->shape.dtype;
  if (x->dtype != t || dy->dtype != t)
    return fail(L, "x and dy need the output's dtype %s", rlx_dtype_name((rlx_dtype)t));
  if (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t))
    return fail(L, "max pooling needs a real dtype%s", "");
  if (x->rank != 2 + nsp || dy->rank != 2 + nsp || x->dims[0] != dy->dims[0] || x->dims[1] != dy->dims[1])
    return fail(L, "x and dy must be [N, C, spatial...] with equal N and C%s", "");
  cu_geom cg;
  if (cu_pool_geom(nsp, ks, stride, padding, &cg) != RLX_OK) return fail(L, "bad geometry: %s", rlx_last_error());
  rlx_cu_pool3 *g = &s->p3;
  g->NC = x->dims[0] * x->dims[1];
  uint32_t off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = 1;
    g->pb[i] = 0;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    g->in[off + i] = x->dims[2 + i];
    g->out[off + i] = dy->dims[2 + i];
    g->k[off + i] = cg.k[i];
    g->s[off + i] = cg.s[i];
    g->pb[off + i] = cg.pb[i];
  }
  s->kind = ST_MAXPOOL_BW;
  s->dtype = t;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  return true;
}
static bool lower_MaxPool2dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  return maxpool_bw_setup(L, id, n, s, 2, &a->kernel_size, &a->stride, &a->padding);
}
static bool lower_MaxPool3dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_MaxPool3dBackward *a = &n->attrs.MaxPool3dBackward;
  return maxpool_bw_setup(L, id, n, s, 3, &a->kernel_size, &a->stride, &a->padding);
}

/* Conv*BackwardInput ([dy, w] -> dx) is the transposed convolution of dy with w; Conv*BackwardWeight
 * ([x, dy] -> dw) has its own kernel. The geometry is read from x (or dx) and dy. */
static bool conv_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, bool weight,
                          const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation, int64_t G) {
  const rlx_shape *x = weight ? shape_of(L->p, n->inputs[0]) : &n->shape;
  const rlx_shape *dy = weight ? shape_of(L->p, n->inputs[1]) : shape_of(L->p, n->inputs[0]);
  const rlx_shape *w = weight ? &n->shape : shape_of(L->p, n->inputs[1]);
  if (!rlx_dtype_is_float((rlx_dtype)n->shape.dtype))
    return fail(L, "convolutions need a float dtype, got %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (x->rank != 2 + nsp || dy->rank != 2 + nsp || w->rank != 2 + nsp)
    return fail(L, "operands need rank 2 + spatial axes%s", "");
  if (G < 1 || x->dims[1] % G || dy->dims[1] % G || w->dims[0] != dy->dims[1] || w->dims[1] != x->dims[1] / G)
    return fail(L, "channels do not fit [N, Cin], [N, Cout], [Cout, Cin/groups] %s", "");
  cu_geom cg;
  if (cu_parse(nsp, stride, padding, dilation, NULL, &cg) != RLX_OK)
    return fail(L, "bad geometry: %s", rlx_last_error());
  rlx_cu_conv_geom *g = &s->geom;
  uint32_t off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  int64_t xin[3] = {1, 1, 1}, yout[3] = {1, 1, 1};
  for (uint32_t i = 0; i < nsp; i++) {
    xin[off + i] = x->dims[2 + i];
    yout[off + i] = dy->dims[2 + i];
    g->k[off + i] = w->dims[2 + i];
    g->s[off + i] = cg.s[i];
    g->d[off + i] = cg.d[i];
    g->pb[off + i] = cg.pb[i];
  }
  g->N = x->dims[0];
  g->G = G;
  if (weight) { /* the forward geometry */
    g->Cin = x->dims[1];
    g->Cout = dy->dims[1];
    memcpy(g->in, xin, sizeof xin);
    memcpy(g->out, yout, sizeof yout);
    s->kind = ST_CONV_BW_W;
  } else { /* the transposed convolution dy -> dx */
    g->Cin = dy->dims[1];
    g->Cout = x->dims[1];
    memcpy(g->in, yout, sizeof yout);
    memcpy(g->out, xin, sizeof xin);
    s->kind = ST_CONV;
    s->rms = 1;
  }
  s->dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  return true;
}
static bool lower_Conv2dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  return conv_bw_setup(L, id, n, s, 2, false, &a->stride, &a->padding, &a->dilation, a->groups);
}
static bool lower_Conv3dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv3dBackwardInput *a = &n->attrs.Conv3dBackwardInput;
  return conv_bw_setup(L, id, n, s, 3, false, &a->stride, &a->padding, &a->dilation, a->groups);
}
static bool lower_Conv2dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  return conv_bw_setup(L, id, n, s, 2, true, &a->stride, &a->padding, &a->dilation, a->groups);
}
static bool lower_Conv3dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv3dBackwardWeight *a = &n->attrs.Conv3dBackwardWeight;
  return conv_bw_setup(L, id, n, s, 3, true, &a->stride, &a->padding, &a->dilation, a->groups);
}

/* ---- ordering, cumulative, random, masks ---- */

static bool split_axis(lower_ctx *L, const rlx_shape *x, int64_t axis_attr, cu_step *s) {
  s->a = s->b = s->c2 = 1;
  if (x->rank == 0) return true;
  int64_t ax = axis_attr < 0 ? axis_attr + x->rank : axis_attr;
  if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
  for (int64_t k = 0; k < ax; k++) s->a *= x->dims[k];
  s->b = x->dims[ax];
  for (uint32_t k = (uint32_t)ax + 1; k < x->rank; k++) s->c2 *= x->dims[k];
  return true;
}
static bool index_out_ok(lower_ctx *L, int t, int64_t largest) {
  if (t != RLX_I64 && t != RLX_I32 && t != RLX_F32)
    return fail(L, "indices are written as i64, i32 or f32, got %s", rlx_dtype_name((rlx_dtype)t));
  if ((t == RLX_F32 && largest > (1 << 24)) || (t == RLX_I32 && largest > INT32_MAX))
    return fail(L, "indices are not exact in %s", rlx_dtype_name((rlx_dtype)t));
  return true;
}
static bool real_dtype(lower_ctx *L, int t) {
  if (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t))
    return fail(L, "needs a real dtype, got %s", rlx_dtype_name((rlx_dtype)t));
  return true;
}

static bool argext_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int want_max, int64_t axis) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype) || !split_axis(L, x, axis, s) || !index_out_ok(L, n->shape.dtype, s->b)) return false;
  if (s->b == 0 && s->a * s->c2 > 0) return fail(L, "the reduced axis is empty%s", "");
  s->kind = ST_ARGEXT;
  s->op = want_max;
  s->dtype = x->dtype;
  s->aux_dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}
static bool lower_ArgMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return argext_setup(L, id, n, s, 1, n->attrs.ArgMax.axis);
}
static bool lower_ArgMin(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return argext_setup(L, id, n, s, 0, n->attrs.ArgMin.axis);
}

static bool cum_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind, int64_t axis, bool excl) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->dtype != n->shape.dtype) return fail(L, "the output needs x's dtype%s", "");
  if (kind == 2 && !real_dtype(L, x->dtype)) return false;
  if (!split_axis(L, x, axis, s)) return false;
  s->kind = ST_CUM2;
  s->op = kind;
  s->rms = excl;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}
static bool lower_CumProd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return cum_setup(L, id, n, s, 1, n->attrs.CumProd.axis, n->attrs.CumProd.exclusive);
}
static bool lower_CumMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return cum_setup(L, id, n, s, 2, n->attrs.CumMax.axis, n->attrs.CumMax.exclusive);
}

static bool sort_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, int64_t axis, bool desc) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype)) return false;
  if (mode == 2) {
    if (x->rank == 0) return fail(L, "TopK needs rank >= %s", "1");
    axis = -1;
  }
  if (!split_axis(L, x, axis, s)) return false;
  if (mode == 0 && n->shape.dtype != x->dtype) return fail(L, "Sort's output needs x's dtype%s", "");
  if (mode != 0 && !index_out_ok(L, n->shape.dtype, s->b)) return false;
  if (mode == 2) {
    s->d = n->attrs.TopK.k;
    if (s->d < 0 || s->d > s->b) return fail(L, "attribute k is out of range%s", "");
  }
  s->kind = ST_SORT;
  s->op = mode;
  s->rms = desc;
  s->dtype = x->dtype;
  s->aux_dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  size_t bytes = (size_t)(s->a * s->c2) * (size_t)s->b * 2 * sizeof(int64_t);
  if (rlx_cu_malloc(L->p->ctx, bytes ? bytes : 8, &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the sort scratch: %s", rlx_last_error());
  return true;
}
static bool lower_Sort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sort_setup(L, id, n, s, 0, n->attrs.Sort.axis, n->attrs.Sort.descending);
}
static bool lower_ArgSort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sort_setup(L, id, n, s, 1, n->attrs.ArgSort.axis, n->attrs.ArgSort.descending);
}
static bool lower_TopK(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sort_setup(L, id, n, s, 2, -1, true);
}

/* splitmix64's finaliser, as the CPU reference mixes seeds into keys */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  x ^= x >> 31;
  return x;
}
static bool rng_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int normal, uint64_t key,
                      const rlx_of32 *op_seed, double a, double b) {
  if (!rlx_dtype_is_float((rlx_dtype)n->shape.dtype))
    return fail(L, "random tensors are f32, f64, f16 or bf16, got %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!normal && (!(a < b) || a != a || b != b || a - a != 0 || b - b != 0))
    return fail(L, "attributes low and high must be finite with low < high%s", "");
  uint64_t k = key ^ mix64(L->p->rng_seed);
  if (op_seed->has) {
    uint32_t bits;
    memcpy(&bits, &op_seed->v, 4);
    k ^= mix64((UINT64_C(1) << 32) | bits);
  }
  s->kind = ST_RNG;
  s->op = normal;
  s->dtype = n->shape.dtype;
  s->key = k;
  s->eps = a;
  s->a = 0;
  s->dims[0] = 0;
  s->bytes = 0;
  s->d = numel(&n->shape);
  s->dst = addr(L->p, id);
  memcpy(&s->dims[1], &b, sizeof b); /* the second parameter, bit-exact */
  return true;
}
static bool lower_RngUniform(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RngUniform *a = &n->attrs.RngUniform;
  return rng_setup(L, id, n, s, 0, a->key, &a->op_seed, a->low, a->high);
}
static bool lower_RngNormal(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RngNormal *a = &n->attrs.RngNormal;
  return rng_setup(L, id, n, s, 1, a->key, &a->op_seed, a->mean, a->scale);
}

static bool lower_Trilu(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank < 2) return fail(L, "operand 0 needs rank >= %s", "2");
  if (x->dtype != n->shape.dtype) return fail(L, "the output needs x's dtype%s", "");
  s->kind = ST_TRILU;
  s->rms = n->attrs.Trilu.upper;
  s->eps = 0;
  s->a = x->dims[x->rank - 2];
  s->b = x->dims[x->rank - 1];
  s->c2 = n->attrs.Trilu.diagonal;
  s->d = numel(x);
  s->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}

/* ---- Slice, Pad, Tile, Roll, CumsumBackward, GatherBackward ---- */

static bool lower_Slice(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Slice *a = &n->attrs.Slice;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank == 0) return fail(L, "operand 0 needs rank >= %s", "1");
  int64_t ax = a->axis < 0 ? a->axis + x->rank : a->axis;
  if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
  if (a->step == 0 || a->len < 0) return fail(L, "attribute step must be nonzero and len >= 0%s", "");
  if (a->len > 0) {
    int64_t last = a->start + (a->len - 1) * a->step;
    if (a->start < 0 || a->start >= x->dims[ax] || last < 0 || last >= x->dims[ax])
      return fail(L, "attributes start, len, step leave the axis%s", "");
  }
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  size_t esz = rlx_dtype_size((rlx_dtype)x->dtype);
  c->rank = n->shape.rank;
  for (uint32_t k = 0; k < n->shape.rank; k++) c->dims[k] = n->shape.dims[k];
  dense_strides(x, c->src_stride);
  int64_t start = a->len > 0 ? a->start * c->src_stride[ax] : 0;
  c->src_stride[ax] *= a->step;
  dense_strides(&n->shape, c->dst_stride);
  c->n = numel(&n->shape);
  c->src = (const uint8_t *)addr(L->p, n->inputs[0]) + (size_t)start * esz;
  c->dst = addr(L->p, id);
  c->esz = (int)esz;
  return true;
}

static bool remap_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->dtype != n->shape.dtype || x->rank != n->shape.rank)
    return fail(L, "the output needs x's dtype and rank%s", "");
  if (x->rank > RLX_CU_MAX_RANK) return fail(L, "rank over %s", "8");
  rlx_cu_remap *r = &s->remap;
  r->kind = kind;
  r->rank = x->rank;
  r->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  r->n = numel(&n->shape);
  for (uint32_t k = 0; k < x->rank; k++) {
    r->out_dims[k] = n->shape.dims[k];
    r->in_dims[k] = x->dims[k];
  }
  dense_strides(x, r->in_stride);
  r->src = addr(L->p, n->inputs[0]);
  r->dst = addr(L->p, id);
  s->kind = ST_REMAP;
  if (r->n > 0)
    for (uint32_t k = 0; k < x->rank; k++)
      if (x->dims[k] <= 0 && !(kind == 0 && n->attrs.Pad.mode == RLX_PAD_MODE_CONSTANT))
        return fail(L, "an empty input axis cannot fill a non-empty output%s", "");
  return true;
}

static bool lower_Pad(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Pad *a = &n->attrs.Pad;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (a->mode < 0 || a->mode >= RLX_PAD_MODE_COUNT) return fail(L, "attribute mode is not a %s", "PadMode");
  if (a->pads.n != 2u * x->rank) return fail(L, "attribute pads needs (before, after) per %s", "axis");
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t before = a->pads.v[2 * k], after = a->pads.v[2 * k + 1], d = x->dims[k];
    int64_t most = before > after ? before : after;
    bool ok = before >= 0 && after >= 0;
    if (ok && most > 0) {
      if (a->mode == RLX_PAD_MODE_REFLECT)
        ok = most < d;
      else if (a->mode == RLX_PAD_MODE_CIRCULAR)
        ok = most <= d;
      else if (a->mode == RLX_PAD_MODE_REPLICATE)
        ok = d > 0;
    }
    if (!ok || n->shape.dims[k] != d + before + after)
      return fail(L, "attribute pads is not valid for this %s", "mode");
  }
  if (!remap_setup(L, id, n, s, 0)) return false;
  s->remap.mode = a->mode;
  for (uint32_t k = 0; k < x->rank; k++) s->remap.shift[k] = a->pads.v[2 * k];
  /* the fill value as one element of the dtype */
  double v = (double)a->value;
  memset(s->remap.fill, 0, sizeof s->remap.fill);
  rlx_elem_set(s->remap.fill, (rlx_dtype)x->dtype, 0, v);
  return true;
}

static bool lower_Tile(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  const rlx_ilist *reps = &n->attrs.Tile.reps;
  if (reps->n != x->rank) return fail(L, "attribute reps needs one entry per %s", "axis");
  for (uint32_t k = 0; k < x->rank; k++)
    if (reps->v[k] < 0 || n->shape.dims[k] != x->dims[k] * reps->v[k])
      return fail(L, "attribute reps does not fit%s", "");
  return remap_setup(L, id, n, s, 1);
}

static bool lower_Roll(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Roll *a = &n->attrs.Roll;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (a->shifts.n != a->dims.n) return fail(L, "attributes shifts and dims need equal %s", "lengths");
  if (!remap_setup(L, id, n, s, 2)) return false;
  for (uint32_t k = 0; k < a->dims.n; k++) {
    int64_t ax = a->dims.v[k] < 0 ? a->dims.v[k] + x->rank : a->dims.v[k];
    if (ax < 0 || ax >= x->rank) return fail(L, "attribute dims: an axis is out of range%s", "");
    int64_t d = x->dims[ax];
    if (d > 0) s->remap.shift[ax] = (s->remap.shift[ax] + ((a->shifts.v[k] % d) + d) % d) % d;
  }
  return true;
}

static bool lower_CumsumBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype)) return false;
  return cum_setup(L, id, n, s, 3, n->attrs.CumsumBackward.axis, n->attrs.CumsumBackward.exclusive);
}

static bool lower_GatherBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *tab = &n->shape, *dy = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]);
  if (!real_dtype(L, tab->dtype) || dy->dtype != tab->dtype) return false;
  if (!index_dtype_ok(ix->dtype))
    return fail(L, "indices must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)ix->dtype));
  if (tab->rank == 0) return fail(L, "the table needs rank >= %s", "1");
  if (!split_axis(L, tab, n->attrs.GatherBackward.axis, s)) return false;
  if (dy->rank != tab->rank - 1 + ix->rank || numel(dy) != s->a * s->c2 * numel(ix))
    return fail(L, "dy does not match the gathered shape%s", "");
  s->kind = ST_GATHER_BW;
  s->dtype = tab->dtype;
  s->aux_dtype = ix->dtype;
  s->d = numel(ix);
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  return true;
}

static bool lower_Fft(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int t = n->shape.dtype;
  bool cplx = is_complex(t);
  if (x->dtype != t || (!cplx && t != RLX_F32 && t != RLX_F64))
    return fail(L, "Fft takes f32 / f64 (real-block) or c64 / c128, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank < 1) return fail(L, "Fft transforms the last axis; operand 0 is a %s", "scalar");
  int64_t last = x->dims[x->rank - 1], N = cplx ? last : last / 2;
  if (N < 1 || (!cplx && last % 2)) return fail(L, "the last axis must hold N >= 1 complex values or 2N %s", "reals");
  const rlx_attrs_Fft *a = &n->attrs.Fft;
  double scale = 1.0;
  if (a->norm == RLX_FFT_NORM_FORWARD)
    scale = a->inverse ? 1.0 / (double)N : 1.0;
  else if (a->norm == RLX_FFT_NORM_ORTHO)
    scale = 1.0 / sqrt((double)N);
  s->kind = ST_DFT;
  s->dtype = t;
  s->a = numel(x) / last;
  s->b = N;
  s->op = a->inverse ? 1 : -1;
  s->eps = scale;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}

/* ---- fused elementwise regions ---- */

/* Fills the chain of r over operand dtypes in_dt (n_in operands); checks what the kernel supports. */
static bool region_chain(lower_ctx *L, const rlx_chain *ch, rlx_cu_region *r) {
  if (ch->n == 0 || ch->n > RLX_CU_REGION_MAX_STEPS) return fail(L, "the chain needs 1..%s steps", "64");
  bool fast = true;
  for (int k = 0; k < r->n_in; k++) fast &= r->in_dtype[k] == RLX_F32;
  for (uint32_t j = 0; j < ch->n; j++) {
    const rlx_chain_step *st = &ch->steps[j];
    const rlx_chain_operand *ops[3] = {&st->a, &st->b, &st->c};
    int used = st->kind == RLX_CHAIN_STEP_WHERE                                            ? 3
               : (st->kind == RLX_CHAIN_STEP_BINARY || st->kind == RLX_CHAIN_STEP_COMPARE) ? 2
                                                                                           : 1;
    int t[3] = {0, 0, 0};
    rlx_cu_region_step *rs = &r->steps[j];
    for (int k = 0; k < used; k++) {
      const rlx_chain_operand *o = ops[k];
      if (o->is_step ? o->index >= j : o->index >= (uint32_t)r->n_in)
        return fail(L, "a chain operand refers to %s", "a missing value");
      t[k] = o->is_step ? r->steps[o->index].dtype : r->in_dtype[o->index];
      rs->src[k] = (uint8_t)(o->is_step ? RLX_CU_REGION_MAX_IN + o->index : o->index);
      if (is_complex(t[k]))
        return fail(L, "complex values in a region are not supported (%s)", rlx_dtype_name((rlx_dtype)t[k]));
    }
    rs->kind = (int8_t)st->kind;
    rs->sub = (int8_t)st->sub;
    switch (st->kind) {
    case RLX_CHAIN_STEP_ACTIVATION: rs->dtype = (int8_t)t[0]; break;
    case RLX_CHAIN_STEP_CAST: rs->dtype = (int8_t)st->sub; break;
    case RLX_CHAIN_STEP_BINARY: rs->dtype = (int8_t)t[0]; break;
    case RLX_CHAIN_STEP_COMPARE: rs->dtype = RLX_BOOL; break;
    case RLX_CHAIN_STEP_WHERE: rs->dtype = (int8_t)t[1]; break;
    default: return fail(L, "unknown chain step kind%s", "");
    }
    if (is_complex(rs->dtype)) return fail(L, "complex values in a region are not supported%s", "");
    fast &= rs->dtype == RLX_F32 && (st->kind == RLX_CHAIN_STEP_ACTIVATION || st->kind == RLX_CHAIN_STEP_BINARY);
  }
  r->n_steps = (int)ch->n;
  r->out_dtype = r->steps[ch->n - 1].dtype;
  r->fast_f32 = fast;
  return true;
}

static bool region_prologue(lower_ctx *L, rlx_cu_region *r, int k, const rlx_shape *x) {
  if (x->rank < 2) return fail(L, "the ResizeNearest2x prologue needs rank >= %s", "2");
  r->pro = k;
  r->pro_h = x->dims[x->rank - 2];
  r->pro_w = x->dims[x->rank - 1];
  r->in_count[k] *= 4;
  r->fast_f32 = 0;
  return true;
}

static bool lower_ElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  if (n->n_inputs < 1 || n->n_inputs > RLX_CU_REGION_MAX_IN) return fail(L, "a region takes 1..%s operands", "16");
  rlx_cu_region *r = calloc(1, sizeof *r);
  if (!r) return fail(L, "out of %s", "memory");
  s->kind = ST_REGION;
  s->regions = r;
  s->n_regions = 1;
  r->n_in = (int)n->n_inputs;
  r->pro = -1;
  r->n = numel(&n->shape);
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    const rlx_shape *x = shape_of(L->p, n->inputs[k]);
    r->in[k] = addr(L->p, n->inputs[k]);
    r->in_dtype[k] = x->dtype;
    r->in_count[k] = numel(x);
  }
  if (!region_chain(L, &a->chain, r)) return false;
  if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) {
    if (a->prologue_input < 0 || a->prologue_input >= (int64_t)n->n_inputs)
      return fail(L, "attribute prologue_input is out of range%s", "");
    if (!region_prologue(L, r, (int)a->prologue_input, shape_of(L->p, n->inputs[a->prologue_input]))) return false;
  }
  for (int k = 0; k < r->n_in; k++)
    if (r->n && (r->in_count[k] == 0 || r->n % r->in_count[k]))
      return fail(L, "an operand does not tile the output%s", "");
  if (r->out_dtype != n->shape.dtype) return fail(L, "the chain's result dtype differs from the node's%s", "");
  r->out = addr(L->p, id);
  return true;
}

/* The chain (reading operand 0) applied to every operand separately, the results concatenated on
 * axis 0: one region launch per operand, each writing its slice of the output. */
static bool lower_BatchElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_BatchElementwiseRegion *a = &n->attrs.BatchElementwiseRegion;
  if (n->n_inputs < 1 || n->n_inputs > RLX_CU_REGION_MAX_IN) return fail(L, "a region takes 1..%s operands", "16");
  rlx_cu_region *r = calloc(n->n_inputs, sizeof *r);
  if (!r) return fail(L, "out of %s", "memory");
  s->kind = ST_REGION;
  s->regions = r;
  s->n_regions = n->n_inputs;
  size_t esz = rlx_dtype_size((rlx_dtype)n->shape.dtype), at = 0;
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    const rlx_shape *x = shape_of(L->p, n->inputs[k]);
    r[k].n_in = 1;
    r[k].pro = -1;
    r[k].in[0] = addr(L->p, n->inputs[k]);
    r[k].in_dtype[0] = x->dtype;
    r[k].in_count[0] = numel(x);
    if (!region_chain(L, &a->chain, &r[k])) return false;
    if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X && !region_prologue(L, &r[k], 0, x)) return false;
    r[k].n = r[k].in_count[0];
    if (r[k].out_dtype != n->shape.dtype) return fail(L, "the chain's result dtype differs from the node's%s", "");
    r[k].out = (uint8_t *)addr(L->p, id) + at * esz;
    at += (size_t)r[k].n;
  }
  if ((int64_t)at != numel(&n->shape)) return fail(L, "the parts do not fill the output%s", "");
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

void rlx_cu_prog_destroy(rlx_cu_prog *p) {
  if (!p) return;
  if (p->profile) print_profile(p);
  for (uint32_t i = 0; i < p->n_steps; i++) {
    if (p->steps[i].kind == ST_SCATTER) rlx_cu_free(p->ctx, p->steps[i].sc.scratch);
    if (p->steps[i].scratch) rlx_cu_free(p->ctx, p->steps[i].scratch);
    free(p->steps[i].regions);
    free(p->steps[i].copies);
    free(p->steps[i].a_off);
    free(p->steps[i].b_off);
  }
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
    free(s->copies);
    free(s->a_off);
    free(s->b_off);
    if (s->sc.scratch) rlx_cu_free(c, s->sc.scratch);
    if (s->scratch) rlx_cu_free(c, s->scratch);
    free(s->regions);
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
  if (st != RLX_OK) {
    rlx_cu_prog_destroy(p);
    return st;
  }
  *out = p;
  return RLX_OK;
}

rlx_status rlx_cu_prog_run(rlx_cu_prog *p) {
  rlx_cu_ctx *c = p->ctx;
  if (p->profile) {
    RLX_TRY(rlx_cu_sync(c));
    p->prof_runs++;
  }
  for (uint32_t i = 0; i < p->n_steps; i++) {
    const cu_step *s = &p->steps[i];
    rlx_status st = RLX_OK;
    double t0 = p->profile ? wall_now() : 0;
    switch (s->kind) {
    case ST_EW: st = rlx_cu_elementwise(c, &s->ew); break;
    case ST_COPIES:
      for (uint32_t k = 0; k < s->n_copies && st == RLX_OK; k++) st = rlx_cu_strided_copy(c, &s->copies[k]);
      break;
    case ST_GATHER: st = rlx_cu_gather(c, s->src, s->a, s->b, s->c2, s->esz, s->aux[0], s->dtype, s->d, s->dst); break;
    case ST_REDUCE: st = rlx_cu_reduce(c, s->op, s->dtype, s->src, s->rank, s->dims, s->mask, s->dst); break;
    case ST_SOFTMAX: st = rlx_cu_softmax(c, s->dtype, s->src, s->a, s->b, s->c2, s->dst); break;
    case ST_NORM:
      st = rlx_cu_norm(c, s->rms, s->dtype, s->src, s->aux[0], s->aux[1], s->a, s->b, s->eps, s->dst);
      break;
    case ST_MATMUL:
      st = rlx_cu_matmul(c, s->dtype, s->src, s->aux[0], s->dst, s->a, s->b, s->c2, s->d, s->a_off, s->b_off);
      break;
    case ST_D2D: st = rlx_cu_d2d(c, s->dst, s->src, s->bytes); break;
    case ST_CONV: st = rlx_cu_conv(c, s->rms, s->dtype, s->src, s->aux[0], s->dst, &s->geom); break;
    case ST_POOL:
      st = rlx_cu_pool(c, s->op, s->dtype, s->src, s->dst, s->dims[0], s->dims[1], s->dims[2], s->dims[3], s->dims[4],
                       s->pk, s->ps, s->ppb);
      break;
    case ST_SCATTER: st = rlx_cu_scatter_run(c, &s->sc); break;
    case ST_GATHER_EL: st = rlx_cu_gather_elements(c, &s->sc, s->esz); break;
    case ST_ATTN: st = rlx_cu_attention(c, &s->at); break;
    case ST_ROPE: st = rlx_cu_rope_run(c, &s->rope); break;
    case ST_CUMSUM: st = rlx_cu_cumsum(c, s->dtype, s->src, s->a, s->b, s->c2, s->rms, s->dst); break;
    case ST_ACT_BW: st = rlx_cu_act_backward(c, s->op, s->dtype, s->src, s->aux[0], s->dst, s->d); break;
    case ST_SCE:
      st = rlx_cu_sce(c, s->op, s->dtype, s->src, s->aux[0], s->aux_dtype, s->aux[1], s->a, s->b, s->dst);
      break;
    case ST_NORM_BW:
      st = rlx_cu_norm_backward(c, s->op, s->rms, s->dtype, s->src, s->aux[0], s->aux[1], s->a, s->b, s->eps, s->dst,
                                s->scratch);
      break;
    case ST_MAXPOOL_BW: st = rlx_cu_maxpool_backward(c, s->dtype, s->src, s->aux[0], s->dst, &s->p3); break;
    case ST_CONV_BW_W: st = rlx_cu_conv_backward_weight(c, s->dtype, s->src, s->aux[0], s->dst, &s->geom); break;
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
    case ST_DFT: st = rlx_cu_dft(c, s->dtype, s->src, s->dst, s->a, s->b, s->op, s->eps); break;
    case ST_REMAP: st = rlx_cu_remap_run(c, &s->remap); break;
    case ST_GATHER_BW:
      st = rlx_cu_gather_backward(c, s->dtype, s->src, s->aux[0], s->aux_dtype, s->a, s->b, s->c2, s->d, s->dst);
      break;
    case ST_REGION:
      for (uint32_t k = 0; k < s->n_regions && st == RLX_OK; k++) st = rlx_cu_region_run(c, &s->regions[k]);
      break;
    }
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
