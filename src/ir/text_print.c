/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Canonical text printer (docs/ir-format.md): dense ids, 2-space indentation per nesting level,
 * only non-default attributes in descriptor order. Also the value writers shared with dot.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"

/* ---- scalars and names ---- */

void rlx_fmt_put_string(rlx_strbuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  rlx_sb_putc(b, '"');
  size_t run = 0; /* start of the current run of bytes that need no escape */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
    rlx_sb_put(b, s + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': rlx_sb_puts(b, "\\\""); break;
    case '\\': rlx_sb_puts(b, "\\\\"); break;
    case '\n': rlx_sb_puts(b, "\\n"); break;
    case '\t': rlx_sb_puts(b, "\\t"); break;
    default: {
      char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
      rlx_sb_put(b, e, 4);
    }
    }
  }
  rlx_sb_put(b, s + run, n - run);
  rlx_sb_putc(b, '"');
}

void rlx_fmt_put_f32(rlx_strbuf *b, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  if (isnan(v)) {
    if (bits == 0x7fc00000u)
      rlx_sb_puts(b, "nan");
    else
      rlx_sb_printf(b, "nan(0x%08x)", (unsigned)bits);
    return;
  }
  if (isinf(v)) {
    rlx_sb_puts(b, v > 0 ? "inf" : "-inf");
    return;
  }
  char buf[48];
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
    float back = strtof(buf, NULL);
    uint32_t bb;
    memcpy(&bb, &back, sizeof bb);
    if (bb == bits) break; /* %.9g always reads back exactly, so the loop ends with a match */
  }
  rlx_sb_puts(b, buf);
}

static bool is_bare_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

void rlx_fmt_put_graph_name(rlx_strbuf *b, const char *name) {
  size_t n = strlen(name);
  bool bare = n > 0;
  for (size_t i = 0; i < n && bare; i++) bare = is_bare_char((unsigned char)name[i]);
  rlx_sb_putc(b, '@');
  if (bare)
    rlx_sb_put(b, name, n);
  else
    rlx_fmt_put_string(b, name, n);
}

void rlx_fmt_put_shape(rlx_strbuf *b, const rlx_shape *s) {
  rlx_sb_putc(b, '[');
  for (uint32_t i = 0; i < s->rank; i++) {
    if (i) rlx_sb_puts(b, ", ");
    if (s->dims[i] >= 0)
      rlx_sb_printf(b, "%lld", (long long)s->dims[i]);
    else
      rlx_sb_printf(b, "?%u", rlx_dim_symbol(s->dims[i]));
  }
  rlx_sb_printf(b, "] %s", rlx_dtype_name((rlx_dtype)s->dtype));
}

/* ---- checks ---- */

bool rlx_fmt_check_shape(const rlx_shape *s, char *why, size_t cap) {
  if (s->rank > RLX_MAX_RANK) {
    snprintf(why, cap, "shape has rank %u; at most %d is allowed", s->rank, RLX_MAX_RANK);
    return false;
  }
  if (s->dtype >= RLX_DTYPE_COUNT) {
    snprintf(why, cap, "shape has unknown dtype %u", s->dtype);
    return false;
  }
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] < RLX_FORMAT_MIN_DIM) {
      snprintf(why, cap, "shape dim %u is %lld, neither an extent nor a symbol ?k", i, (long long)s->dims[i]);
      return false;
    }
  }
  return true;
}

static bool enum_ok(const rlx_enum_desc *e, int32_t v, bool optional) {
  return (optional && v == -1) || (v >= 0 && v < e->count);
}

unsigned rlx_fmt_chain_arity(int32_t kind) {
  if (kind == RLX_CHAIN_STEP_WHERE) return 3;
  if (kind == RLX_CHAIN_STEP_BINARY || kind == RLX_CHAIN_STEP_COMPARE) return 2;
  return 1;
}

/* Enum table of a chain step's sub-op (NULL for Cast, which uses dtypes, and Where). */
static const rlx_enum_desc *chain_sub_enum(int32_t kind) {
  switch (kind) {
  case RLX_CHAIN_STEP_ACTIVATION: return &rlx_enum_act;
  case RLX_CHAIN_STEP_BINARY: return &rlx_enum_binop;
  case RLX_CHAIN_STEP_COMPARE: return &rlx_enum_cmp;
  default: return NULL;
  }
}

bool rlx_fmt_check_value(const rlx_field *f, const void *p, char *why, size_t cap) {
  switch (f->type) {
  case RLX_FT_ENUM:
  case RLX_FT_OENUM: {
    int32_t v = *(const int32_t *)p;
    if (!enum_ok(f->enm, v, f->type == RLX_FT_OENUM)) {
      snprintf(why, cap, "attribute %s: %d is not a %s", f->name, v, f->enm->type_name);
      return false;
    }
    return true;
  }
  case RLX_FT_DTYPE: {
    int32_t v = *(const int32_t *)p;
    if (v < 0 || v >= RLX_DTYPE_COUNT) {
      snprintf(why, cap, "attribute %s: %d is not a dtype", f->name, v);
      return false;
    }
    return true;
  }
  case RLX_FT_ODTYPE: {
    const rlx_odtype *o = p;
    if (o->has && (o->v < 0 || o->v >= RLX_DTYPE_COUNT)) {
      snprintf(why, cap, "attribute %s: %d is not a dtype", f->name, o->v);
      return false;
    }
    return true;
  }
  case RLX_FT_GRAPH:
    if (!*(rlx_graph *const *)p) {
      snprintf(why, cap, "attribute %s: body graph missing", f->name);
      return false;
    }
    return true;
  case RLX_FT_CHAIN: {
    const rlx_chain *ch = p;
    for (uint32_t i = 0; i < ch->n; i++) {
      const rlx_chain_step *s = &ch->steps[i];
      if (s->kind < 0 || s->kind >= RLX_CHAIN_STEP_COUNT) {
        snprintf(why, cap, "attribute %s: step %u has unknown kind %d", f->name, i, s->kind);
        return false;
      }
      const rlx_enum_desc *e = chain_sub_enum(s->kind);
      bool sub_ok = s->kind == RLX_CHAIN_STEP_WHERE ? true
                    : e                             ? enum_ok(e, s->sub, false)
                                                    : (s->sub >= 0 && s->sub < RLX_DTYPE_COUNT);
      if (!sub_ok) {
        snprintf(why, cap, "attribute %s: step %u has out-of-range sub-op %d", f->name, i, s->sub);
        return false;
      }
    }
    return true;
  }
  default: return true;
  }
}

/* ---- default detection ---- */

static bool f32_same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

bool rlx_fmt_field_is_default(const rlx_field *f, const void *attrs, const void *defaults) {
  const char *pa = (const char *)attrs + f->offset, *pd = (const char *)defaults + f->offset;
  switch (f->type) {
  case RLX_FT_I64: return *(const int64_t *)pa == *(const int64_t *)pd;
  case RLX_FT_U64: return *(const uint64_t *)pa == *(const uint64_t *)pd;
  case RLX_FT_F32: return f32_same(*(const float *)pa, *(const float *)pd);
  case RLX_FT_BOOL: return *(const bool *)pa == *(const bool *)pd;
  case RLX_FT_DTYPE:
  case RLX_FT_ENUM:
  case RLX_FT_OENUM: return *(const int32_t *)pa == *(const int32_t *)pd;
  case RLX_FT_OI64: return !((const rlx_oi64 *)pa)->has;
  case RLX_FT_OF32: return !((const rlx_of32 *)pa)->has;
  case RLX_FT_ODTYPE: return !((const rlx_odtype *)pa)->has;
  case RLX_FT_ILIST: return ((const rlx_ilist *)pa)->n == 0;
  case RLX_FT_FLIST: return ((const rlx_flist *)pa)->n == 0;
  case RLX_FT_STR: {
    const char *s = *(const char *const *)pa;
    return !s || !*s;
  }
  case RLX_FT_BYTES: return ((const rlx_bytes *)pa)->n == 0;
  case RLX_FT_GRAPH: return false; /* required: always written */
  case RLX_FT_OGRAPH: return *(rlx_graph *const *)pa == NULL;
  case RLX_FT_CHAIN: return ((const rlx_chain *)pa)->n == 0;
  }
  return false;
}

/* ---- values ---- */

static void put_chain_operand(rlx_strbuf *b, rlx_chain_operand o) {
  rlx_sb_printf(b, "%s%u", o.is_step ? "step" : "in", o.index);
}

static void put_chain(rlx_strbuf *b, const rlx_chain *ch) {
  rlx_sb_putc(b, '[');
  for (uint32_t i = 0; i < ch->n; i++) {
    const rlx_chain_step *s = &ch->steps[i];
    if (i) rlx_sb_puts(b, ", ");
    rlx_sb_printf(b, "%s(", rlx_enum_chain_step.names[s->kind]);
    const rlx_enum_desc *e = chain_sub_enum(s->kind);
    if (e)
      rlx_sb_printf(b, "%s, ", e->names[s->sub]);
    else if (s->kind == RLX_CHAIN_STEP_CAST)
      rlx_sb_printf(b, "%s, ", rlx_dtype_name((rlx_dtype)s->sub));
    const rlx_chain_operand ops[3] = {s->a, s->b, s->c};
    unsigned n = rlx_fmt_chain_arity(s->kind);
    for (unsigned k = 0; k < n; k++) {
      if (k) rlx_sb_puts(b, ", ");
      put_chain_operand(b, ops[k]);
    }
    rlx_sb_putc(b, ')');
  }
  rlx_sb_putc(b, ']');
}

static void put_bytes(rlx_strbuf *b, const rlx_bytes *by, bool brief) {
  static const char hex[] = "0123456789abcdef";
  if (brief && by->n > 16) {
    rlx_sb_printf(b, "<%zu bytes>", by->n);
    return;
  }
  rlx_sb_puts(b, "0x");
  for (size_t i = 0; i < by->n; i++) {
    char h[2] = {hex[by->p[i] >> 4], hex[by->p[i] & 15]};
    rlx_sb_put(b, h, 2);
  }
}

rlx_status rlx_fmt_put_value(rlx_strbuf *b, const rlx_field *f, const void *p, unsigned depth, bool brief) {
  switch (f->type) {
  case RLX_FT_I64: rlx_sb_printf(b, "%lld", (long long)*(const int64_t *)p); break;
  case RLX_FT_U64: rlx_sb_printf(b, "%llu", (unsigned long long)*(const uint64_t *)p); break;
  case RLX_FT_F32: rlx_fmt_put_f32(b, *(const float *)p); break;
  case RLX_FT_BOOL: rlx_sb_puts(b, *(const bool *)p ? "true" : "false"); break;
  case RLX_FT_DTYPE: rlx_sb_puts(b, rlx_dtype_name((rlx_dtype) * (const int32_t *)p)); break;
  case RLX_FT_ENUM:
  case RLX_FT_OENUM: {
    int32_t v = *(const int32_t *)p;
    rlx_sb_puts(b, v < 0 ? "none" : f->enm->names[v]);
    break;
  }
  case RLX_FT_OI64: {
    const rlx_oi64 *o = p;
    if (o->has)
      rlx_sb_printf(b, "%lld", (long long)o->v);
    else
      rlx_sb_puts(b, "none");
    break;
  }
  case RLX_FT_OF32: {
    const rlx_of32 *o = p;
    if (o->has)
      rlx_fmt_put_f32(b, o->v);
    else
      rlx_sb_puts(b, "none");
    break;
  }
  case RLX_FT_ODTYPE: {
    const rlx_odtype *o = p;
    rlx_sb_puts(b, o->has ? rlx_dtype_name((rlx_dtype)o->v) : "none");
    break;
  }
  case RLX_FT_ILIST: {
    const rlx_ilist *l = p;
    rlx_sb_putc(b, '[');
    for (uint32_t i = 0; i < l->n; i++) rlx_sb_printf(b, "%s%lld", i ? ", " : "", (long long)l->v[i]);
    rlx_sb_putc(b, ']');
    break;
  }
  case RLX_FT_FLIST: {
    const rlx_flist *l = p;
    rlx_sb_putc(b, '[');
    for (uint32_t i = 0; i < l->n; i++) {
      if (i) rlx_sb_puts(b, ", ");
      rlx_fmt_put_f32(b, l->v[i]);
    }
    rlx_sb_putc(b, ']');
    break;
  }
  case RLX_FT_STR: {
    const char *s = *(const char *const *)p;
    if (!s) s = "";
    rlx_fmt_put_string(b, s, strlen(s));
    break;
  }
  case RLX_FT_BYTES: put_bytes(b, p, brief); break;
  case RLX_FT_GRAPH:
  case RLX_FT_OGRAPH: {
    const rlx_graph *body = *(rlx_graph *const *)p;
    if (!body)
      rlx_sb_puts(b, "none");
    else if (brief)
      rlx_fmt_put_graph_name(b, body->name);
    else
      return rlx_fmt_put_graph(b, body, depth);
    break;
  }
  case RLX_FT_CHAIN: put_chain(b, p); break;
  }
  return RLX_OK;
}

/* ---- graphs ---- */

static rlx_status node_error(const rlx_graph *g, rlx_id id, const rlx_node *n, const char *why) {
  return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot print @%s %%%u (%s): %s", g->name, id, rlx_op_name(n->op), why);
}

/* A node of a graph at nesting `depth` is indented 4*depth+2 spaces; its body values are graphs
 * at depth+1 (closing brace at 4*(depth+1), their nodes 2 further in). */
static rlx_status put_node(rlx_strbuf *b, const rlx_graph *g, rlx_id id, unsigned depth) {
  const rlx_node *n = &g->nodes[id];
  char why[256];
  if ((unsigned)n->op >= RLX_OP_COUNT)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot print @%s %%%u: unknown op kind %d", g->name, id, (int)n->op);
  if (!rlx_fmt_check_shape(&n->shape, why, sizeof why)) return node_error(g, id, n, why);
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(n->op, &nf);
  for (uint32_t i = 0; i < nf; i++)
    if (!rlx_fmt_check_value(&f[i], (const char *)&n->attrs + f[i].offset, why, sizeof why))
      return node_error(g, id, n, why);

  rlx_sb_indent(b, 4 * depth + 2);
  rlx_sb_printf(b, "%%%u = %s", id, rlx_op_name(n->op));
  if (n->n_inputs) {
    rlx_sb_putc(b, '(');
    for (uint32_t i = 0; i < n->n_inputs; i++) rlx_sb_printf(b, "%s%%%u", i ? ", " : "", n->inputs[i]);
    rlx_sb_putc(b, ')');
  }
  rlx_attrs defaults;
  rlx_attrs_init(n->op, &defaults);
  bool open = false;
  for (uint32_t i = 0; i < nf; i++) {
    if (rlx_fmt_field_is_default(&f[i], &n->attrs, &defaults)) continue;
    rlx_sb_puts(b, open ? ", " : " {");
    open = true;
    rlx_sb_printf(b, "%s = ", f[i].name);
    RLX_TRY(rlx_fmt_put_value(b, &f[i], (const char *)&n->attrs + f[i].offset, depth + 1, false));
  }
  if (open) rlx_sb_putc(b, '}');
  rlx_sb_puts(b, " : ");
  rlx_fmt_put_shape(b, &n->shape);
  if (n->name) {
    rlx_sb_putc(b, ' ');
    rlx_fmt_put_string(b, n->name, strlen(n->name));
  }
  rlx_sb_putc(b, '\n');
  return RLX_OK;
}

rlx_status rlx_fmt_put_graph(rlx_strbuf *b, const rlx_graph *g, unsigned depth) {
  if (depth > RLX_FORMAT_MAX_DEPTH)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot print @%s: bodies nested deeper than %d levels", g->name,
                      RLX_FORMAT_MAX_DEPTH);
  rlx_sb_puts(b, "graph ");
  rlx_fmt_put_graph_name(b, g->name);
  rlx_sb_puts(b, " {\n");
  for (rlx_id id = 0; id < g->n_nodes; id++) RLX_TRY(put_node(b, g, id, depth));
  if (g->n_outputs) {
    rlx_sb_indent(b, 4 * depth + 2);
    rlx_sb_puts(b, "return ");
    for (uint32_t i = 0; i < g->n_outputs; i++) rlx_sb_printf(b, "%s%%%u", i ? ", " : "", g->outputs[i]);
    rlx_sb_putc(b, '\n');
  }
  rlx_sb_indent(b, 4 * depth);
  rlx_sb_putc(b, '}');
  return RLX_OK;
}

rlx_status rlx_text_print(const rlx_graph *g, const rlx_allocator *al, char **out, size_t *len) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_text_print: graph and out must not be NULL");
  *out = NULL;
  if (len) *len = 0;
  rlx_strbuf b;
  rlx_sb_init(&b, al);
  rlx_status s = rlx_fmt_put_graph(&b, g, 0);
  rlx_sb_putc(&b, '\n');
  if (s) {
    rlx_sb_free(&b);
    return s;
  }
  return rlx_sb_finish(&b, out, len);
}
