/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the convolution and pooling ops. Every expected extent is worked out by hand in
 * the comment next to it from out = floor((in + pb + pe - d*(k-1) - 1)/s) + 1 (transposed:
 * (in-1)*s - pb - pe + d*(k-1) + output_padding + 1). */
#include "infer_test.h"
#include "rlx/verify.h"

static void test_conv(void) {
  rlx_attrs_Conv a;
  rlx_attrs_init(RLX_OP_Conv, &a);
  /* 32 - 3 + 1 = 30 */
  EXPECT(Conv, &a, NULL, SH(F32, 2, 8, 30, 30), SH(F32, 2, 3, 32, 32), SH(F32, 8, 3, 3, 3));
  /* stride 2, symmetric pad 1: (32 + 2 - 3)/2 + 1 = 15 + 1 = 16 */
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  EXPECT(Conv, &a, NULL, SH(F32, 2, 8, 16, 16), SH(F32, 2, 3, 32, 32), SH(F32, 8, 3, 3, 3));
  /* asymmetric [bh=0, bw=1, eh=2, ew=3], stride 1: H 32+0+2-3+1 = 32, W 32+1+3-3+1 = 34 */
  a.stride = NOLIST;
  a.padding = IL(0, 1, 2, 3);
  EXPECT(Conv, &a, NULL, SH(F32, 1, 8, 32, 34), SH(F32, 1, 3, 32, 32), SH(F32, 8, 3, 3, 3));
  /* dilation 2 with kernel 3 spans 5: 32 - 5 + 1 = 28; kernel_size given and matching */
  a.padding = NOLIST;
  a.dilation = IL(2, 2);
  a.kernel_size = IL(3, 3);
  EXPECT(Conv, &a, NULL, SH(F16, 1, 8, 28, 28), SH(F16, 1, 3, 32, 32), SH(F16, 8, 3, 3, 3));
  /* non-square kernel and strides: H (10-3)/3+1 = 3, W (9-1)/2+1 = 5 */
  rlx_attrs_init(RLX_OP_Conv, &a);
  a.stride = IL(3, 2);
  EXPECT(Conv, &a, NULL, SH(F32, 1, 4, 3, 5), SH(F32, 1, 2, 10, 9), SH(F32, 4, 2, 3, 1));
  /* groups 2: weight axis 1 = 4/2 */
  rlx_attrs_init(RLX_OP_Conv, &a);
  a.groups = 2;
  EXPECT(Conv, &a, NULL, SH(F32, 1, 6, 6, 6), SH(F32, 1, 4, 8, 8), SH(F32, 6, 2, 3, 3));
  /* depthwise: groups = C_in = C_out */
  a.groups = 4;
  EXPECT(Conv, &a, NULL, SH(F32, 1, 4, 6, 6), SH(F32, 1, 4, 8, 8), SH(F32, 4, 1, 3, 3));
  /* symbolic batch passes through; a "same" geometry keeps a symbolic spatial dim */
  rlx_attrs_init(RLX_OP_Conv, &a);
  EXPECT(Conv, &a, NULL, SH(F32, SYM(0), 8, 6, 6), SH(F32, SYM(0), 3, 8, 8), SH(F32, 8, 3, 3, 3));
  a.padding = IL(1, 1);
  EXPECT(Conv, &a, NULL, SH(F32, 1, 8, SYM(1), 8), SH(F32, 1, 3, SYM(1), 8), SH(F32, 8, 3, 3, 3));
  /* a symbolic extent that the geometry changes needs the declared shape */
  a.stride = IL(2, 2);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "symbolic", SH(F32, 1, 3, SYM(1), 8), SH(F32, 8, 3, 3, 3));
  rlx_shape decl = SH(F32, 1, 8, SYM(5), 4);
  EXPECT(Conv, &a, &decl, SH(F32, 1, 8, SYM(5), 4), SH(F32, 1, 3, SYM(1), 8), SH(F32, 8, 3, 3, 3));
  /* symbolic C_in with groups 1 must be the weight's symbol */
  rlx_attrs_init(RLX_OP_Conv, &a);
  EXPECT(Conv, &a, NULL, SH(F32, 1, 8, 6, 6), SH(F32, 1, SYM(3), 8, 8), SH(F32, 8, SYM(3), 3, 3));
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 1, SYM(3), 8, 8), SH(F32, 8, 3, 3, 3));
}

static void test_conv_errors(void) {
  rlx_attrs_Conv a;
  rlx_attrs_init(RLX_OP_Conv, &a);
  rlx_shape x = SH(F32, 1, 3, 8, 8), w = SH(F32, 8, 3, 3, 3);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 3, 8, 8), w);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 1 (weight)", x, SH(F32, 8, 3, 3));
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 1 has dtype f16", x, SH(F16, 8, 3, 3, 3));
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 0 has dtype i32", SH(I32, 1, 3, 8, 8), SH(I32, 8, 3, 3, 3));
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 1, 4, 8, 8), w); /* C_in 4 vs 3 */
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "smaller than the dilated kernel", SH(F32, 1, 3, 2, 8), w);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "kernel dims", x, SH(F32, 8, 3, 0, 3));
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "kernel dims", x, SH(F32, 8, 3, SYM(0), 3));
  a.stride = IL(0, 1);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute stride", x, w);
  a.stride = IL(1, 1, 1);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute stride has 3 entries", x, w);
  a.stride = IL((int64_t)1 << 40, 1);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute stride", x, w);
  a.stride = NOLIST;
  a.dilation = IL(1, 0);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute dilation", x, w);
  a.dilation = NOLIST;
  a.padding = IL(1, 1, 1);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute padding has 3 entries", x, w);
  a.padding = IL(1, -1);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute padding", x, w);
  a.padding = NOLIST;
  a.kernel_size = IL(5, 5);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute kernel_size", x, w);
  a.kernel_size = IL(3);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute kernel_size has 1 entries", x, w);
  a.kernel_size = NOLIST;
  a.groups = 0;
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute groups", x, w);
  a.groups = 2; /* C_in 3 is odd */
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute groups", x, SH(F32, 8, 1, 3, 3));
  /* C_out 5 is odd */
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute groups", SH(F32, 1, 4, 8, 8), SH(F32, 5, 2, 3, 3));
  /* dilation makes the kernel too wide: span 2*(3-1)+1 = 5 > 4 */
  rlx_attrs_init(RLX_OP_Conv, &a);
  a.dilation = IL(2, 2);
  EXPECT_ERR(Conv, &a, NULL, SHAPE_ERR, "attribute", SH(F32, 1, 3, 4, 8), w);
}

static void test_conv3d(void) {
  rlx_attrs_Conv3d a;
  rlx_attrs_init(RLX_OP_Conv3d, &a);
  /* stride 2: (8-3)/2+1 = 3 */
  a.stride = IL(2, 2, 2);
  EXPECT(Conv3d, &a, NULL, SH(F32, 1, 4, 3, 3, 3), SH(F32, 1, 2, 8, 8, 8), SH(F32, 4, 2, 3, 3, 3));
  /* asymmetric [bd=1, bh=0, bw=0, ed=0, eh=1, ew=2]: D 8+1-3+1 = 7, H 8+1-3+1 = 7, W 8+2-3+1 = 8 */
  rlx_attrs_init(RLX_OP_Conv3d, &a);
  a.padding = IL(1, 0, 0, 0, 1, 2);
  EXPECT(Conv3d, &a, NULL, SH(F32, 1, 4, 7, 7, 8), SH(F32, 1, 2, 8, 8, 8), SH(F32, 4, 2, 3, 3, 3));
  /* groups 2, kernel (1, 3, 5): D 4, H 6, W 4 */
  rlx_attrs_init(RLX_OP_Conv3d, &a);
  a.groups = 2;
  EXPECT(Conv3d, &a, NULL, SH(F32, 2, 6, 4, 6, 4), SH(F32, 2, 4, 4, 8, 8), SH(F32, 6, 2, 1, 3, 5));
  rlx_attrs_init(RLX_OP_Conv3d, &a);
  a.stride = IL(2, 2);
  EXPECT_ERR(Conv3d, &a, NULL, SHAPE_ERR, "attribute stride has 2 entries; expected 3", SH(F32, 1, 2, 8, 8, 8),
             SH(F32, 4, 2, 3, 3, 3));
  a.stride = NOLIST;
  a.padding = IL(1, 1, 1, 1);
  EXPECT_ERR(Conv3d, &a, NULL, SHAPE_ERR, "attribute padding has 4 entries", SH(F32, 1, 2, 8, 8, 8),
             SH(F32, 4, 2, 3, 3, 3));
  a.padding = NOLIST;
  EXPECT_ERR(Conv3d, &a, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 1, 2, 8, 8), SH(F32, 4, 2, 3, 3, 3));
  EXPECT_ERR(Conv3d, &a, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 1, 2, 8, 8, 8), SH(F32, 4, 3, 3, 3, 3));
}

static void test_conv_transpose(void) {
  rlx_attrs_ConvTranspose2d a;
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  /* (5-1)*2 - 1 - 1 + 1*(3-1) + 1 + 1 = 10 */
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  a.output_padding = IL(1, 1);
  EXPECT(ConvTranspose2d, &a, NULL, SH(F32, 1, 3, 10, 10), SH(F32, 1, 4, 5, 5), SH(F32, 4, 3, 3, 3));
  /* groups 2: C_out = 3 * 2; (5-1) + 2 + 1 = 7 */
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  a.groups = 2;
  EXPECT(ConvTranspose2d, &a, NULL, SH(F32, 1, 6, 7, 7), SH(F32, 1, 4, 5, 5), SH(F32, 4, 3, 3, 3));
  /* dilation 2: (5-1) + 2*2 + 1 = 9; output_padding 1 < max(stride 1, dilation 2) */
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  a.dilation = IL(2, 2);
  a.output_padding = IL(1, 0);
  EXPECT(ConvTranspose2d, &a, NULL, SH(F32, 1, 3, 10, 9), SH(F32, 1, 4, 5, 5), SH(F32, 4, 3, 3, 3));
  /* asymmetric [bh=2, bw=0, eh=0, ew=1]: H 4-2+2+1 = 5, W 4-1+2+1 = 6 */
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  a.padding = IL(2, 0, 0, 1);
  a.kernel_size = IL(3, 3);
  EXPECT(ConvTranspose2d, &a, NULL, SH(F32, 1, 3, 5, 6), SH(F32, 1, 4, 5, 5), SH(F32, 4, 3, 3, 3));
  /* "same" geometry keeps a symbolic extent: s 1, pads 1+1 = d*(k-1) */
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  a.padding = IL(1, 1);
  EXPECT(ConvTranspose2d, &a, NULL, SH(F32, SYM(0), 3, SYM(1), 5), SH(F32, SYM(0), 4, SYM(1), 5), SH(F32, 4, 3, 3, 3));
  /* errors */
  rlx_shape x = SH(F32, 1, 4, 5, 5), w = SH(F32, 4, 3, 3, 3);
  rlx_attrs_init(RLX_OP_ConvTranspose2d, &a);
  a.stride = IL(2, 2);
  a.output_padding = IL(2, 0);
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute output_padding", x, w);
  a.stride = NOLIST;
  a.output_padding = IL(1, 1); /* max(stride 1, dilation 1) = 1 */
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute output_padding", x, w);
  a.output_padding = IL(0);
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute output_padding has 1 entries", x, w);
  a.output_padding = NOLIST;
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "operand 1 (weight)", SH(F32, 1, 5, 5, 5), w);
  a.groups = 3;
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute groups", x, w);
  a.groups = 1;
  a.kernel_size = IL(2, 2);
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute kernel_size", x, w);
  a.kernel_size = NOLIST;
  a.padding = IL(1, 1); /* 1x1 input, 1x1 kernel: 0 - 2 + 0 + 1 = -1 */
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "attribute padding", SH(F32, 1, 4, 1, 1), SH(F32, 4, 3, 1, 1));
  a.padding = NOLIST;
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "extent 0", SH(F32, 1, 4, 0, 5), w);
  EXPECT_ERR(ConvTranspose2d, &a, NULL, SHAPE_ERR, "operand 1 has dtype bf16", x, SH(BF16, 4, 3, 3, 3));

  rlx_attrs_ConvTranspose3d b;
  rlx_attrs_init(RLX_OP_ConvTranspose3d, &b);
  /* (3-1)*2 + (2-1) + 1 = 6 */
  b.stride = IL(2, 2, 2);
  EXPECT(ConvTranspose3d, &b, NULL, SH(F32, 1, 4, 6, 6, 6), SH(F32, 1, 2, 3, 3, 3), SH(F32, 2, 4, 2, 2, 2));
  /* groups 2, output_padding (1, 0, 1): D 6+1 = 7, H 6, W 7; C_out 4*2 */
  b.groups = 2;
  b.output_padding = IL(1, 0, 1);
  EXPECT(ConvTranspose3d, &b, NULL, SH(F32, 1, 8, 7, 6, 7), SH(F32, 1, 2, 3, 3, 3), SH(F32, 2, 4, 2, 2, 2));
  b.output_padding = IL(1, 1);
  EXPECT_ERR(ConvTranspose3d, &b, NULL, SHAPE_ERR, "attribute output_padding has 2 entries", SH(F32, 1, 2, 3, 3, 3),
             SH(F32, 2, 4, 2, 2, 2));
  b.output_padding = NOLIST;
  EXPECT_ERR(ConvTranspose3d, &b, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 1, 2, 3, 3), SH(F32, 2, 4, 2, 2, 2));
}

static void test_pool(void) {
  rlx_attrs_Pool a;
  rlx_attrs_init(RLX_OP_Pool, &a);
  /* kernel 2, stride defaults to 2: 8/2 = 4 */
  a.kind = RLX_REDUCE_MAX;
  a.kernel_size = IL(2, 2);
  EXPECT(Pool, &a, NULL, SH(F32, 1, 3, 4, 4), SH(F32, 1, 3, 8, 8));
  /* mean, kernel 3, stride 1, pad 1: 8 + 2 - 3 + 1 = 8 */
  a.kind = RLX_REDUCE_MEAN;
  a.kernel_size = IL(3, 3);
  a.stride = IL(1, 1);
  a.padding = IL(1, 1);
  EXPECT(Pool, &a, NULL, SH(F32, 2, 3, 8, 8), SH(F32, 2, 3, 8, 8));
  /* kernel 3 stride 2 padding [0, 0, 1, 1]: (8 + 1 - 3)/2 + 1 = 4; integer input keeps its dtype */
  a.kind = RLX_REDUCE_MAX;
  a.stride = IL(2, 2);
  a.padding = IL(0, 0, 1, 1);
  EXPECT(Pool, &a, NULL, SH(I8, 1, 3, 4, 4), SH(I8, 1, 3, 8, 8));
  /* kernel (2, 4), stride defaults to it: 6/2 = 3, 8/4 = 2 */
  rlx_attrs_init(RLX_OP_Pool, &a);
  a.kernel_size = IL(2, 4);
  EXPECT(Pool, &a, NULL, SH(F32, SYM(0), 3, 3, 2), SH(F32, SYM(0), 3, 6, 8));
  /* errors */
  rlx_shape x = SH(F32, 1, 3, 8, 8);
  a.kind = RLX_REDUCE_SUM;
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute kind is Sum", x);
  a.kind = 42;
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute kind", x);
  a.kind = RLX_REDUCE_MAX;
  a.kernel_size = NOLIST;
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute kernel_size", x);
  a.kernel_size = IL(2, 2);
  a.padding = IL(2, 2);
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute padding", x);
  a.padding = IL(0, 0, 0, 2);
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute padding", x);
  a.padding = NOLIST;
  a.stride = IL(0, 2);
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "attribute stride", x);
  a.stride = NOLIST;
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 3, 8, 8));
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "operand 0 has dtype bool", SH(BOOL, 1, 3, 8, 8));
  a.kernel_size = IL(9, 2);
  EXPECT_ERR(Pool, &a, NULL, SHAPE_ERR, "smaller than the dilated kernel", x);
}

static void test_im2col(void) {
  rlx_attrs_Im2Col a;
  rlx_attrs_init(RLX_OP_Im2Col, &a);
  a.kernel_size = IL(3, 3);
  /* Ho = Wo = 6: rows 2*6*6 = 72, cols 3*3*3 = 27 */
  EXPECT(Im2Col, &a, NULL, SH(F32, 72, 27), SH(F32, 2, 3, 8, 8));
  /* stride 2 pad 1: (8+2-3)/2+1 = 4 -> rows 2*16 = 32 */
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  EXPECT(Im2Col, &a, NULL, SH(F32, 32, 27), SH(F32, 2, 3, 8, 8));
  /* kernel (1, 2) on C=5: cols 10; Ho = 8, Wo = 7 -> rows 56 */
  rlx_attrs_init(RLX_OP_Im2Col, &a);
  a.kernel_size = IL(1, 2);
  EXPECT(Im2Col, &a, NULL, SH(F32, 56, 10), SH(F32, 1, 5, 8, 8));
  /* a symbolic batch makes the row count the ROWS symbol */
  a.kernel_size = IL(3, 3);
  EXPECT(Im2Col, &a, NULL, SH(F32, SYM(RLX_SYM_ROWS), 27), SH(F32, SYM(0), 3, 8, 8));
  /* symbolic channels: the declared shape supplies the width */
  rlx_shape decl = SH(F32, 36, 27);
  EXPECT(Im2Col, &a, &decl, SH(F32, 36, 27), SH(F32, 1, SYM(4), 8, 8));
  EXPECT_ERR(Im2Col, &a, NULL, SHAPE_ERR, "channel count is symbolic", SH(F32, 1, SYM(4), 8, 8));
  a.kernel_size = NOLIST;
  EXPECT_ERR(Im2Col, &a, NULL, SHAPE_ERR, "attribute kernel_size", SH(F32, 1, 3, 8, 8));
  a.kernel_size = IL(3, 3);
  EXPECT_ERR(Im2Col, &a, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 3, 8, 8));
  a.dilation = IL(4, 4); /* span 9 > 8 */
  EXPECT_ERR(Im2Col, &a, NULL, SHAPE_ERR, "smaller than the dilated kernel", SH(F32, 1, 3, 8, 8));
}

/* Through the graph API: build-time inference, error context, verifier. */
static void test_graph(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "conv", &g));
  rlx_id x, w, y, bad;
  CHECK_OK(rlx_input(g, "x", SH(F32, 1, 3, 16, 16), &x));
  CHECK_OK(rlx_param(g, "w", SH(F32, 4, 3, 3, 3), &w));
  rlx_attrs_Conv a;
  rlx_attrs_init(RLX_OP_Conv, &a);
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  rlx_id in[2] = {x, w};
  CHECK_OK(rlx_build_Conv(g, in, 2, &a, "c1", &y));
  const rlx_node *n = rlx_graph_node(g, y);
  rlx_shape want = SH(F32, 1, 4, 8, 8); /* (16+2-3)/2+1 = 8 */
  CHECK(n && rlx_shape_equal(&n->shape, &want));
  a.stride = IL(0, 0);
  CHECK_ERR(rlx_build_Conv(g, in, 2, &a, "c2", &bad), RLX_ERR_SHAPE, "attribute stride");
  CHECK(strstr(rlx_last_error(), "Conv") != NULL);
  a.stride = NOLIST;
  CHECK_ERR(rlx_build_Conv(g, in, 1, &a, NULL, &bad), RLX_ERR_VERIFY, NULL);
  /* a wrong declared shape is caught by the verifier */
  rlx_shape wrong = SH(F32, 1, 4, 9, 9);
  a.padding = NOLIST;
  CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Conv, in, 2, &a, &wrong, "c3", &bad));
  CHECK_OK(rlx_graph_set_outputs(g, &bad, 1));
  CHECK_ERR(rlx_verify(g), RLX_ERR_SHAPE, "differs from inferred [1, 4, 14, 14] f32");
  rlx_graph_free(g);
}

int main(void) {
  test_conv();
  test_conv_errors();
  test_conv3d();
  test_conv_transpose();
  test_pool();
  test_im2col();
  test_graph();
  return rlx_test_finish("infer_conv");
}
