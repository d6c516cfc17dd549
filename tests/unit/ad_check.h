/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers shared by the autodiff tests: deterministic random values, running a graph on a backend
 * with named params/inputs given as doubles, and central finite differences. Header-only (static
 * functions) so each test executable stays self-contained. */
#ifndef RLX_AD_CHECK_H
#define RLX_AD_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_test.h"
#include "rlx/backend.h"
#include "core/elem.h"

/* ---- deterministic values ---- */

/* A test made of several files defines ADT_SHARED_RNG everywhere and the state once, so all its
 * files draw from one stream. */
#ifdef ADT_SHARED_RNG
extern uint64_t adt_rng_state;
#else
static uint64_t adt_rng_state = 0x9e3779b97f4a7c15ull;
#endif
static inline double adt_uniform(double lo, double hi) {
  adt_rng_state = adt_rng_state * 6364136223846793005ull + 1442695040888963407ull;
  double u = (double)(adt_rng_state >> 11) / 9007199254740992.0;
  return lo + (hi - lo) * u;
}

static inline size_t adt_numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

/* ---- host values of a leaf ---- */

typedef struct adt_value {
  const char *name;
  rlx_shape shape;
  double *v; /* numel(shape) values (converted to shape.dtype when bound) */
} adt_value;

/* Converts v into a freshly malloc'ed buffer of the value's dtype. */
static inline void *adt_pack(const adt_value *x) {
  size_t n = adt_numel(&x->shape), sz = rlx_dtype_size((rlx_dtype)x->shape.dtype);
  void *buf = calloc(n ? n : 1, sz);
  for (size_t i = 0; i < n; i++) rlx_elem_set(buf, (rlx_dtype)x->shape.dtype, i, x->v[i]);
  return buf;
}

/* A compiled graph plus the leaf values bound to it. */
typedef struct adt_exe {
  rlx_executable *e;
} adt_exe;

static inline rlx_status adt_compile(const rlx_graph *g, const char *backend, adt_exe *x) {
  x->e = NULL;
  return rlx_compile(g, backend, NULL, &x->e);
}

/* Sets every value whose name is a param of the executable. */
static inline rlx_status adt_set_params(adt_exe *x, const adt_value *vals, uint32_t n) {
  uint32_t np = rlx_executable_param_count(x->e);
  for (uint32_t i = 0; i < n; i++) {
    bool is_param = false;
    for (uint32_t k = 0; k < np && !is_param; k++)
      is_param = strcmp(rlx_executable_param_name(x->e, k), vals[i].name) == 0;
    if (!is_param) continue;
    void *buf = adt_pack(&vals[i]);
    rlx_tensor t = {buf, vals[i].shape};
    rlx_status s = rlx_executable_set_param(x->e, vals[i].name, &t);
    free(buf);
    if (s) return s;
  }
  return RLX_OK;
}

/* Runs with the values that are inputs of the executable; output k (all elements) is appended
 * to out[k] (as doubles, out[k] must hold its numel). */
static inline rlx_status adt_run(adt_exe *x, const adt_value *vals, uint32_t n, double **out, uint32_t n_out) {
  uint32_t ni = rlx_executable_input_count(x->e);
  rlx_named_tensor *in = calloc(ni ? ni : 1, sizeof *in);
  void **bufs = calloc(ni ? ni : 1, sizeof *bufs);
  uint32_t k = 0;
  for (uint32_t i = 0; i < ni; i++) {
    const char *nm = rlx_executable_input_name(x->e, i);
    for (uint32_t j = 0; j < n; j++)
      if (strcmp(vals[j].name, nm) == 0) {
        bufs[k] = adt_pack(&vals[j]);
        in[k].name = nm;
        in[k].tensor.data = bufs[k];
        in[k].tensor.shape = vals[j].shape;
        k++;
        break;
      }
  }
  const rlx_tensor *outs = NULL;
  uint32_t no = 0;
  rlx_status s = rlx_executable_run(x->e, in, k, &outs, &no);
  for (uint32_t o = 0; o < n_out && o < no && s == RLX_OK; o++) {
    size_t ne = adt_numel(&outs[o].shape);
    for (size_t i = 0; i < ne; i++) out[o][i] = rlx_elem_get(outs[o].data, (rlx_dtype)outs[o].shape.dtype, i);
  }
  for (uint32_t i = 0; i < k; i++) free(bufs[i]);
  free(bufs);
  free(in);
  return s;
}

static inline double adt_run_scalar(adt_exe *x, const adt_value *vals, uint32_t n, rlx_status *st) {
  double v = NAN, *p = &v;
  *st = adt_run(x, vals, n, &p, 1);
  return v;
}

static inline void adt_free(adt_exe *x) {
  rlx_executable_free(x->e);
  x->e = NULL;
}

/* Is `a` within tol of `b` (relative to 1 + |b|)? */
static inline bool adt_close(double a, double b, double tol) { return fabs(a - b) <= tol * (1.0 + fabs(b)); }

/* Sum(out * w) loss helper: y * W (random constant of y's shape) reduced to a scalar. */
static inline rlx_status adt_weighted_sum(rlx_graph *g, rlx_id y, rlx_id *loss) {
  rlx_shape s = rlx_graph_node(g, y)->shape;
  size_t n = adt_numel(&s), sz = rlx_dtype_size((rlx_dtype)s.dtype);
  void *buf = calloc(n ? n : 1, sz);
  for (size_t i = 0; i < n; i++) rlx_elem_set(buf, (rlx_dtype)s.dtype, i, adt_uniform(-1.0, 1.0));
  rlx_id w, p;
  rlx_status st = rlx_constant(g, s, buf, n * sz, &w);
  free(buf);
  if (st) return st;
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, y, w, &p));
  if (s.rank == 0) {
    *loss = p;
    return RLX_OK;
  }
  int64_t axes[RLX_MAX_RANK];
  for (uint32_t i = 0; i < s.rank; i++) axes[i] = i;
  return rlx_reduce_axes(g, RLX_REDUCE_SUM, p, s.rank, axes, false, loss);
}

#endif
