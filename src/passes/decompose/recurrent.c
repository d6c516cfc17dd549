/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared decompositions of the sequence models (spec ir-special §2): per-timestep unrolls into
 * MatMul / Narrow / Reshape / elementwise / Concat, so any backend with those primitives runs them
 * and autodiff differentiates through them (none of these ops but GatedDeltaNet has a VJP rule of
 * its own). Every extent must be static: the unroll length is the sequence length.
 *
 *  - Lstm / Gru / Rnn: per (layer, direction) the input projection x W_ih^T + b is one MatMul over
 *    all steps; each step adds h W_hh^T and applies the cell (ref/recurrent.c states the cells and
 *    the weight packing). The reverse direction walks t = S-1 .. 0 and stores step t at t; the
 *    next layer reads [forward | reverse]. Initial states are not written back.
 *  - SelectiveScan / Mamba2 (the spec's default form): the decay exp(delta a) and the input term
 *    delta b x are formed for all steps at once and moved time-major, one Scan (body
 *    carry * decay_t + u_t, trajectory saved) runs the recurrence, and y = sum_i c h over the
 *    trajectory. Scan has its own VJP and its own unroll for backends without control flow.
 *  - GatedDeltaNet: the state S [B, H, n, n] is updated with batched [1, n] x [n, n] MatMuls.
 *  - GatedDeltaNetBackward: the forward unroll (keeping every state), then the reverse sweep of
 *    the recurrence written out in the same primitives (the formulas of ref/ssm.c), packed
 *    dq | dk | dv | dg | dbeta | (dstate). */
#include <math.h>
#include <stdlib.h>

#include "passes/decompose/decompose.h"

/* ---- small helpers ---- */

static rlx_status rs(rlx_graph *g, rlx_id x, uint32_t rank, const rlx_dim *dims, rlx_id *out) {
  return rlx_reshape_dims(g, x, rank, dims, out);
}
#define RS(G, X, OUT, ...) \
  rs(G, X, (uint32_t)(sizeof((rlx_dim[]){__VA_ARGS__}) / sizeof(rlx_dim)), (rlx_dim[]){__VA_ARGS__}, OUT)

static rlx_status need_static(const rlx_graph *g, const rlx_node *n, const rlx_id *in, uint32_t n_in) {
  for (uint32_t i = 0; i < n_in; i++) {
    rlx_shape s = dc_shape(g, in[i]);
    if (!dc_all_static(&s)) return dc_unsupported(n, "operand %u has a symbolic extent (the unroll needs them all)", i);
  }
  return RLX_OK;
}

static rlx_status flat(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  size_t cnt = 1;
  for (uint32_t i = 0; i < s.rank; i++) cnt *= (size_t)s.dims[i];
  return RS(g, x, out, (rlx_dim)cnt);
}

/* Row-vector slice [start, start + len) of a flat vector reshaped to dims. */
static rlx_status block(rlx_graph *g, rlx_id flatv, int64_t start, int64_t len, uint32_t rank, const rlx_dim *dims,
                        rlx_id *out) {
  rlx_id t;
  RLX_TRY(rlx_narrow(g, flatv, 0, start, len, &t));
  return rs(g, t, rank, dims, out);
}

static rlx_status transpose2(rlx_graph *g, rlx_id x, rlx_id *out) {
  int64_t p[2] = {1, 0};
  return rlx_permute(g, x, 2, p, out);
}

/* Growable id list (one entry per step). */
static rlx_id *ids_alloc(rlx_graph *g, size_t n) {
  const rlx_allocator *al = rlx_graph_allocator(g);
  return al->alloc(al->ctx, (n ? n : 1) * sizeof(rlx_id));
}
static void ids_free(rlx_graph *g, rlx_id *p) {
  const rlx_allocator *al = rlx_graph_allocator(g);
  al->free(al->ctx, p);
}

/* ---- Lstm / Gru / Rnn ---- */

typedef enum { DC_LSTM, DC_GRU, DC_RNN } dc_cell;

static rlx_status cell_step(rlx_graph *g, dc_cell kind, bool relu, int64_t H, rlx_id zi, rlx_id zh, rlx_id *h,
                            rlx_id *c) {
  rlx_id t0, t1, t2, t3;
  switch (kind) {
  case DC_LSTM: {
    rlx_id z, ig, fg, gg, og;
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, zi, zh, &z));
    RLX_TRY(rlx_narrow(g, z, 1, 0, H, &t0));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, t0, &ig));
    RLX_TRY(rlx_narrow(g, z, 1, H, H, &t0));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, t0, &fg));
    RLX_TRY(rlx_narrow(g, z, 1, 2 * H, H, &t0));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, t0, &gg));
    RLX_TRY(rlx_narrow(g, z, 1, 3 * H, H, &t0));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, t0, &og));
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, fg, *c, &t1));
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, ig, gg, &t2));
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, t1, t2, c));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, *c, &t3));
    return rlx_binary(g, RLX_BINOP_MUL, og, t3, h);
  }
  case DC_GRU: {
    rlx_id r, z, nn;
    RLX_TRY(rlx_narrow(g, zi, 1, 0, H, &t0));
    RLX_TRY(rlx_narrow(g, zh, 1, 0, H, &t1));
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, t0, t1, &t2));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, t2, &r));
    RLX_TRY(rlx_narrow(g, zi, 1, H, H, &t0));
    RLX_TRY(rlx_narrow(g, zh, 1, H, H, &t1));
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, t0, t1, &t2));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, t2, &z));
    RLX_TRY(rlx_narrow(g, zi, 1, 2 * H, H, &t0));
    RLX_TRY(rlx_narrow(g, zh, 1, 2 * H, H, &t1));
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, r, t1, &t2));
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, t0, t2, &t3));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, t3, &nn));
    /* h' = (1 - z) n + z h = n + z (h - n) */
    RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, *h, nn, &t0));
    RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, z, t0, &t1));
    return rlx_binary(g, RLX_BINOP_ADD, nn, t1, h);
  }
  case DC_RNN:
    RLX_TRY(rlx_binary(g, RLX_BINOP_ADD, zi, zh, &t0));
    return rlx_activation(g, relu ? RLX_ACT_RELU : RLX_ACT_TANH, t0, h);
  }
  return RLX_OK;
}

static rlx_status rnn_unroll(rlx_graph *g, const rlx_node *n, const rlx_id *in, dc_cell kind, int64_t H, int64_t L,
                             bool bidir, bool carry, bool relu, rlx_id *out) {
  uint32_t n_bias = kind == DC_GRU ? 2 : 1, n_state = kind == DC_LSTM ? 2 : 1;
  uint32_t n_in = 3 + n_bias + (carry ? n_state : 0);
  if (n->n_inputs != n_in) return rlx_errorf(RLX_ERR_INVALID_ARG, "%s: expected %u operands", rlx_op_name(n->op), n_in);
  RLX_TRY(need_static(g, n, in, n_in));
  rlx_shape xs = dc_shape(g, in[0]);
  rlx_dtype dt = (rlx_dtype)xs.dtype;
  int64_t B = xs.dims[0], S = xs.dims[1], I = xs.dims[2], D = bidir ? 2 : 1;
  int64_t G = kind == DC_LSTM ? 4 : kind == DC_GRU ? 3 : 1, GH = G * H, DH = D * H;
  if (S == 0 || B == 0) {
    rlx_dim od[3] = {B, S, DH};
    return rlx_fill(g, dt, 3, od, 0.0, out);
  }
  rlx_id wih, whh, b1, b2 = RLX_NO_ID, h0 = RLX_NO_ID, c0 = RLX_NO_ID;
  RLX_TRY(flat(g, in[1], &wih));
  RLX_TRY(flat(g, in[2], &whh));
  RLX_TRY(flat(g, in[3], &b1));
  if (n_bias == 2) RLX_TRY(flat(g, in[4], &b2));
  if (carry) {
    h0 = in[3 + n_bias];
    if (n_state == 2) c0 = in[4 + n_bias];
  }
  rlx_id *steps = ids_alloc(g, (size_t)S);
  if (!steps) return rlx_errorf(RLX_ERR_OOM, "out of memory unrolling %s", rlx_op_name(n->op));
  rlx_status st = RLX_OK;
  rlx_id layer_in = in[0];
  int64_t in_w = I, wih_off = 0;
  for (int64_t l = 0; l < L && !st; l++) {
    rlx_id dirs[2];
    for (int64_t d = 0; d < D && !st; d++) {
      int64_t blk = l * D + d;
      rlx_id Wi, Wh, WiT, WhT, bi, bh = RLX_NO_ID, xw, h, c = RLX_NO_ID, t;
      rlx_dim wid[2] = {GH, in_w}, whd[2] = {GH, H}, bd[1] = {GH}, bh2[2] = {B, H};
#define T_(x)          \
  do {                 \
    if (!st) st = (x); \
  } while (0)
      T_(block(g, wih, wih_off, GH * in_w, 2, wid, &Wi));
      T_(block(g, whh, blk * GH * H, GH * H, 2, whd, &Wh));
      T_(block(g, b1, blk * GH, GH, 1, bd, &bi));
      if (b2 != RLX_NO_ID) T_(block(g, b2, blk * GH, GH, 1, bd, &bh));
      T_(transpose2(g, Wi, &WiT));
      T_(transpose2(g, Wh, &WhT));
      T_(RS(g, layer_in, &t, B * S, in_w));
      T_(rlx_matmul(g, t, WiT, &xw));
      T_(rlx_binary(g, RLX_BINOP_ADD, xw, bi, &xw));
      T_(RS(g, xw, &xw, B, S, GH));
      if (h0 != RLX_NO_ID) {
        T_(rlx_narrow(g, h0, 0, blk, 1, &t));
        T_(rs(g, t, 2, bh2, &h));
      } else {
        T_(rlx_fill(g, dt, 2, bh2, 0.0, &h));
      }
      if (kind == DC_LSTM) {
        if (c0 != RLX_NO_ID) {
          T_(rlx_narrow(g, c0, 0, blk, 1, &t));
          T_(rs(g, t, 2, bh2, &c));
        } else {
          T_(rlx_fill(g, dt, 2, bh2, 0.0, &c));
        }
      }
      wih_off += GH * in_w;
      for (int64_t s = 0; s < S && !st; s++) {
        int64_t tt = d == 1 ? S - 1 - s : s;
        rlx_id zi, zh;
        T_(rlx_narrow(g, xw, 1, tt, 1, &zi));
        T_(RS(g, zi, &zi, B, GH));
        T_(rlx_matmul(g, h, WhT, &zh));
        if (bh != RLX_NO_ID) T_(rlx_binary(g, RLX_BINOP_ADD, zh, bh, &zh));
        T_(cell_step(g, kind, relu, H, zi, zh, &h, &c));
        T_(RS(g, h, &steps[tt], B, 1, H));
      }
      T_(rlx_concat(g, steps, (uint32_t)S, 1, &dirs[d]));
    }
    T_(rlx_concat(g, dirs, (uint32_t)D, 2, &layer_in));
    in_w = DH;
  }
#undef T_
  ids_free(g, steps);
  if (!st) *out = layer_in;
  return st;
}

RLX_DECOMPOSE_DECL(Lstm) {
  (void)src;
  const rlx_attrs_Lstm *a = &n->attrs.Lstm;
  return rnn_unroll(dst, n, in, DC_LSTM, a->hidden_size, a->num_layers, a->bidirectional, a->carry, false, out);
}

RLX_DECOMPOSE_DECL(Gru) {
  (void)src;
  const rlx_attrs_Gru *a = &n->attrs.Gru;
  return rnn_unroll(dst, n, in, DC_GRU, a->hidden_size, a->num_layers, a->bidirectional, a->carry, false, out);
}

RLX_DECOMPOSE_DECL(Rnn) {
  (void)src;
  const rlx_attrs_Rnn *a = &n->attrs.Rnn;
  return rnn_unroll(dst, n, in, DC_RNN, a->hidden_size, a->num_layers, a->bidirectional, a->carry, a->relu, out);
}

/* ---- SelectiveScan / Mamba2 ---- */

#define TRY_(x)        \
  do {                 \
    if (!st) st = (x); \
  } while (0)

/* One Scan over time-major steps: carry' = carry * decay_t + u_t, the whole trajectory saved.
 * decay, u are [S, ...carry] (decay may broadcast onto the carry); init is zeros of `carry`. */
static rlx_status scan_linear(rlx_graph *g, const rlx_node *n, rlx_id decay, rlx_id u, uint32_t rank,
                              const rlx_dim *carry, rlx_id *traj) {
  rlx_shape ds = dc_shape(g, decay), us = dc_shape(g, u);
  rlx_dtype dt = (rlx_dtype)us.dtype;
  rlx_graph *body = NULL;
  rlx_id init, c, a_t, u_t, y;
  RLX_TRY(rlx_fill(g, dt, rank, carry, 0.0, &init));
  RLX_TRY(rlx_graph_create_child(g, "scan_body", &body));
  RLX_TRY(rlx_input(body, "carry", rlx_shape_make(dt, rank, carry), &c));
  RLX_TRY(rlx_input(body, "decay", rlx_shape_make(dt, ds.rank - 1, ds.dims + 1), &a_t));
  RLX_TRY(rlx_input(body, "u", rlx_shape_make(dt, us.rank - 1, us.dims + 1), &u_t));
  RLX_TRY(rlx_binary(body, RLX_BINOP_MUL, c, a_t, &y));
  RLX_TRY(rlx_binary(body, RLX_BINOP_ADD, y, u_t, &y));
  RLX_TRY(rlx_graph_set_outputs(body, &y, 1));
  rlx_attrs_Scan a = {
      .body = body, .length = us.dims[0], .save_trajectory = true, .num_bcast = 0, .num_xs = 2, .num_checkpoints = 0};
  rlx_id in[3] = {init, decay, u};
  (void)n;
  return rlx_build_Scan(g, in, 3, &a, NULL, traj);
}

RLX_DECOMPOSE_DECL(SelectiveScan) {
  (void)src;
  RLX_TRY(need_static(dst, n, in, 5));
  rlx_shape xs = dc_shape(dst, in[0]);
  int64_t B = xs.dims[0], S = xs.dims[1], H = xs.dims[2], N = n->attrs.SelectiveScan.state_size;
  if (S == 0 || B == 0) return rlx_fill(dst, (rlx_dtype)xs.dtype, 3, xs.dims, 0.0, out);
  rlx_status st = RLX_OK;
  rlx_id d4, decay, dx, u, b4, c4, traj, y;
  int64_t tm[4] = {1, 0, 2, 3}, back[3] = {1, 0, 2}, ax = 3;
  TRY_(RS(dst, in[1], &d4, B, S, H, 1));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, d4, in[2], &decay)); /* exp(delta a): [B,S,H,1] * [H,n] */
  TRY_(rlx_activation(dst, RLX_ACT_EXP, decay, &decay));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, in[1], in[0], &dx));
  TRY_(RS(dst, dx, &dx, B, S, H, 1));
  TRY_(RS(dst, in[3], &b4, B, S, 1, N));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, dx, b4, &u)); /* delta x b: [B,S,H,n] */
  TRY_(rlx_permute(dst, decay, 4, tm, &decay));
  TRY_(rlx_permute(dst, u, 4, tm, &u));
  rlx_dim carry[3] = {B, H, N};
  TRY_(scan_linear(dst, n, decay, u, 3, carry, &traj)); /* [S,B,H,n] */
  TRY_(RS(dst, in[4], &c4, B, S, 1, N));
  TRY_(rlx_permute(dst, c4, 4, tm, &c4)); /* [S,B,1,n] */
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, traj, c4, &y));
  TRY_(rlx_reduce_axes(dst, RLX_REDUCE_SUM, y, 1, &ax, false, &y)); /* [S,B,H] */
  TRY_(rlx_permute(dst, y, 3, back, out));
  return st;
}

RLX_DECOMPOSE_DECL(Mamba2) {
  (void)src;
  RLX_TRY(need_static(dst, n, in, 5));
  rlx_shape xs = dc_shape(dst, in[0]);
  int64_t B = xs.dims[0], S = xs.dims[1], H = xs.dims[2], P = xs.dims[3], N = n->attrs.Mamba2.state_size;
  if (S == 0 || B == 0) return rlx_fill(dst, (rlx_dtype)xs.dtype, 4, xs.dims, 0.0, out);
  rlx_status st = RLX_OK;
  rlx_id decay, dt4, dx, u, b5, c5, traj, y;
  int64_t tm[5] = {1, 0, 2, 3, 4}, back[4] = {1, 0, 2, 3}, ax = 4;
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, in[1], in[2], &decay)); /* exp(dt a): [B,S,H] * [H] */
  TRY_(rlx_activation(dst, RLX_ACT_EXP, decay, &decay));
  TRY_(RS(dst, decay, &decay, B, S, H, 1, 1));
  TRY_(RS(dst, in[1], &dt4, B, S, H, 1));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, dt4, in[0], &dx)); /* [B,S,H,P] */
  TRY_(RS(dst, dx, &dx, B, S, H, P, 1));
  TRY_(RS(dst, in[3], &b5, B, S, H, 1, N));
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, dx, b5, &u)); /* dt x b: [B,S,H,P,n] */
  TRY_(rlx_permute(dst, decay, 5, tm, &decay));
  TRY_(rlx_permute(dst, u, 5, tm, &u));
  rlx_dim carry[4] = {B, H, P, N};
  TRY_(scan_linear(dst, n, decay, u, 4, carry, &traj)); /* [S,B,H,P,n] */
  TRY_(RS(dst, in[4], &c5, B, S, H, 1, N));
  TRY_(rlx_permute(dst, c5, 5, tm, &c5)); /* [S,B,H,1,n] */
  TRY_(rlx_binary(dst, RLX_BINOP_MUL, traj, c5, &y));
  TRY_(rlx_reduce_axes(dst, RLX_REDUCE_SUM, y, 1, &ax, false, &y)); /* [S,B,H,P] */
  TRY_(rlx_permute(dst, y, 4, back, out));
  return st;
}

/* ---- GatedDeltaNet ---- */

typedef struct gdn_ctx {
  rlx_graph *g;
  int64_t B, S, H, N;
  bool per_channel;
  rlx_dtype dt;
  rlx_id q, k, v, gate, beta; /* time-major views are taken per step */
} gdn_ctx;

/* Step t of a [B,S,H,...] operand as [B,H,r,c]. */
static rlx_status gdn_at(const gdn_ctx *c, rlx_id x, int64_t t, int64_t r, int64_t cols, rlx_id *out) {
  rlx_id s;
  RLX_TRY(rlx_narrow(c->g, x, 1, t, 1, &s));
  return RS(c->g, s, out, c->B, c->H, r, cols);
}

/* exp(g_t) as [B,H,1,1] or [B,H,n,1] (per channel). */
static rlx_status gdn_decay(const gdn_ctx *c, int64_t t, rlx_id *out) {
  rlx_id e;
  RLX_TRY(gdn_at(c, c->gate, t, c->per_channel ? c->N : 1, 1, &e));
  return rlx_activation(c->g, RLX_ACT_EXP, e, out);
}

/* Forward unroll from state S0 [B,H,n,n]; per step keeps the decayed state Sa[t] and the updated
 * state St[t] when those arrays are given, and the output row o[t] [B,1,H,n] when `o` is. */
static rlx_status gdn_forward(const gdn_ctx *c, rlx_id S0, rlx_id *Sa, rlx_id *St, rlx_id *o) {
  rlx_graph *g = c->g;
  rlx_status st = RLX_OK;
  rlx_id Sm = S0;
  double inv = 1.0 / sqrt((double)c->N);
  for (int64_t t = 0; t < c->S && !st; t++) {
    rlx_id e, kr, kc, vr, b, sk, d, upd, qr, y;
    TRY_(gdn_decay(c, t, &e));
    TRY_(rlx_binary(g, RLX_BINOP_MUL, Sm, e, &Sm));
    if (Sa) Sa[t] = Sm;
    TRY_(gdn_at(c, c->k, t, 1, c->N, &kr));
    TRY_(gdn_at(c, c->k, t, c->N, 1, &kc));
    TRY_(gdn_at(c, c->v, t, 1, c->N, &vr));
    TRY_(gdn_at(c, c->beta, t, 1, 1, &b));
    TRY_(rlx_matmul(g, kr, Sm, &sk));
    TRY_(rlx_binary(g, RLX_BINOP_SUB, vr, sk, &d));
    TRY_(rlx_binary(g, RLX_BINOP_MUL, d, b, &d));
    TRY_(rlx_matmul(g, kc, d, &upd));
    TRY_(rlx_binary(g, RLX_BINOP_ADD, Sm, upd, &Sm));
    if (St) St[t] = Sm;
    if (o) {
      TRY_(gdn_at(c, c->q, t, 1, c->N, &qr));
      TRY_(rlx_matmul(g, qr, Sm, &y));
      TRY_(rlx_binary_scalar(g, RLX_BINOP_MUL, y, inv, &y));
      TRY_(RS(g, y, &o[t], c->B, 1, c->H, c->N));
    }
  }
  return st;
}

static rlx_status gdn_setup(rlx_graph *g, const rlx_node *n, const rlx_id *in, bool carry, bool per_channel, int64_t N,
                            uint32_t n_in, gdn_ctx *c, rlx_id *S0) {
  RLX_TRY(need_static(g, n, in, n_in));
  rlx_shape qs = dc_shape(g, in[0]);
  *c = (gdn_ctx){g,     qs.dims[0], qs.dims[1], qs.dims[2], N,    per_channel, (rlx_dtype)qs.dtype,
                 in[0], in[1],      in[2],      in[3],      in[4]};
  if (carry) {
    *S0 = in[5];
    return RLX_OK;
  }
  rlx_dim sd[4] = {c->B, c->H, N, N};
  return rlx_fill(g, c->dt, 4, sd, 0.0, S0);
}

RLX_DECOMPOSE_DECL(GatedDeltaNet) {
  (void)src;
  const rlx_attrs_GatedDeltaNet *a = &n->attrs.GatedDeltaNet;
  gdn_ctx c;
  rlx_id S0;
  RLX_TRY(gdn_setup(dst, n, in, a->carry_state, a->gate_per_channel, a->state_size, a->carry_state ? 6 : 5, &c, &S0));
  rlx_shape qs = dc_shape(dst, in[0]);
  if (c.S == 0 || c.B == 0) return rlx_fill(dst, c.dt, 4, qs.dims, 0.0, out);
  rlx_id *o = ids_alloc(dst, (size_t)c.S);
  if (!o) return rlx_errorf(RLX_ERR_OOM, "out of memory unrolling GatedDeltaNet");
  rlx_status st = gdn_forward(&c, S0, NULL, NULL, o);
  TRY_(rlx_concat(dst, o, (uint32_t)c.S, 1, out));
  ids_free(dst, o);
  return st;
}

RLX_DECOMPOSE_DECL(GatedDeltaNetBackward) {
  (void)src;
  const rlx_attrs_GatedDeltaNetBackward *a = &n->attrs.GatedDeltaNetBackward;
  bool carry = a->carry_state, pc = a->gate_per_channel;
  uint32_t n_in = carry ? 7 : 6;
  gdn_ctx c;
  rlx_id S0;
  RLX_TRY(gdn_setup(dst, n, in, carry, pc, a->state_size, n_in, &c, &S0));
  rlx_graph *g = dst;
  int64_t B = c.B, S = c.S, H = c.H, N = c.N;
  if (S == 0 || B == 0 || H == 0) {
    rlx_dim tot = (rlx_dim)n->shape.dims[0];
    return rlx_fill(g, c.dt, 1, &tot, 0.0, out);
  }
  rlx_id dy = in[n_in - 1];
  size_t n_arr = (size_t)S * 7;
  rlx_id *arr = ids_alloc(g, n_arr);
  if (!arr) return rlx_errorf(RLX_ERR_OOM, "out of memory unrolling GatedDeltaNetBackward");
  rlx_id *Sa = arr, *St = Sa + S, *dq = St + S, *dk = dq + S, *dv = dk + S, *dg = dv + S, *db = dg + S;
  rlx_status st = gdn_forward(&c, S0, Sa, St, NULL);
  double inv = 1.0 / sqrt((double)N);
  rlx_id dS;
  rlx_dim sd[4] = {B, H, N, N};
  TRY_(rlx_fill(g, c.dt, 4, sd, 0.0, &dS));
  for (int64_t t = S - 1; t >= 0 && !st; t--) {
    rlx_id dyr, dyc, qc, kr, kc, vr, b, e, x, sk, r, dd, rb, rbc, dskr, dskc, t1, t2, dSa;
    TRY_(gdn_at(&c, dy, t, 1, N, &dyr));
    TRY_(gdn_at(&c, dy, t, N, 1, &dyc));
    TRY_(gdn_at(&c, c.q, t, N, 1, &qc));
    TRY_(gdn_at(&c, c.k, t, 1, N, &kr));
    TRY_(gdn_at(&c, c.k, t, N, 1, &kc));
    TRY_(gdn_at(&c, c.v, t, 1, N, &vr));
    TRY_(gdn_at(&c, c.beta, t, 1, 1, &b));
    /* o = St^T q / sqrt(n): dq = St dy / sqrt(n); dS += q dy^T / sqrt(n) */
    TRY_(rlx_matmul(g, St[t], dyc, &x));
    TRY_(rlx_binary_scalar(g, RLX_BINOP_MUL, x, inv, &x));
    TRY_(RS(g, x, &dq[t], B, 1, H, N));
    TRY_(rlx_matmul(g, qc, dyr, &x));
    TRY_(rlx_binary_scalar(g, RLX_BINOP_MUL, x, inv, &x));
    TRY_(rlx_binary(g, RLX_BINOP_ADD, dS, x, &dS));
    /* r = v - Sa^T k; St = Sa + k (r beta)^T */
    TRY_(rlx_matmul(g, kr, Sa[t], &sk));
    TRY_(rlx_binary(g, RLX_BINOP_SUB, vr, sk, &r));
    TRY_(rlx_matmul(g, kr, dS, &dd)); /* [B,H,1,n] */
    TRY_(rlx_binary(g, RLX_BINOP_MUL, dd, b, &x));
    TRY_(RS(g, x, &dv[t], B, 1, H, N));
    TRY_(rlx_binary_scalar(g, RLX_BINOP_MUL, x, -1.0, &dskr)); /* dsk = -dd beta */
    TRY_(rlx_binary(g, RLX_BINOP_MUL, dd, r, &x));
    int64_t last = 3;
    TRY_(rlx_reduce_axes(g, RLX_REDUCE_SUM, x, 1, &last, false, &x));
    TRY_(RS(g, x, &db[t], B, 1, H));
    TRY_(rlx_binary(g, RLX_BINOP_MUL, r, b, &rb));
    TRY_(RS(g, rb, &rbc, B, H, N, 1));
    TRY_(RS(g, dskr, &dskc, B, H, N, 1));
    TRY_(rlx_matmul(g, dS, rbc, &t1));
    TRY_(rlx_matmul(g, Sa[t], dskc, &t2));
    TRY_(rlx_binary(g, RLX_BINOP_ADD, t1, t2, &x));
    TRY_(RS(g, x, &dk[t], B, 1, H, N));
    /* dSa = dS + k dsk^T; Sa = e S_{t-1}: dg = sum(dSa * Sa), dS_{t-1} = e dSa */
    TRY_(rlx_matmul(g, kc, dskr, &x));
    TRY_(rlx_binary(g, RLX_BINOP_ADD, dS, x, &dSa));
    TRY_(rlx_binary(g, RLX_BINOP_MUL, dSa, Sa[t], &x));
    if (pc) {
      TRY_(rlx_reduce_axes(g, RLX_REDUCE_SUM, x, 1, &last, false, &x));
      TRY_(RS(g, x, &dg[t], B, 1, H, N));
    } else {
      int64_t ax[2] = {2, 3};
      TRY_(rlx_reduce_axes(g, RLX_REDUCE_SUM, x, 2, ax, false, &x));
      TRY_(RS(g, x, &dg[t], B, 1, H));
    }
    TRY_(gdn_decay(&c, t, &e));
    TRY_(rlx_binary(g, RLX_BINOP_MUL, dSa, e, &dS));
  }
  rlx_id parts[6];
  rlx_id *lists[5] = {dq, dk, dv, dg, db};
  for (int i = 0; i < 5 && !st; i++) {
    TRY_(rlx_concat(g, lists[i], (uint32_t)S, 1, &parts[i]));
    TRY_(flat(g, parts[i], &parts[i]));
  }
  uint32_t np = 5;
  if (carry) TRY_(flat(g, dS, &parts[np++]));
  TRY_(rlx_concat(g, parts, np, 0, out));
  ids_free(g, arr);
  return st;
}
