/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: elementwise fusion regions (spec ir-core §10.2).
 *
 * The reference evaluates a chain the way its unfused ops would run: one step at a time over the
 * whole step shape, each step through the reference kernel of its op (Activation, Cast, Binary,
 * Compare, Where) into a temporary, so every rounding, saturation and NaN rule is exactly that
 * op's. The fast kernel (fast/region.c) computes the same values block by block. */
#include <stdlib.h>

#include "backends/cpu/ref/ref_util.h"

#define MAX_OPS 16

static uint32_t step_arity(int32_t kind) {
  return kind == RLX_CHAIN_STEP_WHERE ? 3 : kind == RLX_CHAIN_STEP_BINARY || kind == RLX_CHAIN_STEP_COMPARE ? 2 : 1;
}

/* x upsampled (nearest, x2) on its last two axes into a new buffer. */
static rlx_status resize2x(const rlx_node *n, const rlx_tensor *x, rlx_tensor *y) {
  const rlx_shape *s = &x->shape;
  if (s->rank < 2) return ru_error(RLX_ERR_INVALID_ARG, n, "the ResizeNearest2x prologue needs rank >= 2");
  y->shape = *s;
  y->shape.dims[s->rank - 2] *= 2;
  y->shape.dims[s->rank - 1] *= 2;
  size_t esz = ru_esz(x), H = (size_t)s->dims[s->rank - 2], W = (size_t)s->dims[s->rank - 1];
  size_t planes = H != 0 && W != 0 ? rlx_tensor_numel(x) / (H * W) : 0;
  y->data = malloc(rlx_tensor_numel(y) * esz + 1);
  if (!y->data) return ru_error(RLX_ERR_OOM, n, "out of memory for the prologue");
  for (size_t p = 0; p < planes; p++)
    for (size_t i = 0; i < 2 * H; i++)
      for (size_t j = 0; j < 2 * W; j++)
        ru_copy_elem(y->data, (p * 2 * H + i) * 2 * W + j, x->data, (p * H + i / 2) * W + j / 2, esz);
  return RLX_OK;
}

/* Runs `ch` over the operands; *res receives the last step's value (a malloc'ed buffer). */
static rlx_status run_chain(const rlx_node *n, const rlx_chain *ch, const rlx_tensor *ops, uint32_t n_ops,
                            rlx_cpu_ctx *ctx, rlx_tensor *res) {
  if (ch->n == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute chain is empty");
  rlx_tensor *vals = calloc(ch->n, sizeof *vals);
  if (!vals) return ru_error(RLX_ERR_OOM, n, "out of memory for the region's steps");
  rlx_status s = RLX_OK;
  uint32_t j = 0;
  for (; j < ch->n && !s; j++) {
    const rlx_chain_step *st = &ch->steps[j];
    const rlx_chain_operand *refs[3] = {&st->a, &st->b, &st->c};
    uint32_t used = step_arity(st->kind);
    rlx_tensor arg[3];
    for (uint32_t k = 0; k < used && !s; k++) {
      const rlx_chain_operand *r = refs[k];
      if (r->is_step ? r->index >= j : r->index >= n_ops)
        s = ru_error(RLX_ERR_INVALID_ARG, n, "chain step %u operand %u refers to %s %u, which does not exist", j, k,
                     r->is_step ? "step" : "input", r->index);
      else
        arg[k] = r->is_step ? vals[r->index] : ops[r->index];
    }
    if (s) break;
    rlx_node step = {.n_inputs = used, .inputs = NULL, .name = n->name};
    rlx_shape sh = arg[0].shape;
    for (uint32_t k = 1; k < used && !s; k++)
      if (rlx_broadcast(&sh, &arg[k].shape, &sh) != RLX_OK)
        s = ru_error(RLX_ERR_INVALID_ARG, n, "chain step %u: operand shapes %s and %s do not broadcast", j, ru_fmt(&sh),
                     ru_fmt(&arg[k].shape));
    if (s) break;
    rlx_cpu_kernel kern = NULL;
    switch (st->kind) {
    case RLX_CHAIN_STEP_ACTIVATION:
      step.op = RLX_OP_Activation;
      step.attrs.Activation.kind = st->sub;
      kern = rlx_cpu_ref_Activation;
      break;
    case RLX_CHAIN_STEP_CAST:
      if (st->sub < 0 || st->sub >= RLX_DTYPE_COUNT) {
        s = ru_error(RLX_ERR_INVALID_ARG, n, "chain step %u casts to out-of-range dtype %d", j, (int)st->sub);
        break;
      }
      step.op = RLX_OP_Cast;
      sh.dtype = (uint8_t)st->sub;
      kern = rlx_cpu_ref_Cast;
      break;
    case RLX_CHAIN_STEP_BINARY:
      step.op = RLX_OP_Binary;
      step.attrs.Binary.op = st->sub;
      kern = rlx_cpu_ref_Binary;
      break;
    case RLX_CHAIN_STEP_COMPARE:
      step.op = RLX_OP_Compare;
      step.attrs.Compare.op = st->sub;
      sh.dtype = RLX_BOOL;
      kern = rlx_cpu_ref_Compare;
      break;
    case RLX_CHAIN_STEP_WHERE:
      step.op = RLX_OP_Where;
      sh.dtype = arg[1].shape.dtype;
      kern = rlx_cpu_ref_Where;
      break;
    default: s = ru_error(RLX_ERR_INVALID_ARG, n, "chain step %u has unknown kind %d", j, (int)st->kind);
    }
    if (s) break;
    step.shape = sh;
    vals[j].shape = sh;
    vals[j].data = malloc(rlx_tensor_numel(&vals[j]) * rlx_dtype_size((rlx_dtype)sh.dtype) + 1);
    if (!vals[j].data) {
      s = ru_error(RLX_ERR_OOM, n, "out of memory for chain step %u", j);
      break;
    }
    s = kern(&step, arg, used, &vals[j], ctx);
    if (s) rlx_error_context(s, "%s: chain step %u", rlx_op_name(n->op), j);
  }
  if (!s) {
    *res = vals[ch->n - 1];
    vals[ch->n - 1].data = NULL;
  }
  for (uint32_t k = 0; k < ch->n; k++) free(vals[k].data);
  free(vals);
  return s;
}

RLX_CPU_KERNEL(ElementwiseRegion) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, MAX_OPS, out));
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  if (a->num_inputs != (int64_t)n_in)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute num_inputs is %lld but the node has %u operands",
                    (long long)a->num_inputs, n_in);
  rlx_tensor ops[MAX_OPS];
  for (uint32_t i = 0; i < n_in; i++) ops[i] = in[i];
  void *resized = NULL;
  if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) {
    if (a->prologue_input < 0 || a->prologue_input >= (int64_t)n_in)
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute prologue_input is out of range");
    uint32_t p = (uint32_t)a->prologue_input;
    RLX_TRY(resize2x(n, &in[p], &ops[p]));
    resized = ops[p].data;
  }
  rlx_tensor y = {0};
  rlx_status s = run_chain(n, &a->chain, ops, n_in, ctx, &y);
  free(resized);
  RLX_TRY(s);
  if (ru_dt(&y) != ru_dt(out))
    s = ru_error(RLX_ERR_INVALID_ARG, n, "the chain's result dtype differs from the output's");
  else if (!rlx_shape_is_static(&y.shape) || ru_need_bcast(n, &y, 0, &out->shape) != RLX_OK)
    s = ru_error(RLX_ERR_INVALID_ARG, n, "the chain's result %s does not broadcast to the output %s", ru_fmt(&y.shape),
                 ru_fmt(&out->shape));
  else {
    /* a chain that never reads the widest operand is broadcast to the full output */
    size_t count = rlx_tensor_numel(out), esz = ru_esz(out);
    for (size_t i = 0; i < count; i++)
      ru_copy_elem(out->data, i, y.data, rlx_broadcast_offset(&y.shape, &out->shape, i), esz);
  }
  free(y.data);
  return s;
}

/* The chain (reading operand 0) on every operand separately; results stacked along axis 0. */
RLX_CPU_KERNEL(BatchElementwiseRegion) {
  RLX_TRY(ru_prologue(n, in, n_in, 1, MAX_OPS, out));
  const rlx_attrs_BatchElementwiseRegion *a = &n->attrs.BatchElementwiseRegion;
  size_t esz = ru_esz(out), at = 0, total = rlx_tensor_numel(out);
  for (uint32_t i = 0; i < n_in; i++) {
    rlx_tensor x = in[i];
    void *resized = NULL;
    if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X) {
      RLX_TRY(resize2x(n, &in[i], &x));
      resized = x.data;
    }
    rlx_tensor y = {0};
    rlx_status s = run_chain(n, &a->chain, &x, 1, ctx, &y);
    size_t cnt = s ? 0 : rlx_tensor_numel(&y), want = rlx_tensor_numel(&x);
    free(resized);
    if (!s && (ru_dt(&y) != ru_dt(out) || cnt > want || (cnt != want && cnt != 1) || at + want > total))
      s = ru_error(RLX_ERR_INVALID_ARG, n, "the chain's result on operand %u does not fit its slice of the output", i);
    if (!s)
      for (size_t k = 0; k < want; k++) ru_copy_elem(out->data, at + k, y.data, cnt == 1 ? 0 : k, esz);
    free(y.data);
    RLX_TRY(s);
    at += want;
  }
  return RLX_OK;
}
