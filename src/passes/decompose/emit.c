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

/* ---- constants ---- */

static rlx_status make_const(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, const double *vals,
                             double fill, rlx_id *out) {
  if (rank > RLX_MAX_RANK) return rlx_errorf(RLX_ERR_INVALID_ARG, "constant of rank %u exceeds the maximum", rank);
  rlx_shape s = rlx_shape_make(t, rank, dims);
  size_t numel, nbytes;
  RLX_TRY(rlx_shape_numel(&s, &numel));
  RLX_TRY(rlx_shape_nbytes(&s, &nbytes));
  const rlx_allocator *al = rlx_graph_allocator(g);
  void *buf = al->alloc(al->ctx, nbytes ? nbytes : 1);
  if (!buf) return rlx_errorf(RLX_ERR_OOM, "out of memory for a %zu-byte constant", nbytes);
  for (size_t i = 0; i < numel; i++) rlx_elem_set(buf, t, i, vals ? vals[i] : fill);
  rlx_status st = rlx_constant(g, s, buf, nbytes, out);
  al->free(al->ctx, buf);
  return st;
}

rlx_status dc_const_fill(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, double v, rlx_id *out) {
  return make_const(g, t, rank, dims, NULL, v, out);
}

rlx_status dc_const_values(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, const double *v,
                           rlx_id *out) {
  return make_const(g, t, rank, dims, v, 0.0, out);
}

rlx_status dc_scalar(rlx_graph *g, rlx_dtype t, double v, rlx_id *out) { return make_const(g, t, 0, NULL, NULL, v, out); }

rlx_status dc_const_i64(rlx_graph *g, uint32_t n, const int64_t *v, rlx_id *out) {
  rlx_dim d = n;
  rlx_shape s = rlx_shape_make(RLX_I64, 1, &d);
  return rlx_constant(g, s, v, (size_t)n * sizeof *v, out);
}

/* ---- elementwise ---- */

rlx_status dc_bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, op, a, b, out); }

rlx_status dc_bin_scalar(rlx_graph *g, rlx_binop op, rlx_id x, double v, rlx_id *out) {
  rlx_id c;
  RLX_TRY(dc_scalar(g, (rlx_dtype)dc_shape(g, x).dtype, v, &c));
  return rlx_binary(g, op, x, c, out);
}

rlx_status dc_act(rlx_graph *g, rlx_act act, rlx_id x, rlx_id *out) { return rlx_activation(g, act, x, out); }

rlx_status dc_cmp(rlx_graph *g, rlx_cmp op, rlx_id a, rlx_id b, rlx_id *out) { return rlx_compare(g, op, a, b, out); }

rlx_status dc_where(rlx_graph *g, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out) {
  rlx_id in[3] = {cond, t, f};
  return rlx_build_Where(g, in, 3, NULL, out);
}

rlx_status dc_cast(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out) {
  if (dc_shape(g, x).dtype == to) {
    *out = x;
    return RLX_OK;
  }
  return rlx_cast(g, x, to, out);
}

/* ---- shape ops ---- */

rlx_status dc_narrow(rlx_graph *g, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out) {
  rlx_attrs_Narrow a = {axis, start, len};
  return rlx_build_Narrow(g, &x, 1, &a, NULL, out);
}

#define DC_CONCAT_MAX 64

rlx_status dc_concat(rlx_graph *g, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out) {
  if (n == 0) return rlx_errorf(RLX_ERR_INTERNAL, "concat of zero operands");
  if (n == 1) {
    *out = xs[0];
    return RLX_OK;
  }
  rlx_attrs_Concat a = {axis};
  if (n <= DC_CONCAT_MAX) return rlx_build_Concat(g, xs, n, &a, NULL, out);
  /* Concatenate groups of DC_CONCAT_MAX, then the group results (recursively). */
  uint32_t groups = (n + DC_CONCAT_MAX - 1) / DC_CONCAT_MAX;
  const rlx_allocator *al = rlx_graph_allocator(g);
  rlx_id *parts = al->alloc(al->ctx, groups * sizeof *parts);
  if (!parts) return rlx_errorf(RLX_ERR_OOM, "out of memory while building a concat");
  rlx_status s = RLX_OK;
  for (uint32_t k = 0; k < groups && !s; k++) {
    uint32_t lo = k * DC_CONCAT_MAX, cnt = n - lo < DC_CONCAT_MAX ? n - lo : DC_CONCAT_MAX;
    s = dc_concat(g, xs + lo, cnt, axis, &parts[k]);
  }
  if (!s) s = dc_concat(g, parts, groups, axis, out);
  al->free(al->ctx, parts);
  return s;
}

rlx_status dc_reshape(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  rlx_shape want = rlx_shape_make((rlx_dtype)xs.dtype, rank, dims);
  if (rlx_shape_equal(&xs, &want)) {
    *out = x;
    return RLX_OK;
  }
  int64_t ns[RLX_MAX_RANK];
  uint32_t n_sym = 0;
  for (uint32_t i = 0; i < rank; i++) {
    ns[i] = dims[i] >= 0 ? dims[i] : -1;
    n_sym += dims[i] < 0;
  }
  if (n_sym > 1) {
    char b[160];
    rlx_shape_format(&want, b, sizeof b);
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "a reshape to %s needs more than one symbolic extent", b);
  }
  RLX_TRY(rlx_reshape(g, x, rank, ns, out));
  rlx_shape got = dc_shape(g, *out);
  if (!rlx_shape_equal(&got, &want)) {
    char b[160], c[160];
    rlx_shape_format(&want, b, sizeof b);
    rlx_shape_format(&got, c, sizeof c);
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "a reshape to %s comes out as %s (symbolic extents cannot be matched)", b, c);
  }
  return RLX_OK;
}

rlx_status dc_expand(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  if (rank < xs.rank) return rlx_errorf(RLX_ERR_INTERNAL, "expand to a lower rank");
  uint32_t lead = rank - xs.rank;
  int64_t t[RLX_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++) {
    if (dims[i] >= 0) {
      t[i] = dims[i];
    } else if (i >= lead && xs.dims[i - lead] == dims[i]) {
      t[i] = -1;
    } else {
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "an expand to a symbolic extent ?%u that the operand lacks",
                        rlx_dim_symbol(dims[i]));
    }
  }
  rlx_attrs_Expand a = {{t, rank}};
  return rlx_build_Expand(g, &x, 1, &a, NULL, out);
}

rlx_status dc_transpose(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out) {
  bool identity = true;
  for (uint32_t i = 0; i < rank; i++) identity &= perm[i] == (int64_t)i;
  if (identity) {
    *out = x;
    return RLX_OK;
  }
  return rlx_transpose(g, x, rank, perm, out);
}

rlx_status dc_reverse(rlx_graph *g, rlx_id x, uint32_t n_axes, const int64_t *axes, rlx_id *out) {
  rlx_attrs_Reverse a = {{(int64_t *)axes, n_axes}};
  return rlx_build_Reverse(g, &x, 1, &a, NULL, out);
}

rlx_status dc_gather(rlx_graph *g, rlx_id table, rlx_id idx, uint32_t axis, rlx_id *out) {
  rlx_attrs_Gather a = {axis};
  rlx_id in[2] = {table, idx};
  return rlx_build_Gather(g, in, 2, &a, NULL, out);
}

rlx_status dc_reduce(rlx_graph *g, rlx_reduce op, rlx_id x, uint32_t n_axes, const int64_t *axes, bool keep_dim,
                     rlx_id *out) {
  return rlx_reduce_axes(g, op, x, n_axes, axes, keep_dim, out);
}

rlx_status dc_matmul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_matmul(g, a, b, out); }

rlx_status dc_unsqueeze(rlx_graph *g, rlx_id x, uint32_t pos, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  if (s.rank >= RLX_MAX_RANK) return rlx_errorf(RLX_ERR_UNSUPPORTED, "inserting an axis would exceed rank %d", RLX_MAX_RANK);
  rlx_dim d[RLX_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 0; i <= s.rank; i++) {
    if (i == pos) d[k++] = 1;
    if (i < s.rank) d[k++] = s.dims[i];
  }
  return dc_reshape(g, x, s.rank + 1u, d, out);
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
  return dc_reshape(g, v, 1u + trailing, d, out);
}
