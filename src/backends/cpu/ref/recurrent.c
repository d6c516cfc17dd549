/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: Lstm, Gru, Rnn (spec ir-special §2).
 *
 * x [B, S, I] -> [B, S, D*H] (batch first; D = 2 when bidirectional). Weights are packed layer
 * major, then direction: block (l, d) of w_ih is [G*H, in_l] (in_0 = I, in_l = D*H), of w_hh
 * [G*H, H], of each bias [G*H]; G = 4 (Lstm, gates i f g o), 3 (Gru, r z n), 1 (Rnn). With
 * `carry`, h0 (and c0 for Lstm) [L*D, B, H] give the initial states of block l*D + d, else they
 * are zero. The reverse direction runs t = S-1 .. 0 and stores step t at index t; the next layer's
 * input is [forward | reverse] on the feature axis. Each cell:
 *   Lstm: z = W_ih x + W_hh h + bias; c = s(f) c + s(i) tanh(g); h = s(o) tanh(c)
 *   Gru:  r, z = s(W_i x + b_i + W_h h + b_h); n = tanh(W_in x + b_in + r (W_hn h + b_hn));
 *         h = (1 - z) n + z h
 *   Rnn:  h = act(W_ih x + bias + W_hh h), act = relu when `relu`, else tanh.
 * Everything is computed in double and rounded once; final states are not written back (the
 * output is the only result). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/seq_util.h"

typedef enum { CELL_LSTM, CELL_GRU, CELL_RNN } cell_kind;

typedef struct rnn_cfg {
  cell_kind kind;
  int64_t hidden, layers;
  bool bidir, carry, relu;
} rnn_cfg;

static int64_t n_gates(cell_kind k) { return k == CELL_LSTM ? 4 : k == CELL_GRU ? 3 : 1; }

/* One direction of one layer over the whole sequence. in [B, S, in_w]; writes h_t into
 * out [B, S, out_w] at feature offset `off`. */
static void run_direction(const rnn_cfg *cf, size_t B, size_t S, size_t in_w, const double *in, const double *wih,
                          const double *whh, const double *b1, const double *b2, const double *h0, const double *c0,
                          bool reverse, double *out, size_t out_w, size_t off, double *scratch) {
  size_t H = (size_t)cf->hidden, G = (size_t)n_gates(cf->kind);
  double *h = scratch, *c = h + H, *zi = c + H, *zh = zi + G * H, *hn = zh + G * H;
  for (size_t b = 0; b < B; b++) {
    for (size_t j = 0; j < H; j++) {
      h[j] = h0 ? h0[b * H + j] : 0.0;
      c[j] = c0 ? c0[b * H + j] : 0.0;
    }
    for (size_t s = 0; s < S; s++) {
      size_t t = reverse ? S - 1 - s : s;
      const double *xt = in + (b * S + t) * in_w;
      for (size_t r = 0; r < G * H; r++) {
        double a = 0.0, e = 0.0;
        for (size_t k = 0; k < in_w; k++) a += wih[r * in_w + k] * xt[k];
        for (size_t k = 0; k < H; k++) e += whh[r * H + k] * h[k];
        zi[r] = a + b1[r];
        zh[r] = e + (b2 ? b2[r] : 0.0);
      }
      for (size_t j = 0; j < H; j++) {
        switch (cf->kind) {
        case CELL_LSTM: {
          double ig = sq_sigmoid(zi[j] + zh[j]), fg = sq_sigmoid(zi[H + j] + zh[H + j]);
          double gg = tanh(zi[2 * H + j] + zh[2 * H + j]), og = sq_sigmoid(zi[3 * H + j] + zh[3 * H + j]);
          c[j] = fg * c[j] + ig * gg;
          hn[j] = og * tanh(c[j]);
          break;
        }
        case CELL_GRU: {
          double rg = sq_sigmoid(zi[j] + zh[j]), zg = sq_sigmoid(zi[H + j] + zh[H + j]);
          double ng = tanh(zi[2 * H + j] + rg * zh[2 * H + j]);
          hn[j] = (1.0 - zg) * ng + zg * h[j];
          break;
        }
        case CELL_RNN: {
          double v = zi[j] + zh[j];
          hn[j] = cf->relu ? (v > 0.0 ? v : 0.0) : tanh(v);
          break;
        }
        }
      }
      memcpy(h, hn, H * sizeof *h);
      memcpy(out + (b * S + t) * out_w + off, h, H * sizeof *h);
    }
  }
}

static rlx_status run_rnn(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, const rnn_cfg *cf) {
  uint32_t n_bias = cf->kind == CELL_GRU ? 2 : 1, n_state = cf->kind == CELL_LSTM ? 2 : 1;
  uint32_t want = 3 + n_bias + (cf->carry ? n_state : 0);
  RLX_TRY(ru_prologue(n, in, n_in, want, want, out));
  RLX_TRY(sq_need_float_all(n, in, n_in, out));
  const rlx_shape *xs = &in[0].shape;
  if (xs->rank != 3)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected [B, S, I]", ru_fmt(xs));
  if (cf->hidden < 1 || cf->layers < 1)
    return ru_error(RLX_ERR_INVALID_ARG, n, "hidden_size %lld and num_layers %lld must be >= 1", (long long)cf->hidden,
                    (long long)cf->layers);
  size_t B = (size_t)xs->dims[0], S = (size_t)xs->dims[1], NI = (size_t)xs->dims[2];
  size_t H = (size_t)cf->hidden, L = (size_t)cf->layers, D = cf->bidir ? 2 : 1, G = (size_t)n_gates(cf->kind);
  size_t DH = D * H;
  int64_t odims[3] = {(int64_t)B, (int64_t)S, (int64_t)DH};
  RLX_TRY(ru_need_out_dims(n, out, 3, odims));
  RLX_TRY(sq_need_count(n, in, 1, "w_ih", D * G * H * (NI + (L - 1) * DH)));
  RLX_TRY(sq_need_count(n, in, 2, "w_hh", L * D * G * H * H));
  for (uint32_t i = 3; i < 3 + n_bias; i++) RLX_TRY(sq_need_count(n, in, i, "bias", L * D * G * H));
  for (uint32_t i = 3 + n_bias; i < want; i++) RLX_TRY(sq_need_count(n, in, i, "initial state", L * D * B * H));

  double *v[6] = {0};
  double *bufa = malloc((B * S * (NI > DH ? NI : DH) + 1) * sizeof(double));
  double *bufb = malloc((B * S * DH + 1) * sizeof(double));
  double *scratch = malloc((4 * H + 2 * G * H) * sizeof(double));
  rlx_status st = RLX_OK;
  bool ok = bufa && bufb && scratch;
  for (uint32_t i = 0; i < want && ok; i++) ok = (v[i] = sq_load(&in[i])) != NULL;
  if (!ok) {
    st = ru_error(RLX_ERR_OOM, n, "out of memory for the recurrence");
    goto done;
  }
  memcpy(bufa, v[0], B * S * NI * sizeof(double));
  const double *h0 = cf->carry ? v[3 + n_bias] : NULL, *c0 = cf->carry && n_state == 2 ? v[4 + n_bias] : NULL;
  size_t in_w = NI, wih_off = 0;
  double *cur = bufa, *nxt = bufb;
  for (size_t l = 0; l < L; l++) {
    for (size_t d = 0; d < D; d++) {
      size_t blk = l * D + d;
      run_direction(cf, B, S, in_w, cur, v[1] + wih_off, v[2] + blk * G * H * H, v[3] + blk * G * H,
                    n_bias == 2 ? v[4] + blk * G * H : NULL, h0 ? h0 + blk * B * H : NULL, c0 ? c0 + blk * B * H : NULL,
                    d == 1, nxt, DH, d * H, scratch);
      wih_off += G * H * in_w;
    }
    double *t = cur;
    cur = nxt;
    nxt = t;
    in_w = DH;
  }
  sq_store(out, cur, B * S * DH);
done:
  for (int i = 0; i < 6; i++) free(v[i]);
  free(bufa);
  free(bufb);
  free(scratch);
  return st;
}

RLX_CPU_KERNEL(Lstm) {
  (void)ctx;
  const rlx_attrs_Lstm *a = &n->attrs.Lstm;
  rnn_cfg cf = {CELL_LSTM, a->hidden_size, a->num_layers, a->bidirectional, a->carry, false};
  return run_rnn(n, in, n_in, out, &cf);
}

RLX_CPU_KERNEL(Gru) {
  (void)ctx;
  const rlx_attrs_Gru *a = &n->attrs.Gru;
  rnn_cfg cf = {CELL_GRU, a->hidden_size, a->num_layers, a->bidirectional, a->carry, false};
  return run_rnn(n, in, n_in, out, &cf);
}

RLX_CPU_KERNEL(Rnn) {
  (void)ctx;
  const rlx_attrs_Rnn *a = &n->attrs.Rnn;
  rnn_cfg cf = {CELL_RNN, a->hidden_size, a->num_layers, a->bidirectional, a->carry, a->relu};
  return run_rnn(n, in, n_in, out, &cf);
}
