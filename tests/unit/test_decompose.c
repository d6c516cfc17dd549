/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions: for each one, a small graph holding the composite op is legalized against
 * the CPU's claims minus that op; the result must be fully claimed, verify, and compute (run on
 * the CPU) the values worked out here with plain loops from the op's definition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "passes/passes.h"
#include "rlx/session.h"
#include "rlx_test.h"
#include "core/elem.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define OPS(...) (rlx_op[]){__VA_ARGS__}, (uint32_t)(sizeof((rlx_op[]){__VA_ARGS__}) / sizeof(rlx_op))

/* ---- harness ---- */

typedef struct tin {
  const char *name;
  rlx_shape shape;
  const void *data;
} tin;

static bool all_claimed(const rlx_graph *g, const uint8_t *claimed) {
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (!claimed[n->op]) return false;
    const rlx_graph *bodies[3] = {NULL, NULL, NULL};
    if (n->op == RLX_OP_If) bodies[0] = n->attrs.If.then_branch, bodies[1] = n->attrs.If.else_branch;
    if (n->op == RLX_OP_While) bodies[0] = n->attrs.While.cond, bodies[1] = n->attrs.While.body;
    if (n->op == RLX_OP_Scan) bodies[0] = n->attrs.Scan.body;
    for (int b = 0; b < 3; b++)
      if (bodies[b] && !all_claimed(bodies[b], claimed)) return false;
  }
  return true;
}

/* Legalizes g against the CPU claims minus `without`, checks the result is claimed, verifies and
 * that each removed kind was decomposed, then runs it on the CPU and compares output 0 with
 * `expect` (|got - want| <= tol * (1 + |want|); infinities and NaN must match exactly). */
static void check_run(const char *what, rlx_graph *g, const rlx_op *without, uint32_t n_without, const tin *ins,
                      uint32_t n_ins, const double *expect, size_t n_expect, double tol) {
  uint8_t claimed[RLX_OP_COUNT] = {0};
  uint32_t n_cpu;
  const rlx_op *cpu = rlx_cpu_claim_list(&n_cpu);
  for (uint32_t i = 0; i < n_cpu; i++) claimed[cpu[i]] = 1;
  for (uint32_t i = 0; i < n_without; i++) claimed[without[i]] = 0;
  rlx_dispatch_report rep;
  rlx_graph *lg = NULL;
  rlx_status s = rlx_legalize(g, claimed, NULL, &rep, &lg);
  CHECK_MSG(s == RLX_OK, "%s: legalize: %s", what, rlx_last_error());
  if (s) {
    rlx_graph_free(g);
    return;
  }
  CHECK_MSG(all_claimed(lg, claimed), "%s: unclaimed nodes remain", what);
  s = rlx_verify(lg);
  CHECK_MSG(s == RLX_OK, "%s: verify: %s", what, rlx_last_error());
  for (uint32_t i = 0; i < n_without; i++)
    if (rep.count[without[i]])
      CHECK_MSG(rep.path[without[i]] == RLX_PATH_DECOMPOSED, "%s: %s not reported decomposed", what,
                rlx_op_name(without[i]));
  rlx_executable *e = NULL;
  s = rlx_compile(lg, "cpu", NULL, &e);
  CHECK_MSG(s == RLX_OK, "%s: compile: %s", what, rlx_last_error());
  if (!s) {
    rlx_named_tensor nt[16];
    for (uint32_t i = 0; i < n_ins; i++) nt[i] = (rlx_named_tensor){ins[i].name, {(void *)ins[i].data, ins[i].shape}};
    const rlx_tensor *outs = NULL;
    uint32_t n_out = 0;
    s = rlx_executable_run(e, nt, n_ins, &outs, &n_out);
    CHECK_MSG(s == RLX_OK, "%s: run: %s", what, rlx_last_error());
    if (!s) {
      size_t numel = 0;
      rlx_shape_numel(&outs[0].shape, &numel);
      CHECK_MSG(numel == n_expect, "%s: %zu elements, expected %zu", what, numel, n_expect);
      int bad = 0;
      for (size_t i = 0; i < numel && i < n_expect && bad < 4; i++) {
        double got = rlx_elem_get(outs[0].data, (rlx_dtype)outs[0].shape.dtype, i), want = expect[i];
        bool ok = isnan(want) ? isnan(got) : isinf(want) ? got == want : fabs(got - want) <= tol * (1 + fabs(want));
        if (!ok) bad++;
        CHECK_MSG(ok, "%s: element %zu is %.9g, expected %.9g", what, i, got, want);
      }
    }
  }
  rlx_executable_free(e);
  rlx_graph_free(lg);
  rlx_graph_free(g);
}

static rlx_graph *G(void) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  return g;
}

static rlx_id inp(rlx_graph *g, const char *name, rlx_shape s) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_input(g, name, s, &id));
  return id;
}

static rlx_id op(rlx_graph *g, rlx_op k, const rlx_id *in, uint32_t n, const void *attrs) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_graph_add(g, k, in, n, attrs, NULL, NULL, &id));
  return id;
}

static void out1(rlx_graph *g, rlx_id id) { CHECK_OK(rlx_graph_set_outputs(g, &id, 1)); }

/* Deterministic values in [-1, 1). */
static void fill(float *p, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

/* ---- elementwise ---- */

static void test_fma_clamp(void) {
  float a[6], b[3], c[2];
  fill(a, 6, 1), fill(b, 3, 2), fill(c, 2, 3);
  double want[6];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) want[i * 3 + j] = (double)a[i * 3 + j] * b[j] + c[i];
  rlx_graph *g = G();
  rlx_id in[3] = {inp(g, "a", SH(F32, 2, 3)), inp(g, "b", SH(F32, 3)), inp(g, "c", SH(F32, 2, 1))};
  out1(g, op(g, RLX_OP_Fma, in, 3, NULL));
  tin ti[3] = {{"a", SH(F32, 2, 3), a}, {"b", SH(F32, 3), b}, {"c", SH(F32, 2, 1), c}};
  check_run("Fma", g, OPS(RLX_OP_Fma), ti, 3, want, 6, 1e-6);

  float x[7] = {-3, -1, -0.5f, 0, 0.5f, 1, 3};
  double cw[7] = {-0.75, -0.75, -0.5, 0, 0.5, 0.9f, 0.9f};
  g = G();
  rlx_id xi = inp(g, "x", SH(F32, 7));
  rlx_attrs_Clamp ca = {.min = -0.75f, .max = 0.9f};
  out1(g, op(g, RLX_OP_Clamp, &xi, 1, &ca));
  check_run("Clamp", g, OPS(RLX_OP_Clamp), (tin[]){{"x", SH(F32, 7), x}}, 1, cw, 7, 0);

  /* integers keep the integral bounds inside [min, max]: [0.5, 3.7] -> [1, 3] */
  int32_t xi32[6] = {-3, -1, 0, 1, 2, 5};
  double iw[6] = {1, 1, 1, 1, 2, 3};
  g = G();
  xi = inp(g, "x", SH(I32, 6));
  rlx_attrs_Clamp cb = {.min = 0.5f, .max = 3.7f};
  out1(g, op(g, RLX_OP_Clamp, &xi, 1, &cb));
  check_run("Clamp i32", g, OPS(RLX_OP_Clamp), (tin[]){{"x", SH(I32, 6), xi32}}, 1, iw, 6, 0);
}

/* PerBatch, 4 bits, channel axis 0 of [2, 4]: s = max|row| / 7, out = clamp(rint(x/s), -7, 7) * s with
 * ties to even (row 1 is built so that x/s hits 2.5 and -0.5 exactly). */
static void test_fake_quantize(void) {
  float x[8] = {0.3f, -0.9f, 0.05f, 0.61f, 7.0f, 2.5f, -0.5f, 1.0f};
  double want[8];
  for (int r = 0; r < 2; r++) {
    float amax = 0;
    for (int j = 0; j < 4; j++) amax = fmaxf(amax, fabsf(x[r * 4 + j]));
    float s = fmaxf(amax / 7.0f, 1e-12f);
    for (int j = 0; j < 4; j++) {
      float q = nearbyintf(x[r * 4 + j] / s);
      q = fminf(fmaxf(q, -7.0f), 7.0f);
      want[r * 4 + j] = q * s;
    }
  }
  CHECK(want[5] == 2.0 && want[6] == 0.0); /* 2.5 -> 2 and -0.5 -> -0 (half to even) */
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 2, 4));
  rlx_attrs_FakeQuantize fa;
  rlx_attrs_init(RLX_OP_FakeQuantize, &fa);
  fa.bits = 4;
  fa.axis = 0;
  out1(g, op(g, RLX_OP_FakeQuantize, &xi, 1, &fa));
  check_run("FakeQuantize", g, OPS(RLX_OP_FakeQuantize, RLX_OP_Clamp), (tin[]){{"x", SH(F32, 2, 4), x}}, 1, want, 8,
            1e-6);
}

/* ---- linear algebra ---- */

static void test_dot_general(void) {
  /* lhs [3, 2, 4] batch axis 1, contract axis 2; rhs [4, 2, 5] batch axis 1, contract axis 0:
   * out[b, i, j] = sum_k lhs[i, b, k] * rhs[k, b, j], shape [2, 3, 5]. */
  float l[24], r[40];
  fill(l, 24, 4), fill(r, 40, 5);
  double want[30];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 5; j++) {
        double acc = 0;
        for (int k = 0; k < 4; k++) acc += (double)l[(i * 2 + b) * 4 + k] * r[(k * 2 + b) * 5 + j];
        want[(b * 3 + i) * 5 + j] = acc;
      }
  rlx_graph *g = G();
  rlx_id in[2] = {inp(g, "l", SH(F32, 3, 2, 4)), inp(g, "r", SH(F32, 4, 2, 5))};
  rlx_attrs_DotGeneral da = {.lhs_contracting = {.v = (int64_t[]){2}, .n = 1},
                             .rhs_contracting = {.v = (int64_t[]){0}, .n = 1},
                             .lhs_batch = {.v = (int64_t[]){1}, .n = 1},
                             .rhs_batch = {.v = (int64_t[]){1}, .n = 1}};
  out1(g, op(g, RLX_OP_DotGeneral, in, 2, &da));
  check_run("DotGeneral batched", g, OPS(RLX_OP_DotGeneral),
            (tin[]){{"l", SH(F32, 3, 2, 4), l}, {"r", SH(F32, 4, 2, 5), r}}, 2, want, 30, 1e-5);

  /* No batch, two contracted axes paired out of order: lhs [2, 3, 4] contracts (0, 2), rhs [4, 5, 2]
   * contracts (2, 0): out[i, j] = sum_{a, c} lhs[a, i, c] * rhs[c, j, a]. */
  float r2[40];
  fill(r2, 40, 6);
  double w2[15];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      double acc = 0;
      for (int a = 0; a < 2; a++)
        for (int c = 0; c < 4; c++) acc += (double)l[(a * 3 + i) * 4 + c] * r2[(c * 5 + j) * 2 + a];
      w2[i * 5 + j] = acc;
    }
  g = G();
  rlx_id in2[2] = {inp(g, "l", SH(F32, 2, 3, 4)), inp(g, "r", SH(F32, 4, 5, 2))};
  rlx_attrs_DotGeneral db = {.lhs_contracting = {.v = (int64_t[]){0, 2}, .n = 2},
                             .rhs_contracting = {.v = (int64_t[]){2, 0}, .n = 2},
                             .lhs_batch = {.v = NULL, .n = 0},
                             .rhs_batch = {.v = NULL, .n = 0}};
  out1(g, op(g, RLX_OP_DotGeneral, in2, 2, &db));
  check_run("DotGeneral two contractions", g, OPS(RLX_OP_DotGeneral),
            (tin[]){{"l", SH(F32, 2, 3, 4), l}, {"r", SH(F32, 4, 5, 2), r2}}, 2, w2, 15, 1e-5);
}

/* ---- normalisation ---- */

static void test_group_norm(void) {
  enum { N = 2, C = 4, H = 2, W = 3, Gr = 2 };
  float x[N * C * H * W], gm[C], bt[C];
  fill(x, sizeof x / 4, 7), fill(gm, C, 8), fill(bt, C, 9);
  double want[N * C * H * W];
  const double eps = 1e-5;
  for (int n = 0; n < N; n++)
    for (int gr = 0; gr < Gr; gr++) {
      double sum = 0, sq = 0;
      int cnt = 0;
      for (int c = gr * (C / Gr); c < (gr + 1) * (C / Gr); c++)
        for (int k = 0; k < H * W; k++) sum += x[(n * C + c) * H * W + k], cnt++;
      double mean = sum / cnt;
      for (int c = gr * (C / Gr); c < (gr + 1) * (C / Gr); c++)
        for (int k = 0; k < H * W; k++) sq += pow(x[(n * C + c) * H * W + k] - mean, 2);
      double inv = 1.0 / sqrt(sq / cnt + eps);
      for (int c = gr * (C / Gr); c < (gr + 1) * (C / Gr); c++)
        for (int k = 0; k < H * W; k++) {
          int i = (n * C + c) * H * W + k;
          want[i] = (x[i] - mean) * inv * gm[c] + bt[c];
        }
    }
  rlx_graph *g = G();
  rlx_id in[3] = {inp(g, "x", SH(F32, N, C, H, W)), inp(g, "g", SH(F32, C)), inp(g, "b", SH(F32, C))};
  rlx_attrs_GroupNorm ga = {.num_groups = Gr, .eps = 1e-5f};
  out1(g, op(g, RLX_OP_GroupNorm, in, 3, &ga));
  check_run("GroupNorm", g, OPS(RLX_OP_GroupNorm),
            (tin[]){{"x", SH(F32, N, C, H, W), x}, {"g", SH(F32, C), gm}, {"b", SH(F32, C), bt}}, 3, want,
            N * C * H * W, 1e-5);
}

static void test_batch_norm(void) {
  float x[12], p[4][4];
  fill(x, 12, 10);
  for (int k = 0; k < 4; k++) fill(p[k], 4, 11 + k);
  for (int c = 0; c < 4; c++) p[3][c] = fabsf(p[3][c]) + 0.1f; /* variances */
  double want[12];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 4; c++) want[r * 4 + c] = p[0][c] * (x[r * 4 + c] - p[2][c]) / sqrt(p[3][c] + 1e-3) + p[1][c];
  rlx_graph *g = G();
  /* gamma as [1, 4] (any shape holding C values is accepted) */
  rlx_id in[5] = {inp(g, "x", SH(F32, 3, 4)), inp(g, "g", SH(F32, 1, 4)), inp(g, "b", SH(F32, 4)),
                  inp(g, "m", SH(F32, 4)), inp(g, "v", SH(F32, 4))};
  rlx_attrs_BatchNormInference ba = {.eps = 1e-3f};
  out1(g, op(g, RLX_OP_BatchNormInference, in, 5, &ba));
  check_run("BatchNormInference", g, OPS(RLX_OP_BatchNormInference),
            (tin[]){{"x", SH(F32, 3, 4), x},
                    {"g", SH(F32, 1, 4), p[0]},
                    {"b", SH(F32, 4), p[1]},
                    {"m", SH(F32, 4), p[2]},
                    {"v", SH(F32, 4), p[3]}},
            5, want, 12, 1e-5);
}

/* y = norm(x) * (1 + scale) + shift over the last axis, scale/shift [2, 1, 4] broadcast over S. */
static void test_ada_layer_norm(void) {
  float x[24], sc[8], sh[8];
  fill(x, 24, 20), fill(sc, 8, 21), fill(sh, 8, 22);
  for (int kind = 0; kind < 2; kind++) {
    double want[24];
    for (int b = 0; b < 2; b++)
      for (int s = 0; s < 3; s++) {
        const float *row = x + (b * 3 + s) * 4;
        double mean = 0, ms = 0, var = 0;
        for (int d = 0; d < 4; d++) mean += row[d] / 4.0, ms += row[d] * (double)row[d] / 4.0;
        for (int d = 0; d < 4; d++) var += pow(row[d] - mean, 2) / 4.0;
        for (int d = 0; d < 4; d++) {
          double nv = kind == 0 ? (row[d] - mean) / sqrt(var + 1e-6) : row[d] / sqrt(ms + 1e-6);
          want[(b * 3 + s) * 4 + d] = nv * (1 + sc[b * 4 + d]) + sh[b * 4 + d];
        }
      }
    rlx_graph *g = G();
    rlx_id in[3] = {inp(g, "x", SH(F32, 2, 3, 4)), inp(g, "sc", SH(F32, 2, 1, 4)), inp(g, "sh", SH(F32, 2, 1, 4))};
    rlx_attrs_AdaLayerNorm aa = {.norm = kind == 0 ? RLX_ADA_NORM_LAYER_NORM : RLX_ADA_NORM_RMS_NORM, .eps = 1e-6f};
    out1(g, op(g, RLX_OP_AdaLayerNorm, in, 3, &aa));
    check_run(kind == 0 ? "AdaLayerNorm LN" : "AdaLayerNorm RMS", g, OPS(RLX_OP_AdaLayerNorm),
              (tin[]){{"x", SH(F32, 2, 3, 4), x}, {"sc", SH(F32, 2, 1, 4), sc}, {"sh", SH(F32, 2, 1, 4), sh}}, 3, want,
              24, 1e-5);
  }
}

static void test_gated_residual(void) {
  float x[24], y[24], gt[8];
  fill(x, 24, 23), fill(y, 24, 24), fill(gt, 8, 25);
  double want[24];
  for (int b = 0; b < 2; b++)
    for (int s = 0; s < 3; s++)
      for (int d = 0; d < 4; d++) {
        int i = (b * 3 + s) * 4 + d;
        want[i] = x[i] + (double)gt[b * 4 + d] * y[i];
      }
  rlx_graph *g = G();
  rlx_id in[3] = {inp(g, "x", SH(F32, 2, 3, 4)), inp(g, "y", SH(F32, 2, 3, 4)), inp(g, "g", SH(F32, 2, 1, 4))};
  out1(g, op(g, RLX_OP_GatedResidual, in, 3, NULL));
  check_run("GatedResidual", g, OPS(RLX_OP_GatedResidual),
            (tin[]){{"x", SH(F32, 2, 3, 4), x}, {"y", SH(F32, 2, 3, 4), y}, {"g", SH(F32, 2, 1, 4), gt}}, 3, want, 24,
            1e-6);
}

/* ---- fused matmul / residual / gated MLP ---- */

static void matmul_ref(const float *a, const float *b, double *c, int m, int k, int n) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0;
      for (int p = 0; p < k; p++) acc += (double)a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
}

static void test_fused_matmuls(void) {
  float x[6], w[12], bias[4], a[6], bb[8], r[8];
  fill(x, 6, 30), fill(w, 12, 31), fill(bias, 4, 32), fill(a, 6, 33), fill(bb, 8, 34), fill(r, 8, 35);
  double xw[8], want[8];
  matmul_ref(x, w, xw, 2, 3, 4);
  for (int i = 0; i < 8; i++) want[i] = fmax(0.0, xw[i] + bias[i % 4]);
  rlx_graph *g = G();
  rlx_id in[3] = {inp(g, "x", SH(F32, 2, 3)), inp(g, "w", SH(F32, 3, 4)), inp(g, "b", SH(F32, 4))};
  rlx_attrs_FusedMatMulBiasAct fa = {.activation = RLX_ACT_RELU};
  out1(g, op(g, RLX_OP_FusedMatMulBiasAct, in, 3, &fa));
  tin t3[3] = {{"x", SH(F32, 2, 3), x}, {"w", SH(F32, 3, 4), w}, {"b", SH(F32, 4), bias}};
  check_run("FusedMatMulBiasAct", g, OPS(RLX_OP_FusedMatMulBiasAct), t3, 3, want, 8, 1e-5);

  /* a [2, 3] @ w [3, 4] + residual [2, 4] */
  for (int i = 0; i < 8; i++) want[i] = xw[i] + r[i];
  g = G();
  rlx_id in2[3] = {inp(g, "x", SH(F32, 2, 3)), inp(g, "w", SH(F32, 3, 4)), inp(g, "r", SH(F32, 2, 4))};
  out1(g, op(g, RLX_OP_FusedMatMulResidual, in2, 3, NULL));
  check_run("FusedMatMulResidual", g, OPS(RLX_OP_FusedMatMulResidual),
            (tin[]){{"x", SH(F32, 2, 3), x}, {"w", SH(F32, 3, 4), w}, {"r", SH(F32, 2, 4), r}}, 3, want, 8, 1e-5);

  /* LoRA: x W + 0.5 (x A) B with A [3, 2], B [2, 4] */
  double xa[4], lora[8];
  matmul_ref(x, a, xa, 2, 3, 2);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      lora[i * 4 + j] = xw[i * 4 + j];
      for (int p = 0; p < 2; p++) lora[i * 4 + j] += 0.5 * xa[i * 2 + p] * bb[p * 4 + j];
    }
  g = G();
  rlx_id in3[4] = {inp(g, "x", SH(F32, 2, 3)), inp(g, "w", SH(F32, 3, 4)), inp(g, "a", SH(F32, 3, 2)),
                   inp(g, "b", SH(F32, 2, 4))};
  rlx_attrs_LoraMatMul la = {.scale = 0.5f};
  out1(g, op(g, RLX_OP_LoraMatMul, in3, 4, &la));
  check_run(
      "LoraMatMul", g, OPS(RLX_OP_LoraMatMul),
      (tin[]){{"x", SH(F32, 2, 3), x}, {"w", SH(F32, 3, 4), w}, {"a", SH(F32, 3, 2), a}, {"b", SH(F32, 2, 4), bb}}, 4,
      lora, 8, 1e-5);
}

/* SwiGLU on [2, 6]: default up = low half, gate = high half; gate_first swaps; cast_to F64. */
static void test_swiglu(void) {
  float x[12];
  fill(x, 12, 40);
  for (int variant = 0; variant < 3; variant++) {
    bool gate_first = variant == 1;
    double want[6];
    for (int r = 0; r < 2; r++)
      for (int j = 0; j < 3; j++) {
        double lo = x[r * 6 + j], hi = x[r * 6 + 3 + j];
        want[r * 3 + j] = gate_first ? silu(lo) * hi : silu(hi) * lo;
      }
    rlx_graph *g = G();
    rlx_id xi = inp(g, "x", SH(F32, 2, 6));
    rlx_attrs_FusedSwiGLU sa = {.cast_to = {.has = variant == 2, .v = RLX_F64}, .gate_first = gate_first};
    rlx_id y = op(g, RLX_OP_FusedSwiGLU, &xi, 1, &sa);
    CHECK(rlx_graph_node(g, y)->shape.dtype == (variant == 2 ? RLX_F64 : RLX_F32));
    out1(g, y);
    const char *names[3] = {"FusedSwiGLU", "FusedSwiGLU gate_first", "FusedSwiGLU cast_to"};
    check_run(names[variant], g, OPS(RLX_OP_FusedSwiGLU), (tin[]){{"x", SH(F32, 2, 6), x}}, 1, want, 6, 1e-6);
  }
}

static double layer_norm_row(const double *h, int d, int n, double eps, const float *gm, const float *bt) {
  double mean = 0, var = 0;
  for (int i = 0; i < n; i++) mean += h[i] / n;
  for (int i = 0; i < n; i++) var += (h[i] - mean) * (h[i] - mean) / n;
  return (h[d] - mean) / sqrt(var + eps) * gm[d] + (bt ? bt[d] : 0.0);
}

static void test_residual_norms(void) {
  float x[8], r[8], b[4], gm[4], bt[4];
  fill(x, 8, 50), fill(r, 8, 51), fill(b, 4, 52), fill(gm, 4, 53), fill(bt, 4, 54);
  double want[8], h[4];
  for (int i = 0; i < 2; i++) {
    for (int d = 0; d < 4; d++) h[d] = (double)x[i * 4 + d] + r[i * 4 + d] + b[d];
    for (int d = 0; d < 4; d++) want[i * 4 + d] = layer_norm_row(h, d, 4, 1e-5, gm, bt);
  }
  rlx_graph *g = G();
  rlx_id in[5] = {inp(g, "x", SH(F32, 2, 4)), inp(g, "r", SH(F32, 2, 4)), inp(g, "b", SH(F32, 4)),
                  inp(g, "g", SH(F32, 4)), inp(g, "t", SH(F32, 4))};
  rlx_attrs_FusedResidualLN la = {.has_bias = true, .eps = 1e-5f};
  out1(g, op(g, RLX_OP_FusedResidualLN, in, 5, &la));
  tin t5[5] = {{"x", SH(F32, 2, 4), x},
               {"r", SH(F32, 2, 4), r},
               {"b", SH(F32, 4), b},
               {"g", SH(F32, 4), gm},
               {"t", SH(F32, 4), bt}};
  check_run("FusedResidualLN", g, OPS(RLX_OP_FusedResidualLN), t5, 5, want, 8, 1e-5);

  /* RmsNorm(x + r) * gamma + beta, no bias operand */
  for (int i = 0; i < 2; i++) {
    double ms = 0;
    for (int d = 0; d < 4; d++) h[d] = (double)x[i * 4 + d] + r[i * 4 + d], ms += h[d] * h[d] / 4;
    for (int d = 0; d < 4; d++) want[i * 4 + d] = h[d] / sqrt(ms + 1e-6) * gm[d] + bt[d];
  }
  g = G();
  rlx_id in2[4] = {inp(g, "x", SH(F32, 2, 4)), inp(g, "r", SH(F32, 2, 4)), inp(g, "g", SH(F32, 4)),
                   inp(g, "t", SH(F32, 4))};
  rlx_attrs_FusedResidualRmsNorm ra = {.has_bias = false, .eps = 1e-6f};
  out1(g, op(g, RLX_OP_FusedResidualRmsNorm, in2, 4, &ra));
  check_run("FusedResidualRmsNorm", g, OPS(RLX_OP_FusedResidualRmsNorm),
            (tin[]){{"x", SH(F32, 2, 4), x}, {"r", SH(F32, 2, 4), r}, {"g", SH(F32, 4), gm}, {"t", SH(F32, 4), bt}}, 4,
            want, 8, 1e-5);
}

/* ---- shape and data movement ---- */

static void test_slice(void) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  struct {
    int64_t axis, start, len, step;
  } cs[] = {{1, 1, 3, 1}, {-1, 4, 3, -1}, {1, 0, 3, 2}, {1, 5, 3, -2}, {0, 1, 1, 1}, {1, 2, 0, 3}};
  for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
    double want[12];
    size_t n = 0;
    bool ax0 = cs[k].axis == 0;
    /* out[r][j] = x[r][start + j*step] (axis 1) or out[j][c] = x[start + j*step][c] (axis 0) */
    if (ax0) {
      for (int64_t j = 0; j < cs[k].len; j++)
        for (int c = 0; c < 6; c++) want[n++] = x[(cs[k].start + j * cs[k].step) * 6 + c];
    } else {
      for (int r = 0; r < 2; r++)
        for (int64_t j = 0; j < cs[k].len; j++) want[n++] = x[r * 6 + cs[k].start + j * cs[k].step];
    }
    rlx_graph *g = G();
    rlx_id xi = inp(g, "x", SH(F32, 2, 6));
    rlx_attrs_Slice sa = {.axis = cs[k].axis, .start = cs[k].start, .len = cs[k].len, .step = cs[k].step};
    out1(g, op(g, RLX_OP_Slice, &xi, 1, &sa));
    char what[64];
    snprintf(what, sizeof what, "Slice step %lld", (long long)cs[k].step);
    check_run(what, g, OPS(RLX_OP_Slice), (tin[]){{"x", SH(F32, 2, 6), x}}, 1, want, n, 0);
  }
}

/* Source index of padded position t on an axis of extent d with `before` cells in front, or -1
 * for a Constant cell. */
static int64_t pad_src(int mode, int64_t t, int64_t d, int64_t before) {
  int64_t i = t - before;
  if (i >= 0 && i < d) return i;
  switch (mode) {
  case RLX_PAD_MODE_REFLECT: return i < 0 ? -i : 2 * (d - 1) - i;
  case RLX_PAD_MODE_REPLICATE: return i < 0 ? 0 : d - 1;
  case RLX_PAD_MODE_CIRCULAR: return ((i % d) + d) % d;
  default: return -1;
  }
}

static void test_pad(void) {
  float x[6] = {1, 2, 3, 4, 5, 6}; /* [2, 3] */
  int64_t pads[4] = {1, 1, 2, 1};  /* axis 0: 1 before, 1 after; axis 1: 2 before, 1 after */
  const char *names[4] = {"Pad Constant", "Pad Reflect", "Pad Replicate", "Pad Circular"};
  for (int mode = 0; mode < 4; mode++) {
    double want[4 * 6];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 6; j++) {
        int64_t si = pad_src(mode, i, 2, 1), sj = pad_src(mode, j, 3, 2);
        want[i * 6 + j] = si < 0 || sj < 0 ? 9.0 : x[si * 3 + sj];
      }
    rlx_graph *g = G();
    rlx_id xi = inp(g, "x", SH(F32, 2, 3));
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 4}, .mode = mode, .value = 9.0f};
    out1(g, op(g, RLX_OP_Pad, &xi, 1, &pa));
    check_run(names[mode], g, OPS(RLX_OP_Pad), (tin[]){{"x", SH(F32, 2, 3), x}}, 1, want, 24, 0);
  }
  CHECK(pad_src(RLX_PAD_MODE_REFLECT, 0, 3, 2) == 2 && pad_src(RLX_PAD_MODE_CIRCULAR, 0, 3, 2) == 1);
}

static void test_tile(void) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  double want[36];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 9; j++) want[i * 9 + j] = x[(i % 2) * 3 + j % 3];
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 2, 3));
  rlx_attrs_Tile ta = {.reps = {.v = (int64_t[]){2, 3}, .n = 2}};
  out1(g, op(g, RLX_OP_Tile, &xi, 1, &ta));
  check_run("Tile", g, OPS(RLX_OP_Tile), (tin[]){{"x", SH(F32, 2, 3), x}}, 1, want, 36, 0);

  /* 70 copies: more than one Concat can take at once. */
  double w2[140];
  for (int i = 0; i < 140; i++) w2[i] = x[i % 2];
  g = G();
  xi = inp(g, "x", SH(F32, 1, 2));
  rlx_attrs_Tile tb = {.reps = {.v = (int64_t[]){70, 1}, .n = 2}};
  out1(g, op(g, RLX_OP_Tile, &xi, 1, &tb));
  check_run("Tile x70", g, OPS(RLX_OP_Tile), (tin[]){{"x", SH(F32, 1, 2), x}}, 1, w2, 140, 0);
}

static void test_trilu(void) {
  float x[24];
  fill(x, 24, 60);
  x[3] = INFINITY; /* (batch 0, row 0, col 3): zeroed by the lower triangle with diagonal 1 */
  double want[24];
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) want[(b * 3 + i) * 4 + j] = j - i <= 1 ? x[(b * 3 + i) * 4 + j] : 0.0;
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 2, 3, 4));
  rlx_attrs_Trilu ta = {.upper = false, .diagonal = 1};
  out1(g, op(g, RLX_OP_Trilu, &xi, 1, &ta));
  check_run("Trilu lower f32", g, OPS(RLX_OP_Trilu), (tin[]){{"x", SH(F32, 2, 3, 4), x}}, 1, want, 24, 0);

  int32_t xi32[9];
  double w2[9];
  for (int i = 0; i < 9; i++) xi32[i] = i + 1;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) w2[i * 3 + j] = j - i >= -1 ? xi32[i * 3 + j] : 0;
  g = G();
  xi = inp(g, "x", SH(I32, 3, 3));
  rlx_attrs_Trilu tb = {.upper = true, .diagonal = -1};
  out1(g, op(g, RLX_OP_Trilu, &xi, 1, &tb));
  check_run("Trilu upper i32", g, OPS(RLX_OP_Trilu), (tin[]){{"x", SH(I32, 3, 3), xi32}}, 1, w2, 9, 0);
}

static void test_roll(void) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  /* shifts (1, -1) on dims (0, 1): out[i][j] = x[(i-1) mod 3][(j+1) mod 4] */
  double want[12];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = x[((i + 2) % 3) * 4 + (j + 1) % 4];
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 3, 4));
  rlx_attrs_Roll ra = {.shifts = {.v = (int64_t[]){1, -1}, .n = 2}, .dims = {.v = (int64_t[]){0, 1}, .n = 2}};
  out1(g, op(g, RLX_OP_Roll, &xi, 1, &ra));
  check_run("Roll", g, OPS(RLX_OP_Roll), (tin[]){{"x", SH(F32, 3, 4), x}}, 1, want, 12, 0);
  /* repeated dim: 5 + 2 = 7 = 3 (mod 4) on the last axis */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = x[i * 4 + (j + 1) % 4];
  g = G();
  xi = inp(g, "x", SH(F32, 3, 4));
  rlx_attrs_Roll rb = {.shifts = {.v = (int64_t[]){5, 2}, .n = 2}, .dims = {.v = (int64_t[]){-1, 1}, .n = 2}};
  out1(g, op(g, RLX_OP_Roll, &xi, 1, &rb));
  check_run("Roll repeated dim", g, OPS(RLX_OP_Roll), (tin[]){{"x", SH(F32, 3, 4), x}}, 1, want, 12, 0);
}

static void test_kv_append(void) {
  float cache[10], row[2] = {100, 200};
  for (int i = 0; i < 10; i++) cache[i] = (float)i;
  for (int pos = 0; pos < 4; pos += 3) {
    double want[8];
    size_t n = 0;
    for (int p = 0; p < pos; p++)
      for (int d = 0; d < 2; d++) want[n++] = cache[p * 2 + d];
    want[n++] = 100, want[n++] = 200;
    rlx_graph *g = G();
    rlx_id in[2] = {inp(g, "c", SH(F32, 1, 5, 2)), inp(g, "r", SH(F32, 1, 1, 2))};
    rlx_attrs_KvAppend ka = {.axis = 1, .pos = pos};
    out1(g, op(g, RLX_OP_KvAppend, in, 2, &ka));
    check_run(pos ? "KvAppend pos 3" : "KvAppend pos 0", g, OPS(RLX_OP_KvAppend),
              (tin[]){{"c", SH(F32, 1, 5, 2), cache}, {"r", SH(F32, 1, 1, 2), row}}, 2, want, n, 0);
  }
}

static void test_resize_nearest(void) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  double want[48];
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 6; j++) want[(c * 4 + i) * 6 + j] = x[(c * 2 + i / 2) * 3 + j / 2];
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 1, 2, 2, 3));
  out1(g, op(g, RLX_OP_ResizeNearest2x, &xi, 1, NULL));
  check_run("ResizeNearest2x", g, OPS(RLX_OP_ResizeNearest2x), (tin[]){{"x", SH(F32, 1, 2, 2, 3), x}}, 1, want, 48, 0);
}

/* ---- scans and histograms ---- */

static void test_cumulative(void) {
  float x[8] = {2, -1, 3, 0.5f, 4, 1, -2, 5};
  for (int kind = 0; kind < 2; kind++)
    for (int excl = 0; excl < 2; excl++) {
      /* along the last axis of [2, 4] */
      double want[8];
      for (int r = 0; r < 2; r++) {
        double acc = kind == 0 ? 1.0 : -INFINITY;
        for (int j = 0; j < 4; j++) {
          double v = x[r * 4 + j];
          if (!excl) acc = kind == 0 ? acc * v : fmax(acc, v);
          want[r * 4 + j] = acc;
          if (excl) acc = kind == 0 ? acc * v : fmax(acc, v);
        }
      }
      rlx_graph *g = G();
      rlx_id xi = inp(g, "x", SH(F32, 2, 4));
      rlx_op k = kind == 0 ? RLX_OP_CumProd : RLX_OP_CumMax;
      rlx_attrs_CumProd ca = {.axis = -1, .exclusive = excl != 0}; /* same layout as CumMax's */
      out1(g, op(g, k, &xi, 1, &ca));
      char what[64];
      snprintf(what, sizeof what, "%s%s", rlx_op_name(k), excl ? " exclusive" : "");
      check_run(what, g, &k, 1, (tin[]){{"x", SH(F32, 2, 4), x}}, 1, want, 8, 1e-6);
    }
  /* CumProd along axis 0 of [4, 2] (the axis is not the last one) */
  double want[8];
  for (int c = 0; c < 2; c++) {
    double acc = 1;
    for (int i = 0; i < 4; i++) acc *= x[i * 2 + c], want[i * 2 + c] = acc;
  }
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 4, 2));
  rlx_attrs_CumProd ca = {.axis = 0, .exclusive = false};
  out1(g, op(g, RLX_OP_CumProd, &xi, 1, &ca));
  check_run("CumProd axis 0", g, OPS(RLX_OP_CumProd), (tin[]){{"x", SH(F32, 4, 2), x}}, 1, want, 8, 1e-6);
  /* CumMax on i32 (identity = INT32_MIN when exclusive) */
  int32_t xi32[4] = {3, -7, 9, 1};
  double wi[4] = {-2147483648.0, 3, 3, 9};
  g = G();
  xi = inp(g, "x", SH(I32, 4));
  rlx_attrs_CumMax cm = {.axis = 0, .exclusive = true};
  out1(g, op(g, RLX_OP_CumMax, &xi, 1, &cm));
  check_run("CumMax i32 exclusive", g, OPS(RLX_OP_CumMax), (tin[]){{"x", SH(I32, 4), xi32}}, 1, wi, 4, 0);
}

static void test_histogram(void) {
  float x[10] = {0.1f, 0.5f, 0.6f, 1.0f, 1.49f, 2.0f, -0.1f, 2.1f, NAN, 1.5f};
  double want[4] = {1, 2, 2, 2}; /* [0,.5) [.5,1) [1,1.5) [1.5,2] */
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 2, 5));
  rlx_attrs_Histogram ha = {.bins = 4, .min = 0.0f, .max = 2.0f};
  out1(g, op(g, RLX_OP_Histogram, &xi, 1, &ha));
  check_run("Histogram", g, OPS(RLX_OP_Histogram), (tin[]){{"x", SH(F32, 2, 5), x}}, 1, want, 4, 0);

  int32_t xi32[6] = {0, 1, 2, 3, 4, 5};
  double w2[2] = {3, 3}; /* edges 0, 2.5, 5: an integer cannot be cast into the wrong bin */
  g = G();
  xi = inp(g, "x", SH(I32, 6));
  rlx_attrs_Histogram hb = {.bins = 2, .min = 0.0f, .max = 5.0f};
  out1(g, op(g, RLX_OP_Histogram, &xi, 1, &hb));
  check_run("Histogram i32", g, OPS(RLX_OP_Histogram), (tin[]){{"x", SH(I32, 6), xi32}}, 1, w2, 2, 0);

  /* Floats next to edges that are not floats themselves: 10 bins over [0, 1] put edge 7 at the
   * double 7 * 0.1 = 0.70000000000000007, which rounds *down* to the float 0.699999988; the float
   * 0.7f (= 0.699999988) therefore belongs to bin 6, its successor to bin 7. */
  float xe[4] = {0.7f, nextafterf(0.7f, 1.0f), 0.3f, nextafterf(0.3f, 0.0f)};
  double w3[10] = {0};
  for (int i = 0; i < 4; i++)
    for (int b = 0; b < 10; b++) {
      double e0 = b * 0.1, e1 = b == 9 ? 1.0 : (b + 1) * 0.1;
      if (xe[i] >= e0 && (xe[i] < e1 || (b == 9 && xe[i] <= e1))) w3[b]++;
    }
  CHECK(w3[6] == 1 && w3[7] == 1 && w3[2] + w3[3] == 2);
  g = G();
  xi = inp(g, "x", SH(F32, 4));
  rlx_attrs_Histogram hc = {.bins = 10, .min = 0.0f, .max = 1.0f};
  out1(g, op(g, RLX_OP_Histogram, &xi, 1, &hc));
  check_run("Histogram edges", g, OPS(RLX_OP_Histogram), (tin[]){{"x", SH(F32, 4), xe}}, 1, w3, 10, 0);
}

/* ---- convolution ---- */

/* Transposed convolution by scattering every input pixel through the kernel:
 * out[n, g*cog + o, iy*s - pb + kh*d, ...] += x[n, g*cig + ci, iy, ix] * w[g*cig + ci, o, kh, kw]. */
static void conv_t_ref(const float *x, const float *w, double *out, int cin, int h, int wd, int cog, int kh, int kw,
                       int groups, const int s[2], const int pb[2], const int d[2], int ho, int wo) {
  int cig = cin / groups;
  memset(out, 0, sizeof(double) * (size_t)(cog * groups * ho * wo));
  for (int g = 0; g < groups; g++)
    for (int ci = 0; ci < cig; ci++)
      for (int o = 0; o < cog; o++)
        for (int iy = 0; iy < h; iy++)
          for (int ix = 0; ix < wd; ix++)
            for (int a = 0; a < kh; a++)
              for (int b = 0; b < kw; b++) {
                int oy = iy * s[0] - pb[0] + a * d[0], ox = ix * s[1] - pb[1] + b * d[1];
                if (oy < 0 || oy >= ho || ox < 0 || ox >= wo) continue;
                int c = g * cig + ci;
                out[((g * cog + o) * ho + oy) * wo + ox] +=
                    (double)x[(c * h + iy) * wd + ix] * w[((c * cog + o) * kh + a) * kw + b];
              }
}

static void test_conv_transpose(void) {
  /* x [1, 4, 3, 3], w [4, 3, 3, 2], groups 2, stride (2, 1), padding 1/0, dilation (1, 2),
   * output_padding (1, 0): out [1, 6, 6, 5]. */
  float x[36], w[72];
  fill(x, 36, 70), fill(w, 72, 71);
  double want[6 * 6 * 5];
  conv_t_ref(x, w, want, 4, 3, 3, 3, 3, 2, 2, (int[]){2, 1}, (int[]){1, 0}, (int[]){1, 2}, 6, 5);
  rlx_graph *g = G();
  rlx_id in[2] = {inp(g, "x", SH(F32, 1, 4, 3, 3)), inp(g, "w", SH(F32, 4, 3, 3, 2))};
  rlx_attrs_ConvTranspose2d ca = {.kernel_size = {.v = (int64_t[]){3, 2}, .n = 2},
                                  .stride = {.v = (int64_t[]){2, 1}, .n = 2},
                                  .padding = {.v = (int64_t[]){1, 0}, .n = 2},
                                  .dilation = {.v = (int64_t[]){1, 2}, .n = 2},
                                  .output_padding = {.v = (int64_t[]){1, 0}, .n = 2},
                                  .groups = 2};
  rlx_id y = op(g, RLX_OP_ConvTranspose2d, in, 2, &ca);
  rlx_shape want_shape = SH(F32, 1, 6, 6, 5);
  CHECK(rlx_shape_equal(&rlx_graph_node(g, y)->shape, &want_shape));
  out1(g, y);
  check_run("ConvTranspose2d", g, OPS(RLX_OP_ConvTranspose2d),
            (tin[]){{"x", SH(F32, 1, 4, 3, 3), x}, {"w", SH(F32, 4, 3, 3, 2), w}}, 2, want, 180, 1e-5);

  /* Asymmetric padding [begin_h, begin_w, end_h, end_w] = [1, 0, 0, 1], stride 2, and the Pad the
   * decomposition emits decomposed as well: out [1, 2, 3, 3]. */
  float x2[4] = {1, 2, 3, 4}, w2[8];
  fill(w2, 8, 72);
  double want2[18];
  conv_t_ref(x2, w2, want2, 1, 2, 2, 2, 2, 2, 1, (int[]){2, 2}, (int[]){1, 0}, (int[]){1, 1}, 3, 3);
  g = G();
  rlx_id in2[2] = {inp(g, "x", SH(F32, 1, 1, 2, 2)), inp(g, "w", SH(F32, 1, 2, 2, 2))};
  rlx_attrs_ConvTranspose2d cb = {.kernel_size = {.v = NULL, .n = 0},
                                  .stride = {.v = (int64_t[]){2, 2}, .n = 2},
                                  .padding = {.v = (int64_t[]){1, 0, 0, 1}, .n = 4},
                                  .dilation = {.v = NULL, .n = 0},
                                  .output_padding = {.v = NULL, .n = 0},
                                  .groups = 1};
  out1(g, op(g, RLX_OP_ConvTranspose2d, in2, 2, &cb));
  check_run("ConvTranspose2d asymmetric", g, OPS(RLX_OP_ConvTranspose2d, RLX_OP_Pad),
            (tin[]){{"x", SH(F32, 1, 1, 2, 2), x2}, {"w", SH(F32, 1, 2, 2, 2), w2}}, 2, want2, 18, 1e-5);
}

static void test_conv_bias_act(void) {
  float x[32], w[54], b[3], r[12];
  fill(x, 32, 73), fill(w, 54, 74), fill(b, 3, 75), fill(r, 12, 76);
  double want[12];
  for (int co = 0; co < 3; co++)
    for (int oy = 0; oy < 2; oy++)
      for (int ox = 0; ox < 2; ox++) {
        double acc = b[co] + r[(co * 2 + oy) * 2 + ox];
        for (int ci = 0; ci < 2; ci++)
          for (int a = 0; a < 3; a++)
            for (int c = 0; c < 3; c++)
              acc += (double)x[(ci * 4 + oy + a) * 4 + ox + c] * w[((co * 2 + ci) * 3 + a) * 3 + c];
        want[(co * 2 + oy) * 2 + ox] = tanh(acc);
      }
  rlx_graph *g = G();
  rlx_id in[4] = {inp(g, "x", SH(F32, 1, 2, 4, 4)), inp(g, "w", SH(F32, 3, 2, 3, 3)), inp(g, "b", SH(F32, 3)),
                  inp(g, "r", SH(F32, 1, 3, 2, 2))};
  rlx_attrs_FusedConvBiasAct fa = {.kernel_size = {.v = (int64_t[]){3, 3}, .n = 2},
                                   .stride = {.v = NULL, .n = 0},
                                   .padding = {.v = NULL, .n = 0},
                                   .dilation = {.v = NULL, .n = 0},
                                   .groups = 1,
                                   .activation = RLX_ACT_TANH,
                                   .has_residual = true};
  out1(g, op(g, RLX_OP_FusedConvBiasAct, in, 4, &fa));
  check_run("FusedConvBiasAct", g, OPS(RLX_OP_FusedConvBiasAct),
            (tin[]){{"x", SH(F32, 1, 2, 4, 4), x},
                    {"w", SH(F32, 3, 2, 3, 3), w},
                    {"b", SH(F32, 3), b},
                    {"r", SH(F32, 1, 3, 2, 2), r}},
            4, want, 12, 1e-5);
}

/* ---- attention and positions ---- */

static void test_axial_rope(void) {
  enum { N = 8, D = 8 }; /* end_x 2, end_y 2, repeat 2, one head of 8 lanes */
  float x[N * D];
  fill(x, N * D, 80);
  double want[N * D];
  const double theta = 100.0;
  for (int t = 0; t < N; t++) {
    int p = t / 2, px = p % 2, py = p / 2;
    for (int half = 0; half < 2; half++)
      for (int c = 0; c < D / 4; c++) {
        int l0 = half * (D / 2) + 2 * c;
        double ang = (half == 0 ? px : py) * pow(theta, -4.0 * c / D);
        double a = x[t * D + l0], b = x[t * D + l0 + 1];
        want[t * D + l0] = a * cos(ang) - b * sin(ang);
        want[t * D + l0 + 1] = b * cos(ang) + a * sin(ang);
      }
  }
  rlx_graph *g = G();
  rlx_id xi = inp(g, "x", SH(F32, 1, N, D));
  rlx_attrs_AxialRope2d aa = {
      .end_x = 2, .end_y = 2, .head_dim = D, .num_heads = 1, .theta = (float)theta, .repeat_factor = 2};
  out1(g, op(g, RLX_OP_AxialRope2d, &xi, 1, &aa));
  check_run("AxialRope2d", g, OPS(RLX_OP_AxialRope2d), (tin[]){{"x", SH(F32, 1, N, D), x}}, 1, want, N * D, 1e-5);
}

/* Reference multi-head self-attention block on one batch row h [S, H*D] (packed heads). */
static void attn_block_ref(const float *h, int S, int H, int D, const float *qkv_w, const float *qkv_b,
                           const float *out_w, const float *out_b, const float *mask, const float *cs, const float *sn,
                           double *out) {
  int W = H * D;
  double qkv[8][24], o[8][8];
  for (int s = 0; s < S; s++)
    for (int j = 0; j < 3 * W; j++) {
      qkv[s][j] = qkv_b ? qkv_b[j] : 0.0;
      for (int p = 0; p < W; p++) qkv[s][j] += (double)h[s * W + p] * qkv_w[p * 3 * W + j];
    }
  if (cs) /* NeoX rope on Q and K, n_rot = D: lane i pairs with i + D/2 */
    for (int s = 0; s < S; s++)
      for (int part = 0; part < 2; part++)
        for (int hh = 0; hh < H; hh++)
          for (int i = 0; i < D / 2; i++) {
            double *v = &qkv[s][part * W + hh * D];
            double c = cs[s * (D / 2) + i], sn_ = sn[s * (D / 2) + i], a = v[i], b = v[i + D / 2];
            v[i] = a * c - b * sn_;
            v[i + D / 2] = b * c + a * sn_;
          }
  for (int hh = 0; hh < H; hh++)
    for (int i = 0; i < S; i++) {
      double sc[8], mx = -INFINITY, sum = 0;
      for (int j = 0; j < S; j++) {
        sc[j] = -INFINITY;
        if (mask[j] < 0.5f) continue;
        sc[j] = 0;
        for (int d = 0; d < D; d++) sc[j] += qkv[i][hh * D + d] * qkv[j][W + hh * D + d];
        sc[j] /= sqrt((double)D);
        mx = fmax(mx, sc[j]);
      }
      for (int j = 0; j < S; j++) sum += sc[j] == -INFINITY ? 0 : exp(sc[j] - mx);
      for (int d = 0; d < D; d++) {
        double acc = 0;
        for (int j = 0; j < S; j++)
          if (sc[j] != -INFINITY) acc += exp(sc[j] - mx) / sum * qkv[j][2 * W + hh * D + d];
        o[i][hh * D + d] = acc;
      }
    }
  for (int s = 0; s < S; s++)
    for (int j = 0; j < W; j++) {
      out[s * W + j] = out_b ? out_b[j] : 0.0;
      for (int p = 0; p < W; p++) out[s * W + j] += o[s][p] * out_w[p * W + j];
    }
}

static void test_attention_block(void) {
  enum { S = 3, H = 2, D = 2, W = 4 };
  float h[S * W], qw[W * 3 * W], qb[3 * W], ow[W * W], ob[W], mask[S] = {1, 0, 1}, cs[S], sn[S];
  fill(h, S * W, 81), fill(qw, W * 3 * W, 82), fill(qb, 3 * W, 83), fill(ow, W * W, 84), fill(ob, W, 85);
  for (int s = 0; s < S; s++) cs[s] = (float)cos(0.7 * s), sn[s] = (float)sin(0.7 * s);
  double want[S * W];
  attn_block_ref(h, S, H, D, qw, qb, ow, ob, mask, cs, sn, want);
  rlx_graph *g = G();
  rlx_id in[8] = {inp(g, "h", SH(F32, 1, S, W)),    inp(g, "qw", SH(F32, W, 3 * W)), inp(g, "ow", SH(F32, W, W)),
                  inp(g, "m", SH(F32, 1, S)),       inp(g, "qb", SH(F32, 3 * W)),    inp(g, "ob", SH(F32, W)),
                  inp(g, "cos", SH(F32, S, D / 2)), inp(g, "sin", SH(F32, S, D / 2))};
  rlx_attrs_FusedAttentionBlock fa = {.num_heads = H, .head_dim = D, .has_bias = true, .has_rope = true};
  out1(g, op(g, RLX_OP_FusedAttentionBlock, in, 8, &fa));
  check_run("FusedAttentionBlock", g, OPS(RLX_OP_FusedAttentionBlock),
            (tin[]){{"h", SH(F32, 1, S, W), h},
                    {"qw", SH(F32, W, 3 * W), qw},
                    {"ow", SH(F32, W, W), ow},
                    {"m", SH(F32, 1, S), mask},
                    {"qb", SH(F32, 3 * W), qb},
                    {"ob", SH(F32, W), ob},
                    {"cos", SH(F32, S, D / 2), cs},
                    {"sin", SH(F32, S, D / 2), sn}},
            8, want, S * W, 1e-5);
}

/* BERT post-norm layer, without biases (8 operands; LayerNorm betas are zero) and with them (14:
 * hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b, ln2_g, ln2_b, mask). */
static void test_transformer_layer(void) {
  enum { S = 2, H = 2, D = 2, W = 4, I = 3 };
  float h[S * W], qw[W * 3 * W], qb[3 * W], ow[W * W], ob[W], g1[W], b1[W], f1[W * I], c1[I], f2[I * W], c2[W], g2[W],
      b2[W], mask[S] = {1, 1};
  fill(h, S * W, 90), fill(qw, W * 3 * W, 91), fill(ow, W * W, 92), fill(g1, W, 93), fill(f1, W * I, 94);
  fill(f2, I * W, 95), fill(g2, W, 96), fill(qb, 3 * W, 97), fill(ob, W, 98), fill(b1, W, 99), fill(c1, I, 100);
  fill(c2, W, 101), fill(b2, W, 102);
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    double att[S * W], want[S * W];
    attn_block_ref(h, S, H, D, qw, with_bias ? qb : NULL, ow, with_bias ? ob : NULL, mask, NULL, NULL, att);
    for (int s = 0; s < S; s++) {
      double r1[W], h1[W], f[I], y[W];
      for (int d = 0; d < W; d++) r1[d] = att[s * W + d] + h[s * W + d];
      for (int d = 0; d < W; d++) h1[d] = layer_norm_row(r1, d, W, 1e-5, g1, with_bias ? b1 : NULL);
      for (int j = 0; j < I; j++) {
        double acc = with_bias ? c1[j] : 0.0;
        for (int p = 0; p < W; p++) acc += h1[p] * f1[p * I + j];
        f[j] = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
      }
      for (int d = 0; d < W; d++) {
        y[d] = h1[d] + (with_bias ? c2[d] : 0.0);
        for (int j = 0; j < I; j++) y[d] += f[j] * f2[j * W + d];
      }
      for (int d = 0; d < W; d++) want[s * W + d] = layer_norm_row(y, d, W, 1e-5, g2, with_bias ? b2 : NULL);
    }
    tin all[14] = {{"h", SH(F32, 1, S, W), h}, {"qw", SH(F32, W, 3 * W), qw}, {"qb", SH(F32, 3 * W), qb},
                   {"ow", SH(F32, W, W), ow},  {"ob", SH(F32, W), ob},        {"g1", SH(F32, W), g1},
                   {"b1", SH(F32, W), b1},     {"f1", SH(F32, W, I), f1},     {"c1", SH(F32, I), c1},
                   {"f2", SH(F32, I, W), f2},  {"c2", SH(F32, W), c2},        {"g2", SH(F32, W), g2},
                   {"b2", SH(F32, W), b2},     {"m", SH(F32, 1, S), mask}};
    static const int no_bias[8] = {0, 1, 3, 5, 7, 9, 11, 13};
    tin used[14];
    uint32_t n = 0;
    for (int i = 0; i < 14; i++)
      if (with_bias) used[n++] = all[i];
    for (int i = 0; i < 8 && !with_bias; i++) used[n++] = all[no_bias[i]];
    rlx_graph *g = G();
    rlx_id in[14];
    for (uint32_t i = 0; i < n; i++) in[i] = inp(g, used[i].name, used[i].shape);
    rlx_attrs_FusedTransformerLayer ta = {.num_heads = H,
                                          .head_dim = D,
                                          .intermediate_size = I,
                                          .eps1 = 1e-5f,
                                          .eps2 = 1e-5f,
                                          .activation = RLX_ACT_GELU,
                                          .has_bias = with_bias != 0};
    out1(g, op(g, RLX_OP_FusedTransformerLayer, in, n, &ta));
    check_run(with_bias ? "FusedTransformerLayer with biases" : "FusedTransformerLayer", g,
              OPS(RLX_OP_FusedTransformerLayer), used, n, want, S * W, 1e-4);
  }
}

/* ---- fusion regions ---- */

static rlx_chain_operand IN(uint32_t i) { return (rlx_chain_operand){0, i}; }
static rlx_chain_operand ST(uint32_t i) { return (rlx_chain_operand){1, i}; }

static void test_regions(void) {
  /* tanh(a * b) > c ? tanh(a * b) : a with a [2, 3], b [3], c [1] */
  float a[6], b[3], c[1] = {0.1f};
  fill(a, 6, 100), fill(b, 3, 101);
  double want[6];
  for (int i = 0; i < 6; i++) {
    double t = tanh((double)a[i] * b[i % 3]);
    want[i] = t > c[0] ? t : a[i];
  }
  rlx_chain_step steps[4] = {
      {RLX_CHAIN_STEP_BINARY, RLX_BINOP_MUL, IN(0), IN(1), {0, 0}},
      {RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_TANH, ST(0), {0, 0}, {0, 0}},
      {RLX_CHAIN_STEP_COMPARE, RLX_CMP_GT, ST(1), IN(2), {0, 0}},
      {RLX_CHAIN_STEP_WHERE, 0, ST(2), ST(1), IN(0)},
  };
  rlx_graph *g = G();
  rlx_id in[3] = {inp(g, "a", SH(F32, 2, 3)), inp(g, "b", SH(F32, 3)), inp(g, "c", SH(F32, 1))};
  rlx_attrs_ElementwiseRegion ea;
  rlx_attrs_init(RLX_OP_ElementwiseRegion, &ea);
  ea.chain = (rlx_chain){.steps = steps, .n = 4};
  ea.num_inputs = 3;
  ea.scalar_input_mask = 4;
  out1(g, op(g, RLX_OP_ElementwiseRegion, in, 3, &ea));
  check_run("ElementwiseRegion", g, OPS(RLX_OP_ElementwiseRegion),
            (tin[]){{"a", SH(F32, 2, 3), a}, {"b", SH(F32, 3), b}, {"c", SH(F32, 1), c}}, 3, want, 6, 1e-6);

  /* ResizeNearest2x prologue on operand 0: out = up2(a) + b, a [1,1,2,2], b [1,1,4,4] */
  float p[4] = {1, 2, 3, 4}, q[16];
  fill(q, 16, 102);
  double w2[16];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) w2[i * 4 + j] = p[(i / 2) * 2 + j / 2] + (double)q[i * 4 + j];
  rlx_chain_step add = {RLX_CHAIN_STEP_BINARY, RLX_BINOP_ADD, IN(0), IN(1), {0, 0}};
  g = G();
  rlx_id in2[2] = {inp(g, "a", SH(F32, 1, 1, 2, 2)), inp(g, "b", SH(F32, 1, 1, 4, 4))};
  rlx_attrs_init(RLX_OP_ElementwiseRegion, &ea);
  ea.chain = (rlx_chain){.steps = &add, .n = 1};
  ea.num_inputs = 2;
  ea.prologue = RLX_PROLOGUE_RESIZE_NEAREST2X;
  ea.prologue_input = 0;
  out1(g, op(g, RLX_OP_ElementwiseRegion, in2, 2, &ea));
  check_run("ElementwiseRegion prologue", g, OPS(RLX_OP_ElementwiseRegion, RLX_OP_ResizeNearest2x),
            (tin[]){{"a", SH(F32, 1, 1, 2, 2), p}, {"b", SH(F32, 1, 1, 4, 4), q}}, 2, w2, 16, 1e-6);

  /* TransformRegion: two nearest 2x steps, 4-D and (through the generic path) 3-D */
  double w3[64];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) w3[i * 8 + j] = p[(i / 4) * 2 + j / 4];
  g = G();
  rlx_id xi = inp(g, "x", SH(F32, 1, 1, 2, 2));
  rlx_attrs_TransformRegion ta = {.steps = {.v = (int64_t[]){0, 0}, .n = 2}, .num_inputs = 1};
  out1(g, op(g, RLX_OP_TransformRegion, &xi, 1, &ta));
  check_run("TransformRegion", g, OPS(RLX_OP_TransformRegion, RLX_OP_ResizeNearest2x),
            (tin[]){{"x", SH(F32, 1, 1, 2, 2), p}}, 1, w3, 64, 0);
  double w4[16];
  for (int bb = 0; bb < 2; bb++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 2; j++) w4[(bb * 4 + i) * 2 + j] = p[bb * 2 + i / 2];
  g = G();
  xi = inp(g, "x", SH(F32, 2, 2, 1));
  rlx_attrs_TransformRegion tb = {.steps = {.v = (int64_t[]){0}, .n = 1}, .num_inputs = 1};
  out1(g, op(g, RLX_OP_TransformRegion, &xi, 1, &tb));
  check_run("TransformRegion rank 3", g, OPS(RLX_OP_TransformRegion), (tin[]){{"x", SH(F32, 2, 2, 1), p}}, 1, w4, 16,
            0);

  /* BatchElementwiseRegion: |x| = max(-x, x) on slices [1, 3] and [2, 3], stacked to [3, 3] */
  float s0[3], s1[6];
  fill(s0, 3, 103), fill(s1, 6, 104);
  double w5[9];
  for (int i = 0; i < 3; i++) w5[i] = fabs(s0[i]);
  for (int i = 0; i < 6; i++) w5[3 + i] = fabs(s1[i]);
  rlx_chain_step bsteps[2] = {{RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_NEG, IN(0), {0, 0}, {0, 0}},
                              {RLX_CHAIN_STEP_BINARY, RLX_BINOP_MAX, ST(0), IN(0), {0, 0}}};
  g = G();
  rlx_id in3[2] = {inp(g, "s0", SH(F32, 1, 3)), inp(g, "s1", SH(F32, 2, 3))};
  rlx_attrs_BatchElementwiseRegion ba;
  rlx_attrs_init(RLX_OP_BatchElementwiseRegion, &ba);
  ba.chain = (rlx_chain){.steps = bsteps, .n = 2};
  ba.num_batch_inputs = 2;
  out1(g, op(g, RLX_OP_BatchElementwiseRegion, in3, 2, &ba));
  check_run("BatchElementwiseRegion", g, OPS(RLX_OP_BatchElementwiseRegion),
            (tin[]){{"s0", SH(F32, 1, 3), s0}, {"s1", SH(F32, 2, 3), s1}}, 2, w5, 9, 0);
}

/* ---- control flow ---- */

/* A body with inputs of `shapes` computing out = a <op> b (b = second input, or constant k). */
static rlx_graph *body2(rlx_graph *parent, const char *name, rlx_shape sa, rlx_binop bop, bool const_b, float k) {
  rlx_graph *b = NULL;
  CHECK_OK(rlx_graph_create_child(parent, name, &b));
  rlx_id x, y, o;
  CHECK_OK(rlx_input(b, "a", sa, &x));
  if (const_b)
    CHECK_OK(rlx_scalar_f32(b, k, &y));
  else
    CHECK_OK(rlx_input(b, "b", sa, &y));
  CHECK_OK(rlx_binary(b, bop, x, y, &o));
  CHECK_OK(rlx_graph_set_outputs(b, &o, 1));
  return b;
}

static void test_if(void) {
  float x[3] = {1, -2, 3};
  for (int branch = 0; branch < 2; branch++) {
    uint8_t pred = branch == 0;
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = pred ? x[i] * 2.0 : x[i] + 10.0;
    rlx_graph *g = G();
    rlx_id in[2] = {inp(g, "p", rlx_shape_scalar(RLX_BOOL)), inp(g, "x", SH(F32, 3))};
    rlx_attrs_If ia = {.then_branch = body2(g, "then", SH(F32, 3), RLX_BINOP_MUL, true, 2.0f),
                       .else_branch = body2(g, "else", SH(F32, 3), RLX_BINOP_ADD, true, 10.0f)};
    out1(g, op(g, RLX_OP_If, in, 2, &ia));
    check_run(pred ? "If true" : "If false", g, OPS(RLX_OP_If),
              (tin[]){{"p", rlx_shape_scalar(RLX_BOOL), &pred}, {"x", SH(F32, 3), x}}, 2, want, 3, 0);
  }
}

/* while (i < 3) { x *= 2; i += 1 } with carried (x, i); the value is x. */
static void test_while(void) {
  float x[2] = {1.5f, -3}, i0 = 0;
  for (int lim = 2; lim <= 5; lim += 3) {
    double want[2];
    int iters = lim < 3 ? lim : 3;
    for (int k = 0; k < 2; k++) want[k] = x[k] * pow(2, iters);
    rlx_graph *g = G(), *cb, *bb;
    rlx_id in[2] = {inp(g, "x", SH(F32, 2)), inp(g, "i", rlx_shape_scalar(RLX_F32))};
    rlx_id bx, bi, t, o[2];
    CHECK_OK(rlx_graph_create_child(g, "cond", &cb));
    CHECK_OK(rlx_input(cb, "x", SH(F32, 2), &bx));
    CHECK_OK(rlx_input(cb, "i", rlx_shape_scalar(RLX_F32), &bi));
    CHECK_OK(rlx_scalar_f32(cb, 3.0f, &t));
    CHECK_OK(rlx_compare(cb, RLX_CMP_LT, bi, t, &t));
    CHECK_OK(rlx_graph_set_outputs(cb, &t, 1));
    CHECK_OK(rlx_graph_create_child(g, "body", &bb));
    CHECK_OK(rlx_input(bb, "x", SH(F32, 2), &bx));
    CHECK_OK(rlx_input(bb, "i", rlx_shape_scalar(RLX_F32), &bi));
    CHECK_OK(rlx_binary(bb, RLX_BINOP_ADD, bx, bx, &o[0]));
    CHECK_OK(rlx_scalar_f32(bb, 1.0f, &t));
    CHECK_OK(rlx_binary(bb, RLX_BINOP_ADD, bi, t, &o[1]));
    CHECK_OK(rlx_graph_set_outputs(bb, o, 2));
    rlx_attrs_While wa = {.cond = cb, .body = bb, .max_iterations = {.has = true, .v = lim}};
    out1(g, op(g, RLX_OP_While, in, 2, &wa));
    check_run(lim == 2 ? "While hits max_iterations" : "While stops on cond", g, OPS(RLX_OP_While),
              (tin[]){{"x", SH(F32, 2), x}, {"i", rlx_shape_scalar(RLX_F32), &i0}}, 2, want, 2, 0);
  }
}

/* carry' = carry * b + xs[t]; final carry, full trajectory, and 2 checkpoints of 4 steps. */
static void test_scan(void) {
  float init[2] = {1, 2}, bc[2] = {0.5f, -1}, xs[8];
  fill(xs, 8, 110);
  double traj[4][2], carry[2] = {init[0], init[1]};
  for (int t = 0; t < 4; t++)
    for (int k = 0; k < 2; k++) carry[k] = (float)((float)(carry[k] * bc[k]) + xs[t * 2 + k]), traj[t][k] = carry[k];
  for (int mode = 0; mode < 3; mode++) {
    double want[8];
    size_t n = 0;
    if (mode == 0) want[n++] = traj[3][0], want[n++] = traj[3][1];
    for (int t = 0; mode == 1 && t < 4; t++) want[n++] = traj[t][0], want[n++] = traj[t][1];
    for (int j = 0; mode == 2 && j < 2; j++) want[n++] = traj[j * 2][0], want[n++] = traj[j * 2][1];
    rlx_graph *g = G(), *b;
    rlx_id in[3] = {inp(g, "init", SH(F32, 2)), inp(g, "b", SH(F32, 2)), inp(g, "xs", SH(F32, 4, 2))};
    rlx_id c, bb, xt, o;
    CHECK_OK(rlx_graph_create_child(g, "step", &b));
    CHECK_OK(rlx_input(b, "carry", SH(F32, 2), &c));
    CHECK_OK(rlx_input(b, "b", SH(F32, 2), &bb));
    CHECK_OK(rlx_input(b, "x", SH(F32, 2), &xt));
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, c, bb, &o));
    CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, o, xt, &o));
    CHECK_OK(rlx_graph_set_outputs(b, &o, 1));
    rlx_attrs_Scan sa = {.body = b,
                         .length = 4,
                         .save_trajectory = mode != 0,
                         .num_bcast = 1,
                         .num_xs = 1,
                         .num_checkpoints = mode == 2 ? 2 : 0};
    out1(g, op(g, RLX_OP_Scan, in, 3, &sa));
    const char *names[3] = {"Scan final carry", "Scan trajectory", "Scan checkpoints"};
    check_run(names[mode], g, OPS(RLX_OP_Scan),
              (tin[]){{"init", SH(F32, 2), init}, {"b", SH(F32, 2), bc}, {"xs", SH(F32, 4, 2), xs}}, 3, want, n, 1e-6);
  }
}

static void test_custom_fn(void) {
  float a[3] = {1, 2, 3}, b[3] = {-1, 0.5f, 4};
  double want[3];
  for (int i = 0; i < 3; i++) want[i] = a[i] * b[i] + a[i];
  rlx_graph *g = G(), *f;
  rlx_id in[2] = {inp(g, "a", SH(F32, 3)), inp(g, "b", SH(F32, 3))};
  rlx_id x, y, o;
  CHECK_OK(rlx_graph_create_child(g, "fwd", &f));
  CHECK_OK(rlx_input(f, "a", SH(F32, 3), &x));
  CHECK_OK(rlx_input(f, "b", SH(F32, 3), &y));
  CHECK_OK(rlx_binary(f, RLX_BINOP_MUL, x, y, &o));
  CHECK_OK(rlx_binary(f, RLX_BINOP_ADD, o, x, &o));
  CHECK_OK(rlx_graph_set_outputs(f, &o, 1));
  rlx_attrs_CustomFn ca = {.fwd_body = f, .vjp_body = NULL, .jvp_body = NULL, .num_inputs = 2};
  rlx_shape os = SH(F32, 3);
  rlx_id out;
  CHECK_OK(rlx_graph_add(g, RLX_OP_CustomFn, in, 2, &ca, &os, "fn", &out));
  out1(g, out);
  check_run("CustomFn", g, OPS(RLX_OP_CustomFn), (tin[]){{"a", SH(F32, 3), a}, {"b", SH(F32, 3), b}}, 2, want, 3, 0);
}

int main(void) {
  test_fma_clamp();
  test_fake_quantize();
  test_dot_general();
  test_group_norm();
  test_batch_norm();
  test_ada_layer_norm();
  test_gated_residual();
  test_fused_matmuls();
  test_swiglu();
  test_residual_norms();
  test_slice();
  test_pad();
  test_tile();
  test_trilu();
  test_roll();
  test_kv_append();
  test_resize_nearest();
  test_cumulative();
  test_histogram();
  test_conv_transpose();
  test_conv_bias_act();
  test_axial_rope();
  test_attention_block();
  test_transformer_layer();
  test_regions();
  test_if();
  test_while();
  test_scan();
  test_custom_fn();
  return rlx_test_finish("decompose");
}
