/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: state-space and recurrent ops (spec ir-special §2). All operands share operand 0's
 * floating-point dtype. */
#include "infer_special.h"

/* Every operand in [0, n) is float with operand 0's dtype. */
static rlx_status same_float(const rlx_infer_ctx *c, uint32_t n, const char *const *roles) {
  RLX_TRY(sp_float(c, 0, roles[0]));
  for (uint32_t i = 1; i < n; i++) RLX_TRY(sp_same_dtype(c, i, roles[i], 0));
  return RLX_OK;
}

static rlx_status need_positive(const char *name, int64_t v) {
  if (v < 1) return rlx_shape_error("attribute %s: %lld must be >= 1", name, (long long)v);
  return RLX_OK;
}

rlx_status rlx_infer_SelectiveScan(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"x", "delta", "a", "b", "c"};
  int64_t n = c->a->SelectiveScan.state_size;
  RLX_TRY(sp_arity(c, 5, "x, delta, a, b, c"));
  RLX_TRY(need_positive("state_size", n));
  RLX_TRY(same_float(c, 5, roles));
  RLX_TRY(sp_rank(c, 0, "x", 3));
  const rlx_dim *x = c->in[0]->dims;
  rlx_dim bsh[3] = {x[0], x[1], x[2]}, hn[2] = {x[2], n}, bsn[3] = {x[0], x[1], n};
  RLX_TRY(sp_expect(c, 1, "delta", "[B, S, H]", 3, bsh));
  RLX_TRY(sp_expect(c, 2, "a", "[H, state_size]", 2, hn));
  RLX_TRY(sp_expect(c, 3, "b", "[B, S, state_size]", 3, bsn));
  RLX_TRY(sp_expect(c, 4, "c", "[B, S, state_size]", 3, bsn));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_Mamba2(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const roles[] = {"x", "dt", "a", "b", "c"};
  const rlx_attrs_Mamba2 *a = &c->a->Mamba2;
  RLX_TRY(sp_arity(c, 5, "x, dt, a, b, c"));
  RLX_TRY(need_positive("head_dim", a->head_dim));
  RLX_TRY(need_positive("state_size", a->state_size));
  RLX_TRY(same_float(c, 5, roles));
  RLX_TRY(sp_rank(c, 0, "x", 4));
  RLX_TRY(sp_dim_eq(c, 0, "x", 3, a->head_dim, "attribute head_dim"));
  const rlx_dim *x = c->in[0]->dims;
  rlx_dim bsh[3] = {x[0], x[1], x[2]}, h[1] = {x[2]}, bshn[4] = {x[0], x[1], x[2], a->state_size};
  RLX_TRY(sp_expect(c, 1, "dt", "[B, S, H]", 3, bsh));
  RLX_TRY(sp_expect(c, 2, "a", "[H]", 1, h));
  RLX_TRY(sp_expect(c, 3, "b", "[B, S, H, state_size]", 4, bshn));
  RLX_TRY(sp_expect(c, 4, "c", "[B, S, H, state_size]", 4, bshn));
  *out = *c->in[0];
  return RLX_OK;
}

/* q, k, v [B,S,H,n], g [B,S,H] (or [B,S,H,n] per channel), beta [B,S,H], state [B,H,n,n]. */
static rlx_status check_gdn(const rlx_infer_ctx *c, int64_t n, bool carry, bool per_channel) {
  static const char *const roles[] = {"q", "k", "v", "g", "beta", "state"};
  RLX_TRY(need_positive("state_size", n));
  RLX_TRY(same_float(c, carry ? 6 : 5, roles));
  RLX_TRY(sp_rank(c, 0, "q", 4));
  RLX_TRY(sp_dim_eq(c, 0, "q", 3, n, "attribute state_size"));
  const rlx_dim *q = c->in[0]->dims;
  rlx_dim bshn[4] = {q[0], q[1], q[2], n}, bsh[3] = {q[0], q[1], q[2]}, bhnn[4] = {q[0], q[2], n, n};
  RLX_TRY(sp_expect(c, 1, "k", "[B, S, H, state_size]", 4, bshn));
  RLX_TRY(sp_expect(c, 2, "v", "[B, S, H, state_size]", 4, bshn));
  if (per_channel)
    RLX_TRY(sp_expect(c, 3, "g", "[B, S, H, state_size] (gate_per_channel)", 4, bshn));
  else
    RLX_TRY(sp_expect(c, 3, "g", "[B, S, H]", 3, bsh));
  RLX_TRY(sp_expect(c, 4, "beta", "[B, S, H]", 3, bsh));
  if (carry) RLX_TRY(sp_expect(c, 5, "state", "[B, H, state_size, state_size]", 4, bhnn));
  return RLX_OK;
}

rlx_status rlx_infer_GatedDeltaNet(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GatedDeltaNet *a = &c->a->GatedDeltaNet;
  RLX_TRY(sp_arity(c, a->carry_state ? 6 : 5,
                   a->carry_state ? "q, k, v, g, beta, state for carry_state" : "q, k, v, g, beta"));
  RLX_TRY(check_gdn(c, a->state_size, a->carry_state, a->gate_per_channel));
  *out = *c->in[0];
  return RLX_OK;
}

/* Packed dq | dk | dv | dg | dbeta | (dstate): 3*BSHn + (BSHn or BSH) + BSH + (B*H*n*n). */
rlx_status rlx_infer_GatedDeltaNetBackward(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_GatedDeltaNetBackward *a = &c->a->GatedDeltaNetBackward;
  bool carry = a->carry_state;
  RLX_TRY(sp_arity(c, carry ? 7 : 6, carry ? "q, k, v, g, beta, state, dy for carry_state" : "q, k, v, g, beta, dy"));
  RLX_TRY(check_gdn(c, a->state_size, carry, a->gate_per_channel));
  uint32_t dyi = carry ? 6 : 5;
  RLX_TRY(sp_same_dtype(c, dyi, "dy", 0));
  RLX_TRY(sp_shape_eq(c, dyi, "dy", c->in[0], "the upstream gradient has q's shape"));
  const rlx_dim *q = c->in[0]->dims;
  rlx_dim bsh, bshn, total, t;
  RLX_TRY(sp_mul(q[0], q[1], &bsh));
  RLX_TRY(sp_mul(bsh, q[2], &bsh));
  RLX_TRY(sp_mul(bsh, a->state_size, &bshn));
  RLX_TRY(sp_mul(bshn, a->gate_per_channel ? 4 : 3, &total));
  RLX_TRY(sp_add(total, a->gate_per_channel ? 0 : bsh, &total));
  RLX_TRY(sp_add(total, bsh, &total));
  if (carry) {
    RLX_TRY(sp_mul(q[0], q[2], &t));
    RLX_TRY(sp_mul(t, a->state_size, &t));
    RLX_TRY(sp_mul(t, a->state_size, &t));
    RLX_TRY(sp_add(total, t, &total));
  }
  *out = sp_make((rlx_dtype)c->in[0]->dtype, 1, &total);
  return sp_resolve(c, out);
}

/* ---- Lstm / Gru / Rnn ----
 * Weights are packed layer-major then direction; block (l, d) of w_ih is [G*H, in_l] with
 * in_0 = I and in_l = D*H, w_hh blocks are [G*H, H], bias blocks [G*H]. Block widths differ between
 * layers, so the packed operands are checked by element count (any rank). */
typedef struct rnn_spec {
  int64_t gates;
  uint32_t n_bias;  /* 1 combined bias (Lstm, Rnn) or 2 (Gru: b_ih, b_hh) */
  uint32_t n_state; /* initial states when carrying: 2 (h0, c0) or 1 (h0) */
} rnn_spec;

static rlx_status check_rnn(const rlx_infer_ctx *c, const rnn_spec *sp, int64_t hidden, int64_t layers, bool bidir,
                            bool carry, rlx_shape *out) {
  static const char *const lstm_rnn[] = {"x", "w_ih", "w_hh", "bias", "h0", "c0"};
  static const char *const gru[] = {"x", "w_ih", "w_hh", "b_ih", "b_hh", "h0"};
  const char *const *names = sp->n_bias == 2 ? gru : lstm_rnn;
  uint32_t n = 3 + sp->n_bias, n_total = n + (carry ? sp->n_state : 0);
  if (c->n_in != n_total)
    return rlx_errorf(RLX_ERR_VERIFY, "needs exactly %u operands (x, w_ih, w_hh, %s%s), got %u", n_total,
                      sp->n_bias == 2 ? "b_ih, b_hh" : "bias",
                      carry ? (sp->n_state == 2 ? ", h0, c0 for carry" : ", h0 for carry") : "", c->n_in);
  RLX_TRY(need_positive("hidden_size", hidden));
  RLX_TRY(need_positive("num_layers", layers));
  RLX_TRY(same_float(c, n_total, names));
  RLX_TRY(sp_rank(c, 0, "x", 3));
  const rlx_dim *x = c->in[0]->dims;
  int64_t dirs = bidir ? 2 : 1, gh, dh, ld, per_layer, rest, want;
  /* gh = G*H; w_ih = D*gh*(I + (L-1)*D*H); w_hh = L*D*gh*H; bias = L*D*gh. */
  if (!ck_mul(sp->gates, hidden, &gh) || !ck_mul(dirs, hidden, &dh) || !ck_mul(layers, dirs, &ld))
    return sp_overflow("recurrent weight size");
  if (sp_static(x[2])) {
    if (!ck_mul(layers - 1, dh, &rest) || !ck_add(rest, x[2], &per_layer) || !ck_mul(per_layer, gh, &want) ||
        !ck_mul(want, dirs, &want))
      return sp_overflow("w_ih size");
    RLX_TRY(sp_count_eq(c, 1, "w_ih", want, "sum over layers and directions of [G*H, in_l], in_0 = I, in_l = D*H"));
  }
  RLX_TRY(ck_mul_or(ld, gh, &want, "the bias size num_layers * directions * G * hidden_size"));
  for (uint32_t i = 3; i < n; i++)
    RLX_TRY(sp_count_eq(c, i, names[i], want, "num_layers * directions * G * hidden_size"));
  RLX_TRY(ck_mul_or(want, hidden, &want, "the w_hh size"));
  RLX_TRY(sp_count_eq(c, 2, "w_hh", want, "num_layers * directions blocks of [G*H, H]"));
  rlx_dim st[3] = {ld, x[0], hidden};
  for (uint32_t i = n; i < n_total; i++)
    RLX_TRY(sp_expect(c, i, names[i], "[num_layers * directions, B, hidden_size]", 3, st));
  rlx_dim o[3] = {x[0], x[1], dh};
  *out = sp_make((rlx_dtype)c->in[0]->dtype, 3, o);
  return RLX_OK;
}

rlx_status rlx_infer_Lstm(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Lstm *a = &c->a->Lstm;
  static const rnn_spec sp = {4, 1, 2};
  return check_rnn(c, &sp, a->hidden_size, a->num_layers, a->bidirectional, a->carry, out);
}

rlx_status rlx_infer_Gru(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Gru *a = &c->a->Gru;
  static const rnn_spec sp = {3, 2, 1};
  return check_rnn(c, &sp, a->hidden_size, a->num_layers, a->bidirectional, a->carry, out);
}

rlx_status rlx_infer_Rnn(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Rnn *a = &c->a->Rnn;
  static const rnn_spec sp = {1, 1, 1};
  return check_rnn(c, &sp, a->hidden_size, a->num_layers, a->bidirectional, a->carry, out);
}
