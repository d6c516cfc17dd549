/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend: on a machine without a GPU (CI) it must report itself unavailable with a
 * message that says what is missing; on a machine with one it must run graphs larger than the
 * conformance table's (cuBLAS paths, block reductions, broadcasting) and match the CPU.
 * Exactly one of the two halves runs; each checks something real. */
#include <math.h>
#include <stdlib.h>

#include "rlx/build.h"
#include "rlx/cuda.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_CUDA
#include "backends/cuda/cu.h"

void cuda_claims_checks(void);     /* cuda_backend/claims.c: needs a GPU */
void cuda_claim_list_checks(void); /* cuda_backend/claims.c: the claim list's make-up */
void cuda_linalg_checks(void);     /* cuda_backend/linalg.c: cuFFT / cuSOLVER paths, needs a GPU */
void cuda_fast_path_checks(void);  /* cuda_backend/fast_paths.c: the block round's fast paths, needs a GPU */

static float urand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return ((float)(*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

static float *fill(size_t n, uint32_t seed) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = urand(&seed);
  return v;
}

/* Runs g on "cpu" and "cuda" with the same inputs; returns the max relative difference (scaled
 * by max(1, max |cpu|)) over every output. */
static double run_both_opt(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, const void *cuda_opt);
static double run_both(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in) {
  return run_both_opt(g, in, n_in, NULL);
}
static double run_both_opt(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, const void *cuda_opt) {
  const char *names[2] = {"cpu", "cuda"};
  rlx_executable *e[2] = {NULL, NULL};
  const rlx_tensor *out[2] = {NULL, NULL};
  uint32_t n_out[2] = {0, 0};
  for (int b = 0; b < 2; b++) {
    rlx_compile_options o;
    rlx_compile_options_init(&o);
    if (b == 1) o.backend_options = cuda_opt;
    CHECK_OK(rlx_compile(g, names[b], &o, &e[b]));
    if (!e[b]) return INFINITY;
    CHECK_OK(rlx_executable_run(e[b], in, n_in, &out[b], &n_out[b]));
  }
  double worst = 0;
  if (n_out[0] == 0 || n_out[0] != n_out[1]) worst = INFINITY; /* nothing to compare is a failure */
  for (uint32_t o = 0; o < n_out[0] && n_out[0] == n_out[1]; o++) {
    size_t n;
    if (rlx_shape_numel(&out[0][o].shape, &n) != RLX_OK) return INFINITY;
    const float *a = out[0][o].data, *b = out[1][o].data;
    double scale = 1;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
      double d = fabs((double)a[i] - b[i]) / scale;
      if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
  }
  rlx_executable_free(e[0]);
  rlx_executable_free(e[1]);
  return worst;
}

/* max scaled difference between two runs' outputs (f32) */
static double max_diff(const rlx_tensor *a, const rlx_tensor *b, uint32_t n_a, uint32_t n_b) {
  if (n_a == 0 || n_a != n_b) return INFINITY;
  double worst = 0;
  for (uint32_t o = 0; o < n_a; o++) {
    size_t n;
    if (rlx_shape_numel(&a[o].shape, &n) != RLX_OK) return INFINITY;
    const float *x = a[o].data, *y = b[o].data;
    double scale = 1;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(x[i]));
    for (size_t i = 0; i < n; i++) {
      double d = fabs((double)x[i] - y[i]) / scale;
      if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
  }
  return worst;
}

/* CUDA graph replay: the cuda executable runs step by step first, captures its steps into a
 * graph at the second run and replays it after; inputs alternate between two sets, so a replay
 * that computed nothing (or read stale slots) would return the other set's results. */
static void graph_replay(const rlx_graph *g, const char *what, rlx_named_tensor *set_a, rlx_named_tensor *set_b,
                         uint32_t n_in) {
  rlx_executable *e[2] = {NULL, NULL};
  const char *names[2] = {"cpu", "cuda"};
  for (int b = 0; b < 2; b++) {
    rlx_compile_options o;
    rlx_compile_options_init(&o);
    CHECK_OK(rlx_compile(g, names[b], &o, &e[b]));
    if (!e[b]) return;
  }
  double worst = 0;
  for (int r = 0; r < 5; r++) {
    rlx_named_tensor *in = r % 2 ? set_b : set_a;
    const rlx_tensor *out[2];
    uint32_t n_out[2];
    for (int b = 0; b < 2; b++) CHECK_OK(rlx_executable_run(e[b], in, n_in, &out[b], &n_out[b]));
    double d = max_diff(out[0], out[1], n_out[0], n_out[1]);
    CHECK_MSG(d < 1e-4, "%s, run %d (%s): cuda differs from cpu by %g", what, r,
              r == 0   ? "step by step"
              : r == 1 ? "captured"
                       : "replayed",
              d);
    worst = fmax(worst, d);
  }
  printf("%s: 5 runs (step by step, captured into a CUDA graph, 3 replays), inputs alternating: max scaled "
         "difference %.3g\n",
         what, worst);
  rlx_executable_free(e[0]);
  rlx_executable_free(e[1]);
}

/* x [B, D] -> relu(x W1 + b1) W2 -> softmax over the last axis, and LayerNorm / Reduce / Transpose
 * side outputs: one graph touching the main kernels at sizes where cuBLAS and block reductions
 * matter. */
static void mlp_block(void) {
  const int64_t B = 96, D = 300, H = 257, C = 33;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_mlp", &g));
  rlx_id x, w1, b1, w2, h, hb, hr, lo, sm, gam, bet, ln, red, tr;
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){B, D}), &x));
  CHECK_OK(rlx_input(g, "w1", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){D, H}), &w1));
  CHECK_OK(rlx_input(g, "b1", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H}), &b1));
  CHECK_OK(rlx_input(g, "w2", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){H, C}), &w2));
  CHECK_OK(rlx_input(g, "gamma", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H}), &gam));
  CHECK_OK(rlx_input(g, "beta", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H}), &bet));
  CHECK_OK(rlx_matmul(g, x, w1, &h));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, h, b1, &hb));
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, hb, &hr));
  CHECK_OK(rlx_matmul(g, hr, w2, &lo));
  rlx_attrs_Softmax sa = {.axis = -1};
  CHECK_OK(rlx_build_Softmax(g, &lo, 1, &sa, NULL, &sm));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  CHECK_OK(rlx_build_LayerNorm(g, (rlx_id[]){hb, gam, bet}, 3, &la, NULL, &ln));
  CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, hb, 1, (int64_t[]){0}, false, &red));
  CHECK_OK(rlx_transpose(g, hr, 2, (int64_t[]){1, 0}, &tr));
  CHECK_OK(rlx_graph_set_outputs(g, (rlx_id[]){sm, ln, red, tr}, 4));
  float *vx = fill((size_t)(B * D), 1), *v1 = fill((size_t)(D * H), 2), *vb = fill((size_t)H, 3),
        *v2 = fill((size_t)(H * C), 4), *vg = fill((size_t)H, 5), *vbe = fill((size_t)H, 6);
  rlx_named_tensor in[] = {
      {"x", {vx, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){B, D})}},
      {"w1", {v1, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){D, H})}},
      {"b1", {vb, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H})}},
      {"w2", {v2, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){H, C})}},
      {"gamma", {vg, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H})}},
      {"beta", {vbe, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H})}},
  };
  double d = run_both(g, in, 6);
  CHECK_MSG(d < 1e-4, "cuda vs cpu: max scaled difference %g (fp32, TF32 off: expected < 1e-4)", d);
  printf("mlp block: max scaled difference cuda vs cpu %.3g\n", d);
  float *wx = fill((size_t)(B * D), 101), *w1v = fill((size_t)(D * H), 102);
  rlx_named_tensor in_b[6];
  memcpy(in_b, in, sizeof in);
  in_b[0].tensor.data = wx;
  in_b[1].tensor.data = w1v;
  graph_replay(g, "mlp block", in, in_b, 6);
  free(wx), free(w1v);
  free(vx), free(v1), free(vb), free(v2), free(vg), free(vbe);
  rlx_graph_free(g);
}

/* Batched MatMul with a broadcast batch (one strided-batched cuBLAS call vs per-batch calls). */
static void batched_matmul(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_bmm", &g));
  rlx_id a, b, c;
  CHECK_OK(rlx_input(g, "a", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){3, 1, 40, 64}), &a));
  CHECK_OK(rlx_input(g, "b", rlx_shape_make(RLX_F32, 3, (rlx_dim[]){5, 64, 24}), &b));
  CHECK_OK(rlx_matmul(g, a, b, &c));
  CHECK_OK(rlx_graph_set_outputs(g, &c, 1));
  float *va = fill(3 * 40 * 64, 7), *vb = fill(5 * 64 * 24, 8);
  rlx_named_tensor in[] = {{"a", {va, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){3, 1, 40, 64})}},
                           {"b", {vb, rlx_shape_make(RLX_F32, 3, (rlx_dim[]){5, 64, 24})}}};
  double d = run_both(g, in, 2);
  CHECK_MSG(d < 1e-4, "batched matmul: max scaled difference %g", d);
  printf("broadcast batched matmul: max scaled difference %.3g\n", d);
  free(va), free(vb);
  rlx_graph_free(g);
}

/* Causal grouped-query attention at a size the conformance table does not reach, and a strided
 * padded convolution + max pool (the CNN path). */
static void attention_and_conv(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_attn_conv", &g));
  const int64_t B = 2, H = 4, Hkv = 2, S = 150, D = 64;
  rlx_id q, k, v, at, x, w, cv, pl;
  CHECK_OK(rlx_input(g, "q", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, H, S, D}), &q));
  CHECK_OK(rlx_input(g, "k", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, Hkv, S, D}), &k));
  CHECK_OK(rlx_input(g, "v", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, Hkv, S, D}), &v));
  rlx_attrs_Attention aa = {.num_heads = H, .head_dim = D, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_Attention(g, (rlx_id[]){q, k, v}, 3, &aa, NULL, &at));
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){8, 3, 28, 28}), &x));
  CHECK_OK(rlx_input(g, "w", rlx_shape_make(RLX_F32, 4, (rlx_dim[]){16, 3, 5, 5}), &w));
  rlx_attrs_Conv ca = {
      .stride = {.v = (int64_t[]){2, 1}, .n = 2}, .padding = {.v = (int64_t[]){2, 1}, .n = 2}, .groups = 1};
  CHECK_OK(rlx_build_Conv(g, (rlx_id[]){x, w}, 2, &ca, NULL, &cv));
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX, .kernel_size = {.v = (int64_t[]){2, 2}, .n = 2}};
  CHECK_OK(rlx_build_Pool(g, &cv, 1, &pa, NULL, &pl));
  CHECK_OK(rlx_graph_set_outputs(g, (rlx_id[]){at, pl}, 2));
  float *vq = fill((size_t)(B * H * S * D), 11), *vk = fill((size_t)(B * Hkv * S * D), 12),
        *vv = fill((size_t)(B * Hkv * S * D), 13), *vx = fill(8 * 3 * 28 * 28, 14), *vw = fill(16 * 3 * 25, 15);
  rlx_named_tensor in[] = {
      {"q", {vq, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, H, S, D})}},
      {"k", {vk, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, Hkv, S, D})}},
      {"v", {vv, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){B, Hkv, S, D})}},
      {"x", {vx, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){8, 3, 28, 28})}},
      {"w", {vw, rlx_shape_make(RLX_F32, 4, (rlx_dim[]){16, 3, 5, 5})}},
  };
  double d = run_both(g, in, 5);
  CHECK_MSG(d < 1e-4, "attention / conv / pool: max scaled difference %g", d);
  printf("causal GQA attention + conv + pool: max scaled difference %.3g\n", d);
  free(vq), free(vk), free(vv), free(vx), free(vw);
  rlx_graph_free(g);
}

/* Attention forward and backward against the CPU at sizes that reach the tiled flash kernels
 * (several 64-row tiles with a tail, grouped-query heads, S_q != S_k, both head-dim pads, every
 * layout, soft-cap, sliding window, bf16) and the general backward kernels (a Custom keep-mask). */
typedef struct bw_case {
  const char *name;
  rlx_dtype t;
  int64_t B, H, Hkv, Sq, Sk, D;
  int layout; /* 0 [B, H, S, D], 1 [B, S, H, D], 2 [B, S, H*D] */
  int mask;
  int64_t window;
  float scale, cap; /* 0 = the default / none */
  bool all;         /* AttentionBackwardAll instead of three AttentionBackward + the forward */
  double tol;
} bw_case;

static rlx_shape bw_shape(const bw_case *c, int64_t S, int64_t H) {
  if (c->layout == 0) return rlx_shape_make(RLX_F32, 4, (rlx_dim[]){c->B, H, S, c->D});
  if (c->layout == 1) return rlx_shape_make(RLX_F32, 4, (rlx_dim[]){c->B, S, H, c->D});
  return rlx_shape_make(RLX_F32, 3, (rlx_dim[]){c->B, S, H * c->D});
}

static void attention_backward_case(const bw_case *c) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, c->name, &g));
  rlx_shape qs = bw_shape(c, c->Sq, c->H), ks = bw_shape(c, c->Sk, c->Hkv);
  rlx_shape ms = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){c->B, c->Sk});
  bool has_mask = c->mask == RLX_MASK_CUSTOM;
  rlx_id in[5], op[5], outs[4];
  const char *names[5] = {"q", "k", "v", "dy", "m"};
  rlx_shape shapes[5] = {qs, ks, ks, qs, ms};
  uint32_t n_in = has_mask ? 5 : 4, n_out = 0;
  for (uint32_t i = 0; i < n_in; i++) {
    CHECK_OK(rlx_input(g, names[i], shapes[i], &in[i]));
    op[i] = in[i];
    if (c->t != RLX_F32 && i < 4) CHECK_OK(rlx_cast_to(g, in[i], c->t, &op[i]));
  }
  rlx_of32 sc = {.has = c->scale != 0, .v = c->scale}, cap = {.has = c->cap != 0, .v = c->cap};
  if (c->all) {
    rlx_attrs_AttentionBackwardAll a = {.num_heads = c->H,
                                        .head_dim = c->D,
                                        .mask_kind = c->mask,
                                        .window = c->window,
                                        .score_scale = sc,
                                        .attn_logit_softcap = cap};
    CHECK_OK(rlx_build_AttentionBackwardAll(g, op, n_in, &a, NULL, &outs[n_out++]));
  } else {
    rlx_attrs_Attention fa = {.num_heads = c->H,
                              .head_dim = c->D,
                              .mask_kind = c->mask,
                              .window = c->window,
                              .score_scale = sc,
                              .attn_logit_softcap = cap};
    rlx_id fop[4] = {op[0], op[1], op[2], has_mask ? op[4] : 0};
    CHECK_OK(rlx_build_Attention(g, fop, has_mask ? 4 : 3, &fa, NULL, &outs[n_out++]));
    static const int wrt[3] = {RLX_ATTN_WRT_QUERY, RLX_ATTN_WRT_KEY, RLX_ATTN_WRT_VALUE};
    for (int w = 0; w < 3; w++) {
      rlx_attrs_AttentionBackward a = {.num_heads = c->H,
                                       .head_dim = c->D,
                                       .mask_kind = c->mask,
                                       .window = c->window,
                                       .wrt = wrt[w],
                                       .score_scale = sc,
                                       .attn_logit_softcap = cap};
      CHECK_OK(rlx_build_AttentionBackward(g, op, n_in, &a, NULL, &outs[n_out++]));
    }
  }
  if (c->t != RLX_F32)
    for (uint32_t o = 0; o < n_out; o++) CHECK_OK(rlx_cast_to(g, outs[o], RLX_F32, &outs[o]));
  CHECK_OK(rlx_graph_set_outputs(g, outs, n_out));
  rlx_named_tensor tin[5];
  float *vals[5];
  for (uint32_t i = 0; i < n_in; i++) {
    size_t n;
    CHECK_OK(rlx_shape_numel(&shapes[i], &n));
    vals[i] = fill(n, 31 + i);
    if (i == 4)
      for (size_t e = 0; e < n; e++) vals[i][e] = vals[i][e] > -0.4f ? 1.0f : 0.0f;
    tin[i] = (rlx_named_tensor){names[i], {vals[i], shapes[i]}};
  }
  double d = run_both(g, tin, n_in);
  printf("attention %s: max scaled difference %.3g\n", c->name, d);
  CHECK_MSG(d < c->tol, "attention %s: cuda differs from cpu by %g (tolerance %g)", c->name, d, c->tol);
  if (c->t == RLX_F32 && c->mask == RLX_MASK_CAUSAL) { /* the shared statistics under graph replay */
    rlx_named_tensor tin_b[5];
    float *vals_b[5];
    for (uint32_t i = 0; i < n_in; i++) {
      size_t n;
      CHECK_OK(rlx_shape_numel(&shapes[i], &n));
      vals_b[i] = fill(n, 61 + i);
      tin_b[i] = (rlx_named_tensor){names[i], {vals_b[i], shapes[i]}};
    }
    graph_replay(g, c->name, tin, tin_b, n_in);
    for (uint32_t i = 0; i < n_in; i++) free(vals_b[i]);
  }
  for (uint32_t i = 0; i < n_in; i++) free(vals[i]);
  rlx_graph_free(g);
}

static void attention_backward(void) {
  static const bw_case cases[] = {
      {"f32 causal GQA [B,H,S,D] S=150 D=64", RLX_F32, 2, 4, 2, 150, 150, 64, 0, RLX_MASK_CAUSAL, 0, 0, 0, false, 1e-4},
      {"f32 packed Sq=100 Sk=170 D=80 scale+softcap", RLX_F32, 2, 2, 2, 100, 170, 80, 2, RLX_MASK_NONE, 0, 0.2f, 5.0f,
       false, 1e-4},
      {"f32 All [B,S,H,D] sliding window 40 S=130 D=32", RLX_F32, 1, 3, 3, 130, 130, 32, 1, RLX_MASK_SLIDING_WINDOW, 40,
       0, 0, true, 1e-4},
      {"bf16 causal GQA [B,H,S,D] S=150 D=64", RLX_BF16, 2, 4, 2, 150, 150, 64, 0, RLX_MASK_CAUSAL, 0, 0, 0, false,
       3e-2},
      /* the tensor-core kernels (flash_tc.cu): 16-bit operands, head dims up to 64 */
      {"f16 causal GQA [B,H,S,D] S=150 D=64 (tensor cores)", RLX_F16, 2, 4, 2, 150, 150, 64, 0, RLX_MASK_CAUSAL, 0, 0,
       0, false, 4e-3},
      {"bf16 packed Sq=100 Sk=170 D=48 scale+softcap (tensor cores)", RLX_BF16, 2, 2, 2, 100, 170, 48, 2, RLX_MASK_NONE,
       0, 0.2f, 5.0f, false, 3e-2},
      {"f16 All [B,S,H,D] sliding window 40 S=130 D=32 GQA (tensor cores)", RLX_F16, 1, 4, 2, 130, 130, 32, 1,
       RLX_MASK_SLIDING_WINDOW, 40, 0, 0, true, 4e-3},
      {"bf16 causal decode Sq=70 Sk=200 packed D=64 (tensor cores)", RLX_BF16, 3, 2, 1, 70, 200, 64, 2, RLX_MASK_CAUSAL,
       0, 0, 0, false, 3e-2},
      {"f32 custom keep-mask (general kernels) Sq=70 Sk=90 D=16", RLX_F32, 2, 2, 1, 70, 90, 16, 0, RLX_MASK_CUSTOM, 0,
       0, 0, false, 1e-4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attention_backward_case(&cases[i]);
}

/* The matmul precision option reaches cuBLAS: fp32 (default) matches the CPU closely, TF32 and
 * bf16 tensor-core modes are measurably less exact but within their expected error. */
static void tf32_policy(void) {
  const int64_t M = 256, K = 1024, N = 256;
  rlx_graph *g = NULL;
  rlx_id a, b, c;
  CHECK_OK(rlx_graph_create(NULL, "cuda_policy", &g));
  CHECK_OK(rlx_input(g, "a", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, K}), &a));
  CHECK_OK(rlx_input(g, "b", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){K, N}), &b));
  CHECK_OK(rlx_matmul(g, a, b, &c));
  CHECK_OK(rlx_graph_set_outputs(g, &c, 1));
  float *va = fill((size_t)(M * K), 21), *vb = fill((size_t)(K * N), 22);
  rlx_named_tensor in[] = {{"a", {va, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, K})}},
                           {"b", {vb, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){K, N})}}};
  rlx_cuda_options o;
  rlx_cuda_options_init(&o);
  double d32 = run_both_opt(g, in, 2, &o);
  o.matmul = RLX_CUDA_TF32;
  double dtf = run_both_opt(g, in, 2, &o);
  o.matmul = RLX_CUDA_BF16;
  double dbf = run_both_opt(g, in, 2, &o);
  printf("matmul %lldx%lldx%lld: scaled max difference vs cpu fp32 %.3g, tf32 %.3g, bf16 %.3g\n", (long long)M,
         (long long)K, (long long)N, d32, dtf, dbf);
  CHECK_MSG(d32 < 1e-5, "fp32 policy: %g", d32);
  CHECK_MSG(dtf > 4 * d32 && dtf < 1e-2, "tf32 policy: %g (fp32 %g)", dtf, d32);
  CHECK_MSG(dbf > dtf && dbf < 5e-2, "bf16 policy: %g (tf32 %g)", dbf, dtf);
  free(va), free(vb);
  rlx_graph_free(g);
}

/* Paths the conformance table's small cases do not reach: the split reduction (few lines of
 * >= 65536 elements), the f32 ElementwiseRegion kernel with float4 loads, a tiled operand and a
 * tail (n % 4 != 0), and the typed attention kernel on bf16. */
static void large_paths(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_large", &g));
  const int64_t R = 3, L = 70001, M = 142858, C = 7, S = 200, HD = 256;
  rlx_id x, s_all, s_ax, m_ax, a, b, c, y, q, k, v, qb, kb, vb, at, atf;
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, L}), &x));
  CHECK_OK(rlx_sum_all(g, x, &s_all));
  rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = {.v = (int64_t[]){1}, .n = 1}};
  CHECK_OK(rlx_build_Reduce(g, &x, 1, &ra, NULL, &s_ax));
  rlx_attrs_Reduce rm = {.op = RLX_REDUCE_MAX, .axes = {.v = (int64_t[]){1}, .n = 1}};
  CHECK_OK(rlx_build_Reduce(g, &x, 1, &rm, NULL, &m_ax));
  CHECK_OK(rlx_input(g, "a", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, C}), &a));
  CHECK_OK(rlx_input(g, "b", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, C}), &b));
  CHECK_OK(rlx_input(g, "c", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C}), &c));
  rlx_chain_step steps[4] = {
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.index = 0}, .b = {.index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_ADD, .a = {.is_step = 1, .index = 0}, .b = {.index = 2}},
      {.kind = RLX_CHAIN_STEP_ACTIVATION, .sub = RLX_ACT_RELU, .a = {.is_step = 1, .index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.is_step = 1, .index = 2}, .b = {.index = 0}},
  };
  rlx_attrs_ElementwiseRegion era = {.chain = {.steps = steps, .n = 4}, .num_inputs = 3};
  CHECK_OK(rlx_build_ElementwiseRegion(g, (rlx_id[]){a, b, c}, 3, &era, NULL, &y));
  rlx_shape qs = rlx_shape_make(RLX_F32, 3, (rlx_dim[]){2, S, HD});
  CHECK_OK(rlx_input(g, "q", qs, &q));
  CHECK_OK(rlx_input(g, "k", qs, &k));
  CHECK_OK(rlx_input(g, "v", qs, &v));
  CHECK_OK(rlx_cast_to(g, q, RLX_BF16, &qb));
  CHECK_OK(rlx_cast_to(g, k, RLX_BF16, &kb));
  CHECK_OK(rlx_cast_to(g, v, RLX_BF16, &vb));
  rlx_attrs_Attention aa = {.num_heads = 4, .head_dim = 64, .mask_kind = RLX_MASK_CAUSAL};
  CHECK_OK(rlx_build_Attention(g, (rlx_id[]){qb, kb, vb}, 3, &aa, NULL, &at));
  CHECK_OK(rlx_cast_to(g, at, RLX_F32, &atf));
  CHECK_OK(rlx_graph_set_outputs(g, (rlx_id[]){s_all, s_ax, m_ax, y}, 4));
  float *vx = fill((size_t)(R * L), 21), *va = fill((size_t)(M * C), 22), *vb2 = fill((size_t)(M * C), 23),
        *vc = fill((size_t)C, 24), *vq = fill((size_t)(2 * S * HD), 25), *vk = fill((size_t)(2 * S * HD), 26),
        *vv = fill((size_t)(2 * S * HD), 27);
  rlx_named_tensor in[] = {
      {"x", {vx, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, L})}},
      {"a", {va, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, C})}},
      {"b", {vb2, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){M, C})}},
      {"c", {vc, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C})}},
      {"q", {vq, qs}},
      {"k", {vk, qs}},
      {"v", {vv, qs}},
  };
  double d = run_both(g, in, 7);
  printf("split reductions + f32 region with a tiled operand and a tail: max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-5, "reductions / region: cuda differs from cpu by %g", d);
  CHECK_OK(rlx_graph_set_outputs(g, &atf, 1));
  d = run_both(g, in, 7);
  printf("causal bf16 attention (typed warp kernel): max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-2, "bf16 attention: cuda differs from cpu by %g", d);
  free(vx), free(va), free(vb2), free(vc), free(vq), free(vk), free(vv);
  rlx_graph_free(g);
}

/* The 16-bit float fast paths (elementwise.cu: a tiled bias Add, a dense activation and a region
 * of bf16 / f16 steps, each the general kernel's double arithmetic rounded per step) and the data
 * movement fast paths (shape.cu: the tiled transpose of the last two axes, 32-bit index copies
 * with merged axes and negative strides, Pad / Tile on typed elements) against the CPU. Data
 * movement is exact; the arithmetic is the CPU's formula, so only a rare last-bit difference
 * of the transcendental functions may show (< 1 bf16 ulp). */
static void lowp_and_movement(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_lowp_move", &g));
  const int64_t Z = 3, A = 200, B = 301, R = 1030, C = 96;
  rlx_id x, xb, t1, t2, t3, t4, t5, t6, t7, f[12];
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 3, (rlx_dim[]){Z, A, B}), &x));
  CHECK_OK(rlx_cast_to(g, x, RLX_BF16, &xb));
  CHECK_OK(rlx_permute(g, x, 3, (int64_t[]){0, 2, 1}, &t1));  /* batched tiled transpose, f32 */
  CHECK_OK(rlx_permute(g, xb, 3, (int64_t[]){2, 1, 0}, &t2)); /* general copy, 2-byte elements */
  CHECK_OK(rlx_reverse_axes(g, x, 1, (int64_t[]){1}, &t3));   /* negative strides */
  CHECK_OK(rlx_pad_axis(g, xb, 2, 5, 7, &t4));                /* constant Pad, 2-byte elements */
  CHECK_OK(rlx_narrow(g, t1, 2, 17, 150, &t5));               /* inner-axis Narrow */
  rlx_id bias, h, r, xr;
  CHECK_OK(rlx_input(g, "bias", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C}), &bias));
  CHECK_OK(rlx_input(g, "r", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C}), &xr));
  CHECK_OK(rlx_cast_to(g, xr, RLX_BF16, &r));
  rlx_id bb;
  CHECK_OK(rlx_cast_to(g, bias, RLX_BF16, &bb));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, r, bb, &h)); /* bf16 bias add (tiled operand) */
  CHECK_OK(rlx_activation(g, RLX_ACT_GELU, h, &t6));
  rlx_id rh;
  CHECK_OK(rlx_cast_to(g, xr, RLX_F16, &rh));
  rlx_chain_step steps[5] = {
      {.kind = RLX_CHAIN_STEP_BINARY, .sub = RLX_BINOP_MUL, .a = {.index = 0}, .b = {.index = 0}},
      {.kind = RLX_CHAIN_STEP_CAST, .sub = RLX_F16, .a = {.index = 1}},
      {.kind = RLX_CHAIN_STEP_BINARY,
       .sub = RLX_BINOP_SUB,
       .a = {.is_step = 1, .index = 0},
       .b = {.is_step = 1, .index = 1}},
      {.kind = RLX_CHAIN_STEP_ACTIVATION, .sub = RLX_ACT_TANH, .a = {.is_step = 1, .index = 2}},
      {.kind = RLX_CHAIN_STEP_CAST, .sub = RLX_F32, .a = {.is_step = 1, .index = 3}},
  };
  rlx_attrs_ElementwiseRegion era = {.chain = {.steps = steps, .n = 5}, .num_inputs = 2};
  CHECK_OK(rlx_build_ElementwiseRegion(g, (rlx_id[]){rh, bias}, 2, &era, NULL, &t7)); /* f16 region, f32 operand */
  /* the norm kernels at more rows: bf16 LayerNorm, f32 RmsNorm */
  rlx_id gam, ln, rn, gb, bt, xw, gw, bw;
  CHECK_OK(rlx_cast_to(g, bias, RLX_BF16, &gb));
  CHECK_OK(rlx_binary_scalar(g, RLX_BINOP_MUL, gb, 0.5, &bt));
  CHECK_OK(rlx_binary_scalar(g, RLX_BINOP_ADD, gb, 1.0, &gam));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  CHECK_OK(rlx_build_LayerNorm(g, (rlx_id[]){r, gam, bt}, 3, &la, NULL, &ln));
  CHECK_OK(rlx_reshape_dims(g, x, 2, (rlx_dim[]){Z * A, B}, &xw));
  CHECK_OK(rlx_input(g, "gw", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){B}), &gw));
  CHECK_OK(rlx_binary_scalar(g, RLX_BINOP_MUL, gw, 0.25, &bw));
  rlx_attrs_RmsNorm ra = {.axis = -1, .eps = 1e-6f};
  CHECK_OK(rlx_build_RmsNorm(g, (rlx_id[]){xw, gw, bw}, 3, &ra, NULL, &rn));
  /* backward kernels on the same paths: bf16 GELU backward and LayerNorm dx (warp per row), f32
   * RmsNorm dx (warp per row) */
  rlx_id dyr, dyb, lnb, actb, dyw, rnb;
  CHECK_OK(rlx_input(g, "dy", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C}), &dyr));
  CHECK_OK(rlx_cast_to(g, dyr, RLX_BF16, &dyb));
  rlx_attrs_LayerNormBackwardInput lbi = {.axis = -1, .eps = 1e-5f};
  CHECK_OK(rlx_build_LayerNormBackwardInput(g, (rlx_id[]){r, gam, dyb}, 3, &lbi, NULL, &lnb));
  rlx_attrs_ActivationBackward aba = {.kind = RLX_ACT_GELU};
  CHECK_OK(rlx_build_ActivationBackward(g, (rlx_id[]){r, dyb}, 2, &aba, NULL, &actb));
  CHECK_OK(rlx_reverse_axes(g, xw, 1, (int64_t[]){1}, &dyw));
  rlx_attrs_RmsNormBackwardInput rbi = {.axis = -1, .eps = 1e-6f};
  CHECK_OK(rlx_build_RmsNormBackwardInput(g, (rlx_id[]){xw, gw, bw, dyw}, 4, &rbi, NULL, &rnb));
  rlx_id outs[12] = {t1, t2, t3, t4, t5, t6, t7, ln, rn, lnb, actb, rnb};
  for (int i = 0; i < 12; i++) CHECK_OK(rlx_cast_to(g, outs[i], RLX_F32, &f[i]));
  float *vx = fill((size_t)(Z * A * B), 81), *vb = fill((size_t)C, 82), *vr = fill((size_t)(R * C), 83),
        *vg = fill((size_t)B, 84), *vd = fill((size_t)(R * C), 85);
  for (size_t i = 0; i < (size_t)(R * C); i++) vr[i] *= 3.0f;
  rlx_named_tensor in[] = {
      {"x", {vx, rlx_shape_make(RLX_F32, 3, (rlx_dim[]){Z, A, B})}},
      {"bias", {vb, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C})}},
      {"r", {vr, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C})}},
      {"gw", {vg, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){B})}},
      {"dy", {vd, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, C})}},
  };
  CHECK_OK(rlx_graph_set_outputs(g, f, 5));
  double d = run_both(g, in, 5);
  printf("transpose (tiled, general) / reverse / pad / narrow: max difference %.3g\n", d);
  CHECK_MSG(d == 0, "data movement: cuda differs from cpu by %g (must be exact)", d);
  CHECK_OK(rlx_graph_set_outputs(g, f + 5, 2));
  d = run_both(g, in, 5);
  printf("bf16 bias add + GELU, f16 region: max scaled difference %.3g\n", d);
  CHECK_MSG(d < 4e-3, "16-bit elementwise: cuda differs from cpu by %g", d);
  CHECK_OK(rlx_graph_set_outputs(g, f + 7, 1));
  d = run_both(g, in, 5);
  printf("bf16 LayerNorm [1030, 96]: max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-2, "bf16 LayerNorm: cuda differs from cpu by %g", d);
  CHECK_OK(rlx_graph_set_outputs(g, f + 8, 1));
  d = run_both(g, in, 5);
  printf("f32 RmsNorm [600, 301]: max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-6, "f32 RmsNorm: cuda differs from cpu by %g", d);
  CHECK_OK(rlx_graph_set_outputs(g, f + 9, 2));
  d = run_both(g, in, 5);
  printf("bf16 LayerNorm dx (warp per row) + GELU backward [1030, 96]: max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-2, "bf16 norm / activation backward: cuda differs from cpu by %g", d);
  CHECK_OK(rlx_graph_set_outputs(g, f + 11, 1));
  d = run_both(g, in, 5);
  printf("f32 RmsNorm dx [600, 301] (warp per row): max scaled difference %.3g\n", d);
  CHECK_MSG(d < 1e-6, "f32 RmsNorm dx: cuda differs from cpu by %g", d);
  free(vx), free(vb), free(vr), free(vg), free(vd);
  rlx_graph_free(g);
}
#endif

int main(void) {
#ifndef RLX_HAVE_CUDA
  /* Built without nvcc: the registry must not list a cuda backend. */
  CHECK(rlx_backend_find("cuda") == NULL);
  printf("built without the cuda backend (RLX_CUDA=OFF): it is not registered\n");
#else
  const rlx_backend *b = rlx_backend_find("cuda");
  CHECK(b != NULL && b == rlx_cuda_backend());
  if (!b) return rlx_test_finish("test_cuda_backend");
  const char *why = NULL;
  cuda_claim_list_checks();
  bool have = b->available(&why);
  CHECK(have == (rlx_cu_available(NULL) != 0));
  if (!have) {
    /* No GPU here: the reason must say what is missing, and compiling for it must fail cleanly. */
    CHECK_MSG(why && strstr(why, "no CUDA device"), "message: %s", why ? why : "(null)");
    printf("cuda backend unavailable, as expected here: %s\n", why ? why : "?");
    rlx_graph *g = NULL;
    rlx_id x, y;
    CHECK_OK(rlx_graph_create(NULL, "nodev", &g));
    CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4}), &x));
    CHECK_OK(rlx_activation(g, RLX_ACT_RELU, x, &y));
    CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
    rlx_executable *e = NULL;
    rlx_status st = rlx_compile(g, "cuda", NULL, &e);
    CHECK_MSG(st != RLX_OK && e == NULL, "compiling for an unavailable cuda backend must fail");
    printf("compile for cuda without a device: %s\n", rlx_last_error());
    rlx_graph_free(g);
    printf("NOT RUN (no GPU here): the device checks of test_cuda_backend -- graphs vs the CPU, "
           "cuda_backend/claims.c, cuda_backend/linalg.c (cuFFT Fft, cuSOLVER Qr / Svd / Eigh / EighBatch) and "
           "cuda_backend/fast_paths.c; "
           "scripts/gpu-test.sh runs them on a GPU machine\n");
    return rlx_test_finish("test_cuda_backend");
  }
  mlp_block();
  batched_matmul();
  attention_and_conv();
  attention_backward();
  tf32_policy();
  large_paths();
  lowp_and_movement();
  cuda_claims_checks();
  cuda_linalg_checks();
  cuda_fast_path_checks();
#endif
  return rlx_test_finish("test_cuda_backend");
}
