/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* .npy reader and writer. Layout: "\x93NUMPY", major, minor, header length (u16 for 1.0, u32 for
 * 2.0/3.0, little-endian), a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}
 * padded with spaces and a newline, then the raw elements. The reader accepts exactly that: every
 * length is checked against the file before it is used, and anything unexpected is an error that
 * names the field and its byte offset. */
#include "rlx/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "io/file_io.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct npy_code {
  const char *code; /* without the byte-order character */
  rlx_dtype dtype;
} npy_code;

static const npy_code npy_codes[] = {
    {"f2", RLX_F16}, {"f4", RLX_F32}, {"f8", RLX_F64}, {"i1", RLX_I8},   {"i2", RLX_I16}, {"i4", RLX_I32},
    {"i8", RLX_I64}, {"u1", RLX_U8},  {"u4", RLX_U32}, {"b1", RLX_BOOL}, {"c8", RLX_C64}, {"c16", RLX_C128},
};
#define N_CODES (sizeof npy_codes / sizeof npy_codes[0])

const char *rlx_npy_descr(rlx_dtype t) {
  static const char *const descr[RLX_DTYPE_COUNT] = {
      [RLX_F32] = "<f4", [RLX_F16] = "<f2",  [RLX_F64] = "<f8", [RLX_I8] = "|i1",
      [RLX_I16] = "<i2", [RLX_I32] = "<i4",  [RLX_I64] = "<i8", [RLX_U8] = "|u1",
      [RLX_U32] = "<u4", [RLX_BOOL] = "|b1", [RLX_C64] = "<c8", [RLX_C128] = "<c16",
  };
  return (unsigned)t < RLX_DTYPE_COUNT ? descr[t] : NULL;
}

void rlx_npy_tensor_free(rlx_tensor *t, const rlx_allocator *al) {
  if (!t) return;
  if (!al) al = rlx_default_allocator();
  al->free(al->ctx, t->data);
  t->data = NULL;
}

/* ---- header dict parser ---- */

typedef struct hdr {
  const char *s;
  size_t len, pos;
  size_t base; /* file offset of s[0], for messages */
} hdr;

static rlx_status hdr_fail(const hdr *h, const char *fmt, const char *what) {
  char msg[200];
  snprintf(msg, sizeof msg, fmt, what);
  return rlx_errorf(RLX_ERR_FORMAT, "npy header, byte %zu: %s", h->base + h->pos, msg);
}

static void hdr_ws(hdr *h) {
  while (h->pos < h->len &&
         (h->s[h->pos] == ' ' || h->s[h->pos] == '\t' || h->s[h->pos] == '\n' || h->s[h->pos] == '\r'))
    h->pos++;
}

static bool hdr_accept(hdr *h, char c) {
  hdr_ws(h);
  if (h->pos < h->len && h->s[h->pos] == c) {
    h->pos++;
    return true;
  }
  return false;
}

/* A quoted Python string without escapes, at most cap-1 characters. */
static rlx_status hdr_string(hdr *h, char *out, size_t cap, const char *what) {
  hdr_ws(h);
  if (h->pos >= h->len || (h->s[h->pos] != '\'' && h->s[h->pos] != '"'))
    return hdr_fail(h, "expected a quoted %s", what);
  char q = h->s[h->pos++];
  size_t n = 0;
  while (h->pos < h->len && h->s[h->pos] != q) {
    char c = h->s[h->pos];
    if (c == '\\' || c == '\n') return hdr_fail(h, "unsupported character in %s", what);
    /* strcmp would stop at a NUL: '<f4\0junk' must not read as '<f4'. */
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) {
      char why[96];
      snprintf(why, sizeof why, "%s contains byte 0x%02x", what, (unsigned char)c);
      return hdr_fail(h, "%s; only printable ASCII is allowed in header strings (no NUL or trailing junk)", why);
    }
    if (n + 1 >= cap) return hdr_fail(h, "%s is too long", what);
    out[n++] = c;
    h->pos++;
  }
  if (h->pos >= h->len) return hdr_fail(h, "unterminated %s", what);
  h->pos++;
  out[n] = 0;
  return RLX_OK;
}

static bool hdr_word(hdr *h, const char *w) {
  hdr_ws(h);
  size_t n = strlen(w);
  if (h->len - h->pos < n || memcmp(h->s + h->pos, w, n) != 0) return false;
  /* the word must end here */
  if (h->pos + n < h->len) {
    char c = h->s[h->pos + n];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return false;
  }
  h->pos += n;
  return true;
}

static rlx_status hdr_shape(hdr *h, rlx_shape *shape) {
  if (!hdr_accept(h, '(')) return hdr_fail(h, "%s must be a tuple such as (2, 3) or (3,)", "shape");
  uint32_t rank = 0;
  bool trailing_comma = false;
  for (;;) {
    hdr_ws(h);
    if (hdr_accept(h, ')')) break;
    if (rank > 0 && !trailing_comma) return hdr_fail(h, "expected ',' or ')' in %s", "shape");
    if (h->pos >= h->len || h->s[h->pos] < '0' || h->s[h->pos] > '9') {
      if (h->pos < h->len && h->s[h->pos] == '-') return hdr_fail(h, "%s has a negative dimension", "shape");
      return hdr_fail(h, "expected a dimension (a non-negative integer) in %s", "shape");
    }
    if (rank == RLX_MAX_RANK) return hdr_fail(h, "shape has more than 8 dimensions (%s)", "the rank limit of rlx");
    int64_t v = 0;
    while (h->pos < h->len && h->s[h->pos] >= '0' && h->s[h->pos] <= '9') {
      int d = h->s[h->pos] - '0';
      if (v > (INT64_MAX - d) / 10) return hdr_fail(h, "a dimension of %s overflows", "shape");
      v = v * 10 + d;
      h->pos++;
    }
    if (h->pos < h->len && (h->s[h->pos] == 'L' || h->s[h->pos] == 'l')) h->pos++; /* Python 2 longs */
    shape->dims[rank++] = v;
    trailing_comma = hdr_accept(h, ',');
  }
  if (rank == 1 && !trailing_comma)
    return hdr_fail(h, "%s '(N)' is an integer in Python, not a tuple; write '(N,)'", "shape");
  shape->rank = (uint8_t)rank;
  return RLX_OK;
}

static rlx_status parse_descr(hdr *h, const char *d, rlx_dtype *out) {
  char order = d[0];
  const char *code = d + (order ? 1 : 0);
  for (size_t i = 0; i < N_CODES; i++) {
    if (strcmp(code, npy_codes[i].code) != 0) continue;
    size_t sz = rlx_dtype_size(npy_codes[i].dtype);
    if (order == '>' && sz > 1) return hdr_fail(h, "descr '%s' is big-endian; only little-endian data is supported", d);
    if (order == '=') return hdr_fail(h, "descr '%s' uses native byte order; expected '<' (little-endian)", d);
    if (order == '|' && sz > 1) return hdr_fail(h, "descr '%s' has no byte order; expected '<'", d);
    if (order != '<' && order != '|' && order != '>') break;
    *out = npy_codes[i].dtype;
    return RLX_OK;
  }
  if (strcmp(code, "V2") == 0 || strcmp(code, "bf16") == 0)
    return hdr_fail(h, "descr '%s' is not a NumPy number type (bf16 has no .npy code; store f32)", d);
  return hdr_fail(h, "unsupported descr '%s' (expected one of <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u4 |b1 <c8 <c16)", d);
}

static rlx_status parse_header(hdr *h, rlx_shape *shape) {
  bool seen_descr = false, seen_order = false, seen_shape = false, fortran = false;
  rlx_dtype dt = RLX_F32;
  if (!hdr_accept(h, '{')) return hdr_fail(h, "the header is not a dict (expected '%s')", "{");
  for (;;) {
    if (hdr_accept(h, '}')) break;
    char key[32];
    RLX_TRY(hdr_string(h, key, sizeof key, "key"));
    if (!hdr_accept(h, ':')) return hdr_fail(h, "expected ':' after key '%s'", key);
    if (strcmp(key, "descr") == 0) {
      if (seen_descr) return hdr_fail(h, "duplicate key '%s'", key);
      seen_descr = true;
      char d[16];
      RLX_TRY(hdr_string(h, d, sizeof d, "descr"));
      RLX_TRY(parse_descr(h, d, &dt));
    } else if (strcmp(key, "fortran_order") == 0) {
      if (seen_order) return hdr_fail(h, "duplicate key '%s'", key);
      seen_order = true;
      if (hdr_word(h, "True"))
        fortran = true;
      else if (hdr_word(h, "False"))
        fortran = false;
      else
        return hdr_fail(h, "%s must be True or False", key);
      if (fortran) return hdr_fail(h, "%s is True; only C-order arrays are supported", key);
    } else if (strcmp(key, "shape") == 0) {
      if (seen_shape) return hdr_fail(h, "duplicate key '%s'", key);
      seen_shape = true;
      RLX_TRY(hdr_shape(h, shape));
    } else {
      return hdr_fail(h, "unexpected key '%s' (a .npy header has descr, fortran_order and shape)", key);
    }
    if (hdr_accept(h, ',')) continue;
    if (hdr_accept(h, '}')) break;
    return hdr_fail(h, "expected ',' or '}' after the value of '%s'", key);
  }
  hdr_ws(h);
  if (h->pos != h->len) return hdr_fail(h, "unexpected text after the header %s", "dict");
  if (!seen_descr) return hdr_fail(h, "missing key '%s'", "descr");
  if (!seen_order) return hdr_fail(h, "missing key '%s'", "fortran_order");
  if (!seen_shape) return hdr_fail(h, "missing key '%s'", "shape");
  shape->dtype = (uint8_t)dt;
  return RLX_OK;
}

static uint32_t rd_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

rlx_status rlx_npy_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_tensor *out) {
  if (!out || (!data && len)) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_npy_read: NULL argument");
  memset(out, 0, sizeof *out);
  if (!al) al = rlx_default_allocator();
  if (len < 8 || memcmp(data, npy_magic, 6) != 0)
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 0: not a .npy file (missing the \\x93NUMPY magic)");
  uint8_t major = data[6], minor = data[7];
  size_t hlen, start;
  if (major == 1 && minor == 0) {
    if (len < 10) return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 8: file ends inside the header length");
    hlen = (size_t)data[8] | (size_t)data[9] << 8;
    start = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (len < 12) return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 8: file ends inside the header length");
    hlen = rd_u32le(data + 8);
    start = 12;
  } else {
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 6: unsupported format version %u.%u (expected 1.0, 2.0 or 3.0)", major,
                      minor);
  }
  if (hlen > RLX_NPY_MAX_HEADER)
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 8: header length %zu exceeds the limit of %u bytes", hlen,
                      (unsigned)RLX_NPY_MAX_HEADER);
  if (hlen > len - start)
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte 8: header length %zu runs past the end of the file (%zu bytes)", hlen,
                      len);
  hdr h = {(const char *)data + start, hlen, 0, start};
  rlx_shape shape = {0};
  RLX_TRY(parse_header(&h, &shape));

  size_t numel, nbytes;
  if (rlx_shape_numel(&shape, &numel) != RLX_OK ||
      !rlx_mul_size(numel, rlx_dtype_size((rlx_dtype)shape.dtype), &nbytes))
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte %zu: shape is too large (element count overflows)", start);
  size_t data_off = start + hlen, have = len - data_off;
  if (have < nbytes)
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte %zu: data is truncated: %zu bytes present, the shape needs %zu",
                      data_off, have, nbytes);
  if (have > nbytes)
    return rlx_errorf(RLX_ERR_FORMAT, "npy, byte %zu: %zu trailing bytes after the %zu bytes of data",
                      data_off + nbytes, have - nbytes, nbytes);
  void *buf = al->alloc(al->ctx, nbytes ? nbytes : 1);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "npy: out of memory for %zu bytes of data", nbytes);
  if (nbytes) memcpy(buf, data + data_off, nbytes);
  if (shape.dtype == RLX_BOOL) /* NumPy bools are 0/1 bytes; keep that invariant */
    for (size_t i = 0; i < nbytes; i++) ((uint8_t *)buf)[i] = ((uint8_t *)buf)[i] != 0;
  out->data = buf;
  out->shape = shape;
  return RLX_OK;
}

rlx_status rlx_npy_write(const rlx_tensor *t, const rlx_allocator *al, uint8_t **out, size_t *len) {
  if (!t || !out || !len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_npy_write: NULL argument");
  *out = NULL;
  *len = 0;
  if (!al) al = rlx_default_allocator();
  if (t->shape.dtype >= RLX_DTYPE_COUNT || t->shape.rank > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "npy: the tensor has an invalid dtype or rank");
  const char *descr = rlx_npy_descr((rlx_dtype)t->shape.dtype);
  if (!descr)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "npy: dtype %s has no .npy code; cast it to f32 before saving",
                      rlx_dtype_name((rlx_dtype)t->shape.dtype));
  size_t nbytes;
  rlx_status st = rlx_shape_nbytes(&t->shape, &nbytes);
  if (st != RLX_OK) return rlx_error_context(st, "npy: cannot save the tensor");
  if (nbytes && !t->data) return rlx_errorf(RLX_ERR_INVALID_ARG, "npy: the tensor has no data");

  char dict[256];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (uint32_t i = 0; i < t->shape.rank; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "", (long long)t->shape.dims[i]);
  n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->shape.rank == 1 ? "," : "");
  /* Pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n'. */
  size_t prefix = 10, hlen = (size_t)n + 1;
  hlen += (64 - (prefix + hlen) % 64) % 64;
  size_t total = prefix + hlen;
  if (!rlx_add_size(total, nbytes, &total)) return rlx_errorf(RLX_ERR_OVERFLOW, "npy: file size overflows");
  uint8_t *buf = al->alloc(al->ctx, total);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "npy: out of memory for %zu bytes", total);
  memcpy(buf, npy_magic, 6);
  buf[6] = 1;
  buf[7] = 0;
  buf[8] = (uint8_t)(hlen & 0xff);
  buf[9] = (uint8_t)(hlen >> 8);
  memcpy(buf + prefix, dict, (size_t)n);
  memset(buf + prefix + n, ' ', hlen - (size_t)n - 1);
  buf[prefix + hlen - 1] = '\n';
  if (nbytes) memcpy(buf + prefix + hlen, t->data, nbytes);
  *out = buf;
  *len = total;
  return RLX_OK;
}

rlx_status rlx_npy_load(const char *path, const rlx_allocator *al, rlx_tensor *out) {
  if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_npy_load: NULL argument");
  memset(out, 0, sizeof *out);
  uint8_t *buf;
  size_t len;
  RLX_TRY(rlx_file_read(path, SIZE_MAX, NULL, &buf, &len));
  rlx_status st = rlx_npy_read(buf, len, al, out);
  free(buf);
  if (st != RLX_OK) return rlx_error_context(st, "%s", path);
  return RLX_OK;
}

rlx_status rlx_npy_save(const char *path, const rlx_tensor *t) {
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_npy_save: NULL path");
  uint8_t *buf;
  size_t len;
  rlx_status st = rlx_npy_write(t, NULL, &buf, &len);
  if (st != RLX_OK) return rlx_error_context(st, "%s", path);
  st = rlx_file_write(path, buf, len);
  free(buf);
  return st;
}
