/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* safetensors reader and writer. The reader copies the header, checks it is UTF-8, then parses it
 * with a small schema-driven JSON parser: the header is one object whose members are tensor
 * entries (an object of exactly dtype / shape / data_offsets) or "__metadata__" (an object of
 * strings). Nothing nests deeper than that, so the parser is iterative and its depth is bounded
 * by construction. Strings are unescaped in place in the header copy, which then holds the names.
 * After parsing, the entries are checked against each other (duplicates, dtypes, sizes, offsets
 * tiling the data section) and copied into one 64-byte-aligned block. */
#include "rlx/safetensors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "io/file_io.h"

#define ST_ALIGN 64u

/* ---- dtype names ---- */

typedef struct st_dtype {
  const char *name;
  int rlx; /* rlx_dtype, or -1 when RLX has no such type */
} st_dtype;

static const st_dtype st_dtypes[] = {
    {"BOOL", RLX_BOOL}, {"U8", RLX_U8},   {"I8", RLX_I8},   {"I16", RLX_I16},   {"I32", RLX_I32},
    {"I64", RLX_I64},   {"U32", RLX_U32}, {"F16", RLX_F16}, {"BF16", RLX_BF16}, {"F32", RLX_F32},
    {"F64", RLX_F64},   {"C64", RLX_C64}, {"U16", -1},      {"U64", -1},        {"F8_E5M2", -1},
    {"F8_E4M3", -1},    {"F8_E8M0", -1},  {"F4", -1},       {"F6_E2M3", -1},    {"F6_E3M2", -1},
};
#define N_ST_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

static const char *st_dtype_name(rlx_dtype t) {
  for (size_t i = 0; i < N_ST_DTYPES; i++)
    if (st_dtypes[i].rlx == (int)t) return st_dtypes[i].name;
  return NULL;
}

/* ---- UTF-8 ---- */

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF). Returns the offset of
 * the first invalid byte, or len when all is valid. */
static size_t utf8_check(const uint8_t *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf)
      n = 1, cp = c & 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
      n = 2, cp = c & 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
      n = 3, cp = c & 0x07, min = 0x10000;
    else
      return i;
    if (len - i <= n) return i;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return len;
}

/* ---- header parser ---- */

typedef struct st_entry {
  const char *name;
  size_t name_pos; /* byte offset of the name in the header, for messages */
  const char *dtype;
  uint32_t rank;
  uint64_t dims[RLX_MAX_RANK];
  uint64_t begin, end;
  bool has_dtype, has_shape, has_offsets;
} st_entry;

typedef struct st_parser {
  char *s; /* mutable copy of the header; strings are unescaped in place */
  size_t len, pos;
  st_entry *entries;
  uint32_t n_entries, cap_entries;
  rlx_safetensors_kv *meta;
  uint32_t n_meta, cap_meta;
  bool seen_meta;
} st_parser;

static rlx_status st_fail(const st_parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static rlx_status st_fail(const st_parser *p, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rlx_errorf(RLX_ERR_FORMAT, "safetensors header, byte %zu: %s", p->pos, msg);
}

static void st_ws(st_parser *p) {
  while (p->pos < p->len &&
         (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static bool st_accept(st_parser *p, char c) {
  st_ws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return true;
  }
  return false;
}

static rlx_status st_expect(st_parser *p, char c, const char *what) {
  if (st_accept(p, c)) return RLX_OK;
  if (p->pos >= p->len) return st_fail(p, "unexpected end of header, expected %s", what);
  return st_fail(p, "expected %s, found '%c'", what, p->s[p->pos]);
}

static int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(const st_parser *p, size_t at, uint32_t *out) {
  if (p->len - at < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hex_val(p->s[at + (size_t)i]);
    if (h < 0) return false;
    v = v << 4 | (uint32_t)h;
  }
  *out = v;
  return true;
}

/* Parses a JSON string and unescapes it in place; *out points at the NUL-terminated result. The
 * decoded text is never longer than the quoted source, so the terminating NUL fits where the
 * closing quote was. `what` names the string in errors. */
static rlx_status st_string(st_parser *p, const char **out, const char *what) {
  st_ws(p);
  if (p->pos >= p->len || p->s[p->pos] != '"') return st_fail(p, "expected %s (a JSON string)", what);
  p->pos++;
  char *dst = p->s + p->pos;
  char *start = dst;
  for (;;) {
    if (p->pos >= p->len) return st_fail(p, "unterminated string (%s)", what);
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') {
      p->pos++;
      break;
    }
    if (c < 0x20) return st_fail(p, "control character 0x%02x inside a string (%s)", c, what);
    if (c != '\\') {
      *dst++ = (char)c;
      p->pos++;
      continue;
    }
    if (p->pos + 1 >= p->len) return st_fail(p, "unterminated escape (%s)", what);
    char e = p->s[p->pos + 1];
    p->pos += 2;
    switch (e) {
    case '"': *dst++ = '"'; break;
    case '\\': *dst++ = '\\'; break;
    case '/': *dst++ = '/'; break;
    case 'b': *dst++ = '\b'; break;
    case 'f': *dst++ = '\f'; break;
    case 'n': *dst++ = '\n'; break;
    case 'r': *dst++ = '\r'; break;
    case 't': *dst++ = '\t'; break;
    case 'u': {
      uint32_t cp;
      if (!read_hex4(p, p->pos, &cp)) return st_fail(p, "bad \\u escape (%s)", what);
      p->pos += 4;
      if (cp >= 0xdc00 && cp <= 0xdfff) return st_fail(p, "lone low surrogate in \\u escape (%s)", what);
      if (cp >= 0xd800 && cp <= 0xdbff) {
        uint32_t lo;
        if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' || !read_hex4(p, p->pos + 2, &lo) ||
            lo < 0xdc00 || lo > 0xdfff)
          return st_fail(p, "high surrogate without a low surrogate in \\u escape (%s)", what);
        p->pos += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      }
      if (cp == 0) return st_fail(p, "NUL character (\\u0000) in %s", what);
      /* At most 4 bytes from 6 (or 12) source bytes: stays behind the read position. */
      if (cp < 0x80)
        *dst++ = (char)cp;
      else if (cp < 0x800) {
        *dst++ = (char)(0xc0 | cp >> 6);
        *dst++ = (char)(0x80 | (cp & 0x3f));
      } else if (cp < 0x10000) {
        *dst++ = (char)(0xe0 | cp >> 12);
        *dst++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *dst++ = (char)(0x80 | (cp & 0x3f));
      } else {
        *dst++ = (char)(0xf0 | cp >> 18);
        *dst++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *dst++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *dst++ = (char)(0x80 | (cp & 0x3f));
      }
      break;
    }
    default: return st_fail(p, "unknown escape '\\%c' (%s)", e, what);
    }
  }
  *dst = '\0';
  *out = start;
  return RLX_OK;
}

/* A non-negative JSON integer (no sign, fraction or exponent) that fits in 64 bits. */
static rlx_status st_uint(st_parser *p, uint64_t *out, const char *what) {
  st_ws(p);
  size_t b = p->pos;
  if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
    return st_fail(p, "expected a non-negative integer (%s)", what);
  uint64_t v = 0;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    uint64_t d = (uint64_t)(p->s[p->pos] - '0');
    if (v > (UINT64_MAX - d) / 10) return st_fail(p, "integer does not fit in 64 bits (%s)", what);
    v = v * 10 + d;
    p->pos++;
  }
  if (p->pos - b > 1 && p->s[b] == '0') {
    p->pos = b;
    return st_fail(p, "integer with a leading zero (%s)", what);
  }
  if (p->pos < p->len && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
    return st_fail(p, "expected an integer, found a fraction or exponent (%s)", what);
  *out = v;
  return RLX_OK;
}

/* A JSON array of at most `max` non-negative integers. */
static rlx_status st_uint_array(st_parser *p, uint64_t *v, uint32_t max, uint32_t *n, const char *what) {
  RLX_TRY(st_expect(p, '[', "'[' to start an array"));
  *n = 0;
  if (st_accept(p, ']')) return RLX_OK;
  for (;;) {
    if (*n == max) return st_fail(p, "%s has more than %u elements", what, max);
    RLX_TRY(st_uint(p, &v[*n], what));
    (*n)++;
    if (st_accept(p, ']')) return RLX_OK;
    RLX_TRY(st_expect(p, ',', "',' or ']' in an array"));
  }
}

static rlx_status st_tensor_info(st_parser *p, st_entry *e) {
  RLX_TRY(st_expect(p, '{', "'{' to start the entry of a tensor"));
  if (st_accept(p, '}')) return st_fail(p, "tensor '%s': empty entry (needs dtype, shape, data_offsets)", e->name);
  for (;;) {
    const char *key;
    RLX_TRY(st_string(p, &key, "a field name"));
    RLX_TRY(st_expect(p, ':', "':' after a field name"));
    if (strcmp(key, "dtype") == 0) {
      if (e->has_dtype) return st_fail(p, "tensor '%s': field dtype given twice", e->name);
      RLX_TRY(st_string(p, &e->dtype, "dtype"));
      e->has_dtype = true;
    } else if (strcmp(key, "shape") == 0) {
      if (e->has_shape) return st_fail(p, "tensor '%s': field shape given twice", e->name);
      RLX_TRY(st_uint_array(p, e->dims, RLX_MAX_RANK, &e->rank, "shape"));
      e->has_shape = true;
    } else if (strcmp(key, "data_offsets") == 0) {
      if (e->has_offsets) return st_fail(p, "tensor '%s': field data_offsets given twice", e->name);
      uint64_t off[2];
      uint32_t n;
      RLX_TRY(st_uint_array(p, off, 2, &n, "data_offsets"));
      if (n != 2) return st_fail(p, "tensor '%s': data_offsets needs 2 integers, got %u", e->name, n);
      e->begin = off[0];
      e->end = off[1];
      e->has_offsets = true;
    } else {
      return st_fail(p, "tensor '%s': unknown field '%s' (expected dtype, shape, data_offsets)", e->name, key);
    }
    if (st_accept(p, '}')) break;
    RLX_TRY(st_expect(p, ',', "',' or '}' in a tensor entry"));
  }
  if (!e->has_dtype || !e->has_shape || !e->has_offsets)
    return st_fail(p, "tensor '%s': missing field %s", e->name,
                   !e->has_dtype   ? "dtype"
                   : !e->has_shape ? "shape"
                                   : "data_offsets");
  return RLX_OK;
}

static rlx_status st_metadata(st_parser *p) {
  if (p->seen_meta) return st_fail(p, "duplicate entry '__metadata__'");
  p->seen_meta = true;
  st_ws(p);
  if (p->pos >= p->len || p->s[p->pos] != '{') return st_fail(p, "__metadata__ must be an object of strings");
  p->pos++;
  if (st_accept(p, '}')) return RLX_OK;
  for (;;) {
    const char *key, *value;
    size_t at = p->pos;
    RLX_TRY(st_string(p, &key, "a metadata key"));
    RLX_TRY(st_expect(p, ':', "':' after a metadata key"));
    if (strlen(key) > RLX_SAFETENSORS_MAX_NAME)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "safetensors header, byte %zu: a __metadata__ key is %zu bytes long; the limit "
                        "is %u",
                        at, strlen(key), RLX_SAFETENSORS_MAX_NAME);
    st_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '"')
      return st_fail(p, "__metadata__ value of '%s' is not a string (only string values are allowed)", key);
    RLX_TRY(st_string(p, &value, "a metadata value"));
    for (uint32_t i = 0; i < p->n_meta; i++)
      if (strcmp(p->meta[i].key, key) == 0) return st_fail(p, "duplicate __metadata__ key '%s'", key);
    if (p->n_meta == RLX_SAFETENSORS_MAX_TENSORS)
      return st_fail(p, "more than %u __metadata__ entries", RLX_SAFETENSORS_MAX_TENSORS);
    if (p->n_meta == p->cap_meta) {
      uint32_t nc = p->cap_meta ? p->cap_meta * 2 : 8;
      rlx_safetensors_kv *nm = realloc(p->meta, nc * sizeof *nm);
      if (!nm) return rlx_errorf(RLX_ERR_OOM, "safetensors: out of memory");
      p->meta = nm;
      p->cap_meta = nc;
    }
    p->meta[p->n_meta].key = key;
    p->meta[p->n_meta].value = value;
    p->n_meta++;
    if (st_accept(p, '}')) return RLX_OK;
    RLX_TRY(st_expect(p, ',', "',' or '}' in __metadata__"));
  }
}

static rlx_status st_header(st_parser *p) {
  if (p->len == 0 || p->s[0] != '{') return st_fail(p, "the header must be a JSON object starting with '{'");
  p->pos = 1;
  if (!st_accept(p, '}')) {
    for (;;) {
      size_t at = p->pos;
      const char *name;
      RLX_TRY(st_string(p, &name, "a tensor name"));
      RLX_TRY(st_expect(p, ':', "':' after a tensor name"));
      if (!name[0]) return st_fail(p, "a tensor has an empty name (the writer cannot write it back either)");
      if (strlen(name) > RLX_SAFETENSORS_MAX_NAME)
        return rlx_errorf(RLX_ERR_FORMAT,
                          "safetensors header, byte %zu: a tensor name is %zu bytes long; the limit is %u", at,
                          strlen(name), RLX_SAFETENSORS_MAX_NAME);
      if (strcmp(name, "__metadata__") == 0) {
        RLX_TRY(st_metadata(p));
      } else {
        if (p->n_entries == RLX_SAFETENSORS_MAX_TENSORS)
          return st_fail(p, "more than %u tensors (the reader's limit)", RLX_SAFETENSORS_MAX_TENSORS);
        if (p->n_entries == p->cap_entries) {
          uint32_t nc = p->cap_entries ? p->cap_entries * 2 : 16;
          st_entry *ne = realloc(p->entries, nc * sizeof *ne);
          if (!ne) return rlx_errorf(RLX_ERR_OOM, "safetensors: out of memory");
          p->entries = ne;
          p->cap_entries = nc;
        }
        st_entry *e = &p->entries[p->n_entries++];
        memset(e, 0, sizeof *e);
        e->name = name;
        e->name_pos = at;
        RLX_TRY(st_tensor_info(p, e));
      }
      if (st_accept(p, '}')) break;
      RLX_TRY(st_expect(p, ',', "',' or '}' between header entries"));
    }
  }
  st_ws(p);
  if (p->pos != p->len) return st_fail(p, "unexpected text after the header object");
  return RLX_OK;
}

/* ---- validation and result ---- */

typedef struct st_storage {
  char *header;
  void *data;
} st_storage;

void rlx_safetensors_free(rlx_safetensors *f) {
  if (!f) return;
  st_storage *s = f->storage_;
  if (s) {
    free(s->header);
    free(s->data);
    free(s);
  }
  free(f->tensors);
  free(f->metadata);
  free(f);
}

static int cmp_name(const void *a, const void *b) {
  const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
  return strcmp(x->name, y->name);
}

static int cmp_offsets(const void *a, const void *b) {
  const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

/* Checks the entries against the data section of `data_len` bytes; `order` receives them sorted
 * by offset; dtypes[] the RLX dtype of each entry, in entry order. */
static rlx_status st_validate(st_parser *p, uint64_t data_len, const st_entry **order, rlx_dtype *dtypes) {
  for (uint32_t i = 0; i < p->n_entries; i++) {
    const st_entry *e = &p->entries[i];
    const st_dtype *d = NULL;
    for (size_t k = 0; k < N_ST_DTYPES; k++)
      if (strcmp(st_dtypes[k].name, e->dtype) == 0) d = &st_dtypes[k];
    if (!d) return rlx_errorf(RLX_ERR_FORMAT, "safetensors: tensor '%s': unknown dtype '%s'", e->name, e->dtype);
    if (d->rlx < 0)
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "safetensors: tensor '%s': dtype %s has no RLX equivalent", e->name,
                        e->dtype);
    dtypes[i] = (rlx_dtype)d->rlx;
    uint64_t bytes = rlx_dtype_size((rlx_dtype)d->rlx);
    for (uint32_t k = 0; k < e->rank; k++) {
      if (e->dims[k] > INT64_MAX || (e->dims[k] && bytes > UINT64_MAX / e->dims[k]))
        return rlx_errorf(RLX_ERR_FORMAT, "safetensors: tensor '%s': the byte size of its shape overflows", e->name);
      bytes *= e->dims[k];
    }
    if (e->end < e->begin)
      return rlx_errorf(RLX_ERR_FORMAT, "safetensors: tensor '%s': data_offsets end %llu is before begin %llu", e->name,
                        (unsigned long long)e->end, (unsigned long long)e->begin);
    if (e->end - e->begin != bytes)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "safetensors: tensor '%s': data_offsets span %llu bytes but %s of its shape needs %llu",
                        e->name, (unsigned long long)(e->end - e->begin), e->dtype, (unsigned long long)bytes);
    if (e->end > data_len)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "safetensors: tensor '%s': data_offsets end %llu is past the end of the data section "
                        "(%llu bytes; the file is truncated?)",
                        e->name, (unsigned long long)e->end, (unsigned long long)data_len);
    order[i] = e;
  }
  if (p->n_entries > 1) {
    qsort(order, p->n_entries, sizeof *order, cmp_name);
    for (uint32_t i = 1; i < p->n_entries; i++)
      if (strcmp(order[i - 1]->name, order[i]->name) == 0)
        return rlx_errorf(RLX_ERR_FORMAT, "safetensors: duplicate tensor name '%s'", order[i]->name);
    qsort(order, p->n_entries, sizeof *order, cmp_offsets);
  }
  uint64_t at = 0;
  for (uint32_t i = 0; i < p->n_entries; i++) {
    const st_entry *e = order[i];
    if (e->begin > at)
      return rlx_errorf(RLX_ERR_FORMAT, "safetensors: tensor '%s': gap of %llu unused bytes before its data at %llu",
                        e->name, (unsigned long long)(e->begin - at), (unsigned long long)e->begin);
    if (e->begin < at)
      return rlx_errorf(RLX_ERR_FORMAT,
                        "safetensors: tensor '%s': its data at %llu overlaps the previous tensor (ending at %llu)",
                        e->name, (unsigned long long)e->begin, (unsigned long long)at);
    at = e->end;
  }
  if (at != data_len)
    return rlx_errorf(RLX_ERR_FORMAT,
                      "safetensors: %llu trailing bytes after the last tensor (data section %llu bytes, tensors "
                      "end at %llu)",
                      (unsigned long long)(data_len - at), (unsigned long long)data_len, (unsigned long long)at);
  return RLX_OK;
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

rlx_status rlx_safetensors_read(const uint8_t *data, size_t len, rlx_safetensors **out) {
  if ((!data && len) || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_safetensors_read: NULL argument");
  *out = NULL;
  if (len < 8)
    return rlx_errorf(RLX_ERR_FORMAT, "safetensors: file of %zu bytes is too short for the 8-byte header length", len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | data[i];
  if (n == 0) return rlx_errorf(RLX_ERR_FORMAT, "safetensors: header length is 0");
  if (n > RLX_SAFETENSORS_MAX_HEADER)
    return rlx_errorf(RLX_ERR_FORMAT, "safetensors: header length %llu exceeds the limit of %llu bytes",
                      (unsigned long long)n, (unsigned long long)RLX_SAFETENSORS_MAX_HEADER);
  if (n > (uint64_t)(len - 8))
    return rlx_errorf(RLX_ERR_FORMAT, "safetensors: header length %llu is larger than the %zu bytes after it",
                      (unsigned long long)n, len - 8);
  size_t hlen = (size_t)n;
  size_t bad = utf8_check(data + 8, hlen);
  if (bad != hlen) return rlx_errorf(RLX_ERR_FORMAT, "safetensors header, byte %zu: invalid UTF-8", bad);

  rlx_status st = RLX_OK;
  st_parser p = {0};
  const st_entry **order = NULL;
  rlx_dtype *dtypes = NULL;
  rlx_safetensors *f = calloc(1, sizeof *f);
  st_storage *stor = calloc(1, sizeof *stor);
  if (f) f->storage_ = stor;
  if (stor) stor->header = p.s = malloc(hlen + 1);
  if (!f || !stor || !p.s) {
    st = rlx_errorf(RLX_ERR_OOM, "safetensors: out of memory for a %zu-byte header", hlen);
    goto done;
  }
  memcpy(p.s, data + 8, hlen);
  p.s[hlen] = '\0';
  p.len = hlen;
  st = st_header(&p);
  if (st != RLX_OK) goto done;

  uint32_t nt = p.n_entries;
  order = malloc((nt ? nt : 1) * sizeof *order);
  dtypes = malloc((nt ? nt : 1) * sizeof *dtypes);
  f->tensors = calloc(nt ? nt : 1, sizeof *f->tensors);
  if (!order || !dtypes || !f->tensors) {
    st = rlx_errorf(RLX_ERR_OOM, "safetensors: out of memory for %u tensors", nt);
    goto done;
  }
  size_t data_len = len - 8 - hlen;
  st = st_validate(&p, data_len, order, dtypes);
  if (st != RLX_OK) goto done;

  /* One aligned copy per tensor. The spans tile data_len, so the rounded total stays below
   * data_len + nt * ST_ALIGN. */
  size_t total = ST_ALIGN;
  for (uint32_t i = 0; i < nt; i++) total += round_up((size_t)(order[i]->end - order[i]->begin), ST_ALIGN);
  stor->data = aligned_alloc(ST_ALIGN, total);
  if (!stor->data) {
    st = rlx_errorf(RLX_ERR_OOM, "safetensors: out of memory for %zu bytes of tensor data", total);
    goto done;
  }
  const uint8_t *base = data + 8 + hlen;
  size_t at = 0;
  for (uint32_t i = 0; i < nt; i++) {
    const st_entry *e = order[i];
    size_t nb = (size_t)(e->end - e->begin);
    uint8_t *dst = (uint8_t *)stor->data + at;
    if (nb) memcpy(dst, base + e->begin, nb);
    rlx_dim dims[RLX_MAX_RANK];
    for (uint32_t k = 0; k < e->rank; k++) dims[k] = (rlx_dim)e->dims[k];
    f->tensors[i].name = e->name;
    f->tensors[i].tensor.data = dst;
    f->tensors[i].tensor.shape = rlx_shape_make(dtypes[e - p.entries], e->rank, dims);
    at += round_up(nb, ST_ALIGN);
  }
  f->n_tensors = nt;
  f->metadata = p.meta;
  f->n_metadata = p.n_meta;
  p.meta = NULL;

done:
  free(order);
  free(dtypes);
  free(p.entries);
  free(p.meta);
  if (st != RLX_OK) {
    if (f)
      rlx_safetensors_free(f);
    else if (stor) {
      free(stor->header);
      free(stor);
    }
    return st;
  }
  *out = f;
  return RLX_OK;
}

rlx_status rlx_safetensors_load(const char *path, rlx_safetensors **out) {
  if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_safetensors_load: NULL argument");
  *out = NULL;
  uint8_t *buf;
  size_t len;
  RLX_TRY(rlx_file_read(path, SIZE_MAX, NULL, &buf, &len));
  rlx_status st = rlx_safetensors_read(buf, len, out);
  free(buf);
  if (st != RLX_OK) return rlx_error_context(st, "%s", path);
  return RLX_OK;
}

const rlx_named_tensor *rlx_safetensors_find(const rlx_safetensors *f, const char *name) {
  if (!f || !name) return NULL;
  for (uint32_t i = 0; i < f->n_tensors; i++)
    if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
  return NULL;
}

const char *rlx_safetensors_meta(const rlx_safetensors *f, const char *key) {
  if (!f || !key) return NULL;
  for (uint32_t i = 0; i < f->n_metadata; i++)
    if (strcmp(f->metadata[i].key, key) == 0) return f->metadata[i].value;
  return NULL;
}

/* ---- writer ---- */

typedef struct st_buf {
  char *s;
  size_t len, cap;
  bool oom;
} st_buf;

static void sb_put(st_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) {
      if (nc > SIZE_MAX / 2) {
        b->oom = true;
        return;
      }
      nc *= 2;
    }
    char *ns = realloc(b->s, nc);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = nc;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void sb_str(st_buf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt_u64(st_buf *b, uint64_t v) {
  char tmp[24];
  int k = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  sb_put(b, tmp, (size_t)k);
}

static void sb_json_string(st_buf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"')
      sb_put(b, "\\\"", 2);
    else if (*c == '\\')
      sb_put(b, "\\\\", 2);
    else if (*c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", *c);
      sb_put(b, esc, 6);
    } else
      sb_put(b, (const char *)c, 1);
  }
  sb_put(b, "\"", 1);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* `max`: the longest allowed string in bytes (names and keys: RLX_SAFETENSORS_MAX_NAME). */
static rlx_status check_text(const char *s, const char *what, uint32_t i, size_t max) {
  if (!s) return rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: %s %u is NULL", what, i);
  size_t n = strlen(s);
  if (n > max)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: %s %u is %zu bytes long; the limit is %zu", what, i, n,
                      max);
  if (utf8_check((const uint8_t *)s, n) != n)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: %s %u ('%s') is not valid UTF-8", what, i, s);
  return RLX_OK;
}

rlx_status rlx_safetensors_write(const rlx_named_tensor *tensors, uint32_t n, const rlx_safetensors_kv *metadata,
                                 uint32_t n_metadata, uint8_t **out, size_t *len) {
  if ((!tensors && n) || (!metadata && n_metadata) || !out || !len)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_safetensors_write: NULL argument");
  *out = NULL;
  *len = 0;
  if (n > RLX_SAFETENSORS_MAX_TENSORS || n_metadata > RLX_SAFETENSORS_MAX_TENSORS)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: more than %u tensors or metadata entries",
                      RLX_SAFETENSORS_MAX_TENSORS);
  for (uint32_t i = 0; i < n_metadata; i++) {
    RLX_TRY(check_text(metadata[i].key, "metadata key", i, RLX_SAFETENSORS_MAX_NAME));
    RLX_TRY(check_text(metadata[i].value, "metadata value", i, SIZE_MAX));
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(metadata[j].key, metadata[i].key) == 0)
        return rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: duplicate metadata key '%s'", metadata[i].key);
  }
  size_t *nbytes = malloc((n ? n : 1) * sizeof *nbytes);
  const char **names = malloc((n ? n : 1) * sizeof *names);
  if (!nbytes || !names) {
    free(nbytes);
    free(names);
    return rlx_errorf(RLX_ERR_OOM, "safetensors write: out of memory");
  }
  rlx_status st = RLX_OK;
  size_t data_len = 0;
  for (uint32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_named_tensor *t = &tensors[i];
    st = check_text(t->name, "tensor name", i, RLX_SAFETENSORS_MAX_NAME);
    if (st != RLX_OK) break;
    if (!t->name[0] || strcmp(t->name, "__metadata__") == 0)
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: tensor %u: the name '%s' is not allowed", i, t->name);
    else if (!st_dtype_name((rlx_dtype)t->tensor.shape.dtype))
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "safetensors write: tensor '%s': dtype %s has no safetensors name", t->name,
                      rlx_dtype_name((rlx_dtype)t->tensor.shape.dtype));
    else if (rlx_shape_nbytes(&t->tensor.shape, &nbytes[i]) != RLX_OK)
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: tensor '%s': shape must be static and not overflow",
                      t->name);
    else if (nbytes[i] && !t->tensor.data)
      st = rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: tensor '%s': NULL data", t->name);
    else if (!rlx_add_size(data_len, nbytes[i], &data_len))
      st = rlx_errorf(RLX_ERR_OVERFLOW, "safetensors write: total data size overflows");
    names[i] = t->name;
  }
  if (st == RLX_OK && n > 1) {
    qsort(names, n, sizeof *names, cmp_str);
    for (uint32_t i = 1; i < n && st == RLX_OK; i++)
      if (strcmp(names[i - 1], names[i]) == 0)
        st = rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: duplicate tensor name '%s'", names[i]);
  }
  free(names);
  if (st != RLX_OK) {
    free(nbytes);
    return st;
  }

  st_buf h = {0};
  sb_put(&h, "{", 1);
  bool first = true;
  if (n_metadata) {
    sb_str(&h, "\"__metadata__\":{");
    for (uint32_t i = 0; i < n_metadata; i++) {
      if (i) sb_put(&h, ",", 1);
      sb_json_string(&h, metadata[i].key);
      sb_put(&h, ":", 1);
      sb_json_string(&h, metadata[i].value);
    }
    sb_put(&h, "}", 1);
    first = false;
  }
  uint64_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    const rlx_shape *s = &tensors[i].tensor.shape;
    if (!first) sb_put(&h, ",", 1);
    first = false;
    sb_json_string(&h, tensors[i].name);
    sb_str(&h, ":{\"dtype\":\"");
    sb_str(&h, st_dtype_name((rlx_dtype)s->dtype));
    sb_str(&h, "\",\"shape\":[");
    for (uint32_t k = 0; k < s->rank; k++) {
      if (k) sb_put(&h, ",", 1);
      sb_fmt_u64(&h, (uint64_t)s->dims[k]);
    }
    sb_str(&h, "],\"data_offsets\":[");
    sb_fmt_u64(&h, at);
    sb_put(&h, ",", 1);
    at += nbytes[i];
    sb_fmt_u64(&h, at);
    sb_str(&h, "]}");
  }
  sb_put(&h, "}", 1);
  while (!h.oom && (8 + h.len) % 8 != 0) sb_put(&h, " ", 1);
  size_t total = 0;
  uint8_t *buf = NULL;
  if (h.oom || (uint64_t)h.len > RLX_SAFETENSORS_MAX_HEADER || !rlx_add_size(8 + h.len, data_len, &total) ||
      !(buf = malloc(total ? total : 1))) {
    st = h.oom || (uint64_t)h.len <= RLX_SAFETENSORS_MAX_HEADER
             ? rlx_errorf(RLX_ERR_OOM, "safetensors write: out of memory")
             : rlx_errorf(RLX_ERR_INVALID_ARG, "safetensors write: header of %zu bytes exceeds the limit", h.len);
    free(h.s);
    free(nbytes);
    return st;
  }
  for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
  memcpy(buf + 8, h.s, h.len);
  size_t pos = 8 + h.len;
  for (uint32_t i = 0; i < n; i++) {
    if (nbytes[i]) memcpy(buf + pos, tensors[i].tensor.data, nbytes[i]);
    pos += nbytes[i];
  }
  free(h.s);
  free(nbytes);
  *out = buf;
  *len = total;
  return RLX_OK;
}

rlx_status rlx_safetensors_save(const char *path, const rlx_named_tensor *tensors, uint32_t n,
                                const rlx_safetensors_kv *metadata, uint32_t n_metadata) {
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_safetensors_save: NULL path");
  uint8_t *buf;
  size_t len;
  rlx_status st = rlx_safetensors_write(tensors, n, metadata, n_metadata, &buf, &len);
  if (st != RLX_OK) return rlx_error_context(st, "%s", path);
  st = rlx_file_write(path, buf, len);
  free(buf);
  return st;
}
