/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The harness of test_fast_vs_ref (declarations in harness.h). */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/elem.h"
#include "rlx_test.h"

/* ---- deterministic data ---- */

uint64_t rng_state = 0x9E3779B97F4A7C15ull;
double urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

void fill(rlx_tensor *t, fill_kind k, int classes) {
  size_t n = numel(&t->shape);
  rlx_dtype dt = (rlx_dtype)t->shape.dtype;
  for (size_t i = 0; i < n; i++) {
    double v;
    switch (k) {
    case FILL_TIES: v = (double)((int)(urand() * 5)) - 2.0; break;
    case FILL_SPECIAL: {
      double u = urand();
      v = u < 0.05 ? NAN : u < 0.08 ? INFINITY : u < 0.11 ? -INFINITY : u < 0.15 ? -0.0 : 2 * urand() - 1;
      break;
    }
    case FILL_LABELS: v = (double)((int)(urand() * classes)); break;
    case FILL_BOOL: v = urand() < 0.5 ? 0.0 : 1.0; break;
    case FILL_WIDE: v = 80 * urand() - 40; break;
    default: v = 2 * urand() - 1; break;
    }
    rlx_elem_set(t->data, dt, i, v);
  }
}

/* ---- one case ---- */

rlx_cpu_pool *pools[4];

void case_free(tcase *c) {
  for (uint32_t i = 0; i < c->n_in; i++) free(c->in[i].data);
  rlx_graph_free(c->g);
  memset(c, 0, sizeof *c);
}

/* Builds node `op` over fresh inputs; `declared` may be NULL (shape rule). */
bool build(tcase *c, rlx_op op, const void *attrs, const rlx_shape *declared, uint32_t n, const targ *args,
           int classes) {
  memset(c, 0, sizeof *c);
  if (rlx_graph_create(NULL, "fast_test", &c->g) != RLX_OK) return false;
  rlx_id ids[MAX_IN], id;
  for (uint32_t i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%u", i);
    if (rlx_input(c->g, name, args[i].shape, &ids[i]) != RLX_OK) return false;
    size_t bytes = numel(&args[i].shape) * rlx_dtype_size((rlx_dtype)args[i].shape.dtype);
    c->in[i].shape = args[i].shape;
    c->in[i].data = calloc(bytes ? bytes : 1, 1);
    c->n_in = i + 1;
    fill(&c->in[i], args[i].fill, classes);
  }
  rlx_status st = rlx_graph_add(c->g, op, ids, n, attrs, declared, "node", &id);
  if (st != RLX_OK) {
    fprintf(stderr, "building %s failed: %s\n", rlx_op_name(op), rlx_last_error());
    return false;
  }
  c->node = rlx_graph_node(c->g, id);
  return true;
}

bool close_enough(double f, double r, double rtol, double atol) {
  if (isnan(r) || isnan(f)) return isnan(r) && isnan(f);
  if (isinf(r) || isinf(f)) return f == r;
  return fabs(f - r) <= atol + rtol * fabs(r);
}

/* Runs ref and fast (threads 1, 2, 3) and compares. */
void run_case(const char *what, tcase *c, double rtol, double atol) {
  const rlx_node *n = c->node;
  const rlx_cpu_fast_kernel *fk = &rlx_cpu_fast_table[n->op];
  bool applies = fk->applies && fk->applies(n, c->in, c->n_in);
  CHECK_MSG(applies, "%s: the fast %s kernel does not apply", what, rlx_op_name(n->op));
  if (!applies) return;
  rlx_dtype dt = (rlx_dtype)n->shape.dtype;
  size_t count = numel(&n->shape), esz = rlx_dtype_size(dt), bytes = count * esz;
  rlx_tensor ref = {malloc(bytes ? bytes : 1), n->shape};
  rlx_cpu_ctx ctx1 = {.threads = 1};
  rlx_status st = rlx_cpu_ref_table[n->op](n, c->in, c->n_in, &ref, &ctx1);
  CHECK_MSG(st == RLX_OK, "%s: reference kernel failed: %s", what, rlx_last_error());
  for (int t = 1; t <= 3 && st == RLX_OK; t++) {
    rlx_tensor out = {malloc(bytes ? bytes : 1), n->shape};
    memset(out.data, 0xA5, bytes ? bytes : 1); /* a NaN / odd pattern: unwritten elements show */
    rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t]};
    rlx_status fs = fk->kernel(n, c->in, c->n_in, &out, &ctx);
    CHECK_MSG(fs == RLX_OK, "%s (threads %d): fast kernel failed: %s", what, t, rlx_last_error());
    size_t bad = 0, first = 0;
    double fv = 0, rv = 0;
    for (size_t i = 0; i < count && fs == RLX_OK; i++) {
      bool ok;
      if (rlx_dtype_is_float(dt)) {
        double f = rlx_elem_get(out.data, dt, i), r = rlx_elem_get(ref.data, dt, i);
        ok = close_enough(f, r, rtol, atol);
        if (!ok && !bad) fv = f, rv = r;
      } else {
        ok = memcmp((char *)out.data + i * esz, (char *)ref.data + i * esz, esz) == 0;
        if (!ok && !bad) fv = (double)rlx_elem_get_i64(out.data, dt, i), rv = (double)rlx_elem_get_i64(ref.data, dt, i);
      }
      if (!ok && bad++ == 0) first = i;
    }
    CHECK_MSG(bad == 0, "%s (threads %d): %zu of %zu elements differ; first at %zu: fast %.9g, ref %.9g", what, t, bad,
              count, first, fv, rv);
    free(out.data);
  }
  /* deterministic mode: the same bits at every thread count */
  void *det1 = malloc(bytes ? bytes : 1);
  for (int t = 1; t <= 3 && st == RLX_OK && det1; t++) {
    rlx_tensor out = {t == 1 ? det1 : malloc(bytes ? bytes : 1), n->shape};
    memset(out.data, 0xA5, bytes ? bytes : 1);
    rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = true};
    rlx_status fs = fk->kernel(n, c->in, c->n_in, &out, &ctx);
    CHECK_MSG(fs == RLX_OK, "%s (deterministic, threads %d): fast kernel failed: %s", what, t, rlx_last_error());
    if (t > 1) {
      CHECK_MSG(fs != RLX_OK || memcmp(out.data, det1, bytes) == 0,
                "%s (deterministic): threads %d gives other bits than threads 1", what, t);
      free(out.data);
    }
  }
  free(det1);
  free(ref.data);
}

/* On the AVX-512 path: the fast kernel gives the same bits when forced onto the baseline path
 * (RLX_CPU_ISA=scalar) - for the kernels whose per-path loops do the same operations in the same
 * order (the elementwise loops, LayerNorm). A NaN may differ in sign and payload (which operand's
 * NaN an instruction passes on is the compiler's choice). Elsewhere nothing to compare. */
void same_bits_on_scalar(const char *what, tcase *c) {
  if (fk_isa_active() != FK_ISA_AVX512) return;
  const rlx_node *n = c->node;
  const rlx_cpu_fast_kernel *fk = &rlx_cpu_fast_table[n->op];
  size_t bytes = numel(&n->shape) * rlx_dtype_size((rlx_dtype)n->shape.dtype);
  rlx_tensor o1 = {malloc(bytes ? bytes : 1), n->shape}, o2 = {malloc(bytes ? bytes : 1), n->shape};
  rlx_cpu_ctx ctx = {.threads = 1};
  CHECK_OK(fk->kernel(n, c->in, c->n_in, &o1, &ctx));
  const char *old = getenv("RLX_CPU_ISA");
  char saved[32] = "";
  if (old) snprintf(saved, sizeof saved, "%s", old);
  setenv("RLX_CPU_ISA", "scalar", 1);
  CHECK_OK(fk_isa_configure());
  CHECK_OK(fk->kernel(n, c->in, c->n_in, &o2, &ctx));
  if (old)
    setenv("RLX_CPU_ISA", saved, 1);
  else
    unsetenv("RLX_CPU_ISA");
  CHECK_OK(fk_isa_configure());
  CHECK(fk_isa_active() == FK_ISA_AVX512);
  size_t esz = rlx_dtype_size((rlx_dtype)n->shape.dtype), differ = 0, first = 0;
  for (size_t i = 0; i < numel(&n->shape); i++)
    if (memcmp((char *)o1.data + i * esz, (char *)o2.data + i * esz, esz) != 0 &&
        !(isnan(rlx_elem_get(o1.data, (rlx_dtype)n->shape.dtype, i)) &&
          isnan(rlx_elem_get(o2.data, (rlx_dtype)n->shape.dtype, i))) &&
        differ++ == 0)
      first = i;
  CHECK_MSG(differ == 0,
            "%s: the AVX-512 and scalar paths give other bits in %zu elements; first at %zu: %.9g (x %.9g) vs %.9g",
            what, differ, first, rlx_elem_get(o1.data, (rlx_dtype)n->shape.dtype, first),
            rlx_elem_get(c->in[0].data, (rlx_dtype)c->in[0].shape.dtype, first),
            rlx_elem_get(o2.data, (rlx_dtype)n->shape.dtype, first));
  free(o1.data);
  free(o2.data);
}

/* The fast kernel must decline this case. */
void expect_declined(const char *what, tcase *c) {
  const rlx_cpu_fast_kernel *fk = &rlx_cpu_fast_table[c->node->op];
  CHECK_MSG(!(fk->applies && fk->applies(c->node, c->in, c->n_in)), "%s: applies but should not", what);
}
