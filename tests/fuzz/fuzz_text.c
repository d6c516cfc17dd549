/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the text parser. Any input must parse or fail cleanly; an accepted graph
 * must survive the round trips: parse(print(g)) == g, print is stable, read(write(g)) == g. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"

#define REQUIRE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "fuzz_text: property failed: %s (%s)\n", #cond, rlx_last_error()); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_graph *g = NULL;
  rlx_status s = rlx_text_parse((const char *)data, size, "fuzz", NULL, &g);
  if (s != RLX_OK) {
    REQUIRE(g == NULL && rlx_last_error()[0] != 0);
    return 0;
  }
  char *t1 = NULL, *t2 = NULL;
  size_t n1 = 0, n2 = 0;
  REQUIRE(rlx_text_print(g, NULL, &t1, &n1) == RLX_OK);
  rlx_graph *g2 = NULL;
  REQUIRE(rlx_text_parse(t1, n1, "printed", NULL, &g2) == RLX_OK);
  REQUIRE(rlx_graph_equal(g, g2));
  REQUIRE(rlx_text_print(g2, NULL, &t2, &n2) == RLX_OK);
  REQUIRE(n1 == n2 && memcmp(t1, t2, n1) == 0);

  uint8_t *bin = NULL;
  size_t blen = 0;
  REQUIRE(rlx_binary_write(g, NULL, &bin, &blen) == RLX_OK);
  rlx_graph *g3 = NULL;
  REQUIRE(rlx_binary_read(bin, blen, NULL, &g3) == RLX_OK);
  REQUIRE(rlx_graph_equal(g, g3));

  char *dot = NULL;
  size_t dlen = 0;
  REQUIRE(rlx_graph_to_dot(g, NULL, &dot, &dlen) == RLX_OK);

  free(dot);
  free(bin);
  free(t1);
  free(t2);
  rlx_graph_free(g3);
  rlx_graph_free(g2);
  rlx_graph_free(g);
  return 0;
}
