/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer: small models are written with the wire-format writer onnx_model_writer.h (the importer
 * reads them with the protobuf-c code generated from onnx.proto), imported, compiled and run on
 * the CPU, and compared with values computed by plain loops. Malformed models (truncation, bad
 * wire types, overflowing dims, size mismatches, cycles, dangling inputs, deep nesting, unsafe
 * external data, allocation failures) must end in an error naming the node / field. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnx_model_writer.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

/* ======================================================================================
 * Models: the wire-format writer of onnx_model_writer.h
 * ====================================================================================== */

/* The parts of a GraphProto (consumed by graph()). */
typedef struct gparts {
  mw_buf *nodes, *inits, *ins, *outs;
  int nn, ni, nin, nout;
} gparts;
static mw_buf graph(const char *name, gparts p) {
  return mw_graph_inits(name, p.nodes, p.nn, p.inits, p.ni, p.ins, p.nin, p.outs, p.nout);
}
#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A model with one node over float inputs of the given shapes (one output "y"). */
static mw_buf one_node(int opset, mw_buf nd, int nin, const char *const *in_names, const int *ranks,
                       const int64_t *const *dims, mw_buf *inits, int ni) {
  mw_buf ins[8];
  for (int i = 0; i < nin; i++) ins[i] = mw_tensor_value(in_names[i], MW_F32, ranks[i], dims[i]);
  mw_buf out = {0};
  mw_str(&out, 1, "y");
  return mw_model(opset, graph("g", (gparts){&nd, inits, ins, &out, 1, ni, nin, 1}));
}

/* Deterministic test data in [-1, 1). */
static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* ======================================================================================
 * Happy paths, one or two per op family
 * ====================================================================================== */

static void test_elementwise(void) {
  /* y = relu(a * b + c) - with b broadcast [3] over [2, 3] */
  mw_buf nodes[3] = {mw_node("Mul", "a,b", "t", NULL, 0), mw_node("Add", "t,c", "u", NULL, 0),
                     mw_node("Relu", "u", "y", NULL, 0)};
  float cv[1] = {-1.0f};
  mw_buf init = mw_tensor("c", MW_F32, 1, DIMS(1), cv, 4);
  mw_buf ins[2] = {mw_tensor_value("a", MW_F32, 2, DIMS(2, 3)), mw_tensor_value("b", MW_F32, 1, DIMS(3))};
  mw_buf out = mw_tensor_value("y", MW_F32, 2, DIMS(2, 3));
  mw_buf m = mw_model(13, graph("ew", (gparts){nodes, &init, ins, &out, 3, 1, 2, 1}));
  float a[6] = {1, 2, 3, -4, 5, 6}, b[3] = {2, 0.5f, -1}, want[6];
  for (int i = 0; i < 6; i++) want[i] = fmaxf(a[i] * b[i % 3] - 1.0f, 0.0f);
  rlx_named_tensor in[2] = {tin("a", a, RLX_F32, 2, DIMS(2, 3)), tin("b", b, RLX_F32, 1, DIMS(3))};
  runner r;
  if (mw_run(&m, NULL, in, 2, &r)) CHECK(out_close_f32(&r.outs[0], want, 6, 1e-6));
  /* the output node carries the ONNX output name */
  if (r.g) CHECK(strcmp(rlx_graph_node(r.g, rlx_graph_outputs(r.g)[0])->name, "y") == 0);
  runner_free(&r);
  free(m.p);

  /* Mod with fmod = 0 on integers follows the divisor's sign (Python) */
  mw_buf nm = mw_node("Mod", "a,b", "y", NULL, 0);
  mw_buf ins2[2] = {mw_tensor_value("a", MW_I32, 1, DIMS(4)), mw_tensor_value("b", MW_I32, 1, DIMS(4))};
  mw_buf out2 = mw_tensor_value("y", MW_I32, 1, DIMS(4));
  m = mw_model(13, graph("mod", (gparts){&nm, NULL, ins2, &out2, 1, 0, 2, 1}));
  int32_t ma[4] = {7, -7, 7, -7}, mb[4] = {3, 3, -3, -3}, mw[4] = {1, 2, -2, -1};
  rlx_named_tensor in2[2] = {tin("a", ma, RLX_I32, 1, DIMS(4)), tin("b", mb, RLX_I32, 1, DIMS(4))};
  if (mw_run(&m, NULL, in2, 2, &r)) CHECK(memcmp(r.outs[0].data, mw, sizeof mw) == 0);
  runner_free(&r);
  free(m.p);
}

static void test_gemm(void) {
  /* y = 0.5 * a @ b^T + 2 * c, a [2,3], b [4,3], c [4] */
  mw_buf at[3] = {mw_attr_float("alpha", 0.5f), mw_attr_float("beta", 2.0f), mw_attr_int("transB", 1)};
  mw_buf nd = mw_node("Gemm", "a,b,c", "y", at, 3);
  unsigned seed = 1;
  float a[6], b[12], cc[4], want[8];
  for (int i = 0; i < 6; i++) a[i] = frand(&seed);
  for (int i = 0; i < 12; i++) b[i] = frand(&seed);
  for (int i = 0; i < 4; i++) cc[i] = frand(&seed);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      float s = 0;
      for (int k = 0; k < 3; k++) s += a[i * 3 + k] * b[j * 3 + k];
      want[i * 4 + j] = 0.5f * s + 2 * cc[j];
    }
  mw_buf init = mw_tensor("c", MW_F32, 1, DIMS(4), cc, sizeof cc);
  const char *nm[2] = {"a", "b"};
  mw_buf m = one_node(11, nd, 2, nm, (int[]){2, 2}, (const int64_t *[]){DIMS(2, 3), DIMS(4, 3)}, &init, 1);
  rlx_named_tensor in[2] = {tin("a", a, RLX_F32, 2, DIMS(2, 3)), tin("b", b, RLX_F32, 2, DIMS(4, 3))};
  runner r;
  if (mw_run(&m, NULL, in, 2, &r)) CHECK(out_close_f32(&r.outs[0], want, 8, 1e-5));
  runner_free(&r);
  free(m.p);
}

/* Direct convolution / pooling references (NCHW, one image, one channel group). */
static float conv_ref(const float *x, int C, int H, int W, const float *w, int M, int kh, int kw, int m, int oh, int ow,
                      int sh, int sw, int ph, int pw) {
  float s = 0;
  for (int cc = 0; cc < C; cc++)
    for (int i = 0; i < kh; i++)
      for (int j = 0; j < kw; j++) {
        int y = oh * sh - ph + i, xx = ow * sw - pw + j;
        if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
        s += x[(cc * H + y) * W + xx] * w[((m * C + cc) * kh + i) * kw + j];
      }
  (void)M;
  return s;
}

static void test_conv(void) {
  /* Conv 2 -> 3 channels, 3x3 kernel, stride 2, pads [1, 0, 2, 1] (asymmetric) + bias */
  mw_buf at[3] = {mw_attr_ints("pads", 4, DIMS(1, 0, 2, 1)), mw_attr_ints("strides", 2, DIMS(2, 2)),
                  mw_attr_ints("kernel_shape", 2, DIMS(3, 3))};
  mw_buf nd = mw_node("Conv", "x,w,b", "y", at, 3);
  unsigned seed = 7;
  float x[2 * 5 * 6], w[3 * 2 * 9], b[3];
  for (int i = 0; i < NELEM(x); i++) x[i] = frand(&seed);
  for (int i = 0; i < NELEM(w); i++) w[i] = frand(&seed);
  for (int i = 0; i < 3; i++) b[i] = frand(&seed);
  int H = 5, W = 6, Ho = (H + 1 + 2 - 3) / 2 + 1, Wo = (W + 0 + 1 - 3) / 2 + 1;
  float want[3 * 4 * 3];
  CHECK(Ho == 3 && Wo == 3);
  for (int mm = 0; mm < 3; mm++)
    for (int i = 0; i < Ho; i++)
      for (int j = 0; j < Wo; j++)
        want[(mm * Ho + i) * Wo + j] = conv_ref(x, 2, H, W, w, 3, 3, 3, mm, i, j, 2, 2, 1, 0) + b[mm];
  mw_buf inits[2] = {mw_tensor("w", MW_F32, 4, DIMS(3, 2, 3, 3), w, sizeof w),
                     mw_tensor("b", MW_F32, 1, DIMS(3), b, sizeof b)};
  const char *nm[1] = {"x"};
  mw_buf m = one_node(11, nd, 1, nm, (int[]){4}, (const int64_t *[]){DIMS(1, 2, 5, 6)}, inits, 2);
  rlx_named_tensor in = tin("x", x, RLX_F32, 4, DIMS(1, 2, 5, 6));
  runner r;
  if (mw_run(&m, NULL, &in, 1, &r)) CHECK(out_close_f32(&r.outs[0], want, (size_t)(3 * Ho * Wo), 1e-5));
  runner_free(&r);
  free(m.p);

  /* Conv1d with auto_pad SAME_UPPER: out = ceil(7 / 2) = 4, total pad = 3*... */
  mw_buf at1[2] = {mw_attr_str("auto_pad", "SAME_UPPER"), mw_attr_ints("strides", 1, DIMS(2))};
  mw_buf nd1 = mw_node("Conv", "x,w", "y", at1, 2);
  float x1[7] = {1, 2, 3, 4, 5, 6, 7}, w1[3] = {1, 10, 100};
  /* total pad = (4-1)*2 + 3 - 7 = 2 -> begin 1, end 1 */
  float want1[4];
  for (int o = 0; o < 4; o++) {
    float s = 0;
    for (int k = 0; k < 3; k++) {
      int p = o * 2 - 1 + k;
      if (p >= 0 && p < 7) s += x1[p] * w1[k];
    }
    want1[o] = s;
  }
  mw_buf init1 = mw_tensor("w", MW_F32, 3, DIMS(1, 1, 3), w1, sizeof w1);
  m = one_node(11, nd1, 1, nm, (int[]){3}, (const int64_t *[]){DIMS(1, 1, 7)}, &init1, 1);
  in = tin("x", x1, RLX_F32, 3, DIMS(1, 1, 7));
  if (mw_run(&m, NULL, &in, 1, &r)) CHECK(out_close_f32(&r.outs[0], want1, 4, 1e-6));
  runner_free(&r);
  free(m.p);
}

static void test_pool(void) {
  /* AveragePool 3x3 stride 2, pads 1, ceil_mode, count_include_pad = 0 on a 6x6 image */
  mw_buf at[4] = {mw_attr_ints("kernel_shape", 2, DIMS(3, 3)), mw_attr_ints("strides", 2, DIMS(2, 2)),
                  mw_attr_ints("pads", 4, DIMS(1, 1, 1, 1)), mw_attr_int("ceil_mode", 1)};
  mw_buf nd = mw_node("AveragePool", "x", "y", at, 4);
  float x[36];
  for (int i = 0; i < 36; i++) x[i] = (float)(i % 7) - 2.0f;
  /* out = ceil((6 + 2 - 3) / 2) + 1 = 4; the last window starts at 6 - 1 = 5 < 6 + 1 */
  float want[16];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      float s = 0;
      int n = 0;
      for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
          int y = i * 2 - 1 + a, xx = j * 2 - 1 + b;
          if (y < 0 || y >= 6 || xx < 0 || xx >= 6) continue;
          s += x[y * 6 + xx];
          n++;
        }
      want[i * 4 + j] = s / (float)n;
    }
  const char *nm[1] = {"x"};
  mw_buf m = one_node(11, nd, 1, nm, (int[]){4}, (const int64_t *[]){DIMS(1, 1, 6, 6)}, NULL, 0);
  rlx_named_tensor in = tin("x", x, RLX_F32, 4, DIMS(1, 1, 6, 6));
  runner r;
  if (mw_run(&m, NULL, &in, 1, &r)) CHECK(out_close_f32(&r.outs[0], want, 16, 1e-6));
  runner_free(&r);
  free(m.p);

  /* MaxPool 3-D with dilation 2 (pooled by slices) */
  mw_buf at3[2] = {mw_attr_ints("kernel_shape", 3, DIMS(2, 2, 2)), mw_attr_ints("dilations", 3, DIMS(2, 1, 2))};
  mw_buf nd3 = mw_node("MaxPool", "x", "y", at3, 2);
  float x3[4 * 3 * 4];
  for (int i = 0; i < NELEM(x3); i++) x3[i] = (float)((i * 37) % 23);
  float want3[2 * 2 * 2];
  for (int d = 0; d < 2; d++)
    for (int h = 0; h < 2; h++)
      for (int w = 0; w < 2; w++) {
        float mx = -INFINITY;
        for (int a = 0; a < 2; a++)
          for (int b = 0; b < 2; b++)
            for (int e = 0; e < 2; e++) mx = fmaxf(mx, x3[((d + 2 * a) * 3 + (h + b)) * 4 + (w + 2 * e)]);
        want3[(d * 2 + h) * 2 + w] = mx;
      }
  m = one_node(12, nd3, 1, nm, (int[]){5}, (const int64_t *[]){DIMS(1, 1, 4, 3, 4)}, NULL, 0);
  in = tin("x", x3, RLX_F32, 5, DIMS(1, 1, 4, 3, 4));
  if (mw_run(&m, NULL, &in, 1, &r)) CHECK(out_close_f32(&r.outs[0], want3, 8, 0));
  runner_free(&r);
  free(m.p);
}

static void test_shape_ops(void) {
  /* Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape; Transpose; Slice with a negative
   * step; Gather with a negative index. Everything shape-related must fold at import. */
  int64_t zero = 0, minus1[1] = {-1}, starts[1] = {-1}, ends[1] = {-100}, axes[1] = {1}, steps[1] = {-2},
          gidx[2] = {-1, 0};
  mw_buf inits[7] = {mw_tensor("i0", MW_I64, 0, NULL, &zero, 8),     mw_tensor("m1", MW_I64, 1, DIMS(1), minus1, 8),
                     mw_tensor("ax0", MW_I64, 1, DIMS(1), &zero, 8), mw_tensor("st", MW_I64, 1, DIMS(1), starts, 8),
                     mw_tensor("en", MW_I64, 1, DIMS(1), ends, 8),   mw_tensor("ax", MW_I64, 1, DIMS(1), axes, 8),
                     mw_tensor("sp", MW_I64, 1, DIMS(1), steps, 8)};
  mw_buf gi = mw_tensor("gi", MW_I64, 1, DIMS(2), gidx, 16);
  mw_buf ga[1] = {mw_attr_int("axis", 0)}, ta[1] = {mw_attr_ints("perm", 2, DIMS(1, 0))},
         ca[1] = {mw_attr_int("axis", 0)};
  mw_buf nodes[8] = {
      mw_node("Shape", "x", "s", NULL, 0),
      mw_node("Gather", "s,i0", "d0", ga, 1),
      mw_node("Unsqueeze", "d0,ax0", "d0u", NULL, 0),
      mw_node("Concat", "d0u,m1", "shp", ca, 1),
      mw_node("Reshape", "x,shp", "r", NULL, 0),
      mw_node("Transpose", "r", "t", ta, 1),
      mw_node("Slice", "t,st,en,ax,sp", "sl", NULL, 0),
      mw_node("Gather", "sl,gi", "y", NULL, 0),
  };
  mw_buf all_inits[8];
  for (int i = 0; i < 7; i++) all_inits[i] = inits[i];
  all_inits[7] = gi;
  mw_buf in = mw_tensor_value("x", MW_F32, 3, DIMS(2, 3, 4)), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(13, graph("shape", (gparts){nodes, all_inits, &in, &out, 8, 8, 1, 1}));
  float x[24];
  for (int i = 0; i < 24; i++) x[i] = (float)i;
  /* r = [2, 12], t = [12, 2] (t[i][j] = x[j*12 + i]), sl = t[:, 1::-2] = column 1 only -> [12, 1]
   * (start -1 -> 1, end -100 -> clamped to -1: indices 1), y = sl[[-1, 0]] = rows 11, 0 */
  float want[2] = {x[1 * 12 + 11], x[1 * 12 + 0]};
  rlx_named_tensor ti = tin("x", x, RLX_F32, 3, DIMS(2, 3, 4));
  runner r;
  if (mw_run(&m, NULL, &ti, 1, &r)) {
    CHECK(out_close_f32(&r.outs[0], want, 2, 0));
    CHECK(r.outs[0].shape.rank == 2 && r.outs[0].shape.dims[0] == 2 && r.outs[0].shape.dims[1] == 1);
    bool shape_left = false;
    for (uint32_t i = 0; i < rlx_graph_node_count(r.g); i++) shape_left |= rlx_graph_node(r.g, i)->op == RLX_OP_Concat;
    CHECK(!shape_left); /* the shape computation was folded away */
  }
  runner_free(&r);
  free(m.p);
}

static void test_reduce_topk(void) {
  /* ReduceSum with axes as input (opset 13), keepdims = 0; ArgMax with select_last_index; TopK
   * smallest 2 along axis 0 (values and indices) */
  int64_t ax[1] = {1}, k[1] = {2};
  mw_buf inits[2] = {mw_tensor("ax", MW_I64, 1, DIMS(1), ax, 8), mw_tensor("k", MW_I64, 1, DIMS(1), k, 8)};
  mw_buf ra[1] = {mw_attr_int("keepdims", 0)}, aa[2] = {mw_attr_int("axis", 1), mw_attr_int("select_last_index", 1)},
         ta[2] = {mw_attr_int("axis", 0), mw_attr_int("largest", 0)};
  mw_buf nodes[3] = {mw_node("ReduceSum", "x,ax", "s", ra, 1), mw_node("ArgMax", "x", "am", aa, 2),
                     mw_node("TopK", "x,k", "tv,ti", ta, 2)};
  mw_buf in = mw_tensor_value("x", MW_F32, 2, DIMS(3, 4));
  mw_buf outs[4] = {mw_tensor_value("s", MW_F32, 1, DIMS(3)), mw_tensor_value("am", MW_I64, 2, DIMS(3, 1)),
                    mw_tensor_value("tv", MW_F32, 2, DIMS(2, 4)), mw_tensor_value("ti", MW_I64, 2, DIMS(2, 4))};
  mw_buf m = mw_model(13, graph("red", (gparts){nodes, inits, &in, outs, 3, 2, 1, 4}));
  float x[12] = {3, 1, 3, 0, -1, 5, 5, 2, 4, 4, 0, 4};
  float ws[3] = {7, 11, 12};
  int64_t wam[3] = {2, 2, 3};
  float wtv[8] = {-1, 1, 0, 0, 3, 4, 3, 2};
  int64_t wti[8] = {1, 0, 2, 0, 0, 2, 0, 1};
  rlx_named_tensor ti = tin("x", x, RLX_F32, 2, DIMS(3, 4));
  runner r;
  if (mw_run(&m, NULL, &ti, 1, &r) && r.n_outs == 4) {
    CHECK(out_close_f32(&r.outs[0], ws, 3, 0));
    CHECK(r.outs[1].shape.dtype == RLX_I64 && memcmp(r.outs[1].data, wam, sizeof wam) == 0);
    CHECK(out_close_f32(&r.outs[2], wtv, 8, 0));
    CHECK(r.outs[3].shape.dtype == RLX_I64 && memcmp(r.outs[3].data, wti, sizeof wti) == 0);
  }
  runner_free(&r);
  free(m.p);
}

static void test_softmax_axis(void) {
  /* opset 11: Softmax(axis=1) normalizes over the flattened [1:] dims; opset 13: over axis 1 */
  float x[8] = {0, 1, 2, 3, 1, 1, 1, 1};
  for (int opset = 11; opset <= 13; opset += 2) {
    mw_buf at[1] = {mw_attr_int("axis", 1)};
    mw_buf nd = mw_node("Softmax", "x", "y", at, 1);
    const char *nm[1] = {"x"};
    mw_buf m = one_node(opset, nd, 1, nm, (int[]){3}, (const int64_t *[]){DIMS(1, 2, 4)}, NULL, 0);
    float want[8];
    if (opset == 11) {
      double s = 0;
      for (int i = 0; i < 8; i++) s += exp(x[i]);
      for (int i = 0; i < 8; i++) want[i] = (float)(exp(x[i]) / s);
    } else {
      for (int j = 0; j < 4; j++) {
        double s = exp(x[j]) + exp(x[4 + j]);
        want[j] = (float)(exp(x[j]) / s);
        want[4 + j] = (float)(exp(x[4 + j]) / s);
      }
    }
    rlx_named_tensor ti = tin("x", x, RLX_F32, 3, DIMS(1, 2, 4));
    runner r;
    if (mw_run(&m, NULL, &ti, 1, &r)) CHECK(out_close_f32(&r.outs[0], want, 8, 1e-6));
    runner_free(&r);
    free(m.p);
  }
}

static void test_batchnorm_layernorm(void) {
  /* BatchNormalization (inference) on NCHW; LayerNormalization over the last two axes */
  float sc[2] = {2, 0.5f}, bi[2] = {1, -1}, mean[2] = {0.5f, -2}, var[2] = {4, 0.25f};
  mw_buf inits[4] = {mw_tensor("sc", MW_F32, 1, DIMS(2), sc, 8), mw_tensor("bi", MW_F32, 1, DIMS(2), bi, 8),
                     mw_tensor("mu", MW_F32, 1, DIMS(2), mean, 8), mw_tensor("va", MW_F32, 1, DIMS(2), var, 8)};
  mw_buf bat[1] = {mw_attr_float("epsilon", 0.0f)};
  mw_buf lat[2] = {mw_attr_int("axis", -2), mw_attr_float("epsilon", 0.0f)};
  float g6[6] = {1, 2, 3, 4, 5, 6};
  mw_buf ginit = mw_tensor("g6", MW_F32, 2, DIMS(2, 3), g6, sizeof g6);
  mw_buf all[5] = {inits[0], inits[1], inits[2], inits[3], ginit};
  mw_buf nodes[2] = {mw_node("BatchNormalization", "x,sc,bi,mu,va", "bn", bat, 1),
                     mw_node("LayerNormalization", "bn,g6", "y", lat, 2)};
  mw_buf in = mw_tensor_value("x", MW_F32, 4, DIMS(1, 2, 2, 3)), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(17, graph("norm", (gparts){nodes, all, &in, &out, 2, 5, 1, 1}));
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)(i * i % 5) - 1.5f;
  float bn[12], want[12];
  for (int ch = 0; ch < 2; ch++)
    for (int i = 0; i < 6; i++) bn[ch * 6 + i] = sc[ch] * (x[ch * 6 + i] - mean[ch]) / sqrtf(var[ch]) + bi[ch];
  for (int ch = 0; ch < 2; ch++) {
    double mu = 0, v = 0;
    for (int i = 0; i < 6; i++) mu += bn[ch * 6 + i];
    mu /= 6;
    for (int i = 0; i < 6; i++) v += (bn[ch * 6 + i] - mu) * (bn[ch * 6 + i] - mu);
    v /= 6;
    for (int i = 0; i < 6; i++) want[ch * 6 + i] = (float)((bn[ch * 6 + i] - mu) / sqrt(v) * g6[i]);
  }
  rlx_named_tensor ti = tin("x", x, RLX_F32, 4, DIMS(1, 2, 2, 3));
  runner r;
  if (mw_run(&m, NULL, &ti, 1, &r)) CHECK(out_close_f32(&r.outs[0], want, 12, 1e-5));
  runner_free(&r);
  free(m.p);
}

/* ---- control flow ---- */

/* A branch graph: y_out = Add(captured, k) for a constant k. */
static mw_buf branch(const char *name, const char *cap, float k) {
  mw_buf kt = mw_tensor(NULL, MW_F32, 0, NULL, &k, 4);
  mw_buf ca[1] = {mw_attr_tensor("value", kt)};
  mw_buf nodes[2] = {mw_node("Constant", "", name[0] == 't' ? "kt" : "ke", ca, 1),
                     mw_node("Add", name[0] == 't' ? "q,kt" : "q,ke", name[0] == 't' ? "yt" : "ye", NULL, 0)};
  (void)cap;
  mw_buf out = {0};
  mw_str(&out, 1, name[0] == 't' ? "yt" : "ye");
  return graph(name, (gparts){nodes, NULL, NULL, &out, 2, 0, 0, 1});
}

static void test_if(void) {
  /* y = If(c) then q + 10 else q - 5, with q = x * 2 captured from the outer graph */
  for (int known = 0; known < 2; known++) {
    mw_buf ia[2] = {mw_attr_graph("then_branch", branch("then", "q", 10)),
                    mw_attr_graph("else_branch", branch("else", "q", -5))};
    mw_buf nodes[2] = {mw_node("Mul", "x,two", "q", NULL, 0), mw_node("If", "c", "y", ia, 2)};
    float two = 2;
    uint8_t cval = 0;
    mw_buf inits[2] = {mw_tensor("two", MW_F32, 0, NULL, &two, 4), mw_tensor("c", MW_BOOL, 0, NULL, &cval, 1)};
    mw_buf ins[2] = {mw_tensor_value("x", MW_F32, 1, DIMS(3)), mw_tensor_value("c", MW_BOOL, 0, NULL)};
    mw_buf out = mw_tensor_value("y", MW_F32, 1, DIMS(3));
    /* known: c is an initializer (constant) -> the else branch is inlined; else a graph input */
    mw_buf m = mw_model(13, graph("ifg", (gparts){nodes, inits, ins, &out, 2, known ? 2 : 1, known ? 1 : 2, 1}));
    if (!known)
      free(inits[1].p);
    else
      free(ins[1].p);
    float x[3] = {1, -2, 3};
    for (uint8_t c = 0; c < 2; c++) {
      rlx_named_tensor in[2] = {tin("x", x, RLX_F32, 1, DIMS(3)), tin("c", &c, RLX_BOOL, 0, NULL)};
      float want[3];
      bool then = known ? false : c != 0;
      for (int i = 0; i < 3; i++) want[i] = x[i] * 2 + (then ? 10.0f : -5.0f);
      runner r;
      if (mw_run(&m, NULL, in, known ? 1 : 2, &r)) {
        CHECK(out_close_f32(&r.outs[0], want, 3, 0));
        bool has_if = false;
        for (uint32_t i = 0; i < rlx_graph_node_count(r.g); i++) has_if |= rlx_graph_node(r.g, i)->op == RLX_OP_If;
        CHECK(has_if == !known);
      }
      runner_free(&r);
      if (known) break;
    }
    free(m.p);
  }
}

static void test_loop_unrolled(void) {
  /* Loop M=4: v = v * 2 + i; scan output collects v each iteration */
  mw_buf b_nodes[4] = {mw_node("Mul", "v_in,two", "t", NULL, 0),
                       mw_node("Cast", "i", "fi", (mw_buf[]){mw_attr_int("to", MW_F32)}, 1),
                       mw_node("Add", "t,fi", "v_out", NULL, 0), mw_node("Identity", "cond_in", "cond_out", NULL, 0)};
  mw_buf b_ins[3] = {mw_tensor_value("i", MW_I64, 0, NULL), mw_tensor_value("cond_in", MW_BOOL, 0, NULL),
                     mw_tensor_value("v_in", MW_F32, 1, DIMS(2))};
  mw_buf b_outs[3] = {mw_tensor_value("cond_out", MW_BOOL, 0, NULL), mw_tensor_value("v_out", MW_F32, 1, DIMS(2)),
                      mw_tensor_value("v_out", MW_F32, 1, DIMS(2))};
  float two = 2;
  mw_buf b_init = mw_tensor("two", MW_F32, 0, NULL, &two, 4);
  mw_buf body = graph("body", (gparts){b_nodes, &b_init, b_ins, b_outs, 4, 1, 3, 3});
  int64_t M = 4;
  mw_buf inits[1] = {mw_tensor("M", MW_I64, 0, NULL, &M, 8)};
  mw_buf la[1] = {mw_attr_graph("body", body)};
  mw_buf nd = mw_node("Loop", "M,,v0", "vf,scan", la, 1);
  mw_buf in = mw_tensor_value("v0", MW_F32, 1, DIMS(2));
  mw_buf outs[2] = {mw_tensor_value("vf", MW_F32, 1, DIMS(2)), mw_tensor_value("scan", MW_F32, 2, DIMS(4, 2))};
  mw_buf m = mw_model(13, graph("loop", (gparts){&nd, inits, &in, outs, 1, 1, 1, 2}));
  float v0[2] = {1, -1}, v[2] = {1, -1}, scan[8];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) {
      v[j] = v[j] * 2 + (float)i;
      scan[i * 2 + j] = v[j];
    }
  rlx_named_tensor ti = tin("v0", v0, RLX_F32, 1, DIMS(2));
  runner r;
  if (mw_run(&m, NULL, &ti, 1, &r) && r.n_outs == 2) {
    CHECK(out_close_f32(&r.outs[0], v, 2, 0));
    CHECK(out_close_f32(&r.outs[1], scan, 8, 0));
  }
  runner_free(&r);
  free(m.p);
}

static void test_einsum_resize_rnn_scan(void) {
  /* Einsum "bij,bkj->bik" (batched A @ B^T) */
  mw_buf ea[1] = {mw_attr_str("equation", "bij,bkj->bik")};
  mw_buf ne = mw_node("Einsum", "a,b", "y", ea, 1);
  const char *nm2[2] = {"a", "b"};
  mw_buf m = one_node(12, ne, 2, nm2, (int[]){3, 3}, (const int64_t *[]){DIMS(2, 2, 3), DIMS(2, 4, 3)}, NULL, 0);
  unsigned seed = 3;
  float a[12], b[24], want[16];
  for (int i = 0; i < 12; i++) a[i] = frand(&seed);
  for (int i = 0; i < 24; i++) b[i] = frand(&seed);
  for (int bb = 0; bb < 2; bb++)
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 4; k++) {
        float acc = 0;
        for (int j = 0; j < 3; j++) acc += a[(bb * 2 + i) * 3 + j] * b[(bb * 4 + k) * 3 + j];
        want[(bb * 2 + i) * 4 + k] = acc;
      }
  rlx_named_tensor in2[2] = {tin("a", a, RLX_F32, 3, DIMS(2, 2, 3)), tin("b", b, RLX_F32, 3, DIMS(2, 4, 3))};
  runner r;
  if (mw_run(&m, NULL, in2, 2, &r)) CHECK(out_close_f32(&r.outs[0], want, 16, 1e-5));
  runner_free(&r);
  free(m.p);

  /* Resize linear, half_pixel, x2 on the last axis of [1, 4] */
  float sc[2] = {1, 2};
  mw_buf rinit = mw_tensor("sc", MW_F32, 1, DIMS(2), sc, sizeof sc);
  mw_buf ra[1] = {mw_attr_str("mode", "linear")};
  mw_buf nr = mw_node("Resize", "x,,sc", "y", ra, 1);
  const char *nm1[1] = {"x"};
  m = one_node(13, nr, 1, nm1, (int[]){2}, (const int64_t *[]){DIMS(1, 4)}, &rinit, 1);
  float x[4] = {0, 10, 20, 40}, rw[8];
  for (int o = 0; o < 8; o++) { /* src = (o + 0.5) / 2 - 0.5, clamped to [0, 3] */
    double sx = (o + 0.5) / 2 - 0.5;
    if (sx < 0) sx = 0;
    if (sx > 3) sx = 3;
    int x0 = (int)floor(sx), x1 = x0 + 1 < 4 ? x0 + 1 : 3;
    rw[o] = (float)(x[x0] * (1 - (sx - x0)) + x[x1] * (sx - x0));
  }
  rlx_named_tensor ti = tin("x", x, RLX_F32, 2, DIMS(1, 4));
  if (mw_run(&m, NULL, &ti, 1, &r)) CHECK(out_close_f32(&r.outs[0], rw, 8, 1e-6));
  runner_free(&r);
  free(m.p);

  /* RNN (tanh), 3 steps, batch 1, input 2, hidden 2, with bias; Y_h output */
  float W[4] = {0.5f, -1, 0.25f, 2}, R[4] = {1, 0.5f, -0.5f, 0.25f}, B[4] = {0.1f, -0.2f, 0.05f, 0.3f};
  mw_buf rinits[3] = {mw_tensor("W", MW_F32, 3, DIMS(1, 2, 2), W, sizeof W),
                      mw_tensor("R", MW_F32, 3, DIMS(1, 2, 2), R, sizeof R),
                      mw_tensor("B", MW_F32, 2, DIMS(1, 4), B, sizeof B)};
  mw_buf rna[1] = {mw_attr_int("hidden_size", 2)};
  mw_buf nrn = mw_node("RNN", "x,W,R,B", ",yh", rna, 1);
  mw_buf rin = mw_tensor_value("x", MW_F32, 3, DIMS(3, 1, 2)), rout = {0};
  mw_str(&rout, 1, "yh");
  m = mw_model(14, graph("rnn", (gparts){&nrn, rinits, &rin, &rout, 1, 3, 1, 1}));
  float xs[6] = {1, 0, -1, 2, 0.5f, 0.5f}, h[2] = {0, 0};
  for (int t = 0; t < 3; t++) {
    float hn[2];
    for (int i = 0; i < 2; i++) {
      double acc = B[i] + B[2 + i];
      for (int j = 0; j < 2; j++) acc += xs[t * 2 + j] * W[i * 2 + j] + h[j] * R[i * 2 + j];
      hn[i] = (float)tanh(acc);
    }
    h[0] = hn[0], h[1] = hn[1];
  }
  ti = tin("x", xs, RLX_F32, 3, DIMS(3, 1, 2));
  if (mw_run(&m, NULL, &ti, 1, &r)) CHECK(out_close_f32(&r.outs[0], h, 2, 1e-5));
  runner_free(&r);
  free(m.p);

  /* Scan: running sum of the rows of x [3, 2] (state [2], scan output = state after each row) */
  mw_buf sb_nodes[2] = {mw_node("Add", "s_in,row", "s_out", NULL, 0), mw_node("Identity", "s_out", "e", NULL, 0)};
  mw_buf sb_ins[2] = {mw_tensor_value("s_in", MW_F32, 1, DIMS(2)), mw_tensor_value("row", MW_F32, 1, DIMS(2))};
  mw_buf sb_outs[2] = {mw_tensor_value("s_out", MW_F32, 1, DIMS(2)), mw_tensor_value("e", MW_F32, 1, DIMS(2))};
  mw_buf sbody = graph("sbody", (gparts){sb_nodes, NULL, sb_ins, sb_outs, 2, 0, 2, 2});
  mw_buf sa[2] = {mw_attr_graph("body", sbody), mw_attr_int("num_scan_inputs", 1)};
  mw_buf ns = mw_node("Scan", "s0,x", "final,all", sa, 2);
  mw_buf s_ins[2] = {mw_tensor_value("s0", MW_F32, 1, DIMS(2)), mw_tensor_value("x", MW_F32, 2, DIMS(3, 2))};
  mw_buf s_outs[2] = {mw_tensor_value("final", MW_F32, 1, DIMS(2)), mw_tensor_value("all", MW_F32, 2, DIMS(3, 2))};
  m = mw_model(11, graph("scan", (gparts){&ns, NULL, s_ins, s_outs, 1, 0, 2, 2}));
  float s0[2] = {1, -1}, sx[6] = {1, 2, 3, 4, 5, 6}, all[6], fin[2] = {1, -1};
  for (int t = 0; t < 3; t++)
    for (int j = 0; j < 2; j++) all[t * 2 + j] = fin[j] += sx[t * 2 + j];
  rlx_named_tensor sin2[2] = {tin("s0", s0, RLX_F32, 1, DIMS(2)), tin("x", sx, RLX_F32, 2, DIMS(3, 2))};
  if (mw_run(&m, NULL, sin2, 2, &r) && r.n_outs == 2) {
    CHECK(out_close_f32(&r.outs[0], fin, 2, 0));
    CHECK(out_close_f32(&r.outs[1], all, 6, 0));
  }
  runner_free(&r);
  free(m.p);
}

/* ---- options: symbolic dims, input values, params ---- */

static void test_symbolic_and_values(void) {
  /* x [N, 3] -> Reshape(x, shape) with shape a graph input */
  mw_buf nd = mw_node("Reshape", "x,shape", "y", NULL, 0);
  mw_buf ins[2] = {mw_tensor_value("x", MW_F32, 2, DIMS(-1, 3)), mw_tensor_value("shape", MW_I64, 1, DIMS(2))};
  mw_buf out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(13, graph("sym", (gparts){&nd, NULL, ins, &out, 1, 0, 2, 1}));
  rlx_graph *g = NULL;
  /* without values: Reshape's shape is only known at run time -> one gap naming the input */
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "Reshape: input 1 (shape) must be known at import time");
  float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t shp[2] = {3, 2};
  rlx_named_tensor in[2] = {tin("x", x, RLX_F32, 2, DIMS(2, 3)), tin("shape", shp, RLX_I64, 1, DIMS(2))};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = in;
  o.n_inputs = 2;
  runner r;
  if (mw_run(&m, &o, in, 2, &r)) {
    CHECK(r.outs[0].shape.rank == 2 && r.outs[0].shape.dims[0] == 3 && r.outs[0].shape.dims[1] == 2);
    CHECK(out_close_f32(&r.outs[0], x, 6, 0));
  }
  runner_free(&r);
  /* a given shape must agree with the model's static dims */
  rlx_named_tensor bad = tin("x", x, RLX_F32, 2, DIMS(3, 2));
  o.inputs = &bad;
  o.n_inputs = 1;
  CHECK_ERR(mw_import(&m, &o, &g), RLX_ERR_SHAPE, "dim 1 is 3 in the model but 2 in the given tensor");
  free(m.p);

  /* an unbound dim_param stays symbolic; a dim binding makes it static */
  mw_buf nr = mw_node("Relu", "x", "y", NULL, 0);
  mw_buf in1 = mw_tensor_value("x", MW_F32, 2, DIMS(-1, -2)), out1 = {0};
  mw_str(&out1, 1, "y");
  m = mw_model(13, graph("sym2", (gparts){&nr, NULL, &in1, &out1, 1, 0, 1, 1}));
  CHECK_OK(mw_import(&m, NULL, &g));
  if (g) {
    const rlx_shape *s = &rlx_graph_node(g, 0)->shape;
    CHECK(!rlx_dim_is_static(s->dims[0]) && !rlx_dim_is_static(s->dims[1]) && s->dims[0] != s->dims[1]);
  }
  rlx_graph_free(g);
  const char *dn[2] = {"N", "M"};
  int64_t dv[2] = {5, 7};
  rlx_onnx_options_init(&o);
  o.dim_names = dn;
  o.dim_values = dv;
  o.n_dims = 2;
  CHECK_OK(mw_import(&m, &o, &g));
  if (g) CHECK(rlx_graph_node(g, 0)->shape.dims[0] == 5 && rlx_graph_node(g, 0)->shape.dims[1] == 7);
  rlx_graph_free(g);
  free(m.p);

  /* Shape of a symbolic tensor is a gap that says to bind the dims */
  mw_buf ns = mw_node("Shape", "x", "y", NULL, 0);
  in1 = mw_tensor_value("x", MW_F32, 2, DIMS(-1, 3));
  out1 = (mw_buf){0};
  mw_str(&out1, 1, "y");
  m = mw_model(13, graph("sym3", (gparts){&ns, NULL, &in1, &out1, 1, 0, 1, 1}));
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "symbolic dims; bind them");
  free(m.p);
}

static void test_params(void) {
  float w[4] = {1, 2, 3, 4};
  mw_buf init = mw_tensor("w", MW_F32, 1, DIMS(4), w, sizeof w);
  mw_buf nd = mw_node("Mul", "x,w", "y", NULL, 0);
  const char *nm[1] = {"x"};
  mw_buf m = one_node(13, nd, 1, nm, (int[]){1}, (const int64_t *[]){DIMS(4)}, &init, 1);
  rlx_onnx_weights wt = {0};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.initializers_as_constants = false;
  o.weights = &wt;
  rlx_graph *g = NULL;
  CHECK_OK(mw_import(&m, &o, &g));
  CHECK(g && rlx_graph_find_leaf(g, RLX_OP_Param, "w") != RLX_NO_ID);
  CHECK(wt.n == 1 && wt.v && strcmp(wt.v[0].name, "w") == 0 && memcmp(wt.v[0].tensor.data, w, sizeof w) == 0);
  rlx_graph_free(g);
  rlx_onnx_weights_free(&wt, NULL);
  free(m.p);
}

static void test_unsorted_nodes(void) {
  /* nodes listed consumer-first */
  mw_buf nodes[2] = {mw_node("Neg", "t", "y", NULL, 0), mw_node("Abs", "x", "t", NULL, 0)};
  mw_buf in = mw_tensor_value("x", MW_F32, 1, DIMS(3)), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(13, graph("uns", (gparts){nodes, NULL, &in, &out, 2, 0, 1, 1}));
  float x[3] = {1, -2, 0}, want[3] = {-1, -2, 0};
  rlx_named_tensor ti = tin("x", x, RLX_F32, 1, DIMS(3));
  runner r;
  if (mw_run(&m, NULL, &ti, 1, &r)) CHECK(out_close_f32(&r.outs[0], want, 3, 0));
  runner_free(&r);
  free(m.p);
}

static void test_report_all_gaps(void) {
  /* two LSTM-like unknown ops, an op from another domain, an unsupported attribute value and an
   * unsupported dtype: every gap is listed at once */
  mw_buf dom = mw_node("Foo", "x", "a", NULL, 0);
  mw_str(&dom, 7, "com.example");
  mw_buf cast_at[1] = {mw_attr_int("to", MW_STR)};
  mw_buf nodes[5] = {mw_node_named("u1", "Frobnicate", "x", "b", NULL, 0),
                     mw_node_named("u2", "Frobnicate", "x", "c", NULL, 0), dom,
                     mw_node_named("c1", "Cast", "x", "d", cast_at, 1), mw_node("Sum", "a,b,c", "y", NULL, 0)};
  mw_buf ins[2] = {mw_tensor_value("x", MW_F32, 1, DIMS(2)), mw_tensor_value("u16", MW_U16, 1, DIMS(2))};
  mw_buf outs[2] = {mw_tensor_value("y", MW_F32, 1, DIMS(2)), mw_tensor_value("d", MW_STR, 1, DIMS(2))};
  mw_buf m = mw_model(13, graph("gaps", (gparts){nodes, NULL, ins, outs, 5, 0, 2, 2}));
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "4 unsupported op/opset/dtype gaps");
  const char *msg = rlx_last_error();
  CHECK(strstr(msg, "Frobnicate: no RLX mapping for this op [2 nodes: node \"u1\" (Frobnicate), node \"u2\"") != NULL);
  CHECK(strstr(msg, "domain \"com.example\"") != NULL);
  CHECK(strstr(msg, "Cast: cast to STRING") != NULL);
  CHECK(strstr(msg, "UINT16") != NULL);
  CHECK(g == NULL);
  /* the report API lists the same four lines */
  char dir[] = "/tmp/rlx_onnx_XXXXXX";
  if (mkdtemp(dir)) {
    char path[256];
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
      fwrite(m.p, 1, m.n, f);
      fclose(f);
    }
    char *text = NULL;
    size_t len = 0;
    uint32_t n = 0;
    CHECK_OK(rlx_onnx_report(path, NULL, NULL, &text, &len, &n));
    CHECK(n == 4 && text && strstr(text, "Frobnicate"));
    free(text);
    remove(path);
    rmdir(dir);
  }
  /* a newer opset than the table allows is a gap too */
  free(m.p);
  mw_buf na = mw_node("Relu", "x", "y", NULL, 0);
  const char *nm[1] = {"x"};
  m = one_node(99, na, 1, nm, (int[]){1}, (const int64_t *[]){DIMS(2)}, NULL, 0);
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "Relu: opset 99 is not supported");
  free(m.p);
}

/* Gaps downstream of a gap are listed too: Frobnicate (unknown) feeds Wibble (unknown), which
 * feeds Relu at an unsupported opset 99 ... all three are reported, not only the first. */
static void test_report_downstream_gaps(void) {
  mw_buf nodes[4] = {mw_node_named("u1", "Frobnicate", "x", "a", NULL, 0),
                     mw_node_named("u2", "Wibble", "a", "b", NULL, 0), mw_node_named("d1", "Foo", "b", "c", NULL, 0),
                     mw_node("Neg", "c", "y", NULL, 0)};
  mw_str(&nodes[2], 7, "com.example");
  mw_buf ins[1] = {mw_tensor_value("x", MW_F32, 1, DIMS(2))};
  mw_buf outs[1] = {mw_tensor_value("y", MW_F32, 1, DIMS(2))};
  mw_buf m = mw_model(13, graph("chain", (gparts){nodes, NULL, ins, outs, 4, 0, 1, 1}));
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "3 unsupported op/opset/dtype gaps");
  const char *msg = rlx_last_error();
  CHECK_MSG(strstr(msg, "Frobnicate: no RLX mapping") != NULL, "%s", msg);
  CHECK_MSG(strstr(msg, "Wibble: no RLX mapping") != NULL, "downstream gap missing: %s", msg);
  CHECK_MSG(strstr(msg, "domain \"com.example\"") != NULL, "downstream domain gap missing: %s", msg);
  CHECK_MSG(strstr(msg, "Neg") == NULL, "a supported node downstream of a gap is not a gap: %s", msg);
  CHECK(g == NULL);
  free(m.p);
  /* an If whose condition comes from a gap: the unknown op inside its then-branch is listed too */
  mw_buf zn = mw_node_named("z1", "Zorp", "x", "t", NULL, 0);
  mw_buf bout = mw_tensor_value("t", MW_F32, 1, DIMS(2));
  mw_buf then_g = mw_graph("then", &zn, 1, NULL, 0, &bout, 1);
  mw_buf en = mw_node("Identity", "x", "e", NULL, 0);
  mw_buf eout = mw_tensor_value("e", MW_F32, 1, DIMS(2));
  mw_buf else_g = mw_graph("else", &en, 1, NULL, 0, &eout, 1);
  mw_buf ia[2] = {mw_attr_graph("then_branch", then_g), mw_attr_graph("else_branch", else_g)};
  mw_buf n2[2] = {mw_node_named("u1", "Frobnicate", "x", "c", NULL, 0), mw_node_named("if1", "If", "c", "y", ia, 2)};
  ins[0] = mw_tensor_value("x", MW_F32, 1, DIMS(2));
  outs[0] = mw_tensor_value("y", MW_F32, 1, DIMS(2));
  m = mw_model(13, graph("ifgap", (gparts){n2, NULL, ins, outs, 2, 0, 1, 1}));
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_UNSUPPORTED, "2 unsupported op/opset/dtype gaps");
  msg = rlx_last_error();
  CHECK_MSG(strstr(msg, "Zorp: no RLX mapping for this op [1 node: node \"z1\" (Zorp)]") != NULL,
            "gap inside the body of a poisoned If missing: %s", msg);
  free(m.p);
}

/* opset_import is required; a node of a domain the model does not import is an error. */
static void test_opset_import_required(void) {
  mw_buf nd = mw_node("Relu", "x", "y", NULL, 0);
  mw_buf ins[1] = {mw_tensor_value("x", MW_F32, 1, DIMS(2))};
  mw_buf outs[1] = {mw_tensor_value("y", MW_F32, 1, DIMS(2))};
  mw_buf gr = graph("noopset", (gparts){&nd, NULL, ins, outs, 1, 0, 1, 1});
  mw_buf m = {0};
  mw_int(&m, 1, 8);
  mw_msg(&m, 7, &gr);
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "field opset_import is missing");
  CHECK(g == NULL);
  free(m.p);
  /* only the training domain imported, but a node of the default domain */
  nd = mw_node("Relu", "x", "y", NULL, 0);
  ins[0] = mw_tensor_value("x", MW_F32, 1, DIMS(2));
  outs[0] = mw_tensor_value("y", MW_F32, 1, DIMS(2));
  gr = graph("noopset", (gparts){&nd, NULL, ins, outs, 1, 0, 1, 1});
  mw_buf o = {0};
  m = (mw_buf){0};
  mw_int(&m, 1, 8);
  mw_str(&o, 1, "ai.onnx.preview.training");
  mw_int(&o, 2, 1);
  mw_msg(&m, 8, &o);
  mw_msg(&m, 7, &gr);
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "has no entry in the model's field opset_import");
  free(m.p);
  /* an import without a version */
  nd = mw_node("Relu", "x", "y", NULL, 0);
  ins[0] = mw_tensor_value("x", MW_F32, 1, DIMS(2));
  outs[0] = mw_tensor_value("y", MW_F32, 1, DIMS(2));
  gr = graph("noopset", (gparts){&nd, NULL, ins, outs, 1, 0, 1, 1});
  o = (mw_buf){0};
  m = (mw_buf){0};
  mw_int(&m, 1, 8);
  mw_str(&o, 1, "");
  mw_msg(&m, 8, &o);
  mw_msg(&m, 7, &gr);
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "opset_import[0] (domain \"\") has no field version");
  free(m.p);
}

/* The main graph lists each output once. */
static void test_duplicate_graph_output(void) {
  mw_buf nd = mw_node("Relu", "x", "y", NULL, 0);
  mw_buf ins[1] = {mw_tensor_value("x", MW_F32, 1, DIMS(2))};
  mw_buf outs[2] = {mw_tensor_value("y", MW_F32, 1, DIMS(2)), mw_tensor_value("y", MW_F32, 1, DIMS(2))};
  mw_buf m = mw_model(13, graph("dup", (gparts){&nd, NULL, ins, outs, 1, 0, 1, 2}));
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "output[1] \"y\" repeats output[0]");
  CHECK(g == NULL);
  free(m.p);
}

/* Runtime hazards from untrusted models (CVE-2021-37687 / -37691 classes): a Gather index out of
 * range and an integer division by zero are runtime errors, not reads out of bounds or a crash. */
static rlx_status run_model_status(const mw_buf *m, const rlx_named_tensor *ins, uint32_t n) {
  rlx_graph *g = NULL;
  rlx_status s = mw_import(m, NULL, &g);
  CHECK_MSG(s == RLX_OK, "import: %s", rlx_last_error());
  if (s) return s;
  rlx_executable *e = NULL;
  s = rlx_compile(g, "cpu", NULL, &e);
  CHECK_MSG(s == RLX_OK, "compile: %s", rlx_last_error());
  const rlx_tensor *outs;
  uint32_t no;
  if (s == RLX_OK) s = rlx_executable_run(e, ins, n, &outs, &no);
  rlx_executable_free(e);
  rlx_graph_free(g);
  return s;
}

static void test_runtime_hazards(void) {
  mw_buf nd = mw_node("Gather", "x,i", "y", NULL, 0);
  mw_buf ins[2] = {mw_tensor_value("x", MW_F32, 1, DIMS(3)), mw_tensor_value("i", MW_I64, 1, DIMS(2))};
  mw_buf outs[1] = {mw_tensor_value("y", MW_F32, 1, DIMS(2))};
  mw_buf m = mw_model(13, graph("gather", (gparts){&nd, NULL, ins, outs, 1, 0, 2, 1}));
  float x[3] = {1, 2, 3};
  int64_t idx[2] = {1, 3};
  rlx_named_tensor in[2] = {tin("x", x, RLX_F32, 1, DIMS(3)), tin("i", idx, RLX_I64, 1, DIMS(2))};
  CHECK_ERR(run_model_status(&m, in, 2), RLX_ERR_RUNTIME, "out of range");
  idx[1] = -4; /* ONNX allows [-3, 2] here */
  CHECK_ERR(run_model_status(&m, in, 2), RLX_ERR_RUNTIME, "out of range");
  free(m.p);
  nd = mw_node("Div", "a,b", "y", NULL, 0);
  ins[0] = mw_tensor_value("a", MW_I32, 1, DIMS(2));
  ins[1] = mw_tensor_value("b", MW_I32, 1, DIMS(2));
  outs[0] = mw_tensor_value("y", MW_I32, 1, DIMS(2));
  m = mw_model(13, graph("div", (gparts){&nd, NULL, ins, outs, 1, 0, 2, 1}));
  int32_t a[2] = {4, 5}, b[2] = {2, 0};
  rlx_named_tensor in2[2] = {tin("a", a, RLX_I32, 1, DIMS(2)), tin("b", b, RLX_I32, 1, DIMS(2))};
  CHECK_ERR(run_model_status(&m, in2, 2), RLX_ERR_RUNTIME, "by zero");
  free(m.p);
}

static void test_tensor_pb(void) {
  /* typed data: int32_data for BOOL (normalized to 0/1) and float_data */
  mw_buf t = {0};
  mw_int(&t, 1, 3);
  mw_int(&t, 2, MW_BOOL);
  mw_tag(&t, 5, 2);
  mw_varint(&t, 3);
  uint8_t vals[3] = {0, 5, 1};
  mw_put(&t, vals, 3);
  mw_str(&t, 8, "flag");
  rlx_tensor out;
  char *name = NULL;
  CHECK_OK(rlx_onnx_tensor_read(t.p, t.n, NULL, &out, &name));
  if (out.data) {
    CHECK(out.shape.dtype == RLX_BOOL && out.shape.rank == 1 && out.shape.dims[0] == 3);
    CHECK(memcmp(out.data, (uint8_t[]){0, 1, 1}, 3) == 0);
    CHECK(name && strcmp(name, "flag") == 0);
  }
  rlx_onnx_tensor_free(&out, NULL);
  free(name);
  free(t.p);
  t = (mw_buf){0};
  mw_int(&t, 1, 2);
  mw_int(&t, 2, MW_F32);
  mw_tag(&t, 4, 2);
  mw_varint(&t, 8);
  float fv[2] = {1.5f, -2};
  mw_put(&t, fv, 8);
  CHECK_OK(rlx_onnx_tensor_read(t.p, t.n, NULL, &out, NULL));
  if (out.data) CHECK(memcmp(out.data, fv, 8) == 0);
  rlx_onnx_tensor_free(&out, NULL);
  /* one value short */
  CHECK_ERR(rlx_onnx_tensor_read(t.p, t.n - 4, NULL, &out, NULL), RLX_ERR_FORMAT, "runs past the end");
  free(t.p);
}

/* ======================================================================================
 * Malformed models
 * ====================================================================================== */

static mw_buf small_model(void) {
  float w[3] = {1, 2, 3};
  mw_buf init = mw_tensor("w", MW_F32, 1, DIMS(3), w, sizeof w);
  mw_buf at[1] = {mw_attr_int("axis", 0)};
  mw_buf nodes[2] = {mw_node_named("m", "Mul", "x,w", "t", NULL, 0), mw_node_named("s", "Softmax", "t", "y", at, 1)};
  mw_buf in = mw_tensor_value("x", MW_F32, 1, DIMS(3)), out = mw_tensor_value("y", MW_F32, 1, DIMS(3));
  return mw_model(13, graph("small", (gparts){nodes, &init, &in, &out, 2, 1, 1, 1}));
}

static void test_truncation(void) {
  mw_buf m = small_model();
  rlx_graph *g = NULL;
  CHECK_OK(mw_import(&m, NULL, &g));
  rlx_graph_free(g);
  int errors = 0, oks = 0, silent = 0;
  for (size_t n = 0; n < m.n; n++) {
    /* a copy of exactly n bytes, so ASan sees any read past the end */
    uint8_t *cut = malloc(n ? n : 1);
    memcpy(cut, m.p, n);
    g = NULL;
    rlx_status s = rlx_onnx_import_bytes(cut, n, NULL, NULL, NULL, &g);
    if (s == RLX_OK)
      oks++;
    else {
      errors++;
      silent += rlx_last_error()[0] == 0;
    }
    rlx_graph_free(g);
    free(cut);
  }
  CHECK(errors > 0 && silent == 0);
  CHECK_MSG(oks < 5, "%d truncations imported", oks);
  free(m.p);
  CHECK_ERR(rlx_onnx_import_bytes((const uint8_t *)"", 0, NULL, NULL, NULL, &g), RLX_ERR_FORMAT, "empty input");
  /* > 2 GiB is refused before anything is read */
  CHECK_ERR(rlx_onnx_import_bytes((const uint8_t *)"x", ((size_t)1 << 31) + 1, NULL, NULL, NULL, &g), RLX_ERR_FORMAT,
            "2 GiB");
}

static void test_wire_errors(void) {
  rlx_graph *g = NULL;
  mw_buf b = {0};
  mw_int(&b, 7, 5); /* graph (a message) as a varint */
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "wire type 0; expected 2");
  free(b.p);
  b = (mw_buf){0};
  mw_tag(&b, 7, 2);
  mw_varint(&b, 1000); /* length past the end */
  mw_put(&b, "abc", 3);
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "runs past the end");
  free(b.p);
  b = (mw_buf){0};
  mw_tag(&b, 1, 0);
  for (int i = 0; i < 11; i++) mw_put(&b, "\xff", 1); /* an 11-byte varint */
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "bad varint");
  free(b.p);
  b = (mw_buf){0};
  mw_tag(&b, 99, 3); /* group start (an unknown field) */
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "group wire type");
  free(b.p);
  b = (mw_buf){0};
  mw_tag(&b, 99, 7); /* invalid wire type 7 */
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "invalid wire type 7");
  free(b.p);
  /* a model without a graph */
  b = (mw_buf){0};
  mw_int(&b, 1, 8);
  CHECK_ERR(mw_import(&b, NULL, &g), RLX_ERR_FORMAT, "field graph is missing");
  free(b.p);
}

/* A model with one node `op(ins) -> y` over x [3] plus the given initializers. */
static rlx_status import_with(mw_buf *nodes, int nn, mw_buf *inits, int ni, int opset) {
  mw_buf in = mw_tensor_value("x", MW_F32, 1, DIMS(3)), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(opset, graph("bad", (gparts){nodes, inits, &in, &out, nn, ni, 1, 1}));
  rlx_graph *g = NULL;
  rlx_status s = mw_import(&m, NULL, &g);
  rlx_graph_free(g);
  free(m.p);
  return s;
}

static void test_tensor_errors(void) {
  float w[3] = {1, 2, 3};
  /* dims whose product overflows */
  mw_buf n1 = mw_node("Add", "x,w", "y", NULL, 0);
  mw_buf t1 = mw_tensor("w", MW_F32, 2, DIMS((int64_t)1 << 40, (int64_t)1 << 40), w, 12);
  CHECK_ERR(import_with(&n1, 1, &t1, 1, 13), RLX_ERR_FORMAT, "element count overflows");
  /* a negative dim */
  n1 = mw_node("Add", "x,w", "y", NULL, 0);
  t1 = mw_tensor("w", MW_F32, 1, DIMS(-3), w, 12);
  CHECK_ERR(import_with(&n1, 1, &t1, 1, 13), RLX_ERR_FORMAT, "dims[0] is -3");
  /* raw_data one element short */
  n1 = mw_node("Add", "x,w", "y", NULL, 0);
  t1 = mw_tensor("w", MW_F32, 1, DIMS(3), w, 8);
  CHECK_ERR(import_with(&n1, 1, &t1, 1, 13), RLX_ERR_FORMAT, "raw_data has 8 bytes but dims x dtype size = 3 x 4 = 12");
  /* typed data count mismatch */
  n1 = mw_node("Add", "x,w", "y", NULL, 0);
  t1 = (mw_buf){0};
  mw_int(&t1, 1, 3);
  mw_int(&t1, 2, MW_F32);
  mw_str(&t1, 8, "w");
  mw_tag(&t1, 4, 2);
  mw_varint(&t1, 8);
  mw_put(&t1, w, 8);
  CHECK_ERR(import_with(&n1, 1, &t1, 1, 13), RLX_ERR_FORMAT, "field float_data has 2 values; dims need 3");
  /* missing data_type */
  n1 = mw_node("Add", "x,w", "y", NULL, 0);
  t1 = (mw_buf){0};
  mw_int(&t1, 1, 3);
  mw_str(&t1, 8, "w");
  mw_bytes(&t1, 9, w, 12);
  CHECK_ERR(import_with(&n1, 1, &t1, 1, 13), RLX_ERR_FORMAT, "initializer \"w\": field data_type is missing");
  /* an input with an UNDEFINED element type */
  mw_buf nr = mw_node("Relu", "x", "y", NULL, 0);
  mw_buf in = mw_tensor_value("x", 0, 1, DIMS(3)), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(13, graph("undef", (gparts){&nr, NULL, &in, &out, 1, 0, 1, 1}));
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "input \"x\": field type.tensor_type.elem_type is UNDEFINED");
  free(m.p);
  /* a graph input without any type */
  nr = mw_node("Relu", "x", "y", NULL, 0);
  in = (mw_buf){0};
  mw_str(&in, 1, "x");
  out = (mw_buf){0};
  mw_str(&out, 1, "y");
  m = mw_model(13, graph("notype", (gparts){&nr, NULL, &in, &out, 1, 0, 1, 1}));
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "input \"x\": field type is missing");
  free(m.p);
}

static void test_graph_errors(void) {
  /* a cycle a -> b -> a */
  mw_buf cyc[3] = {mw_node_named("na", "Add", "x,b", "a", NULL, 0), mw_node_named("nb", "Neg", "a", "b", NULL, 0),
                   mw_node("Identity", "a", "y", NULL, 0)};
  CHECK_ERR(import_with(cyc, 3, NULL, 0, 13), RLX_ERR_FORMAT, "cycle");
  /* a dangling input */
  mw_buf dang[1] = {mw_node_named("d", "Add", "x,nowhere", "y", NULL, 0)};
  CHECK_ERR(import_with(dang, 1, NULL, 0, 13), RLX_ERR_FORMAT,
            "node \"d\" (Add): input[1] \"nowhere\" is not produced by any node, graph input or initializer");
  /* the same output twice */
  mw_buf dup[2] = {mw_node_named("p", "Neg", "x", "y", NULL, 0), mw_node_named("q", "Abs", "x", "y", NULL, 0)};
  CHECK_ERR(import_with(dup, 2, NULL, 0, 13), RLX_ERR_FORMAT, "also produced by node \"p\" (Neg) (duplicate output)");
  /* an attribute of the wrong type, an out-of-range axis, a bad perm, a zero kernel */
  mw_buf w1[1] = {mw_node_named("s", "Softmax", "x", "y", (mw_buf[]){mw_attr_float("axis", 1)}, 1)};
  CHECK_ERR(import_with(w1, 1, NULL, 0, 13), RLX_ERR_FORMAT,
            "node \"s\" (Softmax): attribute axis must be INT, not FLOAT");
  mw_buf w2[1] = {mw_node_named("s", "Softmax", "x", "y", (mw_buf[]){mw_attr_int("axis", -5)}, 1)};
  CHECK_ERR(import_with(w2, 1, NULL, 0, 13), RLX_ERR_FORMAT, "attribute axis -5 is out of range");
  mw_buf w3[1] = {mw_node_named("t", "Transpose", "x", "y", (mw_buf[]){mw_attr_ints("perm", 1, DIMS(3))}, 1)};
  CHECK_ERR(import_with(w3, 1, NULL, 0, 13), RLX_ERR_FORMAT, "node \"t\" (Transpose): attribute perm");
  mw_buf w4[1] = {mw_node_named("p", "MaxPool", "x", "y", (mw_buf[]){mw_attr_ints("kernel_shape", 1, DIMS(2))}, 1)};
  CHECK_ERR(import_with(w4, 1, NULL, 0, 13), RLX_ERR_FORMAT, "rank >= 3");
  const char *nm[1] = {"x"};
  mw_buf k0 = mw_node_named("p", "MaxPool", "x", "y", (mw_buf[]){mw_attr_ints("kernel_shape", 1, DIMS(0))}, 1);
  mw_buf mk = one_node(13, k0, 1, nm, (int[]){3}, (const int64_t *[]){DIMS(1, 1, 5)}, NULL, 0);
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&mk, NULL, &g), RLX_ERR_FORMAT, "node \"p\" (MaxPool): attribute kernel_shape[0] is 0");
  free(mk.p);
  /* names with a NUL byte or invalid UTF-8 */
  mw_buf bn = mw_node("Neg", "x", "y", NULL, 0);
  mw_bytes(&bn, 3, "a\0b", 3);
  CHECK_ERR(import_with(&bn, 1, NULL, 0, 13), RLX_ERR_FORMAT, "contains a NUL byte");
  bn = mw_node("Neg", "x", "y", NULL, 0);
  mw_bytes(&bn, 3, "\xc3\x28", 2);
  CHECK_ERR(import_with(&bn, 1, NULL, 0, 13), RLX_ERR_FORMAT, "not valid UTF-8");
}

static mw_buf leaf_body(void) {
  mw_buf n = mw_node("Identity", "x", "z", NULL, 0), out = {0};
  mw_str(&out, 1, "z");
  return graph("leaf", (gparts){&n, NULL, NULL, &out, 1, 0, 0, 1});
}

static void test_deep_nesting(void) {
  /* If nested 20 deep (the limit is 16) */
  mw_buf body = {0};
  {
    mw_buf n = mw_node("Identity", "x", "z", NULL, 0), out = {0};
    mw_str(&out, 1, "z");
    body = graph("leaf", (gparts){&n, NULL, NULL, &out, 1, 0, 0, 1});
  }
  for (int d = 0; d < 20; d++) {
    mw_buf b2 = leaf_body();
    mw_buf ia[2] = {mw_attr_graph("then_branch", body), mw_attr_graph("else_branch", b2)};
    mw_buf n = mw_node("If", "c", "z", ia, 2), out = {0};
    mw_str(&out, 1, "z");
    body = graph("lvl", (gparts){&n, NULL, NULL, &out, 1, 0, 0, 1});
  }
  /* unwrap the outermost level into the main graph */
  mw_buf ins[2] = {mw_tensor_value("x", MW_F32, 1, DIMS(3)), mw_tensor_value("c", MW_BOOL, 0, NULL)};
  mw_buf b2 = leaf_body();
  mw_buf ia[2] = {mw_attr_graph("then_branch", body), mw_attr_graph("else_branch", b2)};
  mw_buf n = mw_node("If", "c", "y", ia, 2), out = {0};
  mw_str(&out, 1, "y");
  mw_buf m = mw_model(13, graph("deep", (gparts){&n, NULL, ins, &out, 1, 0, 2, 1}));
  rlx_graph *g = NULL;
  /* the message nesting limit (64) trips first: 21 levels x 3 messages */
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "nested");
  free(m.p);

  /* 17 levels of If stays under the message limit but over the graph limit */
  body = (mw_buf){0};
  {
    mw_buf nn = mw_node("Identity", "x", "z", NULL, 0), o2 = {0};
    mw_str(&o2, 1, "z");
    body = graph("leaf", (gparts){&nn, NULL, NULL, &o2, 1, 0, 0, 1});
  }
  for (int d = 0; d < 16; d++) {
    mw_buf c2 = leaf_body();
    mw_buf ib[2] = {mw_attr_graph("then_branch", body), mw_attr_graph("else_branch", c2)};
    mw_buf nn = mw_node("If", "c", "z", ib, 2), o2 = {0};
    mw_str(&o2, 1, "z");
    body = graph("lvl", (gparts){&nn, NULL, NULL, &o2, 1, 0, 0, 1});
  }
  mw_buf ins2[2] = {mw_tensor_value("x", MW_F32, 1, DIMS(3)), mw_tensor_value("c", MW_BOOL, 0, NULL)};
  b2 = leaf_body();
  mw_buf ic[2] = {mw_attr_graph("then_branch", body), mw_attr_graph("else_branch", b2)};
  n = mw_node("If", "c", "y", ic, 2);
  out = (mw_buf){0};
  mw_str(&out, 1, "y");
  m = mw_model(13, graph("deep", (gparts){&n, NULL, ins2, &out, 1, 0, 2, 1}));
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "nested 17 levels deep; the limit is 16");
  free(m.p);

  /* a TypeProto sequence-of-sequence chain 100 deep */
  mw_buf tp = mw_tensor_type(MW_F32, 1, DIMS(3));
  for (int d = 0; d < 100; d++) {
    mw_buf seq = {0}, t2 = {0};
    mw_msg(&seq, 1, &tp);
    mw_msg(&t2, 4, &seq);
    tp = t2;
  }
  mw_buf vi = {0};
  mw_str(&vi, 1, "x");
  mw_msg(&vi, 2, &tp);
  mw_buf nr = mw_node("Identity", "x", "y", NULL, 0);
  out = (mw_buf){0};
  mw_str(&out, 1, "y");
  m = mw_model(13, graph("seq", (gparts){&nr, NULL, &vi, &out, 1, 0, 1, 1}));
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_FORMAT, "messages nested deeper than the limit of 64");
  free(m.p);
}

/* External data: tensor w stored in a file next to the model. */
static mw_buf ext_model(const char *location, int64_t offset, int64_t length) {
  mw_buf t = {0}, kv = {0};
  mw_int(&t, 1, 3);
  mw_int(&t, 2, MW_F32);
  mw_str(&t, 8, "w");
  mw_str(&kv, 1, "location");
  mw_str(&kv, 2, location);
  mw_msg(&t, 13, &kv);
  char buf[32];
  if (offset >= 0) {
    snprintf(buf, sizeof buf, "%lld", (long long)offset);
    mw_str(&kv, 1, "offset");
    mw_str(&kv, 2, buf);
    mw_msg(&t, 13, &kv);
  }
  if (length >= 0) {
    snprintf(buf, sizeof buf, "%lld", (long long)length);
    mw_str(&kv, 1, "length");
    mw_str(&kv, 2, buf);
    mw_msg(&t, 13, &kv);
  }
  mw_int(&t, 14, 1);
  mw_buf n = mw_node("Add", "x,w", "y", NULL, 0);
  mw_buf in = mw_tensor_value("x", MW_F32, 1, DIMS(3)), out = {0};
  mw_str(&out, 1, "y");
  return mw_model(13, graph("ext", (gparts){&n, &t, &in, &out, 1, 1, 1, 1}));
}

static rlx_status import_ext(const char *dir, const char *location, int64_t offset, int64_t length) {
  mw_buf m = ext_model(location, offset, length);
  char path[512];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(m.p, 1, m.n, f);
    fclose(f);
  }
  free(m.p);
  rlx_graph *g = NULL;
  rlx_status s = rlx_onnx_import_file(path, NULL, NULL, &g);
  if (s == RLX_OK) {
    /* w = [4, 5, 6] at offset 8 of data.bin */
    float x[3] = {0, 0, 0}, want[3] = {4, 5, 6};
    rlx_executable *e = NULL;
    const rlx_tensor *outs;
    uint32_t n;
    rlx_named_tensor in = tin("x", x, RLX_F32, 1, DIMS(3));
    if (rlx_compile(g, "cpu", NULL, &e) == RLX_OK && rlx_executable_run(e, &in, 1, &outs, &n) == RLX_OK)
      CHECK(out_close_f32(&outs[0], want, 3, 0));
    else
      CHECK_MSG(0, "%s", rlx_last_error());
    rlx_executable_free(e);
  }
  rlx_graph_free(g);
  return s;
}

static bool link_file_ok(const char *from, const char *to) { return link(from, to) == 0; }

static void test_external_data(void) {
  char dir[] = "/tmp/rlx_onnx_ext_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK_MSG(0, "mkdtemp failed");
    return;
  }
  char p[512], outside[512];
  float data[5] = {1, 2, 4, 5, 6};
  snprintf(p, sizeof p, "%s/data.bin", dir);
  FILE *f = fopen(p, "wb");
  if (f) {
    fwrite(data, 1, sizeof data, f);
    fclose(f);
  }
  snprintf(p, sizeof p, "%s/sub", dir);
  mkdir(p, 0700);
  snprintf(outside, sizeof outside, "%s.outside.bin", dir);
  f = fopen(outside, "wb");
  if (f) {
    fwrite(data, 1, sizeof data, f);
    fclose(f);
  }
  CHECK_OK(import_ext(dir, "data.bin", 8, 12));
  CHECK_OK(import_ext(dir, "./data.bin", 8, -1));
  CHECK_ERR(import_ext(dir, outside, 8, 12), RLX_ERR_FORMAT, "must be a relative path");
  CHECK_ERR(import_ext(dir, "sub/../data.bin", 8, 12), RLX_ERR_FORMAT, "contains '..'");
  /* a symlink that leaves the folder, and one that stays inside (symlinks are refused) */
  char link[600];
  snprintf(link, sizeof link, "%s/escape.bin", dir);
  CHECK(symlink(outside, link) == 0);
  CHECK_ERR(import_ext(dir, "escape.bin", 8, 12), RLX_ERR_FORMAT, "outside the model folder");
  snprintf(link, sizeof link, "%s/inside.bin", dir);
  CHECK(symlink("data.bin", link) == 0);
  CHECK_ERR(import_ext(dir, "inside.bin", 8, 12), RLX_ERR_FORMAT, "is a symbolic link");
  /* a hard link */
  snprintf(link, sizeof link, "%s/hard.bin", dir);
  snprintf(p, sizeof p, "%s/data.bin", dir);
  CHECK(link_file_ok(p, link));
  CHECK_ERR(import_ext(dir, "hard.bin", 8, 12), RLX_ERR_FORMAT, "hard links");
  remove(link);
  CHECK_ERR(import_ext(dir, "data.bin", 16, 12), RLX_ERR_FORMAT, "runs past the end of the file");
  CHECK_ERR(import_ext(dir, "data.bin", 100, -1), RLX_ERR_FORMAT, "past the end of the file");
  CHECK_ERR(import_ext(dir, "data.bin", 0, 8), RLX_ERR_FORMAT, "length is 8 bytes but dims x dtype size = 12 bytes");
  CHECK_ERR(import_ext(dir, "model.onnx", 0, 12), RLX_ERR_FORMAT, "extension");
  /* an allow-list of extensions: w.txt exists and holds the right bytes, but is not read */
  const char *names_ok[] = {"w.data", "w.WEIGHTS", "w_noext", "w.onnx_data"};
  const char *names_bad[] = {"w.txt", "w.json", "w.npy", "w.bin.txt", "w."};
  for (size_t i = 0; i < sizeof names_ok / sizeof names_ok[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names_ok[i]);
    f = fopen(p, "wb");
    if (f) {
      fwrite(data, 1, sizeof data, f);
      fclose(f);
    }
    CHECK_OK(import_ext(dir, names_ok[i], 8, 12));
    remove(p);
  }
  for (size_t i = 0; i < sizeof names_bad / sizeof names_bad[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names_bad[i]);
    f = fopen(p, "wb");
    if (f) {
      fwrite(data, 1, sizeof data, f);
      fclose(f);
    }
    CHECK_ERR(import_ext(dir, names_bad[i], 8, 12), RLX_ERR_FORMAT, "which is not an allowed tensor data extension");
    remove(p);
  }
  CHECK_ERR(import_ext(dir, "missing.bin", 0, 12), RLX_ERR_IO, "missing.bin");
  /* from memory without a folder */
  mw_buf m = ext_model("data.bin", 8, 12);
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m, NULL, &g), RLX_ERR_INVALID_ARG, "needs the model's folder");
  free(m.p);
  const char *files[] = {"escape.bin", "inside.bin", "data.bin", "model.onnx"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    remove(p);
  }
  snprintf(p, sizeof p, "%s/sub", dir);
  rmdir(p);
  rmdir(dir);
  remove(outside);
}

static void test_alloc_failures(void) {
  mw_buf m = small_model();
  long n_allocs = 0;
  {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, 0);
    rlx_graph *g = NULL;
    CHECK_OK(rlx_onnx_import_bytes(m.p, m.n, NULL, NULL, &fa.al, &g));
    rlx_graph_free(g);
    CHECK(fa.live == 0);
    n_allocs = fa.count;
  }
  int leaks = 0, wrong = 0;
  for (long i = 1; i <= n_allocs; i++) {
    rlx_fail_alloc fa;
    rlx_fail_alloc_init(&fa, i);
    rlx_graph *g = NULL;
    rlx_status s = rlx_onnx_import_bytes(m.p, m.n, NULL, NULL, &fa.al, &g);
    if (s == RLX_OK)
      rlx_graph_free(g);
    else
      wrong += s != RLX_ERR_OOM && s != RLX_ERR_FORMAT; /* protobuf-c reports OOM as a failed unpack */
    leaks += fa.live != 0;
  }
  CHECK_MSG(leaks == 0, "%d of %ld failure points leak", leaks, n_allocs);
  CHECK_MSG(wrong == 0, "%d failure points returned another error", wrong);
  free(m.p);
}

static void test_large_model_is_fast(void) {
  /* 20000 chained nodes import in linear time */
  enum { N = 20000 };
  mw_buf *nodes = calloc(N, sizeof *nodes);
  char in[32], out[32];
  for (int i = 0; i < N; i++) {
    snprintf(in, sizeof in, i ? "v%d" : "x", i - 1);
    snprintf(out, sizeof out, i == N - 1 ? "y" : "v%d", i);
    nodes[i] = mw_node(i % 2 ? "Neg" : "Abs", in, out, NULL, 0);
  }
  mw_buf vin = mw_tensor_value("x", MW_F32, 1, DIMS(4)), vout = {0};
  mw_str(&vout, 1, "y");
  mw_buf m = mw_model(13, graph("big", (gparts){nodes, NULL, &vin, &vout, N, 0, 1, 1}));
  free(nodes);
  rlx_graph *g = NULL;
  clock_t t0 = clock();
  CHECK_OK(mw_import(&m, NULL, &g));
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  CHECK_MSG(secs < 10.0, "importing %d nodes took %.2f s", N, secs);
  CHECK(g && rlx_graph_node_count(g) == N + 1);
  rlx_graph_free(g);
  free(m.p);
}

int main(void) {
  test_elementwise();
  test_gemm();
  test_conv();
  test_pool();
  test_shape_ops();
  test_reduce_topk();
  test_softmax_axis();
  test_batchnorm_layernorm();
  test_if();
  test_loop_unrolled();
  test_einsum_resize_rnn_scan();
  test_symbolic_and_values();
  test_params();
  test_unsorted_nodes();
  test_report_all_gaps();
  test_report_downstream_gaps();
  test_opset_import_required();
  test_duplicate_graph_output();
  test_runtime_hazards();
  test_tensor_pb();
  test_truncation();
  test_wire_errors();
  test_tensor_errors();
  test_graph_errors();
  test_deep_nesting();
  test_external_data();
  test_alloc_failures();
  test_large_model_is_fast();
  return rlx_test_finish("onnx_import");
}
