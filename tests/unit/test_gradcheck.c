/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Finite-difference gradient checks: for every differentiable op kind the CPU can run (directly or
 * through a shared decomposition), a small graph f = sum(op(params...) * W) with random W is
 * differentiated with rlx_grad, both graphs are compiled, and every analytic gradient element is
 * compared with a central difference of f, in f64: |a - fd| <= tol (1 + |fd|) with tol = 1e-6
 * (looser for cases that run in f32). Each case runs with the dedicated backward ops and with their
 * primitive decompositions (use_backward_ops = false), on every registered backend that can
 * compile it. A coverage check lists the differentiable kinds the CPU claims that have no case. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ad_check.h"
#include "backends/cpu/cpu_backend.h"
#include "passes/passes.h"

#define TRY(x)                   \
  do {                           \
    rlx_status s_ = (x);         \
    if (s_ != RLX_OK) return s_; \
  } while (0)

typedef rlx_status (*gc_build)(rlx_graph *g, const rlx_id *p, rlx_id *y);

typedef struct gc_param {
  const char *name;
  uint32_t rank;
  rlx_dim dims[6];
  double lo, hi;
} gc_param;

typedef struct gc_case {
  const char *name;
  rlx_op op;
  gc_build build;
  gc_param p[6];
  double h, tol; /* 0 = defaults (1e-5, 1e-6) */
  rlx_dtype dt;  /* 0 (F32 enum value) is treated as "f64 default" unless f32 is set */
  bool f32;
} gc_case;

/* ---- builder helpers ---- */

static rlx_shape sh(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F64, rank, d); }

/* A random f64 constant. */
static rlx_status cst(rlx_graph *g, uint32_t rank, const rlx_dim *d, double lo, double hi, rlx_id *out) {
  rlx_shape s = sh(rank, d);
  size_t n = adt_numel(&s);
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = adt_uniform(lo, hi);
  rlx_status st = rlx_constant(g, s, v, n * sizeof *v, out);
  free(v);
  return st;
}

/* A constant of dtype t from the given values. */
static rlx_status cstv(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *d, const double *v, rlx_id *out) {
  rlx_shape s = rlx_shape_make(t, rank, d);
  size_t n = adt_numel(&s), sz = rlx_dtype_size(t);
  void *buf = calloc(n ? n : 1, sz);
  for (size_t i = 0; i < n; i++) rlx_elem_set(buf, t, i, v[i]);
  rlx_status st = rlx_constant(g, s, buf, n * sz, out);
  free(buf);
  return st;
}

static rlx_status bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_binary(g, op, a, b, out);
}

/* A + k I for a square matrix A [.., n, n] (keeps it well conditioned). */
static rlx_status plus_diag(rlx_graph *g, rlx_id a, double k, rlx_id *out) {
  rlx_shape s = rlx_graph_node(g, a)->shape;
  rlx_dim n = s.dims[s.rank - 1];
  double v[64] = {0};
  for (rlx_dim i = 0; i < n; i++) v[i * n + i] = k;
  rlx_id e;
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){n, n}, v, &e));
  return bin(g, RLX_BINOP_ADD, a, e, out);
}

/* ---- elementwise ---- */

static int g_act;
static rlx_status b_act(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_activation(g, (rlx_act)g_act, p[0], y); }

static int g_binop;
static rlx_status b_binary(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return bin(g, (rlx_binop)g_binop, p[0], p[1], y);
}

static rlx_status b_mod(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id d;
  TRY(cst(g, 1, (rlx_dim[]){3}, 0.7, 1.3, &d));
  return bin(g, RLX_BINOP_MOD, p[0], d, y);
}

static rlx_status b_cast(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b;
  TRY(rlx_cast(g, p[0], RLX_F32, &a));
  TRY(bin(g, RLX_BINOP_MUL, a, a, &b));
  return rlx_cast(g, b, RLX_F64, y);
}

static rlx_status b_where(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id z, c;
  TRY(cst(g, 2, (rlx_dim[]){2, 3}, -1, 1, &z));
  TRY(rlx_compare(g, RLX_CMP_GT, z, p[0], &c)); /* the predicate depends on a param: no gradient through it */
  rlx_id in[3] = {c, p[1], p[2]};
  return rlx_build_Where(g, in, 3, NULL, y);
}

static rlx_status b_fma(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_Fma(g, p, 3, NULL, y); }

static rlx_status b_clamp(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Clamp a = {.min = -0.5f, .max = 0.6f};
  return rlx_build_Clamp(g, p, 1, &a, NULL, y);
}

/* ---- linear algebra ---- */

static rlx_status b_matmul(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_matmul(g, p[0], p[1], y); }

static rlx_status b_dotgeneral(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t lc = 2, rc = 1, lb = 0, rb = 0;
  rlx_attrs_DotGeneral a = {.lhs_contracting = {.v = &lc, .n = 1},
                            .rhs_contracting = {.v = &rc, .n = 1},
                            .lhs_batch = {.v = &lb, .n = 1},
                            .rhs_batch = {.v = &rb, .n = 1}};
  return rlx_build_DotGeneral(g, p, 2, &a, NULL, y);
}

static rlx_status b_solve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_id in[2] = {a, p[1]};
  return rlx_build_DenseSolve(g, in, 2, NULL, y);
}

static rlx_status b_bsolve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_id in[2] = {a, p[1]};
  return rlx_build_BatchedDenseSolve(g, in, 2, NULL, y);
}

static rlx_status b_det(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 2.0, &a));
  return rlx_build_Det(g, &a, 1, NULL, y);
}

static rlx_status b_logdet(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 2.0, &a));
  return rlx_build_LogDet(g, &a, 1, NULL, y);
}

static rlx_status b_cholesky(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id mt, a;
  TRY(rlx_transpose(g, p[0], 2, (int64_t[]){1, 0}, &mt));
  TRY(rlx_matmul(g, p[0], mt, &a));
  TRY(plus_diag(g, a, 2.0, &a));
  return rlx_build_Cholesky(g, &a, 1, NULL, y);
}

static int g_tri;
static rlx_status b_trisolve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  bool lower = g_tri & 1, tr = (g_tri >> 1) & 1;
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_attrs_TriangularSolve at = {.lower = lower, .transpose = tr};
  rlx_id in[2] = {a, p[1]};
  return rlx_build_TriangularSolve(g, in, 2, &at, NULL, y);
}

static rlx_status b_grouped(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){4}, (double[]){0, 1, 1, 0}, &idx));
  rlx_id in[3] = {p[0], p[1], idx};
  return rlx_build_GroupedMatMul(g, in, 3, NULL, y);
}

static rlx_status b_svd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Svd a = {.part = RLX_SVD_PART_S};
  return rlx_build_Svd(g, p, 1, &a, NULL, y);
}

static rlx_status b_qr_q(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Qr a = {.part = RLX_QR_PART_Q};
  return rlx_build_Qr(g, p, 1, &a, NULL, y);
}

static rlx_status b_qr_r(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Qr a = {.part = RLX_QR_PART_R};
  return rlx_build_Qr(g, p, 1, &a, NULL, y);
}

static rlx_status b_im2col(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 3}, s[2] = {2, 1}, pad[4] = {1, 0, 0, 1}, d[2] = {1, 2};
  rlx_attrs_Im2Col a = {.kernel_size = {.v = k, .n = 2},
                        .stride = {.v = s, .n = 2},
                        .padding = {.v = pad, .n = 4},
                        .dilation = {.v = d, .n = 2}};
  return rlx_build_Im2Col(g, p, 1, &a, NULL, y);
}

static rlx_status b_sort(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Sort a = {.axis = -1, .descending = true};
  return rlx_build_Sort(g, p, 1, &a, NULL, y);
}

/* ---- normalisation ---- */

static rlx_status b_layernorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LayerNorm a = {.axis = -1, .eps = 1e-5f};
  return rlx_build_LayerNorm(g, p, 3, &a, NULL, y);
}

static rlx_status b_rmsnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_RmsNorm a = {.axis = -1, .eps = 1e-6f};
  return rlx_build_RmsNorm(g, p, 3, &a, NULL, y);
}

static rlx_status b_groupnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GroupNorm a = {.num_groups = 2, .eps = 1e-5f};
  return rlx_build_GroupNorm(g, p, 3, &a, NULL, y);
}

static rlx_status b_batchnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_BatchNormInference a = {.eps = 1e-5f};
  return rlx_build_BatchNormInference(g, p, 5, &a, NULL, y);
}

static rlx_status b_layernorm2d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LayerNorm2d a = {.eps = 1e-6f};
  return rlx_build_LayerNorm2d(g, p, 3, &a, NULL, y);
}

static int g_ada;
static rlx_status b_adaln(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_AdaLayerNorm a = {.norm = g_ada, .eps = 1e-6f};
  return rlx_build_AdaLayerNorm(g, p, 3, &a, NULL, y);
}

static rlx_status b_gatedres(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_build_GatedResidual(g, p, 3, NULL, y);
}

/* ---- resampling ---- */

static rlx_status b_resize(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_build_ResizeNearest2x(g, p, 1, NULL, y);
}

static rlx_status b_interp3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t sz[3] = {3, 2, 5};
  rlx_attrs_Interpolate3d a = {.size = {.v = sz, .n = 3}};
  return rlx_build_Interpolate3d(g, p, 1, &a, NULL, y);
}

/* ---- attention ---- */

static int g_attn; /* 0 none rank 3, 1 causal BHSD, 2 sliding + scale + softcap, 3 custom mask, 4 GQA BSHD,
                     5 differentiated bias, 6 v_head_dim + GQA + softcap */
static rlx_status b_attention(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Attention a;
  rlx_attrs_init(RLX_OP_Attention, &a);
  a.num_heads = 2;
  a.head_dim = 3;
  rlx_id in[4] = {p[0], p[1], p[2], RLX_NO_ID};
  uint32_t n = 3;
  switch (g_attn) {
  case 1: a.mask_kind = RLX_MASK_CAUSAL; break;
  case 2:
    a.mask_kind = RLX_MASK_SLIDING_WINDOW;
    a.window = 1;
    a.score_scale = (rlx_of32){.has = true, .v = 0.7f};
    a.attn_logit_softcap = (rlx_of32){.has = true, .v = 1.5f};
    break;
  case 5: /* additive bias, differentiated (primitive VJP) */
    a.mask_kind = RLX_MASK_BIAS;
    in[3] = p[3];
    n = 4;
    break;
  case 6: /* v_head_dim != head_dim with GQA, causal, scale and softcap (primitive VJP) */
    a.mask_kind = RLX_MASK_CAUSAL;
    a.v_head_dim = (rlx_oi64){.has = true, .v = 2};
    a.score_scale = (rlx_of32){.has = true, .v = 0.6f};
    a.attn_logit_softcap = (rlx_of32){.has = true, .v = 2.0f};
    break;
  case 3:
    a.mask_kind = RLX_MASK_CUSTOM;
    TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){2, 4}, (double[]){1, 0, 1, 1, 1, 1, 0, 1}, &in[3]));
    n = 4;
    break;
  default: break;
  }
  return rlx_build_Attention(g, in, n, &a, NULL, y);
}

static int g_rope;
static rlx_status b_rope(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  /* x [2, 3, 8] = 2 heads of head_dim 4; n_rot 4 (NeoX) or 2 (GptJ, tail lanes pass through) */
  int64_t nrot = g_rope ? 2 : 4;
  rlx_dim td[2] = {3, nrot / 2};
  double cv[6], sv[6];
  for (int i = 0; i < 3 * nrot / 2; i++) {
    double ang = 0.3 * (i + 1);
    cv[i] = cos(ang);
    sv[i] = sin(ang);
  }
  rlx_id c, s;
  TRY(cstv(g, RLX_F64, 2, td, cv, &c));
  TRY(cstv(g, RLX_F64, 2, td, sv, &s));
  rlx_attrs_Rope a = {.head_dim = 4, .n_rot = nrot, .style = g_rope ? RLX_ROPE_STYLE_GPTJ : RLX_ROPE_STYLE_NEOX};
  rlx_id in[3] = {p[0], c, s};
  return rlx_build_Rope(g, in, 3, &a, NULL, y);
}

static rlx_status b_axialrope(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_AxialRope2d a = {
      .end_x = 2, .end_y = 2, .head_dim = 4, .num_heads = 1, .theta = 100.0f, .repeat_factor = 1};
  return rlx_build_AxialRope2d(g, p, 1, &a, NULL, y);
}

/* ---- shape ---- */

static rlx_status b_reshape(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_reshape(g, p[0], 2, (int64_t[]){3, -1}, y);
}

static rlx_status b_transpose(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_transpose(g, p[0], 3, (int64_t[]){2, 0, 1}, y);
}

static rlx_status b_narrow(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Narrow a = {.axis = 1, .start = 1, .len = 2};
  return rlx_build_Narrow(g, p, 1, &a, NULL, y);
}

static rlx_status b_concat(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Concat a = {.axis = 1};
  rlx_id in[3] = {p[0], p[1], p[0]};
  return rlx_build_Concat(g, in, 3, &a, NULL, y);
}

static rlx_status b_expand(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t t[3] = {2, 3, 4};
  rlx_attrs_Expand a = {.target_shape = {.v = t, .n = 3}};
  return rlx_build_Expand(g, p, 1, &a, NULL, y);
}

static int g_gather;
static rlx_status b_gather(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  if (g_gather == 0)
    TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 2}, (double[]){2, 0, 2, 1}, &idx));
  else
    TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){3}, (double[]){3, 0, 3}, &idx));
  rlx_attrs_Gather a = {.axis = g_gather};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_Gather(g, in, 2, &a, NULL, y);
}

static rlx_status b_reverse(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t ax[2] = {0, 2};
  rlx_attrs_Reverse a = {.axes = {.v = ax, .n = 2}};
  return rlx_build_Reverse(g, p, 1, &a, NULL, y);
}

static int g_pad;
static rlx_status b_pad(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t pads[4] = {1, 2, 2, 1};
  rlx_attrs_Pad a;
  rlx_attrs_init(RLX_OP_Pad, &a);
  a.pads = (rlx_ilist){.v = pads, .n = 4};
  a.mode = g_pad;
  a.value = 0.5f;
  return rlx_build_Pad(g, p, 1, &a, NULL, y);
}

static int g_slice;
static rlx_status b_slice(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  static const int64_t cfg[4][3] = {{1, 3, 1}, {0, 3, 2}, {6, 4, -1}, {6, 3, -3}}; /* start, len, step */
  rlx_attrs_Slice a = {.axis = 1, .start = cfg[g_slice][0], .len = cfg[g_slice][1], .step = cfg[g_slice][2]};
  return rlx_build_Slice(g, p, 1, &a, NULL, y);
}

static rlx_status b_tile(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t r[3] = {2, 1, 3};
  rlx_attrs_Tile a = {.reps = {.v = r, .n = 3}};
  return rlx_build_Tile(g, p, 1, &a, NULL, y);
}

static rlx_status b_trilu(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Trilu a = {.upper = true, .diagonal = -1};
  return rlx_build_Trilu(g, p, 1, &a, NULL, y);
}

static rlx_status b_roll(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[2] = {1, -2}, d[2] = {0, 2};
  rlx_attrs_Roll a = {.shifts = {.v = s, .n = 2}, .dims = {.v = d, .n = 2}};
  return rlx_build_Roll(g, p, 1, &a, NULL, y);
}

/* Fft over a real-block last axis: g_fft = inverse * RLX_FFT_NORM_COUNT + norm. */
static int g_fft;
static rlx_status b_fft(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Fft a = {.inverse = g_fft / RLX_FFT_NORM_COUNT != 0, .norm = (rlx_fft_norm)(g_fft % RLX_FFT_NORM_COUNT)};
  return rlx_build_Fft(g, p, 1, &a, NULL, y);
}

static rlx_status b_kvappend(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_KvAppend a = {.axis = 0, .pos = 2};
  return rlx_build_KvAppend(g, p, 2, &a, NULL, y);
}

/* ---- reductions ---- */

static int g_red;
static rlx_status b_reduce(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t axes[2] = {0, 2};
  bool keep = g_red % 2;
  return rlx_reduce_axes(g, (rlx_reduce)(g_red / 2), p[0], g_red / 2 == RLX_REDUCE_MEAN ? 0 : 2, axes, keep, y);
}

static rlx_status b_softmax(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Softmax a = {.axis = 1};
  return rlx_build_Softmax(g, p, 1, &a, NULL, y);
}

static int g_excl;
static rlx_status b_cumsum(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Cumsum a = {.axis = 1, .exclusive = g_excl};
  return rlx_build_Cumsum(g, p, 1, &a, NULL, y);
}

static rlx_status b_cumprod(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_CumProd a = {.axis = -1, .exclusive = g_excl};
  return rlx_build_CumProd(g, p, 1, &a, NULL, y);
}

static rlx_status b_cummax(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_CumMax a = {.axis = -1, .exclusive = false};
  return rlx_build_CumMax(g, p, 1, &a, NULL, y);
}

/* ---- convolution ---- */

static int g_conv; /* 0: stride 2 + asymmetric padding; 1: dilation 2 + groups 2 */
static rlx_status b_conv(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {3, 2}, s2[2] = {2, 1}, pad4[4] = {1, 0, 0, 1}, one[2] = {1, 1}, d2[2] = {2, 1}, pad2[2] = {1, 1};
  rlx_attrs_Conv a = {.kernel_size = {.v = k, .n = 2},
                      .stride = {.v = g_conv ? one : s2, .n = 2},
                      .padding = g_conv ? (rlx_ilist){.v = pad2, .n = 2} : (rlx_ilist){.v = pad4, .n = 4},
                      .dilation = {.v = g_conv ? d2 : one, .n = 2},
                      .groups = g_conv ? 2 : 1};
  return rlx_build_Conv(g, p, 2, &a, NULL, y);
}

static rlx_status b_conv3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[3] = {1, 2, 1}, pad[3] = {1, 0, 1}, d[3] = {1, 1, 1};
  rlx_attrs_Conv3d a = {
      .stride = {.v = s, .n = 3}, .padding = {.v = pad, .n = 3}, .dilation = {.v = d, .n = 3}, .groups = 1};
  return rlx_build_Conv3d(g, p, 2, &a, NULL, y);
}

static rlx_status b_convt2d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 3}, s[2] = {2, 1}, pad[2] = {0, 1}, d[2] = {1, 1}, op[2] = {1, 0};
  rlx_attrs_ConvTranspose2d a = {.kernel_size = {.v = k, .n = 2},
                                 .stride = {.v = s, .n = 2},
                                 .padding = {.v = pad, .n = 2},
                                 .dilation = {.v = d, .n = 2},
                                 .output_padding = {.v = op, .n = 2},
                                 .groups = 2};
  return rlx_build_ConvTranspose2d(g, p, 2, &a, NULL, y);
}

static rlx_status b_convt3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[3] = {2, 1, 1}, pad[3] = {0, 0, 1}, d[3] = {1, 1, 1}, op[3] = {0, 0, 0};
  rlx_attrs_ConvTranspose3d a = {.stride = {.v = s, .n = 3},
                                 .padding = {.v = pad, .n = 3},
                                 .dilation = {.v = d, .n = 3},
                                 .output_padding = {.v = op, .n = 3},
                                 .groups = 1};
  return rlx_build_ConvTranspose3d(g, p, 2, &a, NULL, y);
}

static int g_pool; /* 0 max, 1 mean, 2 max with padding and overlap, 3 mean with padding */
static rlx_status b_pool(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 2}, k3[2] = {3, 2}, s[2] = {2, 1}, pad[2] = {1, 1};
  rlx_attrs_Pool a = {.kind = g_pool % 2 ? RLX_REDUCE_MEAN : RLX_REDUCE_MAX,
                      .kernel_size = {.v = g_pool < 2 ? k : k3, .n = 2},
                      .stride = g_pool < 2 ? (rlx_ilist){.v = NULL, .n = 0} : (rlx_ilist){.v = s, .n = 2},
                      .padding = g_pool < 2 ? (rlx_ilist){.v = NULL, .n = 0} : (rlx_ilist){.v = pad, .n = 2}};
  return rlx_build_Pool(g, p, 1, &a, NULL, y);
}

/* ---- losses ---- */

static rlx_status b_sce(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_build_SoftmaxCrossEntropy(g, p, 2, NULL, y);
}

static rlx_status b_scel(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id lab;
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){3}, (double[]){2, 0, 3}, &lab));
  rlx_id in[2] = {p[0], lab};
  return rlx_build_SoftmaxCrossEntropyWithLogits(g, in, 2, NULL, y);
}

/* ---- scatter / gather ---- */

static int g_sa;
static rlx_status b_scatteradd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){3}, (double[]){1, 3, 1}, &idx));
  rlx_attrs_ScatterAdd a = {.axis = g_sa};
  rlx_shape o = sh(2, g_sa ? (rlx_dim[]){2, 4} : (rlx_dim[]){4, 2});
  rlx_id in[2] = {p[0], idx};
  return rlx_graph_add(g, RLX_OP_ScatterAdd, in, 2, &a, &o, NULL, y);
}

static rlx_status b_gatherelements(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 3}, (double[]){0, 2, 2, 1, 0, 1}, &idx));
  rlx_attrs_GatherElements a = {.axis = 1};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_GatherElements(g, in, 2, &a, NULL, y);
}

static rlx_status b_gathernd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){3, 2}, (double[]){0, 1, 2, 0, 0, 1}, &idx));
  rlx_attrs_GatherNd a = {0};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_GatherNd(g, in, 2, &a, NULL, y);
}

static int g_scat_red;
static rlx_status b_scatterelements(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 2}, (double[]){0, 2, 3, 1}, &idx));
  rlx_attrs_ScatterElements a = {.axis = 1, .reduction = g_scat_red};
  rlx_id in[3] = {p[0], idx, p[1]};
  return rlx_build_ScatterElements(g, in, 3, &a, NULL, y);
}

static rlx_status b_scatternd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 1}, (double[]){2, 0}, &idx));
  rlx_attrs_ScatterNd a = {.reduction = g_scat_red};
  rlx_id in[3] = {p[0], idx, p[1]};
  return rlx_build_ScatterNd(g, in, 3, &a, NULL, y);
}

/* ---- fused ops (differentiated through their decompositions) ---- */

static rlx_status b_swiglu(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedSwiGLU a = {.cast_to = {.has = false, .v = 0}, .gate_first = false};
  return rlx_build_FusedSwiGLU(g, p, 1, &a, NULL, y);
}

static rlx_status b_mmbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedMatMulBiasAct a = {.activation = RLX_ACT_GELU};
  return rlx_build_FusedMatMulBiasAct(g, p, 3, &a, NULL, y);
}

static rlx_status b_mmres(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_build_FusedMatMulResidual(g, p, 3, NULL, y);
}

static rlx_status b_convbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {3, 3}, one[2] = {1, 1};
  rlx_attrs_FusedConvBiasAct a = {.kernel_size = {.v = k, .n = 2},
                                  .stride = {.v = one, .n = 2},
                                  .padding = {.v = one, .n = 2},
                                  .dilation = {.v = one, .n = 2},
                                  .groups = 1,
                                  .activation = RLX_ACT_SILU,
                                  .has_residual = true};
  return rlx_build_FusedConvBiasAct(g, p, 4, &a, NULL, y);
}

static rlx_status b_resln(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedResidualLN a = {.has_bias = true, .eps = 1e-5f};
  return rlx_build_FusedResidualLN(g, p, 5, &a, NULL, y);
}

static rlx_status b_resrms(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedResidualRmsNorm a = {.has_bias = false, .eps = 1e-6f};
  return rlx_build_FusedResidualRmsNorm(g, p, 4, &a, NULL, y);
}

static rlx_status b_lora(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LoraMatMul a = {.scale = 0.5f};
  return rlx_build_LoraMatMul(g, p, 4, &a, NULL, y);
}

static rlx_status b_attnblock(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id mask;
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){1, 3}, (double[]){1, 1, 0}, &mask));
  rlx_attrs_FusedAttentionBlock a = {.num_heads = 2, .head_dim = 2, .has_bias = false, .has_rope = false};
  rlx_id in[4] = {p[0], p[1], p[2], mask};
  return rlx_build_FusedAttentionBlock(g, in, 4, &a, NULL, y);
}

static rlx_status b_txlayer(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id mask;
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){1, 3}, (double[]){1, 1, 1}, &mask));
  rlx_attrs_FusedTransformerLayer a = {.num_heads = 2,
                                       .head_dim = 2,
                                       .intermediate_size = 6,
                                       .eps1 = 1e-5f,
                                       .eps2 = 1e-5f,
                                       .activation = RLX_ACT_GELU,
                                       .has_bias = false};
  rlx_id in[8] = {p[0], p[1], p[2], p[3], p[4], p[5], p[3], mask};
  return rlx_build_FusedTransformerLayer(g, in, 8, &a, NULL, y);
}

static rlx_status b_ewregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  /* tanh(a) * b + a */
  rlx_chain_step st[3] = {
      {RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_TANH, {0, 0}, {0, 0}, {0, 0}},
      {RLX_CHAIN_STEP_BINARY, RLX_BINOP_MUL, {1, 0}, {0, 1}, {0, 0}},
      {RLX_CHAIN_STEP_BINARY, RLX_BINOP_ADD, {1, 1}, {0, 0}, {0, 0}},
  };
  rlx_attrs_ElementwiseRegion a;
  rlx_attrs_init(RLX_OP_ElementwiseRegion, &a);
  a.chain = (rlx_chain){.steps = st, .n = 3};
  a.num_inputs = 2;
  return rlx_build_ElementwiseRegion(g, p, 2, &a, NULL, y);
}

static rlx_status b_tfregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t steps[1] = {0};
  rlx_attrs_TransformRegion a = {.steps = {.v = steps, .n = 1}, .num_inputs = 1};
  return rlx_build_TransformRegion(g, p, 1, &a, NULL, y);
}

static rlx_status b_bewregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_chain_step st[1] = {{RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_SIN, {0, 0}, {0, 0}, {0, 0}}};
  rlx_attrs_BatchElementwiseRegion a;
  rlx_attrs_init(RLX_OP_BatchElementwiseRegion, &a);
  a.chain = (rlx_chain){.steps = st, .n = 1};
  a.num_batch_inputs = 2;
  return rlx_build_BatchElementwiseRegion(g, p, 2, &a, NULL, y);
}

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

static rlx_status b_if(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static rlx_status b_while(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static int g_scan; /* 0: final carry, bcast + Param read in the body; 1: trajectory */
static rlx_status b_scan(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static int g_cfn; /* 0: fwd body only, 1: with a vjp_body */
static rlx_status b_customfn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static int g_raw_index;

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

static rlx_status b_raw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  g_raw = &raw_ops[g_raw_index];
  rlx_shape d = sh(g_raw->rank, g_raw->dims);
  return rlx_graph_add(g, g_raw->op, p, g_raw->n, g_raw->attrs, g_raw->declared ? &d : NULL, NULL, y);
}

static rlx_status b_ropebw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id c, s;
  double cv[3] = {0.9, 0.5, -0.3}, sv[3] = {0.43, 0.86, 0.95};
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){3, 1}, cv, &c));
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){3, 1}, sv, &s));
  rlx_attrs_RopeBackward a = {.head_dim = 2, .n_rot = 2, .style = RLX_ROPE_STYLE_GPTJ};
  return rlx_build_RopeBackward(g, (rlx_id[]){p[0], c, s}, 3, &a, NULL, y);
}

static rlx_status b_gatherbw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){3}, (double[]){1, 0, 1}, &idx));
  rlx_attrs_GatherBackward a = {.axis = 1};
  rlx_shape d = sh(2, (rlx_dim[]){2, 4});
  return rlx_graph_add(g, RLX_OP_GatherBackward, (rlx_id[]){p[0], idx}, 2, &a, &d, NULL, y);
}

static rlx_status b_scebw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static rlx_status b_eigh(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(spd_symm(g, p[0], &a));
  return rlx_graph_node(g, a)->shape.rank == 3 ? rlx_build_EighBatch(g, &a, 1, NULL, y)
                                               : rlx_build_Eigh(g, &a, 1, NULL, y);
}

static rlx_status b_bimap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x;
  TRY(spd_make(g, p[1], 0.5, &x));
  return rlx_build_BiMap(g, (rlx_id[]){p[0], x}, 2, NULL, y);
}

/* g_spd_eig: 0 ReEig, 1 LogEig, 2 ReEig at a repeated spectrum, 3 LogEig at a near-repeated one. */
static int g_spd_eig;
static rlx_status b_reeig(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static rlx_status b_spdbn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id x, m, gg;
  TRY(spd_make(g, p[0], 0.5, &x));
  TRY(spd_diag(g, 3, (double[]){1.5, 0.8, 1.2}, &m));
  TRY(spd_make(g, p[1], 0.5, &gg));
  rlx_attrs_SpdBatchNorm a = {.eps = 1e-5f};
  return rlx_build_SpdBatchNorm(g, (rlx_id[]){x, m, gg}, 3, &a, NULL, y);
}

static rlx_status b_spdlogmap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_make(g, p[1], 0.5, &b));
  return rlx_build_SpdLogMap(g, (rlx_id[]){a, b}, 2, NULL, y);
}

static rlx_status b_spdexpmap(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, v;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_symm(g, p[1], &v));
  return rlx_build_SpdExpMap(g, (rlx_id[]){a, v}, 2, NULL, y);
}

static rlx_status b_spdtransport(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b, v;
  TRY(spd_make(g, p[0], 0.5, &a));
  TRY(spd_make(g, p[1], 0.5, &b));
  TRY(spd_symm(g, p[2], &v));
  return rlx_build_SpdParallelTransport(g, (rlx_id[]){a, b, v}, 3, NULL, y);
}

/* g_spd_fn: the SpdMatFn kind; + 8: at the repeated spectrum diag(1, 1, 2) (batch of 1). */
static int g_spd_fn;
static rlx_status b_spdfn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

static rlx_status b_custom(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static int g_splat_sh; /* SH coefficients per channel */
static rlx_status b_splat(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static int g_rnn;
static int64_t rnn_hidden(void) { return (g_rnn & 7) == 0 ? 3 : 2; }
static rlx_status b_lstm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Lstm a = {.hidden_size = rnn_hidden(),
                      .num_layers = g_rnn & 4 ? 2 : 1,
                      .bidirectional = g_rnn & 1,
                      .carry = (g_rnn & 2) != 0};
  return rlx_build_Lstm(g, p, a.carry ? 6 : 4, &a, NULL, y);
}
static rlx_status b_gru(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Gru a = {.hidden_size = rnn_hidden(),
                     .num_layers = g_rnn & 4 ? 2 : 1,
                     .bidirectional = g_rnn & 1,
                     .carry = (g_rnn & 2) != 0};
  return rlx_build_Gru(g, p, a.carry ? 6 : 5, &a, NULL, y);
}
static rlx_status b_rnn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Rnn a = {.hidden_size = rnn_hidden(),
                     .num_layers = g_rnn & 4 ? 2 : 1,
                     .bidirectional = g_rnn & 1,
                     .carry = (g_rnn & 2) != 0,
                     .relu = (g_rnn & 8) != 0};
  return rlx_build_Rnn(g, p, a.carry ? 5 : 4, &a, NULL, y);
}
static rlx_status b_selscan(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SelectiveScan a = {.state_size = 3};
  return rlx_build_SelectiveScan(g, p, 5, &a, NULL, y);
}
static rlx_status b_mamba2(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Mamba2 a = {.head_dim = 2, .state_size = 3};
  return rlx_build_Mamba2(g, p, 5, &a, NULL, y);
}
/* g_gdn: bit 0 carry_state, bit 1 gate_per_channel; n = 3. */
static int g_gdn;
static rlx_status b_gdn(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GatedDeltaNet a = {.state_size = 3, .carry_state = g_gdn & 1, .gate_per_channel = (g_gdn & 2) != 0};
  return rlx_build_GatedDeltaNet(g, p, a.carry_state ? 6 : 5, &a, NULL, y);
}
static rlx_status b_gdnbw(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GatedDeltaNetBackward a = {.state_size = 3};
  return rlx_build_GatedDeltaNetBackward(g, p, 6, &a, NULL, y);
}
static rlx_status b_pconv(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_PartitionedConv a = {.block = 2};
  return rlx_build_PartitionedConv(g, p, 2, &a, NULL, y);
}
/* LogMel of a [2, 16] spectrum (n_fft 8, 5 bins) through a fixed positive filter bank [4, 5]. */
static rlx_status b_logmel(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id f;
  TRY(cst(g, 2, (rlx_dim[]){4, 5}, 0.1, 1.0, &f));
  rlx_id in[2] = {p[0], f};
  return rlx_build_LogMel(g, in, 2, NULL, y);
}
/* ---- end of sequence models and signal ops ---- */

#define P1(n, lo, hi, r, ...) \
  { n, r, {__VA_ARGS__}, lo, hi }

typedef struct gc_entry {
  gc_case c;
  int *knob; /* set to knob_value before building */
  int knob_value;
} gc_entry;

/* ---- quantization family (spline, synth, dequantizing / scaled matmuls) ---- */
static rlx_status b_spline(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SplineActivation a = {.num_knots = 6, .grid_min = -1.0f, .grid_max = 1.0f};
  return rlx_build_SplineActivation(g, p, 2, &a, NULL, y);
}
static rlx_status b_spline5(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_SplineActivation a = {.num_knots = 5, .grid_min = -0.5f, .grid_max = 1.5f};
  return rlx_build_SplineActivation(g, p, 2, &a, NULL, y);
}
static rlx_status b_synth(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id codes;
  TRY(cstv(g, RLX_I32, 2, (rlx_dim[]){3, 4}, (double[]){0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 2, 0}, &codes));
  rlx_attrs_SynthMatMul a = {.kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 2, .num_entries = 4};
  rlx_id in[3] = {p[0], codes, p[1]};
  return rlx_build_SynthMatMul(g, in, 3, &a, NULL, y);
}
static rlx_status b_synth_rec(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id codes;
  TRY(cstv(g, RLX_F32, 2, (rlx_dim[]){2, 3}, (double[]){0, 2, 2, 1, 0, 3}, &codes));
  rlx_attrs_SynthReconstruct a = {.entry_dim = 3, .num_entries = 4};
  rlx_id in[2] = {codes, p[0]};
  return rlx_build_SynthReconstruct(g, in, 2, &a, NULL, y);
}
/* Int8Block weights [8, 3] with blocks of 4 along K: x and the scales are differentiable. */
static rlx_status b_dqmm_int8(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static rlx_status b_dqmm_gguf(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id w;
  TRY(q8_0_bytes(g, 3, &w));
  rlx_attrs_DequantMatMul a = {.scheme = RLX_QUANT_SCHEME_GGUF_Q8_0, .block_size = 32, .bits = 4, .group_size = 64};
  rlx_shape decl = rlx_shape_make(RLX_F32, 2, (rlx_dim[]){2, 3});
  rlx_id in[2] = {p[0], w};
  return rlx_graph_add(g, RLX_OP_DequantMatMul, in, 2, &a, &decl, NULL, y);
}
static rlx_status b_dgmm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static rlx_status b_smm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
static rlx_status b_sgmm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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
