/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX attention ops of opsets 23..25, decomposed into RLX MatMul / Softmax / elementwise nodes:
 * Attention (multi-head, grouped-query and multi-query; 3-D or 4-D inputs; past/present key and
 * value caches; boolean or additive masks, bottom-right causal masking, nonpad_kv_seqlen, sliding
 * windows; softcap; softmax_precision; all four qk_matmul_output modes) and RotaryEmbedding
 * (full or partial rotation, split halves or interleaved pairs, optional position_ids), and the
 * KV-cache update TensorScatter (opset 24). Shapes
 * must be static (the test runner and `rlx run` bind them from the inputs). */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* [B, S, H*D] -> [B, H, S, D] (4-D inputs pass through). */
static rlx_status heads_first(oi_node *c, rlx_id x, int64_t heads, const char *what, rlx_id *out) {
  const rlx_shape xs = *oi_shape(c, x);
  RLX_TRY(oi_need_static(c, &xs, what));
  if (xs.rank == 4) {
    *out = x;
    return RLX_OK;
  }
  if (xs.rank != 3) return oi_bad(c, "%s must be 3-D or 4-D, got %s", what, rlx_fmt_shape(&xs));
  if (heads < 1 || xs.dims[2] % heads)
    return oi_bad(c,
                  "%s: the hidden size %lld must split into %lld heads (set the num_heads attributes for 3-D inputs)",
                  what, (long long)xs.dims[2], (long long)heads);
  int64_t d4[4] = {xs.dims[0], xs.dims[1], heads, xs.dims[2] / heads}, perm[4] = {0, 2, 1, 3};
  RLX_TRY(oi_reshape(c, x, 4, d4, &x));
  return oi_transpose(c, x, perm, out);
}

/* Repeats each of the H heads of x [B, H, T, D] g times along axis 1 (grouped-query attention). */
static rlx_status repeat_heads(oi_node *c, rlx_id x, int64_t g, rlx_id *out) {
  if (g == 1) {
    *out = x;
    return RLX_OK;
  }
  const rlx_shape *s = oi_shape(c, x);
  int64_t B = s->dims[0], H = s->dims[1], T = s->dims[2], D = s->dims[3];
  int64_t d5[5] = {B, H, 1, T, D}, e5[5] = {B, H, g, T, D}, d4[4] = {B, H * g, T, D};
  RLX_TRY(oi_reshape(c, x, 5, d5, &x));
  rlx_attrs_Expand ea = {.target_shape = {.v = e5, .n = 5}};
  RLX_TRY(oi_emit(c, RLX_OP_Expand, &x, 1, &ea, &x));
  return oi_reshape(c, x, 4, d4, out);
}

/* Constant [1, 1, Sq, T] i64 table of v(i, j). */
static rlx_status ij_table(oi_node *c, int64_t Sq, int64_t T, int kind, int64_t offset, rlx_id *out) {
  int64_t *v = oi_scratch(c, (size_t)(Sq * T) * sizeof *v);
  if (!v) return oi_nomem(c);
  for (int64_t i = 0; i < Sq; i++)
    for (int64_t j = 0; j < T; j++) v[i * T + j] = kind == 0 ? j - i - offset : j;
  rlx_dim d[4] = {1, 1, Sq, T};
  return oi_const(c, rlx_shape_make(RLX_I64, 4, d), v, (size_t)(Sq * T) * 8, out);
}

static rlx_status and_into(oi_node *c, rlx_id m, rlx_id *allowed) {
  if (*allowed == RLX_NO_ID) {
    *allowed = m;
    return RLX_OK;
  }
  return oi_bin(c, RLX_BINOP_BIT_AND, *allowed, m, allowed);
}

/* Which keys each query may attend ([.., Sq, T] bool; RLX_NO_ID = all): causal (bottom-right,
 * offset = past length, or nonpad_kv_seqlen - Sq per batch), padding (j < nonpad_kv_seqlen) and
 * sliding windows (opset 25). */
static rlx_status structural_mask(oi_node *c, int64_t Sq, int64_t T, int64_t past, bool causal, int64_t left,
                                  int64_t right, rlx_id *allowed) {
  *allowed = RLX_NO_ID;
  rlx_id nonpad = RLX_NO_ID;
  int64_t B = 0;
  if (c->opset >= 24 && oi_has(c, 6)) {
    const rlx_shape *ns = oi_in_shape(c, 6);
    if (ns->rank != 1) return oi_bad(c, "input nonpad_kv_seqlen must be 1-D, got %s", rlx_fmt_shape(ns));
    if (past) return oi_bad(c, "nonpad_kv_seqlen cannot be combined with past_key / past_value");
    B = ns->dims[0];
    int64_t d4[4] = {B, 1, 1, 1};
    RLX_TRY(oi_cast(c, c->in[6], RLX_I64, &nonpad));
    RLX_TRY(oi_reshape(c, nonpad, 4, d4, &nonpad));
  }
  rlx_id t, m;
  if (nonpad != RLX_NO_ID) { /* padding: j < nonpad */
    RLX_TRY(ij_table(c, Sq, T, 1, 0, &t));
    RLX_TRY(oi_cmp(c, RLX_CMP_LT, t, nonpad, &m));
    RLX_TRY(and_into(c, m, allowed));
  }
  /* d = j - i - past; the query's absolute position p = offset + i: j <= p  <=>  d <= offset - past */
  bool has_window[2] = {left >= 0, right >= 0};
  if (!causal && !has_window[0] && !has_window[1]) return RLX_OK;
  RLX_TRY(ij_table(c, Sq, T, 0, past, &t));
  rlx_id rel = t;            /* j - (i + offset) */
  if (nonpad != RLX_NO_ID) { /* offset = nonpad - Sq per batch: rel = t + Sq - nonpad */
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, t, (double)Sq, &rel));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, rel, nonpad, &rel));
  }
  rlx_id zero;
  RLX_TRY(oi_scalar(c, RLX_I64, 0, &zero));
  if (causal) {
    RLX_TRY(oi_cmp(c, RLX_CMP_LE, rel, zero, &m));
    RLX_TRY(and_into(c, m, allowed));
  }
  if (has_window[0]) { /* j >= p - left */
    rlx_id b;
    RLX_TRY(oi_scalar(c, RLX_I64, (double)-left, &b));
    RLX_TRY(oi_cmp(c, RLX_CMP_GE, rel, b, &m));
    RLX_TRY(and_into(c, m, allowed));
  }
  if (has_window[1]) { /* j <= p + right */
    rlx_id b;
    RLX_TRY(oi_scalar(c, RLX_I64, (double)right, &b));
    RLX_TRY(oi_cmp(c, RLX_CMP_LE, rel, b, &m));
    RLX_TRY(and_into(c, m, allowed));
  }
  return RLX_OK;
}

/* attn_mask: a bool mask joins `allowed`; a float mask becomes an additive bias. A last dim
 * shorter than T is padded with "not allowed". */
static rlx_status user_mask(oi_node *c, int64_t T, rlx_dtype st, rlx_id *allowed, rlx_id *bias) {
  *bias = RLX_NO_ID;
  if (!oi_has(c, 3)) return RLX_OK;
  rlx_id m = c->in[3];
  const rlx_shape ms = *oi_shape(c, m);
  RLX_TRY(oi_need_static(c, &ms, "attn_mask"));
  if (ms.rank < 1 || ms.rank > 4) return oi_bad(c, "attn_mask must have rank 1..4, got %s", rlx_fmt_shape(&ms));
  int64_t last = ms.dims[ms.rank - 1];
  bool is_bool = ms.dtype == RLX_BOOL;
  if (!is_bool && !rlx_dtype_is_float((rlx_dtype)ms.dtype))
    return oi_bad(c, "attn_mask must be bool or floating-point");
  if (last > T)
    return oi_bad(c, "attn_mask's last dim %lld exceeds the total sequence length %lld", (long long)last, (long long)T);
  if (last < T) { /* pad the key axis */
    rlx_shape ps = ms;
    ps.dims[ms.rank - 1] = T - last;
    rlx_id pad, parts[2];
    RLX_TRY(oi_fill(c, ps, is_bool ? 0.0 : -INFINITY, &pad));
    parts[0] = m, parts[1] = pad;
    RLX_TRY(oi_concat(c, parts, 2, (int64_t)ms.rank - 1, &m));
  }
  if (is_bool) return and_into(c, m, allowed);
  return oi_cast(c, m, st, bias);
}

static rlx_status map_attention(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "Q"));
  RLX_TRY(oi_need(c, 1, "K"));
  RLX_TRY(oi_need(c, 2, "V"));
  int64_t causal, qh, kh, mode, left = -1, right = -1, smp;
  float scale_attr, softcap;
  RLX_TRY(oi_attr_i(c, "is_causal", 0, &causal));
  RLX_TRY(oi_attr_i(c, "q_num_heads", 0, &qh));
  RLX_TRY(oi_attr_i(c, "kv_num_heads", 0, &kh));
  RLX_TRY(oi_attr_i(c, "qk_matmul_output_mode", 0, &mode));
  RLX_TRY(oi_attr_f(c, "softcap", 0.0f, &softcap));
  RLX_TRY(oi_attr_i(c, "softmax_precision", 0, &smp));
  bool has_scale = oi_attr(c, "scale") != NULL;
  RLX_TRY(oi_attr_f(c, "scale", 0.0f, &scale_attr));
  if (c->opset >= 25) {
    RLX_TRY(oi_attr_i(c, "left_window_size", -1, &left));
    RLX_TRY(oi_attr_i(c, "right_window_size", -1, &right));
  }
  if (mode < 0 || mode > 3) return oi_bad(c, "attribute qk_matmul_output_mode is %lld; expected 0..3", (long long)mode);
  rlx_dtype t = (rlx_dtype)oi_in_shape(c, 0)->dtype, vt = (rlx_dtype)oi_in_shape(c, 2)->dtype;
  if (!rlx_dtype_is_float(t) || !rlx_dtype_is_float(vt)) return oi_bad(c, "Q, K and V must be floating-point");
  rlx_dtype st = t; /* softmax precision */
  if (smp && !oi_dtype_from_onnx((int32_t)smp, &st))
    return oi_unsupported(c, "softmax_precision %s", oi_onnx_dtype_name((int32_t)smp));
  if (!rlx_dtype_is_float(st)) return oi_bad(c, "attribute softmax_precision must name a floating-point dtype");
  bool q3 = oi_in_shape(c, 0)->rank == 3;
  rlx_id q, k, v;
  RLX_TRY(heads_first(c, c->in[0], qh, "Q", &q));
  RLX_TRY(heads_first(c, c->in[1], kh, "K", &k));
  RLX_TRY(heads_first(c, c->in[2], kh, "V", &v));
  RLX_TRY(oi_cast(c, k, t, &k));
  /* the cache: present = past ++ new along the sequence axis */
  int64_t past = 0;
  if (oi_has(c, 4) != oi_has(c, 5)) return oi_bad(c, "past_key and past_value must be given together");
  if (oi_has(c, 4)) {
    const rlx_shape *ps = oi_in_shape(c, 4);
    if (ps->rank != 4) return oi_bad(c, "past_key must be 4-D, got %s", rlx_fmt_shape(ps));
    past = ps->dims[2];
    rlx_id kk[2] = {c->in[4], k}, vv[2] = {c->in[5], v};
    RLX_TRY(oi_concat(c, kk, 2, 2, &k));
    RLX_TRY(oi_concat(c, vv, 2, 2, &v));
  }
  if (c->n_out > 1) c->out[1] = k;
  if (c->n_out > 2) c->out[2] = v;
  const rlx_shape qs = *oi_shape(c, q), ks = *oi_shape(c, k), vs = *oi_shape(c, v);
  int64_t B = qs.dims[0], Hq = qs.dims[1], Sq = qs.dims[2], D = qs.dims[3], Hk = ks.dims[1], T = ks.dims[2];
  if (ks.dims[0] != B || vs.dims[0] != B || ks.dims[3] != D || vs.dims[1] != Hk || vs.dims[2] != T)
    return oi_bad(c, "Q %s, K %s and V %s do not line up", rlx_fmt_shape(&qs), rlx_fmt_shape(&ks), rlx_fmt_shape(&vs));
  if (Hk < 1 || Hq % Hk)
    return oi_bad(c, "q_num_heads (%lld) must be a multiple of kv_num_heads (%lld)", (long long)Hq, (long long)Hk);
  rlx_id kr, vr;
  RLX_TRY(repeat_heads(c, k, Hq / Hk, &kr));
  RLX_TRY(repeat_heads(c, v, Hq / Hk, &vr));
  /* scores = (Q sqrt(s)) (K sqrt(s))^T */
  double scale = has_scale ? (double)scale_attr : 1.0 / sqrt((double)D), rs = sqrt(scale);
  rlx_id qq, kt, s;
  int64_t perm[4] = {0, 1, 3, 2};
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, q, rs, &qq));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, kr, rs, &kt));
  RLX_TRY(oi_transpose(c, kt, perm, &kt));
  rlx_id mm[2] = {qq, kt};
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, mm, 2, NULL, &s));
  rlx_id qk_out = mode == 0 ? s : RLX_NO_ID;
  if (softcap > 0) {
    RLX_TRY(oi_bin_s(c, RLX_BINOP_DIV, s, softcap, &s));
    RLX_TRY(oi_unary(c, RLX_ACT_TANH, s, &s));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, s, softcap, &s));
  }
  if (mode == 1) qk_out = s;
  rlx_id allowed, bias;
  RLX_TRY(structural_mask(c, Sq, T, past, causal != 0, left, right, &allowed));
  RLX_TRY(user_mask(c, T, t, &allowed, &bias));
  if (bias != RLX_NO_ID) RLX_TRY(oi_bin(c, RLX_BINOP_ADD, s, bias, &s));
  if (allowed != RLX_NO_ID) {
    rlx_id ninf;
    RLX_TRY(oi_scalar(c, t, -INFINITY, &ninf));
    RLX_TRY(oi_where(c, allowed, s, ninf, &s));
  }
  if (mode == 2) qk_out = s;
  /* softmax over keys; a row with no finite score (fully masked) gives zeros, not NaN */
  rlx_id p, rmax, dead, zero, ninf;
  RLX_TRY(oi_cast(c, s, st, &p));
  rlx_attrs_Softmax sa = {.axis = -1};
  RLX_TRY(oi_emit(c, RLX_OP_Softmax, &p, 1, &sa, &p));
  int64_t lastax = 3;
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MAX, s, &lastax, 1, true, &rmax));
  RLX_TRY(oi_scalar(c, t, -INFINITY, &ninf));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, rmax, ninf, &dead));
  RLX_TRY(oi_scalar(c, st, 0, &zero));
  RLX_TRY(oi_where(c, dead, zero, p, &p));
  if (mode == 3) RLX_TRY(oi_cast(c, p, t, &qk_out));
  if (c->n_out > 3) c->out[3] = qk_out;
  rlx_id y, pv[2];
  RLX_TRY(oi_cast(c, p, vt, &pv[0]));
  pv[1] = vr;
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, pv, 2, NULL, &y));
  RLX_TRY(oi_cast(c, y, t, &y));
  if (q3) { /* back to [B, Sq, Hq * Dv] */
    int64_t p2[4] = {0, 2, 1, 3}, d3[3] = {B, Sq, Hq * vs.dims[3]};
    RLX_TRY(oi_transpose(c, y, p2, &y));
    RLX_TRY(oi_reshape(c, y, 3, d3, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

/* RotaryEmbedding (opset 23). X is [B, H, S, D] or [B, S, H*D] (num_heads); the caches are
 * [max_pos, R/2] indexed by position_ids [B, S], or [B, S, R/2] without position_ids. The first
 * R = rotary_embedding_dim (default D) features of each head rotate: split halves, or the
 * (even, odd) pairs when interleaved. */
static rlx_status map_rotary(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "cos_cache"));
  RLX_TRY(oi_need(c, 2, "sin_cache"));
  int64_t nh, rdim, inter;
  RLX_TRY(oi_attr_i(c, "num_heads", 0, &nh));
  RLX_TRY(oi_attr_i(c, "rotary_embedding_dim", 0, &rdim));
  RLX_TRY(oi_attr_i(c, "interleaved", 0, &inter));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  RLX_TRY(oi_need_static(c, &xs, "X"));
  rlx_dtype t = (rlx_dtype)xs.dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "X must be floating-point");
  bool x3 = xs.rank == 3;
  /* work in [B, S, H, D] for 3-D input and [B, H, S, D] for 4-D: the caches broadcast as
   * [B, S, 1, R/2] or [B, 1, S, R/2] */
  int64_t B = xs.dims[0], S, D;
  if (x3) {
    if (nh < 1 || xs.dims[2] % nh)
      return oi_bad(c, "attribute num_heads (%lld) must divide the hidden size %lld of 3-D X", (long long)nh,
                    (long long)xs.dims[2]);
    S = xs.dims[1], D = xs.dims[2] / nh;
    int64_t d4[4] = {B, S, nh, D};
    RLX_TRY(oi_reshape(c, x, 4, d4, &x));
  } else if (xs.rank == 4) {
    S = xs.dims[2], D = xs.dims[3];
  } else {
    return oi_bad(c, "X must be 3-D or 4-D, got %s", rlx_fmt_shape(&xs));
  }
  int64_t R = rdim ? rdim : D;
  if (R < 2 || R > D || R % 2)
    return oi_bad(c, "rotary_embedding_dim %lld must be even and at most the head size %lld", (long long)R,
                  (long long)D);
  int64_t half = R / 2;
  rlx_id cs[2];
  for (uint32_t k = 0; k < 2; k++) {
    rlx_id cache = c->in[1 + k];
    if (oi_has(c, 3)) {
      rlx_id idx;
      RLX_TRY(oi_wrap_index(c, c->in[3], oi_shape(c, cache)->dims[0], &idx));
      rlx_attrs_Gather ga = {0};
      rlx_id gi[2] = {cache, idx};
      RLX_TRY(oi_emit(c, RLX_OP_Gather, gi, 2, &ga, &cache));
    }
    const rlx_shape *cs0 = oi_shape(c, cache);
    if (cs0->rank != 3 || cs0->dims[0] != B || cs0->dims[1] != S || cs0->dims[2] != half)
      return oi_bad(c, "%s gives %s per token; expected [%lld, %lld, %lld]", k ? "sin_cache" : "cos_cache",
                    rlx_fmt_shape(cs0), (long long)B, (long long)S, (long long)half);
    int64_t d4a[4] = {B, S, 1, half}, d4b[4] = {B, 1, S, half};
    RLX_TRY(oi_cast(c, cache, t, &cache));
    RLX_TRY(oi_reshape(c, cache, 4, x3 ? d4a : d4b, &cs[k]));
  }
  rlx_id xr, xp = RLX_NO_ID, x1, x2;
  RLX_TRY(oi_narrow(c, x, 3, 0, R, &xr));
  if (R < D) RLX_TRY(oi_narrow(c, x, 3, R, D - R, &xp));
  const rlx_shape rs = *oi_shape(c, xr);
  if (inter) { /* [.., R] -> [.., R/2, 2] */
    int64_t d5[5] = {rs.dims[0], rs.dims[1], rs.dims[2], half, 2}, d4[4] = {rs.dims[0], rs.dims[1], rs.dims[2], half};
    rlx_id pr;
    RLX_TRY(oi_reshape(c, xr, 5, d5, &pr));
    RLX_TRY(oi_narrow(c, pr, 4, 0, 1, &x1));
    RLX_TRY(oi_narrow(c, pr, 4, 1, 1, &x2));
    RLX_TRY(oi_reshape(c, x1, 4, d4, &x1));
    RLX_TRY(oi_reshape(c, x2, 4, d4, &x2));
  } else {
    RLX_TRY(oi_narrow(c, xr, 3, 0, half, &x1));
    RLX_TRY(oi_narrow(c, xr, 3, half, half, &x2));
  }
  rlx_id a, b, re, im, y;
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cs[0], x1, &a));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cs[1], x2, &b));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, a, b, &re));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cs[1], x1, &a));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cs[0], x2, &b));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, a, b, &im));
  if (inter) {
    int64_t d5[5] = {rs.dims[0], rs.dims[1], rs.dims[2], half, 1}, d4[4] = {rs.dims[0], rs.dims[1], rs.dims[2], R};
    rlx_id parts[2];
    RLX_TRY(oi_reshape(c, re, 5, d5, &parts[0]));
    RLX_TRY(oi_reshape(c, im, 5, d5, &parts[1]));
    RLX_TRY(oi_concat(c, parts, 2, 4, &y));
    RLX_TRY(oi_reshape(c, y, 4, d4, &y));
  } else {
    rlx_id parts[2] = {re, im};
    RLX_TRY(oi_concat(c, parts, 2, 3, &y));
  }
  if (xp != RLX_NO_ID) {
    rlx_id parts[2] = {y, xp};
    RLX_TRY(oi_concat(c, parts, 2, 3, &y));
  }
  if (x3) {
    int64_t d3[3] = {xs.dims[0], xs.dims[1], xs.dims[2]};
    RLX_TRY(oi_reshape(c, y, 3, d3, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

/* TensorScatter (opset 24), the KV-cache update: cache position p along `axis` of batch b takes
 * update[.., p - w[b], ..] when 0 <= p - w[b] < sequence_length (w = write_indices, 0 when absent;
 * with mode "circular" positions are taken modulo max_sequence_length), else past_cache[.., p, ..].
 * Built as a GatherElements of the update with per-batch run-time indices and a Where. */
static rlx_status map_tensor_scatter(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "past_cache"));
  RLX_TRY(oi_need(c, 1, "update"));
  int64_t axis;
  const char *mode;
  RLX_TRY(oi_attr_i(c, "axis", -2, &axis));
  RLX_TRY(oi_attr_s(c, "mode", "linear", &mode));
  bool circular = strcmp(mode, "circular") == 0;
  if (!circular && strcmp(mode, "linear") != 0)
    return oi_bad(c, "attribute mode must be \"linear\" or \"circular\", not \"%s\"", mode);
  const rlx_shape ps = *oi_in_shape(c, 0), us = *oi_in_shape(c, 1);
  RLX_TRY(oi_need_static(c, &ps, "past_cache"));
  RLX_TRY(oi_need_static(c, &us, "update"));
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, ps.rank, "attribute axis", &a));
  if (a == 0) return oi_bad(c, "attribute axis cannot be the batch axis 0");
  bool same = ps.rank == us.rank && ps.dtype == us.dtype;
  for (uint32_t i = 0; i < ps.rank && same; i++) same = i == a || ps.dims[i] == us.dims[i];
  if (!same || us.dims[a] > ps.dims[a])
    return oi_bad(c, "update %s must match past_cache %s except for a sequence axis %u no longer than the cache's",
                  rlx_fmt_shape(&us), rlx_fmt_shape(&ps), a);
  int64_t B = ps.dims[0], M = ps.dims[a], S = us.dims[a];
  if (S == 0) {
    c->out[0] = c->in[0];
    return RLX_OK;
  }
  /* w: [B, 1, ..., 1] */
  rlx_id w, pos, rel, zero, lo, hi, valid, idx;
  int64_t wd[RLX_MAX_RANK], pd[RLX_MAX_RANK];
  for (uint32_t i = 0; i < ps.rank; i++) wd[i] = i == 0 ? B : 1, pd[i] = i == a ? M : 1;
  if (oi_has(c, 2)) {
    const rlx_shape *wsh = oi_in_shape(c, 2);
    if (wsh->rank != 1 || wsh->dims[0] != B)
      return oi_bad(c, "write_indices must be [batch_size = %lld], got %s", (long long)B, rlx_fmt_shape(wsh));
    RLX_TRY(oi_cast(c, c->in[2], RLX_I64, &w));
  } else {
    rlx_dim bd = B;
    RLX_TRY(oi_fill(c, rlx_shape_make(RLX_I64, 1, &bd), 0.0, &w));
  }
  RLX_TRY(oi_reshape(c, w, ps.rank, wd, &w));
  int64_t *pv = oi_scratch(c, (size_t)M * sizeof *pv);
  if (!pv) return oi_nomem(c);
  for (int64_t p = 0; p < M; p++) pv[p] = p;
  RLX_TRY(oi_i64s(c, pv, (uint32_t)M, &pos));
  RLX_TRY(oi_reshape(c, pos, ps.rank, pd, &pos));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, pos, w, &rel)); /* [B, .., M, ..] */
  RLX_TRY(oi_scalar(c, RLX_I64, 0, &zero));
  if (circular) { /* rel mod M, into [0, M) */
    rlx_id neg, adj;
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MOD, rel, (double)M, &rel));
    RLX_TRY(oi_cmp(c, RLX_CMP_LT, rel, zero, &neg));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, rel, (double)M, &adj));
    RLX_TRY(oi_where(c, neg, adj, rel, &rel));
  }
  RLX_TRY(oi_cmp(c, RLX_CMP_GE, rel, zero, &lo));
  RLX_TRY(oi_scalar(c, RLX_I64, (double)S, &hi));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, rel, hi, &hi));
  RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, lo, hi, &valid));
  /* gather indices: rel clamped into [0, S), broadcast to the cache's shape */
  rlx_id smax, zi;
  RLX_TRY(oi_scalar(c, RLX_I64, (double)(S - 1), &smax));
  RLX_TRY(oi_bin(c, RLX_BINOP_MAX, rel, zero, &zi));
  RLX_TRY(oi_bin(c, RLX_BINOP_MIN, zi, smax, &idx));
  int64_t full[RLX_MAX_RANK];
  for (uint32_t i = 0; i < ps.rank; i++) full[i] = ps.dims[i];
  rlx_attrs_Expand ea = {.target_shape = {.v = full, .n = ps.rank}};
  RLX_TRY(oi_emit(c, RLX_OP_Expand, &idx, 1, &ea, &idx));
  rlx_attrs_GatherElements ga = {.axis = a};
  rlx_id gi[2] = {c->in[1], idx}, g;
  RLX_TRY(oi_emit(c, RLX_OP_GatherElements, gi, 2, &ga, &g));
  return oi_where(c, valid, g, c->in[0], &c->out[0]);
}

const oi_op_entry oi_ops_attention[] = {
    {"TensorScatter", 24, OI_MAX_OPSET, map_tensor_scatter},
    {"Attention", 23, OI_MAX_OPSET, map_attention},
    {"RotaryEmbedding", 23, OI_MAX_OPSET, map_rotary},
};
const uint32_t oi_ops_attention_len = sizeof oi_ops_attention / sizeof oi_ops_attention[0];
