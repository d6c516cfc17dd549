/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's lowering (lower.c): a planned graph becomes a list of kernel launches over
 * one device arena laid out by the memory plan. Independent of the backend contract glue. */
#ifndef RLX_CUDA_LOWER_H
#define RLX_CUDA_LOWER_H

#include "backends/cuda/cu.h"
#include "rlx/graph.h"
#include "rlx/plan.h"

typedef struct rlx_cu_prog rlx_cu_prog;

/* The op kinds the table in lower.c lowers (its non-empty rows plus the leaves). */
const rlx_op *rlx_cu_claim_list(uint32_t *n);
/* staged.c: the backend's whole claim list (the lowered kinds, the host-staged kinds and the
 * runtime-driven control kinds), the host-staged subset, the control subset, and why a kind is
 * host-staged (NULL when it is not). */
const rlx_op *rlx_cu_all_claims(uint32_t *n);
const rlx_op *rlx_cu_host_staged(uint32_t *n);
const rlx_op *rlx_cu_runtime_control(uint32_t *n);
const char *rlx_cu_staged_why(rlx_op op);

/* Allocates the arena, uploads constants and prepares one step per non-view node. Every node's
 * reason for failing is reported at once (node, op, dtype). */
/* rng_seed: the compile seed mixed into RngNormal / RngUniform keys (as the CPU does). */
rlx_status rlx_cu_prog_create(rlx_cu_ctx *c, const rlx_graph *g, const rlx_plan *plan, uint64_t rng_seed,
                              rlx_cu_prog **out);
void rlx_cu_prog_destroy(rlx_cu_prog *p);
/* The device address of node `id`'s tensor inside the arena. */
void *rlx_cu_prog_addr(const rlx_cu_prog *p, rlx_id id);
size_t rlx_cu_prog_size(const rlx_cu_prog *p, rlx_id id);
size_t rlx_cu_prog_arena_bytes(const rlx_cu_prog *p);
/* Queues every step on the context's stream (does not wait). */
rlx_status rlx_cu_prog_run(rlx_cu_prog *p);

#endif
