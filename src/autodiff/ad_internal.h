/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Internals of the autodiff transforms (src/autodiff/): the reverse-mode context handed to every
 * VJP rule, the rule table, and the small emit helpers the rules are written with.
 *
 * A VJP rule sees one node `n` of the prepared forward graph `c->fwd` and emits, into `c->dst`,
 * the gradients of the node's operands given the cotangent `dy` of its output. `y` and `x[i]` are
 * the dst ids of the node's forward value and of its operands (with gradient checkpointing they
 * may be recomputed copies). The rule writes dx[i] = RLX_NO_ID for operands that get no gradient
 * (indices, predicates, integer tensors, or operands with c->want[i] == false); every dx[i] it
 * writes must have exactly the shape of operand i. A rule that cannot differentiate this
 * particular node returns RLX_ERR_UNSUPPORTED through ad_unsupported (never a silent zero). */
#ifndef RLX_AD_INTERNAL_H
#define RLX_AD_INTERNAL_H

#include <stdbool.h>

#include "rlx/autodiff.h"
#include "passes/passes.h"

typedef struct rlx_ad_ctx {
  rlx_graph *dst;        /* graph being built (forward copy + backward nodes) */
  const rlx_graph *fwd;  /* prepared forward graph: the node being differentiated lives here */
  rlx_id *fmap;          /* fwd id -> dst id of its value (recomputed copy inside a checkpoint) */
  bool use_backward_ops; /* false: *Backward ops are replaced by their shared decompositions */
  const bool *want;      /* want[i]: operand i of the current node needs a gradient */
  rlx_id node;           /* fwd id of the node being differentiated (messages) */
  const rlx_allocator *al;
  const rlx_graph *orig; /* the user's graph, and origin[fwd id] = the node of `orig` that fwd */
  const rlx_id *origin;  /* node came from (itself, or the fused node it was decomposed from) */
  const int32_t *dep;    /* dep[fwd id] >= 0: the node depends on a differentiated leaf */
} rlx_ad_ctx;

typedef rlx_status (*rlx_vjp_fn)(rlx_ad_ctx *c, const rlx_node *n, rlx_id y, const rlx_id *x, rlx_id dy, rlx_id *dx);
/* [RLX_OP_X] = rlx_vjp_X (src/autodiff/vjp/table.c); NULL = no rule. */
extern const rlx_vjp_fn rlx_vjp_table[RLX_OP_COUNT];

#if defined(__GNUC__)
#define RLX_AD_MAYBE_UNUSED __attribute__((unused))
#else
#define RLX_AD_MAYBE_UNUSED
#endif
/* Rules need not use every parameter. */
#define RLX_VJP_DECL(N)                                                                                      \
  rlx_status rlx_vjp_##N(rlx_ad_ctx *c, const rlx_node *n RLX_AD_MAYBE_UNUSED, rlx_id y RLX_AD_MAYBE_UNUSED, \
                         const rlx_id *x RLX_AD_MAYBE_UNUSED, rlx_id dy, rlx_id *dx)

/* vjp/elementwise.c */
RLX_VJP_DECL(Activation);
RLX_VJP_DECL(Cast);
RLX_VJP_DECL(StopGradient);
RLX_VJP_DECL(Binary);
RLX_VJP_DECL(Where);
RLX_VJP_DECL(Fma);
RLX_VJP_DECL(Clamp);
RLX_VJP_DECL(ReluBackward);
RLX_VJP_DECL(FakeQuantize);
/* vjp/shape.c */
RLX_VJP_DECL(Reshape);
RLX_VJP_DECL(Transpose);
RLX_VJP_DECL(Narrow);
RLX_VJP_DECL(Concat);
RLX_VJP_DECL(Expand);
RLX_VJP_DECL(Gather);
RLX_VJP_DECL(Reverse);
RLX_VJP_DECL(Pad);
RLX_VJP_DECL(Slice);
RLX_VJP_DECL(Tile);
RLX_VJP_DECL(Trilu);
RLX_VJP_DECL(Roll);
RLX_VJP_DECL(KvAppend);
RLX_VJP_DECL(GatherBackward);
/* vjp/reduce.c */
RLX_VJP_DECL(Reduce);
RLX_VJP_DECL(Softmax);
RLX_VJP_DECL(Cumsum);
RLX_VJP_DECL(CumProd);
RLX_VJP_DECL(Sort);
RLX_VJP_DECL(CumsumBackward);
/* vjp/linalg.c */
RLX_VJP_DECL(MatMul);
RLX_VJP_DECL(DenseSolve);
RLX_VJP_DECL(BatchedDenseSolve);
RLX_VJP_DECL(Det);
RLX_VJP_DECL(LogDet);
RLX_VJP_DECL(Cholesky);
RLX_VJP_DECL(TriangularSolve);
RLX_VJP_DECL(GroupedMatMul);
RLX_VJP_DECL(Svd);
RLX_VJP_DECL(Qr);
/* vjp/norm.c */
RLX_VJP_DECL(LayerNorm);
RLX_VJP_DECL(RmsNorm);
RLX_VJP_DECL(GroupNorm);
RLX_VJP_DECL(BatchNormInference);
RLX_VJP_DECL(LayerNorm2d);
RLX_VJP_DECL(AdaLayerNorm);
RLX_VJP_DECL(GatedResidual);
RLX_VJP_DECL(BatchNormInferenceBackwardBeta);
/* vjp/attention.c */
RLX_VJP_DECL(Attention);
RLX_VJP_DECL(Rope);
RLX_VJP_DECL(RopeBackward);
RLX_VJP_DECL(SoftmaxCrossEntropy);
RLX_VJP_DECL(SoftmaxCrossEntropyWithLogits);
/* vjp/conv.c */
RLX_VJP_DECL(Conv);
RLX_VJP_DECL(Conv3d);
RLX_VJP_DECL(ConvTranspose2d);
RLX_VJP_DECL(ConvTranspose3d);
RLX_VJP_DECL(Pool);
RLX_VJP_DECL(ResizeNearest2x);
RLX_VJP_DECL(Interpolate3d);
RLX_VJP_DECL(Im2Col);
RLX_VJP_DECL(Conv2dBackwardInput);
RLX_VJP_DECL(Conv2dBackwardWeight);
RLX_VJP_DECL(Conv3dBackwardInput);
RLX_VJP_DECL(Conv3dBackwardWeight);
/* vjp/scatter.c */
RLX_VJP_DECL(ScatterAdd);
RLX_VJP_DECL(GatherElements);
RLX_VJP_DECL(GatherNd);
RLX_VJP_DECL(ScatterElements);
RLX_VJP_DECL(ScatterNd);
/* vjp/control.c */
RLX_VJP_DECL(Scan);
RLX_VJP_DECL(CustomFn);
/* vjp/signal.c */
RLX_VJP_DECL(Fft);
/* vjp/custom.c and vjp/spd.c (issue 11) */
RLX_VJP_DECL(Custom);
RLX_VJP_DECL(GaussianSplatRender);
RLX_VJP_DECL(Eigh);
RLX_VJP_DECL(EighBatch);
RLX_VJP_DECL(ReEig);
RLX_VJP_DECL(LogEig);
RLX_VJP_DECL(SpdBatchNorm);
RLX_VJP_DECL(SpdLogMap);
RLX_VJP_DECL(SpdExpMap);
RLX_VJP_DECL(SpdParallelTransport);
RLX_VJP_DECL(SpdMatrixFnBatch);
/* vjp/quant.c (quantization family) */
RLX_VJP_DECL(Quantize);
RLX_VJP_DECL(Dequantize);
RLX_VJP_DECL(ScaledQuantize);
RLX_VJP_DECL(QMatMul);
RLX_VJP_DECL(QConv2d);
RLX_VJP_DECL(ScaledMatMul);
RLX_VJP_DECL(FakeQuantizeLSQ);
RLX_VJP_DECL(DequantGroupedMatMul);
RLX_VJP_DECL(SynthMatMul);
RLX_VJP_DECL(SplineActivation);
/* ---- sequence models and signal ops (issue 11 items 2-3) ---- */
/* vjp/recurrent.c */
RLX_VJP_DECL(GatedDeltaNet);
/* vjp/signal_ops.c */
RLX_VJP_DECL(LogMel);
RLX_VJP_DECL(ComplexNormSq);
RLX_VJP_DECL(Conjugate);
/* ---- end of sequence models and signal ops ---- */
/* Scan normalisation before the sweep (vjp/control.c): body Params become broadcast operands,
 * broadcast operands become scanned operands, the full trajectory is saved. */
bool rlx_ad_scan_needs_prepare(const rlx_node *n);
rlx_status rlx_ad_prepare_scan(rlx_graph *dst, const rlx_node *n, const rlx_id *in, rlx_id *out);

/* ---- the reverse-mode engine (grad.c), shared by grad, jvp and hvp ---- */

typedef struct rlx_ad_request {
  const rlx_graph *f;  /* forward graph */
  const rlx_id *roots; /* ids of f whose cotangents are seeded (usually f's one output) */
  uint32_t n_roots;
  const char *const *seeds; /* name of the seed Input of each root */
  const rlx_id *wrt;        /* leaves of f to differentiate with respect to */
  uint32_t n_wrt;
  const rlx_id *checkpoints; /* ids of f that start recomputed segments (may be NULL) */
  uint32_t n_checkpoints;
  bool use_backward_ops;
  bool keep_outputs; /* result outputs = [f's outputs..., grads...] instead of [grads...] */
} rlx_ad_request;

/* Builds the gradient graph described by `r`. */
rlx_status rlx_ad_reverse(const rlx_ad_request *r, rlx_graph **out);

/* Resolves a wrt name of f to its Param (preferred) or Input leaf. */
rlx_status rlx_ad_find_leaf(const rlx_graph *f, const char *name, rlx_id *out);

/* ---- emit helpers (ad_util.c); every node is built with shape inference ---- */

rlx_shape ad_shape(const rlx_ad_ctx *c, rlx_id x);
rlx_dtype ad_dtype(const rlx_ad_ctx *c, rlx_id x);

/* RLX_ERR_UNSUPPORTED "node %7 "name" (Op): <why>" for the node being differentiated. */
rlx_status ad_unsupported(const rlx_ad_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Writes `%7 "name" (Op)` for node id of g into buf. */
void ad_describe(const rlx_graph *g, rlx_id id, char *buf, size_t cap);
/* Describes fwd node id in terms of the user's graph: `%7 "name" (Op)`, or for a node created by
 * decomposing a fused user node `%7 "name" (FusedOp), inside its decomposition: %12 (Op)`. */
void ad_describe_fwd(const rlx_ad_ctx *c, rlx_id id, char *buf, size_t cap);

/* Constants: a rank-0 value, a filled tensor of static shape s (scalar + Expand), zeros of x's
 * shape (symbolic extents allowed). */
rlx_status ad_scalar(rlx_ad_ctx *c, rlx_dtype t, double v, rlx_id *out);
rlx_status ad_fill(rlx_ad_ctx *c, const rlx_shape *s, double v, rlx_id *out);
rlx_status ad_zeros_like(rlx_ad_ctx *c, rlx_id x, rlx_id *out);
rlx_status ad_const_values(rlx_ad_ctx *c, const rlx_shape *s, const double *v, rlx_id *out);

/* Elementwise. ad_bin_s: x <op> scalar v; ad_s_bin: scalar v <op> x (both in x's dtype). */
rlx_status ad_bin(rlx_ad_ctx *c, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_bin_s(rlx_ad_ctx *c, rlx_binop op, rlx_id x, double v, rlx_id *out);
rlx_status ad_s_bin(rlx_ad_ctx *c, rlx_binop op, double v, rlx_id x, rlx_id *out);
rlx_status ad_add(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_sub(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_mul(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_div(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_neg(rlx_ad_ctx *c, rlx_id x, rlx_id *out);
rlx_status ad_act(rlx_ad_ctx *c, rlx_act act, rlx_id x, rlx_id *out);
rlx_status ad_cmp(rlx_ad_ctx *c, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out);
/* Compare x against scalar v (in x's dtype). */
rlx_status ad_cmp_s(rlx_ad_ctx *c, rlx_cmp op, rlx_id x, double v, rlx_id *out);
rlx_status ad_where(rlx_ad_ctx *c, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out);
/* Cast; x itself when it already has dtype t. */
rlx_status ad_cast(rlx_ad_ctx *c, rlx_id x, rlx_dtype t, rlx_id *out);
/* A bool/0-1 mask as a float tensor of dtype t. */
rlx_status ad_mask(rlx_ad_ctx *c, rlx_id cond, rlx_dtype t, rlx_id *out);

/* Shapes. ad_reshape/ad_expand take a target shape (dims only; dtype ignored) and return x itself
 * when nothing changes. Axes are non-negative. */
rlx_status ad_reshape(rlx_ad_ctx *c, rlx_id x, const rlx_shape *to, rlx_id *out);
rlx_status ad_reshape_dims(rlx_ad_ctx *c, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out);
rlx_status ad_expand(rlx_ad_ctx *c, rlx_id x, const rlx_shape *to, rlx_id *out);
rlx_status ad_transpose(rlx_ad_ctx *c, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out);
/* Swaps the last two axes. */
rlx_status ad_mT(rlx_ad_ctx *c, rlx_id x, rlx_id *out);
rlx_status ad_narrow(rlx_ad_ctx *c, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out);
rlx_status ad_concat(rlx_ad_ctx *c, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out);
/* Zero padding of `before`/`after` elements on one axis (Pad, constant 0). */
rlx_status ad_pad_axis(rlx_ad_ctx *c, rlx_id x, uint32_t axis, int64_t before, int64_t after, rlx_id *out);
rlx_status ad_reverse_axes(rlx_ad_ctx *c, rlx_id x, uint32_t n, const int64_t *axes, rlx_id *out);
rlx_status ad_reduce(rlx_ad_ctx *c, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes, bool keep,
                     rlx_id *out);
/* Sum over one axis, kept as extent 1. */
rlx_status ad_sum_keep(rlx_ad_ctx *c, rlx_id x, uint32_t axis, rlx_id *out);
rlx_status ad_matmul(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out);
rlx_status ad_unsqueeze(rlx_ad_ctx *c, rlx_id x, uint32_t pos, rlx_id *out);

/* Sums gradient g over the axes along which `to` was broadcast to g's shape, then reshapes to
 * `to` (NumPy right alignment). g itself when the shapes already agree. */
rlx_status ad_unbroadcast(rlx_ad_ctx *c, rlx_id g, const rlx_shape *to, rlx_id *out);
/* g reshaped to `kept` (a reduced shape with kept unit axes), then broadcast to the shape of ref
 * (Expand; for symbolic extents a Where that takes its shape from ref). */
rlx_status ad_broadcast_back(rlx_ad_ctx *c, rlx_id g, const rlx_shape *kept, rlx_id ref, rlx_id *out);

/* Appends op with inferred shape (declared may be NULL). When c->use_backward_ops is false and op
 * is a *Backward kind with a shared decomposition, the decomposition is emitted instead. */
rlx_status ad_emit(rlx_ad_ctx *c, rlx_op op, const rlx_id *in, uint32_t n_in, const void *attrs,
                   const rlx_shape *declared, rlx_id *out);

/* Sum of all elements, rank 0. */
rlx_status ad_sum_all(rlx_ad_ctx *c, rlx_id x, rlx_id *out);

#endif
