/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: the elementwise backward ops ReluBackward and ActivationBackward
 * (spec ir-special §8, forward definitions in ir-core §8.1).
 *
 * Both take [x, dy] of one shape and dtype and return dx = dy * f'(x), computed in double and
 * rounded once to the output dtype. Three kinds select instead of multiplying, so that their
 * "0" is exactly zero even where dy is infinite or NaN:
 *   Relu    dx = x > 0 ? dy : 0          (NaN x gives 0)
 *   Sqrt    dx = sqrt(x) <= 0 ? 0 : dy * 0.5 / sqrt(x)
 *   Rsqrt   dx = sqrt(x) <= 0 ? 0 : dy * -0.5 / (x * sqrt(x))
 * (for x < 0, sqrt(x) is NaN, the comparison is false, and NaN propagates like the forward's).
 * Every other kind multiplies dy by the derivative below; kinds whose derivative is zero almost
 * everywhere (Floor, Ceil, Sign) multiply by 0, so a NaN or infinite dy gives NaN there. Round is
 * the straight-through estimator (derivative 1). ReluBackward also accepts integer dtypes (exact). */
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

static double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}

static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* f'(x) of the multiplying kinds. */
static double act_derivative(rlx_act k, double x) {
  const double inv_sqrt_2pi = 0.39894228040143267794, two_over_sqrt_pi = 1.12837916709551257390;
  switch (k) {
  case RLX_ACT_GELU: /* Phi(x) + x * phi(x) */
    return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * inv_sqrt_2pi * exp(-0.5 * x * x);
  case RLX_ACT_GELU_APPROX: {
    const double c = 0.79788456080286535588, a = 0.044715; /* sqrt(2 / pi) */
    double t = tanh(c * (x + a * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * a * x * x);
  }
  case RLX_ACT_SILU: {
    double s = sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
  }
  case RLX_ACT_SIGMOID: {
    double s = sigmoid(x);
    return s * (1.0 - s);
  }
  case RLX_ACT_TANH: {
    double t = tanh(x);
    return 1.0 - t * t;
  }
  case RLX_ACT_EXP: return exp(x);
  case RLX_ACT_LOG: return 1.0 / x;
  case RLX_ACT_NEG: return -1.0;
  case RLX_ACT_ABS: return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; /* sign; 0 at 0; NaN stays */
  case RLX_ACT_SIN: return cos(x);
  case RLX_ACT_COS: return -sin(x);
  case RLX_ACT_TAN: {
    double t = tan(x);
    return 1.0 + t * t;
  }
  case RLX_ACT_ATAN: return 1.0 / (1.0 + x * x);
  case RLX_ACT_RECIP: return -1.0 / (x * x);
  case RLX_ACT_ROUND: return 1.0;
  case RLX_ACT_FLOOR:
  case RLX_ACT_CEIL:
  case RLX_ACT_SIGN: return 0.0;
  case RLX_ACT_SOFTPLUS: return sigmoid(x);
  case RLX_ACT_ELU: return x > 0 ? 1.0 : exp(x);
  case RLX_ACT_ERF: return two_over_sqrt_pi * exp(-x * x);
  case RLX_ACT_HARD_SWISH: return x < -3.0 ? 0.0 : x <= 3.0 ? (2.0 * x + 3.0) / 6.0 : 1.0;
  case RLX_ACT_HARD_SIGMOID: return x > -3.0 && x < 3.0 ? 1.0 / 6.0 : 0.0;
  case RLX_ACT_MISH: {
    double t = tanh(softplus(x));
    return t + x * (1.0 - t * t) * sigmoid(x);
  }
  case RLX_ACT_SOFTSIGN: {
    double d = 1.0 + fabs(x);
    return 1.0 / (d * d);
  }
  case RLX_ACT_LOG_SIGMOID: return sigmoid(-x);
  default: return NAN; /* Relu, Sqrt, Rsqrt are handled by act_backward */
  }
}

/* dx for one element. */
static double act_backward(rlx_act k, double x, double dy) {
  switch (k) {
  case RLX_ACT_RELU: return x > 0 ? dy : 0.0;
  case RLX_ACT_SQRT: {
    double s = sqrt(x);
    return s <= 0 ? 0.0 : dy * 0.5 / s;
  }
  case RLX_ACT_RSQRT: {
    double s = sqrt(x);
    return s <= 0 ? 0.0 : dy * -0.5 / (x * s);
  }
  default: return dy * act_derivative(k, x);
  }
}

/* [x, dy] of equal dims and the output's dtype. */
static rlx_status need_x_dy(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_tensor *out) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  RLX_TRY(ru_need_dtype(n, in, 1, t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (in[1].shape.rank != x->rank || memcmp(in[1].shape.dims, x->dims, x->rank * sizeof x->dims[0]) != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (dy) has shape %s; it must equal operand 0 (x) %s",
                    ru_fmt(&in[1].shape), ru_fmt(x));
  return RLX_OK;
}

RLX_CPU_KERNEL(ReluBackward) {
  (void)ctx;
  RLX_TRY(need_x_dy(n, in, n_in, out));
  rlx_dtype t = ru_dt(out);
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (x) has dtype %s; ReluBackward needs a real dtype",
                    rlx_dtype_name(t));
  size_t count = rlx_tensor_numel(out);
  for (size_t i = 0; i < count; i++) {
    if (rlx_dtype_is_int(t)) {
      bool pos = rlx_elem_get_i64(in[0].data, t, i) > 0;
      ru_store_i64(out->data, t, i, pos ? rlx_elem_get_i64(in[1].data, t, i) : 0);
    } else {
      double x = rlx_elem_get(in[0].data, t, i), dy = rlx_elem_get(in[1].data, t, i);
      ru_store(out->data, t, i, act_backward(RLX_ACT_RELU, x, dy));
    }
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(ActivationBackward) {
  (void)ctx;
  RLX_TRY(need_x_dy(n, in, n_in, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  int k = n->attrs.ActivationBackward.kind;
  if (k < 0 || k >= RLX_ACT_COUNT)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute kind: %d is not an Activation", k);
  rlx_dtype t = ru_dt(out);
  size_t count = rlx_tensor_numel(out);
  for (size_t i = 0; i < count; i++) {
    double x = rlx_elem_get(in[0].data, t, i), dy = rlx_elem_get(in[1].data, t, i);
    ru_store(out->data, t, i, act_backward((rlx_act)k, x, dy));
  }
  return RLX_OK;
}
