/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX TensorProto -> RLX bytes: dtype mapping, structural checks (dims, counts, raw sizes) and
 * external data with path containment. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/onnx/onnx_internal.h"

/* ---- dtypes ---- */

static const char *const onnx_dtype_names[] = {
    "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
    "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    /* onnx 1.14+ (opsets 19..28): none has an RLX dtype */
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0",
    "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2"};

const char *oi_onnx_dtype_name(int32_t t) {
  static _Thread_local char buf[32];
  if (t >= 0 && t < (int32_t)(sizeof onnx_dtype_names / sizeof onnx_dtype_names[0])) return onnx_dtype_names[t];
  snprintf(buf, sizeof buf, "data type %d", (int)t);
  return buf;
}

bool oi_dtype_from_onnx(int32_t t, rlx_dtype *out) {
  switch (t) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = RLX_F32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = RLX_U8; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = RLX_I8; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *out = RLX_I16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = RLX_I32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = RLX_I64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = RLX_BOOL; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = RLX_F16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = RLX_F64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *out = RLX_U32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64: *out = RLX_C64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128: *out = RLX_C128; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = RLX_BF16; return true;
  default: return false;
  }
}

int32_t oi_dtype_to_onnx(rlx_dtype t) {
  for (int32_t k = 1; k <= 16; k++) {
    rlx_dtype d;
    if (oi_dtype_from_onnx(k, &d) && d == t) return k;
  }
  return 0;
}

/* ---- checks ---- */

static rlx_status dtype_check(int32_t dt, bool has, const char *what, rlx_dtype *out) {
  if (!has) return rlx_errorf(RLX_ERR_FORMAT, "%s: field data_type is missing", what);
  if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: field data_type is UNDEFINED", what);
  if (!oi_dtype_from_onnx(dt, out)) {
    if (dt < 0 || dt >= (int32_t)(sizeof onnx_dtype_names / sizeof onnx_dtype_names[0]))
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: unknown %s", what, oi_onnx_dtype_name(dt));
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: dtype %s has no RLX equivalent", what, oi_onnx_dtype_name(dt));
  }
  return RLX_OK;
}

/* Typed data count expected for n elements, and which field holds it. */
static size_t typed_count(const Onnx__TensorProto *t, rlx_dtype d, const char **field) {
  switch (d) {
  case RLX_F32: *field = "float_data"; return t->n_float_data;
  case RLX_C64: *field = "float_data"; return t->n_float_data;
  case RLX_F64:
  case RLX_C128: *field = "double_data"; return t->n_double_data;
  case RLX_I64: *field = "int64_data"; return t->n_int64_data;
  case RLX_U32: *field = "uint64_data"; return t->n_uint64_data;
  default: *field = "int32_data"; return t->n_int32_data;
  }
}

static size_t other_typed(const Onnx__TensorProto *t) {
  return t->n_float_data + t->n_double_data + t->n_int64_data + t->n_uint64_data + t->n_int32_data + t->n_string_data;
}

rlx_status oi_tensor_check(const Onnx__TensorProto *t, const char *what, rlx_shape *shape) {
  if (t->segment)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: segmented tensors (field segment) are not supported", what);
  /* dims first: they are format errors even for dtypes we cannot hold */
  size_t numel = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field dims[%zu] is %lld; dims must be >= 0", what, i,
                        (long long)t->dims[i]);
    if ((uint64_t)t->dims[i] > ((uint64_t)1 << 62) || !rlx_mul_size(numel, (size_t)t->dims[i], &numel) ||
        numel > ((size_t)1 << 62))
      return rlx_errorf(RLX_ERR_FORMAT, "%s: field dims: the element count overflows at dims[%zu] = %lld", what, i,
                        (long long)t->dims[i]);
  }
  rlx_dtype d;
  RLX_TRY(dtype_check(t->data_type, t->has_data_type, what, &d));
  if (t->n_dims > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: rank %zu exceeds RLX's maximum rank of %d", what, t->n_dims,
                      RLX_MAX_RANK);
  rlx_dim dims[RLX_MAX_RANK];
  for (size_t i = 0; i < t->n_dims; i++) dims[i] = t->dims[i];
  *shape = rlx_shape_make(d, (uint32_t)t->n_dims, dims);
  size_t nbytes;
  if (!rlx_mul_size(numel, rlx_dtype_size(d), &nbytes))
    return rlx_errorf(RLX_ERR_FORMAT, "%s: byte size of %zu elements overflows", what, numel);
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (external) {
    if (t->has_raw_data || other_typed(t))
      return rlx_errorf(RLX_ERR_FORMAT, "%s: external tensors must not also hold raw_data or typed data", what);
    if (!t->n_external_data)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: data_location is EXTERNAL but external_data is empty", what);
    return RLX_OK;
  }
  if (t->has_data_location && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: field data_location has unknown value %d", what, (int)t->data_location);
  if (t->has_raw_data) {
    if (other_typed(t)) return rlx_errorf(RLX_ERR_FORMAT, "%s: holds both raw_data and typed data", what);
    if (t->raw_data.len != nbytes)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: raw_data has %zu bytes but dims x dtype size = %zu x %zu = %zu bytes",
                        what, t->raw_data.len, numel, rlx_dtype_size(d), nbytes);
    return RLX_OK;
  }
  const char *field;
  size_t have = typed_count(t, d, &field), want = numel;
  if (d == RLX_C64 || d == RLX_C128) want = numel * 2;
  if (have != want) {
    if (have == 0 && other_typed(t) == 0)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: holds no data for its %zu elements (no raw_data, %s or external_data)",
                        what, numel, field);
    if (other_typed(t) != have)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: dtype %s keeps its values in %s, but another typed field is set", what,
                        rlx_dtype_name(d), field);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: field %s has %zu values; dims need %zu", what, field, have, want);
  }
  if (other_typed(t) != have)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: dtype %s keeps its values in %s, but another typed field is set", what,
                      rlx_dtype_name(d), field);
  return RLX_OK;
}

/* ---- external data ---- */

static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

/* External data files must have one of these extensions (compared case-insensitively) or none
 * (the uuid / tensor-name files of onnx's and PyTorch's exporters); docs/onnx.md lists them.
 * An allow-list, so that a model cannot make the importer read arbitrary files next to it
 * (w.txt, a key, a script, another model) as weights. */
static const char *const oi_ext_allowed[] = {".bin",  ".data",      ".dat",      ".raw",    ".weights", ".weight",
                                             ".bias", ".onnx_data", ".onnxdata", ".tensor", ".tensors"};
#define OI_EXT_ALLOWED_TEXT ".bin .data .dat .raw .weights .weight .bias .onnx_data .onnxdata .tensor .tensors, or none"

static bool ext_allowed(const char *comp) {
  const char *dot = strrchr(comp, '.');
  if (!dot) return true;
  for (size_t i = 0; i < sizeof oi_ext_allowed / sizeof oi_ext_allowed[0]; i++)
    if (strcasecmp(dot, oi_ext_allowed[i]) == 0) return true;
  return false;
}

rlx_status oi_external_read(const char *base_dir, const char *location, uint64_t offset, uint64_t len, bool has_len,
                            size_t expect, const rlx_allocator *al, void **out, const char *what) {
  *out = NULL;
  if (!base_dir)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: external data '%s' needs the model's folder (import from a file)", what,
                      location);
  size_t n = strlen(location);
  if (n == 0) return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location is empty", what);
  if (n > PATH_MAX / 2)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location is too long (%zu bytes)", what, n);
  if (location[0] == '/' || strchr(location, '\\') || (n > 1 && location[1] == ':'))
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location '%s' must be a relative path", what, location);
  /* components: no "..", no hidden files, no empty names */
  char comps[PATH_MAX];
  memcpy(comps, location, n + 1);
  const char *parts[256];
  uint32_t np = 0;
  for (char *p = comps, *save = NULL, *tok = strtok_r(p, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
    if (strcmp(tok, "..") == 0)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location '%s' contains '..'", what, location);
    if (strcmp(tok, ".") == 0) continue;
    if (tok[0] == '.')
      return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location '%s' names a hidden file", what, location);
    if (np == 256)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location '%s' is nested too deeply", what, location);
    parts[np++] = tok;
  }
  if (!np) return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data location '%s' names no file", what, location);
  if (!ext_allowed(parts[np - 1]))
    return rlx_errorf(RLX_ERR_FORMAT,
                      "%s: external_data location '%s' has extension '%s', which is not an allowed "
                      "tensor data extension (" OI_EXT_ALLOWED_TEXT ")",
                      what, location, strrchr(parts[np - 1], '.'));
  /* the real path must stay inside the (real) model folder */
  char rbase[PATH_MAX], joined[PATH_MAX * 2], rfile[PATH_MAX];
  if (!realpath(base_dir, rbase))
    return rlx_errorf(RLX_ERR_IO, "%s: model folder '%s': %s", what, base_dir, strerror(errno));
  snprintf(joined, sizeof joined, "%s/%s", rbase, location);
  if (!realpath(joined, rfile))
    return rlx_errorf(RLX_ERR_IO, "%s: external data '%s': %s", what, location, strerror(errno));
  size_t bl = strlen(rbase);
  bool inside = strncmp(rfile, rbase, bl) == 0 && (rfile[bl] == '/' || (bl == 1 && rbase[0] == '/'));
  if (!inside)
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external data '%s' resolves to '%s', outside the model folder '%s'", what,
                      location, rfile, rbase);
  /* open component by component without following any symbolic link */
  int dir = open(rbase, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return rlx_errorf(RLX_ERR_IO, "%s: model folder '%s': %s", what, rbase, strerror(errno));
  for (uint32_t i = 0; i + 1 < np; i++) {
    int next = openat(dir, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(dir);
    if (next < 0)
      return rlx_errorf(e == ELOOP || e == ENOTDIR ? RLX_ERR_FORMAT : RLX_ERR_IO,
                        "%s: external data '%s': folder '%s' %s", what, location, parts[i],
                        e == ELOOP ? "is a symbolic link" : strerror(e));
    dir = next;
  }
  int fd = openat(dir, parts[np - 1], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  int e = errno;
  close(dir);
  if (fd < 0)
    return rlx_errorf(e == ELOOP ? RLX_ERR_FORMAT : RLX_ERR_IO, "%s: external data '%s': %s", what, location,
                      e == ELOOP ? "is a symbolic link" : strerror(e));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external data '%s' is not a regular file", what, location);
  }
  if (st.st_nlink != 1) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external data '%s' has %lu hard links; only files with one link are read",
                      what, location, (unsigned long)st.st_nlink);
  }
  uint64_t size = (uint64_t)st.st_size;
  if (offset > size) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external data '%s': offset %llu is past the end of the file (%llu bytes)",
                      what, location, (unsigned long long)offset, (unsigned long long)size);
  }
  uint64_t avail = size - offset;
  if (!has_len) len = avail;
  if (len > avail) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT,
                      "%s: external data '%s': offset %llu + length %llu runs past the end of the file (%llu bytes)",
                      what, location, (unsigned long long)offset, (unsigned long long)len, (unsigned long long)size);
  }
  if (len != (uint64_t)expect) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: external data '%s': %s %llu bytes but dims x dtype size = %zu bytes", what,
                      location, has_len ? "length is" : "the file holds", (unsigned long long)len, expect);
  }
  uint8_t *buf = al->alloc(al->ctx, expect ? expect : 1);
  if (!buf) {
    close(fd);
    return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for %zu bytes of external data", what, expect);
  }
  size_t got = 0;
  while (got < expect) {
    ssize_t r = pread(fd, buf + got, expect - got, (off_t)(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int re = errno;
      close(fd);
      al->free(al->ctx, buf);
      return rlx_errorf(RLX_ERR_IO, "%s: external data '%s': %s", what, location,
                        r == 0 ? "file shrank while reading" : strerror(re));
    }
    got += (size_t)r;
  }
  close(fd);
  *out = buf;
  return RLX_OK;
}

static rlx_status read_external(const Onnx__TensorProto *t, const char *what, const char *base_dir,
                                const rlx_allocator *al, void **buf, size_t nbytes) {
  const char *loc = NULL;
  uint64_t off = 0, len = 0;
  bool has_len = false;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *kv = t->external_data[i];
    const char *k = kv->key ? kv->key : "", *v = kv->value ? kv->value : "";
    if (strcmp(k, "location") == 0)
      loc = v;
    else if (strcmp(k, "offset") == 0) {
      if (!parse_u64(v, &off))
        return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data offset '%s' is not a number", what, v);
    } else if (strcmp(k, "length") == 0) {
      if (!parse_u64(v, &len))
        return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data length '%s' is not a number", what, v);
      has_len = true;
    }
  }
  if (!loc) return rlx_errorf(RLX_ERR_FORMAT, "%s: external_data has no 'location' entry", what);
  return oi_external_read(base_dir, loc, off, len, has_len, nbytes, al, buf, what);
}

/* ---- conversion ---- */

rlx_status oi_tensor_bytes(const Onnx__TensorProto *t, const char *what, const char *base_dir, const rlx_allocator *al,
                           rlx_shape *shape, void **data, size_t *nbytes) {
  *data = NULL;
  *nbytes = 0;
  RLX_TRY(oi_tensor_check(t, what, shape));
  size_t nb, numel;
  RLX_TRY(rlx_shape_nbytes(shape, &nb));
  RLX_TRY(rlx_shape_numel(shape, &numel));
  if (nb == 0) return RLX_OK;
  rlx_dtype d = (rlx_dtype)shape->dtype;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    void *ext = NULL;
    RLX_TRY(read_external(t, what, base_dir, al, &ext, nb));
    if (d == RLX_BOOL)
      for (size_t i = 0; i < numel; i++) ((uint8_t *)ext)[i] = ((uint8_t *)ext)[i] != 0;
    *data = ext;
    *nbytes = nb;
    return RLX_OK;
  }
  /* in-file data: its size was checked against the dims, so this allocation is bounded by it */
  uint8_t *buf = al->alloc(al->ctx, nb);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory for %zu bytes", what, nb);
  rlx_status s = RLX_OK;
  if (t->has_raw_data) {
    memcpy(buf, t->raw_data.data, nb);
  } else {
    switch (d) {
    case RLX_F32:
    case RLX_C64: memcpy(buf, t->float_data, nb); break;
    case RLX_F64:
    case RLX_C128: memcpy(buf, t->double_data, nb); break;
    case RLX_I64: memcpy(buf, t->int64_data, nb); break;
    case RLX_U32:
      for (size_t i = 0; i < numel; i++) {
        uint32_t v = (uint32_t)t->uint64_data[i];
        memcpy(buf + 4 * i, &v, 4);
      }
      break;
    case RLX_I32: memcpy(buf, t->int32_data, nb); break;
    case RLX_I16:
    case RLX_F16:
    case RLX_BF16:
      for (size_t i = 0; i < numel; i++) {
        uint16_t v = (uint16_t)(uint32_t)t->int32_data[i];
        memcpy(buf + 2 * i, &v, 2);
      }
      break;
    default: /* I8, U8, BOOL */
      for (size_t i = 0; i < numel; i++) buf[i] = (uint8_t)(uint32_t)t->int32_data[i];
      break;
    }
  }
  if (s == RLX_OK && d == RLX_BOOL)
    for (size_t i = 0; i < numel; i++) buf[i] = buf[i] != 0;
  if (s != RLX_OK) {
    al->free(al->ctx, buf);
    return s;
  }
  *data = buf;
  *nbytes = nb;
  return RLX_OK;
}
