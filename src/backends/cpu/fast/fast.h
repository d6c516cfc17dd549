/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Private interface of the CPU fast kernels (fast/): the worker pool with its scratch memory
 * (threads.c), the GEMM and shape helpers every family uses, and the applies/kernel pairs the
 * table (table.c) collects.
 *
 * Fast kernels compute in f32 (GEMMs through cblas_sgemm) where the reference kernels compute in
 * double; results agree to f32 rounding (docs/cpu-backend.md). A kernel runs only on operands for
 * which its `applies` returned true, so it does not repeat the reference kernel's checks; data-
 * dependent errors (a label out of range) are left to the reference kernel, which the fast kernel
 * calls to produce the message. */
#ifndef RLX_CPU_FAST_H
#define RLX_CPU_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cpu/cpu_kernels.h"

/* ---- worker pool and scratch (threads.c) ---- */

/* A pool of threads - 1 persistent workers (the caller is the remaining one) plus a scratch
 * buffer reused across kernel calls. threads >= 1 (1: no workers, scratch only). */
rlx_status rlx_cpu_pool_create(int threads, rlx_cpu_pool **out);
/* Switches OpenBLAS to one thread per call for the process (once; the first pool does it too).
 * OpenBLAS's own threading changes its results with its thread count (docs/cpu-backend.md). */
void fk_blas_serial(void);
void rlx_cpu_pool_free(rlx_cpu_pool *p);

/* fn(arg, lo, hi, chunk) over [0, n) split into k = fk_chunks(ctx, n, grain) contiguous chunks:
 * chunk c covers [c*n/k, (c+1)*n/k), usually on worker c (chunk 0 on the caller; the caller also
 * takes chunks a late worker has not started). Chunks may run concurrently, so per-chunk state is
 * indexed by `chunk`. The split depends only on n, grain and ctx->threads, so results are
 * reproducible for a thread count. Runs serially (in chunk order) without a pool or when called
 * from inside a task. */
typedef void (*fk_task)(void *arg, size_t lo, size_t hi, int chunk);
/* Deterministic mode (ctx->deterministic): a reduction over n items that is split across threads
 * is cut into P = fk_parts(ctx, n) parts instead of one per thread; part p covers
 * [p*n/P, (p+1)*n/P), its partial result starts from zero, and the parts are combined in part
 * order. P depends on n only: one part per FK_DET_PART_ITEMS items, at least FK_DET_MIN_PARTS
 * (or n when smaller), at most FK_DET_MAX_PARTS. Without deterministic mode P is the thread split
 * (fk_chunks), so results depend on the thread count. */
#define FK_DET_PART_ITEMS 16
#define FK_DET_MIN_PARTS 4
#define FK_DET_MAX_PARTS 64
int fk_parts(const rlx_cpu_ctx *ctx, size_t n);
/* MatMul blocks in deterministic mode: as if for one thread per online core of the machine (at
 * most 8), whatever `threads` is, at least FK_DET_GEMM_MIN_COLS rows / columns each. Each block is
 * one sgemm call, and every call repacks an operand, so the split costs time even at 1 thread;
 * sizing it by the machine (not a fixed 4) keeps that cost at what its cores can use. */
int fk_det_gemm_ways(void);
#define FK_DET_GEMM_MIN_COLS 64
int fk_chunks(const rlx_cpu_ctx *ctx, size_t n, size_t grain);
void fk_parallel_for(rlx_cpu_ctx *ctx, size_t n, size_t grain, fk_task fn, void *arg);

/* A 64-byte aligned buffer of `bytes` for the duration of one kernel call (the pool's cached
 * scratch; malloc without a pool). Release it with fk_scratch_release. NULL when out of memory. */
void *fk_scratch(rlx_cpu_ctx *ctx, size_t bytes);
void fk_scratch_release(rlx_cpu_ctx *ctx, void *p);
/* Rounds a byte count up to a multiple of 64 (for carving one scratch block into parts). */
static inline size_t fk_align64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Sum of x[0..len) in double with 8 independent partial sums (vectorisable, fixed order). */
static inline double fk_sum_run(const float *restrict x, size_t len) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= len; i += 8)
    for (int l = 0; l < 8; l++) acc[l] += (double)x[i + l];
  double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < len; i++) s += (double)x[i];
  return s;
}

/* ---- small shape helpers ---- */

static inline size_t fk_numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}
static inline bool fk_is_f32(const rlx_shape *s) { return s->dtype == RLX_F32; }
/* Static f32 shape whose element count (and f32 byte size) fits comfortably. */
bool fk_static_f32(const rlx_shape *s);
/* The same dims (rank and extents). */
bool fk_same_dims(const rlx_shape *a, const rlx_shape *b);

/* C[M, N] = A . B (+ C when accumulate), row-major; ta / tb take A / B transposed (A is then
 * stored [K, M], B [N, K]). Extents must fit int (checked by the appliers). */
void fk_sgemm(bool ta, bool tb, size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B, size_t ldb,
              bool accumulate, float *C, size_t ldc);

/* ---- direct stride-1 convolution with AVX2 + FMA or AVX-512 (conv_direct.c, conv_direct_avx512.c) ---- */

/* Geometry of one group of one image: C input planes [H][W] padded to [Hp][Wp], O outputs
 * [Ho][Wo] (stride 1), R = C*kh*kw taps; buffer extents for the routines below. */
typedef struct fk_dconv {
  size_t C, O, H, W, kh, kw, dh, dw, pt, pl;
  size_t Hp, Wp, Ho, Wo, R, Rp, Op;
  size_t Q, Qpad, Qv; /* wide grid Ho*Wp; the forward buffer's row length; rounded up to a vector */
  size_t xp_floats;   /* padded input buffer (with read slack) */
  /* the kernel set, chosen by fk_dconv_init from the active path: AVX-512 (16 lanes, tiles of
     FK_DCONV512_MR channels x FK_DCONV512_NQ positions) or AVX2 (8 lanes, 4 x 24) */
  bool avx512;
  size_t mr, lanes, nq; /* channels per tile (Op is a multiple), lanes per vector, positions per tile */
  /* backward-weight with the output channels in the lanes (AVX-512, O a multiple of 16, 3-wide
     kernel rows, no column dilation): fk_dconv_wide_dy transposes dy to [Ho*Wo][O] and the
     accumulators are dw itself, [R][O] (conv_direct_avx512.c) */
  bool dwt;
} fk_dconv;
#define FK_DCONV512_MR 8
#define FK_DCONV512_NQ 48
void fk_dconv_init(fk_dconv *d, size_t C, size_t O, size_t H, size_t W, size_t kh, size_t kw, size_t dh, size_t dw,
                   size_t pt, size_t pl, size_t pb, size_t pr);
/* The instruction-set path of the fast kernels: the best the CPU runs, or the one the environment
 * variable RLX_CPU_ISA (scalar | avx2 | avx512 | auto) forces. scalar = baseline x86-64 (SSE2
 * only, no AVX2/FMA kernels); avx2 = the AVX2 + FMA kernels and the elementwise loops built for
 * AVX2; avx512 = the same convolutions, the elementwise loops built for AVX-512F (elem_loops.h;
 * OpenBLAS picks its own, see OPENBLAS_CORETYPE in docs/cpu-backend.md). */
typedef enum fk_isa { FK_ISA_SCALAR, FK_ISA_AVX2, FK_ISA_AVX512 } fk_isa;
/* The mask of an AVX-512 register's first n lanes (all 16 for n >= 16), as the kernels' masked
 * loads and stores take it (__mmask16). */
static inline uint16_t fk_lanes16(size_t n) { return n >= 16 ? (uint16_t)0xFFFF : (uint16_t)((1u << n) - 1u); }
fk_isa fk_isa_cpu(void);    /* what this CPU runs */
fk_isa fk_isa_active(void); /* what the kernels use now */
const char *fk_isa_name(fk_isa isa);
/* Reads RLX_CPU_ISA (at every CPU compile): an unknown name or a path this CPU cannot run is an
 * error naming the variable; otherwise the path is used process-wide from now on. */
rlx_status fk_isa_configure(void);
bool fk_dconv_available(
    void); /* AVX2 + FMA (or AVX-512) kernels: the CPU runs them, the path allows them, not disabled */
void fk_dconv_disable(bool off); /* tests: force the im2col + sgemm path */
size_t fk_dconv_wpk_floats(const fk_dconv *d);
size_t fk_dconv_acc_floats(const fk_dconv *d);
/* off[Rp]: xp offset of every tap. */
void fk_dconv_offsets(const fk_dconv *d, int32_t *off);
/* Packs w [O][C][kh][kw] (flipped: w [C][O][kh][kw] read with reversed taps, the backward-input
 * convolution) into blocks of d->mr channels [Op/mr][R][mr]. */
void fk_dconv_pack_weight(const fk_dconv *d, const float *w, bool flipped, float *wpk);
/* x [C][H][W]; again: xp already holds an image padded with this geometry (only the interior is
 * rewritten, the zero border stays) */
void fk_dconv_pad(const fk_dconv *d, const float *x, float *xp, bool again);
void fk_dconv_forward(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off,
                      float *yw); /* yw [Op][Qpad] */
/* The same for the wide-grid tiles [t0, t1) of fk_dconv_tile_count(d) (each tile's results do not
 * depend on the others: a split across threads gives the same bits). */
size_t fk_dconv_tile_count(const fk_dconv *d);
void fk_dconv_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                            size_t t0, size_t t1);
/* y [O][Ho][Wo] from the wide buffer; with bias: y = conv + bias[o] and, when r is not NULL,
 * r = relu(y) (the fused epilogue); y may then be NULL (r only). */
void fk_dconv_compact(const fk_dconv *d, const float *yw, const float *bias, float *y, float *r);
/* dyw [Op][Qv]; again as for fk_dconv_pad */
void fk_dconv_wide_dy(const fk_dconv *d, const float *dy, float *dyw, bool again);
/* The forward tiles [t0, t1) written straight to y / r [O][Ho][Wo] with fk_dconv_compact's
 * epilogue (same values), without the wide buffer: only where fk_dconv_fused_out(d). */
bool fk_dconv_fused_out(const fk_dconv *d);
void fk_dconv_forward_out(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, const float *bias,
                          float *y, float *r, size_t t0, size_t t1);
/* acc [acc_floats] += lane partial sums of n images, image k at xp + k*stride and dyw + k*stride
 * (summed in image order per lane, so any n gives the same bits) */
void fk_dconv_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n, const int32_t *off,
                 float *acc);
#define FK_DCONV_DW_IMAGES 4 /* images per fk_dconv_dw call of conv.c */
void fk_dconv_dw_finish(const fk_dconv *d, const float *acc, bool accumulate, float *dw); /* [O][R] */
/* The AVX-512 kernels behind fk_dconv_forward_tiles and fk_dconv_dw (conv_direct_avx512.c; called
 * only when d->avx512). */
void fk_dconv512_forward_tiles(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off, float *yw,
                               size_t t0, size_t t1);
void fk_dconv512_dw(const fk_dconv *d, const float *xp, const float *dyw, size_t stride, size_t n, const int32_t *off,
                    float *acc);
void fk_dconv512_dwt(const fk_dconv *d, const float *xp, const float *dyt, size_t stride, size_t n, const int32_t *off,
                     float *acc);
void fk_dconv512_transpose_dy(const fk_dconv *d, const float *dy, float *dyt);
/* fk_dconv_pad, fk_dconv_wide_dy, fk_dconv_compact with 16-lane row copies (same results) */
void fk_dconv512_pad(const fk_dconv *d, const float *x, float *xp, bool again);
void fk_dconv512_wide_dy(const fk_dconv *d, const float *dy, float *dyw, bool again);
void fk_dconv512_forward_out(const fk_dconv *d, const float *xp, const float *wpk, const int32_t *off,
                             const float *bias, float *y, float *r, size_t t0, size_t t1);
void fk_dconv512_compact(const fk_dconv *d, const float *yw, const float *bias, float *y, float *r);

/* ---- depthwise convolution forward and the convolution epilogue (conv_dw.c) ---- */

/* One depthwise plane: x [H][W] -> y [Ho][Wo], kernel kh x kw, stride, dilation, begin padding
 * pt / pl >= 0 (the end padding is whatever the window reaches). The padded plane is stored as
 * sh*sw phase planes [Hq][Wq] so that every tap is a unit-stride shift of the wide grid
 * Ho x Wq. fk_dw_init is false for geometries it does not take (negative padding, more than 64
 * taps). */
#define FK_DW_MAX_TAPS 64
typedef struct fk_dw {
  size_t H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl;
  size_t Hq, Wq, plane_q;           /* phase planes */
  size_t Q, Qpad;                   /* wide grid Ho*Wq, rounded up to whole 16-float vectors */
  size_t buf_floats;                /* the phase planes with read slack */
  int32_t off[FK_DW_MAX_TAPS];      /* buffer offset of every tap */
  size_t col0[8], colj[8], coln[8]; /* per column phase: first input column, its place, count */
} fk_dw;
bool fk_dw_init(fk_dw *d, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw, size_t sh, size_t sw,
                size_t dh, size_t dw, int64_t pt, int64_t pl);
size_t fk_dw_scratch_floats(const fk_dw *d);        /* per worker */
void fk_dw_prepare(const fk_dw *d, float *scratch); /* once per worker buffer, before its planes */
/* The interior of x's phase planes into buf (its zero border is left as it is). */
void fk_dw_fill(const fk_dw *d, const float *x, float *buf);
/* z = conv(x, w) (+ *bias) unless z is NULL; r = act(z) when r is not NULL and has_act. */
void fk_dw_plane(const fk_dw *d, const float *x, const float *w, const float *bias, rlx_act act, bool has_act, float *z,
                 float *r, float *scratch);
void fk_dw_disable(bool off); /* tests: force conv.c's plain depthwise loops */
/* Depthwise on channel blocks (AVX-512 only; conv_dw.c): 16 channels of one image per call, for
 * planes whose padded tile [Hp][Wp] has at most 1024 positions. The phase-plane kernel's values. */
typedef struct fk_dwc {
  size_t C, H, W, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl, Hp, Wp;
} fk_dwc;
bool fk_dwc_init(fk_dwc *d, size_t C, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw, size_t sh,
                 size_t sw, size_t dh, size_t dw, int64_t pt, int64_t pl);
size_t fk_dwc_blocks(const fk_dwc *d);                /* channel blocks of an image */
void fk_dwc_disable(bool off);                        /* tests: keep the phase-plane kernels */
size_t fk_dwc_scratch_floats(const fk_dwc *d);        /* per worker */
void fk_dwc_prepare(const fk_dwc *d, float *scratch); /* once per worker buffer */
/* Channels [c0, c0 + 16) of one image: x [C][H][W], w [C][kh][kw], bias [C] or NULL; z [C][Ho][Wo]
 * = conv (+ bias) unless NULL; r = act(z) when r is not NULL and has_act. */
void fk_dwc_block(const fk_dwc *d, const float *x, const float *w, const float *bias, size_t c0, rlx_act act,
                  bool has_act, float *z, float *r, float *scratch);
/* y = act(x) for an activation fk_conv_act_ok accepts, with the Activation kernel's values bit
 * for bit; x may be y (in place) but must not overlap it otherwise. */
void fk_conv_act(rlx_act act, const float *x, float *y, size_t n);
/* The activations the convolution epilogue fuses. */
bool fk_conv_act_ok(rlx_act act);

/* ---- direct convolution of any stride on phase planes, AVX-512F or AVX2 + FMA (conv_phase.c) ---- */

/* One image and group: C input planes (each as conv_dw.c's phase planes, cs floats apart in buf)
 * -> O output planes. */
typedef struct fk_pconv {
  fk_dw p;                /* one plane's phase geometry and tap offsets */
  size_t C, O, Op, R, cs; /* R = C*kh*kw taps; Op = O rounded up to the tile */
  size_t Qt;              /* the wide grid rounded up to whole tiles */
  size_t buf_floats;      /* phase planes of every channel, with read slack */
} fk_pconv;
bool fk_pconv_init(fk_pconv *d, size_t C, size_t O, size_t H, size_t W, size_t Ho, size_t Wo, size_t kh, size_t kw,
                   size_t sh, size_t sw, size_t dh, size_t dw, int64_t pt, int64_t pl);
bool fk_pconv_available(void);   /* the AVX2 or AVX-512 path is active (conv.c picks per path) */
void fk_pconv_disable(bool off); /* tests: keep conv.c's other paths (conv.c) */
size_t fk_pconv_tiles_count(const fk_pconv *d);
void fk_pconv_offsets(const fk_pconv *d, int32_t *off);            /* off [R]: buffer offset of every tap */
void fk_pconv_fill(const fk_pconv *d, const float *x, float *buf); /* x [C][H][W]; buf zeroed once */
/* Tiles [t0, t1) straight to y [O][Ho][Wo] (+ bias[o] when not NULL, then Relu with relu); w
 * [O][C][kh][kw] as stored (no packing). A tile is 4 output channels x 64 positions of the wide grid, numbered position
 * block major (t = block * ceil(O / 4) + channel block), so that one image splits across the
 * threads even when its grid is one block (resnet18's 7x7 planes). */
void fk_pconv_tiles(const fk_pconv *d, const float *buf, const float *w, const int32_t *off, const float *bias,
                    float *y, bool relu, size_t t0, size_t t1);
/* r = act(sum) over output channels [o0, o1) (sum may be r: in place); both point at channel 0. */
void fk_pconv_act(const fk_pconv *d, size_t o0, size_t o1, rlx_act act, const float *sum, float *r);

/* ---- Winograd F(2x2, 3x3) forward convolution, AVX-512F or AVX2 + FMA (conv_winograd.c) ----
 * x [N][C][H][W] -> y [N][O][Ho][Wo], stride 1, padding ph / pw on both sides (Ho = H + 2ph - 2),
 * in groups of `imgs` images: U (the transformed weights, once per call), then per group V (the
 * transformed input tiles), M = U . V per point, y = the output transform of M. */
typedef struct fk_wino {
  size_t N, C, O, H, W, ph, pw, Ho, Wo;
  size_t th, tw, T; /* 2x2 tiles per image */
  size_t Wp;        /* a zero-padded input row (with read slack) */
  size_t imgs;      /* images per group */
  size_t pad_floats;
} fk_wino;
bool fk_wino_init(fk_wino *d, size_t N, size_t C, size_t O, size_t H, size_t W, size_t ph, size_t pw);
bool fk_wino_available(void);               /* the AVX2 or AVX-512 path is active, with vector gemm_packed tiles */
void fk_wino_disable(bool off);             /* tests: keep conv.c's other paths (conv.c) */
size_t fk_wino_u_floats(const fk_wino *d);  /* U [16][O][C] */
size_t fk_wino_v_floats(const fk_wino *d);  /* V: 16 points of gemm_packed.c panels [C][32] */
size_t fk_wino_vm_floats(const fk_wino *d); /* V, then M [16][O][imgs*T] */
void fk_wino_weights(const fk_wino *d, const float *w, float *u, size_t o0, size_t o1);
void fk_wino_input(const fk_wino *d, const float *x, size_t b0, size_t nb, float *v, size_t c0, size_t c1, float *pad);
void fk_wino_gemm(const fk_wino *d, const float *u, const float *v, float *mm, size_t nb, size_t p0, size_t p1);
void fk_wino_output(const fk_wino *d, const float *mm, size_t b0, size_t nb, const float *bias, float *y, size_t o0,
                    size_t o1);

/* ---- kernels: applies + kernel per op (one family per file) ---- */

#define FK_DECL(Op)                                                                   \
  bool rlx_fast_applies_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in); \
  rlx_status rlx_fast_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, rlx_cpu_ctx *ctx)
#define FK_APPLIES(Op) bool rlx_fast_applies_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in)
#define FK_KERNEL(Op) \
  rlx_status rlx_fast_##Op(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, rlx_cpu_ctx *ctx)

/* gemm.c */
FK_DECL(MatMul);
FK_DECL(Transpose);
/* expand.c */
FK_DECL(Expand);
/* conv.c */
FK_DECL(Conv);
FK_DECL(Conv2dBackwardInput);
FK_DECL(Conv2dBackwardWeight);
/* pool.c */
FK_DECL(Pool);
FK_DECL(MaxPool2dBackward);
/* elementwise.c */
FK_DECL(Binary);
FK_DECL(Activation);
FK_DECL(ReluBackward);
FK_DECL(ActivationBackward);
FK_DECL(Where);
FK_DECL(Clamp);
FK_DECL(Cast);
FK_DECL(ElementwiseRegion);
/* The f32 loops behind Binary and Activation, for the region kernel (fast/region.c): c[i] =
 * a[i*sa] op b[i*sb] (sa, sb in {0, 1}) for the ops fk_bin_f32_ok accepts (Add Sub Mul Div Max
 * Min); y = act(x) for the kinds fk_act_f32_ok accepts. Same values as the Binary / Activation
 * fast kernels. */
bool fk_bin_f32_ok(rlx_binop op);
void fk_bin_f32(rlx_binop op, const float *a, size_t sa, const float *b, size_t sb, float *c, size_t len);
/* Gelu (erf form) on the AVX-512 / AVX2 path with FMAs (gelu_avx512.c, gelu_avx2.c; the same bits
 * as el_geluf); fk_act_f32 calls them there. */
void fk_gelu_avx512(const float *x, float *y, size_t n);
void fk_gelu_avx2(const float *x, float *y, size_t n);
void fk_erf_avx2(const float *x, float *y, size_t n); /* el_erff's operations (gelu_avx2.c), the same bits */
void fk_exp_avx2(const float *x, float *y, size_t n); /* el_expf's operations (gelu_avx2.c), the same bits */
bool fk_act_f32_ok(rlx_act k);
void fk_act_f32(rlx_act k, const float *x, float *y, size_t len);
/* reduce.c */
FK_DECL(Reduce);
FK_DECL(Softmax);
FK_DECL(SoftmaxCrossEntropyWithLogits);
FK_DECL(SoftmaxCrossEntropyBackward);
/* signal.c */
FK_DECL(Fft);
/* attention.c */
FK_DECL(Attention);
FK_DECL(LayerNorm);

/* Attention with its operands read where they are (the executor's fusions, backend.c): the bias
 * of mask Bias through an Expand of a smaller tensor (bias_src_applies: it broadcasts to the
 * bias shape and keeps its last axis) with broadcast strides; q, k or v as a strided view
 * (fk_attn_view: element strides over batch, head and row, the last axis contiguous) of the
 * tensor that Narrow -> Reshape -> Transpose(0, 2, 1, 3) made them from (the fused QKV
 * projection [B, S, 3 H D] of a BERT layer). The same values are read, so the same bits. */
typedef struct fk_attn_view {
  const float *p; /* NULL: the operand as stored */
  size_t st[3];
} fk_attn_view;
typedef struct fk_attn_src {
  fk_attn_view view[3];
  bool has_bias; /* else in[3] as stored */
  rlx_tensor bias;
} fk_attn_src;
bool rlx_fast_attention_bias_src_applies(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_shape *src);
rlx_status rlx_fast_attention_src(const rlx_node *n, const rlx_tensor *in, const fk_attn_src *src, rlx_tensor *out,
                                  rlx_cpu_ctx *ctx);

/* MatMul with operands read transposed (the executor's Transpose -> MatMul fusion): a and b as
 * stored; ta / tb say that the last two axes of a / b are to be swapped first. `n` is the MatMul
 * node (its declared shape is the output's). applies_ex checks the stored shapes. */
bool rlx_fast_matmul_ex_applies(const rlx_node *n, const rlx_shape *a, bool ta, const rlx_shape *b, bool tb);
rlx_status rlx_fast_matmul_ex(const rlx_node *n, const rlx_tensor *a, bool ta, const rlx_tensor *b, bool tb,
                              rlx_tensor *out, rlx_cpu_ctx *ctx);

/* MatMul by a constant B of rank 2, packed once (gemm_packed.c; the AVX-512 and AVX2 paths): applies
 * checks the MatMul's stored operand shapes; pack_b returns the packed copy of B (64-byte
 * aligned; NULL when out of memory), freed with pack_free; the kernel computes out = a . B from
 * it. Results do not depend on the thread count. */
bool rlx_fast_matmul_packed_applies(const rlx_node *n, const rlx_shape *a, const rlx_shape *b);
float *rlx_fast_matmul_pack_b(const rlx_shape *b, const float *B);
void rlx_fast_matmul_pack_free(float *bp);
rlx_status rlx_fast_matmul_packed(const rlx_node *n, const rlx_tensor *a, const float *bp, rlx_tensor *out,
                                  rlx_cpu_ctx *ctx);

/* The packed tiles for other kernels (one thread): fk_gemm_pack_b packs B [K, N] (row stride
 * ldb; trans: B stored [N, K]) into fk_gemm_packed_b_floats(K, N) floats, 32-column panels
 * [panel][K][32] with the last zero-padded (bp 64-byte aligned; the same layout on every path);
 * fk_gemm_packed computes C [M, N] (row stride ldc) = A [M, K] (row stride lda, read in place) . B.
 * Every element is one fused multiply-add chain over k = 0..K-1 from zero, so the bits are the
 * same on every path: AVX-512 tiles of 12 x 32, AVX2 + FMA tiles of 6 x 16, and on the scalar
 * path a plain fmaf loop (correct but slow: callers use the products only where
 * fk_gemm_packed_fast()). */
bool fk_gemm_packed_fast(void); /* the AVX2 or AVX-512 path is active (the tiles are vector code) */
size_t fk_gemm_packed_b_floats(size_t K, size_t N);
void fk_gemm_pack_b(size_t K, size_t N, const float *B, size_t ldb, bool trans, float *bp);
void fk_gemm_packed(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *bp, float *C, size_t ldc);

/* Conv + Binary Add of a per-channel bias (+ an activation) in one pass (the executor's fusion):
 * z = conv(x, w) + bias and, when r is not NULL, r = act(z) (act: one fk_conv_act_ok accepts:
 * Relu, HardSwish, HardSigmoid); z may be NULL when r is not (the sum is then not kept); in = the
 * Conv's operands; bias has one element per output channel and broadcasts along the channel axis
 * only; bias NULL (and a NULL bias shape to _applies): the activation only, r = act(conv). Bit-
 * identical to the separate kernels. */
bool rlx_fast_conv_epilogue_applies(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const rlx_shape *bias);
rlx_status rlx_fast_conv_epilogue(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const float *bias,
                                  float *z, float *r, rlx_act act, rlx_cpu_ctx *ctx);

/* Constant convolution weights prepared once (the executor, for a Conv whose weights are a
 * Constant): the Winograd transform when the Winograd path takes the node, else NULL; free() it.
 * rlx_fast_conv_run is the Conv (epi false) or the epilogue (as rlx_fast_conv_epilogue) with
 * those weights (wino_u NULL: transformed per run); the same bits either way. */
float *rlx_fast_conv_wino_weights(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in);
rlx_status rlx_fast_conv_run(const rlx_node *conv, const rlx_tensor *in, uint32_t n_in, const float *wino_u,
                             const float *bias, float *z, float *r, bool epi, rlx_act act, rlx_cpu_ctx *ctx);

/* Fused thunks the CPU executor has created so far in this process (backend.c; for tests). */
uint64_t rlx_cpu_fusion_count(void);
/* MatMuls the CPU executor has given a packed constant B, and convolutions it has given their
 * Winograd weights transformed once, so far in this process (for tests). */
uint64_t rlx_cpu_pack_count(void);

/* ReluBackward(z, MaxPool2dBackward(x, dy)) in one pass, for 2x2 stride-2 unpadded windows: dx is
 * the max-pool gradient where z > 0 and 0 elsewhere (bit-identical to the two kernels). z NULL
 * means x = relu(z), so that x > 0 exactly where z > 0 and the mask is read from x. dx may be
 * x itself (same buffer); it must not overlap dy or z otherwise. With `reduce` (a Reduce node for
 * which rlx_fast_reduce_planes_applies holds on dx) it also writes that Reduce's result, the bias
 * gradient, to reduce_out (bit-identical to the Reduce kernel). */
bool rlx_fast_maxpool_relu_bwd_applies(const rlx_node *mpb, const rlx_tensor *in, uint32_t n_in, const rlx_shape *z);
rlx_status rlx_fast_maxpool_relu_bwd(const rlx_node *mpb, const rlx_tensor *in, const float *z, float *dx,
                                     const rlx_node *reduce, float *reduce_out, rlx_cpu_ctx *ctx);
/* reduce.c: the Reduce is a sum / mean over axes 0, 2, 3 of [N, C, H, W] (N, C, H*W > 1), and the
 * result from per-plane sums (fk_sum_run of each H*W plane, [N][C]) in the Reduce kernel's order. */
bool rlx_fast_reduce_planes_applies(const rlx_node *reduce, const rlx_tensor *in);
void rlx_fast_reduce_planes_finish(const rlx_node *reduce, const rlx_shape *x, const double *plane_sums, float *out);

#endif
