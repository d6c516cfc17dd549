/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx_error_context: the context is prepended once; parts of it the message already starts with
 * (a pass naming itself under the caller's name for it, a file name given twice) are not
 * repeated, and an overlap counts only at ": " boundaries. */
#include <string.h>

#include "rlx/status.h"
#include "rlx_test.h"

static void expect_context(const char *msg, const char *prefix, const char *want) {
  rlx_errorf(RLX_ERR_FORMAT, "%s", msg);
  CHECK(rlx_error_context(RLX_ERR_FORMAT, "%s", prefix) == RLX_ERR_FORMAT);
  CHECK_MSG(strcmp(rlx_last_error(), want) == 0, "context '%s' on '%s' gave '%s', expected '%s'", prefix, msg,
            rlx_last_error(), want);
}

int main(void) {
  expect_context("node %3 failed", "compile: memory plan", "compile: memory plan: node %3 failed");
  expect_context("memory plan: node %3 failed", "compile: memory plan", "compile: memory plan: node %3 failed");
  expect_context("a.rlx: bad byte", "a.rlx", "a.rlx: bad byte");
  expect_context("b: c: d", "a: b: c", "a: b: c: d");
  expect_context("b: x", "a: b: c", "a: b: c: b: x"); /* "b" is not a suffix of the prefix */
  expect_context("plan: x", "compile: memory plan", "compile: memory plan: plan: x"); /* only whole parts */
  expect_context("memory planner: x", "compile: memory plan", "compile: memory plan: memory planner: x");
  expect_context("", "compile", "compile: ");
  return rlx_test_finish("error_context");
}
