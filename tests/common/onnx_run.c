/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Import / compile / run / compare helpers for the ONNX importer's tests (see onnx_run.h). */
#include "onnx_run.h"

#include <math.h>

#include "onnx_build.h"
#include "rlx_test.h"

rlx_status onnx_import(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, rlx_graph **g) {
  *g = NULL;
  return rlx_onnx_import_bytes(bytes, len, NULL, o, NULL, g);
}

rlx_status ob_import(ob_model *m, const rlx_onnx_options *o, rlx_graph **g) {
  size_t len;
  const uint8_t *bytes = ob_pack(m, &len);
  return onnx_import(bytes, len, o, g);
}

bool run_bytes(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n,
               runner *r) {
  memset(r, 0, sizeof *r);
  rlx_status s = onnx_import(bytes, len, o, &r->g);
  CHECK_MSG(s == RLX_OK, "import: %s", rlx_last_error());
  if (s) return false;
  s = rlx_compile(r->g, "cpu", NULL, &r->e);
  CHECK_MSG(s == RLX_OK, "compile: %s", rlx_last_error());
  if (s) return false;
  s = rlx_executable_run(r->e, ins, n, &r->outs, &r->n_outs);
  CHECK_MSG(s == RLX_OK, "run: %s", rlx_last_error());
  return s == RLX_OK;
}

bool run_ob(ob_model *m, const rlx_onnx_options *o, const rlx_named_tensor *ins, uint32_t n, runner *r) {
  size_t len;
  const uint8_t *bytes = ob_pack(m, &len);
  return run_bytes(bytes, len, o, ins, n, r);
}

void runner_free(runner *r) {
  rlx_executable_free(r->e);
  rlx_graph_free(r->g);
  memset(r, 0, sizeof *r);
}

void expect_import_error_bytes(const uint8_t *bytes, size_t len, const rlx_onnx_options *o, rlx_status code,
                               const char *sub) {
  rlx_graph *g = NULL;
  CHECK_ERR(onnx_import(bytes, len, o, &g), code, sub);
  rlx_graph_free(g);
}

void expect_import_error_ob(ob_model *m, const rlx_onnx_options *o, rlx_status code, const char *sub) {
  size_t len;
  const uint8_t *bytes = ob_pack(m, &len);
  expect_import_error_bytes(bytes, len, o, code, sub);
}

rlx_named_tensor tin(const char *name, const void *data, rlx_dtype t, int rank, const int64_t *dims) {
  rlx_named_tensor x = {name, {(void *)data, rlx_shape_make(t, (uint32_t)rank, dims)}};
  return x;
}

bool out_shape_is(const rlx_tensor *t, rlx_dtype dt, int rank, const int64_t *dims) {
  if (t->shape.dtype != dt || t->shape.rank != (uint32_t)rank) {
    fprintf(stderr, "  got dtype %s rank %u, want %s rank %d\n", rlx_dtype_name((rlx_dtype)t->shape.dtype),
            (unsigned)t->shape.rank, rlx_dtype_name(dt), rank);
    return false;
  }
  for (int i = 0; i < rank; i++)
    if (t->shape.dims[i] != dims[i]) {
      fprintf(stderr, "  dim %d: got %lld, want %lld\n", i, (long long)t->shape.dims[i], (long long)dims[i]);
      return false;
    }
  return true;
}

static bool has_n(const rlx_tensor *t, size_t n) {
  size_t got = 0;
  if (rlx_shape_numel(&t->shape, &got) || got != n) {
    fprintf(stderr, "  got %zu elements (dtype %s rank %u), want %zu\n", got, rlx_dtype_name((rlx_dtype)t->shape.dtype),
            (unsigned)t->shape.rank, n);
    return false;
  }
  return true;
}

static bool near(double got, double want, double tol, size_t i) {
  if (fabs(got - want) <= tol * (1 + fabs(want))) return true;
  fprintf(stderr, "  element %zu: got %.9g, want %.9g\n", i, got, want);
  return false;
}

bool out_close(const rlx_tensor *t, const double *want, size_t n, double tol) {
  bool f64 = t->shape.dtype == RLX_F64;
  if (!f64 && t->shape.dtype != RLX_F32) {
    fprintf(stderr, "  got dtype %s, want a float tensor\n", rlx_dtype_name((rlx_dtype)t->shape.dtype));
    return false;
  }
  if (!has_n(t, n)) return false;
  for (size_t i = 0; i < n; i++)
    if (!near(f64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i], want[i], tol, i)) return false;
  return true;
}

bool out_close_f32(const rlx_tensor *t, const float *want, size_t n, double tol) {
  if (t->shape.dtype != RLX_F32) {
    fprintf(stderr, "  got dtype %s, want f32\n", rlx_dtype_name((rlx_dtype)t->shape.dtype));
    return false;
  }
  if (!has_n(t, n)) return false;
  const float *v = t->data;
  for (size_t i = 0; i < n; i++)
    if (!near((double)v[i], (double)want[i], tol, i)) return false;
  return true;
}

bool out_equal_i64(const rlx_tensor *t, const int64_t *want, size_t n) {
  if (t->shape.dtype != RLX_I64) {
    fprintf(stderr, "  got dtype %s, want i64\n", rlx_dtype_name((rlx_dtype)t->shape.dtype));
    return false;
  }
  if (!has_n(t, n)) return false;
  const int64_t *v = t->data;
  for (size_t i = 0; i < n; i++)
    if (v[i] != want[i]) {
      fprintf(stderr, "  element %zu: got %lld, want %lld\n", i, (long long)v[i], (long long)want[i]);
      return false;
    }
  return true;
}
