/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A growable byte/string buffer on an rlx_allocator. Failures are sticky: after the first failed
 * allocation (or size overflow) every append is a no-op and rlx_sb_finish reports RLX_ERR_OOM, so
 * writers can append freely and check once at the end. */
#ifndef RLX_STRBUF_H
#define RLX_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/graph.h"

typedef struct rlx_strbuf {
  const rlx_allocator *al;
  char *p;
  size_t len, cap;
  bool failed;
} rlx_strbuf;

void rlx_sb_init(rlx_strbuf *b, const rlx_allocator *al); /* al NULL = default allocator */
bool rlx_sb_put(rlx_strbuf *b, const void *data, size_t n);
bool rlx_sb_puts(rlx_strbuf *b, const char *s);
bool rlx_sb_putc(rlx_strbuf *b, char c);
bool rlx_sb_printf(rlx_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
bool rlx_sb_indent(rlx_strbuf *b, unsigned spaces);
/* Little-endian fixed-width integers (binary format). */
bool rlx_sb_u8(rlx_strbuf *b, uint8_t v);
bool rlx_sb_u16(rlx_strbuf *b, uint16_t v);
bool rlx_sb_u32(rlx_strbuf *b, uint32_t v);
bool rlx_sb_u64(rlx_strbuf *b, uint64_t v);
/* Hands the NUL-terminated contents to the caller (len excludes the NUL) and resets the buffer;
 * on an earlier failure frees everything and returns RLX_ERR_OOM. */
rlx_status rlx_sb_finish(rlx_strbuf *b, char **out, size_t *len);
void rlx_sb_free(rlx_strbuf *b);

#endif
