/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The reports of `rlx onnx-conformance`: totals, the JSON dump and the Markdown document
 * docs/onnx-conformance.md (gaps filed by ONNX op), plus the small string helpers the runner shares. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_conformance.h"

#define MAX_MSG 2000 /* bytes of a result message handled */

const char *const conf_status_names[ST_COUNT] = {"passed", "failed", "unsupported", "crashed", "timeout"};

/* ======================================================================================
 * Strings
 * ====================================================================================== */

void conf_sb_add(conf_sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void conf_sb_puts(conf_sbuf *b, const char *s) { conf_sb_add(b, s, strlen(s)); }

void conf_sb_printf(conf_sbuf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if ((size_t)k < sizeof tmp) {
    conf_sb_add(b, tmp, (size_t)k);
    return;
  }
  char *big = malloc((size_t)k + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  conf_sb_add(b, big, (size_t)k);
  free(big);
}

char *conf_strdup(const char *s) {
  size_t n = strlen(s);
  char *c = malloc(n + 1);
  if (c) memcpy(c, s, n + 1);
  return c;
}

void conf_one_line(const char *in, char *out, size_t max) {
  /* Each step writes at most 2 bytes (a space and a character); room stays for "..." and NUL. */
  size_t n = 0;
  bool space = false;
  const char *p = in;
  if (max < 6) {
    if (max) out[0] = 0;
    return;
  }
  for (; *p && n + 6 <= max; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = n > 0;
      continue;
    }
    if (space) out[n++] = ' ';
    space = false;
    out[n++] = c < 0x20 ? '?' : (char)c;
  }
  if (*p) { /* cut short */
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = 0;
}

/* ======================================================================================
 * Totals and JSON
 * ====================================================================================== */

conf_totals conf_count(const conf_test *t, size_t n, const char *suite) {
  conf_totals s = {{0}, 0, 0};
  for (size_t i = 0; i < n; i++)
    if (!suite || strcmp(t[i].suite, suite) == 0) {
      s.n[t[i].status]++;
      s.total++;
      s.needs_values += t[i].needs_values;
    }
  return s;
}

unsigned conf_failed_of(const conf_totals *s) { return s->n[ST_FAILED] + s->n[ST_CRASHED] + s->n[ST_TIMEOUT]; }

static void json_str(conf_sbuf *b, const char *s) {
  conf_sb_puts(b, "\"");
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      conf_sb_printf(b, "\\%c", *p);
    else if (*p == '\n')
      conf_sb_puts(b, "\\n");
    else if (*p < 0x20)
      conf_sb_printf(b, "\\u%04x", *p);
    else
      conf_sb_add(b, (const char *)p, 1);
  }
  conf_sb_puts(b, "\"");
}

static void json_num(conf_sbuf *b, double v) {
  if (isfinite(v))
    conf_sb_printf(b, "%.6g", v);
  else
    conf_sb_puts(b, "null");
}

void conf_write_json(conf_sbuf *b, const conf_test *t, size_t n, char **suites, size_t n_suites) {
  conf_sb_puts(b, "{\n  \"rtol\": 1e-3,\n  \"atol\": 1e-7,\n  \"suites\": {");
  for (size_t s = 0; s < n_suites; s++) {
    conf_totals c = conf_count(t, n, suites[s]);
    conf_sb_printf(b, "%s\n    ", s ? "," : "");
    json_str(b, suites[s]);
    conf_sb_printf(b,
                   ": {\"passed\": %u, \"passed_needing_input_values\": %u, \"failed\": %u, \"crashed\": %u, "
                   "\"timeout\": %u, \"unsupported\": %u, \"total\": %u}",
                   c.n[ST_PASSED], c.needs_values, c.n[ST_FAILED], c.n[ST_CRASHED], c.n[ST_TIMEOUT],
                   c.n[ST_UNSUPPORTED], c.total);
  }
  conf_sb_puts(b, "\n  },\n  \"tests\": [");
  for (size_t i = 0; i < n; i++) {
    conf_sb_puts(b, i ? ",\n    {\"suite\": " : "\n    {\"suite\": ");
    json_str(b, t[i].suite);
    conf_sb_puts(b, ", \"name\": ");
    json_str(b, t[i].name);
    conf_sb_printf(b, ", \"status\": \"%s\", \"needs_input_values\": %s, \"ops\": ", conf_status_names[t[i].status],
                   t[i].needs_values ? "true" : "false");
    json_str(b, t[i].ops);
    conf_sb_puts(b, ", \"max_abs_err\": ");
    json_num(b, t[i].max_abs);
    conf_sb_puts(b, ", \"max_rel_err\": ");
    json_num(b, t[i].max_rel);
    conf_sb_printf(b, ", \"seconds\": %.3f, \"message\": ", t[i].seconds);
    json_str(b, t[i].message);
    conf_sb_puts(b, "}");
  }
  conf_sb_puts(b, "\n  ]\n}\n");
}

/* A failing test filed under an op: `key` is the op, `test` the index. */
typedef struct gap_entry {
  char *key;
  size_t test;
} gap_entry;

static int cmp_gap(const void *a, const void *b) {
  const gap_entry *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->test > y->test) - (x->test < y->test);
}

/* The op(s) a failing test is filed under. Importer gaps name their op at the start of each line
 * ("  Op: reason [...]"); otherwise the model's op when it has one op type; a function-expanded
 * test (test_X_expanded) borrows the op of test_X; else the op types joined with " + ". */
static void gap_keys(const conf_test *t, size_t n, size_t i, gap_entry **v, size_t *nv, size_t *cap) {
  const conf_test *x = &t[i];
  char keys[16][128];
  size_t nk = 0;
  const char *msg = x->message ? x->message : "";
  if (x->status != ST_FAILED && strstr(msg, "unsupported op/opset/dtype gap")) {
    for (const char *p = strchr(msg, '\n'); p && nk < 16; p = strchr(p + 1, '\n')) {
      const char *s = p + 1;
      while (*s == ' ') s++;
      const char *colon = strchr(s, ':'), *nl = strchr(s, '\n');
      if (!colon || (nl && colon > nl) || colon == s || (size_t)(colon - s) >= sizeof keys[0]) continue;
      size_t len = (size_t)(colon - s);
      bool dup = false;
      for (size_t k = 0; k < nk && !dup; k++) dup = strlen(keys[k]) == len && memcmp(keys[k], s, len) == 0;
      if (dup || memchr(s, ' ', len)) continue;
      memcpy(keys[nk], s, len);
      keys[nk++][len] = 0;
    }
  }
  if (!nk) {
    const char *ops = x->ops && x->ops[0] ? x->ops : "?";
    size_t nl = strlen(x->name);
    if (strchr(ops, ',') && nl > 9 && strcmp(x->name + nl - 9, "_expanded") == 0)
      for (size_t j = 0; j < n; j++)
        if (strcmp(t[j].suite, x->suite) == 0 && strlen(t[j].name) == nl - 9 &&
            strncmp(t[j].name, x->name, nl - 9) == 0 && t[j].ops && t[j].ops[0] && !strchr(t[j].ops, ','))
          ops = t[j].ops;
    size_t k = 0;
    for (const char *p = ops; *p && k + 4 < sizeof keys[0]; p++) {
      if (*p == ',') {
        memcpy(keys[0] + k, " + ", 3);
        k += 3;
      } else {
        keys[0][k++] = *p;
      }
    }
    keys[0][k] = 0;
    nk = 1;
  }
  for (size_t k = 0; k < nk; k++) {
    if (*nv == *cap) {
      size_t nc = *cap ? *cap * 2 : 64;
      gap_entry *ng = realloc(*v, nc * sizeof *ng);
      if (!ng) return;
      *v = ng;
      *cap = nc;
    }
    char *key = conf_strdup(keys[k]);
    if (!key) return;
    (*v)[(*nv)++] = (gap_entry){key, i};
  }
}

/* The reason of a test for the doc, on one line: an importer gap report loses its header line and
 * the node lists in brackets, and its gap lines are joined with "; ". */
static void doc_reason(const conf_test *t, char *out, size_t cap) {
  const char *msg = t->message ? t->message : "";
  const char *nl = strchr(msg, '\n');
  bool gaps = t->status != ST_FAILED && nl && strstr(msg, "unsupported op/opset/dtype gap") &&
              strstr(msg, "unsupported op/opset/dtype gap") < nl;
  char tmp[MAX_MSG];
  size_t n = 0;
  if (gaps) {
    for (const char *p = nl + 1; *p && n + 3 < sizeof tmp; p++) {
      if (*p == '[') { /* " [1 node: ...]" lists node names */
        const char *close = strchr(p, ']');
        if (close) {
          p = close;
          continue;
        }
      }
      if (*p == '\n') {
        while (n && tmp[n - 1] == ' ') n--;
        if (p[1]) tmp[n++] = ';', tmp[n++] = ' ';
        continue;
      }
      tmp[n++] = *p;
    }
  } else {
    for (const char *p = msg; *p && n + 1 < sizeof tmp; p++) tmp[n++] = *p;
  }
  tmp[n] = 0;
  conf_one_line(tmp, out, cap);
  for (char *p = out; *p; p++)
    if (*p == '|') *p = '/'; /* keep Markdown tables intact */
}

/* The tests selected by `want_pass` (passes needing input values) or else the non-passes, filed
 * under their ops and sorted by op. */
static gap_entry *file_by_op(const conf_test *t, size_t n, bool want_pass, size_t *ng) {
  gap_entry *g = NULL;
  size_t cap = 0;
  *ng = 0;
  for (size_t i = 0; i < n; i++)
    if (want_pass ? t[i].needs_values : t[i].status != ST_PASSED) gap_keys(t, n, i, &g, ng, &cap);
  if (*ng) qsort(g, *ng, sizeof *g, cmp_gap);
  return g;
}

static void free_entries(gap_entry *g, size_t ng) {
  for (size_t i = 0; i < ng; i++) free(g[i].key);
  free(g);
}

static size_t group_end(const gap_entry *g, size_t ng, size_t i) {
  size_t j = i;
  while (j < ng && strcmp(g[j].key, g[i].key) == 0) j++;
  return j;
}

static void write_gaps(conf_sbuf *b, const conf_test *t, size_t n) {
  size_t ng;
  gap_entry *g = file_by_op(t, n, false, &ng);
  conf_sb_puts(b, "## Gaps by ONNX op\n\n");
  if (!ng)
    conf_sb_puts(b, "None: every test passed.\n\n");
  else
    conf_sb_puts(b, "A test is filed under the op(s) the importer names as unsupported; otherwise under its model's op "
                    "(a function-expanded test under the op it expands, a model of several op types under all of them "
                    "joined with +). A test with several unsupported ops appears once per op.\n\n"
                    "| op | tests | failed | crashed / timed out | unsupported |\n|---|---:|---:|---:|---:|\n");
  for (size_t i = 0, j; i < ng; i = j) {
    j = group_end(g, ng, i);
    unsigned f = 0, c = 0, u = 0;
    for (size_t k = i; k < j; k++) {
      conf_status st = t[g[k].test].status;
      if (st == ST_FAILED)
        f++;
      else if (st == ST_UNSUPPORTED)
        u++;
      else
        c++;
    }
    conf_sb_printf(b, "| %s | %zu | %u | %u | %u |\n", g[i].key, j - i, f, c, u);
  }
  if (ng) conf_sb_puts(b, "\n");
  for (size_t i = 0, j; i < ng; i = j) {
    j = group_end(g, ng, i);
    conf_sb_printf(b, "### %s (%zu test%s)\n\n", g[i].key, j - i, j - i == 1 ? "" : "s");
    for (size_t k = i; k < j; k++) {
      const conf_test *x = &t[g[k].test];
      char reason[700];
      doc_reason(x, reason, sizeof reason);
      conf_sb_printf(b, "- `%s/%s` — %s: %s\n", x->suite, x->name, conf_status_names[x->status], reason);
    }
    conf_sb_puts(b, "\n");
  }
  free_entries(g, ng);
}

static void write_needs_values(conf_sbuf *b, const conf_test *t, size_t n) {
  size_t ng;
  gap_entry *g = file_by_op(t, n, true, &ng);
  if (!ng) return;
  conf_sb_puts(b, "## Passes that need the input values at import time\n\n"
                  "These tests pass with the input values given to the importer (as `rlx run` gives them), which "
                  "specialises the graph to them. Imported from the input shapes alone, an op of theirs needs a value "
                  "that is only known at run time (a shape, an axis, a count), and the importer reports it as "
                  "unsupported. Filed by that op; the reason is the first test's.\n\n"
                  "| op | tests | reason | tests |\n|---|---:|---|---|\n");
  for (size_t i = 0, j; i < ng; i = j) {
    j = group_end(g, ng, i);
    char reason[700];
    doc_reason(&t[g[i].test], reason, sizeof reason);
    conf_sb_printf(b, "| %s | %zu | %s | ", g[i].key, j - i, reason);
    for (size_t k = i; k < j; k++) conf_sb_printf(b, "%s`%s`", k > i ? ", " : "", t[g[k].test].name);
    conf_sb_puts(b, " |\n");
  }
  conf_sb_puts(b, "\n");
  free_entries(g, ng);
}

void conf_write_doc(conf_sbuf *b, const conf_test *t, size_t n, char **suites, size_t n_suites, const char *cmdline) {
  conf_totals node = conf_count(t, n, "node");
  conf_sb_printf(b, "node tests: %u passed, %u failed, %u unsupported of %u\n\n", node.n[ST_PASSED],
                 conf_failed_of(&node), node.n[ST_UNSUPPORTED], node.total);
  conf_sb_puts(b, "# ONNX conformance\n\n");
  conf_sb_puts(b, "Generated by `rlx onnx-conformance` (tools/cmd_onnx_conformance.c); do not edit by hand. "
                  "Regenerate with\n\n");
  conf_sb_printf(b, "    %s\n\n", cmdline);
  conf_sb_puts(
      b, "Each test of the ONNX backend test suite (Debian's libonnx-testdata, "
         "/usr/include/onnx/backend/test/data) is imported with `rlx_onnx_import_file` (symbolic dims bound from the "
         "input .pb shapes; input values offered to the importer the way `rlx run` does), compiled for the CPU "
         "backend, run on every test_data_set_N, and its outputs are compared with output_K.pb: dtype and shape "
         "exactly, floats with numpy's assert_allclose rule |got - expected| <= 1e-7 + 1e-3 * |expected| (NaN equals "
         "NaN), integers and bools exactly. Every test runs in its own process with a time limit.\n\n"
         "- **passed**: every output of every data set matches. *needs values* counts the passes that import "
         "only with the input values known (listed at the end).\n"
         "- **failed**: a wrong value, dtype or shape, an import/compile/run error other than \"unsupported\", a "
         "crash (signal or sanitizer report) or a timeout (both counted in *failed*, with their own status below).\n"
         "- **unsupported**: the importer (or the CPU backend) reports an op / opset / dtype / attribute gap, or the "
         "test data holds a dtype RLX does not have.\n\n"
         "Known limits of the test data (libonnx-testdata 1.12), which no implementation can pass as written: the "
         "expected values of Bernoulli come from numpy's random generator; bfloat16 tensors are stored as their "
         "uint16 bit patterns (numpy has no bfloat16; the runner reads them as bfloat16 where the model declares "
         "bfloat16), the expected FLOAT to BFLOAT16 casts truncate where RLX rounds to nearest even, and the "
         "CastLike bfloat16 tests give a `like` tensor of shape [1] to a model input declared [3, 4]; "
         "test_adam_multiple's "
         "expected values use epsilon 1e-2, which its model does not set (Adam's default is 1e-6).\n\n");
  conf_sb_puts(
      b, "## Totals per suite\n\n"
         "| suite | passed | of which needs values | failed | of which crashed | of which timed out | unsupported "
         "| total |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t s = 0; s <= n_suites; s++) {
    bool all = s == n_suites;
    conf_totals c = conf_count(t, n, all ? NULL : suites[s]);
    conf_sb_printf(b, "| %s%s%s | %u | %u | %u | %u | %u | %u | %u |\n", all ? "**" : "", all ? "all" : suites[s],
                   all ? "**" : "", c.n[ST_PASSED], c.needs_values, conf_failed_of(&c), c.n[ST_CRASHED],
                   c.n[ST_TIMEOUT], c.n[ST_UNSUPPORTED], c.total);
  }
  conf_sb_puts(b, "\n");
  write_gaps(b, t, n);
  write_needs_values(b, t, n);
}
