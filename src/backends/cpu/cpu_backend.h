/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU backend: claims (claims.c) and the executor (backend.c). */
#ifndef RLX_CPU_BACKEND_H
#define RLX_CPU_BACKEND_H

#include "rlx/backend.h"

/* The claimed kinds in op-kind order (leaves + every kind of rlx_cpu_ref_table); *n = how many. */
const rlx_op *rlx_cpu_claim_list(uint32_t *n);

/* The backend record, registered as "cpu" by the registry on first use. */
const rlx_backend *rlx_cpu_backend(void);

#endif
