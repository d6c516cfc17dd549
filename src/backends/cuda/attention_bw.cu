/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Attention backward (AttentionBackward, AttentionBackwardAll): the tiled flash kernels
 * (flash.cu) where they apply, else these general kernels, for every float dtype and every mask
 * kind (Custom keep-masks, Bias), soft-cap and grouped-query heads, head dims up to 512, in double
 * as the CPU reference (src/backends/cpu/ref/backward_attention.c):
 *   stats: one block per query row (b, h, qi): the forward's online softmax, then
 *          lse = m + log l and delta = <dy, out> (= sum_k p_k <dy, v_k>);
 *   dq:    one block per query row: p = exp(s - lse), dp = <dy, v>, ds = p (dp - delta) times
 *          1 - tanh^2 when soft-capped, dq += scale ds k;
 *   dk/dv: one block per key row of a K/V head, over the query heads of its group and their rows:
 *          dv += p dy, dk += scale ds q.
 * Threads own head lanes d = tid, tid + 128, ...; dot products are block sums. Correct and
 * general, not fast: the flash kernels are the fast path. */
#include "backends/cuda/attn.cuh"

namespace {

constexpr int BT = 128, LANES = 4; /* head dims up to BT * LANES */

__global__ void __launch_bounds__(BT) attn_bw_stats(rlx_cu_attn p, const void *G, double2 *stats) {
  __shared__ double sh[32];
  const int t = p.dtype, tid = threadIdx.x;
  int64_t rows = p.B * p.H * p.Sq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t qi = row % p.Sq, h = (row / p.Sq) % p.H, b = row / (p.Sq * p.H), kh = h / p.group;
    double acc[LANES] = {0, 0, 0, 0}, m = -INFINITY, l = 0;
    bool nan_seen = false;
    for (int64_t ki = 0; ki < p.Sk; ki++) {
      double part = 0;
      for (int64_t d = tid; d < p.q.D; d += BT)
        part += ld_f(p.Q, t, at(p.q, b, h, qi, d)) * ld_f(p.K, t, at(p.k, b, kh, ki, d));
      double dot = cu_block_sum(part, sh), sc, th;
      if (!attn_score(p, b, h, qi, ki, dot, &sc, &th)) continue;
      if (sc != sc) {
        nan_seen = true;
        continue;
      }
      if (sc == -INFINITY) continue;
      double mn = sc > m ? sc : m, corr = exp(m - mn), e = exp(sc - mn);
      l = l * corr + e;
#pragma unroll
      for (int j = 0; j < LANES; j++) {
        int64_t d = tid + (int64_t)BT * j;
        if (d < p.v.D) acc[j] = acc[j] * corr + e * ld_f(p.V, t, at(p.v, b, kh, ki, d));
      }
      m = mn;
    }
    double part = 0;
#pragma unroll
    for (int j = 0; j < LANES; j++) {
      int64_t d = tid + (int64_t)BT * j;
      if (d < p.v.D && l > 0) part += ld_f(G, t, at(p.q, b, h, qi, d)) * (acc[j] / l);
    }
    double delta = cu_block_sum(part, sh);
    if (tid == 0) stats[row] = make_double2(nan_seen ? nan("") : l > 0 ? m + log(l) : INFINITY, delta);
  }
}

__global__ void __launch_bounds__(BT) attn_bw_dq(rlx_cu_attn p, const void *G, const double2 *stats, void *dq) {
  __shared__ double sh[32];
  const int t = p.dtype, tid = threadIdx.x;
  int64_t rows = p.B * p.H * p.Sq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t qi = row % p.Sq, h = (row / p.Sq) % p.H, b = row / (p.Sq * p.H), kh = h / p.group;
    double2 st = stats[row];
    double acc[LANES] = {0, 0, 0, 0};
    for (int64_t ki = 0; ki < p.Sk; ki++) {
      double part = 0, pg = 0;
      for (int64_t d = tid; d < p.q.D; d += BT) {
        part += ld_f(p.Q, t, at(p.q, b, h, qi, d)) * ld_f(p.K, t, at(p.k, b, kh, ki, d));
        pg += ld_f(G, t, at(p.q, b, h, qi, d)) * ld_f(p.V, t, at(p.v, b, kh, ki, d));
      }
      double dot = cu_block_sum(part, sh), dp = cu_block_sum(pg, sh), sc, th;
      if (!attn_score(p, b, h, qi, ki, dot, &sc, &th)) continue;
      double pr = exp(sc - st.x), ds = pr * (dp - st.y) * (1.0 - th * th) * p.scale;
#pragma unroll
      for (int j = 0; j < LANES; j++) {
        int64_t d = tid + (int64_t)BT * j;
        if (d < p.q.D) acc[j] += ds * ld_f(p.K, t, at(p.k, b, kh, ki, d));
      }
    }
#pragma unroll
    for (int j = 0; j < LANES; j++) {
      int64_t d = tid + (int64_t)BT * j;
      if (d < p.q.D) st_f(dq, t, at(p.q, b, h, qi, d), acc[j]);
    }
  }
}

__global__ void __launch_bounds__(BT)
    attn_bw_dkv(rlx_cu_attn p, const void *G, const double2 *stats, void *dk, void *dv) {
  __shared__ double sh[32];
  const int t = p.dtype, tid = threadIdx.x;
  const int64_t Hk = p.H / p.group, rows = p.B * Hk * p.Sk;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t ki = row % p.Sk, kh = (row / p.Sk) % Hk, b = row / (p.Sk * Hk);
    double ak[LANES] = {0, 0, 0, 0}, av[LANES] = {0, 0, 0, 0};
    for (int64_t h = kh * p.group; h < (kh + 1) * p.group; h++)
      for (int64_t qi = 0; qi < p.Sq; qi++) {
        double part = 0, pg = 0;
        for (int64_t d = tid; d < p.q.D; d += BT) {
          part += ld_f(p.Q, t, at(p.q, b, h, qi, d)) * ld_f(p.K, t, at(p.k, b, kh, ki, d));
          if (dk) pg += ld_f(G, t, at(p.q, b, h, qi, d)) * ld_f(p.V, t, at(p.v, b, kh, ki, d));
        }
        double dot = cu_block_sum(part, sh), dp = dk ? cu_block_sum(pg, sh) : 0.0, sc, th;
        if (!attn_score(p, b, h, qi, ki, dot, &sc, &th)) continue;
        double2 st = stats[(b * p.H + h) * p.Sq + qi];
        double pr = exp(sc - st.x), ds = pr * (dp - st.y) * (1.0 - th * th) * p.scale;
#pragma unroll
        for (int j = 0; j < LANES; j++) {
          int64_t d = tid + (int64_t)BT * j;
          if (d >= p.q.D) continue;
          if (dv) av[j] += pr * ld_f(G, t, at(p.q, b, h, qi, d));
          if (dk) ak[j] += ds * ld_f(p.Q, t, at(p.q, b, h, qi, d));
        }
      }
#pragma unroll
    for (int j = 0; j < LANES; j++) {
      int64_t d = tid + (int64_t)BT * j;
      if (d >= p.q.D) continue;
      if (dk) st_f(dk, t, at(p.k, b, kh, ki, d), ak[j]);
      if (dv) st_f(dv, t, at(p.v, b, kh, ki, d), av[j]);
    }
  }
}

unsigned grid_of(int64_t rows) { return (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8); }

} // namespace

/* out_ld: the tensor-core kernels write the gradients through out_base / out_stride; the row
 * layouts only (kind 0 has no rows of H * D), and rows at least as wide as the operands' */
extern "C" int rlx_cu_attn_bw_out_ld_fits(const rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  const rlx_cu_attn *a = &p->a;
  const bool rows = a->q.kind != 0 && a->k.kind != 0 && a->v.kind != 0 && p->out_ld >= a->H * a->q.D &&
                    p->out_ld >= (a->H / a->group) * a->k.D;
  return rows && rlx_cu_flash_fits(a) && rlx_cu_flash_tc_fits(c, a);
}

extern "C" rlx_status rlx_cu_attention_backward(rlx_cu_ctx *c, const rlx_cu_attn_bw *p) {
  const rlx_cu_attn *a = &p->a;
  if (a->q.D > (int64_t)BT * LANES)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "cuda: attention backward head_dim %lld is over %d", (long long)a->q.D,
                      BT * LANES);
  int64_t qrows = a->B * a->H * a->Sq, krows = a->B * (a->H / a->group) * a->Sk;
  if (p->out_ld && !rlx_cu_attn_bw_out_ld_fits(c, p))
    return rlx_errorf(RLX_ERR_INTERNAL,
                      "cuda: attention gradients into rows of %lld elements need the tensor-core "
                      "kernels",
                      (long long)p->out_ld);
  if (rlx_cu_flash_fits(a)) return rlx_cu_flash_backward(c, p);
  if (p->compute_stats && qrows > 0) {
    attn_bw_stats<<<grid_of(qrows), BT, 0, c->stream>>>(*a, p->G, (double2 *)p->stats);
    RLX_TRY(cu_launch_status("attention backward statistics"));
  }
  if (p->dq && qrows > 0) {
    attn_bw_dq<<<grid_of(qrows), BT, 0, c->stream>>>(*a, p->G, (const double2 *)p->stats, p->dq);
    RLX_TRY(cu_launch_status("attention backward dq"));
  }
  if ((p->dk || p->dv) && krows > 0) {
    attn_bw_dkv<<<grid_of(krows), BT, 0, c->stream>>>(*a, p->G, (const double2 *)p->stats, p->dk, p->dv);
    RLX_TRY(cu_launch_status("attention backward dk / dv"));
  }
  return RLX_OK;
}
