/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's claims beyond its lowering table: the kinds the runtime host-stages (runs on
 * the cpu backend: operands downloaded, the node run by the CPU reference, the result uploaded;
 * docs/backends.md) and the control kinds the runtime drives with bodies compiled for cuda.
 * Each host-staged kind names why it has no GPU kernel yet (docs/cuda.md lists them). A kind is
 * host-staged only when the CPU runs it natively; a kind that lower.c lowers is never staged. */
#include "backends/cpu/cpu_kernels.h"
#include "backends/cuda/lower.h"

static const char *const staged_why[RLX_OP_COUNT] = {
    /* the eigendecomposition gradients (Eigh / EighBatch themselves run on cuSOLVER syevd) */
    [RLX_OP_EighBackward] = "the CPU's gradient formula over the eigenpairs (no GPU kernel yet)",
    [RLX_OP_EighBatchBackward] = "the CPU's gradient formula over the eigenpairs (no GPU kernel yet)",
    /* the SPD-manifold family: eigendecompositions of small symmetric matrices */
    [RLX_OP_ReEig] = "eigendecomposition per matrix",
    [RLX_OP_LogEig] = "eigendecomposition per matrix",
    [RLX_OP_ReEigBackward] = "eigendecomposition per matrix",
    [RLX_OP_LogEigBackward] = "eigendecomposition per matrix",
    [RLX_OP_SpdBatchNorm] = "Karcher mean iterations over eigendecompositions",
    [RLX_OP_SpdBatchNormBackwardX] = "eigendecomposition per matrix",
    [RLX_OP_SpdBatchNormBackwardG] = "eigendecomposition per matrix",
    [RLX_OP_SpdKarcherMean] = "fixed-point iterations over eigendecompositions",
    [RLX_OP_SpdKarcherMeanWeighted] = "fixed-point iterations over eigendecompositions",
    [RLX_OP_SpdLogMap] = "eigendecomposition per matrix",
    [RLX_OP_SpdExpMap] = "eigendecomposition per matrix",
    [RLX_OP_SpdParallelTransport] = "eigendecomposition per matrix",
    [RLX_OP_SpdMatrixFnBatch] = "eigendecomposition per matrix",
    [RLX_OP_SpdLogMapBackward] = "eigendecomposition per matrix",
    [RLX_OP_SpdExpMapBackward] = "eigendecomposition per matrix",
    [RLX_OP_SpdParallelTransportBackward] = "eigendecomposition per matrix",
    [RLX_OP_SpdMatrixFnBatchBackward] = "eigendecomposition per matrix",
    /* Gaussian splatting: depth sort and per-tile front-to-back compositing */
    [RLX_OP_GaussianSplatRender] = "depth sort + sequential compositing",
    [RLX_OP_GaussianSplatRenderBackward] = "depth sort + sequential compositing",
    [RLX_OP_GaussianSplatPrepare] = "projection + depth sort",
    [RLX_OP_GaussianSplatRasterize] = "sequential compositing",
    /* signal processing beyond the Fft kernel */
    [RLX_OP_FftQ] = "fixed-point FFT with per-stage rounding",
    [RLX_OP_FftButterflyStage] = "fixed-point butterfly rounding",
    [RLX_OP_LogMel] = "STFT + mel filterbank (no GPU kernel yet)",
    [RLX_OP_LogMelBackward] = "STFT + mel filterbank (no GPU kernel yet)",
    [RLX_OP_WelchPeaks] = "Welch PSD + sequential peak picking",
    /* quantisation: integer formats, block scales, packed layouts (no GPU kernels yet) */
    [RLX_OP_FakeQuantizeLSQ] = "no GPU kernel yet",
    [RLX_OP_FakeQuantizeLSQBackwardX] = "no GPU kernel yet",
    [RLX_OP_FakeQuantizeLSQBackwardScale] = "no GPU kernel yet",
    [RLX_OP_QMatMul] = "integer matmul with requantisation (no GPU kernel yet)",
    [RLX_OP_QConv2d] = "integer conv with requantisation (no GPU kernel yet)",
    [RLX_OP_ScaledMatMul] = "block-scaled formats (no GPU kernel yet)",
    [RLX_OP_ScaledQuantize] = "block-scaled formats (no GPU kernel yet)",
    [RLX_OP_ScaledQuantScale] = "block-scaled formats (no GPU kernel yet)",
    [RLX_OP_ScaledDequantize] = "block-scaled formats (no GPU kernel yet)",
    [RLX_OP_GroupedMatMul] = "ragged groups (no GPU kernel yet)",
    [RLX_OP_DequantGroupedMatMul] = "packed weights, ragged groups (no GPU kernel yet)",
    [RLX_OP_DequantGroupedMatMulMlx] = "packed weights, ragged groups (no GPU kernel yet)",
    [RLX_OP_DequantMoEWeights] = "packed weight formats (no GPU kernel yet)",
    /* the rest */
    [RLX_OP_Custom] = "a user callback on host memory",
    [RLX_OP_Sample] = "sequential sampling (top-k / top-p filtering)",
    [RLX_OP_Im2Col] = "no GPU kernel yet",
};

/* Control kinds whose bodies the runtime compiles for cuda and drives (src/runtime/control.c). */
static const rlx_op control_kinds[] = {RLX_OP_If, RLX_OP_While, RLX_OP_Scan, RLX_OP_ScanBackward,
                                       RLX_OP_ScanBackwardXs};

static rlx_op claims[RLX_OP_COUNT], staged[RLX_OP_COUNT];
static uint32_t n_claims, n_staged;

static void build(void) {
  uint8_t lowered[RLX_OP_COUNT] = {0};
  uint32_t n_low;
  const rlx_op *low = rlx_cu_claim_list(&n_low);
  for (uint32_t i = 0; i < n_low; i++) lowered[low[i]] = 1;
  for (uint32_t i = 0; i < sizeof control_kinds / sizeof *control_kinds; i++) lowered[control_kinds[i]] = 2;
  uint32_t nc = 0, ns = 0;
  for (int k = 0; k < RLX_OP_COUNT; k++) {
    bool stage = !lowered[k] && staged_why[k] && rlx_cpu_ref_table[k];
    if (lowered[k] || stage) claims[nc++] = (rlx_op)k;
    if (stage) staged[ns++] = (rlx_op)k;
  }
  n_staged = ns;
  n_claims = nc;
}

const rlx_op *rlx_cu_all_claims(uint32_t *n) {
  if (!n_claims) build();
  *n = n_claims;
  return claims;
}
const rlx_op *rlx_cu_host_staged(uint32_t *n) {
  if (!n_claims) build();
  *n = n_staged;
  return staged;
}
const rlx_op *rlx_cu_runtime_control(uint32_t *n) {
  *n = sizeof control_kinds / sizeof *control_kinds;
  return control_kinds;
}
const char *rlx_cu_staged_why(rlx_op op) { return op < RLX_OP_COUNT ? staged_why[op] : NULL; }
