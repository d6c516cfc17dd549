/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Part of test_fast_vs_ref: the ElementwiseRegion fast kernel against the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlx_test.h"

/* ======================================================================================
 * ElementwiseRegion: block-wise chains against the step-by-step reference
 * ====================================================================================== */

#define OPI(i) \
  { .is_step = 0, .index = (i) }
#define OPS(i) \
  { .is_step = 1, .index = (i) }
#define ST_ACT(K, A) \
  { .kind = RLX_CHAIN_STEP_ACTIVATION, .sub = RLX_ACT_##K, .a = A }
#define ST_BIN(K, A, B) \
  { .kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_##K, .a = A, .b = B }
#define ST_CMP(K, A, B) \
  { .kind = RLX_CHAIN_STEP_COMPARE, .sub = RLX_CMP_##K, .a = A, .b = B }
#define ST_WHERE(C, A, B) \
  { .kind = RLX_CHAIN_STEP_WHERE, .a = C, .b = A, .c = B }
#define ST_CAST(T, A) \
  { .kind = RLX_CHAIN_STEP_CAST, .sub = RLX_##T, .a = A }

static void region_case(const char *what, const rlx_chain_step *steps, uint32_t ns, uint32_t n, const targ *args,
                        double rtol, double atol) {
  tcase c;
  rlx_attrs_ElementwiseRegion ra = {.chain = {.steps = (rlx_chain_step *)steps, .n = ns},
                                    .num_inputs = n,
                                    .scalar_input_mask = 0,
                                    .input_modulus = NOLIST,
                                    .prologue = RLX_PROLOGUE_NONE,
                                    .prologue_input = 0};
  CHECK(build(&c, RLX_OP_ElementwiseRegion, &ra, NULL, n, args, 0));
  if (c.node) run_case(what, &c, rtol, atol);
  case_free(&c);
}

void test_region(void) {
  fill_kind fills[3] = {FILL_UNIFORM, FILL_SPECIAL, FILL_WIDE};
  for (int f = 0; f < 3; f++) {
    /* the Adam parameter step: p - h * (m / (sqrt(v) / bc + eps)) */
    rlx_chain_step adam[] = {ST_ACT(SQRT, OPI(1)),        ST_BIN(DIV, OPS(0), OPI(3)), ST_BIN(ADD, OPS(1), OPI(3)),
                             ST_BIN(DIV, OPI(2), OPS(2)), ST_BIN(MUL, OPI(3), OPS(3)), ST_BIN(SUB, OPI(0), OPS(4))};
    targ a4[4] = {{SHP(F32, 100001), fills[f]},
                  {SHP(F32, 100001), FILL_UNIFORM},
                  {SHP(F32, 100001), fills[f]},
                  {SHP(F32), FILL_UNIFORM}};
    region_case("region adam step", adam, 6, 4, a4, 0, 0);
    /* a bias that tiles the trailing axis, relu, a product with the input */
    rlx_chain_step bias[] = {ST_BIN(ADD, OPI(0), OPI(1)), ST_ACT(RELU, OPS(0)), ST_BIN(MUL, OPS(1), OPI(0))};
    targ ab[2] = {{SHP(F32, 5, 7, 123), fills[f]}, {SHP(F32, 123), fills[f]}};
    region_case("region bias relu mul", bias, 3, 2, ab, 0, 0);
    targ ab2[2] = {{SHP(F32, 3, 1000), fills[f]}, {SHP(F32, 1, 1000), fills[f]}};
    region_case("region [3,1000] + [1,1000]", bias, 3, 2, ab2, 0, 0);
    /* two tiling operands whose counts' least common multiple (2100) exceeds a block: copied per
       block, [300] wrapping several times in each */
    rlx_chain_step two[] = {ST_BIN(ADD, OPI(0), OPI(1)), ST_BIN(MUL, OPS(0), OPI(2))};
    targ a2t[3] = {{SHP(F32, 3, 7, 300), fills[f]}, {SHP(F32, 300), fills[f]}, {SHP(F32, 7, 300), fills[f]}};
    region_case("region two tiling operands", two, 2, 3, a2t, 0, 0);
    /* compare / where / casts, with a scalar-only step (uniform per block) */
    rlx_chain_step sel[] = {ST_BIN(MUL, OPI(2), OPI(2)),      ST_CMP(GT, OPI(0), OPI(1)), ST_BIN(MUL, OPI(1), OPS(0)),
                            ST_WHERE(OPS(1), OPI(0), OPS(2)), ST_CAST(BOOL, OPS(3)),      ST_CAST(F32, OPS(4)),
                            ST_BIN(ADD, OPS(5), OPS(3))};
    targ as[3] = {{SHP(F32, 2, 3001), fills[f]}, {SHP(F32, 2, 3001), FILL_TIES}, {SHP(F32, 1), FILL_UNIFORM}};
    region_case("region compare where cast", sel, 7, 3, as, 0, 0);
    /* a bool operand as the condition, tiled */
    rlx_chain_step bw[] = {ST_WHERE(OPI(0), OPI(1), OPI(2)), ST_ACT(TANH, OPS(0))};
    targ abw[3] = {{SHP(BOOL, 700), FILL_BOOL}, {SHP(F32, 3, 700), fills[f]}, {SHP(F32), FILL_UNIFORM}};
    region_case("region bool condition", bw, 2, 3, abw, 4e-6, 1e-30);
    /* the activations with f32 loops, and those computed through double; Pow */
    rlx_chain_step acts[] = {ST_ACT(GELU, OPI(0)),        ST_ACT(SIGMOID, OPS(0)),     ST_ACT(SILU, OPI(0)),
                             ST_BIN(ADD, OPS(1), OPS(2)), ST_ACT(SIN, OPS(3)),         ST_ACT(RSQRT, OPI(0)),
                             ST_ACT(ROUND, OPI(0)),       ST_BIN(POW, OPS(4), OPI(1)), ST_BIN(MAX, OPS(7), OPS(5)),
                             ST_BIN(MIN, OPS(8), OPS(6)), ST_ACT(ATAN, OPS(9)),        ST_ACT(EXP, OPS(10))};
    targ aa[2] = {{SHP(F32, 9, 1111), fills[f]}, {SHP(F32), FILL_TIES}};
    region_case("region activations", acts, 12, 2, aa, 1e-5, 1e-30);
  }
  /* declined: a prologue, an f16 chain */
  tcase c;
  rlx_chain_step neg[] = {ST_ACT(NEG, OPI(0)), ST_ACT(ABS, OPS(0))};
  rlx_attrs_ElementwiseRegion pro = {.chain = {.steps = neg, .n = 2},
                                     .num_inputs = 1,
                                     .input_modulus = NOLIST,
                                     .prologue = RLX_PROLOGUE_RESIZE_NEAREST2X,
                                     .prologue_input = 0};
  targ ap[1] = {{SHP(F32, 1, 2, 3, 4), FILL_UNIFORM}};
  CHECK(build(&c, RLX_OP_ElementwiseRegion, &pro, NULL, 1, ap, 0));
  if (c.node) expect_declined("region with a prologue", &c);
  case_free(&c);
  pro.prologue = RLX_PROLOGUE_NONE;
  targ ah[1] = {{SHP(F16, 40), FILL_UNIFORM}};
  CHECK(build(&c, RLX_OP_ElementwiseRegion, &pro, NULL, 1, ah, 0));
  if (c.node) expect_declined("region on f16", &c);
  case_free(&c);
}
