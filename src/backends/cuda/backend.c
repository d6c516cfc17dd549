/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's contract glue (rlx/backend.h): the descriptor, options, availability, and
 * the executable's buffer and run entry points. Buffers are device pointers (cudaMalloc); every
 * tensor of a compiled graph lives in one arena laid out by the memory plan (lower.c). A run
 * copies the inputs and bound parameters into their arena slots, queues the kernels, and copies
 * the outputs into the runtime's buffers, all on one stream; sync waits and reports kernel-side
 * errors. The slot copies are skipped when they would copy what the slots already hold: the
 * same buffers as at this executable's last run, and no device buffer written since (every write
 * the runtime makes goes through upload / copy / run, which count them in g_writes; the plan
 * keeps input and parameter slots alive across runs). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/cuda.h"

void rlx_cuda_options_init(rlx_cuda_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->header.backend = "cuda";
  o->device = 0;
  o->stream = NULL;
  o->matmul = RLX_CUDA_FP32;
}

#include "backends/cuda/lower.h"

typedef struct cuda_exe {
  rlx_backend_exe base;
  rlx_cu_ctx *ctx;
  rlx_cu_prog *prog;
  const rlx_graph *g;
  rlx_id *inputs; /* Input node ids, node order */
  uint32_t n_inputs;
  void **param_buf;     /* per node id: the bound buffer of a Param (new contract) */
  void **last_in;       /* the input buffers copied at the last run */
  uint64_t last_writes; /* g_writes after the last run; 0 = never ran */
  int params_dirty;     /* a bind_param since the last run */
} cuda_exe;

/* Writes into device buffers of any cuda executable in this process (see the top of the file). */
static _Atomic uint64_t g_writes = 1;
static uint64_t bump_writes(void) { return atomic_fetch_add(&g_writes, 1) + 1; }

static void cuda_destroy(rlx_backend_exe *bx) {
  cuda_exe *x = (cuda_exe *)bx;
  if (!x) return;
  if (x->ctx) (void)rlx_cu_sync(x->ctx);
  rlx_cu_prog_destroy(x->prog);
  rlx_cu_ctx_destroy(x->ctx);
  free(x->inputs);
  free(x->param_buf);
  free(x->last_in);
  free(x);
}

static const rlx_cuda_options *options_of(const void *backend_options, rlx_cuda_options *defaults) {
  rlx_cuda_options_init(defaults);
  return backend_options ? (const rlx_cuda_options *)backend_options : defaults;
}

static rlx_status exe_create(const rlx_graph *g, const rlx_plan *plan, const rlx_cuda_options *o, uint64_t rng_seed,
                             cuda_exe **out) {
  *out = NULL;
  cuda_exe *x = calloc(1, sizeof *x);
  uint32_t n = rlx_graph_node_count(g);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  x->g = g;
  x->inputs = calloc(n ? n : 1, sizeof *x->inputs);
  x->param_buf = calloc(n ? n : 1, sizeof *x->param_buf);
  x->last_in = calloc(n ? n : 1, sizeof *x->last_in);
  if (!x->inputs || !x->param_buf || !x->last_in) {
    cuda_destroy(&x->base);
    return rlx_errorf(RLX_ERR_OOM, "cuda: out of host memory");
  }
  for (rlx_id id = 0; id < n; id++)
    if (rlx_graph_node(g, id)->op == RLX_OP_Input) x->inputs[x->n_inputs++] = id;
  rlx_status st = rlx_cu_ctx_create(o->device, o->stream, (int)o->matmul, &x->ctx);
  if (st == RLX_OK) st = rlx_cu_prog_create(x->ctx, g, plan, rng_seed, &x->prog);
  if (st != RLX_OK) {
    cuda_destroy(&x->base);
    return st;
  }
  *out = x;
  return RLX_OK;
}

static rlx_status copy_outputs_back(cuda_exe *x, void *const *outputs, uint32_t n_outputs) {
  const rlx_id *outs = rlx_graph_outputs(x->g);
  if (n_outputs != rlx_graph_output_count(x->g))
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: %u output buffers for %u outputs", n_outputs,
                      rlx_graph_output_count(x->g));
  for (uint32_t i = 0; i < n_outputs; i++) {
    void *src = rlx_cu_prog_addr(x->prog, outs[i]);
    size_t bytes = rlx_cu_prog_size(x->prog, outs[i]);
    rlx_status st = rlx_cu_d2d(x->ctx, outputs[i], src, bytes);
    if (st != RLX_OK) return st;
  }
  return RLX_OK;
}

/* ---- the device-buffer contract ---- */

static rlx_status cuda_buffer_alloc(rlx_backend_exe *bx, size_t bytes, rlx_buffer_handle *out) {
  return rlx_cu_malloc(((cuda_exe *)bx)->ctx, bytes, out);
}
static void cuda_buffer_free(rlx_backend_exe *bx, rlx_buffer_handle h) { rlx_cu_free(((cuda_exe *)bx)->ctx, h); }
static rlx_status cuda_upload(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, const void *src, size_t n) {
  bump_writes();
  return rlx_cu_h2d(((cuda_exe *)bx)->ctx, (char *)h + offset, src, n);
}
static rlx_status cuda_download(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, void *dst, size_t n) {
  return rlx_cu_d2h(((cuda_exe *)bx)->ctx, dst, (const char *)h + offset, n);
}
static rlx_status cuda_copy(rlx_backend_exe *bx, rlx_buffer_handle dst, size_t dst_offset, rlx_buffer_handle src,
                            size_t src_offset, size_t n) {
  bump_writes();
  return rlx_cu_d2d(((cuda_exe *)bx)->ctx, (char *)dst + dst_offset, (const char *)src + src_offset, n);
}
static rlx_status cuda_sync(rlx_backend_exe *bx) { return rlx_cu_sync(((cuda_exe *)bx)->ctx); }

static rlx_status cuda_bind_param(rlx_backend_exe *bx, uint32_t node, rlx_buffer_handle h) {
  cuda_exe *x = (cuda_exe *)bx;
  if (node >= rlx_graph_node_count(x->g) || rlx_graph_node(x->g, node)->op != RLX_OP_Param)
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: bind_param: node %%%u is not a Param", node);
  x->param_buf[node] = h; /* read at every run: the runtime may update the buffer between runs */
  x->params_dirty = 1;
  return RLX_OK;
}

static rlx_status cuda_run(rlx_backend_exe *bx, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                           const rlx_buffer_handle *outputs, uint32_t n_outputs) {
  cuda_exe *x = (cuda_exe *)bx;
  if (n_inputs != x->n_inputs)
    return rlx_errorf(RLX_ERR_INTERNAL, "cuda: %u input buffers for %u inputs", n_inputs, x->n_inputs);
  /* Can the slot copies be skipped? Nothing written since the last run (whose outputs did not
   * land in an input or parameter buffer), the same input buffers, no rebinding. */
  bool fresh = x->last_writes != 0 && x->last_writes == atomic_load(&g_writes) && !x->params_dirty;
  for (uint32_t i = 0; i < n_inputs && fresh; i++) fresh = inputs[i] == x->last_in[i];
  uint32_t n = rlx_graph_node_count(x->g);
  if (!fresh) {
    for (uint32_t i = 0; i < n_inputs; i++) {
      RLX_TRY(rlx_cu_d2d(x->ctx, rlx_cu_prog_addr(x->prog, x->inputs[i]), inputs[i],
                         rlx_cu_prog_size(x->prog, x->inputs[i])));
      x->last_in[i] = inputs[i];
    }
    for (rlx_id id = 0; id < n; id++) {
      if (rlx_graph_node(x->g, id)->op != RLX_OP_Param) continue;
      if (!x->param_buf[id]) return rlx_errorf(RLX_ERR_INVALID_ARG, "cuda: Param node %%%u was never bound", id);
      RLX_TRY(rlx_cu_d2d(x->ctx, rlx_cu_prog_addr(x->prog, id), x->param_buf[id], rlx_cu_prog_size(x->prog, id)));
    }
  }
  x->last_writes = 0;
  RLX_TRY(rlx_cu_prog_run(x->prog));
  RLX_TRY(copy_outputs_back(x, (void *const *)outputs, n_outputs));
  x->params_dirty = 0;
  uint64_t w = bump_writes(); /* the outputs were written */
  bool aliased = false;
  for (uint32_t o = 0; o < n_outputs && !aliased; o++) {
    for (uint32_t i = 0; i < n_inputs && !aliased; i++) aliased = outputs[o] == inputs[i];
    for (rlx_id id = 0; id < n && !aliased; id++)
      aliased = rlx_graph_node(x->g, id)->op == RLX_OP_Param && outputs[o] == x->param_buf[id];
  }
  x->last_writes = aliased ? 0 : w;
  return RLX_OK;
}

static const rlx_backend_exe_vtable cuda_vtable = {
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_free = cuda_buffer_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .sync = cuda_sync,
    .bind_param = cuda_bind_param,
    .run = cuda_run,
    .destroy = cuda_destroy,
};

static rlx_status cuda_compile(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out) {
  (void)b;
  *out = NULL;
  rlx_cuda_options defaults;
  cuda_exe *x;
  RLX_TRY(exe_create(args->graph, args->plan, options_of(args->backend_options, &defaults),
                     args->options ? args->options->rng_seed : 0, &x));
  x->base.vt = &cuda_vtable;
  *out = &x->base;
  return RLX_OK;
}

static bool cuda_available(const char **why) { return rlx_cu_available(why) != 0; }

static rlx_backend cuda_record;

const rlx_backend *rlx_cuda_backend(void) {
  if (!cuda_record.name) {
    cuda_record.name = "cuda";
    cuda_record.available = cuda_available;
    cuda_record.claims = rlx_cu_all_claims(&cuda_record.n_claims);
    cuda_record.host_staged = rlx_cu_host_staged(&cuda_record.n_host_staged);
    cuda_record.runtime_control = rlx_cu_runtime_control(&cuda_record.n_runtime_control);
    cuda_record.compile = cuda_compile;
  }
  return &cuda_record;
}
