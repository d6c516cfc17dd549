/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Op kinds the CPU backend claims: the leaves (bound by the executor), every kind with a
 * reference kernel in ref/table.c, and the control-flow kinds whose bodies the runtime runs on
 * this backend. Derived from that table, so a new kernel is claimed by adding its table row and
 * nothing else. */
#include <pthread.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"

static rlx_op claims[RLX_OP_COUNT];
static uint32_t n_claims;
static pthread_once_t claims_once = PTHREAD_ONCE_INIT;

static void build_claims(void) {
  for (int k = 0; k < RLX_OP_COUNT; k++)
    if (rlx_op_has((rlx_op)k, RLX_PROP_LEAF) || rlx_cpu_ref_table[k] || k == RLX_OP_If || k == RLX_OP_While ||
        k == RLX_OP_Scan || k == RLX_OP_ScanBackward || k == RLX_OP_ScanBackwardXs)
      claims[n_claims++] = (rlx_op)k;
}

const rlx_op *rlx_cpu_claim_list(uint32_t *n) {
  pthread_once(&claims_once, build_claims);
  *n = n_claims;
  return claims;
}
