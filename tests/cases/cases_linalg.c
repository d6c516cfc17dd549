/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: linear algebra (MatMul, DotGeneral, DenseSolve, BatchedDenseSolve,
 * Cholesky, TriangularSolve, Det, LogDet, Svd, Qr, Eigh, EighBatch, GroupedMatMul). Matrices
 * that are factorised are filled well-conditioned (CF_WELLCOND), SPD (CF_SPD) or symmetric
 * (CF_SYM). See cases.h for the row format. */
#include "cases.h"

#define DOT(LC, RC, LB, RB) AT(DotGeneral, .lhs_contracting = LC, .rhs_contracting = RC, .lhs_batch = LB, .rhs_batch = RB)
#define TRI(LOWER, TRANS) AT(TriangularSolve, .lower = LOWER, .transpose = TRANS)

static const conf_case conf_cases_linalg[] = {
    /* ---- MatMul ---- */
    {"matmul_2d", RLX_OP_MatMul, NULL, 2, {IN(F32, 3, 4), IN(F32, 4, 5)}},
    {"matmul_batched", RLX_OP_MatMul, NULL, 2, {IN(F32, 2, 3, 4), IN(F32, 2, 4, 5)}},
    {"matmul_bcast_batch", RLX_OP_MatMul, NULL, 2, {IN(F32, 2, 1, 3, 4), IN(F32, 3, 4, 5)}},
    {"matmul_rhs_unbatched", RLX_OP_MatMul, NULL, 2, {IN(F32, 2, 3, 4), IN(F32, 4, 2)}},
    {"matmul_lhs_unbatched", RLX_OP_MatMul, NULL, 2, {IN(F32, 3, 4), IN(F32, 2, 4, 2)}},
    {"matmul_f64", RLX_OP_MatMul, NULL, 2, {IN(F64, 5, 7), IN(F64, 7, 3)}},
    {"matmul_f16", RLX_OP_MatMul, NULL, 2, {IN(F16, 4, 8), IN(F16, 8, 3)}},
    {"matmul_bf16", RLX_OP_MatMul, NULL, 2, {IN(BF16, 4, 8), IN(BF16, 8, 3)}},
    {"matmul_i32", RLX_OP_MatMul, NULL, 2, {IN(I32, 3, 4), IN(I32, 4, 2)}},
    {"matmul_i8_saturate", RLX_OP_MatMul, NULL, 2, {INF(I8, CF_INT, -100, 100, 3, 4), INF(I8, CF_INT, -100, 100, 4, 2)}},
    {"matmul_bool", RLX_OP_MatMul, NULL, 2, {IN(BOOL, 3, 4), IN(BOOL, 4, 2)}},
    {"matmul_c64", RLX_OP_MatMul, NULL, 2, {IN(C64, 2, 3), IN(C64, 3, 2)}},
    {"matmul_k0", RLX_OP_MatMul, NULL, 2, {IN(F32, 3, 0), IN(F32, 0, 4)}},
    {"matmul_m0", RLX_OP_MatMul, NULL, 2, {IN(F32, 0, 3), IN(F32, 3, 4)}},
    {"matmul_batch0", RLX_OP_MatMul, NULL, 2, {IN(F32, 0, 2, 3), IN(F32, 3, 4)}},
    {"matmul_special", RLX_OP_MatMul, NULL, 2, {INF(F32, CF_SPECIAL, 0, 0, 3, 4), IN(F32, 4, 2)}},
    {"matmul_outer", RLX_OP_MatMul, NULL, 2, {IN(F32, 4, 1), IN(F32, 1, 3)}},
    {"matmul_large_k", RLX_OP_MatMul, NULL, 2, {IN(F32, 8, 257), IN(F32, 257, 9)}},
    {"matmul_larger", RLX_OP_MatMul, NULL, 2, {IN(F32, 65, 130), IN(F32, 130, 67)}},
    {"dense_solve_larger", RLX_OP_DenseSolve, NULL, 2, {INF(F64, CF_WELLCOND, 0, 0, 40, 40), IN(F64, 40, 3)}},
    {"matmul_param_weight", RLX_OP_MatMul, NULL, 2, {IN(F32, 2, 3, 4), PARAM(F32, 4, 6)}},

    /* ---- DotGeneral ---- */
    {"dot_general_matmul", RLX_OP_DotGeneral, DOT(IL(1), IL(0), IL0, IL0), 2, {IN(F32, 3, 4), IN(F32, 4, 5)}},
    {"dot_general_transposed", RLX_OP_DotGeneral, DOT(IL(0), IL(1), IL0, IL0), 2, {IN(F32, 4, 3), IN(F32, 5, 4)}},
    {"dot_general_batch", RLX_OP_DotGeneral, DOT(IL(2), IL(1), IL(0), IL(0)), 2, {IN(F32, 2, 3, 4), IN(F32, 2, 4, 5)}},
    {"dot_general_batch_last", RLX_OP_DotGeneral, DOT(IL(1), IL(0), IL(2), IL(2)), 2, {IN(F32, 3, 4, 2), IN(F32, 4, 5, 2)}},
    {"dot_general_two_contract", RLX_OP_DotGeneral, DOT(IL(1, 2), IL(0, 1), IL0, IL0), 2, {IN(F64, 3, 2, 4), IN(F64, 2, 4, 5)}},
    {"dot_general_inner", RLX_OP_DotGeneral, DOT(IL(0), IL(0), IL0, IL0), 2, {IN(F32, 6), IN(F32, 6)}},
    {"dot_general_outer", RLX_OP_DotGeneral, DOT(IL0, IL0, IL0, IL0), 2, {IN(F32, 3), IN(F32, 2)}},

    /* ---- solves ---- */
    {"dense_solve_vec", RLX_OP_DenseSolve, NULL, 2, {INF(F32, CF_WELLCOND, 0, 0, 4, 4), IN(F32, 4)}},
    {"dense_solve_mat", RLX_OP_DenseSolve, NULL, 2, {INF(F32, CF_WELLCOND, 0, 0, 5, 5), IN(F32, 5, 3)}},
    {"dense_solve_f64", RLX_OP_DenseSolve, NULL, 2, {INF(F64, CF_WELLCOND, 1.5, 0, 6, 6), IN(F64, 6, 2)}},
    {"batched_dense_solve_vec", RLX_OP_BatchedDenseSolve, NULL, 2, {INF(F32, CF_WELLCOND, 0, 0, 3, 4, 4), IN(F32, 3, 4)}},
    {"batched_dense_solve_mat", RLX_OP_BatchedDenseSolve, NULL, 2, {INF(F64, CF_WELLCOND, 0, 0, 2, 3, 3), IN(F64, 2, 3, 2)}},
    {"triangular_solve_lower", RLX_OP_TriangularSolve, TRI(true, false), 2, {INF(F32, CF_WELLCOND, 0, 0, 4, 4), IN(F32, 4, 2)}},
    {"triangular_solve_upper", RLX_OP_TriangularSolve, TRI(false, false), 2, {INF(F32, CF_WELLCOND, 0, 0, 4, 4), IN(F32, 4, 3)}},
    {"triangular_solve_lower_t", RLX_OP_TriangularSolve, TRI(true, true), 2, {INF(F64, CF_WELLCOND, 0, 0, 5, 5), IN(F64, 5, 2)}},
    {"triangular_solve_upper_t", RLX_OP_TriangularSolve, TRI(false, true), 2, {INF(F64, CF_WELLCOND, 0, 0, 3, 3), IN(F64, 3)}},
    {"triangular_solve_vec", RLX_OP_TriangularSolve, TRI(true, false), 2, {INF(F32, CF_WELLCOND, 0, 0, 6, 6), IN(F32, 6)}},

    /* ---- factorisations and determinants ---- */
    {"cholesky_f32", RLX_OP_Cholesky, NULL, 1, {INF(F32, CF_SPD, 0, 0, 4, 4)}},
    {"cholesky_f64", RLX_OP_Cholesky, NULL, 1, {INF(F64, CF_SPD, 0.5, 0, 6, 6)}},
    {"cholesky_1x1", RLX_OP_Cholesky, NULL, 1, {INF(F32, CF_SPD, 0, 0, 1, 1)}},
    {"det_f32", RLX_OP_Det, NULL, 1, {INF(F32, CF_WELLCOND, 0, 0, 4, 4)}},
    {"det_f64_normal", RLX_OP_Det, NULL, 1, {IN(F64, 5, 5)}},
    {"det_2x2", RLX_OP_Det, NULL, 1, {IN(F32, 2, 2)}},
    {"logdet_spd", RLX_OP_LogDet, NULL, 1, {INF(F32, CF_SPD, 0, 0, 5, 5)}},
    {"logdet_f64_normal", RLX_OP_LogDet, NULL, 1, {IN(F64, 4, 4)}},
    {"svd_s_tall", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_S), 1, {IN(F32, 5, 3)}},
    {"svd_s_wide", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_S), 1, {IN(F64, 3, 6)}},
    {"svd_u_tall", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_U), 1, {IN(F32, 5, 3)}},
    {"svd_vt_tall", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_VT), 1, {IN(F32, 5, 3)}},
    {"svd_u_wide", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_U), 1, {IN(F64, 3, 4)}},
    {"svd_vt_wide", RLX_OP_Svd, AT(Svd, .part = RLX_SVD_PART_VT), 1, {IN(F64, 3, 4)}},
    {"qr_q_tall", RLX_OP_Qr, AT(Qr, .part = RLX_QR_PART_Q), 1, {IN(F32, 5, 3)}},
    {"qr_r_tall", RLX_OP_Qr, AT(Qr, .part = RLX_QR_PART_R), 1, {IN(F32, 5, 3)}},
    {"qr_q_wide", RLX_OP_Qr, AT(Qr, .part = RLX_QR_PART_Q), 1, {IN(F64, 3, 5)}},
    {"qr_r_wide", RLX_OP_Qr, AT(Qr, .part = RLX_QR_PART_R), 1, {IN(F64, 3, 5)}},
    {"qr_square", RLX_OP_Qr, AT(Qr, .part = RLX_QR_PART_R), 1, {IN(F64, 4, 4)}},
    {"eigh_f32", RLX_OP_Eigh, NULL, 1, {INF(F32, CF_SYM, 0, 0, 4, 4)}},
    {"eigh_f64", RLX_OP_Eigh, NULL, 1, {INF(F64, CF_SYM, 0, 0, 5, 5)}},
    {"eigh_spd", RLX_OP_Eigh, NULL, 1, {INF(F64, CF_SPD, 0, 0, 3, 3)}},
    {"eigh_batch_f32", RLX_OP_EighBatch, NULL, 1, {INF(F32, CF_SYM, 0, 0, 3, 4, 4)}},
    {"eigh_batch_f64", RLX_OP_EighBatch, NULL, 1, {INF(F64, CF_SYM, 0, 0, 2, 3, 3)}},

    /* ---- GroupedMatMul ---- */
    {"grouped_matmul_i64_idx", RLX_OP_GroupedMatMul, NULL, 3, {IN(F32, 6, 4), IN(F32, 3, 4, 5), INF(I64, CF_INT, 0, 2, 6)}},
    {"grouped_matmul_f32_idx", RLX_OP_GroupedMatMul, NULL, 3, {IN(F32, 5, 3), IN(F32, 2, 3, 2), INF(F32, CF_INT, 0, 1, 5)}},
    {"grouped_matmul_f64", RLX_OP_GroupedMatMul, NULL, 3, {IN(F64, 4, 2), IN(F64, 4, 2, 3), INF(I32, CF_INT, 0, 3, 4)}},
};

#undef DOT
#undef TRI
