/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pattern fusion (pattern.c, rules in pattern_rules.c): the decomposed forms ONNX exporters emit
 * for LayerNorm, GELU, SiLU, HardSwish and attention are found and replaced by the fused kinds,
 * rule by rule, where the backend claims the fused kind; so is the sum of zero Pads that autodiff
 * writes for Narrows tiling an axis (it becomes their Concat).
 *
 * A rule is data: a table of slots (slot `root` is where a match starts). A slot is
 *   PS_OP    a node of kind `op` (and sub-kind `sub`: binop, activation or reduce op; -1 = any)
 *            whose operands match slots in[0..n_in) (Add, Mul, Max and Min also with the two
 *            swapped);
 *   PS_VAR   any value (captured);
 *   PS_CONST a Constant (f32 or f64) whose elements are all `value`, or all one value when
 *            `any_value` (captured as the slot's value);
 *   PS_ALT   the first of the slots in[0..n_in) that matches.
 * A slot met twice must bind the same node (the x of x - mean(x) and of mean(x) is one value).
 * After the structural match, every node bound to a PS_OP slot other than the root must have no
 * user outside the match (and not be a graph output), then the rule's `check` looks at shapes and
 * attributes, and `emit` builds the fused node in the new graph. */
#ifndef RLX_PASSES_PATTERN_H
#define RLX_PASSES_PATTERN_H

#include "passes/passes.h"

enum { PS_OP = 1, PS_VAR, PS_CONST, PS_ALT };
#define PAT_MAX_SLOTS 40
#define PAT_MAX_IN 3

typedef struct pat_slot {
  uint8_t kind;
  rlx_op op;
  int16_t sub;
  uint8_t n_in;
  uint8_t in[PAT_MAX_IN];
  bool any_value;
  double value;
} pat_slot;

/* The bindings of one match: slot -> node of the source graph (RLX_NO_ID: unbound), and the
 * value of each PS_CONST slot. */
typedef struct pat_match {
  const rlx_graph *g;
  rlx_id bound[PAT_MAX_SLOTS];
  double cval[PAT_MAX_SLOTS];
} pat_match;

typedef struct pat_rule {
  const char *name;
  rlx_op fused; /* the kind the backend must claim for the rule to fire */
  const pat_slot *slots;
  uint8_t n_slots;
  uint8_t root;
  /* Shapes, dtypes and attributes; false declines the match. */
  bool (*check)(const pat_match *m);
  /* Builds the replacement in dst; map takes source ids to dst ids (every bound PS_VAR slot is
   * mapped). */
  rlx_status (*emit)(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out);
} pat_rule;

extern const pat_rule rlx_pattern_rules[];
extern const uint32_t rlx_pattern_rule_count;

/* Slot constructors for the rule tables. */
#define PAT_BIN(o, a, b)                                                                   \
  {                                                                                        \
    .kind = PS_OP, .op = RLX_OP_Binary, .sub = RLX_BINOP_##o, .n_in = 2, .in = {(a), (b) } \
  }
#define PAT_ACT(k, a)                                                                   \
  {                                                                                     \
    .kind = PS_OP, .op = RLX_OP_Activation, .sub = RLX_ACT_##k, .n_in = 1, .in = {(a) } \
  }
#define PAT_OP1(o, a)                                                   \
  {                                                                     \
    .kind = PS_OP, .op = RLX_OP_##o, .sub = -1, .n_in = 1, .in = {(a) } \
  }
#define PAT_OP2(o, a, b)                                                     \
  {                                                                          \
    .kind = PS_OP, .op = RLX_OP_##o, .sub = -1, .n_in = 2, .in = {(a), (b) } \
  }
#define PAT_RED(k, a)                                                                  \
  {                                                                                    \
    .kind = PS_OP, .op = RLX_OP_Reduce, .sub = RLX_REDUCE_##k, .n_in = 1, .in = {(a) } \
  }
#define PAT_VAR \
  { .kind = PS_VAR }
#define PAT_CONST(v) \
  { .kind = PS_CONST, .value = (v) }
#define PAT_ANYCONST \
  { .kind = PS_CONST, .any_value = true }
#define PAT_ALT2(a, b)                           \
  {                                              \
    .kind = PS_ALT, .n_in = 2, .in = {(a), (b) } \
  }
#define PAT_ALT3(a, b, c)                             \
  {                                                   \
    .kind = PS_ALT, .n_in = 3, .in = {(a), (b), (c) } \
  }

/* The node bound to a slot (NULL when unbound). */
const rlx_node *pat_node(const pat_match *m, uint8_t slot);

/* Runs every rule whose fused kind is claimed; writes the rewritten graph to *out, or NULL when
 * nothing fired (g is then the result), and, when `fired` is not NULL, the number of matches per
 * rule index into fired[0..rlx_pattern_rule_count). Dead nodes are left for DCE. */
rlx_status rlx_pattern_fuse(const rlx_graph *g, const uint8_t claimed[RLX_OP_COUNT], uint32_t *fired, rlx_graph **out);

#endif
