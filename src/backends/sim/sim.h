/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The "sim" test backend (backend.c): a device with its own memory and counted copies. */
#ifndef RLX_SIM_H
#define RLX_SIM_H

#include "rlx/backend.h"

typedef struct rlx_sim_counts {
  uint64_t uploads, upload_bytes;     /* host -> sim memory */
  uint64_t downloads, download_bytes; /* sim memory -> host */
  uint64_t copies, copy_bytes;        /* inside sim memory (arena <-> buffers) */
} rlx_sim_counts;

/* Process-wide totals since start (tests take differences). */
void rlx_sim_counters(rlx_sim_counts *out);

const rlx_backend *rlx_sim_backend(void);

#endif
