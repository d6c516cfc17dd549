/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: the SPD manifold family and the symmetric eigendecompositions (spec ir-special §6).
 * Each rule emits the family's dedicated backward op (CPU kernels in ref/spd.c):
 *   Eigh / EighBatch        -> EighBackward / EighBatchBackward(y, dy)
 *   ReEig / LogEig          -> ReEig/LogEigBackward(lambda, U, dY), read from the packed forward;
 *                              only the Y segment of the cotangent is used (lambda and U are
 *                              outputs of the decomposition with no gradient path: a cotangent on
 *                              them is dropped, as in the spec)
 *   SpdBatchNorm            -> dX = SpdBatchNormBackwardX(M, G, dY), dG = ...BackwardG(X, M, G, dY);
 *                              the running mean M is detached (no gradient)
 *   SpdLogMap / SpdExpMap   -> ...Backward(P, X, dY) [2, n, n] = dP | dX
 *   SpdParallelTransport    -> ...Backward(P, Q, V, dY) [3, n, n] = dP | dQ | dV
 *   SpdMatrixFnBatch        -> SpdMatrixFnBatchBackward(X, dY)
 * The backward ops return symmetric gradients (the gradient with respect to a symmetric matrix
 * argument). BiMap has no rule: it is decomposed into MatMuls before differentiation. */
#include "autodiff/ad_internal.h"

static rlx_dim mat_side(const rlx_ad_ctx *c, rlx_id x) {
  rlx_shape s = ad_shape(c, x);
  return s.dims[s.rank - 1];
}

RLX_VJP_DECL(Eigh) {
  rlx_id in[2] = {y, dy};
  return ad_emit(c, RLX_OP_EighBackward, in, 2, NULL, NULL, &dx[0]);
}

RLX_VJP_DECL(EighBatch) {
  rlx_id in[2] = {y, dy};
  return ad_emit(c, RLX_OP_EighBatchBackward, in, 2, NULL, NULL, &dx[0]);
}

static rlx_status eig_vjp(rlx_ad_ctx *c, const rlx_node *n, rlx_id y, const rlx_id *x, rlx_id dy, rlx_id *dx) {
  rlx_dim nn = mat_side(c, x[0]);
  if (nn < 0) return ad_unsupported(c, "a symbolic matrix size");
  rlx_dim sq = nn * nn;
  rlx_id lam, u, dY;
  RLX_TRY(ad_narrow(c, y, 0, sq, nn, &lam));
  RLX_TRY(ad_narrow(c, y, 0, sq + nn, sq, &u));
  RLX_TRY(ad_narrow(c, dy, 0, 0, sq, &dY));
  rlx_id in[3] = {lam, u, dY};
  if (n->op == RLX_OP_ReEig) {
    rlx_attrs_ReEigBackward a = {.eps = n->attrs.ReEig.eps};
    return ad_emit(c, RLX_OP_ReEigBackward, in, 3, &a, NULL, &dx[0]);
  }
  rlx_attrs_LogEigBackward a = {.eps = n->attrs.LogEig.eps};
  return ad_emit(c, RLX_OP_LogEigBackward, in, 3, &a, NULL, &dx[0]);
}

RLX_VJP_DECL(ReEig) { return eig_vjp(c, n, y, x, dy, dx); }
RLX_VJP_DECL(LogEig) { return eig_vjp(c, n, y, x, dy, dx); }

RLX_VJP_DECL(SpdBatchNorm) {
  float eps = n->attrs.SpdBatchNorm.eps;
  if (c->want[0]) {
    rlx_attrs_SpdBatchNormBackwardX a = {.eps = eps};
    rlx_id in[3] = {x[1], x[2], dy};
    RLX_TRY(ad_emit(c, RLX_OP_SpdBatchNormBackwardX, in, 3, &a, NULL, &dx[0]));
  }
  dx[1] = RLX_NO_ID; /* the batch mean is detached */
  if (c->want[2]) {
    rlx_attrs_SpdBatchNormBackwardG a = {.eps = eps};
    rlx_id in[4] = {x[0], x[1], x[2], dy};
    RLX_TRY(ad_emit(c, RLX_OP_SpdBatchNormBackwardG, in, 4, &a, NULL, &dx[2]));
  }
  return RLX_OK;
}

/* Splits a packed [k, n, n] backward result into k gradients of [n, n]. */
static rlx_status unpack(rlx_ad_ctx *c, rlx_id packed, uint32_t k, rlx_dim nn, rlx_id *dx) {
  rlx_dim d[2] = {nn, nn};
  for (uint32_t i = 0; i < k; i++) {
    if (!c->want[i]) {
      dx[i] = RLX_NO_ID;
      continue;
    }
    rlx_id part;
    RLX_TRY(ad_narrow(c, packed, 0, i, 1, &part));
    RLX_TRY(ad_reshape_dims(c, part, 2, d, &dx[i]));
  }
  return RLX_OK;
}

static rlx_status packed_vjp(rlx_ad_ctx *c, rlx_op bw, const rlx_id *x, uint32_t k, rlx_id dy, rlx_id *dx) {
  rlx_dim nn = mat_side(c, x[0]);
  if (nn < 0) return ad_unsupported(c, "a symbolic matrix size");
  rlx_id in[4], packed;
  for (uint32_t i = 0; i < k; i++) in[i] = x[i];
  in[k] = dy;
  RLX_TRY(ad_emit(c, bw, in, k + 1, NULL, NULL, &packed));
  return unpack(c, packed, k, nn, dx);
}

RLX_VJP_DECL(SpdLogMap) { return packed_vjp(c, RLX_OP_SpdLogMapBackward, x, 2, dy, dx); }
RLX_VJP_DECL(SpdExpMap) { return packed_vjp(c, RLX_OP_SpdExpMapBackward, x, 2, dy, dx); }
RLX_VJP_DECL(SpdParallelTransport) { return packed_vjp(c, RLX_OP_SpdParallelTransportBackward, x, 3, dy, dx); }

RLX_VJP_DECL(SpdMatrixFnBatch) {
  rlx_attrs_SpdMatrixFnBatchBackward a = {.kind = n->attrs.SpdMatrixFnBatch.kind};
  rlx_id in[2] = {x[0], dy};
  return ad_emit(c, RLX_OP_SpdMatrixFnBatchBackward, in, 2, &a, NULL, &dx[0]);
}
