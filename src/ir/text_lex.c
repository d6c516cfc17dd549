/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Scanner for the text format: whitespace and comments, positions and error messages, numbers,
 * string and byte literals. Never reads past `len`; every number is overflow-checked. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"

/* ---- positions and errors ---- */

void rlx_scan_line_col(const rlx_text_scan *s, size_t at, unsigned *line, unsigned *col) {
  unsigned l = 1, c = 1;
  if (at > s->len) at = s->len;
  for (size_t i = 0; i < at; i++) {
    if (s->src[i] == '\n') {
      l++;
      c = 1;
    } else {
      c++;
    }
  }
  *line = l;
  *col = c;
}

static bool is_word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

const char *rlx_scan_describe(const rlx_text_scan *s, size_t at, char *buf, size_t cap) {
  if (at >= s->len) {
    snprintf(buf, cap, "end of input");
    return buf;
  }
  unsigned char c = (unsigned char)s->src[at];
  if (c == '"') {
    snprintf(buf, cap, "a string");
    return buf;
  }
  size_t end = at;
  if (c == '%' || c == '-' || c == '?' || c == '@') end++; /* sigil of a word: %3, -1, ?0, @g */
  while (end < s->len && is_word_char((unsigned char)s->src[end]) && end - at < 32) end++;
  if (end > at + 1 || (end == at + 1 && is_word_char(c))) {
    snprintf(buf, cap, "\"%.*s%s\"", (int)(end - at), s->src + at,
             end < s->len && is_word_char((unsigned char)s->src[end]) ? "..." : "");
    return buf;
  }
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, cap, "'%c'", c);
  else if (c == '\n')
    snprintf(buf, cap, "end of line");
  else
    snprintf(buf, cap, "byte 0x%02x", c);
  return buf;
}

rlx_status rlx_scan_fail(rlx_text_scan *s, size_t at, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  unsigned line, col;
  rlx_scan_line_col(s, at, &line, &col);
  return rlx_errorf(RLX_ERR_PARSE, "%s:%u:%u: %s", s->source, line, col, msg);
}

rlx_status rlx_scan_expected(rlx_text_scan *s, size_t at, const char *what) {
  char found[64];
  return rlx_scan_fail(s, at, "expected %s, found %s", what, rlx_scan_describe(s, at, found, sizeof found));
}

rlx_status rlx_scan_oom(rlx_text_scan *s) {
  return rlx_errorf(RLX_ERR_OOM, "%s: out of memory while parsing", s->source);
}

/* ---- whitespace ---- */

void rlx_scan_ws(rlx_text_scan *s) {
  while (s->pos < s->len) {
    char c = s->src[s->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      s->pos++;
    } else if (c == '/' && s->pos + 1 < s->len && s->src[s->pos + 1] == '/') {
      while (s->pos < s->len && s->src[s->pos] != '\n') s->pos++;
    } else {
      break;
    }
  }
}

int rlx_scan_peek(rlx_text_scan *s) {
  rlx_scan_ws(s);
  return s->pos < s->len ? (unsigned char)s->src[s->pos] : -1;
}

bool rlx_scan_accept(rlx_text_scan *s, char c) {
  if (rlx_scan_peek(s) != (unsigned char)c) return false;
  s->pos++;
  return true;
}

rlx_status rlx_scan_expect(rlx_text_scan *s, char c, const char *what) {
  if (rlx_scan_accept(s, c)) return RLX_OK;
  return rlx_scan_expected(s, s->pos, what);
}

/* ---- words ---- */

static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(int c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }

bool rlx_scan_ident(rlx_text_scan *s, const char **p, size_t *n) {
  if (!is_ident_start(rlx_scan_peek(s))) return false;
  size_t start = s->pos;
  while (s->pos < s->len && is_ident_char((unsigned char)s->src[s->pos])) s->pos++;
  *p = s->src + start;
  *n = s->pos - start;
  return true;
}

bool rlx_scan_at_word(rlx_text_scan *s, const char *kw) {
  if (!is_ident_start(rlx_scan_peek(s))) return false;
  size_t k = strlen(kw), e = s->pos;
  while (e < s->len && is_ident_char((unsigned char)s->src[e])) e++;
  return e - s->pos == k && memcmp(s->src + s->pos, kw, k) == 0;
}

/* ---- integers ---- */

/* Reads the digits at pos as an unsigned magnitude; false (after an error) on overflow. */
static rlx_status scan_magnitude(rlx_text_scan *s, size_t at, uint64_t limit, uint64_t *out, const char *what) {
  if (s->pos >= s->len || !is_digit((unsigned char)s->src[s->pos])) return rlx_scan_expected(s, at, what);
  uint64_t v = 0;
  while (s->pos < s->len && is_digit((unsigned char)s->src[s->pos])) {
    unsigned d = (unsigned)(s->src[s->pos] - '0');
    if (v > (limit - d) / 10) {
      char w[128];
      snprintf(w, sizeof w, "%s (the number overflows)", what);
      return rlx_scan_expected(s, at, w);
    }
    v = v * 10 + d;
    s->pos++;
  }
  if (s->pos < s->len && is_ident_char((unsigned char)s->src[s->pos])) return rlx_scan_expected(s, at, what);
  *out = v;
  return RLX_OK;
}

rlx_status rlx_scan_i64(rlx_text_scan *s, int64_t *out, const char *what) {
  rlx_scan_ws(s);
  size_t at = s->pos;
  bool neg = s->pos < s->len && s->src[s->pos] == '-';
  if (neg) s->pos++;
  uint64_t m = 0;
  RLX_TRY(scan_magnitude(s, at, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &m, what));
  if (neg)
    *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
  else
    *out = (int64_t)m;
  return RLX_OK;
}

rlx_status rlx_scan_u64(rlx_text_scan *s, uint64_t *out, const char *what) {
  rlx_scan_ws(s);
  return scan_magnitude(s, s->pos, UINT64_MAX, out, what);
}

rlx_status rlx_scan_u32(rlx_text_scan *s, uint32_t *out, const char *what) {
  rlx_scan_ws(s);
  uint64_t v = 0;
  RLX_TRY(scan_magnitude(s, s->pos, UINT32_MAX, &v, what));
  *out = (uint32_t)v;
  return RLX_OK;
}

/* ---- floats ---- */

static int hex_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool at_text(const rlx_text_scan *s, size_t i, const char *t) {
  size_t n = strlen(t);
  return i <= s->len && s->len - i >= n && memcmp(s->src + i, t, n) == 0;
}

static const char *const F32_WHAT = "a float (e.g. 1.5, -2e-3, inf, -inf, nan)";

rlx_status rlx_scan_f32(rlx_text_scan *s, float *out) {
  rlx_scan_ws(s);
  size_t at = s->pos, i = at;
  bool neg = i < s->len && s->src[i] == '-';
  if (neg) i++;
  if (at_text(s, i, "inf") && !(i + 3 < s->len && is_ident_char((unsigned char)s->src[i + 3]))) {
    s->pos = i + 3;
    *out = neg ? -INFINITY : INFINITY;
    return RLX_OK;
  }
  if (!neg && at_text(s, i, "nan") && !(i + 3 < s->len && is_ident_char((unsigned char)s->src[i + 3]))) {
    i += 3;
    uint32_t bits = 0x7fc00000u;
    if (i < s->len && s->src[i] == '(') {
      if (!at_text(s, i, "(0x")) return rlx_scan_expected(s, i, "(0xBITS) with 8 hex digits");
      i += 3;
      bits = 0;
      for (int k = 0; k < 8; k++, i++) {
        int h = i < s->len ? hex_value((unsigned char)s->src[i]) : -1;
        if (h < 0) return rlx_scan_expected(s, i, "a hex digit of the NaN bit pattern");
        bits = bits << 4 | (uint32_t)h;
      }
      if (i >= s->len || s->src[i] != ')') return rlx_scan_expected(s, i, "')'");
      i++;
      if ((bits & 0x7f800000u) != 0x7f800000u || (bits & 0x007fffffu) == 0)
        return rlx_scan_fail(s, at, "expected the bit pattern of a NaN, found 0x%08x", (unsigned)bits);
    }
    s->pos = i;
    memcpy(out, &bits, sizeof bits);
    return RLX_OK;
  }
  /* -? digits (. digits)? ([eE] [+-]? digits)? */
  size_t d0 = i;
  while (i < s->len && is_digit((unsigned char)s->src[i])) i++;
  if (i == d0) return rlx_scan_expected(s, at, F32_WHAT);
  if (i < s->len && s->src[i] == '.') {
    size_t f0 = ++i;
    while (i < s->len && is_digit((unsigned char)s->src[i])) i++;
    if (i == f0) return rlx_scan_expected(s, i, "a digit after '.'");
  }
  if (i < s->len && (s->src[i] == 'e' || s->src[i] == 'E')) {
    i++;
    if (i < s->len && (s->src[i] == '+' || s->src[i] == '-')) i++;
    size_t e0 = i;
    while (i < s->len && is_digit((unsigned char)s->src[i])) i++;
    if (i == e0) return rlx_scan_expected(s, i, "a digit in the exponent");
  }
  if (i < s->len && is_ident_char((unsigned char)s->src[i])) return rlx_scan_expected(s, at, F32_WHAT);
  char buf[80];
  if (i - at >= sizeof buf)
    return rlx_scan_fail(s, at, "expected %s, found a literal of %zu characters (at most %zu)", F32_WHAT, i - at,
                         sizeof buf - 1);
  memcpy(buf, s->src + at, i - at);
  buf[i - at] = 0;
  errno = 0;
  float v = strtof(buf, NULL);
  if (errno == ERANGE && isinf(v))
    return rlx_scan_fail(s, at, "expected a float within the f32 range, found %s (use inf for infinity)", buf);
  s->pos = i;
  *out = v;
  return RLX_OK;
}

/* ---- strings ---- */

/* Length of the well-formed UTF-8 sequence at p (n bytes available), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  size_t len;
  uint32_t min, cp;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2, min = 0x80, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3, min = 0x800, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4, min = 0x10000, cp = c & 0x07;
  else
    return 0;
  if (n < len) return 0;
  for (size_t k = 1; k < len; k++) {
    if ((p[k] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (p[k] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

size_t rlx_fmt_utf8_check(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    size_t k = p[i] < 0x80 ? 1 : utf8_len(p + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

rlx_status rlx_scan_string(rlx_text_scan *s) {
  rlx_scan_ws(s);
  size_t open = s->pos;
  if (open >= s->len || s->src[open] != '"') return rlx_scan_expected(s, open, "a string literal");
  s->scratch.len = 0;
  size_t i = open + 1;
  for (;;) {
    if (i >= s->len || s->src[i] == '\n')
      return rlx_scan_fail(s, open, "expected a closing '\"' for this string, found %s",
                           i >= s->len ? "end of input" : "end of line");
    unsigned char c = (unsigned char)s->src[i];
    if (c == '"') break;
    if (s->scratch.len > RLX_FORMAT_MAX_NAME_BYTES)
      return rlx_scan_fail(s, open, "this string is longer than %d bytes, the limit for names and strings",
                           RLX_FORMAT_MAX_NAME_BYTES);
    if (c == '\\') {
      if (i + 1 >= s->len) return rlx_scan_expected(s, i + 1, "an escape character");
      char e = s->src[i + 1];
      char outc;
      if (e == '"' || e == '\\')
        outc = e;
      else if (e == 'n')
        outc = '\n';
      else if (e == 't')
        outc = '\t';
      else if (e == 'x') {
        int h1 = i + 2 < s->len ? hex_value((unsigned char)s->src[i + 2]) : -1;
        int h2 = i + 3 < s->len ? hex_value((unsigned char)s->src[i + 3]) : -1;
        if (h1 < 0 || h2 < 0) return rlx_scan_expected(s, i, "\\x followed by two hex digits");
        if (h1 == 0 && h2 == 0) return rlx_scan_expected(s, i, "a non-NUL byte (strings cannot hold \\x00)");
        outc = (char)(h1 << 4 | h2);
        i += 2;
      } else {
        return rlx_scan_expected(s, i + 1, "an escape (\\\" \\\\ \\n \\t \\xHH)");
      }
      i += 2;
      if (!rlx_sb_putc(&s->scratch, outc)) return rlx_scan_oom(s);
      continue;
    }
    if (c < 0x20 || c == 0x7f) return rlx_scan_expected(s, i, "a printable character or an escape");
    size_t k = 1;
    if (c >= 0x80) {
      k = utf8_len((const unsigned char *)s->src + i, s->len - i);
      if (!k) return rlx_scan_expected(s, i, "valid UTF-8 (or a \\xHH escape)");
    }
    if (!rlx_sb_put(&s->scratch, s->src + i, k)) return rlx_scan_oom(s);
    i += k;
  }
  if (s->scratch.len > RLX_FORMAT_MAX_NAME_BYTES)
    return rlx_scan_fail(s, open, "this string is %zu bytes long; names and strings are limited to %d bytes",
                         s->scratch.len, RLX_FORMAT_MAX_NAME_BYTES);
  size_t bad = rlx_fmt_utf8_check(s->scratch.p, s->scratch.len);
  if (bad != s->scratch.len)
    return rlx_scan_fail(s, open,
                         "this string decodes to bytes that are not valid UTF-8 (at decoded byte %zu); "
                         "names must be UTF-8 (\\xHH escapes must form whole UTF-8 sequences)",
                         bad);
  s->pos = i + 1;
  if (!rlx_sb_put(&s->scratch, "", 0)) return rlx_scan_oom(s); /* makes scratch.p non-NULL */
  return RLX_OK;
}

rlx_status rlx_scan_bytes(rlx_text_scan *s, rlx_arena *arena, rlx_bytes *out) {
  rlx_scan_ws(s);
  size_t at = s->pos;
  if (!at_text(s, at, "0x")) return rlx_scan_expected(s, at, "a byte string (0x followed by hex digits)");
  size_t i = at + 2, h0 = i;
  while (i < s->len && hex_value((unsigned char)s->src[i]) >= 0) i++;
  if (i < s->len && is_ident_char((unsigned char)s->src[i])) return rlx_scan_expected(s, i, "a hex digit");
  size_t nhex = i - h0;
  if (nhex % 2) return rlx_scan_fail(s, at, "expected an even number of hex digits, found %zu", nhex);
  out->n = nhex / 2;
  out->p = NULL;
  if (out->n) {
    out->p = rlx_arena_alloc(arena, out->n, 16);
    if (!out->p) return rlx_scan_oom(s);
    for (size_t k = 0; k < out->n; k++)
      out->p[k] = (uint8_t)(hex_value((unsigned char)s->src[h0 + 2 * k]) << 4 |
                            hex_value((unsigned char)s->src[h0 + 2 * k + 1]));
  }
  s->pos = i;
  return RLX_OK;
}
