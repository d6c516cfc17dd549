/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX sequences and optionals. RLX graphs hold tensors only, so the importer keeps a sequence
 * as a list of RLX tensor values whose length is known at import time, and an optional as
 * present or absent at import time (oi_value in onnx_internal.h). The ops below rearrange those
 * lists while importing; only the tensors they hold become RLX nodes. Positions given as tensor
 * inputs must be known at import time (constants or bound input values). SequenceMap is unrolled
 * per element by inlining its body. */
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* ======================================================================================
 * Helpers
 * ====================================================================================== */

void oi_set_out_value(oi_node *c, uint32_t k, const oi_value *v) {
  if (v->kind == OI_KIND_TENSOR && !v->optional) {
    c->out[k] = v->id;
    return;
  }
  c->out_val[k] = *v;
  c->out_val[k].state = OI_VAL_OK;
  c->out_val[k].hint = NULL;
}

rlx_status oi_pass_value(oi_node *c) {
  if (!c->in_val[0]) return oi_bad(c, "input 0 (input) is required");
  oi_set_out_value(c, 0, c->in_val[0]);
  return RLX_OK;
}

/* Input k as a sequence (error naming `what` when it is missing or not a sequence). */
static rlx_status need_seq(oi_node *c, uint32_t k, const char *what, const oi_value **out) {
  const oi_value *v = k < c->n_in ? c->in_val[k] : NULL;
  if (!v) return oi_bad(c, "input %u (%s) is required", k, what);
  if (v->kind != OI_KIND_SEQ || v->optional)
    return oi_bad(c, "input %u (%s) must be a sequence, not a%s %s", k, what,
                  v->kind == OI_KIND_NONE || v->optional ? "n" : "", oi_kind_name(v));
  *out = v;
  return RLX_OK;
}

/* Input k as a tensor (sequences and optionals are an error naming `what`). */
static rlx_status need_tensor(oi_node *c, uint32_t k, const char *what, rlx_id *out) {
  const oi_value *v = k < c->n_in ? c->in_val[k] : NULL;
  if (!v) return oi_bad(c, "input %u (%s) is required", k, what);
  if (v->kind != OI_KIND_TENSOR || v->optional)
    return oi_bad(c, "input %u (%s) must be a tensor, not a%s %s", k, what,
                  v->kind == OI_KIND_NONE || v->optional ? "n" : "", oi_kind_name(v));
  *out = v->id;
  return RLX_OK;
}

static rlx_status seq_out(oi_node *c, uint32_t k, const rlx_id *ids, uint32_t n, uint8_t elem) {
  oi_value v;
  RLX_TRY(oi_seq_value(c->m, ids, n, elem, &v));
  oi_set_out_value(c, k, &v);
  return RLX_OK;
}

/* Position input k (a one-element integer tensor known at import time) checked against a
 * sequence of n elements: [-n, n-1], or [-n, n] when inserting; negative positions count from
 * the back. Absent: `def` (already normalized). */
static rlx_status position(oi_node *c, uint32_t k, uint32_t n, bool insert, int64_t def, uint32_t *out) {
  int64_t p = def;
  if (oi_has(c, k)) {
    int64_t *v;
    size_t cnt;
    RLX_TRY(oi_in_ints(c, k, "position", &v, &cnt));
    if (cnt != 1) return oi_bad(c, "input %u (position) must hold one value, not %zu", k, cnt);
    p = v[0];
    int64_t hi = insert ? (int64_t)n : (int64_t)n - 1;
    if (p < -(int64_t)n || p > hi)
      return oi_bad(c, "position %lld is out of range for a sequence of %u element%s (valid: %lld..%lld)", (long long)p,
                    n, n == 1 ? "" : "s", -(long long)n, (long long)hi);
    if (p < 0) p += n;
  } else if (!insert && n == 0) {
    return oi_bad(c, "the sequence is empty: there is no element to take");
  }
  *out = (uint32_t)p;
  return RLX_OK;
}

/* The element dtype every tensor of xs shares, or a format error naming the first mismatch. */
static rlx_status common_elem(oi_node *c, const rlx_id *xs, uint32_t n, uint8_t elem, uint8_t *out) {
  for (uint32_t i = 0; i < n; i++) {
    uint8_t d = oi_shape(c, xs[i])->dtype;
    if (elem != OI_ELEM_UNKNOWN && d != elem)
      return oi_bad(c, "sequence elements must share one dtype: element %u is %s but the sequence holds %s", i,
                    rlx_dtype_name((rlx_dtype)d), rlx_dtype_name((rlx_dtype)elem));
    elem = d;
  }
  *out = elem;
  return RLX_OK;
}

rlx_status oi_concat_many(oi_node *c, const rlx_id *xs, uint32_t n, int64_t axis, rlx_id *out) {
  if (n == 0) return oi_bad(c, "nothing to concatenate");
  rlx_id *parts = oi_scratch(c, ((size_t)n + 1) * sizeof *parts);
  if (!parts) return oi_nomem(c);
  memcpy(parts, xs, (size_t)n * sizeof *parts);
  while (n > 1) { /* RLX nodes take up to 64 operands: concatenate in rounds */
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i += 64) {
      rlx_id piece;
      RLX_TRY(oi_concat(c, parts + i, n - i < 64 ? n - i : 64, axis, &piece));
      parts[m++] = piece;
    }
    n = m;
  }
  *out = parts[0];
  return RLX_OK;
}

/* ======================================================================================
 * Sequence ops
 * ====================================================================================== */

static rlx_status map_sequence_empty(oi_node *c) {
  int64_t dt;
  RLX_TRY(oi_attr_i(c, "dtype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &dt));
  rlx_dtype d;
  if (dt < INT32_MIN || dt > INT32_MAX || !oi_dtype_from_onnx((int32_t)dt, &d))
    return oi_unsupported(c, "sequences of dtype %s", oi_onnx_dtype_name((int32_t)dt));
  return seq_out(c, 0, NULL, 0, (uint8_t)d);
}

static rlx_status map_sequence_construct(oi_node *c) {
  if (c->n_in == 0) return oi_bad(c, "SequenceConstruct needs at least one input");
  rlx_id *xs = oi_scratch(c, c->n_in * sizeof *xs);
  if (!xs) return oi_nomem(c);
  for (uint32_t i = 0; i < c->n_in; i++) RLX_TRY(need_tensor(c, i, "inputs", &xs[i]));
  uint8_t elem = 0;
  RLX_TRY(common_elem(c, xs, c->n_in, OI_ELEM_UNKNOWN, &elem));
  return seq_out(c, 0, xs, c->n_in, elem);
}

static rlx_status map_sequence_insert(oi_node *c) {
  const oi_value *s = NULL;
  rlx_id x = RLX_NO_ID;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s));
  RLX_TRY(need_tensor(c, 1, "tensor", &x));
  uint8_t d = oi_shape(c, x)->dtype;
  if (s->elem != OI_ELEM_UNKNOWN && d != s->elem)
    return oi_bad(c, "the inserted tensor is %s but the sequence holds %s", rlx_dtype_name((rlx_dtype)d),
                  rlx_dtype_name((rlx_dtype)s->elem));
  uint32_t p;
  RLX_TRY(position(c, 2, s->n_seq, true, s->n_seq, &p));
  rlx_id *ids = oi_scratch(c, ((size_t)s->n_seq + 1) * sizeof *ids);
  if (!ids) return oi_nomem(c);
  if (p) memcpy(ids, s->seq, p * sizeof *ids);
  ids[p] = x;
  if (s->n_seq > p) memcpy(ids + p + 1, s->seq + p, (s->n_seq - p) * sizeof *ids);
  return seq_out(c, 0, ids, s->n_seq + 1, d);
}

static rlx_status map_sequence_at(oi_node *c) {
  const oi_value *s = NULL;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s));
  if (!oi_has(c, 1)) return oi_bad(c, "input 1 (position) is required");
  uint32_t p;
  RLX_TRY(position(c, 1, s->n_seq, false, 0, &p));
  c->out[0] = s->seq[p];
  return RLX_OK;
}

static rlx_status map_sequence_erase(oi_node *c) {
  const oi_value *s = NULL;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s));
  uint32_t p;
  RLX_TRY(position(c, 1, s->n_seq, false, (int64_t)s->n_seq - 1, &p));
  rlx_id *ids = oi_scratch(c, ((size_t)s->n_seq + 1) * sizeof *ids);
  if (!ids) return oi_nomem(c);
  if (p) memcpy(ids, s->seq, p * sizeof *ids);
  if (s->n_seq > p + 1) memcpy(ids + p, s->seq + p + 1, (s->n_seq - p - 1) * sizeof *ids);
  return seq_out(c, 0, ids, s->n_seq - 1, s->elem);
}

static rlx_status map_sequence_length(oi_node *c) {
  const oi_value *s = NULL;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s));
  return oi_scalar(c, RLX_I64, (double)s->n_seq, &c->out[0]);
}

static rlx_status map_concat_from_sequence(oi_node *c) {
  const oi_value *s = NULL;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s));
  const Onnx__AttributeProto *aa = oi_attr(c, "axis");
  if (!aa) return oi_bad(c, "attribute axis is required");
  int64_t axis, new_axis;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  RLX_TRY(oi_attr_i(c, "new_axis", 0, &new_axis));
  if (new_axis != 0 && new_axis != 1)
    return oi_bad(c, "attribute new_axis is %lld; it must be 0 or 1", (long long)new_axis);
  if (s->n_seq == 0) return oi_bad(c, "the sequence is empty: there is nothing to concatenate");
  const rlx_shape s0 = *oi_shape(c, s->seq[0]);
  uint32_t rank = s0.rank + (new_axis ? 1u : 0u), a;
  if (rank > RLX_MAX_RANK) return oi_unsupported(c, "stacking rank-%u tensors", s0.rank);
  RLX_TRY(oi_axis(c, axis, rank, "attribute axis", &a));
  uint8_t elem = 0;
  RLX_TRY(common_elem(c, s->seq, s->n_seq, OI_ELEM_UNKNOWN, &elem));
  rlx_id *parts = oi_scratch(c, ((size_t)s->n_seq + 1) * sizeof *parts);
  if (!parts) return oi_nomem(c);
  for (uint32_t i = 0; i < s->n_seq; i++) {
    const rlx_shape si = *oi_shape(c, s->seq[i]);
    if (si.rank != s0.rank)
      return oi_bad(c, "element %u has rank %u but element 0 has rank %u; concatenated elements need one rank", i,
                    si.rank, s0.rank);
    if (!new_axis) {
      parts[i] = s->seq[i];
      continue;
    }
    rlx_dim d[RLX_MAX_RANK];
    for (uint32_t j = 0, q = 0; j < rank; j++) d[j] = j == a ? 1 : si.dims[q++];
    RLX_TRY(oi_reshape_dims(c, s->seq[i], rank, d, &parts[i]));
  }
  return oi_concat_many(c, parts, s->n_seq, a, &c->out[0]);
}

static rlx_status map_split_to_sequence(oi_node *c) {
  rlx_id x = RLX_NO_ID;
  RLX_TRY(need_tensor(c, 0, "input", &x));
  int64_t axis, keepdims;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  RLX_TRY(oi_attr_i(c, "keepdims", 1, &keepdims));
  const rlx_shape xs = *oi_shape(c, x);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  rlx_dim d = xs.dims[a];
  if (!rlx_dim_is_static(d))
    return oi_unsupported(c, "splitting a symbolic axis (its extent gives the sequence length)");
  int64_t *sizes;
  size_t n;
  bool squeeze = false;
  if (!oi_has(c, 1)) { /* one element per index along the axis */
    n = (size_t)d;
    sizes = oi_scratch(c, (n + 1) * sizeof *sizes);
    if (!sizes) return oi_nomem(c);
    for (size_t i = 0; i < n; i++) sizes[i] = 1;
    squeeze = keepdims == 0;
  } else {
    int64_t *v;
    size_t cnt;
    RLX_TRY(oi_in_ints(c, 1, "split", &v, &cnt));
    uint32_t srank = oi_in_shape(c, 1)->rank;
    if (srank > 1) return oi_bad(c, "input 1 (split) must be a scalar or 1-D, not rank %u", srank);
    if (srank == 0) { /* chunks of one size; the last one may be shorter */
      if (v[0] <= 0) return oi_bad(c, "split is %lld; a chunk size must be > 0", (long long)v[0]);
      n = d ? (size_t)((d + v[0] - 1) / v[0]) : 0;
      sizes = oi_scratch(c, (n + 1) * sizeof *sizes);
      if (!sizes) return oi_nomem(c);
      for (size_t i = 0; i < n; i++) sizes[i] = d - (int64_t)i * v[0] < v[0] ? d - (int64_t)i * v[0] : v[0];
    } else {
      int64_t sum = 0;
      for (size_t i = 0; i < cnt; i++) {
        if (v[i] < 0) return oi_bad(c, "split[%zu] is %lld; sizes must be >= 0", i, (long long)v[i]);
        sum += v[i];
      }
      if (sum != d) return oi_bad(c, "split sums to %lld but axis %u has extent %lld", (long long)sum, a, (long long)d);
      sizes = v;
      n = cnt;
    }
  }
  if (n > OI_MAX_UNROLL_NODES) return oi_unsupported(c, "a sequence of %zu elements", n);
  rlx_id *ids = oi_scratch(c, (n + 1) * sizeof *ids);
  if (!ids) return oi_nomem(c);
  int64_t start = 0;
  for (size_t i = 0; i < n; i++) {
    RLX_TRY(oi_narrow(c, x, a, start, sizes[i], &ids[i]));
    start += sizes[i];
    if (squeeze) {
      rlx_dim dd[RLX_MAX_RANK];
      uint32_t r = 0;
      for (uint32_t j = 0; j < xs.rank; j++)
        if (j != a) dd[r++] = xs.dims[j];
      RLX_TRY(oi_reshape_dims(c, ids[i], r, dd, &ids[i]));
    }
  }
  return seq_out(c, 0, ids, (uint32_t)n, xs.dtype);
}

/* The tensor dtype a body output declares, or OI_ELEM_UNKNOWN. */
static uint8_t declared_elem(const Onnx__ValueInfoProto *v) {
  rlx_dtype d;
  if (v->type && v->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
      oi_dtype_from_onnx(v->type->tensor_type->elem_type, &d))
    return (uint8_t)d;
  return OI_ELEM_UNKNOWN;
}

static rlx_status map_sequence_map(oi_node *c) {
  const Onnx__GraphProto *body;
  RLX_TRY(oi_attr_graph(c, "body", &body));
  const oi_value *s0 = NULL;
  RLX_TRY(need_seq(c, 0, "input_sequence", &s0));
  if (body->n_input != c->n_in)
    return oi_bad(c, "attribute body takes %zu inputs but the node has %u", body->n_input, c->n_in);
  if (body->n_output != c->n_out)
    return oi_bad(c, "attribute body has %zu outputs but the node has %u", body->n_output, c->n_out);
  uint32_t n = s0->n_seq;
  for (uint32_t k = 1; k < c->n_in; k++) {
    const oi_value *v = c->in_val[k];
    if (!v) return oi_bad(c, "input %u is empty; SequenceMap's additional inputs are required", k);
    if (v->optional) return oi_bad(c, "input %u is an optional; SequenceMap takes sequences and tensors", k);
    if (v->kind == OI_KIND_SEQ && v->n_seq != n)
      return oi_bad(c, "input %u is a sequence of %u elements but input 0 has %u; mapped sequences need one length", k,
                    v->n_seq, n);
  }
  oi_value *args = oi_scratch(c, ((size_t)c->n_in + 1) * sizeof *args);
  oi_value *outs = oi_scratch(c, ((size_t)c->n_out + 1) * sizeof *outs);
  rlx_id *elems = oi_scratch(c, ((size_t)c->n_out * n + 1) * sizeof *elems);
  if (!args || !outs || !elems) return oi_nomem(c);
  uint64_t start = c->m->emitted;
  for (uint32_t i = 0; i < n; i++) {
    if (c->m->emitted - start > OI_MAX_UNROLL_NODES)
      return oi_unsupported(c, "unrolling would exceed %u RLX nodes (after %u elements)", OI_MAX_UNROLL_NODES, i);
    for (uint32_t k = 0; k < c->n_in; k++) {
      const oi_value *v = c->in_val[k];
      rlx_id id = v->kind == OI_KIND_SEQ ? v->seq[i] : v->id;
      args[k] = (oi_value){.id = id, .state = OI_VAL_OK, .kind = OI_KIND_TENSOR};
    }
    RLX_TRY(oi_inline_graph_values(c, body, args, c->n_in, outs, c->n_out));
    for (uint32_t k = 0; k < c->n_out; k++) {
      if (outs[k].kind != OI_KIND_TENSOR || outs[k].optional)
        return oi_unsupported(c, "a body output that is a%s %s (output sequences of sequences)",
                              outs[k].optional ? "n" : "", oi_kind_name(&outs[k]));
      elems[(size_t)k * n + i] = outs[k].id;
    }
  }
  for (uint32_t k = 0; k < c->n_out; k++) {
    uint8_t elem = 0;
    RLX_TRY(common_elem(c, elems + (size_t)k * n, n, declared_elem(body->output[k]), &elem));
    RLX_TRY(seq_out(c, k, elems + (size_t)k * n, n, elem));
  }
  return RLX_OK;
}

/* ======================================================================================
 * Optionals
 * ====================================================================================== */

/* The element dtype a TypeProto names (a tensor, or a sequence / optional of tensors). */
static uint8_t type_elem(const Onnx__TypeProto *tp) {
  for (int depth = 0; tp && depth < 4; depth++) {
    rlx_dtype d;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      return oi_dtype_from_onnx(tp->tensor_type->elem_type, &d) ? (uint8_t)d : OI_ELEM_UNKNOWN;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: tp = tp->sequence_type->elem_type; break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: tp = tp->optional_type->elem_type; break;
    default: return OI_ELEM_UNKNOWN;
    }
  }
  return OI_ELEM_UNKNOWN;
}

static rlx_status map_optional(oi_node *c) {
  oi_value v;
  if (c->n_in >= 1 && c->in_val[0]) {
    v = *c->in_val[0];
    if (v.optional) return oi_bad(c, "input 0 is already an optional; Optional wraps a tensor or a sequence");
    v.optional = true;
  } else {
    const Onnx__AttributeProto *a = oi_attr(c, "type");
    if (!a || !a->tp) return oi_bad(c, "an Optional without an input needs attribute type");
    memset(&v, 0, sizeof v);
    v.id = RLX_NO_ID;
    v.kind = OI_KIND_NONE;
    v.optional = true;
    v.elem = type_elem(a->tp);
  }
  oi_set_out_value(c, 0, &v);
  return RLX_OK;
}

static rlx_status map_optional_has_element(oi_node *c) {
  const oi_value *v = c->n_in >= 1 ? c->in_val[0] : NULL;
  if (!v && c->opset < 18) return oi_bad(c, "input 0 (input) is required before opset 18");
  return oi_scalar(c, RLX_BOOL, v && v->kind != OI_KIND_NONE ? 1.0 : 0.0, &c->out[0]);
}

static rlx_status map_optional_get_element(oi_node *c) {
  const oi_value *v = c->n_in >= 1 ? c->in_val[0] : NULL;
  if (!v) return oi_bad(c, "input 0 (input) is required");
  if (v->kind == OI_KIND_NONE) return oi_bad(c, "input 0 is an empty optional: it has no element to get");
  oi_value e = *v;
  e.optional = false;
  oi_set_out_value(c, 0, &e);
  return RLX_OK;
}

const oi_op_entry oi_ops_sequence[] = {
    {"SequenceEmpty", 11, OI_MAX_OPSET, map_sequence_empty},
    {"SequenceConstruct", 11, OI_MAX_OPSET, map_sequence_construct},
    {"SequenceInsert", 11, OI_MAX_OPSET, map_sequence_insert},
    {"SequenceAt", 11, OI_MAX_OPSET, map_sequence_at},
    {"SequenceErase", 11, OI_MAX_OPSET, map_sequence_erase},
    {"SequenceLength", 11, OI_MAX_OPSET, map_sequence_length},
    {"ConcatFromSequence", 11, OI_MAX_OPSET, map_concat_from_sequence},
    {"SplitToSequence", 11, OI_MAX_OPSET, map_split_to_sequence},
    {"SequenceMap", 17, OI_MAX_OPSET, map_sequence_map},
    {"Optional", 15, OI_MAX_OPSET, map_optional},
    {"OptionalHasElement", 15, OI_MAX_OPSET, map_optional_has_element},
    {"OptionalGetElement", 15, OI_MAX_OPSET, map_optional_get_element},
};
const uint32_t oi_ops_sequence_len = sizeof oi_ops_sequence / sizeof oi_ops_sequence[0];

bool oi_op_takes_containers(const char *op_type) {
  static const char *const others[] = {"Identity", "If", "Loop"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
    if (strcmp(op_type, others[i]) == 0) return true;
  for (uint32_t i = 0; i < oi_ops_sequence_len; i++)
    if (strcmp(op_type, oi_ops_sequence[i].op_type) == 0) return true;
  return false;
}
