/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Sequence and optional values at the edges of a model: graph inputs of sequence / optional
 * type (their lengths come from the options: a sequence of N elements becomes N RLX Inputs
 * "NAME.0" ... "NAME.<N-1>"), and the SequenceProto / OptionalProto files that hold such values
 * in the ONNX test suite (parsed by protobuf-c code generated from onnx_data.proto). Graph
 * outputs are expanded the same way in import.c (set_outputs). */
#include <onnx/onnx_data.pb-c.h>
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

const Onnx__TypeProto *oi_container_elem_type(const Onnx__TypeProto *tp, bool *optional, bool *seq) {
  *optional = *seq = false;
  if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
    *optional = true;
    tp = tp->optional_type->elem_type;
  }
  if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
    *seq = true;
    tp = tp->sequence_type->elem_type;
  }
  return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp : NULL;
}

/* The options' length entry for `name`; false when there is none. */
static bool given_length(const oi_imp *m, const char *name, int64_t *len) {
  const rlx_onnx_options *o = m->opt;
  for (uint32_t i = 0; o && o->seq_names && o->seq_lengths && i < o->n_seqs; i++)
    if (o->seq_names[i] && strcmp(o->seq_names[i], name) == 0) {
      *len = o->seq_lengths[i];
      return true;
    }
  return false;
}

/* One tensor Input `name` of element type tp (shape from the options' entry when given). */
static rlx_status bind_element(oi_imp *m, oi_scope *s, const char *name, const Onnx__TypeProto *tp, rlx_dtype d,
                               rlx_id *out) {
  const rlx_named_tensor *h = oi_find_input(m, name);
  char what[300];
  snprintf(what, sizeof what, "graph input \"%.200s\"", name);
  rlx_shape sh;
  if (h) {
    if (h->tensor.shape.dtype != d)
      return rlx_errorf(RLX_ERR_SHAPE, "%s is %s in the model but the given tensor is %s", what, rlx_dtype_name(d),
                        rlx_dtype_name((rlx_dtype)h->tensor.shape.dtype));
    for (uint32_t k = 0; k < h->tensor.shape.rank; k++)
      if (!rlx_dim_is_static(h->tensor.shape.dims[k]))
        return rlx_errorf(RLX_ERR_INVALID_ARG, "options: input \"%s\" has a symbolic dim", name);
    sh = h->tensor.shape;
  } else {
    RLX_TRY(oi_type_shape(m, tp, what, &sh));
  }
  RLX_TRY(rlx_input(s->g, name, sh, out));
  size_t nb;
  if (m->freeze && h && h->tensor.data && rlx_shape_nbytes(&sh, &nb) == RLX_OK)
    RLX_TRY(rlx_constant(s->g, sh, h->tensor.data, nb, out)); /* specialized to the given value */
  return RLX_OK;
}

static rlx_status input_gap(oi_imp *m, oi_scope *s, const char *name, const char *reason) {
  char msg[700];
  snprintf(msg, sizeof msg, "graph input \"%.200s\" %s", name, reason);
  RLX_TRY(oi_gap_add(m, NULL, msg));
  return oi_scope_set(s, name, RLX_NO_ID, OI_VAL_POISONED, NULL);
}

rlx_status oi_bind_container_input(oi_imp *m, oi_scope *s, const Onnx__ValueInfoProto *v) {
  bool optional, seq;
  const Onnx__TypeProto *tp = oi_container_elem_type(v->type, &optional, &seq);
  if (!tp)
    return input_gap(m, s, v->name,
                     "is a sequence or optional of something other than tensors (only sequences and "
                     "optionals of tensors are supported)");
  rlx_dtype d;
  if (!oi_dtype_from_onnx(tp->tensor_type->elem_type, &d)) {
    char r[200];
    snprintf(r, sizeof r, "holds elements of dtype %s, which RLX does not have",
             oi_onnx_dtype_name(tp->tensor_type->elem_type));
    return input_gap(m, s, v->name, r);
  }
  size_t nl = strlen(v->name);
  char *ename = rlx_arena_alloc(&m->seqs, nl + 16, 1);
  if (!ename) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  int64_t len;
  bool present = true;
  if (given_length(m, v->name, &len)) {
    if (len == RLX_ONNX_ABSENT && !optional)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "options: graph input \"%s\" is marked absent but is not an optional",
                        v->name);
    if (len < RLX_ONNX_ABSENT || len > (int64_t)OI_MAX_UNROLL_NODES)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "options: graph input \"%s\" is given length %lld", v->name,
                        (long long)len);
    present = len != RLX_ONNX_ABSENT;
  } else if (!seq) { /* an optional tensor: present when given */
    len = 1;
    present = oi_find_input(m, v->name) != NULL;
    if (!present)
      return input_gap(m, s, v->name,
                       "is an optional whose presence is only known at run time; give it (as an input "
                       "of that name) or mark it absent in the options (seq_lengths = RLX_ONNX_ABSENT)");
  } else { /* a sequence: as many elements as the options give */
    for (len = 0; len < (int64_t)OI_MAX_UNROLL_NODES; len++) {
      snprintf(ename, nl + 16, "%s.%lld", v->name, (long long)len);
      if (!oi_find_input(m, ename)) break;
    }
    if (len == 0)
      return input_gap(m, s, v->name,
                       "is a sequence whose length is only known at run time; give its elements as "
                       "inputs NAME.0, NAME.1, ... or its length in the options (seq_names / "
                       "seq_lengths)");
  }
  oi_value val;
  if (!present) {
    memset(&val, 0, sizeof val);
    val.id = RLX_NO_ID;
    val.kind = OI_KIND_NONE;
    val.elem = (uint8_t)d;
  } else if (!seq) {
    rlx_id id;
    RLX_TRY(bind_element(m, s, v->name, tp, d, &id));
    val = (oi_value){.id = id, .state = OI_VAL_OK, .kind = OI_KIND_TENSOR};
  } else {
    rlx_id *ids = rlx_arena_alloc(&m->seqs, ((size_t)len + 1) * sizeof *ids, 8);
    if (!ids) return rlx_errorf(RLX_ERR_OOM, "out of memory");
    for (int64_t k = 0; k < len; k++) {
      char *nm = rlx_arena_alloc(&m->seqs, nl + 24, 1);
      if (!nm) return rlx_errorf(RLX_ERR_OOM, "out of memory");
      snprintf(nm, nl + 24, "%s.%lld", v->name, (long long)k);
      RLX_TRY(bind_element(m, s, nm, tp, d, &ids[k]));
    }
    RLX_TRY(oi_seq_value(m, ids, (uint32_t)len, (uint8_t)d, &val));
  }
  val.state = OI_VAL_OK;
  val.optional = optional;
  return oi_scope_set_value(s, v->name, &val);
}

/* ======================================================================================
 * SequenceProto / OptionalProto files
 * ====================================================================================== */

void rlx_onnx_seq_value_free(rlx_onnx_seq_value *s, const rlx_allocator *al) {
  if (!s) return;
  if (!al) al = rlx_default_allocator();
  for (uint32_t i = 0; s->v && i < s->n; i++) al->free(al->ctx, s->v[i].data);
  al->free(al->ctx, s->v);
  memset(s, 0, sizeof *s);
}

/* Converts tensors[0..n) into out->v (out->n counts the ones done, for cleanup). */
static rlx_status read_tensors(Onnx__TensorProto *const *ts, size_t n, const rlx_allocator *al,
                               rlx_onnx_seq_value *out) {
  if (n > 1000000) return rlx_errorf(RLX_ERR_UNSUPPORTED, "a sequence of %zu tensors", n);
  out->v = al->alloc(al->ctx, (n ? n : 1) * sizeof *out->v);
  if (!out->v) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    char what[64];
    snprintf(what, sizeof what, "element %zu", i);
    if (ts[i]->has_data_location && ts[i]->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s: external data is not read from a test-data file", what);
    void *buf = NULL;
    size_t nb = 0;
    RLX_TRY(oi_tensor_bytes(ts[i], what, NULL, al, &out->v[i].shape, &buf, &nb));
    if (!buf && !(buf = al->alloc(al->ctx, 1))) return rlx_errorf(RLX_ERR_OOM, "out of memory");
    out->v[i].data = buf;
    out->n = (uint32_t)i + 1;
  }
  return RLX_OK;
}

static rlx_status read_sequence(const Onnx__SequenceProto *sp, const rlx_allocator *al, rlx_onnx_seq_value *out) {
  out->is_sequence = true;
  if (sp->n_sparse_tensor_values || sp->n_sequence_values || sp->n_optional_values)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "sequence: only sequences of tensors are supported (this one holds %s)",
                      sp->n_sparse_tensor_values ? "sparse tensors"
                      : sp->n_sequence_values    ? "sequences"
                                                 : "optionals");
  if (sp->has_elem_type && sp->elem_type != 1 && sp->elem_type != 0 && !sp->n_tensor_values)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "sequence: elem_type %d (only tensors, 1, are supported)", sp->elem_type);
  return read_tensors(sp->tensor_values, sp->n_tensor_values, al, out);
}

rlx_status rlx_onnx_sequence_read(const uint8_t *data, size_t len, bool optional, const rlx_allocator *al,
                                  rlx_onnx_seq_value *out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_sequence_read: out is NULL");
  memset(out, 0, sizeof *out);
  if (!al) al = rlx_default_allocator();
  if (!data && len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_sequence_read: no data");
  oi_pb pb;
  const char *what = optional ? "optional" : "sequence";
  RLX_TRY(oi_pb_unpack(&pb, optional ? &onnx__optional_proto__descriptor : &onnx__sequence_proto__descriptor, data, len,
                       al, what));
  rlx_status st = RLX_OK;
  if (!optional) {
    st = read_sequence((const Onnx__SequenceProto *)pb.msg, al, out);
  } else {
    const Onnx__OptionalProto *op = (const Onnx__OptionalProto *)pb.msg;
    if (op->sparse_tensor_value || op->optional_value)
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "optional: only optional tensors and sequences of tensors are supported");
    else if (op->tensor_value && op->sequence_value)
      st = rlx_errorf(RLX_ERR_FORMAT, "optional: holds both a tensor_value and a sequence_value");
    else if (op->tensor_value)
      st = read_tensors(&op->tensor_value, 1, al, out);
    else if (op->sequence_value)
      st = read_sequence(op->sequence_value, al, out);
    else if (op->has_elem_type && op->elem_type == 4)
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "optional: maps are not supported");
    else
      out->absent = true;
  }
  oi_pb_free(&pb);
  if (st) rlx_onnx_seq_value_free(out, al);
  return st;
}

rlx_status rlx_onnx_sequence_load(const char *path, bool optional, const rlx_allocator *al, rlx_onnx_seq_value *out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_sequence_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!al) al = rlx_default_allocator();
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "no sequence path");
  uint8_t *data;
  size_t len;
  RLX_TRY(oi_read_file(path, RLX_ONNX_MAX_FILE_BYTES, al, &data, &len));
  rlx_status st = rlx_onnx_sequence_read(data, len, optional, al, out);
  al->free(al->ctx, data);
  if (st) return rlx_error_context(st, "%s", path);
  return RLX_OK;
}
