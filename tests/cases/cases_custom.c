/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: the Custom op kind through the registry (include/rlx/custom.h). The build
 * hook registers "conf.scaled_square" (y = a x^2, a = the f64 in the attribute bytes; a CPU
 * kernel for f32 and f64) once and builds the node through the registry's shape rule. The float64
 * reference (tests/reference/ref_custom.py) keys on `body`. (CustomFn's cases are in
 * cases_control.c.) See cases.h for the row format. */
#include <string.h>

#include "cases.h"
#include "rlx/custom.h"
#ifdef RLX_HAVE_MLX
#include "rlx/mlx.h"
#endif

static double conf_custom_a(const uint8_t *attrs, size_t len) {
  double a = 1.0;
  if (len == sizeof a) memcpy(&a, attrs, sizeof a);
  return a;
}

static rlx_status conf_sq_infer(const rlx_shape *const *in, uint32_t n_in, const uint8_t *attrs, size_t len, void *user,
                                rlx_shape *out) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  if (in[0]->dtype != RLX_F32 && in[0]->dtype != RLX_F64)
    return rlx_errorf(RLX_ERR_SHAPE, "conf.scaled_square takes f32 or f64, not %s", rlx_dtype_name(in[0]->dtype));
  *out = *in[0];
  return RLX_OK;
}

static rlx_status conf_sq_cpu(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                              void *user) {
  (void)n_in, (void)user;
  double a = conf_custom_a(attrs, len);
  size_t n = 1;
  for (uint32_t k = 0; k < out->shape.rank; k++) n *= (size_t)out->shape.dims[k];
  for (size_t i = 0; i < n; i++) {
    if (out->shape.dtype == RLX_F64) {
      double v = ((const double *)in[0].data)[i];
      ((double *)out->data)[i] = a * v * v;
    } else {
      double v = ((const float *)in[0].data)[i];
      ((float *)out->data)[i] = (float)(a * v * v);
    }
  }
  return RLX_OK;
}

#ifdef RLX_HAVE_MLX
/* The MLX backend's kernel of the op: a lowering onto MLX multiplies (include/rlx/mlx.h). */
static rlx_status conf_sq_mlx(rlx_mlx_builder *b, rlx_mlx_array *const *in, uint32_t n_in, const rlx_shape *out_shape,
                              const uint8_t *attrs, size_t len, void *user, rlx_mlx_array **out) {
  (void)n_in, (void)user;
  rlx_mlx_array *a = rlx_mlx_scalar(b, conf_custom_a(attrs, len), (rlx_dtype)out_shape->dtype);
  *out = rlx_mlx_binary(b, RLX_BINOP_MUL, a, rlx_mlx_binary(b, RLX_BINOP_MUL, in[0], in[0]));
  return *out ? RLX_OK : rlx_errorf(RLX_ERR_RUNTIME, "%s", rlx_mlx_builder_error(b));
}
#endif

static rlx_status build_custom_scaled_square(rlx_graph *g, const rlx_id *in, uint32_t n, rlx_id *out) {
  (void)n;
  if (!rlx_custom_lookup("conf.scaled_square", NULL)) {
    rlx_custom_op_desc d = {.name = "conf.scaled_square", .num_inputs = 1, .infer = conf_sq_infer};
    RLX_TRY(rlx_custom_register(&d));
    RLX_TRY(rlx_custom_register_cpu_kernel("conf.scaled_square", conf_sq_cpu, NULL));
#ifdef RLX_HAVE_MLX
    RLX_TRY(rlx_mlx_register_custom_lowering("conf.scaled_square", conf_sq_mlx, NULL));
#endif
  }
  double a = 1.5;
  return rlx_custom(g, "conf.scaled_square", in, 1, &a, sizeof a, NULL, out);
}

static const conf_case conf_cases_custom[] = {
    {"custom_scaled_square_f64",
     RLX_OP_Custom,
     NULL,
     1,
     {IN(F64, 2, 3)},
     .build = build_custom_scaled_square,
     .body = "scaled_square_a1.5"},
    {"custom_scaled_square_f32",
     RLX_OP_Custom,
     NULL,
     1,
     {IN(F32, 4)},
     .build = build_custom_scaled_square,
     .body = "scaled_square_a1.5"},
    {"custom_scaled_square_empty",
     RLX_OP_Custom,
     NULL,
     1,
     {IN(F32, 0, 3)},
     .build = build_custom_scaled_square,
     .body = "scaled_square_a1.5"},
};
