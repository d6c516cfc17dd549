/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Validation, score rows and pair rotation shared by the attention / rope reference kernels and
 * their backward kernels (see attention_util.h). */
#include "backends/cpu/ref/attention_util.h"

/* Reads operand i's view given q's layout kind. `width` is the per-head width; `heads` the
 * required head count (0 = derive it). */
static rlx_status view_of(const rlx_node *n, const rlx_shape *s, uint32_t i, const char *name, int kind, size_t width,
                          size_t heads, attn_view *v) {
  v->kind = kind;
  v->D = width;
  if (kind <= 1) {
    v->B = (size_t)s->dims[0];
    v->H = (size_t)s->dims[kind == 0 ? 1 : 2];
    v->S = (size_t)s->dims[kind == 0 ? 2 : 1];
    if ((size_t)s->dims[3] != width)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; its last dim must be the head width %zu",
                      i, name, ru_fmt(s), width);
  } else {
    size_t last = (size_t)s->dims[s->rank - 1];
    v->B = s->rank == 3 ? (size_t)s->dims[0] : 1;
    v->S = (size_t)s->dims[s->rank == 3 ? 1 : 0];
    if (last % width != 0)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "operand %u (%s) has shape %s; its last dim must be a multiple of the "
                      "head width %zu",
                      i, name, ru_fmt(s), width);
    v->H = last / width;
  }
  if (v->H == 0 || (heads && v->H != heads))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s: %zu heads where %zu are required", i, name,
                    ru_fmt(s), v->H, heads);
  return RLX_OK;
}

rlx_status rlx_ref_attn_check(const rlx_node *n, const rlx_tensor *in, uint32_t mask_at, rlx_dtype t,
                              const attn_params *p, const char *const names[3], attn_geom *g) {
  memset(g, 0, sizeof *g);
  int mk = p->mask;
  if (mk < 0 || mk >= RLX_MASK_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mask_kind: %d is not a MaskKind", mk);
  if (p->heads < 1 || p->head_dim < 1 || p->v_head_dim < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes num_heads (%lld), head_dim (%lld) and v_head_dim (%lld) must be "
                    ">= 1",
                    (long long)p->heads, (long long)p->head_dim, (long long)p->v_head_dim);
  if (p->window < 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute window is %lld; it must be >= 0", (long long)p->window);
  RLX_TRY(rb_need_float(n, in, 0, names[0]));
  const rlx_shape *qs = &in[0].shape;
  if (qs->rank < 2 || qs->rank > 4)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (%s) has shape %s; expected rank 2, 3 or 4", names[0],
                    ru_fmt(qs));
  for (uint32_t i = 0; i < 3; i++) {
    RLX_TRY(ru_need_dtype(n, in, i, t));
    if (in[i].shape.rank != qs->rank)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; it must have the rank %u of operand 0", i,
                      names[i], ru_fmt(&in[i].shape), qs->rank);
  }
  int kind = qs->rank == 4 ? (qs->dims[1] == p->heads ? 0 : 1) : 2;
  RLX_TRY(view_of(n, qs, 0, names[0], kind, (size_t)p->head_dim, (size_t)p->heads, &g->q));
  RLX_TRY(view_of(n, &in[1].shape, 1, names[1], kind, (size_t)p->head_dim, 0, &g->k));
  RLX_TRY(view_of(n, &in[2].shape, 2, names[2], kind, (size_t)p->v_head_dim, g->k.H, &g->v));
  if (g->q.H % g->k.H != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (%s) has %zu heads; it must divide num_heads = %zu", names[1],
                    g->k.H, g->q.H);
  if (g->k.B != g->q.B || g->v.B != g->q.B || g->v.S != g->k.S)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands %s %s, %s %s and %s %s disagree on batch or key length", names[0],
                    ru_fmt(qs), names[1], ru_fmt(&in[1].shape), names[2], ru_fmt(&in[2].shape));
  g->B = g->q.B;
  g->Sq = g->q.S;
  g->Sk = g->k.S;
  g->H = g->q.H;
  g->group = g->q.H / g->k.H;
  g->mask = mk;
  g->window = p->window;
  g->full = rlx_shape_make(t, 4, (const rlx_dim[]){(rlx_dim)g->B, (rlx_dim)g->H, (rlx_dim)g->Sq, (rlx_dim)g->Sk});
  if (mk == RLX_MASK_CUSTOM) {
    const rlx_shape *m = &in[mask_at].shape;
    bool two = m->rank == 2 && (size_t)m->dims[0] == g->B && (size_t)m->dims[1] == g->Sk;
    g->per_query =
        m->rank == 3 && (size_t)m->dims[0] == g->B && (size_t)m->dims[1] == g->Sq && (size_t)m->dims[2] == g->Sk;
    if (!two && !g->per_query)
      return ru_error(RLX_ERR_INVALID_ARG, n,
                      "operand %u (mask) has shape %s; a Custom keep-mask is [B, S_k] = [%zu, "
                      "%zu] or [B, S_q, S_k]",
                      mask_at, ru_fmt(m), g->B, g->Sk);
    if (ru_is_complex(ru_dt(&in[mask_at])))
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (mask) has a complex dtype; a keep-mask must be real or bool",
                      mask_at);
    g->mask_t = &in[mask_at];
  } else if (mk == RLX_MASK_BIAS) {
    RLX_TRY(ru_need_dtype(n, in, mask_at, t));
    RLX_TRY(ru_need_bcast(n, in, mask_at, &g->full));
    g->mask_t = &in[mask_at];
  }
  g->scale = p->score_scale.has ? (double)p->score_scale.v : 1.0 / sqrt((double)p->head_dim);
  g->capped = p->softcap.has;
  g->cap = p->softcap.v;
  return RLX_OK;
}

/* Causal / sliding-window visibility of key ki for query row qi; the queries sit at the end of
 * the key range (absolute position S_k - S_q + qi). */
static bool visible(const attn_geom *g, size_t qi, size_t ki) {
  int64_t p = (int64_t)g->Sk - (int64_t)g->Sq + (int64_t)qi, k = (int64_t)ki;
  if (g->mask == RLX_MASK_CAUSAL) return k <= p;
  if (g->mask == RLX_MASK_SLIDING_WINDOW) return k <= p && k >= p - g->window;
  return true;
}

void rlx_ref_attn_scores(const attn_geom *g, const double *Q, const double *K, size_t b, size_t h, size_t qi, double *s,
                         double *th, unsigned char *vis, double *mx, bool *nan_seen) {
  size_t kh = h / g->group;
  *mx = -INFINITY;
  *nan_seen = false;
  for (size_t ki = 0; ki < g->Sk; ki++) {
    double dot = 0.0;
    for (size_t d = 0; d < g->q.D; d++) dot += Q[attn_at(&g->q, b, h, qi, d)] * K[attn_at(&g->k, b, kh, ki, d)];
    double sc = dot * g->scale;
    if (g->capped) {
      double tc = tanh(sc / g->cap);
      if (th) th[ki] = tc;
      sc = g->cap * tc;
    } else if (th) {
      th[ki] = 0.0;
    }
    bool keep = visible(g, qi, ki);
    if (g->mask == RLX_MASK_CUSTOM) {
      size_t mi = g->per_query ? (b * g->Sq + qi) * g->Sk + ki : b * g->Sk + ki;
      if (rlx_elem_get(g->mask_t->data, ru_dt(g->mask_t), mi) < 0.5) keep = false;
    } else if (g->mask == RLX_MASK_BIAS) {
      size_t flat = ((b * g->H + h) * g->Sq + qi) * g->Sk + ki;
      sc += rlx_elem_get(g->mask_t->data, ru_dt(g->mask_t), rlx_broadcast_offset(&g->mask_t->shape, &g->full, flat));
    }
    s[ki] = sc;
    vis[ki] = keep;
    if (keep && isnan(sc))
      *nan_seen = true;
    else if (keep && sc > *mx)
      *mx = sc;
  }
}

rlx_status rlx_ref_rope_check(const rlx_node *n, const rlx_tensor *in, rlx_tensor *out, int64_t head_dim, int64_t n_rot,
                              int style, const char *x_name, rope_geom *g) {
  memset(g, 0, sizeof *g);
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, x_name));
  for (uint32_t i = 0; i < 3; i++) RLX_TRY(ru_need_dtype(n, in, i, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (head_dim < 2 || head_dim % 2 || n_rot < 2 || n_rot % 2 || n_rot > head_dim)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes head_dim = %lld and n_rot = %lld must be even with 2 <= n_rot <= "
                    "head_dim",
                    (long long)head_dim, (long long)n_rot);
  if (style != RLX_ROPE_STYLE_NEOX && style != RLX_ROPE_STYLE_GPTJ)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute style: %d is not a RopeStyle", style);
  if (x->rank < 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (%s) has shape %s; expected [..., S, hidden]", x_name,
                    ru_fmt(x));
  g->hd = (size_t)head_dim;
  g->nr = (size_t)n_rot;
  g->half = g->nr / 2;
  g->hidden = (size_t)x->dims[x->rank - 1];
  g->S = (size_t)x->dims[x->rank - 2];
  if (g->hidden % g->hd != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 0 (%s) has shape %s; its last dim must be a multiple of head_dim = "
                    "%lld",
                    x_name, ru_fmt(x), (long long)head_dim);
  const rlx_shape *cs = &in[1].shape;
  if (!rlx_shape_equal(cs, &in[2].shape) || cs->rank == 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands 1 (cos) %s and 2 (sin) %s must be equal-shaped tables",
                    ru_fmt(cs), ru_fmt(&in[2].shape));
  g->width = cs->rank >= 2 ? (size_t)cs->dims[cs->rank - 1] : g->half;
  size_t tab = rlx_tensor_numel(&in[1]);
  if (g->width < g->half || tab % g->width != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (cos) has shape %s; its rows need at least n_rot/2 = %zu values",
                    ru_fmt(cs), g->half);
  size_t rows = tab / g->width, tokens = g->hidden ? rlx_tensor_numel(&in[0]) / g->hidden : 0;
  g->batch = g->S ? tokens / g->S : 0;
  g->per_token = rows == g->batch * g->S && rows != g->S;
  if (!g->per_token && rows < g->S && g->hidden)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 1 (cos) has %zu rows; it needs one per position (>= S = %zu) or one "
                    "per token (%zu)",
                    rows, g->S, g->batch * g->S);
  g->heads = g->hidden / g->hd;
  g->neox = style == RLX_ROPE_STYLE_NEOX;
  return RLX_OK;
}

void rlx_ref_rope_rotate(const rlx_tensor *in, rlx_tensor *out, const rope_geom *g, double sign) {
  rlx_dtype t = ru_dt(out);
  for (size_t b = 0; b < g->batch; b++)
    for (size_t s = 0; s < g->S; s++) {
      size_t row = (g->per_token ? b * g->S + s : s) * g->width, tok = (b * g->S + s) * g->hidden;
      for (size_t h = 0; h < g->heads; h++) {
        size_t base = tok + h * g->hd;
        for (size_t l = g->nr; l < g->hd; l++) ru_store(out->data, t, base + l, rlx_elem_get(in[0].data, t, base + l));
        for (size_t i = 0; i < g->half; i++) {
          size_t i0 = g->neox ? i : 2 * i, i1 = g->neox ? i + g->half : 2 * i + 1;
          double c = rlx_elem_get(in[1].data, t, row + i), sn = sign * rlx_elem_get(in[2].data, t, row + i);
          double a = rlx_elem_get(in[0].data, t, base + i0), z = rlx_elem_get(in[0].data, t, base + i1);
          ru_store(out->data, t, base + i0, a * c - z * sn);
          ru_store(out->data, t, base + i1, z * c + a * sn);
        }
      }
    }
}
