/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: state-space recurrences (spec ir-special §2). Zero initial state unless
 * stated; everything in double, each output rounded once.
 *
 * SelectiveScan{n}: x, delta [B,S,H], a [H,n], b, c [B,S,n] -> [B,S,H]
 *   h_t[h,i] = exp(delta_t[h] a[h,i]) h_{t-1}[h,i] + delta_t[h] b_t[i] x_t[h];  y_t[h] = sum_i c_t[i] h_t[h,i]
 * Mamba2{P, n}: x [B,S,H,P], dt [B,S,H], a [H], b, c [B,S,H,n] -> [B,S,H,P]
 *   S_t[h,p,i] = exp(dt_t[h] a[h]) S_{t-1}[h,p,i] + dt_t[h] x_t[h,p] b_t[h,i];  y_t[h,p] = sum_i S_t[h,p,i] c_t[h,i]
 * GatedDeltaNet{n, carry_state, gate_per_channel}: q, k, v [B,S,H,n], g [B,S,H] (or [B,S,H,n]),
 *   beta [B,S,H], (state [B,H,n,n]) -> [B,S,H,n]; per head a matrix S[i,j], per step:
 *   S *= exp(g) (per channel: row i by exp(g[i])); sk = S^T k; d = (v - sk) beta; S += k d^T;
 *   o = S^T q / sqrt(n). The final state is not written back.
 * GatedDeltaNetBackward: [q, k, v, g, beta, (state), dy] -> packed dq | dk | dv | dg | dbeta |
 *   (dstate), the exact reverse sweep of the recurrence above (states of every step kept). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/seq_util.h"

static rlx_status need_dims(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *role, uint32_t rank,
                            const size_t *d) {
  const rlx_shape *s = &in[i].shape;
  bool ok = s->rank == rank;
  for (uint32_t k = 0; ok && k < rank; k++) ok = (size_t)s->dims[k] == d[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s, which does not fit x", i, role, ru_fmt(s));
  return RLX_OK;
}

static rlx_status load_all(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, double **v) {
  for (uint32_t i = 0; i < n_in; i++)
    if (!(v[i] = sq_load(&in[i]))) return ru_error(RLX_ERR_OOM, n, "out of memory reading operand %u", i);
  return RLX_OK;
}

static void free_all(double **v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) free(v[i]);
}

RLX_CPU_KERNEL(SelectiveScan) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  const rlx_shape *xs = &in[0].shape;
  size_t N = (size_t)n->attrs.SelectiveScan.state_size;
  if (xs->rank != 3 || N < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [B, S, H] and state_size >= 1",
                    ru_fmt(xs));
  size_t B = (size_t)xs->dims[0], S = (size_t)xs->dims[1], H = (size_t)xs->dims[2];
  size_t bsh[3] = {B, S, H}, hn[2] = {H, N}, bsn[3] = {B, S, N};
  RLX_TRY(need_dims(n, in, 1, "delta", 3, bsh));
  RLX_TRY(need_dims(n, in, 2, "a", 2, hn));
  RLX_TRY(need_dims(n, in, 3, "b", 3, bsn));
  RLX_TRY(need_dims(n, in, 4, "c", 3, bsn));
  RLX_TRY(ru_need_out_dims(n, out, 3, xs->dims));
  double *v[5] = {0}, *h = malloc((H * N + 1) * sizeof *h), *y = malloc((B * S * H + 1) * sizeof *y);
  rlx_status st = (h && y) ? load_all(n, in, 5, v) : ru_error(RLX_ERR_OOM, n, "out of memory for the scan state");
  if (!st) {
    const double *x = v[0], *dl = v[1], *A = v[2], *Bm = v[3], *C = v[4];
    for (size_t b = 0; b < B; b++) {
      memset(h, 0, H * N * sizeof *h);
      for (size_t t = 0; t < S; t++) {
        size_t r = b * S + t;
        for (size_t hh = 0; hh < H; hh++) {
          double d = dl[r * H + hh], acc = 0.0;
          for (size_t i = 0; i < N; i++) {
            double *s = &h[hh * N + i];
            *s = exp(d * A[hh * N + i]) * *s + d * Bm[r * N + i] * x[r * H + hh];
            acc += C[r * N + i] * *s;
          }
          y[r * H + hh] = acc;
        }
      }
    }
    sq_store(out, y, B * S * H);
  }
  free_all(v, 5);
  free(h);
  free(y);
  return st;
}

RLX_CPU_KERNEL(Mamba2) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  const rlx_shape *xs = &in[0].shape;
  size_t P = (size_t)n->attrs.Mamba2.head_dim, N = (size_t)n->attrs.Mamba2.state_size;
  if (xs->rank != 4 || N < 1 || (size_t)xs->dims[3] != P)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [B, S, H, head_dim=%zu]", ru_fmt(xs),
                    P);
  size_t B = (size_t)xs->dims[0], S = (size_t)xs->dims[1], H = (size_t)xs->dims[2];
  size_t bsh[3] = {B, S, H}, h1[1] = {H}, bshn[4] = {B, S, H, N};
  RLX_TRY(need_dims(n, in, 1, "dt", 3, bsh));
  RLX_TRY(need_dims(n, in, 2, "a", 1, h1));
  RLX_TRY(need_dims(n, in, 3, "b", 4, bshn));
  RLX_TRY(need_dims(n, in, 4, "c", 4, bshn));
  RLX_TRY(ru_need_out_dims(n, out, 4, xs->dims));
  double *v[5] = {0}, *st_ = malloc((H * P * N + 1) * sizeof *st_), *y = malloc((B * S * H * P + 1) * sizeof *y);
  rlx_status st = (st_ && y) ? load_all(n, in, 5, v) : ru_error(RLX_ERR_OOM, n, "out of memory for the scan state");
  if (!st) {
    const double *x = v[0], *dt = v[1], *A = v[2], *Bm = v[3], *C = v[4];
    for (size_t b = 0; b < B; b++) {
      memset(st_, 0, H * P * N * sizeof *st_);
      for (size_t t = 0; t < S; t++) {
        size_t r = b * S + t;
        for (size_t hh = 0; hh < H; hh++) {
          double d = dt[r * H + hh], decay = exp(d * A[hh]);
          const double *bt = Bm + (r * H + hh) * N, *ct = C + (r * H + hh) * N;
          for (size_t p = 0; p < P; p++) {
            double xv = x[(r * H + hh) * P + p], acc = 0.0;
            double *s = st_ + (hh * P + p) * N;
            for (size_t i = 0; i < N; i++) {
              s[i] = decay * s[i] + d * xv * bt[i];
              acc += s[i] * ct[i];
            }
            y[(r * H + hh) * P + p] = acc;
          }
        }
      }
    }
    sq_store(out, y, B * S * H * P);
  }
  free_all(v, 5);
  free(st_);
  free(y);
  return st;
}

/* ---- GatedDeltaNet ---- */

typedef struct gdn_dims {
  size_t B, S, H, N;
  bool carry, per_channel;
} gdn_dims;

static rlx_status gdn_check(const rlx_node *n, const rlx_tensor *in, int64_t state_size, bool carry, bool per_channel,
                            gdn_dims *g) {
  const rlx_shape *qs = &in[0].shape;
  size_t N = (size_t)state_size;
  if (qs->rank != 4 || N < 1 || (size_t)qs->dims[3] != N)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (q) has shape %s; expected [B, S, H, state_size=%zu]",
                    ru_fmt(qs), N);
  *g = (gdn_dims){(size_t)qs->dims[0], (size_t)qs->dims[1], (size_t)qs->dims[2], N, carry, per_channel};
  size_t bshn[4] = {g->B, g->S, g->H, N}, bsh[3] = {g->B, g->S, g->H}, bhnn[4] = {g->B, g->H, N, N};
  RLX_TRY(need_dims(n, in, 1, "k", 4, bshn));
  RLX_TRY(need_dims(n, in, 2, "v", 4, bshn));
  if (per_channel)
    RLX_TRY(need_dims(n, in, 3, "g", 4, bshn));
  else
    RLX_TRY(need_dims(n, in, 3, "g", 3, bsh));
  RLX_TRY(need_dims(n, in, 4, "beta", 3, bsh));
  if (carry) RLX_TRY(need_dims(n, in, 5, "state", 4, bhnn));
  return RLX_OK;
}

/* Runs the forward recurrence of head (b, h): o [S*H*N strided output], and when `hist` is not
 * NULL keeps S_{t} after every step in hist[(t+1)*N*N] (hist[0] = the initial state) plus the
 * decayed state before the update in dec[t*N*N]. */
static void gdn_forward_head(const gdn_dims *d, const double *const *v, size_t b, size_t h, double *o, double *Sm,
                             double *hist, double *dec, double *sk) {
  size_t N = d->N, H = d->H, S = d->S;
  double inv = 1.0 / sqrt((double)N);
  if (d->carry)
    memcpy(Sm, v[5] + (b * H + h) * N * N, N * N * sizeof *Sm);
  else
    memset(Sm, 0, N * N * sizeof *Sm);
  if (hist) memcpy(hist, Sm, N * N * sizeof *Sm);
  for (size_t t = 0; t < S; t++) {
    size_t r = (b * S + t) * H + h; /* row of [B, S, H] */
    const double *q = v[0] + r * N, *k = v[1] + r * N, *vv = v[2] + r * N;
    double beta = v[4][r];
    for (size_t i = 0; i < N; i++) {
      double e = exp(d->per_channel ? v[3][r * N + i] : v[3][r]);
      for (size_t j = 0; j < N; j++) Sm[i * N + j] *= e;
    }
    if (dec) memcpy(dec + t * N * N, Sm, N * N * sizeof *Sm);
    for (size_t j = 0; j < N; j++) {
      double a = 0.0;
      for (size_t i = 0; i < N; i++) a += k[i] * Sm[i * N + j];
      sk[j] = (vv[j] - a) * beta; /* d */
    }
    for (size_t i = 0; i < N; i++)
      for (size_t j = 0; j < N; j++) Sm[i * N + j] += k[i] * sk[j];
    if (hist) memcpy(hist + (t + 1) * N * N, Sm, N * N * sizeof *Sm);
    if (o)
      for (size_t j = 0; j < N; j++) {
        double a = 0.0;
        for (size_t i = 0; i < N; i++) a += q[i] * Sm[i * N + j];
        o[r * N + j] = a * inv;
      }
  }
}

RLX_CPU_KERNEL(GatedDeltaNet) {
  (void)ctx;
  const rlx_attrs_GatedDeltaNet *a = &n->attrs.GatedDeltaNet;
  uint32_t want = a->carry_state ? 6 : 5;
  RLX_TRY(ru_prologue(n, in, n_in, want, want, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  gdn_dims d;
  RLX_TRY(gdn_check(n, in, a->state_size, a->carry_state, a->gate_per_channel, &d));
  RLX_TRY(ru_need_out_dims(n, out, 4, in[0].shape.dims));
  size_t N = d.N, total = d.B * d.S * d.H * N;
  double *v[6] = {0}, *o = malloc((total + 1) * sizeof *o), *Sm = malloc(N * N * sizeof *Sm),
         *sk = malloc(N * sizeof *sk);
  rlx_status st = (o && Sm && sk) ? load_all(n, in, want, v) : ru_error(RLX_ERR_OOM, n, "out of memory for the state");
  if (!st) {
    for (size_t b = 0; b < d.B; b++)
      for (size_t h = 0; h < d.H; h++) gdn_forward_head(&d, (const double *const *)v, b, h, o, Sm, NULL, NULL, sk);
    sq_store(out, o, total);
  }
  free_all(v, want);
  free(o);
  free(Sm);
  free(sk);
  return st;
}

RLX_CPU_KERNEL(GatedDeltaNetBackward) {
  (void)ctx;
  const rlx_attrs_GatedDeltaNetBackward *a = &n->attrs.GatedDeltaNetBackward;
  uint32_t want = a->carry_state ? 7 : 6, dyi = want - 1;
  RLX_TRY(ru_prologue(n, in, n_in, want, want, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  gdn_dims d;
  RLX_TRY(gdn_check(n, in, a->state_size, a->carry_state, a->gate_per_channel, &d));
  size_t B = d.B, S = d.S, H = d.H, N = d.N, bsh = B * S * H, bshn = bsh * N;
  size_t gsz = d.per_channel ? bshn : bsh, total = 3 * bshn + gsz + bsh + (d.carry ? B * H * N * N : 0);
  size_t dyd[4] = {B, S, H, N};
  RLX_TRY(need_dims(n, in, dyi, "dy", 4, dyd));
  int64_t od = (int64_t)total;
  RLX_TRY(ru_need_out_dims(n, out, 1, &od));
  double *v[7] = {0};
  double *g = calloc(total + 1, sizeof *g), *Sm = malloc(N * N * sizeof *Sm), *sk = malloc(3 * N * sizeof *sk);
  double *hist = malloc((S + 1) * N * N * sizeof *hist + 1), *dec = malloc(S * N * N * sizeof *dec + 1);
  double *dS = malloc(N * N * sizeof *dS);
  rlx_status st = (g && Sm && sk && hist && dec && dS) ? load_all(n, in, want, v)
                                                       : ru_error(RLX_ERR_OOM, n, "out of memory for the states");
  if (!st) {
    double *dq = g, *dk = dq + bshn, *dv = dk + bshn, *dg = dv + bshn, *db = dg + gsz, *dst = db + bsh;
    double inv = 1.0 / sqrt((double)N);
    const double *dy = v[dyi];
    double *dd = sk + N, *dsk = sk + 2 * N;
    for (size_t b = 0; b < B; b++)
      for (size_t h = 0; h < H; h++) {
        gdn_forward_head(&d, (const double *const *)v, b, h, NULL, Sm, hist, dec, sk);
        memset(dS, 0, N * N * sizeof *dS);
        for (size_t tt = S; tt-- > 0;) {
          size_t r = (b * S + tt) * H + h;
          const double *q = v[0] + r * N, *k = v[1] + r * N, *vv = v[2] + r * N, *dyt = dy + r * N;
          const double *St = hist + (tt + 1) * N * N, *Sa = dec + tt * N * N;
          double beta = v[4][r];
          /* o = St^T q / sqrt(n) */
          for (size_t i = 0; i < N; i++) {
            double acc = 0.0;
            for (size_t j = 0; j < N; j++) {
              acc += St[i * N + j] * dyt[j];
              dS[i * N + j] += q[i] * dyt[j] * inv;
            }
            dq[r * N + i] = acc * inv;
          }
          /* recompute sk = Sa^T k and d = (v - sk) beta */
          for (size_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (size_t i = 0; i < N; i++) acc += k[i] * Sa[i * N + j];
            sk[j] = acc;
          }
          /* St = Sa + k d^T */
          double dbeta = 0.0;
          for (size_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (size_t i = 0; i < N; i++) acc += k[i] * dS[i * N + j];
            dd[j] = acc;
            dv[r * N + j] = acc * beta;
            dsk[j] = -acc * beta;
            dbeta += acc * (vv[j] - sk[j]);
          }
          db[r] = dbeta;
          for (size_t i = 0; i < N; i++) {
            double acc = 0.0;
            for (size_t j = 0; j < N; j++) acc += dS[i * N + j] * (vv[j] - sk[j]) * beta + Sa[i * N + j] * dsk[j];
            dk[r * N + i] = acc;
          }
          /* sk = Sa^T k: dSa = dS + k dsk^T; Sa = diag(e) S_{t-1} */
          double gsum = 0.0;
          for (size_t i = 0; i < N; i++) {
            double e = exp(d.per_channel ? v[3][r * N + i] : v[3][r]), rowsum = 0.0;
            for (size_t j = 0; j < N; j++) {
              double dsa = dS[i * N + j] + k[i] * dsk[j];
              rowsum += dsa * Sa[i * N + j];
              dS[i * N + j] = dsa * e;
            }
            if (d.per_channel)
              dg[r * N + i] = rowsum;
            else
              gsum += rowsum;
          }
          if (!d.per_channel) dg[r] = gsum;
        }
        if (d.carry) memcpy(dst + (b * H + h) * N * N, dS, N * N * sizeof *dS);
      }
    sq_store(out, g, total);
  }
  free_all(v, want);
  free(g);
  free(Sm);
  free(sk);
  free(hist);
  free(dec);
  free(dS);
  return st;
}
