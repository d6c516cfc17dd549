/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Folds after lowering.
 *
 * Transposes: a Transpose that swaps the last two axes and is read only by float
 * MatMuls does not run; the MatMuls read its operand in place with cuBLAS's transpose flags
 * (autodiff writes x^T . dy and dy . W^T for every linear layer: in the f32 GPT-2 block these
 * copies were 0.12 ms of 10.4).
 *
 * The plan frees the Transpose's operand after the Transpose, so its bytes may hold another
 * tensor by the time the MatMul runs: the fold is taken only when no step from the Transpose to
 * the last MatMul reading it writes into those bytes (every step writes its node's slot; an
 * in-place kind, or a pre-step writing into the arena outside its node's slot, declines it). The Transpose's own slot is then never
 * written, which is harmless: nothing reads it. RLX_CUDA_FOLD_TRANSPOSES=0 turns the fold off.
 *
 * Bias epilogues: a MatMul read only by the Add of a bias vector (the next step), and a tanh GELU
 * of that sum (the step after), become one cuBLASLt product with the BIAS, GELU_BIAS or
 * GELU_AUX_BIAS epilogue (gemm_lt.cu) writing the Add's (and the GELU's) slot; the sum is kept
 * (as aux) when something else reads it. The written slots must not overlap the product's
 * operands (cuBLASLt writes them while it reads those). RLX_CUDA_LT_EPILOGUES=0 turns it off.
 *
 * RLX_CUDA_FOLD_LOG=1 prints each fold taken, and each candidate declined with the reason, to
 * stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/lower_internal.h"

/* A Transpose of the last two axes, batch axes in place. */
static bool swaps_last_two(const rlx_node *t) {
  if (t->op != RLX_OP_Transpose) return false;
  const rlx_ilist *pm = &t->attrs.Transpose.perm;
  int64_t r = t->shape.rank;
  if (r < 2 || pm->n != (uint32_t)r) return false;
  for (int64_t k = 0; k < r; k++) {
    int64_t v = pm->v[k] < 0 ? pm->v[k] + r : pm->v[k];
    int64_t want = k < r - 2 ? k : (k == r - 2 ? r - 1 : r - 2);
    if (v != want) return false;
  }
  return true;
}

static bool env_off(const char *name) {
  const char *e = getenv(name);
  return e && !strcmp(e, "0");
}

static bool fold_log(void) {
  const char *e = getenv("RLX_CUDA_FOLD_LOG");
  return e && *e && strcmp(e, "0") != 0;
}

static bool overlaps(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  return an && bn && a < b + bn && b < a + an;
}

/* Does any step in (first, last] write into [lo, lo + n)? */
static bool written_between(const rlx_cu_prog *p, uint32_t first, uint32_t last, const uint8_t *lo, size_t n) {
  for (uint32_t k = first + 1; k <= last; k++) {
    const cu_step *s = &p->steps[k];
    const rlx_node *nd = rlx_graph_node(p->g, s->node);
    if (rlx_op_has(nd->op, RLX_PROP_INPLACE)) return true;
    const uint8_t *slot = addr(p, s->node);
    const size_t slot_n = p->plan->size[s->node];
    if (overlaps(slot, slot_n, lo, n)) return true;
    /* a pre-step writes its own scratch or the node's slot; one writing elsewhere in the arena
     * (its extent not recorded) declines the fold */
    for (uint32_t j = 0; j < s->n_pre; j++) {
      const uint8_t *d = s->pre[j].dst;
      if (overlaps(d, 1, p->arena, p->plan->arena_size) && !overlaps(d, 1, slot, slot_n)) return true;
    }
  }
  return false;
}

/* Readers of each node (a graph output counts as many: it is never folded away). */
static uint32_t *use_counts(const rlx_cu_prog *p) {
  uint32_t nn = rlx_graph_node_count(p->g);
  uint32_t *uses = calloc(nn ? nn : 1, sizeof *uses);
  if (!uses) return NULL;
  for (rlx_id id = 0; id < nn; id++) {
    const rlx_node *nd = rlx_graph_node(p->g, id);
    for (uint32_t i = 0; i < nd->n_inputs; i++) uses[nd->inputs[i]]++;
  }
  const rlx_id *outs = rlx_graph_outputs(p->g);
  for (uint32_t i = 0; i < rlx_graph_output_count(p->g); i++) uses[outs[i]] += 1u << 20;
  return uses;
}

/* Removes the steps marked dead (releasing what they own), keeping the order. */
static void drop_steps(rlx_cu_prog *p, const bool *dead) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < p->n_steps; i++) {
    if (dead[i]) {
      cu_step_release(p->ctx, &p->steps[i]);
      continue;
    }
    if (kept != i) p->steps[kept] = p->steps[i];
    kept++;
  }
  p->n_steps = kept;
}

void cu_fold_transposes(rlx_cu_prog *p) {
  if (env_off("RLX_CUDA_FOLD_TRANSPOSES") || p->n_steps == 0) return;
  uint32_t *uses = use_counts(p);
  bool *dead = calloc(p->n_steps, sizeof *dead);
  if (!uses || !dead) goto done; /* out of host memory: the Transposes simply run */

  for (uint32_t ts = 0; ts < p->n_steps; ts++) {
    rlx_id t = p->steps[ts].node;
    const rlx_node *tn = rlx_graph_node(p->g, t);
    if (p->steps[ts].kind != ST_COPIES || !swaps_last_two(tn) || p->plan->root[t] != t || !rlx_cu_blas_dtype(tn->shape.dtype))
      continue;
    /* every reader a float MatMul step after this one */
    uint32_t refs = 0, last = ts;
    for (uint32_t k = ts + 1; k < p->n_steps; k++) {
      const cu_step *s = &p->steps[k];
      const rlx_node *m = rlx_graph_node(p->g, s->node);
      if (s->kind != ST_MATMUL || m->op != RLX_OP_MatMul || !rlx_cu_blas_dtype(s->dtype)) continue;
      uint32_t r = (m->inputs[0] == t) + (m->inputs[1] == t);
      if (r) refs += r, last = k;
    }
    if (refs == 0 || refs != uses[t]) continue;
    rlx_id src = tn->inputs[0];
    const uint8_t *lo = addr(p, src);
    if (written_between(p, ts, last, lo, p->plan->size[src])) continue;
    for (uint32_t k = ts + 1; k <= last; k++) {
      cu_step *s = &p->steps[k];
      const rlx_node *m = rlx_graph_node(p->g, s->node);
      if (s->kind != ST_MATMUL || m->op != RLX_OP_MatMul) continue;
      if (m->inputs[0] == t) s->src = lo, s->trans |= 1;
      if (m->inputs[1] == t) s->aux[0] = lo, s->trans |= 2;
    }
    dead[ts] = true;
    if (fold_log()) fprintf(stderr, "cuda fold: Transpose %%%u read in place by %u MatMul operand(s)\n", t, refs);
  }

  drop_steps(p, dead);
done:
  free(uses);
  free(dead);
}

/* The bias of Add node `add` whose other operand is `mm`: a vector of N elements of the dtype
 * ([N], or [1, .., N]) added to a tensor of mm's shape; RLX_NO_ID when it is not one. */
static rlx_id bias_operand(const rlx_cu_prog *p, const rlx_node *add, rlx_id mm, int64_t N) {
  if (add->op != RLX_OP_Binary || add->attrs.Binary.op != RLX_BINOP_ADD || add->n_inputs != 2) return RLX_NO_ID;
  rlx_id b = add->inputs[0] == mm ? add->inputs[1] : add->inputs[1] == mm ? add->inputs[0] : RLX_NO_ID;
  if (b == RLX_NO_ID || b == mm) return RLX_NO_ID;
  const rlx_shape *bs = shape_of(p, b), *ms = shape_of(p, mm);
  if (bs->dtype != ms->dtype || !rlx_shape_equal(&add->shape, ms) || bs->rank == 0 || bs->dims[bs->rank - 1] != N ||
      numel(bs) != N)
    return RLX_NO_ID;
  return b;
}

void cu_fold_bias_epilogues(rlx_cu_prog *p) {
  if (env_off("RLX_CUDA_LT_EPILOGUES") || p->n_steps < 2) return;
  uint32_t *uses = use_counts(p);
  bool *dead = calloc(p->n_steps, sizeof *dead);
  if (!uses || !dead) goto done;
  for (uint32_t k = 0; k + 1 < p->n_steps; k++) {
    cu_step *s = &p->steps[k];
    rlx_id mm = s->node;
    const rlx_node *mn = rlx_graph_node(p->g, mm);
    if (s->kind != ST_MATMUL || mn->op != RLX_OP_MatMul || s->d != 1 || s->lt || uses[mm] != 1 || dead[k]) continue;
    const int64_t M = s->a, N = s->b, K = s->c2;
    rlx_id add = p->steps[k + 1].node, bias = bias_operand(p, rlx_graph_node(p->g, add), mm, N);
    if (bias == RLX_NO_ID) {
      if (fold_log())
        fprintf(stderr, "cuda fold: MatMul %%%u: the next step (%%%u %s) is not the Add of a bias vector\n", mm, add,
                rlx_op_name(rlx_graph_node(p->g, add)->op));
      continue;
    }
    const size_t esz = rlx_dtype_size((rlx_dtype)s->dtype);
    const uint8_t *A = s->src, *B = s->aux[0], *bp = addr(p, bias);
    uint8_t *sum = addr(p, add);
    const size_t a_n = (size_t)(M * K) * esz, b_n = (size_t)(K * N) * esz, out_n = (size_t)(M * N) * esz;
    /* a tanh GELU of the sum as the step after? */
    uint8_t *act = NULL;
    if (k + 2 < p->n_steps) {
      rlx_id g = p->steps[k + 2].node;
      const rlx_node *gn = rlx_graph_node(p->g, g);
      if (gn->op == RLX_OP_Activation && gn->attrs.Activation.kind == RLX_ACT_GELU_APPROX && gn->inputs[0] == add &&
          rlx_shape_equal(&gn->shape, &rlx_graph_node(p->g, add)->shape))
        act = addr(p, g);
    }
    bool keep_sum = act && uses[add] > 1;
    if (act && (overlaps(act, out_n, A, a_n) || overlaps(act, out_n, B, b_n) || overlaps(act, out_n, bp, (size_t)N * esz) ||
                (keep_sum && overlaps(act, out_n, sum, out_n))))
      act = NULL;
    const bool sum_ok =
        !overlaps(sum, out_n, A, a_n) && !overlaps(sum, out_n, B, b_n) && !overlaps(sum, out_n, bp, (size_t)N * esz);
    if (!sum_ok && (!act || keep_sum)) {
      if (fold_log()) fprintf(stderr, "cuda fold: MatMul %%%u + bias: declined (the sum's slot overlaps an operand)\n", mm);
      continue;
    }
    rlx_cu_lt_args g = {.dtype = s->dtype, .trans = s->trans, .M = M, .N = N, .K = K, .A = A, .B = B, .bias = bp};
    rlx_cu_lt *lt = NULL;
    if (act) {
      g.epilogue = keep_sum ? RLX_CU_LT_GELU_AUX_BIAS : RLX_CU_LT_GELU_BIAS;
      g.D = act;
      g.aux = keep_sum ? sum : NULL;
      if (rlx_cu_lt_create(p->ctx, &g, &lt) != RLX_OK) lt = NULL;
      if (!lt && fold_log()) fprintf(stderr, "cuda fold: MatMul %%%u + bias + GELU: the GELU stays a step\n", mm);
    }
    if (lt) {
      dead[k + 2] = true;
    } else {
      if (!sum_ok) continue;
      g.epilogue = RLX_CU_LT_BIAS;
      g.D = sum;
      g.aux = NULL;
      if (rlx_cu_lt_create(p->ctx, &g, &lt) != RLX_OK || !lt) {
        if (fold_log()) fprintf(stderr, "cuda fold: MatMul %%%u + bias: declined (no cuBLASLt algorithm)\n", mm);
        continue;
      }
    }
    s->lt = lt;
    dead[k + 1] = true;
    if (fold_log())
      fprintf(stderr, "cuda fold: MatMul %%%u [%lld x %lld x %lld] + bias%s -> one cuBLASLt product (%s)\n", mm,
              (long long)M, (long long)K, (long long)N, g.epilogue == RLX_CU_LT_BIAS ? "" : " + GELU",
              g.epilogue == RLX_CU_LT_BIAS ? "BIAS" : g.epilogue == RLX_CU_LT_GELU_BIAS ? "GELU_BIAS" : "GELU_AUX_BIAS");
  }
  drop_steps(p, dead);
done:
  free(uses);
  free(dead);
}
