/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The executor's Attention operand fusions (backend.c, fuse_attention): an Attention whose
 * additive mask is an Expand of a smaller tensor, or a Constant whose rows repeat over heads and
 * query rows (an Expand folded at compile time, batch 1), reads the mask with broadcast strides
 * instead of the [B, H, Sq, Sk] tensor; q, k, v made by Narrow -> Reshape -> Transpose(0, 2, 1, 3)
 * of one projection [B, S, 3 H D] are read from it in place (the Narrows and Transposes do not
 * run). Checked both ways: the fused run gives the bits of the unfused one (RLX_CPU_NO_FUSION=1)
 * and makes a fused thunk where the pattern is there; a Constant whose rows differ is not fused,
 * an Expand or a Transpose that is also an output still runs, and both still give the same bits.
 * Everything is also checked against the reference kernels (RLX_CPU_REF_ONLY=1) within f32
 * tolerance. Threads 1 and 2. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"
#include "rlx/cpu.h"
#include "rlx/build.h"
#include "rlx/rlx.h"
#include "attr_lists.h"
#include "rlx_test.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

typedef enum mask_src {
  MASK_INPUT_EXPAND,
  MASK_CONST_REPEATED,
  MASK_CONST_VARIED,
  MASK_EXPAND_SHARED,
  QKV_VIEWS,       /* q, k, v = Transpose(Reshape(Narrow(x))) of one x [B, S, 3 H D], mask as MASK_INPUT_EXPAND */
  QKV_VIEWS_SHARED /* the same, k's Transpose also an output: k is read as stored */
} mask_src;

typedef struct geo {
  int64_t B, H, Sq, Sk, D;
  int64_t mdims[4]; /* the Expand's operand (MASK_INPUT_EXPAND / SHARED) */
} geo;

/* q, k, v Inputs; the mask as `src` says; out = Attention (+ the Expand itself when shared). */
static rlx_status att_graph(const geo *g0, mask_src src, rlx_graph **out) {
  rlx_graph *g;
  RLX_TRY(rlx_graph_create(NULL, "attn_bias", &g));
  *out = g;
  rlx_id q, k, v, m, mb, o;
  bool views = src == QKV_VIEWS || src == QKV_VIEWS_SHARED;
  if (views) { /* the BERT layer's split of one projection [B, S, 3 H D] (Sq = Sk) */
    int64_t HD = g0->H * g0->D;
    rlx_id xq, parts[3];
    RLX_TRY(rlx_input(g, "x", SHP(F32, g0->B, g0->Sq, 3 * HD), &xq));
    for (int i = 0; i < 3; i++) {
      rlx_id nw, rs;
      RLX_TRY(rlx_narrow(g, xq, 2, i * HD, HD, &nw));
      RLX_TRY(rlx_reshape(g, nw, 4, (int64_t[]){g0->B, g0->Sq, g0->H, g0->D}, &rs));
      RLX_TRY(rlx_transpose(g, rs, 4, (int64_t[]){0, 2, 1, 3}, &parts[i]));
    }
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    RLX_TRY(rlx_input(g, "q", SHP(F32, g0->B, g0->H, g0->Sq, g0->D), &q));
    RLX_TRY(rlx_input(g, "k", SHP(F32, g0->B, g0->H, g0->Sk, g0->D), &k));
    RLX_TRY(rlx_input(g, "v", SHP(F32, g0->B, g0->H, g0->Sk, g0->D), &v));
  }
  rlx_shape full = SHP(F32, g0->B, g0->H, g0->Sq, g0->Sk);
  if (src == MASK_INPUT_EXPAND || src == MASK_EXPAND_SHARED || views) {
    RLX_TRY(rlx_input(g, "m", rlx_shape_make(RLX_F32, 4, g0->mdims), &m));
    rlx_attrs_Expand ea = {.target_shape = {.v = (int64_t[]){g0->B, g0->H, g0->Sq, g0->Sk}, .n = 4}};
    RLX_TRY(rlx_build_Expand(g, &m, 1, &ea, NULL, &mb));
  } else {
    size_t n = numel(&full), row = (size_t)g0->Sk;
    float *d = malloc(n * sizeof *d);
    if (!d) return RLX_ERR_OOM;
    for (size_t i = 0; i < n; i++) /* repeated: row i % Sk pattern; varied: every element new */
      d[i] = src == MASK_CONST_REPEATED ? ((i % row) % 3 == 0 ? -10000.0f : 0.25f * (float)(i % row)) : urand();
    rlx_status st = rlx_constant(g, full, d, n * sizeof *d, &mb);
    free(d);
    RLX_TRY(st);
  }
  rlx_attrs_Attention aa = {.num_heads = g0->H, .head_dim = g0->D, .mask_kind = RLX_MASK_BIAS};
  RLX_TRY(rlx_build_Attention(g, (rlx_id[]){q, k, v, mb}, 4, &aa, NULL, &o));
  if (src == MASK_EXPAND_SHARED || src == QKV_VIEWS_SHARED) { /* also an output: must be computed */
    rlx_id outs[2] = {o, src == QKV_VIEWS_SHARED ? k : mb};
    return rlx_graph_set_outputs(g, outs, 2);
  }
  return rlx_graph_set_outputs(g, &o, 1);
}

/* Compiles and runs g (inputs filled from a fixed seed); returns the first output's copy. */
static float *run(rlx_graph *g, int threads, size_t *count) {
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = threads;
  co.backend_options = &cpu;
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(g, "cpu", &co, &e);
  CHECK_MSG(st == RLX_OK, "compile: %s", rlx_last_error());
  if (st) return NULL;
  uint64_t saved = rng;
  rng = 1234;
  rlx_named_tensor in[4];
  uint32_t n_in = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(g); i++) { /* the Inputs: q, k, v or x, then m */
    const rlx_node *nd = rlx_graph_node(g, i);
    if (nd->op != RLX_OP_Input || n_in == 4) continue;
    size_t n = numel(&nd->shape);
    float *d = malloc(n * sizeof *d);
    const char *name = nd->attrs.Input.name;
    bool mask = strcmp(name, "m") == 0;
    for (size_t k = 0; d && k < n; k++) d[k] = mask ? (k % 4 == 3 ? -10000.0f : urand()) : 2.0f * urand();
    in[n_in] = (rlx_named_tensor){name, {d, nd->shape}};
    n_in++;
  }
  rng = saved;
  const rlx_tensor *outs;
  uint32_t n_out = 0;
  float *res = NULL;
  st = rlx_executable_run(e, in, n_in, &outs, &n_out);
  CHECK_MSG(st == RLX_OK, "run: %s", rlx_last_error());
  if (st == RLX_OK && n_out >= 1) {
    *count = numel(&outs[0].shape);
    res = malloc(*count * sizeof *res);
    if (res) memcpy(res, outs[0].data, *count * sizeof *res);
  }
  for (uint32_t i = 0; i < n_in; i++) free(in[i].tensor.data);
  rlx_executable_free(e);
  return res;
}

static void check_case(const char *what, const geo *g0, mask_src src, bool expect_fusion) {
  rlx_graph *g = NULL;
  CHECK_OK(att_graph(g0, src, &g));
  if (!g) return;
  size_t n_ref = 0, n_plain = 0, n_fused = 0;
  setenv("RLX_CPU_REF_ONLY", "1", 1);
  float *ref = run(g, 1, &n_ref);
  unsetenv("RLX_CPU_REF_ONLY");
  setenv("RLX_CPU_NO_FUSION", "1", 1);
  float *plain = run(g, 2, &n_plain);
  unsetenv("RLX_CPU_NO_FUSION");
  for (int t = 1; t <= 2; t++) {
    uint64_t before = rlx_cpu_fusion_count();
    float *fused = run(g, t, &n_fused);
    uint64_t made = rlx_cpu_fusion_count() - before;
    CHECK_MSG(expect_fusion ? made >= 1 : made == 0, "%s (threads %d): %llu fusions, expected %s", what, t,
              (unsigned long long)made, expect_fusion ? "one" : "none");
    CHECK(ref && plain && fused && n_ref == n_plain && n_plain == n_fused && n_ref > 0);
    if (ref && plain && fused && n_ref == n_plain && n_plain == n_fused) {
      size_t differ = 0, bad = 0;
      for (size_t i = 0; i < n_ref; i++) {
        differ += memcmp(&plain[i], &fused[i], sizeof(float)) != 0;
        bad += !(fabsf(fused[i] - ref[i]) <= 1e-5f + 1e-4f * fabsf(ref[i]));
      }
      CHECK_MSG(differ == 0, "%s (threads %d): the fused run differs from the unfused one in %zu of %zu elements", what,
                t, differ, n_ref);
      CHECK_MSG(bad == 0, "%s (threads %d): %zu of %zu elements differ from the reference kernels", what, t, bad,
                n_ref);
    }
    free(fused);
  }
  free(ref);
  free(plain);
  rlx_graph_free(g);
}

int main(void) {
  geo a = {.B = 2, .H = 3, .Sq = 5, .Sk = 7, .D = 4, .mdims = {2, 1, 1, 7}}; /* the encoder's padding mask */
  geo b = {.B = 2, .H = 3, .Sq = 5, .Sk = 7, .D = 4, .mdims = {1, 1, 5, 7}}; /* rows differ, batch and heads shared */
  geo c = {.B = 3, .H = 2, .Sq = 70, .Sk = 70, .D = 8, .mdims = {3, 2, 1, 70}}; /* more than one row block */
  geo d = {.B = 1, .H = 4, .Sq = 6, .Sk = 9, .D = 4};
  check_case("Expand [2,1,1,7]", &a, MASK_INPUT_EXPAND, true);
  check_case("Expand [1,1,5,7]", &b, MASK_INPUT_EXPAND, true);
  check_case("Expand [3,2,1,70]", &c, MASK_INPUT_EXPAND, true);
  check_case("Expand also an output", &a, MASK_EXPAND_SHARED, true);
  check_case("Constant, rows repeated", &d, MASK_CONST_REPEATED, true);
  check_case("Constant, rows differ", &d, MASK_CONST_VARIED, false);
  geo e = {.B = 2, .H = 3, .Sq = 9, .Sk = 9, .D = 4, .mdims = {2, 1, 1, 9}};
  geo f = {.B = 1, .H = 12, .Sq = 128, .Sk = 128, .D = 32, .mdims = {1, 1, 1, 128}}; /* the encoder's layer */
  check_case("q, k, v views of one projection", &e, QKV_VIEWS, true);
  check_case("q, k, v views, the encoder's shapes", &f, QKV_VIEWS, true);
  check_case("q, v views, k's Transpose an output", &e, QKV_VIEWS_SHARED, true);
  return rlx_test_finish("test_attention_bias");
}
