/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: linear algebra and sorting (spec ir-core §10.3). */
#include "infer_util.h"

/* Operand i must be a square matrix [n, n]. */
static rlx_status need_square(const rlx_infer_ctx *c, uint32_t i, const char *what) {
  const rlx_shape *s = c->in[i];
  if (s->rank != 2)
    return rlx_shape_error("operand %u (%s) has shape %s; expected a square matrix [n, n]", i, what, rlx_fmt_shape(s));
  if (!rlx_dim_equal(s->dims[0], s->dims[1]))
    return rlx_shape_error("operand %u (%s) has shape %s; the matrix must be square", i, what, rlx_fmt_shape(s));
  return RLX_OK;
}

rlx_status rlx_infer_MatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *a = c->in[0], *b = c->in[1];
  for (uint32_t i = 0; i < 2; i++)
    if (c->in[i]->rank < 2)
      return rlx_shape_error("operand %u has shape %s; MatMul needs rank >= 2 on both sides (reshape a vector to "
                             "[1, K] or [K, 1])",
                             i, rlx_fmt_shape(c->in[i]));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  rlx_dim k0 = a->dims[a->rank - 1], k1 = b->dims[b->rank - 2];
  if (!rlx_dim_equal(k0, k1))
    return rlx_shape_error("operand 1 has shape %s; its row count %s must equal operand 0's column count %s "
                           "(operand 0 is %s)",
                           rlx_fmt_shape(b), iu_fmt_dim(k1), iu_fmt_dim(k0), rlx_fmt_shape(a));
  rlx_shape ba = iu_shape((rlx_dtype)a->dtype, a->rank - 2u), bb = iu_shape((rlx_dtype)b->dtype, b->rank - 2u);
  memcpy(ba.dims, a->dims, sizeof(rlx_dim) * ba.rank);
  memcpy(bb.dims, b->dims, sizeof(rlx_dim) * bb.rank);
  rlx_shape batch;
  if (rlx_broadcast(&ba, &bb, &batch) != RLX_OK)
    return rlx_shape_error("batch dims of operand 0 %s and operand 1 %s do not broadcast", rlx_fmt_shape(a),
                           rlx_fmt_shape(b));
  *out = batch;
  out->rank = (uint8_t)(batch.rank + 2);
  out->dims[batch.rank] = a->dims[a->rank - 2];
  out->dims[batch.rank + 1] = b->dims[b->rank - 1];
  out->dtype = a->dtype;
  return RLX_OK;
}

/* Validates one side's contracting + batch axis lists; marks used axes in *used. */
static rlx_status dot_axes(const rlx_infer_ctx *c, uint32_t operand, const char *attr, const rlx_ilist *l,
                           uint32_t *used) {
  uint32_t r = c->in[operand]->rank;
  for (uint32_t k = 0; k < l->n; k++) {
    int64_t ax = l->v[k];
    if (ax < 0 || ax >= (int64_t)r)
      return rlx_shape_error("attribute %s: entry %u is %" PRId64 "; operand %u %s has axes 0..%d", attr, k, ax,
                             operand, rlx_fmt_shape(c->in[operand]), (int)r - 1);
    if (*used & (1u << ax))
      return rlx_shape_error("attribute %s: axis %" PRId64 " of operand %u is used more than once (in %s or "
                             "another contracting/batch list)",
                             attr, ax, operand, attr);
    *used |= 1u << ax;
  }
  return RLX_OK;
}

rlx_status rlx_infer_DotGeneral(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_DotGeneral *at = &c->a->DotGeneral;
  const rlx_shape *a = c->in[0], *b = c->in[1];
  RLX_TRY(iu_same_dtype(c, 0, 1));
  if (at->lhs_contracting.n != at->rhs_contracting.n)
    return rlx_shape_error("attribute rhs_contracting has %u entries; it must pair with the %u of attribute "
                           "lhs_contracting",
                           at->rhs_contracting.n, at->lhs_contracting.n);
  if (at->lhs_batch.n != at->rhs_batch.n)
    return rlx_shape_error("attribute rhs_batch has %u entries; it must pair with the %u of attribute lhs_batch",
                           at->rhs_batch.n, at->lhs_batch.n);
  uint32_t used_a = 0, used_b = 0;
  RLX_TRY(dot_axes(c, 0, "lhs_batch", &at->lhs_batch, &used_a));
  RLX_TRY(dot_axes(c, 0, "lhs_contracting", &at->lhs_contracting, &used_a));
  RLX_TRY(dot_axes(c, 1, "rhs_batch", &at->rhs_batch, &used_b));
  RLX_TRY(dot_axes(c, 1, "rhs_contracting", &at->rhs_contracting, &used_b));
  for (uint32_t k = 0; k < at->lhs_batch.n; k++) {
    rlx_dim da = a->dims[at->lhs_batch.v[k]], db = b->dims[at->rhs_batch.v[k]];
    if (!rlx_dim_equal(da, db))
      return rlx_shape_error("batch pair %u: operand 0 axis %" PRId64 " has extent %s but operand 1 axis %" PRId64
                             " has %s (attributes lhs_batch/rhs_batch)",
                             k, at->lhs_batch.v[k], iu_fmt_dim(da), at->rhs_batch.v[k], iu_fmt_dim(db));
  }
  for (uint32_t k = 0; k < at->lhs_contracting.n; k++) {
    rlx_dim da = a->dims[at->lhs_contracting.v[k]], db = b->dims[at->rhs_contracting.v[k]];
    if (!rlx_dim_equal(da, db))
      return rlx_shape_error("contracting pair %u: operand 0 axis %" PRId64 " has extent %s but operand 1 axis %" PRId64
                             " has %s (attributes lhs_contracting/rhs_contracting)",
                             k, at->lhs_contracting.v[k], iu_fmt_dim(da), at->rhs_contracting.v[k], iu_fmt_dim(db));
  }
  uint32_t rank = at->lhs_batch.n + (a->rank - at->lhs_batch.n - at->lhs_contracting.n) +
                  (b->rank - at->rhs_batch.n - at->rhs_contracting.n);
  if (rank > RLX_MAX_RANK)
    return rlx_shape_error("the result would have rank %u; at most %d is supported", rank, RLX_MAX_RANK);
  *out = iu_shape((rlx_dtype)a->dtype, rank);
  uint32_t o = 0;
  for (uint32_t k = 0; k < at->lhs_batch.n; k++) out->dims[o++] = a->dims[at->lhs_batch.v[k]];
  for (uint32_t i = 0; i < a->rank; i++)
    if (!(used_a & (1u << i))) out->dims[o++] = a->dims[i];
  for (uint32_t i = 0; i < b->rank; i++)
    if (!(used_b & (1u << i))) out->dims[o++] = b->dims[i];
  return RLX_OK;
}

/* Right-hand side b of a solve against an [n, n] matrix: [n] or [n, k] after `lead` batch axes. */
static rlx_status need_rhs(const rlx_infer_ctx *c, uint32_t lead, rlx_dim n, const char *expect) {
  const rlx_shape *b = c->in[1];
  if (b->rank != lead + 1 && b->rank != lead + 2)
    return rlx_shape_error("operand 1 (b) has shape %s; expected %s", rlx_fmt_shape(b), expect);
  if (!rlx_dim_equal(b->dims[lead], n))
    return rlx_shape_error("operand 1 (b) has shape %s; its axis %u must equal the matrix size %s", rlx_fmt_shape(b),
                           lead, iu_fmt_dim(n));
  return RLX_OK;
}

rlx_status rlx_infer_DenseSolve(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_square(c, 0, "A"));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(need_rhs(c, 0, c->in[0]->dims[0], "[N] or [N, K]"));
  *out = *c->in[1];
  return RLX_OK;
}

rlx_status rlx_infer_BatchedDenseSolve(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *A = c->in[0];
  if (A->rank != 3 || !rlx_dim_equal(A->dims[1], A->dims[2]))
    return rlx_shape_error("operand 0 (A) has shape %s; expected a batch of square matrices [B, N, N]",
                           rlx_fmt_shape(A));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(need_rhs(c, 1, A->dims[1], "[B, N] or [B, N, K]"));
  if (!rlx_dim_equal(c->in[1]->dims[0], A->dims[0]))
    return rlx_shape_error("operand 1 (b) has shape %s; its batch size must equal operand 0's %s",
                           rlx_fmt_shape(c->in[1]), iu_fmt_dim(A->dims[0]));
  *out = *c->in[1];
  return RLX_OK;
}

rlx_status rlx_infer_Cholesky(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_square(c, 0, "A"));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_TriangularSolve(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_square(c, 0, "A"));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  RLX_TRY(need_rhs(c, 0, c->in[0]->dims[0], "[n] or [n, r]"));
  *out = *c->in[1];
  return RLX_OK;
}

static rlx_status determinant(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_square(c, 0, "A"));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  *out = rlx_shape_scalar((rlx_dtype)c->in[0]->dtype);
  return RLX_OK;
}
rlx_status rlx_infer_Det(const rlx_infer_ctx *c, rlx_shape *out) { return determinant(c, out); }
rlx_status rlx_infer_LogDet(const rlx_infer_ctx *c, rlx_shape *out) { return determinant(c, out); }

static rlx_status sort_axis(const rlx_infer_ctx *c, int64_t axis) {
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", axis, 0, &ax));
  return iu_need_real(c, 0);
}

rlx_status rlx_infer_Sort(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sort_axis(c, c->a->Sort.axis));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_ArgSort(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(sort_axis(c, c->a->ArgSort.axis));
  *out = *c->in[0];
  out->dtype = (uint8_t)iu_index_out_dtype(c);
  return RLX_OK;
}

/* k = min(m, n) of a thin factorisation. With symbolic dims min() is only known when both are the
 * same symbol; otherwise it is taken from the declared shape at position `decl_axis`. */
static rlx_status thin_k(const rlx_infer_ctx *c, uint32_t out_rank, uint32_t decl_axis, rlx_dim *k) {
  rlx_dim m = c->in[0]->dims[0], n = c->in[0]->dims[1];
  if (rlx_dim_equal(m, n))
    *k = m;
  else if (m >= 0 && n >= 0)
    *k = m < n ? m : n;
  else if (c->declared && c->declared->rank == out_rank)
    *k = c->declared->dims[decl_axis];
  else
    return rlx_shape_error("operand 0 has shape %s; min(m, n) is unknown with symbolic dims: declare the output "
                           "shape",
                           rlx_fmt_shape(c->in[0]));
  return RLX_OK;
}

static rlx_status need_matrix(const rlx_infer_ctx *c) {
  if (c->in[0]->rank != 2)
    return rlx_shape_error("operand 0 has shape %s; expected a matrix [m, n]", rlx_fmt_shape(c->in[0]));
  return rlx_need_dtype_float(c, 0);
}

rlx_status rlx_infer_Svd(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_matrix(c));
  const rlx_shape *x = c->in[0];
  rlx_dim k = 0;
  *out = iu_shape((rlx_dtype)x->dtype, 2);
  switch (c->a->Svd.part) {
  case RLX_SVD_PART_U:
    RLX_TRY(thin_k(c, 2, 1, &k));
    out->dims[0] = x->dims[0];
    out->dims[1] = k;
    return RLX_OK;
  case RLX_SVD_PART_S:
    RLX_TRY(thin_k(c, 1, 0, &k));
    out->rank = 1;
    out->dims[0] = k;
    return RLX_OK;
  case RLX_SVD_PART_VT:
    RLX_TRY(thin_k(c, 2, 0, &k));
    out->dims[0] = k;
    out->dims[1] = x->dims[1];
    return RLX_OK;
  default: return rlx_shape_error("attribute part: %d is not a SvdPart (U, S or Vt)", (int)c->a->Svd.part);
  }
}

rlx_status rlx_infer_Qr(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_matrix(c));
  const rlx_shape *x = c->in[0];
  rlx_dim k = 0;
  *out = iu_shape((rlx_dtype)x->dtype, 2);
  switch (c->a->Qr.part) {
  case RLX_QR_PART_Q:
    RLX_TRY(thin_k(c, 2, 1, &k));
    out->dims[0] = x->dims[0];
    out->dims[1] = k;
    return RLX_OK;
  case RLX_QR_PART_R:
    RLX_TRY(thin_k(c, 2, 0, &k));
    out->dims[0] = k;
    out->dims[1] = x->dims[1];
    return RLX_OK;
  default: return rlx_shape_error("attribute part: %d is not a QrPart (Q or R)", (int)c->a->Qr.part);
  }
}
