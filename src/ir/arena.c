/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Bump allocator in blocks taken from a caller allocator; released in one call. */
#include <stdint.h>
#include <string.h>

#include "ir_internal.h"

struct rlx_arena_block {
  rlx_arena_block *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

#define RLX_ARENA_BLOCK 16384

void *rlx_arena_alloc(rlx_arena *a, size_t size, size_t align) {
  if (align == 0) align = 1;
  rlx_arena_block *b = a->head;
  if (b) {
    size_t off = (b->used + align - 1) & ~(align - 1);
    if (off <= b->cap && size <= b->cap - off) {
      b->used = off + size;
      return b->data + off;
    }
  }
  size_t cap = RLX_ARENA_BLOCK, need;
  if (!rlx_add_size(size, align, &need)) return NULL;
  if (need > cap) cap = need;
  size_t total;
  if (!rlx_add_size(sizeof(rlx_arena_block), cap, &total)) return NULL;
  rlx_arena_block *nb = a->al->alloc(a->al->ctx, total);
  if (!nb) return NULL;
  nb->cap = cap;
  nb->used = 0;
  /* Big blocks go behind the head so the head's free space stays usable. */
  if (b && need > RLX_ARENA_BLOCK / 2) {
    nb->next = b->next;
    b->next = nb;
  } else {
    nb->next = b;
    a->head = nb;
  }
  size_t off = 0; /* data is 16-aligned */
  if (align > 16) off = (size_t)((align - ((uintptr_t)nb->data & (align - 1))) & (align - 1));
  nb->used = off + size;
  return nb->data + off;
}

char *rlx_arena_strndup(rlx_arena *a, const char *s, size_t n) {
  char *p = rlx_arena_alloc(a, n + 1, 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void rlx_arena_release(rlx_arena *a) {
  rlx_arena_block *b = a->head;
  while (b) {
    rlx_arena_block *n = b->next;
    a->al->free(a->al->ctx, b);
    b = n;
  }
  a->head = NULL;
}
