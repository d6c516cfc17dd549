/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "name_map.h"

#include <string.h>

uint64_t rlx_name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h ^ (h >> 31);
}

static bool grow(rlx_name_map *m, const rlx_allocator *al) {
  uint32_t cap = m->cap ? 2 * m->cap : 16;
  if (cap < m->cap) return false;
  rlx_name_map_slot *s = al->alloc(al->ctx, (size_t)cap * sizeof *s);
  if (!s) return false;
  memset(s, 0, (size_t)cap * sizeof *s);
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].key) continue;
    uint32_t j = (uint32_t)m->slots[i].hash & (cap - 1);
    while (s[j].key) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  al->free(al->ctx, m->slots);
  m->slots = s;
  m->cap = cap;
  return true;
}

bool rlx_name_map_put(rlx_name_map *m, const rlx_allocator *al, const char *key, uint32_t value, uint32_t *existing) {
  if (existing) *existing = RLX_NAME_MAP_NONE;
  if (2 * ((uint64_t)m->used + 1) > m->cap && !grow(m, al)) return false;
  uint64_t h = rlx_name_hash(key);
  uint32_t mask = m->cap - 1;
  for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
    rlx_name_map_slot *s = &m->slots[i];
    if (!s->key) {
      *s = (rlx_name_map_slot){.key = key, .hash = h, .value = value};
      m->used++;
      return true;
    }
    if (s->hash == h && strcmp(s->key, key) == 0) {
      if (existing) *existing = s->value;
      return true;
    }
  }
}

uint32_t rlx_name_map_get(const rlx_name_map *m, const char *key) {
  if (!m->cap) return RLX_NAME_MAP_NONE;
  uint64_t h = rlx_name_hash(key);
  uint32_t mask = m->cap - 1;
  for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
    const rlx_name_map_slot *s = &m->slots[i];
    if (!s->key) return RLX_NAME_MAP_NONE;
    if (s->hash == h && strcmp(s->key, key) == 0) return s->value;
  }
}

void rlx_name_map_free(rlx_name_map *m, const rlx_allocator *al) {
  al->free(al->ctx, m->slots);
  m->slots = NULL;
  m->cap = m->used = 0;
}
