/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions of the SPD family (spec ir-special §6): BiMap(W, X) = W X W^T as two
 * MatMuls and a Transpose (autodiff differentiates through them). */
#include "passes/decompose/decompose.h"

RLX_DECOMPOSE_DECL(BiMap) {
  (void)src;
  (void)n;
  rlx_id wx, wt;
  RLX_TRY(rlx_matmul(dst, in[0], in[1], &wx));
  RLX_TRY(rlx_permute(dst, in[0], 2, (const int64_t[]){1, 0}, &wt));
  return rlx_matmul(dst, wx, wt, out);
}
