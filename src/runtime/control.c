/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The runtime's control-flow drivers (spec ir-core §10.14, ir-special §3): If, While, Scan,
 * ScanBackward and ScanBackwardXs for every backend that lists them in its descriptor's
 * runtime_control. The driver works on host tensors (the node's operands, downloaded by the
 * caller); each body runs through `run_body`, which the executor implements by running the body's
 * executable, compiled for the same backend, on uploaded copies of its arguments. Bodies' Inputs
 * bind positionally to the values handed over. Every output of a body gets a buffer sized from the
 * body's declared output shape, which must be static; the node's value is body output 0 (If) or
 * carried value 0 (While).
 *
 *   If:    predicate (one element, non-zero = true) selects then_branch or else_branch, which runs
 *          on the captures (operands 1..).
 *   While: while cond(carried...) is non-zero (and fewer than max_iterations steps ran, when set),
 *          carried = body(carried...). The value is carried[0].
 *   Scan:  carry = body(carry, bcast..., xs_0[t], ...) for t = 0..length-1. The value is the final
 *          carry, or with save_trajectory the rows [length, ...carry] (row t = carry after step
 *          t+1), or with 0 < num_checkpoints = K < length the K rows floor(j*length/K).
 *   ScanBackward / ScanBackwardXs [init, trajectory, upstream, xs...]: the reverse sweep of a Scan
 *          through body_vjp, recomputing carries between checkpoints with forward_body. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/elem.h"
#include "runtime/control.h"

/* ---- local helpers: errors name the node; scratch allocations are checked ---- */

typedef struct ctl_ctx {
  rlx_rt_body_fn fn;
  void *state;
} ctl_ctx;

static rlx_status ru_error(rlx_status code, const rlx_node *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static rlx_status ru_error(rlx_status code, const rlx_node *n, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n->name) return rlx_errorf(code, "%s '%s': %s", rlx_op_name(n->op), n->name, msg);
  return rlx_errorf(code, "%s: %s", rlx_op_name(n->op), msg);
}

static const char *ru_fmt(const rlx_shape *s) {
  static _Thread_local char bufs[4][160];
  static _Thread_local unsigned k;
  char *b = bufs[k++ & 3];
  rlx_shape_format(s, b, sizeof bufs[0]);
  return b;
}

static rlx_dtype ru_dt(const rlx_tensor *t) { return (rlx_dtype)t->shape.dtype; }
static size_t ru_esz(const rlx_tensor *t) { return rlx_dtype_size((rlx_dtype)t->shape.dtype); }
static bool ru_is_complex(rlx_dtype t) { return rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX; }

static size_t rlx_tensor_numel(const rlx_tensor *t) {
  size_t c = 1;
  for (uint32_t k = 0; k < t->shape.rank; k++) c *= (size_t)t->shape.dims[k];
  return c;
}

static rlx_status rb_alloc(const rlx_node *n, size_t count, size_t size, void *out) {
  size_t bytes;
  *(void **)out = NULL;
  if (!rlx_mul_size(count, size, &bytes))
    return ru_error(RLX_ERR_OVERFLOW, n, "scratch buffer of %zu x %zu bytes overflows", count, size);
  void *p = malloc(bytes ? bytes : 1);
  if (!p) return ru_error(RLX_ERR_OOM, n, "out of memory allocating %zu bytes of scratch", bytes);
  *(void **)out = p;
  return RLX_OK;
}

static rlx_status rb_calloc(const rlx_node *n, size_t count, size_t size, void *out) {
  RLX_TRY(rb_alloc(n, count, size, out));
  size_t bytes = count * size;
  if (bytes) memset(*(void **)out, 0, bytes);
  return RLX_OK;
}

/* The operands and the output agree with the node (the graph was verified; this guards the
 * executor). */
static rlx_status ru_prologue(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, uint32_t lo, uint32_t hi,
                              const rlx_tensor *out) {
  if (n_in < lo || n_in > hi)
    return ru_error(RLX_ERR_INVALID_ARG, n, "got %u operands, expected %u to %u", n_in, lo, hi);
  if ((n_in && !in) || !out) return ru_error(RLX_ERR_INTERNAL, n, "operands or output missing");
  if (out->shape.dtype != n->shape.dtype || out->shape.rank != n->shape.rank)
    return ru_error(RLX_ERR_INTERNAL, n, "output tensor %s does not match the node's shape %s", ru_fmt(&out->shape),
                    ru_fmt(&n->shape));
  return RLX_OK;
}

static rlx_status ru_need_out_dims(const rlx_node *n, const rlx_tensor *out, uint32_t rank, const int64_t *dims) {
  bool ok = out->shape.rank == rank;
  for (uint32_t k = 0; ok && k < rank; k++) ok = out->shape.dims[k] == dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "the output is %s, which does not match the operands", ru_fmt(&out->shape));
  return RLX_OK;
}

static rlx_status ru_need_dtype(const rlx_node *n, const rlx_tensor *in, uint32_t i, rlx_dtype t) {
  if (ru_dt(&in[i]) != t)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u has dtype %s; expected %s", i, rlx_dtype_name(ru_dt(&in[i])),
                    rlx_dtype_name(t));
  return RLX_OK;
}

/* ---- body outputs ---- */

typedef struct body_outs {
  rlx_tensor *t;
  uint32_t n;
} body_outs;

static void rlx_ref_body_outs_free(body_outs *o) {
  for (uint32_t i = 0; o->t && i < o->n; i++) free(o->t[i].data);
  free(o->t);
  o->t = NULL;
  o->n = 0;
}

/* Allocates o for every output of `body` (attribute `attr` of node n). want > 0: the body must
 * have exactly that many outputs; want = 0: at least one. */
static rlx_status rlx_ref_body_outs_alloc(const rlx_node *n, const rlx_graph *body, const char *attr, uint32_t want,
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

/* Runs body on args into o; errors name the node and the attribute. */
static rlx_status rlx_ref_body_run(const rlx_node *n, ctl_ctx *ctx, const rlx_graph *body, const char *attr,
                                   const rlx_tensor *args, uint32_t n_args, body_outs *o) {
  rlx_status s = ctx->fn(ctx->state, body, args, n_args, o->t, o->n);
  if (s != RLX_OK)
    return rlx_error_context(s, "%s node%s%s%s: attribute %s", rlx_op_name(n->op), n->name ? " '" : "",
                             n->name ? n->name : "", n->name ? "'" : "", attr);
  return RLX_OK;
}

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

static rlx_status run_If(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, ctl_ctx *ctx) {
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

static rlx_status run_While(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, ctl_ctx *ctx) {
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

static rlx_status run_Scan(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, ctl_ctx *ctx) {
  const rlx_attrs_Scan *a = &n->attrs.Scan;
  if (a->length < 0 || a->num_bcast < 0 || a->num_xs < 0 || a->num_checkpoints < 0 ||
      (uint64_t)a->num_bcast + (uint64_t)a->num_xs + 1 != n_in)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes length = %lld, num_bcast = %lld, num_xs = %lld, num_checkpoints "
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
    if (init->rank >= RLX_MAX_RANK)
      return ru_error(RLX_ERR_INVALID_ARG, n, "a trajectory of %s exceeds rank %d", ru_fmt(init), RLX_MAX_RANK);
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

/* ======================================================================================
 * ScanBackward / ScanBackwardXs
 * ====================================================================================== */

/* The dtype of the k-th Input (node order) of body; false when it has fewer Inputs. */
static bool body_input_dtype(const rlx_graph *body, uint32_t k, rlx_dtype *t) {
  uint32_t seen = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(body); i++) {
    const rlx_node *nd = rlx_graph_node(body, i);
    if (nd->op != RLX_OP_Input) continue;
    if (seen++ == k) {
      *t = (rlx_dtype)nd->shape.dtype;
      return true;
    }
  }
  return false;
}

/* Copies `count` elements from src (dtype st) to dst (dtype dt), converting when they differ. */
static void convert(void *dst, rlx_dtype dt, const void *src, rlx_dtype st, size_t count) {
  if (dt == st) {
    if (count) memcpy(dst, src, count * rlx_dtype_size(dt));
  } else {
    rlx_elem_convert(src, st, dst, dt, count);
  }
}

/* State of one sweep. */
typedef struct sweep {
  const rlx_node *n;
  ctl_ctx *ctx;
  const rlx_tensor *in;
  const rlx_graph *vjp, *fwd;
  size_t L, rows, nx, carry_n, carry_bytes;
  int64_t *saved_step; /* saved_step[j] = t_j */
  /* Recomputed carries carry_base .. carry_{base + m - 1} (checkpointed sweeps). */
  int64_t cache_base;
  size_t cache_m;
  char *cache;
  body_outs fwd_out;
  rlx_tensor *args; /* forward_body arguments */
} sweep;

/* The xs rows at step t as tensors into args[first..]. */
static void xs_rows(const sweep *w, size_t t, rlx_tensor *args) {
  for (size_t k = 0; k < w->nx; k++) {
    const rlx_tensor *x = &w->in[3 + k];
    rlx_tensor *r = &args[k];
    size_t row_bytes = w->L ? rlx_tensor_numel(x) / w->L * ru_esz(x) : 0;
    r->shape = x->shape;
    r->shape.rank--;
    for (uint32_t d = 0; d < r->shape.rank; d++) r->shape.dims[d] = x->shape.dims[d + 1];
    r->data = (char *)x->data + t * row_bytes;
  }
}

static void copy_bytes(void *dst, const void *src, size_t bytes) {
  if (bytes) memcpy(dst, src, bytes);
}

/* Writes carry_{t-1} (init for t = 0) into dst (carry_bytes bytes). */
static rlx_status carry_before(sweep *w, size_t t, void *dst) {
  const rlx_tensor *init = &w->in[0], *traj = &w->in[1];
  if (t == 0) {
    copy_bytes(dst, init->data, w->carry_bytes);
    return RLX_OK;
  }
  int64_t want = (int64_t)t - 1, base = -1;
  size_t base_row = 0;
  for (size_t j = 0; j < w->rows; j++)
    if (w->saved_step[j] <= want && w->saved_step[j] > base) base = w->saved_step[j], base_row = j;
  if (base == want) {
    copy_bytes(dst, (const char *)traj->data + base_row * w->carry_bytes, w->carry_bytes);
    return RLX_OK;
  }
  if (!w->fwd)
    return ru_error(RLX_ERR_INVALID_ARG, w->n,
                    "attribute forward_body: needed to recompute the carry after step %lld "
                    "between checkpoints",
                    (long long)want);
  if (w->cache_base != base || (size_t)(want - base) >= w->cache_m) {
    /* Recompute carry_base .. carry_want once for this segment. */
    size_t m = (size_t)(want - base) + 1;
    free(w->cache);
    w->cache = NULL;
    w->cache_m = 0;
    RLX_TRY(rb_alloc(w->n, m, w->carry_bytes ? w->carry_bytes : 1, &w->cache));
    if (base < 0)
      copy_bytes(w->cache, init->data, w->carry_bytes);
    else
      copy_bytes(w->cache, (const char *)traj->data + base_row * w->carry_bytes, w->carry_bytes);
    for (size_t i = 1; i < m; i++) {
      w->args[0].shape = init->shape;
      w->args[0].data = w->cache + (i - 1) * w->carry_bytes;
      xs_rows(w, (size_t)base + i, w->args + 1);
      RLX_TRY(rlx_ref_body_run(w->n, w->ctx, w->fwd, "forward_body", w->args, (uint32_t)w->nx + 1, &w->fwd_out));
      if (!rlx_shape_equal(&w->fwd_out.t[0].shape, &init->shape))
        return ru_error(RLX_ERR_INVALID_ARG, w->n, "attribute forward_body: output 0 is %s but the carry is %s",
                        ru_fmt(&w->fwd_out.t[0].shape), ru_fmt(&init->shape));
      copy_bytes(w->cache + i * w->carry_bytes, w->fwd_out.t[0].data, w->carry_bytes);
    }
    w->cache_base = base;
    w->cache_m = m;
  }
  copy_bytes(dst, w->cache + (size_t)(want - base) * w->carry_bytes, w->carry_bytes);
  return RLX_OK;
}

/* The sweep; xs_idx < 0 computes dinit, else the stacked gradient of xs[xs_idx]. */
static rlx_status scan_backward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, ctl_ctx *ctx,
                                const rlx_graph *vjp, const rlx_graph *fwd, int64_t length, bool save_traj,
                                int64_t num_xs, int64_t num_ckpt, int64_t xs_idx) {
  if (length < 0 || num_xs < 0 || num_ckpt < 0 || num_ckpt > length || (uint64_t)num_xs + 3 != n_in)
    return ru_error(RLX_ERR_INVALID_ARG, n,
                    "attributes length = %lld, num_xs = %lld, num_checkpoints = %lld do not fit "
                    "%u operands (3 + num_xs)",
                    (long long)length, (long long)num_xs, (long long)num_ckpt, n_in);
  RLX_TRY(ru_prologue(n, in, n_in, n_in, n_in, out));
  const rlx_tensor *init = &in[0], *traj = &in[1], *up = &in[2];
  size_t L = (size_t)length, rows = num_ckpt > 0 && num_ckpt < length ? (size_t)num_ckpt : L;
  size_t carry_n = rlx_tensor_numel(init), carry_bytes = carry_n * ru_esz(init);
  if (init->shape.rank >= RLX_MAX_RANK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (init) %s: a trajectory would exceed rank %d",
                    ru_fmt(&init->shape), RLX_MAX_RANK);
  bool ok =
      ru_dt(traj) == ru_dt(init) && traj->shape.rank == init->shape.rank + 1 && (size_t)traj->shape.dims[0] == rows;
  for (uint32_t k = 0; ok && k < init->shape.rank; k++) ok = traj->shape.dims[k + 1] == init->shape.dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (trajectory) has shape %s; expected [%zu, ...init %s]",
                    ru_fmt(&traj->shape), rows, ru_fmt(&init->shape));
  if (rlx_tensor_numel(up) != (save_traj ? rows * carry_n : carry_n) || ru_is_complex(ru_dt(up)))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 2 (upstream) has shape %s; expected the %s", ru_fmt(&up->shape),
                    save_traj ? "trajectory's shape" : "carry's shape");
  for (uint32_t k = 0; k < num_xs; k++) {
    const rlx_shape *x = &in[3 + k].shape;
    if (x->rank < 1 || (size_t)x->dims[0] != L)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (xs %u) has shape %s; its leading axis must be length = %zu",
                      3 + k, k, ru_fmt(x), L);
  }
  if (xs_idx >= 0) {
    if (xs_idx >= num_xs)
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute xs_idx is %lld; it must be < num_xs = %lld", (long long)xs_idx,
                      (long long)num_xs);
    RLX_TRY(ru_need_out_dims(n, out, in[3 + xs_idx].shape.rank, in[3 + xs_idx].shape.dims));
  } else {
    RLX_TRY(ru_need_out_dims(n, out, init->shape.rank, init->shape.dims));
  }
  rlx_dtype dt; /* the d_output Input's dtype */
  if (!vjp || !body_input_dtype(vjp, (uint32_t)num_xs + 1, &dt))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute body_vjp: missing, or fewer than num_xs + 2 = %lld Inputs",
                    (long long)num_xs + 2);
  sweep w = {n, ctx, in, vjp, fwd, L, rows, (size_t)num_xs, carry_n, carry_bytes, NULL, -2, 0, NULL, {NULL, 0}, NULL};
  body_outs vo = {NULL, 0};
  rlx_tensor *args = NULL;
  int64_t *row_at = NULL; /* row_at[t] = j with t_j = t, or -1 */
  void *dcarry = NULL;
  rlx_status s = rlx_ref_body_outs_alloc(n, vjp, "body_vjp", (uint32_t)num_xs + 1, &vo);
  if (!s && fwd) s = rlx_ref_body_outs_alloc(n, fwd, "forward_body", 1, &w.fwd_out);
  if (!s) s = rb_calloc(n, (size_t)num_xs + 2, sizeof *args, &args);
  if (!s) s = rb_calloc(n, (size_t)num_xs + 1, sizeof *w.args, &w.args);
  if (!s) s = rb_alloc(n, rows ? rows : 1, sizeof *w.saved_step, &w.saved_step);
  if (!s) s = rb_alloc(n, L ? L : 1, sizeof *row_at, &row_at);
  if (!s) s = rb_alloc(n, carry_bytes ? carry_bytes : 1, 1, &args[0].data);
  if (!s) s = rb_alloc(n, carry_n ? carry_n : 1, rlx_dtype_size(dt), &dcarry);
  for (uint32_t i = 0; !s && i < vo.n; i++)
    if (rlx_tensor_numel(&vo.t[i]) != (i == 0 ? carry_n : rlx_tensor_numel(&in[3 + i - 1]) / (L ? L : 1)))
      s = ru_error(RLX_ERR_INVALID_ARG, n, "attribute body_vjp: output %u has shape %s, which does not match %s", i,
                   ru_fmt(&vo.t[i].shape), i == 0 ? "the carry" : "one row of its xs");
  if (!s) {
    for (size_t t = 0; t < L; t++) row_at[t] = -1;
    for (size_t j = 0; j < rows; j++) {
      w.saved_step[j] = (int64_t)((unsigned __int128)j * L / rows);
      row_at[w.saved_step[j]] = (int64_t)j;
    }
    args[0].shape = init->shape;
    args[num_xs + 1].shape = init->shape;
    args[num_xs + 1].shape.dtype = (uint8_t)dt;
    args[num_xs + 1].data = dcarry;
    if (save_traj)
      memset(dcarry, 0, carry_n * rlx_dtype_size(dt)); /* all-zero bytes are 0 in every real dtype */
    else
      convert(dcarry, dt, up->data, ru_dt(up), carry_n);
  }
  for (size_t t = L; !s && t-- > 0;) {
    if (save_traj && row_at[t] >= 0)
      for (size_t i = 0; i < carry_n; i++)
        rlx_elem_set(dcarry, dt, i,
                     rlx_elem_get(dcarry, dt, i) + rlx_elem_get(up->data, ru_dt(up), (size_t)row_at[t] * carry_n + i));
    s = carry_before(&w, t, args[0].data);
    if (s) break;
    xs_rows(&w, t, args + 1);
    s = rlx_ref_body_run(n, ctx, vjp, "body_vjp", args, (uint32_t)num_xs + 2, &vo);
    if (s) break;
    if (xs_idx >= 0) {
      const rlx_tensor *g = &vo.t[1 + xs_idx];
      size_t row_n = rlx_tensor_numel(g);
      convert((char *)out->data + t * row_n * ru_esz(out), ru_dt(out), g->data, ru_dt(g), row_n);
    }
    convert(dcarry, dt, vo.t[0].data, ru_dt(&vo.t[0]), carry_n);
  }
  if (!s && xs_idx < 0) convert(out->data, ru_dt(out), dcarry, dt, carry_n);
  if (args) free(args[0].data);
  free(args);
  free(w.args);
  free(w.saved_step);
  free(w.cache);
  free(row_at);
  free(dcarry);
  rlx_ref_body_outs_free(&vo);
  rlx_ref_body_outs_free(&w.fwd_out);
  return s;
}

static rlx_status run_ScanBackward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                   ctl_ctx *ctx) {
  const rlx_attrs_ScanBackward *a = &n->attrs.ScanBackward;
  return scan_backward(n, in, n_in, out, ctx, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                       a->num_checkpoints, -1);
}

static rlx_status run_ScanBackwardXs(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                     ctl_ctx *ctx) {
  const rlx_attrs_ScanBackwardXs *a = &n->attrs.ScanBackwardXs;
  if (a->xs_idx < 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute xs_idx is %lld; it must be >= 0", (long long)a->xs_idx);
  return scan_backward(n, in, n_in, out, ctx, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                       a->num_checkpoints, a->xs_idx);
}

/* ---- dispatch ---- */

bool rlx_rt_is_control(rlx_op op) {
  return op == RLX_OP_If || op == RLX_OP_While || op == RLX_OP_Scan || op == RLX_OP_ScanBackward ||
         op == RLX_OP_ScanBackwardXs;
}

rlx_status rlx_rt_control_run(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                              rlx_rt_body_fn run_body, void *state) {
  if (!run_body) return rlx_errorf(RLX_ERR_INTERNAL, "%s: no body runner", rlx_op_name(n->op));
  ctl_ctx c = {run_body, state};
  switch (n->op) {
  case RLX_OP_If: return run_If(n, in, n_in, out, &c);
  case RLX_OP_While: return run_While(n, in, n_in, out, &c);
  case RLX_OP_Scan: return run_Scan(n, in, n_in, out, &c);
  case RLX_OP_ScanBackward: return run_ScanBackward(n, in, n_in, out, &c);
  case RLX_OP_ScanBackwardXs: return run_ScanBackwardXs(n, in, n_in, out, &c);
  default: return rlx_errorf(RLX_ERR_INTERNAL, "%s is not a control-flow op the runtime drives", rlx_op_name(n->op));
  }
}
