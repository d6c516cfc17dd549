/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers the parts of test_cuda_backend share (defined in claims.c). */
#ifndef RLX_TEST_CUDA_TEST_H
#define RLX_TEST_CUDA_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/session.h"

/* n floats uniform in [lo, hi) from a linear congruential generator seeded by seed */
float *cuda_test_vals(size_t n, uint32_t seed, float lo, float hi);
/* Runs g on cpu and cuda; every output is f32. Returns the worst difference scaled by
 * max(1, max |cpu|) per output; *e_cuda keeps the cuda executable when asked for. */
double cuda_test_cpu_vs_cuda(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, rlx_executable **e_cuda);

#endif
