/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU reference kernel interface. One kernel per claimed op kind: rlx_cpu_ref_<Op>, defined
 * in ref/<family>.c and collected in the table rlx_cpu_ref_table (ref/table.c). Kernels are plain,
 * readable C: the oracle every other backend is checked against. */
#ifndef RLX_CPU_KERNELS_H
#define RLX_CPU_KERNELS_H

#include "rlx/graph.h"
#include "rlx/session.h"

typedef struct rlx_cpu_ctx rlx_cpu_ctx;

typedef struct rlx_cpu_pool rlx_cpu_pool; /* fast/threads.c */

struct rlx_cpu_ctx {
  int threads;        /* worker threads the kernel may use (>= 1) */
  uint64_t rng_seed;  /* compile-time seed mixed into RNG keys */
  rlx_cpu_pool *pool; /* worker pool of the fast kernels (NULL: they run on one thread) */
  bool deterministic; /* results independent of `threads`: every reduction split across
                               threads uses a split that depends on the shape only (fast.h) */
};

/* `out->data` is preallocated with the node's declared shape (out->shape); inputs never alias the
 * output. Returns RLX_ERR_RUNTIME for data-dependent failures (index out of range, singular
 * matrix), naming the node's op. */
typedef rlx_status (*rlx_cpu_kernel)(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                     rlx_cpu_ctx *ctx);

#define RLX_CPU_KERNEL(N) \
  rlx_status rlx_cpu_ref_##N(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, rlx_cpu_ctx *ctx)

/* One declaration per op kind, expanded from the op table; ref/<family>.c defines the kernels
 * that exist and rlx_cpu_ref_table lists them. */
#define RLX_OP(N, ...) RLX_CPU_KERNEL(N);
#define RLX_OPA(N, ...) RLX_CPU_KERNEL(N);
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA

/* NULL entries: no CPU kernel; the op must be decomposed before reaching the CPU backend. */
extern const rlx_cpu_kernel rlx_cpu_ref_table[RLX_OP_COUNT];

/* Fast kernels (fast/<family>.c, table in fast/table.c): optimised f32 twins of some reference
 * kernels, each for a subset of its op's cases. `applies` reads only the node and the operand
 * shapes (in[i].shape; data may be NULL) and says whether `kernel` handles exactly this case; the
 * executor asks it once per node at compile time (static shapes) and runs the reference kernel
 * otherwise. A fast kernel may only be called with operands for which `applies` returned true. */
typedef bool (*rlx_cpu_applies_fn)(const rlx_node *n, const rlx_tensor *in, uint32_t n_in);
typedef struct rlx_cpu_fast_kernel {
  rlx_cpu_applies_fn applies; /* NULL: the op has no fast kernel */
  rlx_cpu_kernel kernel;
} rlx_cpu_fast_kernel;
extern const rlx_cpu_fast_kernel rlx_cpu_fast_table[RLX_OP_COUNT];

/* Helpers for kernels (ref/common.c). */
size_t rlx_tensor_numel(const rlx_tensor *t);
/* Row-major strides (in elements) of a static shape. */
void rlx_strides(const rlx_shape *s, int64_t strides[RLX_MAX_RANK]);
/* Offset (in elements) of the element of operand shape `in` that broadcasts to output index
 * `out_index` (flat) of output shape `out` (NumPy right alignment). */
size_t rlx_broadcast_offset(const rlx_shape *in, const rlx_shape *out, size_t out_index);
/* RLX_OK when the Custom node n has a kernel registered for "cpu", else an error naming the op
 * (ref/custom.c; the backend asks at compile time). */
rlx_status rlx_cpu_check_custom(const rlx_node *n);
rlx_status rlx_kernel_error(const rlx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
