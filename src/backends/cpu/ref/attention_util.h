/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What the attention and rotary-embedding reference kernels share between their forward
 * (attention.c) and backward (backward_attention.c) versions: operand layouts, validation, the
 * score row of one query, and the pair rotation. Semantics: attention.c's header comment. */
#ifndef RLX_REF_ATTENTION_UTIL_H
#define RLX_REF_ATTENTION_UTIL_H

#include "backends/cpu/ref/ref_util_b.h"

/* Where (b, h, s, d) of one of q, k, v lives. */
typedef struct attn_view {
  size_t B, S, H, D;
  int kind; /* 0: [B, H, S, D]; 1: [B, S, H, D]; 2: packed [B, S, H*D] or [S, H*D] */
} attn_view;

static inline size_t attn_at(const attn_view *v, size_t b, size_t h, size_t s, size_t d) {
  switch (v->kind) {
  case 0: return ((b * v->H + h) * v->S + s) * v->D + d;
  case 1: return ((b * v->S + s) * v->H + h) * v->D + d;
  default: return (b * v->S + s) * (v->H * v->D) + h * v->D + d;
  }
}

/* The attributes the forward and the backward ops both carry. */
typedef struct attn_params {
  int64_t heads, head_dim, v_head_dim, window;
  int mask;
  rlx_of32 score_scale, softcap;
} attn_params;

/* Validated geometry of one attention call. */
typedef struct attn_geom {
  attn_view q, k, v;
  size_t B, Sq, Sk, H, group; /* group: query heads per K/V head */
  int mask;
  int64_t window;
  const rlx_tensor *mask_t; /* the Custom keep-mask or Bias operand, else NULL */
  bool per_query;           /* Custom keep-mask is [B, S_q, S_k] (else [B, S_k]) */
  rlx_shape full;           /* [B, H, S_q, S_k]: what a Bias operand broadcasts to */
  double scale, cap;
  bool capped;
} attn_geom;

/* Checks q, k, v (in[0..2], dtype t, names[i] in messages) and, for Custom / Bias masks, the mask
 * operand in[mask_at] against the attributes; fills g. The caller checks the operand count. */
rlx_status rlx_ref_attn_check(const rlx_node *n, const rlx_tensor *in, uint32_t mask_at, rlx_dtype t,
                              const attn_params *p, const char *const names[3], attn_geom *g);

/* The scores of query row (b, h, qi) against every key: s[ki] (scaled, soft-capped, plus the
 * bias), vis[ki] (causal / window / keep-mask visibility) and, when th is not NULL, th[ki] =
 * tanh(r / cap) for the soft-cap derivative. *mx is the largest visible score (-inf when none),
 * *nan_seen whether a visible score is NaN. Q and K are the whole operands as doubles. */
void rlx_ref_attn_scores(const attn_geom *g, const double *Q, const double *K, size_t b, size_t h, size_t qi, double *s,
                         double *th, unsigned char *vis, double *mx, bool *nan_seen);

/* Validated geometry of a Rope / RopeBackward call: x (or dy) is [batch', S, hidden], heads of
 * head_dim lanes, the first n_rot of which rotate in pairs by the (cos, sin) table row. */
typedef struct rope_geom {
  size_t batch, S, hidden, heads, half, width, hd, nr;
  bool per_token, neox;
} rope_geom;

/* Checks in[0] (named x_name), the cos / sin tables in[1], in[2] and the output against the
 * attributes. */
rlx_status rlx_ref_rope_check(const rlx_node *n, const rlx_tensor *in, rlx_tensor *out, int64_t head_dim, int64_t n_rot,
                              int style, const char *x_name, rope_geom *g);

/* out = each pair of in[0] rotated by sign * (the table row's angle); lanes >= n_rot copied.
 * sign = +1 is Rope, -1 its transpose (RopeBackward). */
void rlx_ref_rope_rotate(const rlx_tensor *in, rlx_tensor *out, const rope_geom *g, double sign);

#endif
