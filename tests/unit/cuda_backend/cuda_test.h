/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers the parts of test_cuda_backend share (defined in claims.c). */
#ifndef RLX_TEST_CUDA_TEST_H
#define RLX_TEST_CUDA_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/session.h"

/* n floats uniform in [lo, hi) from a linear congruential generator seeded by seed */
float *cuda_test_vals(size_t n, uint32_t seed, float lo, float hi);
/* g compiled and run on cpu (index 0) and cuda (index 1); the caller frees both executables
 * (rlx_executable_free takes NULL) and reads the outputs before that. */
typedef struct cuda_test_runs {
  rlx_executable *e[2];
  const rlx_tensor *out[2];
  uint32_t n_out[2];
} cuda_test_runs;
/* false when a backend did not compile g (the failure is already recorded) */
bool cuda_test_run_both(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, cuda_test_runs *r);
/* Runs g on cpu and cuda; every output is f32. Returns the worst difference scaled by
 * max(1, max |cpu|) per output; *e_cuda keeps the cuda executable when asked for. */
double cuda_test_cpu_vs_cuda(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, rlx_executable **e_cuda);

#endif
