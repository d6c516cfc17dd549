/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of AttentionBackward, AttentionBackwardAll and RopeBackward (the kernels and the
 * formulas are in ref/backward_attention.c).
 *
 * Attention: q, k, v and dy are brought to [B, H, S, D] (Transpose / Reshape per layout), K/V heads
 * are repeated for grouped-query attention (Reshape + Expand), and then
 *   S  = q k^T * scale                       T = tanh(S / c), S = c T    (softcap c)
 *   S += bias (Bias)                         keep = mask >= 0.5 (Custom) or the constant causal /
 *                                                   sliding-window pattern
 *   P  = where(keep, softmax(where(keep, S, -inf)), 0)   (rows without a visible key give 0)
 *   dV = P^T dy;  dP = dy v^T;  dS = P * (dP - rowsum(P * dP)) [* (1 - T^2)] * scale
 *   dQ = dS k;    dK = dS^T q
 * and dK / dV are summed over the query heads sharing a K/V head and put back into their operand's
 * layout. One difference from the kernel: a row whose visible scores are all -inf (possible only
 * with a -inf Bias) gives NaN here and 0 in the kernel.
 *
 * Rope: the transpose of a rotation is the rotation by the negated angle, so RopeBackward is
 * Rope(dy, cos, -sin). */
#include <math.h>

#include "passes/decompose/decompose.h"

/* Layout of q (and so of k, v, dy): 0 [B, H, S, D], 1 [B, S, H, D], 2 [B, S, H*D], 3 [S, H*D]. */
static int layout_of(const rlx_shape *q, int64_t heads) {
  if (q->rank == 4) return q->dims[1] == heads ? 0 : 1;
  return q->rank == 3 ? 2 : 3;
}

/* Head count of an operand in layout `kind` with D lanes per head (static where needed). */
static rlx_status heads_of(const rlx_node *n, const rlx_shape *s, int kind, int64_t D, int64_t *h) {
  rlx_dim v = kind == 0 ? s->dims[1] : kind == 1 ? s->dims[2] : s->dims[s->rank - 1];
  if (v < 0) return dc_unsupported(n, "the head axis of an operand is symbolic");
  if (kind >= 2) {
    if (v % D)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "attention backward: last dim %lld is not a multiple of head_dim",
                        (long long)v);
    v /= D;
  }
  *h = v;
  return RLX_OK;
}

static const int64_t swap12[4] = {0, 2, 1, 3};

/* x in layout `kind` with h heads -> [B, h, S, D]. */
static rlx_status to_bhsd(rlx_graph *g, rlx_id x, int kind, int64_t h, int64_t D, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  if (kind == 0) {
    *out = x;
    return RLX_OK;
  }
  if (kind == 1) return rlx_permute(g, x, 4, swap12, out);
  rlx_dim d4[4] = {kind == 2 ? s.dims[0] : 1, kind == 2 ? s.dims[1] : s.dims[0], h, D};
  RLX_TRY(rlx_reshape_dims(g, x, 4, d4, &x));
  return rlx_permute(g, x, 4, swap12, out);
}

/* [B, h, S, D] -> the layout and dims of `like`. */
static rlx_status from_bhsd(rlx_graph *g, rlx_id x, int kind, const rlx_shape *like, rlx_id *out) {
  if (kind == 0) {
    *out = x;
    return RLX_OK;
  }
  RLX_TRY(rlx_permute(g, x, 4, swap12, &x));
  return rlx_reshape_dims(g, x, like->rank, like->dims, out);
}

/* [B, Hkv, S, D] -> [B, Hkv * G, S, D], each K/V head repeated for its G query heads. */
static rlx_status repeat_heads(rlx_graph *g, rlx_id x, int64_t G, rlx_id *out) {
  if (G == 1) {
    *out = x;
    return RLX_OK;
  }
  rlx_shape s = dc_shape(g, x);
  rlx_dim d5[5] = {s.dims[0], s.dims[1], 1, s.dims[2], s.dims[3]};
  RLX_TRY(rlx_reshape_dims(g, x, 5, d5, &x));
  d5[2] = G;
  RLX_TRY(rlx_expand_dims(g, x, 5, d5, &x));
  rlx_dim d4[4] = {s.dims[0], s.dims[1] * G, s.dims[2], s.dims[3]};
  return rlx_reshape_dims(g, x, 4, d4, out);
}

/* The transpose of repeat_heads: [B, Hkv * G, S, D] -> [B, Hkv, S, D] summing each group. */
static rlx_status sum_heads(rlx_graph *g, rlx_id x, int64_t G, rlx_id *out) {
  if (G == 1) {
    *out = x;
    return RLX_OK;
  }
  rlx_shape s = dc_shape(g, x);
  rlx_dim d5[5] = {s.dims[0], s.dims[1] / G, G, s.dims[2], s.dims[3]};
  static const int64_t ax2[1] = {2};
  RLX_TRY(rlx_reshape_dims(g, x, 5, d5, &x));
  return rlx_reduce_axes(g, RLX_REDUCE_SUM, x, 1, ax2, false, out);
}

/* Bool [Sq, Sk]: the causal / sliding-window visibility pattern. */
static rlx_status position_mask(rlx_graph *g, const rlx_node *n, int mk, int64_t window, rlx_dim Sq, rlx_dim Sk,
                                rlx_id *out) {
  if (Sq < 0 || Sk < 0) return dc_unsupported(n, "Causal / SlidingWindow masks need static sequence lengths");
  size_t cells;
  if (!rlx_mul_size((size_t)Sq, (size_t)Sk, &cells) || cells > ((size_t)1 << 26))
    return dc_unsupported(n, "the [S_q, S_k] mask constant would be too large");
  const rlx_allocator *al = rlx_graph_allocator(g);
  double *v = al->alloc(al->ctx, (cells ? cells : 1) * sizeof *v);
  if (!v) return rlx_errorf(RLX_ERR_OOM, "out of memory for an attention mask");
  for (rlx_dim qi = 0; qi < Sq; qi++)
    for (rlx_dim ki = 0; ki < Sk; ki++) {
      int64_t p = Sk - Sq + qi;
      bool vis = ki <= p && (mk != RLX_MASK_SLIDING_WINDOW || ki >= p - window);
      v[qi * Sk + ki] = vis;
    }
  rlx_dim d[2] = {Sq, Sk};
  rlx_status s = rlx_values(g, RLX_BOOL, 2, d, v, out);
  al->free(al->ctx, v);
  return s;
}

/* Shared attribute view. */
typedef struct bw_attrs {
  int64_t heads, D, window;
  int mask;
  rlx_of32 scale, cap;
} bw_attrs;

/* dq, dk, dv of q, k, v, dy (in[0..3]) and the mask in[4], each in its operand's layout. */
static rlx_status attention_grads(rlx_graph *g, const rlx_node *n, const rlx_id *in, const bw_attrs *a, rlx_id out[3]) {
  rlx_shape qs = dc_shape(g, in[0]), ks = dc_shape(g, in[1]), vs = dc_shape(g, in[2]);
  rlx_dtype t = (rlx_dtype)qs.dtype;
  if (a->heads < 1 || a->D < 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "attention backward: invalid num_heads / head_dim");
  int kind = layout_of(&qs, a->heads);
  int64_t Hk = 0, Hv = 0;
  RLX_TRY(heads_of(n, &ks, kind, a->D, &Hk));
  RLX_TRY(heads_of(n, &vs, kind, a->D, &Hv));
  if (Hk < 1 || Hv != Hk || a->heads % Hk)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "attention backward: K/V head count %lld must divide num_heads %lld",
                      (long long)Hk, (long long)a->heads);
  int64_t G = a->heads / Hk;
  rlx_id q, k, v, dy, ke, ve;
  RLX_TRY(to_bhsd(g, in[0], kind, a->heads, a->D, &q));
  RLX_TRY(to_bhsd(g, in[1], kind, Hk, a->D, &k));
  RLX_TRY(to_bhsd(g, in[2], kind, Hk, a->D, &v));
  RLX_TRY(to_bhsd(g, in[3], kind, a->heads, a->D, &dy));
  RLX_TRY(repeat_heads(g, k, G, &ke));
  RLX_TRY(repeat_heads(g, v, G, &ve));
  rlx_shape q4 = dc_shape(g, q), k4 = dc_shape(g, ke);
  rlx_dim B = q4.dims[0], Sq = q4.dims[2], Sk = k4.dims[2];
  double scale = a->scale.has ? (double)a->scale.v : 1.0 / sqrt((double)a->D);
  static const int64_t tr[4] = {0, 1, 3, 2}, last[1] = {3};
  rlx_id kt, s, th = 0, keep = 0, p;
  bool has_keep = false;
  RLX_TRY(rlx_permute(g, ke, 4, tr, &kt));
  RLX_TRY(rlx_matmul(g, q, kt, &s));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_MUL, s, scale, &s));
  if (a->cap.has) {
    RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_MUL, s, 1.0 / (double)a->cap.v, &th));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, th, &th));
    RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_MUL, th, (double)a->cap.v, &s));
  }
  if (a->mask == RLX_MASK_BIAS) RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, s, in[4], &s));
  if (a->mask == RLX_MASK_CUSTOM) {
    rlx_shape ms = dc_shape(g, in[4]);
    rlx_id m = in[4], half;
    if (!rlx_dtype_is_float((rlx_dtype)ms.dtype)) RLX_TRY(rlx_cast_to(g, m, RLX_F32, &m));
    rlx_dim d4[4] = {B, 1, ms.rank == 3 ? Sq : 1, Sk};
    RLX_TRY(rlx_reshape_dims(g, m, 4, d4, &m));
    RLX_TRY(rlx_scalar(g, (rlx_dtype)dc_shape(g, m).dtype, 0.5, &half));
    RLX_TRY(rlx_compare(g, RLX_CMP_GE, m, half, &keep));
    has_keep = true;
  } else if (a->mask == RLX_MASK_CAUSAL || a->mask == RLX_MASK_SLIDING_WINDOW) {
    RLX_TRY(position_mask(g, n, a->mask, a->window, Sq, Sk, &keep));
    has_keep = true;
  }
  rlx_attrs_Softmax sm = {.axis = -1};
  if (has_keep) {
    rlx_id ninf, zero;
    RLX_TRY(rlx_scalar(g, t, -INFINITY, &ninf));
    RLX_TRY(rlx_scalar(g, t, 0.0, &zero));
    RLX_TRY(rlx_where(g, keep, s, ninf, &s));
    RLX_TRY(rlx_build_Softmax(g, &s, 1, &sm, NULL, &p));
    RLX_TRY(rlx_where(g, keep, p, zero, &p));
  } else {
    RLX_TRY(rlx_build_Softmax(g, &s, 1, &sm, NULL, &p));
  }
  rlx_id pt, dv, vt, dp, rs, ds, dq, dst, dk;
  RLX_TRY(rlx_permute(g, p, 4, tr, &pt));
  RLX_TRY(rlx_matmul(g, pt, dy, &dv));
  RLX_TRY(rlx_permute(g, ve, 4, tr, &vt));
  RLX_TRY(rlx_matmul(g, dy, vt, &dp));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, p, dp, &rs));
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, rs, 1, last, true, &rs));
  RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, dp, rs, &ds));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, p, ds, &ds));
  if (a->cap.has) {
    rlx_id one, t2;
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, th, th, &t2));
    RLX_TRY(rlx_scalar(g, t, 1.0, &one));
    RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, one, t2, &t2));
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, ds, t2, &ds));
  }
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_MUL, ds, scale, &ds));
  RLX_TRY(rlx_matmul(g, ds, ke, &dq));
  RLX_TRY(rlx_permute(g, ds, 4, tr, &dst));
  RLX_TRY(rlx_matmul(g, dst, q, &dk));
  RLX_TRY(sum_heads(g, dk, G, &dk));
  RLX_TRY(sum_heads(g, dv, G, &dv));
  RLX_TRY(from_bhsd(g, dq, kind, &qs, &out[0]));
  RLX_TRY(from_bhsd(g, dk, kind, &ks, &out[1]));
  return from_bhsd(g, dv, kind, &vs, &out[2]);
}

RLX_DECOMPOSE_DECL(AttentionBackward) {
  (void)src;
  const rlx_attrs_AttentionBackward *a = &n->attrs.AttentionBackward;
  bw_attrs ba = {a->num_heads, a->head_dim, a->window, a->mask_kind, a->score_scale, a->attn_logit_softcap};
  rlx_id g[3];
  RLX_TRY(attention_grads(dst, n, in, &ba, g));
  *out = g[a->wrt == RLX_ATTN_WRT_QUERY ? 0 : a->wrt == RLX_ATTN_WRT_KEY ? 1 : 2];
  return RLX_OK;
}

RLX_DECOMPOSE_DECL(AttentionBackwardAll) {
  (void)src;
  const rlx_attrs_AttentionBackwardAll *a = &n->attrs.AttentionBackwardAll;
  bw_attrs ba = {a->num_heads, a->head_dim, a->window, a->mask_kind, a->score_scale, a->attn_logit_softcap};
  rlx_id g[3];
  RLX_TRY(attention_grads(dst, n, in, &ba, g));
  for (uint32_t i = 0; i < 3; i++) {
    rlx_shape s = dc_shape(dst, g[i]);
    size_t count;
    if (rlx_shape_numel(&s, &count) != RLX_OK) return dc_unsupported(n, "packing needs static operand shapes");
    rlx_dim d = (rlx_dim)count;
    RLX_TRY(rlx_reshape_dims(dst, g[i], 1, &d, &g[i]));
  }
  return rlx_concat(dst, g, 3, 0, out);
}

RLX_DECOMPOSE_DECL(RopeBackward) {
  (void)src;
  const rlx_attrs_RopeBackward *a = &n->attrs.RopeBackward;
  rlx_attrs_Rope r = {.head_dim = a->head_dim, .n_rot = a->n_rot, .style = a->style};
  rlx_id args[3] = {in[0], in[1], 0};
  RLX_TRY(rlx_activation(dst, RLX_ACT_NEG, in[2], &args[2]));
  return rlx_build_Rope(dst, args, 3, &r, NULL, out);
}
