/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* safetensors files: an 8-byte little-endian header length N, N bytes of JSON header (UTF-8, one
 * object), then the tensor bytes. The header maps each tensor name to
 *   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * (offsets relative to the start of the data section) plus an optional "__metadata__" object of
 * string values.
 *
 * The reader is strict (docs/train.md lists every rule): header length 1..100 MB within the file,
 * valid UTF-8 JSON (nesting depth bounded) that is one object, at most RLX_SAFETENSORS_MAX_TENSORS
 * entries, unique names of at most RLX_SAFETENSORS_MAX_NAME bytes (tensor names and metadata
 * keys; as the other formats), string-only metadata, exactly the three fields per tensor, a known dtype,
 * a shape whose byte size does not overflow and equals the entry's span, and spans that tile the
 * data section exactly (sorted by offset: first begin 0, no gap, no overlap, last end = data
 * length, so no trailing bytes). Violations give RLX_ERR_FORMAT naming the tensor or field;
 * dtypes that safetensors knows but RLX lacks (U16, U64, F8_*) give RLX_ERR_UNSUPPORTED.
 *
 * dtype names: BOOL U8 I8 I16 I32 I64 U32 F16 BF16 F32 F64 C64 (RLX's bool u8 i8 i16 i32 i64 u32
 * f16 bf16 f32 f64 c64). */
#ifndef RLX_SAFETENSORS_H
#define RLX_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_SAFETENSORS_MAX_HEADER ((uint64_t)100 * 1000 * 1000)
#define RLX_SAFETENSORS_MAX_TENSORS 65536u
#define RLX_SAFETENSORS_MAX_DEPTH 16u
#define RLX_SAFETENSORS_MAX_NAME 4096u /* bytes of a tensor name or metadata key (UTF-8) */

typedef struct rlx_safetensors_kv {
  const char *key;
  const char *value;
} rlx_safetensors_kv;

/* A parsed file: tensors in data-offset order, each with its own 64-byte-aligned copy of the data,
 * and the metadata pairs in header order. Everything is owned by the object. */
typedef struct rlx_safetensors {
  rlx_named_tensor *tensors;
  uint32_t n_tensors;
  rlx_safetensors_kv *metadata;
  uint32_t n_metadata;
  void *storage_; /* private */
} rlx_safetensors;

/* Parses a complete file image. *out is freed with rlx_safetensors_free. */
rlx_status rlx_safetensors_read(const uint8_t *data, size_t len, rlx_safetensors **out);
/* Reads and parses a file; errors name the path. */
rlx_status rlx_safetensors_load(const char *path, rlx_safetensors **out);
void rlx_safetensors_free(rlx_safetensors *f); /* NULL is a no-op */

/* The tensor named `name`, or NULL. */
const rlx_named_tensor *rlx_safetensors_find(const rlx_safetensors *f, const char *name);
/* The metadata value of `key`, or NULL. */
const char *rlx_safetensors_meta(const rlx_safetensors *f, const char *key);

/* Serializes tensors (static shapes, supported dtypes, unique non-empty names other than
 * "__metadata__") in the given order, contiguous, with optional metadata; the header is padded
 * with spaces so the data section starts at a multiple of 8. *out is malloc'ed. */
rlx_status rlx_safetensors_write(const rlx_named_tensor *tensors, uint32_t n, const rlx_safetensors_kv *metadata,
                                 uint32_t n_metadata, uint8_t **out, size_t *len);
rlx_status rlx_safetensors_save(const char *path, const rlx_named_tensor *tensors, uint32_t n,
                                const rlx_safetensors_kv *metadata, uint32_t n_metadata);

#ifdef __cplusplus
}
#endif
#endif
