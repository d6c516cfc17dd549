/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: 3D Gaussian splatting (spec ir-special §5; semantics in docs/splatting.md).
 * The operands are the six scene buffers (and d_loss_rgba for the backward); the build hook adds
 * the meta operand as a constant (splat_meta: the camera of tests/reference/ref_splat.py META)
 * and builds the op (Rasterize: Prepare -> Rasterize). Positions lie in [-1, 1]^3 in front of the
 * camera, log-scales in [-2.6, -1.6], opacity logits in [-1, 2.5], colours in [0, 1], SH ~ N(0, 0.2).
 * See cases.h for the row format. */
#include "cases.h"

static const float splat_meta[23] = {0.3f, 0.2f,  -4.0f, 0, 0, 0, 0, 1, 0, 50.0f, 0.1f, 100.0f,
                                     0.1f, 0.15f, 0.2f,  0, 0, 0, 0, 0, 0, 0,     0};

static rlx_status splat_meta_const(rlx_graph *g, rlx_id *out) {
  return rlx_constant(g, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){23}), splat_meta, sizeof splat_meta, out);
}

/* The attributes of the cases (the hook sees only the graph and operands). */
static const rlx_attrs_GaussianSplatRender splat_small = {.width = 24,
                                                          .height = 16,
                                                          .tile_size = 8,
                                                          .radius_scale = 1.6f,
                                                          .alpha_cutoff = 1.0f / 255.0f,
                                                          .max_splat_steps = 32,
                                                          .transmittance_threshold = 0.01f,
                                                          .max_list_entries = 576};
static const rlx_attrs_GaussianSplatRender splat_cut = {.width = 20,
                                                        .height = 12,
                                                        .tile_size = 4,
                                                        .radius_scale = 1.6f,
                                                        .alpha_cutoff = 1.0f / 255.0f,
                                                        .max_splat_steps = 2,
                                                        .transmittance_threshold = 0.01f,
                                                        .max_list_entries = 24};
static const rlx_attrs_GaussianSplatRenderBackward splat_bw = {.width = 16,
                                                               .height = 12,
                                                               .tile_size = 8,
                                                               .radius_scale = 1.6f,
                                                               .alpha_cutoff = 1.0f / 255.0f,
                                                               .max_splat_steps = 32,
                                                               .transmittance_threshold = 0.01f,
                                                               .max_list_entries = 576,
                                                               .loss_grad_clip = 0,
                                                               .sh_band = 0,
                                                               .max_anisotropy = 10};
static const rlx_attrs_GaussianSplatRenderBackward splat_bw_clip = {.width = 12,
                                                                    .height = 8,
                                                                    .tile_size = 4,
                                                                    .radius_scale = 1.6f,
                                                                    .alpha_cutoff = 1.0f / 255.0f,
                                                                    .max_splat_steps = 32,
                                                                    .transmittance_threshold = 0.01f,
                                                                    .max_list_entries = 576,
                                                                    .loss_grad_clip = 0.5f,
                                                                    .sh_band = 0,
                                                                    .max_anisotropy = 10};
static const rlx_attrs_GaussianSplatPrepare splat_prep = {.width = 24,
                                                          .height = 16,
                                                          .tile_size = 8,
                                                          .radius_scale = 1.6f,
                                                          .alpha_cutoff = 1.0f / 255.0f,
                                                          .max_splat_steps = 32,
                                                          .transmittance_threshold = 0.01f,
                                                          .max_list_entries = 64};
static const rlx_attrs_GaussianSplatRasterize splat_rast = {.width = 24,
                                                            .height = 16,
                                                            .tile_size = 8,
                                                            .alpha_cutoff = 1.0f / 255.0f,
                                                            .max_splat_steps = 32,
                                                            .transmittance_threshold = 0.01f,
                                                            .max_list_entries = 64};

static rlx_status splat_render_with(rlx_graph *g, const rlx_id *in, const rlx_attrs_GaussianSplatRender *a,
                                    rlx_id *out) {
  rlx_id ops[7];
  for (int i = 0; i < 6; i++) ops[i] = in[i];
  RLX_TRY(splat_meta_const(g, &ops[6]));
  return rlx_build_GaussianSplatRender(g, ops, 7, a, NULL, out);
}

static rlx_status build_splat_small(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return splat_render_with(g, in, &splat_small, out);
}

static rlx_status build_splat_cut(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return splat_render_with(g, in, &splat_cut, out);
}

static rlx_status splat_bw_with(rlx_graph *g, const rlx_id *in, const rlx_attrs_GaussianSplatRenderBackward *a,
                                rlx_id *out) {
  rlx_id ops[8];
  for (int i = 0; i < 6; i++) ops[i] = in[i];
  RLX_TRY(splat_meta_const(g, &ops[6]));
  ops[7] = in[6];
  return rlx_build_GaussianSplatRenderBackward(g, ops, 8, a, NULL, out);
}

static rlx_status build_splat_bw(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return splat_bw_with(g, in, &splat_bw, out);
}

static rlx_status build_splat_bw_clip(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  return splat_bw_with(g, in, &splat_bw_clip, out);
}

static rlx_status build_splat_prepare(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  rlx_id ops[7];
  for (int i = 0; i < 6; i++) ops[i] = in[i];
  RLX_TRY(splat_meta_const(g, &ops[6]));
  return rlx_build_GaussianSplatPrepare(g, ops, 7, &splat_prep, NULL, out);
}

static rlx_status build_splat_rasterize(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  rlx_id prep, ops[2];
  RLX_TRY(build_splat_prepare(g, in, n, &prep));
  ops[0] = prep;
  RLX_TRY(splat_meta_const(g, &ops[1]));
  return rlx_build_GaussianSplatRasterize(g, ops, 2, &splat_rast, NULL, out);
}

/* The six scene operands of N gaussians with C SH coefficients per channel. */
#define SCENE(N, C)                                                                                  \
  INF(F32, CF_UNIFORM, -1, 1, 3 * (N)), INF(F32, CF_UNIFORM, -2.6, -1.6, 3 * (N)), IN(F32, 4 * (N)), \
      INF(F32, CF_UNIFORM, -1, 2.5, N), INF(F32, CF_UNIFORM, 0, 1, 3 * (N)), INF(F32, CF_NORMAL, 0.2, 0, (N) * (C)*3)

static const conf_case conf_cases_splat[] = {
    {"splat_render",
     RLX_OP_GaussianSplatRender,
     &splat_small,
     6,
     {SCENE(12, 1)},
     .build = build_splat_small,
     .body = "splat_meta"},
    {"splat_render_sh1",
     RLX_OP_GaussianSplatRender,
     &splat_small,
     6,
     {SCENE(10, 4)},
     .build = build_splat_small,
     .body = "splat_meta"},
    {"splat_render_one",
     RLX_OP_GaussianSplatRender,
     &splat_small,
     6,
     {SCENE(1, 1)},
     .build = build_splat_small,
     .body = "splat_meta"},
    /* 2 steps per pixel, 24 list entries in all (most tile entries are dropped) */
    {"splat_render_cut",
     RLX_OP_GaussianSplatRender,
     &splat_cut,
     6,
     {SCENE(12, 1)},
     .build = build_splat_cut,
     .body = "splat_meta"},
    {"splat_render_bw",
     RLX_OP_GaussianSplatRenderBackward,
     &splat_bw,
     7,
     {SCENE(8, 4), IN(F32, 16 * 12 * 4)},
     .build = build_splat_bw,
     .body = "splat_meta"},
    {"splat_render_bw_clip",
     RLX_OP_GaussianSplatRenderBackward,
     &splat_bw_clip,
     7,
     {SCENE(6, 1), IN(F32, 12 * 8 * 4)},
     .build = build_splat_bw_clip,
     .body = "splat_meta"},
    {"splat_prepare",
     RLX_OP_GaussianSplatPrepare,
     &splat_prep,
     6,
     {SCENE(12, 1)},
     .build = build_splat_prepare,
     .body = "splat_meta"},
    {"splat_prepare_rasterize",
     RLX_OP_GaussianSplatRasterize,
     &splat_rast,
     6,
     {SCENE(12, 1)},
     .build = build_splat_rasterize,
     .body = "prepare_rasterize_rs1.6"},
};

#undef SCENE
