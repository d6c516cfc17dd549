/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The compile cache and the structural graph hash:
 *  - a repeated compile of the same graph (rebuilt from scratch, not the same object) is a hit,
 *    shares the compiled graph, and runs to the same bytes as an uncached compile;
 *  - a one-attribute change, a changed constant byte, a renamed node and changed options miss;
 *  - executables from one entry keep their own params and buffers, and outlive the entry;
 *  - RLX_COMPILE_CACHE=0 and the option turn it off; graphs with a caller's allocator are not
 *    cached; RLX_COMPILE_CACHE_ENTRIES bounds the entries, RLX_COMPILE_CACHE_MB their bytes;
 *  - threads compiling and running the same graph at once get the same results;
 *  - the graph's leaf index (rlx_graph_find_leaf) agrees with a scan on a large graph, keeps the
 *    first of a name, tells Inputs from Params, and follows a clone. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/cpu.h"
#include "rlx/rlx.h"
#include "rlx_test.h"

enum { N = 4, D = 8 };

typedef struct variant {
  rlx_act act; /* of the hidden layer */
  float eps;   /* LayerNorm */
  float cval;  /* the constant added at the end */
  const char *h_name;
} variant;

static const variant base = {RLX_ACT_GELU, 1e-5f, 0.5f, "h"};

static rlx_shape s2(int64_t a, int64_t b) { return rlx_shape_make(RLX_F32, 2, (rlx_dim[]){a, b}); }
static rlx_shape s1(int64_t a) { return rlx_shape_make(RLX_F32, 1, (rlx_dim[]){a}); }

static rlx_graph *build(const variant *v, const rlx_allocator *al) {
  rlx_graph *g = NULL;
  CHECK_OK(rlx_graph_create(al, "cc", &g));
  rlx_id x, w, ga, be, m, ln, a, c, y;
  CHECK_OK(rlx_input(g, "x", s2(N, D), &x));
  CHECK_OK(rlx_param(g, "w", s2(D, D), &w));
  CHECK_OK(rlx_param(g, "gamma", s1(D), &ga));
  CHECK_OK(rlx_param(g, "beta", s1(D), &be));
  CHECK_OK(rlx_matmul(g, x, w, &m));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = v->eps};
  CHECK_OK(rlx_build_LayerNorm(g, (rlx_id[]){m, ga, be}, 3, &la, NULL, &ln));
  rlx_attrs_Activation aa = {.kind = v->act};
  CHECK_OK(rlx_build_Activation(g, &ln, 1, &aa, v->h_name, &a));
  float cv[D];
  for (int i = 0; i < D; i++) cv[i] = v->cval + 0.125f * (float)i;
  CHECK_OK(rlx_constant(g, s1(D), cv, sizeof cv, &c));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, a, c, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  return g;
}

static float xin[N * D], win[D * D], gin[D], bin[D];

static void fill(void) {
  uint32_t s = 12345;
  float *all[] = {xin, win, gin, bin};
  size_t len[] = {N * D, D * D, D, D};
  for (int k = 0; k < 4; k++)
    for (size_t i = 0; i < len[k]; i++) {
      s = s * 1664525u + 1013904223u;
      all[k][i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

/* Sets the params (w scaled by `scale`), runs, copies the output into out[N*D]. */
static void run(rlx_executable *e, float scale, float *out) {
  float w2[D * D];
  for (int i = 0; i < D * D; i++) w2[i] = win[i] * scale;
  rlx_tensor tw = {w2, s2(D, D)}, tg = {gin, s1(D)}, tb = {bin, s1(D)};
  CHECK_OK(rlx_executable_set_param(e, "w", &tw));
  CHECK_OK(rlx_executable_set_param(e, "gamma", &tg));
  CHECK_OK(rlx_executable_set_param(e, "beta", &tb));
  rlx_named_tensor in = {"x", {xin, s2(N, D)}};
  const rlx_tensor *outs;
  uint32_t n_out = 0;
  CHECK_OK(rlx_executable_run(e, &in, 1, &outs, &n_out));
  if (n_out == 1) memcpy(out, outs[0].data, sizeof(float) * N * D);
}

static rlx_compile_cache_stats_t stats(void) {
  rlx_compile_cache_stats_t s;
  rlx_compile_cache_stats(&s);
  return s;
}

static rlx_executable *compile(const rlx_graph *g, const rlx_compile_options *o) {
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", o, &e));
  return e;
}

static void test_hash(void) {
  rlx_graph *a = build(&base, NULL), *b = build(&base, NULL), *c;
  uint64_t ha[2], hb[2], hc[2];
  rlx_graph_hash(a, ha);
  rlx_graph_hash(b, hb);
  CHECK(ha[0] == hb[0] && ha[1] == hb[1]);
  CHECK_OK(rlx_graph_clone(a, NULL, &c));
  rlx_graph_hash(c, hc);
  CHECK(ha[0] == hc[0] && ha[1] == hc[1]);
  rlx_graph_free(c);
  variant vs[4] = {base, base, base, base};
  vs[0].act = RLX_ACT_SILU;
  vs[1].eps = 2e-5f;
  vs[2].cval = 0.25f;
  vs[3].h_name = "hidden";
  for (int k = 0; k < 4; k++) {
    c = build(&vs[k], NULL);
    rlx_graph_hash(c, hc);
    CHECK_MSG(ha[0] != hc[0] || ha[1] != hc[1], "variant %d hashes like the base graph", k);
    CHECK(!rlx_graph_equal(a, c));
    rlx_graph_free(c);
  }
  rlx_graph_free(a);
  rlx_graph_free(b);
}

static void test_hit_and_results(void) {
  rlx_compile_cache_clear();
  rlx_compile_options on, off;
  rlx_compile_options_init(&on);
  rlx_compile_options_init(&off);
  off.compile_cache = false;
  CHECK(on.compile_cache);

  rlx_graph *g1 = build(&base, NULL), *g2 = build(&base, NULL);
  rlx_compile_cache_stats_t s0 = stats();
  rlx_executable *ref = compile(g1, &off);
  rlx_compile_cache_stats_t s1 = stats();
  CHECK(s1.hits == s0.hits && s1.misses == s0.misses); /* the option off: not even looked up */
  rlx_executable *e1 = compile(g1, &on);
  rlx_compile_cache_stats_t s2 = stats();
  CHECK(s2.misses == s1.misses + 1 && s2.hits == s1.hits && s2.entries == 1);
  rlx_executable *e2 = compile(g2, &on); /* an identical graph, built again */
  rlx_compile_cache_stats_t s3 = stats();
  CHECK_MSG(s3.hits == s2.hits + 1 && s3.misses == s2.misses, "hits %llu -> %llu", (unsigned long long)s2.hits,
            (unsigned long long)s3.hits);
  if (!ref || !e1 || !e2) return;
  CHECK(rlx_executable_graph(e1) == rlx_executable_graph(e2)); /* shared */
  CHECK(rlx_executable_graph(ref) != rlx_executable_graph(e1));
  CHECK(rlx_graph_equal(rlx_executable_graph(ref), rlx_executable_graph(e2)));
  CHECK(rlx_executable_report(e2)->arena_bytes == rlx_executable_report(ref)->arena_bytes);
  CHECK(rlx_executable_report(e2)->nodes_after == rlx_executable_report(ref)->nodes_after);

  float r[N * D], o1[N * D], o2[N * D], o2b[N * D];
  run(ref, 1.0f, r);
  run(e1, 1.0f, o1);
  run(e2, 2.0f, o2b); /* own params: a different w gives a different result... */
  CHECK(memcmp(r, o1, sizeof r) == 0);
  CHECK(memcmp(o1, o2b, sizeof r) != 0);
  run(e1, 1.0f, o1); /* ...and leaves e1's alone */
  CHECK(memcmp(r, o1, sizeof r) == 0);
  run(e2, 1.0f, o2);
  CHECK(memcmp(r, o2, sizeof r) == 0);

  /* the entry outlives neither executable's need: clear, free one, the other still runs */
  rlx_compile_cache_clear();
  CHECK(stats().entries == 0);
  rlx_executable_free(e1);
  run(e2, 1.0f, o2);
  CHECK(memcmp(r, o2, sizeof r) == 0);
  rlx_executable_free(e2);
  rlx_executable_free(ref);
  rlx_graph_free(g1);
  rlx_graph_free(g2);
}

static void test_misses(void) {
  rlx_compile_cache_clear();
  rlx_compile_options on;
  rlx_compile_options_init(&on);
  rlx_graph *g = build(&base, NULL);
  rlx_executable *e = compile(g, &on), *f;
  rlx_executable_free(e);
  variant vs[4] = {base, base, base, base};
  vs[0].act = RLX_ACT_SILU;
  vs[1].eps = 2e-5f;
  vs[2].cval = 0.25f;
  vs[3].h_name = "hidden";
  const char *what[4] = {"activation kind", "LayerNorm eps", "a constant byte", "a node name"};
  for (int k = 0; k < 4; k++) {
    rlx_graph *h = build(&vs[k], NULL);
    rlx_compile_cache_stats_t a = stats();
    e = compile(h, &on);
    rlx_compile_cache_stats_t b = stats();
    CHECK_MSG(b.hits == a.hits && b.misses == a.misses + 1, "a change of %s hit the cache", what[k]);
    /* ...and the result is that of the changed graph */
    rlx_compile_options off = on;
    off.compile_cache = false;
    f = compile(h, &off);
    float x[N * D], y[N * D];
    run(e, 1.0f, x);
    run(f, 1.0f, y);
    CHECK(memcmp(x, y, sizeof x) == 0);
    rlx_executable_free(e);
    rlx_executable_free(f);
    rlx_graph_free(h);
  }
  /* options that shape the result are in the key */
  rlx_compile_options o = on;
  o.cse = false;
  rlx_compile_cache_stats_t a = stats();
  e = compile(g, &o);
  CHECK(stats().misses == a.misses + 1 && stats().hits == a.hits);
  rlx_executable_free(e);
  rlx_cpu_options co;
  rlx_cpu_options_init(&co);
  co.threads = 1;
  o = on;
  o.backend_options = &co;
  a = stats();
  e = compile(g, &o);
  CHECK(stats().misses == a.misses + 1);
  rlx_executable_free(e);
  a = stats();
  e = compile(g, &o); /* the same backend options again: a hit */
  CHECK(stats().hits == a.hits + 1);
  rlx_executable_free(e);
  /* the same options as the first compile: still a hit */
  a = stats();
  e = compile(g, &on);
  CHECK(stats().hits == a.hits + 1);
  rlx_executable_free(e);
  rlx_graph_free(g);
}

static void test_off_and_bounds(void) {
  rlx_compile_cache_clear();
  rlx_compile_options on;
  rlx_compile_options_init(&on);
  rlx_graph *g = build(&base, NULL);
  setenv("RLX_COMPILE_CACHE", "0", 1);
  rlx_compile_cache_stats_t a = stats();
  rlx_executable_free(compile(g, &on));
  rlx_executable_free(compile(g, &on));
  CHECK(stats().hits == a.hits && stats().misses == a.misses && stats().entries == 0);
  unsetenv("RLX_COMPILE_CACHE");

  /* a caller's allocator: not cached (an entry must not outlive it) */
  rlx_fail_alloc fa;
  rlx_fail_alloc_init(&fa, 0);
  rlx_graph *h = build(&base, &fa.al);
  a = stats();
  rlx_executable_free(compile(h, &on));
  rlx_executable_free(compile(h, &on));
  CHECK(stats().hits == a.hits && stats().entries == 0);
  rlx_graph_free(h);
  CHECK(fa.live == 0);

  setenv("RLX_COMPILE_CACHE_ENTRIES", "2", 1);
  const rlx_act acts[4] = {RLX_ACT_RELU, RLX_ACT_SILU, RLX_ACT_TANH, RLX_ACT_SIGMOID};
  for (int k = 0; k < 4; k++) {
    variant v = base;
    v.act = acts[k];
    rlx_graph *x = build(&v, NULL);
    rlx_executable_free(compile(x, &on));
    rlx_graph_free(x);
    CHECK(stats().entries <= 2);
  }
  CHECK(stats().entries == 2);
  unsetenv("RLX_COMPILE_CACHE_ENTRIES");

  /* the byte bound counts constant data: a graph holding 2 MB of weights is not kept under 1 MB */
  rlx_compile_cache_clear();
  setenv("RLX_COMPILE_CACHE_MB", "1", 1);
  rlx_graph *big;
  CHECK_OK(rlx_graph_create(NULL, "weights", &big));
  enum { W = 1 << 19 }; /* floats: 2 MiB */
  float *wv = malloc((size_t)W * sizeof *wv);
  for (int i = 0; i < W; i++) wv[i] = 1.0f + (float)(i % 7); /* not zeros: x + 0 would simplify away */
  rlx_id wc, xi, y;
  CHECK_OK(rlx_constant(big, s1(W), wv, (size_t)W * sizeof *wv, &wc));
  CHECK_OK(rlx_input(big, "x", s1(W), &xi));
  CHECK_OK(rlx_binary(big, RLX_BINOP_ADD, xi, wc, &y));
  CHECK_OK(rlx_graph_set_outputs(big, &y, 1));
  free(wv);
  a = stats();
  rlx_executable_free(compile(big, &on));
  rlx_executable_free(compile(big, &on));
  CHECK_MSG(stats().hits == a.hits && stats().misses == a.misses + 2 && stats().entries == 0,
            "hits %llu->%llu misses %llu->%llu entries %u", (unsigned long long)a.hits,
            (unsigned long long)stats().hits, (unsigned long long)a.misses, (unsigned long long)stats().misses,
            stats().entries);
  unsetenv("RLX_COMPILE_CACHE_MB");
  a = stats();
  rlx_executable_free(compile(big, &on)); /* under the default bound it is kept */
  rlx_executable_free(compile(big, &on));
  CHECK(stats().hits == a.hits + 1 && stats().entries == 1);
  rlx_graph_free(big);
  rlx_compile_cache_clear();
  rlx_graph_free(g);
}

typedef struct worker {
  const rlx_graph *g;
  float out[N * D];
  int ok;
} worker;

static void *work(void *p) {
  worker *w = p;
  rlx_compile_options on;
  rlx_compile_options_init(&on);
  for (int it = 0; it < 20; it++) {
    rlx_executable *e = NULL;
    if (rlx_compile(w->g, "cpu", &on, &e) != RLX_OK) return NULL;
    run(e, 1.0f, w->out);
    rlx_executable_free(e);
  }
  w->ok = 1;
  return NULL;
}

static void test_threads(void) {
  rlx_compile_cache_clear();
  rlx_graph *g = build(&base, NULL);
  rlx_compile_options off;
  rlx_compile_options_init(&off);
  off.compile_cache = false;
  rlx_executable *ref = compile(g, &off);
  float r[N * D];
  run(ref, 1.0f, r);
  enum { T = 4 };
  worker w[T];
  pthread_t th[T];
  rlx_compile_cache_stats_t a = stats();
  for (int k = 0; k < T; k++) {
    memset(&w[k], 0, sizeof w[k]);
    w[k].g = g;
    CHECK(pthread_create(&th[k], NULL, work, &w[k]) == 0);
  }
  for (int k = 0; k < T; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < T; k++) {
    CHECK_MSG(w[k].ok, "thread %d failed", k);
    CHECK(memcmp(w[k].out, r, sizeof r) == 0);
  }
  rlx_compile_cache_stats_t b = stats();
  CHECK(b.hits + b.misses == a.hits + a.misses + T * 20);
  CHECK(b.hits >= a.hits + T * 20 - T); /* at most one miss per thread (a race to insert) */
  rlx_executable_free(ref);
  rlx_graph_free(g);
  rlx_compile_cache_clear();
}

static rlx_id scan_leaf(const rlx_graph *g, rlx_op kind, const char *name) {
  for (rlx_id i = 0; i < rlx_graph_node_count(g); i++) {
    const rlx_node *n = rlx_graph_node(g, i);
    const char *nm = n->op == RLX_OP_Input ? n->attrs.Input.name : n->op == RLX_OP_Param ? n->attrs.Param.name : NULL;
    if (n->op == kind && nm && strcmp(nm, name) == 0) return i;
  }
  return RLX_NO_ID;
}

static void test_leaf_index(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "leaves", &g));
  enum { L = 3000 };
  char nm[32];
  rlx_id prev = RLX_NO_ID;
  for (int i = 0; i < L; i++) {
    rlx_id id;
    snprintf(nm, sizeof nm, "p%d", i);
    CHECK_OK((i % 3 ? rlx_param : rlx_input)(g, nm, s1(2), &id));
    if (prev != RLX_NO_ID) CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, prev, id, &id));
    prev = id;
  }
  /* the same name as an Input and as a Param: two different leaves */
  rlx_id in_q, par_q;
  CHECK_OK(rlx_input(g, "q", s1(2), &in_q));
  CHECK_OK(rlx_param(g, "q", s1(2), &par_q));
  CHECK(rlx_graph_find_leaf(g, RLX_OP_Input, "q") == in_q && rlx_graph_find_leaf(g, RLX_OP_Param, "q") == par_q);
  /* a duplicate added unchecked (as importers may): the first one is found, and verify names it */
  rlx_attrs_Param pa = {.name = "p1"};
  rlx_id dup;
  rlx_shape two = s1(2);
  CHECK_OK(rlx_graph_add_unchecked(g, RLX_OP_Param, NULL, 0, &pa, &two, NULL, &dup));
  CHECK(rlx_graph_find_leaf(g, RLX_OP_Param, "p1") == scan_leaf(g, RLX_OP_Param, "p1"));
  CHECK(rlx_graph_find_leaf(g, RLX_OP_Param, "p1") != dup);
  rlx_graph *c;
  CHECK_OK(rlx_graph_clone(g, NULL, &c));
  int agree = 0;
  for (int i = 0; i < L + 10; i++) {
    snprintf(nm, sizeof nm, "p%d", i); /* the last ten do not exist */
    for (int k = 0; k < 2; k++) {
      rlx_op kind = k ? RLX_OP_Param : RLX_OP_Input;
      rlx_id want = scan_leaf(g, kind, nm);
      agree += rlx_graph_find_leaf(g, kind, nm) == want && rlx_graph_find_leaf(c, kind, nm) == want;
    }
  }
  CHECK_MSG(agree == 2 * (L + 10), "%d of %d lookups agree with a scan", agree, 2 * (L + 10));
  CHECK(rlx_graph_find_leaf(g, RLX_OP_Constant, "p1") == RLX_NO_ID); /* only Input and Param are bound by name */
  rlx_graph_free(c);
  rlx_graph_free(g);
}

int main(void) {
  unsetenv("RLX_COMPILE_CACHE");
  test_leaf_index();
  fill();
  test_hash();
  test_hit_and_results();
  test_misses();
  test_off_and_bounds();
  test_threads();
  return rlx_test_finish("compile_cache");
}
