/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The Fashion-MNIST CNN of `rlx train` (batch `batch`), forward to the mean softmax
 * cross-entropy, built with the graph API for the benchmarks that time it (bench_cnn_step,
 * bench_compile). The including file defines TRY(expr), which exits on an error. */
#ifndef RLX_BENCH_CNN_MODEL_H
#define RLX_BENCH_CNN_MODEL_H

#include "rlx/rlx.h"

static rlx_shape f32s(uint32_t rank, const rlx_dim *d) { return rlx_shape_make(RLX_F32, rank, d); }

static rlx_id conv_block(rlx_graph *g, rlx_id x, rlx_id w, rlx_id b, int64_t cout) {
  int64_t one[2] = {1, 1}, pad[2] = {1, 1}, k2[2] = {2, 2};
  rlx_attrs_Conv ca = {.kernel_size = {.v = NULL, .n = 0},
                       .stride = {.v = one, .n = 2},
                       .padding = {.v = pad, .n = 2},
                       .dilation = {.v = one, .n = 2},
                       .groups = 1};
  rlx_id c, br, r, p;
  TRY(rlx_build_Conv(g, (rlx_id[]){x, w}, 2, &ca, NULL, &c));
  TRY(rlx_reshape(g, b, 4, (int64_t[]){1, cout, 1, 1}, &br));
  TRY(rlx_binary(g, RLX_BINOP_ADD, c, br, &c));
  TRY(rlx_activation(g, RLX_ACT_RELU, c, &r));
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MAX,
                       .kernel_size = {.v = k2, .n = 2},
                       .stride = {.v = k2, .n = 2},
                       .padding = {.v = NULL, .n = 0}};
  TRY(rlx_build_Pool(g, &r, 1, &pa, NULL, &p));
  return p;
}

static rlx_graph *cnn_forward(int64_t batch) {
  rlx_graph *g;
  TRY(rlx_graph_create(NULL, "cnn", &g));
  rlx_id x, lab, w1, b1, w2, b2, w3, b3, w4, b4;
  TRY(rlx_input(g, "x", f32s(4, (rlx_dim[]){batch, 1, 28, 28}), &x));
  TRY(rlx_input(g, "labels", rlx_shape_make(RLX_I32, 1, (rlx_dim[]){batch}), &lab));
  TRY(rlx_param(g, "w1", f32s(4, (rlx_dim[]){16, 1, 3, 3}), &w1));
  TRY(rlx_param(g, "b1", f32s(1, (rlx_dim[]){16}), &b1));
  TRY(rlx_param(g, "w2", f32s(4, (rlx_dim[]){32, 16, 3, 3}), &w2));
  TRY(rlx_param(g, "b2", f32s(1, (rlx_dim[]){32}), &b2));
  TRY(rlx_param(g, "w3", f32s(2, (rlx_dim[]){32 * 7 * 7, 128}), &w3));
  TRY(rlx_param(g, "b3", f32s(1, (rlx_dim[]){128}), &b3));
  TRY(rlx_param(g, "w4", f32s(2, (rlx_dim[]){128, 10}), &w4));
  TRY(rlx_param(g, "b4", f32s(1, (rlx_dim[]){10}), &b4));
  rlx_id h = conv_block(g, x, w1, b1, 16);
  h = conv_block(g, h, w2, b2, 32);
  TRY(rlx_reshape(g, h, 2, (int64_t[]){batch, 32 * 7 * 7}, &h));
  TRY(rlx_matmul(g, h, w3, &h));
  TRY(rlx_binary(g, RLX_BINOP_ADD, h, b3, &h));
  TRY(rlx_activation(g, RLX_ACT_RELU, h, &h));
  TRY(rlx_matmul(g, h, w4, &h));
  TRY(rlx_binary(g, RLX_BINOP_ADD, h, b4, &h));
  rlx_id l;
  TRY(rlx_build_SoftmaxCrossEntropyWithLogits(g, (rlx_id[]){h, lab}, 2, NULL, &l));
  TRY(rlx_reduce_axes(g, RLX_REDUCE_MEAN, l, 1, (int64_t[]){0}, false, &l));
  TRY(rlx_graph_set_outputs(g, &l, 1));
  return g;
}

#endif
