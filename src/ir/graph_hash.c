/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Structural hash of a graph (docs/compile.md): 128 bits over everything rlx_graph_equal
 * compares — the graph's name, every node's op, operands, shape and dtype, name and attributes
 * (lists, strings, constant bytes, and bodies hashed the same way, recursively) — and the
 * outputs. Two lanes with different multipliers; bytes are taken 8 at a time. */
#include <string.h>

#include "ir_internal.h"

typedef struct hstate {
  uint64_t a, b;
} hstate;

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline void put64(hstate *h, uint64_t w) {
  h->a = rotl((h->a ^ w) * 0x9e3779b97f4a7c15ull, 31);
  h->b = rotl((h->b + w) * 0xc2b2ae3d27d4eb4full, 27) ^ (h->b >> 17);
}

static void put_bytes(hstate *h, const void *p, size_t n) {
  const unsigned char *c = p;
  put64(h, (uint64_t)n);
  for (; n >= 8; n -= 8, c += 8) {
    uint64_t w;
    memcpy(&w, c, 8);
    put64(h, w);
  }
  if (n) {
    uint64_t w = 0;
    memcpy(&w, c, n);
    put64(h, w ^ 0xff00000000000000ull);
  }
}

static void put_str(hstate *h, const char *s) {
  if (!s) {
    put64(h, 0x5a5a5a5a5a5a5a5aull); /* NULL differs from "" */
    return;
  }
  put_bytes(h, s, strlen(s));
}

static void put_graph(hstate *h, const rlx_graph *g, unsigned depth);

static void put_attrs(hstate *h, rlx_op op, const rlx_attrs *at, unsigned depth) {
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(op, &nf);
  for (uint32_t i = 0; i < nf; i++) {
    const char *p = (const char *)at + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_I64:
    case RLX_FT_U64: {
      uint64_t v;
      memcpy(&v, p, 8);
      put64(h, v);
      break;
    }
    case RLX_FT_F32: {
      uint32_t v;
      memcpy(&v, p, 4);
      put64(h, v);
      break;
    }
    case RLX_FT_BOOL: put64(h, *(const bool *)p); break;
    case RLX_FT_DTYPE:
    case RLX_FT_ENUM:
    case RLX_FT_OENUM: {
      int32_t v;
      memcpy(&v, p, 4);
      put64(h, (uint64_t)(int64_t)v);
      break;
    }
    case RLX_FT_OI64: {
      const rlx_oi64 *x = (const rlx_oi64 *)p;
      put64(h, x->has);
      if (x->has) put64(h, (uint64_t)x->v);
      break;
    }
    case RLX_FT_OF32: {
      const rlx_of32 *x = (const rlx_of32 *)p;
      put64(h, x->has);
      if (x->has) {
        uint32_t v;
        memcpy(&v, &x->v, 4);
        put64(h, v);
      }
      break;
    }
    case RLX_FT_ODTYPE: {
      const rlx_odtype *x = (const rlx_odtype *)p;
      put64(h, x->has);
      if (x->has) put64(h, (uint64_t)x->v);
      break;
    }
    case RLX_FT_ILIST: {
      const rlx_ilist *x = (const rlx_ilist *)p;
      put_bytes(h, x->v, x->n * sizeof *x->v);
      break;
    }
    case RLX_FT_FLIST: {
      const rlx_flist *x = (const rlx_flist *)p;
      put_bytes(h, x->v, x->n * sizeof *x->v);
      break;
    }
    case RLX_FT_STR: {
      const char *x = *(const char *const *)p;
      put_str(h, x && *x ? x : NULL); /* equality treats NULL and "" alike */
      break;
    }
    case RLX_FT_BYTES: {
      const rlx_bytes *x = (const rlx_bytes *)p;
      put_bytes(h, x->p, x->n);
      break;
    }
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: {
      const rlx_graph *x = *(rlx_graph *const *)p;
      if (!x)
        put64(h, 0x4e4f4e45ull);
      else
        put_graph(h, x, depth + 1);
      break;
    }
    case RLX_FT_CHAIN: {
      const rlx_chain *x = (const rlx_chain *)p;
      put64(h, x->n);
      for (uint32_t k = 0; k < x->n; k++) {
        const rlx_chain_step *s = &x->steps[k];
        int64_t v[8] = {s->kind, s->sub, s->a.is_step, s->a.index, s->b.is_step, s->b.index, s->c.is_step, s->c.index};
        for (int j = 0; j < 8; j++) put64(h, (uint64_t)v[j]);
      }
      break;
    }
    }
  }
}

static void put_graph(hstate *h, const rlx_graph *g, unsigned depth) {
  put64(h, 0x6772617068ull + depth); /* "graph" */
  if (depth > 256) return;           /* bodies nest far less deeply; the verifier rejects more */
  put_str(h, g->name);
  put64(h, g->n_nodes);
  for (rlx_id i = 0; i < g->n_nodes; i++) {
    const rlx_node *n = &g->nodes[i];
    put64(h, ((uint64_t)n->op << 32) | n->n_inputs);
    for (uint32_t k = 0; k < n->n_inputs; k++) put64(h, n->inputs[k]);
    put64(h, ((uint64_t)n->shape.dtype << 8) | n->shape.rank);
    for (uint32_t k = 0; k < n->shape.rank && k < RLX_MAX_RANK; k++) put64(h, (uint64_t)n->shape.dims[k]);
    put_str(h, n->name);
    put_attrs(h, n->op, &n->attrs, depth);
  }
  put64(h, g->n_outputs);
  for (uint32_t k = 0; k < g->n_outputs; k++) put64(h, g->outputs[k]);
}

void rlx_graph_hash(const rlx_graph *g, uint64_t out[2]) {
  hstate h = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull};
  if (g) put_graph(&h, g, 0);
  /* finalize: fold the lanes into each other */
  uint64_t a = h.a ^ rotl(h.b, 23), b = h.b ^ rotl(h.a, 41);
  a = (a ^ (a >> 33)) * 0xff51afd7ed558ccdull;
  b = (b ^ (b >> 29)) * 0xc4ceb9fe1a85ec53ull;
  out[0] = a ^ (a >> 33);
  out[1] = b ^ (b >> 31);
}
