/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The convenience builders of rlx/build.h: one layer over the typed builders, shared by autodiff,
 * the decompositions, the optimizers and the importers. */
#include <string.h>

#include "core/elem.h"
#include "rlx/build.h"

static rlx_shape shape_of(const rlx_graph *g, rlx_id x) {
  const rlx_node *n = rlx_graph_node(g, x);
  return n ? n->shape : rlx_shape_scalar(RLX_F32);
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

rlx_status rlx_fill(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, double v, rlx_id *out) {
  return make_const(g, t, rank, dims, NULL, v, out);
}

rlx_status rlx_values(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *dims, const double *v, rlx_id *out) {
  return make_const(g, t, rank, dims, v, 0.0, out);
}

rlx_status rlx_scalar(rlx_graph *g, rlx_dtype t, double v, rlx_id *out) {
  return make_const(g, t, 0, NULL, NULL, v, out);
}

rlx_status rlx_i64s(rlx_graph *g, uint32_t n, const int64_t *v, rlx_id *out) {
  rlx_dim d = n;
  rlx_shape s = rlx_shape_make(RLX_I64, 1, &d);
  return rlx_constant(g, s, v, (size_t)n * sizeof *v, out);
}

/* ---- elementwise ---- */

rlx_status rlx_binary_scalar(rlx_graph *g, rlx_binop op, rlx_id x, double v, rlx_id *out) {
  rlx_id c;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)shape_of(g, x).dtype, v, &c));
  return rlx_binary(g, op, x, c, out);
}

rlx_status rlx_scalar_binary(rlx_graph *g, rlx_binop op, double v, rlx_id x, rlx_id *out) {
  rlx_id c;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)shape_of(g, x).dtype, v, &c));
  return rlx_binary(g, op, c, x, out);
}

rlx_status rlx_compare_scalar(rlx_graph *g, rlx_cmp op, rlx_id x, double v, rlx_id *out) {
  rlx_id c;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)shape_of(g, x).dtype, v, &c));
  return rlx_compare(g, op, x, c, out);
}

rlx_status rlx_where(rlx_graph *g, rlx_id cond, rlx_id t, rlx_id f, rlx_id *out) {
  rlx_id in[3] = {cond, t, f};
  return rlx_build_Where(g, in, 3, NULL, out);
}

rlx_status rlx_cast_to(rlx_graph *g, rlx_id x, rlx_dtype to, rlx_id *out) {
  if (shape_of(g, x).dtype == to) {
    *out = x;
    return RLX_OK;
  }
  return rlx_cast(g, x, to, out);
}

/* ---- shape ops ---- */

rlx_status rlx_narrow(rlx_graph *g, rlx_id x, uint32_t axis, int64_t start, int64_t len, rlx_id *out) {
  rlx_shape s = shape_of(g, x);
  if (start == 0 && axis < s.rank && s.dims[axis] == len) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Narrow a = {.axis = axis, .start = start, .len = len};
  return rlx_build_Narrow(g, &x, 1, &a, NULL, out);
}

#define CONCAT_MAX 64

rlx_status rlx_concat(rlx_graph *g, const rlx_id *xs, uint32_t n, uint32_t axis, rlx_id *out) {
  if (n == 0) return rlx_errorf(RLX_ERR_INTERNAL, "concat of zero operands");
  if (n == 1) {
    *out = xs[0];
    return RLX_OK;
  }
  rlx_attrs_Concat a = {.axis = axis};
  if (n <= CONCAT_MAX) return rlx_build_Concat(g, xs, n, &a, NULL, out);
  /* Concatenate groups of CONCAT_MAX, then the group results (recursively). */
  uint32_t groups = (n + CONCAT_MAX - 1) / CONCAT_MAX;
  const rlx_allocator *al = rlx_graph_allocator(g);
  rlx_id *parts = al->alloc(al->ctx, groups * sizeof *parts);
  if (!parts) return rlx_errorf(RLX_ERR_OOM, "out of memory while building a concat");
  rlx_status s = RLX_OK;
  for (uint32_t k = 0; k < groups && !s; k++) {
    uint32_t lo = k * CONCAT_MAX, cnt = n - lo < CONCAT_MAX ? n - lo : CONCAT_MAX;
    s = rlx_concat(g, xs + lo, cnt, axis, &parts[k]);
  }
  if (!s) s = rlx_concat(g, parts, groups, axis, out);
  al->free(al->ctx, parts);
  return s;
}

rlx_status rlx_reshape_dims(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  rlx_shape xs = shape_of(g, x);
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
  rlx_shape got = shape_of(g, *out);
  if (!rlx_shape_equal(&got, &want)) {
    char b[160], c[160];
    rlx_shape_format(&want, b, sizeof b);
    rlx_shape_format(&got, c, sizeof c);
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "a reshape to %s comes out as %s (symbolic extents cannot be matched)", b,
                      c);
  }
  return RLX_OK;
}

rlx_status rlx_expand_dims(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  rlx_shape xs = shape_of(g, x);
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
  rlx_attrs_Expand a = {.target_shape = {.v = t, .n = rank}};
  return rlx_build_Expand(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_permute(rlx_graph *g, rlx_id x, uint32_t rank, const int64_t *perm, rlx_id *out) {
  bool identity = true;
  for (uint32_t i = 0; i < rank; i++) identity &= perm[i] == (int64_t)i;
  if (identity) {
    *out = x;
    return RLX_OK;
  }
  return rlx_transpose(g, x, rank, perm, out);
}

rlx_status rlx_reverse_axes(rlx_graph *g, rlx_id x, uint32_t n_axes, const int64_t *axes, rlx_id *out) {
  if (n_axes == 0) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Reverse a = {.axes = {.v = (int64_t *)axes, .n = n_axes}};
  return rlx_build_Reverse(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_gather_axis(rlx_graph *g, rlx_id table, rlx_id idx, uint32_t axis, rlx_id *out) {
  rlx_attrs_Gather a = {.axis = axis};
  rlx_id in[2] = {table, idx};
  return rlx_build_Gather(g, in, 2, &a, NULL, out);
}

rlx_status rlx_unsqueeze(rlx_graph *g, rlx_id x, uint32_t pos, rlx_id *out) {
  rlx_shape s = shape_of(g, x);
  if (s.rank >= RLX_MAX_RANK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "inserting an axis would exceed rank %d", RLX_MAX_RANK);
  rlx_dim d[RLX_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 0; i <= s.rank; i++) {
    if (i == pos) d[k++] = 1;
    if (i < s.rank) d[k++] = s.dims[i];
  }
  return rlx_reshape_dims(g, x, s.rank + 1u, d, out);
}

rlx_status rlx_pad_axis(rlx_graph *g, rlx_id x, uint32_t axis, int64_t before, int64_t after, rlx_id *out) {
  if (before == 0 && after == 0) {
    *out = x;
    return RLX_OK;
  }
  rlx_shape s = shape_of(g, x);
  if (axis >= s.rank) return rlx_errorf(RLX_ERR_INVALID_ARG, "padding axis %u of a rank-%u value", axis, s.rank);
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  pads[2 * axis] = before;
  pads[2 * axis + 1] = after;
  rlx_attrs_Pad a;
  rlx_attrs_init(RLX_OP_Pad, &a);
  a.pads.v = pads;
  a.pads.n = 2u * s.rank;
  a.mode = RLX_PAD_MODE_CONSTANT;
  a.value = 0.0f;
  return rlx_build_Pad(g, &x, 1, &a, NULL, out);
}

rlx_status rlx_sum_all(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_shape s = shape_of(g, x);
  if (s.rank == 0) {
    *out = x;
    return RLX_OK;
  }
  int64_t axes[RLX_MAX_RANK];
  for (uint32_t i = 0; i < s.rank; i++) axes[i] = i;
  return rlx_reduce_axes(g, RLX_REDUCE_SUM, x, s.rank, axes, false, out);
}
