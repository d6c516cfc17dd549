/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Internal to the CUDA backend's lowering (lower.c: the table, the program, the first op
 * families; lower_more.c: backward, ordering, random, shape remaps, regions): the step record,
 * the program, and the helpers both use. */
#ifndef RLX_CUDA_LOWER_INTERNAL_H
#define RLX_CUDA_LOWER_INTERNAL_H

#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/cu_ext.h"
#include "backends/cuda/lower.h"
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
  ST_ATTN_BW,
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
  ST_DFT,
  ST_EXT /* cu_ext.h: norms2.cu / complex.cu */
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
  int trans;                    /* ST_MATMUL: operands stored transposed (rlx_cu_matmul) */
  rlx_cu_lt *lt;                /* ST_MATMUL: a cuBLASLt product with its epilogue, owned */
  rlx_cu_conv_geom geom;        /* ST_CONV */
  rlx_cu_dnn *dnn;              /* ST_CONV, ST_CONV_BW_W: the cuDNN plan (owned), else the direct kernels */
  int64_t pk[2], ps[2], ppb[2]; /* ST_POOL */
  rlx_cu_scatter sc;            /* ST_SCATTER / ST_GATHER_EL; sc.scratch is owned */
  rlx_cu_attn at;               /* ST_ATTN */
  rlx_cu_attn_bw abw;           /* ST_ATTN_BW (stats in scratch when owned) */
  rlx_cu_rope rope;             /* ST_ROPE */
  rlx_cu_pool3 p3;              /* ST_MAXPOOL_BW */
  rlx_cu_remap remap;           /* ST_REMAP */
  rlx_cu_region *regions;       /* ST_REGION: n_regions launches */
  rlx_cu_ext ext;               /* ST_EXT */
  rlx_cu_ew *post;              /* elementwise launches after the step's own (fused epilogues) */
  uint32_t n_post;
  struct cu_step *pre; /* steps queued before the step's own (a fused kind's inner products) */
  uint32_t n_pre;
  uint32_t n_regions;
  int aux_dtype;
  uint64_t key;  /* ST_RNG */
  void *scratch; /* owned device scratch (norm statistics, sort positions) */
  void *extra;   /* ST_ATTN_BW: owned buffer holding a sibling's dk or dv (extra_wrt) */
  int extra_wrt;
  rlx_cu_fft *fft; /* ST_DFT: the cuFFT plan, owned */
  int no_graph;    /* the step cannot be captured into a CUDA graph (cuSOLVER's iterative routines) */
  /* folds (lower_fold.c): */
  rlx_cu_norm_fuse nf;   /* ST_NORM_BW: statistics, an Add, beta's sums */
  void *colsum;          /* ST_ACT_BW: also the column sums of dx ([a, b]) here */
  int colsum_op;         /* ... as this Reduce op */
  rlx_id writes_also[2]; /* nodes whose slots the step writes besides its own */
  uint32_t n_writes_also;
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
  int graph_state; /* 0 first run, 1 capture at the next, -1 step by step */
  void *graph;     /* the instantiated CUDA graph once captured */
};

typedef struct lower_ctx {
  rlx_cu_prog *p;
  char why[256];
} lower_ctx;

typedef bool (*lower_fn)(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);

/* ---- helpers ---- */

static inline void *addr(const rlx_cu_prog *p, rlx_id id) { return p->arena + p->plan->offset[id]; }
static inline const rlx_shape *shape_of(const rlx_cu_prog *p, rlx_id id) { return &rlx_graph_node(p->g, id)->shape; }

static inline int64_t numel(const rlx_shape *s) {
  int64_t n = 1;
  for (uint32_t k = 0; k < s->rank; k++) n *= s->dims[k];
  return n;
}

static inline void dense_strides(const rlx_shape *s, int64_t *st) {
  int64_t acc = 1;
  for (int k = (int)s->rank - 1; k >= 0; k--) {
    st[k] = acc;
    acc *= s->dims[k];
  }
}

/* Strides (elements) reading operand shape s at the indices of output shape o (right-aligned
 * broadcasting: a missing or size-1 axis gets stride 0). */
static inline void bcast_strides(const rlx_shape *s, const rlx_shape *o, int64_t *st) {
  int64_t ds[RLX_MAX_RANK];
  dense_strides(s, ds);
  int shift = (int)o->rank - (int)s->rank;
  for (int k = 0; k < (int)o->rank; k++) {
    int j = k - shift;
    st[k] = (j < 0 || s->dims[j] == 1) ? 0 : ds[j];
  }
}

static inline bool fail(lower_ctx *L, const char *fmt, const char *a) {
  snprintf(L->why, sizeof L->why, fmt, a);
  return false;
}

static inline bool is_complex(int t) { return t == RLX_C64 || t == RLX_C128; }

/* ---- elementwise ---- */

static inline bool ew_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind, int sub) {
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

static inline bool lower_Activation(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
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
static inline bool lower_Cast(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_CAST, 0);
}
static inline bool lower_StopGradient(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_COPY, 0);
}
static inline bool lower_Binary(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
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
static inline bool lower_Compare(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int t = shape_of(L->p, n->inputs[0])->dtype, op = n->attrs.Compare.op;
  if (is_complex(t) && op != RLX_CMP_EQ && op != RLX_CMP_NE)
    return fail(L, "only Eq and Ne are defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  return ew_setup(L, id, n, s, RLX_CU_EW_COMPARE, op);
}
static inline bool lower_Where(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_WHERE, 0);
}
static inline bool lower_Fma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return ew_setup(L, id, n, s, RLX_CU_EW_FMA, 0);
}
static inline bool lower_Clamp(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  double lo = n->attrs.Clamp.min, hi = n->attrs.Clamp.max;
  if (lo != lo || hi != hi) return fail(L, "attributes min and max must not be %s", "NaN");
  if (is_complex(n->shape.dtype))
    return fail(L, "Clamp is not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!ew_setup(L, id, n, s, RLX_CU_EW_CLAMP, 0)) return false;
  s->ew.lo = lo;
  s->ew.hi = hi;
  return true;
}

static inline rlx_cu_copy *copies(cu_step *s, uint32_t n) {
  s->kind = ST_COPIES;
  s->copies = calloc(n ? n : 1, sizeof *s->copies);
  s->n_copies = n;
  return s->copies;
}

/* lower.c's MatMul row (the fused matmul kinds of lower_ext.c start from it). */
bool lower_MatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
/* lower.c's convolution geometry (Conv / Conv3d / ConvTranspose*; FusedConvBiasAct starts from it). */
bool conv_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, bool transposed,
                const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation,
                const rlx_ilist *output_padding, int64_t groups);

/* The lowering rows defined in lower_more.c. */
bool lower_ReluBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ActivationBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SoftmaxCrossEntropy(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SoftmaxCrossEntropyWithLogits(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SoftmaxCrossEntropyBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_LayerNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_LayerNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RmsNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RmsNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RmsNormBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_MaxPool2dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_MaxPool3dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Conv2dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Conv3dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Conv2dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Conv3dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ArgMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ArgMin(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_CumProd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_CumMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Sort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ArgSort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_TopK(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RngUniform(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RngNormal(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Trilu(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Slice(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Pad(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Tile(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Roll(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_CumsumBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GatherBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Fft(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);

/* The lowering rows defined in lower_ext.c, and its step runner (ST_EXT). */
rlx_status rlx_cu_ext_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
bool lower_GroupNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_LayerNorm2d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GroupNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GroupNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GroupNormBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchNormInference(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchNormInferenceBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchNormInferenceBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchNormInferenceBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Conjugate(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ComplexNormSq(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ComplexNormSqBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GatedResidual(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ResizeNearest2x(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_KvAppend(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FusedResidualLN(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FusedResidualRmsNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_AdaLayerNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Histogram(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_RopeBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_AxialRope2d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_ScatterNd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GatherNd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
/* lower.c: frees what a step owns; lower_fold.c: folds after lowering (backward sums, Transpose
 * -> MatMul, bias epilogues; in that order) */
void cu_step_release(rlx_cu_ctx *c, cu_step *s);
void cu_fold_backward_sums(rlx_cu_prog *p);
void cu_fold_transposes(rlx_cu_prog *p);
void cu_fold_bias_epilogues(rlx_cu_prog *p);
void cu_fold_attention_concat(rlx_cu_prog *p);
bool attn_siblings(const rlx_node *a, const rlx_node *b);

bool lower_FusedMatMulBiasAct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FusedMatMulResidual(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FusedSwiGLU(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FusedConvBiasAct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_PartitionedConv(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SplineActivation(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SplineActivationBackwardX(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SplineActivationBackwardCoeff(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_AdaLayerNormBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_GatedResidualBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FakeQuantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_FakeQuantizeBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_LoraMatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_DotGeneral(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Quantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Dequantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Interpolate3d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SynthReconstruct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SynthMatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_SynthMatMulBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Cholesky(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Det(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_LogDet(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_DenseSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_BatchedDenseSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_TriangularSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Qr(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Svd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_Eigh(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);
bool lower_EighBatch(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s);

#endif
