/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Whole-file reads and writes shared by the loaders and writers (npy, safetensors, the CLI). */
#ifndef RLX_IO_FILE_IO_H
#define RLX_IO_FILE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/graph.h"
#include "rlx/status.h"

/* Reads the whole regular file `path` (at most `max` bytes, else RLX_ERR_FORMAT naming both
 * sizes) into a buffer from `al` (NULL: malloc); *out is never NULL on success. Errors name the
 * path. */
rlx_status rlx_file_read(const char *path, size_t max, const rlx_allocator *al, uint8_t **out, size_t *len);

/* Writes `len` bytes to `path` through a temporary file in the same folder that is renamed over
 * `path` only once everything is on disk: a failed write leaves an existing file as it was and
 * no partial file behind. A symlink or a non-regular file (/dev/null, a FIFO) is written in
 * place instead. Errors name the path. */
rlx_status rlx_file_write(const char *path, const void *data, size_t len);

#endif
