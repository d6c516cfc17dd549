/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Pattern fusion (src/passes/pattern.c): each rule both ways. A case builds the decomposed form
 * an exporter writes and checks that exactly the expected rule fires (rlx_pattern_fuse with every
 * kind claimed) and that the fused kind is in the compiled graph; near misses (a wrong constant,
 * a wrong axis, another operand, an intermediate used elsewhere, the fused kind not claimed) must
 * not fire. Every case is also run both ways: the original graph interpreted node by node with
 * the CPU reference kernels (the unfused computation) against the compiled graph (fused). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "passes/pattern.h"
#include "rlx/build.h"
#include "rlx/rlx.h"
#include "rlx_test.h"

#define MAXN 4

static uint64_t rng = 0x1234567ull;
static float frand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

typedef struct pcase {
  rlx_graph *g;
  rlx_id in[MAXN];
  float *data[MAXN];
  uint32_t n_in;
} pcase;

static void pc_init(pcase *c) {
  memset(c, 0, sizeof *c);
  CHECK_OK(rlx_graph_create(NULL, "pattern", &c->g));
}

static rlx_id pc_input(pcase *c, uint32_t rank, const rlx_dim *dims) {
  char name[16];
  snprintf(name, sizeof name, "x%u", c->n_in);
  rlx_id id = RLX_NO_ID;
  rlx_shape s = rlx_shape_make(RLX_F32, rank, dims);
  CHECK_OK(rlx_input(c->g, name, s, &id));
  size_t n = 1;
  for (uint32_t i = 0; i < rank; i++) n *= (size_t)dims[i];
  c->data[c->n_in] = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) c->data[c->n_in][i] = frand();
  c->in[c->n_in++] = id;
  return id;
}

static void pc_free(pcase *c) {
  for (uint32_t i = 0; i < c->n_in; i++) free(c->data[i]);
  rlx_graph_free(c->g);
}

static rlx_id cst(pcase *c, double v) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_scalar_f32(c->g, (float)v, &id));
  return id;
}
static rlx_id bin(pcase *c, rlx_binop op, rlx_id a, rlx_id b) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_binary(c->g, op, a, b, &id));
  return id;
}
static rlx_id act(pcase *c, rlx_act k, rlx_id x) {
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_activation(c->g, k, x, &id));
  return id;
}
static rlx_id mean_axis(pcase *c, rlx_id x, int64_t axis) {
  rlx_attrs_Reduce a = {.op = RLX_REDUCE_MEAN, .axes = {.v = &axis, .n = 1}, .keep_dim = true};
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_build_Reduce(c->g, &x, 1, &a, NULL, &id));
  return id;
}
static rlx_id clamp(pcase *c, rlx_id x, float lo, float hi) {
  rlx_attrs_Clamp a = {.min = lo, .max = hi};
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_build_Clamp(c->g, &x, 1, &a, NULL, &id));
  return id;
}

/* ---- the unfused computation: every node on its reference kernel ---- */

static float *interpret(pcase *c, size_t *count) {
  uint32_t n = rlx_graph_node_count(c->g);
  rlx_tensor *v = calloc(n, sizeof *v);
  bool *owned = calloc(n, sizeof *owned);
  rlx_cpu_ctx ctx = {.threads = 1};
  bool ok = true;
  for (uint32_t i = 0; i < n && ok; i++) {
    const rlx_node *nd = rlx_graph_node(c->g, i);
    v[i].shape = nd->shape;
    if (nd->op == RLX_OP_Input) {
      for (uint32_t k = 0; k < c->n_in; k++)
        if (c->in[k] == i) v[i].data = c->data[k];
      continue;
    }
    if (nd->op == RLX_OP_Constant) {
      v[i].data = nd->attrs.Constant.data.p;
      continue;
    }
    size_t elems = 1;
    for (uint32_t d = 0; d < nd->shape.rank; d++) elems *= (size_t)nd->shape.dims[d];
    v[i].data = malloc(elems * rlx_dtype_size((rlx_dtype)nd->shape.dtype) + 1);
    owned[i] = true;
    rlx_tensor ins[4];
    for (uint32_t a = 0; a < nd->n_inputs; a++) ins[a] = v[nd->inputs[a]];
    rlx_status st = rlx_cpu_ref_table[nd->op](nd, ins, nd->n_inputs, &v[i], &ctx);
    CHECK_MSG(st == RLX_OK, "reference kernel of %s failed: %s", rlx_op_name(nd->op), rlx_last_error());
    ok = st == RLX_OK;
  }
  rlx_id o = rlx_graph_outputs(c->g)[0];
  *count = 1;
  for (uint32_t d = 0; d < v[o].shape.rank; d++) *count *= (size_t)v[o].shape.dims[d];
  float *res = malloc(*count * sizeof *res);
  if (ok) memcpy(res, v[o].data, *count * sizeof *res);
  for (uint32_t i = 0; i < n; i++)
    if (owned[i]) free(v[i].data);
  free(v);
  free(owned);
  return ok ? res : (free(res), NULL);
}

static uint32_t fired_of(const rlx_graph *g, const uint8_t *claimed, const char *rule, uint32_t *total) {
  uint32_t fired[64] = {0}, k = 0;
  rlx_graph *out = NULL;
  CHECK_OK(rlx_pattern_fuse(g, claimed, fired, &out));
  rlx_graph_free(out);
  *total = 0;
  for (uint32_t r = 0; r < rlx_pattern_rule_count; r++) {
    *total += fired[r];
    if (rule && strcmp(rlx_pattern_rules[r].name, rule) == 0) k = fired[r];
  }
  return k;
}

static bool graph_has(const rlx_graph *g, rlx_op op, int act_kind) {
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    if (n->op == op && (act_kind < 0 || (int)n->attrs.Activation.kind == act_kind)) return true;
  }
  return false;
}

/* Checks the firing (rule NULL: nothing may fire), then fused (compiled) vs unfused
 * (interpreted) outputs. `fused` / `act_kind`: the kind the compiled graph must hold when it
 * fires. */
static void run(const char *what, pcase *c, rlx_id out, const char *rule, rlx_op fused, int act_kind) {
  CHECK_OK(rlx_graph_set_outputs(c->g, &out, 1));
  CHECK_OK(rlx_verify(c->g));
  uint8_t all[RLX_OP_COUNT];
  memset(all, 1, sizeof all);
  uint32_t total = 0, k = fired_of(c->g, all, rule, &total);
  if (rule)
    CHECK_MSG(k == 1 && total == 1, "%s: rule %s fired %u times, %u rules in all (want 1, 1)", what, rule, k, total);
  else
    CHECK_MSG(total == 0, "%s: %u rules fired on a near miss", what, total);
  if (rule) { /* gated by the claim of the fused kind */
    uint8_t some[RLX_OP_COUNT];
    memset(some, 1, sizeof some);
    some[fused] = 0;
    uint32_t t2 = 0;
    CHECK_MSG(fired_of(c->g, some, rule, &t2) == 0, "%s: rule %s fired although %s is not claimed", what, rule,
              rlx_op_name(fused));
  }

  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(c->g, "cpu", NULL, &e));
  if (!e) return;
  if (rule)
    CHECK_MSG(graph_has(rlx_executable_graph(e), fused, act_kind), "%s: the compiled graph has no %s", what,
              rlx_op_name(fused));
  rlx_named_tensor ins[MAXN];
  char names[MAXN][16];
  for (uint32_t i = 0; i < c->n_in; i++) {
    snprintf(names[i], sizeof names[i], "x%u", i);
    ins[i] = (rlx_named_tensor){.name = names[i],
                                .tensor = {.data = c->data[i], .shape = rlx_graph_node(c->g, c->in[i])->shape}};
  }
  const rlx_tensor *outs = NULL;
  uint32_t n_outs = 0;
  CHECK_OK(rlx_executable_run(e, ins, c->n_in, &outs, &n_outs));
  size_t count = 0;
  float *ref = interpret(c, &count);
  if (ref && outs) {
    size_t bad = 0, first = 0;
    const float *got = outs[0].data;
    for (size_t i = 0; i < count; i++) {
      double d = fabs((double)got[i] - ref[i]);
      bool same =
          isnan(got[i]) || isnan(ref[i]) ? isnan(got[i]) && isnan(ref[i]) : d <= 2e-5 * (1 + fabs((double)ref[i]));
      if (!same && bad++ == 0) first = i;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu outputs differ from the unfused ones; first at %zu: %.9g vs %.9g", what, bad,
              count, first, bad ? got[first] : 0, bad ? ref[first] : 0);
  }
  free(ref);
  rlx_executable_free(e);
}

/* ---- LayerNorm ---- */

typedef enum { LN_OK, LN_POW3, LN_AXIS, LN_SHARED, LN_EPS_INPUT } ln_miss;

static void layer_norm_case(const char *what, bool pow_form, bool rsqrt, int affine, ln_miss miss) {
  pcase c;
  pc_init(&c);
  rlx_dim dims[3] = {3, 5, 16};
  rlx_id x = pc_input(&c, 3, dims);
  rlx_dim gd[1] = {16};
  rlx_id gamma = pc_input(&c, 1, gd), beta = pc_input(&c, 1, gd);
  int64_t axis = miss == LN_AXIS ? 1 : -1;
  rlx_id mu = mean_axis(&c, x, axis), d = bin(&c, RLX_BINOP_SUB, x, mu);
  rlx_id sq = pow_form ? bin(&c, RLX_BINOP_POW, d, cst(&c, miss == LN_POW3 ? 3.0 : 2.0)) : bin(&c, RLX_BINOP_MUL, d, d);
  rlx_dim one[1] = {1};
  rlx_id eps = miss == LN_EPS_INPUT ? pc_input(&c, 1, one) : cst(&c, 1e-5);
  if (miss == LN_EPS_INPUT) c.data[c.n_in - 1][0] = 1e-5f;
  rlx_id var = bin(&c, RLX_BINOP_ADD, mean_axis(&c, sq, axis), eps);
  rlx_id y = rsqrt ? bin(&c, RLX_BINOP_MUL, d, act(&c, RLX_ACT_RSQRT, var))
                   : bin(&c, RLX_BINOP_DIV, d, act(&c, RLX_ACT_SQRT, var));
  if (affine >= 1) y = bin(&c, RLX_BINOP_MUL, gamma, y); /* gamma first: the match commutes */
  if (affine >= 2) y = bin(&c, RLX_BINOP_ADD, y, beta);
  if (miss == LN_SHARED) y = bin(&c, RLX_BINOP_ADD, y, d); /* d also used outside the pattern */
  const char *rule = miss != LN_OK ? NULL
                     : affine == 2 ? "layer_norm_affine"
                     : affine == 1 ? "layer_norm_scale"
                                   : "layer_norm";
  run(what, &c, y, rule, RLX_OP_LayerNorm, -1);
  pc_free(&c);
}

/* ---- GELU ---- */

typedef enum { GE_OK, GE_HALF_WRONG, GE_OTHER_X } ge_miss;

/* order 0: (x * (1 + erf)) * 0.5; 1: (x * 0.5) * (1 + erf); 2: x * ((1 + erf) * 0.5) */
static void gelu_case(const char *what, bool tanh_form, int order, bool mul_arg, ge_miss miss) {
  pcase c;
  pc_init(&c);
  rlx_dim dims[2] = {4, 33};
  rlx_id x = pc_input(&c, 2, dims), other = pc_input(&c, 2, dims);
  rlx_id xin = miss == GE_OTHER_X ? other : x, f;
  if (!tanh_form) {
    rlx_id arg = mul_arg ? bin(&c, RLX_BINOP_MUL, xin, cst(&c, 0.70710678))
                         : bin(&c, RLX_BINOP_DIV, xin, cst(&c, 1.4142135623730951));
    f = act(&c, RLX_ACT_ERF, arg);
  } else {
    rlx_id cube = mul_arg ? bin(&c, RLX_BINOP_MUL, xin, bin(&c, RLX_BINOP_MUL, xin, xin))
                          : bin(&c, RLX_BINOP_POW, xin, cst(&c, 3.0));
    rlx_id inner = bin(&c, RLX_BINOP_ADD, xin, bin(&c, RLX_BINOP_MUL, cst(&c, 0.044715), cube));
    f = act(&c, RLX_ACT_TANH, bin(&c, RLX_BINOP_MUL, inner, cst(&c, 0.7978845608)));
  }
  rlx_id onep = bin(&c, RLX_BINOP_ADD, cst(&c, 1.0), f), half = cst(&c, miss == GE_HALF_WRONG ? 0.6 : 0.5), y;
  if (order == 0)
    y = bin(&c, RLX_BINOP_MUL, bin(&c, RLX_BINOP_MUL, x, onep), half);
  else if (order == 1)
    y = bin(&c, RLX_BINOP_MUL, bin(&c, RLX_BINOP_MUL, half, x), onep);
  else
    y = bin(&c, RLX_BINOP_MUL, x, bin(&c, RLX_BINOP_MUL, onep, half));
  run(what, &c, y,
      miss != GE_OK ? NULL
      : tanh_form   ? "gelu_tanh"
                    : "gelu_erf",
      RLX_OP_Activation, tanh_form ? RLX_ACT_GELU_APPROX : RLX_ACT_GELU);
  pc_free(&c);
}

/* ---- SiLU, HardSwish ---- */

static void silu_case(const char *what, bool other) {
  pcase c;
  pc_init(&c);
  rlx_dim dims[2] = {3, 17};
  rlx_id x = pc_input(&c, 2, dims), z = pc_input(&c, 2, dims);
  rlx_id y = bin(&c, RLX_BINOP_MUL, act(&c, RLX_ACT_SIGMOID, other ? z : x), x);
  run(what, &c, y, other ? NULL : "silu", RLX_OP_Activation, RLX_ACT_SILU);
  pc_free(&c);
}

/* form 0: x * clamp(x * alpha + 0.5, 0, 1) (ONNX HardSigmoid); 1: x * clamp(x + 3, 0, 6) / 6;
 * 2: x * (clamp(x + 3, 0, 6) * (1/6)) */
static void hswish_case(const char *what, int form, double alpha, float hi) {
  pcase c;
  pc_init(&c);
  rlx_dim dims[2] = {2, 40};
  rlx_id x = pc_input(&c, 2, dims);
  for (int i = 0; i < 80; i++) c.data[0][i] *= 3.0f; /* cover both clamp ends */
  rlx_id y;
  if (form == 0) {
    rlx_id hs = clamp(&c, bin(&c, RLX_BINOP_ADD, bin(&c, RLX_BINOP_MUL, x, cst(&c, alpha)), cst(&c, 0.5)), 0, hi);
    y = bin(&c, RLX_BINOP_MUL, x, hs);
  } else {
    rlx_id r6 = clamp(&c, bin(&c, RLX_BINOP_ADD, x, cst(&c, 3.0)), 0, hi);
    y = form == 1 ? bin(&c, RLX_BINOP_DIV, bin(&c, RLX_BINOP_MUL, x, r6), cst(&c, 6.0))
                  : bin(&c, RLX_BINOP_MUL, bin(&c, RLX_BINOP_MUL, r6, cst(&c, 1.0 / 6.0)), x);
  }
  bool ok = fabs(alpha - 1.0 / 6.0) < 1e-7 && hi == (form == 0 ? 1.0f : 6.0f);
  run(what, &c, y, ok ? "hard_swish" : NULL, RLX_OP_Activation, RLX_ACT_HARD_SWISH);
  pc_free(&c);
}

/* ---- attention ---- */

typedef enum { AT_OK, AT_AXIS, AT_SHARED } at_miss;

static void attention_case(const char *what, int scale_form, bool mask, at_miss miss) {
  pcase c;
  pc_init(&c);
  /* q, k, v as [B, S, H, D], transposed like an exporter: q, v to [B, H, S, D], k to [B, H, D, S] */
  rlx_dim qd[4] = {2, 10, 3, 8}, md[4] = {1, 1, 1, 10};
  rlx_id q = pc_input(&c, 4, qd), k = pc_input(&c, 4, qd), v = pc_input(&c, 4, qd);
  rlx_id m = mask ? pc_input(&c, 4, md) : RLX_NO_ID, qt, kt, vt, s, p, y;
  CHECK_OK(rlx_permute(c.g, q, 4, (int64_t[]){0, 2, 1, 3}, &qt));
  CHECK_OK(rlx_permute(c.g, k, 4, (int64_t[]){0, 2, 3, 1}, &kt));
  CHECK_OK(rlx_permute(c.g, v, 4, (int64_t[]){0, 2, 1, 3}, &vt));
  CHECK_OK(rlx_matmul(c.g, qt, kt, &s));
  if (scale_form == 1) s = bin(&c, RLX_BINOP_DIV, s, cst(&c, sqrt(8.0)));
  if (scale_form == 2) s = bin(&c, RLX_BINOP_MUL, cst(&c, 0.25), s);
  if (mask) s = bin(&c, RLX_BINOP_ADD, m, s);
  rlx_attrs_Softmax sa = {.axis = miss == AT_AXIS ? 2 : -1};
  CHECK_OK(rlx_build_Softmax(c.g, &s, 1, &sa, NULL, &p));
  CHECK_OK(rlx_matmul(c.g, p, vt, &y));
  if (miss == AT_SHARED) { /* the probabilities also leave the pattern */
    rlx_id ps;
    rlx_attrs_Reduce ra = {.op = RLX_REDUCE_SUM, .axes = {.v = (int64_t[]){3}, .n = 1}, .keep_dim = true};
    CHECK_OK(rlx_build_Reduce(c.g, &p, 1, &ra, NULL, &ps));
    y = bin(&c, RLX_BINOP_ADD, y, ps);
  }
  run(what, &c, y, miss == AT_OK ? "attention" : NULL, RLX_OP_Attention, -1);
  pc_free(&c);
}

/* ---- the sum of zero Pads of pieces tiling an axis -> Concat ---- */

typedef enum { PS_OK, PS_GAP, PS_OVERLAP, PS_VALUE, PS_TWO_AXES, PS_SHARED } ps_miss;

static rlx_id zero_pad(pcase *c, rlx_id x, int64_t axis, int64_t lo, int64_t hi, float value) {
  int64_t pads[4] = {0, 0, 0, 0};
  pads[2 * axis] = lo;
  pads[2 * axis + 1] = hi;
  rlx_attrs_Pad a = {.pads = {.v = pads, .n = 4}, .mode = RLX_PAD_MODE_CONSTANT, .value = value};
  rlx_id id = RLX_NO_ID;
  CHECK_OK(rlx_build_Pad(c->g, &x, 1, &a, NULL, &id));
  return id;
}

/* q, k, v of widths 5, 7, 4 padded back to 16 on axis 1 and summed (pieces: 3 or 2, in the order
 * `perm` lists their positions on the axis). */
static void pad_sum_case(const char *what, uint32_t pieces, const int *perm, ps_miss miss) {
  pcase c;
  pc_init(&c);
  int64_t w[3] = {5, 7, 4}, at[3] = {0, 5, 12}, D = pieces == 3 ? 16 : 12;
  rlx_id p[3], y;
  for (uint32_t i = 0; i < pieces; i++) {
    int k = perm[i];
    rlx_id x = pc_input(&c, 2, (rlx_dim[]){3, w[k]});
    int64_t lo = at[k];
    if (miss == PS_GAP && k == 1) lo += 1, x = pc_input(&c, 2, (rlx_dim[]){3, w[k] - 1});
    if (miss == PS_OVERLAP && k == 1) lo -= 1;
    p[i] = zero_pad(&c, x, 1, lo, D - lo - rlx_graph_node(c.g, x)->shape.dims[1], miss == PS_VALUE && k == 0 ? 1.0f : 0.0f);
    if (miss == PS_TWO_AXES && k == 0) { /* also padded on axis 0, then cut back: the Pad widens two axes */
      int64_t pads[4] = {1, 0, lo, D - lo - w[k]};
      rlx_id x2 = pc_input(&c, 2, (rlx_dim[]){2, w[k]});
      rlx_attrs_Pad a = {.pads = {.v = pads, .n = 4}, .mode = RLX_PAD_MODE_CONSTANT};
      CHECK_OK(rlx_build_Pad(c.g, &x2, 1, &a, NULL, &p[i]));
    }
  }
  y = bin(&c, RLX_BINOP_ADD, p[0], p[1]);
  if (pieces == 3) y = bin(&c, RLX_BINOP_ADD, y, p[2]);
  if (miss == PS_SHARED) y = bin(&c, RLX_BINOP_MUL, y, p[0]); /* a Pad also read outside the sum */
  const char *rule = pieces == 3 ? "pad_sum3_concat" : "pad_sum2_concat";
  run(what, &c, y, miss == PS_OK ? rule : NULL, RLX_OP_Concat, -1);
  pc_free(&c);
}

int main(void) {
  layer_norm_case("LayerNorm affine, Pow", true, false, 2, LN_OK);
  layer_norm_case("LayerNorm gamma only, d*d", false, false, 1, LN_OK);
  layer_norm_case("LayerNorm bare, Rsqrt", true, true, 0, LN_OK);
  layer_norm_case("LayerNorm near miss: Pow 3", true, false, 2, LN_POW3);
  layer_norm_case("LayerNorm near miss: axis 1", true, false, 2, LN_AXIS);
  layer_norm_case("LayerNorm near miss: x - mean used elsewhere", true, false, 2, LN_SHARED);
  layer_norm_case("LayerNorm near miss: eps an input", true, false, 2, LN_EPS_INPUT);
  for (int order = 0; order < 3; order++) {
    char what[96];
    snprintf(what, sizeof what, "GELU erf, order %d, x / sqrt2", order);
    gelu_case(what, false, order, false, GE_OK);
    snprintf(what, sizeof what, "GELU erf, order %d, x * (1/sqrt2)", order);
    gelu_case(what, false, order, true, GE_OK);
    snprintf(what, sizeof what, "GELU tanh, order %d, Pow", order);
    gelu_case(what, true, order, false, GE_OK);
  }
  gelu_case("GELU tanh, x * (x * x)", true, 0, true, GE_OK);
  gelu_case("GELU near miss: 0.6", false, 0, false, GE_HALF_WRONG);
  gelu_case("GELU near miss: erf of another value", false, 1, false, GE_OTHER_X);
  gelu_case("GELU tanh near miss: tanh of another value", true, 2, false, GE_OTHER_X);
  silu_case("SiLU", false);
  silu_case("SiLU near miss: sigmoid of another value", true);
  hswish_case("HardSwish from HardSigmoid", 0, 1.0 / 6.0, 1.0f);
  hswish_case("HardSwish x * relu6(x + 3) / 6", 1, 1.0 / 6.0, 6.0f);
  hswish_case("HardSwish x * (relu6(x + 3) * 1/6)", 2, 1.0 / 6.0, 6.0f);
  hswish_case("HardSwish near miss: HardSigmoid alpha 0.2", 0, 0.2, 1.0f);
  hswish_case("HardSwish near miss: clamp to 5", 1, 1.0 / 6.0, 5.0f);
  attention_case("attention / sqrt(d) + mask", 1, true, AT_OK);
  attention_case("attention * 0.25", 2, false, AT_OK);
  attention_case("attention unscaled + mask", 0, true, AT_OK);
  attention_case("attention near miss: softmax axis 2", 1, true, AT_AXIS);
  attention_case("attention near miss: probabilities used elsewhere", 1, true, AT_SHARED);
  pad_sum_case("Pad sum q, k, v -> Concat", 3, (const int[]){2, 1, 0}, PS_OK);
  pad_sum_case("Pad sum in axis order -> Concat", 3, (const int[]){0, 1, 2}, PS_OK);
  pad_sum_case("Pad sum of two -> Concat", 2, (const int[]){1, 0}, PS_OK);
  pad_sum_case("Pad sum near miss: a gap", 3, (const int[]){2, 1, 0}, PS_GAP);
  pad_sum_case("Pad sum near miss: overlapping pieces", 3, (const int[]){0, 1, 2}, PS_OVERLAP);
  pad_sum_case("Pad sum near miss: pad value 1", 3, (const int[]){0, 1, 2}, PS_VALUE);
  pad_sum_case("Pad sum near miss: two padded axes", 3, (const int[]){0, 1, 2}, PS_TWO_AXES);
  pad_sum_case("Pad sum near miss: a Pad used elsewhere", 2, (const int[]){0, 1}, PS_SHARED);
  return rlx_test_finish("test_pattern");
}
