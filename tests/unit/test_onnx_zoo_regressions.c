/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer regressions found by the model zoo (scripts/onnx_zoo.sh: torchvision and
 * hand-written PyTorch models exported with torch's dynamo and TorchScript exporters). Each test
 * rebuilds, with protobuf-c (tests/common/onnx_build.h), the smallest graph showing the pattern
 * the exporter wrote, and checks the result against values worked out by hand in the comments or
 * computed by plain loops written here. */
#include <stdint.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})

/* ======================================================================================
 * LSTM whose initial states do not match hidden_size
 * ====================================================================================== */

/* torch 2.15's dynamo exporter writes nn.LSTM(proj_size=8) as a plain LSTM with hidden_size 8
 * but initial_c of hidden size 16 (the projection is dropped). The importer used to fail deep
 * inside its unrolled cell with a Reshape element-count error; it must name the input and the
 * expected shape. */
static void test_lstm_state_shapes(void) {
  const int64_t H = 2, I = 3, B = 1, S = 2;
  float w[4 * 2 * 3] = {0}, r[4 * 2 * 2] = {0}, h0[2] = {0}, c0[4] = {0};
  ob_model *m = ob_model_new(20);
  ob_input(m, "x", OB_FLOAT, 3, DIMS(S, B, I));
  ob_initializer(m, "w", OB_FLOAT, 3, DIMS(1, 4 * H, I), w, sizeof w);
  ob_initializer(m, "r", OB_FLOAT, 3, DIMS(1, 4 * H, H), r, sizeof r);
  ob_initializer(m, "h0", OB_FLOAT, 3, DIMS(1, B, H), h0, sizeof h0);
  ob_initializer(m, "c0", OB_FLOAT, 3, DIMS(1, B, 4), c0, sizeof c0); /* hidden size 4, not 2 */
  Onnx__NodeProto *n = ob_node(m, "LSTM", "x,w,r,,,h0,c0", "y,yh,yc");
  ob_attr_int(m, n, "hidden_size", H);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "input initial_c [1, 1, 4] f32 must be [1, 1, 2] (hidden_size 2)");
  ob_model_free(m);

  /* the same for initial_h of a GRU with layout = 1 ([B, D, H]) */
  float gw[3 * 2 * 3] = {0}, gr[3 * 2 * 2] = {0}, gh0[3] = {0};
  m = ob_model_new(14);
  ob_input(m, "x", OB_FLOAT, 3, DIMS(B, S, I));
  ob_initializer(m, "w", OB_FLOAT, 3, DIMS(1, 3 * H, I), gw, sizeof gw);
  ob_initializer(m, "r", OB_FLOAT, 3, DIMS(1, 3 * H, H), gr, sizeof gr);
  ob_initializer(m, "h0", OB_FLOAT, 3, DIMS(B, 1, 3), gh0, sizeof gh0);
  n = ob_node(m, "GRU", "x,w,r,,,h0", "y,yh");
  ob_attr_int(m, n, "hidden_size", H);
  ob_attr_int(m, n, "layout", 1);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "input initial_h [1, 1, 3] f32 must be [1, 1, 2]");
  ob_model_free(m);

  /* matching states still import and run: one step of an LSTM with zero weights and bias keeps
   * every gate at sigmoid(0) = 0.5 and g = tanh(0) = 0, so c1 = 0.5 * c0, h1 = 0.5 * tanh(c1) */
  float c0ok[2] = {0.8f, -2.0f};
  m = ob_model_new(20);
  ob_input(m, "x", OB_FLOAT, 3, DIMS(1, B, I));
  ob_initializer(m, "w", OB_FLOAT, 3, DIMS(1, 4 * H, I), w, sizeof w);
  ob_initializer(m, "r", OB_FLOAT, 3, DIMS(1, 4 * H, H), r, sizeof r);
  ob_initializer(m, "h0", OB_FLOAT, 3, DIMS(1, B, H), h0, sizeof h0);
  ob_initializer(m, "c0", OB_FLOAT, 3, DIMS(1, B, H), c0ok, sizeof c0ok);
  n = ob_node(m, "LSTM", "x,w,r,,,h0,c0", "y,yh,yc");
  ob_attr_int(m, n, "hidden_size", H);
  ob_output(m, "yc", OB_FLOAT, -1, NULL);
  float x[3] = {1, 2, 3};
  rlx_named_tensor in = tin("x", x, RLX_F32, 3, DIMS(1, B, I));
  float want[2] = {0.4f, -1.0f};
  runner rr;
  if (run_ob(m, NULL, &in, 1, &rr))
    CHECK(out_shape_is(&rr.outs[0], RLX_F32, 3, DIMS(1, 1, 2)) && out_close_f32(&rr.outs[0], want, 2, 1e-6));
  runner_free(&rr);
  ob_model_free(m);
}

int main(void) {
  test_lstm_state_shapes();
  return rlx_test_finish("onnx_zoo_regressions");
}
