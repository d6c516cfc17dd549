/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CUDA lowering rows (lower.c holds the table): the backward kinds, ordering / cumulative /
 * random / mask kinds, Slice / Pad / Tile / Roll and the gather backward, Fft, and the fused
 * elementwise regions. */
#include <math.h>
#include <string.h>

#include "backends/cuda/lower_internal.h"
#include "core/elem.h"
#include "infer_conv_util.h"

/* ---- backward kinds ---- */

static bool same_x_dy(lower_ctx *L, const rlx_node *n, uint32_t xi, uint32_t dyi) {
  const rlx_shape *x = shape_of(L->p, n->inputs[xi]), *dy = shape_of(L->p, n->inputs[dyi]);
  if (x->dtype != n->shape.dtype || dy->dtype != n->shape.dtype)
    return fail(L, "operands must have the output's dtype %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!rlx_shape_equal(x, dy)) return fail(L, "dy must have x's shape%s", "");
  return true;
}

static bool act_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int act) {
  int t = n->shape.dtype;
  if (!same_x_dy(L, n, 0, 1)) return false;
  if (act >= 0 ? !rlx_dtype_is_float((rlx_dtype)t)
               : (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t)))
    return fail(L, "x needs a %s dtype", act >= 0 ? "float" : "real");
  if (act >= RLX_ACT_COUNT) return fail(L, "attribute kind is not an %s", "Activation");
  s->kind = ST_ACT_BW;
  s->op = act;
  s->dtype = t;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->d = numel(&n->shape);
  return true;
}
bool lower_ReluBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return act_bw_setup(L, id, n, s, -1);
}
bool lower_ActivationBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return act_bw_setup(L, id, n, s, n->attrs.ActivationBackward.kind);
}

static bool index_dtype_ok(int t) { return !is_complex(t) && t != RLX_BOOL; }

static bool sce_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *t1 = shape_of(L->p, n->inputs[1]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype) || x->dtype != n->shape.dtype)
    return fail(L, "logits must be a float tensor of the output's dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank != 2) return fail(L, "logits must be [N, C]%s", "");
  int64_t N = x->dims[0], C = x->dims[1];
  if (mode == 0) {
    if (!rlx_shape_equal(t1, x)) return fail(L, "targets must have the logits' shape%s", "");
  } else {
    if (!index_dtype_ok(t1->dtype))
      return fail(L, "labels must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)t1->dtype));
    if (t1->rank != 1 || t1->dims[0] != N) return fail(L, "labels must be [N]%s", "");
  }
  if (mode == 2) {
    const rlx_shape *g = shape_of(L->p, n->inputs[2]);
    if (g->rank != 1 || g->dims[0] != N || g->dtype != x->dtype)
      return fail(L, "d_loss must be [N] of the logits' dtype%s", "");
    s->aux[1] = addr(L->p, n->inputs[2]);
  }
  s->kind = ST_SCE;
  s->op = mode;
  s->dtype = x->dtype;
  s->aux_dtype = t1->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  s->a = N;
  s->b = C;
  return true;
}
bool lower_SoftmaxCrossEntropy(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 0);
}
bool lower_SoftmaxCrossEntropyWithLogits(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 1);
}
bool lower_SoftmaxCrossEntropyBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sce_setup(L, id, n, s, 2);
}

/* what: 0 dx, 1 dgamma, 2 dbeta; x is operand 0, gamma operand 1 (dx only), dy operand dyi. */
static bool norm_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int what, int rms, int64_t axis,
                          double eps, uint32_t dyi) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!rlx_dtype_is_float((rlx_dtype)x->dtype) || x->dtype != n->shape.dtype)
    return fail(L, "x must be a float tensor of the output's dtype, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank < 1) return fail(L, "x needs rank >= %s", "1");
  if (axis != -1 && axis != (int64_t)x->rank - 1) return fail(L, "attribute axis must be the last axis%s", "");
  if (!same_x_dy(L, n, 0, dyi)) return false;
  int64_t C = x->dims[x->rank - 1];
  if (what == 0 || rms) {
    const rlx_shape *gm = shape_of(L->p, n->inputs[1]);
    if (gm->dtype != x->dtype || numel(gm) != C)
      return fail(L, "gamma must hold one %s per channel", rlx_dtype_name((rlx_dtype)x->dtype));
  }
  s->kind = ST_NORM_BW;
  s->op = what;
  s->rms = rms;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->aux[1] = addr(L->p, n->inputs[dyi]);
  s->dst = addr(L->p, id);
  s->b = C;
  s->a = C ? numel(x) / C : 0;
  s->eps = eps;
  if (what == 1 && rlx_cu_malloc(L->p->ctx, (size_t)(s->a ? s->a : 1) * 2 * sizeof(double), &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the row statistics: %s", rlx_last_error());
  return true;
}
bool lower_LayerNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_LayerNormBackwardInput *a = &n->attrs.LayerNormBackwardInput;
  return norm_bw_setup(L, id, n, s, 0, 0, a->axis, a->eps, 2);
}
bool lower_LayerNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_LayerNormBackwardGamma *a = &n->attrs.LayerNormBackwardGamma;
  return norm_bw_setup(L, id, n, s, 1, 0, a->axis, a->eps, 1);
}
bool lower_RmsNormBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardInput *a = &n->attrs.RmsNormBackwardInput;
  return norm_bw_setup(L, id, n, s, 0, 1, a->axis, a->eps, 3);
}
bool lower_RmsNormBackwardGamma(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardGamma *a = &n->attrs.RmsNormBackwardGamma;
  return norm_bw_setup(L, id, n, s, 1, 1, a->axis, a->eps, 3);
}
bool lower_RmsNormBackwardBeta(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RmsNormBackwardBeta *a = &n->attrs.RmsNormBackwardBeta;
  return norm_bw_setup(L, id, n, s, 2, 1, a->axis, a->eps, 3);
}

static bool maxpool_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, const rlx_ilist *ks,
                             const rlx_ilist *stride, const rlx_ilist *padding) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]), *dy = shape_of(L->p, n->inputs[1]);
  int t = n->shape.dtype;
  if (x->dtype != t || dy->dtype != t)
    return fail(L, "x and dy need the output's dtype %s", rlx_dtype_name((rlx_dtype)t));
  if (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t))
    return fail(L, "max pooling needs a real dtype%s", "");
  if (x->rank != 2 + nsp || dy->rank != 2 + nsp || x->dims[0] != dy->dims[0] || x->dims[1] != dy->dims[1])
    return fail(L, "x and dy must be [N, C, spatial...] with equal N and C%s", "");
  cu_geom cg;
  if (cu_pool_geom(nsp, ks, stride, padding, &cg) != RLX_OK) return fail(L, "bad geometry: %s", rlx_last_error());
  rlx_cu_pool3 *g = &s->p3;
  g->NC = x->dims[0] * x->dims[1];
  uint32_t off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = 1;
    g->pb[i] = 0;
  }
  for (uint32_t i = 0; i < nsp; i++) {
    g->in[off + i] = x->dims[2 + i];
    g->out[off + i] = dy->dims[2 + i];
    g->k[off + i] = cg.k[i];
    g->s[off + i] = cg.s[i];
    g->pb[off + i] = cg.pb[i];
  }
  s->kind = ST_MAXPOOL_BW;
  s->dtype = t;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  return true;
}
bool lower_MaxPool2dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_MaxPool2dBackward *a = &n->attrs.MaxPool2dBackward;
  return maxpool_bw_setup(L, id, n, s, 2, &a->kernel_size, &a->stride, &a->padding);
}
bool lower_MaxPool3dBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_MaxPool3dBackward *a = &n->attrs.MaxPool3dBackward;
  return maxpool_bw_setup(L, id, n, s, 3, &a->kernel_size, &a->stride, &a->padding);
}

/* Conv*BackwardInput ([dy, w] -> dx) is the transposed convolution of dy with w; Conv*BackwardWeight
 * ([x, dy] -> dw) has its own kernel. The geometry is read from x (or dx) and dy. */
static bool conv_bw_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, uint32_t nsp, bool weight,
                          const rlx_ilist *stride, const rlx_ilist *padding, const rlx_ilist *dilation, int64_t G) {
  const rlx_shape *x = weight ? shape_of(L->p, n->inputs[0]) : &n->shape;
  const rlx_shape *dy = weight ? shape_of(L->p, n->inputs[1]) : shape_of(L->p, n->inputs[0]);
  const rlx_shape *w = weight ? &n->shape : shape_of(L->p, n->inputs[1]);
  if (!rlx_dtype_is_float((rlx_dtype)n->shape.dtype))
    return fail(L, "convolutions need a float dtype, got %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (x->rank != 2 + nsp || dy->rank != 2 + nsp || w->rank != 2 + nsp)
    return fail(L, "operands need rank 2 + spatial axes%s", "");
  if (G < 1 || x->dims[1] % G || dy->dims[1] % G || w->dims[0] != dy->dims[1] || w->dims[1] != x->dims[1] / G)
    return fail(L, "channels do not fit [N, Cin], [N, Cout], [Cout, Cin/groups] %s", "");
  cu_geom cg;
  if (cu_parse(nsp, stride, padding, dilation, NULL, &cg) != RLX_OK)
    return fail(L, "bad geometry: %s", rlx_last_error());
  rlx_cu_conv_geom *g = &s->geom;
  uint32_t off = 3 - nsp;
  for (uint32_t i = 0; i < 3; i++) {
    g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
    g->pb[i] = 0;
  }
  int64_t xin[3] = {1, 1, 1}, yout[3] = {1, 1, 1};
  for (uint32_t i = 0; i < nsp; i++) {
    xin[off + i] = x->dims[2 + i];
    yout[off + i] = dy->dims[2 + i];
    g->k[off + i] = w->dims[2 + i];
    g->s[off + i] = cg.s[i];
    g->d[off + i] = cg.d[i];
    g->pb[off + i] = cg.pb[i];
  }
  g->N = x->dims[0];
  g->G = G;
  rlx_cu_conv_geom fwd = *g; /* the forward geometry, for cuDNN */
  fwd.Cin = x->dims[1];
  fwd.Cout = dy->dims[1];
  memcpy(fwd.in, xin, sizeof xin);
  memcpy(fwd.out, yout, sizeof yout);
  if (weight) {
    *g = fwd;
    s->kind = ST_CONV_BW_W;
  } else { /* the transposed convolution dy -> dx */
    g->Cin = dy->dims[1];
    g->Cout = x->dims[1];
    memcpy(g->in, yout, sizeof yout);
    memcpy(g->out, xin, sizeof xin);
    s->kind = ST_CONV;
    s->rms = 1;
  }
  s->dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  /* cuDNN's backward filter (a = x, b = dy) or backward data (a = dy, b = w) */
  if (rlx_cu_dnn_create(L->p->ctx, weight ? RLX_CU_DNN_BWD_FILTER : RLX_CU_DNN_BWD_DATA, s->dtype, (int)nsp, &fwd,
                        s->src, s->aux[0], s->dst, &s->dnn) != RLX_OK)
    return fail(L, "%s", rlx_last_error());
  return true;
}
bool lower_Conv2dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv2dBackwardInput *a = &n->attrs.Conv2dBackwardInput;
  return conv_bw_setup(L, id, n, s, 2, false, &a->stride, &a->padding, &a->dilation, a->groups);
}
bool lower_Conv3dBackwardInput(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv3dBackwardInput *a = &n->attrs.Conv3dBackwardInput;
  return conv_bw_setup(L, id, n, s, 3, false, &a->stride, &a->padding, &a->dilation, a->groups);
}
bool lower_Conv2dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv2dBackwardWeight *a = &n->attrs.Conv2dBackwardWeight;
  return conv_bw_setup(L, id, n, s, 2, true, &a->stride, &a->padding, &a->dilation, a->groups);
}
bool lower_Conv3dBackwardWeight(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Conv3dBackwardWeight *a = &n->attrs.Conv3dBackwardWeight;
  return conv_bw_setup(L, id, n, s, 3, true, &a->stride, &a->padding, &a->dilation, a->groups);
}

/* ---- ordering, cumulative, random, masks ---- */

static bool split_axis(lower_ctx *L, const rlx_shape *x, int64_t axis_attr, cu_step *s) {
  s->a = s->b = s->c2 = 1;
  if (x->rank == 0) return true;
  int64_t ax = axis_attr < 0 ? axis_attr + x->rank : axis_attr;
  if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
  for (int64_t k = 0; k < ax; k++) s->a *= x->dims[k];
  s->b = x->dims[ax];
  for (uint32_t k = (uint32_t)ax + 1; k < x->rank; k++) s->c2 *= x->dims[k];
  return true;
}
static bool index_out_ok(lower_ctx *L, int t, int64_t largest) {
  if (t != RLX_I64 && t != RLX_I32 && t != RLX_F32)
    return fail(L, "indices are written as i64, i32 or f32, got %s", rlx_dtype_name((rlx_dtype)t));
  if ((t == RLX_F32 && largest > (1 << 24)) || (t == RLX_I32 && largest > INT32_MAX))
    return fail(L, "indices are not exact in %s", rlx_dtype_name((rlx_dtype)t));
  return true;
}
static bool real_dtype(lower_ctx *L, int t) {
  if (!rlx_dtype_is_float((rlx_dtype)t) && !rlx_dtype_is_int((rlx_dtype)t))
    return fail(L, "needs a real dtype, got %s", rlx_dtype_name((rlx_dtype)t));
  return true;
}

static bool argext_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int want_max, int64_t axis) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype) || !split_axis(L, x, axis, s) || !index_out_ok(L, n->shape.dtype, s->b)) return false;
  if (s->b == 0 && s->a * s->c2 > 0) return fail(L, "the reduced axis is empty%s", "");
  s->kind = ST_ARGEXT;
  s->op = want_max;
  s->dtype = x->dtype;
  s->aux_dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}
bool lower_ArgMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return argext_setup(L, id, n, s, 1, n->attrs.ArgMax.axis);
}
bool lower_ArgMin(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return argext_setup(L, id, n, s, 0, n->attrs.ArgMin.axis);
}

static bool cum_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind, int64_t axis, bool excl) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->dtype != n->shape.dtype) return fail(L, "the output needs x's dtype%s", "");
  if (kind == 2 && !real_dtype(L, x->dtype)) return false;
  if (!split_axis(L, x, axis, s)) return false;
  s->kind = ST_CUM2;
  s->op = kind;
  s->rms = excl;
  s->dtype = x->dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}
bool lower_CumProd(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return cum_setup(L, id, n, s, 1, n->attrs.CumProd.axis, n->attrs.CumProd.exclusive);
}
bool lower_CumMax(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return cum_setup(L, id, n, s, 2, n->attrs.CumMax.axis, n->attrs.CumMax.exclusive);
}

static bool sort_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int mode, int64_t axis, bool desc) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype)) return false;
  if (mode == 2) {
    if (x->rank == 0) return fail(L, "TopK needs rank >= %s", "1");
    axis = -1;
  }
  if (!split_axis(L, x, axis, s)) return false;
  if (mode == 0 && n->shape.dtype != x->dtype) return fail(L, "Sort's output needs x's dtype%s", "");
  if (mode != 0 && !index_out_ok(L, n->shape.dtype, s->b)) return false;
  if (mode == 2) {
    s->d = n->attrs.TopK.k;
    if (s->d < 0 || s->d > s->b) return fail(L, "attribute k is out of range%s", "");
  }
  s->kind = ST_SORT;
  s->op = mode;
  s->rms = desc;
  s->dtype = x->dtype;
  s->aux_dtype = n->shape.dtype;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  size_t bytes = (size_t)(s->a * s->c2) * (size_t)s->b * 2 * sizeof(int64_t);
  if (rlx_cu_malloc(L->p->ctx, bytes ? bytes : 8, &s->scratch) != RLX_OK)
    return fail(L, "no device memory for the sort scratch: %s", rlx_last_error());
  return true;
}
bool lower_Sort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sort_setup(L, id, n, s, 0, n->attrs.Sort.axis, n->attrs.Sort.descending);
}
bool lower_ArgSort(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  return sort_setup(L, id, n, s, 1, n->attrs.ArgSort.axis, n->attrs.ArgSort.descending);
}
bool lower_TopK(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) { return sort_setup(L, id, n, s, 2, -1, true); }

/* splitmix64's finaliser, as the CPU reference mixes seeds into keys */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xBF58476D1CE4E5B9);
  x ^= x >> 27;
  x *= UINT64_C(0x94D049BB133111EB);
  x ^= x >> 31;
  return x;
}
static bool rng_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int normal, uint64_t key,
                      const rlx_of32 *op_seed, double a, double b) {
  if (!rlx_dtype_is_float((rlx_dtype)n->shape.dtype))
    return fail(L, "random tensors are f32, f64, f16 or bf16, got %s", rlx_dtype_name((rlx_dtype)n->shape.dtype));
  if (!normal && (!(a < b) || a != a || b != b || a - a != 0 || b - b != 0))
    return fail(L, "attributes low and high must be finite with low < high%s", "");
  uint64_t k = key ^ mix64(L->p->rng_seed);
  if (op_seed->has) {
    uint32_t bits;
    memcpy(&bits, &op_seed->v, 4);
    k ^= mix64((UINT64_C(1) << 32) | bits);
  }
  s->kind = ST_RNG;
  s->op = normal;
  s->dtype = n->shape.dtype;
  s->key = k;
  s->eps = a;
  s->a = 0;
  s->dims[0] = 0;
  s->bytes = 0;
  s->d = numel(&n->shape);
  s->dst = addr(L->p, id);
  memcpy(&s->dims[1], &b, sizeof b); /* the second parameter, bit-exact */
  return true;
}
bool lower_RngUniform(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RngUniform *a = &n->attrs.RngUniform;
  return rng_setup(L, id, n, s, 0, a->key, &a->op_seed, a->low, a->high);
}
bool lower_RngNormal(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_RngNormal *a = &n->attrs.RngNormal;
  return rng_setup(L, id, n, s, 1, a->key, &a->op_seed, a->mean, a->scale);
}

bool lower_Trilu(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank < 2) return fail(L, "operand 0 needs rank >= %s", "2");
  if (x->dtype != n->shape.dtype) return fail(L, "the output needs x's dtype%s", "");
  s->kind = ST_TRILU;
  s->rms = n->attrs.Trilu.upper;
  s->eps = 0;
  s->a = x->dims[x->rank - 2];
  s->b = x->dims[x->rank - 1];
  s->c2 = n->attrs.Trilu.diagonal;
  s->d = numel(x);
  s->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  return true;
}

/* ---- Slice, Pad, Tile, Roll, CumsumBackward, GatherBackward ---- */

bool lower_Slice(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Slice *a = &n->attrs.Slice;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->rank == 0) return fail(L, "operand 0 needs rank >= %s", "1");
  int64_t ax = a->axis < 0 ? a->axis + x->rank : a->axis;
  if (ax < 0 || ax >= x->rank) return fail(L, "attribute axis is out of range%s", "");
  if (a->step == 0 || a->len < 0) return fail(L, "attribute step must be nonzero and len >= 0%s", "");
  if (a->len > 0) {
    int64_t last = a->start + (a->len - 1) * a->step;
    if (a->start < 0 || a->start >= x->dims[ax] || last < 0 || last >= x->dims[ax])
      return fail(L, "attributes start, len, step leave the axis%s", "");
  }
  rlx_cu_copy *c = copies(s, 1);
  if (!c) return fail(L, "out of %s", "memory");
  size_t esz = rlx_dtype_size((rlx_dtype)x->dtype);
  c->rank = n->shape.rank;
  for (uint32_t k = 0; k < n->shape.rank; k++) c->dims[k] = n->shape.dims[k];
  dense_strides(x, c->src_stride);
  int64_t start = a->len > 0 ? a->start * c->src_stride[ax] : 0;
  c->src_stride[ax] *= a->step;
  dense_strides(&n->shape, c->dst_stride);
  c->n = numel(&n->shape);
  c->src = (const uint8_t *)addr(L->p, n->inputs[0]) + (size_t)start * esz;
  c->dst = addr(L->p, id);
  c->esz = (int)esz;
  return true;
}

static bool remap_setup(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s, int kind) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (x->dtype != n->shape.dtype || x->rank != n->shape.rank)
    return fail(L, "the output needs x's dtype and rank%s", "");
  if (x->rank > RLX_CU_MAX_RANK) return fail(L, "rank over %s", "8");
  rlx_cu_remap *r = &s->remap;
  r->kind = kind;
  r->rank = x->rank;
  r->esz = (int)rlx_dtype_size((rlx_dtype)x->dtype);
  r->n = numel(&n->shape);
  for (uint32_t k = 0; k < x->rank; k++) {
    r->out_dims[k] = n->shape.dims[k];
    r->in_dims[k] = x->dims[k];
  }
  dense_strides(x, r->in_stride);
  r->src = addr(L->p, n->inputs[0]);
  r->dst = addr(L->p, id);
  s->kind = ST_REMAP;
  if (r->n > 0)
    for (uint32_t k = 0; k < x->rank; k++)
      if (x->dims[k] <= 0 && !(kind == 0 && n->attrs.Pad.mode == RLX_PAD_MODE_CONSTANT))
        return fail(L, "an empty input axis cannot fill a non-empty output%s", "");
  return true;
}

bool lower_Pad(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Pad *a = &n->attrs.Pad;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (a->mode < 0 || a->mode >= RLX_PAD_MODE_COUNT) return fail(L, "attribute mode is not a %s", "PadMode");
  if (a->pads.n != 2u * x->rank) return fail(L, "attribute pads needs (before, after) per %s", "axis");
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t before = a->pads.v[2 * k], after = a->pads.v[2 * k + 1], d = x->dims[k];
    int64_t most = before > after ? before : after;
    bool ok = before >= 0 && after >= 0;
    if (ok && most > 0) {
      if (a->mode == RLX_PAD_MODE_REFLECT)
        ok = most < d;
      else if (a->mode == RLX_PAD_MODE_CIRCULAR)
        ok = most <= d;
      else if (a->mode == RLX_PAD_MODE_REPLICATE)
        ok = d > 0;
    }
    if (!ok || n->shape.dims[k] != d + before + after)
      return fail(L, "attribute pads is not valid for this %s", "mode");
  }
  if (!remap_setup(L, id, n, s, 0)) return false;
  s->remap.mode = a->mode;
  for (uint32_t k = 0; k < x->rank; k++) s->remap.shift[k] = a->pads.v[2 * k];
  /* the fill value as one element of the dtype */
  double v = (double)a->value;
  memset(s->remap.fill, 0, sizeof s->remap.fill);
  rlx_elem_set(s->remap.fill, (rlx_dtype)x->dtype, 0, v);
  return true;
}

bool lower_Tile(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  const rlx_ilist *reps = &n->attrs.Tile.reps;
  if (reps->n != x->rank) return fail(L, "attribute reps needs one entry per %s", "axis");
  for (uint32_t k = 0; k < x->rank; k++)
    if (reps->v[k] < 0 || n->shape.dims[k] != x->dims[k] * reps->v[k])
      return fail(L, "attribute reps does not fit%s", "");
  return remap_setup(L, id, n, s, 1);
}

bool lower_Roll(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_Roll *a = &n->attrs.Roll;
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (a->shifts.n != a->dims.n) return fail(L, "attributes shifts and dims need equal %s", "lengths");
  if (!remap_setup(L, id, n, s, 2)) return false;
  for (uint32_t k = 0; k < a->dims.n; k++) {
    int64_t ax = a->dims.v[k] < 0 ? a->dims.v[k] + x->rank : a->dims.v[k];
    if (ax < 0 || ax >= x->rank) return fail(L, "attribute dims: an axis is out of range%s", "");
    int64_t d = x->dims[ax];
    if (d > 0) s->remap.shift[ax] = (s->remap.shift[ax] + ((a->shifts.v[k] % d) + d) % d) % d;
  }
  return true;
}

bool lower_CumsumBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  if (!real_dtype(L, x->dtype)) return false;
  return cum_setup(L, id, n, s, 3, n->attrs.CumsumBackward.axis, n->attrs.CumsumBackward.exclusive);
}

bool lower_GatherBackward(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *tab = &n->shape, *dy = shape_of(L->p, n->inputs[0]), *ix = shape_of(L->p, n->inputs[1]);
  if (!real_dtype(L, tab->dtype) || dy->dtype != tab->dtype) return false;
  if (!index_dtype_ok(ix->dtype))
    return fail(L, "indices must be integers or f32, got %s", rlx_dtype_name((rlx_dtype)ix->dtype));
  if (tab->rank == 0) return fail(L, "the table needs rank >= %s", "1");
  if (!split_axis(L, tab, n->attrs.GatherBackward.axis, s)) return false;
  if (dy->rank != tab->rank - 1 + ix->rank || numel(dy) != s->a * s->c2 * numel(ix))
    return fail(L, "dy does not match the gathered shape%s", "");
  s->kind = ST_GATHER_BW;
  s->dtype = tab->dtype;
  s->aux_dtype = ix->dtype;
  s->d = numel(ix);
  s->src = addr(L->p, n->inputs[0]);
  s->aux[0] = addr(L->p, n->inputs[1]);
  s->dst = addr(L->p, id);
  return true;
}

bool lower_Fft(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_shape *x = shape_of(L->p, n->inputs[0]);
  int t = n->shape.dtype;
  bool cplx = is_complex(t);
  if (x->dtype != t || (!cplx && t != RLX_F32 && t != RLX_F64))
    return fail(L, "Fft takes f32 / f64 (real-block) or c64 / c128, got %s", rlx_dtype_name((rlx_dtype)x->dtype));
  if (x->rank < 1) return fail(L, "Fft transforms the last axis; operand 0 is a %s", "scalar");
  int64_t last = x->dims[x->rank - 1], N = cplx ? last : last / 2;
  if (N < 1 || (!cplx && last % 2)) return fail(L, "the last axis must hold N >= 1 complex values or 2N %s", "reals");
  const rlx_attrs_Fft *a = &n->attrs.Fft;
  double scale = 1.0;
  if (a->norm == RLX_FFT_NORM_FORWARD)
    scale = a->inverse ? 1.0 / (double)N : 1.0;
  else if (a->norm == RLX_FFT_NORM_ORTHO)
    scale = 1.0 / sqrt((double)N);
  s->kind = ST_DFT;
  s->dtype = t;
  s->a = numel(x) / last;
  s->b = N;
  s->op = a->inverse ? 1 : -1;
  s->eps = scale;
  s->src = addr(L->p, n->inputs[0]);
  s->dst = addr(L->p, id);
  if (s->a > 0 && rlx_cu_fft_create(L->p->ctx, s->a, N, &s->fft) != RLX_OK)
    return fail(L, "making the cuFFT plan failed: %s", rlx_last_error());
  return true;
}

/* ---- fused elementwise regions ---- */

/* Fills the chain of r over operand dtypes in_dt (n_in operands); checks what the kernel supports. */
static bool region_chain(lower_ctx *L, const rlx_chain *ch, rlx_cu_region *r) {
  if (ch->n == 0 || ch->n > RLX_CU_REGION_MAX_STEPS) return fail(L, "the chain needs 1..%s steps", "64");
  bool fast = true;
  for (int k = 0; k < r->n_in; k++) fast &= r->in_dtype[k] == RLX_F32;
  for (uint32_t j = 0; j < ch->n; j++) {
    const rlx_chain_step *st = &ch->steps[j];
    const rlx_chain_operand *ops[3] = {&st->a, &st->b, &st->c};
    int used = st->kind == RLX_CHAIN_STEP_WHERE                                            ? 3
               : (st->kind == RLX_CHAIN_STEP_BINARY || st->kind == RLX_CHAIN_STEP_COMPARE) ? 2
                                                                                           : 1;
    int t[3] = {0, 0, 0};
    rlx_cu_region_step *rs = &r->steps[j];
    for (int k = 0; k < used; k++) {
      const rlx_chain_operand *o = ops[k];
      if (o->is_step ? o->index >= j : o->index >= (uint32_t)r->n_in)
        return fail(L, "a chain operand refers to %s", "a missing value");
      t[k] = o->is_step ? r->steps[o->index].dtype : r->in_dtype[o->index];
      rs->src[k] = (uint8_t)(o->is_step ? RLX_CU_REGION_MAX_IN + o->index : o->index);
      if (is_complex(t[k]))
        return fail(L, "complex values in a region are not supported (%s)", rlx_dtype_name((rlx_dtype)t[k]));
    }
    rs->kind = (int8_t)st->kind;
    rs->sub = (int8_t)st->sub;
    switch (st->kind) {
    case RLX_CHAIN_STEP_ACTIVATION: rs->dtype = (int8_t)t[0]; break;
    case RLX_CHAIN_STEP_CAST: rs->dtype = (int8_t)st->sub; break;
    case RLX_CHAIN_STEP_BINARY: rs->dtype = (int8_t)t[0]; break;
    case RLX_CHAIN_STEP_COMPARE: rs->dtype = RLX_BOOL; break;
    case RLX_CHAIN_STEP_WHERE: rs->dtype = (int8_t)t[1]; break;
    default: return fail(L, "unknown chain step kind%s", "");
    }
    if (is_complex(rs->dtype)) return fail(L, "complex values in a region are not supported%s", "");
    fast &= rs->dtype == RLX_F32 && (st->kind == RLX_CHAIN_STEP_ACTIVATION || st->kind == RLX_CHAIN_STEP_BINARY);
  }
  r->n_steps = (int)ch->n;
  r->out_dtype = r->steps[ch->n - 1].dtype;
  r->fast_f32 = fast;
  return true;
}

static bool region_prologue(lower_ctx *L, rlx_cu_region *r, int k, const rlx_shape *x) {
  if (x->rank < 2) return fail(L, "the ResizeNearest2x prologue needs rank >= %s", "2");
  r->pro = k;
  r->pro_h = x->dims[x->rank - 2];
  r->pro_w = x->dims[x->rank - 1];
  r->in_count[k] *= 4;
  r->fast_f32 = 0;
  return true;
}

bool lower_ElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  if (n->n_inputs < 1 || n->n_inputs > RLX_CU_REGION_MAX_IN) return fail(L, "a region takes 1..%s operands", "16");
  rlx_cu_region *r = calloc(1, sizeof *r);
  if (!r) return fail(L, "out of %s", "memory");
  s->kind = ST_REGION;
  s->regions = r;
  s->n_regions = 1;
  r->n_in = (int)n->n_inputs;
  r->pro = -1;
  r->n = numel(&n->shape);
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    const rlx_shape *x = shape_of(L->p, n->inputs[k]);
    r->in[k] = addr(L->p, n->inputs[k]);
    r->in_dtype[k] = x->dtype;
    r->in_count[k] = numel(x);
  }
  if (!region_chain(L, &a->chain, r)) return false;
  if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) {
    if (a->prologue_input < 0 || a->prologue_input >= (int64_t)n->n_inputs)
      return fail(L, "attribute prologue_input is out of range%s", "");
    if (!region_prologue(L, r, (int)a->prologue_input, shape_of(L->p, n->inputs[a->prologue_input]))) return false;
  }
  for (int k = 0; k < r->n_in; k++)
    if (r->n && (r->in_count[k] == 0 || r->n % r->in_count[k]))
      return fail(L, "an operand does not tile the output%s", "");
  if (r->out_dtype != n->shape.dtype) return fail(L, "the chain's result dtype differs from the node's%s", "");
  r->out = addr(L->p, id);
  return true;
}

/* The chain (reading operand 0) applied to every operand separately, the results concatenated on
 * axis 0: one region launch per operand, each writing its slice of the output. */
bool lower_BatchElementwiseRegion(lower_ctx *L, rlx_id id, const rlx_node *n, cu_step *s) {
  const rlx_attrs_BatchElementwiseRegion *a = &n->attrs.BatchElementwiseRegion;
  if (n->n_inputs < 1 || n->n_inputs > RLX_CU_REGION_MAX_IN) return fail(L, "a region takes 1..%s operands", "16");
  rlx_cu_region *r = calloc(n->n_inputs, sizeof *r);
  if (!r) return fail(L, "out of %s", "memory");
  s->kind = ST_REGION;
  s->regions = r;
  s->n_regions = n->n_inputs;
  size_t esz = rlx_dtype_size((rlx_dtype)n->shape.dtype), at = 0;
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    const rlx_shape *x = shape_of(L->p, n->inputs[k]);
    r[k].n_in = 1;
    r[k].pro = -1;
    r[k].in[0] = addr(L->p, n->inputs[k]);
    r[k].in_dtype[0] = x->dtype;
    r[k].in_count[0] = numel(x);
    if (!region_chain(L, &a->chain, &r[k])) return false;
    if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X && !region_prologue(L, &r[k], 0, x)) return false;
    r[k].n = r[k].in_count[0];
    if (r[k].out_dtype != n->shape.dtype) return fail(L, "the chain's result dtype differs from the node's%s", "");
    r[k].out = (uint8_t *)addr(L->p, id) + at * esz;
    at += (size_t)r[k].n;
  }
  if ((int64_t)at != numel(&n->shape)) return fail(L, "the parts do not fill the output%s", "");
  return true;
}
