/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The CUDA backend's internal interface between its C files (the contract glue in backend.c, the
 * per-op lowering in lower.c) and its CUDA files (device runtime, kernels, cuBLAS glue). Only
 * plain C types cross it, so the C side needs no CUDA headers. Every function that can fail
 * returns an rlx_status with a message (cudaGetErrorString / cuBLAS status names). */
#ifndef RLX_CUDA_CU_H
#define RLX_CUDA_CU_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"
#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_CU_MAX_RANK 8
#define RLX_CU_MAX_IN 3

/* ---- device runtime (runtime.cu) ---- */
typedef struct rlx_cu_ctx rlx_cu_ctx;

/* 0 devices or no driver: false with a static message in *why. */
int rlx_cu_available(const char **why);
/* precision: rlx_cuda_precision of rlx/cuda.h. stream: a cudaStream_t or NULL (own stream). */
rlx_status rlx_cu_ctx_create(int device, void *stream, int precision, rlx_cu_ctx **out);
void rlx_cu_ctx_destroy(rlx_cu_ctx *c);
rlx_status rlx_cu_malloc(rlx_cu_ctx *c, size_t bytes, void **out);
void rlx_cu_free(rlx_cu_ctx *c, void *p);
rlx_status rlx_cu_h2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_d2h(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_d2d(rlx_cu_ctx *c, void *dst, const void *src, size_t n);
rlx_status rlx_cu_memset(rlx_cu_ctx *c, void *dst, int value, size_t n);
/* Waits for the stream; then reports a kernel-detected error (integer division by zero, an
 * index out of range) recorded since the last sync. */
rlx_status rlx_cu_sync(rlx_cu_ctx *c);
/* The device name ("NVIDIA H200") for reports. */
const char *rlx_cu_device_name(rlx_cu_ctx *c);
/* CUDA graphs: begin redirects the context's launches to a capture stream ordered after the
 * work queued so far; end (ok = every step queued without error) restores the stream and
 * instantiates the graph into *exec, or fails (nothing ran: the caller runs the steps itself). */
rlx_status rlx_cu_capture_begin(rlx_cu_ctx *c);
rlx_status rlx_cu_capture_end(rlx_cu_ctx *c, int ok, void **exec);
rlx_status rlx_cu_graph_launch(rlx_cu_ctx *c, void *exec);
void rlx_cu_graph_free(void *exec);

/* ---- generic elementwise (elementwise.cu): every dtype, NumPy broadcasting by strides ----
 * The output is dense row-major of dims; operand k is read at sum(idx[d] * stride[k][d]) (a
 * stride of 0 broadcasts). Arithmetic follows the CPU reference: floats in double rounded once,
 * integers exact in int64 saturating to the dtype, complex in double. */
typedef enum rlx_cu_ew_kind {
  RLX_CU_EW_ACT,     /* sub = rlx_act */
  RLX_CU_EW_CAST,    /* to out_dtype */
  RLX_CU_EW_COPY,    /* StopGradient / same-dtype copy */
  RLX_CU_EW_BINARY,  /* sub = rlx_binop */
  RLX_CU_EW_COMPARE, /* sub = rlx_cmp, output bool (or the declared dtype) */
  RLX_CU_EW_WHERE,   /* in0 condition, in1 / in2 values */
  RLX_CU_EW_FMA,     /* in0 * in1 + in2 */
  RLX_CU_EW_CLAMP    /* lo, hi */
} rlx_cu_ew_kind;

typedef struct rlx_cu_ew {
  int kind, sub;
  int rank;
  int64_t dims[RLX_CU_MAX_RANK];
  int64_t n; /* product of dims */
  int n_in;
  const void *in[RLX_CU_MAX_IN];
  int in_dtype[RLX_CU_MAX_IN];
  int64_t stride[RLX_CU_MAX_IN][RLX_CU_MAX_RANK]; /* in elements */
  void *out;
  int out_dtype;
  double lo, hi;
} rlx_cu_ew;
rlx_status rlx_cu_elementwise(rlx_cu_ctx *c, const rlx_cu_ew *p);

/* ---- strided copy (shape.cu): dst[idx . dst_stride] = src[idx . src_stride], esz-byte
 * elements (Transpose, Expand, Narrow, Concat, Slice...). ---- */
typedef struct rlx_cu_copy {
  int rank;
  int64_t dims[RLX_CU_MAX_RANK];
  int64_t n;
  const void *src;
  int64_t src_stride[RLX_CU_MAX_RANK];
  void *dst;
  int64_t dst_stride[RLX_CU_MAX_RANK];
  int esz;
} rlx_cu_copy;
rlx_status rlx_cu_strided_copy(rlx_cu_ctx *c, const rlx_cu_copy *p);

/* Gather along an axis: out[o, j, i] = x[o, index[j], i] (outer, axis length len, inner; n_idx
 * indices of idx_dtype, integral f32 accepted; a negative, fractional or too large index is an
 * error reported at sync, as the CPU reference rejects it). */
rlx_status rlx_cu_gather(rlx_cu_ctx *c, const void *x, int64_t outer, int64_t len, int64_t inner, int esz,
                         const void *index, int idx_dtype, int64_t n_idx, void *out);

/* ---- reductions (reduce.cu) ---- */
/* Reduce over the axes in mask of x (dims, dense); out is dense over the kept axes. */
rlx_status rlx_cu_reduce(rlx_cu_ctx *c, int op, int dtype, const void *x, int rank, const int64_t *dims, uint32_t mask,
                         void *out);
/* Softmax over the middle axis of [outer, len, inner]. */
rlx_status rlx_cu_softmax(rlx_cu_ctx *c, int dtype, const void *x, int64_t outer, int64_t len, int64_t inner,
                          void *out);
/* LayerNorm / RmsNorm over the trailing `len` elements of each of `rows` rows, gamma / beta
 * broadcast over rows (length len). rms: 1 = RmsNorm (x / rms * gamma + beta). stats_out: NULL,
 * or 2 doubles a row (mean, 1 / sqrt(var + eps)) for a later backward gamma step. */
rlx_status rlx_cu_norm(rlx_cu_ctx *c, int rms, int dtype, const void *x, const void *gamma, const void *beta,
                       int64_t rows, int64_t len, double eps, void *out, void *stats_out);

/* ---- matrix products (gemm.cu): C[b] = A[b] . B[b], row-major M x K times K x N. The batch
 * offsets (in elements) come per batch; cuBLAS for the float dtypes of rlx_cu_blas_dtype, a plain
 * kernel for the rest. trans (cuBLAS dtypes only; 0 otherwise): bit 0 = A[b] is stored as the
 * row-major K x M matrix A[b]^T, bit 1 = B[b] as the N x K matrix B[b]^T (cuBLAS's operand flags;
 * a Transpose feeding a MatMul need not run). */
static inline int rlx_cu_blas_dtype(int t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }
rlx_status rlx_cu_matmul(rlx_cu_ctx *c, int dtype, const void *A, const void *B, void *C, int64_t M, int64_t N,
                         int64_t K, int64_t batches, const int64_t *a_off, const int64_t *b_off, int trans);

/* ---- products with fused epilogues (gemm_lt.cu, cuBLASLt) ----
 * D = A . B + bias (row-major M x K times K x N, one matrix, trans as for rlx_cu_matmul, bias
 * [N] broadcast over the rows), then for GELU_BIAS D = gelu_tanh(that), for GELU_AUX_BIAS also
 * aux = that (the pre-activation the backward reads). Float dtypes; the addresses are fixed in
 * the plan. create gives *out = NULL (and RLX_OK) when cuBLASLt has no algorithm for it or the
 * precision policy keeps separate steps: the caller then runs the unfused steps. */
typedef enum { RLX_CU_LT_BIAS = 1, RLX_CU_LT_GELU_BIAS, RLX_CU_LT_GELU_AUX_BIAS } rlx_cu_lt_epilogue;
typedef struct rlx_cu_lt_args {
  int dtype, trans, epilogue;
  int64_t M, N, K;
  const void *A, *B, *bias;
  const void *C; /* non-NULL: D = A . B + C + bias (a residual of D's shape; may be D itself) */
  void *D, *aux;
} rlx_cu_lt_args;
typedef struct rlx_cu_lt rlx_cu_lt;
rlx_status rlx_cu_lt_create(rlx_cu_ctx *c, const rlx_cu_lt_args *args, rlx_cu_lt **out);
rlx_status rlx_cu_lt_run(rlx_cu_ctx *c, const rlx_cu_lt *p);
void rlx_cu_lt_destroy(rlx_cu_lt *p);

/* ---- convolution and pooling (conv.cu): NC + 3 spatial axes (2-D ops use depth 1) ---- */
typedef struct rlx_cu_conv_geom {
  int64_t N, Cin, Cout, G;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
} rlx_cu_conv_geom;
/* cuDNN convolutions (dnn.cu), optional: a plan for the forward geometry g of a 2-D / 3-D
 * convolution; *out NULL (RLX_OK) where cuDNN is absent, turned off (RLX_CUDA_CUDNN=0) or
 * declines (asymmetric padding, no deterministic algorithm). FWD: y = conv(a = x, b = w); BWD_DATA:
 * dx from a = dy, b = w; BWD_FILTER: dw from a = x, b = dy. */
typedef enum { RLX_CU_DNN_FWD = 0, RLX_CU_DNN_BWD_DATA, RLX_CU_DNN_BWD_FILTER } rlx_cu_dnn_mode;
typedef struct rlx_cu_dnn rlx_cu_dnn;
rlx_status rlx_cu_dnn_create(rlx_cu_ctx *c, int mode, int dtype, int nsp, const rlx_cu_conv_geom *g, const void *a,
                             const void *b, void *out_ptr, rlx_cu_dnn **out);
rlx_status rlx_cu_dnn_run(rlx_cu_ctx *c, const rlx_cu_dnn *p);
void rlx_cu_dnn_destroy(rlx_cu_dnn *p);
void rlx_cu_dnn_ctx_release(rlx_cu_ctx *c);
/* transposed = 0: w [Cout, Cin/G, k...]; 1: w [Cin, Cout/G, k...]. Float dtypes, double sums. */
rlx_status rlx_cu_conv(rlx_cu_ctx *c, int transposed, int dtype, const void *x, const void *w, void *y,
                       const rlx_cu_conv_geom *g);
/* Max / Mean pooling of [NC, H, W] (padded cells skipped by Max, counted as 0 by Mean). */
rlx_status rlx_cu_pool(rlx_cu_ctx *c, int is_max, int dtype, const void *x, void *y, int64_t NC, int64_t H, int64_t W,
                       int64_t Ho, int64_t Wo, const int64_t k[2], const int64_t s[2], const int64_t pb[2]);
/* Cumulative sum over the middle axis of [outer, len, inner] (exclusive: the sum before k). */
rlx_status rlx_cu_cumsum(rlx_cu_ctx *c, int dtype, const void *x, int64_t outer, int64_t len, int64_t inner,
                         int exclusive, void *out);

/* ---- scatter / gather by element (scatter.cu) ----
 * mode 0 (ScatterElements / GatherElements): index has the rank of data; update p goes to
 *   data's offset of p's coordinates with the axis coordinate replaced by index[p] (negative
 *   indices wrap when wrap = 1).
 * mode 1 (ScatterAdd): updates [outer, U, inner], index [U], out [outer, len, inner].
 * mode 2 (ScatterNd / GatherNd): update p = tuple j (p / inner) of rank index values, element
 *   p % inner of its slice; target (j / U) outer + p % inner + sum_c index[j rank + c]
 *   data_stride[c], index c within [0, idx_dims[c]) after one wrap of a negative value.
 * red: rlx_scatter_reduction. data NULL = zeros. scratch: 24 bytes per output element. */
typedef struct rlx_cu_scatter {
  int mode, red, dtype, idx_dtype, wrap, rank, axis;
  int64_t idx_dims[RLX_CU_MAX_RANK];    /* mode 0: shape of index / updates */
  int64_t data_stride[RLX_CU_MAX_RANK]; /* mode 0: dense strides of data */
  int64_t axis_len;                     /* data's extent along axis */
  int64_t outer, U, inner;              /* mode 1 */
  int64_t n_updates, n_out;
  const void *data, *index, *updates;
  void *out, *scratch;
} rlx_cu_scatter;
rlx_status rlx_cu_scatter_run(rlx_cu_ctx *c, const rlx_cu_scatter *p);
/* GatherElements: out[p] = data[target(p)] (mode-0 addressing, wrap = 1), esz-byte elements. */
rlx_status rlx_cu_gather_elements(rlx_cu_ctx *c, const rlx_cu_scatter *p, int esz);

/* ---- attention (attention.cu): one block per (batch, head, query row), one pass over the
 * keys with an online softmax in double (no score matrix). Layout kinds as the CPU's attn_view:
 * 0 [B, H, S, D], 1 [B, S, H, D], 2 packed [B, S, H*D]. ---- */
typedef struct rlx_cu_attn_view {
  int64_t B, S, H, D;
  int kind;
} rlx_cu_attn_view;
typedef struct rlx_cu_attn {
  rlx_cu_attn_view q, k, v, o;
  int64_t B, Sq, Sk, H, group, window;
  int mask, dtype, mask_dtype, per_query, capped;
  double scale, cap;
  int64_t bias_stride[4]; /* Bias: strides broadcasting the bias to [B, H, Sq, Sk] */
  const void *Q, *K, *V, *M;
  void *out;
  /* flash forward only (rlx_cu_flash_fits), both or neither set: a second copy of out (same
   * layout) and per query row {log-sum-exp, 0} as two floats, for a later AttentionBackward of
   * the same operands (rlx_cu_attn_bw.compute_stats 2), which then skips recomputing them */
  void *save_out, *save_lse;
} rlx_cu_attn;
rlx_status rlx_cu_attention(rlx_cu_ctx *c, const rlx_cu_attn *p);
/* The tiled flash kernels (flash.cu) take f32 / bf16 / f16 with the masks decided by position
 * (None, Causal, SlidingWindow), soft-cap allowed, head dims up to 128; fp32 arithmetic. */
int rlx_cu_flash_fits(const rlx_cu_attn *p);
/* Forward: p->out gets the attention output; or, with stats non-NULL, per query row (b, h, qi)
 * the pair {log-sum-exp of the scores, <dy, out>} as two floats (dy: G, q's layout). */
rlx_status rlx_cu_flash_forward(rlx_cu_ctx *c, const rlx_cu_attn *p, const void *G, void *stats);

/* ---- attention backward (attention_bw.cu, flash.cu): AttentionBackward(All) ----
 * a: the forward's geometry (a.out unused; V has head_dim lanes); G: dy in q's layout. stats:
 * 2 doubles per query row (b, h, qi); compute_stats 0 when an earlier step with the same
 * operands filled them. dq / dk / dv: where each wanted gradient goes (NULL = not wanted). */
typedef struct rlx_cu_attn_bw {
  rlx_cu_attn a;
  const void *G;
  void *stats;
  /* 1: compute both statistics; 0: filled by an earlier step; 2 (flash kernels only): the
   * forward left each row's lse in stats and its output in saved_out, only delta = <dy, out>
   * is computed */
  int compute_stats;
  const void *saved_out;
  void *dq, *dk, *dv;
  /* 0: dq / dk / dv in their operands' layouts; else each is written as rows of out_ld elements
   * (the columns of one wider tensor, the Concat autodiff makes of them: lower_fold.c), for the
   * row layouts (kinds 1, 2) on the tensor-core kernels only (rlx_cu_attn_bw_out_ld_fits) */
  int64_t out_ld;
} rlx_cu_attn_bw;
int rlx_cu_attn_bw_out_ld_fits(const rlx_cu_ctx *c, const rlx_cu_attn_bw *p);
rlx_status rlx_cu_attention_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p);
rlx_status rlx_cu_flash_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p);

/* Rope: x [batch, S, heads * hd]; the first nr lanes of each head rotate in pairs (NeoX: i,
 * i + nr/2; GptJ: 2i, 2i + 1) by row (per_token ? token : position) of the cos / sin tables
 * (width values a row), the other lanes are copied. */
typedef struct rlx_cu_rope {
  int64_t batch, S, heads, hd, nr, width;
  int per_token, neox, dtype;
  const void *x, *cos, *sin;
  void *out;
} rlx_cu_rope;
rlx_status rlx_cu_rope_run(rlx_cu_ctx *c, const rlx_cu_rope *p);

/* ---- backward kernels (backward.cu) ---- */
/* dx = dy * f'(x) of Activation kind `act` (act = -1: ReluBackward, integers exact), n elements. */
rlx_status rlx_cu_act_backward(rlx_cu_ctx *c, int act, int dtype, const void *x, const void *dy, void *dx, int64_t n);
/* Column sums fused into the step that produces the summed tensor (lower_fold.c). A Reduce
 * (op Sum or Mean) over the leading axes of [rows, C] takes rlx_cu_reduce's two-column kernel
 * when rlx_cu_colsum_fits (ptrs: the tensor and the other operands read in pairs, each aligned
 * to two elements); a fused kernel then folds the same values in the same order and merges the
 * same chunks, so the sum has the Reduce's bits. */
int rlx_cu_colsum_fits(int op, int dtype, int64_t rows, int64_t C, const void *const *ptrs, int n_ptrs);
/* Whether rlx_cu_act_backward_colsum takes activation `act` of dtype (the typed kernels' kinds). */
int rlx_cu_act_colsum_fits(const rlx_cu_ctx *c, int act, int dtype);
/* rlx_cu_act_backward of [rows, C] that also writes the Reduce (red_op) of dx over the rows into
 * colsum (C elements); dx has rlx_cu_act_backward's bits. */
rlx_status rlx_cu_act_backward_colsum(rlx_cu_ctx *c, int act, int dtype, const void *x, const void *dy, void *dx,
                                      int64_t rows, int64_t C, int red_op, void *colsum);
/* Softmax cross-entropy over logits [N, C]: mode 0 SoftmaxCrossEntropy (targets [N, C]) -> [N];
 * 1 ...WithLogits (labels [N] of lab_dtype) -> [N]; 2 ...Backward (labels, d_loss [N]) -> [N, C]. */
rlx_status rlx_cu_sce(rlx_cu_ctx *c, int mode, int dtype, const void *logits, const void *tgt, int lab_dtype,
                      const void *dloss, int64_t N, int64_t C, void *out);
/* What a LayerNorm / RmsNorm backward step does besides its own output (lower_fold.c); zeroed:
 * nothing. */
typedef struct rlx_cu_norm_fuse {
  void *stats_out; /* what 0: also the row statistics (2 doubles a row, as what 1's scratch) */
  int stats_ready; /* what 1: scratch already holds them (a what 0 step wrote them) */
  const void *add; /* what 0, f32: out = dx + add (an Add of dx and a tensor of its shape) */
  void *colsum;    /* what 1: also the Reduce (colsum_op) of dy over the rows (beta's gradient) */
  int colsum_op;
} rlx_cu_norm_fuse;
/* Whether what 0 takes the warp-per-row kernel (the one that can write statistics and add), with
 * the pointers it reads and writes (x, gamma, dy, out, an added tensor). */
int rlx_cu_norm_dx_warp_fits(int dtype, int64_t rows, int64_t C, const void *const *ptrs, int n_ptrs);
/* Whether the backward's warp kernels (dx, and the gamma step's statistics) read rows of C
 * elements of dtype at these pointers (C a multiple of 4 up to 1024, the pointers aligned to 4). */
int rlx_cu_norm_rows_fit(int dtype, int64_t C, const void *const *ptrs, int n_ptrs);
/* Whether rlx_cu_norm takes the warp-per-row kernel, whose row statistics (stats_out) have the
 * bits of the backward's (rlx_cu_norm_backward's warp kernels) */
int rlx_cu_norm_warp_fits(int dtype, int64_t len, const void *const *ptrs, int n_ptrs);
/* LayerNorm / RmsNorm backward over the last axis (rows x C): what 0 = dx (gamma, dy), 1 = dgamma,
 * 2 = dbeta (sum of dy). scratch: 2 doubles per row (what 1). fuse: NULL or as above. */
rlx_status rlx_cu_norm_backward(rlx_cu_ctx *c, int what, int rms, int dtype, const void *x, const void *gamma,
                                const void *dy, int64_t rows, int64_t C, double eps, void *out, void *scratch,
                                const rlx_cu_norm_fuse *fuse);
/* MaxPool backward (NC x [D, H, W] planes, depth 1 for 2-D): dx[i] = sum of dy over the windows
 * whose first maximum is i. */
typedef struct rlx_cu_pool3 {
  int64_t NC, in[3], out[3], k[3], s[3], pb[3];
} rlx_cu_pool3;
rlx_status rlx_cu_maxpool_backward(rlx_cu_ctx *c, int dtype, const void *x, const void *dy, void *dx,
                                   const rlx_cu_pool3 *g);
/* Convolution weight gradient: x [N, Cin, in...], dy [N, Cout, out...] -> dw [Cout, Cin/G, k...]. */
rlx_status rlx_cu_conv_backward_weight(rlx_cu_ctx *c, int dtype, const void *x, const void *dy, void *dw,
                                       const rlx_cu_conv_geom *g);

/* ---- ordering, cumulative, random, masks (order.cu) ---- */
/* ArgMax / ArgMin along the middle axis of [outer, len, inner]: first extreme wins, NaN wins. */
rlx_status rlx_cu_argext(rlx_cu_ctx *c, int want_max, int dtype, const void *x, int64_t outer, int64_t len,
                         int64_t inner, int out_dtype, void *out);
/* CumProd (kind 1) / CumMax (kind 2) / CumsumBackward (kind 3: suffix sums) along the middle axis. */
rlx_status rlx_cu_cumulative(rlx_cu_ctx *c, int kind, int dtype, const void *x, int64_t outer, int64_t len,
                             int64_t inner, int exclusive, void *out);
/* mode 0 Sort (values), 1 ArgSort (positions), 2 TopK (positions of the k largest, last axis,
 * NaN largest); stable. scratch: 2 * len int64 per line. */
rlx_status rlx_cu_sort(rlx_cu_ctx *c, int mode, int desc, int dtype, const void *x, int64_t outer, int64_t len,
                       int64_t inner, int64_t k, int out_dtype, void *out, void *scratch);
/* Philox-4x32-10 random tensors with the CPU reference's values: normal = 0 uniform in
 * [a, b), 1 normal(mean a, scale b). */
rlx_status rlx_cu_rng(rlx_cu_ctx *c, int normal, int dtype, uint64_t key, double a, double b, int64_t n, void *out);
/* Trilu over the last two axes (rows x cols), esz-byte elements. */
rlx_status rlx_cu_trilu(rlx_cu_ctx *c, int upper, int64_t diag, const void *x, void *out, int64_t n, int64_t rows,
                        int64_t cols, int esz);

/* ---- index remaps (shape.cu): out[i] = x[map(i)] per axis, esz-byte elements ----
 * kind 0 Pad (before[k], pad mode; a constant cell takes `fill`), 1 Tile (coordinate mod the
 * input extent), 2 Roll (coordinate - shift[k] mod the extent). */
typedef struct rlx_cu_remap {
  int kind, mode, rank, esz;
  int64_t n;
  int64_t out_dims[RLX_CU_MAX_RANK], in_dims[RLX_CU_MAX_RANK], in_stride[RLX_CU_MAX_RANK];
  int64_t shift[RLX_CU_MAX_RANK];
  unsigned char fill[16];
  const void *src;
  void *dst;
} rlx_cu_remap;
rlx_status rlx_cu_remap_run(rlx_cu_ctx *c, const rlx_cu_remap *p);
/* GatherBackward: out [outer, L, inner] = zeros + dy [outer, n_idx, inner] added at index[j]. */
rlx_status rlx_cu_gather_backward(rlx_cu_ctx *c, int dtype, const void *dy, const void *index, int idx_dtype,
                                  int64_t outer, int64_t L, int64_t inner, int64_t n_idx, void *out);

/* ---- fused elementwise regions (region.cu): one kernel per ElementwiseRegion ---- */
#define RLX_CU_REGION_MAX_IN 16
#define RLX_CU_REGION_MAX_STEPS 64
typedef struct rlx_cu_region_step {
  int8_t kind, dtype; /* rlx_chain_step_kind, the step's result dtype */
  int8_t sub;
  uint8_t src[3]; /* operand: index < 16 = region operand, 16 + j = step j */
} rlx_cu_region_step;
typedef struct rlx_cu_region {
  int n_in, n_steps, out_dtype, fast_f32;
  int64_t n;
  const void *in[RLX_CU_REGION_MAX_IN];
  int in_dtype[RLX_CU_REGION_MAX_IN];
  int64_t in_count[RLX_CU_REGION_MAX_IN]; /* element i reads in[k][i % in_count[k]] */
  /* the ResizeNearest2x prologue on operand `pro` (-1: none): source H, W */
  int pro;
  int64_t pro_h, pro_w;
  rlx_cu_region_step steps[RLX_CU_REGION_MAX_STEPS];
  void *out;
} rlx_cu_region;
rlx_status rlx_cu_region_run(rlx_cu_ctx *c, const rlx_cu_region *p);

#ifdef __cplusplus
}
#endif
#endif
