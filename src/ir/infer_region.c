/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: fusion regions (spec ir-core §10.2, chain steps §8.7). A region is only valid if
 * its unfused form would be: every chain step is type-checked here, and the operands must
 * broadcast the way region kernels read them (trailing tiling, gid % operand_count). */
#include "infer_util.h"

#define MAX_REGION_INPUTS 16
#define MAX_CHAIN_STEPS 1024

static bool single_element(const rlx_shape *s) {
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] != 1) return false;
  return true;
}

/* Region-fusable sub-ops (ir-core §8.1, §8.2): activations Gelu..Round, binary ops Add..Pow. */
static bool fusable_act(int32_t a) { return a >= 0 && a <= RLX_ACT_ROUND; }
static bool fusable_binop(int32_t b) { return b >= 0 && b <= RLX_BINOP_POW; }

/* Attribute count (num_inputs / num_batch_inputs) = operand count, at most 16. */
static rlx_status region_arity(const rlx_infer_ctx *c, const char *attr, int64_t n) {
  if (n < 1 || n > MAX_REGION_INPUTS)
    return rlx_shape_error("attribute %s is %" PRId64 "; a region takes 1..%d operands", attr, n, MAX_REGION_INPUTS);
  if (c->n_in != (uint32_t)n)
    return rlx_errorf(RLX_ERR_VERIFY, "needs exactly %" PRId64 " operands (attribute %s), got %u", n, attr, c->n_in);
  return RLX_OK;
}

/* Type-checks the chain: operand references, sub-op ranges and region fusability, dtype agreement
 * of Binary/Compare/Where operands. *result = dtype of the last step. */
static rlx_status chain_dtype(const rlx_infer_ctx *c, const rlx_chain *ch, rlx_dtype *result) {
  uint8_t dt[MAX_CHAIN_STEPS];
  if (ch->n == 0) return rlx_shape_error("attribute chain is empty; a region needs at least one step");
  if (ch->n > MAX_CHAIN_STEPS)
    return rlx_shape_error("attribute chain has %u steps; at most %d are supported", ch->n, MAX_CHAIN_STEPS);
  for (uint32_t i = 0; i < ch->n; i++) {
    const rlx_chain_step *s = &ch->steps[i];
    if (s->kind < 0 || s->kind >= RLX_CHAIN_STEP_COUNT)
      return rlx_shape_error("attribute chain: step %u has unknown kind %d", i, (int)s->kind);
    const char *kind = rlx_enum_chain_step.names[s->kind];
    uint32_t used = s->kind == RLX_CHAIN_STEP_WHERE                                           ? 3
                    : (s->kind == RLX_CHAIN_STEP_BINARY || s->kind == RLX_CHAIN_STEP_COMPARE) ? 2
                                                                                              : 1;
    const rlx_chain_operand *ops[3] = {&s->a, &s->b, &s->c};
    rlx_dtype t[3];
    for (uint32_t k = 0; k < used; k++) {
      const rlx_chain_operand *o = ops[k];
      if (o->is_step ? o->index >= i : o->index >= c->n_in)
        return rlx_shape_error("attribute chain: step %u (%s) operand %u refers to %s %u, which %s", i, kind, k,
                               o->is_step ? "step" : "input", o->index,
                               o->is_step ? "is not an earlier step" : "is not a region operand");
      t[k] = o->is_step ? (rlx_dtype)dt[o->index] : (rlx_dtype)c->in[o->index]->dtype;
    }
    switch (s->kind) {
    case RLX_CHAIN_STEP_ACTIVATION:
      if (s->sub < 0 || s->sub >= RLX_ACT_COUNT)
        return rlx_shape_error("attribute chain: step %u has out-of-range activation %d", i, (int)s->sub);
      if (!fusable_act(s->sub))
        return rlx_shape_error("attribute chain: step %u uses activation %s, which cannot run inside a region", i,
                               rlx_enum_act.names[s->sub]);
      if (t[0] == RLX_BOOL)
        return rlx_shape_error("attribute chain: step %u (Activation %s) is applied to a bool value", i,
                               rlx_enum_act.names[s->sub]);
      dt[i] = (uint8_t)t[0];
      break;
    case RLX_CHAIN_STEP_CAST:
      if (s->sub < 0 || s->sub >= RLX_DTYPE_COUNT)
        return rlx_shape_error("attribute chain: step %u casts to out-of-range dtype %d", i, (int)s->sub);
      dt[i] = (uint8_t)s->sub;
      break;
    case RLX_CHAIN_STEP_BINARY:
    case RLX_CHAIN_STEP_COMPARE: {
      bool bin = s->kind == RLX_CHAIN_STEP_BINARY;
      int32_t lim = bin ? RLX_BINOP_COUNT : RLX_CMP_COUNT;
      if (s->sub < 0 || s->sub >= lim)
        return rlx_shape_error("attribute chain: step %u has out-of-range %s op %d", i, kind, (int)s->sub);
      if (bin && !fusable_binop(s->sub))
        return rlx_shape_error("attribute chain: step %u uses binary op %s, which cannot run inside a region", i,
                               rlx_enum_binop.names[s->sub]);
      if (t[0] != t[1])
        return rlx_shape_error("attribute chain: step %u (%s) combines %s and %s; insert a Cast step", i, kind,
                               rlx_dtype_name(t[0]), rlx_dtype_name(t[1]));
      dt[i] = (uint8_t)(bin ? t[0] : RLX_BOOL);
      break;
    }
    default: /* Where(cond, t, f) */
      if (t[1] != t[2])
        return rlx_shape_error("attribute chain: step %u (Where) selects between %s and %s; insert a Cast step", i,
                               rlx_dtype_name(t[1]), rlx_dtype_name(t[2]));
      dt[i] = (uint8_t)t[1];
      break;
    }
  }
  *result = (rlx_dtype)dt[ch->n - 1];
  return RLX_OK;
}

/* scalar_input_mask: bit i set => operand i holds a single element; no bits beyond n. */
static rlx_status scalar_mask(const rlx_infer_ctx *c, int64_t mask, uint32_t n) {
  if (mask < 0 || mask >= ((int64_t)1 << n))
    return rlx_shape_error("attribute scalar_input_mask is %" PRId64 "; only bits 0..%u (one per operand) may be set",
                           mask, n - 1);
  for (uint32_t i = 0; i < n; i++)
    if ((mask >> i) & 1 && !single_element(c->in[i]))
      return rlx_shape_error("attribute scalar_input_mask: bit %u is set, but operand %u has shape %s (not a single "
                             "element)",
                             i, i, rlx_fmt_shape(c->in[i]));
  return RLX_OK;
}

/* Operand i's shape with the ResizeNearest2x prologue applied when it is the prologue operand. */
static rlx_status operand_shape(const rlx_infer_ctx *c, uint32_t i, bool prologue, uint32_t p_in, rlx_shape *s) {
  *s = *c->in[i];
  if (!prologue || i != p_in) return RLX_OK;
  if (s->rank < 2)
    return rlx_shape_error("operand %u has shape %s; the ResizeNearest2x prologue needs rank >= 2", i,
                           rlx_fmt_shape(s));
  for (uint32_t k = s->rank - 2; k < s->rank; k++) {
    if (s->dims[k] < 0)
      return rlx_shape_error("operand %u %s: the ResizeNearest2x prologue cannot double the symbolic axis %u", i,
                             rlx_fmt_shape(c->in[i]), k);
    RLX_TRY(ck_mul_or(s->dims[k], 2, &s->dims[k], "the ResizeNearest2x prologue's doubled extent"));
  }
  return RLX_OK;
}

/* Does s tile the trailing axes of out (after dropping s's leading unit axes, its dims equal out's
 * last dims)? That is how region kernels broadcast: operand element gid % count. */
static bool trailing_tile(const rlx_shape *s, const rlx_shape *out) {
  uint32_t j = 0;
  while (j < s->rank && s->dims[j] == 1) j++;
  for (; j < s->rank; j++)
    if (!rlx_dim_equal(s->dims[j], out->dims[out->rank - s->rank + j])) return false;
  return true;
}

/* input_modulus: none, or one entry per operand: 0 = operand as large as the output, k >= 1 =
 * operand holds k elements (1 = scalar). Only checked where the counts are static. */
static rlx_status modulus(const rlx_infer_ctx *c, const rlx_ilist *m, uint32_t n, const rlx_shape *shapes,
                          const rlx_shape *out) {
  if (m->n == 0) return RLX_OK;
  if (m->n != n)
    return rlx_shape_error("attribute input_modulus has %u entries; expected none or one per operand (%u)", m->n, n);
  bool out_known;
  int64_t out_n = 0;
  RLX_TRY(iu_numel(out, 0, &out_known, &out_n));
  for (uint32_t i = 0; i < n; i++) {
    int64_t k = m->v[i], e = 0;
    bool known;
    if (k < 0) return rlx_shape_error("attribute input_modulus: entry %u is %" PRId64 "; it must be >= 0", i, k);
    RLX_TRY(iu_numel(&shapes[i], i, &known, &e));
    if (!known) continue;
    if (k >= 1 && e != k)
      return rlx_shape_error("attribute input_modulus: entry %u is %" PRId64 ", but operand %u %s holds %" PRId64
                             " elements",
                             i, k, i, rlx_fmt_shape(c->in[i]), e);
    if (k == 0 && out_known && e != out_n)
      return rlx_shape_error("attribute input_modulus: entry %u is 0 (as large as the output, %" PRId64
                             " elements), but operand %u %s holds %" PRId64,
                             i, out_n, i, rlx_fmt_shape(c->in[i]), e);
  }
  return RLX_OK;
}

static rlx_status prologue_attrs(int32_t prologue, int64_t p_in, uint32_t n) {
  if (prologue < 0 || prologue >= RLX_PROLOGUE_COUNT)
    return rlx_shape_error("attribute prologue: %d is not a RegionPrologue", (int)prologue);
  if (prologue != RLX_PROLOGUE_NONE && (p_in < 0 || p_in >= (int64_t)n))
    return rlx_shape_error("attribute prologue_input is %" PRId64 "; it must name an operand (0..%u)", p_in, n - 1);
  return RLX_OK;
}

rlx_status rlx_infer_ElementwiseRegion(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ElementwiseRegion *a = &c->a->ElementwiseRegion;
  RLX_TRY(region_arity(c, "num_inputs", a->num_inputs));
  uint32_t n = c->n_in;
  RLX_TRY(prologue_attrs(a->prologue, a->prologue_input, n));
  rlx_dtype t;
  RLX_TRY(chain_dtype(c, &a->chain, &t));
  bool pro = a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X;
  uint32_t p_in = (uint32_t)a->prologue_input;
  rlx_shape shapes[MAX_REGION_INPUTS];
  for (uint32_t i = 0; i < n; i++) RLX_TRY(operand_shape(c, i, pro, p_in, &shapes[i]));
  rlx_shape acc = shapes[0];
  for (uint32_t i = 1; i < n; i++) {
    rlx_shape next;
    if (rlx_broadcast(&acc, &shapes[i], &next) != RLX_OK)
      return rlx_shape_error("operand %u has shape %s, which does not broadcast with the earlier operands (%s)", i,
                             rlx_fmt_shape(&shapes[i]), rlx_fmt_shape(&acc));
    acc = next;
  }
  for (uint32_t i = 0; i < n; i++)
    if (!trailing_tile(&shapes[i], &acc))
      return rlx_shape_error("operand %u has shape %s; inside a region an operand must tile the trailing axes of the "
                             "output %s (broadcasting a middle axis needs an unfused op)",
                             i, rlx_fmt_shape(&shapes[i]), rlx_fmt_shape(&acc));
  RLX_TRY(scalar_mask(c, a->scalar_input_mask, n));
  RLX_TRY(modulus(c, &a->input_modulus, n, shapes, &acc));
  *out = acc;
  out->dtype = (uint8_t)t;
  return RLX_OK;
}

/* The same chain on every operand (one batch slice each); results stacked along axis 0. */
rlx_status rlx_infer_BatchElementwiseRegion(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_BatchElementwiseRegion *a = &c->a->BatchElementwiseRegion;
  RLX_TRY(region_arity(c, "num_batch_inputs", a->num_batch_inputs));
  uint32_t n = c->n_in;
  RLX_TRY(prologue_attrs(a->prologue, a->prologue_input, n));
  const rlx_shape *x = c->in[0];
  bool pro = a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X;
  if (x->rank < (pro ? 3u : 1u))
    return rlx_shape_error("operand 0 has shape %s; batch slices are stacked along axis 0, so rank >= %u is needed%s",
                           rlx_fmt_shape(x), pro ? 3u : 1u, pro ? " with the ResizeNearest2x prologue" : "");
  bool sum_known = true;
  int64_t sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    const rlx_shape *s = c->in[i];
    RLX_TRY(iu_same_dtype(c, 0, i));
    bool ok = s->rank == x->rank;
    for (uint32_t k = 1; ok && k < x->rank; k++) ok = rlx_dim_equal(s->dims[k], x->dims[k]);
    if (!ok)
      return rlx_shape_error("operand %u has shape %s; every batch operand must match operand 0 %s except on axis 0", i,
                             rlx_fmt_shape(s), rlx_fmt_shape(x));
    if (s->dims[0] < 0)
      sum_known = false;
    else if (sum_known)
      RLX_TRY(ck_add_or(sum, s->dims[0], &sum, "the stacked axis-0 extent"));
  }
  rlx_dtype t;
  RLX_TRY(chain_dtype(c, &a->chain, &t));
  RLX_TRY(scalar_mask(c, a->scalar_input_mask, n));
  if (a->input_modulus.n != 0 && a->input_modulus.n != n)
    return rlx_shape_error("attribute input_modulus has %u entries; expected none or one per operand (%u)",
                           a->input_modulus.n, n);
  *out = *x;
  out->dtype = (uint8_t)t;
  if (sum_known)
    out->dims[0] = sum;
  else if (n == 1)
    out->dims[0] = x->dims[0];
  else if (c->declared && c->declared->rank == x->rank)
    out->dims[0] = c->declared->dims[0];
  else
    return rlx_shape_error("an operand's axis 0 is symbolic, so the stacked extent is unknown; give the output shape "
                           "explicitly");
  if (pro)
    for (uint32_t k = x->rank - 2; k < x->rank; k++) {
      if (out->dims[k] < 0)
        return rlx_shape_error("operand 0 %s: the ResizeNearest2x prologue cannot double the symbolic axis %u",
                               rlx_fmt_shape(x), k);
      RLX_TRY(ck_mul_or(out->dims[k], 2, &out->dims[k], "the ResizeNearest2x prologue's doubled extent"));
    }
  return RLX_OK;
}

/* Operand 0 upsampled x2 (nearest) on its last two axes once per step. */
rlx_status rlx_infer_TransformRegion(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_TransformRegion *a = &c->a->TransformRegion;
  RLX_TRY(region_arity(c, "num_inputs", a->num_inputs));
  if (a->steps.n == 0) return rlx_shape_error("attribute steps is empty; a TransformRegion needs at least one step");
  for (uint32_t i = 0; i < a->steps.n; i++)
    if (a->steps.v[i] < 0 || a->steps.v[i] >= a->num_inputs)
      return rlx_shape_error("attribute steps: entry %u is %" PRId64 "; it must name an operand (0..%" PRId64 ")", i,
                             a->steps.v[i], a->num_inputs - 1);
  const rlx_shape *x = c->in[0];
  if (x->rank < 2)
    return rlx_shape_error("operand 0 has shape %s; nearest 2x resizing needs rank >= 2 (..., H, W)", rlx_fmt_shape(x));
  *out = *x;
  for (uint32_t k = x->rank - 2; k < x->rank; k++) {
    if (x->dims[k] < 0) {
      if (c->declared && c->declared->rank == x->rank) {
        out->dims[k] = c->declared->dims[k];
        continue;
      }
      return rlx_shape_error("operand 0 %s: axis %u is symbolic, so its upsampled extent is unknown; give the output "
                             "shape explicitly",
                             rlx_fmt_shape(x), k);
    }
    for (uint32_t i = 0; i < a->steps.n && out->dims[k] != 0; i++)
      RLX_TRY(ck_mul_or(out->dims[k], 2, &out->dims[k], "an upsampling step's doubled extent"));
  }
  return RLX_OK;
}
