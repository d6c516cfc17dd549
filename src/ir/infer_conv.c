/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: convolution and pooling, NCHW / NCDHW (spec ir-core §10.10). Geometry helpers and
 * the attribute conventions live in infer_conv_util.h. */
#include "infer_conv_util.h"

static const char *const layout_x[4] = {"", "", "[N, C, H, W]", "[N, C, D, H, W]"};
static const char *const layout_w[4] = {"", "", "[C_out, C_in/groups, kH, kW]", "[C_out, C_in/groups, kD, kH, kW]"};
static const char *const layout_wt[4] = {"", "", "[C_in, C_out/groups, kH, kW]", "[C_in, C_out/groups, kD, kH, kW]"};

/* x (operand 0) float, weight (operand 1) of the same dtype. */
static rlx_status float_pair(const rlx_infer_ctx *c) {
  RLX_TRY(rlx_need_dtype_float(c, 0));
  return iu_same_dtype(c, 0, 1);
}

rlx_status rlx_conv_forward_shape(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                  const rlx_ilist *padding, const rlx_ilist *dilation, int64_t groups, rlx_shape *out) {
  RLX_TRY(cu_need_layout(c, 0, "x", nsp, layout_x[nsp]));
  RLX_TRY(cu_need_layout(c, 1, "weight", nsp, layout_w[nsp]));
  RLX_TRY(float_pair(c));
  RLX_TRY(cu_groups(groups));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  rlx_dim cin = x->dims[1], cout = w->dims[0], wc = w->dims[1];
  RLX_TRY(cu_divisible(cin, groups, 0, "the input channels C_in (axis 1)"));
  RLX_TRY(cu_divisible(cout, groups, 1, "the output channels C_out (axis 0)"));
  bool wc_ok = true; /* unchecked when C_in or the weight's axis 1 is symbolic and groups > 1 */
  int64_t wcg;
  if (cin >= 0 && wc >= 0)
    wc_ok = ck_mul(wc, groups, &wcg) && wcg == cin;
  else if (groups == 1)
    wc_ok = rlx_dim_equal(wc, cin);
  if (!wc_ok)
    return rlx_shape_error("operand 1 (weight) has shape %s; its axis 1 must be C_in/groups = %s/%" PRId64
                           " (operand 0 is %s)",
                           rlx_fmt_shape(w), iu_fmt_dim(cin), groups, rlx_fmt_shape(x));
  cu_geom g;
  RLX_TRY(cu_parse(nsp, stride, padding, dilation, NULL, &g));
  RLX_TRY(cu_kernel_weight(c, 1, ks, &g));
  *out = iu_shape((rlx_dtype)x->dtype, 2 + nsp);
  out->dims[0] = x->dims[0];
  out->dims[1] = cout;
  for (uint32_t i = 0; i < nsp; i++)
    RLX_TRY(cu_extent_or_declared(c, &g, i, false, 0, 2 + i, 2 + nsp, 2 + i, &out->dims[2 + i]));
  return RLX_OK;
}

rlx_status rlx_infer_Conv(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv *a = &c->a->Conv;
  return rlx_conv_forward_shape(c, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

rlx_status rlx_infer_Conv3d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv3d *a = &c->a->Conv3d;
  return rlx_conv_forward_shape(c, 3, NULL, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

/* Transposed convolution: weight [C_in, C_out/groups, k...]; output channels (C_out/groups)*groups. */
static rlx_status conv_transpose(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                 const rlx_ilist *padding, const rlx_ilist *dilation, const rlx_ilist *output_padding,
                                 int64_t groups, rlx_shape *out) {
  RLX_TRY(cu_need_layout(c, 0, "x", nsp, layout_x[nsp]));
  RLX_TRY(cu_need_layout(c, 1, "weight", nsp, layout_wt[nsp]));
  RLX_TRY(float_pair(c));
  RLX_TRY(cu_groups(groups));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  rlx_dim cin = x->dims[1];
  if (!rlx_dim_equal(w->dims[0], cin))
    return rlx_shape_error("operand 1 (weight) has shape %s; its axis 0 must be C_in = %s (operand 0 is %s)",
                           rlx_fmt_shape(w), iu_fmt_dim(cin), rlx_fmt_shape(x));
  RLX_TRY(cu_divisible(cin, groups, 0, "the input channels C_in (axis 1)"));
  cu_geom g;
  RLX_TRY(cu_parse(nsp, stride, padding, dilation, output_padding, &g));
  RLX_TRY(cu_kernel_weight(c, 1, ks, &g));
  *out = iu_shape((rlx_dtype)x->dtype, 2 + nsp);
  out->dims[0] = x->dims[0];
  rlx_dim per_group = w->dims[1];
  if (per_group >= 0) {
    RLX_TRY(ck_mul_or(per_group, groups, &out->dims[1], "the output channels (C_out / groups * groups)"));
  } else if (groups == 1) {
    out->dims[1] = per_group;
  } else if (c->declared && c->declared->rank == 2 + nsp) {
    out->dims[1] = c->declared->dims[1];
  } else {
    return rlx_shape_error("operand 1 (weight) %s: axis 1 is symbolic, so the output channels (C_out/groups)*groups "
                           "are unknown; give the output shape explicitly",
                           rlx_fmt_shape(w));
  }
  for (uint32_t i = 0; i < nsp; i++)
    RLX_TRY(cu_extent_or_declared(c, &g, i, true, 0, 2 + i, 2 + nsp, 2 + i, &out->dims[2 + i]));
  return RLX_OK;
}

rlx_status rlx_infer_ConvTranspose2d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ConvTranspose2d *a = &c->a->ConvTranspose2d;
  return conv_transpose(c, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, &a->output_padding, a->groups,
                        out);
}

rlx_status rlx_infer_ConvTranspose3d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ConvTranspose3d *a = &c->a->ConvTranspose3d;
  return conv_transpose(c, 3, NULL, &a->stride, &a->padding, &a->dilation, &a->output_padding, a->groups, out);
}

rlx_status rlx_infer_Pool(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Pool *a = &c->a->Pool;
  RLX_TRY(cu_need_layout(c, 0, "x", 2, layout_x[2]));
  RLX_TRY(iu_need_real(c, 0));
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN) {
    if (a->kind < 0 || a->kind >= RLX_REDUCE_COUNT)
      return rlx_shape_error("attribute kind: %d is not a ReduceOp", (int)a->kind);
    return rlx_shape_error("attribute kind is %s; Pool supports Max and Mean only", rlx_enum_reduce.names[a->kind]);
  }
  cu_geom g;
  RLX_TRY(cu_pool_geom(2, &a->kernel_size, &a->stride, &a->padding, &g));
  const rlx_shape *x = c->in[0];
  *out = *x;
  for (uint32_t i = 0; i < 2; i++)
    RLX_TRY(cu_extent_or_declared(c, &g, i, false, 0, 2 + i, 4, 2 + i, &out->dims[2 + i]));
  return RLX_OK;
}

/* [N, C, H, W] -> [N*Ho*Wo, C*kH*kW]; an unknown row count becomes the ROWS symbol. */
rlx_status rlx_infer_Im2Col(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Im2Col *a = &c->a->Im2Col;
  RLX_TRY(cu_need_layout(c, 0, "x", 2, layout_x[2]));
  RLX_TRY(iu_need_real(c, 0));
  cu_geom g;
  RLX_TRY(cu_parse(2, &a->stride, &a->padding, &a->dilation, NULL, &g));
  RLX_TRY(cu_kernel_attr(&a->kernel_size, 2, &g));
  const rlx_shape *x = c->in[0];
  rlx_dim ho = 0, wo = 0;
  bool kh, kw;
  RLX_TRY(cu_extent(&g, 0, false, x->dims[2], 0, &kh, &ho));
  RLX_TRY(cu_extent(&g, 1, false, x->dims[3], 0, &kw, &wo));
  *out = iu_shape((rlx_dtype)x->dtype, 2);
  int64_t rows;
  if (kh && kw && x->dims[0] >= 0 && ho >= 0 && wo >= 0) {
    RLX_TRY(ck_mul_or(x->dims[0], ho, &rows, "the patch count N * Ho"));
    RLX_TRY(ck_mul_or(rows, wo, &rows, "the patch count N * Ho * Wo"));
    out->dims[0] = rows;
  } else {
    out->dims[0] = RLX_DIM_SYM(RLX_SYM_ROWS);
  }
  int64_t cols = g.k[0] * g.k[1]; /* <= 2^62 */
  if (x->dims[1] >= 0) {
    RLX_TRY(ck_mul_or(x->dims[1], cols, &cols, "the patch width C * kH * kW"));
    out->dims[1] = cols;
  } else if (cols == 1) {
    out->dims[1] = x->dims[1];
  } else if (c->declared && c->declared->rank == 2) {
    out->dims[1] = c->declared->dims[1];
  } else {
    return rlx_shape_error("operand 0 %s: the channel count is symbolic, so the patch width C*kH*kW is unknown; give "
                           "the output shape explicitly",
                           rlx_fmt_shape(x));
  }
  return RLX_OK;
}
