/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Lowering rows for the kernels of cu_ext.h (norms2.cu, complex.cu): GroupNorm, LayerNorm2d,
 * BatchNormInference and their backward kinds, Conjugate, ComplexNormSq(+Backward). Shapes and
 * dtypes are checked here with the CPU reference's rules (spec ir-core §10.4); the kernels
 * compute in double and round once, as the CPU does. */
#include "backends/cuda/lower_internal.h"

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
