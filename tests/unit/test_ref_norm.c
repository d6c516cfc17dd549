/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, normalisation: LayerNorm, RmsNorm (with beta and the folded [rows, H]
 * output), LayerNorm2d, GroupNorm, BatchNormInference (feature axis last), AdaLayerNorm (both norm
 * kinds, broadcast modulation) and GatedResidual (float and saturating integer), in f32, f64, f16
 * and bf16. Expectations are computed with independent loops in double. */
#include "ref_b_test.h"

/* Reference LayerNorm / RmsNorm of one row (no affine). */
static void ref_row(const double *x, double *y, int n, double eps, bool rms) {
  double m = 0, v = 0;
  for (int i = 0; i < n; i++) m += x[i];
  m /= n;
  if (rms) m = 0;
  for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
  v /= n;
  for (int i = 0; i < n; i++) y[i] = (x[i] - m) / sqrt(v + eps);
}

static void test_layer_rms(void) {
  rt c;
  /* hand-worked: [1, 2, 3], eps 0 -> (-sqrt(1.5), 0, sqrt(1.5)) */
  rlx_attrs_LayerNorm ln = {.axis = -1, .eps = 0.0f};
  CHECK_OK(RT_RUN(&c, LayerNorm, &ln, NULL, {SHP(F64, 3), VALS(1, 2, 3)}, {SHP(F64, 3), VALS(1, 1, 1)},
                  {SHP(F64, 3), VALS(0, 0, 0)}));
  CHECK_OUT(&c, VALS(-sqrt(1.5), 0, sqrt(1.5)), 3, 1e-15, 0);
  rt_free(&c);

  double x[15], g[5], b[5], want[15];
  rt_fill(x, 15, 1);
  rt_fill(g, 5, 2);
  rt_fill(b, 5, 3);
  for (int rms = 0; rms < 2; rms++) {
    double eps = rms ? 1e-6 : 1e-5;
    for (int r = 0; r < 3; r++) {
      ref_row(x + r * 5, want + r * 5, 5, (double)(float)eps, rms);
      for (int i = 0; i < 5; i++) want[r * 5 + i] = want[r * 5 + i] * g[i] + b[i];
    }
    const rlx_dtype types[4] = {RLX_F64, RLX_F32, RLX_F16, RLX_BF16};
    const double tol[4] = {1e-14, 1e-6, 2e-3, 1.6e-2};
    for (int k = 0; k < 4; k++) {
      rlx_shape xs = rlx_shape_make(types[k], 2, (rlx_dim[]){3, 5}), ps = rlx_shape_make(types[k], 1, (rlx_dim[]){5});
      rlx_attrs_RmsNorm rn = {.axis = -1, .eps = (float)eps};
      rlx_attrs_LayerNorm la = {.axis = 1, .eps = (float)eps};
      rlx_status s = rms ? RT_RUN(&c, RmsNorm, &rn, NULL, {xs, x}, {ps, g}, {ps, b})
                         : RT_RUN(&c, LayerNorm, &la, NULL, {xs, x}, {ps, g}, {ps, b});
      CHECK_OK(s);
      CHECK_MSG(rt_check_out(&c, want, 15, tol[k], tol[k], __LINE__), "%s %s", rms ? "RmsNorm" : "LayerNorm",
                rlx_dtype_name(types[k]));
      rt_free(&c);
    }
  }
  /* gamma given as [1, 5]; RmsNorm with a folded [rows, H] output: x [3, 1, 5] declared [3, 5] */
  rlx_attrs_RmsNorm rn = {.axis = -1, .eps = 1e-6f};
  rlx_shape folded = SHP(F64, 3, 5);
  CHECK_OK(RT_RUN(&c, RmsNorm, &rn, &folded, {SHP(F64, 3, 1, 5), x}, {SHP(F64, 1, 5), g}, {SHP(F64, 5), b}));
  CHECK(c.out.shape.rank == 2);
  CHECK_OUT(&c, want, 15, 1e-14, 1e-14);
  rt_free(&c);
  /* wrong gamma length reaching the kernel */
  CHECK_OK(rt_build(&c, RLX_OP_LayerNorm, &ln, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 3, 5), x}, {SHP(F32, 5), g}, {SHP(F32, 5), b}}));
  c.in[1].shape = SHP(F32, 4);
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "operand 1 (gamma)");
  rt_free(&c);
  /* empty rows */
  CHECK_OK(RT_RUN(&c, LayerNorm, &ln, NULL, {SHP(F32, 0, 5), NULL}, {SHP(F32, 5), g}, {SHP(F32, 5), b}));
  CHECK(rt_out_n(&c) == 0);
  rt_free(&c);
}

static void test_layernorm2d_groupnorm(void) {
  rt c;
  /* LayerNorm2d on [2, 3, 2, 2]: normalise the 3 channels at every (n, h, w) */
  double x[24], g[6], b[6], want[48];
  rt_fill(x, 24, 4);
  rt_fill(g, 6, 5);
  rt_fill(b, 6, 6);
  for (int n = 0; n < 2; n++)
    for (int p = 0; p < 4; p++) {
      double line[3], y[3];
      for (int ch = 0; ch < 3; ch++) line[ch] = x[(n * 3 + ch) * 4 + p];
      ref_row(line, y, 3, (double)1e-6f, false);
      for (int ch = 0; ch < 3; ch++) want[(n * 3 + ch) * 4 + p] = y[ch] * g[ch] + b[ch];
    }
  rlx_attrs_LayerNorm2d l2 = {.eps = 1e-6f};
  CHECK_OK(RT_RUN(&c, LayerNorm2d, &l2, NULL, {SHP(F32, 2, 3, 2, 2), x}, {SHP(F32, 3), g}, {SHP(F32, 3), b}));
  CHECK_OUT(&c, want, 24, 1e-6, 1e-6);
  rt_free(&c);

  /* GroupNorm [2, 6, 4] with 3 groups of 2 channels (x 4 positions) */
  double y[48];
  rt_fill(y, 48, 7);
  for (int n = 0; n < 2; n++)
    for (int gr = 0; gr < 3; gr++) {
      double blk[8], o[8];
      for (int i = 0; i < 8; i++) blk[i] = y[(n * 6 + gr * 2) * 4 + i];
      ref_row(blk, o, 8, (double)1e-5f, false);
      for (int i = 0; i < 8; i++) {
        int ch = gr * 2 + i / 4;
        want[(n * 6 + gr * 2) * 4 + i] = o[i] * g[ch] + b[ch];
      }
    }
  rlx_attrs_GroupNorm gn = {.num_groups = 3, .eps = 1e-5f};
  CHECK_OK(RT_RUN(&c, GroupNorm, &gn, NULL, {SHP(F64, 2, 6, 4), y}, {SHP(F64, 6), g}, {SHP(F64, 6), b}));
  CHECK_OUT(&c, want, 48, 1e-14, 1e-14);
  rt_free(&c);
  /* same data as NCHW [2, 6, 2, 2] */
  CHECK_OK(RT_RUN(&c, GroupNorm, &gn, NULL, {SHP(F32, 2, 6, 2, 2), y}, {SHP(F32, 6), g}, {SHP(F32, 6), b}));
  CHECK_OUT(&c, want, 48, 1e-6, 1e-6);
  rt_free(&c);
  /* num_groups not dividing C, handed to the kernel */
  CHECK_OK(rt_build(&c, RLX_OP_GroupNorm, &gn, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 2, 6, 4), y}, {SHP(F32, 6), g}, {SHP(F32, 6), b}}));
  rlx_node bad = *c.node;
  bad.attrs.GroupNorm.num_groups = 4;
  CHECK_ERR(rlx_cpu_ref_table[RLX_OP_GroupNorm](&bad, c.in, 3, &c.out, &c.ctx), RLX_ERR_INVALID_ARG, "num_groups");
  rt_free(&c);
}

static void test_batchnorm(void) {
  rt c;
  /* x [2, 3]: features on the last axis */
  rlx_attrs_BatchNormInference bn = {.eps = 0.0f};
  CHECK_OK(RT_RUN(&c, BatchNormInference, &bn, NULL, {SHP(F64, 2, 3), VALS(1, 2, 3, 4, 5, 6)},
                  {SHP(F64, 3), VALS(1, 2, 3)}, {SHP(F64, 3), VALS(0, 1, -1)}, {SHP(F64, 3), VALS(1, 1, 1)},
                  {SHP(F64, 3), VALS(4, 1, 0.25)}));
  /* gamma * (x - mean) / sqrt(var) + beta */
  CHECK_OUT(&c, VALS(0, 3, 11, 1.5, 9, 29), 6, 1e-15, 0);
  rt_free(&c);
  bn.eps = 1e-3f;
  double e = (double)1e-3f;
  CHECK_OK(RT_RUN(&c, BatchNormInference, &bn, NULL, {SHP(F32, 1, 2), VALS(3, 3)}, {SHP(F32, 2), VALS(1, 1)},
                  {SHP(F32, 2), VALS(0, 0)}, {SHP(F32, 2), VALS(1, 1)}, {SHP(F32, 2), VALS(1, 3)}));
  CHECK_OUT(&c, VALS(2 / sqrt(1 + e), 2 / sqrt(3 + e)), 2, 1e-7, 1e-6);
  rt_free(&c);
}

static void test_ada_gated(void) {
  rt c;
  /* x [2, 3, 4], scale/shift [2, 1, 4] */
  double x[24], sc[8], sh[8], want[24];
  rt_fill(x, 24, 8);
  rt_fill(sc, 8, 9);
  rt_fill(sh, 8, 10);
  for (int kind = 0; kind < 2; kind++) {
    for (int b = 0; b < 2; b++)
      for (int s = 0; s < 3; s++) {
        double y[4];
        ref_row(x + (b * 3 + s) * 4, y, 4, (double)1e-6f, kind == 1);
        for (int d = 0; d < 4; d++) want[(b * 3 + s) * 4 + d] = y[d] * (1 + sc[b * 4 + d]) + sh[b * 4 + d];
      }
    rlx_attrs_AdaLayerNorm an = {.norm = kind ? RLX_ADA_NORM_RMS_NORM : RLX_ADA_NORM_LAYER_NORM, .eps = 1e-6f};
    CHECK_OK(
        RT_RUN(&c, AdaLayerNorm, &an, NULL, {SHP(F64, 2, 3, 4), x}, {SHP(F64, 2, 1, 4), sc}, {SHP(F64, 2, 1, 4), sh}));
    CHECK_OUT(&c, want, 24, 1e-14, 1e-14);
    rt_free(&c);
    CHECK_OK(RT_RUN(&c, AdaLayerNorm, &an, NULL, {SHP(BF16, 2, 3, 4), x}, {SHP(BF16, 2, 1, 4), sc},
                    {SHP(BF16, 2, 1, 4), sh}));
    CHECK_OUT(&c, want, 24, 2e-2, 1e-2);
    rt_free(&c);
  }
  /* GatedResidual: x + gate * y with gate [4] */
  double y[24], g[4];
  rt_fill(y, 24, 11);
  rt_fill(g, 4, 12);
  for (int i = 0; i < 24; i++) want[i] = x[i] + g[i % 4] * y[i];
  CHECK_OK(RT_RUN(&c, GatedResidual, NULL, NULL, {SHP(F32, 2, 3, 4), x}, {SHP(F32, 2, 3, 4), y}, {SHP(F32, 4), g}));
  CHECK_OUT(&c, want, 24, 0, 1e-7);
  rt_free(&c);
  /* integers saturate */
  CHECK_OK(RT_RUN(&c, GatedResidual, NULL, NULL, {SHP(I8, 1, 2), VALS(100, -5)}, {SHP(I8, 1, 2), VALS(30, 3)},
                  {SHP(I8, 1, 2), VALS(2, -3)}));
  CHECK_OUT(&c, VALS(127, -14), 2, 0, 0);
  rt_free(&c);
  /* gate that does not broadcast */
  CHECK_OK(rt_build(&c, RLX_OP_GatedResidual, NULL, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 2, 3, 4), x}, {SHP(F32, 2, 3, 4), y}, {SHP(F32, 4), g}}));
  c.in[2].shape = SHP(F32, 3);
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "does not broadcast");
  rt_free(&c);
}

int main(void) {
  test_layer_rms();
  test_layernorm2d_groupnorm();
  test_batchnorm();
  test_ada_gated();
  return rlx_test_finish("ref_norm");
}
