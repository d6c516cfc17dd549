/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: the SPD manifold family and the eigen backwards (spec ir-special §6).
 * SPD operands are filled CF_SPD (M M^T / n + a I), tangent vectors and cotangents CF_SYM. The
 * backward ops whose operands must be a consistent eigendecomposition (ReEig/LogEig/Eigh
 * backwards) are built from a matrix x by a hook that runs the forward first; their float64
 * reference (tests/reference/ref_spd.py) is PyTorch autograd of the forward, keyed by `body`.
 * See cases.h for the row format. */
#include "cases.h"

/* [x, dy] -> ReEigBackward / LogEigBackward(lambda, U, dy) of ReEig / LogEig(x). */
static rlx_status spd_eig_bw(rlx_graph *g, const rlx_id *in, bool log_fn, float eps, rlx_id *out) {
  const rlx_shape *xs = &rlx_graph_node(g, in[0])->shape;
  int64_t nn = xs->dims[0], sq = nn * nn;
  rlx_id fwd, lam, u;
  if (log_fn) {
    rlx_attrs_LogEig a = {.eps = eps};
    RLX_TRY(rlx_build_LogEig(g, in, 1, &a, NULL, &fwd));
  } else {
    rlx_attrs_ReEig a = {.eps = eps};
    RLX_TRY(rlx_build_ReEig(g, in, 1, &a, NULL, &fwd));
  }
  rlx_attrs_Narrow nl = {.axis = 0, .start = sq, .len = nn}, nu = {.axis = 0, .start = sq + nn, .len = sq};
  RLX_TRY(rlx_build_Narrow(g, &fwd, 1, &nl, NULL, &lam));
  RLX_TRY(rlx_build_Narrow(g, &fwd, 1, &nu, NULL, &u));
  rlx_id ops[3] = {lam, u, in[1]};
  if (log_fn) {
    rlx_attrs_LogEigBackward a = {.eps = eps};
    return rlx_build_LogEigBackward(g, ops, 3, &a, NULL, out);
  }
  rlx_attrs_ReEigBackward a = {.eps = eps};
  return rlx_build_ReEigBackward(g, ops, 3, &a, NULL, out);
}

static rlx_status build_reeig_bw(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return spd_eig_bw(g, in, false, 0.5f, out);
}

static rlx_status build_logeig_bw(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return spd_eig_bw(g, in, true, 1e-4f, out);
}

/* [a, bar] -> EighBackward(Eigh(a), bar) (or the batched pair for rank-3 a). */
static rlx_status build_eigh_bw(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  bool batch = rlx_graph_node(g, in[0])->shape.rank == 3;
  rlx_id fwd;
  if (batch)
    RLX_TRY(rlx_build_EighBatch(g, in, 1, NULL, &fwd));
  else
    RLX_TRY(rlx_build_Eigh(g, in, 1, NULL, &fwd));
  rlx_id ops[2] = {fwd, in[1]};
  return batch ? rlx_build_EighBatchBackward(g, ops, 2, NULL, out) : rlx_build_EighBackward(g, ops, 2, NULL, out);
}

#define FN(K) AT(SpdMatrixFnBatch, .kind = RLX_SPD_FN_##K)
#define FNB(K) AT(SpdMatrixFnBatchBackward, .kind = RLX_SPD_FN_##K)
#define SPD(DT, ...) INF(DT, CF_SPD, 0.5, 0, __VA_ARGS__)
#define SYM(DT, ...) INF(DT, CF_SYM, 0, 0, __VA_ARGS__)

static const conf_case conf_cases_spd[] = {
    /* ---- forward ops ---- */
    {"bimap_f64", RLX_OP_BiMap, NULL, 2, {IN(F64, 3, 5), SPD(F64, 5, 5)}},
    {"bimap_f32", RLX_OP_BiMap, NULL, 2, {IN(F32, 4, 3), SPD(F32, 3, 3)}},
    {"reeig_f64", RLX_OP_ReEig, AT(ReEig, .eps = 0.4f), 1, {SPD(F64, 4, 4)}},
    {"reeig_f32", RLX_OP_ReEig, AT(ReEig, .eps = 0.3f), 1, {SPD(F32, 3, 3)}},
    {"logeig_f64", RLX_OP_LogEig, AT(LogEig, .eps = 1e-4f), 1, {SPD(F64, 4, 4)}},
    {"logeig_f32", RLX_OP_LogEig, AT(LogEig, .eps = 1e-4f), 1, {SPD(F32, 3, 3)}},
    {"logeig_floor", RLX_OP_LogEig, AT(LogEig, .eps = 0.8f), 1, {SPD(F64, 3, 3)}},
    {"spd_batchnorm_f64",
     RLX_OP_SpdBatchNorm,
     AT(SpdBatchNorm, .eps = 1e-5f),
     3,
     {SPD(F64, 3, 4, 4), SPD(F64, 4, 4), SPD(F64, 4, 4)}},
    {"spd_batchnorm_f32",
     RLX_OP_SpdBatchNorm,
     AT(SpdBatchNorm, .eps = 1e-5f),
     3,
     {SPD(F32, 2, 3, 3), SPD(F32, 3, 3), SPD(F32, 3, 3)}},
    {"spd_karcher_f64", RLX_OP_SpdKarcherMean, AT(SpdKarcherMean, .iters = 50, .tol = 1e-12f), 1, {SPD(F64, 4, 3, 3)}},
    {"spd_karcher_f32", RLX_OP_SpdKarcherMean, AT(SpdKarcherMean, .iters = 50, .tol = 1e-9f), 1, {SPD(F32, 3, 3, 3)}},
    {"spd_karcher_one_iter", RLX_OP_SpdKarcherMean, AT(SpdKarcherMean, .iters = 1, .tol = 0), 1, {SPD(F64, 3, 2, 2)}},
    {"spd_karcher_w_f64",
     RLX_OP_SpdKarcherMeanWeighted,
     AT(SpdKarcherMeanWeighted, .iters = 50, .tol = 1e-12f),
     2,
     {SPD(F64, 4, 3, 3), INF(F64, CF_UNIFORM, 0.2, 2, 4)}},
    {"spd_karcher_w_zero",
     RLX_OP_SpdKarcherMeanWeighted,
     AT(SpdKarcherMeanWeighted, .iters = 50, .tol = 1e-12f),
     2,
     {SPD(F64, 3, 3, 3), INF(F64, CF_CONST, 0, 0, 3)}},
    {"spd_logmap_f64", RLX_OP_SpdLogMap, NULL, 2, {SPD(F64, 4, 4), SPD(F64, 4, 4)}},
    {"spd_logmap_f32", RLX_OP_SpdLogMap, NULL, 2, {SPD(F32, 3, 3), SPD(F32, 3, 3)}},
    {"spd_expmap_f64", RLX_OP_SpdExpMap, NULL, 2, {SPD(F64, 4, 4), SYM(F64, 4, 4)}},
    {"spd_expmap_f32", RLX_OP_SpdExpMap, NULL, 2, {SPD(F32, 3, 3), SYM(F32, 3, 3)}},
    {"spd_transport_f64", RLX_OP_SpdParallelTransport, NULL, 3, {SPD(F64, 4, 4), SPD(F64, 4, 4), SYM(F64, 4, 4)}},
    {"spd_transport_f32", RLX_OP_SpdParallelTransport, NULL, 3, {SPD(F32, 3, 3), SPD(F32, 3, 3), SYM(F32, 3, 3)}},
    {"spd_fn_logm", RLX_OP_SpdMatrixFnBatch, FN(LOGM), 1, {SPD(F64, 2, 4, 4)}},
    {"spd_fn_expm", RLX_OP_SpdMatrixFnBatch, FN(EXPM), 1, {SYM(F64, 2, 4, 4)}},
    {"spd_fn_sqrtm", RLX_OP_SpdMatrixFnBatch, FN(SQRTM), 1, {SPD(F64, 3, 3, 3)}},
    {"spd_fn_invsqrtm", RLX_OP_SpdMatrixFnBatch, FN(INVSQRTM), 1, {SPD(F64, 2, 3, 3)}},
    {"spd_fn_logm_f32", RLX_OP_SpdMatrixFnBatch, FN(LOGM), 1, {SPD(F32, 2, 3, 3)}},
    /* half precision: computed in double from the f16 / bf16 operands, rounded once (tight tolerance) */
    {"bimap_bf16", RLX_OP_BiMap, NULL, 2, {IN(BF16, 2, 3), SPD(BF16, 3, 3)}, .tol = 0.25},
    {"logeig_f16", RLX_OP_LogEig, AT(LogEig, .eps = 1e-4f), 1, {SPD(F16, 3, 3)}, .tol = 1.0 / 64},
    {"spd_logmap_f16", RLX_OP_SpdLogMap, NULL, 2, {SPD(F16, 3, 3), SPD(F16, 3, 3)}, .tol = 1.0 / 64},
    {"spd_fn_sqrtm_bf16", RLX_OP_SpdMatrixFnBatch, FN(SQRTM), 1, {SPD(BF16, 2, 3, 3)}, .tol = 1.0 / 64},
    {"spd_fn_empty_batch", RLX_OP_SpdMatrixFnBatch, FN(SQRTM), 1, {SPD(F64, 0, 3, 3)}},

    /* ---- backward ops (reference: autograd of the forward) ---- */
    {"reeig_bw_f64",
     RLX_OP_ReEigBackward,
     NULL,
     2,
     {SPD(F64, 4, 4), SYM(F64, 4, 4)},
     .build = build_reeig_bw,
     .body = "reeig_bw_eps0.5"},
    {"logeig_bw_f64",
     RLX_OP_LogEigBackward,
     NULL,
     2,
     {SPD(F64, 4, 4), SYM(F64, 4, 4)},
     .build = build_logeig_bw,
     .body = "logeig_bw_eps1e-4"},
    {"logeig_bw_f32",
     RLX_OP_LogEigBackward,
     NULL,
     2,
     {SPD(F32, 3, 3), SYM(F32, 3, 3)},
     .build = build_logeig_bw,
     .body = "logeig_bw_eps1e-4",
     .tol = 4},
    {"eigh_bw_f64",
     RLX_OP_EighBackward,
     NULL,
     2,
     {SYM(F64, 4, 4), IN(F64, 20)},
     .build = build_eigh_bw,
     .body = "eigh_bw"},
    {"eigh_batch_bw_f64",
     RLX_OP_EighBatchBackward,
     NULL,
     2,
     {SYM(F64, 2, 3, 3), IN(F64, 2, 12)},
     .build = build_eigh_bw,
     .body = "eigh_bw"},
    {"spd_bn_bw_x_f64",
     RLX_OP_SpdBatchNormBackwardX,
     AT(SpdBatchNormBackwardX, .eps = 1e-5f),
     3,
     {SPD(F64, 4, 4), SPD(F64, 4, 4), SYM(F64, 2, 4, 4)}},
    {"spd_bn_bw_g_f64",
     RLX_OP_SpdBatchNormBackwardG,
     AT(SpdBatchNormBackwardG, .eps = 1e-5f),
     4,
     {SPD(F64, 2, 3, 3), SPD(F64, 3, 3), SPD(F64, 3, 3), SYM(F64, 2, 3, 3)}},
    {"spd_logmap_bw_f64", RLX_OP_SpdLogMapBackward, NULL, 3, {SPD(F64, 3, 3), SPD(F64, 3, 3), SYM(F64, 3, 3)}},
    {"spd_expmap_bw_f64", RLX_OP_SpdExpMapBackward, NULL, 3, {SPD(F64, 3, 3), SYM(F64, 3, 3), SYM(F64, 3, 3)}},
    {"spd_transport_bw_f64",
     RLX_OP_SpdParallelTransportBackward,
     NULL,
     4,
     {SPD(F64, 3, 3), SPD(F64, 3, 3), SYM(F64, 3, 3), SYM(F64, 3, 3)}},
    {"spd_fn_bw_logm", RLX_OP_SpdMatrixFnBatchBackward, FNB(LOGM), 2, {SPD(F64, 2, 3, 3), SYM(F64, 2, 3, 3)}},
    {"spd_fn_bw_expm", RLX_OP_SpdMatrixFnBatchBackward, FNB(EXPM), 2, {SYM(F64, 2, 3, 3), SYM(F64, 2, 3, 3)}},
    {"spd_fn_bw_sqrtm", RLX_OP_SpdMatrixFnBatchBackward, FNB(SQRTM), 2, {SPD(F64, 2, 3, 3), SYM(F64, 2, 3, 3)}},
    {"spd_fn_bw_invsqrtm", RLX_OP_SpdMatrixFnBatchBackward, FNB(INVSQRTM), 2, {SPD(F64, 1, 4, 4), SYM(F64, 1, 4, 4)}},
    {"spd_fn_bw_logm_f32",
     RLX_OP_SpdMatrixFnBatchBackward,
     FNB(LOGM),
     2,
     {SPD(F32, 2, 3, 3), SYM(F32, 2, 3, 3)},
     .tol = 4},
};

#undef FN
#undef FNB
#undef SPD
#undef SYM
