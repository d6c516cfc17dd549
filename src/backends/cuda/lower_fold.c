/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Folds after lowering.
 *
 * Backward sums (first, so that the folds below see what each step writes): autodiff's
 * LayerNorm backward is a dx node, a gamma node and a Reduce of dy over the rows for beta, each
 * reading the same [rows, C] operands, and the dx is then added to the residual's gradient; an
 * ActivationBackward's dx is summed over the rows for the bias before it. In the f32 GPT-2 block
 * these were 11 kernels (0.36 ms of 9.9). Folded:
 *   - the dx kernel writes each row's statistics into the gamma step's buffer (it computes them
 *     anyway, with the statistics kernel's arithmetic), and the gamma step skips them;
 *   - a Reduce summing the gamma step's dy over the rows is computed by the gamma kernel;
 *   - an f32 Add of the dx and a tensor of its shape is done by the dx kernel as it stores: at
 *     the dx step when the Add's slot is free from there on, else (the plan gave the Add the
 *     bytes of x or dy, as in the GPT-2 block) the dx step moves to the Add's place and the
 *     gamma step computes its own statistics;
 *   - a Reduce summing an ActivationBackward's dx over the rows is done by a kernel that writes
 *     dx and sums it.
 *   - a gamma step still computing its own statistics takes them from the forward LayerNorm of
 *     the same x (its warp kernel sums rows in the backward kernels' order; the same bits);
 *     RLX_CUDA_FOLD_NORM_STATS=0 turns this one off.
 * Every fused sum folds the same values in the same order, into the same chunks, as the Reduce's
 * own kernel, so the results keep their bits (colsum.cuh). A fused step writes the absorbed
 * node's slot earlier than the plan scheduled it: taken only when no step in between reads or
 * writes those bytes and the operands read early are not written in between.
 * RLX_CUDA_FOLD_SUMS=0 turns these off.
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
 * operands (cuBLASLt writes them while it reads those). An ElementwiseRegion (product + bias) +
 * residual after the MatMul (the block's two residual Adds, 25 us each in f32) becomes the BIAS
 * epilogue with beta = 1 over the residual. RLX_CUDA_LT_EPILOGUES=0 turns it off.
 *
 * Attention gradients into their Concat: autodiff writes the gradient of a QKV projection split
 * by Narrows as Concat(dq, dk, dv), three row copies (40 us in the f32 GPT-2 block) after the
 * attention backward steps, one of which also copies its sibling's dk or dv (25 MB). The
 * tensor-core kernels write dq / dk / dv straight into the Concat's columns (rows of the Concat's
 * width, rlx_cu_attn_bw's out_ld) when the steps between the first gradient and the Concat are
 * only theirs and the Concat's slot holds nothing they read. The plan gives the Concat the bytes
 * of q, k and v, which the backward steps read: such an operand is moved out of the arena into a
 * buffer of its own (device memory beside the arena, the operand's size) when it is written by
 * one copy (its Narrow) and read only by attention steps. RLX_CUDA_FOLD_CONCAT=0 turns it off.
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
    for (uint32_t j = 0; j < s->n_writes_also; j++)
      if (overlaps(addr(p, s->writes_also[j]), p->plan->size[s->writes_also[j]], lo, n)) return true;
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

/* ---- backward sums ---- */

/* Does any step strictly between first and last read or write [lo, lo + n)? (the steps' reads:
 * their nodes' inputs; this runs before the folds that make steps read other slots) */
static bool touched_between(const rlx_cu_prog *p, uint32_t first, uint32_t last, const uint8_t *lo, size_t n) {
  if (last > first + 1 && written_between(p, first, last - 1, lo, n)) return true;
  for (uint32_t k = first + 1; k < last; k++) {
    const rlx_node *nd = rlx_graph_node(p->g, p->steps[k].node);
    for (uint32_t i = 0; i < nd->n_inputs; i++)
      if (overlaps(addr(p, nd->inputs[i]), p->plan->size[nd->inputs[i]], lo, n)) return true;
  }
  return false;
}

static void note_write(cu_step *s, rlx_id id) {
  if (s->n_writes_also < 2) s->writes_also[s->n_writes_also++] = id;
}

/* A Reduce step summing (or averaging) the leading axes of its operand, read as [*rows, *C]. */
static bool leading_sum(const cu_step *r, int64_t *rows, int64_t *C) {
  if (r->kind != ST_REDUCE || (r->op != RLX_REDUCE_SUM && r->op != RLX_REDUCE_MEAN) || r->rank < 2) return false;
  int n_red = 0;
  while (n_red < r->rank && (r->mask & (1u << n_red))) n_red++;
  if (n_red == 0 || n_red == r->rank || r->mask != (1u << n_red) - 1u) return false;
  *rows = 1, *C = 1;
  for (int k = 0; k < r->rank; k++) *(k < n_red ? rows : C) *= r->dims[k];
  return true;
}

/* The first Reduce step after k that sums the leading axes of the bytes at src as [rows, C] (and
 * the bytes not written in between); its index, or 0. */
static uint32_t find_colsum(const rlx_cu_prog *p, uint32_t k, const void *src, int dtype, int64_t rows, int64_t C,
                            const bool *dead) {
  for (uint32_t j = k + 1; j < p->n_steps; j++) {
    const cu_step *r = &p->steps[j];
    int64_t rr, rc;
    if (dead[j] || r->src != src || r->dtype != dtype || !leading_sum(r, &rr, &rc) || rr != rows || rc != C) continue;
    const size_t n = (size_t)(rows * C) * rlx_dtype_size((rlx_dtype)dtype);
    if (written_between(p, k, j - 1, src, n)) return 0;
    return j;
  }
  return 0;
}

/* The Reduce step j's result written at step k: nothing in between may touch its slot. */
static bool colsum_slot_free(const rlx_cu_prog *p, uint32_t k, uint32_t j) {
  rlx_id r = p->steps[j].node;
  return !touched_between(p, k, j, addr(p, r), p->plan->size[r]);
}

static void fold_norm_dx(rlx_cu_prog *p, uint32_t k, const uint32_t *uses, bool *dead) {
  cu_step *s = &p->steps[k];
  const rlx_node *dn = rlx_graph_node(p->g, s->node);
  const void *own[4] = {s->src, s->aux[0], s->aux[1], s->dst};
  if (s->nf.add || !rlx_cu_norm_dx_warp_fits(s->dtype, s->a, s->b, own, 4)) return; /* (a moved step: done) */
  const size_t esz = rlx_dtype_size((rlx_dtype)s->dtype), bytes = (size_t)(s->a * s->b) * esz;
  /* the gamma step of the same x: statistics */
  for (uint32_t j = k + 1; j < p->n_steps; j++) {
    cu_step *gs = &p->steps[j];
    if (gs->kind != ST_NORM_BW || gs->op != 1 || gs->nf.stats_ready || !gs->scratch) continue;
    const rlx_node *gn = rlx_graph_node(p->g, gs->node);
    if (gn->inputs[0] != dn->inputs[0] || gs->rms != s->rms || gs->eps != s->eps || gs->a != s->a || gs->b != s->b ||
        gs->dtype != s->dtype)
      continue;
    if (written_between(p, k, j - 1, s->src, bytes)) break;
    s->nf.stats_out = gs->scratch;
    gs->nf.stats_ready = 1;
    if (fold_log()) fprintf(stderr, "cuda fold: norm dx %%%u writes the statistics of gamma %%%u\n", s->node, gs->node);
    break;
  }
  /* an f32 Add of dx and a tensor of its shape */
  if (s->dtype != RLX_F32 || uses[s->node] != 1) return;
  for (uint32_t j = k + 1; j < p->n_steps; j++) {
    cu_step *as = &p->steps[j];
    const rlx_node *an = rlx_graph_node(p->g, as->node);
    bool reads = false;
    for (uint32_t i = 0; i < an->n_inputs; i++) reads |= an->inputs[i] == s->node;
    if (!reads) continue;
    if (dead[j] || as->kind != ST_EW || as->n_post || as->ew.kind != RLX_CU_EW_BINARY || as->ew.sub != RLX_BINOP_ADD ||
        an->n_inputs != 2 || an->shape.dtype != RLX_F32 || !rlx_shape_equal(&an->shape, &dn->shape))
      return;
    rlx_id o = an->inputs[0] == s->node ? an->inputs[1] : an->inputs[0];
    if (o == s->node || !rlx_shape_equal(shape_of(p, o), &dn->shape)) return;
    const uint8_t *A = addr(p, as->node), *O = addr(p, o);
    const size_t an_n = p->plan->size[as->node];
    const void *fused[5] = {s->src, s->aux[0], s->aux[1], A, O};
    if (!rlx_cu_norm_dx_warp_fits(s->dtype, s->a, s->b, fused, 5)) break;
    const bool in_place = A == O && an_n == p->plan->size[o];
    if (!in_place && overlaps(A, an_n, O, p->plan->size[o])) break;
    const bool o_kept = !(k > 0 ? written_between(p, k - 1, j - 1, O, p->plan->size[o])
                                : written_between(p, 0, j - 1, O, p->plan->size[o]));
    if (o_kept && !overlaps(A, an_n, s->src, bytes) && !overlaps(A, an_n, s->aux[0], (size_t)s->b * esz) &&
        !overlaps(A, an_n, s->aux[1], bytes) && !touched_between(p, k, j, A, an_n)) {
      /* at the dx step: the Add's slot is free from there on */
      s->dst = (void *)A;
      s->nf.add = O;
      note_write(s, as->node);
      dead[j] = true;
      if (fold_log())
        fprintf(stderr, "cuda fold: norm dx %%%u adds %%%u as it stores (Add %%%u)\n", s->node, o, as->node);
      return;
    }
    /* else at the Add: the plan gave the Add the bytes of x or dy (free after the gamma step) or
     * they are read in between. The kernel reads a row before it writes it, so the Add's slot may
     * be x's or dy's exactly; the operands must last until the Add, and the statistics are then
     * the gamma step's own (it runs first). */
    const bool exact_or_apart = (A == (const uint8_t *)s->src || !overlaps(A, an_n, s->src, bytes)) &&
                                (A == (const uint8_t *)s->aux[1] || !overlaps(A, an_n, s->aux[1], bytes)) &&
                                !overlaps(A, an_n, s->aux[0], (size_t)s->b * esz);
    if (!o_kept || !exact_or_apart || written_between(p, k, j - 1, s->src, bytes) ||
        written_between(p, k, j - 1, s->aux[1], bytes) || written_between(p, k, j - 1, s->aux[0], (size_t)s->b * esz))
      break;
    if (s->nf.stats_out)
      for (uint32_t g = k + 1; g < j; g++)
        if (p->steps[g].kind == ST_NORM_BW && p->steps[g].scratch == s->nf.stats_out) p->steps[g].nf.stats_ready = 0;
    s->nf.stats_out = NULL;
    s->dst = (void *)A;
    s->nf.add = O;
    note_write(s, as->node);
    const cu_step t = *as;
    *as = *s; /* the dx step moves to the Add's place; the Add (at k) is dropped */
    *s = t;
    dead[k] = true;
    if (fold_log())
      fprintf(stderr, "cuda fold: norm dx %%%u adds %%%u as it stores, run at Add %%%u\n", as->node, o, t.node);
    return;
  }
  if (fold_log()) fprintf(stderr, "cuda fold: norm dx %%%u + Add: declined (slots)\n", s->node);
}

static void fold_norm_beta(rlx_cu_prog *p, uint32_t k, bool *dead) {
  cu_step *s = &p->steps[k];
  const void *ptrs[2] = {s->aux[1], s->src};
  if (s->a < 256 || s->nf.colsum) return;
  uint32_t j = find_colsum(p, k, s->aux[1], s->dtype, s->a, s->b, dead);
  if (!j || !rlx_cu_colsum_fits(p->steps[j].op, s->dtype, s->a, s->b, ptrs, 2) || !colsum_slot_free(p, k, j)) return;
  s->nf.colsum = addr(p, p->steps[j].node);
  s->nf.colsum_op = p->steps[j].op;
  note_write(s, p->steps[j].node);
  dead[j] = true;
  if (fold_log()) fprintf(stderr, "cuda fold: norm gamma %%%u also sums dy (Reduce %%%u)\n", s->node, p->steps[j].node);
}

static void fold_act_colsum(rlx_cu_prog *p, uint32_t k, bool *dead) {
  cu_step *s = &p->steps[k];
  if (!rlx_cu_act_colsum_fits(p->ctx, s->op, s->dtype)) return;
  const rlx_node *an = rlx_graph_node(p->g, s->node);
  for (uint32_t j = k + 1; j < p->n_steps; j++) {
    cu_step *r = &p->steps[j];
    int64_t rows, C;
    if (dead[j] || r->src != s->dst || r->dtype != s->dtype || !leading_sum(r, &rows, &C) || rows * C != s->d) continue;
    const void *ptrs[3] = {s->src, s->aux[0], s->dst};
    if (written_between(p, k, j - 1, s->dst, p->plan->size[s->node]) ||
        !rlx_cu_colsum_fits(r->op, s->dtype, rows, C, ptrs, 3) || !colsum_slot_free(p, k, j))
      return;
    s->colsum = addr(p, r->node);
    s->colsum_op = r->op;
    s->a = rows;
    s->b = C;
    note_write(s, r->node);
    dead[j] = true;
    if (fold_log())
      fprintf(stderr, "cuda fold: %s %%%u also sums its rows (Reduce %%%u)\n", rlx_op_name(an->op), s->node, r->node);
    return;
  }
}

/* A gamma step still computing its own statistics (its dx step moved to a later Add) takes them
 * from the forward LayerNorm / RmsNorm of the same x, whose kernel sums the rows in the same
 * order (the warp kernels of reduce.cu and backward.cu), when x is not written in between. */
static void fold_norm_forward_stats(rlx_cu_prog *p) {
  if (env_off("RLX_CUDA_FOLD_NORM_STATS")) return;
  for (uint32_t j = 0; j < p->n_steps; j++) {
    cu_step *gs = &p->steps[j];
    if (gs->kind != ST_NORM_BW || gs->op != 1 || gs->nf.stats_ready || !gs->scratch) continue;
    const void *gx = gs->src;
    if (!rlx_cu_norm_rows_fit(gs->dtype, gs->b, &gx, 1)) continue; /* the statistics kernel's layout */
    for (uint32_t k = j; k-- > 0;) {
      cu_step *f = &p->steps[k];
      const void *fp[4] = {f->src, f->aux[0], f->aux[1], f->dst};
      if (f->kind != ST_NORM || f->src != gs->src || f->rms != gs->rms || f->eps != gs->eps || f->a != gs->a ||
          f->b != gs->b || f->dtype != gs->dtype || f->nf.stats_out || f->n_pre || f->n_post ||
          !rlx_cu_norm_warp_fits(f->dtype, f->b, fp, 4))
        continue;
      const size_t bytes = (size_t)(f->a * f->b) * rlx_dtype_size((rlx_dtype)f->dtype);
      if (written_between(p, k, j - 1, f->src, bytes)) break;
      f->nf.stats_out = gs->scratch;
      gs->nf.stats_ready = 1;
      if (fold_log()) fprintf(stderr, "cuda fold: norm %%%u writes the statistics of gamma %%%u\n", f->node, gs->node);
      break;
    }
  }
}

void cu_fold_backward_sums(rlx_cu_prog *p) {
  if (env_off("RLX_CUDA_FOLD_SUMS") || p->n_steps < 2) return;
  uint32_t *uses = use_counts(p);
  bool *dead = calloc(p->n_steps, sizeof *dead);
  if (!uses || !dead) goto done;
  for (uint32_t k = 0; k < p->n_steps; k++) {
    const cu_step *s = &p->steps[k];
    if (dead[k] || s->n_pre) continue;
    if (s->kind == ST_NORM_BW && s->op == 0)
      fold_norm_dx(p, k, uses, dead);
    else if (s->kind == ST_NORM_BW && s->op == 1)
      fold_norm_beta(p, k, dead);
    else if (s->kind == ST_ACT_BW)
      fold_act_colsum(p, k, dead);
  }
  drop_steps(p, dead);
  fold_norm_forward_stats(p);
done:
  free(uses);
  free(dead);
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

/* An ElementwiseRegion (mm + bias) + residual, in either operand order, the residual a tensor of
 * mm's shape (the block's attention and MLP outputs added to the stream): its bias and residual,
 * else false. */
static bool region_bias_residual(const rlx_cu_prog *p, const rlx_node *r, rlx_id mm, int64_t N, rlx_id *bias,
                                 rlx_id *res) {
  if (r->op != RLX_OP_ElementwiseRegion || r->n_inputs != 3 || r->attrs.ElementwiseRegion.prologue != RLX_PROLOGUE_NONE)
    return false;
  const rlx_chain *ch = &r->attrs.ElementwiseRegion.chain;
  if (ch->n != 2) return false;
  const rlx_chain_step *s0 = &ch->steps[0], *s1 = &ch->steps[1];
  if (s0->kind != RLX_CHAIN_STEP_BINARY || s0->sub != RLX_BINOP_ADD || s1->kind != RLX_CHAIN_STEP_BINARY ||
      s1->sub != RLX_BINOP_ADD || s0->a.is_step || s0->b.is_step || s0->a.index == s0->b.index)
    return false;
  const rlx_chain_operand *st = s1->a.is_step ? &s1->a : &s1->b, *ro = s1->a.is_step ? &s1->b : &s1->a;
  if (!st->is_step || st->index != 0 || ro->is_step || ro->index == s0->a.index || ro->index == s0->b.index ||
      ro->index >= 3 || s0->a.index >= 3 || s0->b.index >= 3)
    return false;
  const rlx_id a = r->inputs[s0->a.index], b = r->inputs[s0->b.index], c = r->inputs[ro->index];
  if (a != mm && b != mm) return false;
  const rlx_id bv = a == mm ? b : a;
  const rlx_shape *bs = shape_of(p, bv), *ms = shape_of(p, mm), *cs = shape_of(p, c);
  if (bv == mm || c == mm || bs->dtype != ms->dtype || bs->rank == 0 || bs->dims[bs->rank - 1] != N || numel(bs) != N ||
      !rlx_shape_equal(cs, ms) || !rlx_shape_equal(&r->shape, ms))
    return false;
  *bias = bv;
  *res = c;
  return true;
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
    rlx_id add = p->steps[k + 1].node, bias = bias_operand(p, rlx_graph_node(p->g, add), mm, N), res = RLX_NO_ID;
    if (bias == RLX_NO_ID && !region_bias_residual(p, rlx_graph_node(p->g, add), mm, N, &bias, &res)) {
      if (fold_log())
        fprintf(stderr, "cuda fold: MatMul %%%u: the next step (%%%u %s) is not the Add of a bias vector\n", mm, add,
                rlx_op_name(rlx_graph_node(p->g, add)->op));
      continue;
    }
    const size_t esz = rlx_dtype_size((rlx_dtype)s->dtype);
    const uint8_t *A = s->src, *B = s->aux[0], *bp = addr(p, bias);
    uint8_t *sum = addr(p, add);
    const size_t a_n = (size_t)(M * K) * esz, b_n = (size_t)(K * N) * esz, out_n = (size_t)(M * N) * esz;
    if (res != RLX_NO_ID) { /* bias + residual: D = A . B + C + bias, C the residual's bytes or D's own */
      const uint8_t *cp = addr(p, res);
      rlx_cu_lt_args g = {.dtype = s->dtype,
                          .trans = s->trans,
                          .epilogue = RLX_CU_LT_BIAS,
                          .M = M,
                          .N = N,
                          .K = K,
                          .A = A,
                          .B = B,
                          .bias = bp,
                          .C = cp,
                          .D = sum};
      rlx_cu_lt *lt = NULL;
      const bool fits = !overlaps(sum, out_n, A, a_n) && !overlaps(sum, out_n, B, b_n) &&
                        !overlaps(sum, out_n, bp, (size_t)N * esz) && (cp == sum || !overlaps(sum, out_n, cp, out_n));
      if (!fits || rlx_cu_lt_create(p->ctx, &g, &lt) != RLX_OK || !lt) {
        if (fold_log())
          fprintf(stderr, "cuda fold: MatMul %%%u + bias + residual: declined (%s)\n", mm,
                  fits ? "no cuBLASLt algorithm without split-K" : "the sum's slot overlaps an operand");
        continue;
      }
      s->lt = lt;
      dead[k + 1] = true;
      if (fold_log())
        fprintf(stderr,
                "cuda fold: MatMul %%%u [%lld x %lld x %lld] + bias + residual %%%u -> one cuBLASLt product "
                "(BIAS, beta 1)\n",
                mm, (long long)M, (long long)K, (long long)N, res);
      continue;
    }
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

/* ---- attention gradients into their Concat ---- */

/* The node whose slot a Concat operand is (through Reshape views), when that node is an
 * AttentionBackward read by nothing else; else RLX_NO_ID. */
static rlx_id attn_grad_of(const rlx_cu_prog *p, const uint32_t *uses, rlx_id v) {
  const rlx_id r = p->plan->root[v];
  if (rlx_graph_node(p->g, r)->op != RLX_OP_AttentionBackward || uses[r] != 1 || (v != r && uses[v] != 1))
    return RLX_NO_ID;
  for (rlx_id m = v; m != r;) { /* a chain of Reshapes down to r */
    const rlx_node *mn = rlx_graph_node(p->g, m);
    if (mn->op != RLX_OP_Reshape || mn->n_inputs != 1 || uses[m] != 1) return RLX_NO_ID;
    m = mn->inputs[0];
  }
  return r;
}

/* Moves operand node `q` of the attention steps out of the arena into a buffer of its own, when
 * one copy step (its Narrow) writes it and only attention operands 0..2 read it (through views):
 * the writer's destination and every attention step's pointer to it change. */
static bool move_attention_operand(rlx_cu_prog *p, rlx_id q) {
  const uint32_t nn = rlx_graph_node_count(p->g);
  for (rlx_id m = 0; m < nn; m++) {
    const rlx_node *mn = rlx_graph_node(p->g, m);
    if (p->plan->root[m] == q) continue; /* q or a view of it */
    for (uint32_t i = 0; i < mn->n_inputs; i++)
      if (p->plan->root[mn->inputs[i]] == q &&
          !((mn->op == RLX_OP_Attention || mn->op == RLX_OP_AttentionBackward) && i < 3))
        return false;
  }
  const rlx_id *outs = rlx_graph_outputs(p->g);
  for (uint32_t i = 0; i < rlx_graph_output_count(p->g); i++)
    if (p->plan->root[outs[i]] == q) return false;
  cu_step *w = NULL;
  uint8_t *old = addr(p, q);
  for (uint32_t k = 0; k < p->n_steps && !w; k++)
    if (p->steps[k].node == q) w = &p->steps[k];
  if (!w || w->kind != ST_COPIES || w->n_copies != 1 || w->copies[0].dst != old || w->scratch || w->n_pre || w->n_post)
    return false;
  void *buf = NULL;
  if (rlx_cu_malloc(p->ctx, p->plan->size[q] ? p->plan->size[q] : 1, &buf) != RLX_OK) {
    (void)rlx_last_error();
    return false;
  }
  if (fold_log())
    fprintf(stderr, "cuda fold: %%%u (%s) moved out of the arena into %zu bytes of its own\n", q,
            rlx_op_name(rlx_graph_node(p->g, q)->op), p->plan->size[q]);
  w->scratch = buf; /* owned by the writer (cu_step_release) */
  w->copies[0].dst = buf;
  for (uint32_t k = 0; k < p->n_steps; k++) {
    cu_step *s = &p->steps[k];
    rlx_cu_attn *a = s->kind == ST_ATTN ? &s->at : s->kind == ST_ATTN_BW ? &s->abw.a : NULL;
    if (!a) continue;
    if (a->Q == old) a->Q = buf;
    if (a->K == old) a->K = buf;
    if (a->V == old) a->V = buf;
  }
  return true;
}

void cu_fold_attention_concat(rlx_cu_prog *p) {
  if (env_off("RLX_CUDA_FOLD_CONCAT") || p->n_steps < 3) return;
  uint32_t *uses = use_counts(p);
  bool *dead = calloc(p->n_steps, sizeof *dead);
  if (!uses || !dead) goto done;
  for (uint32_t kc = 0; kc < p->n_steps; kc++) {
    cu_step *cs = &p->steps[kc];
    const rlx_node *cn = rlx_graph_node(p->g, cs->node);
    if (cs->kind != ST_COPIES || cn->op != RLX_OP_Concat || cn->n_inputs < 2 || cn->n_inputs > 3 || dead[kc]) continue;
    const int64_t rank = cn->shape.rank,
                  axis = cn->attrs.Concat.axis < 0 ? cn->attrs.Concat.axis + rank : cn->attrs.Concat.axis;
    if (rank < 2 || axis != rank - 1 || p->plan->root[cs->node] != cs->node) continue;
    const int64_t W = cn->shape.dims[rank - 1];
    const size_t esz = rlx_dtype_size(cn->shape.dtype);
    uint8_t *slot = addr(p, cs->node);
    const size_t slot_n = p->plan->size[cs->node];
    /* the gradients, their column offsets, and the steps that write them */
    cu_step *by[3] = {NULL, NULL, NULL}; /* the ATTN_BW steps computing dq / dk / dv */
    uint32_t first = kc, copies[3], n_copies = 0;
    int64_t off[3] = {-1, -1, -1}, col = 0;
    bool ok = true;
    const char *why = "an operand is not an AttentionBackward read only by the Concat";
    for (uint32_t i = 0; i < cn->n_inputs && ok; i++) {
      const rlx_id r = attn_grad_of(p, uses, cn->inputs[i]);
      const int wrt = r == RLX_NO_ID ? -1 : rlx_graph_node(p->g, r)->attrs.AttentionBackward.wrt;
      ok = wrt >= 0 && wrt < 3 && off[wrt] < 0;
      if (!ok) break;
      off[wrt] = col;
      col += shape_of(p, cn->inputs[i])->dims[rank - 1];
      const uint8_t *o = addr(p, r);
      for (uint32_t k = 0; k < kc; k++) { /* the step computing it, or its copy from a sibling's buffer */
        cu_step *s = &p->steps[k];
        if (dead[k]) continue;
        if (s->kind == ST_ATTN_BW && (s->abw.dq == o || s->abw.dk == o || s->abw.dv == o)) {
          by[wrt] = s;
        } else if (s->kind == ST_D2D && s->dst == o) {
          for (uint32_t j = 0; j < k; j++)
            if (p->steps[j].kind == ST_ATTN_BW && p->steps[j].extra == s->src) by[wrt] = &p->steps[j];
          if (n_copies < 3) copies[n_copies++] = k;
        } else {
          continue;
        }
        if (k < first) first = k;
      }
      ok = by[wrt] != NULL;
    }
    ok = ok && col == W;
    if (ok) why = "other steps between the gradients and the Concat";
    /* only these steps between the first gradient and the Concat, all of one attention, each
     * computing only gradients the Concat takes */
    for (uint32_t k = first; ok && k < kc; k++) {
      const cu_step *s = &p->steps[k];
      bool mine = s == by[0] || s == by[1] || s == by[2];
      for (uint32_t c = 0; c < n_copies; c++) mine |= copies[c] == k;
      ok = mine && !dead[k];
    }
    if (ok)
      why = "the steps compute other gradients, are not of one attention, read dy in the Concat's slot, or "
            "take no tensor-core kernel";
    for (int a = 0; a < 3 && ok; a++) {
      if (!by[a]) continue;
      const rlx_cu_attn_bw *w = &by[a]->abw;
      const void *const got[3] = {w->dq, w->dk, w->dv};
      for (int b = 0; b < 3 && ok; b++) ok = !got[b] || by[b] == by[a];
      for (int b = 0; b < 3 && ok; b++)
        if (by[b]) ok = attn_siblings(rlx_graph_node(p->g, by[a]->node), rlx_graph_node(p->g, by[b]->node));
      /* what the step reads must not sit in the Concat's slot: dy; q, k, v are moved out below */
      const rlx_id dyn = rlx_graph_node(p->g, by[a]->node)->inputs[3];
      ok = ok && !overlaps(slot, slot_n, w->G, p->plan->size[dyn]) && w->a.dtype == (int)cn->shape.dtype;
      rlx_cu_attn_bw probe = *w;
      probe.out_ld = W;
      ok = ok && rlx_cu_attn_bw_out_ld_fits(p->ctx, &probe);
    }
    if (ok) why = "q, k or v sits in the Concat's slot and cannot be moved";
    const cu_step *any = by[0] ? by[0] : by[1] ? by[1] : by[2];
    for (uint32_t i = 0; ok && i < 3; i++) {
      const rlx_id q = p->plan->root[rlx_graph_node(p->g, any->node)->inputs[i]];
      if (overlaps(slot, slot_n, addr(p, q), p->plan->size[q]) && !move_attention_operand(p, q)) ok = false;
    }
    if (!ok) {
      if (fold_log()) fprintf(stderr, "cuda fold: Concat %%%u of attention gradients: declined (%s)\n", cs->node, why);
      continue;
    }
    for (int b = 0; b < 3; b++) {
      if (!by[b]) continue;
      rlx_cu_attn_bw *w = &by[b]->abw;
      void **d = b == 0 ? &w->dq : b == 1 ? &w->dk : &w->dv;
      *d = slot + (size_t)off[b] * esz;
      w->out_ld = W;
      note_write(by[b], cs->node);
    }
    for (int b = 0; b < 3; b++)
      if (by[b] && by[b]->extra) { /* a sibling's gradient no longer passes through it */
        rlx_cu_free(p->ctx, by[b]->extra);
        by[b]->extra = NULL;
      }
    for (uint32_t c = 0; c < n_copies; c++) dead[copies[c]] = true;
    dead[kc] = true;
    if (fold_log())
      fprintf(stderr, "cuda fold: Concat %%%u: the attention gradients written into its columns (%u steps dropped)\n",
              cs->node, 1 + n_copies);
  }
  drop_steps(p, dead);
done:
  free(uses);
  free(dead);
}
