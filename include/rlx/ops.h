/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Op kinds, their properties and their typed attribute structs — all expanded from ops.def. */
#ifndef RLX_OPS_H
#define RLX_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- small enums (enums.def) ---- */
#include "rlx/enums.def"

#define RLX_ACT_X(S, T) RLX_ACT_##S,
typedef enum rlx_act { RLX_ACTIVATION_LIST(RLX_ACT_X) RLX_ACT_COUNT } rlx_act;
#undef RLX_ACT_X
#define RLX_BINOP_X(S, T) RLX_BINOP_##S,
typedef enum rlx_binop { RLX_BINARY_LIST(RLX_BINOP_X) RLX_BINOP_COUNT } rlx_binop;
#undef RLX_BINOP_X
#define RLX_CMP_X(S, T) RLX_CMP_##S,
typedef enum rlx_cmp { RLX_CMP_LIST(RLX_CMP_X) RLX_CMP_COUNT } rlx_cmp;
#undef RLX_CMP_X
#define RLX_REDUCE_X(S, T) RLX_REDUCE_##S,
typedef enum rlx_reduce { RLX_REDUCE_LIST(RLX_REDUCE_X) RLX_REDUCE_COUNT } rlx_reduce;
#undef RLX_REDUCE_X
#define RLX_MASK_X(S, T) RLX_MASK_##S,
typedef enum rlx_mask { RLX_MASK_LIST(RLX_MASK_X) RLX_MASK_COUNT } rlx_mask;
#undef RLX_MASK_X
#define RLX_PAD_MODE_X(S, T) RLX_PAD_MODE_##S,
typedef enum rlx_pad_mode { RLX_PAD_MODE_LIST(RLX_PAD_MODE_X) RLX_PAD_MODE_COUNT } rlx_pad_mode;
#undef RLX_PAD_MODE_X
#define RLX_ROPE_STYLE_X(S, T) RLX_ROPE_STYLE_##S,
typedef enum rlx_rope_style { RLX_ROPE_STYLE_LIST(RLX_ROPE_STYLE_X) RLX_ROPE_STYLE_COUNT } rlx_rope_style;
#undef RLX_ROPE_STYLE_X
#define RLX_ADA_NORM_X(S, T) RLX_ADA_NORM_##S,
typedef enum rlx_ada_norm { RLX_ADA_NORM_LIST(RLX_ADA_NORM_X) RLX_ADA_NORM_COUNT } rlx_ada_norm;
#undef RLX_ADA_NORM_X
#define RLX_SVD_PART_X(S, T) RLX_SVD_PART_##S,
typedef enum rlx_svd_part { RLX_SVD_PART_LIST(RLX_SVD_PART_X) RLX_SVD_PART_COUNT } rlx_svd_part;
#undef RLX_SVD_PART_X
#define RLX_QR_PART_X(S, T) RLX_QR_PART_##S,
typedef enum rlx_qr_part { RLX_QR_PART_LIST(RLX_QR_PART_X) RLX_QR_PART_COUNT } rlx_qr_part;
#undef RLX_QR_PART_X
#define RLX_SCATTER_REDUCTION_X(S, T) RLX_SCATTER_REDUCTION_##S,
typedef enum rlx_scatter_reduction {
  RLX_SCATTER_REDUCTION_LIST(RLX_SCATTER_REDUCTION_X) RLX_SCATTER_REDUCTION_COUNT
} rlx_scatter_reduction;
#undef RLX_SCATTER_REDUCTION_X
#define RLX_STE_X(S, T) RLX_STE_##S,
typedef enum rlx_ste { RLX_STE_LIST(RLX_STE_X) RLX_STE_COUNT } rlx_ste;
#undef RLX_STE_X
#define RLX_SCALE_MODE_X(S, T) RLX_SCALE_MODE_##S,
typedef enum rlx_scale_mode { RLX_SCALE_MODE_LIST(RLX_SCALE_MODE_X) RLX_SCALE_MODE_COUNT } rlx_scale_mode;
#undef RLX_SCALE_MODE_X
#define RLX_ATTN_WRT_X(S, T) RLX_ATTN_WRT_##S,
typedef enum rlx_attn_wrt { RLX_ATTN_WRT_LIST(RLX_ATTN_WRT_X) RLX_ATTN_WRT_COUNT } rlx_attn_wrt;
#undef RLX_ATTN_WRT_X
#define RLX_SPD_FN_X(S, T) RLX_SPD_FN_##S,
typedef enum rlx_spd_fn { RLX_SPD_FN_LIST(RLX_SPD_FN_X) RLX_SPD_FN_COUNT } rlx_spd_fn;
#undef RLX_SPD_FN_X
#define RLX_FFT_NORM_X(S, T) RLX_FFT_NORM_##S,
typedef enum rlx_fft_norm { RLX_FFT_NORM_LIST(RLX_FFT_NORM_X) RLX_FFT_NORM_COUNT } rlx_fft_norm;
#undef RLX_FFT_NORM_X
#define RLX_FFTQ_SCALE_X(S, T) RLX_FFTQ_SCALE_##S,
typedef enum rlx_fftq_scale { RLX_FFTQ_SCALE_LIST(RLX_FFTQ_SCALE_X) RLX_FFTQ_SCALE_COUNT } rlx_fftq_scale;
#undef RLX_FFTQ_SCALE_X
#define RLX_QUANT_SCHEME_X(S, T) RLX_QUANT_SCHEME_##S,
typedef enum rlx_quant_scheme { RLX_QUANT_SCHEME_LIST(RLX_QUANT_SCHEME_X) RLX_QUANT_SCHEME_COUNT } rlx_quant_scheme;
#undef RLX_QUANT_SCHEME_X
#define RLX_SCALED_FORMAT_X(S, T) RLX_SCALED_FORMAT_##S,
typedef enum rlx_scaled_format {
  RLX_SCALED_FORMAT_LIST(RLX_SCALED_FORMAT_X) RLX_SCALED_FORMAT_COUNT
} rlx_scaled_format;
#undef RLX_SCALED_FORMAT_X
#define RLX_SCALE_LAYOUT_X(S, T) RLX_SCALE_LAYOUT_##S,
typedef enum rlx_scale_layout { RLX_SCALE_LAYOUT_LIST(RLX_SCALE_LAYOUT_X) RLX_SCALE_LAYOUT_COUNT } rlx_scale_layout;
#undef RLX_SCALE_LAYOUT_X
#define RLX_SYNTH_KIND_X(S, T) RLX_SYNTH_KIND_##S,
typedef enum rlx_synth_kind { RLX_SYNTH_KIND_LIST(RLX_SYNTH_KIND_X) RLX_SYNTH_KIND_COUNT } rlx_synth_kind;
#undef RLX_SYNTH_KIND_X
#define RLX_SYNTH_WRT_X(S, T) RLX_SYNTH_WRT_##S,
typedef enum rlx_synth_wrt { RLX_SYNTH_WRT_LIST(RLX_SYNTH_WRT_X) RLX_SYNTH_WRT_COUNT } rlx_synth_wrt;
#undef RLX_SYNTH_WRT_X
#define RLX_PROLOGUE_X(S, T) RLX_PROLOGUE_##S,
typedef enum rlx_prologue { RLX_PROLOGUE_LIST(RLX_PROLOGUE_X) RLX_PROLOGUE_COUNT } rlx_prologue;
#undef RLX_PROLOGUE_X
#define RLX_CHAIN_STEP_X(S, T) RLX_CHAIN_STEP_##S,
typedef enum rlx_chain_step_kind { RLX_CHAIN_STEP_LIST(RLX_CHAIN_STEP_X) RLX_CHAIN_STEP_COUNT } rlx_chain_step_kind;
#undef RLX_CHAIN_STEP_X

/* Name tables for every enum of enums.def, for printing and parsing. */
typedef struct rlx_enum_desc {
  const char *type_name;    /* "Activation" */
  const char *const *names; /* "Gelu", ... */
  int32_t count;
} rlx_enum_desc;
#define RLX_ENUM_DESC_DECL(c, T, L) extern const rlx_enum_desc rlx_enum_##c;
RLX_ENUM_LIST(RLX_ENUM_DESC_DECL)
#undef RLX_ENUM_DESC_DECL
/* Index of `name` in `e`, or -1. */
int32_t rlx_enum_lookup(const rlx_enum_desc *e, const char *name, size_t len);

/* ---- op kinds ---- */
#define RLX_OP(N, FAM, LO, HI, PROPS) RLX_OP_##N,
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) RLX_OP_##N,
typedef enum rlx_op {
#include "rlx/ops.def"
  RLX_OP_COUNT
} rlx_op;
#undef RLX_OP
#undef RLX_OPA

/* Op families (one per section of ops.def; the coverage doc groups by them). */
#define RLX_FAMILY_LIST(X)                                                                                        \
  X(LEAF, leaf)                                                                                                   \
  X(ELEMENTWISE, elementwise)                                                                                     \
  X(QUANT, quant) X(REGION, region) X(LINALG, linalg) X(NORM, norm) X(RESAMPLE, resample) X(ATTENTION, attention) \
      X(SHAPE, shape) X(REDUCE, reduce) X(RANDOM, random) X(CONV, conv) X(BACKWARD, backward) X(MOE, moe)         \
          X(SCATTER, scatter) X(FUSED, fused) X(SYNTH, synth) X(RECURRENT, recurrent) X(CONTROL, control)         \
              X(SPLAT, splat) X(CUSTOM, custom) X(SIGNAL, signal) X(SPD, spd)
typedef enum rlx_family {
#define RLX_X(E, n) RLX_FAMILY_##E,
  RLX_FAMILY_LIST(RLX_X)
#undef RLX_X
      RLX_FAMILY_COUNT
} rlx_family;

/* Property bits of an op kind. */
#define RLX_PROP_LIST(X)                                                                     \
  X(LEAF, leaf, "graph input, weight or literal")                                            \
  X(ELEM, elementwise, "elementwise over its (broadcast) operands")                          \
  X(BCAST, broadcasting, "operands broadcast NumPy-style")                                   \
  X(REDUCTION, reduction, "reduces along axes")                                              \
  X(VIEW, view, "may alias its operand (reshape, same-dtype cast, axis-0 narrow)")           \
  X(DIFF, differentiable, "has a VJP rule")                                                  \
  X(SUBGRAPH, subgraph, "carries nested graphs")                                             \
  X(RANDOM, random, "nondeterministic: never folded or merged")                              \
  X(BLAS, blas, "matrix-multiply-like; a fusion boundary")                                   \
  X(FUSED, fused, "composite with a shared unfuse decomposition")                            \
  X(LOWER, lowerable, "primitive with a shared decomposition for backends without a kernel") \
  X(BACKWARD, backward, "emitted by autodiff")                                               \
  X(FOLD, foldable, "pure; constant-foldable")                                               \
  X(INPLACE, inplace, "writes into an operand and aliases it")
enum {
#define RLX_X(E, n, d) RLX_PROP_BIT_##E,
  RLX_PROP_LIST(RLX_X)
#undef RLX_X
      RLX_PROP_BIT_COUNT
};
#define RLX_X(E, n, d) RLX_PROP_##E = 1u << RLX_PROP_BIT_##E,
enum rlx_prop { RLX_PROP_LIST(RLX_X) };
#undef RLX_X

#define RLX_ARITY_VARIADIC UINT32_MAX

const char *rlx_op_name(rlx_op op); /* "MatMul" */
bool rlx_op_from_name(const char *s, size_t len, rlx_op *out);
rlx_family rlx_op_family(rlx_op op);
const char *rlx_family_name(rlx_family f); /* "linalg" */
uint32_t rlx_op_props(rlx_op op);
static inline bool rlx_op_has(rlx_op op, uint32_t prop) { return (rlx_op_props(op) & prop) != 0; }
uint32_t rlx_op_min_inputs(rlx_op op);
uint32_t rlx_op_max_inputs(rlx_op op); /* RLX_ARITY_VARIADIC = unbounded */
const char *rlx_prop_name(uint32_t bit_index);

/* ---- attribute value types ---- */
struct rlx_graph;
typedef struct rlx_ilist {
  int64_t *v;
  uint32_t n;
} rlx_ilist;
typedef struct rlx_flist {
  float *v;
  uint32_t n;
} rlx_flist;
typedef struct rlx_bytes {
  uint8_t *p;
  size_t n;
} rlx_bytes;
typedef struct rlx_of32 {
  bool has;
  float v;
} rlx_of32;
typedef struct rlx_oi64 {
  bool has;
  int64_t v;
} rlx_oi64;
typedef struct rlx_odtype {
  bool has;
  int32_t v;
} rlx_odtype;

/* One operand of an ElementwiseRegion step: a region operand or an earlier step's result. */
typedef struct rlx_chain_operand {
  uint8_t is_step;
  uint32_t index;
} rlx_chain_operand;
typedef struct rlx_chain_step {
  int32_t kind;              /* rlx_chain_step_kind */
  int32_t sub;               /* rlx_act / rlx_dtype / rlx_binop / rlx_cmp; unused for Where */
  rlx_chain_operand a, b, c; /* operands used: 1 (Activation, Cast), 2 (Binary, Compare), 3 (Where) */
} rlx_chain_step;
typedef struct rlx_chain {
  rlx_chain_step *steps;
  uint32_t n;
} rlx_chain;

typedef int64_t rlx_ft_i64;
typedef uint64_t rlx_ft_u64;
typedef float rlx_ft_f32;
typedef bool rlx_ft_bool;
typedef int32_t rlx_ft_dtype;
typedef rlx_oi64 rlx_ft_oi64;
typedef rlx_of32 rlx_ft_of32;
typedef rlx_odtype rlx_ft_odtype;
typedef rlx_ilist rlx_ft_ilist;
typedef rlx_flist rlx_ft_flist;
typedef const char *rlx_ft_str;
typedef rlx_bytes rlx_ft_bytes;
typedef struct rlx_graph *rlx_ft_graph;
typedef struct rlx_graph *rlx_ft_ograph;
typedef rlx_chain rlx_ft_chain;

/* ---- attribute structs: rlx_attrs_<Op> for every op with attributes ---- */
#define F(t, n, d) rlx_ft_##t n;
#define E(e, n, d) int32_t n;
#define OE(e, n) int32_t n; /* -1 = none */
#define RLX_OP(N, FAM, LO, HI, PROPS)
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) \
  typedef struct rlx_attrs_##N {               \
    FIELDS                                     \
  } rlx_attrs_##N;
#include "rlx/ops.def"
#undef RLX_OPA
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) rlx_attrs_##N N;
/* The attributes of one node; the member is named after the op (a.Conv.groups). */
typedef union rlx_attrs {
#include "rlx/ops.def"
  int64_t _align;
} rlx_attrs;
#undef RLX_OP
#undef RLX_OPA
#undef F
#undef E
#undef OE

/* ---- field descriptors: drive print, parse, equality, hash, binary I/O, range checks ---- */
typedef enum rlx_field_type {
  RLX_FT_I64,
  RLX_FT_U64,
  RLX_FT_F32,
  RLX_FT_BOOL,
  RLX_FT_DTYPE,
  RLX_FT_OI64,
  RLX_FT_OF32,
  RLX_FT_ODTYPE,
  RLX_FT_ILIST,
  RLX_FT_FLIST,
  RLX_FT_STR,
  RLX_FT_BYTES,
  RLX_FT_GRAPH,
  RLX_FT_OGRAPH,
  RLX_FT_CHAIN,
  RLX_FT_ENUM,
  RLX_FT_OENUM
} rlx_field_type;

typedef struct rlx_field {
  const char *name;
  rlx_field_type type;
  size_t offset;            /* inside rlx_attrs_<Op> */
  const rlx_enum_desc *enm; /* for ENUM / OENUM */
  double def;               /* default of scalar and enum fields */
} rlx_field;

/* Field descriptors of an op's attribute struct (count 0 for ops without attributes). */
const rlx_field *rlx_op_fields(rlx_op op, uint32_t *count);
size_t rlx_op_attrs_size(rlx_op op);
/* Fills every field of `attrs` (an rlx_attrs_<Op> or an rlx_attrs) with its default. */
void rlx_attrs_init(rlx_op op, void *attrs);
/* Deep equality of two attribute values of the same op (subgraphs compared structurally). */
bool rlx_attrs_equal(rlx_op op, const void *a, const void *b);
uint64_t rlx_attrs_hash(rlx_op op, const void *a);

/* GGUF block geometry of a QuantScheme: elements and bytes per block; false for the non-GGUF
 * schemes. */
bool rlx_quant_scheme_gguf_block(int32_t scheme, int64_t *elems, int64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif
