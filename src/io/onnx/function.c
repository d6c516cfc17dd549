/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Model-local functions (ModelProto.functions, IR 8+), inlined at each call: the body's nodes are
 * imported into a scope of their own (a function sees only its formal inputs) in the caller's RLX
 * graph, with the function's default-domain opset, formal inputs bound to the call's inputs
 * (missing optional inputs become omitted inputs), and attribute references (`ref_attr_name`)
 * replaced by the call's attributes. check.c has validated the bodies (names, attribute types,
 * topological order). An attribute reference the call leaves unset takes the function's default
 * (FunctionProto.attribute_proto, newer than Debian's onnx.proto: read here from the unknown
 * fields, unpacked with the same checks as the model), else the op's own default. Not inlined (a
 * gap): bodies with subgraph attributes, overloaded functions (same name and domain; the
 * `overload` field is newer too), and functions nested more than OI_MAX_FUNCTION_DEPTH deep (a
 * recursive function). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

#define OI_MAX_FUNCTION_DEPTH 16
#define ATTRIBUTE_PROTO_FIELD 11 /* FunctionProto.attribute_proto (onnx 1.13+) */

static const char *str(const char *s) { return s ? s : ""; }
static bool default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

const Onnx__FunctionProto *oi_model_function(const oi_imp *m, const Onnx__NodeProto *np) {
  for (size_t k = 0; k < m->model->n_functions; k++) {
    const Onnx__FunctionProto *f = m->model->functions[k];
    if (strcmp(str(f->name), str(np->op_type)) == 0 && strcmp(str(f->domain), str(np->domain)) == 0) return f;
  }
  return NULL;
}

#define MAX_DEFAULTS 64

typedef struct fn_defaults {
  oi_pb pb[MAX_DEFAULTS];
  uint32_t n;
} fn_defaults;

static void defaults_free(fn_defaults *d) {
  for (uint32_t i = 0; i < d->n; i++) oi_pb_free(&d->pb[i]);
  d->n = 0;
}

/* Unpacks the attribute_proto entries of f (unknown field 11: a length, then an AttributeProto). */
static rlx_status defaults_read(const oi_imp *m, const Onnx__FunctionProto *f, fn_defaults *d) {
  d->n = 0;
  for (size_t i = 0; i < f->base.n_unknown_fields; i++) {
    const ProtobufCMessageUnknownField *u = &f->base.unknown_fields[i];
    if (u->tag != ATTRIBUTE_PROTO_FIELD) continue;
    if (u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
      return rlx_errorf(RLX_ERR_FORMAT, "model-local function \"%s\": field attribute_proto has wire type %d",
                        str(f->name), (int)u->wire_type);
    if (d->n == MAX_DEFAULTS)
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "model-local function \"%s\" declares more than %d default attributes",
                        str(f->name), MAX_DEFAULTS);
    uint64_t len = 0;
    size_t k = 0;
    for (unsigned shift = 0; k < u->len && k < 10; shift += 7) { /* the length varint */
      len |= (uint64_t)(u->data[k] & 0x7f) << shift;
      if (!(u->data[k++] & 0x80)) break;
    }
    if (k == 0 || (u->data[k - 1] & 0x80) || len != u->len - k)
      return rlx_errorf(RLX_ERR_FORMAT, "model-local function \"%s\": a malformed attribute_proto entry", str(f->name));
    char what[300];
    snprintf(what, sizeof what, "model-local function \"%.200s\": attribute_proto", str(f->name));
    RLX_TRY(oi_pb_unpack(&d->pb[d->n], &onnx__attribute_proto__descriptor, u->data + k, (size_t)len, m->al, what));
    d->n++;
    const Onnx__AttributeProto *at = (const Onnx__AttributeProto *)d->pb[d->n - 1].msg;
    rlx_shape sh;
    if (!at->name || !at->name[0] || oi_attr_type(at) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
      return rlx_errorf(RLX_ERR_FORMAT, "%s: an entry without a name or a value", what);
    if (at->g || at->n_graphs)
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s \"%s\" is a graph; graph attributes of functions are not supported",
                        what, at->name);
    rlx_status st = at->t ? oi_tensor_check(at->t, what, &sh) : RLX_OK;
    for (size_t t = 0; t < at->n_tensors && (st == RLX_OK || st == RLX_ERR_UNSUPPORTED); t++)
      st = oi_tensor_check(at->tensors[t], what, &sh);
    if (st != RLX_OK && st != RLX_ERR_UNSUPPORTED) return st;
  }
  return RLX_OK;
}

static const Onnx__AttributeProto *default_of(const fn_defaults *d, const char *name) {
  for (uint32_t i = 0; i < d->n; i++) {
    const Onnx__AttributeProto *at = (const Onnx__AttributeProto *)d->pb[i].msg;
    if (strcmp(str(at->name), name) == 0) return at;
  }
  return NULL;
}

static rlx_status why_not(char *why, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static rlx_status why_not(char *why, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(why, cap, fmt, ap) < 0 && cap) why[0] = 0;
  va_end(ap);
  return RLX_ERR_UNSUPPORTED;
}

/* The body node n as called from np: omitted formal inputs become "", attribute references take
 * the call's attributes. The copy lives in arena a. */
static rlx_status instantiate(rlx_arena *a, const Onnx__NodeProto *np, const Onnx__FunctionProto *f,
                              const oi_map *unbound, const fn_defaults *defs, const Onnx__NodeProto *n,
                              Onnx__NodeProto **out, char *why, size_t cap) {
  Onnx__NodeProto *cp = rlx_arena_alloc(a, sizeof *cp, 8);
  char **in = rlx_arena_alloc(a, (n->n_input + 1) * sizeof *in, 8);
  Onnx__AttributeProto **attrs = rlx_arena_alloc(a, (n->n_attribute + 1) * sizeof *attrs, 8);
  if (!cp || !in || !attrs) return rlx_errorf(RLX_ERR_OOM, "out of memory inlining a function");
  *cp = *n;
  for (size_t j = 0; j < n->n_input; j++)
    in[j] = n->input[j][0] && oi_map_get(unbound, n->input[j], NULL) ? "" : n->input[j];
  cp->input = in;
  size_t na = 0;
  for (size_t j = 0; j < n->n_attribute; j++) {
    const Onnx__AttributeProto *at = n->attribute[j];
    if (at->g || at->n_graphs)
      return why_not(why, cap,
                     "function \"%s\": node %s has a subgraph attribute; functions with subgraphs are not inlined",
                     str(f->name), str(n->op_type));
    if (!at->ref_attr_name || !at->ref_attr_name[0]) {
      attrs[na++] = (Onnx__AttributeProto *)at;
      continue;
    }
    const Onnx__AttributeProto *given = NULL;
    for (size_t k = 0; k < np->n_attribute && !given; k++)
      if (strcmp(str(np->attribute[k]->name), at->ref_attr_name) == 0) given = np->attribute[k];
    if (!given) given = default_of(defs, at->ref_attr_name);
    if (!given) continue; /* unset, no function default: the op's own default */
    Onnx__AttributeProto *ca = rlx_arena_alloc(a, sizeof *ca, 8);
    if (!ca) return rlx_errorf(RLX_ERR_OOM, "out of memory inlining a function");
    *ca = *given;
    ca->name = at->name;
    attrs[na++] = ca;
  }
  cp->attribute = attrs;
  cp->n_attribute = na;
  *out = cp;
  return RLX_OK;
}

rlx_status oi_inline_function(oi_scope *s, const Onnx__NodeProto *np, const Onnx__FunctionProto *f, char *why,
                              size_t cap) {
  oi_imp *m = s->m;
  if (np->n_input > f->n_input || np->n_output > f->n_output)
    return rlx_errorf(RLX_ERR_FORMAT,
                      "call of model-local function \"%s\": %zu inputs and %zu outputs given; it has %zu and %zu",
                      str(f->name), np->n_input, np->n_output, f->n_input, f->n_output);
  for (size_t k = 0; k < m->model->n_functions; k++) { /* overloads (IR 10) share name and domain */
    const Onnx__FunctionProto *g = m->model->functions[k];
    if (g != f && strcmp(str(g->name), str(f->name)) == 0 && strcmp(str(g->domain), str(f->domain)) == 0)
      return why_not(
          why, cap,
          "several model-local functions are named \"%s\" (overloads, which Debian's onnx.proto cannot tell apart)",
          str(f->name));
  }
  if (m->fn_depth >= OI_MAX_FUNCTION_DEPTH)
    return why_not(why, cap, "model-local functions nested more than %d deep (a recursive function?)",
                   OI_MAX_FUNCTION_DEPTH);
  int64_t saved_opset = m->opset;
  for (size_t i = 0; i < f->n_opset_import; i++)
    if (default_domain(f->opset_import[i]->domain) && f->opset_import[i]->has_version)
      m->opset = f->opset_import[i]->version;
  rlx_arena a = {0};
  a.al = m->al;
  fn_defaults defs;
  rlx_status dst = defaults_read(m, f, &defs);
  if (dst != RLX_OK) {
    defaults_free(&defs);
    m->opset = saved_opset;
    if (dst == RLX_ERR_UNSUPPORTED) return why_not(why, cap, "%s", rlx_last_error());
    return dst;
  }
  oi_scope fs;
  oi_scope_init(&fs, m, s->g, NULL, false, s->depth);
  oi_map unbound;
  oi_map_init(&unbound, m->al, false);
  rlx_status st = RLX_OK;
  for (size_t k = 0; k < f->n_input && st == RLX_OK; k++) {
    if (k < np->n_input && np->input[k][0]) {
      const oi_value *v = oi_scope_get(s, np->input[k]);
      if (!v)
        st = rlx_errorf(RLX_ERR_INTERNAL, "function call input \"%s\" is not defined", np->input[k]);
      else
        st = oi_scope_set_value(&fs, f->input[k], v);
    } else {
      st = oi_map_put(&unbound, f->input[k], 1);
    }
  }
  m->fn_depth++;
  for (size_t i = 0; i < f->n_node && st == RLX_OK; i++) {
    Onnx__NodeProto *cp = NULL;
    st = instantiate(&a, np, f, &unbound, &defs, f->node[i], &cp, why, cap);
    if (st == RLX_OK) st = oi_import_node(&fs, cp);
  }
  m->fn_depth--;
  for (size_t k = 0; k < np->n_output && st == RLX_OK; k++) {
    if (!np->output[k][0]) continue;
    const oi_value *v = oi_scope_get(&fs, f->output[k]);
    if (!v)
      st = rlx_errorf(RLX_ERR_FORMAT, "model-local function \"%s\" does not define its output \"%s\"", str(f->name),
                      f->output[k]);
    else
      st = oi_scope_set_value(s, np->output[k], v);
  }
  m->opset = saved_opset;
  oi_map_free(&unbound);
  oi_scope_free(&fs);
  rlx_arena_release(&a);
  defaults_free(&defs);
  return st;
}
