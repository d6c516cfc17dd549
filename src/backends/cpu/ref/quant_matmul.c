/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: dequantizing matmuls (spec ir-special §1.1, §1.4) — DequantMatMul in every
 * QuantScheme, DequantGroupedMatMul (GGUF expert slabs), DequantGroupedMatMulMlx (MLX affine / MXFP4
 * / MXFP8 experts) and DequantMoEWeights.
 *
 * Each kernel first dequantizes the weight into a logical matrix W (GGUF blocks exactly as ggml does
 * in f32, ref/quant_formats.c; the other schemes in double), then multiplies in double and rounds
 * once to the f32 output. Orientation: Int8/Int4/Fp8/Nvfp4/MxFp4x2 weights are [K, N]; GGUF and MLX
 * weights are [N, K] (out = x . W^T). MLX codes are an LSB-first bit stream over the row-major
 * [N, K] codes (the 1-, 3- and 5-byte MLX packing units are exactly that stream). Int8Block and
 * Int4Block are symmetric: their zero-point slot is ignored; Int4 nibbles are unsigned 0..15 (§9.3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/quant_formats.h"
#include "backends/cpu/ref/ref_util_b.h"

/* Code `i` of `bits` bits from an LSB-first bit stream. */
static unsigned bit_code(const uint8_t *p, size_t i, unsigned bits) {
  size_t bit = i * bits;
  unsigned v = 0;
  for (unsigned b = 0; b < bits; b++, bit++) v |= (unsigned)((p[bit / 8] >> (bit % 8)) & 1) << b;
  return v;
}

static bool is_mlx(int32_t s) {
  return s == RLX_QUANT_SCHEME_MLX_AFFINE || s == RLX_QUANT_SCHEME_MLX_MXFP4 || s == RLX_QUANT_SCHEME_MLX_MXFP8;
}
static unsigned mlx_bits(int32_t s, int64_t bits) {
  return s == RLX_QUANT_SCHEME_MLX_AFFINE ? (unsigned)bits : s == RLX_QUANT_SCHEME_MLX_MXFP4 ? 4u : 8u;
}

/* Bytes a tensor holds. */
static size_t nbytes(const rlx_tensor *t) { return rlx_tensor_numel(t) * ru_esz(t); }

static rlx_status need_bytes_at_least(const rlx_node *n, const rlx_tensor *t, uint32_t i, size_t want) {
  if (nbytes(t) < want)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u holds %zu bytes; this scheme and shape need %zu", i, nbytes(t),
                    want);
  return RLX_OK;
}

/* One MLX expert (or the whole weight): W[n, k] for n < N, k < K from codes at bit offset 0 of
 * `codes`, scales / biases [N, K / gs] starting at element `so`. */
static void mlx_dequant(int32_t scheme, unsigned bits, size_t gs, const uint8_t *codes, const rlx_tensor *scales,
                        const rlx_tensor *biases, size_t so, size_t N, size_t K, double *W) {
  size_t G = K / gs;
  for (size_t r = 0; r < N; r++)
    for (size_t k = 0; k < K; k++) {
      unsigned q = bit_code(codes, r * K + k, bits);
      size_t si = so + r * G + k / gs;
      double v;
      if (scheme == RLX_QUANT_SCHEME_MLX_AFFINE) {
        v = (double)q * rlx_elem_get(scales->data, ru_dt(scales), si) + rlx_elem_get(biases->data, ru_dt(biases), si);
      } else {
        double s = rq_e8m0(((const uint8_t *)scales->data)[si]);
        v = (scheme == RLX_QUANT_SCHEME_MLX_MXFP4 ? (double)rq_e2m1((uint8_t)q) : (double)rq_e4m3((uint8_t)q)) * s;
      }
      W[r * K + k] = v;
    }
}

/* W of a DequantMatMul node as doubles; *nk says whether it is [N, K] (else [K, N]). */
static rlx_status dequant_weight(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, size_t K, size_t N,
                                 double **Wout, bool *nk) {
  const rlx_attrs_DequantMatMul *a = &n->attrs.DequantMatMul;
  int32_t sc = a->scheme;
  size_t KN = K * N, be, bb;
  double *W = NULL;
  RLX_TRY(rb_alloc(n, KN, sizeof *W, &W));
  rlx_status st = RLX_OK;
  const uint8_t *wq = in[1].data;
  *nk = false;
  if (rq_gguf_block(sc, &be, &bb)) {
    *nk = true;
    float *f = NULL;
    if (K % be) st = ru_error(RLX_ERR_INVALID_ARG, n, "K = %zu is not a multiple of the block size %zu", K, be);
    if (st == RLX_OK) st = need_bytes_at_least(n, &in[1], 1, (KN / be) * bb);
    if (st == RLX_OK) st = rb_alloc(n, KN, sizeof *f, &f);
    if (st == RLX_OK) {
      rq_gguf_decode_rows(sc, wq, N, K, f);
      for (size_t i = 0; i < KN; i++) W[i] = f[i];
    }
    free(f);
  } else if (is_mlx(sc)) {
    *nk = true;
    unsigned bits = mlx_bits(sc, a->bits);
    size_t gs = (size_t)a->group_size;
    st = need_bytes_at_least(n, &in[1], 1, (KN * bits + 7) / 8);
    if (st == RLX_OK) mlx_dequant(sc, bits, gs, wq, &in[2], n_in > 3 ? &in[3] : NULL, 0, N, K, W);
  } else if (sc == RLX_QUANT_SCHEME_MXFP4X2_BLOCK) {
    size_t gs = (size_t)a->group_size, plane = (KN + 1) / 2, splane = ((K + gs - 1) / gs) * N;
    st = need_bytes_at_least(n, &in[1], 1, 2 * plane);
    const float *s = in[2].data;
    if (st == RLX_OK && (ru_dt(&in[2]) != RLX_F32 || rlx_tensor_numel(&in[2]) < 2 * splane))
      st = ru_error(RLX_ERR_INVALID_ARG, n, "operand 2 (scale) must hold 2 x %zu f32", splane);
    for (size_t p = 0; st == RLX_OK && p < K; p++)
      for (size_t j = 0; j < N; j++) {
        size_t e = p * N + j, si = (p / gs) * N + j;
        uint8_t b0 = wq[e / 2], b1 = wq[plane + e / 2];
        uint8_t q0 = e % 2 ? b0 >> 4 : b0 & 0xF, q1 = e % 2 ? b1 >> 4 : b1 & 0xF;
        W[e] = (double)s[si] * rq_e2m1(q0) + (double)s[splane + si] * rq_e2m1(q1);
      }
  } else {
    bool nv = sc == RLX_QUANT_SCHEME_NVFP4_BLOCK,
         fp8 = sc == RLX_QUANT_SCHEME_FP8_E4M3 || sc == RLX_QUANT_SCHEME_FP8_E5M2;
    bool four = sc == RLX_QUANT_SCHEME_INT4_BLOCK || nv;
    size_t bs = nv ? 16 : (size_t)a->block_size;
    st = need_bytes_at_least(n, &in[1], 1, four ? (KN + 1) / 2 : KN);
    double glob = nv && st == RLX_OK ? rlx_elem_get(in[3].data, ru_dt(&in[3]), 0) : 1.0;
    for (size_t p = 0; st == RLX_OK && p < K; p++)
      for (size_t j = 0; j < N; j++) {
        size_t e = p * N + j, si = fp8 ? j : (p / bs) * N + j;
        double v;
        if (fp8) {
          v = sc == RLX_QUANT_SCHEME_FP8_E4M3 ? rq_e4m3(wq[e]) : rq_e5m2(wq[e]);
          v *= rlx_elem_get(in[2].data, ru_dt(&in[2]), si);
        } else if (four) {
          uint8_t q = e % 2 ? wq[e / 2] >> 4 : wq[e / 2] & 0xF;
          if (nv) {
            v = (double)rq_e2m1(q) * (double)rq_e4m3_scale(((const uint8_t *)in[2].data)[si]) * glob;
          } else {
            v = (double)q * rlx_elem_get(in[2].data, ru_dt(&in[2]), si); /* unsigned 0..15, zp slot ignored */
          }
        } else {
          double zp = sc == RLX_QUANT_SCHEME_INT8_BLOCK_ASYM ? rlx_elem_get(in[3].data, ru_dt(&in[3]), si) : 0.0;
          v = ((double)(int8_t)wq[e] - zp) * rlx_elem_get(in[2].data, ru_dt(&in[2]), si);
        }
        W[e] = v;
      }
  }
  if (st != RLX_OK) {
    free(W);
    return st;
  }
  *Wout = W;
  return RLX_OK;
}

/* out[i, j] = sum_k x[i, k] W(k, j) with W [N, K] (nk) or [K, N]. Rows `rows` of x (NULL = all). */
static void gemm_rows(const rlx_tensor *x, const double *W, bool nk, size_t M, size_t K, size_t N, rlx_tensor *out) {
  rlx_dtype tx = ru_dt(x);
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      double acc = 0;
      for (size_t k = 0; k < K; k++) acc += rlx_elem_get(x->data, tx, i * K + k) * (nk ? W[j * K + k] : W[k * N + j]);
      ru_store(out->data, ru_dt(out), i * N + j, acc);
    }
}

static rlx_status need_x(const rlx_node *n, const rlx_tensor *in, size_t *M, size_t *K) {
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  if (in[0].shape.rank != 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [M, K]", ru_fmt(&in[0].shape));
  *M = (size_t)in[0].shape.dims[0];
  *K = (size_t)in[0].shape.dims[1];
  return RLX_OK;
}

RLX_CPU_KERNEL(DequantMatMul) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 4, out));
  size_t M = 0, K = 0;
  RLX_TRY(need_x(n, in, &M, &K));
  if (out->shape.rank != 2) return ru_error(RLX_ERR_INVALID_ARG, n, "the output must be [M, N]");
  size_t N = (size_t)out->shape.dims[1];
  double *W = NULL;
  bool nk;
  RLX_TRY(dequant_weight(n, in, n_in, K, N, &W, &nk));
  gemm_rows(&in[0], W, nk, M, K, N, out);
  free(W);
  return RLX_OK;
}

/* E GGUF slabs [N, K] decoded into W[E][N][K] (f32 exactly as ggml, widened). */
static rlx_status gguf_slabs(const rlx_node *n, const rlx_tensor *packed, uint32_t i, int32_t scheme, size_t E,
                             size_t N, size_t K, float **out) {
  size_t be, bb;
  if (!rq_gguf_block(scheme, &be, &bb))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute scheme %s is not a GGUF scheme",
                    rlx_enum_quant_scheme.names[scheme]);
  if (K % be) return ru_error(RLX_ERR_INVALID_ARG, n, "K = %zu is not a multiple of the block size %zu", K, be);
  RLX_TRY(need_bytes_at_least(n, packed, i, E * N * (K / be) * bb));
  float *f = NULL;
  RLX_TRY(rb_alloc(n, E * N * K, sizeof *f, &f));
  rq_gguf_decode_rows(scheme, packed->data, E * N, K, f);
  *out = f;
  return RLX_OK;
}

RLX_CPU_KERNEL(DequantMoEWeights) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  if (out->shape.rank != 3) return ru_error(RLX_ERR_INVALID_ARG, n, "the output must be [E, K, N]");
  size_t E = (size_t)out->shape.dims[0], K = (size_t)out->shape.dims[1], N = (size_t)out->shape.dims[2];
  float *f = NULL;
  RLX_TRY(gguf_slabs(n, &in[0], 0, n->attrs.DequantMoEWeights.scheme, E, N, K, &f));
  for (size_t e = 0; e < E; e++)
    for (size_t k = 0; k < K; k++)
      for (size_t j = 0; j < N; j++) ru_store(out->data, ru_dt(out), (e * K + k) * N + j, f[(e * N + j) * K + k]);
  free(f);
  return RLX_OK;
}

/* Rows of x routed to expert idx[i]: out[i] = x[i] . W_e^T with W_e [N, K]. */
static rlx_status grouped(const rlx_node *n, const rlx_tensor *in, uint32_t idx_op, const double *W, size_t E, size_t M,
                          size_t K, size_t N, rlx_tensor *out) {
  rlx_dtype tx = ru_dt(&in[0]);
  for (size_t i = 0; i < M; i++) {
    int64_t e = 0;
    RLX_TRY(rb_read_index(n, in, idx_op, i, (int64_t)E, false, "the expert axis of the packed weights", &e));
    const double *We = W + (size_t)e * N * K;
    for (size_t j = 0; j < N; j++) {
      double acc = 0;
      for (size_t k = 0; k < K; k++) acc += rlx_elem_get(in[0].data, tx, i * K + k) * We[j * K + k];
      ru_store(out->data, ru_dt(out), i * N + j, acc);
    }
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(DequantGroupedMatMul) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  size_t M = 0, K = 0, be = 1, bb = 1;
  RLX_TRY(need_x(n, in, &M, &K));
  RLX_TRY(rb_need_index(n, in, 2, "expert_idx"));
  int32_t sc = n->attrs.DequantGroupedMatMul.scheme;
  size_t N = (size_t)out->shape.dims[1];
  if (!rq_gguf_block(sc, &be, &bb) || K % be || N == 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "scheme %s does not fit K = %zu", rlx_enum_quant_scheme.names[sc], K);
  size_t slab = N * (K / be) * bb, E = slab ? nbytes(&in[1]) / slab : 0;
  float *f = NULL;
  double *W = NULL;
  RLX_TRY(gguf_slabs(n, &in[1], 1, sc, E, N, K, &f));
  rlx_status st = rb_alloc(n, E * N * K, sizeof *W, &W);
  if (st == RLX_OK) {
    for (size_t i = 0; i < E * N * K; i++) W[i] = f[i];
    st = grouped(n, in, 2, W, E, M, K, N, out);
  }
  free(f);
  free(W);
  return st;
}

RLX_CPU_KERNEL(DequantGroupedMatMulMlx) {
  (void)ctx;
  const rlx_attrs_DequantGroupedMatMulMlx *a = &n->attrs.DequantGroupedMatMulMlx;
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  size_t M = 0, K = 0;
  RLX_TRY(need_x(n, in, &M, &K));
  RLX_TRY(rb_need_index(n, in, 4, "expert_idx"));
  if (in[2].shape.rank != 3) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 2 (scales) must be [E, out, G]");
  size_t E = (size_t)in[2].shape.dims[0], N = (size_t)in[2].shape.dims[1], gs = (size_t)a->group_size;
  unsigned bits = mlx_bits(a->scheme, a->bits);
  size_t ebytes = N * K * bits / 8;
  RLX_TRY(need_bytes_at_least(n, &in[1], 1, E * ebytes));
  double *W = NULL;
  RLX_TRY(rb_alloc(n, E * N * K, sizeof *W, &W));
  for (size_t e = 0; e < E; e++)
    mlx_dequant(a->scheme, bits, gs, (const uint8_t *)in[1].data + e * ebytes, &in[2], &in[3], e * N * (K / gs), N, K,
                W + e * N * K);
  rlx_status st = grouped(n, in, 4, W, E, M, K, N, out);
  free(W);
  return st;
}
