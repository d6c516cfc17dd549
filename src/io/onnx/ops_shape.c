/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX shape and data-movement ops. Operands that define shapes (Reshape's shape, Slice's
 * starts/ends, Expand's shape, Tile's repeats, Pad's pads, ...) must be known at import time
 * (constants, folded shape computations or bound input values): RLX graphs have static
 * attributes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"
#include "core/elem.h"

/* Axes from attribute `name` (opsets < `input_from`) or from input k (later opsets). */
static rlx_status axes_arg(oi_node *c, const char *name, int64_t input_from, uint32_t k, int64_t **v, size_t *n,
                           bool *present) {
  if (c->opset < input_from) {
    const int64_t *a;
    RLX_TRY(oi_attr_ints(c, name, &a, n, present));
    int64_t *copy = oi_scratch(c, (*n + 1) * sizeof *copy);
    if (!copy) return oi_nomem(c);
    if (*n) memcpy(copy, a, *n * sizeof *copy);
    *v = copy;
    return RLX_OK;
  }
  *present = oi_has(c, k);
  *n = 0;
  *v = NULL;
  if (!*present) return RLX_OK;
  return oi_in_ints(c, k, name, v, n);
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ---- */

static rlx_status map_reshape(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  int64_t *sv;
  size_t sn;
  if (c->opset < 5) {
    const int64_t *a;
    bool present;
    RLX_TRY(oi_attr_ints(c, "shape", &a, &sn, &present));
    sv = oi_scratch(c, (sn + 1) * sizeof *sv);
    if (!sv) return oi_nomem(c);
    if (sn) memcpy(sv, a, sn * sizeof *sv);
  } else {
    RLX_TRY(oi_in_ints(c, 1, "shape", &sv, &sn));
  }
  int64_t allowzero = 0;
  if (c->opset >= 14) RLX_TRY(oi_attr_i(c, "allowzero", 0, &allowzero));
  const rlx_shape xs = *oi_in_shape(c, 0);
  if (sn > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %zu (RLX supports up to %d)", sn, RLX_MAX_RANK);
  rlx_dim dims[RLX_MAX_RANK];
  int infer = -1;
  for (size_t i = 0; i < sn; i++) {
    int64_t v = sv[i];
    if (v == 0 && !allowzero) {
      if (i >= xs.rank) return oi_bad(c, "shape[%zu] is 0 (copy) but the input has rank %u", i, xs.rank);
      dims[i] = xs.dims[i];
    } else if (v == -1) {
      if (infer >= 0) return oi_bad(c, "shape has more than one -1");
      if (allowzero) {
        for (size_t j = 0; j < sn; j++)
          if (sv[j] == 0) return oi_bad(c, "shape has both -1 and 0 with allowzero = 1");
      }
      infer = (int)i;
      dims[i] = 0;
    } else if (v < 0) {
      return oi_bad(c, "shape[%zu] is %lld; entries must be >= -1", i, (long long)v);
    } else {
      dims[i] = v;
    }
  }
  if (rlx_shape_is_static(&xs)) {
    size_t total, known = 1;
    RLX_TRY(rlx_shape_numel(&xs, &total));
    for (size_t i = 0; i < sn; i++)
      if ((int)i != infer && !rlx_mul_size(known, (size_t)dims[i], &known)) return oi_bad(c, "shape overflows");
    if (infer >= 0) {
      if (known == 0 || total % known)
        return oi_bad(c, "cannot infer the -1 in the shape: %zu elements do not divide by %zu", total, known);
      dims[infer] = (rlx_dim)(total / known);
    } else if (known != total) {
      return oi_bad(c, "shape has %zu elements but the input %s has %zu", known, rlx_fmt_shape(&xs), total);
    }
    int64_t d[RLX_MAX_RANK];
    for (size_t i = 0; i < sn; i++) d[i] = dims[i];
    return oi_reshape(c, c->in[0], (uint32_t)sn, d, &c->out[0]);
  }
  if (infer >= 0) dims[infer] = RLX_DIM_SYM(1u << 30); /* placeholder: becomes the -1 */
  return oi_reshape_dims(c, c->in[0], (uint32_t)sn, dims, &c->out[0]);
}

static rlx_status map_flatten(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 1, &axis));
  const rlx_shape xs = *oi_in_shape(c, 0);
  uint32_t a;
  if (axis == (int64_t)xs.rank)
    a = xs.rank;
  else
    RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  rlx_dim d[2] = {1, 1};
  for (uint32_t i = 0; i < xs.rank; i++) {
    rlx_dim *t = &d[i < a ? 0 : 1];
    if (!rlx_dim_is_static(xs.dims[i]) || !rlx_dim_is_static(*t))
      *t = RLX_DIM_SYM(0);
    else
      *t *= xs.dims[i];
  }
  if (!rlx_dim_is_static(d[0]) && !rlx_dim_is_static(d[1]))
    return oi_unsupported(c, "flattening symbolic dims on both sides of axis %u", a);
  if (!rlx_dim_is_static(d[0]) || !rlx_dim_is_static(d[1])) {
    int64_t nd[2] = {rlx_dim_is_static(d[0]) ? d[0] : -1, rlx_dim_is_static(d[1]) ? d[1] : -1};
    return oi_reshape(c, c->in[0], 2, nd, &c->out[0]);
  }
  int64_t nd[2] = {d[0], d[1]};
  return oi_reshape(c, c->in[0], 2, nd, &c->out[0]);
}

static rlx_status map_squeeze(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  int64_t *axes;
  size_t n;
  bool present;
  RLX_TRY(axes_arg(c, "axes", 13, 1, &axes, &n, &present));
  const rlx_shape xs = *oi_in_shape(c, 0);
  bool drop[RLX_MAX_RANK] = {false};
  if (!present || n == 0) {
    for (uint32_t i = 0; i < xs.rank; i++) {
      if (!rlx_dim_is_static(xs.dims[i]))
        return oi_unsupported(c, "squeezing every unit axis of %s (symbolic dims)", rlx_fmt_shape(&xs));
      drop[i] = xs.dims[i] == 1;
    }
  } else {
    for (size_t k = 0; k < n; k++) {
      uint32_t a;
      RLX_TRY(oi_axis(c, axes[k], xs.rank, "axes entry", &a));
      if (xs.dims[a] != 1)
        return oi_bad(c, "axis %u has extent %lld; only unit axes can be squeezed", a, (long long)xs.dims[a]);
      drop[a] = true;
    }
  }
  rlx_dim d[RLX_MAX_RANK];
  uint32_t r = 0;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (!drop[i]) d[r++] = xs.dims[i];
  return oi_reshape_dims(c, c->in[0], r, d, &c->out[0]);
}

static rlx_status map_unsqueeze(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  int64_t *axes;
  size_t n;
  bool present;
  RLX_TRY(axes_arg(c, "axes", 13, 1, &axes, &n, &present));
  if (!present) return oi_bad(c, "axes are required");
  const rlx_shape xs = *oi_in_shape(c, 0);
  size_t r = xs.rank + n;
  if (r > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %zu (RLX supports up to %d)", r, RLX_MAX_RANK);
  bool ins[RLX_MAX_RANK] = {false};
  for (size_t k = 0; k < n; k++) {
    uint32_t a;
    RLX_TRY(oi_axis(c, axes[k], (uint32_t)r, "axes entry", &a));
    if (ins[a]) return oi_bad(c, "axis %u is listed twice", a);
    ins[a] = true;
  }
  rlx_dim d[RLX_MAX_RANK];
  for (uint32_t i = 0, j = 0; i < r; i++) d[i] = ins[i] ? 1 : xs.dims[j++];
  return oi_reshape_dims(c, c->in[0], (uint32_t)r, d, &c->out[0]);
}

/* ---- Transpose, Concat, Split, Slice ---- */

static rlx_status map_transpose(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  const rlx_shape *xs = oi_in_shape(c, 0);
  const int64_t *pv;
  size_t pn;
  bool present;
  RLX_TRY(oi_attr_ints(c, "perm", &pv, &pn, &present));
  int64_t perm[RLX_MAX_RANK];
  if (!present) {
    for (uint32_t i = 0; i < xs->rank; i++) perm[i] = xs->rank - 1 - i;
  } else {
    if (pn != xs->rank) return oi_bad(c, "attribute perm has %zu entries; the input has rank %u", pn, xs->rank);
    bool seen[RLX_MAX_RANK] = {false};
    for (size_t i = 0; i < pn; i++) {
      if (pv[i] < 0 || pv[i] >= xs->rank || seen[pv[i]])
        return oi_bad(c, "attribute perm is not a permutation of 0..%u", xs->rank - 1);
      seen[pv[i]] = true;
      perm[i] = pv[i];
    }
  }
  return oi_transpose(c, c->in[0], perm, &c->out[0]);
}

static rlx_status map_concat(oi_node *c) {
  if (!oi_attr(c, "axis") && c->opset >= 4) return oi_bad(c, "attribute axis is required");
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 1, &axis));
  rlx_id *xs = oi_scratch(c, (c->n_in + 1) * sizeof *xs);
  if (!xs) return oi_nomem(c);
  uint32_t n = 0;
  for (uint32_t k = 0; k < c->n_in; k++)
    if (oi_has(c, k)) xs[n++] = c->in[k];
  if (!n) return oi_bad(c, "needs at least one input");
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, oi_shape(c, xs[0])->rank, "attribute axis", &a));
  if (n > 64) { /* RLX builds infer at most 64 operands: concatenate in chunks */
    rlx_id *parts = oi_scratch(c, ((n + 63) / 64) * sizeof *parts);
    if (!parts) return oi_nomem(c);
    uint32_t np = 0;
    for (uint32_t i = 0; i < n; i += 64) RLX_TRY(oi_concat(c, xs + i, n - i < 64 ? n - i : 64, a, &parts[np++]));
    return oi_concat(c, parts, np, a, &c->out[0]);
  }
  return oi_concat(c, xs, n, a, &c->out[0]);
}

static rlx_status map_split(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  const rlx_shape xs = *oi_in_shape(c, 0);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  rlx_dim d = xs.dims[a];
  if (!rlx_dim_is_static(d)) return oi_unsupported(c, "splitting a symbolic axis");
  int64_t *sv = NULL;
  size_t sn = 0;
  bool present = false;
  if (c->opset < 13) {
    const int64_t *v;
    RLX_TRY(oi_attr_ints(c, "split", &v, &sn, &present));
    if (present) {
      sv = oi_scratch(c, (sn + 1) * sizeof *sv);
      if (!sv) return oi_nomem(c);
      if (sn) memcpy(sv, v, sn * sizeof *sv);
    }
    if (!present && c->opset < 2 && oi_has(c, 1)) { /* opset 1: split as input */
      RLX_TRY(oi_in_ints(c, 1, "split", &sv, &sn));
      present = true;
    }
  } else if (oi_has(c, 1)) {
    RLX_TRY(oi_in_ints(c, 1, "split", &sv, &sn));
    present = true;
  }
  uint32_t n = c->n_out;
  if (present) {
    if (sn != n) return oi_bad(c, "split has %zu entries but the node has %u outputs", sn, n);
    int64_t sum = 0;
    for (size_t i = 0; i < sn; i++) {
      if (sv[i] < 0 || sv[i] > d) return oi_bad(c, "split[%zu] is %lld", i, (long long)sv[i]);
      sum += sv[i];
    }
    if (sum != d) return oi_bad(c, "split sums to %lld but the axis has extent %lld", (long long)sum, (long long)d);
  } else {
    int64_t num = n;
    if (c->opset >= 18 && oi_attr(c, "num_outputs")) RLX_TRY(oi_attr_i(c, "num_outputs", n, &num));
    if (num < 1 || num != (int64_t)n)
      return oi_bad(c, "num_outputs (%lld) must equal the %u outputs", (long long)num, n);
    sv = oi_scratch(c, n * sizeof *sv);
    if (!sv) return oi_nomem(c);
    int64_t chunk = c->opset >= 18 ? (d + num - 1) / num : d / num;
    if (c->opset < 18 && d % num)
      return oi_bad(c, "axis extent %lld does not divide into %u equal parts", (long long)d, n);
    for (uint32_t i = 0; i < n; i++) {
      int64_t left = d - chunk * (int64_t)i;
      sv[i] = left < chunk ? (left > 0 ? left : 0) : chunk;
    }
  }
  int64_t start = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (c->out_used[i] || c->np->output[i][0]) RLX_TRY(oi_narrow(c, c->in[0], a, start, sv[i], &c->out[i]));
    start += sv[i];
  }
  return RLX_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static rlx_status map_slice(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  int64_t *starts, *ends, *axes = NULL, *steps = NULL;
  size_t ns, ne, na = 0, nst = 0;
  if (c->opset < 10) {
    const int64_t *s, *e, *a;
    bool ps, pe, pa;
    RLX_TRY(oi_attr_ints(c, "starts", &s, &ns, &ps));
    RLX_TRY(oi_attr_ints(c, "ends", &e, &ne, &pe));
    RLX_TRY(oi_attr_ints(c, "axes", &a, &na, &pa));
    if (!ps || !pe) return oi_bad(c, "attributes starts and ends are required");
    starts = (int64_t *)s, ends = (int64_t *)e, axes = pa ? (int64_t *)a : NULL;
    if (!pa) na = 0;
  } else {
    RLX_TRY(oi_in_ints(c, 1, "starts", &starts, &ns));
    RLX_TRY(oi_in_ints(c, 2, "ends", &ends, &ne));
    if (oi_has(c, 3)) RLX_TRY(oi_in_ints(c, 3, "axes", &axes, &na));
    if (oi_has(c, 4)) RLX_TRY(oi_in_ints(c, 4, "steps", &steps, &nst));
  }
  const rlx_shape xs = *oi_in_shape(c, 0);
  if (ns != ne || (axes && na != ns) || (steps && nst != ns))
    return oi_bad(c, "starts, ends, axes and steps must have the same length (%zu, %zu, %zu, %zu)", ns, ne, na, nst);
  if (ns > xs.rank) return oi_bad(c, "%zu slice entries for a rank-%u input", ns, xs.rank);
  bool seen[RLX_MAX_RANK] = {false};
  rlx_id y = c->in[0];
  for (size_t i = 0; i < ns; i++) {
    uint32_t a = (uint32_t)i;
    if (axes) RLX_TRY(oi_axis(c, axes[i], xs.rank, "axes entry", &a));
    if (seen[a]) return oi_bad(c, "axis %u is sliced twice", a);
    seen[a] = true;
    int64_t step = steps ? steps[i] : 1;
    if (step == 0) return oi_bad(c, "steps[%zu] is 0", i);
    rlx_dim d = xs.dims[a];
    if (!rlx_dim_is_static(d)) return oi_unsupported(c, "slicing the symbolic axis %u", a);
    int64_t s = starts[i], e = ends[i], len;
    if (s < 0) s += d;
    if (e < 0) e += d;
    if (step > 0) {
      s = clamp64(s, 0, d);
      e = clamp64(e, 0, d);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = clamp64(s, 0, d - 1);
      e = clamp64(e, -1, d - 1);
      len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
      if (d == 0) len = 0, s = 0;
    }
    if (step == 1) {
      RLX_TRY(oi_narrow(c, y, a, s, len, &y));
    } else {
      rlx_attrs_Slice sa = {.axis = a, .start = s, .len = len, .step = step};
      RLX_TRY(oi_emit(c, RLX_OP_Slice, &y, 1, &sa, &y));
    }
  }
  c->out[0] = y;
  return RLX_OK;
}

/* ---- gathers and scatters ---- */

static rlx_status map_gather(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  RLX_TRY(oi_need(c, 1, "indices"));
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  const rlx_shape *xs = oi_in_shape(c, 0);
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs->rank, "attribute axis", &a));
  rlx_dim d = xs->dims[a];
  rlx_id idx = c->in[1];
  if (!rlx_dtype_is_int((rlx_dtype)oi_shape(c, idx)->dtype)) return oi_bad(c, "input indices must be integers");
  if (rlx_dtype_is_signed_int((rlx_dtype)oi_shape(c, idx)->dtype)) {
    if (!rlx_dim_is_static(d))
      return oi_unsupported(c, "gathering along a symbolic axis (negative indices need its extent)");
    RLX_TRY(oi_wrap_index(c, idx, d, &idx)); /* RLX's Gather takes no negative indices */
  }
  rlx_attrs_Gather ga = {.axis = a};
  rlx_id in[2] = {c->in[0], idx};
  return oi_emit(c, RLX_OP_Gather, in, 2, &ga, &c->out[0]);
}

static rlx_status map_gather_elements(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  RLX_TRY(oi_need(c, 1, "indices"));
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, oi_in_shape(c, 0)->rank, "attribute axis", &a));
  rlx_attrs_GatherElements ga = {.axis = a};
  return oi_emit(c, RLX_OP_GatherElements, c->in, 2, &ga, &c->out[0]);
}

static rlx_status map_gather_nd(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  RLX_TRY(oi_need(c, 1, "indices"));
  int64_t bd = 0;
  if (c->opset >= 12) RLX_TRY(oi_attr_i(c, "batch_dims", 0, &bd));
  rlx_attrs_GatherNd ga = {.batch_dims = bd};
  return oi_emit(c, RLX_OP_GatherNd, c->in, 2, &ga, &c->out[0]);
}

static rlx_status reduction_attr(oi_node *c, int32_t *out) {
  const char *r;
  RLX_TRY(oi_attr_s(c, "reduction", "none", &r));
  if (strcmp(r, "none") == 0)
    *out = RLX_SCATTER_REDUCTION_NONE;
  else if (strcmp(r, "add") == 0)
    *out = RLX_SCATTER_REDUCTION_ADD;
  else if (strcmp(r, "mul") == 0)
    *out = RLX_SCATTER_REDUCTION_MUL;
  else if (strcmp(r, "max") == 0 && c->opset >= 18)
    *out = RLX_SCATTER_REDUCTION_MAX;
  else if (strcmp(r, "min") == 0 && c->opset >= 18)
    *out = RLX_SCATTER_REDUCTION_MIN;
  else
    return oi_bad(c, "attribute reduction is \"%s\"", r);
  return RLX_OK;
}

static rlx_status map_scatter_elements(oi_node *c) {
  for (uint32_t k = 0; k < 3; k++) RLX_TRY(oi_need(c, k, k == 0 ? "data" : k == 1 ? "indices" : "updates"));
  int64_t axis;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, oi_in_shape(c, 0)->rank, "attribute axis", &a));
  rlx_attrs_ScatterElements sa = {.axis = a, .reduction = RLX_SCATTER_REDUCTION_NONE};
  if (c->opset >= 16) RLX_TRY(reduction_attr(c, &sa.reduction));
  return oi_emit(c, RLX_OP_ScatterElements, c->in, 3, &sa, &c->out[0]);
}

static rlx_status map_scatter_nd(oi_node *c) {
  for (uint32_t k = 0; k < 3; k++) RLX_TRY(oi_need(c, k, k == 0 ? "data" : k == 1 ? "indices" : "updates"));
  rlx_attrs_ScatterNd sa = {.reduction = RLX_SCATTER_REDUCTION_NONE};
  if (c->opset >= 16) RLX_TRY(reduction_attr(c, &sa.reduction));
  return oi_emit(c, RLX_OP_ScatterNd, c->in, 3, &sa, &c->out[0]);
}

/* ---- Expand, Tile, Pad ---- */

static rlx_status map_expand(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t *sv;
  size_t sn;
  RLX_TRY(oi_in_ints(c, 1, "shape", &sv, &sn));
  const rlx_shape xs = *oi_in_shape(c, 0);
  size_t r = sn > xs.rank ? sn : xs.rank;
  if (r > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %zu", r);
  int64_t t[RLX_MAX_RANK];
  for (size_t i = 0; i < r; i++) { /* bidirectional broadcast of the input's dims with shape */
    int64_t s = i + sn >= r ? sv[i + sn - r] : 1;
    rlx_dim x = i + xs.rank >= r ? xs.dims[i + xs.rank - r] : 1;
    if (s < 0) return oi_bad(c, "shape[%zu] is %lld", i + sn - r, (long long)s);
    if (!rlx_dim_is_static(x)) {
      if (s != 1) return oi_unsupported(c, "expanding a symbolic dim to %lld", (long long)s);
      t[i] = -1;
    } else if (x == s || s == 1) {
      t[i] = x;
    } else if (x == 1) {
      t[i] = s;
    } else {
      return oi_bad(c, "input %s cannot be broadcast to shape dim %lld", rlx_fmt_shape(&xs), (long long)s);
    }
  }
  bool same = r == xs.rank;
  for (size_t i = 0; i < r && same; i++) same = t[i] == -1 || t[i] == xs.dims[i];
  if (same) {
    c->out[0] = c->in[0];
    return RLX_OK;
  }
  rlx_attrs_Expand ea = {.target_shape = {.v = t, .n = (uint32_t)r}};
  return oi_emit(c, RLX_OP_Expand, c->in, 1, &ea, &c->out[0]);
}

static rlx_status map_tile(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t *rv;
  size_t rn;
  RLX_TRY(oi_in_ints(c, 1, "repeats", &rv, &rn));
  if (rn != oi_in_shape(c, 0)->rank)
    return oi_bad(c, "repeats has %zu entries; the input has rank %u", rn, oi_in_shape(c, 0)->rank);
  for (size_t i = 0; i < rn; i++)
    if (rv[i] < 0) return oi_bad(c, "repeats[%zu] is %lld", i, (long long)rv[i]);
  rlx_attrs_Tile ta = {.reps = {.v = rv, .n = (uint32_t)rn}};
  return oi_emit(c, RLX_OP_Tile, c->in, 1, &ta, &c->out[0]);
}

static rlx_status map_pad(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  const rlx_shape xs = *oi_in_shape(c, 0);
  uint32_t r = xs.rank;
  const char *mode;
  RLX_TRY(oi_attr_s(c, "mode", "constant", &mode));
  int64_t *pv;
  size_t pn;
  double value = 0;
  if (c->opset < 11) {
    const int64_t *a;
    bool present;
    RLX_TRY(oi_attr_ints(c, c->opset < 2 ? "paddings" : "pads", &a, &pn, &present));
    if (!present) return oi_bad(c, "attribute pads is required");
    pv = (int64_t *)a;
    float v;
    RLX_TRY(oi_attr_f(c, "value", 0.0f, &v));
    value = v;
  } else {
    RLX_TRY(oi_in_ints(c, 1, "pads", &pv, &pn));
    if (oi_has(c, 2)) {
      double *cv;
      size_t cn;
      RLX_TRY(oi_in_f64s(c, 2, "constant_value", &cv, &cn));
      if (cn != 1) return oi_bad(c, "input 2 (constant_value) must hold one value");
      value = cv[0];
    }
  }
  /* axes (opset 18) select which axes pads refer to */
  uint32_t naxes = r;
  uint32_t axis_of[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) axis_of[i] = i;
  if (c->opset >= 18 && oi_has(c, 3)) {
    int64_t *av;
    size_t an;
    RLX_TRY(oi_in_ints(c, 3, "axes", &av, &an));
    if (an > r) return oi_bad(c, "axes has %zu entries for a rank-%u input", an, r);
    naxes = (uint32_t)an;
    for (uint32_t i = 0; i < naxes; i++) RLX_TRY(oi_axis(c, av[i], r, "axes entry", &axis_of[i]));
  }
  if (pn != 2 * naxes) return oi_bad(c, "pads has %zu entries; expected %u", pn, 2 * naxes);
  int32_t pm;
  if (strcmp(mode, "constant") == 0)
    pm = RLX_PAD_MODE_CONSTANT;
  else if (strcmp(mode, "reflect") == 0)
    pm = RLX_PAD_MODE_REFLECT;
  else if (strcmp(mode, "edge") == 0)
    pm = RLX_PAD_MODE_REPLICATE;
  else if (strcmp(mode, "wrap") == 0)
    pm = RLX_PAD_MODE_CIRCULAR;
  else
    return oi_bad(c, "attribute mode is \"%s\"", mode);
  int64_t pads[2 * RLX_MAX_RANK] = {0}, crop_b[RLX_MAX_RANK] = {0}, crop_e[RLX_MAX_RANK] = {0};
  bool any_pad = false, any_crop = false;
  for (uint32_t i = 0; i < naxes; i++) {
    uint32_t a = axis_of[i];
    int64_t b = pv[i], e = pv[naxes + i];
    if (b < -((int64_t)1 << 40) || e < -((int64_t)1 << 40) || b > ((int64_t)1 << 40) || e > ((int64_t)1 << 40))
      return oi_bad(c, "pads for axis %u are out of range", a);
    pads[2 * a] = b > 0 ? b : 0;
    pads[2 * a + 1] = e > 0 ? e : 0;
    crop_b[a] = b < 0 ? -b : 0;
    crop_e[a] = e < 0 ? -e : 0;
    any_pad |= b > 0 || e > 0;
    any_crop |= b < 0 || e < 0;
  }
  rlx_id y = c->in[0];
  /* negative pads crop first (the crop never touches padded cells) */
  if (any_crop)
    for (uint32_t a = 0; a < r; a++) {
      if (!crop_b[a] && !crop_e[a]) continue;
      rlx_dim d = oi_shape(c, y)->dims[a];
      if (!rlx_dim_is_static(d)) return oi_unsupported(c, "negative pads on a symbolic axis");
      if (crop_b[a] + crop_e[a] > d) return oi_bad(c, "negative pads remove more than axis %u holds", a);
      RLX_TRY(oi_narrow(c, y, a, crop_b[a], d - crop_b[a] - crop_e[a], &y));
    }
  if (any_pad) {
    if (!rlx_dtype_is_float((rlx_dtype)xs.dtype) && pm == RLX_PAD_MODE_CONSTANT && value != floor(value))
      return oi_bad(c, "constant_value %g is not an integer for a %s input", value,
                    rlx_dtype_name((rlx_dtype)xs.dtype));
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 2 * r}, .mode = pm, .value = (float)value};
    if (pm == RLX_PAD_MODE_CONSTANT && (double)(float)value != value && rlx_dtype_is_float((rlx_dtype)xs.dtype) &&
        xs.dtype == RLX_F64)
      return oi_unsupported(c, "an f64 constant_value that f32 cannot hold exactly");
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &y, 1, &pa, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

/* ---- constants and shape queries ---- */

static rlx_status map_shape(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  const rlx_shape *xs = oi_in_shape(c, 0);
  int64_t start = 0, end = xs->rank;
  if (c->opset >= 15) {
    RLX_TRY(oi_attr_i(c, "start", 0, &start));
    RLX_TRY(oi_attr_i(c, "end", xs->rank, &end));
  }
  if (start < 0) start += xs->rank;
  if (end < 0) end += xs->rank;
  start = clamp64(start, 0, xs->rank);
  end = clamp64(end, 0, xs->rank);
  int64_t v[RLX_MAX_RANK];
  uint32_t n = 0;
  for (int64_t i = start; i < end; i++) {
    if (!rlx_dim_is_static(xs->dims[i]))
      return oi_unsupported(c, "the shape of %s holds symbolic dims; bind them (rlx_onnx_options)", rlx_fmt_shape(xs));
    v[n++] = xs->dims[i];
  }
  return oi_i64s(c, v, n, &c->out[0]);
}

static rlx_status map_size(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  const rlx_shape *xs = oi_in_shape(c, 0);
  size_t n;
  if (!rlx_shape_is_static(xs)) return oi_unsupported(c, "the size of %s (symbolic dims)", rlx_fmt_shape(xs));
  RLX_TRY(rlx_shape_numel(xs, &n));
  return oi_scalar(c, RLX_I64, (double)n, &c->out[0]);
}

/* A tensor attribute as a Constant node. */
static rlx_status tensor_const(oi_node *c, const Onnx__TensorProto *t, const char *what, rlx_id *out) {
  rlx_shape sh;
  void *data;
  size_t nb;
  rlx_status st = oi_tensor_bytes(t, what, c->m->base_dir, c->m->al, &sh, &data, &nb);
  if (st == RLX_ERR_UNSUPPORTED) {
    snprintf(c->reason, sizeof c->reason, "%s", rlx_last_error());
    c->unsupported = true;
    return st;
  }
  RLX_TRY(st);
  st = oi_const(c, sh, data, nb, out);
  c->m->al->free(c->m->al->ctx, data);
  return st;
}

static rlx_status map_constant(oi_node *c) {
  const Onnx__AttributeProto *a = NULL;
  int set = 0;
  static const char *const names[] = {"value",      "value_float",  "value_floats",  "value_int",
                                      "value_ints", "value_string", "value_strings", "sparse_value"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (oi_attr(c, names[i])) {
      a = oi_attr(c, names[i]);
      set++;
    }
  if (set != 1) return oi_bad(c, "exactly one value attribute must be set (found %d)", set);
  const char *n = a->name;
  if (strcmp(n, "value") == 0) {
    if (oi_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
      return oi_bad(c, "attribute value must be a TENSOR");
    return tensor_const(c, a->t, "attribute value", &c->out[0]);
  }
  if (strcmp(n, "value_float") == 0) {
    float f;
    RLX_TRY(oi_attr_f(c, n, 0, &f));
    return oi_scalar(c, RLX_F32, f, &c->out[0]);
  }
  if (strcmp(n, "value_int") == 0) {
    int64_t i;
    RLX_TRY(oi_attr_i(c, n, 0, &i));
    return oi_const(c, rlx_shape_scalar(RLX_I64), &i, 8, &c->out[0]);
  }
  if (strcmp(n, "value_floats") == 0) {
    const float *v;
    size_t cnt;
    RLX_TRY(oi_attr_floats(c, n, &v, &cnt, NULL));
    rlx_dim d = (rlx_dim)cnt;
    return oi_const(c, rlx_shape_make(RLX_F32, 1, &d), v, cnt * 4, &c->out[0]);
  }
  if (strcmp(n, "value_ints") == 0) {
    const int64_t *v;
    size_t cnt;
    RLX_TRY(oi_attr_ints(c, n, &v, &cnt, NULL));
    rlx_dim d = (rlx_dim)cnt;
    return oi_const(c, rlx_shape_make(RLX_I64, 1, &d), v, cnt * 8, &c->out[0]);
  }
  return oi_unsupported(c, "attribute %s (strings and sparse tensors have no RLX form)", n);
}

static rlx_status map_constant_of_shape(oi_node *c) {
  int64_t *sv;
  size_t sn;
  RLX_TRY(oi_in_ints(c, 0, "input", &sv, &sn));
  if (sn > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %zu", sn);
  rlx_dim d[RLX_MAX_RANK];
  for (size_t i = 0; i < sn; i++) {
    if (sv[i] < 0) return oi_bad(c, "input shape[%zu] is %lld", i, (long long)sv[i]);
    d[i] = sv[i];
  }
  rlx_dtype t = RLX_F32;
  double v = 0;
  const Onnx__AttributeProto *a = oi_attr(c, "value");
  if (a) {
    if (oi_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !a->t)
      return oi_bad(c, "attribute value must be a TENSOR");
    rlx_shape sh;
    void *data;
    size_t nb;
    rlx_status st = oi_tensor_bytes(a->t, "attribute value", c->m->base_dir, c->m->al, &sh, &data, &nb);
    if (st == RLX_ERR_UNSUPPORTED) return oi_unsupported(c, "%s", rlx_last_error());
    RLX_TRY(st);
    size_t numel = 0;
    rlx_shape_numel(&sh, &numel);
    if (numel != 1) {
      c->m->al->free(c->m->al->ctx, data);
      return oi_bad(c, "attribute value must hold one element, not %zu", numel);
    }
    t = (rlx_dtype)sh.dtype;
    v = oi_elem_f64(data, t, 0);
    bool exact_int = rlx_dtype_is_int(t);
    int64_t iv = exact_int ? oi_elem_i64(data, t, 0) : 0;
    c->m->al->free(c->m->al->ctx, data);
    if (exact_int && (double)iv != v) return oi_unsupported(c, "an integer fill value beyond 2^53");
  }
  return oi_fill(c, rlx_shape_make(t, (uint32_t)sn, d), v, &c->out[0]);
}

static rlx_status map_range(oi_node *c) {
  const void *dv[3];
  rlx_shape sh[3];
  for (uint32_t k = 0; k < 3; k++) {
    RLX_TRY(oi_need(c, k, k == 0 ? "start" : k == 1 ? "limit" : "delta"));
    if (!oi_in_value(c, k, &dv[k], &sh[k]))
      return oi_needs_value(c, "input %u must be known at import time (the result's length depends on it)", k);
    size_t n;
    RLX_TRY(rlx_shape_numel(&sh[k], &n));
    if (n != 1) return oi_bad(c, "input %u must be a scalar", k);
  }
  rlx_dtype t = (rlx_dtype)sh[0].dtype;
  double n;
  int64_t count;
  if (rlx_dtype_is_int(t)) {
    int64_t s = oi_elem_i64(dv[0], t, 0), l = oi_elem_i64(dv[1], t, 0), d = oi_elem_i64(dv[2], t, 0);
    if (d == 0) return oi_bad(c, "delta is 0");
    n = ceil(((double)l - (double)s) / (double)d);
  } else {
    double s = oi_elem_f64(dv[0], t, 0), l = oi_elem_f64(dv[1], t, 0), d = oi_elem_f64(dv[2], t, 0);
    if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
      return oi_bad(c, "start, limit and delta must be finite with delta != 0");
    n = ceil((l - s) / d);
  }
  if (!(n > 0)) n = 0;
  if (n > (double)((int64_t)1 << 28)) return oi_unsupported(c, "a range of %.0f elements", n);
  count = (int64_t)n;
  rlx_dim dd = count;
  rlx_shape os = rlx_shape_make(t, 1, &dd);
  size_t nb;
  RLX_TRY(rlx_shape_nbytes(&os, &nb));
  void *buf = oi_scratch(c, nb);
  if (!buf) return oi_nomem(c);
  /* opset 27 stash_type: 16-bit floats accumulate in f32 (1, the default; here start + i * delta
   * in f64, which differs from step-by-step f32 sums only far below 16-bit precision) or, with 0,
   * in their own type, rounding every step */
  int64_t stash = 1;
  if (c->opset >= 27) RLX_TRY(oi_attr_i(c, "stash_type", 1, &stash));
  bool own_type = stash == 0 && (t == RLX_F16 || t == RLX_BF16);
  for (int64_t i = 0; i < count; i++) {
    if (rlx_dtype_is_int(t))
      rlx_elem_set_i64(buf, t, (size_t)i, oi_elem_i64(dv[0], t, 0) + i * oi_elem_i64(dv[2], t, 0));
    else if (own_type)
      rlx_elem_set(buf, t, (size_t)i,
                   i == 0 ? oi_elem_f64(dv[0], t, 0) : oi_elem_f64(buf, t, (size_t)i - 1) + oi_elem_f64(dv[2], t, 0));
    else
      rlx_elem_set(buf, t, (size_t)i, oi_elem_f64(dv[0], t, 0) + (double)i * oi_elem_f64(dv[2], t, 0));
  }
  return oi_const(c, os, buf, nb, &c->out[0]);
}

static rlx_status map_eye_like(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  const rlx_shape *xs = oi_in_shape(c, 0);
  if (xs->rank != 2) return oi_bad(c, "input must be 2-D, got %s", rlx_fmt_shape(xs));
  RLX_TRY(oi_need_static(c, xs, "input"));
  int64_t dt, k;
  RLX_TRY(oi_attr_i(c, "dtype", oi_dtype_to_onnx((rlx_dtype)xs->dtype), &dt));
  RLX_TRY(oi_attr_i(c, "k", 0, &k));
  rlx_dtype t;
  if (dt < 0 || dt > 64 || !oi_dtype_from_onnx((int32_t)dt, &t))
    return oi_unsupported(c, "dtype %s", oi_onnx_dtype_name((int32_t)dt));
  rlx_shape os = rlx_shape_make(t, 2, xs->dims);
  os.dtype = (uint8_t)t;
  size_t nb;
  RLX_TRY(rlx_shape_nbytes(&os, &nb));
  uint8_t *buf = oi_scratch(c, nb);
  if (!buf) return oi_nomem(c);
  memset(buf, 0, nb);
  for (int64_t i = 0; i < xs->dims[0]; i++) {
    int64_t j = i + k;
    if (j >= 0 && j < xs->dims[1]) rlx_elem_set(buf, t, (size_t)(i * xs->dims[1] + j), 1.0);
  }
  return oi_const(c, os, buf, nb, &c->out[0]);
}

static rlx_status map_onehot(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "indices"));
  RLX_TRY(oi_need(c, 2, "values"));
  double *dv;
  size_t dn;
  RLX_TRY(oi_in_f64s(c, 1, "depth", &dv, &dn));
  if (dn != 1 || !(dv[0] >= 1) || dv[0] > (double)((int64_t)1 << 24))
    return oi_bad(c, "depth must be a positive scalar");
  int64_t depth = (int64_t)dv[0], axis;
  RLX_TRY(oi_attr_i(c, "axis", -1, &axis));
  const rlx_shape *is = oi_in_shape(c, 0);
  uint32_t r = is->rank + 1u, a;
  if (r > RLX_MAX_RANK) return oi_unsupported(c, "a result of rank %u", r);
  RLX_TRY(oi_axis(c, axis, r, "attribute axis", &a));
  rlx_id idx, iota, eq, off, on, vals = c->in[2];
  size_t vn;
  if (rlx_shape_numel(oi_shape(c, vals), &vn) != RLX_OK || vn != 2) return oi_bad(c, "values must hold [off, on]");
  int64_t one = 1;
  RLX_TRY(oi_reshape(c, vals, 1, (int64_t[]){2}, &vals));
  RLX_TRY(oi_narrow(c, vals, 0, 0, 1, &off));
  RLX_TRY(oi_narrow(c, vals, 0, 1, 1, &on));
  RLX_TRY(oi_reshape(c, off, 0, &one, &off));
  RLX_TRY(oi_reshape(c, on, 0, &one, &on));
  RLX_TRY(oi_cast(c, c->in[0], RLX_I64, &idx));
  RLX_TRY(oi_wrap_index(c, idx, depth, &idx));
  rlx_dim ud[RLX_MAX_RANK];
  for (uint32_t i = 0, j = 0; i < r; i++) ud[i] = i == a ? 1 : is->dims[j++];
  RLX_TRY(oi_reshape_dims(c, idx, r, ud, &idx));
  int64_t *v = oi_scratch(c, (size_t)depth * sizeof *v);
  if (!v) return oi_nomem(c);
  for (int64_t i = 0; i < depth; i++) v[i] = i;
  RLX_TRY(oi_i64s(c, v, (uint32_t)depth, &iota));
  RLX_TRY(oi_bcast_axis(c, iota, r, a, &iota));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, idx, iota, &eq));
  return oi_where(c, eq, on, off, &c->out[0]);
}

static rlx_status map_trilu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t upper, k = 0;
  RLX_TRY(oi_attr_i(c, "upper", 1, &upper));
  if (oi_has(c, 1)) {
    int64_t *kv;
    size_t kn;
    RLX_TRY(oi_in_ints(c, 1, "k", &kv, &kn));
    if (kn != 1) return oi_bad(c, "input k must be a scalar");
    k = kv[0];
  }
  if (oi_in_shape(c, 0)->rank < 2) return oi_bad(c, "input must have rank >= 2");
  rlx_attrs_Trilu ta = {.upper = upper != 0, .diagonal = k};
  return oi_emit(c, RLX_OP_Trilu, c->in, 1, &ta, &c->out[0]);
}

/* DepthToSpace / SpaceToDepth through reshape-transpose-reshape. */
static rlx_status map_depth_space(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t b;
  RLX_TRY(oi_attr_i(c, "blocksize", 0, &b));
  const rlx_shape xs = *oi_in_shape(c, 0);
  if (xs.rank != 4) return oi_bad(c, "input must be 4-D (NCHW), got %s", rlx_fmt_shape(&xs));
  RLX_TRY(oi_need_static(c, &xs, "input"));
  if (b < 1 || b > 65536) return oi_bad(c, "attribute blocksize is %lld", (long long)b);
  int64_t N = xs.dims[0], C = xs.dims[1], H = xs.dims[2], W = xs.dims[3];
  rlx_id y;
  if (strcmp(c->np->op_type, "DepthToSpace") == 0) {
    const char *mode;
    RLX_TRY(oi_attr_s(c, "mode", "DCR", &mode));
    if (C % (b * b)) return oi_bad(c, "channels (%lld) must be divisible by blocksize^2", (long long)C);
    bool dcr = strcmp(mode, "DCR") == 0;
    if (!dcr && strcmp(mode, "CRD") != 0) return oi_bad(c, "attribute mode is \"%s\"", mode);
    int64_t d6[6], perm[6];
    if (dcr) {
      int64_t a[6] = {N, b, b, C / (b * b), H, W}, p[6] = {0, 3, 4, 1, 5, 2};
      memcpy(d6, a, sizeof a), memcpy(perm, p, sizeof p);
    } else {
      int64_t a[6] = {N, C / (b * b), b, b, H, W}, p[6] = {0, 1, 4, 2, 5, 3};
      memcpy(d6, a, sizeof a), memcpy(perm, p, sizeof p);
    }
    int64_t o4[4] = {N, C / (b * b), H * b, W * b};
    RLX_TRY(oi_reshape(c, c->in[0], 6, d6, &y));
    RLX_TRY(oi_transpose(c, y, perm, &y));
    return oi_reshape(c, y, 4, o4, &c->out[0]);
  }
  if (H % b || W % b) return oi_bad(c, "H and W must be divisible by blocksize");
  /* opset 28 adds mode: DCR (the earlier behaviour) puts the block offsets before the channel,
   * CRD after it */
  const char *mode = "DCR";
  if (c->opset >= 28) RLX_TRY(oi_attr_s(c, "mode", "DCR", &mode));
  bool dcr = strcmp(mode, "DCR") == 0;
  if (!dcr && strcmp(mode, "CRD") != 0) return oi_bad(c, "attribute mode is \"%s\"", mode);
  int64_t d6[6] = {N, C, H / b, b, W / b, b}, perm[6] = {0, 3, 5, 1, 2, 4}, o4[4] = {N, C * b * b, H / b, W / b};
  if (!dcr) perm[1] = 1, perm[2] = 3, perm[3] = 5;
  RLX_TRY(oi_reshape(c, c->in[0], 6, d6, &y));
  RLX_TRY(oi_transpose(c, y, perm, &y));
  return oi_reshape(c, y, 4, o4, &c->out[0]);
}

/* CenterCropPad (opset 18): per listed axis, a centered crop (start rounded down) or zero padding
 * (the odd pixel on the end side) to the target extent; the targets must be known at import time. */
static rlx_status map_center_crop_pad(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input_data"));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  int64_t *tv;
  size_t tn;
  RLX_TRY(oi_in_ints(c, 1, "shape", &tv, &tn));
  const int64_t *av = NULL;
  size_t an = 0;
  bool has_axes;
  RLX_TRY(oi_attr_ints(c, "axes", &av, &an, &has_axes));
  if (!has_axes) an = xs.rank;
  if (tn != an) return oi_bad(c, "input shape has %zu entries for %zu axes", tn, an);
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  bool any_pad = false, seen[RLX_MAX_RANK] = {false};
  for (size_t i = 0; i < an; i++) {
    uint32_t a = (uint32_t)i;
    if (has_axes) RLX_TRY(oi_axis(c, av[i], xs.rank, "attribute axes entry", &a));
    if (seen[a]) return oi_bad(c, "attribute axes repeats axis %u", a);
    seen[a] = true;
    if (!rlx_dim_is_static(xs.dims[a])) return oi_unsupported(c, "center crop / pad of the symbolic axis %u", a);
    int64_t d = xs.dims[a], want = tv[i];
    if (want < 0) return oi_bad(c, "shape[%zu] is %lld", i, (long long)want);
    if (want < d)
      RLX_TRY(oi_narrow(c, x, a, (d - want) / 2, want, &x));
    else if (want > d)
      pads[2 * a] = (want - d) / 2, pads[2 * a + 1] = want - d - (want - d) / 2, any_pad = true;
  }
  if (any_pad) {
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 2 * xs.rank}, .mode = RLX_PAD_MODE_CONSTANT, .value = 0.0f};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &x, 1, &pa, &x));
  }
  c->out[0] = x;
  return RLX_OK;
}

static rlx_status map_compress(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t *cv;
  size_t cn;
  RLX_TRY(oi_in_ints(c, 1, "condition", &cv, &cn));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  uint32_t a = 0;
  if (oi_attr(c, "axis")) {
    int64_t axis;
    RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
    RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  } else {
    RLX_TRY(oi_need_static(c, &xs, "input"));
    size_t n;
    RLX_TRY(rlx_shape_numel(&xs, &n));
    int64_t flat = (int64_t)n;
    RLX_TRY(oi_reshape(c, x, 1, &flat, &x));
  }
  rlx_dim d = oi_shape(c, x)->dims[a];
  if (!rlx_dim_is_static(d)) return oi_unsupported(c, "compressing a symbolic axis");
  if ((int64_t)cn > d) return oi_bad(c, "condition has %zu entries but the axis has %lld", cn, (long long)d);
  int64_t *sel = oi_scratch(c, (cn + 1) * sizeof *sel);
  if (!sel) return oi_nomem(c);
  uint32_t n = 0;
  for (size_t i = 0; i < cn; i++)
    if (cv[i]) sel[n++] = (int64_t)i;
  rlx_id idx;
  RLX_TRY(oi_i64s(c, sel, n, &idx));
  rlx_attrs_Gather ga = {.axis = a};
  rlx_id in[2] = {x, idx};
  return oi_emit(c, RLX_OP_Gather, in, 2, &ga, &c->out[0]);
}

static rlx_status map_nonzero(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  const void *data;
  rlx_shape s;
  if (!oi_in_value(c, 0, &data, &s))
    return oi_needs_value(c, "input X must be known at import time (the result's shape depends on its values)");
  size_t n;
  RLX_TRY(rlx_shape_numel(&s, &n));
  size_t nz = 0;
  for (size_t i = 0; i < n; i++) nz += oi_elem_f64(data, (rlx_dtype)s.dtype, i) != 0;
  uint32_t r = s.rank ? s.rank : 1;
  int64_t *out = oi_scratch(c, (size_t)r * (nz ? nz : 1) * sizeof *out);
  if (!out) return oi_nomem(c);
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (oi_elem_f64(data, (rlx_dtype)s.dtype, i) == 0) continue;
    size_t rem = i;
    for (int k = (int)s.rank - 1; k >= 0; k--) {
      out[(size_t)k * nz + j] = (int64_t)(rem % (size_t)s.dims[k]);
      rem /= (size_t)s.dims[k];
    }
    if (s.rank == 0) out[j] = 0;
    j++;
  }
  rlx_dim d[2] = {r, (rlx_dim)nz};
  return oi_const(c, rlx_shape_make(RLX_I64, 2, d), out, (size_t)r * nz * 8, &c->out[0]);
}

/* ReverseSequence: per batch b, the first lens[b] steps along time_axis are reversed. The
 * lengths must be known at import time; the reversal is a GatherElements with a constant index
 * table. */
static rlx_status map_reverse_sequence(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t *lens;
  size_t nl;
  RLX_TRY(oi_in_ints(c, 1, "sequence_lens", &lens, &nl));
  int64_t ba, ta;
  RLX_TRY(oi_attr_i(c, "batch_axis", 1, &ba));
  RLX_TRY(oi_attr_i(c, "time_axis", 0, &ta));
  const rlx_shape xs = *oi_in_shape(c, 0);
  RLX_TRY(oi_need_static(c, &xs, "input"));
  if (xs.rank < 2 || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return oi_bad(c, "batch_axis and time_axis must be 0 and 1 (in either order) of a rank >= 2 input");
  int64_t B = xs.dims[ba], T = xs.dims[ta];
  if ((int64_t)nl != B) return oi_bad(c, "sequence_lens has %zu entries for a batch of %lld", nl, (long long)B);
  for (size_t b = 0; b < nl; b++)
    if (lens[b] < 0 || lens[b] > T)
      return oi_bad(c, "sequence_lens[%zu] is %lld for %lld steps", b, (long long)lens[b], (long long)T);
  size_t numel, nb;
  RLX_TRY(rlx_shape_numel(&xs, &numel));
  if (!rlx_mul_size(numel, 8, &nb)) return oi_bad(c, "input too large");
  int64_t *idx = oi_scratch(c, nb);
  if (!idx) return oi_nomem(c);
  size_t bt = (size_t)B * (size_t)T, inner = bt ? numel / bt : 0;
  for (size_t i = 0; i < numel; i++) {
    size_t outer = inner ? i / inner : 0;
    int64_t a0 = (int64_t)(outer / (size_t)xs.dims[1]), a1 = (int64_t)(outer % (size_t)xs.dims[1]);
    int64_t b = ba == 0 ? a0 : a1, t = ta == 0 ? a0 : a1;
    idx[i] = t < lens[b] ? lens[b] - 1 - t : t;
  }
  rlx_shape is = xs;
  is.dtype = RLX_I64;
  rlx_id it;
  RLX_TRY(oi_const(c, is, idx, nb, &it));
  rlx_attrs_GatherElements ga = {.axis = ta};
  rlx_id in[2] = {c->in[0], it};
  return oi_emit(c, RLX_OP_GatherElements, in, 2, &ga, &c->out[0]);
}

const oi_op_entry oi_ops_shape[] = {
    {"ReverseSequence", 10, OI_MAX_OPSET, map_reverse_sequence},
    {"Reshape", 1, OI_MAX_OPSET, map_reshape},
    {"Flatten", 1, OI_MAX_OPSET, map_flatten},
    {"Squeeze", 1, OI_MAX_OPSET, map_squeeze},
    {"Unsqueeze", 1, OI_MAX_OPSET, map_unsqueeze},
    {"Transpose", 1, OI_MAX_OPSET, map_transpose},
    {"Concat", 1, OI_MAX_OPSET, map_concat},
    {"Split", 1, OI_MAX_OPSET, map_split},
    {"Slice", 1, OI_MAX_OPSET, map_slice},
    {"Gather", 1, OI_MAX_OPSET, map_gather},
    {"GatherElements", 11, OI_MAX_OPSET, map_gather_elements},
    {"GatherND", 11, OI_MAX_OPSET, map_gather_nd},
    {"Scatter", 9, 10, map_scatter_elements},
    {"ScatterElements", 11, OI_MAX_OPSET, map_scatter_elements},
    {"ScatterND", 11, OI_MAX_OPSET, map_scatter_nd},
    {"Expand", 8, OI_MAX_OPSET, map_expand},
    {"Tile", 6, OI_MAX_OPSET, map_tile},
    {"Pad", 2, OI_MAX_OPSET, map_pad},
    {"Shape", 1, OI_MAX_OPSET, map_shape},
    {"Size", 1, OI_MAX_OPSET, map_size},
    {"Constant", 1, OI_MAX_OPSET, map_constant},
    {"ConstantOfShape", 9, OI_MAX_OPSET, map_constant_of_shape},
    {"Range", 11, OI_MAX_OPSET, map_range},
    {"EyeLike", 9, OI_MAX_OPSET, map_eye_like},
    {"OneHot", 9, OI_MAX_OPSET, map_onehot},
    {"Trilu", 14, OI_MAX_OPSET, map_trilu},
    {"DepthToSpace", 1, OI_MAX_OPSET, map_depth_space},
    {"SpaceToDepth", 1, OI_MAX_OPSET, map_depth_space},
    {"Compress", 9, OI_MAX_OPSET, map_compress},
    {"CenterCropPad", 18, OI_MAX_OPSET, map_center_crop_pad},
    {"NonZero", 9, OI_MAX_OPSET, map_nonzero},
};
const uint32_t oi_ops_shape_len = sizeof oi_ops_shape / sizeof oi_ops_shape[0];
