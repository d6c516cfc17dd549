/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The op conformance suite (docs/testing.md).
 *
 * Every row of the case table (tests/cases/) becomes a one-op graph built with the op's typed
 * builder. Its inputs are generated deterministically from the case name. The graph is compiled
 * and run through the whole pipeline (verify, legalize, simplify, plan, lower) on the CPU backend
 * — the reference — and on every other registered backend; their outputs are compared with the
 * CPU's under per-dtype tolerances. A backend that claims an op and fails to compile or run one of
 * its cases fails the suite; one that neither claims nor can decompose it is recorded as
 * unsupported. RNG ops are checked statistically here (determinism, moments, range); everything
 * else is also checked against the independent float64 reference.
 *
 * Modes:
 *   test_conformance                      run every case on every backend (the ctest test)
 *   test_conformance --dump DIR           write per case DIR/<case>/{case.json,in*.npy,out.npy}
 *                                         (the CPU run) for tests/reference/conformance_ref.py
 *   test_conformance --coverage FILE      run everything, check the CPU against the float64
 *                                         reference (dump + /usr/bin/python3), write docs/op-coverage.md
 *   --filter SUBSTR                       only cases whose name contains SUBSTR
 *   --no-test-backend                     skip the test-only "cpu-decomposed" backend (the default
 *                                         mode registers it: the CPU claiming only kinds without a
 *                                         shared decomposition, so decompositions meet native kernels)
 *   --list                                print the case names
 *   -v                                    print every case */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passes/passes.h"
#include "rlx/cpu.h"
#include "rlx/backend.h"
#include "rlx/npy.h"
#include "rlx_test.h"
#include "core/elem.h"

#include "../cases/cases.h"
#include "../cases/cases_elementwise.c"
#include "../cases/cases_shape.c"
#include "../cases/cases_reduce.c"
#include "../cases/cases_linalg.c"
#include "../cases/cases_norm.c"
#include "../cases/cases_attention.c"
#include "../cases/cases_conv.c"
#include "../cases/cases_scatter.c"
#include "../cases/cases_fused.c"
#include "../cases/cases_control.c"
#include "../cases/cases_backward.c"
#include "../cases/cases_signal.c"
#include "../cases/cases_quant.c" /* quantization family */
#include "../cases/cases_recurrent.c"
#include "../cases/cases_spd.c"    /* issue 11: SPD / eigen */
#include "../cases/cases_custom.c" /* issue 11: Custom registry */
#include "../cases/cases_splat.c"  /* issue 11: Gaussian splatting */
#include "../cases/conf_fill.c"

#define TABLE(f) \
  { #f, conf_cases_##f, sizeof conf_cases_##f / sizeof conf_cases_##f[0] }
static const conf_table conf_tables[] = {
    TABLE(elementwise), TABLE(shape),  TABLE(reduce),    TABLE(linalg), TABLE(norm),
    TABLE(attention),   TABLE(conv),   TABLE(scatter),   TABLE(fused),  TABLE(control),
    TABLE(backward),    TABLE(signal), TABLE(recurrent), TABLE(quant), /* quantization family */
    TABLE(spd),         TABLE(custom), TABLE(splat),                   /* issue 11: SPD / eigen, Custom, splatting */
};
#undef TABLE
#define N_TABLES (sizeof conf_tables / sizeof conf_tables[0])

static int verbose;
static const char *filter;

/* ======================================================================================
 * Builders: one per op kind, through rlx_build_<Op> (so the output shape is inferred)
 * ====================================================================================== */

typedef rlx_status (*conf_builder)(rlx_graph *g, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out);
#define RLX_OP(N, FAM, LO, HI, PROPS)                                                                    \
  static rlx_status cb_##N(rlx_graph *g, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out) { \
    (void)attrs;                                                                                         \
    return rlx_build_##N(g, in, n, NULL, out);                                                           \
  }
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS)                                                           \
  static rlx_status cb_##N(rlx_graph *g, const rlx_id *in, uint32_t n, const void *attrs, rlx_id *out) { \
    return rlx_build_##N(g, in, n, (const rlx_attrs_##N *)attrs, NULL, out);                             \
  }
#include "rlx/ops.def"
#undef RLX_OP
#undef RLX_OPA
#define RLX_OP(N, FAM, LO, HI, PROPS) [RLX_OP_##N] = cb_##N,
#define RLX_OPA(N, FAM, LO, HI, PROPS, FIELDS) [RLX_OP_##N] = cb_##N,
static const conf_builder conf_builders[RLX_OP_COUNT] = {
#include "rlx/ops.def"
};
#undef RLX_OP
#undef RLX_OPA

/* ======================================================================================
 * Building and running one case
 * ====================================================================================== */

static rlx_status build_case(const conf_case *c, rlx_graph **out) {
  rlx_graph *g = NULL;
  RLX_TRY(rlx_graph_create(NULL, c->name, &g));
  rlx_id ids[CONF_MAX_IN], y = RLX_NO_ID;
  rlx_status st = RLX_OK;
  for (uint32_t i = 0; i < c->n_in && st == RLX_OK; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "in%u", i);
    if (c->in[i].param)
      st = rlx_param(g, nm, operand_shape(&c->in[i]), &ids[i]);
    else
      st = rlx_input(g, nm, operand_shape(&c->in[i]), &ids[i]);
  }
  if (st == RLX_OK) {
    if (c->build) {
      st = c->build(g, ids, c->n_in, &y);
    } else if (c->has_out) {
      rlx_shape decl = operand_shape(&c->out);
      st = rlx_graph_add(g, c->op, ids, c->n_in, c->attrs, &decl, NULL, &y);
    } else {
      st = conf_builders[c->op](g, ids, c->n_in, c->attrs, &y);
    }
  }
  if (st == RLX_OK && rlx_graph_node(g, y)->op != c->op)
    st = rlx_errorf(RLX_ERR_INTERNAL, "case %s builds a %s node, the row says %s", c->name,
                    rlx_op_name(rlx_graph_node(g, y)->op), rlx_op_name(c->op));
  if (st == RLX_OK) st = rlx_graph_set_outputs(g, &y, 1);
  if (st != RLX_OK) {
    rlx_graph_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}

/* Operands of a case: generated once, shared by every backend. t[] holds the Inputs first (in
 * operand order) and then the Params; n_inputs of them are Inputs. */
typedef struct case_inputs {
  rlx_named_tensor t[CONF_MAX_IN];
  char names[CONF_MAX_IN][16];
  uint32_t n, n_inputs;
  uint32_t operand[CONF_MAX_IN]; /* t[k] is operand operand[k] of the case */
} case_inputs;

static void inputs_free(case_inputs *ci) {
  for (uint32_t i = 0; i < ci->n; i++) free(ci->t[i].tensor.data);
  ci->n = 0;
}

static rlx_status inputs_make(const conf_case *c, case_inputs *ci) {
  memset(ci, 0, sizeof *ci);
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < c->n_in; i++) {
      if ((c->in[i].param != 0) != (pass == 1)) continue;
      uint32_t k = ci->n;
      snprintf(ci->names[k], sizeof ci->names[k], "in%u", i);
      ci->t[k].name = ci->names[k];
      ci->t[k].tensor.shape = operand_shape(&c->in[i]);
      ci->t[k].tensor.data = make_operand(c, i);
      ci->operand[k] = i;
      ci->n = k + 1;
      if (pass == 0) ci->n_inputs = k + 1;
      if (!ci->t[k].tensor.data) {
        inputs_free(ci);
        return rlx_errorf(RLX_ERR_OOM, "out of memory generating the inputs of %s", c->name);
      }
    }
  return RLX_OK;
}

/* The tensor of operand i. */
static const rlx_tensor *operand_tensor(const case_inputs *ci, uint32_t i) {
  for (uint32_t k = 0; k < ci->n; k++)
    if (ci->operand[k] == i) return &ci->t[k].tensor;
  return NULL;
}

/* Result of one case on one backend. */
typedef enum run_state { RS_NONE = 0, RS_PASS, RS_FAIL, RS_UNSUPPORTED, RS_STATED } run_state;

/* Cases a backend's founding document says it rejects at compile time (a stated error): the case
 * passes on that backend only when compilation fails with a message holding `says` (which names
 * what to do); running, or failing otherwise, is a failure. Counted apart from passes. */
static const struct {
  const char *backend, *case_name, *says;
} stated_errors[] = {
    /* seed-mlx-supported-ops.rs: conv backward "groups=1 only; grouped conv backward will surface as
     * a clear error" */
    {"mlx", "conv2d_backward_input", "groups = 1 only"}, /* groups = 2 */
    {"mlx", "conv2d_backward_weight_groups", "groups = 1 only"},
    /* "FakeQuantize (PerBatch + Fixed scale modes; EMA returns a clear error)" */
    {"mlx", "fake_quantize_ema", "scale_mode EMA is not supported on the MLX backend"},
    {"mlx", "fake_quantize_ema_empty_state", "scale_mode EMA is not supported on the MLX backend"},
    {"mlx", "fake_quantize_bf16_ema", "scale_mode EMA is not supported on the MLX backend"},
    /* While is a bounded unroll with an active mask: it needs max_iterations */
    {"mlx", "while_four_iterations", "While without max_iterations"},
    {"mlx", "while_zero_iterations", "While without max_iterations"},
};

static const char *stated_error(const char *backend, const char *case_name) {
  for (size_t i = 0; i < sizeof stated_errors / sizeof stated_errors[0]; i++)
    if (strcmp(stated_errors[i].backend, backend) == 0 && strcmp(stated_errors[i].case_name, case_name) == 0)
      return stated_errors[i].says;
  return NULL;
}

typedef struct run_result {
  run_state state;
  uint8_t path;   /* dispatch path of the case's op kind */
  rlx_tensor out; /* owned copy of the output (data NULL when the run failed) */
  char msg[1024];
} run_result;

static void result_clear(run_result *r) {
  free(r->out.data);
  memset(r, 0, sizeof *r);
}

/* Compiles g for `backend` and runs it; copies the output. Fails with the pipeline's status. */
static rlx_status run_on(const rlx_graph *g, const char *backend, const case_inputs *ci, uint64_t seed, run_result *r) {
  rlx_compile_options opt;
  rlx_compile_options_init(&opt);
  opt.rng_seed = seed;
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = 1;
  if (strcmp(backend, "cpu") == 0) opt.backend_options = &cpu;
  rlx_dispatch_report rep;
  rlx_executable *exe = NULL;
  rlx_status st = rlx_compile_with_report(g, backend, &opt, &rep, &exe);
  const rlx_node *node = rlx_graph_node(g, rlx_graph_outputs(g)[0]);
  r->path = rep.path[node->op];
  if (st != RLX_OK) {
    snprintf(r->msg, sizeof r->msg, "compile: %s: %s", rlx_status_text(st), rlx_last_error());
    return st;
  }
  const rlx_tensor *outs = NULL;
  uint32_t n_out = 0;
  for (uint32_t k = ci->n_inputs; k < ci->n && st == RLX_OK; k++)
    st = rlx_executable_set_param(exe, ci->t[k].name, &ci->t[k].tensor);
  if (st == RLX_OK) st = rlx_executable_run(exe, ci->t, ci->n_inputs, &outs, &n_out);
  if (st == RLX_OK && n_out != 1) st = rlx_errorf(RLX_ERR_INTERNAL, "expected 1 output, got %u", n_out);
  if (st != RLX_OK) {
    snprintf(r->msg, sizeof r->msg, "run: %s: %s", rlx_status_text(st), rlx_last_error());
    rlx_executable_free(exe);
    return st;
  }
  size_t bytes = shape_numel(&outs[0].shape) * rlx_dtype_size((rlx_dtype)outs[0].shape.dtype);
  r->out.shape = outs[0].shape;
  r->out.data = malloc(bytes ? bytes : 1);
  if (!r->out.data)
    st = rlx_errorf(RLX_ERR_OOM, "out of memory copying the output");
  else if (bytes)
    memcpy(r->out.data, outs[0].data, bytes);
  rlx_executable_free(exe);
  return st;
}

/* ======================================================================================
 * Comparison
 * ====================================================================================== */

/* Relative tolerance of one backend against the CPU, per output dtype. The absolute part is the
 * same number times max(1, max |reference|) for ops that combine many values (cancellation), and
 * times 1e-3 for elementwise ops, whose every element is held to the relative tolerance. */
static double backend_tol(rlx_dtype t) {
  switch (t) {
  case RLX_F64:
  case RLX_C128: return 1e-9;
  case RLX_F32:
  case RLX_C64: return 1e-4;
  case RLX_F16: return 4e-3;
  case RLX_BF16: return 3e-2;
  default: return 0;
  }
}

static bool compare_outputs(const rlx_tensor *ref, const rlx_tensor *got, double tol, bool elementwise, char *why,
                            size_t cap) {
  char a[96], b[96];
  if (!rlx_shape_equal(&ref->shape, &got->shape)) {
    rlx_shape_format(&ref->shape, a, sizeof a);
    rlx_shape_format(&got->shape, b, sizeof b);
    snprintf(why, cap, "shape %s, reference %s", b, a);
    return false;
  }
  rlx_dtype t = (rlx_dtype)ref->shape.dtype;
  size_t n = shape_numel(&ref->shape);
  if (is_intlike(t)) {
    for (size_t i = 0; i < n; i++) {
      int64_t x = rlx_elem_get_i64(ref->data, t, i), y = rlx_elem_get_i64(got->data, t, i);
      if (x != y) {
        snprintf(why, cap, "element %zu: got %lld, reference %lld", i, (long long)y, (long long)x);
        return false;
      }
    }
    return true;
  }
  bool cplx = rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX;
  double scale = 1;
  for (size_t i = 0; i < n; i++) {
    double re, im;
    rlx_elem_get_c(ref->data, t, i, &re, &im);
    if (isfinite(re) && fabs(re) > scale) scale = fabs(re);
    if (isfinite(im) && fabs(im) > scale) scale = fabs(im);
  }
  if (elementwise) scale = 1e-3;
  for (size_t i = 0; i < n; i++) {
    double xr[2], yr[2];
    rlx_elem_get_c(ref->data, t, i, &xr[0], &xr[1]);
    rlx_elem_get_c(got->data, t, i, &yr[0], &yr[1]);
    for (int part = 0; part < (cplx ? 2 : 1); part++) {
      double x = xr[part], y = yr[part];
      bool ok = isnan(x) ? isnan(y) : isinf(x) ? x == y : (isfinite(y) && fabs(x - y) <= tol * scale + tol * fabs(x));
      if (!ok) {
        snprintf(why, cap, "element %zu%s: got %.9g, reference %.9g (tolerance %.3g)", i, part ? " (imag)" : "", y, x,
                 tol * scale + tol * fabs(x));
        return false;
      }
    }
  }
  return true;
}

/* The comparison itself must be able to fail: a perturbed element, a NaN against a number, an
 * integer off by one and a shape mismatch are all caught. */
static void self_check_compare(void) {
  char why[256];
  float a[4] = {1.0f, -2.0f, NAN, INFINITY}, b[4] = {1.0f, -2.0f, NAN, INFINITY};
  int32_t ia[3] = {1, 2, 3}, ib[3] = {1, 2, 4};
  rlx_dim d4 = 4, d3 = 3, d2[2] = {2, 2};
  rlx_tensor ta = {a, rlx_shape_make(RLX_F32, 1, &d4)}, tb = {b, rlx_shape_make(RLX_F32, 1, &d4)};
  CHECK(compare_outputs(&ta, &tb, 1e-4, false, why, sizeof why));
  b[1] = -2.001f;
  CHECK(!compare_outputs(&ta, &tb, 1e-4, false, why, sizeof why));
  b[1] = -2.0f;
  b[2] = 0.0f;
  CHECK(!compare_outputs(&ta, &tb, 1e-4, false, why, sizeof why));
  b[2] = NAN;
  b[3] = -INFINITY;
  CHECK(!compare_outputs(&ta, &tb, 1e-4, false, why, sizeof why));
  rlx_tensor tc = {b, rlx_shape_make(RLX_F32, 2, d2)};
  CHECK(!compare_outputs(&ta, &tc, 1e-4, false, why, sizeof why));
  rlx_tensor ti = {ia, rlx_shape_make(RLX_I32, 1, &d3)}, tj = {ib, rlx_shape_make(RLX_I32, 1, &d3)};
  CHECK(!compare_outputs(&ti, &tj, 0, false, why, sizeof why));
  CHECK(compare_outputs(&ti, &ti, 0, false, why, sizeof why));
  /* elementwise: a small element is held to the relative tolerance despite a large neighbour */
  float c[2] = {1000.0f, 0.01f}, e[2] = {1000.0f, 0.0102f};
  rlx_dim d = 2;
  rlx_tensor tr = {c, rlx_shape_make(RLX_F32, 1, &d)}, tg = {e, rlx_shape_make(RLX_F32, 1, &d)};
  CHECK(compare_outputs(&tr, &tg, 1e-4, false, why, sizeof why));
  CHECK(!compare_outputs(&tr, &tg, 1e-4, true, why, sizeof why));
}

/* ======================================================================================
 * Statistical checks of the random ops
 * ====================================================================================== */

static bool tensors_equal(const rlx_tensor *a, const rlx_tensor *b) {
  if (!rlx_shape_equal(&a->shape, &b->shape)) return false;
  size_t bytes = shape_numel(&a->shape) * rlx_dtype_size((rlx_dtype)a->shape.dtype);
  return memcmp(a->data, b->data, bytes) == 0;
}

/* Mean / std / range of a float output. */
typedef struct moments {
  double mean, std, lo, hi;
  size_t n;
} moments;

static moments moments_of(const rlx_tensor *t) {
  moments m = {0, 0, INFINITY, -INFINITY, shape_numel(&t->shape)};
  double s = 0, s2 = 0;
  for (size_t i = 0; i < m.n; i++) {
    double v = rlx_elem_get(t->data, (rlx_dtype)t->shape.dtype, i);
    s += v;
    m.lo = v < m.lo ? v : m.lo;
    m.hi = v > m.hi ? v : m.hi;
  }
  m.mean = m.n ? s / (double)m.n : 0;
  for (size_t i = 0; i < m.n; i++) {
    double d = rlx_elem_get(t->data, (rlx_dtype)t->shape.dtype, i) - m.mean;
    s2 += d * d;
  }
  m.std = m.n > 1 ? sqrt(s2 / (double)(m.n - 1)) : 0;
  return m;
}

/* Copy of the graph's RNG node with another key (for "a different key gives other numbers"). */
static rlx_status rekey(const conf_case *c, uint64_t key, rlx_graph **out) {
  conf_case k = *c;
  rlx_attrs a;
  rlx_attrs_init(c->op, &a);
  if (c->attrs) memcpy(&a, c->attrs, rlx_op_attrs_size(c->op));
  if (c->op == RLX_OP_RngNormal)
    a.RngNormal.key = key;
  else
    a.RngUniform.key = key;
  k.attrs = &a;
  return build_case(&k, out);
}

/* Determinism, moments and range of one RNG case on one backend; returns false with a reason. */
static bool check_rng(const conf_case *c, const rlx_graph *g, const char *backend, const case_inputs *ci,
                      const run_result *first, char *why, size_t cap) {
  run_result again = {0}, other = {0}, seeded = {0};
  bool ok = false;
  rlx_graph *g2 = NULL;
  rlx_attrs a;
  rlx_attrs_init(c->op, &a);
  if (c->attrs) memcpy(&a, c->attrs, rlx_op_attrs_size(c->op));
  const rlx_tensor *t = &first->out;
  rlx_dtype dt = (rlx_dtype)t->shape.dtype;
  moments m = moments_of(t);
  /* 1. the same graph and seed give the same bytes */
  if (run_on(g, backend, ci, 0, &again) != RLX_OK) {
    if (snprintf(why, cap, "second run failed: %s", again.msg) < 0) why[0] = 0;
    goto done;
  }
  if (!tensors_equal(t, &again.out)) {
    if (snprintf(why, cap, "two runs of the same graph differ") < 0) why[0] = 0;
    goto done;
  }
  /* 2. another key and another compile seed give other numbers */
  uint64_t key = c->op == RLX_OP_RngNormal ? a.RngNormal.key : a.RngUniform.key;
  if (rekey(c, key + 1, &g2) != RLX_OK || run_on(g2, backend, ci, 0, &other) != RLX_OK) {
    if (snprintf(why, cap, "run with another key failed: %s", other.msg[0] ? other.msg : rlx_last_error()) < 0)
      why[0] = 0;
    goto done;
  }
  if (m.n > 1 && tensors_equal(t, &other.out)) {
    snprintf(why, cap, "key %llu and key %llu give identical numbers", (unsigned long long)key,
             (unsigned long long)(key + 1));
    goto done;
  }
  if (run_on(g, backend, ci, 12345, &seeded) != RLX_OK) {
    if (snprintf(why, cap, "run with compile seed 12345 failed: %s", seeded.msg) < 0) why[0] = 0;
    goto done;
  }
  if (m.n > 1 && tensors_equal(t, &seeded.out)) {
    if (snprintf(why, cap, "compile seeds 0 and 12345 give identical numbers") < 0) why[0] = 0;
    goto done;
  }
  /* 3. moments (5 standard errors; half floats get a looser std bound) and range */
  double mean, sd;
  if (c->op == RLX_OP_RngNormal) {
    mean = a.RngNormal.mean;
    sd = a.RngNormal.scale;
  } else {
    mean = 0.5 * ((double)a.RngUniform.low + (double)a.RngUniform.high);
    sd = ((double)a.RngUniform.high - (double)a.RngUniform.low) / sqrt(12.0);
    if (m.lo < (double)a.RngUniform.low || m.hi >= (double)a.RngUniform.high) {
      snprintf(why, cap, "values span [%g, %g], outside [low, high) = [%g, %g)", m.lo, m.hi, (double)a.RngUniform.low,
               (double)a.RngUniform.high);
      goto done;
    }
  }
  double half = (dt == RLX_F16 || dt == RLX_BF16) ? 0.01 : 0;
  double se_mean = sd / sqrt((double)m.n) * 5 + half * fabs(mean) + 1e-12;
  double se_std = sd * (5 / sqrt(2.0 * (double)m.n) + half) + 1e-12;
  if (m.n >= 1000 && (fabs(m.mean - mean) > se_mean || fabs(m.std - sd) > se_std)) {
    snprintf(why, cap, "mean %.5g std %.5g over %zu values; expected %.5g +- %.3g and %.5g +- %.3g", m.mean, m.std, m.n,
             mean, se_mean, sd, se_std);
    goto done;
  }
  ok = true;
done:
  result_clear(&again);
  result_clear(&other);
  result_clear(&seeded);
  rlx_graph_free(g2);
  return ok;
}

/* Sample over many identical rows: token frequencies follow the (top-k / top-p filtered)
 * softmax of the logits within 5 standard errors; tokens outside the filter never appear. */
static bool check_sample(const conf_case *c, const case_inputs *ci, const run_result *first, char *why, size_t cap) {
  rlx_attrs a;
  rlx_attrs_init(c->op, &a);
  if (c->attrs) memcpy(&a, c->attrs, rlx_op_attrs_size(c->op));
  const rlx_tensor *x = operand_tensor(ci, 0);
  size_t V = (size_t)x->shape.dims[x->shape.rank - 1], rows = shape_numel(&x->shape) / V;
  double p[64] = {0}, m = -INFINITY, total = 0;
  size_t order[64], cnt[64] = {0};
  if (V > 64) {
    snprintf(why, cap, "sample statistics support at most 64 tokens");
    return false;
  }
  for (size_t i = 0; i < V; i++) {
    p[i] = rlx_elem_get(x->data, (rlx_dtype)x->shape.dtype, i) / (double)a.Sample.temperature;
    m = p[i] > m ? p[i] : m;
    order[i] = i;
  }
  for (size_t i = 0; i < V; i++)
    for (size_t j = i + 1; j < V; j++)
      if (p[order[j]] > p[order[i]]) {
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  for (size_t i = 0; i < V; i++) {
    bool keep = a.Sample.top_k <= 0 || p[i] >= p[order[a.Sample.top_k - 1]];
    p[i] = keep ? exp(p[i] - m) : 0;
    total += p[i];
  }
  for (size_t i = 0; i < V; i++) p[i] /= total;
  if (a.Sample.top_p < 1) {
    double cum = 0;
    size_t keep = 0;
    while (keep < V && p[order[keep]] > 0) {
      cum += p[order[keep++]];
      if (cum >= a.Sample.top_p) break;
    }
    total = 0;
    for (size_t j = keep; j < V; j++) p[order[j]] = 0;
    for (size_t i = 0; i < V; i++) total += p[i];
    for (size_t i = 0; i < V; i++) p[i] /= total;
  }
  for (size_t r = 0; r < rows; r++) {
    int64_t tok = rlx_elem_get_i64(first->out.data, (rlx_dtype)first->out.shape.dtype, r);
    if (tok < 0 || (size_t)tok >= V) {
      snprintf(why, cap, "row %zu drew token %lld outside [0, %zu)", r, (long long)tok, V);
      return false;
    }
    cnt[tok]++;
  }
  for (size_t i = 0; i < V; i++) {
    double f = (double)cnt[i] / (double)rows, se = sqrt(p[i] * (1 - p[i]) / (double)rows);
    if ((p[i] == 0 && cnt[i] != 0) || fabs(f - p[i]) > 5 * se + 1e-9) {
      snprintf(why, cap, "token %zu drawn with frequency %.4f, expected %.4f (+- %.4f)", i, f, p[i], 5 * se);
      return false;
    }
  }
  return true;
}

/* ======================================================================================
 * The run over every case and backend
 * ====================================================================================== */

typedef struct case_ref {
  const conf_case *c;
  const char *family;
} case_ref;

static case_ref *all_cases;
static uint32_t n_cases;

static rlx_status collect_cases(void) {
  uint32_t total = 0;
  for (size_t t = 0; t < N_TABLES; t++) total += conf_tables[t].n;
  all_cases = calloc(total, sizeof *all_cases);
  if (!all_cases) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  for (size_t t = 0; t < N_TABLES; t++)
    for (uint32_t i = 0; i < conf_tables[t].n; i++) {
      const conf_case *c = &conf_tables[t].cases[i];
      if (filter && !strstr(c->name, filter)) continue;
      all_cases[n_cases].c = c;
      all_cases[n_cases].family = conf_tables[t].family;
      n_cases++;
    }
  return RLX_OK;
}

/* Per case and backend: the outcome (for the coverage doc). */
#define MAX_BACKENDS 8
static const rlx_backend *backends[MAX_BACKENDS];
static uint32_t n_backends;
static run_state *outcome; /* [case * MAX_BACKENDS + backend] */
static uint8_t *paths;     /* same indexing */

static void fail_case(const conf_case *c, const char *backend, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL %s on %s: ", c->name, backend);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  rlx_test_failed++;
}

/* A test-only backend for the default mode: the CPU executor claiming only the kinds without a
 * shared decomposition, so every decomposable op runs through its decomposition (what a backend
 * without that kernel gets) and is compared with the CPU's native kernel. Not in the coverage doc. */
static rlx_op decomposing_claims[RLX_OP_COUNT], decomposing_control[RLX_OP_COUNT];
static rlx_backend decomposing_cpu;

static void register_decomposing_cpu(void) {
  const rlx_backend *cpu = rlx_backend_find("cpu");
  if (!cpu) return;
  uint32_t n = 0;
  for (uint32_t i = 0; i < cpu->n_claims; i++)
    if (!rlx_decompose_table[cpu->claims[i]]) decomposing_claims[n++] = cpu->claims[i];
  decomposing_cpu = *cpu;
  decomposing_cpu.name = "cpu-decomposed";
  decomposing_cpu.claims = decomposing_claims;
  decomposing_cpu.n_claims = n;
  decomposing_cpu.host_staged = NULL;
  decomposing_cpu.n_host_staged = 0;
  uint32_t nc = 0;
  for (uint32_t i = 0; i < cpu->n_runtime_control; i++)
    if (!rlx_decompose_table[cpu->runtime_control[i]]) decomposing_control[nc++] = cpu->runtime_control[i];
  decomposing_cpu.runtime_control = decomposing_control;
  decomposing_cpu.n_runtime_control = nc;
  CHECK_OK(rlx_backend_register(&decomposing_cpu));
}

static void run_all(void) {
  uint32_t cpu = 0;
  n_backends = 0;
  for (uint32_t i = 0; i < rlx_backend_count() && n_backends < MAX_BACKENDS; i++) {
    const rlx_backend *b = rlx_backend_at(i);
    if (b->available && !b->available(NULL)) continue;
    if (strcmp(b->name, "cpu") == 0) cpu = n_backends;
    backends[n_backends++] = b;
  }
  outcome = calloc((size_t)n_cases * MAX_BACKENDS + 1, sizeof *outcome);
  paths = calloc((size_t)n_cases * MAX_BACKENDS + 1, 1);
  if (!outcome || !paths) {
    rlx_test_failed++;
    return;
  }
  for (uint32_t k = 0; k < n_cases; k++) {
    const conf_case *c = all_cases[k].c;
    rlx_graph *g = NULL;
    case_inputs ci;
    rlx_status st = build_case(c, &g);
    if (st != RLX_OK) {
      fail_case(c, "(build)", "%s: %s", rlx_status_text(st), rlx_last_error());
      for (uint32_t b = 0; b < n_backends; b++) outcome[k * MAX_BACKENDS + b] = RS_FAIL;
      continue;
    }
    if (inputs_make(c, &ci) != RLX_OK) {
      fail_case(c, "(inputs)", "%s", rlx_last_error());
      rlx_graph_free(g);
      continue;
    }
    run_result ref = {0};
    char why[1024];
    /* the CPU reference first */
    st = run_on(g, "cpu", &ci, 0, &ref);
    paths[k * MAX_BACKENDS + cpu] = ref.path;
    run_state cpu_state = RS_PASS;
    if (st != RLX_OK) {
      fail_case(c, "cpu", "%s", ref.msg);
      cpu_state = RS_FAIL;
    } else if (c->check == CONF_RNG && !check_rng(c, g, "cpu", &ci, &ref, why, sizeof why)) {
      fail_case(c, "cpu", "%s", why);
      cpu_state = RS_FAIL;
    } else if (c->check == CONF_SAMPLE_DIST && !check_sample(c, &ci, &ref, why, sizeof why)) {
      fail_case(c, "cpu", "%s", why);
      cpu_state = RS_FAIL;
    } else {
      rlx_test_passed++;
    }
    outcome[k * MAX_BACKENDS + cpu] = cpu_state;
    if (verbose) printf("%-44s cpu %s\n", c->name, cpu_state == RS_PASS ? "ok" : "FAIL");
    /* every other backend against it */
    for (uint32_t b = 0; b < n_backends; b++) {
      if (b == cpu) continue;
      const rlx_backend *be = backends[b];
      uint8_t claimed[RLX_OP_COUNT];
      rlx_backend_claim_set(be, claimed);
      run_result r = {0};
      run_state state;
      st = run_on(g, be->name, &ci, 0, &r);
      paths[k * MAX_BACKENDS + b] = r.path;
      const char *says = stated_error(be->name, c->name);
      if (says) {
        state = st != RLX_OK && strncmp(r.msg, "compile", 7) == 0 && strstr(r.msg, says) ? RS_STATED : RS_FAIL;
        if (state == RS_FAIL)
          fail_case(c, be->name, "expected the stated compile error \"%s\", got: %s", says,
                    st == RLX_OK ? "a successful run" : r.msg);
      } else if (st != RLX_OK && !claimed[c->op] && r.path != RLX_PATH_DECOMPOSED &&
                 strncmp(r.msg, "compile", 7) == 0) {
        state = RS_UNSUPPORTED; /* neither claimed nor decomposable: a gap, not a wrong answer */
      } else if (st != RLX_OK) {
        fail_case(c, be->name, "%s%s", claimed[c->op] ? "(op claimed) " : "", r.msg);
        state = RS_FAIL;
      } else if (c->check == CONF_RNG) {
        state = check_rng(c, g, be->name, &ci, &r, why, sizeof why) ? RS_PASS : RS_FAIL;
        if (state == RS_FAIL) fail_case(c, be->name, "%s", why);
      } else if (c->check == CONF_SAMPLE_DIST) {
        state = check_sample(c, &ci, &r, why, sizeof why) ? RS_PASS : RS_FAIL;
        if (state == RS_FAIL) fail_case(c, be->name, "%s", why);
      } else if (cpu_state != RS_PASS) {
        state = RS_FAIL;
        fail_case(c, be->name, "no CPU reference to compare with");
      } else {
        double tol = backend_tol((rlx_dtype)ref.out.shape.dtype) * (c->tol > 0 ? c->tol : 1);
        bool elementwise = rlx_op_has(c->op, RLX_PROP_ELEM) && !rlx_op_has(c->op, RLX_PROP_FUSED);
        state = compare_outputs(&ref.out, &r.out, tol, elementwise, why, sizeof why) ? RS_PASS : RS_FAIL;
        if (state == RS_FAIL) fail_case(c, be->name, "differs from the CPU: %s", why);
      }
      if (state == RS_PASS || state == RS_STATED) rlx_test_passed++;
      outcome[k * MAX_BACKENDS + b] = state;
      if (verbose)
        printf("%-44s %s %s (%s)\n", c->name, be->name,
               state == RS_PASS     ? "ok"
               : state == RS_FAIL   ? "FAIL"
               : state == RS_STATED ? "stated error"
                                    : "unsupported",
               rlx_dispatch_path_name((rlx_dispatch_path)r.path));
      result_clear(&r);
    }
    result_clear(&ref);
    inputs_free(&ci);
    rlx_graph_free(g);
  }
}

/* ======================================================================================
 * --dump: inputs, CPU output and a JSON description per case
 * ====================================================================================== */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", (unsigned char)*s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double v) {
  if (isnan(v))
    fputs("NaN", f);
  else if (isinf(v))
    fputs(v > 0 ? "Infinity" : "-Infinity", f);
  else
    fprintf(f, "%.17g", v);
}

static void json_shape(FILE *f, const rlx_shape *s) {
  fprintf(f, "{\"dtype\": \"%s\", \"shape\": [", rlx_dtype_name((rlx_dtype)s->dtype));
  for (uint32_t i = 0; i < s->rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)s->dims[i]);
  fputs("]", f);
}

static void json_chain_operand(FILE *f, const char *key, const rlx_chain_operand *o) {
  fprintf(f, ", \"%s\": {\"%s\": %u}", key, o->is_step ? "step" : "input", o->index);
}

/* Every attribute field of the built node, by name, from the op's field descriptors. */
static void json_attrs(FILE *f, const conf_case *c, const rlx_attrs *node_attrs) {
  rlx_attrs a;
  rlx_attrs_init(c->op, &a);
  if (node_attrs)
    memcpy(&a, node_attrs, rlx_op_attrs_size(c->op));
  else if (c->attrs)
    memcpy(&a, c->attrs, rlx_op_attrs_size(c->op));
  uint32_t nf;
  const rlx_field *fd = rlx_op_fields(c->op, &nf);
  fputc('{', f);
  for (uint32_t i = 0; i < nf; i++) {
    const void *p = (const char *)&a + fd[i].offset;
    fprintf(f, "%s\"%s\": ", i ? ", " : "", fd[i].name);
    switch (fd[i].type) {
    case RLX_FT_I64: fprintf(f, "%lld", (long long)*(const int64_t *)p); break;
    case RLX_FT_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case RLX_FT_F32: json_num(f, *(const float *)p); break;
    case RLX_FT_BOOL: fputs(*(const bool *)p ? "true" : "false", f); break;
    case RLX_FT_DTYPE: fprintf(f, "\"%s\"", rlx_dtype_name((rlx_dtype) * (const int32_t *)p)); break;
    case RLX_FT_OI64: {
      const rlx_oi64 *o = p;
      if (o->has)
        fprintf(f, "%lld", (long long)o->v);
      else
        fputs("null", f);
      break;
    }
    case RLX_FT_OF32: {
      const rlx_of32 *o = p;
      if (o->has)
        json_num(f, o->v);
      else
        fputs("null", f);
      break;
    }
    case RLX_FT_ODTYPE: {
      const rlx_odtype *o = p;
      if (o->has)
        fprintf(f, "\"%s\"", rlx_dtype_name((rlx_dtype)o->v));
      else
        fputs("null", f);
      break;
    }
    case RLX_FT_ILIST: {
      const rlx_ilist *l = p;
      fputc('[', f);
      for (uint32_t k = 0; k < l->n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)l->v[k]);
      fputc(']', f);
      break;
    }
    case RLX_FT_FLIST: {
      const rlx_flist *l = p;
      fputc('[', f);
      for (uint32_t k = 0; k < l->n; k++) {
        if (k) fputs(", ", f);
        json_num(f, l->v[k]);
      }
      fputc(']', f);
      break;
    }
    case RLX_FT_STR: json_str(f, *(const char *const *)p); break;
    case RLX_FT_BYTES: fprintf(f, "%zu", ((const rlx_bytes *)p)->n); break;
    case RLX_FT_GRAPH:
    case RLX_FT_OGRAPH:
      if (*(rlx_graph *const *)p || c->build)
        json_str(f, c->body ? c->body : "");
      else
        fputs("null", f);
      break;
    case RLX_FT_CHAIN: {
      const rlx_chain *ch = p;
      fputc('[', f);
      for (uint32_t k = 0; k < ch->n; k++) {
        const rlx_chain_step *s = &ch->steps[k];
        fprintf(f, "%s{\"kind\": \"%s\"", k ? ", " : "", rlx_enum_chain_step.names[s->kind]);
        switch ((rlx_chain_step_kind)s->kind) {
        case RLX_CHAIN_STEP_ACTIVATION: fprintf(f, ", \"sub\": \"%s\"", rlx_enum_act.names[s->sub]); break;
        case RLX_CHAIN_STEP_CAST: fprintf(f, ", \"sub\": \"%s\"", rlx_dtype_name((rlx_dtype)s->sub)); break;
        case RLX_CHAIN_STEP_BINARY: fprintf(f, ", \"sub\": \"%s\"", rlx_enum_binop.names[s->sub]); break;
        case RLX_CHAIN_STEP_COMPARE: fprintf(f, ", \"sub\": \"%s\"", rlx_enum_cmp.names[s->sub]); break;
        default: break;
        }
        json_chain_operand(f, "a", &s->a);
        json_chain_operand(f, "b", &s->b);
        json_chain_operand(f, "c", &s->c);
        fputc('}', f);
      }
      fputc(']', f);
      break;
    }
    case RLX_FT_ENUM: fprintf(f, "\"%s\"", fd[i].enm->names[*(const int32_t *)p]); break;
    case RLX_FT_OENUM: {
      int32_t v = *(const int32_t *)p;
      if (v >= 0)
        fprintf(f, "\"%s\"", fd[i].enm->names[v]);
      else
        fputs("null", f);
      break;
    }
    }
  }
  fputc('}', f);
}

/* Saves a tensor as .npy; bf16 (no NumPy dtype) is widened to f32 exactly. */
static rlx_status save_npy(const char *path, const rlx_tensor *t) {
  if (t->shape.dtype != RLX_BF16) return rlx_npy_save(path, t);
  size_t n = shape_numel(&t->shape);
  rlx_tensor w = {calloc(n ? n : 1, sizeof(float)), t->shape};
  if (!w.data) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  w.shape.dtype = RLX_F32;
  rlx_elem_convert(t->data, RLX_BF16, w.data, RLX_F32, n);
  rlx_status st = rlx_npy_save(path, &w);
  free(w.data);
  return st;
}

static const char *check_name(conf_check k) {
  return k == CONF_RNG ? "rng" : k == CONF_SAMPLE_DIST ? "sample_dist" : "values";
}

/* Writes DIR/<case>/... for one case (the CPU run). */
static rlx_status dump_case(const char *dir, const case_ref *cr) {
  const conf_case *c = cr->c;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, c->name);
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return rlx_errorf(RLX_ERR_IO, "cannot create %s: %s", path, strerror(errno));
  rlx_graph *g = NULL;
  case_inputs ci = {0};
  run_result r = {0};
  rlx_status st = build_case(c, &g);
  if (st == RLX_OK) st = inputs_make(c, &ci);
  if (st != RLX_OK) snprintf(r.msg, sizeof r.msg, "build: %s", rlx_last_error());
  if (st == RLX_OK) st = run_on(g, "cpu", &ci, 0, &r);
  for (uint32_t k = 0; k < ci.n; k++) {
    snprintf(path, sizeof path, "%s/%s/in%u.npy", dir, c->name, ci.operand[k]);
    rlx_status s2 = save_npy(path, &ci.t[k].tensor);
    if (s2 != RLX_OK) st = s2;
  }
  if (st == RLX_OK) {
    snprintf(path, sizeof path, "%s/%s/out.npy", dir, c->name);
    st = save_npy(path, &r.out);
  }
  snprintf(path, sizeof path, "%s/%s/case.json", dir, c->name);
  FILE *f = fopen(path, "w");
  if (!f) {
    st = rlx_errorf(RLX_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  } else {
    fprintf(f, "{\"name\": \"%s\", \"family\": \"%s\", \"op\": \"%s\", \"check\": \"%s\", \"tol\": ", c->name,
            cr->family, rlx_op_name(c->op), check_name(c->check));
    json_num(f, c->tol > 0 ? c->tol : 1);
    if (c->has_out) fprintf(f, ", \"declared_dtype\": \"%s\"", rlx_dtype_name(c->out.dtype));
    if (c->body) fprintf(f, ", \"body\": \"%s\"", c->body);
    fputs(",\n \"attrs\": ", f);
    const rlx_node *node = g ? rlx_graph_node(g, rlx_graph_outputs(g)[0]) : NULL;
    json_attrs(f, c, node ? &node->attrs : NULL);
    fputs(",\n \"inputs\": [", f);
    for (uint32_t i = 0; i < c->n_in; i++) {
      rlx_shape s = operand_shape(&c->in[i]);
      fprintf(f, "%s", i ? ", " : "");
      json_shape(f, &s);
      fprintf(f, ", \"file\": \"in%u.npy\", \"param\": %s}", i, c->in[i].param ? "true" : "false");
    }
    fputs("],\n \"output\": ", f);
    if (r.out.data) {
      json_shape(f, &r.out.shape);
      fputs(", \"file\": \"out.npy\"}", f);
    } else {
      fputs("null, \"error\": ", f);
      json_str(f, r.msg);
    }
    fputs("}\n", f);
    fclose(f);
  }
  result_clear(&r);
  inputs_free(&ci);
  rlx_graph_free(g);
  return st;
}

static int dump_all(const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
    return 1;
  }
  int bad = 0;
  for (uint32_t k = 0; k < n_cases; k++) {
    if (dump_case(dir, &all_cases[k]) != RLX_OK) {
      fprintf(stderr, "dump %s: %s\n", all_cases[k].c->name, rlx_last_error());
      bad++;
    }
  }
  printf("dumped %u cases to %s (%d with errors)\n", n_cases, dir, bad);
  return 0; /* a failing case is recorded in its case.json; the reference script reports it */
}

/* Removes what dump_all wrote. */
static void remove_dump(const char *dir) {
  char path[4096];
  for (uint32_t k = 0; k < n_cases; k++) {
    const conf_case *c = all_cases[k].c;
    for (uint32_t i = 0; i < c->n_in; i++) {
      snprintf(path, sizeof path, "%s/%s/in%u.npy", dir, c->name, i);
      remove(path);
    }
    snprintf(path, sizeof path, "%s/%s/out.npy", dir, c->name);
    remove(path);
    snprintf(path, sizeof path, "%s/%s/case.json", dir, c->name);
    remove(path);
    snprintf(path, sizeof path, "%s/%s", dir, c->name);
    rmdir(path);
  }
  snprintf(path, sizeof path, "%s/results.txt", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/reference.log", dir);
  remove(path);
  rmdir(dir);
}

/* ======================================================================================
 * --coverage: docs/op-coverage.md
 * ====================================================================================== */

/* The float64 reference's verdict per case: 1 pass, -1 fail, 0 not checked. */
static int8_t *ref_verdict;

static int run_reference(const char *dir) {
  char cmd[8192], path[4096];
  const char *script = rlx_test_src_path("tests/reference/conformance_ref.py");
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' --results '%s/results.txt' > '%s/reference.log' 2>&1", script,
           dir, dir, dir);
  int rc = system(cmd);
  snprintf(path, sizeof path, "%s/results.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(path, sizeof path, "%s/reference.log", dir);
    char *log = rlx_test_read_file(path, NULL);
    fprintf(stderr, "the float64 reference did not run (status %d):\n%s\n", rc, log ? log : "(no output)");
    free(log);
    return 1;
  }
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char verdict[16], name[512];
    if (sscanf(line, "%15s %511s", verdict, name) != 2) continue;
    for (uint32_t k = 0; k < n_cases; k++)
      if (strcmp(all_cases[k].c->name, name) == 0)
        ref_verdict[k] = strcmp(verdict, "PASS") == 0 ? 1 : strcmp(verdict, "FAIL") == 0 ? -1 : 0;
  }
  fclose(f);
  return 0;
}

/* Outcome of case k on backend b, with the CPU also judged by the float64 reference. */
static run_state final_state(uint32_t k, uint32_t b) {
  run_state s = outcome[k * MAX_BACKENDS + b];
  if (s == RS_PASS && strcmp(backends[b]->name, "cpu") == 0 && all_cases[k].c->check == CONF_VALUES &&
      ref_verdict[k] != 1)
    return RS_FAIL;
  return s;
}

typedef struct op_cell {
  const char *claimed;
  const char *path;
  uint32_t cases, passed, failed, unsupported, stated;
} op_cell;

static op_cell cell_for(rlx_op op, uint32_t b) {
  op_cell cell = {0};
  const rlx_backend *be = backends[b];
  uint8_t claimed[RLX_OP_COUNT];
  rlx_backend_claim_set(be, claimed);
  cell.claimed = claimed[op] ? "yes" : "no";
  uint8_t path = RLX_PATH_NONE;
  for (uint32_t k = 0; k < n_cases; k++) {
    if (all_cases[k].c->op != op) continue;
    cell.cases++;
    run_state s = final_state(k, b);
    cell.passed += s == RS_PASS;
    cell.failed += s == RS_FAIL;
    cell.unsupported += s == RS_UNSUPPORTED;
    cell.stated += s == RS_STATED;
    if (path == RLX_PATH_NONE) path = paths[k * MAX_BACKENDS + b];
  }
  if (path == RLX_PATH_NONE) {
    if (claimed[op])
      path = rlx_backend_host_stages(be, op)        ? RLX_PATH_HOST_STAGED
             : rlx_backend_runtime_controls(be, op) ? RLX_PATH_RUNTIME
                                                    : RLX_PATH_NATIVE;
    else
      path = rlx_decompose_table[op] ? RLX_PATH_DECOMPOSED : RLX_PATH_UNSUPPORTED;
  }
  cell.path = rlx_dispatch_path_name((rlx_dispatch_path)path);
  return cell;
}

static void write_cell(FILE *f, const op_cell *cell) {
  fprintf(f, " %s · %s · ", cell->claimed, cell->path);
  if (cell->cases == 0)
    fputs("—", f);
  else if (cell->passed == cell->cases)
    fprintf(f, "✅ %u/%u", cell->passed, cell->cases);
  else if (!cell->failed && cell->passed + cell->stated == cell->cases)
    fprintf(f, "✅ %u/%u + %u stated error%s", cell->passed, cell->passed, cell->stated, cell->stated > 1 ? "s" : "");
  else if (cell->failed)
    fprintf(f, "❌ %u/%u failed", cell->failed, cell->cases);
  else
    fprintf(f, "unsupported %u/%u", cell->unsupported, cell->cases);
  fputs(" |", f);
}

static const char *const expected_backends[] = {"mlx", "cuda"};

/* The cuda column when this machine has no GPU: the per-kind verdicts of the last run of
 * scripts/gpu-test.sh on a GPU machine, committed as docs/cuda-conformance.tsv (first line
 * "# DATE GPU", then "op cases native decomposed failed unsupported" per kind). */
typedef struct gpu_row {
  char op[64];
  unsigned cases, native, decomposed, failed, unsupported;
} gpu_row;
static gpu_row *gpu_rows;
static uint32_t n_gpu_rows;
static char gpu_run_label[160];

static void load_gpu_run(void) {
  if (gpu_rows || n_gpu_rows) return;
  char *text = rlx_test_read_file(rlx_test_src_path("docs/cuda-conformance.tsv"), NULL);
  if (!text) return;
  gpu_rows = calloc(RLX_OP_COUNT, sizeof *gpu_rows);
  for (char *line = strtok(text, "\n"); line && gpu_rows; line = strtok(NULL, "\n")) {
    if (line[0] == '#') {
      snprintf(gpu_run_label, sizeof gpu_run_label, "%s", line + 1 + (line[1] == ' '));
      continue;
    }
    gpu_row r;
    if (n_gpu_rows < RLX_OP_COUNT &&
        sscanf(line, "%63s %u %u %u %u %u", r.op, &r.cases, &r.native, &r.decomposed, &r.failed, &r.unsupported) == 6)
      gpu_rows[n_gpu_rows++] = r;
  }
  free(text);
}

static const gpu_row *gpu_row_of(rlx_op op) {
  for (uint32_t i = 0; i < n_gpu_rows; i++)
    if (strcmp(gpu_rows[i].op, rlx_op_name(op)) == 0) return &gpu_rows[i];
  return NULL;
}

/* A recorded-run cell: claimed (this build's claim list) · path · result of the GPU run. */
static void write_gpu_cell(FILE *f, const rlx_backend *be, rlx_op op) {
  uint8_t claimed[RLX_OP_COUNT];
  rlx_backend_claim_set(be, claimed);
  const gpu_row *r = gpu_row_of(op);
  const char *path = !claimed[op]                           ? (rlx_decompose_table[op] ? "decomposed" : "unsupported")
                     : rlx_backend_host_stages(be, op)      ? rlx_dispatch_path_name(RLX_PATH_HOST_STAGED)
                     : rlx_backend_runtime_controls(be, op) ? rlx_dispatch_path_name(RLX_PATH_RUNTIME)
                                                            : "native";
  if (r && !claimed[op] && r->decomposed) path = "decomposed";
  fprintf(f, " %s · %s · ", claimed[op] ? "yes" : "no", path);
  if (!r || r->cases == 0)
    fputs("—", f);
  else if (r->native + r->decomposed == r->cases)
    fprintf(f, "✅ %u/%u", r->cases, r->cases);
  else if (r->failed)
    fprintf(f, "❌ %u/%u failed", r->failed, r->cases);
  else
    fprintf(f, "unsupported %u/%u", r->unsupported, r->cases);
  fputs(" |", f);
}

/* Why an expected backend has no column: compiled out, or registered but not usable here. */
static const char *absent_reason(const char *name) {
  const rlx_backend *b = rlx_backend_find(name);
  return b ? "built, no device here" : "not built";
}

static int write_coverage(const char *file) {
  FILE *f = fopen(file, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", file, strerror(errno));
    return 1;
  }
  const char *missing[2];
  uint32_t n_missing = 0;
  for (size_t i = 0; i < 2; i++) {
    bool found = false;
    for (uint32_t b = 0; b < n_backends; b++) found |= strcmp(backends[b]->name, expected_backends[i]) == 0;
    if (!found) missing[n_missing++] = expected_backends[i];
  }
  fputs("<!-- SPDX-License-Identifier: MIT OR Apache-2.0 -->\n", f);
  fputs("<!-- GENERATED by `test_conformance --coverage docs/op-coverage.md`: do not edit by hand. -->\n", f);
  fputs("# Op coverage\n\n", f);
  fputs("Generated by `build/tests/test_conformance --coverage docs/op-coverage.md` (run from the source root; "
        "it runs the\nconformance suite on every registered backend and the float64 reference "
        "`tests/reference/conformance_ref.py`).\nThe ctest `cli_test_op_coverage_fresh` fails when this file is "
        "stale. See docs/testing.md.\n\n",
        f);
  fputs("Each backend cell reads **claimed · path · result**:\n\n"
        "- *claimed*: the backend's claim list names the op kind;\n"
        "- *path*: how the op ran in its conformance cases (the dispatch report: native, decomposed by the shared\n"
        "  legalizer, host-staged on the CPU reference, runtime control flow (the runtime runs the bodies on the\n"
        "  backend), or unsupported); for a kind without cases, what the claim\n"
        "  list and the shared decomposition table say;\n"
        "- *result*: ✅ n/n when all n conformance cases of the kind passed in this run (CPU: ran and matched the\n"
        "  independent float64 NumPy/PyTorch reference, or passed the statistical checks of the random ops;\n"
        "  other backends: ran and matched the CPU), ❌ when some failed, — when the kind has no case.\n"
        "  A ✅ is only ever written for a test that ran and passed; \"+ k stated errors\" counts cases the\n"
        "  backend's founding document says it rejects at compile time, which it did with the stated message.\n\n",
        f);
  fputs("Backends:", f);
  for (uint32_t b = 0; b < n_backends; b++) fprintf(f, " %s%s", b ? ", " : "", backends[b]->name);
  for (uint32_t i = 0; i < n_missing; i++) fprintf(f, ", %s (%s)", missing[i], absent_reason(missing[i]));
  fprintf(f, ". Conformance cases: %u.\n", n_cases);
  load_gpu_run();
  const rlx_backend *cuda_be = rlx_backend_find("cuda");
  bool gpu_col = false; /* cuda registered without a device, with a recorded GPU run */
  for (uint32_t i = 0; i < n_missing; i++) gpu_col |= strcmp(missing[i], "cuda") == 0 && cuda_be && n_gpu_rows;
  if (gpu_col)
    fprintf(f,
            "The cuda column is the last run of scripts/gpu-test.sh on a GPU machine (%s; recorded in\n"
            "docs/cuda-conformance.tsv, details in docs/cuda.md); claimed is this build's claim list.\n\n",
            gpu_run_label);
  else
    fputs("A backend built without its device here (cuda) has no column: its runs on the device are recorded by\n"
          "scripts/gpu-test.sh in its own document (docs/cuda.md, with the date and the GPU).\n\n",
          f);
  /* summary */
  fputs("## Summary\n\n| backend | kinds claimed | kinds with cases, all passing | kinds with a failing case | cases "
        "passed |\n"
        "|---|---|---|---|---|\n",
        f);
  for (uint32_t b = 0; b < n_backends; b++) {
    uint32_t claimed_n = 0, ok = 0, bad = 0, cases_ok = 0, cases_n = 0;
    for (int op = 0; op < RLX_OP_COUNT; op++) {
      op_cell cell = cell_for((rlx_op)op, b);
      claimed_n += cell.claimed[0] == 'y';
      ok += cell.cases && !cell.failed && cell.passed + cell.stated == cell.cases;
      bad += cell.failed > 0;
      cases_ok += cell.passed;
      cases_n += cell.cases;
    }
    fprintf(f, "| %s | %u / %d | %u | %u | %u / %u |\n", backends[b]->name, claimed_n, RLX_OP_COUNT, ok, bad, cases_ok,
            cases_n);
  }
  for (uint32_t i = 0; i < n_missing; i++) {
    if (gpu_col && strcmp(missing[i], "cuda") == 0) {
      uint8_t claimed[RLX_OP_COUNT];
      rlx_backend_claim_set(cuda_be, claimed);
      uint32_t claimed_n = 0, ok = 0, bad = 0, cases_ok = 0, cases_n = 0;
      for (int op = 0; op < RLX_OP_COUNT; op++) {
        claimed_n += claimed[op] != 0;
        const gpu_row *r = gpu_row_of((rlx_op)op);
        if (!r) continue;
        ok += r->cases && r->native + r->decomposed == r->cases;
        bad += r->failed > 0;
        cases_ok += r->native + r->decomposed;
        cases_n += r->cases;
      }
      fprintf(f, "| cuda (GPU run %s) | %u / %d | %u | %u | %u / %u |\n", gpu_run_label, claimed_n, RLX_OP_COUNT, ok,
              bad, cases_ok, cases_n);
      continue;
    }
    fprintf(f, "| %s | %s | | | |\n", missing[i], absent_reason(missing[i]));
  }
  /* one table per family */
  for (int fam = 0; fam < RLX_FAMILY_COUNT; fam++) {
    fprintf(f, "\n## %s\n\n| op | differentiable | cases |", rlx_family_name((rlx_family)fam));
    for (uint32_t b = 0; b < n_backends; b++) fprintf(f, " %s |", backends[b]->name);
    for (uint32_t i = 0; i < n_missing; i++) fprintf(f, " %s |", missing[i]);
    fputs("\n|---|---|---|", f);
    for (uint32_t b = 0; b < n_backends + n_missing; b++) fputs("---|", f);
    fputc('\n', f);
    for (int op = 0; op < RLX_OP_COUNT; op++) {
      if (rlx_op_family((rlx_op)op) != (rlx_family)fam) continue;
      uint32_t cases = 0;
      for (uint32_t k = 0; k < n_cases; k++) cases += all_cases[k].c->op == (rlx_op)op;
      fprintf(f, "| %s | %s | %u |", rlx_op_name((rlx_op)op), rlx_op_has((rlx_op)op, RLX_PROP_DIFF) ? "yes" : "no",
              cases);
      for (uint32_t b = 0; b < n_backends; b++) {
        op_cell cell = cell_for((rlx_op)op, b);
        write_cell(f, &cell);
      }
      for (uint32_t i = 0; i < n_missing; i++) {
        if (gpu_col && strcmp(missing[i], "cuda") == 0)
          write_gpu_cell(f, cuda_be, (rlx_op)op);
        else
          fprintf(f, " %s |", absent_reason(missing[i]));
      }
      fputc('\n', f);
    }
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", file);
    return 1;
  }
  return 0;
}

static int coverage(const char *file) {
  char tmpl[] = "/tmp/rlx-conformance-XXXXXX";
  char *dir = mkdtemp(tmpl);
  if (!dir) {
    fprintf(stderr, "cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  ref_verdict = calloc(n_cases + 1, 1);
  int rc = ref_verdict ? 0 : 1;
  if (rc == 0) rc = dump_all(dir);
  if (rc == 0) rc = run_reference(dir);
  remove_dump(dir);
  if (rc == 0) {
    run_all();
    rc = write_coverage(file);
  }
  if (rc == 0) printf("wrote %s\n", file);
  free(ref_verdict);
  return rc;
}

/* ======================================================================================
 * main
 * ====================================================================================== */

int main(int argc, char **argv) {
  const char *dump_dir = NULL, *coverage_file = NULL;
  bool list = false, no_test_backend = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
      dump_dir = argv[++i];
    else if (strcmp(argv[i], "--coverage") == 0 && i + 1 < argc)
      coverage_file = argv[++i];
    else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
      filter = argv[++i];
    else if (strcmp(argv[i], "--list") == 0)
      list = true;
    else if (strcmp(argv[i], "-v") == 0)
      verbose = 1;
    else if (strcmp(argv[i], "--no-test-backend") == 0)
      no_test_backend = true;
    else {
      fprintf(stderr, "usage: %s [--dump DIR | --coverage FILE | --list] [--filter SUBSTR] [--no-test-backend] [-v]\n",
              argv[0]);
      return 2;
    }
  }
  if (collect_cases() != RLX_OK) return 1;
  /* case names are unique (the reference script and the coverage doc key on them) */
  uint32_t dups = 0;
  for (uint32_t i = 0; i < n_cases; i++)
    for (uint32_t j = i + 1; j < n_cases; j++)
      if (strcmp(all_cases[i].c->name, all_cases[j].c->name) == 0) {
        fprintf(stderr, "duplicate case name %s\n", all_cases[i].c->name);
        dups++;
      }
  CHECK(dups == 0);
  /* every stated error names a case that exists (with --filter only some cases are collected) */
  for (size_t i = 0; !filter && i < sizeof stated_errors / sizeof stated_errors[0]; i++) {
    bool found = false;
    for (uint32_t k = 0; k < n_cases; k++) found |= strcmp(all_cases[k].c->name, stated_errors[i].case_name) == 0;
    CHECK_MSG(found, "stated_errors names %s, which is no case", stated_errors[i].case_name);
  }
  int rc;
  if (list) {
    for (uint32_t k = 0; k < n_cases; k++)
      printf("%s %s %s\n", all_cases[k].family, all_cases[k].c->name, rlx_op_name(all_cases[k].c->op));
    rc = 0;
  } else if (dump_dir) {
    rc = dump_all(dump_dir);
  } else if (coverage_file) {
    rc = coverage(coverage_file);
  } else {
    self_check_compare();
    if (!no_test_backend) register_decomposing_cpu();
    run_all();
    printf("conformance: %u cases on %u backend(s):", n_cases, n_backends);
    for (uint32_t b = 0; b < n_backends; b++) {
      uint32_t pass = 0, unsup = 0, stated = 0;
      for (uint32_t k = 0; k < n_cases; k++) {
        pass += outcome[k * MAX_BACKENDS + b] == RS_PASS;
        unsup += outcome[k * MAX_BACKENDS + b] == RS_UNSUPPORTED;
        stated += outcome[k * MAX_BACKENDS + b] == RS_STATED;
      }
      printf(" %s %u passed", backends[b]->name, pass);
      if (stated) printf(" (%u stated errors as documented)", stated);
      if (unsup) printf(" (%u unsupported)", unsup);
      printf("%s", b + 1 < n_backends ? "," : "\n");
    }
    for (uint32_t b = 0; b < n_backends; b++)
      for (uint32_t k = 0; k < n_cases; k++)
        if (outcome[k * MAX_BACKENDS + b] == RS_UNSUPPORTED)
          printf("  unsupported on %s: %s (%s)\n", backends[b]->name, all_cases[k].c->name,
                 rlx_op_name(all_cases[k].c->op));
    rc = rlx_test_finish("conformance");
  }
  free(outcome);
  free(paths);
  free(all_cases);
  return rc;
}
