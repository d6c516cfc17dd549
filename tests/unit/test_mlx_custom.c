/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* User Custom ops on the MLX backend (include/rlx/mlx.h), against the CPU's Custom kernels:
 *   - "test.mlx_affine_sq" (y = a x^2 + b x, a and b f32 attributes) with an MLX lowering built
 *     from the builder functions: its MLX values equal the CPU kernel's, and the lowering (not the
 *     CPU kernel) ran;
 *   - "test.mlx_host_cube" (y = x^3 summed with its row mean) with an MLX host kernel: it runs
 *     inside the MLX graph (its call counter moves) and matches the CPU kernel, also next to native
 *     nodes and in compiled mode (which falls back to lazy);
 *   - an op with only a CPU kernel is a compile error on MLX naming the node and the op; a
 *     lowering that builds the wrong shape is an error naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
#include "rlx/mlx.h"

typedef struct ab {
  float a, b;
} ab;

static ab attrs_of(const uint8_t *attrs, size_t len) {
  ab v = {1, 0};
  if (len == sizeof v) memcpy(&v, attrs, sizeof v);
  return v;
}

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t k = 0; k < s->rank; k++) n *= (size_t)s->dims[k];
  return n;
}

static int cpu_calls, host_calls, lower_calls;

static rlx_status same_shape(const rlx_shape *const *in, uint32_t n_in, const uint8_t *attrs, size_t len, void *user,
                             rlx_shape *out) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  if (in[0]->dtype != RLX_F32) return rlx_errorf(RLX_ERR_SHAPE, "f32 only");
  *out = *in[0];
  return RLX_OK;
}

/* ---- test.mlx_affine_sq ---- */
static rlx_status affine_sq_cpu(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                                void *user) {
  (void)n_in, (void)user;
  cpu_calls++;
  ab v = attrs_of(attrs, len);
  const float *x = in[0].data;
  float *y = out->data;
  for (size_t i = 0; i < numel(&out->shape); i++) y[i] = v.a * x[i] * x[i] + v.b * x[i];
  return RLX_OK;
}

static rlx_status affine_sq_mlx(rlx_mlx_builder *b, rlx_mlx_array *const *in, uint32_t n_in, const rlx_shape *out_shape,
                                const uint8_t *attrs, size_t len, void *user, rlx_mlx_array **out) {
  (void)n_in, (void)out_shape;
  lower_calls++;
  ab v = attrs_of(attrs, len);
  rlx_mlx_array *x = in[0];
  rlx_mlx_array *sq = rlx_mlx_binary(b, RLX_BINOP_MUL, x, x);
  rlx_mlx_array *t1 = rlx_mlx_binary(b, RLX_BINOP_MUL, sq, rlx_mlx_scalar(b, v.a, RLX_F32));
  rlx_mlx_array *t2 = rlx_mlx_binary(b, RLX_BINOP_MUL, x, rlx_mlx_scalar(b, v.b, RLX_F32));
  *out = rlx_mlx_binary(b, RLX_BINOP_ADD, t1, t2);
  if (*(int *)user == 1) { /* the broken variant: a wrong shape */
    int64_t d[1] = {(int64_t)numel(out_shape)};
    *out = rlx_mlx_reshape(b, *out, 1, d);
  }
  return *out ? RLX_OK : rlx_errorf(RLX_ERR_RUNTIME, "%s", rlx_mlx_builder_error(b));
}

/* ---- test.mlx_host_cube: y[r, c] = x[r, c]^3 + mean_c x[r, :] (x [R, C]) ---- */
static void cube(const float *x, float *y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; r++) {
    float m = 0;
    for (size_t c = 0; c < cols; c++) m += x[r * cols + c];
    m /= (float)cols;
    for (size_t c = 0; c < cols; c++) y[r * cols + c] = x[r * cols + c] * x[r * cols + c] * x[r * cols + c] + m;
  }
}
static rlx_status cube_cpu(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                           void *user) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  cpu_calls++;
  cube(in[0].data, out->data, (size_t)out->shape.dims[0], (size_t)out->shape.dims[1]);
  return RLX_OK;
}
static rlx_status cube_mlx_host(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                                void *user) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  host_calls++;
  cube(in[0].data, out->data, (size_t)out->shape.dims[0], (size_t)out->shape.dims[1]);
  return RLX_OK;
}

static int zero = 0, one_flag = 1;

/* y = op(x) (then * 2 + 1 around it: native nodes on both sides). */
static rlx_graph *custom_graph(const char *op, const ab *attrs, bool wrap) {
  rlx_graph *g = NULL;
  rlx_id x, y;
  CHECK_OK(rlx_graph_create(NULL, "custom", &g));
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 5}), &x));
  rlx_id a = x;
  if (wrap) CHECK_OK(rlx_activation(g, RLX_ACT_TANH, x, &a));
  CHECK_OK(rlx_custom(g, op, &a, 1, attrs, attrs ? sizeof *attrs : 0, NULL, &y));
  if (wrap) CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, y, y, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  return g;
}

static bool run_on(const rlx_graph *g, const char *backend, const void *opts, const float *x, float *y) {
  rlx_executable *e = NULL;
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.backend_options = opts;
  if (rlx_compile(g, backend, &o, &e) != RLX_OK) {
    fprintf(stderr, "compile on %s: %s\n", backend, rlx_last_error());
    return false;
  }
  rlx_named_tensor in = {"x", {(void *)x, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 5})}};
  const rlx_tensor *o2 = NULL;
  uint32_t no = 0;
  bool ok = rlx_executable_run(e, &in, 1, &o2, &no) == RLX_OK && no == 1;
  if (ok)
    memcpy(y, o2[0].data, 15 * sizeof(float));
  else
    fprintf(stderr, "run on %s: %s\n", backend, rlx_last_error());
  rlx_executable_free(e);
  return ok;
}

static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

int main(void) {
  CHECK_OK(
      rlx_custom_register(&(rlx_custom_op_desc){.name = "test.mlx_affine_sq", .num_inputs = 1, .infer = same_shape}));
  CHECK_OK(rlx_custom_register_cpu_kernel("test.mlx_affine_sq", affine_sq_cpu, NULL));
  CHECK_OK(rlx_mlx_register_custom_lowering("test.mlx_affine_sq", affine_sq_mlx, &zero));
  CHECK(rlx_mlx_register_custom_lowering("test.mlx_affine_sq", affine_sq_mlx, &zero) == RLX_ERR_INVALID_ARG);
  CHECK_OK(
      rlx_custom_register(&(rlx_custom_op_desc){.name = "test.mlx_bad_shape", .num_inputs = 1, .infer = same_shape}));
  CHECK_OK(rlx_mlx_register_custom_lowering("test.mlx_bad_shape", affine_sq_mlx, &one_flag));
  CHECK_OK(
      rlx_custom_register(&(rlx_custom_op_desc){.name = "test.mlx_host_cube", .num_inputs = 1, .infer = same_shape}));
  CHECK_OK(rlx_custom_register_cpu_kernel("test.mlx_host_cube", cube_cpu, NULL));
  CHECK_OK(rlx_mlx_register_custom_host_kernel("test.mlx_host_cube", cube_mlx_host, NULL));
  CHECK_OK(
      rlx_custom_register(&(rlx_custom_op_desc){.name = "test.mlx_cpu_only", .num_inputs = 1, .infer = same_shape}));
  CHECK_OK(rlx_custom_register_cpu_kernel("test.mlx_cpu_only", cube_cpu, NULL));

  float x[15], want[15], got[15];
  unsigned seed = 3;
  for (int i = 0; i < 15; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) & 0xffff) / 16384.0f - 2.0f;
  }
  ab attrs = {0.75f, -1.25f};
  for (int wrap = 0; wrap < 2; wrap++) {
    /* the MLX lowering */
    rlx_graph *g = custom_graph("test.mlx_affine_sq", &attrs, wrap);
    int c0 = cpu_calls, l0 = lower_calls;
    CHECK(run_on(g, "cpu", NULL, x, want));
    CHECK(cpu_calls == c0 + 1);
    memset(got, 0, sizeof got);
    CHECK(run_on(g, "mlx", NULL, x, got));
    CHECK_MSG(cpu_calls == c0 + 1, "the CPU kernel ran for the MLX backend");
    CHECK_MSG(lower_calls > l0, "the MLX lowering did not run");
    CHECK_MSG(max_diff(got, want, 15) < 1e-5, "MLX lowering differs from the CPU kernel by %g",
              max_diff(got, want, 15));
    CHECK(max_diff(want, x, 15) > 0.1); /* the op did something */
    rlx_graph_free(g);
    /* the host kernel, lazy and compiled (falls back to lazy) */
    for (int compiled = 0; compiled < 2; compiled++) {
      g = custom_graph("test.mlx_host_cube", NULL, wrap);
      CHECK(run_on(g, "cpu", NULL, x, want));
      rlx_mlx_options mo;
      rlx_mlx_options_init(&mo);
      mo.mode = compiled ? RLX_MLX_COMPILED : RLX_MLX_LAZY;
      int h0 = host_calls;
      c0 = cpu_calls;
      memset(got, 0, sizeof got);
      CHECK(run_on(g, "mlx", &mo, x, got));
      CHECK_MSG(host_calls == h0 + 1, "the MLX host kernel ran %d times", host_calls - h0);
      CHECK_MSG(cpu_calls == c0, "the CPU kernel ran for the MLX backend");
      CHECK_MSG(max_diff(got, want, 15) < 1e-5, "MLX host kernel differs from the CPU by %g", max_diff(got, want, 15));
      rlx_graph_free(g);
    }
  }
  /* no MLX kernel: a compile error naming the node and the op */
  rlx_graph *g = custom_graph("test.mlx_cpu_only", NULL, false);
  rlx_executable *e = NULL;
  CHECK(rlx_compile(g, "mlx", NULL, &e) == RLX_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(rlx_last_error(), "test.mlx_cpu_only") && strstr(rlx_last_error(), "node 1") &&
                strstr(rlx_last_error(), "rlx_mlx_register_custom_lowering"),
            "error: %s", rlx_last_error());
  rlx_executable_free(e);
  e = NULL;
  CHECK(run_on(g, "cpu", NULL, x, want)); /* the CPU has its kernel */
  rlx_graph_free(g);
  /* a lowering that builds the wrong shape */
  g = custom_graph("test.mlx_bad_shape", &attrs, false);
  CHECK(rlx_compile(g, "mlx", NULL, &e) != RLX_OK);
  CHECK_MSG(strstr(rlx_last_error(), "node 1") && strstr(rlx_last_error(), "declares"), "error: %s", rlx_last_error());
  rlx_executable_free(e);
  rlx_graph_free(g);
  CHECK_OK(rlx_custom_unregister("test.mlx_affine_sq"));
  CHECK_OK(rlx_custom_unregister("test.mlx_bad_shape"));
  CHECK_OK(rlx_custom_unregister("test.mlx_host_cube"));
  CHECK_OK(rlx_custom_unregister("test.mlx_cpu_only"));
  return rlx_test_finish("test_mlx_custom");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_custom: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
