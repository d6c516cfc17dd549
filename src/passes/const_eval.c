/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The one constant evaluator: evaluates an op on constant operands with the CPU reference
 * kernels. The compile pipeline's simplify pass and the ONNX importer both fold through it, with
 * one rule for what may be folded. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "passes/passes.h"

bool rlx_const_foldable(rlx_op op) {
  uint32_t p = rlx_op_props(op);
  if (p & (RLX_PROP_LEAF | RLX_PROP_SUBGRAPH | RLX_PROP_RANDOM | RLX_PROP_INPLACE)) return false;
  return rlx_cpu_ref_table[op] != NULL;
}

rlx_status rlx_const_eval(const rlx_allocator *al, const rlx_node *n, const rlx_tensor *in, uint32_t n_in,
                          uint64_t rng_seed, bool *done, void **out, size_t *out_bytes) {
  *done = false;
  *out = NULL;
  if (!rlx_const_foldable(n->op)) return RLX_OK;
  size_t nbytes;
  if (!rlx_shape_is_static(&n->shape) || rlx_shape_nbytes(&n->shape, &nbytes) != RLX_OK) return RLX_OK;
  void *buf = al->alloc(al->ctx, nbytes ? nbytes : 1);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "out of memory folding a constant of %zu bytes", nbytes);
  memset(buf, 0, nbytes ? nbytes : 1);
  rlx_tensor tout = {buf, n->shape};
  rlx_cpu_ctx ctx = {.threads = 1, .rng_seed = rng_seed};
  rlx_status st = rlx_cpu_ref_table[n->op](n, in, n_in, &tout, &ctx);
  if (st != RLX_OK) {
    al->free(al->ctx, buf);
    /* a data-dependent failure stays in the graph and is reported when it runs */
    return st == RLX_ERR_OOM ? st : RLX_OK;
  }
  *done = true;
  *out = buf;
  *out_bytes = nbytes;
  return RLX_OK;
}
