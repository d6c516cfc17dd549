/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the linear-algebra family: MatMul, DotGeneral, solves, factorisations, sorting. */
#include "infer_test.h"

static void test_matmul(void) {
  EXPECT(MatMul, NULL, NULL, SH(F32, 2, 4), SH(F32, 2, 3), SH(F32, 3, 4));
  /* batch dims broadcast NumPy-style; a side without batch dims takes the other's */
  EXPECT(MatMul, NULL, NULL, SH(F32, 5, 2, 4), SH(F32, 5, 2, 3), SH(F32, 3, 4));
  EXPECT(MatMul, NULL, NULL, SH(F32, 5, 2, 4), SH(F32, 2, 3), SH(F32, 5, 3, 4));
  EXPECT(MatMul, NULL, NULL, SH(F16, 7, 5, 2, 4), SH(F16, 7, 1, 2, 3), SH(F16, 5, 3, 4));
  /* symbolic: same symbol K agrees; M and N carry through */
  EXPECT(MatMul, NULL, NULL, SH(F32, SYM(0), 2, SYM(3)), SH(F32, SYM(0), 2, SYM(1)), SH(F32, SYM(1), SYM(3)));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "operand 1", SH(F32, 2, 3), SH(F32, 4, 5));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "column count", SH(F32, 2, SYM(1)), SH(F32, SYM(2), 5));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "column count", SH(F32, 2, 3), SH(F32, SYM(2), 5));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "operand 0", SH(F32, 3), SH(F32, 3, 4));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "operand 1", SH(F32, 2, 3), SH(F32, 3));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "rank >= 2", SCALAR(F32), SH(F32, 3, 4));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "batch dims", SH(F32, 3, 2, 3), SH(F32, 4, 3, 4));
  EXPECT_ERR(MatMul, NULL, NULL, SHAPE_ERR, "dtype", SH(F32, 2, 3), SH(F16, 3, 4));
}

static void test_dot_general(void) {
  rlx_attrs_DotGeneral a = {
      .lhs_contracting = IL(1), .rhs_contracting = IL(0), .lhs_batch = NOLIST, .rhs_batch = NOLIST}; /* plain matmul */
  EXPECT(DotGeneral, &a, NULL, SH(F32, 2, 4), SH(F32, 2, 3), SH(F32, 3, 4));
  /* batched: [b, m, k] x [b, k, n] -> [b, m, n] */
  rlx_attrs_DotGeneral bm = {
      .lhs_contracting = IL(2), .rhs_contracting = IL(1), .lhs_batch = IL(0), .rhs_batch = IL(0)};
  EXPECT(DotGeneral, &bm, NULL, SH(F32, 6, 2, 4), SH(F32, 6, 2, 3), SH(F32, 6, 3, 4));
  /* XLA order: batch ++ lhs free ++ rhs free, with batch axes not leading and free axes in order */
  rlx_attrs_DotGeneral x = {.lhs_contracting = IL(0), .rhs_contracting = IL(2), .lhs_batch = IL(2), .rhs_batch = IL(0)};
  /* lhs [K=3, M=5, B=7]; rhs [B=7, N=9, K=3] -> [7, 5, 9] */
  EXPECT(DotGeneral, &x, NULL, SH(F32, 7, 5, 9), SH(F32, 3, 5, 7), SH(F32, 7, 9, 3));
  /* two contracting axes */
  rlx_attrs_DotGeneral two = {
      .lhs_contracting = IL(1, 2), .rhs_contracting = IL(0, 1), .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT(DotGeneral, &two, NULL, SH(F64, 4, 6), SH(F64, 4, 2, 3), SH(F64, 2, 3, 6));
  /* outer product: nothing contracted */
  rlx_attrs_DotGeneral outer = {
      .lhs_contracting = NOLIST, .rhs_contracting = NOLIST, .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT(DotGeneral, &outer, NULL, SH(F32, 2, 3, 4), SH(F32, 2), SH(F32, 3, 4));
  /* symbolic batch: equal symbols agree */
  EXPECT(DotGeneral, &bm, NULL, SH(F32, SYM(0), 2, 4), SH(F32, SYM(0), 2, 3), SH(F32, SYM(0), 3, 4));
  EXPECT_ERR(DotGeneral, &bm, NULL, SHAPE_ERR, "batch pair 0", SH(F32, SYM(0), 2, 3), SH(F32, SYM(1), 3, 4));

  rlx_attrs_DotGeneral len = {
      .lhs_contracting = IL(1), .rhs_contracting = NOLIST, .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT_ERR(DotGeneral, &len, NULL, SHAPE_ERR, "attribute rhs_contracting", SH(F32, 2, 3), SH(F32, 3, 4));
  rlx_attrs_DotGeneral blen = {
      .lhs_contracting = IL(1), .rhs_contracting = IL(0), .lhs_batch = IL(0), .rhs_batch = NOLIST};
  EXPECT_ERR(DotGeneral, &blen, NULL, SHAPE_ERR, "attribute rhs_batch", SH(F32, 2, 3), SH(F32, 3, 4));
  rlx_attrs_DotGeneral oor = {
      .lhs_contracting = IL(2), .rhs_contracting = IL(0), .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT_ERR(DotGeneral, &oor, NULL, SHAPE_ERR, "attribute lhs_contracting", SH(F32, 2, 3), SH(F32, 3, 4));
  rlx_attrs_DotGeneral neg = {
      .lhs_contracting = IL(1), .rhs_contracting = IL(-2), .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT_ERR(DotGeneral, &neg, NULL, SHAPE_ERR, "attribute rhs_contracting", SH(F32, 2, 3), SH(F32, 3, 4));
  rlx_attrs_DotGeneral dup = {
      .lhs_contracting = IL(1, 1), .rhs_contracting = IL(0, 1), .lhs_batch = NOLIST, .rhs_batch = NOLIST};
  EXPECT_ERR(DotGeneral, &dup, NULL, SHAPE_ERR, "more than once", SH(F32, 2, 3), SH(F32, 3, 3));
  rlx_attrs_DotGeneral overlap = {
      .lhs_contracting = IL(0), .rhs_contracting = IL(0), .lhs_batch = IL(0), .rhs_batch = IL(1)};
  EXPECT_ERR(DotGeneral, &overlap, NULL, SHAPE_ERR, "attribute lhs_contracting", SH(F32, 3, 3), SH(F32, 3, 3));
  EXPECT_ERR(DotGeneral, &a, NULL, SHAPE_ERR, "contracting pair 0", SH(F32, 2, 3), SH(F32, 5, 4));
  EXPECT_ERR(DotGeneral, &a, NULL, SHAPE_ERR, "dtype", SH(F32, 2, 3), SH(BF16, 3, 4));
  EXPECT_ERR(DotGeneral, &outer, NULL, SHAPE_ERR, "rank 10", SH(F32, 1, 1, 1, 1, 1), SH(F32, 1, 1, 1, 1, 1));
}

static void test_solves(void) {
  EXPECT(DenseSolve, NULL, NULL, SH(F32, 4), SH(F32, 4, 4), SH(F32, 4));
  EXPECT(DenseSolve, NULL, NULL, SH(F64, 4, 2), SH(F64, 4, 4), SH(F64, 4, 2));
  EXPECT(DenseSolve, NULL, NULL, SH(F32, SYM(2), 3), SH(F32, SYM(2), SYM(2)), SH(F32, SYM(2), 3));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SH(F32, 4, 3), SH(F32, 4));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SH(F32, 4), SH(F32, 4));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 1 (b)", SH(F32, 4, 4), SH(F32, 3));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 1 (b)", SH(F32, 4, 4), SH(F32, 4, 2, 1));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 1 (b)", SH(F32, 4, 4), SCALAR(F32));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 4, 4), SH(F16, 4));
  EXPECT_ERR(DenseSolve, NULL, NULL, SHAPE_ERR, "floating-point", SH(I32, 4, 4), SH(I32, 4));

  EXPECT(BatchedDenseSolve, NULL, NULL, SH(F32, 8, 4), SH(F32, 8, 4, 4), SH(F32, 8, 4));
  EXPECT(BatchedDenseSolve, NULL, NULL, SH(F32, SYM(0), 4, 3), SH(F32, SYM(0), 4, 4), SH(F32, SYM(0), 4, 3));
  EXPECT_ERR(BatchedDenseSolve, NULL, NULL, SHAPE_ERR, "batch size", SH(F32, 8, 4, 4), SH(F32, 7, 4));
  EXPECT_ERR(BatchedDenseSolve, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SH(F32, 4, 4), SH(F32, 4));
  EXPECT_ERR(BatchedDenseSolve, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SH(F32, 8, 4, 5), SH(F32, 8, 4));
  EXPECT_ERR(BatchedDenseSolve, NULL, NULL, SHAPE_ERR, "operand 1 (b)", SH(F32, 8, 4, 4), SH(F32, 8, 5, 2));

  rlx_attrs_TriangularSolve t = {.lower = true, .transpose = true};
  EXPECT(TriangularSolve, &t, NULL, SH(F32, 3, 5), SH(F32, 3, 3), SH(F32, 3, 5));
  EXPECT(TriangularSolve, NULL, NULL, SH(F32, 3), SH(F32, 3, 3), SH(F32, 3));
  EXPECT_ERR(TriangularSolve, NULL, NULL, SHAPE_ERR, "operand 1 (b)", SH(F32, 3, 3), SH(F32, 5, 3));
  EXPECT_ERR(TriangularSolve, NULL, NULL, SHAPE_ERR, "square", SH(F32, 3, 2), SH(F32, 3));
  EXPECT_ERR(TriangularSolve, NULL, NULL, SHAPE_ERR, "dtype", SH(F32, 3, 3), SH(F64, 3));
}

static void test_factorisations(void) {
  EXPECT(Cholesky, NULL, NULL, SH(F32, 5, 5), SH(F32, 5, 5));
  EXPECT(Cholesky, NULL, NULL, SH(F64, SYM(4), SYM(4)), SH(F64, SYM(4), SYM(4)));
  EXPECT_ERR(Cholesky, NULL, NULL, SHAPE_ERR, "square", SH(F32, 5, 4));
  EXPECT_ERR(Cholesky, NULL, NULL, SHAPE_ERR, "square", SH(F32, SYM(4), 4));
  EXPECT_ERR(Cholesky, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SH(F32, 2, 5, 5));
  EXPECT_ERR(Cholesky, NULL, NULL, SHAPE_ERR, "operand 0 (A)", SCALAR(F32));
  EXPECT_ERR(Cholesky, NULL, NULL, SHAPE_ERR, "floating-point", SH(I64, 5, 5));

  EXPECT(Det, NULL, NULL, SCALAR(F32), SH(F32, 3, 3));
  EXPECT(LogDet, NULL, NULL, SCALAR(F64), SH(F64, 3, 3));
  EXPECT(Det, NULL, NULL, SCALAR(F32), SH(F32, SYM(1), SYM(1)));
  EXPECT_ERR(Det, NULL, NULL, SHAPE_ERR, "square", SH(F32, 3, 4));
  EXPECT_ERR(LogDet, NULL, NULL, SHAPE_ERR, "operand 0", SH(F32, 3));
  EXPECT_ERR(LogDet, NULL, NULL, SHAPE_ERR, "floating-point", SH(I32, 3, 3));

  rlx_attrs_Svd u = {.part = RLX_SVD_PART_U}, s = {.part = RLX_SVD_PART_S}, vt = {.part = RLX_SVD_PART_VT},
                bad = {.part = 7};
  EXPECT(Svd, &u, NULL, SH(F32, 6, 4), SH(F32, 6, 4));
  EXPECT(Svd, &s, NULL, SH(F32, 4), SH(F32, 6, 4));
  EXPECT(Svd, &vt, NULL, SH(F32, 4, 4), SH(F32, 6, 4));
  EXPECT(Svd, &u, NULL, SH(F32, 3, 3), SH(F32, 3, 8));
  EXPECT(Svd, &s, NULL, SH(F32, 3), SH(F32, 3, 8));
  EXPECT(Svd, &vt, NULL, SH(F32, 3, 8), SH(F32, 3, 8));
  EXPECT(Svd, &s, NULL, SH(F32, SYM(0)), SH(F32, SYM(0), SYM(0)));
  /* min(?0, 4) is unknown: taken from the declared shape, else an error */
  rlx_shape ds = SH(F32, 4);
  EXPECT(Svd, &s, &ds, SH(F32, 4), SH(F32, SYM(0), 4));
  EXPECT_ERR(Svd, &s, NULL, SHAPE_ERR, "declare the output shape", SH(F32, SYM(0), 4));
  EXPECT_ERR(Svd, &bad, NULL, SHAPE_ERR, "attribute part", SH(F32, 3, 3));
  EXPECT_ERR(Svd, &s, NULL, SHAPE_ERR, "matrix", SH(F32, 2, 3, 3));
  EXPECT_ERR(Svd, &s, NULL, SHAPE_ERR, "floating-point", SH(I8, 3, 3));

  rlx_attrs_Qr q = {.part = RLX_QR_PART_Q}, r = {.part = RLX_QR_PART_R}, qbad = {.part = -1};
  EXPECT(Qr, &q, NULL, SH(F32, 6, 4), SH(F32, 6, 4));
  EXPECT(Qr, &r, NULL, SH(F32, 4, 4), SH(F32, 6, 4));
  EXPECT(Qr, &q, NULL, SH(F32, 2, 2), SH(F32, 2, 5));
  EXPECT(Qr, &r, NULL, SH(F32, 2, 5), SH(F32, 2, 5));
  rlx_shape dq = SH(F32, SYM(0), 3);
  EXPECT(Qr, &q, &dq, SH(F32, SYM(0), 3), SH(F32, SYM(0), 3));
  EXPECT_ERR(Qr, &qbad, NULL, SHAPE_ERR, "attribute part", SH(F32, 3, 3));
  EXPECT_ERR(Qr, &r, NULL, SHAPE_ERR, "matrix", SH(F32, 3));
}

static void test_sort(void) {
  rlx_attrs_Sort s = {.axis = -1, .descending = true};
  EXPECT(Sort, &s, NULL, SH(F32, 2, 7), SH(F32, 2, 7));
  rlx_attrs_Sort s0 = {.axis = 0, .descending = false};
  EXPECT(Sort, &s0, NULL, SH(I32, SYM(1), 7), SH(I32, SYM(1), 7));
  rlx_attrs_Sort sneg = {.axis = -2, .descending = false};
  EXPECT(Sort, &sneg, NULL, SH(F32, 2, 7), SH(F32, 2, 7));
  rlx_attrs_Sort s2 = {.axis = 2, .descending = false}, sm3 = {.axis = -3, .descending = false};
  EXPECT_ERR(Sort, &s2, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 7));
  EXPECT_ERR(Sort, &sm3, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 7));
  EXPECT_ERR(Sort, &s, NULL, SHAPE_ERR, "scalar", SCALAR(F32));
  EXPECT_ERR(Sort, &s, NULL, SHAPE_ERR, "real", SH(C64, 4));
  EXPECT_ERR(Sort, &s, NULL, SHAPE_ERR, "real", SH(BOOL, 4));

  rlx_attrs_ArgSort a = {.axis = -1, .descending = false};
  EXPECT(ArgSort, &a, NULL, SH(I64, 3, 5), SH(F32, 3, 5));
  rlx_shape df = SH(F32, 3, 5), di32 = SH(I32, 3, 5), du8 = SH(U8, 3, 5);
  EXPECT(ArgSort, &a, &df, SH(F32, 3, 5), SH(F16, 3, 5));
  EXPECT(ArgSort, &a, &di32, SH(I32, 3, 5), SH(F16, 3, 5));
  /* an unsupported declared index dtype falls back to I64 (the caller then reports the mismatch) */
  EXPECT(ArgSort, &a, &du8, SH(I64, 3, 5), SH(F16, 3, 5));
  rlx_attrs_ArgSort a9 = {.axis = 9, .descending = false};
  EXPECT_ERR(ArgSort, &a9, NULL, SHAPE_ERR, "attribute axis", SH(F32, 3, 5));
}

/* The rules run through the graph builder: messages carry the node context. */
static void test_through_graph(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "t", &g));
  rlx_id a, b, m;
  CHECK_OK(rlx_input(g, "a", SH(F32, 2, 3), &a));
  CHECK_OK(rlx_input(g, "b", SH(F32, 4, 5), &b));
  CHECK_ERR(rlx_matmul(g, a, b, &m), RLX_ERR_SHAPE, "(MatMul): operand 1");
  rlx_id c;
  CHECK_OK(rlx_input(g, "c", SH(F32, 3, 5), &c));
  CHECK_OK(rlx_matmul(g, a, c, &m));
  const rlx_node *n = rlx_graph_node(g, m);
  rlx_shape want = SH(F32, 2, 5);
  CHECK(n && rlx_shape_equal(&n->shape, &want));
  rlx_graph_free(g);
}

int main(void) {
  test_matmul();
  test_dot_general();
  test_solves();
  test_factorisations();
  test_sort();
  test_through_graph();
  return rlx_test_finish("infer_linalg");
}
