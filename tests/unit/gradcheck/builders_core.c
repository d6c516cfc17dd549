/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Gradient-check builders: elementwise, linear algebra, norms, resampling, attention, shape,
 * reductions, convolution, losses, scatter / gather and the fused ops. */
#include "gradcheck.h"

/* ---- builder helpers ---- */

rlx_shape sh(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F64, rank, d); }

/* A random f64 constant. */
rlx_status cst(rlx_graph *g, uint32_t rank, const rlx_dim *d, double lo, double hi, rlx_id *out) {
  rlx_shape s = sh(rank, d);
  size_t n = adt_numel(&s);
  double *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = adt_uniform(lo, hi);
  rlx_status st = rlx_constant(g, s, v, n * sizeof *v, out);
  free(v);
  return st;
}

/* A constant of dtype t from the given values. */
rlx_status cstv(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *d, const double *v, rlx_id *out) {
  rlx_shape s = rlx_shape_make(t, rank, d);
  size_t n = adt_numel(&s), sz = rlx_dtype_size(t);
  void *buf = calloc(n ? n : 1, sz);
  for (size_t i = 0; i < n; i++) rlx_elem_set(buf, t, i, v[i]);
  rlx_status st = rlx_constant(g, s, buf, n * sz, out);
  free(buf);
  return st;
}

rlx_status bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, op, a, b, out); }

/* A + k I for a square matrix A [.., n, n] (keeps it well conditioned). */
rlx_status plus_diag(rlx_graph *g, rlx_id a, double k, rlx_id *out) {
  rlx_shape s = rlx_graph_node(g, a)->shape;
  rlx_dim n = s.dims[s.rank - 1];
  double v[64] = {0};
  for (rlx_dim i = 0; i < n; i++) v[i * n + i] = k;
  rlx_id e;
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){n, n}, v, &e));
  return bin(g, RLX_BINOP_ADD, a, e, out);
}

/* ---- elementwise ---- */

int g_act;
rlx_status b_act(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_activation(g, (rlx_act)g_act, p[0], y); }

int g_binop;
rlx_status b_binary(rlx_graph *g, const rlx_id *p, rlx_id *y) { return bin(g, (rlx_binop)g_binop, p[0], p[1], y); }

rlx_status b_mod(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id d;
  TRY(cst(g, 1, (rlx_dim[]){3}, 0.7, 1.3, &d));
  return bin(g, RLX_BINOP_MOD, p[0], d, y);
}

rlx_status b_cast(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a, b;
  TRY(rlx_cast(g, p[0], RLX_F32, &a));
  TRY(bin(g, RLX_BINOP_MUL, a, a, &b));
  return rlx_cast(g, b, RLX_F64, y);
}

rlx_status b_where(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id z, c;
  TRY(cst(g, 2, (rlx_dim[]){2, 3}, -1, 1, &z));
  TRY(rlx_compare(g, RLX_CMP_GT, z, p[0], &c)); /* the predicate depends on a param: no gradient through it */
  rlx_id in[3] = {c, p[1], p[2]};
  return rlx_build_Where(g, in, 3, NULL, y);
}

rlx_status b_fma(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_Fma(g, p, 3, NULL, y); }

rlx_status b_clamp(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Clamp a = {.min = -0.5f, .max = 0.6f};
  return rlx_build_Clamp(g, p, 1, &a, NULL, y);
}

/* ---- linear algebra ---- */

rlx_status b_matmul(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_matmul(g, p[0], p[1], y); }

rlx_status b_dotgeneral(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t lc = 2, rc = 1, lb = 0, rb = 0;
  rlx_attrs_DotGeneral a = {.lhs_contracting = {.v = &lc, .n = 1},
                            .rhs_contracting = {.v = &rc, .n = 1},
                            .lhs_batch = {.v = &lb, .n = 1},
                            .rhs_batch = {.v = &rb, .n = 1}};
  return rlx_build_DotGeneral(g, p, 2, &a, NULL, y);
}

rlx_status b_solve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_id in[2] = {a, p[1]};
  return rlx_build_DenseSolve(g, in, 2, NULL, y);
}

rlx_status b_bsolve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_id in[2] = {a, p[1]};
  return rlx_build_BatchedDenseSolve(g, in, 2, NULL, y);
}

rlx_status b_det(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 2.0, &a));
  return rlx_build_Det(g, &a, 1, NULL, y);
}

rlx_status b_logdet(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id a;
  TRY(plus_diag(g, p[0], 2.0, &a));
  return rlx_build_LogDet(g, &a, 1, NULL, y);
}

rlx_status b_cholesky(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id mt, a;
  TRY(rlx_transpose(g, p[0], 2, (int64_t[]){1, 0}, &mt));
  TRY(rlx_matmul(g, p[0], mt, &a));
  TRY(plus_diag(g, a, 2.0, &a));
  return rlx_build_Cholesky(g, &a, 1, NULL, y);
}

int g_tri;
rlx_status b_trisolve(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  bool lower = g_tri & 1, tr = (g_tri >> 1) & 1;
  rlx_id a;
  TRY(plus_diag(g, p[0], 3.0, &a));
  rlx_attrs_TriangularSolve at = {.lower = lower, .transpose = tr};
  rlx_id in[2] = {a, p[1]};
  return rlx_build_TriangularSolve(g, in, 2, &at, NULL, y);
}

rlx_status b_grouped(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){4}, (double[]){0, 1, 1, 0}, &idx));
  rlx_id in[3] = {p[0], p[1], idx};
  return rlx_build_GroupedMatMul(g, in, 3, NULL, y);
}

rlx_status b_svd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Svd a = {.part = RLX_SVD_PART_S};
  return rlx_build_Svd(g, p, 1, &a, NULL, y);
}

rlx_status b_qr_q(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Qr a = {.part = RLX_QR_PART_Q};
  return rlx_build_Qr(g, p, 1, &a, NULL, y);
}

rlx_status b_qr_r(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Qr a = {.part = RLX_QR_PART_R};
  return rlx_build_Qr(g, p, 1, &a, NULL, y);
}

rlx_status b_im2col(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 3}, s[2] = {2, 1}, pad[4] = {1, 0, 0, 1}, d[2] = {1, 2};
  rlx_attrs_Im2Col a = {.kernel_size = {.v = k, .n = 2},
                        .stride = {.v = s, .n = 2},
                        .padding = {.v = pad, .n = 4},
                        .dilation = {.v = d, .n = 2}};
  return rlx_build_Im2Col(g, p, 1, &a, NULL, y);
}

rlx_status b_sort(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Sort a = {.axis = -1, .descending = true};
  return rlx_build_Sort(g, p, 1, &a, NULL, y);
}

/* ---- normalisation ---- */

rlx_status b_layernorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LayerNorm a = {.axis = -1, .eps = 1e-5f};
  return rlx_build_LayerNorm(g, p, 3, &a, NULL, y);
}

rlx_status b_rmsnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_RmsNorm a = {.axis = -1, .eps = 1e-6f};
  return rlx_build_RmsNorm(g, p, 3, &a, NULL, y);
}

rlx_status b_groupnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_GroupNorm a = {.num_groups = 2, .eps = 1e-5f};
  return rlx_build_GroupNorm(g, p, 3, &a, NULL, y);
}

rlx_status b_batchnorm(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_BatchNormInference a = {.eps = 1e-5f};
  return rlx_build_BatchNormInference(g, p, 5, &a, NULL, y);
}

rlx_status b_layernorm2d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LayerNorm2d a = {.eps = 1e-6f};
  return rlx_build_LayerNorm2d(g, p, 3, &a, NULL, y);
}

int g_ada;
rlx_status b_adaln(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_AdaLayerNorm a = {.norm = g_ada, .eps = 1e-6f};
  return rlx_build_AdaLayerNorm(g, p, 3, &a, NULL, y);
}

rlx_status b_gatedres(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_GatedResidual(g, p, 3, NULL, y); }

/* ---- resampling ---- */

rlx_status b_resize(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_ResizeNearest2x(g, p, 1, NULL, y); }

rlx_status b_interp3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t sz[3] = {3, 2, 5};
  rlx_attrs_Interpolate3d a = {.size = {.v = sz, .n = 3}};
  return rlx_build_Interpolate3d(g, p, 1, &a, NULL, y);
}

/* ---- attention ---- */

int g_attn; /* 0 none rank 3, 1 causal BHSD, 2 sliding + scale + softcap, 3 custom mask, 4 GQA BSHD,
                     5 differentiated bias, 6 v_head_dim + GQA + softcap */
rlx_status b_attention(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

int g_rope;
rlx_status b_rope(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

rlx_status b_axialrope(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_AxialRope2d a = {
      .end_x = 2, .end_y = 2, .head_dim = 4, .num_heads = 1, .theta = 100.0f, .repeat_factor = 1};
  return rlx_build_AxialRope2d(g, p, 1, &a, NULL, y);
}

/* ---- shape ---- */

rlx_status b_reshape(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_reshape(g, p[0], 2, (int64_t[]){3, -1}, y);
}

rlx_status b_transpose(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  return rlx_transpose(g, p[0], 3, (int64_t[]){2, 0, 1}, y);
}

rlx_status b_narrow(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Narrow a = {.axis = 1, .start = 1, .len = 2};
  return rlx_build_Narrow(g, p, 1, &a, NULL, y);
}

rlx_status b_concat(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Concat a = {.axis = 1};
  rlx_id in[3] = {p[0], p[1], p[0]};
  return rlx_build_Concat(g, in, 3, &a, NULL, y);
}

rlx_status b_expand(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t t[3] = {2, 3, 4};
  rlx_attrs_Expand a = {.target_shape = {.v = t, .n = 3}};
  return rlx_build_Expand(g, p, 1, &a, NULL, y);
}

int g_gather;
rlx_status b_gather(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  if (g_gather == 0)
    TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 2}, (double[]){2, 0, 2, 1}, &idx));
  else
    TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){3}, (double[]){3, 0, 3}, &idx));
  rlx_attrs_Gather a = {.axis = g_gather};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_Gather(g, in, 2, &a, NULL, y);
}

rlx_status b_reverse(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t ax[2] = {0, 2};
  rlx_attrs_Reverse a = {.axes = {.v = ax, .n = 2}};
  return rlx_build_Reverse(g, p, 1, &a, NULL, y);
}

int g_pad;
rlx_status b_pad(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t pads[4] = {1, 2, 2, 1};
  rlx_attrs_Pad a;
  rlx_attrs_init(RLX_OP_Pad, &a);
  a.pads = (rlx_ilist){.v = pads, .n = 4};
  a.mode = g_pad;
  a.value = 0.5f;
  return rlx_build_Pad(g, p, 1, &a, NULL, y);
}

int g_slice;
rlx_status b_slice(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  static const int64_t cfg[4][3] = {{1, 3, 1}, {0, 3, 2}, {6, 4, -1}, {6, 3, -3}}; /* start, len, step */
  rlx_attrs_Slice a = {.axis = 1, .start = cfg[g_slice][0], .len = cfg[g_slice][1], .step = cfg[g_slice][2]};
  return rlx_build_Slice(g, p, 1, &a, NULL, y);
}

rlx_status b_tile(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t r[3] = {2, 1, 3};
  rlx_attrs_Tile a = {.reps = {.v = r, .n = 3}};
  return rlx_build_Tile(g, p, 1, &a, NULL, y);
}

rlx_status b_trilu(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Trilu a = {.upper = true, .diagonal = -1};
  return rlx_build_Trilu(g, p, 1, &a, NULL, y);
}

rlx_status b_roll(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[2] = {1, -2}, d[2] = {0, 2};
  rlx_attrs_Roll a = {.shifts = {.v = s, .n = 2}, .dims = {.v = d, .n = 2}};
  return rlx_build_Roll(g, p, 1, &a, NULL, y);
}

/* Fft over a real-block last axis: g_fft = inverse * RLX_FFT_NORM_COUNT + norm. */
int g_fft;
rlx_status b_fft(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Fft a = {.inverse = g_fft / RLX_FFT_NORM_COUNT != 0, .norm = (rlx_fft_norm)(g_fft % RLX_FFT_NORM_COUNT)};
  return rlx_build_Fft(g, p, 1, &a, NULL, y);
}

rlx_status b_kvappend(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_KvAppend a = {.axis = 0, .pos = 2};
  return rlx_build_KvAppend(g, p, 2, &a, NULL, y);
}

/* ---- reductions ---- */

int g_red;
rlx_status b_reduce(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t axes[2] = {0, 2};
  bool keep = g_red % 2;
  return rlx_reduce_axes(g, (rlx_reduce)(g_red / 2), p[0], g_red / 2 == RLX_REDUCE_MEAN ? 0 : 2, axes, keep, y);
}

rlx_status b_softmax(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Softmax a = {.axis = 1};
  return rlx_build_Softmax(g, p, 1, &a, NULL, y);
}

int g_excl;
rlx_status b_cumsum(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_Cumsum a = {.axis = 1, .exclusive = g_excl};
  return rlx_build_Cumsum(g, p, 1, &a, NULL, y);
}

rlx_status b_cumprod(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_CumProd a = {.axis = -1, .exclusive = g_excl};
  return rlx_build_CumProd(g, p, 1, &a, NULL, y);
}

rlx_status b_cummax(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_CumMax a = {.axis = -1, .exclusive = false};
  return rlx_build_CumMax(g, p, 1, &a, NULL, y);
}

/* ---- convolution ---- */

int g_conv; /* 0: stride 2 + asymmetric padding; 1: dilation 2 + groups 2 */
rlx_status b_conv(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {3, 2}, s2[2] = {2, 1}, pad4[4] = {1, 0, 0, 1}, one[2] = {1, 1}, d2[2] = {2, 1}, pad2[2] = {1, 1};
  rlx_attrs_Conv a = {.kernel_size = {.v = k, .n = 2},
                      .stride = {.v = g_conv ? one : s2, .n = 2},
                      .padding = g_conv ? (rlx_ilist){.v = pad2, .n = 2} : (rlx_ilist){.v = pad4, .n = 4},
                      .dilation = {.v = g_conv ? d2 : one, .n = 2},
                      .groups = g_conv ? 2 : 1};
  return rlx_build_Conv(g, p, 2, &a, NULL, y);
}

rlx_status b_conv3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[3] = {1, 2, 1}, pad[3] = {1, 0, 1}, d[3] = {1, 1, 1};
  rlx_attrs_Conv3d a = {
      .stride = {.v = s, .n = 3}, .padding = {.v = pad, .n = 3}, .dilation = {.v = d, .n = 3}, .groups = 1};
  return rlx_build_Conv3d(g, p, 2, &a, NULL, y);
}

rlx_status b_convt2d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 3}, s[2] = {2, 1}, pad[2] = {0, 1}, d[2] = {1, 1}, op[2] = {1, 0};
  rlx_attrs_ConvTranspose2d a = {.kernel_size = {.v = k, .n = 2},
                                 .stride = {.v = s, .n = 2},
                                 .padding = {.v = pad, .n = 2},
                                 .dilation = {.v = d, .n = 2},
                                 .output_padding = {.v = op, .n = 2},
                                 .groups = 2};
  return rlx_build_ConvTranspose2d(g, p, 2, &a, NULL, y);
}

rlx_status b_convt3d(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t s[3] = {2, 1, 1}, pad[3] = {0, 0, 1}, d[3] = {1, 1, 1}, op[3] = {0, 0, 0};
  rlx_attrs_ConvTranspose3d a = {.stride = {.v = s, .n = 3},
                                 .padding = {.v = pad, .n = 3},
                                 .dilation = {.v = d, .n = 3},
                                 .output_padding = {.v = op, .n = 3},
                                 .groups = 1};
  return rlx_build_ConvTranspose3d(g, p, 2, &a, NULL, y);
}

int g_pool; /* 0 max, 1 mean, 2 max with padding and overlap, 3 mean with padding */
rlx_status b_pool(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t k[2] = {2, 2}, k3[2] = {3, 2}, s[2] = {2, 1}, pad[2] = {1, 1};
  rlx_attrs_Pool a = {.kind = g_pool % 2 ? RLX_REDUCE_MEAN : RLX_REDUCE_MAX,
                      .kernel_size = {.v = g_pool < 2 ? k : k3, .n = 2},
                      .stride = g_pool < 2 ? (rlx_ilist){.v = NULL, .n = 0} : (rlx_ilist){.v = s, .n = 2},
                      .padding = g_pool < 2 ? (rlx_ilist){.v = NULL, .n = 0} : (rlx_ilist){.v = pad, .n = 2}};
  return rlx_build_Pool(g, p, 1, &a, NULL, y);
}

/* ---- losses ---- */

rlx_status b_sce(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_SoftmaxCrossEntropy(g, p, 2, NULL, y); }

rlx_status b_scel(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id lab;
  TRY(cstv(g, RLX_F32, 1, (rlx_dim[]){3}, (double[]){2, 0, 3}, &lab));
  rlx_id in[2] = {p[0], lab};
  return rlx_build_SoftmaxCrossEntropyWithLogits(g, in, 2, NULL, y);
}

/* ---- scatter / gather ---- */

int g_sa;
rlx_status b_scatteradd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 1, (rlx_dim[]){3}, (double[]){1, 3, 1}, &idx));
  rlx_attrs_ScatterAdd a = {.axis = g_sa};
  rlx_shape o = sh(2, g_sa ? (rlx_dim[]){2, 4} : (rlx_dim[]){4, 2});
  rlx_id in[2] = {p[0], idx};
  return rlx_graph_add(g, RLX_OP_ScatterAdd, in, 2, &a, &o, NULL, y);
}

rlx_status b_gatherelements(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 3}, (double[]){0, 2, 2, 1, 0, 1}, &idx));
  rlx_attrs_GatherElements a = {.axis = 1};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_GatherElements(g, in, 2, &a, NULL, y);
}

rlx_status b_gathernd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){3, 2}, (double[]){0, 1, 2, 0, 0, 1}, &idx));
  rlx_attrs_GatherNd a = {0};
  rlx_id in[2] = {p[0], idx};
  return rlx_build_GatherNd(g, in, 2, &a, NULL, y);
}

int g_scat_red;
rlx_status b_scatterelements(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 2}, (double[]){0, 2, 3, 1}, &idx));
  rlx_attrs_ScatterElements a = {.axis = 1, .reduction = g_scat_red};
  rlx_id in[3] = {p[0], idx, p[1]};
  return rlx_build_ScatterElements(g, in, 3, &a, NULL, y);
}

rlx_status b_scatternd(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id idx;
  TRY(cstv(g, RLX_I64, 2, (rlx_dim[]){2, 1}, (double[]){2, 0}, &idx));
  rlx_attrs_ScatterNd a = {.reduction = g_scat_red};
  rlx_id in[3] = {p[0], idx, p[1]};
  return rlx_build_ScatterNd(g, in, 3, &a, NULL, y);
}

/* ---- fused ops (differentiated through their decompositions) ---- */

rlx_status b_swiglu(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedSwiGLU a = {.cast_to = {.has = false, .v = 0}, .gate_first = false};
  return rlx_build_FusedSwiGLU(g, p, 1, &a, NULL, y);
}

rlx_status b_mmbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedMatMulBiasAct a = {.activation = RLX_ACT_GELU};
  return rlx_build_FusedMatMulBiasAct(g, p, 3, &a, NULL, y);
}

rlx_status b_mmres(rlx_graph *g, const rlx_id *p, rlx_id *y) { return rlx_build_FusedMatMulResidual(g, p, 3, NULL, y); }

rlx_status b_convbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

rlx_status b_resln(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedResidualLN a = {.has_bias = true, .eps = 1e-5f};
  return rlx_build_FusedResidualLN(g, p, 5, &a, NULL, y);
}

rlx_status b_resrms(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_FusedResidualRmsNorm a = {.has_bias = false, .eps = 1e-6f};
  return rlx_build_FusedResidualRmsNorm(g, p, 4, &a, NULL, y);
}

rlx_status b_lora(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_attrs_LoraMatMul a = {.scale = 0.5f};
  return rlx_build_LoraMatMul(g, p, 4, &a, NULL, y);
}

rlx_status b_attnblock(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_id mask;
  TRY(cstv(g, RLX_F64, 2, (rlx_dim[]){1, 3}, (double[]){1, 1, 0}, &mask));
  rlx_attrs_FusedAttentionBlock a = {.num_heads = 2, .head_dim = 2, .has_bias = false, .has_rope = false};
  rlx_id in[4] = {p[0], p[1], p[2], mask};
  return rlx_build_FusedAttentionBlock(g, in, 4, &a, NULL, y);
}

rlx_status b_txlayer(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

rlx_status b_ewregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
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

rlx_status b_tfregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  int64_t steps[1] = {0};
  rlx_attrs_TransformRegion a = {.steps = {.v = steps, .n = 1}, .num_inputs = 1};
  return rlx_build_TransformRegion(g, p, 1, &a, NULL, y);
}

rlx_status b_bewregion(rlx_graph *g, const rlx_id *p, rlx_id *y) {
  rlx_chain_step st[1] = {{RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_SIN, {0, 0}, {0, 0}, {0, 0}}};
  rlx_attrs_BatchElementwiseRegion a;
  rlx_attrs_init(RLX_OP_BatchElementwiseRegion, &a);
  a.chain = (rlx_chain){.steps = st, .n = 1};
  a.num_batch_inputs = 2;
  return rlx_build_BatchElementwiseRegion(g, p, 2, &a, NULL, y);
}
