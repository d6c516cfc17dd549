/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The document's stated errors for the backward family, and FakeQuantize:
 * - FakeQuantize: Fixed lowers natively, PerBatch through its shared decomposition; scale_mode
 *   EMA is a compile error naming the node (the document: "EMA returns a clear error"). The EMA
 *   scale is running state that the IR returns nowhere but the node's value, so the backend does
 *   not emulate it (the CPU backend computes it).
 * - Conv2dBackwardInput / Conv2dBackwardWeight: groups = 1 lowers natively as MLX's vjp of
 *   conv_general (lower_nn.c); groups > 1 is a compile error naming the node (the
 *   document: "currently groups=1 only; grouped conv backward will surface as a clear error"). */
#include "backends/mlx/mlx_internal.h"

/* Fixed (ir-special §1.4): s = max(state, 1e-12), out = clamp(round(x / s), -qmax, qmax) * s. */
static rlx_status lower_FakeQuantize(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  rlxm_scope *s = c->s;
  if (a->scale_mode == RLX_SCALE_MODE_EMA)
    return mlx_node_error(c, "FakeQuantize with scale_mode EMA is not supported on the MLX backend (its running scale "
                             "is state the backend does not keep); use scale_mode Fixed with a scale operand or "
                             "PerBatch, or compile this graph for the cpu backend");
  if (a->scale_mode != RLX_SCALE_MODE_FIXED || n->n_inputs != 2)
    return mlx_decline(c, "PerBatch: lowered through its shared decomposition");
  double qmax = a->bits == 8 ? 127.0 : a->bits == 4 ? 7.0 : a->bits == 2 ? 1.0 : 0.0;
  if (qmax == 0.0) return mlx_node_error(c, "attribute bits is %lld; use 8, 4 or 2", (long long)a->bits);
  int t = rlxm_dtype(in[0]);
  if (t < 0 || !mlx_is_float((rlx_dtype)t)) return mlx_decline(c, "non-float FakeQuantize");
  rlxm_arr *sc = rlxm_binary(s, RLXM_MAX, rlxm_astype(s, in[1], t), rlxm_scalar(s, 1e-12, t));
  rlxm_arr *q = rlxm_unary(s, RLXM_ROUND, rlxm_binary(s, RLXM_DIV, in[0], sc));
  q = rlxm_binary(s, RLXM_MIN, rlxm_binary(s, RLXM_MAX, q, rlxm_scalar(s, -qmax, t)), rlxm_scalar(s, qmax, t));
  return mlx_check(c, rlxm_astype(s, rlxm_binary(s, RLXM_MUL, q, sc), n->shape.dtype), out);
}

/* groups = 1: MLX's vjp of conv_general (lower_nn.c). */
static rlx_status conv_backward_groups(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out,
                                       int64_t groups) {
  if (groups != 1)
    return mlx_node_error(c,
                          "%s with groups = %lld: the MLX backend computes convolution backward for groups = 1 only "
                          "(a grouped convolution backward is not supported); compile the gradient graph for the cpu "
                          "backend, or split the grouped convolution into groups = 1 convolutions and Concat",
                          rlx_op_name(n->op), (long long)groups);
  return mlx_lower_conv2d_backward(c, n, in, out);
}
static rlx_status lower_Conv2dBackwardInput(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return conv_backward_groups(c, n, in, out, n->attrs.Conv2dBackwardInput.groups);
}
static rlx_status lower_Conv2dBackwardWeight(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return conv_backward_groups(c, n, in, out, n->attrs.Conv2dBackwardWeight.groups);
}

/* While: bounded unroll with an active mask (the shared decomposition: max_iterations times
 * { active &= cond(carried); carried = where(active, body(carried), carried) }). Without
 * max_iterations there is no bound to unroll to: a compile error naming the node. */
static rlx_status lower_While(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)in;
  (void)out;
  if (!n->attrs.While.max_iterations.has)
    return mlx_node_error(c, "While without max_iterations: the MLX backend unrolls While up to max_iterations "
                             "with an active mask; set max_iterations to a bound on the trip count, or compile "
                             "this graph for the cpu backend");
  return mlx_decline(c, "unrolled %lld times through its shared decomposition",
                     (long long)n->attrs.While.max_iterations.v);
}

const mlx_lower_fn mlx_lower_backward[RLX_OP_COUNT] = {
    [RLX_OP_FakeQuantize] = lower_FakeQuantize,
    [RLX_OP_Conv2dBackwardInput] = lower_Conv2dBackwardInput,
    [RLX_OP_Conv2dBackwardWeight] = lower_Conv2dBackwardWeight,
    [RLX_OP_While] = lower_While,
};
