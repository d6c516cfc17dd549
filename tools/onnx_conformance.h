/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* `rlx onnx-conformance`: what the runner (tools/cmd_onnx_conformance.c) and its reports
 * (tools/onnx_conformance_report.c: totals, JSON, the Markdown document) share. */
#ifndef RLX_ONNX_CONFORMANCE_H
#define RLX_ONNX_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>

/* The outcome of one test. Crashed and timeout count as failed in the totals. */
typedef enum { ST_PASSED, ST_FAILED, ST_UNSUPPORTED, ST_CRASHED, ST_TIMEOUT, ST_COUNT } conf_status;
extern const char *const conf_status_names[ST_COUNT]; /* "passed", ... */

typedef struct conf_test {
  char *suite, *name, *dir;
  conf_status status;
  double max_abs, max_rel, seconds;
  bool needs_values; /* passed, but only with the input values known at import time */
  char *ops;         /* distinct op types of the main graph, comma-separated */
  char *message;     /* reason / mismatch description; for a pass that needs values, why */
} conf_test;

/* A growing string; after an allocation failure `oom` is set and further additions are dropped. */
typedef struct conf_sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} conf_sbuf;

void conf_sb_add(conf_sbuf *b, const char *s, size_t n);
void conf_sb_puts(conf_sbuf *b, const char *s);
void conf_sb_printf(conf_sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
char *conf_strdup(const char *s); /* malloc'ed copy, NULL when out of memory */
/* One line: whitespace runs (newlines included) become one space, at most `max` bytes kept. */
void conf_one_line(const char *in, char *out, size_t max);

typedef struct conf_totals {
  unsigned n[ST_COUNT], total, needs_values;
} conf_totals;

/* Totals of the tests of `suite` (NULL = all). */
conf_totals conf_count(const conf_test *t, size_t n, const char *suite);
unsigned conf_failed_of(const conf_totals *s); /* failed + crashed + timeout */

/* Every result as JSON (suite totals, then one object per test). */
void conf_write_json(conf_sbuf *b, const conf_test *t, size_t n, char **suites, size_t n_suites);
/* docs/onnx-conformance.md: first line "node tests: P passed, F failed, U unsupported of T", then
 * the method, totals per suite, the gaps by ONNX op and the passes that need input values;
 * `cmdline` is the command that regenerates it. */
void conf_write_doc(conf_sbuf *b, const conf_test *t, size_t n, char **suites, size_t n_suites, const char *cmdline);

#endif
