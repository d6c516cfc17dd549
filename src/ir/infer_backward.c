/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: the backward ops emitted by autodiff and the complex helpers that sit next to them
 * (spec ir-special §8 and §4). Operand lists follow ir-special §8 exactly. Packed multi-gradient
 * outputs are 1-D; when an operand has a symbolic dim their length comes from the declared shape. */
#include "infer_conv_util.h"

static const char *const layout_x[4] = {"", "", "[N, C, H, W]", "[N, C, D, H, W]"};
static const char *const layout_dy[4] = {"", "", "[N, C_out, Ho, Wo]", "[N, C_out, Do, Ho, Wo]"};
static const char *const layout_w[4] = {"", "", "[C_out, C_in/groups, kH, kW]", "[C_out, C_in/groups, kD, kH, kW]"};

/* ---- small helpers ---- */

static rlx_status need_eps(float eps) {
  if (!(eps >= 0.0f) || eps > 3.0e38f)
    return rlx_shape_error("attribute eps is %g; it must be a finite value >= 0", (double)eps);
  return RLX_OK;
}

/* Operand j has operand i's dims (rank and every dim agree). */
static rlx_status same_dims(const rlx_infer_ctx *c, uint32_t i, const char *wi, uint32_t j, const char *wj) {
  const rlx_shape *a = c->in[i], *b = c->in[j];
  bool ok = a->rank == b->rank;
  for (uint32_t k = 0; ok && k < a->rank; k++) ok = rlx_dim_equal(a->dims[k], b->dims[k]);
  if (!ok)
    return rlx_shape_error("operand %u (%s) has shape %s; it must have the shape of operand %u (%s) %s", j, wj,
                           rlx_fmt_shape(b), i, wi, rlx_fmt_shape(a));
  return RLX_OK;
}

/* Operand j has operand i's dims and dtype. */
static rlx_status same_as(const rlx_infer_ctx *c, uint32_t i, const char *wi, uint32_t j, const char *wj) {
  RLX_TRY(same_dims(c, i, wi, j, wj));
  return iu_same_dtype(c, i, j);
}

/* Output [n] of dtype t. */
static rlx_shape vec_shape(rlx_dtype t, rlx_dim n) {
  rlx_shape s = iu_shape(t, 1);
  s.dims[0] = n;
  return s;
}

/* 1-D packed output: the sum of the element counts of `ops`, or the declared 1-D length when a
 * count is symbolic. */
static rlx_status packed_output(const rlx_infer_ctx *c, const uint32_t *ops, uint32_t n, rlx_dtype t, rlx_shape *out) {
  int64_t total = 0;
  bool all_known = true;
  for (uint32_t i = 0; i < n; i++) {
    bool known;
    int64_t e = 0;
    RLX_TRY(iu_numel(c->in[ops[i]], ops[i], &known, &e));
    if (!known)
      all_known = false;
    else if (!ck_add(total, e, &total))
      return rlx_errorf(RLX_ERR_OVERFLOW, "the packed gradient length overflows int64");
  }
  if (all_known) {
    *out = vec_shape(t, total);
    return RLX_OK;
  }
  if (c->declared && c->declared->rank == 1) {
    *out = vec_shape(t, c->declared->dims[0]);
    return RLX_OK;
  }
  return rlx_shape_error("the packed 1-D output length depends on symbolic dims of the operands; give the output "
                         "shape explicitly");
}

/* Real dtype whose complex counterpart operand i has (c64 -> f32, c128 -> f64). */
static rlx_status complex_operand(const rlx_infer_ctx *c, uint32_t i, const char *what, rlx_dtype *real) {
  rlx_dtype t = (rlx_dtype)c->in[i]->dtype;
  if (t == RLX_C64)
    *real = RLX_F32;
  else if (t == RLX_C128)
    *real = RLX_F64;
  else
    return rlx_shape_error("operand %u (%s) has dtype %s; expected c64 or c128", i, what, rlx_dtype_name(t));
  return RLX_OK;
}

/* ---- elementwise backward ---- */

rlx_status rlx_infer_ReluBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(iu_need_real(c, 0));
  RLX_TRY(same_as(c, 0, "x", 1, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_ActivationBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  int32_t kind = c->a->ActivationBackward.kind;
  if (kind < 0 || kind >= RLX_ACT_COUNT) return rlx_shape_error("attribute kind: %d is not an Activation", (int)kind);
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(same_as(c, 0, "x", 1, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_FakeQuantizeBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FakeQuantizeBackward *a = &c->a->FakeQuantizeBackward;
  if (a->bits != 8 && a->bits != 4 && a->bits != 2)
    return rlx_shape_error("attribute bits is %" PRId64 "; FakeQuantize supports 8, 4 or 2 bits", a->bits);
  if (a->ste < 0 || a->ste >= RLX_STE_COUNT) return rlx_shape_error("attribute ste: %d is not a SteKind", (int)a->ste);
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (a->axis != -1) {
    uint32_t ax;
    RLX_TRY(iu_axis(c, "axis", a->axis, 0, &ax));
  }
  RLX_TRY(same_as(c, 0, "x", 1, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_ComplexNormSq(const rlx_infer_ctx *c, rlx_shape *out) {
  rlx_dtype real = RLX_F32;
  RLX_TRY(complex_operand(c, 0, "z", &real));
  *out = *c->in[0];
  out->dtype = (uint8_t)real;
  return RLX_OK;
}

rlx_status rlx_infer_ComplexNormSqBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  rlx_dtype real = RLX_F32;
  RLX_TRY(complex_operand(c, 0, "z", &real));
  RLX_TRY(same_dims(c, 0, "z", 1, "g"));
  if (c->in[1]->dtype != real)
    return rlx_shape_error("operand 1 (g) has dtype %s; the gradient of |z|^2 for %s z must be %s", iu_dt(c->in[1]),
                           iu_dt(c->in[0]), rlx_dtype_name(real));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_Conjugate(const rlx_infer_ctx *c, rlx_shape *out) {
  rlx_dtype real = RLX_F32;
  RLX_TRY(complex_operand(c, 0, "z", &real));
  *out = *c->in[0];
  return RLX_OK;
}

/* ---- pooling and convolution backward ---- */

/* [x, dy] -> x; dy must be the max-pool output of x. */
static rlx_status maxpool_backward(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks, const rlx_ilist *stride,
                                   const rlx_ilist *padding, rlx_shape *out) {
  RLX_TRY(cu_need_layout(c, 0, "x", nsp, layout_x[nsp]));
  RLX_TRY(cu_need_layout(c, 1, "dy", nsp, layout_x[nsp]));
  RLX_TRY(iu_need_real(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  cu_geom g;
  RLX_TRY(cu_pool_geom(nsp, ks, stride, padding, &g));
  const rlx_shape *x = c->in[0], *dy = c->in[1];
  for (uint32_t i = 0; i < 2; i++)
    if (!rlx_dim_equal(x->dims[i], dy->dims[i]))
      return rlx_shape_error("operand 1 (dy) has shape %s; its axis %u must equal operand 0 (x) %s there",
                             rlx_fmt_shape(dy), i, rlx_fmt_shape(x));
  for (uint32_t i = 0; i < nsp; i++) {
    bool known;
    rlx_dim o = 0;
    RLX_TRY(cu_extent(&g, i, false, x->dims[2 + i], 0, &known, &o));
    if (known && !rlx_dim_equal(o, dy->dims[2 + i]))
      return rlx_shape_error("operand 1 (dy) has shape %s; pooling operand 0 (x) %s gives extent %s on axis %u",
                             rlx_fmt_shape(dy), rlx_fmt_shape(x), iu_fmt_dim(o), 2 + i);
  }
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_MaxPool2dBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_MaxPool2dBackward *a = &c->a->MaxPool2dBackward;
  return maxpool_backward(c, 2, &a->kernel_size, &a->stride, &a->padding, out);
}

rlx_status rlx_infer_MaxPool3dBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_MaxPool3dBackward *a = &c->a->MaxPool3dBackward;
  return maxpool_backward(c, 3, &a->kernel_size, &a->stride, &a->padding, out);
}

/* Channels C_in = per_group * groups of a weight axis; symbolic with groups > 1 -> declared. */
static rlx_status grouped_channels(const rlx_infer_ctx *c, rlx_dim per_group, int64_t groups, uint32_t operand,
                                   uint32_t out_rank, rlx_dim *out) {
  if (per_group >= 0) return ck_mul_or(per_group, groups, out, "the channel count (channels per group * groups)");
  if (groups == 1) {
    *out = per_group;
    return RLX_OK;
  }
  if (c->declared && c->declared->rank == out_rank) {
    *out = c->declared->dims[1];
    return RLX_OK;
  }
  return rlx_shape_error("operand %u %s: the channel count is symbolic and attribute groups is %" PRId64
                         "; give the output shape explicitly",
                         operand, rlx_fmt_shape(c->in[operand]), groups);
}

/* [dy [N, C_out, spatial'], w [C_out, C_in/g, k...]] -> [N, C_in, spatial]. The input extents are
 * taken from the declared shape (checked: convolving them must give dy's extents); without one
 * they are recovered only where the stride is 1. */
static rlx_status conv_backward_input(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks,
                                      const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation,
                                      int64_t groups, rlx_shape *out) {
  RLX_TRY(cu_need_layout(c, 0, "dy", nsp, layout_dy[nsp]));
  RLX_TRY(cu_need_layout(c, 1, "weight", nsp, layout_w[nsp]));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(cu_groups(groups));
  const rlx_shape *dy = c->in[0], *w = c->in[1];
  if (!rlx_dim_equal(dy->dims[1], w->dims[0]))
    return rlx_shape_error("operand 1 (weight) has shape %s; its axis 0 (C_out) must equal axis 1 of operand 0 (dy) "
                           "%s",
                           rlx_fmt_shape(w), rlx_fmt_shape(dy));
  RLX_TRY(cu_divisible(w->dims[0], groups, 1, "the output channels C_out (axis 0)"));
  cu_geom g;
  RLX_TRY(cu_parse(nsp, stride, padding, dilation, NULL, &g));
  RLX_TRY(cu_kernel_weight(c, 1, ks, &g));
  *out = iu_shape((rlx_dtype)dy->dtype, 2 + nsp);
  out->dims[0] = dy->dims[0];
  RLX_TRY(grouped_channels(c, w->dims[1], groups, 1, 2 + nsp, &out->dims[1]));
  const rlx_shape *d = c->declared;
  if (d) {
    if (d->rank != 2 + nsp)
      return rlx_shape_error("the declared shape %s must be the input shape %s (rank %u)", rlx_fmt_shape(d),
                             layout_x[nsp], 2 + nsp);
    for (uint32_t i = 0; i < nsp; i++) {
      bool known;
      rlx_dim o = 0;
      rlx_status s = cu_extent(&g, i, false, d->dims[2 + i], 0, &known, &o);
      if (s) return rlx_error_context(s, "declared shape %s", rlx_fmt_shape(d));
      if (known && !rlx_dim_equal(o, dy->dims[2 + i]))
        return rlx_shape_error("operand 0 (dy) has shape %s; the forward convolution of the declared input %s gives "
                               "extent %s on axis %u",
                               rlx_fmt_shape(dy), rlx_fmt_shape(d), iu_fmt_dim(o), 2 + i);
      out->dims[2 + i] = d->dims[2 + i];
    }
    return RLX_OK;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    if (g.s[i] != 1)
      return rlx_shape_error("the output shape must be declared: with attribute stride %" PRId64 " on spatial axis %u "
                             "the input extent cannot be recovered from dy",
                             g.s[i], 2 + i);
    rlx_dim ho = dy->dims[2 + i];
    int64_t span = g.d[i] * (g.k[i] - 1), pads = g.pb[i] + g.pe[i];
    if (ho < 0) {
      if (pads != span)
        return rlx_shape_error("operand 0 (dy) %s: axis %u is symbolic; give the output shape explicitly",
                               rlx_fmt_shape(dy), 2 + i);
      out->dims[2 + i] = ho;
      continue;
    }
    int64_t h;
    if (!ck_add(ho, span, &h))
      return rlx_errorf(RLX_ERR_OVERFLOW, "operand 0 (dy): input extent of axis %u overflows", 2 + i);
    h -= pads;
    if (h < 1)
      return rlx_shape_error("operand 0 (dy) has shape %s; extent %" PRId64 " on axis %u is not a convolution output "
                             "for this geometry",
                             rlx_fmt_shape(dy), ho, 2 + i);
    out->dims[2 + i] = h;
  }
  return RLX_OK;
}

/* [x [N, C_in, spatial], dy [N, C_out, spatial']] -> [C_out, C_in/groups, k...]. */
static rlx_status conv_backward_weight(const rlx_infer_ctx *c, uint32_t nsp, const rlx_ilist *ks,
                                       const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation,
                                       int64_t groups, rlx_shape *out) {
  RLX_TRY(cu_need_layout(c, 0, "x", nsp, layout_x[nsp]));
  RLX_TRY(cu_need_layout(c, 1, "dy", nsp, layout_dy[nsp]));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(cu_groups(groups));
  const rlx_shape *x = c->in[0], *dy = c->in[1];
  if (!rlx_dim_equal(x->dims[0], dy->dims[0]))
    return rlx_shape_error("operand 1 (dy) has shape %s; its batch (axis 0) must equal operand 0 (x) %s",
                           rlx_fmt_shape(dy), rlx_fmt_shape(x));
  RLX_TRY(cu_divisible(x->dims[1], groups, 0, "the input channels C_in (axis 1)"));
  RLX_TRY(cu_divisible(dy->dims[1], groups, 1, "the output channels C_out (axis 1)"));
  cu_geom g;
  RLX_TRY(cu_parse(nsp, stride, padding, dilation, NULL, &g));
  RLX_TRY(cu_kernel_attr(ks, nsp, &g));
  for (uint32_t i = 0; i < nsp; i++) {
    bool known;
    rlx_dim o = 0;
    RLX_TRY(cu_extent(&g, i, false, x->dims[2 + i], 0, &known, &o));
    if (known && !rlx_dim_equal(o, dy->dims[2 + i]))
      return rlx_shape_error("operand 1 (dy) has shape %s; convolving operand 0 (x) %s gives extent %s on axis %u",
                             rlx_fmt_shape(dy), rlx_fmt_shape(x), iu_fmt_dim(o), 2 + i);
  }
  *out = iu_shape((rlx_dtype)x->dtype, 2 + nsp);
  out->dims[0] = dy->dims[1];
  rlx_dim cin = x->dims[1];
  if (cin >= 0)
    out->dims[1] = cin / groups;
  else if (groups == 1)
    out->dims[1] = cin;
  else if (c->declared && c->declared->rank == 2 + nsp)
    out->dims[1] = c->declared->dims[1];
  else
    return rlx_shape_error("operand 0 (x) %s: C_in is symbolic and attribute groups is %" PRId64
                           "; give the output shape explicitly",
                           rlx_fmt_shape(x), groups);
  for (uint32_t i = 0; i < nsp; i++) out->dims[2 + i] = g.k[i];
  return RLX_OK;
}

rlx_status rlx_infer_Conv2dBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv2dBackwardInput *a = &c->a->Conv2dBackwardInput;
  return conv_backward_input(c, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

rlx_status rlx_infer_Conv3dBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv3dBackwardInput *a = &c->a->Conv3dBackwardInput;
  return conv_backward_input(c, 3, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

rlx_status rlx_infer_Conv2dBackwardWeight(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv2dBackwardWeight *a = &c->a->Conv2dBackwardWeight;
  return conv_backward_weight(c, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

rlx_status rlx_infer_Conv3dBackwardWeight(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Conv3dBackwardWeight *a = &c->a->Conv3dBackwardWeight;
  return conv_backward_weight(c, 3, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out);
}

/* ---- losses ---- */

/* Operand 0 (logits) is a float [N, C] matrix. */
static rlx_status need_logits(const rlx_infer_ctx *c) {
  if (c->in[0]->rank != 2)
    return rlx_shape_error("operand 0 (logits) has shape %s; expected [N, C]", rlx_fmt_shape(c->in[0]));
  return rlx_need_dtype_float(c, 0);
}

/* Operand i is a rank-1 [N] vector matching the logits' batch. */
static rlx_status need_per_row(const rlx_infer_ctx *c, uint32_t i, const char *what) {
  const rlx_shape *s = c->in[i];
  if (s->rank != 1 || !rlx_dim_equal(s->dims[0], c->in[0]->dims[0]))
    return rlx_shape_error("operand %u (%s) has shape %s; expected [%s] (one entry per row of operand 0 %s)", i, what,
                           rlx_fmt_shape(s), iu_fmt_dim(c->in[0]->dims[0]), rlx_fmt_shape(c->in[0]));
  return RLX_OK;
}

rlx_status rlx_infer_SoftmaxCrossEntropy(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_logits(c));
  RLX_TRY(same_as(c, 0, "logits", 1, "targets"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, c->in[0]->dims[0]);
  return RLX_OK;
}

rlx_status rlx_infer_SoftmaxCrossEntropyWithLogits(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_logits(c));
  RLX_TRY(need_per_row(c, 1, "labels"));
  RLX_TRY(iu_need_index(c, 1, "labels"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, c->in[0]->dims[0]);
  return RLX_OK;
}

rlx_status rlx_infer_SoftmaxCrossEntropyBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_logits(c));
  RLX_TRY(need_per_row(c, 1, "labels"));
  RLX_TRY(iu_need_index(c, 1, "labels"));
  RLX_TRY(need_per_row(c, 2, "d_loss"));
  RLX_TRY(iu_same_dtype(c, 0, 2));
  *out = *c->in[0];
  return RLX_OK;
}

/* ---- attention ---- */

/* Checks [q, k, v, dy, (mask)] of AttentionBackward(All) with the forward Attention rule, so the
 * backward accepts exactly the operands its forward did: q, k, v go through rlx_infer_Attention
 * (layouts, GQA, S_k >= S_q for Causal/SlidingWindow, window only with SlidingWindow), the mask
 * gets the forward's mask rules here (it is operand 4, not 3), and dy must have q's shape. k and v
 * share head_dim (the backward ops have no v_head_dim attribute; score_scale and softcap are carried). */
static rlx_status attention_backward(const rlx_infer_ctx *c, int64_t heads, int64_t hd, int32_t mask, int64_t window) {
  if (mask < 0 || mask >= RLX_MASK_COUNT)
    return rlx_shape_error("attribute mask_kind: %d is not a MaskKind", (int)mask);
  bool has_mask = mask == RLX_MASK_CUSTOM || mask == RLX_MASK_BIAS;
  RLX_TRY(rlx_need_inputs(c, has_mask ? 5 : 4,
                          has_mask ? "q, k, v, dy and the mask, since attribute mask_kind is Custom or Bias"
                                   : "q, k, v and dy; attribute mask_kind takes no mask operand"));
  if (heads > CU_MAX_ATTR || hd > CU_MAX_ATTR)
    return rlx_shape_error("attributes num_heads = %" PRId64 " and head_dim = %" PRId64 " must be <= %" PRId64, heads,
                           hd, CU_MAX_ATTR);
  if (has_mask && window != 0)
    return rlx_shape_error("attribute window is %" PRId64 "; it is only meaningful with mask_kind SlidingWindow",
                           window);
  rlx_attrs fa;
  rlx_attrs_init(RLX_OP_Attention, &fa);
  fa.Attention.num_heads = heads;
  fa.Attention.head_dim = hd;
  fa.Attention.mask_kind = has_mask ? RLX_MASK_NONE : mask;
  fa.Attention.window = window;
  rlx_infer_ctx fwd = {c->g, RLX_OP_Attention, &fa, c->in, 3, NULL};
  rlx_shape y;
  RLX_TRY(rlx_infer_Attention(&fwd, &y));
  RLX_TRY(same_as(c, 0, "q", 3, "dy"));
  if (!has_mask) return RLX_OK;
  const rlx_shape *q = c->in[0], *k = c->in[1], *m = c->in[4];
  uint32_t seq = q->rank == 4 ? (q->dims[1] == heads ? 2 : 1) : q->rank == 3 ? 1 : 0;
  rlx_dim b = q->rank >= 3 ? q->dims[0] : 1, sq = q->dims[seq], sk = k->dims[seq];
  if (mask == RLX_MASK_CUSTOM) {
    if (rlx_dtype_class_of((rlx_dtype)m->dtype) == RLX_CLASS_COMPLEX)
      return rlx_shape_error("operand 4 (mask) has dtype %s; a keep-mask must be real or bool", iu_dt(m));
    bool ok = (m->rank == 2 && rlx_dim_equal(m->dims[0], b) && rlx_dim_equal(m->dims[1], sk)) ||
              (m->rank == 3 && rlx_dim_equal(m->dims[0], b) && rlx_dim_equal(m->dims[1], sq) &&
               rlx_dim_equal(m->dims[2], sk));
    if (!ok)
      return rlx_shape_error("operand 4 (mask) has shape %s; a Custom keep-mask must be [B, S_k] = [%s, %s] or "
                             "[B, S_q, S_k] = [%s, %s, %s]",
                             rlx_fmt_shape(m), iu_fmt_dim(b), iu_fmt_dim(sk), iu_fmt_dim(b), iu_fmt_dim(sq),
                             iu_fmt_dim(sk));
    return RLX_OK;
  }
  RLX_TRY(iu_same_dtype(c, 0, 4));
  rlx_shape full = iu_shape((rlx_dtype)q->dtype, 4);
  full.dims[0] = b;
  full.dims[1] = heads;
  full.dims[2] = sq;
  full.dims[3] = sk;
  if (!iu_broadcasts_to(m, &full))
    return rlx_shape_error("operand 4 (mask) has shape %s; a Bias must broadcast to [B, H, S_q, S_k] = %s",
                           rlx_fmt_shape(m), rlx_fmt_shape(&full));
  return RLX_OK;
}

rlx_status rlx_infer_AttentionBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_AttentionBackward *a = &c->a->AttentionBackward;
  if (a->wrt < 0 || a->wrt >= RLX_ATTN_WRT_COUNT)
    return rlx_shape_error("attribute wrt: %d is not an AttentionBwdWrt (Query, Key or Value)", (int)a->wrt);
  RLX_TRY(attention_backward(c, a->num_heads, a->head_dim, a->mask_kind, a->window));
  *out = *c->in[a->wrt == RLX_ATTN_WRT_QUERY ? 0 : a->wrt == RLX_ATTN_WRT_KEY ? 1 : 2];
  return RLX_OK;
}

/* Packed dq | dk | dv. */
rlx_status rlx_infer_AttentionBackwardAll(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_AttentionBackwardAll *a = &c->a->AttentionBackwardAll;
  RLX_TRY(attention_backward(c, a->num_heads, a->head_dim, a->mask_kind, a->window));
  static const uint32_t ops[] = {0, 1, 2};
  return packed_output(c, ops, 3, (rlx_dtype)c->in[0]->dtype, out);
}

/* ---- normalisation backward ---- */

static const char *const gamma_beta[] = {"gamma", "beta"};

/* x (operand 0): float, rank >= 1, normalised over its last axis only. */
static rlx_status last_axis_x(const rlx_infer_ctx *c, int64_t axis, float eps) {
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; it needs at least one axis to normalise");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (axis != -1 && axis != (int64_t)x->rank - 1)
    return rlx_shape_error("attribute axis is %" PRId64 "; norm backward ops support only the last axis (-1 or %u)",
                           axis, x->rank - 1);
  return need_eps(eps);
}

/* Operands first..first+n-1 are per-channel vectors of width w with x's dtype. */
static rlx_status vectors(const rlx_infer_ctx *c, uint32_t first, uint32_t n, const char *const *names, rlx_dim w,
                          const char *wname) {
  for (uint32_t i = first; i < first + n; i++) {
    RLX_TRY(iu_same_dtype(c, 0, i));
    RLX_TRY(iu_need_vector(c, i, names[i - first], w, wname));
  }
  return RLX_OK;
}

static rlx_dim last_dim(const rlx_shape *s) { return s->dims[s->rank - 1]; }

rlx_status rlx_infer_LayerNormBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_LayerNormBackwardInput *a = &c->a->LayerNormBackwardInput;
  RLX_TRY(last_axis_x(c, a->axis, a->eps));
  RLX_TRY(vectors(c, 1, 1, gamma_beta, last_dim(c->in[0]), "x's last dim"));
  RLX_TRY(same_as(c, 0, "x", 2, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_LayerNormBackwardGamma(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_LayerNormBackwardGamma *a = &c->a->LayerNormBackwardGamma;
  RLX_TRY(last_axis_x(c, a->axis, a->eps));
  RLX_TRY(same_as(c, 0, "x", 1, "dy"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, last_dim(c->in[0]));
  return RLX_OK;
}

/* RmsNorm backward ops share [x, gamma, beta, dy]. */
static rlx_status rms_backward(const rlx_infer_ctx *c, int64_t axis, float eps) {
  RLX_TRY(last_axis_x(c, axis, eps));
  RLX_TRY(vectors(c, 1, 2, gamma_beta, last_dim(c->in[0]), "x's last dim"));
  return same_as(c, 0, "x", 3, "dy");
}

rlx_status rlx_infer_RmsNormBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(rms_backward(c, c->a->RmsNormBackwardInput.axis, c->a->RmsNormBackwardInput.eps));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_RmsNormBackwardGamma(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(rms_backward(c, c->a->RmsNormBackwardGamma.axis, c->a->RmsNormBackwardGamma.eps));
  *out = *c->in[1];
  return RLX_OK;
}

rlx_status rlx_infer_RmsNormBackwardBeta(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(rms_backward(c, c->a->RmsNormBackwardBeta.axis, c->a->RmsNormBackwardBeta.eps));
  *out = *c->in[2];
  return RLX_OK;
}

/* [dy, cos, sin] -> dy: exactly the forward Rope rule with x = dy (the same head_dim / n_rot /
 * style and tables), so both directions accept the same operands. */
rlx_status rlx_infer_RopeBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_RopeBackward *a = &c->a->RopeBackward;
  rlx_attrs fa;
  rlx_attrs_init(RLX_OP_Rope, &fa);
  fa.Rope.head_dim = a->head_dim;
  fa.Rope.n_rot = a->n_rot;
  fa.Rope.style = a->style;
  rlx_infer_ctx fwd = {c->g, RLX_OP_Rope, &fa, c->in, c->n_in, NULL};
  rlx_status s = rlx_infer_Rope(&fwd, out);
  if (s) return rlx_error_context(s, "Rope's rules with x = operand 0 (dy)");
  return RLX_OK;
}

/* x [N, C, spatial...] (rank >= 3), float, groups dividing C. */
static rlx_status group_norm_x(const rlx_infer_ctx *c, int64_t groups, float eps) {
  const rlx_shape *x = c->in[0];
  if (x->rank < 3)
    return rlx_shape_error("operand 0 (x) has shape %s; GroupNorm works on [N, C, spatial...] (rank >= 3)",
                           rlx_fmt_shape(x));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (groups < 1) return rlx_shape_error("attribute num_groups is %" PRId64 "; it must be >= 1", groups);
  if (x->dims[1] >= 0 && x->dims[1] % groups != 0)
    return rlx_shape_error("attribute num_groups is %" PRId64 "; it must divide the channel count %" PRId64
                           " of operand 0 %s",
                           groups, x->dims[1], rlx_fmt_shape(x));
  return need_eps(eps);
}

rlx_status rlx_infer_GroupNormBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GroupNormBackwardInput *a = &c->a->GroupNormBackwardInput;
  RLX_TRY(group_norm_x(c, a->num_groups, a->eps));
  RLX_TRY(vectors(c, 1, 2, gamma_beta, c->in[0]->dims[1], "channels C of x"));
  RLX_TRY(same_as(c, 0, "x", 3, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

static rlx_status group_norm_param_grad(const rlx_infer_ctx *c, int64_t groups, float eps, rlx_shape *out) {
  RLX_TRY(group_norm_x(c, groups, eps));
  RLX_TRY(same_as(c, 0, "x", 1, "dy"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, c->in[0]->dims[1]);
  return RLX_OK;
}

rlx_status rlx_infer_GroupNormBackwardGamma(const rlx_infer_ctx *c, rlx_shape *out) {
  return group_norm_param_grad(c, c->a->GroupNormBackwardGamma.num_groups, c->a->GroupNormBackwardGamma.eps, out);
}

rlx_status rlx_infer_GroupNormBackwardBeta(const rlx_infer_ctx *c, rlx_shape *out) {
  return group_norm_param_grad(c, c->a->GroupNormBackwardBeta.num_groups, c->a->GroupNormBackwardBeta.eps, out);
}

/* Features are x's last axis. */
static rlx_status features_x(const rlx_infer_ctx *c, const char *what) {
  if (c->in[0]->rank == 0) return rlx_shape_error("operand 0 (%s) is a scalar; its last axis holds the features", what);
  return rlx_need_dtype_float(c, 0);
}

rlx_status rlx_infer_BatchNormInferenceBackwardInput(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const names[] = {"gamma", "mean", "var"};
  RLX_TRY(features_x(c, "x"));
  RLX_TRY(need_eps(c->a->BatchNormInferenceBackwardInput.eps));
  RLX_TRY(vectors(c, 1, 3, names, last_dim(c->in[0]), "features = x's last dim"));
  RLX_TRY(same_as(c, 0, "x", 4, "dy"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_BatchNormInferenceBackwardGamma(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const names[] = {"mean", "var"};
  RLX_TRY(features_x(c, "x"));
  RLX_TRY(need_eps(c->a->BatchNormInferenceBackwardGamma.eps));
  RLX_TRY(vectors(c, 1, 2, names, last_dim(c->in[0]), "features = x's last dim"));
  RLX_TRY(same_as(c, 0, "x", 3, "dy"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, last_dim(c->in[0]));
  return RLX_OK;
}

rlx_status rlx_infer_BatchNormInferenceBackwardBeta(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(features_x(c, "dy"));
  *out = vec_shape((rlx_dtype)c->in[0]->dtype, last_dim(c->in[0]));
  return RLX_OK;
}

/* ---- scans and indexing ---- */

rlx_status rlx_infer_CumsumBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  uint32_t ax;
  RLX_TRY(iu_need_real(c, 0));
  RLX_TRY(iu_axis(c, "axis", c->a->CumsumBackward.axis, 0, &ax));
  *out = *c->in[0];
  return RLX_OK;
}

/* [dy, indices] -> table. dy = table[..axis] ++ indices.dims ++ table[axis+1..], so everything but
 * the table's extent along `axis` follows from dy; that extent comes from the declared shape. */
rlx_status rlx_infer_GatherBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *dy = c->in[0], *idx = c->in[1], *d = c->declared;
  RLX_TRY(iu_need_real(c, 0));
  RLX_TRY(iu_need_index(c, 1, "indices"));
  if (dy->rank < idx->rank || dy->rank - idx->rank + 1u > RLX_MAX_RANK)
    return rlx_shape_error("operand 0 (dy) has shape %s; with operand 1 (indices) %s it cannot be the output of a "
                           "Gather",
                           rlx_fmt_shape(dy), rlx_fmt_shape(idx));
  uint32_t rank = dy->rank - idx->rank + 1u, ax;
  if (!rlx_norm_axis(c->a->GatherBackward.axis, rank, &ax))
    return rlx_shape_error("attribute axis is %" PRId64 "; the table has rank %u", c->a->GatherBackward.axis, rank);
  for (uint32_t i = 0; i < idx->rank; i++)
    if (!rlx_dim_equal(dy->dims[ax + i], idx->dims[i]))
      return rlx_shape_error("operand 0 (dy) has shape %s; axes %u.. must repeat operand 1 (indices) %s",
                             rlx_fmt_shape(dy), ax, rlx_fmt_shape(idx));
  if (!d)
    return rlx_shape_error("the output (table) shape must be declared: the table's extent along attribute axis "
                           "cannot be recovered from dy");
  if (d->rank != rank)
    return rlx_shape_error("the declared shape %s must have the table's rank %u (rank of dy - rank of indices + 1)",
                           rlx_fmt_shape(d), rank);
  *out = iu_shape((rlx_dtype)dy->dtype, rank);
  for (uint32_t i = 0; i < rank; i++)
    out->dims[i] = i < ax ? dy->dims[i] : i == ax ? d->dims[ax] : dy->dims[i + idx->rank - 1];
  return RLX_OK;
}

/* ---- DiT blocks ---- */

/* Operand i broadcasts onto x (operand 0) and keeps x's last dim (e.g. [B, 1, D]). */
static rlx_status need_modulation(const rlx_infer_ctx *c, uint32_t i, const char *what) {
  const rlx_shape *x = c->in[0], *s = c->in[i];
  RLX_TRY(iu_same_dtype(c, 0, i));
  if (s->rank == 0 || !rlx_dim_equal(last_dim(s), last_dim(x)) || !iu_broadcasts_to(s, x))
    return rlx_shape_error("operand %u (%s) has shape %s; it must broadcast onto x %s and keep x's last dim %s", i,
                           what, rlx_fmt_shape(s), rlx_fmt_shape(x), iu_fmt_dim(last_dim(x)));
  return RLX_OK;
}

/* [x, scale, shift, dy] -> packed dx | dscale | dshift. */
rlx_status rlx_infer_AdaLayerNormBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_AdaLayerNormBackward *a = &c->a->AdaLayerNormBackward;
  if (a->norm < 0 || a->norm >= RLX_ADA_NORM_COUNT)
    return rlx_shape_error("attribute norm: %d is not an AdaNormKind (LayerNorm or RmsNorm)", (int)a->norm);
  RLX_TRY(last_axis_x(c, -1, a->eps));
  RLX_TRY(need_modulation(c, 1, "scale"));
  RLX_TRY(need_modulation(c, 2, "shift"));
  RLX_TRY(same_dims(c, 1, "scale", 2, "shift"));
  RLX_TRY(same_as(c, 0, "x", 3, "dy"));
  static const uint32_t ops[] = {0, 1, 2};
  return packed_output(c, ops, 3, (rlx_dtype)c->in[0]->dtype, out);
}

/* [x, y, gate, dy] -> packed dx | dy_y | dgate. */
rlx_status rlx_infer_GatedResidualBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  if (c->in[0]->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; GatedResidual gates x's last axis");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(same_as(c, 0, "x", 1, "y"));
  RLX_TRY(need_modulation(c, 2, "gate"));
  RLX_TRY(same_as(c, 0, "x", 3, "dy"));
  static const uint32_t ops[] = {0, 1, 2};
  return packed_output(c, ops, 3, (rlx_dtype)c->in[0]->dtype, out);
}
