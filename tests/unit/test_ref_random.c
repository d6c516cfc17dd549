/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, random family: Philox-4x32-10 against the published known-answer
 * vectors, RngUniform / RngNormal determinism, key and seed mixing, independence from the tensor
 * shape, half-open ranges, and distribution moments over 100k samples. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/ref/ref_util.h"
#include "rlx_test.h"
#include "core/elem.h"

#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define T(ptr, shape) ((rlx_tensor){(void *)(ptr), (shape)})

static rlx_graph *G;
static rlx_cpu_ctx CTX = {.threads = 1};

/* Runs an Rng kernel with no operand (template = NULL) or one shape-template operand. */
static rlx_status run(rlx_cpu_kernel k, rlx_op op, const void *attrs, rlx_tensor *out, const rlx_tensor *tmpl) {
  static int counter;
  rlx_id in = 0, id;
  if (tmpl) {
    char name[32];
    snprintf(name, sizeof name, "in%d", counter++);
    RLX_TRY(rlx_input(G, name, tmpl->shape, &in));
  }
  RLX_TRY(rlx_graph_add_unchecked(G, op, &in, tmpl ? 1 : 0, attrs, &out->shape, "t", &id));
  rlx_clear_error();
  return k(rlx_graph_node(G, id), tmpl, tmpl ? 1 : 0, out, &CTX);
}
#define RUN(Op, attrs, out, tmpl) run(rlx_cpu_ref_##Op, RLX_OP_##Op, (attrs), (out), (tmpl))

static void test_philox_kat(void) {
  /* Random123's published known-answer vectors for Philox-4x32-10. */
  static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                     {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                     {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
  static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                      {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                      {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
  for (int i = 0; i < 3; i++) {
    uint32_t out[4];
    ru_philox4x32_10(ctr[i], key[i], out);
    CHECK_MSG(memcmp(out, want[i], sizeof out) == 0, "KAT %d: %08x %08x %08x %08x", i, out[0], out[1], out[2], out[3]);
  }
  CHECK(ru_mix64(0) == 0 && ru_mix64(1) != 1);
}

static void moments(const float *x, size_t n, double *mean, double *var) {
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  *mean = s / (double)n;
  for (size_t i = 0; i < n; i++) s2 += (x[i] - *mean) * (x[i] - *mean);
  *var = s2 / (double)(n - 1);
}

static void test_uniform(void) {
  enum { N = 100000 };
  float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  rlx_attrs_RngUniform u = {.low = -2, .high = 3, .key = 1234};
  CHECK_OK(RUN(RngUniform, &u, &T(a, SH(F32, N)), NULL));
  float lo = a[0], hi = a[0];
  for (size_t i = 0; i < N; i++) {
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
  }
  CHECK(lo >= -2 && hi < 3 && lo < -1.99f && hi > 2.99f);
  double m, v;
  moments(a, N, &m, &v);
  CHECK_MSG(fabs(m - 0.5) < 0.02 && fabs(v - 25.0 / 12) < 0.05, "uniform mean %g var %g", m, v);
  /* element i is a pure function of (key, i): same key and index, same value, whatever the shape */
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 10, 10)), NULL));
  CHECK(memcmp(a, b, 100 * sizeof(float)) == 0);
  /* ...and it is exactly low + (high - low) * (top 24 bits of word 0 of block (i, 0, 0, 0)) */
  int bad = 0;
  for (uint32_t i = 0; i < 1000; i++) {
    uint32_t ctr[4] = {i, 0, 0, 0}, key[2] = {1234, 0}, w[4];
    ru_philox4x32_10(ctr, key, w);
    bad += a[i] != (float)(-2.0 + 5.0 * ((w[0] >> 8) * 0x1p-24));
  }
  CHECK(bad == 0);
  /* a template operand only supplies the shape */
  double tmpl_data[4] = {0};
  rlx_tensor tmpl = T(tmpl_data, SH(F64, 2, 2));
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 2, 2)), &tmpl));
  CHECK(memcmp(a, b, 4 * sizeof(float)) == 0);
  /* key, compile seed and op_seed all change the stream; restoring them restores it */
  u.key = 1235;
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 100)), NULL));
  CHECK(memcmp(a, b, 100 * sizeof(float)) != 0);
  u.key = 1234;
  CTX.rng_seed = 99;
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 100)), NULL));
  CHECK(memcmp(a, b, 100 * sizeof(float)) != 0);
  CTX.rng_seed = 0;
  u.op_seed = (rlx_of32){.has = true, .v = 0.0f};
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 100)), NULL));
  CHECK(memcmp(a, b, 100 * sizeof(float)) != 0);
  u.op_seed.has = false;
  CHECK_OK(RUN(RngUniform, &u, &T(b, SH(F32, 100)), NULL));
  CHECK(memcmp(a, b, 100 * sizeof(float)) == 0);

  /* f64 uses 53 bits; f16 / bf16 never round up to `high` */
  double *d = malloc(N * sizeof(double));
  rlx_attrs_RngUniform u01 = {.low = 0, .high = 1, .key = 5};
  CHECK_OK(RUN(RngUniform, &u01, &T(d, SH(F64, N)), NULL));
  double s = 0, dmax = 0;
  int low_bits = 0;
  for (size_t i = 0; i < N; i++) {
    s += d[i];
    dmax = d[i] > dmax ? d[i] : dmax;
    low_bits += ldexp(d[i], 24) != floor(ldexp(d[i], 24)); /* finer than 2^-24 */
  }
  CHECK(fabs(s / N - 0.5) < 0.01 && dmax < 1 && low_bits > N / 2);
  uint16_t *h = malloc(N * sizeof(uint16_t));
  rlx_dtype halves[] = {RLX_F16, RLX_BF16};
  for (int k = 0; k < 2; k++) {
    rlx_shape hs = rlx_shape_make(halves[k], 1, (rlx_dim[]){N});
    CHECK_OK(RUN(RngUniform, &u01, &T(h, hs), NULL));
    float hmax = 0, hmin = 1;
    for (size_t i = 0; i < N; i++) {
      float f = (float)rlx_elem_get(h, halves[k], i);
      hmax = f > hmax ? f : hmax;
      hmin = f < hmin ? f : hmin;
    }
    CHECK_MSG(hmax < 1 && hmin >= 0 && hmax > 0.99f, "%s max %g", rlx_dtype_name(halves[k]), (double)hmax);
  }
  /* errors */
  int32_t iy[2];
  CHECK_ERR(RUN(RngUniform, &u01, &T(iy, SH(I32, 2)), NULL), RLX_ERR_UNSUPPORTED, "i32");
  rlx_attrs_RngUniform badr = {.low = 1, .high = 1};
  CHECK_ERR(RUN(RngUniform, &badr, &T(a, SH(F32, 2)), NULL), RLX_ERR_INVALID_ARG, "low");
  CHECK_OK(RUN(RngUniform, &u01, &T(a, SH(F32, 0)), NULL));
  free(a);
  free(b);
  free(d);
  free(h);
}

static void test_normal(void) {
  enum { N = 100000 };
  float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
  rlx_attrs_RngNormal nrm = {.mean = 1.5f, .scale = 2.0f, .key = 77};
  CHECK_OK(RUN(RngNormal, &nrm, &T(a, SH(F32, N)), NULL));
  double m, v;
  moments(a, N, &m, &v);
  CHECK_MSG(fabs(m - 1.5) < 0.03 && fabs(v - 4.0) < 0.1, "normal mean %g var %g", m, v);
  /* shape of the distribution: about 68.27% within one sigma, 95.45% within two; light tails */
  size_t in1 = 0, in2 = 0, finite = 0;
  double m4 = 0;
  for (size_t i = 0; i < N; i++) {
    double z = (a[i] - 1.5) / 2.0;
    in1 += fabs(z) < 1;
    in2 += fabs(z) < 2;
    finite += isfinite(a[i]) != 0;
    m4 += z * z * z * z;
  }
  CHECK(finite == N);
  CHECK_MSG(fabs(in1 / (double)N - 0.6827) < 0.006 && fabs(in2 / (double)N - 0.9545) < 0.004, "%zu %zu", in1, in2);
  CHECK_MSG(fabs(m4 / N - 3.0) < 0.1, "kurtosis %g", m4 / N);
  /* deterministic; key-dependent */
  CHECK_OK(RUN(RngNormal, &nrm, &T(b, SH(F32, 1000)), NULL));
  CHECK(memcmp(a, b, 1000 * sizeof(float)) == 0);
  nrm.key = 78;
  CHECK_OK(RUN(RngNormal, &nrm, &T(b, SH(F32, 1000)), NULL));
  CHECK(memcmp(a, b, 1000 * sizeof(float)) != 0);
  /* f64 and bf16 outputs */
  double *d = malloc(N * sizeof(double));
  rlx_attrs_RngNormal std = {.mean = 0, .scale = 1, .key = 3};
  CHECK_OK(RUN(RngNormal, &std, &T(d, SH(F64, N)), NULL));
  double s = 0, s2 = 0;
  for (size_t i = 0; i < N; i++) {
    s += d[i];
    s2 += d[i] * d[i];
  }
  CHECK(fabs(s / N) < 0.015 && fabs(s2 / N - 1) < 0.03);
  uint16_t hb[4];
  CHECK_OK(RUN(RngNormal, &std, &T(hb, SH(BF16, 4)), NULL));
  for (int i = 0; i < 4; i++) CHECK(hb[i] == rlx_f32_to_bf16((float)d[i]));
  free(a);
  free(b);
  free(d);
}

int main(void) {
  if (rlx_graph_create(NULL, "ref_random", &G) != RLX_OK) return 1;
  test_philox_kat();
  test_uniform();
  test_normal();
  rlx_graph_free(G);
  return rlx_test_finish("ref_random");
}
