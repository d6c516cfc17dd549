/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Elementwise fusion: trees of elementwise nodes become ElementwiseRegion nodes (spec ir-core
 * §10.2), so a backend that claims regions evaluates a whole chain in one pass over memory.
 *
 * What joins a region (docs/cpu-backend.md, "Elementwise regions"):
 *   - the kinds a chain step can express: Activation (the region-fusable kinds Gelu..Round),
 *     Binary (Add..Pow), Compare, Where, Cast; real floating-point values (f32, f64, f16, bf16)
 *     and bool conditions / comparison results; static, non-empty shapes;
 *   - every operand of a member tiles the member's trailing axes (region kernels read operand
 *     element gid % count); tiling is transitive, so every region operand tiles the region's
 *     output;
 *   - a member other than the root has exactly one consuming node (the member it feeds, possibly
 *     through several of its operand slots) and is not a graph output. A value read by two nodes
 *     ends a region: it is computed once, stored, and read by each consumer. Nothing is ever
 *     recomputed, so fusion never adds arithmetic; the price is that a multi-user intermediate
 *     costs one store and its loads (the in-graph Adam update becomes three regions per tensor:
 *     m, v and the parameter).
 *   - at most 16 region operands (greedy: an operand whose absorption would exceed it stays an
 *     operand and heads its own region) and at most 256 steps.
 * A single node is never wrapped. Linear time: one pass to count consumers, one reverse pass that
 * grows each region from its root (every node is visited as a member or an operand a bounded
 * number of times, since regions are trees), one forward pass that rebuilds the graph. */
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "rlx/build.h"

#define MAX_OPS 16
#define MAX_STEPS 256
#define NONE UINT32_MAX
#define MULTI (UINT32_MAX - 1)

static bool real_or_bool(rlx_dtype t) {
  return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16 || t == RLX_BOOL;
}
static bool real(rlx_dtype t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }

/* After dropping s's leading unit axes, do its dims equal the last dims of o? */
static bool tiles(const rlx_shape *s, const rlx_shape *o) {
  uint32_t j = 0;
  while (j < s->rank && s->dims[j] == 1) j++;
  if ((uint32_t)s->rank - j > (uint32_t)o->rank) return false;
  for (uint32_t k = j; k < s->rank; k++)
    if (s->dims[k] != o->dims[(uint32_t)o->rank - ((uint32_t)s->rank - k)]) return false;
  return true;
}

static bool static_nonempty(const rlx_shape *s) {
  for (uint32_t i = 0; i < s->rank; i++)
    if (s->dims[i] <= 0) return false;
  return true;
}

/* May node id be a region member (as root or inside)? */
static bool fusable(const rlx_graph *g, const rlx_node *n) {
  rlx_dtype o = (rlx_dtype)n->shape.dtype;
  switch (n->op) {
  case RLX_OP_Activation:
    if (n->attrs.Activation.kind < 0 || n->attrs.Activation.kind > RLX_ACT_ROUND || !real(o)) return false;
    break;
  case RLX_OP_Binary:
    if (n->attrs.Binary.op < 0 || n->attrs.Binary.op > RLX_BINOP_POW || !real(o)) return false;
    break;
  case RLX_OP_Compare:
    if (n->attrs.Compare.op < 0 || n->attrs.Compare.op >= RLX_CMP_COUNT || o != RLX_BOOL) return false;
    break;
  case RLX_OP_Where:
  case RLX_OP_Cast:
    if (!real_or_bool(o)) return false;
    break;
  default: return false;
  }
  if (!static_nonempty(&n->shape)) return false;
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    const rlx_node *x = rlx_graph_node(g, n->inputs[k]);
    if (!x || !static_nonempty(&x->shape) || !real_or_bool((rlx_dtype)x->shape.dtype)) return false;
    if (n->op == RLX_OP_Compare && x->shape.dtype == RLX_BOOL) return false;
    if (!tiles(&x->shape, &n->shape)) return false;
  }
  return true;
}

typedef struct fz {
  const rlx_graph *g;
  uint32_t n;
  uint32_t *consumer; /* the one consuming node, NONE or MULTI */
  uint8_t *is_out, *ok;
  uint32_t *root;  /* region root of a member (NONE: not in a region of >= 2 nodes) */
  uint32_t *stamp; /* operand dedup per region: root + 1 when id is a live operand of it */
  uint32_t *step;  /* chain step index of a member while its chain is emitted */
  uint32_t *list;  /* scratch: the members of the region being grown */
} fz;

/* Grows the region of `r` (reverse scan: every consumer of a candidate was decided before it). */
static void grow(fz *f, uint32_t r) {
  uint32_t nm = 0, live = 0;
  f->list[nm++] = r;
  f->root[r] = r;
  const rlx_node *rn = rlx_graph_node(f->g, r);
  for (uint32_t k = 0; k < rn->n_inputs; k++) {
    uint32_t x = rn->inputs[k];
    if (f->stamp[x] == r + 1) continue;
    f->stamp[x] = r + 1;
    live++;
  }
  for (uint32_t qi = 0; qi < nm; qi++) {
    uint32_t m = f->list[qi];
    const rlx_node *mn = rlx_graph_node(f->g, m);
    for (uint32_t k = 0; k < mn->n_inputs; k++) {
      uint32_t o = mn->inputs[k];
      if (!f->ok[o] || f->root[o] != NONE || f->consumer[o] != m || f->is_out[o] || nm >= MAX_STEPS) continue;
      const rlx_node *on = rlx_graph_node(f->g, o);
      if (!tiles(&on->shape, &mn->shape)) continue;
      uint32_t added = 0;
      for (uint32_t j = 0; j < on->n_inputs; j++) {
        uint32_t x = on->inputs[j];
        bool dup = false;
        for (uint32_t i = 0; i < j; i++) dup |= on->inputs[i] == x;
        if (!dup && f->stamp[x] != r + 1) added++;
      }
      if (live - 1 + added > MAX_OPS) continue;
      /* absorb o: it stops being an operand, its operands become ones */
      f->stamp[o] = 0;
      live--;
      for (uint32_t j = 0; j < on->n_inputs; j++) {
        uint32_t x = on->inputs[j];
        if (f->stamp[x] == r + 1) continue;
        f->stamp[x] = r + 1;
        live++;
      }
      f->root[o] = r;
      f->list[nm++] = o;
    }
  }
  if (nm < 2) f->root[r] = NONE; /* a single node stays as it is */
}

static rlx_chain_operand ref_of(fz *f, uint32_t r, uint32_t x, const uint32_t *opidx, uint32_t nops,
                                const uint32_t *ops) {
  if (x != r && f->root[x] == r) return (rlx_chain_operand){.is_step = 1, .index = f->step[x]};
  for (uint32_t i = 0; i < nops; i++)
    if (ops[i] == x) return (rlx_chain_operand){.is_step = 0, .index = opidx[i]};
  return (rlx_chain_operand){.is_step = 0, .index = 0}; /* unreachable: every operand is listed */
}

/* Emits the region rooted at r into rb->dst; *made is set when a region node was built. */
static rlx_status emit(fz *f, rlx_rebuild *rb, uint32_t r, bool *made) {
  *made = false;
  /* post-order over the member tree (iterative): steps in dependency order */
  uint32_t order[MAX_STEPS], ns = 0;
  uint32_t stk[MAX_STEPS], kid[MAX_STEPS], sp = 0;
  stk[sp] = r;
  kid[sp++] = 0;
  while (sp) {
    uint32_t m = stk[sp - 1];
    const rlx_node *mn = rlx_graph_node(f->g, m);
    bool pushed = false;
    while (kid[sp - 1] < mn->n_inputs) {
      uint32_t x = mn->inputs[kid[sp - 1]++];
      if (x != r && f->root[x] == r && f->step[x] == NONE) {
        f->step[x] = MULTI; /* on the stack */
        stk[sp] = x;
        kid[sp++] = 0;
        pushed = true;
        break;
      }
    }
    if (pushed) continue;
    f->step[m] = ns;
    order[ns++] = m;
    sp--;
  }
  /* region operands in first-use order */
  uint32_t ops[MAX_OPS], opidx[MAX_OPS], nops = 0;
  rlx_id in[MAX_OPS];
  int64_t scalar_mask = 0;
  for (uint32_t s = 0; s < ns; s++) {
    const rlx_node *mn = rlx_graph_node(f->g, order[s]);
    for (uint32_t k = 0; k < mn->n_inputs; k++) {
      uint32_t x = mn->inputs[k];
      if (x != r && f->root[x] == r) continue;
      bool seen = false;
      for (uint32_t i = 0; i < nops && !seen; i++) seen = ops[i] == x;
      if (seen) continue;
      if (nops == MAX_OPS)
        return rlx_errorf(RLX_ERR_INTERNAL, "fuse_elementwise: region of %%%u exceeds %d operands", r, MAX_OPS);
      const rlx_node *xn = rlx_graph_node(f->g, x);
      size_t cnt = 1;
      for (uint32_t d = 0; d < xn->shape.rank; d++) cnt *= (size_t)xn->shape.dims[d];
      if (cnt == 1) scalar_mask |= (int64_t)1 << nops;
      opidx[nops] = nops;
      ops[nops] = x;
      in[nops++] = rb->map[x];
    }
  }
  rlx_chain_step steps[MAX_STEPS];
  for (uint32_t s = 0; s < ns; s++) {
    const rlx_node *mn = rlx_graph_node(f->g, order[s]);
    rlx_chain_step st = {0};
    rlx_chain_operand v[3] = {{0}, {0}, {0}};
    for (uint32_t k = 0; k < mn->n_inputs && k < 3; k++) v[k] = ref_of(f, r, mn->inputs[k], opidx, nops, ops);
    switch (mn->op) {
    case RLX_OP_Activation:
      st = (rlx_chain_step){.kind = RLX_CHAIN_STEP_ACTIVATION, .sub = mn->attrs.Activation.kind, .a = v[0]};
      break;
    case RLX_OP_Cast: st = (rlx_chain_step){.kind = RLX_CHAIN_STEP_CAST, .sub = mn->shape.dtype, .a = v[0]}; break;
    case RLX_OP_Binary:
      st = (rlx_chain_step){.kind = RLX_CHAIN_STEP_BINARY, .sub = mn->attrs.Binary.op, .a = v[0], .b = v[1]};
      break;
    case RLX_OP_Compare:
      st = (rlx_chain_step){.kind = RLX_CHAIN_STEP_COMPARE, .sub = mn->attrs.Compare.op, .a = v[0], .b = v[1]};
      break;
    default: st = (rlx_chain_step){.kind = RLX_CHAIN_STEP_WHERE, .a = v[0], .b = v[1], .c = v[2]}; break;
    }
    steps[s] = st;
  }
  const rlx_node *rn = rlx_graph_node(f->g, r);
  rlx_attrs_ElementwiseRegion a = {.chain = {.steps = steps, .n = ns},
                                   .num_inputs = nops,
                                   .scalar_input_mask = scalar_mask,
                                   .input_modulus = {.v = NULL, .n = 0},
                                   .prologue = RLX_PROLOGUE_NONE,
                                   .prologue_input = 0};
  rlx_id out;
  rlx_status s = rlx_build_ElementwiseRegion(rb->dst, in, nops, &a, rn->name, &out);
  if (s == RLX_ERR_OOM) return s;
  if (s == RLX_OK && rlx_shape_equal(&rlx_graph_node(rb->dst, out)->shape, &rn->shape)) {
    rb->map[r] = out;
    *made = true;
    return RLX_OK;
  }
  /* The shape rule disagreed (it should not): keep the members unfused, in id order. */
  rlx_clear_error();
  for (uint32_t i = 1; i < ns; i++) {
    uint32_t v = order[i], j = i;
    while (j > 0 && order[j - 1] > v) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = v;
  }
  for (uint32_t i = 0; i < ns; i++) RLX_TRY(rlx_rebuild_copy(rb, order[i]));
  return RLX_OK;
}

bool rlx_fuse_disabled(void) {
  const char *v = getenv("RLX_FUSE_ELEMENTWISE");
  return v && strcmp(v, "0") == 0;
}

rlx_status rlx_fuse_elementwise(const rlx_graph *g, rlx_graph **out, uint32_t *regions) {
  if (!g || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_fuse_elementwise: NULL argument");
  *out = NULL;
  if (regions) *regions = 0;
  uint32_t n = rlx_graph_node_count(g);
  fz f = {.g = g, .n = n};
  size_t cnt = n ? n : 1;
  f.consumer = malloc(cnt * sizeof *f.consumer);
  f.root = malloc(cnt * sizeof *f.root);
  f.stamp = calloc(cnt, sizeof *f.stamp);
  f.step = malloc(cnt * sizeof *f.step);
  f.list = malloc(cnt * sizeof *f.list);
  f.is_out = calloc(cnt, 1);
  f.ok = calloc(cnt, 1);
  rlx_status st = RLX_OK;
  rlx_rebuild rb = {0};
  bool began = false;
  if (!f.consumer || !f.root || !f.stamp || !f.step || !f.list || !f.is_out || !f.ok) {
    st = rlx_errorf(RLX_ERR_OOM, "out of memory fusing elementwise ops of graph @%s", rlx_graph_name(g));
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) {
    f.consumer[i] = NONE;
    f.root[i] = NONE;
    f.step[i] = NONE;
  }
  for (uint32_t i = 0; i < n; i++) {
    const rlx_node *nd = rlx_graph_node(g, i);
    for (uint32_t k = 0; k < nd->n_inputs; k++) {
      uint32_t x = nd->inputs[k];
      if (x >= n) continue;
      f.consumer[x] = f.consumer[x] == NONE || f.consumer[x] == i ? i : MULTI;
    }
    f.ok[i] = fusable(g, nd);
  }
  const rlx_id *outs = rlx_graph_outputs(g);
  for (uint32_t i = 0; i < rlx_graph_output_count(g); i++)
    if (outs[i] < n) f.is_out[outs[i]] = 1;
  uint32_t made_any = 0;
  for (uint32_t i = n; i-- > 0;)
    if (f.ok[i] && f.root[i] == NONE) {
      grow(&f, i);
      if (f.root[i] == i) made_any++;
    }
  if (!made_any) { /* nothing to fuse: an exact copy */
    st = rlx_graph_clone(g, rlx_graph_allocator(g), out);
    goto done;
  }
  st = rlx_rebuild_begin(g, &rb);
  if (st) goto done;
  began = true;
  uint32_t built = 0;
  for (uint32_t i = 0; i < n && !st; i++) {
    if (f.root[i] == NONE)
      st = rlx_rebuild_copy(&rb, i);
    else if (f.root[i] == i) {
      bool made = false;
      st = emit(&f, &rb, i, &made);
      built += made;
    }
  }
  if (!st) st = rlx_rebuild_finish(&rb, out);
  if (!st) {
    began = false;
    if (regions) *regions = built;
  }
done:
  if (began) rlx_rebuild_abort(&rb);
  free(f.consumer);
  free(f.root);
  free(f.stamp);
  free(f.step);
  free(f.list);
  free(f.is_out);
  free(f.ok);
  return st;
}
