/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules of the shape-manipulation family and the resampling ops. */
#include "infer_test.h"

static void test_reshape(void) {
  rlx_attrs_Reshape r = {.new_shape = IL(6, 4)};
  EXPECT(Reshape, &r, NULL, SH(F32, 6, 4), SH(F32, 2, 3, 4));
  r.new_shape = IL(-1, 4);
  EXPECT(Reshape, &r, NULL, SH(F32, 6, 4), SH(F32, 2, 3, 4));
  r.new_shape = IL(2, -1);
  EXPECT(Reshape, &r, NULL, SH(I8, 2, 12), SH(I8, 2, 3, 4));
  r.new_shape = IL(24);
  EXPECT(Reshape, &r, NULL, SH(F32, 24), SH(F32, 2, 3, 4));
  r.new_shape = NOLIST; /* to a scalar */
  EXPECT(Reshape, &r, NULL, SCALAR(F32), SH(F32, 1, 1));
  r.new_shape = IL(1, 1);
  EXPECT(Reshape, &r, NULL, SH(F32, 1, 1), SCALAR(F32));
  /* 0 is a zero-length axis, not "copy the input dim" */
  r.new_shape = IL(0, 5);
  EXPECT(Reshape, &r, NULL, SH(F32, 0, 5), SH(F32, 5, 0));
  r.new_shape = IL(0, 5);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "attribute new_shape", SH(F32, 2, 5));
  r.new_shape = IL(0, -1);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "ambiguous", SH(F32, 0, 5));
  r.new_shape = IL(5, 5);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "attribute new_shape has 25 elements", SH(F32, 2, 3, 4));
  r.new_shape = IL(-1, 5);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "not a multiple of 5", SH(F32, 2, 3, 4));
  r.new_shape = IL(-1, -1);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "at most one", SH(F32, 2, 3, 4));
  r.new_shape = IL(-2, 12);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "entry 0 is -2", SH(F32, 2, 3, 4));
  r.new_shape = IL(1, 1, 1, 1, 1, 1, 1, 1, 1);
  EXPECT_ERR(Reshape, &r, NULL, SHAPE_ERR, "at most 8", SH(F32, 1));
  /* symbolic input: -1 becomes the only symbol, or ROWS when there are several */
  r.new_shape = IL(-1, 64);
  EXPECT(Reshape, &r, NULL, SH(F32, SYM(1), 64), SH(F32, SYM(1), 8, 8));
  EXPECT(Reshape, &r, NULL, SH(F32, SYM(RLX_SYM_ROWS), 64), SH(F32, SYM(0), SYM(1), 64));
  r.new_shape = IL(4, 16);
  EXPECT(Reshape, &r, NULL, SH(F32, 4, 16), SH(F32, SYM(0), 64));
}

static void test_transpose(void) {
  rlx_attrs_Transpose t = {.perm = IL(2, 0, 1)};
  EXPECT(Transpose, &t, NULL, SH(F32, 4, 2, 3), SH(F32, 2, 3, 4));
  t.perm = IL(0, 2, 1);
  EXPECT(Transpose, &t, NULL, SH(F32, SYM(0), 4, 3), SH(F32, SYM(0), 3, 4));
  t.perm = NOLIST;
  EXPECT(Transpose, &t, NULL, SCALAR(I32), SCALAR(I32));
  EXPECT_ERR(Transpose, &t, NULL, SHAPE_ERR, "attribute perm has 0 entries", SH(F32, 2, 3));
  t.perm = IL(0, 0);
  EXPECT_ERR(Transpose, &t, NULL, SHAPE_ERR, "appears twice", SH(F32, 2, 3));
  t.perm = IL(0, 2);
  EXPECT_ERR(Transpose, &t, NULL, SHAPE_ERR, "attribute perm: entry 1", SH(F32, 2, 3));
  t.perm = IL(-1, 0);
  EXPECT_ERR(Transpose, &t, NULL, SHAPE_ERR, "attribute perm: entry 0", SH(F32, 2, 3));
}

static void test_narrow_slice(void) {
  rlx_attrs_Narrow n = {.axis = 1, .start = 2, .len = 3};
  EXPECT(Narrow, &n, NULL, SH(F32, 4, 3, 6), SH(F32, 4, 10, 6));
  n = (rlx_attrs_Narrow){.axis = 1, .start = 7, .len = 3}; /* exactly fits */
  EXPECT(Narrow, &n, NULL, SH(F32, 4, 3), SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 1, .start = 8, .len = 3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "exceed axis 1", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 0, .start = 100, .len = 3}; /* symbolic axis: cannot check */
  EXPECT(Narrow, &n, NULL, SH(F32, 3, 10), SH(F32, SYM(0), 10));
  n = (rlx_attrs_Narrow){.axis = -1, .start = 0, .len = 3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 2, .start = 0, .len = 3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 0, .start = -1, .len = 3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "attribute start", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 0, .start = 0, .len = -3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "attribute len", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 0, .start = INT64_MAX, .len = 3};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "exceed", SH(F32, 4, 10));
  n = (rlx_attrs_Narrow){.axis = 0, .start = 0, .len = 0};
  EXPECT_ERR(Narrow, &n, NULL, SHAPE_ERR, "attribute axis", SCALAR(F32));

  rlx_attrs_Slice s = {.axis = 1, .start = 1, .len = 3, .step = 2}; /* indices 1, 3, 5 */
  EXPECT(Slice, &s, NULL, SH(F32, 4, 3), SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = -1, .start = 5, .len = 3, .step = -2}; /* 5, 3, 1 */
  EXPECT(Slice, &s, NULL, SH(F32, 4, 3), SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 0, .start = 9, .len = 0, .step = 1}; /* empty slice reads nothing */
  EXPECT(Slice, &s, NULL, SH(F32, 0, 6), SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 2, .len = 3, .step = 2}; /* 2, 4, 6: 6 is out of range */
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "read indices 2..6", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 3, .len = 3, .step = -2}; /* 3, 1, -1 */
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "read indices 3..-1", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 6, .len = 1, .step = 1};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "attributes start 6", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){
      .axis = 0, .start = 1000, .len = 2, .step = 5}; /* symbolic axis: only the lower bound is checked */
  EXPECT(Slice, &s, NULL, SH(F32, 2, 6), SH(F32, SYM(2), 6));
  s = (rlx_attrs_Slice){.axis = 0, .start = 3, .len = 5, .step = -1};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "read indices 3..-1", SH(F32, SYM(2), 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 0, .len = 2, .step = 0};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "attribute step", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 1, .start = 0, .len = -1, .step = 1};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "attribute len", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 2, .start = 0, .len = 1, .step = 1};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "attribute axis", SH(F32, 4, 6));
  s = (rlx_attrs_Slice){.axis = 0, .start = 1, .len = INT64_MAX, .step = INT64_MAX};
  EXPECT_ERR(Slice, &s, NULL, SHAPE_ERR, "overflow", SH(F32, 4, 6));
}

static void test_concat(void) {
  rlx_attrs_Concat c = {.axis = 1};
  EXPECT(Concat, &c, NULL, SH(F32, 2, 9), SH(F32, 2, 3), SH(F32, 2, 4), SH(F32, 2, 2));
  c.axis = -2;
  EXPECT(Concat, &c, NULL, SH(F32, 5, 3), SH(F32, 2, 3), SH(F32, 3, 3));
  c.axis = 0;
  EXPECT(Concat, &c, NULL, SH(F32, 2, 3), SH(F32, 2, 3)); /* a single operand */
  /* a symbolic extent on the concat axis is kept */
  EXPECT(Concat, &c, NULL, SH(F32, SYM(3), 3), SH(F32, 2, 3), SH(F32, SYM(3), 3), SH(F32, SYM(4), 3));
  EXPECT(Concat, &c, NULL, SH(F32, 7, SYM(1)), SH(F32, 2, SYM(1)), SH(F32, 5, SYM(1)));
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "operand 1", SH(F32, 2, SYM(1)), SH(F32, 5, SYM(2)));
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "operand 2 has shape [2, 4] f32; axis 1", SH(F32, 2, 3), SH(F32, 2, 3),
             SH(F32, 2, 4));
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "operand 1", SH(F32, 2, 3), SH(F32, 2, 3, 1));
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 2, 3), SH(F16, 2, 3));
  c.axis = 2; /* out of range is an error, not clamped */
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 3), SH(F32, 2, 3));
  c.axis = -3;
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "attribute axis", SH(F32, 2, 3), SH(F32, 2, 3));
  c.axis = 0;
  EXPECT_ERR(Concat, &c, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SCALAR(F32));
}

static void test_kv_append(void) {
  rlx_attrs_KvAppend k = {.axis = 2, .pos = 5};
  EXPECT(KvAppend, &k, NULL, SH(F32, 1, 4, 6, 8), SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 1, 8));
  k = (rlx_attrs_KvAppend){.axis = -2, .pos = 15};
  EXPECT(KvAppend, &k, NULL, SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 1, 8));
  k = (rlx_attrs_KvAppend){.axis = 1, .pos = 40}; /* symbolic capacity: cannot check pos */
  EXPECT(KvAppend, &k, NULL, SH(F32, 2, 41), SH(F32, 2, SYM(3)), SH(F32, 2, 1));
  k = (rlx_attrs_KvAppend){.axis = 1, .pos = INT64_MAX};
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "attribute pos", SH(F32, 2, SYM(3)), SH(F32, 2, 1));
  k = (rlx_attrs_KvAppend){.axis = 2, .pos = 16};
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "attribute pos", SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 1, 8));
  k = (rlx_attrs_KvAppend){.axis = 2, .pos = -1};
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "attribute pos", SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 1, 8));
  k = (rlx_attrs_KvAppend){.axis = 2, .pos = 3};
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "operand 1 (row)", SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 2, 8));
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "operand 1 (row)", SH(F32, 1, 4, 16, 8), SH(F32, 1, 2, 1, 8));
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "operand 1 (row)", SH(F32, 1, 4, 16, 8), SH(F32, 4, 1, 8));
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "operand 1 has dtype f16", SH(F32, 1, 4, 16, 8), SH(F16, 1, 4, 1, 8));
  k = (rlx_attrs_KvAppend){.axis = 4, .pos = 3};
  EXPECT_ERR(KvAppend, &k, NULL, SHAPE_ERR, "attribute axis", SH(F32, 1, 4, 16, 8), SH(F32, 1, 4, 1, 8));
}

static void test_expand(void) {
  rlx_attrs_Expand e = {.target_shape = IL(2, 3, 4)};
  EXPECT(Expand, &e, NULL, SH(F32, 2, 3, 4), SH(F32, 3, 1));
  EXPECT(Expand, &e, NULL, SH(F32, 2, 3, 4), SCALAR(F32));
  e.target_shape = IL(5, -1, 4);
  EXPECT(Expand, &e, NULL, SH(F32, 5, SYM(0), 4), SH(F32, SYM(0), 1));
  e.target_shape = IL(2, 0);
  EXPECT(Expand, &e, NULL, SH(F32, 2, 0), SH(F32, 2, 1));
  e.target_shape = IL(3, 6); /* a symbolic extent is trusted to broadcast */
  EXPECT(Expand, &e, NULL, SH(F32, 3, 6), SH(F32, 3, SYM(1)));
  e.target_shape = IL(2, 5);
  EXPECT_ERR(Expand, &e, NULL, SHAPE_ERR, "entry 1 is 5", SH(F32, 2, 3));
  e.target_shape = IL(3);
  EXPECT_ERR(Expand, &e, NULL, SHAPE_ERR, "cannot drop axes", SH(F32, 2, 3));
  e.target_shape = IL(-1, 2, 3);
  EXPECT_ERR(Expand, &e, NULL, SHAPE_ERR, "entry 0 is -1", SH(F32, 2, 3));
  e.target_shape = IL(-4, 3);
  EXPECT_ERR(Expand, &e, NULL, SHAPE_ERR, "entry 0 is -4", SH(F32, 2, 3));
  e.target_shape = IL(1, 1, 1, 1, 1, 1, 1, 1, 1);
  EXPECT_ERR(Expand, &e, NULL, SHAPE_ERR, "attribute target_shape", SH(F32, 1));
}

static void test_gather(void) {
  rlx_attrs_Gather g = {0};
  EXPECT(Gather, &g, NULL, SH(F16, 2, 7, 64), SH(F16, 1000, 64), SH(I64, 2, 7));
  g.axis = 1;
  EXPECT(Gather, &g, NULL, SH(F32, 4, 5, 6), SH(F32, 4, 10, 6), SH(F32, 5));
  g.axis = -1;
  EXPECT(Gather, &g, NULL, SH(F32, 4, 10), SH(F32, 4, 10, 6), SCALAR(I32));
  g.axis = 0;
  EXPECT(Gather, &g, NULL, SH(F32, SYM(0), SYM(1), 64), SH(F32, 1000, 64), SH(U32, SYM(0), SYM(1)));
  EXPECT_ERR(Gather, &g, NULL, SHAPE_ERR, "operand 1 (indices) has dtype f16", SH(F32, 10, 4), SH(F16, 3));
  EXPECT_ERR(Gather, &g, NULL, SHAPE_ERR, "operand 1 (indices) has dtype bool", SH(F32, 10, 4), SH(BOOL, 3));
  EXPECT_ERR(Gather, &g, NULL, SHAPE_ERR, "scalar", SCALAR(F32), SH(I64, 3));
  g.axis = 2;
  EXPECT_ERR(Gather, &g, NULL, SHAPE_ERR, "attribute axis", SH(F32, 10, 4), SH(I64, 3));
  g.axis = 0;
  EXPECT_ERR(Gather, &g, NULL, SHAPE_ERR, "rank 9", SH(F32, 10, 2, 2, 2, 2), SH(I64, 1, 1, 1, 1, 1));
}

static void test_reverse_roll_tile_trilu(void) {
  rlx_attrs_Reverse r = {.axes = IL(0, -1)};
  EXPECT(Reverse, &r, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4));
  r.axes = NOLIST;
  EXPECT(Reverse, &r, NULL, SCALAR(F32), SCALAR(F32));
  r.axes = IL(2, -1);
  EXPECT_ERR(Reverse, &r, NULL, SHAPE_ERR, "more than once", SH(F32, 2, 3, 4));
  r.axes = IL(3);
  EXPECT_ERR(Reverse, &r, NULL, SHAPE_ERR, "attribute axes", SH(F32, 2, 3, 4));

  rlx_attrs_Roll o = {.shifts = IL(1, -7, 2), .dims = IL(0, -1, 0)};
  EXPECT(Roll, &o, NULL, SH(F32, SYM(0), 5), SH(F32, SYM(0), 5));
  o = (rlx_attrs_Roll){.shifts = IL(1), .dims = NOLIST};
  EXPECT_ERR(Roll, &o, NULL, SHAPE_ERR, "attribute shifts", SH(F32, 3, 5));
  o = (rlx_attrs_Roll){.shifts = IL(1), .dims = IL(2)};
  EXPECT_ERR(Roll, &o, NULL, SHAPE_ERR, "attribute dims", SH(F32, 3, 5));
  o = (rlx_attrs_Roll){.shifts = IL(1), .dims = IL(-3)};
  EXPECT_ERR(Roll, &o, NULL, SHAPE_ERR, "attribute dims", SH(F32, 3, 5));

  rlx_attrs_Tile t = {.reps = IL(2, 1, 3)};
  EXPECT(Tile, &t, NULL, SH(F32, 4, SYM(0), 15), SH(F32, 2, SYM(0), 5));
  t.reps = IL(0, 2);
  EXPECT(Tile, &t, NULL, SH(F32, 0, 6), SH(F32, 7, 3));
  t.reps = NOLIST;
  EXPECT(Tile, &t, NULL, SCALAR(F32), SCALAR(F32));
  t.reps = IL(2, 2);
  EXPECT_ERR(Tile, &t, NULL, SHAPE_ERR, "symbolic", SH(F32, SYM(0), 3));
  t.reps = IL(2);
  EXPECT_ERR(Tile, &t, NULL, SHAPE_ERR, "attribute reps has 1 entries", SH(F32, 2, 3));
  t.reps = IL(2, -1);
  EXPECT_ERR(Tile, &t, NULL, SHAPE_ERR, "attribute reps: entry 1", SH(F32, 2, 3));
  t.reps = IL(INT64_MAX);
  EXPECT_ERR(Tile, &t, NULL, RLX_ERR_OVERFLOW, "attribute reps", SH(F32, 3));

  rlx_attrs_Trilu u = {.upper = true, .diagonal = -1};
  EXPECT(Trilu, &u, NULL, SH(F32, 2, 3, 4), SH(F32, 2, 3, 4));
  EXPECT(Trilu, &u, NULL, SH(I32, SYM(0), SYM(0)), SH(I32, SYM(0), SYM(0)));
  EXPECT_ERR(Trilu, &u, NULL, SHAPE_ERR, "rank >= 2", SH(F32, 4));
  EXPECT_ERR(Trilu, &u, NULL, SHAPE_ERR, "rank >= 2", SCALAR(F32));
}

static void test_pad(void) {
  rlx_attrs_Pad p;
  rlx_attrs_init(RLX_OP_Pad, &p);
  p.pads = IL(1, 2, 0, 3); /* axis 0: +1 +2, axis 1: +0 +3 */
  EXPECT(Pad, &p, NULL, SH(F32, 7, 8), SH(F32, 4, 5));
  p.pads = IL(1, 1, 0, 0); /* zero pads on a symbolic axis are fine */
  EXPECT(Pad, &p, NULL, SH(F32, 6, SYM(0)), SH(F32, 4, SYM(0)));
  p.pads = NOLIST;
  EXPECT(Pad, &p, NULL, SCALAR(F32), SCALAR(F32));
  p.pads = IL(1, 1);
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "attribute pads has 2 entries", SH(F32, 4, 5));
  p.pads = IL(0, 0, -1, 0);
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "pads must be >= 0", SH(F32, 4, 5));
  p.pads = IL(0, 0, 1, 0);
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "symbolic", SH(F32, 4, SYM(1)));
  p.mode = RLX_PAD_MODE_REFLECT;
  p.pads = IL(3, 3);
  EXPECT(Pad, &p, NULL, SH(F32, 10), SH(F32, 4));
  p.pads = IL(4, 0);
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "Reflect", SH(F32, 4));
  p.mode = RLX_PAD_MODE_CIRCULAR;
  EXPECT(Pad, &p, NULL, SH(F32, 8), SH(F32, 4));
  p.pads = IL(0, 5);
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "Circular", SH(F32, 4));
  p.mode = RLX_PAD_MODE_REPLICATE;
  EXPECT(Pad, &p, NULL, SH(F32, 9), SH(F32, 4));
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "Replicate", SH(F32, 0));
  p.mode = 9;
  EXPECT_ERR(Pad, &p, NULL, SHAPE_ERR, "attribute mode", SH(F32, 4));
  p.mode = RLX_PAD_MODE_CONSTANT;
  p.pads = IL(INT64_MAX, 1);
  EXPECT_ERR(Pad, &p, NULL, RLX_ERR_OVERFLOW, "attribute pads", SH(F32, 4));
}

static void test_resample(void) {
  EXPECT(ResizeNearest2x, NULL, NULL, SH(F32, 1, 3, 8, 10), SH(F32, 1, 3, 4, 5));
  EXPECT(ResizeNearest2x, NULL, NULL, SH(F32, SYM(0), 3, 8, 10), SH(F32, SYM(0), 3, 4, 5));
  rlx_shape decl = SH(F32, 1, 3, SYM(7), 10);
  EXPECT(ResizeNearest2x, NULL, &decl, SH(F32, 1, 3, SYM(7), 10), SH(F32, 1, 3, SYM(6), 5));
  EXPECT_ERR(ResizeNearest2x, NULL, NULL, SHAPE_ERR, "declare the output shape", SH(F32, 1, 3, SYM(6), 5));
  EXPECT_ERR(ResizeNearest2x, NULL, NULL, SHAPE_ERR, "NCHW", SH(F32, 3, 4, 5));

  rlx_attrs_Interpolate3d i = {.size = IL(4, 6, 8)};
  EXPECT(Interpolate3d, &i, NULL, SH(F32, 2, 3, 4, 6, 8), SH(F32, 2, 3, 2, 3, 5));
  EXPECT(Interpolate3d, &i, NULL, SH(F32, SYM(0), 3, 4, 6, 8), SH(F32, SYM(0), 3, SYM(1), 3, 5));
  EXPECT_ERR(Interpolate3d, &i, NULL, SHAPE_ERR, "NCDHW", SH(F32, 3, 2, 3, 5));
  EXPECT_ERR(Interpolate3d, &i, NULL, SHAPE_ERR, "empty spatial axis 3", SH(F32, 2, 3, 2, 0, 5));
  i.size = IL(4, 6);
  EXPECT_ERR(Interpolate3d, &i, NULL, SHAPE_ERR, "attribute size has 2 entries", SH(F32, 2, 3, 2, 3, 5));
  i.size = IL(4, 0, 2);
  EXPECT_ERR(Interpolate3d, &i, NULL, SHAPE_ERR, "attribute size: entry 1", SH(F32, 2, 3, 2, 3, 5));
}

/* Through the builder: the context names the node and op. */
static void test_through_graph(void) {
  rlx_graph *g;
  CHECK_OK(rlx_graph_create(NULL, "t", &g));
  rlx_id x, y;
  CHECK_OK(rlx_input(g, "x", SH(F32, 2, 3, 4), &x));
  CHECK_ERR(rlx_reshape(g, x, 2, (int64_t[]){5, 5}, &y), RLX_ERR_SHAPE, "(Reshape): attribute new_shape");
  CHECK_OK(rlx_reshape(g, x, 2, (int64_t[]){-1, 4}, &y));
  rlx_shape want = SH(F32, 6, 4);
  CHECK(rlx_shape_equal(&rlx_graph_node(g, y)->shape, &want));
  CHECK_ERR(rlx_transpose(g, x, 3, (int64_t[]){0, 1, 1}, &y), RLX_ERR_SHAPE, "(Transpose): attribute perm");
  rlx_graph_free(g);
}

int main(void) {
  test_reshape();
  test_transpose();
  test_narrow_slice();
  test_concat();
  test_kv_append();
  test_expand();
  test_gather();
  test_reverse_roll_tile_trilu();
  test_pad();
  test_resample();
  test_through_graph();
  return rlx_test_finish("infer_shape");
}
