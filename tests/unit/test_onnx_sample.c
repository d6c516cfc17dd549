/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX sampling ops (src/io/onnx/ops_sample.c): GridSample, AffineGrid and RoiAlign. One-node
 * models are built with the protobuf-c builder of tests/common, imported, compiled and run on
 * the CPU, and compared with float64 scalar references written here from the ONNX
 * operator descriptions (per-point loops, no graph decomposition), plus a few hand-derived
 * values. Attribute and shape errors must name what is wrong. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

/* ======================================================================================
 * One-node models (tests/common/onnx_build.h)
 * ====================================================================================== */

/* A model with one `op` node writing the output "y" (float unless out_elem says otherwise; shape
 * left to the importer). Its inputs are declared first (graph inputs or initializers, in node
 * input order); the node is created with them at the first attribute or at import. */
typedef struct mb {
  ob_model *m;
  Onnx__NodeProto *n;
  const char *op;
  char ins[128];
  int32_t out_elem; /* of output "y"; OB_FLOAT unless a test changes it */
} mb;

static void mb_init(mb *b, const char *op, int64_t opset) {
  b->m = ob_model_new(opset);
  b->n = NULL;
  b->op = op;
  b->ins[0] = 0;
  b->out_elem = OB_FLOAT;
}
static void mb_add_name(mb *b, const char *name) {
  if (b->n || strlen(b->ins) + strlen(name) + 2 > sizeof b->ins) abort(); /* a broken test */
  if (b->ins[0]) strcat(b->ins, ",");
  strcat(b->ins, name);
}
static void mb_input(mb *b, const char *name, int elem, int rank, const int64_t *dims) {
  ob_input(b->m, name, elem, rank, dims);
  mb_add_name(b, name);
}
static void mb_const(mb *b, const char *name, int elem, int rank, const int64_t *dims, const void *raw, size_t nbytes) {
  ob_initializer(b->m, name, elem, rank, dims, raw, nbytes);
  mb_add_name(b, name);
}
static Onnx__NodeProto *mb_node(mb *b) {
  if (!b->n) b->n = ob_node(b->m, b->op, b->ins, "y");
  return b->n;
}
static void mb_attr_i(mb *b, const char *name, int64_t v) { ob_attr_int(b->m, mb_node(b), name, v); }
static void mb_attr_f(mb *b, const char *name, float v) { ob_attr_float(b->m, mb_node(b), name, v); }
static void mb_attr_s(mb *b, const char *name, const char *v) { ob_attr_string(b->m, mb_node(b), name, v); }

/* Adds the node (if no attribute did) and the output "y". */
static void mb_finish(mb *b) {
  mb_node(b);
  ob_output(b->m, "y", b->out_elem, -1, NULL);
}
/* Imports the model and frees the builder. */
static rlx_status mb_import(mb *b, const rlx_onnx_options *o, rlx_graph **g) {
  mb_finish(b);
  rlx_status s = ob_import(b->m, o, g);
  ob_model_free(b->m);
  b->m = NULL;
  return s;
}
/* Imports, compiles and runs the model (onnx_run.h) and frees the builder. */
static bool mb_run(mb *b, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n, runner *r) {
  mb_finish(b);
  bool ok = run_ob(b->m, o, ins, n, r);
  ob_model_free(b->m);
  b->m = NULL;
  return ok;
}

/* Imports and expects an error code with `substr` in the message. */
static void expect_import_error(mb *b, rlx_status code, const char *substr) {
  rlx_graph *g = NULL;
  CHECK_ERR(mb_import(b, NULL, &g), code, substr);
  rlx_graph_free(g);
}

/* Imports a model whose output should be [<symbolic>, d1, d2, d3]. */
static void expect_symbolic_batch(mb *b, int64_t d1, int64_t d2, int64_t d3) {
  rlx_graph *g = NULL;
  CHECK_OK(mb_import(b, NULL, &g));
  if (g) {
    const rlx_node *y = rlx_graph_node(g, rlx_graph_outputs(g)[0]);
    CHECK(y && y->shape.rank == 4 && !rlx_dim_is_static(y->shape.dims[0]) && y->shape.dims[1] == d1 &&
          y->shape.dims[2] == d2 && y->shape.dims[3] == d3);
  }
  rlx_graph_free(g);
}

/* Output t is f32 of the given dims with n values within tol * (1 + |want|) of want. */
static bool close_to(const rlx_tensor *t, const double *want, size_t n, int rank, const int64_t *dims, double tol,
                     const char *what) {
  if (out_shape_is(t, RLX_F32, rank, dims) && out_close(t, want, n, tol)) return true;
  fprintf(stderr, "  (%s)\n", what);
  return false;
}
static float frand(unsigned *s) { /* [-1, 1) */
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}
#define DIMS(...) ((int64_t[]){__VA_ARGS__})
enum { F32 = OB_FLOAT, I64 = OB_INT64 };

/* ======================================================================================
 * GridSample
 * ====================================================================================== */

enum { NEAREST, LINEAR, CUBIC };
enum { ZEROS, BORDER, REFLECTION };
static const char *mode_name16[3] = {"nearest", "bilinear", "bicubic"},
                  *mode_name20[3] = {"nearest", "linear", "cubic"};
static const char *pad_name[3] = {"zeros", "border", "reflection"};

/* Mirror x at lo / hi until it lies in [lo, hi]. */
static double ref_reflect(double x, double lo, double hi) {
  if (hi <= lo) return lo;
  while (x < lo || x > hi) x = x < lo ? 2 * lo - x : 2 * hi - x;
  return x;
}

static double ref_cubic(double s) { /* cubic convolution kernel, A = -0.75 */
  const double a = -0.75;
  s = fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}

/* X value at integer cell idx[] (spatial axes) of image (n, ch), read with the padding mode. */
static double ref_pixel(const float *x, const int64_t *S, int r, int64_t base, const int64_t *idx, int pad,
                        bool align) {
  int64_t off = 0;
  for (int i = 0; i < r; i++) {
    int64_t k = idx[i];
    if (k < 0 || k >= S[i]) {
      if (pad == ZEROS) return 0;
      if (pad == BORDER)
        k = k < 0 ? 0 : S[i] - 1;
      else {
        double lo = align ? 0 : -0.5, hi = align ? (double)(S[i] - 1) : (double)S[i] - 0.5;
        k = (int64_t)ref_reflect((double)k, lo, hi);
        if (k < 0) k = 0;
        if (k >= S[i]) k = S[i] - 1;
      }
    }
    off = off * S[i] + k;
  }
  return x[base + off];
}

/* y [N, C, O...] from X [N, C, S...] and grid [N, O..., r]. */
static void ref_grid_sample(const float *x, const int64_t *xd, int r, const float *grid, const int64_t *od, int mode,
                            int pad, bool align, double *y) {
  int64_t N = xd[0], C = xd[1], L = 1, P = 1;
  const int64_t *S = xd + 2;
  for (int i = 0; i < r; i++) L *= S[i], P *= od[i];
  for (int64_t n = 0; n < N; n++)
    for (int64_t p = 0; p < P; p++) {
      double pos[3];
      for (int i = 0; i < r; i++) { /* grid component r - 1 - i addresses spatial axis i */
        double g = grid[(n * P + p) * r + (r - 1 - i)];
        double v = align ? (g + 1) / 2 * (double)(S[i] - 1) : ((g + 1) * (double)S[i] - 1) / 2;
        if (mode == NEAREST) v = nearbyint(v); /* half to even */
        double lo = align ? 0 : -0.5, hi = align ? (double)(S[i] - 1) : (double)S[i] - 0.5;
        if (v < lo || v > hi) { /* cubic + border: only the taps are clamped (ref_pixel), as in PyTorch */
          if (pad == BORDER && mode != CUBIC)
            v = v < 0 ? 0 : v > (double)(S[i] - 1) ? (double)(S[i] - 1) : v;
          else if (pad == REFLECTION)
            v = ref_reflect(v, lo, hi);
        }
        pos[i] = v;
      }
      int taps = mode == NEAREST ? 1 : mode == LINEAR ? 2 : 4, combos = 1;
      for (int i = 0; i < r; i++) combos *= taps;
      for (int64_t ch = 0; ch < C; ch++) {
        double acc = 0;
        for (int k = 0; k < combos; k++) {
          int64_t idx[3];
          double w = 1;
          int rest = k;
          for (int i = 0; i < r; i++) {
            int t = rest % taps;
            rest /= taps;
            double fl = floor(pos[i]);
            if (mode == NEAREST)
              idx[i] = (int64_t)pos[i];
            else if (mode == LINEAR)
              idx[i] = (int64_t)fl + t, w *= t ? pos[i] - fl : 1 - (pos[i] - fl);
            else
              idx[i] = (int64_t)fl - 1 + t, w *= ref_cubic(pos[i] - (double)idx[i]);
          }
          acc += w * ref_pixel(x, S, r, (n * C + ch) * L, idx, pad, align);
        }
        y[(n * C + ch) * P + p] = acc;
      }
    }
}

/* One GridSample model for all modes and paddings, checked against the reference. */
static void check_grid_sample(int opset, int r, const int64_t *xd, const int64_t *gd, const float *x, const float *grid,
                              int mode, int pad, bool align) {
  mb b;
  mb_init(&b, "GridSample", opset);
  mb_input(&b, "X", F32, r + 2, xd);
  mb_input(&b, "grid", F32, r + 2, gd);
  mb_attr_s(&b, "mode", opset >= 20 ? mode_name20[mode] : mode_name16[mode]);
  mb_attr_s(&b, "padding_mode", pad_name[pad]);
  mb_attr_i(&b, "align_corners", align);
  int64_t yd[5] = {xd[0], xd[1]}, ny = xd[0] * xd[1];
  for (int i = 0; i < r; i++) yd[2 + i] = gd[1 + i], ny *= gd[1 + i];
  double *want = malloc((size_t)ny * sizeof *want);
  ref_grid_sample(x, xd, r, grid, gd + 1, mode, pad, align, want);
  rlx_named_tensor in[2] = {tin("X", (void *)x, RLX_F32, r + 2, xd), tin("grid", (void *)grid, RLX_F32, r + 2, gd)};
  runner run;
  char what[96];
  snprintf(what, sizeof what, "GridSample-%d %dD %s %s align_corners=%d", opset, r, mode_name20[mode], pad_name[pad],
           align);
  if (mb_run(&b, NULL, in, 2, &run))
    CHECK_MSG(close_to(&run.outs[0], want, (size_t)ny, r + 2, yd, 1e-4, what), "%s", what);
  runner_free(&run);
  free(want);
}

static void test_grid_sample_2d(void) {
  /* X [2, 3, 4, 5]; grid [2, 3, 6, 2]: random points in [-1.3, 1.3] (some outside) plus exact ones:
   * corners, the centre, and coordinates on .5 ties for nearest (1.5 and 2.5 both round to 2) */
  int64_t xd[4] = {2, 3, 4, 5}, gd[4] = {2, 3, 6, 2};
  float x[120], grid[72];
  unsigned seed = 7;
  for (int i = 0; i < 120; i++) x[i] = frand(&seed) * 2;
  for (int i = 0; i < 72; i++) grid[i] = frand(&seed) * 1.3f;
  static const float exact[] = {-1, -1, 1, 1, 0, 0, 0.5f, -0.25f, -0.25f, 0.25f, 1.5f, -2.875f};
  memcpy(grid, exact, sizeof exact);
  for (int opset = 16; opset <= 20; opset += 4)
    for (int mode = 0; mode < 3; mode++)
      for (int pad = 0; pad < 3; pad++)
        for (int align = 0; align < 2; align++) check_grid_sample(opset, 2, xd, gd, x, grid, mode, pad, align);
}

static void test_grid_sample_hand(void) {
  /* hand-derived: X = [[1, 2], [3, 4]], align_corners = 1 puts -1 / 1 on the corner cells */
  float x[4] = {1, 2, 3, 4}, grid[8] = {-1, -1, 1, 1, 0, 0, 0.5f, -1};
  double want[4] = {1, 4, 2.5, 1.75};
  mb b;
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 4, 2));
  mb_attr_i(&b, "align_corners", 1);
  rlx_named_tensor in[2] = {tin("X", x, RLX_F32, 4, DIMS(1, 1, 2, 2)), tin("grid", grid, RLX_F32, 4, DIMS(1, 1, 4, 2))};
  runner run;
  if (mb_run(&b, NULL, in, 2, &run)) CHECK(close_to(&run.outs[0], want, 4, 4, DIMS(1, 1, 1, 4), 1e-6, "hand bilinear"));
  runner_free(&run);
  /* nearest, align_corners = 0, W = 4: x = 2 g + 1.5, so g = 0 -> 1.5 -> 2 and g = 0.5 -> 2.5 -> 2 (half to
   * even), g = -0.5 -> 0.5 -> 0 */
  float x2[4] = {10, 20, 30, 40}, g2[6] = {0, 0, 0.5f, 0, -0.5f, 0};
  double want2[3] = {30, 30, 10};
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 1, 4));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 3, 2));
  mb_attr_s(&b, "mode", "nearest");
  rlx_named_tensor in2[2] = {tin("X", x2, RLX_F32, 4, DIMS(1, 1, 1, 4)), tin("grid", g2, RLX_F32, 4, DIMS(1, 1, 3, 2))};
  if (mb_run(&b, NULL, in2, 2, &run)) CHECK(close_to(&run.outs[0], want2, 3, 4, DIMS(1, 1, 1, 3), 0, "nearest ties"));
  runner_free(&run);
}

static void test_grid_sample_int(void) {
  /* integer X with nearest: cells are copied exactly (align_corners = 1, W = 3: g = -1, 0, 1 ->
   * cells 0, 1, 2; g = 0.25 -> 1.25 -> 1; g = -0.75 -> 0.25 -> 0); interpolating integers is a gap */
  int32_t x[3] = {-7, 10, 21}, want[5] = {-7, 10, 21, 10, -7};
  float g[10] = {-1, 0, 0, 0, 1, 0, 0.25f, 0, -0.75f, 0};
  for (int linear = 0; linear < 2; linear++) {
    mb b;
    mb_init(&b, "GridSample", 16);
    mb_input(&b, "X", OB_INT32, 4, DIMS(1, 1, 1, 3));
    mb_input(&b, "grid", F32, 4, DIMS(1, 1, 5, 2));
    mb_attr_i(&b, "align_corners", 1);
    b.out_elem = OB_INT32;
    if (linear) {
      expect_import_error(&b, RLX_ERR_UNSUPPORTED, "input X of dtype i32 with mode \"bilinear\"");
      continue;
    }
    mb_attr_s(&b, "mode", "nearest");
    rlx_named_tensor in[2] = {tin("X", x, RLX_I32, 4, DIMS(1, 1, 1, 3)), tin("grid", g, RLX_F32, 4, DIMS(1, 1, 5, 2))};
    runner run;
    if (mb_run(&b, NULL, in, 2, &run))
      CHECK(run.outs[0].shape.dtype == RLX_I32 && run.outs[0].shape.rank == 4 &&
            memcmp(run.outs[0].data, want, sizeof want) == 0);
    runner_free(&run);
  }
}

static void test_grid_sample_3d(void) {
  /* opset 20 volumetric sampling: X [2, 2, 3, 4, 5], grid [2, 2, 3, 2, 3] */
  int64_t xd[5] = {2, 2, 3, 4, 5}, gd[5] = {2, 2, 3, 2, 3};
  float x[240], grid[72];
  unsigned seed = 11;
  for (int i = 0; i < 240; i++) x[i] = frand(&seed);
  for (int i = 0; i < 72; i++) grid[i] = frand(&seed) * 1.4f;
  for (int mode = 0; mode < 3; mode++)
    for (int pad = 0; pad < 3; pad++)
      for (int align = 0; align < 2; align++) check_grid_sample(20, 3, xd, gd, x, grid, mode, pad, align);
}

static void test_grid_sample_symbolic_batch(void) {
  /* X [N, 1, 3, 4] and grid [N, 2, 2, 2]: imports with N symbolic; bound to 2 it runs */
  mb b;
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(-1, 1, 3, 4));
  mb_input(&b, "grid", F32, 4, DIMS(-1, 2, 2, 2));
  expect_symbolic_batch(&b, 1, 2, 2);
  float x[24], grid[16];
  unsigned seed = 3;
  for (int i = 0; i < 24; i++) x[i] = frand(&seed);
  for (int i = 0; i < 16; i++) grid[i] = frand(&seed) * 1.2f;
  double want[8];
  ref_grid_sample(x, DIMS(2, 1, 3, 4), 2, grid, DIMS(2, 2), LINEAR, ZEROS, false, want);
  const char *dn[1] = {"N"};
  int64_t dv[1] = {2};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.dim_names = dn;
  o.dim_values = dv;
  o.n_dims = 1;
  rlx_named_tensor in[2] = {tin("X", x, RLX_F32, 4, DIMS(2, 1, 3, 4)), tin("grid", grid, RLX_F32, 4, DIMS(2, 2, 2, 2))};
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(-1, 1, 3, 4));
  mb_input(&b, "grid", F32, 4, DIMS(-1, 2, 2, 2));
  runner run;
  if (mb_run(&b, &o, in, 2, &run)) CHECK(close_to(&run.outs[0], want, 8, 4, DIMS(2, 1, 2, 2), 1e-5, "symbolic N"));
  runner_free(&run);
}

static void test_grid_sample_errors(void) {
  mb b;
  /* opset 16 spells the modes bilinear / bicubic */
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  mb_attr_s(&b, "mode", "linear");
  expect_import_error(&b, RLX_ERR_FORMAT, "attribute mode is \"linear\"; GridSample-16 takes");
  mb_init(&b, "GridSample", 20);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  mb_attr_s(&b, "mode", "bicubic");
  expect_import_error(&b, RLX_ERR_FORMAT, "GridSample-20 takes \"linear\", \"nearest\" or \"cubic\"");
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  mb_attr_s(&b, "padding_mode", "wrap");
  expect_import_error(&b, RLX_ERR_FORMAT, "attribute padding_mode is \"wrap\"");
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  mb_attr_i(&b, "align_corners", 2);
  expect_import_error(&b, RLX_ERR_FORMAT, "align_corners is 2");
  /* GridSample-16 is 2-D only; 5-D needs opset 20 */
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 5, DIMS(1, 1, 2, 2, 2));
  mb_input(&b, "grid", F32, 5, DIMS(1, 1, 1, 1, 3));
  expect_import_error(&b, RLX_ERR_FORMAT, "GridSample-16 takes a 4-D input X");
  /* grid's last dim must be the number of spatial axes, its batch X's */
  mb_init(&b, "GridSample", 20);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 3));
  expect_import_error(&b, RLX_ERR_FORMAT, "input grid is [1, 1, 1, 3]");
  mb_init(&b, "GridSample", 20);
  mb_input(&b, "X", F32, 4, DIMS(2, 1, 2, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  expect_import_error(&b, RLX_ERR_FORMAT, "with X's N");
  /* cubic over 4 spatial axes would be 256 taps per point */
  mb_init(&b, "GridSample", 20);
  mb_input(&b, "X", F32, 6, DIMS(1, 1, 2, 2, 2, 2));
  mb_input(&b, "grid", F32, 6, DIMS(1, 1, 1, 1, 1, 4));
  mb_attr_s(&b, "mode", "cubic");
  expect_import_error(&b, RLX_ERR_UNSUPPORTED, "cubic sampling over 4 spatial axes");
  /* symbolic spatial dims */
  mb_init(&b, "GridSample", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, -1, 2));
  mb_input(&b, "grid", F32, 4, DIMS(1, 1, 1, 2));
  expect_import_error(&b, RLX_ERR_UNSUPPORTED, "only its first (batch) dim may be symbolic");
}

/* ======================================================================================
 * AffineGrid
 * ====================================================================================== */

static void check_affine_grid(const float *theta, int r, const int64_t *size, bool align, const double *want,
                              const char *what) {
  mb b;
  mb_init(&b, "AffineGrid", 20);
  int64_t td[3] = {size[0], r, r + 1};
  mb_input(&b, "theta", F32, 3, td);
  mb_const(&b, "size", I64, 1, DIMS(r + 2), size, (size_t)(r + 2) * 8);
  mb_attr_i(&b, "align_corners", align);
  int64_t yd[5] = {size[0]}, n = size[0] * r;
  for (int i = 0; i < r; i++) yd[1 + i] = size[2 + i], n *= size[2 + i];
  yd[r + 1] = r;
  rlx_named_tensor in[1] = {tin("theta", (void *)theta, RLX_F32, 3, td)};
  runner run;
  if (mb_run(&b, NULL, in, 1, &run))
    CHECK_MSG(close_to(&run.outs[0], want, (size_t)n, r + 2, yd, 1e-6, what), "%s", what);
  runner_free(&run);
}

static void test_affine_grid(void) {
  /* identity theta, size [1, 1, 2, 3]: without align_corners the cell centres -2/3, 0, 2/3 (x) and
   * -1/2, 1/2 (y); with align_corners -1, 0, 1 and -1, 1 */
  float id[6] = {1, 0, 0, 0, 1, 0};
  double w0[12] = {-2.0 / 3, -0.5, 0, -0.5, 2.0 / 3, -0.5, -2.0 / 3, 0.5, 0, 0.5, 2.0 / 3, 0.5};
  double w1[12] = {-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1};
  check_affine_grid(id, 2, DIMS(1, 1, 2, 3), false, w0, "identity 2-D");
  check_affine_grid(id, 2, DIMS(1, 1, 2, 3), true, w1, "identity 2-D align_corners");
  /* two matrices: out = theta @ (x, y, 1) */
  float th[12] = {0.5f, -1, 0.25f, 2, 0.75f, -0.5f, -1, 0, 1, 0.125f, 1.5f, 0};
  double w2[2 * 3 * 2 * 2];
  static const double xs[2] = {-0.5, 0.5}, ys[3] = {-2.0 / 3, 0, 2.0 / 3};
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++)
        for (int k = 0; k < 2; k++) {
          const float *t = th + n * 6 + k * 3;
          w2[((n * 3 + i) * 2 + j) * 2 + k] = t[0] * xs[j] + t[1] * ys[i] + t[2];
        }
  check_affine_grid(th, 2, DIMS(2, 4, 3, 2), false, w2, "general 2-D");
  /* 3-D: theta [1, 3, 4], size [1, 1, 2, 1, 3] with align_corners; the single H cell sits at -1 (as
   * in ONNX's reference implementation) */
  float t3[12] = {1, 0.5f, 0, 0.25f, 0, 2, 1, 0, -1, 0, 0.5f, 1};
  double w3[2 * 1 * 3 * 3];
  static const double zs[2] = {-1, 1}, xs3[3] = {-1, 0, 1};
  for (int d = 0; d < 2; d++)
    for (int w = 0; w < 3; w++)
      for (int k = 0; k < 3; k++) {
        const float *t = t3 + k * 4;
        w3[(d * 3 + w) * 3 + k] = t[0] * xs3[w] + t[1] * -1.0 + t[2] * zs[d] + t[3];
      }
  check_affine_grid(t3, 3, DIMS(1, 1, 2, 1, 3), true, w3, "3-D align_corners");

  mb b;
  /* size must be known when importing */
  mb_init(&b, "AffineGrid", 20);
  mb_input(&b, "theta", F32, 3, DIMS(1, 2, 3));
  mb_input(&b, "size", I64, 1, DIMS(4));
  expect_import_error(&b, RLX_ERR_UNSUPPORTED, "input 1 (size) must be known at import time");
  mb_init(&b, "AffineGrid", 20);
  mb_input(&b, "theta", F32, 3, DIMS(1, 2, 4));
  mb_const(&b, "size", I64, 1, DIMS(4), DIMS(1, 1, 2, 2), 32);
  expect_import_error(&b, RLX_ERR_FORMAT, "it must be [N, 2, 3] (2-D) or [N, 3, 4] (3-D)");
  mb_init(&b, "AffineGrid", 20);
  mb_input(&b, "theta", F32, 3, DIMS(1, 2, 3));
  mb_const(&b, "size", I64, 1, DIMS(5), DIMS(1, 1, 2, 2, 2), 40);
  expect_import_error(&b, RLX_ERR_FORMAT, "input 1 (size) has 5 entries");
  mb_init(&b, "AffineGrid", 20);
  mb_input(&b, "theta", F32, 3, DIMS(1, 2, 3));
  mb_const(&b, "size", I64, 1, DIMS(4), DIMS(3, 1, 2, 2), 32);
  expect_import_error(&b, RLX_ERR_FORMAT, "size) has N = 3, but theta has 1");
  /* AffineGrid is new in opset 20 */
  mb_init(&b, "AffineGrid", 19);
  mb_input(&b, "theta", F32, 3, DIMS(1, 2, 3));
  mb_const(&b, "size", I64, 1, DIMS(4), DIMS(1, 1, 2, 2), 32);
  expect_import_error(&b, RLX_ERR_UNSUPPORTED, "opset 19 is not supported");
}

/* ======================================================================================
 * RoiAlign
 * ====================================================================================== */

typedef struct ra_case {
  bool max_mode, half_pixel;
  int64_t oh, ow, ratio;
  float scale;
} ra_case;

/* Bilinear sample with RoiAlign's edge rules: samples more than one cell outside give no weight;
 * others are clamped into the image. w[4] / idx[4] for (lo, lo), (lo, hi), (hi, lo), (hi, hi). */
static void ra_ref_sample(double y, double x, int64_t H, int64_t W, double w[4], int64_t idx[4]) {
  for (int k = 0; k < 4; k++) w[k] = 0, idx[k] = 0;
  if (y < -1 || y > (double)H || x < -1 || x > (double)W) return;
  if (y < 0) y = 0;
  if (x < 0) x = 0;
  int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
  if (y0 >= H - 1)
    y0 = y1 = H - 1, y = (double)y0;
  else
    y1 = y0 + 1;
  if (x0 >= W - 1)
    x0 = x1 = W - 1, x = (double)x0;
  else
    x1 = x0 + 1;
  double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
  idx[0] = y0 * W + x0, idx[1] = y0 * W + x1, idx[2] = y1 * W + x0, idx[3] = y1 * W + x1;
}

static void ref_roi_align(const float *x, const int64_t *xd, const float *rois, const int64_t *bi, int64_t R,
                          const ra_case *p, double *y) {
  int64_t C = xd[1], H = xd[2], W = xd[3];
  double off = p->half_pixel ? 0.5 : 0;
  for (int64_t r = 0; r < R; r++) {
    const float *ro = rois + r * 4;
    double sw = ro[0] * p->scale - off, sh = ro[1] * p->scale - off;
    double rw = ro[2] * p->scale - off - sw, rh = ro[3] * p->scale - off - sh;
    if (!p->half_pixel) rw = fmax(rw, 1), rh = fmax(rh, 1);
    double bh = rh / (double)p->oh, bw = rw / (double)p->ow;
    int64_t gh = p->ratio > 0 ? p->ratio : (int64_t)ceil(rh / (double)p->oh);
    int64_t gw = p->ratio > 0 ? p->ratio : (int64_t)ceil(rw / (double)p->ow);
    double count = (double)(gh * gw > 1 ? gh * gw : 1);
    for (int64_t ch = 0; ch < C; ch++) {
      const float *img = x + (bi[r] * C + ch) * H * W;
      for (int64_t ph = 0; ph < p->oh; ph++)
        for (int64_t pw = 0; pw < p->ow; pw++) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; iy++)
            for (int64_t ix = 0; ix < gw; ix++) {
              double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
              double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double w[4];
              int64_t idx[4];
              ra_ref_sample(yy, xx, H, W, w, idx);
              if (!p->max_mode) {
                for (int k = 0; k < 4; k++) acc += w[k] * img[idx[k]];
              } else { /* ONNX: the largest weighted corner value per sample, then the largest sample */
                double v = w[0] * img[idx[0]];
                for (int k = 1; k < 4; k++) v = fmax(v, w[k] * img[idx[k]]);
                acc = first ? v : fmax(acc, v);
                first = false;
              }
            }
          y[((r * C + ch) * p->oh + ph) * p->ow + pw] = p->max_mode ? acc : acc / count;
        }
    }
  }
}

/* rois as a graph input (run-time values) or, with rois_const, as an initializer. */
static void check_roi_align(int opset, const ra_case *p, bool rois_const, const char *what) {
  int64_t xd[4] = {2, 3, 7, 6}, R = 6;
  float x[2 * 3 * 7 * 6];
  unsigned seed = 5;
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = frand(&seed) * 3;
  /* whole image, inner boxes, a box past the edges, a tiny one, one more than a cell outside */
  float rois[24] = {0,  0,  11, 13, 2,    3,    7,    9,    4.5f, 1,  15, 6.2f,
                    -4, -3, 14, 16, 3.1f, 4.2f, 3.4f, 4.3f, -9,   -9, -3, -3};
  int64_t bi[6] = {0, 1, 1, 0, 1, 0};
  mb b;
  mb_init(&b, "RoiAlign", opset);
  mb_input(&b, "X", F32, 4, xd);
  if (rois_const)
    mb_const(&b, "rois", F32, 2, DIMS(R, 4), rois, sizeof rois);
  else
    mb_input(&b, "rois", F32, 2, DIMS(R, 4));
  mb_input(&b, "batch_indices", I64, 1, DIMS(R));
  mb_attr_s(&b, "mode", p->max_mode ? "max" : "avg");
  mb_attr_i(&b, "output_height", p->oh);
  mb_attr_i(&b, "output_width", p->ow);
  mb_attr_i(&b, "sampling_ratio", p->ratio);
  mb_attr_f(&b, "spatial_scale", p->scale);
  if (opset >= 16) mb_attr_s(&b, "coordinate_transformation_mode", p->half_pixel ? "half_pixel" : "output_half_pixel");
  int64_t ny = R * xd[1] * p->oh * p->ow;
  double *want = malloc((size_t)ny * sizeof *want);
  ref_roi_align(x, xd, rois, bi, R, p, want);
  rlx_named_tensor in[3] = {tin("X", x, RLX_F32, 4, xd), tin("rois", rois, RLX_F32, 2, DIMS(R, 4)),
                            tin("batch_indices", bi, RLX_I64, 1, DIMS(R))};
  rlx_named_tensor in2[2] = {in[0], in[2]};
  runner run;
  if (mb_run(&b, NULL, rois_const ? in2 : in, rois_const ? 2 : 3, &run))
    CHECK_MSG(close_to(&run.outs[0], want, (size_t)ny, 4, DIMS(R, xd[1], p->oh, p->ow), 1e-4, what), "%s", what);
  runner_free(&run);
  free(want);
}

static void test_roi_align(void) {
  for (int mx = 0; mx < 2; mx++)
    for (int hp = 0; hp < 2; hp++) {
      ra_case p = {mx == 1, hp == 1, 3, 2, 2, 0.5f};
      char what[96];
      snprintf(what, sizeof what, "RoiAlign-16 %s %s sampling_ratio 2", mx ? "max" : "avg",
               hp ? "half_pixel" : "output_half_pixel");
      check_roi_align(16, &p, false, what);
      p.ratio = 0; /* adaptive: needs the rois when importing */
      snprintf(what, sizeof what, "RoiAlign-16 %s %s sampling_ratio 0", mx ? "max" : "avg",
               hp ? "half_pixel" : "output_half_pixel");
      check_roi_align(16, &p, true, what);
    }
  /* opset 10: no coordinate_transformation_mode, rois at least one cell */
  ra_case legacy = {false, false, 2, 4, 3, 1.0f};
  check_roi_align(10, &legacy, false, "RoiAlign-10 avg sampling_ratio 3");
  legacy.ratio = 0;
  legacy.max_mode = true;
  check_roi_align(10, &legacy, true, "RoiAlign-10 max sampling_ratio 0");

  /* hand-derived: X[y][x] = 4 y + x (bilinear reproduces it), roi (1, 1)-(3, 3), one bin with one
   * sample at its centre; output_half_pixel has no -0.5 shift, so the sample sits at (2, 2) */
  float x[16];
  for (int i = 0; i < 16; i++) x[i] = (float)i;
  float rois[4] = {1, 1, 3, 3};
  int64_t bi[1] = {0};
  double want[1] = {4 * 2.0 + 2.0};
  mb b;
  mb_init(&b, "RoiAlign", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 4, 4));
  mb_input(&b, "rois", F32, 2, DIMS(1, 4));
  mb_input(&b, "batch_indices", I64, 1, DIMS(1));
  mb_attr_i(&b, "sampling_ratio", 1);
  mb_attr_s(&b, "coordinate_transformation_mode", "output_half_pixel");
  rlx_named_tensor in[3] = {tin("X", x, RLX_F32, 4, DIMS(1, 1, 4, 4)), tin("rois", rois, RLX_F32, 2, DIMS(1, 4)),
                            tin("batch_indices", bi, RLX_I64, 1, DIMS(1))};
  runner run;
  if (mb_run(&b, NULL, in, 3, &run)) CHECK(close_to(&run.outs[0], want, 1, 4, DIMS(1, 1, 1, 1), 1e-6, "hand roi"));
  runner_free(&run);
}

static void test_roi_align_symbolic(void) {
  /* detection models: X [N, 2, 5, 6] and a run-time number of rois M; imports with both symbolic,
   * runs with them bound */
  const ra_case p = {false, true, 2, 2, 2, 1.0f};
#define RA_SYM                                     \
  mb_init(&b, "RoiAlign", 16);                     \
  mb_input(&b, "X", F32, 4, DIMS(-1, 2, 5, 6));    \
  mb_input(&b, "rois", F32, 2, DIMS(-2, 4));       \
  mb_input(&b, "batch_indices", I64, 1, DIMS(-2)); \
  mb_attr_i(&b, "output_height", 2);               \
  mb_attr_i(&b, "output_width", 2);                \
  mb_attr_i(&b, "sampling_ratio", 2)
  mb b;
  RA_SYM;
  expect_symbolic_batch(&b, 2, 2, 2);
  float x[3 * 2 * 5 * 6], rois[8] = {0.5f, 1, 4, 3.5f, -1, 2, 7, 6};
  int64_t bi[2] = {2, 0};
  unsigned seed = 9;
  for (int i = 0; i < 180; i++) x[i] = frand(&seed);
  double want[16];
  ref_roi_align(x, DIMS(3, 2, 5, 6), rois, bi, 2, &p, want);
  const char *dn[2] = {"N", "M"};
  int64_t dv[2] = {3, 2};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.dim_names = dn;
  o.dim_values = dv;
  o.n_dims = 2;
  RA_SYM;
  rlx_named_tensor in[3] = {tin("X", x, RLX_F32, 4, DIMS(3, 2, 5, 6)), tin("rois", rois, RLX_F32, 2, DIMS(2, 4)),
                            tin("batch_indices", bi, RLX_I64, 1, DIMS(2))};
  runner run;
  if (mb_run(&b, &o, in, 3, &run)) CHECK(close_to(&run.outs[0], want, 16, 4, DIMS(2, 2, 2, 2), 1e-5, "symbolic rois"));
  runner_free(&run);
#undef RA_SYM
}

static void test_roi_align_errors(void) {
  mb b;
#define RA_BASE(opset)                         \
  mb_init(&b, "RoiAlign", opset);              \
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 4, 4)); \
  mb_input(&b, "rois", F32, 2, DIMS(2, 4));    \
  mb_input(&b, "batch_indices", I64, 1, DIMS(2))
  /* sampling_ratio 0 samples ceil(roi size / output size) points: the rois must be known */
  RA_BASE(16);
  expect_import_error(&b, RLX_ERR_UNSUPPORTED,
                      "input 1 (rois; with sampling_ratio = 0 the sample count depends on them)");
  RA_BASE(16);
  mb_attr_s(&b, "mode", "min");
  expect_import_error(&b, RLX_ERR_FORMAT, "attribute mode is \"min\"; expected \"avg\" or \"max\"");
  RA_BASE(16);
  mb_attr_s(&b, "coordinate_transformation_mode", "asymmetric");
  expect_import_error(&b, RLX_ERR_FORMAT, "coordinate_transformation_mode is \"asymmetric\"");
  RA_BASE(16);
  mb_attr_i(&b, "sampling_ratio", -1);
  expect_import_error(&b, RLX_ERR_FORMAT, "sampling_ratio is -1");
  RA_BASE(16);
  mb_attr_i(&b, "output_height", 0);
  expect_import_error(&b, RLX_ERR_FORMAT, "output_height and output_width are 0 and 1");
  mb_init(&b, "RoiAlign", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 4, 4));
  mb_input(&b, "rois", F32, 2, DIMS(2, 5));
  mb_input(&b, "batch_indices", I64, 1, DIMS(2));
  mb_attr_i(&b, "sampling_ratio", 2);
  expect_import_error(&b, RLX_ERR_FORMAT, "input 1 (rois) is [2, 5]");
  mb_init(&b, "RoiAlign", 16);
  mb_input(&b, "X", F32, 4, DIMS(1, 1, 4, 4));
  mb_input(&b, "rois", F32, 2, DIMS(2, 4));
  mb_input(&b, "batch_indices", I64, 1, DIMS(3));
  mb_attr_i(&b, "sampling_ratio", 2);
  expect_import_error(&b, RLX_ERR_FORMAT, "input 2 (batch_indices) is [3]");
#undef RA_BASE
}

int main(void) {
  test_grid_sample_2d();
  test_grid_sample_hand();
  test_grid_sample_int();
  test_grid_sample_3d();
  test_grid_sample_symbolic_batch();
  test_grid_sample_errors();
  test_affine_grid();
  test_roi_align();
  test_roi_align_symbolic();
  test_roi_align_errors();
  return rlx_test_finish("onnx_sample");
}
