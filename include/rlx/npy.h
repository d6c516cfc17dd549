/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian, C order, one array.
 * dtype codes: f2 f4 f8 i1 i2 i4 i8 u1 u4 b1 c8 c16 <-> f16 f32 f64 i8 i16 i32 i64 u8 u32 bool
 * c64 c128. bf16 has no NumPy code and is rejected. */
#ifndef RLX_NPY_H
#define RLX_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest header (the dict text) accepted when reading. */
#define RLX_NPY_MAX_HEADER (1u << 20)

/* The descr string NumPy writes for `t` ("<f4", "|b1"), or NULL when there is none (bf16). */
const char *rlx_npy_descr(rlx_dtype t);

/* Parses a complete .npy image. On success out->shape holds dtype and dims and out->data a copy
 * of the elements allocated with `al` (NULL = default allocator; release with
 * rlx_npy_tensor_free). Malformed input gives RLX_ERR_FORMAT naming the field and byte offset. */
rlx_status rlx_npy_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_tensor *out);

/* Serializes `t` (static shape) as version 1.0 (2.0 if the header would not fit); the buffer is
 * allocated with `al`. */
rlx_status rlx_npy_write(const rlx_tensor *t, const rlx_allocator *al, uint8_t **out, size_t *len);

/* File variants of the above; errors name the path. */
rlx_status rlx_npy_load(const char *path, const rlx_allocator *al, rlx_tensor *out);
rlx_status rlx_npy_save(const char *path, const rlx_tensor *t);

/* Frees the data of a tensor returned by rlx_npy_read/rlx_npy_load (same allocator). */
void rlx_npy_tensor_free(rlx_tensor *t, const rlx_allocator *al);

#ifdef __cplusplus
}
#endif
#endif
