/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Harness of the reference-kernel tests test_ref_{linalg,norm,attention,conv,scatter,control}.c:
 * builds one node (shape inferred by the IR's rule, or declared), makes operand tensors from
 * double arrays, runs the op's entry of rlx_cpu_ref_table and reads the output back as double.
 * Expected values are always computed independently in the tests. */
#ifndef RLX_REF_B_TEST_H
#define RLX_REF_B_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "rlx_test.h"
#include "core/elem.h"
#include "attr_lists.h"

#define VALS(...) ((const double[]){__VA_ARGS__})

#define RT_MAX_IN 8

typedef struct rt_arg {
  rlx_shape shape;
  const double *v; /* numel values (NULL = zeros) */
} rt_arg;

typedef struct rt {
  rlx_graph *g;
  const rlx_node *node;
  rlx_tensor in[RT_MAX_IN];
  uint32_t n_in;
  rlx_tensor out;
  rlx_cpu_ctx ctx;
} rt;

static inline size_t rt_numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

static inline void *rt_tensor_data(const rlx_shape *s, const double *v) {
  size_t n = rt_numel(s), esz = rlx_dtype_size((rlx_dtype)s->dtype);
  void *p = calloc(n ? n : 1, esz);
  for (size_t i = 0; v && i < n; i++) rlx_elem_set(p, (rlx_dtype)s->dtype, i, v[i]);
  return p;
}

static inline void rt_free(rt *c) {
  for (uint32_t i = 0; i < c->n_in; i++) free(c->in[i].data);
  free(c->out.data);
  rlx_graph_free(c->g);
  memset(c, 0, sizeof *c);
}

/* Builds the node: rlx_graph_add (shape rule + optional declared shape) or, when `unchecked`,
 * rlx_graph_add_unchecked with the declared shape. Returns the build status. */
static inline rlx_status rt_build(rt *c, rlx_op op, const void *attrs, const rlx_shape *declared, bool unchecked,
                                  uint32_t n, const rt_arg *args) {
  memset(c, 0, sizeof *c);
  c->ctx.threads = 1;
  RLX_TRY(rlx_graph_create(NULL, "ref_test", &c->g));
  rlx_id ids[RT_MAX_IN], id;
  for (uint32_t i = 0; i < n && i < RT_MAX_IN; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%u", i);
    RLX_TRY(rlx_input(c->g, name, args[i].shape, &ids[i]));
    c->in[i].shape = args[i].shape;
    c->in[i].data = rt_tensor_data(&args[i].shape, args[i].v);
    c->n_in = i + 1;
  }
  if (unchecked)
    RLX_TRY(rlx_graph_add_unchecked(c->g, op, ids, n, attrs, declared, "node", &id));
  else
    RLX_TRY(rlx_graph_add(c->g, op, ids, n, attrs, declared, "node", &id));
  c->node = rlx_graph_node(c->g, id);
  c->out.shape = c->node->shape;
  c->out.data = rt_tensor_data(&c->out.shape, NULL);
  return RLX_OK;
}

static inline rlx_status rt_exec(rt *c) {
  rlx_clear_error();
  if (!c->node) return rlx_errorf(RLX_ERR_INTERNAL, "test harness: no node was built");
  return rlx_cpu_ref_table[c->node->op](c->node, c->in, c->n_in, &c->out, &c->ctx);
}

static inline double rt_out(const rt *c, size_t i) {
  return rlx_elem_get(c->out.data, (rlx_dtype)c->out.shape.dtype, i);
}
static inline size_t rt_out_n(const rt *c) { return rt_numel(&c->out.shape); }

/* Build + run; a build failure is reported and returned as RLX_ERR_INTERNAL so kernel-status
 * checks fail too. */
#define RT_NARGS(...) ((uint32_t)(sizeof((rt_arg[]){__VA_ARGS__}) / sizeof(rt_arg)))
#define RT_RUN(c, op, attrs, declared, ...) \
  rt_run_((c), RLX_OP_##op, (attrs), (declared), false, RT_NARGS(__VA_ARGS__), (rt_arg[]){__VA_ARGS__}, __LINE__)
#define RT_RUN_UNCHECKED(c, op, attrs, declared, ...) \
  rt_run_((c), RLX_OP_##op, (attrs), (declared), true, RT_NARGS(__VA_ARGS__), (rt_arg[]){__VA_ARGS__}, __LINE__)

static inline rlx_status rt_run_(rt *c, rlx_op op, const void *attrs, const rlx_shape *declared, bool unchecked,
                                 uint32_t n, const rt_arg *args, int line) {
  rlx_status s = rt_build(c, op, attrs, declared, unchecked, n, args);
  if (s != RLX_OK) {
    rlx_test_failed++;
    fprintf(stderr, "%s:%d: building %s failed: %s\n", __FILE__, line, rlx_op_name(op), rlx_last_error());
    return RLX_ERR_INTERNAL;
  }
  return rt_exec(c);
}

/* |got - want| <= atol + rtol * |want| (NaN matches NaN, infinities must be equal). */
static inline bool rt_close(double got, double want, double atol, double rtol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Compares every output element with want[]; prints the first few mismatches. */
static inline bool rt_check_out(const rt *c, const double *want, size_t n, double atol, double rtol, int line) {
  if (!c->node || rt_out_n(c) != n) {
    fprintf(stderr, "  line %d: output has %zu elements, expected %zu\n", line, c->node ? rt_out_n(c) : 0, n);
    return false;
  }
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (!rt_close(rt_out(c, i), want[i], atol, rtol) && bad++ < 5)
      fprintf(stderr, "  line %d: element %zu: got %.9g, want %.9g\n", line, i, rt_out(c, i), want[i]);
  return bad == 0;
}
#define CHECK_OUT(c, want, n, atol, rtol) CHECK(rt_check_out((c), (want), (n), (atol), (rtol), __LINE__))

/* Deterministic test data: multiples of 1/32 in [-2, 2] (exact in f16, bf16, f32 and f64). */
static inline void rt_fill(double *v, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = (double)((int)((s >> 9) % 129u) - 64) / 32.0;
  }
}

#endif
