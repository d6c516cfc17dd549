/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Inlining a body graph (If/While/Scan/CustomFn) into another graph. Body Inputs bind
 * positionally (in node order) to the arguments, body Params bind by name to the destination's
 * Params (created when missing), everything else is copied. When an argument's shape is more
 * specific than the body Input it binds (a static extent for a symbol), the copied nodes get their
 * shapes inferred again from the actual operands. */
#include <string.h>

#include "passes/decompose/decompose.h"

static bool dims_bindable(const rlx_shape *arg, const rlx_shape *param) {
  if (rlx_shape_compatible(arg, param)) return true;
  if (arg->dtype != param->dtype || arg->rank != param->rank) return false;
  for (uint32_t i = 0; i < arg->rank; i++)
    if (param->dims[i] >= 0 && arg->dims[i] != param->dims[i]) return false;
  return true;
}

rlx_status rlx_inline_graph(rlx_graph *dst, const rlx_graph *body, const rlx_id *args, uint32_t n_args, rlx_id *outs,
                            uint32_t n_outs) {
  if (!dst || !body || (n_args && !args) || (n_outs && !outs))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_inline_graph: NULL argument");
  uint32_t nn = rlx_graph_node_count(body), n_inputs = 0;
  for (uint32_t i = 0; i < nn; i++)
    if (rlx_graph_node(body, i)->op == RLX_OP_Input) n_inputs++;
  if (n_inputs != n_args)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "inlining body @%s: it has %u Input nodes but %u arguments were given",
                      rlx_graph_name(body), n_inputs, n_args);
  if (n_outs > rlx_graph_output_count(body))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "inlining body @%s: %u outputs requested but the body has %u",
                      rlx_graph_name(body), n_outs, rlx_graph_output_count(body));
  for (uint32_t i = 0; i < n_args; i++)
    if (!rlx_graph_node(dst, args[i]))
      return rlx_errorf(RLX_ERR_INVALID_ARG, "inlining body @%s: argument %u (%%%u) does not exist in @%s",
                        rlx_graph_name(body), i, args[i], rlx_graph_name(dst));

  const rlx_allocator *al = rlx_graph_allocator(dst);
  rlx_id *map = al->alloc(al->ctx, (size_t)(nn ? nn : 1) * sizeof *map);
  rlx_id *tmp = NULL;
  uint32_t tmp_cap = 0;
  if (!map) return rlx_errorf(RLX_ERR_OOM, "out of memory while inlining body @%s", rlx_graph_name(body));

  rlx_status s = RLX_OK;
  bool reinfer = false;
  uint32_t arg = 0;
  for (uint32_t id = 0; id < nn && !s; id++) {
    const rlx_node *n = rlx_graph_node(body, id);
    if (n->op == RLX_OP_Input) {
      const rlx_shape *have = &rlx_graph_node(dst, args[arg])->shape;
      if (!dims_bindable(have, &n->shape)) {
        char a[128], b[128];
        rlx_shape_format(have, a, sizeof a);
        rlx_shape_format(&n->shape, b, sizeof b);
        s = rlx_errorf(RLX_ERR_SHAPE, "inlining body @%s: argument %u has shape %s but body input \"%s\" is %s",
                       rlx_graph_name(body), arg, a, n->attrs.Input.name ? n->attrs.Input.name : "", b);
        break;
      }
      if (!rlx_shape_equal(have, &n->shape)) reinfer = true;
      map[id] = args[arg++];
      continue;
    }
    if (n->op == RLX_OP_Param) {
      const char *name = n->attrs.Param.name;
      rlx_id p = name ? rlx_graph_find_leaf(dst, RLX_OP_Param, name) : RLX_NO_ID;
      if (p == RLX_NO_ID) {
        s = rlx_param(dst, name, n->shape, &map[id]);
      } else if (!rlx_shape_equal(&rlx_graph_node(dst, p)->shape, &n->shape)) {
        char a[128], b[128];
        rlx_shape_format(&rlx_graph_node(dst, p)->shape, a, sizeof a);
        rlx_shape_format(&n->shape, b, sizeof b);
        s = rlx_errorf(RLX_ERR_SHAPE, "inlining body @%s: Param \"%s\" is %s there but %s in @%s", rlx_graph_name(body),
                       name, b, a, rlx_graph_name(dst));
      } else {
        map[id] = p;
      }
      continue;
    }
    if (n->n_inputs > tmp_cap) {
      al->free(al->ctx, tmp);
      tmp_cap = n->n_inputs;
      tmp = al->alloc(al->ctx, tmp_cap * sizeof *tmp);
      if (!tmp) {
        s = rlx_errorf(RLX_ERR_OOM, "out of memory while inlining body @%s", rlx_graph_name(body));
        break;
      }
    }
    for (uint32_t i = 0; i < n->n_inputs; i++) {
      if (n->inputs[i] >= id) {
        s = rlx_errorf(RLX_ERR_VERIFY, "inlining body @%s: %%%u uses %%%u, which is not defined before it",
                       rlx_graph_name(body), id, n->inputs[i]);
        break;
      }
      tmp[i] = map[n->inputs[i]];
    }
    if (!s) s = rlx_pass_copy_node(dst, n, tmp, reinfer, &map[id]);
    if (s) s = rlx_error_context(s, "inlining body @%s, node %%%u", rlx_graph_name(body), id);
  }
  if (!s) {
    const rlx_id *bo = rlx_graph_outputs(body);
    for (uint32_t i = 0; i < n_outs; i++) outs[i] = map[bo[i]];
  }
  al->free(al->ctx, tmp);
  al->free(al->ctx, map);
  return s;
}
