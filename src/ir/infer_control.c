/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: control flow (spec ir-special §3). Bodies are child graphs; a body's Input nodes, in
 * node order, bind positionally to the outer operands, and its Params bind by name to the
 * enclosing graph's Params. Bodies are inspected through the public graph API. */
#include "infer_special.h"

static bool one_element(const rlx_shape *s) {
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] != 1) return false;
  return true;
}

static bool predicate_dtype(const rlx_shape *s) { return rlx_dtype_class_of((rlx_dtype)s->dtype) != RLX_CLASS_COMPLEX; }

rlx_status rlx_infer_If(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_If *a = &c->a->If;
  if (c->n_in < 1) return rlx_errorf(RLX_ERR_VERIFY, "needs a predicate operand (then captures), got no operands");
  const rlx_shape *p = c->in[0];
  if (!one_element(p) || !predicate_dtype(p))
    return rlx_shape_error("operand 0 (predicate) has shape %s; expected one bool or numeric element",
                           rlx_fmt_shape(p));
  uint32_t ncap = c->n_in - 1;
  sp_body t, e;
  RLX_TRY(sp_open_body(c, "then_branch", a->then_branch, &t));
  RLX_TRY(sp_open_body(c, "else_branch", a->else_branch, &e));
  RLX_TRY(sp_body_inputs(&t, ncap, "one per capture operand"));
  RLX_TRY(sp_body_inputs(&e, ncap, "one per capture operand"));
  RLX_TRY(sp_bind_operands(c, &t, 1, ncap));
  RLX_TRY(sp_bind_operands(c, &e, 1, ncap));
  if (t.n_outputs < 1) return rlx_shape_error("attribute then_branch: body @%s has no outputs", rlx_graph_name(t.g));
  if (e.n_outputs != t.n_outputs)
    return rlx_shape_error("attribute else_branch: body @%s has %u outputs but then_branch has %u", rlx_graph_name(e.g),
                           e.n_outputs, t.n_outputs);
  const rlx_shape *t0 = sp_body_out(&t, 0);
  RLX_TRY(sp_check_output(&e, 0, t0, false, "both branches produce the same shape"));
  *out = *t0;
  return RLX_OK;
}

rlx_status rlx_infer_While(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_While *a = &c->a->While;
  if (c->n_in < 1) return rlx_errorf(RLX_ERR_VERIFY, "needs at least one loop-carried operand, got none");
  if (a->max_iterations.has && a->max_iterations.v < 0)
    return rlx_shape_error("attribute max_iterations: %lld must be >= 0", (long long)a->max_iterations.v);
  sp_body cv, bv;
  RLX_TRY(sp_open_body(c, "cond", a->cond, &cv));
  RLX_TRY(sp_open_body(c, "body", a->body, &bv));
  RLX_TRY(sp_body_inputs(&cv, c->n_in, "one per loop-carried operand"));
  RLX_TRY(sp_body_inputs(&bv, c->n_in, "one per loop-carried operand"));
  RLX_TRY(sp_bind_operands(c, &cv, 0, c->n_in));
  RLX_TRY(sp_bind_operands(c, &bv, 0, c->n_in));
  RLX_TRY(sp_body_outputs(&cv, 1, "the loop condition"));
  const rlx_shape *cs = sp_body_out(&cv, 0);
  if (!one_element(cs) || !predicate_dtype(cs))
    return rlx_shape_error("attribute cond: body output has shape %s; expected one bool or numeric element",
                           rlx_fmt_shape(cs));
  RLX_TRY(sp_body_outputs(&bv, c->n_in, "one per loop-carried operand"));
  char what[48];
  for (uint32_t k = 0; k < c->n_in; k++) {
    snprintf(what, sizeof what, "loop-carried operand %u", k);
    RLX_TRY(sp_check_output(&bv, k, c->in[k], false, what));
  }
  *out = *c->in[0];
  return RLX_OK;
}

/* xs rows: xs without its leading (time) axis. */
static rlx_shape row_of(const rlx_shape *xs) {
  rlx_shape r = *xs;
  r.rank--;
  for (uint32_t i = 0; i < r.rank; i++) r.dims[i] = xs->dims[i + 1];
  return r;
}

static rlx_status check_scan_counts(int64_t length, int64_t num_xs, int64_t num_checkpoints) {
  if (length < 0) return rlx_shape_error("attribute length: %lld must be >= 0", (long long)length);
  if (num_xs < 0 || num_xs > RLX_INFER_MAX_INPUTS)
    return rlx_shape_error("attribute num_xs: %lld must be in 0..%d", (long long)num_xs, RLX_INFER_MAX_INPUTS);
  if (num_checkpoints < 0 || num_checkpoints > length)
    return rlx_shape_error("attribute num_checkpoints: %lld must be in 0..length (%lld)", (long long)num_checkpoints,
                           (long long)length);
  return RLX_OK;
}

/* Rows of a saved trajectory: K when checkpointing (0 < K < length), else length. */
static int64_t trajectory_rows(int64_t length, int64_t k) { return k > 0 && k < length ? k : length; }

static rlx_status check_xs(const rlx_infer_ctx *c, uint32_t first, uint32_t nx, int64_t length) {
  for (uint32_t k = 0; k < nx; k++) {
    uint32_t i = first + k;
    if (c->in[i]->rank < 1 || sp_conflict(c->in[i]->dims[0], length))
      return rlx_shape_error("operand %u (xs %u) has shape %s; expected a leading axis of attribute length (%lld)", i,
                             k, rlx_fmt_shape(c->in[i]), (long long)length);
  }
  return RLX_OK;
}

/* [rows, ...carry] */
static rlx_status stacked(const rlx_shape *carry, int64_t rows, rlx_shape *out) {
  if (carry->rank >= RLX_MAX_RANK)
    return rlx_shape_error("operand 0 (init) has rank %u; a trajectory would exceed rank %d", carry->rank,
                           RLX_MAX_RANK);
  *out = *carry;
  out->rank++;
  out->dims[0] = rows;
  for (uint32_t i = 0; i < carry->rank; i++) out->dims[i + 1] = carry->dims[i];
  return RLX_OK;
}

rlx_status rlx_infer_Scan(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Scan *a = &c->a->Scan;
  RLX_TRY(check_scan_counts(a->length, a->num_xs, a->num_checkpoints));
  if (a->num_bcast < 0 || a->num_bcast > RLX_INFER_MAX_INPUTS)
    return rlx_shape_error("attribute num_bcast: %lld must be in 0..%d", (long long)a->num_bcast, RLX_INFER_MAX_INPUTS);
  uint32_t nb = (uint32_t)a->num_bcast, nx = (uint32_t)a->num_xs, n = 1 + nb + nx;
  RLX_TRY(sp_arity(c, n, "init, num_bcast broadcast operands, num_xs scanned operands"));
  RLX_TRY(check_xs(c, 1 + nb, nx, a->length));
  sp_body b;
  RLX_TRY(sp_open_body(c, "body", a->body, &b));
  RLX_TRY(sp_body_inputs(&b, n, "carry, broadcast operands, one row of each xs"));
  RLX_TRY(sp_bind_operands(c, &b, 0, 1 + nb));
  char what[48];
  for (uint32_t k = 0; k < nx; k++) {
    rlx_shape row = row_of(c->in[1 + nb + k]);
    snprintf(what, sizeof what, "one row of operand %u", 1 + nb + k);
    RLX_TRY(sp_bind_input(&b, 1 + nb + k, &row, false, what));
  }
  RLX_TRY(sp_body_outputs(&b, 1, "the next carry"));
  RLX_TRY(sp_check_output(&b, 0, c->in[0], false, "the next carry has init's shape"));
  if (!a->save_trajectory) {
    *out = *c->in[0];
    return RLX_OK;
  }
  return stacked(c->in[0], trajectory_rows(a->length, a->num_checkpoints), out);
}

/* Shared by ScanBackward and ScanBackwardXs: [init, trajectory, upstream, xs...]. */
static rlx_status check_scan_backward(const rlx_infer_ctx *c, const rlx_graph *vjp, int64_t length, bool save_traj,
                                      int64_t num_xs, int64_t num_checkpoints, const rlx_graph *forward) {
  RLX_TRY(check_scan_counts(length, num_xs, num_checkpoints));
  uint32_t nx = (uint32_t)num_xs;
  RLX_TRY(sp_arity(c, 3 + nx, "init, trajectory, upstream, num_xs scanned operands"));
  const rlx_shape *init = c->in[0];
  rlx_shape traj;
  RLX_TRY(stacked(init, trajectory_rows(length, num_checkpoints), &traj));
  RLX_TRY(sp_shape_eq(c, 1, "trajectory", &traj, "[rows, ...init] with rows = length or num_checkpoints"));
  RLX_TRY(sp_shape_eq(c, 2, "upstream", save_traj ? &traj : init,
                      save_traj ? "gradient of the saved trajectory" : "gradient of the final carry"));
  RLX_TRY(check_xs(c, 3, nx, length));
  sp_body b;
  RLX_TRY(sp_open_body(c, "body_vjp", vjp, &b));
  RLX_TRY(sp_body_inputs(&b, nx + 2, "carry, one row of each xs, d_output"));
  RLX_TRY(sp_body_outputs(&b, nx + 1, "dcarry, then one gradient per xs row"));
  RLX_TRY(sp_bind_input(&b, 0, init, false, "the carry (operand 0's shape)"));
  RLX_TRY(sp_bind_input(&b, nx + 1, init, true, "d_output (the carry's shape)"));
  RLX_TRY(sp_check_output(&b, 0, init, true, "dcarry has the carry's shape"));
  char what[48];
  for (uint32_t k = 0; k < nx; k++) {
    rlx_shape row = row_of(c->in[3 + k]);
    snprintf(what, sizeof what, "one row of operand %u", 3 + k);
    RLX_TRY(sp_bind_input(&b, 1 + k, &row, false, what));
    RLX_TRY(sp_check_output(&b, 1 + k, &row, true, what));
  }
  bool checkpointed = num_checkpoints > 0 && num_checkpoints < length;
  if (!forward) {
    if (checkpointed)
      return rlx_shape_error("attribute forward_body: needed to recompute carries between %lld checkpoints",
                             (long long)num_checkpoints);
    return RLX_OK;
  }
  sp_body f;
  RLX_TRY(sp_open_body(c, "forward_body", forward, &f));
  RLX_TRY(sp_body_inputs(&f, nx + 1, "carry, one row of each xs"));
  RLX_TRY(sp_bind_input(&f, 0, init, false, "the carry (operand 0's shape)"));
  for (uint32_t k = 0; k < nx; k++) {
    rlx_shape row = row_of(c->in[3 + k]);
    snprintf(what, sizeof what, "one row of operand %u", 3 + k);
    RLX_TRY(sp_bind_input(&f, 1 + k, &row, false, what));
  }
  RLX_TRY(sp_body_outputs(&f, 1, "the next carry"));
  return sp_check_output(&f, 0, init, false, "the next carry has init's shape");
}

rlx_status rlx_infer_ScanBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScanBackward *a = &c->a->ScanBackward;
  RLX_TRY(check_scan_backward(c, a->body_vjp, a->length, a->save_trajectory, a->num_xs, a->num_checkpoints,
                              a->forward_body));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_ScanBackwardXs(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScanBackwardXs *a = &c->a->ScanBackwardXs;
  if (a->xs_idx < 0 || a->xs_idx >= a->num_xs)
    return rlx_shape_error("attribute xs_idx: %lld must be in 0..num_xs-1 (num_xs = %lld)", (long long)a->xs_idx,
                           (long long)a->num_xs);
  RLX_TRY(check_scan_backward(c, a->body_vjp, a->length, a->save_trajectory, a->num_xs, a->num_checkpoints,
                              a->forward_body));
  *out = *c->in[3 + a->xs_idx];
  return RLX_OK;
}
