/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Loading protobuf messages safely: a budgeted allocator for protobuf-c, a wire-format pre-check
 * driven by the generated descriptors (protobuf-c unpacks nested messages recursively without a
 * depth limit, so depth is bounded here first), file reading, and the small hash map used by
 * the importer. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "io/file_io.h"

/* ======================================================================================
 * Budgeted allocator: every block carries its size so frees can be accounted.
 * ====================================================================================== */

#define PB_HDR 16

static void *pb_alloc(void *ctx, size_t size) {
  oi_pb *pb = ctx;
  size_t total;
  if (!rlx_add_size(size, PB_HDR, &total) || total > pb->budget - pb->used) {
    pb->over_budget = true;
    return NULL;
  }
  uint8_t *p = pb->al->alloc(pb->al->ctx, total);
  if (!p) {
    pb->oom = true;
    return NULL;
  }
  memcpy(p, &total, sizeof total);
  pb->used += total;
  return p + PB_HDR;
}

static void pb_free(void *ctx, void *ptr) {
  oi_pb *pb = ctx;
  if (!ptr) return;
  uint8_t *p = (uint8_t *)ptr - PB_HDR;
  size_t total;
  memcpy(&total, p, sizeof total);
  pb->used -= total;
  pb->al->free(pb->al->ctx, p);
}

/* ======================================================================================
 * Wire-format pre-check
 * ====================================================================================== */

typedef struct scan {
  const uint8_t *base;
  const char *what;
  const char *path[RLX_ONNX_MAX_MESSAGE_DEPTH + 2]; /* field names from the root, for errors */
} scan;

static const char *scan_path(const scan *s, int depth, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < depth && n + 1 < cap; i++) {
    int w = snprintf(buf + n, cap - n, "%s%s", i ? "." : "", s->path[i]);
    if (w < 0) break;
    n += (size_t)w;
  }
  if (n >= cap) n = cap - 1;
  buf[n] = 0;
  return buf;
}

static rlx_status scan_err(const scan *s, int depth, const uint8_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static rlx_status scan_err(const scan *s, int depth, const uint8_t *at, const char *fmt, ...) {
  char msg[512], path[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  scan_path(s, depth, path, sizeof path);
  return rlx_errorf(RLX_ERR_FORMAT, "%s: byte %zu%s%s: %s", s->what, (size_t)(at - s->base), path[0] ? ", in " : "",
                    path, msg);
}

/* Reads a varint at *p (< end); false when it runs past end or exceeds 10 bytes. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int i = 0; i < 10; i++) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    if (i == 9 && b > 1) return false; /* more than 64 bits */
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

static bool utf8_valid(const uint8_t *s, size_t n, size_t *bad) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t len;
    uint32_t cp;
    if (c == 0) {
      *bad = i;
      return false;
    }
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      *bad = i;
      return false;
    }
    if (n - i < len) {
      *bad = i;
      return false;
    }
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) {
        *bad = i;
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF */
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      *bad = i;
      return false;
    }
    i += len;
  }
  return true;
}

/* The wire type a (non-packed) value of this field type uses. */
static int wire_of(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_FLOAT: return 5;
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE: return 1;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_BYTES:
  case PROTOBUF_C_TYPE_MESSAGE: return 2;
  default: return 0;
  }
}

static rlx_status scan_message(scan *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                               int depth) {
  if (depth > RLX_ONNX_MAX_MESSAGE_DEPTH)
    return scan_err(s, depth, p, "messages nested deeper than the limit of %d", RLX_ONNX_MAX_MESSAGE_DEPTH);
  while (p < end) {
    const uint8_t *at = p;
    uint64_t tag;
    if (!read_varint(&p, end, &tag)) return scan_err(s, depth, at, "bad varint in a field tag");
    uint64_t num = tag >> 3;
    int wire = (int)(tag & 7);
    if (num == 0 || num > 536870911u)
      return scan_err(s, depth, at, "field number %llu is out of range", (unsigned long long)num);
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)num);
    const char *fname = f ? f->name : "(unknown field)";
    s->path[depth] = fname;
    if (f) {
      int want = wire_of(f->type);
      bool packable = f->label == PROTOBUF_C_LABEL_REPEATED && want != 2;
      if (wire != want && !(packable && wire == 2))
        return scan_err(s, depth + 1, at, "%s.%s has wire type %d; expected %d", d->short_name, f->name, wire, want);
    }
    uint64_t len;
    const uint8_t *vat = p;
    switch (wire) {
    case 0:
      if (!read_varint(&p, end, &len)) return scan_err(s, depth + 1, vat, "bad varint value of field %s", fname);
      break;
    case 1:
      if (end - p < 8) return scan_err(s, depth + 1, vat, "8-byte value of field %s runs past the end", fname);
      p += 8;
      break;
    case 5:
      if (end - p < 4) return scan_err(s, depth + 1, vat, "4-byte value of field %s runs past the end", fname);
      p += 4;
      break;
    case 2: {
      if (!read_varint(&p, end, &len)) return scan_err(s, depth + 1, vat, "bad varint length of field %s", fname);
      if (len > (uint64_t)(end - p))
        return scan_err(s, depth + 1, vat, "length %llu of field %s runs past the end (%zu bytes left)",
                        (unsigned long long)len, fname, (size_t)(end - p));
      const uint8_t *v = p, *vend = p + len;
      p = vend;
      if (!f) break;
      if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        RLX_TRY(scan_message(s, f->descriptor, v, vend, depth + 1));
      } else if (f->type == PROTOBUF_C_TYPE_STRING) {
        size_t bad = 0;
        bool is_doc = strcmp(f->name, "doc_string") == 0;
        if (memchr(v, 0, len))
          return scan_err(s, depth + 1, v + ((const uint8_t *)memchr(v, 0, len) - v),
                          "string field %s contains a NUL byte", fname);
        if (!is_doc && !utf8_valid(v, len, &bad))
          return scan_err(s, depth + 1, v + bad, "string field %s is not valid UTF-8", fname);
      } else if (f->type != PROTOBUF_C_TYPE_BYTES) {
        /* packed numbers: whole elements only */
        int w = wire_of(f->type);
        if (w == 5 && len % 4)
          return scan_err(s, depth + 1, v, "packed field %s has %llu bytes, not a multiple of 4", fname,
                          (unsigned long long)len);
        if (w == 1 && len % 8)
          return scan_err(s, depth + 1, v, "packed field %s has %llu bytes, not a multiple of 8", fname,
                          (unsigned long long)len);
        if (w == 0) {
          const uint8_t *q = v;
          uint64_t tmp;
          while (q < vend)
            if (!read_varint(&q, vend, &tmp)) return scan_err(s, depth + 1, q, "bad varint in packed field %s", fname);
        }
      }
      break;
    }
    case 3:
    case 4: return scan_err(s, depth + 1, at, "field %s uses the deprecated group wire type %d", fname, wire);
    default: return scan_err(s, depth + 1, at, "field %s has invalid wire type %d", fname, wire);
    }
  }
  return RLX_OK;
}

/* Whether the first field tag of `data` could start a message of type d: a valid varint, a field
 * number of d and the wire type that field uses. A file of another kind (text, another binary
 * format) fails this on its first byte or two; every exporter writes a known field first. */
static bool first_field_fits(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len) {
  const uint8_t *p = data;
  uint64_t tag;
  if (!read_varint(&p, data + len, &tag)) return false;
  uint64_t num = tag >> 3;
  if (num == 0 || num > 536870911u) return false;
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)num);
  if (!f) return false;
  int wire = (int)(tag & 7), want = wire_of(f->type);
  return wire == want || (f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wire == 2);
}

rlx_status oi_pb_unpack(oi_pb *pb, const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                        const rlx_allocator *al, const char *what) {
  memset(pb, 0, sizeof *pb);
  pb->al = al ? al : rlx_default_allocator();
  if (len > RLX_ONNX_MAX_FILE_BYTES)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: %zu bytes exceed the protobuf limit of 2 GiB", what, len);
  if (len == 0) return rlx_errorf(RLX_ERR_FORMAT, "%s: empty input (0 bytes)", what);
  scan s = {data, what, {0}};
  rlx_status st = scan_message(&s, d, data, data + len, 0);
  if (st != RLX_OK && d == &onnx__model_proto__descriptor && !first_field_fits(d, data, len)) {
    /* "WHAT: byte 0, ...: detail" -> "WHAT: not an ONNX model: byte 0, ...: detail" */
    const char *msg = rlx_last_error();
    size_t n = strlen(what);
    if (strncmp(msg, what, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", msg);
    return rlx_errorf(st, "%s: not an ONNX model: %s", what, detail);
  }
  if (st != RLX_OK) return st;
  /* Unpacking can expand small wire records into larger C structs (an empty node is 2 bytes on
   * the wire and ~100 in memory); real models stay near 1x. */
  size_t budget;
  if (!rlx_mul_size(len, 16, &budget) || !rlx_add_size(budget, (size_t)64 << 20, &budget)) budget = SIZE_MAX;
  pb->budget = budget;
  pb->pa.alloc = pb_alloc;
  pb->pa.free = pb_free;
  pb->pa.allocator_data = pb;
  pb->msg = protobuf_c_message_unpack(d, &pb->pa, len, data);
  if (!pb->msg) {
    if (pb->oom) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory unpacking the %s message", what, d->short_name);
    if (pb->over_budget)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: unpacking needs more than the memory budget of %zu bytes", what, budget);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: protobuf-c rejected the %s message (malformed or out of memory)", what,
                      d->short_name);
  }
  return RLX_OK;
}

void oi_pb_free(oi_pb *pb) {
  if (pb->msg) protobuf_c_message_free_unpacked(pb->msg, &pb->pa);
  pb->msg = NULL;
}

/* ======================================================================================
 * Files
 * ====================================================================================== */

rlx_status oi_read_file(const char *path, size_t max, const rlx_allocator *al, uint8_t **out, size_t *len) {
  return rlx_file_read(path, max, al, out, len);
}

/* ======================================================================================
 * Hash map
 * ====================================================================================== */

static uint64_t key_hash(const oi_map *m, const void *k) {
  uint64_t h = 1469598103934665603ull;
  if (m->ptr_keys) {
    h = (uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
  }
  for (const unsigned char *s = k; *s; s++) h = (h ^ *s) * 1099511628211ull;
  return h ^ (h >> 29);
}

static bool key_eq(const oi_map *m, const void *a, const void *b) { return m->ptr_keys ? a == b : strcmp(a, b) == 0; }

void oi_map_init(oi_map *m, const rlx_allocator *al, bool ptr_keys) {
  memset(m, 0, sizeof *m);
  m->al = al;
  m->ptr_keys = ptr_keys;
}

bool oi_map_get(const oi_map *m, const void *key, uint64_t *val) {
  if (!m->cap || !key) return false;
  uint32_t mask = m->cap - 1;
  for (uint32_t i = (uint32_t)key_hash(m, key) & mask;; i = (i + 1) & mask) {
    if (!m->keys[i]) return false;
    if (key_eq(m, m->keys[i], key)) {
      if (val) *val = m->vals[i];
      return true;
    }
  }
}

static rlx_status map_grow(oi_map *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 64;
  if (cap < m->cap) return rlx_errorf(RLX_ERR_OVERFLOW, "name table too large");
  const void **keys = m->al->alloc(m->al->ctx, (size_t)cap * sizeof *keys);
  uint64_t *vals = m->al->alloc(m->al->ctx, (size_t)cap * sizeof *vals);
  if (!keys || !vals) {
    m->al->free(m->al->ctx, keys);
    m->al->free(m->al->ctx, vals);
    return rlx_errorf(RLX_ERR_OOM, "out of memory growing a name table");
  }
  memset(keys, 0, (size_t)cap * sizeof *keys);
  uint32_t mask = cap - 1;
  for (uint32_t j = 0; j < m->cap; j++) {
    if (!m->keys[j]) continue;
    uint32_t i = (uint32_t)key_hash(m, m->keys[j]) & mask;
    while (keys[i]) i = (i + 1) & mask;
    keys[i] = m->keys[j];
    vals[i] = m->vals[j];
  }
  m->al->free(m->al->ctx, m->keys);
  m->al->free(m->al->ctx, m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return RLX_OK;
}

rlx_status oi_map_put(oi_map *m, const void *key, uint64_t val) {
  if (!key) return rlx_errorf(RLX_ERR_INTERNAL, "NULL key in a name table");
  if ((uint64_t)(m->n + 1) * 4 > (uint64_t)m->cap * 3) RLX_TRY(map_grow(m));
  uint32_t mask = m->cap - 1;
  uint32_t i = (uint32_t)key_hash(m, key) & mask;
  while (m->keys[i]) {
    if (key_eq(m, m->keys[i], key)) {
      m->vals[i] = val;
      return RLX_OK;
    }
    i = (i + 1) & mask;
  }
  m->keys[i] = key;
  m->vals[i] = val;
  m->n++;
  return RLX_OK;
}

void oi_map_free(oi_map *m) {
  if (m->al) {
    m->al->free(m->al->ctx, m->keys);
    m->al->free(m->al->ctx, m->vals);
  }
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->n = 0;
}
