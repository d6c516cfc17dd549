/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The backend contract: a vtable plus the set of op kinds the backend claims. */
#ifndef RLX_BACKEND_H
#define RLX_BACKEND_H

#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_backend rlx_backend;

/* What a backend's compile receives: a verified graph containing only claimed kinds, with
 * constants folded and a memory plan (see src/passes/plan.h). Both stay alive, unchanged, until
 * the backend executable is destroyed, so the backend may borrow them. */
struct rlx_plan;

/* An executable produced by a backend. The session checks names, dtypes and shapes before it
 * calls these, so a backend only moves bytes. */
typedef struct rlx_backend_exe rlx_backend_exe;
typedef struct rlx_backend_exe_vtable {
  /* required */
  /* Sets Param `name`. `node` is its id in the compiled graph, or RLX_NO_ID when the compiled
   * graph has no such node (it was optimized away, or only a body of If/While/Scan reads it). The
   * value is copied. */
  rlx_status (*set_param)(rlx_backend_exe *x, uint32_t node, const char *name,
                          const rlx_tensor *value);
  /* inputs[i] is the tensor for the Input node in_nodes[i]; the graph outputs are copied into
   * outputs[i].data (preallocated by the caller with the output's shape). */
  rlx_status (*run)(rlx_backend_exe *x, const uint32_t *in_nodes, const rlx_tensor *inputs,
                    uint32_t n_inputs, rlx_tensor *outputs, uint32_t n_outputs);
  void (*destroy)(rlx_backend_exe *x);
} rlx_backend_exe_vtable;

struct rlx_backend_exe {
  const rlx_backend_exe_vtable *vt;
};

struct rlx_backend {
  const char *name;                        /* registry key: "cpu", "mlx", "cuda" */
  bool (*available)(void);                 /* compiled in and usable on this machine */
  const rlx_op *claims;                    /* op kinds the backend accepts */
  uint32_t n_claims;
  const rlx_op *host_staged;               /* subset of claims run on the CPU reference (optional) */
  uint32_t n_host_staged;
  /* Lowers a legalized, planned graph. */
  rlx_status (*compile)(const rlx_backend *b, const rlx_graph *g, const struct rlx_plan *plan,
                        const rlx_compile_options *opt, rlx_backend_exe **out);
};

/* Registry. Built-in backends are registered on first use. Registering an existing name replaces it. */
rlx_status rlx_backend_register(const rlx_backend *b);
const rlx_backend *rlx_backend_find(const char *name);
uint32_t rlx_backend_count(void);
const rlx_backend *rlx_backend_at(uint32_t i);
/* Fills claimed[k] = 1 for every op kind the backend claims. */
void rlx_backend_claim_set(const rlx_backend *b, uint8_t claimed[RLX_OP_COUNT]);
bool rlx_backend_host_stages(const rlx_backend *b, rlx_op op);

#ifdef __cplusplus
}
#endif
#endif
