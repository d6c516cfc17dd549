/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, scatter / gather: ScatterAdd (axis, duplicates, f32 and integer indices),
 * ScatterNd (all five reductions, negative indices, slices, empty indices), ScatterElements,
 * GatherNd (batch_dims) and GatherElements; out-of-range and non-integral indices are runtime
 * errors. Expected tensors are written out by hand. */
#include "ref_b_test.h"

static void test_scatter_add(void) {
  rt c;
  /* axis 0: updates [4, 2], indices (0, 2, 0, 1) -> [3, 2] */
  rlx_attrs_ScatterAdd a = {.axis = 0};
  rlx_shape o = SHP(F32, 3, 2);
  CHECK_OK(
      RT_RUN(&c, ScatterAdd, &a, &o, {SHP(F32, 4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8)}, {SHP(F32, 4), VALS(0, 2, 0, 1)}));
  CHECK_OUT(&c, VALS(1 + 5, 2 + 6, 7, 8, 3, 4), 6, 0, 0);
  rt_free(&c);
  /* axis 1 (also -1): updates [2, 3], I64 indices (1, 1, 0) -> [2, 3] (column 2 stays 0) */
  rlx_attrs_ScatterAdd b = {.axis = -1};
  rlx_shape ob = SHP(I32, 2, 3);
  CHECK_OK(RT_RUN(&c, ScatterAdd, &b, &ob, {SHP(I32, 2, 3), VALS(1, 2, 3, 4, 5, 6)}, {SHP(I64, 3), VALS(1, 1, 0)}));
  CHECK_OUT(&c, VALS(3, 3, 0, 6, 9, 0), 6, 0, 0);
  rt_free(&c);
  /* duplicates accumulate in double and round once: 2^24 + 1 + 1 in f32 */
  rlx_shape o1 = SHP(F32, 1);
  CHECK_OK(RT_RUN(&c, ScatterAdd, &a, &o1, {SHP(F32, 3), VALS(16777216.0, 1, 1)}, {SHP(I32, 3), VALS(0, 0, 0)}));
  CHECK_OUT(&c, VALS(16777218.0), 1, 0, 0);
  rt_free(&c);
  /* out of range, negative, non-integral */
  const double bad[3][2] = {{0, 3}, {-1, 0}, {0.5, 1}};
  const char *msg[3] = {"index 3 (element 1 of operand 1)", "index -1", "not an integer"};
  for (int k = 0; k < 3; k++) {
    CHECK_OK(rt_build(&c, RLX_OP_ScatterAdd, &a, &o, false, 2,
                      (rt_arg[]){{SHP(F32, 2, 2), VALS(1, 2, 3, 4)}, {SHP(F32, 2), bad[k]}}));
    CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, msg[k]);
    CHECK(strstr(rlx_last_error(), "ScatterAdd node 'node'") != NULL);
    rt_free(&c);
  }
  /* no updates: zeros */
  CHECK_OK(RT_RUN(&c, ScatterAdd, &a, &o, {SHP(F32, 0, 2), NULL}, {SHP(I64, 0), NULL}));
  CHECK_OUT(&c, VALS(0, 0, 0, 0, 0, 0), 6, 0, 0);
  rt_free(&c);
}

static void test_scatter_nd(void) {
  rt c;
  const double data[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  /* rows: indices [[1], [-1]] (-1 -> row 3), reduction None */
  rlx_attrs_ScatterNd a = {.reduction = RLX_SCATTER_REDUCTION_NONE};
  CHECK_OK(RT_RUN(&c, ScatterNd, &a, NULL, {SHP(F64, 4, 3), data}, {SHP(I64, 2, 1), VALS(1, -1)},
                  {SHP(F64, 2, 3), VALS(-1, -2, -3, -4, -5, -6)}));
  CHECK_OUT(&c, VALS(0, 1, 2, -1, -2, -3, 6, 7, 8, -4, -5, -6), 12, 0, 0);
  rt_free(&c);
  /* duplicates: None keeps the last, Add sums */
  CHECK_OK(RT_RUN(&c, ScatterNd, &a, NULL, {SHP(F32, 4, 3), data}, {SHP(F32, 2, 1), VALS(0, 0)},
                  {SHP(F32, 2, 3), VALS(1, 1, 1, 2, 2, 2)}));
  CHECK_OUT(&c, VALS(2, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 12, 0, 0);
  rt_free(&c);
  a.reduction = RLX_SCATTER_REDUCTION_ADD;
  CHECK_OK(RT_RUN(&c, ScatterNd, &a, NULL, {SHP(F32, 4, 3), data}, {SHP(F32, 2, 1), VALS(0, 0)},
                  {SHP(F32, 2, 3), VALS(1, 1, 1, 2, 2, 2)}));
  CHECK_OUT(&c, VALS(3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10, 11), 12, 0, 0);
  rt_free(&c);
  /* elements (k = rank): Mul, Max, Min on [2, 2]; indices (0,0), (1,-1), (0,0) */
  const double d2[4] = {2, 3, 4, 5};
  const double want[3][4] = {{2 * 10 * 0.5, 3, 4, 5 * 7}, {10, 3, 4, 7}, {0.5, 3, 4, 5}};
  const int reds[3] = {RLX_SCATTER_REDUCTION_MUL, RLX_SCATTER_REDUCTION_MAX, RLX_SCATTER_REDUCTION_MIN};
  for (int k = 0; k < 3; k++) {
    rlx_attrs_ScatterNd r = {.reduction = reds[k]};
    CHECK_OK(RT_RUN(&c, ScatterNd, &r, NULL, {SHP(F64, 2, 2), d2}, {SHP(I32, 3, 2), VALS(0, 0, 1, -1, 0, 0)},
                    {SHP(F64, 3), VALS(10, 7, 0.5)}));
    CHECK_OUT(&c, want[k], 4, 0, 0);
    rt_free(&c);
  }
  /* integer data: Add saturates */
  rlx_attrs_ScatterNd ad = {.reduction = RLX_SCATTER_REDUCTION_ADD};
  CHECK_OK(
      RT_RUN(&c, ScatterNd, &ad, NULL, {SHP(I8, 2), VALS(100, 0)}, {SHP(I64, 1, 1), VALS(0)}, {SHP(I8, 1), VALS(100)}));
  CHECK_OUT(&c, VALS(127, 0), 2, 0, 0);
  rt_free(&c);
  /* out of range after the wrap */
  const double oob[2] = {4, -5};
  for (int k = 0; k < 2; k++) {
    CHECK_OK(rt_build(&c, RLX_OP_ScatterNd, &a, NULL, false, 3,
                      (rt_arg[]){{SHP(F64, 4, 3), data}, {SHP(I64, 1, 1), &oob[k]}, {SHP(F64, 1, 3), data}}));
    CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "out of range for data axis 0 of extent 4");
    rt_free(&c);
  }
  /* empty indices: a copy of data */
  CHECK_OK(RT_RUN(&c, ScatterNd, &a, NULL, {SHP(F64, 4, 3), data}, {SHP(I64, 0, 1), NULL}, {SHP(F64, 0, 3), NULL}));
  CHECK_OUT(&c, data, 12, 0, 0);
  rt_free(&c);
}

static void test_scatter_elements(void) {
  rt c;
  const double data[6] = {1, 2, 3, 4, 5, 6};
  /* axis 1, indices [[0, -1], [2, 2]] */
  rlx_attrs_ScatterElements a = {.axis = 1, .reduction = RLX_SCATTER_REDUCTION_NONE};
  CHECK_OK(RT_RUN(&c, ScatterElements, &a, NULL, {SHP(F32, 2, 3), data}, {SHP(I64, 2, 2), VALS(0, -1, 2, 2)},
                  {SHP(F32, 2, 2), VALS(10, 20, 30, 40)}));
  CHECK_OUT(&c, VALS(10, 2, 20, 4, 5, 40), 6, 0, 0);
  rt_free(&c);
  a.reduction = RLX_SCATTER_REDUCTION_ADD;
  CHECK_OK(RT_RUN(&c, ScatterElements, &a, NULL, {SHP(F32, 2, 3), data}, {SHP(I64, 2, 2), VALS(0, -1, 2, 2)},
                  {SHP(F32, 2, 2), VALS(10, 20, 30, 40)}));
  CHECK_OUT(&c, VALS(11, 2, 23, 4, 5, 76), 6, 0, 0);
  rt_free(&c);
  /* axis 0, indices [1, 3] shorter than data on axis 1: [[1, 0, 1]] */
  rlx_attrs_ScatterElements b = {.axis = 0, .reduction = RLX_SCATTER_REDUCTION_MAX};
  CHECK_OK(RT_RUN(&c, ScatterElements, &b, NULL, {SHP(I32, 2, 3), data}, {SHP(F32, 1, 3), VALS(1, 0, -1)},
                  {SHP(I32, 1, 3), VALS(0, 9, 9)}));
  CHECK_OUT(&c, VALS(1, 9, 3, 4, 5, 9), 6, 0, 0);
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_ScatterElements, &b, NULL, false, 3,
                    (rt_arg[]){{SHP(I32, 2, 3), data}, {SHP(F32, 1, 3), VALS(1, 2, 0)}, {SHP(I32, 1, 3), data}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "index 2 (element 1 of operand 1) is out of range for data axis 0");
  rt_free(&c);
}

static void test_gathers(void) {
  rt c;
  double data[24];
  for (int i = 0; i < 24; i++) data[i] = i;
  /* GatherNd, full tuples: data [2, 3], indices [[1, 2], [0, -1]] */
  rlx_attrs_GatherNd g0 = {.batch_dims = 0};
  CHECK_OK(RT_RUN(&c, GatherNd, &g0, NULL, {SHP(F32, 2, 3), data}, {SHP(I64, 2, 2), VALS(1, 2, 0, -1)}));
  CHECK_OUT(&c, VALS(5, 2), 2, 0, 0);
  rt_free(&c);
  /* slices: data [2, 3, 4], indices [[1], [0]] -> [2, 3, 4] */
  CHECK_OK(RT_RUN(&c, GatherNd, &g0, NULL, {SHP(F64, 2, 3, 4), data}, {SHP(I32, 2, 1), VALS(1, 0)}));
  {
    double want[24];
    for (int i = 0; i < 12; i++) want[i] = 12 + i, want[12 + i] = i;
    CHECK_OUT(&c, want, 24, 0, 0);
  }
  rt_free(&c);
  /* batch_dims 1: data [2, 3, 4], indices [2, 2, 1] -> [2, 2, 4]; out[b][j] = data[b][idx[b][j]] */
  rlx_attrs_GatherNd g1 = {.batch_dims = 1};
  CHECK_OK(RT_RUN(&c, GatherNd, &g1, NULL, {SHP(F64, 2, 3, 4), data}, {SHP(F32, 2, 2, 1), VALS(2, 0, -3, 1)}));
  {
    const int rows[4] = {2, 0, 0, 1};
    double want[16];
    for (int bj = 0; bj < 4; bj++)
      for (int e = 0; e < 4; e++) want[bj * 4 + e] = data[((bj / 2) * 3 + rows[bj]) * 4 + e];
    CHECK_OUT(&c, want, 16, 0, 0);
  }
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_GatherNd, &g1, NULL, false, 2,
                    (rt_arg[]){{SHP(F64, 2, 3, 4), data}, {SHP(F32, 2, 2, 1), VALS(2, 0, 3, 1)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "index 3 (element 2 of operand 1) is out of range for data axis 1");
  rt_free(&c);

  /* GatherElements: axis 1 with a negative index; axis 0 */
  rlx_attrs_GatherElements e1 = {.axis = 1};
  CHECK_OK(RT_RUN(&c, GatherElements, &e1, NULL, {SHP(I64, 2, 3), data}, {SHP(I64, 2, 2), VALS(2, -3, 1, 1)}));
  CHECK_OUT(&c, VALS(2, 0, 4, 4), 4, 0, 0);
  rt_free(&c);
  rlx_attrs_GatherElements e0 = {.axis = 0};
  CHECK_OK(RT_RUN(&c, GatherElements, &e0, NULL, {SHP(F32, 2, 3), data}, {SHP(I32, 1, 3), VALS(1, 0, -1)}));
  CHECK_OUT(&c, VALS(3, 1, 5), 3, 0, 0);
  rt_free(&c);
  CHECK_OK(rt_build(&c, RLX_OP_GatherElements, &e1, NULL, false, 2,
                    (rt_arg[]){{SHP(F32, 2, 3), data}, {SHP(I32, 2, 2), VALS(0, 0, -4, 0)}}));
  CHECK_ERR(rt_exec(&c), RLX_ERR_RUNTIME, "index -4 (element 2 of operand 1) is out of range for data axis 1");
  rt_free(&c);
  /* empty indices */
  CHECK_OK(RT_RUN(&c, GatherElements, &e1, NULL, {SHP(F32, 2, 3), data}, {SHP(I32, 2, 0), NULL}));
  CHECK(rt_out_n(&c) == 0);
  rt_free(&c);
}

int main(void) {
  test_scatter_add();
  test_scatter_nd();
  test_scatter_elements();
  test_gathers();
  return rlx_test_finish("ref_scatter");
}
