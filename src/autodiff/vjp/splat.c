/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rule of GaussianSplatRender (spec ir-special §5): one GaussianSplatRenderBackward over the
 * seven scene operands and the image cotangent, whose packed result pos 3N | scale 3N | rot 4N |
 * opacity N | colour 3N | sh N*C*3 is split back into the operand shapes. The meta operand (camera
 * and settings) gets no gradient. The rule asks for the exact gradient: loss_grad_clip = 0 (the
 * spec's default of 1.0 would clamp the cotangent), sh_band 0, max_anisotropy 10. */
#include "autodiff/ad_internal.h"

RLX_VJP_DECL(GaussianSplatRender) {
  (void)y;
  const rlx_attrs_GaussianSplatRender *r = &n->attrs.GaussianSplatRender;
  rlx_attrs_GaussianSplatRenderBackward a = {.width = r->width,
                                             .height = r->height,
                                             .tile_size = r->tile_size,
                                             .radius_scale = r->radius_scale,
                                             .alpha_cutoff = r->alpha_cutoff,
                                             .max_splat_steps = r->max_splat_steps,
                                             .transmittance_threshold = r->transmittance_threshold,
                                             .max_list_entries = r->max_list_entries,
                                             .loss_grad_clip = 0.0f,
                                             .sh_band = 0,
                                             .max_anisotropy = 10.0f};
  rlx_id in[8], packed;
  for (int i = 0; i < 7; i++) in[i] = x[i];
  in[7] = dy;
  RLX_TRY(ad_emit(c, RLX_OP_GaussianSplatRenderBackward, in, 8, &a, NULL, &packed));
  int64_t start = 0;
  for (uint32_t i = 0; i < 6; i++) {
    rlx_shape s = ad_shape(c, x[i]);
    int64_t len = 1;
    for (uint32_t k = 0; k < s.rank; k++) {
      if (s.dims[k] < 0) return ad_unsupported(c, "operand %u has a symbolic shape", i);
      len *= s.dims[k];
    }
    if (c->want[i]) {
      rlx_id part;
      RLX_TRY(ad_narrow(c, packed, 0, start, len, &part));
      RLX_TRY(ad_reshape(c, part, &s, &dx[i]));
    } else {
      dx[i] = RLX_NO_ID;
    }
    start += len;
  }
  dx[6] = RLX_NO_ID;
  return RLX_OK;
}
