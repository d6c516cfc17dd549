/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX ops whose result length depends on input values, evaluated while importing when those
 * values are known (constants, or graph inputs whose values the options give): NonMaxSuppression
 * and Unique. Unknown values end in oi_needs_value, so the importer can retry with the inputs'
 * values. TfIdfVectorizer has a static result shape and maps onto run-time RLX ops instead
 * (n-gram matching with Compare / Mul / Reduce, then a Gather onto the output columns). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* ---- NonMaxSuppression ---- */

typedef struct nms_box {
  double y0, x0, y1, x1; /* min / max corners */
} nms_box;

typedef struct nms_cand {
  double score;
  int64_t idx;
} nms_cand;

/* Higher score first; equal scores keep the lower box index first. */
static int nms_cand_cmp(const void *pa, const void *pb) {
  const nms_cand *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Does the overlap of a and b (intersection over union) exceed thr? Boxes without area never
 * suppress or get suppressed. */
static bool nms_overlaps(const nms_box *a, const nms_box *b, double thr) {
  double area_a = (a->x1 - a->x0) * (a->y1 - a->y0), area_b = (b->x1 - b->x0) * (b->y1 - b->y0);
  if (!(area_a > 0) || !(area_b > 0)) return false;
  double iw = fmin(a->x1, b->x1) - fmax(a->x0, b->x0), ih = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
  if (!(iw > 0) || !(ih > 0)) return false;
  double inter = iw * ih, uni = area_a + area_b - inter;
  if (!(uni > 0)) return false;
  return inter / uni > thr;
}

/* An optional scalar input (absent or empty: *present false). */
static rlx_status opt_scalar(oi_node *c, uint32_t k, const char *what, double *v, bool *present) {
  *present = false;
  if (!oi_has(c, k)) return RLX_OK;
  double *d;
  size_t n;
  RLX_TRY(oi_in_f64s(c, k, what, &d, &n));
  if (n > 1) return oi_bad(c, "input %u (%s) must hold one value, not %zu", k, what, n);
  if (n == 1) *v = d[0], *present = true;
  return RLX_OK;
}

static rlx_status map_nms(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "boxes"));
  RLX_TRY(oi_need(c, 1, "scores"));
  int64_t center;
  RLX_TRY(oi_attr_i(c, "center_point_box", 0, &center));
  if (center != 0 && center != 1)
    return oi_bad(c, "attribute center_point_box must be 0 or 1, not %lld", (long long)center);
  const rlx_shape *bs = oi_in_shape(c, 0), *ss = oi_in_shape(c, 1);
  if (bs->rank != 3 || bs->dims[2] != 4)
    return oi_bad(c, "boxes must have shape [batches, boxes, 4], got %s", rlx_fmt_shape(bs));
  if (ss->rank != 3) return oi_bad(c, "scores must have shape [batches, classes, boxes], got %s", rlx_fmt_shape(ss));
  for (uint32_t k = 0; k < 2; k++) {
    rlx_dtype t = (rlx_dtype)(k ? ss : bs)->dtype;
    if (rlx_dtype_class_of(t) != RLX_CLASS_FLOAT)
      return oi_bad(c, "%s must be floating point, not %s", k ? "scores" : "boxes", rlx_dtype_name(t));
  }
  const void *bd, *sd;
  rlx_shape bsh, ssh;
  if (!oi_in_value(c, 0, &bd, &bsh) || !oi_in_value(c, 1, &sd, &ssh))
    return oi_needs_value(c, "inputs boxes and scores must be known at import time (the number of selected boxes "
                             "depends on their values)");
  double maxo = 0, iou = 0, sthr = 0; /* defaults: select nothing, suppress any overlap */
  bool has_iou, has_sthr;
  if (oi_has(c, 2)) {
    int64_t *mv;
    size_t mn;
    RLX_TRY(oi_in_ints(c, 2, "max_output_boxes_per_class", &mv, &mn));
    if (mn > 1) return oi_bad(c, "input 2 (max_output_boxes_per_class) must hold one value, not %zu", mn);
    if (mn == 1 && mv[0] > 0) maxo = (double)mv[0]; /* negative counts select nothing */
  }
  RLX_TRY(opt_scalar(c, 3, "iou_threshold", &iou, &has_iou));
  RLX_TRY(opt_scalar(c, 4, "score_threshold", &sthr, &has_sthr));
  if (has_iou && !(iou >= 0 && iou <= 1)) return oi_bad(c, "iou_threshold must lie in [0, 1], not %g", iou);
  int64_t B = bsh.dims[0], N = bsh.dims[1], C = ssh.dims[1];
  if (ssh.dims[0] != B || ssh.dims[2] != N)
    return oi_bad(c, "scores %s do not match boxes %s (want [%lld, classes, %lld])", rlx_fmt_shape(&ssh),
                  rlx_fmt_shape(&bsh), (long long)B, (long long)N);
  int64_t per_class = (int64_t)fmin(maxo, (double)N);
  size_t nsel_max = (size_t)B * (size_t)C * (size_t)per_class;
  nms_box *boxes = oi_scratch(c, (size_t)N * sizeof *boxes);
  nms_cand *cand = oi_scratch(c, (size_t)N * sizeof *cand);
  int64_t *kept = oi_scratch(c, (size_t)N * sizeof *kept);
  int64_t *out = oi_scratch(c, nsel_max * 3 * sizeof *out);
  if (!boxes || !cand || !kept || !out) return oi_nomem(c);
  rlx_dtype bt = (rlx_dtype)bsh.dtype, st = (rlx_dtype)ssh.dtype;
  size_t nsel = 0;
  for (int64_t b = 0; b < B; b++) {
    for (int64_t i = 0; i < N; i++) {
      size_t o = (size_t)(b * N + i) * 4;
      double v[4];
      for (int k = 0; k < 4; k++) v[k] = oi_elem_f64(bd, bt, o + (size_t)k);
      nms_box *x = &boxes[i];
      if (center) { /* [x_center, y_center, width, height] */
        x->x0 = v[0] - v[2] / 2, x->x1 = v[0] + v[2] / 2;
        x->y0 = v[1] - v[3] / 2, x->y1 = v[1] + v[3] / 2;
      } else { /* [y1, x1, y2, x2], either corner pair */
        x->y0 = fmin(v[0], v[2]), x->y1 = fmax(v[0], v[2]);
        x->x0 = fmin(v[1], v[3]), x->x1 = fmax(v[1], v[3]);
      }
    }
    for (int64_t k = 0; k < C && per_class > 0; k++) {
      size_t nc = 0;
      for (int64_t i = 0; i < N; i++) {
        double s = oi_elem_f64(sd, st, (size_t)((b * C + k) * N + i));
        if (isnan(s) || (has_sthr && !(s > sthr))) continue;
        cand[nc++] = (nms_cand){s, i};
      }
      qsort(cand, nc, sizeof *cand, nms_cand_cmp);
      int64_t nk = 0;
      for (size_t j = 0; j < nc && nk < per_class; j++) {
        bool suppressed = false;
        for (int64_t q = 0; q < nk && !suppressed; q++)
          suppressed = nms_overlaps(&boxes[kept[q]], &boxes[cand[j].idx], iou);
        if (suppressed) continue;
        kept[nk++] = cand[j].idx;
        out[nsel * 3] = b, out[nsel * 3 + 1] = k, out[nsel * 3 + 2] = cand[j].idx;
        nsel++;
      }
    }
  }
  rlx_dim d[2] = {(rlx_dim)nsel, 3};
  return oi_const(c, rlx_shape_make(RLX_I64, 2, d), out, nsel * 3 * sizeof *out, &c->out[0]);
}

/* ---- Unique ---- */

/* The slices compared by Unique: slice j holds x[o, j, i] for o < outer, i < inner. */
typedef struct uq_view {
  const void *data;
  rlx_dtype t;
  bool is_float;
  size_t outer, n, inner;
} uq_view;

/* Orders two elements; NaN equals NaN and sorts after every number. */
static int uq_elem_cmp(const uq_view *v, size_t ia, size_t ib) {
  if (v->is_float) {
    double a = oi_elem_f64(v->data, v->t, ia), b = oi_elem_f64(v->data, v->t, ib);
    if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
    return (a > b) - (a < b);
  }
  int64_t a = oi_elem_i64(v->data, v->t, ia), b = oi_elem_i64(v->data, v->t, ib);
  return (a > b) - (a < b);
}

/* Lexicographic order of slices ja and jb (row-major over the slice's elements). */
static int uq_slice_cmp(const uq_view *v, int64_t ja, int64_t jb) {
  for (size_t o = 0; o < v->outer; o++)
    for (size_t i = 0; i < v->inner; i++) {
      size_t base = o * v->n * v->inner + i;
      int r = uq_elem_cmp(v, base + (size_t)ja * v->inner, base + (size_t)jb * v->inner);
      if (r) return r;
    }
  return 0;
}

/* Stable merge sort of slice indices (tmp: n entries). */
static void uq_sort(const uq_view *v, int64_t *a, int64_t *tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  uq_sort(v, a, tmp, h);
  uq_sort(v, a + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = uq_slice_cmp(v, a[j], a[i]) < 0 ? a[j++] : a[i++];
  while (i < h) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, n * sizeof *a);
}

static rlx_status map_unique(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  int64_t sorted;
  RLX_TRY(oi_attr_i(c, "sorted", 1, &sorted));
  if (sorted != 0 && sorted != 1) return oi_bad(c, "attribute sorted must be 0 or 1, not %lld", (long long)sorted);
  const rlx_shape xs = *oi_in_shape(c, 0);
  rlx_dtype t = (rlx_dtype)xs.dtype;
  rlx_dtype_class cls = rlx_dtype_class_of(t);
  if (cls == RLX_CLASS_COMPLEX)
    return oi_unsupported(c, "Unique of %s values (no order on complex numbers)", rlx_dtype_name(t));
  bool has_axis = oi_attr(c, "axis") != NULL;
  uint32_t a = 0;
  if (has_axis) {
    int64_t axis;
    RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
    RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  }
  const void *data;
  rlx_shape s;
  if (!oi_in_value(c, 0, &data, &s))
    return oi_needs_value(c, "input X must be known at import time (the number of unique values depends on them)");
  size_t numel;
  RLX_TRY(rlx_shape_numel(&s, &numel));
  uq_view v = {data, t, cls == RLX_CLASS_FLOAT, 1, numel, 1};
  if (has_axis) {
    v.n = (size_t)s.dims[a];
    for (uint32_t i = 0; i < s.rank; i++)
      if (i < a)
        v.outer *= (size_t)s.dims[i];
      else if (i > a)
        v.inner *= (size_t)s.dims[i];
  }
  size_t n = v.n;
  int64_t *order = oi_scratch(c, n * sizeof *order), *tmp = oi_scratch(c, n * sizeof *tmp);
  int64_t *first = oi_scratch(c, n * sizeof *first), *inverse = oi_scratch(c, n * sizeof *inverse);
  int64_t *counts = oi_scratch(c, n * sizeof *counts), *group = oi_scratch(c, n * sizeof *group);
  if (!order || !tmp || !first || !inverse || !counts || !group) return oi_nomem(c);
  for (size_t j = 0; j < n; j++) order[j] = (int64_t)j;
  uq_sort(&v, order, tmp, n);
  /* groups of equal slices in sorted order; the stable sort puts each group's first occurrence
   * first */
  size_t ng = 0;
  for (size_t j = 0; j < n; j++) {
    if (j == 0 || uq_slice_cmp(&v, order[j - 1], order[j]) != 0) {
      first[ng] = order[j];
      counts[ng++] = 0;
    }
    counts[ng - 1]++;
    group[order[j]] = (int64_t)ng - 1;
  }
  if (!sorted) { /* number the groups by first occurrence instead */
    int64_t *at = tmp, *pos = order, *f2 = inverse, *c2 = oi_scratch(c, n * sizeof *c2);
    if (!c2) return oi_nomem(c);
    for (size_t j = 0; j < n; j++) at[j] = -1;
    for (size_t g = 0; g < ng; g++) at[first[g]] = (int64_t)g; /* first[] are distinct */
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
      if (at[j] >= 0) pos[at[j]] = (int64_t)k++; /* sorted group -> position */
    for (size_t g = 0; g < ng; g++) f2[pos[g]] = first[g], c2[pos[g]] = counts[g];
    memcpy(first, f2, ng * sizeof *first);
    memcpy(counts, c2, ng * sizeof *counts);
    for (size_t j = 0; j < n; j++) group[j] = pos[group[j]];
  }
  memcpy(inverse, group, n * sizeof *inverse);
  /* Y gathers the first occurrences from X (flattened without an axis) */
  rlx_id x = c->in[0], idx;
  if (!has_axis) {
    int64_t flat = (int64_t)numel;
    RLX_TRY(oi_reshape(c, x, 1, &flat, &x));
  }
  RLX_TRY(oi_i64s(c, first, (uint32_t)ng, &idx));
  rlx_attrs_Gather ga = {.axis = a};
  rlx_id gin[2] = {x, idx};
  RLX_TRY(oi_emit(c, RLX_OP_Gather, gin, 2, &ga, &c->out[0]));
  if (c->n_out > 1) c->out[1] = idx;
  if (c->n_out > 2) RLX_TRY(oi_i64s(c, inverse, (uint32_t)n, &c->out[2]));
  if (c->n_out > 3) RLX_TRY(oi_i64s(c, counts, (uint32_t)ng, &c->out[3]));
  return RLX_OK;
}

/* ---- TfIdfVectorizer ---- */

/* A required integer attribute. */
static rlx_status req_i(oi_node *c, const char *name, int64_t *v) {
  if (!oi_attr(c, name)) return oi_bad(c, "attribute %s is required", name);
  return oi_attr_i(c, name, 0, v);
}

/* Counts of the pool's n-grams of one length n: for every skip s (only 0 for unigrams) the
 * tokens at p, p + (s+1), ..., p + (n-1)(s+1) of each row are compared with each n-gram of the
 * pool, and the matching positions are summed. x: [B, L] i64; tok: the m n-grams, n tokens each.
 * *out: [B, m] f32 counts, or RLX_NO_ID when no window fits in L. */
static rlx_status tfidf_count(oi_node *c, rlx_id x, int64_t L, int64_t n, int64_t max_skip, const int64_t *tok,
                              int64_t m, rlx_id *out) {
  *out = RLX_NO_ID;
  const rlx_shape *xs = oi_shape(c, x);
  int64_t *col = oi_scratch(c, (size_t)m * sizeof *col);
  if (!col) return oi_nomem(c);
  for (int64_t s = 0; s <= (n == 1 ? 0 : max_skip); s++) {
    int64_t d = s + 1, W = L - (n - 1) * d;
    if (W <= 0) break;
    rlx_id match = RLX_NO_ID;
    for (int64_t k = 0; k < n; k++) {
      rlx_id win, t, eq;
      RLX_TRY(oi_narrow(c, x, 1, k * d, W, &win));
      rlx_dim d3[3] = {xs->dims[0], W, 1};
      RLX_TRY(oi_reshape_dims(c, win, 3, d3, &win));
      for (int64_t g = 0; g < m; g++) col[g] = tok[g * n + k];
      RLX_TRY(oi_i64s(c, col, (uint32_t)m, &t));
      RLX_TRY(oi_cmp(c, RLX_CMP_EQ, win, t, &eq));
      RLX_TRY(oi_cast(c, eq, RLX_F32, &eq));
      if (match == RLX_NO_ID)
        match = eq;
      else
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, match, eq, &match));
    }
    int64_t ax = 1;
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, match, &ax, 1, false, &match));
    if (*out == RLX_NO_ID)
      *out = match;
    else
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, *out, match, out));
  }
  return RLX_OK;
}

static rlx_status map_tfidf(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  if (oi_attr(c, "pool_strings"))
    return oi_unsupported(c, "string n-gram pools (attribute pool_strings): RLX has no string dtype; only "
                             "pool_int64s over integer inputs is mapped");
  int64_t min_n, max_n, max_skip;
  RLX_TRY(req_i(c, "min_gram_length", &min_n));
  RLX_TRY(req_i(c, "max_gram_length", &max_n));
  RLX_TRY(req_i(c, "max_skip_count", &max_skip));
  if (min_n < 1 || max_n < min_n)
    return oi_bad(c, "min_gram_length (%lld) and max_gram_length (%lld) must satisfy 1 <= min <= max", (long long)min_n,
                  (long long)max_n);
  if (max_skip < 0) return oi_bad(c, "attribute max_skip_count is %lld", (long long)max_skip);
  const char *mode;
  if (!oi_attr(c, "mode")) return oi_bad(c, "attribute mode is required");
  RLX_TRY(oi_attr_s(c, "mode", "TF", &mode));
  int kind = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : strcmp(mode, "TFIDF") == 0 ? 2 : -1;
  if (kind < 0) return oi_bad(c, "attribute mode is \"%s\" (want TF, IDF or TFIDF)", mode);
  const int64_t *pool, *counts, *idx;
  const float *w;
  size_t np, nc, ni, nw;
  bool has_pool, has_counts, has_idx, has_w;
  RLX_TRY(oi_attr_ints(c, "pool_int64s", &pool, &np, &has_pool));
  RLX_TRY(oi_attr_ints(c, "ngram_counts", &counts, &nc, &has_counts));
  RLX_TRY(oi_attr_ints(c, "ngram_indexes", &idx, &ni, &has_idx));
  RLX_TRY(oi_attr_floats(c, "weights", &w, &nw, &has_w));
  if (!has_pool) return oi_bad(c, "attribute pool_int64s is required");
  if (!has_counts || !has_idx) return oi_bad(c, "attributes ngram_counts and ngram_indexes are required");
  /* ngram_counts[i]: where the (i+1)-grams start in the pool */
  size_t total = 0;
  for (size_t i = 0; i < nc; i++) {
    int64_t lo = counts[i], hi = i + 1 < nc ? counts[i + 1] : (int64_t)np;
    if (lo < 0 || hi < lo || hi > (int64_t)np)
      return oi_bad(c, "ngram_counts must be non-decreasing offsets into the pool of %zu entries", np);
    if ((hi - lo) % (int64_t)(i + 1))
      return oi_bad(c, "the pool's %zu-grams span %lld entries, not a multiple of %zu", i + 1, (long long)(hi - lo),
                    i + 1);
    total += (size_t)(hi - lo) / (i + 1);
  }
  if (total != ni) return oi_bad(c, "ngram_indexes has %zu entries for the pool's %zu n-grams", ni, total);
  if (ni == 0) return oi_bad(c, "the pool holds no n-grams (the output would have no columns)");
  int64_t C = 0;
  for (size_t i = 0; i < ni; i++) {
    if (idx[i] < 0 || idx[i] >= ((int64_t)1 << 24))
      return oi_bad(c, "ngram_indexes[%zu] is %lld", i, (long long)idx[i]);
    if (idx[i] + 1 > C) C = idx[i] + 1;
  }
  if (has_w && (int64_t)nw < C)
    return oi_bad(c, "weights has %zu entries for %lld output columns (ngram_indexes)", nw, (long long)C);
  const rlx_shape xs = *oi_in_shape(c, 0);
  if (!rlx_dtype_is_int((rlx_dtype)xs.dtype))
    return oi_unsupported(c, "input X of type %s (integer token ids only)", rlx_dtype_name((rlx_dtype)xs.dtype));
  if (xs.rank != 1 && xs.rank != 2) return oi_bad(c, "input X must be [C] or [N, C], got %s", rlx_fmt_shape(&xs));
  int64_t L = xs.dims[xs.rank - 1];
  if (!rlx_dim_is_static(L)) return oi_unsupported(c, "input X with a symbolic sequence length");
  rlx_id x;
  RLX_TRY(oi_cast(c, c->in[0], RLX_I64, &x));
  if (xs.rank == 1) RLX_TRY(oi_reshape(c, x, 2, (int64_t[]){1, L}, &x));
  rlx_dim B = oi_shape(c, x)->dims[0];
  /* per pool n-gram: its column in the concatenated counts (-1: not counted) */
  int64_t *col_of = oi_scratch(c, ni * sizeof *col_of);
  int64_t *table = oi_scratch(c, (size_t)C * sizeof *table);
  rlx_id *parts = oi_scratch(c, (nc + 1) * sizeof *parts); /* counts per length, zero column */
  uint32_t n_parts = 0;
  if (!col_of || !table || !parts) return oi_nomem(c);
  int64_t ncols = 0;
  for (size_t i = 0, id = 0; i < nc; i++) {
    int64_t n = (int64_t)i + 1, lo = counts[i], hi = i + 1 < nc ? counts[i + 1] : (int64_t)np, m = (hi - lo) / n;
    rlx_id cnt = RLX_NO_ID;
    if (n >= min_n && n <= max_n && m > 0) RLX_TRY(tfidf_count(c, x, L, n, max_skip, pool + lo, m, &cnt));
    for (int64_t g = 0; g < m; g++) col_of[id++] = cnt == RLX_NO_ID ? -1 : ncols + g;
    if (cnt != RLX_NO_ID) parts[n_parts++] = cnt, ncols += m;
  }
  /* a zero column for output columns without a counted n-gram */
  rlx_id zero;
  if (rlx_dim_is_static(B)) {
    RLX_TRY(oi_fill(c, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){B, 1}), 0, &zero));
  } else {
    if (L < 1) return oi_unsupported(c, "an empty input X with a symbolic batch");
    RLX_TRY(oi_narrow(c, x, 1, 0, 1, &zero));
    RLX_TRY(oi_cmp(c, RLX_CMP_NE, zero, zero, &zero));
    RLX_TRY(oi_cast(c, zero, RLX_F32, &zero));
  }
  parts[n_parts++] = zero;
  for (int64_t j = 0; j < C; j++) table[j] = -1;
  for (size_t i = 0; i < ni; i++) {
    if (table[idx[i]] != -1)
      return oi_unsupported(c, "several n-grams mapped to output column %lld (ngram_indexes repeats it)",
                            (long long)idx[i]);
    table[idx[i]] = col_of[i] < 0 ? ncols : col_of[i];
  }
  for (int64_t j = 0; j < C; j++)
    if (table[j] < 0) table[j] = ncols;
  rlx_id all, tbl, y;
  RLX_TRY(oi_concat(c, parts, n_parts, 1, &all));
  RLX_TRY(oi_i64s(c, table, (uint32_t)C, &tbl));
  rlx_attrs_Gather ga = {.axis = 1};
  RLX_TRY(oi_emit(c, RLX_OP_Gather, (rlx_id[]){all, tbl}, 2, &ga, &y));
  if (kind == 1) RLX_TRY(oi_bin_s(c, RLX_BINOP_MIN, y, 1.0, &y)); /* IDF: seen or not */
  if (kind != 0 && has_w) {
    rlx_id wc;
    rlx_dim cd = C;
    RLX_TRY(oi_const(c, rlx_shape_make(RLX_F32, 1, &cd), w, (size_t)C * sizeof *w, &wc));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, y, wc, &y));
  }
  if (xs.rank == 1) return oi_reshape(c, y, 1, &C, &c->out[0]);
  c->out[0] = y;
  return RLX_OK;
}

const oi_op_entry oi_ops_datadep[] = {
    {"NonMaxSuppression", 10, OI_MAX_OPSET, map_nms},
    {"Unique", 11, OI_MAX_OPSET, map_unique},
    {"TfIdfVectorizer", 9, OI_MAX_OPSET, map_tfidf},
};
const uint32_t oi_ops_datadep_len = sizeof oi_ops_datadep / sizeof oi_ops_datadep[0];
