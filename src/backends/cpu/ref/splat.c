/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: 3D Gaussian splatting (spec ir-special §5). The renderer, as implemented
 * here and documented in docs/splatting.md (tests/reference/ref_splat.py is an independent float64
 * NumPy twin):
 *
 * Scene (f32, flat): positions 3N, log-scales 3N, quaternions (x, y, z, w) 4N, opacity logits N,
 * colours 3N (linear RGB), SH coefficients N*C*3 (C >= 1), meta 23 floats. From meta the kernels
 * read the camera position (0..2), target (3..5), up (6..8), vertical field of view in degrees
 * (9), near (10), far (11) and the background RGB (12..14); entries 15..22 repeat render settings
 * that the node's attributes own (width, height, tile size, ...) and are ignored.
 *
 * Camera: forward f = normalize(target - pos), right r = normalize(f x up), up' = r x f; a point p
 * has camera coordinates (x, y, z) = (r.(p - pos), up'.(p - pos), f.(p - pos)). Focal length
 * fx = fy = (H / 2) / tan(fov / 2); the projected mean is (W/2 + fx x / z, H/2 - fy y / z) in
 * pixel units (pixel (i, j) covers [i, i+1) x [j, j+1), row 0 at the top; its centre is sampled).
 * A gaussian is visible when near <= z <= far.
 *
 * Projection (EWA): Sigma = R S S^T R^T (R from the normalised quaternion, S = diag(exp(log-scale))),
 * Sigma_cam = V Sigma V^T (V = rows r, up', f), cov2d = J Sigma_cam J^T + 0.3 I with the Jacobian
 * J of the projection; conic = cov2d^-1 (a gaussian with det(cov2d) <= 0 is dropped); radius =
 * radius_scale * 3 * sqrt(largest eigenvalue of cov2d); opacity = sigmoid(logit); colour =
 * colours + SH0 sh[0] (+ band 1 when C >= 4: SH1 (-y sh[1] + z sh[2] - x sh[3]) with (x, y, z) the
 * unit direction from the camera to the gaussian); higher SH coefficients are not read.
 *
 * Binning: tiles of tile_size^2 pixels, row-major. A gaussian covers the tiles its square
 * [mean - radius, mean + radius] touches. Each tile's list holds its gaussians by increasing depth
 * (ties by index); lists are concatenated in tile order and cut at max_list_entries entries (the
 * rest is dropped).
 *
 * Compositing, per pixel, front to back over its tile's list: d = centre - mean, power =
 * -0.5 (a dx^2 + 2 b dx dy + c dy^2); skip when power > 0; alpha = min(0.99, opacity e^power);
 * skip when alpha < alpha_cutoff; stop before a gaussian that would bring the transmittance T
 * below transmittance_threshold, or after max_splat_steps composited gaussians. RGB = sum c_i
 * alpha_i T_i + T_end background, A = 1 - T_end (linear values; no display gamma).
 *
 * GaussianSplatRenderBackward re-runs the forward and returns the exact gradient of
 * sum(d_loss_rgba * image) (all four channels) with respect to positions, scales, rotations,
 * opacities, colours and SH coefficients, packed pos 3N | scale 3N | rot 4N | opacity N |
 * colour 3N | sh N*C*3. Compositing is differentiated in reverse; the per-gaussian projection
 * (3D parameters -> mean, conic, opacity, colour) with forward-mode dual numbers, one parameter at a
 * time. Discrete choices (visibility, binning, skips, early stops, the alpha clamp) are held fixed,
 * as in every splatting rasterizer. loss_grad_clip > 0 clamps each d_loss element to
 * [-clip, clip] first (0: no clamp); sh_band and max_anisotropy are accepted and not used.
 *
 * GaussianSplatPrepare writes the projection and binning as one f32 buffer, segment by segment:
 *   4N  per gaussian: mean x, mean y, depth, radius (all 0 when not visible)
 *   N   opacity;  3N conic a, b, c;  3N colour RGB
 *   4N  tile rectangle: x0, y0, x1, y1 (half-open, in tiles)
 *   max_list_entries  the concatenated tile lists (gaussian index, -1 in unused slots)
 *   2 * tiles  per tile: start, count in the list
 *   3 * W * H  per pixel: background RGB
 *   11  N, W, H, tile_size, tiles_x, tiles_y, entries used, entries dropped, visible gaussians,
 *       max_list_entries, max_splat_steps
 * and GaussianSplatRasterize composites from it (meta is not read again). Render = Prepare +
 * Rasterize in one kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util_b.h"

#define SH0 0.28209479177387814
#define SH1 0.4886025119029199

/* ---- dual numbers (value + one tangent) for the projection's derivatives ---- */

typedef struct dn {
  double v, d;
} dn;

static dn dc(double v) { return (dn){v, 0.0}; }
static dn dadd(dn a, dn b) { return (dn){a.v + b.v, a.d + b.d}; }
static dn dsub(dn a, dn b) { return (dn){a.v - b.v, a.d - b.d}; }
static dn dmul(dn a, dn b) { return (dn){a.v * b.v, a.d * b.v + a.v * b.d}; }
static dn dscale(dn a, double k) { return (dn){a.v * k, a.d * k}; }
static dn ddiv(dn a, dn b) { return (dn){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }
static dn dexp(dn a) {
  double e = exp(a.v);
  return (dn){e, e * a.d};
}
static dn dsqrt(dn a) {
  double s = sqrt(a.v);
  return (dn){s, s > 0 ? a.d / (2.0 * s) : 0.0};
}

/* ---- attributes shared by the four kinds ---- */

typedef struct splat_cfg {
  int64_t W, H, tile, max_steps, max_list;
  double radius_scale, alpha_cutoff, t_min, grad_clip;
} splat_cfg;

static splat_cfg cfg_of(const rlx_node *n) {
  splat_cfg c = {0};
#define SPLAT_CFG(A, RADIUS)                                                                                      \
  c.W = (A)->width, c.H = (A)->height, c.tile = (A)->tile_size, c.max_steps = (A)->max_splat_steps,               \
  c.max_list = (A)->max_list_entries, c.alpha_cutoff = (A)->alpha_cutoff, c.t_min = (A)->transmittance_threshold, \
  c.radius_scale = RADIUS
  switch (n->op) {
  case RLX_OP_GaussianSplatRender:
    SPLAT_CFG(&n->attrs.GaussianSplatRender, n->attrs.GaussianSplatRender.radius_scale);
    break;
  case RLX_OP_GaussianSplatPrepare:
    SPLAT_CFG(&n->attrs.GaussianSplatPrepare, n->attrs.GaussianSplatPrepare.radius_scale);
    break;
  case RLX_OP_GaussianSplatRasterize: SPLAT_CFG(&n->attrs.GaussianSplatRasterize, 1.0); break;
  default:
    SPLAT_CFG(&n->attrs.GaussianSplatRenderBackward, n->attrs.GaussianSplatRenderBackward.radius_scale);
    c.grad_clip = n->attrs.GaussianSplatRenderBackward.loss_grad_clip;
    break;
  }
#undef SPLAT_CFG
  return c;
}

/* ---- camera ---- */

typedef struct splat_cam {
  double pos[3], r[3], u[3], f[3];
  double fx, fy, cx, cy, near, far, bg[3];
} splat_cam;

static void cross3(const double *a, const double *b, double *o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

static bool normalize3(double *v) {
  double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  if (!(l > 0) || !isfinite(l)) return false;
  for (int k = 0; k < 3; k++) v[k] /= l;
  return true;
}

static rlx_status camera(const rlx_node *n, const float *meta, const splat_cfg *c, splat_cam *cam) {
  double tgt[3], up[3];
  for (int k = 0; k < 3; k++) {
    cam->pos[k] = meta[k];
    tgt[k] = meta[3 + k];
    up[k] = meta[6 + k];
    cam->bg[k] = meta[12 + k];
    cam->f[k] = tgt[k] - cam->pos[k];
  }
  double fov = meta[9] * 3.14159265358979323846 / 180.0;
  cam->near = meta[10];
  cam->far = meta[11];
  if (!normalize3(cam->f)) return rlx_kernel_error(n, "meta: the camera target equals its position");
  cross3(cam->f, up, cam->r);
  if (!normalize3(cam->r)) return rlx_kernel_error(n, "meta: the camera's up vector is parallel to its view direction");
  cross3(cam->r, cam->f, cam->u);
  if (!(fov > 0 && fov < 3.14159265358979323846))
    return rlx_kernel_error(n, "meta[9]: the field of view %g degrees must be in (0, 180)", (double)meta[9]);
  cam->fy = 0.5 * (double)c->H / tan(0.5 * fov);
  cam->fx = cam->fy;
  cam->cx = 0.5 * (double)c->W;
  cam->cy = 0.5 * (double)c->H;
  return RLX_OK;
}

/* ---- per-gaussian projection ---- */

/* The scene's operands (f32, flat). */
typedef struct splat_scene {
  const float *pos, *scale, *rot, *opac, *col, *sh;
  size_t N, C; /* gaussians, SH coefficients per colour channel */
} splat_scene;

#define SPLAT_OUT 9 /* mean x, mean y, conic a, b, c, opacity, colour r, g, b */

/* Parameters of gaussian i: pos 3 | scale 3 | rot 4 | opacity 1 | colour 3 | sh 3C. */
static size_t n_params(const splat_scene *s) { return 14 + 3 * s->C; }

static double param(const splat_scene *s, size_t i, size_t k) {
  if (k < 3) return s->pos[3 * i + k];
  if (k < 6) return s->scale[3 * i + k - 3];
  if (k < 10) return s->rot[4 * i + k - 6];
  if (k == 10) return s->opac[i];
  if (k < 14) return s->col[3 * i + k - 11];
  return s->sh[3 * s->C * i + k - 14];
}

/* Offset of parameter k of gaussian i in the packed gradient. */
static size_t grad_slot(const splat_scene *s, size_t i, size_t k) {
  size_t N = s->N;
  if (k < 3) return 3 * i + k;
  if (k < 6) return 3 * N + 3 * i + k - 3;
  if (k < 10) return 6 * N + 4 * i + k - 6;
  if (k == 10) return 10 * N + i;
  if (k < 14) return 11 * N + 3 * i + k - 11;
  return 14 * N + 3 * s->C * i + k - 14;
}

/* Projects gaussian i with the tangent seeded on parameter `seed` (SIZE_MAX: none). Returns false
 * when the gaussian is not visible. out: the SPLAT_OUT duals; depth and radius by value. */
static bool project(const splat_scene *s, const splat_cam *cam, const splat_cfg *cfg, size_t i, size_t seed,
                    dn out[SPLAT_OUT], double *depth, double *radius) {
  dn p[14];
  for (size_t k = 0; k < 14; k++) p[k] = dc(param(s, i, k));
  if (seed < 14) p[seed].d = 1.0;
  dn t[3], xc = dc(0), yc = dc(0), zc = dc(0);
  for (int k = 0; k < 3; k++) {
    t[k] = dsub(p[k], dc(cam->pos[k]));
    xc = dadd(xc, dscale(t[k], cam->r[k]));
    yc = dadd(yc, dscale(t[k], cam->u[k]));
    zc = dadd(zc, dscale(t[k], cam->f[k]));
  }
  *depth = zc.v;
  if (!(zc.v >= cam->near && zc.v <= cam->far && zc.v > 1e-9)) return false;
  out[0] = dadd(dc(cam->cx), dscale(ddiv(xc, zc), cam->fx));
  out[1] = dsub(dc(cam->cy), dscale(ddiv(yc, zc), cam->fy));

  /* rotation from the normalised quaternion (x, y, z, w) */
  dn qn = dsqrt(dadd(dadd(dmul(p[6], p[6]), dmul(p[7], p[7])), dadd(dmul(p[8], p[8]), dmul(p[9], p[9]))));
  if (!(qn.v > 0)) return false;
  dn x = ddiv(p[6], qn), y = ddiv(p[7], qn), z = ddiv(p[8], qn), w = ddiv(p[9], qn);
  dn R[3][3] = {
      {dsub(dc(1), dscale(dadd(dmul(y, y), dmul(z, z)), 2)), dscale(dsub(dmul(x, y), dmul(w, z)), 2),
       dscale(dadd(dmul(x, z), dmul(w, y)), 2)},
      {dscale(dadd(dmul(x, y), dmul(w, z)), 2), dsub(dc(1), dscale(dadd(dmul(x, x), dmul(z, z)), 2)),
       dscale(dsub(dmul(y, z), dmul(w, x)), 2)},
      {dscale(dsub(dmul(x, z), dmul(w, y)), 2), dscale(dadd(dmul(y, z), dmul(w, x)), 2),
       dsub(dc(1), dscale(dadd(dmul(x, x), dmul(y, y)), 2))},
  };
  /* M = V R S (camera-frame axes of the ellipsoid); Sigma_cam = M M^T */
  dn M[3][3];
  const double *V[3] = {cam->r, cam->u, cam->f};
  for (int a = 0; a < 3; a++)
    for (int k = 0; k < 3; k++) {
      dn acc = dc(0);
      for (int b = 0; b < 3; b++) acc = dadd(acc, dscale(R[b][k], V[a][b]));
      M[a][k] = dmul(acc, dexp(p[3 + k]));
    }
  /* T = J M with J = [[fx/z, 0, -fx x/z^2], [0, -fy/z, fy y/z^2]]; cov2d = T T^T + 0.3 I */
  dn z2 = dmul(zc, zc);
  dn J[2][3] = {{ddiv(dc(cam->fx), zc), dc(0), dscale(ddiv(xc, z2), -cam->fx)},
                {dc(0), ddiv(dc(-cam->fy), zc), dscale(ddiv(yc, z2), cam->fy)}};
  dn T[2][3];
  for (int a = 0; a < 2; a++)
    for (int k = 0; k < 3; k++) {
      dn acc = dc(0);
      for (int b = 0; b < 3; b++) acc = dadd(acc, dmul(J[a][b], M[b][k]));
      T[a][k] = acc;
    }
  dn ca = dc(0.3), cb = dc(0), cc = dc(0.3);
  for (int k = 0; k < 3; k++) {
    ca = dadd(ca, dmul(T[0][k], T[0][k]));
    cb = dadd(cb, dmul(T[0][k], T[1][k]));
    cc = dadd(cc, dmul(T[1][k], T[1][k]));
  }
  dn det = dsub(dmul(ca, cc), dmul(cb, cb));
  if (!(det.v > 0)) return false;
  out[2] = ddiv(cc, det);
  out[3] = ddiv(dscale(cb, -1), det);
  out[4] = ddiv(ca, det);
  double mid = 0.5 * (ca.v + cc.v), lmax = mid + sqrt(fmax(0.1, mid * mid - det.v));
  *radius = cfg->radius_scale * 3.0 * sqrt(lmax);
  /* opacity = sigmoid(logit) */
  dn e = dexp(dscale(p[10], -1));
  out[5] = ddiv(dc(1), dadd(dc(1), e));
  /* colour: base + SH band 0 (+ band 1 when C >= 4) */
  dn dir[3], dl = dsqrt(dadd(dadd(dmul(t[0], t[0]), dmul(t[1], t[1])), dmul(t[2], t[2])));
  for (int k = 0; k < 3; k++) dir[k] = ddiv(t[k], dl);
  for (int ch = 0; ch < 3; ch++) {
    size_t base = 3 * s->C * i;
    dn shk[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    for (size_t k = 0; k < 4 && k < s->C; k++) {
      size_t pk = 14 + 3 * k + (size_t)ch;
      shk[k] = dc(s->sh[base + 3 * k + (size_t)ch]);
      if (seed == pk) shk[k].d = 1.0;
    }
    dn v = dadd(p[11 + ch], dscale(shk[0], SH0));
    if (s->C >= 4) {
      dn b1 = dadd(dsub(dmul(dir[2], shk[2]), dmul(dir[1], shk[1])), dscale(dmul(dir[0], shk[3]), -1));
      v = dadd(v, dscale(b1, SH1));
    }
    out[6 + ch] = v;
  }
  return true;
}

/* ---- the prepared scene (projection + binning) ---- */

typedef struct splat_prep {
  size_t N, tiles_x, tiles_y, n_entries, n_dropped, n_visible;
  double *g;      /* per gaussian: mx, my, depth, radius, opacity, conic a b c, colour r g b (11) */
  int64_t *rect;  /* per gaussian: x0 y0 x1 y1 */
  int64_t *list;  /* max_list entries */
  int64_t *range; /* per tile: start, count */
  double bg[3];
} splat_prep;

#define G_STRIDE 11

static void prep_free(splat_prep *p) {
  free(p->g);
  free(p->rect);
  free(p->list);
  free(p->range);
}

/* floor(v) clamped to [lo, hi] (NaN -> lo), without an out-of-range float-to-int conversion. */
static int64_t floor_clamp(double v, int64_t lo, int64_t hi) {
  double f = floor(v);
  if (!(f > (double)lo)) return lo;
  if (f >= (double)hi) return hi;
  return (int64_t)f;
}

/* A float of a prepare buffer that must hold an integer in [lo, hi]. */
static bool as_index(float v, int64_t lo, int64_t hi, int64_t *out) {
  if (!(v >= (float)lo && v <= (float)hi) || v != floorf(v)) return false;
  *out = (int64_t)v;
  return true;
}

typedef struct depth_key {
  double depth;
  size_t index;
} depth_key;

static int cmp_depth(const void *a, const void *b) {
  const depth_key *x = a, *y = b;
  if (x->depth < y->depth) return -1;
  if (x->depth > y->depth) return 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static rlx_status prepare(const rlx_node *n, const splat_scene *s, const splat_cam *cam, const splat_cfg *c,
                          splat_prep *p) {
  memset(p, 0, sizeof *p);
  p->N = s->N;
  p->tiles_x = (size_t)((c->W + c->tile - 1) / c->tile);
  p->tiles_y = (size_t)((c->H + c->tile - 1) / c->tile);
  size_t tiles = p->tiles_x * p->tiles_y;
  for (int k = 0; k < 3; k++) p->bg[k] = cam->bg[k];
  depth_key *keys = NULL;
  rlx_status st = rb_calloc(n, s->N * G_STRIDE, sizeof *p->g, &p->g);
  if (st == RLX_OK) st = rb_calloc(n, s->N * 4, sizeof *p->rect, &p->rect);
  if (st == RLX_OK) st = rb_alloc(n, (size_t)c->max_list, sizeof *p->list, &p->list);
  if (st == RLX_OK) st = rb_calloc(n, tiles * 2, sizeof *p->range, &p->range);
  if (st == RLX_OK) st = rb_alloc(n, s->N, sizeof *keys, &keys);
  if (st != RLX_OK) {
    free(keys);
    prep_free(p);
    return st;
  }
  for (int64_t e = 0; e < c->max_list; e++) p->list[e] = -1;
  for (size_t i = 0; i < s->N; i++) {
    dn o[SPLAT_OUT];
    double depth, radius;
    double *g = p->g + i * G_STRIDE;
    if (!project(s, cam, c, i, SIZE_MAX, o, &depth, &radius)) continue;
    g[0] = o[0].v, g[1] = o[1].v, g[2] = depth, g[3] = radius, g[4] = o[5].v;
    g[5] = o[2].v, g[6] = o[3].v, g[7] = o[4].v, g[8] = o[6].v, g[9] = o[7].v, g[10] = o[8].v;
    int64_t *r = p->rect + 4 * i;
    double ts = (double)c->tile;
    r[0] = floor_clamp((g[0] - radius) / ts, 0, (int64_t)p->tiles_x);
    r[1] = floor_clamp((g[1] - radius) / ts, 0, (int64_t)p->tiles_y);
    r[2] = floor_clamp((g[0] + radius) / ts + 1.0, 0, (int64_t)p->tiles_x);
    r[3] = floor_clamp((g[1] + radius) / ts + 1.0, 0, (int64_t)p->tiles_y);
    if (!isfinite(g[0]) || !isfinite(g[1]) || !isfinite(radius)) r[0] = r[1] = r[2] = r[3] = 0;
    p->n_visible++;
  }
  for (size_t ty = 0; ty < p->tiles_y; ty++)
    for (size_t tx = 0; tx < p->tiles_x; tx++) {
      size_t k = 0, tile = ty * p->tiles_x + tx;
      for (size_t i = 0; i < s->N; i++) {
        const int64_t *r = p->rect + 4 * i;
        if ((int64_t)tx >= r[0] && (int64_t)tx < r[2] && (int64_t)ty >= r[1] && (int64_t)ty < r[3])
          keys[k++] = (depth_key){p->g[i * G_STRIDE + 2], i};
      }
      qsort(keys, k, sizeof *keys, cmp_depth);
      p->range[2 * tile] = (int64_t)p->n_entries;
      for (size_t j = 0; j < k; j++) {
        if ((int64_t)p->n_entries < c->max_list) {
          p->list[p->n_entries++] = (int64_t)keys[j].index;
          p->range[2 * tile + 1]++;
        } else {
          p->n_dropped++;
        }
      }
    }
  free(keys);
  return RLX_OK;
}

/* One composited contribution of a pixel. */
typedef struct splat_hit {
  size_t g;
  double alpha, T, G; /* alpha, transmittance before it, e^power */
  double dx, dy;
  bool clamped;
} splat_hit;

/* Composites pixel (x, y); writes rgba and up to cap hits (their count into *n_hits). */
static void composite(const splat_prep *p, const splat_cfg *c, int64_t x, int64_t y, double rgba[4], splat_hit *hits,
                      size_t *n_hits) {
  size_t tile = (size_t)(y / c->tile) * p->tiles_x + (size_t)(x / c->tile);
  int64_t start = p->range[2 * tile], count = p->range[2 * tile + 1];
  double px = (double)x + 0.5, py = (double)y + 0.5, T = 1.0, rgb[3] = {0, 0, 0};
  size_t steps = 0;
  for (int64_t e = start; e < start + count && (int64_t)steps < c->max_steps; e++) {
    size_t i = (size_t)p->list[e];
    const double *g = p->g + i * G_STRIDE;
    double dx = px - g[0], dy = py - g[1];
    double power = -0.5 * (g[5] * dx * dx + 2.0 * g[6] * dx * dy + g[7] * dy * dy);
    if (power > 0) continue;
    double G = exp(power), raw = g[4] * G, alpha = fmin(0.99, raw);
    if (alpha < c->alpha_cutoff) continue;
    if (T * (1.0 - alpha) < c->t_min) break;
    for (int k = 0; k < 3; k++) rgb[k] += g[8 + k] * alpha * T;
    if (hits) hits[steps] = (splat_hit){i, alpha, T, G, dx, dy, raw > 0.99};
    T *= 1.0 - alpha;
    steps++;
  }
  for (int k = 0; k < 3; k++) rgba[k] = rgb[k] + T * p->bg[k];
  rgba[3] = 1.0 - T;
  if (n_hits) *n_hits = steps;
}

static void rasterize(const splat_prep *p, const splat_cfg *c, float *img) {
  for (int64_t y = 0; y < c->H; y++)
    for (int64_t x = 0; x < c->W; x++) {
      double rgba[4];
      composite(p, c, x, y, rgba, NULL, NULL);
      for (int k = 0; k < 4; k++) img[(y * c->W + x) * 4 + k] = (float)rgba[k];
    }
}

/* ---- operand plumbing ---- */

static rlx_status scene_of(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t arity, rlx_tensor *out,
                           splat_scene *s, splat_cam *cam, splat_cfg *c) {
  RLX_TRY(ru_prologue(n, in, n_in, arity, arity, out));
  for (uint32_t i = 0; i < arity; i++) RLX_TRY(ru_need_dtype(n, in, i, RLX_F32));
  RLX_TRY(ru_need_dtype(n, out, 0, RLX_F32));
  *c = cfg_of(n);
  s->N = rlx_tensor_numel(&in[0]) / 3;
  s->C = s->N ? rlx_tensor_numel(&in[5]) / (3 * s->N) : 1;
  s->pos = in[0].data, s->scale = in[1].data, s->rot = in[2].data, s->opac = in[3].data, s->col = in[4].data;
  s->sh = in[5].data;
  return camera(n, in[6].data, c, cam);
}

RLX_CPU_KERNEL(GaussianSplatRender) {
  (void)ctx;
  splat_scene s;
  splat_cam cam;
  splat_cfg c;
  splat_prep p;
  RLX_TRY(scene_of(n, in, n_in, 7, out, &s, &cam, &c));
  RLX_TRY(prepare(n, &s, &cam, &c, &p));
  rasterize(&p, &c, out->data);
  prep_free(&p);
  return RLX_OK;
}

RLX_CPU_KERNEL(GaussianSplatPrepare) {
  (void)ctx;
  splat_scene s;
  splat_cam cam;
  splat_cfg c;
  splat_prep p;
  RLX_TRY(scene_of(n, in, n_in, 7, out, &s, &cam, &c));
  RLX_TRY(prepare(n, &s, &cam, &c, &p));
  float *o = out->data;
  size_t N = s.N, tiles = p.tiles_x * p.tiles_y, at = 0;
  for (size_t i = 0; i < N; i++)
    for (int k = 0; k < 4; k++) o[at + 4 * i + (size_t)k] = (float)p.g[i * G_STRIDE + (size_t)k];
  at += 4 * N;
  for (size_t i = 0; i < N; i++) o[at + i] = (float)p.g[i * G_STRIDE + 4];
  at += N;
  for (size_t i = 0; i < N; i++)
    for (int k = 0; k < 3; k++) o[at + 3 * i + (size_t)k] = (float)p.g[i * G_STRIDE + 5 + (size_t)k];
  at += 3 * N;
  for (size_t i = 0; i < N; i++)
    for (int k = 0; k < 3; k++) o[at + 3 * i + (size_t)k] = (float)p.g[i * G_STRIDE + 8 + (size_t)k];
  at += 3 * N;
  for (size_t i = 0; i < 4 * N; i++) o[at + i] = (float)p.rect[i];
  at += 4 * N;
  for (int64_t e = 0; e < c.max_list; e++) o[at + (size_t)e] = (float)p.list[e];
  at += (size_t)c.max_list;
  for (size_t t = 0; t < 2 * tiles; t++) o[at + t] = (float)p.range[t];
  at += 2 * tiles;
  for (size_t q = 0; q < (size_t)(c.W * c.H); q++)
    for (int k = 0; k < 3; k++) o[at + 3 * q + (size_t)k] = (float)p.bg[k];
  at += 3 * (size_t)(c.W * c.H);
  const double hdr[11] = {(double)N,           (double)c.W,        (double)c.H,         (double)c.tile,
                          (double)p.tiles_x,   (double)p.tiles_y,  (double)p.n_entries, (double)p.n_dropped,
                          (double)p.n_visible, (double)c.max_list, (double)c.max_steps};
  for (int k = 0; k < 11; k++) o[at + (size_t)k] = (float)hdr[k];
  prep_free(&p);
  return RLX_OK;
}

RLX_CPU_KERNEL(GaussianSplatRasterize) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_F32));
  splat_cfg c = cfg_of(n);
  const float *b = in[0].data;
  size_t len = rlx_tensor_numel(&in[0]);
  size_t tiles_x = (size_t)((c.W + c.tile - 1) / c.tile), tiles_y = (size_t)((c.H + c.tile - 1) / c.tile);
  size_t tiles = tiles_x * tiles_y, fixed = (size_t)c.max_list + 2 * tiles + 3 * (size_t)(c.W * c.H) + 11;
  size_t N = (len - fixed) / 15;
  const float *hdr = b + len - 11;
  if (hdr[0] != (float)N || hdr[1] != (float)c.W || hdr[2] != (float)c.H || hdr[3] != (float)c.tile ||
      hdr[9] != (float)c.max_list)
    return rlx_kernel_error(n,
                            "the prepare buffer was made for N = %g, %gx%g pixels, tile %g, max_list_entries %g; this "
                            "node has N = %zu, %lldx%lld, tile %lld, max_list_entries %lld",
                            (double)hdr[0], (double)hdr[1], (double)hdr[2], (double)hdr[3], (double)hdr[9], N,
                            (long long)c.W, (long long)c.H, (long long)c.tile, (long long)c.max_list);
  splat_prep p = {.N = N, .tiles_x = tiles_x, .tiles_y = tiles_y};
  rlx_status st = rb_calloc(n, N * G_STRIDE + 1, sizeof *p.g, &p.g);
  if (st == RLX_OK) st = rb_alloc(n, (size_t)c.max_list, sizeof *p.list, &p.list);
  if (st == RLX_OK) st = rb_alloc(n, 2 * tiles, sizeof *p.range, &p.range);
  if (st == RLX_OK) {
    const float *seg = b;
    for (size_t i = 0; i < N; i++)
      for (int k = 0; k < 4; k++) p.g[i * G_STRIDE + (size_t)k] = seg[4 * i + (size_t)k];
    seg += 4 * N;
    for (size_t i = 0; i < N; i++) p.g[i * G_STRIDE + 4] = seg[i];
    seg += N;
    for (size_t i = 0; i < N; i++)
      for (int k = 0; k < 3; k++) p.g[i * G_STRIDE + 5 + (size_t)k] = seg[3 * i + (size_t)k];
    seg += 3 * N;
    for (size_t i = 0; i < N; i++)
      for (int k = 0; k < 3; k++) p.g[i * G_STRIDE + 8 + (size_t)k] = seg[3 * i + (size_t)k];
    seg += 3 * N + 4 * N; /* the tile rectangles are not needed */
    /* an unused list slot is -1; a range must lie inside the list and name gaussians only */
    for (int64_t e = 0; st == RLX_OK && e < c.max_list; e++)
      if (!as_index(seg[e], -1, (int64_t)N - 1, &p.list[e]))
        st = rlx_kernel_error(n,
                              "list entry %lld of the prepare buffer is %g; expected a gaussian index in "
                              "[0, %zu) or -1",
                              (long long)e, (double)seg[e], N);
    seg += c.max_list;
    for (size_t t = 0; st == RLX_OK && t < 2 * tiles; t++)
      if (!as_index(seg[t], 0, c.max_list, &p.range[t]))
        st = rlx_kernel_error(n, "tile range value %zu of the prepare buffer is %g; expected an integer in [0, %lld]",
                              t, (double)seg[t], (long long)c.max_list);
    seg += 2 * tiles;
    for (int k = 0; k < 3; k++) p.bg[k] = seg[k];
    for (size_t t = 0; t < tiles && st == RLX_OK; t++) {
      int64_t s0 = p.range[2 * t], cnt = p.range[2 * t + 1];
      if (s0 + cnt > c.max_list)
        st = rlx_kernel_error(n, "tile %zu of the prepare buffer has the list range [%lld, %lld) outside [0, %lld)", t,
                              (long long)s0, (long long)(s0 + cnt), (long long)c.max_list);
      for (int64_t e = s0; st == RLX_OK && e < s0 + cnt; e++)
        if (p.list[e] < 0)
          st = rlx_kernel_error(n, "list entry %lld of the prepare buffer is an unused slot inside tile %zu's range",
                                (long long)e, t);
    }
  }
  if (st == RLX_OK) rasterize(&p, &c, out->data);
  prep_free(&p);
  return st;
}

/* ---- backward ---- */

RLX_CPU_KERNEL(GaussianSplatRenderBackward) {
  (void)ctx;
  splat_scene s;
  splat_cam cam;
  splat_cfg c;
  splat_prep p;
  RLX_TRY(scene_of(n, in, n_in, 8, out, &s, &cam, &c));
  RLX_TRY(prepare(n, &s, &cam, &c, &p));
  const float *dl = in[7].data;
  size_t N = s.N, cap = (size_t)(c.max_steps < c.max_list ? c.max_steps : c.max_list);
  double *g2 = NULL, *grad = NULL;
  splat_hit *hits = NULL;
  rlx_status st = rb_calloc(n, N * SPLAT_OUT + 1, sizeof *g2, &g2);
  if (st == RLX_OK) st = rb_calloc(n, rlx_tensor_numel(out) + 1, sizeof *grad, &grad);
  if (st == RLX_OK) st = rb_alloc(n, cap + 1, sizeof *hits, &hits);
  for (int64_t y = 0; st == RLX_OK && y < c.H; y++)
    for (int64_t x = 0; x < c.W; x++) {
      double rgba[4], up[4];
      size_t nh;
      composite(&p, &c, x, y, rgba, hits, &nh);
      for (int k = 0; k < 4; k++) {
        double v = dl[(y * c.W + x) * 4 + k];
        up[k] = c.grad_clip > 0 ? fmax(-c.grad_clip, fmin(c.grad_clip, v)) : v;
      }
      double T_end = 1.0 - rgba[3];
      /* suffix S = sum_{j > i} c_j alpha_j T_j + T_end bg, per channel, built from the back */
      double S[3] = {T_end * p.bg[0], T_end * p.bg[1], T_end * p.bg[2]};
      for (size_t h = nh; h-- > 0;) {
        const splat_hit *hit = &hits[h];
        const double *g = p.g + hit->g * G_STRIDE;
        double *gg = g2 + hit->g * SPLAT_OUT;
        double dalpha = 0.0, one_m = 1.0 - hit->alpha;
        for (int k = 0; k < 3; k++) {
          gg[6 + k] += up[k] * hit->alpha * hit->T;
          dalpha += up[k] * (g[8 + k] * hit->T - S[k] / one_m);
        }
        dalpha += up[3] * T_end / one_m;
        for (int k = 0; k < 3; k++) S[k] += g[8 + k] * hit->alpha * hit->T;
        if (hit->clamped) continue;
        /* alpha = o G, G = exp(power), power = -0.5 (a dx^2 + 2 b dx dy + c dy^2), dx = px - mx */
        double dpow = dalpha * hit->alpha, dx = hit->dx, dy = hit->dy;
        gg[5] += dalpha * hit->G;
        gg[0] += dpow * (g[5] * dx + g[6] * dy);
        gg[1] += dpow * (g[6] * dx + g[7] * dy);
        gg[2] += dpow * -0.5 * dx * dx;
        gg[3] += dpow * -dx * dy;
        gg[4] += dpow * -0.5 * dy * dy;
      }
    }
  /* chain through the projection, one parameter at a time (forward mode) */
  for (size_t i = 0; st == RLX_OK && i < N; i++) {
    const double *gg = g2 + i * SPLAT_OUT;
    bool any = false;
    for (int k = 0; k < SPLAT_OUT; k++) any |= gg[k] != 0.0;
    if (!any) continue;
    for (size_t k = 0; k < n_params(&s); k++) {
      dn o[SPLAT_OUT];
      double depth, radius;
      if (!project(&s, &cam, &c, i, k, o, &depth, &radius)) break;
      double acc = 0.0;
      for (int j = 0; j < SPLAT_OUT; j++) acc += gg[j] * o[j].d;
      grad[grad_slot(&s, i, k)] += acc;
    }
  }
  if (st == RLX_OK) rb_store_all(out, grad);
  free(g2);
  free(grad);
  free(hits);
  prep_free(&p);
  return st;
}
