/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: shape manipulation and data movement (spec ir-core §10.7) and resampling (§10.5). */
#include "infer_util.h"

rlx_status rlx_infer_Reshape(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_ilist *ns = &c->a->Reshape.new_shape;
  const rlx_shape *x = c->in[0];
  if (ns->n > RLX_MAX_RANK)
    return rlx_shape_error("attribute new_shape has %u entries; at most %d axes are supported", ns->n, RLX_MAX_RANK);
  int infer_at = -1;
  int64_t known = 1; /* product of the explicit entries */
  for (uint32_t i = 0; i < ns->n; i++) {
    int64_t d = ns->v[i];
    if (d == -1) {
      if (infer_at >= 0)
        return rlx_shape_error("attribute new_shape: entries %d and %u are both -1; at most one extent can be inferred",
                               infer_at, i);
      infer_at = (int)i;
    } else if (d < 0) {
      return rlx_shape_error("attribute new_shape: entry %u is %" PRId64 "; extents must be >= 0 (or -1 = inferred)", i,
                             d);
    } else {
      RLX_TRY(ck_mul_or(known, d, &known, "attribute new_shape: element count"));
    }
  }
  *out = iu_shape((rlx_dtype)x->dtype, ns->n);
  for (uint32_t i = 0; i < ns->n; i++) out->dims[i] = ns->v[i];

  bool is_static;
  int64_t numel = 0;
  RLX_TRY(iu_numel(x, 0, &is_static, &numel));
  if (!is_static) {
    /* Element counts cannot be compared; -1 takes the input's only symbol, or ROWS. */
    if (infer_at >= 0) {
      rlx_dim sym = 0;
      uint32_t n_dyn = 0;
      for (uint32_t i = 0; i < x->rank; i++)
        if (x->dims[i] < 0) {
          n_dyn++;
          sym = x->dims[i];
        }
      out->dims[infer_at] = n_dyn == 1 ? sym : RLX_DIM_SYM(RLX_SYM_ROWS);
    }
    return RLX_OK;
  }
  if (infer_at >= 0) {
    if (known == 0)
      return rlx_shape_error("attribute new_shape has a 0 extent next to -1; the inferred extent is ambiguous");
    if (numel % known != 0)
      return rlx_shape_error("operand 0 %s has %" PRId64 " elements, which is not a multiple of %" PRId64
                             " (the product of attribute new_shape without its -1)",
                             rlx_fmt_shape(x), numel, known);
    out->dims[infer_at] = numel / known;
  } else if (numel != known) {
    return rlx_shape_error("attribute new_shape has %" PRId64 " elements but operand 0 %s has %" PRId64, known,
                           rlx_fmt_shape(x), numel);
  }
  return RLX_OK;
}

rlx_status rlx_infer_Transpose(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_ilist *p = &c->a->Transpose.perm;
  const rlx_shape *x = c->in[0];
  if (p->n != x->rank)
    return rlx_shape_error("attribute perm has %u entries; operand 0 %s has rank %u", p->n, rlx_fmt_shape(x), x->rank);
  uint32_t seen = 0;
  *out = iu_shape((rlx_dtype)x->dtype, x->rank);
  for (uint32_t i = 0; i < p->n; i++) {
    int64_t a = p->v[i];
    if (a < 0 || a >= (int64_t)x->rank)
      return rlx_shape_error("attribute perm: entry %u is %" PRId64 "; it must be an axis in [0, %u)", i, a, x->rank);
    if (seen & (1u << a))
      return rlx_shape_error("attribute perm: axis %" PRId64 " appears twice; perm must be a permutation", a);
    seen |= 1u << a;
    out->dims[i] = x->dims[a];
  }
  return RLX_OK;
}

rlx_status rlx_infer_Narrow(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Narrow *at = &c->a->Narrow;
  const rlx_shape *x = c->in[0];
  if (at->axis < 0 || at->axis >= (int64_t)x->rank)
    return rlx_shape_error("attribute axis is %" PRId64 "; operand 0 %s has axes 0..%d (Narrow takes no negative axes)",
                           at->axis, rlx_fmt_shape(x), (int)x->rank - 1);
  if (at->start < 0) return rlx_shape_error("attribute start is %" PRId64 "; it must be >= 0", at->start);
  if (at->len < 0) return rlx_shape_error("attribute len is %" PRId64 "; it must be >= 0", at->len);
  rlx_dim d = x->dims[at->axis];
  int64_t end;
  if (!ck_add(at->start, at->len, &end) || (d >= 0 && end > d))
    return rlx_shape_error("attributes start %" PRId64 " + len %" PRId64 " exceed axis %" PRId64 " of operand 0 %s",
                           at->start, at->len, at->axis, rlx_fmt_shape(x));
  *out = *x;
  out->dims[at->axis] = at->len;
  return RLX_OK;
}

rlx_status rlx_infer_Concat(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 is a scalar; Concat needs operands of rank >= 1");
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->Concat.axis, 0, &ax));
  int64_t total = 0;
  rlx_dim sym = 0; /* first symbolic extent on the axis, if any */
  for (uint32_t i = 0; i < c->n_in; i++) {
    const rlx_shape *s = c->in[i];
    RLX_TRY(iu_same_dtype(c, 0, i));
    if (s->rank != x->rank)
      return rlx_shape_error("operand %u has shape %s; all operands need operand 0's rank %u", i, rlx_fmt_shape(s),
                             x->rank);
    for (uint32_t k = 0; k < x->rank; k++)
      if (k != ax && !rlx_dim_equal(s->dims[k], x->dims[k]))
        return rlx_shape_error("operand %u has shape %s; axis %u must equal operand 0's %s (only axis %u is "
                               "concatenated)",
                               i, rlx_fmt_shape(s), k, iu_fmt_dim(x->dims[k]), ax);
    rlx_dim d = s->dims[ax];
    if (d < 0) {
      if (sym == 0) sym = d;
    } else {
      RLX_TRY(ck_add_or(total, d, &total, "the concatenated extent of the axis"));
    }
  }
  *out = *x;
  out->dims[ax] = sym < 0 ? sym : total;
  return RLX_OK;
}

rlx_status rlx_infer_KvAppend(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *cache = c->in[0], *row = c->in[1];
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->KvAppend.axis, 0, &ax));
  RLX_TRY(iu_same_dtype(c, 0, 1));
  if (row->rank != cache->rank)
    return rlx_shape_error("operand 1 (row) has shape %s; it needs the cache's rank %u (cache is %s)",
                           rlx_fmt_shape(row), cache->rank, rlx_fmt_shape(cache));
  if (row->dims[ax] != 1)
    return rlx_shape_error("operand 1 (row) has shape %s; its extent on axis %u must be 1", rlx_fmt_shape(row), ax);
  for (uint32_t k = 0; k < cache->rank; k++)
    if (k != ax && !rlx_dim_equal(row->dims[k], cache->dims[k]))
      return rlx_shape_error("operand 1 (row) has shape %s; axis %u must equal the cache's %s", rlx_fmt_shape(row), k,
                             iu_fmt_dim(cache->dims[k]));
  int64_t pos = c->a->KvAppend.pos;
  rlx_dim cap = cache->dims[ax];
  if (pos < 0 || pos == INT64_MAX || (cap >= 0 && pos >= cap))
    return rlx_shape_error("attribute pos is %" PRId64 "; it must be in [0, %s) (the cache capacity on axis %u)", pos,
                           iu_fmt_dim(cap), ax);
  *out = *cache;
  out->dims[ax] = pos + 1;
  return RLX_OK;
}

rlx_status rlx_infer_Expand(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_ilist *t = &c->a->Expand.target_shape;
  const rlx_shape *x = c->in[0];
  if (t->n > RLX_MAX_RANK)
    return rlx_shape_error("attribute target_shape has %u entries; at most %d axes are supported", t->n, RLX_MAX_RANK);
  if (t->n < x->rank)
    return rlx_shape_error(
        "attribute target_shape has %u entries; operand 0 %s has rank %u and Expand cannot drop axes", t->n,
        rlx_fmt_shape(x), x->rank);
  uint32_t lead = t->n - x->rank;
  *out = iu_shape((rlx_dtype)x->dtype, t->n);
  for (uint32_t i = 0; i < t->n; i++) {
    int64_t want = t->v[i];
    rlx_dim have = i >= lead ? x->dims[i - lead] : 1;
    if (want < -1 || (want == -1 && i < lead))
      return rlx_shape_error("attribute target_shape: entry %u is %" PRId64 "; extents must be >= 0, or -1 to keep an "
                             "existing axis of operand 0",
                             i, want);
    if (want == -1 || want == have)
      out->dims[i] = have;
    else if (have == 1 || have < 0)
      out->dims[i] = want; /* a symbolic extent is trusted to broadcast */
    else
      return rlx_shape_error("attribute target_shape: entry %u is %" PRId64 ", but operand 0 %s has extent %" PRId64
                             " there; only size-1 axes can grow",
                             i, want, rlx_fmt_shape(x), have);
  }
  return RLX_OK;
}

rlx_status rlx_infer_Gather(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *tab = c->in[0], *idx = c->in[1];
  if (tab->rank == 0) return rlx_shape_error("operand 0 (table) is a scalar; Gather needs rank >= 1");
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->Gather.axis, 0, &ax));
  RLX_TRY(iu_need_index(c, 1, "indices"));
  uint32_t rank = tab->rank - 1u + idx->rank;
  if (rank > RLX_MAX_RANK)
    return rlx_shape_error("the result would have rank %u (table %s, indices %s); at most %d is supported", rank,
                           rlx_fmt_shape(tab), rlx_fmt_shape(idx), RLX_MAX_RANK);
  *out = iu_shape((rlx_dtype)tab->dtype, rank);
  uint32_t o = 0;
  for (uint32_t i = 0; i < ax; i++) out->dims[o++] = tab->dims[i];
  for (uint32_t i = 0; i < idx->rank; i++) out->dims[o++] = idx->dims[i];
  for (uint32_t i = ax + 1; i < tab->rank; i++) out->dims[o++] = tab->dims[i];
  return RLX_OK;
}

rlx_status rlx_infer_Reverse(const rlx_infer_ctx *c, rlx_shape *out) {
  uint32_t mask;
  RLX_TRY(iu_axes_mask(c, "axes", &c->a->Reverse.axes, 0, &mask));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_Pad(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Pad *at = &c->a->Pad;
  const rlx_shape *x = c->in[0];
  if (at->mode < 0 || at->mode >= RLX_PAD_MODE_COUNT)
    return rlx_shape_error("attribute mode: %d is not a PadMode", (int)at->mode);
  if (at->pads.n != 2u * x->rank)
    return rlx_shape_error("attribute pads has %u entries; operand 0 %s needs 2 * rank = %u ([before_0, after_0, "
                           "before_1, ...])",
                           at->pads.n, rlx_fmt_shape(x), 2u * x->rank);
  const char *mode = rlx_enum_pad_mode.names[at->mode];
  *out = *x;
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t before = at->pads.v[2 * k], after = at->pads.v[2 * k + 1];
    if (before < 0 || after < 0)
      return rlx_shape_error("attribute pads: axis %u has pads (%" PRId64 ", %" PRId64 "); pads must be >= 0", k,
                             before, after);
    if (before == 0 && after == 0) continue;
    rlx_dim d = x->dims[k];
    if (d < 0)
      return rlx_shape_error("attribute pads: axis %u of operand 0 %s is symbolic and cannot be padded", k,
                             rlx_fmt_shape(x));
    int64_t most = before > after ? before : after;
    if (at->mode == RLX_PAD_MODE_REFLECT && most >= d)
      return rlx_shape_error("attribute pads: axis %u has extent %" PRId64 "; Reflect padding needs pads < extent, "
                             "got %" PRId64,
                             k, d, most);
    if (at->mode == RLX_PAD_MODE_CIRCULAR && most > d)
      return rlx_shape_error("attribute pads: axis %u has extent %" PRId64 "; Circular padding needs pads <= extent, "
                             "got %" PRId64,
                             k, d, most);
    if (at->mode == RLX_PAD_MODE_REPLICATE && d == 0)
      return rlx_shape_error("attribute pads: axis %u is empty; %s padding has no edge value to repeat", k, mode);
    RLX_TRY(ck_add_or(d, before, &d, "attribute pads: extent + pad before"));
    RLX_TRY(ck_add_or(d, after, &d, "attribute pads: extent + pad before + pad after"));
    out->dims[k] = d;
  }
  return RLX_OK;
}

rlx_status rlx_infer_Slice(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Slice *at = &c->a->Slice;
  const rlx_shape *x = c->in[0];
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", at->axis, 0, &ax));
  if (at->step == 0) return rlx_shape_error("attribute step is 0; it must be non-zero (negative walks backwards)");
  if (at->len < 0) return rlx_shape_error("attribute len is %" PRId64 "; it must be >= 0", at->len);
  if (at->len > 0) {
    rlx_dim d = x->dims[ax];
    int64_t span, last;
    if (!ck_mul(at->len - 1, at->step, &span) || !ck_add(at->start, span, &last))
      return rlx_shape_error("attributes start %" PRId64 ", len %" PRId64 ", step %" PRId64 " overflow int64",
                             at->start, at->len, at->step);
    int64_t lo = at->start < last ? at->start : last, hi = at->start < last ? last : at->start;
    if (lo < 0 || (d >= 0 && hi >= d))
      return rlx_shape_error("attributes start %" PRId64 ", len %" PRId64 ", step %" PRId64 " read indices %" PRId64
                             "..%" PRId64 "; axis %u of operand 0 %s has valid indices [0, %s)",
                             at->start, at->len, at->step, at->start, last, ax, rlx_fmt_shape(x), iu_fmt_dim(d));
  }
  *out = *x;
  out->dims[ax] = at->len;
  return RLX_OK;
}

rlx_status rlx_infer_Roll(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Roll *at = &c->a->Roll;
  const rlx_shape *x = c->in[0];
  if (at->shifts.n != at->dims.n)
    return rlx_shape_error("attribute shifts has %u entries; it must pair with the %u of attribute dims", at->shifts.n,
                           at->dims.n);
  for (uint32_t k = 0; k < at->dims.n; k++) {
    uint32_t ax;
    if (!rlx_norm_axis(at->dims.v[k], x->rank, &ax))
      return rlx_shape_error("attribute dims: entry %u is %" PRId64 ", out of range for operand 0 %s (rank %u)", k,
                             at->dims.v[k], rlx_fmt_shape(x), x->rank);
  }
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_Tile(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_ilist *r = &c->a->Tile.reps;
  const rlx_shape *x = c->in[0];
  if (r->n != x->rank)
    return rlx_shape_error("attribute reps has %u entries; operand 0 %s has rank %u", r->n, rlx_fmt_shape(x), x->rank);
  *out = *x;
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t rep = r->v[k];
    if (rep < 0) return rlx_shape_error("attribute reps: entry %u is %" PRId64 "; repeats must be >= 0", k, rep);
    rlx_dim d = x->dims[k];
    if (d < 0) {
      if (rep > 1)
        return rlx_shape_error("attribute reps: axis %u of operand 0 %s is symbolic and can only be repeated 0 or 1 "
                               "times, got %" PRId64,
                               k, rlx_fmt_shape(x), rep);
      out->dims[k] = rep == 0 ? 0 : d;
    } else {
      RLX_TRY(ck_mul_or(d, rep, &out->dims[k], "attribute reps: tiled extent (extent * reps)"));
    }
  }
  return RLX_OK;
}

rlx_status rlx_infer_Trilu(const rlx_infer_ctx *c, rlx_shape *out) {
  if (c->in[0]->rank < 2)
    return rlx_shape_error("operand 0 has shape %s; Trilu works on the last two axes (rank >= 2)",
                           rlx_fmt_shape(c->in[0]));
  *out = *c->in[0];
  return RLX_OK;
}

/* ---- resampling ---- */

rlx_status rlx_infer_ResizeNearest2x(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank != 4) return rlx_shape_error("operand 0 has shape %s; expected NCHW (rank 4)", rlx_fmt_shape(x));
  *out = *x;
  for (uint32_t k = 2; k < 4; k++) {
    rlx_dim d = x->dims[k];
    if (d < 0) {
      /* 2 * ?s is not expressible; only a declared shape can name the doubled extent. */
      if (!c->declared || c->declared->rank != 4)
        return rlx_shape_error("operand 0 %s has a symbolic spatial axis %u; declare the output shape",
                               rlx_fmt_shape(x), k);
      out->dims[k] = c->declared->dims[k];
    } else {
      RLX_TRY(ck_mul_or(d, 2, &out->dims[k], "operand 0: the doubled spatial extent"));
    }
  }
  return RLX_OK;
}

rlx_status rlx_infer_Interpolate3d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_ilist *sz = &c->a->Interpolate3d.size;
  const rlx_shape *x = c->in[0];
  if (x->rank != 5) return rlx_shape_error("operand 0 has shape %s; expected NCDHW (rank 5)", rlx_fmt_shape(x));
  if (sz->n != 3) return rlx_shape_error("attribute size has %u entries; expected 3 ([D', H', W'])", sz->n);
  *out = *x;
  for (uint32_t k = 0; k < 3; k++) {
    if (sz->v[k] < 1)
      return rlx_shape_error("attribute size: entry %u is %" PRId64 "; sizes must be >= 1", k, sz->v[k]);
    if (x->dims[2 + k] == 0)
      return rlx_shape_error("operand 0 %s has an empty spatial axis %u; there is nothing to sample", rlx_fmt_shape(x),
                             2 + k);
    out->dims[2 + k] = sz->v[k];
  }
  return RLX_OK;
}
