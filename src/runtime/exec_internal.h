/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The executable: what rlx_compile builds (session.c), how its graph is cut into steps
 * (steps.c) and how the steps run (exec.c). docs/backends.md describes the design.
 *
 * An executable owns, on its backend, one buffer per input, per parameter and per value that
 * crosses from one step to another (plus one per graph output). A step is
 *   - a segment: a maximal run (in schedule order) of nodes the backend lowers itself, compiled
 *     by the backend as a graph of its own (the whole graph when there is nothing else);
 *   - a host-staged node: operands downloaded, the node run by the "cpu" backend, the result
 *     uploaded;
 *   - a control-flow node the backend leaves to the runtime: its bodies are executables of their
 *     own for the same backend, driven by runtime/control.c.
 * Bodies share the parameter buffers of the top executable (their root), so a parameter is
 * uploaded once and every executable that reads it rebinds it only when its version changed. */
#ifndef RLX_EXEC_INTERNAL_H
#define RLX_EXEC_INTERNAL_H

#include "name_map.h"
#include "rlx/backend.h"

typedef struct rt_buf {
  rlx_buffer_handle h;
  size_t bytes;
  uint64_t version; /* bumped on every write of a parameter */
  bool live;        /* allocated */
  bool lent;        /* the handle is a segment executable's own storage (slot_buffer): not freed */
} rt_buf;

typedef struct exe_leaf {
  char *name;
  rlx_shape shape;
  rlx_id node; /* id in the compiled top graph, RLX_NO_ID when it has none */
  bool set;    /* a value was given */
  rt_buf *buf; /* inputs: own; params: the root's (NULL when nothing reads the input) */
} exe_leaf;

typedef enum rt_step_kind { STEP_SEGMENT, STEP_STAGED, STEP_CONTROL } rt_step_kind;

typedef struct rt_step {
  rt_step_kind kind;
  /* operands (segment: per Input node of its graph, in node order; staged/control: the node's
     operands) and results (segment: per graph output; staged/control: the node's value) */
  uint32_t n_in, n_out;
  rt_buf **in, **out;
  rlx_buffer_handle *in_h, *out_h; /* their handles (segments) */
  /* STEP_SEGMENT */
  rlx_graph *graph; /* the segment's graph (the executable's own graph when it is the only one) */
  bool owns_graph;
  rlx_plan *plan;
  rlx_backend_exe *bx;
  uint32_t n_par;
  rlx_id *par_node;   /* Param nodes of the segment graph */
  exe_leaf **par;     /* their leaves */
  uint64_t *par_seen; /* version last bound (0 = never) */
  /* STEP_STAGED / STEP_CONTROL */
  const rlx_node *node; /* in the executable's graph */
  rlx_id node_id;
  rlx_executable *cpu; /* staged: the node as a one-node executable on "cpu" */
  uint32_t n_bodies;
  const rlx_graph **body_graphs;
  rlx_executable **bodies; /* control: compiled for the same backend */
  rlx_tensor *host_in;     /* host copies of the operands */
  rlx_tensor host_out;     /* host copy of the result (data owned) */
} rt_step;

struct rlx_executable {
  rlx_allocator al;
  const rlx_backend *backend;
  rlx_executable *root; /* the top executable (itself, unless a body) */
  rlx_graph *graph;     /* compiled */
  rlx_dispatch_report report;
  exe_leaf *inputs;
  uint32_t n_inputs;
  exe_leaf *params;
  uint32_t n_params;
  rt_step *steps;
  uint32_t n_steps;
  rlx_backend_exe *dev; /* the executable that allocates and copies buffers (a segment's) */
  rt_buf *pool;         /* every buffer this executable owns */
  uint32_t n_pool, cap_pool;
  rt_buf **outs; /* value of each graph output */
  uint32_t n_outputs;
  rlx_tensor *outputs; /* host views of the outputs (read_output) */
  void **out_host;     /* host memory of outputs[i] (owned; NULL for host-memory backends) */
  bool *out_fresh;     /* outputs[i] holds the last run's value */
  bool ran;
  uint32_t n_bind;
  uint32_t *bind_out;
  exe_leaf **bind_par;
  rlx_transfer_stats stats; /* the root's counts everything, bodies and staging included */
  const rlx_tensor **by_pos;
  /* by-name lookups of params and inputs (index into params / inputs); empty when there was no
   * memory for them (lookups then scan) */
  rlx_name_map param_map, input_map;
  void *cache_hold; /* the compile-cache entry whose graph this executable shares (compile_cache.c) */
};

/* steps.c: cuts e->graph into steps, builds the segment graphs and the staged one-node graphs,
 * compiles every step (segments for e->backend, staged nodes for "cpu", bodies for e->backend)
 * and allocates the buffers, checking opt->memory_limit first. */
rlx_status rlx_rt_build_steps(rlx_executable *e, const rlx_compile_options *opt);
void rlx_rt_free_steps(rlx_executable *e);

/* exec.c */
rlx_status rlx_rt_run_steps(rlx_executable *e);
rlx_status rlx_rt_upload(rlx_executable *e, rt_buf *b, const void *src, size_t n, bool param);
rlx_status rlx_rt_download(rlx_executable *e, rt_buf *b, void *dst, size_t n, bool param);
rlx_status rlx_rt_device_copy(rlx_executable *e, rt_buf *dst, rt_buf *src, size_t n);

/* session.c: index of the param called `name` in e->params, or -1. */
int rlx_rt_find_param(const rlx_executable *e, const char *name);
/* session.c: compiles a body (positional inputs) whose params are the root's. */
rlx_status rlx_rt_compile_body(const rlx_graph *body, const rlx_backend *be, const rlx_compile_options *opt,
                               rlx_executable *root, rlx_executable **out);
/* Positional run of a body: inputs uploaded, run, every output downloaded into outputs[i].data. */
rlx_status rlx_rt_run_body(rlx_executable *body, const rlx_tensor *inputs, uint32_t n_inputs, rlx_tensor *outputs,
                           uint32_t n_outputs);
/* Positional run of a staged one-node executable on host tensors; *out is the host result. */
rlx_status rlx_executable_run_positional(rlx_executable *e, const rlx_tensor *inputs, uint32_t n_inputs,
                                         const rlx_tensor **outputs, uint32_t *n_outputs);
rlx_status rlx_rt_compile_positional(const rlx_graph *g, const rlx_backend *be, const rlx_compile_options *opt,
                                     rlx_executable **out);

/* The body graphs a node carries (If branches, While cond/body, Scan body, ...): writes up to
 * `cap` of them to out and returns how many there are (absent optional bodies are skipped). */
uint32_t rlx_node_bodies(const rlx_node *n, const rlx_graph **out, uint32_t cap);

#endif
