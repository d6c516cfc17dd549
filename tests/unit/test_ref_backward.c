/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels of the backward / training ops (ref/backward_*.c). Every gradient kernel
 * is checked against central finite differences of its FORWARD op's kernel contracted with dy —
 * the true vector-Jacobian product — in f64, plus hand-worked cases (ties, guards, packing,
 * out-of-range labels) and f32 / f16 / bf16 runs against the f64 result. Covered: groups > 1,
 * stride > 1, dilation, asymmetric padding, GQA, every mask kind and layout, score_scale and
 * softcap, GroupNorm with N > 1, max-pool ties, Scan sweeps with and without checkpoints. */
#include "ref_b_test.h"

/* ---- finite differences of a forward kernel ---- */

/* sum_j w[j] * f(args)_j, running the forward kernel (NAN when it fails). */
static double fwd_dot(rlx_op op, const void *attrs, const rlx_shape *decl, uint32_t n, const rt_arg *args,
                      const double *w) {
  rt c;
  double r = NAN;
  if (rt_build(&c, op, attrs, decl, false, n, args) == RLX_OK && rt_exec(&c) == RLX_OK) {
    r = 0;
    for (size_t j = 0; j < rt_out_n(&c); j++) r += w[j] * rt_out(&c, j);
  }
  rt_free(&c);
  return r;
}

/* g = d/d(args[wrt]) of sum_j w_j f_j by central differences (step h). */
static void fd_grad(rlx_op op, const void *attrs, const rlx_shape *decl, uint32_t n, const rt_arg *args, uint32_t wrt,
                    const double *w, double h, double *g) {
  size_t m = rt_numel(&args[wrt].shape);
  double *v = malloc((m ? m : 1) * sizeof *v);
  memcpy(v, args[wrt].v, m * sizeof *v);
  rt_arg a[RT_MAX_IN];
  memcpy(a, args, n * sizeof *a);
  a[wrt].v = v;
  for (size_t i = 0; i < m; i++) {
    double x0 = v[i];
    v[i] = x0 + h;
    double fp = fwd_dot(op, attrs, decl, n, a, w);
    v[i] = x0 - h;
    double fm = fwd_dot(op, attrs, decl, n, a, w);
    v[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  free(v);
}

/* Runs backward op `bop` and compares its output (from element `offset`, `count` values) with
 * the finite-difference gradient of forward op `fop` w.r.t. its operand `wrt`. */
static void check_vjp(const char *what, rlx_op fop, const void *fattrs, const rlx_shape *fdecl, uint32_t fn,
                      const rt_arg *fargs, uint32_t wrt, const double *w, rlx_op bop, const void *battrs,
                      const rlx_shape *bdecl, uint32_t bn, const rt_arg *bargs, size_t offset, double tol) {
  size_t m = rt_numel(&fargs[wrt].shape);
  double *g = malloc((m ? m : 1) * sizeof *g);
  fd_grad(fop, fattrs, fdecl, fn, fargs, wrt, w, 1e-5, g);
  rt c;
  rlx_status s = rt_build(&c, bop, battrs, bdecl, false, bn, bargs);
  CHECK_MSG(s == RLX_OK, "%s: building %s: %s", what, rlx_op_name(bop), rlx_last_error());
  if (s == RLX_OK) {
    s = rt_exec(&c);
    CHECK_MSG(s == RLX_OK, "%s: running %s: %s", what, rlx_op_name(bop), rlx_last_error());
    int bad = 0;
    for (size_t i = 0; s == RLX_OK && i < m; i++) {
      double got = offset + i < rt_out_n(&c) ? rt_out(&c, offset + i) : NAN;
      if (!rt_close(got, g[i], tol, tol) && bad++ < 4)
        fprintf(stderr, "  %s: element %zu: kernel %.10g, finite differences %.10g\n", what, i, got, g[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d mismatches", what, bad);
  }
  rt_free(&c);
  free(g);
}

/* Runs op in dtype t (its f64 operands converted) and compares with the f64 values want[]. */
static void check_dtype(const char *what, rlx_op op, const void *attrs, const rlx_shape *decl, uint32_t n,
                        const rt_arg *args64, rlx_dtype t, const double *want, size_t count, double tol) {
  rt_arg a[RT_MAX_IN];
  memcpy(a, args64, n * sizeof *a);
  for (uint32_t i = 0; i < n; i++)
    if (a[i].shape.dtype == RLX_F64) a[i].shape.dtype = (uint8_t)t; /* f32 labels stay f32 */
  rlx_shape d;
  if (decl) {
    d = *decl;
    d.dtype = (uint8_t)t;
  }
  rt c;
  rlx_status s = rt_build(&c, op, attrs, decl ? &d : NULL, false, n, a);
  if (s == RLX_OK) s = rt_exec(&c);
  CHECK_MSG(s == RLX_OK, "%s (%s): %s", what, rlx_dtype_name(t), rlx_last_error());
  if (s == RLX_OK) CHECK_MSG(rt_check_out(&c, want, count, tol, tol, __LINE__), "%s in %s", what, rlx_dtype_name(t));
  rt_free(&c);
}

/* f64 output values of op (count elements into out). */
static bool run_values(rlx_op op, const void *attrs, const rlx_shape *decl, uint32_t n, const rt_arg *args, double *out,
                       size_t count) {
  rt c;
  rlx_status s = rt_build(&c, op, attrs, decl, false, n, args);
  if (s == RLX_OK) s = rt_exec(&c);
  CHECK_MSG(s == RLX_OK, "%s: %s", rlx_op_name(op), rlx_last_error());
  bool ok = s == RLX_OK && rt_out_n(&c) == count;
  for (size_t i = 0; ok && i < count; i++) out[i] = rt_out(&c, i);
  rt_free(&c);
  return ok;
}

/* v rounded to dtype t (and back to double). */
static void round_to(rlx_dtype t, const double *v, double *out, size_t n) {
  unsigned char buf[16];
  for (size_t i = 0; i < n; i++) {
    rlx_elem_set(buf, t, 0, v[i]);
    out[i] = rlx_elem_get(buf, t, 0);
  }
}

static void fill(double *v, size_t n, uint32_t seed, double scale) {
  rt_fill(v, n, seed);
  for (size_t i = 0; i < n; i++) v[i] *= scale;
}

/* Distinct values (no ties): a permutation of 0..n-1, scaled and shifted. */
static void distinct(double *v, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) v[i] = (double)((i * 7919u + seed * 104729u) % n) / (double)n * 4.0 - 2.0;
}

/* ======================================================================================
 * Elementwise
 * ====================================================================================== */

static void test_activation(void) {
  static const double xs[8] = {-2.3, -1.1, -0.45, -0.05, 0.37, 0.81, 1.6, 2.9};
  for (int k = 0; k < RLX_ACT_COUNT; k++) {
    double x[8], dy[8], want[8];
    bool positive = k == RLX_ACT_LOG || k == RLX_ACT_SQRT || k == RLX_ACT_RSQRT;
    for (int i = 0; i < 8; i++) {
      x[i] = positive ? fabs(xs[i]) + 0.2 : k == RLX_ACT_TAN ? xs[i] * 0.45 : xs[i];
      dy[i] = 0.25 * (i + 1) - 1.0;
    }
    rlx_attrs_Activation fa = {.kind = k};
    rlx_attrs_ActivationBackward ba = {.kind = k};
    rt_arg fargs[1] = {{SHP(F64, 8), x}};
    rt_arg bargs[2] = {{SHP(F64, 8), x}, {SHP(F64, 8), dy}};
    char what[64];
    snprintf(what, sizeof what, "ActivationBackward %s", rlx_enum_act.names[k]);
    if (k == RLX_ACT_ROUND) { /* straight-through: dx = dy (finite differences would say 0) */
      rt c;
      RT_RUN(&c, ActivationBackward, &ba, NULL, bargs[0], bargs[1]);
      CHECK_OUT(&c, dy, 8, 0, 0);
      rt_free(&c);
      continue;
    }
    check_vjp(what, RLX_OP_Activation, &fa, NULL, 1, fargs, 0, dy, RLX_OP_ActivationBackward, &ba, NULL, 2, bargs, 0,
              2e-6);
    /* f32 / f16 / bf16 against the f64 kernel on the same (rounded) inputs: only the final
     * rounding differs. */
    static const rlx_dtype low[3] = {RLX_F32, RLX_F16, RLX_BF16};
    static const double low_tol[3] = {1e-6, 2e-3, 1e-2};
    for (int d = 0; d < 3; d++) {
      double xr[8], dyr[8];
      round_to(low[d], x, xr, 8);
      round_to(low[d], dy, dyr, 8);
      rt_arg r64[2] = {{SHP(F64, 8), xr}, {SHP(F64, 8), dyr}};
      if (run_values(RLX_OP_ActivationBackward, &ba, NULL, 2, r64, want, 8))
        check_dtype(what, RLX_OP_ActivationBackward, &ba, NULL, 2, r64, low[d], want, 8, low_tol[d]);
    }
  }
  /* Guards and hand-worked values. */
  rt c;
  rlx_attrs_ActivationBackward a = {.kind = RLX_ACT_SQRT};
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F64, 4), VALS(0, -0.0, 4, -1)}, {SHP(F64, 4), VALS(INFINITY, 1, 2, 1)});
  CHECK_OUT(&c, VALS(0, 0, 0.5, NAN), 4, 1e-15, 0); /* 0 where sqrt(x) <= 0 even for dy = inf; NaN for x < 0 */
  rt_free(&c);
  a.kind = RLX_ACT_RSQRT;
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F64, 2), VALS(0, 4)}, {SHP(F64, 2), VALS(1, 16)});
  CHECK_OUT(&c, VALS(0, -1), 2, 1e-15, 0); /* -0.5 * 4^-1.5 * 16 */
  rt_free(&c);
  a.kind = RLX_ACT_ABS;
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F32, 3), VALS(-2, 0, 3)}, {SHP(F32, 3), VALS(5, 5, 5)});
  CHECK_OUT(&c, VALS(-5, 0, 5), 3, 0, 0);
  rt_free(&c);
  a.kind = RLX_ACT_GELU; /* Phi(0) = 0.5; Phi(1) + phi(1) */
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F64, 2), VALS(0, 1)}, {SHP(F64, 2), VALS(2, 1)});
  CHECK_OUT(&c, VALS(1.0, 0.5 * (1 + erf(1 / sqrt(2.0))) + exp(-0.5) / sqrt(2 * 3.14159265358979323846)), 2, 1e-14,
            1e-14);
  rt_free(&c);
  a.kind = RLX_ACT_RELU;
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F64, 3), VALS(-1, 0, 2)}, {SHP(F64, 3), VALS(7, 7, INFINITY)});
  CHECK_OUT(&c, VALS(0, 0, INFINITY), 3, 0, 0);
  rt_free(&c);
  a.kind = RLX_ACT_SIGN;
  RT_RUN(&c, ActivationBackward, &a, NULL, {SHP(F64, 2), VALS(-1, 2)}, {SHP(F64, 2), VALS(3, 4)});
  CHECK_OUT(&c, VALS(0, 0), 2, 0, 0);
  rt_free(&c);
  /* ReluBackward: floats and integers. */
  RT_RUN(&c, ReluBackward, NULL, NULL, {SHP(F32, 4), VALS(-1, 0, 0.5, 3)}, {SHP(F32, 4), VALS(1, 2, 3, 4)});
  CHECK_OUT(&c, VALS(0, 0, 3, 4), 4, 0, 0);
  rt_free(&c);
  RT_RUN(&c, ReluBackward, NULL, NULL, {SHP(I32, 3), VALS(-5, 0, 9)}, {SHP(I32, 3), VALS(10, 11, -12)});
  CHECK_OUT(&c, VALS(0, 0, -12), 3, 0, 0);
  rt_free(&c);
  /* The kernel itself rejects operands that do not fit the node. */
  rlx_shape s3 = SHP(F32, 3);
  CHECK_ERR(RT_RUN_UNCHECKED(&c, ReluBackward, NULL, &s3, {SHP(F32, 3), NULL}, {SHP(F32, 4), NULL}),
            RLX_ERR_INVALID_ARG, "operand 1 (dy)");
  rt_free(&c);
}

/* ======================================================================================
 * Losses
 * ====================================================================================== */

static void test_losses(void) {
  double x[12], t[12], dl[3] = {0.5, -1.25, 2.0};
  fill(x, 12, 11, 1.0);
  for (int i = 0; i < 12; i++) t[i] = (double)((i * 5) % 7) / 7.0;
  /* SoftmaxCrossEntropy values: lse - sum t * x. */
  double want[3];
  for (int r = 0; r < 3; r++) {
    double m = -INFINITY, s = 0, dot = 0;
    for (int c = 0; c < 4; c++) m = fmax(m, x[r * 4 + c]);
    for (int c = 0; c < 4; c++) s += exp(x[r * 4 + c] - m), dot += t[r * 4 + c] * x[r * 4 + c];
    want[r] = m + log(s) - dot;
  }
  rt c;
  RT_RUN(&c, SoftmaxCrossEntropy, NULL, NULL, {SHP(F64, 3, 4), x}, {SHP(F64, 3, 4), t});
  CHECK_OUT(&c, want, 3, 1e-13, 1e-13);
  rt_free(&c);
  /* With labels (f32-encoded and i64): lse - x[label]. */
  double lab[3] = {2, 0, 3};
  for (int r = 0; r < 3; r++) {
    double m = -INFINITY, s = 0;
    for (int cc = 0; cc < 4; cc++) m = fmax(m, x[r * 4 + cc]);
    for (int cc = 0; cc < 4; cc++) s += exp(x[r * 4 + cc] - m);
    want[r] = m + log(s) - x[r * 4 + (int)lab[r]];
  }
  RT_RUN(&c, SoftmaxCrossEntropyWithLogits, NULL, NULL, {SHP(F64, 3, 4), x}, {SHP(F32, 3), lab});
  CHECK_OUT(&c, want, 3, 1e-13, 1e-13);
  rt_free(&c);
  RT_RUN(&c, SoftmaxCrossEntropyWithLogits, NULL, NULL, {SHP(F32, 3, 4), x}, {SHP(I64, 3), lab});
  CHECK_OUT(&c, want, 3, 1e-5, 1e-5);
  rt_free(&c);
  /* Out-of-range and non-integral labels are runtime errors. */
  CHECK_ERR(RT_RUN(&c, SoftmaxCrossEntropyWithLogits, NULL, NULL, {SHP(F32, 3, 4), x}, {SHP(I64, 3), VALS(0, 4, 1)}),
            RLX_ERR_RUNTIME, "out of range");
  rt_free(&c);
  CHECK_ERR(RT_RUN(&c, SoftmaxCrossEntropyWithLogits, NULL, NULL, {SHP(F32, 3, 4), x}, {SHP(F32, 3), VALS(0, -1, 1)}),
            RLX_ERR_RUNTIME, "out of range");
  rt_free(&c);
  CHECK_ERR(RT_RUN(&c, SoftmaxCrossEntropyBackward, NULL, NULL, {SHP(F32, 3, 4), x}, {SHP(F32, 3), VALS(0, 1.5, 1)},
                   {SHP(F32, 3), dl}),
            RLX_ERR_RUNTIME, "not an integer");
  rt_free(&c);
  /* SoftmaxCrossEntropyBackward = VJP of SoftmaxCrossEntropyWithLogits w.r.t. the logits. */
  rt_arg fargs[2] = {{SHP(F64, 3, 4), x}, {SHP(F32, 3), lab}};
  rt_arg bargs[3] = {{SHP(F64, 3, 4), x}, {SHP(F32, 3), lab}, {SHP(F64, 3), dl}};
  check_vjp("SoftmaxCrossEntropyBackward", RLX_OP_SoftmaxCrossEntropyWithLogits, NULL, NULL, 2, fargs, 0, dl,
            RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, 3, bargs, 0, 1e-7);
  double g64[12];
  if (run_values(RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, 3, bargs, g64, 12)) {
    check_dtype("SoftmaxCrossEntropyBackward", RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, 3, bargs, RLX_F32, g64,
                12, 1e-6);
    check_dtype("SoftmaxCrossEntropyBackward", RLX_OP_SoftmaxCrossEntropyBackward, NULL, NULL, 3, bargs, RLX_BF16, g64,
                12, 2e-2);
  }
  /* Hand case: uniform logits, 2 classes: softmax 0.5 each. */
  RT_RUN(&c, SoftmaxCrossEntropyBackward, NULL, NULL, {SHP(F32, 1, 2), VALS(3, 3)}, {SHP(I32, 1), VALS(1)},
         {SHP(F32, 1), VALS(2)});
  CHECK_OUT(&c, VALS(1, -1), 2, 1e-7, 0);
  rt_free(&c);
}

/* ======================================================================================
 * Attention
 * ====================================================================================== */

/* One attention configuration checked for dq, dk, dv (finite differences of Attention) and the
 * packed AttentionBackwardAll. */
typedef struct attn_case {
  const char *name;
  rlx_shape q, k, v;
  int64_t heads, D;
  int mask;
  int64_t window;
  rlx_of32 scale, cap;
  rt_arg mask_arg; /* Custom / Bias operand */
} attn_case;

static void run_attn_case(const attn_case *ac, uint32_t seed) {
  size_t nq = rt_numel(&ac->q), nk = rt_numel(&ac->k), nv = rt_numel(&ac->v);
  double *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
  double *dy = malloc(nq * sizeof *dy), *all = malloc((nq + nk + nv) * sizeof *all);
  fill(q, nq, seed, 0.6);
  fill(k, nk, seed + 1, 0.6);
  fill(v, nv, seed + 2, 1.0);
  fill(dy, nq, seed + 3, 1.0);
  bool has_mask = ac->mask == RLX_MASK_CUSTOM || ac->mask == RLX_MASK_BIAS;
  rlx_attrs_Attention fa;
  rlx_attrs_init(RLX_OP_Attention, &fa);
  fa.num_heads = ac->heads;
  fa.head_dim = ac->D;
  fa.mask_kind = ac->mask;
  fa.window = ac->window;
  fa.score_scale = ac->scale;
  fa.attn_logit_softcap = ac->cap;
  rt_arg fargs[4] = {{ac->q, q}, {ac->k, k}, {ac->v, v}, ac->mask_arg};
  rt_arg bargs[5] = {{ac->q, q}, {ac->k, k}, {ac->v, v}, {ac->q, dy}, ac->mask_arg};
  rlx_attrs_AttentionBackward ba;
  rlx_attrs_init(RLX_OP_AttentionBackward, &ba);
  ba.num_heads = ac->heads;
  ba.head_dim = ac->D;
  ba.mask_kind = ac->mask;
  ba.window = ac->window;
  ba.score_scale = ac->scale;
  ba.attn_logit_softcap = ac->cap;
  rlx_attrs_AttentionBackwardAll aa;
  rlx_attrs_init(RLX_OP_AttentionBackwardAll, &aa);
  aa.num_heads = ac->heads;
  aa.head_dim = ac->D;
  aa.mask_kind = ac->mask;
  aa.window = ac->window;
  aa.score_scale = ac->scale;
  aa.attn_logit_softcap = ac->cap;
  static const char *const wrt_names[3] = {"dq", "dk", "dv"};
  size_t offs[3] = {0, nq, nq + nk};
  for (int w = 0; w < 3; w++) {
    char what[160];
    snprintf(what, sizeof what, "AttentionBackward %s %s", ac->name, wrt_names[w]);
    ba.wrt = w;
    check_vjp(what, RLX_OP_Attention, &fa, NULL, has_mask ? 4 : 3, fargs, (uint32_t)w, dy, RLX_OP_AttentionBackward,
              &ba, NULL, has_mask ? 5 : 4, bargs, 0, 2e-7);
    snprintf(what, sizeof what, "AttentionBackwardAll %s %s", ac->name, wrt_names[w]);
    check_vjp(what, RLX_OP_Attention, &fa, NULL, has_mask ? 4 : 3, fargs, (uint32_t)w, dy, RLX_OP_AttentionBackwardAll,
              &aa, NULL, has_mask ? 5 : 4, bargs, offs[w], 2e-7);
  }
  if (run_values(RLX_OP_AttentionBackwardAll, &aa, NULL, has_mask ? 5 : 4, bargs, all, nq + nk + nv))
    check_dtype(ac->name, RLX_OP_AttentionBackwardAll, &aa, NULL, has_mask ? 5 : 4, bargs, RLX_F32, all, nq + nk + nv,
                1e-5);
  free(q);
  free(k);
  free(v);
  free(dy);
  free(all);
}

static void test_attention(void) {
  rlx_of32 none = {.has = false, .v = 0};
  static double custom2[2 * 5] = {1, 0, 1, 1, 0.4, 0, 1, 1, 0.7, 1};
  static double custom3[1 * 3 * 4] = {1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 1};
  static double bias[2 * 2 * 3 * 4], bias_b[3 * 4];
  fill(bias, 48, 99, 0.5);
  fill(bias_b, 12, 98, 0.7);
  attn_case cases[] = {
      {"BHSD none",
       SHP(F64, 1, 2, 3, 4),
       SHP(F64, 1, 2, 3, 4),
       SHP(F64, 1, 2, 3, 4),
       2,
       4,
       RLX_MASK_NONE,
       0,
       none,
       none,
       {{{0}}, NULL}},
      {"BSHD causal Sk>Sq",
       SHP(F64, 2, 3, 2, 3),
       SHP(F64, 2, 4, 2, 3),
       SHP(F64, 2, 4, 2, 3),
       2,
       3,
       RLX_MASK_CAUSAL,
       0,
       none,
       none,
       {{{0}}, NULL}},
      {"packed sliding GQA",
       SHP(F64, 1, 4, 8),
       SHP(F64, 1, 4, 4),
       SHP(F64, 1, 4, 4),
       4,
       2,
       RLX_MASK_SLIDING_WINDOW,
       1,
       none,
       none,
       {{{0}}, NULL}},
      {"rank2 custom [B,Sk] MQA",
       SHP(F64, 3, 6),
       SHP(F64, 5, 2),
       SHP(F64, 5, 2),
       3,
       2,
       RLX_MASK_CUSTOM,
       0,
       none,
       none,
       {SHP(F64, 1, 5), custom2}},
      {"BHSD custom [B,Sq,Sk] scale",
       SHP(F64, 1, 2, 3, 2),
       SHP(F64, 1, 2, 4, 2),
       SHP(F64, 1, 2, 4, 2),
       2,
       2,
       RLX_MASK_CUSTOM,
       0,
       {true, 0.8f},
       none,
       {SHP(F64, 1, 3, 4), custom3}},
      {"BHSD bias softcap GQA",
       SHP(F64, 2, 2, 3, 2),
       SHP(F64, 2, 1, 4, 2),
       SHP(F64, 2, 1, 4, 2),
       2,
       2,
       RLX_MASK_BIAS,
       0,
       none,
       {true, 1.5f},
       {SHP(F64, 2, 2, 3, 4), bias}},
      {"BSHD broadcast bias scale softcap",
       SHP(F64, 1, 3, 2, 2),
       SHP(F64, 1, 4, 2, 2),
       SHP(F64, 1, 4, 2, 2),
       2,
       2,
       RLX_MASK_BIAS,
       0,
       {true, 1.7f},
       {true, 0.9f},
       {SHP(F64, 3, 4), bias_b}},
  };
  /* custom2 has B = 1 rows for a rank-2 (B = 1) query. */
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_attn_case(&cases[i], 100 + 10 * (uint32_t)i);

  /* A fully masked row (Causal with S_k < S_q would be rejected; a Custom mask of zeros) gives 0. */
  double q[8], k[8], v[8], dy[8];
  fill(q, 8, 1, 1);
  fill(k, 8, 2, 1);
  fill(v, 8, 3, 1);
  fill(dy, 8, 4, 1);
  rlx_attrs_AttentionBackwardAll aa;
  rlx_attrs_init(RLX_OP_AttentionBackwardAll, &aa);
  aa.num_heads = 1;
  aa.head_dim = 4;
  aa.mask_kind = RLX_MASK_CUSTOM;
  rt c;
  double zeros[24] = {0};
  RT_RUN(&c, AttentionBackwardAll, &aa, NULL, {SHP(F32, 1, 1, 2, 4), q}, {SHP(F32, 1, 1, 2, 4), k},
         {SHP(F32, 1, 1, 2, 4), v}, {SHP(F32, 1, 1, 2, 4), dy}, {SHP(BOOL, 1, 2), VALS(0, 0)});
  CHECK_OUT(&c, zeros, 24, 0, 0);
  rt_free(&c);
}

/* ======================================================================================
 * Rope
 * ====================================================================================== */

static void test_rope(void) {
  double x[2 * 3 * 12], dy[72], cs[3 * 3], sn[3 * 3], ct[6 * 2], st[6 * 2];
  fill(x, 72, 5, 1);
  fill(dy, 72, 6, 1);
  for (int i = 0; i < 9; i++) cs[i] = cos(0.3 * i + 0.1), sn[i] = sin(0.3 * i + 0.1);
  for (int i = 0; i < 12; i++) ct[i] = cos(0.7 * i), st[i] = sin(0.7 * i);
  for (int style = 0; style < 2; style++) {
    /* head_dim 6, n_rot 6, position tables [S = 3, 3]. */
    rlx_attrs_Rope fa = {.head_dim = 6, .n_rot = 6, .style = style};
    rlx_attrs_RopeBackward ba = {.head_dim = 6, .n_rot = 6, .style = style};
    rt_arg fargs[3] = {{SHP(F64, 2, 3, 12), x}, {SHP(F64, 3, 3), cs}, {SHP(F64, 3, 3), sn}};
    rt_arg bargs[3] = {{SHP(F64, 2, 3, 12), dy}, {SHP(F64, 3, 3), cs}, {SHP(F64, 3, 3), sn}};
    check_vjp(style ? "RopeBackward GptJ" : "RopeBackward NeoX", RLX_OP_Rope, &fa, NULL, 3, fargs, 0, dy,
              RLX_OP_RopeBackward, &ba, NULL, 3, bargs, 0, 1e-8);
    /* head_dim 6, n_rot 4 (tail passes through), per-token tables [batch*S = 6, 2]. */
    rlx_attrs_Rope fb = {.head_dim = 6, .n_rot = 4, .style = style};
    rlx_attrs_RopeBackward bb = {.head_dim = 6, .n_rot = 4, .style = style};
    rt_arg fargs2[3] = {{SHP(F64, 2, 3, 12), x}, {SHP(F64, 6, 2), ct}, {SHP(F64, 6, 2), st}};
    rt_arg bargs2[3] = {{SHP(F64, 2, 3, 12), dy}, {SHP(F64, 6, 2), ct}, {SHP(F64, 6, 2), st}};
    check_vjp(style ? "RopeBackward GptJ n_rot<hd per-token" : "RopeBackward NeoX n_rot<hd per-token", RLX_OP_Rope, &fb,
              NULL, 3, fargs2, 0, dy, RLX_OP_RopeBackward, &bb, NULL, 3, bargs2, 0, 1e-8);
  }
  /* Hand case: one pair rotated by 90 degrees; the backward rotates back. */
  rlx_attrs_RopeBackward hb = {.head_dim = 2, .n_rot = 2, .style = RLX_ROPE_STYLE_NEOX};
  rt c;
  RT_RUN(&c, RopeBackward, &hb, NULL, {SHP(F32, 1, 2), VALS(1, 2)}, {SHP(F32, 1, 1), VALS(0)},
         {SHP(F32, 1, 1), VALS(1)});
  CHECK_OUT(&c, VALS(2, -1), 2, 1e-7, 0);
  rt_free(&c);
}

/* ======================================================================================
 * Normalisations
 * ====================================================================================== */

static void test_norms(void) {
  double x[2 * 3 * 5], dy[30], g[5], b[5];
  fill(x, 30, 21, 1);
  fill(dy, 30, 22, 1);
  fill(g, 5, 23, 1);
  fill(b, 5, 24, 1);
  rt_arg lnf[3] = {{SHP(F64, 2, 3, 5), x}, {SHP(F64, 5), g}, {SHP(F64, 5), b}};
  /* LayerNorm */
  rlx_attrs_LayerNorm lna = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_LayerNormBackwardInput lbi = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_LayerNormBackwardGamma lbg = {.axis = -1, .eps = 1e-3f};
  rt_arg lbi_args[3] = {lnf[0], lnf[1], {SHP(F64, 2, 3, 5), dy}};
  rt_arg lbg_args[2] = {lnf[0], {SHP(F64, 2, 3, 5), dy}};
  check_vjp("LayerNormBackwardInput", RLX_OP_LayerNorm, &lna, NULL, 3, lnf, 0, dy, RLX_OP_LayerNormBackwardInput, &lbi,
            NULL, 3, lbi_args, 0, 1e-7);
  check_vjp("LayerNormBackwardGamma", RLX_OP_LayerNorm, &lna, NULL, 3, lnf, 1, dy, RLX_OP_LayerNormBackwardGamma, &lbg,
            NULL, 2, lbg_args, 0, 1e-7);
  double want[30];
  if (run_values(RLX_OP_LayerNormBackwardInput, &lbi, NULL, 3, lbi_args, want, 30)) {
    check_dtype("LayerNormBackwardInput", RLX_OP_LayerNormBackwardInput, &lbi, NULL, 3, lbi_args, RLX_F32, want, 30,
                1e-5);
    check_dtype("LayerNormBackwardInput", RLX_OP_LayerNormBackwardInput, &lbi, NULL, 3, lbi_args, RLX_F16, want, 30,
                3e-2);
  }
  /* RmsNorm: x, gamma, beta. */
  rlx_attrs_RmsNorm rna = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_RmsNormBackwardInput rbi = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_RmsNormBackwardGamma rbg = {.axis = -1, .eps = 1e-3f};
  rlx_attrs_RmsNormBackwardBeta rbb = {.axis = -1, .eps = 1e-3f};
  rt_arg rb_args[4] = {lnf[0], lnf[1], lnf[2], {SHP(F64, 2, 3, 5), dy}};
  check_vjp("RmsNormBackwardInput", RLX_OP_RmsNorm, &rna, NULL, 3, lnf, 0, dy, RLX_OP_RmsNormBackwardInput, &rbi, NULL,
            4, rb_args, 0, 1e-7);
  check_vjp("RmsNormBackwardGamma", RLX_OP_RmsNorm, &rna, NULL, 3, lnf, 1, dy, RLX_OP_RmsNormBackwardGamma, &rbg, NULL,
            4, rb_args, 0, 1e-7);
  check_vjp("RmsNormBackwardBeta", RLX_OP_RmsNorm, &rna, NULL, 3, lnf, 2, dy, RLX_OP_RmsNormBackwardBeta, &rbb, NULL, 4,
            rb_args, 0, 1e-7);
  /* GroupNorm with N = 2 (the gamma / beta sums run over the batch too), 6 channels, 3 groups. */
  double gx[2 * 6 * 2 * 2], gdy[48], gg[6], gb[6];
  fill(gx, 48, 31, 1);
  fill(gdy, 48, 32, 1);
  fill(gg, 6, 33, 1);
  fill(gb, 6, 34, 1);
  rlx_attrs_GroupNorm gna = {.num_groups = 3, .eps = 1e-3f};
  rlx_attrs_GroupNormBackwardInput gbi = {.num_groups = 3, .eps = 1e-3f};
  rlx_attrs_GroupNormBackwardGamma gbg = {.num_groups = 3, .eps = 1e-3f};
  rlx_attrs_GroupNormBackwardBeta gbb = {.num_groups = 3, .eps = 1e-3f};
  rt_arg gnf[3] = {{SHP(F64, 2, 6, 2, 2), gx}, {SHP(F64, 6), gg}, {SHP(F64, 6), gb}};
  rt_arg gbi_args[4] = {gnf[0], gnf[1], gnf[2], {SHP(F64, 2, 6, 2, 2), gdy}};
  rt_arg gbp_args[2] = {gnf[0], {SHP(F64, 2, 6, 2, 2), gdy}};
  check_vjp("GroupNormBackwardInput", RLX_OP_GroupNorm, &gna, NULL, 3, gnf, 0, gdy, RLX_OP_GroupNormBackwardInput, &gbi,
            NULL, 4, gbi_args, 0, 1e-7);
  check_vjp("GroupNormBackwardGamma N=2", RLX_OP_GroupNorm, &gna, NULL, 3, gnf, 1, gdy, RLX_OP_GroupNormBackwardGamma,
            &gbg, NULL, 2, gbp_args, 0, 1e-7);
  check_vjp("GroupNormBackwardBeta N=2", RLX_OP_GroupNorm, &gna, NULL, 3, gnf, 2, gdy, RLX_OP_GroupNormBackwardBeta,
            &gbb, NULL, 2, gbp_args, 0, 1e-7);
  /* BatchNormInference (features = last axis). */
  double bm[5], bv[5];
  fill(bm, 5, 41, 1);
  for (int i = 0; i < 5; i++) bv[i] = 0.3 + 0.2 * i;
  rlx_attrs_BatchNormInference bna = {.eps = 1e-3f};
  rlx_attrs_BatchNormInferenceBackwardInput bbi = {.eps = 1e-3f};
  rlx_attrs_BatchNormInferenceBackwardGamma bbg = {.eps = 1e-3f};
  rt_arg bnf[5] = {lnf[0], lnf[1], lnf[2], {SHP(F64, 5), bm}, {SHP(F64, 5), bv}};
  rt_arg bbi_args[5] = {lnf[0], lnf[1], {SHP(F64, 5), bm}, {SHP(F64, 5), bv}, {SHP(F64, 2, 3, 5), dy}};
  rt_arg bbg_args[4] = {lnf[0], {SHP(F64, 5), bm}, {SHP(F64, 5), bv}, {SHP(F64, 2, 3, 5), dy}};
  rt_arg bbb_args[1] = {{SHP(F64, 2, 3, 5), dy}};
  check_vjp("BatchNormInferenceBackwardInput", RLX_OP_BatchNormInference, &bna, NULL, 5, bnf, 0, dy,
            RLX_OP_BatchNormInferenceBackwardInput, &bbi, NULL, 5, bbi_args, 0, 1e-7);
  check_vjp("BatchNormInferenceBackwardGamma", RLX_OP_BatchNormInference, &bna, NULL, 5, bnf, 1, dy,
            RLX_OP_BatchNormInferenceBackwardGamma, &bbg, NULL, 4, bbg_args, 0, 1e-7);
  check_vjp("BatchNormInferenceBackwardBeta", RLX_OP_BatchNormInference, &bna, NULL, 5, bnf, 2, dy,
            RLX_OP_BatchNormInferenceBackwardBeta, NULL, NULL, 1, bbb_args, 0, 1e-7);
  /* AdaLayerNorm: packed dx | dscale | dshift, scale / shift [B, 1, D]. */
  double sc[2 * 5], sh[2 * 5];
  fill(sc, 10, 51, 0.5);
  fill(sh, 10, 52, 0.5);
  for (int kind = 0; kind < 2; kind++) {
    rlx_attrs_AdaLayerNorm ada = {.norm = kind, .eps = 1e-3f};
    rlx_attrs_AdaLayerNormBackward adb = {.norm = kind, .eps = 1e-3f};
    rt_arg af[3] = {lnf[0], {SHP(F64, 2, 1, 5), sc}, {SHP(F64, 2, 1, 5), sh}};
    rt_arg ab[4] = {af[0], af[1], af[2], {SHP(F64, 2, 3, 5), dy}};
    const char *nm = kind ? "AdaLayerNormBackward Rms" : "AdaLayerNormBackward LN";
    for (uint32_t w = 0; w < 3; w++) {
      char what[96];
      snprintf(what, sizeof what, "%s operand %u", nm, w);
      check_vjp(what, RLX_OP_AdaLayerNorm, &ada, NULL, 3, af, w, dy, RLX_OP_AdaLayerNormBackward, &adb, NULL, 4, ab,
                w == 0   ? 0
                : w == 1 ? 30
                         : 40,
                1e-7);
    }
  }
  /* GatedResidual: packed dx | dy_y | dgate, gate [5] broadcast over rows. */
  double y[30], gt[5];
  fill(y, 30, 61, 1);
  fill(gt, 5, 62, 1);
  rt_arg grf[3] = {lnf[0], {SHP(F64, 2, 3, 5), y}, {SHP(F64, 5), gt}};
  rt_arg grb[4] = {grf[0], grf[1], grf[2], {SHP(F64, 2, 3, 5), dy}};
  for (uint32_t w = 0; w < 3; w++) {
    char what[64];
    snprintf(what, sizeof what, "GatedResidualBackward operand %u", w);
    check_vjp(what, RLX_OP_GatedResidual, NULL, NULL, 3, grf, w, dy, RLX_OP_GatedResidualBackward, NULL, NULL, 4, grb,
              w * 30, 1e-7);
  }
  /* Hand case: GroupNorm beta sums over the batch: dy of ones, N = 2, H = W = 1 -> 2 per channel. */
  rt c;
  rlx_attrs_GroupNormBackwardBeta hb = {.num_groups = 1, .eps = 1e-5f};
  RT_RUN(&c, GroupNormBackwardBeta, &hb, NULL, {SHP(F32, 2, 2, 1, 1), VALS(1, 2, 3, 4)},
         {SHP(F32, 2, 2, 1, 1), VALS(1, 1, 1, 1)});
  CHECK_OUT(&c, VALS(2, 2), 2, 0, 0);
  rt_free(&c);
  /* The norm backward ops reject a non-last axis. */
  rlx_attrs_LayerNormBackwardGamma bad = {.axis = 0, .eps = 1e-5f};
  rlx_shape s5 = SHP(F32, 5);
  CHECK_ERR(RT_RUN_UNCHECKED(&c, LayerNormBackwardGamma, &bad, &s5, {SHP(F32, 2, 5), NULL}, {SHP(F32, 2, 5), NULL}),
            RLX_ERR_UNSUPPORTED, "last axis");
  rt_free(&c);
}

/* ======================================================================================
 * Convolution and pooling
 * ====================================================================================== */

typedef struct conv_case {
  const char *name;
  rlx_shape x, w;
  rlx_ilist stride, padding, dilation;
  int64_t groups;
} conv_case;

static void run_conv_case(const conv_case *cc, uint32_t seed) {
  bool three = cc->x.rank == 5;
  rlx_op fop = three ? RLX_OP_Conv3d : RLX_OP_Conv;
  /* Forward output shape from the shape rule. */
  rlx_attrs fa;
  rlx_attrs_init(fop, &fa);
  if (three) {
    fa.Conv3d.stride = cc->stride, fa.Conv3d.padding = cc->padding, fa.Conv3d.dilation = cc->dilation;
    fa.Conv3d.groups = cc->groups;
  } else {
    fa.Conv.stride = cc->stride, fa.Conv.padding = cc->padding, fa.Conv.dilation = cc->dilation;
    fa.Conv.groups = cc->groups;
  }
  size_t nx = rt_numel(&cc->x), nw = rt_numel(&cc->w);
  double *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
  fill(x, nx, seed, 1);
  fill(w, nw, seed + 1, 1);
  rt_arg fargs[2] = {{cc->x, x}, {cc->w, w}};
  rt probe;
  if (rt_build(&probe, fop, &fa, NULL, false, 2, fargs) != RLX_OK) {
    CHECK_MSG(false, "%s: forward build: %s", cc->name, rlx_last_error());
    free(x);
    free(w);
    return;
  }
  rlx_shape ys = probe.out.shape;
  rt_free(&probe);
  size_t ny = rt_numel(&ys);
  double *dy = malloc(ny * sizeof *dy), *want = malloc((nx > nw ? nx : nw) * sizeof *want);
  fill(dy, ny, seed + 2, 1);
  int64_t ks[3];
  for (uint32_t i = 2; i < cc->w.rank; i++) ks[i - 2] = cc->w.dims[i];
  rlx_ilist kl = {.v = ks, .n = cc->w.rank - 2u};
  rlx_op bin = three ? RLX_OP_Conv3dBackwardInput : RLX_OP_Conv2dBackwardInput;
  rlx_op bw = three ? RLX_OP_Conv3dBackwardWeight : RLX_OP_Conv2dBackwardWeight;
  rlx_attrs ai, aw;
  rlx_attrs_init(bin, &ai);
  rlx_attrs_init(bw, &aw);
  /* Conv2d/3dBackward{Input,Weight} share the field layout. */
  ai.Conv2dBackwardInput = (rlx_attrs_Conv2dBackwardInput){
      .kernel_size = kl, .stride = cc->stride, .padding = cc->padding, .dilation = cc->dilation, .groups = cc->groups};
  aw.Conv2dBackwardWeight = (rlx_attrs_Conv2dBackwardWeight){
      .kernel_size = kl, .stride = cc->stride, .padding = cc->padding, .dilation = cc->dilation, .groups = cc->groups};
  if (three) {
    ai.Conv3dBackwardInput = (rlx_attrs_Conv3dBackwardInput){.kernel_size = kl,
                                                             .stride = cc->stride,
                                                             .padding = cc->padding,
                                                             .dilation = cc->dilation,
                                                             .groups = cc->groups};
    aw.Conv3dBackwardWeight = (rlx_attrs_Conv3dBackwardWeight){.kernel_size = kl,
                                                               .stride = cc->stride,
                                                               .padding = cc->padding,
                                                               .dilation = cc->dilation,
                                                               .groups = cc->groups};
  }
  rt_arg ia[2] = {{ys, dy}, {cc->w, w}}, wa[2] = {{cc->x, x}, {ys, dy}};
  char what[128];
  snprintf(what, sizeof what, "%s backward input", cc->name);
  check_vjp(what, fop, &fa, NULL, 2, fargs, 0, dy, bin, &ai, &cc->x, 2, ia, 0, 1e-7);
  snprintf(what, sizeof what, "%s backward weight", cc->name);
  check_vjp(what, fop, &fa, NULL, 2, fargs, 1, dy, bw, &aw, NULL, 2, wa, 0, 1e-7);
  /* f32 (sgemm path) and bf16 against f64. */
  if (run_values(bin, &ai, &cc->x, 2, ia, want, nx)) {
    check_dtype(cc->name, bin, &ai, &cc->x, 2, ia, RLX_F32, want, nx, 1e-5);
    check_dtype(cc->name, bin, &ai, &cc->x, 2, ia, RLX_BF16, want, nx, 5e-2);
  }
  if (run_values(bw, &aw, NULL, 2, wa, want, nw)) check_dtype(cc->name, bw, &aw, NULL, 2, wa, RLX_F32, want, nw, 1e-5);
  free(x);
  free(w);
  free(dy);
  free(want);
}

static void test_conv(void) {
  static int64_t s2[2] = {2, 2}, s21[2] = {2, 1}, d12[2] = {1, 2}, d2[2] = {2, 2}, p1[2] = {1, 1}, pa[4] = {1, 0, 2, 1};
  static int64_t s3[3] = {2, 1, 2}, p3[6] = {1, 0, 1, 0, 1, 1}, d3[3] = {1, 2, 1};
  rlx_ilist none = {.v = NULL, .n = 0};
  conv_case cases[] = {
      {"conv2d plain", SHP(F64, 1, 2, 4, 4), SHP(F64, 3, 2, 3, 3), none, none, none, 1},
      {"conv2d stride2 pad1 groups2", SHP(F64, 2, 4, 5, 6), SHP(F64, 4, 2, 3, 2), {s2, 2}, {p1, 2}, none, 2},
      {"conv2d asym pad dilation groups3", SHP(F64, 1, 6, 5, 5), SHP(F64, 3, 2, 2, 3), {s21, 2}, {pa, 4}, {d12, 2}, 3},
      {"conv2d depthwise dil2", SHP(F64, 2, 3, 6, 5), SHP(F64, 3, 1, 2, 2), {s21, 2}, none, {d2, 2}, 3},
      {"conv3d stride asym pad dil groups2",
       SHP(F64, 2, 4, 4, 5, 4),
       SHP(F64, 2, 2, 2, 2, 3),
       {s3, 3},
       {p3, 6},
       {d3, 3},
       2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_conv_case(&cases[i], 300 + 10 * (uint32_t)i);
}

/* Naive max-pool backward on [NC, spatial] with the first-max rule (independent of the kernel). */
static void naive_maxpool_bw(const double *x, const double *dy, size_t NC, int nsp, const int *in, const int *out,
                             const int *k, const int *s, const int *pb, double *dx) {
  int Pin = 1, P = 1;
  for (int i = 0; i < nsp; i++) Pin *= in[i], P *= out[i];
  memset(dx, 0, NC * (size_t)Pin * sizeof *dx);
  for (size_t c = 0; c < NC; c++)
    for (int p = 0; p < P; p++) {
      int o[3], rem = p;
      for (int i = nsp - 1; i >= 0; i--) o[i] = rem % out[i], rem /= out[i];
      int kv = 1;
      for (int i = 0; i < nsp; i++) kv *= k[i];
      int best = -1;
      for (int t = 0; t < kv; t++) {
        int tap[3], r = t, flat = 0;
        bool inside = true;
        for (int i = nsp - 1; i >= 0; i--) tap[i] = r % k[i], r /= k[i];
        for (int i = 0; i < nsp; i++) {
          int v = o[i] * s[i] + tap[i] - pb[i];
          if (v < 0 || v >= in[i]) inside = false;
          flat = flat * in[i] + v;
        }
        if (inside && (best < 0 || x[c * Pin + flat] > x[c * Pin + best])) best = flat;
      }
      dx[c * Pin + best] += dy[c * P + p];
    }
}

static void test_maxpool(void) {
  /* 2-D, overlapping windows (k 3, s 2), asymmetric padding, tie-free: finite differences of Pool. */
  double x[2 * 2 * 5 * 6], dy[2 * 2 * 3 * 3], want[120];
  distinct(x, 120, 3);
  fill(dy, 36, 71, 1);
  static int64_t k3[2] = {3, 3}, st2[2] = {2, 2}, pad[4] = {1, 0, 1, 1};
  rlx_attrs_Pool fa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = k3, .n = 2},
                       .stride = {.v = st2, .n = 2},
                       .padding = {.v = pad, .n = 4}};
  rlx_attrs_MaxPool2dBackward ba = {
      .kernel_size = {.v = k3, .n = 2}, .stride = {.v = st2, .n = 2}, .padding = {.v = pad, .n = 4}};
  rt_arg fargs[1] = {{SHP(F64, 2, 2, 5, 6), x}};
  rt_arg bargs[2] = {{SHP(F64, 2, 2, 5, 6), x}, {SHP(F64, 2, 2, 3, 3), dy}};
  check_vjp("MaxPool2dBackward", RLX_OP_Pool, &fa, NULL, 1, fargs, 0, dy, RLX_OP_MaxPool2dBackward, &ba, NULL, 2, bargs,
            0, 1e-7);
  int in2[2] = {5, 6}, out2[2] = {3, 3}, kk[2] = {3, 3}, ss[2] = {2, 2}, pb2[2] = {1, 0};
  naive_maxpool_bw(x, dy, 4, 2, in2, out2, kk, ss, pb2, want);
  check_dtype("MaxPool2dBackward", RLX_OP_MaxPool2dBackward, &ba, NULL, 2, bargs, RLX_F32, want, 120, 1e-6);
  /* Ties: every value equal -> each window's dy goes to its first (top-left) real cell. */
  rt c;
  static int64_t k2[2] = {2, 2};
  rlx_attrs_MaxPool2dBackward tb = {
      .kernel_size = {.v = k2, .n = 2}, .stride = {.v = NULL, .n = 0}, .padding = {.v = NULL, .n = 0}};
  RT_RUN(&c, MaxPool2dBackward, &tb, NULL, {SHP(F32, 1, 1, 2, 4), VALS(5, 5, 5, 5, 5, 5, 5, 5)},
         {SHP(F32, 1, 1, 1, 2), VALS(1, 2)});
  CHECK_OUT(&c, VALS(1, 0, 2, 0, 0, 0, 0, 0), 8, 0, 0);
  rt_free(&c);
  /* A tie between the 2nd and 4th cells of a window: the 2nd wins. */
  RT_RUN(&c, MaxPool2dBackward, &tb, NULL, {SHP(F64, 1, 1, 2, 2), VALS(1, 7, 3, 7)}, {SHP(F64, 1, 1, 1, 1), VALS(4)});
  CHECK_OUT(&c, VALS(0, 4, 0, 0), 4, 0, 0);
  rt_free(&c);
  /* Overlapping windows (stride 1) sharing one maximum accumulate; padding never wins. */
  static int64_t s1[2] = {1, 1}, p1[2] = {1, 1};
  rlx_attrs_MaxPool2dBackward ob = {
      .kernel_size = {.v = k2, .n = 2}, .stride = {.v = s1, .n = 2}, .padding = {.v = p1, .n = 2}};
  RT_RUN(&c, MaxPool2dBackward, &ob, NULL, {SHP(F64, 1, 1, 2, 2), VALS(-1, -2, -3, -4)},
         {SHP(F64, 1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)});
  /* windows over the padded 4x4 grid: cell (0,0) = -1 is the max of windows (0,0),(0,1),(1,0),(1,1);
   * (0,1) = -2 of (0,2),(1,2); (1,0) = -3 of (2,0),(2,1); (1,1) = -4 of (2,2). */
  CHECK_OUT(&c, VALS(1 + 2 + 4 + 5, 3 + 6, 7 + 8, 9), 4, 0, 0);
  rt_free(&c);
  /* Integers are exact. */
  RT_RUN(&c, MaxPool2dBackward, &tb, NULL, {SHP(I32, 1, 1, 2, 2), VALS(1, 9, 3, 2)}, {SHP(I32, 1, 1, 1, 1), VALS(-6)});
  CHECK_OUT(&c, VALS(0, -6, 0, 0), 4, 0, 0);
  rt_free(&c);
  /* 3-D against the naive loops (no 3-D forward pool op to difference). */
  double x3[1 * 2 * 4 * 4 * 3], dy3[2 * 2 * 2 * 3], want3[96];
  distinct(x3, 96, 9);
  x3[5] = x3[6]; /* plant a tie */
  fill(dy3, 24, 81, 1);
  static int64_t k33[3] = {2, 3, 2}, s33[3] = {2, 2, 1}, p33[6] = {0, 1, 0, 0, 1, 1};
  rlx_attrs_MaxPool3dBackward b3 = {
      .kernel_size = {.v = k33, .n = 3}, .stride = {.v = s33, .n = 3}, .padding = {.v = p33, .n = 6}};
  int in3[3] = {4, 4, 3}, out3[3] = {2, 2, 3}, k3i[3] = {2, 3, 2}, s3i[3] = {2, 2, 1}, pb3[3] = {0, 1, 0};
  naive_maxpool_bw(x3, dy3, 2, 3, in3, out3, k3i, s3i, pb3, want3);
  RT_RUN(&c, MaxPool3dBackward, &b3, NULL, {SHP(F64, 1, 2, 4, 4, 3), x3}, {SHP(F64, 1, 2, 2, 2, 3), dy3});
  CHECK_OUT(&c, want3, 96, 0, 0);
  rt_free(&c);
}

/* ======================================================================================
 * Cumsum, Gather
 * ====================================================================================== */

static void test_cumsum_gather(void) {
  double x[3 * 4], dy[12];
  fill(x, 12, 91, 1);
  fill(dy, 12, 92, 1);
  for (int axis = 0; axis < 2; axis++)
    for (int ex = 0; ex < 2; ex++) {
      rlx_attrs_Cumsum fa = {.axis = axis == 0 ? 0 : -1, .exclusive = ex};
      rlx_attrs_CumsumBackward ba = {.axis = axis == 0 ? 0 : -1, .exclusive = ex};
      rt_arg fargs[1] = {{SHP(F64, 3, 4), x}}, bargs[1] = {{SHP(F64, 3, 4), dy}};
      char what[64];
      snprintf(what, sizeof what, "CumsumBackward axis %d exclusive %d", axis, ex);
      check_vjp(what, RLX_OP_Cumsum, &fa, NULL, 1, fargs, 0, dy, RLX_OP_CumsumBackward, &ba, NULL, 1, bargs, 0, 1e-8);
    }
  rt c;
  rlx_attrs_CumsumBackward ib = {.axis = -1, .exclusive = true};
  RT_RUN(&c, CumsumBackward, &ib, NULL, {SHP(I64, 4), VALS(1, 2, 3, 4)});
  CHECK_OUT(&c, VALS(9, 7, 4, 0), 4, 0, 0);
  rt_free(&c);
  /* Gather along axis 1 with 2-D indices holding duplicates. */
  double tab[2 * 5 * 3], idx[2 * 2] = {4, 1, 4, 0}, gdy[2 * 2 * 2 * 3];
  fill(tab, 30, 93, 1);
  fill(gdy, 24, 94, 1);
  rlx_attrs_Gather fg = {.axis = 1};
  rlx_attrs_GatherBackward bg = {.axis = 1};
  rt_arg fargs[2] = {{SHP(F64, 2, 5, 3), tab}, {SHP(I64, 2, 2), idx}};
  rt_arg bargs[2] = {{SHP(F64, 2, 2, 2, 3), gdy}, {SHP(I64, 2, 2), idx}};
  rlx_shape tshape = SHP(F64, 2, 5, 3);
  check_vjp("GatherBackward axis 1", RLX_OP_Gather, &fg, NULL, 2, fargs, 0, gdy, RLX_OP_GatherBackward, &bg, &tshape, 2,
            bargs, 0, 1e-8);
  /* Hand case: axis 0, f32 indices with a duplicate. */
  rlx_attrs_GatherBackward b0 = {0};
  rlx_shape t32 = SHP(F32, 3, 2);
  RT_RUN(&c, GatherBackward, &b0, &t32, {SHP(F32, 3, 2), VALS(1, 2, 3, 4, 5, 6)}, {SHP(F32, 3), VALS(2, 0, 2)});
  CHECK_OUT(&c, VALS(3, 4, 0, 0, 6, 8), 6, 0, 0);
  rt_free(&c);
  CHECK_ERR(RT_RUN(&c, GatherBackward, &b0, &t32, {SHP(F32, 3, 2), NULL}, {SHP(I32, 3), VALS(0, 3, 1)}),
            RLX_ERR_RUNTIME, "out of range");
  rt_free(&c);
}

/* ======================================================================================
 * ScanBackward / ScanBackwardXs (through rlx_compile: the kernels need ctx->run_body)
 * ====================================================================================== */

/* body(c, x) = c * x + sin(c); body_vjp(c, x, d) = (d * (x + cos c), d * c). Carry [2], xs [L, 2]. */
static rlx_graph *scan_body(rlx_graph *parent, bool vjp) {
  rlx_graph *b = NULL;
  CHECK_OK(rlx_graph_create_child(parent, vjp ? "vjp" : "step", &b));
  rlx_id c, x, d = 0, t, u, outs[2];
  CHECK_OK(rlx_input(b, "c", SHP(F64, 2), &c));
  CHECK_OK(rlx_input(b, "x", SHP(F64, 2), &x));
  if (vjp) CHECK_OK(rlx_input(b, "d_output", SHP(F64, 2), &d));
  if (!vjp) {
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, c, x, &t));
    CHECK_OK(rlx_activation(b, RLX_ACT_SIN, c, &u));
    CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, t, u, &outs[0]));
    CHECK_OK(rlx_graph_set_outputs(b, outs, 1));
  } else {
    CHECK_OK(rlx_activation(b, RLX_ACT_COS, c, &u));
    CHECK_OK(rlx_binary(b, RLX_BINOP_ADD, x, u, &t));
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, d, t, &outs[0]));
    CHECK_OK(rlx_binary(b, RLX_BINOP_MUL, d, c, &outs[1]));
    CHECK_OK(rlx_graph_set_outputs(b, outs, 2));
  }
  return b;
}

/* Runs graph g (inputs "init", "xs", "traj", "up" as given) and returns output 0 into out. */
static bool run_graph(rlx_graph *g, const rlx_named_tensor *ins, uint32_t n_ins, double *out, size_t count) {
  rlx_executable *e = NULL;
  rlx_status s = rlx_compile(g, "cpu", NULL, &e);
  CHECK_MSG(s == RLX_OK, "compile: %s", rlx_last_error());
  bool ok = false;
  if (!s) {
    const rlx_tensor *outs;
    uint32_t n_out;
    s = rlx_executable_run(e, ins, n_ins, &outs, &n_out);
    CHECK_MSG(s == RLX_OK, "run: %s", rlx_last_error());
    size_t numel = 0;
    if (!s) rlx_shape_numel(&outs[0].shape, &numel);
    ok = !s && numel == count;
    for (size_t i = 0; ok && i < count; i++) out[i] = rlx_elem_get(outs[0].data, (rlx_dtype)outs[0].shape.dtype, i);
  }
  rlx_executable_free(e);
  return ok;
}

/* The forward Scan (length L, trajectory rows or final carry) on init / xs. */
static bool scan_forward(int64_t L, bool traj, int64_t K, const double *init, const double *xs, double *out) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(NULL, "fwd", &g));
  rlx_id i0, x0, y;
  CHECK_OK(rlx_input(g, "init", SHP(F64, 2), &i0));
  CHECK_OK(rlx_input(g, "xs", SHP(F64, L, 2), &x0));
  rlx_attrs_Scan a;
  rlx_attrs_init(RLX_OP_Scan, &a);
  a.body = scan_body(g, false);
  a.length = L;
  a.save_trajectory = traj;
  a.num_xs = 1;
  a.num_checkpoints = K;
  rlx_id args[2] = {i0, x0};
  CHECK_OK(rlx_build_Scan(g, args, 2, &a, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_named_tensor nt[2] = {{"init", {(void *)init, SHP(F64, 2)}}, {"xs", {(void *)xs, SHP(F64, L, 2)}}};
  int64_t rows = K > 0 && K < L ? K : L;
  bool ok = run_graph(g, nt, 2, out, traj ? (size_t)rows * 2 : 2);
  rlx_graph_free(g);
  return ok;
}

/* sum up * Scan(init, xs): the loss whose gradient ScanBackward(Xs) computes. */
static double scan_loss(int64_t L, bool traj, int64_t K, const double *init, const double *xs, const double *up) {
  double y[64];
  if (!scan_forward(L, traj, K, init, xs, y)) return NAN;
  int64_t rows = K > 0 && K < L ? K : L, n = traj ? rows * 2 : 2;
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += up[i] * y[i];
  return s;
}

static void scan_case(int64_t L, bool traj, int64_t K) {
  double init[2] = {0.3, -0.7}, xs[2 * 8], up[2 * 8], traj_v[2 * 8];
  fill(xs, (size_t)L * 2, 7, 0.5);
  fill(up, 16, 8, 1);
  int64_t rows = K > 0 && K < L ? K : L;
  if (!scan_forward(L, true, K, init, xs, traj_v)) return; /* the saved trajectory (rows) */
  /* Finite differences of the loss w.r.t. init and xs. */
  double g_init[2], g_xs[16], h = 1e-6;
  for (int i = 0; i < 2; i++) {
    double v = init[i];
    init[i] = v + h;
    double fp = scan_loss(L, traj, K, init, xs, up);
    init[i] = v - h;
    double fm = scan_loss(L, traj, K, init, xs, up);
    init[i] = v;
    g_init[i] = (fp - fm) / (2 * h);
  }
  for (int64_t i = 0; i < 2 * L; i++) {
    double v = xs[i];
    xs[i] = v + h;
    double fp = scan_loss(L, traj, K, init, xs, up);
    xs[i] = v - h;
    double fm = scan_loss(L, traj, K, init, xs, up);
    xs[i] = v;
    g_xs[i] = (fp - fm) / (2 * h);
  }
  for (int which = 0; which < 2; which++) {
    rlx_graph *g = NULL;
    CHECK_OK(rlx_graph_create(NULL, "bwd", &g));
    rlx_id i0, tr, u, x0, y;
    CHECK_OK(rlx_input(g, "init", SHP(F64, 2), &i0));
    CHECK_OK(rlx_input(g, "traj", SHP(F64, rows, 2), &tr));
    CHECK_OK(rlx_input(g, "up", traj ? SHP(F64, rows, 2) : SHP(F64, 2), &u));
    CHECK_OK(rlx_input(g, "xs", SHP(F64, L, 2), &x0));
    rlx_id args[4] = {i0, tr, u, x0};
    if (which == 0) {
      rlx_attrs_ScanBackward a;
      rlx_attrs_init(RLX_OP_ScanBackward, &a);
      a.body_vjp = scan_body(g, true);
      a.forward_body = K > 0 && K < L ? scan_body(g, false) : NULL;
      a.length = L, a.save_trajectory = traj, a.num_xs = 1, a.num_checkpoints = K;
      CHECK_OK(rlx_build_ScanBackward(g, args, 4, &a, NULL, &y));
    } else {
      rlx_attrs_ScanBackwardXs a;
      rlx_attrs_init(RLX_OP_ScanBackwardXs, &a);
      a.body_vjp = scan_body(g, true);
      a.forward_body = K > 0 && K < L ? scan_body(g, false) : NULL;
      a.length = L, a.save_trajectory = traj, a.num_xs = 1, a.num_checkpoints = K, a.xs_idx = 0;
      CHECK_OK(rlx_build_ScanBackwardXs(g, args, 4, &a, NULL, &y));
    }
    CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
    rlx_named_tensor nt[4] = {{"init", {init, SHP(F64, 2)}},
                              {"traj", {traj_v, SHP(F64, rows, 2)}},
                              {"up", {up, traj ? SHP(F64, rows, 2) : SHP(F64, 2)}},
                              {"xs", {xs, SHP(F64, L, 2)}}};
    double got[16];
    size_t count = which == 0 ? 2 : (size_t)L * 2;
    if (run_graph(g, nt, 4, got, count)) {
      const double *want = which == 0 ? g_init : g_xs;
      int bad = 0;
      for (size_t i = 0; i < count; i++)
        if (!rt_close(got[i], want[i], 1e-6, 1e-6) && bad++ < 3)
          fprintf(stderr, "  scan L=%lld traj=%d K=%lld %s[%zu]: %.9g vs %.9g\n", (long long)L, traj, (long long)K,
                  which ? "dxs" : "dinit", i, got[i], want[i]);
      CHECK_MSG(bad == 0, "ScanBackward%s L=%lld traj=%d K=%lld", which ? "Xs" : "", (long long)L, traj, (long long)K);
    }
    rlx_graph_free(g);
  }
}

static void test_scan(void) {
  scan_case(4, false, 0);
  scan_case(5, true, 0);
  scan_case(7, false, 3); /* checkpointed: carries recomputed with forward_body */
  scan_case(6, true, 2);
  scan_case(1, true, 0);
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
  return rlx_test_finish("test_ref_backward");
}
