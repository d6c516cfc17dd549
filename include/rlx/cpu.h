/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Options of the CPU backend ("cpu"), passed as rlx_compile_options.backend_options. */
#ifndef RLX_CPU_H
#define RLX_CPU_H

#include <stdbool.h>

#include "rlx/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_cpu_options {
  rlx_backend_options_header header; /* .backend = "cpu" (set by rlx_cpu_options_init) */
  int threads;                       /* worker threads of the fast kernels; 0 = all cores */
  /* Fixed reduction trees independent of the thread count: results are bit-identical for every
   * `threads` (docs/cpu-backend.md). */
  bool deterministic;
} rlx_cpu_options;

void rlx_cpu_options_init(rlx_cpu_options *o);

#ifdef __cplusplus
}
#endif
#endif
