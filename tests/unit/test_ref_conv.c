/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, convolution family: Conv (groups, dilation, stride, symmetric and
 * asymmetric padding), Conv3d, ConvTranspose2d/3d (output_padding, groups, dilation), Im2Col
 * (column order c, kh, kw), Pool (Max ignores padding, Mean divides by the full window),
 * ResizeNearest2x and Interpolate3d. Expectations come from direct loops written here. */
#include "ref_b_test.h"

/* Geometry of a naive 3-D convolution (2-D: depth axis of extent 1). */
typedef struct ngeo {
  int N, Cin, Cout, G;
  int in[3], k[3], s[3], d[3], pb[3], out[3];
} ngeo;

static int nvol(const int v[3]) { return v[0] * v[1] * v[2]; }

/* out[n][oc][o] = sum_{c, kk} x[n][g*cg + c][o*s - pb + kk*d] * w[oc][c][kk] */
static void naive_conv(const ngeo *g, const double *x, const double *w, double *y) {
  int cg = g->Cin / g->G, og = g->Cout / g->G, P = nvol(g->out), Pin = nvol(g->in), kv = nvol(g->k);
  for (int n = 0; n < g->N; n++)
    for (int oc = 0; oc < g->Cout; oc++)
      for (int p = 0; p < P; p++) {
        int o[3] = {p / (g->out[1] * g->out[2]), p / g->out[2] % g->out[1], p % g->out[2]};
        double s = 0;
        for (int c = 0; c < cg; c++)
          for (int kk = 0; kk < kv; kk++) {
            int kc[3] = {kk / (g->k[1] * g->k[2]), kk / g->k[2] % g->k[1], kk % g->k[2]}, i[3];
            bool inside = true;
            for (int a = 0; a < 3; a++) {
              i[a] = o[a] * g->s[a] - g->pb[a] + kc[a] * g->d[a];
              inside = inside && i[a] >= 0 && i[a] < g->in[a];
            }
            if (!inside) continue;
            int ic = (oc / og) * cg + c;
            s += x[((size_t)n * g->Cin + ic) * Pin + (i[0] * g->in[1] + i[1]) * g->in[2] + i[2]] *
                 w[((size_t)oc * cg + c) * kv + kk];
          }
        y[((size_t)n * g->Cout + oc) * P + p] = s;
      }
}

/* Transposed: y[n][g*og + oc][i*s - pb + kk*d] += x[n][g*cg + ic][i] * w[g*cg + ic][oc][kk] */
static void naive_conv_t(const ngeo *g, const double *x, const double *w, double *y) {
  int cg = g->Cin / g->G, og = g->Cout / g->G, P = nvol(g->out), Pin = nvol(g->in), kv = nvol(g->k);
  memset(y, 0, sizeof(double) * (size_t)g->N * g->Cout * P);
  for (int n = 0; n < g->N; n++)
    for (int ic = 0; ic < g->Cin; ic++)
      for (int q = 0; q < Pin; q++) {
        int i[3] = {q / (g->in[1] * g->in[2]), q / g->in[2] % g->in[1], q % g->in[2]};
        for (int oc = 0; oc < og; oc++)
          for (int kk = 0; kk < kv; kk++) {
            int kc[3] = {kk / (g->k[1] * g->k[2]), kk / g->k[2] % g->k[1], kk % g->k[2]}, o[3];
            bool inside = true;
            for (int a = 0; a < 3; a++) {
              o[a] = i[a] * g->s[a] - g->pb[a] + kc[a] * g->d[a];
              inside = inside && o[a] >= 0 && o[a] < g->out[a];
            }
            if (!inside) continue;
            int oc_full = (ic / cg) * og + oc;
            y[((size_t)n * g->Cout + oc_full) * P + (o[0] * g->out[1] + o[1]) * g->out[2] + o[2]] +=
                x[((size_t)n * g->Cin + ic) * Pin + q] * w[((size_t)ic * og + oc) * kv + kk];
          }
      }
}

static double X[4096], Wt[4096], Y[8192];

static void test_conv2d(void) {
  rt c;
  /* N 2, C_in 4, 5x6, C_out 6, groups 2, kernel 3x2, stride (2,1), dilation (1,2),
   * padding [begin_h 1, begin_w 0, end_h 2, end_w 1] -> out 3x5 */
  ngeo g = {2, 4, 6, 2, {1, 5, 6}, {1, 3, 2}, {1, 2, 1}, {1, 1, 2}, {0, 1, 0}, {1, 3, 5}};
  rt_fill(X, 240, 1);
  rt_fill(Wt, 36, 2);
  naive_conv(&g, X, Wt, Y);
  rlx_attrs_Conv a = {.stride = IL(2, 1), .padding = IL(1, 0, 2, 1), .dilation = IL(1, 2), .groups = 2};
  CHECK_OK(RT_RUN(&c, Conv, &a, NULL, {SHP(F64, 2, 4, 5, 6), X}, {SHP(F64, 6, 2, 3, 2), Wt}));
  CHECK(c.out.shape.dims[2] == 3 && c.out.shape.dims[3] == 5);
  CHECK_OUT(&c, Y, 180, 1e-12, 0);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, Conv, &a, NULL, {SHP(F32, 2, 4, 5, 6), X}, {SHP(F32, 6, 2, 3, 2), Wt}));
  CHECK_OUT(&c, Y, 180, 1e-5, 1e-6);
  rt_free(&c);
  CHECK_OK(RT_RUN(&c, Conv, &a, NULL, {SHP(F16, 2, 4, 5, 6), X}, {SHP(F16, 6, 2, 3, 2), Wt}));
  CHECK_OUT(&c, Y, 180, 4e-3, 1e-3);
  rt_free(&c);

  /* symmetric padding 1, explicit kernel_size, no groups: 3x3 kernel on 4x4 -> 4x4 */
  ngeo s = {1, 2, 3, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {1, 4, 4}};
  rt_fill(X, 32, 3);
  rt_fill(Wt, 54, 4);
  naive_conv(&s, X, Wt, Y);
  rlx_attrs_Conv b = {.kernel_size = IL(3, 3), .padding = IL(1, 1), .groups = 1};
  CHECK_OK(RT_RUN(&c, Conv, &b, NULL, {SHP(F32, 1, 2, 4, 4), X}, {SHP(F32, 3, 2, 3, 3), Wt}));
  CHECK_OUT(&c, Y, 48, 1e-5, 1e-6);
  rt_free(&c);
  /* depthwise (groups = C_in = C_out = 3), stride 2, no padding */
  ngeo dw = {1, 3, 3, 3, {1, 5, 5}, {1, 2, 2}, {1, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 2, 2}};
  rt_fill(X, 75, 5);
  rt_fill(Wt, 12, 6);
  naive_conv(&dw, X, Wt, Y);
  rlx_attrs_Conv d = {.stride = IL(2, 2), .groups = 3};
  CHECK_OK(RT_RUN(&c, Conv, &d, NULL, {SHP(F64, 1, 3, 5, 5), X}, {SHP(F64, 3, 1, 2, 2), Wt}));
  CHECK_OUT(&c, Y, 12, 1e-12, 0);
  rt_free(&c);
  /* hand-worked: 1x1 image [[1,2],[3,4]], all-ones 2x2 kernel -> 10 */
  rlx_attrs_Conv h = {.groups = 1};
  CHECK_OK(
      RT_RUN(&c, Conv, &h, NULL, {SHP(F32, 1, 1, 2, 2), VALS(1, 2, 3, 4)}, {SHP(F32, 1, 1, 2, 2), VALS(1, 1, 1, 1)}));
  CHECK_OUT(&c, VALS(10), 1, 0, 0);
  rt_free(&c);
  /* kernel_size disagreeing with the weight, handed to the kernel */
  CHECK_OK(
      rt_build(&c, RLX_OP_Conv, &h, NULL, false, 2, (rt_arg[]){{SHP(F32, 1, 1, 2, 2), X}, {SHP(F32, 1, 1, 2, 2), Wt}}));
  rlx_node bad = *c.node;
  bad.attrs.Conv.kernel_size = IL(1, 1);
  CHECK_ERR(rlx_cpu_ref_table[RLX_OP_Conv](&bad, c.in, 2, &c.out, &c.ctx), RLX_ERR_INVALID_ARG, "kernel_size");
  rt_free(&c);
}

static void test_conv3d(void) {
  rt c;
  /* N 1, C_in 2, 3x4x5, C_out 4, groups 2, kernel 2x2x3, stride (1,2,1), dilation (1,1,2),
   * padding [0,1,2, 1,0,1] -> out D (3+1-1-1)/1+1 = 3, H (4+1-1-1)/2+1 = 2, W (5+3-4-1)/1+1 = 4 */
  ngeo g = {1, 2, 4, 2, {3, 4, 5}, {2, 2, 3}, {1, 2, 1}, {1, 1, 2}, {0, 1, 2}, {3, 2, 4}};
  rt_fill(X, 120, 7);
  rt_fill(Wt, 48, 8);
  naive_conv(&g, X, Wt, Y);
  rlx_attrs_Conv3d a = {.stride = IL(1, 2, 1), .padding = IL(0, 1, 2, 1, 0, 1), .dilation = IL(1, 1, 2), .groups = 2};
  CHECK_OK(RT_RUN(&c, Conv3d, &a, NULL, {SHP(F64, 1, 2, 3, 4, 5), X}, {SHP(F64, 4, 1, 2, 2, 3), Wt}));
  CHECK(c.out.shape.dims[2] == 3 && c.out.shape.dims[3] == 2 && c.out.shape.dims[4] == 4);
  CHECK_OUT(&c, Y, 96, 1e-12, 0);
  rt_free(&c);
}

static void test_conv_transpose(void) {
  rt c;
  /* x [1, 4, 3, 3], w [4, 3, 3, 3], groups 2 -> C_out 6; stride 2, padding 1, output_padding 1:
   * out (3-1)*2 - 2 + 2 + 1 + 1 = 6 */
  ngeo g = {1, 4, 6, 2, {1, 3, 3}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 1}, {1, 6, 6}};
  rt_fill(X, 36, 9);
  rt_fill(Wt, 108, 10);
  naive_conv_t(&g, X, Wt, Y);
  rlx_attrs_ConvTranspose2d a = {.stride = IL(2, 2), .padding = IL(1, 1), .output_padding = IL(1, 1), .groups = 2};
  CHECK_OK(RT_RUN(&c, ConvTranspose2d, &a, NULL, {SHP(F64, 1, 4, 3, 3), X}, {SHP(F64, 4, 3, 3, 3), Wt}));
  CHECK(c.out.shape.dims[1] == 6 && c.out.shape.dims[2] == 6 && c.out.shape.dims[3] == 6);
  CHECK_OUT(&c, Y, 216, 1e-12, 0);
  rt_free(&c);
  /* asymmetric padding [0, 1, 1, 0], dilation (2, 1), stride (1, 3), output_padding (1, 2):
   * H (3-1)*1 - 1 + 2*2 + 1 + 1 = 7, W (3-1)*3 - 1 + 2 + 2 + 1 = 10 */
  ngeo h = {2, 2, 2, 1, {1, 3, 3}, {1, 3, 3}, {1, 1, 3}, {1, 2, 1}, {0, 0, 1}, {1, 7, 10}};
  rt_fill(X, 36, 11);
  rt_fill(Wt, 36, 12);
  naive_conv_t(&h, X, Wt, Y);
  rlx_attrs_ConvTranspose2d b = {.kernel_size = IL(3, 3),
                                 .stride = IL(1, 3),
                                 .padding = IL(0, 1, 1, 0),
                                 .dilation = IL(2, 1),
                                 .output_padding = IL(1, 2),
                                 .groups = 1};
  CHECK_OK(RT_RUN(&c, ConvTranspose2d, &b, NULL, {SHP(F32, 2, 2, 3, 3), X}, {SHP(F32, 2, 2, 3, 3), Wt}));
  CHECK(c.out.shape.dims[2] == 7 && c.out.shape.dims[3] == 10);
  CHECK_OUT(&c, Y, 280, 1e-5, 1e-6);
  rt_free(&c);
  /* hand-worked: 1x1 input 2, 2x2 kernel (1,2,3,4), stride 1 -> the kernel times 2 */
  rlx_attrs_ConvTranspose2d hw = {.groups = 1};
  CHECK_OK(RT_RUN(&c, ConvTranspose2d, &hw, NULL, {SHP(F32, 1, 1, 1, 1), VALS(2)},
                  {SHP(F32, 1, 1, 2, 2), VALS(1, 2, 3, 4)}));
  CHECK_OUT(&c, VALS(2, 4, 6, 8), 4, 0, 0);
  rt_free(&c);
  /* 3-D: x [1, 2, 2, 3, 2], w [2, 2, 2, 2, 2], groups 1, stride (2,1,2), output_padding (1,0,1) */
  ngeo t3 = {1, 2, 2, 1, {2, 3, 2}, {2, 2, 2}, {2, 1, 2}, {1, 1, 1}, {0, 0, 0}, {5, 4, 5}};
  rt_fill(X, 24, 13);
  rt_fill(Wt, 32, 14);
  naive_conv_t(&t3, X, Wt, Y);
  rlx_attrs_ConvTranspose3d t = {.stride = IL(2, 1, 2), .output_padding = IL(1, 0, 1), .groups = 1};
  CHECK_OK(RT_RUN(&c, ConvTranspose3d, &t, NULL, {SHP(F64, 1, 2, 2, 3, 2), X}, {SHP(F64, 2, 2, 2, 2, 2), Wt}));
  CHECK(c.out.shape.dims[2] == 5 && c.out.shape.dims[3] == 4 && c.out.shape.dims[4] == 5);
  CHECK_OUT(&c, Y, 200, 1e-12, 0);
  rt_free(&c);
}

static void test_im2col(void) {
  rt c;
  /* x [2, 2, 3, 3], kernel 2x2, padding 1, stride 2 -> Ho = Wo = 2; rows (n, oh, ow), columns
   * (c, kh, kw) */
  double x[36], want[8 * 8];
  for (int i = 0; i < 36; i++) x[i] = i + 1;
  for (int n = 0; n < 2; n++)
    for (int oh = 0; oh < 2; oh++)
      for (int ow = 0; ow < 2; ow++)
        for (int ch = 0; ch < 2; ch++)
          for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
              int ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
              double v = ih >= 0 && ih < 3 && iw >= 0 && iw < 3 ? x[((n * 2 + ch) * 3 + ih) * 3 + iw] : 0;
              want[((n * 2 + oh) * 2 + ow) * 8 + (ch * 2 + i) * 2 + j] = v;
            }
  rlx_attrs_Im2Col a = {.kernel_size = IL(2, 2), .stride = IL(2, 2), .padding = IL(1, 1)};
  CHECK_OK(RT_RUN(&c, Im2Col, &a, NULL, {SHP(I32, 2, 2, 3, 3), x}));
  CHECK(c.out.shape.dims[0] == 8 && c.out.shape.dims[1] == 8);
  CHECK_OUT(&c, want, 64, 0, 0);
  /* first row by hand: window at (-1,-1): only x[0][0][0][0] = 1 (bottom-right tap), then channel 1: 10 */
  const double row0[8] = {0, 0, 0, 1, 0, 0, 0, 10};
  bool ok = true;
  for (int i = 0; i < 8; i++) ok = ok && rt_out(&c, (size_t)i) == row0[i];
  CHECK(ok);
  rt_free(&c);
}

static void test_pool(void) {
  rt c;
  /* x 1..9 as [1,1,3,3], window 2, stride 1, padding 1 -> [4,4] */
  double x[9];
  for (int i = 0; i < 9; i++) x[i] = i + 1;
  double wmax[16], wmean[16];
  for (int oh = 0; oh < 4; oh++)
    for (int ow = 0; ow < 4; ow++) {
      double m = -INFINITY, s = 0;
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
          int ih = oh - 1 + i, iw = ow - 1 + j;
          if (ih < 0 || ih >= 3 || iw < 0 || iw >= 3) continue;
          double v = x[ih * 3 + iw];
          m = v > m ? v : m;
          s += v;
        }
      wmax[oh * 4 + ow] = m;
      wmean[oh * 4 + ow] = s / 4;
    }
  rlx_attrs_Pool a = {.kind = RLX_REDUCE_MAX, .kernel_size = IL(2, 2), .stride = IL(1, 1), .padding = IL(1, 1)};
  CHECK_OK(RT_RUN(&c, Pool, &a, NULL, {SHP(F32, 1, 1, 3, 3), x}));
  CHECK_OUT(&c, wmax, 16, 0, 0);
  rt_free(&c);
  a.kind = RLX_REDUCE_MEAN;
  CHECK_OK(RT_RUN(&c, Pool, &a, NULL, {SHP(F64, 1, 1, 3, 3), x}));
  CHECK_OUT(&c, wmean, 16, 0, 0);
  CHECK(rt_out(&c, 0) == 0.25); /* the corner window holds one real cell: 1 / 4 */
  rt_free(&c);
  /* negative inputs: padding must not act as a 0 for Max */
  double neg[9];
  for (int i = 0; i < 9; i++) neg[i] = -(i + 1);
  a.kind = RLX_REDUCE_MAX;
  CHECK_OK(RT_RUN(&c, Pool, &a, NULL, {SHP(F32, 1, 1, 3, 3), neg}));
  CHECK(rt_out(&c, 0) == -1 && rt_out(&c, 15) == -9);
  rt_free(&c);
  /* integers; Mean truncates toward zero; default stride = kernel; asymmetric padding [0,0,1,1] */
  rlx_attrs_Pool b = {.kind = RLX_REDUCE_MEAN, .kernel_size = IL(2, 2), .padding = IL(0, 0, 1, 1)};
  CHECK_OK(RT_RUN(&c, Pool, &b, NULL, {SHP(I32, 1, 1, 3, 3), x}));
  /* windows: (1+2+4+5)/4 = 3, (3+6)/4 = 2, (7+8)/4 = 3, 9/4 = 2 */
  CHECK_OUT(&c, VALS(3, 2, 3, 2), 4, 0, 0);
  rt_free(&c);
  b.kind = RLX_REDUCE_MAX;
  CHECK_OK(RT_RUN(&c, Pool, &b, NULL, {SHP(I32, 1, 1, 3, 3), neg}));
  CHECK_OUT(&c, VALS(-1, -3, -7, -9), 4, 0, 0);
  rt_free(&c);
  /* Sum is not a pooling kind */
  CHECK_OK(rt_build(&c, RLX_OP_Pool, &b, NULL, false, 1, (rt_arg[]){{SHP(F32, 1, 1, 3, 3), x}}));
  rlx_node bad = *c.node;
  bad.attrs.Pool.kind = RLX_REDUCE_SUM;
  CHECK_ERR(rlx_cpu_ref_table[RLX_OP_Pool](&bad, c.in, 1, &c.out, &c.ctx), RLX_ERR_INVALID_ARG, "Max and Mean");
  rt_free(&c);
}

static void test_resample(void) {
  rt c;
  CHECK_OK(RT_RUN(&c, ResizeNearest2x, NULL, NULL, {SHP(I64, 1, 1, 2, 2), VALS(1, 2, 3, 4)}));
  CHECK_OUT(&c, VALS(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4), 16, 0, 0);
  rt_free(&c);
  /* Interpolate3d [2, 1, 2, 3, 4] -> size [3, 2, 5] (up and down sampling) */
  double x[48], want[60];
  for (int i = 0; i < 48; i++) x[i] = i;
  int in[3] = {2, 3, 4}, out[3] = {3, 2, 5};
  for (int n = 0; n < 2; n++)
    for (int d = 0; d < 3; d++)
      for (int h = 0; h < 2; h++)
        for (int w = 0; w < 5; w++) {
          int o[3] = {d, h, w}, s[3];
          for (int a = 0; a < 3; a++) {
            s[a] = (int)floor((double)o[a] * in[a] / out[a]);
            if (s[a] > in[a] - 1) s[a] = in[a] - 1;
          }
          want[((n * 3 + d) * 2 + h) * 5 + w] = x[((n * 2 + s[0]) * 3 + s[1]) * 4 + s[2]];
        }
  rlx_attrs_Interpolate3d a = {.size = IL(3, 2, 5)};
  CHECK_OK(RT_RUN(&c, Interpolate3d, &a, NULL, {SHP(F32, 2, 1, 2, 3, 4), x}));
  CHECK_OUT(&c, want, 60, 0, 0);
  rt_free(&c);
}

int main(void) {
  test_conv2d();
  test_conv3d();
  test_conv_transpose();
  test_im2col();
  test_pool();
  test_resample();
  return rlx_test_finish("ref_conv");
}
