/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Gradient-check builders: control flow, backward ops as forward ops, SPD / eigen, Custom,
 * Gaussian splatting, sequence models and signal ops, the quantization family. */
#include "gradcheck.h"

/* ---- control flow ---- */

/* body(a, b) = a * b + sin(a) */
static rlx_status two_input_body(rlx_graph *parent, const rlx_shape *s, rlx_graph **out) {
  rlx_graph *b;
  TRY(rlx_graph_create_child(parent, "body", &b));
  rlx_id x0, x1, t, u, o;
  TRY(rlx_input(b, "a", *s, &x0));
  TRY(rlx_input(b, "b", *s, &x1));
  TRY(bin(b, RLX_BINOP_MUL, x0, x1, &t));
  TRY(rlx_activation(b, RLX_ACT_SIN, x0, &u));
  TRY(bin(b, RLX_BINOP_ADD, t, u, &o));
  TRY(rlx_graph_set_outputs(b, &o, 1));
  *out = b;
  return RLX_OK;
}

rlx_status b_if(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_shape s = sh(1, (rlx_dim[]){3});
  rlx_graph *t, *e;
  TRY(two_input_body(g, &s, &t));
  TRY(rlx_graph_create_child(g, "else", &e));
  rlx_id a, b, o;
  TRY(rlx_input(e, "a", s, &a));
  TRY(rlx_input(e, "b", s, &b));
  TRY(bin(e, RLX_BINOP_SUB, a, b, &o));
  TRY(rlx_graph_set_outputs(e, &o, 1));
  rlx_id pred;
  TRY(cstv(g, RLX_BOOL, 0, NULL, (double[]){1}, &pred));
  rlx_attrs_If at = {.then_branch = t, .else_branch = e};
  rlx_id in[3] = {pred, p[0], p[1]};
  return rlx_build_If(g, in, 3, &at, NULL, y);
}

rlx_status b_while(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  /* carried (x, k): while k < 2.5: x = x * w + 0.1 (w = p[1] scanned in as a broadcast through the
   * second carried value), k = k + 1 */
  rlx_shape s = sh(1, (rlx_dim[]){3}), ks = sh(0, NULL);
  rlx_graph *cond, *body;
  TRY(rlx_graph_create_child(g, "cond", &cond));
  rlx_id cx, cw, ck, lim, cr;
  TRY(rlx_input(cond, "x", s, &cx));
  TRY(rlx_input(cond, "w", s, &cw));
  TRY(rlx_input(cond, "k", ks, &ck));
  TRY(cstv(cond, RLX_F64, 0, NULL, (double[]){2.5}, &lim));
  TRY(rlx_compare(cond, RLX_CMP_LT, ck, lim, &cr));
  TRY(rlx_graph_set_outputs(cond, &cr, 1));
  TRY(rlx_graph_create_child(g, "body", &body));
  rlx_id bx, bw, bk, one, t, nx, nk;
  TRY(rlx_input(body, "x", s, &bx));
  TRY(rlx_input(body, "w", s, &bw));
  TRY(rlx_input(body, "k", ks, &bk));
  TRY(cstv(body, RLX_F64, 0, NULL, (double[]){1.0}, &one));
  TRY(bin(body, RLX_BINOP_MUL, bx, bw, &t));
  TRY(rlx_activation(body, RLX_ACT_TANH, t, &nx));
  TRY(bin(body, RLX_BINOP_ADD, bk, one, &nk));
  rlx_id bo[3] = {nx, bw, nk};
  TRY(rlx_graph_set_outputs(body, bo, 3));
  rlx_id k0;
  TRY(cstv(g, RLX_F64, 0, NULL, (double[]){0.0}, &k0));
  rlx_attrs_While at = {.cond = cond, .body = body, .max_iterations = {.has = true, .v = 5}};
  rlx_id in[3] = {p[0], p[1], k0};
  return rlx_build_While(g, in, 3, &at, NULL, y);
}

int g_scan; /* 0: final carry, bcast + Param read in the body; 1: trajectory */
rlx_status b_scan(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  /* carry h [3]; bcast b [3]; xs [4, 3]; body: h' = tanh(h * w + x_t) + b, w a Param read inside */
  rlx_shape s = sh(1, (rlx_dim[]){3});
  rlx_graph *body;
  TRY(rlx_graph_create_child(g, "body", &body));
  rlx_id h, b, xt, w, t, u, o;
  TRY(rlx_input(body, "h", s, &h));
  TRY(rlx_input(body, "b", s, &b));
  TRY(rlx_input(body, "x", s, &xt));
  TRY(rlx_param(body, "w", s, &w));
  TRY(bin(body, RLX_BINOP_MUL, h, w, &t));
  TRY(bin(body, RLX_BINOP_ADD, t, xt, &t));
  TRY(rlx_activation(body, RLX_ACT_TANH, t, &u));
  TRY(bin(body, RLX_BINOP_ADD, u, b, &o));
  TRY(rlx_graph_set_outputs(body, &o, 1));
  rlx_attrs_Scan a = {
      .body = body, .length = 4, .save_trajectory = g_scan == 1, .num_bcast = 1, .num_xs = 1, .num_checkpoints = 0};
  rlx_id in[3] = {p[0], p[1], p[2]};
  return rlx_build_Scan(g, in, 3, &a, NULL, y);
}

int g_cfn; /* 0: fwd body only, 1: with a vjp_body */
rlx_status b_customfn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_shape s = sh(1, (rlx_dim[]){3});
  rlx_graph *fwd, *vjp = NULL;
  TRY(two_input_body(g, &s, &fwd));
  if (g_cfn) {
    /* d/da (a b + sin a) = b + cos a, d/db = a */
    TRY(rlx_graph_create_child(g, "vjp", &vjp));
    rlx_id a, b, po, d, t, u, da, db;
    TRY(rlx_input(vjp, "a", s, &a));
    TRY(rlx_input(vjp, "b", s, &b));
    TRY(rlx_input(vjp, "primal_output", s, &po));
    TRY(rlx_input(vjp, "d_output", s, &d));
    TRY(rlx_activation(vjp, RLX_ACT_COS, a, &t));
    TRY(bin(vjp, RLX_BINOP_ADD, t, b, &u));
    TRY(bin(vjp, RLX_BINOP_MUL, u, d, &da));
    TRY(bin(vjp, RLX_BINOP_MUL, a, d, &db));
    rlx_id outs[2] = {da, db};
    TRY(rlx_graph_set_outputs(vjp, outs, 2));
  }
  rlx_attrs_CustomFn a = {.fwd_body = fwd, .vjp_body = vjp, .jvp_body = NULL, .num_inputs = 2};
  rlx_shape out = s;
  return rlx_graph_add(g, RLX_OP_CustomFn, p, 2, &a, &out, NULL, y);
}

/* ---- backward ops used as forward ops (their VJPs give second derivatives) ---- */

/* op applied to all params in order, with attributes `attrs` (NULL = defaults) and an optional
 * declared output shape. */
typedef struct raw_op {
  rlx_op op;
  const void *attrs;
  uint32_t n;
  bool declared;
  uint32_t rank;
  rlx_dim dims[5];
} raw_op;
static const raw_op *g_raw;
int g_raw_index;

static int64_t k22[2] = {2, 2}, one2[2] = {1, 1}, two2[2] = {2, 2}, pad1[2] = {1, 1}, k222[3] = {2, 2, 2},
               one3[3] = {1, 1, 1};
static const rlx_attrs_ActivationBackward ab_gelu = {.kind = RLX_ACT_GELU}, ab_tanh = {.kind = RLX_ACT_TANH},
                                          ab_rsqrt = {.kind = RLX_ACT_RSQRT};
static const rlx_attrs_Conv2dBackwardInput cbi = {.kernel_size = {.v = k22, .n = 2},
                                                  .stride = {.v = two2, .n = 2},
                                                  .padding = {.v = pad1, .n = 2},
                                                  .dilation = {.v = one2, .n = 2},
                                                  .groups = 1};
static const rlx_attrs_Conv2dBackwardWeight cbw = {.kernel_size = {.v = k22, .n = 2},
                                                   .stride = {.v = two2, .n = 2},
                                                   .padding = {.v = pad1, .n = 2},
                                                   .dilation = {.v = one2, .n = 2},
                                                   .groups = 1};
static const rlx_attrs_Conv3dBackwardInput c3i = {.kernel_size = {.v = k222, .n = 3},
                                                  .stride = {.v = one3, .n = 3},
                                                  .padding = {.v = NULL, .n = 0},
                                                  .dilation = {.v = one3, .n = 3},
                                                  .groups = 1};
static const rlx_attrs_Conv3dBackwardWeight c3w = {.kernel_size = {.v = k222, .n = 3},
                                                   .stride = {.v = one3, .n = 3},
                                                   .padding = {.v = NULL, .n = 0},
                                                   .dilation = {.v = one3, .n = 3},
                                                   .groups = 1};
static const rlx_attrs_LayerNormBackwardInput lni = {.axis = -1, .eps = 1e-5f};
static const rlx_attrs_LayerNormBackwardGamma lng = {.axis = -1, .eps = 1e-5f};
static const rlx_attrs_RmsNormBackwardInput rmi = {.axis = -1, .eps = 1e-6f};
static const rlx_attrs_GroupNormBackwardInput gni = {.num_groups = 2, .eps = 1e-5f};
static const rlx_attrs_BatchNormInferenceBackwardInput bni = {.eps = 1e-5f};
static const rlx_attrs_BatchNormInferenceBackwardGamma bng = {.eps = 1e-5f};
static const rlx_attrs_CumsumBackward csb = {.axis = 1, .exclusive = true};
static const rlx_attrs_MaxPool2dBackward mpb = {
    .kernel_size = {.v = k22, .n = 2}, .stride = {.v = one2, .n = 2}, .padding = {.v = NULL, .n = 0}};
static const rlx_attrs_AdaLayerNormBackward alb = {.norm = RLX_ADA_NORM_LAYER_NORM, .eps = 1e-6f};
static const rlx_attrs_AttentionBackward atb = {.num_heads = 1,
                                                .head_dim = 4,
                                                .mask_kind = RLX_MASK_CAUSAL,
                                                .window = 0,
                                                .wrt = RLX_ATTN_WRT_KEY,
                                                .score_scale = {.has = false, .v = 0},
                                                .attn_logit_softcap = {.has = false, .v = 0}};
static const raw_op raw_ops[] = {
    {RLX_OP_ReluBackward, NULL, 2, false, 0, {0}},
    {RLX_OP_ActivationBackward, &ab_gelu, 2, false, 0, {0}},
    {RLX_OP_ActivationBackward, &ab_tanh, 2, false, 0, {0}},
    {RLX_OP_ActivationBackward, &ab_rsqrt, 2, false, 0, {0}},
    {RLX_OP_Conv2dBackwardInput, &cbi, 2, true, 4, {1, 2, 4, 4}},
    {RLX_OP_Conv2dBackwardWeight, &cbw, 2, false, 0, {0}},
    {RLX_OP_Conv3dBackwardInput, &c3i, 2, true, 5, {1, 2, 3, 3, 3}},
    {RLX_OP_Conv3dBackwardWeight, &c3w, 2, false, 0, {0}},
    {RLX_OP_LayerNormBackwardInput, &lni, 3, false, 0, {0}},
    {RLX_OP_LayerNormBackwardGamma, &lng, 2, false, 0, {0}},
    {RLX_OP_RmsNormBackwardInput, &rmi, 4, false, 0, {0}},
    {RLX_OP_RmsNormBackwardGamma, &rmi, 4, false, 0, {0}},
    {RLX_OP_RmsNormBackwardBeta, &rmi, 4, false, 0, {0}},
    {RLX_OP_GroupNormBackwardInput, &gni, 4, false, 0, {0}},
    {RLX_OP_GroupNormBackwardGamma, &gni, 2, false, 0, {0}},
    {RLX_OP_GroupNormBackwardBeta, &gni, 2, false, 0, {0}},
    {RLX_OP_BatchNormInferenceBackwardInput, &bni, 5, false, 0, {0}},
    {RLX_OP_BatchNormInferenceBackwardGamma, &bng, 4, false, 0, {0}},
    {RLX_OP_BatchNormInferenceBackwardBeta, NULL, 1, false, 0, {0}},
    {RLX_OP_CumsumBackward, &csb, 1, false, 0, {0}},
    {RLX_OP_MaxPool2dBackward, &mpb, 2, false, 0, {0}},
    {RLX_OP_AdaLayerNormBackward, &alb, 4, false, 0, {0}},
    {RLX_OP_GatedResidualBackward, NULL, 4, false, 0, {0}},
    {RLX_OP_AttentionBackward, &atb, 4, false, 0, {0}},
};

rlx_status b_raw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  g_raw = &raw_ops[g_raw_index];
  rlx_shape d = sh(g_raw->rank, g_raw->dims);
  return rlx_graph_add(g, g_raw->op, p, g_raw->n, g_raw->attrs, g_raw->declared ? &d : NULL, NULL, y);
}

rlx_status b_ropebw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id c, s;
  double cv[3] = {0.9, 0.5, -0.3}, sv[3] = {0.43, 0.86, 0.95};
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){3, 1}, cv, &c));
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){3, 1}, sv, &s));
  rlx_attrs_RopeBackward a = {.head_dim = 2, .n_rot = 2, .style = RLX_ROPE_STYLE_GPTJ};
  return rlx_build_RopeBackward(g, (rlx_id[]){p[0], c, s}, 3, &a, NULL, y);
}

rlx_status b_gatherbw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){3}, (double[]){1, 0, 1}, &idx));
  rlx_attrs_GatherBackward a = {.axis = 1};
  rlx_shape d = sh(2, (rlx_dim[]){2, 4});
  return rlx_graph_add(g, RLX_OP_GatherBackward, (rlx_id[]){p[0], idx}, 2, &a, &d, NULL, y);
}

rlx_status b_scebw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id lab;
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){3}, (double[]){1, 0, 3}, &lab));
  return rlx_build_SoftmaxCrossEntropyBackward(g, (rlx_id[]){p[0], lab, p[1]}, 3, NULL, y);
}

/* ---- SPD manifold and eigen (issue 11: SPD / eigen) ---- */

/* 0.5 (x + x^T) of [.., n, n]. */
static rlx_status spd_symm(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_shape s = rlx_graph_node(g, x)->shape;
  int64_t perm[3] = {0, 1, 2};
  perm[s.rank - 2] = s.rank - 1;
  perm[s.rank - 1] = s.rank - 2;
  rlx_id t, h;
  TRY(rlx_transpose(g, x, s.rank, perm, &t));
  TRY(bin(g, RLX_BINOP_ADD, x, t, &t));
  TRY(cstv(g, RLX_F64, 0, NULL, (double[]){0.5}, &h));
  return bin(g, RLX_BINOP_MUL, t, h, out);
}

/* x x^T + k I of [.., n, n]: symmetric positive definite, smooth in x. */
static rlx_status spd_make(rlx_graph *g, rlx_id x, double k, rlx_id *out) {
  rlx_shape s = rlx_graph_node(g, x)->shape;
  int64_t perm[3] = {0, 1, 2};
  perm[s.rank - 2] = s.rank - 1;
  perm[s.rank - 1] = s.rank - 2;
  rlx_id t, m;
  TRY(rlx_transpose(g, x, s.rank, perm, &t));
  TRY(rlx_matmul(g, x, t, &m));
  return plus_diag(g, m, k, out);
}

/* A constant diag(d) of side n. */
static rlx_status spd_diag(rlx_graph *g, rlx_dim n, const double *d, rlx_id *out) {
  double v[64] = {0};
  for (rlx_dim i = 0; i < n; i++) v[i * n + i] = d[i];
  return cstv(g, RLX_F64, 2, (rlx_dim[]){n, n}, v, out);
}

rlx_status b_eigh(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(spd_symm(g, p[0], &a));
  return rlx_graph_node(g, a)->shape.rank == 3 ? rlx_build_EighBatch(g, &a, 1, NULL, y)
                                               : rlx_build_Eigh(g, &a, 1, NULL, y);
}

rlx_status b_bimap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x;
  TRY(spd_make(g, p[1], 0.5, &x));
  return rlx_build_BiMap(g, (rlx_id[]){p[0], x}, 2, NULL, y);
}

/* g_spd_eig: 0 ReEig, 1 LogEig, 2 ReEig at a repeated spectrum, 3 LogEig at a near-repeated one. */
int g_spd_eig;
rlx_status b_reeig(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x, fwd;
  rlx_dim nn = rlx_graph_node(g, p[0])->shape.dims[0];
  if (g_spd_eig >= 2) { /* diag(1, 1, 2) (or 1 + 1e-10) plus a symmetric perturbation that is 0 at the base point */
    rlx_id c, s;
    TRY(spd_diag(g, nn, g_spd_eig == 2 ? (double[]){1, 1, 2} : (double[]){1, 1 + 1e-10, 2}, &c));
    TRY(spd_symm(g, p[0], &s));
    TRY(bin(g, RLX_BINOP_ADD, c, s, &x));
  } else {
    TRY(spd_make(g, p[0], 0.3, &x));
  }
  if (g_spd_eig & 1) {
    rlx_attrs_LogEig a = {.eps = 1e-4f};
    TRY(rlx_build_LogEig(g, &x, 1, &a, NULL, &fwd));
  } else {
    rlx_attrs_ReEig a = {.eps = g_spd_eig == 2 ? 0.5f : 0.6f};
    TRY(rlx_build_ReEig(g, &x, 1, &a, NULL, &fwd));
  }
  rlx_attrs_Narrow na = {.axis = 0, .start = 0, .len = nn * nn};
  return rlx_build_Narrow(g, &fwd, 1, &na, NULL, y);
}

rlx_status b_spdbn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x, m, gg;
  TRY(spd_make(g, p[0], 0.5, &x));
  TRY(spd_diag(g, 3, (double[]){1.5, 0.8, 1.2}, &m));
  TRY(spd_make(g, p[1], 0.5, &gg));
  rlx_attrs_SpdBatchNorm a = {.eps = 1e-5f};
  return rlx_build_SpdBatchNorm(g, (rlx_id[]){x, m, gg}, 3, &a, NULL, y);
}

rlx_status b_spdlogmap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_make(g, p[1], 0.5, &b));
  return rlx_build_SpdLogMap(g, (rlx_id[]){a, b}, 2, NULL, y);
}

rlx_status b_spdexpmap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, v;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_symm(g, p[1], &v));
  return rlx_build_SpdExpMap(g, (rlx_id[]){a, v}, 2, NULL, y);
}

rlx_status b_spdtransport(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b, v;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_make(g, p[1], 0.5, &b));
  TRY(spd_symm(g, p[2], &v));
  return rlx_build_SpdParallelTransport(g, (rlx_id[]){a, b, v}, 3, NULL, y);
}

/* g_spd_fn: the SpdMatFn kind; + 8: at the repeated spectrum diag(1, 1, 2) (batch of 1). */
int g_spd_fn;
rlx_status b_spdfn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x;
  int kind = g_spd_fn & 7;
  if (g_spd_fn & 8) {
    rlx_id c, s;
    TRY(spd_diag(g, 3, (double[]){1, 1, 2}, &c));
    TRY(spd_symm(g, p[0], &s));
    TRY(bin(g, RLX_BINOP_ADD, c, s, &x));
  } else if (kind == RLX_SPD_FN_EXPM) {
    TRY(spd_symm(g, p[0], &x));
  } else {
    TRY(spd_make(g, p[0], 0.5, &x));
  }
  rlx_attrs_SpdMatrixFnBatch a = {.kind = kind};
  return rlx_build_SpdMatrixFnBatch(g, &x, 1, &a, NULL, y);
}

/* ---- Custom op through the registry (issue 11): y = a x^2, VJP builder 2 a x dy ---- */

static rlx_status gc_sq_infer(const rlx_shape *const *in, uint32_t n_in, const uint8_t *attrs, size_t len, void *user,
                              rlx_shape *out) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  *out = *in[0];
  return RLX_OK;
}

static rlx_status gc_sq_cpu(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                            void *user) {
  (void)n_in, (void)user, (void)len;
  double a;
  memcpy(&a, attrs, sizeof a);
  size_t n = adt_numel(&out->shape);
  for (size_t i = 0; i < n; i++) {
    double v = rlx_elem_get(in[0].data, (rlx_dtype)in[0].shape.dtype, i);
    rlx_elem_set(out->data, (rlx_dtype)out->shape.dtype, i, a * v * v);
  }
  return RLX_OK;
}

static rlx_status gc_sq_vjp(rlx_graph *g, const rlx_id *x, uint32_t n_in, rlx_id y, rlx_id dy, const bool *want,
                            const uint8_t *attrs, size_t len, void *user, rlx_id *dx) {
  (void)n_in, (void)y, (void)user, (void)len;
  if (!want[0]) return RLX_OK;
  double a;
  memcpy(&a, attrs, sizeof a);
  rlx_id k, t;
  TRY(cstv(g, (rlx_dtype)rlx_graph_node(g, x[0])->shape.dtype, 0, NULL, (double[]){2 * a}, &k));
  TRY(bin(g, RLX_BINOP_MUL, x[0], dy, &t));
  return bin(g, RLX_BINOP_MUL, t, k, &dx[0]);
}

rlx_status b_custom(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  if (!rlx_custom_lookup("gc.scaled_square", NULL)) {
    rlx_custom_op_desc d = {.name = "gc.scaled_square", .num_inputs = 1, .infer = gc_sq_infer, .vjp = gc_sq_vjp};
    TRY(rlx_custom_register(&d));
    TRY(rlx_custom_register_cpu_kernel("gc.scaled_square", gc_sq_cpu, NULL));
  }
  double a = -0.75;
  return rlx_custom(g, "gc.scaled_square", p, 1, &a, sizeof a, NULL, y);
}

/* ---- Gaussian splatting (issue 11): one tile, no alpha cutoff, no early stop, so the image is
 * smooth in every scene parameter (binning and skips are the renderer's only discontinuities) ---- */
int g_splat_sh; /* SH coefficients per channel */
rlx_status b_splat(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  static const float meta[23] = {0.3f, 0.2f, -4.0f, 0, 0, 0, 0, 1, 0, 50.0f, 0.1f, 100.0f, 0.1f, 0.15f, 0.2f};
  rlx_id ops[7], m, off;
  for (int i = 0; i < 6; i++) ops[i] = p[i];
  /* depths spread by 1.5 so a step never swaps the depth order (a true discontinuity) */
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){9}, (double[]){0, 0, -1.5, 0, 0, 0, 0, 0, 1.5}, &off));
  TRY(bin(g, RLX_BINOP_ADD, p[0], off, &ops[0]));
  TRY(rlx_constant(g, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){23}), meta, sizeof meta, &m));
  ops[6] = m;
  rlx_attrs_GaussianSplatRender a = {.width = 12,
                                     .height = 10,
                                     .tile_size = 16,
                                     .radius_scale = 1.6f,
                                     .alpha_cutoff = 0.0f,
                                     .max_splat_steps = 64,
                                     .transmittance_threshold = 0.0f,
                                     .max_list_entries = 64};
  (void)g_splat_sh;
  return rlx_build_GaussianSplatRender(g, ops, 7, &a, NULL, y);
}

/* ---- the case table ---- */

/* ---- sequence models and signal ops (issue 11 items 2-3) ---- */

/* g_rnn: bit 0 bidirectional, bit 1 carry, bit 2 two layers, bit 3 relu (Rnn). Hidden size 2
 * (3 for one-layer unidirectional runs without carry). */
int g_rnn;
static int64_t rnn_hidden(void) { return (g_rnn & 7) == 0 ? 3 : 2; }
rlx_status b_lstm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Lstm a = {.hidden_size = rnn_hidden(),
                      .num_layers = g_rnn & 4 ? 2 : 1,
                      .bidirectional = g_rnn & 1,
                      .carry = (g_rnn & 2) != 0};
  return rlx_build_Lstm(g, p, a.carry ? 6 : 4, &a, NULL, y);
}
rlx_status b_gru(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Gru a = {.hidden_size = rnn_hidden(),
                     .num_layers = g_rnn & 4 ? 2 : 1,
                     .bidirectional = g_rnn & 1,
                     .carry = (g_rnn & 2) != 0};
  return rlx_build_Gru(g, p, a.carry ? 6 : 5, &a, NULL, y);
}
rlx_status b_rnn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Rnn a = {.hidden_size = rnn_hidden(),
                     .num_layers = g_rnn & 4 ? 2 : 1,
                     .bidirectional = g_rnn & 1,
                     .carry = (g_rnn & 2) != 0,
                     .relu = (g_rnn & 8) != 0};
  return rlx_build_Rnn(g, p, a.carry ? 5 : 4, &a, NULL, y);
}
rlx_status b_selscan(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SelectiveScan a = {.state_size = 3};
  return rlx_build_SelectiveScan(g, p, 5, &a, NULL, y);
}
rlx_status b_mamba2(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Mamba2 a = {.head_dim = 2, .state_size = 3};
  return rlx_build_Mamba2(g, p, 5, &a, NULL, y);
}
/* g_gdn: bit 0 carry_state, bit 1 gate_per_channel; n = 3. */
int g_gdn;
rlx_status b_gdn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GatedDeltaNet a = {.state_size = 3, .carry_state = g_gdn & 1, .gate_per_channel = (g_gdn & 2) != 0};
  return rlx_build_GatedDeltaNet(g, p, a.carry_state ? 6 : 5, &a, NULL, y);
}
rlx_status b_gdnbw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GatedDeltaNetBackward a = {.state_size = 3};
  return rlx_build_GatedDeltaNetBackward(g, p, 6, &a, NULL, y);
}
rlx_status b_pconv(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_PartitionedConv a = {.block = 2};
  return rlx_build_PartitionedConv(g, p, 2, &a, NULL, y);
}
/* LogMel of a [2, 16] spectrum (n_fft 8, 5 bins) through a fixed positive filter bank [4, 5]. */
rlx_status b_logmel(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id f;
  TRY(cst(g, 2, (rlx_dim[]){4, 5}, 0.1, 1.0, &f));
  rlx_id in[2] = {p[0], f};
  return rlx_build_LogMel(g, in, 2, NULL, y);
}
/* ---- end of sequence models and signal ops ---- */
/* ---- quantization family (spline, synth, dequantizing / scaled matmuls) ---- */
rlx_status b_spline(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SplineActivation a = {.num_knots = 6, .grid_min = -1.0f, .grid_max = 1.0f};
  return rlx_build_SplineActivation(g, p, 2, &a, NULL, y);
}
rlx_status b_spline5(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SplineActivation a = {.num_knots = 5, .grid_min = -0.5f, .grid_max = 1.5f};
  return rlx_build_SplineActivation(g, p, 2, &a, NULL, y);
}
rlx_status b_synth(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id codes;
  TRY(cstv(g, RLX_I32, 2, (rlx_dim[]){3, 4}, (double[]){0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 2, 0}, &codes));
  rlx_attrs_SynthMatMul a = {.kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 2, .num_entries = 4};
  rlx_id in[3] = {p[0], codes, p[1]};
  return rlx_build_SynthMatMul(g, in, 3, &a, NULL, y);
}
rlx_status b_synth_rec(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id codes;
  TRY(cstv(g, RLX_F32, 2, (rlx_dim[]){2, 3}, (double[]){0, 2, 2, 1, 0, 3}, &codes));
  rlx_attrs_SynthReconstruct a = {.entry_dim = 3, .num_entries = 4};
  rlx_id in[2] = {codes, p[0]};
  return rlx_build_SynthReconstruct(g, in, 2, &a, NULL, y);
}
/* Int8Block weights [8, 3] with blocks of 4 along K: x and the scales are differentiable. */
rlx_status b_dqmm_int8(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  double q[24], z[6] = {0, 1, -1, 2, 0, 0};
  for (int i = 0; i < 24; i++) q[i] = (double)((i * 37) % 255 - 127);
  rlx_id wq, zp;
  TRY(cstv(g, RLX_I8, 2, (rlx_dim[]){8, 3}, q, &wq));
  TRY(cstv(g, RLX_F32, 2, (rlx_dim[]){2, 3}, z, &zp));
  rlx_attrs_DequantMatMul a = {
      .scheme = RLX_QUANT_SCHEME_INT8_BLOCK_ASYM, .block_size = 4, .bits = 4, .group_size = 64};
  rlx_id in[4] = {p[0], wq, p[1], zp};
  return rlx_build_DequantMatMul(g, in, 4, &a, NULL, y);
}
/* Q8_0 blocks with the f16 scale 0x2E66 (about 0.1) and pseudo-random codes. */
static rlx_status q8_0_bytes(rlx_graph *g, int blocks, rlx_id *out) {
  double v[8 * 34];
  for (int b = 0; b < blocks; b++) {
    v[b * 34] = 0x66, v[b * 34 + 1] = 0x2E;
    for (int j = 0; j < 32; j++) v[b * 34 + 2 + j] = (double)((b * 91 + j * 53) % 256);
  }
  return cstv(g, RLX_U8, 1, (rlx_dim[]){blocks * 34}, v, out);
}
rlx_status b_dqmm_gguf(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id w;
  TRY(q8_0_bytes(g, 3, &w));
  rlx_attrs_DequantMatMul a = {.scheme = RLX_QUANT_SCHEME_GGUF_Q8_0, .block_size = 32, .bits = 4, .group_size = 64};
  rlx_shape decl = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){2, 3});
  rlx_id in[2] = {p[0], w};
  return rlx_graph_add(g, RLX_OP_DequantMatMul, in, 2, &a, &decl, NULL, y);
}
rlx_status b_dgmm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id w, idx;
  TRY(q8_0_bytes(g, 4, &w)); /* 2 experts of [N = 2, K = 32] */
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){3}, (double[]){1, 0, 1}, &idx));
  rlx_attrs_DequantGroupedMatMul a = {
      .scheme = RLX_QUANT_SCHEME_GGUF_Q8_0, .block_size = 32, .bits = 4, .group_size = 64};
  rlx_shape decl = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 2});
  rlx_id in[3] = {p[0], w, idx};
  return rlx_graph_add(g, RLX_OP_DequantGroupedMatMul, in, 3, &a, &decl, NULL, y);
}
/* FP8 codes and scales are data; the f32 bias is differentiable. */
static rlx_status fp8_codes(rlx_graph *g, uint32_t rank, const rlx_dim *d, int salt, rlx_id *out) {
  double v[64];
  size_t n = 1;
  for (uint32_t i = 0; i < rank; i++) n *= (size_t)d[i];
  for (size_t i = 0; i < n; i++) v[i] = (double)((i * 29 + (size_t)salt * 7) % 120);
  return cstv(g, RLX_U8, rank, d, v, out);
}
rlx_status b_smm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id l, r, sl, sr;
  TRY(fp8_codes(g, 2, (rlx_dim[]){2, 4}, 1, &l));
  TRY(fp8_codes(g, 2, (rlx_dim[]){3, 4}, 2, &r));
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){1}, (double[]){0.01}, &sl));
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){1}, (double[]){0.02}, &sr));
  rlx_attrs_ScaledMatMul a = {.lhs_format = RLX_SCALED_FORMAT_F8E4M3,
                              .rhs_format = RLX_SCALED_FORMAT_F8E5M2,
                              .layout = RLX_SCALE_LAYOUT_PER_TENSOR,
                              .block = 32,
                              .has_bias = true};
  rlx_id in[5] = {l, r, sl, sr, p[0]};
  return rlx_build_ScaledMatMul(g, in, 5, &a, NULL, y);
}
rlx_status b_sgmm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id xc, wc, sx, sw, idx;
  TRY(fp8_codes(g, 2, (rlx_dim[]){3, 4}, 3, &xc));
  TRY(fp8_codes(g, 3, (rlx_dim[]){2, 2, 4}, 4, &wc));
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){1}, (double[]){0.05}, &sx));
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){1}, (double[]){0.03}, &sw));
  TRY(cstv(g, RLX_I32, 1, (rlx_dim[]){3}, (double[]){0, 1, 1}, &idx));
  rlx_attrs_ScaledGroupedMatMul a = {.lhs_format = RLX_SCALED_FORMAT_F8E4M3,
                                     .rhs_format = RLX_SCALED_FORMAT_F8E4M3,
                                     .layout = RLX_SCALE_LAYOUT_PER_TENSOR,
                                     .block = 32,
                                     .has_bias = true};
  rlx_id in[6] = {xc, wc, sx, sw, idx, p[0]};
  return rlx_build_ScaledGroupedMatMul(g, in, 6, &a, NULL, y);
}
/* ---- end of the quantization family builders ---- */
