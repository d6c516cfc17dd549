/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX control flow. If: a branch is inlined when the condition is known at import time,
 * otherwise each used output becomes an RLX If whose two child graphs read the branches'
 * captured outer values as extra operands. Loop: unrolled when its trip count and condition are
 * known at import time (scan outputs are stacked), otherwise an RLX While per used output
 * (loop-carried values with fixed shapes, no scan outputs). Scan: unrolled (the sequence length
 * is static in RLX graphs); opset 8's batch axis and sequence_lens by unrolling each batch entry. */
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* True (and *v) when id is a one-element constant. */
static bool const_scalar(oi_node *c, rlx_id id, int64_t *v) {
  const void *data;
  rlx_shape s;
  size_t n;
  if (!oi_const_value(c, id, &data, &s) || rlx_shape_numel(&s, &n) != RLX_OK || n != 1) return false;
  *v = oi_elem_i64(data, (rlx_dtype)s.dtype, 0);
  return true;
}

/* ======================================================================================
 * If
 * ====================================================================================== */

/* One RLX If computing output k of the branches (element `elem` of it when it is a sequence,
 * see oi_child_graph_elem; OI_NO_ELEM for a plain tensor); ops = condition + captures. */
static rlx_status if_node(oi_node *c, const Onnx__GraphProto *const *br, const char *const *caps, uint32_t ncap,
                          const rlx_id *ops, uint32_t k, uint32_t elem, rlx_id *out) {
  rlx_graph *g[2];
  for (int b = 0; b < 2; b++) {
    if (elem == OI_NO_ELEM)
      RLX_TRY(oi_child_graph(c, br[b], NULL, 0, caps, ncap, &k, 1, &g[b]));
    else
      RLX_TRY(oi_child_graph_elem(c, br[b], caps, ncap, k, elem, &g[b]));
  }
  const rlx_shape *s0 = &rlx_graph_node(g[0], rlx_graph_outputs(g[0])[0])->shape;
  const rlx_shape *s1 = &rlx_graph_node(g[1], rlx_graph_outputs(g[1])[0])->shape;
  if (!rlx_shape_compatible(s0, s1)) {
    char el[48] = "";
    if (elem != OI_NO_ELEM && elem != OI_WHOLE_VALUE) snprintf(el, sizeof el, " (element %u)", elem);
    return oi_unsupported(c, "output %u%s has shape %s in then_branch but %s in else_branch (RLX needs one shape)", k,
                          el, rlx_fmt_shape(s0), rlx_fmt_shape(s1));
  }
  rlx_attrs_If ia = {.then_branch = g[0], .else_branch = g[1]};
  RLX_TRY(rlx_graph_add(c->g, RLX_OP_If, ops, ncap + 1, &ia, NULL, NULL, out));
  c->m->emitted++;
  return RLX_OK;
}

/* "a sequence of 3 elements", "an empty optional", ... */
static const char *describe(const oi_value *v, char *buf, size_t cap) {
  if (v->kind == OI_KIND_SEQ)
    snprintf(buf, cap, "a%s sequence of %u element%s", v->optional ? "n optional" : "", v->n_seq,
             v->n_seq == 1 ? "" : "s");
  else
    snprintf(buf, cap, "%s",
             v->kind == OI_KIND_NONE ? "an empty optional"
             : v->optional           ? "an optional tensor"
                                     : "a tensor");
  return buf;
}

/* Does some branch declare an output of sequence or optional type? */
static bool branches_declare_containers(const Onnx__GraphProto *const *br) {
  for (int b = 0; b < 2; b++)
    for (size_t k = 0; k < br[b]->n_output; k++) {
      const Onnx__TypeProto *tp = br[b]->output[k]->type;
      if (tp && (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ||
                 tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE))
        return true;
    }
  return false;
}

/* Output k of an If whose branches give sequences or optionals (their values pv[0], pv[1] from
 * an inline import of each branch): both must give the same kind and length; each element
 * becomes an RLX If. */
static rlx_status if_container(oi_node *c, const Onnx__GraphProto *const *br, const char *const *caps, uint32_t ncap,
                               const rlx_id *ops, uint32_t k, const oi_value *a, const oi_value *b) {
  if (a->kind != b->kind || a->optional != b->optional || (a->kind == OI_KIND_SEQ && a->n_seq != b->n_seq)) {
    char da[64], db[64];
    return oi_unsupported(c,
                          "output %u is %s in then_branch but %s in else_branch; with a condition known only at run "
                          "time both branches must give the same kind and sequence length",
                          k, describe(a, da, sizeof da), describe(b, db, sizeof db));
  }
  oi_value v = *a;
  v.hint = NULL;
  if (a->kind == OI_KIND_TENSOR) {
    RLX_TRY(if_node(c, br, caps, ncap, ops, k, OI_WHOLE_VALUE, &v.id));
  } else if (a->kind == OI_KIND_SEQ) {
    rlx_id *ids = oi_scratch(c, ((size_t)a->n_seq + 1) * sizeof *ids);
    if (!ids) return oi_nomem(c);
    for (uint32_t j = 0; j < a->n_seq; j++) RLX_TRY(if_node(c, br, caps, ncap, ops, k, j, &ids[j]));
    RLX_TRY(oi_seq_value(c->m, ids, a->n_seq, a->elem, &v));
    v.optional = a->optional;
  }
  oi_set_out_value(c, k, &v);
  return RLX_OK;
}

static rlx_status map_if(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "cond"));
  const Onnx__GraphProto *br[2];
  RLX_TRY(oi_attr_graph(c, "then_branch", &br[0]));
  RLX_TRY(oi_attr_graph(c, "else_branch", &br[1]));
  for (int b = 0; b < 2; b++)
    if (br[b]->n_input)
      return oi_bad(c, "%s_branch declares %zu inputs; If branches take none", b ? "else" : "then", br[b]->n_input);
  for (int b = 0; b < 2; b++)
    if (br[b]->n_output != c->n_out)
      return oi_bad(c, "%s_branch has %zu outputs; the node has %u", b ? "else" : "then", br[b]->n_output, c->n_out);
  int64_t cv;
  const void *data;
  rlx_shape cs;
  if (oi_in_value(c, 0, &data, &cs)) {
    size_t n;
    RLX_TRY(rlx_shape_numel(&cs, &n));
    if (n != 1) return oi_bad(c, "input cond must hold one element");
    cv = oi_elem_i64(data, (rlx_dtype)cs.dtype, 0);
    oi_value *ov = oi_scratch(c, ((size_t)c->n_out + 1) * sizeof *ov);
    if (!ov) return oi_nomem(c);
    RLX_TRY(oi_inline_graph_values(c, br[cv ? 0 : 1], NULL, 0, ov, c->n_out));
    for (uint32_t k = 0; k < c->n_out; k++) oi_set_out_value(c, k, &ov[k]);
    return RLX_OK;
  }
  /* captures: the union of both branches' free variables */
  const oi_graph_info *gi[2] = {oi_graph_info_of(&c->m->info, br[0]), oi_graph_info_of(&c->m->info, br[1])};
  if (!gi[0] || !gi[1]) return rlx_errorf(RLX_ERR_INTERNAL, "If branches were not checked");
  uint32_t ncap = 0;
  const char **caps = oi_scratch(c, (gi[0]->n_free + gi[1]->n_free + 1) * sizeof *caps);
  if (!caps) return oi_nomem(c);
  for (int b = 0; b < 2; b++)
    for (uint32_t i = 0; i < gi[b]->n_free; i++) {
      bool dup = false;
      for (uint32_t j = 0; j < ncap && !dup; j++) dup = strcmp(caps[j], gi[b]->free[i]) == 0;
      if (!dup) caps[ncap++] = gi[b]->free[i];
    }
  if (ncap + 1 > 64)
    return oi_unsupported(c, "branches reading %u outer values (RLX nodes take up to 63 captures)", ncap);
  rlx_id *ops = oi_scratch(c, (ncap + 1) * sizeof *ops);
  if (!ops) return oi_nomem(c);
  ops[0] = c->in[0];
  for (uint32_t i = 0; i < ncap; i++) {
    const oi_value *v = oi_scope_get(c->sc, caps[i]);
    if (!v) return rlx_errorf(RLX_ERR_INTERNAL, "capture \"%s\" is not defined", caps[i]);
    if (v->state == OI_VAL_POISONED) {
      c->reason[0] = 0; /* an upstream gap explains it */
      c->unsupported = true;
      return RLX_ERR_UNSUPPORTED;
    }
    ops[i + 1] = v->id;
  }
  /* Branches declaring sequence or optional outputs are first imported inline once, to learn
   * what each output is (kind, length); those nodes are dead and dropped after the import. */
  oi_value *pv[2] = {NULL, NULL};
  if (branches_declare_containers(br))
    for (int b = 0; b < 2; b++) {
      pv[b] = oi_scratch(c, ((size_t)c->n_out + 1) * sizeof *pv[b]);
      if (!pv[b]) return oi_nomem(c);
      RLX_TRY(oi_inline_graph_values(c, br[b], NULL, 0, pv[b], c->n_out));
    }
  for (uint32_t k = 0; k < c->n_out; k++) {
    if (!c->out_used[k]) continue;
    bool plain = !pv[0] || (pv[0][k].kind == OI_KIND_TENSOR && !pv[0][k].optional && pv[1][k].kind == OI_KIND_TENSOR &&
                            !pv[1][k].optional);
    if (plain)
      RLX_TRY(if_node(c, br, caps, ncap, ops, k, OI_NO_ELEM, &c->out[k]));
    else
      RLX_TRY(if_container(c, br, caps, ncap, ops, k, &pv[0][k], &pv[1][k]));
  }
  return RLX_OK;
}

/* ======================================================================================
 * Loop
 * ====================================================================================== */

/* Stacks per-iteration values along a new axis `axis` (reverse order when `rev`). */
static rlx_status stack(oi_node *c, const rlx_id *vals, uint32_t n, int64_t axis, bool rev, rlx_id *out) {
  rlx_id *parts = oi_scratch(c, (n + 1) * sizeof *parts);
  if (!parts) return oi_nomem(c);
  const rlx_shape s = *oi_shape(c, vals[0]);
  if (s.rank + 1u > RLX_MAX_RANK) return oi_unsupported(c, "stacking rank-%u values", s.rank);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, s.rank + 1u, "scan output axis", &a));
  rlx_dim d[RLX_MAX_RANK];
  for (uint32_t i = 0, j = 0; i <= s.rank; i++) d[i] = i == a ? 1 : s.dims[j++];
  for (uint32_t i = 0; i < n; i++) {
    const rlx_shape *si = oi_shape(c, vals[rev ? n - 1 - i : i]);
    if (!rlx_shape_equal(si, &s))
      return oi_unsupported(c, "scan outputs whose shape changes between iterations (%s vs %s)", rlx_fmt_shape(&s),
                            rlx_fmt_shape(si));
    RLX_TRY(oi_reshape_dims(c, vals[rev ? n - 1 - i : i], s.rank + 1u, d, &parts[i]));
  }
  return oi_concat_many(c, parts, n, a, out);
}

/* Is v a sequence or an optional (which only unrolled loops can carry)? */
static bool is_container(const oi_value *v) { return v && (v->kind != OI_KIND_TENSOR || v->optional); }

static oi_value tensor_value(rlx_id id) { return (oi_value){.id = id, .state = OI_VAL_OK, .kind = OI_KIND_TENSOR}; }

/* Unrolls the loop (loop-carried values may be sequences and optionals). *done = false (without
 * error) when the condition turns out to depend on run-time values. */
static rlx_status loop_unroll(oi_node *c, const Onnx__GraphProto *body, bool has_m, int64_t trip, bool cond0,
                              uint32_t N, uint32_t K, bool *done) {
  *done = false;
  oi_value *v = oi_scratch(c, (N + 1) * sizeof *v), *outs = oi_scratch(c, (1 + N + K) * sizeof *outs);
  oi_value *args = oi_scratch(c, (2 + N) * sizeof *args);
  uint32_t cap_it = 1024;
  rlx_id **scans = oi_scratch(c, (K + 1) * sizeof *scans);
  if (!v || !outs || !args || !scans) return oi_nomem(c);
  for (uint32_t j = 0; j < N; j++) v[j] = *c->in_val[2 + j];
  bool cond = cond0;
  int64_t i = 0;
  uint64_t start = c->m->emitted;
  for (uint32_t k = 0; k < K; k++) {
    scans[k] = oi_scratch(c, cap_it * sizeof **scans);
    if (!scans[k]) return oi_nomem(c);
  }
  while ((!has_m || i < trip) && cond) {
    if (c->m->emitted - start > OI_MAX_UNROLL_NODES || i >= 1000000)
      return oi_unsupported(c, "unrolling would exceed %u RLX nodes (after %lld iterations)", OI_MAX_UNROLL_NODES,
                            (long long)i);
    if ((uint32_t)i == cap_it) {
      for (uint32_t k = 0; k < K; k++) {
        rlx_id *ns = oi_scratch(c, (size_t)cap_it * 2 * sizeof *ns);
        if (!ns) return oi_nomem(c);
        memcpy(ns, scans[k], cap_it * sizeof *ns);
        scans[k] = ns;
      }
      cap_it *= 2;
    }
    rlx_id it, tr;
    RLX_TRY(oi_scalar(c, RLX_I64, (double)i, &it));
    RLX_TRY(oi_scalar(c, RLX_BOOL, 1.0, &tr));
    args[0] = tensor_value(it);
    args[1] = tensor_value(tr);
    for (uint32_t j = 0; j < N; j++) args[2 + j] = v[j];
    RLX_TRY(oi_inline_graph_values(c, body, args, 2 + N, outs, 1 + N + K));
    for (uint32_t j = 0; j < N; j++) v[j] = outs[1 + j];
    for (uint32_t k = 0; k < 1 + K; k++) {
      const oi_value *o = &outs[k ? N + k : 0];
      if (is_container(o))
        return oi_unsupported(c, "body output %u is a%s %s; the condition and scan outputs must be tensors",
                              k ? N + k : 0, o->optional ? "n" : "", oi_kind_name(o));
    }
    for (uint32_t k = 0; k < K; k++) scans[k][i] = outs[1 + N + k].id;
    int64_t cv;
    if (!const_scalar(c, outs[0].id, &cv)) return RLX_OK; /* data-dependent termination */
    cond = cv != 0;
    i++;
  }
  for (uint32_t j = 0; j < N; j++) oi_set_out_value(c, j, &v[j]);
  for (uint32_t k = 0; k < K; k++) {
    if (!c->out_used[N + k]) continue;
    if (i == 0) return oi_unsupported(c, "scan outputs of a loop that runs zero times (their shape is unknown)");
    RLX_TRY(stack(c, scans[k], (uint32_t)i, 0, false, &c->out[N + k]));
  }
  *done = true;
  return RLX_OK;
}

/* One RLX While computing loop-carried value `want` (placed first among the carried values). */
static rlx_status loop_while(oi_node *c, const Onnx__GraphProto *body, uint32_t N, uint32_t want) {
  oi_imp *m = c->m;
  const oi_graph_info *gi = oi_graph_info_of(&m->info, body);
  if (!gi) return rlx_errorf(RLX_ERR_INTERNAL, "Loop body was not checked");
  uint32_t ncap = gi->n_free;
  bool has_m = oi_has(c, 0);
  /* carried: v[want], other v..., iter, cond, [M], captures... */
  uint32_t nc = N + 2 + (has_m ? 1 : 0) + ncap;
  if (nc > 64) return oi_unsupported(c, "a loop carrying %u values (RLX nodes take up to 64 operands)", nc);
  rlx_id ops[64];
  uint32_t vpos[64];
  uint32_t p = 0;
  vpos[want] = p, ops[p++] = c->in[2 + want];
  for (uint32_t j = 0; j < N; j++)
    if (j != want) vpos[j] = p, ops[p++] = c->in[2 + j];
  uint32_t it_pos = p, cond_pos = p + 1, m_pos = p + 2;
  RLX_TRY(oi_scalar(c, RLX_I64, 0, &ops[p++]));
  if (oi_has(c, 1)) {
    rlx_id cd = c->in[1];
    RLX_TRY(oi_cast(c, cd, RLX_BOOL, &cd));
    ops[p++] = cd;
  } else {
    RLX_TRY(oi_scalar(c, RLX_BOOL, 1.0, &ops[p++]));
  }
  if (has_m) {
    rlx_id mm;
    RLX_TRY(oi_cast(c, c->in[0], RLX_I64, &mm));
    ops[p++] = mm;
  }
  uint32_t cap0 = p;
  for (uint32_t i = 0; i < ncap; i++) {
    const oi_value *v = oi_scope_get(c->sc, gi->free[i]);
    if (!v || v->state == OI_VAL_POISONED) {
      c->reason[0] = 0;
      c->unsupported = true;
      return RLX_ERR_UNSUPPORTED;
    }
    if (is_container(v))
      return oi_needs_value(c,
                            "the body reads the %s \"%s\"; a loop over sequences or optionals needs its trip count "
                            "and condition at import time",
                            oi_kind_name(v), gi->free[i]);
    ops[p++] = v->id;
  }
  /* cond graph: cond && iter < M */
  rlx_graph *cg, *bg;
  RLX_TRY(rlx_graph_create_child(c->g, "loop_cond", &cg));
  RLX_TRY(rlx_graph_create_child(c->g, "loop_body", &bg));
  rlx_id cin[64], bin[64];
  for (uint32_t i = 0; i < nc; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "carry%u", i);
    RLX_TRY(rlx_input(cg, nm, *oi_shape(c, ops[i]), &cin[i]));
    RLX_TRY(rlx_input(bg, nm, *oi_shape(c, ops[i]), &bin[i]));
  }
  rlx_id cres = cin[cond_pos];
  if (oi_shape(c, ops[cond_pos])->rank) {
    RLX_TRY(rlx_reshape(cg, cres, 0, NULL, &cres));
  }
  if (has_m) {
    rlx_id lt, mpos = cin[m_pos];
    const rlx_shape *ms = oi_shape(c, ops[m_pos]);
    if (ms->rank) RLX_TRY(rlx_reshape(cg, mpos, 0, NULL, &mpos));
    RLX_TRY(rlx_compare(cg, RLX_CMP_LT, cin[it_pos], mpos, &lt));
    RLX_TRY(rlx_binary(cg, RLX_BINOP_BIT_AND, cres, lt, &cres));
  }
  RLX_TRY(rlx_graph_set_outputs(cg, &cres, 1));
  /* body graph: the ONNX body with its formal inputs and captures bound to carried Inputs */
  if (body->n_input != 2 + N) return oi_bad(c, "attribute body takes %zu inputs; expected %u", body->n_input, 2 + N);
  oi_scope s;
  oi_scope_init(&s, m, bg, c->sc, false, c->sc->depth + 1);
  rlx_status st = oi_scope_set(&s, body->input[0]->name, bin[it_pos], OI_VAL_OK, NULL);
  if (st == RLX_OK) st = oi_scope_set(&s, body->input[1]->name, bin[cond_pos], OI_VAL_OK, NULL);
  for (uint32_t j = 0; j < N && st == RLX_OK; j++)
    st = oi_scope_set(&s, body->input[2 + j]->name, bin[vpos[j]], OI_VAL_OK, NULL);
  for (uint32_t i = 0; i < ncap && st == RLX_OK; i++)
    st = oi_scope_set(&s, gi->free[i], bin[cap0 + i], OI_VAL_OK, NULL);
  if (st == RLX_OK) st = oi_import_nodes(&s, body);
  rlx_id bout[64];
  for (uint32_t k = 0; k < 1 + N && st == RLX_OK; k++) {
    const oi_value *v = oi_scope_get(&s, body->output[k]->name);
    if (!v)
      st = rlx_errorf(RLX_ERR_INTERNAL, "Loop body output \"%s\" is not defined", body->output[k]->name);
    else if (v->state == OI_VAL_POISONED) {
      c->reason[0] = 0;
      c->unsupported = true;
      st = RLX_ERR_UNSUPPORTED;
    } else if (k == 0)
      bout[cond_pos] = v->id;
    else
      bout[vpos[k - 1]] = v->id;
  }
  oi_scope_free(&s);
  RLX_TRY(st);
  rlx_id one;
  RLX_TRY(rlx_constant(bg, rlx_shape_scalar(RLX_I64), &(int64_t){1}, 8, &one));
  RLX_TRY(rlx_binary(bg, RLX_BINOP_ADD, bin[it_pos], one, &bout[it_pos]));
  if (has_m) bout[m_pos] = bin[m_pos];
  for (uint32_t i = 0; i < ncap; i++) bout[cap0 + i] = bin[cap0 + i];
  for (uint32_t i = 0; i < nc; i++) {
    const rlx_shape *bs = &rlx_graph_node(bg, bout[i])->shape, *cs = oi_shape(c, ops[i]);
    if (!rlx_shape_compatible(bs, cs)) {
      if (i == cond_pos && bs->dtype == RLX_BOOL) {
        size_t n;
        if (rlx_shape_numel(bs, &n) == RLX_OK && n == 1) {
          RLX_TRY(rlx_reshape(bg, bout[i], cs->rank, cs->dims, &bout[i]));
          continue;
        }
      }
      return oi_unsupported(c, "loop-carried value %u changes shape from %s to %s (RLX's While keeps shapes fixed)", i,
                            rlx_fmt_shape(cs), rlx_fmt_shape(bs));
    }
  }
  RLX_TRY(rlx_graph_set_outputs(bg, bout, nc));
  rlx_attrs_While wa = {.cond = cg, .body = bg, .max_iterations = {.has = false, .v = 0}};
  RLX_TRY(rlx_graph_add(c->g, RLX_OP_While, ops, nc, &wa, NULL, NULL, &c->out[want]));
  m->emitted++;
  return RLX_OK;
}

static rlx_status map_loop(oi_node *c) {
  const Onnx__GraphProto *body;
  RLX_TRY(oi_attr_graph(c, "body", &body));
  if (c->n_in < 2) return oi_bad(c, "Loop needs inputs M and cond (either may be empty)");
  uint32_t N = c->n_in - 2;
  if (c->n_out < N) return oi_bad(c, "Loop has %u outputs but %u loop-carried values", c->n_out, N);
  uint32_t K = c->n_out - N;
  if (body->n_input != 2 + N) return oi_bad(c, "attribute body takes %zu inputs; expected %u", body->n_input, 2 + N);
  if (body->n_output != 1 + N + K)
    return oi_bad(c, "attribute body has %zu outputs; expected %u", body->n_output, 1 + N + K);
  for (uint32_t j = 0; j < N; j++) RLX_TRY(oi_need(c, 2 + j, "v_initial"));
  bool has_m = false, cond_known = true, cond0 = true;
  int64_t trip = 0;
  if (oi_has(c, 0)) {
    int64_t *mv;
    size_t mn;
    const void *d;
    rlx_shape s;
    if (oi_in_value(c, 0, &d, &s)) {
      RLX_TRY(oi_in_ints(c, 0, "M", &mv, &mn));
      if (mn != 1) return oi_bad(c, "input M must hold one value");
      trip = mv[0];
      has_m = true;
    } else {
      cond_known = false;
    }
  }
  if (oi_has(c, 1)) {
    const void *d;
    rlx_shape s;
    if (oi_in_value(c, 1, &d, &s)) {
      size_t n;
      RLX_TRY(rlx_shape_numel(&s, &n));
      if (n != 1) return oi_bad(c, "input cond must hold one value");
      cond0 = oi_elem_i64(d, (rlx_dtype)s.dtype, 0) != 0;
    } else {
      cond_known = false;
    }
  }
  if (cond_known) {
    bool done;
    RLX_TRY(loop_unroll(c, body, has_m, trip, cond0, N, K, &done));
    if (done) return RLX_OK;
  }
  for (uint32_t k = 0; k < K; k++)
    if (c->out_used[N + k])
      return oi_needs_value(c, "scan outputs of a loop whose trip count or condition is only known at run time");
  for (uint32_t j = 0; j < N; j++)
    if (is_container(c->in_val[2 + j]))
      return oi_needs_value(c,
                            "loop-carried value %u is a%s %s; a loop carrying sequences or optionals needs its trip "
                            "count and condition at import time",
                            j, c->in_val[2 + j]->optional ? "n" : "", oi_kind_name(c->in_val[2 + j]));
  for (uint32_t j = 0; j < N; j++) {
    c->out[j] = RLX_NO_ID;
    if (c->out_used[j]) RLX_TRY(loop_while(c, body, N, j));
  }
  return RLX_OK;
}

/* ======================================================================================
 * Scan
 * ====================================================================================== */

/* Unrolls `body` over L steps: states start at init[0..N), scan input j is xs[j] sliced along
 * axes[j] (reversed when in_rev[j]); the final states go to states[], scan output k (when
 * want[k]) is stacked along out_axes[k] (reversed when out_rev[k]) into scans[k]. NULL arrays
 * mean axis 0 / forward. */
static rlx_status scan_unroll(oi_node *c, const Onnx__GraphProto *body, uint32_t N, uint32_t M, uint32_t K,
                              const rlx_id *init, const rlx_id *xs, const uint32_t *axes, const int64_t *in_rev,
                              int64_t L, const int64_t *out_axes, const int64_t *out_rev, const bool *want,
                              rlx_id *states, rlx_id *scans) {
  if (L == 0) return oi_unsupported(c, "a scan over an empty sequence");
  if (L > 100000) return oi_unsupported(c, "unrolling a scan of %lld steps", (long long)L);
  rlx_id *st = oi_scratch(c, (N + 1) * sizeof *st), *args = oi_scratch(c, (N + (size_t)M) * sizeof *args);
  rlx_id *outs = oi_scratch(c, (N + K + 1) * sizeof *outs),
         *elems = oi_scratch(c, ((size_t)K * (size_t)L + 1) * sizeof *elems);
  if (!st || !args || !outs || !elems) return oi_nomem(c);
  for (uint32_t j = 0; j < N; j++) st[j] = init[j];
  uint64_t start = c->m->emitted;
  for (int64_t t = 0; t < L; t++) {
    if (c->m->emitted - start > OI_MAX_UNROLL_NODES)
      return oi_unsupported(c, "unrolling would exceed %u RLX nodes (after %lld steps)", OI_MAX_UNROLL_NODES,
                            (long long)t);
    for (uint32_t j = 0; j < N; j++) args[j] = st[j];
    for (uint32_t j = 0; j < M; j++) {
      rlx_id sl;
      bool rev = in_rev && in_rev[j];
      RLX_TRY(oi_narrow(c, xs[j], axes[j], rev ? L - 1 - t : t, 1, &sl));
      const rlx_shape *ss = oi_shape(c, sl);
      rlx_dim d[RLX_MAX_RANK];
      uint32_t r = 0;
      for (uint32_t i = 0; i < ss->rank; i++)
        if (i != axes[j]) d[r++] = ss->dims[i];
      RLX_TRY(oi_reshape_dims(c, sl, r, d, &args[N + j]));
    }
    RLX_TRY(oi_inline_graph(c, body, args, N + M, outs, N + K));
    for (uint32_t j = 0; j < N; j++) st[j] = outs[j];
    for (uint32_t k = 0; k < K; k++) elems[(size_t)k * (size_t)L + (size_t)t] = outs[N + k];
  }
  for (uint32_t j = 0; j < N; j++) states[j] = st[j];
  for (uint32_t k = 0; k < K; k++) {
    scans[k] = RLX_NO_ID;
    if (!want[k]) continue;
    RLX_TRY(stack(c, elems + (size_t)k * (size_t)L, (uint32_t)L, out_axes ? out_axes[k] : 0, out_rev && out_rev[k],
                  &scans[k]));
  }
  return RLX_OK;
}

static rlx_status map_scan8(oi_node *c);

/* Scan 9+: N states then M scan inputs, each scanned along its own axis (opset 8: map_scan8). */
static rlx_status map_scan(oi_node *c) {
  if (c->opset < 9) return map_scan8(c);
  const Onnx__GraphProto *body;
  RLX_TRY(oi_attr_graph(c, "body", &body));
  int64_t M;
  RLX_TRY(oi_attr_i(c, "num_scan_inputs", -1, &M));
  if (M < 1 || M > c->n_in) return oi_bad(c, "attribute num_scan_inputs is %lld", (long long)M);
  uint32_t N = c->n_in - (uint32_t)M;
  if (c->n_out < N) return oi_bad(c, "Scan has fewer outputs than states");
  uint32_t K = c->n_out - N;
  if (body->n_input != N + (uint32_t)M || body->n_output != N + K)
    return oi_bad(c, "attribute body has %zu inputs / %zu outputs; expected %u / %u", body->n_input, body->n_output,
                  N + (uint32_t)M, N + K);
  const int64_t *ia, *id, *oa, *od;
  size_t nia, nid, noa, nod;
  bool pia, pid, poa, pod;
  RLX_TRY(oi_attr_ints(c, "scan_input_axes", &ia, &nia, &pia));
  RLX_TRY(oi_attr_ints(c, "scan_input_directions", &id, &nid, &pid));
  RLX_TRY(oi_attr_ints(c, "scan_output_axes", &oa, &noa, &poa));
  RLX_TRY(oi_attr_ints(c, "scan_output_directions", &od, &nod, &pod));
  if ((pia && nia != (size_t)M) || (pid && nid != (size_t)M) || (poa && noa != K) || (pod && nod != K))
    return oi_bad(c, "scan axis / direction attributes must have one entry per scan input or output");
  for (uint32_t j = 0; j < N + (uint32_t)M; j++) RLX_TRY(oi_need(c, j, "initial state or scan input"));
  int64_t L = -1;
  uint32_t axes[64];
  if (M > 64) return oi_unsupported(c, "more than 64 scan inputs");
  for (uint32_t j = 0; j < (uint32_t)M; j++) {
    const rlx_shape *xs = oi_in_shape(c, N + j);
    RLX_TRY(oi_axis(c, pia ? ia[j] : 0, xs->rank, "scan_input_axes entry", &axes[j]));
    rlx_dim d = xs->dims[axes[j]];
    if (!rlx_dim_is_static(d)) return oi_unsupported(c, "scanning a symbolic sequence length");
    if (L >= 0 && d != L)
      return oi_bad(c, "scan inputs have different sequence lengths (%lld and %lld)", (long long)L, (long long)d);
    L = d;
  }
  return scan_unroll(c, body, N, (uint32_t)M, K, c->in, c->in + N, axes, pid ? id : NULL, L, poa ? oa : NULL,
                     pod ? od : NULL, c->out_used + N, c->out, c->out + N);
}

/* Scan 8: optional sequence_lens, then N states [B, ...] and M scan inputs [B, L, ...]; each batch
 * element is unrolled on its own over the first len elements of its sequence (a reverse scan
 * reads them from len - 1 down to 0), its scan outputs are zero-padded to L, and the results are
 * stacked back along axis 0. */
static rlx_status map_scan8(oi_node *c) {
  const Onnx__GraphProto *body;
  RLX_TRY(oi_attr_graph(c, "body", &body));
  int64_t M;
  RLX_TRY(oi_attr_i(c, "num_scan_inputs", -1, &M));
  if (c->n_in < 1 || M < 1 || M > c->n_in - 1) return oi_bad(c, "attribute num_scan_inputs is %lld", (long long)M);
  if (M > 64) return oi_unsupported(c, "more than 64 scan inputs");
  uint32_t N = c->n_in - 1 - (uint32_t)M;
  if (c->n_out < N) return oi_bad(c, "Scan has fewer outputs than states");
  uint32_t K = c->n_out - N;
  if (body->n_input != N + (uint32_t)M || body->n_output != N + K)
    return oi_bad(c, "attribute body has %zu inputs / %zu outputs; expected %u / %u", body->n_input, body->n_output,
                  N + (uint32_t)M, N + K);
  const int64_t *dirs;
  size_t ndirs;
  bool pdirs;
  RLX_TRY(oi_attr_ints(c, "directions", &dirs, &ndirs, &pdirs));
  if (pdirs && ndirs != (size_t)M) return oi_bad(c, "attribute directions must have one entry per scan input");
  for (size_t j = 0; pdirs && j < ndirs; j++)
    if (dirs[j] != 0 && dirs[j] != 1)
      return oi_bad(c, "attribute directions holds %lld; expected 0 or 1", (long long)dirs[j]);
  int64_t B = -1, L = -1;
  for (uint32_t j = 0; j < N + (uint32_t)M; j++) {
    RLX_TRY(oi_need(c, 1 + j, "initial state or scan input"));
    const rlx_shape *s = oi_in_shape(c, 1 + j);
    bool scan = j >= N;
    if (s->rank < (scan ? 2u : 1u))
      return oi_bad(c, "input %u is %s; Scan-8 %s need a leading batch axis%s", 1 + j, rlx_fmt_shape(s),
                    scan ? "scan inputs" : "states", scan ? " and a sequence axis" : "");
    if (!rlx_dim_is_static(s->dims[0]) || (scan && !rlx_dim_is_static(s->dims[1])))
      return oi_unsupported(c, "a symbolic batch size or sequence length (input %u is %s)", 1 + j, rlx_fmt_shape(s));
    if (B >= 0 && s->dims[0] != B)
      return oi_bad(c, "inputs have different batch sizes (%lld and %lld)", (long long)B, (long long)s->dims[0]);
    B = s->dims[0];
    if (scan && L >= 0 && s->dims[1] != L)
      return oi_bad(c, "scan inputs have different sequence lengths (%lld and %lld)", (long long)L,
                    (long long)s->dims[1]);
    if (scan) L = s->dims[1];
  }
  if (B == 0) return oi_unsupported(c, "a Scan over an empty batch");
  int64_t *lens = NULL;
  size_t nlens = 0;
  if (oi_has(c, 0)) {
    RLX_TRY(oi_in_ints(c, 0, "sequence_lens", &lens, &nlens));
    if (nlens != (size_t)B) return oi_bad(c, "sequence_lens has %zu entries for a batch of %lld", nlens, (long long)B);
    for (size_t b = 0; b < nlens; b++) {
      if (lens[b] < 1 || lens[b] > L)
        return lens[b] == 0
                   ? oi_unsupported(c, "a sequence length of 0 (batch entry %zu)", b)
                   : oi_bad(c, "sequence_lens[%zu] is %lld; expected 1..%lld", b, (long long)lens[b], (long long)L);
    }
  }
  size_t nb = (size_t)B;
  rlx_id *init = oi_scratch(c, (N + 1) * sizeof *init), *xs = oi_scratch(c, ((size_t)M + 1) * sizeof *xs);
  rlx_id *res = oi_scratch(c, (N + K + 1) * nb * sizeof *res), *one = oi_scratch(c, (N + K + 1) * sizeof *one);
  if (!init || !xs || !res || !one) return oi_nomem(c);
  uint32_t axes[64] = {0};
  for (size_t b = 0; b < nb; b++) {
    int64_t len = lens ? lens[b] : L;
    for (uint32_t j = 0; j < N + (uint32_t)M; j++) { /* batch entry b without its batch axis */
      rlx_id sl;
      RLX_TRY(oi_narrow(c, c->in[1 + j], 0, (int64_t)b, 1, &sl));
      const rlx_shape *ss = oi_shape(c, sl);
      if (j >= N) RLX_TRY(oi_narrow(c, sl, 1, 0, len, &sl));
      ss = oi_shape(c, sl);
      RLX_TRY(oi_reshape_dims(c, sl, ss->rank - 1, ss->dims + 1, j < N ? &init[j] : &xs[j - N]));
    }
    RLX_TRY(scan_unroll(c, body, N, (uint32_t)M, K, init, xs, axes, pdirs ? dirs : NULL, len, NULL, NULL,
                        c->out_used + N, one, one + N));
    for (uint32_t k = 0; k < K; k++) {
      if (one[N + k] == RLX_NO_ID || len == L) continue;
      rlx_shape ps = *oi_shape(c, one[N + k]); /* pad [len, ...] with zeros to [L, ...] */
      ps.dims[0] = L - len;
      rlx_id parts[2] = {one[N + k], RLX_NO_ID};
      RLX_TRY(oi_fill(c, ps, 0, &parts[1]));
      RLX_TRY(oi_concat(c, parts, 2, 0, &one[N + k]));
    }
    for (uint32_t k = 0; k < N + K; k++) res[(size_t)k * nb + b] = one[k];
  }
  for (uint32_t k = 0; k < N + K; k++) {
    if (k >= N && !c->out_used[k]) continue;
    RLX_TRY(stack(c, res + (size_t)k * nb, (uint32_t)nb, 0, false, &c->out[k]));
  }
  return RLX_OK;
}

const oi_op_entry oi_ops_control[] = {
    {"If", 1, OI_MAX_OPSET, map_if},
    {"Loop", 1, OI_MAX_OPSET, map_loop},
    {"Scan", 8, OI_MAX_OPSET, map_scan},
};
const uint32_t oi_ops_control_len = sizeof oi_ops_control / sizeof oi_ops_control[0];
