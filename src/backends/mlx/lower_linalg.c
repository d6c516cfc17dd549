/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of the matrix products: MatMul (batched, broadcast), DotGeneral (batch
 * dims first, then the free dims, contracting dims folded into one GEMM axis) and
 * FusedMatMulBiasAct. MLX multiplies floating-point matrices only: integer products decline to
 * the CPU kernel. */
#include "backends/mlx/mlx_internal.h"

static rlx_status lower_MatMul(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "integer MatMul (MLX multiplies floats only)");
  rlxm_arr *r = rlxm_matmul(c->s, in[0], in[1]);
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < n->shape.rank; i++) d[i] = n->shape.dims[i];
  return mlx_check(c, rlxm_reshape(c->s, r, n->shape.rank, d), out);
}

/* Permutes x to (batch..., free..., contract...) and folds it into [batch, free, contract]. */
static rlxm_arr *dot_side(mlx_lower_ctx *c, rlxm_arr *x, const rlx_ilist *batch, const rlx_ilist *contract,
                          bool contract_last, int64_t *nb, int64_t *nfree, int64_t *ncon, int64_t *free_dims,
                          uint32_t *n_free) {
  uint32_t r = rlxm_rank(x);
  bool used[RLX_MAX_RANK] = {false};
  int64_t perm[RLX_MAX_RANK];
  uint32_t k = 0;
  *nb = 1, *nfree = 1, *ncon = 1;
  for (uint32_t i = 0; i < batch->n; i++) {
    perm[k++] = batch->v[i];
    used[batch->v[i]] = true;
    *nb *= rlxm_dim(x, (uint32_t)batch->v[i]);
  }
  uint32_t fk = 0, start_free = k;
  if (!contract_last) {
    for (uint32_t i = 0; i < contract->n; i++) {
      perm[k++] = contract->v[i];
      used[contract->v[i]] = true;
      *ncon *= rlxm_dim(x, (uint32_t)contract->v[i]);
    }
    start_free = k;
  } else {
    for (uint32_t i = 0; i < contract->n; i++) used[contract->v[i]] = true;
  }
  (void)start_free;
  for (uint32_t i = 0; i < r; i++)
    if (!used[i]) {
      perm[k++] = i;
      free_dims[fk++] = rlxm_dim(x, i);
      *nfree *= rlxm_dim(x, i);
    }
  if (contract_last)
    for (uint32_t i = 0; i < contract->n; i++) {
      perm[k++] = contract->v[i];
      *ncon *= rlxm_dim(x, (uint32_t)contract->v[i]);
    }
  *n_free = fk;
  rlxm_arr *t = rlxm_transpose(c->s, x, r, perm);
  int64_t d3[3] = {*nb, contract_last ? *nfree : *ncon, contract_last ? *ncon : *nfree};
  return rlxm_reshape(c->s, t, 3, d3);
}

static bool axes_ok(const rlx_ilist *l, uint32_t rank) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->v[i] < 0 || l->v[i] >= rank) return false;
  return true;
}

static rlx_status lower_DotGeneral(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_DotGeneral *a = &n->attrs.DotGeneral;
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "integer DotGeneral");
  if (!axes_ok(&a->lhs_batch, rlxm_rank(in[0])) || !axes_ok(&a->lhs_contracting, rlxm_rank(in[0])) ||
      !axes_ok(&a->rhs_batch, rlxm_rank(in[1])) || !axes_ok(&a->rhs_contracting, rlxm_rank(in[1])))
    return mlx_decline(c, "negative or out-of-range axes: the CPU kernel checks them");
  int64_t b1, f1, c1, b2, f2, c2, fd1[RLX_MAX_RANK], fd2[RLX_MAX_RANK];
  uint32_t nf1, nf2;
  rlxm_arr *l = dot_side(c, in[0], &a->lhs_batch, &a->lhs_contracting, true, &b1, &f1, &c1, fd1, &nf1);
  rlxm_arr *r = dot_side(c, in[1], &a->rhs_batch, &a->rhs_contracting, false, &b2, &f2, &c2, fd2, &nf2);
  rlxm_arr *p = rlxm_matmul(c->s, l, r);
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < n->shape.rank; i++) d[i] = n->shape.dims[i];
  return mlx_check(c, rlxm_reshape(c->s, p, n->shape.rank, d), out);
}

const mlx_lower_fn mlx_lower_linalg[RLX_OP_COUNT] = {
    [RLX_OP_MatMul] = lower_MatMul,
    [RLX_OP_DotGeneral] = lower_DotGeneral,
};
