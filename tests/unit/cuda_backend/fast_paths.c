/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* test_cuda_backend, part four (GPU only): the fast paths the GPT-2 block round added
 * (docs/cuda.md, "This round"), at shapes that take them, against the CPU — a constant Pad of
 * the last axis and a last-axis Narrow with aligned rows (row kernels), a one-dtype bf16 region
 * with a tiled operand, a Div and an out-of-line step, over a length that is not a multiple of
 * the group width, the two-column column sum and mean of bf16 / f32, the bf16 loss sum, and the
 * bf16 LayerNorm gamma gradient (typed two-column kernel). Data movement must be exact, the
 * one-dtype region too (float arithmetic of 16-bit values rounds to the double path's result);
 * the reductions sum in double in another order, so they are held to one bf16 unit. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/elem.h"
#include "rlx/autodiff.h"
#include "rlx/build.h"
#include "rlx/graph.h"
#include "rlx/ops.h"
#include "rlx/session.h"
#include "rlx_test.h"
#include "cuda_test.h"

void cuda_fast_path_checks(void);

/* The tensor-core attention forward's NaN rule (the CPU reference's): a row that sees a NaN score
 * is NaN in every lane, other rows are untouched. bf16 [1, 2, 130, 64], causal: a NaN in head 0's
 * query row 7 and in head 1's key 100, so head 0 has one NaN row and head 1 the rows 100-129
 * (the causal mask hides key 100 from the rows before it, in the tile with the NaN and before).
 * The NaN positions must be the same on both backends and the rest within bf16 tolerance. */
static void attention_nan_rows(void) {
  const int64_t H = 2, S = 130, D = 64;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_attention_nan", &g));
  rlx_shape s = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){1, H, S, D});
  rlx_id in[3], b16[3], y, yf;
  const char *names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(rlx_input(g, names[i], s, &in[i]));
    CHECK_OK(rlx_cast_to(g, in[i], RLX_BF16, &b16[i]));
  }
  rlx_attrs_Attention a = {.num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_Attention(g, b16, 3, &a, NULL, &y));
  CHECK_OK(rlx_cast_to(g, y, RLX_F32, &yf));
  CHECK_OK(rlx_graph_set_outputs(g, &yf, 1));
  const size_t n = (size_t)(H * S * D);
  float *v[3];
  rlx_named_tensor tin[3];
  for (int i = 0; i < 3; i++) {
    v[i] = cuda_test_vals(n, 71 + (uint32_t)i, -1.0f, 1.0f);
    tin[i] = (rlx_named_tensor){names[i], {v[i], s}};
  }
  v[0][(0 * S + 7) * D + 3] = NAN;
  v[1][(1 * S + 100) * D + 0] = NAN;
  cuda_test_runs r;
  const bool ran = cuda_test_run_both(g, tin, 3, &r);
  size_t nan_cpu = 0, nan_mismatch = 0;
  double worst = INFINITY;
  if (ran && r.n_out[0] == 1 && r.n_out[1] == 1) {
    const float *c = r.out[0][0].data, *d = r.out[1][0].data;
    worst = 0;
    for (size_t i = 0; i < n; i++) {
      nan_cpu += isnan(c[i]) != 0;
      if ((isnan(c[i]) != 0) != (isnan(d[i]) != 0))
        nan_mismatch++;
      else if (!isnan(c[i]))
        worst = fmax(worst, fabs((double)c[i] - d[i]));
    }
  }
  printf("bf16 causal attention with NaN rows: %zu NaN on cpu (expected %lld), %zu positions differ, max difference "
         "elsewhere %.3g\n",
         nan_cpu, (long long)((1 + (S - 100)) * D), nan_mismatch, worst);
  CHECK_MSG(nan_cpu == (size_t)((1 + (S - 100)) * D), "cpu reference: %zu NaN outputs", nan_cpu);
  CHECK_MSG(nan_mismatch == 0 && worst < 3e-2, "attention NaN rows: %zu positions differ, max difference %g",
            nan_mismatch, worst);
  for (int b = 0; b < 2; b++) rlx_executable_free(r.e[b]);
  for (int i = 0; i < 3; i++) free(v[i]);
  rlx_graph_free(g);
}

/* f32 causal attention, forward and the three gradients, [2, 4, 192, 64] with S_k = S_q: the
 * default path (three TF32 products per product on the tensor cores, flash_tc.cu) and the FFMA
 * kernels (flash.cu, taken under RLX_CUDA_FP32_PEDANTIC=1) against the CPU. The tensor-core
 * path must stay at fp32's level: within 1e-5 and within a few times the FFMA kernels' own
 * difference (one TF32 product would be about 1e-3 off). */
static void attention_f32_paths(void) {
  const int64_t B = 2, H = 4, S = 192, D = 64;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_attention_f32", &g));
  rlx_shape s = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, H, S, D});
  rlx_id in[4], outs[2];
  const char *names[4] = {"q", "k", "v", "dy"};
  for (int i = 0; i < 4; i++) CHECK_OK(rlx_input(g, names[i], s, &in[i]));
  rlx_attrs_Attention fa = {.num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_Attention(g, in, 3, &fa, NULL, &outs[0]));
  rlx_attrs_AttentionBackwardAll ba = {.num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_AttentionBackwardAll(g, in, 4, &ba, NULL, &outs[1]));
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  const size_t n = (size_t)(B * H * S * D);
  float *v[4];
  rlx_named_tensor tin[4];
  for (int i = 0; i < 4; i++) {
    v[i] = cuda_test_vals(n, 81 + (uint32_t)i, -1.0f, 1.0f);
    tin[i] = (rlx_named_tensor){names[i], {v[i], s}};
  }
  const double d_tc = cuda_test_cpu_vs_cuda(g, tin, 4, NULL);
  setenv("RLX_CUDA_FP32_PEDANTIC", "1", 1);
  const double d_ffma = cuda_test_cpu_vs_cuda(g, tin, 4, NULL);
  unsetenv("RLX_CUDA_FP32_PEDANTIC");
  printf("f32 causal attention + backward [2, 4, 192, 64]: max scaled difference vs cpu, 3xTF32 tensor cores %.3g, "
         "FFMA %.3g\n",
         d_tc, d_ffma);
  CHECK_MSG(d_ffma < 1e-5, "f32 attention, FFMA kernels: %g", d_ffma);
  CHECK_MSG(d_tc < 1e-5 && d_tc < 8 * d_ffma + 1e-6, "f32 attention, 3xTF32 kernels: %g (FFMA %g)", d_tc, d_ffma);
  for (int i = 0; i < 4; i++) free(v[i]);
  rlx_graph_free(g);
}

/* f32 GELU, tanh-GELU and SiLU and their derivatives over [-12, 12) (65539 elements: a tail past
 * the 4-element groups): by default in float (act_f32.cuh), under RLX_CUDA_FP32_PEDANTIC=1 the
 * double formula rounded once. Both against the CPU's double formula: the float forms within
 * 1e-6 (scaled by max(1, |cpu|)), the double path within 1e-7. */
static void activation_f32_paths(void) {
  const size_t n = 65539;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_act_f32", &g));
  rlx_shape s = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){(rlx_dim)n});
  rlx_id x, dy, outs[6];
  CHECK_OK(rlx_input(g, "x", s, &x));
  CHECK_OK(rlx_input(g, "dy", s, &dy));
  const rlx_act kinds[3] = {RLX_ACT_GELU, RLX_ACT_GELU_APPROX, RLX_ACT_SILU};
  for (int k = 0; k < 3; k++) {
    rlx_attrs_Activation a = {.kind = kinds[k]};
    CHECK_OK(rlx_build_Activation(g, &x, 1, &a, NULL, &outs[2 * k]));
    rlx_attrs_ActivationBackward b = {.kind = kinds[k]};
    CHECK_OK(rlx_build_ActivationBackward(g, (rlx_id[]){x, dy}, 2, &b, NULL, &outs[2 * k + 1]));
  }
  CHECK_OK(rlx_graph_set_outputs(g, outs, 6));
  float *vx = cuda_test_vals(n, 91, -12.0f, 12.0f), *vd = cuda_test_vals(n, 92, -1.0f, 1.0f);
  rlx_named_tensor tin[2] = {{"x", {vx, s}}, {"dy", {vd, s}}};
  const double d_float = cuda_test_cpu_vs_cuda(g, tin, 2, NULL);
  setenv("RLX_CUDA_FP32_PEDANTIC", "1", 1);
  const double d_double = cuda_test_cpu_vs_cuda(g, tin, 2, NULL);
  unsetenv("RLX_CUDA_FP32_PEDANTIC");
  printf("f32 GELU / tanh-GELU / SiLU and derivatives: max scaled difference vs cpu, float forms %.3g, double %.3g\n",
         d_float, d_double);
  CHECK_MSG(d_float < 1e-6, "f32 activations, float forms: %g", d_float);
  CHECK_MSG(d_double < 1e-7, "f32 activations, double formula: %g", d_double);
  free(vx), free(vd);
  rlx_graph_free(g);
}

/* Transposes feeding MatMuls run as cuBLAS operand flags (lower_fold.c): A transposed, B
 * transposed, a batched operand, one Transpose read as both operands, a Transpose of an
 * intermediate whose bytes the plan may hand to a later tensor before the MatMul (the fold must
 * then be declined), and one also read by a non-MatMul (never folded). Against the CPU with the
 * fold on and off (RLX_CUDA_FOLD_TRANSPOSES=0); both must agree to f32 GEMM rounding. */
static void matmul_transposed_operands(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_matmul_transposed", &g));
  static const char *const names[] = {"x", "d", "e", "w", "pb", "qb", "u", "z"};
  const rlx_dim dims[][3] = {{70, 48}, {70, 40}, {30, 40}, {50, 40}, {3, 20, 16}, {3, 20, 24}, {33, 33}, {70, 24}};
  enum { NI = 8 };
  rlx_id in[NI], tr[6], y[7];
  rlx_named_tensor tin[NI];
  float *v[NI];
  for (int i = 0; i < NI; i++) {
    uint32_t rank = i == 4 || i == 5 ? 3 : 2;
    rlx_shape s = rlx_shape_make(RLX_F32, rank, dims[i]);
    CHECK_OK(rlx_input(g, names[i], s, &in[i]));
    size_t n = (size_t)(dims[i][0] * dims[i][1] * (rank == 3 ? dims[i][2] : 1));
    v[i] = cuda_test_vals(n, 101 + (uint32_t)i, -1.0f, 1.0f);
    tin[i] = (rlx_named_tensor){names[i], {v[i], s}};
  }
  CHECK_OK(rlx_permute(g, in[0], 2, (int64_t[]){1, 0}, &tr[0]));
  CHECK_OK(rlx_matmul(g, tr[0], in[1], &y[0])); /* x^T . d */
  CHECK_OK(rlx_permute(g, in[3], 2, (int64_t[]){1, 0}, &tr[1]));
  CHECK_OK(rlx_matmul(g, in[2], tr[1], &y[1])); /* e . w^T */
  CHECK_OK(rlx_permute(g, in[4], 3, (int64_t[]){0, 2, 1}, &tr[2]));
  CHECK_OK(rlx_matmul(g, tr[2], in[5], &y[2])); /* batched pb^T . qb */
  CHECK_OK(rlx_permute(g, in[6], 2, (int64_t[]){1, 0}, &tr[3]));
  CHECK_OK(rlx_matmul(g, tr[3], tr[3], &y[3])); /* u^T . u^T */
  rlx_id h, zz, hn;
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, in[0], &h));
  CHECK_OK(rlx_permute(g, h, 2, (int64_t[]){1, 0}, &tr[4]));
  CHECK_OK(rlx_activation(g, RLX_ACT_EXP, in[7], &zz)); /* may take h's bytes after the Transpose */
  CHECK_OK(rlx_matmul(g, tr[4], zz, &y[4]));
  CHECK_OK(rlx_permute(g, in[2], 2, (int64_t[]){1, 0}, &tr[5]));
  CHECK_OK(rlx_matmul(g, tr[5], in[2], &y[5])); /* e^T . e, and e^T also read by a Neg */
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, tr[5], &hn));
  y[6] = hn;
  CHECK_OK(rlx_graph_set_outputs(g, y, 7));
  const double d_fold = cuda_test_cpu_vs_cuda(g, tin, NI, NULL);
  setenv("RLX_CUDA_FOLD_TRANSPOSES", "0", 1);
  const double d_copy = cuda_test_cpu_vs_cuda(g, tin, NI, NULL);
  unsetenv("RLX_CUDA_FOLD_TRANSPOSES");
  printf("MatMul of transposed operands: max scaled difference vs cpu, folded into cuBLAS flags %.3g, copied %.3g\n",
         d_fold, d_copy);
  CHECK_MSG(d_fold < 1e-5, "MatMul with folded Transposes: %g", d_fold);
  CHECK_MSG(d_copy < 1e-5, "MatMul with copied Transposes: %g", d_copy);
  for (int i = 0; i < NI; i++) free(v[i]);
  rlx_graph_free(g);
}

/* How many output elements differ (bit for bit, any dtype) between two cuda runs of g: the fold
 * named by the environment variable `env` on, then off (=0). A fold that changes rounding shows
 * it ran; one that promises the unfused bits must give 0. */
static size_t cuda_fold_changes(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, const char *env) {
  rlx_executable *e[2] = {NULL, NULL};
  const rlx_tensor *out[2] = {NULL, NULL};
  uint32_t n_out[2] = {0, 0};
  for (int off = 0; off < 2; off++) {
    if (off) setenv(env, "0", 1);
    CHECK_OK(rlx_compile(g, "cuda", NULL, &e[off]));
    if (e[off]) CHECK_OK(rlx_executable_run(e[off], in, n_in, &out[off], &n_out[off]));
    unsetenv(env);
  }
  size_t changed = 0;
  CHECK_MSG(e[0] && e[1] && n_out[0] == n_out[1], "two cuda runs of %s", rlx_graph_name(g));
  for (uint32_t o = 0; e[0] && e[1] && o < n_out[0] && n_out[0] == n_out[1]; o++) {
    size_t n = 0;
    CHECK_OK(rlx_shape_numel(&out[0][o].shape, &n));
    const size_t esz = rlx_dtype_size(out[0][o].shape.dtype);
    const uint8_t *a = out[0][o].data, *b = out[1][o].data;
    for (size_t i = 0; i < n; i++) changed += memcmp(a + i * esz, b + i * esz, esz) != 0;
  }
  rlx_executable_free(e[0]);
  rlx_executable_free(e[1]);
  return changed;
}

/* bf16 bits of n floats (round to nearest even) */
static uint16_t *to_bf16(const float *v, size_t n) {
  uint16_t *b = malloc(n * sizeof *b);
  for (size_t i = 0; i < n; i++) b[i] = rlx_f32_to_bf16(v[i]);
  return b;
}

/* MatMul + bias Add (+ tanh GELU) as one cuBLASLt product with its epilogue (lower_fold.c). f32
 * takes the bias epilogue only (gemm_lt.cu: its GELU epilogue is a separate kernel): a bias, a
 * bias on a product whose second operand is a folded Transpose, and a bias whose sum is also read
 * by a GELU. bf16: BIAS, and GELU_AUX_BIAS (the sum and the GELU both read elsewhere, so neither
 * is absorbed into an elementwise region). Against the CPU with the epilogues on and off
 * (RLX_CUDA_LT_EPILOGUES=0): f32 within f32 GEMM rounding, bf16 within a few bf16 units (the
 * fused sum is rounded once, the unfused one twice, which also shows that the bf16 epilogues
 * ran: some values must change). */
static void matmul_bias_epilogues(void) {
  const int64_t M = 300, K = 96, N = 200;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_matmul_epilogues", &g));
  rlx_shape sx = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, K}), sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){K, N}),
            swt = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){N, K}), sb = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){N});
  rlx_id x, w[3], b[3], y[4], p0, p1, p2, s1, wt;
  CHECK_OK(rlx_input(g, "x", sx, &x));
  const char *wn[3] = {"w0", "w1", "w2"}, *bn[3] = {"b0", "b1", "b2"};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(rlx_input(g, wn[i], i == 2 ? swt : sw, &w[i]));
    CHECK_OK(rlx_input(g, bn[i], sb, &b[i]));
  }
  CHECK_OK(rlx_matmul(g, x, w[0], &p0));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, p0, b[0], &y[0]));
  CHECK_OK(rlx_matmul(g, x, w[1], &p1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, b[1], p1, &s1));
  CHECK_OK(rlx_activation(g, RLX_ACT_GELU_APPROX, s1, &y[1]));
  y[2] = s1;
  CHECK_OK(rlx_permute(g, w[2], 2, (int64_t[]){1, 0}, &wt));
  CHECK_OK(rlx_matmul(g, x, wt, &p2));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, p2, b[2], &y[3]));
  CHECK_OK(rlx_graph_set_outputs(g, y, 4));
  float *vx = cuda_test_vals((size_t)(M * K), 121, -1.0f, 1.0f), *vw[3], *vb[3];
  rlx_named_tensor tin[7] = {{"x", {vx, sx}}};
  for (int i = 0; i < 3; i++) {
    vw[i] = cuda_test_vals((size_t)(K * N), 122 + (uint32_t)i, -0.2f, 0.2f);
    vb[i] = cuda_test_vals((size_t)N, 130 + (uint32_t)i, -1.0f, 1.0f);
    tin[1 + 2 * i] = (rlx_named_tensor){wn[i], {vw[i], i == 2 ? swt : sw}};
    tin[2 + 2 * i] = (rlx_named_tensor){bn[i], {vb[i], sb}};
  }
  const double f_on = cuda_test_cpu_vs_cuda(g, tin, 7, NULL);
  setenv("RLX_CUDA_LT_EPILOGUES", "0", 1);
  const double f_off = cuda_test_cpu_vs_cuda(g, tin, 7, NULL);
  unsetenv("RLX_CUDA_LT_EPILOGUES");
  rlx_graph_free(g);

  /* bf16 operands as inputs (a Cast in front of the bias would be fused with the Add) */
  CHECK_OK(rlx_graph_create(NULL, "cuda_matmul_epilogues_bf16", &g));
  rlx_shape hx = rlx_shape_make(RLX_BF16, 2, (rlx_dim[]){M, K}), hw = rlx_shape_make(RLX_BF16, 2, (rlx_dim[]){K, N}),
            hb = rlx_shape_make(RLX_BF16, 1, (rlx_dim[]){N});
  rlx_id xh, wh[2], bh[2], r0, r1, t1, n0, n1, o[5];
  CHECK_OK(rlx_input(g, "x", hx, &xh));
  for (int i = 0; i < 2; i++) {
    CHECK_OK(rlx_input(g, wn[i], hw, &wh[i]));
    CHECK_OK(rlx_input(g, bn[i], hb, &bh[i]));
  }
  CHECK_OK(rlx_matmul(g, xh, wh[0], &p0));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, p0, bh[0], &r0)); /* read by two: stays an Add */
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, r0, &n0));
  CHECK_OK(rlx_matmul(g, xh, wh[1], &p1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, p1, bh[1], &r1));
  CHECK_OK(rlx_activation(g, RLX_ACT_GELU_APPROX, r1, &t1));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, t1, &n1));
  CHECK_OK(rlx_cast_to(g, r0, RLX_F32, &o[0]));
  CHECK_OK(rlx_cast_to(g, n0, RLX_F32, &o[1]));
  CHECK_OK(rlx_cast_to(g, t1, RLX_F32, &o[2]));
  CHECK_OK(rlx_cast_to(g, r1, RLX_F32, &o[3]));
  CHECK_OK(rlx_cast_to(g, n1, RLX_F32, &o[4]));
  CHECK_OK(rlx_graph_set_outputs(g, o, 5));
  uint16_t *hv[5] = {to_bf16(vx, (size_t)(M * K)), to_bf16(vw[0], (size_t)(K * N)), to_bf16(vb[0], (size_t)N),
                     to_bf16(vw[1], (size_t)(K * N)), to_bf16(vb[1], (size_t)N)};
  rlx_named_tensor hin[5] = {{"x", {hv[0], hx}}, {"w0", {hv[1], hw}}, {"b0", {hv[2], hb}},
                             {"w1", {hv[3], hw}}, {"b1", {hv[4], hb}}};
  const double h_on = cuda_test_cpu_vs_cuda(g, hin, 5, NULL);
  setenv("RLX_CUDA_LT_EPILOGUES", "0", 1);
  const double h_off = cuda_test_cpu_vs_cuda(g, hin, 5, NULL);
  unsetenv("RLX_CUDA_LT_EPILOGUES");
  CHECK_OK(rlx_graph_set_outputs(g, &o[0], 2));
  const size_t ch_bias = cuda_fold_changes(g, hin, 5, "RLX_CUDA_LT_EPILOGUES");
  CHECK_OK(rlx_graph_set_outputs(g, &o[2], 3));
  const size_t ch_gelu = cuda_fold_changes(g, hin, 5, "RLX_CUDA_LT_EPILOGUES");
  printf("MatMul + bias (+ GELU) epilogues: max scaled difference vs cpu, f32 fused %.3g / unfused %.3g, bf16 fused "
         "%.3g / unfused %.3g; bf16 values the fold changed: BIAS %zu of 2 x %lld, GELU_AUX_BIAS %zu of 3 x %lld\n",
         f_on, f_off, h_on, h_off, ch_bias, (long long)(M * N), ch_gelu, (long long)(M * N));
  CHECK_MSG(f_on < 1e-5 && f_off < 1e-5, "f32 MatMul + bias epilogues: %g (unfused %g)", f_on, f_off);
  CHECK_MSG(h_on < 2e-2 && h_off < 2e-2, "bf16 MatMul + bias epilogues: %g (unfused %g)", h_on, h_off);
  CHECK_MSG(ch_bias > 0, "bf16 BIAS epilogue: the fused run equals the unfused one bit for bit (not taken?)%s", "");
  CHECK_MSG(ch_gelu > 0, "bf16 GELU_AUX_BIAS epilogue: the fused run equals the unfused one bit for bit%s", "");
  free(vx);
  for (int i = 0; i < 3; i++) free(vw[i]), free(vb[i]);
  for (int i = 0; i < 5; i++) free(hv[i]);
  rlx_graph_free(g);
}

/* Compiles g for cuda with RLX_CUDA_FOLD_LOG=1 and counts the fold log's lines (stderr, read
 * back through a temporary file) that contain each of the n needles. */
static void cuda_fold_log_counts(const rlx_graph *g, const char *const *needle, int n, int *count) {
  for (int k = 0; k < n; k++) count[k] = 0;
  FILE *t = tmpfile();
  if (!t) {
    CHECK_MSG(0, "no temporary file for the fold log%s", "");
    return;
  }
  fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(t), 2);
  setenv("RLX_CUDA_FOLD_LOG", "1", 1);
  rlx_executable *e = NULL;
  const rlx_status st = rlx_compile(g, "cuda", NULL, &e);
  unsetenv("RLX_CUDA_FOLD_LOG");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK_MSG(st == RLX_OK, "cuda compile of %s: %s", rlx_graph_name(g), rlx_last_error());
  rlx_executable_free(e);
  rewind(t);
  char line[512];
  while (fgets(line, sizeof line, t)) {
    bool hit = strstr(line, "declined") != NULL;
    for (int k = 0; k < n; k++) {
      count[k] += strstr(line, needle[k]) != NULL;
      hit |= strstr(line, needle[k]) != NULL;
    }
    if (hit) printf("  %s: %s", rlx_graph_name(g), line); /* the folds taken or declined */
  }
  fclose(t);
}

/* MatMul + bias + residual, as the compile pipeline fuses them into one ElementwiseRegion (the
 * block's attention and MLP outputs), becomes one cuBLASLt product with the BIAS epilogue and
 * beta = 1 over the residual (lower_fold.c), in both operand orders; a residual read again later
 * keeps its bytes. The loss sums of f32 lines, a multiple of four long (the vector kernel) and
 * not (the generic one), beside them. Each fold must be taken (its log line) and agree with the
 * CPU with the epilogues on and off (RLX_CUDA_LT_EPILOGUES=0). */
static void matmul_residual_epilogue(void) {
  const int64_t M = 300, K = 96, N = 200;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_matmul_residual", &g));
  rlx_shape sx = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, K}), sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){K, N}),
            sb = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){N}), sr = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, N}),
            sl = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){70001});
  static const char *const names[] = {"x", "w0", "w1", "b", "r", "long"};
  const rlx_shape *shp[] = {&sx, &sw, &sw, &sb, &sr, &sl};
  rlx_id in[6], p0, p1, s0, s1, y[6];
  rlx_named_tensor tin[6];
  float *v[6];
  for (int i = 0; i < 6; i++) {
    CHECK_OK(rlx_input(g, names[i], *shp[i], &in[i]));
    size_t n = 0;
    CHECK_OK(rlx_shape_numel(shp[i], &n));
    v[i] = cuda_test_vals(n, 161 + (uint32_t)i, -1.0f, 1.0f);
    tin[i] = (rlx_named_tensor){names[i], {v[i], *shp[i]}};
  }
  CHECK_OK(rlx_matmul(g, in[0], in[1], &p0));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, p0, in[3], &s0));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, s0, in[4], &y[0])); /* (x w0 + b) + r */
  CHECK_OK(rlx_matmul(g, in[0], in[2], &p1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, in[3], p1, &s1));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, y[0], s1, &y[1])); /* y0 + (b + x w1), y0 read again below */
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, y[0], &y[2]));
  CHECK_OK(rlx_sum_all(g, y[1], &y[3]));
  CHECK_OK(rlx_sum_all(g, in[5], &y[4]));
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_MEAN, in[4], 1, (int64_t[]){1}, false, &y[5]));
  CHECK_OK(rlx_graph_set_outputs(g, y, 6));
  static const char *const needle[] = {"+ bias + residual %"};
  int count = 0;
  cuda_fold_log_counts(g, needle, 1, &count);
  const double on = cuda_test_cpu_vs_cuda(g, tin, 6, NULL);
  setenv("RLX_CUDA_LT_EPILOGUES", "0", 1);
  const double off = cuda_test_cpu_vs_cuda(g, tin, 6, NULL);
  unsetenv("RLX_CUDA_LT_EPILOGUES");
  printf("MatMul + bias + residual epilogue (and f32 sums): %d fold(s), max scaled difference vs cpu %.3g (unfused "
         "%.3g)\n",
         count, on, off);
  CHECK_MSG(count == 2, "MatMul + bias + residual: %d of 2 folds taken", count);
  CHECK_MSG(on < 1e-5 && off < 1e-5, "MatMul + bias + residual: %g (unfused %g)", on, off);
  for (int i = 0; i < 6; i++) free(v[i]);
  rlx_graph_free(g);
}

/* The backward sums folded into the kernels that produce what they sum (lower_fold.c): autodiff's
 * LayerNorm backward (dx, the gamma gradient, beta's Reduce of dy over the rows, dx added to the
 * residual's gradient) and an ActivationBackward whose dx is summed over the rows (the bias
 * gradient), in f32 and bf16, at 1030 x 192 rows (chunks of the column sums that do not divide
 * the rows) and with the bias gradient once as a Mean. Each fold must be taken (its log line),
 * must give the unfused run's bits (RLX_CUDA_FOLD_SUMS=0) and must agree with the CPU. */
static void backward_sum_folds(void) {
  const int64_t R = 1030, C = 192;
  for (int bf = 0; bf < 2; bf++) {
    const rlx_dtype dt = bf ? RLX_BF16 : RLX_F32;
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(NULL, bf ? "cuda_backward_sums_bf16" : "cuda_backward_sums_f32", &g));
    rlx_shape sm = rlx_shape_make(dt, 2, (rlx_dim[]){R, C}), sv = rlx_shape_make(dt, 1, (rlx_dim[]){C});
    static const char *const names[] = {"x", "gamma", "dy", "res", "h", "dh"};
    rlx_id in[6], dx, tot, dg, db, da, sa, ma;
    rlx_named_tensor tin[6];
    float *v[6];
    void *hv[6];
    for (int i = 0; i < 6; i++) {
      rlx_shape s = i == 1 ? sv : sm;
      CHECK_OK(rlx_input(g, names[i], s, &in[i]));
      size_t n = (size_t)(i == 1 ? C : R * C);
      v[i] = cuda_test_vals(n, 141 + (uint32_t)i, i == 1 ? 0.5f : -1.5f, 1.5f);
      hv[i] = bf ? (void *)to_bf16(v[i], n) : (void *)v[i];
      tin[i] = (rlx_named_tensor){names[i], {hv[i], s}};
    }
    rlx_attrs_LayerNormBackwardInput li = {.axis = -1, .eps = 1e-5f};
    rlx_attrs_LayerNormBackwardGamma lg = {.axis = -1, .eps = 1e-5f};
    CHECK_OK(rlx_build_LayerNormBackwardInput(g, (rlx_id[]){in[0], in[1], in[2]}, 3, &li, NULL, &dx));
    CHECK_OK(rlx_build_LayerNormBackwardGamma(g, (rlx_id[]){in[0], in[2]}, 2, &lg, NULL, &dg));
    CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, in[2], 1, (int64_t[]){0}, false, &db));
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, in[3], dx, &tot));
    rlx_attrs_ActivationBackward ab = {.kind = RLX_ACT_GELU_APPROX};
    CHECK_OK(rlx_build_ActivationBackward(g, (rlx_id[]){in[4], in[5]}, 2, &ab, NULL, &da));
    CHECK_OK(rlx_reduce_axes(g, bf ? RLX_REDUCE_MEAN : RLX_REDUCE_SUM, da, 1, (int64_t[]){0}, false, &sa));
    rlx_id dc[3];
    CHECK_OK(rlx_activation(g, RLX_ACT_GELU, in[4], &ma)); /* a second ActivationBackward, exact GELU */
    rlx_attrs_ActivationBackward ae = {.kind = RLX_ACT_GELU};
    CHECK_OK(rlx_build_ActivationBackward(g, (rlx_id[]){ma, in[5]}, 2, &ae, NULL, &dc[0]));
    CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, dc[0], 1, (int64_t[]){0}, false, &dc[1]));
    rlx_id o[7] = {tot, dg, db, da, sa, dc[0], dc[1]};
    CHECK_OK(rlx_graph_set_outputs(g, o, 7));
    static const char *const needle[] = {"writes the statistics", "adds %", "also sums dy", "also sums its rows"};
    int count[4];
    cuda_fold_log_counts(g, needle, 4, count);
    const size_t changed = cuda_fold_changes(g, tin, 6, "RLX_CUDA_FOLD_SUMS");
    /* against the CPU: the same graph with f32 outputs */
    rlx_id f[7];
    for (int i = 0; i < 7; i++) {
      if (bf)
        CHECK_OK(rlx_cast_to(g, o[i], RLX_F32, &f[i]));
      else
        f[i] = o[i];
    }
    CHECK_OK(rlx_graph_set_outputs(g, f, 7));
    const double d = cuda_test_cpu_vs_cuda(g, tin, 6, NULL);
    const double tol = bf ? 1.0 / 64 : 1e-4;
    printf("backward sums folded (%s, %lld x %lld): statistics %d, Add %d, beta %d, activation bias %d; output values "
           "the fold changed %zu; max scaled difference vs cpu %.3g\n",
           bf ? "bf16" : "f32", (long long)R, (long long)C, count[0], count[1], count[2], count[3], changed, d);
    CHECK_MSG(count[0] == 1 && count[2] == 1 && count[3] == 2, "%s: backward-sum folds taken: %d %d %d (want 1 1 2)",
              rlx_graph_name(g), count[0], count[2], count[3]);
    CHECK_MSG(count[1] == (bf ? 0 : 1), "%s: norm dx + Add folds %d (want %d: f32 only)", rlx_graph_name(g), count[1],
              bf ? 0 : 1);
    CHECK_MSG(changed == 0, "%s: the folded backward sums differ from the unfused ones in %zu values",
              rlx_graph_name(g), changed);
    CHECK_MSG(d < tol, "%s: cuda differs from cpu by %g (tolerance %g)", rlx_graph_name(g), d, tol);
    for (int i = 0; i < 6; i++) {
      if (bf) free(hv[i]);
      free(v[i]);
    }
    rlx_graph_free(g);
  }
}

/* The LayerNorm backward folds where autodiff puts them: the gradient of y = x + LN(x) W, loss
 * sum(y * y), at 600 x 128 f32 (x, gamma, beta, W as inputs). Whichever place the plan leaves for
 * the dx + residual Add (at the dx step or at the Add's), the folds must be taken, keep the
 * unfused bits and agree with the CPU. */
static void layernorm_residual_gradient(void) {
  const int64_t R = 600, C = 128;
  rlx_graph *f = NULL, *gg = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_ln_residual", &f));
  rlx_shape sx = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C}), sv = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C}),
            sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){C, C});
  rlx_id x, ga, be, w, h, hw, y, yy, loss;
  CHECK_OK(rlx_input(f, "x", sx, &x));
  CHECK_OK(rlx_input(f, "gamma", sv, &ga));
  CHECK_OK(rlx_input(f, "beta", sv, &be));
  CHECK_OK(rlx_input(f, "w", sw, &w));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  CHECK_OK(rlx_build_LayerNorm(f, (rlx_id[]){x, ga, be}, 3, &la, NULL, &h));
  CHECK_OK(rlx_matmul(f, h, w, &hw));
  CHECK_OK(rlx_binary(f, RLX_BINOP_ADD, x, hw, &y));
  CHECK_OK(rlx_binary(f, RLX_BINOP_MUL, y, y, &yy));
  CHECK_OK(rlx_sum_all(f, yy, &loss));
  CHECK_OK(rlx_graph_set_outputs(f, &loss, 1));
  static const char *const wrt[] = {"x", "gamma", "beta", "w"};
  CHECK_OK(rlx_grad(f, wrt, 4, NULL, &gg));
  float *vx = cuda_test_vals((size_t)(R * C), 161, -2.0f, 2.0f), *vg = cuda_test_vals((size_t)C, 162, 0.5f, 1.5f);
  float *vb = cuda_test_vals((size_t)C, 163, -0.5f, 0.5f), *vw = cuda_test_vals((size_t)(C * C), 164, -0.1f, 0.1f);
  float one = 1.0f;
  rlx_named_tensor in[] = {{"x", {vx, sx}},
                           {"gamma", {vg, sv}},
                           {"beta", {vb, sv}},
                           {"w", {vw, sw}},
                           {"d_output", {&one, rlx_shape_make(RLX_F32, 0, NULL)}}};
  static const char *const needle[] = {"writes the statistics", "adds %", "also sums dy", "run at Add", "norm %"};
  int count[5];
  if (gg) {
    cuda_fold_log_counts(gg, needle, 5, count);
    const size_t changed = cuda_fold_changes(gg, in, 5, "RLX_CUDA_FOLD_SUMS");
    const double d = cuda_test_cpu_vs_cuda(gg, in, 5, NULL);
    printf("LayerNorm residual gradient (f32, %lld x %lld): folds statistics %d (from the forward %d), dx + Add %d "
           "(%s), beta %d; output values the folds changed %zu; max scaled difference vs cpu %.3g\n",
           (long long)R, (long long)C, count[0], count[4], count[1], count[3] ? "at the Add" : "at the dx step",
           count[2], changed, d);
    CHECK_MSG(count[1] == 1 && count[2] == 1, "LayerNorm residual gradient: folds dx + Add %d, beta %d (want 1, 1)",
              count[1], count[2]);
    /* the dx step moved to the Add: the gamma step's statistics come from the forward */
    CHECK_MSG(count[3] == 0 || count[4] == 1, "LayerNorm residual gradient: the forward's statistics fold %d (want 1)",
              count[4]);
    CHECK_MSG(changed == 0, "LayerNorm residual gradient: the folds changed %zu output values", changed);
    CHECK_MSG(d < 1e-4, "LayerNorm residual gradient: cuda differs from cpu by %g", d);
  }
  free(vx), free(vg), free(vb), free(vw);
  rlx_graph_free(gg);
  rlx_graph_free(f);
}

/* The attention gradients of a Narrow-split QKV projection written straight into autodiff's
 * Concat of them (lower_fold.c), q / k / v moved out of the arena where the plan gives the Concat
 * their bytes. f32 through autodiff: x [B T, 3 d] = h w, loss = sum(Attention(q, k, v) * c)
 * (causal, head dims 32 and 64), gradients of h and w. bf16 as autodiff writes it, by hand: the
 * three AttentionBackward nodes of q / k / v Narrowed from an input, dy an input, their Concat
 * read by a MatMul. The fold must be taken, must give the unfused run's bits
 * (RLX_CUDA_FOLD_CONCAT=0: the kernels compute the same values, only where they store differs)
 * and must agree with the CPU. */
static rlx_graph *attention_concat_graph(int v, int64_t B, int64_t T, int64_t H, int64_t hd) {
  const int64_t d = H * hd, N = B * T;
  rlx_graph *f = NULL, *gg = NULL;
  CHECK_OK(rlx_graph_create(NULL, v == 2 ? "cuda_attn_concat_bf16" : "cuda_attn_concat_f32", &f));
  const rlx_dtype dt = v == 2 ? RLX_BF16 : RLX_F32;
  rlx_shape sh = rlx_shape_make(dt, 2, (rlx_dim[]){N, d}), sw = rlx_shape_make(dt, 2, (rlx_dim[]){d, 3 * d});
  rlx_id h, w, qkv, p[3], at, c, l, loss, out;
  CHECK_OK(rlx_input(f, "h", sh, &h));
  CHECK_OK(rlx_input(f, "w", sw, &w));
  CHECK_OK(rlx_input(f, "c", sh, &c));
  CHECK_OK(rlx_matmul(f, h, w, &qkv));
  for (int i = 0; i < 3; i++) {
    CHECK_OK(rlx_narrow(f, qkv, 1, i * d, d, &p[i]));
    CHECK_OK(rlx_reshape_dims(f, p[i], 3, (rlx_dim[]){B, T, d}, &p[i]));
  }
  if (v == 2) { /* the backward by hand: dy = c, the Concat read by c^T . dqkv */
    rlx_id dy, g[3], cat, ct;
    CHECK_OK(rlx_reshape_dims(f, c, 3, (rlx_dim[]){B, T, d}, &dy));
    static const int wrt[3] = {RLX_ATTN_WRT_QUERY, RLX_ATTN_WRT_KEY, RLX_ATTN_WRT_VALUE};
    for (int i = 0; i < 3; i++) {
      rlx_attrs_AttentionBackward a = {.num_heads = H, .head_dim = hd, .mask_kind = RLX_MASK_CAUSAL, .wrt = wrt[i]};
      CHECK_OK(rlx_build_AttentionBackward(f, (rlx_id[]){p[0], p[1], p[2], dy}, 4, &a, NULL, &g[i]));
      CHECK_OK(rlx_reshape_dims(f, g[i], 2, (rlx_dim[]){N, d}, &g[i]));
    }
    rlx_attrs_Concat ca = {.axis = 1};
    CHECK_OK(rlx_build_Concat(f, g, 3, &ca, NULL, &cat));
    CHECK_OK(rlx_permute(f, c, 2, (int64_t[]){1, 0}, &ct));
    CHECK_OK(rlx_matmul(f, ct, cat, &out));
    CHECK_OK(rlx_cast_to(f, out, RLX_F32, &out));
    CHECK_OK(rlx_graph_set_outputs(f, &out, 1));
    return f;
  }
  rlx_attrs_Attention aa = {.num_heads = H, .head_dim = hd, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_Attention(f, p, 3, &aa, NULL, &at));
  CHECK_OK(rlx_reshape_dims(f, at, 2, (rlx_dim[]){N, d}, &at));
  CHECK_OK(rlx_binary(f, RLX_BINOP_MUL, at, c, &l));
  CHECK_OK(rlx_sum_all(f, l, &loss));
  CHECK_OK(rlx_graph_set_outputs(f, &loss, 1));
  static const char *const wrt[] = {"h", "w"};
  CHECK_OK(rlx_grad(f, wrt, 2, NULL, &gg));
  rlx_graph_free(f);
  return gg;
}

static void attention_gradient_concat(void) {
  for (int v = 0; v < 3; v++) {
    const int64_t B = 2, T = 160, H = v == 1 ? 2 : 4, hd = v == 1 ? 64 : 32, d = H * hd, N = B * T;
    const rlx_dtype dt = v == 2 ? RLX_BF16 : RLX_F32;
    rlx_graph *gg = attention_concat_graph(v, B, T, H, hd);
    rlx_shape sh = rlx_shape_make(dt, 2, (rlx_dim[]){N, d}), sw = rlx_shape_make(dt, 2, (rlx_dim[]){d, 3 * d});
    float *vh = cuda_test_vals((size_t)(N * d), 171, -1.0f, 1.0f),
          *vw = cuda_test_vals((size_t)(d * 3 * d), 172, -0.2f, 0.2f);
    float *vc = cuda_test_vals((size_t)(N * d), 173, -1.0f, 1.0f), one = 1.0f;
    void *ph = vh, *pw = vw, *pc = vc;
    if (dt == RLX_BF16)
      ph = to_bf16(vh, (size_t)(N * d)), pw = to_bf16(vw, (size_t)(d * 3 * d)), pc = to_bf16(vc, (size_t)(N * d));
    rlx_named_tensor in[] = {
        {"h", {ph, sh}}, {"w", {pw, sw}}, {"c", {pc, sh}}, {"d_output", {&one, rlx_shape_make(RLX_F32, 0, NULL)}}};
    const uint32_t n_in = dt == RLX_BF16 ? 3 : 4;
    static const char *const needle[] = {"written into its columns"};
    int count = 0;
    if (gg) {
      cuda_fold_log_counts(gg, needle, 1, &count);
      const size_t changed = cuda_fold_changes(gg, in, n_in, "RLX_CUDA_FOLD_CONCAT");
      const double dd = cuda_test_cpu_vs_cuda(gg, in, n_in, NULL);
      printf("attention gradients into their Concat (%s, head dim %lld%s): folds %d, output values the fold changed "
             "%zu, max scaled difference vs cpu %.3g\n",
             rlx_dtype_name(dt), (long long)hd, dt == RLX_BF16 ? ", the backward by hand" : "", count, changed, dd);
      CHECK_MSG(count == 1, "attention gradients into their Concat: %d folds (want 1)", count);
      CHECK_MSG(changed == 0, "attention gradients into their Concat: the fold changed %zu output values", changed);
      CHECK_MSG(dd < (dt == RLX_BF16 ? 3e-2 : 1e-4),
                "attention gradients into their Concat: cuda differs from cpu by %g", dd);
    }
    if (dt == RLX_BF16) free(ph), free(pw), free(pc);
    free(vh), free(vw), free(vc);
    rlx_graph_free(gg);
  }
}

/* Convolutions on cuDNN (dnn.cu): the forward, input and weight gradients of two 2-D convolutions
 * (3 -> 6 channels 3 x 3 padding 1, then Tanh; 6 -> 4 in 2 groups, stride 2), through autodiff,
 * f32. They must take cuDNN plans (their log lines), agree with the CPU with cuDNN on and off
 * (RLX_CUDA_CUDNN=0: the direct double-sum kernels), and differ from the direct kernels in some
 * bits (fp32 against double sums: the cuDNN path ran). */
static void convolutions_on_cudnn(void) {
  const int64_t N = 8, H = 20;
  rlx_graph *f = NULL, *gg = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_cudnn_conv", &f));
  rlx_shape sx = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, 3, H, H}),
            s1 = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){6, 3, 3, 3}),
            s2 = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){4, 3, 3, 3}),
            sc = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, 4, H / 2, H / 2});
  rlx_id x, w1, w2, c, y1, y2, l, loss;
  CHECK_OK(rlx_input(f, "x", sx, &x));
  CHECK_OK(rlx_input(f, "w1", s1, &w1));
  CHECK_OK(rlx_input(f, "w2", s2, &w2));
  CHECK_OK(rlx_input(f, "c", sc, &c));
  rlx_attrs_Conv a1 = {
      .stride = {.v = (int64_t[]){1, 1}, .n = 2}, .padding = {.v = (int64_t[]){1, 1}, .n = 2}, .groups = 1};
  rlx_attrs_Conv a2 = {
      .stride = {.v = (int64_t[]){2, 2}, .n = 2}, .padding = {.v = (int64_t[]){1, 1}, .n = 2}, .groups = 2};
  CHECK_OK(rlx_build_Conv(f, (rlx_id[]){x, w1}, 2, &a1, NULL, &y1));
  CHECK_OK(rlx_activation(f, RLX_ACT_TANH, y1, &y1));
  CHECK_OK(rlx_build_Conv(f, (rlx_id[]){y1, w2}, 2, &a2, NULL, &y2));
  CHECK_OK(rlx_binary(f, RLX_BINOP_MUL, y2, c, &l));
  CHECK_OK(rlx_sum_all(f, l, &loss));
  CHECK_OK(rlx_graph_set_outputs(f, &loss, 1));
  static const char *const wrt[] = {"x", "w1", "w2"};
  CHECK_OK(rlx_grad(f, wrt, 3, NULL, &gg));
  float *vx = cuda_test_vals((size_t)(N * 3 * H * H), 181, -1.0f, 1.0f), *v1 = cuda_test_vals(6 * 27, 182, -0.3f, 0.3f);
  float *v2 = cuda_test_vals(4 * 27, 183, -0.3f, 0.3f),
        *vc = cuda_test_vals((size_t)(N * 4 * H * H / 4), 184, -1.0f, 1.0f);
  float one = 1.0f;
  rlx_named_tensor in[] = {{"x", {vx, sx}},
                           {"w1", {v1, s1}},
                           {"w2", {v2, s2}},
                           {"c", {vc, sc}},
                           {"d_output", {&one, rlx_shape_make(RLX_F32, 0, NULL)}}};
  static const char *const needle[] = {"cuDNN convolution (forward", "cuDNN convolution (backward data",
                                       "cuDNN convolution (backward filter"};
  int count[3] = {0, 0, 0};
  if (gg) {
    cuda_fold_log_counts(gg, needle, 3, count);
    const size_t changed = cuda_fold_changes(gg, in, 5, "RLX_CUDA_CUDNN");
    const double on = cuda_test_cpu_vs_cuda(gg, in, 5, NULL);
    setenv("RLX_CUDA_CUDNN", "0", 1);
    const double off = cuda_test_cpu_vs_cuda(gg, in, 5, NULL);
    unsetenv("RLX_CUDA_CUDNN");
    printf("convolutions on cuDNN (f32): plans forward %d, backward data %d, backward filter %d; values cuDNN changed "
           "%zu; max scaled difference vs cpu %.3g (direct kernels %.3g)\n",
           count[0], count[1], count[2], changed, on, off);
    /* rlx_grad's graph outputs only the gradients: the second convolution's forward is not needed
     * (d loss / d y2 = c) and is removed, so one forward, two input and two weight gradients */
    CHECK_MSG(count[0] == 1 && count[1] == 2 && count[2] == 2, "cuDNN plans: forward %d, backward data %d, filter %d",
              count[0], count[1], count[2]);
    CHECK_MSG(changed > 0, "cuDNN convolutions: the same bits as the direct kernels (not run?)%s", "");
    CHECK_MSG(on < 1e-5 && off < 1e-5, "cuDNN convolutions vs cpu: %g (direct kernels %g)", on, off);
  }
  free(vx), free(v1), free(v2), free(vc);
  rlx_graph_free(gg);
  rlx_graph_free(f);
}

void cuda_fast_path_checks(void) {
  layernorm_residual_gradient();
  convolutions_on_cudnn();
  attention_gradient_concat();
  backward_sum_folds();
  matmul_bias_epilogues();
  matmul_residual_epilogue();
  matmul_transposed_operands();
  attention_nan_rows();
  attention_f32_paths();
  activation_f32_paths();
  const int64_t R = 1027, C = 96;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_fast_paths", &g));
  rlx_id x, w, bias, xb, wb, bb, t[10], f[10];
  rlx_shape sx = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C}), sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, 3 * C}),
            sb = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C});
  CHECK_OK(rlx_input(g, "x", sx, &x));
  CHECK_OK(rlx_input(g, "w", sw, &w));
  CHECK_OK(rlx_input(g, "bias", sb, &bias));
  CHECK_OK(rlx_cast_to(g, x, RLX_BF16, &xb));
  CHECK_OK(rlx_cast_to(g, w, RLX_BF16, &wb));
  CHECK_OK(rlx_cast_to(g, bias, RLX_BF16, &bb));
  /* data movement: last-axis Pads (bf16, f32) and last-axis Narrows with aligned rows */
  CHECK_OK(rlx_pad_axis(g, xb, 1, 96, 96, &t[0]));
  CHECK_OK(rlx_pad_axis(g, x, 1, 4, 8, &t[1]));
  CHECK_OK(rlx_narrow(g, wb, 1, C, C, &t[2]));
  CHECK_OK(rlx_narrow(g, w, 1, 2 * C, C, &t[3]));
  /* one-dtype bf16 region: ((x * y + bias) / (|y| + 1)), then max with -x (out of line), over
   * [R, C] (a multiple of 8) and over a Narrow-free odd-length copy [R * C - 5] */
  rlx_id yb;
  CHECK_OK(rlx_narrow(g, wb, 1, 0, C, &yb));
  rlx_chain_step steps[6] = {
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.index = 0}, .b = {.index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_ADD, .a = {.is_step = 1, .index = 0}, .b = {.index = 2}},
      {.kind = RLX_CHAIN_STEP_ACTIVATION, .sub = RLX_ACT_ABS, .a = {.index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_ADD, .a = {.is_step = 1, .index = 2}, .b = {.index = 3}},
      {.kind = RLX_CHAIN_STEP_BINARY,
       .sub = RLX_BINOP_DIV,
       .a = {.is_step = 1, .index = 1},
       .b = {.is_step = 1, .index = 3}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MAX, .a = {.is_step = 1, .index = 4}, .b = {.index = 4}},
  };
  rlx_id one, negx;
  CHECK_OK(rlx_binary_scalar(g, RLX_BINOP_MUL, bb, 0.0, &one));
  CHECK_OK(rlx_binary_scalar(g, RLX_BINOP_ADD, one, 1.0, &one));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, xb, &negx));
  rlx_attrs_ElementwiseRegion era = {.chain = {.steps = steps, .n = 6}, .num_inputs = 5};
  CHECK_OK(rlx_build_ElementwiseRegion(g, (rlx_id[]){xb, yb, bb, one, negx}, 5, &era, NULL, &t[4]));
  rlx_id xf, yf, xo, yo, bo, oo, no;
  CHECK_OK(rlx_reshape_dims(g, xb, 1, (rlx_dim[]){R * C}, &xf));
  CHECK_OK(rlx_reshape_dims(g, yb, 1, (rlx_dim[]){R * C}, &yf));
  CHECK_OK(rlx_narrow(g, xf, 0, 0, R * C - 5, &xo));
  CHECK_OK(rlx_narrow(g, yf, 0, 0, R * C - 5, &yo));
  CHECK_OK(rlx_narrow(g, xf, 0, 0, R * C - 5, &bo));
  CHECK_OK(rlx_activation(g, RLX_ACT_ABS, yo, &oo));
  CHECK_OK(rlx_activation(g, RLX_ACT_NEG, xo, &no));
  rlx_attrs_ElementwiseRegion erb = {.chain = {.steps = steps, .n = 6}, .num_inputs = 5};
  CHECK_OK(rlx_build_ElementwiseRegion(g, (rlx_id[]){xo, yo, bo, oo, no}, 5, &erb, NULL, &t[5]));
  /* column sums / means (leading axis reduced), the loss sum, the LayerNorm gamma gradient */
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, wb, 1, (int64_t[]){0}, false, &t[6]));
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_MEAN, w, 1, (int64_t[]){0}, false, &t[7]));
  CHECK_OK(rlx_sum_all(g, xb, &t[8]));
  rlx_attrs_LayerNormBackwardGamma lg = {.axis = -1, .eps = 1e-5f};
  CHECK_OK(rlx_build_LayerNormBackwardGamma(g, (rlx_id[]){xb, yb}, 2, &lg, NULL, &t[9]));
  for (int i = 0; i < 10; i++) CHECK_OK(rlx_cast_to(g, t[i], RLX_F32, &f[i]));
  float *vx = cuda_test_vals((size_t)(R * C), 91, -2.0f, 2.0f);
  float *vw = cuda_test_vals((size_t)(R * 3 * C), 92, -2.0f, 2.0f), *vb = cuda_test_vals((size_t)C, 93, -2.0f, 2.0f);
  rlx_named_tensor in[] = {{"x", {vx, sx}}, {"w", {vw, sw}}, {"bias", {vb, sb}}};
  static const struct {
    int first, count;
    double tol;
    const char *what;
  } parts[] = {
      {0, 4, 0, "last-axis Pad (bf16, f32) and Narrow rows (bf16, f32)"},
      {4, 2, 0, "one-dtype bf16 regions (tiled operand, Div, Max; 1027 x 96 and 98587 elements)"},
      {6, 4, 1.0 / 128, "column sum bf16 / mean f32, bf16 sum of all, bf16 LayerNorm gamma gradient"},
  };
  for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
    CHECK_OK(rlx_graph_set_outputs(g, f + parts[k].first, (uint32_t)parts[k].count));
    double d = cuda_test_cpu_vs_cuda(g, in, 3, NULL);
    printf("%s: max scaled difference %.3g\n", parts[k].what, d);
    CHECK_MSG(parts[k].tol == 0 ? d == 0 : d < parts[k].tol, "%s: cuda differs from cpu by %g (tolerance %g)",
              parts[k].what, d, parts[k].tol);
  }
  free(vx), free(vw), free(vb);
  rlx_graph_free(g);
}
