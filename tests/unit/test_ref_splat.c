/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* GaussianSplatRasterize on prepare buffers that were not made by GaussianSplatPrepare: a
 * mismatched header, list entries that are not gaussian indices (NaN, huge, fractional, out of
 * range) and tile ranges outside the list are runtime errors naming the problem, never a crash
 * (the values are checked before any float-to-integer conversion). A buffer made by Prepare
 * rasterizes to Render's image (up to the f32 rounding of the buffer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#define W 8
#define H 8
#define T 4
#define LIST 16
#define NG 2
#define TILES 4
#define PREP_LEN (15 * NG + LIST + 2 * TILES + 3 * W * H + 11)

static const rlx_attrs_GaussianSplatRasterize ra = {.width = W,
                                                    .height = H,
                                                    .tile_size = T,
                                                    .alpha_cutoff = 1.0f / 255.0f,
                                                    .max_splat_steps = 32,
                                                    .transmittance_threshold = 0.01f,
                                                    .max_list_entries = LIST};
static const float meta[23] = {0, 0, -4, 0, 0, 0, 0, 1, 0, 50, 0.1f, 100, 0.1f, 0.2f, 0.3f};

/* Runs Rasterize on `prep`; returns the status and copies the image to img when it ran. */
static rlx_status rasterize(const float *prep, float *img) {
  rlx_graph *g = NULL;
  rlx_id in[2], y;
  rlx_dim pl = PREP_LEN, ml = 23;
  CHECK_OK(rlx_graph_create(NULL, "r", &g));
  CHECK_OK(rlx_input(g, "prep", rlx_shape_make(RLX_F32, 1, &pl), &in[0]));
  CHECK_OK(rlx_input(g, "meta", rlx_shape_make(RLX_F32, 1, &ml), &in[1]));
  CHECK_OK(rlx_build_GaussianSplatRasterize(g, in, 2, &ra, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  rlx_named_tensor t[2] = {{"prep", {(void *)prep, rlx_shape_make(RLX_F32, 1, &pl)}},
                           {"meta", {(void *)meta, rlx_shape_make(RLX_F32, 1, &ml)}}};
  const rlx_tensor *o;
  uint32_t no;
  rlx_status s = e ? rlx_executable_run(e, t, 2, &o, &no) : RLX_ERR_INTERNAL;
  if (s == RLX_OK && img) memcpy(img, o[0].data, W * H * 4 * sizeof(float));
  rlx_executable_free(e);
  rlx_graph_free(g);
  return s;
}

/* Prepare (prep != NULL) or Render (img != NULL) of a 2-gaussian scene. */
static void scene_op(float *prep, float *img) {
  static const float pos[6] = {0, 0, 0, 0.4f, 0.2f, 0.5f}, scl[6] = {-1, -1.2f, -1, -1.5f, -1, -1};
  static const float rot[8] = {0, 0, 0, 1, 0, 0, 0.3f, 1}, opa[2] = {1, 2}, col[6] = {1, 0, 0, 0, 1, 0}, sh[6] = {0};
  const float *data[7] = {pos, scl, rot, opa, col, sh, meta};
  const rlx_dim len[7] = {6, 6, 8, 2, 6, 6, 23};
  static const char *const names[7] = {"p", "s", "r", "o", "c", "h", "m"};
  rlx_graph *g = NULL;
  rlx_id in[7], y;
  CHECK_OK(rlx_graph_create(NULL, "s", &g));
  for (int i = 0; i < 7; i++) CHECK_OK(rlx_input(g, names[i], rlx_shape_make(RLX_F32, 1, &len[i]), &in[i]));
  if (prep) {
    rlx_attrs_GaussianSplatPrepare a = {.width = W,
                                        .height = H,
                                        .tile_size = T,
                                        .radius_scale = 1.6f,
                                        .alpha_cutoff = 1.0f / 255.0f,
                                        .max_splat_steps = 32,
                                        .transmittance_threshold = 0.01f,
                                        .max_list_entries = LIST};
    CHECK_OK(rlx_build_GaussianSplatPrepare(g, in, 7, &a, NULL, &y));
  } else {
    rlx_attrs_GaussianSplatRender a = {.width = W,
                                       .height = H,
                                       .tile_size = T,
                                       .radius_scale = 1.6f,
                                       .alpha_cutoff = 1.0f / 255.0f,
                                       .max_splat_steps = 32,
                                       .transmittance_threshold = 0.01f,
                                       .max_list_entries = LIST};
    CHECK_OK(rlx_build_GaussianSplatRender(g, in, 7, &a, NULL, &y));
  }
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  rlx_named_tensor t[7];
  for (int i = 0; i < 7; i++)
    t[i] = (rlx_named_tensor){names[i], {(void *)data[i], rlx_shape_make(RLX_F32, 1, &len[i])}};
  const rlx_tensor *o;
  uint32_t no;
  CHECK_OK(rlx_executable_run(e, t, 7, &o, &no));
  memcpy(prep ? prep : img, o[0].data, (prep ? PREP_LEN : W * H * 4) * sizeof(float));
  rlx_executable_free(e);
  rlx_graph_free(g);
}

int main(void) {
  float prep[PREP_LEN], bad[PREP_LEN], img[W * H * 4], ref[W * H * 4];
  scene_op(prep, NULL);
  scene_op(NULL, ref);
  CHECK_OK(rasterize(prep, img));
  float worst = 0; /* the buffer holds f32 roundings of Render's double intermediates */
  for (int i = 0; i < W * H * 4; i++) worst = fmaxf(worst, fabsf(img[i] - ref[i]));
  CHECK_MSG(worst < 1e-5f, "Prepare + Rasterize vs Render: max difference %g", (double)worst);
  float lit = 0;
  for (int i = 0; i < W * H; i++) lit = fmaxf(lit, ref[4 * i + 3]);
  CHECK_MSG(lit > 0.3f, "the scene covers some pixel (max alpha %g)", (double)lit);

  const size_t list = 15 * NG, ranges = list + LIST, hdr = PREP_LEN - 11;
  const float junk[4] = {NAN, 1e30f, 0.5f, 2.0f}; /* not an index of NG = 2 gaussians */
  for (int k = 0; k < 4; k++) {
    memcpy(bad, prep, sizeof bad);
    bad[list] = junk[k];
    CHECK(rasterize(bad, NULL) == RLX_ERR_RUNTIME);
    CHECK(strstr(rlx_last_error(), "list entry 0 of the prepare buffer") != NULL);
  }
  memcpy(bad, prep, sizeof bad);
  bad[ranges + 1] = -1.0f / 0.0f; /* a count */
  CHECK(rasterize(bad, NULL) == RLX_ERR_RUNTIME);
  CHECK(strstr(rlx_last_error(), "tile range value 1") != NULL);
  memcpy(bad, prep, sizeof bad);
  bad[ranges] = LIST; /* start at the end with a nonzero count */
  bad[ranges + 1] = 3;
  CHECK(rasterize(bad, NULL) == RLX_ERR_RUNTIME);
  CHECK(strstr(rlx_last_error(), "outside [0, 16)") != NULL);
  memcpy(bad, prep, sizeof bad);
  bad[hdr + 1] = 9; /* width in the header */
  CHECK(rasterize(bad, NULL) == RLX_ERR_RUNTIME);
  CHECK(strstr(rlx_last_error(), "the prepare buffer was made for") != NULL);
  return rlx_test_finish("ref_splat");
}
