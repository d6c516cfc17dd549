/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of convolution ops: ConvTranspose2d as a stride-1 Conv over a dilated, padded
 * input with a flipped, regrouped weight (ir-core §10.10), and FusedConvBiasAct. */
#include "passes/decompose/decompose.h"

/* A 2-entry spatial attribute: empty = `def` on both axes, one entry = both axes. (Padding may also
 * hold 4 entries: begins, then ends.) */
static rlx_status pair(const rlx_node *n, const char *name, const rlx_ilist *l, int64_t def, int64_t out[2]) {
  if (l->n == 0)
    out[0] = out[1] = def;
  else if (l->n == 1)
    out[0] = out[1] = l->v[0];
  else if (l->n == 2)
    out[0] = l->v[0], out[1] = l->v[1];
  else
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: attribute %s has %u entries; expected 2 (H, W)", rlx_op_name(n->op),
                      name, l->n);
  return RLX_OK;
}

/* ConvTranspose2d, x [N, Cin, H, W], w [Cin, Cout/g, kH, kW]:
 *  1. dilate x by the stride: [N,C,H,1,W,1] -> pad to [N,C,H,sH,W,sW] with zeros -> [N,C,H*sH,W*sW]
 *     -> keep the first (H-1)*sH+1 rows and (W-1)*sW+1 columns;
 *  2. pad each spatial axis by d(k-1)-p_begin before and d(k-1)-p_end+output_padding after
 *     (negative amounts crop);
 *  3. weight: per group swap the channel axes and flip the kernel: [g, Cin/g, Cout/g, kH, kW] ->
 *     [g, Cout/g, Cin/g, kH, kW] -> [Cout, Cin/g, kH, kW], Reverse(kH, kW);
 *  4. Conv with stride 1, padding 0, the same dilation and groups. */
RLX_DECOMPOSE_DECL(ConvTranspose2d) {
  (void)src;
  const rlx_attrs_ConvTranspose2d *a = &n->attrs.ConvTranspose2d;
  rlx_shape xs = dc_shape(dst, in[0]), ws = dc_shape(dst, in[1]);
  if (xs.rank != 4 || ws.rank != 4) return rlx_errorf(RLX_ERR_INVALID_ARG, "ConvTranspose2d needs NCHW x and 4-D w");
  for (uint32_t i = 1; i < 4; i++)
    if (xs.dims[i] < 0 || ws.dims[i] < 0 || ws.dims[0] < 0)
      return dc_unsupported(n, "channel, spatial and kernel extents must be static");
  int64_t st[2], pb[2] = {0, 0}, pe[2], dl[2], op[2], ks[2] = {ws.dims[2], ws.dims[3]}, ka[2];
  RLX_TRY(pair(n, "stride", &a->stride, 1, st));
  if (a->padding.n == 4) { /* [begin_h, begin_w, end_h, end_w] */
    pb[0] = a->padding.v[0], pb[1] = a->padding.v[1], pe[0] = a->padding.v[2], pe[1] = a->padding.v[3];
  } else {
    RLX_TRY(pair(n, "padding", &a->padding, 0, pb));
    pe[0] = pb[0], pe[1] = pb[1];
  }
  RLX_TRY(pair(n, "dilation", &a->dilation, 1, dl));
  RLX_TRY(pair(n, "output_padding", &a->output_padding, 0, op));
  RLX_TRY(pair(n, "kernel_size", &a->kernel_size, 0, ka));
  int64_t g = a->groups, cin = xs.dims[1], coutg = ws.dims[1];
  if (g < 1 || cin % g || ws.dims[0] != cin)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "ConvTranspose2d: channels and groups disagree");
  for (int i = 0; i < 2; i++) {
    if (st[i] < 1 || dl[i] < 1 || pb[i] < 0 || pe[i] < 0 || op[i] < 0)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "ConvTranspose2d: stride/dilation must be >= 1, padding >= 0");
    if (ka[i] && ka[i] != ks[i])
      return rlx_errorf(RLX_ERR_INVALID_ARG, "ConvTranspose2d: attribute kernel_size disagrees with the weight");
  }
  rlx_dim N = xs.dims[0], H = xs.dims[2], W = xs.dims[3];
  rlx_id x = in[0];
  /* 1. dilation */
  if (st[0] > 1 || st[1] > 1) {
    rlx_dim d6[6] = {N, cin, H, 1, W, 1}, d4[4] = {N, cin, H * st[0], W * st[1]};
    RLX_TRY(rlx_reshape_dims(dst, x, 6, d6, &x));
    int64_t pads[12] = {0, 0, 0, 0, 0, 0, 0, st[0] - 1, 0, 0, 0, st[1] - 1};
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 12}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
    RLX_TRY(rlx_build_Pad(dst, &x, 1, &pa, NULL, &x));
    RLX_TRY(rlx_reshape_dims(dst, x, 4, d4, &x));
    if (st[0] > 1) RLX_TRY(rlx_narrow(dst, x, 2, 0, (H - 1) * st[0] + 1, &x));
    if (st[1] > 1) RLX_TRY(rlx_narrow(dst, x, 3, 0, (W - 1) * st[1] + 1, &x));
  }
  /* 2. border */
  int64_t lo[2], hi[2], ext[2] = {(H - 1) * st[0] + 1, (W - 1) * st[1] + 1};
  int64_t pads[8] = {0};
  bool any_pad = false;
  for (int i = 0; i < 2; i++) {
    lo[i] = dl[i] * (ks[i] - 1) - pb[i];
    hi[i] = dl[i] * (ks[i] - 1) - pe[i] + op[i];
    pads[4 + 2 * i] = lo[i] > 0 ? lo[i] : 0;
    pads[5 + 2 * i] = hi[i] > 0 ? hi[i] : 0;
    any_pad |= lo[i] > 0 || hi[i] > 0;
  }
  if (any_pad) {
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 8}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
    RLX_TRY(rlx_build_Pad(dst, &x, 1, &pa, NULL, &x));
  }
  for (int i = 0; i < 2; i++) {
    int64_t keep = ext[i] + lo[i] + hi[i];
    if (keep < 1) return rlx_errorf(RLX_ERR_INVALID_ARG, "ConvTranspose2d: the output would be empty");
    if (lo[i] < 0 || hi[i] < 0) RLX_TRY(rlx_narrow(dst, x, 2u + (uint32_t)i, lo[i] < 0 ? -lo[i] : 0, keep, &x));
  }
  /* 3. weight */
  rlx_id w = in[1];
  if (g == 1) {
    int64_t perm[4] = {1, 0, 2, 3};
    RLX_TRY(rlx_permute(dst, w, 4, perm, &w));
  } else {
    rlx_dim d5[5] = {g, cin / g, coutg, ks[0], ks[1]}, d4[4] = {g * coutg, cin / g, ks[0], ks[1]};
    int64_t perm[5] = {0, 2, 1, 3, 4};
    RLX_TRY(rlx_reshape_dims(dst, w, 5, d5, &w));
    RLX_TRY(rlx_permute(dst, w, 5, perm, &w));
    RLX_TRY(rlx_reshape_dims(dst, w, 4, d4, &w));
  }
  int64_t flip[2] = {2, 3};
  RLX_TRY(rlx_reverse_axes(dst, w, 2, flip, &w));
  /* 4. stride-1 convolution */
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  rlx_attrs_Conv c = {.kernel_size = {.v = ks, .n = 2},
                      .stride = {.v = one, .n = 2},
                      .padding = {.v = zero, .n = 2},
                      .dilation = {.v = dl, .n = 2},
                      .groups = g};
  rlx_id cin2[2] = {x, w};
  return rlx_build_Conv(dst, cin2, 2, &c, NULL, out);
}

/* FusedConvBiasAct: act(Conv(x, w) + bias [+ residual]) with bias as [Cout, 1, 1]. */
RLX_DECOMPOSE_DECL(FusedConvBiasAct) {
  (void)src;
  const rlx_attrs_FusedConvBiasAct *a = &n->attrs.FusedConvBiasAct;
  uint32_t want = a->has_residual ? 4u : 3u;
  if (n->n_inputs != want)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "FusedConvBiasAct: has %u operands, has_residual needs %u", n->n_inputs,
                      want);
  rlx_attrs_Conv c = {.kernel_size = a->kernel_size,
                      .stride = a->stride,
                      .padding = a->padding,
                      .dilation = a->dilation,
                      .groups = a->groups};
  rlx_id y, b;
  RLX_TRY(rlx_build_Conv(dst, in, 2, &c, NULL, &y));
  uint32_t spatial = dc_shape(dst, y).rank - 2u;
  RLX_TRY(dc_channel_vector(dst, in[2], spatial, &b));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, y, b, &y));
  if (a->has_residual) RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, y, in[3], &y));
  if (a->activation >= 0) RLX_TRY(rlx_activation(dst, (rlx_act)a->activation, y, &y));
  *out = y;
  return RLX_OK;
}
