/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Emit helpers for the VJP rules: constants, elementwise and shape ops built with shape
 * inference, broadcasting bookkeeping (unbroadcast / broadcast back) and ad_emit, which swaps a
 * *Backward op for its shared decomposition when the caller asked for primitives. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rlx/build.h"
#include "autodiff/ad_internal.h"
#include "passes/decompose/decompose.h"
#include "rlx/verify.h"
#include "core/elem.h"

rlx_shape ad_shape(const rlx_ad_ctx *c, rlx_id x) { return rlx_graph_node(c->dst, x)->shape; }

rlx_dtype ad_dtype(const rlx_ad_ctx *c, rlx_id x) { return (rlx_dtype)rlx_graph_node(c->dst, x)->shape.dtype; }

void ad_describe(const rlx_graph *g, rlx_id id, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, id);
  if (!n) {
    snprintf(buf, cap, "%%%u", id);
    return;
  }
  if (n->name)
    snprintf(buf, cap, "%%%u \"%s\" (%s)", id, n->name, rlx_op_name(n->op));
  else
    snprintf(buf, cap, "%%%u (%s)", id, rlx_op_name(n->op));
}

void ad_describe_fwd(const rlx_ad_ctx *c, rlx_id id, char *buf, size_t cap) {
  rlx_id o = c->origin && c->orig ? c->origin[id] : RLX_NO_ID;
  const rlx_node *n = rlx_graph_node(c->fwd, id), *on = o != RLX_NO_ID ? rlx_graph_node(c->orig, o) : NULL;
  if (!on || !n) {
    ad_describe(c->fwd, id, buf, cap);
    return;
  }
  char a[160];
  ad_describe(c->orig, o, a, sizeof a);
  if (on->op == n->op) {
    snprintf(buf, cap, "%s", a);
    return;
  }
  char b[160];
  ad_describe(c->fwd, id, b, sizeof b);
  snprintf(buf, cap, "%s, inside its decomposition: %s", a, b);
}

rlx_status ad_unsupported(const rlx_ad_ctx *c, const char *fmt, ...) {
  char msg[768], who[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ad_describe_fwd(c, c->node, who, sizeof who);
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "node %s: %s", who, msg);
}

/* ---- constants ---- */

/* The generic builders are rlx/build.h's; the ad_* names below adapt them to the context. */
rlx_status ad_const_values(rlx_ad_ctx *c, const rlx_shape *s, const double *v, rlx_id *out) {
  return rlx_values(c->dst, (rlx_dtype)s->dtype, s->rank, s->dims, v, out);
}

rlx_status ad_scalar(rlx_ad_ctx *c, rlx_dtype t, double v, rlx_id *out) { return rlx_scalar(c->dst, t, v, out); }

rlx_status ad_fill(rlx_ad_ctx *c, const rlx_shape *s, double v, rlx_id *out) {
  rlx_id k;
  RLX_TRY(ad_scalar(c, (rlx_dtype)s->dtype, v, &k));
  if (s->rank == 0) {
    *out = k;
    return RLX_OK;
  }
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) {
      char b[160];
      rlx_shape_format(s, b, sizeof b);
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "autodiff needs a constant of shape %s, which has a symbolic extent", b);
    }
  rlx_attrs_Expand a = {.target_shape = {.v = (int64_t *)s->dims, .n = s->rank}};
  return rlx_build_Expand(c->dst, &k, 1, &a, NULL, out);
}

/* v (broadcastable onto ref) broadcast to ref's shape. With static extents this is an Expand; a
 * symbolic extent cannot be named in Expand's target, so the shape is taken from ref itself:
 * Where(ref == ref, v, v) has ref's shape and v's values whatever the predicate (NaN included). */
static rlx_status broadcast_like(rlx_ad_ctx *c, rlx_id v, rlx_id ref, rlx_id *out) {
  rlx_shape rs = ad_shape(c, ref);
  if (rlx_shape_is_static(&rs)) return ad_expand(c, v, &rs, out);
  rlx_id cond;
  RLX_TRY(ad_cmp(c, RLX_CMP_EQ, ref, ref, &cond));
  return ad_where(c, cond, v, v, out);
}

rlx_status ad_zeros_like(rlx_ad_ctx *c, rlx_id x, rlx_id *out) {
  rlx_shape s = ad_shape(c, x);
  if (rlx_shape_is_static(&s)) return ad_fill(c, &s, 0.0, out);
  rlx_id z;
  RLX_TRY(ad_scalar(c, (rlx_dtype)s.dtype, 0.0, &z));
  return broadcast_like(c, z, x, out);
}

/* ---- elementwise ---- */

rlx_status ad_bin(rlx_ad_ctx *c, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_binary(c->dst, op, a, b, out);
}

rlx_status ad_bin_s(rlx_ad_ctx *c, rlx_binop op, rlx_id x, double v, rlx_id *out) {
  return rlx_binary_scalar(c->dst, op, x, v, out);
}

rlx_status ad_s_bin(rlx_ad_ctx *c, rlx_binop op, double v, rlx_id x, rlx_id *out) {
  return rlx_scalar_binary(c->dst, op, v, x, out);
}

rlx_status ad_add(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out) { return ad_bin(c, RLX_BINOP_ADD, a, b, out); }
rlx_status ad_sub(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out) { return ad_bin(c, RLX_BINOP_SUB, a, b, out); }
rlx_status ad_mul(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out) { return ad_bin(c, RLX_BINOP_MUL, a, b, out); }
rlx_status ad_div(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out) { return ad_bin(c, RLX_BINOP_DIV, a, b, out); }
rlx_status ad_neg(rlx_ad_ctx *c, rlx_id x, rlx_id *out) { return rlx_activation(c->dst, RLX_ACT_NEG, x, out); }
rlx_status ad_act(rlx_ad_ctx *c, rlx_act act, rlx_id x, rlx_id *out) { return rlx_activation(c->dst, act, x, out); }
rlx_status ad_cmp(rlx_ad_ctx *c, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) {
  return rlx_compare(c->dst, op, a, b, out);
}

rlx_status ad_cmp_s(rlx_ad_ctx *c, rlx_cmp op, rlx_id x, double v, rlx_id *out) {
  return rlx_compare_scalar(c->dst, op, x, v, out);
}

rlx_status ad_where(rlx_ad_ctx *c, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out) {
  return rlx_where(c->dst, cond, t, f, out);
}

rlx_status ad_cast(rlx_ad_ctx *c, rlx_id x, rlx_dtype t, rlx_id *out) { return rlx_cast_to(c->dst, x, t, out); }

rlx_status ad_mask(rlx_ad_ctx *c, rlx_id cond, rlx_dtype t, rlx_id *out) { return ad_cast(c, cond, t, out); }

/* ---- shapes ---- */

rlx_status ad_reshape_dims(rlx_ad_ctx *c, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  return rlx_reshape_dims(c->dst, x, rank, dims, out);
}

rlx_status ad_reshape(rlx_ad_ctx *c, rlx_id x, const rlx_shape *to, rlx_id *out) {
  return rlx_reshape_dims(c->dst, x, to->rank, to->dims, out);
}

rlx_status ad_expand(rlx_ad_ctx *c, rlx_id x, const rlx_shape *to, rlx_id *out) {
  return rlx_expand_dims(c->dst, x, to->rank, to->dims, out);
}

rlx_status ad_transpose(rlx_ad_ctx *c, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out) {
  return rlx_permute(c->dst, x, rank, perm, out);
}

rlx_status ad_mT(rlx_ad_ctx *c, rlx_id x, rlx_id *out) {
  rlx_shape s = ad_shape(c, x);
  if (s.rank < 2)
    return rlx_errorf(RLX_ERR_INTERNAL, "autodiff: transposing the last two axes of a rank-%u value", s.rank);
  int64_t perm[RLX_MAX_RANK];
  for (uint32_t i = 0; i < s.rank; i++) perm[i] = i;
  perm[s.rank - 2] = s.rank - 1;
  perm[s.rank - 1] = s.rank - 2;
  return rlx_transpose(c->dst, x, s.rank, perm, out);
}

rlx_status ad_narrow(rlx_ad_ctx *c, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out) {
  return rlx_narrow(c->dst, x, axis, start, len, out);
}

rlx_status ad_concat(rlx_ad_ctx *c, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out) {
  return rlx_concat(c->dst, xs, n, axis, out);
}

rlx_status ad_pad_axis(rlx_ad_ctx *c, rlx_id x, uint32_t axis, int64_t before, int64_t after, rlx_id *out) {
  return rlx_pad_axis(c->dst, x, axis, before, after, out);
}

rlx_status ad_reverse_axes(rlx_ad_ctx *c, rlx_id x, uint32_t n, const int64_t *axes, rlx_id *out) {
  return rlx_reverse_axes(c->dst, x, n, axes, out);
}

rlx_status ad_reduce(rlx_ad_ctx *c, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes, bool keep,
                     rlx_id *out) {
  return rlx_reduce_axes(c->dst, op, x, n_axes, axes, keep, out);
}

rlx_status ad_sum_keep(rlx_ad_ctx *c, rlx_id x, uint32_t axis, rlx_id *out) {
  int64_t a = axis;
  return rlx_reduce_axes(c->dst, RLX_REDUCE_SUM, x, 1, &a, true, out);
}

rlx_status ad_sum_all(rlx_ad_ctx *c, rlx_id x, rlx_id *out) { return rlx_sum_all(c->dst, x, out); }

rlx_status ad_matmul(rlx_ad_ctx *c, rlx_id a, rlx_id b, rlx_id *out) { return rlx_matmul(c->dst, a, b, out); }

rlx_status ad_unsqueeze(rlx_ad_ctx *c, rlx_id x, uint32_t pos, rlx_id *out) {
  return rlx_unsqueeze(c->dst, x, pos, out);
}

/* ---- broadcasting ---- */

rlx_status ad_unbroadcast(rlx_ad_ctx *c, rlx_id g, const rlx_shape *to, rlx_id *out) {
  rlx_shape gs = ad_shape(c, g);
  int64_t axes[RLX_MAX_RANK];
  uint32_t n = 0;
  if (gs.rank >= to->rank) {
    uint32_t lead = gs.rank - to->rank;
    for (uint32_t i = 0; i < gs.rank; i++) {
      if (i < lead) {
        if (gs.dims[i] != 1) axes[n++] = i;
      } else if (to->dims[i - lead] == 1 && gs.dims[i] != 1) {
        axes[n++] = i;
      }
    }
  }
  rlx_id r = g;
  if (n) RLX_TRY(rlx_reduce_axes(c->dst, RLX_REDUCE_SUM, g, n, axes, true, &r));
  return rlx_reshape_dims(c->dst, r, to->rank, to->dims, out);
}

rlx_status ad_broadcast_back(rlx_ad_ctx *c, rlx_id g, const rlx_shape *kept, rlx_id ref, rlx_id *out) {
  rlx_id r;
  RLX_TRY(rlx_reshape_dims(c->dst, g, kept->rank, kept->dims, &r));
  return broadcast_like(c, r, ref, out);
}

/* ---- backward ops ---- */

rlx_status ad_emit(rlx_ad_ctx *c, rlx_op op, const rlx_id *in, uint32_t n_in, const void *attrs,
                   const rlx_shape *declared, rlx_id *out) {
  if (!c->use_backward_ops && rlx_op_has(op, RLX_PROP_BACKWARD) && rlx_decompose_table[op]) {
    rlx_attrs a;
    rlx_attrs_init(op, &a);
    if (attrs) memcpy(&a, attrs, rlx_op_attrs_size(op));
    rlx_shape s;
    RLX_TRY(rlx_infer_shape(c->dst, op, in, n_in, &a, declared, &s));
    rlx_node tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.op = op;
    tmp.n_inputs = n_in;
    tmp.inputs = in;
    tmp.shape = s;
    tmp.attrs = a;
    rlx_id o = RLX_NO_ID;
    rlx_status st = rlx_decompose_table[op](c->dst, c->dst, &tmp, in, &o);
    if (st == RLX_OK) {
      const rlx_node *r = rlx_graph_node(c->dst, o);
      if (r && rlx_shape_compatible(&r->shape, &s)) {
        if (rlx_shape_equal(&r->shape, &s)) {
          *out = o;
          return RLX_OK;
        }
        return rlx_reshape_dims(c->dst, o, s.rank, s.dims, out);
      }
      return rlx_errorf(RLX_ERR_INTERNAL, "the decomposition of %s produced a different shape", rlx_op_name(op));
    }
    if (st != RLX_ERR_UNSUPPORTED) return st;
    rlx_clear_error(); /* this node cannot be decomposed: keep the backward op */
  }
  return rlx_graph_add(c->dst, op, in, n_in, attrs, declared, NULL, out);
}
