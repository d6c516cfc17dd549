/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Serialization of graphs: the canonical text format (docs/ir-format.md), the binary format and
 * a Graphviz rendering. Buffers returned through `out` are allocated with `al` (NULL = default)
 * and released with its `free`. */
#ifndef RLX_FORMAT_H
#define RLX_FORMAT_H

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Canonical text: print(parse(t)) == t for every canonical t. */
rlx_status rlx_text_print(const rlx_graph *g, const rlx_allocator *al, char **out, size_t *len);
/* Parses text into a new graph. Errors carry "line:col: expected ...". The parsed graph is
 * verified; `source_name` (may be NULL) prefixes error locations. */
rlx_status rlx_text_parse(const char *text, size_t len, const char *source_name, const rlx_allocator *al,
                          rlx_graph **out);

/* Binary: magic "RLXB", u32 version, then length-checked little-endian records. */
#define RLX_BINARY_MAGIC "RLXB"
#define RLX_BINARY_VERSION 1u
rlx_status rlx_binary_write(const rlx_graph *g, const rlx_allocator *al, uint8_t **out, size_t *len);
rlx_status rlx_binary_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_graph **out);

/* Graphviz dot text of the graph (bodies as clusters). */
rlx_status rlx_graph_to_dot(const rlx_graph *g, const rlx_allocator *al, char **out, size_t *len);

/* Reads a whole file (text or binary, detected by the magic) into a verified graph. */
rlx_status rlx_load_graph_file(const char *path, const rlx_allocator *al, rlx_graph **out);

#ifdef __cplusplus
}
#endif
#endif
