/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of Quantize / Dequantize (ir-special §1.4, the CPU kernels' arithmetic):
 *   Quantize   q = clamp(round_half_away(x * (1 / s[c])) + zp[c], -128, 127) as i8, NaN -> zp[c]
 *   Dequantize y = (q - zp[c]) * s[c]
 *   QMatMul    y = clamp(round_half_away((sum_k (x - x_zp)(w - w_zp) + bias) * mult) + out_zp) as i8
 * with one scale (and zero point) per tensor or per channel along `axis`, computed in f64 like the
 * CPU (MLX's f64 multiply / floor are exact IEEE; the int8 products summed by dgemm are integers
 * below 2^53, so the accumulation is exact) and rounded once. */
#include "backends/mlx/mlx_internal.h"

/* A per-channel constant along `axis` of a rank-r value (or a scalar when there is one value). */
static rlxm_arr *chan_const(mlx_lower_ctx *c, const double *v, uint32_t n, uint32_t r, uint32_t axis) {
  rlxm_scope *s = c->s;
  if (n == 1) return rlxm_scalar(s, v[0], RLX_F64);
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) d[i] = i == axis ? (int64_t)n : 1;
  return rlxm_from_host(s, v, RLX_F64, r, d);
}

/* The channel axis and the scales / zero points as f64 per-channel constants; false to decline. */
static bool qparams(mlx_lower_ctx *c, rlxm_arr *x, int64_t axis, const rlx_flist *sc, const rlx_ilist *zp,
                    rlxm_arr **scale, rlxm_arr **zero) {
  uint32_t r = rlxm_rank(x), ax = 0;
  if (sc->n == 0 || sc->n > 4096 || (zp->n > 1 && zp->n != sc->n)) return false;
  if (sc->n > 1 && (!rlx_norm_axis(axis, r, &ax) || rlxm_dim(x, ax) != (int64_t)sc->n)) return false;
  double sv[4096], zv[4096];
  for (uint32_t i = 0; i < sc->n; i++) {
    sv[i] = (double)sc->v[i];
    zv[i] = zp->n == 0 ? 0.0 : (double)zp->v[zp->n == 1 ? 0 : i];
  }
  *scale = chan_const(c, sv, sc->n, r, ax);
  *zero = chan_const(c, zv, sc->n, r, ax);
  return *scale && *zero;
}

/* round half away from zero: sign(v) * floor(|v| + 0.5) */
static rlxm_arr *round_away(rlxm_scope *s, rlxm_arr *v) {
  return rlxm_binary(
      s, RLXM_MUL, rlxm_unary(s, RLXM_SIGN, v),
      rlxm_unary(s, RLXM_FLOOR, rlxm_binary(s, RLXM_ADD, rlxm_unary(s, RLXM_ABS, v), rlxm_scalar(s, 0.5, RLX_F64))));
}

static rlx_status lower_QMatMul(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_QMatMul *a = &n->attrs.QMatMul;
  rlxm_scope *s = c->s;
  if (rlxm_dtype(in[0]) != RLX_I8 || rlxm_dtype(in[1]) != RLX_I8 || rlxm_dtype(in[2]) != RLX_I32 ||
      rlxm_rank(in[0]) != 2 || rlxm_rank(in[1]) != 2 || rlxm_rank(in[2]) != 1 ||
      rlxm_dim(in[0], 1) != rlxm_dim(in[1], 0) || rlxm_dim(in[2], 0) != rlxm_dim(in[1], 1))
    return mlx_decline(c, "operands: the CPU kernel checks them");
  rlxm_arr *x = rlxm_binary(s, RLXM_SUB, rlxm_astype(s, in[0], RLX_F64), rlxm_scalar(s, (double)a->x_zp, RLX_F64));
  rlxm_arr *w = rlxm_binary(s, RLXM_SUB, rlxm_astype(s, in[1], RLX_F64), rlxm_scalar(s, (double)a->w_zp, RLX_F64));
  rlxm_arr *acc = rlxm_binary(s, RLXM_ADD, rlxm_matmul(s, x, w), rlxm_astype(s, in[2], RLX_F64));
  rlxm_arr *v =
      rlxm_binary(s, RLXM_ADD, round_away(s, rlxm_binary(s, RLXM_MUL, acc, rlxm_scalar(s, (double)a->mult, RLX_F64))),
                  rlxm_scalar(s, (double)a->out_zp, RLX_F64));
  v = rlxm_binary(s, RLXM_MIN, rlxm_binary(s, RLXM_MAX, v, rlxm_scalar(s, -128.0, RLX_F64)),
                  rlxm_scalar(s, 127.0, RLX_F64));
  return mlx_check(c, rlxm_astype(s, v, RLX_I8), out);
}

static rlx_status lower_Quantize(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Quantize *a = &n->attrs.Quantize;
  rlxm_scope *s = c->s;
  int t = rlxm_dtype(in[0]);
  rlxm_arr *scale, *zero;
  if (t < 0 || !mlx_is_float((rlx_dtype)t) || n->shape.dtype != RLX_I8 ||
      !qparams(c, in[0], a->axis, &a->scales, &a->zero_points, &scale, &zero))
    return mlx_decline(c, "this case runs on the CPU kernel (it checks the attributes)");
  rlxm_arr *x = rlxm_astype(s, in[0], RLX_F64);
  rlxm_arr *v = rlxm_binary(s, RLXM_MUL, x, rlxm_binary(s, RLXM_DIV, rlxm_scalar(s, 1.0, RLX_F64), scale));
  rlxm_arr *rv = rlxm_binary(s, RLXM_ADD, round_away(s, v), zero);
  rv = rlxm_where(s, rlxm_unary(s, RLXM_ISNAN, x), zero, rv);
  rv = rlxm_binary(s, RLXM_MIN, rlxm_binary(s, RLXM_MAX, rv, rlxm_scalar(s, -128.0, RLX_F64)),
                   rlxm_scalar(s, 127.0, RLX_F64));
  return mlx_check(c, rlxm_astype(s, rv, RLX_I8), out);
}

static rlx_status lower_Dequantize(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Dequantize *a = &n->attrs.Dequantize;
  rlxm_scope *s = c->s;
  rlxm_arr *scale, *zero;
  if (rlxm_dtype(in[0]) != RLX_I8 || !mlx_is_float((rlx_dtype)n->shape.dtype) ||
      !qparams(c, in[0], a->axis, &a->scales, &a->zero_points, &scale, &zero))
    return mlx_decline(c, "this case runs on the CPU kernel (it checks the attributes)");
  rlxm_arr *y = rlxm_binary(s, RLXM_MUL, rlxm_binary(s, RLXM_SUB, rlxm_astype(s, in[0], RLX_F64), zero), scale);
  return mlx_check(c, rlxm_astype(s, y, n->shape.dtype), out);
}

const mlx_lower_fn mlx_lower_quant[RLX_OP_COUNT] = {
    [RLX_OP_Quantize] = lower_Quantize,
    [RLX_OP_Dequantize] = lower_Dequantize,
    [RLX_OP_QMatMul] = lower_QMatMul,
};
