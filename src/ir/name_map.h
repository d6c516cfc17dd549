/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A small hash map from borrowed NUL-terminated names to uint32 values (open addressing, linear
 * probing, load factor <= 1/2). The map never copies a name: each must outlive the map. Used for
 * the by-name lookups of the compile pipeline and the executable (params, inputs). */
#ifndef RLX_NAME_MAP_H
#define RLX_NAME_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/graph.h"

#define RLX_NAME_MAP_NONE UINT32_MAX

typedef struct rlx_name_map_slot {
  const char *key; /* NULL = empty */
  uint64_t hash;
  uint32_t value;
} rlx_name_map_slot;

typedef struct rlx_name_map {
  rlx_name_map_slot *slots;
  uint32_t cap, used;
} rlx_name_map;

uint64_t rlx_name_hash(const char *s);
/* Inserts key -> value unless the key is present; *existing (may be NULL) gets the value already
 * there, or RLX_NAME_MAP_NONE when this call inserted. False only when out of memory. */
bool rlx_name_map_put(rlx_name_map *m, const rlx_allocator *al, const char *key, uint32_t value, uint32_t *existing);
/* The value of key, or RLX_NAME_MAP_NONE. */
uint32_t rlx_name_map_get(const rlx_name_map *m, const char *key);
void rlx_name_map_free(rlx_name_map *m, const rlx_allocator *al);

#endif
