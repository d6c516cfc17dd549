/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx_load_graph_file: reads a whole file, picks the binary reader when it starts with the magic
 * and the text parser otherwise. Every error message starts with the path. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "format_internal.h"

#define READ_CHUNK 16384

rlx_status rlx_load_graph_file(const char *path, const rlx_allocator *al, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_load_graph_file: out is NULL");
  *out = NULL;
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_load_graph_file: path is NULL");
  if (!al) al = rlx_default_allocator();
  FILE *f = fopen(path, "rb");
  if (!f) return rlx_errorf(RLX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));

  rlx_strbuf b;
  rlx_sb_init(&b, al);
  char chunk[READ_CHUNK];
  for (;;) {
    size_t got = fread(chunk, 1, sizeof chunk, f);
    if (got && !rlx_sb_put(&b, chunk, got)) break;
    if (got < sizeof chunk) break;
  }
  int read_errno = ferror(f) ? errno : 0;
  bool read_failed = ferror(f) != 0;
  fclose(f);
  if (read_failed) {
    rlx_sb_free(&b);
    return rlx_errorf(RLX_ERR_IO, "%s: cannot read: %s", path, read_errno ? strerror(read_errno) : "read error");
  }
  if (b.failed) {
    rlx_sb_free(&b);
    return rlx_errorf(RLX_ERR_OOM, "%s: out of memory while reading the file", path);
  }

  rlx_status s;
  size_t magic_len = strlen(RLX_BINARY_MAGIC);
  if (b.len >= magic_len && memcmp(b.p, RLX_BINARY_MAGIC, magic_len) == 0) {
    s = rlx_binary_read((const uint8_t *)b.p, b.len, al, out);
    if (s) rlx_error_context(s, "%s", path);
  } else {
    /* The parser prefixes its own locations (path:line:col) and verification errors. */
    s = rlx_text_parse(b.p ? b.p : "", b.len, path, al, out);
  }
  rlx_sb_free(&b);
  return s;
}
