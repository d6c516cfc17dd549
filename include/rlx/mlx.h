/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Options of the MLX backend ("mlx"), passed as rlx_compile_options.backend_options.
 * The backend is compiled in when CMake finds the mlx-cpu SDK (cmake/mlx.cmake). */
#ifndef RLX_MLX_H
#define RLX_MLX_H

#include <stdbool.h>

#include "rlx/backend.h"

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

#ifdef __cplusplus
}
#endif
#endif
