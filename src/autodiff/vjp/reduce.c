/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: reductions (Sum, Mean, Max/Min with ties split evenly, Prod without dividing by x),
 * Softmax, Cumsum / CumProd, Sort, and CumsumBackward (second order). CumMax has no rule of its
 * own: it is decomposed (masked Reduce Max) before differentiation. */
#include "autodiff/ad_internal.h"

/* Normalised reduced-axes mask of a Reduce node over x of rank r (empty list = every axis). */
static rlx_status reduce_mask(rlx_ad_ctx *c, const rlx_ilist *axes, uint32_t r, uint32_t *mask) {
  *mask = 0;
  if (axes->n == 0) {
    *mask = r ? (1u << r) - 1u : 0;
    return RLX_OK;
  }
  for (uint32_t i = 0; i < axes->n; i++) {
    uint32_t a;
    if (!rlx_norm_axis(axes->v[i], r, &a)) return ad_unsupported(c, "attribute axes is out of range");
    *mask |= 1u << a;
  }
  return RLX_OK;
}

/* Product of all elements but one along the last axis, without division:
 * exclusive prefix product times exclusive suffix product. */
static rlx_status others_product(rlx_ad_ctx *c, rlx_id z, rlx_id *out) {
  rlx_shape s = ad_shape(c, z);
  int64_t last = (int64_t)s.rank - 1;
  rlx_attrs_CumProd a = {.axis = last, .exclusive = true};
  rlx_id left, right, rz;
  RLX_TRY(rlx_build_CumProd(c->dst, &z, 1, &a, NULL, &left));
  RLX_TRY(ad_reverse_axes(c, z, 1, &last, &rz));
  RLX_TRY(rlx_build_CumProd(c->dst, &rz, 1, &a, NULL, &right));
  RLX_TRY(ad_reverse_axes(c, right, 1, &last, &right));
  return ad_mul(c, left, right, out);
}

/* d/dx_k prod(x over the reduced axes) = product of the other elements, for x of shape xs. */
static rlx_status prod_partials(rlx_ad_ctx *c, rlx_id x, uint32_t mask, rlx_id *out) {
  rlx_shape xs = ad_shape(c, x);
  int64_t perm[RLX_MAX_RANK], inv[RLX_MAX_RANK];
  rlx_dim d[RLX_MAX_RANK];
  uint32_t k = 0, nk = 0;
  rlx_dim L = 1;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (!(mask & (1u << i))) perm[k++] = i;
  nk = k;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (mask & (1u << i)) {
      perm[k++] = i;
      if (xs.dims[i] < 0) return ad_unsupported(c, "a product over a symbolic axis");
      L *= xs.dims[i];
    }
  for (uint32_t i = 0; i < xs.rank; i++) inv[perm[i]] = i;
  rlx_id t;
  RLX_TRY(ad_transpose(c, x, xs.rank, perm, &t));
  rlx_shape ts = ad_shape(c, t);
  for (uint32_t i = 0; i < nk; i++) d[i] = ts.dims[i];
  d[nk] = L;
  RLX_TRY(ad_reshape_dims(c, t, nk + 1, d, &t));
  RLX_TRY(others_product(c, t, &t));
  RLX_TRY(ad_reshape(c, t, &ts, &t));
  return ad_transpose(c, t, xs.rank, inv, out);
}

RLX_VJP_DECL(Reduce) {
  const rlx_attrs_Reduce *a = &n->attrs.Reduce;
  rlx_shape xs = ad_shape(c, x[0]);
  uint32_t mask;
  RLX_TRY(reduce_mask(c, &a->axes, xs.rank, &mask));
  rlx_shape kept = xs;
  double count = 1.0;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (mask & (1u << i)) {
      if (xs.dims[i] < 0 && a->op == RLX_REDUCE_MEAN) return ad_unsupported(c, "a mean over a symbolic axis");
      count *= (double)xs.dims[i];
      kept.dims[i] = 1;
    }
  rlx_id g;
  RLX_TRY(ad_broadcast_back(c, dy, &kept, x[0], &g));
  switch (a->op) {
  case RLX_REDUCE_SUM: dx[0] = g; return RLX_OK;
  case RLX_REDUCE_MEAN: return ad_bin_s(c, RLX_BINOP_MUL, g, count > 0 ? 1.0 / count : 0.0, &dx[0]);
  case RLX_REDUCE_MAX:
  case RLX_REDUCE_MIN: { /* the gradient goes to the extremal elements, split evenly among ties */
    rlx_id yb, m, cnt;
    int64_t axes[RLX_MAX_RANK];
    uint32_t na = 0;
    for (uint32_t i = 0; i < xs.rank; i++)
      if (mask & (1u << i)) axes[na++] = i;
    RLX_TRY(ad_broadcast_back(c, y, &kept, x[0], &yb));
    RLX_TRY(ad_cmp(c, RLX_CMP_EQ, x[0], yb, &m));
    RLX_TRY(ad_mask(c, m, ad_dtype(c, x[0]), &m));
    RLX_TRY(ad_reduce(c, RLX_REDUCE_SUM, m, na, axes, true, &cnt));
    RLX_TRY(ad_div(c, m, cnt, &m));
    return ad_mul(c, g, m, &dx[0]);
  }
  case RLX_REDUCE_PROD: {
    rlx_id p;
    RLX_TRY(prod_partials(c, x[0], mask, &p));
    return ad_mul(c, g, p, &dx[0]);
  }
  default: return ad_unsupported(c, "reduce op %d has no VJP", (int)a->op);
  }
}

RLX_VJP_DECL(Softmax) {
  (void)x;
  rlx_shape s = ad_shape(c, y);
  uint32_t ax;
  if (!rlx_norm_axis(n->attrs.Softmax.axis, s.rank, &ax)) return ad_unsupported(c, "attribute axis is out of range");
  rlx_id gy, sum, d;
  RLX_TRY(ad_mul(c, dy, y, &gy));
  RLX_TRY(ad_sum_keep(c, gy, ax, &sum));
  RLX_TRY(ad_sub(c, dy, sum, &d));
  return ad_mul(c, y, d, &dx[0]);
}

/* Suffix sums of g along axis (inclusive, or exclusive: sum over j > i). */
static rlx_status suffix_sum(rlx_ad_ctx *c, rlx_id g, int64_t axis, bool exclusive, rlx_id *out) {
  if (c->use_backward_ops) {
    rlx_attrs_CumsumBackward a = {.axis = axis, .exclusive = exclusive};
    return ad_emit(c, RLX_OP_CumsumBackward, &g, 1, &a, NULL, out);
  }
  rlx_shape s = ad_shape(c, g);
  uint32_t ax;
  if (!rlx_norm_axis(axis, s.rank, &ax)) return ad_unsupported(c, "attribute axis is out of range");
  int64_t a64 = ax;
  rlx_id r;
  rlx_attrs_Cumsum a = {.axis = a64, .exclusive = exclusive};
  RLX_TRY(ad_reverse_axes(c, g, 1, &a64, &r));
  RLX_TRY(rlx_build_Cumsum(c->dst, &r, 1, &a, NULL, &r));
  return ad_reverse_axes(c, r, 1, &a64, out);
}

RLX_VJP_DECL(Cumsum) {
  (void)x;
  (void)y;
  return suffix_sum(c, dy, n->attrs.Cumsum.axis, n->attrs.Cumsum.exclusive, &dx[0]);
}

/* dx_k = sum_{i >= k} g_i y_i / x_k (i > k when exclusive), as RLX does (x = 0 gives inf/NaN). */
RLX_VJP_DECL(CumProd) {
  rlx_id t;
  RLX_TRY(ad_mul(c, dy, y, &t));
  RLX_TRY(suffix_sum(c, t, n->attrs.CumProd.axis, n->attrs.CumProd.exclusive, &t));
  return ad_div(c, t, x[0], &dx[0]);
}

/* CumsumBackward (suffix sums) is linear; its adjoint is the prefix sum. */
RLX_VJP_DECL(CumsumBackward) {
  (void)x;
  (void)y;
  rlx_attrs_Cumsum a = {.axis = n->attrs.CumsumBackward.axis, .exclusive = n->attrs.CumsumBackward.exclusive};
  return rlx_build_Cumsum(c->dst, &dy, 1, &a, NULL, &dx[0]);
}

/* Sorted values route their gradient back to where they came from: the stable ArgSort
 * permutation scatters dy back. */
RLX_VJP_DECL(Sort) {
  (void)y;
  rlx_attrs_ArgSort as = {.axis = n->attrs.Sort.axis, .descending = n->attrs.Sort.descending};
  rlx_id perm, z;
  RLX_TRY(rlx_build_ArgSort(c->dst, &x[0], 1, &as, NULL, &perm));
  RLX_TRY(ad_zeros_like(c, x[0], &z));
  rlx_attrs_ScatterElements se;
  rlx_attrs_init(RLX_OP_ScatterElements, &se);
  se.axis = n->attrs.Sort.axis;
  se.reduction = RLX_SCATTER_REDUCTION_NONE;
  rlx_id in[3] = {z, perm, dy};
  return rlx_build_ScatterElements(c->dst, in, 3, &se, NULL, &dx[0]);
}
