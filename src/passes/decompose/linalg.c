/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* DotGeneral as Transpose + Reshape + MatMul + Reshape. */
#include "passes/decompose/decompose.h"

/* Product of dims[idx[0..n)]; false when one is symbolic or it overflows. */
static bool product(const rlx_shape *s, const uint32_t *idx, uint32_t n, int64_t *out) {
  int64_t p = 1;
  for (uint32_t i = 0; i < n; i++) {
    rlx_dim d = s->dims[idx[i]];
    if (d < 0 || __builtin_mul_overflow(p, d, &p)) return false;
  }
  *out = p;
  return true;
}

/* Splits the axes of one operand into batch (attribute order), free (ascending) and contracting
 * (attribute order). */
static rlx_status split_axes(const rlx_shape *s, const rlx_ilist *batch, const rlx_ilist *contr, uint32_t *b,
                             uint32_t *f, uint32_t *nf, uint32_t *c) {
  uint32_t used = 0;
  for (uint32_t i = 0; i < batch->n; i++) {
    if (batch->v[i] < 0 || batch->v[i] >= s->rank)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "DotGeneral: batch axis out of range");
    b[i] = (uint32_t)batch->v[i];
    used |= 1u << b[i];
  }
  for (uint32_t i = 0; i < contr->n; i++) {
    if (contr->v[i] < 0 || contr->v[i] >= s->rank)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "DotGeneral: contracting axis out of range");
    c[i] = (uint32_t)contr->v[i];
    used |= 1u << c[i];
  }
  *nf = 0;
  for (uint32_t i = 0; i < s->rank; i++)
    if (!(used & (1u << i))) f[(*nf)++] = i;
  return RLX_OK;
}

/* lhs -> [batch, free, contract] -> [B, M, K]; rhs -> [batch, contract, free] -> [B, K, N];
 * MatMul -> [B, M, N] -> reshape to batch ++ lhs free ++ rhs free. Without batch axes the matmul
 * is 2-D. All extents must be static. */
RLX_DECOMPOSE_DECL(DotGeneral) {
  (void)src;
  const rlx_attrs_DotGeneral *a = &n->attrs.DotGeneral;
  rlx_shape ls = dc_shape(dst, in[0]), rs = dc_shape(dst, in[1]);
  if (!dc_all_static(&ls) || !dc_all_static(&rs)) return dc_unsupported(n, "operands have symbolic extents");
  if (a->lhs_batch.n != a->rhs_batch.n || a->lhs_contracting.n != a->rhs_contracting.n)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "DotGeneral: lhs/rhs axis lists differ in length");
  uint32_t lb[RLX_MAX_RANK], lf[RLX_MAX_RANK], lc[RLX_MAX_RANK], rb[RLX_MAX_RANK], rf[RLX_MAX_RANK], rc[RLX_MAX_RANK],
      nlf, nrf;
  uint32_t nb = a->lhs_batch.n, nc = a->lhs_contracting.n;
  if (nb + nc > ls.rank || nb + nc > rs.rank)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "DotGeneral: too many axes listed");
  RLX_TRY(split_axes(&ls, &a->lhs_batch, &a->lhs_contracting, lb, lf, &nlf, lc));
  RLX_TRY(split_axes(&rs, &a->rhs_batch, &a->rhs_contracting, rb, rf, &nrf, rc));
  int64_t B, M, K, N;
  if (!product(&ls, lb, nb, &B) || !product(&ls, lf, nlf, &M) || !product(&ls, lc, nc, &K) ||
      !product(&rs, rf, nrf, &N))
    return rlx_errorf(RLX_ERR_OVERFLOW, "DotGeneral: extents overflow");

  int64_t perm[RLX_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 0; i < nb; i++) perm[k++] = lb[i];
  for (uint32_t i = 0; i < nlf; i++) perm[k++] = lf[i];
  for (uint32_t i = 0; i < nc; i++) perm[k++] = lc[i];
  rlx_id lt, rt, l3, r3, mm;
  RLX_TRY(rlx_permute(dst, in[0], ls.rank, perm, &lt));
  k = 0;
  for (uint32_t i = 0; i < nb; i++) perm[k++] = rb[i];
  for (uint32_t i = 0; i < nc; i++) perm[k++] = rc[i];
  for (uint32_t i = 0; i < nrf; i++) perm[k++] = rf[i];
  RLX_TRY(rlx_permute(dst, in[1], rs.rank, perm, &rt));
  rlx_dim ld[3] = {B, M, K}, rd[3] = {B, K, N};
  uint32_t off = nb ? 0 : 1; /* drop the batch axis when there is none */
  RLX_TRY(rlx_reshape_dims(dst, lt, 3 - off, ld + off, &l3));
  RLX_TRY(rlx_reshape_dims(dst, rt, 3 - off, rd + off, &r3));
  RLX_TRY(rlx_matmul(dst, l3, r3, &mm));
  rlx_dim od[RLX_MAX_RANK];
  k = 0;
  for (uint32_t i = 0; i < nb; i++) od[k++] = ls.dims[lb[i]];
  for (uint32_t i = 0; i < nlf; i++) od[k++] = ls.dims[lf[i]];
  for (uint32_t i = 0; i < nrf; i++) od[k++] = rs.dims[rf[i]];
  return rlx_reshape_dims(dst, mm, k, od, out);
}
