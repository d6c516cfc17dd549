/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Finite-difference gradient checks: for every differentiable op kind the CPU can run (directly or
 * through a shared decomposition), a small graph f = sum(op(params...) * W) with random W is
 * differentiated with rlx_grad, both graphs are compiled, and every analytic gradient element is
 * compared with a central difference of f, in f64: |a - fd| <= tol (1 + |fd|) with tol = 1e-6
 * (looser for cases that run in f32). Each case runs with the dedicated backward ops and with their
 * primitive decompositions (use_backward_ops = false), on every registered backend that can
 * compile it. A coverage check lists the differentiable kinds the CPU claims that have no case.
 *
 * The builders live in tests/unit/gradcheck/; this file holds the case table and the check. */
#include "backends/cpu/cpu_backend.h"
#include "gradcheck/gradcheck.h"
#include "passes/passes.h"

uint64_t adt_rng_state = 0x9e3779b97f4a7c15ull;

#define CASE(NAME, OP, B, ...) \
  { {NAME, RLX_OP_##OP, B, {__VA_ARGS__}, 0, 0, 0, false}, NULL, 0 }
#define CASEK(NAME, OP, B, K, V, ...) \
  { {NAME, RLX_OP_##OP, B, {__VA_ARGS__}, 0, 0, 0, false}, &K, V }

static const gc_entry cases[] = {
/* activations: one per kind */
#define ACT(K, lo, hi) CASEK("Activation " #K, Activation, b_act, g_act, RLX_ACT_##K, P1("x", lo, hi, 2, 2, 3))
    ACT(GELU, -2, 2),
    ACT(GELU_APPROX, -2, 2),
    ACT(SILU, -2, 2),
    ACT(RELU, -1, 1),
    ACT(SIGMOID, -2, 2),
    ACT(TANH, -2, 2),
    ACT(EXP, -1, 1),
    ACT(LOG, 0.3, 2),
    ACT(SQRT, 0.3, 2),
    ACT(RSQRT, 0.3, 2),
    ACT(NEG, -1, 1),
    ACT(ABS, -1, 1),
    ACT(SIN, -2, 2),
    ACT(COS, -2, 2),
    ACT(TAN, -1, 1),
    ACT(ATAN, -2, 2),
    ACT(RECIP, 0.5, 2),
    ACT(FLOOR, 0.1, 0.9),
    ACT(CEIL, 0.1, 0.9),
    ACT(SIGN, 0.2, 0.9),
    ACT(SOFTPLUS, -2, 2),
    ACT(ELU, -2, 2),
    ACT(ERF, -2, 2),
    ACT(HARD_SWISH, -4, 4),
    ACT(HARD_SIGMOID, -4, 4),
    ACT(MISH, -2, 2),
    ACT(SOFTSIGN, -2, 2),
    ACT(LOG_SIGMOID, -2, 2),
#undef ACT
    /* Round: the straight-through gradient is not the derivative; checked in test_autodiff */
    /* an f32 intermediate: coarser step and tolerance */
    {{"Cast f64->f32->f64", RLX_OP_Cast, b_cast, {P1("x", -1, 1, 2, 2, 3)}, 1e-3, 1e-4, 0, false}, NULL, 0},
#define BIN(K, lo, hi, blo, bhi) \
  CASEK("Binary " #K, Binary, b_binary, g_binop, RLX_BINOP_##K, P1("a", lo, hi, 2, 2, 3), P1("b", blo, bhi, 2, 2, 1))
    BIN(ADD, -1, 1, -1, 1),
    BIN(SUB, -1, 1, -1, 1),
    BIN(MUL, -1, 1, -1, 1),
    BIN(DIV, -1, 1, 0.5, 1.5),
    BIN(MAX, -1, 1, -1, 1),
    BIN(MIN, -1, 1, -1, 1),
    BIN(POW, 0.5, 2, -1, 2),
    BIN(ATAN2, -1, 1, -1, 1),
#undef BIN
    CASE("Binary MOD (dividend only)", Binary, b_mod, P1("a", 0.1, 3, 2, 2, 3)),
    CASE("Where", Where, b_where, P1("z", -1, 1, 2, 2, 3), P1("t", -1, 1, 2, 2, 3), P1("f", -1, 1, 1, 3)),
    CASE("Fma", Fma, b_fma, P1("a", -1, 1, 2, 2, 3), P1("b", -1, 1, 1, 3), P1("c", -1, 1, 2, 2, 1)),
    CASE("Clamp", Clamp, b_clamp, P1("x", -1, 1, 2, 3, 4)),
    /* linear algebra */
    CASE("MatMul batch-broadcast", MatMul, b_matmul, P1("a", -1, 1, 3, 2, 3, 4), P1("b", -1, 1, 2, 4, 5)),
    CASE("MatMul left-broadcast", MatMul, b_matmul, P1("a", -1, 1, 2, 3, 4), P1("b", -1, 1, 3, 2, 4, 2)),
    CASE("DotGeneral", DotGeneral, b_dotgeneral, P1("a", -1, 1, 3, 2, 3, 4), P1("b", -1, 1, 3, 2, 4, 2)),
    CASE("DenseSolve vector", DenseSolve, b_solve, P1("A", -1, 1, 2, 3, 3), P1("b", -1, 1, 1, 3)),
    CASE("DenseSolve matrix", DenseSolve, b_solve, P1("A", -1, 1, 2, 3, 3), P1("b", -1, 1, 2, 3, 2)),
    CASE("BatchedDenseSolve", BatchedDenseSolve, b_bsolve, P1("A", -1, 1, 3, 2, 3, 3), P1("b", -1, 1, 2, 2, 3)),
    CASE("Det", Det, b_det, P1("A", -1, 1, 2, 3, 3)),
    CASE("LogDet", LogDet, b_logdet, P1("A", -1, 1, 2, 3, 3)),
    CASE("Cholesky", Cholesky, b_cholesky, P1("M", -1, 1, 2, 3, 3)),
    CASEK("TriangularSolve upper", TriangularSolve, b_trisolve, g_tri, 0, P1("A", -1, 1, 2, 3, 3),
          P1("b", -1, 1, 1, 3)),
    CASEK("TriangularSolve lower", TriangularSolve, b_trisolve, g_tri, 1, P1("A", -1, 1, 2, 3, 3),
          P1("b", -1, 1, 2, 3, 2)),
    CASEK("TriangularSolve lower^T", TriangularSolve, b_trisolve, g_tri, 3, P1("A", -1, 1, 2, 3, 3),
          P1("b", -1, 1, 2, 3, 2)),
    CASE("GroupedMatMul", GroupedMatMul, b_grouped, P1("x", -1, 1, 2, 4, 3), P1("w", -1, 1, 3, 2, 3, 5)),
    CASE("Sort descending", Sort, b_sort, P1("x", -1, 1, 2, 2, 5)),
    CASE("Svd singular values (wide)", Svd, b_svd, P1("A", -1, 1, 2, 2, 4)),
    CASE("Svd singular values (tall)", Svd, b_svd, P1("A", -1, 1, 2, 4, 3)),
    CASE("Qr Q (tall)", Qr, b_qr_q, P1("A", -1, 1, 2, 4, 3)),
    CASE("Qr R (tall)", Qr, b_qr_r, P1("A", -1, 1, 2, 4, 3)),
    CASE("Qr Q (square)", Qr, b_qr_q, P1("A", -1, 1, 2, 3, 3)),
    CASE("Qr R (square)", Qr, b_qr_r, P1("A", -1, 1, 2, 3, 3)),
    /* normalisation */
    CASE("LayerNorm", LayerNorm, b_layernorm, P1("x", -1, 1, 3, 2, 3, 4), P1("gamma", 0.5, 1.5, 1, 4),
         P1("beta", -1, 1, 1, 4)),
    CASE("RmsNorm", RmsNorm, b_rmsnorm, P1("x", -1, 1, 3, 2, 3, 4), P1("gamma", 0.5, 1.5, 1, 4),
         P1("beta", -1, 1, 1, 4)),
    CASE("GroupNorm N=2", GroupNorm, b_groupnorm, P1("x", -1, 1, 4, 2, 4, 2, 2), P1("gamma", 0.5, 1.5, 1, 4),
         P1("beta", -1, 1, 1, 4)),
    CASE("BatchNormInference", BatchNormInference, b_batchnorm, P1("x", -1, 1, 3, 2, 3, 4), P1("gamma", 0.5, 1.5, 1, 4),
         P1("beta", -1, 1, 1, 4), P1("mean", -0.5, 0.5, 1, 4), P1("var", 0.5, 2, 1, 4)),
    CASE("LayerNorm2d", LayerNorm2d, b_layernorm2d, P1("x", -1, 1, 4, 2, 3, 2, 2), P1("gamma", 0.5, 1.5, 1, 3),
         P1("beta", -1, 1, 1, 3)),
    CASEK("AdaLayerNorm LN", AdaLayerNorm, b_adaln, g_ada, RLX_ADA_NORM_LAYER_NORM, P1("x", -1, 1, 3, 2, 3, 4),
          P1("scale", -0.5, 0.5, 3, 2, 1, 4), P1("shift", -1, 1, 3, 2, 1, 4)),
    CASEK("AdaLayerNorm RMS", AdaLayerNorm, b_adaln, g_ada, RLX_ADA_NORM_RMS_NORM, P1("x", -1, 1, 3, 2, 3, 4),
          P1("scale", -0.5, 0.5, 3, 2, 1, 4), P1("shift", -1, 1, 3, 2, 1, 4)),
    CASE("GatedResidual", GatedResidual, b_gatedres, P1("x", -1, 1, 3, 2, 3, 4), P1("y", -1, 1, 3, 2, 3, 4),
         P1("gate", -1, 1, 3, 2, 1, 4)),
    /* resampling */
    CASE("ResizeNearest2x", ResizeNearest2x, b_resize, P1("x", -1, 1, 4, 1, 2, 2, 3)),
    CASE("Im2Col stride, dilation, asymmetric padding", Im2Col, b_im2col, P1("x", -1, 1, 4, 2, 2, 4, 5)),
    CASE("Interpolate3d", Interpolate3d, b_interp3d, P1("x", -1, 1, 5, 1, 2, 2, 3, 3)),
    /* attention */
    CASEK("Attention rank 3", Attention, b_attention, g_attn, 0, P1("q", -1, 1, 3, 2, 3, 6), P1("k", -1, 1, 3, 2, 4, 6),
          P1("v", -1, 1, 3, 2, 4, 6)),
    CASEK("Attention causal BHSD", Attention, b_attention, g_attn, 1, P1("q", -1, 1, 4, 1, 2, 3, 3),
          P1("k", -1, 1, 4, 1, 2, 3, 3), P1("v", -1, 1, 4, 1, 2, 3, 3)),
    CASEK("Attention window+scale+softcap", Attention, b_attention, g_attn, 2, P1("q", -1, 1, 4, 1, 3, 2, 3),
          P1("k", -1, 1, 4, 1, 4, 2, 3), P1("v", -1, 1, 4, 1, 4, 2, 3)),
    CASEK("Attention custom mask", Attention, b_attention, g_attn, 3, P1("q", -1, 1, 3, 2, 3, 6),
          P1("k", -1, 1, 3, 2, 4, 6), P1("v", -1, 1, 3, 2, 4, 6)),
    CASEK("Attention GQA", Attention, b_attention, g_attn, 4, P1("q", -1, 1, 4, 1, 3, 2, 3),
          P1("k", -1, 1, 4, 1, 3, 1, 3), P1("v", -1, 1, 4, 1, 3, 1, 3)),
    CASEK("Attention bias (differentiated)", Attention, b_attention, g_attn, 5, P1("q", -1, 1, 4, 1, 2, 3, 3),
          P1("k", -1, 1, 4, 1, 2, 4, 3), P1("v", -1, 1, 4, 1, 2, 4, 3), P1("bias", -1, 1, 4, 1, 1, 3, 4)),
    CASEK("Attention v_head_dim 2, GQA, softcap", Attention, b_attention, g_attn, 6, P1("q", -1, 1, 4, 1, 3, 2, 3),
          P1("k", -1, 1, 4, 1, 4, 1, 3), P1("v", -1, 1, 4, 1, 4, 1, 2)),
    CASEK("Rope NeoX", Rope, b_rope, g_rope, 0, P1("x", -1, 1, 3, 2, 3, 8)),
    CASEK("Rope GptJ partial", Rope, b_rope, g_rope, 1, P1("x", -1, 1, 3, 2, 3, 8)),
    CASE("AxialRope2d", AxialRope2d, b_axialrope, P1("x", -1, 1, 3, 1, 4, 4)),
    /* shape */
    CASE("Reshape", Reshape, b_reshape, P1("x", -1, 1, 3, 2, 3, 2)),
    CASE("Transpose", Transpose, b_transpose, P1("x", -1, 1, 3, 2, 3, 4)),
    CASE("Narrow", Narrow, b_narrow, P1("x", -1, 1, 2, 2, 4)),
    CASE("Concat (operand used twice)", Concat, b_concat, P1("a", -1, 1, 2, 2, 2), P1("b", -1, 1, 2, 2, 3)),
    CASE("Expand", Expand, b_expand, P1("x", -1, 1, 2, 3, 1)),
    CASEK("Gather axis 0, 2-D indices", Gather, b_gather, g_gather, 0, P1("t", -1, 1, 2, 3, 2)),
    CASEK("Gather axis 1, f32 indices", Gather, b_gather, g_gather, 1, P1("t", -1, 1, 3, 2, 4, 2)),
    CASE("Reverse", Reverse, b_reverse, P1("x", -1, 1, 3, 2, 3, 2)),
    CASEK("Pad constant", Pad, b_pad, g_pad, RLX_PAD_MODE_CONSTANT, P1("x", -1, 1, 2, 3, 4)),
    CASEK("Pad reflect", Pad, b_pad, g_pad, RLX_PAD_MODE_REFLECT, P1("x", -1, 1, 2, 3, 4)),
    CASEK("Pad replicate", Pad, b_pad, g_pad, RLX_PAD_MODE_REPLICATE, P1("x", -1, 1, 2, 3, 4)),
    CASEK("Pad circular", Pad, b_pad, g_pad, RLX_PAD_MODE_CIRCULAR, P1("x", -1, 1, 2, 3, 4)),
    CASEK("Slice step 1", Slice, b_slice, g_slice, 0, P1("x", -1, 1, 2, 2, 7)),
    CASEK("Slice step 2", Slice, b_slice, g_slice, 1, P1("x", -1, 1, 2, 2, 7)),
    CASEK("Slice step -1", Slice, b_slice, g_slice, 2, P1("x", -1, 1, 2, 2, 7)),
    CASEK("Slice step -3", Slice, b_slice, g_slice, 3, P1("x", -1, 1, 2, 2, 7)),
    CASE("Tile", Tile, b_tile, P1("x", -1, 1, 3, 2, 2, 2)),
    CASE("Trilu", Trilu, b_trilu, P1("x", -1, 1, 3, 2, 3, 3)),
    CASE("Roll", Roll, b_roll, P1("x", -1, 1, 3, 3, 2, 4)),
    CASE("KvAppend", KvAppend, b_kvappend, P1("cache", -1, 1, 2, 4, 3), P1("row", -1, 1, 2, 1, 3)),
/* reductions */
#define RED(K, keep) \
  CASEK("Reduce " #K " keep=" #keep, Reduce, b_reduce, g_red, RLX_REDUCE_##K * 2 + keep, P1("x", -1, 1, 3, 2, 3, 2))
    RED(SUM, 0),
    RED(SUM, 1),
    RED(MEAN, 0),
    RED(MEAN, 1),
    RED(MAX, 0),
    RED(MAX, 1),
    RED(MIN, 0),
    RED(MIN, 1),
    RED(PROD, 0),
    RED(PROD, 1),
#undef RED
    CASE("Softmax axis 1", Softmax, b_softmax, P1("x", -1, 1, 3, 2, 3, 2)),
    CASEK("Cumsum", Cumsum, b_cumsum, g_excl, 0, P1("x", -1, 1, 2, 2, 4)),
    CASEK("Cumsum exclusive", Cumsum, b_cumsum, g_excl, 1, P1("x", -1, 1, 2, 2, 4)),
    CASEK("CumProd", CumProd, b_cumprod, g_excl, 0, P1("x", 0.5, 1.5, 2, 2, 4)),
    CASEK("CumProd exclusive", CumProd, b_cumprod, g_excl, 1, P1("x", 0.5, 1.5, 2, 2, 4)),
    CASE("CumMax", CumMax, b_cummax, P1("x", -1, 1, 2, 2, 5)),
    /* convolution and pooling */
    CASEK("Conv stride 2, asymmetric padding", Conv, b_conv, g_conv, 0, P1("x", -1, 1, 4, 2, 2, 5, 4),
          P1("w", -1, 1, 4, 3, 2, 3, 2)),
    CASEK("Conv dilation 2, groups 2", Conv, b_conv, g_conv, 1, P1("x", -1, 1, 4, 1, 4, 6, 4),
          P1("w", -1, 1, 4, 2, 2, 3, 2)),
    CASE("Conv3d", Conv3d, b_conv3d, P1("x", -1, 1, 5, 1, 2, 3, 4, 3), P1("w", -1, 1, 5, 2, 2, 2, 2, 2)),
    CASE("ConvTranspose2d", ConvTranspose2d, b_convt2d, P1("x", -1, 1, 4, 1, 4, 3, 3), P1("w", -1, 1, 4, 4, 1, 2, 3)),
    CASE("ConvTranspose3d", ConvTranspose3d, b_convt3d, P1("x", -1, 1, 5, 1, 2, 2, 2, 2),
         P1("w", -1, 1, 5, 2, 2, 2, 1, 2)),
    CASEK("Pool max", Pool, b_pool, g_pool, 0, P1("x", -1, 1, 4, 1, 2, 4, 4)),
    CASEK("Pool mean", Pool, b_pool, g_pool, 1, P1("x", -1, 1, 4, 1, 2, 4, 5)),
    CASEK("Pool max padded overlapping", Pool, b_pool, g_pool, 2, P1("x", -1, 1, 4, 1, 2, 5, 4)),
    CASEK("Pool mean padded overlapping", Pool, b_pool, g_pool, 3, P1("x", -1, 1, 4, 1, 2, 5, 4)),
    /* losses */
    CASE("SoftmaxCrossEntropy", SoftmaxCrossEntropy, b_sce, P1("logits", -2, 2, 2, 3, 4), P1("targets", 0, 1, 2, 3, 4)),
    CASE("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyWithLogits, b_scel, P1("logits", -2, 2, 2, 3, 4)),
    /* scatter / gather */
    CASEK("ScatterAdd axis 0", ScatterAdd, b_scatteradd, g_sa, 0, P1("u", -1, 1, 2, 3, 2)),
    CASEK("ScatterAdd axis 1", ScatterAdd, b_scatteradd, g_sa, 1, P1("u", -1, 1, 2, 2, 3)),
    CASE("GatherElements", GatherElements, b_gatherelements, P1("x", -1, 1, 2, 2, 3)),
    CASE("GatherNd", GatherNd, b_gathernd, P1("x", -1, 1, 3, 3, 2, 2)),
    CASEK("ScatterElements none", ScatterElements, b_scatterelements, g_scat_red, RLX_SCATTER_REDUCTION_NONE,
          P1("data", -1, 1, 2, 2, 4), P1("upd", -1, 1, 2, 2, 2)),
    CASEK("ScatterElements add", ScatterElements, b_scatterelements, g_scat_red, RLX_SCATTER_REDUCTION_ADD,
          P1("data", -1, 1, 2, 2, 4), P1("upd", -1, 1, 2, 2, 2)),
    CASEK("ScatterNd none", ScatterNd, b_scatternd, g_scat_red, RLX_SCATTER_REDUCTION_NONE, P1("data", -1, 1, 2, 3, 2),
          P1("upd", -1, 1, 2, 2, 2)),
    CASEK("ScatterNd add", ScatterNd, b_scatternd, g_scat_red, RLX_SCATTER_REDUCTION_ADD, P1("data", -1, 1, 2, 3, 2),
          P1("upd", -1, 1, 2, 2, 2)),
    /* fused ops and regions (through the shared decompositions) */
    CASE("FusedSwiGLU", FusedSwiGLU, b_swiglu, P1("x", -1, 1, 2, 2, 6)),
    CASE("FusedMatMulBiasAct", FusedMatMulBiasAct, b_mmbiasact, P1("x", -1, 1, 2, 2, 3), P1("w", -1, 1, 2, 3, 4),
         P1("b", -1, 1, 1, 4)),
    CASE("FusedMatMulResidual", FusedMatMulResidual, b_mmres, P1("a", -1, 1, 2, 2, 3), P1("b", -1, 1, 2, 3, 4),
         P1("r", -1, 1, 2, 2, 4)),
    CASE("FusedConvBiasAct", FusedConvBiasAct, b_convbiasact, P1("x", -1, 1, 4, 1, 2, 3, 3),
         P1("w", -1, 1, 4, 2, 2, 3, 3), P1("b", -1, 1, 1, 2), P1("r", -1, 1, 4, 1, 2, 3, 3)),
    CASE("FusedResidualLN", FusedResidualLN, b_resln, P1("x", -1, 1, 3, 1, 2, 4), P1("res", -1, 1, 3, 1, 2, 4),
         P1("bias", -1, 1, 1, 4), P1("gamma", 0.5, 1.5, 1, 4), P1("beta", -1, 1, 1, 4)),
    CASE("FusedResidualRmsNorm", FusedResidualRmsNorm, b_resrms, P1("x", -1, 1, 3, 1, 2, 4),
         P1("res", -1, 1, 3, 1, 2, 4), P1("gamma", 0.5, 1.5, 1, 4), P1("beta", -1, 1, 1, 4)),
    CASE("LoraMatMul", LoraMatMul, b_lora, P1("x", -1, 1, 2, 2, 3), P1("W", -1, 1, 2, 3, 4), P1("A", -1, 1, 2, 3, 2),
         P1("B", -1, 1, 2, 2, 4)),
    CASE("FusedAttentionBlock", FusedAttentionBlock, b_attnblock, P1("h", -1, 1, 3, 1, 3, 4),
         P1("qkv", -1, 1, 2, 4, 12), P1("out", -1, 1, 2, 4, 4)),
    CASE("FusedTransformerLayer", FusedTransformerLayer, b_txlayer, P1("h", -1, 1, 3, 1, 3, 4),
         P1("qkv", -0.5, 0.5, 2, 4, 12), P1("out", -0.5, 0.5, 2, 4, 4), P1("ln_g", 0.5, 1.5, 1, 4),
         P1("fc1", -0.5, 0.5, 2, 4, 6), P1("fc2", -0.5, 0.5, 2, 6, 4)),
    CASE("ElementwiseRegion", ElementwiseRegion, b_ewregion, P1("a", -1, 1, 2, 2, 3), P1("b", -1, 1, 2, 2, 3)),
    CASE("TransformRegion", TransformRegion, b_tfregion, P1("x", -1, 1, 4, 1, 1, 2, 2)),
    CASE("BatchElementwiseRegion", BatchElementwiseRegion, b_bewregion, P1("a", -1, 1, 2, 2, 3),
         P1("b", -1, 1, 2, 1, 3)),
    /* control flow */
    CASE("If", If, b_if, P1("a", -1, 1, 1, 3), P1("b", -1, 1, 1, 3)),
    CASE("While", While, b_while, P1("x", -1, 1, 1, 3), P1("w", 0.5, 1.5, 1, 3)),
    CASEK("Scan final carry (bcast + body Param)", Scan, b_scan, g_scan, 0, P1("h0", -1, 1, 1, 3),
          P1("b", -0.5, 0.5, 1, 3), P1("xs", -1, 1, 2, 4, 3), P1("w", -1, 1, 1, 3)),
    CASEK("Scan trajectory", Scan, b_scan, g_scan, 1, P1("h0", -1, 1, 1, 3), P1("b", -0.5, 0.5, 1, 3),
          P1("xs", -1, 1, 2, 4, 3), P1("w", -1, 1, 1, 3)),
    CASEK("CustomFn (fwd body)", CustomFn, b_customfn, g_cfn, 0, P1("a", -1, 1, 1, 3), P1("b", -1, 1, 1, 3)),
    CASEK("CustomFn (vjp body)", CustomFn, b_customfn, g_cfn, 1, P1("a", -1, 1, 1, 3), P1("b", -1, 1, 1, 3)),
    /* signal: radix-2 (N = 4, 8) and Bluestein (N = 3, 5) lengths, both directions, every norm */
    CASEK("Fft N=4 Backward", Fft, b_fft, g_fft, RLX_FFT_NORM_BACKWARD, P1("x", -1, 1, 2, 2, 8)),
    CASEK("Fft N=3 Ortho", Fft, b_fft, g_fft, RLX_FFT_NORM_ORTHO, P1("x", -1, 1, 2, 2, 6)),
    CASEK("Fft N=5 Forward", Fft, b_fft, g_fft, RLX_FFT_NORM_FORWARD, P1("x", -1, 1, 1, 10)),
    CASEK("Fft inverse N=8 Forward", Fft, b_fft, g_fft, RLX_FFT_NORM_COUNT + RLX_FFT_NORM_FORWARD,
          P1("x", -1, 1, 2, 2, 16)),
    CASEK("Fft inverse N=5 Ortho", Fft, b_fft, g_fft, RLX_FFT_NORM_COUNT + RLX_FFT_NORM_ORTHO,
          P1("x", -1, 1, 3, 2, 1, 10)),
    CASEK("Fft inverse N=1 Backward", Fft, b_fft, g_fft, RLX_FFT_NORM_COUNT + RLX_FFT_NORM_BACKWARD,
          P1("x", -1, 1, 2, 3, 2)),
    /* ---- SPD manifold and eigen (issue 11: SPD / eigen); repeated / near-repeated spectra use the
     * derivative branch of the Daleckii-Krein quotient (a zero-width param range = the base point) ---- */
    CASE("Eigh", Eigh, b_eigh, P1("a", -1, 1, 2, 3, 3)),
    CASE("EighBatch", EighBatch, b_eigh, P1("a", -1, 1, 3, 2, 3, 3)),
    CASE("BiMap", BiMap, b_bimap, P1("w", -1, 1, 2, 2, 3), P1("x", -1, 1, 2, 3, 3)),
    CASEK("ReEig", ReEig, b_reeig, g_spd_eig, 0, P1("x", -1, 1, 2, 3, 3)),
    CASEK("LogEig", LogEig, b_reeig, g_spd_eig, 1, P1("x", -1, 1, 2, 3, 3)),
    CASEK("ReEig repeated eigenvalue", ReEig, b_reeig, g_spd_eig, 2, P1("x", 0, 0, 2, 3, 3)),
    CASEK("LogEig near-repeated eigenvalue", LogEig, b_reeig, g_spd_eig, 3, P1("x", 0, 0, 2, 3, 3)),
    CASE("SpdBatchNorm", SpdBatchNorm, b_spdbn, P1("x", -1, 1, 3, 2, 3, 3), P1("g", -1, 1, 2, 3, 3)),
    CASE("SpdLogMap", SpdLogMap, b_spdlogmap, P1("p", -1, 1, 2, 3, 3), P1("x", -1, 1, 2, 3, 3)),
    CASE("SpdExpMap", SpdExpMap, b_spdexpmap, P1("p", -1, 1, 2, 3, 3), P1("v", -1, 1, 2, 3, 3)),
    CASE("SpdParallelTransport", SpdParallelTransport, b_spdtransport, P1("p", -1, 1, 2, 3, 3), P1("q", -1, 1, 2, 3, 3),
         P1("v", -1, 1, 2, 3, 3)),
    CASEK("SpdMatrixFnBatch Logm", SpdMatrixFnBatch, b_spdfn, g_spd_fn, RLX_SPD_FN_LOGM, P1("x", -1, 1, 3, 2, 3, 3)),
    CASEK("SpdMatrixFnBatch Expm", SpdMatrixFnBatch, b_spdfn, g_spd_fn, RLX_SPD_FN_EXPM, P1("x", -1, 1, 3, 2, 3, 3)),
    CASEK("SpdMatrixFnBatch Sqrtm", SpdMatrixFnBatch, b_spdfn, g_spd_fn, RLX_SPD_FN_SQRTM, P1("x", -1, 1, 3, 2, 3, 3)),
    CASEK("SpdMatrixFnBatch Invsqrtm", SpdMatrixFnBatch, b_spdfn, g_spd_fn, RLX_SPD_FN_INVSQRTM,
          P1("x", -1, 1, 3, 2, 3, 3)),
    CASEK("SpdMatrixFnBatch Logm repeated eigenvalue", SpdMatrixFnBatch, b_spdfn, g_spd_fn, 8 + RLX_SPD_FN_LOGM,
          P1("x", 0, 0, 3, 1, 3, 3)),
    CASEK("SpdMatrixFnBatch Sqrtm repeated eigenvalue", SpdMatrixFnBatch, b_spdfn, g_spd_fn, 8 + RLX_SPD_FN_SQRTM,
          P1("x", 0, 0, 3, 1, 3, 3)),
    /* ---- end SPD ---- */
    CASE("Custom (registered VJP builder)", Custom, b_custom, P1("x", -1, 1, 2, 2, 3)), /* issue 11 */
    /* ---- sequence models and signal ops (issue 11 items 2-3) ---- */
    /* Lstm/Gru/Rnn/SelectiveScan/Mamba2/PartitionedConv: through their decompositions (no rule) */
    CASEK("Lstm", Lstm, b_lstm, g_rnn, 0, P1("x", -1, 1, 3, 2, 4, 3), P1("w_ih", -0.5, 0.5, 1, 36),
          P1("w_hh", -0.5, 0.5, 1, 36), P1("bias", -0.5, 0.5, 1, 12)),
    CASEK("Lstm 2 layers bidirectional carry", Lstm, b_lstm, g_rnn, 7, P1("x", -1, 1, 3, 2, 3, 2),
          P1("w_ih", -0.5, 0.5, 1, 96), P1("w_hh", -0.5, 0.5, 1, 64), P1("bias", -0.5, 0.5, 1, 32),
          P1("h0", -0.5, 0.5, 3, 4, 2, 2), P1("c0", -0.5, 0.5, 3, 4, 2, 2)),
    CASEK("Gru bidirectional carry", Gru, b_gru, g_rnn, 3, P1("x", -1, 1, 3, 2, 3, 2), P1("w_ih", -0.5, 0.5, 1, 24),
          P1("w_hh", -0.5, 0.5, 1, 24), P1("b_ih", -0.5, 0.5, 1, 12), P1("b_hh", -0.5, 0.5, 1, 12),
          P1("h0", -0.5, 0.5, 3, 2, 2, 2)),
    CASEK("Gru 2 layers", Gru, b_gru, g_rnn, 4, P1("x", -1, 1, 3, 1, 3, 2), P1("w_ih", -0.5, 0.5, 1, 24),
          P1("w_hh", -0.5, 0.5, 1, 24), P1("b_ih", -0.5, 0.5, 1, 12), P1("b_hh", -0.5, 0.5, 1, 12)),
    CASEK("Rnn tanh 2 layers bidirectional carry", Rnn, b_rnn, g_rnn, 7, P1("x", -1, 1, 3, 2, 3, 2),
          P1("w_ih", -0.5, 0.5, 1, 24), P1("w_hh", -0.5, 0.5, 1, 16), P1("bias", -0.5, 0.5, 1, 8),
          P1("h0", -0.5, 0.5, 3, 4, 2, 2)),
    CASEK("Rnn relu", Rnn, b_rnn, g_rnn, 8, P1("x", -1, 1, 3, 2, 4, 3), P1("w_ih", -0.5, 0.5, 1, 9),
          P1("w_hh", -0.5, 0.5, 1, 9), P1("bias", -0.5, 0.5, 1, 3)),
    CASE("SelectiveScan", SelectiveScan, b_selscan, P1("x", -1, 1, 3, 1, 4, 2), P1("delta", 0.1, 1, 3, 1, 4, 2),
         P1("a", -1, -0.1, 2, 2, 3), P1("b", -1, 1, 3, 1, 4, 3), P1("c", -1, 1, 3, 1, 4, 3)),
    CASE("Mamba2", Mamba2, b_mamba2, P1("x", -1, 1, 4, 1, 3, 2, 2), P1("dt", 0.1, 1, 3, 1, 3, 2),
         P1("a", -1, -0.1, 1, 2), P1("b", -1, 1, 4, 1, 3, 2, 3), P1("c", -1, 1, 4, 1, 3, 2, 3)),
    /* GatedDeltaNet: its rule emits GatedDeltaNetBackward (backward-op mode) or the reverse sweep
     * in primitives (primitive mode) */
    CASEK("GatedDeltaNet", GatedDeltaNet, b_gdn, g_gdn, 0, P1("q", -0.5, 0.5, 4, 1, 3, 2, 3),
          P1("k", -0.5, 0.5, 4, 1, 3, 2, 3), P1("v", -1, 1, 4, 1, 3, 2, 3), P1("g", -0.6, 0, 3, 1, 3, 2),
          P1("beta", 0.1, 0.9, 3, 1, 3, 2)),
    CASEK("GatedDeltaNet carry per-channel", GatedDeltaNet, b_gdn, g_gdn, 3, P1("q", -0.5, 0.5, 4, 2, 3, 1, 3),
          P1("k", -0.5, 0.5, 4, 2, 3, 1, 3), P1("v", -1, 1, 4, 2, 3, 1, 3), P1("g", -0.6, 0, 4, 2, 3, 1, 3),
          P1("beta", 0.1, 0.9, 3, 2, 3, 1), P1("state", -0.5, 0.5, 4, 2, 1, 3, 3)),
    /* second order: GatedDeltaNetBackward differentiated through its decomposition */
    CASE("GatedDeltaNetBackward", GatedDeltaNetBackward, b_gdnbw, P1("q", -0.5, 0.5, 4, 1, 2, 1, 3),
         P1("k", -0.5, 0.5, 4, 1, 2, 1, 3), P1("v", -1, 1, 4, 1, 2, 1, 3), P1("g", -0.6, 0, 3, 1, 2, 1),
         P1("beta", 0.1, 0.9, 3, 1, 2, 1), P1("dy", -1, 1, 4, 1, 2, 1, 3)),
    CASE("PartitionedConv block 2, 3 partitions", PartitionedConv, b_pconv, P1("x", -1, 1, 2, 2, 9),
         P1("ir", -1, 1, 1, 5)),
    CASE("LogMel", LogMel, b_logmel, P1("spectrum", -1, 1, 2, 2, 16)),
/* ---- end of sequence models and signal ops ---- */
/* backward ops as forward ops: first derivatives of backward ops = second derivatives */
#define RAW(OP, NAME, I, ...) \
  { {NAME, RLX_OP_##OP, b_raw, {__VA_ARGS__}, 0, 0, 0, false}, &g_raw_index, I }
    RAW(ReluBackward, "ReluBackward", 0, P1("x", -1, 1, 2, 2, 3), P1("dy", -1, 1, 2, 2, 3)),
    RAW(ActivationBackward, "ActivationBackward Gelu", 1, P1("x", -2, 2, 2, 2, 3), P1("dy", -1, 1, 2, 2, 3)),
    RAW(ActivationBackward, "ActivationBackward Tanh", 2, P1("x", -2, 2, 2, 2, 3), P1("dy", -1, 1, 2, 2, 3)),
    RAW(ActivationBackward, "ActivationBackward Rsqrt", 3, P1("x", 0.5, 2, 2, 2, 3), P1("dy", -1, 1, 2, 2, 3)),
    RAW(Conv2dBackwardInput, "Conv2dBackwardInput", 4, P1("dy", -1, 1, 4, 1, 3, 3, 3), P1("w", -1, 1, 4, 3, 2, 2, 2)),
    RAW(Conv2dBackwardWeight, "Conv2dBackwardWeight", 5, P1("x", -1, 1, 4, 1, 2, 4, 4), P1("dy", -1, 1, 4, 1, 3, 3, 3)),
    RAW(Conv3dBackwardInput, "Conv3dBackwardInput", 6, P1("dy", -1, 1, 5, 1, 2, 2, 2, 2),
        P1("w", -1, 1, 5, 2, 2, 2, 2, 2)),
    RAW(Conv3dBackwardWeight, "Conv3dBackwardWeight", 7, P1("x", -1, 1, 5, 1, 2, 3, 3, 3),
        P1("dy", -1, 1, 5, 1, 2, 2, 2, 2)),
    RAW(LayerNormBackwardInput, "LayerNormBackwardInput", 8, P1("x", -1, 1, 2, 2, 4), P1("gamma", 0.5, 1.5, 1, 4),
        P1("dy", -1, 1, 2, 2, 4)),
    RAW(LayerNormBackwardGamma, "LayerNormBackwardGamma", 9, P1("x", -1, 1, 2, 3, 4), P1("dy", -1, 1, 2, 3, 4)),
    RAW(RmsNormBackwardInput, "RmsNormBackwardInput", 10, P1("x", -1, 1, 2, 2, 4), P1("gamma", 0.5, 1.5, 1, 4),
        P1("beta", -1, 1, 1, 4), P1("dy", -1, 1, 2, 2, 4)),
    RAW(RmsNormBackwardGamma, "RmsNormBackwardGamma", 11, P1("x", -1, 1, 2, 2, 4), P1("gamma", 0.5, 1.5, 1, 4),
        P1("beta", -1, 1, 1, 4), P1("dy", -1, 1, 2, 2, 4)),
    RAW(RmsNormBackwardBeta, "RmsNormBackwardBeta", 12, P1("x", -1, 1, 2, 2, 4), P1("gamma", 0.5, 1.5, 1, 4),
        P1("beta", -1, 1, 1, 4), P1("dy", -1, 1, 2, 2, 4)),
    RAW(GroupNormBackwardInput, "GroupNormBackwardInput", 13, P1("x", -1, 1, 4, 2, 4, 1, 2),
        P1("gamma", 0.5, 1.5, 1, 4), P1("beta", -1, 1, 1, 4), P1("dy", -1, 1, 4, 2, 4, 1, 2)),
    RAW(GroupNormBackwardGamma, "GroupNormBackwardGamma", 14, P1("x", -1, 1, 4, 2, 4, 1, 2),
        P1("dy", -1, 1, 4, 2, 4, 1, 2)),
    RAW(GroupNormBackwardBeta, "GroupNormBackwardBeta", 15, P1("x", -1, 1, 4, 2, 4, 1, 2),
        P1("dy", -1, 1, 4, 2, 4, 1, 2)),
    RAW(BatchNormInferenceBackwardInput, "BatchNormInferenceBackwardInput", 16, P1("x", -1, 1, 2, 3, 4),
        P1("gamma", 0.5, 1.5, 1, 4), P1("mean", -0.5, 0.5, 1, 4), P1("var", 0.5, 2, 1, 4), P1("dy", -1, 1, 2, 3, 4)),
    RAW(BatchNormInferenceBackwardGamma, "BatchNormInferenceBackwardGamma", 17, P1("x", -1, 1, 2, 3, 4),
        P1("mean", -0.5, 0.5, 1, 4), P1("var", 0.5, 2, 1, 4), P1("dy", -1, 1, 2, 3, 4)),
    RAW(BatchNormInferenceBackwardBeta, "BatchNormInferenceBackwardBeta", 18, P1("dy", -1, 1, 2, 3, 4)),
    RAW(CumsumBackward, "CumsumBackward exclusive", 19, P1("dy", -1, 1, 2, 2, 4)),
    RAW(MaxPool2dBackward, "MaxPool2dBackward", 20, P1("x", -1, 1, 4, 1, 1, 3, 3), P1("dy", -1, 1, 4, 1, 1, 2, 2)),
    RAW(AdaLayerNormBackward, "AdaLayerNormBackward", 21, P1("x", -1, 1, 3, 1, 2, 4),
        P1("scale", -0.5, 0.5, 3, 1, 1, 4), P1("shift", -1, 1, 3, 1, 1, 4), P1("dy", -1, 1, 3, 1, 2, 4)),
    RAW(GatedResidualBackward, "GatedResidualBackward", 22, P1("x", -1, 1, 3, 1, 2, 4), P1("y", -1, 1, 3, 1, 2, 4),
        P1("gate", -1, 1, 3, 1, 1, 4), P1("dy", -1, 1, 3, 1, 2, 4)),
    RAW(AttentionBackward, "AttentionBackward (dK, causal)", 23, P1("q", -1, 1, 3, 1, 3, 4), P1("k", -1, 1, 3, 1, 3, 4),
        P1("v", -1, 1, 3, 1, 3, 4), P1("dy", -1, 1, 3, 1, 3, 4)),
#undef RAW
    CASE("RopeBackward GptJ", RopeBackward, b_ropebw, P1("dy", -1, 1, 3, 1, 3, 4)),
    CASE("GatherBackward", GatherBackward, b_gatherbw, P1("dy", -1, 1, 2, 2, 3)),
    CASE("SoftmaxCrossEntropyBackward", SoftmaxCrossEntropyBackward, b_scebw, P1("logits", -2, 2, 2, 3, 4),
         P1("dloss", -1, 1, 1, 3)),
/* a few cases in f32 (coarser step, looser tolerance) */
#define F32CASE(NAME, OP, B, K, V, ...) \
  { {NAME " (f32)", RLX_OP_##OP, B, {__VA_ARGS__}, 0, 0, 0, true}, K, V }
    F32CASE("MatMul", MatMul, b_matmul, NULL, 0, P1("a", -1, 1, 3, 2, 3, 4), P1("b", -1, 1, 2, 4, 5)),
    F32CASE("Activation Gelu", Activation, b_act, &g_act, RLX_ACT_GELU, P1("x", -2, 2, 2, 2, 3)),
    F32CASE("Softmax", Softmax, b_softmax, NULL, 0, P1("x", -1, 1, 3, 2, 3, 2)),
    F32CASE("LayerNorm", LayerNorm, b_layernorm, NULL, 0, P1("x", -1, 1, 3, 2, 3, 4), P1("gamma", 0.5, 1.5, 1, 4),
            P1("beta", -1, 1, 1, 4)),
    F32CASE("Conv", Conv, b_conv, &g_conv, 0, P1("x", -1, 1, 4, 2, 2, 5, 4), P1("w", -1, 1, 4, 3, 2, 3, 2)),
    /* a smaller step so the difference does not cross a change of the window maximum */
    {{"Pool max (f32)", RLX_OP_Pool, b_pool, {P1("x", -1, 1, 4, 1, 2, 4, 4)}, 1e-3, 5e-3, 0, true}, &g_pool, 0},
    F32CASE("Attention causal", Attention, b_attention, &g_attn, 1, P1("q", -1, 1, 4, 1, 2, 3, 3),
            P1("k", -1, 1, 4, 1, 2, 3, 3), P1("v", -1, 1, 4, 1, 2, 3, 3)),
    /* issue 11: splatting, FD on means, log-scales, quaternions, opacity logits, colours, SH (f32) */
    {{"GaussianSplatRender (f32)",
      RLX_OP_GaussianSplatRender,
      b_splat,
      {P1("pos", -0.6, 0.6, 1, 9), P1("scale", -0.7, -0.3, 1, 9), P1("rot", -1, 1, 1, 12), P1("opac", -1, 1.5, 1, 3),
       P1("col", 0, 1, 1, 9), P1("sh", -0.3, 0.3, 1, 36)},
      1e-2,
      1e-2,
      0,
      true},
     &g_splat_sh,
     4},
    /* quantization family: real derivatives (the STE rules are listed in no_case) */
    CASE("SplineActivation per channel", SplineActivation, b_spline, P1("x", -1.4, 1.4, 2, 3, 4),
         P1("coeffs", -1, 1, 2, 4, 6)),
    CASE("SplineActivation shared", SplineActivation, b_spline5, P1("x", -0.8, 1.8, 2, 2, 3),
         P1("coeffs", -1, 1, 1, 5)),
    CASE("SynthReconstruct", SynthReconstruct, b_synth_rec, P1("codebook", -1, 1, 2, 4, 3)),
    F32CASE("SynthMatMul", SynthMatMul, b_synth, NULL, 0, P1("x", -1, 1, 2, 2, 6), P1("codebook", -1, 1, 2, 4, 2)),
    F32CASE("DequantMatMul Int8BlockAsym", DequantMatMul, b_dqmm_int8, NULL, 0, P1("x", -1, 1, 2, 2, 8),
            P1("scale", 0.05, 0.2, 2, 2, 3)),
    F32CASE("DequantMatMul GgufQ8_0", DequantMatMul, b_dqmm_gguf, NULL, 0, P1("x", -1, 1, 2, 2, 32)),
    F32CASE("DequantGroupedMatMul GgufQ8_0", DequantGroupedMatMul, b_dgmm, NULL, 0, P1("x", -1, 1, 2, 3, 32)),
    F32CASE("ScaledMatMul bias", ScaledMatMul, b_smm, NULL, 0, P1("bias", -1, 1, 1, 3)),
    F32CASE("ScaledGroupedMatMul bias", ScaledGroupedMatMul, b_sgmm, NULL, 0, P1("bias", -1, 1, 2, 2, 2)),
#undef F32CASE
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* ---- the check ---- */

static uint32_t n_param(const gc_case *c) {
  uint32_t k = 0;
  while (k < 6 && c->p[k].name) k++;
  return k;
}

typedef enum { GC_PASS, GC_FAIL, GC_SKIP, GC_STATED } gc_result;

/* A backend's documented compile error for a gradient graph (its founding document states it):
 * the MLX backend rejects a grouped convolution backward. The run must fail compiling with this
 * text; it is counted and printed, not passed. */
static bool stated_gradient_error(const rlx_backend *be, rlx_status s) {
  return s == RLX_ERR_UNSUPPORTED && strcmp(be->name, "mlx") == 0 && strstr(rlx_last_error(), "groups = 1 only");
}

static char gc_msg[2048];
static void gc_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(gc_msg, sizeof gc_msg, fmt, ap);
  va_end(ap);
}

/* Builds f for case e; values for its params go to vals (malloc'ed). */
static rlx_status build_case(const gc_entry *e, rlx_graph **out, adt_value *vals, uint32_t *np) {
  const gc_case *c = &e->c;
  /* Each case draws its values from a stream seeded by its name, so a case sees the same values
   * whatever cases come before it (in the table or on an earlier backend). */
  uint64_t h = 1469598103934665603ull;
  for (const char *q = c->name; *q; q++) h = (h ^ (uint8_t)*q) * 1099511628211ull;
  adt_rng_state = h;
  if (e->knob) *e->knob = e->knob_value;
  /* each case draws from its own stream (seeded from its name), so its values do not depend on
   * which cases or backends ran before it */
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (const char *p = c->name; *p; p++) seed = (seed ^ (uint8_t)*p) * 0x100000001b3ull;
  adt_rng_state = seed;
  rlx_graph *g;
  TRY(rlx_graph_create(NULL, "gradcheck", &g));
  rlx_id pid[6];
  *np = n_param(c);
  rlx_status s = RLX_OK;
  for (uint32_t i = 0; i < *np && !s; i++) {
    rlx_shape ps = rlx_shape_make(c->f32 ? RLX_F32 : RLX_F64, c->p[i].rank, c->p[i].dims);
    /* a param that only a body reads is created there; it still gets a value */
    vals[i].name = c->p[i].name;
    vals[i].shape = ps;
    size_t n = adt_numel(&ps);
    vals[i].v = malloc((n ? n : 1) * sizeof(double));
    for (size_t k = 0; k < n; k++) vals[i].v[k] = adt_uniform(c->p[i].lo, c->p[i].hi);
    s = rlx_param(g, c->p[i].name, ps, &pid[i]);
  }
  rlx_id y, loss;
  if (!s) s = c->build(g, pid, &y);
  if (!s) s = adt_weighted_sum(g, y, &loss);
  if (!s) s = rlx_graph_set_outputs(g, &loss, 1);
  if (s) {
    rlx_graph_free(g);
    return s;
  }
  *out = g;
  return RLX_OK;
}

static gc_result check_case(const gc_entry *e, const rlx_backend *be, bool use_bw, double *max_err) {
  const gc_case *c = &e->c;
  adt_value vals[7] = {{0}};
  uint32_t np = 0;
  rlx_graph *f = NULL, *gr = NULL;
  adt_exe ef = {0}, eg = {0};
  gc_result res = GC_FAIL;
  *max_err = 0;
  gc_msg[0] = 0;
  rlx_status s = build_case(e, &f, vals, &np);
  if (s) {
    gc_note("building the forward graph: %s", rlx_last_error());
    goto done;
  }
  const char *names[6];
  uint32_t nw = 0;
  for (uint32_t i = 0; i < np; i++) names[nw++] = vals[i].name;
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  o.use_backward_ops = use_bw;
  s = rlx_grad(f, names, nw, &o, &gr);
  if (s) {
    gc_note("rlx_grad: %s", rlx_last_error());
    goto done;
  }
  s = adt_compile(f, be->name, &ef);
  if (s == RLX_ERR_UNSUPPORTED && strcmp(be->name, "cpu") != 0) {
    res = GC_SKIP;
    goto done;
  }
  if (s) {
    gc_note("compiling f: %s", rlx_last_error());
    goto done;
  }
  s = adt_compile(gr, be->name, &eg);
  if (s && use_bw && stated_gradient_error(be, s)) {
    gc_note("%s", rlx_last_error());
    res = GC_STATED;
    goto done;
  }
  if (s) {
    gc_note("compiling the gradient graph: %s", rlx_last_error());
    goto done;
  }
  double one = 1.0;
  vals[np] = (adt_value){"d_output", rlx_shape_scalar(c->f32 ? RLX_F32 : RLX_F64), &one};
  if ((s = adt_set_params(&ef, vals, np)) || (s = adt_set_params(&eg, vals, np))) {
    gc_note("setting params: %s", rlx_last_error());
    goto done;
  }
  double *grads[6];
  for (uint32_t i = 0; i < np; i++) grads[i] = calloc(adt_numel(&vals[i].shape) + 1, sizeof(double));
  s = adt_run(&eg, vals, np + 1, grads, np);
  if (s) gc_note("running the gradient graph: %s", rlx_last_error());
  double h = c->h > 0 ? c->h : c->f32 ? 1e-2 : 1e-5, tol = c->tol > 0 ? c->tol : c->f32 ? 5e-3 : 1e-6;
  bool ok = !s;
  for (uint32_t i = 0; i < np && ok; i++) {
    size_t n = adt_numel(&vals[i].shape);
    for (size_t k = 0; k < n && ok; k++) {
      double v0 = vals[i].v[k];
      vals[i].v[k] = v0 + h;
      s = adt_set_params(&ef, &vals[i], 1);
      double fp = s ? NAN : adt_run_scalar(&ef, vals, np, &s);
      vals[i].v[k] = v0 - h;
      if (!s) s = adt_set_params(&ef, &vals[i], 1);
      double fm = s ? NAN : adt_run_scalar(&ef, vals, np, &s);
      vals[i].v[k] = v0;
      if (!s) s = adt_set_params(&ef, &vals[i], 1);
      if (s) {
        gc_note("running f: %s", rlx_last_error());
        ok = false;
        break;
      }
      double fd = (fp - fm) / (2 * h), an = grads[i][k];
      double err = fabs(an - fd) / (1.0 + fabs(fd));
      if (err > *max_err || isnan(err)) *max_err = isnan(err) ? INFINITY : err;
      if (!adt_close(an, fd, tol)) {
        gc_note("d/d%s[%zu]: analytic %.10g, finite difference %.10g", vals[i].name, k, an, fd);
        ok = false;
      }
    }
  }
  for (uint32_t i = 0; i < np; i++) free(grads[i]);
  res = ok ? GC_PASS : GC_FAIL;
done:
  adt_free(&ef);
  adt_free(&eg);
  rlx_graph_free(f);
  rlx_graph_free(gr);
  for (uint32_t i = 0; i < np; i++) free(vals[i].v);
  return res;
}

/* Differentiable kinds the CPU claims that deliberately have no gradient case, with the reason. */
static const struct {
  rlx_op op;
  const char *why;
} no_case[] = {
    {RLX_OP_StopGradient, "its gradient is zero by definition (test_autodiff checks it)"},
    {RLX_OP_FakeQuantize, "straight-through estimators are not derivatives (test_autodiff checks the formulas)"},
    /* quantization family */
    {RLX_OP_Quantize, "straight-through estimator (dx = dy), not a derivative; i8 output"},
    {RLX_OP_ScaledQuantize, "straight-through estimator (dx = dy), not a derivative; u8 codes"},
    {RLX_OP_FakeQuantizeLSQ,
     "straight-through estimators (LSQ), not derivatives; the backward kernels are conformance cases"},
    {RLX_OP_Dequantize, "its only operand is i8 codes, which get no gradient"},
    {RLX_OP_QMatMul, "integer operands only (i8 / i32), which get no gradient"},
    {RLX_OP_QConv2d, "integer operands only (i8 / i32), which get no gradient"},
    {RLX_OP_ComplexNormSq, "complex operand: autodiff does not propagate complex cotangents yet (the backward op its "
                           "rule emits is FD-checked in tests/unit/test_signal_grad.c)"},
    {RLX_OP_Conjugate, "complex operand: autodiff does not propagate complex cotangents yet (see test_signal_grad.c)"},
};

int main(void) {
  /* which kinds have cases */
  uint8_t has_case[RLX_OP_COUNT] = {0};
  for (size_t i = 0; i < N_CASES; i++) has_case[cases[i].c.op] = 1;

  uint32_t nb = rlx_backend_count(), runs = 0, skips = 0, stated = 0;
  const char *only = getenv("RLX_GRADCHECK_ONLY");
  for (uint32_t b = 0; b < nb; b++) {
    const rlx_backend *be = rlx_backend_at(b);
    if (!be || (be->available && !be->available(NULL))) continue;
    uint8_t claimed[RLX_OP_COUNT] = {0};
    rlx_backend_claim_set(be, claimed);
    for (size_t i = 0; i < N_CASES; i++) {
      const gc_entry *e = &cases[i];
      if (only && !strstr(e->c.name, only)) continue;
      for (int mode = 0; mode < 2; mode++) {
        double err;
        gc_result r = check_case(e, be, mode == 0, &err);
        if (r == GC_SKIP) {
          skips++;
          continue;
        }
        if (r == GC_STATED) {
          stated++;
          printf("gradcheck: [%s] %s (backward ops): the documented compile error: %.200s\n", be->name, e->c.name,
                 gc_msg);
          continue;
        }
        runs++;
        CHECK_MSG(r == GC_PASS, "[%s] %s (%s): %s (max rel. error %.3g)", be->name, e->c.name,
                  mode == 0 ? "backward ops" : "primitives", gc_msg, err);
      }
    }
  }
  printf("gradcheck: %u case runs, %u skipped (backend cannot compile the op), %u documented compile errors\n", runs,
         skips, stated);

  /* coverage: every differentiable kind the CPU claims has a case or a stated reason */
  uint8_t cpu[RLX_OP_COUNT] = {0};
  rlx_backend_claim_set(rlx_cpu_backend(), cpu);
  for (int k = 0; k < RLX_OP_COUNT && !only; k++) {
    if (!rlx_op_has((rlx_op)k, RLX_PROP_DIFF)) continue;
    bool listed = false;
    for (size_t j = 0; j < sizeof no_case / sizeof no_case[0]; j++)
      listed |= no_case[j].op == (rlx_op)k && no_case[j].why;
    if (!cpu[k] && !rlx_decompose_table[k]) continue; /* the CPU cannot run it at all */
    CHECK_MSG(has_case[k] || listed, "differentiable op %s runs on the CPU but has no gradient check",
              rlx_op_name((rlx_op)k));
  }
  return rlx_test_finish("gradcheck");
}
