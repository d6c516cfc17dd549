/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX models on the MLX backend: ONNX's own node tests (Debian's libonnx-testdata) imported,
 * compiled for "mlx" and run; every output is compared with the test's expected output_K.pb
 * (the ONNX suite's values, an independent reference) under rlx onnx-conformance's tolerance
 * |got - expected| <= 1e-7 + 1e-3 |expected| (integers exactly). The tests cover the families a
 * model meets: convolution, GEMM, activations, normalizations, recurrent layers, pooling,
 * gather / scatter, cumulative sums, resizing, einsum, reductions, DFT. The DFT's absolute
 * tolerance is 1e-4: MLX transforms in complex64 (the CPU and ONNX's expected values in double),
 * which leaves ~1.5e-5 on near-zero bins of this test's unit-scale inputs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/elem.h"
#include "rlx/onnx.h"
#include "rlx/rlx.h"
#include "rlx_test.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node"

static const char *const tests[] = {
    "test_conv_with_strides_padding",
    "test_gemm_all_attributes",
    "test_relu",
    "test_softmax_axis_1",
    "test_layer_normalization_4d_axis_negative_1",
    "test_gru_defaults",
    "test_lstm_defaults",
    "test_rnn_seq_length",
    "test_maxpool_2d_pads",
    "test_averagepool_2d_strides",
    "test_batchnorm_epsilon",
    "test_instancenorm_example",
    "test_matmul_4d",
    "test_gather_1",
    "test_scatter_elements_with_axis",
    "test_cumsum_2d_axis_1",
    "test_resize_upsample_scales_nearest",
    "test_einsum_batch_matmul",
    "test_reduce_mean_keepdims_example",
    "test_convtranspose",
    "test_lrn",
    "test_dft",
};

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static void run_one(const char *name) {
  double abs_tol = strcmp(name, "test_dft") == 0 ? 1e-4 : 1e-7;
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/%s", NODE_DIR, name);
  rlx_named_tensor ins[8];
  char *in_names[8] = {0};
  uint32_t n_in = 0;
  for (; n_in < 8; n_in++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%u.pb", dir, n_in);
    if (!exists(path)) break;
    ins[n_in].name = NULL;
    CHECK_OK(rlx_onnx_tensor_load(path, NULL, &ins[n_in].tensor, &in_names[n_in]));
    ins[n_in].name = in_names[n_in];
  }
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = ins;
  o.n_inputs = n_in;
  rlx_graph *g = NULL;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  rlx_status st = rlx_onnx_import_file(path, &o, NULL, &g);
  CHECK_MSG(st == RLX_OK, "%s: import: %s", name, rlx_last_error());
  rlx_executable *e = NULL;
  if (g) {
    st = rlx_compile(g, "mlx", NULL, &e);
    CHECK_MSG(st == RLX_OK, "%s: compile for mlx: %s", name, rlx_last_error());
  }
  const rlx_tensor *outs = NULL;
  uint32_t n_out = 0;
  if (e) {
    st = rlx_executable_run(e, ins, n_in, &outs, &n_out);
    CHECK_MSG(st == RLX_OK, "%s: run on mlx: %s", name, rlx_last_error());
  }
  for (uint32_t k = 0; outs && k < n_out; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%u.pb", dir, k);
    rlx_tensor want;
    if (rlx_onnx_tensor_load(path, NULL, &want, NULL) != RLX_OK) {
      CHECK_MSG(false, "%s: output_%u.pb: %s", name, k, rlx_last_error());
      continue;
    }
    size_t n = 1, bad = 0;
    for (uint32_t d = 0; d < want.shape.rank; d++) n *= (size_t)want.shape.dims[d];
    CHECK_MSG(outs[k].shape.dtype == want.shape.dtype && rlx_shape_compatible(&outs[k].shape, &want.shape),
              "%s: output %u has another shape or dtype", name, k);
    rlx_dtype t = (rlx_dtype)want.shape.dtype;
    double worst = 0;
    for (size_t i = 0; outs[k].shape.dtype == want.shape.dtype && i < n; i++) {
      double a = rlx_elem_get(outs[k].data, t, i), b = rlx_elem_get(want.data, t, i);
      double tol = rlx_dtype_is_float(t) ? abs_tol + 1e-3 * fabs(b) : 0;
      bool same = (isnan(a) && isnan(b)) || fabs(a - b) <= tol;
      if (!same) bad++;
      if (fabs(a - b) > worst) worst = fabs(a - b);
    }
    CHECK_MSG(bad == 0, "%s: output %u: %zu of %zu values differ from ONNX's expected output (worst %g)", name, k, bad,
              n, worst);
    rlx_onnx_tensor_free(&want, NULL);
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
  for (uint32_t i = 0; i < n_in; i++) {
    rlx_onnx_tensor_free(&ins[i].tensor, NULL);
    free(in_names[i]);
  }
}

int main(void) {
#ifndef RLX_HAVE_MLX
  fprintf(stderr, "test_mlx_onnx: the MLX backend is not compiled in (no mlx-cpu SDK; run scripts/setup.sh)\n");
  return 77;
#else
  if (!exists(NODE_DIR)) {
    fprintf(stderr, "test_mlx_onnx: %s is missing: install Debian's libonnx-testdata (scripts/setup.sh)\n", NODE_DIR);
    return 1;
  }
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) run_one(tests[i]);
  return rlx_test_finish("test_mlx_onnx");
#endif
}
