/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast kernel: ElementwiseRegion on f32, evaluated block by block.
 *
 * The output is cut into blocks of BLK elements. For each block every chain step runs as one
 * tight loop over BLK values held in a per-thread buffer (the last step writes the output
 * directly), so a chain of k steps reads its operands and writes its result once instead of k
 * times. A value that is the same for every element (a step on single-element operands only) is
 * computed once per block. Operands as large as the output are read in place; single elements
 * are broadcast; other tiling operands (gid % count) and bool operands are copied into a block
 * buffer first (once per task when the block length can be a multiple of their counts). Blocks are independent, so the result does not depend on the thread count.
 *
 * Each step computes what the unfused op's CPU kernel computes for f32: Add Sub Mul Div Max Min
 * and the activations with an f32 loop share the Binary / Activation fast kernels' code
 * (fk_bin_f32, fk_act_f32; Pow with a single-element exponent takes the fast kernel's short
 * forms, any other exponent double pow); Rsqrt, Sin, Cos, Tan, Atan and Round go through double
 * like the reference and round once; Compare, Where and the f32 <-> bool casts are exact. Values: f32, and
 * bool as 0.0f / 1.0f. Other dtypes, the prologue and other casts run on the reference kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

#define BLK 2048
#define MAX_OPS 16

static uint32_t arity(int32_t kind) {
  return kind == RLX_CHAIN_STEP_WHERE ? 3 : kind == RLX_CHAIN_STEP_BINARY || kind == RLX_CHAIN_STEP_COMPARE ? 2 : 1;
}

/* The activations computed through double (no f32 loop among the fast ones). */
static bool act_double(rlx_act k) {
  return k == RLX_ACT_RSQRT || k == RLX_ACT_SIN || k == RLX_ACT_COS || k == RLX_ACT_TAN || k == RLX_ACT_ATAN ||
         k == RLX_ACT_ROUND;
}

FK_APPLIES(ElementwiseRegion) {
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  if (n_in < 1 || n_in > MAX_OPS || a->num_inputs != (int64_t)n_in || a->prologue != RLX_PROLOGUE_NONE) return false;
  if (a->chain.n == 0 || a->chain.n > 1024 || !fk_static_f32(&n->shape)) return false;
  size_t total = fk_numel(&n->shape);
  bool is_bool[MAX_OPS];
  for (uint32_t i = 0; i < n_in; i++) {
    const rlx_shape *s = &in[i].shape;
    if (!rlx_shape_is_static(s) || (s->dtype != RLX_F32 && s->dtype != RLX_BOOL)) return false;
    size_t c = fk_numel(s);
    if (c == 0 || total % c != 0) return false;
    is_bool[i] = s->dtype == RLX_BOOL;
  }
  /* step dtypes: f32 or bool */
  uint8_t sb[1024];
  for (uint32_t j = 0; j < a->chain.n; j++) {
    const rlx_chain_step *st = &a->chain.steps[j];
    const rlx_chain_operand *r[3] = {&st->a, &st->b, &st->c};
    bool b[3];
    uint32_t u = arity(st->kind);
    for (uint32_t k = 0; k < u; k++) {
      if (r[k]->is_step ? r[k]->index >= j : r[k]->index >= n_in) return false;
      b[k] = r[k]->is_step ? sb[r[k]->index] : is_bool[r[k]->index];
    }
    switch (st->kind) {
    case RLX_CHAIN_STEP_ACTIVATION:
      if (b[0] || st->sub < 0 || st->sub > RLX_ACT_ROUND) return false;
      if (!fk_act_f32_ok((rlx_act)st->sub) && !act_double((rlx_act)st->sub)) return false;
      sb[j] = 0;
      break;
    case RLX_CHAIN_STEP_BINARY:
      if (b[0] || b[1] || st->sub < 0 || st->sub > RLX_BINOP_POW) return false;
      sb[j] = 0;
      break;
    case RLX_CHAIN_STEP_COMPARE:
      if (b[0] || b[1] || st->sub < 0 || st->sub >= RLX_CMP_COUNT) return false;
      sb[j] = 1;
      break;
    case RLX_CHAIN_STEP_WHERE:
      if (b[1] != b[2]) return false;
      sb[j] = b[1];
      break;
    case RLX_CHAIN_STEP_CAST:
      if (st->sub != RLX_F32 && st->sub != RLX_BOOL) return false;
      sb[j] = st->sub == RLX_BOOL;
      break;
    default: return false;
    }
  }
  return !sb[a->chain.n - 1];
}

/* One value of a block: BLK elements at p (stride 1) or one element (stride 0). */
typedef struct val {
  const float *p;
  size_t st;
} val;

typedef struct rjob {
  const rlx_attrs_ElementwiseRegion *a;
  const rlx_tensor *in;
  uint32_t n_in;
  size_t total;
  size_t blk;    /* elements per block (<= BLK) */
  bool periodic; /* blk is a multiple of every tiling operand's count: their block buffers are the
                     same for every block and are filled once per task */
  float *out;
  float *mem; /* per chunk: one BLK buffer per step, then one per operand */
} rjob;

static size_t gcd_size(size_t a, size_t b) {
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* elements [idx, idx + len) of the tiling operand x of count c, wrapped around (idx < c), as f32 */
static void tile_copy(const rlx_tensor *t, size_t c, size_t idx, size_t len, float *b) {
  if (t->shape.dtype == RLX_F32) { /* whole runs: a bias row is one or two copies, not len wraps */
    const float *x = t->data;
    for (size_t e = 0; e < len;) {
      size_t run = c - idx < len - e ? c - idx : len - e;
      memcpy(b + e, x + idx, run * sizeof *b);
      e += run;
      idx = 0;
    }
    return;
  }
  const uint8_t *x = t->data;
  for (size_t e = 0; e < len; e++) {
    b[e] = x[idx] ? 1.0f : 0.0f;
    if (++idx == c) idx = 0;
  }
}

static double round_even(double x) {
  if (!isfinite(x)) return x;
  double f = floor(x), d = x - f;
  double r = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2.0) == 0 ? f : f + 1);
  return r == 0 ? copysign(0.0, x) : r;
}

static void act_step(rlx_act k, const float *restrict x, float *restrict y, size_t len) {
  if (fk_act_f32_ok(k)) {
    fk_act_f32(k, x, y, len);
    return;
  }
  for (size_t i = 0; i < len; i++) {
    double v = x[i], r;
    switch (k) {
    case RLX_ACT_RSQRT: r = 1 / sqrt(v); break;
    case RLX_ACT_SIN: r = sin(v); break;
    case RLX_ACT_COS: r = cos(v); break;
    case RLX_ACT_TAN: r = tan(v); break;
    case RLX_ACT_ATAN: r = atan(v); break;
    default: r = round_even(v); break;
    }
    y[i] = (float)r;
  }
}

static bool cmp_f(rlx_cmp op, float a, float b) {
  switch (op) { /* IEEE comparisons: NaN compares false except Ne, like the reference */
  case RLX_CMP_EQ: return a == b;
  case RLX_CMP_NE: return a != b;
  case RLX_CMP_LT: return a < b;
  case RLX_CMP_LE: return a <= b;
  case RLX_CMP_GT: return a > b;
  default: return a >= b;
  }
}

/* Binary Add..Pow: every one has an f32 loop (Pow: short forms for a uniform exponent, else
 * double pow rounded once, the reference's value). */
static void bin_step(rlx_binop op, val a, val b, float *restrict y, size_t len) {
  fk_bin_f32(op, a.p, a.st, b.p, b.st, y, len);
}

static void region_task(void *arg, size_t lo, size_t hi, int chunk) {
  const rjob *j = arg;
  const rlx_chain *ch = &j->a->chain;
  uint32_t ns = ch->n;
  float *mem = j->mem + (size_t)chunk * ((size_t)ns + j->n_in) * BLK;
  float *sbuf = mem, *ibuf = mem + (size_t)ns * BLK;
  val opv[MAX_OPS], sv[1024];
  for (size_t blk = lo; blk < hi; blk++) {
    size_t s = blk * j->blk, len = j->total - s < j->blk ? j->total - s : j->blk;
    for (uint32_t i = 0; i < j->n_in; i++) {
      const rlx_tensor *t = &j->in[i];
      size_t c = fk_numel(&t->shape);
      float *b = ibuf + (size_t)i * BLK;
      if (t->shape.dtype == RLX_F32 && c == j->total) {
        opv[i] = (val){(const float *)t->data + s, 1};
      } else if (t->shape.dtype == RLX_F32 && c == 1) {
        opv[i] = (val){(const float *)t->data, 0};
      } else if (c == 1) {
        b[0] = ((const uint8_t *)t->data)[0] ? 1.0f : 0.0f;
        opv[i] = (val){b, 0};
      } else {
        /* periodic: every block starts at a multiple of c, so the buffer of the task's first
           block (a whole j->blk) serves the others */
        if (!j->periodic || blk == lo) tile_copy(t, c, s % c, j->periodic ? j->blk : len, b);
        opv[i] = (val){b, 1};
      }
    }
    for (uint32_t k = 0; k < ns; k++) {
      const rlx_chain_step *st = &ch->steps[k];
      const rlx_chain_operand *r[3] = {&st->a, &st->b, &st->c};
      uint32_t u = arity(st->kind);
      val v[3];
      bool uniform = true;
      for (uint32_t q = 0; q < u; q++) {
        v[q] = r[q]->is_step ? sv[r[q]->index] : opv[r[q]->index];
        uniform &= v[q].st == 0;
      }
      bool last = k + 1 == ns;
      float *y = last && !uniform ? j->out + s : sbuf + (size_t)k * BLK;
      size_t m = uniform ? 1 : len;
      /* operands of a non-uniform step are read with their own stride; unary steps need stride 1 */
      switch (st->kind) {
      case RLX_CHAIN_STEP_ACTIVATION: act_step((rlx_act)st->sub, v[0].p, y, m); break;
      case RLX_CHAIN_STEP_BINARY: bin_step((rlx_binop)st->sub, v[0], v[1], y, m); break;
      case RLX_CHAIN_STEP_COMPARE: {
        rlx_cmp op = (rlx_cmp)st->sub;
        for (size_t e = 0; e < m; e++) y[e] = cmp_f(op, v[0].p[e * v[0].st], v[1].p[e * v[1].st]) ? 1.0f : 0.0f;
        break;
      }
      case RLX_CHAIN_STEP_WHERE:
        for (size_t e = 0; e < m; e++) {
          float c = v[0].p[e * v[0].st], t = v[1].p[e * v[1].st], f = v[2].p[e * v[2].st];
          y[e] = c != 0.0f ? t : f; /* NaN is true, like the reference */
        }
        break;
      default: /* Cast to f32 (from f32 or bool 0/1: the same value) or to bool */
        if (st->sub == RLX_BOOL)
          for (size_t e = 0; e < m; e++) y[e] = v[0].p[e] != 0.0f ? 1.0f : 0.0f;
        else
          memcpy(y, v[0].p, m * sizeof *y);
        break;
      }
      sv[k] = (val){y, uniform ? 0 : 1};
      if (last && uniform)
        for (size_t e = 0; e < len; e++) j->out[s + e] = y[0];
    }
  }
}

FK_KERNEL(ElementwiseRegion) {
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  size_t total = fk_numel(&out->shape);
  if (total == 0) return RLX_OK;
  /* Blocks of a multiple of the tiling operands' counts (a bias of 384 or 1536 columns) when their
     least common multiple fits in BLK: their block buffers are then filled once per task instead of
     once per block (the bias + Gelu region of a 128 x 1536 layer spent a third of its time there). */
  size_t blk = BLK, period = 1;
  for (uint32_t i = 0; i < n_in && period; i++) {
    size_t c = fk_numel(&in[i].shape);
    if (c == 1 || c == total) continue;
    size_t l = period / gcd_size(period, c) * c;
    period = l <= BLK ? l : 0;
  }
  bool periodic = period > 1;
  if (periodic) blk = BLK / period * period;
  size_t blocks = (total + blk - 1) / blk, grain = 8;
  int chunks = fk_chunks(ctx, blocks, grain);
  float *mem = malloc((size_t)chunks * ((size_t)a->chain.n + n_in) * BLK * sizeof *mem);
  if (!mem) return rlx_kernel_error(n, "out of memory for the region's block buffers");
  rjob j = {
      .a = a, .in = in, .n_in = n_in, .total = total, .blk = blk, .periodic = periodic, .out = out->data, .mem = mem};
  fk_parallel_for(ctx, blocks, grain, region_task, &j);
  free(mem);
  return RLX_OK;
}
