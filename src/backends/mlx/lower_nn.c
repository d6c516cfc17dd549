/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of the network layers: LayerNorm / RmsNorm (mx::fast), Attention through
 * mx::fast::scaled_dot_product_attention with the CPU's masks built as MLX arrays, convolutions
 * through conv_general with NCHW <-> NHWC transposes, and 2-D pooling from padded strided
 * windows. */
#include <math.h>

#include "backends/mlx/mlx_internal.h"

static void dims_of(const rlx_shape *s, int64_t *d) {
  for (uint32_t i = 0; i < s->rank; i++) d[i] = s->dims[i];
}

/* ---- norms ---- */

/* gamma / beta as 1-D [C] (the CPU accepts any shape holding C elements). */
static rlxm_arr *vec(mlx_lower_ctx *c, rlxm_arr *v) {
  if (rlxm_rank(v) == 1) return v;
  size_t n = 1;
  for (uint32_t i = 0; i < rlxm_rank(v); i++) n *= (size_t)rlxm_dim(v, i);
  int64_t d = (int64_t)n;
  return rlxm_reshape(c->s, v, 1, &d);
}

/* Two-pass statistics (mean, then the mean of squared deviations) in f32 at least, like the
 * CPU's: MLX's fused layer_norm loses digits on rows with a large common offset. */
static rlx_status lower_LayerNorm(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  if (!mlx_is_float(t)) return mlx_decline(c, "non-float LayerNorm");
  /* MLX's fused layer_norm loses digits on rows with a large common offset (the CPU normalizes in
   * double): shift each row by its mean first, then normalize the centered row with it */
  int64_t last = (int64_t)rlxm_rank(in[0]) - 1;
  int wt = t == RLX_F64 ? RLX_F64 : RLX_F32;
  rlxm_arr *x = rlxm_astype(s, in[0], wt);
  rlxm_arr *d = rlxm_binary(s, RLXM_SUB, x, rlxm_reduce(s, RLXM_R_MEAN, x, 1, &last, true));
  rlxm_arr *y = rlxm_layer_norm(s, d, rlxm_astype(s, vec(c, in[1]), wt), rlxm_astype(s, vec(c, in[2]), wt),
                                n->attrs.LayerNorm.eps);
  return mlx_check(c, rlxm_astype(s, y, t), out);
}

/* LayerNorm2d: NCHW normalized over C at every (n, h, w); gamma / beta per channel. The mean is
 * taken twice (the second pass removes what f32 lost on rows with a large offset). */
static rlx_status lower_LayerNorm2d(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  if (!mlx_is_float(t) || rlxm_rank(in[0]) != 4) return mlx_decline(c, "this case runs on the CPU kernel");
  int wt = t == RLX_F64 ? RLX_F64 : RLX_F32;
  int64_t ax = 1, C = rlxm_dim(in[0], 1), pd[4] = {1, C, 1, 1};
  rlxm_arr *x = rlxm_astype(s, in[0], wt);
  rlxm_arr *d = rlxm_binary(s, RLXM_SUB, x, rlxm_reduce(s, RLXM_R_MEAN, x, 1, &ax, true));
  d = rlxm_binary(s, RLXM_SUB, d, rlxm_reduce(s, RLXM_R_MEAN, d, 1, &ax, true));
  rlxm_arr *var = rlxm_reduce(s, RLXM_R_MEAN, rlxm_binary(s, RLXM_MUL, d, d), 1, &ax, true);
  rlxm_arr *y = rlxm_binary(
      s, RLXM_MUL, d,
      rlxm_unary(s, RLXM_RSQRT, rlxm_binary(s, RLXM_ADD, var, rlxm_scalar(s, n->attrs.LayerNorm2d.eps, wt))));
  rlxm_arr *g = rlxm_reshape(s, rlxm_astype(s, vec(c, in[1]), wt), 4, pd),
           *b = rlxm_reshape(s, rlxm_astype(s, vec(c, in[2]), wt), 4, pd);
  return mlx_check(c, rlxm_astype(s, rlxm_binary(s, RLXM_ADD, rlxm_binary(s, RLXM_MUL, y, g), b), t), out);
}

static rlx_status lower_RmsNorm(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "non-float RmsNorm");
  rlxm_arr *r =
      rlxm_binary(c->s, RLXM_ADD, rlxm_rms_norm(c->s, in[0], vec(c, in[1]), n->attrs.RmsNorm.eps), vec(c, in[2]));
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_reshape(c->s, r, n->shape.rank, d), out);
}

/* ---- attention ---- */

/* Brings an operand into [B, H, S, D]; *bshd says whether the layout was [B, S, H, D] (rank 4) or
 * folded heads (rank 2/3), which the output must return to. */
static rlxm_arr *to_bhsd(mlx_lower_ctx *c, rlxm_arr *x, int64_t q_heads, int64_t head_dim, bool q_is_bhsd) {
  uint32_t r = rlxm_rank(x);
  if (r == 4) {
    if (q_is_bhsd) return x;
    static const int64_t p[4] = {0, 2, 1, 3};
    return rlxm_transpose(c->s, x, 4, p);
  }
  (void)q_heads;
  int64_t B = r == 3 ? rlxm_dim(x, 0) : 1, S = rlxm_dim(x, r - 2), HD = rlxm_dim(x, r - 1);
  int64_t d4[4] = {B, S, HD / head_dim, head_dim};
  static const int64_t p[4] = {0, 2, 1, 3};
  return rlxm_transpose(c->s, rlxm_reshape(c->s, x, 4, d4), 4, p);
}

static rlx_status lower_Attention(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  if (!mlx_is_float(t)) return mlx_decline(c, "non-float Attention");
  if (a->attn_logit_softcap.has) return mlx_decline(c, "logit soft-capping is not in MLX's fused attention");
  uint32_t r = rlxm_rank(in[0]);
  int64_t H = a->num_heads, D = a->head_dim, Dv = a->v_head_dim.has ? a->v_head_dim.v : a->head_dim;
  if (r < 2 || r > 4 || D <= 0 || Dv <= 0 || H <= 0) return mlx_decline(c, "layout: the CPU kernel checks it");
  bool q_bhsd = r == 4 && rlxm_dim(in[0], 1) == H;
  rlxm_arr *q = to_bhsd(c, in[0], H, D, q_bhsd), *k = to_bhsd(c, in[1], H, D, q_bhsd),
           *v = to_bhsd(c, in[2], H, Dv, q_bhsd);
  if (!q || !k || !v) return mlx_check(c, NULL, out);
  int64_t B = rlxm_dim(q, 0), Sq = rlxm_dim(q, 2), Sk = rlxm_dim(k, 2);
  if (rlxm_dim(q, 1) != H || rlxm_dim(q, 3) != D || H % rlxm_dim(k, 1) != 0)
    return mlx_decline(c, "head geometry: the CPU kernel checks it");
  float scale = a->score_scale.has ? a->score_scale.v : (float)(1.0 / sqrt((double)D));
  rlxm_arr *mask = NULL, *keep = NULL; /* keep: boolean visibility, broadcast to [B, H, Sq, Sk] */
  switch (a->mask_kind) {
  case RLX_MASK_NONE: break;
  case RLX_MASK_CAUSAL:
  case RLX_MASK_SLIDING_WINDOW: {
    /* key ki visible iff ki <= p (and ki >= p - window), p = Sk - Sq + qi */
    rlxm_arr *qi = rlxm_reshape(s, rlxm_arange(s, (double)(Sk - Sq), (double)Sk, 1, RLX_I32), 2, (int64_t[]){Sq, 1});
    rlxm_arr *ki = rlxm_reshape(s, rlxm_arange(s, 0, (double)Sk, 1, RLX_I32), 2, (int64_t[]){1, Sk});
    keep = rlxm_binary(s, RLXM_LE, ki, qi);
    if (a->mask_kind == RLX_MASK_SLIDING_WINDOW)
      keep = rlxm_binary(
          s, RLXM_AND, keep,
          rlxm_binary(s, RLXM_GE, ki, rlxm_binary(s, RLXM_SUB, qi, rlxm_scalar(s, (double)a->window, RLX_I32))));
    mask = keep;
    break;
  }
  case RLX_MASK_CUSTOM: {
    rlxm_arr *m = in[3];
    uint32_t mr = rlxm_rank(m);
    if (mr == 2)
      m = rlxm_reshape(s, m, 4, (int64_t[]){B, 1, 1, Sk});
    else if (mr == 3)
      m = rlxm_reshape(s, m, 4, (int64_t[]){B, 1, Sq, Sk});
    else
      return mlx_decline(c, "mask shape: the CPU kernel checks it");
    int mt = rlxm_dtype(m);
    keep = mt == RLX_BOOL ? m : rlxm_binary(s, RLXM_GE, rlxm_astype(s, m, RLX_F32), rlxm_scalar(s, 0.5, RLX_F32));
    mask = keep;
    break;
  }
  case RLX_MASK_BIAS: mask = rlxm_astype(s, in[3], t); break;
  default: return mlx_decline(c, "unknown mask kind");
  }
  /* every query row sees at least its own position under Causal / SlidingWindow when Sk >= Sq:
   * then no row is fully masked, and with Sq == Sk MLX's own causal mode is the CPU's mask */
  bool rows_ok = (a->mask_kind == RLX_MASK_CAUSAL || a->mask_kind == RLX_MASK_SLIDING_WINDOW) && Sk >= Sq;
  bool native_causal = a->mask_kind == RLX_MASK_CAUSAL && Sk == Sq;
  rlxm_arr *o = native_causal ? rlxm_sdpa(s, q, k, v, scale, true, NULL) : rlxm_sdpa(s, q, k, v, scale, false, mask);
  if (keep && !rows_ok) {
    /* a row whose keys are all masked outputs zeros, as on the CPU */
    int64_t last = 3;
    rlxm_arr *full = rlxm_broadcast(s, keep, 4, (int64_t[]){B, 1, Sq, Sk});
    rlxm_arr *any = rlxm_reduce(s, RLXM_R_ANY, full, 1, &last, true);
    o = rlxm_where(s, any, o, rlxm_scalar(s, 0, t));
  }
  /* back to the query's layout */
  static const int64_t p[4] = {0, 2, 1, 3};
  if (!q_bhsd) o = rlxm_transpose(s, o, 4, p);
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_reshape(s, o, n->shape.rank, d), out);
}

/* ---- convolution ---- */

static bool geom(const rlx_ilist *l, uint32_t nd, int64_t dflt, int64_t *lo, int64_t *hi) {
  for (uint32_t i = 0; i < nd; i++) lo[i] = hi[i] = dflt;
  if (l->n == 0) return true;
  if (l->n == nd) {
    for (uint32_t i = 0; i < nd; i++) lo[i] = hi[i] = l->v[i];
    return true;
  }
  if (hi && l->n == 2 * nd) {
    for (uint32_t i = 0; i < nd; i++) lo[i] = l->v[i], hi[i] = l->v[nd + i];
    return true;
  }
  return false;
}

/* NCHW (rank nd + 2) -> channels last, and back. */
static rlxm_arr *to_last(mlx_lower_ctx *c, rlxm_arr *x, uint32_t nd) {
  int64_t p[RLX_MAX_RANK];
  p[0] = 0;
  for (uint32_t i = 0; i < nd; i++) p[1 + i] = 2 + i;
  p[nd + 1] = 1;
  return rlxm_transpose(c->s, x, nd + 2, p);
}
static rlxm_arr *to_first(mlx_lower_ctx *c, rlxm_arr *x, uint32_t nd) {
  int64_t p[RLX_MAX_RANK];
  p[0] = 0;
  p[1] = nd + 1;
  for (uint32_t i = 0; i < nd; i++) p[2 + i] = 1 + i;
  return rlxm_transpose(c->s, x, nd + 2, p);
}

static rlx_status conv_nd(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *x, rlxm_arr *w, const rlx_ilist *stride,
                          const rlx_ilist *padding, const rlx_ilist *dilation, int64_t groups, rlxm_arr **out) {
  uint32_t r = rlxm_rank(x);
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "integer convolution");
  if (r < 3 || r > 5 || rlxm_rank(w) != r) return mlx_decline(c, "convolution rank: the CPU kernel checks it");
  uint32_t nd = r - 2;
  if (nd == 3 && groups != 1) return mlx_decline(c, "MLX convolves grouped inputs in 1-D and 2-D only");
  int64_t st[3], st2[3], pl[3], ph[3], dl[3], dl2[3], one[3] = {1, 1, 1};
  if (!geom(stride, nd, 1, st, st2) || !geom(padding, nd, 0, pl, ph) || !geom(dilation, nd, 1, dl, dl2))
    return mlx_decline(c, "geometry attributes: the CPU kernel checks them");
  rlxm_arr *y = rlxm_conv(c->s, to_last(c, x, nd), to_last(c, w, nd), nd, st, pl, ph, dl, one, groups, false);
  return mlx_check(c, to_first(c, y, nd), out);
}

/* Conv2dBackwardInput [dy, w] -> dx and Conv2dBackwardWeight [x, dy] -> dw, groups = 1 (the
 * caller rejects grouped ones): MLX's vjp of the forward conv_general, in channels-last layout. */
rlx_status mlx_lower_conv2d_backward(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  bool wrt_w = n->op == RLX_OP_Conv2dBackwardWeight;
  const rlx_ilist *stride = wrt_w ? &n->attrs.Conv2dBackwardWeight.stride : &n->attrs.Conv2dBackwardInput.stride;
  const rlx_ilist *padding = wrt_w ? &n->attrs.Conv2dBackwardWeight.padding : &n->attrs.Conv2dBackwardInput.padding;
  const rlx_ilist *dilation = wrt_w ? &n->attrs.Conv2dBackwardWeight.dilation : &n->attrs.Conv2dBackwardInput.dilation;
  if (!mlx_is_float((rlx_dtype)n->shape.dtype) || !rlx_shape_is_static(&n->shape) || n->shape.rank != 4)
    return mlx_decline(c, "integer or symbolic convolution backward: lowered through its shared decomposition");
  if (n->shape.dtype == RLX_F64) /* MLX convolves f32 / f16 / bf16 only */
    return mlx_decline(c, "f64 convolution backward: lowered through its shared decomposition");
  if (rlxm_rank(in[0]) != 4 || rlxm_rank(in[1]) != 4 || rlxm_dtype(in[0]) != rlxm_dtype(in[1]))
    return mlx_decline(c, "operand ranks or dtypes: the CPU kernel checks them");
  int64_t st[2], st2[2], pl[2], ph[2], dl[2], dl2[2];
  if (!geom(stride, 2, 1, st, st2) || !geom(padding, 2, 0, pl, ph) || !geom(dilation, 2, 1, dl, dl2))
    return mlx_decline(c, "geometry attributes: the CPU kernel checks them");
  /* the shape of the operand being differentiated, channels last: [N, H, W, C] or [O, kH, kW, I] */
  const rlx_dim *d = n->shape.dims;
  int64_t shp[4] = {d[0], d[2], d[3], d[1]};
  rlxm_arr *dy = to_last(c, wrt_w ? in[1] : in[0], 2);
  rlxm_arr *g = wrt_w ? rlxm_conv_grad(c->s, to_last(c, in[0], 2), NULL, dy, true, 4, shp, 2, st, pl, ph, dl, 1)
                      : rlxm_conv_grad(c->s, NULL, to_last(c, in[1], 2), dy, false, 4, shp, 2, st, pl, ph, dl, 1);
  return mlx_check(c, to_first(c, g, 2), out);
}

static rlx_status lower_Conv(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Conv *a = &n->attrs.Conv;
  return conv_nd(c, n, in[0], in[1], &a->stride, &a->padding, &a->dilation, a->groups, out);
}
static rlx_status lower_Conv3d(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Conv3d *a = &n->attrs.Conv3d;
  return conv_nd(c, n, in[0], in[1], &a->stride, &a->padding, &a->dilation, a->groups, out);
}

/* Im2Col: [N, C, H, W] -> [N*Ho*Wo, C*kH*kW]; row (n, oh, ow), column (c, kh, kw); padding is
 * zeros. One strided slice of the padded input per kernel cell. */
static rlx_status lower_Im2Col(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Im2Col *a = &n->attrs.Im2Col;
  rlxm_scope *s = c->s;
  if (rlxm_rank(in[0]) != 4 || rlxm_dtype(in[0]) < 0) return mlx_decline(c, "rank: the CPU kernel checks it");
  int64_t k[2], k2[2], st[2], st2[2], pl[2], ph[2], dl[2], dl2[2];
  if (a->kernel_size.n != 2 || !geom(&a->kernel_size, 2, 1, k, k2) || !geom(&a->stride, 2, 1, st, st2) ||
      !geom(&a->padding, 2, 0, pl, ph) || !geom(&a->dilation, 2, 1, dl, dl2) || k[0] * k[1] > 256)
    return mlx_decline(c, "geometry attributes: the CPU kernel checks them");
  int64_t N = rlxm_dim(in[0], 0), C = rlxm_dim(in[0], 1), H = rlxm_dim(in[0], 2), W = rlxm_dim(in[0], 3);
  int64_t Ho = (H + pl[0] + ph[0] - dl[0] * (k[0] - 1) - 1) / st[0] + 1,
          Wo = (W + pl[1] + ph[1] - dl[1] * (k[1] - 1) - 1) / st[1] + 1;
  if (Ho <= 0 || Wo <= 0 || n->shape.rank != 2 || n->shape.dims[0] != N * Ho * Wo) return mlx_decline(c, "geometry");
  /* pad enough on the high side for every strided slice to stay in range */
  int64_t hh = (Ho - 1) * st[0] + dl[0] * (k[0] - 1) + 1 - (H + pl[0]),
          hw = (Wo - 1) * st[1] + dl[1] * (k[1] - 1) + 1 - (W + pl[1]);
  rlxm_arr *xp =
      rlxm_pad(s, in[0], (int64_t[]){0, 0, pl[0], pl[1]}, (int64_t[]){0, 0, hh > 0 ? hh : 0, hw > 0 ? hw : 0}, 0.0);
  rlxm_arr *cells[256];
  for (int64_t i = 0; i < k[0]; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      int64_t start[4] = {0, 0, i * dl[0], j * dl[1]},
              stop[4] = {N, C, i * dl[0] + (Ho - 1) * st[0] + 1, j * dl[1] + (Wo - 1) * st[1] + 1},
              step[4] = {1, 1, st[0], st[1]};
      cells[i * k[1] + j] = rlxm_reshape(s, rlxm_slice(s, xp, start, stop, step), 5, (int64_t[]){N, C, 1, Ho, Wo});
    }
  rlxm_arr *col = rlxm_concat(s, cells, (uint32_t)(k[0] * k[1]), 2); /* [N, C, kH*kW, Ho, Wo] */
  col = rlxm_transpose(s, col, 5, (int64_t[]){0, 3, 4, 1, 2});
  return mlx_check(c, rlxm_reshape(s, col, 2, (int64_t[]){N * Ho * Wo, C * k[0] * k[1]}), out);
}

/* ---- pooling (2-D, NCHW) ---- */

/* Non-overlapping 2-D windows (stride = kernel, no padding, exact fit): x [N, C, OH*k0, OW*k1] as
 * one contiguous array of window slots [k0, k1, N, C, OH, OW] (one transpose copy), so each slot is
 * a contiguous block and the per-slot elementwise work runs on MLX's contiguous kernels (the
 * strided slices it replaces ran on its much slower general-stride path). */
static rlxm_arr *window_slots(mlx_lower_ctx *c, rlxm_arr *x, const int64_t *d6) {
  rlxm_scope *s = c->s;
  /* d6 = {N, C, OH, k0, OW, k1} */
  rlxm_arr *r = rlxm_reshape(s, x, 6, d6);
  return rlxm_contiguous(s, rlxm_transpose(s, r, 6, (int64_t[]){3, 5, 0, 1, 2, 4}));
}
static rlxm_arr *window_slot(mlx_lower_ctx *c, rlxm_arr *slots, const int64_t *d6, int64_t i, int64_t j) {
  int64_t start[6] = {i, j, 0, 0, 0, 0}, stop[6] = {i + 1, j + 1, d6[0], d6[1], d6[2], d6[4]},
          step[6] = {1, 1, 1, 1, 1, 1};
  return rlxm_reshape(c->s, rlxm_slice(c->s, slots, start, stop, step), 4, (int64_t[]){d6[0], d6[1], d6[2], d6[4]});
}

static rlx_status lower_Pool(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  if (!mlx_is_float(t) || rlxm_rank(in[0]) != 4)
    return mlx_decline(c, "Pool of this rank / dtype runs on the CPU kernel");
  if (a->kind != RLX_REDUCE_MAX && a->kind != RLX_REDUCE_MEAN) return mlx_decline(c, "pool kind");
  int64_t k[2], k2[2], st[2], st2[2], pl[2], ph[2];
  if (a->kernel_size.n != 2 || !geom(&a->kernel_size, 2, 1, k, k2) || !geom(&a->stride, 2, 0, st, st2) ||
      !geom(&a->padding, 2, 0, pl, ph))
    return mlx_decline(c, "geometry attributes: the CPU kernel checks them");
  for (int i = 0; i < 2; i++)
    if (st[i] == 0) st[i] = k[i];
  int64_t N = rlxm_dim(in[0], 0), C = rlxm_dim(in[0], 1), H = rlxm_dim(in[0], 2), W = rlxm_dim(in[0], 3);
  int64_t OH = n->shape.dims[2], OW = n->shape.dims[3];
  bool mx = a->kind == RLX_REDUCE_MAX;
  /* pad so every window is in range: max pads with -inf (padding is ignored), mean with 0 */
  int64_t need_h = (OH - 1) * st[0] + k[0], need_w = (OW - 1) * st[1] + k[1];
  int64_t hi_h = need_h - H - pl[0], hi_w = need_w - W - pl[1];
  if (hi_h < 0) hi_h = 0;
  if (hi_w < 0) hi_w = 0;
  bool tiled = st[0] == k[0] && st[1] == k[1] && pl[0] == 0 && pl[1] == 0 && ph[0] == 0 && ph[1] == 0 &&
               H == OH * k[0] && W == OW * k[1];
  int64_t d6[6] = {N, C, OH, k[0], OW, k[1]};
  rlxm_arr *x =
      tiled ? window_slots(c, in[0], d6)
            : rlxm_pad(s, in[0], (int64_t[]){0, 0, pl[0], pl[1]}, (int64_t[]){0, 0, hi_h, hi_w}, mx ? -INFINITY : 0.0);
  rlxm_arr *acc = NULL;
  for (int64_t i = 0; i < k[0]; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      int64_t start[4] = {0, 0, i, j}, stop[4] = {N, C, i + (OH - 1) * st[0] + 1, j + (OW - 1) * st[1] + 1},
              step[4] = {1, 1, st[0], st[1]};
      rlxm_arr *win = tiled ? window_slot(c, x, d6, i, j) : rlxm_slice(s, x, start, stop, step);
      if (!acc)
        acc = win;
      else if (mx) {
        acc = rlxm_binary(s, RLXM_MAX, acc, win); /* MLX's maximum propagates NaN, as the CPU */
      } else
        acc = rlxm_binary(s, RLXM_ADD, acc, win);
    }
  if (!mx) acc = rlxm_binary(s, RLXM_DIV, acc, rlxm_scalar(s, (double)(k[0] * k[1]), t));
  return mlx_check(c, acc, out);
}

/* MaxPool2dBackward(x, dy): each window's gradient goes to its first maximal cell (row-major
 * window order: first hit wins ties, as on the CPU; padding never wins). Built from the k*k
 * strided window slices: a running "already found" mask picks the first hit, and each slot's
 * share of dy is added back at its strided positions (slice_update). */
static rlx_status lower_MaxPool2dBackward(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  if (!mlx_is_float(t) || rlxm_rank(in[0]) != 4 || rlxm_rank(in[1]) != 4) return mlx_decline(c, "rank / dtype");
  int64_t k[2], k2[2], st[2], st2[2], pl[2], ph[2];
  if (a->kernel_size.n != 2 || !geom(&a->kernel_size, 2, 1, k, k2) || !geom(&a->stride, 2, 0, st, st2) ||
      !geom(&a->padding, 2, 0, pl, ph))
    return mlx_decline(c, "geometry attributes: the CPU kernel checks them");
  for (int i = 0; i < 2; i++)
    if (st[i] == 0) st[i] = k[i];
  int64_t N = rlxm_dim(in[0], 0), C = rlxm_dim(in[0], 1), H = rlxm_dim(in[0], 2), W = rlxm_dim(in[0], 3);
  int64_t OH = rlxm_dim(in[1], 2), OW = rlxm_dim(in[1], 3);
  if (rlxm_dim(in[1], 0) != N || rlxm_dim(in[1], 1) != C) return mlx_decline(c, "shapes: the CPU kernel checks them");
  if (st[0] == k[0] && st[1] == k[1] && pl[0] == 0 && pl[1] == 0 && ph[0] == 0 && ph[1] == 0 && H == OH * k[0] &&
      W == OW * k[1]) {
    /* non-overlapping windows: the window slots are strided slices of x itself; each slot's
     * gradient is interleaved back (concat + reshape), no scatter */
    if (k[0] * k[1] > 64) return mlx_decline(c, "windows of more than 64 cells run on the CPU kernel");
    rlxm_arr *w[64], *m = NULL;
    int64_t d6[6] = {N, C, OH, k[0], OW, k[1]};
    rlxm_arr *slots = window_slots(c, in[0], d6);
    for (int64_t i = 0; i < k[0]; i++)
      for (int64_t j = 0; j < k[1]; j++) {
        w[i * k[1] + j] = window_slot(c, slots, d6, i, j);
        rlxm_arr *x = w[i * k[1] + j];
        m = !m ? x : rlxm_binary(s, RLXM_MAX, m, x); /* MLX's maximum propagates NaN, as the CPU */
      }
    rlxm_arr *found = NULL, *zero = rlxm_scalar(s, 0, t), *rows[64];
    for (int64_t i = 0; i < k[0]; i++) {
      rlxm_arr *cols[64];
      for (int64_t j = 0; j < k[1]; j++) {
        rlxm_arr *x = w[i * k[1] + j];
        /* a NaN cell makes its window's maximum NaN, so "x is the maximum" is x == m or x is NaN */
        rlxm_arr *eq = rlxm_binary(s, RLXM_OR, rlxm_binary(s, RLXM_EQ, x, m), rlxm_unary(s, RLXM_ISNAN, x));
        rlxm_arr *hit = found ? rlxm_binary(s, RLXM_AND, eq, rlxm_unary(s, RLXM_NOT, found)) : eq;
        if (i + 1 < k[0] || j + 1 < k[1]) found = found ? rlxm_binary(s, RLXM_OR, found, eq) : eq;
        cols[j] = rlxm_reshape(s, rlxm_where(s, hit, in[1], zero), 6, (int64_t[]){1, 1, N, C, OH, OW});
      }
      rows[i] = k[1] == 1 ? cols[0] : rlxm_concat(s, cols, (uint32_t)k[1], 1);
    }
    /* slots [k0, k1, N, C, OH, OW] back to [N, C, OH, k0, OW, k1] = [N, C, H, W] */
    rlxm_arr *g = k[0] == 1 ? rows[0] : rlxm_concat(s, rows, (uint32_t)k[0], 0);
    g = rlxm_transpose(s, g, 6, (int64_t[]){2, 3, 4, 0, 5, 1});
    return mlx_check(c, rlxm_reshape(s, g, 4, (int64_t[]){N, C, H, W}), out);
  }
  int64_t need_h = (OH - 1) * st[0] + k[0], need_w = (OW - 1) * st[1] + k[1];
  int64_t hi_h = need_h - H - pl[0] > 0 ? need_h - H - pl[0] : 0,
          hi_w = need_w - W - pl[1] > 0 ? need_w - W - pl[1] : 0;
  int64_t PH = H + pl[0] + hi_h, PW = W + pl[1] + hi_w;
  rlxm_arr *xp = rlxm_pad(s, in[0], (int64_t[]){0, 0, pl[0], pl[1]}, (int64_t[]){0, 0, hi_h, hi_w}, -INFINITY);
  /* the window maxima (NaN propagates, as in the forward) */
  rlxm_arr *win[64], *m = NULL;
  if (k[0] * k[1] > 64) return mlx_decline(c, "windows of more than 64 cells run on the CPU kernel");
  for (int64_t i = 0; i < k[0]; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      int64_t start[4] = {0, 0, i, j}, stop[4] = {N, C, i + (OH - 1) * st[0] + 1, j + (OW - 1) * st[1] + 1},
              step[4] = {1, 1, st[0], st[1]};
      rlxm_arr *w = rlxm_slice(s, xp, start, stop, step);
      win[i * k[1] + j] = w;
      if (!m)
        m = w;
      else
        m = rlxm_where(s, rlxm_unary(s, RLXM_ISNAN, w), w, rlxm_binary(s, RLXM_MAX, m, w));
    }
  rlxm_arr *dx = rlxm_full(s, 0, t, 4, (int64_t[]){N, C, PH, PW});
  rlxm_arr *found = rlxm_full(s, 0, RLX_BOOL, 4, (int64_t[]){N, C, OH, OW});
  rlxm_arr *zero = rlxm_scalar(s, 0, t);
  for (int64_t i = 0; i < k[0]; i++)
    for (int64_t j = 0; j < k[1]; j++) {
      rlxm_arr *w = win[i * k[1] + j];
      rlxm_arr *eq = rlxm_binary(s, RLXM_OR, rlxm_binary(s, RLXM_EQ, w, m),
                                 rlxm_binary(s, RLXM_AND, rlxm_unary(s, RLXM_ISNAN, w), rlxm_unary(s, RLXM_ISNAN, m)));
      rlxm_arr *hit = rlxm_binary(s, RLXM_AND, eq, rlxm_unary(s, RLXM_NOT, found));
      found = rlxm_binary(s, RLXM_OR, found, hit);
      rlxm_arr *g = rlxm_where(s, hit, in[1], zero);
      int64_t start[4] = {0, 0, i, j}, stop[4] = {N, C, i + (OH - 1) * st[0] + 1, j + (OW - 1) * st[1] + 1},
              step[4] = {1, 1, st[0], st[1]};
      rlxm_arr *cur = rlxm_slice(s, dx, start, stop, step);
      dx = rlxm_slice_update(s, dx, rlxm_binary(s, RLXM_ADD, cur, g), start, stop, step);
    }
  int64_t start[4] = {0, 0, pl[0], pl[1]}, stop[4] = {N, C, pl[0] + H, pl[1] + W}, step[4] = {1, 1, 1, 1};
  return mlx_check(c, rlxm_slice(s, dx, start, stop, step), out);
}

/* ---- rotary embeddings ----
 * x viewed as [B', S, heads, head_dim]; pairs (NeoX: i, i + n_rot/2; GptJ: 2i, 2i + 1), i < n_rot/2,
 * rotate by the table row's (cos[i], sin[i]); lanes >= n_rot pass through. The table row is the
 * position s, or the flattened token when the table has exactly B'*S rows (and that is not S). */
static rlx_status lower_Rope(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Rope *a = &n->attrs.Rope;
  rlxm_scope *s = c->s;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  uint32_t r = rlxm_rank(in[0]);
  int64_t hd = a->head_dim, nr = a->n_rot, half = nr / 2;
  if (!mlx_is_float(t) || r < 2 || hd < 2 || hd % 2 || nr < 2 || nr % 2 || nr > hd || rlxm_dtype(in[1]) != (int)t ||
      rlxm_dtype(in[2]) != (int)t || (a->style != RLX_ROPE_STYLE_NEOX && a->style != RLX_ROPE_STYLE_GPTJ))
    return mlx_decline(c, "attributes / operands: the CPU kernel checks them");
  int64_t hidden = rlxm_dim(in[0], r - 1), S = rlxm_dim(in[0], r - 2), numel = 1;
  for (uint32_t i = 0; i < r; i++) numel *= rlxm_dim(in[0], i);
  if (hidden % hd || S == 0 || hidden == 0) return mlx_decline(c, "layout: the CPU kernel checks it");
  int64_t B = numel / (S * hidden), H = hidden / hd;
  uint32_t cr = rlxm_rank(in[1]);
  int64_t tab = 1;
  for (uint32_t i = 0; i < cr; i++) tab *= rlxm_dim(in[1], i);
  int64_t width = cr >= 2 ? rlxm_dim(in[1], cr - 1) : half;
  if (cr == 0 || width < half || tab % width) return mlx_decline(c, "table shape: the CPU kernel checks it");
  int64_t rows = tab / width;
  bool per_token = rows == B * S && rows != S;
  if (!per_token && rows < S) return mlx_decline(c, "table rows: the CPU kernel checks it");
  rlxm_arr *tabs[2];
  for (int k = 0; k < 2; k++) {
    rlxm_arr *tb = rlxm_narrow(s, rlxm_reshape(s, in[1 + k], 2, (int64_t[]){rows, width}), 1, 0, half, 1);
    if (per_token)
      tabs[k] = rlxm_reshape(s, tb, 4, (int64_t[]){B, S, 1, half});
    else
      tabs[k] = rlxm_reshape(s, rlxm_narrow(s, tb, 0, 0, S, 1), 4, (int64_t[]){1, S, 1, half});
  }
  rlxm_arr *x = rlxm_reshape(s, in[0], 4, (int64_t[]){B, S, H, hd});
  bool neox = a->style == RLX_ROPE_STYLE_NEOX;
  rlxm_arr *x1 = neox ? rlxm_narrow(s, x, 3, 0, half, 1) : rlxm_narrow(s, x, 3, 0, half, 2);
  rlxm_arr *x2 = neox ? rlxm_narrow(s, x, 3, half, half, 1) : rlxm_narrow(s, x, 3, 1, half, 2);
  rlxm_arr *y1 = rlxm_binary(s, RLXM_SUB, rlxm_binary(s, RLXM_MUL, x1, tabs[0]), rlxm_binary(s, RLXM_MUL, x2, tabs[1]));
  rlxm_arr *y2 = rlxm_binary(s, RLXM_ADD, rlxm_binary(s, RLXM_MUL, x2, tabs[0]), rlxm_binary(s, RLXM_MUL, x1, tabs[1]));
  rlxm_arr *rot;
  if (neox) {
    rlxm_arr *p[2] = {y1, y2};
    rot = rlxm_concat(s, p, 2, 3);
  } else {
    int64_t d5[5] = {B, S, H, half, 1};
    rlxm_arr *p[2] = {rlxm_reshape(s, y1, 5, d5), rlxm_reshape(s, y2, 5, d5)};
    rot = rlxm_reshape(s, rlxm_concat(s, p, 2, 4), 4, (int64_t[]){B, S, H, nr});
  }
  if (nr < hd) {
    rlxm_arr *p[2] = {rot, rlxm_narrow(s, x, 3, nr, hd - nr, 1)};
    rot = rlxm_concat(s, p, 2, 3);
  }
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_reshape(s, rot, n->shape.rank, d), out);
}

const mlx_lower_fn mlx_lower_nn[RLX_OP_COUNT] = {
    [RLX_OP_LayerNorm] = lower_LayerNorm,
    [RLX_OP_RmsNorm] = lower_RmsNorm,
    [RLX_OP_Attention] = lower_Attention,
    [RLX_OP_Conv] = lower_Conv,
    [RLX_OP_Conv3d] = lower_Conv3d,
    [RLX_OP_Pool] = lower_Pool,
    [RLX_OP_Rope] = lower_Rope,
    [RLX_OP_MaxPool2dBackward] = lower_MaxPool2dBackward,
    [RLX_OP_LayerNorm2d] = lower_LayerNorm2d,
    [RLX_OP_Im2Col] = lower_Im2Col,
};
