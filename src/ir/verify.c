/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Verifier: structure, generic attribute ranges, op rules (shape inference) and bodies. Collects
 * every problem (up to a cap) into one message. */
#include <stdio.h>
#include <string.h>

#include "infer_checked.h"
#include "ir_internal.h"
#include "rlx/verify.h"

#define MAX_REPORTED 32

typedef struct report {
  char buf[12288];
  size_t len;
  unsigned count;
  rlx_status first;
} report;

static void add_problem(report *r, rlx_status code, const char *path, const rlx_graph *g, uint32_t id,
                        const char *msg) {
  if (!r->count) r->first = code;
  r->count++;
  if (r->count > MAX_REPORTED) return;
  const rlx_node *n = rlx_graph_node(g, id);
  int k;
  if (n)
    k = snprintf(r->buf + r->len, sizeof r->buf - r->len, "%s%s%%%u%s%s%s (%s): %s", r->len ? "\n" : "", path, id,
                 n->name ? " \"" : "", n->name ? n->name : "", n->name ? "\"" : "", rlx_op_name(n->op), msg);
  else
    k = snprintf(r->buf + r->len, sizeof r->buf - r->len, "%s%s%s", r->len ? "\n" : "", path, msg);
  if (k > 0) r->len = (size_t)k + r->len < sizeof r->buf ? r->len + (size_t)k : sizeof r->buf - 1;
}

static bool check_chain(const rlx_chain *ch, uint32_t n_operands, char *msg, size_t cap) {
  for (uint32_t i = 0; i < ch->n; i++) {
    const rlx_chain_step *s = &ch->steps[i];
    if (s->kind < 0 || s->kind >= RLX_CHAIN_STEP_COUNT) {
      snprintf(msg, cap, "attribute chain: step %u has unknown kind %d", i, s->kind);
      return false;
    }
    uint32_t used = s->kind == RLX_CHAIN_STEP_WHERE                                           ? 3
                    : (s->kind == RLX_CHAIN_STEP_BINARY || s->kind == RLX_CHAIN_STEP_COMPARE) ? 2
                                                                                              : 1;
    const rlx_chain_operand *ops[3] = {&s->a, &s->b, &s->c};
    for (uint32_t k = 0; k < used; k++) {
      if (ops[k]->is_step ? ops[k]->index >= i : ops[k]->index >= n_operands) {
        snprintf(msg, cap, "attribute chain: step %u operand %u refers to %s %u, which %s", i, k,
                 ops[k]->is_step ? "step" : "input", ops[k]->index,
                 ops[k]->is_step ? "is not an earlier step" : "is not a region operand");
        return false;
      }
    }
    int32_t lim = s->kind == RLX_CHAIN_STEP_ACTIVATION ? RLX_ACT_COUNT
                  : s->kind == RLX_CHAIN_STEP_CAST     ? RLX_DTYPE_COUNT
                  : s->kind == RLX_CHAIN_STEP_BINARY   ? RLX_BINOP_COUNT
                  : s->kind == RLX_CHAIN_STEP_COMPARE  ? RLX_CMP_COUNT
                                                       : 1;
    if (s->kind != RLX_CHAIN_STEP_WHERE && (s->sub < 0 || s->sub >= lim)) {
      snprintf(msg, cap, "attribute chain: step %u has out-of-range sub-op %d", i, s->sub);
      return false;
    }
  }
  return true;
}

/* Generic checks every attribute gets from its descriptor. */
static bool check_fields(const rlx_graph *g, const rlx_node *n, char *msg, size_t cap) {
  uint32_t cnt;
  const rlx_field *f = rlx_op_fields(n->op, &cnt);
  for (uint32_t i = 0; i < cnt; i++) {
    const char *p = (const char *)&n->attrs + f[i].offset;
    switch (f[i].type) {
    case RLX_FT_ENUM:
    case RLX_FT_OENUM: {
      int32_t v = *(const int32_t *)p;
      int32_t lo = f[i].type == RLX_FT_OENUM ? -1 : 0;
      if (v < lo || v >= f[i].enm->count) {
        snprintf(msg, cap, "attribute %s: %d is not a %s", f[i].name, v, f[i].enm->type_name);
        return false;
      }
      break;
    }
    case RLX_FT_DTYPE: {
      int32_t v = *(const int32_t *)p;
      if (v < 0 || v >= RLX_DTYPE_COUNT) {
        snprintf(msg, cap, "attribute %s: %d is not a dtype", f[i].name, v);
        return false;
      }
      break;
    }
    case RLX_FT_ODTYPE: {
      const rlx_odtype *o = (const rlx_odtype *)p;
      if (o->has && (o->v < 0 || o->v >= RLX_DTYPE_COUNT)) {
        snprintf(msg, cap, "attribute %s: %d is not a dtype", f[i].name, o->v);
        return false;
      }
      break;
    }
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: {
      const rlx_graph *b = *(rlx_graph *const *)p;
      if (!b && f[i].type == RLX_FT_GRAPH) {
        snprintf(msg, cap, "attribute %s: body graph missing", f[i].name);
        return false;
      }
      if (b && !rlx_graph_owns_child(g, b)) {
        snprintf(msg, cap, "attribute %s: body @%s is not a child of @%s", f[i].name, b->name, g->name);
        return false;
      }
      if (b && !b->n_outputs) {
        snprintf(msg, cap, "attribute %s: body @%s has no outputs", f[i].name, b->name);
        return false;
      }
      break;
    }
    case RLX_FT_CHAIN:
      if (!check_chain((const rlx_chain *)p, n->n_inputs, msg, cap)) return false;
      break;
    default: break;
    }
  }
  return true;
}

/* A static shape whose element count or byte size does not fit in int64 can never be allocated:
 * the compile's memory plan would reject it, so the verifier does (with the numbers). */
static bool check_size(const rlx_shape *s, const char *which, char *msg, size_t cap) {
  if (!rlx_shape_is_static(s)) return true;
  int64_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) {
    if (!ck_mul(n, s->dims[i], &n)) {
      snprintf(msg, cap, "%s shape %s: the element count overflows int64 at axis %u (dim %lld)", which,
               rlx_fmt_shape(s), i, (long long)s->dims[i]);
      return false;
    }
  }
  int64_t esz = (int64_t)rlx_dtype_size((rlx_dtype)s->dtype), nb;
  if (!ck_mul(n, esz, &nb)) {
    snprintf(msg, cap, "%s shape %s: %lld elements of %lld bytes; the byte size overflows int64", which,
             rlx_fmt_shape(s), (long long)n, (long long)esz);
    return false;
  }
  return true;
}

static void verify_graph(const rlx_graph *g, const char *path, report *r, unsigned depth) {
  char msg[2048];
  if (depth > 64) {
    add_problem(r, RLX_ERR_VERIFY, path, g, RLX_NO_ID, "bodies nested deeper than 64 levels");
    return;
  }
  for (uint32_t id = 0; id < g->n_nodes; id++) {
    const rlx_node *n = &g->nodes[id];
    if ((unsigned)n->op >= RLX_OP_COUNT) {
      snprintf(msg, sizeof msg, "%s%%%u: unknown op kind %d", path, id, (int)n->op);
      add_problem(r, RLX_ERR_VERIFY, "", g, RLX_NO_ID, msg);
      continue;
    }
    uint32_t lo = rlx_op_min_inputs(n->op), hi = rlx_op_max_inputs(n->op);
    if (n->n_inputs < lo || n->n_inputs > hi) {
      char hi_text[16] = "any";
      if (hi != RLX_ARITY_VARIADIC) snprintf(hi_text, sizeof hi_text, "%u", hi);
      snprintf(msg, sizeof msg, "has %u operands; %s takes %u..%s", n->n_inputs, rlx_op_name(n->op), lo, hi_text);
      add_problem(r, RLX_ERR_VERIFY, path, g, id, msg);
      continue;
    }
    bool ok = true;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
      if (n->inputs[i] >= id) {
        snprintf(msg, sizeof msg, "operand %u is %%%u, which is not defined before this node", i, n->inputs[i]);
        add_problem(r, RLX_ERR_VERIFY, path, g, id, msg);
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (n->shape.rank > RLX_MAX_RANK || n->shape.dtype >= RLX_DTYPE_COUNT) {
      add_problem(r, RLX_ERR_VERIFY, path, g, id, "declared shape is malformed");
      continue;
    }
    if (!check_size(&n->shape, "declared", msg, sizeof msg)) {
      add_problem(r, RLX_ERR_OVERFLOW, path, g, id, msg);
      continue;
    }
    if (!check_fields(g, n, msg, sizeof msg)) {
      add_problem(r, RLX_ERR_VERIFY, path, g, id, msg);
      continue;
    }
    if (n->op == RLX_OP_Input || n->op == RLX_OP_Param) {
      const char *nm = n->op == RLX_OP_Input ? n->attrs.Input.name : n->attrs.Param.name;
      if (!nm || !*nm) {
        add_problem(r, RLX_ERR_VERIFY, path, g, id, "attribute name: a leaf needs a binding name");
        continue;
      }
      rlx_id first = rlx_graph_find_leaf(g, n->op, nm);
      if (first != id) {
        snprintf(msg, sizeof msg, "attribute name: \"%s\" is already bound by %%%u", nm, first);
        add_problem(r, RLX_ERR_VERIFY, path, g, id, msg);
        continue;
      }
    }
    if (n->op == RLX_OP_Constant) {
      size_t nb;
      rlx_status s = rlx_shape_nbytes(&n->shape, &nb);
      if (s || nb != n->attrs.Constant.data.n) {
        if (s)
          snprintf(msg, sizeof msg, "attribute data: %s", rlx_last_error());
        else
          snprintf(msg, sizeof msg, "attribute data: has %zu bytes; shape %s needs %zu", n->attrs.Constant.data.n,
                   rlx_fmt_shape(&n->shape), nb);
        add_problem(r, s ? s : RLX_ERR_VERIFY, path, g, id, msg);
        continue;
      }
    }
    const rlx_shape *in[RLX_INFER_MAX_INPUTS];
    if (n->n_inputs > RLX_INFER_MAX_INPUTS) {
      add_problem(r, RLX_ERR_UNSUPPORTED, path, g, id, "too many operands");
      continue;
    }
    for (uint32_t i = 0; i < n->n_inputs; i++) in[i] = &g->nodes[n->inputs[i]].shape;
    rlx_shape inferred;
    rlx_status s = rlx_infer(g, n->op, in, n->n_inputs, &n->attrs, &n->shape, &inferred);
    if (s) {
      snprintf(msg, sizeof msg, "%s", rlx_last_error());
      add_problem(r, s, path, g, id, msg);
      continue;
    }
    if (!check_size(&inferred, "inferred", msg, sizeof msg)) {
      add_problem(r, RLX_ERR_OVERFLOW, path, g, id, msg);
      continue;
    }
    if (!rlx_shape_compatible(&inferred, &n->shape)) {
      snprintf(msg, sizeof msg, "declared shape %s differs from inferred %s", rlx_fmt_shape(&n->shape),
               rlx_fmt_shape(&inferred));
      add_problem(r, RLX_ERR_SHAPE, path, g, id, msg);
    }
  }
  for (uint32_t i = 0; i < g->n_outputs; i++) {
    if (g->outputs[i] >= g->n_nodes) {
      snprintf(msg, sizeof msg, "%soutput %u refers to %%%u, which does not exist", path, i, g->outputs[i]);
      add_problem(r, RLX_ERR_VERIFY, "", g, RLX_NO_ID, msg);
    }
  }
  for (uint32_t c = 0; c < g->n_children; c++) {
    char sub[512];
    if (snprintf(sub, sizeof sub, "%s@%s/", path, g->children[c]->name) < 0) sub[0] = 0;
    verify_graph(g->children[c], sub, r, depth + 1);
  }
}

rlx_status rlx_verify(const rlx_graph *g) {
  if (!g) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_verify: graph is NULL");
  report *r = g->al.alloc(g->al.ctx, sizeof *r);
  if (!r) return rlx_errorf(RLX_ERR_OOM, "out of memory while verifying");
  memset(r, 0, sizeof *r);
  char root[300];
  snprintf(root, sizeof root, "@%s/", g->name);
  verify_graph(g, root, r, 0);
  rlx_status s = RLX_OK;
  if (r->count) {
    s = rlx_errorf(r->first, "graph @%s has %u problem%s:\n%s%s", g->name, r->count, r->count == 1 ? "" : "s", r->buf,
                   r->count > MAX_REPORTED ? "\n..." : "");
  }
  g->al.free(g->al.ctx, r);
  return s;
}

rlx_status rlx_infer_shape(const rlx_graph *g, rlx_op op, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                           const rlx_shape *declared, rlx_shape *out) {
  if ((unsigned)op >= RLX_OP_COUNT) return rlx_errorf(RLX_ERR_INVALID_ARG, "unknown op %d", (int)op);
  if (n_inputs > RLX_INFER_MAX_INPUTS) return rlx_errorf(RLX_ERR_UNSUPPORTED, "too many operands");
  const rlx_shape *in[RLX_INFER_MAX_INPUTS];
  for (uint32_t i = 0; i < n_inputs; i++) {
    if (inputs[i] >= g->n_nodes)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "operand %u: %%%u does not exist", i, inputs[i]);
    in[i] = &g->nodes[inputs[i]].shape;
  }
  rlx_attrs a;
  if (attrs) {
    memset(&a, 0, sizeof a);
    memcpy(&a, attrs, rlx_op_attrs_size(op));
  } else {
    rlx_attrs_init(op, &a);
  }
  return rlx_infer(g, op, in, n_inputs, &a, declared, out);
}
