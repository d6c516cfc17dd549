/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Fast CPU kernels of the attention and normalization families:
 *   Attention   f32, rank 4 [B, H, S, D] (dim 1 == num_heads), K and V with Q's heads, mask
 *               None, Causal or Bias ([B, H, Sq, Sk]), no logit softcap. Per (batch, head) and
 *               block of up to FA_ROWS query rows: S = Q K^T (sgemm), S = S * scale (+ bias,
 *               causal keys hidden), a row softmax in f32 with double sums (the exponential of
 *               the Exp activation's vectorised loop), O = P V (sgemm). On the AVX-512 and
 *               AVX2 paths both products use gemm_packed.c's register tiles (K^T and V packed
 *               once per head) instead of sgemm calls on these small matrices.
 *               The (batch, head) pairs are split across the threads; each output row is
 *               computed by one thread in a fixed order, so results do not depend on the thread
 *               count. Rows with a NaN score give NaN, rows with every key masked give zeros
 *               (as in the reference kernel).
 *   LayerNorm   f32 over the last axis, gamma and beta of D elements ([D] or [1, .., D]); mean,
 *               variance and the normalised value in double, rounded once; rows split across
 *               the threads. */
#include <math.h>
#include <string.h>

#include "backends/cpu/fast/fast.h"

/* ======================================================================================
 * Attention
 * ====================================================================================== */

#define FA_ROWS 64

FK_APPLIES(Attention) {
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  int mk = a->mask_kind;
  bool bias = mk == RLX_MASK_BIAS;
  if (!(mk == RLX_MASK_NONE || mk == RLX_MASK_CAUSAL || bias) || a->attn_logit_softcap.has) return false;
  if (n_in != (bias ? 4u : 3u)) return false;
  const rlx_shape *q = &in[0].shape, *k = &in[1].shape, *v = &in[2].shape;
  for (uint32_t i = 0; i < n_in; i++)
    if (!fk_static_f32(&in[i].shape) || in[i].shape.rank != 4) return false;
  if (!fk_static_f32(&n->shape) || n->shape.rank != 4) return false;
  int64_t H = a->num_heads, D = a->head_dim, Dv = a->v_head_dim.has ? a->v_head_dim.v : D;
  if (H < 1 || D < 1 || Dv < 1 || q->dims[1] != H || k->dims[1] != H || v->dims[1] != H) return false;
  if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0]) return false;
  if (q->dims[3] != D || k->dims[3] != D || v->dims[3] != Dv || v->dims[2] != k->dims[2]) return false;
  if (k->dims[2] < 1 || q->dims[2] < 1 || k->dims[2] < q->dims[2] * (mk == RLX_MASK_CAUSAL)) return false;
  if (n->shape.dims[0] != q->dims[0] || n->shape.dims[1] != H || n->shape.dims[2] != q->dims[2] ||
      n->shape.dims[3] != Dv)
    return false;
  if (bias) {
    const rlx_shape *m = &in[3].shape;
    if (m->dims[0] != q->dims[0] || m->dims[1] != H || m->dims[2] != q->dims[2] || m->dims[3] != k->dims[2])
      return false;
  }
  /* sgemm extents are ints. */
  return k->dims[2] < (1 << 24) && D < (1 << 24) && Dv < (1 << 24);
}

typedef struct fa_job {
  const float *q, *k, *v, *bias;
  size_t qs[3], ks[3], vs[3]; /* element strides of q, k, v over batch, head and row (the last axis contiguous) */
  size_t H, bsb, bsh, bsq;    /* the bias's element strides over batch, head and query row (0: broadcast) */
  float *o, *scratch;
  size_t Sq, Sk, D, Dv, scratch_per_chunk, scores_floats; /* per chunk: scores, then one row */
  size_t kt_floats, vp_floats;                            /* packed tiles: then K^T, V, A */
  float scale;
  bool causal, packed; /* the packed tiles (gemm_packed.c: AVX-512 or AVX2) instead of sgemm */
  fk_isa isa;          /* the score rows: AVX-512 (fa_rows_avx512), AVX2 (fa_rows_avx2) or the baseline */
} fa_job;

/* The largest of x[0..n), NaN skipped (-inf for none); exact, so both forms give the same value. */
static float fa_max_base(const float *x, size_t n) {
  float mx = -INFINITY;
  for (size_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  return mx;
}
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static float fa_max_avx512(const float *x, size_t n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + i), m); /* NaN in x: keeps m */
  float mx = _mm512_reduce_max_ps(m);
  for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  return mx;
}
#endif

/* Softmax of one score row in place (len keys, the first `visible` of them visible); tmp holds
 * `visible` floats. The maximum by fa_max (AVX-512 lanes or a plain loop: the same value),
 * e^(s - max) by the Exp activation's vectorised loop
 * (fk_act_f32), the sum in double in a fixed order. A NaN score, or +inf (inf - inf), makes the sum
 * NaN: the row is then NaN; a row with every visible score -inf (and no NaN) gives zeros. */
static inline __attribute__((always_inline)) void fa_softmax_row(float *restrict s, float *restrict tmp, size_t len,
                                                                 size_t visible, bool avx512) {
  size_t i;
#if defined(__x86_64__)
  float mx = avx512 ? fa_max_avx512(s, visible) : fa_max_base(s, visible);
#else
  (void)avx512;
  float mx = fa_max_base(s, visible);
#endif
  if (mx == -INFINITY) { /* all -inf or NaN */
    bool nan_seen = false;
    for (i = 0; i < visible; i++) nan_seen |= s[i] != s[i];
    for (i = 0; i < len; i++) s[i] = nan_seen ? NAN : 0.0f;
    return;
  }
  for (i = 0; i < visible; i++) tmp[i] = s[i] - mx;
  fk_act_f32(RLX_ACT_EXP, tmp, s, visible);
  double sum = fk_sum_run(s, visible);
  if (sum != sum) {
    for (i = 0; i < len; i++) s[i] = NAN;
    return;
  }
  float inv = (float)(1.0 / sum);
  for (i = 0; i < visible; i++) s[i] *= inv;
  for (i = visible; i < len; i++) s[i] = 0.0f;
}

#if defined(__x86_64__)
/* e^x for x <= 0 (softmax arguments; larger x are clamped to 89), 16 lanes: x = n ln2 + r with
 * n = round(x / ln2), ln2 in two parts, e^r by its Taylor polynomial of degree 7 with fused
 * multiply-adds, then 2^n applied by vscalefps (one rounding). Below -87 the result is 0: e^x
 * would be subnormal there (below 1.7e-38, next to the row maximum's 1), and producing subnormal
 * results costs a microcode assist per instruction - with an additive mask of -10000 on some
 * keys (the encoder benchmark's padding) that was one assist per score row. NaN stays NaN (the
 * clamps pass it on; the compare is false for it). */
__attribute__((target("avx512f"))) static inline __m512 fa_exp16(__m512 x) {
  __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);
  __m512 p = _mm512_set1_ps(1.98412698e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.38888889e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.33333333e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.16666667e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.66666667e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_mask_mov_ps(_mm512_scalef_ps(p, n), tiny, _mm512_setzero_ps());
}

/* The softmax of fa_softmax_row in one pass for the exponentials and their double sum (two
 * 8-lane accumulators, a fixed order), on the AVX-512 path only (its products differ from the
 * baseline's anyway). */
__attribute__((target("avx512f"))) static void fa_softmax_row_avx512(float *restrict s, size_t len, size_t visible) {
  float mx = fa_max_avx512(s, visible);
  size_t i;
  if (mx == -INFINITY) { /* all -inf or NaN */
    bool nan_seen = false;
    for (i = 0; i < visible; i++) nan_seen |= s[i] != s[i];
    for (i = 0; i < len; i++) s[i] = nan_seen ? NAN : 0.0f;
    return;
  }
  __m512 vm = _mm512_set1_ps(mx);
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  for (i = 0; i < visible; i += 16) {
    size_t w = visible - i < 16 ? visible - i : 16;
    __mmask16 m = w == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << w) - 1);
    __m512 e = _mm512_maskz_mov_ps(m, fa_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), vm)));
    _mm512_mask_storeu_ps(s + i, m, e);
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  if (sum != sum) {
    for (i = 0; i < len; i++) s[i] = NAN;
    return;
  }
  __m512 inv = _mm512_set1_ps((float)(1.0 / sum));
  for (i = 0; i + 16 <= visible; i += 16) _mm512_storeu_ps(s + i, _mm512_mul_ps(_mm512_loadu_ps(s + i), inv));
  for (; i < visible; i++) s[i] *= (float)(1.0 / sum);
  for (i = visible; i < len; i++) s[i] = 0.0f;
}
#endif

/* Scale (+ bias) and softmax of score rows r0..r0+rows of head bh; compiled for the baseline and
 * for AVX-512F (the same operations in the same order: the same bits). */
static inline __attribute__((always_inline)) void fa_rows(const fa_job *j, float *s, float *tmp, size_t bh, size_t r0,
                                                          size_t rows, bool avx512) {
  for (size_t r = 0; r < rows; r++) {
    float *restrict row = s + r * j->Sk;
    const float *restrict b = j->bias ? j->bias + bh / j->H * j->bsb + bh % j->H * j->bsh + (r0 + r) * j->bsq : NULL;
    float scale = j->scale;
    if (b)
      for (size_t i = 0; i < j->Sk; i++) row[i] = row[i] * scale + b[i];
    else
      for (size_t i = 0; i < j->Sk; i++) row[i] *= scale;
    size_t visible = j->causal ? j->Sk - j->Sq + r0 + r + 1 : j->Sk;
#if defined(__x86_64__)
    if (avx512) {
      fa_softmax_row_avx512(row, j->Sk, visible);
      continue;
    }
#endif
    fa_softmax_row(row, tmp, j->Sk, visible, avx512);
  }
}
static void fa_rows_base(const fa_job *j, float *s, float *tmp, size_t bh, size_t r0, size_t rows) {
  fa_rows(j, s, tmp, bh, r0, rows, false);
}
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void fa_rows_avx512(const fa_job *j, float *s, float *tmp, size_t bh,
                                                              size_t r0, size_t rows) {
  fa_rows(j, s, tmp, bh, r0, rows, true);
}
/* The baseline's operations built for AVX2 (ISO C does not contract a * b + c: the same bits) */
__attribute__((target("avx2,fma"))) static void fa_rows_avx2(const fa_job *j, float *s, float *tmp, size_t bh,
                                                             size_t r0, size_t rows) {
  fa_rows(j, s, tmp, bh, r0, rows, false);
}
#else
#define fa_rows_avx512 fa_rows_base
#define fa_rows_avx2 fa_rows_base
#endif

static void fa_task(void *arg, size_t lo, size_t hi, int chunk) {
  const fa_job *j = arg;
  float *s = j->scratch + (size_t)chunk * j->scratch_per_chunk, *tmp = s + j->scores_floats;
  float *kt = tmp + fk_align64(j->Sk * sizeof(float)) / sizeof(float), *vp = kt + j->kt_floats;
  for (size_t bh = lo; bh < hi; bh++) {
    size_t b = bh / j->H, h = bh % j->H;
    const float *q = j->q + b * j->qs[0] + h * j->qs[1], *k = j->k + b * j->ks[0] + h * j->ks[1];
    const float *v = j->v + b * j->vs[0] + h * j->vs[1];
    size_t lq = j->qs[2], lk = j->ks[2], lv = j->vs[2];
    float *o = j->o + bh * j->Sq * j->Dv;
    if (j->packed) {
      fk_gemm_pack_b(j->D, j->Sk, k, lk, true, kt); /* K^T [D, Sk] */
      fk_gemm_pack_b(j->Sk, j->Dv, v, lv, false, vp);
    }
    for (size_t r0 = 0; r0 < j->Sq; r0 += FA_ROWS) {
      size_t rows = j->Sq - r0 < FA_ROWS ? j->Sq - r0 : FA_ROWS;
      if (j->packed)
        fk_gemm_packed(rows, j->Sk, j->D, q + r0 * lq, lq, kt, s, j->Sk);
      else
        fk_sgemm(false, true, rows, j->Sk, j->D, q + r0 * lq, lq, k, lk, false, s, j->Sk);
      if (j->isa == FK_ISA_AVX512)
        fa_rows_avx512(j, s, tmp, bh, r0, rows);
      else if (j->isa == FK_ISA_AVX2)
        fa_rows_avx2(j, s, tmp, bh, r0, rows);
      else
        fa_rows_base(j, s, tmp, bh, r0, rows);
      if (j->packed)
        fk_gemm_packed(rows, j->Dv, j->Sk, s, j->Sk, vp, o + r0 * j->Dv, j->Dv);
      else
        fk_sgemm(false, false, rows, j->Dv, j->Sk, s, j->Sk, v, lv, false, o + r0 * j->Dv, j->Dv);
    }
  }
}

/* Is src (rank <= 4) a bias that broadcasts to the Attention's [B, H, Sq, Sk] with its last
 * axis Sk itself (the rows read in place)? */
bool rlx_fast_attention_bias_src_applies(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, const rlx_shape *src) {
  if (!rlx_fast_applies_Attention(n, in, n_in) || n->attrs.Attention.mask_kind != RLX_MASK_BIAS) return false;
  const rlx_shape *m = &in[3].shape;
  if (!fk_static_f32(src) || src->rank < 1 || src->rank > 4 || src->dims[src->rank - 1] != m->dims[3]) return false;
  for (uint32_t k = 0; k < src->rank; k++) {
    int64_t d = src->dims[src->rank - 1 - k];
    if (d != 1 && d != m->dims[3 - k]) return false;
  }
  return true;
}

static rlx_status fa_run(const rlx_node *n, const rlx_tensor *in, const rlx_tensor *bias, const fk_attn_view *views,
                         rlx_tensor *out, rlx_cpu_ctx *ctx) {
  const rlx_attrs_Attention *a = &n->attrs.Attention;
  const rlx_shape *qs = &in[0].shape, *ks = &in[1].shape;
  size_t BH = (size_t)qs->dims[0] * (size_t)qs->dims[1];
  fa_job j = {.q = in[0].data,
              .k = in[1].data,
              .v = in[2].data,
              .bias = bias ? bias->data : NULL,
              .H = (size_t)qs->dims[1],
              .o = out->data,
              .Sq = (size_t)qs->dims[2],
              .Sk = (size_t)ks->dims[2],
              .D = (size_t)qs->dims[3],
              .Dv = (size_t)out->shape.dims[3],
              .scale = a->score_scale.has ? a->score_scale.v : (float)(1.0 / sqrt((double)a->head_dim)),
              .causal = a->mask_kind == RLX_MASK_CAUSAL};
  if (BH == 0) return RLX_OK;
  size_t *st3[3] = {j.qs, j.ks, j.vs};
  const float **base[3] = {&j.q, &j.k, &j.v};
  for (int i = 0; i < 3; i++) { /* as stored: [B, H, S, D] contiguous; else the view */
    const rlx_shape *sh = &in[i].shape;
    size_t S = (size_t)sh->dims[2], D = (size_t)sh->dims[3];
    if (views && views[i].p) {
      *base[i] = views[i].p;
      memcpy(st3[i], views[i].st, sizeof views[i].st);
    } else {
      st3[i][0] = (size_t)sh->dims[1] * S * D, st3[i][1] = S * D, st3[i][2] = D;
    }
  }
  if (bias) { /* strides of the bias right-aligned to [B, H, Sq, Sk] */
    const rlx_shape *bs = &bias->shape;
    size_t st[4] = {0, 0, 0, 0}, acc = 1;
    for (uint32_t k = 0; k < bs->rank && k < 4; k++) {
      size_t d = (size_t)bs->dims[bs->rank - 1 - k];
      st[3 - k] = d == 1 ? 0 : acc;
      acc *= d;
    }
    j.bsb = st[0], j.bsh = st[1], j.bsq = st[2];
  }
  int chunks = fk_chunks(ctx, BH, 1);
  size_t rows = j.Sq < FA_ROWS ? j.Sq : FA_ROWS;
  j.scores_floats = fk_align64(rows * j.Sk * sizeof(float)) / sizeof(float);
  j.scratch_per_chunk = j.scores_floats + fk_align64(j.Sk * sizeof(float)) / sizeof(float);
  j.isa = fk_isa_active();
  j.packed = fk_gemm_packed_fast();
  if (j.packed) {
    j.kt_floats = fk_align64(fk_gemm_packed_b_floats(j.D, j.Sk) * sizeof(float)) / sizeof(float);
    j.vp_floats = fk_align64(fk_gemm_packed_b_floats(j.Sk, j.Dv) * sizeof(float)) / sizeof(float);
    j.scratch_per_chunk += j.kt_floats + j.vp_floats;
  }
  j.scratch = fk_scratch(ctx, (size_t)chunks * j.scratch_per_chunk * sizeof(float));
  if (!j.scratch) return rlx_errorf(RLX_ERR_OOM, "Attention: out of memory for the score blocks");
  fk_parallel_for(ctx, BH, 1, fa_task, &j);
  fk_scratch_release(ctx, j.scratch);
  return RLX_OK;
}

FK_KERNEL(Attention) {
  (void)n_in;
  return fa_run(n, in, n->attrs.Attention.mask_kind == RLX_MASK_BIAS ? &in[3] : NULL, NULL, out, ctx);
}

rlx_status rlx_fast_attention_src(const rlx_node *n, const rlx_tensor *in, const fk_attn_src *src, rlx_tensor *out,
                                  rlx_cpu_ctx *ctx) {
  const rlx_tensor *bias = n->attrs.Attention.mask_kind != RLX_MASK_BIAS ? NULL : src->has_bias ? &src->bias : &in[3];
  return fa_run(n, in, bias, src->view, out, ctx);
}

/* ======================================================================================
 * LayerNorm (last axis)
 * ====================================================================================== */

static bool ln_param_ok(const rlx_shape *p, int64_t D) {
  if (!fk_static_f32(p) || p->rank == 0) return false;
  for (uint32_t i = 0; i + 1 < p->rank; i++)
    if (p->dims[i] != 1) return false;
  return p->dims[p->rank - 1] == D;
}

FK_APPLIES(LayerNorm) {
  if (n_in != 3) return false;
  const rlx_shape *x = &in[0].shape;
  if (!fk_static_f32(x) || x->rank == 0 || !fk_static_f32(&n->shape) || !fk_same_dims(x, &n->shape)) return false;
  int64_t D = x->dims[x->rank - 1];
  return D > 0 && ln_param_ok(&in[1].shape, D) && ln_param_ok(&in[2].shape, D);
}

typedef struct ln_job {
  const float *x, *g, *b;
  float *y;
  size_t D;
  double eps;
} ln_job;

/* Rows lo..hi; compiled for the baseline and for AVX-512F (the same operations in the same order,
 * no contraction: the same bits). */
static inline __attribute__((always_inline)) void ln_rows(const ln_job *j, size_t lo, size_t hi) {
  size_t D = j->D;
  for (size_t r = lo; r < hi; r++) {
    const float *x = j->x + r * D;
    float *y = j->y + r * D;
    double mean = fk_sum_run(x, D) / (double)D;
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= D; i += 8)
      for (int l = 0; l < 8; l++) {
        double d = (double)x[i + l] - mean;
        acc[l] += d * d;
      }
    double var = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < D; i++) {
      double d = (double)x[i] - mean;
      var += d * d;
    }
    var /= (double)D;
    /* (x - mean) in double: with a large common offset the f32 difference would lose digits */
    double rstd = 1.0 / sqrt(var + j->eps);
    for (size_t k = 0; k < D; k++) y[k] = (float)(((double)x[k] - mean) * rstd * (double)j->g[k] + (double)j->b[k]);
  }
}
static void ln_rows_base(const ln_job *j, size_t lo, size_t hi) { ln_rows(j, lo, hi); }
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void ln_rows_avx512(const ln_job *j, size_t lo, size_t hi) {
  ln_rows(j, lo, hi);
}
#endif

static void ln_task(void *arg, size_t lo, size_t hi, int chunk) {
  (void)chunk;
  const ln_job *j = arg;
#if defined(__x86_64__)
  if (fk_isa_active() == FK_ISA_AVX512) {
    ln_rows_avx512(j, lo, hi);
    return;
  }
#endif
  ln_rows_base(j, lo, hi);
}

FK_KERNEL(LayerNorm) {
  (void)n_in;
  const rlx_shape *x = &in[0].shape;
  ln_job j = {.x = in[0].data,
              .g = in[1].data,
              .b = in[2].data,
              .y = out->data,
              .D = (size_t)x->dims[x->rank - 1],
              .eps = n->attrs.LayerNorm.eps};
  size_t rows = fk_numel(x) / j.D;
  fk_parallel_for(ctx, rows, 16384 / j.D + 1, ln_task, &j);
  return RLX_OK;
}
