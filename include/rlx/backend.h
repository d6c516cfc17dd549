/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The backend contract (docs/backends.md).
 *
 * A backend is a descriptor: a name, an availability probe, the op kinds it claims (and, among
 * them, the kinds it wants host-staged or whose bodies the runtime should run), and a compile
 * function. Compiling gives a backend executable, which owns device memory: buffers it allocates,
 * fills, reads back and copies, and the parameters it keeps resident. The runtime
 * (src/runtime/) drives everything else: it legalizes the graph against the claims, simplifies
 * it, cuts it into steps (segments the backend runs, host-staged nodes run on the "cpu" backend
 * with counted copies, control-flow nodes whose bodies it compiles for the same backend), plans
 * memory and moves values between steps as buffers. A backend never calls into the runtime. */
#ifndef RLX_BACKEND_H
#define RLX_BACKEND_H

#include "rlx/plan.h"
#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_backend rlx_backend;

/* A handle to device memory owned by a backend executable: a host pointer (cpu), a device
 * pointer (cuda), a boxed array (mlx), an offset into a separate arena (the test backend). The
 * runtime never dereferences it unless the backend says its buffers are host memory. A buffer
 * allocated by one executable of a backend may be used with every executable of that backend
 * compiled with the same backend options (same device). */
typedef void *rlx_buffer_handle;

/* What a backend's compile receives. The graph is verified, legalized (only claimed kinds;
 * host-staged and runtime-control kinds have been cut out into their own steps), simplified, and
 * planned; graph and plan stay alive and unchanged until the executable is destroyed, so the
 * backend may borrow them. A backend may use the plan for its own arena or ignore it. */
typedef struct rlx_backend_compile_args {
  const rlx_graph *graph;
  const rlx_plan *plan;
  const rlx_compile_options *options; /* shared options (rng_seed, memory_limit, ...) */
  const void *backend_options;        /* the backend's own options struct, or NULL for defaults;
                                         its header names the backend (checked by the runtime) */
} rlx_backend_compile_args;

typedef struct rlx_backend_exe rlx_backend_exe;

typedef struct rlx_backend_exe_vtable {
  /* ---- buffers (required) ---- */
  rlx_status (*buffer_alloc)(rlx_backend_exe *x, size_t bytes, rlx_buffer_handle *out);
  void (*buffer_free)(rlx_backend_exe *x, rlx_buffer_handle h);
  /* host -> device: bytes [offset, offset + n) of h from src */
  rlx_status (*upload)(rlx_backend_exe *x, rlx_buffer_handle h, size_t offset, const void *src, size_t n);
  /* device -> host */
  rlx_status (*download)(rlx_backend_exe *x, rlx_buffer_handle h, size_t offset, void *dst, size_t n);
  /* device -> device (dst and src may be the same buffer only with disjoint ranges) */
  rlx_status (*copy)(rlx_backend_exe *x, rlx_buffer_handle dst, size_t dst_offset, rlx_buffer_handle src,
                     size_t src_offset, size_t n);
  /* Waits for queued work (optional: NULL = every call above and run are synchronous). The
   * runtime calls it before it reads a download's destination. */
  rlx_status (*sync)(rlx_backend_exe *x);

  /* ---- execution ---- */
  /* Param node `node` of the compiled graph now has the value in buffer h (bytes = the Param's
   * size). The backend copies it into its own storage or keeps the handle: h stays valid and
   * unchanged until the next bind_param of this node or until the executable is destroyed. */
  rlx_status (*bind_param)(rlx_backend_exe *x, uint32_t node, rlx_buffer_handle h);
  /* Optional: a handle on the executable's own storage of node `node` of its graph — an Input, a
   * Param or the root of a graph output — or NULL in *out for none. The handle must stay valid
   * until destroy, keep its bytes between runs (the plan keeps leaves and outputs live for the whole
   * run), and work with every buffer function of any executable of this backend. The runtime then
   * uses it as that value's buffer instead of allocating one: it passes it to run / bind_param,
   * which recognise their own storage and skip the copy, and it never frees it. */
  rlx_status (*slot_buffer)(rlx_backend_exe *x, uint32_t node, rlx_buffer_handle *out);
  /* inputs[i] holds the value of the compiled graph's i-th Input node (node order); the graph's
   * outputs are written into outputs[i] (allocated by the runtime with buffer_alloc, the output's
   * byte size, or lent by slot_buffer). Inputs never alias outputs, except where both are handles
   * slot_buffer lent (an output that is a view of an input). */
  rlx_status (*run)(rlx_backend_exe *x, const rlx_buffer_handle *inputs, uint32_t n_inputs,
                    const rlx_buffer_handle *outputs, uint32_t n_outputs);
  void (*destroy)(rlx_backend_exe *x);
} rlx_backend_exe_vtable;

struct rlx_backend_exe {
  const rlx_backend_exe_vtable *vt;
};

struct rlx_backend {
  const char *name; /* registry key: "cpu", "mlx", "cuda" */
  /* Compiled in and usable on this machine? NULL = always. When not, *why (if why is non-NULL)
   * points at a static message saying what is missing ("no CUDA device: ..."). */
  bool (*available)(const char **why);
  const rlx_op *claims; /* op kinds the backend accepts (leaves included) */
  uint32_t n_claims;
  /* Claimed kinds run on the CPU reference kernel by the runtime's host staging: operands are
   * downloaded, the "cpu" backend runs the node, results are uploaded (optional). */
  const rlx_op *host_staged;
  uint32_t n_host_staged;
  /* Claimed kinds with bodies (If, While, Scan, ScanBackward, ScanBackwardXs) that the runtime
   * drives: it compiles their bodies for this backend and runs them there (optional; a kind
   * claimed but not listed here is lowered by the backend itself, e.g. unrolled). */
  const rlx_op *runtime_control;
  uint32_t n_runtime_control;
  /* Buffers are plain host memory (the handle is a pointer the runtime may read and write). */
  bool host_memory;
  rlx_status (*compile)(const rlx_backend *b, const rlx_backend_compile_args *args, rlx_backend_exe **out);
};

/* Every backend options struct starts with this header (e.g. rlx_cpu_options in rlx/cpu.h). */
typedef struct rlx_backend_options_header {
  const char *backend; /* the name of the backend the options are for */
} rlx_backend_options_header;

/* Registry: a table of descriptors. The built-in backends (those compiled in) are registered on
 * first use; registering an existing name replaces it. */
rlx_status rlx_backend_register(const rlx_backend *b);
const rlx_backend *rlx_backend_find(const char *name);
uint32_t rlx_backend_count(void);
const rlx_backend *rlx_backend_at(uint32_t i);
/* Fills claimed[k] = 1 for every op kind the backend claims. */
void rlx_backend_claim_set(const rlx_backend *b, uint8_t claimed[RLX_OP_COUNT]);
bool rlx_backend_host_stages(const rlx_backend *b, rlx_op op);
bool rlx_backend_runtime_controls(const rlx_backend *b, rlx_op op);
/* "cpu, mlx" — the registered names, for messages (static storage, rebuilt per call). */
const char *rlx_backend_names(void);

#ifdef __cplusplus
}
#endif
#endif
