/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "backends/cpu/ref/body_util.h"

void rlx_ref_body_outs_free(body_outs *o) {
  for (uint32_t i = 0; o->t && i < o->n; i++) free(o->t[i].data);
  free(o->t);
  o->t = NULL;
  o->n = 0;
}

rlx_status rlx_ref_body_outs_alloc(const rlx_node *n, const rlx_graph *body, const char *attr, uint32_t want,
                                   body_outs *o) {
  o->t = NULL;
  o->n = 0;
  if (!body) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s: no body graph", attr);
  uint32_t count = rlx_graph_output_count(body);
  if (want == 0 && count == 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s: body '%s' has no outputs", attr, rlx_graph_name(body));
  if (want != 0 && count != want)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute %s: body '%s' has %u outputs; expected %u", attr,
                    rlx_graph_name(body), count, want);
  RLX_TRY(rb_calloc(n, count, sizeof *o->t, &o->t));
  o->n = count;
  const rlx_id *ids = rlx_graph_outputs(body);
  for (uint32_t i = 0; i < count; i++) {
    const rlx_node *bn = rlx_graph_node(body, ids[i]);
    size_t bytes;
    if (!bn || rlx_shape_nbytes(&bn->shape, &bytes) != RLX_OK) {
      rlx_ref_body_outs_free(o);
      return ru_error(RLX_ERR_UNSUPPORTED, n, "attribute %s: output %u of body '%s' has no static shape", attr, i,
                      rlx_graph_name(body));
    }
    o->t[i].shape = bn->shape;
    rlx_status s = rb_alloc(n, bytes, 1, &o->t[i].data);
    if (s != RLX_OK) {
      rlx_ref_body_outs_free(o);
      return s;
    }
  }
  return RLX_OK;
}

rlx_status rlx_ref_body_run(const rlx_node *n, rlx_cpu_ctx *ctx, const rlx_graph *body, const char *attr,
                            const rlx_tensor *args, uint32_t n_args, body_outs *o) {
  if (!ctx || !ctx->run_body)
    return ru_error(RLX_ERR_INTERNAL, n, "the executor provides no run_body for attribute %s", attr);
  rlx_status s = ctx->run_body(ctx, body, args, n_args, o->t, o->n);
  if (s != RLX_OK)
    return rlx_error_context(s, "%s node%s%s%s: attribute %s", rlx_op_name(n->op), n->name ? " '" : "",
                             n->name ? n->name : "", n->name ? "'" : "", attr);
  return RLX_OK;
}
