/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The inference paths of the fast Conv kernel against the reference kernel (double), and the
 * fused convolution epilogue against the separate kernels, bit for bit:
 *   - depthwise on phase planes (conv_dw.c): 3x3 / 5x5, strides 1, 2, 3 and 2x1, dilation,
 *     asymmetric padding, odd sizes, planes narrower than a vector; and the plain loops it
 *     replaces (fk_dw_disable); on the AVX-512 path the channel blocks of small planes, also
 *     bit for bit against the phase planes (fk_dwc_disable);
 *   - Winograd F(2x2, 3x3) (conv_winograd.c, AVX2 and AVX-512 paths): batch 1 across threads, odd
 *     extents, no padding, padding 2, rows of several lane blocks, tiny planes, several image
 *     groups, large weights with many tiles;
 *   - strided convolutions on phase planes (conv_phase.c, AVX-512 path only): the 7x7 stride-2
 *     stem, 3x3 stride 2, output channels not a multiple of the tile, stride 3, dilation,
 *     batch 1 across threads, and stride 1 on small planes with many taps; and the im2col path
 *     they replace (fk_pconv_disable);
 *   - rlx_fast_conv_epilogue with Relu, HardSwish and HardSigmoid, with and without a bias,
 *     with the sum kept or not, on every path (depthwise, phase planes, direct, im2col, 1x1
 *     GEMM, one image across the threads): equal to Conv, then Binary Add, then Activation;
 *   - fk_conv_act against the Activation kernel (fk_act_f32) over a dense sweep of the range where
 *     HardSwish / HardSigmoid are not constant, and special values;
 *   - the executor: Conv -> HardSwish and Conv -> Add -> HardSwish graphs compiled with fusion
 *     give the bits of RLX_CPU_NO_FUSION=1 and make fused thunks; Winograd weights of Constant
 *     convolutions transformed once give the bits of RLX_CPU_NO_PACK=1.
 * Threads 1, 2 and 3, and the deterministic mode (the same bits at every thread count). Every
 * case checks first that it runs the path it is named for where that path exists on this CPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fast/fast.h"
#include "core/elem.h"
#include "rlx/cpu.h"
#include "rlx_test.h"
#include "attr_lists.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static size_t numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

static rlx_cpu_pool *pools[4];

typedef struct geo {
  int64_t N, Cin, H, W, Cout, kh, kw, groups;
  rlx_ilist stride, padding, dilation;
} geo;

/* A Conv node over inputs x, w (data filled uniformly in [-3, 3) so that HardSwish and
 * HardSigmoid see both their linear parts and their clamps). */
typedef struct ccase {
  rlx_graph *g;
  const rlx_node *conv;
  rlx_tensor in[2];
  float *bias;
} ccase;

static bool make(ccase *c, geo g) {
  memset(c, 0, sizeof *c);
  if (rlx_graph_create(NULL, "conv_infer", &c->g) != RLX_OK) return false;
  rlx_shape xs = SHP(F32, g.N, g.Cin, g.H, g.W), ws = SHP(F32, g.Cout, g.Cin / g.groups, g.kh, g.kw);
  rlx_id x, w, y;
  if (rlx_input(c->g, "x", xs, &x) != RLX_OK || rlx_input(c->g, "w", ws, &w) != RLX_OK) return false;
  rlx_attrs_Conv a = {
      .kernel_size = NOLIST, .stride = g.stride, .padding = g.padding, .dilation = g.dilation, .groups = g.groups};
  if (rlx_graph_add(c->g, RLX_OP_Conv, (rlx_id[]){x, w}, 2, &a, NULL, "conv", &y) != RLX_OK) {
    fprintf(stderr, "Conv: %s\n", rlx_last_error());
    return false;
  }
  c->conv = rlx_graph_node(c->g, y);
  rlx_shape sh[2] = {xs, ws};
  for (int i = 0; i < 2; i++) {
    size_t n = numel(&sh[i]);
    c->in[i].shape = sh[i];
    c->in[i].data = malloc(n * sizeof(float) + 1);
    for (size_t k = 0; k < n; k++) ((float *)c->in[i].data)[k] = 3.0f * urand() * (i ? 0.5f : 1.0f);
  }
  c->bias = malloc((size_t)g.Cout * sizeof(float));
  for (int64_t k = 0; k < g.Cout; k++) c->bias[k] = urand();
  return true;
}

static void release(ccase *c) {
  free(c->in[0].data);
  free(c->in[1].data);
  free(c->bias);
  rlx_graph_free(c->g);
}

/* Fast Conv against the reference at threads 1..3, then deterministic mode at 1..3 (same bits). */
static void conv_vs_ref(const char *what, ccase *c) {
  const rlx_node *n = c->conv;
  CHECK_MSG(rlx_fast_applies_Conv(n, c->in, 2), "%s: the fast Conv does not apply", what);
  size_t count = numel(&n->shape), bytes = count * sizeof(float);
  rlx_tensor ref = {malloc(bytes), n->shape};
  rlx_cpu_ctx ctx1 = {.threads = 1};
  CHECK_OK(rlx_cpu_ref_table[RLX_OP_Conv](n, c->in, 2, &ref, &ctx1));
  /* f32 sums of R products of |x w| <= 4.5 against double: allow R * 4.5 * 2^-23 (a linear
     bound on the rounding of the sum; sums with cancellation get close to it) */
  double R = (double)(c->in[1].shape.dims[1] * c->in[1].shape.dims[2] * c->in[1].shape.dims[3]);
  double atol = 1e-5 + R * 4.5 * 0x1p-23;
  float *det1 = malloc(bytes);
  for (int det = 0; det < 2; det++)
    for (int t = 1; t <= 3; t++) {
      rlx_tensor out = {det && t == 1 ? det1 : malloc(bytes), n->shape};
      memset(out.data, 0xA5, bytes);
      rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t], .deterministic = det != 0};
      CHECK_OK(rlx_fast_Conv(n, c->in, 2, &out, &ctx));
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < count; i++) {
        double f = ((float *)out.data)[i], r = ((float *)ref.data)[i];
        if (!(fabs(f - r) <= atol + 2e-5 * fabs(r)) && bad++ == 0) first = i;
      }
      CHECK_MSG(bad == 0, "%s (threads %d%s): %zu of %zu differ from the reference, first at %zu: %.9g vs %.9g", what,
                t, det ? ", deterministic" : "", bad, count, first, bad ? ((float *)out.data)[first] : 0.0,
                bad ? ((float *)ref.data)[first] : 0.0);
      if (det && t > 1)
        CHECK_MSG(memcmp(out.data, det1, bytes) == 0, "%s: deterministic threads %d differ from threads 1", what, t);
      if (out.data != det1) free(out.data);
    }
  free(det1);
  free(ref.data);
}

/* The separate kernels: conv (fast), + bias (Binary Add fast kernel, bias as [1, C, 1, 1]),
 * activation (fk_act_f32, the Activation kernel's loops). */
static void separate(ccase *c, const rlx_cpu_ctx *ctx, bool bias, rlx_act act, float *z, float *r) {
  const rlx_node *n = c->conv;
  size_t count = numel(&n->shape);
  rlx_tensor out = {z, n->shape};
  CHECK_OK(rlx_fast_Conv(n, c->in, 2, &out, (rlx_cpu_ctx *)ctx));
  if (bias) {
    size_t P = (size_t)(n->shape.dims[2] * n->shape.dims[3]), C = (size_t)n->shape.dims[1];
    for (size_t i = 0; i < count; i++) z[i] = z[i] + c->bias[i / P % C];
  }
  fk_act_f32(act, z, r, count);
}

/* rlx_fast_conv_epilogue in its forms against the separate kernels, bit for bit. */
static void epilogue_vs_separate(const char *what, ccase *c) {
  const rlx_node *n = c->conv;
  rlx_shape bs = SHP(F32, 1, n->shape.dims[1], 1, 1);
  CHECK_MSG(rlx_fast_conv_epilogue_applies(n, c->in, 2, &bs), "%s: the epilogue does not apply", what);
  CHECK_MSG(rlx_fast_conv_epilogue_applies(n, c->in, 2, NULL), "%s: the bias-free epilogue does not apply", what);
  size_t count = numel(&n->shape), bytes = count * sizeof(float);
  float *z0 = malloc(bytes), *r0 = malloc(bytes), *z = malloc(bytes), *r = malloc(bytes);
  const rlx_act acts[3] = {RLX_ACT_RELU, RLX_ACT_HARD_SWISH, RLX_ACT_HARD_SIGMOID};
  for (int a = 0; a < 3; a++)
    for (int bias = 0; bias < 2; bias++)
      for (int keep = 0; keep < 2; keep++)
        for (int t = 1; t <= 3; t += 2) {
          rlx_cpu_ctx ctx = {.threads = t, .pool = pools[t]};
          separate(c, &ctx, bias, acts[a], z0, r0);
          memset(z, 0xA5, bytes);
          memset(r, 0xA5, bytes);
          CHECK_OK(rlx_fast_conv_epilogue(n, c->in, 2, bias ? c->bias : NULL, keep ? z : NULL, r, acts[a], &ctx));
          CHECK_MSG(memcmp(r, r0, bytes) == 0,
                    "%s: %s%s%s (threads %d): the activation differs from the separate kernels", what,
                    acts[a] == RLX_ACT_RELU         ? "relu"
                    : acts[a] == RLX_ACT_HARD_SWISH ? "hardswish"
                                                    : "hardsigmoid",
                    bias ? " + bias" : "", keep ? ", sum kept" : "", t);
          if (keep)
            CHECK_MSG(memcmp(z, z0, bytes) == 0, "%s: the kept sum differs (act %d, bias %d, threads %d)", what,
                      (int)acts[a], bias, t);
        }
  /* bias without an activation output (Conv + Add alone) */
  rlx_cpu_ctx ctx = {.threads = 2, .pool = pools[2]};
  separate(c, &ctx, true, RLX_ACT_RELU, z0, r0);
  CHECK_OK(rlx_fast_conv_epilogue(n, c->in, 2, c->bias, z, NULL, RLX_ACT_RELU, &ctx));
  CHECK_MSG(memcmp(z, z0, bytes) == 0, "%s: conv + bias differs from the separate kernels", what);
  CHECK_ERR(rlx_fast_conv_epilogue(n, c->in, 2, c->bias, z, r, RLX_ACT_EXP, &ctx), RLX_ERR_INTERNAL, "activation");
  free(z0);
  free(r0);
  free(z);
  free(r);
}

static void one(const char *what, geo g) {
  ccase c;
  CHECK_MSG(make(&c, g), "%s: building the case failed", what);
  if (!c.conv) {
    rlx_graph_free(c.g);
    return;
  }
  conv_vs_ref(what, &c);
  epilogue_vs_separate(what, &c);
  release(&c);
}

/* Does the phase-plane depthwise kernel take this geometry? (It must, for the cases below.) */
static bool dw_takes(geo g, int64_t Ho, int64_t Wo) {
  fk_dw d;
  int64_t pt = g.padding.n ? g.padding.v[0] : 0, pl = g.padding.n ? g.padding.v[1] : 0;
  size_t sh = g.stride.n ? (size_t)g.stride.v[0] : 1, sw = g.stride.n ? (size_t)g.stride.v[1] : 1;
  size_t dh = g.dilation.n ? (size_t)g.dilation.v[0] : 1, dw = g.dilation.n ? (size_t)g.dilation.v[1] : 1;
  return fk_dw_init(&d, (size_t)g.H, (size_t)g.W, (size_t)Ho, (size_t)Wo, (size_t)g.kh, (size_t)g.kw, sh, sw, dh, dw,
                    pt, pl);
}

/* The channel-block depthwise kernel (where it runs) gives the phase-plane kernel's bits: the
 * sum, and the epilogue with a bias and each activation, the sum kept or not. */
static void blocks_vs_planes(const char *what, geo g) {
  fk_dwc probe;
  int64_t pt = g.padding.n ? g.padding.v[0] : 0, pl = g.padding.n ? g.padding.v[1] : 0;
  size_t s = g.stride.n ? (size_t)g.stride.v[0] : 1;
  size_t Ho = (size_t)((g.H + 2 * pt - g.kh) / (int64_t)s + 1), Wo = (size_t)((g.W + 2 * pl - g.kw) / (int64_t)s + 1);
  bool runs = fk_dwc_init(&probe, (size_t)g.Cin, (size_t)g.H, (size_t)g.W, Ho, Wo, (size_t)g.kh, (size_t)g.kw, s, s, 1,
                          1, pt, pl);
  CHECK_MSG(runs == (fk_isa_active() == FK_ISA_AVX512), "%s: the channel blocks %s on the %s path", what,
            runs ? "run" : "do not run", fk_isa_name(fk_isa_active()));
  if (!runs) return;
  ccase c;
  CHECK(make(&c, g));
  const rlx_node *n = c.conv;
  size_t bytes = numel(&n->shape) * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *za = malloc(bytes), *zb = malloc(bytes);
  rlx_cpu_ctx ctx = {.threads = 2, .pool = pools[2]};
  const rlx_act acts[3] = {RLX_ACT_RELU, RLX_ACT_HARD_SWISH, RLX_ACT_HARD_SIGMOID};
  for (int k = -1; k < 3; k++)
    for (int keep = 0; keep < 2; keep++) {
      float *out[2] = {a, b}, *zs[2] = {za, zb};
      for (int off = 0; off < 2; off++) {
        fk_dwc_disable(off != 0);
        memset(out[off], 0x5A, bytes);
        memset(zs[off], 0x5A, bytes);
        rlx_tensor t = {out[off], n->shape};
        if (k < 0)
          CHECK_OK(rlx_fast_Conv(n, c.in, 2, &t, &ctx));
        else
          CHECK_OK(rlx_fast_conv_epilogue(n, c.in, 2, c.bias, keep ? zs[off] : NULL, out[off], acts[k], &ctx));
      }
      fk_dwc_disable(false);
      CHECK_MSG(memcmp(a, b, bytes) == 0, "%s: channel blocks differ from the phase planes (activation %d)", what, k);
      if (k >= 0 && keep) CHECK_MSG(memcmp(za, zb, bytes) == 0, "%s: the kept sums differ (activation %d)", what, k);
      if (k < 0) break;
    }
  free(a);
  free(b);
  free(za);
  free(zb);
  release(&c);
}

static void test_depthwise(void) {
  const geo cases[] = {
      {1, 16, 112, 112, 16, 3, 3, 16, IL(2, 2), IL(1, 1), NOLIST}, /* mobilenet's first depthwise */
      {2, 7, 14, 14, 7, 5, 5, 7, IL(1, 1), IL(2, 2), NOLIST},
      {1, 9, 14, 14, 9, 5, 5, 9, IL(2, 2), IL(2, 2), NOLIST},
      {2, 5, 7, 7, 5, 5, 5, 5, IL(1, 1), IL(2, 2), NOLIST}, /* 7x7 planes: a wide grid of 77 */
      {3, 4, 13, 11, 4, 3, 3, 4, IL(2, 2), IL(1, 1), NOLIST},
      {1, 6, 17, 19, 6, 3, 3, 6, IL(3, 3), IL(1, 1), NOLIST},
      {2, 3, 12, 9, 3, 3, 3, 3, IL(2, 1), IL(1, 1), NOLIST},
      {1, 4, 11, 10, 4, 3, 3, 4, IL(2, 2), IL(2, 1), IL(2, 2)},
      {1, 3, 8, 9, 3, 3, 3, 3, IL(1, 2), IL(0, 1, 2, 0), NOLIST},
      {2, 5, 3, 2, 5, 3, 3, 5, NOLIST, IL(1, 1), NOLIST}, /* planes smaller than the kernel's reach */
      {1, 4, 9, 9, 4, 7, 7, 4, IL(2, 2), IL(3, 3), NOLIST},
  };
  const char *names[] = {"depthwise 3x3 s2 112x112", "depthwise 5x5 s1",        "depthwise 5x5 s2 14x14",
                         "depthwise 5x5 s1 7x7",     "depthwise 3x3 s2 odd",    "depthwise 3x3 s3",
                         "depthwise 3x3 s2x1",       "depthwise s2 dilation 2", "depthwise asymmetric padding",
                         "depthwise tiny planes",    "depthwise 7x7 s2"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ccase c;
    CHECK(make(&c, cases[i]));
    if (c.conv) CHECK_MSG(dw_takes(cases[i], c.conv->shape.dims[2], c.conv->shape.dims[3]), "%s: not taken", names[i]);
    release(&c);
    one(names[i], cases[i]);
  }
  /* channel blocks (AVX-512, planes of at most 1024 padded positions) against the phase planes,
     bit for bit: several blocks with a partial last one, two images, strides 1 and 2 */
  const geo blocks[] = {
      {2, 40, 14, 14, 40, 5, 5, 40, IL(1, 1), IL(2, 2), NOLIST},
      {1, 24, 9, 11, 24, 3, 3, 24, IL(2, 2), IL(1, 1), NOLIST},
      {1, 48, 7, 7, 48, 5, 5, 48, IL(1, 1), IL(2, 2), NOLIST},
      {1, 19, 28, 28, 19, 3, 3, 19, IL(1, 1), IL(1, 1), NOLIST},
  };
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    char what[64];
    snprintf(what, sizeof what, "depthwise channel blocks %zu", i);
    one(what, blocks[i]);
    blocks_vs_planes(what, blocks[i]);
  }
  fk_dw_disable(true); /* the plain loops, with the generalised epilogue */
  one("depthwise 5x5 s2, plain loops", cases[2]);
  one("depthwise 3x3 s2x1, plain loops", cases[6]);
  fk_dw_disable(false);
}

static void test_strided(void) {
  const geo cases[] = {
      {1, 3, 45, 47, 6, 7, 7, 1, IL(2, 2), IL(3, 3), NOLIST},  /* the resnet stem, smaller */
      {2, 3, 29, 31, 16, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST}, /* mobilenet's first conv */
      {1, 8, 15, 14, 70, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST}, /* 70 channels: a ragged last tile */
      {2, 5, 16, 17, 9, 3, 3, 1, IL(3, 2), IL(1, 0), NOLIST},
      {1, 4, 13, 12, 5, 3, 3, 1, IL(2, 2), IL(2, 2), IL(2, 2)},
      {3, 6, 9, 10, 7, 2, 3, 1, IL(2, 2), IL(0, 1, 1, 0), NOLIST},
      {1, 16, 28, 28, 32, 3, 3, 1, IL(2, 2), IL(1, 1), NOLIST}, /* several tiles across threads */
  };
  const char *names[] = {"stem 7x7 s2",       "3x3 s2 from 3 channels",    "3x3 s2 70 channels", "3x3 s3x2",
                         "3x3 s2 dilation 2", "2x3 s2 asymmetric padding", "3x3 s2 batch 1 wide"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) one(names[i], cases[i]);
  /* stride 1 on small planes with many taps (the deep layers of resnet18; Winograd off) */
  fk_wino_disable(true);
  one("3x3 s1 32 channels 14x14", (geo){2, 32, 14, 14, 20, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  one("3x3 s1 64 channels 7x9 batch 1", (geo){1, 64, 7, 9, 70, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  fk_wino_disable(false);
  one("3x3 s1 dilation 2, 40 channels", (geo){1, 40, 11, 10, 9, 3, 3, 1, NOLIST, IL(2, 2), IL(2, 2)});
  fk_pconv_disable(true); /* the im2col path with the generalised epilogue */
  one("3x3 s2 70 channels, im2col", cases[2]);
  one("3x3 s2 batch 1 wide, im2col", cases[6]);
  fk_pconv_disable(false);
}

/* Does the Winograd path take this geometry (stride 1, 3x3, symmetric padding)? */
static bool wino_takes(geo g) {
  fk_wino d;
  size_t p = g.padding.n ? (size_t)g.padding.v[0] : 0;
  bool big = (size_t)(g.Cin * g.Cout) > (size_t)256 * 256;
  return fk_wino_available() && g.Cin >= 32 && g.Cout >= 32 &&
         fk_wino_init(&d, (size_t)g.N, (size_t)g.Cin, (size_t)g.Cout, (size_t)g.H, (size_t)g.W, p, p) &&
         (!big || d.N * d.T >= 256);
}

static void test_winograd(void) {
  const geo cases[] = {
      {1, 64, 14, 14, 64, 3, 3, 1, NOLIST, IL(1, 1), NOLIST},  /* resnet's layer, smaller: batch 1 */
      {2, 33, 9, 11, 40, 3, 3, 1, NOLIST, IL(1, 1), NOLIST},   /* odd extents: ragged tiles, 33 lanes */
      {3, 32, 10, 13, 48, 3, 3, 1, NOLIST, NOLIST, NOLIST},    /* no padding */
      {1, 32, 6, 70, 35, 3, 3, 1, NOLIST, IL(1, 1), NOLIST},   /* rows of 35 tiles: 3 lane blocks */
      {2, 32, 5, 6, 33, 3, 3, 1, NOLIST, IL(2, 2), NOLIST},    /* padding 2 */
      {1, 40, 2, 3, 32, 3, 3, 1, NOLIST, IL(1, 1), NOLIST},    /* planes smaller than a tile row */
      {11, 96, 20, 20, 96, 3, 3, 1, NOLIST, IL(1, 1), NOLIST}, /* two image groups (10 + 1) */
      {16, 260, 7, 7, 256, 3, 3, 1, NOLIST, IL(1, 1), NOLIST}, /* large weights, 256 tiles */
  };
  const char *names[] = {"winograd 64 channels 14x14 batch 1",
                         "winograd odd extents",
                         "winograd no padding",
                         "winograd rows of 35 tiles",
                         "winograd padding 2",
                         "winograd planes of 2x3",
                         "winograd two image groups",
                         "winograd large weights, many tiles"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (fk_isa_active() >= FK_ISA_AVX2) CHECK_MSG(wino_takes(cases[i]), "%s: not taken", names[i]);
    one(names[i], cases[i]);
  }
  /* declined: large weights with few tiles, stride 2, dilation, 5x5, groups, few channels */
  CHECK(!wino_takes((geo){1, 260, 7, 7, 256, 3, 3, 1, NOLIST, IL(1, 1), NOLIST}));
  CHECK(!wino_takes((geo){1, 16, 9, 9, 64, 3, 3, 1, NOLIST, IL(1, 1), NOLIST}));
}

static void test_other_paths(void) {
  /* the direct stride-1 kernels (bias + relu fused by them, the rest after), im2col, 1x1 GEMM */
  one("3x3 s1 direct", (geo){2, 5, 11, 13, 7, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  one("3x3 s1 direct batch 1", (geo){1, 8, 20, 21, 12, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  one("1x1", (geo){2, 8, 7, 6, 9, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  one("1x1 batch 1 channel blocks", (geo){1, 16, 7, 7, 67, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  /* expansions (packed tiles on the avx2 path): column blocks with a ragged last panel */
  one("1x1 batch 1 column blocks", (geo){1, 12, 19, 21, 30, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  one("1x1 expansion batch 3", (geo){3, 24, 9, 9, 96, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  /* one position (squeeze-excite; a GEMV on the avx2 path): C a multiple of 8, and 32 + 5 */
  one("1x1 on a 1x1 plane", (geo){1, 40, 1, 1, 72, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  one("1x1 on 1x1 planes batch 2", (geo){2, 37, 1, 1, 50, 1, 1, 1, NOLIST, NOLIST, NOLIST});
  one("1x1 s2", (geo){2, 9, 15, 14, 10, 1, 1, 1, IL(2, 2), NOLIST, NOLIST});
  one("groups 2 s2", (geo){2, 4, 9, 8, 6, 3, 3, 2, IL(2, 2), IL(1, 1), NOLIST});
  fk_dconv_disable(true);
  one("3x3 s1 im2col", (geo){2, 5, 11, 13, 7, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  one("3x3 s1 im2col batch 1", (geo){1, 4, 30, 29, 12, 3, 3, 1, NOLIST, IL(1, 1), NOLIST});
  fk_dconv_disable(false);
}

/* fk_conv_act == fk_act_f32 bit for bit (in place and not). */
static void test_act(void) {
  enum { N = 1 << 20 };
  float *x = malloc(N * sizeof(float)), *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  const rlx_act acts[3] = {RLX_ACT_RELU, RLX_ACT_HARD_SWISH, RLX_ACT_HARD_SIGMOID};
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < N; i++) /* a dense sweep of [-4, 4], then random bit patterns */
      if (pass == 0) {
        x[i] = -4.0f + 8.0f * (float)i / (float)N;
      } else {
        rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(rng_state >> 32);
        memcpy(&x[i], &u, sizeof u);
      }
    x[0] = NAN, x[1] = -0.0f, x[2] = INFINITY, x[3] = -INFINITY, x[4] = -3.0f, x[5] = 3.0f, x[6] = 1e-30f;
    for (int k = 0; k < 3; k++) {
      fk_act_f32(acts[k], x, a, N);
      fk_conv_act(acts[k], x, b, N);
      CHECK_MSG(memcmp(a, b, N * sizeof(float)) == 0, "fk_conv_act %d (pass %d) differs from fk_act_f32", (int)acts[k],
                pass);
      memcpy(b, x, N * sizeof(float));
      fk_conv_act(acts[k], b, b, N);
      CHECK_MSG(memcmp(a, b, N * sizeof(float)) == 0, "fk_conv_act %d in place (pass %d) differs", (int)acts[k], pass);
    }
  }
  free(x);
  free(a);
  free(b);
}

/* ---- the executor's fusion ---- */

static rlx_status act_graph(bool with_bias, int64_t groups, rlx_graph **out) {
  rlx_graph *g;
  RLX_TRY(rlx_graph_create(NULL, "conv_act", &g));
  *out = g;
  int64_t C = 6;
  rlx_id x, w, b, y, br, h, o;
  RLX_TRY(rlx_input(g, "x", SHP(F32, 2, C, 13, 11), &x));
  RLX_TRY(rlx_param(g, "w", SHP(F32, C, C / groups, 3, 3), &w));
  RLX_TRY(rlx_param(g, "b", SHP(F32, C), &b));
  rlx_attrs_Conv ca = {
      .kernel_size = NOLIST, .stride = IL(2, 2), .padding = IL(1, 1), .dilation = NOLIST, .groups = groups};
  RLX_TRY(rlx_build_Conv(g, (rlx_id[]){x, w}, 2, &ca, NULL, &y));
  if (with_bias) {
    RLX_TRY(rlx_reshape(g, b, 4, (int64_t[]){1, C, 1, 1}, &br));
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, y, br, &y));
  }
  RLX_TRY(rlx_activation(g, RLX_ACT_HARD_SWISH, y, &h));
  /* a second convolution reads the activation, so that the result is not a graph output */
  rlx_attrs_Conv c2 = {
      .kernel_size = NOLIST, .stride = NOLIST, .padding = NOLIST, .dilation = NOLIST, .groups = groups};
  RLX_TRY(rlx_build_Conv(g, (rlx_id[]){h, w}, 2, &c2, NULL, &o));
  RLX_TRY(rlx_activation(g, RLX_ACT_HARD_SIGMOID, o, &o));
  return rlx_graph_set_outputs(g, &o, 1);
}

static float *run_graph(rlx_graph *g, size_t *count) {
  rlx_compile_options co;
  rlx_compile_options_init(&co);
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  cpu.threads = 2;
  co.backend_options = &cpu;
  rlx_executable *e = NULL;
  rlx_status st = rlx_compile(g, "cpu", &co, &e);
  CHECK_MSG(st == RLX_OK, "compile: %s", rlx_last_error());
  if (st) return NULL;
  uint64_t saved = rng_state;
  rng_state = 99;
  for (uint32_t i = 0; i < rlx_executable_param_count(e); i++) {
    size_t n = numel(rlx_executable_param_shape(e, i));
    rlx_tensor t = {malloc(n * sizeof(float)), *rlx_executable_param_shape(e, i)};
    for (size_t k = 0; k < n; k++) ((float *)t.data)[k] = urand();
    CHECK_OK(rlx_executable_set_param(e, rlx_executable_param_name(e, i), &t));
    free(t.data);
  }
  rlx_tensor x = {malloc(2 * 6 * 13 * 11 * sizeof(float)), SHP(F32, 2, 6, 13, 11)};
  for (size_t k = 0; k < 2 * 6 * 13 * 11; k++) ((float *)x.data)[k] = 3.0f * urand();
  rng_state = saved;
  rlx_named_tensor in[1] = {{"x", x}};
  const rlx_tensor *outs;
  uint32_t n_out = 0;
  float *res = NULL;
  st = rlx_executable_run(e, in, 1, &outs, &n_out);
  CHECK_MSG(st == RLX_OK, "run: %s", rlx_last_error());
  if (st == RLX_OK && n_out == 1) {
    *count = numel(&outs[0].shape);
    res = malloc(*count * sizeof(float));
    memcpy(res, outs[0].data, *count * sizeof(float));
  }
  free(x.data);
  rlx_executable_free(e);
  return res;
}

static void test_executor(void) {
  for (int with_bias = 0; with_bias < 2; with_bias++)
    for (int64_t groups = 1; groups <= 6; groups += 5) { /* plain and depthwise */
      rlx_graph *g = NULL;
      CHECK_OK(act_graph(with_bias, groups, &g));
      setenv("RLX_CPU_NO_FUSION", "1", 1);
      size_t n0 = 0, n1 = 0;
      float *plain = run_graph(g, &n0);
      unsetenv("RLX_CPU_NO_FUSION");
      uint64_t before = rlx_cpu_fusion_count();
      float *fused = run_graph(g, &n1);
      /* both convolutions are fused with their activation (the second without a bias); each
         activation is planned in place over the sum or convolution it reads, which the fused
         thunk then never writes */
      CHECK_MSG(rlx_cpu_fusion_count() - before >= 2, "bias %d groups %lld: %llu fusions, 2 expected", with_bias,
                (long long)groups, (unsigned long long)(rlx_cpu_fusion_count() - before));
      CHECK(plain && fused && n0 == n1 && n0 > 0);
      if (plain && fused && n0 == n1)
        CHECK_MSG(memcmp(plain, fused, n0 * sizeof(float)) == 0, "bias %d groups %lld: fused differs from unfused",
                  with_bias, (long long)groups);
      free(plain);
      free(fused);
      rlx_graph_free(g);
    }
}

/* Convolutions by Constant weights on the Winograd path get their weights transformed once when
 * the executable is built (one fused with bias + Relu, one plain): the same bits as transforming
 * them on every run (RLX_CPU_NO_PACK=1), and two preparations counted where Winograd runs. */
static void test_prepared_weights(void) {
  float *res[2] = {NULL, NULL};
  size_t cnt = 2 * 36 * 9 * 10;
  for (int prep = 0; prep < 2; prep++) {
    if (!prep) setenv("RLX_CPU_NO_PACK", "1", 1);
    rlx_graph *g;
    rlx_id x, w1, w2, b, y, z;
    CHECK_OK(rlx_graph_create(NULL, "prepared_weights", &g));
    CHECK_OK(rlx_input(g, "x", SHP(F32, 2, 32, 9, 10), &x));
    float *W1 = malloc(40 * 32 * 9 * sizeof(float)), *W2 = malloc(36 * 40 * 9 * sizeof(float)), B[40];
    uint64_t saved = rng_state;
    rng_state = 7;
    for (size_t k = 0; k < 40 * 32 * 9; k++) W1[k] = 0.3f * urand();
    for (size_t k = 0; k < 36 * 40 * 9; k++) W2[k] = 0.3f * urand();
    for (size_t k = 0; k < 40; k++) B[k] = urand();
    CHECK_OK(rlx_constant(g, SHP(F32, 40, 32, 3, 3), W1, 40 * 32 * 9 * sizeof(float), &w1));
    CHECK_OK(rlx_constant(g, SHP(F32, 36, 40, 3, 3), W2, 36 * 40 * 9 * sizeof(float), &w2));
    CHECK_OK(rlx_constant(g, SHP(F32, 1, 40, 1, 1), B, sizeof B, &b));
    rlx_attrs_Conv ca = {.kernel_size = NOLIST, .stride = NOLIST, .padding = IL(1, 1), .dilation = NOLIST, .groups = 1};
    CHECK_OK(rlx_build_Conv(g, (rlx_id[]){x, w1}, 2, &ca, NULL, &y));
    CHECK_OK(rlx_binary(g, RLX_BINOP_ADD, y, b, &y));
    CHECK_OK(rlx_activation(g, RLX_ACT_RELU, y, &y));
    CHECK_OK(rlx_build_Conv(g, (rlx_id[]){y, w2}, 2, &ca, NULL, &z));
    CHECK_OK(rlx_graph_set_outputs(g, &z, 1));
    rlx_compile_options co;
    rlx_compile_options_init(&co);
    rlx_executable *e = NULL;
    uint64_t before = rlx_cpu_pack_count();
    CHECK_OK(rlx_compile(g, "cpu", &co, &e));
    uint64_t made = rlx_cpu_pack_count() - before;
    unsetenv("RLX_CPU_NO_PACK");
    bool want = prep && fk_wino_available();
    CHECK_MSG(made == (want ? 2u : 0u), "%llu prepared convolutions, expected %d", (unsigned long long)made,
              want ? 2 : 0);
    rlx_tensor xt = {malloc(2 * 32 * 90 * sizeof(float)), SHP(F32, 2, 32, 9, 10)};
    for (size_t k = 0; k < 2 * 32 * 90; k++) ((float *)xt.data)[k] = urand();
    rng_state = saved;
    rlx_named_tensor in[1] = {{"x", xt}};
    const rlx_tensor *outs;
    uint32_t n_out = 0;
    if (e && rlx_executable_run(e, in, 1, &outs, &n_out) == RLX_OK && n_out == 1 && numel(&outs[0].shape) == cnt) {
      res[prep] = malloc(cnt * sizeof(float));
      memcpy(res[prep], outs[0].data, cnt * sizeof(float));
    }
    CHECK_MSG(res[prep] != NULL, "prepared weights %d: the run failed: %s", prep, rlx_last_error());
    rlx_executable_free(e);
    rlx_graph_free(g);
    free(xt.data);
    free(W1);
    free(W2);
  }
  if (res[0] && res[1])
    CHECK_MSG(memcmp(res[0], res[1], cnt * sizeof(float)) == 0, "weights transformed once differ from per run");
  free(res[0]);
  free(res[1]);
}

int main(void) {
  CHECK_OK(fk_isa_configure()); /* RLX_CPU_ISA: scripts/test_isa.sh runs every path */
  fprintf(stderr, "conv inference paths on the %s path (phase-plane strided convs %s)\n", fk_isa_name(fk_isa_active()),
          fk_pconv_available() ? "on" : "off on this path");
  for (int t = 1; t <= 3; t++) CHECK_OK(rlx_cpu_pool_create(t, &pools[t]));
  test_act();
  test_depthwise();
  test_strided();
  test_winograd();
  test_other_paths();
  test_executor();
  test_prepared_weights();
  for (int t = 1; t <= 3; t++) rlx_cpu_pool_free(pools[t]);
  return rlx_test_finish("test_conv_infer");
}
