/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Tables expanded from ops.def and enums.def: names, families, arity, properties, enum names and
 * the attribute field descriptors that drive every generic attribute routine. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "ir_internal.h"

/* ---- enum name tables ---- */
#define NAME_X(S, T) #T,
#define ENUM_DESC(c, T, L)                                 \
  static const char *const enum_names_##c[] = {L(NAME_X)}; \
  const rlx_enum_desc rlx_enum_##c = {#T, enum_names_##c, (int32_t)(sizeof enum_names_##c / sizeof *enum_names_##c)};
RLX_ENUM_LIST(ENUM_DESC)
#undef ENUM_DESC
#undef NAME_X

int32_t rlx_enum_lookup(const rlx_enum_desc *e, const char *name, size_t len) {
  for (int32_t i = 0; i < e->count; i++)
    if (strlen(e->names[i]) == len && memcmp(e->names[i], name, len) == 0) return i;
  return -1;
}

/* ---- per-kind rows ---- */
#define P_LEAF RLX_PROP_LEAF
#define P_ELEM RLX_PROP_ELEM
#define P_BCAST RLX_PROP_BCAST
#define P_REDUCTION RLX_PROP_REDUCTION
#define P_VIEW RLX_PROP_VIEW
#define P_DIFF RLX_PROP_DIFF
#define P_SUBGRAPH RLX_PROP_SUBGRAPH
#define P_RANDOM RLX_PROP_RANDOM
#define P_BLAS RLX_PROP_BLAS
#define P_FUSED RLX_PROP_FUSED
#define P_LOWER RLX_PROP_LOWER
#define P_BACKWARD RLX_PROP_BACKWARD
#define P_FOLD RLX_PROP_FOLD
#define P_INPLACE RLX_PROP_INPLACE
#define VAR RLX_ARITY_VARIADIC

typedef struct op_row {
  const char *name;
  rlx_family family;
  uint32_t lo, hi, props;
} op_row;

static const op_row op_rows[RLX_OP_COUNT] = {
#define RLX_OP(N, FAM, LO, HI, PROPS) [RLX_OP_##N] = {#N, RLX_FAMILY_##FAM, LO, HI, PROPS},
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) RLX_OP(N, FAM, LO, HI, PROPS)
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
};

const char *rlx_op_name(rlx_op op) { return (unsigned)op < RLX_OP_COUNT ? op_rows[op].name : "?"; }
rlx_family rlx_op_family(rlx_op op) { return op_rows[op].family; }
uint32_t rlx_op_props(rlx_op op) { return (unsigned)op < RLX_OP_COUNT ? op_rows[op].props : 0; }
uint32_t rlx_op_min_inputs(rlx_op op) { return op_rows[op].lo; }
uint32_t rlx_op_max_inputs(rlx_op op) { return op_rows[op].hi; }

bool rlx_op_from_name(const char *s, size_t len, rlx_op *out) {
  for (int i = 0; i < RLX_OP_COUNT; i++) {
    if (strlen(op_rows[i].name) == len && memcmp(op_rows[i].name, s, len) == 0) {
      *out = (rlx_op)i;
      return true;
    }
  }
  return false;
}

const char *rlx_family_name(rlx_family f) {
  static const char *const names[] = {
#define RLX_X(E, n) #n,
      RLX_FAMILY_LIST(RLX_X)
#undef RLX_X
  };
  return (unsigned)f < RLX_FAMILY_COUNT ? names[f] : "?";
}

const char *rlx_prop_name(uint32_t bit) {
  static const char *const names[] = {
#define RLX_X(E, n, d) #n,
      RLX_PROP_LIST(RLX_X)
#undef RLX_X
  };
  return bit < RLX_PROP_BIT_COUNT ? names[bit] : "?";
}

/* ---- field descriptors ---- */
#define FT_i64 RLX_FT_I64
#define FT_u64 RLX_FT_U64
#define FT_f32 RLX_FT_F32
#define FT_bool RLX_FT_BOOL
#define FT_dtype RLX_FT_DTYPE
#define FT_oi64 RLX_FT_OI64
#define FT_of32 RLX_FT_OF32
#define FT_odtype RLX_FT_ODTYPE
#define FT_ilist RLX_FT_ILIST
#define FT_flist RLX_FT_FLIST
#define FT_str RLX_FT_STR
#define FT_bytes RLX_FT_BYTES
#define FT_graph RLX_FT_GRAPH
#define FT_ograph RLX_FT_OGRAPH
#define FT_chain RLX_FT_CHAIN

/* One accessor per op with attributes: a local typedef CUR binds F/E/OE to the op's struct. */
#define F(t, n, d) {#n, FT_##t, offsetof(CUR, n), NULL, (double)(d)},
#define E(e, n, d) {#n, RLX_FT_ENUM, offsetof(CUR, n), &rlx_enum_##e, (double)(d)},
#define OE(e, n) {#n, RLX_FT_OENUM, offsetof(CUR, n), &rlx_enum_##e, -1.0},
#define RLX_OP(N, FAM, LO, HI, PROPS)
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS)             \
  static const rlx_field *fields_of_##N(uint32_t *count) { \
    typedef rlx_attrs_##N CUR;                             \
    static const rlx_field f[] = {FIELDS};                 \
    *count = (uint32_t)(sizeof f / sizeof *f);             \
    return f;                                              \
  }
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
#undef F
#undef E
#undef OE

typedef const rlx_field *(*fields_fn)(uint32_t *count);
static const struct {
  fields_fn fields;
  size_t size;
} attr_rows[RLX_OP_COUNT] = {
#define RLX_OP(N, FAM, LO, HI, PROPS) [RLX_OP_##N] = {NULL, 0},
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) [RLX_OP_##N] = {fields_of_##N, sizeof(rlx_attrs_##N)},
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
};

const rlx_field *rlx_op_fields(rlx_op op, uint32_t *count) {
  if ((unsigned)op >= RLX_OP_COUNT || !attr_rows[op].fields) {
    *count = 0;
    return NULL;
  }
  return attr_rows[op].fields(count);
}

size_t rlx_op_attrs_size(rlx_op op) { return (unsigned)op < RLX_OP_COUNT ? attr_rows[op].size : 0; }

void rlx_attrs_init(rlx_op op, void *attrs) {
  uint32_t n;
  const rlx_field *f = rlx_op_fields(op, &n);
  memset(attrs, 0, rlx_op_attrs_size(op));
  for (uint32_t i = 0; i < n; i++) {
    char *p = (char *)attrs + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_I64: *(int64_t *)p = (int64_t)f[i].def; break;
    case RLX_FT_U64: *(uint64_t *)p = (uint64_t)f[i].def; break;
    case RLX_FT_F32: *(float *)p = (float)f[i].def; break;
    case RLX_FT_BOOL: *(bool *)p = f[i].def != 0; break;
    case RLX_FT_DTYPE:
    case RLX_FT_ENUM:
    case RLX_FT_OENUM: *(int32_t *)p = (int32_t)f[i].def; break;
    default: break; /* optionals, lists, strings, bytes, graphs, chains: zero = empty/none */
    }
  }
}

static bool bits_equal_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

bool rlx_attrs_equal(rlx_op op, const void *a, const void *b) {
  uint32_t n;
  const rlx_field *f = rlx_op_fields(op, &n);
  for (uint32_t i = 0; i < n; i++) {
    const char *pa = (const char *)a + f[i].offset, *pb = (const char *)b + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_I64:
      if (*(const int64_t *)pa != *(const int64_t *)pb) return false;
      break;
    case RLX_FT_U64:
      if (*(const uint64_t *)pa != *(const uint64_t *)pb) return false;
      break;
    case RLX_FT_F32:
      if (!bits_equal_f32(*(const float *)pa, *(const float *)pb)) return false;
      break;
    case RLX_FT_BOOL:
      if (*(const bool *)pa != *(const bool *)pb) return false;
      break;
    case RLX_FT_DTYPE:
    case RLX_FT_ENUM:
    case RLX_FT_OENUM:
      if (*(const int32_t *)pa != *(const int32_t *)pb) return false;
      break;
    case RLX_FT_OI64: {
      const rlx_oi64 *x = (const rlx_oi64 *)pa, *y = (const rlx_oi64 *)pb;
      if (x->has != y->has || (x->has && x->v != y->v)) return false;
      break;
    }
    case RLX_FT_OF32: {
      const rlx_of32 *x = (const rlx_of32 *)pa, *y = (const rlx_of32 *)pb;
      if (x->has != y->has || (x->has && !bits_equal_f32(x->v, y->v))) return false;
      break;
    }
    case RLX_FT_ODTYPE: {
      const rlx_odtype *x = (const rlx_odtype *)pa, *y = (const rlx_odtype *)pb;
      if (x->has != y->has || (x->has && x->v != y->v)) return false;
      break;
    }
    case RLX_FT_ILIST: {
      const rlx_ilist *x = (const rlx_ilist *)pa, *y = (const rlx_ilist *)pb;
      if (x->n != y->n || (x->n && memcmp(x->v, y->v, x->n * sizeof *x->v))) return false;
      break;
    }
    case RLX_FT_FLIST: {
      const rlx_flist *x = (const rlx_flist *)pa, *y = (const rlx_flist *)pb;
      if (x->n != y->n || (x->n && memcmp(x->v, y->v, x->n * sizeof *x->v))) return false;
      break;
    }
    case RLX_FT_STR: {
      const char *x = *(const char *const *)pa, *y = *(const char *const *)pb;
      if (!x || !y) {
        if (x != y && ((x && *x) || (y && *y))) return false;
      } else if (strcmp(x, y))
        return false;
      break;
    }
    case RLX_FT_BYTES: {
      const rlx_bytes *x = (const rlx_bytes *)pa, *y = (const rlx_bytes *)pb;
      if (x->n != y->n || (x->n && memcmp(x->p, y->p, x->n))) return false;
      break;
    }
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: {
      const rlx_graph *x = *(rlx_graph *const *)pa, *y = *(rlx_graph *const *)pb;
      if (!x || !y) {
        if (x != y) return false;
      } else if (!rlx_graph_equal(x, y))
        return false;
      break;
    }
    case RLX_FT_CHAIN: {
      const rlx_chain *x = (const rlx_chain *)pa, *y = (const rlx_chain *)pb;
      if (x->n != y->n) return false;
      for (uint32_t k = 0; k < x->n; k++) {
        const rlx_chain_step *s = &x->steps[k], *t = &y->steps[k];
        if (s->kind != t->kind || s->sub != t->sub || s->a.is_step != t->a.is_step || s->a.index != t->a.index ||
            s->b.is_step != t->b.is_step || s->b.index != t->b.index || s->c.is_step != t->c.is_step ||
            s->c.index != t->c.index)
          return false;
      }
      break;
    }
    }
  }
  return true;
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull; /* FNV-1a */
  return h;
}

uint64_t rlx_attrs_hash(rlx_op op, const void *a) {
  uint32_t n;
  const rlx_field *f = rlx_op_fields(op, &n);
  uint64_t h = mix(1469598103934665603ull, &op, sizeof op);
  for (uint32_t i = 0; i < n; i++) {
    const char *p = (const char *)a + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_I64:
    case RLX_FT_U64: h = mix(h, p, 8); break;
    case RLX_FT_F32: h = mix(h, p, 4); break;
    case RLX_FT_BOOL: h = mix(h, p, 1); break;
    case RLX_FT_DTYPE:
    case RLX_FT_ENUM:
    case RLX_FT_OENUM: h = mix(h, p, 4); break;
    case RLX_FT_OI64: {
      const rlx_oi64 *x = (const rlx_oi64 *)p;
      h = mix(h, &x->has, 1);
      if (x->has) h = mix(h, &x->v, 8);
      break;
    }
    case RLX_FT_OF32: {
      const rlx_of32 *x = (const rlx_of32 *)p;
      h = mix(h, &x->has, 1);
      if (x->has) h = mix(h, &x->v, 4);
      break;
    }
    case RLX_FT_ODTYPE: {
      const rlx_odtype *x = (const rlx_odtype *)p;
      h = mix(h, &x->has, 1);
      if (x->has) h = mix(h, &x->v, 4);
      break;
    }
    case RLX_FT_ILIST: {
      const rlx_ilist *x = (const rlx_ilist *)p;
      h = mix(h, &x->n, 4);
      if (x->n) h = mix(h, x->v, x->n * 8);
      break;
    }
    case RLX_FT_FLIST: {
      const rlx_flist *x = (const rlx_flist *)p;
      h = mix(h, &x->n, 4);
      if (x->n) h = mix(h, x->v, x->n * 4);
      break;
    }
    case RLX_FT_STR: {
      const char *x = *(const char *const *)p;
      if (x) h = mix(h, x, strlen(x));
      break;
    }
    case RLX_FT_BYTES: {
      const rlx_bytes *x = (const rlx_bytes *)p;
      h = mix(h, &x->n, sizeof x->n);
      if (x->n) h = mix(h, x->p, x->n);
      break;
    }
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: {
      const rlx_graph *x = *(rlx_graph *const *)p;
      uint32_t c = x ? rlx_graph_node_count(x) : 0;
      h = mix(h, &c, 4);
      break;
    }
    case RLX_FT_CHAIN: {
      const rlx_chain *x = (const rlx_chain *)p;
      h = mix(h, &x->n, 4);
      for (uint32_t k = 0; k < x->n; k++) {
        const rlx_chain_step *s = &x->steps[k];
        int64_t v[8] = {s->kind, s->sub, s->a.is_step, s->a.index, s->b.is_step, s->b.index, s->c.is_step, s->c.index};
        h = mix(h, v, sizeof v);
      }
      break;
    }
    }
  }
  return h;
}
