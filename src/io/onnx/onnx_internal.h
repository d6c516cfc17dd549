/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Internals of the ONNX importer (src/io/onnx/). The model is unpacked by protobuf-c code
 * generated at build time from onnx.proto (pb.c), validated (check.c), and imported node by node
 * in topological order (import.c) through one mapping function per ONNX op (ops_*.c, listed in
 * ops_table.c) that emits RLX nodes with the helpers of emit.c. */
#ifndef RLX_ONNX_INTERNAL_H
#define RLX_ONNX_INTERNAL_H

#include <onnx/onnx.pb-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "ir_internal.h"
#include "rlx/onnx.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX importer assumes a little-endian host (raw_data and RLX constants are little-endian)"
#endif

/* Highest default-domain opset the importer knows (onnx 1.23 = opset 28). A row with this bound
 * maps an op whose versions after 17 changed nothing but type lists (bfloat16, float8, int4 ...;
 * dtypes RLX lacks are reported by name), or whose later semantics its mapper handles; rows of
 * ops with unhandled later versions stop at the opset before them. docs/onnx.md lists why. */
#define OI_MAX_OPSET 28
/* Unrolled loops and scans stop when they would add more RLX nodes than this. */
#define OI_MAX_UNROLL_NODES 200000u
/* Whole-import work bounds: ONNX nodes visited (bodies are imported once per use) and RLX nodes
 * emitted. Exceeding either stops the import with RLX_ERR_UNSUPPORTED. */
#define OI_MAX_WORK 4000000u
#define OI_MAX_NODE_IO 4096u /* inputs or outputs of one node */
/* Constants and index tables the importer materializes itself (ConstantOfShape, Range, Resize
 * indices, ...) stay below this; larger ones are reported as unsupported. */
#define OI_MAX_CONST_BYTES ((size_t)256 << 20)

/* ---- a small open-addressing hash map: string or pointer keys -> uint64 ---- */
typedef struct oi_map {
  const rlx_allocator *al;
  const void **keys;
  uint64_t *vals;
  uint32_t cap, n;
  bool ptr_keys;
} oi_map;
void oi_map_init(oi_map *m, const rlx_allocator *al, bool ptr_keys);
bool oi_map_get(const oi_map *m, const void *key, uint64_t *val);
rlx_status oi_map_put(oi_map *m, const void *key, uint64_t val); /* insert or overwrite */
void oi_map_free(oi_map *m);

/* ---- protobuf loading (pb.c) ---- */
typedef struct oi_pb {
  ProtobufCAllocator pa; /* budgeted allocator handed to protobuf-c */
  const rlx_allocator *al;
  size_t used, budget;
  bool over_budget, oom;
  ProtobufCMessage *msg;
} oi_pb;
/* Checks the wire format of `data` against descriptor `d` (wire types, lengths, nesting depth,
 * strings without NULs and valid UTF-8), then unpacks it with a memory budget. */
rlx_status oi_pb_unpack(oi_pb *pb, const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                        const rlx_allocator *al, const char *what);
void oi_pb_free(oi_pb *pb);
/* Reads a whole regular file of at most `max` bytes (allocated with al). */
rlx_status oi_read_file(const char *path, size_t max, const rlx_allocator *al, uint8_t **out, size_t *len);

/* ---- tensors (tensor.c) ---- */
/* ONNX TensorProto.DataType -> RLX dtype; false (and *name set) when RLX has no such dtype. */
bool oi_dtype_from_onnx(int32_t t, rlx_dtype *out);
const char *oi_onnx_dtype_name(int32_t t); /* "FLOAT", "UINT16", "17" ... */
int32_t oi_dtype_to_onnx(rlx_dtype t);
/* Structural checks of a tensor (dtype known, dims >= 0 without overflow, rank <= 8, data count
 * or raw size = elements). `what` names it in errors. Unsupported dtypes give
 * RLX_ERR_UNSUPPORTED; everything else RLX_ERR_FORMAT. */
rlx_status oi_tensor_check(const Onnx__TensorProto *t, const char *what, rlx_shape *shape);
/* Converts a checked tensor into little-endian bytes of shape->dtype, allocated with `al`
 * (*data NULL for zero bytes). External data is read from base_dir with path containment. */
rlx_status oi_tensor_bytes(const Onnx__TensorProto *t, const char *what, const char *base_dir, const rlx_allocator *al,
                           rlx_shape *shape, void **data, size_t *nbytes);
/* Reads [offset, offset+len) of the external file `location` inside base_dir into a new buffer
 * of `expect` bytes (allocated with al only after the range was checked against the file). */
rlx_status oi_external_read(const char *base_dir, const char *location, uint64_t offset, uint64_t len, bool has_len,
                            size_t expect, const rlx_allocator *al, void **out, const char *what);

/* ---- validation (check.c) ---- */
typedef struct oi_graph_info {
  const Onnx__GraphProto *g;
  uint32_t *order;   /* node indices in topological order */
  const char **free; /* names used inside but defined in an enclosing graph */
  uint32_t n_free;
  uint32_t depth; /* 0 = the model's main graph */
} oi_graph_info;

typedef struct oi_model_info {
  const rlx_allocator *al;
  oi_graph_info *graphs;
  uint32_t n_graphs, cap_graphs;
  oi_map by_graph;   /* GraphProto* -> index into graphs */
  oi_map used;       /* every value name read by some node or graph output, in any graph */
  rlx_arena strings; /* value names copied out of attributes (Gradient's xs, zs, y) */
} oi_model_info;
/* Validates every graph of the model (names, types, dims, tensors, dangling inputs, duplicate
 * outputs, cycles, nesting depth) and computes topological orders and free variables. */
rlx_status oi_check_model(const Onnx__ModelProto *m, const rlx_allocator *al, oi_model_info *info);
void oi_model_info_free(oi_model_info *info);
const oi_graph_info *oi_graph_info_of(const oi_model_info *info, const Onnx__GraphProto *g);
/* Attribute type, deduced from the value fields when the (old-style) type field is unset. */
Onnx__AttributeProto__AttributeType oi_attr_type(const Onnx__AttributeProto *a);

/* ---- import state (import.c) ---- */
enum { OI_VAL_OK = 0, OI_VAL_POISONED = 1 };
/* What a value holds. RLX graphs hold tensors only: an ONNX sequence is a list of RLX tensor
 * values whose length is known at import time, an ONNX optional is present or absent at import
 * time (ops_sequence.c). */
enum { OI_KIND_TENSOR = 0, OI_KIND_SEQ = 1, OI_KIND_NONE = 2 /* an absent optional */ };
#define OI_ELEM_UNKNOWN 0xffu /* element dtype of a sequence nothing says anything about */
typedef struct oi_value {
  rlx_id id; /* OI_KIND_TENSOR */
  uint8_t state;
  uint8_t kind;           /* OI_KIND_* */
  bool optional;          /* an ONNX optional (present unless kind is OI_KIND_NONE) */
  uint8_t elem;           /* sequences and absent optionals: element rlx_dtype or OI_ELEM_UNKNOWN */
  const rlx_tensor *hint; /* known value of a graph input (options), or NULL */
  const rlx_id *seq;      /* OI_KIND_SEQ: the elements (import-lifetime memory) */
  uint32_t n_seq;
} oi_value;

typedef struct oi_imp oi_imp;

typedef struct oi_scope {
  oi_imp *m;
  rlx_graph *g;
  struct oi_scope *parent; /* lookups fall through to it when `inline_parent` */
  bool inline_parent;      /* body imported into the same RLX graph (unrolled / inlined) */
  oi_map names;            /* value name -> index into vals */
  oi_value *vals;
  uint32_t n_vals, cap_vals;
  uint32_t depth; /* ONNX graph nesting depth */
} oi_scope;

typedef struct oi_gap {
  char *key;   /* "OpType\0reason" grouping key (reason printed) */
  char *nodes; /* first few node labels */
  uint32_t count;
} oi_gap;

struct oi_imp {
  const rlx_allocator *al;
  const rlx_onnx_options *opt;
  const char *base_dir;
  const Onnx__ModelProto *model;
  oi_model_info info;
  int64_t opset;          /* of the default domain */
  int64_t opset_training; /* of OI_TRAINING_DOMAIN (1 when the model imports no version) */
  bool report;            /* collect gaps only */
  oi_gap *gaps;
  uint32_t n_gaps, cap_gaps;
  oi_map dim_syms; /* dim_param name -> symbol */
  uint32_t next_sym;
  uint64_t emitted; /* RLX nodes emitted (bounds unrolling) */
  uint64_t visited; /* ONNX nodes imported, bodies counted per import */
  bool needs_value; /* some op needed a value only known at run time */
  bool freeze;      /* inputs with values in the options become Constants */
  rlx_onnx_weights weights;
  rlx_arena seqs;    /* element lists of sequence values (one import attempt) */
  uint32_t fn_depth; /* model-local functions being inlined (function.c) */
};

void oi_scope_init(oi_scope *s, oi_imp *m, rlx_graph *g, oi_scope *parent, bool inline_parent, uint32_t depth);
void oi_scope_free(oi_scope *s);
rlx_status oi_scope_set(oi_scope *s, const char *name, rlx_id id, uint8_t state, const rlx_tensor *hint);
/* Binds a name to a whole value (sequences, optionals). */
rlx_status oi_scope_set_value(oi_scope *s, const char *name, const oi_value *v);
/* Looks a value up in s and, through inline scopes, its parents; NULL when unknown. */
const oi_value *oi_scope_get(const oi_scope *s, const char *name);
/* A sequence value of n elements (copied into import-lifetime memory); elem is the element
 * rlx_dtype or OI_ELEM_UNKNOWN. */
rlx_status oi_seq_value(oi_imp *m, const rlx_id *ids, uint32_t n, uint8_t elem, oi_value *out);
/* "sequence", "optional", "empty optional" or "tensor": names a value's kind in messages. */
const char *oi_kind_name(const oi_value *v);

/* Imports one node into scope s (through the op table, or inlining a model-local function). */
rlx_status oi_import_node(oi_scope *s, const Onnx__NodeProto *np);

/* ---- model-local functions (function.c) ---- */
/* The function of m->model that node np calls (same name and domain), or NULL. */
const Onnx__FunctionProto *oi_model_function(const oi_imp *m, const Onnx__NodeProto *np);
/* Imports the body of f in place of the call np, its formal inputs bound to np's inputs and its
 * attribute references to np's attributes. RLX_ERR_UNSUPPORTED with the reason in why (cap
 * bytes) for what it cannot inline; gaps inside the body are recorded as usual. */
rlx_status oi_inline_function(oi_scope *s, const Onnx__NodeProto *np, const Onnx__FunctionProto *f, char *why,
                              size_t cap);

/* Imports the initializers and nodes of `gp` into scope `s` (whose formal inputs and captures
 * the caller has bound already). */
rlx_status oi_import_nodes(oi_scope *s, const Onnx__GraphProto *gp);
/* Converts an ONNX value type into an RLX shape (dims bound through the options, dim_params
 * becoming symbols); `what` names it in errors. */
rlx_status oi_type_shape(oi_imp *m, const Onnx__TypeProto *tp, const char *what, rlx_shape *out);
/* The options' `inputs` entry named `name`, or NULL. */
const rlx_named_tensor *oi_find_input(const oi_imp *m, const char *name);
/* Graph inputs of sequence / optional type (containers.c): binds NAME to a sequence of Inputs
 * NAME.0 ... (lengths from the options), an optional tensor Input NAME or an absent optional;
 * unknown lengths and unsupported element types are gaps. */
rlx_status oi_bind_container_input(oi_imp *m, oi_scope *s, const Onnx__ValueInfoProto *v);
/* The tensor type inside optional(tensor), sequence(tensor) or optional(sequence(tensor)) (tp
 * itself for a tensor type); NULL for anything else. */
const Onnx__TypeProto *oi_container_elem_type(const Onnx__TypeProto *tp, bool *optional, bool *seq);
/* Records an unsupported op/opset/dtype of node np with a reason. */
rlx_status oi_gap_add(oi_imp *m, const Onnx__NodeProto *np, const char *reason);

/* ---- mapping one node (emit.c) ---- */
typedef struct oi_node {
  oi_imp *m;
  oi_scope *sc;
  rlx_graph *g;
  const Onnx__NodeProto *np;
  int64_t opset;
  uint32_t n_in, n_out;
  rlx_id *in;              /* RLX_NO_ID for a missing optional input */
  const rlx_tensor **hint; /* known value of input k (graph input hints), or NULL */
  const oi_value **in_val; /* input k's whole value (sequences, optionals), NULL when missing */
  rlx_id *out;             /* set by the mapper; RLX_NO_ID = not produced */
  oi_value *out_val;       /* a non-tensor output k: set with oi_set_out_value */
  bool *out_used;          /* is output k read anywhere (or a graph output)? */
  rlx_arena scratch;       /* freed after the node */
  bool unsupported;        /* the mapper reported a gap (message in reason) */
  size_t scratch_over;     /* size of a scratch request over OI_MAX_CONST_BYTES */
  char reason[512];
} oi_node;

typedef rlx_status (*oi_map_fn)(oi_node *c);
typedef struct oi_op_entry {
  const char *op_type;
  int32_t min_opset, max_opset;
  oi_map_fn fn;
} oi_op_entry;
/* One table per family (ops_<family>.c); oi_op_find searches them all (ops_table.c). */
#define OI_FAMILY_TABLES(X)                                                                                         \
  X(elementwise)                                                                                                    \
  X(nn) X(resize) X(shape) X(reduce) X(linalg) X(control) X(rnn) X(misc) X(sequence) X(datadep) X(signal) X(sample) \
      X(pool_index) X(attention)
#define OI_X(f)                          \
  extern const oi_op_entry oi_ops_##f[]; \
  extern const uint32_t oi_ops_##f##_len;
OI_FAMILY_TABLES(OI_X)
#undef OI_X
const oi_op_entry *oi_op_find(const char *op_type);
/* The ops of the domain "ai.onnx.preview.training" have their own table (ops_training.c), searched
 * only for nodes of that domain and versioned by its opset import. */
#define OI_TRAINING_DOMAIN "ai.onnx.preview.training"
extern const oi_op_entry oi_ops_training[];
extern const uint32_t oi_ops_training_len;
const oi_op_entry *oi_training_op_find(const char *op_type);

/* Formats `node "name" (Op)` or `node #i (Op, output "y")` into buf. */
const char *oi_node_label(const Onnx__NodeProto *np, char *buf, size_t cap);

/* Same, for a value that is only known at run time (the importer may retry with the inputs'
 * values from the options). */
rlx_status oi_needs_value(oi_node *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Marks the node unsupported with a reason; returns RLX_ERR_UNSUPPORTED. */
rlx_status oi_unsupported(oi_node *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* An error about the node's attribute or input: RLX_ERR_FORMAT with the message. */
rlx_status oi_bad(oi_node *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Scratch memory freed after the node; NULL over OI_MAX_CONST_BYTES or when out of memory, which
 * oi_nomem then reports (unsupported size or RLX_ERR_OOM). */
void *oi_scratch(oi_node *c, size_t bytes);
rlx_status oi_nomem(oi_node *c);

/* Attributes. A missing attribute gives the default; one of the wrong type is an error. */
const Onnx__AttributeProto *oi_attr(const oi_node *c, const char *name);
rlx_status oi_attr_i(oi_node *c, const char *name, int64_t def, int64_t *out);
rlx_status oi_attr_f(oi_node *c, const char *name, float def, float *out);
rlx_status oi_attr_s(oi_node *c, const char *name, const char *def, const char **out);
/* ints/floats lists: *present tells whether the attribute exists (may be NULL). */
rlx_status oi_attr_ints(oi_node *c, const char *name, const int64_t **v, size_t *n, bool *present);
rlx_status oi_attr_floats(oi_node *c, const char *name, const float **v, size_t *n, bool *present);
rlx_status oi_attr_graph(oi_node *c, const char *name, const Onnx__GraphProto **g);

/* Inputs. */
bool oi_has(const oi_node *c, uint32_t k);
const rlx_shape *oi_shape(const oi_node *c, rlx_id id);
const rlx_shape *oi_in_shape(const oi_node *c, uint32_t k);
/* Needs input k (error naming it when missing). */
rlx_status oi_need(oi_node *c, uint32_t k, const char *what);
/* The value of input k when it is known at import time (a Constant node or a hinted graph
 * input): data (little-endian, row-major) and shape. */
bool oi_in_value(const oi_node *c, uint32_t k, const void **data, rlx_shape *shape);
bool oi_const_value(const oi_node *c, rlx_id id, const void **data, rlx_shape *shape);
/* Input k's value as int64 / double numbers (any real dtype); unsupported when not known at
 * import time. *v lives in the node's scratch memory. */
rlx_status oi_in_ints(oi_node *c, uint32_t k, const char *what, int64_t **v, size_t *n);
rlx_status oi_in_f64s(oi_node *c, uint32_t k, const char *what, double **v, size_t *n);
/* Element i of raw data of dtype t as double / int64 (Cast semantics). */
double oi_elem_f64(const void *data, rlx_dtype t, size_t i);
int64_t oi_elem_i64(const void *data, rlx_dtype t, size_t i);

/* Emission: builds one RLX node (shape inferred), constant-folding it with the CPU reference
 * kernels when every operand is a Constant. */
/* Installs the importer's add hook on g (work counting and constant folding; emit.c). */
void oi_set_fold_hook(oi_imp *m, rlx_graph *g);
rlx_status oi_emit(oi_node *c, rlx_op op, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out);
rlx_status oi_const(oi_node *c, rlx_shape shape, const void *data, size_t nbytes, rlx_id *out);
/* A constant of dtype t holding v (rank 0, or the given shape filled with v). */
rlx_status oi_scalar(oi_node *c, rlx_dtype t, double v, rlx_id *out);
rlx_status oi_fill(oi_node *c, rlx_shape shape, double v, rlx_id *out);
rlx_status oi_i64s(oi_node *c, const int64_t *v, uint32_t n, rlx_id *out); /* 1-D i64 */
rlx_status oi_unary(oi_node *c, rlx_act act, rlx_id x, rlx_id *out);
rlx_status oi_bin(oi_node *c, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out);
/* a op scalar v (v in a's dtype) */
rlx_status oi_bin_s(oi_node *c, rlx_binop op, rlx_id a, double v, rlx_id *out);
rlx_status oi_cmp(oi_node *c, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out);
rlx_status oi_where(oi_node *c, rlx_id cond, rlx_id a, rlx_id b, rlx_id *out);
rlx_status oi_cast(oi_node *c, rlx_id x, rlx_dtype t, rlx_id *out); /* no-op if same */
rlx_status oi_reshape(oi_node *c, rlx_id x, uint32_t rank, const int64_t *dims, rlx_id *out);
/* Same with dims that may hold one symbolic dim (it becomes -1). */
rlx_status oi_reshape_dims(oi_node *c, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out);
rlx_status oi_transpose(oi_node *c, rlx_id x, const int64_t *perm, rlx_id *out); /* rank perms */
rlx_status oi_reduce(oi_node *c, rlx_reduce op, rlx_id x, const int64_t *axes, uint32_t n, bool keep, rlx_id *out);
rlx_status oi_narrow(oi_node *c, rlx_id x, int64_t axis, int64_t start, int64_t len, rlx_id *out);
rlx_status oi_concat(oi_node *c, const rlx_id *xs, uint32_t n, int64_t axis, rlx_id *out);
/* Same for any n >= 1 (concatenated in rounds of at most 64 operands; ops_sequence.c). */
rlx_status oi_concat_many(oi_node *c, const rlx_id *xs, uint32_t n, int64_t axis, rlx_id *out);
/* Reshapes x to rank `rank` by adding unit axes so that its axis 0 lands on `axis` (per-channel
 * parameters [C] -> [1, C, 1, 1]). */
rlx_status oi_bcast_axis(oi_node *c, rlx_id x, uint32_t rank, uint32_t axis, rlx_id *out);
/* Wraps negative indices of `idx` into [0, extent) (folded away for constant indices). */
rlx_status oi_wrap_index(oi_node *c, rlx_id idx, int64_t extent, rlx_id *out);
/* Normalizes an ONNX axis attribute against a rank (error naming `what` when out of range). */
rlx_status oi_axis(oi_node *c, int64_t axis, uint32_t rank, const char *what, uint32_t *out);
/* Dims must be static for an op that needs them (unsupported otherwise). */
rlx_status oi_need_static(oi_node *c, const rlx_shape *s, const char *what);

/* Sequences and optionals (ops_sequence.c). Sets output k to a whole value. */
void oi_set_out_value(oi_node *c, uint32_t k, const oi_value *v);
/* Does this op take sequence / optional inputs? (others get a gap naming the input) */
bool oi_op_takes_containers(const char *op_type);
/* Identity of a sequence or optional: passes input 0's value through to output 0. */
rlx_status oi_pass_value(oi_node *c);

/* Conv / ConvTranspose of inputs 0 (X), 1 (W) and optional 2 (B) with the node's attributes
 * (ops_nn.c; the quantized convolutions call it with rewritten inputs). */
rlx_status oi_conv(oi_node *c, bool transposed);
/* An ints attribute with one entry per spatial axis (n of them; default def, each >= lo). */
rlx_status oi_spatial_list(oi_node *c, const char *name, uint32_t n, int64_t def, int64_t lo, int64_t *out);
/* MaxPool's Indices output for input x [N, C, spatial...] (ops_pool_index.c): kernel k, strides s,
 * dilations d, begin / end pads pb / pe (end pads include ceil_mode's extra), output extents out. */
rlx_status oi_maxpool_indices(oi_node *c, rlx_id x, uint32_t nsp, const int64_t *k, const int64_t *s, const int64_t *d,
                              const int64_t *pb, const int64_t *pe, const int64_t *out, int64_t storage_order,
                              rlx_id *idx);

/* ---- importing a body graph (import.c, used by ops_control.c) ---- */
/* Imports `gp` inline into the current RLX graph: its formal inputs are bound to `args`
 * (n_args may be fewer than the inputs only when `allow_fewer`); writes its outputs to outs. */
rlx_status oi_inline_graph(oi_node *c, const Onnx__GraphProto *gp, const rlx_id *args, uint32_t n_args, rlx_id *outs,
                           uint32_t n_outs);
/* Same with whole values (sequences and optionals flow through). */
rlx_status oi_inline_graph_values(oi_node *c, const Onnx__GraphProto *gp, const oi_value *args, uint32_t n_args,
                                  oi_value *outs, uint32_t n_outs);
/* Imports `gp` into a new child graph of the current RLX graph: Inputs for the formal inputs
 * (shapes `arg_shapes`, n_args of them) followed by one Input per capture in `caps` (names of
 * enclosing values, in order); outputs = the graph's outputs listed in `which` (n_which). */
rlx_status oi_child_graph(oi_node *c, const Onnx__GraphProto *gp, const rlx_shape *arg_shapes, uint32_t n_args,
                          const char *const *caps, uint32_t n_caps, const uint32_t *which, uint32_t n_which,
                          rlx_graph **out);
/* Same for a body without formal inputs (an If branch) with one output: element `elem` of its
 * output k when that is a sequence, or with OI_WHOLE_VALUE output k itself (a tensor, or the
 * tensor in a present optional). */
#define OI_WHOLE_VALUE 0xffffffffu
#define OI_NO_ELEM 0xfffffffeu
rlx_status oi_child_graph_elem(oi_node *c, const Onnx__GraphProto *gp, const char *const *caps, uint32_t n_caps,
                               uint32_t k, uint32_t elem, rlx_graph **out);

#endif
