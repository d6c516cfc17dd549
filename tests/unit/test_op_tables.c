/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Per-kind tables against the op properties of ops.def:
 *  - every CPU-claimed kind has a reference kernel, and every kernel is claimed;
 *  - every composite / lowerable kind (P_FUSED, P_LOWER) has a shared decomposition;
 *  - every differentiable kind (P_DIFF) has a VJP rule.
 * There are no gap lists left: every kind has its entry. */
#include "rlx_test.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "passes/passes.h"

int main(void) {
  uint8_t claimed[RLX_OP_COUNT] = {0};
  uint32_t n_cpu;
  const rlx_op *cpu = rlx_cpu_claim_list(&n_cpu);
  for (uint32_t i = 0; i < n_cpu; i++) {
    CHECK_MSG(!claimed[cpu[i]], "%s claimed twice", rlx_op_name(cpu[i]));
    claimed[cpu[i]] = 1;
  }
  for (int k = 0; k < RLX_OP_COUNT; k++) {
    rlx_op op = (rlx_op)k;
    const char *name = rlx_op_name(op);
    bool leaf = rlx_op_has(op, RLX_PROP_LEAF);
    bool runtime = rlx_backend_runtime_controls(rlx_cpu_backend(), op); /* bodies run by the runtime */
    if (claimed[k] && !leaf && !runtime)
      CHECK_MSG(rlx_cpu_ref_table[k] != NULL, "CPU claims %s but has no reference kernel", name);
    if (runtime) CHECK_MSG(claimed[k] && !rlx_cpu_ref_table[k], "%s is runtime control flow on the CPU", name);
    if (rlx_cpu_ref_table[k]) CHECK_MSG(claimed[k], "%s has a CPU kernel but the CPU does not claim it", name);
    if (leaf) CHECK_MSG(claimed[k], "CPU must claim leaf %s", name);

    bool needs_dec = rlx_op_has(op, RLX_PROP_FUSED) || rlx_op_has(op, RLX_PROP_LOWER);
    if (needs_dec)
      CHECK_MSG(rlx_decompose_table[k] != NULL, "%s is composite/lowerable but has no decomposition", name);
    bool diff = rlx_op_has(op, RLX_PROP_DIFF);
    bool has_path = rlx_has_vjp(op) || rlx_decompose_table[k] != NULL;
    if (diff) CHECK_MSG(has_path, "%s is differentiable but has no VJP rule or decomposition", name);
    /* Every kind runs somewhere on the CPU path: a kernel, a decomposition, or a listed gap. */
    if (!leaf && !rlx_cpu_ref_table[k] && !rlx_decompose_table[k])
      fprintf(stderr, "note: %s has neither a CPU kernel nor a decomposition (unsupported on the CPU)\n", name);
  }
  return rlx_test_finish("op_tables");
}
