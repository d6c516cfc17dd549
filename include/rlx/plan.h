/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The memory plan (public: a backend may use it for its own arena, or ignore it; docs/backends.md):
 * one arena per executable, liveness over the schedule, O(n log n) placement (docs/compile.md), views aliasing
 * their root, no output overlapping its own inputs. */
#ifndef RLX_PLAN_H
#define RLX_PLAN_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_plan {
  size_t alignment;    /* of every slot (64) */
  size_t arena_size;   /* bytes */
  size_t tensor_bytes; /* sum of the sizes of all non-view tensors (what no reuse would need) */
  uint32_t n_nodes;
  /* Per node id: */
  size_t *offset;      /* byte offset of the node's tensor in the arena */
  size_t *size;        /* bytes of the node's tensor */
  rlx_id *root;        /* the node whose slot this node's tensor lives in (itself unless a view) */
  uint32_t *first_use; /* schedule step that produces it (leaves: 0) */
  uint32_t *last_use;  /* last schedule step that reads it (graph outputs, leaves: n_nodes) */
  /* Execution order: node ids, topological (here: the graph's own order). */
  rlx_id *schedule;
  uint32_t n_schedule;
} rlx_plan;

/* Is node `n` an aliasing view of its operand (Reshape, same-dtype Cast, Narrow on axis 0 or on an
 * axis after which... see plan.c for the exact rule)? Writes the byte offset into the root. */
bool rlx_plan_is_view(const rlx_graph *g, rlx_id id, size_t *byte_offset);

rlx_status rlx_plan_memory(const rlx_graph *g, const rlx_allocator *al, rlx_plan **out);
void rlx_plan_free(rlx_plan *p, const rlx_allocator *al);
/* A deep copy of p allocated with al (NULL = default). */
rlx_status rlx_plan_clone(const rlx_plan *p, const rlx_allocator *al, rlx_plan **out);

/* Independent checker: re-derives liveness from the schedule (not from the planner's arrays) and
 * rejects overlapping live tensors, reads after overwrite, outputs clobbered, slots outside the
 * arena, misaligned slots, ordering violations and outputs overlapping their inputs. */
rlx_status rlx_plan_check(const rlx_graph *g, const rlx_plan *p);

#ifdef __cplusplus
}
#endif
#endif
