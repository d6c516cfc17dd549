/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: fused / composite ops (spec ir-core §10.12, ir-special §1.4 for LoraMatMul). Each
 * rule checks the operands its unfuse decomposition needs, so a graph that passes here also
 * passes after unfusing. */
#include "infer_conv_util.h"

static rlx_status need_eps(const char *attr, float eps) {
  if (!(eps >= 0.0f) || eps > 3.0e38f)
    return rlx_shape_error("attribute %s is %g; it must be a finite value >= 0", attr, (double)eps);
  return RLX_OK;
}

static rlx_status need_act(const char *attr, int32_t act, bool optional) {
  if ((optional && act == -1) || (act >= 0 && act < RLX_ACT_COUNT)) return RLX_OK;
  return rlx_shape_error("attribute %s: %d is not an Activation%s", attr, (int)act, optional ? " (or none)" : "");
}

static rlx_dim last_dim(const rlx_shape *s) { return s->dims[s->rank - 1]; }

/* Operand j has operand i's dims and dtype. */
static rlx_status same_as(const rlx_infer_ctx *c, uint32_t i, const char *wi, uint32_t j, const char *wj) {
  const rlx_shape *a = c->in[i], *b = c->in[j];
  bool ok = a->rank == b->rank;
  for (uint32_t k = 0; ok && k < a->rank; k++) ok = rlx_dim_equal(a->dims[k], b->dims[k]);
  if (!ok)
    return rlx_shape_error("operand %u (%s) has shape %s; it must have the shape of operand %u (%s) %s", j, wj,
                           rlx_fmt_shape(b), i, wi, rlx_fmt_shape(a));
  return iu_same_dtype(c, i, j);
}

/* Operand i has exactly the given dims (rank n). */
static rlx_status need_dims(const rlx_infer_ctx *c, uint32_t i, const char *what, uint32_t n, const rlx_dim *dims) {
  const rlx_shape *s = c->in[i];
  bool ok = s->rank == n;
  for (uint32_t k = 0; ok && k < n; k++) ok = rlx_dim_equal(s->dims[k], dims[k]);
  if (!ok) {
    rlx_shape want = iu_shape((rlx_dtype)s->dtype, n);
    memcpy(want.dims, dims, n * sizeof *dims);
    return rlx_shape_error("operand %u (%s) has shape %s; expected %s", i, what, rlx_fmt_shape(s),
                           rlx_fmt_shape(&want));
  }
  return RLX_OK;
}

/* Operand i: a [w] bias of x's dtype. */
static rlx_status need_bias(const rlx_infer_ctx *c, uint32_t i, const char *what, rlx_dim w) {
  RLX_TRY(iu_same_dtype(c, 0, i));
  return need_dims(c, i, what, 1, &w);
}

/* Operand i: a per-channel vector of width w (LayerNorm-style: [w] or e.g. [1, w]) of x's dtype. */
static rlx_status need_vec(const rlx_infer_ctx *c, uint32_t i, const char *what, rlx_dim w) {
  RLX_TRY(iu_same_dtype(c, 0, i));
  return iu_need_vector(c, i, what, w, "the hidden size");
}

/* MatMul rule for operands a and b: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast. */
static rlx_status matmul_shape(const rlx_infer_ctx *c, uint32_t ia, uint32_t ib, rlx_shape *out) {
  const rlx_shape *a = c->in[ia], *b = c->in[ib];
  if (a->rank < 2 || b->rank < 2)
    return rlx_shape_error("operand %u has shape %s; a matrix product needs rank >= 2 on both sides",
                           a->rank < 2 ? ia : ib, rlx_fmt_shape(a->rank < 2 ? a : b));
  RLX_TRY(iu_same_dtype(c, ia, ib));
  if (!rlx_dim_equal(a->dims[a->rank - 1], b->dims[b->rank - 2]))
    return rlx_shape_error("operand %u has shape %s; its row count must equal the column count %s of operand %u %s", ib,
                           rlx_fmt_shape(b), iu_fmt_dim(a->dims[a->rank - 1]), ia, rlx_fmt_shape(a));
  rlx_shape ba = iu_shape((rlx_dtype)a->dtype, a->rank - 2u), bb = iu_shape((rlx_dtype)a->dtype, b->rank - 2u);
  memcpy(ba.dims, a->dims, ba.rank * sizeof(rlx_dim));
  memcpy(bb.dims, b->dims, bb.rank * sizeof(rlx_dim));
  rlx_shape batch;
  if (rlx_broadcast(&ba, &bb, &batch) != RLX_OK)
    return rlx_shape_error("the batch dims of operand %u %s and operand %u %s do not broadcast", ia, rlx_fmt_shape(a),
                           ib, rlx_fmt_shape(b));
  *out = batch;
  out->rank = (uint8_t)(batch.rank + 2);
  out->dims[batch.rank] = a->dims[a->rank - 2];
  out->dims[batch.rank + 1] = last_dim(b);
  return RLX_OK;
}

/* [..., 2N] -> [..., N]: up and gate halves of the last axis. */
rlx_status rlx_infer_FusedSwiGLU(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FusedSwiGLU *a = &c->a->FusedSwiGLU;
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 is a scalar; FusedSwiGLU splits the last axis [..., 2N]");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  *out = *x;
  if (a->cast_to.has) {
    if (a->cast_to.v < 0 || a->cast_to.v >= RLX_DTYPE_COUNT)
      return rlx_shape_error("attribute cast_to: %d is not a dtype", (int)a->cast_to.v);
    if (!rlx_dtype_is_float((rlx_dtype)a->cast_to.v))
      return rlx_shape_error("attribute cast_to is %s; the SwiGLU result must stay floating-point",
                             rlx_dtype_name((rlx_dtype)a->cast_to.v));
    out->dtype = (uint8_t)a->cast_to.v;
  }
  rlx_dim w = last_dim(x);
  if (w >= 0) {
    if (w % 2 != 0)
      return rlx_shape_error("operand 0 has shape %s; its last dim must be even (up and gate halves)",
                             rlx_fmt_shape(x));
    out->dims[x->rank - 1] = w / 2;
  } else if (c->declared && c->declared->rank == x->rank) {
    out->dims[x->rank - 1] = last_dim(c->declared);
  } else {
    return rlx_shape_error("operand 0 %s: the last dim is symbolic, so its half is unknown; give the output shape "
                           "explicitly",
                           rlx_fmt_shape(x));
  }
  return RLX_OK;
}

/* [x, w, bias [N]] -> act(x·w + bias). */
rlx_status rlx_infer_FusedMatMulBiasAct(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_act("activation", c->a->FusedMatMulBiasAct.activation, true));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(matmul_shape(c, 0, 1, out));
  return need_bias(c, 2, "bias", last_dim(out));
}

/* [a, b, residual] -> a·b + residual (residual has the full product shape). */
rlx_status rlx_infer_FusedMatMulResidual(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(matmul_shape(c, 0, 1, out));
  RLX_TRY(iu_same_dtype(c, 0, 2));
  return need_dims(c, 2, "residual", out->rank, out->dims);
}

/* [x, w, bias [C_out], (residual)] -> act(conv(x, w) + bias (+ residual)). */
rlx_status rlx_infer_FusedConvBiasAct(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FusedConvBiasAct *a = &c->a->FusedConvBiasAct;
  RLX_TRY(rlx_need_inputs(c, a->has_residual ? 4 : 3,
                          a->has_residual ? "x, w, bias and residual: attribute has_residual is set"
                                          : "x, w and bias: attribute has_residual is not set"));
  RLX_TRY(need_act("activation", a->activation, true));
  RLX_TRY(rlx_conv_forward_shape(c, 2, &a->kernel_size, &a->stride, &a->padding, &a->dilation, a->groups, out));
  RLX_TRY(need_bias(c, 2, "bias", out->dims[1]));
  if (a->has_residual) {
    RLX_TRY(iu_same_dtype(c, 0, 3));
    RLX_TRY(need_dims(c, 3, "residual", out->rank, out->dims));
  }
  return RLX_OK;
}

/* [x, res, (bias), gamma, beta] -> x; norm over the last axis. */
static rlx_status residual_norm(const rlx_infer_ctx *c, bool has_bias, float eps, rlx_shape *out) {
  static const char *const names[] = {"gamma", "beta"};
  RLX_TRY(rlx_need_inputs(c, has_bias ? 5 : 4,
                          has_bias ? "x, residual, bias, gamma, beta: attribute has_bias is set"
                                   : "x, residual, gamma, beta: attribute has_bias is not set"));
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; it needs at least one axis to normalise");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(need_eps("eps", eps));
  RLX_TRY(same_as(c, 0, "x", 1, "residual"));
  rlx_dim d = last_dim(x);
  uint32_t first = 2;
  if (has_bias) {
    RLX_TRY(need_bias(c, 2, "bias", d));
    first = 3;
  }
  for (uint32_t i = 0; i < 2; i++) RLX_TRY(need_vec(c, first + i, names[i], d));
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_FusedResidualLN(const rlx_infer_ctx *c, rlx_shape *out) {
  return residual_norm(c, c->a->FusedResidualLN.has_bias, c->a->FusedResidualLN.eps, out);
}

rlx_status rlx_infer_FusedResidualRmsNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  return residual_norm(c, c->a->FusedResidualRmsNorm.has_bias, c->a->FusedResidualRmsNorm.eps, out);
}

/* Checks heads/head_dim and hidden [B, S, H*D]; returns H*D. */
static rlx_status attention_hidden(const rlx_infer_ctx *c, int64_t heads, int64_t hd, int64_t *hidden) {
  if (heads < 1 || heads > CU_MAX_ATTR)
    return rlx_shape_error("attribute num_heads is %" PRId64 "; it must be in [1, %" PRId64 "]", heads, CU_MAX_ATTR);
  if (hd < 1 || hd > CU_MAX_ATTR)
    return rlx_shape_error("attribute head_dim is %" PRId64 "; it must be in [1, %" PRId64 "]", hd, CU_MAX_ATTR);
  *hidden = heads * hd;
  const rlx_shape *x = c->in[0];
  if (x->rank != 3 || !rlx_dim_equal(x->dims[2], *hidden))
    return rlx_shape_error("operand 0 (hidden) has shape %s; expected [B, S, num_heads*head_dim = %" PRId64 "]",
                           rlx_fmt_shape(x), *hidden);
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (*hidden > INT64_MAX / 4) return rlx_errorf(RLX_ERR_OVERFLOW, "num_heads*head_dim is too large");
  return RLX_OK;
}

/* Operand i: a weight matrix [rows, cols] of hidden's dtype. */
static rlx_status need_matrix(const rlx_infer_ctx *c, uint32_t i, const char *what, rlx_dim rows, rlx_dim cols) {
  rlx_dim d[2] = {rows, cols};
  RLX_TRY(iu_same_dtype(c, 0, i));
  return need_dims(c, i, what, 2, d);
}

/* Operand i: the Custom attention keep-mask [B, S] of hidden (float or bool). */
static rlx_status need_key_mask(const rlx_infer_ctx *c, uint32_t i) {
  rlx_dtype t = (rlx_dtype)c->in[i]->dtype;
  if (!rlx_dtype_is_float(t) && t != RLX_BOOL)
    return rlx_shape_error("operand %u (mask) has dtype %s; a keep-mask must be floating-point or bool", i,
                           rlx_dtype_name(t));
  return need_dims(c, i, "mask", 2, c->in[0]->dims);
}

/* [hidden, qkv_w, out_w, mask, (qkv_b, out_b), (cos, sin)] -> hidden. */
rlx_status rlx_infer_FusedAttentionBlock(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FusedAttentionBlock *a = &c->a->FusedAttentionBlock;
  uint32_t n = 4u + (a->has_bias ? 2u : 0u) + (a->has_rope ? 2u : 0u);
  RLX_TRY(rlx_need_inputs(c, n,
                          "hidden, qkv_w, out_w, mask, then qkv_b and out_b if has_bias, then cos and sin if "
                          "has_rope"));
  int64_t h;
  RLX_TRY(attention_hidden(c, a->num_heads, a->head_dim, &h));
  RLX_TRY(need_matrix(c, 1, "qkv_w", h, 3 * h));
  RLX_TRY(need_matrix(c, 2, "out_w", h, h));
  RLX_TRY(need_key_mask(c, 3));
  uint32_t next = 4;
  if (a->has_bias) {
    RLX_TRY(need_bias(c, 4, "qkv_b", 3 * h));
    RLX_TRY(need_bias(c, 5, "out_b", h));
    next = 6;
  }
  if (a->has_rope) {
    if (a->head_dim % 2)
      return rlx_shape_error("attribute head_dim is %" PRId64 "; rope (has_rope) needs an even head_dim", a->head_dim);
    RLX_TRY(rlx_need_dtype_float(c, next));
    RLX_TRY(same_as(c, next, "cos", next + 1, "sin"));
    const rlx_shape *cs = c->in[next];
    if (cs->rank == 0)
      return rlx_shape_error("operand %u (cos) is a scalar; expected a table with one row per position", next);
    if (cs->rank >= 2 && last_dim(cs) >= 0 && last_dim(cs) < a->head_dim / 2)
      return rlx_shape_error("operand %u (cos) has shape %s; its rows need at least head_dim/2 = %" PRId64 " entries",
                             next, rlx_fmt_shape(cs), a->head_dim / 2);
  }
  *out = *c->in[0];
  return RLX_OK;
}

/* With bias (14): hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b,
 * ln2_g, ln2_b, mask. Without (8): hidden, qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask. */
rlx_status rlx_infer_FusedTransformerLayer(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FusedTransformerLayer *a = &c->a->FusedTransformerLayer;
  bool b = a->has_bias;
  RLX_TRY(rlx_need_inputs(c, b ? 14 : 8,
                          b ? "has_bias: hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b, "
                              "ln2_g, ln2_b, mask"
                            : "no bias: hidden, qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask"));
  RLX_TRY(need_act("activation", a->activation, false));
  RLX_TRY(need_eps("eps1", a->eps1));
  RLX_TRY(need_eps("eps2", a->eps2));
  int64_t h, inter = a->intermediate_size;
  RLX_TRY(attention_hidden(c, a->num_heads, a->head_dim, &h));
  if (inter < 1 || inter > CU_MAX_ATTR)
    return rlx_shape_error("attribute intermediate_size is %" PRId64 "; it must be in [1, %" PRId64 "]", inter,
                           CU_MAX_ATTR);
  /* operand positions */
  uint32_t qkv_w = 1, qkv_b = 2, out_w = b ? 3 : 2, out_b = 4, ln1_g = b ? 5 : 3, ln1_b = 6, fc1_w = b ? 7 : 4,
           fc1_b = 8, fc2_w = b ? 9 : 5, fc2_b = 10, ln2_g = b ? 11 : 6, ln2_b = 12, mask = b ? 13 : 7;
  RLX_TRY(need_matrix(c, qkv_w, "qkv_w", h, 3 * h));
  RLX_TRY(need_matrix(c, out_w, "out_w", h, h));
  RLX_TRY(need_matrix(c, fc1_w, "fc1_w", h, inter));
  RLX_TRY(need_matrix(c, fc2_w, "fc2_w", inter, h));
  RLX_TRY(need_vec(c, ln1_g, "ln1_g", h));
  RLX_TRY(need_vec(c, ln2_g, "ln2_g", h));
  if (b) {
    RLX_TRY(need_bias(c, qkv_b, "qkv_b", 3 * h));
    RLX_TRY(need_bias(c, out_b, "out_b", h));
    RLX_TRY(need_vec(c, ln1_b, "ln1_b", h));
    RLX_TRY(need_bias(c, fc1_b, "fc1_b", inter));
    RLX_TRY(need_bias(c, fc2_b, "fc2_b", h));
    RLX_TRY(need_vec(c, ln2_b, "ln2_b", h));
  }
  RLX_TRY(need_key_mask(c, mask));
  *out = *c->in[0];
  return RLX_OK;
}

/* [x [..., m, k], w [k, n], a [k, r], b [r, n]] -> x·w + scale·(x·a)·b = [..., m, n]. */
rlx_status rlx_infer_LoraMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  float scale = c->a->LoraMatMul.scale;
  if (!(scale == scale) || scale > 3.0e38f || scale < -3.0e38f)
    return rlx_shape_error("attribute scale is %g; it must be finite", (double)scale);
  RLX_TRY(rlx_need_dtype_float(c, 0));
  static const char *const names[] = {"x", "w", "a", "b"};
  for (uint32_t i = 1; i < 4; i++)
    if (c->in[i]->rank != 2)
      return rlx_shape_error("operand %u (%s) has shape %s; expected a matrix", i, names[i], rlx_fmt_shape(c->in[i]));
  RLX_TRY(matmul_shape(c, 0, 1, out));
  rlx_shape xa;
  RLX_TRY(matmul_shape(c, 0, 2, &xa));
  RLX_TRY(iu_same_dtype(c, 0, 3));
  const rlx_shape *bm = c->in[3];
  if (!rlx_dim_equal(bm->dims[0], last_dim(&xa)))
    return rlx_shape_error("operand 3 (b) has shape %s; its row count must be the rank r = %s of operand 2 (a) %s",
                           rlx_fmt_shape(bm), iu_fmt_dim(last_dim(&xa)), rlx_fmt_shape(c->in[2]));
  if (!rlx_dim_equal(bm->dims[1], last_dim(out)))
    return rlx_shape_error("operand 3 (b) has shape %s; its column count must equal operand 1 (w)'s %s",
                           rlx_fmt_shape(bm), iu_fmt_dim(last_dim(out)));
  return RLX_OK;
}
