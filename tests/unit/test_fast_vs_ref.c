/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Every CPU fast kernel against its reference twin (the oracle, computing in double) on many
 * shapes: odd sizes, groups, strides, dilations, asymmetric padding, broadcasts, NaN / tie
 * cases, with 1, 2 and 3 worker threads. Each case first checks that the fast kernel's `applies`
 * accepts it (so no case passes vacuously), then compares elementwise with
 * |fast - ref| <= atol + rtol * |ref| (NaN must match NaN), and checks that the fast kernel
 * writes every output element. A few cases check that `applies` declines what the fast kernels
 * do not handle. The executor test at the end compiles a CNN training step with fast kernels and
 * with RLX_CPU_REF_ONLY=1 and compares the two. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "rlx/cpu.h"
#include "rlx/autodiff.h"
#include "rlx_test.h"
#include "core/elem.h"

#include "fast_vs_ref/harness.h"

/* ======================================================================================
 * MatMul, Transpose
 * ====================================================================================== */

static void matmul_case(rlx_shape a, rlx_shape b) {
  tcase c;
  targ args[2] = {{a, FILL_UNIFORM}, {b, FILL_UNIFORM}};
  char what[160], sa[64], sb[64];
  rlx_shape_format(&a, sa, sizeof sa);
  rlx_shape_format(&b, sb, sizeof sb);
  snprintf(what, sizeof what, "MatMul %s x %s", sa, sb);
  CHECK(build(&c, RLX_OP_MatMul, NULL, NULL, 2, args, 0));
  if (c.node) run_case(what, &c, 1e-4, 1e-5); /* ref is sgemm too, blocked differently */
  case_free(&c);
}

static void test_matmul(void) {
  matmul_case(SHP(F32, 1, 1), SHP(F32, 1, 1));
  matmul_case(SHP(F32, 7, 5), SHP(F32, 5, 3));
  matmul_case(SHP(F32, 64, 1568), SHP(F32, 1568, 128));
  matmul_case(SHP(F32, 3, 33), SHP(F32, 33, 300));      /* one batch, columns split over threads */
  matmul_case(SHP(F32, 1568, 64), SHP(F32, 64, 128));   /* one tall batch, rows split over threads */
  matmul_case(SHP(F32, 4, 5, 6), SHP(F32, 4, 6, 7));    /* batched */
  matmul_case(SHP(F32, 2, 1, 5, 6), SHP(F32, 3, 6, 2)); /* broadcast batches */
  matmul_case(SHP(F32, 5, 6), SHP(F32, 2, 6, 3));
  matmul_case(SHP(F32, 2, 3, 0), SHP(F32, 2, 0, 4));    /* K = 0: zeros */
  matmul_case(SHP(F32, 1, 1024), SHP(F32, 1024, 1000)); /* a classifier at batch 1: sgemv, columns split */
  matmul_case(SHP(F32, 300, 77), SHP(F32, 77, 1));      /* one column: sgemv, rows split */
  matmul_case(SHP(F32, 3, 1, 40), SHP(F32, 40, 9));     /* batched rows */
  /* transposed operands through the executor's fused entry point */
  /* [M, K] x [K, N]: 5x54 x 54x16 and 16x54 x 54x5 are where OpenBLAS's AVX-512 (SkylakeX)
     small-matrix kernels of sgemm with a transpose flag round differently from the plain call */
  /* 1 x 54 x 16 and 16 x 54 x 1: the matrix-vector products (fk_sgemm's sgemv calls) with every
     transposed read */
  static const int64_t mkn[5][3] = {{5, 9, 11}, {5, 54, 16}, {16, 54, 5}, {1, 54, 16}, {16, 54, 1}};
  for (int sz = 0; sz < 5; sz++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        rlx_graph *g;
        CHECK_OK(rlx_graph_create(NULL, "mm_t", &g));
        int64_t M = mkn[sz][0], K = mkn[sz][1], N = mkn[sz][2];
        rlx_shape as = ta ? SHP(F32, 2, K, M) : SHP(F32, 2, M, K), bs = tb ? SHP(F32, N, K) : SHP(F32, K, N);
        rlx_id a, b, at, bt, m;
        CHECK_OK(rlx_input(g, "a", as, &a));
        CHECK_OK(rlx_input(g, "b", bs, &b));
        at = a;
        bt = b;
        if (ta) CHECK_OK(rlx_transpose(g, a, 3, (int64_t[]){0, 2, 1}, &at));
        if (tb) CHECK_OK(rlx_transpose(g, b, 2, (int64_t[]){1, 0}, &bt));
        CHECK_OK(rlx_matmul(g, at, bt, &m));
        const rlx_node *mn = rlx_graph_node(g, m);
        rlx_tensor A = {malloc(numel(&as) * 4), as}, B = {malloc(numel(&bs) * 4), bs};
        fill(&A, FILL_UNIFORM, 0);
        fill(&B, FILL_UNIFORM, 0);
        /* reference: materialise the transposes with the ref kernels, then ref MatMul */
        rlx_cpu_ctx c1 = {.threads = 1};
        rlx_tensor ops[2] = {A, B};
        for (int k = 0; k < 2; k++) {
          bool t = k == 0 ? ta : tb;
          if (!t) continue;
          const rlx_node *tn = rlx_graph_node(g, k == 0 ? at : bt);
          rlx_tensor o = {malloc(numel(&tn->shape) * 4), tn->shape};
          CHECK_OK(rlx_cpu_ref_table[RLX_OP_Transpose](tn, &ops[k], 1, &o, &c1));
          ops[k] = o;
        }
        size_t cnt = numel(&mn->shape);
        rlx_tensor r = {malloc(cnt * 4), mn->shape}, f = {malloc(cnt * 4), mn->shape};
        CHECK_OK(rlx_cpu_ref_table[RLX_OP_MatMul](mn, ops, 2, &r, &c1));
        CHECK(rlx_fast_matmul_ex_applies(mn, &as, ta, &bs, tb));
        CHECK(!rlx_fast_matmul_ex_applies(mn, &as, !ta, &bs, tb) || as.dims[1] == as.dims[2]);
        rlx_tensor u = {malloc(cnt * 4), mn->shape};
        for (int t = 1; t <= 2; t++) {
          rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t]};
          CHECK_OK(rlx_fast_matmul_ex(mn, &A, ta, &B, tb, &f, &ctx));
          /* Both are f32 sums of K products (the reference MatMul is sgemm too), each within
           gamma_K * sum_k |a_ik||b_kj| of the exact value (gamma_K = K u / (1 - K u), u = 2^-24), so
           they differ by at most twice that per element. */
          double ur = ldexp(1.0, -24), gamma = (double)K * ur / (1.0 - (double)K * ur);
          const float *opa = ops[0].data, *opb = ops[1].data; /* [2][M][K], [K][N] */
          size_t bad = 0;
          for (size_t i = 0; i < cnt; i++) {
            size_t bi = i / (size_t)(M * N), row = i / (size_t)N % (size_t)M, col = i % (size_t)N;
            double mag = 0;
            for (int64_t k = 0; k < K; k++)
              mag += fabs((double)opa[(bi * (size_t)M + row) * (size_t)K + (size_t)k]) *
                     fabs((double)opb[(size_t)k * (size_t)N + col]);
            bad += !(fabs((double)((float *)f.data)[i] - (double)((float *)r.data)[i]) <= 2 * gamma * mag);
          }
          CHECK_MSG(bad == 0,
                    "MatMul %lldx%lldx%lld with ta=%d tb=%d (threads %d): %zu elements differ by more than "
                    "2 gamma_K sum|a||b|",
                    (long long)M, (long long)K, (long long)N, ta, tb, t, bad);
          /* the fused entry point gives the bits of the unfused fast MatMul on the transposed copies */
          CHECK_OK(rlx_fast_MatMul(mn, ops, 2, &u, &ctx));
          CHECK_MSG(memcmp(u.data, f.data, cnt * 4) == 0,
                    "MatMul %lldx%lldx%lld with ta=%d tb=%d (threads %d): the transposed read differs from the unfused "
                    "MatMul",
                    (long long)M, (long long)K, (long long)N, ta, tb, t);
        }
        free(u.data);
        for (int k = 0; k < 2; k++)
          if (ops[k].data != (k ? B.data : A.data)) free(ops[k].data);
        free(A.data);
        free(B.data);
        free(r.data);
        free(f.data);
        rlx_graph_free(g);
      }
  /* declined: integer operands */
  tcase c;
  targ ia[2] = {{SHP(I32, 3, 4), FILL_LABELS}, {SHP(I32, 4, 2), FILL_LABELS}};
  CHECK(build(&c, RLX_OP_MatMul, NULL, NULL, 2, ia, 5));
  if (c.node) expect_declined("MatMul i32", &c);
  case_free(&c);
}

static void transpose_case(rlx_shape x, const rlx_ilist perm) {
  tcase c;
  targ args[1] = {{x, FILL_UNIFORM}};
  rlx_attrs_Transpose a = {.perm = perm};
  char what[160], sx[64];
  rlx_shape_format(&x, sx, sizeof sx);
  snprintf(what, sizeof what, "Transpose %s perm[0]=%lld perm[1]=%lld", sx, (long long)perm.v[0],
           (long long)(perm.n > 1 ? perm.v[1] : -1));
  CHECK(build(&c, RLX_OP_Transpose, &a, NULL, 1, args, 0));
  if (c.node) run_case(what, &c, 0, 0);
  case_free(&c);
}

static void test_transpose(void) {
  transpose_case(SHP(F32, 1568, 128), IL(1, 0));
  transpose_case(SHP(F32, 37, 5), IL(1, 0));
  transpose_case(SHP(F32, 3, 33, 65), IL(0, 2, 1));
  transpose_case(SHP(F32, 2, 3, 4, 5), IL(0, 2, 3, 1)); /* NCHW -> NHWC */
  transpose_case(SHP(F32, 2, 3, 4, 5), IL(0, 3, 1, 2)); /* NHWC -> NCHW */
  transpose_case(SHP(F32, 2, 3, 4, 5), IL(3, 2, 1, 0));
  transpose_case(SHP(F32, 2, 3, 4, 5), IL(1, 0, 3, 2));
  transpose_case(SHP(F32, 2, 1, 4, 1), IL(3, 2, 1, 0)); /* unit axes */
  transpose_case(SHP(F32, 4, 5), IL(0, 1));             /* identity */
  transpose_case(SHP(F64, 6, 7, 3), IL(2, 0, 1));
  transpose_case(SHP(I64, 9, 4), IL(1, 0));
  transpose_case(SHP(I8, 9, 40), IL(1, 0));
  transpose_case(SHP(F16, 5, 6, 7), IL(1, 2, 0));
}

/* Expand: bytes copied, so exactly the reference's (rtol 0); a row is a run of the input or one
 * element repeated, the outer axes stepped with broadcast strides. */
static void expand_case(rlx_shape x, const rlx_ilist target) {
  tcase c;
  targ args[1] = {{x, FILL_SPECIAL}};
  rlx_attrs_Expand a = {.target_shape = target};
  char what[160], sx[64];
  rlx_shape_format(&x, sx, sizeof sx);
  snprintf(what, sizeof what, "Expand %s to rank %u", sx, target.n);
  CHECK(build(&c, RLX_OP_Expand, &a, NULL, 1, args, 0));
  CHECK_MSG(c.node && rlx_fast_applies_Expand(c.node, c.in, 1), "%s: the fast kernel declines", what);
  if (c.node) run_case(what, &c, 0, 0);
  case_free(&c);
}

static void test_expand(void) {
  expand_case(SHP(F32, 1, 1, 1, 128), IL(8, 12, 128, 128)); /* the encoder's attention mask */
  expand_case(SHP(F32, 4, 1), IL(4, 9));                    /* the last axis repeated */
  expand_case(SHP(F32, 4, 1, 1), IL(4, 3, 7));
  expand_case(SHP(F32, 3, 1, 5), IL(3, 6, 5)); /* a middle axis */
  expand_case(SHP(F32, 2, 3), IL(5, 2, 3));    /* new leading axis */
  expand_case(SHP(F32, 1, 3, 1, 2), IL(2, 3, 4, 2));
  expand_case(SHP(F32, 3, 1), IL(3, 1)); /* nothing broadcast */
  expand_case(SHP(F32, 1), IL(0, 5));    /* empty */
  expand_case(SHP(F32, 1), IL(1));
  expand_case(SHP(F64, 2, 1, 3), IL(2, 4, 3));
  expand_case(SHP(I8, 1, 7), IL(33, 7));
  expand_case(SHP(I8, 5, 1), IL(5, 33));
  expand_case(SHP(F16, 3, 1), IL(2, 3, 17));
  expand_case(SHP(BOOL, 2, 1), IL(2, 2, 40));
}

/* ======================================================================================
 * Conv, Conv2dBackwardInput, Conv2dBackwardWeight
 * ====================================================================================== */

typedef struct conv_geo {
  int64_t N, Cin, H, W, Cout, kh, kw, groups;
  rlx_ilist stride, padding, dilation;
} conv_geo;

/* The fused Conv + bias (+ Relu) epilogue against the plain fast Conv followed by the bias add and
 * Relu written here: bit for bit, for z and r, r only and z only, at 1, 2 and 3 threads (also in
 * deterministic mode), and every element written. */
static void conv_epilogue_case(const char *what, tcase *c) {
  const rlx_node *n = c->node;
  size_t count = numel(&n->shape), C = (size_t)n->shape.dims[1], P = count / (size_t)n->shape.dims[0] / C;
  rlx_shape bs = SHP(F32, (rlx_dim)C, 1, 1);
  if (!rlx_fast_conv_epilogue_applies(n, c->in, c->n_in, &bs)) {
    CHECK_MSG(false, "%s: the conv epilogue does not apply", what);
    return;
  }
  float *base = malloc(count * sizeof *base), *ez = malloc(count * sizeof *ez), *er = malloc(count * sizeof *er);
  float *z = malloc(count * sizeof *z), *r = malloc(count * sizeof *r), *bias = malloc(C * sizeof *bias);
  for (size_t k = 0; k < C; k++) bias[k] = (float)(2 * urand() - 1);
  for (int det = 0; det < 2; det++)
    for (int t = 1; t <= 3; t++) {
      /* the plain kernel with the same settings (the GEMM split of some paths depends on them) */
      rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = det == 1};
      rlx_tensor out = {base, n->shape};
      rlx_status st = rlx_cpu_fast_table[n->op].kernel(n, c->in, c->n_in, &out, &ctx);
      CHECK_MSG(st == RLX_OK, "%s: fast Conv failed: %s", what, rlx_last_error());
      if (st != RLX_OK) break;
      for (size_t i = 0; i < count; i++) {
        ez[i] = base[i] + bias[i / P % C];
        er[i] = ez[i] < 0 ? 0.0f : ez[i];
      }
      for (int mode = 0; mode < 3; mode++) { /* z and r, r only, z only */
        memset(z, 0xA5, count * sizeof *z);
        memset(r, 0xA5, count * sizeof *r);
        float *zz = mode == 1 ? NULL : z, *rr = mode == 2 ? NULL : r;
        rlx_status fs = rlx_fast_conv_epilogue(n, c->in, c->n_in, bias, zz, rr, RLX_ACT_RELU, &ctx);
        CHECK_MSG(fs == RLX_OK, "%s: epilogue failed: %s", what, rlx_last_error());
        bool okz = !zz || memcmp(z, ez, count * sizeof *z) == 0, okr = !rr || memcmp(r, er, count * sizeof *r) == 0;
        CHECK_MSG(okz && okr, "%s (epilogue mode %d, threads %d%s): %s differs from conv + bias%s", what, mode, t,
                  det ? ", deterministic" : "", okz ? "r" : "z", okz ? " + relu" : "");
      }
    }
  free(base), free(ez), free(er), free(z), free(r), free(bias);
}

/* On an AVX-512 machine: the direct forward kernel (Conv, Conv2dBackwardInput) gives the same bits
 * with the AVX2 tiles (RLX_CPU_ISA=avx2) as with the AVX-512 ones (each output is the same FMA
 * chain over the taps), at 1 and 2 threads. The path the test was started with is restored. */
static void isa_same_bits(const char *what, tcase *c, conv_geo g) {
  /* the direct kernels' cases: stride 1, not depthwise, not 1x1, under the phase-plane kernel's
     tap count (conv.c's PCONV_S1_MIN_TAPS; other kernels have AVX-512-only paths of their own) */
  bool stride1 = g.stride.n == 0 || (g.stride.v[0] == 1 && g.stride.v[1] == 1);
  bool depthwise = g.groups > 1 && g.groups == g.Cin && g.groups == g.Cout;
  if (fk_isa_cpu() < FK_ISA_AVX512 || !stride1 || depthwise || g.kh * g.kw == 1 ||
      g.Cin / g.groups * g.kh * g.kw >= 256 || g.Cout / g.groups * g.kh * g.kw >= 256)
    return;
  const rlx_node *n = c->node;
  size_t bytes = numel(&n->shape) * sizeof(float);
  const char *was = getenv("RLX_CPU_ISA");
  char saved[32] = "";
  if (was) snprintf(saved, sizeof saved, "%s", was);
  void *out[2] = {malloc(bytes ? bytes : 1), malloc(bytes ? bytes : 1)};
  for (int t = 1; t <= 2; t++) {
    for (int k = 0; k < 2; k++) {
      setenv("RLX_CPU_ISA", k ? "avx512" : "avx2", 1);
      CHECK_OK(fk_isa_configure());
      memset(out[k], 0xA5, bytes ? bytes : 1);
      rlx_tensor o = {out[k], n->shape};
      rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = true};
      CHECK(rlx_cpu_fast_table[n->op].kernel(n, c->in, c->n_in, &o, &ctx) == RLX_OK);
    }
    CHECK_MSG(memcmp(out[0], out[1], bytes) == 0, "%s (threads %d): the avx2 and avx512 paths give other bits", what,
              t);
  }
  if (saved[0])
    setenv("RLX_CPU_ISA", saved, 1);
  else
    unsetenv("RLX_CPU_ISA");
  CHECK_OK(fk_isa_configure());
  free(out[0]), free(out[1]);
}

/* Runs the forward conv and both backward ops for one geometry. */
static void conv_family(const char *name, conv_geo g) {
  char what[200];
  rlx_shape xs = SHP(F32, g.N, g.Cin, g.H, g.W), ws = SHP(F32, g.Cout, g.Cin / g.groups, g.kh, g.kw);
  tcase c;
  targ fa[2] = {{xs, FILL_UNIFORM}, {ws, FILL_UNIFORM}};
  rlx_attrs_Conv ca = {
      .kernel_size = NOLIST, .stride = g.stride, .padding = g.padding, .dilation = g.dilation, .groups = g.groups};
  snprintf(what, sizeof what, "Conv %s", name);
  CHECK(build(&c, RLX_OP_Conv, &ca, NULL, 2, fa, 0));
  if (!c.node) return;
  rlx_shape ys = c.node->shape;
  run_case(what, &c, F32_RTOL, 1e-5);
  conv_epilogue_case(what, &c);
  isa_same_bits(what, &c, g);
  case_free(&c);

  targ bi[2] = {{ys, FILL_UNIFORM}, {ws, FILL_UNIFORM}};
  rlx_attrs_Conv2dBackwardInput ba = {.kernel_size = IL(g.kh, g.kw),
                                      .stride = g.stride,
                                      .padding = g.padding,
                                      .dilation = g.dilation,
                                      .groups = g.groups};
  snprintf(what, sizeof what, "Conv2dBackwardInput %s", name);
  CHECK(build(&c, RLX_OP_Conv2dBackwardInput, &ba, &xs, 2, bi, 0));
  if (c.node) {
    run_case(what, &c, F32_RTOL, 1e-5);
    isa_same_bits(what, &c, g);
  }
  case_free(&c);

  targ bw[2] = {{xs, FILL_UNIFORM}, {ys, FILL_UNIFORM}};
  rlx_attrs_Conv2dBackwardWeight wa = {.kernel_size = IL(g.kh, g.kw),
                                       .stride = g.stride,
                                       .padding = g.padding,
                                       .dilation = g.dilation,
                                       .groups = g.groups};
  snprintf(what, sizeof what, "Conv2dBackwardWeight %s", name);
  CHECK(build(&c, RLX_OP_Conv2dBackwardWeight, &wa, &ws, 2, bw, 0));
  if (c.node) run_case(what, &c, 1e-4, 1e-4); /* long f32 sums over N * P */
  case_free(&c);
}

static void test_conv(void) {
  fk_dconv_disable(true); /* the portable path first, then (on AVX2 machines) the direct kernels */
  conv_family("cnn layer 2, im2col path", (conv_geo){6, 16, 14, 14, 32, 3, 3, 1, IL(1, 1), IL(1, 1), IL(1, 1)});
  conv_family("groups 2, im2col path", (conv_geo){2, 4, 7, 8, 6, 3, 3, 2, NOLIST, IL(1, 1), NOLIST});
  conv_family("asymmetric padding, im2col path", (conv_geo){2, 3, 8, 9, 5, 3, 3, 1, NOLIST, IL(0, 1, 2, 0), NOLIST});
  fk_dconv_disable(false);
  conv_family("cnn layer 1", (conv_geo){8, 1, 28, 28, 16, 3, 3, 1, IL(1, 1), IL(1, 1), IL(1, 1)});
  conv_family("cnn layer 2", (conv_geo){6, 16, 14, 14, 32, 3, 3, 1, IL(1, 1), IL(1, 1), IL(1, 1)});
  conv_family("odd sizes", (conv_geo){3, 3, 11, 7, 5, 3, 3, 1, IL(1, 1), IL(1, 1), IL(1, 1)});
  conv_family("no padding", (conv_geo){2, 4, 9, 10, 6, 3, 3, 1, NOLIST, NOLIST, NOLIST});
  conv_family("stride 2", (conv_geo){3, 3, 13, 12, 4, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST});
  conv_family("stride 2x3 pad 2", (conv_geo){2, 2, 15, 17, 3, 5, 4, 1, IL(2, 3), IL(2, 2), NOLIST});
  conv_family("dilation 2", (conv_geo){2, 3, 12, 11, 4, 3, 3, 1, NOLIST, IL(2, 2), IL(2, 2)});
  conv_family("dilation 2x1 stride 2", (conv_geo){2, 3, 12, 11, 4, 3, 2, 1, IL(2, 1), IL(1, 0), IL(2, 1)});
  conv_family("asymmetric padding", (conv_geo){2, 3, 8, 9, 5, 3, 3, 1, NOLIST, IL(0, 1, 2, 0), NOLIST});
  conv_family("asymmetric padding, stride", (conv_geo){2, 2, 9, 8, 3, 3, 2, 1, IL(2, 2), IL(2, 0, 1, 1), NOLIST});
  conv_family("groups 2", (conv_geo){2, 4, 7, 8, 6, 3, 3, 2, NOLIST, IL(1, 1), NOLIST});
  conv_family("depthwise", (conv_geo){3, 5, 9, 9, 5, 3, 3, 5, IL(1, 1), IL(1, 1), NOLIST});
  conv_family("groups 3 stride 2", (conv_geo){2, 6, 10, 9, 9, 3, 3, 3, IL(2, 2), IL(1, 1), NOLIST});
  conv_family("1x1", (conv_geo){2, 8, 5, 6, 7, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  conv_family("1x1 groups", (conv_geo){2, 8, 5, 6, 4, 1, 1, 2, NOLIST, NOLIST, NOLIST});
  conv_family("1x1 stride 2", (conv_geo){2, 3, 7, 6, 4, 1, 1, 1, IL(2, 2), NOLIST, NOLIST});
  conv_family("kernel = input", (conv_geo){2, 3, 5, 4, 2, 5, 4, 1, NOLIST, NOLIST, NOLIST});
  conv_family("wide kernel", (conv_geo){1, 2, 6, 20, 3, 1, 7, 1, NOLIST, IL(0, 3), NOLIST});
  conv_family("batch 1, 1 channel", (conv_geo){1, 1, 5, 5, 1, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("large padding", (conv_geo){2, 2, 4, 5, 3, 3, 3, 1, NOLIST, IL(3, 3), NOLIST});
  /* batch 1 (and 2): one image's GEMM split across the threads (column blocks for P >= 64 per block, else
     blocks of output channels), the direct kernel's tiles split; depthwise planes */
  conv_family("batch 1 direct", (conv_geo){1, 8, 30, 29, 12, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  /* the AVX-512 tiles' edges: 8-channel blocks (9, 17, 7 channels), 48-position tiles whose last
     one is 1 or 2 vectors wide (wide grids of 56 and 72 positions), rows longer than a vector,
     image counts that are not a multiple of the backward-weight's 4-image passes */
  conv_family("tail tile of 1 vector, 9 channels", (conv_geo){5, 2, 7, 6, 9, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("tail tile of 2 vectors, 17 channels", (conv_geo){7, 3, 9, 6, 17, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("rows over a vector, 7 channels", (conv_geo){3, 2, 6, 37, 7, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("11 images, 24 channels, 5x3 kernel", (conv_geo){11, 5, 13, 17, 24, 5, 3, 1, NOLIST, IL(2, 1), NOLIST});
  conv_family("dilation 2, 20 channels", (conv_geo){6, 4, 12, 13, 20, 3, 3, 1, NOLIST, IL(2, 2), IL(2, 2)});
  conv_family("asymmetric padding, 10 channels", (conv_geo){3, 3, 9, 11, 10, 3, 3, 1, NOLIST, IL(0, 2, 1, 0), NOLIST});
  conv_family("groups 2, 9 channels each", (conv_geo){4, 6, 8, 10, 18, 3, 3, 2, NOLIST, IL(1, 1), NOLIST});
  conv_family("batch 1, 17 channels, tiles split", (conv_geo){1, 4, 21, 19, 17, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  /* backward-weight with the channels in the lanes (multiples of 16 channels, 3-wide kernel rows):
     a last block of 16 channels, kernel-row counts not a multiple of 4, position counts not a
     multiple of 16, row dilation, groups */
  conv_family("48 channels, 15 kernel rows", (conv_geo){3, 5, 9, 13, 48, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("16 channels, row dilation 2, 5x3", (conv_geo){5, 2, 11, 10, 16, 5, 3, 1, NOLIST, IL(2, 1), IL(2, 1)});
  conv_family("groups 2 of 16 channels", (conv_geo){2, 4, 7, 9, 32, 3, 3, 2, NOLIST, IL(1, 1), NOLIST});
  conv_family("16 channels, no padding", (conv_geo){9, 3, 8, 21, 16, 3, 3, 1, NOLIST, NOLIST, NOLIST});
  conv_family("batch 1 stride 2, column blocks", (conv_geo){1, 5, 61, 47, 9, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST});
  conv_family("batch 1 stride 2, channel blocks", (conv_geo){1, 6, 14, 13, 70, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST});
  conv_family("batch 1 1x1, column blocks", (conv_geo){1, 7, 23, 25, 10, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  conv_family("batch 1 1x1, channel blocks", (conv_geo){1, 16, 7, 7, 67, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  conv_family("batch 2 1x1 stride 2", (conv_geo){2, 9, 15, 14, 40, 1, 1, 1, IL(2, 2), NOLIST, NOLIST});
  conv_family("depthwise 5x5 stride 2", (conv_geo){2, 7, 13, 12, 7, 5, 5, 7, IL(2, 2), IL(2, 2), NOLIST});
  conv_family("depthwise batch 1 dilation 2", (conv_geo){1, 4, 11, 10, 4, 3, 3, 4, NOLIST, IL(2, 1), IL(2, 2)});
  conv_family("depthwise asymmetric padding", (conv_geo){1, 3, 8, 9, 3, 3, 3, 3, IL(1, 2), IL(0, 1, 2, 0), NOLIST});
  fk_dconv_disable(true);
  conv_family("batch 1 im2col, column blocks", (conv_geo){1, 4, 30, 29, 12, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  conv_family("batch 1 im2col, channel blocks", (conv_geo){1, 4, 9, 8, 40, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  fk_dconv_disable(false);
  /* declined: f64 */
  tcase c;
  targ fa[2] = {{SHP(F64, 1, 2, 5, 5), FILL_UNIFORM}, {SHP(F64, 3, 2, 3, 3), FILL_UNIFORM}};
  rlx_attrs_Conv ca = {.kernel_size = NOLIST, .stride = NOLIST, .padding = NOLIST, .dilation = NOLIST, .groups = 1};
  CHECK(build(&c, RLX_OP_Conv, &ca, NULL, 2, fa, 0));
  if (c.node) expect_declined("Conv f64", &c);
  case_free(&c);
}

/* ======================================================================================
 * Pool, MaxPool2dBackward
 * ====================================================================================== */

static void pool_family(const char *name, rlx_shape xs, rlx_ilist k, rlx_ilist s, rlx_ilist p) {
  char what[200];
  fill_kind fills[3] = {FILL_UNIFORM, FILL_TIES, FILL_SPECIAL};
  for (int f = 0; f < 3; f++)
    for (int kind = 0; kind < 2; kind++) {
      tcase c;
      targ a[1] = {{xs, fills[f]}};
      rlx_attrs_Pool pa = {
          .kind = kind ? RLX_REDUCE_MEAN : RLX_REDUCE_MAX, .kernel_size = k, .stride = s, .padding = p};
      snprintf(what, sizeof what, "Pool %s %s fill %d", kind ? "mean" : "max", name, f);
      CHECK(build(&c, RLX_OP_Pool, &pa, NULL, 1, a, 0));
      if (!c.node) continue;
      rlx_shape ys = c.node->shape;
      run_case(what, &c, F32_RTOL, F32_ATOL);
      case_free(&c);
      if (kind) continue;
      targ b[2] = {{xs, fills[f]}, {ys, FILL_UNIFORM}};
      rlx_attrs_MaxPool2dBackward ba = {.kernel_size = k, .stride = s, .padding = p};
      snprintf(what, sizeof what, "MaxPool2dBackward %s fill %d", name, f);
      CHECK(build(&c, RLX_OP_MaxPool2dBackward, &ba, NULL, 2, b, 0));
      if (c.node) run_case(what, &c, F32_RTOL, F32_ATOL);
      case_free(&c);
    }
}

/* The fused MaxPool2dBackward + ReluBackward (+ bias gradient) against its parts: the fast
 * MaxPool2dBackward kernel (checked against the reference above), the Relu mask applied here and
 * the fast Reduce kernel on that result, bit for bit, with the mask from z and from x = relu(z),
 * at 1, 2 and 3 threads. Plane counts that are not a multiple of 4 and rows of more than 16
 * windows reach the AVX-512 path's edges. */
static void maxpool_relu_bwd_case(const char *name, rlx_shape xs, fill_kind f) {
  char what[200];
  tcase c, rc;
  targ a[1] = {{xs, f}};
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX, .kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = NOLIST};
  CHECK(build(&c, RLX_OP_Pool, &pa, NULL, 1, a, 0));
  if (!c.node) return;
  rlx_shape ys = c.node->shape;
  case_free(&c);
  size_t count = numel(&xs);
  /* z with ties, NaN and -0 as f asks; x = relu(z) (the pooled tensor the mask is read from) */
  targ b[2] = {{xs, f}, {ys, FILL_UNIFORM}};
  rlx_attrs_MaxPool2dBackward ba = {.kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = NOLIST};
  CHECK(build(&c, RLX_OP_MaxPool2dBackward, &ba, NULL, 2, b, 0));
  if (!c.node) return;
  float *z = malloc(count * sizeof *z), *x = c.in[0].data;
  memcpy(z, x, count * sizeof *z);
  for (size_t i = 0; i < count; i++) x[i] = z[i] < 0 ? 0.0f : z[i];
  targ r[1] = {{xs, FILL_UNIFORM}};
  rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = IL(0, 2, 3), .keep_dim = true};
  CHECK(build(&rc, RLX_OP_Reduce, &ra, NULL, 1, r, 0));
  CHECK(rlx_fast_maxpool_relu_bwd_applies(c.node, c.in, 2, &xs));
  CHECK(rc.node && rlx_fast_reduce_planes_applies(rc.node, rc.in));
  size_t C = (size_t)xs.dims[1];
  float *ex = malloc(count * sizeof *ex), *eb = malloc(C * sizeof *eb), *dx = malloc(count * sizeof *dx);
  float *bg = malloc(C * sizeof *bg);
  rlx_cpu_ctx ctx1 = {.threads = 1};
  rlx_tensor o = {ex, xs};
  CHECK(rlx_cpu_fast_table[RLX_OP_MaxPool2dBackward].kernel(c.node, c.in, 2, &o, &ctx1) == RLX_OK);
  for (size_t i = 0; i < count; i++) ex[i] = z[i] > 0 ? ex[i] : 0.0f; /* ReluBackward(z, .) */
  memcpy(rc.in[0].data, ex, count * sizeof *ex);
  rlx_tensor ob = {eb, rc.node->shape};
  CHECK(rlx_cpu_fast_table[RLX_OP_Reduce].kernel(rc.node, rc.in, 1, &ob, &ctx1) == RLX_OK);
  for (int t = 1; t <= 3; t++)
    for (int from_x = 0; from_x < 2; from_x++) {
      memset(dx, 0xA5, count * sizeof *dx);
      memset(bg, 0xA5, C * sizeof *bg);
      rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = true};
      rlx_status st = rlx_fast_maxpool_relu_bwd(c.node, c.in, from_x ? NULL : z, dx, rc.node, bg, &ctx);
      snprintf(what, sizeof what,
               "MaxPool2dBackward + ReluBackward + bias gradient %s fill %d (mask from %s, threads %d)", name, (int)f,
               from_x ? "x" : "z", t);
      CHECK_MSG(st == RLX_OK, "%s: failed: %s", what, rlx_last_error());
      CHECK_MSG(memcmp(dx, ex, count * sizeof *dx) == 0, "%s: dx differs from the unfused kernels", what);
      CHECK_MSG(memcmp(bg, eb, C * sizeof *bg) == 0, "%s: the bias gradient differs from the Reduce kernel", what);
    }
  free(z), free(ex), free(eb), free(dx), free(bg);
  case_free(&c);
  case_free(&rc);
}

static void test_pool(void) {
  fill_kind fills[3] = {FILL_UNIFORM, FILL_TIES, FILL_SPECIAL};
  for (int f = 0; f < 3; f++) {
    maxpool_relu_bwd_case("cnn layer 1", SHP(F32, 4, 16, 28, 28), fills[f]);
    maxpool_relu_bwd_case("15 planes, odd extents", SHP(F32, 5, 3, 9, 11), fills[f]);
    maxpool_relu_bwd_case("rows of 35 windows", SHP(F32, 3, 2, 6, 70), fills[f]);
    maxpool_relu_bwd_case("rows of 13 windows, odd extents", SHP(F32, 3, 5, 25, 27), fills[f]);
  }
  pool_family("2x2 s2", SHP(F32, 4, 16, 28, 28), IL(2, 2), IL(2, 2), NOLIST);
  pool_family("2x2 s2 odd extents", SHP(F32, 2, 3, 7, 9), IL(2, 2), IL(2, 2), NOLIST);
  pool_family("2x2 s2 rows of 13 and 35 windows", SHP(F32, 2, 3, 25, 27), IL(2, 2), IL(2, 2), NOLIST);
  pool_family("2x2 s2 rows of 35 windows", SHP(F32, 2, 3, 6, 71), IL(2, 2), IL(2, 2), NOLIST);
  pool_family("2x2 default stride", SHP(F32, 2, 3, 8, 6), IL(2, 2), NOLIST, NOLIST);
  pool_family("3x3 s2 pad 1 (overlapping)", SHP(F32, 2, 3, 9, 10), IL(3, 3), IL(2, 2), IL(1, 1));
  pool_family("3x3 s1", SHP(F32, 1, 2, 6, 7), IL(3, 3), IL(1, 1), NOLIST);
  /* the separable max rows: resnet's 3x3 s2 pad 1 on rows of 16+ windows (AVX-512 spans and
     deinterleave, ragged ends), stride 3, a 5x5 s1 pad 2 window, asymmetric padding */
  pool_family("3x3 s2 pad 1, rows of 19 windows", SHP(F32, 2, 5, 21, 37), IL(3, 3), IL(2, 2), IL(1, 1));
  pool_family("3x3 s2 pad 1, rows of 56 windows", SHP(F32, 1, 3, 12, 112), IL(3, 3), IL(2, 2), IL(1, 1));
  pool_family("3x3 s2 no padding, rows of 16 windows", SHP(F32, 1, 3, 11, 33), IL(3, 3), IL(2, 2), NOLIST);
  pool_family("3x3 s2 pad 2", SHP(F32, 1, 2, 10, 40), IL(3, 3), IL(2, 2), IL(2, 2));
  pool_family("3x3 s3", SHP(F32, 2, 3, 17, 53), IL(3, 3), IL(3, 3), NOLIST);
  pool_family("5x5 s1 pad 2", SHP(F32, 1, 4, 9, 40), IL(5, 5), IL(1, 1), IL(2, 2));
  pool_family("4x3 s(2,1) pad (1,0,2,1)", SHP(F32, 2, 3, 11, 35), IL(4, 3), IL(2, 1), IL(1, 0, 2, 1));
  pool_family("2x3 s(1,2) asymmetric pad", SHP(F32, 2, 2, 7, 8), IL(2, 3), IL(1, 2), IL(1, 0, 0, 2));
  pool_family("global", SHP(F32, 3, 4, 5, 5), IL(5, 5), NOLIST, NOLIST);
}

/* ======================================================================================
 * Binary, Activation, ReluBackward, ActivationBackward, Where, Cast
 * ====================================================================================== */

static void binary_case(rlx_binop op, rlx_shape a, rlx_shape b, fill_kind f) {
  tcase c;
  targ args[2] = {{a, f}, {b, f}};
  rlx_attrs_Binary ba = {.op = op};
  char what[200], sa[64], sb[64];
  rlx_shape_format(&a, sa, sizeof sa);
  rlx_shape_format(&b, sb, sizeof sb);
  snprintf(what, sizeof what, "Binary %s %s, %s fill %d", rlx_enum_binop.names[op], sa, sb, (int)f);
  CHECK(build(&c, RLX_OP_Binary, &ba, NULL, 2, args, 0));
  if (c.node) run_case(what, &c, 0, 0); /* f32 arithmetic rounds once, like the reference */
  case_free(&c);
}

static void test_binary(void) {
  rlx_binop ops[6] = {RLX_BINOP_ADD, RLX_BINOP_SUB, RLX_BINOP_MUL, RLX_BINOP_DIV, RLX_BINOP_MAX, RLX_BINOP_MIN};
  for (int i = 0; i < 6; i++) {
    binary_case(ops[i], SHP(F32, 37, 41), SHP(F32, 37, 41), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 5, 16, 28, 28), SHP(F32, 1, 16, 1, 1), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 1, 7, 1, 1), SHP(F32, 3, 7, 5, 4), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 64, 130), SHP(F32, 130), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 33), SHP(F32), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32), SHP(F32, 2, 3), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 4, 1, 6), SHP(F32, 5, 1), FILL_UNIFORM); /* both broadcast */
    binary_case(ops[i], SHP(F32, 2, 3, 1, 5), SHP(F32, 1, 3, 4, 1), FILL_UNIFORM);
    binary_case(ops[i], SHP(F32, 100000), SHP(F32, 100000), FILL_SPECIAL); /* several blocks; NaN, inf, -0 */
    binary_case(ops[i], SHP(F32, 9, 9), SHP(F32, 9, 9), FILL_TIES);
    binary_case(ops[i], SHP(F32, 1), SHP(F32, 1), FILL_UNIFORM);
  }
  tcase c;
  targ pw[2] = {{SHP(F32, 4), FILL_UNIFORM}, {SHP(F32, 4), FILL_UNIFORM}};
  rlx_attrs_Binary pa = {.op = RLX_BINOP_POW};
  CHECK(build(&c, RLX_OP_Binary, &pa, NULL, 2, pw, 0));
  if (c.node) expect_declined("Binary Pow with a tensor exponent", &c);
  case_free(&c);
  /* Pow with a constant exponent: the short forms (and the generic one for 1.7), on edge values */
  float exps[] = {2, 3, 4, 0.5f, -0.5f, -1, 1, 0, 1.7f, -2};
  fill_kind pf[3] = {FILL_UNIFORM, FILL_SPECIAL, FILL_WIDE};
  for (size_t e = 0; e < sizeof exps / sizeof exps[0]; e++)
    for (int f = 0; f < 3; f++) {
      targ pc[2] = {{SHP(F32, 3, 3001), pf[f]}, {SHP(F32), FILL_UNIFORM}};
      char what[96];
      snprintf(what, sizeof what, "Binary Pow x ^ %g fill %d", (double)exps[e], f);
      CHECK(build(&c, RLX_OP_Binary, &pa, NULL, 2, pc, 0));
      if (c.node) {
        *(float *)c.in[1].data = exps[e];
        /* 1 ulp: 3, 4, -1/2 and -1 are computed in double and rounded like pow's result, which can
           differ by one rounding from the reference's correctly rounded pow in rare cases */
        run_case(what, &c, 1.2e-7, 1e-38);
      }
      case_free(&c);
    }
  /* 5 merged broadcast axes: declined */
  targ five[2] = {{SHP(F32, 2, 1, 2, 1, 2), FILL_UNIFORM}, {SHP(F32, 1, 2, 1, 2, 1), FILL_UNIFORM}};
  rlx_attrs_Binary aa = {.op = RLX_BINOP_ADD};
  CHECK(build(&c, RLX_OP_Binary, &aa, NULL, 2, five, 0));
  if (c.node) expect_declined("Binary with 5 merged axes", &c);
  case_free(&c);
}

static void test_activation(void) {
  rlx_act kinds[] = {RLX_ACT_RELU,     RLX_ACT_NEG,  RLX_ACT_ABS,        RLX_ACT_SQRT,
                     RLX_ACT_RECIP,    RLX_ACT_EXP,  RLX_ACT_LOG,        RLX_ACT_SIGMOID,
                     RLX_ACT_TANH,     RLX_ACT_SILU, RLX_ACT_GELU,       RLX_ACT_GELU_APPROX,
                     RLX_ACT_SOFTPLUS, RLX_ACT_ERF,  RLX_ACT_HARD_SWISH, RLX_ACT_HARD_SIGMOID};
  fill_kind fills[3] = {FILL_UNIFORM, FILL_WIDE, FILL_SPECIAL};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    for (int f = 0; f < 3; f++) {
      tcase c;
      targ a[1] = {{f == 0 ? SHP(F32, 3, 1000) : SHP(F32, 40000), fills[f]}};
      rlx_attrs_Activation aa = {.kind = kinds[i]};
      char what[160];
      snprintf(what, sizeof what, "Activation %s fill %d", rlx_enum_act.names[kinds[i]], (int)fills[f]);
      CHECK(build(&c, RLX_OP_Activation, &aa, NULL, 1, a, 0));
      /* Gelu / GeluApprox: the reference forms 1 + erf / 1 + tanh in double, which cancels in
         the far negative tail (|result| < 1e-10); the fast kernels use erfc / sigmoid there */
      bool tail = kinds[i] == RLX_ACT_GELU || kinds[i] == RLX_ACT_GELU_APPROX;
      if (c.node) run_case(what, &c, 4e-6, tail ? 1e-10 : 1e-30);
      if (c.node) same_bits_on_scalar(what, &c);
      case_free(&c);
    }
  tcase c;
  targ a[1] = {{SHP(F32, 4), FILL_UNIFORM}};
  rlx_attrs_Activation sin_a = {.kind = RLX_ACT_SIN};
  CHECK(build(&c, RLX_OP_Activation, &sin_a, NULL, 1, a, 0));
  if (c.node) expect_declined("Activation Sin", &c);
  case_free(&c);
}

static void test_backward_act(void) {
  fill_kind fills[3] = {FILL_UNIFORM, FILL_WIDE, FILL_SPECIAL};
  for (int f = 0; f < 3; f++) {
    tcase c;
    targ a[2] = {{SHP(F32, 5, 16, 28, 28), fills[f]}, {SHP(F32, 5, 16, 28, 28), FILL_SPECIAL}};
    char what[160];
    snprintf(what, sizeof what, "ReluBackward fill %d", (int)fills[f]);
    CHECK(build(&c, RLX_OP_ReluBackward, NULL, NULL, 2, a, 0));
    if (c.node) run_case(what, &c, 0, 0);
    case_free(&c);
  }
  rlx_act kinds[] = {RLX_ACT_RELU, RLX_ACT_SIGMOID, RLX_ACT_TANH, RLX_ACT_SILU, RLX_ACT_GELU, RLX_ACT_EXP};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    for (int f = 0; f < 3; f++) {
      tcase c;
      targ a[2] = {{SHP(F32, 7, 3001), fills[f]}, {SHP(F32, 7, 3001), f == 2 ? FILL_SPECIAL : FILL_UNIFORM}};
      rlx_attrs_ActivationBackward ab = {.kind = kinds[i]};
      char what[160];
      snprintf(what, sizeof what, "ActivationBackward %s fill %d", rlx_enum_act.names[kinds[i]], (int)fills[f]);
      CHECK(build(&c, RLX_OP_ActivationBackward, &ab, NULL, 2, a, 0));
      /* the reference computes 1 - tanh^2 and s (1 - s) in double: near saturation it carries an
         absolute error of about 1e-16, hence the absolute tolerance */
      if (c.node) run_case(what, &c, 1e-5, 1e-12);
      case_free(&c);
    }
}

static void test_where_cast(void) {
  rlx_shape s = SHP(F32, 3, 700), one = SHP(F32, 1);
  rlx_shape conds[2] = {SHP(BOOL, 3, 700), SHP(BOOL)};
  for (int ci = 0; ci < 2; ci++)
    for (int ai = 0; ai < 2; ai++) {
      tcase c;
      targ a[3] = {{conds[ci], FILL_BOOL}, {ai ? one : s, FILL_UNIFORM}, {s, FILL_SPECIAL}};
      char what[80];
      snprintf(what, sizeof what, "Where cond %d a %d", ci, ai);
      CHECK(build(&c, RLX_OP_Where, NULL, NULL, 3, a, 0));
      if (c.node) run_case(what, &c, 0, 0);
      case_free(&c);
    }
  {
    tcase c;
    targ a[3] = {{SHP(BOOL, 4, 5), FILL_BOOL}, {SHP(I32, 4, 5), FILL_LABELS}, {SHP(I32, 4, 5), FILL_LABELS}};
    CHECK(build(&c, RLX_OP_Where, NULL, NULL, 3, a, 100));
    if (c.node) run_case("Where i32", &c, 0, 0);
    case_free(&c);
  }
  /* Clamp f32: the bits of the reference's double clamp (NaN, +-inf, -0 among the inputs; bounds
     at the edges of the data, equal bounds, a bound of -0; the graph rejects NaN bounds) */
  const float bounds[4][2] = {{-0.25f, 0.5f}, {0.0f, 1.0f}, {-0.0f, 0.0f}, {0.3f, 0.3f}};
  for (int k = 0; k < 4; k++)
    for (int f = 0; f < 2; f++) {
      tcase c;
      targ a[1] = {{SHP(F32, 3, 7001), f ? FILL_SPECIAL : FILL_UNIFORM}};
      rlx_attrs_Clamp ca = {.min = bounds[k][0], .max = bounds[k][1]};
      char what[80];
      snprintf(what, sizeof what, "Clamp [%g, %g] fill %d", (double)bounds[k][0], (double)bounds[k][1], f);
      CHECK(build(&c, RLX_OP_Clamp, &ca, NULL, 1, a, 0));
      if (c.node) {
        run_case(what, &c, 0, 0);
        /* bit for bit (run_case compares values: -0 == 0) */
        size_t bytes = 3 * 7001 * sizeof(float);
        float *r = malloc(bytes), *q = malloc(bytes);
        rlx_tensor tr = {r, c.node->shape}, tq = {q, c.node->shape};
        rlx_cpu_ctx c1 = {.threads = 1};
        CHECK_OK(rlx_cpu_ref_table[RLX_OP_Clamp](c.node, c.in, 1, &tr, &c1));
        CHECK_OK(rlx_fast_Clamp(c.node, c.in, 1, &tq, &c1));
        CHECK_MSG(memcmp(r, q, bytes) == 0, "%s: the fast Clamp's bits differ from the reference's", what);
        free(r);
        free(q);
      }
      case_free(&c);
    }
  rlx_dtype others[] = {RLX_F64, RLX_I32, RLX_I64, RLX_U8, RLX_BOOL};
  fill_kind fills[3] = {FILL_UNIFORM, FILL_WIDE, FILL_SPECIAL};
  for (size_t i = 0; i < 5; i++) {
    for (int f = 0; f < 3; f++) { /* f32 -> other */
      tcase c;
      targ a[1] = {{SHP(F32, 50001), fills[f]}};
      rlx_attrs_Cast ca = {.to = others[i]};
      char what[80];
      snprintf(what, sizeof what, "Cast f32 -> %s fill %d", rlx_dtype_name(others[i]), f);
      CHECK(build(&c, RLX_OP_Cast, &ca, NULL, 1, a, 0));
      if (c.node) run_case(what, &c, 0, 0);
      case_free(&c);
    }
    { /* other -> f32 */
      tcase c;
      rlx_shape xs = SHP(F32, 333);
      xs.dtype = (uint8_t)others[i];
      targ a[1] = {{xs, others[i] == RLX_F64 ? FILL_SPECIAL : others[i] == RLX_BOOL ? FILL_BOOL : FILL_LABELS}};
      rlx_attrs_Cast ca = {.to = RLX_F32};
      char what[80];
      snprintf(what, sizeof what, "Cast %s -> f32", rlx_dtype_name(others[i]));
      CHECK(build(&c, RLX_OP_Cast, &ca, NULL, 1, a, 200));
      if (c.node) run_case(what, &c, 0, 0);
      case_free(&c);
    }
  }
  /* large magnitudes: saturation */
  tcase c;
  targ a[1] = {{SHP(F64, 6), FILL_UNIFORM}};
  rlx_attrs_Cast ca = {.to = RLX_F32};
  CHECK(build(&c, RLX_OP_Cast, &ca, NULL, 1, a, 0));
  if (c.node) {
    double big[6] = {1e300, -1e300, 3.4028235677973366e38, 1e-320, 16777217.0, -0.0};
    memcpy(c.in[0].data, big, sizeof big);
    run_case("Cast f64 -> f32 overflow / subnormal / ties", &c, 0, 0);
  }
  case_free(&c);
  {
    targ f[1] = {{SHP(F32, 8), FILL_UNIFORM}};
    rlx_attrs_Cast ci = {.to = RLX_I32};
    CHECK(build(&c, RLX_OP_Cast, &ci, NULL, 1, f, 0));
    if (c.node) {
      float v[8] = {3e9f, -3e9f, 2147483520.0f, -2147483648.0f, NAN, 2.9f, -2.9f, INFINITY};
      memcpy(c.in[0].data, v, sizeof v);
      run_case("Cast f32 -> i32 saturation", &c, 0, 0);
    }
    case_free(&c);
    rlx_attrs_Cast c16 = {.to = RLX_F16};
    CHECK(build(&c, RLX_OP_Cast, &c16, NULL, 1, f, 0));
    if (c.node) expect_declined("Cast f32 -> f16", &c);
    case_free(&c);
  }
}

/* ======================================================================================
 * Reduce, Softmax, softmax cross-entropy
 * ====================================================================================== */

static void reduce_case(rlx_shape x, rlx_ilist axes, bool keep, rlx_reduce op, fill_kind f) {
  tcase c;
  targ a[1] = {{x, f}};
  rlx_attrs_Reduce ra = {.op = op, .axes = axes, .keep_dim = keep};
  char what[200], sx[64];
  rlx_shape_format(&x, sx, sizeof sx);
  snprintf(what, sizeof what, "Reduce %s %s axes[0]=%lld (%u axes) keep %d", rlx_enum_reduce.names[op], sx,
           (long long)(axes.n ? axes.v[0] : -99), axes.n, keep);
  CHECK(build(&c, RLX_OP_Reduce, &ra, NULL, 1, a, 0));
  if (c.node) run_case(what, &c, 1e-6, 1e-6);
  case_free(&c);
}

static void test_reduce(void) {
  for (int op = 0; op < 2; op++) {
    rlx_reduce r = op ? RLX_REDUCE_MEAN : RLX_REDUCE_SUM;
    reduce_case(SHP(F32, 6, 16, 28, 28), IL(0, 2, 3), true, r, FILL_UNIFORM); /* conv bias gradient */
    reduce_case(SHP(F32, 6, 16, 28, 28), IL(0, 2, 3), false, r, FILL_UNIFORM);
    reduce_case(SHP(F32, 64, 130), IL(0), true, r, FILL_UNIFORM);    /* dense bias gradient */
    reduce_case(SHP(F32, 64, 1300), IL(0), false, r, FILL_UNIFORM);  /* several column blocks */
    reduce_case(SHP(F32, 13, 1001), IL(-1), false, r, FILL_UNIFORM); /* last axis */
    reduce_case(SHP(F32, 5, 7, 9), IL(1), true, r, FILL_UNIFORM);    /* middle */
    reduce_case(SHP(F32, 5, 7, 9), NOLIST, false, r, FILL_UNIFORM);  /* everything */
    reduce_case(SHP(F32, 64), IL(0), false, r, FILL_UNIFORM);
    reduce_case(SHP(F32, 5, 1, 7, 1), IL(1, 2), false, r, FILL_UNIFORM); /* unit axes */
    reduce_case(SHP(F32, 4, 1, 6), IL(1), false, r, FILL_UNIFORM);       /* only a unit axis */
    reduce_case(SHP(F32, 3, 40000), IL(1), false, r, FILL_SPECIAL);
    reduce_case(SHP(F32, 3, 0, 4), IL(1), false, r, FILL_UNIFORM); /* empty reduction */
  }
  tcase c;
  targ a[1] = {{SHP(F32, 2, 3, 4, 5), FILL_UNIFORM}};
  rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = IL(0, 2), .keep_dim = false};
  CHECK(build(&c, RLX_OP_Reduce, &ra, NULL, 1, a, 0));
  if (c.node) expect_declined("Reduce R K R K", &c);
  case_free(&c);
  rlx_attrs_Reduce rm = {.op = RLX_REDUCE_MAX, .axes = IL(1), .keep_dim = false};
  CHECK(build(&c, RLX_OP_Reduce, &rm, NULL, 1, a, 0));
  if (c.node) expect_declined("Reduce Max", &c);
  case_free(&c);
}

static void test_softmax(void) {
  rlx_shape shapes[3] = {SHP(F32, 64, 10), SHP(F32, 3, 5, 1001), SHP(F32, 7)};
  fill_kind fills[3] = {FILL_UNIFORM, FILL_WIDE, FILL_SPECIAL};
  for (int s = 0; s < 3; s++)
    for (int f = 0; f < 3; f++) {
      tcase c;
      targ a[1] = {{shapes[s], fills[f]}};
      rlx_attrs_Softmax sa = {.axis = -1};
      char what[80];
      snprintf(what, sizeof what, "Softmax shape %d fill %d", s, f);
      CHECK(build(&c, RLX_OP_Softmax, &sa, NULL, 1, a, 0));
      if (c.node) run_case(what, &c, 1e-6, 1e-30);
      case_free(&c);
    }
  rlx_dtype labels[3] = {RLX_I32, RLX_I64, RLX_F32};
  for (int l = 0; l < 3; l++)
    for (int f = 0; f < 3; f++) {
      rlx_shape ls = SHP(I32, 64);
      ls.dtype = (uint8_t)labels[l];
      tcase c;
      targ a[2] = {{SHP(F32, 64, 10), fills[f]}, {ls, FILL_LABELS}};
      char what[80];
      snprintf(what, sizeof what, "SoftmaxCrossEntropyWithLogits labels %s fill %d", rlx_dtype_name(labels[l]), f);
      CHECK(build(&c, RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, NULL, 2, a, 10));
      if (c.node) run_case(what, &c, 1e-6, 1e-6);
      case_free(&c);
      targ b[3] = {{SHP(F32, 64, 10), fills[f]}, {ls, FILL_LABELS}, {SHP(F32, 64), FILL_UNIFORM}};
      snprintf(what, sizeof what, "SoftmaxCrossEntropyBackward labels %s fill %d", rlx_dtype_name(labels[l]), f);
      CHECK(build(&c, RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, 3, b, 10));
      if (c.node) run_case(what, &c, 1e-6, 1e-7);
      case_free(&c);
    }
  /* a bad label: the fast kernel reports the reference kernel's error */
  tcase c;
  targ a[2] = {{SHP(F32, 4, 3), FILL_UNIFORM}, {SHP(I32, 4), FILL_LABELS}};
  CHECK(build(&c, RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, NULL, 2, a, 3));
  if (c.node) {
    ((int32_t *)c.in[1].data)[2] = 3;
    float out[4];
    rlx_tensor o = {out, c.node->shape};
    rlx_cpu_ctx ctx = {.threads = 2, .pool = pools[2]};
    CHECK(rlx_cpu_fast_table[RLX_OP_SoftmaxCrossEntropyWithLogits].applies(c.node, c.in, 2));
    CHECK_ERR(rlx_cpu_fast_table[RLX_OP_SoftmaxCrossEntropyWithLogits].kernel(c.node, c.in, 2, &o, &ctx),
              RLX_ERR_RUNTIME, "out of range");
    ((int32_t *)c.in[1].data)[2] = -1;
    rlx_tensor ob = {calloc(12, 4), c.in[0].shape};
    float g[4] = {1, 1, 1, 1};
    rlx_tensor in3[3] = {c.in[0], c.in[1], {g, SHP(F32, 4)}};
    rlx_graph *g2;
    rlx_id ids[3], idb;
    CHECK_OK(rlx_graph_create(NULL, "sceb", &g2));
    CHECK_OK(rlx_input(g2, "x", in3[0].shape, &ids[0]));
    CHECK_OK(rlx_input(g2, "l", in3[1].shape, &ids[1]));
    CHECK_OK(rlx_input(g2, "g", in3[2].shape, &ids[2]));
    CHECK_OK(rlx_graph_add(g2, RLX_OP_SoftmaxCrossEntropyBackward, ids, 3, NULL, NULL, NULL, &idb));
    const rlx_node *nb = rlx_graph_node(g2, idb);
    CHECK_ERR(rlx_cpu_fast_table[RLX_OP_SoftmaxCrossEntropyBackward].kernel(nb, in3, 3, &ob, &ctx), RLX_ERR_RUNTIME,
              "out of range");
    free(ob.data);
    rlx_graph_free(g2);
  }
  case_free(&c);
}

/* ======================================================================================
 * Executor: a CNN training step with fast kernels vs RLX_CPU_REF_ONLY=1
 * ====================================================================================== */

static rlx_status conv_block(rlx_graph *g, rlx_id x, rlx_id w, rlx_id b, int64_t cout, rlx_id *out) {
  int64_t one[2] = {1, 1}, k2[2] = {2, 2};
  rlx_attrs_Conv ca = {.kernel_size = NOLIST,
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = one, .n = 2},
                       .dilation = {.v = one, .n = 2},
                       .groups = 1};
  rlx_id c, br, r;
  RLX_TRY(rlx_build_Conv(g, (rlx_id[]){x, w}, 2, &ca, NULL, &c));
  RLX_TRY(rlx_reshape(g, b, 4, (int64_t[]){1, cout, 1, 1}, &br));
  RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, c, br, &c));
  RLX_TRY(rlx_activation(g, RLX_ACT_RELU, c, &r));
  rlx_attrs_Pool pa = {
      .kind = RLX_REDUCE_MAX, .kernel_size = {.v = k2, .n = 2}, .stride = {.v = k2, .n = 2}, .padding = NOLIST};
  return rlx_build_Pool(g, &r, 1, &pa, NULL, out);
}

/* x [B, in] times a dense weight: [in, out] used as is, or (PyTorch's layout) [out, in] used
 * through a Transpose, whose backward adds Transpose chains and transposed products. */
static rlx_status dense(rlx_graph *g, rlx_id x, rlx_id w, bool torch_layout, rlx_id *out) {
  if (!torch_layout) return rlx_matmul(g, x, w, out);
  rlx_id wt;
  RLX_TRY(rlx_transpose(g, w, 2, (int64_t[]){1, 0}, &wt));
  return rlx_matmul(g, x, wt, out);
}

static rlx_status cnn_grad_graph(int64_t B, bool torch_layout, rlx_graph **fwd, rlx_graph **grad) {
  rlx_graph *g;
  RLX_TRY(rlx_graph_create(NULL, "cnn", &g));
  *fwd = g;
  rlx_id x, lab, w1, b1, w2, b2, w3, b3, w4, b4, h, l;
  RLX_TRY(rlx_input(g, "x", SHP(F32, B, 1, 12, 12), &x));
  RLX_TRY(rlx_input(g, "labels", SHP(I32, B), &lab));
  RLX_TRY(rlx_param(g, "w1", SHP(F32, 4, 1, 3, 3), &w1));
  RLX_TRY(rlx_param(g, "b1", SHP(F32, 4), &b1));
  RLX_TRY(rlx_param(g, "w2", SHP(F32, 6, 4, 3, 3), &w2));
  RLX_TRY(rlx_param(g, "b2", SHP(F32, 6), &b2));
  RLX_TRY(rlx_param(g, "w3", torch_layout ? SHP(F32, 16, 6 * 3 * 3) : SHP(F32, 6 * 3 * 3, 16), &w3));
  RLX_TRY(rlx_param(g, "b3", SHP(F32, 16), &b3));
  RLX_TRY(rlx_param(g, "w4", torch_layout ? SHP(F32, 5, 16) : SHP(F32, 16, 5), &w4));
  RLX_TRY(rlx_param(g, "b4", SHP(F32, 5), &b4));
  RLX_TRY(conv_block(g, x, w1, b1, 4, &h));
  RLX_TRY(conv_block(g, h, w2, b2, 6, &h));
  RLX_TRY(rlx_reshape(g, h, 2, (int64_t[]){B, 6 * 3 * 3}, &h));
  RLX_TRY(dense(g, h, w3, torch_layout, &h));
  RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, h, b3, &h));
  RLX_TRY(rlx_activation(g, RLX_ACT_RELU, h, &h));
  RLX_TRY(dense(g, h, w4, torch_layout, &h));
  RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, h, b4, &h));
  RLX_TRY(rlx_build_SoftmaxCrossEntropyWithLogits(g, (rlx_id[]){h, lab}, 2, NULL, &l));
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_MEAN, l, 1, (int64_t[]){0}, false, &l));
  RLX_TRY(rlx_graph_set_outputs(g, &l, 1));
  const char *wrt[] = {"w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4"};
  rlx_grad_options go;
  rlx_grad_options_init(&go);
  return rlx_grad_with_loss(g, wrt, 8, &go, grad);
}

/* Compiles gr (with `threads`) and runs it on fixed values; returns the outputs (malloc'ed). */
static float **run_step(rlx_graph *gr, int threads, int64_t B, uint32_t *n_out) {
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = threads;
  co.backend_options = &cpu;
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(gr, "cpu", &co, &e);
  CHECK_MSG(st == RLX_OK, "compile: %s", rlx_last_error());
  if (st) return NULL;
  uint64_t saved = rng_state;
  rng_state = 12345;
  for (uint32_t i = 0; i < rlx_executable_param_count(e); i++) {
    rlx_tensor t = {malloc(numel(rlx_executable_param_shape(e, i)) * 4), *rlx_executable_param_shape(e, i)};
    fill(&t, FILL_UNIFORM, 0);
    CHECK_OK(rlx_executable_set_param(e, rlx_executable_param_name(e, i), &t));
    free(t.data);
  }
  rlx_tensor x = {malloc((size_t)B * 144 * 4), SHP(F32, B, 1, 12, 12)}, lab = {malloc((size_t)B * 4), SHP(I32, B)};
  fill(&x, FILL_UNIFORM, 0);
  fill(&lab, FILL_LABELS, 5);
  rng_state = saved;
  float seed = 1.0f;
  rlx_named_tensor in[3] = {{"x", x}, {"labels", lab}, {"d_output", {&seed, SHP(F32)}}};
  const rlx_tensor *outs;
  float **res = NULL;
  st = rlx_executable_run(e, in, 3, &outs, n_out);
  CHECK_MSG(st == RLX_OK, "run: %s", rlx_last_error());
  if (st == RLX_OK) {
    res = calloc(*n_out, sizeof *res);
    for (uint32_t i = 0; i < *n_out; i++) {
      size_t b = numel(&outs[i].shape) * 4;
      res[i] = malloc(b ? b : 1);
      memcpy(res[i], outs[i].data, b);
    }
  }
  free(x.data);
  free(lab.data);
  rlx_executable_free(e);
  return res;
}

static void test_executor(bool torch_layout) {
  rlx_graph *f = NULL, *gr = NULL;
  int64_t B = 5;
  CHECK_OK(cnn_grad_graph(B, torch_layout, &f, &gr));
  if (!gr) {
    rlx_graph_free(f);
    return;
  }
  setenv("RLX_CPU_REF_ONLY", "1", 1);
  uint32_t n_ref = 0, n_fast = 0, n_plain = 0;
  float **ref = run_step(gr, 1, B, &n_ref);
  unsetenv("RLX_CPU_REF_ONLY");
  /* fast kernels without fusion: the fused thunks must reproduce these bit for bit (the conv and
     pooling epilogues do the unfused arithmetic; a fused Transpose -> MatMul makes the unfused
     sgemm call on a transposed copy), and in deterministic mode (the default) at every thread
     count */
  setenv("RLX_CPU_NO_FUSION", "1", 1);
  uint64_t fusions0 = rlx_cpu_fusion_count();
  float **plain = run_step(gr, 2, B, &n_plain);
  CHECK(rlx_cpu_fusion_count() == fusions0);
  unsetenv("RLX_CPU_NO_FUSION");
  const rlx_id *outs = rlx_graph_outputs(gr);
  for (int t = 1; t <= 2 && ref && plain; t++) {
    uint64_t before = rlx_cpu_fusion_count();
    float **fast = run_step(gr, t, B, &n_fast);
    /* conv + bias + relu (2), max-pool backward + relu backward (2), transpose -> matmul */
    CHECK_MSG(rlx_cpu_fusion_count() - before >= 6, "only %llu fusions",
              (unsigned long long)(rlx_cpu_fusion_count() - before));
    CHECK(fast && n_fast == n_ref);
    for (uint32_t i = 0; fast && i < n_ref; i++) {
      const rlx_node *on = rlx_graph_node(gr, outs[i]);
      size_t cnt = numel(&on->shape), bad = 0, differ = 0;
      for (size_t k = 0; k < cnt; k++) {
        bad += !close_enough(fast[i][k], ref[i][k], 1e-4, 1e-6);
        differ += memcmp(&fast[i][k], &plain[i][k], sizeof(float)) != 0;
      }
      CHECK_MSG(bad == 0, "executor (threads %d): output %u differs from the reference in %zu of %zu elements", t, i,
                bad, cnt);
      CHECK_MSG(differ == 0,
                "executor (threads %d): output %u of the fused run differs from the unfused fast run (2 threads) in "
                "%zu elements",
                t, i, differ);
      free(fast[i]);
    }
    free(fast);
  }
  for (uint32_t i = 0; ref && i < n_ref; i++) free(ref[i]);
  for (uint32_t i = 0; plain && i < n_plain; i++) free(plain[i]);
  free(ref);
  free(plain);
  rlx_graph_free(gr);
  rlx_graph_free(f);
}

/* ======================================================================================
 * MatMul by a constant B packed once (fast/gemm_packed.c; the AVX-512 and AVX2 paths): against a
 * double product within gamma_K sum_k |a_ik||b_kj| and bit-equal to one fmaf chain per element
 * (what every path computes), the same bits at 1, 2 and 3 threads and in deterministic mode, edges of M (12-row
 * tiles, 192-row blocks), N (32-column panels) and K (256-step passes); then through the
 * executor with a Constant B (packed there) against RLX_CPU_NO_PACK=1.
 * ====================================================================================== */

static void packed_case(rlx_shape as, int64_t K, int64_t N) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "mm_packed", &g));
  rlx_shape bs = SHP(F32, K, N);
  rlx_id a, b, m;
  CHECK_OK(rlx_input(g, "a", as, &a));
  CHECK_OK(rlx_input(g, "b", bs, &b));
  CHECK_OK(rlx_matmul(g, a, b, &m));
  const rlx_node *mn = rlx_graph_node(g, m);
  bool applies = rlx_fast_matmul_packed_applies(mn, &as, &bs);
  CHECK_MSG(applies == (fk_isa_active() >= FK_ISA_AVX2), "packed MatMul applies = %d on the %s path", applies,
            fk_isa_name(fk_isa_active()));
  /* declined on the scalar path, but a buffer packed on another path still runs there (the plain
     loop): checked the same way */
  rlx_tensor A = {malloc(numel(&as) * 4), as}, B = {malloc(numel(&bs) * 4), bs};
  fill(&A, FILL_UNIFORM, 0);
  fill(&B, FILL_UNIFORM, 0);
  size_t cnt = numel(&mn->shape), M = cnt / (size_t)N;
  float *bp = rlx_fast_matmul_pack_b(&bs, B.data);
  CHECK(bp != NULL);
  rlx_tensor f = {malloc(cnt * 4), mn->shape}, f1 = {malloc(cnt * 4), mn->shape};
  double ur = ldexp(1.0, -24), gamma = (double)K * ur / (1.0 - (double)K * ur);
  const float *pa = A.data, *pb = B.data;
  for (int det = 0; det < 2 && bp; det++)
    for (int t = 1; t <= 3; t++) {
      memset(f.data, 0xA5, cnt * 4);
      rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = det};
      CHECK_OK(rlx_fast_matmul_packed(mn, &A, bp, &f, &ctx));
      if (t == 1 && !det) {
        size_t bad = 0;
        for (size_t i = 0; i < M; i++)
          for (size_t j = 0; j < (size_t)N; j++) {
            double exact = 0, mag = 0;
            for (size_t k = 0; k < (size_t)K; k++) {
              double p = (double)pa[i * (size_t)K + k] * (double)pb[k * (size_t)N + j];
              exact += p;
              mag += fabs(p);
            }
            double got = ((float *)f.data)[i * (size_t)N + j];
            bad += !(fabs(got - exact) <= gamma * mag + 1e-30);
            /* one fmaf chain over k from zero: the same bits on every path */
            float chain = 0.0f;
            for (size_t k = 0; k < (size_t)K; k++) chain = fmaf(pa[i * (size_t)K + k], pb[k * (size_t)N + j], chain);
            bad += memcmp(&chain, (float *)f.data + i * (size_t)N + j, 4) != 0;
          }
        CHECK_MSG(bad == 0,
                  "packed MatMul %zux%lldx%lld: %zu elements off the exact product by more than gamma_K "
                  "sum|a||b| or from the fmaf chain",
                  M, (long long)K, (long long)N, bad);
        memcpy(f1.data, f.data, cnt * 4);
      } else {
        CHECK_MSG(memcmp(f.data, f1.data, cnt * 4) == 0, "packed MatMul %zux%lldx%lld: threads %d%s gives other bits",
                  M, (long long)K, (long long)N, t, det ? " (deterministic)" : "");
      }
    }
  rlx_fast_matmul_pack_free(bp);
  free(A.data);
  free(B.data);
  free(f.data);
  free(f1.data);
  rlx_graph_free(g);
}

/* x [2, 37, 300] . W [300, 70] (+ nothing else) with W a Constant: packed by the executor, the
 * result within the bound above of the unpacked executable's. */
static void packed_executor_case(void) {
  int64_t K = 300, N = 70;
  rlx_shape xs = SHP(F32, 2, 37, 300), ws = SHP(F32, 300, 70);
  rlx_tensor X = {malloc(numel(&xs) * 4), xs}, W = {malloc(numel(&ws) * 4), ws};
  fill(&X, FILL_UNIFORM, 0);
  fill(&W, FILL_UNIFORM, 0);
  float *res[2] = {NULL, NULL};
  size_t cnt = 2 * 37 * (size_t)N;
  for (int pack = 0; pack < 2; pack++) {
    if (!pack) setenv("RLX_CPU_NO_PACK", "1", 1);
    rlx_graph *g;
    rlx_id x, w, m;
    CHECK_OK(rlx_graph_create(NULL, "mm_const", &g));
    CHECK_OK(rlx_input(g, "x", xs, &x));
    CHECK_OK(rlx_constant(g, ws, W.data, numel(&ws) * 4, &w));
    CHECK_OK(rlx_matmul(g, x, w, &m));
    CHECK_OK(rlx_graph_set_outputs(g, &m, 1));
    rlx_compile_options co;
    rlx_compile_options_init(&co);
    rlx_executable *e = NULL;
    uint64_t before = rlx_cpu_pack_count();
    CHECK_OK(rlx_compile(g, "cpu", &co, &e));
    uint64_t packs = rlx_cpu_pack_count() - before;
    bool want = pack && fk_isa_active() >= FK_ISA_AVX2;
    CHECK_MSG(packs == (want ? 1u : 0u), "executor: %llu packed MatMuls, expected %d", (unsigned long long)packs,
              (int)want);
    unsetenv("RLX_CPU_NO_PACK");
    rlx_named_tensor in[1] = {{"x", X}};
    const rlx_tensor *outs;
    uint32_t n_out = 0;
    if (e && rlx_executable_run(e, in, 1, &outs, &n_out) == RLX_OK && n_out == 1) {
      res[pack] = malloc(cnt * 4);
      memcpy(res[pack], outs[0].data, cnt * 4);
    }
    CHECK(res[pack] != NULL);
    rlx_executable_free(e);
    rlx_graph_free(g);
  }
  double ur = ldexp(1.0, -24), gamma = (double)K * ur / (1.0 - (double)K * ur);
  const float *px = X.data, *pw = W.data;
  size_t bad = 0;
  for (size_t i = 0; res[0] && res[1] && i < cnt; i++) {
    size_t row = i / (size_t)N, col = i % (size_t)N;
    double mag = 0;
    for (size_t k = 0; k < (size_t)K; k++)
      mag += fabs((double)px[row * (size_t)K + k] * (double)pw[k * (size_t)N + col]);
    bad += !(fabs((double)res[0][i] - (double)res[1][i]) <= 2 * gamma * mag);
  }
  CHECK_MSG(bad == 0, "executor: the packed MatMul differs from the unpacked one in %zu of %zu elements", bad, cnt);
  free(res[0]);
  free(res[1]);
  free(X.data);
  free(W.data);
}

static void test_matmul_packed(void) {
  packed_case(SHP(F32, 1, 1), 1, 1);
  packed_case(SHP(F32, 5, 7), 7, 3);
  packed_case(SHP(F32, 13, 33), 33, 31);         /* one tile + 1 row, one panel - 1 column */
  packed_case(SHP(F32, 12, 256), 256, 32);       /* exact tile, pass and panel */
  packed_case(SHP(F32, 3, 25, 300), 300, 65);    /* batch folded into M; two k passes; 3 panels */
  packed_case(SHP(F32, 200, 513), 513, 47);      /* two row blocks, three k passes */
  packed_case(SHP(F32, 1, 128, 384), 384, 1536); /* the encoder's FFN shape */
  /* the edges of the 8 x 48 tiles and 128-step passes (GP_MR, GP_NR, GP_KC); the data stream of
     the later tests stays what it was without these cases */
  uint64_t saved_rng = rng_state;
  packed_case(SHP(F32, 8, 128), 128, 48);  /* exact tile, pass and panel */
  packed_case(SHP(F32, 9, 129), 129, 49);  /* one more row, k step and column */
  packed_case(SHP(F32, 7, 127), 127, 95);  /* one less of each, two panels */
  packed_case(SHP(F32, 385, 64), 64, 100); /* three row blocks of 192 rows at most */
  rng_state = saved_rng;
  /* declined: B with a batch axis */
  rlx_graph *g;
  rlx_id a, b, m;
  CHECK_OK(rlx_graph_create(NULL, "mm_packed_no", &g));
  CHECK_OK(rlx_input(g, "a", SHP(F32, 2, 4, 5), &a));
  CHECK_OK(rlx_input(g, "b", SHP(F32, 2, 5, 3), &b));
  CHECK_OK(rlx_matmul(g, a, b, &m));
  rlx_shape sa = SHP(F32, 2, 4, 5), sb = SHP(F32, 2, 5, 3);
  CHECK(!rlx_fast_matmul_packed_applies(rlx_graph_node(g, m), &sa, &sb));
  rlx_graph_free(g);
  packed_executor_case();
}

/* ======================================================================================
 * Fft (f32 real-block lines: radix-2 and Bluestein lengths, both directions, every norm)
 * ====================================================================================== */

static void test_fft(void) {
  /* last axis 2N: N = 1, 2, 8, 512 (radix-2), 3, 5, 12, 400, 1000, 1001 = 7 * 11 * 13, 6 (mixed
   * radix) and 17, 4099 (primes past 13: Bluestein) */
  rlx_shape shapes[13] = {SHP(F32, 3, 2),  SHP(F32, 5, 4),  SHP(F32, 2, 3, 16), SHP(F32, 9, 1024), SHP(F32, 4, 6),
                          SHP(F32, 2, 10), SHP(F32, 7, 24), SHP(F32, 5, 800),   SHP(F32, 3, 2000), SHP(F32, 2, 2002),
                          SHP(F32, 4, 12), SHP(F32, 3, 34), SHP(F32, 2, 8198)};
  for (int s = 0; s < 13; s++)
    for (int v = 0; v < 6; v++) {
      tcase c;
      targ a[1] = {{shapes[s], FILL_UNIFORM}};
      rlx_attrs_Fft fa = {.inverse = v >= 3, .norm = (rlx_fft_norm)(v % 3)};
      char what[80];
      snprintf(what, sizeof what, "Fft shape %d inverse %d norm %d", s, v >= 3, v % 3);
      CHECK(build(&c, RLX_OP_Fft, &fa, NULL, 1, a, 0));
      /* both compute in double and round once: they differ by an f32 rounding at most, except
       * bins that are nearly zero, where double-level errors of the size of |y|max ~ sqrt(N) show */
      double len = (double)shapes[s].dims[shapes[s].rank - 1] / 2;
      if (c.node) run_case(what, &c, 1.2e-7, 1e-14 * sqrt(len));
      case_free(&c);
    }
  tcase c;
  targ a[1] = {{SHP(F64, 2, 8), FILL_UNIFORM}};
  CHECK(build(&c, RLX_OP_Fft, NULL, NULL, 1, a, 0));
  if (c.node) expect_declined("Fft f64", &c);
  case_free(&c);
}


/* ======================================================================================
 * Accuracy of the f32 activation loops: a dense sweep plus edge values, in ulps of the
 * exact value (computed in double by the reference kernel; 0.5 = correctly rounded). Bounds
 * (docs/cpu-backend.md): Exp 2.5 ulp, Sigmoid 3.5, Silu 4.5, Erf 2, Gelu 6, GeluApprox 32 (its argument
 * 2z is rounded to f32 and e^2z amplifies that by |2z| in the negative tail); HardSwish,
 * HardSigmoid, Relu, Neg, Abs, Sqrt, Recip correctly rounded. Measured where the result is a
 * normal f32; a subnormal result must be within FLT_MIN absolutely (f32 intermediates underflow
 * there), and Silu is measured for x >= -87 (below, sigmoid(x) is an f32 subnormal and the product
 * x * sigmoid(x) keeps only its few bits). GeluApprox is measured where |y| >= 1e-6: below, the
 * reference's own 1 + tanh(z) cancels in double (the fast form x * sigmoid(2z) does not); Gelu
 * likewise (1 + erf against the fast erfc form).
 * ====================================================================================== */

/* |f - r| in ulps of the f32 result r rounds to (0.5 = correctly rounded); results that round
 * to +-inf must match exactly. */
static double ulps(float f, double r) {
  float rf = (float)r;
  if (isnan(r) || isnan(f)) return isnan(r) && isnan(f) ? 0 : INFINITY;
  if (isinf(rf) || isinf(f)) return f == rf ? 0 : INFINITY;
  double u = ldexp(1.0, ilogb(rf) - 23);
  return fabs((double)f - r) / u;
}

static void test_activation_ulps(void) {
  struct {
    rlx_act k;
    double bound;
  } kinds[] = {{RLX_ACT_EXP, 2.5},        {RLX_ACT_SIGMOID, 3.5},    {RLX_ACT_SILU, 4.5},
               {RLX_ACT_GELU_APPROX, 32}, {RLX_ACT_HARD_SWISH, 0.5}, {RLX_ACT_HARD_SIGMOID, 0.5},
               {RLX_ACT_RELU, 0},         {RLX_ACT_SQRT, 0.5},       {RLX_ACT_RECIP, 0.5},
               {RLX_ACT_ERF, 2},          {RLX_ACT_NEG, 0},          {RLX_ACT_ABS, 0},
               {RLX_ACT_GELU, 6}};
  size_t n = 400000;
  float *x = malloc((n + 16) * sizeof *x), *y = malloc((n + 16) * sizeof *y);
  double *r = malloc((n + 16) * sizeof *r);
  rlx_tensor tx = {x, SHP(F32, (int64_t)n + 16)}, tr = {r, SHP(F64, (int64_t)n + 16)};
  for (size_t i = 0; i < n; i++) x[i] = (float)(-110.0 + 200.0 * (double)i / (double)n);
  float edge[16] = {0.0f,   -0.0f,  NAN,    INFINITY, -INFINITY, 1e-30f, -1e-30f, 1e-45f,
                    88.72f, 88.73f, -87.5f, -103.9f,  -104.5f,   3.0f,   -3.0f,   6.0f};
  memcpy(x + n, edge, sizeof edge);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    rlx_graph *g;
    rlx_id xi, yi;
    CHECK_OK(rlx_graph_create(NULL, "ulps", &g));
    CHECK_OK(rlx_input(g, "x", SHP(F64, (int64_t)n + 16), &xi));
    CHECK_OK(rlx_activation(g, kinds[k].k, xi, &yi));
    /* the reference in double, on the f32 inputs widened */
    double *xd = malloc((n + 16) * sizeof *xd);
    for (size_t i = 0; i < n + 16; i++) xd[i] = x[i];
    rlx_tensor txd = {xd, tr.shape};
    rlx_cpu_ctx c1 = {.threads = 1};
    CHECK_OK(rlx_cpu_ref_table[RLX_OP_Activation](rlx_graph_node(g, yi), &txd, 1, &tr, &c1));
    fk_act_f32(kinds[k].k, x, y, n + 16);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n + 16; i++) {
      if ((kinds[k].k == RLX_ACT_GELU_APPROX || kinds[k].k == RLX_ACT_GELU) && fabs(r[i]) < 1e-6) continue;
      if (kinds[k].k == RLX_ACT_SILU && x[i] < -87.0f) continue; /* sigmoid(x) is subnormal */
      if (isfinite(r[i]) && fabs(r[i]) < 1.17549435e-38) {
        CHECK_MSG(fabs((double)y[i] - r[i]) < 1.17549435e-38, "%s: x = %.9g gives %.9g, not %.9g",
                  rlx_enum_act.names[kinds[k].k], (double)x[i], (double)y[i], r[i]);
        continue;
      }
      double u = ulps(y[i], r[i]);
      if (u > worst) worst = u, at = i;
    }
    fprintf(stderr, "  %s: max %.2f ulp (at x = %.9g)\n", rlx_enum_act.names[kinds[k].k], worst, (double)x[at]);
    CHECK_MSG(worst <= kinds[k].bound, "%s: %.2f ulp at x = %.9g (fast %.9g, double %.17g); bound %.0f",
              rlx_enum_act.names[kinds[k].k], worst, (double)x[at], (double)y[at], r[at], kinds[k].bound);
    free(xd);
    rlx_graph_free(g);
  }
  (void)tx;
  free(x);
  free(y);
  free(r);
}

/* The vector forms of Gelu (gelu_avx2.c, gelu_avx512.c), Erf and Exp (gelu_avx2.c) against the
 * scalar path's el_geluf / el_erff / el_expf loops, bit for bit, on a dense sweep, the edges and
 * every tail length (the masked last vector); each form only where this CPU runs it. The path is
 * forced to scalar for the reference and restored. */
static void test_gelu_paths(void) {
#define GP_EDGES 30
  size_t n = 200000 + GP_EDGES;
  float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref), *y = malloc(n * sizeof *y);
  CHECK(x && ref && y);
  if (!x || !ref || !y) goto done;
  for (size_t i = 0; i < n; i++) x[i] = (float)(-20.0 + 40.0 * (double)i / (double)n);
  float edge[GP_EDGES] = {0.0f,  -0.0f,  NAN,   INFINITY, -INFINITY, 1e-30f, -1e-30f, 1e-45f,   15.0f,   -15.0f,
                          15.5f, -15.5f, 0.70f, 0.75f,    -0.75f,    -0.71f, 0.7071f, -0.7072f, 3.47f,   -3.472f,
                          10.0f, -10.5f, 1e30f, 88.72f,   88.73f,    89.5f,  -87.5f,  -103.9f,  -104.5f, -110.0f};
  memcpy(x + n - GP_EDGES, edge, sizeof edge);
  static const struct {
    rlx_act kind;
    fk_isa needs;
    void (*fn)(const float *, float *, size_t);
    const char *name;
  } forms[] = {{RLX_ACT_GELU, FK_ISA_AVX2, fk_gelu_avx2, "Gelu avx2"},
               {RLX_ACT_GELU, FK_ISA_AVX512, fk_gelu_avx512, "Gelu avx512"},
               {RLX_ACT_ERF, FK_ISA_AVX2, fk_erf_avx2, "Erf avx2"},
               {RLX_ACT_EXP, FK_ISA_AVX2, fk_exp_avx2, "Exp avx2"}};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    const char *saved = getenv("RLX_CPU_ISA");
    char *keep = saved ? strdup(saved) : NULL;
    setenv("RLX_CPU_ISA", "scalar", 1);
    CHECK_OK(fk_isa_configure());
    fk_act_f32(forms[f].kind, x, ref, n);
    if (keep)
      setenv("RLX_CPU_ISA", keep, 1);
    else
      unsetenv("RLX_CPU_ISA");
    free(keep);
    CHECK_OK(fk_isa_configure());
    if (fk_isa_cpu() < forms[f].needs) continue;
    size_t bad = 0, at = 0;
    forms[f].fn(x, y, n);
    for (size_t i = 0; i < n; i++)
      if (memcmp(&y[i], &ref[i], 4) != 0 && !(isnan(y[i]) && isnan(ref[i]))) at = bad++ ? at : i;
    for (size_t len = 1; len <= 40; len++) { /* tails: a start off the vector grid, len elements */
      float t[40];
      forms[f].fn(x + n - GP_EDGES - len, t, len);
      for (size_t i = 0; i < len; i++) bad += memcmp(&t[i], &ref[n - GP_EDGES - len + i], 4) != 0;
    }
    CHECK_MSG(bad == 0, "%s: %zu results differ from the scalar path's (first at x = %.9g: %.9g, not %.9g)",
              forms[f].name, bad, (double)x[at], (double)y[at], (double)ref[at]);
  }
done:
  free(x);
  free(ref);
  free(y);
#undef GP_EDGES
}

/* ======================================================================================
 * Attention, LayerNorm
 * ====================================================================================== */

static void attention_case(const char *name, int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t D, rlx_mask mk,
                           bool scale, fill_kind f) {
  char what[200];
  tcase c;
  targ args[4] = {{SHP(F32, B, H, Sq, D), f},
                  {SHP(F32, B, H, Sk, D), FILL_UNIFORM},
                  {SHP(F32, B, H, Sk, D), FILL_UNIFORM},
                  {SHP(F32, B, H, Sq, Sk), FILL_UNIFORM}};
  rlx_attrs_Attention a = {.num_heads = H,
                           .head_dim = D,
                           .v_head_dim = {.has = false},
                           .mask_kind = mk,
                           .window = 0,
                           .score_scale = {.has = scale, .v = 0.3f},
                           .attn_logit_softcap = {.has = false}};
  snprintf(what, sizeof what, "Attention %s", name);
  CHECK(build(&c, RLX_OP_Attention, &a, NULL, mk == RLX_MASK_BIAS ? 4 : 3, args, 0));
  if (c.node) run_case(what, &c, 1e-5, 1e-6);
  case_free(&c);
}

static void test_attention_norm(void) {
  attention_case("no mask", 2, 3, 5, 7, 4, RLX_MASK_NONE, false, FILL_UNIFORM);
  attention_case("bias, score scale", 2, 4, 9, 9, 8, RLX_MASK_BIAS, true, FILL_UNIFORM);
  attention_case("causal, Sk > Sq", 1, 2, 6, 11, 5, RLX_MASK_CAUSAL, false, FILL_UNIFORM);
  attention_case("bert-sized, two query blocks", 1, 12, 100, 100, 32, RLX_MASK_BIAS, true, FILL_UNIFORM);
  attention_case("NaN queries", 1, 2, 4, 6, 3, RLX_MASK_NONE, false, FILL_SPECIAL);
  tcase c;
  /* declined: the [B, S, H, D] layout (dim 1 != num_heads) and a softcap */
  targ bshd[3] = {
      {SHP(F32, 1, 5, 2, 4), FILL_UNIFORM}, {SHP(F32, 1, 5, 2, 4), FILL_UNIFORM}, {SHP(F32, 1, 5, 2, 4), FILL_UNIFORM}};
  rlx_attrs_Attention a = {.num_heads = 2,
                           .head_dim = 4,
                           .v_head_dim = {.has = false},
                           .mask_kind = RLX_MASK_NONE,
                           .window = 0,
                           .score_scale = {.has = false},
                           .attn_logit_softcap = {.has = false}};
  CHECK(build(&c, RLX_OP_Attention, &a, NULL, 3, bshd, 0));
  if (c.node) expect_declined("Attention BSHD", &c);
  case_free(&c);
  a.num_heads = 5;
  a.attn_logit_softcap = (rlx_of32){.has = true, .v = 5.0f};
  CHECK(build(&c, RLX_OP_Attention, &a, NULL, 3, bshd, 0));
  if (c.node) expect_declined("Attention softcap", &c);
  case_free(&c);

  const struct {
    const char *name;
    rlx_shape x, g;
    fill_kind f;
  } ln[] = {
      {"rows of 384", SHP(F32, 2, 13, 384), SHP(F32, 384), FILL_UNIFORM},
      {"odd width", SHP(F32, 7, 5), SHP(F32, 5), FILL_WIDE},
      {"rank 1", SHP(F32, 19), SHP(F32, 19), FILL_UNIFORM},
      {"gamma [1, 1, D]", SHP(F32, 3, 4, 10), SHP(F32, 1, 1, 10), FILL_UNIFORM},
      {"specials", SHP(F32, 6, 9), SHP(F32, 9), FILL_SPECIAL},
  };
  for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++) {
    char what[200];
    targ args[3] = {{ln[i].x, ln[i].f}, {ln[i].g, FILL_UNIFORM}, {ln[i].g, FILL_UNIFORM}};
    rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
    snprintf(what, sizeof what, "LayerNorm %s", ln[i].name);
    CHECK(build(&c, RLX_OP_LayerNorm, &la, NULL, 3, args, 0));
    if (c.node) run_case(what, &c, 2e-5, 2e-6);
    if (c.node) same_bits_on_scalar(what, &c);
    case_free(&c);
  }
  targ ln64[3] = {{SHP(F64, 3, 4), FILL_UNIFORM}, {SHP(F64, 4), FILL_UNIFORM}, {SHP(F64, 4), FILL_UNIFORM}};
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  CHECK(build(&c, RLX_OP_LayerNorm, &la, NULL, 3, ln64, 0));
  if (c.node) expect_declined("LayerNorm f64", &c);
  case_free(&c);
}

int main(void) {
  CHECK_OK(fk_isa_configure()); /* RLX_CPU_ISA: scripts/test_isa.sh runs every path */
  fprintf(stderr, "fast kernels on the %s path\n", fk_isa_name(fk_isa_active()));
  for (int t = 1; t <= 3; t++) CHECK_OK(rlx_cpu_pool_create(t, &pools[t]));
  test_matmul();
  test_matmul_packed();
  test_gemm_packed_api();
  test_transpose();
  test_expand();
  test_conv();
  test_pool();
  test_binary();
  test_activation();
  test_activation_ulps();
  test_gelu_paths();
  test_backward_act();
  test_where_cast();
  test_region();
  test_reduce();
  test_softmax();
  test_fft();
  test_attention_norm();
  test_executor(false);
  test_executor(true);
  for (int t = 1; t <= 3; t++) rlx_cpu_pool_free(pools[t]);
  return rlx_test_finish("test_fast_vs_ref");
}
