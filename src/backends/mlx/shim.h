/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The C face of the MLX shim (shim.cpp, the backend's only C++ file): opaque array handles over
 * MLX's public C++ API. No exception crosses it: a function that fails returns NULL (or a
 * non-zero status) and leaves a message in rlxm_error() (thread-local). Every function that
 * takes arrays returns NULL at once when one of them is NULL, keeping the first message, so C
 * code may chain calls and check only the last result.
 *
 * Arrays are created in a scope, which owns them (rlxm_scope_free releases them all); a kept
 * array (rlxm_keep) lives until rlxm_release. Dtypes are rlx_dtype values (rlx/types.h). */
#ifndef RLX_MLX_SHIM_H
#define RLX_MLX_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlxm_arr rlxm_arr;
typedef struct rlxm_scope rlxm_scope;

/* MLX's uint64, which rlx has no dtype for (the RNG's Philox products); only inside lowerings. */
#define RLXM_U64 100

const char *rlxm_error(void);
void rlxm_set_error(const char *msg);
const char *rlxm_version(void); /* "0.32.4" */

rlxm_scope *rlxm_scope_new(void);
void rlxm_scope_free(rlxm_scope *s);
/* A copy of the handle owned by nobody (a buffer); rlxm_release frees it. */
rlxm_arr *rlxm_keep(rlxm_arr *a);
void rlxm_release(rlxm_arr *a);
/* Makes `dst` (a kept handle) refer to the array of `src` (no copy). */
void rlxm_assign(rlxm_arr *dst, rlxm_arr *src);
/* A scoped handle to the array of `a`. */
rlxm_arr *rlxm_ref(rlxm_scope *s, rlxm_arr *a);

/* Whether MLX can hold this rlx dtype (no c128). */
bool rlxm_dtype_ok(int rlx_dtype);

/* ---- creation ---- */
rlxm_arr *rlxm_from_host(rlxm_scope *s, const void *data, int dtype, uint32_t rank, const int64_t *dims);
rlxm_arr *rlxm_full(rlxm_scope *s, double value, int dtype, uint32_t rank, const int64_t *dims);
rlxm_arr *rlxm_scalar(rlxm_scope *s, double value, int dtype);
rlxm_arr *rlxm_arange(rlxm_scope *s, double start, double stop, double step, int dtype);

/* ---- properties ---- */
int rlxm_dtype(const rlxm_arr *a); /* rlx dtype, -1 when not an rlx dtype */
uint32_t rlxm_rank(const rlxm_arr *a);
int64_t rlxm_dim(const rlxm_arr *a, uint32_t axis);
size_t rlxm_nbytes(const rlxm_arr *a);

/* ---- elementwise ---- */
typedef enum rlxm_unary_op {
  RLXM_NEG,
  RLXM_ABS,
  RLXM_EXP,
  RLXM_LOG,
  RLXM_SQRT,
  RLXM_RSQRT,
  RLXM_SIN,
  RLXM_COS,
  RLXM_TAN,
  RLXM_ATAN,
  RLXM_TANH,
  RLXM_SIGMOID,
  RLXM_ERF,
  RLXM_FLOOR,
  RLXM_CEIL,
  RLXM_ROUND,
  RLXM_SIGN,
  RLXM_RECIP,
  RLXM_LOG1P,
  RLXM_EXPM1,
  RLXM_NOT,
  RLXM_SQUARE,
  RLXM_ISNAN,
  RLXM_STOP_GRAD,
  RLXM_REAL,
  RLXM_IMAG,
  RLXM_CONJ,
  RLXM_BIT_NOT
} rlxm_unary_op;
typedef enum rlxm_binary_op {
  RLXM_ADD,
  RLXM_SUB,
  RLXM_MUL,
  RLXM_DIV,
  RLXM_MAX,
  RLXM_MIN,
  RLXM_POW,
  RLXM_REM,
  RLXM_BIT_AND,
  RLXM_BIT_OR,
  RLXM_BIT_XOR,
  RLXM_SHL,
  RLXM_SHR,
  RLXM_ATAN2,
  RLXM_EQ,
  RLXM_NE,
  RLXM_LT,
  RLXM_LE,
  RLXM_GT,
  RLXM_GE,
  RLXM_AND,
  RLXM_OR,
  RLXM_FLOOR_DIV
} rlxm_binary_op;
rlxm_arr *rlxm_unary(rlxm_scope *s, rlxm_unary_op op, rlxm_arr *a);
rlxm_arr *rlxm_binary(rlxm_scope *s, rlxm_binary_op op, rlxm_arr *a, rlxm_arr *b);
rlxm_arr *rlxm_where(rlxm_scope *s, rlxm_arr *c, rlxm_arr *a, rlxm_arr *b);
rlxm_arr *rlxm_astype(rlxm_scope *s, rlxm_arr *a, int dtype);
/* Reinterprets the bytes (same total size after the last axis is rescaled). */
rlxm_arr *rlxm_bitcast(rlxm_scope *s, rlxm_arr *a, int dtype);
rlxm_arr *rlxm_complex(rlxm_scope *s, rlxm_arr *re, rlxm_arr *im); /* c64 from two f32 */

/* ---- shape ---- */
rlxm_arr *rlxm_reshape(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *dims);
rlxm_arr *rlxm_transpose(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *perm);
rlxm_arr *rlxm_broadcast(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *dims);
/* start/stop/step per axis of a (negative steps allowed). */
rlxm_arr *rlxm_slice(rlxm_scope *s, rlxm_arr *a, const int64_t *start, const int64_t *stop, const int64_t *step);
/* a with the strided slice [start, stop) / step replaced by upd. */
rlxm_arr *rlxm_slice_update(rlxm_scope *s, rlxm_arr *a, rlxm_arr *upd, const int64_t *start, const int64_t *stop,
                            const int64_t *step);
rlxm_arr *rlxm_narrow(rlxm_scope *s, rlxm_arr *a, uint32_t axis, int64_t start, int64_t len, int64_t step);
rlxm_arr *rlxm_concat(rlxm_scope *s, rlxm_arr *const *a, uint32_t n, int64_t axis);
rlxm_arr *rlxm_flip(rlxm_scope *s, rlxm_arr *a, uint32_t n_axes, const int64_t *axes);
rlxm_arr *rlxm_pad(rlxm_scope *s, rlxm_arr *a, const int64_t *lo, const int64_t *hi, double value);
rlxm_arr *rlxm_contiguous(rlxm_scope *s, rlxm_arr *a);

/* ---- reductions and scans ---- */
typedef enum rlxm_reduce_op {
  RLXM_R_SUM,
  RLXM_R_MEAN,
  RLXM_R_MAX,
  RLXM_R_MIN,
  RLXM_R_PROD,
  RLXM_R_ANY,
  RLXM_R_ALL,
  RLXM_R_LOGSUMEXP
} rlxm_reduce_op;
rlxm_arr *rlxm_reduce(rlxm_scope *s, rlxm_reduce_op op, rlxm_arr *a, uint32_t n_axes, const int64_t *axes, bool keep);
rlxm_arr *rlxm_argreduce(rlxm_scope *s, bool is_max, rlxm_arr *a, int64_t axis, bool keep);
rlxm_arr *rlxm_softmax(rlxm_scope *s, rlxm_arr *a, int64_t axis);
rlxm_arr *rlxm_cumulative(rlxm_scope *s, rlxm_reduce_op op, rlxm_arr *a, int64_t axis, bool reverse, bool inclusive);
rlxm_arr *rlxm_sort(rlxm_scope *s, rlxm_arr *a, int64_t axis, bool indices);
rlxm_arr *rlxm_topk(rlxm_scope *s, rlxm_arr *a, int64_t k, int64_t axis);

/* ---- linear algebra, conv, attention ---- */
rlxm_arr *rlxm_matmul(rlxm_scope *s, rlxm_arr *a, rlxm_arr *b);
/* Channels-last input [N, spatial..., C], weight [O, spatial..., C/groups]. */
rlxm_arr *rlxm_conv(rlxm_scope *s, rlxm_arr *in, rlxm_arr *w, uint32_t nd, const int64_t *stride, const int64_t *pad_lo,
                    const int64_t *pad_hi, const int64_t *kdil, const int64_t *idil, int64_t groups, bool flip);
/* The gradient of conv_general (channels last, as rlxm_conv, no input dilation or flip) with
 * respect to its input (wrt_weight false: w given, in_shape the input's dims) or its weight
 * (wrt_weight true: x given, in_shape the weight's dims), for the cotangent dy: MLX's own
 * vjp of the convolution. */
rlxm_arr *rlxm_conv_grad(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, rlxm_arr *dy, bool wrt_weight, uint32_t rank,
                         const int64_t *in_shape, uint32_t nd, const int64_t *stride, const int64_t *pad_lo,
                         const int64_t *pad_hi, const int64_t *kdil, int64_t groups);
/* q [B, H, Lq, D], k/v [B, Hkv, Lk, D]; mask: NULL, or additive / boolean, broadcastable. */
rlxm_arr *rlxm_sdpa(rlxm_scope *s, rlxm_arr *q, rlxm_arr *k, rlxm_arr *v, float scale, bool causal, rlxm_arr *mask);
rlxm_arr *rlxm_layer_norm(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, rlxm_arr *b, float eps);
rlxm_arr *rlxm_rms_norm(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, float eps);

/* ---- indexing ---- */
rlxm_arr *rlxm_take(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, int64_t axis);
rlxm_arr *rlxm_take_along(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, int64_t axis);
rlxm_arr *rlxm_put_along(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, rlxm_arr *v, int64_t axis);
/* a[idx_0, ..., idx_{n-1}, ...] op= upd with one index array per leading axis (MLX scatter);
 * op: 0 = replace, 1 = add, 2 = mul, 3 = max, 4 = min. upd has shape idx.shape + [1]*n + a.shape[n:] */
rlxm_arr *rlxm_scatter(rlxm_scope *s, int op, rlxm_arr *a, rlxm_arr *const *idx, uint32_t n, rlxm_arr *upd);
rlxm_arr *rlxm_gather(rlxm_scope *s, rlxm_arr *a, rlxm_arr *const *idx, uint32_t n, const int64_t *slice_sizes);

/* ---- signal ---- */
/* 1-D FFT of a complex64 array along the last axis. norm: 0 backward, 1 forward, 2 ortho */
rlxm_arr *rlxm_fft(rlxm_scope *s, rlxm_arr *a, bool inverse, int norm);

/* ---- host evaluation ----
 * An array computed by `fn` on the host when MLX evaluates it (inside the lazy graph): `in[i]`
 * points at the row-major bytes of input i, `out` at the output's bytes (nbytes of the output
 * shape). Returns 0, or non-zero with a message set by rlxm_set_error. */
typedef int (*rlxm_host_fn)(void *user, const void *const *in, uint32_t n_in, void *out);
rlxm_arr *rlxm_host(rlxm_scope *s, const char *name, rlxm_host_fn fn, void *user, rlxm_arr *const *in, uint32_t n_in,
                    int dtype, uint32_t rank, const int64_t *dims);

/* ---- buffers (the backend contract's device memory: a kept array) ---- */
/* A kept, materialized u8 array of n bytes (contents undefined). */
rlxm_arr *rlxm_bytes_new(size_t n);
/* Writes bytes [offset, offset + n) of a kept array's row-major data; an array whose data is
 * shared (views, other holders) or not yet materialized is replaced by a materialized copy first,
 * so other holders never see the write. */
int rlxm_write(rlxm_arr *a, size_t offset, const void *src, size_t n);
/* A scoped view of a buffer as dtype + shape (same byte count; bitcast + reshape, lazy). */
rlxm_arr *rlxm_as(rlxm_scope *s, rlxm_arr *a, int dtype, uint32_t rank, const int64_t *dims);

/* ---- evaluation and transfers ---- */
int rlxm_eval(rlxm_arr *const *a, uint32_t n);
/* Evaluates `a` and copies bytes [offset, offset + n) of its row-major data into dst. */
int rlxm_read(rlxm_arr *a, size_t offset, void *dst, size_t n);
/* Sets MLX's compile cache folder (TMPDIR for its g++ JIT) — before the first compiled run. */
void rlxm_set_compile_dir(const char *dir);

/* ---- compiled functions (mx::compile) ----
 * `build` is called with scoped inputs while tracing and returns the outputs through out[]. */
typedef int (*rlxm_build_fn)(void *user, rlxm_scope *s, rlxm_arr *const *in, uint32_t n_in, rlxm_arr **out,
                             uint32_t n_out);
typedef struct rlxm_fn rlxm_fn;
rlxm_fn *rlxm_compile(rlxm_build_fn build, void *user, uint32_t n_out);
void rlxm_fn_free(rlxm_fn *f);
/* Calls the compiled function; results are scoped arrays in out[]. */
int rlxm_fn_call(rlxm_fn *f, rlxm_scope *s, rlxm_arr *const *in, uint32_t n_in, rlxm_arr **out, uint32_t n_out);

#ifdef __cplusplus
}
#endif
#endif
