/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Graphviz rendering: one box per node labelled with id, op, name, non-default attributes and
 * shape; edges operand -> user; bodies as dashed clusters whose outputs feed the owning node;
 * graph outputs as ellipses. */
#include <stdio.h>
#include <string.h>

#include "format_internal.h"

#define MAX_VALUE_CHARS 48

typedef struct dot_ctx {
  rlx_strbuf *out;
  rlx_strbuf label; /* scratch for one label */
  unsigned next_graph;
} dot_ctx;

/* Appends `s` inside a dot double-quoted string (newlines become \n). */
static void put_escaped(rlx_strbuf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '"' || c == '\\') {
      rlx_sb_putc(b, '\\');
      rlx_sb_putc(b, c);
    } else if (c == '\n') {
      rlx_sb_puts(b, "\\n");
    } else {
      rlx_sb_putc(b, c);
    }
  }
}

/* Builds the label of node `id` into ctx->label (plain text, escaped later). */
static rlx_status build_label(dot_ctx *c, const rlx_graph *g, rlx_id id) {
  const rlx_node *n = &g->nodes[id];
  rlx_strbuf *L = &c->label;
  char why[256];
  L->len = 0;
  if ((unsigned)n->op >= RLX_OP_COUNT)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot render @%s %%%u: unknown op kind %d", g->name, id, (int)n->op);
  if (!rlx_fmt_check_shape(&n->shape, why, sizeof why))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot render @%s %%%u (%s): %s", g->name, id, rlx_op_name(n->op), why);
  rlx_sb_printf(L, "%%%u %s", id, rlx_op_name(n->op));
  if (n->name) {
    rlx_sb_putc(L, ' ');
    rlx_fmt_put_string(L, n->name, strlen(n->name));
  }
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(n->op, &nf);
  rlx_attrs defaults;
  rlx_attrs_init(n->op, &defaults);
  for (uint32_t i = 0; i < nf; i++) {
    const void *p = (const char *)&n->attrs + f[i].offset;
    if (!rlx_fmt_check_value(&f[i], p, why, sizeof why))
      return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot render @%s %%%u (%s): %s", g->name, id, rlx_op_name(n->op), why);
    if (rlx_fmt_field_is_default(&f[i], &n->attrs, &defaults)) continue;
    rlx_sb_printf(L, "\n%s = ", f[i].name);
    size_t start = L->len;
    RLX_TRY(rlx_fmt_put_value(L, &f[i], p, 0, true));
    if (!L->failed && L->len - start > MAX_VALUE_CHARS) {
      L->len = start + MAX_VALUE_CHARS - 3;
      rlx_sb_puts(L, "...");
    }
  }
  rlx_sb_putc(L, '\n');
  rlx_fmt_put_shape(L, &n->shape);
  return RLX_OK;
}

static rlx_status emit_graph(dot_ctx *c, const rlx_graph *g, unsigned gid, unsigned depth) {
  rlx_strbuf *b = c->out;
  unsigned ind = 2 * (depth + 1);
  if (depth > RLX_FORMAT_MAX_DEPTH)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "cannot render @%s: bodies nested deeper than %d levels", g->name,
                      RLX_FORMAT_MAX_DEPTH);
  for (rlx_id id = 0; id < g->n_nodes; id++) {
    RLX_TRY(build_label(c, g, id));
    if (c->label.failed) return rlx_errorf(RLX_ERR_OOM, "out of memory while rendering dot");
    rlx_sb_indent(b, ind);
    rlx_sb_printf(b, "g%un%u [label=\"", gid, id);
    put_escaped(b, c->label.p, c->label.len);
    rlx_sb_puts(b, "\"];\n");
  }
  for (rlx_id id = 0; id < g->n_nodes; id++) {
    const rlx_node *n = &g->nodes[id];
    for (uint32_t i = 0; i < n->n_inputs; i++) {
      if (n->inputs[i] >= g->n_nodes) continue; /* dangling operand of an unverified graph */
      rlx_sb_indent(b, ind);
      rlx_sb_printf(b, "g%un%u -> g%un%u;\n", gid, n->inputs[i], gid, id);
    }
  }
  for (uint32_t i = 0; i < g->n_outputs; i++) {
    rlx_sb_indent(b, ind);
    rlx_sb_printf(b, "g%uout%u [shape=ellipse, label=\"output %u\"];\n", gid, i, i);
    if (g->outputs[i] < g->n_nodes) {
      rlx_sb_indent(b, ind);
      rlx_sb_printf(b, "g%un%u -> g%uout%u;\n", gid, g->outputs[i], gid, i);
    }
  }
  /* bodies */
  for (rlx_id id = 0; id < g->n_nodes; id++) {
    const rlx_node *n = &g->nodes[id];
    uint32_t nf;
    const rlx_field *f = rlx_op_fields(n->op, &nf);
    for (uint32_t k = 0; k < nf; k++) {
      if (f[k].type != RLX_FT_GRAPH && f[k].type != RLX_FT_OGRAPH) continue;
      const rlx_graph *body = *(rlx_graph *const *)((const char *)&n->attrs + f[k].offset);
      if (!body) continue;
      unsigned bid = c->next_graph++;
      rlx_sb_indent(b, ind);
      rlx_sb_printf(b, "subgraph cluster_g%u {\n", bid);
      rlx_sb_indent(b, ind + 2);
      rlx_sb_puts(b, "style=dashed;\n");
      rlx_sb_indent(b, ind + 2);
      c->label.len = 0;
      rlx_fmt_put_graph_name(&c->label, body->name);
      rlx_sb_printf(&c->label, " (%s of %%%u)", f[k].name, id);
      rlx_sb_puts(b, "label=\"");
      put_escaped(b, c->label.p ? c->label.p : "", c->label.len);
      rlx_sb_puts(b, "\";\n");
      RLX_TRY(emit_graph(c, body, bid, depth + 1));
      rlx_sb_indent(b, ind);
      rlx_sb_puts(b, "}\n");
      for (uint32_t i = 0; i < body->n_outputs; i++) {
        rlx_sb_indent(b, ind);
        rlx_sb_printf(b, "g%uout%u -> g%un%u [style=dashed, label=\"%s\"];\n", bid, i, gid, id, f[k].name);
      }
    }
  }
  return RLX_OK;
}

rlx_status rlx_graph_to_dot(const rlx_graph *g, const rlx_allocator *al, char **out, size_t *len) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_graph_to_dot: graph and out must not be NULL");
  *out = NULL;
  if (len) *len = 0;
  rlx_strbuf b;
  rlx_sb_init(&b, al);
  dot_ctx c = {&b, {0}, 1};
  rlx_sb_init(&c.label, al);
  rlx_sb_puts(&b, "digraph \"");
  put_escaped(&b, g->name, strlen(g->name));
  rlx_sb_puts(&b, "\" {\n  node [shape=box, fontname=\"monospace\"];\n  edge [fontname=\"monospace\"];\n");
  rlx_status s = emit_graph(&c, g, 0, 0);
  rlx_sb_puts(&b, "}\n");
  bool label_failed = c.label.failed;
  rlx_sb_free(&c.label);
  if (!s && label_failed) s = rlx_errorf(RLX_ERR_OOM, "out of memory while rendering dot");
  if (s) {
    rlx_sb_free(&b);
    return s;
  }
  return rlx_sb_finish(&b, out, len);
}
