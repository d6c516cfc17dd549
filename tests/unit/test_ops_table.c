/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The op table must cover exactly the 187 kinds of shared/spec/opkinds.txt with every entry the
 * tables require. */
#include <stdlib.h>

#include "rlx_test.h"
#include "ir/ir_internal.h"

int main(void) {
  CHECK(RLX_OP_COUNT == 187);
  for (int i = 0; i < RLX_OP_COUNT; i++) {
    rlx_op op = (rlx_op)i, back;
    const char *name = rlx_op_name(op);
    CHECK_MSG(name && name[0], "op %d has no name", i);
    CHECK_MSG(rlx_op_from_name(name, strlen(name), &back) && back == op, "name %s does not map back", name);
    CHECK_MSG(rlx_op_family(op) < RLX_FAMILY_COUNT, "%s has no family", name);
    CHECK_MSG(rlx_op_min_inputs(op) <= rlx_op_max_inputs(op), "%s arity range inverted", name);
    CHECK_MSG(rlx_infer_table[i] != NULL, "%s has no shape rule", name);
    uint32_t n;
    const rlx_field *f = rlx_op_fields(op, &n);
    CHECK_MSG((n == 0) == (rlx_op_attrs_size(op) == 0), "%s: attribute struct and descriptors disagree", name);
    for (uint32_t k = 0; k < n; k++) {
      CHECK_MSG(f[k].name && f[k].name[0], "%s field %u unnamed", name, k);
      CHECK_MSG(f[k].offset < rlx_op_attrs_size(op), "%s.%s offset outside struct", name, f[k].name);
      if (f[k].type == RLX_FT_ENUM || f[k].type == RLX_FT_OENUM) CHECK(f[k].enm != NULL);
    }
    /* Leaves have no operands; subgraph ops have a graph field. */
    if (rlx_op_has(op, RLX_PROP_LEAF)) CHECK(rlx_op_max_inputs(op) == 0);
    if (rlx_op_has(op, RLX_PROP_SUBGRAPH)) {
      bool has_graph = false;
      for (uint32_t k = 0; k < n; k++) has_graph |= f[k].type == RLX_FT_GRAPH;
      CHECK_MSG(has_graph, "%s is marked subgraph but has no body field", name);
    }
  }
  /* Exactly the names of the spec, in its order. */
  size_t len;
  char *txt = rlx_test_read_file(rlx_test_src_path("../shared/spec/opkinds.txt"), &len);
  if (!txt) txt = rlx_test_read_file(rlx_test_src_path("tests/data/opkinds.txt"), &len);
  CHECK_MSG(txt != NULL, "cannot read opkinds.txt");
  if (txt) {
    int idx = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
      if (!*line) continue;
      CHECK_MSG(idx < RLX_OP_COUNT && strcmp(line, rlx_op_name((rlx_op)idx)) == 0,
                "kind %d: spec says %s, table says %s", idx, line,
                idx < RLX_OP_COUNT ? rlx_op_name((rlx_op)idx) : "(none)");
      idx++;
    }
    CHECK(idx == RLX_OP_COUNT);
    free(txt);
  }
  /* Defaults: attrs_init then equality with itself, hash stable. */
  for (int i = 0; i < RLX_OP_COUNT; i++) {
    rlx_attrs a, b;
    rlx_attrs_init((rlx_op)i, &a);
    rlx_attrs_init((rlx_op)i, &b);
    CHECK(rlx_attrs_equal((rlx_op)i, &a, &b));
    CHECK(rlx_attrs_hash((rlx_op)i, &a) == rlx_attrs_hash((rlx_op)i, &b));
  }
  return rlx_test_finish("ops_table");
}
