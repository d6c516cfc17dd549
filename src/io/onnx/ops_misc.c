/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Remaining ONNX ops: linear quantization (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear), random generators (RandomNormal/Uniform[Like], Bernoulli), window
 * functions (Hann, Hamming, Blackman; constants) and the losses NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "core/elem.h"

/* ---- quantization ---- */

/* Scale / zero point [C] lined up with axis `axis` of a rank-r tensor (scalars stay). */
static rlx_status per_axis(oi_node *c, rlx_id p, uint32_t r, int64_t axis, rlx_id *out) {
  const rlx_shape *ps = oi_shape(c, p);
  size_t n;
  if (ps->rank == 0 || (rlx_shape_numel(ps, &n) == RLX_OK && n == 1 && ps->rank <= 1)) {
    *out = p;
    return RLX_OK;
  }
  if (ps->rank != 1) return oi_unsupported(c, "blocked quantization parameters of shape %s", rlx_fmt_shape(ps));
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, r, "attribute axis", &a));
  return oi_bcast_axis(c, p, r, a, out);
}

/* Blocked quantization (opset 21 block_size): parameter p has x's shape except ceil(D / block)
 * along `axis`; each entry is repeated block times along it and the tail cut to D. */
static rlx_status blocked(oi_node *c, rlx_id p, const rlx_shape *xs, int64_t axis, int64_t block, rlx_id *out) {
  const rlx_shape ps = *oi_shape(c, p);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs->rank, "attribute axis", &a));
  RLX_TRY(oi_need_static(c, xs, "input x"));
  if (ps.rank != xs->rank)
    return oi_bad(c, "blocked quantization parameters %s must have the rank of x %s", rlx_fmt_shape(&ps),
                  rlx_fmt_shape(xs));
  int64_t D = xs->dims[a], nb = ps.dims[a];
  if (nb < 1 || (D + block - 1) / block != nb)
    return oi_bad(c, "block_size %lld does not fit %lld blocks of scale %s over axis %u of x %s", (long long)block,
                  (long long)nb, rlx_fmt_shape(&ps), a, rlx_fmt_shape(xs));
  int64_t d1[RLX_MAX_RANK + 1], d2[RLX_MAX_RANK + 1], d3[RLX_MAX_RANK];
  for (uint32_t i = 0, k = 0; i < xs->rank; i++) {
    if (i != a && ps.dims[i] != xs->dims[i])
      return oi_bad(c, "blocked quantization parameters %s do not match x %s", rlx_fmt_shape(&ps), rlx_fmt_shape(xs));
    d3[i] = ps.dims[i];
    d1[k] = d2[k] = ps.dims[i];
    k++;
    if (i == a) d1[k] = 1, d2[k] = block, k++, d3[i] = nb * block;
  }
  rlx_id y;
  RLX_TRY(oi_reshape(c, p, xs->rank + 1, d1, &y));
  rlx_attrs_Expand ea = {.target_shape = {.v = d2, .n = xs->rank + 1}};
  RLX_TRY(oi_emit(c, RLX_OP_Expand, &y, 1, &ea, &y));
  RLX_TRY(oi_reshape(c, y, xs->rank, d3, &y));
  return oi_narrow(c, y, a, 0, D, out);
}

/* A scale / zero point lined up with x: blocked (block > 0) or per tensor / per axis. */
static rlx_status qparam(oi_node *c, rlx_id p, const rlx_shape *xs, int64_t axis, int64_t block, rlx_id *out) {
  if (block > 0) return blocked(c, p, xs, axis, block, out);
  if (block < 0) return oi_bad(c, "attribute block_size is %lld", (long long)block);
  return per_axis(c, p, xs->rank, axis, out);
}

static rlx_status saturate_cast(oi_node *c, rlx_id x, rlx_dtype to, rlx_id *out) {
  double lo = to == RLX_U8 ? 0 : to == RLX_I8 ? -128 : to == RLX_I16 ? -32768 : to == RLX_I32 ? -2147483648.0 : 0;
  double hi = to == RLX_U8 ? 255 : to == RLX_I8 ? 127 : to == RLX_I16 ? 32767 : to == RLX_I32 ? 2147483647.0 : 65535;
  if (to != RLX_U8 && to != RLX_I8 && to != RLX_I16 && to != RLX_I32)
    return oi_unsupported(c, "quantizing to %s", rlx_dtype_name(to));
  rlx_id a, b;
  rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
  RLX_TRY(oi_scalar(c, t, lo, &a));
  RLX_TRY(oi_scalar(c, t, hi, &b));
  RLX_TRY(oi_bin(c, RLX_BINOP_MAX, x, a, &x));
  RLX_TRY(oi_bin(c, RLX_BINOP_MIN, x, b, &x));
  return oi_cast(c, x, to, out);
}

/* The opset-21+ attributes block_size and output_dtype (0 when absent or earlier). */
static rlx_status q21_attrs(oi_node *c, int64_t *block, int64_t *odt) {
  *block = *odt = 0;
  if (c->opset < 21) return RLX_OK;
  RLX_TRY(oi_attr_i(c, "block_size", 0, block));
  if (c->opset >= 23 || strcmp(c->np->op_type, "QuantizeLinear") == 0) RLX_TRY(oi_attr_i(c, "output_dtype", 0, odt));
  return RLX_OK;
}

/* Opsets 19+: x and y_scale may be f16 / bf16 (the division runs in the scale's dtype, or in
 * `precision` from 23); 21+: blocked scales, output_dtype (int16 too). float8 / 4-bit / 2-bit
 * outputs are gaps naming the dtype. */
static rlx_status map_quantize(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "x"));
  RLX_TRY(oi_need(c, 1, "y_scale"));
  int64_t axis = 1, block, odt, prec = 0;
  if (c->opset >= 13) RLX_TRY(oi_attr_i(c, "axis", 1, &axis));
  RLX_TRY(q21_attrs(c, &block, &odt));
  if (c->opset >= 23) RLX_TRY(oi_attr_i(c, "precision", 0, &prec));
  rlx_id x = c->in[0], s, y;
  const rlx_shape xs = *oi_shape(c, x);
  rlx_dtype ft = (rlx_dtype)oi_in_shape(c, 1)->dtype;
  if (!rlx_dtype_is_float(ft)) return oi_bad(c, "y_scale must be floating-point");
  if (prec && (!oi_dtype_from_onnx((int32_t)prec, &ft) || !rlx_dtype_is_float(ft)))
    return oi_unsupported(c, "precision %s", oi_onnx_dtype_name((int32_t)prec));
  rlx_dtype to = RLX_U8;
  if (odt && !oi_dtype_from_onnx((int32_t)odt, &to))
    return oi_unsupported(c, "quantizing to %s (RLX has no such dtype)", oi_onnx_dtype_name((int32_t)odt));
  if (oi_has(c, 2)) {
    rlx_dtype zt = (rlx_dtype)oi_in_shape(c, 2)->dtype;
    if (odt && zt != to)
      return oi_bad(c, "output_dtype %s differs from y_zero_point's dtype %s", oi_onnx_dtype_name((int32_t)odt),
                    rlx_dtype_name(zt));
    to = zt;
  }
  RLX_TRY(oi_cast(c, x, ft, &x));
  RLX_TRY(oi_cast(c, c->in[1], ft, &s));
  RLX_TRY(qparam(c, s, &xs, axis, block, &s));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, x, s, &y));
  RLX_TRY(oi_unary(c, RLX_ACT_ROUND, y, &y)); /* half to even */
  if (oi_has(c, 2)) {
    rlx_id zp;
    RLX_TRY(oi_cast(c, c->in[2], ft, &zp));
    RLX_TRY(qparam(c, zp, &xs, axis, block, &zp));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, zp, &y));
  }
  return saturate_cast(c, y, to, &c->out[0]);
}

/* Opsets 19+: the output takes the scale's dtype (f16 / bf16 too); 21+: blocked scales; 23+:
 * output_dtype picks the output dtype (and the precision of the multiplication). */
static rlx_status map_dequantize(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "x"));
  RLX_TRY(oi_need(c, 1, "x_scale"));
  int64_t axis = 1, block, odt;
  if (c->opset >= 13) RLX_TRY(oi_attr_i(c, "axis", 1, &axis));
  RLX_TRY(q21_attrs(c, &block, &odt));
  rlx_id x = c->in[0], s, y;
  const rlx_shape xs = *oi_shape(c, x);
  rlx_dtype ft = (rlx_dtype)oi_in_shape(c, 1)->dtype;
  if (!rlx_dtype_is_float(ft)) return oi_bad(c, "x_scale must be floating-point");
  if (odt && (!oi_dtype_from_onnx((int32_t)odt, &ft) || !rlx_dtype_is_float(ft)))
    return oi_unsupported(c, "output_dtype %s", oi_onnx_dtype_name((int32_t)odt));
  RLX_TRY(oi_cast(c, x, ft, &y));
  if (oi_has(c, 2)) {
    rlx_id zp;
    RLX_TRY(oi_cast(c, c->in[2], ft, &zp));
    RLX_TRY(qparam(c, zp, &xs, axis, block, &zp));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, y, zp, &y));
  }
  RLX_TRY(oi_cast(c, c->in[1], ft, &s));
  RLX_TRY(qparam(c, s, &xs, axis, block, &s));
  return oi_bin(c, RLX_BINOP_MUL, y, s, &c->out[0]);
}

static rlx_status map_dynamic_quantize(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "x"));
  rlx_id x = c->in[0], mx, mn, zero, scale, zp, y;
  if (oi_shape(c, x)->dtype != RLX_F32) return oi_bad(c, "input x must be f32");
  RLX_TRY(oi_scalar(c, RLX_F32, 0, &zero));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MAX, x, NULL, 0, false, &mx));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MIN, x, NULL, 0, false, &mn));
  RLX_TRY(oi_bin(c, RLX_BINOP_MAX, mx, zero, &mx));
  RLX_TRY(oi_bin(c, RLX_BINOP_MIN, mn, zero, &mn));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, mx, mn, &scale));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_DIV, scale, 255.0, &scale));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, zero, mn, &zp));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, zp, scale, &zp));
  RLX_TRY(oi_unary(c, RLX_ACT_ROUND, zp, &zp));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, x, scale, &y));
  RLX_TRY(oi_unary(c, RLX_ACT_ROUND, y, &y));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, zp, &y));
  RLX_TRY(saturate_cast(c, y, RLX_U8, &c->out[0]));
  if (c->n_out > 1) c->out[1] = scale;
  if (c->n_out > 2) RLX_TRY(saturate_cast(c, zp, RLX_U8, &c->out[2]));
  return RLX_OK;
}

/* x - zero point, in f64 (exact for every integer accumulation a quantized op makes). The zero
 * point is a scalar or lines up with axis `axis` of x. */
static rlx_status centered(oi_node *c, rlx_id x, uint32_t zk, uint32_t axis, rlx_id *out) {
  RLX_TRY(oi_cast(c, x, RLX_F64, out));
  if (!oi_has(c, zk)) return RLX_OK;
  rlx_id zp;
  RLX_TRY(oi_cast(c, c->in[zk], RLX_F64, &zp));
  RLX_TRY(per_axis(c, zp, oi_shape(c, x)->rank, axis, &zp));
  return oi_bin(c, RLX_BINOP_SUB, *out, zp, out);
}

/* Integer convolution: ConvInteger (int32 result) and QLinearConv (requantized). */
static rlx_status quant_conv(oi_node *c, bool qlinear) {
  uint32_t kx = 0, kw = qlinear ? 3 : 1, kxz = qlinear ? 2 : 2, kwz = qlinear ? 5 : 3;
  RLX_TRY(oi_need(c, kx, "x"));
  RLX_TRY(oi_need(c, kw, "w"));
  rlx_id xd, wd, acc;
  RLX_TRY(centered(c, c->in[kx], kxz, 1, &xd));
  RLX_TRY(centered(c, c->in[kw], kwz, 0, &wd));
  /* run the float convolution on the centered operands, then restore the inputs */
  rlx_id saved[3] = {c->in[0], c->in[1], c->n_in > 2 ? c->in[2] : RLX_NO_ID};
  uint32_t saved_n = c->n_in;
  c->in[0] = xd;
  c->in[1] = wd;
  c->n_in = 2;
  rlx_status st = oi_conv(c, false);
  c->in[0] = saved[0];
  c->in[1] = saved[1];
  if (saved_n > 2) c->in[2] = saved[2];
  c->n_in = saved_n;
  RLX_TRY(st);
  acc = c->out[0];
  uint32_t r = oi_shape(c, acc)->rank;
  if (!qlinear) return oi_cast(c, acc, RLX_I32, &c->out[0]);
  for (uint32_t k = 1; k <= 7; k++)
    if (k != 3 && k != 2 && k != 5 && k != 7) RLX_TRY(oi_need(c, k, "scale"));
  if (oi_has(c, 8)) { /* int32 bias [M] */
    rlx_id b;
    RLX_TRY(oi_cast(c, c->in[8], RLX_F64, &b));
    RLX_TRY(oi_bcast_axis(c, b, r, 1, &b));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, acc, b, &acc));
  }
  /* y = round(acc * x_scale * w_scale / y_scale) + y_zp, saturated (scale math in f32) */
  rlx_id xs, ws, ys, scale, y;
  RLX_TRY(oi_cast(c, c->in[1], RLX_F32, &xs));
  RLX_TRY(oi_cast(c, c->in[4], RLX_F32, &ws));
  RLX_TRY(oi_cast(c, c->in[6], RLX_F32, &ys));
  RLX_TRY(per_axis(c, ws, r, 1, &ws));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, ws, xs, &scale));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, scale, ys, &scale));
  RLX_TRY(oi_cast(c, acc, RLX_F32, &y));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, y, scale, &y));
  RLX_TRY(oi_unary(c, RLX_ACT_ROUND, y, &y));
  rlx_dtype to = oi_has(c, 7) ? (rlx_dtype)oi_in_shape(c, 7)->dtype : (rlx_dtype)oi_in_shape(c, 0)->dtype;
  if (oi_has(c, 7)) {
    rlx_id zp;
    RLX_TRY(oi_cast(c, c->in[7], RLX_F32, &zp));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, zp, &y));
  }
  return saturate_cast(c, y, to, &c->out[0]);
}

static rlx_status map_conv_integer(oi_node *c) { return quant_conv(c, false); }
static rlx_status map_qlinear_conv(oi_node *c) { return quant_conv(c, true); }

static rlx_status map_qlinear_matmul(oi_node *c) {
  for (uint32_t k = 0; k < 8; k++) RLX_TRY(oi_need(c, k, "QLinearMatMul input"));
  const rlx_shape as = *oi_in_shape(c, 0), bs = *oi_in_shape(c, 3);
  if (as.rank < 2 || bs.rank < 2) return oi_unsupported(c, "1-D QLinearMatMul operands");
  /* a's parameters are per row (axis rank-2), b's per column (last axis) */
  rlx_id ad, bd, acc, asc, bsc, ysc, scale, y, zp;
  RLX_TRY(centered(c, c->in[0], 2, as.rank - 2u, &ad));
  RLX_TRY(centered(c, c->in[3], 5, bs.rank - 1u, &bd));
  rlx_id mm[2] = {ad, bd};
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, mm, 2, NULL, &acc));
  uint32_t r = oi_shape(c, acc)->rank;
  RLX_TRY(oi_cast(c, c->in[1], RLX_F32, &asc));
  RLX_TRY(oi_cast(c, c->in[4], RLX_F32, &bsc));
  RLX_TRY(oi_cast(c, c->in[6], RLX_F32, &ysc));
  RLX_TRY(per_axis(c, asc, r, r - 2, &asc));
  RLX_TRY(per_axis(c, bsc, r, r - 1, &bsc));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, asc, bsc, &scale));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, scale, ysc, &scale));
  RLX_TRY(oi_cast(c, acc, RLX_F32, &y));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, y, scale, &y));
  RLX_TRY(oi_unary(c, RLX_ACT_ROUND, y, &y));
  RLX_TRY(oi_cast(c, c->in[7], RLX_F32, &zp));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, zp, &y));
  return saturate_cast(c, y, (rlx_dtype)oi_in_shape(c, 7)->dtype, &c->out[0]);
}

/* ---- random ---- */

static rlx_status random_dtype(oi_node *c, rlx_dtype def, rlx_dtype *out) {
  int64_t dt;
  RLX_TRY(oi_attr_i(c, "dtype", oi_dtype_to_onnx(def), &dt));
  if (dt < 0 || dt > 64 || !oi_dtype_from_onnx((int32_t)dt, out) || !rlx_dtype_is_float(*out))
    return oi_unsupported(c, "random values of %s", oi_onnx_dtype_name((int32_t)dt));
  return RLX_OK;
}

static rlx_status map_random(oi_node *c) {
  const char *op = c->np->op_type;
  bool normal = strstr(op, "Normal") != NULL, like = strstr(op, "Like") != NULL;
  float seed = 0, a, b;
  bool has_seed = oi_attr(c, "seed") != NULL;
  RLX_TRY(oi_attr_f(c, "seed", 0, &seed));
  RLX_TRY(oi_attr_f(c, normal ? "mean" : "low", 0, &a));
  RLX_TRY(oi_attr_f(c, normal ? "scale" : "high", 1, &b));
  rlx_shape s;
  rlx_id tmpl = RLX_NO_ID;
  if (like) {
    RLX_TRY(oi_need(c, 0, "input"));
    tmpl = c->in[0];
    s = *oi_shape(c, tmpl);
    rlx_dtype t = (rlx_dtype)s.dtype;
    if (oi_attr(c, "dtype") || !rlx_dtype_is_float(t)) RLX_TRY(random_dtype(c, RLX_F32, &t));
    s.dtype = (uint8_t)t;
  } else {
    rlx_dtype t;
    RLX_TRY(random_dtype(c, RLX_F32, &t));
    const int64_t *sv;
    size_t sn;
    bool present;
    RLX_TRY(oi_attr_ints(c, "shape", &sv, &sn, &present));
    if (!present) return oi_bad(c, "attribute shape is required");
    if (sn > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %zu", sn);
    rlx_dim d[RLX_MAX_RANK];
    for (size_t i = 0; i < sn; i++) {
      if (sv[i] < 0) return oi_bad(c, "attribute shape[%zu] is %lld", i, (long long)sv[i]);
      d[i] = sv[i];
    }
    s = rlx_shape_make(t, (uint32_t)sn, d);
  }
  rlx_of32 os = {.has = has_seed, .v = seed};
  uint64_t key = (uint64_t)c->m->emitted * 0x9e3779b97f4a7c15ull + 1;
  c->m->emitted++;
  if (normal) {
    rlx_attrs_RngNormal ra = {.mean = a, .scale = b, .key = key, .op_seed = os};
    return rlx_graph_add(c->g, RLX_OP_RngNormal, &tmpl, like ? 1 : 0, &ra, &s, NULL, &c->out[0]);
  }
  rlx_attrs_RngUniform ra = {.low = a, .high = b, .key = key, .op_seed = os};
  return rlx_graph_add(c->g, RLX_OP_RngUniform, &tmpl, like ? 1 : 0, &ra, &s, NULL, &c->out[0]);
}

static rlx_status map_bernoulli(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  rlx_id p = c->in[0], u, lt;
  rlx_shape s = *oi_shape(c, p);
  if (!rlx_dtype_is_float((rlx_dtype)s.dtype)) return oi_bad(c, "input must be floating-point");
  float seed = 0;
  bool has_seed = oi_attr(c, "seed") != NULL;
  RLX_TRY(oi_attr_f(c, "seed", 0, &seed));
  rlx_dtype to = (rlx_dtype)s.dtype;
  if (oi_attr(c, "dtype")) {
    int64_t dt;
    RLX_TRY(oi_attr_i(c, "dtype", 0, &dt));
    if (dt < 0 || dt > 64 || !oi_dtype_from_onnx((int32_t)dt, &to))
      return oi_unsupported(c, "dtype %s", oi_onnx_dtype_name((int32_t)dt));
  }
  rlx_attrs_RngUniform ra = {.low = 0,
                             .high = 1,
                             .key = (uint64_t)c->m->emitted * 0x9e3779b97f4a7c15ull + 7,
                             .op_seed = {.has = has_seed, .v = seed}};
  c->m->emitted++;
  RLX_TRY(rlx_graph_add(c->g, RLX_OP_RngUniform, &p, 1, &ra, &s, NULL, &u));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, u, p, &lt));
  return oi_cast(c, lt, to, &c->out[0]);
}

/* ---- windows ---- */

static rlx_status map_window(oi_node *c) {
  int64_t *nv;
  size_t nn;
  RLX_TRY(oi_in_ints(c, 0, "size", &nv, &nn));
  if (nn != 1 || nv[0] < 0 || nv[0] > ((int64_t)1 << 24)) return oi_bad(c, "input size must be a scalar in [0, 2^24]");
  int64_t periodic, odt;
  RLX_TRY(oi_attr_i(c, "periodic", 1, &periodic));
  RLX_TRY(oi_attr_i(c, "output_datatype", 1, &odt));
  rlx_dtype t;
  if (odt < 0 || odt > 64 || !oi_dtype_from_onnx((int32_t)odt, &t))
    return oi_unsupported(c, "output_datatype %s", oi_onnx_dtype_name((int32_t)odt));
  int64_t n = nv[0];
  double den = periodic ? (double)n : (double)(n - 1);
  rlx_dim d = n;
  rlx_shape s = rlx_shape_make(t, 1, &d);
  size_t nb;
  RLX_TRY(rlx_shape_nbytes(&s, &nb));
  void *buf = oi_scratch(c, nb);
  if (!buf) return oi_nomem(c);
  const char *op = c->np->op_type;
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < n; i++) {
    double x = den > 0 ? 2 * pi * (double)i / den : 0, v;
    if (op[0] == 'H' && op[2] == 'n')
      v = 0.5 - 0.5 * cos(x); /* Hann */
    else if (op[0] == 'H')
      v = 25.0 / 46.0 - (21.0 / 46.0) * cos(x); /* Hamming */
    else
      v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x); /* Blackman */
    rlx_elem_set(buf, t, (size_t)i, v);
  }
  return oi_const(c, s, buf, nb, &c->out[0]);
}

/* ---- losses ---- */

/* loss = -input[n, target[n, ...], ...] * weight[target], reduced. */
static rlx_status nll(oi_node *c, rlx_id input, rlx_id target, rlx_id weight, rlx_id *out) {
  const char *red;
  RLX_TRY(oi_attr_s(c, "reduction", "mean", &red));
  bool has_ignore = oi_attr(c, "ignore_index") != NULL;
  int64_t ignore = 0;
  RLX_TRY(oi_attr_i(c, "ignore_index", 0, &ignore));
  const rlx_shape is = *oi_shape(c, input), ts = *oi_shape(c, target);
  if (is.rank < 2 || ts.rank != is.rank - 1u)
    return oi_bad(c, "input %s must be [N, C, ...] and target %s [N, ...]", rlx_fmt_shape(&is), rlx_fmt_shape(&ts));
  rlx_dtype ft = (rlx_dtype)is.dtype;
  rlx_id t, mask = RLX_NO_ID, ts_safe, g, l, w = RLX_NO_ID, zero;
  RLX_TRY(oi_cast(c, target, RLX_I64, &t));
  ts_safe = t;
  if (has_ignore) {
    rlx_id ig, z;
    RLX_TRY(oi_scalar(c, RLX_I64, (double)ignore, &ig));
    RLX_TRY(oi_cmp(c, RLX_CMP_NE, t, ig, &mask));
    RLX_TRY(oi_scalar(c, RLX_I64, 0, &z));
    RLX_TRY(oi_where(c, mask, t, z, &ts_safe));
  }
  rlx_dim ud[RLX_MAX_RANK];
  ud[0] = ts.dims[0], ud[1] = 1;
  for (uint32_t i = 1; i < ts.rank; i++) ud[i + 1] = ts.dims[i];
  rlx_id tu;
  RLX_TRY(oi_reshape_dims(c, ts_safe, is.rank, ud, &tu));
  rlx_attrs_GatherElements ga = {.axis = 1};
  rlx_id gin[2] = {input, tu};
  RLX_TRY(oi_emit(c, RLX_OP_GatherElements, gin, 2, &ga, &g));
  RLX_TRY(oi_reshape_dims(c, g, ts.rank, ts.dims, &g));
  RLX_TRY(oi_unary(c, RLX_ACT_NEG, g, &l));
  RLX_TRY(oi_scalar(c, ft, 0, &zero));
  if (weight != RLX_NO_ID) {
    rlx_attrs_Gather wa = {0};
    rlx_id win[2] = {weight, ts_safe};
    RLX_TRY(oi_emit(c, RLX_OP_Gather, win, 2, &wa, &w));
    RLX_TRY(oi_cast(c, w, ft, &w));
    if (mask != RLX_NO_ID) RLX_TRY(oi_where(c, mask, w, zero, &w));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, l, w, &l));
  }
  if (mask != RLX_NO_ID) RLX_TRY(oi_where(c, mask, l, zero, &l));
  if (strcmp(red, "none") == 0) {
    *out = l;
    return RLX_OK;
  }
  rlx_id sum;
  RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, l, NULL, 0, false, &sum));
  if (strcmp(red, "sum") == 0) {
    *out = sum;
    return RLX_OK;
  }
  if (strcmp(red, "mean") != 0) return oi_bad(c, "attribute reduction is \"%s\"", red);
  rlx_id den;
  if (w != RLX_NO_ID) {
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, w, NULL, 0, false, &den));
  } else if (mask != RLX_NO_ID) {
    RLX_TRY(oi_cast(c, mask, ft, &den));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, den, NULL, 0, false, &den));
  } else {
    size_t n;
    if (rlx_shape_numel(&ts, &n) != RLX_OK) return oi_unsupported(c, "a mean over symbolic dims");
    RLX_TRY(oi_scalar(c, ft, (double)n, &den));
  }
  return oi_bin(c, RLX_BINOP_DIV, sum, den, out);
}

static rlx_status map_nll(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  RLX_TRY(oi_need(c, 1, "target"));
  return nll(c, c->in[0], c->in[1], oi_has(c, 2) ? c->in[2] : RLX_NO_ID, &c->out[0]);
}

static rlx_status map_sce(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "scores"));
  RLX_TRY(oi_need(c, 1, "labels"));
  rlx_id x = c->in[0], mx, z, e, s, lp;
  int64_t ax = 1;
  if (oi_shape(c, x)->rank < 2) return oi_bad(c, "scores must be [N, C, ...]");
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MAX, x, &ax, 1, true, &mx));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, mx, &z));
  RLX_TRY(oi_unary(c, RLX_ACT_EXP, z, &e));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, e, &ax, 1, true, &s));
  RLX_TRY(oi_unary(c, RLX_ACT_LOG, s, &s));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, z, s, &lp));
  if (c->n_out > 1) c->out[1] = lp;
  return nll(c, lp, c->in[1], oi_has(c, 2) ? c->in[2] : RLX_NO_ID, &c->out[0]);
}

const oi_op_entry oi_ops_misc[] = {
    {"QuantizeLinear", 10, OI_MAX_OPSET, map_quantize},
    {"DequantizeLinear", 10, OI_MAX_OPSET, map_dequantize},
    {"DynamicQuantizeLinear", 11, OI_MAX_OPSET, map_dynamic_quantize},
    {"ConvInteger", 10, OI_MAX_OPSET, map_conv_integer},
    {"QLinearConv", 10, OI_MAX_OPSET, map_qlinear_conv},
    {"QLinearMatMul", 10, OI_MAX_OPSET, map_qlinear_matmul},
    {"RandomNormal", 1, OI_MAX_OPSET, map_random},
    {"RandomUniform", 1, OI_MAX_OPSET, map_random},
    {"RandomNormalLike", 1, OI_MAX_OPSET, map_random},
    {"RandomUniformLike", 1, OI_MAX_OPSET, map_random},
    {"Bernoulli", 15, OI_MAX_OPSET, map_bernoulli},
    {"HannWindow", 17, OI_MAX_OPSET, map_window},
    {"HammingWindow", 17, OI_MAX_OPSET, map_window},
    {"BlackmanWindow", 17, OI_MAX_OPSET, map_window},
    {"NegativeLogLikelihoodLoss", 12, OI_MAX_OPSET, map_nll},
    {"SoftmaxCrossEntropyLoss", 12, OI_MAX_OPSET, map_sce},
};
const uint32_t oi_ops_misc_len = sizeof oi_ops_misc / sizeof oi_ops_misc[0];
