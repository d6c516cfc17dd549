/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* FakeQuantize: Fixed lowers natively, PerBatch through its shared decomposition, EMA on the CPU
 * kernel (host-evaluated). The document has the reference system reject EMA with a compile error;
 * here the CPU kernel computes it (the node's value; the IR returns the updated scale nowhere
 * else), and the EMA conformance cases pass. Without a CPU kernel EMA would fail to compile,
 * naming the node.
 * (The document also says a grouped convolution backward is a compile error; here it is not: the
 * shared decomposition of Conv2dBackwardInput / Conv2dBackwardWeight handles groups and lowers
 * natively onto conv_general, and the conformance cases with groups = 2 pass.) */
#include "backends/mlx/mlx_internal.h"

/* Fixed (ir-special §1.4): s = max(state, 1e-12), out = clamp(round(x / s), -qmax, qmax) * s. */
static rlx_status lower_FakeQuantize(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  rlxm_scope *s = c->s;
  if (a->scale_mode == RLX_SCALE_MODE_EMA)
    return mlx_decline(c, "FakeQuantize with scale_mode EMA runs on the CPU kernel");
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

const mlx_lower_fn mlx_lower_backward[RLX_OP_COUNT] = {
    [RLX_OP_FakeQuantize] = lower_FakeQuantize,
};
