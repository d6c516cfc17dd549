/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the recurrent, splatting, signal and SPD families. Packed lengths and weight sizes
 * are computed by hand in the comments next to each case. */
#include <math.h>

#include "infer_test.h"

#define VERIFY_ERR RLX_ERR_VERIFY

/* ---- recurrent ---- */

static void test_selective_scan_mamba(void) {
  rlx_attrs_SelectiveScan s = {.state_size = 4};
  EXPECT(SelectiveScan, &s, NULL, SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8, 4), SH(F32, 2, 5, 4),
         SH(F32, 2, 5, 4));
  EXPECT(SelectiveScan, &s, NULL, SH(F32, SYM(0), SYM(1), 8), SH(F32, SYM(0), SYM(1), 8), SH(F32, SYM(0), SYM(1), 8),
         SH(F32, 8, 4), SH(F32, SYM(0), SYM(1), 4), SH(F32, SYM(0), SYM(1), 4));
  EXPECT_ERR(SelectiveScan, &s, NULL, SHAPE_ERR, "operand 2 (a)", SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8, 3),
             SH(F32, 2, 5, 4), SH(F32, 2, 5, 4));
  EXPECT_ERR(SelectiveScan, &s, NULL, SHAPE_ERR, "operand 3 (b)", SH(F32, 2, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8, 4),
             SH(F32, 2, 6, 4), SH(F32, 2, 5, 4));
  EXPECT_ERR(SelectiveScan, &s, NULL, SHAPE_ERR, "operand 1 (delta) has dtype f16", SH(F32, 2, 5, 8), SH(F16, 2, 5, 8),
             SH(F32, 8, 4), SH(F32, 2, 5, 4), SH(F32, 2, 5, 4));
  EXPECT_ERR(SelectiveScan, &s, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 5, 8), SH(F32, 2, 5, 8), SH(F32, 8, 4),
             SH(F32, 2, 5, 4), SH(F32, 2, 5, 4));
  s.state_size = 0;
  EXPECT_ERR(SelectiveScan, &s, NULL, SHAPE_ERR, "attribute state_size", SH(F32, 2, 5, 8), SH(F32, 2, 5, 8),
             SH(F32, 8, 0), SH(F32, 2, 5, 0), SH(F32, 2, 5, 0));

  rlx_attrs_Mamba2 m = {.head_dim = 16, .state_size = 4};
  EXPECT(Mamba2, &m, NULL, SH(F32, 2, 5, 3, 16), SH(F32, 2, 5, 3, 16), SH(F32, 2, 5, 3), SH(F32, 3),
         SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4));
  EXPECT_ERR(Mamba2, &m, NULL, SHAPE_ERR, "operand 0 (x)", SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3), SH(F32, 3),
             SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4));
  EXPECT_ERR(Mamba2, &m, NULL, SHAPE_ERR, "operand 2 (a)", SH(F32, 2, 5, 3, 16), SH(F32, 2, 5, 3), SH(F32, 4),
             SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4));
  EXPECT_ERR(Mamba2, &m, NULL, SHAPE_ERR, "operand 4 (c)", SH(F32, 2, 5, 3, 16), SH(F32, 2, 5, 3), SH(F32, 3),
             SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 5));
  m.head_dim = 0;
  EXPECT_ERR(Mamba2, &m, NULL, SHAPE_ERR, "attribute head_dim", SH(F32, 2, 5, 3, 16), SH(F32, 2, 5, 3), SH(F32, 3),
             SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4));
}

#define QKV SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3, 4)

static void test_gated_delta_net(void) {
  rlx_attrs_GatedDeltaNet g = {.state_size = 4, .carry_state = false, .gate_per_channel = false};
  EXPECT(GatedDeltaNet, &g, NULL, SH(F32, 2, 5, 3, 4), QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, SHAPE_ERR, "operand 3 (g)", QKV, SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, SHAPE_ERR, "operand 4 (beta)", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 4));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, SHAPE_ERR, "operand 0 (q)", SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3, 8),
             SH(F32, 2, 5, 3, 8), SH(F32, 2, 5, 3), SH(F32, 2, 5, 3));
  g.gate_per_channel = true;
  EXPECT(GatedDeltaNet, &g, NULL, SH(F32, 2, 5, 3, 4), QKV, SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, SHAPE_ERR, "operand 3 (g)", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3));
  g.gate_per_channel = false;
  g.carry_state = true;
  EXPECT(GatedDeltaNet, &g, NULL, SH(F32, 2, 5, 3, 4), QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3), SH(F32, 2, 3, 4, 4));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, SHAPE_ERR, "operand 5 (state)", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3),
             SH(F32, 2, 3, 4, 3));
  EXPECT_ERR(GatedDeltaNet, &g, NULL, VERIFY_ERR, "carry_state", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3));

  /* B=2, S=5, H=3, n=4: BSHn = 120, BSH = 30, B*H*n*n = 96 */
  rlx_attrs_GatedDeltaNetBackward b = {.state_size = 4, .carry_state = false, .gate_per_channel = false};
  EXPECT(GatedDeltaNetBackward, &b, NULL, SH(F32, 420), QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3), SH(F32, 2, 5, 3, 4));
  b.gate_per_channel = true; /* 4 * 120 + 30 */
  EXPECT(GatedDeltaNetBackward, &b, NULL, SH(F32, 510), QKV, SH(F32, 2, 5, 3, 4), SH(F32, 2, 5, 3),
         SH(F32, 2, 5, 3, 4));
  b.gate_per_channel = false;
  b.carry_state = true; /* 420 + 96 */
  EXPECT(GatedDeltaNetBackward, &b, NULL, SH(F32, 516), QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3), SH(F32, 2, 3, 4, 4),
         SH(F32, 2, 5, 3, 4));
  EXPECT_ERR(GatedDeltaNetBackward, &b, NULL, SHAPE_ERR, "operand 6 (dy)", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3),
             SH(F32, 2, 3, 4, 4), SH(F32, 2, 5, 3, 3));
  b.carry_state = false;
  EXPECT_ERR(GatedDeltaNetBackward, &b, NULL, SHAPE_ERR, "operand 5 (dy)", QKV, SH(F32, 2, 5, 3), SH(F32, 2, 5, 3),
             SH(F32, 2, 5, 3));
  /* a symbolic batch leaves the packed length to the declared shape */
  EXPECT_ERR(GatedDeltaNetBackward, &b, NULL, SHAPE_ERR, "symbolic", SH(F32, SYM(0), 5, 3, 4), SH(F32, SYM(0), 5, 3, 4),
             SH(F32, SYM(0), 5, 3, 4), SH(F32, SYM(0), 5, 3), SH(F32, SYM(0), 5, 3), SH(F32, SYM(0), 5, 3, 4));
  rlx_shape decl = SH(F32, SYM(7));
  EXPECT(GatedDeltaNetBackward, &b, &decl, decl, SH(F32, SYM(0), 5, 3, 4), SH(F32, SYM(0), 5, 3, 4),
         SH(F32, SYM(0), 5, 3, 4), SH(F32, SYM(0), 5, 3), SH(F32, SYM(0), 5, 3), SH(F32, SYM(0), 5, 3, 4));
}

static void test_lstm_gru_rnn(void) {
  /* H=4, L=2, bidirectional, I=3, G=4: w_ih = 2*16*(3 + 1*8) = 352, w_hh = 2*2*16*4 = 256, bias = 64 */
  rlx_attrs_Lstm l = {.hidden_size = 4, .num_layers = 2, .bidirectional = true, .carry = false};
  EXPECT(Lstm, &l, NULL, SH(F32, 2, 7, 8), SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 64));
  EXPECT(Lstm, &l, NULL, SH(F32, 2, 7, 8), SH(F32, 2, 7, 3), SH(F32, 32, 11), SH(F32, 64, 4), SH(F32, 4, 16));
  EXPECT_ERR(Lstm, &l, NULL, SHAPE_ERR, "operand 1 (w_ih)", SH(F32, 2, 7, 3), SH(F32, 351), SH(F32, 256), SH(F32, 64));
  EXPECT_ERR(Lstm, &l, NULL, SHAPE_ERR, "operand 2 (w_hh)", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 128), SH(F32, 64));
  EXPECT_ERR(Lstm, &l, NULL, SHAPE_ERR, "operand 3 (bias)", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 32));
  EXPECT_ERR(Lstm, &l, NULL, VERIFY_ERR, "needs 4 to 6", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256));
  l.carry = true; /* h0, c0 [L*D = 4, B, H] */
  EXPECT(Lstm, &l, NULL, SH(F32, 2, 7, 8), SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 64), SH(F32, 4, 2, 4),
         SH(F32, 4, 2, 4));
  EXPECT_ERR(Lstm, &l, NULL, SHAPE_ERR, "operand 4 (h0)", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 64),
             SH(F32, 2, 2, 4), SH(F32, 4, 2, 4));
  EXPECT_ERR(Lstm, &l, NULL, SHAPE_ERR, "operand 5 (c0)", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 64),
             SH(F32, 4, 2, 4), SH(F32, 4, 3, 4));
  EXPECT_ERR(Lstm, &l, NULL, VERIFY_ERR, "h0, c0 for carry", SH(F32, 2, 7, 3), SH(F32, 352), SH(F32, 256), SH(F32, 64));
  /* single layer, one direction, H=5, I=3: the PyTorch layout [4H, I], [4H, H], [4H] */
  rlx_attrs_Lstm l1 = {.hidden_size = 5, .num_layers = 1, .bidirectional = false, .carry = false};
  EXPECT(Lstm, &l1, NULL, SH(F32, 2, 7, 5), SH(F32, 2, 7, 3), SH(F32, 20, 3), SH(F32, 20, 5), SH(F32, 20));
  EXPECT(Lstm, &l1, NULL, SH(F32, SYM(0), 7, 5), SH(F32, SYM(0), 7, 3), SH(F32, 20, 3), SH(F32, 20, 5), SH(F32, 20));
  EXPECT_ERR(Lstm, &l1, NULL, SHAPE_ERR, "operand 0 (x) has dtype i32", SH(I32, 2, 7, 3), SH(F32, 20, 3),
             SH(F32, 20, 5), SH(F32, 20));
  l1.hidden_size = 0;
  EXPECT_ERR(Lstm, &l1, NULL, SHAPE_ERR, "attribute hidden_size", SH(F32, 2, 7, 3), SH(F32, 20, 3), SH(F32, 20, 5),
             SH(F32, 20));
  l1.hidden_size = 5;
  l1.num_layers = 0;
  EXPECT_ERR(Lstm, &l1, NULL, SHAPE_ERR, "attribute num_layers", SH(F32, 2, 7, 3), SH(F32, 20, 3), SH(F32, 20, 5),
             SH(F32, 20));

  /* Gru H=5, L=1, uni, I=3: w_ih [15, 3], w_hh [15, 5], b_ih [15], b_hh [15] */
  rlx_attrs_Gru g = {.hidden_size = 5, .num_layers = 1, .bidirectional = false, .carry = false};
  EXPECT(Gru, &g, NULL, SH(F32, 2, 7, 5), SH(F32, 2, 7, 3), SH(F32, 15, 3), SH(F32, 15, 5), SH(F32, 15), SH(F32, 15));
  EXPECT_ERR(Gru, &g, NULL, SHAPE_ERR, "operand 4 (b_hh)", SH(F32, 2, 7, 3), SH(F32, 15, 3), SH(F32, 15, 5),
             SH(F32, 15), SH(F32, 20));
  g.carry = true;
  EXPECT(Gru, &g, NULL, SH(F32, 2, 7, 5), SH(F32, 2, 7, 3), SH(F32, 15, 3), SH(F32, 15, 5), SH(F32, 15), SH(F32, 15),
         SH(F32, 1, 2, 5));
  EXPECT_ERR(Gru, &g, NULL, SHAPE_ERR, "operand 5 (h0)", SH(F32, 2, 7, 3), SH(F32, 15, 3), SH(F32, 15, 5), SH(F32, 15),
             SH(F32, 15), SH(F32, 2, 2, 5));

  /* Rnn H=5, L=1, bidirectional, I=3: w_ih = 2*5*3 = 30, w_hh = 2*5*5 = 50, bias = 10 -> [B, S, 10] */
  rlx_attrs_Rnn r = {.hidden_size = 5, .num_layers = 1, .bidirectional = true, .carry = false, .relu = true};
  EXPECT(Rnn, &r, NULL, SH(F32, 2, 7, 10), SH(F32, 2, 7, 3), SH(F32, 30), SH(F32, 50), SH(F32, 10));
  /* L=2, uni: w_ih = 5*(3 + 5) = 40, w_hh = 2*25 = 50, bias = 10 */
  r.bidirectional = false;
  r.num_layers = 2;
  EXPECT(Rnn, &r, NULL, SH(F32, 2, 7, 5), SH(F32, 2, 7, 3), SH(F32, 40), SH(F32, 50), SH(F32, 10));
  EXPECT_ERR(Rnn, &r, NULL, SHAPE_ERR, "operand 1 (w_ih)", SH(F32, 2, 7, 3), SH(F32, 15, 3), SH(F32, 50), SH(F32, 10));
  r.carry = true;
  EXPECT(Rnn, &r, NULL, SH(F32, 2, 7, 5), SH(F32, 2, 7, 3), SH(F32, 40), SH(F32, 50), SH(F32, 10), SH(F32, 2, 2, 5));
  EXPECT_ERR(Rnn, &r, NULL, VERIFY_ERR, "h0 for carry", SH(F32, 2, 7, 3), SH(F32, 40), SH(F32, 50), SH(F32, 10));
}

/* ---- splatting: N = 10 gaussians with C = 4 SH coefficients (SH length 10*4*3 = 120) ---- */

#define SCENE SH(F32, 30), SH(F32, 30), SH(F32, 40), SH(F32, 10), SH(F32, 30), SH(F32, 120), SH(F32, 23)

static void test_splat(void) {
  rlx_attrs_GaussianSplatRender r;
  rlx_attrs_init(RLX_OP_GaussianSplatRender, &r);
  r.width = 8;
  r.height = 6;
  r.tile_size = 4;
  EXPECT(GaussianSplatRender, &r, NULL, SH(F32, 192), SCENE); /* 8 * 6 * 4 */
  EXPECT(GaussianSplatRender, &r, NULL, SH(F32, 192), SH(F32, 10, 3), SH(F32, 10, 3), SH(F32, 10, 4), SH(F32, 10),
         SH(F32, 10, 3), SH(F32, 10, 4, 3), SH(F32, 23));
  EXPECT(GaussianSplatRender, &r, NULL, SH(F32, 192), SH(F32, SYM(0)), SH(F32, SYM(0)), SH(F32, SYM(1)),
         SH(F32, SYM(2)), SH(F32, SYM(0)), SH(F32, SYM(3)), SH(F32, 23));
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "operand 0 (positions)", SH(F32, 31), SH(F32, 30), SH(F32, 40),
             SH(F32, 10), SH(F32, 30), SH(F32, 120), SH(F32, 23));
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "operand 2 (rotations)", SH(F32, 30), SH(F32, 30), SH(F32, 30),
             SH(F32, 10), SH(F32, 30), SH(F32, 120), SH(F32, 23));
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "operand 5 (sh)", SH(F32, 30), SH(F32, 30), SH(F32, 40),
             SH(F32, 10), SH(F32, 30), SH(F32, 100), SH(F32, 23));
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "operand 6 (meta)", SH(F32, 30), SH(F32, 30), SH(F32, 40),
             SH(F32, 10), SH(F32, 30), SH(F32, 120), SH(F32, 22));
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "operand 3 (opacities) has dtype f64", SH(F32, 30), SH(F32, 30),
             SH(F32, 40), SH(F64, 10), SH(F32, 30), SH(F32, 120), SH(F32, 23));
  r.width = 0;
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "attribute width", SCENE);
  r.width = 8;
  r.alpha_cutoff = 2.0f;
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "attribute alpha_cutoff", SCENE);
  r.alpha_cutoff = 0.01f;
  r.radius_scale = 0.0f;
  EXPECT_ERR(GaussianSplatRender, &r, NULL, SHAPE_ERR, "attribute radius_scale", SCENE);

  /* backward: 14N + SH = 140 + 120 = 260 */
  rlx_attrs_GaussianSplatRenderBackward b;
  rlx_attrs_init(RLX_OP_GaussianSplatRenderBackward, &b);
  b.width = 8;
  b.height = 6;
  EXPECT(GaussianSplatRenderBackward, &b, NULL, SH(F32, 260), SCENE, SH(F32, 192));
  EXPECT_ERR(GaussianSplatRenderBackward, &b, NULL, SHAPE_ERR, "operand 7 (d_loss_rgba)", SCENE, SH(F32, 191));
  EXPECT_ERR(GaussianSplatRenderBackward, &b, NULL, VERIFY_ERR, "needs exactly 8", SCENE);
  b.max_anisotropy = 0.5f;
  EXPECT_ERR(GaussianSplatRenderBackward, &b, NULL, SHAPE_ERR, "attribute max_anisotropy", SCENE, SH(F32, 192));
  b.max_anisotropy = 10.0f;
  b.sh_band = -1;
  EXPECT_ERR(GaussianSplatRenderBackward, &b, NULL, SHAPE_ERR, "attribute sh_band", SCENE, SH(F32, 192));
  b.sh_band = 0;
  b.loss_grad_clip = -1.0f;
  EXPECT_ERR(GaussianSplatRenderBackward, &b, NULL, SHAPE_ERR, "attribute loss_grad_clip", SCENE, SH(F32, 192));

  /* prepare: tiles = ceil(8/4) * ceil(6/4) = 4; 15*10 + 576 + 2*4 + 3*48 + 11 = 889 */
  rlx_attrs_GaussianSplatPrepare p;
  rlx_attrs_init(RLX_OP_GaussianSplatPrepare, &p);
  p.width = 8;
  p.height = 6;
  p.tile_size = 4;
  EXPECT(GaussianSplatPrepare, &p, NULL, SH(F32, 889), SCENE);
  p.max_list_entries = 0;
  EXPECT_ERR(GaussianSplatPrepare, &p, NULL, SHAPE_ERR, "attribute max_list_entries", SCENE);
  p.max_list_entries = 576;
  EXPECT_ERR(GaussianSplatPrepare, &p, NULL, SHAPE_ERR, "symbolic", SH(F32, SYM(0)), SH(F32, SYM(0)), SH(F32, SYM(1)),
             SH(F32, SYM(2)), SH(F32, SYM(0)), SH(F32, SYM(3)), SH(F32, 23));

  rlx_attrs_GaussianSplatRasterize z;
  rlx_attrs_init(RLX_OP_GaussianSplatRasterize, &z);
  z.width = 8;
  z.height = 6;
  z.tile_size = 4;
  EXPECT(GaussianSplatRasterize, &z, NULL, SH(F32, 192), SH(F32, 889), SH(F32, 23));
  EXPECT(GaussianSplatRasterize, &z, NULL, SH(F32, 192), SH(F32, 754), SH(F32, 23)); /* N = 1 */
  EXPECT_ERR(GaussianSplatRasterize, &z, NULL, SHAPE_ERR, "operand 0 (prepared)", SH(F32, 888), SH(F32, 23));
  EXPECT_ERR(GaussianSplatRasterize, &z, NULL, SHAPE_ERR, "operand 0 (prepared)", SH(F32, 739),
             SH(F32, 23)); /* N = 0 */
  EXPECT_ERR(GaussianSplatRasterize, &z, NULL, SHAPE_ERR, "operand 1 (meta)", SH(F32, 889), SH(F32, 24));
  z.tile_size = 0;
  EXPECT_ERR(GaussianSplatRasterize, &z, NULL, SHAPE_ERR, "attribute tile_size", SH(F32, 889), SH(F32, 23));
}

/* ---- signal ---- */

static void test_fft(void) {
  rlx_attrs_Fft f;
  rlx_attrs_init(RLX_OP_Fft, &f);
  EXPECT(Fft, &f, NULL, SH(F32, 4, 16), SH(F32, 4, 16));
  EXPECT(Fft, &f, NULL, SH(F64, 10), SH(F64, 10)); /* any N (here 5) */
  EXPECT(Fft, &f, NULL, SH(C64, 4, 7), SH(C64, 4, 7));
  EXPECT(Fft, &f, NULL, SH(C128, SYM(0), 3), SH(C128, SYM(0), 3));
  EXPECT_ERR(Fft, &f, NULL, SHAPE_ERR, "operand 0", SH(F32, 4, 7));
  EXPECT_ERR(Fft, &f, NULL, SHAPE_ERR, "operand 0", SH(F32, 4, 0));
  EXPECT_ERR(Fft, &f, NULL, SHAPE_ERR, "operand 0 has dtype i32", SH(I32, 4, 16));
  EXPECT_ERR(Fft, &f, NULL, SHAPE_ERR, "operand 0 (x)", SCALAR(C64));
  f.norm = 5;
  EXPECT_ERR(Fft, &f, NULL, SHAPE_ERR, "attribute norm", SH(F32, 4, 16));

  rlx_attrs_FftQ q;
  rlx_attrs_init(RLX_OP_FftQ, &q);
  q.scale = RLX_FFTQ_SCALE_SATURATING;
  EXPECT(FftQ, &q, NULL, SH(I16, 2, 16), SH(I16, 2, 16));
  EXPECT(FftQ, &q, NULL, SH(C64, 2, 8), SH(C64, 2, 8));
  EXPECT_ERR(FftQ, &q, NULL, SHAPE_ERR, "power-of-two", SH(I16, 2, 12));
  EXPECT_ERR(FftQ, &q, NULL, SHAPE_ERR, "operand 0 has dtype bool", SH(BOOL, 2, 16));
  q.scale = 9;
  EXPECT_ERR(FftQ, &q, NULL, SHAPE_ERR, "attribute scale", SH(I16, 2, 16));

  rlx_attrs_FftButterflyStage b = {.stage = 2, .n_fft = 8};
  EXPECT(FftButterflyStage, &b, NULL, SH(F32, 3, 16), SH(F32, 3, 16), SH(F32, 4), SH(F32, 4), SH(F32, 4), SH(F32, 4));
  EXPECT(FftButterflyStage, &b, NULL, SH(F32, 3, 8, 2), SH(F32, 3, 8, 2), SH(F32, 4), SH(F32, 4), SH(F32, 4),
         SH(F32, 4));
  EXPECT_ERR(FftButterflyStage, &b, NULL, SHAPE_ERR, "operand 3 (tw_re)", SH(F32, 3, 16), SH(F32, 4), SH(F32, 4),
             SH(F32, 8), SH(F32, 4));
  EXPECT_ERR(FftButterflyStage, &b, NULL, SHAPE_ERR, "operand 0 (state)", SH(F32, 3, 14), SH(F32, 4), SH(F32, 4),
             SH(F32, 4), SH(F32, 4));
  b.stage = 3;
  EXPECT_ERR(FftButterflyStage, &b, NULL, SHAPE_ERR, "attribute stage", SH(F32, 3, 16), SH(F32, 4), SH(F32, 4),
             SH(F32, 4), SH(F32, 4));
  b.stage = 0;
  b.n_fft = 6;
  EXPECT_ERR(FftButterflyStage, &b, NULL, SHAPE_ERR, "attribute n_fft", SH(F32, 3, 12), SH(F32, 3), SH(F32, 3),
             SH(F32, 3), SH(F32, 3));
}

static void test_logmel_welch_pconv(void) {
  /* spectrum [2, 10, 400]: n_fft = 200, n_bins = 101 */
  EXPECT(LogMel, NULL, NULL, SH(F32, 2, 10, 80), SH(F32, 2, 10, 400), SH(F32, 80, 101));
  EXPECT(LogMel, NULL, NULL, SH(F32, 80), SH(F32, 400), SH(F32, 80, 101));
  EXPECT_ERR(LogMel, NULL, NULL, SHAPE_ERR, "operand 1 (filters)", SH(F32, 2, 10, 400), SH(F32, 80, 100));
  EXPECT_ERR(LogMel, NULL, NULL, SHAPE_ERR, "operand 0 (spectrum)", SH(F32, 2, 10, 401), SH(F32, 80, 101));
  EXPECT_ERR(LogMel, NULL, NULL, SHAPE_ERR, "operand 1 (filters) has dtype f64", SH(F32, 400), SH(F64, 80, 101));
  EXPECT(LogMelBackward, NULL, NULL, SH(F32, 2, 10, 400), SH(F32, 2, 10, 400), SH(F32, 80, 101), SH(F32, 2, 10, 80));
  EXPECT_ERR(LogMelBackward, NULL, NULL, SHAPE_ERR, "operand 2 (dy)", SH(F32, 2, 10, 400), SH(F32, 80, 101),
             SH(F32, 2, 10, 81));

  rlx_attrs_WelchPeaks w = {.k = 5, .n_segments = 4};
  EXPECT(WelchPeaks, &w, NULL, SH(F32, 3, 10), SH(F32, 12, 64)); /* 12 / 4 = 3 batches, 2k = 10 */
  EXPECT_ERR(WelchPeaks, &w, NULL, SHAPE_ERR, "attribute n_segments", SH(F32, 13, 64));
  EXPECT_ERR(WelchPeaks, &w, NULL, SHAPE_ERR, "operand 0 (spectrum)", SH(F32, 12, 63));
  EXPECT_ERR(WelchPeaks, &w, NULL, SHAPE_ERR, "symbolic", SH(F32, SYM(0), 64));
  w.n_segments = 1;
  EXPECT(WelchPeaks, &w, NULL, SH(F32, SYM(0), 10), SH(F32, SYM(0), 64));
  w.k = 0;
  EXPECT_ERR(WelchPeaks, &w, NULL, SHAPE_ERR, "attribute k", SH(F32, 12, 64));

  rlx_attrs_PartitionedConv p = {.block = 64};
  EXPECT(PartitionedConv, &p, NULL, SH(F32, 2, 130), SH(F32, 2, 100), SH(F32, 31)); /* 100 + 31 - 1 */
  EXPECT(PartitionedConv, &p, NULL, SH(F32, 1), SH(F32, 1), SH(F32, 1));
  EXPECT_ERR(PartitionedConv, &p, NULL, SHAPE_ERR, "operand 1 (ir)", SH(F32, 2, 100), SH(F32, 0));
  EXPECT_ERR(PartitionedConv, &p, NULL, SHAPE_ERR, "operand 1 (ir)", SH(F32, 2, 100), SH(F32, 1, 31));
  EXPECT_ERR(PartitionedConv, &p, NULL, SHAPE_ERR, "symbolic", SH(F32, 2, SYM(1)), SH(F32, 31));
  rlx_shape decl = SH(F32, 2, SYM(4));
  EXPECT(PartitionedConv, &p, &decl, decl, SH(F32, 2, SYM(1)), SH(F32, 31));
  p.block = 0;
  EXPECT_ERR(PartitionedConv, &p, NULL, SHAPE_ERR, "attribute block", SH(F32, 2, 100), SH(F32, 31));
}

/* ---- SPD (f64 matrices, n = 4, batch B = 6) ---- */

#define M4 SH(F64, 4, 4)
#define B4 SH(F64, 6, 4, 4)

static void test_spd_forward(void) {
  EXPECT(BiMap, NULL, NULL, SH(F64, 3, 3), SH(F64, 3, 5), SH(F64, 5, 5));
  EXPECT_ERR(BiMap, NULL, NULL, SHAPE_ERR, "operand 1 (x)", SH(F64, 3, 5), SH(F64, 5, 4));
  EXPECT_ERR(BiMap, NULL, NULL, SHAPE_ERR, "operand 0 (w)", SH(F64, 3, 4), SH(F64, 5, 5));
  EXPECT_ERR(BiMap, NULL, NULL, SHAPE_ERR, "operand 1 (x) has dtype f32", SH(F64, 3, 5), SH(F32, 5, 5));
  EXPECT_ERR(BiMap, NULL, NULL, SHAPE_ERR, "operand 0 (w) has dtype i32", SH(I32, 3, 5), SH(I32, 5, 5));

  rlx_attrs_ReEig re = {.eps = 1e-4f};
  EXPECT(ReEig, &re, NULL, SH(F64, 36), M4); /* 2*16 + 4 */
  EXPECT(ReEig, &re, NULL, SH(F32, 3), SH(F32, 1, 1));
  EXPECT_ERR(ReEig, &re, NULL, SHAPE_ERR, "operand 0 (x)", SH(F64, 4, 3));
  EXPECT_ERR(ReEig, &re, NULL, SHAPE_ERR, "symbolic", SH(F64, SYM(0), SYM(0)));
  rlx_shape decl = SH(F64, SYM(9));
  EXPECT(ReEig, &re, &decl, decl, SH(F64, SYM(0), SYM(0)));
  re.eps = 0.0f;
  EXPECT(ReEig, &re, NULL, SH(F64, 36), M4);
  re.eps = -1.0f;
  EXPECT_ERR(ReEig, &re, NULL, SHAPE_ERR, "attribute eps", M4);
  rlx_attrs_LogEig le = {.eps = 0.0f};
  EXPECT_ERR(LogEig, &le, NULL, SHAPE_ERR, "attribute eps", M4);
  le.eps = 1e-4f;
  EXPECT(LogEig, &le, NULL, SH(F64, 36), M4);

  rlx_attrs_SpdBatchNorm bn = {.eps = 1e-5f};
  EXPECT(SpdBatchNorm, &bn, NULL, B4, B4, M4, M4);
  EXPECT_ERR(SpdBatchNorm, &bn, NULL, SHAPE_ERR, "operand 2 (g)", B4, M4, SH(F64, 3, 3));
  EXPECT_ERR(SpdBatchNorm, &bn, NULL, SHAPE_ERR, "operand 0 (x)", SH(F64, 6, 4, 3), M4, M4);

  rlx_attrs_SpdKarcherMean km = {.iters = 20, .tol = 1e-6f};
  EXPECT(SpdKarcherMean, &km, NULL, M4, B4);
  km.iters = -1;
  EXPECT_ERR(SpdKarcherMean, &km, NULL, SHAPE_ERR, "attribute iters", B4);
  km.iters = 5;
  km.tol = NAN;
  EXPECT_ERR(SpdKarcherMean, &km, NULL, SHAPE_ERR, "attribute tol", B4);
  rlx_attrs_SpdKarcherMeanWeighted kw = {.iters = 20, .tol = 1e-6f};
  EXPECT(SpdKarcherMeanWeighted, &kw, NULL, M4, B4, SH(F64, 6));
  EXPECT(SpdKarcherMeanWeighted, &kw, NULL, M4, B4, SH(F32, 6));
  EXPECT_ERR(SpdKarcherMeanWeighted, &kw, NULL, SHAPE_ERR, "operand 1 (w)", B4, SH(F64, 5));

  EXPECT(SpdLogMap, NULL, NULL, M4, M4, M4);
  EXPECT(SpdExpMap, NULL, NULL, M4, M4, M4);
  EXPECT_ERR(SpdLogMap, NULL, NULL, SHAPE_ERR, "operand 1 (x)", M4, SH(F64, 3, 3));
  EXPECT_ERR(SpdExpMap, NULL, NULL, SHAPE_ERR, "operand 1 (v)", M4, B4);
  EXPECT(SpdParallelTransport, NULL, NULL, M4, M4, M4, M4);
  EXPECT_ERR(SpdParallelTransport, NULL, NULL, SHAPE_ERR, "operand 2 (v)", M4, M4, SH(F64, 5, 5));

  rlx_attrs_SpdMatrixFnBatch fb = {.kind = RLX_SPD_FN_SQRTM};
  EXPECT(SpdMatrixFnBatch, &fb, NULL, B4, B4);
  EXPECT_ERR(SpdMatrixFnBatch, &fb, NULL, SHAPE_ERR, "operand 0 (x)", M4);
  fb.kind = 4;
  EXPECT_ERR(SpdMatrixFnBatch, &fb, NULL, SHAPE_ERR, "attribute kind", B4);

  EXPECT(Eigh, NULL, NULL, SH(F64, 20), M4); /* 16 + 4 */
  EXPECT(Eigh, NULL, NULL, SH(F64, 0), SH(F64, 0, 0));
  EXPECT_ERR(Eigh, NULL, NULL, SHAPE_ERR, "operand 0 (a)", SH(F64, 4, 5));
  EXPECT(EighBatch, NULL, NULL, SH(F64, 6, 20), B4);
  EXPECT(EighBatch, NULL, NULL, SH(F64, SYM(0), 20), SH(F64, SYM(0), 4, 4));
  EXPECT_ERR(EighBatch, NULL, NULL, SHAPE_ERR, "operand 0 (a)", M4);
}

static void test_spd_backward(void) {
  rlx_attrs_ReEigBackward rb = {.eps = 1e-4f};
  EXPECT(ReEigBackward, &rb, NULL, M4, SH(F64, 4), SH(F64, 16), SH(F64, 4, 4));
  EXPECT_ERR(ReEigBackward, &rb, NULL, SHAPE_ERR, "operand 1 (u)", SH(F64, 4), SH(F64, 15), SH(F64, 16));
  EXPECT_ERR(ReEigBackward, &rb, NULL, SHAPE_ERR, "operand 2 (dy)", SH(F64, 4), SH(F64, 16), SH(F64, 3, 3));
  rlx_attrs_LogEigBackward lb = {.eps = 1e-4f};
  EXPECT(LogEigBackward, &lb, NULL, SH(F64, 3, 3), SH(F64, 3), SH(F64, 3, 3), SH(F64, 9));
  lb.eps = 0.0f;
  EXPECT_ERR(LogEigBackward, &lb, NULL, SHAPE_ERR, "attribute eps", SH(F64, 3), SH(F64, 9), SH(F64, 9));

  rlx_attrs_SpdBatchNormBackwardX bx = {.eps = 1e-5f};
  EXPECT(SpdBatchNormBackwardX, &bx, NULL, B4, M4, M4, B4);
  EXPECT_ERR(SpdBatchNormBackwardX, &bx, NULL, SHAPE_ERR, "operand 2 (dy)", M4, M4, SH(F64, 6, 3, 3));
  rlx_attrs_SpdBatchNormBackwardG bg = {.eps = 1e-5f};
  EXPECT(SpdBatchNormBackwardG, &bg, NULL, M4, B4, M4, M4, B4);
  EXPECT_ERR(SpdBatchNormBackwardG, &bg, NULL, SHAPE_ERR, "operand 3 (dy)", B4, M4, M4, SH(F64, 5, 4, 4));

  EXPECT(SpdLogMapBackward, NULL, NULL, SH(F64, 2, 4, 4), M4, M4, M4);
  EXPECT_ERR(SpdLogMapBackward, NULL, NULL, SHAPE_ERR, "operand 1 (x)", M4, SH(F64, 5, 5), M4);
  EXPECT(SpdExpMapBackward, NULL, NULL, SH(F64, 2, 4, 4), M4, M4, M4);
  EXPECT_ERR(SpdExpMapBackward, NULL, NULL, SHAPE_ERR, "operand 2 (dy)", M4, M4, SH(F64, 4, 5));
  EXPECT(SpdParallelTransportBackward, NULL, NULL, SH(F64, 3, 4, 4), M4, M4, M4, M4);
  EXPECT_ERR(SpdParallelTransportBackward, NULL, NULL, VERIFY_ERR, "needs exactly 4", M4, M4, M4);

  rlx_attrs_SpdMatrixFnBatchBackward fb = {.kind = RLX_SPD_FN_LOGM};
  EXPECT(SpdMatrixFnBatchBackward, &fb, NULL, B4, B4, B4);
  EXPECT_ERR(SpdMatrixFnBatchBackward, &fb, NULL, SHAPE_ERR, "operand 1 (dy)", B4, SH(F64, 5, 4, 4));

  /* EighBackward recovers n from L = n^2 + n */
  EXPECT(EighBackward, NULL, NULL, M4, SH(F64, 20), SH(F64, 20));
  EXPECT(EighBackward, NULL, NULL, SH(F64, 1, 1), SH(F64, 2), SH(F64, 2));
  EXPECT(EighBackward, NULL, NULL, SH(F64, 0, 0), SH(F64, 0), SH(F64, 0));
  EXPECT(EighBackward, NULL, NULL, SH(F64, 100000, 100000), SH(F64, 10000100000), SH(F64, 10000100000));
  /* the largest n whose n^2 + n fits in int64 */
  EXPECT(EighBackward, NULL, NULL, SH(F64, 3037000499, 3037000499), SH(F64, 9223372033963249500),
         SH(F64, 9223372033963249500));
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "not of that form", SH(F64, 21), SH(F64, 21));
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "not of that form", SH(F64, 1), SH(F64, 1));
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "not of that form", SH(F64, 9223372036854775807),
             SH(F64, 9223372036854775807));
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "operand 1 (bar)", SH(F64, 20), SH(F64, 12));
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "operand 0 (fwd)", SH(F64, 4, 5), SH(F64, 4, 5));
  EXPECT(EighBackward, NULL, NULL, M4, SH(F64, SYM(0)), SH(F64, 20)); /* length from the static operand */
  EXPECT_ERR(EighBackward, NULL, NULL, SHAPE_ERR, "operand 1 (bar)", SH(F64, SYM(0)), SH(F64, 21));
  EXPECT(EighBatchBackward, NULL, NULL, SH(F64, 3, 4, 4), SH(F64, 3, 20), SH(F64, 3, 20));
  EXPECT_ERR(EighBatchBackward, NULL, NULL, SHAPE_ERR, "not of that form", SH(F64, 3, 19), SH(F64, 3, 19));
  EXPECT_ERR(EighBatchBackward, NULL, NULL, SHAPE_ERR, "operand 1 (bar)", SH(F64, 3, 20), SH(F64, 2, 20));
}

int main(void) {
  test_selective_scan_mamba();
  test_gated_delta_net();
  test_lstm_gru_rnn();
  test_splat();
  test_fft();
  test_logmel_welch_pconv();
  test_spd_forward();
  test_spd_backward();
  return rlx_test_finish("infer_special");
}
