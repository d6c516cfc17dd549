/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Test helper shared by the ONNX importer's unit tests: import serialized model bytes, compile
 * them for the CPU, run them and compare outputs. The run helpers count as checks (a failed
 * import, compile or run is one failed CHECK naming the stage); the comparisons return a bool for
 * the caller's CHECK and print the first mismatch to stderr. */
#ifndef RLX_TEST_ONNX_RUN_H
#define RLX_TEST_ONNX_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/onnx.h"

typedef struct ob_model ob_model; /* onnx_build.h */

/* An imported, compiled and run model; outs belong to the executable. */
typedef struct runner {
  rlx_graph *g;
  rlx_executable *e;
  const rlx_tensor *outs;
  uint32_t n_outs;
} runner;

/* rlx_onnx_import_bytes with *g cleared first. */
rlx_status onnx_import(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, rlx_graph **g);
/* Packs an onnx_build model and imports it (the model stays the caller's). */
rlx_status ob_import(ob_model *m, const rlx_onnx_options *o, rlx_graph **g);

/* Imports, compiles for "cpu" and runs with the given inputs; false (after one failed CHECK that
 * says which stage failed) on error, true after one passed CHECK. *r is always set and is
 * released with runner_free. */
bool run_bytes(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n,
               runner *r);
bool run_ob(ob_model *m, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n, runner *r);
void runner_free(runner *r);

/* One CHECK: importing fails with `code` and a message containing `sub` (NULL: any message). */
void expect_import_error_bytes(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, rlx_status code,
                               const char *sub);
void expect_import_error_ob(ob_model *m, const rlx_onnx_options *o, rlx_status code, const char *sub);

/* A named input tensor over caller-owned data. */
rlx_named_tensor tin(const char *name, const void *data, rlx_dtype t, int rank, const int64_t *dims);

/* t has dtype dt and exactly the dims given. */
bool out_shape_is(const rlx_tensor *t, rlx_dtype dt, int rank, const int64_t *dims);
/* t holds n f32 or f64 values with |got - want| <= tol * (1 + |want|). */
bool out_close(const rlx_tensor *t, const double *want, size_t n, double tol);
/* t is f32 and holds n values with |got - want| <= tol * (1 + |want|). */
bool out_close_f32(const rlx_tensor *t, const float *want, size_t n, double tol);
/* t is int64 and holds the n values want. */
bool out_equal_i64(const rlx_tensor *t, const int64_t *want, size_t n);

#endif
