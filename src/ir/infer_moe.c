/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: grouped (MoE) and dequantizing matmuls (spec ir-special §1.1, §1.3, §1.4).
 * Packed weights travel as byte tensors whose shapes hide the logical dims; where the spec gives
 * the byte layout we check the byte count, and where it hides a dim the declared output shape
 * supplies it. Every dequantizing matmul produces f32. */
#include "infer_util.h"

/* ---- quantization schemes ---- */

/* GGUF block geometry (elements per block, bytes per block); false for non-GGUF schemes. The one
 * table of it: the shape rules and the CPU's block decoders read it (rlx/ops.h). */
bool rlx_quant_scheme_gguf_block(int32_t scheme, int64_t *elems, int64_t *bytes) {
  int64_t e, b;
  switch (scheme) {
  case RLX_QUANT_SCHEME_GGUF_Q4K: e = 256, b = 144; break;
  case RLX_QUANT_SCHEME_GGUF_Q5K: e = 256, b = 176; break;
  case RLX_QUANT_SCHEME_GGUF_Q6K: e = 256, b = 210; break;
  case RLX_QUANT_SCHEME_GGUF_Q8K: e = 256, b = 292; break;
  case RLX_QUANT_SCHEME_GGUF_Q2K: e = 256, b = 84; break;
  case RLX_QUANT_SCHEME_GGUF_Q3K: e = 256, b = 110; break;
  case RLX_QUANT_SCHEME_GGUF_IQ4NL: e = 32, b = 18; break;
  case RLX_QUANT_SCHEME_GGUF_IQ4XS: e = 256, b = 136; break;
  case RLX_QUANT_SCHEME_GGUF_TQ1_0: e = 256, b = 54; break;
  case RLX_QUANT_SCHEME_GGUF_TQ2_0: e = 256, b = 66; break;
  case RLX_QUANT_SCHEME_GGUF_MXFP4: e = 32, b = 17; break;
  case RLX_QUANT_SCHEME_GGUF_NVFP4: e = 16, b = 9; break;
  case RLX_QUANT_SCHEME_GGUF_IQ2XXS: e = 256, b = 66; break;
  case RLX_QUANT_SCHEME_GGUF_IQ2XS: e = 256, b = 74; break;
  case RLX_QUANT_SCHEME_GGUF_IQ2S: e = 256, b = 82; break;
  case RLX_QUANT_SCHEME_GGUF_IQ3XXS: e = 256, b = 98; break;
  case RLX_QUANT_SCHEME_GGUF_IQ3S: e = 256, b = 110; break;
  case RLX_QUANT_SCHEME_GGUF_IQ1S: e = 256, b = 50; break;
  case RLX_QUANT_SCHEME_GGUF_IQ1M: e = 256, b = 56; break;
  case RLX_QUANT_SCHEME_GGUF_Q4_0: e = 32, b = 18; break;
  case RLX_QUANT_SCHEME_GGUF_Q8_0: e = 32, b = 34; break;
  case RLX_QUANT_SCHEME_GGUF_Q4_1: e = 32, b = 20; break;
  case RLX_QUANT_SCHEME_GGUF_Q5_0: e = 32, b = 22; break;
  case RLX_QUANT_SCHEME_GGUF_Q5_1: e = 32, b = 24; break;
  case RLX_QUANT_SCHEME_GGUF_Q1_0: e = 128, b = 18; break;
  case RLX_QUANT_SCHEME_GGUF_Q2_0: e = 128, b = 34; break;
  case RLX_QUANT_SCHEME_GGUF_FV5: e = 256, b = 104; break;
  case RLX_QUANT_SCHEME_GGUF_FV5B: e = 256, b = 260; break;
  default: return false;
  }
  *elems = e;
  *bytes = b;
  return true;
}

static rlx_status need_scheme(int32_t scheme) {
  if (scheme < 0 || scheme >= RLX_QUANT_SCHEME_COUNT)
    return rlx_shape_error("attribute scheme: %d is not a QuantScheme", (int)scheme);
  return RLX_OK;
}

static const char *scheme_name(int32_t scheme) { return rlx_enum_quant_scheme.names[scheme]; }

/* ---- operand helpers ---- */

static rlx_status need_rank(const rlx_infer_ctx *c, uint32_t i, const char *what, uint32_t rank, const char *layout) {
  if (c->in[i]->rank != rank)
    return rlx_shape_error("operand %u (%s) has shape %s; expected %s", i, what, rlx_fmt_shape(c->in[i]), layout);
  return RLX_OK;
}

/* Operand i holds raw bytes: U8 (or, where allowed, another 1-byte / word integer dtype). */
static rlx_status need_bytes(const rlx_infer_ctx *c, uint32_t i, const char *what, bool allow_i8, bool allow_u32) {
  rlx_dtype t = (rlx_dtype)c->in[i]->dtype;
  if (t == RLX_U8 || (allow_i8 && t == RLX_I8) || (allow_u32 && t == RLX_U32)) return RLX_OK;
  return rlx_shape_error("operand %u (%s) has dtype %s; expected u8%s%s", i, what, rlx_dtype_name(t),
                         allow_i8 ? " or i8" : "", allow_u32 ? " or u32 (MLX words)" : "");
}

/* Byte count of operand i, *known = false when a dim is symbolic. */
static rlx_status byte_count(const rlx_infer_ctx *c, uint32_t i, bool *known, int64_t *bytes) {
  int64_t n = 0;
  RLX_TRY(iu_numel(c->in[i], i, known, &n));
  if (*known) RLX_TRY(ck_mul_or(n, (int64_t)rlx_dtype_size((rlx_dtype)c->in[i]->dtype), bytes, "the byte count"));
  return RLX_OK;
}

/* Operand i must hold exactly `want` bytes (skipped when its shape is symbolic). */
static rlx_status need_byte_count(const rlx_infer_ctx *c, uint32_t i, const char *what, int64_t want,
                                  const char *formula) {
  bool known;
  int64_t have = 0;
  RLX_TRY(byte_count(c, i, &known, &have));
  if (known && have != want)
    return rlx_shape_error("operand %u (%s) %s holds %" PRId64 " bytes; expected %" PRId64 " (%s)", i, what,
                           rlx_fmt_shape(c->in[i]), have, want, formula);
  return RLX_OK;
}

/* Operand i must hold exactly `want` elements (skipped when symbolic). */
static rlx_status need_numel(const rlx_infer_ctx *c, uint32_t i, const char *what, int64_t want, const char *formula) {
  bool known;
  int64_t have = 0;
  RLX_TRY(iu_numel(c->in[i], i, &known, &have));
  if (known && have != want)
    return rlx_shape_error("operand %u (%s) has shape %s (%" PRId64 " elements); expected %" PRId64 " elements (%s)", i,
                           what, rlx_fmt_shape(c->in[i]), have, want, formula);
  return RLX_OK;
}

/* Activations x [M, K], floating-point. */
static rlx_status need_activations(const rlx_infer_ctx *c, uint32_t i) {
  RLX_TRY(need_rank(c, i, "x", 2, "[M, K]"));
  return rlx_need_dtype_float(c, i);
}

/* expert_idx [M] (f32-encoded or integer). */
static rlx_status need_expert_idx(const rlx_infer_ctx *c, uint32_t i, rlx_dim m) {
  RLX_TRY(iu_need_index(c, i, "expert_idx"));
  if (c->in[i]->rank != 1 || !rlx_dim_equal(c->in[i]->dims[0], m))
    return rlx_shape_error("operand %u (expert_idx) has shape %s; expected [%s] (one expert per row of operand 0)", i,
                           rlx_fmt_shape(c->in[i]), iu_fmt_dim(m));
  return RLX_OK;
}

static rlx_shape f32_matrix(rlx_dim m, rlx_dim n) {
  rlx_shape s = iu_shape(RLX_F32, 2);
  s.dims[0] = m;
  s.dims[1] = n;
  return s;
}

/* The declared output, required where packed bytes hide a dim; it must have rank `rank`. */
static rlx_status need_declared(const rlx_infer_ctx *c, uint32_t rank, const char *layout, const char *why) {
  if (!c->declared) return rlx_shape_error("the output shape %s must be declared: %s", layout, why);
  if (c->declared->rank != rank)
    return rlx_shape_error("the declared shape %s must have rank %u (%s)", rlx_fmt_shape(c->declared), rank, layout);
  return RLX_OK;
}

/* K (from `where`) must be a whole number of GGUF blocks when static. */
static rlx_status need_gguf_k(int32_t scheme, rlx_dim k, const char *where) {
  int64_t be = 1, bb = 1;
  if (!rlx_quant_scheme_gguf_block(scheme, &be, &bb))
    return rlx_shape_error("%s: scheme %s is not a GGUF scheme", where, scheme_name(scheme));
  if (k >= 0 && k % be != 0)
    return rlx_shape_error("%s has K = %" PRId64 "; scheme %s packs K in blocks of %" PRId64
                           " elements, so K must be a multiple of that",
                           where, k, scheme_name(scheme), be);
  return RLX_OK;
}

/* Bytes of one GGUF weight [N, K] (K a whole number of blocks): (K / block) * N * block bytes.
 * *known = false when K or N is symbolic. */
static rlx_status gguf_bytes(int32_t scheme, rlx_dim k, rlx_dim n, bool *known, int64_t *bytes) {
  int64_t be = 1, bb = 1;
  if (!rlx_quant_scheme_gguf_block(scheme, &be, &bb))
    return rlx_shape_error("scheme %s is not a GGUF scheme", scheme_name(scheme));
  *known = k >= 0 && n >= 0;
  if (!*known) return RLX_OK;
  RLX_TRY(ck_mul_or(k / be, n, bytes, "the packed weight blocks (K / block) * N"));
  RLX_TRY(ck_mul_or(*bytes, bb, bytes, "the packed weight size (K / block) * N * block bytes"));
  return RLX_OK;
}

/* ---- GroupedMatMul ---- */

/* [x [M, K], weight [E, K, N], expert_idx [M]] -> [M, N]. */
rlx_status rlx_infer_GroupedMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(need_activations(c, 0));
  RLX_TRY(need_rank(c, 1, "weight", 3, "[E, K, N]"));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  if (!rlx_dim_equal(w->dims[1], x->dims[1]))
    return rlx_shape_error("operand 1 (weight) has shape %s; its axis 1 must be K = %s of operand 0 (x) %s",
                           rlx_fmt_shape(w), iu_fmt_dim(x->dims[1]), rlx_fmt_shape(x));
  RLX_TRY(need_expert_idx(c, 2, x->dims[0]));
  *out = *x;
  out->dims[1] = w->dims[2];
  return RLX_OK;
}

/* ---- DequantMatMul ---- */

/* GGUF: [x [M, K], packed] -> declared [M, N]. The packed weight is either the raw block bytes
 * (any shape of K*N/blk*bytes u8) or declared with its logical shape [N, K]. */
static rlx_status dequant_gguf(const rlx_infer_ctx *c, int32_t scheme, rlx_shape *out) {
  RLX_TRY(rlx_need_inputs(c, 2, "x and the packed weight for a GGUF attribute scheme"));
  RLX_TRY(need_activations(c, 0));
  RLX_TRY(need_bytes(c, 1, "packed weight", false, false));
  RLX_TRY(need_declared(c, 2, "[M, N]", "a GGUF weight's bytes do not reveal N"));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  rlx_dim k = x->dims[1], n = c->declared->dims[1];
  *out = f32_matrix(x->dims[0], n);
  RLX_TRY(need_gguf_k(scheme, k, "operand 0 (x)"));
  bool known;
  int64_t want = 0;
  RLX_TRY(gguf_bytes(scheme, k, n, &known, &want));
  if (w->rank == 2 && rlx_dim_equal(w->dims[0], n) && rlx_dim_equal(w->dims[1], k)) return RLX_OK; /* logical [N, K] */
  if (known) return need_byte_count(c, 1, "packed weight", want, "(K / block) * N * block bytes, GGUF layout [N, K]");
  return RLX_OK;
}

/* Per-output-column scale/zero-point schemes: [x, w_q, scale, zp] -> [M, N]. */
static rlx_status dequant_four(const rlx_infer_ctx *c, const rlx_attrs_DequantMatMul *a, rlx_shape *out) {
  int32_t sc = a->scheme;
  RLX_TRY(rlx_need_inputs(c, 4, "x, w_q, scale and zero point/bias for this attribute scheme"));
  RLX_TRY(need_activations(c, 0));
  const rlx_shape *x = c->in[0], *s = c->in[2];
  rlx_dim k = x->dims[1], n;
  bool mlx = sc == RLX_QUANT_SCHEME_MLX_AFFINE || sc == RLX_QUANT_SCHEME_MLX_MXFP4 || sc == RLX_QUANT_SCHEME_MLX_MXFP8;
  int64_t bits = 8, blk = 0; /* bits per weight; block length along K of one scale row */
  if (sc == RLX_QUANT_SCHEME_INT8_BLOCK || sc == RLX_QUANT_SCHEME_INT8_BLOCK_ASYM ||
      sc == RLX_QUANT_SCHEME_INT4_BLOCK || sc == RLX_QUANT_SCHEME_NVFP4_BLOCK) {
    /* W [K, N]; scale [ceil(K/blk), N] */
    bool nv = sc == RLX_QUANT_SCHEME_NVFP4_BLOCK;
    blk = nv ? 16 : a->block_size;
    bits = (sc == RLX_QUANT_SCHEME_INT4_BLOCK || nv) ? 4 : 8;
    if (blk < 1) return rlx_shape_error("attribute block_size is %" PRId64 "; it must be >= 1", blk);
    RLX_TRY(need_rank(c, 2, "scale", 2, "[ceil(K / block), N]"));
    if (nv)
      RLX_TRY(need_bytes(c, 2, "scale (E4M3 codes)", false, false));
    else
      RLX_TRY(rlx_need_dtype_float(c, 2));
    if (k >= 0 && s->dims[0] >= 0 && s->dims[0] != ck_ceil_div(k, blk))
      return rlx_shape_error("operand 2 (scale) has shape %s; with K = %" PRId64 " and blocks of %" PRId64
                             " it needs %" PRId64 " rows",
                             rlx_fmt_shape(s), k, blk, ck_ceil_div(k, blk));
    n = s->dims[1];
  } else if (sc == RLX_QUANT_SCHEME_FP8_E4M3 || sc == RLX_QUANT_SCHEME_FP8_E5M2) {
    RLX_TRY(need_rank(c, 2, "scale", 1, "[N] (one scale per output column)"));
    RLX_TRY(rlx_need_dtype_float(c, 2));
    n = s->dims[0];
  } else if (mlx) {
    /* W [N, K] packed; scales [N, K / group_size] */
    int64_t gs = a->group_size;
    bits = sc == RLX_QUANT_SCHEME_MLX_AFFINE ? a->bits : sc == RLX_QUANT_SCHEME_MLX_MXFP4 ? 4 : 8;
    if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
      return rlx_shape_error("attribute bits is %" PRId64 "; MLX affine quantization packs 2, 3, 4, 5, 6 or 8 bits",
                             bits);
    if (gs < 1) return rlx_shape_error("attribute group_size is %" PRId64 "; it must be >= 1", gs);
    if (k >= 0 && k % gs != 0)
      return rlx_shape_error("operand 0 (x) has K = %" PRId64 "; attribute group_size %" PRId64 " must divide it", k,
                             gs);
    RLX_TRY(need_rank(c, 2, "scales", 2, "[N, K / group_size]"));
    if (sc == RLX_QUANT_SCHEME_MLX_AFFINE)
      RLX_TRY(rlx_need_dtype_float(c, 2));
    else
      RLX_TRY(need_bytes(c, 2, "scales (E8M0 codes)", false, false));
    if (k >= 0 && s->dims[1] >= 0 && s->dims[1] != k / gs)
      return rlx_shape_error("operand 2 (scales) has shape %s; with K = %" PRId64 " and group_size %" PRId64
                             " its axis 1 must be %" PRId64,
                             rlx_fmt_shape(s), k, gs, k / gs);
    n = s->dims[0];
  } else {
    return rlx_shape_error("attribute scheme %s is not a DequantMatMul scheme", scheme_name(sc));
  }
  /* zero point / bias slot */
  if (sc == RLX_QUANT_SCHEME_INT8_BLOCK_ASYM || sc == RLX_QUANT_SCHEME_MLX_AFFINE) {
    RLX_TRY(rlx_need_dtype_float(c, 3));
    const rlx_shape *z = c->in[3];
    if (z->rank != 2 || !rlx_dim_equal(z->dims[0], s->dims[0]) || !rlx_dim_equal(z->dims[1], s->dims[1]))
      return rlx_shape_error("operand 3 (%s) has shape %s; it must have the shape of operand 2 (scale) %s",
                             sc == RLX_QUANT_SCHEME_MLX_AFFINE ? "biases" : "zero point", rlx_fmt_shape(c->in[3]),
                             rlx_fmt_shape(s));
  } else if (sc == RLX_QUANT_SCHEME_NVFP4_BLOCK) {
    RLX_TRY(rlx_need_dtype_float(c, 3));
    RLX_TRY(need_numel(c, 3, "global scale", 1, "one f32"));
  }
  /* packed weight bytes */
  RLX_TRY(need_bytes(c, 1, "w_q", !mlx, mlx && sc == RLX_QUANT_SCHEME_MLX_AFFINE));
  if (k >= 0 && n >= 0) {
    int64_t kn, want;
    RLX_TRY(ck_mul_or(k, n, &kn, "the weight size K * N"));
    if (bits == 8) {
      RLX_TRY(need_byte_count(c, 1, "w_q", kn, "K*N one-byte codes"));
    } else if (!mlx) {
      RLX_TRY(need_byte_count(c, 1, "w_q", kn / 2 + kn % 2, "ceil(K*N/2) bytes of 4-bit codes"));
    } else {
      RLX_TRY(ck_mul_or(kn, bits, &want, "the weight size K * N * bits"));
      if (want % 8 != 0)
        return rlx_shape_error("K*N*bits = %" PRId64 " is not a whole number of bytes (attribute bits %" PRId64 ")",
                               want, bits);
      RLX_TRY(need_byte_count(c, 1, "w_q", want / 8, "N*K*bits/8 bytes of MLX-packed codes"));
    }
  }
  *out = f32_matrix(x->dims[0], n);
  return RLX_OK;
}

/* MxFp4x2Block: [x, w_q, scale]; w_q = two planes of ceil(K*N/2) bytes, scale = two planes of
 * ceil(K/group)*N f32. N follows from the scale's element count. */
static rlx_status dequant_mxfp4x2(const rlx_infer_ctx *c, int64_t gs, rlx_shape *out) {
  RLX_TRY(rlx_need_inputs(c, 3, "x, w_q and scale for attribute scheme MxFp4x2Block"));
  RLX_TRY(need_activations(c, 0));
  if (gs < 1) return rlx_shape_error("attribute group_size is %" PRId64 "; it must be >= 1", gs);
  RLX_TRY(need_bytes(c, 1, "w_q", false, false));
  RLX_TRY(rlx_need_dtype_float(c, 2));
  rlx_dim k = c->in[0]->dims[1], n = RLX_DIM_SYM(RLX_SYM_ROWS);
  bool known;
  int64_t sn = 0;
  RLX_TRY(iu_numel(c->in[2], 2, &known, &sn));
  if (k >= 0 && known) {
    int64_t per_col;
    RLX_TRY(ck_mul_or(2, ck_ceil_div(k, gs), &per_col, "scale elements per column 2 * ceil(K / group_size)"));
    if (per_col == 0) return rlx_shape_error("operand 0 (x) has K = 0; MxFp4x2Block needs K >= 1");
    if (sn % per_col != 0)
      return rlx_shape_error("operand 2 (scale) has shape %s; it must hold 2 * ceil(K / group_size) * N = %" PRId64
                             " * N elements",
                             rlx_fmt_shape(c->in[2]), per_col);
    n = sn / per_col;
    int64_t kn, planes;
    RLX_TRY(ck_mul_or(k, n, &kn, "the weight size K * N"));
    RLX_TRY(ck_mul_or(2, ck_ceil_div(kn, 2), &planes, "the packed weight size 2 * ceil(K * N / 2)"));
    RLX_TRY(need_byte_count(c, 1, "w_q", planes, "two planes of ceil(K*N/2) bytes"));
  } else if (c->declared && c->declared->rank == 2) {
    n = c->declared->dims[1];
  } else {
    return rlx_shape_error("N cannot be derived from symbolic operands; give the output shape explicitly");
  }
  *out = f32_matrix(c->in[0]->dims[0], n);
  return RLX_OK;
}

rlx_status rlx_infer_DequantMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_DequantMatMul *a = &c->a->DequantMatMul;
  RLX_TRY(need_scheme(a->scheme));
  int64_t be, bb;
  if (rlx_quant_scheme_gguf_block(a->scheme, &be, &bb)) return dequant_gguf(c, a->scheme, out);
  if (a->scheme == RLX_QUANT_SCHEME_MXFP4X2_BLOCK) return dequant_mxfp4x2(c, a->group_size, out);
  return dequant_four(c, a, out);
}

/* ---- grouped dequantizing matmuls ---- */

/* Operand i holds packed GGUF experts: either raw bytes forming E whole [N, K] slabs (E given by
 * `e`, or any E >= 1 when e_known is false), or the logical shape [E, N, K]. */
static rlx_status gguf_slabs(const rlx_infer_ctx *c, uint32_t i, int32_t scheme, rlx_dim k, rlx_dim n, bool e_known,
                             rlx_dim e) {
  const rlx_shape *w = c->in[i];
  if (w->rank == 3 && rlx_dim_equal(w->dims[1], n) && rlx_dim_equal(w->dims[2], k) &&
      (!e_known || rlx_dim_equal(w->dims[0], e)))
    return RLX_OK; /* logical [E, N, K] */
  bool known, bk;
  int64_t slab = 0, have = 0;
  RLX_TRY(gguf_bytes(scheme, k, n, &known, &slab));
  RLX_TRY(byte_count(c, i, &bk, &have));
  if (!known || !bk || slab == 0) return RLX_OK;
  if (e_known && e >= 0) {
    int64_t want;
    RLX_TRY(ck_mul_or(e, slab, &want, "the packed expert size E * slab bytes"));
    return need_byte_count(c, i, "packed weights", want, "E slabs of (K / block) * N * block bytes, GGUF [N, K] order");
  }
  if (have == 0 || have % slab != 0)
    return rlx_shape_error("operand %u (packed weights) %s holds %" PRId64 " bytes; expected a whole number of expert "
                           "slabs of %" PRId64 " bytes ((K / block) * N * block bytes, scheme %s)",
                           i, rlx_fmt_shape(w), have, slab, scheme_name(scheme));
  return RLX_OK;
}

static rlx_status need_gguf_scheme(int32_t scheme) {
  int64_t be, bb;
  RLX_TRY(need_scheme(scheme));
  if (!rlx_quant_scheme_gguf_block(scheme, &be, &bb))
    return rlx_shape_error("attribute scheme is %s; this op decodes GGUF schemes only", scheme_name(scheme));
  return RLX_OK;
}

/* [x [M, K], packed u8 (E slabs in GGUF [N, K] order), expert_idx [M]] -> declared [M, N]. */
rlx_status rlx_infer_DequantGroupedMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  int32_t sc = c->a->DequantGroupedMatMul.scheme;
  RLX_TRY(need_gguf_scheme(sc));
  RLX_TRY(need_activations(c, 0));
  RLX_TRY(need_bytes(c, 1, "packed weights", false, false));
  const rlx_shape *x = c->in[0];
  RLX_TRY(need_expert_idx(c, 2, x->dims[0]));
  RLX_TRY(need_declared(c, 2, "[M, N]", "the packed expert slabs do not reveal N"));
  rlx_dim n = c->declared->dims[1];
  RLX_TRY(need_gguf_k(sc, x->dims[1], "operand 0 (x)"));
  RLX_TRY(gguf_slabs(c, 1, sc, x->dims[1], n, false, 0));
  *out = f32_matrix(x->dims[0], n);
  return RLX_OK;
}

/* [x [M, K], weight (E*out*K*bits/8 bytes), scales [E, out, K/gs], biases [E, out, K/gs],
 * expert_idx [M]] -> [M, out]. MLX schemes only (MlxAffine takes bits from the attribute). */
rlx_status rlx_infer_DequantGroupedMatMulMlx(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_DequantGroupedMatMulMlx *a = &c->a->DequantGroupedMatMulMlx;
  RLX_TRY(need_scheme(a->scheme));
  int32_t sc = a->scheme;
  if (sc != RLX_QUANT_SCHEME_MLX_AFFINE && sc != RLX_QUANT_SCHEME_MLX_MXFP4 && sc != RLX_QUANT_SCHEME_MLX_MXFP8)
    return rlx_shape_error("attribute scheme is %s; DequantGroupedMatMulMlx decodes MLX schemes (MlxAffine, MlxMxfp4, "
                           "MlxMxfp8) only",
                           scheme_name(sc));
  bool affine = sc == RLX_QUANT_SCHEME_MLX_AFFINE;
  int64_t bits = affine ? a->bits : sc == RLX_QUANT_SCHEME_MLX_MXFP4 ? 4 : 8, gs = a->group_size;
  if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
    return rlx_shape_error("attribute bits is %" PRId64 "; MLX affine quantization packs 2, 3, 4, 5, 6 or 8 bits",
                           bits);
  if (gs < 1) return rlx_shape_error("attribute group_size is %" PRId64 "; it must be >= 1", gs);
  RLX_TRY(need_activations(c, 0));
  const rlx_shape *x = c->in[0], *s = c->in[2];
  rlx_dim k = x->dims[1];
  if (k >= 0 && k % gs != 0)
    return rlx_shape_error("operand 0 (x) has K = %" PRId64 "; attribute group_size %" PRId64 " must divide it", k, gs);
  RLX_TRY(need_bytes(c, 1, "weight", false, true));
  RLX_TRY(need_rank(c, 2, "scales", 3, "[E, out, K / group_size]"));
  if (affine)
    RLX_TRY(rlx_need_dtype_float(c, 2));
  else
    RLX_TRY(need_bytes(c, 2, "scales (E8M0 codes)", false, false));
  if (k >= 0 && s->dims[2] >= 0 && s->dims[2] != k / gs)
    return rlx_shape_error("operand 2 (scales) has shape %s; with K = %" PRId64 " and group_size %" PRId64
                           " its axis 2 must be %" PRId64,
                           rlx_fmt_shape(s), k, gs, k / gs);
  if (affine) {
    const rlx_shape *b = c->in[3];
    bool ok = b->rank == 3 && b->dtype == s->dtype;
    for (uint32_t i = 0; ok && i < 3; i++) ok = rlx_dim_equal(b->dims[i], s->dims[i]);
    if (!ok)
      return rlx_shape_error("operand 3 (biases) has shape %s; it must match operand 2 (scales) %s", rlx_fmt_shape(b),
                             rlx_fmt_shape(s));
  }
  RLX_TRY(need_expert_idx(c, 4, x->dims[0]));
  if (k >= 0 && s->dims[0] >= 0 && s->dims[1] >= 0) {
    int64_t total;
    RLX_TRY(ck_mul_or(s->dims[0], s->dims[1], &total, "the packed expert weight size E * out"));
    RLX_TRY(ck_mul_or(total, k, &total, "the packed expert weight size E * out * K"));
    RLX_TRY(ck_mul_or(total, bits, &total, "the packed expert weight size E * out * K * bits"));
    if (total % 8 != 0) return rlx_shape_error("E*out*K*bits = %" PRId64 " is not a whole number of bytes", total);
    RLX_TRY(need_byte_count(c, 1, "weight", total / 8, "E*out*K*bits/8 bytes"));
  }
  *out = f32_matrix(x->dims[0], s->dims[1]);
  return RLX_OK;
}

/* [packed u8] -> declared [E, K, N] f32 (each GGUF [N, K] slab dequantized and transposed). */
rlx_status rlx_infer_DequantMoEWeights(const rlx_infer_ctx *c, rlx_shape *out) {
  int32_t sc = c->a->DequantMoEWeights.scheme;
  RLX_TRY(need_gguf_scheme(sc));
  RLX_TRY(need_bytes(c, 0, "packed weights", false, false));
  RLX_TRY(need_declared(c, 3, "[E, K, N]", "the packed expert slabs do not reveal E, K or N"));
  const rlx_shape *d = c->declared;
  rlx_dim e = d->dims[0], k = d->dims[1], n = d->dims[2];
  RLX_TRY(need_gguf_k(sc, k, "the declared shape (axis 1)"));
  RLX_TRY(gguf_slabs(c, 0, sc, k, n, true, e));
  *out = iu_shape(RLX_F32, 3);
  memcpy(out->dims, d->dims, 3 * sizeof(rlx_dim));
  return RLX_OK;
}

/* ---- ScaledGroupedMatMul ---- */

/* Scale operand i for codes of `rows` rows of K (static counts; checked when known). */
static rlx_status scaled_scale(const rlx_infer_ctx *c, uint32_t i, const char *what, int32_t layout, int64_t block,
                               bool rows_known, int64_t rows, rlx_dim k) {
  if (layout == RLX_SCALE_LAYOUT_PER_TENSOR) {
    if (c->in[i]->dtype != RLX_F32)
      return rlx_shape_error("operand %u (%s) has dtype %s; a PerTensor scale is f32", i, what, iu_dt(c->in[i]));
    return need_numel(c, i, what, 1, "one PerTensor scale");
  }
  RLX_TRY(need_bytes(c, i, what, false, false));
  if (!rows_known || k < 0) return RLX_OK;
  int64_t want;
  RLX_TRY(ck_mul_or(rows, ck_ceil_div(k, block), &want, "scale count rows * ceil(K / block)"));
  return need_numel(c, i, what, want, "rows * ceil(K / block)");
}

/* [in_codes [M, K] u8, w_codes [E, N, K] u8, in_scale, w_scale, expert_idx [M], (bias [E, N])]
 * -> [M, N] f32. */
rlx_status rlx_infer_ScaledGroupedMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScaledGroupedMatMul *a = &c->a->ScaledGroupedMatMul;
  const int32_t fmts[2] = {a->lhs_format, a->rhs_format};
  static const char *const fmt_attr[2] = {"lhs_format", "rhs_format"};
  for (uint32_t i = 0; i < 2; i++) {
    if (fmts[i] < 0 || fmts[i] >= RLX_SCALED_FORMAT_COUNT)
      return rlx_shape_error("attribute %s: %d is not a ScaledFormat", fmt_attr[i], (int)fmts[i]);
    if (fmts[i] == RLX_SCALED_FORMAT_CUSTOM)
      return rlx_shape_error("attribute %s is Custom, but ScaledGroupedMatMul carries no custom_exp/custom_mant/"
                             "custom_bias; use a named format",
                             fmt_attr[i]);
  }
  if (a->layout < 0 || a->layout >= RLX_SCALE_LAYOUT_COUNT)
    return rlx_shape_error("attribute layout: %d is not a ScaleLayout", (int)a->layout);
  if (a->layout != RLX_SCALE_LAYOUT_PER_TENSOR && (a->block < 1 || a->block > ((int64_t)1 << 31)))
    return rlx_shape_error("attribute block is %" PRId64 "; a block scale layout needs a block length >= 1", a->block);
  RLX_TRY(rlx_need_inputs(c, a->has_bias ? 6 : 5,
                          a->has_bias
                              ? "in_codes, w_codes, in_scale, w_scale, expert_idx and bias: attribute has_bias "
                                "is set"
                              : "in_codes, w_codes, in_scale, w_scale and expert_idx: attribute has_bias is not "
                                "set"));
  RLX_TRY(need_rank(c, 0, "in_codes", 2, "[M, K]"));
  RLX_TRY(need_bytes(c, 0, "in_codes", false, false));
  RLX_TRY(need_rank(c, 1, "w_codes", 3, "[E, N, K]"));
  RLX_TRY(need_bytes(c, 1, "w_codes", false, false));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  rlx_dim m = x->dims[0], k = x->dims[1];
  if (!rlx_dim_equal(w->dims[2], k))
    return rlx_shape_error("operand 1 (w_codes) has shape %s; its axis 2 must be K = %s of operand 0 (in_codes) %s",
                           rlx_fmt_shape(w), iu_fmt_dim(k), rlx_fmt_shape(x));
  int64_t wrows = 0;
  bool wk = w->dims[0] >= 0 && w->dims[1] >= 0 && ck_mul(w->dims[0], w->dims[1], &wrows);
  RLX_TRY(scaled_scale(c, 2, "in_scale", a->layout, a->block, m >= 0, m, k));
  RLX_TRY(scaled_scale(c, 3, "w_scale", a->layout, a->block, wk, wrows, k));
  RLX_TRY(need_expert_idx(c, 4, m));
  if (a->has_bias) {
    const rlx_shape *b = c->in[5];
    if (b->dtype != RLX_F32) return rlx_shape_error("operand 5 (bias) has dtype %s; expected f32", iu_dt(b));
    if (b->rank != 2 || !rlx_dim_equal(b->dims[0], w->dims[0]) || !rlx_dim_equal(b->dims[1], w->dims[1]))
      return rlx_shape_error("operand 5 (bias) has shape %s; expected [E, N] = [%s, %s]", rlx_fmt_shape(b),
                             iu_fmt_dim(w->dims[0]), iu_fmt_dim(w->dims[1]));
  }
  *out = f32_matrix(m, w->dims[1]);
  return RLX_OK;
}
