/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: scatter / gather families, where the gradient is well defined. Indices never get a
 * gradient. Overwriting scatters (reduction None) send the output gradient at written positions
 * to the updates and zero it for the data; Add scatters pass it to both; Mul/Max/Min scatters
 * are reported as unsupported. */
#include "autodiff/ad_internal.h"

/* out = zeros(declared) with updates added at indices along axis: d updates = Gather(g). */
RLX_VJP_DECL(ScatterAdd) {
  (void)y;
  if (!c->want[0]) return RLX_OK;
  rlx_attrs_Gather a = {.axis = n->attrs.ScatterAdd.axis};
  rlx_id in[2] = {dy, x[1]};
  return rlx_build_Gather(c->dst, in, 2, &a, NULL, &dx[0]);
}

/* out[i] = data[.. idx[i] ..]: d data = scatter-add of g. */
RLX_VJP_DECL(GatherElements) {
  (void)y;
  if (!c->want[0]) return RLX_OK;
  rlx_id z;
  RLX_TRY(ad_zeros_like(c, x[0], &z));
  rlx_attrs_ScatterElements a;
  rlx_attrs_init(RLX_OP_ScatterElements, &a);
  a.axis = n->attrs.GatherElements.axis;
  a.reduction = RLX_SCATTER_REDUCTION_ADD;
  rlx_id in[3] = {z, x[1], dy};
  return rlx_build_ScatterElements(c->dst, in, 3, &a, NULL, &dx[0]);
}

RLX_VJP_DECL(GatherNd) {
  (void)y;
  if (!c->want[0]) return RLX_OK;
  if (n->attrs.GatherNd.batch_dims != 0)
    return ad_unsupported(c, "GatherNd with batch_dims %lld has no VJP (only batch_dims 0)",
                          (long long)n->attrs.GatherNd.batch_dims);
  rlx_id z;
  RLX_TRY(ad_zeros_like(c, x[0], &z));
  rlx_attrs_ScatterNd a = {.reduction = RLX_SCATTER_REDUCTION_ADD};
  rlx_id in[3] = {z, x[1], dy};
  return rlx_build_ScatterNd(c->dst, in, 3, &a, NULL, &dx[0]);
}

RLX_VJP_DECL(ScatterElements) {
  (void)y;
  int32_t red = n->attrs.ScatterElements.reduction;
  if (red != RLX_SCATTER_REDUCTION_NONE && red != RLX_SCATTER_REDUCTION_ADD)
    return ad_unsupported(c, "ScatterElements with reduction %s has no VJP (only None and Add)",
                          rlx_enum_scatter_reduction.names[red]);
  int64_t axis = n->attrs.ScatterElements.axis;
  if (c->want[0]) {
    if (red == RLX_SCATTER_REDUCTION_ADD) {
      dx[0] = dy;
    } else { /* overwritten positions get nothing */
      rlx_id z;
      RLX_TRY(ad_zeros_like(c, x[2], &z));
      rlx_attrs_ScatterElements a;
      rlx_attrs_init(RLX_OP_ScatterElements, &a);
      a.axis = axis;
      a.reduction = RLX_SCATTER_REDUCTION_NONE;
      rlx_id in[3] = {dy, x[1], z};
      RLX_TRY(rlx_build_ScatterElements(c->dst, in, 3, &a, NULL, &dx[0]));
    }
  }
  if (c->want[2]) {
    rlx_attrs_GatherElements a = {.axis = axis};
    rlx_id in[2] = {dy, x[1]};
    RLX_TRY(rlx_build_GatherElements(c->dst, in, 2, &a, NULL, &dx[2]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(ScatterNd) {
  (void)y;
  int32_t red = n->attrs.ScatterNd.reduction;
  if (red != RLX_SCATTER_REDUCTION_NONE && red != RLX_SCATTER_REDUCTION_ADD)
    return ad_unsupported(c, "ScatterNd with reduction %s has no VJP (only None and Add)",
                          rlx_enum_scatter_reduction.names[red]);
  if (c->want[0]) {
    if (red == RLX_SCATTER_REDUCTION_ADD) {
      dx[0] = dy;
    } else {
      rlx_id z;
      RLX_TRY(ad_zeros_like(c, x[2], &z));
      rlx_attrs_ScatterNd a = {.reduction = RLX_SCATTER_REDUCTION_NONE};
      rlx_id in[3] = {dy, x[1], z};
      RLX_TRY(rlx_build_ScatterNd(c->dst, in, 3, &a, NULL, &dx[0]));
    }
  }
  if (c->want[2]) {
    rlx_attrs_GatherNd a = {0};
    rlx_id in[2] = {dy, x[1]};
    RLX_TRY(rlx_build_GatherNd(c->dst, in, 2, &a, NULL, &dx[2]));
  }
  return RLX_OK;
}
