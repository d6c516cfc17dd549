/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX backend's execution modes and stated behaviours, on its program API (independent of
 * the backend contract), each checked against the CPU backend:
 *   - lazy, eager and compiled runs of a small MLP give the CPU's values; compiled mode's g++
 *     kernel cache lands under the folder the options name;
 *   - a graph with a host-evaluated node (Cholesky) runs in compiled mode by falling back to lazy,
 *     and says so; the host-evaluated node gives the CPU kernel's values;
 *   - FakeQuantize with scale_mode EMA is a compile error naming the node; Fixed runs natively;
 *   - parameters rebind without recompiling. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

#ifdef RLX_HAVE_MLX
#include "backends/mlx/mlx_internal.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* softmax(relu(x @ w + b)) with x [4, 8] input, w [8, 16] and b [16] params. */
static rlx_graph *mlp(void) {
  rlx_graph *g = NULL;
  rlx_id x, w, b, y;
  CHECK_OK(rlx_graph_create(NULL, "mlp", &g));
  CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){4, 8}), &x));
  CHECK_OK(rlx_param(g, "w", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){8, 16}), &w));
  CHECK_OK(rlx_param(g, "b", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){16}), &b));
  CHECK_OK(rlx_matmul(g, x, w, &y));
  CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, y, b, &y));
  CHECK_OK(rlx_activation(g, RLX_ACT_RELU, y, &y));
  rlx_attrs_Softmax sa = {.axis = -1};
  CHECK_OK(rlx_build_Softmax(g, &y, 1, &sa, NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  return g;
}

/* Runs g on the CPU backend with the given inputs / params (names in node order). */
static void cpu_run(const rlx_graph *g, const rlx_named_tensor *in, uint32_t n_in, const rlx_named_tensor *par,
                    uint32_t n_par, float *out, size_t n_out) {
  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  if (!e) return;
  for (uint32_t i = 0; i < n_par; i++) CHECK_OK(rlx_executable_set_param(e, par[i].name, &par[i].tensor));
  const rlx_tensor *o = NULL;
  uint32_t no = 0;
  CHECK_OK(rlx_executable_run(e, in, n_in, &o, &no));
  if (o && no == 1) memcpy(out, o[0].data, n_out * sizeof(float));
  rlx_executable_free(e);
}

static rlxm_arr *arr(rlxm_scope *s, const rlx_tensor *t) {
  int64_t d[RLX_MAX_RANK];
  for (uint32_t i = 0; i < t->shape.rank; i++) d[i] = t->shape.dims[i];
  return rlxm_from_host(s, t->data, t->shape.dtype, t->shape.rank, d);
}

static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

static bool dir_has_entries(const char *path) {
  DIR *d = opendir(path);
  if (!d) return false;
  struct dirent *e;
  bool any = false;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) any = true;
  closedir(d);
  return any;
}

static void test_modes(const char *cache) {
  rlx_graph *g = mlp();
  unsigned seed = 7;
  float x[32], w[128], b[16], want[64], got[64];
  for (int i = 0; i < 32; i++) x[i] = frand(&seed) * 4;
  for (int i = 0; i < 128; i++) w[i] = frand(&seed);
  for (int i = 0; i < 16; i++) b[i] = frand(&seed);
  rlx_named_tensor in = {"x", {x, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){4, 8})}};
  rlx_named_tensor par[2] = {{"w", {w, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){8, 16})}},
                             {"b", {b, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){16})}}};
  cpu_run(g, &in, 1, par, 2, want, 64);
  const rlx_mlx_mode modes[3] = {RLX_MLX_LAZY, RLX_MLX_EAGER, RLX_MLX_COMPILED};
  for (int m = 0; m < 3; m++) {
    rlx_mlx_options o;
    rlx_mlx_options_init(&o);
    o.mode = modes[m];
    o.compile_cache_dir = cache;
    mlx_prog *p = NULL;
    CHECK_OK(mlx_prog_create(g, &o, 0, &p));
    if (!p) continue;
    mlx_prog_info info;
    mlx_prog_info_get(p, &info);
    CHECK(info.host_nodes == 0);
    CHECK(info.native_nodes == 4);
    CHECK(info.compiled == (modes[m] == RLX_MLX_COMPILED));
    rlxm_scope *s = rlxm_scope_new();
    CHECK_OK(mlx_prog_bind_param(p, 1, arr(s, &par[0].tensor)));
    CHECK_OK(mlx_prog_bind_param(p, 2, arr(s, &par[1].tensor)));
    for (int rep = 0; rep < 2; rep++) { /* the second run reuses the compiled function */
      rlxm_arr *ins[1] = {arr(s, &in.tensor)}, *outs[1] = {NULL};
      memset(got, 0, sizeof got);
      CHECK_OK(mlx_prog_run(p, s, ins, 1, outs, 1));
      CHECK(rlxm_read(outs[0], 0, got, sizeof got) == 0);
      CHECK_MSG(max_diff(got, want, 64) < 1e-5, "mode %d run %d differs from the CPU by %g", m, rep,
                max_diff(got, want, 64));
    }
    /* rebinding a param changes the result without recompiling */
    float b2[16];
    for (int i = 0; i < 16; i++) b2[i] = b[i] + 1.0f;
    rlx_named_tensor par2[2] = {par[0], {"b", {b2, par[1].tensor.shape}}};
    float want2[64];
    cpu_run(g, &in, 1, par2, 2, want2, 64);
    CHECK_OK(mlx_prog_bind_param(p, 2, arr(s, &par2[1].tensor)));
    rlxm_arr *ins[1] = {arr(s, &in.tensor)}, *outs[1] = {NULL};
    CHECK_OK(mlx_prog_run(p, s, ins, 1, outs, 1));
    CHECK(rlxm_read(outs[0], 0, got, sizeof got) == 0);
    CHECK_MSG(max_diff(got, want2, 64) < 1e-5, "mode %d after rebinding differs by %g", m, max_diff(got, want2, 64));
    CHECK(max_diff(want, want2, 64) > 1e-3); /* the rebinding mattered */
    rlxm_scope_free(s);
    mlx_prog_free(p);
  }
  /* compiled mode ran MLX's JIT with its cache in our folder, not /tmp */
  CHECK_MSG(strcmp(rlx_mlx_compile_cache_dir(), cache) == 0, "cache folder is %s", rlx_mlx_compile_cache_dir());
  char mlx_dir[4200];
  snprintf(mlx_dir, sizeof mlx_dir, "%s/mlx", cache);
  CHECK_MSG(dir_has_entries(mlx_dir), "no MLX kernel cache under %s", mlx_dir);
  rlx_graph_free(g);
}

/* Cholesky of an SPD input: host-evaluated; compiled mode falls back to lazy and says so. */
static void test_host_fallback(const char *cache) {
  rlx_graph *g = NULL;
  rlx_id a, l, y;
  CHECK_OK(rlx_graph_create(NULL, "chol", &g));
  CHECK_OK(rlx_input(g, "a", rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 3}), &a));
  CHECK_OK(rlx_build_Cholesky(g, &a, 1, NULL, &l));
  CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, l, l, &y)); /* a native node after it */
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  float m[9] = {4, 2, 0.4f, 2, 5, 1, 0.4f, 1, 3}, want[9], got[9];
  rlx_named_tensor in = {"a", {m, rlx_shape_make(RLX_F32, 2, (rlx_dim[]){3, 3})}};
  cpu_run(g, &in, 1, NULL, 0, want, 9);
  CHECK(fabs(want[0] - 4.0f) < 1e-5); /* L[0][0] = 2, squared */
  rlx_mlx_options o;
  rlx_mlx_options_init(&o);
  o.mode = RLX_MLX_COMPILED;
  o.compile_cache_dir = cache;
  mlx_prog *p = NULL;
  CHECK_OK(mlx_prog_create(g, &o, 0, &p));
  if (p) {
    mlx_prog_info info;
    mlx_prog_info_get(p, &info);
    CHECK(info.host_nodes == 1 && info.native_nodes == 1);
    CHECK(!info.compiled);
    CHECK_MSG(strstr(info.mode_note, "fell back to lazy") && strstr(info.mode_note, "Cholesky"), "note: %s",
              info.mode_note);
    CHECK(mlx_prog_node_is_host(p, 1));
    rlxm_scope *s = rlxm_scope_new();
    rlxm_arr *ins[1] = {arr(s, &in.tensor)}, *outs[1] = {NULL};
    CHECK_OK(mlx_prog_run(p, s, ins, 1, outs, 1));
    CHECK(rlxm_read(outs[0], 0, got, sizeof got) == 0);
    CHECK_MSG(max_diff(got, want, 9) < 1e-6, "host-evaluated Cholesky differs by %g", max_diff(got, want, 9));
    /* a data-dependent failure inside the host kernel comes back as an error, and the next run works */
    float bad[9] = {-1, 0, 0, 0, 1, 0, 0, 0, 1};
    rlx_tensor bt = {bad, in.tensor.shape};
    rlxm_arr *ins2[1] = {arr(s, &bt)};
    rlx_status st = mlx_prog_run(p, s, ins2, 1, outs, 1);
    CHECK(st != RLX_OK);
    CHECK_MSG(strstr(rlx_last_error(), "Cholesky") != NULL, "error: %s", rlx_last_error());
    CHECK_OK(mlx_prog_run(p, s, ins, 1, outs, 1));
    CHECK(rlxm_read(outs[0], 0, got, sizeof got) == 0 && max_diff(got, want, 9) < 1e-6);
    rlxm_scope_free(s);
    mlx_prog_free(p);
  }
  rlx_graph_free(g);
}

static void test_fake_quantize(void) {
  for (int mode = 0; mode < 2; mode++) {
    rlx_graph *g = NULL;
    rlx_id x, st, y;
    CHECK_OK(rlx_graph_create(NULL, "fq", &g));
    CHECK_OK(rlx_input(g, "x", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){6}), &x));
    CHECK_OK(rlx_input(g, "state", rlx_shape_make(RLX_F32, 1, (rlx_dim[]){1}), &st));
    rlx_attrs_FakeQuantize a;
    rlx_attrs_init(RLX_OP_FakeQuantize, &a);
    a.bits = 4;
    a.axis = -1;
    a.scale_mode = mode == 0 ? RLX_SCALE_MODE_EMA : RLX_SCALE_MODE_FIXED;
    CHECK_OK(rlx_build_FakeQuantize(g, (rlx_id[]){x, st}, 2, &a, "fq", &y));
    CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
    mlx_prog *p = NULL;
    rlx_status s = mlx_prog_create(g, NULL, 0, &p);
    if (mode == 0) {
      CHECK(s == RLX_ERR_UNSUPPORTED && !p);
      CHECK_MSG(strstr(rlx_last_error(), "'fq'") && strstr(rlx_last_error(), "scale_mode EMA"), "error: %s",
                rlx_last_error());
      mlx_prog_free(p);
    } else {
      CHECK_OK(s);
      if (p) {
        /* s = 0.5, qmax = 7: clamp(round(x / 0.5), -7, 7) * 0.5 (round half to even) */
        float xv[6] = {0.2f, -0.3f, 0.75f, 9.0f, -9.0f, 0.25f}, sv[1] = {0.5f}, got[6];
        float want[6] = {0.0f, -0.5f, 1.0f, 3.5f, -3.5f, 0.0f};
        rlxm_scope *sc = rlxm_scope_new();
        rlx_tensor tx = {xv, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){6})},
                   ts = {sv, rlx_shape_make(RLX_F32, 1, (rlx_dim[]){1})};
        rlxm_arr *ins[2] = {arr(sc, &tx), arr(sc, &ts)}, *outs[1] = {NULL};
        CHECK_OK(mlx_prog_run(p, sc, ins, 2, outs, 1));
        CHECK(rlxm_read(outs[0], 0, got, sizeof got) == 0);
        CHECK_MSG(max_diff(got, want, 6) < 1e-6, "FakeQuantize Fixed differs by %g", max_diff(got, want, 6));
        rlxm_scope_free(sc);
        mlx_prog_free(p);
      }
    }
    rlx_graph_free(g);
  }
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

int main(void) {
  char cache[] = "/tmp/rlx_mlx_modes_XXXXXX";
  CHECK(mkdtemp(cache) != NULL);
  test_modes(cache);
  test_host_fallback(cache);
  test_fake_quantize();
  nftw(cache, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return rlx_test_finish("test_mlx_modes");
}
#else
int main(void) {
  fprintf(stderr, "test_mlx_modes: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
}
#endif
