/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of the quantization family (kernels in ref/quant.c, ref/quant_matmul.c,
 * ref/scaled.c, ref/synth.c):
 *
 *   FakeQuantizeBackward  s = max(max|x| / qmax, 1e-12) per channel, then the STE formula in
 *                         primitives (Abs, Reduce, Compare/Where, Tanh).
 *   DequantMatMul         the weight is dequantized into a logical f32 matrix, then MatMul:
 *                           GGUF: DequantMoEWeights (one expert) reshaped to [K, N];
 *                           Int8Block(Asym): Cast, minus the zero point, times the block scales
 *                             (scale rows repeated block_size times by Reshape/Expand/Narrow);
 *                           Int4Block / Nvfp4Block / MxFp4x2Block / MlxMxfp4: nibbles split with
 *                             BitAnd / Shr, E2M1 codes through ScaledDequantize;
 *                           Fp8: ScaledDequantize per code, times the column scales;
 *                           MlxAffine: codes split from the bytes, q * s + b;
 *                             MlxMxfp8: E4M3 codes; E8M0 scales as 2^(e - 127) (Pow), 255 NaN.
 *                         MLX weights are [N, K] (out = x . W^T). MlxAffine codes of 3, 5 or 6
 *                         bits straddle bytes: two Gathers of the bytes, Shl/Or/Shr/And.
 *   ScaledGroupedMatMul   ScaledDequantize of both operands, Transpose(0, 2, 1) of the weights,
 *                         GroupedMatMul, + Gather(bias, expert_idx)  (ir-special §1.4).
 *   SynthReconstruct      Gather(codebook, codes) [R, N, D] -> Transpose -> Reshape [R D, N];
 *   SynthMatMul           MatMul(x, SynthReconstruct) in x's dtype (f32 for f16 / bf16), as f32;
 *   SynthMatMulBackward   Dx: dy . W^T;  Codebook: ScatterAdd of (x^T dy) regrouped by code.
 *   SplineActivation(+Backward*)  u = (x - lo) / h, j = clamp(floor(u), 0, nk - 2),
 *                         f = clamp(u - j, 0, 1) (which also realises the clamping outside the
 *                         grid); the two knots are gathered from the flattened coeffs at
 *                         channel * nk + j; y = c0 + f (c1 - c0); BackwardX: dy (c1 - c0) / h
 *                         inside [lo, hi], else 0; BackwardCoeff: ScatterAdd of (1 - f) dy and f dy.
 *                         A NaN x gives NaN (Where on x == x). */
#include <math.h>
#include <stdlib.h>

#include "passes/decompose/decompose.h"

/* ======================================================================================
 * FakeQuantizeBackward
 * ====================================================================================== */

static double qmax_of(int64_t bits) { return bits == 8 ? 127.0 : bits == 4 ? 7.0 : bits == 2 ? 1.0 : 0.0; }

RLX_DECOMPOSE_DECL(FakeQuantizeBackward) {
  (void)src;
  const rlx_attrs_FakeQuantizeBackward *a = &n->attrs.FakeQuantizeBackward;
  double qmax = qmax_of(a->bits);
  if (qmax == 0.0)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "FakeQuantizeBackward: attribute bits is %lld; use 8, 4 or 2",
                      (long long)a->bits);
  rlx_shape xs = dc_shape(dst, in[0]);
  uint32_t ch;
  RLX_TRY(dc_axis(n, "axis", a->axis, xs.rank, &ch));
  rlx_id x = in[0], dy = in[1];
  RLX_TRY(rlx_cast_to(dst, dy, (rlx_dtype)xs.dtype, &dy));
  if (a->ste == RLX_STE_IDENTITY) return rlx_cast_to(dst, dy, (rlx_dtype)n->shape.dtype, out);
  int64_t axes[RLX_MAX_RANK];
  uint32_t na = 0;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (i != ch) axes[na++] = i;
  rlx_id ax, s, t, z, r;
  RLX_TRY(rlx_activation(dst, RLX_ACT_ABS, x, &ax));
  s = ax;
  if (na) RLX_TRY(rlx_reduce_axes(dst, RLX_REDUCE_MAX, ax, na, axes, true, &s));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_DIV, s, qmax, &s));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MAX, s, 1e-12, &s));
  switch (a->ste) {
  case RLX_STE_CLIPPED_IDENTITY: {
    rlx_id m;
    RLX_TRY(rlx_fill(dst, (rlx_dtype)xs.dtype, 0, NULL, 0.0, &z));
    RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MUL, s, qmax, &r));
    RLX_TRY(rlx_compare(dst, RLX_CMP_LE, ax, r, &m));
    RLX_TRY(rlx_where(dst, m, dy, z, &t));
    break;
  }
  case RLX_STE_TANH: /* dy (1 - tanh^2(x / s)) */
    RLX_TRY(rlx_binary(dst, RLX_BINOP_DIV, x, s, &t));
    RLX_TRY(rlx_activation(dst, RLX_ACT_TANH, t, &t));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, t, t, &t));
    RLX_TRY(rlx_scalar(dst, (rlx_dtype)xs.dtype, 1.0, &z));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, z, t, &t));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, dy, t, &t));
    break;
  default: /* HardTanh: dy max(0, 1 - |x| / (qmax s)) */
    RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MUL, s, qmax, &r));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_DIV, ax, r, &t));
    RLX_TRY(rlx_scalar(dst, (rlx_dtype)xs.dtype, 1.0, &z));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, z, t, &t));
    RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_MAX, t, 0.0, &t));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, dy, t, &t));
    break;
  }
  return rlx_cast_to(dst, t, (rlx_dtype)n->shape.dtype, out);
}

/* ======================================================================================
 * Dequantizing weights
 * ====================================================================================== */

/* Rows of s [G, C] repeated `rep` times along axis 0 and cut to `len` rows: [len, C]. */
static rlx_status repeat_rows(rlx_graph *g, rlx_id s, int64_t rep, int64_t len, rlx_id *out) {
  rlx_shape ss = dc_shape(g, s);
  rlx_dim G = ss.dims[0], C = ss.dims[1];
  rlx_dim d3[3] = {G, 1, C}, e3[3] = {G, rep, C}, d2[2] = {G * rep, C};
  RLX_TRY(rlx_reshape_dims(g, s, 3, d3, &s));
  RLX_TRY(rlx_expand_dims(g, s, 3, e3, &s));
  RLX_TRY(rlx_reshape_dims(g, s, 2, d2, &s));
  return G * rep == len ? (*out = s, RLX_OK) : rlx_narrow(g, s, 0, 0, len, out);
}
/* Columns of s [R, G] repeated `rep` times: [R, G rep]. */
static rlx_status repeat_cols(rlx_graph *g, rlx_id s, int64_t rep, rlx_id *out) {
  rlx_shape ss = dc_shape(g, s);
  rlx_dim R = ss.dims[0], G = ss.dims[1];
  rlx_dim d3[3] = {R, G, 1}, e3[3] = {R, G, rep}, d2[2] = {R, G * rep};
  RLX_TRY(rlx_reshape_dims(g, s, 3, d3, &s));
  RLX_TRY(rlx_expand_dims(g, s, 3, e3, &s));
  return rlx_reshape_dims(g, s, 2, d2, out);
}

/* The first `count` codes of `bits` bits (bits divides 8) of a u8 byte stream, as a u8 [count]:
 * code i is bits (i bits) mod 8 .. of byte (i bits) / 8. */
static rlx_status split_codes(rlx_graph *g, rlx_id bytes, unsigned bits, int64_t count, rlx_id *out) {
  rlx_shape bs = dc_shape(g, bytes);
  int64_t B = 1;
  for (uint32_t i = 0; i < bs.rank; i++) B *= bs.dims[i];
  rlx_dim flat = B, col[2] = {B, 1};
  RLX_TRY(rlx_reshape_dims(g, bytes, 1, &flat, &bytes));
  if (bits == 8) return count == B ? (*out = bytes, RLX_OK) : rlx_narrow(g, bytes, 0, 0, count, out);
  unsigned per = 8 / bits;
  rlx_id parts[8];
  for (unsigned t = 0; t < per; t++) {
    rlx_id p = bytes;
    if (t) RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_SHR, p, (double)(t * bits), &p));
    RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_BIT_AND, p, (double)((1u << bits) - 1), &p));
    RLX_TRY(rlx_reshape_dims(g, p, 2, col, &parts[t]));
  }
  rlx_id cat;
  RLX_TRY(rlx_concat(g, parts, per, 1, &cat));
  rlx_dim all = B * per;
  RLX_TRY(rlx_reshape_dims(g, cat, 1, &all, &cat));
  return all == count ? (*out = cat, RLX_OK) : rlx_narrow(g, cat, 0, 0, count, out);
}

/* The first `count` codes of `bits` bits (any width up to 8, codes may straddle two bytes) of an
 * LSB-first byte stream, as i64 [count]: (byte[k] | byte[k + 1] << 8) >> s & mask with k, s from
 * constant index tensors. */
static rlx_status gather_codes(rlx_graph *g, rlx_id bytes, unsigned bits, int64_t count, rlx_id *out) {
  rlx_shape bs = dc_shape(g, bytes);
  int64_t B = 1;
  for (uint32_t i = 0; i < bs.rank; i++) B *= bs.dims[i];
  double *k0 = malloc((size_t)count * 3 * sizeof *k0);
  if (!k0) return rlx_errorf(RLX_ERR_OOM, "out of memory building a dequantization");
  double *k1 = k0 + count, *sh = k1 + count;
  for (int64_t i = 0; i < count; i++) {
    int64_t bit = i * (int64_t)bits;
    k0[i] = (double)(bit / 8);
    k1[i] = (double)(bit / 8 + 1 < B ? bit / 8 + 1 : B - 1);
    sh[i] = (double)(bit % 8);
  }
  rlx_dim flat = B, cd = count;
  rlx_id b, i0, i1, s, lo, hi;
  rlx_status st = rlx_reshape_dims(g, bytes, 1, &flat, &b);
  if (st == RLX_OK) st = rlx_cast_to(g, b, RLX_I64, &b);
  if (st == RLX_OK) st = rlx_values(g, RLX_I64, 1, &cd, k0, &i0);
  if (st == RLX_OK) st = rlx_values(g, RLX_I64, 1, &cd, k1, &i1);
  if (st == RLX_OK) st = rlx_values(g, RLX_I64, 1, &cd, sh, &s);
  free(k0);
  RLX_TRY(st);
  RLX_TRY(rlx_gather_axis(g, b, i0, 0, &lo));
  RLX_TRY(rlx_gather_axis(g, b, i1, 0, &hi));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_SHL, hi, 8.0, &hi));
  RLX_TRY(rlx_binary(g, RLX_BINOP_BIT_OR, lo, hi, &lo));
  RLX_TRY(rlx_binary(g, RLX_BINOP_SHR, lo, s, &lo));
  return rlx_binary_scalar(g, RLX_BINOP_BIT_AND, lo, (double)((1u << bits) - 1), out);
}

/* Codes of an element format decoded with unit scale (ScaledDequantize, PerTensor 1.0). */
static rlx_status decode_codes(rlx_graph *g, rlx_id codes, int32_t fmt, rlx_id *out) {
  rlx_id one;
  rlx_dim d1 = 1;
  RLX_TRY(rlx_fill(g, RLX_F32, 1, &d1, 1.0, &one));
  rlx_attrs_ScaledDequantize a = {.format = fmt, .layout = RLX_SCALE_LAYOUT_PER_TENSOR, .block = 32};
  rlx_id args[2] = {codes, one};
  return rlx_build_ScaledDequantize(g, args, 2, &a, NULL, out);
}

/* E8M0 bytes -> 2^(e - 127) (255 -> NaN), f32. */
static rlx_status e8m0_values(rlx_graph *g, rlx_id e, rlx_id *out) {
  rlx_id f, two, p, is_nan, nan;
  RLX_TRY(rlx_cast_to(g, e, RLX_F32, &f));
  RLX_TRY(rlx_scalar(g, RLX_F32, 2.0, &two));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_SUB, f, 127.0, &p));
  RLX_TRY(rlx_binary(g, RLX_BINOP_POW, two, p, &p));
  RLX_TRY(rlx_scalar(g, RLX_F32, 255.0, &nan));
  RLX_TRY(rlx_compare(g, RLX_CMP_EQ, f, nan, &is_nan));
  RLX_TRY(rlx_scalar(g, RLX_F32, NAN, &nan));
  return rlx_where(g, is_nan, nan, p, out);
}

/* A u8 operand reshaped to [R, C] (its bytes in row-major order). */
static rlx_status as_matrix(rlx_graph *g, rlx_id x, int64_t R, int64_t C, rlx_id *out) {
  rlx_dim d[2] = {R, C};
  return rlx_reshape_dims(g, x, 2, d, out);
}

RLX_DECOMPOSE_DECL(DequantMatMul) {
  (void)src;
  const rlx_attrs_DequantMatMul *a = &n->attrs.DequantMatMul;
  int32_t sc = a->scheme;
  rlx_shape xs = dc_shape(dst, in[0]);
  rlx_shape wsh = dc_shape(dst, in[1]);
  if (!dc_all_static(&xs) || !dc_all_static(&n->shape) || !dc_all_static(&wsh))
    return dc_unsupported(n, "the operands need static shapes");
  int64_t K = xs.dims[1], N = n->shape.dims[1], KN = K * N;
  rlx_id x, W = RLX_NO_ID; /* W: f32 [K, N], or [N, K] when nk */
  bool nk = false;
  RLX_TRY(rlx_cast_to(dst, in[0], RLX_F32, &x));
  rlx_dtype wt = (rlx_dtype)wsh.dtype;
  if (sc >= RLX_QUANT_SCHEME_GGUF_Q4K && sc <= RLX_QUANT_SCHEME_GGUF_FV5B) {
    rlx_shape d3 = {.dtype = RLX_F32, .rank = 3, .dims = {1, K, N}};
    rlx_attrs_DequantMoEWeights ma = {
        .scheme = sc, .block_size = a->block_size, .bits = a->bits, .group_size = a->group_size};
    RLX_TRY(rlx_graph_add(dst, RLX_OP_DequantMoEWeights, &in[1], 1, &ma, &d3, NULL, &W));
    rlx_dim d2[2] = {K, N};
    RLX_TRY(rlx_reshape_dims(dst, W, 2, d2, &W));
  } else if (sc == RLX_QUANT_SCHEME_INT8_BLOCK || sc == RLX_QUANT_SCHEME_INT8_BLOCK_ASYM) {
    rlx_id q, s;
    RLX_TRY(as_matrix(dst, in[1], K, N, &q));
    RLX_TRY(rlx_cast_to(dst, q, RLX_F32, &q));
    if (wt == RLX_U8) { /* the bytes are int8 */
      rlx_id big, lo;
      RLX_TRY(rlx_scalar(dst, RLX_F32, 127.0, &big));
      RLX_TRY(rlx_compare(dst, RLX_CMP_GT, q, big, &big));
      RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_SUB, q, 256.0, &lo));
      RLX_TRY(rlx_where(dst, big, lo, q, &q));
    }
    RLX_TRY(rlx_cast_to(dst, in[2], RLX_F32, &s));
    RLX_TRY(repeat_rows(dst, s, a->block_size, K, &s));
    if (sc == RLX_QUANT_SCHEME_INT8_BLOCK_ASYM) {
      rlx_id z;
      RLX_TRY(rlx_cast_to(dst, in[3], RLX_F32, &z));
      RLX_TRY(repeat_rows(dst, z, a->block_size, K, &z));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, q, z, &q));
    }
    RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &W));
  } else if (sc == RLX_QUANT_SCHEME_FP8_E4M3 || sc == RLX_QUANT_SCHEME_FP8_E5M2) {
    if (wt != RLX_U8) return dc_unsupported(n, "FP8 codes must be u8");
    rlx_id q, s;
    RLX_TRY(as_matrix(dst, in[1], K, N, &q));
    RLX_TRY(decode_codes(dst, q, sc == RLX_QUANT_SCHEME_FP8_E4M3 ? RLX_SCALED_FORMAT_F8E4M3 : RLX_SCALED_FORMAT_F8E5M2,
                         &q));
    RLX_TRY(rlx_cast_to(dst, in[2], RLX_F32, &s));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &W));
  } else if (sc == RLX_QUANT_SCHEME_INT4_BLOCK || sc == RLX_QUANT_SCHEME_NVFP4_BLOCK) {
    if (wt != RLX_U8) return dc_unsupported(n, "4-bit codes must be u8");
    rlx_id q, s;
    RLX_TRY(split_codes(dst, in[1], 4, KN, &q));
    RLX_TRY(as_matrix(dst, q, K, N, &q));
    if (sc == RLX_QUANT_SCHEME_INT4_BLOCK) {
      RLX_TRY(rlx_cast_to(dst, q, RLX_F32, &q));
      RLX_TRY(rlx_cast_to(dst, in[2], RLX_F32, &s));
      RLX_TRY(repeat_rows(dst, s, a->block_size, K, &s));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &W));
    } else {
      rlx_id ok, zero, gs;
      RLX_TRY(decode_codes(dst, q, RLX_SCALED_FORMAT_F4E2M1, &q));
      RLX_TRY(decode_codes(dst, in[2], RLX_SCALED_FORMAT_F8E4M3, &s));
      RLX_TRY(rlx_compare(dst, RLX_CMP_EQ, s, s, &ok)); /* the E4M3 NaN code reads as 0 */
      RLX_TRY(rlx_scalar(dst, RLX_F32, 0.0, &zero));
      RLX_TRY(rlx_where(dst, ok, s, zero, &s));
      RLX_TRY(repeat_rows(dst, s, 16, K, &s));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &W));
      rlx_dim one = 1;
      RLX_TRY(rlx_cast_to(dst, in[3], RLX_F32, &gs));
      RLX_TRY(rlx_reshape_dims(dst, gs, 1, &one, &gs));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, W, gs, &W));
    }
  } else if (sc == RLX_QUANT_SCHEME_MXFP4X2_BLOCK) {
    if (wt != RLX_U8) return dc_unsupported(n, "MxFp4x2 codes must be u8");
    int64_t plane = (KN + 1) / 2, gs = a->group_size, G = (K + gs - 1) / gs;
    rlx_id flat, p[2], sflat, s[2];
    rlx_dim all = 2 * plane;
    RLX_TRY(rlx_reshape_dims(dst, in[1], 1, &all, &flat));
    rlx_dim sall = 2 * G * N;
    RLX_TRY(rlx_cast_to(dst, in[2], RLX_F32, &sflat));
    RLX_TRY(rlx_reshape_dims(dst, sflat, 1, &sall, &sflat));
    for (int k = 0; k < 2; k++) {
      RLX_TRY(rlx_narrow(dst, flat, 0, k * plane, plane, &p[k]));
      RLX_TRY(split_codes(dst, p[k], 4, KN, &p[k]));
      RLX_TRY(as_matrix(dst, p[k], K, N, &p[k]));
      RLX_TRY(decode_codes(dst, p[k], RLX_SCALED_FORMAT_F4E2M1, &p[k]));
      RLX_TRY(rlx_narrow(dst, sflat, 0, k * G * N, G * N, &s[k]));
      RLX_TRY(as_matrix(dst, s[k], G, N, &s[k]));
      RLX_TRY(repeat_rows(dst, s[k], gs, K, &s[k]));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, p[k], s[k], &p[k]));
    }
    RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, p[0], p[1], &W));
  } else if (sc == RLX_QUANT_SCHEME_MLX_AFFINE || sc == RLX_QUANT_SCHEME_MLX_MXFP4 ||
             sc == RLX_QUANT_SCHEME_MLX_MXFP8) {
    unsigned bits = sc == RLX_QUANT_SCHEME_MLX_AFFINE ? (unsigned)a->bits : sc == RLX_QUANT_SCHEME_MLX_MXFP4 ? 4u : 8u;
    if (wt != RLX_U8) return dc_unsupported(n, "MLX codes must be given as u8 bytes");
    nk = true;
    rlx_id q, s;
    if (8 % bits == 0)
      RLX_TRY(split_codes(dst, in[1], bits, KN, &q));
    else
      RLX_TRY(gather_codes(dst, in[1], bits, KN, &q)); /* 3, 5, 6 bits straddle bytes */
    RLX_TRY(as_matrix(dst, q, N, K, &q));
    if (sc == RLX_QUANT_SCHEME_MLX_AFFINE) {
      rlx_id b;
      RLX_TRY(rlx_cast_to(dst, q, RLX_F32, &q));
      RLX_TRY(rlx_cast_to(dst, in[2], RLX_F32, &s));
      RLX_TRY(repeat_cols(dst, s, a->group_size, &s));
      RLX_TRY(rlx_cast_to(dst, in[3], RLX_F32, &b));
      RLX_TRY(repeat_cols(dst, b, a->group_size, &b));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &q));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, q, b, &W));
    } else {
      RLX_TRY(decode_codes(dst, q,
                           sc == RLX_QUANT_SCHEME_MLX_MXFP4 ? RLX_SCALED_FORMAT_F4E2M1 : RLX_SCALED_FORMAT_F8E4M3, &q));
      RLX_TRY(e8m0_values(dst, in[2], &s));
      RLX_TRY(repeat_cols(dst, s, a->group_size, &s));
      RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, q, s, &W));
    }
  } else {
    return dc_unsupported(n, "scheme %s has no decomposition", rlx_enum_quant_scheme.names[sc]);
  }
  if (nk) {
    int64_t perm[2] = {1, 0};
    RLX_TRY(rlx_permute(dst, W, 2, perm, &W));
  }
  return rlx_matmul(dst, x, W, out);
}

/* ======================================================================================
 * ScaledGroupedMatMul
 * ====================================================================================== */

RLX_DECOMPOSE_DECL(ScaledGroupedMatMul) {
  (void)src;
  const rlx_attrs_ScaledGroupedMatMul *a = &n->attrs.ScaledGroupedMatMul;
  rlx_attrs_ScaledDequantize dl = {.format = a->lhs_format, .layout = a->layout, .block = a->block};
  rlx_attrs_ScaledDequantize dr = {.format = a->rhs_format, .layout = a->layout, .block = a->block};
  rlx_id X, W, args[3], idx;
  args[0] = in[0], args[1] = in[2];
  RLX_TRY(rlx_build_ScaledDequantize(dst, args, 2, &dl, NULL, &X));
  args[0] = in[1], args[1] = in[3];
  RLX_TRY(rlx_build_ScaledDequantize(dst, args, 2, &dr, NULL, &W));
  int64_t perm[3] = {0, 2, 1};
  RLX_TRY(rlx_permute(dst, W, 3, perm, &W));
  args[0] = X, args[1] = W, args[2] = in[4];
  RLX_TRY(rlx_build_GroupedMatMul(dst, args, 3, NULL, &X));
  if (!a->has_bias) return (*out = X, RLX_OK);
  RLX_TRY(rlx_cast_to(dst, in[4], RLX_I64, &idx));
  rlx_id b;
  RLX_TRY(rlx_gather_axis(dst, in[5], idx, 0, &b));
  return rlx_binary(dst, RLX_BINOP_ADD, X, b, out);
}

/* ======================================================================================
 * Codebook (synth)
 * ====================================================================================== */

/* W [R D, N] in the codebook's dtype from codes [R, N] and codebook [NE, D]. */
static rlx_status synth_w(rlx_graph *g, rlx_id codes, rlx_id cb, rlx_id *out) {
  rlx_shape cs = dc_shape(g, codes), bs = dc_shape(g, cb);
  if (!dc_all_static(&cs) || !dc_all_static(&bs)) return rlx_errorf(RLX_ERR_UNSUPPORTED, "synth: static shapes needed");
  rlx_id idx, w;
  RLX_TRY(rlx_cast_to(g, codes, RLX_I64, &idx));
  RLX_TRY(rlx_gather_axis(g, cb, idx, 0, &w)); /* [R, N, D] */
  int64_t perm[3] = {0, 2, 1};
  RLX_TRY(rlx_permute(g, w, 3, perm, &w));
  rlx_dim d[2] = {cs.dims[0] * bs.dims[1], cs.dims[1]};
  return rlx_reshape_dims(g, w, 2, d, out);
}

RLX_DECOMPOSE_DECL(SynthReconstruct) {
  (void)src;
  (void)n;
  return synth_w(dst, in[0], in[1], out);
}

RLX_DECOMPOSE_DECL(SynthMatMul) {
  (void)src;
  (void)n;
  rlx_id w, x, y;
  rlx_dtype t = (rlx_dtype)dc_shape(dst, in[0]).dtype;
  if (t == RLX_F16 || t == RLX_BF16) t = RLX_F32; /* the f32 result is not computed in half precision */
  RLX_TRY(synth_w(dst, in[1], in[2], &w));
  RLX_TRY(rlx_cast_to(dst, w, t, &w));
  RLX_TRY(rlx_cast_to(dst, in[0], t, &x));
  RLX_TRY(rlx_matmul(dst, x, w, &y));
  return rlx_cast_to(dst, y, RLX_F32, out);
}

RLX_DECOMPOSE_DECL(SynthMatMulBackward) {
  (void)src;
  const rlx_attrs_SynthMatMulBackward *a = &n->attrs.SynthMatMulBackward;
  rlx_shape xs = dc_shape(dst, in[0]), cs = dc_shape(dst, in[1]), bs = dc_shape(dst, in[2]);
  rlx_dtype xt = (rlx_dtype)xs.dtype, bt = (rlx_dtype)bs.dtype;
  int64_t perm[2] = {1, 0};
  if (a->wrt == RLX_SYNTH_WRT_DX) {
    rlx_id w, dy, y;
    RLX_TRY(synth_w(dst, in[1], in[2], &w));
    RLX_TRY(rlx_cast_to(dst, w, xt, &w));
    RLX_TRY(rlx_permute(dst, w, 2, perm, &w));
    RLX_TRY(rlx_cast_to(dst, in[3], xt, &dy));
    RLX_TRY(rlx_matmul(dst, dy, w, &y));
    return rlx_cast_to(dst, y, (rlx_dtype)n->shape.dtype, out);
  }
  if (!dc_all_static(&cs) || !dc_all_static(&bs)) return dc_unsupported(n, "the codes and codebook need static shapes");
  int64_t R = cs.dims[0], Nn = cs.dims[1], D = bs.dims[1];
  rlx_id xt_, dy, gk, idx;
  RLX_TRY(rlx_cast_to(dst, in[0], bt, &xt_));
  RLX_TRY(rlx_permute(dst, xt_, 2, perm, &xt_));
  RLX_TRY(rlx_cast_to(dst, in[3], bt, &dy));
  RLX_TRY(rlx_matmul(dst, xt_, dy, &gk)); /* [K, N] */
  rlx_dim d3[3] = {R, D, Nn}, d2[2] = {R * Nn, D}, flat = R * Nn;
  int64_t p3[3] = {0, 2, 1};
  RLX_TRY(rlx_reshape_dims(dst, gk, 3, d3, &gk));
  RLX_TRY(rlx_permute(dst, gk, 3, p3, &gk)); /* [R, N, D] */
  RLX_TRY(rlx_reshape_dims(dst, gk, 2, d2, &gk));
  RLX_TRY(rlx_cast_to(dst, in[1], RLX_I64, &idx));
  RLX_TRY(rlx_reshape_dims(dst, idx, 1, &flat, &idx));
  rlx_attrs_ScatterAdd sa = {0};
  rlx_id args[2] = {gk, idx};
  return rlx_graph_add(dst, RLX_OP_ScatterAdd, args, 2, &sa, &n->shape, NULL, out);
}

/* ======================================================================================
 * Spline activations
 * ====================================================================================== */

typedef struct spline_parts {
  rlx_id f, c0, c1, idx; /* interpolation weight, the two knot values, flat knot index (i64) */
  rlx_dtype t;
  double lo, hi, h;
  int64_t nk, C;
} spline_parts;

static rlx_status spline_build(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id coeffs, int64_t nk, float lo, float hi,
                               spline_parts *p) {
  rlx_shape xs = dc_shape(g, x), ks = dc_shape(g, coeffs);
  if (!dc_all_static(&xs) || !dc_all_static(&ks)) return dc_unsupported(n, "the operands need static shapes");
  p->t = (rlx_dtype)xs.dtype;
  p->nk = nk;
  p->lo = lo, p->hi = hi, p->h = ((double)hi - (double)lo) / (double)(nk - 1);
  p->C = ks.rank == 2 ? ks.dims[0] : 1;
  rlx_id u, j, okn, zero, flat;
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_SUB, x, p->lo, &u));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_DIV, u, p->h, &u));
  RLX_TRY(rlx_activation(g, RLX_ACT_FLOOR, u, &j));
  RLX_TRY(rlx_compare(g, RLX_CMP_EQ, j, j, &okn)); /* NaN -> knot 0 (the result is made NaN later) */
  RLX_TRY(rlx_scalar(g, p->t, 0.0, &zero));
  RLX_TRY(rlx_where(g, okn, j, zero, &j));
  rlx_attrs_Clamp cj = {.min = 0.0f, .max = (float)(nk - 2)}, cf = {.min = 0.0f, .max = 1.0f};
  RLX_TRY(rlx_build_Clamp(g, &j, 1, &cj, NULL, &j));
  RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, u, j, &p->f));
  RLX_TRY(rlx_build_Clamp(g, &p->f, 1, &cf, NULL, &p->f));
  RLX_TRY(rlx_cast_to(g, j, RLX_I64, &p->idx));
  if (p->C > 1) { /* + channel * nk along the last axis */
    double *base = malloc((size_t)p->C * sizeof *base);
    if (!base) return rlx_errorf(RLX_ERR_OOM, "out of memory building a spline decomposition");
    for (int64_t c = 0; c < p->C; c++) base[c] = (double)(c * nk);
    rlx_id bc;
    rlx_dim cd = p->C;
    rlx_status st = rlx_values(g, RLX_I64, 1, &cd, base, &bc);
    free(base);
    RLX_TRY(st);
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, p->idx, bc, &p->idx));
  }
  rlx_dim all = p->C * nk;
  RLX_TRY(rlx_reshape_dims(g, coeffs, 1, &all, &flat));
  RLX_TRY(rlx_cast_to(g, flat, p->t, &flat));
  rlx_id i1;
  RLX_TRY(rlx_gather_axis(g, flat, p->idx, 0, &p->c0));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_ADD, p->idx, 1.0, &i1));
  RLX_TRY(rlx_gather_axis(g, flat, i1, 0, &p->c1));
  return RLX_OK;
}

/* v where x is not NaN, NaN where it is. */
static rlx_status nan_like_x(rlx_graph *g, rlx_id x, rlx_id v, rlx_dtype t, rlx_id *out) {
  rlx_id ok, nan;
  RLX_TRY(rlx_compare(g, RLX_CMP_EQ, x, x, &ok));
  RLX_TRY(rlx_scalar(g, t, NAN, &nan));
  return rlx_where(g, ok, v, nan, out);
}

RLX_DECOMPOSE_DECL(SplineActivation) {
  (void)src;
  const rlx_attrs_SplineActivation *a = &n->attrs.SplineActivation;
  spline_parts p;
  RLX_TRY(spline_build(dst, n, in[0], in[1], a->num_knots, a->grid_min, a->grid_max, &p));
  rlx_id d, y;
  RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, p.c1, p.c0, &d));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, p.f, d, &d));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, p.c0, d, &y));
  return nan_like_x(dst, in[0], y, p.t, out);
}

RLX_DECOMPOSE_DECL(SplineActivationBackwardX) {
  (void)src;
  const rlx_attrs_SplineActivationBackwardX *a = &n->attrs.SplineActivationBackwardX;
  spline_parts p;
  RLX_TRY(spline_build(dst, n, in[0], in[1], a->num_knots, a->grid_min, a->grid_max, &p));
  rlx_id g, dy, lo, hi, m, zero;
  RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, p.c1, p.c0, &g));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_DIV, g, p.h, &g));
  RLX_TRY(rlx_cast_to(dst, in[2], p.t, &dy));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, dy, g, &g));
  RLX_TRY(rlx_scalar(dst, p.t, 0.0, &zero));
  RLX_TRY(rlx_scalar(dst, p.t, p.lo, &lo));
  RLX_TRY(rlx_scalar(dst, p.t, p.hi, &hi));
  RLX_TRY(rlx_compare(dst, RLX_CMP_LT, in[0], lo, &m));
  RLX_TRY(rlx_where(dst, m, zero, g, &g));
  RLX_TRY(rlx_compare(dst, RLX_CMP_GT, in[0], hi, &m));
  RLX_TRY(rlx_where(dst, m, zero, g, &g));
  return nan_like_x(dst, in[0], g, p.t, out);
}

RLX_DECOMPOSE_DECL(SplineActivationBackwardCoeff) {
  (void)src;
  const rlx_attrs_SplineActivationBackwardCoeff *a = &n->attrs.SplineActivationBackwardCoeff;
  spline_parts p;
  RLX_TRY(spline_build(dst, n, in[0], in[1], a->num_knots, a->grid_min, a->grid_max, &p));
  rlx_shape xs = dc_shape(dst, in[0]);
  int64_t P = 1;
  for (uint32_t i = 0; i < xs.rank; i++) P *= xs.dims[i];
  rlx_dtype ct = (rlx_dtype)n->shape.dtype;
  rlx_id dy, w0, w1, one, i0, i1, s0, s1, f;
  RLX_TRY(rlx_cast_to(dst, in[2], p.t, &dy));
  RLX_TRY(nan_like_x(dst, in[0], p.f, p.t, &f));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, f, dy, &w1));
  RLX_TRY(rlx_scalar(dst, p.t, 1.0, &one));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, one, f, &w0));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, w0, dy, &w0));
  rlx_dim flat = P, all = p.C * p.nk;
  RLX_TRY(rlx_reshape_dims(dst, w0, 1, &flat, &w0));
  RLX_TRY(rlx_reshape_dims(dst, w1, 1, &flat, &w1));
  RLX_TRY(rlx_cast_to(dst, w0, ct, &w0));
  RLX_TRY(rlx_cast_to(dst, w1, ct, &w1));
  RLX_TRY(rlx_expand_dims(dst, p.idx, xs.rank, xs.dims, &i0));
  RLX_TRY(rlx_reshape_dims(dst, i0, 1, &flat, &i0));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_ADD, i0, 1.0, &i1));
  rlx_shape acc = {.dtype = ct, .rank = 1, .dims = {all}};
  rlx_attrs_ScatterAdd sa = {0};
  rlx_id args[2] = {w0, i0};
  RLX_TRY(rlx_graph_add(dst, RLX_OP_ScatterAdd, args, 2, &sa, &acc, NULL, &s0));
  args[0] = w1, args[1] = i1;
  RLX_TRY(rlx_graph_add(dst, RLX_OP_ScatterAdd, args, 2, &sa, &acc, NULL, &s1));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_ADD, s0, s1, &s0));
  if (p.C == 1 && n->shape.rank == 2) return dc_unsupported(n, "unexpected coeff shape");
  return rlx_reshape_dims(dst, s0, n->shape.rank, n->shape.dims, out);
}
