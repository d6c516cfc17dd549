/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "rlx_test.h"

#include <stdlib.h>

int rlx_test_passed, rlx_test_failed;

int rlx_test_finish(const char *suite) {
  printf("%s: %d passed, %d failed\n", suite, rlx_test_passed, rlx_test_failed);
  if (rlx_test_passed == 0 && rlx_test_failed == 0) {
    fprintf(stderr, "%s: no checks ran\n", suite);
    return 1;
  }
  return rlx_test_failed ? 1 : 0;
}

static void *fa_alloc(void *ctx, size_t n) {
  rlx_fail_alloc *fa = ctx;
  fa->count++;
  if (fa->fail_at && fa->count == fa->fail_at) return NULL;
  void *p = malloc(n ? n : 1);
  if (p) fa->live++;
  return p;
}

static void fa_free(void *ctx, void *p) {
  rlx_fail_alloc *fa = ctx;
  if (!p) return;
  fa->live--;
  free(p);
}

void rlx_fail_alloc_init(rlx_fail_alloc *fa, long fail_at) {
  fa->al.alloc = fa_alloc;
  fa->al.free = fa_free;
  fa->al.ctx = fa;
  fa->fail_at = fail_at;
  fa->count = 0;
  fa->live = 0;
}

char *rlx_test_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return NULL;
  }
  long n = ftell(f);
  if (n < 0) {
    fclose(f);
    return NULL;
  }
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  if (!buf) {
    fclose(f);
    return NULL;
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  buf[got] = 0;
  if (len) *len = got;
  return buf;
}

const char *rlx_test_src_path(const char *rel) {
  static char buf[4096];
  const char *root = getenv("RLX_SOURCE_DIR");
  snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
  return buf;
}
