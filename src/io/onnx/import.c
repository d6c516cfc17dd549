/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The ONNX importer's driver: unpack + validate, bind graph inputs (symbolic dims and known input
 * values from the options), turn initializers into Constants or Params, import every node in
 * topological order through the op table, collect every gap (unsupported op / opset / domain /
 * dtype / attribute value) into one report, name and check the outputs. */
#include "rlx/verify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "passes/passes.h"
#include "strbuf.h"

static const char *str(const char *s) { return s ? s : ""; }

void rlx_onnx_options_init(rlx_onnx_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->initializers_as_constants = true;
}

void rlx_onnx_weights_free(rlx_onnx_weights *w, const rlx_allocator *al) {
  if (!w) return;
  if (!al) al = rlx_default_allocator();
  for (uint32_t i = 0; i < w->n; i++) {
    al->free(al->ctx, (void *)w->v[i].name);
    al->free(al->ctx, w->v[i].tensor.data);
  }
  al->free(al->ctx, w->v);
  w->v = NULL;
  w->n = 0;
}

/* ======================================================================================
 * Scopes
 * ====================================================================================== */

void oi_scope_init(oi_scope *s, oi_imp *m, rlx_graph *g, oi_scope *parent, bool inline_parent, uint32_t depth) {
  memset(s, 0, sizeof *s);
  s->m = m;
  s->g = g;
  s->parent = parent;
  s->inline_parent = inline_parent;
  s->depth = depth;
  oi_map_init(&s->names, m->al, false);
}

void oi_scope_free(oi_scope *s) {
  oi_map_free(&s->names);
  if (s->vals) s->m->al->free(s->m->al->ctx, s->vals);
  s->vals = NULL;
}

rlx_status oi_scope_set(oi_scope *s, const char *name, rlx_id id, uint8_t state, const rlx_tensor *hint) {
  oi_value v = {.id = id, .state = state, .kind = OI_KIND_TENSOR, .hint = hint};
  return oi_scope_set_value(s, name, &v);
}

rlx_status oi_scope_set_value(oi_scope *s, const char *name, const oi_value *v) {
  uint64_t idx;
  if (oi_map_get(&s->names, name, &idx)) {
    s->vals[idx] = *v;
    return RLX_OK;
  }
  if (s->n_vals == s->cap_vals) {
    uint32_t cap = s->cap_vals ? s->cap_vals * 2 : 32;
    oi_value *nv = s->m->al->alloc(s->m->al->ctx, (size_t)cap * sizeof *nv);
    if (!nv) return rlx_errorf(RLX_ERR_OOM, "out of memory for the value table");
    if (s->n_vals) memcpy(nv, s->vals, s->n_vals * sizeof *nv);
    s->m->al->free(s->m->al->ctx, s->vals);
    s->vals = nv;
    s->cap_vals = cap;
  }
  s->vals[s->n_vals] = *v;
  RLX_TRY(oi_map_put(&s->names, name, s->n_vals));
  s->n_vals++;
  return RLX_OK;
}

const oi_value *oi_scope_get(const oi_scope *s, const char *name) {
  for (; s; s = s->inline_parent ? s->parent : NULL) {
    uint64_t idx;
    if (oi_map_get(&s->names, name, &idx)) return &s->vals[idx];
  }
  return NULL;
}

rlx_status oi_seq_value(oi_imp *m, const rlx_id *ids, uint32_t n, uint8_t elem, oi_value *out) {
  memset(out, 0, sizeof *out);
  out->id = RLX_NO_ID;
  out->kind = OI_KIND_SEQ;
  out->elem = elem;
  out->n_seq = n;
  if (n) {
    rlx_id *copy = rlx_arena_alloc(&m->seqs, (size_t)n * sizeof *copy, 8);
    if (!copy) return rlx_errorf(RLX_ERR_OOM, "out of memory for a sequence of %u elements", n);
    memcpy(copy, ids, (size_t)n * sizeof *copy);
    out->seq = copy;
  }
  return RLX_OK;
}

const char *oi_kind_name(const oi_value *v) {
  if (v->kind == OI_KIND_NONE) return "empty optional";
  if (v->optional) return "optional";
  return v->kind == OI_KIND_SEQ ? "sequence" : "tensor";
}

/* ======================================================================================
 * Gaps
 * ====================================================================================== */

rlx_status oi_gap_add(oi_imp *m, const Onnx__NodeProto *np, const char *reason) {
  const rlx_allocator *al = m->al;
  char label[400];
  if (np)
    oi_node_label(np, label, sizeof label);
  else
    snprintf(label, sizeof label, "model");
  for (uint32_t i = 0; i < m->n_gaps; i++)
    if (strcmp(m->gaps[i].key, reason) == 0) {
      oi_gap *g = &m->gaps[i];
      g->count++;
      if (g->count <= 3) {
        size_t a = strlen(g->nodes), b = strlen(label);
        char *nn = al->alloc(al->ctx, a + b + 3);
        if (!nn) return rlx_errorf(RLX_ERR_OOM, "out of memory recording gaps");
        memcpy(nn, g->nodes, a);
        memcpy(nn + a, ", ", 2);
        memcpy(nn + a + 2, label, b + 1);
        al->free(al->ctx, g->nodes);
        g->nodes = nn;
      }
      return RLX_OK;
    }
  if (m->n_gaps == m->cap_gaps) {
    uint32_t cap = m->cap_gaps ? m->cap_gaps * 2 : 16;
    oi_gap *ng = al->alloc(al->ctx, (size_t)cap * sizeof *ng);
    if (!ng) return rlx_errorf(RLX_ERR_OOM, "out of memory recording gaps");
    if (m->n_gaps) memcpy(ng, m->gaps, m->n_gaps * sizeof *ng);
    al->free(al->ctx, m->gaps);
    m->gaps = ng;
    m->cap_gaps = cap;
  }
  size_t rl = strlen(reason), ll = strlen(label);
  char *k = al->alloc(al->ctx, rl + 1), *n = al->alloc(al->ctx, ll + 1);
  if (!k || !n) {
    al->free(al->ctx, k);
    al->free(al->ctx, n);
    return rlx_errorf(RLX_ERR_OOM, "out of memory recording gaps");
  }
  memcpy(k, reason, rl + 1);
  memcpy(n, label, ll + 1);
  m->gaps[m->n_gaps++] = (oi_gap){k, n, 1};
  return RLX_OK;
}

static void gaps_free(oi_imp *m) {
  for (uint32_t i = 0; i < m->n_gaps; i++) {
    m->al->free(m->al->ctx, m->gaps[i].key);
    m->al->free(m->al->ctx, m->gaps[i].nodes);
  }
  m->al->free(m->al->ctx, m->gaps);
  m->gaps = NULL;
  m->n_gaps = m->cap_gaps = 0;
}

static void gaps_format(const oi_imp *m, rlx_strbuf *b) {
  for (uint32_t i = 0; i < m->n_gaps; i++) {
    const oi_gap *g = &m->gaps[i];
    rlx_sb_printf(b, "  %s [%u node%s: %s%s]\n", g->key, g->count, g->count == 1 ? "" : "s", g->nodes,
                  g->count > 3 ? ", ..." : "");
  }
}

/* ======================================================================================
 * Types and shapes
 * ====================================================================================== */

/* Symbolic or bound size of a dim_param. */
static rlx_status dim_param(oi_imp *m, const char *name, rlx_dim *out) {
  uint64_t v;
  if (oi_map_get(&m->dim_syms, name, &v)) {
    *out = (rlx_dim)v;
    return RLX_OK;
  }
  if (m->next_sym > 1000000) return rlx_errorf(RLX_ERR_FORMAT, "too many distinct symbolic dims");
  *out = RLX_DIM_SYM(m->next_sym++);
  return oi_map_put(&m->dim_syms, name, (uint64_t)*out);
}

rlx_status oi_type_shape(oi_imp *m, const Onnx__TypeProto *tp, const char *what, rlx_shape *out) {
  if (!tp) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has no type", what);
  if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    const char *k = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE        ? "sequence"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE           ? "map"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE      ? "optional"
                    : tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE ? "sparse tensor"
                                                                                   : "unknown";
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has a %s type; only tensors are supported", what, k);
  }
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  rlx_dtype d;
  if (!oi_dtype_from_onnx(tt->elem_type, &d))
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has dtype %s, which RLX does not have", what,
                      oi_onnx_dtype_name(tt->elem_type));
  if (!tt->shape)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has no shape (unknown rank); give its shape in the options", what);
  if (tt->shape->n_dim > RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has rank %zu; RLX supports up to %d", what, tt->shape->n_dim,
                      RLX_MAX_RANK);
  rlx_dim dims[RLX_MAX_RANK];
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
    if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (dm->dim_value < 0 || dm->dim_value > ((int64_t)1 << 48))
        return rlx_errorf(RLX_ERR_FORMAT, "%s: dim %zu is %lld", what, i, (long long)dm->dim_value);
      dims[i] = dm->dim_value;
    } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
               dm->dim_param[0]) {
      RLX_TRY(dim_param(m, dm->dim_param, &dims[i]));
    } else {
      if (m->next_sym > 1000000) return rlx_errorf(RLX_ERR_FORMAT, "too many distinct symbolic dims");
      dims[i] = RLX_DIM_SYM(m->next_sym++);
    }
  }
  *out = rlx_shape_make(d, (uint32_t)tt->shape->n_dim, dims);
  return RLX_OK;
}

const rlx_named_tensor *oi_find_input(const oi_imp *m, const char *name) {
  if (!m->opt) return NULL;
  for (uint32_t i = 0; i < m->opt->n_inputs; i++)
    if (m->opt->inputs[i].name && strcmp(m->opt->inputs[i].name, name) == 0) return &m->opt->inputs[i];
  return NULL;
}

/* Binds dim_params from the options' dim list, then from the shapes of the hinted inputs. */
static rlx_status bind_dims(oi_imp *m, const Onnx__GraphProto *g, const oi_map *inits) {
  const rlx_onnx_options *o = m->opt;
  if (o)
    for (uint32_t i = 0; i < o->n_dims; i++) {
      if (!o->dim_names || !o->dim_values || !o->dim_names[i])
        return rlx_errorf(RLX_ERR_INVALID_ARG, "options: dim binding %u has no name or value", i);
      if (o->dim_values[i] < 0)
        return rlx_errorf(RLX_ERR_INVALID_ARG, "options: dim %s is bound to %lld; sizes must be >= 0", o->dim_names[i],
                          (long long)o->dim_values[i]);
      RLX_TRY(oi_map_put(&m->dim_syms, o->dim_names[i], (uint64_t)o->dim_values[i]));
    }
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *v = g->input[i];
    if (oi_map_get(inits, v->name, NULL)) continue;
    const rlx_named_tensor *h = oi_find_input(m, v->name);
    if (!h || !v->type || v->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) continue;
    const Onnx__TensorShapeProto *sp = v->type->tensor_type->shape;
    if (!sp) continue;
    if (sp->n_dim != h->tensor.shape.rank)
      return rlx_errorf(RLX_ERR_SHAPE, "input \"%s\": the model gives it rank %zu but the given tensor %s has rank %u",
                        v->name, sp->n_dim, rlx_fmt_shape(&h->tensor.shape), h->tensor.shape.rank);
    for (size_t k = 0; k < sp->n_dim; k++) {
      const Onnx__TensorShapeProto__Dimension *dm = sp->dim[k];
      rlx_dim given = h->tensor.shape.dims[k];
      if (given < 0) return rlx_errorf(RLX_ERR_INVALID_ARG, "options: input \"%s\" has a symbolic dim", v->name);
      if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (dm->dim_value != given)
          return rlx_errorf(RLX_ERR_SHAPE, "input \"%s\": dim %zu is %lld in the model but %lld in the given tensor",
                            v->name, k, (long long)dm->dim_value, (long long)given);
      } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param &&
                 dm->dim_param[0]) {
        uint64_t prev;
        if (oi_map_get(&m->dim_syms, dm->dim_param, &prev) && (int64_t)prev != given)
          return rlx_errorf(RLX_ERR_SHAPE, "input \"%s\": dim %zu (%s) is %lld, but %s is already bound to %lld",
                            v->name, k, dm->dim_param, (long long)given, dm->dim_param, (long long)(int64_t)prev);
        RLX_TRY(oi_map_put(&m->dim_syms, dm->dim_param, (uint64_t)given));
      }
    }
  }
  return RLX_OK;
}

/* ======================================================================================
 * Nodes
 * ====================================================================================== */

static bool default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

/* Sets node `id`'s debug name when it has none (the value name of an ONNX output). */
static rlx_status name_node(rlx_graph *g, rlx_id id, const char *name) {
  rlx_node *n = &g->nodes[id];
  if (n->name || n->op == RLX_OP_Input || n->op == RLX_OP_Param) return RLX_OK;
  char *c = rlx_arena_strndup(&g->arena, name, strlen(name));
  if (!c) return rlx_errorf(RLX_ERR_OOM, "out of memory naming a node");
  n->name = c;
  return RLX_OK;
}

static rlx_status poison_outputs(oi_scope *s, const Onnx__NodeProto *np) {
  for (size_t k = 0; k < np->n_output; k++)
    if (np->output[k][0]) RLX_TRY(oi_scope_set(s, np->output[k], RLX_NO_ID, OI_VAL_POISONED, NULL));
  return RLX_OK;
}

static rlx_status gap(oi_imp *m, const Onnx__NodeProto *np, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static rlx_status gap(oi_imp *m, const Onnx__NodeProto *np, const char *fmt, ...) {
  char reason[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return oi_gap_add(m, np, reason);
}

/* The checks of a node that need no operands: its domain is supported and imported, its op has a
 * mapping at the model's opset. Records a gap (and sets *is_gap) for an unsupported one; a node of
 * a domain the model does not import is an error. Model-local functions are not judged here. */
static rlx_status check_op_support(oi_imp *m, const Onnx__NodeProto *np, bool *is_gap) {
  const char *op_type = str(np->op_type);
  *is_gap = false;
  bool training = !default_domain(np->domain) && strcmp(np->domain, OI_TRAINING_DOMAIN) == 0;
  if (oi_model_function(m, np)) return RLX_OK;
  *is_gap = true;
  if (!default_domain(np->domain) && !training)
    return gap(m, np, "%s: domain \"%s\" is not supported (only the default ONNX domain and %s)", op_type, np->domain,
               OI_TRAINING_DOMAIN);
  const oi_op_entry *e = training ? oi_training_op_find(op_type) : oi_op_find(op_type);
  if (!e) {
    if (training) return gap(m, np, "%s: no RLX mapping for this op of domain \"%s\"", op_type, np->domain);
    return gap(m, np, "%s: no RLX mapping for this op", op_type);
  }
  int64_t opset = training ? m->opset_training : m->opset;
  if (opset == 0) {
    char label[400];
    return rlx_errorf(RLX_ERR_FORMAT,
                      "%s: its domain \"%s\" has no entry in the model's field opset_import, so the "
                      "operator set version is unknown",
                      oi_node_label(np, label, sizeof label), training ? OI_TRAINING_DOMAIN : "");
  }
  if (opset < e->min_opset || opset > e->max_opset)
    return gap(m, np, "%s: opset %lld%s%s is not supported (supported: %d..%d)", op_type, (long long)opset,
               training ? " of domain " : "", training ? OI_TRAINING_DOMAIN : "", e->min_opset, e->max_opset);
  *is_gap = false;
  return RLX_OK;
}

/* A node that is not imported (an upstream gap poisoned its inputs) still has its bodies' nodes
 * checked with check_op_support, so gaps inside them are reported too (check.c bounds the
 * nesting). */
static rlx_status check_bodies(oi_imp *m, const Onnx__NodeProto *np) {
  for (size_t a = 0; a < np->n_attribute; a++) {
    const Onnx__AttributeProto *at = np->attribute[a];
    size_t ng = at->g ? 1 : at->n_graphs;
    for (size_t k = 0; k < ng; k++) {
      const Onnx__GraphProto *b = at->g ? at->g : at->graphs[k];
      for (size_t i = 0; b && i < b->n_node; i++) {
        if (++m->visited > OI_MAX_WORK) /* the same bound as imports (bodies of unrolled loops repeat) */
          return rlx_errorf(RLX_ERR_UNSUPPORTED, "the model expands beyond %u checked nodes", OI_MAX_WORK);
        bool is_gap;
        RLX_TRY(check_op_support(m, b->node[i], &is_gap));
        if (!is_gap) RLX_TRY(check_bodies(m, b->node[i]));
      }
    }
  }
  return RLX_OK;
}

rlx_status oi_import_node(oi_scope *s, const Onnx__NodeProto *np) {
  oi_imp *m = s->m;
  const char *op_type = str(np->op_type);
  if (++m->visited > OI_MAX_WORK || m->emitted > OI_MAX_WORK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED,
                      "the model expands beyond %u imported nodes (bodies are imported once per use; unrolled loops "
                      "count every step)",
                      OI_MAX_WORK);
  /* Poisoned inputs: an upstream gap left this node without operands. It is not imported, but
   * what can be judged without operands (domain, op, opset) is still checked, so the report
   * lists the gaps downstream of a gap too. */
  bool poisoned = false;
  for (size_t k = 0; k < np->n_input; k++) {
    if (!np->input[k][0]) continue;
    const oi_value *v = oi_scope_get(s, np->input[k]);
    if (!v) {
      char label[400];
      return rlx_errorf(RLX_ERR_INTERNAL, "%s: input \"%s\" is not defined", oi_node_label(np, label, sizeof label),
                        np->input[k]);
    }
    if (v->state == OI_VAL_POISONED) poisoned = true;
  }
  bool training = !default_domain(np->domain) && strcmp(np->domain, OI_TRAINING_DOMAIN) == 0;
  const Onnx__FunctionProto *fn = oi_model_function(m, np); /* ModelProto.functions (IR 8+) */
  if (fn && poisoned) return poison_outputs(s, np);         /* a function body is only judged on real operands */
  if (fn) {
    char why[512] = "";
    rlx_status st = oi_inline_function(s, np, fn, why, sizeof why);
    if (st != RLX_ERR_UNSUPPORTED) return st;
    RLX_TRY(gap(m, np, "%s: model-local function of domain \"%s\": %s", op_type, str(np->domain),
                why[0] ? why : rlx_last_error()));
    return poison_outputs(s, np);
  }
  bool is_gap;
  RLX_TRY(check_op_support(m, np, &is_gap));
  if (is_gap) return poison_outputs(s, np);
  const oi_op_entry *e = training ? oi_training_op_find(op_type) : oi_op_find(op_type);
  int64_t opset = training ? m->opset_training : m->opset;
  if (poisoned) { /* an upstream gap explains the rest; gaps inside its bodies are still listed */
    RLX_TRY(check_bodies(m, np));
    return poison_outputs(s, np);
  }
  size_t nin = np->n_input, nout = np->n_output;
  oi_node c;
  memset(&c, 0, sizeof c);
  c.m = m;
  c.sc = s;
  c.g = s->g;
  c.np = np;
  c.opset = opset;
  c.n_in = (uint32_t)nin;
  c.n_out = (uint32_t)nout;
  c.scratch.al = m->al;
  c.in = rlx_arena_alloc(&c.scratch, (nin + 1) * sizeof *c.in, 8);
  c.hint = rlx_arena_alloc(&c.scratch, (nin + 1) * sizeof *c.hint, 8);
  c.in_val = rlx_arena_alloc(&c.scratch, (nin + 1) * sizeof *c.in_val, 8);
  c.out = rlx_arena_alloc(&c.scratch, (nout + 1) * sizeof *c.out, 8);
  c.out_val = rlx_arena_alloc(&c.scratch, (nout + 1) * sizeof *c.out_val, 8);
  c.out_used = rlx_arena_alloc(&c.scratch, nout + 1, 8);
  if (!c.in || !c.hint || !c.in_val || !c.out || !c.out_val || !c.out_used) {
    rlx_arena_release(&c.scratch);
    return rlx_errorf(RLX_ERR_OOM, "out of memory importing a node");
  }
  bool containers = oi_op_takes_containers(op_type);
  for (size_t k = 0; k < nin; k++) {
    c.in[k] = RLX_NO_ID;
    c.hint[k] = NULL;
    c.in_val[k] = NULL;
    if (!np->input[k][0]) continue;
    const oi_value *v = oi_scope_get(s, np->input[k]);
    c.in_val[k] = v;
    if (v->kind != OI_KIND_TENSOR || v->optional) {
      if (containers) continue; /* c.in[k] stays RLX_NO_ID: the mapper reads c.in_val[k] */
      rlx_arena_release(&c.scratch);
      RLX_TRY(gap(m, np, "%s: input %zu (\"%s\") is a%s %s; this op takes tensors", op_type, k, np->input[k],
                  v->kind == OI_KIND_NONE || v->optional ? "n" : "", oi_kind_name(v)));
      return poison_outputs(s, np);
    }
    c.in[k] = v->id;
    c.hint[k] = v->hint;
  }
  for (size_t k = 0; k < nout; k++) {
    c.out[k] = RLX_NO_ID;
    memset(&c.out_val[k], 0, sizeof c.out_val[k]);
    c.out_val[k].state = OI_VAL_POISONED; /* "not set": oi_set_out_value marks it OK */
    c.out_used[k] = np->output[k][0] && oi_map_get(&m->info.used, np->output[k], NULL);
  }
  uint32_t first_new = rlx_graph_node_count(s->g);
  rlx_status st = e->fn(&c);
  if (st == RLX_OK) {
    for (size_t k = 0; k < nout && st == RLX_OK; k++) {
      if (!np->output[k][0] || c.out_val[k].state == OI_VAL_OK) continue;
      if (c.out[k] == RLX_NO_ID) {
        if (c.out_used[k]) {
          st = oi_unsupported(&c, "output %zu (\"%s\") is not supported", k, np->output[k]);
          break;
        }
        continue;
      }
    }
  }
  if (st == RLX_OK) {
    for (size_t k = 0; k < nout && st == RLX_OK; k++) {
      if (!np->output[k][0]) continue;
      if (c.out_val[k].state == OI_VAL_OK) {
        st = oi_scope_set_value(s, np->output[k], &c.out_val[k]);
        if (st == RLX_OK && c.out_val[k].kind == OI_KIND_TENSOR && c.out_val[k].id >= first_new)
          st = name_node(s->g, c.out_val[k].id, np->output[k]);
      } else if (c.out[k] == RLX_NO_ID)
        st = oi_scope_set(s, np->output[k], RLX_NO_ID, OI_VAL_POISONED, NULL);
      else {
        st = oi_scope_set(s, np->output[k], c.out[k], OI_VAL_OK, NULL);
        if (st == RLX_OK && c.out[k] >= first_new) st = name_node(s->g, c.out[k], np->output[k]);
      }
    }
  } else if (st == RLX_ERR_UNSUPPORTED) {
    if (!c.unsupported) snprintf(c.reason, sizeof c.reason, "%s", rlx_last_error());
    st = c.reason[0] ? gap(m, np, "%s: %s", op_type, c.reason) : RLX_OK; /* empty: gap recorded inside a body */
    if (st == RLX_OK) st = poison_outputs(s, np);
  } else {
    char label[400];
    st = rlx_error_context(st, "%s", oi_node_label(np, label, sizeof label));
  }
  rlx_arena_release(&c.scratch);
  return st;
}

/* ======================================================================================
 * Graphs
 * ====================================================================================== */

/* Initializers of gp that some node reads become Constants (or Params when asked, main graph
 * only). Unsupported dtypes are gaps; the value is poisoned. */
static rlx_status import_initializers(oi_scope *s, const Onnx__GraphProto *gp) {
  oi_imp *m = s->m;
  bool params = m->opt && !m->opt->initializers_as_constants && s->depth == 0;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!oi_map_get(&m->info.used, t->name, NULL)) continue;
    char what[300];
    snprintf(what, sizeof what, "initializer \"%.200s\"", t->name);
    rlx_shape sh;
    void *data = NULL;
    size_t nb = 0;
    rlx_status st = oi_tensor_bytes(t, what, m->base_dir, m->al, &sh, &data, &nb);
    if (st == RLX_ERR_UNSUPPORTED) {
      RLX_TRY(oi_gap_add(m, NULL, rlx_last_error()));
      RLX_TRY(oi_scope_set(s, t->name, RLX_NO_ID, OI_VAL_POISONED, NULL));
      continue;
    }
    RLX_TRY(st);
    rlx_id id;
    if (params) {
      st = rlx_param(s->g, t->name, sh, &id);
      if (st == RLX_OK && m->opt->weights) {
        rlx_onnx_weights *w = &m->weights;
        rlx_named_tensor *nv = m->al->alloc(m->al->ctx, (w->n + 1) * sizeof *nv);
        size_t nl = strlen(t->name);
        char *nm = m->al->alloc(m->al->ctx, nl + 1);
        if (!nv || !nm) {
          m->al->free(m->al->ctx, nv);
          m->al->free(m->al->ctx, nm);
          st = rlx_errorf(RLX_ERR_OOM, "out of memory keeping weights");
        } else {
          if (w->n) memcpy(nv, w->v, w->n * sizeof *nv);
          m->al->free(m->al->ctx, w->v);
          w->v = nv;
          memcpy(nm, t->name, nl + 1);
          w->v[w->n++] = (rlx_named_tensor){nm, {data, sh}};
          data = NULL;
        }
      }
    } else {
      st = rlx_constant(s->g, sh, data, nb, &id);
      if (st == RLX_OK) st = name_node(s->g, id, t->name);
    }
    m->al->free(m->al->ctx, data);
    if (st) return rlx_error_context(st, "%s", what);
    RLX_TRY(oi_scope_set(s, t->name, id, OI_VAL_OK, NULL));
  }
  return RLX_OK;
}

rlx_status oi_import_nodes(oi_scope *s, const Onnx__GraphProto *gp) {
  const oi_graph_info *gi = oi_graph_info_of(&s->m->info, gp);
  if (!gi || !gi->order) return rlx_errorf(RLX_ERR_INTERNAL, "graph \"%s\" was not checked", str(gp->name));
  RLX_TRY(import_initializers(s, gp));
  for (size_t i = 0; i < gp->n_node; i++) RLX_TRY(oi_import_node(s, gp->node[gi->order[i]]));
  return RLX_OK;
}

/* The value named `name` as seen from scope s; poisoned/unknown values are reported quietly. */
static rlx_status lookup_value(oi_node *c, const oi_scope *s, const char *name, oi_value *out) {
  const oi_value *v = oi_scope_get(s, name);
  if (!v) return rlx_errorf(RLX_ERR_INTERNAL, "body output \"%s\" is not defined", name);
  if (v->state == OI_VAL_POISONED) {
    c->reason[0] = 0; /* the gap was recorded where it happened */
    c->unsupported = true;
    return RLX_ERR_UNSUPPORTED;
  }
  *out = *v;
  return RLX_OK;
}

static rlx_status lookup_output(oi_node *c, const oi_scope *s, const char *name, rlx_id *out) {
  oi_value v;
  RLX_TRY(lookup_value(c, s, name, &v));
  if (v.kind != OI_KIND_TENSOR || v.optional)
    return oi_unsupported(c, "body output \"%s\" is a%s %s here; only tensors are supported in this place", name,
                          v.optional ? "n" : "", oi_kind_name(&v));
  *out = v.id;
  return RLX_OK;
}

rlx_status oi_inline_graph_values(oi_node *c, const Onnx__GraphProto *gp, const oi_value *args, uint32_t n_args,
                                  oi_value *outs, uint32_t n_outs) {
  if (n_args > gp->n_input)
    return oi_bad(c, "body \"%s\" takes %zu inputs, %u given", str(gp->name), gp->n_input, n_args);
  if (n_outs > gp->n_output)
    return oi_bad(c, "body \"%s\" has %zu outputs, %u needed", str(gp->name), gp->n_output, n_outs);
  oi_scope s;
  oi_scope_init(&s, c->m, c->g, c->sc, true, c->sc->depth + 1);
  rlx_status st = RLX_OK;
  for (uint32_t i = 0; i < n_args && st == RLX_OK; i++) {
    oi_value v = args[i];
    v.hint = NULL;
    st = oi_scope_set_value(&s, gp->input[i]->name, &v);
  }
  if (st == RLX_OK) st = oi_import_nodes(&s, gp);
  for (uint32_t i = 0; i < n_outs && st == RLX_OK; i++) st = lookup_value(c, &s, gp->output[i]->name, &outs[i]);
  oi_scope_free(&s);
  return st;
}

rlx_status oi_inline_graph(oi_node *c, const Onnx__GraphProto *gp, const rlx_id *args, uint32_t n_args, rlx_id *outs,
                           uint32_t n_outs) {
  oi_value *av = oi_scratch(c, ((size_t)n_args + 1) * sizeof *av),
           *ov = oi_scratch(c, ((size_t)n_outs + 1) * sizeof *ov);
  if (!av || !ov) return oi_nomem(c);
  for (uint32_t i = 0; i < n_args; i++)
    av[i] = (oi_value){.id = args[i], .state = args[i] == RLX_NO_ID ? OI_VAL_POISONED : OI_VAL_OK};
  RLX_TRY(oi_inline_graph_values(c, gp, av, n_args, ov, n_outs));
  for (uint32_t i = 0; i < n_outs; i++) {
    if (ov[i].kind != OI_KIND_TENSOR || ov[i].optional)
      return oi_unsupported(c, "body output \"%s\" is a%s %s here; only tensors are supported in this place",
                            gp->output[i]->name, ov[i].optional ? "n" : "", oi_kind_name(&ov[i]));
    outs[i] = ov[i].id;
  }
  return RLX_OK;
}

static void sanitize_name(const char *in, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = in; *p && n + 1 < cap; p++) {
    char ch = *p;
    bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
    out[n++] = ok ? ch : '_';
  }
  if (!n) {
    snprintf(out, cap, "body");
    return;
  }
  out[n] = 0;
}

/* oi_child_graph; `elem` (with one output in `which`) picks element elem of a sequence output,
 * OI_WHOLE_VALUE the output itself (the content of a present optional tensor too). */
static rlx_status child_graph(oi_node *c, const Onnx__GraphProto *gp, const rlx_shape *arg_shapes, uint32_t n_args,
                              const char *const *caps, uint32_t n_caps, const uint32_t *which, uint32_t n_which,
                              uint32_t elem, rlx_graph **out) {
  if (n_args != gp->n_input)
    return oi_bad(c, "body \"%s\" takes %zu inputs, %u given", str(gp->name), gp->n_input, n_args);
  char gname[128];
  sanitize_name(str(gp->name), gname, sizeof gname);
  rlx_graph *child;
  RLX_TRY(rlx_graph_create_child(c->g, gname, &child));
  oi_scope s;
  oi_scope_init(&s, c->m, child, c->sc, false, c->sc->depth + 1);
  rlx_status st = RLX_OK;
  for (uint32_t i = 0; i < n_args && st == RLX_OK; i++) {
    rlx_id id;
    st = rlx_input(child, gp->input[i]->name, arg_shapes[i], &id);
    if (st == RLX_OK) st = oi_scope_set(&s, gp->input[i]->name, id, OI_VAL_OK, NULL);
  }
  for (uint32_t i = 0; i < n_caps && st == RLX_OK; i++) {
    const oi_value *v = oi_scope_get(c->sc, caps[i]);
    if (!v) {
      st = rlx_errorf(RLX_ERR_INTERNAL, "capture \"%s\" is not defined", caps[i]);
      break;
    }
    if (v->state == OI_VAL_POISONED) { /* the body never reads a poisoned capture without failing itself */
      st = oi_scope_set(&s, caps[i], RLX_NO_ID, OI_VAL_POISONED, NULL);
      continue;
    }
    if (v->kind != OI_KIND_TENSOR || v->optional) {
      st = oi_unsupported(c,
                          "body \"%s\" reads the %s \"%s\" of the enclosing graph but is not inlined (its condition "
                          "or trip count is only known at run time)",
                          str(gp->name), oi_kind_name(v), caps[i]);
      break;
    }
    rlx_id id;
    st = rlx_input(child, caps[i], *oi_shape(c, v->id), &id);
    if (st == RLX_OK) st = oi_scope_set(&s, caps[i], id, OI_VAL_OK, v->hint);
  }
  if (st == RLX_OK) st = oi_import_nodes(&s, gp);
  rlx_id outs[64];
  if (st == RLX_OK && n_which > 64) st = oi_unsupported(c, "bodies with more than 64 outputs");
  for (uint32_t i = 0; i < n_which && st == RLX_OK; i++) {
    if (which[i] >= gp->n_output)
      st = oi_bad(c, "body \"%s\" has no output %u", str(gp->name), which[i]);
    else if (elem == OI_NO_ELEM || n_which != 1)
      st = lookup_output(c, &s, gp->output[which[i]]->name, &outs[i]);
    else {
      oi_value v = {.id = RLX_NO_ID};
      st = lookup_value(c, &s, gp->output[which[i]]->name, &v);
      if (st == RLX_OK && elem == OI_WHOLE_VALUE) {
        if (v.kind == OI_KIND_TENSOR)
          outs[i] = v.id;
        else
          st = lookup_output(c, &s, gp->output[which[i]]->name, &outs[i]); /* explains why not */
      } else if (st == RLX_OK) {
        if (v.kind != OI_KIND_SEQ || elem >= v.n_seq)
          st = rlx_errorf(RLX_ERR_INTERNAL, "body output \"%s\" has no element %u", gp->output[which[i]]->name, elem);
        else
          outs[i] = v.seq[elem];
      }
    }
  }
  if (st == RLX_OK) st = rlx_graph_set_outputs(child, outs, n_which);
  oi_scope_free(&s);
  if (st == RLX_OK) *out = child;
  return st;
}

rlx_status oi_child_graph(oi_node *c, const Onnx__GraphProto *gp, const rlx_shape *arg_shapes, uint32_t n_args,
                          const char *const *caps, uint32_t n_caps, const uint32_t *which, uint32_t n_which,
                          rlx_graph **out) {
  return child_graph(c, gp, arg_shapes, n_args, caps, n_caps, which, n_which, OI_NO_ELEM, out);
}

rlx_status oi_child_graph_elem(oi_node *c, const Onnx__GraphProto *gp, const char *const *caps, uint32_t n_caps,
                               uint32_t k, uint32_t elem, rlx_graph **out) {
  return child_graph(c, gp, NULL, 0, caps, n_caps, &k, 1, elem, out);
}

/* ======================================================================================
 * Model
 * ====================================================================================== */

static rlx_status bind_inputs(oi_imp *m, oi_scope *s, const Onnx__GraphProto *g, const oi_map *inits) {
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *v = g->input[i];
    if (oi_map_get(inits, v->name, NULL)) continue; /* an initializer listed as input is a constant */
    if (v->type && (v->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
                    v->type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)) {
      RLX_TRY(oi_bind_container_input(m, s, v));
      continue;
    }
    const rlx_named_tensor *h = oi_find_input(m, v->name);
    char what[300];
    snprintf(what, sizeof what, "graph input \"%.200s\"", v->name);
    rlx_shape sh;
    rlx_status st;
    if (h && v->type && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && !v->type->tensor_type->shape) {
      rlx_dtype d;
      if (!oi_dtype_from_onnx(v->type->tensor_type->elem_type, &d))
        st = rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has dtype %s, which RLX does not have", what,
                        oi_onnx_dtype_name(v->type->tensor_type->elem_type));
      else {
        sh = h->tensor.shape;
        sh.dtype = (uint8_t)d;
        st = RLX_OK;
      }
    } else {
      st = oi_type_shape(m, v->type, what, &sh);
    }
    if (st == RLX_ERR_UNSUPPORTED) {
      RLX_TRY(oi_gap_add(m, NULL, rlx_last_error()));
      RLX_TRY(oi_scope_set(s, v->name, RLX_NO_ID, OI_VAL_POISONED, NULL));
      continue;
    }
    RLX_TRY(st);
    if (h && h->tensor.shape.rank == sh.rank) /* dims the model leaves unnamed take the given size */
      for (uint32_t k = 0; k < sh.rank; k++)
        if (!rlx_dim_is_static(sh.dims[k]) && rlx_dim_is_static(h->tensor.shape.dims[k]))
          sh.dims[k] = h->tensor.shape.dims[k];
    if (h && h->tensor.shape.dtype != sh.dtype)
      return rlx_errorf(RLX_ERR_SHAPE, "%s is %s in the model but the given tensor is %s", what,
                        rlx_dtype_name((rlx_dtype)sh.dtype), rlx_dtype_name((rlx_dtype)h->tensor.shape.dtype));
    rlx_id id;
    RLX_TRY(rlx_input(s->g, v->name, sh, &id));
    size_t nb;
    if (m->freeze && h && h->tensor.data && rlx_shape_nbytes(&sh, &nb) == RLX_OK) {
      /* specialized to the given value: readers see a Constant, the Input stays bindable */
      RLX_TRY(rlx_constant(s->g, sh, h->tensor.data, nb, &id));
    }
    RLX_TRY(oi_scope_set(s, v->name, id, OI_VAL_OK, h ? &h->tensor : NULL));
  }
  return RLX_OK;
}

/* Graph output `name` = value id, as output i of ids: it must carry its ONNX name (rlx run names
 * files after it), so a value that is another output, an input or named otherwise gets an
 * identity node; the declared dtype and static dims (tensor type `decl`, may be NULL) are
 * checked. */
static rlx_status set_output(oi_scope *s, const char *name, rlx_id id, const Onnx__TypeProto *decl, rlx_id *ids,
                             uint32_t i) {
  const rlx_node *nd = rlx_graph_node(s->g, id);
  bool reused = false;
  for (uint32_t k = 0; k < i; k++) reused |= ids[k] == id;
  if (reused || !nd->name || strcmp(nd->name, name) != 0) {
    rlx_shape sh = nd->shape; /* nd moves when the node array grows */
    if (nd->op == RLX_OP_Constant) {
      RLX_TRY(rlx_constant(s->g, sh, nd->attrs.Constant.data.p, nd->attrs.Constant.data.n, &id));
    } else {
      rlx_attrs_Cast a = {.to = sh.dtype};
      RLX_TRY(rlx_graph_add(s->g, RLX_OP_Cast, &id, 1, &a, NULL, NULL, &id));
    }
    RLX_TRY(name_node(s->g, id, name));
  }
  ids[i] = id;
  const rlx_shape *got = &rlx_graph_node(s->g, id)->shape;
  if (!decl || decl->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) return RLX_OK;
  const Onnx__TypeProto__Tensor *tt = decl->tensor_type;
  rlx_dtype d;
  if (oi_dtype_from_onnx(tt->elem_type, &d) && d != got->dtype)
    return rlx_errorf(RLX_ERR_SHAPE, "graph output \"%s\": the model declares %s but the imported graph computes %s",
                      name, oi_onnx_dtype_name(tt->elem_type), rlx_fmt_shape(got));
  if (!tt->shape) return RLX_OK;
  bool bad = tt->shape->n_dim != got->rank;
  for (size_t k = 0; k < tt->shape->n_dim && !bad; k++) {
    const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[k];
    if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && rlx_dim_is_static(got->dims[k]))
      bad = dm->dim_value != got->dims[k];
  }
  if (!bad) return RLX_OK;
  char dl[256] = "[";
  size_t p = 1;
  for (size_t k = 0; k < tt->shape->n_dim && p < sizeof dl - 32; k++) {
    const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[k];
    if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      p += (size_t)snprintf(dl + p, sizeof dl - p, "%s%lld", k ? ", " : "", (long long)dm->dim_value);
    else
      p += (size_t)snprintf(dl + p, sizeof dl - p, "%s?", k ? ", " : "");
  }
  snprintf(dl + p, sizeof dl - p, "]");
  return rlx_errorf(RLX_ERR_SHAPE,
                    "graph output \"%s\": the model declares shape %s but the imported graph computes %s", name, dl,
                    rlx_fmt_shape(got));
}

/* Outputs, in order: a tensor is one RLX output; a sequence of N elements N outputs NAME.0 ...
 * NAME.<N-1>; a present optional its content; an absent optional none. */
static rlx_status set_outputs(oi_imp *m, oi_scope *s, const Onnx__GraphProto *g) {
  uint32_t n = 0;
  bool poisoned = false;
  for (size_t i = 0; i < g->n_output; i++) {
    const oi_value *val = oi_scope_get(s, g->output[i]->name);
    if (!val || val->state == OI_VAL_POISONED)
      poisoned = true;
    else
      n += val->kind == OI_KIND_SEQ ? val->n_seq : val->kind == OI_KIND_NONE ? 0 : 1;
  }
  if (poisoned) return RLX_OK; /* the gaps explain it */
  rlx_id *ids = m->al->alloc(m->al->ctx, (n ? n : 1) * sizeof *ids);
  if (!ids) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  rlx_status st = RLX_OK;
  uint32_t at = 0;
  for (size_t i = 0; i < g->n_output && st == RLX_OK; i++) {
    const Onnx__ValueInfoProto *v = g->output[i];
    const oi_value val = *oi_scope_get(s, v->name); /* a copy: the scope table may grow */
    bool optional, seq;
    const Onnx__TypeProto *decl = oi_container_elem_type(v->type, &optional, &seq);
    if (val.kind == OI_KIND_TENSOR) {
      st = set_output(s, v->name, val.id, decl, ids, at++);
    } else if (val.kind == OI_KIND_SEQ) {
      size_t nl = strlen(v->name) + 16;
      char *nm = m->al->alloc(m->al->ctx, nl);
      if (!nm) st = rlx_errorf(RLX_ERR_OOM, "out of memory");
      for (uint32_t k = 0; k < val.n_seq && st == RLX_OK; k++) {
        snprintf(nm, nl, "%s.%u", v->name, k);
        st = set_output(s, nm, val.seq[k], decl, ids, at++);
      }
      m->al->free(m->al->ctx, nm);
    }
  }
  if (st == RLX_OK) st = rlx_graph_set_outputs(s->g, ids, n);
  m->al->free(m->al->ctx, ids);
  return st;
}

static void graph_name(const char *in, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = in; *p && n + 1 < cap; p++) {
    char ch = *p;
    bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
    out[n++] = ok ? ch : '_';
  }
  out[n] = 0;
  if (!n) snprintf(out, cap, "main");
}

typedef struct import_result {
  rlx_graph *graph; /* NULL in report mode */
  char *report;
  size_t report_len;
  uint32_t n_gaps;
} import_result;

/* One import attempt into a new graph: bind inputs, import the nodes, set the outputs. */
static rlx_status attempt(oi_imp *m, const char *what, rlx_graph **out) {
  const Onnx__GraphProto *gp = m->model->graph;
  const rlx_allocator *al = m->al;
  *out = NULL;
  m->next_sym = 4; /* RLX's well-known symbols 0..3 keep their meaning */
  m->emitted = 0;
  m->visited = 0;
  m->needs_value = false;
  oi_map_init(&m->dim_syms, al, false);
  rlx_arena_release(&m->seqs);
  m->seqs.al = al;
  char gname[128];
  graph_name(str(gp->name), gname, sizeof gname);
  rlx_graph *g = NULL;
  oi_scope top;
  bool top_init = false;
  oi_map inits;
  oi_map_init(&inits, al, false);
  rlx_status st = rlx_graph_create(al, gname, &g);
  if (st == RLX_OK) oi_set_fold_hook(m, g);
  for (size_t i = 0; i < gp->n_initializer && st == RLX_OK; i++) st = oi_map_put(&inits, gp->initializer[i]->name, 1);
  if (st == RLX_OK) {
    oi_scope_init(&top, m, g, NULL, false, 0);
    top_init = true;
    st = bind_dims(m, gp, &inits);
  }
  if (st == RLX_OK) st = bind_inputs(m, &top, gp, &inits);
  if (st == RLX_OK) st = oi_import_nodes(&top, gp);
  if (st == RLX_OK) st = set_outputs(m, &top, gp);
  if (st) st = rlx_error_context(st, "%s", what);
  if (top_init) oi_scope_free(&top);
  oi_map_free(&inits);
  oi_map_free(&m->dim_syms);
  rlx_arena_release(&m->seqs);
  if (st == RLX_OK)
    *out = g;
  else
    rlx_graph_free(g);
  return st;
}

static bool has_input_values(const rlx_onnx_options *o) {
  for (uint32_t i = 0; o && i < o->n_inputs; i++)
    if (o->inputs[i].tensor.data) return true;
  return false;
}

static rlx_status run_import(const uint8_t *data, size_t len, const char *base_dir, const char *what,
                             const rlx_onnx_options *opt, const rlx_allocator *al, bool report, import_result *res) {
  memset(res, 0, sizeof *res);
  if (!al) al = rlx_default_allocator();
  if (!data && len) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: no data", what);
  oi_pb pb;
  rlx_status st = oi_pb_unpack(&pb, &onnx__model_proto__descriptor, data, len, al, what);
  if (st) return st;
  const Onnx__ModelProto *model = (const Onnx__ModelProto *)pb.msg;
  oi_imp m;
  memset(&m, 0, sizeof m);
  m.al = al;
  m.opt = opt;
  m.base_dir = base_dir;
  m.model = model;
  m.report = report;
  rlx_graph *g = NULL;
  st = oi_check_model(model, al, &m.info);
  if (st) st = rlx_error_context(st, "%s", what);
  if (st == RLX_OK) {
    m.opset = 0; /* 0: the domain is not imported; a node of it is an error (oi_import_node) */
    m.opset_training = 0;
    for (size_t i = 0; i < model->n_opset_import; i++) {
      const Onnx__OperatorSetIdProto *o = model->opset_import[i];
      if (default_domain(o->domain))
        m.opset = o->has_version ? o->version : 1;
      else if (strcmp(o->domain, OI_TRAINING_DOMAIN) == 0)
        m.opset_training = o->has_version ? o->version : 1;
    }
    st = attempt(&m, what, &g);
    /* An op needed a value computed from inputs whose values the options give: specialize the
     * graph to those values (their Input nodes stay, unused) and try again. */
    if (st == RLX_OK && m.n_gaps && m.needs_value && has_input_values(opt)) {
      rlx_graph_free(g);
      g = NULL;
      gaps_free(&m);
      rlx_onnx_weights_free(&m.weights, al);
      m.freeze = true;
      st = attempt(&m, what, &g);
    }
  }
  if (st == RLX_OK && m.n_gaps) {
    rlx_strbuf b;
    rlx_sb_init(&b, al);
    rlx_sb_printf(&b, "%u unsupported op/opset/dtype gap%s:\n", m.n_gaps, m.n_gaps == 1 ? "" : "s");
    gaps_format(&m, &b);
    char *text = NULL;
    size_t tl = 0;
    st = rlx_sb_finish(&b, &text, &tl);
    if (st == RLX_OK) {
      if (report) {
        res->report = text;
        res->report_len = tl;
        res->n_gaps = m.n_gaps;
      } else {
        if (tl && text[tl - 1] == '\n') text[tl - 1] = 0;
        st = rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: %s", what, text);
        al->free(al->ctx, text);
      }
    }
  } else if (st == RLX_OK && report) {
    res->report = al->alloc(al->ctx, 1);
    if (!res->report)
      st = rlx_errorf(RLX_ERR_OOM, "out of memory");
    else
      res->report[0] = 0;
  }
  if (st == RLX_OK && !report) {
    /* drop what folding left behind (Inputs and Params stay) */
    rlx_compile_options o;
    rlx_compile_options_init(&o);
    o.fold_constants = false;
    o.cse = false;
    rlx_graph *clean = NULL;
    st = rlx_simplify(g, &o, &clean);
    if (st == RLX_OK) {
      rlx_graph_free(g);
      g = clean;
      st = rlx_verify(g);
      if (st) st = rlx_error_context(st, "%s: the imported graph does not verify", what);
    }
  }
  if (st == RLX_OK && !report) {
    res->graph = g;
    g = NULL;
    if (opt && opt->weights) {
      *opt->weights = m.weights;
      m.weights.v = NULL;
      m.weights.n = 0;
    }
  }
  rlx_graph_free(g);
  rlx_onnx_weights_free(&m.weights, al);
  gaps_free(&m);
  oi_model_info_free(&m.info);
  oi_pb_free(&pb);
  return st;
}

/* The folder of `path` ("." when it has none), allocated with al. */
static char *dir_of(const char *path, const rlx_allocator *al) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash && n == 0) n = 1; /* "/model.onnx" */
  char *d = al->alloc(al->ctx, n + 1);
  if (!d) return NULL;
  if (slash)
    memcpy(d, path, n);
  else
    d[0] = '.';
  d[n] = 0;
  return d;
}

static rlx_status import_path(const char *path, const rlx_onnx_options *opt, const rlx_allocator *al, bool report,
                              import_result *res) {
  if (!al) al = rlx_default_allocator();
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "no model path");
  uint8_t *data;
  size_t len;
  RLX_TRY(oi_read_file(path, RLX_ONNX_MAX_FILE_BYTES, al, &data, &len));
  char *dir = dir_of(path, al);
  rlx_status st =
      dir ? run_import(data, len, dir, path, opt, al, report, res) : rlx_errorf(RLX_ERR_OOM, "out of memory");
  al->free(al->ctx, dir);
  al->free(al->ctx, data);
  return st;
}

rlx_status rlx_onnx_import_file(const char *path, const rlx_onnx_options *opt, const rlx_allocator *al,
                                rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_import_file: out is NULL");
  *out = NULL;
  import_result r;
  RLX_TRY(import_path(path, opt, al, false, &r));
  *out = r.graph;
  return RLX_OK;
}

rlx_status rlx_onnx_import_bytes(const uint8_t *data, size_t len, const char *base_dir, const rlx_onnx_options *opt,
                                 const rlx_allocator *al, rlx_graph **out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_import_bytes: out is NULL");
  *out = NULL;
  import_result r;
  RLX_TRY(run_import(data, len, base_dir, "onnx model", opt, al, false, &r));
  *out = r.graph;
  return RLX_OK;
}

rlx_status rlx_onnx_report(const char *path, const rlx_onnx_options *opt, const rlx_allocator *al, char **out,
                           size_t *len, uint32_t *n_gaps) {
  if (!out || !len || !n_gaps) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_report: NULL output argument");
  *out = NULL;
  *len = 0;
  *n_gaps = 0;
  import_result r;
  RLX_TRY(import_path(path, opt, al, true, &r));
  *out = r.report;
  *len = r.report_len;
  *n_gaps = r.n_gaps;
  return RLX_OK;
}
