/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Helpers for the shape-rule tests (test_infer_*.c): build shapes and attribute lists inline, run
 * one op's rule on operand shapes, and compare the result with an independently written shape. */
#ifndef RLX_INFER_TEST_H
#define RLX_INFER_TEST_H

#include <string.h>

#include "ir/ir_internal.h"
#include "rlx_test.h"
#include "attr_lists.h"

#define SYM(k) RLX_DIM_SYM(k)
/* SH(F32, 2, 3) = [2, 3] f32; SCALAR(F32) = [] f32. */
#define SH(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define SCALAR(t) rlx_shape_scalar(RLX_##t)
/* IL(1, 2) = an attribute list {1, 2}; NOLIST = the empty list. */

/* Runs the rule of `op` on n operand shapes. `attrs` points at an rlx_attrs_<Op> (NULL = defaults). */
static inline rlx_status infer_run(rlx_op op, const void *attrs, const rlx_shape *declared, rlx_shape *out, uint32_t n,
                                   const rlx_shape *ins) {
  rlx_attrs a;
  memset(&a, 0, sizeof a);
  if (attrs)
    memcpy(&a, attrs, rlx_op_attrs_size(op));
  else
    rlx_attrs_init(op, &a);
  const rlx_shape *p[16];
  for (uint32_t i = 0; i < n && i < 16; i++) p[i] = &ins[i];
  rlx_clear_error();
  return rlx_infer(NULL, op, p, n, &a, declared, out);
}

#define N_SHAPES(...) ((uint32_t)(sizeof((rlx_shape[]){__VA_ARGS__}) / sizeof(rlx_shape)))
#define RUN(op, attrs, decl, out, ...) \
  infer_run(RLX_OP_##op, attrs, decl, out, N_SHAPES(__VA_ARGS__), (rlx_shape[]){__VA_ARGS__})

/* Expects the rule to succeed with exactly `want`. */
#define EXPECT(op, attrs, decl, want, ...)                                                                             \
  do {                                                                                                                 \
    rlx_shape got_, want_ = (want);                                                                                    \
    rlx_status st_ = RUN(op, attrs, decl, &got_, __VA_ARGS__);                                                         \
    CHECK_MSG(st_ == RLX_OK, #op ": expected success, got %s: %s", rlx_status_text(st_), rlx_last_error());            \
    if (st_ == RLX_OK)                                                                                                 \
      CHECK_MSG(rlx_shape_equal(&got_, &want_), #op ": got %s, want %s", rlx_fmt_shape(&got_), rlx_fmt_shape(&want_)); \
  } while (0)

/* Expects the rule to fail with `code` and a message containing `substr`. */
#define EXPECT_ERR(op, attrs, decl, code, substr, ...)                                                              \
  do {                                                                                                              \
    rlx_shape got_;                                                                                                 \
    rlx_status st_ = RUN(op, attrs, decl, &got_, __VA_ARGS__);                                                      \
    CHECK_MSG(st_ == (code) && strstr(rlx_last_error(), substr), #op ": expected %s containing \"%s\", got %s: %s", \
              rlx_status_text(code), substr, rlx_status_text(st_), st_ ? rlx_last_error() : rlx_fmt_shape(&got_));  \
  } while (0)

/* Zero-operand variants (RngNormal / RngUniform). */
#define EXPECT0(op, attrs, decl, want)                                                               \
  do {                                                                                               \
    rlx_shape got_, want_ = (want);                                                                  \
    rlx_status st_ = infer_run(RLX_OP_##op, attrs, decl, &got_, 0, NULL);                            \
    CHECK_MSG(st_ == RLX_OK && rlx_shape_equal(&got_, &want_), #op ": %s: %s", rlx_status_text(st_), \
              st_ ? rlx_last_error() : rlx_fmt_shape(&got_));                                        \
  } while (0)
#define EXPECT0_ERR(op, attrs, decl, code, substr)                                                                  \
  do {                                                                                                              \
    rlx_shape got_;                                                                                                 \
    rlx_status st_ = infer_run(RLX_OP_##op, attrs, decl, &got_, 0, NULL);                                           \
    CHECK_MSG(st_ == (code) && strstr(rlx_last_error(), substr), #op ": expected %s containing \"%s\", got %s: %s", \
              rlx_status_text(code), substr, rlx_status_text(st_), st_ ? rlx_last_error() : rlx_fmt_shape(&got_));  \
  } while (0)

#define SHAPE_ERR RLX_ERR_SHAPE

#endif
