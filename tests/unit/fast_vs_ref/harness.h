/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The harness of test_fast_vs_ref (harness.c): deterministic operand data, one-node cases, and
 * the comparisons of a fast kernel with its reference twin. */
#ifndef RLX_TEST_FAST_VS_REF_HARNESS_H
#define RLX_TEST_FAST_VS_REF_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "rlx/cpu.h"
#include "attr_lists.h"

#define MAX_IN 4
#define F32_RTOL 2e-5
#define F32_ATOL 1e-6

typedef enum fill_kind {
  FILL_UNIFORM, /* uniform in [-1, 1] */
  FILL_TIES,    /* a few distinct values: many exact ties */
  FILL_SPECIAL, /* uniform with some NaN, +-inf, -0 */
  FILL_LABELS,  /* integers in [0, classes) */
  FILL_BOOL,    /* 0 / 1 */
  FILL_WIDE     /* uniform in [-40, 40] (saturating activations) */
} fill_kind;

typedef struct tcase {
  rlx_graph *g;
  const rlx_node *node;
  rlx_tensor in[MAX_IN];
  uint32_t n_in;
} tcase;

typedef struct targ {
  rlx_shape shape;
  fill_kind fill;
} targ;

extern rlx_cpu_pool *pools[4]; /* pools[t] has t threads (made by main) */

/* uniform in [0, 1) from rng_state (a case may save, reseed and restore it) */
extern uint64_t rng_state;
double urand(void);
size_t numel(const rlx_shape *s);
void fill(rlx_tensor *t, fill_kind k, int classes);
void case_free(tcase *c);
/* Builds node `op` over fresh inputs; `declared` may be NULL (shape rule). */
bool build(tcase *c, rlx_op op, const void *attrs, const rlx_shape *declared, uint32_t n, const targ *args,
           int classes);
bool close_enough(double f, double r, double rtol, double atol);
/* Runs ref and fast (threads 1, 2, 3) and compares. */
void run_case(const char *what, tcase *c, double rtol, double atol);
/* On the AVX-512 path: the fast kernel gives the scalar path's bits (NaN payloads aside). */
void same_bits_on_scalar(const char *what, tcase *c);
/* The fast kernel must decline this case. */
void expect_declined(const char *what, tcase *c);

/* gemm_packed_api.c: fk_gemm_pack_b / fk_gemm_packed bit for bit against fmaf chains */
void test_gemm_packed_api(void);
/* region.c: ElementwiseRegion chains block by block against the step-by-step reference */
void test_region(void);

#endif
