/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of RngUniform / RngNormal giving the CPU's values for a key: element i is
 * one Philox-4x32-10 block of counter (i, 0, 0, 0) under the node's 64-bit key (composed from MLX
 * uint64 arithmetic: the 32x32 -> 64-bit products, xors, shifts), then the CPU's conversions
 * (24-bit uniform for f32/f16/bf16, 53-bit for f64; Box-Muller on two 53-bit uniforms). Uniform
 * values are bit-identical to the CPU's; normal ones agree to rounding (MLX's f64 log / cos). */
#include <math.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"
#include "backends/mlx/mlx_internal.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static uint64_t node_key(uint64_t key, const rlx_of32 *op_seed, uint64_t seed) {
  uint64_t k = key ^ ru_mix64(seed);
  if (op_seed->has) {
    uint32_t bits;
    memcpy(&bits, &op_seed->v, 4);
    k ^= ru_mix64((UINT64_C(1) << 32) | bits);
  }
  return k;
}

static rlxm_arr *u64(rlxm_scope *s, double v) { return rlxm_scalar(s, v, RLXM_U64); }

/* The four words of the Philox block of every element 0..count-1 (uint64 arrays holding 32-bit values). */
static void philox(rlxm_scope *s, size_t count, uint64_t key, rlxm_arr *w[4]) {
  rlxm_arr *mask = u64(s, 4294967295.0), *sh = u64(s, 32);
  rlxm_arr *c0 = rlxm_arange(s, 0, (double)count, 1, RLXM_U64),
           *zero = rlxm_full(s, 0, RLXM_U64, 1, (int64_t[]){(int64_t)count});
  rlxm_arr *c1 = zero, *c2 = zero, *c3 = zero;
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int round = 0; round < 10; round++) {
    if (round > 0) k0 += PHILOX_W0, k1 += PHILOX_W1;
    rlxm_arr *p0 = rlxm_binary(s, RLXM_MUL, c0, u64(s, PHILOX_M0)),
             *p1 = rlxm_binary(s, RLXM_MUL, c2, u64(s, PHILOX_M1));
    rlxm_arr *hi0 = rlxm_binary(s, RLXM_SHR, p0, sh), *lo0 = rlxm_binary(s, RLXM_BIT_AND, p0, mask);
    rlxm_arr *hi1 = rlxm_binary(s, RLXM_SHR, p1, sh), *lo1 = rlxm_binary(s, RLXM_BIT_AND, p1, mask);
    rlxm_arr *n0 = rlxm_binary(s, RLXM_BIT_XOR, rlxm_binary(s, RLXM_BIT_XOR, hi1, c1), u64(s, k0));
    rlxm_arr *n2 = rlxm_binary(s, RLXM_BIT_XOR, rlxm_binary(s, RLXM_BIT_XOR, hi0, c3), u64(s, k1));
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
  }
  w[0] = c0, w[1] = c1, w[2] = c2, w[3] = c3;
}

/* ((hi << 32) | lo) >> 11, times 2^-53, as f64. */
static rlxm_arr *u53(rlxm_scope *s, rlxm_arr *hi, rlxm_arr *lo) {
  rlxm_arr *bits =
      rlxm_binary(s, RLXM_SHR, rlxm_binary(s, RLXM_BIT_OR, rlxm_binary(s, RLXM_SHL, hi, u64(s, 32)), lo), u64(s, 11));
  return rlxm_binary(s, RLXM_MUL, rlxm_astype(s, bits, RLX_F64), rlxm_scalar(s, 0x1p-53, RLX_F64));
}

static rlxm_arr *shaped(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *flat) {
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < n->shape.rank; i++) d[i] = n->shape.dims[i];
  return rlxm_reshape(c->s, flat, n->shape.rank, d);
}

/* Largest value of dtype t below v, computed by the CPU's own rounding (a tiny host tensor). */
static double below_in(rlx_dtype t, double v) {
  if (t == RLX_F64) return nextafter(v, -INFINITY);
  if (t == RLX_F32) return nextafterf((float)v, -INFINITY);
  uint16_t h[1];
  ru_store(h, t, 0, v);
  bool neg = (h[0] & 0x8000u) != 0;
  if ((h[0] & 0x7fffu) == 0)
    h[0] = 0x8001u;
  else
    h[0] = (uint16_t)(neg ? h[0] + 1 : h[0] - 1);
  return rlx_elem_get(h, t, 0);
}

static rlx_status lower_RngUniform(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)in;
  const rlx_attrs_RngUniform *a = &n->attrs.RngUniform;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  rlxm_scope *s = c->s;
  size_t count = 0;
  if (!mlx_is_float(t) || !(a->low < a->high) || !isfinite(a->low) || !isfinite(a->high) ||
      rlx_shape_numel(&n->shape, &count) != RLX_OK || count == 0 || count > UINT32_MAX)
    return mlx_decline(c, "this case runs on the CPU kernel (it checks the attributes)");
  rlxm_arr *w[4];
  philox(s, count, node_key(a->key, &a->op_seed, c->rng_seed), w);
  rlxm_arr *u = t == RLX_F64
                    ? u53(s, w[0], w[1])
                    : rlxm_binary(s, RLXM_MUL, rlxm_astype(s, rlxm_binary(s, RLXM_SHR, w[0], u64(s, 8)), RLX_F64),
                                  rlxm_scalar(s, 0x1p-24, RLX_F64));
  double low = a->low, high = a->high;
  rlxm_arr *v = rlxm_binary(s, RLXM_ADD, rlxm_scalar(s, low, RLX_F64),
                            rlxm_binary(s, RLXM_MUL, rlxm_scalar(s, high - low, RLX_F64), u));
  v = rlxm_astype(s, v, t);
  /* the interval is half-open: a value rounded up to `high` becomes the next value below it */
  v = rlxm_where(s, rlxm_binary(s, RLXM_GE, v, rlxm_scalar(s, high, t)), rlxm_scalar(s, below_in(t, high), t), v);
  return mlx_check(c, shaped(c, n, v), out);
}

static rlx_status lower_RngNormal(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)in;
  const rlx_attrs_RngNormal *a = &n->attrs.RngNormal;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  rlxm_scope *s = c->s;
  size_t count = 0;
  if (!mlx_is_float(t) || rlx_shape_numel(&n->shape, &count) != RLX_OK || count == 0 || count > UINT32_MAX)
    return mlx_decline(c, "this case runs on the CPU kernel");
  rlxm_arr *w[4];
  philox(s, count, node_key(a->key, &a->op_seed, c->rng_seed), w);
  rlxm_arr *u1 = u53(s, w[0], w[1]), *u2 = u53(s, w[2], w[3]);
  rlxm_arr *r =
      rlxm_unary(s, RLXM_SQRT,
                 rlxm_binary(s, RLXM_MUL, rlxm_scalar(s, -2.0, RLX_F64),
                             rlxm_unary(s, RLXM_LOG, rlxm_binary(s, RLXM_SUB, rlxm_scalar(s, 1.0, RLX_F64), u1))));
  rlxm_arr *z = rlxm_binary(
      s, RLXM_MUL, r,
      rlxm_unary(s, RLXM_COS, rlxm_binary(s, RLXM_MUL, rlxm_scalar(s, 6.283185307179586476925286766559, RLX_F64), u2)));
  rlxm_arr *v = rlxm_binary(s, RLXM_ADD, rlxm_scalar(s, a->mean, RLX_F64),
                            rlxm_binary(s, RLXM_MUL, rlxm_scalar(s, a->scale, RLX_F64), z));
  return mlx_check(c, shaped(c, n, rlxm_astype(s, v, t)), out);
}

const mlx_lower_fn mlx_lower_random[RLX_OP_COUNT] = {
    [RLX_OP_RngUniform] = lower_RngUniform,
    [RLX_OP_RngNormal] = lower_RngNormal,
};
