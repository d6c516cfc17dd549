/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: the extension surface (spec ir-special §7).
 * Custom: the registered extension's shape rule (include/rlx/custom.h) gives the shape; an op that
 * is not registered here, or has no rule, keeps its declared shape (arity and name checked). CustomFn: fwd_body's Inputs bind positionally to the
 * operands and its single output is the node's value; vjp_body binds the primal Inputs in order
 * plus Inputs named "primal_output" and "d_output"; jvp_body binds the primal Inputs in order,
 * "tangent_0".."tangent_{n-1}" and optionally "primal_output". */
#include "infer_special.h"
#include "rlx/custom.h"

rlx_status rlx_infer_Custom(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Custom *a = &c->a->Custom;
  if (!a->name || !*a->name) return rlx_shape_error("attribute name: a Custom op needs the name of its extension");
  if (a->num_inputs < 0 || (uint64_t)a->num_inputs != c->n_in)
    return rlx_errorf(RLX_ERR_VERIFY, "attribute num_inputs is %lld but the node has %u operands",
                      (long long)a->num_inputs, c->n_in);
  rlx_custom_op_desc d;
  bool known = rlx_custom_lookup(a->name, &d);
  if (known && d.num_inputs != c->n_in)
    return rlx_shape_error("Custom op \"%s\" is registered with %u operands; the node has %u", a->name, d.num_inputs,
                           c->n_in);
  if (known && d.infer) {
    RLX_TRY(d.infer(c->in, c->n_in, a->attrs.p, a->attrs.n, d.user, out));
    if (c->declared && !rlx_shape_compatible(out, c->declared))
      return rlx_shape_error("Custom op \"%s\": its shape rule gives %s but the node declares %s", a->name,
                             rlx_fmt_shape(out), rlx_fmt_shape(c->declared));
    return RLX_OK;
  }
  /* Not registered here (a graph read from a file may be printed, converted or verified without
   * the extension; compiling it fails, naming the op) or registered without a shape rule. */
  if (!c->declared)
    return rlx_shape_error("Custom op \"%s\" %s: give its output shape explicitly", a->name,
                           known ? "has no shape rule" : "is not registered (rlx_custom_register)");
  return rlx_infer_from_declared(c, out);
}

static bool input_named(const sp_body *v, uint32_t k, const char *name) {
  const char *n = v->inputs[k]->attrs.Input.name;
  return n && strcmp(n, name) == 0;
}

/* tangent_<j> -> j, else -1. */
static int64_t tangent_index(const sp_body *v, uint32_t k) {
  const char *n = v->inputs[k]->attrs.Input.name;
  if (!n || strncmp(n, "tangent_", 8) != 0 || !n[8]) return -1;
  int64_t j = 0;
  for (const char *p = n + 8; *p; p++) {
    if (*p < '0' || *p > '9' || j > RLX_INFER_MAX_INPUTS) return -1;
    j = j * 10 + (*p - '0');
  }
  return j;
}

static rlx_status check_vjp_body(const rlx_infer_ctx *c, const sp_body *v, uint32_t n, const rlx_shape *y) {
  RLX_TRY(sp_body_inputs(v, n + 2, "the primal inputs, primal_output, d_output"));
  uint32_t primal = 0;
  bool seen_out = false, seen_d = false;
  char what[48];
  for (uint32_t k = 0; k < v->n_inputs; k++) {
    if (input_named(v, k, "primal_output")) {
      RLX_TRY(sp_bind_input(v, k, y, false, "primal_output (the forward result)"));
      seen_out = true;
    } else if (input_named(v, k, "d_output")) {
      RLX_TRY(sp_bind_input(v, k, y, true, "d_output (the forward result's gradient)"));
      seen_d = true;
    } else {
      if (primal < n) {
        snprintf(what, sizeof what, "primal operand %u", primal);
        RLX_TRY(sp_bind_input(v, k, c->in[primal], false, what));
      }
      primal++;
    }
  }
  if (!seen_out || !seen_d || primal != n)
    return rlx_shape_error("attribute vjp_body: body @%s needs %u primal Inputs plus Inputs named \"primal_output\" "
                           "and \"d_output\"",
                           rlx_graph_name(v->g), n);
  RLX_TRY(sp_body_outputs(v, n, "one gradient per primal input"));
  for (uint32_t k = 0; k < n; k++) {
    snprintf(what, sizeof what, "the gradient of operand %u", k);
    RLX_TRY(sp_check_output(v, k, c->in[k], true, what));
  }
  return RLX_OK;
}

static rlx_status check_jvp_body(const rlx_infer_ctx *c, const sp_body *v, uint32_t n, const rlx_shape *y) {
  if (v->n_inputs != 2 * n && v->n_inputs != 2 * n + 1)
    return rlx_shape_error("attribute jvp_body: body @%s has %u Inputs; expected %u or %u (primal inputs, "
                           "tangent_0..tangent_%u, optional primal_output)",
                           rlx_graph_name(v->g), v->n_inputs, 2 * n, 2 * n + 1, n ? n - 1 : 0);
  bool seen_t[RLX_INFER_MAX_INPUTS] = {false};
  uint32_t primal = 0, tangents = 0;
  char what[48];
  for (uint32_t k = 0; k < v->n_inputs; k++) {
    int64_t j = tangent_index(v, k);
    if (input_named(v, k, "primal_output")) {
      RLX_TRY(sp_bind_input(v, k, y, false, "primal_output (the forward result)"));
    } else if (j >= 0) {
      if (j >= n || seen_t[j])
        return rlx_shape_error("attribute jvp_body: Input %u \"%s\" is not one of tangent_0..tangent_%u (or repeats)",
                               k, v->inputs[k]->attrs.Input.name, n ? n - 1 : 0);
      seen_t[j] = true;
      tangents++;
      snprintf(what, sizeof what, "the tangent of operand %lld", (long long)j);
      RLX_TRY(sp_bind_input(v, k, c->in[j], true, what));
    } else {
      if (primal < n) {
        snprintf(what, sizeof what, "primal operand %u", primal);
        RLX_TRY(sp_bind_input(v, k, c->in[primal], false, what));
      }
      primal++;
    }
  }
  if (primal != n || tangents != n)
    return rlx_shape_error("attribute jvp_body: body @%s binds %u primal Inputs and %u tangent Inputs; expected %u of "
                           "each (tangents named tangent_0..tangent_%u)",
                           rlx_graph_name(v->g), primal, tangents, n, n ? n - 1 : 0);
  RLX_TRY(sp_body_outputs(v, 1, "the output tangent"));
  return sp_check_output(v, 0, y, true, "the output tangent has the forward result's shape");
}

rlx_status rlx_infer_CustomFn(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_CustomFn *a = &c->a->CustomFn;
  if (a->num_inputs < 0 || a->num_inputs > RLX_INFER_MAX_INPUTS)
    return rlx_shape_error("attribute num_inputs: %lld must be in 0..%d", (long long)a->num_inputs,
                           RLX_INFER_MAX_INPUTS);
  uint32_t n = (uint32_t)a->num_inputs;
  RLX_TRY(sp_arity(c, n, "attribute num_inputs"));
  sp_body f;
  RLX_TRY(sp_open_body(c, "fwd_body", a->fwd_body, &f));
  RLX_TRY(sp_body_inputs(&f, n, "one per operand"));
  RLX_TRY(sp_bind_operands(c, &f, 0, n));
  RLX_TRY(sp_body_outputs(&f, 1, "the result"));
  rlx_shape y = *sp_body_out(&f, 0);
  if (a->vjp_body) {
    sp_body v;
    RLX_TRY(sp_open_body(c, "vjp_body", a->vjp_body, &v));
    RLX_TRY(check_vjp_body(c, &v, n, &y));
  }
  if (a->jvp_body) {
    sp_body v;
    RLX_TRY(sp_open_body(c, "jvp_body", a->jvp_body, &v));
    RLX_TRY(check_jvp_body(c, &v, n, &y));
  }
  *out = y;
  return RLX_OK;
}
