/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernel of the Custom op kind (spec ir-special §7): looks up the kernel registered
 * for backend "cpu" under the node's name (include/rlx/custom.h) and calls it on the host tensors
 * with the node's attribute bytes. The CPU backend checks at compile time that every Custom node
 * has such a kernel (rlx_cpu_check_custom), so a missing one is a compile error naming the op;
 * the lookup here repeats the check in case the op was unregistered since. CustomFn has no kernel:
 * its forward body is inlined by the shared decomposition. */
#include "backends/cpu/ref/ref_util.h"
#include "rlx/custom.h"

rlx_status rlx_cpu_check_custom(const rlx_node *n) {
  rlx_custom_fn_ptr fn;
  return rlx_custom_find_kernel(n->attrs.Custom.name, "cpu", &fn, NULL);
}

RLX_CPU_KERNEL(Custom) {
  (void)ctx;
  const rlx_attrs_Custom *a = &n->attrs.Custom;
  rlx_custom_fn_ptr fn;
  void *user;
  rlx_status s = rlx_custom_find_kernel(a->name, "cpu", &fn, &user);
  if (s != RLX_OK) return s;
  /* the user's kernel reports its own errors (rlx_errorf) */
  return ((rlx_custom_cpu_kernel_fn)fn)(in, n_in, out, a->attrs.p, a->attrs.n, user);
}
