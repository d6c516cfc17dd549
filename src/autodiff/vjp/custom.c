/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rule of the Custom op kind: the VJP builder registered with the op (include/rlx/custom.h)
 * emits the operand gradients into the gradient graph. An op registered without one, or not
 * registered at all, is an error naming it (never a silent zero). Every gradient the builder
 * returns must have exactly its operand's shape. (CustomFn's rule lives in vjp/control.c.) */
#include <stdio.h>

#include "autodiff/ad_internal.h"
#include "rlx/custom.h"

RLX_VJP_DECL(Custom) {
  const rlx_attrs_Custom *a = &n->attrs.Custom;
  rlx_custom_op_desc d;
  if (!rlx_custom_lookup(a->name, &d))
    return ad_unsupported(c, "custom op \"%s\" is not registered (rlx_custom_register), so it has no gradient",
                          a->name);
  if (!d.vjp) return ad_unsupported(c, "custom op \"%s\" was registered without a VJP builder", a->name);
  for (uint32_t i = 0; i < n->n_inputs; i++) dx[i] = RLX_NO_ID;
  RLX_TRY(d.vjp(c->dst, x, n->n_inputs, y, dy, c->want, a->attrs.p, a->attrs.n, d.user, dx));
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    if (dx[i] == RLX_NO_ID) continue;
    if (!c->want[i]) {
      dx[i] = RLX_NO_ID;
      continue;
    }
    rlx_shape g = ad_shape(c, dx[i]), want = ad_shape(c, x[i]);
    if (!rlx_shape_equal(&g, &want)) {
      char gs[128], ws[128];
      rlx_shape_format(&g, gs, sizeof gs);
      rlx_shape_format(&want, ws, sizeof ws);
      return ad_unsupported(c,
                            "the VJP builder of custom op \"%s\" gave operand %u a gradient of shape %s; the operand "
                            "has shape %s",
                            a->name, i, gs, ws);
    }
  }
  return RLX_OK;
}
