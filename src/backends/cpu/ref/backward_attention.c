/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: AttentionBackward, AttentionBackwardAll and RopeBackward
 * (spec ir-special §8; forwards in ir-core §8.5 and §10.6).
 *
 * Attention backward operands are [q, k, v, dy, (mask when mask_kind is Custom or Bias)], laid out
 * like the forward's: rank 4 is [B, H, S, D] iff dim 1 == num_heads, else [B, S, H, D]; rank 3 is
 * [B, S, H*D]; rank 2 is [S, H*D]. K and V may have fewer heads (grouped-query attention: query
 * head h reads K/V head h / (H / H_kv)); V has head_dim lanes (the backward ops carry no
 * v_head_dim). Per batch b, query head h and query row qi the forward is recomputed exactly as the
 * forward kernel does it, in double:
 *   r[ki] = scale * <q, k[ki]>          scale = score_scale or 1/sqrt(head_dim)
 *   s[ki] = c * tanh(r[ki] / c)         when attn_logit_softcap = c is set, else r[ki]
 *   Custom: keys with keep-mask < 0.5 are hidden; Bias: s[ki] += bias[b, h, qi, ki]
 *   Causal / SlidingWindow visibility with the query at absolute position S_k - S_q + qi
 *   p = softmax of s over the visible keys (a row with no visible key, or whose visible scores
 *       are all -inf, has output 0 and therefore gradient 0)
 * and then, with g = dy[b, h, qi]:
 *   dv[ki] += p[ki] * g
 *   ds[ki]  = p[ki] * (<g, v[ki]> - sum_j p[j] <g, v[j]>)
 *   dr[ki]  = ds[ki] * (1 - tanh^2(r[ki] / c))   (softcap; else dr = ds)
 *   dq     += scale * dr[ki] * k[ki];  dk[ki] += scale * dr[ki] * q
 * dk and dv accumulate over the query heads sharing a K/V head. The bias and the keep-mask get no
 * gradient. AttentionBackward returns one of dq / dk / dv (attribute wrt); AttentionBackwardAll
 * returns the 1-D concatenation dq | dk | dv, each flattened in its operand's own layout. */
#include <math.h>

#include "backends/cpu/ref/attention_util.h"

static const char *const qkv_names[] = {"q", "k", "v"};

/* The gradients of q, k and v (doubles, each in its operand's layout), computed together. */
typedef struct attn_grads {
  double *dq, *dk, *dv;
  size_t nq, nk, nv;
} attn_grads;

static void grads_free(attn_grads *g) {
  free(g->dq);
  free(g->dk);
  free(g->dv);
}

/* p: the attributes (v_head_dim = head_dim: the backward ops have no v_head_dim). */
static rlx_status attention_grads(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const attn_params *p,
                                  attn_grads *gr) {
  memset(gr, 0, sizeof *gr);
  int mk = p->mask;
  if (mk < 0 || mk >= RLX_MASK_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mask_kind: %d is not a MaskKind", mk);
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  if (n_in != (has_mask ? 5u : 4u))
    return ru_error(RLX_ERR_INVALID_ARG, n, "got %u operands; mask_kind %s needs %u (q, k, v, dy%s)", n_in,
                    rlx_enum_mask.names[mk], has_mask ? 5u : 4u, has_mask ? ", mask" : "");
  rlx_dtype t = ru_dt(&in[0]);
  attn_geom g;
  RLX_TRY(rlx_ref_attn_check(n, in, 4, t, p, qkv_names, &g));
  RLX_TRY(ru_need_dtype(n, in, 3, t));
  if (!rlx_shape_equal(&in[3].shape, &in[0].shape))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 3 (dy) has shape %s; it must equal operand 0 (q) %s",
                    ru_fmt(&in[3].shape), ru_fmt(&in[0].shape));
  const attn_view *q = &g.q, *k = &g.k, *v = &g.v;
  size_t D = q->D;

  double *Q = NULL, *K = NULL, *V = NULL, *G = NULL, *s = NULL, *th = NULL, *pr = NULL, *dp = NULL;
  unsigned char *vis = NULL;
  gr->nq = rlx_tensor_numel(&in[0]);
  gr->nk = rlx_tensor_numel(&in[1]);
  gr->nv = rlx_tensor_numel(&in[2]);
  rlx_status st = rb_load(n, &in[0], &Q);
  if (!st) st = rb_load(n, &in[1], &K);
  if (!st) st = rb_load(n, &in[2], &V);
  if (!st) st = rb_load(n, &in[3], &G);
  if (!st) st = rb_calloc(n, gr->nq, sizeof *gr->dq, &gr->dq);
  if (!st) st = rb_calloc(n, gr->nk, sizeof *gr->dk, &gr->dk);
  if (!st) st = rb_calloc(n, gr->nv, sizeof *gr->dv, &gr->dv);
  if (!st) st = rb_alloc(n, g.Sk, sizeof *s, &s);
  if (!st) st = rb_alloc(n, g.Sk, sizeof *th, &th);
  if (!st) st = rb_alloc(n, g.Sk, sizeof *pr, &pr);
  if (!st) st = rb_alloc(n, g.Sk, sizeof *dp, &dp);
  if (!st) st = rb_alloc(n, g.Sk, sizeof *vis, &vis);
  for (size_t b = 0; b < g.B && !st; b++)
    for (size_t h = 0; h < g.H; h++) {
      size_t kh = h / g.group;
      for (size_t qi = 0; qi < g.Sq; qi++) {
        /* Forward: scores, visibility, softmax. */
        double mx;
        bool nan_seen;
        rlx_ref_attn_scores(&g, Q, K, b, h, qi, s, th, vis, &mx, &nan_seen);
        if (!nan_seen && mx == -INFINITY) continue; /* no visible key: output 0, gradient 0 */
        double sum = 0.0;
        for (size_t ki = 0; ki < g.Sk; ki++) {
          pr[ki] = vis[ki] ? (nan_seen ? NAN : exp(s[ki] - mx)) : 0.0;
          sum += pr[ki];
        }
        /* Backward through P.V and the softmax. */
        double pdp = 0.0;
        for (size_t ki = 0; ki < g.Sk; ki++) {
          pr[ki] /= sum;
          double acc = 0.0;
          for (size_t d = 0; d < D; d++) acc += G[attn_at(q, b, h, qi, d)] * V[attn_at(v, b, kh, ki, d)];
          dp[ki] = acc;
          if (vis[ki]) pdp += pr[ki] * acc;
        }
        for (size_t ki = 0; ki < g.Sk; ki++) {
          if (!vis[ki]) continue;
          for (size_t d = 0; d < D; d++) gr->dv[attn_at(v, b, kh, ki, d)] += pr[ki] * G[attn_at(q, b, h, qi, d)];
          double dr = pr[ki] * (dp[ki] - pdp);
          if (g.capped) dr *= 1.0 - th[ki] * th[ki];
          dr *= g.scale;
          for (size_t d = 0; d < D; d++) {
            gr->dq[attn_at(q, b, h, qi, d)] += dr * K[attn_at(k, b, kh, ki, d)];
            gr->dk[attn_at(k, b, kh, ki, d)] += dr * Q[attn_at(q, b, h, qi, d)];
          }
        }
      }
    }
  free(Q);
  free(K);
  free(V);
  free(G);
  free(s);
  free(th);
  free(pr);
  free(dp);
  free(vis);
  if (st) grads_free(gr);
  return st;
}

RLX_CPU_KERNEL(AttentionBackward) {
  (void)ctx;
  const rlx_attrs_AttentionBackward *a = &n->attrs.AttentionBackward;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 5, out));
  int wrt = a->wrt;
  if (wrt < 0 || wrt >= RLX_ATTN_WRT_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute wrt: %d is not Query, Key or Value", wrt);
  uint32_t which = wrt == RLX_ATTN_WRT_QUERY ? 0 : wrt == RLX_ATTN_WRT_KEY ? 1 : 2;
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  attn_params aa = {a->num_heads, a->head_dim,    a->head_dim,          a->window,
                    a->mask_kind, a->score_scale, a->attn_logit_softcap};
  attn_grads g;
  RLX_TRY(attention_grads(n, in, n_in, &aa, &g));
  rlx_status st = ru_need_out_dims(n, out, in[which].shape.rank, in[which].shape.dims);
  if (!st) rb_store_all(out, which == 0 ? g.dq : which == 1 ? g.dk : g.dv);
  grads_free(&g);
  return st;
}

RLX_CPU_KERNEL(AttentionBackwardAll) {
  (void)ctx;
  const rlx_attrs_AttentionBackwardAll *a = &n->attrs.AttentionBackwardAll;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 5, out));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  attn_params aa = {a->num_heads, a->head_dim,    a->head_dim,          a->window,
                    a->mask_kind, a->score_scale, a->attn_logit_softcap};
  attn_grads g;
  RLX_TRY(attention_grads(n, in, n_in, &aa, &g));
  int64_t total = (int64_t)(g.nq + g.nk + g.nv);
  rlx_status st = ru_need_out_dims(n, out, 1, &total);
  if (!st) {
    rlx_dtype t = ru_dt(out);
    for (size_t i = 0; i < g.nq; i++) ru_store(out->data, t, i, g.dq[i]);
    for (size_t i = 0; i < g.nk; i++) ru_store(out->data, t, g.nq + i, g.dk[i]);
    for (size_t i = 0; i < g.nv; i++) ru_store(out->data, t, g.nq + g.nk + i, g.dv[i]);
  }
  grads_free(&g);
  return st;
}

/* ======================================================================================
 * RopeBackward
 * ====================================================================================== */

/* [dy, cos, sin] -> dx. Rope rotates each pair (NeoX: i, i + n_rot/2; GptJ: 2i, 2i + 1) of every
 * head by the table row's angle; its transpose rotates back by the negated angle:
 *   dx_first = dy_first * c + dy_second * s,  dx_second = dy_second * c - dy_first * s,
 * lanes >= n_rot pass through. Tables and rows are read exactly as the forward Rope reads them:
 * dy is [batch', S, hidden]; a table of rank >= 2 has rows of its last dim, a rank-1 table rows of
 * n_rot/2; the row is the flattened token index when the table has batch'*S rows (!= S), else the
 * position. */
RLX_CPU_KERNEL(RopeBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  const rlx_attrs_RopeBackward *a = &n->attrs.RopeBackward;
  rope_geom g;
  RLX_TRY(rlx_ref_rope_check(n, in, out, a->head_dim, a->n_rot, (int)a->style, "dy", &g));
  rlx_ref_rope_rotate(in, out, &g, -1.0);
  return RLX_OK;
}
