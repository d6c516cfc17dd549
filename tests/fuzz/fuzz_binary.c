/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libFuzzer target for the binary reader. Any input must be read or rejected cleanly; an
 * accepted input must be re-encoded to exactly the same bytes, and the graph must survive a text
 * round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"

#define REQUIRE(cond)                                                                      \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_binary: property failed: %s (%s)\n", #cond, rlx_last_error()); \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_graph *g = NULL;
  rlx_status s = rlx_binary_read(data, size, NULL, &g);
  if (s != RLX_OK) {
    REQUIRE(g == NULL && rlx_last_error()[0] != 0);
    return 0;
  }
  uint8_t *bin = NULL;
  size_t blen = 0;
  REQUIRE(rlx_binary_write(g, NULL, &bin, &blen) == RLX_OK);
  REQUIRE(blen == size && memcmp(bin, data, size) == 0);

  char *text = NULL;
  size_t tlen = 0;
  REQUIRE(rlx_text_print(g, NULL, &text, &tlen) == RLX_OK);
  rlx_graph *g2 = NULL;
  REQUIRE(rlx_text_parse(text, tlen, "printed", NULL, &g2) == RLX_OK);
  REQUIRE(rlx_graph_equal(g, g2));

  free(text);
  free(bin);
  rlx_graph_free(g2);
  rlx_graph_free(g);
  return 0;
}
