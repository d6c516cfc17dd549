/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of position encodings and fused attention blocks: AxialRope2d,
 * FusedAttentionBlock and FusedTransformerLayer. */
#include <math.h>

#include "passes/decompose/decompose.h"

/* AxialRope2d on x [B, N, H*D]: out = x * COS + x[partner] * SIN, where for every token t and lane l
 * (pair (2c, 2c+1) of one head half) COS = cos(angle), SIN = -sin(angle) on the first lane of a
 * pair and +sin(angle) on the second, partner(l) = l ^ 1, and
 *   p = t / repeat, (px, py) = (p mod end_x, p div end_x),
 *   angle = (first half ? px : py) * theta^(-4c / D).
 * The tables are constants of x's dtype ([N, H*D]); the partner swap is a Gather on axis 2. */
RLX_DECOMPOSE_DECL(AxialRope2d) {
  (void)src;
  const rlx_attrs_AxialRope2d *a = &n->attrs.AxialRope2d;
  rlx_shape xs = dc_shape(dst, in[0]);
  if (xs.rank != 3) return rlx_errorf(RLX_ERR_INVALID_ARG, "AxialRope2d needs [B, N, H*D]");
  int64_t D = a->head_dim, H = a->num_heads, rep = a->repeat_factor, ex = a->end_x, ey = a->end_y;
  if (D < 4 || D % 4 || H < 1 || rep < 1 || ex < 1 || ey < 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "AxialRope2d: invalid attributes");
  int64_t W, N;
  if (__builtin_mul_overflow(H, D, &W) || __builtin_mul_overflow(ex, ey, &N) || __builtin_mul_overflow(N, rep, &N))
    return rlx_errorf(RLX_ERR_OVERFLOW, "AxialRope2d: sizes overflow");
  size_t cells;
  if (!rlx_mul_size((size_t)N, (size_t)W, &cells) || cells > ((size_t)1 << 28))
    return dc_unsupported(n, "the rotation tables would hold too many entries");
  rlx_dtype t = (rlx_dtype)xs.dtype;
  const rlx_allocator *al = rlx_graph_allocator(dst);
  double *cs = al->alloc(al->ctx, cells * sizeof *cs), *sn = al->alloc(al->ctx, cells * sizeof *sn);
  int64_t *partner = al->alloc(al->ctx, (size_t)W * sizeof *partner);
  rlx_status s = RLX_OK;
  if (!cs || !sn || !partner) s = rlx_errorf(RLX_ERR_OOM, "out of memory for AxialRope2d tables");
  for (int64_t tok = 0; tok < N && !s; tok++) {
    int64_t p = tok / rep, px = p % ex, py = p / ex;
    for (int64_t l = 0; l < W; l++) {
      int64_t lh = l % D, half = D / 2, q = lh < half ? lh : lh - half;
      double coord = (double)(lh < half ? px : py);
      double freq = pow((double)a->theta, -4.0 * (double)(q / 2) / (double)D);
      double ang = coord * freq;
      cs[tok * W + l] = cos(ang);
      sn[tok * W + l] = (q % 2 == 0 ? -1.0 : 1.0) * sin(ang);
    }
  }
  for (int64_t l = 0; l < W && !s; l++) partner[l] = l ^ 1;
  rlx_dim td[2] = {N, W};
  rlx_id ctab = 0, stab = 0, pidx = 0, xc, xp, xps;
  if (!s) s = rlx_values(dst, t, 2, td, cs, &ctab);
  if (!s) s = rlx_values(dst, t, 2, td, sn, &stab);
  if (!s) s = rlx_i64s(dst, (uint32_t)W, partner, &pidx);
  al->free(al->ctx, cs);
  al->free(al->ctx, sn);
  al->free(al->ctx, partner);
  RLX_TRY(s);
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, in[0], ctab, &xc));
  RLX_TRY(rlx_gather_axis(dst, in[0], pidx, 2, &xp));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, xp, stab, &xps));
  return rlx_binary(dst, RLX_BINOP_ADD, xc, xps, out);
}

/* x @ w (+ b). */
static rlx_status linear(rlx_graph *g, rlx_id x, rlx_id w, const rlx_id *b, rlx_id *out) {
  RLX_TRY(rlx_matmul(g, x, w, out));
  if (b) RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, *out, *b, out));
  return RLX_OK;
}

/* Self-attention of a [B, S, H*D] hidden state with packed heads: one QKV projection, thirds Q, K,
 * V, optional NeoX rope on Q and K (n_rot = D), scaled-dot-product attention with a Custom [B, S]
 * keep-mask, output projection. */
static rlx_status attention_block(rlx_graph *g, const rlx_node *n, rlx_id hidden, rlx_id qkv_w, const rlx_id *qkv_b,
                                  rlx_id out_w, const rlx_id *out_b, rlx_id mask, const rlx_id *cos_sin, int64_t heads,
                                  int64_t head_dim, rlx_id *out) {
  rlx_shape hs = dc_shape(g, hidden);
  if (hs.rank != 3) return dc_unsupported(n, "hidden must be [B, S, H*D]");
  int64_t W;
  if (heads < 1 || head_dim < 1 || __builtin_mul_overflow(heads, head_dim, &W))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: invalid num_heads/head_dim", rlx_op_name(n->op));
  rlx_id qkv, q, k, v, att;
  RLX_TRY(linear(g, hidden, qkv_w, qkv_b, &qkv));
  RLX_TRY(rlx_narrow(g, qkv, 2, 0, W, &q));
  RLX_TRY(rlx_narrow(g, qkv, 2, W, W, &k));
  RLX_TRY(rlx_narrow(g, qkv, 2, 2 * W, W, &v));
  if (cos_sin) {
    rlx_attrs_Rope r = {.head_dim = head_dim, .n_rot = head_dim, .style = RLX_ROPE_STYLE_NEOX};
    rlx_id rq[3] = {q, cos_sin[0], cos_sin[1]}, rk[3] = {k, cos_sin[0], cos_sin[1]};
    RLX_TRY(rlx_build_Rope(g, rq, 3, &r, NULL, &q));
    RLX_TRY(rlx_build_Rope(g, rk, 3, &r, NULL, &k));
  }
  rlx_attrs_Attention at;
  rlx_attrs_init(RLX_OP_Attention, &at);
  at.num_heads = heads;
  at.head_dim = head_dim;
  at.mask_kind = RLX_MASK_CUSTOM;
  rlx_id ain[4] = {q, k, v, mask};
  RLX_TRY(rlx_build_Attention(g, ain, 4, &at, NULL, &att));
  return linear(g, att, out_w, out_b, out);
}

/* FusedAttentionBlock operands: hidden, qkv_w, out_w, mask, [qkv_b, out_b], [cos, sin]. */
RLX_DECOMPOSE_DECL(FusedAttentionBlock) {
  (void)src;
  const rlx_attrs_FusedAttentionBlock *a = &n->attrs.FusedAttentionBlock;
  uint32_t want = 4u + (a->has_bias ? 2u : 0u) + (a->has_rope ? 2u : 0u);
  if (n->n_inputs != want)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "FusedAttentionBlock: has %u operands, attributes need %u", n->n_inputs,
                      want);
  const rlx_id *bias = a->has_bias ? in + 4 : NULL;
  const rlx_id *rope = a->has_rope ? in + (a->has_bias ? 6 : 4) : NULL;
  return attention_block(dst, n, in[0], in[1], bias, in[2], bias ? bias + 1 : NULL, in[3], rope, a->num_heads,
                         a->head_dim, out);
}

/* FusedTransformerLayer (BERT post-norm):
 *   h1 = LayerNorm(attention(hidden) + hidden; ln1, eps1)
 *   out = LayerNorm(act(h1 @ fc1 (+b)) @ fc2 (+b) + h1; ln2, eps2)
 * Operands with biases (14): hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w,
 * fc2_b, ln2_g, ln2_b, mask; without (8): hidden, qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask
 * (LayerNorm betas are then zero). */
RLX_DECOMPOSE_DECL(FusedTransformerLayer) {
  (void)src;
  const rlx_attrs_FusedTransformerLayer *a = &n->attrs.FusedTransformerLayer;
  uint32_t want = a->has_bias ? 14u : 8u;
  if (n->n_inputs != want)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "FusedTransformerLayer: has %u operands, has_bias needs %u", n->n_inputs,
                      want);
  rlx_id hidden = in[0], qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask, ln1_b, ln2_b;
  const rlx_id *qkv_b = NULL, *out_b = NULL, *fc1_b = NULL, *fc2_b = NULL;
  if (a->has_bias) {
    qkv_w = in[1], qkv_b = &in[2], out_w = in[3], out_b = &in[4], ln1_g = in[5], ln1_b = in[6];
    fc1_w = in[7], fc1_b = &in[8], fc2_w = in[9], fc2_b = &in[10], ln2_g = in[11], ln2_b = in[12], mask = in[13];
  } else {
    qkv_w = in[1], out_w = in[2], ln1_g = in[3], fc1_w = in[4], fc2_w = in[5], ln2_g = in[6], mask = in[7];
    rlx_shape hs = dc_shape(dst, hidden);
    rlx_dim w = hs.dims[hs.rank - 1];
    if (w < 0) return dc_unsupported(n, "the hidden width is symbolic");
    RLX_TRY(rlx_fill(dst, (rlx_dtype)hs.dtype, 1, &w, 0.0, &ln1_b));
    ln2_b = ln1_b;
  }
  rlx_id att, h1, f, y;
  RLX_TRY(attention_block(dst, n, hidden, qkv_w, qkv_b, out_w, out_b, mask, NULL, a->num_heads, a->head_dim, &att));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, att, hidden, &h1));
  rlx_attrs_LayerNorm ln = {.axis = -1, .eps = a->eps1};
  rlx_id l1[3] = {h1, ln1_g, ln1_b};
  RLX_TRY(rlx_build_LayerNorm(dst, l1, 3, &ln, NULL, &h1));
  RLX_TRY(linear(dst, h1, fc1_w, fc1_b, &f));
  RLX_TRY(rlx_activation(dst, (rlx_act)a->activation, f, &f));
  RLX_TRY(linear(dst, f, fc2_w, fc2_b, &y));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, y, h1, &y));
  ln.eps = a->eps2;
  rlx_id l2[3] = {y, ln2_g, ln2_b};
  return rlx_build_LayerNorm(dst, l2, 3, &ln, NULL, out);
}
