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

#include "backends/cpu/ref/ref_util_b.h"

/* Where (b, h, s, d) of one operand lives. */
typedef struct head_view {
  size_t B, S, H, D;
  int kind; /* 0: [B, H, S, D]; 1: [B, S, H, D]; 2: [B, S, H*D] or [S, H*D] */
} head_view;

static size_t at(const head_view *v, size_t b, size_t h, size_t s, size_t d) {
  switch (v->kind) {
  case 0: return ((b * v->H + h) * v->S + s) * v->D + d;
  case 1: return ((b * v->S + s) * v->H + h) * v->D + d;
  default: return (b * v->S + s) * (v->H * v->D) + h * v->D + d;
  }
}

static const char *const operand_names[] = {"q", "k", "v", "dy"};

/* The view of operand i (layout kind of q). heads = 0 derives the head count. */
static rlx_status view_of(const rlx_node *n, const rlx_shape *s, uint32_t i, int kind, size_t D, size_t heads,
                          head_view *v) {
  v->kind = kind;
  v->D = D;
  if (kind <= 1) {
    v->B = (size_t)s->dims[0];
    v->H = (size_t)s->dims[kind == 0 ? 1 : 2];
    v->S = (size_t)s->dims[kind == 0 ? 2 : 1];
    if ((size_t)s->dims[3] != D)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; its last dim must be head_dim = %zu", i,
                      operand_names[i], ru_fmt(s), D);
  } else {
    size_t last = (size_t)s->dims[s->rank - 1];
    v->B = s->rank == 3 ? (size_t)s->dims[0] : 1;
    v->S = (size_t)s->dims[s->rank == 3 ? 1 : 0];
    if (last % D != 0)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; its last dim must be a multiple of "
                      "head_dim = %zu",
                      i, operand_names[i], ru_fmt(s), D);
    v->H = last / D;
  }
  if (v->H == 0 || (heads && v->H != heads))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s: %zu heads, expected %zu", i,
                    operand_names[i], ru_fmt(s), v->H, heads);
  return RLX_OK;
}

static bool visible(int mk, int64_t window, size_t sq, size_t sk, size_t qi, size_t ki) {
  int64_t p = (int64_t)sk - (int64_t)sq + (int64_t)qi, k = (int64_t)ki;
  if (mk == RLX_MASK_CAUSAL) return k <= p;
  if (mk == RLX_MASK_SLIDING_WINDOW) return k <= p && k >= p - window;
  return true;
}

/* Attributes shared by both ops. */
typedef struct attn_attrs {
  int64_t heads, head_dim, window;
  int mask;
  rlx_of32 score_scale, softcap;
} attn_attrs;

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

static rlx_status attention_grads(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const attn_attrs *a,
                                  attn_grads *gr) {
  memset(gr, 0, sizeof *gr);
  int mk = a->mask;
  if (mk < 0 || mk >= RLX_MASK_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mask_kind: %d is not a MaskKind", mk);
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  if (n_in != (has_mask ? 5u : 4u))
    return ru_error(RLX_ERR_INVALID_ARG, n, "got %u operands; mask_kind %s needs %u (q, k, v, dy%s)", n_in,
                    rlx_enum_mask.names[mk], has_mask ? 5u : 4u, has_mask ? ", mask" : "");
  if (a->heads < 1 || a->head_dim < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes num_heads (%lld) and head_dim (%lld) must be >= 1",
                    (long long)a->heads, (long long)a->head_dim);
  if (a->window < 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute window is %lld; it must be >= 0", (long long)a->window);
  RLX_TRY(rb_need_float(n, in, 0, "q"));
  rlx_dtype t = ru_dt(&in[0]);
  const rlx_shape *qs = &in[0].shape;
  if (qs->rank < 2 || qs->rank > 4)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (q) has shape %s; expected rank 2, 3 or 4", ru_fmt(qs));
  for (uint32_t i = 1; i < 4; i++) {
    RLX_TRY(ru_need_dtype(n, in, i, t));
    if (in[i].shape.rank != qs->rank)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; it must have q's rank %u", i,
                      operand_names[i], ru_fmt(&in[i].shape), qs->rank);
  }
  if (!rlx_shape_equal(&in[3].shape, qs))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 3 (dy) has shape %s; it must equal operand 0 (q) %s",
                    ru_fmt(&in[3].shape), ru_fmt(qs));
  int kind = qs->rank == 4 ? (qs->dims[1] == a->heads ? 0 : 1) : 2;
  size_t D = (size_t)a->head_dim;
  head_view q, k, v;
  RLX_TRY(view_of(n, qs, 0, kind, D, (size_t)a->heads, &q));
  RLX_TRY(view_of(n, &in[1].shape, 1, kind, D, 0, &k));
  RLX_TRY(view_of(n, &in[2].shape, 2, kind, D, k.H, &v));
  if (q.H % k.H != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (k) has %zu heads; it must divide num_heads = %zu", k.H, q.H);
  if (k.B != q.B || v.B != q.B || v.S != k.S)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands q %s, k %s and v %s disagree on batch or key length", ru_fmt(qs),
                    ru_fmt(&in[1].shape), ru_fmt(&in[2].shape));
  size_t B = q.B, Sq = q.S, Sk = k.S, H = q.H, group = q.H / k.H;
  rlx_shape full = rlx_shape_make(t, 4, (const rlx_dim[]){(rlx_dim)B, (rlx_dim)H, (rlx_dim)Sq, (rlx_dim)Sk});
  bool per_query = false;
  if (mk == RLX_MASK_CUSTOM) {
    const rlx_shape *m = &in[4].shape;
    bool two = m->rank == 2 && (size_t)m->dims[0] == B && (size_t)m->dims[1] == Sk;
    per_query = m->rank == 3 && (size_t)m->dims[0] == B && (size_t)m->dims[1] == Sq && (size_t)m->dims[2] == Sk;
    if (!two && !per_query)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 4 (mask) has shape %s; a Custom keep-mask is [B, S_k] = [%zu, "
                      "%zu] or [B, S_q, S_k]",
                      ru_fmt(m), B, Sk);
    if (ru_is_complex(ru_dt(&in[4])))
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 4 (mask) has a complex dtype; a keep-mask must be real or bool");
  } else if (mk == RLX_MASK_BIAS) {
    RLX_TRY(ru_need_dtype(n, in, 4, t));
    RLX_TRY(ru_need_bcast(n, in, 4, &full));
  }
  double scale = a->score_scale.has ? (double)a->score_scale.v : 1.0 / sqrt((double)D);
  bool capped = a->softcap.has;
  double cap = a->softcap.v;

  double *Q = NULL, *K = NULL, *V = NULL, *G = NULL, *s = NULL, *th = NULL, *p = NULL, *dp = NULL;
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
  if (!st) st = rb_alloc(n, Sk, sizeof *s, &s);
  if (!st) st = rb_alloc(n, Sk, sizeof *th, &th);
  if (!st) st = rb_alloc(n, Sk, sizeof *p, &p);
  if (!st) st = rb_alloc(n, Sk, sizeof *dp, &dp);
  if (!st) st = rb_alloc(n, Sk, sizeof *vis, &vis);
  for (size_t b = 0; b < B && !st; b++)
    for (size_t h = 0; h < H; h++) {
      size_t kh = h / group;
      for (size_t qi = 0; qi < Sq; qi++) {
        /* Forward: scores, visibility, softmax. */
        double mx = -INFINITY;
        bool nan_seen = false;
        for (size_t ki = 0; ki < Sk; ki++) {
          double dot = 0.0;
          for (size_t d = 0; d < D; d++) dot += Q[at(&q, b, h, qi, d)] * K[at(&k, b, kh, ki, d)];
          double sc = dot * scale;
          th[ki] = 0.0;
          if (capped) {
            th[ki] = tanh(sc / cap);
            sc = cap * th[ki];
          }
          bool keep = visible(mk, a->window, Sq, Sk, qi, ki);
          if (mk == RLX_MASK_CUSTOM) {
            size_t mi = per_query ? (b * Sq + qi) * Sk + ki : b * Sk + ki;
            if (rlx_elem_get(in[4].data, ru_dt(&in[4]), mi) < 0.5) keep = false;
          } else if (mk == RLX_MASK_BIAS) {
            size_t flat = ((b * H + h) * Sq + qi) * Sk + ki;
            sc += rlx_elem_get(in[4].data, t, rlx_broadcast_offset(&in[4].shape, &full, flat));
          }
          s[ki] = sc;
          vis[ki] = keep;
          if (keep && isnan(sc)) nan_seen = true;
          else if (keep && sc > mx) mx = sc;
        }
        if (!nan_seen && mx == -INFINITY) continue; /* no visible key: output 0, gradient 0 */
        double sum = 0.0;
        for (size_t ki = 0; ki < Sk; ki++) {
          p[ki] = vis[ki] ? (nan_seen ? NAN : exp(s[ki] - mx)) : 0.0;
          sum += p[ki];
        }
        /* Backward through P.V and the softmax. */
        double pdp = 0.0;
        for (size_t ki = 0; ki < Sk; ki++) {
          p[ki] /= sum;
          double acc = 0.0;
          for (size_t d = 0; d < D; d++) acc += G[at(&q, b, h, qi, d)] * V[at(&v, b, kh, ki, d)];
          dp[ki] = acc;
          if (vis[ki]) pdp += p[ki] * acc;
        }
        for (size_t ki = 0; ki < Sk; ki++) {
          if (!vis[ki]) continue;
          for (size_t d = 0; d < D; d++) gr->dv[at(&v, b, kh, ki, d)] += p[ki] * G[at(&q, b, h, qi, d)];
          double dr = p[ki] * (dp[ki] - pdp);
          if (capped) dr *= 1.0 - th[ki] * th[ki];
          dr *= scale;
          for (size_t d = 0; d < D; d++) {
            gr->dq[at(&q, b, h, qi, d)] += dr * K[at(&k, b, kh, ki, d)];
            gr->dk[at(&k, b, kh, ki, d)] += dr * Q[at(&q, b, h, qi, d)];
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
  free(p);
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
  attn_attrs aa = {a->num_heads, a->head_dim, a->window, a->mask_kind, a->score_scale, a->attn_logit_softcap};
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
  attn_attrs aa = {a->num_heads, a->head_dim, a->window, a->mask_kind, a->score_scale, a->attn_logit_softcap};
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
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "dy"));
  for (uint32_t i = 0; i < 3; i++) RLX_TRY(ru_need_dtype(n, in, i, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  int64_t hd = a->head_dim, nr = a->n_rot;
  if (hd < 2 || hd % 2 || nr < 2 || nr % 2 || nr > hd)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes head_dim = %lld and n_rot = %lld must be even with 2 <= n_rot <= "
                    "head_dim",
                    (long long)hd, (long long)nr);
  if (a->style != RLX_ROPE_STYLE_NEOX && a->style != RLX_ROPE_STYLE_GPTJ)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute style: %d is not a RopeStyle", (int)a->style);
  if (x->rank < 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (dy) has shape %s; expected [..., S, hidden]", ru_fmt(x));
  size_t hidden = (size_t)x->dims[x->rank - 1], S = (size_t)x->dims[x->rank - 2], half = (size_t)nr / 2;
  if (hidden % (size_t)hd != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (dy) has shape %s; its last dim must be a multiple of head_dim = "
                    "%lld",
                    ru_fmt(x), (long long)hd);
  const rlx_shape *cs = &in[1].shape;
  if (!rlx_shape_equal(cs, &in[2].shape) || cs->rank == 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands 1 (cos) %s and 2 (sin) %s must be equal-shaped tables", ru_fmt(cs),
                    ru_fmt(&in[2].shape));
  size_t width = cs->rank >= 2 ? (size_t)cs->dims[cs->rank - 1] : half;
  size_t tab = rlx_tensor_numel(&in[1]);
  if (width < half || tab % width != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (cos) has shape %s; its rows need at least n_rot/2 = %zu values",
                    ru_fmt(cs), half);
  size_t rows = tab / width, tokens = hidden ? rlx_tensor_numel(&in[0]) / hidden : 0;
  size_t batch = S ? tokens / S : 0;
  bool per_token = rows == batch * S && rows != S;
  if (!per_token && rows < S && hidden)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (cos) has %zu rows; it needs one per position (>= S = %zu) or one "
                    "per token (%zu)",
                    rows, S, batch * S);
  size_t heads = hd ? hidden / (size_t)hd : 0;
  bool neox = a->style == RLX_ROPE_STYLE_NEOX;
  for (size_t b = 0; b < batch; b++)
    for (size_t s = 0; s < S; s++) {
      size_t row = (per_token ? b * S + s : s) * width, tok = (b * S + s) * hidden;
      for (size_t h = 0; h < heads; h++) {
        size_t base = tok + h * (size_t)hd;
        for (size_t l = (size_t)nr; l < (size_t)hd; l++) /* lanes beyond n_rot pass through */
          ru_store(out->data, t, base + l, rlx_elem_get(in[0].data, t, base + l));
        for (size_t i = 0; i < half; i++) {
          size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
          double c = rlx_elem_get(in[1].data, t, row + i), sn = rlx_elem_get(in[2].data, t, row + i);
          double g0 = rlx_elem_get(in[0].data, t, base + i0), g1 = rlx_elem_get(in[0].data, t, base + i1);
          ru_store(out->data, t, base + i0, g0 * c + g1 * sn);
          ru_store(out->data, t, base + i1, g1 * c - g0 * sn);
        }
      }
    }
  return RLX_OK;
}
