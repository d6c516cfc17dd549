/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: attention (one AttentionBackward per wanted operand, carrying score_scale and
 * attn_logit_softcap so scaled / soft-capped attention differentiates correctly; in primitives when
 * v_head_dim != head_dim or an additive Bias mask is differentiated), rotary embeddings
 * (RopeBackward with the forward's style) and the softmax cross-entropy losses. */
#include <math.h>

#include "autodiff/ad_internal.h"

/* ---- attention in primitives (for what AttentionBackward cannot do: a V head width different
 * from head_dim, and the gradient of an additive Bias mask) ---- */

/* Layout of the attention operands: kind 0 [B, H, S, D], 1 [B, S, H, D], 2 [B, S, H*D] (rank 3)
 * or [S, H*D] (rank 2), decided by Q as the kernels do. */
typedef struct attn_geom {
  int kind;
  uint32_t rank;
  rlx_dim B, H, Hk, Sq, Sk, D, Dv;
} attn_geom;

static rlx_status attn_geometry(rlx_ad_ctx *c, const rlx_attrs_Attention *a, const rlx_id *x, attn_geom *g) {
  rlx_shape q = ad_shape(c, x[0]), k = ad_shape(c, x[1]);
  g->rank = q.rank;
  g->H = a->num_heads;
  g->D = a->head_dim;
  g->Dv = a->v_head_dim.has ? a->v_head_dim.v : a->head_dim;
  for (uint32_t i = 0; i < q.rank; i++)
    if (q.dims[i] < 0 || k.dims[i] < 0) return ad_unsupported(c, "attention with symbolic extents");
  if (q.rank == 4) {
    g->kind = q.dims[1] == g->H ? 0 : 1;
    g->B = q.dims[0];
    g->Sq = q.dims[g->kind == 0 ? 2 : 1];
    g->Sk = k.dims[g->kind == 0 ? 2 : 1];
    g->Hk = k.dims[g->kind == 0 ? 1 : 2];
  } else {
    g->kind = 2;
    g->B = q.rank == 3 ? q.dims[0] : 1;
    g->Sq = q.dims[q.rank - 2];
    g->Sk = k.dims[k.rank - 2];
    g->Hk = k.dims[k.rank - 1] / g->D;
  }
  if (g->Hk < 1 || g->H % g->Hk) return ad_unsupported(c, "inconsistent attention head counts");
  return RLX_OK;
}

/* Operand in the layout -> [B, heads, S, width]. */
static rlx_status to_bhsd(rlx_ad_ctx *c, const attn_geom *g, rlx_id t, rlx_dim heads, rlx_dim S, rlx_dim width,
                          rlx_id *out) {
  static const int64_t swap[4] = {0, 2, 1, 3};
  if (g->kind == 0) {
    *out = t;
    return RLX_OK;
  }
  if (g->kind == 2) RLX_TRY(ad_reshape_dims(c, t, 4, (rlx_dim[]){g->B, S, heads, width}, &t));
  return ad_transpose(c, t, 4, swap, out);
}

/* [B, heads, S, width] -> the operand layout (shape `like`). */
static rlx_status from_bhsd(rlx_ad_ctx *c, const attn_geom *g, rlx_id t, const rlx_shape *like, rlx_id *out) {
  static const int64_t swap[4] = {0, 2, 1, 3};
  if (g->kind == 0) {
    *out = t;
    return RLX_OK;
  }
  RLX_TRY(ad_transpose(c, t, 4, swap, &t));
  return ad_reshape(c, t, like, out);
}

/* K/V heads repeated for grouped-query attention: [B, Hk, S, w] -> [B, H, S, w]. */
static rlx_status expand_heads(rlx_ad_ctx *c, const attn_geom *g, rlx_id t, rlx_dim S, rlx_dim w, rlx_id *out) {
  if (g->Hk == g->H) {
    *out = t;
    return RLX_OK;
  }
  rlx_dim G = g->H / g->Hk;
  rlx_shape to = ad_shape(c, t);
  to.rank = 5;
  to.dims[0] = g->B, to.dims[1] = g->Hk, to.dims[2] = G, to.dims[3] = S, to.dims[4] = w;
  RLX_TRY(ad_reshape_dims(c, t, 5, (rlx_dim[]){g->B, g->Hk, 1, S, w}, &t));
  RLX_TRY(ad_expand(c, t, &to, &t));
  return ad_reshape_dims(c, t, 4, (rlx_dim[]){g->B, g->H, S, w}, out);
}

/* The adjoint of expand_heads: sum over each group of query heads. */
static rlx_status sum_heads(rlx_ad_ctx *c, const attn_geom *g, rlx_id t, rlx_dim S, rlx_dim w, rlx_id *out) {
  if (g->Hk == g->H) {
    *out = t;
    return RLX_OK;
  }
  int64_t ax = 2;
  RLX_TRY(ad_reshape_dims(c, t, 5, (rlx_dim[]){g->B, g->Hk, g->H / g->Hk, S, w}, &t));
  return ad_reduce(c, RLX_REDUCE_SUM, t, 1, &ax, false, out);
}

/* Causal / sliding-window visibility as a [Sq, Sk] bool constant (key ki visible for query qi iff
 * ki <= p, and p - window <= ki for SlidingWindow, with p = Sk - Sq + qi). */
static rlx_status position_mask(rlx_ad_ctx *c, const rlx_attrs_Attention *a, const attn_geom *g, rlx_id *out) {
  size_t n = (size_t)g->Sq * (size_t)g->Sk;
  double *v = c->al->alloc(c->al->ctx, (n ? n : 1) * sizeof *v);
  if (!v) return rlx_errorf(RLX_ERR_OOM, "out of memory building an attention mask");
  for (rlx_dim qi = 0; qi < g->Sq; qi++)
    for (rlx_dim ki = 0; ki < g->Sk; ki++) {
      int64_t p = g->Sk - g->Sq + qi;
      bool keep = ki <= p && (a->mask_kind != RLX_MASK_SLIDING_WINDOW || ki >= p - a->window);
      v[qi * g->Sk + ki] = keep;
    }
  rlx_shape s = rlx_shape_make(RLX_BOOL, 2, (const rlx_dim[]){g->Sq, g->Sk});
  rlx_status st = ad_const_values(c, &s, v, out);
  c->al->free(c->al->ctx, v);
  return st;
}

/* Every gradient of an Attention node (wanted operands only) in primitives. */
static rlx_status attention_primitives(rlx_ad_ctx *c, const rlx_attrs_Attention *a, const rlx_id *x, rlx_id dy,
                                       rlx_id *dx) {
  attn_geom g;
  RLX_TRY(attn_geometry(c, a, x, &g));
  rlx_dtype t = ad_dtype(c, x[0]);
  double scale = a->score_scale.has ? (double)a->score_scale.v : 1.0 / sqrt((double)g.D);
  rlx_id q, k, v, o, kt, s, raw, keep = RLX_NO_ID, p, dp, ds, tmp;
  RLX_TRY(to_bhsd(c, &g, x[0], g.H, g.Sq, g.D, &q));
  RLX_TRY(to_bhsd(c, &g, x[1], g.Hk, g.Sk, g.D, &k));
  RLX_TRY(to_bhsd(c, &g, x[2], g.Hk, g.Sk, g.Dv, &v));
  RLX_TRY(to_bhsd(c, &g, dy, g.H, g.Sq, g.Dv, &o));
  RLX_TRY(expand_heads(c, &g, k, g.Sk, g.D, &k));
  RLX_TRY(expand_heads(c, &g, v, g.Sk, g.Dv, &v));
  /* scores, softcap, masks, probabilities */
  RLX_TRY(ad_mT(c, k, &kt));
  RLX_TRY(ad_matmul(c, q, kt, &raw));
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, raw, scale, &raw));
  s = raw;
  if (a->attn_logit_softcap.has) {
    double cap = a->attn_logit_softcap.v;
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, raw, 1.0 / cap, &s));
    RLX_TRY(ad_act(c, RLX_ACT_TANH, s, &s));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, s, cap, &s));
  }
  if (a->mask_kind == RLX_MASK_BIAS) RLX_TRY(ad_add(c, s, x[3], &s));
  if (a->mask_kind == RLX_MASK_CAUSAL || a->mask_kind == RLX_MASK_SLIDING_WINDOW) {
    RLX_TRY(position_mask(c, a, &g, &keep));
  } else if (a->mask_kind == RLX_MASK_CUSTOM) {
    rlx_shape ms = ad_shape(c, x[3]);
    rlx_id m;
    RLX_TRY(ad_cast(c, x[3], t, &m));
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GE, m, 0.5, &keep));
    if (ms.rank == 2)
      RLX_TRY(ad_reshape_dims(c, keep, 4, (rlx_dim[]){g.B, 1, 1, g.Sk}, &keep));
    else
      RLX_TRY(ad_reshape_dims(c, keep, 4, (rlx_dim[]){g.B, 1, g.Sq, g.Sk}, &keep));
  }
  if (keep != RLX_NO_ID) {
    rlx_id low;
    RLX_TRY(ad_scalar(c, t, t == RLX_F64 ? -1e300 : -3e38, &low));
    RLX_TRY(ad_where(c, keep, s, low, &s));
  }
  rlx_attrs_Softmax sa = {.axis = -1};
  RLX_TRY(rlx_build_Softmax(c->dst, &s, 1, &sa, NULL, &p));
  if (keep != RLX_NO_ID) { /* rows whose keys are all masked attend to nothing */
    rlx_id kf;
    RLX_TRY(ad_mask(c, keep, t, &kf));
    RLX_TRY(ad_mul(c, p, kf, &p));
  }
  /* dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dP P)) */
  if (c->want[2]) {
    rlx_shape vs = ad_shape(c, x[2]);
    RLX_TRY(ad_mT(c, p, &tmp));
    RLX_TRY(ad_matmul(c, tmp, o, &tmp));
    RLX_TRY(sum_heads(c, &g, tmp, g.Sk, g.Dv, &tmp));
    RLX_TRY(from_bhsd(c, &g, tmp, &vs, &dx[2]));
  }
  bool want_bias = a->mask_kind == RLX_MASK_BIAS && c->want[3];
  if (!c->want[0] && !c->want[1] && !want_bias) return RLX_OK;
  RLX_TRY(ad_mT(c, v, &tmp));
  RLX_TRY(ad_matmul(c, o, tmp, &dp));
  RLX_TRY(ad_mul(c, dp, p, &tmp));
  RLX_TRY(ad_sum_keep(c, tmp, 3, &tmp));
  RLX_TRY(ad_sub(c, dp, tmp, &ds));
  RLX_TRY(ad_mul(c, ds, p, &ds));
  if (want_bias) {
    rlx_shape bs = ad_shape(c, x[3]);
    RLX_TRY(ad_unbroadcast(c, ds, &bs, &dx[3]));
  }
  if (a->attn_logit_softcap.has) { /* d s / d raw = 1 - tanh^2(raw / cap) */
    rlx_id th;
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, raw, 1.0 / a->attn_logit_softcap.v, &th));
    RLX_TRY(ad_act(c, RLX_ACT_TANH, th, &th));
    RLX_TRY(ad_mul(c, th, th, &th));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, th, &th));
    RLX_TRY(ad_mul(c, ds, th, &ds));
  }
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, ds, scale, &ds));
  if (c->want[0]) {
    rlx_shape qs = ad_shape(c, x[0]);
    RLX_TRY(ad_matmul(c, ds, k, &tmp));
    RLX_TRY(from_bhsd(c, &g, tmp, &qs, &dx[0]));
  }
  if (c->want[1]) {
    rlx_shape ks = ad_shape(c, x[1]);
    RLX_TRY(ad_mT(c, ds, &tmp));
    RLX_TRY(ad_matmul(c, tmp, q, &tmp));
    RLX_TRY(sum_heads(c, &g, tmp, g.Sk, g.D, &tmp));
    RLX_TRY(from_bhsd(c, &g, tmp, &ks, &dx[1]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(Attention) {
  (void)y;
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  bool has_mask = a->mask_kind == RLX_MASK_CUSTOM || a->mask_kind == RLX_MASK_BIAS;
  bool want_bias = has_mask && n->n_inputs > 3 && c->want[3] && a->mask_kind == RLX_MASK_BIAS;
  if ((a->v_head_dim.has && a->v_head_dim.v != a->head_dim) || want_bias) return attention_primitives(c, a, x, dy, dx);
  static const rlx_attn_wrt wrt[3] = {RLX_ATTN_WRT_QUERY, RLX_ATTN_WRT_KEY, RLX_ATTN_WRT_VALUE};
  for (uint32_t i = 0; i < 3; i++) {
    if (!c->want[i]) continue;
    rlx_attrs_AttentionBackward at;
    rlx_attrs_init(RLX_OP_AttentionBackward, &at);
    at.num_heads = a->num_heads;
    at.head_dim = a->head_dim;
    at.mask_kind = a->mask_kind;
    at.window = a->window;
    at.wrt = wrt[i];
    at.score_scale = a->score_scale;
    at.attn_logit_softcap = a->attn_logit_softcap;
    rlx_id in[5] = {x[0], x[1], x[2], dy, has_mask ? x[3] : RLX_NO_ID};
    RLX_TRY(ad_emit(c, RLX_OP_AttentionBackward, in, has_mask ? 5 : 4, &at, NULL, &dx[i]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(Rope) {
  (void)y;
  if (c->want[1] || c->want[2])
    return ad_unsupported(c, "gradients with respect to the cos/sin tables (operands 1 and 2) are not supported");
  rlx_attrs_RopeBackward a = {
      .head_dim = n->attrs.Rope.head_dim, .n_rot = n->attrs.Rope.n_rot, .style = n->attrs.Rope.style};
  rlx_id in[3] = {dy, x[1], x[2]};
  return ad_emit(c, RLX_OP_RopeBackward, in, 3, &a, NULL, &dx[0]);
}

/* RopeBackward(dy) rotates by -angle: its adjoint is the forward rotation. */
RLX_VJP_DECL(RopeBackward) {
  (void)y;
  if (c->want[1] || c->want[2])
    return ad_unsupported(c, "gradients with respect to the cos/sin tables (operands 1 and 2) are not supported");
  rlx_attrs_Rope a = {.head_dim = n->attrs.RopeBackward.head_dim,
                      .n_rot = n->attrs.RopeBackward.n_rot,
                      .style = n->attrs.RopeBackward.style};
  rlx_id in[3] = {dy, x[1], x[2]};
  return rlx_build_Rope(c->dst, in, 3, &a, NULL, &dx[0]);
}

/* loss_n = lse(l_n) - sum_c t_nc l_nc: dl = (softmax(l) - t) g_n, dt = -l g_n. */
RLX_VJP_DECL(SoftmaxCrossEntropy) {
  (void)n;
  (void)y;
  rlx_id g, t;
  RLX_TRY(ad_unsqueeze(c, dy, 1, &g));
  if (c->want[0]) {
    rlx_attrs_Softmax sa = {.axis = -1};
    RLX_TRY(rlx_build_Softmax(c->dst, &x[0], 1, &sa, NULL, &t));
    RLX_TRY(ad_sub(c, t, x[1], &t));
    RLX_TRY(ad_mul(c, t, g, &dx[0]));
  }
  if (c->want[1]) {
    RLX_TRY(ad_mul(c, x[0], g, &t));
    RLX_TRY(ad_neg(c, t, &dx[1]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(SoftmaxCrossEntropyWithLogits) {
  (void)n;
  (void)y;
  if (!c->want[0]) return RLX_OK; /* labels are indices */
  rlx_id in[3] = {x[0], x[1], dy};
  return ad_emit(c, RLX_OP_SoftmaxCrossEntropyBackward, in, 3, NULL, NULL, &dx[0]);
}
