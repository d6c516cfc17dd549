/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CPU fast kernel table: [op kind] = {applies, kernel} (see cpu_kernels.h). Kinds absent here
 * always run their reference kernel. */
#include "backends/cpu/fast/fast.h"

#define FAST(Op) [RLX_OP_##Op] = {rlx_fast_applies_##Op, rlx_fast_##Op}

const rlx_cpu_fast_kernel rlx_cpu_fast_table[RLX_OP_COUNT] = {
    /* gemm.c */
    FAST(MatMul),
    FAST(Transpose),
    /* expand.c */
    FAST(Expand),
    /* conv.c */
    FAST(Conv),
    FAST(Conv2dBackwardInput),
    FAST(Conv2dBackwardWeight),
    /* pool.c */
    FAST(Pool),
    FAST(MaxPool2dBackward),
    /* elementwise.c */
    FAST(Binary),
    FAST(Activation),
    FAST(ReluBackward),
    FAST(ActivationBackward),
    FAST(Where),
    FAST(Clamp),
    FAST(Cast),
    /* region.c */
    FAST(ElementwiseRegion),
    /* reduce.c */
    FAST(Reduce),
    FAST(Softmax),
    FAST(SoftmaxCrossEntropyWithLogits),
    FAST(SoftmaxCrossEntropyBackward),
    /* signal.c */
    FAST(Fft),
    /* attention.c */
    FAST(Attention),
    FAST(LayerNorm),
};
