/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, attention and positions: Attention in every layout (BHSD, BSHD, packed
 * rank 3, rank 2), every mask kind (None, Causal, SlidingWindow, Custom [B,S_k] / [B,S_q,S_k],
 * Bias full and broadcast), GQA/MQA, S_k > S_q, score_scale, softcap, v_head_dim, fully masked rows
 * (zeros); Rope (NeoX, GptJ, n_rot < head_dim, position and per-token tables, rank-1 tables) and
 * AxialRope2d. The expectations come from a separate naive implementation on [B, H, S, D] arrays. */
#include "ref_b_test.h"

/* ---- naive attention on canonical [B, H, S, D] arrays ---- */

typedef struct ref_attn {
  int B, H, Hk, Sq, Sk, D, Dv, mask;
  long window;
  double scale, cap; /* cap 0 = no softcap */
  const double *custom;
  bool custom_per_query;
  const double *bias; /* [B, H, Sq, Sk] (already expanded) */
} ref_attn;

static void ref_attention(const ref_attn *p, const double *q, const double *k, const double *v, double *o) {
  int rep = p->H / p->Hk;
  for (int b = 0; b < p->B; b++)
    for (int h = 0; h < p->H; h++)
      for (int i = 0; i < p->Sq; i++) {
        double s[64], mx = -INFINITY;
        int kh = h / rep, pos = p->Sk - p->Sq + i;
        for (int j = 0; j < p->Sk; j++) {
          double d = 0;
          for (int e = 0; e < p->D; e++)
            d += q[((b * p->H + h) * p->Sq + i) * p->D + e] * k[((b * p->Hk + kh) * p->Sk + j) * p->D + e];
          d *= p->scale;
          if (p->cap > 0) d = p->cap * tanh(d / p->cap);
          bool ok = true;
          if (p->mask == RLX_MASK_CAUSAL) ok = j <= pos;
          if (p->mask == RLX_MASK_SLIDING_WINDOW) ok = j <= pos && j >= pos - p->window;
          if (p->mask == RLX_MASK_CUSTOM)
            ok = (p->custom_per_query ? p->custom[(b * p->Sq + i) * p->Sk + j] : p->custom[b * p->Sk + j]) >= 0.5;
          if (p->mask == RLX_MASK_BIAS) d += p->bias[((b * p->H + h) * p->Sq + i) * p->Sk + j];
          s[j] = ok ? d : -INFINITY;
          if (s[j] > mx) mx = s[j];
        }
        for (int e = 0; e < p->Dv; e++) {
          double num = 0, den = 0;
          for (int j = 0; j < p->Sk && mx > -INFINITY; j++) {
            double w = exp(s[j] - mx);
            den += w;
            num += w * v[((b * p->Hk + kh) * p->Sk + j) * p->Dv + e];
          }
          o[((b * p->H + h) * p->Sq + i) * p->Dv + e] = mx > -INFINITY ? num / den : 0.0;
        }
      }
}

/* Canonical [B, H, S, D] -> layout: 0 BHSD, 1 BSHD (also packed rank 3 and rank 2 data order). */
static void to_layout(const double *src, double *dst, int B, int H, int S, int D, int layout) {
  for (int b = 0; b < B; b++)
    for (int h = 0; h < H; h++)
      for (int s = 0; s < S; s++)
        for (int d = 0; d < D; d++) {
          size_t from = (((size_t)b * H + h) * S + s) * D + d;
          size_t to = layout == 0 ? from : (((size_t)b * S + s) * H + h) * D + d;
          dst[to] = src[from];
        }
}

/* One attention case: random Q/K/V, run in `layout` (0 BHSD, 1 BSHD, 3 packed rank 3, 2 rank 2)
 * and compare with the naive result. */
static void attn_case(ref_attn p, int layout, rlx_dtype t, const rlx_attrs_Attention *at, const rt_arg *mask,
                      double tol, int line) {
  static double q[1024], k[1024], v[1024], o[1024], lq[1024], lk[1024], lv[1024], lo[1024];
  size_t nq = (size_t)p.B * p.H * p.Sq * p.D, nk = (size_t)p.B * p.Hk * p.Sk * p.D,
         nv = (size_t)p.B * p.Hk * p.Sk * p.Dv;
  rt_fill(q, nq, (uint32_t)line);
  rt_fill(k, nk, (uint32_t)line + 1000);
  rt_fill(v, nv, (uint32_t)line + 2000);
  ref_attention(&p, q, k, v, o);
  int lay = layout == 0 ? 0 : 1;
  to_layout(q, lq, p.B, p.H, p.Sq, p.D, lay);
  to_layout(k, lk, p.B, p.Hk, p.Sk, p.D, lay);
  to_layout(v, lv, p.B, p.Hk, p.Sk, p.Dv, lay);
  to_layout(o, lo, p.B, p.H, p.Sq, p.Dv, lay);
  rlx_shape sq, sk, sv;
  switch (layout) {
  case 0:
    sq = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.H, p.Sq, p.D});
    sk = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.Hk, p.Sk, p.D});
    sv = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.Hk, p.Sk, p.Dv});
    break;
  case 1:
    sq = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.Sq, p.H, p.D});
    sk = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.Sk, p.Hk, p.D});
    sv = rlx_shape_make(t, 4, (rlx_dim[]){p.B, p.Sk, p.Hk, p.Dv});
    break;
  case 3:
    sq = rlx_shape_make(t, 3, (rlx_dim[]){p.B, p.Sq, p.H * p.D});
    sk = rlx_shape_make(t, 3, (rlx_dim[]){p.B, p.Sk, p.Hk * p.D});
    sv = rlx_shape_make(t, 3, (rlx_dim[]){p.B, p.Sk, p.Hk * p.Dv});
    break;
  default:
    sq = rlx_shape_make(t, 2, (rlx_dim[]){p.Sq, p.H * p.D});
    sk = rlx_shape_make(t, 2, (rlx_dim[]){p.Sk, p.Hk * p.D});
    sv = rlx_shape_make(t, 2, (rlx_dim[]){p.Sk, p.Hk * p.Dv});
    break;
  }
  rt_arg args[4] = {{sq, lq}, {sk, lk}, {sv, lv}};
  uint32_t n = 3;
  if (mask) args[n++] = *mask;
  rt c;
  rlx_status s = rt_build(&c, RLX_OP_Attention, at, NULL, false, n, args);
  if (s == RLX_OK) s = rt_exec(&c);
  CHECK_MSG(s == RLX_OK, "line %d: %s", line, rlx_last_error());
  if (s == RLX_OK) CHECK_MSG(rt_check_out(&c, lo, nq / p.D * p.Dv, tol, tol, line), "attention case at line %d", line);
  rt_free(&c);
}

static rlx_attrs_Attention attrs(int H, int D, int mask) {
  rlx_attrs_Attention a;
  rlx_attrs_init(RLX_OP_Attention, &a);
  a.num_heads = H;
  a.head_dim = D;
  a.mask_kind = mask;
  return a;
}

static void test_attention_hand(void) {
  /* q = 1, keys (0, ln 3): weights (1/4, 3/4); values (4, 8) -> 7 */
  rt c;
  rlx_attrs_Attention a = attrs(1, 1, RLX_MASK_NONE);
  CHECK_OK(RT_RUN(&c, Attention, &a, NULL, {SHP(F64, 1, 1, 1, 1), VALS(1)}, {SHP(F64, 1, 1, 2, 1), VALS(0, log(3.0))},
                  {SHP(F64, 1, 1, 2, 1), VALS(4, 8)}));
  CHECK_OUT(&c, VALS(7), 1, 1e-14, 0);
  rt_free(&c);
  /* causal, S_q = 1 < S_k = 2: the query sits at position 1 and sees both keys */
  a.mask_kind = RLX_MASK_CAUSAL;
  CHECK_OK(RT_RUN(&c, Attention, &a, NULL, {SHP(F64, 1, 1, 1, 1), VALS(1)}, {SHP(F64, 1, 1, 2, 1), VALS(0, log(3.0))},
                  {SHP(F64, 1, 1, 2, 1), VALS(4, 8)}));
  CHECK_OUT(&c, VALS(7), 1, 1e-14, 0);
  rt_free(&c);
  /* causal, S_q = S_k = 2: row 0 sees key 0 only */
  CHECK_OK(RT_RUN(&c, Attention, &a, NULL, {SHP(F64, 1, 1, 2, 1), VALS(1, 1)},
                  {SHP(F64, 1, 1, 2, 1), VALS(0, log(3.0))}, {SHP(F64, 1, 1, 2, 1), VALS(4, 8)}));
  CHECK_OUT(&c, VALS(4, 7), 2, 1e-14, 0);
  rt_free(&c);
  /* Custom mask all zero for the row: output zeros */
  a.mask_kind = RLX_MASK_CUSTOM;
  CHECK_OK(RT_RUN(&c, Attention, &a, NULL, {SHP(F64, 1, 1, 1, 1), VALS(1)}, {SHP(F64, 1, 1, 2, 1), VALS(0, 1)},
                  {SHP(F64, 1, 1, 2, 1), VALS(4, 8)}, {SHP(BOOL, 1, 2), VALS(0, 0)}));
  CHECK_OUT(&c, VALS(0), 1, 0, 0);
  rt_free(&c);
  /* Bias of -inf on every key: zeros as well */
  a.mask_kind = RLX_MASK_BIAS;
  CHECK_OK(RT_RUN(&c, Attention, &a, NULL, {SHP(F32, 1, 1, 1, 1), VALS(1)}, {SHP(F32, 1, 1, 2, 1), VALS(0, 1)},
                  {SHP(F32, 1, 1, 2, 1), VALS(4, 8)}, {SHP(F32, 1, 1, 1, 2), VALS(-INFINITY, -INFINITY)}));
  CHECK_OUT(&c, VALS(0), 1, 0, 0);
  rt_free(&c);
}

static void test_attention_random(void) {
  double custom2[2 * 5], custom3[2 * 3 * 5], bias[2 * 4 * 3 * 5], bias_b[3 * 5];
  for (int i = 0; i < 10; i++) custom2[i] = (i * 7) % 3 == 0 ? 0.0 : 1.0;
  for (int i = 0; i < 30; i++) custom3[i] = (i * 5) % 4 == 1 ? 0.25 : 0.75;
  for (int j = 0; j < 5; j++) custom3[5 + j] = 0.0; /* batch 0, query 1: fully masked */
  rt_fill(bias, 120, 77);
  rt_fill(bias_b, 15, 78);
  ref_attn p = {.B = 2, .H = 4, .Hk = 4, .Sq = 3, .Sk = 5, .D = 4, .Dv = 4, .scale = 0.5};
  rlx_attrs_Attention a = attrs(4, 4, RLX_MASK_NONE);
  /* no mask, all layouts, MHA */
  for (int lay = 0; lay < 4; lay++) {
    if (lay == 2) continue;
    attn_case(p, lay, RLX_F64, &a, NULL, 1e-12, __LINE__ + lay);
  }
  /* rank 2 (B = 1) */
  ref_attn p1 = p;
  p1.B = 1;
  attn_case(p1, 2, RLX_F64, &a, NULL, 1e-12, __LINE__);
  /* GQA (H = 4, H_kv = 2) and MQA (H_kv = 1) with causal / sliding window, S_k > S_q */
  ref_attn g = p;
  g.Hk = 2;
  g.mask = RLX_MASK_CAUSAL;
  a.mask_kind = RLX_MASK_CAUSAL;
  for (int lay = 0; lay < 4; lay++)
    if (lay != 2) attn_case(g, lay, RLX_F64, &a, NULL, 1e-12, __LINE__ + lay);
  g.Hk = 1;
  g.mask = RLX_MASK_SLIDING_WINDOW;
  g.window = 1;
  a.mask_kind = RLX_MASK_SLIDING_WINDOW;
  a.window = 1;
  attn_case(g, 3, RLX_F64, &a, NULL, 1e-12, __LINE__);
  ref_attn g1 = g;
  g1.B = 1;
  attn_case(g1, 2, RLX_F32, &a, NULL, 1e-6, __LINE__);
  a.window = 0;
  g.window = 0; /* only the diagonal key */
  attn_case(g, 0, RLX_F64, &a, NULL, 1e-12, __LINE__);
  a.window = 0;

  /* Custom [B, S_k] and [B, S_q, S_k] (a fully masked row gives zeros) */
  ref_attn cu = p;
  cu.Hk = 2;
  cu.mask = RLX_MASK_CUSTOM;
  cu.custom = custom2;
  a.mask_kind = RLX_MASK_CUSTOM;
  rt_arg m2 = {SHP(F32, 2, 5), custom2}, m3 = {SHP(F64, 2, 3, 5), custom3};
  attn_case(cu, 1, RLX_F64, &a, &m2, 1e-12, __LINE__);
  cu.custom = custom3;
  cu.custom_per_query = true;
  attn_case(cu, 3, RLX_F64, &a, &m3, 1e-12, __LINE__);
  attn_case(cu, 0, RLX_F32, &a, &m3, 1e-6, __LINE__);

  /* Bias: full [B, H, S_q, S_k], and [S_q, S_k] broadcast over batch and heads */
  ref_attn bi = p;
  bi.mask = RLX_MASK_BIAS;
  bi.bias = bias;
  a.mask_kind = RLX_MASK_BIAS;
  rt_arg bf = {SHP(F64, 2, 4, 3, 5), bias};
  attn_case(bi, 0, RLX_F64, &a, &bf, 1e-12, __LINE__);
  static double expanded[120];
  for (int i = 0; i < 120; i++) expanded[i] = bias_b[i % 15];
  bi.bias = expanded;
  rt_arg bb = {SHP(F64, 3, 5), bias_b};
  attn_case(bi, 3, RLX_F64, &a, &bb, 1e-12, __LINE__);

  /* explicit score_scale, softcap (applied before the causal mask), v_head_dim != head_dim */
  ref_attn sc = p;
  sc.Hk = 2;
  sc.Dv = 3;
  sc.scale = 2.0;
  sc.cap = 1.5;
  sc.mask = RLX_MASK_CAUSAL;
  rlx_attrs_Attention as = attrs(4, 4, RLX_MASK_CAUSAL);
  as.score_scale = (rlx_of32){.has = true, .v = 2.0f};
  as.attn_logit_softcap = (rlx_of32){.has = true, .v = 1.5f};
  as.v_head_dim = (rlx_oi64){.has = true, .v = 3};
  attn_case(sc, 0, RLX_F64, &as, NULL, 1e-12, __LINE__);
  attn_case(sc, 1, RLX_F64, &as, NULL, 1e-12, __LINE__);
  attn_case(sc, 3, RLX_F64, &as, NULL, 1e-12, __LINE__);
  attn_case(sc, 3, RLX_F16, &as, NULL, 4e-3, __LINE__);
  /* the default scale is 1/sqrt(head_dim) */
  ref_attn df = p;
  df.scale = 1.0 / sqrt(4.0);
  rlx_attrs_Attention ad = attrs(4, 4, RLX_MASK_NONE);
  attn_case(df, 0, RLX_F64, &ad, NULL, 1e-12, __LINE__);
  p.scale = 0.5; /* p above used a scale of 0.5 only through explicit attrs: check that path too */
  ad.score_scale = (rlx_of32){.has = true, .v = 0.5f};
  attn_case(p, 0, RLX_F64, &ad, NULL, 1e-12, __LINE__);
}

static void test_attention_errors(void) {
  rt c;
  rlx_attrs_Attention a = attrs(2, 2, RLX_MASK_NONE);
  double z[16] = {0};
  CHECK_OK(rt_build(&c, RLX_OP_Attention, &a, NULL, false, 3,
                    (rt_arg[]){{SHP(F32, 1, 2, 2, 2), z}, {SHP(F32, 1, 2, 2, 2), z}, {SHP(F32, 1, 2, 2, 2), z}}));
  c.in[1].shape = SHP(F32, 1, 3, 2, 2); /* 3 KV heads do not divide 2 */
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "heads");
  c.in[1].shape = SHP(F32, 1, 2, 2, 3);
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "last dim");
  rt_free(&c);
}

/* ---- Rope ---- */

/* Naive rope on x viewed as [rows = batch'*S, hidden]; table row r(b, s) of width `width`. */
static void ref_rope(const double *x, double *y, int batch, int S, int hidden, int hd, int nr, bool neox,
                     const double *cs, const double *sn, int width, bool per_token) {
  for (int b = 0; b < batch; b++)
    for (int s = 0; s < S; s++) {
      int row = per_token ? b * S + s : s;
      const double *xr = x + ((size_t)b * S + s) * hidden;
      double *yr = y + ((size_t)b * S + s) * hidden;
      for (int l = 0; l < hidden; l++) yr[l] = xr[l];
      for (int h = 0; h < hidden / hd; h++)
        for (int i = 0; i < nr / 2; i++) {
          int a = h * hd + (neox ? i : 2 * i), z = h * hd + (neox ? i + nr / 2 : 2 * i + 1);
          double cc = cs[row * width + i], ss = sn[row * width + i];
          yr[a] = xr[a] * cc - xr[z] * ss;
          yr[z] = xr[z] * cc + xr[a] * ss;
        }
    }
}

static void test_rope(void) {
  rt c;
  /* hand-worked, head_dim = n_rot = 4, cos = (0, 1), sin = (1, 0) */
  rlx_attrs_Rope r = {.head_dim = 4, .n_rot = 4, .style = RLX_ROPE_STYLE_NEOX};
  CHECK_OK(RT_RUN(&c, Rope, &r, NULL, {SHP(F32, 1, 4), VALS(1, 2, 3, 4)}, {SHP(F32, 1, 2), VALS(0, 1)},
                  {SHP(F32, 1, 2), VALS(1, 0)}));
  CHECK_OUT(&c, VALS(-3, 2, 1, 4), 4, 0, 0);
  rt_free(&c);
  r.style = RLX_ROPE_STYLE_GPTJ;
  CHECK_OK(RT_RUN(&c, Rope, &r, NULL, {SHP(F32, 1, 4), VALS(1, 2, 3, 4)}, {SHP(F32, 1, 2), VALS(0, 1)},
                  {SHP(F32, 1, 2), VALS(1, 0)}));
  CHECK_OUT(&c, VALS(-2, 1, 3, 4), 4, 0, 0);
  rt_free(&c);

  /* x [2, 3, 2*8] (2 heads of 8 lanes, n_rot 4: lanes 4..7 copied), tables [5, 3] (rows >= S,
   * width > n_rot/2), both styles */
  double x[96], y[96], cs[15], sn[15];
  rt_fill(x, 96, 1);
  for (int i = 0; i < 15; i++) {
    cs[i] = cos(0.1 * i + 0.3);
    sn[i] = sin(0.1 * i + 0.3);
  }
  for (int style = 0; style < 2; style++) {
    rlx_attrs_Rope rr = {.head_dim = 8, .n_rot = 4, .style = style};
    ref_rope(x, y, 2, 3, 16, 8, 4, style == RLX_ROPE_STYLE_NEOX, cs, sn, 3, false);
    CHECK_OK(RT_RUN(&c, Rope, &rr, NULL, {SHP(F64, 2, 3, 16), x}, {SHP(F64, 5, 3), cs}, {SHP(F64, 5, 3), sn}));
    CHECK_OUT(&c, y, 96, 1e-15, 0);
    rt_free(&c);
    /* per-token table: [2*3, 2] rows (6 != S = 3) */
    ref_rope(x, y, 2, 3, 16, 8, 4, style == RLX_ROPE_STYLE_NEOX, cs, sn, 2, true);
    CHECK_OK(RT_RUN(&c, Rope, &rr, NULL, {SHP(F32, 2, 3, 16), x}, {SHP(F32, 6, 2), cs}, {SHP(F32, 6, 2), sn}));
    CHECK_OUT(&c, y, 96, 1e-6, 1e-6);
    rt_free(&c);
    /* rank-1 table: rows of n_rot/2 = 2 values, 4 rows (>= S) */
    ref_rope(x, y, 2, 3, 16, 8, 4, style == RLX_ROPE_STYLE_NEOX, cs, sn, 2, false);
    CHECK_OK(RT_RUN(&c, Rope, &rr, NULL, {SHP(F64, 2, 3, 16), x}, {SHP(F64, 8), cs}, {SHP(F64, 8), sn}));
    CHECK_OUT(&c, y, 96, 1e-15, 0);
    rt_free(&c);
  }
  /* BHSD x [1, 2, 3, 8]: each row is one head; n_rot = head_dim */
  rlx_attrs_Rope rb = {.head_dim = 8, .n_rot = 8, .style = RLX_ROPE_STYLE_NEOX};
  ref_rope(x, y, 2, 3, 8, 8, 8, true, cs, sn, 4, false);
  double c4[12], s4[12];
  for (int i = 0; i < 12; i++) c4[i] = cs[i], s4[i] = sn[i];
  CHECK_OK(RT_RUN(&c, Rope, &rb, NULL, {SHP(F64, 1, 2, 3, 8), x}, {SHP(F64, 3, 4), c4}, {SHP(F64, 3, 4), s4}));
  CHECK_OUT(&c, y, 48, 1e-15, 0);
  rt_free(&c);
  /* too few rows reaching the kernel */
  CHECK_OK(rt_build(&c, RLX_OP_Rope, &rb, NULL, false, 3,
                    (rt_arg[]){{SHP(F64, 1, 2, 3, 8), x}, {SHP(F64, 3, 4), c4}, {SHP(F64, 3, 4), s4}}));
  c.in[1].shape = c.in[2].shape = SHP(F64, 2, 4);
  CHECK_ERR(rt_exec(&c), RLX_ERR_INVALID_ARG, "rows");
  rt_free(&c);
}

/* ---- AxialRope2d ---- */

static void test_axial(void) {
  rt c;
  /* hand-worked: end_x 2, end_y 1, head_dim 4; token 1 has (px, py) = (1, 0): lanes (0,1) rotate
   * by 1 rad, lanes (2,3) by 0 */
  rlx_attrs_AxialRope2d a = {
      .end_x = 2, .end_y = 1, .head_dim = 4, .num_heads = 1, .theta = 100.0f, .repeat_factor = 1};
  CHECK_OK(RT_RUN(&c, AxialRope2d, &a, NULL, {SHP(F64, 1, 2, 4), VALS(1, 0, 1, 0, 1, 0, 1, 0)}));
  CHECK_OUT(&c, VALS(1, 0, 1, 0, cos(1.0), sin(1.0), 1, 0), 8, 1e-15, 0);
  rt_free(&c);

  /* general: end_x 3, end_y 2, repeat 2, 2 heads of 8 lanes, theta 10 */
  rlx_attrs_AxialRope2d g = {.end_x = 3, .end_y = 2, .head_dim = 8, .num_heads = 2, .theta = 10.0f, .repeat_factor = 2};
  int N = 12, W = 16;
  double x[2 * 12 * 16], want[2 * 12 * 16];
  rt_fill(x, (size_t)2 * N * W, 5);
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < N; t++) {
      int p = t / 2, coord[2] = {p % 3, p / 3};
      for (int h = 0; h < 2; h++)
        for (int half = 0; half < 2; half++)
          for (int cc = 0; cc < 2; cc++) {
            double freq = 1.0 / pow(10.0, (4.0 * cc) / 8.0), ang = coord[half] * freq;
            int l = (b * N + t) * W + h * 8 + half * 4 + 2 * cc;
            want[l] = x[l] * cos(ang) - x[l + 1] * sin(ang);
            want[l + 1] = x[l + 1] * cos(ang) + x[l] * sin(ang);
          }
    }
  CHECK_OK(RT_RUN(&c, AxialRope2d, &g, NULL, {SHP(F64, 2, 12, 16), x}));
  CHECK_OUT(&c, want, (size_t)2 * N * W, 1e-14, 1e-14);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, AxialRope2d, &g, NULL, {SHP(F32, 2, 12, 16), x}));
  CHECK_OUT(&c, want, (size_t)2 * N * W, 1e-6, 1e-6);
  rt_free(&c);
}

int main(void) {
  test_attention_hand();
  test_attention_random();
  test_attention_errors();
  test_rope();
  test_axial();
  return rlx_test_finish("ref_attention");
}
