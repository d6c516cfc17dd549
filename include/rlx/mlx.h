/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Options of the MLX backend ("mlx"), passed as rlx_compile_options.backend_options.
 * The backend is compiled in when CMake finds the mlx-cpu SDK (cmake/mlx.cmake). */
#ifndef RLX_MLX_H
#define RLX_MLX_H

#include <stdbool.h>

#include "rlx/backend.h"
#include "rlx/custom.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_mlx_mode {
  RLX_MLX_LAZY = 0, /* default: the run builds one lazy MLX graph and evaluates it once */
  RLX_MLX_EAGER,    /* evaluates after every node (debugging: errors surface at their node) */
  RLX_MLX_COMPILED  /* mx::compile of the whole graph; falls back to lazy when a node is
                       host-evaluated (the dispatch report says so) */
} rlx_mlx_mode;

typedef struct rlx_mlx_options {
  rlx_backend_options_header header; /* .backend = "mlx" (set by rlx_mlx_options_init) */
  rlx_mlx_mode mode;
  /* Compiled mode runs g++ at run time and caches the generated kernels under this folder
   * (MLX's TMPDIR); NULL = $XDG_CACHE_HOME/rlx/mlx (else ~/.cache/rlx/mlx). Process-wide: the
   * first compiled executable's choice holds. */
  const char *compile_cache_dir;
} rlx_mlx_options;

void rlx_mlx_options_init(rlx_mlx_options *o);

/* The folder compiled mode uses for its kernel cache (after the first compiled executable). */
const char *rlx_mlx_compile_cache_dir(void);

/* ---- user Custom ops on MLX ----
 * A Custom node (include/rlx/custom.h, docs/custom-ops.md) compiles for the MLX backend only when
 * its op has an MLX kernel, registered in one of two forms (the op itself must be registered with
 * rlx_custom_register first; a name takes one MLX kernel of each form, the lowering wins):
 *
 *  - a lowering: a callback that builds the node's value out of MLX operations on the operands'
 *    arrays, with the rlx_mlx_* builder functions below. It runs while the backend builds its lazy
 *    MLX graph (at compile time and on every lazy run; traced once in compiled mode), so it must
 *    only build, never read values;
 *  - a host kernel: a function of the CPU kernel's signature (rlx_custom_cpu_kernel_fn), run inside
 *    the lazy MLX graph as an MLX custom primitive on the operands' row-major bytes (like the
 *    backend's host-evaluated kinds; a graph holding one runs lazily, not compiled).
 *
 * A Custom node whose op has neither is a compile error naming the node and the op. The registry
 * borrows fn and user: they must outlive every executable built with them. */
typedef struct rlx_mlx_builder rlx_mlx_builder; /* the lowering's context (valid during the call) */
typedef struct rlx_mlx_array rlx_mlx_array;     /* an MLX array of the graph being built (same) */

/* Builds *out (of the node's declared shape `out_shape`: dtype and dims are checked) from in[].
 * Return RLX_OK, or an error status with a message (rlx_errorf); a builder function that returns
 * NULL has left its reason in rlx_mlx_builder_error(b). */
typedef rlx_status (*rlx_mlx_custom_lower_fn)(rlx_mlx_builder *b, rlx_mlx_array *const *in, uint32_t n_in,
                                              const rlx_shape *out_shape, const uint8_t *attrs, size_t attrs_len,
                                              void *user, rlx_mlx_array **out);

rlx_status rlx_mlx_register_custom_lowering(const char *name, rlx_mlx_custom_lower_fn fn, void *user);
rlx_status rlx_mlx_register_custom_host_kernel(const char *name, rlx_custom_cpu_kernel_fn fn, void *user);

/* Builder functions. Each returns NULL on failure (a NULL operand, an MLX error: shapes that do
 * not broadcast, ...) with the reason in rlx_mlx_builder_error(b); NULL operands propagate, so a
 * chain of calls may be checked once at the end. Arrays belong to the builder. */
const char *rlx_mlx_builder_error(const rlx_mlx_builder *b);
/* Shape and dtype of an array (rank <= RLX_MAX_RANK). */
rlx_shape rlx_mlx_shape_of(const rlx_mlx_array *a);
rlx_mlx_array *rlx_mlx_scalar(rlx_mlx_builder *b, double value, rlx_dtype dtype);
/* The activations and binary ops of the IR, with the MLX backend's own lowering of them
 * (broadcasting as MLX does; operands of one dtype). */
rlx_mlx_array *rlx_mlx_activation(rlx_mlx_builder *b, rlx_act act, rlx_mlx_array *x);
rlx_mlx_array *rlx_mlx_binary(rlx_mlx_builder *b, rlx_binop op, rlx_mlx_array *x, rlx_mlx_array *y);
/* cond ? x : y (cond bool, or non-zero) */
rlx_mlx_array *rlx_mlx_where(rlx_mlx_builder *b, rlx_mlx_array *cond, rlx_mlx_array *x, rlx_mlx_array *y);
rlx_mlx_array *rlx_mlx_cast(rlx_mlx_builder *b, rlx_mlx_array *x, rlx_dtype to);
rlx_mlx_array *rlx_mlx_matmul(rlx_mlx_builder *b, rlx_mlx_array *x, rlx_mlx_array *y);
rlx_mlx_array *rlx_mlx_reshape(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *dims);
rlx_mlx_array *rlx_mlx_transpose(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *perm);
rlx_mlx_array *rlx_mlx_broadcast(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *dims);
/* Sum / mean / max / min / prod over the listed axes (negative counts from the end). */
rlx_mlx_array *rlx_mlx_reduce(rlx_mlx_builder *b, rlx_reduce op, rlx_mlx_array *x, uint32_t n_axes, const int64_t *axes,
                              bool keep_dims);

#ifdef __cplusplus
}
#endif
#endif
