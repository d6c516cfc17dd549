/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Sample graphs for the format tests. Each op sample is written from the spec (operand shapes,
 * attribute values, expected output shape), so the verifier's shape rules check it independently;
 * every attribute field is set to a non-default value. */
#include "graph_samples.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- construction helpers ---- */

typedef struct sctx {
  rlx_graph *g;  /* graph receiving the op node */
  rlx_status st; /* first failure (sticky) */
} sctx;

static void fail(sctx *c, rlx_status s) {
  if (!c->st) c->st = s;
}

static void *arena_copy(sctx *c, const void *p, size_t n) {
  if (!n || c->st || !c->g) return NULL;
  void *d = rlx_graph_arena_alloc(c->g, n);
  if (!d) {
    fail(c, rlx_errorf(RLX_ERR_OOM, "out of memory building a sample"));
    return NULL;
  }
  memcpy(d, p, n);
  return d;
}

static rlx_ilist il_(sctx *c, uint32_t n, const int64_t *v) {
  rlx_ilist l = {.v = arena_copy(c, v, n * sizeof *v), .n = n};
  if (!l.v) l.n = 0;
  return l;
}
static rlx_flist fl_(sctx *c, uint32_t n, const float *v) {
  rlx_flist l = {.v = arena_copy(c, v, n * sizeof *v), .n = n};
  if (!l.v) l.n = 0;
  return l;
}
#define IL(...) il_(c, (uint32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define FL(...) fl_(c, (uint32_t)(sizeof((float[]){__VA_ARGS__}) / sizeof(float)), (float[]){__VA_ARGS__})
#define OI(x) ((rlx_oi64){.has = true, .v = (x)})
#define OF(x) ((rlx_of32){.has = true, .v = (x)})

/* Parses one shape "f32[2,?0,3]" starting at *p; advances *p past it. */
static rlx_shape parse_shape(const char **p) {
  rlx_shape s;
  memset(&s, 0, sizeof s);
  while (**p == ' ') (*p)++;
  const char *b = strchr(*p, '[');
  rlx_dtype t = RLX_F32;
  if (b) rlx_dtype_from_name(*p, (size_t)(b - *p), &t);
  s.dtype = (uint8_t)t;
  const char *q = b ? b + 1 : *p;
  while (*q && *q != ']') {
    while (*q == ',' || *q == ' ') q++;
    if (*q == ']') break;
    if (*q == '?')
      s.dims[s.rank++] = RLX_DIM_SYM(strtoll(q + 1, (char **)&q, 10));
    else
      s.dims[s.rank++] = strtoll(q, (char **)&q, 10);
  }
  *p = *q ? q + 1 : q;
  return s;
}

static rlx_shape S(const char *s) { return parse_shape(&s); }

static rlx_graph *body(sctx *c, rlx_graph *parent, const char *name) {
  rlx_graph *b = NULL;
  if (c->st) return NULL;
  rlx_status s = rlx_graph_create_child(parent, name, &b);
  if (s) fail(c, s);
  return b;
}

static rlx_id add(sctx *c, rlx_graph *g, rlx_op op, const rlx_id *in, uint32_t n, const void *attrs, const char *shape,
                  const char *name) {
  if (c->st || !g) return 0;
  rlx_shape sh = S(shape);
  rlx_id id = 0;
  rlx_status s = rlx_graph_add_unchecked(g, op, in, n, attrs, &sh, name, &id);
  if (s) fail(c, s);
  return id;
}

static rlx_id input(sctx *c, rlx_graph *g, const char *name, const char *shape) {
  rlx_attrs_Input a = {.name = name};
  return add(c, g, RLX_OP_Input, NULL, 0, &a, shape, NULL);
}

static rlx_id act(sctx *c, rlx_graph *g, rlx_act k, rlx_id x, const char *shape) {
  rlx_attrs_Activation a = {.kind = k};
  return add(c, g, RLX_OP_Activation, &x, 1, &a, shape, NULL);
}

static rlx_id binop(sctx *c, rlx_graph *g, rlx_binop k, rlx_id x, rlx_id y, const char *shape) {
  rlx_attrs_Binary a = {.op = k};
  rlx_id in[2] = {x, y};
  return add(c, g, RLX_OP_Binary, in, 2, &a, shape, NULL);
}

static void ret(sctx *c, rlx_graph *g, const rlx_id *ids, uint32_t n) {
  if (c->st || !g) return;
  rlx_status s = rlx_graph_set_outputs(g, ids, n);
  if (s) fail(c, s);
}
static void ret1(sctx *c, rlx_graph *g, rlx_id id) { ret(c, g, &id, 1); }

/* A body computing act(x) for one Input of `shape`. */
static rlx_graph *unary_body(sctx *c, const char *name, const char *in_name, rlx_act k, const char *shape) {
  rlx_graph *b = body(c, c->g, name);
  rlx_id x = input(c, b, in_name, shape);
  ret1(c, b, act(c, b, k, x, shape));
  return b;
}

static rlx_chain_operand IN(uint32_t i) { return (rlx_chain_operand){0, i}; }
static rlx_chain_operand ST(uint32_t i) { return (rlx_chain_operand){1, i}; }
static rlx_chain_step step1(rlx_chain_step_kind k, int32_t sub, rlx_chain_operand a) {
  rlx_chain_step s;
  memset(&s, 0, sizeof s);
  s.kind = k, s.sub = sub, s.a = a;
  return s;
}
static rlx_chain_step step2(rlx_chain_step_kind k, int32_t sub, rlx_chain_operand a, rlx_chain_operand b) {
  rlx_chain_step s = step1(k, sub, a);
  s.b = b;
  return s;
}
static rlx_chain_step where3(rlx_chain_operand a, rlx_chain_operand b, rlx_chain_operand d) {
  rlx_chain_step s = step2(RLX_CHAIN_STEP_WHERE, 0, a, b);
  s.c = d;
  return s;
}
static rlx_chain chain_(sctx *c, uint32_t n, const rlx_chain_step *s) {
  rlx_chain ch = {.steps = arena_copy(c, s, n * sizeof *s), .n = n};
  if (!ch.steps) ch.n = 0;
  return ch;
}
#define CHAIN(...)                                                                        \
  chain_(c, (uint32_t)(sizeof((rlx_chain_step[]){__VA_ARGS__}) / sizeof(rlx_chain_step)), \
         (rlx_chain_step[]){__VA_ARGS__})

/* ---- the per-op specs ----
 * Fills the operand shapes (space separated), the expected output shape and the attributes. */
typedef struct op_spec {
  const char *in;
  const char *out;
  const char *name; /* node name; NULL = "n" + op name */
} op_spec;

#define SPEC(i, o) (sp->in = (i), sp->out = (o))

/* Scan bodies: carry [4], optional broadcast [4], one xs row [4] -> next carry. */
static rlx_graph *scan_body(sctx *c, const char *name, bool with_bcast) {
  rlx_graph *b = body(c, c->g, name);
  rlx_id carry = input(c, b, "carry", "f32[4]");
  rlx_id x = carry;
  if (with_bcast) x = binop(c, b, RLX_BINOP_MUL, carry, input(c, b, "scale", "f32[4]"), "f32[4]");
  rlx_id row = input(c, b, "x_t", "f32[4]");
  ret1(c, b, binop(c, b, RLX_BINOP_ADD, x, row, "f32[4]"));
  return b;
}

/* VJP of carry + x_t per step: inputs carry, x rows..., d_output; outputs dcarry, dx rows. */
static rlx_graph *scan_vjp_body(sctx *c, const char *name, int nx) {
  rlx_graph *b = body(c, c->g, name);
  input(c, b, "carry", "f32[4]");
  for (int k = 0; k < nx; k++) input(c, b, k ? "x_t1" : "x_t0", "f32[4]");
  rlx_id d = input(c, b, "d_output", "f32[4]");
  rlx_id outs[3] = {d, d, d};
  ret(c, b, outs, (uint32_t)(1 + nx));
  return b;
}

static rlx_graph *scan_forward_body(sctx *c, const char *name, int nx) {
  rlx_graph *b = body(c, c->g, name);
  rlx_id acc = input(c, b, "carry", "f32[4]");
  for (int k = 0; k < nx; k++)
    acc = binop(c, b, RLX_BINOP_ADD, acc, input(c, b, k ? "x_t1" : "x_t0", "f32[4]"), "f32[4]");
  ret1(c, b, acc);
  return b;
}

static void spec_op(sctx *c, rlx_op op, rlx_attrs *A, op_spec *sp) {
  static const float const_data[2] = {1.0f, -2.5f};
  switch (op) {
  /* ---- leaves ---- */
  case RLX_OP_Input:
    A->Input.name = "x \"in\"\n\t\x01/\xc3\xa9";
    SPEC("", "f32[4,?0]");
    sp->name = "in\\put";
    break;
  case RLX_OP_Param:
    A->Param.name = "w.0";
    SPEC("", "f32[8,4]");
    break;
  case RLX_OP_Constant:
    A->Constant.data = (rlx_bytes){.p = arena_copy(c, const_data, sizeof const_data), .n = sizeof const_data};
    SPEC("", "f32[2]");
    break;
  /* ---- elementwise ---- */
  case RLX_OP_Activation:
    A->Activation.kind = RLX_ACT_SILU;
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_Cast:
    A->Cast.to = RLX_F16;
    SPEC("f32[2,3]", "f16[2,3]");
    break;
  case RLX_OP_StopGradient: SPEC("f32[3]", "f32[3]"); break;
  case RLX_OP_Binary:
    A->Binary.op = RLX_BINOP_MUL;
    SPEC("f32[2,3] f32[3]", "f32[2,3]");
    break;
  case RLX_OP_Compare:
    A->Compare.op = RLX_CMP_LT;
    SPEC("f32[2,3] f32[2,3]", "bool[2,3]");
    break;
  case RLX_OP_Where: SPEC("bool[2,3] f32[2,3] f32[3]", "f32[2,3]"); break;
  case RLX_OP_Fma: SPEC("f32[2,3] f32[2,3] f32[2,3]", "f32[2,3]"); break;
  case RLX_OP_Clamp:
    A->Clamp.min = -1.0f, A->Clamp.max = 2.5f;
    SPEC("f32[3]", "f32[3]");
    break;
  /* ---- quantization ---- */
  case RLX_OP_Quantize:
    A->Quantize.axis = 1, A->Quantize.scales = FL(0.5f, 0.25f, 2.0f), A->Quantize.zero_points = IL(1, -2, 3);
    SPEC("f32[2,3]", "i8[2,3]");
    break;
  case RLX_OP_Dequantize:
    A->Dequantize.axis = 1, A->Dequantize.scales = FL(0.5f, 0.25f, 2.0f), A->Dequantize.zero_points = IL(1, -2, 3);
    SPEC("i8[2,3]", "f32[2,3]");
    break;
  case RLX_OP_FakeQuantize:
    A->FakeQuantize = (rlx_attrs_FakeQuantize){
        .bits = 4, .axis = 0, .ste = RLX_STE_TANH, .scale_mode = RLX_SCALE_MODE_EMA, .decay = 0.9f};
    SPEC("f32[3,4] f32[3]", "f32[3,4]");
    break;
  case RLX_OP_FakeQuantizeLSQ:
    A->FakeQuantizeLSQ = (rlx_attrs_FakeQuantizeLSQ){.bits = 4, .axis = 0};
    SPEC("f32[3,4] f32[3]", "f32[3,4]");
    break;
  case RLX_OP_FakeQuantizeLSQBackwardX:
    A->FakeQuantizeLSQBackwardX = (rlx_attrs_FakeQuantizeLSQBackwardX){.bits = 2, .axis = 0};
    SPEC("f32[3,4] f32[3] f32[3,4]", "f32[3,4]");
    break;
  case RLX_OP_FakeQuantizeLSQBackwardScale:
    A->FakeQuantizeLSQBackwardScale = (rlx_attrs_FakeQuantizeLSQBackwardScale){.bits = 2, .axis = 0};
    SPEC("f32[3,4] f32[3] f32[3,4]", "f32[3]");
    break;
  case RLX_OP_QMatMul:
    A->QMatMul = (rlx_attrs_QMatMul){.x_zp = 1, .w_zp = -1, .out_zp = 2, .mult = 0.25f};
    SPEC("i8[2,3] i8[3,4] i32[4]", "i8[2,4]");
    break;
  case RLX_OP_QConv2d:
    A->QConv2d = (rlx_attrs_QConv2d){.kernel_size = IL(3, 3),
                                     .stride = IL(1, 1),
                                     .padding = IL(1, 1),
                                     .dilation = IL(1, 1),
                                     .groups = 2,
                                     .x_zp = 3,
                                     .w_zp = -4,
                                     .out_zp = 5,
                                     .mult = 0.125f};
    SPEC("i8[1,4,5,5] i8[6,2,3,3] i32[6]", "i8[1,6,5,5]");
    break;
  case RLX_OP_ScaledMatMul:
    A->ScaledMatMul = (rlx_attrs_ScaledMatMul){.lhs_format = RLX_SCALED_FORMAT_F8E5M2,
                                               .rhs_format = RLX_SCALED_FORMAT_F4E2M1,
                                               .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0,
                                               .block = 16,
                                               .has_bias = true};
    SPEC("u8[2,32] u8[4,32] u8[2,2] u8[4,2] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_ScaledQuantize:
    A->ScaledQuantize = (rlx_attrs_ScaledQuantize){.format = RLX_SCALED_FORMAT_CUSTOM,
                                                   .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0,
                                                   .block = 16,
                                                   .custom_exp = 3,
                                                   .custom_mant = 2,
                                                   .custom_bias = 4};
    SPEC("f32[2,32] u8[2,2]", "u8[2,32]");
    break;
  case RLX_OP_ScaledQuantScale:
    A->ScaledQuantScale = (rlx_attrs_ScaledQuantScale){.format = RLX_SCALED_FORMAT_CUSTOM,
                                                       .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0,
                                                       .block = 16,
                                                       .custom_exp = 3,
                                                       .custom_mant = 2,
                                                       .custom_bias = 4};
    SPEC("f32[2,32]", "u8[2,2]");
    break;
  case RLX_OP_ScaledDequantize:
    A->ScaledDequantize = (rlx_attrs_ScaledDequantize){.format = RLX_SCALED_FORMAT_CUSTOM,
                                                       .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0,
                                                       .block = 16,
                                                       .custom_exp = 3,
                                                       .custom_mant = 2,
                                                       .custom_bias = 4};
    SPEC("u8[2,32] u8[2,2]", "f32[2,32]");
    break;
  case RLX_OP_DequantMatMul:
    A->DequantMatMul = (rlx_attrs_DequantMatMul){
        .scheme = RLX_QUANT_SCHEME_INT8_BLOCK_ASYM, .block_size = 16, .bits = 8, .group_size = 32};
    SPEC("f32[2,32] i8[32,4] f32[2,4] f32[2,4]", "f32[2,4]");
    break;
  /* ---- fusion regions ---- */
  case RLX_OP_ElementwiseRegion:
    A->ElementwiseRegion.chain = CHAIN(step1(RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_SILU, IN(1)),
                                       step2(RLX_CHAIN_STEP_BINARY, RLX_BINOP_MUL, ST(0), IN(0)),
                                       step2(RLX_CHAIN_STEP_COMPARE, RLX_CMP_LT, ST(1), IN(1)),
                                       where3(ST(2), ST(1), IN(1)), step1(RLX_CHAIN_STEP_CAST, RLX_F16, ST(3)));
    A->ElementwiseRegion.num_inputs = 2, A->ElementwiseRegion.scalar_input_mask = 1;
    A->ElementwiseRegion.input_modulus = IL(1, 0);
    A->ElementwiseRegion.prologue = RLX_PROLOGUE_RESIZE_NEAREST2X, A->ElementwiseRegion.prologue_input = 1;
    SPEC("f32[1] f32[1,2,2,3]", "f16[1,2,4,6]");
    break;
  case RLX_OP_TransformRegion:
    A->TransformRegion = (rlx_attrs_TransformRegion){.steps = IL(0, 1), .num_inputs = 2};
    SPEC("f32[1,2,3,3] f32[1,2,3,3]", "f32[1,2,12,12]");
    break;
  case RLX_OP_BatchElementwiseRegion:
    A->BatchElementwiseRegion.chain = CHAIN(step1(RLX_CHAIN_STEP_ACTIVATION, RLX_ACT_RELU, IN(0)),
                                            step2(RLX_CHAIN_STEP_BINARY, RLX_BINOP_ADD, ST(0), IN(1)));
    A->BatchElementwiseRegion.num_batch_inputs = 2, A->BatchElementwiseRegion.scalar_input_mask = 1;
    A->BatchElementwiseRegion.input_modulus = IL(1, 1);
    A->BatchElementwiseRegion.prologue = RLX_PROLOGUE_RESIZE_NEAREST2X, A->BatchElementwiseRegion.prologue_input = 1;
    SPEC("f32[1,1,1] f32[1,1,1]", "f32[2,2,2]");
    break;
  /* ---- linear algebra ---- */
  case RLX_OP_MatMul: SPEC("f32[5,2,3] f32[3,4]", "f32[5,2,4]"); break;
  case RLX_OP_DotGeneral:
    A->DotGeneral = (rlx_attrs_DotGeneral){
        .lhs_contracting = IL(2), .rhs_contracting = IL(1), .lhs_batch = IL(0), .rhs_batch = IL(0)};
    SPEC("f32[5,2,3] f32[5,3,4]", "f32[5,2,4]");
    break;
  case RLX_OP_DenseSolve: SPEC("f32[3,3] f32[3,2]", "f32[3,2]"); break;
  case RLX_OP_BatchedDenseSolve: SPEC("f32[2,3,3] f32[2,3]", "f32[2,3]"); break;
  case RLX_OP_Cholesky: SPEC("f32[3,3]", "f32[3,3]"); break;
  case RLX_OP_TriangularSolve:
    A->TriangularSolve = (rlx_attrs_TriangularSolve){.lower = false, .transpose = true};
    SPEC("f32[3,3] f32[3]", "f32[3]");
    break;
  case RLX_OP_Det: SPEC("f64[3,3]", "f64[]"); break;
  case RLX_OP_LogDet: SPEC("f32[3,3]", "f32[]"); break;
  case RLX_OP_Sort:
    A->Sort = (rlx_attrs_Sort){.axis = 0, .descending = true};
    SPEC("f32[4,5]", "f32[4,5]");
    break;
  case RLX_OP_ArgSort:
    A->ArgSort = (rlx_attrs_ArgSort){.axis = 0, .descending = true};
    SPEC("f32[4,5]", "f32[4,5]");
    break;
  case RLX_OP_Svd:
    A->Svd.part = RLX_SVD_PART_U;
    SPEC("f32[4,3]", "f32[4,3]");
    break;
  case RLX_OP_Qr:
    A->Qr.part = RLX_QR_PART_R;
    SPEC("f32[4,3]", "f32[3,3]");
    break;
  /* ---- normalization ---- */
  case RLX_OP_LayerNorm:
    A->LayerNorm = (rlx_attrs_LayerNorm){.axis = 1, .eps = 1e-3f};
    SPEC("f32[2,4] f32[4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_LayerNorm2d:
    A->LayerNorm2d.eps = 1e-3f;
    SPEC("f32[1,4,2,2] f32[4] f32[4]", "f32[1,4,2,2]");
    break;
  case RLX_OP_GroupNorm:
    A->GroupNorm = (rlx_attrs_GroupNorm){.num_groups = 2, .eps = 1e-3f};
    SPEC("f32[1,4,2,2] f32[4] f32[4]", "f32[1,4,2,2]");
    break;
  case RLX_OP_BatchNormInference:
    A->BatchNormInference.eps = 1e-3f;
    SPEC("f32[2,4] f32[4] f32[4] f32[4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_RmsNorm:
    A->RmsNorm = (rlx_attrs_RmsNorm){.axis = 1, .eps = 1e-5f};
    SPEC("f32[2,4] f32[4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_AdaLayerNorm:
    A->AdaLayerNorm = (rlx_attrs_AdaLayerNorm){.norm = RLX_ADA_NORM_RMS_NORM, .eps = 1e-5f};
    SPEC("f32[2,3,4] f32[2,1,4] f32[2,1,4]", "f32[2,3,4]");
    break;
  case RLX_OP_GatedResidual: SPEC("f32[2,3,4] f32[2,3,4] f32[2,1,4]", "f32[2,3,4]"); break;
  /* ---- resampling ---- */
  case RLX_OP_ResizeNearest2x: SPEC("f32[1,2,3,3]", "f32[1,2,6,6]"); break;
  case RLX_OP_Interpolate3d:
    A->Interpolate3d.size = IL(4, 6, 8);
    SPEC("f32[1,2,2,3,4]", "f32[1,2,4,6,8]");
    break;
  /* ---- attention ---- */
  case RLX_OP_Attention:
    A->Attention = (rlx_attrs_Attention){.num_heads = 2,
                                         .head_dim = 4,
                                         .v_head_dim = OI(8),
                                         .mask_kind = RLX_MASK_SLIDING_WINDOW,
                                         .window = 2,
                                         .score_scale = OF(0.5f),
                                         .attn_logit_softcap = OF(30.0f)};
    SPEC("f32[1,3,8] f32[1,5,8] f32[1,5,16]", "f32[1,3,16]");
    break;
  case RLX_OP_Rope:
    A->Rope = (rlx_attrs_Rope){.head_dim = 8, .n_rot = 4, .style = RLX_ROPE_STYLE_GPTJ};
    SPEC("f32[1,3,16] f32[3,2] f32[3,2]", "f32[1,3,16]");
    break;
  case RLX_OP_AxialRope2d:
    A->AxialRope2d = (rlx_attrs_AxialRope2d){
        .end_x = 2, .end_y = 3, .head_dim = 8, .num_heads = 2, .theta = 100.0f, .repeat_factor = 2};
    SPEC("f32[1,12,16]", "f32[1,12,16]");
    break;
  /* ---- shape ---- */
  case RLX_OP_Reshape:
    A->Reshape.new_shape = IL(3, -1);
    SPEC("f32[2,6]", "f32[3,4]");
    break;
  case RLX_OP_Transpose:
    A->Transpose.perm = IL(1, 0, 2);
    SPEC("f32[2,3,4]", "f32[3,2,4]");
    break;
  case RLX_OP_Narrow:
    A->Narrow = (rlx_attrs_Narrow){.axis = 1, .start = 1, .len = 2};
    SPEC("f32[2,5]", "f32[2,2]");
    break;
  case RLX_OP_Concat:
    A->Concat.axis = 1;
    SPEC("f32[2,3] f32[2,4]", "f32[2,7]");
    break;
  case RLX_OP_KvAppend:
    A->KvAppend = (rlx_attrs_KvAppend){.axis = 1, .pos = 3};
    SPEC("f32[1,8,4] f32[1,1,4]", "f32[1,4,4]");
    break;
  case RLX_OP_Expand:
    A->Expand.target_shape = IL(2, 3, 4);
    SPEC("f32[3,1]", "f32[2,3,4]");
    break;
  case RLX_OP_Gather:
    A->Gather.axis = 1;
    SPEC("f32[4,5] i64[2,3]", "f32[4,2,3]");
    break;
  case RLX_OP_Reverse:
    A->Reverse.axes = IL(0, 1);
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_Pad:
    A->Pad = (rlx_attrs_Pad){.pads = IL(1, 2, 0, 1), .mode = RLX_PAD_MODE_REFLECT, .value = 1.5f};
    SPEC("f32[3,4]", "f32[6,5]");
    break;
  case RLX_OP_Slice:
    A->Slice = (rlx_attrs_Slice){.axis = 1, .start = 4, .len = 2, .step = -2};
    SPEC("f32[2,6]", "f32[2,2]");
    break;
  case RLX_OP_Roll:
    A->Roll = (rlx_attrs_Roll){.shifts = IL(1, -2), .dims = IL(0, 1)};
    SPEC("f32[3,4]", "f32[3,4]");
    break;
  case RLX_OP_Tile:
    A->Tile.reps = IL(2, 1, 3);
    SPEC("f32[2,3,4]", "f32[4,3,12]");
    break;
  case RLX_OP_Trilu:
    A->Trilu = (rlx_attrs_Trilu){.upper = true, .diagonal = 1};
    SPEC("f32[3,3]", "f32[3,3]");
    break;
  /* ---- reductions ---- */
  case RLX_OP_Reduce:
    A->Reduce = (rlx_attrs_Reduce){.op = RLX_REDUCE_MEAN, .axes = IL(1), .keep_dim = true};
    SPEC("f32[2,3,4]", "f32[2,1,4]");
    break;
  case RLX_OP_Histogram:
    A->Histogram = (rlx_attrs_Histogram){.bins = 5, .min = -1.0f, .max = 2.0f};
    SPEC("f32[10]", "f32[5]");
    break;
  case RLX_OP_Softmax:
    A->Softmax.axis = 0;
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_Cumsum:
    A->Cumsum = (rlx_attrs_Cumsum){.axis = 0, .exclusive = true};
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_CumProd:
    A->CumProd = (rlx_attrs_CumProd){.axis = 0, .exclusive = true};
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_CumMax:
    A->CumMax = (rlx_attrs_CumMax){.axis = 0, .exclusive = true};
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_ArgMax:
    A->ArgMax = (rlx_attrs_ArgMax){.axis = 1, .keep_dim = true};
    SPEC("f32[2,3]", "f32[2,1]");
    break;
  case RLX_OP_ArgMin:
    A->ArgMin = (rlx_attrs_ArgMin){.axis = 1, .keep_dim = true};
    SPEC("f32[2,3]", "f32[2,1]");
    break;
  case RLX_OP_TopK:
    A->TopK.k = 2;
    SPEC("f32[2,5]", "f32[2,2]");
    break;
  case RLX_OP_Sample:
    A->Sample = (rlx_attrs_Sample){.top_k = 5, .top_p = 0.9f, .temperature = 0.7f, .seed = 42};
    SPEC("f32[2,10]", "f32[2]");
    break;
  case RLX_OP_RngNormal:
    A->RngNormal = (rlx_attrs_RngNormal){.mean = 1.0f, .scale = 2.0f, .key = 7, .op_seed = OF(3.0f)};
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_RngUniform:
    A->RngUniform = (rlx_attrs_RngUniform){.low = -1.0f, .high = 3.0f, .key = 9, .op_seed = OF(1.5f)};
    SPEC("", "f32[4]");
    break;
  /* ---- convolution ---- */
  case RLX_OP_Conv:
    A->Conv = (rlx_attrs_Conv){
        .kernel_size = IL(3, 3), .stride = IL(2, 2), .padding = IL(1, 1), .dilation = IL(2, 2), .groups = 2};
    SPEC("f32[1,4,8,8] f32[6,2,3,3]", "f32[1,6,3,3]");
    break;
  case RLX_OP_Im2Col:
    A->Im2Col =
        (rlx_attrs_Im2Col){.kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = IL(0, 0), .dilation = IL(1, 1)};
    SPEC("f32[1,3,4,4]", "f32[4,12]");
    break;
  case RLX_OP_ConvTranspose2d:
    A->ConvTranspose2d = (rlx_attrs_ConvTranspose2d){.kernel_size = IL(3, 3),
                                                     .stride = IL(2, 2),
                                                     .padding = IL(1, 1),
                                                     .dilation = IL(1, 1),
                                                     .output_padding = IL(1, 1),
                                                     .groups = 2};
    SPEC("f32[1,4,3,3] f32[4,3,3,3]", "f32[1,6,6,6]");
    break;
  case RLX_OP_Conv3d:
    A->Conv3d = (rlx_attrs_Conv3d){.stride = IL(1, 1, 1), .padding = IL(1, 1, 1), .dilation = IL(1, 1, 1), .groups = 2};
    SPEC("f32[1,4,4,4,4] f32[6,2,3,3,3]", "f32[1,6,4,4,4]");
    break;
  case RLX_OP_ConvTranspose3d:
    A->ConvTranspose3d = (rlx_attrs_ConvTranspose3d){.stride = IL(2, 2, 2),
                                                     .padding = IL(0, 0, 0),
                                                     .dilation = IL(1, 1, 1),
                                                     .output_padding = IL(1, 1, 1),
                                                     .groups = 2};
    SPEC("f32[1,4,2,2,2] f32[4,1,2,2,2]", "f32[1,2,5,5,5]");
    break;
  case RLX_OP_Pool:
    A->Pool =
        (rlx_attrs_Pool){.kind = RLX_REDUCE_MEAN, .kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = IL(1, 1)};
    SPEC("f32[1,2,4,4]", "f32[1,2,3,3]");
    break;
  case RLX_OP_PartitionedConv:
    A->PartitionedConv.block = 32;
    SPEC("f32[2,16] f32[5]", "f32[2,20]");
    break;
  /* ---- backward ---- */
  case RLX_OP_ReluBackward: SPEC("f32[2,3] f32[2,3]", "f32[2,3]"); break;
  case RLX_OP_ActivationBackward:
    A->ActivationBackward.kind = RLX_ACT_TANH;
    SPEC("f32[2,3] f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_FakeQuantizeBackward:
    A->FakeQuantizeBackward = (rlx_attrs_FakeQuantizeBackward){.bits = 4, .axis = 0, .ste = RLX_STE_CLIPPED_IDENTITY};
    SPEC("f32[3,4] f32[3,4]", "f32[3,4]");
    break;
  case RLX_OP_ComplexNormSq: SPEC("c64[3]", "f32[3]"); break;
  case RLX_OP_ComplexNormSqBackward: SPEC("c64[3] f32[3]", "c64[3]"); break;
  case RLX_OP_Conjugate: SPEC("c64[3]", "c64[3]"); break;
  case RLX_OP_MaxPool2dBackward:
    A->MaxPool2dBackward =
        (rlx_attrs_MaxPool2dBackward){.kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = IL(0, 0)};
    SPEC("f32[1,2,4,4] f32[1,2,2,2]", "f32[1,2,4,4]");
    break;
  case RLX_OP_Conv2dBackwardInput:
    A->Conv2dBackwardInput = (rlx_attrs_Conv2dBackwardInput){
        .kernel_size = IL(3, 3), .stride = IL(1, 1), .padding = IL(1, 1), .dilation = IL(1, 1), .groups = 2};
    SPEC("f32[1,6,4,4] f32[6,2,3,3]", "f32[1,4,4,4]");
    break;
  case RLX_OP_Conv2dBackwardWeight:
    A->Conv2dBackwardWeight = (rlx_attrs_Conv2dBackwardWeight){
        .kernel_size = IL(3, 3), .stride = IL(1, 1), .padding = IL(1, 1), .dilation = IL(1, 1), .groups = 2};
    SPEC("f32[1,4,4,4] f32[1,6,4,4]", "f32[6,2,3,3]");
    break;
  case RLX_OP_MaxPool3dBackward:
    A->MaxPool3dBackward =
        (rlx_attrs_MaxPool3dBackward){.kernel_size = IL(2, 2, 2), .stride = IL(2, 2, 2), .padding = IL(0, 0, 0)};
    SPEC("f32[1,1,4,4,4] f32[1,1,2,2,2]", "f32[1,1,4,4,4]");
    break;
  case RLX_OP_Conv3dBackwardInput:
    A->Conv3dBackwardInput = (rlx_attrs_Conv3dBackwardInput){.kernel_size = IL(3, 3, 3),
                                                             .stride = IL(1, 1, 1),
                                                             .padding = IL(1, 1, 1),
                                                             .dilation = IL(1, 1, 1),
                                                             .groups = 2};
    SPEC("f32[1,6,4,4,4] f32[6,2,3,3,3]", "f32[1,4,4,4,4]");
    break;
  case RLX_OP_Conv3dBackwardWeight:
    A->Conv3dBackwardWeight = (rlx_attrs_Conv3dBackwardWeight){.kernel_size = IL(3, 3, 3),
                                                               .stride = IL(1, 1, 1),
                                                               .padding = IL(1, 1, 1),
                                                               .dilation = IL(1, 1, 1),
                                                               .groups = 2};
    SPEC("f32[1,4,4,4,4] f32[1,6,4,4,4]", "f32[6,2,3,3,3]");
    break;
  case RLX_OP_SoftmaxCrossEntropy: SPEC("f32[4,10] f32[4,10]", "f32[4]"); break;
  case RLX_OP_SoftmaxCrossEntropyWithLogits: SPEC("f32[4,10] f32[4]", "f32[4]"); break;
  case RLX_OP_SoftmaxCrossEntropyBackward: SPEC("f32[4,10] f32[4] f32[4]", "f32[4,10]"); break;
  case RLX_OP_AttentionBackward:
    A->AttentionBackward = (rlx_attrs_AttentionBackward){.num_heads = 2,
                                                         .head_dim = 4,
                                                         .mask_kind = RLX_MASK_SLIDING_WINDOW,
                                                         .window = 2,
                                                         .wrt = RLX_ATTN_WRT_KEY,
                                                         .score_scale = OF(0.5f),
                                                         .attn_logit_softcap = OF(20.0f)};
    SPEC("f32[1,3,8] f32[1,5,8] f32[1,5,8] f32[1,3,8]", "f32[1,5,8]");
    break;
  case RLX_OP_AttentionBackwardAll:
    A->AttentionBackwardAll = (rlx_attrs_AttentionBackwardAll){.num_heads = 2,
                                                               .head_dim = 4,
                                                               .mask_kind = RLX_MASK_SLIDING_WINDOW,
                                                               .window = 2,
                                                               .score_scale = OF(0.5f),
                                                               .attn_logit_softcap = OF(20.0f)};
    SPEC("f32[1,3,8] f32[1,5,8] f32[1,5,8] f32[1,3,8]", "f32[104]");
    break;
  case RLX_OP_LayerNormBackwardInput:
    A->LayerNormBackwardInput = (rlx_attrs_LayerNormBackwardInput){.axis = 1, .eps = 1e-3f};
    SPEC("f32[2,4] f32[4] f32[2,4]", "f32[2,4]");
    break;
  case RLX_OP_LayerNormBackwardGamma:
    A->LayerNormBackwardGamma = (rlx_attrs_LayerNormBackwardGamma){.axis = 1, .eps = 1e-3f};
    SPEC("f32[2,4] f32[2,4]", "f32[4]");
    break;
  case RLX_OP_RmsNormBackwardInput:
    A->RmsNormBackwardInput = (rlx_attrs_RmsNormBackwardInput){.axis = 1, .eps = 1e-5f};
    SPEC("f32[2,4] f32[4] f32[4] f32[2,4]", "f32[2,4]");
    break;
  case RLX_OP_RmsNormBackwardGamma:
    A->RmsNormBackwardGamma = (rlx_attrs_RmsNormBackwardGamma){.axis = 1, .eps = 1e-5f};
    SPEC("f32[2,4] f32[4] f32[4] f32[2,4]", "f32[4]");
    break;
  case RLX_OP_RmsNormBackwardBeta:
    A->RmsNormBackwardBeta = (rlx_attrs_RmsNormBackwardBeta){.axis = 1, .eps = 1e-5f};
    SPEC("f32[2,4] f32[4] f32[4] f32[2,4]", "f32[4]");
    break;
  case RLX_OP_RopeBackward:
    A->RopeBackward = (rlx_attrs_RopeBackward){.head_dim = 8, .n_rot = 4, .style = RLX_ROPE_STYLE_GPTJ};
    SPEC("f32[1,3,16] f32[3,2] f32[3,2]", "f32[1,3,16]");
    break;
  case RLX_OP_GroupNormBackwardInput:
    A->GroupNormBackwardInput = (rlx_attrs_GroupNormBackwardInput){.num_groups = 2, .eps = 1e-3f};
    SPEC("f32[1,4,2,2] f32[4] f32[4] f32[1,4,2,2]", "f32[1,4,2,2]");
    break;
  case RLX_OP_GroupNormBackwardGamma:
    A->GroupNormBackwardGamma = (rlx_attrs_GroupNormBackwardGamma){.num_groups = 2, .eps = 1e-3f};
    SPEC("f32[1,4,2,2] f32[1,4,2,2]", "f32[4]");
    break;
  case RLX_OP_GroupNormBackwardBeta:
    A->GroupNormBackwardBeta = (rlx_attrs_GroupNormBackwardBeta){.num_groups = 2, .eps = 1e-3f};
    SPEC("f32[1,4,2,2] f32[1,4,2,2]", "f32[4]");
    break;
  case RLX_OP_BatchNormInferenceBackwardInput:
    A->BatchNormInferenceBackwardInput.eps = 1e-3f;
    SPEC("f32[2,4] f32[4] f32[4] f32[4] f32[2,4]", "f32[2,4]");
    break;
  case RLX_OP_BatchNormInferenceBackwardGamma:
    A->BatchNormInferenceBackwardGamma.eps = 1e-3f;
    SPEC("f32[2,4] f32[4] f32[4] f32[2,4]", "f32[4]");
    break;
  case RLX_OP_BatchNormInferenceBackwardBeta: SPEC("f32[2,4]", "f32[4]"); break;
  case RLX_OP_CumsumBackward:
    A->CumsumBackward = (rlx_attrs_CumsumBackward){.axis = 0, .exclusive = true};
    SPEC("f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_GatherBackward:
    A->GatherBackward.axis = 1;
    SPEC("f32[4,2,3] i64[2,3]", "f32[4,7]");
    break;
  case RLX_OP_AdaLayerNormBackward:
    A->AdaLayerNormBackward = (rlx_attrs_AdaLayerNormBackward){.norm = RLX_ADA_NORM_RMS_NORM, .eps = 1e-5f};
    SPEC("f32[2,3,4] f32[2,1,4] f32[2,1,4] f32[2,3,4]", "f32[40]");
    break;
  case RLX_OP_GatedResidualBackward: SPEC("f32[2,3,4] f32[2,3,4] f32[2,1,4] f32[2,3,4]", "f32[56]"); break;
  /* ---- MoE ---- */
  case RLX_OP_GroupedMatMul: SPEC("f32[6,4] f32[3,4,5] f32[6]", "f32[6,5]"); break;
  case RLX_OP_DequantGroupedMatMul:
    A->DequantGroupedMatMul = (rlx_attrs_DequantGroupedMatMul){
        .scheme = RLX_QUANT_SCHEME_GGUF_Q8_0, .block_size = 16, .bits = 8, .group_size = 32};
    SPEC("f32[6,32] u8[3,272] f32[6]", "f32[6,8]");
    break;
  case RLX_OP_DequantGroupedMatMulMlx:
    A->DequantGroupedMatMulMlx = (rlx_attrs_DequantGroupedMatMulMlx){
        .scheme = RLX_QUANT_SCHEME_MLX_MXFP8, .block_size = 16, .bits = 8, .group_size = 32};
    SPEC("f32[6,64] u8[3,4,64] u8[3,4,2] u8[3,4,2] f32[6]", "f32[6,4]");
    break;
  case RLX_OP_DequantMoEWeights:
    A->DequantMoEWeights = (rlx_attrs_DequantMoEWeights){
        .scheme = RLX_QUANT_SCHEME_GGUF_Q8_0, .block_size = 16, .bits = 8, .group_size = 32};
    SPEC("u8[3,272]", "f32[3,32,8]");
    break;
  case RLX_OP_ScaledGroupedMatMul:
    A->ScaledGroupedMatMul = (rlx_attrs_ScaledGroupedMatMul){.lhs_format = RLX_SCALED_FORMAT_F8E5M2,
                                                             .rhs_format = RLX_SCALED_FORMAT_F8E5M2,
                                                             .layout = RLX_SCALE_LAYOUT_BLOCK_MX_E8M0,
                                                             .block = 16,
                                                             .has_bias = true};
    SPEC("u8[6,32] u8[3,4,32] u8[6,2] u8[3,4,2] f32[6] f32[3,4]", "f32[6,4]");
    break;
  /* ---- scatter / gather ---- */
  case RLX_OP_ScatterAdd:
    A->ScatterAdd.axis = 1;
    SPEC("f32[2,5] f32[5]", "f32[2,7]");
    break;
  case RLX_OP_ScatterNd:
    A->ScatterNd.reduction = RLX_SCATTER_REDUCTION_ADD;
    SPEC("f32[4,3] i64[2,1] f32[2,3]", "f32[4,3]");
    break;
  case RLX_OP_ScatterElements:
    A->ScatterElements = (rlx_attrs_ScatterElements){.axis = 1, .reduction = RLX_SCATTER_REDUCTION_MAX};
    SPEC("f32[3,4] i64[3,2] f32[3,2]", "f32[3,4]");
    break;
  case RLX_OP_GatherNd:
    A->GatherNd.batch_dims = 1;
    SPEC("f32[2,3,4] i64[2,1]", "f32[2,4]");
    break;
  case RLX_OP_GatherElements:
    A->GatherElements.axis = 1;
    SPEC("f32[3,4] i64[3,2]", "f32[3,2]");
    break;
  /* ---- fused ---- */
  case RLX_OP_LoraMatMul:
    A->LoraMatMul.scale = 0.5f;
    SPEC("f32[2,4] f32[4,5] f32[4,2] f32[2,5]", "f32[2,5]");
    break;
  case RLX_OP_FusedSwiGLU:
    A->FusedSwiGLU = (rlx_attrs_FusedSwiGLU){.cast_to = {.has = true, .v = RLX_F16}, .gate_first = true};
    SPEC("f32[2,8]", "f16[2,4]");
    break;
  case RLX_OP_FusedMatMulBiasAct:
    A->FusedMatMulBiasAct.activation = RLX_ACT_GELU;
    SPEC("f32[2,3] f32[3,4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_FusedMatMulResidual: SPEC("f32[2,3] f32[3,4] f32[2,4]", "f32[2,4]"); break;
  case RLX_OP_FusedConvBiasAct:
    A->FusedConvBiasAct = (rlx_attrs_FusedConvBiasAct){.kernel_size = IL(3, 3),
                                                       .stride = IL(1, 1),
                                                       .padding = IL(1, 1),
                                                       .dilation = IL(1, 1),
                                                       .groups = 2,
                                                       .activation = RLX_ACT_RELU,
                                                       .has_residual = true};
    SPEC("f32[1,4,5,5] f32[6,2,3,3] f32[6] f32[1,6,5,5]", "f32[1,6,5,5]");
    break;
  case RLX_OP_FusedResidualLN:
    A->FusedResidualLN = (rlx_attrs_FusedResidualLN){.has_bias = true, .eps = 1e-3f};
    SPEC("f32[2,4] f32[2,4] f32[4] f32[4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_FusedResidualRmsNorm:
    A->FusedResidualRmsNorm = (rlx_attrs_FusedResidualRmsNorm){.has_bias = true, .eps = 1e-3f};
    SPEC("f32[2,4] f32[2,4] f32[4] f32[4] f32[4]", "f32[2,4]");
    break;
  case RLX_OP_FusedAttentionBlock:
    A->FusedAttentionBlock =
        (rlx_attrs_FusedAttentionBlock){.num_heads = 2, .head_dim = 4, .has_bias = true, .has_rope = true};
    SPEC("f32[1,3,8] f32[8,24] f32[8,8] f32[1,3] f32[24] f32[8] f32[3,2] f32[3,2]", "f32[1,3,8]");
    break;
  case RLX_OP_FusedTransformerLayer:
    A->FusedTransformerLayer = (rlx_attrs_FusedTransformerLayer){.num_heads = 2,
                                                                 .head_dim = 4,
                                                                 .intermediate_size = 16,
                                                                 .eps1 = 1e-5f,
                                                                 .eps2 = 1e-6f,
                                                                 .activation = RLX_ACT_RELU,
                                                                 .has_bias = false};
    SPEC("f32[1,3,8] f32[8,24] f32[8,8] f32[8] f32[8,16] f32[16,8] f32[8] f32[1,3]", "f32[1,3,8]");
    break;
  /* ---- synth ---- */
  case RLX_OP_SynthMatMul:
    A->SynthMatMul = (rlx_attrs_SynthMatMul){.kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 4, .num_entries = 8};
    SPEC("f32[2,8] u8[2,4] f32[8,4]", "f32[2,4]");
    break;
  case RLX_OP_SynthMatMulBackward:
    A->SynthMatMulBackward = (rlx_attrs_SynthMatMulBackward){
        .kind = RLX_SYNTH_KIND_CODEBOOK, .entry_dim = 4, .num_entries = 8, .wrt = RLX_SYNTH_WRT_CODEBOOK};
    SPEC("f32[2,8] u8[2,4] f32[8,4] f32[2,4]", "f32[8,4]");
    break;
  case RLX_OP_SynthReconstruct:
    A->SynthReconstruct = (rlx_attrs_SynthReconstruct){.entry_dim = 4, .num_entries = 8};
    SPEC("u8[2,4] f32[8,4]", "f32[8,4]");
    break;
  case RLX_OP_SplineActivation:
    A->SplineActivation = (rlx_attrs_SplineActivation){.num_knots = 6, .grid_min = -2.0f, .grid_max = 2.0f};
    SPEC("f32[2,3] f32[3,6]", "f32[2,3]");
    break;
  case RLX_OP_SplineActivationBackwardX:
    A->SplineActivationBackwardX =
        (rlx_attrs_SplineActivationBackwardX){.num_knots = 6, .grid_min = -2.0f, .grid_max = 2.0f};
    SPEC("f32[2,3] f32[3,6] f32[2,3]", "f32[2,3]");
    break;
  case RLX_OP_SplineActivationBackwardCoeff:
    A->SplineActivationBackwardCoeff =
        (rlx_attrs_SplineActivationBackwardCoeff){.num_knots = 6, .grid_min = -2.0f, .grid_max = 2.0f};
    SPEC("f32[2,3] f32[3,6] f32[2,3]", "f32[3,6]");
    break;
  /* ---- recurrent ---- */
  case RLX_OP_SelectiveScan:
    A->SelectiveScan.state_size = 4;
    SPEC("f32[1,3,2] f32[1,3,2] f32[2,4] f32[1,3,4] f32[1,3,4]", "f32[1,3,2]");
    break;
  case RLX_OP_GatedDeltaNet:
    A->GatedDeltaNet = (rlx_attrs_GatedDeltaNet){.state_size = 4, .carry_state = true, .gate_per_channel = true};
    SPEC("f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2] f32[1,2,4,4]", "f32[1,3,2,4]");
    break;
  case RLX_OP_GatedDeltaNetBackward:
    A->GatedDeltaNetBackward =
        (rlx_attrs_GatedDeltaNetBackward){.state_size = 4, .carry_state = true, .gate_per_channel = true};
    SPEC("f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2,4] f32[1,3,2] f32[1,2,4,4] f32[1,3,2,4]", "f32[134]");
    break;
  case RLX_OP_Lstm:
    A->Lstm = (rlx_attrs_Lstm){.hidden_size = 3, .num_layers = 2, .bidirectional = true, .carry = true};
    SPEC("f32[1,4,5] f32[264] f32[4,12,3] f32[4,12] f32[4,1,3] f32[4,1,3]", "f32[1,4,6]");
    break;
  case RLX_OP_Gru:
    A->Gru = (rlx_attrs_Gru){.hidden_size = 3, .num_layers = 2, .bidirectional = true, .carry = true};
    SPEC("f32[1,4,5] f32[198] f32[4,9,3] f32[4,9] f32[4,9] f32[4,1,3]", "f32[1,4,6]");
    break;
  case RLX_OP_Rnn:
    A->Rnn = (rlx_attrs_Rnn){.hidden_size = 3, .num_layers = 2, .bidirectional = true, .carry = true, .relu = true};
    SPEC("f32[1,4,5] f32[66] f32[4,3,3] f32[4,3] f32[4,1,3]", "f32[1,4,6]");
    break;
  case RLX_OP_Mamba2:
    A->Mamba2 = (rlx_attrs_Mamba2){.head_dim = 2, .state_size = 3};
    SPEC("f32[1,4,2,2] f32[1,4,2] f32[2] f32[1,4,2,3] f32[1,4,2,3]", "f32[1,4,2,2]");
    break;
  /* ---- control flow ---- */
  case RLX_OP_If:
    A->If.then_branch = unary_body(c, "then", "c0", RLX_ACT_RELU, "f32[4]");
    A->If.else_branch = unary_body(c, "else", "c0", RLX_ACT_NEG, "f32[4]");
    SPEC("bool[] f32[4]", "f32[4]");
    break;
  case RLX_OP_While: {
    rlx_graph *cond = body(c, c->g, "cond");
    rlx_id x = input(c, cond, "x", "f32[4]");
    rlx_attrs_Reduce r = {.op = RLX_REDUCE_SUM, .axes = IL(0), .keep_dim = false};
    rlx_id s = add(c, cond, RLX_OP_Reduce, &x, 1, &r, "f32[]", NULL);
    float ten = 10.0f;
    rlx_attrs_Constant k = {.data = {.p = arena_copy(c, &ten, 4), .n = 4}};
    rlx_id lim = add(c, cond, RLX_OP_Constant, NULL, 0, &k, "f32[]", "limit");
    rlx_attrs_Compare lt = {.op = RLX_CMP_LT};
    rlx_id in2[2] = {s, lim};
    ret1(c, cond, add(c, cond, RLX_OP_Compare, in2, 2, &lt, "bool[]", NULL));
    rlx_graph *bd = body(c, c->g, "step");
    rlx_id y = input(c, bd, "x", "f32[4]");
    ret1(c, bd, binop(c, bd, RLX_BINOP_ADD, y, y, "f32[4]"));
    A->While = (rlx_attrs_While){.cond = cond, .body = bd, .max_iterations = OI(10)};
    SPEC("f32[4]", "f32[4]");
    break;
  }
  case RLX_OP_Scan:
    A->Scan = (rlx_attrs_Scan){.body = scan_body(c, "scan_body", true),
                               .length = 3,
                               .save_trajectory = true,
                               .num_bcast = 1,
                               .num_xs = 1,
                               .num_checkpoints = 2};
    SPEC("f32[4] f32[4] f32[3,4]", "f32[2,4]");
    break;
  case RLX_OP_ScanBackward:
    A->ScanBackward = (rlx_attrs_ScanBackward){.body_vjp = scan_vjp_body(c, "vjp", 1),
                                               .length = 3,
                                               .save_trajectory = true,
                                               .num_xs = 1,
                                               .num_checkpoints = 2,
                                               .forward_body = scan_forward_body(c, "fwd", 1)};
    SPEC("f32[4] f32[2,4] f32[2,4] f32[3,4]", "f32[4]");
    break;
  case RLX_OP_ScanBackwardXs:
    A->ScanBackwardXs = (rlx_attrs_ScanBackwardXs){.body_vjp = scan_vjp_body(c, "vjp", 2),
                                                   .length = 3,
                                                   .save_trajectory = true,
                                                   .num_xs = 2,
                                                   .num_checkpoints = 2,
                                                   .forward_body = scan_forward_body(c, "fwd", 2),
                                                   .xs_idx = 1};
    SPEC("f32[4] f32[2,4] f32[2,4] f32[3,4] f32[3,4]", "f32[3,4]");
    break;
  /* ---- splatting ---- */
  case RLX_OP_GaussianSplatRender:
    A->GaussianSplatRender = (rlx_attrs_GaussianSplatRender){.width = 8,
                                                             .height = 4,
                                                             .tile_size = 4,
                                                             .radius_scale = 2.0f,
                                                             .alpha_cutoff = 0.01f,
                                                             .max_splat_steps = 16,
                                                             .transmittance_threshold = 0.02f,
                                                             .max_list_entries = 100};
    SPEC("f32[6] f32[6] f32[8] f32[2] f32[6] f32[6] f32[23]", "f32[128]");
    break;
  case RLX_OP_GaussianSplatRenderBackward:
    A->GaussianSplatRenderBackward = (rlx_attrs_GaussianSplatRenderBackward){.width = 8,
                                                                             .height = 4,
                                                                             .tile_size = 4,
                                                                             .radius_scale = 2.0f,
                                                                             .alpha_cutoff = 0.01f,
                                                                             .max_splat_steps = 16,
                                                                             .transmittance_threshold = 0.02f,
                                                                             .max_list_entries = 100,
                                                                             .loss_grad_clip = 0.5f,
                                                                             .sh_band = 1,
                                                                             .max_anisotropy = 5.0f};
    SPEC("f32[6] f32[6] f32[8] f32[2] f32[6] f32[6] f32[23] f32[128]", "f32[34]");
    break;
  case RLX_OP_GaussianSplatPrepare:
    A->GaussianSplatPrepare = (rlx_attrs_GaussianSplatPrepare){.width = 8,
                                                               .height = 4,
                                                               .tile_size = 4,
                                                               .radius_scale = 2.0f,
                                                               .alpha_cutoff = 0.01f,
                                                               .max_splat_steps = 16,
                                                               .transmittance_threshold = 0.02f,
                                                               .max_list_entries = 100};
    SPEC("f32[6] f32[6] f32[8] f32[2] f32[6] f32[6] f32[23]", "f32[241]");
    break;
  case RLX_OP_GaussianSplatRasterize:
    A->GaussianSplatRasterize = (rlx_attrs_GaussianSplatRasterize){.width = 8,
                                                                   .height = 4,
                                                                   .tile_size = 4,
                                                                   .alpha_cutoff = 0.01f,
                                                                   .max_splat_steps = 16,
                                                                   .transmittance_threshold = 0.02f,
                                                                   .max_list_entries = 100};
    SPEC("f32[241] f32[23]", "f32[128]");
    break;
  /* ---- extension surface ---- */
  case RLX_OP_Custom: {
    static const uint8_t blob[3] = {0x01, 0x02, 0xff};
    A->Custom =
        (rlx_attrs_Custom){.name = "my.ext_op", .num_inputs = 2, .attrs = {.p = arena_copy(c, blob, 3), .n = 3}};
    SPEC("f32[3] f32[3]", "f32[3]");
    break;
  }
  case RLX_OP_CustomFn: {
    rlx_graph *fwd = unary_body(c, "fwd", "x", RLX_ACT_TANH, "f32[4]");
    rlx_graph *vjp = body(c, c->g, "vjp");
    input(c, vjp, "x", "f32[4]");
    rlx_id y = input(c, vjp, "primal_output", "f32[4]");
    rlx_id d = input(c, vjp, "d_output", "f32[4]");
    rlx_id yy = binop(c, vjp, RLX_BINOP_MUL, y, y, "f32[4]");
    ret1(c, vjp, binop(c, vjp, RLX_BINOP_SUB, d, binop(c, vjp, RLX_BINOP_MUL, d, yy, "f32[4]"), "f32[4]"));
    rlx_graph *jvp = body(c, c->g, "jvp");
    input(c, jvp, "x", "f32[4]");
    rlx_id t = input(c, jvp, "tangent_0", "f32[4]");
    ret1(c, jvp, t);
    A->CustomFn = (rlx_attrs_CustomFn){.fwd_body = fwd, .vjp_body = vjp, .jvp_body = jvp, .num_inputs = 1};
    SPEC("f32[4]", "f32[4]");
    break;
  }
  /* ---- signal ---- */
  case RLX_OP_Fft:
    A->Fft = (rlx_attrs_Fft){.inverse = true, .norm = RLX_FFT_NORM_ORTHO};
    SPEC("f32[2,16]", "f32[2,16]");
    break;
  case RLX_OP_FftQ:
    A->FftQ = (rlx_attrs_FftQ){.inverse = true, .norm = RLX_FFT_NORM_FORWARD, .scale = RLX_FFTQ_SCALE_SATURATING};
    SPEC("i16[2,16]", "i16[2,16]");
    break;
  case RLX_OP_FftButterflyStage:
    A->FftButterflyStage = (rlx_attrs_FftButterflyStage){.stage = 1, .n_fft = 8};
    SPEC("f32[2,16] f32[4] f32[4] f32[4] f32[4]", "f32[2,16]");
    break;
  case RLX_OP_LogMel: SPEC("f32[3,16] f32[5,5]", "f32[3,5]"); break;
  case RLX_OP_LogMelBackward: SPEC("f32[3,16] f32[5,5] f32[3,5]", "f32[3,16]"); break;
  case RLX_OP_WelchPeaks:
    A->WelchPeaks = (rlx_attrs_WelchPeaks){.k = 2, .n_segments = 2};
    SPEC("f32[4,16]", "f32[2,4]");
    break;
  /* ---- SPD and eigen ---- */
  case RLX_OP_BiMap: SPEC("f64[2,3] f64[3,3]", "f64[2,2]"); break;
  case RLX_OP_ReEig:
    A->ReEig.eps = 1e-3f;
    SPEC("f64[3,3]", "f64[21]");
    break;
  case RLX_OP_LogEig:
    A->LogEig.eps = 1e-3f;
    SPEC("f64[3,3]", "f64[21]");
    break;
  case RLX_OP_SpdBatchNorm:
    A->SpdBatchNorm.eps = 1e-3f;
    SPEC("f64[2,3,3] f64[3,3] f64[3,3]", "f64[2,3,3]");
    break;
  case RLX_OP_SpdKarcherMean:
    A->SpdKarcherMean = (rlx_attrs_SpdKarcherMean){.iters = 5, .tol = 1e-3f};
    SPEC("f64[2,3,3]", "f64[3,3]");
    break;
  case RLX_OP_ReEigBackward:
    A->ReEigBackward.eps = 1e-3f;
    SPEC("f64[3] f64[9] f64[9]", "f64[3,3]");
    break;
  case RLX_OP_LogEigBackward:
    A->LogEigBackward.eps = 1e-3f;
    SPEC("f64[3] f64[9] f64[9]", "f64[3,3]");
    break;
  case RLX_OP_SpdBatchNormBackwardX:
    A->SpdBatchNormBackwardX.eps = 1e-3f;
    SPEC("f64[3,3] f64[3,3] f64[2,3,3]", "f64[2,3,3]");
    break;
  case RLX_OP_SpdBatchNormBackwardG:
    A->SpdBatchNormBackwardG.eps = 1e-3f;
    SPEC("f64[2,3,3] f64[3,3] f64[3,3] f64[2,3,3]", "f64[3,3]");
    break;
  case RLX_OP_SpdKarcherMeanWeighted:
    A->SpdKarcherMeanWeighted = (rlx_attrs_SpdKarcherMeanWeighted){.iters = 5, .tol = 1e-3f};
    SPEC("f64[2,3,3] f64[2]", "f64[3,3]");
    break;
  case RLX_OP_SpdLogMap: SPEC("f64[3,3] f64[3,3]", "f64[3,3]"); break;
  case RLX_OP_SpdExpMap: SPEC("f64[3,3] f64[3,3]", "f64[3,3]"); break;
  case RLX_OP_SpdParallelTransport: SPEC("f64[3,3] f64[3,3] f64[3,3]", "f64[3,3]"); break;
  case RLX_OP_SpdMatrixFnBatch:
    A->SpdMatrixFnBatch.kind = RLX_SPD_FN_EXPM;
    SPEC("f64[2,3,3]", "f64[2,3,3]");
    break;
  case RLX_OP_SpdLogMapBackward: SPEC("f64[3,3] f64[3,3] f64[3,3]", "f64[2,3,3]"); break;
  case RLX_OP_SpdExpMapBackward: SPEC("f64[3,3] f64[3,3] f64[3,3]", "f64[2,3,3]"); break;
  case RLX_OP_SpdParallelTransportBackward: SPEC("f64[3,3] f64[3,3] f64[3,3] f64[3,3]", "f64[3,3,3]"); break;
  case RLX_OP_SpdMatrixFnBatchBackward:
    A->SpdMatrixFnBatchBackward.kind = RLX_SPD_FN_SQRTM;
    SPEC("f64[2,3,3] f64[2,3,3]", "f64[2,3,3]");
    break;
  case RLX_OP_Eigh: SPEC("f64[3,3]", "f64[12]"); break;
  case RLX_OP_EighBackward: SPEC("f64[12] f64[12]", "f64[3,3]"); break;
  case RLX_OP_EighBatch: SPEC("f64[2,3,3]", "f64[2,12]"); break;
  case RLX_OP_EighBatchBackward: SPEC("f64[2,12] f64[2,12]", "f64[2,3,3]"); break;
  case RLX_OP_COUNT: break;
  }
}

/* ---- public ---- */

static rlx_status finish(sctx *c, rlx_graph **out) {
  if (c->st) {
    rlx_graph_free(c->g);
    *out = NULL;
    return c->st;
  }
  *out = c->g;
  return RLX_OK;
}

rlx_status sample_op_graph(rlx_op op, const rlx_allocator *al, rlx_graph **out) {
  *out = NULL;
  char gname[64];
  snprintf(gname, sizeof gname, "sample_%s", rlx_op_name(op));
  sctx cc = {NULL, RLX_OK}, *c = &cc;
  RLX_TRY(rlx_graph_create(al, gname, &c->g));
  rlx_attrs A;
  memset(&A, 0, sizeof A);
  rlx_attrs_init(op, &A);
  op_spec sp = {"", "f32[]", NULL};
  spec_op(c, op, &A, &sp);
  rlx_id in[16];
  uint32_t n = 0;
  for (const char *p = sp.in; *p && n < 16;) {
    while (*p == ' ') p++;
    if (!*p) break;
    char name[8];
    snprintf(name, sizeof name, "x%u", n);
    rlx_attrs_Input ia = {.name = name};
    rlx_shape s = parse_shape(&p);
    if (!c->st) {
      rlx_status st = rlx_graph_add_unchecked(c->g, RLX_OP_Input, NULL, 0, &ia, &s, NULL, &in[n]);
      if (st) fail(c, st);
    }
    n++;
  }
  char nname[64];
  snprintf(nname, sizeof nname, "n%s", rlx_op_name(op));
  rlx_id id = add(c, c->g, op, in, n, &A, sp.out, sp.name ? sp.name : nname);
  ret1(c, c->g, id);
  return finish(c, out);
}

rlx_id sample_op_node(const rlx_graph *g) { return rlx_graph_output_count(g) ? rlx_graph_outputs(g)[0] : RLX_NO_ID; }

bool sample_all_fields_set(rlx_op op, const void *attrs, char *which, size_t cap) {
  rlx_attrs def;
  rlx_attrs_init(op, &def);
  uint32_t nf;
  const rlx_field *f = rlx_op_fields(op, &nf);
  for (uint32_t i = 0; i < nf; i++) {
    const char *p = (const char *)attrs + f[i].offset, *d = (const char *)&def + f[i].offset;
    bool is_def;
    switch (f[i].type) {
    case RLX_FT_I64:
    case RLX_FT_U64: is_def = memcmp(p, d, 8) == 0; break;
    case RLX_FT_F32: is_def = memcmp(p, d, 4) == 0; break;
    case RLX_FT_BOOL: is_def = *(const bool *)p == *(const bool *)d; break;
    case RLX_FT_DTYPE: is_def = *(const int32_t *)p == *(const int32_t *)d; break;
    case RLX_FT_ENUM: is_def = *(const int32_t *)p == *(const int32_t *)d && f[i].enm->count > 1; break;
    case RLX_FT_OENUM: is_def = *(const int32_t *)p < 0; break;
    case RLX_FT_OI64: is_def = !((const rlx_oi64 *)p)->has; break;
    case RLX_FT_OF32: is_def = !((const rlx_of32 *)p)->has; break;
    case RLX_FT_ODTYPE: is_def = !((const rlx_odtype *)p)->has; break;
    case RLX_FT_ILIST: is_def = ((const rlx_ilist *)p)->n == 0; break;
    case RLX_FT_FLIST: is_def = ((const rlx_flist *)p)->n == 0; break;
    case RLX_FT_STR: is_def = !*(const char *const *)p || !**(const char *const *)p; break;
    case RLX_FT_BYTES: is_def = ((const rlx_bytes *)p)->n == 0; break;
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH: is_def = *(rlx_graph *const *)p == NULL; break;
    case RLX_FT_CHAIN: is_def = ((const rlx_chain *)p)->n == 0; break;
    default: is_def = true; break;
    }
    if (is_def) {
      snprintf(which, cap, "%s", f[i].name);
      return false;
    }
  }
  return true;
}

/* ---- extra samples ---- */

/* Three levels of bodies: While whose body holds a Scan whose body holds an If; quoted graph
 * names, symbolic dims and node names that need escapes. */
static void extra_nested(sctx *c) {
  rlx_graph *top = c->g;
  rlx_id x = input(c, top, "x", "f32[?0,4]");
  rlx_id xs = input(c, top, "xs", "f32[3,?0,4]");

  rlx_graph *cond = body(c, top, "loop cond");
  rlx_id cx = input(c, cond, "x", "f32[?0,4]");
  input(c, cond, "xs", "f32[3,?0,4]");
  rlx_attrs_Reduce r = {.op = RLX_REDUCE_MAX, .axes = IL(0, 1), .keep_dim = false};
  rlx_id m = add(c, cond, RLX_OP_Reduce, &cx, 1, &r, "f32[]", "max\tof x");
  float lim = 100.0f;
  rlx_attrs_Constant k = {.data = {.p = arena_copy(c, &lim, 4), .n = 4}};
  rlx_id kid = add(c, cond, RLX_OP_Constant, NULL, 0, &k, "f32[]", NULL);
  rlx_attrs_Compare lt = {.op = RLX_CMP_LT};
  rlx_id in2[2] = {m, kid};
  ret1(c, cond, add(c, cond, RLX_OP_Compare, in2, 2, &lt, "bool[]", NULL));

  rlx_graph *step = body(c, top, "loop.step");
  rlx_id sx = input(c, step, "x", "f32[?0,4]");
  rlx_id sxs = input(c, step, "xs", "f32[3,?0,4]");
  /* Scan body (inside the loop body): carry + relu-or-neg(x_t) chosen by an If */
  sctx inner = {step, RLX_OK};
  rlx_graph *sb = body(&inner, step, "scan\"body\"");
  rlx_id carry = input(&inner, sb, "carry", "f32[?0,4]");
  rlx_id row = input(&inner, sb, "row", "f32[?0,4]");
  float zero = 0.0f;
  rlx_attrs_Constant z = {.data = {.p = arena_copy(&inner, &zero, 4), .n = 4}};
  rlx_id zid = add(&inner, sb, RLX_OP_Constant, NULL, 0, &z, "f32[]", NULL);
  rlx_attrs_Reduce rs = {.op = RLX_REDUCE_SUM, .axes = IL(0, 1), .keep_dim = false};
  rlx_id tot = add(&inner, sb, RLX_OP_Reduce, &row, 1, &rs, "f32[]", NULL);
  rlx_attrs_Compare gt = {.op = RLX_CMP_GT};
  rlx_id pin[2] = {tot, zid};
  rlx_id pred = add(&inner, sb, RLX_OP_Compare, pin, 2, &gt, "bool[]", "pred");
  sctx inner2 = {sb, RLX_OK};
  rlx_graph *tb = body(&inner2, sb, "then");
  ret1(&inner2, tb, act(&inner2, tb, RLX_ACT_RELU, input(&inner2, tb, "r", "f32[?0,4]"), "f32[?0,4]"));
  rlx_graph *eb = body(&inner2, sb, "else");
  ret1(&inner2, eb, act(&inner2, eb, RLX_ACT_NEG, input(&inner2, eb, "r", "f32[?0,4]"), "f32[?0,4]"));
  fail(&inner, inner2.st);
  rlx_attrs_If ifa = {.then_branch = tb, .else_branch = eb};
  rlx_id iin[2] = {pred, row};
  rlx_id chosen = add(&inner, sb, RLX_OP_If, iin, 2, &ifa, "f32[?0,4]", NULL);
  ret1(&inner, sb, binop(&inner, sb, RLX_BINOP_ADD, carry, chosen, "f32[?0,4]"));
  fail(c, inner.st);
  rlx_attrs_Scan sa = {
      .body = sb, .length = 3, .save_trajectory = false, .num_bcast = 0, .num_xs = 1, .num_checkpoints = 0};
  rlx_id scan_in[2] = {sx, sxs};
  rlx_id sc = add(c, step, RLX_OP_Scan, scan_in, 2, &sa, "f32[?0,4]", NULL);
  rlx_id outs[2] = {sc, sxs};
  ret(c, step, outs, 2);

  rlx_attrs_While wa = {.cond = cond, .body = step, .max_iterations = OI(4)};
  rlx_id win[2] = {x, xs};
  rlx_id w = add(c, top, RLX_OP_While, win, 2, &wa, "f32[?0,4]", "loop");
  rlx_id outs2[2] = {w, x};
  ret(c, top, outs2, 2);
}

/* Floats that need care: infinities, signed zero, subnormals, extreme values, NaN payloads. */
static void extra_floats(sctx *c) {
  rlx_graph *g = c->g;
  rlx_id x = input(c, g, "x", "f32[2,3]");
  rlx_attrs_Clamp cl = {.min = -INFINITY, .max = INFINITY};
  rlx_id a = add(c, g, RLX_OP_Clamp, &x, 1, &cl, "f32[2,3]", NULL);
  rlx_attrs_Pad pd = {.pads = IL(0, 0, 1, 1), .mode = RLX_PAD_MODE_CONSTANT, .value = -0.0f};
  rlx_id b = add(c, g, RLX_OP_Pad, &a, 1, &pd, "f32[2,5]", NULL);
  rlx_attrs_Quantize q = {.axis = -1,
                          .scales = FL(1e-45f, 3.4028235e38f, 0.1f, 16777216.0f, 1.17549435e-38f),
                          .zero_points = IL(-128, 127, 0, 1, -1)};
  rlx_id b3 = add(c, g, RLX_OP_Reshape, &b, 1, &(rlx_attrs_Reshape){.new_shape = IL(2, 5)}, "f32[2,5]", NULL);
  rlx_id qn = add(c, g, RLX_OP_Quantize, &b3, 1, &q, "i8[2,5]", NULL);
  uint32_t bits = 0x7fc12345u;
  float payload_nan;
  memcpy(&payload_nan, &bits, 4);
  rlx_attrs_RngNormal rn = {.mean = -0.0f, .scale = 1e-7f, .key = UINT64_MAX, .op_seed = OF(payload_nan)};
  rlx_id rnd = add(c, g, RLX_OP_RngNormal, NULL, 0, &rn, "f32[3]", NULL);
  rlx_attrs_Sample sm = {.top_k = INT64_MAX, .top_p = 0.3333333f, .temperature = 123456.789f, .seed = 1};
  rlx_id smp = add(c, g, RLX_OP_Sample, &x, 1, &sm, "f32[2]", NULL);
  rlx_id outs[3] = {qn, rnd, smp};
  ret(c, g, outs, 3);
}

/* Bodies nested to the maximum depth (64) through CustomFn fwd bodies. */
static void extra_deep(sctx *c) {
  rlx_graph *g = c->g;
  rlx_graph *levels[65];
  levels[0] = g;
  for (int d = 1; d <= 64 && !c->st; d++) levels[d] = body(c, levels[d - 1], "lvl");
  if (c->st) return;
  /* innermost: x -> tanh(x) */
  rlx_id x = input(c, levels[64], "x", "f32[2]");
  ret1(c, levels[64], act(c, levels[64], RLX_ACT_TANH, x, "f32[2]"));
  for (int d = 63; d >= 0 && !c->st; d--) {
    rlx_id xi = input(c, levels[d], "x", "f32[2]");
    rlx_attrs_CustomFn cf = {.fwd_body = levels[d + 1], .vjp_body = NULL, .jvp_body = NULL, .num_inputs = 1};
    ret1(c, levels[d], add(c, levels[d], RLX_OP_CustomFn, &xi, 1, &cf, "f32[2]", NULL));
  }
}

/* No nodes, no outputs; a graph name that must be quoted. */
static void extra_empty(sctx *c) { (void)c; }

/* Extreme dims and names. */
static void extra_dims(sctx *c) {
  rlx_graph *g = c->g;
  rlx_id a = input(c, g, "a", "f32[?4294967295,?0,4611686018427387904]");
  rlx_id b = input(c, g, "b", "f32[]");
  rlx_id p = add(c, g, RLX_OP_Param, NULL, 0, &(rlx_attrs_Param){.name = "p"}, "bool[0,1,2,3,4,5,6,7]", "");
  rlx_id outs[3] = {a, b, p};
  ret(c, g, outs, 3);
}

static const struct {
  const char *name;
  const char *graph_name;
  void (*build)(sctx *c);
} extras[] = {
    {"nested", "nested", extra_nested},        {"floats", "floats", extra_floats}, {"deep", "deep", extra_deep},
    {"empty", "an empty graph!", extra_empty}, {"dims", "dims", extra_dims},
};

int sample_extra_count(void) { return (int)(sizeof extras / sizeof *extras); }
const char *sample_extra_name(int i) { return extras[i].name; }

rlx_status sample_extra_graph(int i, const rlx_allocator *al, rlx_graph **out) {
  *out = NULL;
  sctx cc = {NULL, RLX_OK}, *c = &cc;
  RLX_TRY(rlx_graph_create(al, extras[i].graph_name, &c->g));
  extras[i].build(c);
  return finish(c, out);
}
