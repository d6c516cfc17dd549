/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions: signal ops (spec ir-special §4, ir-core §10.10).
 *
 * PartitionedConv{block} x [..., L] (*) ir [M] -> [..., L + M - 1], uniformly partitioned
 * overlap-save: with P = next_pow2(block) and F = 2P, the impulse response is cut into
 * K = ceil(M / P) partitions h_k and the output into J = ceil((L + M - 1) / P) blocks. Frame j is
 * x[(j-1)P, (j+1)P) (zeros outside x); X_j = FFT_F(frame j) and H_k = FFT_F(h_k zero-padded) are
 * real-block Fft nodes, and per frequency bin the output spectrum is the complex contraction over
 * partitions Y_j = sum_k X_{j-k} H_k (the "complex GEMM": real and imaginary parts as four real
 * products summed over the partition axis); block j of y is the last P samples of the unscaled
 * inverse transform of Y_j, divided by F. f16/bf16 run in f32. Autodiff differentiates through it
 * (Fft, Narrow, Concat, Reshape, Mul, ReduceSum all have rules).
 *
 * ComplexNormSqBackward [z, g] -> g z: Cast g to z's complex dtype and multiply. */
#include "passes/decompose/decompose.h"

#define TRY_(x)        \
  do {                 \
    if (!st) st = (x); \
  } while (0)

static rlx_status zeros(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *d, rlx_id *out) {
  return rlx_fill(g, t, rank, d, 0.0, out);
}

static rlx_status fft(rlx_graph *g, rlx_id x, bool inverse, rlx_id *out) {
  rlx_attrs_Fft a = {.inverse = inverse, .norm = RLX_FFT_NORM_BACKWARD};
  return rlx_build_Fft(g, &x, 1, &a, NULL, out);
}

RLX_DECOMPOSE_DECL(PartitionedConv) {
  (void)src;
  rlx_shape xs = dc_shape(dst, in[0]), hs = dc_shape(dst, in[1]);
  if (!dc_all_static(&xs) || !dc_all_static(&hs))
    return dc_unsupported(n, "the signal or the impulse response is symbolic");
  rlx_dtype ot = (rlx_dtype)xs.dtype, t = ot == RLX_F64 ? RLX_F64 : RLX_F32;
  int64_t L = xs.dims[xs.rank - 1], M = hs.dims[0], Y = L + M - 1, R = 1;
  for (uint32_t i = 0; i + 1 < xs.rank; i++) R *= xs.dims[i];
  int64_t P = 1;
  while (P < n->attrs.PartitionedConv.block) P <<= 1;
  int64_t F = 2 * P, K = (M + P - 1) / P, J = (Y + P - 1) / P;
  rlx_status st = RLX_OK;
  rlx_id x = RLX_NO_ID, h = RLX_NO_ID, z = RLX_NO_ID, parts[3] = {RLX_NO_ID, RLX_NO_ID, RLX_NO_ID}, X = RLX_NO_ID,
         Hs = RLX_NO_ID;
  if (R == 0) {
    rlx_dim od[RLX_MAX_RANK];
    for (uint32_t i = 0; i < xs.rank; i++) od[i] = xs.dims[i];
    od[xs.rank - 1] = Y;
    return zeros(dst, ot, xs.rank, od, out);
  }
  TRY_(rlx_cast_to(dst, in[0], t, &x));
  TRY_(rlx_cast_to(dst, in[1], t, &h));
  {
    rlx_dim d2[2] = {R, L};
    TRY_(rlx_reshape_dims(dst, x, 2, d2, &x));
  }
  /* H_k: ir padded to K*P, [K, P], zero-padded to F, real-block [K, 2F], transformed */
  {
    int64_t pad = K * P - M;
    uint32_t np = 0;
    parts[np++] = h;
    if (pad) {
      rlx_dim d = pad;
      TRY_(zeros(dst, t, 1, &d, &z));
      parts[np++] = z;
    }
    TRY_(rlx_concat(dst, parts, np, 0, &Hs));
    rlx_dim kp[2] = {K, P}, kz[2] = {K, 3 * P};
    TRY_(rlx_reshape_dims(dst, Hs, 2, kp, &Hs));
    TRY_(zeros(dst, t, 2, kz, &z));
    parts[0] = Hs;
    parts[1] = z;
    TRY_(rlx_concat(dst, parts, 2, 1, &Hs));
    TRY_(fft(dst, Hs, false, &Hs));
  }
  /* frames: [0 (P) | x | 0 (J P - L)] as [R, J + 1, P]; frame j = rows j, j + 1 */
  {
    rlx_dim lead[2] = {R, P}, tail[2] = {R, J * P - L};
    uint32_t np = 0;
    TRY_(zeros(dst, t, 2, lead, &z));
    parts[np++] = z;
    parts[np++] = x;
    if (J * P - L > 0) {
      TRY_(zeros(dst, t, 2, tail, &z));
      parts[np++] = z;
    }
    TRY_(rlx_concat(dst, parts, np, 1, &X));
    rlx_dim fr[3] = {R, J + 1, P}, im[3] = {R, J, F};
    TRY_(rlx_reshape_dims(dst, X, 3, fr, &X));
    TRY_(rlx_narrow(dst, X, 1, 0, J, &parts[0]));
    TRY_(rlx_narrow(dst, X, 1, 1, J, &parts[1]));
    TRY_(rlx_concat(dst, parts, 2, 2, &X)); /* [R, J, F] real frames */
    TRY_(zeros(dst, t, 3, im, &z));
    parts[0] = X;
    parts[1] = z;
    TRY_(rlx_concat(dst, parts, 2, 2, &X));
    TRY_(fft(dst, X, false, &X)); /* [R, J, 2F] */
  }
  /* delayed frames Xd [R, J, K, 2F]: Xd[:, j, k] = X[:, j - k] (zero for j < k) */
  rlx_id Xd = X;
  if (!st) {
    rlx_id Xp = X;
    if (K > 1) {
      rlx_dim zd[3] = {R, K - 1, 2 * F};
      TRY_(zeros(dst, t, 3, zd, &z));
      parts[0] = z;
      parts[1] = X;
      TRY_(rlx_concat(dst, parts, 2, 1, &Xp));
    }
    const rlx_allocator *al = rlx_graph_allocator(dst);
    rlx_id *dk = al->alloc(al->ctx, (size_t)K * sizeof *dk);
    if (!dk) return rlx_errorf(RLX_ERR_OOM, "out of memory decomposing PartitionedConv");
    for (int64_t k = 0; k < K && !st; k++) {
      TRY_(rlx_narrow(dst, Xp, 1, K - 1 - k, J, &dk[k]));
      TRY_(rlx_unsqueeze(dst, dk[k], 2, &dk[k]));
    }
    TRY_(rlx_concat(dst, dk, (uint32_t)K, 2, &Xd));
    al->free(al->ctx, dk);
  }
  /* Y = sum_k Xd H: (Xr Hr - Xi Hi) + i (Xr Hi + Xi Hr) over the partition axis */
  rlx_id Xr, Xi, Hr, Hi, a1, a2, Yr, Yi, y;
  int64_t kax = 2;
  TRY_(rlx_narrow(dst, Xd, 3, 0, F, &Xr));
  TRY_(rlx_narrow(dst, Xd, 3, F, F, &Xi));
  TRY_(rlx_narrow(dst, Hs, 1, 0, F, &Hr));
  TRY_(rlx_narrow(dst, Hs, 1, F, F, &Hi));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, Xr, Hr, &a1));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, Xi, Hi, &a2));
  TRY_(rlx_binary(dst, RLX_BINOP_SUB, a1, a2, &Yr));
  TRY_(rlx_reduce_axes(dst, RLX_REDUCE_SUM, Yr, 1, &kax, false, &Yr));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, Xr, Hi, &a1));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, Xi, Hr, &a2));
  TRY_(rlx_binary(dst, RLX_BINOP_ADD, a1, a2, &Yi));
  TRY_(rlx_reduce_axes(dst, RLX_REDUCE_SUM, Yi, 1, &kax, false, &Yi));
  parts[0] = Yr;
  parts[1] = Yi;
  TRY_(rlx_concat(dst, parts, 2, 2, &y));
  TRY_(fft(dst, y, true, &y));
  TRY_(rlx_narrow(dst, y, 2, P, P, &y)); /* real part, last P samples */
  TRY_(rlx_binary_scalar(dst, RLX_BINOP_MUL, y, 1.0 / (double)F, &y));
  {
    rlx_dim flat[2] = {R, J * P};
    TRY_(rlx_reshape_dims(dst, y, 2, flat, &y));
  }
  TRY_(rlx_narrow(dst, y, 1, 0, Y, &y));
  if (!st) {
    rlx_dim od[RLX_MAX_RANK];
    for (uint32_t i = 0; i < xs.rank; i++) od[i] = xs.dims[i];
    od[xs.rank - 1] = Y;
    TRY_(rlx_reshape_dims(dst, y, xs.rank, od, &y));
  }
  TRY_(rlx_cast_to(dst, y, ot, out));
  return st;
}

RLX_DECOMPOSE_DECL(ComplexNormSqBackward) {
  (void)src;
  (void)n;
  rlx_id g;
  RLX_TRY(rlx_cast_to(dst, in[1], (rlx_dtype)dc_shape(dst, in[0]).dtype, &g));
  return rlx_binary(dst, RLX_BINOP_MUL, g, in[0], out);
}
