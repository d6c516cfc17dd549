/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX sequences and optionals in the importer: the sequence ops, SequenceMap, sequences through
 * Identity / If / Loop, optionals, and sequence / optional graph inputs and outputs (given and
 * returned as NAME.0, NAME.1, ...). Models are written with onnx_model_writer.h, imported,
 * compiled and run on the CPU; expected values are computed here from the inputs. Error paths:
 * out-of-range positions, positions known only at run time, mismatched element dtypes, empty
 * sequences and optionals, sequences fed to tensor ops, sequence inputs without a length. */
#include <math.h>
#include <stdio.h>

#include "onnx_model_writer.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

/* Does t hold exactly the floats want[0..n) with the given dims? */
static bool is_f32(const rlx_tensor *t, int rank, const int64_t *dims, const float *want, size_t n) {
  return out_shape_is(t, RLX_F32, rank, dims) && out_close_f32(t, want, n, 0);
}
static int64_t scalar_i64(const rlx_tensor *t) {
  return t->shape.dtype == RLX_I64 ? *(const int64_t *)t->data : INT64_MIN;
}

static mw_buf f32_in(const char *name, int rank, const int64_t *dims) {
  return mw_value(name, mw_tensor_type(MW_F32, rank, dims));
}
static mw_buf out_any(const char *name) { return mw_value(name, mw_untyped()); }

#define D(...) ((int64_t[]){__VA_ARGS__})
#define NELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {10, 20, 30, 40, 50, 60}, C[6] = {-1, -2, -3, -4, -5, -6},
             E[6] = {7, 8, 9, 10, 11, 12};

static rlx_named_tensor f32_tensor(const char *name, float *data, int rank, const int64_t *dims) {
  return tin(name, data, RLX_F32, rank, dims);
}

/* ======================================================================================
 * Sequence ops inside a graph
 * ====================================================================================== */

static void test_construct_insert_erase_at(void) {
  /* s = [a, b, c]; insert d at 1 -> [a, d, b, c]; erase last -> [a, d, b]; y = s[1] = d,
   * z = s[-1] = b, n = length = 3 */
  mw_buf nodes[] = {
      mw_node("SequenceConstruct", "a,b,c", "s0", NULL, 0), mw_const_i64("one", 1, 0),
      mw_node("SequenceInsert", "s0,d,one", "s1", NULL, 0), mw_node("SequenceErase", "s1", "s2", NULL, 0),
      mw_node("SequenceAt", "s2,one", "y", NULL, 0),        mw_const_i64("minus1", -1, 1),
      mw_node("SequenceAt", "s2,minus1", "z", NULL, 0),     mw_node("SequenceLength", "s2", "n", NULL, 0),
  };
  mw_buf ins[] = {f32_in("a", 2, D(2, 3)), f32_in("b", 2, D(2, 3)), f32_in("c", 2, D(2, 3)), f32_in("d", 2, D(2, 3))};
  mw_buf outs[] = {out_any("y"), out_any("z"), out_any("n")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 4, outs, 3));
  rlx_named_tensor feed[] = {f32_tensor("a", A, 2, D(2, 3)), f32_tensor("b", B, 2, D(2, 3)),
                             f32_tensor("c", C, 2, D(2, 3)), f32_tensor("d", E, 2, D(2, 3))};
  runner r;
  if (mw_run(&m, NULL, feed, 4, &r)) {
    CHECK(r.n_outs == 3);
    CHECK(is_f32(&r.outs[0], 2, D(2, 3), E, 6));
    CHECK(is_f32(&r.outs[1], 2, D(2, 3), B, 6));
    CHECK(scalar_i64(&r.outs[2]) == 3);
  }
  runner_free(&r);
  mw_free(&m);
}

static void test_concat_from_sequence(void) {
  mw_buf a1 = mw_attr_int("axis", 1), a0 = mw_attr_int("axis", 0), na = mw_attr_int("new_axis", 1);
  mw_buf nodes[] = {
      mw_node("SequenceConstruct", "a,b", "s", NULL, 0),
      mw_node("ConcatFromSequence", "s", "cat", &a1, 1),
      mw_node("ConcatFromSequence", "s", "stk", MW_ARR(a0, na), 2),
  };
  mw_buf ins[] = {f32_in("a", 2, D(2, 3)), f32_in("b", 2, D(2, 3))};
  mw_buf outs[] = {out_any("cat"), out_any("stk")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 2, outs, 2));
  rlx_named_tensor feed[] = {f32_tensor("a", A, 2, D(2, 3)), f32_tensor("b", B, 2, D(2, 3))};
  float cat[12], stk[12];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) cat[i * 6 + j] = A[i * 3 + j], cat[i * 6 + 3 + j] = B[i * 3 + j];
  for (int i = 0; i < 6; i++) stk[i] = A[i], stk[6 + i] = B[i];
  runner r;
  if (mw_run(&m, NULL, feed, 2, &r)) {
    CHECK(r.n_outs == 2);
    CHECK(is_f32(&r.outs[0], 2, D(2, 6), cat, 12));
    CHECK(is_f32(&r.outs[1], 3, D(2, 2, 3), stk, 12));
  }
  runner_free(&r);
  mw_free(&m);
}

static void test_split_to_sequence(void) {
  /* chunks of 2 along axis 1 of [2, 3]: [2, 2] and [2, 1]; the last is column 2.
   * no split, keepdims 0, axis 0: two rows of shape [3]; element 1 is row 1. */
  mw_buf ax1 = mw_attr_int("axis", 1), kd = mw_attr_int("keepdims", 0);
  mw_buf nodes[] = {
      mw_const_i64("two", 2, 0),
      mw_node("SplitToSequence", "x,two", "s", &ax1, 1),
      mw_const_i64("last", -1, 0),
      mw_node("SequenceAt", "s,last", "y", NULL, 0),
      mw_node("SequenceLength", "s", "n", NULL, 0),
      mw_node("SplitToSequence", "x", "rows", &kd, 1),
      mw_const_i64("one", 1, 0),
      mw_node("SequenceAt", "rows,one", "row1", NULL, 0),
  };
  mw_buf ins[] = {f32_in("x", 2, D(2, 3))};
  mw_buf outs[] = {out_any("y"), out_any("n"), out_any("row1")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 1, outs, 3));
  rlx_named_tensor feed[] = {f32_tensor("x", A, 2, D(2, 3))};
  runner r;
  if (mw_run(&m, NULL, feed, 1, &r)) {
    CHECK(r.n_outs == 3);
    CHECK(is_f32(&r.outs[0], 2, D(2, 1), (float[]){A[2], A[5]}, 2));
    CHECK(scalar_i64(&r.outs[1]) == 2);
    CHECK(is_f32(&r.outs[2], 1, D(3), A + 3, 3));
  }
  runner_free(&r);
  mw_free(&m);
}

static void test_sequence_map(void) {
  /* rows of x mapped through body(r, t) = r + t, then stacked: y[i][j] = x[i][j] + t[j] */
  mw_buf bn[] = {mw_node("Add", "r,t", "o", NULL, 0)};
  mw_buf bin[] = {f32_in("r", 1, D(3)), f32_in("t", 1, D(3))};
  mw_buf bout[] = {out_any("o")};
  mw_buf body = mw_graph("body", bn, 1, bin, 2, bout, 1);
  mw_buf kd = mw_attr_int("keepdims", 0), ab = mw_attr_graph("body", body), a0 = mw_attr_int("axis", 0),
         na = mw_attr_int("new_axis", 1);
  mw_buf nodes[] = {
      mw_node("SplitToSequence", "x", "rows", &kd, 1),
      mw_node("SequenceMap", "rows,t", "mapped", &ab, 1),
      mw_node("ConcatFromSequence", "mapped", "y", MW_ARR(a0, na), 2),
  };
  mw_buf ins[] = {f32_in("x", 2, D(2, 3)), f32_in("t", 1, D(3))};
  mw_buf outs[] = {out_any("y")};
  mw_buf m = mw_model(17, mw_graph("g", nodes, NELEMS(nodes), ins, 2, outs, 1));
  rlx_named_tensor feed[] = {f32_tensor("x", A, 2, D(2, 3)), f32_tensor("t", B, 1, D(3))};
  float want[6];
  for (int i = 0; i < 6; i++) want[i] = A[i] + B[i % 3];
  runner r;
  if (mw_run(&m, NULL, feed, 2, &r)) {
    CHECK(r.n_outs == 1);
    CHECK(is_f32(&r.outs[0], 2, D(2, 3), want, 6));
  }
  runner_free(&r);
  mw_free(&m);
}

static void test_loop_and_if(void) {
  /* Loop 3 times appending float(i) * x to a sequence (carried through Identity); If (known
   * condition) picks a branch returning a sequence; y = concat of the loop's sequence. */
  mw_buf to = mw_attr_int("to", MW_F32);
  mw_buf bn[] = {
      mw_node("Cast", "i", "fi", &to, 1),
      mw_node("Mul", "fi,x", "v", NULL, 0),
      mw_node("SequenceInsert", "s_in,v", "s_new", NULL, 0),
      mw_node("Identity", "s_new", "s_out", NULL, 0),
      mw_node("Identity", "c_in", "c_out", NULL, 0),
  };
  mw_buf bin[] = {mw_value("i", mw_tensor_type(MW_I64, 0, NULL)), mw_value("c_in", mw_tensor_type(MW_BOOL, 0, NULL)),
                  mw_value("s_in", mw_seq_type(mw_tensor_type(MW_F32, 1, D(2))))};
  mw_buf bout[] = {out_any("c_out"), out_any("s_out")};
  mw_buf body = mw_graph("body", bn, NELEMS(bn), bin, 3, bout, 2);
  mw_buf tn[] = {mw_node("Identity", "loop_s", "t_s", NULL, 0)};
  mw_buf tout[] = {out_any("t_s")};
  mw_buf en[] = {mw_node("SequenceConstruct", "x", "e_s", NULL, 0)};
  mw_buf eout[] = {out_any("e_s")};
  mw_buf then_g = mw_graph("then", tn, 1, NULL, 0, tout, 1), else_g = mw_graph("else", en, 1, NULL, 0, eout, 1);
  bool tv = true;
  int64_t one = 1;
  mw_buf ct = mw_attr_tensor("value", mw_tensor(NULL, MW_BOOL, 0, &one, &tv, 1));
  mw_buf dt = mw_attr_int("dtype", MW_F32), ab = mw_attr_graph("body", body), ax = mw_attr_int("axis", 0);
  mw_buf th = mw_attr_graph("then_branch", then_g), el = mw_attr_graph("else_branch", else_g);
  mw_buf nodes[] = {
      mw_node("SequenceEmpty", NULL, "empty", &dt, 1),    mw_const_i64("trip", 3, 0),
      mw_node("Constant", NULL, "cond", &ct, 1),          mw_node("Loop", "trip,cond,empty", "loop_s", &ab, 1),
      mw_node("If", "cond", "picked", MW_ARR(th, el), 2), mw_node("ConcatFromSequence", "picked", "y", &ax, 1),
      mw_node("SequenceLength", "picked", "n", NULL, 0),
  };
  mw_buf ins[] = {f32_in("x", 1, D(2))};
  mw_buf outs[] = {out_any("y"), out_any("n")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 1, outs, 2));
  float x[2] = {1.5f, -2};
  rlx_named_tensor feed[] = {f32_tensor("x", x, 1, D(2))};
  float want[6];
  for (int i = 0; i < 3; i++) want[2 * i] = (float)i * x[0], want[2 * i + 1] = (float)i * x[1];
  runner r;
  if (mw_run(&m, NULL, feed, 1, &r)) {
    CHECK(r.n_outs == 2);
    CHECK(is_f32(&r.outs[0], 1, D(6), want, 6));
    CHECK(scalar_i64(&r.outs[1]) == 3);
  }
  runner_free(&r);
  mw_free(&m);
}

static void test_optionals(void) {
  mw_buf ty = mw_attr_type("type", mw_tensor_type(MW_F32, 1, D(2)));
  mw_buf nodes[] = {
      mw_node("Optional", "a", "o", NULL, 0),
      mw_node("OptionalHasElement", "o", "has", NULL, 0),
      mw_node("OptionalGetElement", "o", "got", NULL, 0),
      mw_node("Optional", NULL, "none", &ty, 1),
      mw_node("OptionalHasElement", "none", "has_none", NULL, 0),
      mw_node("Identity", "none", "none2", NULL, 0),
      mw_node("OptionalHasElement", "none2", "has_none2", NULL, 0),
  };
  mw_buf ins[] = {f32_in("a", 2, D(2, 3))};
  mw_buf outs[] = {out_any("has"), out_any("got"), out_any("has_none"), out_any("has_none2")};
  mw_buf m = mw_model(15, mw_graph("g", nodes, NELEMS(nodes), ins, 1, outs, 4));
  rlx_named_tensor feed[] = {f32_tensor("a", A, 2, D(2, 3))};
  runner r;
  if (mw_run(&m, NULL, feed, 1, &r)) {
    CHECK(r.n_outs == 4);
    CHECK(r.outs[0].shape.dtype == RLX_BOOL && *(const uint8_t *)r.outs[0].data == 1);
    CHECK(is_f32(&r.outs[1], 2, D(2, 3), A, 6));
    CHECK(r.outs[2].shape.dtype == RLX_BOOL && *(const uint8_t *)r.outs[2].data == 0);
    CHECK(r.outs[3].shape.dtype == RLX_BOOL && *(const uint8_t *)r.outs[3].data == 0);
  }
  runner_free(&r);
  mw_free(&m);
}

/* If with a condition known only at run time: both branches give sequences of 2 elements (one
 * RLX If per element); y = concat of the chosen one. A branch of another length is a gap. */
static void test_if_runtime_sequences(void) {
  mw_buf tn[] = {mw_node("SequenceConstruct", "a,b", "t_s", NULL, 0)};
  mw_buf en[] = {mw_node("Neg", "a", "na", NULL, 0), mw_node("SequenceConstruct", "b,na", "e_s", NULL, 0)};
  mw_buf tout[] = {mw_value("t_s", mw_seq_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf eout[] = {mw_value("e_s", mw_seq_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf th = mw_attr_graph("then_branch", mw_graph("then", tn, 1, NULL, 0, tout, 1));
  mw_buf el = mw_attr_graph("else_branch", mw_graph("else", en, 2, NULL, 0, eout, 1));
  mw_buf ax = mw_attr_int("axis", 0);
  mw_buf nodes[] = {mw_node("If", "cond", "s", MW_ARR(th, el), 2), mw_node("ConcatFromSequence", "s", "y", &ax, 1)};
  mw_buf ins[] = {mw_value("cond", mw_tensor_type(MW_BOOL, 0, NULL)), f32_in("a", 1, D(3)), f32_in("b", 1, D(3))};
  mw_buf outs[] = {out_any("y")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 3, outs, 1));
  for (int cv = 0; cv < 2; cv++) {
    bool cond = cv == 1;
    rlx_named_tensor feed[] = {
        {"cond", {&cond, rlx_shape_scalar(RLX_BOOL)}}, f32_tensor("a", A, 1, D(3)), f32_tensor("b", B, 1, D(3))};
    float want[6];
    for (int i = 0; i < 3; i++) {
      want[i] = cond ? A[i] : B[i];
      want[3 + i] = cond ? B[i] : -A[i];
    }
    runner r;
    /* no options: the condition's value is not known while importing */
    if (mw_run(&m, NULL, feed, 3, &r)) {
      CHECK(r.n_outs == 1);
      CHECK(is_f32(&r.outs[0], 1, D(6), want, 6));
    }
    runner_free(&r);
  }
  mw_free(&m);
  /* then gives 2 elements, else 1 */
  mw_buf tn2[] = {mw_node("SequenceConstruct", "a,b", "t_s", NULL, 0)};
  mw_buf en2[] = {mw_node("SequenceConstruct", "b", "e_s", NULL, 0)};
  mw_buf tout2[] = {mw_value("t_s", mw_seq_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf eout2[] = {mw_value("e_s", mw_seq_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf th2 = mw_attr_graph("then_branch", mw_graph("then", tn2, 1, NULL, 0, tout2, 1));
  mw_buf el2 = mw_attr_graph("else_branch", mw_graph("else", en2, 1, NULL, 0, eout2, 1));
  mw_buf nodes2[] = {mw_node("If", "cond", "s", MW_ARR(th2, el2), 2), mw_node("SequenceLength", "s", "y", NULL, 0)};
  mw_buf ins2[] = {mw_value("cond", mw_tensor_type(MW_BOOL, 0, NULL)), f32_in("a", 1, D(3)), f32_in("b", 1, D(3))};
  mw_buf outs2[] = {out_any("y")};
  mw_buf m2 = mw_model(13, mw_graph("g", nodes2, NELEMS(nodes2), ins2, 3, outs2, 1));
  rlx_graph *g = NULL;
  CHECK_ERR(mw_import(&m2, NULL, &g), RLX_ERR_UNSUPPORTED,
            "output 0 is a sequence of 2 elements in then_branch but a sequence of 1 element in else_branch");
  rlx_graph_free(g);
  mw_free(&m2);
}

/* ======================================================================================
 * Errors
 * ====================================================================================== */

/* Imports a one-input-"a" model of the given nodes with output "y" and expects an error. */
static void expect_error(int opset, mw_buf *nodes, int nn, rlx_status code, const char *substr, int line) {
  mw_buf ins[] = {f32_in("a", 2, D(2, 3)), mw_value("p", mw_tensor_type(MW_I64, 0, NULL))};
  mw_buf outs[] = {out_any("y")};
  mw_buf m = mw_model(opset, mw_graph("g", nodes, nn, ins, 2, outs, 1));
  rlx_graph *g = NULL;
  rlx_status s = mw_import(&m, NULL, &g);
  CHECK_MSG(s == code && strstr(rlx_last_error(), substr), "line %d: expected %s containing \"%s\", got %s: %s", line,
            rlx_status_text(code), substr, rlx_status_text(s), rlx_last_error());
  rlx_graph_free(g);
  mw_free(&m);
}

static void test_errors(void) {
  { /* position past the end */
    mw_buf n[] = {mw_node("SequenceConstruct", "a,a,a", "s", NULL, 0), mw_const_i64("k", 3, 0),
                  mw_node("SequenceAt", "s,k", "y", NULL, 0)};
    expect_error(13, n, 3, RLX_ERR_FORMAT, "position 3 is out of range for a sequence of 3 elements", __LINE__);
  }
  { /* position before the front */
    mw_buf n[] = {mw_node("SequenceConstruct", "a,a", "s", NULL, 0), mw_const_i64("k", -3, 0),
                  mw_node("SequenceInsert", "s,a,k", "s2", NULL, 0), mw_node("SequenceAt", "s2,k", "y", NULL, 0)};
    expect_error(13, n, 4, RLX_ERR_FORMAT, "position -3 is out of range", __LINE__);
  }
  { /* a position only known at run time */
    mw_buf n[] = {mw_node("SequenceConstruct", "a,a", "s", NULL, 0), mw_node("SequenceAt", "s,p", "y", NULL, 0)};
    expect_error(13, n, 2, RLX_ERR_UNSUPPORTED, "must be known at import time", __LINE__);
  }
  { /* mismatched element dtypes */
    mw_buf n[] = {mw_node("SequenceConstruct", "a", "s", NULL, 0), mw_node("SequenceInsert", "s,p", "s2", NULL, 0),
                  mw_node("SequenceAt", "s2,p", "y", NULL, 0)};
    expect_error(13, n, 3, RLX_ERR_FORMAT, "the inserted tensor is i64 but the sequence holds f32", __LINE__);
  }
  {
    mw_buf n[] = {mw_node("SequenceConstruct", "a,p", "s", NULL, 0), mw_node("SequenceLength", "s", "y", NULL, 0)};
    expect_error(13, n, 2, RLX_ERR_FORMAT, "sequence elements must share one dtype", __LINE__);
  }
  { /* nothing to take or concatenate */
    mw_buf ax = mw_attr_int("axis", 0);
    mw_buf n[] = {mw_node("SequenceEmpty", NULL, "s", NULL, 0), mw_node("ConcatFromSequence", "s", "y", &ax, 1)};
    expect_error(13, n, 2, RLX_ERR_FORMAT, "the sequence is empty", __LINE__);
  }
  {
    mw_buf n[] = {mw_node("SequenceEmpty", NULL, "s", NULL, 0), mw_node("SequenceErase", "s", "s2", NULL, 0),
                  mw_node("SequenceLength", "s2", "y", NULL, 0)};
    expect_error(13, n, 3, RLX_ERR_FORMAT, "the sequence is empty", __LINE__);
  }
  { /* an empty optional has no element */
    mw_buf ty = mw_attr_type("type", mw_tensor_type(MW_F32, 1, D(2)));
    mw_buf n[] = {mw_node("Optional", NULL, "o", &ty, 1), mw_node("OptionalGetElement", "o", "y", NULL, 0)};
    expect_error(15, n, 2, RLX_ERR_FORMAT, "empty optional", __LINE__);
  }
  { /* a sequence where a tensor op expects a tensor */
    mw_buf n[] = {mw_node("SequenceConstruct", "a", "s", NULL, 0), mw_node("Add", "s,a", "y", NULL, 0)};
    expect_error(13, n, 2, RLX_ERR_UNSUPPORTED, "input 0 (\"s\") is a sequence; this op takes tensors", __LINE__);
  }
  { /* a tensor where a sequence is expected */
    mw_buf n[] = {mw_node("SequenceLength", "a", "y", NULL, 0)};
    expect_error(13, n, 1, RLX_ERR_FORMAT, "must be a sequence, not a tensor", __LINE__);
  }
  { /* SequenceMap over sequences of different lengths */
    mw_buf bn[] = {mw_node("Add", "r,t", "o", NULL, 0)};
    mw_buf bin[] = {out_any("r"), out_any("t")}, bout[] = {out_any("o")};
    mw_buf ab = mw_attr_graph("body", mw_graph("body", bn, 1, bin, 2, bout, 1));
    mw_buf n[] = {mw_node("SequenceConstruct", "a,a", "s", NULL, 0), mw_node("SequenceConstruct", "a", "s1", NULL, 0),
                  mw_node("SequenceMap", "s,s1", "m", &ab, 1), mw_node("SequenceLength", "m", "y", NULL, 0)};
    expect_error(17, n, 4, RLX_ERR_FORMAT, "input 1 is a sequence of 1 elements but input 0 has 2", __LINE__);
  }
}

/* ======================================================================================
 * Sequence and optional graph inputs and outputs
 * ====================================================================================== */

/* The name of graph output i (its node's name). */
static const char *out_name(const rlx_graph *g, uint32_t i) {
  const rlx_node *n = rlx_graph_node(g, rlx_graph_outputs(g)[i]);
  return n && n->name ? n->name : "";
}

static void test_sequence_graph_io(void) {
  /* x: sequence input of 2 given as x.0 ([2, 3]) and x.1 ([1, 3]), elements of different shapes;
   * y = SequenceInsert(x, t) at the front -> outputs y.0 = t, y.1 = x.0, y.2 = x.1; n = 3 */
  mw_buf nodes[] = {mw_const_i64("zero", 0, 0), mw_node("SequenceInsert", "x,t,zero", "y", NULL, 0),
                    mw_node("SequenceLength", "y", "n", NULL, 0)};
  mw_buf ins[] = {mw_value("x", mw_seq_type(mw_tensor_type(MW_F32, -1, NULL))), f32_in("t", 1, D(3))};
  mw_buf outs[] = {mw_value("y", mw_seq_type(mw_tensor_type(MW_F32, -1, NULL))), out_any("n")};
  mw_buf m = mw_model(13, mw_graph("g", nodes, NELEMS(nodes), ins, 2, outs, 2));
  rlx_named_tensor feed[] = {f32_tensor("x.0", A, 2, D(2, 3)), f32_tensor("x.1", B, 2, D(1, 3)),
                             f32_tensor("t", C, 1, D(3))};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = feed;
  o.n_inputs = 3;
  runner r;
  if (mw_run(&m, &o, feed, 3, &r)) {
    CHECK(r.n_outs == 4);
    CHECK(strcmp(out_name(r.g, 0), "y.0") == 0 && strcmp(out_name(r.g, 1), "y.1") == 0 &&
          strcmp(out_name(r.g, 2), "y.2") == 0 && strcmp(out_name(r.g, 3), "n") == 0);
    CHECK(is_f32(&r.outs[0], 1, D(3), C, 3));
    CHECK(is_f32(&r.outs[1], 2, D(2, 3), A, 6));
    CHECK(is_f32(&r.outs[2], 2, D(1, 3), B, 3));
    CHECK(scalar_i64(&r.outs[3]) == 3);
  }
  runner_free(&r);
  /* the same model with an empty sequence (a length in the options, no element tensors) */
  const char *sn[] = {"x"};
  int64_t sl[] = {0};
  o.inputs = feed + 2;
  o.n_inputs = 1;
  o.seq_names = sn;
  o.seq_lengths = sl;
  o.n_seqs = 1;
  if (mw_run(&m, &o, feed + 2, 1, &r)) {
    CHECK(r.n_outs == 2);
    CHECK(strcmp(out_name(r.g, 0), "y.0") == 0);
    CHECK(is_f32(&r.outs[0], 1, D(3), C, 3));
    CHECK(scalar_i64(&r.outs[1]) == 1);
  }
  runner_free(&r);
  /* no length anywhere: a gap saying how to give it */
  rlx_graph *g = NULL;
  o.n_seqs = 0;
  CHECK_ERR(mw_import(&m, &o, &g), RLX_ERR_UNSUPPORTED,
            "graph input \"x\" is a sequence whose length is only known at run time");
  rlx_graph_free(g);
  g = NULL;
  /* an element of the wrong dtype */
  int64_t bad[3] = {1, 2, 3};
  rlx_named_tensor wrong[] = {{"x.0", {bad, rlx_shape_make(RLX_I64, 1, D(3))}}, f32_tensor("t", C, 1, D(3))};
  o.inputs = wrong;
  o.n_inputs = 2;
  CHECK_ERR(mw_import(&m, &o, &g), RLX_ERR_SHAPE,
            "graph input \"x.0\" is f32 in the model but the given tensor is i64");
  rlx_graph_free(g);
  g = NULL;
  /* only optionals can be absent */
  sl[0] = RLX_ONNX_ABSENT;
  o.inputs = feed + 2;
  o.n_inputs = 1;
  o.n_seqs = 1;
  CHECK_ERR(mw_import(&m, &o, &g), RLX_ERR_INVALID_ARG, "is marked absent but is not an optional");
  rlx_graph_free(g);
  mw_free(&m);
}

static void test_optional_graph_io(void) {
  /* o: optional tensor input; h = has element; y = Identity(o) (an optional output) */
  mw_buf nodes[] = {mw_node("OptionalHasElement", "o", "h", NULL, 0), mw_node("Identity", "o", "y", NULL, 0)};
  mw_buf ins[] = {mw_value("o", mw_opt_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf outs[] = {out_any("h"), mw_value("y", mw_opt_type(mw_tensor_type(MW_F32, 1, D(3))))};
  mw_buf m = mw_model(15, mw_graph("g", nodes, NELEMS(nodes), ins, 1, outs, 2));
  rlx_named_tensor feed[] = {f32_tensor("o", A, 1, D(3))};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = feed;
  o.n_inputs = 1;
  runner r;
  if (mw_run(&m, &o, feed, 1, &r)) { /* present: an Input "o" and an output "y" */
    CHECK(r.n_outs == 2);
    CHECK(r.outs[0].shape.dtype == RLX_BOOL && *(const uint8_t *)r.outs[0].data == 1);
    CHECK(strcmp(out_name(r.g, 1), "y") == 0);
    CHECK(is_f32(&r.outs[1], 1, D(3), A, 3));
  }
  runner_free(&r);
  const char *sn[] = {"o"};
  int64_t sl[] = {RLX_ONNX_ABSENT};
  rlx_onnx_options_init(&o);
  o.seq_names = sn;
  o.seq_lengths = sl;
  o.n_seqs = 1;
  if (mw_run(&m, &o, NULL, 0, &r)) { /* absent: no Input, no output for y */
    CHECK(r.n_outs == 1);
    CHECK(r.outs[0].shape.dtype == RLX_BOOL && *(const uint8_t *)r.outs[0].data == 0);
  }
  runner_free(&r);
  rlx_graph *g = NULL;
  o.n_seqs = 0;
  CHECK_ERR(mw_import(&m, &o, &g), RLX_ERR_UNSUPPORTED, "is an optional whose presence is only known at run time");
  rlx_graph_free(g);
  mw_free(&m);
}

/* ======================================================================================
 * SequenceProto / OptionalProto files
 * ====================================================================================== */

static void test_sequence_files(void) {
  mw_buf ts[] = {mw_tensor("a", MW_F32, 2, D(2, 3), A, sizeof A),
                 mw_tensor("b", MW_F32, 1, D(2), B, 2 * sizeof(float))};
  mw_buf sp = mw_sequence("s", ts, 2);
  rlx_onnx_seq_value v;
  CHECK_OK(rlx_onnx_sequence_read(sp.p, sp.n, false, NULL, &v));
  CHECK(v.is_sequence && !v.absent && v.n == 2);
  if (v.n == 2) {
    CHECK(is_f32(&v.v[0], 2, D(2, 3), A, 6));
    CHECK(is_f32(&v.v[1], 1, D(2), B, 2));
  }
  rlx_onnx_seq_value_free(&v, NULL);
  /* truncated */
  CHECK_ERR(rlx_onnx_sequence_read(sp.p, sp.n - 3, false, NULL, &v), RLX_ERR_FORMAT, NULL);
  CHECK(v.n == 0 && v.v == NULL);
  /* an optional holding that sequence, one holding a tensor, an empty one */
  mw_buf op = {0};
  mw_int(&op, 2, 3);
  mw_msg(&op, 5, &sp);
  CHECK_OK(rlx_onnx_sequence_read(op.p, op.n, true, NULL, &v));
  CHECK(v.is_sequence && !v.absent && v.n == 2);
  rlx_onnx_seq_value_free(&v, NULL);
  mw_free(&op);
  mw_buf t = mw_tensor(NULL, MW_F32, 1, D(3), C, 3 * sizeof(float));
  mw_int(&op, 2, 1);
  mw_msg(&op, 3, &t);
  CHECK_OK(rlx_onnx_sequence_read(op.p, op.n, true, NULL, &v));
  CHECK(!v.is_sequence && !v.absent && v.n == 1 && is_f32(&v.v[0], 1, D(3), C, 3));
  rlx_onnx_seq_value_free(&v, NULL);
  mw_free(&op);
  mw_int(&op, 2, 0);
  CHECK_OK(rlx_onnx_sequence_read(op.p, op.n, true, NULL, &v));
  CHECK(v.absent && v.n == 0);
  rlx_onnx_seq_value_free(&v, NULL);
  mw_free(&op);
  /* a sequence of sequences */
  mw_buf inner = mw_sequence(NULL, NULL, 0), outer = {0};
  mw_int(&outer, 2, 3);
  mw_msg(&outer, 5, &inner);
  CHECK_ERR(rlx_onnx_sequence_read(outer.p, outer.n, false, NULL, &v), RLX_ERR_UNSUPPORTED,
            "only sequences of tensors");
  mw_free(&outer);
  /* a bad element tensor (3 floats of data for dims [2, 3]) names the element */
  mw_buf bt[] = {mw_tensor(NULL, MW_F32, 2, D(2, 3), A, 3 * sizeof(float))};
  mw_buf bs = mw_sequence(NULL, bt, 1);
  CHECK_ERR(rlx_onnx_sequence_read(bs.p, bs.n, false, NULL, &v), RLX_ERR_FORMAT, "element 0");
  mw_free(&bs);
}

int main(void) {
  test_construct_insert_erase_at();
  test_concat_from_sequence();
  test_split_to_sequence();
  test_sequence_map();
  test_loop_and_if();
  test_optionals();
  test_if_runtime_sequences();
  test_errors();
  test_sequence_graph_io();
  test_optional_graph_io();
  test_sequence_files();
  return rlx_test_finish("onnx_seq");
}
