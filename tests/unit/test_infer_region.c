/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the fusion regions (ir-core §10.2): chain type checking, trailing-tile
 * broadcasting, the ResizeNearest2x prologue, batch stacking and transform steps. */
#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY
#define IN(i) ((rlx_chain_operand){0, (i)})
#define ST(i) ((rlx_chain_operand){1, (i)})
#define STEP(kind, sub, a, b, c) ((rlx_chain_step){RLX_CHAIN_STEP_##kind, (sub), a, b, c})
#define CHAIN(...)                                       \
  ((rlx_chain){.steps = (rlx_chain_step[]){__VA_ARGS__}, \
               .n = (uint32_t)(sizeof((rlx_chain_step[]){__VA_ARGS__}) / sizeof(rlx_chain_step))})

static rlx_attrs_ElementwiseRegion region(int64_t n) {
  rlx_attrs_ElementwiseRegion a;
  rlx_attrs_init(RLX_OP_ElementwiseRegion, &a);
  a.num_inputs = n;
  return a;
}

static void test_elementwise_region(void) {
  rlx_attrs_ElementwiseRegion a = region(1);
  a.chain = CHAIN(STEP(ACTIVATION, RLX_ACT_RELU, IN(0), IN(0), IN(0)));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F16, 2, 3), SH(F16, 2, 3));
  /* x + bias with a trailing-tile bias, then Gelu */
  a = region(2);
  a.chain =
      CHAIN(STEP(BINARY, RLX_BINOP_ADD, IN(0), IN(1), IN(0)), STEP(ACTIVATION, RLX_ACT_GELU, ST(0), IN(0), IN(0)));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4), SH(F32, 4));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 2, 3, 4), SH(F32, 3, 4), SH(F32, 2, 3, 4));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4), SH(F32, 1, 1, 4));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, SYM(0), 4), SH(F32, SYM(0), 4), SH(F32, 4));
  /* a middle-axis broadcast cannot ride a region */
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 1 has shape [2, 1, 4]", SH(F32, 2, 3, 4),
             SH(F32, 2, 1, 4));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 1", SH(F32, 3), SH(F32, 4));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute chain: step 0 (Binary) combines f32 and i32",
             SH(F32, 4), SH(I32, 4));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, VERIFY_ERR, "needs exactly 2 operands", SH(F32, 4));
  /* Compare -> bool, Where -> dtype of the selected values, Cast -> its target */
  a = region(2);
  a.chain = CHAIN(STEP(COMPARE, RLX_CMP_GT, IN(0), IN(1), IN(0)));
  EXPECT(ElementwiseRegion, &a, NULL, SH(BOOL, 5), SH(F32, 5), SH(F32, 1));
  a.chain = CHAIN(STEP(COMPARE, RLX_CMP_GT, IN(0), IN(1), IN(0)), STEP(WHERE, 0, ST(0), IN(0), IN(1)));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 5), SH(F32, 5), SH(F32, 1));
  a.chain = CHAIN(STEP(CAST, RLX_I32, IN(1), IN(0), IN(0)), STEP(WHERE, 0, IN(0), ST(0), IN(1)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "step 1 (Where) selects between i32 and f32", SH(BOOL, 5),
             SH(F32, 5));
  a.chain = CHAIN(STEP(CAST, RLX_F32, IN(1), IN(0), IN(0)), STEP(BINARY, RLX_BINOP_MUL, IN(0), ST(0), IN(0)),
                  STEP(CAST, RLX_F16, ST(1), IN(0), IN(0)));
  EXPECT(ElementwiseRegion, &a, NULL, SH(F16, 2, 5), SH(F32, 2, 5), SH(I32, 5));
  /* Activation of a bool value, non-fusable sub-ops, bad references */
  a.chain = CHAIN(STEP(COMPARE, RLX_CMP_EQ, IN(0), IN(1), IN(0)), STEP(ACTIVATION, RLX_ACT_EXP, ST(0), IN(0), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "step 1 (Activation Exp) is applied to a bool", SH(F32, 5),
             SH(F32, 5));
  a.chain = CHAIN(STEP(ACTIVATION, RLX_ACT_FLOOR, IN(0), IN(0), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "activation Floor", SH(F32, 5), SH(F32, 5));
  a.chain = CHAIN(STEP(BINARY, RLX_BINOP_MOD, IN(0), IN(1), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "binary op Mod", SH(F32, 5), SH(F32, 5));
  a.chain = CHAIN(STEP(BINARY, RLX_BINOP_ADD, IN(0), ST(0), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "is not an earlier step", SH(F32, 5), SH(F32, 5));
  a.chain = CHAIN(STEP(BINARY, RLX_BINOP_ADD, IN(0), IN(2), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "is not a region operand", SH(F32, 5), SH(F32, 5));
  a.chain = CHAIN(STEP(ACTIVATION, 99, IN(0), IN(0), IN(0)));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute chain: step 0", SH(F32, 5), SH(F32, 5));
  a.chain = CHAIN(((rlx_chain_step){7, 0, IN(0), IN(0), IN(0)}));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "unknown kind", SH(F32, 5), SH(F32, 5));
  a.chain = (rlx_chain){.steps = NULL, .n = 0};
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute chain is empty", SH(F32, 5), SH(F32, 5));
  a.num_inputs = 17;
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute num_inputs", SH(F32, 5), SH(F32, 5));
}

static void test_region_attrs(void) {
  rlx_attrs_ElementwiseRegion a = region(2);
  a.chain = CHAIN(STEP(BINARY, RLX_BINOP_ADD, IN(0), IN(1), IN(0)));
  /* scalar_input_mask */
  a.scalar_input_mask = 2;
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 3, 4), SH(F32, 3, 4), SH(F32, 1));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute scalar_input_mask: bit 1", SH(F32, 3, 4), SH(F32, 4));
  a.scalar_input_mask = 4;
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute scalar_input_mask", SH(F32, 3, 4), SH(F32, 1));
  a.scalar_input_mask = 0;
  /* input_modulus: 0 = full size, k = operand has k elements */
  a.input_modulus = IL(0, 4);
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 3, 4), SH(F32, 3, 4), SH(F32, 4));
  a.input_modulus = IL(0, 5);
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute input_modulus: entry 1", SH(F32, 3, 4), SH(F32, 4));
  a.input_modulus = IL(0, 0);
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute input_modulus: entry 1", SH(F32, 3, 4), SH(F32, 4));
  a.input_modulus = IL(0);
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute input_modulus has 1 entries", SH(F32, 3, 4),
             SH(F32, 4));
  a.input_modulus = IL(-1, 4);
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute input_modulus: entry 0", SH(F32, 3, 4), SH(F32, 4));
  a.input_modulus = NOLIST;
  /* prologue: operand 0 is upsampled x2 on its last two axes before broadcasting */
  a.prologue = RLX_PROLOGUE_RESIZE_NEAREST2X;
  a.prologue_input = 0;
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 1, 3, 8, 10), SH(F32, 1, 3, 4, 5), SH(F32, 1, 3, 8, 10));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 1", SH(F32, 1, 3, 4, 5), SH(F32, 1, 3, 4, 5));
  a.prologue_input = 1;
  EXPECT(ElementwiseRegion, &a, NULL, SH(F32, 2, 6), SH(F32, 2, 6), SH(F32, 1, 3));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 1", SH(F32, 2, 6), SH(F32, 3));
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "symbolic", SH(F32, 2, 6), SH(F32, 1, SYM(1)));
  a.prologue_input = 2;
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute prologue_input", SH(F32, 2, 6), SH(F32, 1, 3));
  a.prologue_input = 0;
  a.prologue = 5;
  EXPECT_ERR(ElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute prologue", SH(F32, 2, 6), SH(F32, 1, 3));
}

static void test_batch_region(void) {
  rlx_attrs_BatchElementwiseRegion a;
  rlx_attrs_init(RLX_OP_BatchElementwiseRegion, &a);
  a.num_batch_inputs = 3;
  a.chain = CHAIN(STEP(ACTIVATION, RLX_ACT_SILU, IN(0), IN(0), IN(0)));
  /* 2 + 3 + 1 = 6 rows */
  EXPECT(BatchElementwiseRegion, &a, NULL, SH(F32, 6, 4), SH(F32, 2, 4), SH(F32, 3, 4), SH(F32, 1, 4));
  a.chain = CHAIN(STEP(COMPARE, RLX_CMP_LT, IN(0), IN(0), IN(0)));
  EXPECT(BatchElementwiseRegion, &a, NULL, SH(BOOL, 6, 4), SH(F32, 2, 4), SH(F32, 3, 4), SH(F32, 1, 4));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 2", SH(F32, 2, 4), SH(F32, 3, 4), SH(F32, 1, 5));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 2, 4), SH(F16, 3, 4),
             SH(F32, 1, 4));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, VERIFY_ERR, "needs exactly 3 operands", SH(F32, 2, 4), SH(F32, 3, 4));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "operand 0", SCALAR(F32), SCALAR(F32), SCALAR(F32));
  /* symbolic batch: one operand keeps its symbol, several need the declared shape */
  rlx_shape decl = SH(F32, SYM(7), 4);
  EXPECT(BatchElementwiseRegion, &a, &decl, SH(BOOL, SYM(7), 4), SH(F32, SYM(0), 4), SH(F32, 3, 4), SH(F32, 1, 4));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "symbolic", SH(F32, SYM(0), 4), SH(F32, 3, 4), SH(F32, 1, 4));
  a.num_batch_inputs = 1;
  EXPECT(BatchElementwiseRegion, &a, NULL, SH(BOOL, SYM(0), 4), SH(F32, SYM(0), 4));
  /* prologue doubles the last two axes (rank >= 3) */
  a.num_batch_inputs = 2;
  a.prologue = RLX_PROLOGUE_RESIZE_NEAREST2X;
  EXPECT(BatchElementwiseRegion, &a, NULL, SH(BOOL, 3, 2, 6, 8), SH(F32, 1, 2, 3, 4), SH(F32, 2, 2, 3, 4));
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "rank >= 3", SH(F32, 1, 4), SH(F32, 2, 4));
  a.prologue = RLX_PROLOGUE_NONE;
  a.input_modulus = IL(0, 0, 0);
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute input_modulus", SH(F32, 1, 4), SH(F32, 2, 4));
  a.input_modulus = NOLIST;
  a.chain = (rlx_chain){.steps = NULL, .n = 0};
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute chain", SH(F32, 1, 4), SH(F32, 2, 4));
  a.chain = CHAIN(STEP(ACTIVATION, RLX_ACT_SILU, IN(0), IN(0), IN(0)));
  a.num_batch_inputs = 0;
  EXPECT_ERR(BatchElementwiseRegion, &a, NULL, SHAPE_ERR, "attribute num_batch_inputs", SH(F32, 1, 4));
}

static void test_transform_region(void) {
  rlx_attrs_TransformRegion a;
  rlx_attrs_init(RLX_OP_TransformRegion, &a);
  a.steps = IL(0);
  EXPECT(TransformRegion, &a, NULL, SH(F32, 1, 3, 8, 10), SH(F32, 1, 3, 4, 5));
  a.steps = IL(0, 0);
  EXPECT(TransformRegion, &a, NULL, SH(F16, 2, 16, 4), SH(F16, 2, 4, 1));
  rlx_shape decl = SH(F32, 1, SYM(4), 20);
  EXPECT(TransformRegion, &a, &decl, SH(F32, 1, SYM(4), 20), SH(F32, 1, SYM(2), 5));
  EXPECT_ERR(TransformRegion, &a, NULL, SHAPE_ERR, "symbolic", SH(F32, 1, SYM(2), 5));
  a.num_inputs = 2;
  a.steps = IL(0, 1);
  EXPECT(TransformRegion, &a, NULL, SH(F32, 12, 20), SH(F32, 3, 5), SH(F32, 6, 10));
  EXPECT_ERR(TransformRegion, &a, NULL, VERIFY_ERR, "needs exactly 2 operands", SH(F32, 3, 5));
  a.steps = IL(0, 2);
  EXPECT_ERR(TransformRegion, &a, NULL, SHAPE_ERR, "attribute steps: entry 1", SH(F32, 3, 5), SH(F32, 6, 10));
  a.steps = NOLIST;
  EXPECT_ERR(TransformRegion, &a, NULL, SHAPE_ERR, "attribute steps is empty", SH(F32, 3, 5), SH(F32, 6, 10));
  a.num_inputs = 1;
  a.steps = IL(0);
  EXPECT_ERR(TransformRegion, &a, NULL, SHAPE_ERR, "operand 0", SH(F32, 5));
  a.steps = IL(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  EXPECT_ERR(TransformRegion, &a, NULL, RLX_ERR_OVERFLOW, "overflows", SH(F32, (int64_t)1 << 40, 5));
}

int main(void) {
  test_elementwise_region();
  test_region_attrs();
  test_batch_region();
  test_transform_region();
  return rlx_test_finish("infer_region");
}
