/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the backward ops (ir-special §8) and the complex helpers. Packed lengths and conv
 * extents are worked out by hand in the comments. */
#include <math.h>

#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY

static void test_elementwise(void) {
  EXPECT(ReluBackward, NULL, NULL, SH(F32, 2, 3), SH(F32, 2, 3), SH(F32, 2, 3));
  EXPECT(ReluBackward, NULL, NULL, SH(I32, SYM(0), 3), SH(I32, SYM(0), 3), SH(I32, SYM(0), 3));
  EXPECT_ERR(ReluBackward, NULL, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 2, 3), SH(F32, 3, 2));
  EXPECT_ERR(ReluBackward, NULL, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, SYM(0), 3), SH(F32, 4, 3));
  EXPECT_ERR(ReluBackward, NULL, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 2, 3), SH(F16, 2, 3));
  EXPECT_ERR(ReluBackward, NULL, NULL, SHAPE_ERR, "operand 0 has dtype bool", SH(BOOL, 2), SH(BOOL, 2));

  rlx_attrs_ActivationBackward act = {.kind = RLX_ACT_TANH};
  EXPECT(ActivationBackward, &act, NULL, SH(BF16, 4), SH(BF16, 4), SH(BF16, 4));
  EXPECT_ERR(ActivationBackward, &act, NULL, SHAPE_ERR, "operand 0 has dtype i32", SH(I32, 4), SH(I32, 4));
  EXPECT_ERR(ActivationBackward, &act, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 4), SH(F32, 4, 1));
  act.kind = RLX_ACT_COUNT;
  EXPECT_ERR(ActivationBackward, &act, NULL, SHAPE_ERR, "attribute kind", SH(F32, 4), SH(F32, 4));

  rlx_attrs_FakeQuantizeBackward fq;
  rlx_attrs_init(RLX_OP_FakeQuantizeBackward, &fq);
  EXPECT(FakeQuantizeBackward, &fq, NULL, SH(F32, 2, 8), SH(F32, 2, 8), SH(F32, 2, 8));
  fq.bits = 4;
  fq.axis = 0;
  fq.ste = RLX_STE_HARD_TANH;
  EXPECT(FakeQuantizeBackward, &fq, NULL, SH(F32, 2, 8), SH(F32, 2, 8), SH(F32, 2, 8));
  fq.bits = 3;
  EXPECT_ERR(FakeQuantizeBackward, &fq, NULL, SHAPE_ERR, "attribute bits", SH(F32, 2, 8), SH(F32, 2, 8));
  fq.bits = 2;
  fq.axis = 2;
  EXPECT_ERR(FakeQuantizeBackward, &fq, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 8), SH(F32, 2, 8));
  fq.axis = -1;
  fq.ste = 9;
  EXPECT_ERR(FakeQuantizeBackward, &fq, NULL, SHAPE_ERR, "attribute ste", SH(F32, 2, 8), SH(F32, 2, 8));
  fq.ste = RLX_STE_TANH;
  EXPECT_ERR(FakeQuantizeBackward, &fq, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 2, 8), SH(F32, 8));
}

static void test_complex(void) {
  EXPECT(ComplexNormSq, NULL, NULL, SH(F32, 3, 4), SH(C64, 3, 4));
  EXPECT(ComplexNormSq, NULL, NULL, SH(F64, 5), SH(C128, 5));
  EXPECT_ERR(ComplexNormSq, NULL, NULL, SHAPE_ERR, "operand 0 (z) has dtype f32", SH(F32, 3));
  EXPECT(ComplexNormSqBackward, NULL, NULL, SH(C64, 3, 4), SH(C64, 3, 4), SH(F32, 3, 4));
  EXPECT_ERR(ComplexNormSqBackward, NULL, NULL, SHAPE_ERR, "operand 1 (g) has dtype f64", SH(C64, 3), SH(F64, 3));
  EXPECT_ERR(ComplexNormSqBackward, NULL, NULL, SHAPE_ERR, "operand 1 (g)", SH(C64, 3), SH(F32, 4));
  EXPECT(Conjugate, NULL, NULL, SH(C128, 2, 2), SH(C128, 2, 2));
  EXPECT_ERR(Conjugate, NULL, NULL, SHAPE_ERR, "operand 0 (z)", SH(F32, 2));
}

static void test_maxpool_backward(void) {
  rlx_attrs_MaxPool2dBackward a;
  rlx_attrs_init(RLX_OP_MaxPool2dBackward, &a);
  a.kernel_size = IL(2, 2);
  /* pool of 8x8 by 2x2 (stride = kernel) is 4x4 */
  EXPECT(MaxPool2dBackward, &a, NULL, SH(F32, 1, 3, 8, 8), SH(F32, 1, 3, 8, 8), SH(F32, 1, 3, 4, 4));
  /* kernel 3 stride 2 pad 1: (7+2-3)/2+1 = 4 */
  a.kernel_size = IL(3, 3);
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  EXPECT(MaxPool2dBackward, &a, NULL, SH(F32, 2, 3, 7, 7), SH(F32, 2, 3, 7, 7), SH(F32, 2, 3, 4, 4));
  EXPECT_ERR(MaxPool2dBackward, &a, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 2, 3, 7, 7), SH(F32, 2, 3, 3, 4));
  EXPECT_ERR(MaxPool2dBackward, &a, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 2, 3, 7, 7), SH(F32, 2, 4, 4, 4));
  EXPECT_ERR(MaxPool2dBackward, &a, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 2, 3, 7, 7),
             SH(F16, 2, 3, 4, 4));
  a.padding = IL(3, 3);
  EXPECT_ERR(MaxPool2dBackward, &a, NULL, SHAPE_ERR, "attribute padding", SH(F32, 2, 3, 7, 7), SH(F32, 2, 3, 4, 4));
  a.padding = NOLIST;
  a.kernel_size = NOLIST;
  EXPECT_ERR(MaxPool2dBackward, &a, NULL, SHAPE_ERR, "attribute kernel_size", SH(F32, 2, 3, 7, 7), SH(F32, 2, 3, 4, 4));
  /* a symbolic spatial extent cannot be checked and is accepted */
  a.kernel_size = IL(2, 2);
  a.stride = NOLIST;
  EXPECT(MaxPool2dBackward, &a, NULL, SH(F32, 1, 3, SYM(1), 8), SH(F32, 1, 3, SYM(1), 8), SH(F32, 1, 3, SYM(2), 4));

  rlx_attrs_MaxPool3dBackward b;
  rlx_attrs_init(RLX_OP_MaxPool3dBackward, &b);
  b.kernel_size = IL(2, 2, 2);
  /* 4x6x8 by 2 -> 2x3x4 */
  EXPECT(MaxPool3dBackward, &b, NULL, SH(F32, 1, 2, 4, 6, 8), SH(F32, 1, 2, 4, 6, 8), SH(F32, 1, 2, 2, 3, 4));
  EXPECT_ERR(MaxPool3dBackward, &b, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 1, 2, 4, 6, 8), SH(F32, 1, 2, 2, 3, 3));
  b.kernel_size = IL(2, 2);
  EXPECT_ERR(MaxPool3dBackward, &b, NULL, SHAPE_ERR, "attribute kernel_size has 2 entries", SH(F32, 1, 2, 4, 6, 8),
             SH(F32, 1, 2, 2, 3, 4));
  b.kernel_size = IL(2, 2, 2);
  EXPECT_ERR(MaxPool3dBackward, &b, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 1, 2, 4, 6), SH(F32, 1, 2, 2, 3, 4));
}

static void test_conv_backward(void) {
  rlx_attrs_Conv2dBackwardInput a;
  rlx_attrs_init(RLX_OP_Conv2dBackwardInput, &a);
  /* stride 1, no padding, k3: H = Ho + 2 = 8 (no declared shape needed) */
  EXPECT(Conv2dBackwardInput, &a, NULL, SH(F32, 2, 3, 8, 8), SH(F32, 2, 4, 6, 6), SH(F32, 4, 3, 3, 3));
  /* stride 1, pad 1 ("same") keeps a symbolic extent; groups 2: C_in = 3*2 */
  a.padding = IL(1, 1);
  a.groups = 2;
  EXPECT(Conv2dBackwardInput, &a, NULL, SH(F32, 2, 6, SYM(1), 6), SH(F32, 2, 4, SYM(1), 6), SH(F32, 4, 3, 3, 3));
  /* stride 2: the declared shape is required; both 7 and 8 conv down to (7+2-3)/2+1 = 4 and (8+2-3)/2+1 = 4 */
  rlx_attrs_init(RLX_OP_Conv2dBackwardInput, &a);
  a.stride = IL(2, 2);
  a.padding = IL(1, 1);
  rlx_shape d7 = SH(F32, 1, 3, 7, 8), d9 = SH(F32, 1, 3, 9, 8), d3 = SH(F32, 1, 3, 8);
  EXPECT_ERR(Conv2dBackwardInput, &a, NULL, SHAPE_ERR, "must be declared", SH(F32, 1, 4, 4, 4), SH(F32, 4, 3, 3, 3));
  EXPECT(Conv2dBackwardInput, &a, &d7, SH(F32, 1, 3, 7, 8), SH(F32, 1, 4, 4, 4), SH(F32, 4, 3, 3, 3));
  /* 9 convs to (9+2-3)/2+1 = 5, not 4 */
  EXPECT_ERR(Conv2dBackwardInput, &a, &d9, SHAPE_ERR, "operand 0 (dy)", SH(F32, 1, 4, 4, 4), SH(F32, 4, 3, 3, 3));
  EXPECT_ERR(Conv2dBackwardInput, &a, &d3, SHAPE_ERR, "declared shape", SH(F32, 1, 4, 4, 4), SH(F32, 4, 3, 3, 3));
  EXPECT_ERR(Conv2dBackwardInput, &a, &d7, SHAPE_ERR, "operand 1 (weight)", SH(F32, 1, 5, 4, 4), SH(F32, 4, 3, 3, 3));
  a.kernel_size = IL(5, 5);
  EXPECT_ERR(Conv2dBackwardInput, &a, &d7, SHAPE_ERR, "attribute kernel_size", SH(F32, 1, 4, 4, 4),
             SH(F32, 4, 3, 3, 3));
  a.kernel_size = NOLIST;
  a.groups = 3; /* C_out 4 */
  EXPECT_ERR(Conv2dBackwardInput, &a, &d7, SHAPE_ERR, "attribute groups", SH(F32, 1, 4, 4, 4), SH(F32, 4, 3, 3, 3));
  a.groups = 1;
  EXPECT_ERR(Conv2dBackwardInput, &a, &d7, SHAPE_ERR, "operand 0 (dy)", SH(F32, 4, 4, 4), SH(F32, 4, 3, 3, 3));

  rlx_attrs_Conv2dBackwardWeight w;
  rlx_attrs_init(RLX_OP_Conv2dBackwardWeight, &w);
  w.kernel_size = IL(3, 3);
  /* x 8x8 -> dy 6x6; dW [C_out 4, C_in 3, 3, 3] */
  EXPECT(Conv2dBackwardWeight, &w, NULL, SH(F32, 4, 3, 3, 3), SH(F32, 2, 3, 8, 8), SH(F32, 2, 4, 6, 6));
  /* groups 2, stride 2, kernel (3, 1): dy (9-3)/2+1 = 4, (9-1)/2+1 = 5; dW [6, 4/2, 3, 1] */
  w.groups = 2;
  w.stride = IL(2, 2);
  w.kernel_size = IL(3, 1);
  EXPECT(Conv2dBackwardWeight, &w, NULL, SH(F32, 6, 2, 3, 1), SH(F32, 1, 4, 9, 9), SH(F32, 1, 6, 4, 5));
  EXPECT_ERR(Conv2dBackwardWeight, &w, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 1, 4, 9, 9), SH(F32, 1, 6, 4, 4));
  EXPECT_ERR(Conv2dBackwardWeight, &w, NULL, SHAPE_ERR, "operand 1 (dy)", SH(F32, 1, 4, 9, 9), SH(F32, 2, 6, 4, 5));
  EXPECT_ERR(Conv2dBackwardWeight, &w, NULL, SHAPE_ERR, "attribute groups", SH(F32, 1, 4, 9, 9), SH(F32, 1, 5, 4, 5));
  w.kernel_size = NOLIST;
  EXPECT_ERR(Conv2dBackwardWeight, &w, NULL, SHAPE_ERR, "attribute kernel_size", SH(F32, 1, 4, 9, 9),
             SH(F32, 1, 6, 4, 5));

  rlx_attrs_Conv3dBackwardInput a3;
  rlx_attrs_init(RLX_OP_Conv3dBackwardInput, &a3);
  /* stride 1, k (1, 3, 3): D 4, H 4+2, W 5+2 */
  EXPECT(Conv3dBackwardInput, &a3, NULL, SH(F32, 1, 2, 4, 6, 7), SH(F32, 1, 8, 4, 4, 5), SH(F32, 8, 2, 1, 3, 3));
  a3.stride = IL(1, 2, 2);
  rlx_shape d3d = SH(F32, 1, 2, 4, 9, 10); /* (9-3)/2+1 = 4, (10-3)/2+1 = 4 */
  EXPECT(Conv3dBackwardInput, &a3, &d3d, SH(F32, 1, 2, 4, 9, 10), SH(F32, 1, 8, 4, 4, 4), SH(F32, 8, 2, 1, 3, 3));
  EXPECT_ERR(Conv3dBackwardInput, &a3, NULL, SHAPE_ERR, "stride 2", SH(F32, 1, 8, 4, 4, 4), SH(F32, 8, 2, 1, 3, 3));

  rlx_attrs_Conv3dBackwardWeight w3;
  rlx_attrs_init(RLX_OP_Conv3dBackwardWeight, &w3);
  w3.kernel_size = IL(1, 3, 3);
  EXPECT(Conv3dBackwardWeight, &w3, NULL, SH(F32, 8, 2, 1, 3, 3), SH(F32, 1, 2, 4, 6, 7), SH(F32, 1, 8, 4, 4, 5));
  w3.kernel_size = IL(3, 3);
  EXPECT_ERR(Conv3dBackwardWeight, &w3, NULL, SHAPE_ERR, "attribute kernel_size", SH(F32, 1, 2, 4, 6, 7),
             SH(F32, 1, 8, 4, 4, 5));
}

static void test_losses(void) {
  EXPECT(SoftmaxCrossEntropy, NULL, NULL, SH(F32, 4), SH(F32, 4, 10), SH(F32, 4, 10));
  EXPECT(SoftmaxCrossEntropy, NULL, NULL, SH(F32, SYM(0)), SH(F32, SYM(0), 10), SH(F32, SYM(0), 10));
  EXPECT_ERR(SoftmaxCrossEntropy, NULL, NULL, SHAPE_ERR, "operand 1 (targets)", SH(F32, 4, 10), SH(F32, 4, 9));
  EXPECT_ERR(SoftmaxCrossEntropy, NULL, NULL, SHAPE_ERR, "operand 0 (logits)", SH(F32, 10), SH(F32, 10));
  EXPECT_ERR(SoftmaxCrossEntropy, NULL, NULL, SHAPE_ERR, "operand 0 has dtype i32", SH(I32, 4, 10), SH(I32, 4, 10));

  EXPECT(SoftmaxCrossEntropyWithLogits, NULL, NULL, SH(F32, 4), SH(F32, 4, 10), SH(F32, 4));
  EXPECT(SoftmaxCrossEntropyWithLogits, NULL, NULL, SH(F16, 4), SH(F16, 4, 10), SH(I64, 4));
  EXPECT_ERR(SoftmaxCrossEntropyWithLogits, NULL, NULL, SHAPE_ERR, "operand 1 (labels)", SH(F32, 4, 10), SH(F32, 5));
  EXPECT_ERR(SoftmaxCrossEntropyWithLogits, NULL, NULL, SHAPE_ERR, "operand 1 (labels)", SH(F32, 4, 10), SH(F32, 4, 1));
  EXPECT_ERR(SoftmaxCrossEntropyWithLogits, NULL, NULL, SHAPE_ERR, "operand 1 (labels) has dtype f16", SH(F32, 4, 10),
             SH(F16, 4));

  EXPECT(SoftmaxCrossEntropyBackward, NULL, NULL, SH(F32, 4, 10), SH(F32, 4, 10), SH(F32, 4), SH(F32, 4));
  EXPECT(SoftmaxCrossEntropyBackward, NULL, NULL, SH(F32, 4, 10), SH(F32, 4, 10), SH(I32, 4), SH(F32, 4));
  EXPECT_ERR(SoftmaxCrossEntropyBackward, NULL, NULL, SHAPE_ERR, "operand 2 (d_loss)", SH(F32, 4, 10), SH(F32, 4),
             SH(F32, 3));
  EXPECT_ERR(SoftmaxCrossEntropyBackward, NULL, NULL, SHAPE_ERR, "operand 2 has dtype f64", SH(F32, 4, 10), SH(F32, 4),
             SH(F64, 4));
  EXPECT_ERR(SoftmaxCrossEntropyBackward, NULL, NULL, SHAPE_ERR, "operand 1 (labels)", SH(F32, 4, 10), SH(F32, 4, 10),
             SH(F32, 4));
}

static void test_attention_backward(void) {
  rlx_attrs_AttentionBackward a;
  rlx_attrs_init(RLX_OP_AttentionBackward, &a);
  a.num_heads = 4;
  a.head_dim = 8;
  /* rank 3 [B, S, H*D]: keys longer than queries */
  rlx_shape q = SH(F32, 2, 5, 32), k = SH(F32, 2, 7, 32);
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q);
  a.wrt = RLX_ATTN_WRT_KEY;
  EXPECT(AttentionBackward, &a, NULL, k, q, k, k, q);
  a.wrt = RLX_ATTN_WRT_VALUE;
  EXPECT(AttentionBackward, &a, NULL, k, q, k, k, q);
  /* GQA: 2 KV heads of 8 */
  rlx_shape kg = SH(F32, 2, 7, 16);
  EXPECT(AttentionBackward, &a, NULL, kg, q, kg, kg, q);
  /* rank 4 BHSD (axis 1 == num_heads) and BSHD */
  a.wrt = RLX_ATTN_WRT_QUERY;
  rlx_shape qb = SH(F32, 2, 4, 5, 8), kb = SH(F32, 2, 2, 9, 8);
  EXPECT(AttentionBackward, &a, NULL, qb, qb, kb, kb, qb);
  rlx_shape qs = SH(F32, 2, 5, 4, 8);
  EXPECT(AttentionBackward, &a, NULL, qs, qs, qs, qs, qs);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 1 (K)", qb, SH(F32, 2, 3, 9, 8), SH(F32, 2, 3, 9, 8),
             qb); /* 3 KV heads do not divide 4 */
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "num_heads", SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3, 8),
             SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3, 8));
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "head_dim", SH(F32, 2, 4, 5, 16), SH(F32, 2, 4, 5, 16),
             SH(F32, 2, 4, 5, 16), SH(F32, 2, 4, 5, 16));
  /* masks: Custom [B, S_k], Bias [B, H, S_q, S_k] */
  a.mask_kind = RLX_MASK_CUSTOM;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q, SH(F32, 2, 7));
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q, SH(BOOL, 2, 7));
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 4 (mask)", q, k, k, q, SH(F32, 2, 5));
  EXPECT_ERR(AttentionBackward, &a, NULL, VERIFY_ERR, "needs exactly 5 operands", q, k, k, q);
  a.mask_kind = RLX_MASK_BIAS;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q, SH(F32, 2, 4, 5, 7));
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 4 has dtype bool", q, k, k, q, SH(BOOL, 2, 4, 5, 7));
  a.mask_kind = RLX_MASK_CAUSAL;
  EXPECT_ERR(AttentionBackward, &a, NULL, VERIFY_ERR, "needs exactly 4 operands", q, k, k, q, SH(F32, 2, 7));
  a.mask_kind = RLX_MASK_SLIDING_WINDOW;
  a.window = -1;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute window", q, k, k, q);
  a.window = 3;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q);
  a.window = 0;
  a.mask_kind = 17;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute mask_kind", q, k, k, q);
  a.mask_kind = RLX_MASK_NONE;
  a.wrt = 3;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute wrt", q, k, k, q);
  a.wrt = RLX_ATTN_WRT_QUERY;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 3 (dy)", q, k, k, SH(F32, 2, 5, 16));
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 2 (V)", q, k, SH(F32, 2, 6, 32), q);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 2 has dtype f16", q, k, SH(F16, 2, 7, 32), q);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 0 (Q)", SH(F32, 2, 5, 33), SH(F32, 2, 5, 33),
             SH(F32, 2, 5, 33), SH(F32, 2, 5, 33));
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 1 (K)", q, SH(F32, 3, 7, 32), SH(F32, 3, 7, 32), q);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 1 (K)", q, SH(F32, 2, 7, 12), SH(F32, 2, 7, 12), q);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 1 (K)", q, SH(F32, 7, 32), SH(F32, 7, 32), q);
  /* Causal places queries at the end of the keys: S_k >= S_q; window only with SlidingWindow */
  a.mask_kind = RLX_MASK_CAUSAL;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q);
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "S_k >= S_q", k, q, q, k);
  a.window = 2;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute window", q, k, k, q);
  a.mask_kind = RLX_MASK_CUSTOM;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute window", q, k, k, q, SH(F32, 2, 7));
  a.window = 0;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q, SH(F32, 2, 5, 7)); /* [B, S_q, S_k] keep-mask */
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 4 (mask) has dtype c64", q, k, k, q, SH(C64, 2, 7));
  a.mask_kind = RLX_MASK_BIAS;
  EXPECT(AttentionBackward, &a, NULL, q, q, k, k, q, SH(F32, 1, 4, 1, 7)); /* broadcasts to [B, H, S_q, S_k] */
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 4 (mask)", q, k, k, q, SH(F32, 2, 4, 5, 6));
  a.mask_kind = RLX_MASK_NONE;
  /* a packed q of width head_dim is not H*D */
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "operand 0 (Q)", SH(F32, 2, 5, 8), SH(F32, 2, 5, 8),
             SH(F32, 2, 5, 8), SH(F32, 2, 5, 8));
  a.num_heads = 0;
  EXPECT_ERR(AttentionBackward, &a, NULL, SHAPE_ERR, "attribute num_heads", q, k, k, q);

  rlx_attrs_AttentionBackwardAll b;
  rlx_attrs_init(RLX_OP_AttentionBackwardAll, &b);
  b.num_heads = 4;
  b.head_dim = 8;
  /* 2*5*32 + 2*7*32 + 2*7*32 = 320 + 448 + 448 = 1216 */
  EXPECT(AttentionBackwardAll, &b, NULL, SH(F32, 1216), q, k, k, q);
  /* symbolic sequence: length from the declared 1-D shape */
  rlx_shape qsym = SH(F32, 2, SYM(1), 32), decl = SH(F32, 999);
  EXPECT(AttentionBackwardAll, &b, &decl, SH(F32, 999), qsym, k, k, qsym);
  EXPECT_ERR(AttentionBackwardAll, &b, NULL, SHAPE_ERR, "symbolic", qsym, k, k, qsym);
  b.mask_kind = RLX_MASK_CUSTOM;
  EXPECT(AttentionBackwardAll, &b, NULL, SH(F32, 1216), q, k, k, q, SH(F32, 2, 7));
  EXPECT_ERR(AttentionBackwardAll, &b, NULL, VERIFY_ERR, "needs exactly 5 operands", q, k, k, q);
}

static void test_norm_backward(void) {
  rlx_attrs_LayerNormBackwardInput li;
  rlx_attrs_init(RLX_OP_LayerNormBackwardInput, &li);
  rlx_shape x = SH(F32, 2, 5, 16), g = SH(F32, 16);
  EXPECT(LayerNormBackwardInput, &li, NULL, x, x, g, x);
  EXPECT(LayerNormBackwardInput, &li, NULL, x, x, SH(F32, 1, 1, 16), x);
  EXPECT_ERR(LayerNormBackwardInput, &li, NULL, SHAPE_ERR, "operand 1 (gamma)", x, SH(F32, 15), x);
  EXPECT_ERR(LayerNormBackwardInput, &li, NULL, SHAPE_ERR, "operand 2 (dy)", x, g, SH(F32, 2, 5, 15));
  li.axis = 1;
  EXPECT_ERR(LayerNormBackwardInput, &li, NULL, SHAPE_ERR, "attribute axis", x, g, x);
  li.axis = 2;
  EXPECT(LayerNormBackwardInput, &li, NULL, x, x, g, x);
  li.eps = -1.0f;
  EXPECT_ERR(LayerNormBackwardInput, &li, NULL, SHAPE_ERR, "attribute eps", x, g, x);

  rlx_attrs_LayerNormBackwardGamma lg;
  rlx_attrs_init(RLX_OP_LayerNormBackwardGamma, &lg);
  EXPECT(LayerNormBackwardGamma, &lg, NULL, SH(F32, 16), x, x);
  EXPECT_ERR(LayerNormBackwardGamma, &lg, NULL, SHAPE_ERR, "operand 1 (dy)", x, SH(F32, 2, 16));
  EXPECT_ERR(LayerNormBackwardGamma, &lg, NULL, SHAPE_ERR, "operand 0 (x) is a scalar", SCALAR(F32), SCALAR(F32));

  rlx_attrs_RmsNormBackwardInput ri;
  rlx_attrs_init(RLX_OP_RmsNormBackwardInput, &ri);
  rlx_shape b = SH(F32, 1, 16);
  EXPECT(RmsNormBackwardInput, &ri, NULL, x, x, g, b, x);
  EXPECT_ERR(RmsNormBackwardInput, &ri, NULL, SHAPE_ERR, "operand 2 (beta)", x, g, SH(F32, 2, 16), x);
  EXPECT_ERR(RmsNormBackwardInput, &ri, NULL, SHAPE_ERR, "operand 3 (dy)", x, g, b, SH(F32, 5, 16));
  EXPECT_ERR(RmsNormBackwardInput, &ri, NULL, SHAPE_ERR, "operand 1 has dtype f16", x, SH(F16, 16), b, x);
  rlx_attrs_RmsNormBackwardGamma rg;
  rlx_attrs_init(RLX_OP_RmsNormBackwardGamma, &rg);
  EXPECT(RmsNormBackwardGamma, &rg, NULL, g, x, g, b, x);
  rlx_attrs_RmsNormBackwardBeta rb;
  rlx_attrs_init(RLX_OP_RmsNormBackwardBeta, &rb);
  EXPECT(RmsNormBackwardBeta, &rb, NULL, b, x, g, b, x);
  rb.axis = 0;
  EXPECT_ERR(RmsNormBackwardBeta, &rb, NULL, SHAPE_ERR, "attribute axis", x, g, b, x);

  rlx_attrs_GroupNormBackwardInput gi;
  rlx_attrs_init(RLX_OP_GroupNormBackwardInput, &gi);
  gi.num_groups = 2;
  rlx_shape xn = SH(F32, 2, 6, 4, 4), c6 = SH(F32, 6);
  EXPECT(GroupNormBackwardInput, &gi, NULL, xn, xn, c6, c6, xn);
  EXPECT_ERR(GroupNormBackwardInput, &gi, NULL, SHAPE_ERR, "operand 2 (beta)", xn, c6, SH(F32, 4), xn);
  gi.num_groups = 4;
  EXPECT_ERR(GroupNormBackwardInput, &gi, NULL, SHAPE_ERR, "attribute num_groups", xn, c6, c6, xn);
  gi.num_groups = 0;
  EXPECT_ERR(GroupNormBackwardInput, &gi, NULL, SHAPE_ERR, "attribute num_groups", xn, c6, c6, xn);
  gi.num_groups = 3;
  EXPECT_ERR(GroupNormBackwardInput, &gi, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 2, 6), c6, c6, SH(F32, 2, 6));
  rlx_attrs_GroupNormBackwardGamma gg;
  rlx_attrs_init(RLX_OP_GroupNormBackwardGamma, &gg);
  gg.num_groups = 3;
  EXPECT(GroupNormBackwardGamma, &gg, NULL, c6, xn, xn);
  EXPECT_ERR(GroupNormBackwardGamma, &gg, NULL, SHAPE_ERR, "operand 1 (dy)", xn, SH(F32, 2, 6, 4, 5));
  rlx_attrs_GroupNormBackwardBeta gb;
  rlx_attrs_init(RLX_OP_GroupNormBackwardBeta, &gb);
  gb.num_groups = 6;
  EXPECT(GroupNormBackwardBeta, &gb, NULL, SH(F64, 6), SH(F64, 1, 6, 3), SH(F64, 1, 6, 3));
  gb.num_groups = 5;
  EXPECT_ERR(GroupNormBackwardBeta, &gb, NULL, SHAPE_ERR, "attribute num_groups", xn, xn);

  rlx_attrs_BatchNormInferenceBackwardInput bi;
  rlx_attrs_init(RLX_OP_BatchNormInferenceBackwardInput, &bi);
  rlx_shape xb = SH(F32, 8, 3, 5), c5 = SH(F32, 5);
  EXPECT(BatchNormInferenceBackwardInput, &bi, NULL, xb, xb, c5, c5, c5, xb);
  EXPECT_ERR(BatchNormInferenceBackwardInput, &bi, NULL, SHAPE_ERR, "operand 3 (var)", xb, c5, c5, SH(F32, 3), xb);
  EXPECT_ERR(BatchNormInferenceBackwardInput, &bi, NULL, SHAPE_ERR, "operand 4 (dy)", xb, c5, c5, c5, SH(F32, 8, 5));
  rlx_attrs_BatchNormInferenceBackwardGamma bg;
  rlx_attrs_init(RLX_OP_BatchNormInferenceBackwardGamma, &bg);
  EXPECT(BatchNormInferenceBackwardGamma, &bg, NULL, c5, xb, c5, c5, xb);
  EXPECT_ERR(BatchNormInferenceBackwardGamma, &bg, NULL, SHAPE_ERR, "operand 1 (mean)", xb, SH(F32, 3), c5, xb);
  bg.eps = NAN;
  EXPECT_ERR(BatchNormInferenceBackwardGamma, &bg, NULL, SHAPE_ERR, "attribute eps", xb, c5, c5, xb);
  EXPECT(BatchNormInferenceBackwardBeta, NULL, NULL, c5, xb);
  EXPECT(BatchNormInferenceBackwardBeta, NULL, NULL, SH(F16, 7), SH(F16, SYM(0), 7));
  EXPECT_ERR(BatchNormInferenceBackwardBeta, NULL, NULL, SHAPE_ERR, "operand 0 (dy) is a scalar", SCALAR(F32));
  EXPECT_ERR(BatchNormInferenceBackwardBeta, NULL, NULL, SHAPE_ERR, "operand 0 has dtype i32", SH(I32, 3));
}

static void test_rope_backward(void) {
  rlx_attrs_RopeBackward r;
  rlx_attrs_init(RLX_OP_RopeBackward, &r);
  r.head_dim = 8;
  r.n_rot = 8;
  rlx_shape dy = SH(F32, 2, 5, 32), tab = SH(F32, 5, 4);
  EXPECT(RopeBackward, &r, NULL, dy, dy, tab, tab);
  r.style = RLX_ROPE_STYLE_GPTJ;
  r.n_rot = 4; /* partial rotary: rows need 2 entries */
  EXPECT(RopeBackward, &r, NULL, dy, dy, SH(F32, 5, 2), SH(F32, 5, 2));
  EXPECT(RopeBackward, &r, NULL, dy, dy, SH(F32, 10), SH(F32, 10));
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 1 (cos)", dy, SH(F32, 9), SH(F32, 9));
  r.n_rot = 8;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 1 (cos)", dy, SH(F32, 5, 2), SH(F32, 5, 2));
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 2 (sin)", dy, tab, SH(F32, 5, 3));
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 0 (dy)", SH(F32, 2, 5, 30), tab, tab);
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 0 (dy)", SH(F32, 32), tab, tab);
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "operand 1 has dtype f16", dy, SH(F16, 5, 4), SH(F16, 5, 4));
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "rows", dy, SH(F32, 3, 4), SH(F32, 3, 4)); /* 3 rows < S = 5 */
  EXPECT(RopeBackward, &r, NULL, dy, dy, SH(F32, 10, 4), SH(F32, 10, 4));                  /* one row per token */
  r.n_rot = 10;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "attribute n_rot", dy, tab, tab);
  r.n_rot = 0;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "attribute n_rot", dy, tab, tab);
  r.n_rot = 3;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "attribute n_rot", dy, tab, tab);
  r.n_rot = 2;
  r.head_dim = 7;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "attribute head_dim", dy, tab, tab);
  r.head_dim = 8;
  r.style = 2;
  EXPECT_ERR(RopeBackward, &r, NULL, SHAPE_ERR, "attribute style", dy, tab, tab);
}

static void test_scan_gather_backward(void) {
  rlx_attrs_CumsumBackward cb;
  rlx_attrs_init(RLX_OP_CumsumBackward, &cb);
  EXPECT(CumsumBackward, &cb, NULL, SH(F32, 3, 4), SH(F32, 3, 4));
  cb.axis = -2;
  cb.exclusive = true;
  EXPECT(CumsumBackward, &cb, NULL, SH(I64, 3, 4), SH(I64, 3, 4));
  cb.axis = 2;
  EXPECT_ERR(CumsumBackward, &cb, NULL, SHAPE_ERR, "attribute axis", SH(F32, 3, 4));

  rlx_attrs_GatherBackward gb;
  rlx_attrs_init(RLX_OP_GatherBackward, &gb);
  /* table [100, 16] gathered with idx [4, 7] on axis 0 gives dy [4, 7, 16] */
  rlx_shape table = SH(F32, 100, 16);
  EXPECT(GatherBackward, &gb, &table, SH(F32, 100, 16), SH(F32, 4, 7, 16), SH(I64, 4, 7));
  /* axis 1 of [3, 50, 2] with idx [5] gives dy [3, 5, 2] */
  gb.axis = 1;
  rlx_shape t2 = SH(F32, 3, 50, 2);
  EXPECT(GatherBackward, &gb, &t2, SH(F32, 3, 50, 2), SH(F32, 3, 5, 2), SH(F32, 5));
  gb.axis = -2;
  EXPECT(GatherBackward, &gb, &t2, SH(F32, 3, 50, 2), SH(F32, 3, 5, 2), SH(F32, 5));
  EXPECT_ERR(GatherBackward, &gb, NULL, SHAPE_ERR, "must be declared", SH(F32, 3, 5, 2), SH(F32, 5));
  rlx_shape bad_rank = SH(F32, 3, 50);
  EXPECT_ERR(GatherBackward, &gb, &bad_rank, SHAPE_ERR, "declared shape", SH(F32, 3, 5, 2), SH(F32, 5));
  EXPECT_ERR(GatherBackward, &gb, &t2, SHAPE_ERR, "operand 0 (dy)", SH(F32, 3, 6, 2), SH(F32, 5));
  EXPECT_ERR(GatherBackward, &gb, &t2, SHAPE_ERR, "operand 1 (indices) has dtype f16", SH(F32, 3, 5, 2), SH(F16, 5));
  gb.axis = 3;
  EXPECT_ERR(GatherBackward, &gb, &t2, SHAPE_ERR, "attribute axis", SH(F32, 3, 5, 2), SH(F32, 5));
}

static void test_dit_backward(void) {
  rlx_attrs_AdaLayerNormBackward ad;
  rlx_attrs_init(RLX_OP_AdaLayerNormBackward, &ad);
  rlx_shape x = SH(F32, 2, 6, 8), mod = SH(F32, 2, 1, 8);
  /* 96 + 16 + 16 = 128 */
  EXPECT(AdaLayerNormBackward, &ad, NULL, SH(F32, 128), x, mod, mod, x);
  ad.norm = RLX_ADA_NORM_RMS_NORM;
  /* scale/shift [8]: 96 + 8 + 8 = 112 */
  EXPECT(AdaLayerNormBackward, &ad, NULL, SH(F32, 112), x, SH(F32, 8), SH(F32, 8), x);
  EXPECT_ERR(AdaLayerNormBackward, &ad, NULL, SHAPE_ERR, "operand 1 (scale)", x, SH(F32, 2, 6, 4), mod, x);
  EXPECT_ERR(AdaLayerNormBackward, &ad, NULL, SHAPE_ERR, "operand 1 (scale)", x, SH(F32, 3, 1, 8), mod, x);
  EXPECT_ERR(AdaLayerNormBackward, &ad, NULL, SHAPE_ERR, "operand 2 (shift)", x, mod, SH(F32, 8), x);
  EXPECT_ERR(AdaLayerNormBackward, &ad, NULL, SHAPE_ERR, "operand 3 (dy)", x, mod, mod, SH(F32, 2, 6, 7));
  ad.norm = 2;
  EXPECT_ERR(AdaLayerNormBackward, &ad, NULL, SHAPE_ERR, "attribute norm", x, mod, mod, x);
  ad.norm = 0;
  rlx_shape xs = SH(F32, 2, SYM(1), 8), decl = SH(F32, 77);
  EXPECT(AdaLayerNormBackward, &ad, &decl, SH(F32, 77), xs, mod, mod, xs);

  /* 96 + 96 + 16 = 208 */
  EXPECT(GatedResidualBackward, NULL, NULL, SH(F32, 208), x, x, mod, x);
  EXPECT_ERR(GatedResidualBackward, NULL, NULL, SHAPE_ERR, "operand 1 (y)", x, mod, mod, x);
  EXPECT_ERR(GatedResidualBackward, NULL, NULL, SHAPE_ERR, "operand 2 (gate)", x, x, SH(F32, 2, 6, 1), x);
  EXPECT_ERR(GatedResidualBackward, NULL, NULL, SHAPE_ERR, "operand 3 (dy)", x, x, mod, SH(F32, 2, 8));
  EXPECT_ERR(GatedResidualBackward, NULL, NULL, SHAPE_ERR, "operand 2 has dtype f16", x, x, SH(F16, 2, 1, 8), x);
}

int main(void) {
  test_elementwise();
  test_complex();
  test_maxpool_backward();
  test_conv_backward();
  test_losses();
  test_attention_backward();
  test_norm_backward();
  test_rope_backward();
  test_scan_gather_backward();
  test_dit_backward();
  return rlx_test_finish("infer_backward");
}
