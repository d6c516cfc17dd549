/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pieces shared by the text printer/parser, the binary reader/writer and the dot renderer. */
#ifndef RLX_FORMAT_INTERNAL_H
#define RLX_FORMAT_INTERNAL_H

#include "ir_internal.h"
#include "rlx/format.h"
#include "rlx/verify.h"
#include "strbuf.h"

/* Deepest body nesting any format accepts (the top graph is depth 0), as in the verifier. */
#define RLX_FORMAT_MAX_DEPTH 64

/* Longest string (node, graph, leaf and Custom names) any format reads or writes, in bytes of
 * its decoded form; the ONNX importer has the same limit (RLX_ONNX_MAX_NAME_BYTES). Strings must
 * also be well-formed UTF-8 (after escapes are decoded) without NUL bytes. */
#define RLX_FORMAT_MAX_NAME_BYTES 4096

/* Offset of the first byte of s[0..n) that does not start a well-formed UTF-8 sequence (no
 * overlong forms, surrogates or code points above U+10FFFF), or n when all of it is UTF-8. */
size_t rlx_fmt_utf8_check(const char *s, size_t n);

/* Smallest dim value that still encodes a symbol ?k with k a u32. */
#define RLX_FORMAT_MIN_DIM (-(int64_t)UINT32_MAX - 1)

/* Operands a region chain step of `kind` uses: 3 for Where, 2 for Binary/Compare, else 1. The
 * unused operand slots (and Where's sub-op) are not part of a step's value: no format stores
 * them and readers set them to zero. */
unsigned rlx_fmt_chain_arity(int32_t kind);

/* Appends `n` bytes of `s` as a double-quoted text literal (escapes \" \\ \n \t \xHH). */
void rlx_fmt_put_string(rlx_strbuf *b, const char *s, size_t n);
/* Appends the shortest decimal that reads back to the same bits; inf, -inf, nan, nan(0xBITS). */
void rlx_fmt_put_f32(rlx_strbuf *b, float v);
/* Appends "@name", or "@\"...\"" when the name is not made of [A-Za-z0-9_.] only. */
void rlx_fmt_put_graph_name(rlx_strbuf *b, const char *name);
/* Appends "[d0, d1] dtype" (the shape must have passed rlx_fmt_check_shape). */
void rlx_fmt_put_shape(rlx_strbuf *b, const rlx_shape *s);

/* Whether field `f` of `attrs` equals its value in `defaults` (bitwise for floats; an empty
 * string equals the absent default). */
bool rlx_fmt_field_is_default(const rlx_field *f, const void *attrs, const void *defaults);

/* Whether value of field `f` at `p` can be written as text: enum and dtype values in range,
 * required bodies present, chain steps well-formed. On failure writes a reason to `why`. */
bool rlx_fmt_check_value(const rlx_field *f, const void *p, char *why, size_t cap);
/* Whether the shape can be written: rank <= 8, known dtype, dims are extents or u32 symbols. */
bool rlx_fmt_check_shape(const rlx_shape *s, char *why, size_t cap);

/* Appends the text form of the (checked) value of field `f` at `p`. A body graph is printed in
 * full as a graph at nesting `depth` unless `brief`, which writes bodies as "@name" and long
 * byte strings as "<N bytes>" (for labels). Fails only for a body that fails its own checks. */
rlx_status rlx_fmt_put_value(rlx_strbuf *b, const rlx_field *f, const void *p, unsigned depth, bool brief);

/* Prints one graph at nesting `depth` (0 = top): its nodes and return line are indented
 * 4*depth+2 spaces, its closing brace 4*depth. Sets rlx_last_error() and returns its code on an
 * unprintable value. */
rlx_status rlx_fmt_put_graph(rlx_strbuf *b, const rlx_graph *g, unsigned depth);

/* ---- text scanner (text_lex.c), used by the parser (text_parse.c) ---- */
typedef struct rlx_text_scan {
  const char *src;
  size_t len, pos;
  const char *source; /* name used in error locations */
  rlx_strbuf scratch; /* decoded strings and list values, moved to an arena right after use */
} rlx_text_scan;

/* Skips blanks, newlines and // comments. */
void rlx_scan_ws(rlx_text_scan *s);
/* Next character after whitespace, or -1 at the end of the input. */
int rlx_scan_peek(rlx_text_scan *s);
/* Consumes `c` after whitespace if it is next. */
bool rlx_scan_accept(rlx_text_scan *s, char c);
/* Consumes `c` after whitespace or fails with "expected <what>". */
rlx_status rlx_scan_expect(rlx_text_scan *s, char c, const char *what);

/* "SOURCE:LINE:COL: <message>" (RLX_ERR_PARSE) for the input position `at`. */
rlx_status rlx_scan_fail(rlx_text_scan *s, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "SOURCE:LINE:COL: expected <what>, found <token at `at`>". */
rlx_status rlx_scan_expected(rlx_text_scan *s, size_t at, const char *what);
/* Describes the token at `at` for messages ("\"foo\"", "'{'", "end of input"). */
const char *rlx_scan_describe(const rlx_text_scan *s, size_t at, char *buf, size_t cap);
void rlx_scan_line_col(const rlx_text_scan *s, size_t at, unsigned *line, unsigned *col);
rlx_status rlx_scan_oom(rlx_text_scan *s);

/* Word [A-Za-z_][A-Za-z0-9_]* after whitespace; returns false (consuming nothing) if none. */
bool rlx_scan_ident(rlx_text_scan *s, const char **p, size_t *n);
/* Whether the next word is exactly `kw` (does not consume). */
bool rlx_scan_at_word(rlx_text_scan *s, const char *kw);
/* Integers, with overflow checks; `what` names the expected thing in errors. */
rlx_status rlx_scan_i64(rlx_text_scan *s, int64_t *out, const char *what);
rlx_status rlx_scan_u64(rlx_text_scan *s, uint64_t *out, const char *what);
rlx_status rlx_scan_u32(rlx_text_scan *s, uint32_t *out, const char *what);
/* f32 literal: decimal, inf, -inf, nan, nan(0xBITS). */
rlx_status rlx_scan_f32(rlx_text_scan *s, float *out);
/* String literal; the decoded bytes are in s->scratch (p, len) until the next scan call. */
rlx_status rlx_scan_string(rlx_text_scan *s);
/* Byte string 0x<hex> decoded into `arena` (NULL when empty). */
rlx_status rlx_scan_bytes(rlx_text_scan *s, rlx_arena *arena, rlx_bytes *out);

#endif
