/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: convolutions (Conv2dBackwardInput/Weight, Conv3dBackwardInput/Weight, with groups,
 * dilation and asymmetric padding), transposed convolutions (adjoints of convolutions), pooling
 * (MaxPool2dBackward; average pooling through a transposed convolution with a ones kernel),
 * nearest resampling, and the VJPs of the conv backward ops themselves (second order: they are
 * bilinear in their operands, so their adjoints are convolutions again). */
#include "autodiff/ad_internal.h"

/* Spatial kernel extents of weight w (axes 2..). */
static void weight_kernel(rlx_ad_ctx *c, rlx_id w, int64_t *k, uint32_t *nsp) {
  rlx_shape s = ad_shape(c, w);
  *nsp = s.rank - 2;
  for (uint32_t i = 0; i + 2 < s.rank; i++) k[i] = s.dims[2 + i];
}

typedef struct conv_geom {
  rlx_ilist stride, padding, dilation;
  int64_t groups;
} conv_geom;

/* Emits Conv (nsp = 2) or Conv3d (nsp = 3) of x with weight w. */
static rlx_status conv_fwd(rlx_ad_ctx *c, uint32_t nsp, rlx_id x, rlx_id w, const conv_geom *g, rlx_id *out) {
  rlx_id in[2] = {x, w};
  if (nsp == 2) {
    rlx_attrs_Conv a = {.kernel_size = {.v = NULL, .n = 0},
                        .stride = g->stride,
                        .padding = g->padding,
                        .dilation = g->dilation,
                        .groups = g->groups};
    return rlx_build_Conv(c->dst, in, 2, &a, NULL, out);
  }
  rlx_attrs_Conv3d a = {.stride = g->stride, .padding = g->padding, .dilation = g->dilation, .groups = g->groups};
  return rlx_build_Conv3d(c->dst, in, 2, &a, NULL, out);
}

/* d input of a convolution: [dy, w] -> x_shape. */
static rlx_status conv_bwd_input(rlx_ad_ctx *c, uint32_t nsp, rlx_id dy, rlx_id w, const conv_geom *g,
                                 const rlx_shape *x_shape, rlx_id *out) {
  int64_t k[3];
  uint32_t ns;
  weight_kernel(c, w, k, &ns);
  rlx_attrs_Conv2dBackwardInput a = {.kernel_size = {.v = k, .n = ns},
                                     .stride = g->stride,
                                     .padding = g->padding,
                                     .dilation = g->dilation,
                                     .groups = g->groups};
  rlx_id in[2] = {dy, w};
  return ad_emit(c, nsp == 2 ? RLX_OP_Conv2dBackwardInput : RLX_OP_Conv3dBackwardInput, in, 2, &a, x_shape, out);
}

/* d weight of a convolution: [x, dy] -> w_shape. */
static rlx_status conv_bwd_weight(rlx_ad_ctx *c, uint32_t nsp, rlx_id x, rlx_id dy, rlx_id w, const conv_geom *g,
                                  rlx_id *out) {
  int64_t k[3];
  uint32_t ns;
  weight_kernel(c, w, k, &ns);
  rlx_shape ws = ad_shape(c, w);
  rlx_attrs_Conv2dBackwardWeight a = {.kernel_size = {.v = k, .n = ns},
                                      .stride = g->stride,
                                      .padding = g->padding,
                                      .dilation = g->dilation,
                                      .groups = g->groups};
  rlx_id in[2] = {x, dy};
  return ad_emit(c, nsp == 2 ? RLX_OP_Conv2dBackwardWeight : RLX_OP_Conv3dBackwardWeight, in, 2, &a, &ws, out);
}

/* y = conv(x, w) */
static rlx_status conv_vjp(rlx_ad_ctx *c, uint32_t nsp, const conv_geom *g, const rlx_id *x, rlx_id dy, rlx_id *dx) {
  if (c->want[0]) {
    rlx_shape xs = ad_shape(c, x[0]);
    RLX_TRY(conv_bwd_input(c, nsp, dy, x[1], g, &xs, &dx[0]));
  }
  if (c->want[1]) RLX_TRY(conv_bwd_weight(c, nsp, x[0], dy, x[1], g, &dx[1]));
  return RLX_OK;
}

RLX_VJP_DECL(Conv) {
  (void)y;
  const rlx_attrs_Conv *a = &n->attrs.Conv;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return conv_vjp(c, 2, &g, x, dy, dx);
}

RLX_VJP_DECL(Conv3d) {
  (void)y;
  const rlx_attrs_Conv3d *a = &n->attrs.Conv3d;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return conv_vjp(c, 3, &g, x, dy, dx);
}

/* A transposed convolution is the input-adjoint of the convolution with the same weight:
 * y = convT(x, w)  =>  dx = conv(dy, w), dw = conv_backward_weight(x = dy, dy = x). */
static rlx_status conv_transpose_vjp(rlx_ad_ctx *c, uint32_t nsp, const conv_geom *g, const rlx_id *x, rlx_id dy,
                                     rlx_id *dx) {
  if (c->want[0]) RLX_TRY(conv_fwd(c, nsp, dy, x[1], g, &dx[0]));
  if (c->want[1]) RLX_TRY(conv_bwd_weight(c, nsp, dy, x[0], x[1], g, &dx[1]));
  return RLX_OK;
}

RLX_VJP_DECL(ConvTranspose2d) {
  (void)y;
  const rlx_attrs_ConvTranspose2d *a = &n->attrs.ConvTranspose2d;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return conv_transpose_vjp(c, 2, &g, x, dy, dx);
}

RLX_VJP_DECL(ConvTranspose3d) {
  (void)y;
  const rlx_attrs_ConvTranspose3d *a = &n->attrs.ConvTranspose3d;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return conv_transpose_vjp(c, 3, &g, x, dy, dx);
}

/* Second order. dx = BwInput(dy, w) is bilinear: d dy = conv(g, w), d w = BwWeight(x = g, dy). */
static rlx_status bwd_input_vjp(rlx_ad_ctx *c, uint32_t nsp, const conv_geom *g, const rlx_id *x, rlx_id dy,
                                rlx_id *dx) {
  if (c->want[0]) RLX_TRY(conv_fwd(c, nsp, dy, x[1], g, &dx[0]));
  if (c->want[1]) RLX_TRY(conv_bwd_weight(c, nsp, dy, x[0], x[1], g, &dx[1]));
  return RLX_OK;
}

/* dw = BwWeight(x, dy): d x = BwInput(dy, g) (g has w's shape), d dy = conv(x, g). */
static rlx_status bwd_weight_vjp(rlx_ad_ctx *c, uint32_t nsp, const conv_geom *g, const rlx_id *x, rlx_id dy,
                                 rlx_id *dx) {
  if (c->want[0]) {
    rlx_shape xs = ad_shape(c, x[0]);
    RLX_TRY(conv_bwd_input(c, nsp, x[1], dy, g, &xs, &dx[0]));
  }
  if (c->want[1]) RLX_TRY(conv_fwd(c, nsp, x[0], dy, g, &dx[1]));
  return RLX_OK;
}

RLX_VJP_DECL(Conv2dBackwardInput) {
  (void)y;
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return bwd_input_vjp(c, 2, &g, x, dy, dx);
}

RLX_VJP_DECL(Conv3dBackwardInput) {
  (void)y;
  const rlx_attrs_Conv3dBackwardInput *a = &n->attrs.Conv3dBackwardInput;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return bwd_input_vjp(c, 3, &g, x, dy, dx);
}

RLX_VJP_DECL(Conv2dBackwardWeight) {
  (void)y;
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return bwd_weight_vjp(c, 2, &g, x, dy, dx);
}

RLX_VJP_DECL(Conv3dBackwardWeight) {
  (void)y;
  const rlx_attrs_Conv3dBackwardWeight *a = &n->attrs.Conv3dBackwardWeight;
  conv_geom g = {a->stride, a->padding, a->dilation, a->groups};
  return bwd_weight_vjp(c, 3, &g, x, dy, dx);
}

/* Average pooling: dx = convT(dy / (kh kw), ones[1, 1, kh, kw]) on [N*C, 1, ...] planes, with the
 * output padding that recovers x's extents. */
static rlx_status mean_pool_vjp(rlx_ad_ctx *c, const rlx_attrs_Pool *a, rlx_id x, rlx_id dy, rlx_id *out) {
  rlx_shape xs = ad_shape(c, x), ys = ad_shape(c, dy);
  for (uint32_t i = 0; i < 4; i++)
    if (xs.dims[i] < 0) return ad_unsupported(c, "average pooling with symbolic extents");
  if (a->kernel_size.n != 2) return ad_unsupported(c, "attribute kernel_size needs 2 entries");
  int64_t k[2] = {a->kernel_size.v[0], a->kernel_size.v[1]}, s[2], pb[2] = {0, 0}, pe[2] = {0, 0}, op[2];
  for (uint32_t i = 0; i < 2; i++) {
    s[i] = a->stride.n == 2 ? a->stride.v[i] : k[i];
    if (a->padding.n == 2)
      pb[i] = pe[i] = a->padding.v[i];
    else if (a->padding.n == 4) {
      pb[i] = a->padding.v[i];
      pe[i] = a->padding.v[2 + i];
    }
    op[i] = xs.dims[2 + i] + pb[i] + pe[i] - k[i] - (ys.dims[2 + i] - 1) * s[i];
    if (op[i] < 0 || op[i] >= s[i]) return ad_unsupported(c, "inconsistent pooling geometry");
  }
  rlx_dim plane_in[4] = {ys.dims[0] * ys.dims[1], 1, ys.dims[2], ys.dims[3]};
  rlx_id g, ones;
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, dy, 1.0 / (double)(k[0] * k[1]), &g));
  RLX_TRY(ad_reshape_dims(c, g, 4, plane_in, &g));
  rlx_shape ws = rlx_shape_make((rlx_dtype)xs.dtype, 4, (const rlx_dim[]){1, 1, k[0], k[1]});
  RLX_TRY(ad_fill(c, &ws, 1.0, &ones));
  int64_t pads[4] = {pb[0], pb[1], pe[0], pe[1]};
  rlx_attrs_ConvTranspose2d ct;
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &ct);
  ct.kernel_size = (rlx_ilist){.v = k, .n = 2};
  ct.stride = (rlx_ilist){.v = s, .n = 2};
  ct.padding = (rlx_ilist){.v = pads, .n = 4};
  ct.output_padding = (rlx_ilist){.v = op, .n = 2};
  ct.groups = 1;
  rlx_id in[2] = {g, ones}, r;
  RLX_TRY(rlx_build_ConvTranspose2d(c->dst, in, 2, &ct, NULL, &r));
  return ad_reshape(c, r, &xs, out);
}

RLX_VJP_DECL(Pool) {
  (void)y;
  const rlx_attrs_Pool *a = &n->attrs.Pool;
  if (a->kind == RLX_REDUCE_MEAN) return mean_pool_vjp(c, a, x[0], dy, &dx[0]);
  if (a->kind != RLX_REDUCE_MAX) return ad_unsupported(c, "only Max and Mean pooling are differentiable");
  rlx_attrs_MaxPool2dBackward b = {.kernel_size = a->kernel_size, .stride = a->stride, .padding = a->padding};
  rlx_id in[2] = {x[0], dy};
  return ad_emit(c, RLX_OP_MaxPool2dBackward, in, 2, &b, NULL, &dx[0]);
}

/* Each input pixel feeds a 2x2 block: sum the blocks. */
RLX_VJP_DECL(ResizeNearest2x) {
  (void)n;
  (void)y;
  rlx_shape xs = ad_shape(c, x[0]);
  rlx_dim d[6] = {xs.dims[0], xs.dims[1], xs.dims[2], 2, xs.dims[3], 2};
  int64_t axes[2] = {3, 5};
  rlx_id t;
  RLX_TRY(ad_reshape_dims(c, dy, 6, d, &t));
  return ad_reduce(c, RLX_REDUCE_SUM, t, 2, axes, false, &dx[0]);
}

/* Nearest 3-D resize is separable: a Gather along D, H and W with constant source indices
 * min(floor(o * in / out), in - 1); its VJP scatters back one axis at a time. */
RLX_VJP_DECL(Interpolate3d) {
  (void)n;
  (void)y;
  rlx_shape xs = ad_shape(c, x[0]), gs = ad_shape(c, dy);
  for (uint32_t i = 0; i < 5; i++)
    if (xs.dims[i] < 0 || gs.dims[i] < 0) return ad_unsupported(c, "a resize with symbolic extents");
  rlx_id g = dy;
  for (uint32_t ax = 4; ax >= 2; ax--) {
    int64_t in_n = xs.dims[ax], out_n = gs.dims[ax];
    if (in_n == out_n) continue;
    int64_t *idx = c->al->alloc(c->al->ctx, (size_t)(out_n ? out_n : 1) * sizeof *idx);
    if (!idx) return rlx_errorf(RLX_ERR_OOM, "out of memory building resize indices");
    for (int64_t o = 0; o < out_n; o++) {
      unsigned __int128 v = (unsigned __int128)o * (uint64_t)in_n / (uint64_t)out_n;
      idx[o] = v >= (unsigned __int128)in_n ? in_n - 1 : (int64_t)v;
    }
    rlx_shape is = rlx_shape_make(RLX_I64, 1, &out_n);
    rlx_id ic;
    rlx_status st = rlx_constant(c->dst, is, idx, (size_t)out_n * sizeof *idx, &ic);
    c->al->free(c->al->ctx, idx);
    RLX_TRY(st);
    rlx_shape to = ad_shape(c, g);
    to.dims[ax] = in_n;
    rlx_attrs_GatherBackward a = {.axis = ax};
    rlx_id in[2] = {g, ic};
    RLX_TRY(ad_emit(c, RLX_OP_GatherBackward, in, 2, &a, &to, &g));
  }
  dx[0] = g;
  return RLX_OK;
}

/* Im2Col(x)[(n, ho, wo), (c, i, j)] = x_padded[n, c, ho s + i d, wo s + j d] is a convolution
 * with the "identity" weight E[(c, i, j), c', i', j'] = [c = c', i = i', j = j']: its VJP is
 * Conv2dBackwardInput of the gradient (viewed [N, C kh kw, Ho, Wo]) with E. */
RLX_VJP_DECL(Im2Col) {
  (void)y;
  const rlx_attrs_Im2Col *a = &n->attrs.Im2Col;
  rlx_shape xs = ad_shape(c, x[0]);
  for (uint32_t i = 0; i < 4; i++)
    if (xs.dims[i] < 0) return ad_unsupported(c, "Im2Col with symbolic extents");
  if (a->kernel_size.n != 2) return ad_unsupported(c, "attribute kernel_size needs 2 entries");
  int64_t k[2] = {a->kernel_size.v[0], a->kernel_size.v[1]}, st[2], di[2], pb[2] = {0, 0}, pe[2] = {0, 0}, o[2];
  for (uint32_t i = 0; i < 2; i++) {
    st[i] = a->stride.n == 2 ? a->stride.v[i] : 1;
    di[i] = a->dilation.n == 2 ? a->dilation.v[i] : 1;
    if (a->padding.n == 2)
      pb[i] = pe[i] = a->padding.v[i];
    else if (a->padding.n == 4) {
      pb[i] = a->padding.v[i];
      pe[i] = a->padding.v[2 + i];
    }
    o[i] = (xs.dims[2 + i] + pb[i] + pe[i] - di[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  int64_t C = xs.dims[1], K = C * k[0] * k[1];
  if (K > 1024) return ad_unsupported(c, "Im2Col with more than 1024 columns (C kh kw = %lld)", (long long)K);
  rlx_id g, e;
  RLX_TRY(ad_reshape_dims(c, dy, 4, (rlx_dim[]){xs.dims[0], o[0], o[1], K}, &g));
  RLX_TRY(ad_transpose(c, g, 4, (const int64_t[]){0, 3, 1, 2}, &g));
  size_t ne = (size_t)K * (size_t)K;
  double *v = c->al->alloc(c->al->ctx, ne * sizeof *v);
  if (!v) return rlx_errorf(RLX_ERR_OOM, "out of memory building an Im2Col adjoint");
  for (size_t i = 0; i < ne; i++) v[i] = 0.0;
  for (int64_t r = 0; r < K; r++) v[(size_t)r * (size_t)K + (size_t)r] = 1.0; /* E[r, c, i, j] with (c, i, j) = r */
  rlx_shape es = rlx_shape_make((rlx_dtype)xs.dtype, 4, (const rlx_dim[]){K, C, k[0], k[1]});
  rlx_status s = ad_const_values(c, &es, v, &e);
  c->al->free(c->al->ctx, v);
  RLX_TRY(s);
  rlx_attrs_Conv2dBackwardInput b = {.kernel_size = {.v = k, .n = 2},
                                     .stride = a->stride,
                                     .padding = a->padding,
                                     .dilation = a->dilation,
                                     .groups = 1};
  rlx_id in[2] = {g, e};
  return ad_emit(c, RLX_OP_Conv2dBackwardInput, in, 2, &b, &xs, &dx[0]);
}
