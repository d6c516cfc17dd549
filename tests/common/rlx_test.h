/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Minimal test harness: CHECK macros count failures; rlx_test_finish() prints the summary
 * line "N passed, N failed" and returns the process exit code. */
#ifndef RLX_TEST_H
#define RLX_TEST_H

#include <stdio.h>
#include <string.h>

#include "rlx/rlx.h"

extern int rlx_test_passed, rlx_test_failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond)                                                                  \
      rlx_test_passed++;                                                       \
    else {                                                                     \
      rlx_test_failed++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    if (cond)                                                                  \
      rlx_test_passed++;                                                       \
    else {                                                                     \
      rlx_test_failed++;                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* Expects RLX_OK; prints rlx_last_error() otherwise. */
#define CHECK_OK(expr)                                                                                                 \
  do {                                                                                                                 \
    rlx_status s_ = (expr);                                                                                            \
    if (s_ == RLX_OK)                                                                                                  \
      rlx_test_passed++;                                                                                               \
    else {                                                                                                             \
      rlx_test_failed++;                                                                                               \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #expr, rlx_status_text(s_), rlx_last_error()); \
    }                                                                                                                  \
  } while (0)

/* Expects a specific error code, and (if non-NULL) a substring in the message. */
#define CHECK_ERR(expr, code, substr)                                                                               \
  do {                                                                                                              \
    rlx_status s_ = (expr);                                                                                         \
    const char *sub_ = (substr);                                                                                    \
    if (s_ == (code) && (!sub_ || strstr(rlx_last_error(), sub_)))                                                  \
      rlx_test_passed++;                                                                                            \
    else {                                                                                                          \
      rlx_test_failed++;                                                                                            \
      fprintf(stderr, "%s:%d: %s: expected %s%s%s, got %s: %s\n", __FILE__, __LINE__, #expr, rlx_status_text(code), \
              sub_ ? " containing " : "", sub_ ? sub_ : "", rlx_status_text(s_), rlx_last_error());                 \
    }                                                                                                               \
  } while (0)

/* Prints "N passed, N failed" and returns 0 iff nothing failed and something was checked. */
int rlx_test_finish(const char *suite);

/* An allocator that fails the Nth allocation (1-based; 0 = never) and counts live blocks. */
typedef struct rlx_fail_alloc {
  rlx_allocator al;
  long fail_at; /* allocation number that fails; 0 = never */
  long count;   /* allocations attempted */
  long live;    /* blocks currently allocated */
} rlx_fail_alloc;
void rlx_fail_alloc_init(rlx_fail_alloc *fa, long fail_at);

/* Reads a whole file into a malloc'ed NUL-terminated buffer (NULL on failure). */
char *rlx_test_read_file(const char *path, size_t *len);
/* Path of a file inside the source tree ($RLX_SOURCE_DIR or "."). */
const char *rlx_test_src_path(const char *rel);

#endif
