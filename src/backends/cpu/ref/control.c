/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: control flow (spec ir-core §10.14, ir-special §3). Bodies run through
 * ctx->run_body (the executor compiles and caches them); their Inputs bind positionally to the
 * values handed over. Every output of a body gets a buffer sized from the body's declared output
 * shape, which must be static; the node's value is body output 0 (If) or carried value 0 (While).
 *
 *   If:    predicate (one element, non-zero = true) selects then_branch or else_branch, which runs
 *          on the captures (operands 1..).
 *   While: while cond(carried...) is non-zero (and fewer than max_iterations steps ran, when set),
 *          carried = body(carried...). The value is carried[0].
 *   Scan:  carry = body(carry, bcast..., xs_0[t], ...) for t = 0..length-1. The value is the final
 *          carry, or with save_trajectory the rows [length, ...carry] (row t = carry after step
 *          t+1), or with 0 < num_checkpoints = K < length the K rows floor(j*length/K). */
#include <stdio.h>

#include "backends/cpu/ref/body_util.h"

/* Dims and dtype agree. */
static bool same_shape(const rlx_shape *a, const rlx_shape *b) {
  if (a->rank != b->rank || a->dtype != b->dtype) return false;
  for (uint32_t k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

/* Truth value of a one-element predicate (non-zero is true; complex: real or imaginary part). */
static rlx_status truth(const rlx_node *n, const rlx_tensor *p, const char *what, bool *out) {
  if (rlx_tensor_numel(p) != 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "%s has shape %s; expected one element", what, ru_fmt(&p->shape));
  double re, im;
  rlx_elem_get_c(p->data, ru_dt(p), 0, &re, &im);
  *out = re != 0.0 || im != 0.0;
  return RLX_OK;
}

/* Copies body output 0 into the node's output (same dims and dtype required). */
static rlx_status take_output(const rlx_node *n, const rlx_tensor *src, rlx_tensor *out, const char *what) {
  if (!same_shape(&src->shape, &out->shape))
    return ru_error(RLX_ERR_INVALID_ARG, n, "%s is %s but the output tensor is %s", what, ru_fmt(&src->shape),
                    ru_fmt(&out->shape));
  size_t bytes = rlx_tensor_numel(out) * ru_esz(out);
  if (bytes) memcpy(out->data, src->data, bytes);
  return RLX_OK;
}

/* ======================================================================================
 * If
 * ====================================================================================== */

RLX_CPU_KERNEL(If) {
  if (n_in < 1) return ru_error(RLX_ERR_INVALID_ARG, n, "needs a predicate operand");
  RLX_TRY(ru_prologue(n, in, n_in, 1, n_in, out));
  bool p = false;
  RLX_TRY(truth(n, &in[0], "operand 0 (predicate)", &p));
  const char *attr = p ? "then_branch" : "else_branch";
  const rlx_graph *body = p ? n->attrs.If.then_branch : n->attrs.If.else_branch;
  body_outs o;
  RLX_TRY(rlx_ref_body_outs_alloc(n, body, attr, 0, &o));
  rlx_status s = rlx_ref_body_run(n, ctx, body, attr, in + 1, n_in - 1, &o);
  if (s == RLX_OK) s = take_output(n, &o.t[0], out, "output 0 of the branch");
  rlx_ref_body_outs_free(&o);
  return s;
}

/* ======================================================================================
 * While
 * ====================================================================================== */

RLX_CPU_KERNEL(While) {
  if (n_in < 1) return ru_error(RLX_ERR_INVALID_ARG, n, "needs at least one loop-carried operand");
  RLX_TRY(ru_prologue(n, in, n_in, 1, n_in, out));
  const rlx_attrs_While *a = &n->attrs.While;
  if (a->max_iterations.has && a->max_iterations.v < 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute max_iterations is %lld; it must be >= 0",
                    (long long)a->max_iterations.v);
  body_outs cond = {NULL, 0}, next = {NULL, 0};
  rlx_tensor *cur = NULL;
  rlx_status s = rlx_ref_body_outs_alloc(n, a->cond, "cond", 0, &cond);
  if (s == RLX_OK) s = rlx_ref_body_outs_alloc(n, a->body, "body", 0, &next);
  if (s == RLX_OK && next.n != n_in)
    s = ru_error(RLX_ERR_INVALID_ARG, n, "attribute body: the body has %u outputs for %u loop-carried values", next.n,
                 n_in);
  for (uint32_t k = 0; s == RLX_OK && k < n_in; k++)
    if (!same_shape(&next.t[k].shape, &in[k].shape))
      s = ru_error(RLX_ERR_INVALID_ARG, n, "attribute body: output %u is %s but loop-carried operand %u is %s", k,
                   ru_fmt(&next.t[k].shape), k, ru_fmt(&in[k].shape));
  /* cur holds the carried values (own copies, swapped with next's buffers after each step). */
  if (s == RLX_OK) s = rb_calloc(n, n_in, sizeof *cur, &cur);
  for (uint32_t k = 0; s == RLX_OK && k < n_in; k++) {
    size_t bytes = rlx_tensor_numel(&in[k]) * ru_esz(&in[k]);
    cur[k].shape = in[k].shape;
    s = rb_alloc(n, bytes, 1, &cur[k].data);
    if (s == RLX_OK && bytes) memcpy(cur[k].data, in[k].data, bytes);
  }
  for (int64_t it = 0; s == RLX_OK && (!a->max_iterations.has || it < a->max_iterations.v); it++) {
    bool go = false;
    s = rlx_ref_body_run(n, ctx, a->cond, "cond", cur, n_in, &cond);
    if (s == RLX_OK) s = truth(n, &cond.t[0], "the output of cond", &go);
    if (s != RLX_OK || !go) break;
    s = rlx_ref_body_run(n, ctx, a->body, "body", cur, n_in, &next);
    for (uint32_t k = 0; s == RLX_OK && k < n_in; k++) {
      void *tmp = cur[k].data;
      cur[k].data = next.t[k].data;
      next.t[k].data = tmp;
    }
  }
  if (s == RLX_OK) s = take_output(n, &cur[0], out, "loop-carried value 0");
  for (uint32_t k = 0; cur && k < n_in; k++) free(cur[k].data);
  free(cur);
  rlx_ref_body_outs_free(&cond);
  rlx_ref_body_outs_free(&next);
  return s;
}

/* ======================================================================================
 * Scan
 * ====================================================================================== */

RLX_CPU_KERNEL(Scan) {
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  if (a->length < 0 || a->num_bcast < 0 || a->num_xs < 0 || a->num_checkpoints < 0 ||
      (uint64_t)a->num_bcast + (uint64_t)a->num_xs + 1 != n_in)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes length = %lld, num_bcast = %lld, num_xs = %lld, num_checkpoints "
                    "= %lld do not fit %u operands (1 + num_bcast + num_xs)",
                    (long long)a->length, (long long)a->num_bcast, (long long)a->num_xs, (long long)a->num_checkpoints,
                    n_in);
  RLX_TRY(ru_prologue(n, in, n_in, n_in, n_in, out));
  uint32_t nb = (uint32_t)a->num_bcast, nx = (uint32_t)a->num_xs;
  size_t L = (size_t)a->length, K = (size_t)a->num_checkpoints;
  const rlx_shape *init = &in[0].shape;
  size_t rows = K > 0 && K < L ? K : L, carry_bytes = rlx_tensor_numel(&in[0]) * ru_esz(&in[0]);
  /* xs operands: [length, ...row]. */
  for (uint32_t i = 0; i < nx; i++) {
    const rlx_shape *x = &in[1 + nb + i].shape;
    if (x->rank < 1 || (size_t)x->dims[0] != L)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (xs %u) has shape %s; its leading axis must be length = %zu",
                      1 + nb + i, i, ru_fmt(x), L);
  }
  /* The output: the carry, or [rows, ...carry]. */
  if (a->save_trajectory) {
    if (init->rank >= RLX_MAX_RANK) return ru_error(RLX_ERR_INVALID_ARG, n, "a trajectory of %s exceeds rank %d", ru_fmt(init), RLX_MAX_RANK);
    int64_t dims[RLX_MAX_RANK];
    dims[0] = (int64_t)rows;
    for (uint32_t k = 0; k < init->rank; k++) dims[k + 1] = init->dims[k];
    RLX_TRY(ru_need_out_dims(n, out, init->rank + 1u, dims));
  } else {
    RLX_TRY(ru_need_out_dims(n, out, init->rank, init->dims));
  }
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  body_outs o = {NULL, 0};
  rlx_tensor *args = NULL;
  rlx_status s = rlx_ref_body_outs_alloc(n, a->body, "body", 0, &o);
  if (s == RLX_OK && !same_shape(&o.t[0].shape, init))
    s = ru_error(RLX_ERR_INVALID_ARG, n, "attribute body: output 0 is %s but the carry (operand 0) is %s",
                 ru_fmt(&o.t[0].shape), ru_fmt(init));
  if (s == RLX_OK) s = rb_calloc(n, n_in, sizeof *args, &args);
  if (s == RLX_OK) s = rb_alloc(n, carry_bytes, 1, &args[0].data);
  if (s == RLX_OK) {
    args[0].shape = *init;
    if (carry_bytes) memcpy(args[0].data, in[0].data, carry_bytes);
    for (uint32_t i = 1; i <= nb; i++) args[i] = in[i];
  }
  size_t next_row = 0; /* next trajectory row to fill */
  for (size_t t = 0; s == RLX_OK && t < L; t++) {
    for (uint32_t i = 0; i < nx; i++) {
      const rlx_tensor *x = &in[1 + nb + i];
      rlx_tensor *r = &args[1 + nb + i];
      size_t row_bytes = rlx_tensor_numel(x) / L * ru_esz(x);
      r->shape = x->shape;
      r->shape.rank--;
      for (uint32_t k = 0; k < r->shape.rank; k++) r->shape.dims[k] = x->shape.dims[k + 1];
      r->data = (char *)x->data + t * row_bytes;
    }
    s = rlx_ref_body_run(n, ctx, a->body, "body", args, n_in, &o);
    if (s != RLX_OK) break;
    /* The new carry: swap buffers with output 0. */
    void *tmp = args[0].data;
    args[0].data = o.t[0].data;
    o.t[0].data = tmp;
    if (a->save_trajectory) {
      /* Row j holds the carry after step floor(j*L/rows) + 1 (j = t when rows == L). */
      while (next_row < rows && (size_t)((unsigned __int128)next_row * L / rows) == t) {
        if (carry_bytes) memcpy((char *)out->data + next_row * carry_bytes, args[0].data, carry_bytes);
        next_row++;
      }
    }
  }
  if (s == RLX_OK && !a->save_trajectory && carry_bytes) memcpy(out->data, args[0].data, carry_bytes);
  if (args) free(args[0].data);
  free(args);
  rlx_ref_body_outs_free(&o);
  return s;
}
