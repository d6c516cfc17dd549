/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: 3D Gaussian splatting (spec ir-special §5). Scene operands are flat f32 buffers,
 * checked by element count (any rank):
 *   0 positions 3N | 1 scales 3N | 2 rotations 4N | 3 opacities N | 4 colors 3N |
 *   5 SH coefficients N*C*3 (C >= 1) | 6 meta 23 floats. */
#include "infer_special.h"

#define SPLAT_META_LEN 23

typedef struct splat_attrs {
  int64_t width, height, tile_size, max_splat_steps, max_list_entries;
  float alpha_cutoff, transmittance_threshold;
  bool has_radius;
  float radius_scale;
} splat_attrs;

static rlx_status check_splat_attrs(const splat_attrs *s) {
  if (s->width < 1) return rlx_shape_error("attribute width: %lld must be >= 1", (long long)s->width);
  if (s->height < 1) return rlx_shape_error("attribute height: %lld must be >= 1", (long long)s->height);
  if (s->tile_size < 1) return rlx_shape_error("attribute tile_size: %lld must be >= 1", (long long)s->tile_size);
  if (s->max_splat_steps < 1)
    return rlx_shape_error("attribute max_splat_steps: %lld must be >= 1", (long long)s->max_splat_steps);
  if (s->max_list_entries < 1)
    return rlx_shape_error("attribute max_list_entries: %lld must be >= 1", (long long)s->max_list_entries);
  if (!(s->alpha_cutoff >= 0.0f && s->alpha_cutoff <= 1.0f))
    return rlx_shape_error("attribute alpha_cutoff: %g must be in [0, 1]", (double)s->alpha_cutoff);
  if (!(s->transmittance_threshold >= 0.0f && s->transmittance_threshold <= 1.0f))
    return rlx_shape_error("attribute transmittance_threshold: %g must be in [0, 1]",
                           (double)s->transmittance_threshold);
  if (s->has_radius && (!sp_finite(s->radius_scale) || !(s->radius_scale > 0)))
    return rlx_shape_error("attribute radius_scale: %g must be finite and positive", (double)s->radius_scale);
  return RLX_OK;
}

#define SPLAT_FROM(A, RADIUS)                                                                                \
  {                                                                                                          \
    (A)->width, (A)->height, (A)->tile_size, (A)->max_splat_steps, (A)->max_list_entries, (A)->alpha_cutoff, \
        (A)->transmittance_threshold, RADIUS                                                                 \
  }

/* The image: H*W*4 RGBA floats. */
static rlx_status image_len(const splat_attrs *s, int64_t *n) {
  if (!ck_mul(s->width, s->height, n) || !ck_mul(*n, 4, n)) return sp_overflow("width * height * 4");
  return RLX_OK;
}

static rlx_status need_f32(const rlx_infer_ctx *c, uint32_t n, const char *const *roles) {
  for (uint32_t i = 0; i < n; i++) RLX_TRY(sp_dtype(c, i, roles[i], RLX_F32));
  return RLX_OK;
}

static const char *const scene_roles[] = {"positions", "scales", "rotations", "opacities",
                                          "colors",    "sh",     "meta",      "d_loss_rgba"};

/* Checks the 7 scene operands; *N = gaussians, *sh = SH length (both -1 when symbolic). */
static rlx_status check_scene(const rlx_infer_ctx *c, int64_t *N, int64_t *sh) {
  RLX_TRY(need_f32(c, 7, scene_roles));
  int64_t pos = 0;
  RLX_TRY(sp_numel(c->in[0], &pos));
  *N = -1;
  *sh = -1;
  if (pos >= 0) {
    if (pos < 3 || pos % 3)
      return rlx_shape_error("operand 0 (positions) has shape %s; expected 3N floats with N >= 1",
                             rlx_fmt_shape(c->in[0]));
    *N = pos / 3;
  }
  static const int64_t per[5] = {3, 3, 4, 1, 3};
  static const char *const what[5] = {"3N positions", "3N log-scales", "4N quaternion components", "N opacity logits",
                                      "3N colors"};
  for (uint32_t i = 1; *N >= 0 && i < 5; i++) {
    rlx_dim want;
    RLX_TRY(sp_mul(per[i], *N, &want));
    RLX_TRY(sp_count_eq(c, i, scene_roles[i], want, what[i]));
  }
  RLX_TRY(sp_numel(c->in[5], sh));
  if (*sh >= 0 && *N >= 0 && (*sh < 3 * *N || *sh % (3 * *N)))
    return rlx_shape_error("operand 5 (sh) has shape %s; expected N*C*3 floats with C >= 1 coefficients (N = %lld)",
                           rlx_fmt_shape(c->in[5]), (long long)*N);
  if (*N < 0) *sh = -1;
  return sp_count_eq(c, 6, "meta", SPLAT_META_LEN, "camera and render settings");
}

static rlx_shape flat_f32(rlx_dim n) { return sp_make(RLX_F32, 1, &n); }

rlx_status rlx_infer_GaussianSplatRender(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GaussianSplatRender *a = &c->a->GaussianSplatRender;
  splat_attrs s = SPLAT_FROM(a, true);
  s.radius_scale = a->radius_scale;
  RLX_TRY(sp_arity(c, 7, "positions, scales, rotations, opacities, colors, sh, meta"));
  RLX_TRY(check_splat_attrs(&s));
  int64_t N, sh, img;
  RLX_TRY(check_scene(c, &N, &sh));
  RLX_TRY(image_len(&s, &img));
  *out = flat_f32(img);
  return RLX_OK;
}

/* Packed gradients: pos 3N | scale 3N | rot 4N | opacity N | color 3N | sh N*C*3. */
rlx_status rlx_infer_GaussianSplatRenderBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GaussianSplatRenderBackward *a = &c->a->GaussianSplatRenderBackward;
  splat_attrs s = SPLAT_FROM(a, true);
  s.radius_scale = a->radius_scale;
  RLX_TRY(sp_arity(c, 8, "the 7 render operands, d_loss_rgba"));
  RLX_TRY(check_splat_attrs(&s));
  if (!sp_finite(a->loss_grad_clip) || a->loss_grad_clip < 0)
    return rlx_shape_error("attribute loss_grad_clip: %g must be finite and >= 0", (double)a->loss_grad_clip);
  if (a->sh_band < 0) return rlx_shape_error("attribute sh_band: %lld must be >= 0", (long long)a->sh_band);
  if (!sp_finite(a->max_anisotropy) || a->max_anisotropy < 1)
    return rlx_shape_error("attribute max_anisotropy: %g must be finite and >= 1", (double)a->max_anisotropy);
  int64_t N, sh, img;
  RLX_TRY(check_scene(c, &N, &sh));
  RLX_TRY(image_len(&s, &img));
  RLX_TRY(sp_dtype(c, 7, "d_loss_rgba", RLX_F32));
  RLX_TRY(sp_count_eq(c, 7, "d_loss_rgba", img, "height * width * 4, the rendered image's gradient"));
  rlx_dim total = SP_UNKNOWN;
  if (N >= 0 && sh >= 0) {
    RLX_TRY(sp_mul(N, 14, &total));
    RLX_TRY(sp_add(total, sh, &total));
  }
  *out = flat_f32(total);
  return sp_resolve(c, out);
}

/* Prepare buffer minus its 15N per-gaussian part: max_list + 2*tiles + 3*W*H + 11. */
static rlx_status prepare_fixed(const splat_attrs *s, int64_t *fixed) {
  int64_t tiles, wh, t;
  if (!ck_mul(ck_ceil_div(s->width, s->tile_size), ck_ceil_div(s->height, s->tile_size), &tiles) ||
      !ck_mul(tiles, 2, &tiles) || !ck_mul(s->width, s->height, &wh) || !ck_mul(wh, 3, &wh) ||
      !ck_add(s->max_list_entries, tiles, &t) || !ck_add(t, wh, &t) || !ck_add(t, 11, &t))
    return sp_overflow("prepare buffer length");
  *fixed = t;
  return RLX_OK;
}

/* Length = 4N + N + 3N + 3N + 4N + max_list + 2*tiles + 3*W*H + 11, tiles = ceil(W/t)*ceil(H/t). */
rlx_status rlx_infer_GaussianSplatPrepare(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GaussianSplatPrepare *a = &c->a->GaussianSplatPrepare;
  splat_attrs s = SPLAT_FROM(a, true);
  s.radius_scale = a->radius_scale;
  RLX_TRY(sp_arity(c, 7, "positions, scales, rotations, opacities, colors, sh, meta"));
  RLX_TRY(check_splat_attrs(&s));
  int64_t N = 0, sh = 0, fixed = 0;
  RLX_TRY(check_scene(c, &N, &sh));
  RLX_TRY(prepare_fixed(&s, &fixed));
  rlx_dim total = SP_UNKNOWN;
  if (N >= 0) {
    RLX_TRY(sp_mul(N, 15, &total));
    RLX_TRY(sp_add(total, fixed, &total));
  }
  *out = flat_f32(total);
  return sp_resolve(c, out);
}

rlx_status rlx_infer_GaussianSplatRasterize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GaussianSplatRasterize *a = &c->a->GaussianSplatRasterize;
  splat_attrs s = SPLAT_FROM(a, false);
  static const char *const roles[] = {"prepared", "meta"};
  RLX_TRY(sp_arity(c, 2, "prepared, meta"));
  RLX_TRY(check_splat_attrs(&s));
  RLX_TRY(need_f32(c, 2, roles));
  int64_t len = 0, fixed = 0, img = 0;
  RLX_TRY(sp_numel(c->in[0], &len));
  RLX_TRY(prepare_fixed(&s, &fixed));
  if (len >= 0 && (len - fixed < 15 || (len - fixed) % 15))
    return rlx_shape_error("operand 0 (prepared) has %lld elements; a prepare buffer for these attributes holds "
                           "15N + %lld with N >= 1",
                           (long long)len, (long long)fixed);
  RLX_TRY(sp_count_eq(c, 1, "meta", SPLAT_META_LEN, "camera and render settings"));
  RLX_TRY(image_len(&s, &img));
  *out = flat_f32(img);
  return RLX_OK;
}
