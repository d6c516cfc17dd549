/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: the scatter / gather family (spec ir-core §10.11). */
#include "infer_util.h"

rlx_status rlx_infer_ScatterAdd(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *upd = c->in[0], *idx = c->in[1];
  if (upd->rank == 0) return rlx_shape_error("operand 0 (updates) is a scalar; ScatterAdd needs rank >= 1");
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->ScatterAdd.axis, 0, &ax));
  RLX_TRY(iu_need_index(c, 1, "indices"));
  if (idx->rank != 1 || !rlx_dim_equal(idx->dims[0], upd->dims[ax]))
    return rlx_shape_error("operand 1 (indices) has shape %s; expected [%s], one index per slice of operand 0 "
                           "(updates) %s along axis %u",
                           rlx_fmt_shape(idx), iu_fmt_dim(upd->dims[ax]), rlx_fmt_shape(upd), ax);
  /* The extent of the scattered axis is not derivable from the operands. */
  const rlx_shape *d = c->declared;
  if (!d)
    return rlx_shape_error("ScatterAdd needs a declared output shape: the output extent along axis %u is not "
                           "implied by the operands",
                           ax);
  bool ok = d->rank == upd->rank && d->dtype == upd->dtype;
  for (uint32_t k = 0; ok && k < upd->rank; k++)
    if (k != ax && !rlx_dim_equal(d->dims[k], upd->dims[k])) ok = false;
  if (!ok)
    return rlx_shape_error("declared shape %s must equal operand 0 (updates) %s except along axis %u", rlx_fmt_shape(d),
                           rlx_fmt_shape(upd), ax);
  *out = *d;
  return RLX_OK;
}

rlx_status rlx_infer_ScatterNd(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *data = c->in[0], *idx = c->in[1], *upd = c->in[2];
  int32_t red = c->a->ScatterNd.reduction;
  if (red < 0 || red >= RLX_SCATTER_REDUCTION_COUNT)
    return rlx_shape_error("attribute reduction: %d is not a ScatterNdReduction", (int)red);
  RLX_TRY(iu_need_index(c, 1, "indices"));
  RLX_TRY(iu_same_dtype(c, 0, 2));
  if (idx->rank == 0) return rlx_shape_error("operand 1 (indices) is a scalar; its last axis holds index tuples");
  rlx_dim k = idx->dims[idx->rank - 1];
  if (k < 1 || k > (int64_t)data->rank)
    return rlx_shape_error("operand 1 (indices) has shape %s; its last dim (index length) must be static and in "
                           "[1, %u] (the rank of operand 0 (data) %s)",
                           rlx_fmt_shape(idx), data->rank, rlx_fmt_shape(data));
  /* updates = indices[:-1] ++ data[k:] */
  uint32_t want_rank = idx->rank - 1u + data->rank - (uint32_t)k;
  bool ok = upd->rank == want_rank;
  for (uint32_t i = 0; ok && i + 1 < idx->rank; i++) ok = rlx_dim_equal(upd->dims[i], idx->dims[i]);
  for (uint32_t i = (uint32_t)k; ok && i < data->rank; i++)
    ok = rlx_dim_equal(upd->dims[idx->rank - 1 + i - (uint32_t)k], data->dims[i]);
  if (!ok)
    return rlx_shape_error("operand 2 (updates) has shape %s; it must be indices.shape[:-1] ++ data.shape[%" PRId64
                           ":] (indices %s, data %s)",
                           rlx_fmt_shape(upd), k, rlx_fmt_shape(idx), rlx_fmt_shape(data));
  *out = *data;
  return RLX_OK;
}

/* ScatterElements / GatherElements: `idx` has data's rank and fits inside data off the axis. */
static rlx_status need_elementwise_indices(const rlx_infer_ctx *c, uint32_t i, uint32_t ax) {
  const rlx_shape *data = c->in[0], *idx = c->in[i];
  if (idx->rank != data->rank)
    return rlx_shape_error("operand %u (indices) has shape %s; it needs operand 0 (data)'s rank %u (data is %s)", i,
                           rlx_fmt_shape(idx), data->rank, rlx_fmt_shape(data));
  for (uint32_t k = 0; k < data->rank; k++) {
    rlx_dim a = idx->dims[k], b = data->dims[k];
    if (k != ax && a >= 0 && b >= 0 && a > b)
      return rlx_shape_error("operand %u (indices) has shape %s; off the axis it cannot exceed operand 0 (data) %s "
                             "(axis %u: %" PRId64 " > %" PRId64 ")",
                             i, rlx_fmt_shape(idx), rlx_fmt_shape(data), k, a, b);
  }
  return RLX_OK;
}

rlx_status rlx_infer_ScatterElements(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *data = c->in[0];
  int32_t red = c->a->ScatterElements.reduction;
  if (red < 0 || red >= RLX_SCATTER_REDUCTION_COUNT)
    return rlx_shape_error("attribute reduction: %d is not a ScatterNdReduction", (int)red);
  if (data->rank == 0) return rlx_shape_error("operand 0 (data) is a scalar; ScatterElements needs rank >= 1");
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->ScatterElements.axis, 0, &ax));
  RLX_TRY(iu_need_index(c, 1, "indices"));
  RLX_TRY(iu_same_dtype(c, 0, 2));
  RLX_TRY(need_elementwise_indices(c, 1, ax));
  const rlx_shape *idx = c->in[1], *upd = c->in[2];
  bool same = upd->rank == idx->rank;
  for (uint32_t k = 0; same && k < idx->rank; k++) same = rlx_dim_equal(upd->dims[k], idx->dims[k]);
  if (!same)
    return rlx_shape_error("operand 2 (updates) has shape %s; it must have the dims of operand 1 (indices) %s",
                           rlx_fmt_shape(upd), rlx_fmt_shape(idx));
  *out = *data;
  return RLX_OK;
}

rlx_status rlx_infer_GatherNd(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *data = c->in[0], *idx = c->in[1];
  int64_t b = c->a->GatherNd.batch_dims;
  RLX_TRY(iu_need_index(c, 1, "indices"));
  if (data->rank == 0) return rlx_shape_error("operand 0 (data) is a scalar; GatherNd needs rank >= 1");
  if (idx->rank == 0) return rlx_shape_error("operand 1 (indices) is a scalar; its last axis holds index tuples");
  uint32_t min_rank = data->rank < idx->rank ? data->rank : idx->rank;
  if (b < 0 || b >= (int64_t)min_rank)
    return rlx_shape_error("attribute batch_dims is %" PRId64 "; it must be in [0, %u) (below both operand ranks)", b,
                           min_rank);
  for (uint32_t i = 0; i < (uint32_t)b; i++)
    if (!rlx_dim_equal(data->dims[i], idx->dims[i]))
      return rlx_shape_error("operand 1 (indices) has shape %s; its batch axis %u must equal operand 0 (data)'s %s",
                             rlx_fmt_shape(idx), i, iu_fmt_dim(data->dims[i]));
  rlx_dim k = idx->dims[idx->rank - 1];
  if (k < 1 || k > (int64_t)data->rank - b)
    return rlx_shape_error("operand 1 (indices) has shape %s; its last dim (index length) must be static and in "
                           "[1, %" PRId64 "] (data rank %u minus batch_dims)",
                           rlx_fmt_shape(idx), (int64_t)data->rank - b, data->rank);
  /* out = indices[:-1] ++ data[b + k:] */
  uint32_t rank = idx->rank - 1u + data->rank - (uint32_t)(b + k);
  if (rank > RLX_MAX_RANK)
    return rlx_shape_error("the result would have rank %u (data %s, indices %s); at most %d is supported", rank,
                           rlx_fmt_shape(data), rlx_fmt_shape(idx), RLX_MAX_RANK);
  *out = iu_shape((rlx_dtype)data->dtype, rank);
  uint32_t o = 0;
  for (uint32_t i = 0; i + 1 < idx->rank; i++) out->dims[o++] = idx->dims[i];
  for (uint32_t i = (uint32_t)(b + k); i < data->rank; i++) out->dims[o++] = data->dims[i];
  return RLX_OK;
}

rlx_status rlx_infer_GatherElements(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *data = c->in[0];
  if (data->rank == 0) return rlx_shape_error("operand 0 (data) is a scalar; GatherElements needs rank >= 1");
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->GatherElements.axis, 0, &ax));
  RLX_TRY(iu_need_index(c, 1, "indices"));
  RLX_TRY(need_elementwise_indices(c, 1, ax));
  *out = *c->in[1];
  out->dtype = data->dtype;
  return RLX_OK;
}
