/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: random tensors (spec ir-core §10.9).
 *
 * Element i of the output is a pure function of (key, i): one Philox-4x32-10 block with counter
 * (i low word, i high word, 0, 0) under the 64-bit key
 *     key = attribute key ^ mix64(compile seed) ^ (op_seed set ? mix64(2^32 | bits(op_seed)) : 0)
 * (mix64 = the splitmix64 finaliser, mix64(0) = 0, so a zero compile seed leaves the key as is).
 * Results are therefore deterministic and independent of threading or evaluation order. */
#include <math.h>
#include <string.h>

#include "backends/cpu/ref/ref_util.h"

static uint64_t rng_key(uint64_t key, const rlx_of32 *op_seed, const rlx_cpu_ctx *ctx) {
  uint64_t k = key ^ ru_mix64(ctx ? ctx->rng_seed : 0);
  if (op_seed->has) {
    uint32_t bits;
    memcpy(&bits, &op_seed->v, 4);
    k ^= ru_mix64((UINT64_C(1) << 32) | bits);
  }
  return k;
}

/* Random tensors are floating point; the optional operand only supplies the shape. */
static rlx_status rng_prologue(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_tensor *out) {
  RLX_TRY(ru_prologue(n, in, n_in, 0, 1, out));
  if (!rlx_dtype_is_float(ru_dt(out)))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "the output dtype is %s; random tensors are f32, f64, f16 or bf16",
                    rlx_dtype_name(ru_dt(out)));
  return RLX_OK;
}

/* Largest value of dtype t strictly below v (v finite, representable in t). */
static double below(rlx_dtype t, double v) {
  switch (t) {
  case RLX_F64: return nextafter(v, -INFINITY);
  case RLX_F32: return nextafterf((float)v, -INFINITY);
  default: {
    uint16_t h[1];
    ru_store(h, t, 0, v);
    /* Half formats: step the bit pattern one unit toward -inf. */
    bool neg = (h[0] & 0x8000u) != 0;
    if ((h[0] & 0x7fffu) == 0)
      h[0] = 0x8001u; /* +-0 -> smallest negative subnormal */
    else
      h[0] = (uint16_t)(neg ? h[0] + 1 : h[0] - 1);
    return rlx_elem_get(h, t, 0);
  }
  }
}

RLX_CPU_KERNEL(RngUniform) {
  RLX_TRY(rng_prologue(n, in, n_in, out));
  const rlx_attrs_RngUniform *a = &n->attrs.RngUniform;
  double low = a->low, high = a->high;
  if (!(low < high) || !isfinite(low) || !isfinite(high))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes low %g and high %g must be finite with low < high", low, high);
  rlx_dtype t = ru_dt(out);
  uint64_t key = rng_key(a->key, &a->op_seed, ctx);
  size_t count = rlx_tensor_numel(out);
  for (size_t i = 0; i < count; i++) {
    uint32_t w[4];
    ru_rng_block(key, i, 0, w);
    double u = t == RLX_F64 ? ru_u53(w[0], w[1]) : ru_u24(w[0]);
    ru_store(out->data, t, i, low + (high - low) * u);
    /* Rounding to the dtype can reach `high`; the interval is half-open. */
    if (rlx_elem_get(out->data, t, i) >= high) ru_store(out->data, t, i, below(t, high));
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(RngNormal) {
  RLX_TRY(rng_prologue(n, in, n_in, out));
  const rlx_attrs_RngNormal *a = &n->attrs.RngNormal;
  rlx_dtype t = ru_dt(out);
  uint64_t key = rng_key(a->key, &a->op_seed, ctx);
  size_t count = rlx_tensor_numel(out);
  const double two_pi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < count; i++) {
    uint32_t w[4];
    ru_rng_block(key, i, 0, w);
    /* Box-Muller on two 53-bit uniforms; 1 - u1 is in (0, 1], so the log is finite. */
    double u1 = ru_u53(w[0], w[1]), u2 = ru_u53(w[2], w[3]);
    double z = sqrt(-2.0 * log(1.0 - u1)) * cos(two_pi * u2);
    ru_store(out->data, t, i, (double)a->mean + (double)a->scale * z);
  }
  return RLX_OK;
}
