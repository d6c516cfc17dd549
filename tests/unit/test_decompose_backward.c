/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions of the backward / training ops (src/passes/decompose/backward_*.c): each
 * graph holding one backward op is legalized against the CPU's claims minus that op; the result
 * must be fully claimed, verify, report the op as decomposed, and compute — on the CPU — what the
 * op's reference kernel computes on the same inputs (the kernels themselves are checked against
 * finite differences in test_ref_backward.c). Covers every activation kind, groups > 1, stride > 1,
 * dilation, asymmetric padding, GQA, every mask kind and layout, score_scale / softcap, GroupNorm
 * with N > 1, max-pool ties (first maximum wins in both paths) and Scan sweeps with checkpoints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "passes/passes.h"
#include "rlx/session.h"
#include "rlx_test.h"
#include "core/elem.h"
#include "attr_lists.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define MAX_IN 6

/* One graph input: name, shape and values (converted to the shape's dtype). */
typedef struct tin {
  rlx_shape shape;
  const double *v;
} tin;

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

static bool kinds_claimed(const rlx_graph *g, const uint8_t *claimed) {
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++)
    if (!claimed[rlx_graph_node(g, i)->op]) return false;
  return true;
}

/* Runs g and copies output 0 (as double) into a new array; NULL on failure. */
static double *run(const char *what, const char *path, const rlx_graph *g, const rlx_named_tensor *nt, uint32_t n,
                   size_t *count) {
  rlx_executable *e = NULL;
  double *r = NULL;
  rlx_status s = rlx_compile(g, "cpu", NULL, &e);
  CHECK_MSG(s == RLX_OK, "%s (%s): compile: %s", what, path, rlx_last_error());
  if (!s) {
    const rlx_tensor *outs;
    uint32_t n_out;
    s = rlx_executable_run(e, nt, n, &outs, &n_out);
    CHECK_MSG(s == RLX_OK, "%s (%s): run: %s", what, path, rlx_last_error());
    if (!s) {
      *count = numel(&outs[0].shape);
      r = malloc((*count ? *count : 1) * sizeof *r);
      for (size_t i = 0; i < *count; i++) r[i] = rlx_elem_get(outs[0].data, (rlx_dtype)outs[0].shape.dtype, i);
    }
  }
  rlx_executable_free(e);
  return r;
}

/* Legalizes g without `op`, checks the result, and compares its output with the kernel's. Frees g. */
static void compare(const char *what, rlx_graph *g, rlx_op op, const tin *ins, uint32_t n_ins, double tol) {
  uint8_t claimed[RLX_OP_COUNT] = {0};
  uint32_t n_cpu;
  const rlx_op *cpu = rlx_cpu_claim_list(&n_cpu);
  for (uint32_t i = 0; i < n_cpu; i++) claimed[cpu[i]] = 1;
  CHECK_MSG(claimed[op], "%s: the CPU does not claim %s", what, rlx_op_name(op));
  claimed[op] = 0;
  rlx_dispatch_report rep;
  rlx_graph *lg = NULL;
  rlx_status s = rlx_legalize(g, claimed, NULL, &rep, &lg);
  CHECK_MSG(s == RLX_OK, "%s: legalize: %s", what, rlx_last_error());
  if (s) {
    rlx_graph_free(g);
    return;
  }
  CHECK_MSG(kinds_claimed(lg, claimed), "%s: unclaimed nodes remain", what);
  CHECK_MSG(rep.path[op] == RLX_PATH_DECOMPOSED, "%s: %s not reported decomposed", what, rlx_op_name(op));
  s = rlx_verify(lg);
  CHECK_MSG(s == RLX_OK, "%s: verify: %s", what, rlx_last_error());
  /* Inputs in their dtypes. */
  rlx_named_tensor nt[MAX_IN];
  void *bufs[MAX_IN];
  char names[MAX_IN][16];
  for (uint32_t i = 0; i < n_ins; i++) {
    size_t m = numel(&ins[i].shape);
    bufs[i] = calloc(m ? m : 1, rlx_dtype_size((rlx_dtype)ins[i].shape.dtype));
    for (size_t j = 0; ins[i].v && j < m; j++) rlx_elem_set(bufs[i], (rlx_dtype)ins[i].shape.dtype, j, ins[i].v[j]);
    snprintf(names[i], sizeof names[i], "in%u", i);
    nt[i] = (rlx_named_tensor){names[i], {bufs[i], ins[i].shape}};
  }
  size_t na = 0, nb = 0;
  double *a = run(what, "kernel", g, nt, n_ins, &na);
  double *b = run(what, "decomposed", lg, nt, n_ins, &nb);
  if (a && b) {
    CHECK_MSG(na == nb, "%s: %zu elements from the kernel, %zu decomposed", what, na, nb);
    int bad = 0;
    for (size_t i = 0; i < na && i < nb; i++) {
      bool ok = isnan(a[i]) ? isnan(b[i]) : isinf(a[i]) ? a[i] == b[i] : fabs(a[i] - b[i]) <= tol * (1 + fabs(a[i]));
      if (!ok && bad++ < 4) fprintf(stderr, "  %s: element %zu: kernel %.9g, decomposed %.9g\n", what, i, a[i], b[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d mismatches", what, bad);
  }
  free(a);
  free(b);
  for (uint32_t i = 0; i < n_ins; i++) free(bufs[i]);
  rlx_graph_free(lg);
  rlx_graph_free(g);
}

/* A graph of Inputs in0.. and one node `op` (declared shape optional) as its output. */
static rlx_graph *one_op(rlx_op op, const void *attrs, const rlx_shape *declared, const tin *ins, uint32_t n) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id ids[MAX_IN], y = 0;
  for (uint32_t i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%u", i);
    CHECK_OK(rlx_input(g, name, ins[i].shape, &ids[i]));
  }
  CHECK_OK(rlx_graph_add(g, op, ids, n, attrs, declared, "bw", &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  return g;
}

static void check_op(const char *what, rlx_op op, const void *attrs, const rlx_shape *declared, const tin *ins,
                     uint32_t n, double tol) {
  compare(what, one_op(op, attrs, declared, ins, n), op, ins, n, tol);
}

/* Deterministic values: multiples of 1/32 in [-2, 2], scaled. */
static void fill(double *v, size_t n, uint32_t seed, double scale) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = scale * (double)((int)((s >> 9) % 129u) - 64) / 32.0;
  }
}

static void distinct(double *v, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) v[i] = (double)((i * 7919u + seed * 104729u) % n) / (double)n * 4.0 - 2.0;
}

/* ---- elementwise ---- */

static void test_activation(void) {
  double x[12] = {-2.3, -1.1, -0.45, -0.05, 0, 0.37, 0.81, 1.6, 2.9, -3, 3, 4.5}, dy[12];
  fill(dy, 12, 3, 1);
  for (int k = 0; k < RLX_ACT_COUNT; k++) {
    double xv[12];
    for (int i = 0; i < 12; i++) {
      bool positive = k == RLX_ACT_LOG || k == RLX_ACT_RECIP;
      xv[i] = positive ? fabs(x[i]) + 0.25 : k == RLX_ACT_TAN ? x[i] * 0.3 : x[i];
    }
    if (k == RLX_ACT_SQRT || k == RLX_ACT_RSQRT) xv[1] = -1.0; /* NaN region; 0 stays the guarded case */
    rlx_attrs_ActivationBackward a = {.kind = k};
    tin ins[2] = {{SH(F32, 12), xv}, {SH(F32, 12), dy}};
    char what[64];
    snprintf(what, sizeof what, "ActivationBackward %s", rlx_enum_act.names[k]);
    check_op(what, RLX_OP_ActivationBackward, &a, NULL, ins, 2, 2e-5);
  }
  tin ins[2] = {{SH(F32, 12), x}, {SH(F32, 12), dy}};
  check_op("ReluBackward f32", RLX_OP_ReluBackward, NULL, NULL, ins, 2, 0);
  double xi[5] = {-3, 0, 2, 7, -1}, di[5] = {4, 5, 6, -7, 8};
  tin ii[2] = {{SH(I32, 5), xi}, {SH(I32, 5), di}};
  check_op("ReluBackward i32", RLX_OP_ReluBackward, NULL, NULL, ii, 2, 0);
}

/* ---- losses ---- */

static void test_losses(void) {
  double x[4 * 5], t[20], lab[4] = {4, 0, 2, 2}, dl[4] = {1, -0.5, 2, 0.25};
  fill(x, 20, 5, 1.5);
  fill(t, 20, 6, 0.5);
  tin sce[2] = {{SH(F32, 4, 5), x}, {SH(F32, 4, 5), t}};
  check_op("SoftmaxCrossEntropy", RLX_OP_SoftmaxCrossEntropy, NULL, NULL, sce, 2, 1e-5);
  tin w1[2] = {{SH(F32, 4, 5), x}, {SH(F32, 4), lab}};
  check_op("SoftmaxCrossEntropyWithLogits f32 labels", RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, NULL, w1, 2, 1e-5);
  tin w2[2] = {{SH(F64, 4, 5), x}, {SH(I64, 4), lab}};
  check_op("SoftmaxCrossEntropyWithLogits i64 labels", RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, NULL, w2, 2, 1e-12);
  tin b1[3] = {{SH(F32, 4, 5), x}, {SH(I32, 4), lab}, {SH(F32, 4), dl}};
  check_op("SoftmaxCrossEntropyBackward", RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, b1, 3, 1e-6);
}

/* ---- attention ---- */

typedef struct attn_cfg {
  const char *name;
  rlx_shape q, k, v;
  int64_t heads, D;
  int mask;
  int64_t window;
  rlx_of32 scale, cap;
  rlx_shape mshape;
  const double *mask_v;
} attn_cfg;

static void attention_case(const attn_cfg *c, uint32_t seed) {
  double q[64], k[64], v[64], dy[64];
  fill(q, numel(&c->q), seed, 0.6);
  fill(k, numel(&c->k), seed + 1, 0.6);
  fill(v, numel(&c->v), seed + 2, 1);
  fill(dy, numel(&c->q), seed + 3, 1);
  bool has_mask = c->mask == RLX_MASK_CUSTOM || c->mask == RLX_MASK_BIAS;
  tin ins[5] = {{c->q, q}, {c->k, k}, {c->v, v}, {c->q, dy}, {c->mshape, c->mask_v}};
  for (int w = 0; w < 3; w++) {
    rlx_attrs_AttentionBackward a;
    rlx_attrs_init(RLX_OP_AttentionBackward, &a);
    a.num_heads = c->heads, a.head_dim = c->D, a.mask_kind = c->mask, a.window = c->window;
    a.score_scale = c->scale, a.attn_logit_softcap = c->cap, a.wrt = w;
    char what[128];
    snprintf(what, sizeof what, "AttentionBackward %s wrt %s", c->name, rlx_enum_attn_wrt.names[w]);
    check_op(what, RLX_OP_AttentionBackward, &a, NULL, ins, has_mask ? 5 : 4, 1e-5);
  }
  rlx_attrs_AttentionBackwardAll a;
  rlx_attrs_init(RLX_OP_AttentionBackwardAll, &a);
  a.num_heads = c->heads, a.head_dim = c->D, a.mask_kind = c->mask, a.window = c->window;
  a.score_scale = c->scale, a.attn_logit_softcap = c->cap;
  char what[128];
  snprintf(what, sizeof what, "AttentionBackwardAll %s", c->name);
  check_op(what, RLX_OP_AttentionBackwardAll, &a, NULL, ins, has_mask ? 5 : 4, 1e-5);
}

static void test_attention(void) {
  rlx_of32 none = {.has = false, .v = 0};
  static const double custom2[5] = {1, 0, 1, 1, 0.4};
  static const double custom3[12] = {1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 1};
  static const double cbool[2 * 4] = {1, 0, 1, 1, 0, 1, 1, 0};
  static double bias[48], bias_b[12];
  fill(bias, 48, 99, 0.5);
  fill(bias_b, 12, 98, 0.7);
  rlx_shape nos = SH(F32, 1);
  attn_cfg cfgs[] = {
      {"BHSD none", SH(F32, 1, 2, 3, 4), SH(F32, 1, 2, 3, 4), SH(F32, 1, 2, 3, 4), 2, 4, RLX_MASK_NONE, 0, none, none,
       nos, NULL},
      {"BSHD causal Sk>Sq", SH(F32, 2, 3, 2, 3), SH(F32, 2, 4, 2, 3), SH(F32, 2, 4, 2, 3), 2, 3, RLX_MASK_CAUSAL, 0,
       none, none, nos, NULL},
      {"packed sliding GQA", SH(F32, 1, 4, 8), SH(F32, 1, 4, 4), SH(F32, 1, 4, 4), 4, 2, RLX_MASK_SLIDING_WINDOW, 1,
       none, none, nos, NULL},
      {"rank2 custom [B,Sk] MQA", SH(F32, 3, 6), SH(F32, 5, 2), SH(F32, 5, 2), 3, 2, RLX_MASK_CUSTOM, 0, none, none,
       SH(F32, 1, 5), custom2},
      {"BHSD custom [B,Sq,Sk] scale",
       SH(F32, 1, 2, 3, 2),
       SH(F32, 1, 2, 4, 2),
       SH(F32, 1, 2, 4, 2),
       2,
       2,
       RLX_MASK_CUSTOM,
       0,
       {true, 0.8f},
       none,
       SH(F32, 1, 3, 4),
       custom3},
      {"BSHD bool custom", SH(F32, 2, 3, 2, 2), SH(F32, 2, 4, 2, 2), SH(F32, 2, 4, 2, 2), 2, 2, RLX_MASK_CUSTOM, 0,
       none, none, SH(BOOL, 2, 4), cbool},
      {"BHSD bias softcap GQA",
       SH(F32, 2, 2, 3, 2),
       SH(F32, 2, 1, 4, 2),
       SH(F32, 2, 1, 4, 2),
       2,
       2,
       RLX_MASK_BIAS,
       0,
       none,
       {true, 1.5f},
       SH(F32, 2, 2, 3, 4),
       bias},
      {"BSHD broadcast bias scale softcap",
       SH(F32, 1, 3, 2, 2),
       SH(F32, 1, 4, 2, 2),
       SH(F32, 1, 4, 2, 2),
       2,
       2,
       RLX_MASK_BIAS,
       0,
       {true, 1.7f},
       {true, 0.9f},
       SH(F32, 3, 4),
       bias_b},
  };
  for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) attention_case(&cfgs[i], 200 + 10 * (uint32_t)i);
}

static void test_rope(void) {
  double dy[2 * 3 * 12], cs[9], sn[9], ct[12], st[12];
  fill(dy, 72, 7, 1);
  for (int i = 0; i < 9; i++) cs[i] = cos(0.3 * i + 0.1), sn[i] = sin(0.3 * i + 0.1);
  for (int i = 0; i < 12; i++) ct[i] = cos(0.7 * i), st[i] = sin(0.7 * i);
  for (int style = 0; style < 2; style++) {
    rlx_attrs_RopeBackward a = {.head_dim = 6, .n_rot = 6, .style = style};
    tin ins[3] = {{SH(F32, 2, 3, 12), dy}, {SH(F32, 3, 3), cs}, {SH(F32, 3, 3), sn}};
    check_op(style ? "RopeBackward GptJ" : "RopeBackward NeoX", RLX_OP_RopeBackward, &a, NULL, ins, 3, 1e-6);
    rlx_attrs_RopeBackward b = {.head_dim = 6, .n_rot = 4, .style = style};
    tin ins2[3] = {{SH(F32, 2, 3, 12), dy}, {SH(F32, 6, 2), ct}, {SH(F32, 6, 2), st}};
    check_op(style ? "RopeBackward GptJ per-token n_rot<hd" : "RopeBackward NeoX per-token n_rot<hd",
             RLX_OP_RopeBackward, &b, NULL, ins2, 3, 1e-6);
  }
}

/* ---- normalisations ---- */

static void test_norms(void) {
  double x[30], dy[30], g[5], b[5], m[5], var[5], y[30], sc[10], sh[10], gt[10];
  fill(x, 30, 11, 1);
  fill(dy, 30, 12, 1);
  fill(g, 5, 13, 1);
  fill(b, 5, 14, 1);
  fill(m, 5, 15, 1);
  for (int i = 0; i < 5; i++) var[i] = 0.3 + 0.2 * i;
  fill(y, 30, 16, 1);
  fill(sc, 10, 17, 0.5);
  fill(sh, 10, 18, 0.5);
  fill(gt, 10, 19, 1);
  rlx_shape xs = SH(F32, 2, 3, 5), vs = SH(F32, 5);
  rlx_attrs_LayerNormBackwardInput lbi = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_LayerNormBackwardGamma lbg = {.axis = -1, .eps = 1e-3f};
  tin lbi_in[3] = {{xs, x}, {vs, g}, {xs, dy}}, lbg_in[2] = {{xs, x}, {xs, dy}};
  check_op("LayerNormBackwardInput", RLX_OP_LayerNormBackwardInput, &lbi, NULL, lbi_in, 3, 1e-5);
  check_op("LayerNormBackwardGamma", RLX_OP_LayerNormBackwardGamma, &lbg, NULL, lbg_in, 2, 1e-5);
  tin l1[3] = {{SH(F32, 5), x}, {vs, g}, {SH(F32, 5), dy}}; /* rank 1: no leading axes */
  check_op("LayerNormBackwardGamma rank 1", RLX_OP_LayerNormBackwardGamma, &lbg, NULL, (tin[]){l1[0], l1[2]}, 2, 1e-5);
  rlx_attrs_RmsNormBackwardInput rbi = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_RmsNormBackwardGamma rbg = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_RmsNormBackwardBeta rbb = {.axis = -1, .eps = 1e-3f};
  tin r_in[4] = {{xs, x}, {vs, g}, {vs, b}, {xs, dy}};
  check_op("RmsNormBackwardInput", RLX_OP_RmsNormBackwardInput, &rbi, NULL, r_in, 4, 1e-5);
  check_op("RmsNormBackwardGamma", RLX_OP_RmsNormBackwardGamma, &rbg, NULL, r_in, 4, 1e-5);
  check_op("RmsNormBackwardBeta", RLX_OP_RmsNormBackwardBeta, &rbb, NULL, r_in, 4, 1e-6);
  /* GroupNorm, N = 2 (the reductions run over the batch as well). */
  double gx[72], gdy[72], gg[6], gb[6];
  fill(gx, 72, 21, 1);
  fill(gdy, 72, 22, 1);
  fill(gg, 6, 23, 1);
  fill(gb, 6, 24, 1);
  rlx_shape gxs = SH(F32, 2, 6, 2, 2), gvs = SH(F32, 6);
  rlx_attrs_GroupNormBackwardInput gbi = {.num_groups = 3, .eps = 1e-3f};
  rlx_attrs_GroupNormBackwardGamma gbg = {.num_groups = 3, .eps = 1e-3f};
  rlx_attrs_GroupNormBackwardBeta gbb = {.num_groups = 3, .eps = 1e-3f};
  tin gi[4] = {{gxs, gx}, {gvs, gg}, {gvs, gb}, {gxs, gdy}}, gp[2] = {{gxs, gx}, {gxs, gdy}};
  check_op("GroupNormBackwardInput", RLX_OP_GroupNormBackwardInput, &gbi, NULL, gi, 4, 1e-5);
  check_op("GroupNormBackwardGamma N=2", RLX_OP_GroupNormBackwardGamma, &gbg, NULL, gp, 2, 1e-5);
  check_op("GroupNormBackwardBeta N=2", RLX_OP_GroupNormBackwardBeta, &gbb, NULL, gp, 2, 1e-6);
  tin g3[2] = {{SH(F32, 3, 4, 6), gx}, {SH(F32, 3, 4, 6), gdy}}; /* rank 3 [N, C, L] */
  rlx_attrs_GroupNormBackwardGamma gbg2 = {.num_groups = 2, .eps = 1e-3f};
  check_op("GroupNormBackwardGamma rank 3", RLX_OP_GroupNormBackwardGamma, &gbg2, NULL, g3, 2, 1e-5);
  /* BatchNormInference. */
  rlx_attrs_BatchNormInferenceBackwardInput bbi = {.eps = 1e-3f};
  rlx_attrs_BatchNormInferenceBackwardGamma bbg = {.eps = 1e-3f};
  tin bi[5] = {{xs, x}, {vs, g}, {vs, m}, {vs, var}, {xs, dy}}, bg[4] = {{xs, x}, {vs, m}, {vs, var}, {xs, dy}};
  check_op("BatchNormInferenceBackwardInput", RLX_OP_BatchNormInferenceBackwardInput, &bbi, NULL, bi, 5, 1e-5);
  check_op("BatchNormInferenceBackwardGamma", RLX_OP_BatchNormInferenceBackwardGamma, &bbg, NULL, bg, 4, 1e-5);
  check_op("BatchNormInferenceBackwardBeta", RLX_OP_BatchNormInferenceBackwardBeta, NULL, NULL, (tin[]){{xs, dy}}, 1,
           1e-6);
  /* AdaLayerNorm with [B, 1, D] and [D] modulation. */
  for (int kind = 0; kind < 2; kind++) {
    rlx_attrs_AdaLayerNormBackward a = {.norm = kind, .eps = 1e-3f};
    tin ai[4] = {{xs, x}, {SH(F32, 2, 1, 5), sc}, {SH(F32, 2, 1, 5), sh}, {xs, dy}};
    check_op(kind ? "AdaLayerNormBackward Rms [B,1,D]" : "AdaLayerNormBackward LN [B,1,D]", RLX_OP_AdaLayerNormBackward,
             &a, NULL, ai, 4, 1e-5);
    tin ai2[4] = {{xs, x}, {vs, sc}, {vs, sh}, {xs, dy}};
    check_op(kind ? "AdaLayerNormBackward Rms [D]" : "AdaLayerNormBackward LN [D]", RLX_OP_AdaLayerNormBackward, &a,
             NULL, ai2, 4, 1e-5);
  }
  tin gr[4] = {{xs, x}, {xs, y}, {SH(F32, 2, 1, 5), gt}, {xs, dy}};
  check_op("GatedResidualBackward [B,1,D]", RLX_OP_GatedResidualBackward, NULL, NULL, gr, 4, 1e-6);
  tin gr2[4] = {{xs, x}, {xs, y}, {vs, gt}, {xs, dy}};
  check_op("GatedResidualBackward [D]", RLX_OP_GatedResidualBackward, NULL, NULL, gr2, 4, 1e-6);
}

/* ---- convolution and pooling ---- */

typedef struct conv_cfg {
  const char *name;
  rlx_shape x, w;
  rlx_ilist stride, padding, dilation;
  int64_t groups;
} conv_cfg;

static void conv_case(const conv_cfg *c, uint32_t seed) {
  bool three = c->x.rank == 5;
  /* The forward output shape from the Conv rule. */
  rlx_graph *probe = NULL;
  CHECK_OK(rlx_graph_create(NULL, "probe", &probe));
  rlx_id ids[2], yid;
  CHECK_OK(rlx_input(probe, "x", c->x, &ids[0]));
  CHECK_OK(rlx_input(probe, "w", c->w, &ids[1]));
  if (three) {
    rlx_attrs_Conv3d a = {.stride = c->stride, .padding = c->padding, .dilation = c->dilation, .groups = c->groups};
    CHECK_OK(rlx_build_Conv3d(probe, ids, 2, &a, NULL, &yid));
  } else {
    rlx_attrs_Conv a = {.kernel_size = NOLIST,
                        .stride = c->stride,
                        .padding = c->padding,
                        .dilation = c->dilation,
                        .groups = c->groups};
    CHECK_OK(rlx_build_Conv(probe, ids, 2, &a, NULL, &yid));
  }
  rlx_shape ys = rlx_graph_node(probe, yid)->shape;
  rlx_graph_free(probe);
  double *x = malloc(numel(&c->x) * sizeof *x), *w = malloc(numel(&c->w) * sizeof *w),
         *dy = malloc(numel(&ys) * sizeof *dy);
  fill(x, numel(&c->x), seed, 1);
  fill(w, numel(&c->w), seed + 1, 1);
  fill(dy, numel(&ys), seed + 2, 1);
  int64_t ks[3];
  for (uint32_t i = 2; i < c->w.rank; i++) ks[i - 2] = c->w.dims[i];
  rlx_ilist kl = {.v = ks, .n = c->w.rank - 2u};
  char what[128];
  tin ii[2] = {{ys, dy}, {c->w, w}}, wi[2] = {{c->x, x}, {ys, dy}};
  snprintf(what, sizeof what, "%s backward input", c->name);
  if (three) {
    rlx_attrs_Conv3dBackwardInput a = {
        .kernel_size = kl, .stride = c->stride, .padding = c->padding, .dilation = c->dilation, .groups = c->groups};
    check_op(what, RLX_OP_Conv3dBackwardInput, &a, &c->x, ii, 2, 1e-5);
  } else {
    rlx_attrs_Conv2dBackwardInput a = {
        .kernel_size = kl, .stride = c->stride, .padding = c->padding, .dilation = c->dilation, .groups = c->groups};
    check_op(what, RLX_OP_Conv2dBackwardInput, &a, &c->x, ii, 2, 1e-5);
  }
  snprintf(what, sizeof what, "%s backward weight", c->name);
  if (three) {
    rlx_attrs_Conv3dBackwardWeight a = {
        .kernel_size = kl, .stride = c->stride, .padding = c->padding, .dilation = c->dilation, .groups = c->groups};
    check_op(what, RLX_OP_Conv3dBackwardWeight, &a, NULL, wi, 2, 1e-5);
  } else {
    rlx_attrs_Conv2dBackwardWeight a = {
        .kernel_size = kl, .stride = c->stride, .padding = c->padding, .dilation = c->dilation, .groups = c->groups};
    check_op(what, RLX_OP_Conv2dBackwardWeight, &a, NULL, wi, 2, 1e-5);
  }
  free(x);
  free(w);
  free(dy);
}

static void test_conv(void) {
  conv_cfg cfgs[] = {
      {"conv2d plain", SH(F32, 1, 2, 4, 4), SH(F32, 3, 2, 3, 3), NOLIST, NOLIST, NOLIST, 1},
      {"conv2d stride2 pad1 groups2", SH(F32, 2, 4, 5, 6), SH(F32, 4, 2, 3, 2), IL(2, 2), IL(1, 1), NOLIST, 2},
      {"conv2d asym pad dilation groups3", SH(F32, 1, 6, 5, 5), SH(F32, 3, 2, 2, 3), IL(2, 1), IL(1, 0, 2, 1), IL(1, 2),
       3},
      {"conv2d depthwise dil2 stride3", SH(F32, 2, 3, 7, 5), SH(F32, 3, 1, 2, 2), IL(3, 1), NOLIST, IL(2, 2), 3},
      {"conv3d stride asym pad dil groups2", SH(F32, 2, 4, 4, 5, 4), SH(F32, 2, 2, 2, 2, 3), IL(2, 1, 2),
       IL(1, 0, 1, 0, 1, 1), IL(1, 2, 1), 2},
      {"conv3d plain f64", SH(F64, 1, 1, 3, 3, 3), SH(F64, 2, 1, 2, 2, 2), NOLIST, IL(1, 1, 1), NOLIST, 1},
  };
  for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) conv_case(&cfgs[i], 400 + 10 * (uint32_t)i);
}

static void test_maxpool(void) {
  double x[2 * 2 * 5 * 6], dy[36], same[120];
  distinct(x, 120, 3);
  fill(dy, 36, 31, 1);
  for (int i = 0; i < 120; i++) same[i] = (double)((i / 3) % 4); /* many ties */
  rlx_attrs_MaxPool2dBackward a = {.kernel_size = IL(3, 3), .stride = IL(2, 2), .padding = IL(1, 0, 1, 1)};
  tin ins[2] = {{SH(F32, 2, 2, 5, 6), x}, {SH(F32, 2, 2, 3, 3), dy}};
  check_op("MaxPool2dBackward overlapping asym pad", RLX_OP_MaxPool2dBackward, &a, NULL, ins, 2, 0);
  tin tie[2] = {{SH(F32, 2, 2, 5, 6), same}, {SH(F32, 2, 2, 3, 3), dy}};
  check_op("MaxPool2dBackward ties", RLX_OP_MaxPool2dBackward, &a, NULL, tie, 2, 0);
  rlx_attrs_MaxPool2dBackward d = {.kernel_size = IL(2, 2), .stride = NOLIST, .padding = NOLIST}; /* stride = kernel */
  tin dd[2] = {{SH(F32, 2, 2, 5, 6), same}, {SH(F32, 2, 2, 2, 3), dy}};
  check_op("MaxPool2dBackward default stride ties", RLX_OP_MaxPool2dBackward, &d, NULL, dd, 2, 0);
  double neg[16];
  for (int i = 0; i < 16; i++) neg[i] = -INFINITY; /* all -inf: padding must not win */
  rlx_attrs_MaxPool2dBackward p = {.kernel_size = IL(2, 2), .stride = IL(1, 1), .padding = IL(1, 1)};
  tin ni[2] = {{SH(F64, 1, 1, 4, 4), neg}, {SH(F64, 1, 1, 5, 5), dy}};
  check_op("MaxPool2dBackward -inf with padding", RLX_OP_MaxPool2dBackward, &p, NULL, ni, 2, 0);
  rlx_attrs_MaxPool3dBackward a3 = {.kernel_size = IL(2, 3, 2), .stride = IL(2, 2, 1), .padding = IL(0, 1, 0, 0, 1, 1)};
  double x3[96], s3[96], dy3[24];
  distinct(x3, 96, 9);
  for (int i = 0; i < 96; i++) s3[i] = (double)((i / 5) % 3);
  fill(dy3, 24, 41, 1);
  tin i3[2] = {{SH(F32, 1, 2, 4, 4, 3), x3}, {SH(F32, 1, 2, 2, 2, 3), dy3}};
  check_op("MaxPool3dBackward", RLX_OP_MaxPool3dBackward, &a3, NULL, i3, 2, 0);
  tin t3[2] = {{SH(F32, 1, 2, 4, 4, 3), s3}, {SH(F32, 1, 2, 2, 2, 3), dy3}};
  check_op("MaxPool3dBackward ties", RLX_OP_MaxPool3dBackward, &a3, NULL, t3, 2, 0);
}

/* ---- cumsum, gather ---- */

static void test_cumsum_gather(void) {
  double dy[24], idx[4] = {4, 1, 4, 0}, gdy[24], i0[3] = {2, 0, 2};
  fill(dy, 24, 51, 1);
  fill(gdy, 24, 52, 1);
  for (int axis = -1; axis <= 1; axis++)
    for (int ex = 0; ex < 2; ex++) {
      rlx_attrs_CumsumBackward a = {.axis = axis, .exclusive = ex};
      tin in[1] = {{SH(F32, 2, 3, 4), dy}};
      char what[64];
      snprintf(what, sizeof what, "CumsumBackward axis %d exclusive %d", axis, ex);
      check_op(what, RLX_OP_CumsumBackward, &a, NULL, in, 1, 1e-6);
    }
  rlx_attrs_CumsumBackward ia = {.axis = 0, .exclusive = true};
  double iv[5] = {1, -2, 3, 4, 5};
  check_op("CumsumBackward i64", RLX_OP_CumsumBackward, &ia, NULL, (tin[]){{SH(I64, 5), iv}}, 1, 0);
  rlx_attrs_GatherBackward g1 = {.axis = 1};
  rlx_shape t1 = SH(F32, 2, 5, 3);
  tin gi[2] = {{SH(F32, 2, 2, 2, 3), gdy}, {SH(I64, 2, 2), idx}};
  check_op("GatherBackward axis 1 duplicates", RLX_OP_GatherBackward, &g1, &t1, gi, 2, 1e-6);
  rlx_attrs_GatherBackward g0 = {0};
  rlx_shape t0 = SH(F32, 3, 2);
  tin g0i[2] = {{SH(F32, 3, 2), gdy}, {SH(F32, 3), i0}};
  check_op("GatherBackward axis 0 f32 indices", RLX_OP_GatherBackward, &g0, &t0, g0i, 2, 1e-6);
  rlx_attrs_GatherBackward g2 = {.axis = -1};
  rlx_shape t2 = SH(F32, 2, 3, 4);
  double sidx[1] = {3};
  tin g2i[2] = {{SH(F32, 2, 3), gdy}, {SH(I32), sidx}}; /* scalar index */
  check_op("GatherBackward last axis scalar index", RLX_OP_GatherBackward, &g2, &t2, g2i, 2, 1e-6);
}

/* ---- scan ---- */

static rlx_graph *scan_body(rlx_graph *parent, bool vjp) {
  rlx_graph *b = NULL;
  CHECK_OK(rlx_graph_create_child(parent, vjp ? "vjp" : "step", &b));
  rlx_id c, x, d = 0, t, u, outs[2];
  CHECK_OK(rlx_input(b, "c", SH(F32, 2), &c));
  CHECK_OK(rlx_input(b, "x", SH(F32, 2), &x));
  if (vjp) {
    CHECK_OK(rlx_input(b, "d_output", SH(F32, 2), &d));
    CHECK_OK(rlx_activation(b, RLX_ACT_COS, c, &u));
    CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, x, u, &t));
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, d, t, &outs[0]));
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, d, c, &outs[1]));
    CHECK_OK(rlx_graph_set_outputs(b, outs, 2));
  } else {
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, c, x, &t));
    CHECK_OK(rlx_activation(b, RLX_ACT_SIN, c, &u));
    CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, t, u, &outs[0]));
    CHECK_OK(rlx_graph_set_outputs(b, outs, 1));
  }
  return b;
}

static void scan_case(int64_t L, bool traj, int64_t K, bool xs_grad) {
  int64_t rows = K > 0 && K < L ? K : L;
  double init[2] = {0.3, -0.7}, tr[16], up[16], xs[16];
  fill(tr, (size_t)rows * 2, 61, 0.5);
  fill(up, 16, 62, 1);
  fill(xs, (size_t)L * 2, 63, 0.5);
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "main", &g));
  rlx_id ids[4], y;
  rlx_shape us = traj ? SH(F32, rows, 2) : SH(F32, 2);
  tin ins[4] = {{SH(F32, 2), init}, {SH(F32, rows, 2), tr}, {us, up}, {SH(F32, L, 2), xs}};
  for (uint32_t i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%u", i);
    CHECK_OK(rlx_input(g, name, ins[i].shape, &ids[i]));
  }
  rlx_graph *fwd = K > 0 && K < L ? scan_body(g, false) : NULL;
  rlx_op op = xs_grad ? RLX_OP_ScanBackwardXs : RLX_OP_ScanBackward;
  if (xs_grad) {
    rlx_attrs_ScanBackwardXs a;
    rlx_attrs_init(op, &a);
    a.body_vjp = scan_body(g, true), a.forward_body = fwd, a.length = L, a.save_trajectory = traj, a.num_xs = 1;
    a.num_checkpoints = K, a.xs_idx = 0;
    CHECK_OK(rlx_build_ScanBackwardXs(g, ids, 4, &a, NULL, &y));
  } else {
    rlx_attrs_ScanBackward a;
    rlx_attrs_init(op, &a);
    a.body_vjp = scan_body(g, true), a.forward_body = fwd, a.length = L, a.save_trajectory = traj, a.num_xs = 1;
    a.num_checkpoints = K;
    CHECK_OK(rlx_build_ScanBackward(g, ids, 4, &a, NULL, &y));
  }
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  char what[96];
  snprintf(what, sizeof what, "%s L=%lld traj=%d K=%lld", rlx_op_name(op), (long long)L, traj, (long long)K);
  compare(what, g, op, ins, 4, 1e-5);
}

static void test_scan(void) {
  for (int xs_grad = 0; xs_grad < 2; xs_grad++) {
    scan_case(4, false, 0, xs_grad);
    scan_case(5, true, 0, xs_grad);
    scan_case(7, false, 3, xs_grad);
    scan_case(6, true, 2, xs_grad);
  }
}

int main(void) {
  test_activation();
  test_losses();
  test_attention();
  test_rope();
  test_norms();
  test_conv();
  test_maxpool();
  test_cumsum_gather();
  test_scan();
  return rlx_test_finish("test_decompose_backward");
}
