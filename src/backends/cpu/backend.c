/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU backend's executor.
 *
 * compile: one arena per executable, sized by the memory plan; constants are copied in once,
 * params live in their slots across runs; a thunk list (node, kernel, tensor views into the
 * arena) in schedule order. Views (nodes the plan aliases onto their root: Reshape, same-dtype
 * Cast, contiguous Narrow) get no thunk: their bytes already are where the plan says.
 * run: copy the inputs into their slots, run the thunks, copy the outputs out. Buffers are host
 * memory (malloc); bind_param copies a Param's buffer into its slot. The runtime normally borrows
 * the slots of Inputs, Params and outputs as those values' buffers (slot_buffer), and then each of
 * these copies is skipped: values are written and read where the thunks use them. If/While/Scan and the Scan
 * backwards are listed as runtime_control: the runtime runs their bodies (on this backend).
 *
 * Kernel selection (docs/cpu-backend.md): per node, at compile time, the fast kernel of
 * rlx_cpu_fast_table when the op has one and its `applies` accepts the node's static operand
 * shapes, else the reference kernel. RLX_CPU_REF_ONLY=1 in the environment selects the reference
 * kernels everywhere. The fast kernels share a worker pool of ctx.threads threads (one per
 * executable). Some chains of fast kernels then run as one fused thunk (fuse() below;
 * RLX_CPU_NO_FUSION=1 turns that off); MatMuls by a Constant B get B packed once, and Winograd convolutions by Constant weights the
 * weights transformed once (RLX_CPU_NO_PACK=1: neither). RLX_CPU_PROFILE=1 times every thunk (wall time; =cpu: the calling thread's CPU
 * time) and prints a table to stderr when the executable is freed. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "rlx/plan.h"
#include "rlx/cpu.h"
#include "strbuf.h"

#define ARENA_ALIGN 64u
#define MAX_BODY_DEPTH 64

/* How a thunk runs: its node's kernel, nothing (its node is computed by a fused thunk), or one of
 * the fused fast paths (see fuse()). */
typedef enum thunk_kind {
  TK_KERNEL,
  TK_SKIP,
  TK_MATMUL_T,      /* MatMul reading Transpose inputs directly: fin, ta / tb */
  TK_CONV_EPI,      /* Conv + bias Add (+ Relu): out = the Add's slot, aux = bias, out2 = the Relu's slot */
  TK_MPB_RELU,      /* ReluBackward(z, MaxPool2dBackward): out = the ReluBackward's slot, aux = z */
  TK_MATMUL_PACKED, /* MatMul by a Constant B packed at compile time: owned = the packed B */
  TK_ATTN_SRC,      /* Attention reading operands where they are: attn (a mask through an Expand, q/k/v as views) */
  TK_CONV_PREPARED  /* Conv by Constant weights prepared at compile time: owned = the Winograd transform */
} thunk_kind;

typedef struct cpu_thunk {
  rlx_id id;
  const rlx_node *node;
  rlx_cpu_kernel kernel;
  bool fast;            /* kernel is the node's fast kernel */
  uint8_t kind;         /* thunk_kind */
  const rlx_tensor *in; /* n_in views into the arena (in the exe's tensor pool) */
  uint32_t n_in;
  rlx_tensor out;
  /* fused thunks */
  rlx_tensor fin[2]; /* TK_MATMUL_T: the operands as stored */
  bool ta, tb;
  const void *aux;
  void *out2;
  void *out3;
  const rlx_node *aux_node;    /* TK_MPB_RELU: the bias-gradient Reduce computed on the way (or NULL) */
  rlx_id mid;                  /* TK_CONV_EPI: the Add node */
  uint8_t act;                 /* TK_CONV_EPI: the fused activation (rlx_act) */
  bool z_dead;                 /* TK_CONV_EPI: the sum is read by the activation only: not stored */
  rlx_id last;                 /* the last node of a fused group (profile and error labels) */
  float *owned;                /* TK_MATMUL_PACKED: the packed B; TK_CONV_PREPARED / TK_CONV_EPI: the Winograd
                                  weights, or NULL (freed with the executable) */
  fk_attn_src attn;            /* TK_ATTN_SRC */
  uint64_t prof_ns, prof_runs; /* RLX_CPU_PROFILE */
} cpu_thunk;

typedef struct cpu_exe {
  rlx_backend_exe base;
  rlx_allocator al;
  const rlx_graph *g;
  const rlx_plan *plan;
  void *arena_block;
  uint8_t *arena;
  cpu_thunk *thunks;
  uint32_t n_thunks;
  rlx_tensor *pool;
  rlx_cpu_ctx ctx;
  rlx_id *input_nodes; /* the graph's Input nodes, in node order */
  uint32_t n_input_nodes;
  bool profile;
  clockid_t profile_clock; /* CLOCK_MONOTONIC, or the caller's thread CPU time (RLX_CPU_PROFILE=cpu) */
} cpu_exe;

static void *cx_alloc(const rlx_allocator *al, size_t n, size_t elem) {
  size_t bytes;
  if (!rlx_mul_size(n, elem, &bytes)) return NULL;
  void *p = al->alloc(al->ctx, bytes ? bytes : 1);
  if (p) memset(p, 0, bytes ? bytes : 1);
  return p;
}

static const char *label(const rlx_graph *g, rlx_id id, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, id);
  if (n->name)
    snprintf(buf, cap, "%%%u (%s '%s')", id, rlx_op_name(n->op), n->name);
  else
    snprintf(buf, cap, "%%%u (%s)", id, rlx_op_name(n->op));
  return buf;
}

/* ---- profile ---- */

static int by_time_desc(const void *a, const void *b) {
  const cpu_thunk *x = *(const cpu_thunk *const *)a, *y = *(const cpu_thunk *const *)b;
  return (x->prof_ns < y->prof_ns) - (x->prof_ns > y->prof_ns);
}

/* One line per thunk, slowest first: share of the total, mean time per run, op, kernel, shapes. */
static void print_profile(const cpu_exe *x) {
  uint64_t total = 0, runs = 0;
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    total += x->thunks[i].prof_ns;
    if (x->thunks[i].prof_runs > runs) runs = x->thunks[i].prof_runs;
  }
  if (!runs || !x->n_thunks) return;
  const cpu_thunk **order = malloc(x->n_thunks * sizeof *order);
  if (!order) return;
  for (uint32_t i = 0; i < x->n_thunks; i++) order[i] = &x->thunks[i];
  qsort(order, x->n_thunks, sizeof *order, by_time_desc);
  fprintf(stderr, "cpu profile of graph '%s' (%s): %u thunks, %llu runs, %.3f ms per run\n", rlx_graph_name(x->g),
          x->profile_clock == CLOCK_MONOTONIC ? "wall time" : "caller's CPU time", x->n_thunks,
          (unsigned long long)runs, (double)total / (double)runs * 1e-6);
  char lb[160], sh[160];
  static const char *const kinds[] = {"",
                                      "",
                                      " (fused with Transposes)",
                                      " (fused: + bias + relu)",
                                      " (fused: + ReluBackward)",
                                      " (B packed once)",
                                      " (operands read in place)",
                                      " (Winograd weights transformed once)"};
  static const char *const with_reduce = " (fused: + ReluBackward + bias gradient)";
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    const cpu_thunk *t = order[i];
    if (t->kind == TK_SKIP) continue;
    char epi[96] = "";
    if (t->kind == TK_CONV_EPI) /* what the convolution's epilogue does */
      snprintf(epi, sizeof epi, " (fused:%s%s%s%s%s)", t->aux ? " + bias" : "", t->out2 ? " + " : "",
               t->out2 && t->act < rlx_enum_act.count ? rlx_enum_act.names[t->act] : "",
               t->z_dead ? "; the sum is not kept" : "", t->owned ? "; Winograd weights transformed once" : "");
    fprintf(stderr, "  %5.1f%% %9.3f ms  %-4s %s%s", total ? 100.0 * (double)t->prof_ns / (double)total : 0.0,
            t->prof_runs ? (double)t->prof_ns / (double)t->prof_runs * 1e-6 : 0.0, t->fast ? "fast" : "ref",
            label(x->g, t->id, lb, sizeof lb),
            t->aux_node              ? with_reduce
            : t->kind == TK_CONV_EPI ? epi
                                     : kinds[t->kind]);
    for (uint32_t k = 0; k < t->n_in; k++) {
      rlx_shape_format(&t->in[k].shape, sh, sizeof sh);
      fprintf(stderr, "%s%s", k ? ", " : " <- ", sh);
    }
    rlx_shape_format(&t->out.shape, sh, sizeof sh);
    fprintf(stderr, " -> %s\n", sh);
  }
  free(order);
}

/* ---- destroy ---- */

static void cpu_destroy(rlx_backend_exe *bx) {
  cpu_exe *x = (cpu_exe *)bx;
  if (!x) return;
  const rlx_allocator *al = &x->al;
  if (x->profile) print_profile(x);
  rlx_cpu_pool_free(x->ctx.pool);
  for (uint32_t i = 0; x->thunks && i < x->n_thunks; i++) rlx_fast_matmul_pack_free(x->thunks[i].owned);
  al->free(al->ctx, x->input_nodes);
  al->free(al->ctx, x->thunks);
  al->free(al->ctx, x->pool);
  al->free(al->ctx, x->arena_block);
  al->free(al->ctx, x);
}

/* ---- buffers and params ---- */

static rlx_status cpu_buffer_alloc(rlx_backend_exe *bx, size_t bytes, rlx_buffer_handle *out) {
  cpu_exe *x = (cpu_exe *)bx;
  void *p = x->al.alloc(x->al.ctx, bytes ? bytes : 1); /* not zeroed: written before it is read */
  if (!p) return rlx_errorf(RLX_ERR_OOM, "cpu: out of memory for a buffer of %zu bytes", bytes);
  *out = p;
  return RLX_OK;
}

static void cpu_buffer_free(rlx_backend_exe *bx, rlx_buffer_handle h) {
  cpu_exe *x = (cpu_exe *)bx;
  x->al.free(x->al.ctx, h);
}

static rlx_status cpu_upload(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, const void *src, size_t n) {
  (void)bx;
  if (n) memcpy((char *)h + offset, src, n);
  return RLX_OK;
}

static rlx_status cpu_download(rlx_backend_exe *bx, rlx_buffer_handle h, size_t offset, void *dst, size_t n) {
  (void)bx;
  if (n) memcpy(dst, (const char *)h + offset, n);
  return RLX_OK;
}

static rlx_status cpu_copy(rlx_backend_exe *bx, rlx_buffer_handle dst, size_t dst_offset, rlx_buffer_handle src,
                           size_t src_offset, size_t n) {
  (void)bx;
  if (n) memmove((char *)dst + dst_offset, (const char *)src + src_offset, n);
  return RLX_OK;
}

static rlx_status cpu_bind_param(rlx_backend_exe *bx, uint32_t node, rlx_buffer_handle h) {
  cpu_exe *x = (cpu_exe *)bx;
  if (node >= x->plan->n_nodes || rlx_graph_node(x->g, node)->op != RLX_OP_Param)
    return rlx_errorf(RLX_ERR_INTERNAL, "cpu: node %%%u is not a Param", node);
  size_t nb = x->plan->size[node];
  uint8_t *slot = x->arena + x->plan->offset[node];
  if (nb && h != slot) memcpy(slot, h, nb); /* h is the slot itself when lent by cpu_slot_buffer */
  return RLX_OK;
}

/* The arena slot of an Input, a Param or an output root, lent to the runtime as that value's
 * buffer: run and bind_param then skip their copies. Slots of empty tensors are not lent. */
static rlx_status cpu_slot_buffer(rlx_backend_exe *bx, uint32_t node, rlx_buffer_handle *out) {
  cpu_exe *x = (cpu_exe *)bx;
  if (node >= x->plan->n_nodes) return rlx_errorf(RLX_ERR_INTERNAL, "cpu: node %%%u is not in the graph", node);
  *out = x->plan->size[node] ? x->arena + x->plan->offset[node] : NULL;
  return RLX_OK;
}

/* ---- compile ---- */

static rlx_status cpu_run(rlx_backend_exe *bx, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                          const rlx_buffer_handle *outputs, uint32_t n_outputs);

static const rlx_backend_exe_vtable cpu_vtable = {
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .copy = cpu_copy,
    .sync = NULL,
    .bind_param = cpu_bind_param,
    .slot_buffer = cpu_slot_buffer,
    .run = cpu_run,
    .destroy = cpu_destroy,
};

void rlx_cpu_options_init(rlx_cpu_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->header.backend = "cpu";
  o->deterministic = true; /* costs about 1.7% at 1 thread (docs/cpu-backend.md) */
}

static int cpu_threads(int want) {
  if (want > 0) return want;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && v[0] && strcmp(v, "0") != 0;
}

/* ---- fusion of fast kernels ----
 *
 * Three patterns of a training graph run as one thunk each (docs/cpu-backend.md):
 *   Conv -> Add(per-channel bias) [-> Relu]      at the Conv's step, writing the Add's (and the
 *                                                 Relu's) tensor; the Conv's tensor is never written
 *   MaxPool2dBackward -> ReluBackward(dy) [-> Reduce sum over N, H, W (the conv bias gradient)]
 *                                                 at the MaxPool2dBackward's step
 *   Transpose(swap of the last two axes) -> MatMul  the MatMul reads the Transpose's input and
 *                                                 transposes it into scratch (chains of such
 *                                                 Transposes too); the Transpose runs only if
 *                                                 something else reads it
 * A fused thunk writes a tensor before its planned step or reads one after its planned last use.
 * The memory plan only promised those bytes for the planned interval, so every fusion is checked
 * against the effective live intervals of all other slots that share bytes (and then extends
 * them). Intermediate tensors that are never materialised must have no other reader and must not
 * be graph outputs. */

static _Atomic uint64_t fusions_made; /* fused thunks created, process-wide (tests) */

uint64_t rlx_cpu_fusion_count(void) { return fusions_made; }

static _Atomic uint64_t packs_made; /* MatMuls with a packed constant B, process-wide (tests) */

uint64_t rlx_cpu_pack_count(void) { return packs_made; }

typedef struct fuse_state {
  const rlx_graph *g;
  const rlx_plan *p;
  uint32_t n;
  uint32_t *step;   /* schedule step of each node */
  int32_t *thunk;   /* thunk index of each node, -1 for none */
  uint32_t *uses;   /* readers of each node (views count as readers) */
  uint32_t *use_at; /* CSR offsets into users */
  rlx_id *users;
  bool *is_out;
  uint32_t *first, *last; /* effective live interval of each root */
  bool *dead;             /* root never written (its producer is fused away) */
  bool *kept;             /* tensor a fused thunk reads directly: its producer must run */
  bool *relu_masked;      /* ReluBackward fused with its mask read from relu(z), not from z */
  /* Roots listed by their current first and last step (doubly linked, heads per step), so that
   * interval_free looks only at the roots whose interval ends (starts) in the part of the query
   * window outside the root's own interval; NULL = no memory, interval_free scans. */
  rlx_id *by_first, *by_last; /* heads, per step 0..n */
  rlx_id *nf_next, *nf_prev, *nl_next, *nl_prev;
  bool *scan_only; /* shares a step with another root in the same bytes (in-place): scan for it */
} fuse_state;

static void list_unlink(rlx_id *head, rlx_id *next, rlx_id *prev, uint32_t key, rlx_id x) {
  if (prev[x] != RLX_NO_ID)
    next[prev[x]] = next[x];
  else
    head[key] = next[x];
  if (next[x] != RLX_NO_ID) prev[next[x]] = prev[x];
}

static void list_link(rlx_id *head, rlx_id *next, rlx_id *prev, uint32_t key, rlx_id x) {
  prev[x] = RLX_NO_ID;
  next[x] = head[key];
  if (head[key] != RLX_NO_ID) prev[head[key]] = x;
  head[key] = x;
}

static void set_first(fuse_state *f, rlx_id x, uint32_t v) {
  if (f->by_first) {
    list_unlink(f->by_first, f->nf_next, f->nf_prev, f->first[x], x);
    list_link(f->by_first, f->nf_next, f->nf_prev, v, x);
  }
  f->first[x] = v;
}

static void set_last(fuse_state *f, rlx_id x, uint32_t v) {
  if (f->by_last) {
    list_unlink(f->by_last, f->nl_next, f->nl_prev, f->last[x], x);
    list_link(f->by_last, f->nl_next, f->nl_prev, v, x);
  }
  f->last[x] = v;
}

static bool bytes_overlap(const rlx_plan *p, rlx_id a, rlx_id b) {
  return p->offset[a] < p->offset[b] + p->size[b] && p->offset[b] < p->offset[a] + p->size[a];
}

/* Does root x (not r, not ignored, written, sized) live during [a, b] in bytes of r? */
static bool blocks(const fuse_state *f, rlx_id x, rlx_id r, uint32_t a, uint32_t b, rlx_id ignore, rlx_id ignore2) {
  const rlx_plan *p = f->p;
  if (x == r || x == ignore || x == ignore2 || p->root[x] != x || f->dead[x] || p->size[x] == 0) return false;
  return f->first[x] <= b && a <= f->last[x] && bytes_overlap(p, x, r);
}

/* May root r be live over [a, b] without meeting another live root that shares its bytes (roots
 * `ignore` and `ignore2` aside)?
 * Roots in the same bytes have disjoint intervals (the plan's guarantee, kept by every fusion,
 * which extends an interval only after this check; the in-place MaxPool2dBackward case, whose
 * two roots share a step, marks both scan_only). So a root in r's bytes that meets [a, b] lies
 * wholly before r's interval and ends in [a, first[r]), or wholly after it and starts in
 * (last[r], b]: only the roots listed at those steps are looked at. */
static bool interval_free(const fuse_state *f, rlx_id r, uint32_t a, uint32_t b, rlx_id ignore, rlx_id ignore2) {
  const rlx_plan *p = f->p;
  if (p->size[r] == 0) return true;
  if (!f->by_first || f->scan_only[r] || f->dead[r]) {
    for (rlx_id x = 0; x < f->n; x++)
      if (blocks(f, x, r, a, b, ignore, ignore2)) return false;
    return true;
  }
  for (uint32_t t = a; t <= b && t < f->first[r]; t++)
    for (rlx_id x = f->by_last[t]; x != RLX_NO_ID; x = f->nl_next[x])
      if (blocks(f, x, r, a, b, ignore, ignore2)) return false;
  for (uint32_t t = a > f->last[r] + 1 ? a : f->last[r] + 1; t <= b && t <= f->n; t++)
    for (rlx_id x = f->by_first[t]; x != RLX_NO_ID; x = f->nf_next[x])
      if (blocks(f, x, r, a, b, ignore, ignore2)) return false;
  return true;
}

/* The only reader of node id, or RLX_NO_ID. */
static rlx_id sole_user(const fuse_state *f, rlx_id id) {
  return f->uses[id] == 1 && !f->is_out[id] ? f->users[f->use_at[id]] : RLX_NO_ID;
}

/* Is u an activation the conv epilogue fuses, run by its own kernel thunk, over a sum of `shape`? */
static bool fusable_act(const cpu_exe *x, const fuse_state *f, rlx_id u, const rlx_shape *shape) {
  const rlx_node *un = rlx_graph_node(f->g, u);
  return un->op == RLX_OP_Activation && fk_conv_act_ok((rlx_act)un->attrs.Activation.kind) && f->p->root[u] == u &&
         f->thunk[u] >= 0 && x->thunks[f->thunk[u]].kind == TK_KERNEL && rlx_shape_equal(&un->shape, shape);
}

/* Conv -> activation, the Conv read by nothing else (a convolution without bias, or whose zero
 * bias was simplified away): the activation is written, the convolution's own result is not. */
static void fuse_conv_act(cpu_exe *x, fuse_state *f, cpu_thunk *t, rlx_id act) {
  const rlx_plan *p = f->p;
  rlx_id c = t->id;
  if (p->root[c] != c || !rlx_fast_conv_epilogue_applies(t->node, t->in, t->n_in, NULL)) return;
  uint32_t s = f->step[c];
  if (!interval_free(f, act, s, f->last[act], c, RLX_NO_ID)) return;
  set_first(f, act, s);
  f->dead[c] = true;
  t->kind = TK_CONV_EPI;
  t->mid = act;
  t->out.data = x->arena + p->offset[act];
  t->aux = NULL;
  t->out2 = t->out.data;
  t->act = (uint8_t)rlx_graph_node(f->g, act)->attrs.Activation.kind;
  t->z_dead = true;
  t->last = act;
  fusions_made++;
  x->thunks[f->thunk[act]].kind = TK_SKIP;
}

/* Conv -> Add(bias) [-> Relu | HardSwish | HardSigmoid], or Conv -> activation. */
static void fuse_conv(cpu_exe *x, fuse_state *f, cpu_thunk *t) {
  const rlx_plan *p = f->p;
  rlx_id c = t->id, add = sole_user(f, c);
  if (add == RLX_NO_ID || f->thunk[add] < 0) return;
  if (fusable_act(x, f, add, &t->out.shape)) {
    fuse_conv_act(x, f, t, add);
    return;
  }
  const rlx_node *an = rlx_graph_node(f->g, add);
  if (an->op != RLX_OP_Binary || an->attrs.Binary.op != RLX_BINOP_ADD || !rlx_shape_equal(&an->shape, &t->out.shape))
    return;
  rlx_id bias = an->inputs[0] == c ? an->inputs[1] : an->inputs[0];
  if (bias == c) return;
  const rlx_node *bn = rlx_graph_node(f->g, bias);
  if (!rlx_fast_conv_epilogue_applies(t->node, t->in, t->n_in, &bn->shape)) return;
  uint32_t s = f->step[c];
  if (f->first[p->root[bias]] >= s) return; /* the bias must exist before the Conv runs */
  /* an optional activation reader of the sum */
  rlx_id relu = RLX_NO_ID;
  for (uint32_t k = f->use_at[add]; k < f->use_at[add + 1] && relu == RLX_NO_ID; k++) {
    rlx_id u = f->users[k];
    if (fusable_act(x, f, u, &an->shape)) relu = u;
  }
  /* the activation is the only reader of the sum (views count as readers), which is no output:
     the sum is never written, only the activation (which may have the sum's bytes: in place) */
  bool z_dead = relu != RLX_NO_ID && sole_user(f, add) == relu && p->root[add] == add;
  if (z_dead && interval_free(f, relu, s, f->last[relu], c, add)) {
    set_first(f, relu, s);
    f->dead[add] = true;
  } else {
    z_dead = false;
    if (!interval_free(f, add, s, f->last[add], c, RLX_NO_ID)) return;
    set_first(f, add, s);
    if (relu != RLX_NO_ID) {
      if (interval_free(f, relu, s, f->last[relu], c, RLX_NO_ID))
        set_first(f, relu, s);
      else
        relu = RLX_NO_ID;
    }
  }
  t->mid = add;
  f->dead[c] = true;
  t->kind = TK_CONV_EPI;
  t->out.data = x->arena + p->offset[add];
  t->aux = x->arena + p->offset[bias];
  t->out2 = relu != RLX_NO_ID ? x->arena + p->offset[relu] : NULL;
  t->act = relu != RLX_NO_ID ? (uint8_t)rlx_graph_node(f->g, relu)->attrs.Activation.kind : (uint8_t)RLX_ACT_RELU;
  t->z_dead = z_dead;
  t->last = relu != RLX_NO_ID ? relu : add;
  fusions_made++;
  x->thunks[f->thunk[add]].kind = TK_SKIP;
  if (relu != RLX_NO_ID) x->thunks[f->thunk[relu]].kind = TK_SKIP;
}

/* Latest step at which a node other than `skip` reads root r (through any view); leaves and graph
 * outputs are read to the end. */
static uint32_t last_read_without(const fuse_state *f, rlx_id r, rlx_id skip) {
  const rlx_plan *p = f->p;
  uint32_t last = f->first[r];
  for (rlx_id i = 0; i < f->n; i++) {
    if (p->root[i] != r) continue;
    if (f->is_out[i] || rlx_op_has(rlx_graph_node(f->g, i)->op, RLX_PROP_LEAF)) return p->last_use[r];
    for (uint32_t k = f->use_at[i]; k < f->use_at[i + 1]; k++)
      if (f->users[k] != skip && f->step[f->users[k]] > last) last = f->step[f->users[k]];
  }
  return last;
}

/* ReluBackward(z, MaxPool2dBackward(...)). */
static void fuse_maxpool_bwd(cpu_exe *x, fuse_state *f, cpu_thunk *t) {
  const rlx_plan *p = f->p;
  rlx_id mp = t->id, rb = sole_user(f, mp);
  if (rb == RLX_NO_ID || f->thunk[rb] < 0 || x->thunks[f->thunk[rb]].kernel != rlx_fast_ReluBackward) return;
  const rlx_node *rn = rlx_graph_node(f->g, rb);
  if (rn->inputs[1] != mp || rn->inputs[0] == mp) return;
  rlx_id z = rn->inputs[0];
  const rlx_node *zn = rlx_graph_node(f->g, z);
  if (!rlx_fast_maxpool_relu_bwd_applies(t->node, t->in, t->n_in, &zn->shape)) return;
  uint32_t s = f->step[mp];
  if (f->first[p->root[z]] >= s) return; /* z must exist before */
  if (!interval_free(f, rb, s, f->last[rb], mp, RLX_NO_ID)) {
    /* The plan often gives the result the slot of the pooled activation x, whose last reader is
       this MaxPool2dBackward: the fused kernel may overwrite x in place when the bytes coincide. */
    rlx_id xin = t->node->inputs[0], rx = p->root[xin];
    if (p->offset[rb] != p->offset[xin] || p->size[rb] != p->size[xin] || f->last[rx] > s ||
        !interval_free(f, rb, s, f->last[rb], mp, rx))
      return;
    f->scan_only[rb] = f->scan_only[rx] = true; /* they share step s in the same bytes */
  }
  set_first(f, rb, s);
  f->dead[mp] = true;
  t->kind = TK_MPB_RELU;
  t->out.data = x->arena + p->offset[rb];
  /* pooled x = relu(z) (the usual conv block): x > 0 exactly where z > 0, so z is not read */
  const rlx_node *xn = rlx_graph_node(f->g, t->node->inputs[0]);
  bool from_x = xn->op == RLX_OP_Activation && xn->attrs.Activation.kind == RLX_ACT_RELU && xn->inputs[0] == z;
  t->aux = from_x ? NULL : x->arena + p->offset[z];
  f->relu_masked[rb] = from_x;
  t->last = rb;
  fusions_made++;
  x->thunks[f->thunk[rb]].kind = TK_SKIP;
  /* z is now read at this step; when the ReluBackward was its last reader, its bytes are free
     earlier than planned */
  rlx_id zr = p->root[z];
  uint32_t zl = last_read_without(f, zr, rb);
  if (zl < s) zl = s;
  if (zl < f->last[zr] && f->last[zr] == p->last_use[zr]) set_last(f, zr, zl); /* not extended by a fusion */
  /* ... and the bias gradient Reduce(sum over N, H, W) of the result, from per-plane sums */
  for (uint32_t k = f->use_at[rb]; k < f->use_at[rb + 1]; k++) {
    rlx_id u = f->users[k];
    if (f->thunk[u] < 0) continue;
    cpu_thunk *ut = &x->thunks[f->thunk[u]];
    if (ut->kind != TK_KERNEL || ut->kernel != rlx_fast_Reduce || p->root[u] != u) continue;
    /* written after every read of this step: only what lives on past it must not share bytes */
    if (!rlx_fast_reduce_planes_applies(ut->node, ut->in) || !interval_free(f, u, s + 1, f->last[u], mp, RLX_NO_ID))
      continue;
    set_first(f, u, s + 1);
    t->aux_node = ut->node;
    t->out3 = x->arena + p->offset[u];
    ut->kind = TK_SKIP;
    break;
  }
}

/* Is node id a Transpose swapping the last two axes (and keeping the others)? */
static bool is_last_swap(const rlx_node *n) {
  if (n->op != RLX_OP_Transpose) return false;
  const rlx_ilist *perm = &n->attrs.Transpose.perm;
  uint32_t r = perm->n;
  if (r < 2) return false;
  for (uint32_t k = 0; k + 2 < r; k++)
    if (perm->v[k] != (int64_t)k) return false;
  return perm->v[r - 2] == (int64_t)r - 1 && perm->v[r - 1] == (int64_t)r - 2;
}

/* Transpose -> MatMul: the MatMul reads the input of a chain of last-axes Transposes (an odd
 * chain as a transposed operand, an even one as a plain one; rlx_fast_matmul_ex transposes it
 * into scratch, so the sgemm call is the unfused one). */
static void fuse_matmul(cpu_exe *x, fuse_state *f, cpu_thunk *t, uint32_t *fused_uses) {
  const rlx_plan *p = f->p;
  rlx_id src[2];
  bool tr[2], chained[2];
  rlx_shape sh[2];
  uint32_t s = f->step[t->id];
  for (uint32_t k = 0; k < 2; k++) {
    rlx_id cur = t->node->inputs[k];
    bool odd = false;
    for (int depth = 0; depth < 8; depth++) {
      const rlx_node *tn = rlx_graph_node(f->g, cur);
      if (!is_last_swap(tn) || f->thunk[cur] < 0 || x->thunks[f->thunk[cur]].kind != TK_KERNEL) break;
      rlx_id next = tn->inputs[0], r = p->root[next];
      /* the chain's input must stay intact until this step */
      if (f->dead[r] || (f->last[r] < s && !interval_free(f, r, f->first[r], s, RLX_NO_ID, RLX_NO_ID))) break;
      cur = next;
      odd = !odd;
    }
    chained[k] = cur != t->node->inputs[k];
    src[k] = cur;
    tr[k] = odd;
    sh[k] = rlx_graph_node(f->g, cur)->shape;
  }
  /* (No MatMul -> Transpose fusion: computing B^T A^T instead of A B sums in a different order
     inside sgemm on every CPU, so it cannot give the unfused run's bits; docs/cpu-backend.md.) */
  if (!chained[0] && !chained[1]) return;
  if (!rlx_fast_matmul_ex_applies(t->node, &sh[0], tr[0], &sh[1], tr[1])) return;
  for (uint32_t k = 0; k < 2; k++) {
    t->fin[k].data = x->arena + p->offset[src[k]];
    t->fin[k].shape = sh[k];
    f->kept[src[k]] = true; /* a chain may end at a Transpose, which then must run */
    if (!chained[k]) continue;
    rlx_id r = p->root[src[k]];
    if (f->last[r] < s) set_last(f, r, s);
  }
  for (uint32_t k = 0; k < 2; k++) /* the readers the chains' first Transposes lose */
    if (is_last_swap(rlx_graph_node(f->g, t->node->inputs[k])) && src[0] != t->node->inputs[k] &&
        src[1] != t->node->inputs[k])
      fused_uses[t->node->inputs[k]]++;
  t->kind = TK_MATMUL_T;
  t->ta = tr[0];
  t->tb = tr[1];
  fusions_made++;
}

/* The thunk of node id when it is a plain kernel thunk read by nothing else: its one reader,
 * not an output, not read directly by another fused thunk. */
static cpu_thunk *lone_kernel(cpu_exe *x, fuse_state *f, rlx_id id) {
  if (f->thunk[id] < 0 || sole_user(f, id) == RLX_NO_ID || f->kept[id] || f->p->root[id] != id) return NULL;
  cpu_thunk *t = &x->thunks[f->thunk[id]];
  return t->kind == TK_KERNEL ? t : NULL;
}

/* Operand k (q, k or v) of Attention thunk t made by Narrow(X, last axis) -> Reshape [B, S, H, D]
 * (a view) -> Transpose(0, 2, 1, 3), each read only by the next: the attention reads X in place
 * (row stride = X's last dim, head stride D, from the Narrow's start) and the Narrow and the
 * Transpose are not run. Tentative: the two thunks are marked dead (their slots, which the plan
 * may have placed over X's bytes after the Narrows, are then never written); fuse_attention
 * checks X's interval and takes all operands back when it is not free. */
static bool attention_view(cpu_exe *x, fuse_state *f, cpu_thunk *t, uint32_t k, rlx_id *xsrc, cpu_thunk **skip) {
  const rlx_plan *p = f->p;
  rlx_id tr = t->node->inputs[k];
  const rlx_node *tn = rlx_graph_node(f->g, tr);
  if (tn->op != RLX_OP_Transpose || tn->attrs.Transpose.perm.n != 4) return false;
  const int64_t *pv = tn->attrs.Transpose.perm.v;
  if (pv[0] != 0 || pv[1] != 2 || pv[2] != 1 || pv[3] != 3) return false;
  cpu_thunk *tt = lone_kernel(x, f, tr);
  rlx_id rs = tn->inputs[0];
  const rlx_node *rn = rlx_graph_node(f->g, rs);
  if (!tt || rn->op != RLX_OP_Reshape || f->thunk[rs] >= 0 || f->is_out[rs] || f->uses[rs] != 1 || f->kept[rs])
    return false;
  rlx_id nw = rn->inputs[0];
  const rlx_node *nn = rlx_graph_node(f->g, nw);
  if (nn->op != RLX_OP_Narrow || p->root[rs] != nw) return false;
  cpu_thunk *nt = lone_kernel(x, f, nw);
  rlx_id src = nn->inputs[0];
  const rlx_shape *xs = &rlx_graph_node(f->g, src)->shape, *ns = &nn->shape, *rsh = &rn->shape;
  if (!nt || !fk_static_f32(xs) || xs->rank != 3 || ns->rank != 3 || rsh->rank != 4) return false;
  int64_t axis = nn->attrs.Narrow.axis < 0 ? nn->attrs.Narrow.axis + 3 : nn->attrs.Narrow.axis;
  /* [B, S, C] -> [B, S, H D] -> [B, S, H, D] */
  if (axis != 2 || rsh->dims[0] != xs->dims[0] || rsh->dims[1] != xs->dims[1] || ns->dims[0] != xs->dims[0] ||
      ns->dims[1] != xs->dims[1] || rsh->dims[2] * rsh->dims[3] != ns->dims[2])
    return false;
  if (*xsrc != RLX_NO_ID && p->root[*xsrc] != p->root[src]) return false; /* one X for all operands */
  *xsrc = src;
  size_t C = (size_t)xs->dims[2], S = (size_t)xs->dims[1], D = (size_t)rsh->dims[3];
  t->attn.view[k] =
      (fk_attn_view){.p = (const float *)(x->arena + p->offset[src]) + nn->attrs.Narrow.start, .st = {S * C, D, C}};
  skip[0] = tt;
  skip[1] = nt;
  f->dead[tr] = f->dead[nw] = true; /* the Reshape is a view of the Narrow */
  return true;
}

/* The Attention's operands read where they are: q, k, v as views (above); a mask Bias through an
 * Expand (the attention reads the Expand's operand, an additive mask [B, 1, 1, Sk], say, with
 * broadcast strides instead of the expanded [B, H, Sq, Sk] tensor; an Expand every reader of
 * which does this is not run, below), or a Constant of batch 1 whose rows repeat over heads and
 * query rows (an Expand folded at compile time: its first row). The Expand's operand must stay
 * intact until this step. */
static void fuse_attention(cpu_exe *x, fuse_state *f, cpu_thunk *t, uint32_t *fused_uses) {
  const rlx_plan *p = f->p;
  memset(&t->attn, 0, sizeof t->attn);
  bool any = false;
  uint32_t s = f->step[t->id], viewed = 0;
  rlx_id e = t->n_in == 4 && t->node->attrs.Attention.mask_kind == RLX_MASK_BIAS ? t->node->inputs[3] : RLX_NO_ID;
  const rlx_node *en = e != RLX_NO_ID ? rlx_graph_node(f->g, e) : NULL;
  if (en && en->op == RLX_OP_Constant && p->root[e] == e) { /* an Expand folded at compile time? */
    const rlx_shape *bs = &en->shape;
    bool ok = bs->rank == 4 && fk_static_f32(bs) && bs->dims[0] == 1; /* one batch: its first row */
    size_t rows = ok ? (size_t)bs->dims[1] * (size_t)bs->dims[2] : 0, row = ok ? (size_t)bs->dims[3] * 4 : 0;
    const uint8_t *d = x->arena + p->offset[e];
    for (size_t i = 1; ok && i < rows; i++) /* every row the same bytes as the first */
      ok = memcmp(d + i * row, d, row) == 0;
    rlx_shape sh = ok ? *bs : (rlx_shape){0};
    sh.dims[1] = sh.dims[2] = 1;
    if (ok && rows >= 2 && rlx_fast_attention_bias_src_applies(t->node, t->in, t->n_in, &sh)) {
      t->attn.has_bias = true;
      t->attn.bias = (rlx_tensor){.data = (void *)d, .shape = sh};
      any = true;
    }
  } else if (en && en->op == RLX_OP_Expand && f->thunk[e] >= 0 && x->thunks[f->thunk[e]].kind == TK_KERNEL) {
    rlx_id src = en->inputs[0], r = p->root[src];
    const rlx_shape *sh = &rlx_graph_node(f->g, src)->shape;
    if (!f->dead[r] && (f->last[r] >= s || interval_free(f, r, f->first[r], s, RLX_NO_ID, RLX_NO_ID)) &&
        rlx_fast_attention_bias_src_applies(t->node, t->in, t->n_in, sh)) {
      t->attn.has_bias = true;
      t->attn.bias = (rlx_tensor){.data = x->arena + p->offset[src], .shape = *sh};
      f->kept[src] = true;
      if (f->last[r] < s) set_last(f, r, s);
      fused_uses[e]++;
      if (sole_user(f, e) == t->id && p->root[e] == e && !f->kept[e]) f->dead[e] = true; /* skipped below */
      any = true;
    }
  }
  rlx_id xsrc = RLX_NO_ID;
  cpu_thunk *skip[6] = {NULL};
  if (rlx_fast_applies_Attention(t->node, t->in, t->n_in))
    for (uint32_t k = 0; k < 3; k++) viewed += attention_view(x, f, t, k, &xsrc, skip + 2 * k);
  if (viewed) { /* X must stay intact until this step */
    rlx_id r = p->root[xsrc];
    if (!f->dead[r] && (f->last[r] >= s || interval_free(f, r, f->first[r], s, RLX_NO_ID, RLX_NO_ID))) {
      f->kept[xsrc] = true;
      if (f->last[r] < s) set_last(f, r, s);
      for (int i = 0; i < 6; i++)
        if (skip[i]) skip[i]->kind = TK_SKIP;
      any = true;
    } else { /* take them back */
      for (int i = 0; i < 6; i++)
        if (skip[i]) f->dead[skip[i]->id] = false;
      memset(t->attn.view, 0, sizeof t->attn.view);
    }
  }
  if (!any) return;
  t->kind = TK_ATTN_SRC;
  fusions_made++;
}

static void fuse_free(fuse_state *f) {
  free(f->step);
  free(f->thunk);
  free(f->uses);
  free(f->use_at);
  free(f->users);
  free(f->is_out);
  free(f->first);
  free(f->last);
  free(f->dead);
  free(f->kept);
  free(f->relu_masked);
  free(f->by_first);
  free(f->by_last);
  free(f->nf_next);
  free(f->nf_prev);
  free(f->nl_next);
  free(f->nl_prev);
  free(f->scan_only);
}

/* Rewrites thunks into fused ones where the patterns above apply. Best effort: without memory
 * for the analysis nothing is fused. */
static void fuse(cpu_exe *x) {
  fuse_state f;
  memset(&f, 0, sizeof f);
  f.g = x->g;
  f.p = x->plan;
  f.n = rlx_graph_node_count(x->g);
  uint32_t n = f.n, *fused_uses = calloc(n ? n : 1, sizeof *fused_uses);
  size_t n_edges = 0;
  for (rlx_id i = 0; i < n; i++) n_edges += rlx_graph_node(x->g, i)->n_inputs;
  f.step = calloc(n ? n : 1, sizeof *f.step);
  f.thunk = malloc((n ? n : 1) * sizeof *f.thunk);
  f.uses = calloc(n ? n : 1, sizeof *f.uses);
  f.use_at = calloc(n + 1, sizeof *f.use_at);
  f.users = malloc((n_edges ? n_edges : 1) * sizeof *f.users);
  f.is_out = calloc(n ? n : 1, sizeof *f.is_out);
  f.first = malloc((n ? n : 1) * sizeof *f.first);
  f.last = malloc((n ? n : 1) * sizeof *f.last);
  f.dead = calloc(n ? n : 1, sizeof *f.dead);
  f.kept = calloc(n ? n : 1, sizeof *f.kept);
  f.relu_masked = calloc(n ? n : 1, sizeof *f.relu_masked);
  if (!fused_uses || !f.step || !f.thunk || !f.uses || !f.use_at || !f.users || !f.is_out || !f.first || !f.last ||
      !f.dead || !f.kept || !f.relu_masked)
    goto done;
  for (uint32_t s = 0; s < x->plan->n_schedule; s++) f.step[x->plan->schedule[s]] = s;
  for (rlx_id i = 0; i < n; i++) {
    f.thunk[i] = -1;
    f.first[i] = x->plan->first_use[i];
    f.last[i] = x->plan->last_use[i];
    const rlx_node *nd = rlx_graph_node(x->g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) f.uses[nd->inputs[k]]++;
  }
  for (rlx_id i = 0; i < n; i++) f.use_at[i + 1] = f.use_at[i] + f.uses[i];
  uint32_t *fill = fused_uses; /* borrowed as a cursor, cleared below */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(x->g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id in = nd->inputs[k];
      f.users[f.use_at[in] + fill[in]++] = i;
    }
  }
  memset(fused_uses, 0, n * sizeof *fused_uses);
  for (uint32_t k = 0; k < rlx_graph_output_count(x->g); k++) f.is_out[rlx_graph_outputs(x->g)[k]] = true;
  for (uint32_t i = 0; i < x->n_thunks; i++) f.thunk[x->thunks[i].id] = (int32_t)i;
  f.by_first = malloc(((size_t)n + 1) * sizeof *f.by_first);
  f.by_last = malloc(((size_t)n + 1) * sizeof *f.by_last);
  f.nf_next = malloc((n ? n : 1) * sizeof *f.nf_next);
  f.nf_prev = malloc((n ? n : 1) * sizeof *f.nf_prev);
  f.nl_next = malloc((n ? n : 1) * sizeof *f.nl_next);
  f.nl_prev = malloc((n ? n : 1) * sizeof *f.nl_prev);
  f.scan_only = calloc(n ? n : 1, sizeof *f.scan_only);
  if (!f.by_first || !f.by_last || !f.nf_next || !f.nf_prev || !f.nl_next || !f.nl_prev || !f.scan_only) {
    free(f.by_first); /* interval_free scans instead */
    free(f.by_last);
    f.by_first = f.by_last = NULL;
    if (!f.scan_only) goto done;
  } else {
    for (uint32_t s = 0; s <= n; s++) f.by_first[s] = f.by_last[s] = RLX_NO_ID;
    for (rlx_id i = n; i-- > 0;) { /* every node; interval_free filters the roots */
      if (f.first[i] > n || f.last[i] > n) continue;
      list_link(f.by_first, f.nf_next, f.nf_prev, f.first[i], i);
      list_link(f.by_last, f.nl_next, f.nl_prev, f.last[i], i);
    }
  }
  /* An Activation planned in place over its operand's bytes (rlx_plan_memory) shares its first
     step with the operand's last one: both are checked by a full scan. */
  for (rlx_id i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(x->g, i);
    if (nd->op != RLX_OP_Activation || nd->n_inputs != 1 || x->plan->root[i] != i || x->plan->size[i] == 0) continue;
    rlx_id r = x->plan->root[nd->inputs[0]];
    if (r != i && x->plan->offset[r] == x->plan->offset[i] && x->plan->size[r] == x->plan->size[i])
      f.scan_only[i] = f.scan_only[r] = true;
  }

  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind != TK_KERNEL) continue;
    if (t->kernel == rlx_fast_Conv)
      fuse_conv(x, &f, t);
    else if (t->kernel == rlx_fast_MaxPool2dBackward)
      fuse_maxpool_bwd(x, &f, t);
  }
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind == TK_KERNEL && t->kernel == rlx_fast_MatMul) fuse_matmul(x, &f, t, fused_uses);
    if (t->kind == TK_KERNEL && t->kernel == rlx_fast_Attention) fuse_attention(x, &f, t, fused_uses);
  }
  /* An Expand every reader of which reads its operand instead is not run. */
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind == TK_KERNEL && t->node->op == RLX_OP_Expand && !f.is_out[t->id] && !f.kept[t->id] &&
        fused_uses[t->id] && fused_uses[t->id] == f.uses[t->id])
      t->kind = TK_SKIP;
  }
  /* A fused conv whose sum z is read by nothing but its Relu and relu-masked ReluBackwards keeps
     only relu(z). */
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind != TK_CONV_EPI || !t->out2 || f.is_out[t->mid] || f.kept[t->mid]) continue;
    bool unread = true;
    for (uint32_t k = f.use_at[t->mid]; k < f.use_at[t->mid + 1] && unread; k++) {
      rlx_id u = f.users[k];
      unread = u == t->last || (f.thunk[u] >= 0 && x->thunks[f.thunk[u]].kind == TK_SKIP && f.relu_masked[u]);
    }
    if (unread) t->out.data = NULL;
  }
  /* A Transpose every reader of which reads its input instead (a fused MatMul, or a Transpose
     skipped in turn) is not computed; later ones first, so chains resolve in one pass. */
  for (uint32_t i = x->n_thunks; i-- > 0;) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind != TK_KERNEL || t->node->op != RLX_OP_Transpose || f.is_out[t->id] || f.kept[t->id]) continue;
    uint32_t covered = fused_uses[t->id];
    for (uint32_t k = f.use_at[t->id]; k < f.use_at[t->id + 1]; k++) {
      rlx_id u = f.users[k];
      if (f.thunk[u] >= 0 && x->thunks[f.thunk[u]].kind == TK_SKIP && rlx_graph_node(x->g, u)->op == RLX_OP_Transpose)
        covered++;
    }
    if (covered && covered == f.uses[t->id]) t->kind = TK_SKIP;
  }
done:
  free(fused_uses);
  fuse_free(&f);
}

/* MatMuls (not fused) whose B is a Constant node get B packed once (gemm_packed.c); best
 * effort: without memory for the copy the MatMul keeps its kernel. RLX_CPU_NO_PACK=1 turns it
 * off. */
static void pack_constant_weights(cpu_exe *x) {
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    if (t->kind != TK_KERNEL || t->kernel != rlx_fast_MatMul || t->n_in != 2) continue;
    rlx_id b = t->node->inputs[1];
    if (rlx_graph_node(x->g, b)->op != RLX_OP_Constant) continue;
    if (!rlx_fast_matmul_packed_applies(t->node, &t->in[0].shape, &t->in[1].shape)) continue;
    t->owned = rlx_fast_matmul_pack_b(&t->in[1].shape, t->in[1].data);
    if (t->owned) t->kind = TK_MATMUL_PACKED, packs_made++;
  }
  /* Convolutions (plain or with the fused epilogue) by Constant weights that the Winograd path
     takes: the weights transformed once */
  for (uint32_t i = 0; i < x->n_thunks; i++) {
    cpu_thunk *t = &x->thunks[i];
    bool plain = t->kind == TK_KERNEL && t->kernel == rlx_fast_Conv;
    if ((!plain && t->kind != TK_CONV_EPI) || t->n_in != 2) continue;
    if (rlx_graph_node(x->g, t->node->inputs[1])->op != RLX_OP_Constant) continue;
    t->owned = rlx_fast_conv_wino_weights(t->node, t->in, t->n_in);
    if (!t->owned) continue;
    if (plain) t->kind = TK_CONV_PREPARED;
    packs_made++;
  }
}

/* The kernel for a node with operand views `in`: its fast kernel when one applies. */
static rlx_cpu_kernel select_kernel(const rlx_node *nd, const rlx_tensor *in, bool ref_only, bool *fast) {
  const rlx_cpu_fast_kernel *f = &rlx_cpu_fast_table[nd->op];
  *fast = !ref_only && f->applies && f->kernel && f->applies(nd, in, nd->n_inputs);
  return *fast ? f->kernel : rlx_cpu_ref_table[nd->op];
}

static rlx_status cpu_compile(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out) {
  (void)b;
  *out = NULL;
  const rlx_graph *g = args->graph;
  const rlx_plan *plan = args->plan;
  const rlx_compile_options *opt = args->options;
  rlx_cpu_options co;
  rlx_cpu_options_init(&co);
  if (args->backend_options) co = *(const rlx_cpu_options *)args->backend_options;
  if (co.threads < 0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cpu: rlx_cpu_options.threads is %d; it must be >= 0 (0 = all cores)",
                      co.threads);
  const rlx_allocator *al = rlx_graph_allocator(g);
  uint32_t n = rlx_graph_node_count(g);
  if (plan->n_nodes != n) return rlx_errorf(RLX_ERR_INTERNAL, "cpu: the plan does not match the graph");

  /* Every node that runs needs a kernel; report all that have none at once. */
  rlx_strbuf missing;
  rlx_sb_init(&missing, NULL);
  uint32_t n_missing = 0, n_thunks = 0;
  size_t n_in_total = 0;
  char lb[160];
  for (uint32_t s = 0; s < plan->n_schedule; s++) {
    rlx_id id = plan->schedule[s];
    const rlx_node *nd = rlx_graph_node(g, id);
    if (rlx_op_has(nd->op, RLX_PROP_LEAF) || plan->root[id] != id) continue;
    if (!rlx_cpu_ref_table[nd->op]) {
      rlx_sb_printf(&missing, "%s%s", n_missing ? ", " : "", label(g, id, lb, sizeof lb));
      n_missing++;
      continue;
    }
    if (nd->op == RLX_OP_Custom && rlx_cpu_check_custom(nd) != RLX_OK) { /* not registered / no cpu kernel */
      rlx_sb_printf(&missing, "%s%s: %s", n_missing ? ", " : "", label(g, id, lb, sizeof lb), rlx_last_error());
      n_missing++;
      continue;
    }
    n_thunks++;
    n_in_total += nd->n_inputs;
  }
  if (n_missing) {
    char *list = NULL;
    size_t len;
    if (rlx_sb_finish(&missing, &list, &len) != RLX_OK) list = NULL;
    rlx_status st = rlx_errorf(RLX_ERR_UNSUPPORTED, "the CPU backend has no kernel for %u node%s: %s", n_missing,
                               n_missing == 1 ? "" : "s", list ? list : "?");
    free(list);
    return st;
  }
  rlx_sb_free(&missing);

  cpu_exe *x = cx_alloc(al, 1, sizeof *x);
  if (!x) return rlx_errorf(RLX_ERR_OOM, "cpu: out of memory");
  x->base.vt = &cpu_vtable;
  x->al = *al;
  x->g = g;
  x->plan = plan;
  x->ctx.threads = cpu_threads(co.threads);
  x->ctx.deterministic = co.deterministic;
  if (x->ctx.deterministic) fk_blas_serial(); /* the reference kernels' GEMMs too, pool or not */
  x->ctx.rng_seed = opt->rng_seed;
  x->profile = env_flag("RLX_CPU_PROFILE");
  const char *prof = getenv("RLX_CPU_PROFILE");
  x->profile_clock = prof && strcmp(prof, "cpu") == 0 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  bool ref_only = env_flag("RLX_CPU_REF_ONLY");
  rlx_status st = fk_isa_configure(); /* RLX_CPU_ISA */
  if (st != RLX_OK) goto fail;

  size_t block;
  if (!rlx_add_size(plan->arena_size, ARENA_ALIGN, &block)) {
    st = rlx_errorf(RLX_ERR_OVERFLOW, "cpu: arena of %zu bytes is too large", plan->arena_size);
    goto fail;
  }
  /* not zeroed: every slot is written (inputs, params, constants, kernels) before it is read, and
     untouched pages of a large arena then cost no memory */
  x->arena_block = al->alloc(al->ctx, block);
  x->thunks = cx_alloc(al, n_thunks, sizeof *x->thunks);
  x->pool = cx_alloc(al, n_in_total, sizeof *x->pool);
  if (!x->arena_block || !x->thunks || !x->pool) {
    st = rlx_errorf(RLX_ERR_OOM, "cpu: out of memory for an arena of %zu bytes", plan->arena_size);
    goto fail;
  }
  x->arena = (uint8_t *)(((uintptr_t)x->arena_block + (ARENA_ALIGN - 1)) & ~(uintptr_t)(ARENA_ALIGN - 1));

  /* Constants, once. */
  for (rlx_id id = 0; id < n; id++) {
    const rlx_node *nd = rlx_graph_node(g, id);
    if (nd->op != RLX_OP_Constant) continue;
    const rlx_bytes *d = &nd->attrs.Constant.data;
    if (d->n != plan->size[id]) {
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "constant %s holds %zu bytes but its shape needs %zu",
                      label(g, id, lb, sizeof lb), d->n, plan->size[id]);
      goto fail;
    }
    if (d->n) memcpy(x->arena + plan->offset[id], d->p, d->n);
  }

  /* Thunks in schedule order. */
  size_t used = 0;
  uint32_t n_fast = 0;
  for (uint32_t s = 0; s < plan->n_schedule; s++) {
    rlx_id id = plan->schedule[s];
    const rlx_node *nd = rlx_graph_node(g, id);
    if (rlx_op_has(nd->op, RLX_PROP_LEAF) || plan->root[id] != id) continue;
    cpu_thunk *t = &x->thunks[x->n_thunks++];
    t->id = id;
    t->node = nd;
    t->in = &x->pool[used];
    t->n_in = nd->n_inputs;
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      rlx_id in = nd->inputs[k];
      x->pool[used].data = x->arena + plan->offset[in];
      x->pool[used].shape = rlx_graph_node(g, in)->shape;
      used++;
    }
    t->out.data = x->arena + plan->offset[id];
    t->out.shape = nd->shape;
    t->kernel = select_kernel(nd, t->in, ref_only, &t->fast);
    t->kind = TK_KERNEL;
    t->last = id;
    n_fast += t->fast;
  }
  if (n_fast && !env_flag("RLX_CPU_NO_FUSION")) fuse(x);
  if (n_fast && !env_flag("RLX_CPU_NO_PACK")) pack_constant_weights(x);
  if (n_fast) {
    st = rlx_cpu_pool_create(x->ctx.threads, &x->ctx.pool);
    if (st != RLX_OK) goto fail;
  }

  for (rlx_id id = 0; id < n; id++) x->n_input_nodes += rlx_graph_node(g, id)->op == RLX_OP_Input;
  x->input_nodes = cx_alloc(al, x->n_input_nodes, sizeof *x->input_nodes);
  if (!x->input_nodes) {
    st = rlx_errorf(RLX_ERR_OOM, "cpu: out of memory");
    goto fail;
  }
  for (rlx_id id = 0, k = 0; id < n; id++)
    if (rlx_graph_node(g, id)->op == RLX_OP_Input) x->input_nodes[k++] = id;
  *out = &x->base;
  return RLX_OK;

fail:
  cpu_destroy(&x->base);
  return st;
}

/* ---- run ---- */

static rlx_status cpu_run(rlx_backend_exe *bx, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                          const rlx_buffer_handle *outputs, uint32_t n_outputs) {
  cpu_exe *x = (cpu_exe *)bx;
  const rlx_plan *p = x->plan;
  if (n_outputs != rlx_graph_output_count(x->g) || n_inputs != x->n_input_nodes)
    return rlx_errorf(RLX_ERR_INTERNAL, "cpu: %u input and %u output buffers for a graph of %u inputs and %u outputs",
                      n_inputs, n_outputs, x->n_input_nodes, rlx_graph_output_count(x->g));
  for (uint32_t i = 0; i < n_inputs; i++) {
    rlx_id id = x->input_nodes[i];
    uint8_t *slot = x->arena + p->offset[id];
    if (p->size[id] && inputs[i] != slot) memcpy(slot, inputs[i], p->size[id]);
  }
  char lb[160];
  for (uint32_t k = 0; k < x->n_thunks; k++) {
    cpu_thunk *t = &x->thunks[k];
    if (t->kind == TK_SKIP) continue;
    rlx_tensor o = t->out; /* the kernel gets a fresh copy of the output view */
    struct timespec t0, t1;
    if (x->profile) clock_gettime(x->profile_clock, &t0);
    rlx_status st;
    switch (t->kind) {
    case TK_MATMUL_T: st = rlx_fast_matmul_ex(t->node, &t->fin[0], t->ta, &t->fin[1], t->tb, &o, &x->ctx); break;
    case TK_CONV_EPI:
      st = rlx_fast_conv_run(t->node, t->in, t->n_in, t->owned, t->aux, t->z_dead ? NULL : t->out.data, t->out2, true,
                             (rlx_act)t->act, &x->ctx);
      break;
    case TK_CONV_PREPARED:
      st = rlx_fast_conv_run(t->node, t->in, t->n_in, t->owned, NULL, o.data, NULL, false, RLX_ACT_RELU, &x->ctx);
      break;
    case TK_MPB_RELU:
      st = rlx_fast_maxpool_relu_bwd(t->node, t->in, t->aux, o.data, t->aux_node, t->out3, &x->ctx);
      break;
    case TK_MATMUL_PACKED: st = rlx_fast_matmul_packed(t->node, &t->in[0], t->owned, &o, &x->ctx); break;
    case TK_ATTN_SRC: st = rlx_fast_attention_src(t->node, t->in, &t->attn, &o, &x->ctx); break;
    default: st = t->kernel(t->node, t->in, t->n_in, &o, &x->ctx); break;
    }
    if (x->profile) {
      clock_gettime(x->profile_clock, &t1);
      t->prof_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
      t->prof_runs++;
    }
    if (st != RLX_OK)
      return rlx_error_context(st, "graph '%s', node %s", rlx_graph_name(x->g),
                               label(x->g, t->kind == TK_KERNEL ? t->id : t->last, lb, sizeof lb));
  }
  const rlx_id *outs = rlx_graph_outputs(x->g);
  for (uint32_t i = 0; i < n_outputs; i++) {
    uint8_t *slot = x->arena + p->offset[outs[i]];
    if (p->size[outs[i]] && outputs[i] != slot) memcpy(outputs[i], slot, p->size[outs[i]]);
  }
  return RLX_OK;
}

/* ---- the backend record ---- */

/* Control flow the runtime drives for this backend (its bodies run here). */
static const rlx_op cpu_runtime_control[] = {RLX_OP_If, RLX_OP_While, RLX_OP_Scan, RLX_OP_ScanBackward,
                                             RLX_OP_ScanBackwardXs};

static rlx_backend cpu_record;
static pthread_once_t cpu_record_once = PTHREAD_ONCE_INIT;

static void cpu_record_init(void) {
  cpu_record = (rlx_backend){
      .name = "cpu",
      .available = NULL,
      .host_staged = NULL,
      .n_host_staged = 0,
      .runtime_control = cpu_runtime_control,
      .n_runtime_control = sizeof cpu_runtime_control / sizeof cpu_runtime_control[0],
      .host_memory = true,
      .compile = cpu_compile,
  };
  cpu_record.claims = rlx_cpu_claim_list(&cpu_record.n_claims);
}

const rlx_backend *rlx_cpu_backend(void) {
  pthread_once(&cpu_record_once, cpu_record_init);
  return &cpu_record;
}
