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

#include "backends/cpu/ref/attention_util.h"

static const char *const qkv_names[] = {"Q", "K", "V"};

RLX_CPU_KERNEL(Attention) {
  (void)ctx;
  const rlx_attrs_Attention *at = &n->attrs.Attention;
  int mk = at->mask_kind;
  if (mk < 0 || mk >= RLX_MASK_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute mask_kind: %d is not a MaskKind", mk);
  bool has_mask = mk == RLX_MASK_CUSTOM || mk == RLX_MASK_BIAS;
  RLX_TRY(ru_prologue(n, in, n_in, has_mask ? 4 : 3, has_mask ? 4 : 3, out));
  int64_t H = at->num_heads, Dv = at->v_head_dim.has ? at->v_head_dim.v : at->head_dim;
  rlx_dtype t = ru_dt(out);
  attn_params p = {H, at->head_dim, Dv, at->window, mk, at->score_scale, at->attn_logit_softcap};
  attn_geom g;
  RLX_TRY(rlx_ref_attn_check(n, in, 3, t, &p, qkv_names, &g));
  /* Output: Q's layout with v_head_dim. */
  const rlx_shape *qs = &in[0].shape;
  int64_t dims[4];
  for (uint32_t a = 0; a < qs->rank; a++) dims[a] = qs->dims[a];
  dims[qs->rank - 1] = qs->rank == 4 ? Dv : H * Dv;
  RLX_TRY(ru_need_out_dims(n, out, qs->rank, dims));
  attn_view o = g.q;
  o.D = (size_t)Dv;

  double *Q = NULL, *K = NULL, *V = NULL, *s = NULL, *acc = NULL;
  unsigned char *vis = NULL;
  rlx_status st = rb_load(n, &in[0], &Q);
  if (st == RLX_OK) st = rb_load(n, &in[1], &K);
  if (st == RLX_OK) st = rb_load(n, &in[2], &V);
  if (st == RLX_OK) st = rb_alloc(n, g.Sk, sizeof *s, &s);
  if (st == RLX_OK) st = rb_alloc(n, g.Sk, sizeof *vis, &vis);
  if (st == RLX_OK) st = rb_alloc(n, (size_t)Dv, sizeof *acc, &acc);
  for (size_t b = 0; b < g.B && st == RLX_OK; b++)
    for (size_t h = 0; h < g.H; h++) {
      size_t kh = h / g.group;
      for (size_t qi = 0; qi < g.Sq; qi++) {
        double mx;
        bool nan_seen;
        rlx_ref_attn_scores(&g, Q, K, b, h, qi, s, NULL, vis, &mx, &nan_seen);
        for (size_t d = 0; d < (size_t)Dv; d++) acc[d] = nan_seen ? NAN : 0.0;
        if (!nan_seen && mx != -INFINITY) { /* else: every key masked -> zeros */
          double sum = 0.0;
          for (size_t ki = 0; ki < g.Sk; ki++) {
            if (!vis[ki]) continue;
            double e = exp(s[ki] - mx);
            sum += e;
            for (size_t d = 0; d < (size_t)Dv; d++) acc[d] += e * V[attn_at(&g.v, b, kh, ki, d)];
          }
          for (size_t d = 0; d < (size_t)Dv; d++) acc[d] /= sum;
        }
        for (size_t d = 0; d < (size_t)Dv; d++) ru_store(out->data, t, attn_at(&o, b, h, qi, d), acc[d]);
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
  rope_geom g;
  RLX_TRY(rlx_ref_rope_check(n, in, out, at->head_dim, at->n_rot, (int)at->style, "x", &g));
  rlx_ref_rope_rotate(in, out, &g, 1.0);
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
  if (x->rank != 3)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [B, N, H*D]", ru_fmt(x));
  RLX_TRY(ru_need_out_dims(n, out, 3, x->dims));
  int64_t D = at->head_dim, H = at->num_heads, rep = at->repeat_factor, ex = at->end_x, ey = at->end_y;
  if (D < 4 || D % 4 || H < 1 || rep < 1 || ex < 1 || ey < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes head_dim (a multiple of 4), num_heads, repeat_factor, end_x and "
                    "end_y must be positive");
  size_t W = (size_t)x->dims[2], Ntok = (size_t)x->dims[1];
  if ((uint64_t)H > W / (uint64_t)D || W != (size_t)H * (size_t)D)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; its last dim must be num_heads * head_dim",
                    ru_fmt(x));
  int64_t cells;
  if (__builtin_mul_overflow(ex, ey, &cells) || __builtin_mul_overflow(cells, rep, &cells) || (size_t)cells != Ntok)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "operand 0 (x) has shape %s; its token axis must be end_x * end_y * "
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
