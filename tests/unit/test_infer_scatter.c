/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the scatter / gather family. */
#include "infer_test.h"

static void test_scatter_add(void) {
  rlx_attrs_ScatterAdd a = {0};
  rlx_shape d = SH(F32, 100, 8);
  EXPECT(ScatterAdd, &a, &d, SH(F32, 100, 8), SH(F32, 5, 8), SH(I64, 5));
  EXPECT(ScatterAdd, &a, &d, SH(F32, 100, 8), SH(F32, 5, 8), SH(F32, 5));
  rlx_shape ds = SH(F32, SYM(5), 8);
  EXPECT(ScatterAdd, &a, &ds, SH(F32, SYM(5), 8), SH(F32, SYM(0), 8), SH(I32, SYM(0)));
  a.axis = -1;
  rlx_shape d1 = SH(F32, 4, 20);
  EXPECT(ScatterAdd, &a, &d1, SH(F32, 4, 20), SH(F32, 4, 5), SH(I64, 5));
  a.axis = 0;
  EXPECT_ERR(ScatterAdd, &a, NULL, SHAPE_ERR, "declared output shape", SH(F32, 5, 8), SH(I64, 5));
  rlx_shape dbad = SH(F32, 100, 9), dt = SH(F16, 100, 8), dr = SH(F32, 100);
  EXPECT_ERR(ScatterAdd, &a, &dbad, SHAPE_ERR, "declared shape [100, 9] f32", SH(F32, 5, 8), SH(I64, 5));
  EXPECT_ERR(ScatterAdd, &a, &dt, SHAPE_ERR, "declared shape", SH(F32, 5, 8), SH(I64, 5));
  EXPECT_ERR(ScatterAdd, &a, &dr, SHAPE_ERR, "declared shape", SH(F32, 5, 8), SH(I64, 5));
  EXPECT_ERR(ScatterAdd, &a, &d, SHAPE_ERR, "operand 1 (indices)", SH(F32, 5, 8), SH(I64, 4));
  EXPECT_ERR(ScatterAdd, &a, &d, SHAPE_ERR, "operand 1 (indices)", SH(F32, 5, 8), SH(I64, 5, 1));
  EXPECT_ERR(ScatterAdd, &a, &d, SHAPE_ERR, "operand 1 (indices) has dtype f16", SH(F32, 5, 8), SH(F16, 5));
  EXPECT_ERR(ScatterAdd, &a, &d, SHAPE_ERR, "scalar", SCALAR(F32), SH(I64, 1));
  a.axis = 2;
  EXPECT_ERR(ScatterAdd, &a, &d, SHAPE_ERR, "attribute axis", SH(F32, 5, 8), SH(I64, 5));
}

static void test_scatter_nd(void) {
  rlx_attrs_ScatterNd s = {.reduction = RLX_SCATTER_REDUCTION_NONE};
  EXPECT(ScatterNd, &s, NULL, SH(F32, 4, 5, 6), SH(F32, 4, 5, 6), SH(I64, 3, 2), SH(F32, 3, 6));
  EXPECT(ScatterNd, &s, NULL, SH(F32, 4, 5, 6), SH(F32, 4, 5, 6), SH(I64, 3, 3), SH(F32, 3));
  EXPECT(ScatterNd, &s, NULL, SH(F32, 4, 5, 6), SH(F32, 4, 5, 6), SH(I32, 2, 3, 1), SH(F32, 2, 3, 5, 6));
  s.reduction = RLX_SCATTER_REDUCTION_MAX;
  EXPECT(ScatterNd, &s, NULL, SH(F32, SYM(0), 6), SH(F32, SYM(0), 6), SH(I64, SYM(1), 1), SH(F32, SYM(1), 6));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5, 6), SH(I64, 3, 4), SH(F32, 3));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5, 6), SH(I64, 3, SYM(1)), SH(F32, 3));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 1 (indices) is a scalar", SH(F32, 4), SCALAR(I64), SCALAR(F32));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 2 (updates)", SH(F32, 4, 5, 6), SH(I64, 3, 2), SH(F32, 3, 5));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 2 (updates)", SH(F32, 4, 5, 6), SH(I64, 3, 2), SH(F32, 2, 6));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 2 has dtype f16", SH(F32, 4, 5, 6), SH(I64, 3, 2), SH(F16, 3, 6));
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "operand 1 (indices) has dtype f64", SH(F32, 4, 5, 6), SH(F64, 3, 2),
             SH(F32, 3, 6));
  s.reduction = 9;
  EXPECT_ERR(ScatterNd, &s, NULL, SHAPE_ERR, "attribute reduction", SH(F32, 4, 5, 6), SH(I64, 3, 2), SH(F32, 3, 6));
}

static void test_scatter_elements(void) {
  rlx_attrs_ScatterElements s = {.axis = 0, .reduction = RLX_SCATTER_REDUCTION_ADD};
  EXPECT(ScatterElements, &s, NULL, SH(F32, 4, 5), SH(F32, 4, 5), SH(I64, 2, 5), SH(F32, 2, 5));
  EXPECT(ScatterElements, &s, NULL, SH(F32, 4, 5), SH(F32, 4, 5), SH(I64, 7, 5), SH(F32, 7, 5)); /* along axis: any */
  s.axis = -1;
  EXPECT(ScatterElements, &s, NULL, SH(F32, 4, 5), SH(F32, 4, 5), SH(F32, 4, 3), SH(F32, 4, 3));
  EXPECT(ScatterElements, &s, NULL, SH(F32, SYM(0), 5), SH(F32, SYM(0), 5), SH(I64, SYM(0), 3), SH(F32, SYM(0), 3));
  s.axis = 0;
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5), SH(I64, 2, 6), SH(F32, 2, 6));
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5), SH(I64, 10), SH(F32, 10));
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "operand 2 (updates)", SH(F32, 4, 5), SH(I64, 2, 5), SH(F32, 2, 4));
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "operand 2 has dtype i64", SH(F32, 4, 5), SH(I64, 2, 5),
             SH(I64, 2, 5));
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SCALAR(I64), SCALAR(F32));
  s.axis = 2;
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 5), SH(I64, 2, 5), SH(F32, 2, 5));
  s = (rlx_attrs_ScatterElements){.axis = 0, .reduction = -1};
  EXPECT_ERR(ScatterElements, &s, NULL, SHAPE_ERR, "attribute reduction", SH(F32, 4, 5), SH(I64, 2, 5), SH(F32, 2, 5));
}

static void test_gather_nd(void) {
  rlx_attrs_GatherNd g = {0};
  EXPECT(GatherNd, &g, NULL, SH(F32, 3, 6), SH(F32, 4, 5, 6), SH(I64, 3, 2));
  EXPECT(GatherNd, &g, NULL, SH(F32, 3), SH(F32, 4, 5, 6), SH(I64, 3, 3));
  EXPECT(GatherNd, &g, NULL, SH(F32, 2, 3, 5, 6), SH(F32, 4, 5, 6), SH(F32, 2, 3, 1));
  EXPECT(GatherNd, &g, NULL, SH(F32, 5, 6), SH(F32, 4, 5, 6), SH(I64, 1));
  g.batch_dims = 1;
  EXPECT(GatherNd, &g, NULL, SH(F32, 4, 6), SH(F32, 4, 5, 6), SH(I64, 4, 1));
  EXPECT(GatherNd, &g, NULL, SH(F32, 4), SH(F32, 4, 5, 6), SH(I64, 4, 2));
  EXPECT(GatherNd, &g, NULL, SH(F32, SYM(0), 7, 6), SH(F32, SYM(0), 5, 6), SH(I64, SYM(0), 7, 1));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "batch axis 0", SH(F32, 4, 5, 6), SH(I64, 3, 1));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5, 6), SH(I64, 4, 3));
  g.batch_dims = 2;
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "attribute batch_dims", SH(F32, 4, 5, 6), SH(I64, 4, 1));
  g.batch_dims = -1;
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "attribute batch_dims", SH(F32, 4, 5, 6), SH(I64, 4, 1));
  g.batch_dims = 0;
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5, 6), SH(I64, 3, 4));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5, 6), SH(I64, 3, SYM(2)));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 1 (indices) has dtype bool", SH(F32, 4, 5, 6), SH(BOOL, 3, 1));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 0 (data) is a scalar", SCALAR(F32), SH(I64, 3, 1));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "operand 1 (indices) is a scalar", SH(F32, 4), SCALAR(I64));
  EXPECT_ERR(GatherNd, &g, NULL, SHAPE_ERR, "rank 14", SH(F32, 2, 2, 2, 2, 2, 2, 2, 2),
             SH(I64, 2, 2, 2, 2, 2, 2, 2, 1));
}

static void test_gather_elements(void) {
  rlx_attrs_GatherElements g = {.axis = 1};
  EXPECT(GatherElements, &g, NULL, SH(F16, 4, 3), SH(F16, 4, 5), SH(I64, 4, 3));
  g.axis = 0;
  EXPECT(GatherElements, &g, NULL, SH(F32, 7, 5), SH(F32, 4, 5), SH(F32, 7, 5));
  EXPECT(GatherElements, &g, NULL, SH(F32, 2, 3), SH(F32, 4, 5), SH(U8, 2, 3));
  g.axis = -1;
  EXPECT(GatherElements, &g, NULL, SH(F32, SYM(0), 2), SH(F32, SYM(0), 5), SH(I32, SYM(0), 2));
  g.axis = 0;
  EXPECT_ERR(GatherElements, &g, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5), SH(I64, 4, 6));
  EXPECT_ERR(GatherElements, &g, NULL, SHAPE_ERR, "operand 1 (indices)", SH(F32, 4, 5), SH(I64, 4));
  EXPECT_ERR(GatherElements, &g, NULL, SHAPE_ERR, "operand 1 (indices) has dtype bool", SH(F32, 4, 5), SH(BOOL, 4, 5));
  EXPECT_ERR(GatherElements, &g, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SCALAR(I64));
  g.axis = -3;
  EXPECT_ERR(GatherElements, &g, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 5), SH(I64, 4, 5));
}

int main(void) {
  test_scatter_add();
  test_scatter_nd();
  test_scatter_elements();
  test_gather_nd();
  test_gather_elements();
  return rlx_test_finish("infer_scatter");
}
