/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's kernels for the kinds lowered in lower_ext.c, one record per step (plain C
 * types only): norms2.cu (GroupNorm, LayerNorm2d, BatchNormInference and their backward kinds,
 * FusedResidualLN / RmsNorm, AdaLayerNorm), bw_ext.cu (AdaLayerNormBackward,
 * GatedResidualBackward), complex.cu (Conjugate, ComplexNormSq(+Backward)), hist.cu (Histogram),
 * partconv.cu (PartitionedConv, Interpolate3d), rope2.cu (RopeBackward, AxialRope2d), spline.cu
 * (the SplineActivation family), quant.cu (FakeQuantize(+Backward), Quantize, Dequantize),
 * synth.cu (the codebook matmul kinds), solver.cu (Cholesky, Det, LogDet, the dense solves
 * through cuSOLVER, TriangularSolve through cuBLAS trsm; Qr, Svd, Eigh, EighBatch through cuSOLVER
 * geqrf / orgqr, gesvd, syevd, workspace sizes from rlx_cu_la_lwork at lowering), fft.cu (Fft). Some fields carry a mode's own meaning
 * (a dtype, an element size); the mode's comment says which. */
#ifndef RLX_CUDA_CU_EXT_H
#define RLX_CUDA_CU_EXT_H

#include <stdint.h>

#include "backends/cuda/cu.h"
#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_cu_ext_mode {
  /* lines normalised over `len` elements at base(r) + i * stride, base(r) = (r / P) * B + r % P;
   * affine parameter of element i of line r: (r % G) * cg + i / S */
  RLX_CU_EXT_LINE_NORM,
  RLX_CU_EXT_GN_DX,       /* GroupNorm dx: lines as above (stride 1), in = x, gamma, dy */
  RLX_CU_EXT_GN_STATS,    /* per line (mean, 1/sqrt(var + eps)) into scratch */
  RLX_CU_EXT_GN_PARAM,    /* per channel: sum of dy * xh (want_xh) or dy over batch and spatial */
  RLX_CU_EXT_BN,          /* BatchNormInference, channel = i % C: in = x, gamma, beta, mean, var */
  RLX_CU_EXT_BN_DX,       /* in = gamma, var, dy: dy * gamma / sqrt(var + eps) */
  RLX_CU_EXT_BN_DGAMMA,   /* in = x, mean, var, dy: per channel sum dy (x - mean) / sqrt(var + eps) */
  RLX_CU_EXT_BN_DBETA,    /* in = dy: per channel sum */
  RLX_CU_EXT_RES_NORM,    /* FusedResidualLN / RmsNorm: in = x, res, bias (or NULL), gamma, beta; rows of len */
  RLX_CU_EXT_ADA_NORM,    /* AdaLayerNorm: in = x, scale, shift (broadcast by bstride[0], bstride[1]); rows of len */
  RLX_CU_EXT_HISTOGRAM,   /* in = x (count elements); bins of [lo, hi]; counts in scratch (bins uint64) */
  RLX_CU_EXT_ROPE_BW,     /* RopeBackward: the Rope geometry in rope, rotation by -angle */
  RLX_CU_EXT_AXIAL_ROPE,  /* AxialRope2d: x [B, N, H D], tokens on an end_x x end_y grid */
  RLX_CU_EXT_SPLINE,      /* SplineActivation: in = x, coeffs (C channels of nk knots, C = 1 shared) */
  RLX_CU_EXT_SPLINE_DX,   /* in = x, coeffs, dy */
  RLX_CU_EXT_SPLINE_DC,   /* in = x, coeffs, dy -> [C, nk]; double sums in scratch */
  RLX_CU_EXT_ADA_BW,      /* AdaLayerNormBackward: in = x, scale, shift, dy -> [dx, dscale, dshift] */
  RLX_CU_EXT_GATED_BW,    /* GatedResidualBackward: in = x, y, gate, dy -> [dx, dy, dgate] */
  RLX_CU_EXT_FQ,          /* FakeQuantize: in = x, (state); channels [outer, C, S] (S = inner) */
  RLX_CU_EXT_FQ_BW,       /* FakeQuantizeBackward: in = x, dy; the PerBatch scale from x */
  RLX_CU_EXT_QUANT,       /* Quantize: x -> i8 with per-channel (double scale, int64 zero point) in scratch */
  RLX_CU_EXT_DEQUANT,     /* Dequantize: i8 -> x's dtype, the same parameters */
  RLX_CU_EXT_INTERP3D,    /* Interpolate3d nearest: [NC, D, H, W] -> [NC, D', H', W'], esz-byte elements (want_xh) */
  RLX_CU_EXT_SYNTH_REC,   /* SynthReconstruct [codes [R, N], codebook [NE, D]] -> W [R D, N] */
  RLX_CU_EXT_SYNTH_MM,    /* SynthMatMul [x [M, K], codes, codebook] -> x W */
  RLX_CU_EXT_SYNTH_BW_DX, /* SynthMatMulBackward wrt Dx [x, codes, codebook, dy] -> dy W^T */
  RLX_CU_EXT_SYNTH_BW_CB, /* wrt Codebook -> dcb [NE, D]: (x^T dy)[k, n] summed onto codes' entries */
  RLX_CU_EXT_CHOLESKY,    /* solver.cu: len = n */
  RLX_CU_EXT_DET,         /* len = n; out one element */
  RLX_CU_EXT_LOGDET,      /* len = n */
  RLX_CU_EXT_SOLVE,       /* DenseSolve / BatchedDenseSolve: N = batches, len = n, S = r */
  RLX_CU_EXT_TRSM,        /* TriangularSolve: len = n, S = r, rms = lower, want_xh = transpose */
  RLX_CU_EXT_QR,          /* solver.cu: A [rows = m, len = n] -> part (want_xh: 0 Q, 1 R); S = lwork */
  RLX_CU_EXT_SVD,         /* A [rows = m, len = n] -> part (want_xh: 0 U, 1 S, 2 VT); S = lwork */
  RLX_CU_EXT_EIGH,        /* N matrices [len, len] -> [N, len + len^2] (lambda | U); S = lwork */
  RLX_CU_EXT_PARTCONV,    /* PartitionedConv: lines of x [len] (*) ir [C] -> [len + C - 1]; N = ir dtype */
  RLX_CU_EXT_CONJ,        /* complex (re, -im) */
  RLX_CU_EXT_NORMSQ,      /* complex -> real re^2 + im^2 */
  RLX_CU_EXT_NORMSQ_BW    /* in = z, g (real): g z */
} rlx_cu_ext_mode;

typedef struct rlx_cu_ext {
  int mode;
  int dtype;    /* the output's dtype */
  int in_dtype; /* operand 0's dtype (complex kinds) */
  int want_xh;  /* GN_PARAM */
  int rms;      /* RES_NORM, ADA_NORM: RmsNorm statistics (mean 0) */
  int rank;     /* ADA_NORM: x's rank and dims, the operands' broadcast strides (elements) */
  int64_t dims[8], bstride[2][8];
  double lo, hi;                      /* HISTOGRAM */
  rlx_cu_rope rope;                   /* ROPE_BW */
  int64_t ex, rep, heads, hd, tokens; /* AXIAL_ROPE: end_x, repeat_factor, num_heads, head_dim, N */
  double theta;
  int qmode, ste; /* FQ: rlx_scale_mode; FQ / FQ_BW: rlx_ste; lo = qmax, hi = decay; state of
                     `want_xh` elements (1 or C) */
  /* ADA_BW / GATED_BW: reductions onto broadcast operands. red[k]: operand k (scale, shift or
   * gate): its elements (ntarget) over kept axes (nkeep dims kd, x strides ks), each summing x's
   * elements over the reduced axes (nred dims rd, x strides rs) */
  struct {
    int nkeep, nred;
    int64_t ntarget, kd[8], ks[8], rd[8], rs[8];
  } red[2];
  const void *in[5];
  void *out;
  void *scratch; /* GN_PARAM: 2 doubles per line (statistics), owned by the step */
  int64_t rows, len, stride, P, B, G, cg, S;
  int64_t count; /* elements (elementwise modes), C = channels (BN, GN_PARAM), N (GN_PARAM) */
  int64_t C, N;
  double eps;
} rlx_cu_ext;

rlx_status rlx_cu_norm2_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_complex_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_histogram_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_rope2_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_partconv_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_spline_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_bw_ext_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_fq_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_quant_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_interp3d_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_synth_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
rlx_status rlx_cu_solver_run(rlx_cu_ctx *c, const rlx_cu_ext *e);
/* solver.cu: the cuSOLVER workspace (elements of the dtype) a QR / SVD / EIGH step needs, queried once
 * at lowering (e->S receives it); then the step itself. */
rlx_status rlx_cu_la_lwork(rlx_cu_ctx *c, rlx_cu_ext *e);
rlx_status rlx_cu_la_run(rlx_cu_ctx *c, const rlx_cu_ext *e);

/* fft.cu: Fft through cuFFT. A plan (batched Z2Z over `lines` transforms of length N, in place on
 * a double-complex buffer) is made at lowering and freed with the step; the run packs x (c64 /
 * c128, or the real-block layout of f32 / f64) into that buffer in double, executes the plan and
 * stores the scaled result in the output's layout, so every dtype is transformed in double and
 * rounded once, as the CPU reference does. */
typedef struct rlx_cu_fft rlx_cu_fft;
rlx_status rlx_cu_fft_create(rlx_cu_ctx *c, int64_t lines, int64_t N, rlx_cu_fft **out);
void rlx_cu_fft_destroy(rlx_cu_ctx *c, rlx_cu_fft *f);
rlx_status rlx_cu_fft_run(rlx_cu_ctx *c, const rlx_cu_fft *f, int dtype, const void *x, void *out, int inverse,
                          double scale);

#ifdef __cplusplus
}
#endif

#endif
