/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Compile-time benchmark: generated graphs of about 1k / 10k / 100k nodes, compiled for the CPU
 * cold (compile cache off) and again with the cache (a repeated compile of the same graph), plus
 * what `rlx check` does on the graph's text form (parse + verify).
 *
 *   mlp   stacked MLP blocks (MatMul + bias, LayerNorm, Gelu, residual Add) with a mean loss,
 *         differentiated with rlx_grad: the training graph (forward + backward) is compiled.
 *   chain a plain elementwise chain (Relu / Add / Mul / Sigmoid) on one input.
 *
 * usage: bench_compile [--sizes 1000,10000,100000] [--repeats N] [--json]
 *        bench_compile --plan [FILE.rlx ...]
 * Prints one line per graph (or JSON objects, one a line, for bench/run_compile_bench.sh).
 * --plan compares the planned arena of the compiled graphs (the Fashion-MNIST CNN training step,
 * the generated graphs up to 10k nodes, and any graph files given) with the greedy-by-size
 * planner this project had before (tests/common/plan_greedy_ref.h) and with the lower bound
 * (the most bytes live at one step). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/common/plan_greedy_ref.h"
#include "rlx/rlx.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define TRY(x)                                                                                     \
  do {                                                                                             \
    rlx_status s_ = (x);                                                                           \
    if (s_ != RLX_OK) {                                                                            \
      fprintf(stderr, "bench_compile: %s failed: %s (line %d)\n", #x, rlx_last_error(), __LINE__); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

enum { B = 8, D = 32 };

static rlx_shape shp2(int64_t a, int64_t b) { return rlx_shape_make(RLX_F32, 2, (rlx_dim[]){a, b}); }
static rlx_shape shp1(int64_t a) { return rlx_shape_make(RLX_F32, 1, (rlx_dim[]){a}); }

/* The forward graph of `blocks` MLP blocks with a mean loss; names its params into `names`. */
static rlx_graph *mlp_forward(int blocks, char ***names_out, uint32_t *n_names) {
  rlx_graph *g;
  TRY(rlx_graph_create(NULL, "mlp", &g));
  rlx_id h;
  TRY(rlx_input(g, "x", shp2(B, D), &h));
  char **names = malloc(sizeof *names * (size_t)blocks * 4);
  uint32_t nn = 0;
  for (int i = 0; i < blocks; i++) {
    char nm[64];
    rlx_id w, b, ga, be, y, ln, a, r;
    snprintf(nm, sizeof nm, "w%d", i);
    TRY(rlx_param(g, nm, shp2(D, D), &w));
    names[nn++] = strdup(nm);
    snprintf(nm, sizeof nm, "b%d", i);
    TRY(rlx_param(g, nm, shp1(D), &b));
    names[nn++] = strdup(nm);
    snprintf(nm, sizeof nm, "gamma%d", i);
    TRY(rlx_param(g, nm, shp1(D), &ga));
    names[nn++] = strdup(nm);
    snprintf(nm, sizeof nm, "beta%d", i);
    TRY(rlx_param(g, nm, shp1(D), &be));
    names[nn++] = strdup(nm);
    TRY(rlx_matmul(g, h, w, &y));
    TRY(rlx_binary(g, RLX_BINOP_ADD, y, b, &y));
    rlx_attrs_LayerNorm la = {.axis = -1, .eps = 1e-5f};
    TRY(rlx_build_LayerNorm(g, (rlx_id[]){y, ga, be}, 3, &la, NULL, &ln));
    TRY(rlx_activation(g, RLX_ACT_GELU, ln, &a));
    TRY(rlx_binary(g, RLX_BINOP_ADD, a, h, &r));
    h = r;
  }
  rlx_id loss;
  TRY(rlx_reduce_axes(g, RLX_REDUCE_MEAN, h, 2, (int64_t[]){0, 1}, false, &loss));
  TRY(rlx_graph_set_outputs(g, &loss, 1));
  *names_out = names;
  *n_names = nn;
  return g;
}

static rlx_graph *mlp_train(int blocks) {
  char **names;
  uint32_t nn;
  rlx_graph *f = mlp_forward(blocks, &names, &nn), *g;
  rlx_grad_options o;
  rlx_grad_options_init(&o);
  TRY(rlx_grad_with_loss(f, (const char *const *)names, nn, &o, &g));
  for (uint32_t i = 0; i < nn; i++) free(names[i]);
  free(names);
  rlx_graph_free(f);
  return g;
}

static rlx_graph *chain(int n) {
  rlx_graph *g;
  TRY(rlx_graph_create(NULL, "chain", &g));
  rlx_id x, c, h;
  TRY(rlx_input(g, "x", shp2(B, D), &x));
  TRY(rlx_param(g, "c", shp2(B, D), &c));
  h = x;
  for (int i = 0; i < n; i++) {
    switch (i % 4) {
    case 0: TRY(rlx_activation(g, RLX_ACT_RELU, h, &h)); break;
    case 1: TRY(rlx_binary(g, RLX_BINOP_ADD, h, c, &h)); break;
    case 2: TRY(rlx_binary(g, RLX_BINOP_MUL, h, x, &h)); break;
    default: TRY(rlx_activation(g, RLX_ACT_SIGMOID, h, &h)); break;
    }
  }
  TRY(rlx_graph_set_outputs(g, &h, 1));
  return g;
}

/* Blocks of the MLP whose training graph has about `target` nodes (measured at 4 blocks). */
static int blocks_for(int target) {
  rlx_graph *g = mlp_train(4);
  double per = rlx_graph_node_count(g) / 4.0;
  rlx_graph_free(g);
  int b = (int)(target / per + 0.5);
  return b < 1 ? 1 : b;
}

static double best_of(double *v, int n) {
  double b = v[0];
  for (int i = 1; i < n; i++)
    if (v[i] < b) b = v[i];
  return b;
}

static void measure(const char *kind, rlx_graph *g, int repeats, bool json) {
  rlx_compile_options cold, warm;
  rlx_compile_options_init(&cold);
  cold.compile_cache = false;
  rlx_compile_options_init(&warm);
  double tc[16], tw[16], tk[16];
  size_t arena = 0;
  uint32_t after = 0;
  for (int r = 0; r < repeats; r++) {
    rlx_executable *e;
    double t0 = now_ms();
    TRY(rlx_compile(g, "cpu", &cold, &e));
    tc[r] = now_ms() - t0;
    arena = rlx_executable_report(e)->arena_bytes;
    after = rlx_executable_report(e)->nodes_after;
    rlx_executable_free(e);
  }
  rlx_executable *e0;
  TRY(rlx_compile(g, "cpu", &warm, &e0)); /* fills the cache */
  for (int r = 0; r < repeats; r++) {
    rlx_executable *e;
    double t0 = now_ms();
    TRY(rlx_compile(g, "cpu", &warm, &e));
    tw[r] = now_ms() - t0;
    rlx_executable_free(e);
  }
  rlx_executable_free(e0);
  /* `rlx check`: load (parse) the text form and verify it. */
  char *text;
  size_t len;
  TRY(rlx_text_print(g, NULL, &text, &len));
  char path[] = "/tmp/bench_compile_XXXXXX";
  int fd = mkstemp(path);
  FILE *fp = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!fp || fwrite(text, 1, len, fp) != len || fclose(fp) != 0) {
    fprintf(stderr, "bench_compile: cannot write %s\n", path);
    exit(1);
  }
  free(text);
  for (int r = 0; r < repeats; r++) {
    rlx_graph *h;
    double t0 = now_ms();
    TRY(rlx_load_graph_file(path, NULL, &h));
    tk[r] = now_ms() - t0;
    rlx_graph_free(h);
  }
  remove(path);
  uint32_t n = rlx_graph_node_count(g);
  if (json)
    printf("{\"graph\": \"%s\", \"nodes\": %u, \"nodes_after\": %u, \"cold_ms\": %.3f, \"cached_ms\": %.3f, "
           "\"check_ms\": %.3f, \"arena_bytes\": %zu}\n",
           kind, n, after, best_of(tc, repeats), best_of(tw, repeats), best_of(tk, repeats), arena);
  else
    printf("%-6s %7u nodes (%7u compiled): cold %9.2f ms  cached %8.3f ms  check %8.2f ms  arena %zu B\n", kind, n,
           after, best_of(tc, repeats), best_of(tw, repeats), best_of(tk, repeats), arena);
  fflush(stdout);
}

#include "cnn_model.h"

/* The Fashion-MNIST CNN (bench/cnn_model.h), forward + backward. */
static rlx_graph *cnn_train(int64_t batch) {
  rlx_graph *g = cnn_forward(batch);
  const char *wrt[] = {"w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4"};
  rlx_graph *gr;
  TRY(rlx_grad_with_loss(g, wrt, 8, NULL, &gr));
  rlx_graph_free(g);
  return gr;
}

/* Planned arena of the compiled form of g: this planner, the old greedy one, the lower bound. */
static void plan_compare(const char *what, const rlx_graph *g) {
  rlx_compile_options o;
  rlx_compile_options_init(&o);
  o.compile_cache = false;
  rlx_executable *e;
  if (rlx_compile(g, "cpu", &o, &e) != RLX_OK) {
    printf("%-28s does not compile as it is: %s\n", what, rlx_last_error());
    return;
  }
  const rlx_graph *c = rlx_executable_graph(e);
  rlx_plan *p;
  TRY(rlx_plan_memory(c, NULL, &p));
  size_t greedy = plan_ref_greedy_arena(p), lb = plan_ref_lower_bound(p);
  if (getenv("BENCH_PLAN_DUMP")) /* every slot: node, op, live steps, size, offset */
    for (rlx_id i = 0; i < p->n_nodes; i++)
      if (p->root[i] == i && p->size[i])
        printf("  %%%-5u %-26s [%5u, %5u] %10zu B at %10zu\n", i, rlx_op_name(rlx_graph_node(c, i)->op),
               p->first_use[i], p->last_use[i], p->size[i], p->offset[i]);
  printf("%-28s %7u nodes: arena %11zu B (greedy-by-size before: %11zu B, %+.2f%%; lower bound %11zu B)\n", what,
         rlx_graph_node_count(c), p->arena_size, greedy, greedy ? 100.0 * ((double)p->arena_size / greedy - 1) : 0.0,
         lb);
  fflush(stdout);
  rlx_plan_free(p, NULL);
  rlx_executable_free(e);
}

static int plan_mode(int argc, char **argv) {
  rlx_graph *g = cnn_train(64);
  plan_compare("fmnist cnn train (b64)", g);
  rlx_graph_free(g);
  int sizes[] = {1000, 10000};
  for (int k = 0; k < 2; k++) {
    char label[64];
    g = mlp_train(blocks_for(sizes[k]));
    snprintf(label, sizeof label, "mlp train %d", sizes[k]);
    plan_compare(label, g);
    rlx_graph_free(g);
    g = chain(sizes[k] - 2);
    snprintf(label, sizeof label, "chain %d", sizes[k]);
    plan_compare(label, g);
    rlx_graph_free(g);
  }
  for (int i = 0; i < argc; i++) {
    TRY(rlx_load_graph_file(argv[i], NULL, &g));
    plan_compare(argv[i], g);
    rlx_graph_free(g);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--plan") == 0) return plan_mode(argc - 2, argv + 2);
  int sizes[8] = {1000, 10000, 100000}, n_sizes = 3, repeats = 3;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = atoi(argv[++i]);
    else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      n_sizes = 0;
      for (char *t = strtok(argv[++i], ","); t && n_sizes < 8; t = strtok(NULL, ",")) sizes[n_sizes++] = atoi(t);
    } else {
      fprintf(stderr, "usage: bench_compile [--sizes 1000,10000,100000] [--repeats N] [--json]\n");
      return 2;
    }
  }
  if (repeats < 1) repeats = 1;
  if (repeats > 16) repeats = 16;
  for (int k = 0; k < n_sizes; k++) {
    rlx_graph *g = mlp_train(blocks_for(sizes[k]));
    measure("mlp", g, repeats, json);
    rlx_graph_free(g);
    g = chain(sizes[k] - 2);
    measure("chain", g, repeats, json);
    rlx_graph_free(g);
  }
  return 0;
}
