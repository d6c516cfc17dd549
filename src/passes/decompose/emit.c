/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Emit helpers for the decompositions: constants of any dtype, elementwise and shape ops written
 * through the typed builders (so every emitted node has an inferred, checked shape). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "passes/decompose/decompose.h"
#include "core/elem.h"

rlx_shape dc_shape(const rlx_graph *g, rlx_id x) { return rlx_graph_node(g, x)->shape; }

bool dc_all_static(const rlx_shape *s) { return rlx_shape_is_static(s); }

rlx_status dc_unsupported(const rlx_node *n, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  (void)n;
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "cannot be decomposed: %s", msg);
}

rlx_status dc_axis(const rlx_node *n, const char *attr, int64_t axis, uint32_t rank, uint32_t *out) {
  if (!rlx_norm_axis(axis, rank, out))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: attribute %s is %lld, out of range for rank %u", rlx_op_name(n->op),
                      attr, (long long)axis, rank);
  return RLX_OK;
}

rlx_status dc_channel_vector(rlx_graph *g, rlx_id v, uint32_t trailing, rlx_id *out) {
  rlx_shape s = dc_shape(g, v);
  rlx_dim w = 1;
  for (uint32_t i = 0; i < s.rank; i++)
    if (s.dims[i] != 1) w = s.dims[i];
  if (1u + trailing > RLX_MAX_RANK) return rlx_errorf(RLX_ERR_UNSUPPORTED, "channel vector rank too large");
  rlx_dim d[RLX_MAX_RANK];
  d[0] = w;
  for (uint32_t i = 0; i < trailing; i++) d[1 + i] = 1;
  return rlx_reshape_dims(g, v, 1u + trailing, d, out);
}
