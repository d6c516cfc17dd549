/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The autodiff transforms end to end on the CPU backend: API errors; a non-differentiable op on
 * the gradient path (ArgSort, Histogram) names op and node; index operands get no gradient;
 * unused wrt leaves get zeros; StopGradient and Round's straight-through gradient; grad_with_loss;
 * second and third derivatives (repeated grad) against finite differences of the lower
 * derivative; jvp and hvp against finite differences; vmap against a loop of single runs;
 * gradient checkpointing (same gradients, recomputed nodes, arena size); primitive mode emits no
 * backward ops; allocation failures inside rlx_grad. */
#include <stdio.h>

#include "ad_check.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static rlx_shape f64s(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F64, rank, d); }

static double *rand_vec(size_t n, double lo, double hi) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = adt_uniform(lo, hi);
  return v;
}

static rlx_id sum_all(rlx_graph *g, rlx_id x) {
  rlx_shape s = rlx_graph_node(g, x)->shape;
  int64_t ax[RLX_MAX_RANK];
  for (uint32_t i = 0; i < s.rank; i++) ax[i] = i;
  rlx_id r = x;
  if (s.rank) rlx_reduce_axes(g, RLX_REDUCE_SUM, x, s.rank, ax, false, &r);
  return r;
}

/* Compiles g on the CPU and runs it once with `vals`; fills outs[k] (numel of output k). */
static bool run_graph(const rlx_graph *g, const adt_value *vals, uint32_t n, double **outs, uint32_t n_out) {
  adt_exe e;
  rlx_status s = adt_compile(g, "cpu", &e);
  if (s) {
    fprintf(stderr, "  compile: %s\n", rlx_last_error());
    return false;
  }
  s = adt_set_params(&e, vals, n);
  if (!s) s = adt_run(&e, vals, n, outs, n_out);
  if (s) fprintf(stderr, "  run: %s\n", rlx_last_error());
  adt_free(&e);
  return s == RLX_OK;
}

static uint32_t count_op(const rlx_graph *g, rlx_op op) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) k += rlx_graph_node(g, i)->op == op;
  return k;
}

/* ---- API errors and messages ---- */

static void test_errors(void) {
  rlx_graph *g, *out = NULL;
  CHECK_OK(rlx_graph_create(NULL, "errs", &g));
  rlx_id x, k, t, srt, y, l;
  CHECK_OK(rlx_param(g, "x", f64s(1, (rlx_dim[]){4}), &x));
  CHECK_OK(rlx_input(g, "k", rlx_shape_make(RLX_I64, 1, (rlx_dim[]){4}), &k));
  CHECK_OK(rlx_activation(g, RLX_ACT_TANH, x, &t));
  rlx_attrs_ArgSort as = {.axis = -1, .descending = false};
  rlx_shape idx_f32 = rlx_shape_make(RLX_F32, 1, (rlx_dim[]){4}); /* f32-encoded indices (RLX convention) */
  CHECK_OK(rlx_graph_add(g, RLX_OP_ArgSort, &t, 1, &as, &idx_f32, "srt", &srt));
  CHECK_OK(rlx_cast(g, srt, RLX_F64, &srt));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, srt, x, &y));
  l = sum_all(g, y);
  const char *wx[1] = {"x"};
  CHECK_ERR(rlx_grad(g, wx, 1, NULL, &out), RLX_ERR_INVALID_ARG, "has 0 outputs");
  CHECK_OK(rlx_graph_set_outputs(g, &l, 1));
  CHECK_ERR(rlx_grad(g, wx, 1, NULL, NULL), RLX_ERR_INVALID_ARG, NULL);
  CHECK_ERR(rlx_grad(NULL, wx, 1, NULL, &out), RLX_ERR_INVALID_ARG, NULL);
  const char *wz[1] = {"z"};
  CHECK_ERR(rlx_grad(g, wz, 1, NULL, &out), RLX_ERR_NOT_FOUND, "no Param or Input named \"z\"");
  const char *wk[1] = {"k"};
  CHECK_ERR(rlx_grad(g, wk, 1, NULL, &out), RLX_ERR_INVALID_ARG, "only floating-point leaves");
  /* ArgSort on the gradient path: the message names node, name and op */
  char want[128];
  snprintf(want, sizeof want, "node %%%u \"srt\" (ArgSort): no VJP rule", srt - 1);
  CHECK_ERR(rlx_grad(g, wx, 1, NULL, &out), RLX_ERR_UNSUPPORTED, want);
  CHECK_ERR(rlx_grad(g, wx, 1, NULL, &out), RLX_ERR_UNSUPPORTED, "with respect to \"x\"");
  CHECK(out == NULL);
  rlx_graph_free(g);

  /* Histogram (which has a decomposition into Compare + Reduce) is not silently zero */
  CHECK_OK(rlx_graph_create(NULL, "hist", &g));
  rlx_id h;
  CHECK_OK(rlx_param(g, "x", f64s(1, (rlx_dim[]){5}), &x));
  rlx_attrs_Histogram ha = {.bins = 3, .min = -1.0f, .max = 1.0f};
  CHECK_OK(rlx_build_Histogram(g, &x, 1, &ha, "hist", &h));
  CHECK_OK(rlx_cast(g, h, RLX_F64, &h));
  l = sum_all(g, h);
  CHECK_OK(rlx_graph_set_outputs(g, &l, 1));
  CHECK_ERR(rlx_grad(g, wx, 1, NULL, &out), RLX_ERR_UNSUPPORTED, "\"hist\" (Histogram): no VJP rule");
  rlx_graph_free(g);

  /* a graph that already uses every seed name is still fine: d_output_2 */
  CHECK_OK(rlx_graph_create(NULL, "seed", &g));
  rlx_id d;
  CHECK_OK(rlx_param(g, "x", f64s(0, NULL), &x));
  CHECK_OK(rlx_input(g, "d_output", f64s(0, NULL), &d));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, d, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  CHECK_OK(rlx_grad(g, wx, 1, NULL, &out));
  CHECK(out && rlx_graph_find_leaf(out, RLX_OP_Input, "d_output_2") != RLX_NO_ID);
  rlx_graph_free(out);
  rlx_graph_free(g);

  /* jvp / hvp / vmap argument errors */
  CHECK_OK(rlx_graph_create(NULL, "e2", &g));
  CHECK_OK(rlx_param(g, "x", f64s(1, (rlx_dim[]){2}), &x));
  CHECK_OK(rlx_activation(g, RLX_ACT_SIN, x, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  CHECK_ERR(rlx_hvp(g, wx, 1, &out), RLX_ERR_INVALID_ARG, "not a scalar");
  CHECK_ERR(rlx_jvp(g, wz, 1, &out), RLX_ERR_NOT_FOUND, "\"z\"");
  CHECK_ERR(rlx_vmap(g, wz, 1, 3, &out), RLX_ERR_NOT_FOUND, "no Input named \"z\"");
  CHECK_ERR(rlx_vmap(g, NULL, 0, 0, &out), RLX_ERR_INVALID_ARG, "batch is 0");
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  CHECK(o.use_backward_ops && o.n_checkpoints == 0);
  o.n_checkpoints = 1;
  CHECK_ERR(rlx_grad(g, wx, 1, &o, &out), RLX_ERR_INVALID_ARG, "checkpoints is NULL");
  rlx_id bad = 999;
  o.checkpoints = &bad;
  CHECK_ERR(rlx_grad(g, wx, 1, &o, &out), RLX_ERR_INVALID_ARG, "checkpoint 0 is node %999");
  CHECK(rlx_has_vjp(RLX_OP_MatMul) && rlx_has_vjp(RLX_OP_Conv) && !rlx_has_vjp(RLX_OP_ArgSort) &&
        !rlx_has_vjp(RLX_OP_Histogram) && !rlx_has_vjp((rlx_op)RLX_OP_COUNT));
  rlx_graph_free(g);
}

/* ---- gradients of specific semantics ---- */

static void test_semantics(void) {
  /* f = sum(gather(T, argmax(x)) * w) + sum(x * StopGradient(x)) + sum(round(x) * w2)
   * d/dT: scatter of w; d/dx: StopGradient(x) + w2 (straight-through); d/du (unused): 0 */
  rlx_graph *g, *gr = NULL;
  CHECK_OK(rlx_graph_create(NULL, "sem", &g));
  rlx_id T, x, u, am, ga, w, p1, sg, p2, rd, w2, p3, l;
  CHECK_OK(rlx_param(g, "T", f64s(2, (rlx_dim[]){3, 2}), &T));
  CHECK_OK(rlx_param(g, "x", f64s(1, (rlx_dim[]){3}), &x));
  CHECK_OK(rlx_param(g, "u", f64s(2, (rlx_dim[]){2, 2}), &u));
  rlx_attrs_ArgMax aa = {.axis = 0, .keep_dim = true};
  CHECK_OK(rlx_build_ArgMax(g, &x, 1, &aa, "am", &am)); /* [1] index from a differentiated param */
  rlx_attrs_Gather gat = {0};
  CHECK_OK(rlx_build_Gather(g, (rlx_id[]){T, am}, 2, &gat, NULL, &ga)); /* [1, 2] */
  double wv[2] = {0.25, -2.0}, w2v[3] = {1.5, -0.5, 3.0};
  CHECK_OK(rlx_constant(g, f64s(2, (rlx_dim[]){1, 2}), wv, sizeof wv, &w));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, ga, w, &p1));
  CHECK_OK(rlx_build_StopGradient(g, &x, 1, NULL, &sg));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, x, sg, &p2));
  CHECK_OK(rlx_activation(g, RLX_ACT_ROUND, x, &rd));
  CHECK_OK(rlx_constant(g, f64s(1, (rlx_dim[]){3}), w2v, sizeof w2v, &w2));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, rd, w2, &p3));
  rlx_id s1 = sum_all(g, p1), s2 = sum_all(g, p2), s3 = sum_all(g, p3);
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, s1, s2, &l));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, l, s3, &l));
  CHECK_OK(rlx_graph_set_outputs(g, &l, 1));
  const char *wrt[3] = {"T", "x", "u"};
  for (int mode = 0; mode < 2; mode++) {
    rlx_grad_options o;
    rlx_grad_options_init(&o);
    o.use_backward_ops = mode == 0;
    CHECK_OK(rlx_grad_with_loss(g, wrt, 3, &o, &gr));
    if (!gr) continue;
    CHECK(rlx_graph_output_count(gr) == 4);
    double Tv[6] = {1, 2, 3, 4, 5, 6}, xv[3] = {0.3, 1.7, -0.4}, uv[4] = {1, 2, 3, 4}, one = 1;
    adt_value vals[4] = {{"T", f64s(2, (rlx_dim[]){3, 2}), Tv},
                         {"x", f64s(1, (rlx_dim[]){3}), xv},
                         {"u", f64s(2, (rlx_dim[]){2, 2}), uv},
                         {"d_output", f64s(0, NULL), &one}};
    double loss, dT[6], dx[3], du[4], *outs[4] = {&loss, dT, dx, du};
    CHECK(run_graph(gr, vals, 4, outs, 4));
    /* loss: gather row 1 (argmax of x) of T: 3*0.25 + 4*-2 = -7.25; sum(x^2) = 3.14; round: 0*1.5 + 2*-0.5 + 0*3 */
    CHECK_MSG(adt_close(loss, -7.25 + 0.09 + 2.89 + 0.16 - 1.0, 1e-12), "loss %g", loss);
    double wantT[6] = {0, 0, 0.25, -2.0, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_MSG(adt_close(dT[i], wantT[i], 1e-12), "dT[%d] = %g", i, dT[i]);
    for (int i = 0; i < 3; i++) CHECK_MSG(adt_close(dx[i], xv[i] + w2v[i], 1e-12), "dx[%d] = %g", i, dx[i]);
    for (int i = 0; i < 4; i++) CHECK(du[i] == 0.0);
    rlx_graph_free(gr);
    gr = NULL;
  }
  rlx_graph_free(g);
}

/* FakeQuantize's straight-through estimators, against the formulas computed here. */
static void test_fake_quantize(void) {
  static const double xv[6] = {0.3, -1.2, 0.05, 0.9, 0.4, -0.7}, wv[6] = {1.0, -2.0, 0.5, 3.0, -1.5, 0.25};
  const int stes[3] = {RLX_STE_TANH, RLX_STE_HARD_TANH, RLX_STE_CLIPPED_IDENTITY};
  for (int k = 0; k < 3; k++) {
    bool fixed = stes[k] == RLX_STE_CLIPPED_IDENTITY;
    rlx_graph *g, *gr = NULL;
    CHECK_OK(rlx_graph_create(NULL, "fq", &g));
    rlx_id x, st, q, w, p, l;
    CHECK_OK(rlx_param(g, "x", f64s(2, (rlx_dim[]){2, 3}), &x));
    rlx_attrs_FakeQuantize a;
    rlx_attrs_init(RLX_OP_FakeQuantize, &a);
    a.bits = fixed ? 2 : 4;
    a.axis = -1;
    a.ste = stes[k];
    if (fixed) {
      double sv = 0.5;
      a.scale_mode = RLX_SCALE_MODE_FIXED;
      CHECK_OK(rlx_constant(g, f64s(1, (rlx_dim[]){1}), &sv, sizeof sv, &st));
      CHECK_OK(rlx_graph_add(g, RLX_OP_FakeQuantize, (rlx_id[]){x, st}, 2, &a, NULL, NULL, &q));
    } else {
      CHECK_OK(rlx_build_FakeQuantize(g, &x, 1, &a, NULL, &q));
    }
    CHECK_OK(rlx_constant(g, f64s(2, (rlx_dim[]){2, 3}), wv, sizeof wv, &w));
    CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, q, w, &p));
    l = sum_all(g, p);
    CHECK_OK(rlx_graph_set_outputs(g, &l, 1));
    const char *wx[1] = {"x"};
    CHECK_OK(rlx_grad(g, wx, 1, NULL, &gr));
    double dx[6], one = 1, *o[1] = {dx};
    adt_value vals[2] = {{"x", f64s(2, (rlx_dim[]){2, 3}), (double *)xv}, {"d_output", f64s(0, NULL), &one}};
    if (gr && run_graph(gr, vals, 2, o, 1)) {
      for (int i = 0; i < 6; i++) {
        int col = i % 3;
        double amax = fmax(fabs(xv[col]), fabs(xv[col + 3])), s = amax / 7.0, want;
        if (stes[k] == RLX_STE_TANH)
          want = wv[i] * (1 - tanh(xv[i] / s) * tanh(xv[i] / s));
        else if (stes[k] == RLX_STE_HARD_TANH)
          want = wv[i] * fmax(0.0, 1 - fabs(xv[i]) / amax);
        else
          want = fabs(xv[i]) <= 0.5 ? wv[i] : 0.0;
        CHECK_MSG(adt_close(dx[i], want, 1e-12), "FakeQuantize ste %d: dx[%d] = %g, want %g", stes[k], i, dx[i], want);
      }
    } else {
      CHECK(false);
    }
    rlx_graph_free(gr);
    rlx_graph_free(g);
  }
}

/* ---- higher order ---- */

typedef rlx_status (*scalar_fn)(rlx_graph *g, rlx_id x, rlx_id *y);

static rlx_status f_tanh_cube(rlx_graph *g, rlx_id x, rlx_id *y) {
  rlx_id t, s;
  RLX_TRY(rlx_activation(g, RLX_ACT_TANH, x, &t));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, t, x, &s));
  return rlx_binary(g, RLX_BINOP_MUL, s, x, y);
}
static rlx_status f_gelu(rlx_graph *g, rlx_id x, rlx_id *y) { return rlx_activation(g, RLX_ACT_GELU, x, y); }
static rlx_status f_softmax(rlx_graph *g, rlx_id x, rlx_id *y) {
  rlx_attrs_Softmax a = {.axis = -1};
  return rlx_build_Softmax(g, &x, 1, &a, NULL, y);
}
static rlx_status f_layernorm(rlx_graph *g, rlx_id x, rlx_id *y) {
  rlx_id gm, bt;
  RLX_TRY(rlx_reshape(g, x, 2, (int64_t[]){2, 3}, &x));
  double gv[3] = {1.2, 0.7, -0.4}, bv[3] = {0.1, 0.2, 0.3};
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){3}), gv, sizeof gv, &gm));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){3}), bv, sizeof bv, &bt));
  rlx_attrs_LayerNorm a = {.axis = -1, .eps = 1e-5f};
  RLX_TRY(rlx_build_LayerNorm(g, (rlx_id[]){x, gm, bt}, 3, &a, NULL, y));
  return rlx_binary(g, RLX_BINOP_MUL, *y, *y, y);
}
static rlx_status f_conv(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [2, 3] -> [1, 1, 2, 3], conv 2x2 with a fixed kernel, then squared */
  rlx_id r, w, c;
  double wv[4] = {0.5, -1.0, 0.25, 2.0};
  RLX_TRY(rlx_reshape(g, x, 4, (int64_t[]){1, 1, 2, 3}, &r));
  RLX_TRY(rlx_constant(g, f64s(4, (rlx_dim[]){1, 1, 2, 2}), wv, sizeof wv, &w));
  int64_t k[2] = {2, 2}, one[2] = {1, 1}, pad[2] = {1, 1};
  rlx_attrs_Conv a = {.kernel_size = {.v = k, .n = 2},
                      .stride = {.v = one, .n = 2},
                      .padding = {.v = pad, .n = 2},
                      .dilation = {.v = one, .n = 2},
                      .groups = 1};
  RLX_TRY(rlx_build_Conv(g, (rlx_id[]){r, w}, 2, &a, NULL, &c));
  RLX_TRY(rlx_activation(g, RLX_ACT_TANH, c, &c));
  return rlx_binary(g, RLX_BINOP_MUL, c, c, y);
}
static rlx_status f_relu_mlp(rlx_graph *g, rlx_id x, rlx_id *y) {
  rlx_id w, m, r;
  double wv[12];
  for (int i = 0; i < 12; i++) wv[i] = 0.3 * (i % 5) - 0.6;
  RLX_TRY(rlx_reshape(g, x, 2, (int64_t[]){2, 3}, &r));
  RLX_TRY(rlx_constant(g, f64s(2, (rlx_dim[]){3, 4}), wv, sizeof wv, &w));
  RLX_TRY(rlx_matmul(g, r, w, &m));
  RLX_TRY(rlx_activation(g, RLX_ACT_RELU, m, &m));
  RLX_TRY(rlx_activation(g, RLX_ACT_SIN, m, &m)); /* sin(relu(.)) has a nonzero second derivative */
  return rlx_binary(g, RLX_BINOP_MUL, m, m, y);
}
static rlx_status f_attention(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* q = k = v = x viewed [1, 2, 3] (1 head of 3), causal */
  rlx_id r;
  RLX_TRY(rlx_reshape(g, x, 3, (int64_t[]){1, 2, 3}, &r));
  rlx_attrs_Attention a;
  rlx_attrs_init(RLX_OP_Attention, &a);
  a.num_heads = 1;
  a.head_dim = 3;
  a.mask_kind = RLX_MASK_CAUSAL;
  return rlx_build_Attention(g, (rlx_id[]){r, r, r}, 3, &a, NULL, y);
}

static rlx_status f_maxpool_ce(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [6] -> [1, 1, 2, 3] * 2 ... max pool 1x2 stride 1 -> logits [2, 2] -> CE with labels */
  rlx_id r, p, lab, l;
  RLX_TRY(rlx_reshape(g, x, 4, (int64_t[]){1, 1, 2, 3}, &r));
  RLX_TRY(rlx_activation(g, RLX_ACT_SIN, r, &r));
  int64_t k[2] = {1, 2}, one[2] = {1, 1};
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = k, .n = 2},
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = NULL, .n = 0}};
  RLX_TRY(rlx_build_Pool(g, &r, 1, &pa, NULL, &p));
  RLX_TRY(rlx_reshape(g, p, 2, (int64_t[]){2, 2}, &p));
  float lv[2] = {1, 0};
  RLX_TRY(rlx_constant(g, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){2}), lv, sizeof lv, &lab));
  RLX_TRY(rlx_build_SoftmaxCrossEntropyWithLogits(g, (rlx_id[]){p, lab}, 2, NULL, &l));
  return rlx_binary(g, RLX_BINOP_MUL, l, l, y);
}
static rlx_status f_rms_group(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* RmsNorm over [2, 3] rows, then GroupNorm of the result seen as [1, 2, 3, 1] (2 groups) */
  rlx_id r, gm, bt, a, b, c2, g2;
  double gv[3] = {1.2, 0.7, -0.4}, bv[3] = {0.1, 0.2, 0.3}, cg[2] = {0.9, 1.3}, cb[2] = {0.2, -0.1};
  RLX_TRY(rlx_reshape(g, x, 2, (int64_t[]){2, 3}, &r));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){3}), gv, sizeof gv, &gm));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){3}), bv, sizeof bv, &bt));
  rlx_attrs_RmsNorm ra = {.axis = -1, .eps = 1e-6f};
  RLX_TRY(rlx_build_RmsNorm(g, (rlx_id[]){r, gm, bt}, 3, &ra, NULL, &a));
  RLX_TRY(rlx_reshape(g, a, 4, (int64_t[]){1, 2, 3, 1}, &b));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){2}), cg, sizeof cg, &g2));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){2}), cb, sizeof cb, &c2));
  rlx_attrs_GroupNorm ga = {.num_groups = 2, .eps = 1e-5f};
  RLX_TRY(rlx_build_GroupNorm(g, (rlx_id[]){b, g2, c2}, 3, &ga, NULL, &b));
  return rlx_binary(g, RLX_BINOP_MUL, b, b, y);
}
static rlx_status f_rope_cumsum(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [6] -> [1, 3, 2] rope (n_rot 2), cumsum, gather rows, tanh */
  rlx_id r, c, s, idx;
  double cv[3] = {0.9, 0.5, -0.3}, sv[3] = {0.43, 0.86, 0.95};
  RLX_TRY(rlx_reshape(g, x, 3, (int64_t[]){1, 3, 2}, &r));
  RLX_TRY(rlx_constant(g, f64s(2, (rlx_dim[]){3, 1}), cv, sizeof cv, &c));
  RLX_TRY(rlx_constant(g, f64s(2, (rlx_dim[]){3, 1}), sv, sizeof sv, &s));
  rlx_attrs_Rope ra = {.head_dim = 2, .n_rot = 2, .style = RLX_ROPE_STYLE_NEOX};
  RLX_TRY(rlx_build_Rope(g, (rlx_id[]){r, c, s}, 3, &ra, NULL, &r));
  rlx_attrs_Cumsum ca = {.axis = 1, .exclusive = false};
  RLX_TRY(rlx_build_Cumsum(g, &r, 1, &ca, NULL, &r));
  int64_t iv[3] = {2, 0, 2};
  RLX_TRY(rlx_constant(g, rlx_shape_make(RLX_I64, 1, (rlx_dim[]){3}), iv, sizeof iv, &idx));
  rlx_attrs_Gather ga = {.axis = 1};
  RLX_TRY(rlx_build_Gather(g, (rlx_id[]){r, idx}, 2, &ga, NULL, &r));
  return rlx_activation(g, RLX_ACT_TANH, r, y);
}

/* f(x) = sum(fn(x) * W), x [6] in f64. */
static rlx_graph *scalar_graph(scalar_fn fn) {
  rlx_graph *g;
  if (rlx_graph_create(NULL, "f", &g)) return NULL;
  rlx_id x, y, l;
  if (rlx_param(g, "x", f64s(1, (rlx_dim[]){6}), &x) || fn(g, x, &y) || adt_weighted_sum(g, y, &l) ||
      rlx_graph_set_outputs(g, &l, 1)) {
    fprintf(stderr, "building: %s\n", rlx_last_error());
    rlx_graph_free(g);
    return NULL;
  }
  return g;
}

/* g(x) = <grad f(x), w> as a new graph from the gradient graph (d_output bound to 1). */
static rlx_graph *directional(const rlx_graph *grad, const double *w, size_t n) {
  rlx_graph *g;
  if (rlx_graph_clone(grad, NULL, &g)) return NULL;
  rlx_id gout = rlx_graph_outputs(g)[0], wc, p, l;
  rlx_constant(g, f64s(1, (rlx_dim[]){(rlx_dim)n}), w, n * sizeof *w, &wc);
  rlx_binary(g, RLX_BINOP_MUL, gout, wc, &p);
  l = sum_all(g, p);
  rlx_graph_set_outputs(g, &l, 1);
  return g;
}

/* Checks grad(<grad f, w>) against central differences of <grad f, w>, for both emission modes,
 * and then the third derivative the same way. */
static void check_second_order(const char *name, scalar_fn fn) {
  rlx_graph *f = scalar_graph(fn);
  CHECK(f != NULL);
  if (!f) return;
  const char *wx[1] = {"x"};
  for (int mode = 0; mode < 2; mode++) {
    rlx_grad_options o;
    rlx_grad_options_init(&o);
    o.use_backward_ops = mode == 0;
    rlx_graph *g1 = NULL, *d1 = NULL, *g2 = NULL, *d2 = NULL, *g3 = NULL;
    double w[6], w2[6], xv[6], one = 1.0;
    for (int i = 0; i < 6; i++) {
      w[i] = adt_uniform(-1, 1);
      w2[i] = adt_uniform(-1, 1);
      xv[i] = adt_uniform(-1.2, 1.2);
    }
    CHECK_OK(rlx_grad(f, wx, 1, &o, &g1));
    d1 = g1 ? directional(g1, w, 6) : NULL;
    if (d1) CHECK_OK(rlx_grad(d1, wx, 1, &o, &g2)); /* second derivative: H w */
    d2 = g2 ? directional(g2, w2, 6) : NULL;
    if (d2) CHECK_OK(rlx_grad(d2, wx, 1, &o, &g3)); /* third derivative contracted with w, w2 */
    if (g2 && g3) {
      adt_value vals[3] = {
          {"x", f64s(1, (rlx_dim[]){6}), xv}, {"d_output", f64s(0, NULL), &one}, {"d_output_2", f64s(0, NULL), &one}};
      adt_value v3[4] = {vals[0], vals[1], vals[2], {"d_output_3", f64s(0, NULL), &one}};
      double hw[6], t3[6], *o2[1] = {hw}, *o3[1] = {t3};
      bool ok = run_graph(g2, vals, 3, o2, 1) && run_graph(g3, v3, 4, o3, 1);
      CHECK_MSG(ok, "%s: running second/third derivative graphs", name);
      /* FD of d1 (for H w) and of d2 (for the third derivative) */
      adt_exe e1, e2;
      bool c1 = adt_compile(d1, "cpu", &e1) == RLX_OK, c2 = adt_compile(d2, "cpu", &e2) == RLX_OK;
      CHECK(c1 && c2);
      double h = 1e-5, worst2 = 0, worst3 = 0;
      for (int i = 0; i < 6 && ok && c1 && c2; i++) {
        double x0 = xv[i];
        rlx_status st;
        xv[i] = x0 + h;
        adt_set_params(&e1, vals, 1);
        adt_set_params(&e2, vals, 1);
        double a1 = adt_run_scalar(&e1, vals, 3, &st), a2 = adt_run_scalar(&e2, vals, 3, &st);
        xv[i] = x0 - h;
        adt_set_params(&e1, vals, 1);
        adt_set_params(&e2, vals, 1);
        double b1 = adt_run_scalar(&e1, vals, 3, &st), b2 = adt_run_scalar(&e2, vals, 3, &st);
        xv[i] = x0;
        double fd2 = (a1 - b1) / (2 * h), fd3 = (a2 - b2) / (2 * h);
        worst2 = fmax(worst2, fabs(hw[i] - fd2) / (1 + fabs(fd2)));
        worst3 = fmax(worst3, fabs(t3[i] - fd3) / (1 + fabs(fd3)));
      }
      CHECK_MSG(worst2 <= 1e-6, "%s (%s): second derivative error %.3g", name, mode ? "primitives" : "backward ops",
                worst2);
      CHECK_MSG(worst3 <= 1e-6, "%s (%s): third derivative error %.3g", name, mode ? "primitives" : "backward ops",
                worst3);
      if (c1) adt_free(&e1);
      if (c2) adt_free(&e2);
    }
    rlx_graph_free(g1);
    rlx_graph_free(d1);
    rlx_graph_free(g2);
    rlx_graph_free(d2);
    rlx_graph_free(g3);
  }
  rlx_graph_free(f);
}

static void test_higher_order(void) {
  check_second_order("tanh(x) x^2", f_tanh_cube);
  check_second_order("gelu", f_gelu);
  check_second_order("softmax", f_softmax);
  check_second_order("layernorm^2", f_layernorm);
  check_second_order("conv-tanh^2", f_conv);
  check_second_order("matmul-relu-sin^2", f_relu_mlp);
  check_second_order("causal attention", f_attention);
  check_second_order("maxpool + cross-entropy", f_maxpool_ce);
  check_second_order("rmsnorm + groupnorm", f_rms_group);
  check_second_order("rope + cumsum + gather", f_rope_cumsum);
}

/* ---- jvp and hvp ---- */

/* Two outputs: y1 = tanh(A x) [2, 2] from x [2,3], A param [2, 2]... kept small. */
static rlx_graph *two_output_graph(void) {
  rlx_graph *g;
  rlx_graph_create(NULL, "two", &g);
  rlx_id x, A, m, y1, sq, y2, e;
  rlx_param(g, "x", f64s(2, (rlx_dim[]){2, 3}), &x);
  rlx_param(g, "A", f64s(2, (rlx_dim[]){3, 2}), &A);
  rlx_matmul(g, x, A, &m);
  rlx_activation(g, RLX_ACT_TANH, m, &y1);
  rlx_binary(g, RLX_BINOP_MUL, x, x, &sq);
  rlx_activation(g, RLX_ACT_EXP, A, &e);
  y2 = sum_all(g, sq);
  rlx_id s2 = sum_all(g, e);
  rlx_binary(g, RLX_BINOP_ADD, y2, s2, &y2);
  rlx_id outs[2] = {y1, y2};
  rlx_graph_set_outputs(g, outs, 2);
  return g;
}

static void test_jvp(void) {
  rlx_graph *f = two_output_graph(), *j = NULL;
  const char *wrt[2] = {"x", "A"};
  CHECK_OK(rlx_jvp(f, wrt, 2, &j));
  if (!j) {
    rlx_graph_free(f);
    return;
  }
  CHECK(rlx_graph_output_count(j) == 4);
  CHECK(rlx_graph_find_leaf(j, RLX_OP_Input, "tangent_x") != RLX_NO_ID &&
        rlx_graph_find_leaf(j, RLX_OP_Input, "tangent_A") != RLX_NO_ID);
  double *xv = rand_vec(6, -1, 1), *Av = rand_vec(6, -1, 1), *tx = rand_vec(6, -1, 1), *tA = rand_vec(6, -1, 1);
  adt_value vals[4] = {{"x", f64s(2, (rlx_dim[]){2, 3}), xv},
                       {"A", f64s(2, (rlx_dim[]){3, 2}), Av},
                       {"tangent_x", f64s(2, (rlx_dim[]){2, 3}), tx},
                       {"tangent_A", f64s(2, (rlx_dim[]){3, 2}), tA}};
  double y1[4], y2, t1[4], t2, *outs[4] = {y1, &y2, t1, &t2};
  CHECK(run_graph(j, vals, 4, outs, 4));
  /* FD along (tx, tA) */
  double h = 1e-6, p1[4], p2, m1[4], m2, *po[2] = {p1, &p2}, *mo[2] = {m1, &m2};
  double xs[6], As[6];
  memcpy(xs, xv, sizeof xs);
  memcpy(As, Av, sizeof As);
  for (int i = 0; i < 6; i++) {
    xv[i] = xs[i] + h * tx[i];
    Av[i] = As[i] + h * tA[i];
  }
  CHECK(run_graph(f, vals, 2, po, 2));
  for (int i = 0; i < 6; i++) {
    xv[i] = xs[i] - h * tx[i];
    Av[i] = As[i] - h * tA[i];
  }
  CHECK(run_graph(f, vals, 2, mo, 2));
  for (int i = 0; i < 4; i++) CHECK_MSG(adt_close(t1[i], (p1[i] - m1[i]) / (2 * h), 1e-7), "jvp y1[%d]", i);
  CHECK_MSG(adt_close(t2, (p2 - m2) / (2 * h), 1e-7), "jvp y2: %g vs %g", t2, (p2 - m2) / (2 * h));
  free(xv);
  free(Av);
  free(tx);
  free(tA);
  rlx_graph_free(j);
  rlx_graph_free(f);
}

static void test_hvp(void) {
  /* f = sum(softmax(x A) * W) + sum(tanh(A)^2) */
  rlx_graph *f, *hv = NULL, *gr = NULL;
  rlx_graph_create(NULL, "hvp", &f);
  rlx_id x, A, m, s, t, t2, l;
  rlx_param(f, "x", f64s(2, (rlx_dim[]){2, 3}), &x);
  rlx_param(f, "A", f64s(2, (rlx_dim[]){3, 2}), &A);
  rlx_matmul(f, x, A, &m);
  rlx_attrs_Softmax sa = {.axis = -1};
  rlx_build_Softmax(f, &m, 1, &sa, NULL, &s);
  adt_weighted_sum(f, s, &l);
  rlx_activation(f, RLX_ACT_TANH, A, &t);
  rlx_binary(f, RLX_BINOP_MUL, t, t, &t2);
  rlx_binary(f, RLX_BINOP_ADD, l, sum_all(f, t2), &l);
  rlx_graph_set_outputs(f, &l, 1);
  const char *wrt[2] = {"x", "A"};
  CHECK_OK(rlx_hvp(f, wrt, 2, &hv));
  CHECK_OK(rlx_grad(f, wrt, 2, NULL, &gr));
  if (hv && gr) {
    double *xv = rand_vec(6, -1, 1), *Av = rand_vec(6, -1, 1), *vx = rand_vec(6, -1, 1), *vA = rand_vec(6, -1, 1),
           one = 1;
    adt_value vals[5] = {{"x", f64s(2, (rlx_dim[]){2, 3}), xv},
                         {"A", f64s(2, (rlx_dim[]){3, 2}), Av},
                         {"v_x", f64s(2, (rlx_dim[]){2, 3}), vx},
                         {"v_A", f64s(2, (rlx_dim[]){3, 2}), vA},
                         {"d_output", f64s(0, NULL), &one}};
    double hx[6], hA[6], *ho[2] = {hx, hA};
    CHECK(run_graph(hv, vals, 4, ho, 2));
    double h = 1e-6, gpx[6], gpA[6], gmx[6], gmA[6], *gp[2] = {gpx, gpA}, *gm[2] = {gmx, gmA}, xs[6], As[6];
    memcpy(xs, xv, sizeof xs);
    memcpy(As, Av, sizeof As);
    adt_value gv[3] = {vals[0], vals[1], vals[4]};
    for (int i = 0; i < 6; i++) {
      xv[i] = xs[i] + h * vx[i];
      Av[i] = As[i] + h * vA[i];
    }
    CHECK(run_graph(gr, gv, 3, gp, 2));
    for (int i = 0; i < 6; i++) {
      xv[i] = xs[i] - h * vx[i];
      Av[i] = As[i] - h * vA[i];
    }
    CHECK(run_graph(gr, gv, 3, gm, 2));
    for (int i = 0; i < 6; i++) {
      CHECK_MSG(adt_close(hx[i], (gpx[i] - gmx[i]) / (2 * h), 1e-6), "hvp x[%d]: %g vs %g", i, hx[i],
                (gpx[i] - gmx[i]) / (2 * h));
      CHECK_MSG(adt_close(hA[i], (gpA[i] - gmA[i]) / (2 * h), 1e-6), "hvp A[%d]: %g vs %g", i, hA[i],
                (gpA[i] - gmA[i]) / (2 * h));
    }
    free(xv);
    free(Av);
    free(vx);
    free(vA);
  }
  rlx_graph_free(hv);
  rlx_graph_free(gr);
  rlx_graph_free(f);
}

/* ---- vmap ---- */

typedef rlx_status (*vm_build)(rlx_graph *g, rlx_id x, rlx_id *y);

static rlx_status vm_mlp(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [3] -> softmax(relu(x W + b)) and a concat with an unbatched constant, then a reduce */
  rlx_id W, b, r, m, c, k;
  RLX_TRY(rlx_param(g, "W", f64s(2, (rlx_dim[]){3, 4}), &W));
  RLX_TRY(rlx_param(g, "b", f64s(1, (rlx_dim[]){4}), &b));
  RLX_TRY(rlx_reshape(g, x, 2, (int64_t[]){1, 3}, &r));
  RLX_TRY(rlx_matmul(g, r, W, &m));
  RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, m, b, &m));
  RLX_TRY(rlx_activation(g, RLX_ACT_RELU, m, &m));
  rlx_attrs_Softmax sa = {.axis = -1};
  RLX_TRY(rlx_build_Softmax(g, &m, 1, &sa, NULL, &m));
  double kv[2] = {7, 8};
  RLX_TRY(rlx_constant(g, f64s(2, (rlx_dim[]){1, 2}), kv, sizeof kv, &k));
  rlx_attrs_Concat ca = {.axis = 1};
  RLX_TRY(rlx_build_Concat(g, (rlx_id[]){m, k}, 2, &ca, NULL, &c));
  rlx_attrs_Cumsum cs = {.axis = -1, .exclusive = false};
  RLX_TRY(rlx_build_Cumsum(g, &c, 1, &cs, NULL, &c));
  return rlx_reduce_axes(g, RLX_REDUCE_MAX, c, 1, (int64_t[]){0}, false, y);
}

static rlx_status vm_conv(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [12] -> [1, 1, 3, 4] conv 2x2 + max pool; the conv is folded into N */
  rlx_id r, w, c, p;
  RLX_TRY(rlx_reshape(g, x, 4, (int64_t[]){1, 1, 3, 4}, &r));
  RLX_TRY(rlx_param(g, "w", f64s(4, (rlx_dim[]){2, 1, 2, 2}), &w));
  int64_t k[2] = {2, 2}, one[2] = {1, 1};
  rlx_attrs_Conv a = {.kernel_size = {.v = k, .n = 2},
                      .stride = {.v = one, .n = 2},
                      .padding = {.v = NULL, .n = 0},
                      .dilation = {.v = one, .n = 2},
                      .groups = 1};
  RLX_TRY(rlx_build_Conv(g, (rlx_id[]){r, w}, 2, &a, NULL, &c));
  int64_t pk[2] = {2, 3};
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = pk, .n = 2},
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = NULL, .n = 0}};
  RLX_TRY(rlx_build_Pool(g, &c, 1, &pa, NULL, &p));
  return rlx_transpose(g, p, 4, (int64_t[]){0, 2, 3, 1}, y);
}

static rlx_status vm_solve(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* A (param, shared) x = b with b = x [3]; then a Cholesky of (x x^T + I) (generic fallback) */
  rlx_id A, s, c, o, e, t;
  RLX_TRY(rlx_param(g, "A", f64s(2, (rlx_dim[]){3, 3}), &A));
  RLX_TRY(rlx_build_DenseSolve(g, (rlx_id[]){A, x}, 2, NULL, &s));
  RLX_TRY(rlx_reshape(g, x, 2, (int64_t[]){3, 1}, &c));
  RLX_TRY(rlx_transpose(g, c, 2, (int64_t[]){1, 0}, &t));
  RLX_TRY(rlx_matmul(g, c, t, &o));
  double ev[9] = {2, 0, 0, 0, 2, 0, 0, 0, 2};
  RLX_TRY(rlx_constant(g, f64s(2, (rlx_dim[]){3, 3}), ev, sizeof ev, &e));
  RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, o, e, &o));
  RLX_TRY(rlx_build_Cholesky(g, &o, 1, NULL, &o));
  RLX_TRY(rlx_reshape(g, o, 1, (int64_t[]){9}, &o));
  rlx_attrs_Concat ca = {0};
  return rlx_build_Concat(g, (rlx_id[]){s, o}, 2, &ca, NULL, y);
}

/* Row 0 of a [2, 10] matrix as a [10] vector. */
static rlx_status narrow_row0(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_attrs_Narrow na = {.axis = 0, .start = 0, .len = 1};
  RLX_TRY(rlx_build_Narrow(g, &x, 1, &na, NULL, out));
  return rlx_reshape(g, *out, 1, (int64_t[]){10}, out);
}

static rlx_status vm_misc(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [6]: broadcasting against a higher-rank shared value, Where with a shared predicate, Slice,
   * Pad, Tile, Gather with shared indices, LayerNorm, attention and a Scan (both by the fallback) */
  rlx_id P, m, w, r, s, pd, t, idx, gm, bt, ln, att, c1, c2;
  RLX_TRY(rlx_param(g, "P", f64s(2, (rlx_dim[]){2, 6}), &P));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, x, P, &m)); /* [6] * [2, 6] -> [2, 6] */
  rlx_id cond;
  RLX_TRY(rlx_constant(g, rlx_shape_make(RLX_BOOL, 1, (rlx_dim[]){6}), (uint8_t[]){1, 0, 1, 1, 0, 1}, 6, &cond));
  RLX_TRY(rlx_build_Where(g, (rlx_id[]){cond, m, P}, 3, NULL, &w));
  rlx_attrs_Slice sl = {.axis = 1, .start = 5, .len = 3, .step = -2};
  RLX_TRY(rlx_build_Slice(g, &w, 1, &sl, NULL, &s)); /* [2, 3] */
  int64_t pads[4] = {0, 1, 2, 0};
  rlx_attrs_Pad pa;
  rlx_attrs_init(RLX_OP_Pad, &pa);
  pa.pads = (rlx_ilist){.v = pads, .n = 4};
  pa.mode = RLX_PAD_MODE_REFLECT;
  RLX_TRY(rlx_build_Pad(g, &s, 1, &pa, NULL, &pd)); /* [3, 5] */
  int64_t reps[2] = {1, 2};
  rlx_attrs_Tile ta = {.reps = {.v = reps, .n = 2}};
  RLX_TRY(rlx_build_Tile(g, &pd, 1, &ta, NULL, &t)); /* [3, 10] */
  int64_t iv[2] = {2, 0};
  RLX_TRY(rlx_constant(g, rlx_shape_make(RLX_I64, 1, (rlx_dim[]){2}), iv, sizeof iv, &idx));
  rlx_attrs_Gather ga = {0};
  RLX_TRY(rlx_build_Gather(g, (rlx_id[]){t, idx}, 2, &ga, NULL, &r)); /* [2, 10] */
  double gv[10], bv[10];
  for (int i = 0; i < 10; i++) gv[i] = 0.5 + 0.1 * i, bv[i] = 0.05 * i;
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){10}), gv, sizeof gv, &gm));
  RLX_TRY(rlx_constant(g, f64s(1, (rlx_dim[]){10}), bv, sizeof bv, &bt));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
  RLX_TRY(rlx_build_LayerNorm(g, (rlx_id[]){r, gm, bt}, 3, &la, NULL, &ln));
  /* attention over [1, 2, 10] (2 heads of 5), causal */
  RLX_TRY(rlx_reshape(g, ln, 3, (int64_t[]){1, 2, 10}, &att));
  rlx_attrs_Attention aa;
  rlx_attrs_init(RLX_OP_Attention, &aa);
  aa.num_heads = 2;
  aa.head_dim = 5;
  aa.mask_kind = RLX_MASK_CAUSAL;
  RLX_TRY(rlx_build_Attention(g, (rlx_id[]){att, att, att}, 3, &aa, NULL, &att));
  /* a Scan over the 2 rows: h' = tanh(h + row) */
  rlx_graph *body;
  RLX_TRY(rlx_graph_create_child(g, "body", &body));
  rlx_id h, xr, o;
  RLX_TRY(rlx_input(body, "h", f64s(1, (rlx_dim[]){10}), &h));
  RLX_TRY(rlx_input(body, "x", f64s(1, (rlx_dim[]){10}), &xr));
  RLX_TRY(rlx_binary(body, RLX_BINOP_ADD, h, xr, &o));
  RLX_TRY(rlx_activation(body, RLX_ACT_TANH, o, &o));
  RLX_TRY(rlx_graph_set_outputs(body, &o, 1));
  RLX_TRY(rlx_reshape(g, att, 2, (int64_t[]){2, 10}, &c1));
  RLX_TRY(narrow_row0(g, c1, &c2));
  rlx_attrs_Scan sa = {
      .body = body, .length = 2, .save_trajectory = false, .num_bcast = 0, .num_xs = 1, .num_checkpoints = 0};
  return rlx_build_Scan(g, (rlx_id[]){c2, c1}, 2, &sa, NULL, y);
}

static rlx_status vm_fft(rlx_graph *g, rlx_id x, rlx_id *y) {
  /* x [6] (real-block, N = 3) times a shared [2, 6], then an Fft along the last axis */
  rlx_id P, m;
  RLX_TRY(rlx_param(g, "P", f64s(2, (rlx_dim[]){2, 6}), &P));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, x, P, &m));
  rlx_attrs_Fft fa = {.inverse = true, .norm = RLX_FFT_NORM_ORTHO};
  return rlx_build_Fft(g, &m, 1, &fa, NULL, y);
}

static void check_vmap(const char *name, vm_build build, rlx_dim xn, const double *params, size_t n_params,
                       const char *pname, rlx_shape pshape) {
  rlx_graph *f;
  rlx_graph_create(NULL, "vf", &f);
  rlx_id x, y;
  rlx_input(f, "x", f64s(1, &xn), &x);
  if (build(f, x, &y) || rlx_graph_set_outputs(f, &y, 1)) {
    CHECK_MSG(false, "%s: building: %s", name, rlx_last_error());
    rlx_graph_free(f);
    return;
  }
  (void)n_params;
  rlx_graph *vg = NULL;
  const char *bi[1] = {"x"};
  enum { B = 4 };
  CHECK_OK(rlx_vmap(f, bi, 1, B, &vg));
  if (vg) {
    rlx_shape ys = rlx_graph_node(f, y)->shape;
    size_t yn = adt_numel(&ys);
    double *X = rand_vec((size_t)(B * xn), -1, 1), *Y = calloc((size_t)B * yn, sizeof *Y), *y1 = calloc(yn, sizeof *y1);
    adt_value vals[2] = {{"x", f64s(2, (rlx_dim[]){B, xn}), X}, {pname, pshape, (double *)params}};
    double *o[1] = {Y};
    CHECK_MSG(run_graph(vg, vals, 2, o, 1), "%s: running the vmapped graph", name);
    for (int b = 0; b < B; b++) {
      adt_value v1[2] = {{"x", f64s(1, &xn), X + b * xn}, vals[1]};
      double *o1[1] = {y1};
      CHECK(run_graph(f, v1, 2, o1, 1));
      for (size_t i = 0; i < yn; i++)
        CHECK_MSG(adt_close(Y[b * yn + i], y1[i], 1e-12), "%s: batch %d element %zu: %g vs %g", name, b, i,
                  Y[b * yn + i], y1[i]);
    }
    free(X);
    free(Y);
    free(y1);
  }
  rlx_graph_free(vg);
  rlx_graph_free(f);
}

static void test_vmap(void) {
  double Wb[16];
  for (int i = 0; i < 16; i++) Wb[i] = adt_uniform(-1, 1);
  /* vm_mlp has two params: bind W and b from one buffer through two values */
  rlx_graph *f;
  rlx_graph_create(NULL, "vf", &f);
  rlx_id x, y;
  rlx_input(f, "x", f64s(1, (rlx_dim[]){3}), &x);
  vm_mlp(f, x, &y);
  rlx_graph_set_outputs(f, &y, 1);
  rlx_graph *vg = NULL;
  const char *bi[1] = {"x"};
  CHECK_OK(rlx_vmap(f, bi, 1, 5, &vg));
  if (vg) {
    double X[15], Y[30], y1[6];
    for (int i = 0; i < 15; i++) X[i] = adt_uniform(-1, 1);
    adt_value vals[3] = {{"x", f64s(2, (rlx_dim[]){5, 3}), X},
                         {"W", f64s(2, (rlx_dim[]){3, 4}), Wb},
                         {"b", f64s(1, (rlx_dim[]){4}), Wb + 12}};
    double *o[1] = {Y};
    CHECK(rlx_graph_node(vg, rlx_graph_outputs(vg)[0])->shape.dims[0] == 5);
    CHECK(run_graph(vg, vals, 3, o, 1));
    for (int b = 0; b < 5; b++) {
      adt_value v1[3] = {{"x", f64s(1, (rlx_dim[]){3}), X + 3 * b}, vals[1], vals[2]};
      double *o1[1] = {y1};
      CHECK(run_graph(f, v1, 3, o1, 1));
      for (int i = 0; i < 6; i++) CHECK_MSG(adt_close(Y[b * 6 + i], y1[i], 1e-12), "vmap mlp b%d[%d]", b, i);
    }
    /* the MLP needs no per-element fallback: no Concat of B slices */
    CHECK(count_op(vg, RLX_OP_Narrow) == 0);
  }
  rlx_graph_free(vg);
  rlx_graph_free(f);

  double wconv[8];
  for (int i = 0; i < 8; i++) wconv[i] = adt_uniform(-1, 1);
  check_vmap("conv + pool", vm_conv, 12, wconv, 8, "w", f64s(4, (rlx_dim[]){2, 1, 2, 2}));
  double A[9] = {3, 0.5, 0.1, -0.2, 2.5, 0.3, 0.4, 0.1, 2};
  check_vmap("solve + cholesky fallback", vm_solve, 3, A, 9, "A", f64s(2, (rlx_dim[]){3, 3}));
  double P[12];
  for (int i = 0; i < 12; i++) P[i] = adt_uniform(-1, 1);
  check_vmap("broadcast, where, slice, pad, tile, gather, layernorm, attention, scan", vm_misc, 6, P, 12, "P",
             f64s(2, (rlx_dim[]){2, 6}));
  check_vmap("fft", vm_fft, 6, P, 12, "P", f64s(2, (rlx_dim[]){2, 6}));
  /* Fft transforms the last axis: batched directly, without the per-element fallback */
  rlx_graph_create(NULL, "vf", &f);
  rlx_input(f, "x", f64s(1, (rlx_dim[]){6}), &x);
  vm_fft(f, x, &y);
  rlx_graph_set_outputs(f, &y, 1);
  vg = NULL;
  CHECK_OK(rlx_vmap(f, bi, 1, 3, &vg));
  if (vg) CHECK(count_op(vg, RLX_OP_Narrow) == 0 && count_op(vg, RLX_OP_Fft) == 1);
  rlx_graph_free(vg);
  rlx_graph_free(f);
}

/* ---- checkpointing ---- */

static void test_checkpointing(void) {
  enum { L = 8, D = 16, BATCH = 8 };
  rlx_graph *f;
  rlx_graph_create(NULL, "deep", &f);
  rlx_id h, cps[3];
  uint32_t ncp = 0;
  rlx_input(f, "x", f64s(2, (rlx_dim[]){BATCH, D}), &h);
  double *wv[L];
  adt_value vals[L + 2];
  char names[L][8];
  for (int i = 0; i < L; i++) {
    snprintf(names[i], sizeof names[i], "w%d", i);
    rlx_id w;
    rlx_param(f, names[i], f64s(2, (rlx_dim[]){D, D}), &w);
    wv[i] = rand_vec(D * D, -0.4, 0.4);
    vals[i] = (adt_value){names[i], f64s(2, (rlx_dim[]){D, D}), wv[i]};
    rlx_matmul(f, h, w, &h);
    rlx_activation(f, RLX_ACT_TANH, h, &h);
    rlx_activation(f, RLX_ACT_SIN, h, &h);
    if (i == 1 || i == 3 || i == 5) cps[ncp++] = h;
  }
  rlx_id l = sum_all(f, h);
  rlx_graph_set_outputs(f, &l, 1);
  double *xv = rand_vec(BATCH * D, -1, 1), one = 1;
  vals[L] = (adt_value){"x", f64s(2, (rlx_dim[]){BATCH, D}), xv};
  vals[L + 1] = (adt_value){"d_output", f64s(0, NULL), &one};
  const char *wrt[L];
  for (int i = 0; i < L; i++) wrt[i] = names[i];
  rlx_graph *g0 = NULL, *g1 = NULL;
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  CHECK_OK(rlx_grad(f, wrt, L, &o, &g0));
  o.checkpoints = cps;
  o.n_checkpoints = ncp;
  CHECK_OK(rlx_grad(f, wrt, L, &o, &g1));
  if (g0 && g1) {
    /* the recomputed segments are visible: more Tanh/Sin nodes than in the plain gradient graph */
    uint32_t t0 = count_op(g0, RLX_OP_Activation), t1 = count_op(g1, RLX_OP_Activation);
    CHECK_MSG(t1 > t0, "checkpointed graph has %u activation nodes, plain %u", t1, t0);
    CHECK(count_op(g1, RLX_OP_StopGradient) > 0);
    double *a0[L], *a1[L];
    for (int i = 0; i < L; i++) {
      a0[i] = calloc(D * D, sizeof(double));
      a1[i] = calloc(D * D, sizeof(double));
    }
    CHECK(run_graph(g0, vals, L + 2, a0, L));
    CHECK(run_graph(g1, vals, L + 2, a1, L));
    double worst = 0;
    for (int i = 0; i < L; i++)
      for (int k = 0; k < D * D; k++) worst = fmax(worst, fabs(a0[i][k] - a1[i][k]));
    CHECK_MSG(worst <= 1e-12, "checkpointed gradients differ by %g", worst);
    for (int i = 0; i < L; i++) {
      free(a0[i]);
      free(a1[i]);
    }
    /* the compiled arena of the checkpointed gradient graph is smaller */
    adt_exe e0, e1;
    if (adt_compile(g0, "cpu", &e0) == RLX_OK && adt_compile(g1, "cpu", &e1) == RLX_OK) {
      size_t b0 = rlx_executable_report(e0.e)->arena_bytes, b1 = rlx_executable_report(e1.e)->arena_bytes;
      printf("checkpointing: arena %zu bytes plain, %zu bytes checkpointed\n", b0, b1);
      CHECK_MSG(b1 < b0, "arena %zu (checkpointed) vs %zu (plain)", b1, b0);
      adt_free(&e0);
      adt_free(&e1);
    }
  }
  for (int i = 0; i < L; i++) free(wv[i]);
  free(xv);
  rlx_graph_free(g0);
  rlx_graph_free(g1);
  rlx_graph_free(f);
}

/* ---- symbolic batch ---- */

static void test_symbolic(void) {
  /* x [?0, 4] -> mean(relu(x W + b)) + sum(softmax(x W)); grads of W and b keep static shapes */
  rlx_graph *f, *g = NULL;
  rlx_graph_create(NULL, "sym", &f);
  rlx_id x, W, b, m, r, l, sm, l2;
  rlx_input(f, "x", rlx_shape_make(RLX_F64, 2, (rlx_dim[]){RLX_DIM_SYM(RLX_SYM_BATCH), 4}), &x);
  rlx_param(f, "W", f64s(2, (rlx_dim[]){4, 3}), &W);
  rlx_param(f, "b", f64s(1, (rlx_dim[]){3}), &b);
  rlx_matmul(f, x, W, &m);
  rlx_binary(f, RLX_BINOP_ADD, m, b, &r);
  rlx_activation(f, RLX_ACT_RELU, r, &r);
  rlx_reduce_axes(f, RLX_REDUCE_MAX, r, 1, (int64_t[]){1}, false, &l);
  rlx_reduce_axes(f, RLX_REDUCE_SUM, l, 1, (int64_t[]){0}, false, &l);
  rlx_attrs_Softmax sa = {.axis = -1};
  rlx_build_Softmax(f, &m, 1, &sa, NULL, &sm);
  l2 = sum_all(f, sm);
  rlx_binary(f, RLX_BINOP_ADD, l, l2, &l);
  rlx_graph_set_outputs(f, &l, 1);
  const char *wrt[3] = {"W", "b", "x"};
  CHECK_OK(rlx_grad(f, wrt, 3, NULL, &g));
  if (g) {
    rlx_shape gw = rlx_graph_node(g, rlx_graph_outputs(g)[0])->shape,
              gx = rlx_graph_node(g, rlx_graph_outputs(g)[2])->shape;
    CHECK(rlx_shape_equal(&gw, &rlx_graph_node(f, W)->shape) && rlx_shape_equal(&gx, &rlx_graph_node(f, x)->shape));
  }
  rlx_graph_free(g);
  rlx_graph_free(f);
}

/* ---- primitive mode ---- */

static void test_primitive_mode(void) {
  rlx_graph *f, *g = NULL;
  rlx_graph_create(NULL, "prim", &f);
  rlx_id x, y, l;
  rlx_param(f, "x", f64s(1, (rlx_dim[]){4}), &x);
  rlx_activation(f, RLX_ACT_RELU, x, &y);
  rlx_activation(f, RLX_ACT_GELU, y, &y);
  rlx_attrs_Cumsum cs = {.axis = 0, .exclusive = false};
  rlx_build_Cumsum(f, &y, 1, &cs, NULL, &y);
  l = sum_all(f, y);
  rlx_graph_set_outputs(f, &l, 1);
  const char *wx[1] = {"x"};
  CHECK_OK(rlx_grad(f, wx, 1, NULL, &g));
  if (g)
    CHECK(count_op(g, RLX_OP_ReluBackward) == 1 && count_op(g, RLX_OP_ActivationBackward) == 1 &&
          count_op(g, RLX_OP_CumsumBackward) == 1);
  rlx_graph_free(g);
  g = NULL;
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  o.use_backward_ops = false;
  CHECK_OK(rlx_grad(f, wx, 1, &o, &g));
  if (g) {
    uint32_t bw = 0;
    for (uint32_t i = 0; i < rlx_graph_node_count(g); i++)
      bw += rlx_op_has(rlx_graph_node(g, i)->op, RLX_PROP_BACKWARD);
    CHECK_MSG(bw == 0, "%u backward ops in primitive mode", bw);
  }
  rlx_graph_free(g);
  rlx_graph_free(f);
}

/* ---- allocation failures ---- */

static void test_alloc_failures(void) {
  rlx_fail_alloc fa;
  rlx_fail_alloc_init(&fa, 0);
  rlx_graph *f;
  CHECK_OK(rlx_graph_create(&fa.al, "af", &f));
  rlx_id x, w, m, l;
  rlx_param(f, "x", f64s(2, (rlx_dim[]){2, 3}), &x);
  rlx_param(f, "w", f64s(2, (rlx_dim[]){3, 2}), &w);
  rlx_matmul(f, x, w, &m);
  rlx_activation(f, RLX_ACT_TANH, m, &m);
  rlx_attrs_Softmax sa = {.axis = -1};
  rlx_build_Softmax(f, &m, 1, &sa, NULL, &m);
  l = sum_all(f, m);
  rlx_graph_set_outputs(f, &l, 1);
  const char *wrt[2] = {"x", "w"};
  long live0 = fa.live;
  int failures = 0, successes = 0;
  for (long k = 1; k < 2000; k++) {
    fa.fail_at = fa.count + k;
    rlx_graph *g = NULL;
    rlx_status s = rlx_grad(f, wrt, 2, NULL, &g);
    fa.fail_at = 0;
    if (s == RLX_OK) {
      successes++;
      rlx_graph_free(g);
      break;
    }
    failures++;
    if (s != RLX_ERR_OOM) {
      CHECK_MSG(false, "allocation failure %ld gave %s: %s", k, rlx_status_text(s), rlx_last_error());
      break;
    }
    CHECK(g == NULL);
  }
  CHECK(successes == 1 && failures > 10);
  CHECK_MSG(fa.live == live0, "%ld blocks leaked", fa.live - live0);
  rlx_graph_free(f);
}

int main(void) {
  test_errors();
  test_semantics();
  test_fake_quantize();
  test_higher_order();
  test_jvp();
  test_hvp();
  test_vmap();
  test_checkpointing();
  test_symbolic();
  test_primitive_mode();
  test_alloc_failures();
  return rlx_test_finish("autodiff");
}
