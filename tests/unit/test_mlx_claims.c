/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend claims exactly the kinds of the founding document's list
 * (tests/data/mlx_supported_ops.txt, a copy of shared/spec/mlx_supported_ops.txt), each once,
 * and every kind it leaves out has a shared decomposition, so the dispatch report shows it as
 * decomposed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "passes/passes.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
#include "backends/mlx/backend.h"
#include "backends/mlx/mlx_internal.h"

/* Unclaimed kinds whose shared decomposition does not exist yet in this tree (other issues write
 * them); a graph holding one fails to compile for MLX with the legalizer's message. Checked both
 * ways, so the list shrinks as the decompositions land. */
static const rlx_op known_gaps[] = {
    RLX_OP_FftQ,
};
static bool known_gap(rlx_op op) {
  for (size_t i = 0; i < sizeof known_gaps / sizeof known_gaps[0]; i++)
    if (known_gaps[i] == op) return true;
  return false;
}

static void check_list(void) {
  const char *dir = getenv("RLX_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/mlx_supported_ops.txt", dir ? dir : ".");
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  if (!f) return;
  uint8_t want[RLX_OP_COUNT] = {0}, have[RLX_OP_COUNT] = {0};
  char line[256];
  uint32_t n_want = 0;
  while (fgets(line, sizeof line, f)) {
    size_t len = strcspn(line, "\r\n");
    line[len] = 0;
    if (!len) continue;
    rlx_op op;
    if (!rlx_op_from_name(line, len, &op)) {
      fprintf(stderr, "the list names '%s', which is not an op kind\n", line);
      CHECK(false);
      continue;
    }
    CHECK(!want[op]);
    want[op] = 1;
    n_want++;
  }
  fclose(f);
  CHECK(n_want == 167);
  uint32_t n = 0;
  const rlx_op *c = rlx_mlx_claim_list(&n);
  CHECK(n == n_want);
  for (uint32_t i = 0; i < n; i++) {
    CHECK(!have[c[i]]); /* once */
    have[c[i]] = 1;
  }
  const rlx_backend *b = rlx_mlx_backend();
  uint8_t set[RLX_OP_COUNT];
  rlx_backend_claim_set(b, set);
  for (uint32_t k = 0; k < RLX_OP_COUNT; k++) {
    if (want[k] != have[k] || want[k] != set[k])
      fprintf(stderr, "%s: the document says %s, claims.c says %s\n", rlx_op_name((rlx_op)k),
              want[k] ? "claimed" : "not claimed", have[k] ? "claimed" : "not claimed");
    CHECK(want[k] == have[k]);
    CHECK(want[k] == set[k]);
    /* an unclaimed kind is legalized away by a shared decomposition */
    if (!want[k]) {
      bool gap = known_gap((rlx_op)k), has = rlx_decompose_table[k] != NULL;
      if (!has && !gap) fprintf(stderr, "%s is not claimed and has no shared decomposition\n", rlx_op_name((rlx_op)k));
      if (has && gap)
        fprintf(stderr, "%s has a shared decomposition now: drop it from known_gaps\n", rlx_op_name((rlx_op)k));
      CHECK(has != gap);
    }
  }
}

int main(void) {
  check_list();
  return rlx_test_finish("test_mlx_claims");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_claims: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
