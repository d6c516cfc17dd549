/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's glue to the backend contract (rlx/backend.h): everything else (the program,
 * the lowering tables, the claims, the shim) is independent of it. */
#include <stdlib.h>
#include <string.h>

#include "backends/mlx/backend.h"
#include "backends/mlx/mlx_internal.h"

typedef struct mlx_exe {
  rlx_backend_exe base;
  mlx_prog *prog;
  const rlx_graph *g;
  rlxm_scope *params; /* owns the bound parameter arrays */
} mlx_exe;

static void mlx_destroy(rlx_backend_exe *bx) {
  mlx_exe *x = (mlx_exe *)bx;
  if (!x) return;
  mlx_prog_free(x->prog);
  rlxm_scope_free(x->params);
  free(x);
}

static rlx_status mlx_set_param(rlx_backend_exe *bx, uint32_t node, const char *name, const rlx_tensor *value) {
  mlx_exe *x = (mlx_exe *)bx;
  (void)name;
  if (node == RLX_NO_ID) return RLX_OK; /* not in the compiled graph */
  int dt;
  uint32_t rank;
  int64_t d[RLX_MAX_RANK];
  mlx_storage_of(&value->shape, &dt, &rank, d);
  rlxm_arr *a = rlxm_from_host(x->params, value->data, dt, rank, d);
  if (!a) return rlx_errorf(RLX_ERR_RUNTIME, "mlx: param '%s': %s", name ? name : "?", rlxm_error());
  return mlx_prog_bind_param(x->prog, node, a);
}

static rlx_status mlx_run(rlx_backend_exe *bx, const uint32_t *in_nodes, const rlx_tensor *inputs, uint32_t n_inputs,
                          rlx_tensor *outputs, uint32_t n_outputs) {
  mlx_exe *x = (mlx_exe *)bx;
  uint32_t ni = mlx_prog_input_count(x->prog);
  rlxm_scope *s = rlxm_scope_new();
  rlxm_arr **in = calloc(ni ? ni : 1, sizeof *in), **out = calloc(n_outputs ? n_outputs : 1, sizeof *out);
  rlx_status st = s && in && out ? RLX_OK : rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  for (uint32_t i = 0; st == RLX_OK && i < n_inputs; i++) {
    uint32_t k = 0;
    while (k < ni && mlx_prog_input_node(x->prog, k) != in_nodes[i]) k++;
    if (k == ni) continue; /* an input the compiled graph does not read */
    int dt;
    uint32_t rank;
    int64_t d[RLX_MAX_RANK];
    mlx_storage_of(&inputs[i].shape, &dt, &rank, d);
    in[k] = rlxm_from_host(s, inputs[i].data, dt, rank, d);
    if (!in[k]) st = rlx_errorf(RLX_ERR_RUNTIME, "mlx: input %u: %s", i, rlxm_error());
  }
  for (uint32_t k = 0; st == RLX_OK && k < ni; k++)
    if (!in[k]) st = rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: input node %u has no value", mlx_prog_input_node(x->prog, k));
  if (st == RLX_OK) st = mlx_prog_run(x->prog, s, in, ni, out, n_outputs);
  for (uint32_t i = 0; st == RLX_OK && i < n_outputs; i++) {
    size_t nb = 0;
    rlx_shape_nbytes(&outputs[i].shape, &nb);
    if (rlxm_nbytes(out[i]) != nb)
      st = rlx_errorf(RLX_ERR_INTERNAL, "mlx: output %u has %zu bytes, %zu expected", i, rlxm_nbytes(out[i]), nb);
    else if (rlxm_read(out[i], 0, outputs[i].data, nb) != 0)
      st = rlx_errorf(RLX_ERR_RUNTIME, "mlx: output %u: %s", i, rlxm_error());
  }
  free(in);
  free(out);
  rlxm_scope_free(s);
  return st;
}

static const rlx_backend_exe_vtable mlx_vt = {
    .set_param = mlx_set_param,
    .run = mlx_run,
    .destroy = mlx_destroy,
};

static rlx_status mlx_compile(const rlx_backend *b, const rlx_graph *g, const struct rlx_plan *plan,
                              const rlx_compile_options *opt, rlx_backend_exe **out) {
  (void)b, (void)plan;
  *out = NULL;
  mlx_exe *x = calloc(1, sizeof *x);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  x->base.vt = &mlx_vt;
  x->g = g;
  x->params = rlxm_scope_new();
  rlx_mlx_options o;
  rlx_mlx_options_init(&o);
  const char *env = getenv("RLX_MLX_MODE");
  if (env && strcmp(env, "eager") == 0) o.mode = RLX_MLX_EAGER;
  else if (env && strcmp(env, "compiled") == 0) o.mode = RLX_MLX_COMPILED;
  rlx_status st = x->params ? mlx_prog_create(g, &o, opt ? opt->rng_seed : 0, &x->prog)
                            : rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  if (st != RLX_OK) {
    mlx_destroy(&x->base);
    return st;
  }
  *out = &x->base;
  return RLX_OK;
}

static bool mlx_available(void) { return true; }

static rlx_backend mlx_record;

const rlx_backend *rlx_mlx_backend(void) {
  if (!mlx_record.name) {
    uint32_t n = 0;
    const rlx_op *claims = rlx_mlx_claim_list(&n);
    mlx_record = (rlx_backend){.name = "mlx", .available = mlx_available, .claims = claims, .n_claims = n,
                               .compile = mlx_compile};
  }
  return &mlx_record;
}
