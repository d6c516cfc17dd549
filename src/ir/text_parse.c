/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Parser of the text format (grammar in docs/ir-format.md). Recursive descent over the scanner
 * of text_lex.c; recursion happens only for body graphs and is capped at RLX_FORMAT_MAX_DEPTH.
 * Nodes are appended with rlx_graph_add_unchecked (declared shapes) and the finished graph is
 * verified. Temporary values (operand lists, attribute lists, strings) live in the arena of the
 * graph being built, so every error path is cleaned up by freeing the top graph. */
#include <stdio.h>
#include <string.h>

#include "format_internal.h"

/* ---- text id -> node id map (open addressing; ids need not be dense) ---- */

typedef struct id_slot {
  uint32_t key;
  uint32_t val_plus1; /* 0 = empty */
} id_slot;

typedef struct id_map {
  const rlx_allocator *al;
  id_slot *slots;
  uint32_t cap, used;
} id_map;

static uint32_t id_hash(uint32_t k) {
  k ^= k >> 16;
  k *= 0x7feb352du;
  k ^= k >> 15;
  k *= 0x846ca68bu;
  k ^= k >> 16;
  return k;
}

static id_slot *id_find(const id_map *m, uint32_t key) {
  if (!m->cap) return NULL;
  for (uint32_t i = id_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    id_slot *s = &m->slots[i];
    if (!s->val_plus1 || s->key == key) return s;
  }
}

static bool id_grow(id_map *m) {
  uint32_t cap = m->cap ? m->cap * 2 : 64;
  if (cap < m->cap) return false;
  size_t bytes;
  if (!rlx_mul_size(cap, sizeof(id_slot), &bytes)) return false;
  id_slot *ns = m->al->alloc(m->al->ctx, bytes);
  if (!ns) return false;
  memset(ns, 0, bytes);
  id_map nm = {m->al, ns, cap, 0};
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].val_plus1) continue;
    *id_find(&nm, m->slots[i].key) = m->slots[i];
    nm.used++;
  }
  m->al->free(m->al->ctx, m->slots);
  *m = nm;
  return true;
}

/* Looks up a text id; RLX_NO_ID when undefined. */
static rlx_id id_get(const id_map *m, uint32_t key) {
  const id_slot *s = id_find(m, key);
  return s && s->val_plus1 ? s->val_plus1 - 1 : RLX_NO_ID;
}

static bool id_put(id_map *m, uint32_t key, rlx_id val) {
  if ((m->used + 1) * 2 > m->cap && !id_grow(m)) return false;
  id_slot *s = id_find(m, key);
  s->key = key;
  s->val_plus1 = val + 1;
  m->used++;
  return true;
}

static void id_free(id_map *m) {
  m->al->free(m->al->ctx, m->slots);
  m->slots = NULL;
  m->cap = m->used = 0;
}

/* ---- parser state ---- */

typedef struct parser {
  rlx_text_scan sc;
  const rlx_allocator *al;
} parser;

static rlx_status parse_graph(parser *P, rlx_graph *parent, unsigned depth, rlx_graph **out);

/* Copies `n` bytes of scratch data into g's arena (NULL for n == 0). */
static rlx_status to_arena(parser *P, rlx_graph *g, const void *data, size_t n, size_t align, void **out) {
  *out = NULL;
  if (!n) return RLX_OK;
  void *p = rlx_arena_alloc(&g->arena, n, align);
  if (!p) return rlx_scan_oom(&P->sc);
  memcpy(p, data, n);
  *out = p;
  return RLX_OK;
}

/* "a value of Activation (Gelu, GeluApprox, ...)" for error messages. */
static const char *enum_what(const rlx_enum_desc *e, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "a value of %s (", e->type_name);
  for (int32_t i = 0; i < e->count && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", e->names[i]);
  if (k < cap) snprintf(buf + k, cap - k, ")");
  return buf;
}

static rlx_status parse_enum(parser *P, const rlx_enum_desc *e, int32_t *out) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  const char *w;
  size_t n;
  int32_t v = -1;
  if (rlx_scan_ident(s, &w, &n)) v = rlx_enum_lookup(e, w, n);
  if (v < 0) {
    char what[1024];
    return rlx_scan_expected(s, at, enum_what(e, what, sizeof what));
  }
  *out = v;
  return RLX_OK;
}

static rlx_status parse_dtype(parser *P, int32_t *out) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  const char *w;
  size_t n;
  rlx_dtype t;
  if (!rlx_scan_ident(s, &w, &n) || !rlx_dtype_from_name(w, n, &t))
    return rlx_scan_expected(s, at, "a dtype (f32, f16, bf16, f64, i8, i16, i32, i64, u8, u32, bool, c64, c128)");
  *out = (int32_t)t;
  return RLX_OK;
}

static rlx_status parse_bool(parser *P, bool *out) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  if (rlx_scan_at_word(s, "true"))
    *out = true;
  else if (rlx_scan_at_word(s, "false"))
    *out = false;
  else
    return rlx_scan_expected(s, at, "true or false");
  const char *w;
  size_t n;
  rlx_scan_ident(s, &w, &n);
  return RLX_OK;
}

/* Consumes the word `none` if it is next. */
static bool accept_none(parser *P) {
  if (!rlx_scan_at_word(&P->sc, "none")) return false;
  P->sc.pos += 4;
  return true;
}

/* '[' (item (',' item)*)? ']' with items appended to scratch by `item`. */
static rlx_status parse_list(parser *P, size_t item_size, rlx_status (*item)(parser *P, void *out), uint32_t *count) {
  rlx_text_scan *s = &P->sc;
  RLX_TRY(rlx_scan_expect(s, '[', "'['"));
  s->scratch.len = 0;
  uint32_t n = 0;
  if (!rlx_scan_accept(s, ']')) {
    for (;;) {
      char v[8];
      RLX_TRY(item(P, v));
      if (n == UINT32_MAX) return rlx_scan_expected(s, s->pos, "']' (a list holds at most 2^32-1 items)");
      if (!rlx_sb_put(&s->scratch, v, item_size)) return rlx_scan_oom(s);
      n++;
      if (rlx_scan_accept(s, ']')) break;
      RLX_TRY(rlx_scan_expect(s, ',', "',' or ']'"));
    }
  }
  *count = n;
  return RLX_OK;
}

static rlx_status list_i64_item(parser *P, void *out) {
  int64_t v;
  RLX_TRY(rlx_scan_i64(&P->sc, &v, "a 64-bit integer"));
  memcpy(out, &v, sizeof v);
  return RLX_OK;
}

static rlx_status list_f32_item(parser *P, void *out) {
  float v;
  RLX_TRY(rlx_scan_f32(&P->sc, &v));
  memcpy(out, &v, sizeof v);
  return RLX_OK;
}

/* ---- ElementwiseRegion chains ---- */

/* inN or stepN. */
static rlx_status parse_chain_operand(parser *P, rlx_chain_operand *o) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  static const char *const what = "a chain operand (inN = region operand N, stepN = earlier step N)";
  size_t pre;
  if (s->len - at >= 4 && memcmp(s->src + at, "step", 4) == 0)
    pre = 4, o->is_step = 1;
  else if (s->len - at >= 2 && memcmp(s->src + at, "in", 2) == 0)
    pre = 2, o->is_step = 0;
  else
    return rlx_scan_expected(s, at, what);
  s->pos = at + pre;
  if (s->pos >= s->len || s->src[s->pos] < '0' || s->src[s->pos] > '9') {
    s->pos = at;
    return rlx_scan_expected(s, at, what);
  }
  return rlx_scan_u32(s, &o->index, what);
}

static rlx_status parse_chain_step(parser *P, rlx_chain_step *st) {
  rlx_text_scan *s = &P->sc;
  memset(st, 0, sizeof *st);
  RLX_TRY(parse_enum(P, &rlx_enum_chain_step, &st->kind));
  RLX_TRY(rlx_scan_expect(s, '(', "'('"));
  unsigned arity = 1;
  switch (st->kind) {
  case RLX_CHAIN_STEP_ACTIVATION: RLX_TRY(parse_enum(P, &rlx_enum_act, &st->sub)); break;
  case RLX_CHAIN_STEP_CAST: RLX_TRY(parse_dtype(P, &st->sub)); break;
  case RLX_CHAIN_STEP_BINARY:
    RLX_TRY(parse_enum(P, &rlx_enum_binop, &st->sub));
    arity = 2;
    break;
  case RLX_CHAIN_STEP_COMPARE:
    RLX_TRY(parse_enum(P, &rlx_enum_cmp, &st->sub));
    arity = 2;
    break;
  default: arity = 3; break; /* Where: no sub-op */
  }
  rlx_chain_operand *ops[3] = {&st->a, &st->b, &st->c};
  for (unsigned k = 0; k < arity; k++) {
    if (k || st->kind != RLX_CHAIN_STEP_WHERE) RLX_TRY(rlx_scan_expect(s, ',', "','"));
    RLX_TRY(parse_chain_operand(P, ops[k]));
  }
  return rlx_scan_expect(s, ')', "')'");
}

static rlx_status parse_chain(parser *P, rlx_graph *g, rlx_chain *ch) {
  rlx_text_scan *s = &P->sc;
  RLX_TRY(rlx_scan_expect(s, '[', "'[' to start a chain"));
  s->scratch.len = 0;
  uint32_t n = 0;
  if (!rlx_scan_accept(s, ']')) {
    for (;;) {
      rlx_chain_step st;
      RLX_TRY(parse_chain_step(P, &st));
      if (n == UINT32_MAX) return rlx_scan_expected(s, s->pos, "']'");
      if (!rlx_sb_put(&s->scratch, &st, sizeof st)) return rlx_scan_oom(s);
      n++;
      if (rlx_scan_accept(s, ']')) break;
      RLX_TRY(rlx_scan_expect(s, ',', "',' or ']'"));
    }
  }
  void *p;
  RLX_TRY(to_arena(P, g, s->scratch.p, (size_t)n * sizeof(rlx_chain_step), 8, &p));
  ch->steps = p;
  ch->n = n;
  return RLX_OK;
}

/* ---- attribute values ---- */

static rlx_status parse_body(parser *P, rlx_graph *g, unsigned depth, rlx_graph **out) {
  rlx_text_scan *s = &P->sc;
  if (!rlx_scan_at_word(s, "graph")) return rlx_scan_expected(s, s->pos, "a body graph (graph @name { ... })");
  return parse_graph(P, g, depth + 1, out);
}

static rlx_status parse_value(parser *P, rlx_graph *g, unsigned depth, const rlx_field *f, void *p) {
  rlx_text_scan *s = &P->sc;
  switch (f->type) {
  case RLX_FT_I64: return rlx_scan_i64(s, p, "a 64-bit integer");
  case RLX_FT_U64: return rlx_scan_u64(s, p, "an unsigned 64-bit integer");
  case RLX_FT_F32: return rlx_scan_f32(s, p);
  case RLX_FT_BOOL: return parse_bool(P, p);
  case RLX_FT_DTYPE: return parse_dtype(P, p);
  case RLX_FT_ENUM: return parse_enum(P, f->enm, p);
  case RLX_FT_OENUM:
    if (accept_none(P)) {
      *(int32_t *)p = -1;
      return RLX_OK;
    }
    return parse_enum(P, f->enm, p);
  case RLX_FT_OI64: {
    rlx_oi64 *o = p;
    o->has = !accept_none(P);
    o->v = 0;
    return o->has ? rlx_scan_i64(s, &o->v, "a 64-bit integer or none") : RLX_OK;
  }
  case RLX_FT_OF32: {
    rlx_of32 *o = p;
    o->has = !accept_none(P);
    o->v = 0;
    return o->has ? rlx_scan_f32(s, &o->v) : RLX_OK;
  }
  case RLX_FT_ODTYPE: {
    rlx_odtype *o = p;
    o->has = !accept_none(P);
    o->v = 0;
    return o->has ? parse_dtype(P, &o->v) : RLX_OK;
  }
  case RLX_FT_ILIST: {
    rlx_ilist *l = p;
    RLX_TRY(parse_list(P, sizeof(int64_t), list_i64_item, &l->n));
    void *v;
    RLX_TRY(to_arena(P, g, s->scratch.p, (size_t)l->n * sizeof(int64_t), 8, &v));
    l->v = v;
    return RLX_OK;
  }
  case RLX_FT_FLIST: {
    rlx_flist *l = p;
    RLX_TRY(parse_list(P, sizeof(float), list_f32_item, &l->n));
    void *v;
    RLX_TRY(to_arena(P, g, s->scratch.p, (size_t)l->n * sizeof(float), 4, &v));
    l->v = v;
    return RLX_OK;
  }
  case RLX_FT_STR: {
    RLX_TRY(rlx_scan_string(s));
    char *c = rlx_arena_strndup(&g->arena, s->scratch.p, s->scratch.len);
    if (!c) return rlx_scan_oom(s);
    *(const char **)p = c;
    return RLX_OK;
  }
  case RLX_FT_BYTES: return rlx_scan_bytes(s, &g->arena, p);
  case RLX_FT_GRAPH: return parse_body(P, g, depth, p);
  case RLX_FT_OGRAPH:
    if (accept_none(P)) {
      *(rlx_graph **)p = NULL;
      return RLX_OK;
    }
    return parse_body(P, g, depth, p);
  case RLX_FT_CHAIN: return parse_chain(P, g, p);
  }
  return rlx_scan_fail(s, s->pos, "expected a value, found an attribute of unknown type");
}

/* '{' name '=' value (',' name '=' value)* '}' into `a` (defaults already set). */
static rlx_status parse_attrs(parser *P, rlx_graph *g, unsigned depth, rlx_op op, rlx_attrs *a) {
  rlx_text_scan *s = &P->sc;
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(op, &nf);
  uint64_t seen = 0;
  char what[512];
  if (rlx_scan_peek(s) == '{') {
    if (!nf) {
      snprintf(what, sizeof what, "':' (%s has no attributes)", rlx_op_name(op));
      return rlx_scan_expected(s, s->pos, what);
    }
    s->pos++;
    for (;;) {
      rlx_scan_ws(s);
      size_t at = s->pos;
      const char *w;
      size_t n;
      uint32_t k = nf;
      if (rlx_scan_ident(s, &w, &n))
        for (k = 0; k < nf; k++)
          if (strlen(f[k].name) == n && memcmp(f[k].name, w, n) == 0) break;
      if (k == nf || k >= 64) {
        size_t len = (size_t)snprintf(what, sizeof what, "an attribute of %s (", rlx_op_name(op));
        for (uint32_t i = 0; i < nf && len < sizeof what; i++)
          len += (size_t)snprintf(what + len, sizeof what - len, "%s%s", i ? ", " : "", f[i].name);
        if (len < sizeof what) snprintf(what + len, sizeof what - len, ")");
        return rlx_scan_expected(s, at, what);
      }
      if (seen & (1ull << k))
        return rlx_scan_fail(s, at, "expected each attribute once, found %s a second time", f[k].name);
      seen |= 1ull << k;
      RLX_TRY(rlx_scan_expect(s, '=', "'='"));
      RLX_TRY(parse_value(P, g, depth, &f[k], (char *)a + f[k].offset));
      if (rlx_scan_accept(s, '}')) break;
      RLX_TRY(rlx_scan_expect(s, ',', "',' or '}'"));
    }
  }
  for (uint32_t k = 0; k < nf; k++) {
    if (f[k].type == RLX_FT_GRAPH && !(seen & (1ull << k))) {
      snprintf(what, sizeof what, "attribute %s (the body graph %s needs)", f[k].name, rlx_op_name(op));
      rlx_scan_ws(s);
      return rlx_scan_expected(s, s->pos, what);
    }
  }
  return RLX_OK;
}

/* ---- shapes ---- */

static rlx_status parse_shape(parser *P, rlx_shape *sh) {
  rlx_text_scan *s = &P->sc;
  memset(sh, 0, sizeof *sh);
  RLX_TRY(rlx_scan_expect(s, '[', "'[' to start the shape"));
  if (!rlx_scan_accept(s, ']')) {
    for (;;) {
      rlx_scan_ws(s);
      if (sh->rank == RLX_MAX_RANK) return rlx_scan_expected(s, s->pos, "']' (shapes have at most 8 dims)");
      size_t at = s->pos;
      if (rlx_scan_accept(s, '?')) {
        uint32_t k;
        if (s->pos >= s->len || s->src[s->pos] < '0' || s->src[s->pos] > '9')
          return rlx_scan_expected(s, at, "a symbol (?k with a number k right after the '?')");
        RLX_TRY(rlx_scan_u32(s, &k, "a symbol number (?0 .. ?4294967295)"));
        sh->dims[sh->rank++] = RLX_DIM_SYM(k);
      } else {
        if (rlx_scan_peek(s) == '-') return rlx_scan_expected(s, at, "a dimension (an integer >= 0 or ?k)");
        uint64_t v;
        RLX_TRY(rlx_scan_u64(s, &v, "a dimension (an integer >= 0 or ?k)"));
        if (v > (uint64_t)INT64_MAX)
          return rlx_scan_fail(s, at, "expected a dimension below 2^63, found %llu", (unsigned long long)v);
        sh->dims[sh->rank++] = (rlx_dim)v;
      }
      if (rlx_scan_accept(s, ']')) break;
      RLX_TRY(rlx_scan_expect(s, ',', "',' or ']'"));
    }
  }
  int32_t t = 0;
  RLX_TRY(parse_dtype(P, &t));
  sh->dtype = (uint8_t)t;
  return RLX_OK;
}

/* ---- nodes and graphs ---- */

/* '%' id -> node id of g (must be defined already). */
static rlx_status parse_ref(parser *P, const rlx_graph *g, const id_map *ids, rlx_id *out) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  RLX_TRY(rlx_scan_expect(s, '%', "a node reference (%N)"));
  uint32_t key;
  if (s->pos >= s->len || s->src[s->pos] < '0' || s->src[s->pos] > '9')
    return rlx_scan_expected(s, at, "a node reference (%N)");
  RLX_TRY(rlx_scan_u32(s, &key, "a node number below 2^32"));
  rlx_id id = id_get(ids, key);
  if (id == RLX_NO_ID)
    return rlx_scan_fail(s, at, "expected a node defined earlier in @%s, found %%%u, which is not defined yet", g->name,
                         key);
  *out = id;
  return RLX_OK;
}

static rlx_status parse_node(parser *P, rlx_graph *g, unsigned depth, id_map *ids) {
  rlx_text_scan *s = &P->sc;
  size_t at = s->pos; /* at '%' */
  s->pos++;
  uint32_t key;
  if (s->pos >= s->len || s->src[s->pos] < '0' || s->src[s->pos] > '9')
    return rlx_scan_expected(s, at, "a node definition (%N = ...)");
  RLX_TRY(rlx_scan_u32(s, &key, "a node number below 2^32"));
  if (id_get(ids, key) != RLX_NO_ID)
    return rlx_scan_fail(s, at, "expected a new node number, found %%%u, which is already defined in @%s", key,
                         g->name);
  RLX_TRY(rlx_scan_expect(s, '=', "'='"));

  rlx_scan_ws(s);
  size_t op_at = s->pos;
  const char *w;
  size_t n;
  rlx_op op;
  if (!rlx_scan_ident(s, &w, &n) || !rlx_op_from_name(w, n, &op))
    return rlx_scan_expected(s, op_at, "an op name (e.g. MatMul; see rlx ops)");

  /* operands */
  rlx_id *inputs = NULL;
  uint32_t n_in = 0;
  if (rlx_scan_accept(s, '(')) {
    s->scratch.len = 0;
    for (;;) {
      rlx_id id;
      RLX_TRY(parse_ref(P, g, ids, &id));
      if (n_in == UINT32_MAX - 1) return rlx_scan_expected(s, s->pos, "')'");
      if (!rlx_sb_put(&s->scratch, &id, sizeof id)) return rlx_scan_oom(s);
      n_in++;
      if (rlx_scan_accept(s, ')')) break;
      RLX_TRY(rlx_scan_expect(s, ',', "',' or ')'"));
    }
    void *p;
    RLX_TRY(to_arena(P, g, s->scratch.p, (size_t)n_in * sizeof(rlx_id), 4, &p));
    inputs = p;
  }
  uint32_t lo = rlx_op_min_inputs(op), hi = rlx_op_max_inputs(op);
  if (n_in < lo || n_in > hi) {
    char range[64];
    if (lo == hi)
      snprintf(range, sizeof range, "%u", lo);
    else if (hi == RLX_ARITY_VARIADIC)
      snprintf(range, sizeof range, "at least %u", lo);
    else
      snprintf(range, sizeof range, "%u to %u", lo, hi);
    bool one = lo == 1 && (hi == 1 || hi == RLX_ARITY_VARIADIC);
    return rlx_scan_fail(s, op_at, "expected %s operand%s for %s, found %u", range, one ? "" : "s", rlx_op_name(op),
                         n_in);
  }

  rlx_attrs a;
  rlx_attrs_init(op, &a);
  RLX_TRY(parse_attrs(P, g, depth, op, &a));
  RLX_TRY(rlx_scan_expect(s, ':', "':' before the shape"));
  rlx_shape shape;
  RLX_TRY(parse_shape(P, &shape));

  const char *name = NULL;
  if (rlx_scan_peek(s) == '"') {
    RLX_TRY(rlx_scan_string(s));
    name = rlx_arena_strndup(&g->arena, s->scratch.p, s->scratch.len);
    if (!name) return rlx_scan_oom(s);
  }

  rlx_id id;
  rlx_status st = rlx_graph_add_unchecked(g, op, inputs, n_in, &a, &shape, name, &id);
  if (st == RLX_ERR_OOM) return rlx_scan_oom(s);
  if (st) return rlx_scan_fail(s, at, "%s", rlx_last_error());
  if (!id_put(ids, key, id)) return rlx_scan_oom(s);
  return RLX_OK;
}

static rlx_status parse_return(parser *P, rlx_graph *g, const id_map *ids) {
  rlx_text_scan *s = &P->sc;
  s->pos += 6; /* "return" */
  s->scratch.len = 0;
  uint32_t n = 0;
  for (;;) {
    rlx_id id;
    RLX_TRY(parse_ref(P, g, ids, &id));
    if (n == UINT32_MAX) return rlx_scan_expected(s, s->pos, "'}'");
    if (!rlx_sb_put(&s->scratch, &id, sizeof id)) return rlx_scan_oom(s);
    n++;
    if (!rlx_scan_accept(s, ',')) break;
  }
  rlx_status st = rlx_graph_set_outputs(g, (const rlx_id *)(void *)s->scratch.p, n);
  if (st == RLX_ERR_OOM) return rlx_scan_oom(s);
  return st;
}

/* '@' name; the decoded name is left in the scanner's scratch buffer. */
static rlx_status parse_graph_name(parser *P, const char **name_out) {
  rlx_text_scan *s = &P->sc;
  RLX_TRY(rlx_scan_expect(s, '@', "'@' and the graph name"));
  if (s->pos < s->len && s->src[s->pos] == '"') {
    RLX_TRY(rlx_scan_string(s));
  } else {
    size_t start = s->pos;
    while (s->pos < s->len) {
      char c = s->src[s->pos];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) break;
      s->pos++;
    }
    if (s->pos == start) return rlx_scan_expected(s, start, "a graph name ([A-Za-z0-9_.]+ or a string)");
    if (s->pos - start > RLX_FORMAT_MAX_NAME_BYTES)
      return rlx_scan_fail(s, start, "this graph name is %zu bytes long; names are limited to %d bytes", s->pos - start,
                           RLX_FORMAT_MAX_NAME_BYTES);
    s->scratch.len = 0;
    if (!rlx_sb_put(&s->scratch, s->src + start, s->pos - start)) return rlx_scan_oom(s);
  }
  *name_out = s->scratch.p;
  return RLX_OK;
}

/* graph @name { node* (return ref (, ref)*)? } ; creates a top graph (parent NULL) or a child. */
static rlx_status parse_graph(parser *P, rlx_graph *parent, unsigned depth, rlx_graph **out) {
  rlx_text_scan *s = &P->sc;
  rlx_scan_ws(s);
  size_t at = s->pos;
  if (!rlx_scan_at_word(s, "graph")) return rlx_scan_expected(s, at, "'graph'");
  if (depth > RLX_FORMAT_MAX_DEPTH)
    return rlx_scan_fail(s, at, "expected at most %d levels of nested bodies, found a body at depth %u",
                         RLX_FORMAT_MAX_DEPTH, depth);
  s->pos += 5;
  const char *name = NULL;
  rlx_scan_ws(s);
  RLX_TRY(parse_graph_name(P, &name));
  rlx_graph *g;
  rlx_status st = parent ? rlx_graph_create_child(parent, name, &g) : rlx_graph_create(P->al, name, &g);
  if (st) return st == RLX_ERR_OOM ? rlx_scan_oom(s) : st;
  *out = g;
  RLX_TRY(rlx_scan_expect(s, '{', "'{'"));

  id_map ids = {P->al, NULL, 0, 0};
  for (;;) {
    int c = rlx_scan_peek(s);
    if (c == '%') {
      st = parse_node(P, g, depth, &ids);
    } else if (rlx_scan_at_word(s, "return")) {
      st = parse_return(P, g, &ids);
      if (!st) st = rlx_scan_expect(s, '}', "',' or '}' to close the graph");
      break;
    } else if (c == '}') {
      s->pos++;
      break;
    } else {
      unsigned line, col;
      rlx_scan_line_col(s, at, &line, &col);
      char what[160];
      snprintf(what, sizeof what, "a node (%%N = ...), 'return' or '}' to close graph @%s (opened at %u:%u)", g->name,
               line, col);
      st = rlx_scan_expected(s, s->pos, what);
    }
    if (st) break;
  }
  id_free(&ids);
  return st;
}

rlx_status rlx_text_parse(const char *text, size_t len, const char *source_name, const rlx_allocator *al,
                          rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_text_parse: out is NULL");
  *out = NULL;
  if (!text && len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_text_parse: text is NULL");
  if (!al) al = rlx_default_allocator();
  parser P;
  memset(&P, 0, sizeof P);
  P.al = al;
  P.sc.src = text ? text : "";
  P.sc.len = len;
  P.sc.source = source_name ? source_name : "<text>";
  rlx_sb_init(&P.sc.scratch, al);

  rlx_graph *g = NULL;
  rlx_status st = parse_graph(&P, NULL, 0, &g);
  if (!st && rlx_scan_peek(&P.sc) >= 0) st = rlx_scan_expected(&P.sc, P.sc.pos, "end of input after the graph");
  rlx_sb_free(&P.sc.scratch);
  if (!st) {
    st = rlx_verify(g);
    if (st) rlx_error_context(st, "%s", P.sc.source);
  }
  if (st) {
    rlx_graph_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}
