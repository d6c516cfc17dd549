/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Harness of the reference-kernel tests test_ref_{elementwise,reduce,shape}.c: build one node
 * with declared shapes in the test's graph G, then run its CPU reference kernel on caller
 * buffers. (ref_b_test.h is the double-valued harness of the other ref tests.) */
#ifndef RLX_REF_A_TEST_H
#define RLX_REF_A_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "backends/cpu/cpu_kernels.h"
#include "rlx_test.h"
#include "attr_lists.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define SCALAR(t) rlx_shape_scalar(RLX_##t)
#define T(ptr, shape) ((rlx_tensor){(void *)(ptr), (shape)})
#define NT(...) ((uint32_t)(sizeof((rlx_tensor[]){__VA_ARGS__}) / sizeof(rlx_tensor)))
#define RUN(Op, attrs, out, ...) \
  ra_run(rlx_cpu_ref_##Op, RLX_OP_##Op, (attrs), (out), NT(__VA_ARGS__), (rlx_tensor[]){__VA_ARGS__})

/* The graph the test's nodes live in (created by the test's main). */
static rlx_graph *G;

static inline rlx_status ra_run(rlx_cpu_kernel k, rlx_op op, const void *attrs, rlx_tensor *out, uint32_t nin,
                                const rlx_tensor *ins) {
  static int counter;
  static rlx_cpu_ctx ctx = {.threads = 1};
  rlx_id ids[16], id;
  for (uint32_t i = 0; i < nin; i++) {
    char name[32];
    snprintf(name, sizeof name, "in%d", counter++);
    RLX_TRY(rlx_input(G, name, ins[i].shape, &ids[i]));
  }
  RLX_TRY(rlx_graph_add_unchecked(G, op, ids, nin, attrs, &out->shape, "t", &id));
  rlx_clear_error();
  return k(rlx_graph_node(G, id), ins, nin, out, &ctx);
}

/* Equal within rtol (relative to max(1, |want|)); NaN matches NaN, infinities must match exactly. */
static inline bool near(double got, double want, double rtol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= rtol * fmax(1.0, fabs(want));
}

#endif
