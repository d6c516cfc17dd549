/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: scaled dot-product attention and rotary position encodings
 * (spec ir-core §8.5, §10.6).
 *
 * Attention, per batch b, query head h and query row qi (all in double):
 *   s[ki] = scale * <q, k[ki]>                      scale = score_scale or 1/sqrt(head_dim)
 *   s[ki] = c * tanh(s[ki] / c)                     when attn_logit_softcap = c is set
 *   Custom: keys with keep-mask value < 0.5 are masked; Bias: s[ki] += bias[b, h, qi, ki]
 *   Causal: key ki visible iff ki <= p; SlidingWindow(w): iff p - w <= ki <= p,
 *           with p = S_k - S_q + qi (queries sit at the end of the key range)
 *   out = softmax over the visible keys of s, times V.
 * A row whose keys are all masked (or whose scores are all -inf) outputs zeros.
 * Layouts: rank 4 is [B, H, S, D] iff dim 1 == num_heads, else [B, S, H, D]; rank 3 is
 * [B, S, H*D]; rank 2 is [S, H*D] (B = 1). K and V use Q's layout with their own head count
 * (grouped-query attention: query head h reads K/V head h / (H / H_kv)). */
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

/* Where (b, h, s, d) of one operand lives. */
typedef struct qkv_view {
  size_t B, S, H, D;
  int kind; /* 0: [B, H, S, D]; 1: [B, S, H, D]; 2: packed [B, S, H*D] or [S, H*D] */
} qkv_view;

static size_t view_off(const qkv_view *v, size_t b, size_t h, size_t s, size_t d) {
  switch (v->kind) {
  case 0: return ((b * v->H + h) * v->S + s) * v->D + d;
  case 1: return ((b * v->S + s) * v->H + h) * v->D + d;
  default: return (b * v->S + s) * (v->H * v->D) + h * v->D + d;
  }
}

static const char *const qkv_names[] = {"Q", "K", "V"};

/* Reads operand i's view given Q's layout kind. `width` is the per-head width (head_dim for Q and
 * K, v_head_dim for V); `heads` is the required head count (0 = derive). */
static rlx_status view_of(const rlx_node *n, const rlx_shape *s, uint32_t i, int kind, size_t width, size_t heads,
                          qkv_view *v) {
  v->kind = kind;
  v->D = width;
  if (kind <= 1) {
    v->B = (size_t)s->dims[0];
    v->H = (size_t)s->dims[kind == 0 ? 1 : 2];
    v->S = (size_t)s->dims[kind == 0 ? 2 : 1];
    if ((size_t)s->dims[3] != width)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; its last dim must be %zu", i, qkv_names[i],
                      ru_fmt(s), width);
  } else {
    size_t last = (size_t)s->dims[s->rank - 1];
    v->B = s->rank == 3 ? (size_t)s->dims[0] : 1;
    v->S = (size_t)s->dims[s->rank == 3 ? 1 : 0];
    if (last % width != 0)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; its last dim must be a multiple of %zu", i,
                      qkv_names[i], ru_fmt(s), width);
    v->H = last / width;
  }
  if (v->H == 0 || (heads && v->H != heads))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s: %zu heads%s", i, qkv_names[i], ru_fmt(s),
                    v->H, heads ? " where num_heads is required" : "");
  return RLX_OK;
}

/* Causal / sliding-window visibility of key ki for query row qi. */
static bool visible(int mk, int64_t window, size_t sq, size_t sk, size_t qi, size_t ki) {
  int64_t p = (int64_t)sk - (int64_t)sq + (int64_t)qi, k = (int64_t)ki;
  if (mk == RLX_MASK_CAUSAL) return k <= p;
  if (mk == RLX_MASK_SLIDING_WINDOW) return k <= p && k >= p - window;
  return true;
}

RLX_CPU_KERNEL(Attention) {
  (void)ctx;
  const rlx_attrs_Attention *at = &n->attrs.Attention;
  int mk = at->mask_kind;
  if (mk < 0 || mk >= RLX_MASK_COUNT) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mask_kind: %d is not a MaskKind", mk);
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  RLX_TRY(ru_prologue(n, in, n_in, has_mask ? 4 : 3, has_mask ? 4 : 3, out));
  int64_t H = at->num_heads, D = at->head_dim, Dv = at->v_head_dim.has ? at->v_head_dim.v : at->head_dim;
  if (H < 1 || D < 1 || Dv < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes num_heads (%lld), head_dim (%lld) and v_head_dim (%lld) must be "
                    ">= 1",
                    (long long)H, (long long)D, (long long)Dv);
  if (at->window < 0) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute window is %lld; it must be >= 0", (long long)at->window);
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "Q"));
  const rlx_shape *qs = &in[0].shape;
  if (qs->rank < 2 || qs->rank > 4)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (Q) has shape %s; expected rank 2, 3 or 4", ru_fmt(qs));
  for (uint32_t i = 0; i < 3; i++) {
    RLX_TRY(ru_need_dtype(n, in, i, t));
    if (in[i].shape.rank != qs->rank)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; it must have Q's rank %u", i, qkv_names[i],
                      ru_fmt(&in[i].shape), qs->rank);
  }
  int kind = qs->rank == 4 ? (qs->dims[1] == H ? 0 : 1) : 2;
  qkv_view q, k, v;
  RLX_TRY(view_of(n, qs, 0, kind, (size_t)D, (size_t)H, &q));
  RLX_TRY(view_of(n, &in[1].shape, 1, kind, (size_t)D, 0, &k));
  RLX_TRY(view_of(n, &in[2].shape, 2, kind, (size_t)Dv, k.H, &v));
  if (q.H % k.H != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (K) has %zu heads; it must divide num_heads = %zu", k.H, q.H);
  if (k.B != q.B || v.B != q.B || v.S != k.S)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands Q %s, K %s and V %s disagree on batch or key length", ru_fmt(qs),
                    ru_fmt(&in[1].shape), ru_fmt(&in[2].shape));
  /* Output: Q's layout with v_head_dim. */
  int64_t dims[4];
  for (uint32_t a = 0; a < qs->rank; a++) dims[a] = qs->dims[a];
  dims[qs->rank - 1] = qs->rank == 4 ? Dv : H * Dv;
  RLX_TRY(ru_need_out_dims(n, out, qs->rank, dims));
  qkv_view o = q;
  o.D = (size_t)Dv;
  size_t B = q.B, Sq = q.S, Sk = k.S, group = q.H / k.H;
  /* The mask operand. */
  rlx_shape full = rlx_shape_make(t, 4, (const rlx_dim[]){(rlx_dim)B, (rlx_dim)q.H, (rlx_dim)Sq, (rlx_dim)Sk});
  bool per_query = false;
  if (mk == RLX_MASK_CUSTOM) {
    const rlx_shape *m = &in[3].shape;
    bool two = m->rank == 2 && (size_t)m->dims[0] == B && (size_t)m->dims[1] == Sk;
    per_query = m->rank == 3 && (size_t)m->dims[0] == B && (size_t)m->dims[1] == Sq && (size_t)m->dims[2] == Sk;
    if (!two && !per_query)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 3 (mask) has shape %s; a Custom keep-mask is [B, S_k] = [%zu, %zu] "
                      "or [B, S_q, S_k]",
                      ru_fmt(m), B, Sk);
    if (ru_is_complex(ru_dt(&in[3])))
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand 3 (mask) has a complex dtype; a keep-mask must be real or bool");
  } else if (mk == RLX_MASK_BIAS) {
    RLX_TRY(ru_need_dtype(n, in, 3, t));
    RLX_TRY(ru_need_bcast(n, in, 3, &full));
  }
  double scale = at->score_scale.has ? (double)at->score_scale.v : 1.0 / sqrt((double)D);
  bool softcap = at->attn_logit_softcap.has;
  double cap = at->attn_logit_softcap.v;

  double *Q = NULL, *K = NULL, *V = NULL, *s = NULL, *acc = NULL;
  unsigned char *vis = NULL;
  rlx_status st = rb_load(n, &in[0], &Q);
  if (st == RLX_OK) st = rb_load(n, &in[1], &K);
  if (st == RLX_OK) st = rb_load(n, &in[2], &V);
  if (st == RLX_OK) st = rb_alloc(n, Sk, sizeof *s, &s);
  if (st == RLX_OK) st = rb_alloc(n, Sk, sizeof *vis, &vis);
  if (st == RLX_OK) st = rb_alloc(n, (size_t)Dv, sizeof *acc, &acc);
  for (size_t b = 0; b < B && st == RLX_OK; b++)
    for (size_t h = 0; h < q.H; h++) {
      size_t kh = h / group;
      for (size_t qi = 0; qi < Sq; qi++) {
        double mx = -INFINITY;
        bool nan_seen = false;
        for (size_t ki = 0; ki < Sk; ki++) {
          double dot = 0.0;
          for (size_t d = 0; d < (size_t)D; d++) dot += Q[view_off(&q, b, h, qi, d)] * K[view_off(&k, b, kh, ki, d)];
          double sc = dot * scale;
          if (softcap) sc = cap * tanh(sc / cap);
          bool keep = visible(mk, at->window, Sq, Sk, qi, ki);
          if (mk == RLX_MASK_CUSTOM) {
            size_t mi = per_query ? (b * Sq + qi) * Sk + ki : b * Sk + ki;
            if (rlx_elem_get(in[3].data, ru_dt(&in[3]), mi) < 0.5) keep = false;
          } else if (mk == RLX_MASK_BIAS) {
            size_t flat = ((b * q.H + h) * Sq + qi) * Sk + ki;
            sc += rlx_elem_get(in[3].data, t, rlx_broadcast_offset(&in[3].shape, &full, flat));
          }
          s[ki] = sc;
          vis[ki] = keep;
          if (keep && isnan(sc)) nan_seen = true;
          else if (keep && sc > mx) mx = sc;
        }
        for (size_t d = 0; d < (size_t)Dv; d++) acc[d] = nan_seen ? NAN : 0.0;
        if (!nan_seen && mx != -INFINITY) { /* else: every key masked -> zeros */
          double sum = 0.0;
          for (size_t ki = 0; ki < Sk; ki++) {
            if (!vis[ki]) continue;
            double p = exp(s[ki] - mx);
            sum += p;
            for (size_t d = 0; d < (size_t)Dv; d++) acc[d] += p * V[view_off(&v, b, kh, ki, d)];
          }
          for (size_t d = 0; d < (size_t)Dv; d++) acc[d] /= sum;
        }
        for (size_t d = 0; d < (size_t)Dv; d++) ru_store(out->data, t, view_off(&o, b, h, qi, d), acc[d]);
      }
    }
  free(Q);
  free(K);
  free(V);
  free(s);
  free(vis);
  free(acc);
  return st;
}

/* ======================================================================================
 * Rope
 * ====================================================================================== */

/* x viewed as [batch', S, hidden]; each head of head_dim lanes rotates pairs
 * (NeoX: i, i + n_rot/2; GptJ: 2i, 2i + 1) for i < n_rot/2 by the table row's (cos[i], sin[i]):
 *   first' = first*c - second*s, second' = second*c + first*s; lanes >= n_rot are copied.
 * Table rows: width = last dim (rank >= 2) or n_rot/2 (rank 1). The row is the flattened token
 * index when the table has exactly batch'*S rows and that differs from S, else the position s
 * (then at least S rows are needed). */
RLX_CPU_KERNEL(Rope) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  const rlx_attrs_Rope *at = &n->attrs.Rope;
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  for (uint32_t i = 0; i < 3; i++) RLX_TRY(ru_need_dtype(n, in, i, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  int64_t hd = at->head_dim, nr = at->n_rot;
  if (hd < 2 || hd % 2 || nr < 2 || nr % 2 || nr > hd)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes head_dim = %lld and n_rot = %lld must be even with 2 <= n_rot <= "
                    "head_dim",
                    (long long)hd, (long long)nr);
  if (at->style != RLX_ROPE_STYLE_NEOX && at->style != RLX_ROPE_STYLE_GPTJ)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute style: %d is not a RopeStyle", (int)at->style);
  if (x->rank < 2) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [..., S, hidden]", ru_fmt(x));
  size_t hidden = (size_t)x->dims[x->rank - 1], S = (size_t)x->dims[x->rank - 2], half = (size_t)nr / 2;
  if (hidden % (size_t)hd != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; its last dim must be a multiple of head_dim = "
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
  size_t rows = tab / width, tokens = rlx_tensor_numel(&in[0]) / (hidden ? hidden : 1);
  size_t batch = S ? tokens / S : 0;
  bool per_token = rows == batch * S && rows != S;
  if (!per_token && rows < S && hidden)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (cos) has %zu rows; it needs one per position (>= S = %zu) or one "
                    "per token (%zu)",
                    rows, S, batch * S);
  size_t heads = hidden / (size_t)hd;
  bool neox = at->style == RLX_ROPE_STYLE_NEOX;
  for (size_t b = 0; b < batch; b++)
    for (size_t s = 0; s < S; s++) {
      size_t row = (per_token ? b * S + s : s) * width, tok = (b * S + s) * hidden;
      for (size_t h = 0; h < heads; h++) {
        size_t base = tok + h * (size_t)hd;
        for (size_t l = (size_t)nr; l < (size_t)hd; l++) ru_store(out->data, t, base + l, rlx_elem_get(in[0].data, t, base + l));
        for (size_t i = 0; i < half; i++) {
          size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
          double c = rlx_elem_get(in[1].data, t, row + i), sn = rlx_elem_get(in[2].data, t, row + i);
          double a = rlx_elem_get(in[0].data, t, base + i0), z = rlx_elem_get(in[0].data, t, base + i1);
          ru_store(out->data, t, base + i0, a * c - z * sn);
          ru_store(out->data, t, base + i1, z * c + a * sn);
        }
      }
    }
  return RLX_OK;
}

/* ======================================================================================
 * AxialRope2d
 * ====================================================================================== */

/* x [B, N, heads*D]. Token t -> p = t / repeat, (px, py) = (p mod end_x, p div end_x). The first
 * half of each head rotates with px, the second with py; inside a half, lanes (2c, 2c+1) rotate by
 * angle = coord * theta^(-4c/D) (first' = first*cos - second*sin, second' = second*cos + first*sin). */
RLX_CPU_KERNEL(AxialRope2d) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  const rlx_attrs_AxialRope2d *at = &n->attrs.AxialRope2d;
  rlx_dtype t = ru_dt(out);
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 3) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [B, N, H*D]", ru_fmt(x));
  RLX_TRY(ru_need_out_dims(n, out, 3, x->dims));
  int64_t D = at->head_dim, H = at->num_heads, rep = at->repeat_factor, ex = at->end_x, ey = at->end_y;
  if (D < 4 || D % 4 || H < 1 || rep < 1 || ex < 1 || ey < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes head_dim (a multiple of 4), num_heads, repeat_factor, end_x and "
                    "end_y must be positive");
  size_t W = (size_t)x->dims[2], Ntok = (size_t)x->dims[1];
  if ((uint64_t)H > W / (uint64_t)D || W != (size_t)H * (size_t)D)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; its last dim must be num_heads * head_dim",
                    ru_fmt(x));
  int64_t cells;
  if (__builtin_mul_overflow(ex, ey, &cells) || __builtin_mul_overflow(cells, rep, &cells) || (size_t)cells != Ntok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; its token axis must be end_x * end_y * "
                    "repeat_factor",
                    ru_fmt(x));
  size_t B = (size_t)x->dims[0], half = (size_t)D / 2;
  double theta = at->theta;
  for (size_t b = 0; b < B; b++)
    for (size_t tk = 0; tk < Ntok; tk++) {
      size_t p = tk / (size_t)rep;
      double px = (double)(p % (size_t)ex), py = (double)(p / (size_t)ex);
      for (size_t h = 0; h < (size_t)H; h++) {
        size_t base = (b * Ntok + tk) * W + h * (size_t)D;
        for (size_t l = 0; l < (size_t)D; l += 2) {
          size_t q = l < half ? l : l - half, c = q / 2;
          double ang = (l < half ? px : py) * pow(theta, -4.0 * (double)c / (double)D);
          double cs = cos(ang), sn = sin(ang);
          double a = rlx_elem_get(in[0].data, t, base + l), z = rlx_elem_get(in[0].data, t, base + l + 1);
          ru_store(out->data, t, base + l, a * cs - z * sn);
          ru_store(out->data, t, base + l + 1, z * cs + a * sn);
        }
      }
    }
  return RLX_OK;
}
