/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Element access (src/core/elem.c) for every dtype: the Cast rules the reference kernels and the
 * constant folder rely on. Expected values are C / NumPy facts written out by hand: float ->
 * integer truncates toward zero and saturates (NaN -> 0), integer -> integer conversion wraps,
 * exact integer stores saturate, ->bool is "not zero", complex keeps (re, im). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/elem.h"
#include "rlx_test.h"

static void expect_i(rlx_dtype t, double v, int64_t want) {
  unsigned char buf[16] = {0};
  rlx_elem_set(buf, t, 0, v);
  int64_t got = rlx_elem_get_i64(buf, t, 0);
  CHECK_MSG(got == want, "%s <- %g: read back %lld, expected %lld", rlx_dtype_name(t), v, (long long)got,
            (long long)want);
}

static void expect_set_i64(rlx_dtype t, int64_t v, int64_t want) {
  unsigned char buf[16] = {0};
  rlx_elem_set_i64(buf, t, 0, v);
  int64_t got = rlx_elem_get_i64(buf, t, 0);
  CHECK_MSG(got == want, "%s <- int %lld: read back %lld, expected %lld", rlx_dtype_name(t), (long long)v,
            (long long)got, (long long)want);
}

static void expect_wrap(int32_t v, rlx_dtype t, int64_t want) {
  unsigned char buf[16] = {0};
  rlx_elem_convert(&v, RLX_I32, buf, t, 1);
  int64_t got = rlx_elem_get_i64(buf, t, 0);
  CHECK_MSG(got == want, "convert i32 %d -> %s gave %lld, expected %lld", v, rlx_dtype_name(t), (long long)got,
            (long long)want);
}

int main(void) {
  /* float -> integer: truncation toward zero, saturation, NaN -> 0 */
  expect_i(RLX_I8, 3.9, 3);
  expect_i(RLX_I8, -3.9, -3);
  expect_i(RLX_I8, 1000, 127);
  expect_i(RLX_I8, -1000, -128);
  expect_i(RLX_I16, 1e9, 32767);
  expect_i(RLX_I32, 1e30, 2147483647);
  expect_i(RLX_I32, -1e30, -2147483647 - 1);
  expect_i(RLX_I32, NAN, 0);
  expect_i(RLX_I64, 1e19, INT64_MAX);
  expect_i(RLX_I64, -1e19, INT64_MIN);
  expect_i(RLX_I64, 9007199254740993.0, 9007199254740992); /* 2^53 + 1 is not a double */
  expect_i(RLX_U8, 300, 255);
  expect_i(RLX_U8, -5, 0);
  expect_i(RLX_U32, 5e9, 4294967295);
  expect_i(RLX_U32, -1, 0);
  expect_i(RLX_BOOL, 0.25, 1);
  expect_i(RLX_BOOL, 0.0, 0);
  expect_i(RLX_BOOL, NAN, 1);
  expect_i(RLX_F32, 1e30, INT64_MAX); /* exact read of a float saturates too */
  expect_i(RLX_F16, -2.75, -2);

  /* exact integer stores saturate to the lane */
  expect_set_i64(RLX_I8, 300, 127);
  expect_set_i64(RLX_I8, -300, -128);
  expect_set_i64(RLX_U8, -1, 0);
  expect_set_i64(RLX_U32, INT64_MAX, 4294967295);
  expect_set_i64(RLX_I32, INT64_MIN, -2147483647 - 1);
  expect_set_i64(RLX_I64, INT64_MIN, INT64_MIN);
  expect_set_i64(RLX_BOOL, -7, 1);

  /* integer -> integer conversion wraps (NumPy's astype) */
  expect_wrap(300, RLX_I8, 44);
  expect_wrap(-1, RLX_U8, 255);
  expect_wrap(-1, RLX_U32, 4294967295);
  expect_wrap(65537, RLX_I16, 1);
  expect_wrap(-2, RLX_I64, -2);
  expect_wrap(2, RLX_BOOL, 1);

  /* half precisions round once, to nearest even, through double */
  uint16_t h = 0;
  rlx_elem_set(&h, RLX_F16, 0, 1.0 + 0x1p-11); /* halfway between 1 and 1 + 2^-10: to even (1) */
  CHECK(h == 0x3c00);
  rlx_elem_set(&h, RLX_F16, 0, 1.0 + 0x1p-11 + 0x1p-30); /* just above halfway: up */
  CHECK(h == 0x3c01);
  rlx_elem_set(&h, RLX_BF16, 0, 1.0 + 0x1p-8 + 0x1p-40); /* just above bf16's halfway: up */
  CHECK(h == 0x3f81);
  rlx_elem_set(&h, RLX_F16, 0, 1e6);
  CHECK(h == 0x7c00); /* overflow -> inf */
  CHECK(rlx_elem_get(&h, RLX_F16, 0) == INFINITY);

  /* complex: both parts; real dtypes read imag 0 and drop it on store */
  double z[2] = {0};
  float zf[2] = {0};
  rlx_elem_set_c(z, RLX_C128, 0, 1.5, -2.5);
  CHECK(z[0] == 1.5 && z[1] == -2.5);
  double re = 0, im = 7;
  rlx_elem_get_c(z, RLX_C128, 0, &re, &im);
  CHECK(re == 1.5 && im == -2.5);
  rlx_elem_convert(z, RLX_C128, zf, RLX_C64, 1);
  CHECK(zf[0] == 1.5f && zf[1] == -2.5f);
  rlx_elem_set(zf, RLX_C64, 0, 4.0);
  CHECK(zf[0] == 4.0f && zf[1] == 0.0f);
  int32_t k = 9;
  rlx_elem_get_c(&k, RLX_I32, 0, &re, &im);
  CHECK(re == 9 && im == 0);
  rlx_elem_set_c(&k, RLX_I32, 0, -3.5, 100);
  CHECK(k == -3);

  /* signedness comes from the lane types */
  CHECK(rlx_dtype_is_signed_int(RLX_I8) && rlx_dtype_is_signed_int(RLX_I64));
  CHECK(!rlx_dtype_is_signed_int(RLX_U8) && !rlx_dtype_is_signed_int(RLX_U32));
  CHECK(!rlx_dtype_is_signed_int(RLX_F32) && !rlx_dtype_is_signed_int(RLX_BOOL));
  return rlx_test_finish("elem");
}
