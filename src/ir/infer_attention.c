/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: attention and rotary position encodings (spec ir-core §10.6). */
#include <math.h>

#include "infer_util.h"

/* Where batch, sequence and heads live in one Q/K/V operand. Packed layouts (rank <= 3) keep all
 * heads in the last axis; `heads` is then derived from its width. */
typedef struct attn_layout {
  uint32_t rank;
  bool bhsd;     /* rank 4 only: [B, H, S, D] (else [B, S, H, D]) */
  int seq_axis;  /* axis holding S */
  int head_axis; /* rank 4: axis holding H; -1 for packed layouts */
} attn_layout;

static attn_layout layout_of(const rlx_shape *q, int64_t num_heads) {
  attn_layout l = {q->rank, false, 0, -1};
  if (q->rank == 4) {
    l.bhsd = q->dims[1] == num_heads;
    l.seq_axis = l.bhsd ? 2 : 1;
    l.head_axis = l.bhsd ? 1 : 2;
  } else {
    l.seq_axis = q->rank == 3 ? 1 : 0;
  }
  return l;
}

static const char *const qkv_names[] = {"Q", "K", "V"};

/* Number of heads of operand i (K or V) whose per-head width is `width`. */
static rlx_status heads_of(const rlx_infer_ctx *c, uint32_t i, const attn_layout *l, int64_t width,
                           const char *width_attr, int64_t *heads) {
  const rlx_shape *s = c->in[i];
  rlx_dim last = s->dims[s->rank - 1];
  if (l->head_axis >= 0) {
    if (last != width)
      return rlx_shape_error("operand %u (%s) has shape %s; its last dim must equal attribute %s = %" PRId64, i,
                             qkv_names[i], rlx_fmt_shape(s), width_attr, width);
    rlx_dim h = s->dims[l->head_axis];
    if (h < 1)
      return rlx_shape_error("operand %u (%s) has shape %s; its head axis %d must be a static extent >= 1 (layout "
                             "%s)",
                             i, qkv_names[i], rlx_fmt_shape(s), l->head_axis,
                             l->bhsd ? "[B, H, S, D]" : "[B, S, H, D]");
    *heads = h;
  } else {
    if (last < 1 || last % width != 0)
      return rlx_shape_error("operand %u (%s) has shape %s; its last dim must be a static multiple of attribute %s = "
                             "%" PRId64 " (packed heads)",
                             i, qkv_names[i], rlx_fmt_shape(s), width_attr, width);
    *heads = last / width;
  }
  return RLX_OK;
}

rlx_status rlx_infer_Attention(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Attention *at = &c->a->Attention;
  int64_t H = at->num_heads, D = at->head_dim;
  if (H < 1) return rlx_shape_error("attribute num_heads is %" PRId64 "; it must be >= 1", H);
  if (D < 1) return rlx_shape_error("attribute head_dim is %" PRId64 "; it must be >= 1", D);
  int64_t Dv = at->v_head_dim.has ? at->v_head_dim.v : D;
  if (Dv < 1) return rlx_shape_error("attribute v_head_dim is %" PRId64 "; it must be >= 1", Dv);
  int32_t mk = at->mask_kind;
  if (mk < 0 || mk >= RLX_MASK_COUNT) return rlx_shape_error("attribute mask_kind: %d is not a MaskKind", (int)mk);
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  if (c->n_in != (has_mask ? 4u : 3u))
    return rlx_errorf(RLX_ERR_VERIFY, "has %u operands; attribute mask_kind %s needs %s", c->n_in,
                      rlx_enum_mask.names[mk], has_mask ? "4 (Q, K, V, mask)" : "3 (Q, K, V)");
  if (at->window < 0) return rlx_shape_error("attribute window is %" PRId64 "; it must be >= 0", at->window);
  if (at->window != 0 && mk != RLX_MASK_SLIDING_WINDOW)
    return rlx_shape_error("attribute window is %" PRId64 "; it is only meaningful with mask_kind SlidingWindow "
                           "(mask_kind is %s)",
                           at->window, rlx_enum_mask.names[mk]);
  if (at->score_scale.has && !isfinite(at->score_scale.v))
    return rlx_shape_error("attribute score_scale is %g; it must be finite", (double)at->score_scale.v);
  if (at->attn_logit_softcap.has && !(at->attn_logit_softcap.v > 0.0f && isfinite(at->attn_logit_softcap.v)))
    return rlx_shape_error("attribute attn_logit_softcap is %g; it must be a finite value > 0",
                           (double)at->attn_logit_softcap.v);

  const rlx_shape *q = c->in[0], *k = c->in[1], *v = c->in[2];
  if (q->rank < 2 || q->rank > 4)
    return rlx_shape_error("operand 0 (Q) has shape %s; expected [B, S, H, D], [B, H, S, D], [B, S, H*D] or "
                           "[S, H*D]",
                           rlx_fmt_shape(q));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  for (uint32_t i = 1; i < 3; i++) {
    if (c->in[i]->rank != q->rank)
      return rlx_shape_error("operand %u (%s) has shape %s; it must have Q's rank %u (Q is %s)", i, qkv_names[i],
                             rlx_fmt_shape(c->in[i]), q->rank, rlx_fmt_shape(q));
    RLX_TRY(iu_same_dtype(c, 0, i));
  }
  attn_layout l = layout_of(q, H);
  if (q->rank == 4) {
    if (q->dims[2] != H && !l.bhsd)
      return rlx_shape_error("operand 0 (Q) has shape %s; neither axis 1 ([B, H, S, D]) nor axis 2 ([B, S, H, D]) "
                             "equals attribute num_heads = %" PRId64,
                             rlx_fmt_shape(q), H);
    if (q->dims[3] != D)
      return rlx_shape_error("operand 0 (Q) has shape %s; its last dim must equal attribute head_dim = %" PRId64,
                             rlx_fmt_shape(q), D);
  } else {
    int64_t hd;
    if (!ck_mul(H, D, &hd)) return rlx_shape_error("attributes num_heads * head_dim overflow");
    if (q->dims[q->rank - 1] != hd)
      return rlx_shape_error("operand 0 (Q) has shape %s; its last dim must equal num_heads * head_dim = %" PRId64,
                             rlx_fmt_shape(q), hd);
  }
  int64_t hk, hv;
  RLX_TRY(heads_of(c, 1, &l, D, "head_dim", &hk));
  RLX_TRY(heads_of(c, 2, &l, Dv, at->v_head_dim.has ? "v_head_dim" : "head_dim (v_head_dim unset)", &hv));
  if (hk != hv)
    return rlx_shape_error("operand 2 (V) has %" PRId64 " heads but operand 1 (K) has %" PRId64 "; they must match", hv,
                           hk);
  if (H % hk != 0)
    return rlx_shape_error("operand 1 (K) has %" PRId64 " heads; it must divide attribute num_heads = %" PRId64
                           " (grouped-query attention)",
                           hk, H);
  if (q->rank >= 3) {
    for (uint32_t i = 1; i < 3; i++)
      if (!rlx_dim_equal(c->in[i]->dims[0], q->dims[0]))
        return rlx_shape_error("operand %u (%s) has shape %s; its batch %s must equal Q's %s", i, qkv_names[i],
                               rlx_fmt_shape(c->in[i]), iu_fmt_dim(c->in[i]->dims[0]), iu_fmt_dim(q->dims[0]));
  }
  rlx_dim sq = q->dims[l.seq_axis], sk = k->dims[l.seq_axis];
  if (!rlx_dim_equal(v->dims[l.seq_axis], sk))
    return rlx_shape_error("operand 2 (V) has shape %s; its sequence length %s must equal K's %s", rlx_fmt_shape(v),
                           iu_fmt_dim(v->dims[l.seq_axis]), iu_fmt_dim(sk));
  if ((mk == RLX_MASK_CAUSAL || mk == RLX_MASK_SLIDING_WINDOW) && sq >= 0 && sk >= 0 && sk < sq)
    return rlx_shape_error("operand 1 (K) has sequence length %" PRId64 " < Q's %" PRId64
                           "; mask_kind %s places queries at the end of the key range, so S_k >= S_q is required",
                           sk, sq, rlx_enum_mask.names[mk]);

  if (has_mask) {
    const rlx_shape *m = c->in[3];
    rlx_dim b = q->rank >= 3 ? q->dims[0] : 1;
    if (mk == RLX_MASK_CUSTOM) {
      rlx_dtype t = (rlx_dtype)m->dtype;
      if (rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX)
        return rlx_shape_error("operand 3 (mask) has dtype %s; a keep-mask must be real or bool", rlx_dtype_name(t));
      bool ok = (m->rank == 2 && rlx_dim_equal(m->dims[0], b) && rlx_dim_equal(m->dims[1], sk)) ||
                (m->rank == 3 && rlx_dim_equal(m->dims[0], b) && rlx_dim_equal(m->dims[1], sq) &&
                 rlx_dim_equal(m->dims[2], sk));
      if (!ok)
        return rlx_shape_error("operand 3 (mask) has shape %s; a Custom keep-mask must be [B, S_k] = [%s, %s] or "
                               "[B, S_q, S_k] = [%s, %s, %s]",
                               rlx_fmt_shape(m), iu_fmt_dim(b), iu_fmt_dim(sk), iu_fmt_dim(b), iu_fmt_dim(sq),
                               iu_fmt_dim(sk));
    } else {
      RLX_TRY(iu_same_dtype(c, 0, 3));
      rlx_shape full = iu_shape((rlx_dtype)q->dtype, 4);
      full.dims[0] = b;
      full.dims[1] = H;
      full.dims[2] = sq;
      full.dims[3] = sk;
      if (!iu_broadcasts_to(m, &full))
        return rlx_shape_error("operand 3 (mask) has shape %s; a Bias must broadcast to [B, H, S_q, S_k] = %s",
                               rlx_fmt_shape(m), rlx_fmt_shape(&full));
    }
  }

  *out = *q;
  if (q->rank == 4) {
    out->dims[3] = Dv;
  } else {
    int64_t w;
    if (!ck_mul(H, Dv, &w)) return rlx_shape_error("attributes num_heads * v_head_dim overflow");
    out->dims[q->rank - 1] = w;
  }
  return RLX_OK;
}

/* A cos/sin table: rows of `width` values. Rank >= 2: width = last dim, rows = product of the
 * rest; rank 1: width = n_rot / 2. *rows = -1 when not statically known. */
static rlx_status table_rows(const rlx_infer_ctx *c, uint32_t i, int64_t half, rlx_dim s_dim, int64_t *rows,
                             bool *rows_is_s) {
  static const char *const names[] = {"", "cos", "sin"};
  const rlx_shape *t = c->in[i];
  *rows = -1;
  *rows_is_s = false;
  if (t->rank == 0) return rlx_shape_error("operand %u (%s) is a scalar; expected a table of rows", i, names[i]);
  if (t->rank == 1) {
    if (t->dims[0] >= 0) {
      if (t->dims[0] % half != 0)
        return rlx_shape_error("operand %u (%s) has shape %s; a rank-1 table holds rows of n_rot/2 = %" PRId64
                               " values, so its length must be a multiple of that",
                               i, names[i], rlx_fmt_shape(t), half);
      *rows = t->dims[0] / half;
    }
    return RLX_OK;
  }
  rlx_dim w = t->dims[t->rank - 1];
  if (w >= 0 && w < half)
    return rlx_shape_error("operand %u (%s) has shape %s; its rows (last dim) need at least n_rot/2 = %" PRId64
                           " values",
                           i, names[i], rlx_fmt_shape(t), half);
  if (t->rank == 2 && rlx_dim_equal(t->dims[0], s_dim)) *rows_is_s = true;
  int64_t r = 1;
  for (uint32_t k = 0; k + 1 < t->rank; k++) {
    if (t->dims[k] < 0) return RLX_OK;
    if (!ck_mul(r, t->dims[k], &r)) return rlx_shape_error("operand %u (%s): row count overflows", i, names[i]);
  }
  *rows = r;
  return RLX_OK;
}

rlx_status rlx_infer_Rope(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Rope *at = &c->a->Rope;
  int64_t hd = at->head_dim, nr = at->n_rot;
  if (hd < 2 || hd % 2 != 0)
    return rlx_shape_error("attribute head_dim is %" PRId64 "; it must be a positive even number", hd);
  if (nr < 2 || nr % 2 != 0 || nr > hd)
    return rlx_shape_error("attribute n_rot is %" PRId64 "; it must be even, >= 2 and <= head_dim = %" PRId64, nr, hd);
  if (at->style < 0 || at->style >= RLX_ROPE_STYLE_COUNT)
    return rlx_shape_error("attribute style: %d is not a RopeStyle (NeoX or GptJ)", (int)at->style);
  const rlx_shape *x = c->in[0];
  if (x->rank < 2)
    return rlx_shape_error("operand 0 (x) has shape %s; Rope needs [..., S, hidden] (rank >= 2)", rlx_fmt_shape(x));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  rlx_dim hidden = x->dims[x->rank - 1], s = x->dims[x->rank - 2];
  if (hidden >= 0 && hidden % hd != 0)
    return rlx_shape_error("operand 0 (x) has shape %s; its last dim %" PRId64 " must be a multiple of attribute "
                           "head_dim = %" PRId64,
                           rlx_fmt_shape(x), hidden, hd);
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(iu_same_dtype(c, 0, 2));
  if (!rlx_shape_equal(c->in[1], c->in[2]))
    return rlx_shape_error("operand 2 (sin) has shape %s; it must equal operand 1 (cos) %s", rlx_fmt_shape(c->in[2]),
                           rlx_fmt_shape(c->in[1]));
  int64_t rows;
  bool rows_is_s;
  RLX_TRY(table_rows(c, 1, nr / 2, s, &rows, &rows_is_s));
  /* Rows are indexed by position s (rows >= S) or by flattened token (rows = batch' * S). */
  bool lead_known = true;
  int64_t tokens = 1;
  for (uint32_t i = 0; i + 1 < x->rank; i++) {
    if (x->dims[i] < 0 || !ck_mul(tokens, x->dims[i], &tokens)) lead_known = false;
  }
  if (!rows_is_s && rows >= 0 && s >= 0 && rows < s && !(lead_known && rows == tokens))
    return rlx_shape_error("operand 1 (cos) has shape %s with %" PRId64 " rows; it needs a row per position (>= S "
                           "= %" PRId64 ") or per token (%s)",
                           rlx_fmt_shape(c->in[1]), rows, s, rlx_fmt_shape(x));
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_AxialRope2d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_AxialRope2d *at = &c->a->AxialRope2d;
  struct {
    const char *name;
    int64_t v;
  } pos[] = {
      {"end_x", at->end_x}, {"end_y", at->end_y}, {"num_heads", at->num_heads}, {"repeat_factor", at->repeat_factor}};
  for (size_t i = 0; i < sizeof pos / sizeof *pos; i++)
    if (pos[i].v < 1) return rlx_shape_error("attribute %s is %" PRId64 "; it must be >= 1", pos[i].name, pos[i].v);
  if (at->head_dim < 4 || at->head_dim % 4 != 0)
    return rlx_shape_error("attribute head_dim is %" PRId64 "; it must be a positive multiple of 4 (two halves of "
                           "lane pairs)",
                           at->head_dim);
  if (!(at->theta > 0.0f) || !isfinite(at->theta))
    return rlx_shape_error("attribute theta is %g; it must be a finite value > 0", (double)at->theta);
  const rlx_shape *x = c->in[0];
  if (x->rank != 3)
    return rlx_shape_error("operand 0 (x) has shape %s; expected [B, N, num_heads * head_dim]", rlx_fmt_shape(x));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  int64_t n, w;
  if (!ck_mul(at->end_x, at->end_y, &n) || !ck_mul(n, at->repeat_factor, &n))
    return rlx_shape_error("attributes end_x * end_y * repeat_factor overflow");
  if (!ck_mul(at->num_heads, at->head_dim, &w)) return rlx_shape_error("attributes num_heads * head_dim overflow");
  if (x->dims[1] >= 0 && x->dims[1] != n)
    return rlx_shape_error(
        "operand 0 (x) has shape %s; its token axis must be end_x * end_y * repeat_factor = %" PRId64, rlx_fmt_shape(x),
        n);
  if (x->dims[2] != w)
    return rlx_shape_error("operand 0 (x) has shape %s; its last dim must be num_heads * head_dim = %" PRId64,
                           rlx_fmt_shape(x), w);
  *out = *x;
  return RLX_OK;
}
