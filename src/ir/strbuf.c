/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Growable buffer with sticky failure; see strbuf.h. */
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rlx_sb_init(rlx_strbuf *b, const rlx_allocator *al) {
  b->al = al ? al : rlx_default_allocator();
  b->p = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

/* Makes room for `extra` more bytes plus a terminating NUL. */
static bool reserve(rlx_strbuf *b, size_t extra) {
  if (b->failed) return false;
  size_t need;
  if (!rlx_add_size(b->len, extra, &need) || !rlx_add_size(need, 1, &need)) {
    b->failed = true;
    return false;
  }
  if (need <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) {
    if (!rlx_mul_size(cap, 2, &cap)) {
      cap = need;
      break;
    }
  }
  char *p = b->al->alloc(b->al->ctx, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  if (b->len) memcpy(p, b->p, b->len);
  b->al->free(b->al->ctx, b->p);
  b->p = p;
  b->cap = cap;
  return true;
}

bool rlx_sb_put(rlx_strbuf *b, const void *data, size_t n) {
  if (!reserve(b, n)) return false;
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = 0;
  return true;
}

bool rlx_sb_puts(rlx_strbuf *b, const char *s) { return rlx_sb_put(b, s, strlen(s)); }
bool rlx_sb_putc(rlx_strbuf *b, char c) { return rlx_sb_put(b, &c, 1); }

bool rlx_sb_printf(rlx_strbuf *b, const char *fmt, ...) {
  if (b->failed) return false;
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return false;
  }
  if ((size_t)n < sizeof small) return rlx_sb_put(b, small, (size_t)n);
  if (!reserve(b, (size_t)n)) return false;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return true;
}

bool rlx_sb_indent(rlx_strbuf *b, unsigned spaces) {
  static const char blanks[] = "                                ";
  while (spaces > 0) {
    unsigned k = spaces < sizeof blanks - 1 ? spaces : (unsigned)(sizeof blanks - 1);
    if (!rlx_sb_put(b, blanks, k)) return false;
    spaces -= k;
  }
  return true;
}

bool rlx_sb_u8(rlx_strbuf *b, uint8_t v) { return rlx_sb_put(b, &v, 1); }

bool rlx_sb_u16(rlx_strbuf *b, uint16_t v) {
  uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  return rlx_sb_put(b, x, 2);
}

bool rlx_sb_u32(rlx_strbuf *b, uint32_t v) {
  uint8_t x[4];
  for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
  return rlx_sb_put(b, x, 4);
}

bool rlx_sb_u64(rlx_strbuf *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
  return rlx_sb_put(b, x, 8);
}

rlx_status rlx_sb_finish(rlx_strbuf *b, char **out, size_t *len) {
  if (b->failed || !reserve(b, 0)) {
    rlx_sb_free(b);
    return rlx_errorf(RLX_ERR_OOM, "out of memory while writing the output buffer");
  }
  b->p[b->len] = 0;
  *out = b->p;
  if (len) *len = b->len;
  b->p = NULL;
  b->len = b->cap = 0;
  return RLX_OK;
}

void rlx_sb_free(rlx_strbuf *b) {
  b->al->free(b->al->ctx, b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
