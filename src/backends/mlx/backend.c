/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's glue to the backend contract (rlx/backend.h); everything else (the program,
 * the lowering tables, the claims, the shim) is independent of it.
 *
 * Buffers are kept MLX arrays (boxes): buffer_alloc makes a materialized byte array, upload
 * writes into it (copy-on-write when the array is shared), a run views input buffers as their
 * Input's dtype and shape (no copy) and makes each output box refer to the result array (no
 * copy), bind_param keeps a view of the buffer (zero copy), and a whole-buffer device copy shares
 * the array. Every run evaluates its outputs, so the vtable needs no sync.
 *
 * Control flow is the backend's own, as the document says: If evaluates both branches and
 * selects, While is unrolled up to max_iterations with an active mask (without max_iterations it
 * is a compile error naming the node), Scan / ScanBackward / ScanBackwardXs are unrolled
 * statically (program.c lowers them through their shared decompositions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/mlx/backend.h"
#include "backends/mlx/mlx_internal.h"

typedef struct mlx_exe {
  rlx_backend_exe base;
  mlx_prog *prog;
  const rlx_graph *g;
  uint32_t n_out;
} mlx_exe;

static rlx_status buf_alloc(rlx_backend_exe *bx, size_t bytes, rlx_buffer_handle *out) {
  (void)bx;
  rlxm_arr *a = rlxm_bytes_new(bytes);
  if (!a) return rlx_errorf(RLX_ERR_OOM, "mlx: cannot allocate a buffer of %zu bytes: %s", bytes, rlxm_error());
  *out = a;
  return RLX_OK;
}

static void buf_free(rlx_backend_exe *bx, rlx_buffer_handle h) {
  (void)bx;
  rlxm_release(h);
}

static rlx_status buf_upload(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, const void *src, size_t n) {
  (void)bx;
  if (rlxm_write(h, offset, src, n) != 0) return rlx_errorf(RLX_ERR_RUNTIME, "mlx: upload: %s", rlxm_error());
  return RLX_OK;
}

static rlx_status buf_download(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, void *dst, size_t n) {
  (void)bx;
  if (rlxm_read(h, offset, dst, n) != 0) return rlx_errorf(RLX_ERR_RUNTIME, "mlx: download: %s", rlxm_error());
  return RLX_OK;
}

static rlx_status buf_copy(rlx_backend_exe *bx, rlx_buffer_handle dst, size_t dst_offset, rlx_buffer_handle src,
                           size_t src_offset, size_t n) {
  (void)bx;
  if (dst_offset == 0 && src_offset == 0 && n == rlxm_nbytes(dst) && n == rlxm_nbytes(src)) {
    rlxm_assign(dst, src); /* share the array; a later write to either copies first */
    return RLX_OK;
  }
  void *tmp = malloc(n ? n : 1);
  if (!tmp) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory copying %zu bytes", n);
  rlx_status st = RLX_OK;
  if (rlxm_read(src, src_offset, tmp, n) != 0 || rlxm_write(dst, dst_offset, tmp, n) != 0)
    st = rlx_errorf(RLX_ERR_RUNTIME, "mlx: copy: %s", rlxm_error());
  free(tmp);
  return st;
}

/* A scoped view of buffer h as the value of node `id`. */
static rlxm_arr *view_as(rlxm_scope *s, rlx_buffer_handle h, const rlx_shape *shape) {
  int dt;
  uint32_t rank;
  int64_t dims[RLX_MAX_RANK];
  mlx_storage_of(shape, &dt, &rank, dims);
  return rlxm_as(s, h, dt, rank, dims);
}

static rlx_status mlx_bind_param(rlx_backend_exe *bx, uint32_t node, rlx_buffer_handle h) {
  mlx_exe *x = (mlx_exe *)bx;
  const rlx_node *n = rlx_graph_node(x->g, node);
  if (!n || n->op != RLX_OP_Param)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: bind_param: node %u is not a Param", node);
  rlxm_scope *s = rlxm_scope_new();
  if (!s) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  rlxm_arr *v = view_as(s, h, &n->shape);
  rlx_status st = v ? mlx_prog_bind_param(x->prog, node, v)
                    : rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: Param '%s': %s", n->attrs.Param.name, rlxm_error());
  rlxm_scope_free(s);
  return st;
}

static rlx_status mlx_run(rlx_backend_exe *bx, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                          const rlx_buffer_handle *outputs, uint32_t n_outputs) {
  mlx_exe *x = (mlx_exe *)bx;
  uint32_t ni = mlx_prog_input_count(x->prog);
  if (n_inputs != ni || n_outputs != x->n_out)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: run with %u inputs / %u outputs; the graph has %u / %u", n_inputs,
                      n_outputs, ni, x->n_out);
  rlxm_scope *s = rlxm_scope_new();
  rlxm_arr **in = calloc(ni ? ni : 1, sizeof *in), **out = calloc(n_outputs ? n_outputs : 1, sizeof *out);
  rlx_status st = s && in && out ? RLX_OK : rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  for (uint32_t k = 0; st == RLX_OK && k < ni; k++) {
    const rlx_node *n = rlx_graph_node(x->g, mlx_prog_input_node(x->prog, k));
    in[k] = view_as(s, inputs[k], &n->shape);
    if (!in[k]) st = rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: Input '%s': %s", n->attrs.Input.name, rlxm_error());
  }
  if (st == RLX_OK) st = mlx_prog_run(x->prog, s, in, ni, out, n_outputs);
  for (uint32_t i = 0; st == RLX_OK && i < n_outputs; i++) {
    if (rlxm_nbytes(out[i]) != rlxm_nbytes(outputs[i]))
      st = rlx_errorf(RLX_ERR_INTERNAL, "mlx: output %u has %zu bytes, its buffer %zu", i, rlxm_nbytes(out[i]),
                      rlxm_nbytes(outputs[i]));
    else
      rlxm_assign(outputs[i], out[i]); /* the output buffer now is the result array */
  }
  free(in);
  free(out);
  rlxm_scope_free(s);
  return st;
}

static void mlx_destroy(rlx_backend_exe *bx) {
  mlx_exe *x = (mlx_exe *)bx;
  if (!x) return;
  mlx_prog_free(x->prog);
  free(x);
}

static const rlx_backend_exe_vtable mlx_vt = {
    .buffer_alloc = buf_alloc,
    .buffer_free = buf_free,
    .upload = buf_upload,
    .download = buf_download,
    .copy = buf_copy,
    .sync = NULL,
    .bind_param = mlx_bind_param,
    .run = mlx_run,
    .destroy = mlx_destroy,
};

static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && v[0] && strcmp(v, "0") != 0;
}

static rlx_status mlx_compile(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out) {
  (void)b;
  *out = NULL;
  rlx_mlx_options o;
  rlx_mlx_options_init(&o);
  if (args->backend_options) o = *(const rlx_mlx_options *)args->backend_options;
  const char *env = getenv("RLX_MLX_MODE"); /* overrides the options (debugging) */
  if (env && strcmp(env, "eager") == 0)
    o.mode = RLX_MLX_EAGER;
  else if (env && strcmp(env, "compiled") == 0)
    o.mode = RLX_MLX_COMPILED;
  else if (env && strcmp(env, "lazy") == 0)
    o.mode = RLX_MLX_LAZY;
  mlx_exe *x = calloc(1, sizeof *x);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  x->base.vt = &mlx_vt;
  x->g = args->graph;
  x->n_out = rlx_graph_output_count(args->graph);
  rlx_status st = mlx_prog_create(args->graph, &o, args->options ? args->options->rng_seed : 0, &x->prog);
  if (st != RLX_OK) {
    free(x);
    return st;
  }
  if (env_on("RLX_DISPATCH_REPORT") || env_on("RLX_VERBOSE")) {
    mlx_prog_info info;
    mlx_prog_info_get(x->prog, &info);
    fprintf(stderr,
            "mlx: graph '%s': %u native, %u composed (shared decomposition lowered natively), %u host-evaluated nodes; "
            "%s\n",
            rlx_graph_name(args->graph), info.native_nodes, info.composed_nodes, info.host_nodes, info.mode_note);
  }
  *out = &x->base;
  return RLX_OK;
}

static bool mlx_available(const char **why) {
  (void)why;
  return true; /* mlx-cpu needs no device */
}

static rlx_backend mlx_record;

const rlx_backend *rlx_mlx_backend(void) {
  if (!mlx_record.name) {
    uint32_t n = 0;
    const rlx_op *claims = rlx_mlx_claim_list(&n);
    mlx_record = (rlx_backend){
        .name = "mlx",
        .available = mlx_available,
        .claims = claims,
        .n_claims = n,
        .runtime_control = NULL, /* no kind: the backend unrolls its control flow itself */
        .n_runtime_control = 0,
        .host_memory = false,
        .compile = mlx_compile,
    };
  }
  return &mlx_record;
}
