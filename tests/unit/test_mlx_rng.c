/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's RNG gives the CPU's values for a key: RngUniform bit-identical in f32, f64,
 * f16 and bf16 (keys, op seeds and compile seeds mixed as on the CPU), RngNormal equal to within a
 * few ulps of f32 (MLX's f64 log / cos), both lowered natively (not host-evaluated). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
#include "backends/mlx/backend.h"
#include "core/elem.h"
#include "backends/mlx/mlx_internal.h"

static void one(rlx_op op, rlx_dtype t, uint64_t key, bool op_seed, uint64_t compile_seed) {
  rlx_graph *g = NULL;
  rlx_id y;
  CHECK_OK(rlx_graph_create(NULL, "rng", &g));
  rlx_shape sh = rlx_shape_make(t, 2, (rlx_dim[]){37, 29});
  if (op == RLX_OP_RngUniform) {
    rlx_attrs_RngUniform a;
    rlx_attrs_init(op, &a);
    a.low = -2.0f, a.high = 3.0f, a.key = key;
    a.op_seed = (rlx_of32){.has = op_seed, .v = 1.25f};
    CHECK_OK(rlx_graph_add(g, op, NULL, 0, &a, &sh, NULL, &y));
  } else {
    rlx_attrs_RngNormal a;
    rlx_attrs_init(op, &a);
    a.mean = 0.5f, a.scale = 2.0f, a.key = key;
    a.op_seed = (rlx_of32){.has = op_seed, .v = -3.5f};
    CHECK_OK(rlx_graph_add(g, op, NULL, 0, &a, &sh, NULL, &y));
  }
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  size_t nb = 0;
  rlx_shape_nbytes(&sh, &nb);
  unsigned char want[37 * 29 * 8], got[37 * 29 * 8];
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.rng_seed = compile_seed;
  const char *names[2] = {"cpu", "mlx"};
  unsigned char *bufs[2] = {want, got};
  for (int b = 0; b < 2; b++) {
    rlx_executable *e = NULL;
    CHECK_OK(rlx_compile(g, names[b], &o, &e));
    if (!e) continue;
    const rlx_tensor *out = NULL;
    uint32_t no = 0;
    CHECK_OK(rlx_executable_run(e, NULL, 0, &out, &no));
    if (out) memcpy(bufs[b], out[0].data, nb);
    rlx_executable_free(e);
  }
  /* native, not host-evaluated */
  mlx_prog *p = NULL;
  CHECK_OK(mlx_prog_create(g, NULL, compile_seed, &p));
  if (p) {
    mlx_prog_info info;
    mlx_prog_info_get(p, &info);
    CHECK(info.native_nodes == 1 && info.host_nodes == 0);
    mlx_prog_free(p);
  }
  size_t n = nb / rlx_dtype_size(t), bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double a = rlx_elem_get(want, t, i), b = rlx_elem_get(got, t, i);
    if (op == RLX_OP_RngUniform) {
      if (memcmp(want + i * rlx_dtype_size(t), got + i * rlx_dtype_size(t), rlx_dtype_size(t)) != 0) bad++;
    } else {
      double tol = (t == RLX_F64 ? 1e-6 : t == RLX_F32 ? 4e-6 : 1e-2) * (1 + fabs(a));
      worst = fmax(worst, fabs(a - b));
      if (!(fabs(a - b) <= tol)) bad++;
    }
  }
  if (bad && getenv("RLX_TEST_VERBOSE"))
    for (int i = 0; i < 4; i++) printf("%g %g\n", rlx_elem_get(want, t, i), rlx_elem_get(got, t, i));
  CHECK_MSG(bad == 0, "%s %s key %llu: %zu of %zu elements differ from the CPU (worst %g)", rlx_op_name(op),
            rlx_dtype_name(t), (unsigned long long)key, bad, n, worst);
  rlx_graph_free(g);
}

int main(void) {
  CHECK(rlx_backend_find("mlx") != NULL); /* built in */
  const rlx_dtype ts[4] = {RLX_F32, RLX_F64, RLX_F16, RLX_BF16};
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < 3; v++) {
      uint64_t key = v == 0 ? 0 : v == 1 ? 42 : UINT64_C(0xDEADBEEFCAFEF00D);
      one(RLX_OP_RngUniform, ts[k], key, v == 2, v == 1 ? 7 : 0);
      one(RLX_OP_RngNormal, ts[k], key, v == 2, v == 1 ? 7 : 0);
    }
  return rlx_test_finish("test_mlx_rng");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_rng: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
