/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's core, independent of the backend contract (backend.c is the glue):
 *   claims.c        the claimed kinds (exactly shared/spec/mlx_supported_ops.txt)
 *   program.c       a graph lowered into an MLX program: the walk, host evaluation, modes
 *   lower_*.c       the per-op lowering table, one file per op family
 *   shim.cpp        the C++ shim over MLX's API (shim.h) */
#ifndef RLX_MLX_INTERNAL_H
#define RLX_MLX_INTERNAL_H

#include "backends/mlx/shim.h"
#include "rlx/graph.h"
#include "rlx/mlx.h"
#include "rlx/session.h"

/* ---- claims ---- */
const rlx_op *rlx_mlx_claim_list(uint32_t *n);
bool rlx_mlx_claims(rlx_op op);

/* ---- lowering ---- */
typedef struct mlx_lower_ctx {
  rlxm_scope *s;
  const rlx_graph *g;
  rlx_id id;     /* the node being lowered */
  bool declined; /* set by a lowering that does not handle this case (host evaluation instead) */
  uint64_t rng_seed;
  struct mlx_prog *prog;
  bool want_host; /* set by a declining lowering that asks for host evaluation (a Custom host kernel) */
} mlx_lower_ctx;

/* Lowers node n (operands in[]) into *out. Returns RLX_OK, or an error naming the node; a
 * lowering that does not cover this case calls mlx_decline (the node is then host-evaluated when
 * the CPU has a kernel for it, else compilation fails with the lowering's reason). */
typedef rlx_status (*mlx_lower_fn)(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out);

/* The native lowering table: [RLX_OP_Foo] = lower_foo, merged from the family tables. */
mlx_lower_fn mlx_native_lowering(rlx_op op);
extern const mlx_lower_fn mlx_lower_elementwise[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_linalg[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_shape[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_nn[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_backward[RLX_OP_COUNT];
/* Conv2dBackwardInput / Weight with groups = 1 (lower_nn.c; lower_backward.c checks groups). */
rlx_status mlx_lower_conv2d_backward(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out);
extern const mlx_lower_fn mlx_lower_random[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_signal[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_scatter[RLX_OP_COUNT];
extern const mlx_lower_fn mlx_lower_quant[RLX_OP_COUNT];
/* Elementwise building blocks (lower_elem.c), shared with the Custom-op builder (lower_custom.c). */
rlx_status mlx_activation_of(mlx_lower_ctx *c, int act, rlxm_arr *x, rlxm_arr **out);
rlx_status mlx_binary_of(mlx_lower_ctx *c, int op, rlxm_arr *a, rlxm_arr *b, rlxm_arr **out);
extern const mlx_lower_fn mlx_lower_custom[RLX_OP_COUNT];
/* The host kernel of a Custom node registered with rlx_mlx_register_custom_host_kernel, in the CPU
 * kernel signature (program.c's host evaluation calls it). */
rlx_status mlx_custom_host_kernel(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, void *ctx);
/* Kinds the document wants host-evaluated on the CPU reference kernel (never lowered natively). */
bool mlx_host_kind(rlx_op op);

rlx_status mlx_decline(mlx_lower_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* An error naming the node (op, id, name) and the MLX message when there is one. */
rlx_status mlx_node_error(const mlx_lower_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Checks a shim result: NULL becomes an error naming the node and MLX's message. */
rlx_status mlx_check(const mlx_lower_ctx *c, rlxm_arr *a, rlxm_arr **out);

/* Helpers for lowerings. */
const rlx_node *mlx_input_node(const mlx_lower_ctx *c, const rlx_node *n, uint32_t i);
const rlx_shape *mlx_in_shape(const mlx_lower_ctx *c, const rlx_node *n, uint32_t i);
rlxm_arr *mlx_scalar_like(mlx_lower_ctx *c, double v, rlx_dtype t);
bool mlx_is_float(rlx_dtype t);
/* How a value of shape s is stored in MLX: its own dtype, or (c128, which MLX lacks) its bytes as
 * a u8 vector. */
void mlx_storage_of(const rlx_shape *s, int *dtype, uint32_t *rank, int64_t *dims);

/* ---- programs ---- */
typedef struct mlx_prog mlx_prog;
typedef struct mlx_prog_info {
  uint32_t native_nodes, host_nodes; /* host_nodes counts those inside composed nodes too */
  uint32_t composed_nodes;           /* lowered through their shared decomposition */
  bool compiled;                     /* running under mx::compile */
  const char *mode_note;             /* e.g. "compiled mode fell back to lazy: node 3 (Cholesky) is host-evaluated" */
} mlx_prog_info;

rlx_status mlx_prog_create(const rlx_graph *g, const rlx_mlx_options *opt, uint64_t rng_seed, mlx_prog **out);
void mlx_prog_free(mlx_prog *p);
void mlx_prog_info_get(const mlx_prog *p, mlx_prog_info *out);
/* Whether node id is host-evaluated. */
bool mlx_prog_node_is_host(const mlx_prog *p, rlx_id id);
bool mlx_prog_node_is_composed(const mlx_prog *p, rlx_id id);
/* "native", "composed" (its decomposition, lowered natively), "composed+host" or "host". */
const char *mlx_prog_node_path(const mlx_prog *p, rlx_id id);
/* Param node `node` now has value a (the handle is copied; no data copy). */
rlx_status mlx_prog_bind_param(mlx_prog *p, rlx_id node, rlxm_arr *a);
/* Params by name (bodies read their enclosing graph's params by name). */
rlxm_arr *mlx_prog_param_by_name(const mlx_prog *p, const char *name);
/* Runs: inputs[i] = value of the i-th Input node (node order), typed and shaped as declared;
 * outputs[i] become scoped arrays of s, evaluated. */
rlx_status mlx_prog_run(mlx_prog *p, rlxm_scope *s, rlxm_arr *const *inputs, uint32_t n_inputs, rlxm_arr **outputs,
                        uint32_t n_outputs);
uint32_t mlx_prog_input_count(const mlx_prog *p);
rlx_id mlx_prog_input_node(const mlx_prog *p, uint32_t i);

#endif
