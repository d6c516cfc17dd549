/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Compound literals for tests and benchmarks that build nodes or call kernels directly:
 *   SHP(F32, 2, 3)  an rlx_shape of dtype RLX_F32 and dims [2, 3]
 *   IL(1, 0)        an rlx_ilist {1, 0};  NOLIST: the empty list
 *   FL(0.5f, 2.f)   an rlx_flist
 * (tests/cases/cases.h has its own brace-initialiser IL/FL for the static case tables; the two are
 * never included together.) */
#ifndef RLX_TEST_ATTR_LISTS_H
#define RLX_TEST_ATTR_LISTS_H

#include "rlx/rlx.h"

#define SHP(t, ...) \
  rlx_shape_make(RLX_##t, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__})
#define IL(...) \
  ((rlx_ilist){.v = (int64_t[]){__VA_ARGS__}, .n = (uint32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))})
#define NOLIST ((rlx_ilist){.v = NULL, .n = 0})
#define FL(...) \
  ((rlx_flist){.v = (float[]){__VA_ARGS__}, .n = (uint32_t)(sizeof((float[]){__VA_ARGS__}) / sizeof(float))})

#endif
