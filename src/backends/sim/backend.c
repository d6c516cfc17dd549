/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* "sim": a test backend that behaves like a device, built in every configuration, so that the
 * backend seam is exercised in CI without hardware (docs/backends.md).
 *
 *   - Its memory is its own: buffers are opaque records (the runtime cannot read them), every
 *     executable has an arena sized by the memory plan, and every byte that enters or leaves goes
 *     through upload / download / copy, which are counted (rlx_sim_counters).
 *   - It claims a subset of the kinds: the kinds in `decomposed_kinds` are left unclaimed so the
 *     shared decompositions replace them, the kinds in `staged_kinds` are claimed as host-staged
 *     (the runtime runs them on the "cpu" backend) and If/While/Scan and the Scan backwards are
 *     runtime control (the runtime runs their bodies here).
 *   - Its "device kernels" are the CPU reference kernels, run on its own arena (one thread). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/sim/sim.h"
#include "passes/passes.h"

#define SIM_MAGIC 0x53494d42u /* "SIMB" */
#define SIM_ALIGN 64u

typedef struct sim_buf {
  uint32_t magic;
  size_t bytes;
  void *block; /* device memory */
  uint8_t *data;
} sim_buf;

static _Atomic uint64_t c_uploads, c_upload_bytes, c_downloads, c_download_bytes, c_copies, c_copy_bytes;

void rlx_sim_counters(rlx_sim_counts *out) {
  out->uploads = c_uploads;
  out->upload_bytes = c_upload_bytes;
  out->downloads = c_downloads;
  out->download_bytes = c_download_bytes;
  out->copies = c_copies;
  out->copy_bytes = c_copy_bytes;
}

typedef struct sim_thunk {
  const rlx_node *node;
  rlx_cpu_kernel kernel;
  const rlx_tensor *in;
  rlx_tensor out;
} sim_thunk;

typedef struct sim_exe {
  rlx_backend_exe base;
  rlx_allocator al;
  const rlx_graph *g;
  const rlx_plan *plan;
  sim_buf arena;
  sim_thunk *thunks;
  uint32_t n_thunks;
  rlx_tensor *pool;
  rlx_id *input_nodes;
  uint32_t n_input_nodes;
  rlx_cpu_ctx ctx;
} sim_exe;

static rlx_status check_buf(const sim_buf *b, size_t offset, size_t n, const char *what) {
  if (!b || b->magic != SIM_MAGIC) return rlx_errorf(RLX_ERR_INTERNAL, "sim: %s: not a sim buffer", what);
  if (offset > b->bytes || n > b->bytes - offset)
    return rlx_errorf(RLX_ERR_INTERNAL, "sim: %s of bytes [%zu, %zu) outside a buffer of %zu bytes", what, offset,
                      offset + n, b->bytes);
  return RLX_OK;
}

static rlx_status sim_buf_init(const rlx_allocator *al, size_t bytes, sim_buf *b) {
  b->magic = SIM_MAGIC;
  b->bytes = bytes;
  size_t block;
  if (!rlx_add_size(bytes, SIM_ALIGN, &block)) return rlx_errorf(RLX_ERR_OVERFLOW, "sim: %zu bytes overflow", bytes);
  b->block = al->alloc(al->ctx, block);
  if (!b->block) return rlx_errorf(RLX_ERR_OOM, "sim: out of device memory for %zu bytes", bytes);
  b->data = (uint8_t *)(((uintptr_t)b->block + (SIM_ALIGN - 1)) & ~(uintptr_t)(SIM_ALIGN - 1));
  return RLX_OK;
}

static rlx_status sim_buffer_alloc(rlx_backend_exe *bx, size_t bytes, rlx_buffer_handle *out) {
  sim_exe *x = (sim_exe *)bx;
  sim_buf *b = x->al.alloc(x->al.ctx, sizeof *b);
  if (!b) return rlx_errorf(RLX_ERR_OOM, "sim: out of memory");
  rlx_status st = sim_buf_init(&x->al, bytes, b);
  if (st != RLX_OK) {
    x->al.free(x->al.ctx, b);
    return st;
  }
  *out = b;
  return RLX_OK;
}

static void sim_buffer_free(rlx_backend_exe *bx, rlx_buffer_handle h) {
  sim_exe *x = (sim_exe *)bx;
  sim_buf *b = h;
  if (!b) return;
  b->magic = 0;
  x->al.free(x->al.ctx, b->block);
  x->al.free(x->al.ctx, b);
}

static rlx_status sim_upload(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, const void *src, size_t n) {
  (void)bx;
  sim_buf *b = h;
  RLX_TRY(check_buf(b, offset, n, "upload"));
  if (n) memcpy(b->data + offset, src, n);
  c_uploads++;
  c_upload_bytes += n;
  return RLX_OK;
}

static rlx_status sim_download(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, void *dst, size_t n) {
  (void)bx;
  const sim_buf *b = h;
  RLX_TRY(check_buf(b, offset, n, "download"));
  if (n) memcpy(dst, b->data + offset, n);
  c_downloads++;
  c_download_bytes += n;
  return RLX_OK;
}

static rlx_status sim_copy(rlx_backend_exe *bx, rlx_buffer_handle dst, size_t dst_offset, rlx_buffer_handle src,
                           size_t src_offset, size_t n) {
  (void)bx;
  sim_buf *d = dst;
  const sim_buf *s = src;
  RLX_TRY(check_buf(d, dst_offset, n, "copy (destination)"));
  RLX_TRY(check_buf(s, src_offset, n, "copy (source)"));
  if (n) memmove(d->data + dst_offset, s->data + src_offset, n);
  c_copies++;
  c_copy_bytes += n;
  return RLX_OK;
}

/* ---- executables ---- */

static void sim_destroy(rlx_backend_exe *bx) {
  sim_exe *x = (sim_exe *)bx;
  if (!x) return;
  x->al.free(x->al.ctx, x->arena.block);
  x->al.free(x->al.ctx, x->thunks);
  x->al.free(x->al.ctx, x->pool);
  x->al.free(x->al.ctx, x->input_nodes);
  x->al.free(x->al.ctx, x);
}

static rlx_status sim_bind_param(rlx_backend_exe *bx, uint32_t node, rlx_buffer_handle h) {
  sim_exe *x = (sim_exe *)bx;
  if (node >= x->plan->n_nodes || rlx_graph_node(x->g, node)->op != RLX_OP_Param)
    return rlx_errorf(RLX_ERR_INTERNAL, "sim: node %%%u is not a Param", node);
  return sim_copy(bx, &x->arena, x->plan->offset[node], h, 0, x->plan->size[node]);
}

static rlx_status sim_run(rlx_backend_exe *bx, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                          const rlx_buffer_handle *outputs, uint32_t n_outputs) {
  sim_exe *x = (sim_exe *)bx;
  const rlx_plan *p = x->plan;
  if (n_inputs != x->n_input_nodes || n_outputs != rlx_graph_output_count(x->g))
    return rlx_errorf(RLX_ERR_INTERNAL, "sim: %u inputs and %u outputs for a graph of %u and %u", n_inputs, n_outputs,
                      x->n_input_nodes, rlx_graph_output_count(x->g));
  for (uint32_t i = 0; i < n_inputs; i++) {
    rlx_id id = x->input_nodes[i];
    RLX_TRY(sim_copy(bx, &x->arena, p->offset[id], inputs[i], 0, p->size[id]));
  }
  for (uint32_t k = 0; k < x->n_thunks; k++) {
    sim_thunk *t = &x->thunks[k];
    rlx_tensor o = t->out;
    rlx_status st = t->kernel(t->node, t->in, t->node->n_inputs, &o, &x->ctx);
    if (st != RLX_OK) return rlx_error_context(st, "sim: graph '%s'", rlx_graph_name(x->g));
  }
  const rlx_id *outs = rlx_graph_outputs(x->g);
  for (uint32_t i = 0; i < n_outputs; i++)
    RLX_TRY(sim_copy(bx, outputs[i], 0, &x->arena, p->offset[outs[i]], p->size[outs[i]]));
  return RLX_OK;
}

static const rlx_backend_exe_vtable sim_vtable = {
    .buffer_alloc = sim_buffer_alloc,
    .buffer_free = sim_buffer_free,
    .upload = sim_upload,
    .download = sim_download,
    .copy = sim_copy,
    .sync = NULL,
    .bind_param = sim_bind_param,
    .run = sim_run,
    .destroy = sim_destroy,
};

static rlx_status sim_compile(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out) {
  (void)b;
  *out = NULL;
  const rlx_graph *g = args->graph;
  const rlx_plan *plan = args->plan;
  const rlx_allocator *al = rlx_graph_allocator(g);
  uint32_t n = rlx_graph_node_count(g);
  if (args->backend_options) return rlx_errorf(RLX_ERR_INVALID_ARG, "sim: the test backend takes no options");
  sim_exe *x = al->alloc(al->ctx, sizeof *x);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "sim: out of memory");
  memset(x, 0, sizeof *x);
  x->base.vt = &sim_vtable;
  x->al = *al;
  x->g = g;
  x->plan = plan;
  x->ctx.threads = 1;
  x->ctx.rng_seed = args->options->rng_seed;
  rlx_status st = sim_buf_init(al, plan->arena_size, &x->arena);
  uint32_t n_thunks = 0;
  size_t n_in_total = 0;
  for (rlx_id id = 0; id < n; id++) {
    const rlx_node *nd = rlx_graph_node(g, id);
    x->n_input_nodes += nd->op == RLX_OP_Input;
    if (rlx_op_has(nd->op, RLX_PROP_LEAF) || plan->root[id] != id) continue;
    if (!rlx_cpu_ref_table[nd->op] && st == RLX_OK)
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "sim: no kernel for %s", rlx_op_name(nd->op));
    n_thunks++;
    n_in_total += nd->n_inputs;
  }
  if (st == RLX_OK) {
    x->thunks = al->alloc(al->ctx, (n_thunks ? n_thunks : 1) * sizeof *x->thunks);
    x->pool = al->alloc(al->ctx, (n_in_total ? n_in_total : 1) * sizeof *x->pool);
    x->input_nodes = al->alloc(al->ctx, (x->n_input_nodes ? x->n_input_nodes : 1) * sizeof *x->input_nodes);
    if (!x->thunks || !x->pool || !x->input_nodes) st = rlx_errorf(RLX_ERR_OOM, "sim: out of memory");
  }
  uint32_t k_in = 0;
  size_t used = 0;
  for (uint32_t s = 0; st == RLX_OK && s < plan->n_schedule; s++) {
    rlx_id id = plan->schedule[s];
    const rlx_node *nd = rlx_graph_node(g, id);
    if (nd->op == RLX_OP_Constant) {
      if (nd->attrs.Constant.data.n != plan->size[id])
        st = rlx_errorf(RLX_ERR_INVALID_ARG, "sim: constant %%%u holds %zu bytes, its shape needs %zu", id,
                        nd->attrs.Constant.data.n, plan->size[id]);
      else if (plan->size[id])
        st = sim_upload(&x->base, &x->arena, plan->offset[id], nd->attrs.Constant.data.p, plan->size[id]);
    }
    if (rlx_op_has(nd->op, RLX_PROP_LEAF) || plan->root[id] != id) continue;
    sim_thunk *t = &x->thunks[x->n_thunks++];
    t->node = nd;
    t->kernel = rlx_cpu_ref_table[nd->op];
    t->in = &x->pool[used];
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      x->pool[used].data = x->arena.data + plan->offset[nd->inputs[k]];
      x->pool[used].shape = rlx_graph_node(g, nd->inputs[k])->shape;
      used++;
    }
    t->out.data = x->arena.data + plan->offset[id];
    t->out.shape = nd->shape;
  }
  for (rlx_id id = 0; st == RLX_OK && id < n; id++)
    if (rlx_graph_node(g, id)->op == RLX_OP_Input) x->input_nodes[k_in++] = id;
  if (st != RLX_OK) {
    sim_destroy(&x->base);
    return st;
  }
  *out = &x->base;
  return RLX_OK;
}

/* ---- the descriptor ---- */

/* Kinds left to the shared decompositions (when they have one), so legalization is exercised. */
static const rlx_op decomposed_kinds[] = {
    RLX_OP_Slice,
    RLX_OP_Pad,
    RLX_OP_Tile,
    RLX_OP_Trilu,
    RLX_OP_Roll,
    RLX_OP_Clamp,
    RLX_OP_KvAppend,
    RLX_OP_CumProd,
    RLX_OP_GroupNorm,
    RLX_OP_Fma,
    RLX_OP_Histogram,
    RLX_OP_AdaLayerNorm,
    RLX_OP_GatedResidual,
    RLX_OP_ElementwiseRegion,
    RLX_OP_BatchElementwiseRegion,
};
/* Kinds claimed but run on the CPU by the runtime's host staging. */
static const rlx_op staged_kinds[] = {
    RLX_OP_Sort, RLX_OP_ArgSort, RLX_OP_TopK, RLX_OP_Cholesky, RLX_OP_Det, RLX_OP_LogDet, RLX_OP_Svd, RLX_OP_Qr,
};
static const rlx_op control_kinds[] = {RLX_OP_If, RLX_OP_While, RLX_OP_Scan, RLX_OP_ScanBackward,
                                       RLX_OP_ScanBackwardXs};

static bool in_list(const rlx_op *v, size_t n, rlx_op op) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == op) return true;
  return false;
}

static rlx_op claims[RLX_OP_COUNT], staged[RLX_OP_COUNT];
static rlx_backend record;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_record(void) {
  uint32_t nc = 0, ns = 0;
  for (int k = 0; k < RLX_OP_COUNT; k++) {
    rlx_op op = (rlx_op)k;
    bool control = in_list(control_kinds, sizeof control_kinds / sizeof *control_kinds, op);
    bool leaf = rlx_op_has(op, RLX_PROP_LEAF);
    if (!leaf && !control && !rlx_cpu_ref_table[k]) continue;
    if (in_list(decomposed_kinds, sizeof decomposed_kinds / sizeof *decomposed_kinds, op) && rlx_decompose_table[k])
      continue;
    claims[nc++] = op;
    if (in_list(staged_kinds, sizeof staged_kinds / sizeof *staged_kinds, op)) staged[ns++] = op;
  }
  record = (rlx_backend){
      .name = "sim",
      .available = NULL,
      .claims = claims,
      .n_claims = nc,
      .host_staged = staged,
      .n_host_staged = ns,
      .runtime_control = control_kinds,
      .n_runtime_control = sizeof control_kinds / sizeof *control_kinds,
      .host_memory = false,
      .compile = sim_compile,
  };
}

const rlx_backend *rlx_sim_backend(void) {
  pthread_once(&once, init_record);
  return &record;
}
