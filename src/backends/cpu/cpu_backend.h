/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU backend: claims (claims.c) and the executor (backend.c). */
#ifndef RLX_CPU_BACKEND_H
#define RLX_CPU_BACKEND_H

#include "rlx/backend.h"

extern const rlx_op rlx_cpu_claims[];
extern const uint32_t rlx_cpu_n_claims;

/* The backend record, registered as "cpu" by the registry on first use. */
const rlx_backend *rlx_cpu_backend(void);

#endif
