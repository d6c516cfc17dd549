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

int main(void) {
  test_adagrad();
  test_momentum();
  test_adam();
  test_training_errors();
  test_gradient();
  return rlx_test_finish("onnx_gapsa");
}
