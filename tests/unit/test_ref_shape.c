/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels, shape family: Reshape, Transpose, Narrow, Concat, Expand, Gather (with
 * out-of-range indices), Reverse, Pad (all modes), Slice (negative steps), Tile, Trilu, Roll,
 * KvAppend; empty and rank-0 tensors. Expected tensors are written out by hand or indexed
 * independently. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_a_test.h"
#include "core/elem.h"

static bool same_i32(const int32_t *got, const int32_t *want, int n) {
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) {
      fprintf(stderr, "  element %d: got %d, want %d\n", i, got[i], want[i]);
      return false;
    }
  return true;
}

static void test_reshape_transpose(void) {
  int32_t x[24], y[24];
  for (int i = 0; i < 24; i++) x[i] = i;
  rlx_attrs_Reshape r = {.new_shape = IL(4, -1)};
  CHECK_OK(RUN(Reshape, &r, &T(y, SH(I32, 4, 6)), T(x, SH(I32, 2, 3, 4))));
  CHECK(same_i32(y, x, 24));
  CHECK_ERR(RUN(Reshape, &r, &T(y, SH(I32, 4, 5)), T(x, SH(I32, 2, 3, 4))), RLX_ERR_INVALID_ARG, "element count");
  float s = 3.5f, s1[1];
  r.new_shape = IL(1);
  CHECK_OK(RUN(Reshape, &r, &T(s1, SH(F32, 1)), T(&s, SCALAR(F32))));
  CHECK(s1[0] == 3.5f);

  /* [2,3,4] with perm (2,0,1) -> [4,2,3]: out[i][j][k] = x[j][k][i] */
  rlx_attrs_Transpose t = {.perm = IL(2, 0, 1)};
  CHECK_OK(RUN(Transpose, &t, &T(y, SH(I32, 4, 2, 3)), T(x, SH(I32, 2, 3, 4))));
  int bad = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) bad += y[(i * 2 + j) * 3 + k] != x[(j * 3 + k) * 4 + i];
  CHECK(bad == 0);
  /* complex 2x2 transpose moves whole (re, im) pairs */
  double c[] = {1, -1, 2, -2, 3, -3, 4, -4}, cy[8];
  t.perm = IL(1, 0);
  CHECK_OK(RUN(Transpose, &t, &T(cy, SH(C128, 2, 2)), T(c, SH(C128, 2, 2))));
  CHECK(cy[0] == 1 && cy[1] == -1 && cy[2] == 3 && cy[3] == -3 && cy[4] == 2 && cy[5] == -2 && cy[6] == 4);
  /* empty and rank 0 */
  CHECK_OK(RUN(Transpose, &t, &T(y, SH(I32, 3, 0)), T(x, SH(I32, 0, 3))));
  t.perm = NOLIST;
  CHECK_OK(RUN(Transpose, &t, &T(s1, SCALAR(F32)), T(&s, SCALAR(F32))));
  CHECK(s1[0] == 3.5f);
  t.perm = IL(0, 0);
  CHECK_ERR(RUN(Transpose, &t, &T(y, SH(I32, 2, 2)), T(x, SH(I32, 2, 2))), RLX_ERR_INVALID_ARG, "perm");
  t.perm = IL(1, 0); /* wrong declared output */
  CHECK_ERR(RUN(Transpose, &t, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))), RLX_ERR_INVALID_ARG, "output");
}

static void test_narrow_concat_expand(void) {
  int32_t x[10], y[16];
  for (int i = 0; i < 10; i++) x[i] = i;
  rlx_attrs_Narrow n = {.axis = 1, .start = 1, .len = 3};
  CHECK_OK(RUN(Narrow, &n, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 5))));
  CHECK(same_i32(y, (int32_t[]){1, 2, 3, 6, 7, 8}, 6));
  n.len = 0;
  CHECK_OK(RUN(Narrow, &n, &T(y, SH(I32, 2, 0)), T(x, SH(I32, 2, 5))));
  n.start = 3;
  n.len = 3;
  CHECK_ERR(RUN(Narrow, &n, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 5))), RLX_ERR_INVALID_ARG, "start");

  /* concat on the last axis of [2,1], [2,3], [2,0] */
  int32_t a[] = {10, 20}, b[] = {1, 2, 3, 4, 5, 6};
  rlx_attrs_Concat c = {.axis = -1};
  CHECK_OK(RUN(Concat, &c, &T(y, SH(I32, 2, 4)), T(a, SH(I32, 2, 1)), T(b, SH(I32, 2, 3)), T(x, SH(I32, 2, 0))));
  CHECK(same_i32(y, (int32_t[]){10, 1, 2, 3, 20, 4, 5, 6}, 8));
  c.axis = 0;
  CHECK_OK(RUN(Concat, &c, &T(y, SH(I32, 4, 1)), T(a, SH(I32, 2, 1)), T(a, SH(I32, 2, 1))));
  CHECK(same_i32(y, (int32_t[]){10, 20, 10, 20}, 4));
  CHECK_ERR(RUN(Concat, &c, &T(y, SH(I32, 5, 1)), T(a, SH(I32, 2, 1)), T(a, SH(I32, 2, 1))), RLX_ERR_INVALID_ARG,
            "add up");
  CHECK_OK(RUN(Concat, &c, &T(y, SH(I32, 0, 2)), T(x, SH(I32, 0, 2)), T(x, SH(I32, 0, 2))));

  /* expand [3,1] -> [2,3,4]; rank 0 -> [2,2] */
  int32_t e[] = {7, 8, 9}, ey[24];
  rlx_attrs_Expand ex = {.target_shape = IL(2, 3, 4)};
  CHECK_OK(RUN(Expand, &ex, &T(ey, SH(I32, 2, 3, 4)), T(e, SH(I32, 3, 1))));
  int bad = 0;
  for (int i = 0; i < 24; i++) bad += ey[i] != e[(i / 4) % 3];
  CHECK(bad == 0);
  uint16_t h = rlx_f32_to_f16(1.25f), hy[4];
  ex.target_shape = IL(2, 2);
  CHECK_OK(RUN(Expand, &ex, &T(hy, SH(F16, 2, 2)), T(&h, SCALAR(F16))));
  CHECK(hy[0] == h && hy[3] == h);
  CHECK_ERR(RUN(Expand, &ex, &T(ey, SH(I32, 2, 2)), T(e, SH(I32, 3))), RLX_ERR_INVALID_ARG, "broadcast");
}

static void test_gather(void) {
  float tab[] = {0, 1, 10, 11, 20, 21, 30, 31}, y[12]; /* [4, 2] */
  int64_t idx[] = {3, 0, 1, 3};
  rlx_attrs_Gather g = {.axis = 0};
  CHECK_OK(RUN(Gather, &g, &T(y, SH(F32, 2, 2, 2)), T(tab, SH(F32, 4, 2)), T(idx, SH(I64, 2, 2))));
  float want[] = {30, 31, 0, 1, 10, 11, 30, 31};
  CHECK(memcmp(y, want, sizeof want) == 0);
  /* axis 1 with f32-encoded indices */
  float fidx[] = {1, 0, 1};
  g.axis = 1;
  CHECK_OK(RUN(Gather, &g, &T(y, SH(F32, 4, 3)), T(tab, SH(F32, 4, 2)), T(fidx, SH(F32, 3))));
  CHECK(y[0] == 1 && y[1] == 0 && y[2] == 1 && y[9] == 31 && y[10] == 30);
  uint8_t uidx[] = {2};
  g.axis = 0;
  CHECK_OK(RUN(Gather, &g, &T(y, SH(F32, 1, 2)), T(tab, SH(F32, 4, 2)), T(uidx, SH(U8, 1))));
  CHECK(y[0] == 20 && y[1] == 21);
  int64_t scalar_idx[] = {1};
  CHECK_OK(RUN(Gather, &g, &T(y, SH(F32, 2)), T(tab, SH(F32, 4, 2)), T(scalar_idx, SCALAR(I64))));
  CHECK(y[0] == 10 && y[1] == 11);
  /* out of range: no negative wrap; the message names the index and the bound */
  int32_t oob[] = {1, 4};
  CHECK_ERR(RUN(Gather, &g, &T(y, SH(F32, 2, 2)), T(tab, SH(F32, 4, 2)), T(oob, SH(I32, 2))), RLX_ERR_RUNTIME,
            "index 4");
  CHECK(strstr(rlx_last_error(), "[0, 4)") && strstr(rlx_last_error(), "Gather node"));
  int32_t neg[] = {-1};
  CHECK_ERR(RUN(Gather, &g, &T(y, SH(F32, 1, 2)), T(tab, SH(F32, 4, 2)), T(neg, SH(I32, 1))), RLX_ERR_RUNTIME,
            "index -1");
  float frac[] = {1.5f};
  CHECK_ERR(RUN(Gather, &g, &T(y, SH(F32, 1, 2)), T(tab, SH(F32, 4, 2)), T(frac, SH(F32, 1))), RLX_ERR_RUNTIME,
            "not an integer");
  /* empty index list */
  CHECK_OK(RUN(Gather, &g, &T(y, SH(F32, 0, 2)), T(tab, SH(F32, 4, 2)), T(idx, SH(I64, 0))));
}

static void test_reverse_slice_tile(void) {
  int32_t x[] = {1, 2, 3, 4, 5, 6}, y[24];
  rlx_attrs_Reverse r = {.axes = IL(0, -1)};
  CHECK_OK(RUN(Reverse, &r, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){6, 5, 4, 3, 2, 1}, 6));
  r.axes = IL(1);
  CHECK_OK(RUN(Reverse, &r, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){3, 2, 1, 6, 5, 4}, 6));

  /* negative steps */
  rlx_attrs_Slice s = {.axis = 0, .start = 5, .len = 3, .step = -2};
  CHECK_OK(RUN(Slice, &s, &T(y, SH(I32, 3)), T(x, SH(I32, 6))));
  CHECK(same_i32(y, (int32_t[]){6, 4, 2}, 3));
  s = (rlx_attrs_Slice){.axis = -1, .start = 2, .len = 3, .step = -1};
  CHECK_OK(RUN(Slice, &s, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){3, 2, 1, 6, 5, 4}, 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 0, .len = 2, .step = 2};
  CHECK_OK(RUN(Slice, &s, &T(y, SH(I32, 2, 2)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){1, 3, 4, 6}, 4));
  s = (rlx_attrs_Slice){.axis = 0, .start = 1, .len = 3, .step = -1};
  CHECK_ERR(RUN(Slice, &s, &T(y, SH(I32, 3)), T(x, SH(I32, 6))), RLX_ERR_INVALID_ARG, "step");
  s.step = 0;
  CHECK_ERR(RUN(Slice, &s, &T(y, SH(I32, 3)), T(x, SH(I32, 6))), RLX_ERR_INVALID_ARG, "step");
  s = (rlx_attrs_Slice){.axis = 0, .start = 0, .len = 0, .step = 1};
  CHECK_OK(RUN(Slice, &s, &T(y, SH(I32, 0)), T(x, SH(I32, 6))));

  /* tile [2,2] by (2,3) -> [4,6] */
  rlx_attrs_Tile t = {.reps = IL(2, 3)};
  CHECK_OK(RUN(Tile, &t, &T(y, SH(I32, 4, 6)), T(x, SH(I32, 2, 2))));
  int bad = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) bad += y[i * 6 + j] != x[(i % 2) * 2 + (j % 2)];
  CHECK(bad == 0);
  t.reps = IL(0, 1);
  CHECK_OK(RUN(Tile, &t, &T(y, SH(I32, 0, 2)), T(x, SH(I32, 2, 2))));
  t.reps = IL(2, 2);
  CHECK_ERR(RUN(Tile, &t, &T(y, SH(I32, 4, 6)), T(x, SH(I32, 2, 2))), RLX_ERR_INVALID_ARG, "output");
}

static void test_pad(void) {
  /* x = [[1,2,3],[4,5,6]] padded ((1,0),(2,1)) */
  int32_t x[] = {1, 2, 3, 4, 5, 6}, y[18];
  static const int32_t want[RLX_PAD_MODE_COUNT][18] = {
      [RLX_PAD_MODE_CONSTANT] = {9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9},
      [RLX_PAD_MODE_REFLECT] = {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5},
      [RLX_PAD_MODE_REPLICATE] = {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6},
      [RLX_PAD_MODE_CIRCULAR] = {5, 6, 4, 5, 6, 4, 2, 3, 1, 2, 3, 1, 5, 6, 4, 5, 6, 4},
  };
  for (int m = 0; m < RLX_PAD_MODE_COUNT; m++) {
    rlx_attrs_Pad p = {.pads = IL(1, 0, 2, 1), .mode = m, .value = 9.0f};
    memset(y, 0, sizeof y);
    CHECK_OK(RUN(Pad, &p, &T(y, SH(I32, 3, 6)), T(x, SH(I32, 2, 3))));
    CHECK_MSG(same_i32(y, want[m], 18), "Pad mode %s", rlx_enum_pad_mode.names[m]);
  }
  /* Reflect needs pad < extent, Circular pad <= extent */
  rlx_attrs_Pad p = {.pads = IL(2, 0, 0, 0), .mode = RLX_PAD_MODE_REFLECT};
  CHECK_ERR(RUN(Pad, &p, &T(y, SH(I32, 4, 3)), T(x, SH(I32, 2, 3))), RLX_ERR_INVALID_ARG, "Reflect");
  p.mode = RLX_PAD_MODE_CIRCULAR;
  CHECK_OK(RUN(Pad, &p, &T(y, SH(I32, 4, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, 12));
  p.pads = IL(3, 0, 0, 0);
  CHECK_ERR(RUN(Pad, &p, &T(y, SH(I32, 5, 3)), T(x, SH(I32, 2, 3))), RLX_ERR_INVALID_ARG, "Circular");
  /* constant fill in f16 and a 1-D f32 */
  uint16_t h[] = {rlx_f32_to_f16(1.0f)}, hy[3];
  p = (rlx_attrs_Pad){.pads = IL(1, 1), .mode = RLX_PAD_MODE_CONSTANT, .value = 0.5f};
  CHECK_OK(RUN(Pad, &p, &T(hy, SH(F16, 3)), T(h, SH(F16, 1))));
  CHECK(hy[0] == 0x3800 && hy[1] == 0x3c00 && hy[2] == 0x3800);
  /* padding an empty axis with a constant */
  float fy[2];
  p.value = -1.0f;
  CHECK_OK(RUN(Pad, &p, &T(fy, SH(F32, 2)), T(x, SH(F32, 0))));
  CHECK(fy[0] == -1.0f && fy[1] == -1.0f);
}

static void test_trilu_roll_kv(void) {
  int32_t x[18], y[18];
  for (int i = 0; i < 18; i++) x[i] = i + 1;
  struct {
    bool upper;
    int64_t diag;
  } cases[] = {{false, 0}, {true, 1}, {false, -1}, {true, -1}};
  for (int c = 0; c < 4; c++) {
    rlx_attrs_Trilu t = {.upper = cases[c].upper, .diagonal = cases[c].diag};
    CHECK_OK(RUN(Trilu, &t, &T(y, SH(I32, 2, 3, 3)), T(x, SH(I32, 2, 3, 3))));
    int bad = 0;
    for (int b = 0; b < 2; b++)
      for (int r = 0; r < 3; r++)
        for (int col = 0; col < 3; col++) {
          bool keep = cases[c].upper ? col - r >= cases[c].diag : col - r <= cases[c].diag;
          int i = (b * 3 + r) * 3 + col;
          bad += y[i] != (keep ? x[i] : 0);
        }
    CHECK_MSG(bad == 0, "Trilu case %d", c);
  }
  rlx_attrs_Trilu t = {0};
  CHECK_ERR(RUN(Trilu, &t, &T(y, SH(I32, 3)), T(x, SH(I32, 3))), RLX_ERR_INVALID_ARG, "rank");

  /* roll [[1,2,3],[4,5,6]]: axis 1 by 1 -> [[3,1,2],[6,4,5]]; then axis 0 by -1 -> rows swapped */
  rlx_attrs_Roll r = {.shifts = IL(1), .dims = IL(1)};
  CHECK_OK(RUN(Roll, &r, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){3, 1, 2, 6, 4, 5}, 6));
  r = (rlx_attrs_Roll){.shifts = IL(1, -1), .dims = IL(-1, 0)};
  CHECK_OK(RUN(Roll, &r, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, (int32_t[]){6, 4, 5, 3, 1, 2}, 6));
  r = (rlx_attrs_Roll){.shifts = IL(1, 1, 7), .dims = IL(1, 1, 1)}; /* 1 + 1 + 7 = 9 = 0 mod 3 */
  CHECK_OK(RUN(Roll, &r, &T(y, SH(I32, 2, 3)), T(x, SH(I32, 2, 3))));
  CHECK(same_i32(y, x, 6));
  r = (rlx_attrs_Roll){.shifts = IL(-4), .dims = IL(0)};
  CHECK_OK(RUN(Roll, &r, &T(y, SH(I32, 5)), T(x, SH(I32, 5))));
  CHECK(same_i32(y, (int32_t[]){5, 1, 2, 3, 4}, 5));

  /* KvAppend: cache [2,3,2] along axis 1, row [2,1,2], pos 1 -> [2,2,2] */
  int32_t cache[12], row[] = {-1, -2, -3, -4}, kv[8];
  for (int i = 0; i < 12; i++) cache[i] = i;
  rlx_attrs_KvAppend k = {.axis = 1, .pos = 1};
  CHECK_OK(RUN(KvAppend, &k, &T(kv, SH(I32, 2, 2, 2)), T(cache, SH(I32, 2, 3, 2)), T(row, SH(I32, 2, 1, 2))));
  CHECK(same_i32(kv, (int32_t[]){0, 1, -1, -2, 6, 7, -3, -4}, 8));
  k.pos = 0;
  CHECK_OK(RUN(KvAppend, &k, &T(kv, SH(I32, 2, 1, 2)), T(cache, SH(I32, 2, 3, 2)), T(row, SH(I32, 2, 1, 2))));
  CHECK(same_i32(kv, row, 4));
  k = (rlx_attrs_KvAppend){.axis = 0, .pos = 2};
  CHECK_OK(RUN(KvAppend, &k, &T(kv, SH(I32, 3, 2)), T(cache, SH(I32, 6, 2)), T(row, SH(I32, 1, 2))));
  CHECK(same_i32(kv, (int32_t[]){0, 1, 2, 3, -1, -2}, 6));
  k.pos = 6;
  CHECK_ERR(RUN(KvAppend, &k, &T(kv, SH(I32, 7, 2)), T(cache, SH(I32, 6, 2)), T(row, SH(I32, 1, 2))),
            RLX_ERR_INVALID_ARG, "pos");
}

int main(void) {
  if (rlx_graph_create(NULL, "ref_shape", &G) != RLX_OK) return 1;
  test_reshape_transpose();
  test_narrow_concat_expand();
  test_gather();
  test_reverse_slice_tile();
  test_pad();
  test_trilu_roll_kv();
  rlx_graph_free(G);
  return rlx_test_finish("ref_shape");
}
