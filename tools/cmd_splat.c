/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx splat-render: renders a small 3D Gaussian splatting scene with the GaussianSplatRender op
 * on the CPU and writes the image as a PNG (8-bit RGB, sRGB-encoded from the op's linear RGB).
 * The scene is a text file (format in the usage text and docs/cli.md) or the built-in --demo
 * scene. The PNG encoder below is our own: an IHDR / IDAT / IEND stream with unfiltered rows,
 * deflated and checksummed with zlib (compress2, crc32). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli.h"
#include "rlx/rlx.h"

const char cli_splat_usage[] =
    "usage: rlx splat-render (SCENE | --demo) -o OUT.png [--width W] [--height H] [--tile T]\n"
    "\n"
    "Renders a 3D Gaussian splatting scene with the GaussianSplatRender op on the CPU backend and\n"
    "writes OUT.png (8-bit RGB; the op's linear RGB is sRGB-encoded, its alpha dropped: the\n"
    "background is already composited). SCENE is a text file, one record per line (`#` starts a\n"
    "comment):\n"
    "  camera PX PY PZ TX TY TZ UX UY UZ FOV [NEAR FAR]   position, target, up, vertical fov in\n"
    "                                                     degrees (near 0.1, far 100 by default)\n"
    "  background R G B                                   linear RGB (default 0 0 0)\n"
    "  image W H [TILE]                                   size in pixels (default 64 64 16)\n"
    "  gaussian X Y Z SX SY SZ QX QY QZ QW OPACITY R G B  centre, axis lengths (> 0), rotation\n"
    "                                                     quaternion, opacity in (0, 1), linear RGB\n"
    "A camera line and at least one gaussian are required. --demo renders a built-in scene of 256\n"
    "gaussians (a coloured helix around a grey sphere of splats), 256 x 192 pixels.\n"
    "\n"
    "options:\n"
    "  -o OUT.png    where the image goes (required)\n"
    "  --demo        render the built-in scene instead of SCENE\n"
    "  --width W, --height H, --tile T   override the image size / tile size\n"
    "\n"
    "The exit code is 1 when the scene cannot be read or rendered, 2 for bad options.\n";

/* ---- the scene ---- */

typedef struct splat_scene_file {
  float meta[23];
  int64_t width, height, tile;
  size_t n, cap;
  float *pos, *scale, *rot, *opac, *col; /* in the op's parametrisation: log-scales, logit opacity */
  bool have_camera;
} splat_scene_file;

static bool scene_add(splat_scene_file *s, const double *g) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    float *p[5] = {realloc(s->pos, cap * 3 * sizeof(float)), NULL, NULL, NULL, NULL};
    if (!p[0]) return false;
    s->pos = p[0];
    if (!(p[1] = realloc(s->scale, cap * 3 * sizeof(float)))) return false;
    s->scale = p[1];
    if (!(p[2] = realloc(s->rot, cap * 4 * sizeof(float)))) return false;
    s->rot = p[2];
    if (!(p[3] = realloc(s->opac, cap * sizeof(float)))) return false;
    s->opac = p[3];
    if (!(p[4] = realloc(s->col, cap * 3 * sizeof(float)))) return false;
    s->col = p[4];
    s->cap = cap;
  }
  size_t i = s->n++;
  for (int k = 0; k < 3; k++) {
    s->pos[3 * i + k] = (float)g[k];
    s->scale[3 * i + k] = (float)log(g[3 + k]);
    s->col[3 * i + k] = (float)g[11 + k];
  }
  for (int k = 0; k < 4; k++) s->rot[4 * i + k] = (float)g[6 + k];
  s->opac[i] = (float)log(g[10] / (1.0 - g[10]));
  return true;
}

static void scene_free(splat_scene_file *s) {
  free(s->pos);
  free(s->scale);
  free(s->rot);
  free(s->opac);
  free(s->col);
}

static void scene_defaults(splat_scene_file *s) {
  memset(s, 0, sizeof *s);
  s->width = s->height = 64;
  s->tile = 16;
  s->meta[10] = 0.1f;
  s->meta[11] = 100.0f;
}

/* Reads up to `max` numbers after the keyword; returns how many. */
static int read_numbers(const char *p, double *v, int max) {
  int k = 0;
  char *end;
  while (k < max) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p || *p == '#') break;
    v[k] = strtod(p, &end);
    if (end == p) return -1;
    p = end;
    k++;
  }
  while (isspace((unsigned char)*p)) p++;
  return (*p && *p != '#') ? -1 : k;
}

static int scene_read(const cli_command *self, const char *path, splat_scene_file *s) {
  FILE *f = fopen(path, "r");
  if (!f) return cli_fail(self, "%s: %s", path, strerror(errno));
  char line[1024];
  int lineno = 0, rc = CLI_OK;
  while (rc == CLI_OK && fgets(line, sizeof line, f)) {
    lineno++;
    char *p = line, kw[16];
    while (isspace((unsigned char)*p)) p++;
    if (!*p || *p == '#') continue;
    int len = 0;
    while (p[len] && !isspace((unsigned char)p[len]) && len < 15) len++;
    memcpy(kw, p, (size_t)len);
    kw[len] = 0;
    double v[16];
    int k = read_numbers(p + len, v, 16);
    if (strcmp(kw, "camera") == 0 && (k == 10 || k == 12)) {
      for (int j = 0; j < 10; j++) s->meta[j] = (float)v[j];
      if (k == 12) s->meta[10] = (float)v[10], s->meta[11] = (float)v[11];
      s->have_camera = true;
    } else if (strcmp(kw, "background") == 0 && k == 3) {
      for (int j = 0; j < 3; j++) s->meta[12 + j] = (float)v[j];
    } else if (strcmp(kw, "image") == 0 && (k == 2 || k == 3) && v[0] >= 1 && v[1] >= 1 && v[0] <= 8192 &&
               v[1] <= 8192 && (k == 2 || v[2] >= 1)) {
      s->width = (int64_t)v[0], s->height = (int64_t)v[1];
      if (k == 3) s->tile = (int64_t)v[2];
    } else if (strcmp(kw, "gaussian") == 0 && k == 14) {
      if (!(v[3] > 0 && v[4] > 0 && v[5] > 0) || !(v[10] > 0 && v[10] < 1))
        rc = cli_fail(self, "%s:%d: a gaussian needs positive axis lengths and an opacity in (0, 1)", path, lineno);
      else if (!scene_add(s, v))
        rc = cli_fail(self, "out of memory");
    } else {
      rc = cli_fail(self,
                    "%s:%d: expected `camera` (10 or 12 numbers), `background` (3), `image` (2 or 3) or "
                    "`gaussian` (14), got `%s` with %d numbers",
                    path, lineno, kw, k);
    }
  }
  fclose(f);
  if (rc == CLI_OK && !s->have_camera) rc = cli_fail(self, "%s: no camera line", path);
  if (rc == CLI_OK && s->n == 0) rc = cli_fail(self, "%s: no gaussian", path);
  return rc;
}

/* A helix of coloured splats around a sphere of grey ones. */
static bool scene_demo(splat_scene_file *s) {
  static const float cam[12] = {0.0f, 1.2f, -5.0f, 0, 0, 0, 0, 1, 0, 45.0f, 0.1f, 100.0f};
  memcpy(s->meta, cam, sizeof cam);
  s->meta[12] = 0.02f, s->meta[13] = 0.03f, s->meta[14] = 0.06f;
  s->have_camera = true;
  s->width = 256, s->height = 192, s->tile = 16;
  for (int i = 0; i < 160; i++) { /* the helix: each splat's long axis along the curve */
    double t = i / 159.0, a = 4.0 * 3.14159265358979 * t, ang = -a - 1.5707963;
    double g[14] = {1.3 * cos(a),
                    2.4 * t - 1.2,
                    1.3 * sin(a),
                    0.09,
                    0.035,
                    0.035,
                    0,
                    sin(ang / 2),
                    0,
                    cos(ang / 2),
                    0.9,
                    0.5 + 0.5 * cos(a),
                    0.5 + 0.5 * cos(a - 2.1),
                    0.5 + 0.5 * cos(a + 2.1)};
    if (!scene_add(s, g)) return false;
  }
  for (int i = 0; i < 96; i++) { /* a fibonacci sphere of flat splats, shaded by height */
    double y = 1 - 2 * (i + 0.5) / 96.0, r = sqrt(1 - y * y), ph = i * 2.39996323, sh = 0.45 + 0.4 * (y + 1) / 2;
    double g[14] = {
        0.6 * r * cos(ph), 0.6 * y, 0.6 * r * sin(ph), 0.12, 0.12, 0.03, r * cos(ph), y, r * sin(ph), 1, 0.8, sh, sh,
        sh * 1.05};
    if (!scene_add(s, g)) return false;
  }
  return true;
}

/* ---- PNG ---- */

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Appends chunk (length, type, data, CRC of type + data) at *at. */
static void png_chunk(uint8_t *buf, size_t *at, const char *type, const uint8_t *data, uint32_t len) {
  put_be32(buf + *at, len);
  memcpy(buf + *at + 4, type, 4);
  if (len) memcpy(buf + *at + 8, data, len);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, buf + *at + 4, 4 + len);
  put_be32(buf + *at + 8 + len, (uint32_t)crc);
  *at += 12 + (size_t)len;
}

/* Linear [0, 1] -> 8-bit sRGB. */
static uint8_t srgb8(double v) {
  if (!(v > 0)) return 0;
  if (v >= 1) return 255;
  double e = v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
  return (uint8_t)lround(e * 255.0);
}

/* Encodes the RGBA float image (rows top to bottom) as an 8-bit RGB PNG into *out (malloc'ed). */
static bool png_encode(const float *rgba, uint32_t w, uint32_t h, uint8_t **out, size_t *out_len) {
  size_t row = 1 + 3 * (size_t)w, raw_len = row * h;
  uint8_t *raw = malloc(raw_len);
  if (!raw) return false;
  for (uint32_t y = 0; y < h; y++) {
    raw[y * row] = 0; /* filter: none */
    for (uint32_t x = 0; x < w; x++)
      for (int k = 0; k < 3; k++)
        raw[y * row + 1 + 3 * x + (uint32_t)k] = srgb8(rgba[((size_t)y * w + x) * 4 + (size_t)k]);
  }
  uLongf zlen = compressBound((uLong)raw_len);
  uint8_t *z = malloc(zlen), *buf = NULL;
  bool ok = z && compress2(z, &zlen, raw, (uLong)raw_len, 9) == Z_OK && zlen <= 0x7fffffffu;
  if (ok) ok = (buf = malloc(8 + 25 + 12 + zlen + 12)) != NULL;
  if (ok) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering (each row says "none") */
    ihdr[12] = 0; /* no interlace */
    size_t at = 0;
    memcpy(buf, sig, 8);
    at = 8;
    png_chunk(buf, &at, "IHDR", ihdr, 13);
    png_chunk(buf, &at, "IDAT", z, (uint32_t)zlen);
    png_chunk(buf, &at, "IEND", NULL, 0);
    *out = buf;
    *out_len = at;
  }
  free(raw);
  free(z);
  return ok;
}

/* ---- the command ---- */

static rlx_status render(const splat_scene_file *s, rlx_executable **exe, const rlx_tensor **img) {
  rlx_graph *g = NULL;
  rlx_id in[7], y;
  size_t n = s->n;
  static const char *const names[7] = {"positions", "scales", "rotations", "opacities", "colors", "sh", "meta"};
  const rlx_dim lens[7] = {
      (rlx_dim)(3 * n), (rlx_dim)(3 * n), (rlx_dim)(4 * n), (rlx_dim)n, (rlx_dim)(3 * n), (rlx_dim)(3 * n), 23};
  float *sh = calloc(3 * n, sizeof *sh); /* colours come from the colour operand; SH band 0 is zero */
  rlx_status st = sh ? rlx_graph_create(NULL, "splat_render", &g) : rlx_errorf(RLX_ERR_OOM, "out of memory");
  for (int i = 0; st == RLX_OK && i < 7; i++) st = rlx_input(g, names[i], rlx_shape_make(RLX_F32, 1, &lens[i]), &in[i]);
  rlx_attrs_GaussianSplatRender a = {.width = s->width,
                                     .height = s->height,
                                     .tile_size = s->tile,
                                     .radius_scale = 1.6f,
                                     .alpha_cutoff = 1.0f / 255.0f,
                                     .max_splat_steps = 64,
                                     .transmittance_threshold = 0.01f,
                                     .max_list_entries = (int64_t)n * 64 > 4096 ? (int64_t)n * 64 : 4096};
  if (st == RLX_OK) st = rlx_build_GaussianSplatRender(g, in, 7, &a, "image", &y);
  if (st == RLX_OK) st = rlx_graph_set_outputs(g, &y, 1);
  if (st == RLX_OK) st = rlx_compile(g, "cpu", NULL, exe);
  const void *data[7] = {s->pos, s->scale, s->rot, s->opac, s->col, sh, s->meta};
  rlx_named_tensor t[7];
  for (int i = 0; i < 7; i++)
    t[i] = (rlx_named_tensor){names[i], {(void *)data[i], rlx_shape_make(RLX_F32, 1, &lens[i])}};
  uint32_t n_out = 0;
  if (st == RLX_OK) st = rlx_executable_run(*exe, t, 7, img, &n_out);
  rlx_graph_free(g);
  free(sh);
  return st;
}

int cli_cmd_splat_render(const cli_command *self, int argc, char **argv) {
  const char *scene_path = NULL, *out_path = NULL, *v;
  bool demo = false;
  int64_t w = 0, h = 0, tile = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) return cli_help(self);
    if (strcmp(a, "-o") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &out_path)) return CLI_USAGE;
    } else if (strcmp(a, "--demo") == 0) {
      demo = true;
    } else if (strcmp(a, "--width") == 0 || strcmp(a, "--height") == 0 || strcmp(a, "--tile") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v)) return CLI_USAGE;
      char *end;
      long long x = strtoll(v, &end, 10);
      if (*end || x < 1 || x > 8192) return cli_usage_error(self, "%s needs an integer in 1..8192, got '%s'", a, v);
      *(a[2] == 'w' ? &w : a[2] == 'h' ? &h : &tile) = x;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(self, "unknown option '%s'", a);
    } else if (!scene_path) {
      scene_path = a;
    } else {
      return cli_usage_error(self, "more than one scene file");
    }
  }
  if (!out_path) return cli_usage_error(self, "-o OUT.png is required");
  if (demo == (scene_path != NULL)) return cli_usage_error(self, "give either SCENE or --demo");
  splat_scene_file s;
  scene_defaults(&s);
  int rc = demo ? (scene_demo(&s) ? CLI_OK : cli_fail(self, "out of memory")) : scene_read(self, scene_path, &s);
  if (rc == CLI_OK) {
    if (w) s.width = w;
    if (h) s.height = h;
    if (tile) s.tile = tile;
    rlx_executable *exe = NULL;
    const rlx_tensor *img = NULL;
    if (render(&s, &exe, &img) != RLX_OK) {
      rc = cli_fail(self, "rendering failed: %s", rlx_last_error());
    } else {
      uint8_t *png = NULL;
      size_t len = 0;
      if (!png_encode(img[0].data, (uint32_t)s.width, (uint32_t)s.height, &png, &len))
        rc = cli_fail(self, "out of memory");
      else
        rc = cli_write_output(self, out_path, png, len);
      if (rc == CLI_OK)
        fprintf(stderr, "rlx splat-render: %zu gaussians, %lld x %lld pixels -> %s\n", s.n, (long long)s.width,
                (long long)s.height, out_path);
      free(png);
    }
    rlx_executable_free(exe);
  }
  scene_free(&s);
  return rc;
}
