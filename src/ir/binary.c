/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Binary graph format (layout in docs/ir-format.md): "RLXB", u32 version, u32 flags, then one
 * graph record, all little-endian. The reader checks every count and length against the bytes
 * that remain before allocating, validates every enum/dtype/bool on the spot, names the byte
 * offset and field of every problem, and finally runs the verifier. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "format_internal.h"

#define STR_NONE UINT32_MAX
#define HEADER_BYTES 12u
/* Smallest encoding of one node: op, operand count, rank, dtype, name length. */
#define MIN_NODE_BYTES (2u + 4u + 1u + 1u + 4u)
/* Smallest chain step: kind, sub-op, one operand (Activation, Cast). */
#define MIN_CHAIN_STEP_BYTES (1u + 4u + 5u)

/* ======================================================================================== */
/* writer                                                                                    */
/* ======================================================================================== */

static void put_i32(rlx_strbuf *b, int32_t v) { rlx_sb_u32(b, (uint32_t)v); }
static void put_i64(rlx_strbuf *b, int64_t v) { rlx_sb_u64(b, (uint64_t)v); }
static void put_f32(rlx_strbuf *b, float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  rlx_sb_u32(b, u);
}

static rlx_status put_str(rlx_strbuf *b, const char *s, const char *what) {
  if (!s) {
    rlx_sb_u32(b, STR_NONE);
    return RLX_OK;
  }
  size_t n = strlen(s);
  if (n > RLX_FORMAT_MAX_NAME_BYTES)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s is %zu bytes long; names and strings are limited to %d bytes", what, n,
                      RLX_FORMAT_MAX_NAME_BYTES);
  size_t bad = rlx_fmt_utf8_check(s, n);
  if (bad != n) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s is not valid UTF-8 (byte %zu of %zu)", what, bad, n);
  rlx_sb_u32(b, (uint32_t)n);
  rlx_sb_put(b, s, n);
  return RLX_OK;
}

static rlx_status write_graph(rlx_strbuf *b, const rlx_graph *g, unsigned depth);

static rlx_status write_field(rlx_strbuf *b, const rlx_graph *g, rlx_id id, const rlx_field *f, const void *p,
                              unsigned depth) {
  switch (f->type) {
  case RLX_FT_I64: put_i64(b, *(const int64_t *)p); break;
  case RLX_FT_U64: rlx_sb_u64(b, *(const uint64_t *)p); break;
  case RLX_FT_F32: put_f32(b, *(const float *)p); break;
  case RLX_FT_BOOL: rlx_sb_u8(b, *(const bool *)p ? 1 : 0); break;
  case RLX_FT_DTYPE:
  case RLX_FT_ENUM:
  case RLX_FT_OENUM: put_i32(b, *(const int32_t *)p); break;
  case RLX_FT_OI64: {
    const rlx_oi64 *o = p;
    rlx_sb_u8(b, o->has ? 1 : 0);
    if (o->has) put_i64(b, o->v);
    break;
  }
  case RLX_FT_OF32: {
    const rlx_of32 *o = p;
    rlx_sb_u8(b, o->has ? 1 : 0);
    if (o->has) put_f32(b, o->v);
    break;
  }
  case RLX_FT_ODTYPE: {
    const rlx_odtype *o = p;
    rlx_sb_u8(b, o->has ? 1 : 0);
    if (o->has) put_i32(b, o->v);
    break;
  }
  case RLX_FT_ILIST: {
    const rlx_ilist *l = p;
    rlx_sb_u32(b, l->n);
    for (uint32_t i = 0; i < l->n; i++) put_i64(b, l->v[i]);
    break;
  }
  case RLX_FT_FLIST: {
    const rlx_flist *l = p;
    rlx_sb_u32(b, l->n);
    for (uint32_t i = 0; i < l->n; i++) put_f32(b, l->v[i]);
    break;
  }
  case RLX_FT_STR: {
    char what[160];
    snprintf(what, sizeof what, "@%s %%%u attribute %s", g->name, id, f->name);
    return put_str(b, *(const char *const *)p, what);
  }
  case RLX_FT_BYTES: {
    const rlx_bytes *by = p;
    rlx_sb_u64(b, (uint64_t)by->n);
    rlx_sb_put(b, by->p, by->n);
    break;
  }
  case RLX_FT_GRAPH:
  case RLX_FT_OGRAPH: {
    const rlx_graph *body = *(rlx_graph *const *)p;
    if (f->type == RLX_FT_OGRAPH)
      rlx_sb_u8(b, body ? 1 : 0);
    else if (!body)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot write @%s %%%u: attribute %s has no body graph", g->name, id,
                        f->name);
    if (body) return write_graph(b, body, depth + 1);
    break;
  }
  case RLX_FT_CHAIN: {
    const rlx_chain *ch = p;
    rlx_sb_u32(b, ch->n);
    for (uint32_t i = 0; i < ch->n; i++) {
      const rlx_chain_step *s = &ch->steps[i];
      rlx_sb_u8(b, (uint8_t)s->kind);
      if (s->kind != RLX_CHAIN_STEP_WHERE) put_i32(b, s->sub);
      const rlx_chain_operand ops[3] = {s->a, s->b, s->c};
      for (unsigned k = 0; k < rlx_fmt_chain_arity(s->kind); k++) {
        rlx_sb_u8(b, ops[k].is_step ? 1 : 0);
        rlx_sb_u32(b, ops[k].index);
      }
    }
    break;
  }
  }
  return RLX_OK;
}

static rlx_status write_graph(rlx_strbuf *b, const rlx_graph *g, unsigned depth) {
  if (depth > RLX_FORMAT_MAX_DEPTH)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot write @%s: bodies nested deeper than %d levels", g->name,
                      RLX_FORMAT_MAX_DEPTH);
  RLX_TRY(put_str(b, g->name, "a graph name"));
  rlx_sb_u32(b, g->n_nodes);
  for (rlx_id id = 0; id < g->n_nodes; id++) {
    const rlx_node *n = &g->nodes[id];
    if ((unsigned)n->op >= RLX_OP_COUNT)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot write @%s %%%u: unknown op kind %d", g->name, id, (int)n->op);
    /* Refuse what the reader would reject, so that every written file reads back. */
    char why[256];
    uint32_t nf;
    const rlx_field *f = rlx_op_fields(n->op, &nf);
    bool ok = rlx_fmt_check_shape(&n->shape, why, sizeof why);
    for (uint32_t i = 0; ok && i < nf; i++)
      ok = rlx_fmt_check_value(&f[i], (const char *)&n->attrs + f[i].offset, why, sizeof why);
    if (!ok)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot write @%s %%%u (%s): %s", g->name, id, rlx_op_name(n->op), why);
    if (n->n_inputs && !n->inputs)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot write @%s %%%u: operands missing", g->name, id);
    rlx_sb_u16(b, (uint16_t)n->op);
    rlx_sb_u32(b, n->n_inputs);
    for (uint32_t i = 0; i < n->n_inputs; i++) rlx_sb_u32(b, n->inputs[i]);
    rlx_sb_u8(b, n->shape.rank);
    rlx_sb_u8(b, n->shape.dtype);
    for (uint32_t i = 0; i < n->shape.rank; i++) put_i64(b, n->shape.dims[i]);
    RLX_TRY(put_str(b, n->name, "a node name"));
    for (uint32_t i = 0; i < nf; i++)
      RLX_TRY(write_field(b, g, id, &f[i], (const char *)&n->attrs + f[i].offset, depth));
  }
  rlx_sb_u32(b, g->n_outputs);
  for (uint32_t i = 0; i < g->n_outputs; i++) rlx_sb_u32(b, g->outputs[i]);
  return RLX_OK;
}

rlx_status rlx_binary_write(const rlx_graph *g, const rlx_allocator *al, uint8_t **out, size_t *len) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_binary_write: graph and out must not be NULL");
  *out = NULL;
  if (len) *len = 0;
  rlx_strbuf b;
  rlx_sb_init(&b, al);
  rlx_sb_put(&b, RLX_BINARY_MAGIC, 4);
  rlx_sb_u32(&b, RLX_BINARY_VERSION);
  rlx_sb_u32(&b, 0);
  rlx_status s = write_graph(&b, g, 0);
  if (s) {
    rlx_sb_free(&b);
    return s;
  }
  char *p;
  RLX_TRY(rlx_sb_finish(&b, &p, len));
  *out = (uint8_t *)p;
  return RLX_OK;
}

/* ======================================================================================== */
/* reader                                                                                    */
/* ======================================================================================== */

typedef struct reader {
  const uint8_t *d;
  size_t len, pos;
  /* where we are, for messages */
  const char *graph;
  uint32_t node; /* UINT32_MAX = not inside a node */
  rlx_op op;
  const char *field;
} reader;

static rlx_status rd_fail(const reader *R, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static rlx_status rd_fail(const reader *R, size_t at, const char *fmt, ...) {
  char msg[512], where[256] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (R->graph) {
    int k = snprintf(where, sizeof where, " in graph @%s", R->graph);
    if (R->node != UINT32_MAX && k > 0 && (size_t)k < sizeof where) {
      if ((unsigned)R->op < RLX_OP_COUNT)
        k += snprintf(where + k, sizeof where - (size_t)k, " node %u (%s)", R->node, rlx_op_name(R->op));
      else
        k += snprintf(where + k, sizeof where - (size_t)k, " node %u", R->node);
    }
    if (R->field && k > 0 && (size_t)k < sizeof where)
      snprintf(where + k, sizeof where - (size_t)k, " attribute %s", R->field);
  }
  return rlx_errorf(RLX_ERR_FORMAT, "binary graph, byte offset %zu%s: %s", at, where, msg);
}

static rlx_status rd_oom(void) { return rlx_errorf(RLX_ERR_OOM, "out of memory while reading a binary graph"); }

/* Requires `n` more bytes for `what`. */
static rlx_status need(const reader *R, size_t n, const char *what) {
  if (R->len - R->pos < n)
    return rd_fail(R, R->pos, "truncated: %s needs %zu byte%s, %zu left", what, n, n == 1 ? "" : "s", R->len - R->pos);
  return RLX_OK;
}

static uint64_t load_le(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static rlx_status rd_uint(reader *R, unsigned n, uint64_t *v, const char *what) {
  RLX_TRY(need(R, n, what));
  *v = load_le(R->d + R->pos, n);
  R->pos += n;
  return RLX_OK;
}

static rlx_status rd_u8(reader *R, uint8_t *v, const char *what) {
  uint64_t x;
  RLX_TRY(rd_uint(R, 1, &x, what));
  *v = (uint8_t)x;
  return RLX_OK;
}

static rlx_status rd_u32(reader *R, uint32_t *v, const char *what) {
  uint64_t x;
  RLX_TRY(rd_uint(R, 4, &x, what));
  *v = (uint32_t)x;
  return RLX_OK;
}

static rlx_status rd_i32(reader *R, int32_t *v, const char *what) {
  uint32_t x;
  RLX_TRY(rd_u32(R, &x, what));
  *v = (int32_t)x;
  return RLX_OK;
}

static rlx_status rd_i64(reader *R, int64_t *v, const char *what) {
  uint64_t x;
  RLX_TRY(rd_uint(R, 8, &x, what));
  *v = (int64_t)x;
  return RLX_OK;
}

static rlx_status rd_f32(reader *R, float *v, const char *what) {
  uint32_t x;
  RLX_TRY(rd_u32(R, &x, what));
  memcpy(v, &x, sizeof x);
  return RLX_OK;
}

static rlx_status rd_bool(reader *R, bool *v, const char *what) {
  size_t at = R->pos;
  uint8_t x;
  RLX_TRY(rd_u8(R, &x, what));
  if (x > 1) return rd_fail(R, at, "%s must be 0 or 1, found %u", what, x);
  *v = x != 0;
  return RLX_OK;
}

/* u32 count of items of `item_size` bytes each, checked against the remaining bytes. */
static rlx_status rd_count(reader *R, size_t item_size, uint32_t *n, const char *what) {
  size_t at = R->pos;
  RLX_TRY(rd_u32(R, n, what));
  size_t bytes;
  if (!rlx_mul_size(*n, item_size, &bytes) || bytes > R->len - R->pos)
    return rd_fail(R, at, "%s %u needs %llu bytes but only %zu remain", what, *n, (unsigned long long)*n * item_size,
                   R->len - R->pos);
  return RLX_OK;
}

/* String: u32 length (STR_NONE = absent when allowed) + bytes without NUL, copied into g. */
static rlx_status rd_str(reader *R, rlx_graph *g, bool allow_none, const char **out, const char *what) {
  size_t at = R->pos;
  uint32_t n;
  RLX_TRY(rd_u32(R, &n, what));
  if (n == STR_NONE) {
    if (!allow_none) return rd_fail(R, at, "%s is required (length 0xFFFFFFFF means absent)", what);
    *out = NULL;
    return RLX_OK;
  }
  if (n > RLX_FORMAT_MAX_NAME_BYTES)
    return rd_fail(R, at, "%s has length %u; names and strings are limited to %d bytes", what, n,
                   RLX_FORMAT_MAX_NAME_BYTES);
  if (n > R->len - R->pos)
    return rd_fail(R, at, "%s has length %u but only %zu bytes remain", what, n, R->len - R->pos);
  const uint8_t *nul = n ? memchr(R->d + R->pos, 0, n) : NULL;
  if (nul) return rd_fail(R, (size_t)(nul - R->d), "%s contains a NUL byte", what);
  size_t bad = rlx_fmt_utf8_check((const char *)R->d + R->pos, n);
  if (bad != n) return rd_fail(R, R->pos + bad, "%s is not valid UTF-8", what);
  char *c = rlx_arena_strndup(&g->arena, (const char *)R->d + R->pos, n);
  if (!c) return rd_oom();
  R->pos += n;
  *out = c;
  return RLX_OK;
}

static rlx_status rd_enum(reader *R, const rlx_enum_desc *e, bool optional, int32_t *v, const char *what) {
  size_t at = R->pos;
  RLX_TRY(rd_i32(R, v, what));
  if ((optional && *v == -1) || (*v >= 0 && *v < e->count)) return RLX_OK;
  return rd_fail(R, at, "%d is not a %s%s (0..%d)", *v, e->type_name, optional ? " or -1 (none)" : "", e->count - 1);
}

static rlx_status rd_dtype(reader *R, int32_t *v, const char *what) {
  size_t at = R->pos;
  RLX_TRY(rd_i32(R, v, what));
  if (*v < 0 || *v >= RLX_DTYPE_COUNT)
    return rd_fail(R, at, "%s %d is not a dtype (0..%d)", what, *v, RLX_DTYPE_COUNT - 1);
  return RLX_OK;
}

static rlx_status read_graph(reader *R, rlx_graph *g, unsigned depth);

static rlx_status rd_chain(reader *R, rlx_graph *g, rlx_chain *ch) {
  RLX_TRY(rd_count(R, MIN_CHAIN_STEP_BYTES, &ch->n, "chain step count"));
  ch->steps = NULL;
  if (!ch->n) return RLX_OK;
  ch->steps = rlx_arena_alloc(&g->arena, (size_t)ch->n * sizeof *ch->steps, 8);
  if (!ch->steps) return rd_oom();
  for (uint32_t i = 0; i < ch->n; i++) {
    rlx_chain_step *s = &ch->steps[i];
    memset(s, 0, sizeof *s);
    size_t at = R->pos;
    uint8_t kind;
    RLX_TRY(rd_u8(R, &kind, "chain step kind"));
    if (kind >= RLX_CHAIN_STEP_COUNT) return rd_fail(R, at, "chain step %u has unknown kind %u", i, kind);
    s->kind = kind;
    if (kind != RLX_CHAIN_STEP_WHERE) {
      at = R->pos;
      RLX_TRY(rd_i32(R, &s->sub, "chain step sub-op"));
      int32_t lim = kind == RLX_CHAIN_STEP_ACTIVATION ? RLX_ACT_COUNT
                    : kind == RLX_CHAIN_STEP_CAST     ? RLX_DTYPE_COUNT
                    : kind == RLX_CHAIN_STEP_BINARY   ? RLX_BINOP_COUNT
                                                      : RLX_CMP_COUNT;
      if (s->sub < 0 || s->sub >= lim) return rd_fail(R, at, "chain step %u has out-of-range sub-op %d", i, s->sub);
    }
    rlx_chain_operand *ops[3] = {&s->a, &s->b, &s->c};
    for (unsigned k = 0; k < rlx_fmt_chain_arity(kind); k++) {
      bool is_step;
      RLX_TRY(rd_bool(R, &is_step, "chain operand kind"));
      ops[k]->is_step = is_step;
      RLX_TRY(rd_u32(R, &ops[k]->index, "chain operand index"));
    }
  }
  return RLX_OK;
}

static rlx_status read_field(reader *R, rlx_graph *g, const rlx_field *f, void *p, unsigned depth) {
  const char *w = f->name;
  switch (f->type) {
  case RLX_FT_I64: return rd_i64(R, p, w);
  case RLX_FT_U64: return rd_uint(R, 8, p, w);
  case RLX_FT_F32: return rd_f32(R, p, w);
  case RLX_FT_BOOL: return rd_bool(R, p, w);
  case RLX_FT_DTYPE: return rd_dtype(R, p, w);
  case RLX_FT_ENUM: return rd_enum(R, f->enm, false, p, w);
  case RLX_FT_OENUM: return rd_enum(R, f->enm, true, p, w);
  case RLX_FT_OI64: {
    rlx_oi64 *o = p;
    RLX_TRY(rd_bool(R, &o->has, "presence flag"));
    o->v = 0;
    return o->has ? rd_i64(R, &o->v, w) : RLX_OK;
  }
  case RLX_FT_OF32: {
    rlx_of32 *o = p;
    RLX_TRY(rd_bool(R, &o->has, "presence flag"));
    o->v = 0;
    return o->has ? rd_f32(R, &o->v, w) : RLX_OK;
  }
  case RLX_FT_ODTYPE: {
    rlx_odtype *o = p;
    RLX_TRY(rd_bool(R, &o->has, "presence flag"));
    o->v = 0;
    return o->has ? rd_dtype(R, &o->v, w) : RLX_OK;
  }
  case RLX_FT_ILIST: {
    rlx_ilist *l = p;
    RLX_TRY(rd_count(R, 8, &l->n, "list length"));
    l->v = NULL;
    if (!l->n) return RLX_OK;
    l->v = rlx_arena_alloc(&g->arena, (size_t)l->n * 8, 8);
    if (!l->v) return rd_oom();
    for (uint32_t i = 0; i < l->n; i++) RLX_TRY(rd_i64(R, &l->v[i], "list item"));
    return RLX_OK;
  }
  case RLX_FT_FLIST: {
    rlx_flist *l = p;
    RLX_TRY(rd_count(R, 4, &l->n, "list length"));
    l->v = NULL;
    if (!l->n) return RLX_OK;
    l->v = rlx_arena_alloc(&g->arena, (size_t)l->n * 4, 4);
    if (!l->v) return rd_oom();
    for (uint32_t i = 0; i < l->n; i++) RLX_TRY(rd_f32(R, &l->v[i], "list item"));
    return RLX_OK;
  }
  case RLX_FT_STR: return rd_str(R, g, true, p, "string");
  case RLX_FT_BYTES: {
    rlx_bytes *by = p;
    size_t at = R->pos;
    uint64_t n;
    RLX_TRY(rd_uint(R, 8, &n, "byte string length"));
    if (n > R->len - R->pos)
      return rd_fail(R, at, "byte string has length %llu but only %zu bytes remain", (unsigned long long)n,
                     R->len - R->pos);
    by->n = (size_t)n;
    by->p = NULL;
    if (n) {
      by->p = rlx_arena_alloc(&g->arena, by->n, 16);
      if (!by->p) return rd_oom();
      memcpy(by->p, R->d + R->pos, by->n);
      R->pos += by->n;
    }
    return RLX_OK;
  }
  case RLX_FT_GRAPH:
  case RLX_FT_OGRAPH: {
    rlx_graph **gp = p;
    *gp = NULL;
    if (f->type == RLX_FT_OGRAPH) {
      bool has;
      RLX_TRY(rd_bool(R, &has, "presence flag"));
      if (!has) return RLX_OK;
    }
    if (depth + 1 > RLX_FORMAT_MAX_DEPTH)
      return rd_fail(R, R->pos, "bodies nested deeper than %d levels", RLX_FORMAT_MAX_DEPTH);
    /* The child is created with a placeholder name that read_graph replaces. */
    rlx_graph *body;
    rlx_status s = rlx_graph_create_child(g, "", &body);
    if (s) return s == RLX_ERR_OOM ? rd_oom() : s;
    *gp = body;
    reader saved = *R;
    s = read_graph(R, body, depth + 1);
    R->graph = saved.graph;
    R->node = saved.node;
    R->op = saved.op;
    R->field = saved.field;
    return s;
  }
  case RLX_FT_CHAIN: return rd_chain(R, g, p);
  }
  return rd_fail(R, R->pos, "attribute of unknown type");
}

static rlx_status read_node(reader *R, rlx_graph *g, rlx_id id, unsigned depth) {
  R->op = RLX_OP_COUNT; /* not known yet */
  size_t at = R->pos;
  uint64_t opv;
  RLX_TRY(rd_uint(R, 2, &opv, "op kind"));
  if (opv >= RLX_OP_COUNT) return rd_fail(R, at, "unknown op kind %u (0..%d)", (unsigned)opv, RLX_OP_COUNT - 1);
  rlx_op op = (rlx_op)opv;
  R->op = op;

  at = R->pos;
  uint32_t n_in;
  RLX_TRY(rd_count(R, 4, &n_in, "operand count"));
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
    return rd_fail(R, at, "%s takes %s operand%s, found %u", rlx_op_name(op), range, one ? "" : "s", n_in);
  }
  rlx_id *inputs = NULL;
  if (n_in) {
    inputs = rlx_arena_alloc(&g->arena, (size_t)n_in * sizeof *inputs, 4);
    if (!inputs) return rd_oom();
    for (uint32_t i = 0; i < n_in; i++) {
      at = R->pos;
      RLX_TRY(rd_u32(R, &inputs[i], "operand id"));
      if (inputs[i] >= id)
        return rd_fail(R, at, "operand %u refers to node %u, which is not defined before node %u", i, inputs[i], id);
    }
  }

  rlx_shape shape;
  memset(&shape, 0, sizeof shape);
  at = R->pos;
  RLX_TRY(rd_u8(R, &shape.rank, "shape rank"));
  if (shape.rank > RLX_MAX_RANK) return rd_fail(R, at, "shape rank %u exceeds %d", shape.rank, RLX_MAX_RANK);
  at = R->pos;
  RLX_TRY(rd_u8(R, &shape.dtype, "shape dtype"));
  if (shape.dtype >= RLX_DTYPE_COUNT)
    return rd_fail(R, at, "shape dtype %u is not a dtype (0..%d)", shape.dtype, RLX_DTYPE_COUNT - 1);
  for (uint32_t i = 0; i < shape.rank; i++) {
    at = R->pos;
    RLX_TRY(rd_i64(R, &shape.dims[i], "shape dim"));
    if (shape.dims[i] < RLX_FORMAT_MIN_DIM)
      return rd_fail(R, at, "shape dim %u is %lld, neither an extent nor a symbol", i, (long long)shape.dims[i]);
  }
  const char *name;
  RLX_TRY(rd_str(R, g, true, &name, "node name"));

  rlx_attrs a;
  rlx_attrs_init(op, &a);
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(op, &nf);
  for (uint32_t i = 0; i < nf; i++) {
    R->field = f[i].name;
    RLX_TRY(read_field(R, g, &f[i], (char *)&a + f[i].offset, depth));
  }
  R->field = NULL;
  rlx_status s = rlx_graph_add_unchecked(g, op, inputs, n_in, &a, &shape, name, NULL);
  if (s == RLX_ERR_OOM) return rd_oom();
  if (s) return rd_fail(R, R->pos, "%s", rlx_last_error());
  return RLX_OK;
}

static rlx_status read_graph(reader *R, rlx_graph *g, unsigned depth) {
  R->graph = NULL;
  R->node = UINT32_MAX;
  R->field = NULL;
  const char *name;
  RLX_TRY(rd_str(R, g, false, &name, "graph name"));
  g->name = (char *)name; /* arena-owned, like the name set at creation */
  R->graph = g->name;
  uint32_t n_nodes;
  RLX_TRY(rd_count(R, MIN_NODE_BYTES, &n_nodes, "node count"));
  for (uint32_t i = 0; i < n_nodes; i++) {
    R->node = i;
    RLX_TRY(read_node(R, g, i, depth));
  }
  R->node = UINT32_MAX;
  uint32_t n_out;
  RLX_TRY(rd_count(R, 4, &n_out, "output count"));
  if (!n_out) return RLX_OK;
  rlx_id *outs = rlx_arena_alloc(&g->arena, (size_t)n_out * sizeof *outs, 4);
  if (!outs) return rd_oom();
  for (uint32_t i = 0; i < n_out; i++) {
    size_t at = R->pos;
    RLX_TRY(rd_u32(R, &outs[i], "output id"));
    if (outs[i] >= n_nodes)
      return rd_fail(R, at, "output %u refers to node %u, but the graph has %u nodes", i, outs[i], n_nodes);
  }
  rlx_status s = rlx_graph_set_outputs(g, outs, n_out);
  return s == RLX_ERR_OOM ? rd_oom() : s;
}

rlx_status rlx_binary_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_binary_read: out is NULL");
  *out = NULL;
  if (!data && len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_binary_read: data is NULL");
  reader R = {data, len, 0, NULL, UINT32_MAX, RLX_OP_COUNT, NULL};
  if (len < 4 || memcmp(data, RLX_BINARY_MAGIC, 4) != 0)
    return rd_fail(&R, 0, "not a binary graph (the file does not start with \"RLXB\")");
  R.pos = 4;
  uint32_t version, flags;
  RLX_TRY(rd_u32(&R, &version, "format version"));
  if (version != RLX_BINARY_VERSION)
    return rd_fail(&R, 4, "format version %u is not supported (this build reads version %u)", version,
                   RLX_BINARY_VERSION);
  RLX_TRY(rd_u32(&R, &flags, "flags"));
  if (flags != 0) return rd_fail(&R, 8, "flags 0x%x: no flags are defined, expected 0", flags);

  rlx_graph *g;
  rlx_status s = rlx_graph_create(al, "main", &g);
  if (s) return s;
  s = read_graph(&R, g, 0);
  if (!s && R.pos != R.len) {
    R.graph = NULL;
    s = rd_fail(&R, R.pos, "%zu trailing byte%s after the graph record", R.len - R.pos, R.len - R.pos == 1 ? "" : "s");
  }
  if (!s) s = rlx_verify(g);
  if (s) {
    rlx_graph_free(g);
    return s;
  }
  *out = g;
  return RLX_OK;
}
