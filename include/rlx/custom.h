/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* User extension ops: the registry behind the `Custom` op kind (spec ir-special §7).
 *
 * A Custom node carries {name, num_inputs, attrs (opaque bytes)}. Its behaviour comes from this
 * process-global registry, keyed by name:
 *   - the op itself (rlx_custom_register): arity, an optional shape rule (called when the node is
 *     built; without one the node must be given its output shape explicitly), an optional VJP
 *     builder (without one a gradient reaching the node is an error naming it);
 *   - one kernel per backend (rlx_custom_register_kernel), keyed by the backend's name ("cpu";
 *     later "mlx", "cuda"): a function pointer plus user data. The CPU kernel receives host
 *     tensors. A backend compiling a graph with a Custom node whose name is not registered, or has
 *     no kernel for that backend, fails with an error naming the op and the node.
 * Registering an op or a kernel under a name that is taken is an error (RLX_ERR_INVALID_ARG);
 * rlx_custom_unregister removes an op and all its kernels. The registry is safe to use from
 * several threads (a mutex guards it); the functions and user data it holds are borrowed and must
 * outlive every graph and executable that uses them. */
#ifndef RLX_CUSTOM_H
#define RLX_CUSTOM_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/graph.h"
#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output shape (dtype + dims) from the operand shapes and the node's attribute bytes. Return a
 * status with a message (rlx_errorf) to reject the operands. */
typedef rlx_status (*rlx_custom_shape_fn)(const rlx_shape *const *in, uint32_t n_in, const uint8_t *attrs,
                                          size_t attrs_len, void *user, rlx_shape *out);

/* Emits into g the gradients of the operands: x[i] are the operand values, y the forward value, dy
 * its cotangent (all ids of g). dx[i] arrives as RLX_NO_ID; set it to a node of exactly operand i's
 * shape, or leave RLX_NO_ID for no gradient. want[i] says whether operand i needs one. */
typedef rlx_status (*rlx_custom_vjp_fn)(rlx_graph *g, const rlx_id *x, uint32_t n_in, rlx_id y, rlx_id dy,
                                        const bool *want, const uint8_t *attrs, size_t attrs_len, void *user,
                                        rlx_id *dx);

/* Computes the output. in[i] / out are dense row-major host tensors of the node's operand and
 * output shapes (out->data is preallocated). The opaque kernel signature of other backends is
 * theirs to define; the registry only stores the pointer. */
typedef rlx_status (*rlx_custom_cpu_kernel_fn)(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                               const uint8_t *attrs, size_t attrs_len, void *user);

typedef struct rlx_custom_op_desc {
  const char *name; /* copied */
  uint32_t num_inputs;
  rlx_custom_shape_fn infer; /* optional */
  rlx_custom_vjp_fn vjp;     /* optional */
  void *user;                /* handed to infer and vjp */
} rlx_custom_op_desc;

rlx_status rlx_custom_register(const rlx_custom_op_desc *desc);
/* Removes the op and its kernels; RLX_ERR_NOT_FOUND when it is not registered. */
rlx_status rlx_custom_unregister(const char *name);
/* Copies the op's descriptor into *out (name borrowed from the registry until unregistered);
 * false when no op of that name is registered. */
bool rlx_custom_lookup(const char *name, rlx_custom_op_desc *out);

/* A kernel for one backend. `fn` is the backend's kernel type cast to a generic function pointer
 * (for "cpu": rlx_custom_cpu_kernel_fn, see rlx_custom_register_cpu_kernel). The op must be
 * registered first. */
typedef void (*rlx_custom_fn_ptr)(void);
rlx_status rlx_custom_register_kernel(const char *name, const char *backend, rlx_custom_fn_ptr fn, void *user);
rlx_status rlx_custom_register_cpu_kernel(const char *name, rlx_custom_cpu_kernel_fn fn, void *user);
/* The kernel of op `name` for `backend`: RLX_OK with *fn / *user, or an error (RLX_ERR_UNSUPPORTED)
 * whose message names the op and says what is missing. */
rlx_status rlx_custom_find_kernel(const char *name, const char *backend, rlx_custom_fn_ptr *fn, void **user);

/* Builds a Custom node of a registered op (shape from its rule; `declared` may be NULL then). */
rlx_status rlx_custom(rlx_graph *g, const char *name, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                      size_t attrs_len, const rlx_shape *declared, rlx_id *out);

#ifdef __cplusplus
}
#endif

#endif
