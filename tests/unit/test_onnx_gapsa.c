/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX importer: the training-domain ops (Adagrad, Momentum, Adam, Gradient), MaxPool's Indices
 * output, MaxUnpool, Einsum diagonals and opset-8 Scan. Models are built as protobuf-c structs
 * (the code generated from onnx.proto), packed, imported, compiled and run on the CPU, and
 * compared with values computed here by plain loops from the ONNX operator definitions. Each
 * family also checks an error path. */
#include <math.h>
#include <onnx/onnx.pb-c.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "rlx/onnx.h"
#include "rlx_test.h"

/* ======================================================================================
 * Building models with protobuf-c
 * ====================================================================================== */

/* Every piece of a model under construction is allocated here and freed by mb_reset(). */
static void *allocs[4096];
static size_t n_allocs;

static void *keep(size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (!p || n_allocs == sizeof allocs / sizeof allocs[0]) abort();
  allocs[n_allocs++] = p;
  return p;
}
static void mb_reset(void) {
  while (n_allocs) free(allocs[--n_allocs]);
}
static char *kstr(const char *s) {
  size_t n = strlen(s);
  char *c = keep(n + 1);
  memcpy(c, s, n + 1);
  return c;
}
/* Splits "a,b,,c" into names ("" = an omitted optional input). */
static char **split(const char *list, size_t *n) {
  *n = 0;
  if (!list) return NULL;
  size_t cnt = 1;
  for (const char *p = list; *p; p++) cnt += *p == ',';
  char **v = keep(cnt * sizeof *v);
  const char *p = list;
  for (size_t i = 0; i < cnt; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    v[i] = keep(len + 1);
    memcpy(v[i], p, len);
    p = e ? e + 1 : p + len;
  }
  *n = cnt;
  return v;
}

enum { T_F32 = 1, T_I64 = 7, T_F64 = 11 };

static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const int64_t *dims) {
  Onnx__TensorShapeProto *sp = keep(sizeof *sp);
  onnx__tensor_shape_proto__init(sp);
  sp->n_dim = (size_t)rank;
  sp->dim = keep((size_t)rank * sizeof *sp->dim);
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = keep(sizeof *d);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = dims[i];
    sp->dim[i] = d;
  }
  Onnx__TypeProto__Tensor *tt = keep(sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  tt->shape = sp;
  Onnx__TypeProto *tp = keep(sizeof *tp);
  onnx__type_proto__init(tp);
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  Onnx__ValueInfoProto *v = keep(sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = kstr(name);
  v->type = tp;
  return v;
}
/* A value info without a type (allowed for graph outputs). */
static Onnx__ValueInfoProto *vname(const char *name) {
  Onnx__ValueInfoProto *v = keep(sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = kstr(name);
  return v;
}

static Onnx__AttributeProto *attr(const char *name, Onnx__AttributeProto__AttributeType t) {
  Onnx__AttributeProto *a = keep(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = kstr(name);
  a->has_type = 1;
  a->type = t;
  return a;
}
static Onnx__AttributeProto *at_f(const char *name, float v) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
  return a;
}
static Onnx__AttributeProto *at_i(const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
  return a;
}
static Onnx__AttributeProto *at_ints(const char *name, int n, const int64_t *v) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)n;
  a->ints = keep((size_t)n * sizeof *a->ints);
  memcpy(a->ints, v, (size_t)n * sizeof *v);
  return a;
}
static Onnx__AttributeProto *at_s(const char *name, const char *s) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.data = (uint8_t *)kstr(s);
  a->s.len = strlen(s);
  return a;
}
static Onnx__AttributeProto *at_strs(const char *name, const char *list) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  char **v = split(list, &a->n_strings);
  a->strings = keep(a->n_strings * sizeof *a->strings);
  for (size_t i = 0; i < a->n_strings; i++) a->strings[i] = (ProtobufCBinaryData){strlen(v[i]), (uint8_t *)v[i]};
  return a;
}

static Onnx__AttributeProto *at_g(const char *name, Onnx__GraphProto *g) {
  Onnx__AttributeProto *a = attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = g;
  return a;
}
/* An int64 initializer of shape [n] added to graph g. */
static void init_i64(Onnx__GraphProto *g, const char *name, int n, const int64_t *v) {
  Onnx__TensorProto *t = keep(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = kstr(name);
  t->n_dims = 1;
  t->dims = keep(sizeof *t->dims);
  t->dims[0] = n;
  t->has_data_type = 1;
  t->data_type = T_I64;
  t->n_int64_data = (size_t)n;
  t->int64_data = keep((size_t)n * sizeof *v);
  memcpy(t->int64_data, v, (size_t)n * sizeof *v);
  Onnx__TensorProto **all = keep((g->n_initializer + 1) * sizeof *all);
  if (g->n_initializer) memcpy(all, g->initializer, g->n_initializer * sizeof *all);
  all[g->n_initializer++] = t;
  g->initializer = all;
}

#define TRAINING "ai.onnx.preview.training"

/* A node of `domain` (NULL = default) with comma-separated inputs / outputs and na attributes. */
static Onnx__NodeProto *nd(const char *domain, const char *op, const char *ins, const char *outs, int na, ...) {
  Onnx__NodeProto *n = keep(sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = kstr(op);
  if (domain) n->domain = kstr(domain);
  n->input = split(ins, &n->n_input);
  n->output = split(outs, &n->n_output);
  n->n_attribute = (size_t)na;
  n->attribute = keep((size_t)(na ? na : 1) * sizeof *n->attribute);
  va_list ap;
  va_start(ap, na);
  for (int i = 0; i < na; i++) n->attribute[i] = va_arg(ap, Onnx__AttributeProto *);
  va_end(ap);
  return n;
}

#define LIST(T, ...) ((T *[]){__VA_ARGS__}), (sizeof((T *[]){__VA_ARGS__}) / sizeof(T *))
#define NODES(...) LIST(Onnx__NodeProto, __VA_ARGS__)
#define VALS(...) LIST(Onnx__ValueInfoProto, __VA_ARGS__)
#define DIMS(...) ((int64_t[]){__VA_ARGS__})

static Onnx__GraphProto *gr(const char *name, Onnx__NodeProto **nodes, size_t nn, Onnx__ValueInfoProto **ins, size_t ni,
                            Onnx__ValueInfoProto **outs, size_t no) {
  Onnx__GraphProto *g = keep(sizeof *g);
  onnx__graph_proto__init(g);
  g->name = kstr(name);
  g->n_node = nn;
  g->node = keep(nn * sizeof *g->node);
  memcpy(g->node, nodes, nn * sizeof *nodes);
  g->n_input = ni;
  g->input = keep(ni * sizeof *g->input);
  memcpy(g->input, ins, ni * sizeof *ins);
  g->n_output = no;
  g->output = keep(no * sizeof *g->output);
  memcpy(g->output, outs, no * sizeof *outs);
  return g;
}

/* Packs a model importing the default domain at `opset` (0 = not at all) and the training domain
 * at `training` (0 = not at all). */
typedef struct packed {
  uint8_t *p;
  size_t n;
} packed;
static packed pack(Onnx__GraphProto *g, int64_t opset, int64_t training) {
  Onnx__ModelProto m;
  onnx__model_proto__init(&m);
  m.has_ir_version = 1;
  m.ir_version = 8;
  m.graph = g;
  Onnx__OperatorSetIdProto *o[2];
  size_t no = 0;
  for (int k = 0; k < 2; k++) {
    int64_t v = k ? training : opset;
    if (!v) continue;
    o[no] = keep(sizeof *o[no]);
    onnx__operator_set_id_proto__init(o[no]);
    o[no]->domain = kstr(k ? TRAINING : "");
    o[no]->has_version = 1;
    o[no]->version = v;
    no++;
  }
  m.n_opset_import = no;
  m.opset_import = o;
  packed p;
  p.n = onnx__model_proto__get_packed_size(&m);
  p.p = keep(p.n);
  onnx__model_proto__pack(&m, p.p);
  return p;
}

/* ======================================================================================
 * Import, compile, run
 * ====================================================================================== */

static rlx_status import(packed m, rlx_graph **g) { return rlx_onnx_import_bytes(m.p, m.n, NULL, NULL, NULL, g); }

typedef struct runner {
  rlx_graph *g;
  rlx_executable *e;
  const rlx_tensor *outs;
  uint32_t n_outs;
} runner;

static bool run(packed m, const rlx_named_tensor *ins, uint32_t n, runner *r) {
  memset(r, 0, sizeof *r);
  rlx_status s = import(m, &r->g);
  CHECK_MSG(s == RLX_OK, "import: %s", rlx_last_error());
  if (s) return false;
  s = rlx_compile(r->g, "cpu", NULL, &r->e);
  CHECK_MSG(s == RLX_OK, "compile: %s", rlx_last_error());
  if (s) return false;
  s = rlx_executable_run(r->e, ins, n, &r->outs, &r->n_outs);
  CHECK_MSG(s == RLX_OK, "run: %s", rlx_last_error());
  return s == RLX_OK;
}
static void runner_free(runner *r) {
  rlx_executable_free(r->e);
  rlx_graph_free(r->g);
  memset(r, 0, sizeof *r);
}
static rlx_named_tensor tin(const char *name, const void *data, rlx_dtype t, int rank, const int64_t *dims) {
  rlx_named_tensor x = {name, {(void *)data, rlx_shape_make(t, (uint32_t)rank, dims)}};
  return x;
}
/* Output k holds n floats (f32 or f64) close to want (relative tolerance tol). */
static bool close_to(const runner *r, uint32_t k, const double *want, size_t n, double tol) {
  if (k >= r->n_outs) return false;
  const rlx_tensor *t = &r->outs[k];
  size_t got;
  if (rlx_shape_numel(&t->shape, &got) || got != n) {
    fprintf(stderr, "  output %u: %zu elements, want %zu\n", k, got, n);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    double v = t->shape.dtype == RLX_F64 ? ((const double *)t->data)[i] : (double)((const float *)t->data)[i];
    if (!(fabs(v - want[i]) <= tol * (1 + fabs(want[i])))) {
      fprintf(stderr, "  output %u element %zu: got %.9g, want %.9g\n", k, i, v, want[i]);
      return false;
    }
  }
  return true;
}

static bool equal_i64(const runner *r, uint32_t k, const int64_t *want, size_t n) {
  if (k >= r->n_outs || r->outs[k].shape.dtype != RLX_I64) return false;
  size_t got;
  if (rlx_shape_numel(&r->outs[k].shape, &got) || got != n) return false;
  const int64_t *v = r->outs[k].data;
  for (size_t i = 0; i < n; i++)
    if (v[i] != want[i]) {
      fprintf(stderr, "  output %u element %zu: got %lld, want %lld\n", k, i, (long long)v[i], (long long)want[i]);
      return false;
    }
  return true;
}
static float frand(unsigned *st) {
  *st = *st * 1103515245u + 12345u;
  return (float)((*st >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* ======================================================================================
 * Optimizers (ai.onnx.preview.training)
 * ====================================================================================== */

/* X1 [2], X2 [3] with their gradients and states: values fed to every optimizer test. */
static const float X1[2] = {1.0f, -2.0f}, G1[2] = {0.5f, -1.5f}, S1[2] = {0.25f, 2.0f}, Q1[2] = {1.0f, 0.5f};
static const float X2[3] = {3.0f, 0.5f, -1.0f}, G2[3] = {-2.0f, 0.25f, 4.0f}, S2[3] = {1.0f, 0.0f, 3.0f},
                   Q2[3] = {2.0f, 0.1f, 0.3f};

static Onnx__ValueInfoProto **opt_inputs(const char *const *names, int n) {
  Onnx__ValueInfoProto **v = keep((size_t)n * sizeof *v);
  v[0] = vi("R", T_F32, 0, NULL);
  v[1] = vi("T", T_I64, 0, NULL);
  for (int i = 2; i < n; i++) v[i] = vi(names[i], T_F32, 1, DIMS(names[i][1] == '1' ? 2 : 3));
  return v;
}

static void test_adagrad(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "H1", "H2"};
  const float decay = 0.5f, eps = 1e-3f, norm = 0.01f;
  for (int64_t step = 0; step < 3; step += 2) {
    Onnx__GraphProto *g = gr("adagrad",
                             NODES(nd(TRAINING, "Adagrad", "R,T,X1,X2,G1,G2,H1,H2", "X1n,X2n,H1n,H2n", 3,
                                      at_f("decay_factor", decay), at_f("epsilon", eps), at_f("norm_coefficient", norm))),
                             opt_inputs(names, 8), 8, VALS(vname("X1n"), vname("X2n"), vname("H1n"), vname("H2n")));
    packed m = pack(g, 0, 1);
    float r = 0.1f;
    rlx_named_tensor ins[8] = {tin("R", &r, RLX_F32, 0, NULL), tin("T", &step, RLX_I64, 0, NULL),
                               tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                               tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                               tin("H1", S1, RLX_F32, 1, DIMS(2)), tin("H2", S2, RLX_F32, 1, DIMS(3))};
    runner rr;
    if (run(m, ins, 8, &rr)) {
      double lr = 0.1 / (1 + (double)step * decay);
      for (int t = 0; t < 2; t++) {
        const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *h = t ? S2 : S1;
        int n = t ? 3 : 2;
        double wx[3], wh[3];
        for (int i = 0; i < n; i++) {
          double gr_ = norm * x[i] + gg[i];
          wh[i] = h[i] + gr_ * gr_;
          wx[i] = x[i] - lr * gr_ / (sqrt(wh[i]) + eps);
        }
        CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(2 + t), wh, (size_t)n, 1e-5));
      }
    }
    runner_free(&rr);
    mb_reset();
  }
}

static void test_momentum(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "V1", "V2"};
  const float alpha = 0.9f, beta = 0.25f, norm = 0.02f;
  for (int nesterov = 0; nesterov < 2; nesterov++)
    for (int64_t step = 0; step < 2; step++) {
      Onnx__GraphProto *g =
          gr("momentum",
             NODES(nd(TRAINING, "Momentum", "R,T,X1,X2,G1,G2,V1,V2", "X1n,X2n,V1n,V2n", 4, at_f("alpha", alpha),
                      at_f("beta", beta), at_f("norm_coefficient", norm), at_s("mode", nesterov ? "nesterov" : "standard"))),
             opt_inputs(names, 8), 8, VALS(vname("X1n"), vname("X2n"), vname("V1n"), vname("V2n")));
      packed m = pack(g, 0, 1);
      float r = 0.05f;
      rlx_named_tensor ins[8] = {tin("R", &r, RLX_F32, 0, NULL), tin("T", &step, RLX_I64, 0, NULL),
                                 tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                                 tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                                 tin("V1", S1, RLX_F32, 1, DIMS(2)), tin("V2", S2, RLX_F32, 1, DIMS(3))};
      runner rr;
      if (run(m, ins, 8, &rr)) {
        double ba = step > 0 ? beta : 1.0;
        for (int t = 0; t < 2; t++) {
          const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *v = t ? S2 : S1;
          int n = t ? 3 : 2;
          double wx[3], wv[3];
          for (int i = 0; i < n; i++) {
            double gr_ = norm * x[i] + gg[i];
            wv[i] = alpha * v[i] + ba * gr_;
            wx[i] = x[i] - 0.05 * (nesterov ? gr_ + alpha * wv[i] : wv[i]);
          }
          CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
          CHECK(close_to(&rr, (uint32_t)(2 + t), wv, (size_t)n, 1e-5));
        }
      }
      runner_free(&rr);
      mb_reset();
    }
}

static void test_adam(void) {
  const char *names[] = {"R", "T", "X1", "X2", "G1", "G2", "V1", "V2", "H1", "H2"};
  const float alpha = 0.8f, beta = 0.95f, eps = 1e-2f, norm = 0.01f, post = 0.1f;
  for (int64_t step = 0; step < 4; step += 3) {
    Onnx__GraphProto *g =
        gr("adam",
           NODES(nd(TRAINING, "Adam", "R,T,X1,X2,G1,G2,V1,V2,H1,H2", "X1n,X2n,V1n,V2n,H1n,H2n", 5, at_f("alpha", alpha),
                    at_f("beta", beta), at_f("epsilon", eps), at_f("norm_coefficient", norm),
                    at_f("norm_coefficient_post", post))),
           opt_inputs(names, 10), 10,
           VALS(vname("X1n"), vname("X2n"), vname("V1n"), vname("V2n"), vname("H1n"), vname("H2n")));
    packed m = pack(g, 0, 1);
    float r = 0.1f;
    rlx_named_tensor ins[10] = {tin("R", &r, RLX_F32, 0, NULL),     tin("T", &step, RLX_I64, 0, NULL),
                                tin("X1", X1, RLX_F32, 1, DIMS(2)), tin("X2", X2, RLX_F32, 1, DIMS(3)),
                                tin("G1", G1, RLX_F32, 1, DIMS(2)), tin("G2", G2, RLX_F32, 1, DIMS(3)),
                                tin("V1", S1, RLX_F32, 1, DIMS(2)), tin("V2", S2, RLX_F32, 1, DIMS(3)),
                                tin("H1", Q1, RLX_F32, 1, DIMS(2)), tin("H2", Q2, RLX_F32, 1, DIMS(3))};
    runner rr;
    if (run(m, ins, 10, &rr)) {
      double lr = 0.1;
      if (step > 0) lr = 0.1 * sqrt(1 - pow(beta, (double)step)) / (1 - pow(alpha, (double)step));
      for (int t = 0; t < 2; t++) {
        const float *x = t ? X2 : X1, *gg = t ? G2 : G1, *v = t ? S2 : S1, *h = t ? Q2 : Q1;
        int n = t ? 3 : 2;
        double wx[3], wv[3], wh[3];
        for (int i = 0; i < n; i++) {
          double gr_ = norm * x[i] + gg[i];
          wv[i] = alpha * v[i] + (1 - alpha) * gr_;
          wh[i] = beta * h[i] + (1 - beta) * gr_ * gr_;
          wx[i] = (1 - post) * (x[i] - lr * wv[i] / (sqrt(wh[i]) + eps));
        }
        CHECK(close_to(&rr, (uint32_t)t, wx, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(2 + t), wv, (size_t)n, 1e-5));
        CHECK(close_to(&rr, (uint32_t)(4 + t), wh, (size_t)n, 1e-5));
      }
    }
    runner_free(&rr);
    mb_reset();
  }
}

static void test_training_errors(void) {
  rlx_graph *g = NULL;
  const char *names[] = {"R", "T", "X1", "G1", "V1"};
  /* Momentum's mode must be "standard" or "nesterov" */
  packed m = pack(gr("m", NODES(nd(TRAINING, "Momentum", "R,T,X1,G1,V1", "X1n,V1n", 4, at_f("alpha", 0.9f),
                                   at_f("beta", 1.0f), at_f("norm_coefficient", 0.0f), at_s("mode", "heavy_ball"))),
                     opt_inputs(names, 5), 5, VALS(vname("X1n"))),
                  0, 1);
  CHECK_ERR(import(m, &g), RLX_ERR_FORMAT, "mode is \"heavy_ball\"; expected \"standard\" or \"nesterov\"");
  /* its attributes are required */
  m = pack(gr("m", NODES(nd(TRAINING, "Momentum", "R,T,X1,G1,V1", "X1n,V1n", 0)), opt_inputs(names, 5), 5,
              VALS(vname("X1n"))),
           0, 1);
  CHECK_ERR(import(m, &g), RLX_ERR_FORMAT, "attribute alpha is required");
  /* inputs must come in whole groups */
  const char *names4[] = {"R", "T", "X1", "G1"};
  m = pack(gr("m", NODES(nd(TRAINING, "Adagrad", "R,T,X1,G1", "X1n", 0)), opt_inputs(names4, 4), 4, VALS(vname("X1n"))),
           0, 1);
  CHECK_ERR(import(m, &g), RLX_ERR_FORMAT, "takes R, T and 3 groups");
  /* other ops of the training domain, and other domains, are gaps naming the domain */
  m = pack(gr("m", NODES(nd(TRAINING, "Sgd", "R,T,X1,G1", "X1n", 0)), opt_inputs(names4, 4), 4, VALS(vname("X1n"))), 0,
           1);
  CHECK_ERR(import(m, &g), RLX_ERR_UNSUPPORTED, "Sgd: no RLX mapping for this op of domain \"ai.onnx.preview.training\"");
  m = pack(gr("m", NODES(nd("com.example", "Adam", "R,T,X1,G1", "X1n", 0)), opt_inputs(names4, 4), 4,
              VALS(vname("X1n"))),
           0, 1);
  CHECK_ERR(import(m, &g), RLX_ERR_UNSUPPORTED, "domain \"com.example\" is not supported");
  /* a training opset this importer does not know */
  m = pack(gr("m", NODES(nd(TRAINING, "Adagrad", "R,T,X1,G1,V1", "X1n", 0)), opt_inputs(names, 5), 5,
              VALS(vname("X1n"))),
           0, 2);
  CHECK_ERR(import(m, &g), RLX_ERR_UNSUPPORTED, "opset 2 of domain ai.onnx.preview.training is not supported");
  CHECK(g == NULL);
  mb_reset();
}

/* ======================================================================================
 * Gradient
 * ====================================================================================== */

static void test_gradient(void) {
  /* y = (a + b) * a, listed after the Gradient node that names it (the importer must order the
   * Gradient after y's producer); the gradient is taken at the Gradient's inputs (p, q), which
   * differ from the forward values (a, b) */
  Onnx__GraphProto *g =
      gr("grad",
         NODES(nd(TRAINING, "Gradient", "p,q", "dy_da,dy_db", 2, at_strs("xs", "a,b"), at_s("y", "y")),
               nd(NULL, "Add", "a,b", "c", 0), nd(NULL, "Mul", "c,a", "y", 0)),
         VALS(vi("a", T_F32, 1, DIMS(3)), vi("b", T_F32, 1, DIMS(3)), vi("p", T_F32, 1, DIMS(3)),
              vi("q", T_F32, 1, DIMS(3))),
         VALS(vname("y"), vname("dy_da"), vname("dy_db")));
  packed m = pack(g, 13, 1);
  const float a[3] = {1, 2, -3}, b[3] = {0.5f, -1, 4}, p[3] = {2, 0, 1}, q[3] = {-1, 3, 0.25f};
  rlx_named_tensor ins[4] = {tin("a", a, RLX_F32, 1, DIMS(3)), tin("b", b, RLX_F32, 1, DIMS(3)),
                             tin("p", p, RLX_F32, 1, DIMS(3)), tin("q", q, RLX_F32, 1, DIMS(3))};
  runner rr;
  if (run(m, ins, 4, &rr)) {
    double wy[3], wda[3], wdb[3];
    for (int i = 0; i < 3; i++) {
      wy[i] = ((double)a[i] + b[i]) * a[i];
      wda[i] = 2.0 * p[i] + q[i]; /* d/da (a + b) a = 2a + b */
      wdb[i] = p[i];
    }
    CHECK(close_to(&rr, 0, wy, 3, 1e-6));
    CHECK(close_to(&rr, 1, wda, 3, 1e-6));
    CHECK(close_to(&rr, 2, wdb, 3, 1e-6));
  }
  runner_free(&rr);
  mb_reset();

  /* zs: y = sum(w * x) with x held fixed through zs; d y / d w = x (at the given x) */
  g = gr("gradz",
         NODES(nd(NULL, "Mul", "w,x", "wx", 0), nd(NULL, "ReduceSum", "wx", "y", 1, at_i("keepdims", 0)),
               nd(TRAINING, "Gradient", "w,x", "dy_dw", 3, at_strs("xs", "w"), at_strs("zs", "x"), at_s("y", "y"))),
         VALS(vi("w", T_F32, 1, DIMS(3)), vi("x", T_F32, 1, DIMS(3))), VALS(vname("dy_dw")));
  m = pack(g, 13, 1);
  rlx_named_tensor ins2[2] = {tin("w", a, RLX_F32, 1, DIMS(3)), tin("x", b, RLX_F32, 1, DIMS(3))};
  if (run(m, ins2, 2, &rr)) {
    double want[3] = {b[0], b[1], b[2]};
    CHECK(close_to(&rr, 0, want, 3, 1e-6));
  }
  runner_free(&rr);
  mb_reset();

  /* errors: an unknown name, an input count that does not match xs + zs */
  rlx_graph *gg = NULL;
  g = gr("bad", NODES(nd(NULL, "Add", "a,b", "c", 0), nd(TRAINING, "Gradient", "a", "d", 2, at_strs("xs", "a"), at_s("y", "nope"))),
         VALS(vi("a", T_F32, 1, DIMS(3)), vi("b", T_F32, 1, DIMS(3))), VALS(vname("d")));
  CHECK_ERR(import(pack(g, 13, 1), &gg), RLX_ERR_FORMAT, "\"nope\", which no node, graph input or initializer defines");
  g = gr("bad", NODES(nd(NULL, "Add", "a,b", "c", 0), nd(TRAINING, "Gradient", "a,b", "d", 2, at_strs("xs", "a"), at_s("y", "c"))),
         VALS(vi("a", T_F32, 1, DIMS(3)), vi("b", T_F32, 1, DIMS(3))), VALS(vname("d")));
  CHECK_ERR(import(pack(g, 13, 1), &gg), RLX_ERR_FORMAT, "has 2 inputs; it needs one per name of xs and zs (1)");
  CHECK(gg == NULL);
  mb_reset();
}

/* ======================================================================================
 * MaxPool Indices, MaxUnpool
 * ====================================================================================== */

/* Reference max pooling with indices over x [N, C, H, W] (1-D: H = 1), first maximum in window
 * order, pads never chosen; index (n * C + c) * H * W + (row major h * W + w | column major
 * h + w * H). */
static void ref_maxpool(const float *x, int N, int C, int H, int W, const int *k, const int *st, const int *dl,
                        const int *pb, int OH, int OW, int order, double *y, int64_t *idx) {
  for (int nc = 0; nc < N * C; nc++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int a = 0; a < k[0]; a++)
          for (int b = 0; b < k[1]; b++) {
            int h = oh * st[0] - pb[0] + a * dl[0], w = ow * st[1] - pb[1] + b * dl[1];
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            double v = x[(nc * H + h) * W + w];
            if (v > best) {
              best = v;
              bi = (int64_t)nc * H * W + (order ? h + (int64_t)w * H : (int64_t)h * W + w);
            }
          }
        y[(nc * OH + oh) * OW + ow] = best;
        idx[(nc * OH + oh) * OW + ow] = bi;
      }
}

static void test_maxpool_indices(void) {
  unsigned seed = 7;
  float x[2 * 2 * 5 * 6];
  for (int i = 0; i < 2 * 2 * 5 * 6; i++) x[i] = frand(&seed);
  x[2] = x[3] = 5.0f; /* a tie inside one window (row 0, columns 2 and 3): the first cell wins */
  /* 2-D, kernel 3x2, strides 2x2, asymmetric pads, both storage orders; output [2, 2, 3, 3] */
  for (int order = 0; order < 2; order++) {
    Onnx__GraphProto *g = gr("mp",
                             NODES(nd(NULL, "MaxPool", "x", "y,i", 4, at_ints("kernel_shape", 2, DIMS(3, 2)),
                                      at_ints("strides", 2, DIMS(2, 2)), at_ints("pads", 4, DIMS(1, 0, 1, 1)),
                                      at_i("storage_order", order))),
                             VALS(vi("x", T_F32, 4, DIMS(2, 2, 5, 6))), VALS(vname("y"), vname("i")));
    runner rr;
    rlx_named_tensor in = tin("x", x, RLX_F32, 4, DIMS(2, 2, 5, 6));
    if (run(pack(g, 12, 0), &in, 1, &rr)) {
      double wy[36];
      int64_t wi[36];
      ref_maxpool(x, 2, 2, 5, 6, (int[]){3, 2}, (int[]){2, 2}, (int[]){1, 1}, (int[]){1, 0}, 3, 3, order, wy, wi);
      CHECK(close_to(&rr, 0, wy, 36, 0));
      CHECK(equal_i64(&rr, 1, wi, 36));
    }
    runner_free(&rr);
    mb_reset();
  }
  /* 1-D with dilation (the strided-slice path) and ceil_mode: x [1, 2, 8], kernel 3, dilation 2,
   * stride 2 -> output length 3 with ceil_mode */
  Onnx__GraphProto *g = gr("mp1",
                           NODES(nd(NULL, "MaxPool", "x", "y,i", 4, at_ints("kernel_shape", 1, DIMS(3)),
                                    at_ints("strides", 1, DIMS(2)), at_ints("dilations", 1, DIMS(2)), at_i("ceil_mode", 1))),
                           VALS(vi("x", T_F32, 3, DIMS(1, 2, 8))), VALS(vname("y"), vname("i")));
  runner rr;
  rlx_named_tensor in = tin("x", x, RLX_F32, 3, DIMS(1, 2, 8));
  if (run(pack(g, 12, 0), &in, 1, &rr)) {
    double wy[6];
    int64_t wi[6];
    ref_maxpool(x, 1, 2, 1, 8, (int[]){1, 3}, (int[]){1, 2}, (int[]){1, 2}, (int[]){0, 0}, 1, 3, 0, wy, wi);
    CHECK(close_to(&rr, 0, wy, 6, 0));
    CHECK(equal_i64(&rr, 1, wi, 6));
  }
  runner_free(&rr);
  /* storage_order must be 0 or 1 */
  rlx_graph *gg = NULL;
  g = gr("bad", NODES(nd(NULL, "MaxPool", "x", "y,i", 2, at_ints("kernel_shape", 2, DIMS(2, 2)), at_i("storage_order", 2))),
         VALS(vi("x", T_F32, 4, DIMS(1, 1, 4, 4))), VALS(vname("y"), vname("i")));
  CHECK_ERR(import(pack(g, 12, 0), &gg), RLX_ERR_FORMAT, "attribute storage_order is 2");
  CHECK(gg == NULL);
  mb_reset();
}

static void test_maxunpool(void) {
  /* X [1, 2, 2, 2] with indices into the 4x4 planes (flat over N, C too), kernel 2, stride 2 */
  const float x[8] = {5, 6, 7, 8, -1, -2, -3, -4};
  const int64_t ix[8] = {5, 3, 8, 14, 16 + 0, 16 + 7, 16 + 9, 16 + 15};
  for (int shaped = 0; shaped < 2; shaped++) {
    Onnx__GraphProto *g =
        gr("mu",
           NODES(nd(NULL, "MaxUnpool", shaped ? "x,i,shape" : "x,i", "y", 2, at_ints("kernel_shape", 2, DIMS(2, 2)),
                    at_ints("strides", 2, DIMS(2, 2)))),
           VALS(vi("x", T_F32, 4, DIMS(1, 2, 2, 2)), vi("i", T_I64, 4, DIMS(1, 2, 2, 2))), VALS(vname("y")));
    if (shaped) init_i64(g, "shape", 4, DIMS(1, 2, 5, 6));
    runner rr;
    rlx_named_tensor ins[2] = {tin("x", x, RLX_F32, 4, DIMS(1, 2, 2, 2)), tin("i", ix, RLX_I64, 4, DIMS(1, 2, 2, 2))};
    if (run(pack(g, 11, 0), ins, 2, &rr)) {
      /* scattered into [1, 2, 4, 4]; a larger output_shape extends each axis with zeros at the end */
      int H = shaped ? 5 : 4, W = shaped ? 6 : 4;
      double want[2 * 5 * 6] = {0};
      for (int e = 0; e < 8; e++) {
        int64_t c = ix[e] / 16, h = ix[e] % 16 / 4, w = ix[e] % 4;
        want[(c * H + h) * W + w] = x[e];
      }
      CHECK(close_to(&rr, 0, want, (size_t)(2 * H * W), 0));
      CHECK(rr.n_outs == 1 && rr.outs[0].shape.rank == 4 && rr.outs[0].shape.dims[2] == H && rr.outs[0].shape.dims[3] == W);
    }
    runner_free(&rr);
    mb_reset();
  }
  /* an output_shape smaller than the unpooled shape is an error */
  rlx_graph *gg = NULL;
  Onnx__GraphProto *g = gr("bad",
                           NODES(nd(NULL, "MaxUnpool", "x,i,shape", "y", 2, at_ints("kernel_shape", 2, DIMS(2, 2)),
                                    at_ints("strides", 2, DIMS(2, 2)))),
                           VALS(vi("x", T_F32, 4, DIMS(1, 2, 2, 2)), vi("i", T_I64, 4, DIMS(1, 2, 2, 2))), VALS(vname("y")));
  init_i64(g, "shape", 4, DIMS(1, 2, 3, 4));
  CHECK_ERR(import(pack(g, 11, 0), &gg), RLX_ERR_FORMAT, "output_shape[2] is 3; it must be at least 4");
  CHECK(gg == NULL);
  mb_reset();
}

/* ======================================================================================
 * Einsum diagonals
 * ====================================================================================== */

static void test_einsum_diagonal(void) {
  unsigned seed = 3;
  float x[2 * 3 * 3], m[3 * 3 * 2];
  for (int i = 0; i < 18; i++) x[i] = frand(&seed), m[i] = frand(&seed);
  /* batch diagonal, implicit batch trace, and a repeated letter met again in another operand:
   * "iij,ki->kj" sums m[i, i, j] * w[k, i] */
  Onnx__GraphProto *g = gr("ein",
                           NODES(nd(NULL, "Einsum", "x", "d", 1, at_s("equation", "bii->bi")),
                                 nd(NULL, "Einsum", "x", "t", 1, at_s("equation", "bii")),
                                 nd(NULL, "Einsum", "m,x", "z", 1, at_s("equation", "iij,kli->kj"))),
                           VALS(vi("x", T_F32, 3, DIMS(2, 3, 3)), vi("m", T_F32, 3, DIMS(3, 3, 2))),
                           VALS(vname("d"), vname("t"), vname("z")));
  runner rr;
  rlx_named_tensor ins[2] = {tin("x", x, RLX_F32, 3, DIMS(2, 3, 3)), tin("m", m, RLX_F32, 3, DIMS(3, 3, 2))};
  if (run(pack(g, 12, 0), ins, 2, &rr)) {
    double wd[6], wt[2] = {0, 0}, wz[4] = {0, 0, 0, 0};
    for (int b = 0; b < 2; b++)
      for (int i = 0; i < 3; i++) {
        wd[b * 3 + i] = x[(b * 3 + i) * 3 + i];
        wt[b] += x[(b * 3 + i) * 3 + i];
      }
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++)
          for (int l = 0; l < 3; l++) wz[k * 2 + j] += (double)m[(i * 3 + i) * 2 + j] * x[(k * 3 + l) * 3 + i];
    CHECK(close_to(&rr, 0, wd, 6, 1e-6));
    CHECK(close_to(&rr, 1, wt, 2, 1e-6));
    CHECK(close_to(&rr, 2, wz, 4, 1e-5));
  }
  runner_free(&rr);
  mb_reset();
  /* errors: a repeated letter over axes of different sizes, a repeated output letter */
  rlx_graph *gg = NULL;
  g = gr("bad", NODES(nd(NULL, "Einsum", "m", "d", 1, at_s("equation", "iji->j"))), VALS(vi("m", T_F32, 3, DIMS(3, 3, 2))),
         VALS(vname("d")));
  CHECK_ERR(import(pack(g, 12, 0), &gg), RLX_ERR_FORMAT, "letter 'i' labels axes of sizes 3 and 2");
  g = gr("bad", NODES(nd(NULL, "Einsum", "m", "d", 1, at_s("equation", "ijk->ii"))), VALS(vi("m", T_F32, 3, DIMS(3, 3, 2))),
         VALS(vname("d")));
  CHECK_ERR(import(pack(g, 12, 0), &gg), RLX_ERR_FORMAT, "output letter 'i' appears twice");
  CHECK(gg == NULL);
  mb_reset();
}

/* ======================================================================================
 * Scan opset 8
 * ====================================================================================== */

/* body(sum_in [2], next [2]) -> (sum_in + next, (sum_in + next) * 2) */
static Onnx__GraphProto *scan_body(void) {
  return gr("body", NODES(nd(NULL, "Add", "sum_in,next", "sum_out", 0), nd(NULL, "Add", "sum_out,sum_out", "scan_out", 0)),
            VALS(vi("sum_in", T_F32, 1, DIMS(2)), vi("next", T_F32, 1, DIMS(2))), VALS(vname("sum_out"), vname("scan_out")));
}

static void test_scan8(void) {
  const float init[4] = {1, 2, -1, 0.5f};
  float xs[2 * 3 * 2];
  unsigned seed = 11;
  for (int i = 0; i < 12; i++) xs[i] = frand(&seed);
  /* 0: forward, sequence_lens {3, 2}; 1: reverse over whole sequences; 2: reverse, lengths {3, 2}
   * (only the first len elements are read, from len - 1 down to 0) */
  for (int variant = 0; variant < 3; variant++) {
    bool rev = variant > 0, lens = variant != 1;
    Onnx__NodeProto *n =
        rev ? nd(NULL, "Scan", lens ? "lens,init,x" : ",init,x", "final,outs", 3, at_g("body", scan_body()),
                 at_i("num_scan_inputs", 1), at_ints("directions", 1, DIMS(1)))
            : nd(NULL, "Scan", "lens,init,x", "final,outs", 2, at_g("body", scan_body()), at_i("num_scan_inputs", 1));
    Onnx__GraphProto *g = gr("s8", NODES(n), VALS(vi("init", T_F32, 2, DIMS(2, 2)), vi("x", T_F32, 3, DIMS(2, 3, 2))),
                             VALS(vname("final"), vname("outs")));
    if (lens) init_i64(g, "lens", 2, DIMS(3, 2));
    runner rr;
    rlx_named_tensor ins[2] = {tin("init", init, RLX_F32, 2, DIMS(2, 2)), tin("x", xs, RLX_F32, 3, DIMS(2, 3, 2))};
    if (run(pack(g, 8, 0), ins, 2, &rr)) {
      double wf[4], wo[12] = {0};
      for (int b = 0; b < 2; b++) {
        int len = lens && b == 1 ? 2 : 3;
        for (int e = 0; e < 2; e++) {
          double acc = init[b * 2 + e];
          for (int t = 0; t < len; t++) {
            int src = rev ? len - 1 - t : t;
            acc += xs[(b * 3 + src) * 2 + e];
            wo[(b * 3 + t) * 2 + e] = 2 * acc; /* steps past len stay 0 */
          }
          wf[b * 2 + e] = acc;
        }
      }
      CHECK(close_to(&rr, 0, wf, 4, 1e-6));
      CHECK(close_to(&rr, 1, wo, 12, 1e-6));
    }
    runner_free(&rr);
    mb_reset();
  }
  /* errors: a scan input without a sequence axis; a sequence length past the sequence */
  rlx_graph *gg = NULL;
  Onnx__GraphProto *g = gr("bad", NODES(nd(NULL, "Scan", ",init,x", "final,outs", 2, at_g("body", scan_body()), at_i("num_scan_inputs", 1))),
                           VALS(vi("init", T_F32, 2, DIMS(2, 2)), vi("x", T_F32, 1, DIMS(2))), VALS(vname("final")));
  CHECK_ERR(import(pack(g, 8, 0), &gg), RLX_ERR_FORMAT, "Scan-8 scan inputs need a leading batch axis and a sequence axis");
  g = gr("bad", NODES(nd(NULL, "Scan", "lens,init,x", "final,outs", 2, at_g("body", scan_body()), at_i("num_scan_inputs", 1))),
         VALS(vi("init", T_F32, 2, DIMS(2, 2)), vi("x", T_F32, 3, DIMS(2, 3, 2))), VALS(vname("final")));
  init_i64(g, "lens", 2, DIMS(3, 4));
  CHECK_ERR(import(pack(g, 8, 0), &gg), RLX_ERR_FORMAT, "sequence_lens[1] is 4; expected 1..3");
  CHECK(gg == NULL);
  mb_reset();
}

int main(void) {
  test_adagrad();
  test_momentum();
  test_adam();
  test_training_errors();
  test_gradient();
  test_maxpool_indices();
  test_maxunpool();
  test_einsum_diagonal();
  test_scan8();
  return rlx_test_finish("onnx_gapsa");
}
