/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The Custom op registry (include/rlx/custom.h): registration rules, shape rule, CPU kernel,
 * VJP builder, text / binary round trips, and the compile errors of an unregistered op or one
 * without a cpu kernel. The op under test is "test.scaled_square": y = a * x^2 with a = the f64 in
 * its attribute bytes; its gradient is 2 a x dy. Values are checked against that formula here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"
#include "rlx_test.h"

static double attr_a(const uint8_t *attrs, size_t len) {
  double a = 1.0;
  if (len == sizeof a) memcpy(&a, attrs, sizeof a);
  return a;
}

static rlx_status sq_infer(const rlx_shape *const *in, uint32_t n_in, const uint8_t *attrs, size_t len, void *user,
                           rlx_shape *out) {
  (void)n_in, (void)attrs, (void)len, (void)user;
  if (in[0]->dtype != RLX_F32 && in[0]->dtype != RLX_F64)
    return rlx_errorf(RLX_ERR_SHAPE, "test.scaled_square needs f32 or f64");
  *out = *in[0];
  return RLX_OK;
}

static int kernel_calls;
static rlx_status sq_cpu(const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const uint8_t *attrs, size_t len,
                         void *user) {
  (void)n_in;
  kernel_calls += *(int *)user;
  double a = attr_a(attrs, len);
  size_t n = 1;
  for (uint32_t k = 0; k < out->shape.rank; k++) n *= (size_t)out->shape.dims[k];
  for (size_t i = 0; i < n; i++) {
    if (out->shape.dtype == RLX_F64)
      ((double *)out->data)[i] = a * ((const double *)in[0].data)[i] * ((const double *)in[0].data)[i];
    else
      ((float *)out->data)[i] = (float)(a * ((const float *)in[0].data)[i] * ((const float *)in[0].data)[i]);
  }
  return RLX_OK;
}

static rlx_status sq_vjp(rlx_graph *g, const rlx_id *x, uint32_t n_in, rlx_id y, rlx_id dy, const bool *want,
                         const uint8_t *attrs, size_t len, void *user, rlx_id *dx) {
  (void)n_in, (void)y, (void)user;
  if (!want[0]) return RLX_OK;
  rlx_shape s = rlx_graph_node(g, x[0])->shape;
  double a2 = 2.0 * attr_a(attrs, len);
  rlx_id k, t;
  rlx_shape ks = rlx_shape_make((rlx_dtype)s.dtype, 0, NULL);
  float a2f = (float)a2;
  RLX_TRY(rlx_constant(g, ks, s.dtype == RLX_F64 ? (const void *)&a2 : (const void *)&a2f,
                       s.dtype == RLX_F64 ? sizeof a2 : sizeof a2f, &k));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, x[0], dy, &t));
  return rlx_binary(g, RLX_BINOP_MUL, t, k, &dx[0]);
}

static int one = 1;

static void test_registration(void) {
  rlx_custom_op_desc d = {.name = "test.scaled_square", .num_inputs = 1, .infer = sq_infer, .vjp = sq_vjp};
  CHECK_OK(rlx_custom_register(&d));
  CHECK(rlx_custom_register(&d) == RLX_ERR_INVALID_ARG); /* duplicate */
  CHECK(strstr(rlx_last_error(), "already registered") != NULL);
  CHECK(rlx_custom_register_cpu_kernel("test.nope", sq_cpu, &one) == RLX_ERR_NOT_FOUND);
  CHECK_OK(rlx_custom_register_cpu_kernel("test.scaled_square", sq_cpu, &one));
  CHECK(rlx_custom_register_cpu_kernel("test.scaled_square", sq_cpu, &one) == RLX_ERR_INVALID_ARG);
  rlx_custom_op_desc got;
  CHECK(rlx_custom_lookup("test.scaled_square", &got) && got.num_inputs == 1 && got.infer == sq_infer);
  CHECK(!rlx_custom_lookup("test.nope", &got));
  rlx_custom_fn_ptr fn;
  void *user;
  CHECK_OK(rlx_custom_find_kernel("test.scaled_square", "cpu", &fn, &user));
  CHECK(user == &one);
  CHECK(rlx_custom_find_kernel("test.scaled_square", "mlx", &fn, &user) == RLX_ERR_UNSUPPORTED);
  CHECK(strstr(rlx_last_error(), "no mlx kernel") != NULL);
}

/* x [2, 3] f64 -> scaled_square(x, a = 1.5); built with the registry's shape rule. */
static rlx_graph *sq_graph(const char *name, bool declared) {
  rlx_graph *g = NULL;
  rlx_id x, y;
  double a = 1.5;
  rlx_shape s = rlx_shape_make(RLX_F64, 2, (rlx_dim[]){2, 3});
  CHECK_OK(rlx_graph_create(NULL, "custom", &g));
  CHECK_OK(rlx_input(g, "x", s, &x));
  CHECK_OK(rlx_custom(g, name, &x, 1, &a, sizeof a, declared ? &s : NULL, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  return g;
}

static void test_run_and_formats(void) {
  rlx_graph *g = sq_graph("test.scaled_square", false);
  CHECK(rlx_graph_node(g, 1)->shape.rank == 2); /* from the shape rule */
  /* text and binary round trips keep the name, arity and attribute bytes */
  char *text = NULL;
  size_t len = 0;
  CHECK_OK(rlx_text_print(g, NULL, &text, &len));
  CHECK(strstr(text, "test.scaled_square") != NULL);
  rlx_graph *back = NULL;
  CHECK_OK(rlx_text_parse(text, len, "custom.rlx", NULL, &back));
  CHECK(back && rlx_graph_equal(g, back));
  rlx_graph_free(back);
  uint8_t *bin = NULL;
  size_t blen = 0;
  CHECK_OK(rlx_binary_write(g, NULL, &bin, &blen));
  back = NULL;
  CHECK_OK(rlx_binary_read(bin, blen, NULL, &back));
  CHECK(back && rlx_graph_equal(g, back));
  rlx_graph_free(back);
  free(bin);
  free(text);

  rlx_executable *e = NULL;
  CHECK_OK(rlx_compile(g, "cpu", NULL, &e));
  double xv[6] = {1, -2, 0.5, 3, 0, -1};
  rlx_named_tensor in = {"x", {xv, rlx_shape_make(RLX_F64, 2, (rlx_dim[]){2, 3})}};
  const rlx_tensor *out;
  uint32_t n_out;
  kernel_calls = 0;
  CHECK_OK(rlx_executable_run(e, &in, 1, &out, &n_out));
  CHECK(kernel_calls == 1);
  for (int i = 0; i < 6; i++) CHECK(((const double *)out[0].data)[i] == 1.5 * xv[i] * xv[i]);
  rlx_executable_free(e);

  /* gradient through the registered VJP builder: d sum(y) / dx = 3 x */
  rlx_graph *f = NULL;
  rlx_id x, y, s;
  double a = 1.5;
  rlx_shape sh = rlx_shape_make(RLX_F64, 1, (rlx_dim[]){3});
  CHECK_OK(rlx_graph_create(NULL, "f", &f));
  CHECK_OK(rlx_param(f, "x", sh, &x));
  CHECK_OK(rlx_custom(f, "test.scaled_square", &x, 1, &a, sizeof a, NULL, &y));
  CHECK_OK(rlx_build_Reduce(f, &y, 1, &(rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = {.v = (int64_t[]){0}, .n = 1}},
                            NULL, &s));
  CHECK_OK(rlx_graph_set_outputs(f, &s, 1));
  rlx_graph *gr = NULL;
  const char *wrt[1] = {"x"};
  CHECK_OK(rlx_grad(f, wrt, 1, NULL, &gr));
  CHECK_OK(rlx_compile(gr, "cpu", NULL, &e));
  double pv[3] = {0.5, -1, 2}, seed = 1.0;
  rlx_tensor pt = {pv, sh};
  CHECK_OK(rlx_executable_set_param(e, "x", &pt));
  rlx_named_tensor sd = {"d_output", {&seed, rlx_shape_make(RLX_F64, 0, NULL)}};
  CHECK_OK(rlx_executable_run(e, &sd, 1, &out, &n_out));
  for (int i = 0; i < 3; i++) CHECK(fabs(((const double *)out[0].data)[i] - 3.0 * pv[i]) < 1e-15);
  rlx_executable_free(e);
  rlx_graph_free(gr);
  rlx_graph_free(f);
  rlx_graph_free(g);
}

static void test_errors(void) {
  /* not registered: builds only with a declared shape; compiling names the op */
  rlx_graph *g = NULL;
  rlx_id x, y;
  rlx_shape s = rlx_shape_make(RLX_F64, 1, (rlx_dim[]){2});
  CHECK_OK(rlx_graph_create(NULL, "u", &g));
  CHECK_OK(rlx_input(g, "x", s, &x));
  CHECK(rlx_custom(g, "test.unknown_op", &x, 1, NULL, 0, NULL, &y) != RLX_OK);
  CHECK(strstr(rlx_last_error(), "test.unknown_op") != NULL && strstr(rlx_last_error(), "not registered") != NULL);
  CHECK_OK(rlx_custom(g, "test.unknown_op", &x, 1, NULL, 0, &s, &y));
  CHECK_OK(rlx_graph_set_outputs(g, &y, 1));
  rlx_executable *e = NULL;
  CHECK(rlx_compile(g, "cpu", NULL, &e) == RLX_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(rlx_last_error(), "custom op \"test.unknown_op\" is not registered") != NULL, "message: %s",
            rlx_last_error());
  /* a gradient through it is an error naming it */
  rlx_graph *gr = NULL;
  const char *wrt[1] = {"x"};
  rlx_graph *f = NULL;
  rlx_id p, q, r;
  CHECK_OK(rlx_graph_create(NULL, "f", &f));
  CHECK_OK(rlx_param(f, "x", s, &p));
  CHECK_OK(rlx_custom(f, "test.unknown_op", &p, 1, NULL, 0, &s, &q));
  CHECK_OK(rlx_build_Reduce(f, &q, 1, &(rlx_attrs_Reduce){.op = RLX_REDUCE_SUM, .axes = {.v = (int64_t[]){0}, .n = 1}},
                            NULL, &r));
  CHECK_OK(rlx_graph_set_outputs(f, &r, 1));
  CHECK(rlx_grad(f, wrt, 1, NULL, &gr) == RLX_ERR_UNSUPPORTED);
  CHECK(strstr(rlx_last_error(), "test.unknown_op") != NULL);
  rlx_graph_free(f);
  rlx_graph_free(g);

  /* registered, but without a cpu kernel */
  rlx_custom_op_desc d = {.name = "test.no_kernel", .num_inputs = 1, .infer = sq_infer};
  CHECK_OK(rlx_custom_register(&d));
  g = sq_graph("test.no_kernel", false);
  CHECK(rlx_compile(g, "cpu", NULL, &e) == RLX_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(rlx_last_error(), "custom op \"test.no_kernel\" has no cpu kernel") != NULL, "message: %s",
            rlx_last_error());
  rlx_graph_free(g);
  /* wrong arity against the registration */
  CHECK_OK(rlx_graph_create(NULL, "a", &g));
  CHECK_OK(rlx_input(g, "x", s, &x));
  rlx_id two[2] = {x, x};
  CHECK(rlx_custom(g, "test.no_kernel", two, 2, NULL, 0, NULL, &y) != RLX_OK);
  rlx_graph_free(g);
  CHECK_OK(rlx_custom_unregister("test.no_kernel"));
  CHECK(rlx_custom_unregister("test.no_kernel") == RLX_ERR_NOT_FOUND);
}

int main(void) {
  test_registration();
  test_run_and_formats();
  test_errors();
  CHECK_OK(rlx_custom_unregister("test.scaled_square"));
  return rlx_test_finish("custom");
}
