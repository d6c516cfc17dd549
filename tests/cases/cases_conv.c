/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: convolution, pooling and resampling (Conv, Conv3d, Im2Col, ConvTranspose2d,
 * ConvTranspose3d, Pool, ResizeNearest2x, Interpolate3d), NCHW / NCDHW. Geometry lists: stride and
 * dilation empty = 1; padding empty = 0, one entry per spatial axis (symmetric) or
 * [begin..., end...]. See cases.h for the row format. */
#include "cases.h"

#define CONV(K, S, P, D, G) AT(Conv, .kernel_size = K, .stride = S, .padding = P, .dilation = D, .groups = G)
#define CONV3(S, P, D, G) AT(Conv3d, .stride = S, .padding = P, .dilation = D, .groups = G)
#define CONVT(K, S, P, D, OP, G) \
  AT(ConvTranspose2d, .kernel_size = K, .stride = S, .padding = P, .dilation = D, .output_padding = OP, .groups = G)
#define CONVT3(S, P, D, OP, G) \
  AT(ConvTranspose3d, .stride = S, .padding = P, .dilation = D, .output_padding = OP, .groups = G)
#define POOL(KIND, K, S, P) AT(Pool, .kind = RLX_REDUCE_##KIND, .kernel_size = K, .stride = S, .padding = P)
#define IM2COL(K, S, P, D) AT(Im2Col, .kernel_size = K, .stride = S, .padding = P, .dilation = D)

static const conf_case conf_cases_conv[] = {
    /* ---- Conv ---- */
    {"conv_basic_pad1",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL0, IL(1, 1), IL0, 1),
     2,
     {IN(F32, 1, 3, 5, 5), IN(F32, 4, 3, 3, 3)}},
    {"conv_stride2", RLX_OP_Conv, CONV(IL(3, 3), IL(2, 2), IL0, IL0, 1), 2, {IN(F32, 2, 2, 7, 6), IN(F32, 3, 2, 3, 3)}},
    {"conv_groups2", RLX_OP_Conv, CONV(IL(3, 3), IL0, IL(1, 1), IL0, 2), 2, {IN(F32, 2, 4, 6, 6), IN(F32, 6, 2, 3, 3)}},
    {"conv_depthwise",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL(1, 1), IL(1, 1), IL(1, 1), 3),
     2,
     {IN(F32, 1, 3, 5, 5), IN(F32, 3, 1, 3, 3)}},
    {"conv_dilation2",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL0, IL(2, 2), IL(2, 2), 1),
     2,
     {IN(F32, 1, 2, 6, 7), IN(F32, 2, 2, 3, 3)}},
    {"conv_asym_padding",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL0, IL(1, 0, 2, 1), IL0, 1),
     2,
     {IN(F32, 1, 2, 4, 5), IN(F32, 3, 2, 3, 3)}},
    {"conv_all_features",
     RLX_OP_Conv,
     CONV(IL(3, 2), IL(2, 1), IL(1, 2, 0, 1), IL(1, 2), 2),
     2,
     {IN(F32, 2, 4, 7, 6), IN(F32, 4, 2, 3, 2)}},
    {"conv_1x1_stride",
     RLX_OP_Conv,
     CONV(IL(1, 1), IL(2, 1), IL0, IL0, 1),
     2,
     {IN(F32, 1, 3, 4, 3), IN(F32, 5, 3, 1, 1)}},
    {"conv_kernel_from_weight",
     RLX_OP_Conv,
     CONV(IL0, IL0, IL0, IL0, 1),
     2,
     {IN(F32, 1, 1, 4, 4), IN(F32, 2, 1, 2, 3)}},
    {"conv_f64",
     RLX_OP_Conv,
     CONV(IL(2, 2), IL(1, 1), IL(1, 1), IL0, 1),
     2,
     {IN(F64, 1, 2, 3, 3), IN(F64, 2, 2, 2, 2)}},
    {"conv_f16", RLX_OP_Conv, CONV(IL(3, 3), IL0, IL(1, 1), IL0, 1), 2, {IN(F16, 1, 2, 4, 4), IN(F16, 2, 2, 3, 3)}},
    {"conv_param_weight",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL0, IL(1, 1), IL0, 1),
     2,
     {IN(F32, 2, 2, 4, 4), PARAM(F32, 3, 2, 3, 3)}},
    {"conv_bf16", RLX_OP_Conv, CONV(IL(3, 3), IL0, IL0, IL0, 1), 2, {IN(BF16, 1, 2, 4, 4), IN(BF16, 2, 2, 3, 3)}},
    {"conv_larger",
     RLX_OP_Conv,
     CONV(IL(3, 3), IL(2, 2), IL(1, 1), IL0, 2),
     2,
     {IN(F32, 2, 8, 17, 17), IN(F32, 16, 4, 3, 3)}},

    /* ---- Conv3d ---- */
    {"conv3d_basic",
     RLX_OP_Conv3d,
     CONV3(IL0, IL(1, 1, 1), IL0, 1),
     2,
     {IN(F32, 1, 2, 3, 4, 4), IN(F32, 3, 2, 3, 3, 3)}},
    {"conv3d_stride_groups",
     RLX_OP_Conv3d,
     CONV3(IL(2, 1, 2), IL(0, 1, 1), IL0, 2),
     2,
     {IN(F32, 1, 4, 4, 3, 5), IN(F32, 2, 2, 2, 3, 3)}},
    {"conv3d_dilation_asym",
     RLX_OP_Conv3d,
     CONV3(IL0, IL(1, 0, 1, 0, 1, 0), IL(1, 2, 1), 1),
     2,
     {IN(F64, 1, 1, 3, 5, 3), IN(F64, 2, 1, 2, 2, 2)}},

    /* ---- Im2Col (columns ordered c, kh, kw) ---- */
    {"im2col_basic", RLX_OP_Im2Col, IM2COL(IL(2, 2), IL0, IL0, IL0), 1, {IN(F32, 1, 2, 4, 4)}},
    {"im2col_stride_pad", RLX_OP_Im2Col, IM2COL(IL(3, 3), IL(2, 2), IL(1, 1), IL0), 1, {IN(F32, 2, 2, 5, 5)}},
    {"im2col_dilation", RLX_OP_Im2Col, IM2COL(IL(2, 3), IL(1, 1), IL(0, 1), IL(2, 1)), 1, {IN(F64, 1, 1, 5, 4)}},

    /* ---- ConvTranspose2d ---- */
    {"conv_t2d_basic",
     RLX_OP_ConvTranspose2d,
     CONVT(IL(3, 3), IL0, IL0, IL0, IL0, 1),
     2,
     {IN(F32, 1, 2, 3, 3), IN(F32, 2, 3, 3, 3)}},
    {"conv_t2d_stride_pad_outpad",
     RLX_OP_ConvTranspose2d,
     CONVT(IL(3, 3), IL(2, 2), IL(1, 1), IL0, IL(1, 1), 1),
     2,
     {IN(F32, 1, 4, 3, 3), IN(F32, 4, 2, 3, 3)}},
    {"conv_t2d_groups",
     RLX_OP_ConvTranspose2d,
     CONVT(IL(2, 2), IL(2, 2), IL0, IL0, IL0, 2),
     2,
     {IN(F32, 2, 4, 3, 2), IN(F32, 4, 3, 2, 2)}},
    {"conv_t2d_dilation",
     RLX_OP_ConvTranspose2d,
     CONVT(IL(2, 3), IL(1, 2), IL(0, 1), IL(2, 1), IL0, 1),
     2,
     {IN(F64, 1, 2, 3, 4), IN(F64, 2, 2, 2, 3)}},
    {"conv_t2d_asym_pad",
     RLX_OP_ConvTranspose2d,
     CONVT(IL(3, 3), IL(2, 2), IL(1, 0, 0, 1), IL0, IL0, 1),
     2,
     {IN(F32, 1, 1, 3, 3), IN(F32, 1, 2, 3, 3)}},

    /* ---- ConvTranspose3d ---- */
    {"conv_t3d_basic",
     RLX_OP_ConvTranspose3d,
     CONVT3(IL(2, 2, 2), IL0, IL0, IL0, 1),
     2,
     {IN(F32, 1, 2, 2, 3, 3), IN(F32, 2, 3, 2, 2, 2)}},
    {"conv_t3d_groups_pad",
     RLX_OP_ConvTranspose3d,
     CONVT3(IL(1, 2, 2), IL(0, 1, 1), IL0, IL(0, 1, 0), 2),
     2,
     {IN(F32, 1, 4, 2, 3, 2), IN(F32, 4, 1, 2, 3, 3)}},

    /* ---- Pool ---- */
    {"pool_max_2x2", RLX_OP_Pool, POOL(MAX, IL(2, 2), IL(2, 2), IL0), 1, {IN(F32, 1, 2, 4, 6)}},
    {"pool_max_pad", RLX_OP_Pool, POOL(MAX, IL(3, 3), IL(2, 2), IL(1, 1)), 1, {INF(F32, CF_NORMAL, 1, -3, 2, 2, 5, 5)}},
    {"pool_max_default_stride", RLX_OP_Pool, POOL(MAX, IL(2, 3), IL0, IL0), 1, {IN(F64, 1, 1, 4, 6)}},
    {"pool_mean_3x3_pad", RLX_OP_Pool, POOL(MEAN, IL(3, 3), IL(1, 1), IL(1, 1)), 1, {IN(F32, 1, 2, 4, 4)}},
    {"pool_mean_2x2", RLX_OP_Pool, POOL(MEAN, IL(2, 2), IL(2, 2), IL0), 1, {IN(F32, 2, 1, 4, 4)}},
    {"pool_mean_asym", RLX_OP_Pool, POOL(MEAN, IL(2, 3), IL(1, 2), IL(1, 0, 0, 1)), 1, {IN(F32, 1, 1, 4, 5)}},
    {"pool_max_f16", RLX_OP_Pool, POOL(MAX, IL(2, 2), IL(1, 1), IL0), 1, {IN(F16, 1, 2, 3, 3)}},
    {"pool_max_i32", RLX_OP_Pool, POOL(MAX, IL(2, 2), IL(2, 2), IL0), 1, {IN(I32, 1, 1, 4, 4)}},

    /* ---- ResizeNearest2x / Interpolate3d ---- */
    {"resize_nearest2x", RLX_OP_ResizeNearest2x, NULL, 1, {IN(F32, 1, 2, 3, 4)}},
    {"resize_nearest2x_f16", RLX_OP_ResizeNearest2x, NULL, 1, {IN(F16, 2, 1, 2, 2)}},
    {"resize_nearest2x_i32", RLX_OP_ResizeNearest2x, NULL, 1, {IN(I32, 1, 1, 2, 3)}},
    {"interpolate3d_up", RLX_OP_Interpolate3d, AT(Interpolate3d, .size = IL(4, 5, 3)), 1, {IN(F32, 1, 2, 2, 3, 2)}},
    {"interpolate3d_down", RLX_OP_Interpolate3d, AT(Interpolate3d, .size = IL(2, 2, 3)), 1, {IN(F32, 1, 1, 5, 4, 7)}},
    {"interpolate3d_same", RLX_OP_Interpolate3d, AT(Interpolate3d, .size = IL(2, 3, 4)), 1, {IN(F64, 2, 1, 2, 3, 4)}},
};

#undef CONV
#undef CONV3
#undef CONVT
#undef CONVT3
#undef POOL
#undef IM2COL
