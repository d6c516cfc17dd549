/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of the softmax cross-entropy losses (see ref/backward_loss.c for the kernels):
 *   lse       = log(sum_c exp(logits - m)) + m,  m = max_c logits          ([N, 1])
 *   SoftmaxCrossEntropy            lse - sum_c targets * logits
 *   SoftmaxCrossEntropyWithLogits  lse - sum_c where(onehot, logits, 0)
 *   SoftmaxCrossEntropyBackward    (softmax(logits) - onehot) * d_loss[:, None]
 * onehot = (labels as i64)[:, None] == iota(C): labels are cast to i64 (a float label is
 * truncated toward zero) and a label outside [0, C) matches no class, so its row's loss is lse and
 * its gradient is the plain softmax — unlike the kernels, which fail with RLX_ERR_RUNTIME. */
#include "passes/decompose/decompose.h"

static const int64_t axis1[1] = {1};

/* [N, 1] log-sum-exp of the rows of x. */
static rlx_status row_lse(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_id m, z, s;
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_MAX, x, 1, axis1, true, &m));
  RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, x, m, &z));
  RLX_TRY(rlx_activation(g, RLX_ACT_EXP, z, &z));
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, z, 1, axis1, true, &s));
  RLX_TRY(rlx_activation(g, RLX_ACT_LOG, s, &s));
  return rlx_binary(g, RLX_BINOP_ADD, s, m, out);
}

/* Bool [N, C]: label n == class c. */
static rlx_status onehot(rlx_graph *g, const rlx_node *n, rlx_id labels, rlx_dim N, rlx_dim C, rlx_id *out) {
  if (C < 0) return dc_unsupported(n, "the class count (axis 1 of the logits) is symbolic");
  if (C > (rlx_dim)1 << 24)
    return dc_unsupported(n, "too many classes (%lld) for a constant class index", (long long)C);
  const rlx_allocator *al = rlx_graph_allocator(g);
  int64_t *iota = al->alloc(al->ctx, (size_t)(C ? C : 1) * sizeof *iota);
  if (!iota) return rlx_errorf(RLX_ERR_OOM, "out of memory for a class index");
  for (rlx_dim c = 0; c < C; c++) iota[c] = c;
  rlx_id cls;
  rlx_status s = rlx_i64s(g, (uint32_t)C, iota, &cls);
  al->free(al->ctx, iota);
  RLX_TRY(s);
  rlx_id l;
  rlx_dim ld[2] = {N, 1};
  RLX_TRY(rlx_cast_to(g, labels, RLX_I64, &l));
  RLX_TRY(rlx_reshape_dims(g, l, 2, ld, &l));
  return rlx_compare(g, RLX_CMP_EQ, l, cls, out);
}

/* [N] from [N, 1]. */
static rlx_status squeeze_rows(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_dim N = dc_shape(g, x).dims[0];
  return rlx_reshape_dims(g, x, 1, &N, out);
}

RLX_DECOMPOSE_DECL(SoftmaxCrossEntropy) {
  (void)src;
  (void)n;
  rlx_id lse, tx, dot;
  RLX_TRY(row_lse(dst, in[0], &lse));
  RLX_TRY(squeeze_rows(dst, lse, &lse));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, in[1], in[0], &tx));
  RLX_TRY(rlx_reduce_axes(dst, RLX_REDUCE_SUM, tx, 1, axis1, false, &dot));
  return rlx_binary(dst, RLX_BINOP_SUB, lse, dot, out);
}

RLX_DECOMPOSE_DECL(SoftmaxCrossEntropyWithLogits) {
  (void)src;
  rlx_shape xs = dc_shape(dst, in[0]);
  rlx_id lse, oh, zero, picked;
  RLX_TRY(onehot(dst, n, in[1], xs.dims[0], xs.dims[1], &oh));
  RLX_TRY(row_lse(dst, in[0], &lse));
  RLX_TRY(squeeze_rows(dst, lse, &lse));
  RLX_TRY(rlx_scalar(dst, (rlx_dtype)xs.dtype, 0.0, &zero));
  RLX_TRY(rlx_where(dst, oh, in[0], zero, &picked));
  RLX_TRY(rlx_reduce_axes(dst, RLX_REDUCE_SUM, picked, 1, axis1, false, &picked));
  return rlx_binary(dst, RLX_BINOP_SUB, lse, picked, out);
}

RLX_DECOMPOSE_DECL(SoftmaxCrossEntropyBackward) {
  (void)src;
  rlx_shape xs = dc_shape(dst, in[0]);
  rlx_id oh, p, g;
  RLX_TRY(onehot(dst, n, in[1], xs.dims[0], xs.dims[1], &oh));
  RLX_TRY(rlx_cast_to(dst, oh, (rlx_dtype)xs.dtype, &oh));
  rlx_attrs_Softmax sa = {.axis = 1};
  RLX_TRY(rlx_build_Softmax(dst, &in[0], 1, &sa, NULL, &p));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, p, oh, &p));
  rlx_dim gd[2] = {xs.dims[0], 1};
  RLX_TRY(rlx_reshape_dims(dst, in[2], 2, gd, &g));
  return rlx_binary(dst, RLX_BINOP_MUL, p, g, out);
}
