/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The op conformance table: one row per case (op kind, typed attributes, operand shapes, dtypes
 * and how to fill them). tests/unit/test_conformance.c builds a one-op graph from each row, runs
 * it on every registered backend against the CPU reference, and dumps it for the independent
 * float64 reference (tests/reference/conformance_ref.py). The rows live in cases_<family>.c,
 * one file per op family; test_conformance.c includes them (the test build compiles one .c per
 * test, so the tables are included rather than linked).
 *
 * Writing a row:
 *   { "matmul_batched_bcast", RLX_OP_MatMul, NULL, 2, { IN(F32, 2, 3, 4), IN(F32, 4, 5) } }
 *   - the name is unique; the reference script and the coverage doc key on it;
 *   - attrs points at an rlx_attrs_<Op> given IN FULL (fields not named are zero, not the op's
 *     default: spell out eps, axis = -1, ...); NULL means the op's defaults;
 *   - operands become graph Inputs (or Params, see PARAM) named in0, in1, ... and are filled
 *     deterministically from the case name (same bytes on every run and machine). */
#ifndef RLX_CONF_CASES_H
#define RLX_CONF_CASES_H

#include <stdint.h>

#include "rlx/rlx.h"

#define CONF_MAX_IN 16

/* How an operand is filled. a and b are the fill's parameters (0 = the stated default). */
typedef enum conf_fill {
  CF_NORMAL = 0, /* N(b, s^2) with s = a (a = 0: s = 1) */
  CF_UNIFORM,    /* U[a, b) */
  CF_INT,        /* integers uniform in [a, b] (any dtype: f32 holds them exactly) */
  CF_SPECIAL,    /* NaN, +Inf, -Inf, 0, -0, 1, -1, 0.5, -2.5, 2.5, then N(0, 1) (repeating) */
  CF_SPD,        /* last two axes: M M^T / n + a I (a = 0: 1), M ~ N(0, 1): symmetric positive definite */
  CF_SYM,        /* last two axes: (M + M^T) / 2, M ~ N(0, 1) */
  CF_WELLCOND,   /* last two axes: N(0, 1) + a I (a = 0: n): diagonally dominant, far from singular */
  CF_PERM,       /* integers: along axis (int)a each line is a distinct pick from [0, b) (unique indices) */
  CF_NDUNIQUE,   /* indices [..., k]: distinct k-tuples inside the first k dims of operand (int)a */
  CF_CONST,      /* every element = a */
  CF_ARANGE,     /* element i = a + b * i (b = 0: 1) */
  CF_BOOL,       /* random 0 / 1 */
  CF_RAMP,       /* element i = a + b * (i mod last dim): every row holds the same values */
} conf_fill;

typedef struct conf_operand {
  rlx_dtype dtype;
  uint8_t rank;
  int64_t dims[RLX_MAX_RANK];
  conf_fill fill;
  double a, b;
  int param; /* bound as a Param (rlx_executable_set_param) instead of an Input */
} conf_operand;

/* What the harness checks. */
typedef enum conf_check {
  CONF_VALUES = 0, /* outputs compared to the CPU reference and to the float64 reference */
  CONF_RNG,        /* RngNormal / RngUniform: determinism and moments (checked in C only) */
  CONF_SAMPLE_DIST /* Sample over many identical rows: token frequencies (checked in C only) */
} conf_check;

/* Builds the case's node from its inputs when a plain rlx_build_<Op> call is not enough (bodies
 * of control-flow ops, declared shapes). */
typedef rlx_status (*conf_build_fn)(rlx_graph *g, const rlx_id *in, uint32_t n_in, rlx_id *out);

typedef struct conf_case {
  const char *name;
  rlx_op op;
  const void *attrs; /* rlx_attrs_<Op>, NULL = defaults */
  uint32_t n_in;
  conf_operand in[CONF_MAX_IN];
  /* Optional declared output (for ops whose shape is not derivable, e.g. ScatterAdd, or to pick
   * an index dtype): dtype + dims; rank 0 with has_out = 1 is a scalar. */
  int has_out;
  conf_operand out;
  conf_build_fn build; /* NULL: rlx_build_<Op> (or rlx_graph_add with `out` when has_out) */
  const char *body;    /* control flow: which body the build hook made (the reference keys on it) */
  conf_check check;
  double tol; /* tolerance multiplier (0 = 1) */
} conf_case;

/* ---- helpers for writing rows ---- */
#define CONF_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N
#define CONF_NARGS(...) CONF_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
/* Operand of dtype DT with the listed dims, normal fill. */
#define IN(DT, ...)                                                             \
  {                                                                             \
    .dtype = RLX_##DT, .rank = CONF_NARGS(__VA_ARGS__), .dims = { __VA_ARGS__ } \
  }
/* Operand with an explicit fill. */
#define INF(DT, FILL, A, B, ...) \
  { .dtype = RLX_##DT, .rank = CONF_NARGS(__VA_ARGS__), .dims = {__VA_ARGS__}, .fill = FILL, .a = A, .b = B }
/* Operand bound as a graph Param (a weight) rather than an Input. */
#define PARAM(DT, ...) \
  { .dtype = RLX_##DT, .rank = CONF_NARGS(__VA_ARGS__), .dims = {__VA_ARGS__}, .param = 1 }
/* Rank-0 operands. */
#define IN0(DT) \
  { .dtype = RLX_##DT, .rank = 0 }
#define INF0(DT, FILL, A, B) \
  { .dtype = RLX_##DT, .rank = 0, .fill = FILL, .a = A, .b = B }
/* Declared output (has_out must be set too): OUT(DT, dims...). */
#define OUT(DT, ...) .has_out = 1, .out = IN(DT, __VA_ARGS__)
#define OUT0(DT) .has_out = 1, .out = IN0(DT)
/* An attribute integer list. */
#define IL(...) \
  { (int64_t[]){__VA_ARGS__}, CONF_NARGS(__VA_ARGS__) }
#define IL0 \
  { 0, 0 }
#define FL(...) \
  { (float[]){__VA_ARGS__}, CONF_NARGS(__VA_ARGS__) }
/* Typed attributes of one op: AT(Conv, .groups = 2, ...). */
#define AT(OP, ...) ((const void *)&(const rlx_attrs_##OP){__VA_ARGS__})

/* The family tables (cases_<family>.c). */
typedef struct conf_table {
  const char *family;
  const conf_case *cases;
  uint32_t n;
} conf_table;

#endif
