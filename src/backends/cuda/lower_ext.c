/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Lowering rows for the kernels of cu_ext.h (norms2.cu, complex.cu): GroupNorm, LayerNorm2d,
 * BatchNormInference and their backward kinds, Conjugate, ComplexNormSq(+Backward). Shapes and
 * dtypes are checked here with the CPU reference's rules (spec ir-core §10.4); the kernels
 * compute in double and round once, as the CPU does. */
#include <stdint.h>
#include <string.h>

#include "backends/cpu/ref/attention_util.h"
#include "backends/cuda/lower_internal.h"
#include "core/elem.h"

/* The kernel family of each mode. */
typedef rlx_status (*ext_fn)(rlx_cu_ctx *c, const rlx_cu_ext *e);
static const ext_fn ext_run_table[] = {
    [RLX_CU_EXT_LINE_NORM] = rlx_cu_norm2_run,
    [RLX_CU_EXT_GN_DX] = rlx_cu_norm2_run,
    [RLX_CU_EXT_GN_STATS] = rlx_cu_norm2_run,
    [RLX_CU_EXT_GN_PARAM] = rlx_cu_norm2_run,
    [RLX_CU_EXT_BN] = rlx_cu_norm2_run,
    [RLX_CU_EXT_BN_DX] = rlx_cu_norm2_run,
    [RLX_CU_EXT_BN_DGAMMA] = rlx_cu_norm2_run,
    [RLX_CU_EXT_BN_DBETA] = rlx_cu_norm2_run,
    [RLX_CU_EXT_RES_NORM] = rlx_cu_norm2_run,
    [RLX_CU_EXT_ADA_NORM] = rlx_cu_norm2_run,
    [RLX_CU_EXT_HISTOGRAM] = rlx_cu_histogram_run,
    [RLX_CU_EXT_ROPE_BW] = rlx_cu_rope2_run,
    [RLX_CU_EXT_AXIAL_ROPE] = rlx_cu_rope2_run,
    [RLX_CU_EXT_PARTCONV] = rlx_cu_partconv_run,
    [RLX_CU_EXT_SPLINE] = rlx_cu_spline_run,
    [RLX_CU_EXT_SPLINE_DX] = rlx_cu_spline_run,
    [RLX_CU_EXT_SPLINE_DC] = rlx_cu_spline_run,
    [RLX_CU_EXT_ADA_BW] = rlx_cu_bw_ext_run,
    [RLX_CU_EXT_GATED_BW] = rlx_cu_bw_ext_run,
    [RLX_CU_EXT_FQ] = rlx_cu_fq_run,
    [RLX_CU_EXT_FQ_BW] = rlx_cu_fq_run,
    [RLX_CU_EXT_QUANT] = rlx_cu_quant_run,
    [RLX_CU_EXT_DEQUANT] = rlx_cu_quant_run,
    [RLX_CU_EXT_INTERP3D] = rlx_cu_interp3d_run,
    [RLX_CU_EXT_SYNTH_REC] = rlx_cu_synth_run,
    [RLX_CU_EXT_SYNTH_MM] = rlx_cu_synth_run,
    [RLX_CU_EXT_SYNTH_BW_DX] = rlx_cu_synth_run,
    [RLX_CU_EXT_SYNTH_BW_CB] = rlx_cu_synth_run,
    [RLX_CU_EXT_CHOLESKY] = rlx_cu_solver_run,
    [RLX_CU_EXT_DET] = rlx_cu_solver_run,
    [RLX_CU_EXT_LOGDET] = rlx_cu_solver_run,
    [RLX_CU_EXT_SOLVE] = rlx_cu_solver_run,
    [RLX_CU_EXT_TRSM] = rlx_cu_solver_run,
    [RLX_CU_EXT_QR] = rlx_cu_la_run,
    [RLX_CU_EXT_SVD] = rlx_cu_la_run,
    [RLX_CU_EXT_EIGH] = rlx_cu_la_run,
    [RLX_CU_EXT_CONJ] = rlx_cu_complex_run,
    [RLX_CU_EXT_NORMSQ] = rlx_cu_complex_run,
    [RLX_CU_EXT_NORMSQ_BW] = rlx_cu_complex_run,
};

rlx_status rlx_cu_ext_run(rlx_cu_ctx *c, const rlx_cu_ext *e) {
  if (e->mode < 0 || (size_t)e->mode >= sizeof ext_run_table / sizeof *ext_run_table || !ext_run_table[e->mode])
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: extension step mode %d has no kernel", e->mode);
  return ext_run_table[e->mode](c, e);
}

static bool ext_begin(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode) {
  s->kind = ST_EXT;
  s->ext.mode = mode;
  s->ext.dtype = n->shape.dtype;
  for (uint32_t i = 0; i < n->n_inputs && i < 5; i++) s->ext.in[i] = addr(L->p, n->inputs[i]);
  s->ext.in_dtype = n->n_inputs ? shape_of(L->p, n->inputs[0])->dtype : n->shape.dtype;
  s->ext.out = addr(L->p, id);
  s->ext.P = 1;
  s->ext.G = 1;
  s->ext.S = 1;
  s->ext.stride = 1;
  return true;
}

static bool is_float(int t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }

/* operand i: a float of the output's dtype with exactly c elements (a per-channel vector) */
static bool need_vec(lower_ctx *L, const rlx_node *n, uint32_t i, int64_t c, const char *what) {
  const rlx_shape *v = shape_of(L->p, n->inputs[i]);
  if (v->dtype != n->shape.dtype || v->rank == 0 || numel(v) != c)
    return fail(L, "operand %s must hold one value per channel, of x's dtype", what);
  return true;
}

/* operand 0 (x) and operand dy: floats of the output's dtype, dy shaped like x */
static bool need_x(lower_ctx *L, const rlx_node *n, uint32_t min_rank, int dy) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!is_float(x->dtype)) return fail(L, "x must be a float tensor, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank < min_rank) return fail(L, "x has too small a rank for this norm%s", "");
  if (dy >= 0) {
    const rlx_shape *d = shape_of(L->p, n->inputs[dy]);
    if (d->dtype != x->dtype || !rlx_shape_equal(d, x)) return fail(L, "dy must have x's shape and dtype%s", "");
  }
  return true;
}

static int64_t spatial(const rlx_shape *x) {
  int64_t s = 1;
  for (uint32_t k = 2; k < x->rank; k++) s *= x->dims[k];
  return s;
}

/* GroupNorm lines: [N, C, S] in groups of cg channels; line r = b * G + g, contiguous. */
static bool gn_geom(lower_ctx *L, const rlx_shape *x, int64_t G, cu_step *s) {
  int64_t C = x->dims[1];
  if (G < 1 || C % G != 0) return fail(L, "attribute num_groups must be >= 1 and divide the channel count%s", "");
  rlx_cu_ext *e = &s->ext;
  e->N = x->dims[0];
  e->C = C;
  e->G = G;
  e->cg = C / G;
  e->S = spatial(x);
  e->len = e->cg * e->S;
  e->rows = e->N * G;
  e->B = e->len;
  return true;
}

bool lower_GroupNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 3, -1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!need_vec(L, n, 1, x->dims[1], "1 (gamma)") || !need_vec(L, n, 2, x->dims[1], "2 (beta)")) return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_LINE_NORM);
  s->ext.eps = n->attrs.GroupNorm.eps;
  return gn_geom(L, x, n->attrs.GroupNorm.num_groups, s);
}

/* x [N, C, H, W]: at every (b, h, w) the C values at stride H W. */
bool lower_LayerNorm2d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 4, -1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank != 4) return fail(L, "x must be NCHW (rank 4)%s", "");
  int64_t C = x->dims[1], HW = x->dims[2] * x->dims[3];
  if (!need_vec(L, n, 1, C, "1 (gamma)") || !need_vec(L, n, 2, C, "2 (beta)")) return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_LINE_NORM);
  rlx_cu_ext *e = &s->ext;
  e->eps = n->attrs.LayerNorm2d.eps;
  e->len = C;
  e->stride = HW;
  e->P = HW > 0 ? HW : 1;
  e->B = C * HW;
  e->rows = x->dims[0] * HW;
  e->cg = 0; /* parameter index = i / S = i */
  return true;
}

/* [x, gamma, beta, dy] -> dx */
bool lower_GroupNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 3, 3)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!need_vec(L, n, 1, x->dims[1], "1 (gamma)") || !need_vec(L, n, 2, x->dims[1], "2 (beta)")) return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_GN_DX);
  s->ext.in[2] = addr(L->p, n->inputs[3]);
  s->ext.eps = n->attrs.GroupNormBackwardInput.eps;
  return gn_geom(L, x, n->attrs.GroupNormBackwardInput.num_groups, s);
}

/* [x, dy] -> [C] */
static bool gn_param(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int64_t G, double eps, int want_xh) {
  if (!need_x(L, n, 3, 1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (numel(&n->shape) != x->dims[1] || n->shape.dtype != x->dtype)
    return fail(L, "the output must hold one value per channel, of x's dtype%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_GN_PARAM);
  s->ext.eps = eps;
  s->ext.want_xh = want_xh;
  if (!gn_geom(L, x, G, s)) return false;
  if (want_xh) {
    size_t bytes = (size_t)(s->ext.rows > 0 ? s->ext.rows : 1) * 2 * sizeof(double);
    if (rlx_cu_malloc(L->p->ctx, bytes, &s->scratch) != RLX_OK)
      return fail(L, "no device memory for the group statistics: %s", rlx_last_error());
    s->ext.scratch = s->scratch;
  }
  return true;
}
bool lower_GroupNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_GroupNormBackwardGamma *a = &n->attrs.GroupNormBackwardGamma;
  return gn_param(L, id, n, s, a->num_groups, a->eps, 1);
}
bool lower_GroupNormBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_GroupNormBackwardBeta *a = &n->attrs.GroupNormBackwardBeta;
  return gn_param(L, id, n, s, a->num_groups, a->eps, 0);
}

/* Features are the last axis of x. */
static int64_t last_dim(const rlx_shape *x) { return x->rank ? x->dims[x->rank - 1] : 0; }

bool lower_BatchNormInference(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 1, -1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t C = last_dim(x);
  static const char *const names[] = {"1 (gamma)", "2 (beta)", "3 (mean)", "4 (var)"};
  for (uint32_t i = 1; i < 5; i++)
    if (!need_vec(L, n, i, C, names[i - 1])) return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_BN);
  s->ext.C = C;
  s->ext.count = numel(x);
  s->ext.eps = n->attrs.BatchNormInference.eps;
  return true;
}

/* [x, gamma, mean, var, dy] -> dy gamma / sqrt(var + eps) */
bool lower_BatchNormInferenceBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 1, 4)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t C = last_dim(x);
  if (!need_vec(L, n, 1, C, "1 (gamma)") || !need_vec(L, n, 2, C, "2 (mean)") || !need_vec(L, n, 3, C, "3 (var)"))
    return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_BN_DX);
  s->ext.in[0] = addr(L->p, n->inputs[1]);
  s->ext.in[1] = addr(L->p, n->inputs[3]);
  s->ext.in[2] = addr(L->p, n->inputs[4]);
  s->ext.C = C;
  s->ext.count = numel(x);
  s->ext.eps = n->attrs.BatchNormInferenceBackwardInput.eps;
  return true;
}

/* [x, mean, var, dy] -> [C] */
bool lower_BatchNormInferenceBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 1, 3)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t C = last_dim(x);
  if (!need_vec(L, n, 1, C, "1 (mean)") || !need_vec(L, n, 2, C, "2 (var)")) return false;
  if (numel(&n->shape) != C) return fail(L, "the output must hold one value per channel%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_BN_DGAMMA);
  s->ext.C = C;
  s->ext.rows = C ? numel(x) / C : 0;
  s->ext.eps = n->attrs.BatchNormInferenceBackwardGamma.eps;
  return true;
}

/* [dy] -> [C] */
bool lower_BatchNormInferenceBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 1, -1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t C = last_dim(x);
  if (numel(&n->shape) != C || n->shape.dtype != x->dtype)
    return fail(L, "the output must hold one value per channel, of dy's dtype%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_BN_DBETA);
  s->ext.C = C;
  s->ext.rows = C ? numel(x) / C : 0;
  return true;
}

/* ---- complex ---- */

static bool need_complex(lower_ctx *L, const rlx_node *n) {
  const rlx_shape *z = shape_of(L->p, n->inputs[0]);
  if (!is_complex(z->dtype))
    return fail(L, "operand 0 (z) must be complex, got %s", rlx_dtype_name((rlx_dtype)z->dtype));
  if (numel(z) != numel(&n->shape)) return fail(L, "the output must have z's shape%s", "");
  return true;
}
static int real_of(int t) { return t == RLX_C128 ? RLX_F64 : RLX_F32; }

bool lower_Conjugate(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_complex(L, n)) return false;
  if (n->shape.dtype != shape_of(L->p, n->inputs[0])->dtype) return fail(L, "the output must have z's dtype%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_CONJ);
  s->ext.count = numel(&n->shape);
  return true;
}
bool lower_ComplexNormSq(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_complex(L, n)) return false;
  if (n->shape.dtype != real_of(shape_of(L->p, n->inputs[0])->dtype))
    return fail(L, "the output must have z's real dtype%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_NORMSQ);
  s->ext.count = numel(&n->shape);
  return true;
}
/* [z, g] -> g z */
bool lower_ComplexNormSqBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_complex(L, n)) return false;
  int t = shape_of(L->p, n->inputs[0])->dtype;
  const rlx_shape *g = shape_of(L->p, n->inputs[1]);
  if (n->shape.dtype != t || g->dtype != real_of(t) || numel(g) != numel(&n->shape))
    return fail(L, "g must be z's real dtype with z's element count; the output z's dtype%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_NORMSQ_BW);
  s->ext.count = numel(&n->shape);
  return true;
}

/* ---- through the shared elementwise and copy kernels ---- */

/* x + gate * y = the elementwise Fma (gate, y, x): every dtype, gate broadcast by strides; floats
 * rounded once (the CPU rounds x + gate * y computed in double once). */
bool lower_GatedResidual(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *y = shape_of(L->p, n->inputs[1]);
  if (!rlx_shape_equal(x, y) || !rlx_shape_equal(x, &n->shape)) return fail(L, "y must have x's shape and dtype%s", "");
  if (shape_of(L->p, n->inputs[2])->dtype != x->dtype) return fail(L, "gate must have x's dtype%s", "");
  if (x->dtype == RLX_BOOL) return fail(L, "GatedResidual needs a numeric dtype, got %s", "bool");
  if (!ew_setup(L, id, n, s, RLX_CU_EW_FMA, 0)) return false;
  rlx_cu_ew *e = &s->ew, t = *e;
  static const int from[3] = {2, 1, 0}; /* Fma(a, b, c) = a * b + c: a = gate, b = y, c = x */
  for (int i = 0; i < 3; i++) {
    e->in[i] = t.in[from[i]];
    e->in_dtype[i] = t.in_dtype[from[i]];
    memcpy(e->stride[i], t.stride[from[i]], sizeof e->stride[i]);
  }
  return true;
}

/* [N, C, H, W] -> [N, C, 2H, 2W]: one strided copy over the view [N, C, H, 2, W, 2] whose two
 * size-2 axes read the source with stride 0. */
bool lower_ResizeNearest2x(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank != 4 || x->dtype != n->shape.dtype) return fail(L, "operand 0 must be NCHW of the output's dtype%s", "");
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  const int64_t dims[6] = {N, C, H, 2, W, 2}, src[6] = {C * H * W, H * W, W, 0, 1, 0};
  c->rank = 6;
  c->n = 1;
  for (int k = 5; k >= 0; k--) {
    c->dims[k] = dims[k];
    c->src_stride[k] = src[k];
    c->dst_stride[k] = c->n;
    c->n *= dims[k];
  }
  c->src = addr(L->p, n->inputs[0]);
  c->dst = addr(L->p, id);
  c->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  return true;
}

/* [cache, row] -> cache positions [0, pos) then row at pos along axis: two strided copies over
 * [outer, len, inner]. */
bool lower_KvAppend(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *cache = shape_of(L->p, n->inputs[0]), *row = shape_of(L->p, n->inputs[1]);
  int64_t ax = n->attrs.KvAppend.axis < 0 ? n->attrs.KvAppend.axis + (int64_t)cache->rank : n->attrs.KvAppend.axis;
  int64_t pos = n->attrs.KvAppend.pos;
  if (ax < 0 || ax >= (int64_t)cache->rank) return fail(L, "attribute axis is out of range%s", "");
  if (row->dtype != cache->dtype || n->shape.dtype != cache->dtype || row->rank != cache->rank || row->dims[ax] != 1)
    return fail(L, "operand 1 (row) must be the cache's dtype with extent 1 on the axis%s", "");
  if (pos < 0 || pos >= cache->dims[ax]) return fail(L, "attribute pos must lie within the cache's axis%s", "");
  int64_t outer = 1, inner = 1, cap = cache->dims[ax];
  for (int64_t k = 0; k < ax; k++) outer *= cache->dims[k];
  for (int64_t k = ax + 1; k < (int64_t)cache->rank; k++) inner *= cache->dims[k];
  rlx_cu_copy *c = copies(s, 2);
  if (!c) return fail(L, "out of %s", "memory");
  size_t esz = rlx_dtype_size((rlx_dtype)cache->dtype);
  /* the prefix [outer, pos, inner] */
  c[0].rank = 3;
  c[0].dims[0] = outer, c[0].dims[1] = pos, c[0].dims[2] = inner;
  c[0].src_stride[0] = cap * inner, c[0].src_stride[1] = inner, c[0].src_stride[2] = 1;
  c[0].dst_stride[0] = (pos + 1) * inner, c[0].dst_stride[1] = inner, c[0].dst_stride[2] = 1;
  c[0].n = outer * pos * inner;
  c[0].src = addr(L->p, n->inputs[0]);
  c[0].dst = addr(L->p, id);
  c[0].esz = (int)esz;
  /* the row [outer, inner] at position pos */
  c[1].rank = 2;
  c[1].dims[0] = outer, c[1].dims[1] = inner;
  c[1].src_stride[0] = inner, c[1].src_stride[1] = 1;
  c[1].dst_stride[0] = (pos + 1) * inner, c[1].dst_stride[1] = 1;
  c[1].n = outer * inner;
  c[1].src = addr(L->p, n->inputs[1]);
  c[1].dst = (uint8_t *)addr(L->p, id) + (size_t)(pos * inner) * esz;
  c[1].esz = (int)esz;
  return true;
}

/* ---- fused norms ---- */

/* [x, res, (bias), gamma, beta]: norm over the last axis of h = x + res (+ bias). */
static bool res_norm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, bool has_bias, double eps, int rms) {
  uint32_t want = has_bias ? 5u : 4u;
  if (n->n_inputs != want) return fail(L, "attribute has_bias does not match the operand count%s", "");
  if (!need_x(L, n, 1, 1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int64_t D = last_dim(x);
  if (has_bias && !need_vec(L, n, 2, D, "2 (bias)")) return false;
  uint32_t g = has_bias ? 3u : 2u;
  if (!need_vec(L, n, g, D, "gamma") || !need_vec(L, n, g + 1, D, "beta")) return false;
  ext_begin(L, id, n, s, RLX_CU_EXT_RES_NORM);
  rlx_cu_ext *e = &s->ext;
  e->in[2] = has_bias ? addr(L->p, n->inputs[2]) : NULL;
  e->in[3] = addr(L->p, n->inputs[g]);
  e->in[4] = addr(L->p, n->inputs[g + 1]);
  e->rms = rms;
  e->eps = eps;
  e->len = D;
  e->rows = D ? numel(x) / D : 0;
  return true;
}
bool lower_FusedResidualLN(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FusedResidualLN *a = &n->attrs.FusedResidualLN;
  return res_norm(L, id, n, s, a->has_bias, a->eps, 0);
}
bool lower_FusedResidualRmsNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FusedResidualRmsNorm *a = &n->attrs.FusedResidualRmsNorm;
  return res_norm(L, id, n, s, a->has_bias, a->eps, 1);
}

/* [x, scale, shift]: norm(x) (1 + scale) + shift, scale / shift broadcast onto x. */
bool lower_AdaLayerNorm(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_AdaLayerNorm *a = &n->attrs.AdaLayerNorm;
  if (a->norm != RLX_ADA_NORM_LAYER_NORM && a->norm != RLX_ADA_NORM_RMS_NORM)
    return fail(L, "attribute norm is not an AdaNormKind%s", "");
  if (!need_x(L, n, 1, -1)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank > 8) return fail(L, "rank over %s", "8");
  ext_begin(L, id, n, s, RLX_CU_EXT_ADA_NORM);
  rlx_cu_ext *e = &s->ext;
  for (uint32_t i = 1; i < 3; i++) {
    const rlx_shape *b = shape_of(L->p, n->inputs[i]);
    if (b->dtype != x->dtype || b->rank > x->rank) return fail(L, "scale / shift must broadcast onto x%s", "");
    for (uint32_t k = 0; k < b->rank; k++) {
      int64_t d = b->dims[k], xd = x->dims[x->rank - b->rank + k];
      if (d != 1 && d != xd) return fail(L, "scale / shift must broadcast onto x%s", "");
    }
    bcast_strides(b, x, e->bstride[i - 1]);
  }
  e->rank = (int)x->rank;
  for (uint32_t k = 0; k < x->rank; k++) e->dims[k] = x->dims[k];
  e->rms = a->norm == RLX_ADA_NORM_RMS_NORM;
  e->eps = a->eps;
  e->len = last_dim(x);
  e->rows = e->len ? numel(x) / e->len : 0;
  return true;
}

/* [x] -> [bins] counts of the values in [min, max]. */
bool lower_Histogram(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Histogram *a = &n->attrs.Histogram;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  double lo = a->min, hi = a->max;
  if (is_complex(x->dtype)) return fail(L, "Histogram needs a real dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (a->bins < 1) return fail(L, "attribute bins must be >= 1%s", "");
  if (!(lo < hi) || lo - lo != 0 || hi - hi != 0)
    return fail(L, "attributes min and max must be finite with min < max%s", "");
  if (numel(&n->shape) != a->bins) return fail(L, "the output must hold one count per bin%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_HISTOGRAM);
  rlx_cu_ext *e = &s->ext;
  e->lo = lo;
  e->hi = hi;
  e->len = a->bins;
  e->count = numel(x);
  if (rlx_cu_malloc(L->p->ctx, (size_t)a->bins * 8, &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the histogram counts: %s", rlx_last_error());
  e->scratch = s->scratch;
  return true;
}

/* ---- positions ---- */

/* [dy, cos, sin] -> dx: the forward Rope's geometry (the CPU reference's check), angle negated. */
bool lower_RopeBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RopeBackward *a = &n->attrs.RopeBackward;
  rlx_tensor in[3], out = {.data = addr(L->p, id), .shape = n->shape};
  for (uint32_t i = 0; i < 3; i++) {
    in[i].shape = *shape_of(L->p, n->inputs[i]);
    in[i].data = addr(L->p, n->inputs[i]);
  }
  rope_geom g;
  if (rlx_ref_rope_check(n, in, &out, a->head_dim, a->n_rot, (int)a->style, "dy", &g) != RLX_OK)
    return fail(L, "%s", rlx_last_error());
  ext_begin(L, id, n, s, RLX_CU_EXT_ROPE_BW);
  rlx_cu_rope *r = &s->ext.rope;
  r->batch = (int64_t)g.batch;
  r->S = (int64_t)g.S;
  r->heads = (int64_t)g.heads;
  r->hd = (int64_t)g.hd;
  r->nr = (int64_t)g.nr;
  r->width = (int64_t)g.width;
  r->per_token = g.per_token;
  r->neox = g.neox;
  r->dtype = n->shape.dtype;
  r->x = in[0].data;
  r->cos = in[1].data;
  r->sin = in[2].data;
  r->out = out.data;
  return true;
}

/* x [B, N, H D] with N = end_x end_y repeat_factor. */
bool lower_AxialRope2d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_AxialRope2d *a = &n->attrs.AxialRope2d;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!need_x(L, n, 3, -1)) return false;
  int64_t D = a->head_dim, H = a->num_heads, rep = a->repeat_factor, ex = a->end_x, ey = a->end_y;
  if (x->rank != 3) return fail(L, "operand 0 (x) must be [B, N, H*D]%s", "");
  if (D < 4 || D % 4 || H < 1 || rep < 1 || ex < 1 || ey < 1)
    return fail(L,
                "attributes head_dim (a multiple of 4), num_heads, repeat_factor, end_x and end_y must be "
                "positive%s",
                "");
  if (x->dims[2] != H * D || x->dims[1] != ex * ey * rep)
    return fail(L, "operand 0 (x) must be [B, end_x * end_y * repeat_factor, num_heads * head_dim]%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_AXIAL_ROPE);
  rlx_cu_ext *e = &s->ext;
  e->count = numel(x);
  e->hd = D;
  e->heads = H;
  e->rep = rep;
  e->ex = ex;
  e->tokens = x->dims[1];
  e->theta = a->theta;
  return true;
}

/* ---- ScatterNd / GatherNd (scatter.cu's mode 2 addressing) ---- */

static bool need_index(lower_ctx *L, const rlx_shape *ix) {
  if (is_complex(ix->dtype) || ix->dtype == RLX_BOOL)
    return fail(L, "indices must be integers or a float holding integers, got %s",
                rlx_dtype_name((rlx_dtype)ix->dtype));
  return true;
}

/* tuples of k index values address data axes [b, b + k) */
static void nd_addressing(rlx_cu_scatter *sc, const rlx_shape *d, uint32_t b, uint32_t k, int64_t per_batch) {
  int64_t st[RLX_MAX_RANK];
  dense_strides(d, st);
  sc->mode = 2;
  sc->wrap = 1;
  sc->rank = (int)k;
  for (uint32_t c = 0; c < k; c++) {
    sc->idx_dims[c] = d->dims[b + c];
    sc->data_stride[c] = st[b + c];
  }
  sc->inner = 1;
  for (uint32_t i = b + k; i < d->rank; i++) sc->inner *= d->dims[i];
  sc->outer = 1;
  for (uint32_t i = b; i < d->rank; i++) sc->outer *= d->dims[i];
  sc->U = per_batch > 0 ? per_batch : 1;
}

/* [data, indices [..., k], updates] -> data with out[indices[j]] (reduce)= updates[j]. */
bool lower_ScatterNd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *d = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]),
                  *u = shape_of(L->p, n->inputs[2]);
  int t = n->shape.dtype, red = n->attrs.ScatterNd.reduction;
  if (!need_index(L, ix)) return false;
  if (d->dtype != t || u->dtype != t) return fail(L, "data and updates must have the output's dtype%s", "");
  if (red < 0 || red >= RLX_SCATTER_REDUCTION_COUNT) return fail(L, "attribute reduction is not a reduction%s", "");
  if (is_complex(t) && (red == RLX_SCATTER_REDUCTION_MAX || red == RLX_SCATTER_REDUCTION_MIN))
    return fail(L, "Max / Min are not defined for complex dtype %s", rlx_dtype_name((rlx_dtype)t));
  if (ix->rank == 0 || ix->dims[ix->rank - 1] < 1 || ix->dims[ix->rank - 1] > d->rank)
    return fail(L, "operand 1 (indices) needs a last dim in [1, data's rank]%s", "");
  uint32_t k = (uint32_t)ix->dims[ix->rank - 1];
  rlx_cu_scatter *sc = &s->sc;
  int64_t tuples = numel(ix) / k;
  nd_addressing(sc, d, 0, k, tuples);
  if (numel(u) != tuples * sc->inner)
    return fail(L, "operand 2 (updates) must be indices.shape[:-1] ++ data.shape[k:]%s", "");
  sc->red = red;
  sc->dtype = t;
  sc->idx_dtype = ix->dtype;
  sc->n_updates = numel(u);
  sc->n_out = numel(&n->shape);
  sc->data = addr(L->p, n->inputs[0]);
  sc->index = addr(L->p, n->inputs[1]);
  sc->updates = addr(L->p, n->inputs[2]);
  sc->out = addr(L->p, id);
  s->kind = ST_SCATTER;
  if (rlx_cu_malloc(L->p->ctx, (size_t)(sc->n_out ? sc->n_out : 1) * 32, &sc->scratch) != RLX_OK)
    return fail(L, "no device memory for the scatter scratch: %s", rlx_last_error());
  return true;
}

/* data [b..., rest...], indices [b..., m..., k] -> out [b..., m..., data[b + k:]...]. */
bool lower_GatherNd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *d = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]);
  if (!need_index(L, ix)) return false;
  if (d->dtype != n->shape.dtype) return fail(L, "data must have the output's dtype%s", "");
  int64_t bd = n->attrs.GatherNd.batch_dims;
  uint32_t min_rank = d->rank < ix->rank ? d->rank : ix->rank;
  if (bd < 0 || bd >= (int64_t)min_rank) return fail(L, "attribute batch_dims must be in [0, min rank)%s", "");
  uint32_t b = (uint32_t)bd;
  for (uint32_t i = 0; i < b; i++)
    if (ix->dims[i] != d->dims[i]) return fail(L, "indices' batch axes must equal data's%s", "");
  int64_t kk = ix->dims[ix->rank - 1];
  if (kk < 1 || kk > (int64_t)(d->rank - b))
    return fail(L, "operand 1 (indices) needs a last dim in [1, rank - batch_dims]%s", "");
  uint32_t k = (uint32_t)kk;
  int64_t per_batch = 1;
  for (uint32_t i = b; i + 1 < ix->rank; i++) per_batch *= ix->dims[i];
  rlx_cu_scatter *sc = &s->sc;
  nd_addressing(sc, d, b, k, per_batch);
  sc->dtype = n->shape.dtype;
  sc->idx_dtype = ix->dtype;
  sc->n_updates = numel(&n->shape);
  sc->data = addr(L->p, n->inputs[0]);
  sc->index = addr(L->p, n->inputs[1]);
  sc->out = addr(L->p, id);
  s->esz = (int)rlx_dtype_size((rlx_dtype)n->shape.dtype);
  s->kind = ST_GATHER_EL;
  return true;
}

/* ---- fused matmul / gated kinds: the shared kernels plus elementwise epilogues ---- */

/* An elementwise launch over dims (rank) writing out (dense) of out_dtype; operands by add_in. */
static rlx_cu_ew *post_ew(cu_step *s, uint32_t n_post) {
  s->post = calloc(n_post, sizeof *s->post);
  s->n_post = s->post ? n_post : 0;
  return s->post;
}
static void ew_init(rlx_cu_ew *e, int kind, int sub, const rlx_shape *o, void *out, int out_dtype) {
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->sub = sub;
  e->rank = (int)o->rank;
  e->n = numel(o);
  for (uint32_t k = 0; k < o->rank; k++) e->dims[k] = o->dims[k];
  e->out = out;
  e->out_dtype = out_dtype;
}
/* operand read with strides st (elements) */
static void ew_in(rlx_cu_ew *e, const void *p, int dtype, const int64_t *st) {
  int i = e->n_in++;
  e->in[i] = p;
  e->in_dtype[i] = dtype;
  for (int k = 0; k < e->rank; k++) e->stride[i][k] = st[k];
}

/* a @ b, then + operand 2 (broadcast onto the product: the bias row or the residual), then the
 * activation (act >= 0). */
static bool matmul_epilogue(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int act) {
  const rlx_shape *o = &n->shape, *b = shape_of(L->p, n->inputs[2]);
  if (!is_float(o->dtype))
    return fail(L, "the fused matmul needs float operands, got %s", rlx_dtype_name((rlx_dtype)o->dtype));
  if (o->rank > RLX_CU_MAX_RANK) return fail(L, "rank over %s", "8");
  if (b->dtype != o->dtype || b->rank > o->rank) return fail(L, "operand 2 must broadcast onto the product%s", "");
  for (uint32_t k = 0; k < b->rank; k++) {
    int64_t d = b->dims[k], od = o->dims[o->rank - b->rank + k];
    if (d != 1 && d != od) return fail(L, "operand 2 must broadcast onto the product%s", "");
  }
  if (!lower_MatMul(L, id, n, s)) return false;
  rlx_cu_ew *e = post_ew(s, act >= 0 ? 2 : 1);
  if (!e) return fail(L, "out of %s", "memory");
  void *out = addr(L->p, id);
  int64_t dense[RLX_MAX_RANK], bs[RLX_MAX_RANK];
  dense_strides(o, dense);
  bcast_strides(b, o, bs);
  ew_init(&e[0], RLX_CU_EW_BINARY, RLX_BINOP_ADD, o, out, o->dtype);
  ew_in(&e[0], out, o->dtype, dense);
  ew_in(&e[0], addr(L->p, n->inputs[2]), b->dtype, bs);
  if (act >= 0) {
    ew_init(&e[1], RLX_CU_EW_ACT, act, o, out, o->dtype);
    ew_in(&e[1], out, o->dtype, dense);
  }
  return true;
}

/* [a, b, bias [N]] -> act(a @ b + bias) */
bool lower_FusedMatMulBiasAct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return matmul_epilogue(L, id, n, s, n->attrs.FusedMatMulBiasAct.activation);
}
/* [a, b, residual] -> a @ b + residual */
bool lower_FusedMatMulResidual(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!rlx_shape_equal(shape_of(L->p, n->inputs[2]), &n->shape))
    return fail(L, "operand 2 (residual) must have the product's shape%s", "");
  return matmul_epilogue(L, id, n, s, -1);
}

/* x [..., 2w] -> silu(gate) * up [..., w] (gate the first half when gate_first, else the second),
 * then the cast: the decomposition's Activation, Mul and Cast launches over strided views of x,
 * each rounding as the unfused graph does; with a cast the x-dtype product goes through the step's
 * scratch. */
bool lower_FusedSwiGLU(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FusedSwiGLU *a = &n->attrs.FusedSwiGLU;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *o = &n->shape;
  if (!is_float(x->dtype) || !is_float(o->dtype)) return fail(L, "FusedSwiGLU needs float tensors%s", "");
  if (x->rank == 0 || x->rank > RLX_CU_MAX_RANK || o->rank != x->rank) return fail(L, "x must have rank 1 to %s", "8");
  int64_t w = o->dims[o->rank - 1];
  if (x->dims[x->rank - 1] != 2 * w) return fail(L, "the output's last dim must be half of x's%s", "");
  int t = x->dtype;
  void *out = addr(L->p, id), *tmp = out;
  if (o->dtype != t) {
    size_t bytes = (size_t)numel(o) * rlx_dtype_size((rlx_dtype)t);
    if (rlx_cu_malloc(L->p->ctx, bytes ? bytes : 1, &s->scratch) != RLX_OK)
      return fail(L, "no device memory for the SwiGLU product: %s", rlx_last_error());
    tmp = s->scratch;
  }
  /* the halves read x with x's strides; the product is dense over o's dims */
  int64_t xs[RLX_MAX_RANK], dense[RLX_MAX_RANK];
  dense_strides(x, xs);
  rlx_shape od = *o;
  od.dtype = (uint8_t)t;
  dense_strides(&od, dense);
  size_t esz = rlx_dtype_size((rlx_dtype)t);
  const uint8_t *base = addr(L->p, n->inputs[0]);
  const void *gate = base + (a->gate_first ? 0 : (size_t)w * esz), *up = base + (a->gate_first ? (size_t)w * esz : 0);
  s->kind = ST_EW;
  ew_init(&s->ew, RLX_CU_EW_ACT, RLX_ACT_SILU, &od, tmp, t);
  ew_in(&s->ew, gate, t, xs);
  rlx_cu_ew *e = post_ew(s, o->dtype != t ? 2 : 1);
  if (!e) return fail(L, "out of %s", "memory");
  ew_init(&e[0], RLX_CU_EW_BINARY, RLX_BINOP_MUL, &od, tmp, t);
  ew_in(&e[0], tmp, t, dense);
  ew_in(&e[0], up, t, xs);
  if (o->dtype != t) {
    ew_init(&e[1], RLX_CU_EW_CAST, 0, o, out, o->dtype);
    ew_in(&e[1], tmp, t, dense);
  }
  return true;
}

/* [x, w, bias [C_out], (residual)] -> act(conv(x, w) + bias (+ residual)): the convolution kernel,
 * then the decomposition's Adds and Activation as elementwise launches in place. */
bool lower_FusedConvBiasAct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FusedConvBiasAct *a = &n->attrs.FusedConvBiasAct;
  const rlx_shape *o = &n->shape, *b = shape_of(L->p, n->inputs[2]);
  if (n->n_inputs != (a->has_residual ? 4u : 3u))
    return fail(L, "attribute has_residual does not match the operands%s", "");
  if (o->rank != 4) return fail(L, "FusedConvBiasAct is a 2-D convolution (NCHW)%s", "");
  if (b->dtype != o->dtype || numel(b) != o->dims[1])
    return fail(L, "operand 2 (bias) must hold one value per output channel%s", "");
  if (a->has_residual && !rlx_shape_equal(shape_of(L->p, n->inputs[3]), o))
    return fail(L, "operand 3 (residual) must have the output's shape%s", "");
  if (!conv_setup(L, id, n, s, 2, false, &a->stride, &a->padding, &a->dilation, NULL, a->groups)) return false;
  uint32_t k = 0, n_post = 1 + (a->has_residual ? 1u : 0u) + (a->activation >= 0 ? 1u : 0u);
  rlx_cu_ew *e = post_ew(s, n_post);
  if (!e) return fail(L, "out of %s", "memory");
  void *out = addr(L->p, id);
  int64_t dense[RLX_MAX_RANK], chan[RLX_MAX_RANK] = {0, 1, 0, 0};
  dense_strides(o, dense);
  ew_init(&e[k], RLX_CU_EW_BINARY, RLX_BINOP_ADD, o, out, o->dtype);
  ew_in(&e[k], out, o->dtype, dense);
  ew_in(&e[k++], addr(L->p, n->inputs[2]), b->dtype, chan);
  if (a->has_residual) {
    ew_init(&e[k], RLX_CU_EW_BINARY, RLX_BINOP_ADD, o, out, o->dtype);
    ew_in(&e[k], out, o->dtype, dense);
    ew_in(&e[k++], addr(L->p, n->inputs[3]), o->dtype, dense);
  }
  if (a->activation >= 0) {
    ew_init(&e[k], RLX_CU_EW_ACT, a->activation, o, out, o->dtype);
    ew_in(&e[k], out, o->dtype, dense);
  }
  return true;
}

/* [x [..., L], ir [M]] -> [..., L + M - 1] */
bool lower_PartitionedConv(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *h = shape_of(L->p, n->inputs[1]);
  if (!is_float(x->dtype) || !is_float(h->dtype) || !is_float(n->shape.dtype))
    return fail(L, "PartitionedConv needs float tensors%s", "");
  if (x->rank < 1 || x->dims[x->rank - 1] < 1 || h->rank != 1 || h->dims[0] < 1)
    return fail(L, "expected x [..., L >= 1] and ir [M >= 1]%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_PARTCONV);
  rlx_cu_ext *e = &s->ext;
  e->len = x->dims[x->rank - 1];
  e->C = h->dims[0];
  e->N = h->dtype; /* the kernel's ir dtype */
  e->count = numel(&n->shape);
  if (e->count != (numel(x) / e->len) * (e->len + e->C - 1))
    return fail(L, "the output must be [..., L + M - 1]%s", "");
  return true;
}

/* ---- spline activations: [x, coeffs [nk] or [C, nk] (C = x's last dim), (dy)] ---- */

static bool spline_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, int64_t nk, double lo,
                         double hi) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *k = shape_of(L->p, n->inputs[1]);
  if (!is_float(x->dtype) || !is_float(k->dtype) || !is_float(n->shape.dtype))
    return fail(L, "the spline ops need float tensors%s", "");
  if (nk < 2 || !(lo < hi)) return fail(L, "num_knots >= 2 and grid_min < grid_max are required%s", "");
  int64_t C = k->rank == 2 ? k->dims[0] : 1;
  if ((k->rank == 1 && k->dims[0] != nk) ||
      (k->rank == 2 && (k->dims[1] != nk || x->rank == 0 || x->dims[x->rank - 1] != C)) || k->rank > 2 || k->rank == 0)
    return fail(L, "operand 1 (coeffs) does not fit x and num_knots%s", "");
  ext_begin(L, id, n, s, mode);
  rlx_cu_ext *e = &s->ext;
  e->len = nk;
  e->C = C;
  e->lo = lo;
  e->hi = hi;
  e->G = k->dtype;
  e->count = numel(x);
  if (mode != RLX_CU_EXT_SPLINE) {
    const rlx_shape *dy = shape_of(L->p, n->inputs[2]);
    if (!is_float(dy->dtype) || numel(dy) != e->count) return fail(L, "operand 2 (dy) must match x%s", "");
    e->S = dy->dtype;
  }
  if (mode == RLX_CU_EXT_SPLINE_DC) {
    if (numel(&n->shape) != C * nk) return fail(L, "the output must have coeffs' shape%s", "");
    if (rlx_cu_malloc(L->p->ctx, (size_t)(C * nk) * sizeof(double), &s->scratch) != RLX_OK)
      return fail(L, "no device memory for the coefficient sums: %s", rlx_last_error());
    e->scratch = s->scratch;
  } else if (numel(&n->shape) != e->count) {
    return fail(L, "the output must have x's shape%s", "");
  }
  return true;
}
bool lower_SplineActivation(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SplineActivation *a = &n->attrs.SplineActivation;
  return spline_setup(L, id, n, s, RLX_CU_EXT_SPLINE, a->num_knots, a->grid_min, a->grid_max);
}
bool lower_SplineActivationBackwardX(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SplineActivationBackwardX *a = &n->attrs.SplineActivationBackwardX;
  return spline_setup(L, id, n, s, RLX_CU_EXT_SPLINE_DX, a->num_knots, a->grid_min, a->grid_max);
}
bool lower_SplineActivationBackwardCoeff(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SplineActivationBackwardCoeff *a = &n->attrs.SplineActivationBackwardCoeff;
  return spline_setup(L, id, n, s, RLX_CU_EXT_SPLINE_DC, a->num_knots, a->grid_min, a->grid_max);
}

/* ---- packed backward kinds: sums onto operands broadcast onto x ---- */

/* Operand b broadcasts onto x (right-aligned, size-1 axes); fills its bcast strides (slot k) and
 * reduction geometry red[k]. */
static bool bcast_reduction(lower_ctx *L, rlx_cu_ext *e, int k, const rlx_shape *b, const rlx_shape *x) {
  if (b->dtype != x->dtype || b->rank > x->rank) return fail(L, "the operand must broadcast onto x%s", "");
  int64_t xs[RLX_MAX_RANK];
  dense_strides(x, xs);
  int shift = (int)x->rank - (int)b->rank;
  e->red[k].nkeep = e->red[k].nred = 0;
  for (int a = 0; a < (int)x->rank; a++) {
    int64_t bd = a < shift ? 1 : b->dims[a - shift];
    if (bd != 1 && bd != x->dims[a]) return fail(L, "the operand must broadcast onto x%s", "");
    if (bd != 1) {
      e->red[k].kd[e->red[k].nkeep] = x->dims[a];
      e->red[k].ks[e->red[k].nkeep++] = xs[a];
    } else {
      e->red[k].rd[e->red[k].nred] = x->dims[a];
      e->red[k].rs[e->red[k].nred++] = xs[a];
    }
  }
  e->red[k].ntarget = numel(b);
  bcast_strides(b, x, e->bstride[k]);
  return true;
}

/* [x, scale, shift, dy] -> [dx, dscale, dshift] packed */
bool lower_AdaLayerNormBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_AdaLayerNormBackward *a = &n->attrs.AdaLayerNormBackward;
  if (a->norm != RLX_ADA_NORM_LAYER_NORM && a->norm != RLX_ADA_NORM_RMS_NORM)
    return fail(L, "attribute norm is not an AdaNormKind%s", "");
  if (!need_x(L, n, 1, 3)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank > 8) return fail(L, "rank over %s", "8");
  ext_begin(L, id, n, s, RLX_CU_EXT_ADA_BW);
  rlx_cu_ext *e = &s->ext;
  if (!bcast_reduction(L, e, 0, shape_of(L->p, n->inputs[1]), x) ||
      !bcast_reduction(L, e, 1, shape_of(L->p, n->inputs[2]), x))
    return false;
  e->count = numel(x);
  if (numel(&n->shape) != e->count + e->red[0].ntarget + e->red[1].ntarget || n->shape.dtype != x->dtype)
    return fail(L, "the output must be 1-D holding dx, dscale and dshift in x's dtype%s", "");
  e->rank = (int)x->rank;
  for (uint32_t k = 0; k < x->rank; k++) e->dims[k] = x->dims[k];
  e->rms = a->norm == RLX_ADA_NORM_RMS_NORM;
  e->eps = a->eps;
  e->len = last_dim(x);
  e->rows = e->len ? e->count / e->len : 0;
  if (rlx_cu_malloc(L->p->ctx, (size_t)(e->rows ? e->rows : 1) * 2 * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the row statistics: %s", rlx_last_error());
  e->scratch = s->scratch;
  return true;
}

/* [x, y, gate, dy] -> [dy, dy gate, dgate] packed */
bool lower_GatedResidualBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  if (!need_x(L, n, 1, 3)) return false;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *y = shape_of(L->p, n->inputs[1]);
  if (!rlx_shape_equal(x, y)) return fail(L, "operand 1 (y) must have x's shape and dtype%s", "");
  if (x->rank > 8) return fail(L, "rank over %s", "8");
  ext_begin(L, id, n, s, RLX_CU_EXT_GATED_BW);
  rlx_cu_ext *e = &s->ext;
  if (!bcast_reduction(L, e, 0, shape_of(L->p, n->inputs[2]), x)) return false;
  e->count = numel(x);
  if (numel(&n->shape) != 2 * e->count + e->red[0].ntarget || n->shape.dtype != x->dtype)
    return fail(L, "the output must be 1-D holding dx, dy and dgate in x's dtype%s", "");
  e->rank = (int)x->rank;
  for (uint32_t k = 0; k < x->rank; k++) e->dims[k] = x->dims[k];
  return true;
}

/* ---- FakeQuantize / FakeQuantizeBackward ---- */

static bool fq_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, int64_t bits, int64_t axis) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!is_float(x->dtype) || !is_float(n->shape.dtype)) return fail(L, "x must be a float tensor%s", "");
  double qmax = bits == 8 ? 127.0 : bits == 4 ? 7.0 : bits == 2 ? 1.0 : 0.0;
  if (qmax == 0.0) return fail(L, "attribute bits must be 8, 4 or 2%s", "");
  int64_t ax = axis < 0 ? axis + (int64_t)x->rank : axis;
  if (x->rank == 0 || ax < 0 || ax >= (int64_t)x->rank) return fail(L, "attribute axis is out of range%s", "");
  ext_begin(L, id, n, s, mode);
  rlx_cu_ext *e = &s->ext;
  e->lo = qmax;
  e->N = 1;
  e->S = 1;
  for (int64_t k = 0; k < ax; k++) e->N *= x->dims[k];
  for (int64_t k = ax + 1; k < (int64_t)x->rank; k++) e->S *= x->dims[k];
  e->C = x->dims[ax];
  e->count = numel(x);
  if (numel(&n->shape) != e->count) return fail(L, "the output must have x's shape%s", "");
  if (rlx_cu_malloc(L->p->ctx, (size_t)(e->C ? e->C : 1) * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the scales: %s", rlx_last_error());
  e->scratch = s->scratch;
  return true;
}

/* [x, (state)] -> fake-quantized x */
bool lower_FakeQuantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  if (a->scale_mode < 0 || a->scale_mode >= RLX_SCALE_MODE_COUNT)
    return fail(L, "attribute scale_mode is invalid%s", "");
  if (a->scale_mode != RLX_SCALE_MODE_PER_BATCH && n->n_inputs < 2)
    return fail(L, "this scale_mode needs operand 1 (state)%s", "");
  if (!fq_setup(L, id, n, s, RLX_CU_EXT_FQ, a->bits, a->axis)) return false;
  rlx_cu_ext *e = &s->ext;
  e->qmode = a->scale_mode;
  e->hi = (double)a->decay;
  if (a->scale_mode != RLX_SCALE_MODE_PER_BATCH) {
    const rlx_shape *st = shape_of(L->p, n->inputs[1]);
    int64_t k = numel(st);
    if (!is_float(st->dtype) || (k != 1 && k != e->C))
      return fail(L, "operand 1 (state) must be a float with 1 or one value per channel%s", "");
    e->want_xh = (int)(k == 1);
    e->G = st->dtype;
  }
  return true;
}

/* [x, dy] -> dx through the straight-through estimator */
bool lower_FakeQuantizeBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_FakeQuantizeBackward *a = &n->attrs.FakeQuantizeBackward;
  const rlx_shape *dy = shape_of(L->p, n->inputs[1]);
  if (!is_float(dy->dtype) || numel(dy) != numel(shape_of(L->p, n->inputs[0])))
    return fail(L, "operand 1 (dy) must be a float of x's shape%s", "");
  if (!fq_setup(L, id, n, s, RLX_CU_EXT_FQ_BW, a->bits, a->axis)) return false;
  s->ext.ste = a->ste;
  s->ext.G = dy->dtype;
  return true;
}

/* A plain matmul sub-step: C[b] = A[b] . B (B shared), row-major M x K times K x N, float. */
static bool matmul_sub(lower_ctx *L, cu_step *m, int dtype, const void *A, const void *B, void *C, int64_t M, int64_t N,
                       int64_t K, int64_t batches) {
  m->kind = ST_MATMUL;
  m->dtype = dtype;
  m->src = A;
  m->aux[0] = B;
  m->dst = C;
  m->a = M;
  m->b = N;
  m->c2 = K;
  m->d = batches;
  m->a_off = calloc((size_t)(batches ? batches : 1), sizeof(int64_t));
  m->b_off = calloc((size_t)(batches ? batches : 1), sizeof(int64_t));
  if (!m->a_off || !m->b_off) return fail(L, "out of %s", "memory");
  for (int64_t i = 0; i < batches; i++) m->a_off[i] = i * M * K;
  return true;
}

/* [x [..., M, K], W, A [K, r], B [r, N]] -> x @ W + scale ((x @ A) @ B): the decomposition's three
 * products (two as pre-steps into the step's scratch), then Mul by the scale (a device scalar of
 * x's dtype) and the Add as epilogues, each rounded as the unfused graph rounds it. */
bool lower_LoraMatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *A = shape_of(L->p, n->inputs[2]),
                  *B = shape_of(L->p, n->inputs[3]), *o = &n->shape;
  int t = o->dtype;
  if (!is_float(t) || x->dtype != t || A->dtype != t || B->dtype != t)
    return fail(L, "LoraMatMul needs float operands of one dtype%s", "");
  if (x->rank < 2 || A->rank != 2 || B->rank != 2 || o->rank > RLX_CU_MAX_RANK)
    return fail(L, "LoraMatMul takes x [..., M, K] with A [K, r] and B [r, N]%s", "");
  int64_t M = x->dims[x->rank - 2], K = x->dims[x->rank - 1], r = A->dims[1], N = B->dims[1];
  if (A->dims[0] != K || B->dims[0] != r || o->dims[o->rank - 1] != N)
    return fail(L, "the LoRA factors do not fit x%s", "");
  int64_t batches = 1;
  for (uint32_t k = 0; k + 2 < x->rank; k++) batches *= x->dims[k];
  if (numel(o) != batches * M * N) return fail(L, "LoraMatMul's product must have x's batch axes%s", "");
  if (!lower_MatMul(L, id, n, s)) return false;
  size_t esz = rlx_dtype_size((rlx_dtype)t), t1 = (size_t)(batches * M * r) * esz, t2 = (size_t)(batches * M * N) * esz;
  if (rlx_cu_malloc(L->p->ctx, t1 + t2 + 16, &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the LoRA products: %s", rlx_last_error());
  uint8_t *T1 = s->scratch, *T2 = T1 + t1, *sc = T2 + t2;
  unsigned char host[16] = {0};
  rlx_elem_set(host, (rlx_dtype)t, 0, (double)n->attrs.LoraMatMul.scale);
  if (rlx_cu_h2d(L->p->ctx, sc, host, esz) != RLX_OK) return fail(L, "cannot upload the scale: %s", rlx_last_error());
  s->pre = calloc(2, sizeof *s->pre);
  if (!s->pre) return fail(L, "out of %s", "memory");
  s->n_pre = 2;
  if (!matmul_sub(L, &s->pre[0], t, addr(L->p, n->inputs[0]), addr(L->p, n->inputs[2]), T1, M, r, K, batches) ||
      !matmul_sub(L, &s->pre[1], t, T1, addr(L->p, n->inputs[3]), T2, M, N, r, batches))
    return false;
  rlx_cu_ew *e = post_ew(s, 2);
  if (!e) return fail(L, "out of %s", "memory");
  void *out = addr(L->p, id);
  int64_t dense[RLX_MAX_RANK], zero[RLX_MAX_RANK] = {0};
  dense_strides(o, dense);
  ew_init(&e[0], RLX_CU_EW_BINARY, RLX_BINOP_MUL, o, T2, t);
  ew_in(&e[0], T2, t, dense);
  ew_in(&e[0], sc, t, zero);
  ew_init(&e[1], RLX_CU_EW_BINARY, RLX_BINOP_ADD, o, out, t);
  ew_in(&e[1], out, t, dense);
  ew_in(&e[1], T2, t, dense);
  return true;
}

/* A strided-copy pre-step: src (shape x) with its axes in order perm, written dense into dst. */
static bool permute_sub(lower_ctx *L, cu_step *c, const rlx_shape *x, const void *src, const uint32_t *perm,
                        void *dst) {
  rlx_cu_copy *cp = copies(c, 1);
  if (!cp) return fail(L, "out of %s", "memory");
  int64_t xs[RLX_MAX_RANK];
  dense_strides(x, xs);
  cp->rank = (int)x->rank;
  cp->n = 1;
  for (int k = (int)x->rank - 1; k >= 0; k--) {
    cp->dims[k] = x->dims[perm[k]];
    cp->src_stride[k] = xs[perm[k]];
    cp->dst_stride[k] = cp->n;
    cp->n *= cp->dims[k];
  }
  cp->src = src;
  cp->dst = dst;
  cp->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  return true;
}

/* One side of a DotGeneral: batch and contracting axes valid and distinct; the axis order
 * (batch, free, contracting) for the lhs or (batch, contracting, free) for the rhs. */
static bool dot_order(lower_ctx *L, const rlx_shape *x, const rlx_ilist *batch, const rlx_ilist *contract, bool lhs,
                      uint32_t *perm, int64_t *free_count) {
  uint32_t used = 0, k = 0;
  const rlx_ilist *lists[2] = {batch, contract};
  for (int l = 0; l < 2; l++)
    for (uint32_t i = 0; i < lists[l]->n; i++) {
      int64_t ax = lists[l]->v[i];
      if (ax < 0 || ax >= (int64_t)x->rank || (used & (1u << ax)))
        return fail(L, "attributes lhs/rhs_batch and lhs/rhs_contracting name an axis out of range or twice%s", "");
      used |= 1u << ax;
    }
  for (uint32_t i = 0; i < batch->n; i++) perm[k++] = (uint32_t)batch->v[i];
  int64_t f = 1;
  if (!lhs)
    for (uint32_t i = 0; i < contract->n; i++) perm[k++] = (uint32_t)contract->v[i];
  for (uint32_t i = 0; i < x->rank; i++)
    if (!(used & (1u << i))) {
      perm[k++] = i;
      f *= x->dims[i];
    }
  if (lhs)
    for (uint32_t i = 0; i < contract->n; i++) perm[k++] = (uint32_t)contract->v[i];
  *free_count = f;
  return true;
}

static bool is_identity(const uint32_t *perm, uint32_t rank) {
  for (uint32_t k = 0; k < rank; k++)
    if (perm[k] != k) return false;
  return true;
}

/* General contraction: both operands permuted (pre-steps, when not already in order) to
 * [B, M, K] and [B, K, N], then one batched product into the output [B, M, N] (its axes are the
 * batch axes, a's free axes, b's free axes, which is that layout). */
bool lower_DotGeneral(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_DotGeneral *at = &n->attrs.DotGeneral;
  const rlx_shape *a = shape_of(L->p, n->inputs[0]), *b = shape_of(L->p, n->inputs[1]);
  int t = n->shape.dtype;
  if (a->dtype != t || b->dtype != t) return fail(L, "both operands must have the output's dtype%s", "");
  if (t == RLX_BOOL) return fail(L, "DotGeneral needs a numeric dtype, got %s", "bool");
  if (at->lhs_batch.n != at->rhs_batch.n || at->lhs_contracting.n != at->rhs_contracting.n)
    return fail(L, "the batch and contracting attribute lists must pair up%s", "");
  uint32_t pa[RLX_MAX_RANK], pb[RLX_MAX_RANK];
  int64_t M, N, B = 1, K = 1;
  if (!dot_order(L, a, &at->lhs_batch, &at->lhs_contracting, true, pa, &M) ||
      !dot_order(L, b, &at->rhs_batch, &at->rhs_contracting, false, pb, &N))
    return false;
  for (uint32_t i = 0; i < at->lhs_batch.n; i++) {
    if (a->dims[at->lhs_batch.v[i]] != b->dims[at->rhs_batch.v[i]]) return fail(L, "batch extents differ%s", "");
    B *= a->dims[at->lhs_batch.v[i]];
  }
  for (uint32_t i = 0; i < at->lhs_contracting.n; i++) {
    if (a->dims[at->lhs_contracting.v[i]] != b->dims[at->rhs_contracting.v[i]])
      return fail(L, "contracting extents differ%s", "");
    K *= a->dims[at->lhs_contracting.v[i]];
  }
  if (numel(&n->shape) != B * M * N) return fail(L, "the output must hold batch x free(a) x free(b) elements%s", "");
  bool ta = !is_identity(pa, a->rank), tb = !is_identity(pb, b->rank);
  size_t esz = rlx_dtype_size((rlx_dtype)t), abytes = ta ? (size_t)numel(a) * esz : 0,
         bbytes = tb ? (size_t)numel(b) * esz : 0;
  const void *A = addr(L->p, n->inputs[0]), *Bm = addr(L->p, n->inputs[1]);
  if (ta || tb) {
    if (rlx_cu_malloc(L->p->ctx, abytes + bbytes + 16, &s->scratch) != RLX_OK)
      return fail(L, "no device memory for the permuted operands: %s", rlx_last_error());
    s->pre = calloc(2, sizeof *s->pre);
    if (!s->pre) return fail(L, "out of %s", "memory");
    uint8_t *base = s->scratch;
    if (ta) {
      if (!permute_sub(L, &s->pre[s->n_pre++], a, A, pa, base)) return false;
      A = base;
    }
    if (tb) {
      if (!permute_sub(L, &s->pre[s->n_pre++], b, Bm, pb, base + abytes)) return false;
      Bm = base + abytes;
    }
  }
  if (!matmul_sub(L, s, t, A, Bm, addr(L->p, id), M, N, K, B)) return false;
  for (int64_t i = 0; i < B; i++) s->b_off[i] = i * K * N;
  return true;
}

/* ---- Quantize / Dequantize (attribute scales and zero points uploaded once) ---- */

static bool quant_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, const rlx_flist *scales,
                        const rlx_ilist *zps, int64_t axis) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  ext_begin(L, id, n, s, mode);
  rlx_cu_ext *e = &s->ext;
  e->count = numel(x);
  e->C = 1;
  e->S = e->count;
  if (scales->n > 1) {
    int64_t ax = axis < 0 ? axis + (int64_t)x->rank : axis;
    if (ax < 0 || ax >= (int64_t)x->rank) return fail(L, "attribute axis is out of range%s", "");
    e->C = x->dims[ax];
    e->S = 1;
    for (int64_t k = ax + 1; k < (int64_t)x->rank; k++) e->S *= x->dims[k];
  }
  if (scales->n != 1 && (int64_t)scales->n != e->C)
    return fail(L, "attribute scales needs 1 or one entry per channel%s", "");
  if (zps->n > 1 && zps->n != scales->n)
    return fail(L, "attribute zero_points needs 0, 1 or one entry per scale%s", "");
  if (numel(&n->shape) != e->count) return fail(L, "the output must have x's shape%s", "");
  size_t C = (size_t)(e->C ? e->C : 1);
  double *host = malloc(C * (sizeof(double) + sizeof(int64_t)));
  if (!host) return fail(L, "out of %s", "memory");
  int64_t *hz = (int64_t *)(host + C);
  for (size_t c = 0; c < C; c++) {
    host[c] = (double)scales->v[scales->n == 1 ? 0 : c];
    hz[c] = zps->n == 0 ? 0 : zps->v[zps->n == 1 ? 0 : c];
  }
  bool ok = rlx_cu_malloc(L->p->ctx, C * (sizeof(double) + sizeof(int64_t)), &s->scratch) == RLX_OK &&
            rlx_cu_h2d(L->p->ctx, s->scratch, host, C * (sizeof(double) + sizeof(int64_t))) == RLX_OK;
  free(host);
  if (!ok) return fail(L, "cannot place the quantisation parameters on the device: %s", rlx_last_error());
  e->scratch = s->scratch;
  return true;
}

/* float x -> i8 */
bool lower_Quantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Quantize *a = &n->attrs.Quantize;
  if (!is_float(shape_of(L->p, n->inputs[0])->dtype) || n->shape.dtype != RLX_I8)
    return fail(L, "Quantize maps a float tensor to i8%s", "");
  return quant_setup(L, id, n, s, RLX_CU_EXT_QUANT, &a->scales, &a->zero_points, a->axis);
}
/* i8 -> float */
bool lower_Dequantize(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Dequantize *a = &n->attrs.Dequantize;
  if (shape_of(L->p, n->inputs[0])->dtype != RLX_I8 || !is_float(n->shape.dtype))
    return fail(L, "Dequantize maps i8 to a float tensor%s", "");
  return quant_setup(L, id, n, s, RLX_CU_EXT_DEQUANT, &a->scales, &a->zero_points, a->axis);
}

/* [N, C, D, H, W] -> [N, C, D', H', W'] nearest, size = [D', H', W'] */
bool lower_Interpolate3d(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *o = &n->shape;
  const rlx_ilist *sz = &n->attrs.Interpolate3d.size;
  if (x->rank != 5 || o->rank != 5 || x->dtype != o->dtype) return fail(L, "Interpolate3d maps NCDHW to NCDHW%s", "");
  if (sz->n != 3) return fail(L, "attribute size needs 3 entries%s", "");
  for (uint32_t k = 0; k < 3; k++)
    if (sz->v[k] < 1 || x->dims[2 + k] < 1 || o->dims[2 + k] != sz->v[k])
      return fail(L, "attribute size and the input extents must be >= 1 and give the output%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_INTERP3D);
  rlx_cu_ext *e = &s->ext;
  e->dims[0] = x->dims[0] * x->dims[1];
  for (int k = 0; k < 3; k++) {
    e->dims[1 + k] = x->dims[2 + k];
    e->dims[4 + k] = o->dims[2 + k];
  }
  e->count = numel(o);
  e->want_xh = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  return true;
}

/* ---- codebook ("synth") matmuls: codes [R, N] (integers or a float holding them), codebook
 * [num_entries, entry_dim] ---- */

static bool synth_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, uint32_t ci, int64_t D,
                        int64_t NE) {
  const rlx_shape *cs = shape_of(L->p, n->inputs[ci]), *cb = shape_of(L->p, n->inputs[ci + 1]);
  if (is_complex(cs->dtype) || cs->dtype == RLX_BOOL || !is_float(cb->dtype) || !is_float(n->shape.dtype))
    return fail(L, "codes must be integers (or a float holding them) and the codebook a float%s", "");
  if (cs->rank != 2 || cb->rank != 2 || cb->dims[0] != NE || cb->dims[1] != D || D < 1)
    return fail(L, "codes [R, N] and codebook [num_entries, entry_dim] do not fit the attributes%s", "");
  ext_begin(L, id, n, s, mode);
  rlx_cu_ext *e = &s->ext;
  e->len = D;
  e->C = NE;
  e->N = cs->dims[1];
  e->S = cs->dims[0] * D; /* K */
  e->G = cs->dtype;
  e->in_dtype = cb->dtype;
  if (ci == 1) {
    const rlx_shape *x = shape_of(L->p, n->inputs[0]);
    if (!is_float(x->dtype) || x->rank != 2 || x->dims[1] != e->S) return fail(L, "operand 0 (x) must be [M, K]%s", "");
    e->rows = x->dims[0];
    e->want_xh = x->dtype;
  }
  return true;
}

bool lower_SynthReconstruct(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SynthReconstruct *a = &n->attrs.SynthReconstruct;
  if (!synth_setup(L, id, n, s, RLX_CU_EXT_SYNTH_REC, 0, a->entry_dim, a->num_entries)) return false;
  s->ext.count = s->ext.S * s->ext.N;
  if (numel(&n->shape) != s->ext.count) return fail(L, "the output must be [R entry_dim, N]%s", "");
  return true;
}

bool lower_SynthMatMul(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SynthMatMul *a = &n->attrs.SynthMatMul;
  if (!synth_setup(L, id, n, s, RLX_CU_EXT_SYNTH_MM, 1, a->entry_dim, a->num_entries)) return false;
  s->ext.count = s->ext.rows * s->ext.N;
  if (numel(&n->shape) != s->ext.count) return fail(L, "the output must be [M, N]%s", "");
  return true;
}

bool lower_SynthMatMulBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_SynthMatMulBackward *a = &n->attrs.SynthMatMulBackward;
  bool dx = a->wrt == RLX_SYNTH_WRT_DX;
  if (!synth_setup(L, id, n, s, dx ? RLX_CU_EXT_SYNTH_BW_DX : RLX_CU_EXT_SYNTH_BW_CB, 1, a->entry_dim, a->num_entries))
    return false;
  rlx_cu_ext *e = &s->ext;
  const rlx_shape *dy = shape_of(L->p, n->inputs[3]);
  if (!is_float(dy->dtype) || numel(dy) != e->rows * e->N) return fail(L, "operand 3 (dy) must be [M, N]%s", "");
  e->qmode = dy->dtype;
  if (dx) {
    e->count = e->rows * e->S;
    if (numel(&n->shape) != e->count) return fail(L, "the output must be [M, K]%s", "");
    return true;
  }
  if (numel(&n->shape) != e->C * e->len) return fail(L, "the output must have the codebook's shape%s", "");
  size_t cells = (size_t)(e->C * e->len);
  if (rlx_cu_malloc(L->p->ctx, (cells ? cells : 1) * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the codebook gradient: %s", rlx_last_error());
  e->scratch = s->scratch;
  return true;
}

/* ---- dense linear algebra (solver.cu): f32 / f64 square matrices ---- */

/* operand i is [lead..., n, n] of the output's dtype (f32 / f64); returns n */
static bool need_square(lower_ctx *L, const rlx_node *n, uint32_t i, uint32_t lead, int64_t *size) {
  const rlx_shape *a = shape_of(L->p, n->inputs[i]);
  int t = n->shape.dtype;
  if ((t != RLX_F32 && t != RLX_F64) || a->dtype != t)
    return fail(L, "the factorisations take f32 or f64 matrices of the output's dtype%s", "");
  if (a->rank != lead + 2 || a->dims[lead] != a->dims[lead + 1] || a->dims[lead] > INT32_MAX)
    return fail(L, "operand must be a square matrix (after its batch axis) of size < 2^31%s", "");
  *size = a->dims[lead];
  return true;
}

bool lower_Cholesky(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int64_t nn;
  if (!need_square(L, n, 0, 0, &nn)) return false;
  if (numel(&n->shape) != nn * nn) return fail(L, "the output must have the matrix's shape%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_CHOLESKY);
  s->ext.len = nn;
  return true;
}
static bool det_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode) {
  int64_t nn;
  if (!need_square(L, n, 0, 0, &nn)) return false;
  if (numel(&n->shape) != 1) return fail(L, "the output must hold one element%s", "");
  ext_begin(L, id, n, s, mode);
  s->ext.len = nn;
  return true;
}
bool lower_Det(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return det_setup(L, id, n, s, RLX_CU_EXT_DET);
}
bool lower_LogDet(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return det_setup(L, id, n, s, RLX_CU_EXT_LOGDET);
}

/* [A [lead.., n, n], b [lead.., n] or [lead.., n, r]] -> x of b's shape */
static bool solve_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t lead) {
  int64_t nn;
  if (!need_square(L, n, 0, lead, &nn)) return false;
  const rlx_shape *a = shape_of(L->p, n->inputs[0]), *b = shape_of(L->p, n->inputs[1]);
  bool ok = b->dtype == a->dtype && (b->rank == lead + 1 || b->rank == lead + 2) && b->dims[lead] == nn;
  if (ok && lead) ok = b->dims[0] == a->dims[0];
  if (!ok || !rlx_shape_equal(b, &n->shape))
    return fail(L, "operand 1 (b) must be [n] or [n, k] after the batch axis%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_SOLVE);
  rlx_cu_ext *e = &s->ext;
  e->len = nn;
  e->S = b->rank == lead + 2 ? b->dims[lead + 1] : 1;
  e->N = lead ? a->dims[0] : 1;
  if (e->S > INT32_MAX) return fail(L, "the right-hand-side count is over 2^31%s", "");
  return true;
}
bool lower_DenseSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) { return solve_setup(L, id, n, s, 0); }
bool lower_BatchedDenseSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return solve_setup(L, id, n, s, 1);
}

/* [A [n, n], B [n] or [n, r]] -> op(A)^-1 B */
bool lower_TriangularSolve(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  int64_t nn;
  if (!need_square(L, n, 0, 0, &nn)) return false;
  const rlx_shape *b = shape_of(L->p, n->inputs[1]);
  if (b->dtype != n->shape.dtype || (b->rank != 1 && b->rank != 2) || b->dims[0] != nn ||
      !rlx_shape_equal(b, &n->shape))
    return fail(L, "operand 1 (B) must be [n] or [n, r]%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_TRSM);
  rlx_cu_ext *e = &s->ext;
  e->len = nn;
  e->S = b->rank == 2 ? b->dims[1] : 1;
  e->rms = n->attrs.TriangularSolve.lower;
  e->want_xh = n->attrs.TriangularSolve.transpose;
  if (e->S > INT32_MAX) return fail(L, "the right-hand-side count is over 2^31%s", "");
  return true;
}

/* ---- Qr, Svd, Eigh, EighBatch (solver.cu: cuSOLVER geqrf + orgqr, gesvd, syevd) ---- */

/* The cuSOLVER workspace size, queried once here; the step is kept out of CUDA graphs (syevd
 * reports an execution failure under stream capture, and gesvd / orgqr are not documented as
 * capture-safe). */
static bool la_finish(lower_ctx *L, cu_step *s) {
  s->no_graph = 1;
  if (rlx_cu_la_lwork(L->p->ctx, &s->ext) != RLX_OK)
    return fail(L, "querying the cuSOLVER workspace failed: %s", rlx_last_error());
  return true;
}

/* A [m, n] (f32 / f64) -> one part of the thin factorisation */
static bool la_matrix(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, int part, int64_t d0,
                      int64_t d1, uint32_t rank) {
  const rlx_shape *a = shape_of(L->p, n->inputs[0]);
  int t = n->shape.dtype;
  if ((t != RLX_F32 && t != RLX_F64) || a->dtype != t)
    return fail(L, "the factorisations take f32 or f64 matrices of the output's dtype%s", "");
  if (a->rank != 2 || a->dims[0] > INT32_MAX || a->dims[1] > INT32_MAX)
    return fail(L, "operand 0 must be a matrix [m, n] with m, n < 2^31%s", "");
  int64_t m = a->dims[0], nc = a->dims[1], k = m < nc ? m : nc;
  int64_t want[2] = {d0 < 0 ? (d0 == -1 ? m : k) : d0, d1 < 0 ? (d1 == -1 ? nc : k) : d1};
  if (n->shape.rank != rank || n->shape.dims[0] != want[0] || (rank == 2 && n->shape.dims[1] != want[1]))
    return fail(L, "the output does not have the factor's shape%s", "");
  ext_begin(L, id, n, s, mode);
  s->ext.rows = m;
  s->ext.len = nc;
  s->ext.want_xh = part;
  return la_finish(L, s);
}

/* dims: -1 = m (rows) / n (columns), -2 = k = min(m, n) */
bool lower_Qr(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  switch (n->attrs.Qr.part) {
  case RLX_QR_PART_Q: return la_matrix(L, id, n, s, RLX_CU_EXT_QR, 0, -1, -2, 2);
  case RLX_QR_PART_R: return la_matrix(L, id, n, s, RLX_CU_EXT_QR, 1, -2, -1, 2);
  default: return fail(L, "attribute part is not a QrPart%s", "");
  }
}
bool lower_Svd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  switch (n->attrs.Svd.part) {
  case RLX_SVD_PART_U: return la_matrix(L, id, n, s, RLX_CU_EXT_SVD, 0, -1, -2, 2);
  case RLX_SVD_PART_S: return la_matrix(L, id, n, s, RLX_CU_EXT_SVD, 1, -2, 0, 1);
  case RLX_SVD_PART_VT: return la_matrix(L, id, n, s, RLX_CU_EXT_SVD, 2, -2, -1, 2);
  default: return fail(L, "attribute part is not a SvdPart%s", "");
  }
}

/* [lead.., n, n] -> [lead.., n + n^2] */
static bool eigh_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t lead) {
  int64_t nn;
  if (!need_square(L, n, 0, lead, &nn)) return false;
  const rlx_shape *a = shape_of(L->p, n->inputs[0]);
  int64_t B = lead ? a->dims[0] : 1;
  if (n->shape.rank != lead + 1 || n->shape.dims[lead] != nn + nn * nn || (lead && n->shape.dims[0] != B))
    return fail(L, "the output must be [.., n + n^2] (eigenvalues, then eigenvectors)%s", "");
  ext_begin(L, id, n, s, RLX_CU_EXT_EIGH);
  s->ext.len = nn;
  s->ext.N = B;
  return la_finish(L, s);
}
bool lower_Eigh(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) { return eigh_setup(L, id, n, s, 0); }
bool lower_EighBatch(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) { return eigh_setup(L, id, n, s, 1); }
