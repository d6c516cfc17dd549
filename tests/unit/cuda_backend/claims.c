/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* test_cuda_backend, part two (GPU only): the kinds this backend gained beyond its first 71, at
 * sizes the conformance table does not reach, against the CPU — the fused matmul kinds (epilogue
 * and pre-step launches), FusedSwiGLU with a bf16 cast, FusedResidualLN, GroupNorm over lines of
 * thousands of elements, Histogram over 80k values (integer atomics) — and host staging: an
 * Im2Col between two device segments must run on the CPU (the dispatch report says host-staged,
 * the transfer counters count the staged node) and still match the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rlx/backend.h"
#include "rlx/build.h"
#include "rlx/ops.h"
#include "rlx/session.h"
#include "attr_lists.h"
#include "rlx_test.h"
#include "cuda_test.h"

#ifdef RLX_HAVE_CUDA
#include "backends/cuda/lower.h"
#endif

void cuda_claims_checks(void);
void cuda_claim_list_checks(void);

float *cuda_test_vals(size_t n, uint32_t seed, float lo, float hi) {
  float *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = lo + (hi - lo) * ((float)(seed >> 8) / 16777216.0f);
  }
  return v;
}

bool cuda_test_run_both(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, cuda_test_runs *r) {
  const char *names[2] = {"cpu", "cuda"};
  for (int b = 0; b < 2; b++) {
    r->e[b] = NULL;
    r->out[b] = NULL;
    r->n_out[b] = 0;
  }
  for (int b = 0; b < 2; b++) {
    CHECK_OK(rlx_compile(g, names[b], NULL, &r->e[b]));
    if (!r->e[b]) return false;
    CHECK_OK(rlx_executable_run(r->e[b], in, n_in, &r->out[b], &r->n_out[b]));
  }
  return true;
}

/* Runs g on cpu and cuda; every output is f32. Returns the worst difference scaled by
 * max(1, max |cpu|) per output; *e_cuda keeps the cuda executable when asked for. */
double cuda_test_cpu_vs_cuda(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, rlx_executable **e_cuda) {
  cuda_test_runs r;
  bool ran = cuda_test_run_both(g, in, n_in, &r);
  rlx_executable **e = r.e;
  const rlx_tensor **out = r.out;
  const uint32_t *n_out = r.n_out;
  if (!ran) {
    rlx_executable_free(e[0]);
    return INFINITY;
  }
  double worst = n_out[0] && n_out[0] == n_out[1] ? 0 : INFINITY;
  for (uint32_t o = 0; o < n_out[0] && n_out[0] == n_out[1]; o++) {
    size_t n = 0;
    CHECK_OK(rlx_shape_numel(&out[0][o].shape, &n));
    const float *a = out[0][o].data, *b = out[1][o].data;
    double scale = 1;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(a[i]));
    for (size_t i = 0; i < n; i++) {
      double d = fabs((double)a[i] - b[i]) / scale;
      if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
  }
  rlx_executable_free(e[0]);
  if (e_cuda)
    *e_cuda = e[1];
  else
    rlx_executable_free(e[1]);
  return worst;
}

/* act(x W + b) -> SwiGLU (cast to bf16 and back) -> LayerNorm(. + r); and a LoRA product. */
static void fused_block(void) {
  const int64_t B = 3, T = 70, D = 130, H = 96, R = 8;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_fused", &g));
  rlx_id x, w, bias, r, ga, be, la, lb;
  rlx_shape sx = rlx_shape_make(RLX_F32, 3, (rlx_dim[]){B, T, D}), sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){D, H}),
            sb = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H}), sr = rlx_shape_make(RLX_F32, 3, (rlx_dim[]){B, T, H / 2}),
            sg = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){H / 2}), sa = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){D, R}),
            sbb = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){R, H});
  CHECK_OK(rlx_input(g, "x", sx, &x));
  CHECK_OK(rlx_input(g, "w", sw, &w));
  CHECK_OK(rlx_input(g, "bias", sb, &bias));
  CHECK_OK(rlx_input(g, "r", sr, &r));
  CHECK_OK(rlx_input(g, "gamma", sg, &ga));
  CHECK_OK(rlx_input(g, "beta", sg, &be));
  CHECK_OK(rlx_input(g, "la", sa, &la));
  CHECK_OK(rlx_input(g, "lb", sbb, &lb));
  rlx_attrs_FusedMatMulBiasAct fa;
  rlx_attrs_init(RLX_OP_FusedMatMulBiasAct, &fa);
  fa.activation = RLX_ACT_GELU;
  rlx_id h, sw_out, y, lora, outs[2];
  CHECK_OK(rlx_build_FusedMatMulBiasAct(g, (rlx_id[]){x, w, bias}, 3, &fa, NULL, &h));
  rlx_attrs_FusedSwiGLU fs;
  rlx_attrs_init(RLX_OP_FusedSwiGLU, &fs);
  fs.cast_to.has = true;
  fs.cast_to.v = RLX_BF16;
  CHECK_OK(rlx_build_FusedSwiGLU(g, (rlx_id[]){h}, 1, &fs, NULL, &sw_out));
  CHECK_OK(rlx_cast_to(g, sw_out, RLX_F32, &sw_out));
  rlx_attrs_FusedResidualLN fl;
  rlx_attrs_init(RLX_OP_FusedResidualLN, &fl);
  fl.eps = 1e-5f;
  CHECK_OK(rlx_build_FusedResidualLN(g, (rlx_id[]){sw_out, r, ga, be}, 4, &fl, NULL, &y));
  rlx_attrs_LoraMatMul lo;
  rlx_attrs_init(RLX_OP_LoraMatMul, &lo);
  lo.scale = 0.75f;
  CHECK_OK(rlx_build_LoraMatMul(g, (rlx_id[]){x, w, la, lb}, 4, &lo, NULL, &lora));
  outs[0] = y;
  outs[1] = lora;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  float *vx = cuda_test_vals((size_t)(B * T * D), 1, -1, 1), *vw = cuda_test_vals((size_t)(D * H), 2, -0.2f, 0.2f),
        *vb = cuda_test_vals((size_t)H, 3, -0.5f, 0.5f), *vr = cuda_test_vals((size_t)(B * T * H / 2), 4, -1, 1),
        *vg = cuda_test_vals((size_t)H / 2, 5, 0.5f, 1.5f), *vbe = cuda_test_vals((size_t)H / 2, 6, -0.5f, 0.5f),
        *va = cuda_test_vals((size_t)(D * R), 7, -0.3f, 0.3f), *vlb = cuda_test_vals((size_t)(R * H), 8, -0.3f, 0.3f);
  rlx_named_tensor in[] = {{"x", {vx, sx}},     {"w", {vw, sw}},     {"bias", {vb, sb}}, {"r", {vr, sr}},
                           {"gamma", {vg, sg}}, {"beta", {vbe, sg}}, {"la", {va, sa}},   {"lb", {vlb, sbb}}};
  double d = cuda_test_cpu_vs_cuda(g, in, 8, NULL);
  /* bf16 rounding of the SwiGLU output can flip one bf16 ulp (2^-8 relative) when cuBLAS and the
   * CPU's sgemm differ in the last f32 bit; LayerNorm scales it by ~1/std */
  CHECK_MSG(d < 3e-2, "fused block: max scaled difference %g", d);
  printf("fused block (FusedMatMulBiasAct gelu -> FusedSwiGLU bf16 -> FusedResidualLN, LoraMatMul), [%lld, %lld, "
         "%lld]: max scaled difference %.3g\n",
         (long long)B, (long long)T, (long long)D, d);
  free(vx), free(vw), free(vb), free(vr), free(vg), free(vbe), free(va), free(vlb);
  rlx_graph_free(g);
}

/* GroupNorm over groups of 8 x 323 elements and a Histogram of the same values. */
static void norms_and_histogram(void) {
  const int64_t N = 4, C = 64, Hh = 17, W = 19, G = 8;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_gn_hist", &g));
  rlx_shape sx = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, C, Hh, W}), sc = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){C});
  rlx_id x, ga, be, y, hist, outs[2];
  CHECK_OK(rlx_input(g, "x", sx, &x));
  CHECK_OK(rlx_input(g, "gamma", sc, &ga));
  CHECK_OK(rlx_input(g, "beta", sc, &be));
  rlx_attrs_GroupNorm an;
  rlx_attrs_init(RLX_OP_GroupNorm, &an);
  an.num_groups = G;
  an.eps = 1e-5f;
  CHECK_OK(rlx_build_GroupNorm(g, (rlx_id[]){x, ga, be}, 3, &an, NULL, &y));
  rlx_attrs_Histogram ah;
  rlx_attrs_init(RLX_OP_Histogram, &ah);
  ah.bins = 37;
  ah.min = -0.9f;
  ah.max = 0.8f;
  CHECK_OK(rlx_build_Histogram(g, (rlx_id[]){x}, 1, &ah, NULL, &hist));
  outs[0] = y;
  outs[1] = hist;
  CHECK_OK(rlx_graph_set_outputs(g, outs, 2));
  size_t nx = (size_t)(N * C * Hh * W);
  float *vx = cuda_test_vals(nx, 11, -1, 1), *vg = cuda_test_vals((size_t)C, 12, 0.5f, 1.5f), *vb = cuda_test_vals((size_t)C, 13, -1, 1);
  rlx_named_tensor in[] = {{"x", {vx, sx}}, {"gamma", {vg, sc}}, {"beta", {vb, sc}}};
  /* the histogram's counts are exact, so any miscount shows as >= 1 / max count */
  double d = cuda_test_cpu_vs_cuda(g, in, 3, NULL);
  CHECK_MSG(d < 1e-5, "GroupNorm + Histogram: max scaled difference %g", d);
  printf("GroupNorm [%lld, %lld, %lld, %lld] / %lld groups + Histogram of %zu values in 37 bins: max scaled "
         "difference %.3g\n",
         (long long)N, (long long)C, (long long)Hh, (long long)W, (long long)G, nx, d);
  free(vx), free(vg), free(vb);
  rlx_graph_free(g);
}

/* relu(x) on the device, Im2Col host-staged (no GPU kernel yet), the patches times a weight
 * matrix back on the device. */
static void host_staging(void) {
  const int64_t N = 2, C = 3, H = 9, W = 8, K = C * 3 * 3, F = 5;
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "cuda_staged", &g));
  rlx_shape sx = rlx_shape_make(RLX_F32, 4, (rlx_dim[]){N, C, H, W}),
            sw = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){K, F});
  rlx_id x, w, r, cols, y;
  CHECK_OK(rlx_input(g, "x", sx, &x));
  CHECK_OK(rlx_input(g, "w", sw, &w));
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, x, &r));
  rlx_attrs_Im2Col ai;
  rlx_attrs_init(RLX_OP_Im2Col, &ai);
  ai.kernel_size = IL(3, 3);
  ai.stride = IL(2, 1);
  ai.padding = IL(1, 1);
  CHECK_OK(rlx_build_Im2Col(g, (rlx_id[]){r}, 1, &ai, NULL, &cols));
  CHECK_OK(rlx_matmul(g, cols, w, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  float *vx = cuda_test_vals((size_t)(N * C * H * W), 21, -1, 1), *vw = cuda_test_vals((size_t)(K * F), 22, -1, 1);
  rlx_named_tensor in[] = {{"x", {vx, sx}}, {"w", {vw, sw}}};
  rlx_executable *e = NULL;
  double d = cuda_test_cpu_vs_cuda(g, in, 2, &e);
  CHECK_MSG(d < 1e-4, "host-staged Im2Col: max scaled difference %g", d);
  if (e) {
    const rlx_dispatch_report *rep = rlx_executable_report(e);
    CHECK_MSG(rep && rep->path[RLX_OP_Im2Col] == RLX_PATH_HOST_STAGED, "Im2Col's path on cuda is %s, not host-staged",
              rep ? rlx_dispatch_path_name((rlx_dispatch_path)rep->path[RLX_OP_Im2Col]) : "?");
    CHECK_MSG(rep && rep->path[RLX_OP_MatMul] == RLX_PATH_NATIVE, "MatMul must stay native on cuda");
    rlx_transfer_stats st;
    rlx_executable_transfer_stats(e, &st);
    CHECK_MSG(st.staged_nodes == 1, "one run must stage exactly one node, counted %llu",
              (unsigned long long)st.staged_nodes);
    CHECK_MSG(st.downloads >= 2 && st.uploads >= 3,
              "staging moves relu(x) down and the patches up: %llu downloads, %llu uploads",
              (unsigned long long)st.downloads, (unsigned long long)st.uploads);
    printf("host-staged Im2Col between device segments: max scaled difference %.3g; %llu staged node, %llu "
           "uploads, %llu downloads, %llu device copies in one run\n",
           d, (unsigned long long)st.staged_nodes, (unsigned long long)st.uploads, (unsigned long long)st.downloads,
           (unsigned long long)st.device_copies);
    rlx_executable_free(e);
  }
  free(vx), free(vw);
  rlx_graph_free(g);
}

void cuda_claims_checks(void) {
  fused_block();
  norms_and_histogram();
  host_staging();
}

#ifdef RLX_HAVE_CUDA
/* The claim list (no GPU needed): the lowered kinds, the host-staged kinds and the runtime-driven
 * control kinds are disjoint and make up the whole list; every host-staged kind is one the cpu
 * backend runs natively and has its reason in staged.c. */
void cuda_claim_list_checks(void) {
  const rlx_backend *b = rlx_backend_find("cuda"), *cpu = rlx_backend_find("cpu");
  CHECK(b != NULL && cpu != NULL);
  if (!b || !cpu) return;
  uint8_t low[RLX_OP_COUNT] = {0}, cpu_claims[RLX_OP_COUNT], all[RLX_OP_COUNT];
  uint32_t n_low = 0;
  const rlx_op *lowered = rlx_cu_claim_list(&n_low);
  for (uint32_t i = 0; i < n_low; i++) low[lowered[i]] = 1;
  rlx_backend_claim_set(cpu, cpu_claims);
  rlx_backend_claim_set(b, all);
  uint32_t n_all = 0, n_staged = 0, n_control = 0, bad = 0;
  for (int k = 0; k < RLX_OP_COUNT; k++) {
    rlx_op op = (rlx_op)k;
    bool staged = rlx_backend_host_stages(b, op), control = rlx_backend_runtime_controls(b, op);
    n_all += all[k] != 0;
    n_staged += staged;
    n_control += control;
    if (staged && (low[k] || !cpu_claims[k] || !rlx_cu_staged_why(op) || control)) {
      bad++;
      CHECK_MSG(0, "host-staged %s: lowered %d, cpu-claimed %d, reason %s", rlx_op_name(op), low[k], cpu_claims[k],
                rlx_cu_staged_why(op) ? "yes" : "none");
    }
    if (all[k] != (low[k] || staged || control)) {
      bad++;
      CHECK_MSG(0, "%s: claimed %d but lowered %d, staged %d, control %d", rlx_op_name(op), all[k], low[k], staged,
                control);
    }
  }
  CHECK_MSG(n_all == n_low + n_staged + n_control, "claims %u != lowered %u + staged %u + control %u", n_all, n_low,
            n_staged, n_control);
  printf("cuda claim list: %u kinds = %u lowered (3 leaves) + %u host-staged + %u runtime control%s\n", n_all, n_low,
         n_staged, n_control, bad ? " (inconsistent)" : "");
}
#endif
