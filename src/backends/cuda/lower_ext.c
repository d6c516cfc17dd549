/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Lowering rows for the kernels of cu_ext.h (norms2.cu, complex.cu): GroupNorm, LayerNorm2d,
 * BatchNormInference and their backward kinds, Conjugate, ComplexNormSq(+Backward). Shapes and
 * dtypes are checked here with the CPU reference's rules (spec ir-core §10.4); the kernels
 * compute in double and round once, as the CPU does. */
#include <string.h>

#include "backends/cpu/ref/attention_util.h"
#include "backends/cuda/lower_internal.h"

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
