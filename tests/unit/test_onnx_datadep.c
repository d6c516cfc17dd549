/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer, ops with data-dependent results (src/io/onnx/ops_datadep.c): NonMaxSuppression
 * and Unique, evaluated at import time from constants or from input values given in the options
 * (and reported as "must be known at import time" otherwise), and TfIdfVectorizer, mapped onto
 * run-time ops. Models are built with protobuf-c (tests/common/onnx_build.h); expected values are
 * worked out by hand in the comments or computed by plain loops written here. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_build.h"
#include "onnx_run.h"
#include "rlx/onnx.h"
#include "rlx_test.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})

/* Output t is an int64 tensor of the given shape and values. */
static bool is_i64(const rlx_tensor *t, int rank, const int64_t *dims, const int64_t *want) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
  return out_shape_is(t, RLX_I64, rank, dims) && out_equal_i64(t, want, n);
}

/* Output t is a float tensor of n elements equal to want (NaN matches NaN). */
static bool is_f32(const rlx_tensor *t, const float *want, size_t n) {
  size_t got;
  if (t->shape.dtype != RLX_F32 || rlx_shape_numel(&t->shape, &got) || got != n) {
    fprintf(stderr, "  got dtype %d rank %u\n", (int)t->shape.dtype, (unsigned)t->shape.rank);
    return false;
  }
  const float *v = t->data;
  for (size_t i = 0; i < n; i++)
    if (!(v[i] == want[i] || (isnan(v[i]) && isnan(want[i])))) {
      fprintf(stderr, "  element %zu: got %g, want %g\n", i, (double)v[i], (double)want[i]);
      return false;
    }
  return true;
}

/* ======================================================================================
 * NonMaxSuppression
 * ====================================================================================== */

/* A NonMaxSuppression model over boxes [1, 4, 4] and scores [1, C, 4]; the scalar inputs are
 * initializers (max_out < 0: input omitted) and boxes / scores initializers too when `as_const`
 * (graph inputs otherwise). */
static ob_model *nms_model(int C, const float *boxes, const float *scores, bool as_const, int64_t max_out, float iou,
                           float score_thr, bool with_score_thr, int64_t center) {
  ob_model *m = ob_model_new(11);
  if (as_const) {
    ob_initializer(m, "boxes", OB_FLOAT, 3, DIMS(1, 4, 4), boxes, 16 * sizeof(float));
    ob_initializer(m, "scores", OB_FLOAT, 3, DIMS(1, C, 4), scores, (size_t)C * 4 * sizeof(float));
  } else {
    ob_input(m, "boxes", OB_FLOAT, 3, DIMS(1, 4, 4));
    ob_input(m, "scores", OB_FLOAT, 3, DIMS(1, C, 4));
  }
  if (max_out >= 0) ob_initializer(m, "max", OB_INT64, 1, DIMS(1), &max_out, 8);
  ob_initializer(m, "iou", OB_FLOAT, 1, DIMS(1), &iou, 4);
  if (with_score_thr) ob_initializer(m, "sthr", OB_FLOAT, 1, DIMS(1), &score_thr, 4);
  const char *ins = with_score_thr ? (max_out >= 0 ? "boxes,scores,max,iou,sthr" : "boxes,scores,,iou,sthr")
                                   : (max_out >= 0 ? "boxes,scores,max,iou" : "boxes,scores,,iou");
  Onnx__NodeProto *n = ob_node(m, "NonMaxSuppression", ins, "sel");
  if (center >= 0) ob_attr_int(m, n, "center_point_box", center);
  ob_output(m, "sel", OB_INT64, -1, NULL);
  return m;
}

static void test_nms(void) {
  /* Corner format [y1, x1, y2, x2]; box 1 is given with its corners swapped.
   *   box 0: y 0..2, x 0..2 (area 4)
   *   box 1: y 0..2, x 1..3 (area 4): overlap with box 0 is 2x1 = 2, union 6, IoU 1/3
   *   box 2: y 0..2, x 0..1 (area 2): inside box 0, IoU 2/4 = 0.5 exactly
   *   box 3: y 5..6, x 5..6 (area 1): far away */
  float boxes[16] = {0, 0, 2, 2, 2, 3, 0, 1, 0, 0, 2, 1, 5, 5, 6, 6};
  /* class 0 scores: 0.9, 0.8, 0.7, 0.1; class 1: 0.2, 0.6, 0.6, 0.9 */
  float scores[8] = {0.9f, 0.8f, 0.7f, 0.1f, 0.2f, 0.6f, 0.6f, 0.9f};
  runner r;
  /* iou 0.3, score > 0.15, at most 3 per class:
   *   class 0 by score: 0 (kept), 1 (IoU 1/3 > 0.3 with 0: suppressed), 2 (0.5 > 0.3: suppressed),
   *     3 (score 0.1 <= 0.15: dropped) -> [0]
   *   class 1: 3 (kept), then 1 and 2 tie at 0.6: 1 first (lower index), kept (no overlap with 3);
   *     2 vs 1: y 0..2, x overlap 1..1 = 0 -> kept; the limit of 3 is reached before box 0
   *     -> [3, 1, 2] */
  ob_model *m = nms_model(2, boxes, scores, true, 3, 0.3f, 0.15f, true, -1);
  if (run_ob(m, NULL, NULL, 0, &r))
    CHECK(is_i64(&r.outs[0], 2, DIMS(4, 3), (int64_t[]){0, 0, 0, 0, 1, 3, 0, 1, 1, 0, 1, 2}));
  runner_free(&r);
  ob_model_free(m);

  /* IoU must be strictly greater than the threshold: with iou 0.5 box 2 (IoU 0.5 with box 0)
   * survives in class 0, box 1 (1/3) too. No score threshold: box 3 (0.1) is selected last (no
   * overlap) -> class 0 [0, 1, 2, 3]; class 1: 3, 1, 2 as before, then 0 (IoU 1/3 with box 1,
   * 0.5 with box 2) -> [3, 1, 2, 0]. At most 2 per class: class 0 [0, 1], class 1 [3, 1]. */
  m = nms_model(2, boxes, scores, true, 4, 0.5f, 0, false, 0);
  if (run_ob(m, NULL, NULL, 0, &r))
    CHECK(is_i64(&r.outs[0], 2, DIMS(8, 3),
                 (int64_t[]){0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 1, 3, 0, 1, 1, 0, 1, 2, 0, 1, 0}));
  runner_free(&r);
  ob_model_free(m);
  m = nms_model(2, boxes, scores, true, 2, 0.5f, 0, false, 0);
  if (run_ob(m, NULL, NULL, 0, &r))
    CHECK(is_i64(&r.outs[0], 2, DIMS(4, 3), (int64_t[]){0, 0, 0, 0, 0, 1, 0, 1, 3, 0, 1, 1}));
  runner_free(&r);
  ob_model_free(m);

  /* max_output_boxes_per_class omitted: nothing is selected, a [0, 3] result */
  m = nms_model(1, boxes, scores, true, -1, 0.5f, 0, false, -1);
  if (run_ob(m, NULL, NULL, 0, &r)) CHECK(is_i64(&r.outs[0], 2, DIMS(0, 3), NULL));
  runner_free(&r);
  ob_model_free(m);

  /* center_point_box = 1: [x_center, y_center, width, height].
   *   box 0: x 0..2, y 0..2;  box 1: x 1..3, y 0..2 (IoU 1/3 with 0);  box 2: x 0..2, y 0.5..2.5
   *   (overlap with 0: 2 x 1.5 = 3, union 5, IoU 0.6);  box 3: x 10..11, y 10..11.
   * scores 0.5, 0.9, 0.8, 0.7; iou 0.5:
   *   1 kept; 2: IoU with 1 = overlap x 1..2 (1) x y 0.5..2 (1.5) = 1.5, union 6.5 -> 0.23, kept;
   *   3 kept; 0: IoU with 2 is 0.6 > 0.5 -> suppressed -> [1, 2, 3] */
  float cboxes[16] = {1, 1, 2, 2, 2, 1, 2, 2, 1, 1.5f, 2, 2, 10.5f, 10.5f, 1, 1};
  float cscores[4] = {0.5f, 0.9f, 0.8f, 0.7f};
  m = nms_model(1, cboxes, cscores, true, 10, 0.5f, 0, false, 1);
  if (run_ob(m, NULL, NULL, 0, &r)) CHECK(is_i64(&r.outs[0], 2, DIMS(3, 3), (int64_t[]){0, 0, 1, 0, 0, 2, 0, 0, 3}));
  runner_free(&r);
  ob_model_free(m);

  /* boxes and scores as graph inputs: unknown values are a "needs value" gap; values in the
   * options let the import evaluate the op (same selection as the first case) */
  m = nms_model(2, boxes, scores, false, 3, 0.3f, 0.15f, true, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "boxes and scores must be known at import time");
  rlx_named_tensor in[2] = {tin("boxes", boxes, RLX_F32, 3, DIMS(1, 4, 4)),
                            tin("scores", scores, RLX_F32, 3, DIMS(1, 2, 4))};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = in;
  o.n_inputs = 2;
  if (run_ob(m, &o, in, 2, &r))
    CHECK(is_i64(&r.outs[0], 2, DIMS(4, 3), (int64_t[]){0, 0, 0, 0, 1, 3, 0, 1, 1, 0, 1, 2}));
  runner_free(&r);
  ob_model_free(m);

  /* errors: attribute and input checks */
  m = nms_model(1, boxes, scores, true, 3, 0.5f, 0, false, 2);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "center_point_box must be 0 or 1");
  ob_model_free(m);
  m = nms_model(1, boxes, scores, true, 3, 1.5f, 0, false, 0);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "iou_threshold must lie in [0, 1]");
  ob_model_free(m);
  m = ob_model_new(11);
  ob_input(m, "b", OB_FLOAT, 3, DIMS(1, 4, 3));
  ob_input(m, "s", OB_FLOAT, 3, DIMS(1, 1, 4));
  ob_node(m, "NonMaxSuppression", "b,s", "sel");
  ob_output(m, "sel", OB_INT64, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "boxes must have shape [batches, boxes, 4]");
  ob_model_free(m);
  /* scores that do not match the boxes */
  m = ob_model_new(11);
  ob_initializer(m, "b", OB_FLOAT, 3, DIMS(1, 4, 4), boxes, sizeof boxes);
  ob_initializer(m, "s", OB_FLOAT, 3, DIMS(1, 2, 3), scores, 6 * sizeof(float));
  ob_node(m, "NonMaxSuppression", "b,s", "sel");
  ob_output(m, "sel", OB_INT64, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "do not match boxes");
  ob_model_free(m);
}

/* ======================================================================================
 * Unique
 * ====================================================================================== */

/* Unique over a constant X (an initializer) or a graph input X; `axis` < -100: no attribute,
 * sorted < 0: no attribute. */
static ob_model *unique_model(int32_t elem, int rank, const int64_t *dims, const void *x, size_t nb, bool as_const,
                              int64_t axis, int64_t sorted) {
  ob_model *m = ob_model_new(11);
  if (as_const)
    ob_initializer(m, "x", elem, rank, dims, x, nb);
  else
    ob_input(m, "x", elem, rank, dims);
  Onnx__NodeProto *n = ob_node(m, "Unique", "x", "y,idx,inv,cnt");
  if (axis > -100) ob_attr_int(m, n, "axis", axis);
  if (sorted >= 0) ob_attr_int(m, n, "sorted", sorted);
  ob_output(m, "y", elem, -1, NULL);
  ob_output(m, "idx", OB_INT64, -1, NULL);
  ob_output(m, "inv", OB_INT64, -1, NULL);
  ob_output(m, "cnt", OB_INT64, -1, NULL);
  return m;
}

static void test_unique(void) {
  int64_t x[6] = {3, 1, 3, 2, 1, 3};
  runner r;
  /* sorted (the default): values 1 (first at 1, twice), 2 (at 3, once), 3 (at 0, three times) */
  ob_model *m = unique_model(OB_INT64, 1, DIMS(6), x, sizeof x, true, -1000, -1);
  if (run_ob(m, NULL, NULL, 0, &r) && r.n_outs == 4) {
    CHECK(is_i64(&r.outs[0], 1, DIMS(3), (int64_t[]){1, 2, 3}));
    CHECK(is_i64(&r.outs[1], 1, DIMS(3), (int64_t[]){1, 3, 0}));
    CHECK(is_i64(&r.outs[2], 1, DIMS(6), (int64_t[]){2, 0, 2, 1, 0, 2}));
    CHECK(is_i64(&r.outs[3], 1, DIMS(3), (int64_t[]){2, 1, 3}));
  }
  runner_free(&r);
  ob_model_free(m);

  /* sorted = 0: in order of first occurrence 3, 1, 2 */
  m = unique_model(OB_INT64, 1, DIMS(6), x, sizeof x, true, -1000, 0);
  if (run_ob(m, NULL, NULL, 0, &r) && r.n_outs == 4) {
    CHECK(is_i64(&r.outs[0], 1, DIMS(3), (int64_t[]){3, 1, 2}));
    CHECK(is_i64(&r.outs[1], 1, DIMS(3), (int64_t[]){0, 1, 3}));
    CHECK(is_i64(&r.outs[2], 1, DIMS(6), (int64_t[]){0, 1, 0, 2, 1, 0}));
    CHECK(is_i64(&r.outs[3], 1, DIMS(3), (int64_t[]){3, 2, 1}));
  }
  runner_free(&r);
  ob_model_free(m);

  /* axis 1 (given as -1) of a 2x4 matrix: columns (1,2) (0,5) (1,2) (0,5); sorted
   * lexicographically (0,5) < (1,2) */
  float xm[8] = {1, 0, 1, 0, 2, 5, 2, 5};
  m = unique_model(OB_FLOAT, 2, DIMS(2, 4), xm, sizeof xm, true, -1, 1);
  if (run_ob(m, NULL, NULL, 0, &r) && r.n_outs == 4) {
    CHECK(r.outs[0].shape.rank == 2 && r.outs[0].shape.dims[0] == 2 && r.outs[0].shape.dims[1] == 2);
    CHECK(is_f32(&r.outs[0], (float[]){0, 1, 5, 2}, 4));
    CHECK(is_i64(&r.outs[1], 1, DIMS(2), (int64_t[]){1, 0}));
    CHECK(is_i64(&r.outs[2], 1, DIMS(4), (int64_t[]){1, 0, 1, 0}));
    CHECK(is_i64(&r.outs[3], 1, DIMS(2), (int64_t[]){2, 2}));
  }
  runner_free(&r);
  ob_model_free(m);

  /* NaN equals NaN and sorts after the numbers; -0 equals 0 (first occurrence kept) */
  float xn[5] = {NAN, 1, NAN, -0.0f, 0.0f};
  m = unique_model(OB_FLOAT, 1, DIMS(5), xn, sizeof xn, true, -1000, 1);
  if (run_ob(m, NULL, NULL, 0, &r) && r.n_outs == 4) {
    CHECK(is_f32(&r.outs[0], (float[]){-0.0f, 1, NAN}, 3));
    CHECK(is_i64(&r.outs[1], 1, DIMS(3), (int64_t[]){3, 1, 0}));
    CHECK(is_i64(&r.outs[2], 1, DIMS(5), (int64_t[]){2, 1, 2, 0, 0}));
    CHECK(is_i64(&r.outs[3], 1, DIMS(3), (int64_t[]){2, 1, 2}));
  }
  runner_free(&r);
  ob_model_free(m);

  /* X as a graph input: a gap without its value; with it, Y is gathered from the input at run time */
  m = unique_model(OB_INT64, 1, DIMS(6), NULL, 0, false, -1000, -1);
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "input X must be known at import time");
  rlx_named_tensor in = tin("x", x, RLX_I64, 1, DIMS(6));
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = &in;
  o.n_inputs = 1;
  if (run_ob(m, &o, &in, 1, &r) && r.n_outs == 4) {
    CHECK(is_i64(&r.outs[0], 1, DIMS(3), (int64_t[]){1, 2, 3}));
    CHECK(is_i64(&r.outs[3], 1, DIMS(3), (int64_t[]){2, 1, 3}));
  }
  runner_free(&r);
  ob_model_free(m);

  /* errors */
  m = unique_model(OB_INT64, 1, DIMS(6), x, sizeof x, true, -1000, 2);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "sorted must be 0 or 1");
  ob_model_free(m);
  m = unique_model(OB_INT64, 1, DIMS(6), x, sizeof x, true, 1, 1);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "axis");
  ob_model_free(m);
}

/* ======================================================================================
 * TfIdfVectorizer
 * ====================================================================================== */

typedef struct tfidf_spec {
  int64_t min_n, max_n, max_skip;
  const char *mode;
  const int64_t *pool, *counts, *indexes;
  size_t n_pool, n_counts, n_indexes;
  const float *weights; /* NULL: attribute omitted */
  size_t n_weights;
} tfidf_spec;

static ob_model *tfidf_model(const tfidf_spec *s, int32_t elem, int rank, const int64_t *dims) {
  ob_model *m = ob_model_new(9);
  ob_input(m, "x", elem, rank, dims);
  Onnx__NodeProto *n = ob_node(m, "TfIdfVectorizer", "x", "y");
  ob_attr_int(m, n, "min_gram_length", s->min_n);
  ob_attr_int(m, n, "max_gram_length", s->max_n);
  ob_attr_int(m, n, "max_skip_count", s->max_skip);
  ob_attr_string(m, n, "mode", s->mode);
  ob_attr_ints(m, n, "pool_int64s", s->pool, s->n_pool);
  ob_attr_ints(m, n, "ngram_counts", s->counts, s->n_counts);
  ob_attr_ints(m, n, "ngram_indexes", s->indexes, s->n_indexes);
  if (s->weights) ob_attr_floats(m, n, "weights", s->weights, s->n_weights);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  return m;
}

/* Plain-loop reference: per row, every start p, n-gram length n and skip s (s = 0 only for
 * unigrams) forms the n-gram x[p], x[p+s+1], ...; each pool entry equal to it adds one to its
 * column; then TF / IDF / TFIDF with per-column weights. */
static void tfidf_ref(const tfidf_spec *s, const int64_t *x, int B, int L, int C, float *y) {
  for (int b = 0; b < B; b++) {
    float *row = y + (size_t)b * (size_t)C;
    for (int j = 0; j < C; j++) row[j] = 0;
    size_t id = 0;
    for (size_t i = 0; i < s->n_counts; i++) {
      int64_t n = (int64_t)i + 1, lo = s->counts[i];
      int64_t hi = i + 1 < s->n_counts ? s->counts[i + 1] : (int64_t)s->n_pool;
      for (int64_t g = 0; g < (hi - lo) / n; g++, id++) {
        if (n < s->min_n || n > s->max_n) continue;
        for (int64_t sk = 0; sk <= (n == 1 ? 0 : s->max_skip); sk++)
          for (int64_t p = 0; p + (n - 1) * (sk + 1) < L; p++) {
            bool eq = true;
            for (int64_t k = 0; k < n && eq; k++) eq = x[b * L + p + k * (sk + 1)] == s->pool[lo + g * n + k];
            if (eq) row[s->indexes[id]] += 1;
          }
      }
    }
    for (int j = 0; j < C; j++) {
      float w = s->weights ? s->weights[j] : 1;
      if (strcmp(s->mode, "IDF") == 0)
        row[j] = row[j] > 0 ? w : 0;
      else if (strcmp(s->mode, "TFIDF") == 0)
        row[j] *= w;
    }
  }
}

static void test_tfidf(void) {
  runner r;
  /* A hand-checked case. x = [7, 3, 7, 3, 9]; unigram 3 -> column 2, bigram (7, 3) -> column 0,
   * bigram (3, 9) -> column 1; skips up to 1:
   *   unigram 3 occurs twice (counted once, whatever the skip);
   *   (7, 3) at skip 0: positions (0,1), (2,3); at skip 1: (0,2)? x[2] = 7, no; (2,4)? no -> 2;
   *   (3, 9) at skip 0: (3,4); at skip 1: (1,3)? x[3] = 3, no; (2,4)? x[2] = 7, no -> 1. */
  int64_t pool1[5] = {3, 7, 3, 3, 9}, counts1[2] = {0, 1}, idx1[3] = {2, 0, 1};
  tfidf_spec s1 = {1, 2, 1, "TF", pool1, counts1, idx1, 5, 2, 3, NULL, 0};
  ob_model *m = tfidf_model(&s1, OB_INT32, 1, DIMS(5));
  int32_t x1[5] = {7, 3, 7, 3, 9};
  rlx_named_tensor in = tin("x", x1, RLX_I32, 1, DIMS(5));
  if (run_ob(m, NULL, &in, 1, &r)) CHECK(is_f32(&r.outs[0], (float[]){2, 1, 2}, 3));
  runner_free(&r);
  ob_model_free(m);

  /* A batch of two rows with unigrams, bigrams and trigrams, skips up to 2, permuted output
   * columns with one column (5) that no n-gram uses, all three modes, against tfidf_ref. The
   * model is run twice with different inputs (the result is computed at run time). */
  int64_t pool[] = {1, 2, 5, /* unigrams */ 1, 2, 2, 1, 4, 4, /* bigrams */ 1, 2, 1, 4, 4, 4 /* trigrams */};
  int64_t counts[3] = {0, 3, 9}, idx[8] = {3, 0, 6, 1, 7, 2, 4, 8};
  float w[9] = {0.5f, 2, 3, 0.25f, 1.5f, 9, 4, 5, 6};
  const char *modes[3] = {"TF", "IDF", "TFIDF"};
  int64_t xs[2][12] = {{1, 2, 1, 2, 4, 4, 4, 1, 1, 2, 5, 4}, {4, 4, 4, 4, 2, 1, 1, 3, 1, 2, 1, 9}};
  for (int mi = 0; mi < 3; mi++)
    for (int with_w = 0; with_w < 2; with_w++) {
      tfidf_spec s = {1, 3, 2, modes[mi], pool, counts, idx, 15, 3, 8, with_w ? w : NULL, 9};
      m = tfidf_model(&s, OB_INT64, 2, DIMS(2, 6));
      rlx_graph *g = NULL;
      rlx_executable *e = NULL;
      CHECK_OK(ob_import(m, NULL, &g));
      if (g) CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
      for (int run = 0; run < 2 && e; run++) {
        float want[18];
        tfidf_ref(&s, xs[run], 2, 6, 9, want);
        rlx_named_tensor xi = tin("x", xs[run], RLX_I64, 2, DIMS(2, 6));
        const rlx_tensor *outs;
        uint32_t no;
        CHECK_OK(rlx_executable_run(e, &xi, 1, &outs, &no));
        CHECK_MSG(no == 1 && outs[0].shape.rank == 2 && outs[0].shape.dims[1] == 9 && is_f32(&outs[0], want, 18),
                  "mode %s, weights %d, input %d", modes[mi], with_w, run);
      }
      rlx_executable_free(e);
      rlx_graph_free(g);
      ob_model_free(m);
    }
  /* a symbolic batch imports (the zero column then comes from X itself); bound, it runs */
  {
    tfidf_spec s = {1, 3, 2, "TF", pool, counts, idx, 15, 3, 8, NULL, 0};
    m = tfidf_model(&s, OB_INT64, 2, DIMS(-1, 6));
    rlx_graph *g = NULL;
    CHECK_OK(ob_import(m, NULL, &g));
    if (g) {
      const rlx_shape *ys = &rlx_graph_node(g, rlx_graph_outputs(g)[0])->shape;
      CHECK(ys->rank == 2 && !rlx_dim_is_static(ys->dims[0]) && ys->dims[1] == 9);
    }
    rlx_graph_free(g);
    float want[18];
    tfidf_ref(&s, xs[1], 2, 6, 9, want);
    rlx_named_tensor xi = tin("x", xs[1], RLX_I64, 2, DIMS(2, 6));
    rlx_onnx_options o;
    rlx_onnx_options_init(&o);
    o.dim_names = (const char *[]){"N"};
    o.dim_values = (int64_t[]){2};
    o.n_dims = 1;
    if (run_ob(m, &o, &xi, 1, &r)) CHECK(is_f32(&r.outs[0], want, 18));
    runner_free(&r);
    ob_model_free(m);
  }
  /* the reference itself, checked by hand for row 0 of xs[0] = [1, 2, 1, 2, 4, 4] in TF:
   * unigram 1 (col 3): 2; 2 (col 0): 2; 5 (col 6): 0; bigram (1,2) (col 1): skip 0 at 0 and 2,
   * skip 1: (0,2)? no, (1,3)? no, skip 2: (0,3) yes -> 3; (2,1) (col 7): skip 0 at 1 -> 1,
   * skip 1: (1,3)? no, skip 2: (1,4)? no -> 1; (4,4) (col 2): skip 0 at 4 -> 1;
   * trigram (1,2,1) (col 4): skip 0 at 0 -> 1; (4,4,4) (col 8): 0. */
  {
    tfidf_spec s = {1, 3, 2, "TF", pool, counts, idx, 15, 3, 8, NULL, 0};
    float want[18];
    tfidf_ref(&s, xs[0], 2, 6, 9, want);
    CHECK(is_f32(&(rlx_tensor){want, rlx_shape_make(RLX_F32, 1, DIMS(9))}, (float[]){2, 3, 1, 2, 1, 0, 0, 1, 0}, 9));
  }

  /* errors */
  tfidf_spec bad = s1;
  bad.mode = "BM25";
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "attribute mode is \"BM25\"");
  ob_model_free(m);
  bad = s1;
  bad.counts = (int64_t[]){0, 2}; /* 3 entries of bigrams: not a multiple of 2 */
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "not a multiple of 2");
  ob_model_free(m);
  bad = s1;
  bad.n_indexes = 2;
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "ngram_indexes has 2 entries for the pool's 3 n-grams");
  ob_model_free(m);
  bad = s1;
  bad.indexes = (int64_t[]){0, 1, 0};
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "ngram_indexes repeats it");
  ob_model_free(m);
  bad = s1;
  bad.mode = "IDF";
  bad.weights = (float[]){1, 2};
  bad.n_weights = 2;
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "weights has 2 entries for 3 output columns");
  ob_model_free(m);
  bad = s1;
  bad.min_n = 3;
  m = tfidf_model(&bad, OB_INT32, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "1 <= min <= max");
  ob_model_free(m);
  m = tfidf_model(&s1, OB_FLOAT, 1, DIMS(5));
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "integer token ids only");
  ob_model_free(m);
  /* string pools are named as unsupported */
  m = ob_model_new(9);
  ob_input(m, "x", OB_INT64, 1, DIMS(4));
  Onnx__NodeProto *n = ob_node(m, "TfIdfVectorizer", "x", "y");
  ob_attr_int(m, n, "min_gram_length", 1);
  ob_attr_int(m, n, "max_gram_length", 1);
  ob_attr_int(m, n, "max_skip_count", 0);
  ob_attr_string(m, n, "mode", "TF");
  ob_attr_strings(m, n, "pool_strings", (const char *[]){"a", "b"}, 2);
  ob_attr_ints(m, n, "ngram_counts", (int64_t[]){0}, 1);
  ob_attr_ints(m, n, "ngram_indexes", (int64_t[]){0, 1}, 2);
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_UNSUPPORTED, "pool_strings");
  ob_model_free(m);
  /* a missing required attribute */
  m = ob_model_new(9);
  ob_input(m, "x", OB_INT64, 1, DIMS(4));
  ob_node(m, "TfIdfVectorizer", "x", "y");
  ob_output(m, "y", OB_FLOAT, -1, NULL);
  expect_import_error_ob(m, NULL, RLX_ERR_FORMAT, "attribute min_gram_length is required");
  ob_model_free(m);
}

int main(void) {
  test_nms();
  test_unique();
  test_tfidf();
  return rlx_test_finish("onnx_datadep");
}
