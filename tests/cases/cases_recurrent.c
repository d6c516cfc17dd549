/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Conformance cases: sequence models and state-space recurrences (spec ir-special §2). See cases.h
 * for the row format. Weight operand sizes follow the packing of ir-special §2: w_ih holds
 * D * G*H * (I + (L-1) * D*H) values, w_hh L*D * G*H*H, each bias L*D * G*H (G = 4 Lstm, 3 Gru,
 * 1 Rnn). The float64 references are torch.nn.LSTM / GRU / RNN (ref_recurrent.py) and NumPy
 * recurrences written from the spec. */
#include "cases.h"

#define LSTM(H, L, BI, C) AT(Lstm, .hidden_size = H, .num_layers = L, .bidirectional = BI, .carry = C)
#define GRU(H, L, BI, C) AT(Gru, .hidden_size = H, .num_layers = L, .bidirectional = BI, .carry = C)
#define RNN(H, L, BI, C, R) AT(Rnn, .hidden_size = H, .num_layers = L, .bidirectional = BI, .carry = C, .relu = R)
#define W(DT, ...) INF(DT, CF_NORMAL, 0.4, 0, __VA_ARGS__)
#define GDN(N, C, PC) AT(GatedDeltaNet, .state_size = N, .carry_state = C, .gate_per_channel = PC)
#define GDNB(N, C, PC) AT(GatedDeltaNetBackward, .state_size = N, .carry_state = C, .gate_per_channel = PC)
#define QK(DT, ...) INF(DT, CF_NORMAL, 0.3, 0, __VA_ARGS__)
#define GATE(DT, ...) INF(DT, CF_UNIFORM, -0.6, 0, __VA_ARGS__)
#define BETA(DT, ...) INF(DT, CF_UNIFORM, 0, 1, __VA_ARGS__)

static const conf_case conf_cases_recurrent[] = {
    /* ---- Lstm: B, S, I, H; w_ih = D*4H*(I + (L-1)*D*H) ---- */
    {"lstm_f32_uni", RLX_OP_Lstm, LSTM(4, 1, false, false), 4,
     {IN(F32, 2, 5, 3), W(F32, 48), W(F32, 64), W(F32, 16)}},
    {"lstm_f32_bidir", RLX_OP_Lstm, LSTM(3, 1, true, false), 4,
     {IN(F32, 2, 4, 5), W(F32, 120), W(F32, 72), W(F32, 24)}},
    {"lstm_f64_2layer_bidir_carry", RLX_OP_Lstm, LSTM(3, 2, true, true), 6,
     {IN(F64, 3, 4, 2), W(F64, 2 * 12 * (2 + 6)), W(F64, 4 * 12 * 3), W(F64, 4 * 12), W(F64, 4, 3, 3),
      W(F64, 4, 3, 3)}},
    {"lstm_f64_2layer_carry", RLX_OP_Lstm, LSTM(2, 2, false, true), 6,
     {IN(F64, 2, 6, 3), W(F64, 8 * (3 + 2)), W(F64, 2 * 8 * 2), W(F64, 2 * 8), W(F64, 2, 2, 2), W(F64, 2, 2, 2)}},
    {"lstm_f32_seq1", RLX_OP_Lstm, LSTM(5, 1, false, false), 4, {IN(F32, 1, 1, 2), W(F32, 40), W(F32, 100), W(F32, 20)}},
    {"lstm_f32_empty_seq", RLX_OP_Lstm, LSTM(2, 1, true, false), 4,
     {IN(F32, 2, 0, 3), W(F32, 2 * 8 * 3), W(F32, 2 * 8 * 2), W(F32, 16)}},
    /* ---- Gru: b_ih and b_hh ---- */
    {"gru_f32_uni", RLX_OP_Gru, GRU(4, 1, false, false), 5,
     {IN(F32, 2, 5, 3), W(F32, 36), W(F32, 48), W(F32, 12), W(F32, 12)}},
    {"gru_f32_bidir_carry", RLX_OP_Gru, GRU(3, 1, true, true), 6,
     {IN(F32, 2, 4, 2), W(F32, 2 * 9 * 2), W(F32, 2 * 9 * 3), W(F32, 18), W(F32, 18), W(F32, 2, 2, 3)}},
    {"gru_f64_3layer_bidir", RLX_OP_Gru, GRU(2, 3, true, false), 5,
     {IN(F64, 2, 3, 3), W(F64, 2 * 6 * (3 + 2 * 4)), W(F64, 6 * 6 * 2), W(F64, 36), W(F64, 36)}},
    {"gru_f64_2layer_carry", RLX_OP_Gru, GRU(3, 2, false, true), 6,
     {IN(F64, 1, 5, 2), W(F64, 9 * (2 + 3)), W(F64, 2 * 9 * 3), W(F64, 18), W(F64, 18), W(F64, 2, 1, 3)}},
    /* ---- Rnn: tanh and relu ---- */
    {"rnn_f32_tanh", RLX_OP_Rnn, RNN(4, 1, false, false, false), 4,
     {IN(F32, 2, 6, 3), W(F32, 12), W(F32, 16), W(F32, 4)}},
    {"rnn_f32_relu_bidir", RLX_OP_Rnn, RNN(3, 1, true, false, true), 4,
     {IN(F32, 3, 4, 2), W(F32, 12), W(F32, 18), W(F32, 6)}},
    {"rnn_f64_2layer_bidir_carry", RLX_OP_Rnn, RNN(3, 2, true, true, false), 5,
     {IN(F64, 2, 5, 4), W(F64, 2 * 3 * (4 + 6)), W(F64, 4 * 9), W(F64, 12), W(F64, 4, 2, 3)}},
    {"rnn_f64_relu_2layer_carry", RLX_OP_Rnn, RNN(2, 2, false, true, true), 5,
     {IN(F64, 2, 4, 3), W(F64, 2 * (3 + 2)), W(F64, 8), W(F64, 4), W(F64, 2, 2, 2)}},
    /* ---- arbitrary shapes (drawn once with Python's random, seed 20261201): B 1-3, S 1-7, I 1-5,
     * H 1-5, 1-3 layers, either direction, with and without initial states ---- */
    {"lstm_rand0_f32_b1s2i2h2l1_bidir", RLX_OP_Lstm, LSTM(2, 1, true, false), 4,
     {IN(F32, 1, 2, 2), W(F32, 32), W(F32, 32), W(F32, 16)}},
    {"gru_rand1_f32_b1s2i3h1l2", RLX_OP_Gru, GRU(1, 2, false, false), 5,
     {IN(F32, 1, 2, 3), W(F32, 12), W(F32, 6), W(F32, 6), W(F32, 6)}},
    {"rnn_rand2_f64_b2s7i2h5l3", RLX_OP_Rnn, RNN(5, 3, false, false, false), 4,
     {IN(F64, 2, 7, 2), W(F64, 60), W(F64, 75), W(F64, 15)}},
    {"lstm_rand3_f64_b2s4i5h5l3_bidir_carry", RLX_OP_Lstm, LSTM(5, 3, true, true), 6,
     {IN(F64, 2, 4, 5), W(F64, 1000), W(F64, 600), W(F64, 120), W(F64, 6, 2, 5), W(F64, 6, 2, 5)}},
    {"gru_rand4_f64_b1s6i3h3l1_carry", RLX_OP_Gru, GRU(3, 1, false, true), 6,
     {IN(F64, 1, 6, 3), W(F64, 27), W(F64, 27), W(F64, 9), W(F64, 9), W(F64, 1, 1, 3)}},
    {"rnn_rand5_f64_b1s3i4h1l1_carry", RLX_OP_Rnn, RNN(1, 1, false, true, false), 5,
     {IN(F64, 1, 3, 4), W(F64, 4), W(F64, 1), W(F64, 1), W(F64, 1, 1, 1)}},
    {"lstm_rand6_f64_b1s2i5h2l3_bidir_carry", RLX_OP_Lstm, LSTM(2, 3, true, true), 6,
     {IN(F64, 1, 2, 5), W(F64, 208), W(F64, 96), W(F64, 48), W(F64, 6, 1, 2), W(F64, 6, 1, 2)}},
    {"gru_rand7_f64_b1s7i5h5l1", RLX_OP_Gru, GRU(5, 1, false, false), 5,
     {IN(F64, 1, 7, 5), W(F64, 75), W(F64, 75), W(F64, 15), W(F64, 15)}},
    {"rnn_rand8_f64_b1s2i3h1l3", RLX_OP_Rnn, RNN(1, 3, false, false, false), 4,
     {IN(F64, 1, 2, 3), W(F64, 5), W(F64, 3), W(F64, 3)}},
    {"lstm_rand9_f64_b3s2i3h1l2", RLX_OP_Lstm, LSTM(1, 2, false, false), 4,
     {IN(F64, 3, 2, 3), W(F64, 16), W(F64, 8), W(F64, 8)}},
    {"gru_rand10_f64_b1s3i5h5l2_bidir", RLX_OP_Gru, GRU(5, 2, true, false), 5,
     {IN(F64, 1, 3, 5), W(F64, 450), W(F64, 300), W(F64, 60), W(F64, 60)}},
    {"rnn_rand11_f32_b1s3i1h2l3_bidir_carry_relu", RLX_OP_Rnn, RNN(2, 3, true, true, true), 5,
     {IN(F32, 1, 3, 1), W(F32, 36), W(F32, 24), W(F32, 12), W(F32, 6, 1, 2)}},
    {"lstm_rand12_f64_b2s6i1h5l1_carry", RLX_OP_Lstm, LSTM(5, 1, false, true), 6,
     {IN(F64, 2, 6, 1), W(F64, 20), W(F64, 100), W(F64, 20), W(F64, 1, 2, 5), W(F64, 1, 2, 5)}},
    {"gru_rand13_f32_b3s4i5h4l2_carry", RLX_OP_Gru, GRU(4, 2, false, true), 6,
     {IN(F32, 3, 4, 5), W(F32, 108), W(F32, 96), W(F32, 24), W(F32, 24), W(F32, 2, 3, 4)}},
    {"rnn_rand14_f64_b1s7i1h1l2_bidir_carry_relu", RLX_OP_Rnn, RNN(1, 2, true, true, true), 5,
     {IN(F64, 1, 7, 1), W(F64, 6), W(F64, 4), W(F64, 4), W(F64, 4, 1, 1)}},
    {"lstm_rand15_f64_b3s5i4h1l2_bidir_carry", RLX_OP_Lstm, LSTM(1, 2, true, true), 6,
     {IN(F64, 3, 5, 4), W(F64, 48), W(F64, 16), W(F64, 16), W(F64, 4, 3, 1), W(F64, 4, 3, 1)}},
    {"gru_rand16_f32_b3s3i2h5l2_carry", RLX_OP_Gru, GRU(5, 2, false, true), 6,
     {IN(F32, 3, 3, 2), W(F32, 105), W(F32, 150), W(F32, 30), W(F32, 30), W(F32, 2, 3, 5)}},
    {"rnn_rand17_f32_b1s3i1h3l1_relu", RLX_OP_Rnn, RNN(3, 1, false, false, true), 4,
     {IN(F32, 1, 3, 1), W(F32, 3), W(F32, 9), W(F32, 3)}},
    /* ---- SelectiveScan: x, delta [B,S,H], a [H,n], b, c [B,S,n] ---- */
    {"selective_scan_f32", RLX_OP_SelectiveScan, AT(SelectiveScan, .state_size = 4), 5,
     {IN(F32, 2, 7, 3), INF(F32, CF_UNIFORM, 0, 1, 2, 7, 3), INF(F32, CF_UNIFORM, -1, 0, 3, 4), IN(F32, 2, 7, 4),
      IN(F32, 2, 7, 4)}},
    {"selective_scan_f64_n1", RLX_OP_SelectiveScan, AT(SelectiveScan, .state_size = 1), 5,
     {IN(F64, 1, 9, 2), INF(F64, CF_UNIFORM, 0, 1, 1, 9, 2), INF(F64, CF_UNIFORM, -1, 0, 2, 1), IN(F64, 1, 9, 1),
      IN(F64, 1, 9, 1)}},
    /* ---- Mamba2: x [B,S,H,P], dt [B,S,H], a [H], b, c [B,S,H,n] ---- */
    {"mamba2_f32", RLX_OP_Mamba2, AT(Mamba2, .head_dim = 3, .state_size = 4), 5,
     {IN(F32, 2, 6, 2, 3), INF(F32, CF_UNIFORM, 0, 1, 2, 6, 2), INF(F32, CF_UNIFORM, -1, 0, 2), IN(F32, 2, 6, 2, 4),
      IN(F32, 2, 6, 2, 4)}},
    {"mamba2_f64", RLX_OP_Mamba2, AT(Mamba2, .head_dim = 2, .state_size = 3), 5,
     {IN(F64, 1, 8, 3, 2), INF(F64, CF_UNIFORM, 0, 1, 1, 8, 3), INF(F64, CF_UNIFORM, -1, 0, 3), IN(F64, 1, 8, 3, 3),
      IN(F64, 1, 8, 3, 3)}},
    /* ---- GatedDeltaNet: q, k, v [B,S,H,n], g [B,S,H] or [B,S,H,n], beta [B,S,H], state [B,H,n,n] ---- */
    {"gdn_f32", RLX_OP_GatedDeltaNet, GDN(4, false, false), 5,
     {QK(F32, 2, 5, 2, 4), QK(F32, 2, 5, 2, 4), IN(F32, 2, 5, 2, 4), GATE(F32, 2, 5, 2), BETA(F32, 2, 5, 2)}},
    {"gdn_f64_carry", RLX_OP_GatedDeltaNet, GDN(3, true, false), 6,
     {QK(F64, 1, 6, 2, 3), QK(F64, 1, 6, 2, 3), IN(F64, 1, 6, 2, 3), GATE(F64, 1, 6, 2), BETA(F64, 1, 6, 2),
      IN(F64, 1, 2, 3, 3)}},
    {"gdn_f64_per_channel_carry", RLX_OP_GatedDeltaNet, GDN(3, true, true), 6,
     {QK(F64, 2, 4, 1, 3), QK(F64, 2, 4, 1, 3), IN(F64, 2, 4, 1, 3), GATE(F64, 2, 4, 1, 3), BETA(F64, 2, 4, 1),
      IN(F64, 2, 1, 3, 3)}},
    {"gdn_f32_per_channel", RLX_OP_GatedDeltaNet, GDN(2, false, true), 5,
     {QK(F32, 1, 7, 3, 2), QK(F32, 1, 7, 3, 2), IN(F32, 1, 7, 3, 2), GATE(F32, 1, 7, 3, 2), BETA(F32, 1, 7, 3)}},
    /* ---- GatedDeltaNetBackward: packed dq | dk | dv | dg | dbeta | (dstate) ---- */
    {"gdn_backward_f64", RLX_OP_GatedDeltaNetBackward, GDNB(3, false, false), 6,
     {QK(F64, 2, 4, 2, 3), QK(F64, 2, 4, 2, 3), IN(F64, 2, 4, 2, 3), GATE(F64, 2, 4, 2), BETA(F64, 2, 4, 2),
      IN(F64, 2, 4, 2, 3)}},
    {"gdn_backward_f64_carry_per_channel", RLX_OP_GatedDeltaNetBackward, GDNB(3, true, true), 7,
     {QK(F64, 1, 5, 2, 3), QK(F64, 1, 5, 2, 3), IN(F64, 1, 5, 2, 3), GATE(F64, 1, 5, 2, 3), BETA(F64, 1, 5, 2),
      IN(F64, 1, 2, 3, 3), IN(F64, 1, 5, 2, 3)}},
    {"gdn_backward_f32_carry", RLX_OP_GatedDeltaNetBackward, GDNB(2, true, false), 7,
     {QK(F32, 1, 4, 1, 2), QK(F32, 1, 4, 1, 2), IN(F32, 1, 4, 1, 2), GATE(F32, 1, 4, 1), BETA(F32, 1, 4, 1),
      IN(F32, 1, 1, 2, 2), IN(F32, 1, 4, 1, 2)}},
    /* ---- half precision (computed in double by the kernels; the decompositions round every step) ---- */
    {"lstm_f16_bidir", RLX_OP_Lstm, LSTM(3, 1, true, false), 4,
     {IN(F16, 2, 4, 5), W(F16, 120), W(F16, 72), W(F16, 24)}, .tol = 4},
    {"gru_bf16", RLX_OP_Gru, GRU(4, 1, false, false), 5,
     {IN(BF16, 2, 5, 3), W(BF16, 36), W(BF16, 48), W(BF16, 12), W(BF16, 12)}, .tol = 4},
    {"rnn_f16_relu", RLX_OP_Rnn, RNN(4, 1, false, false, true), 4,
     {IN(F16, 2, 6, 3), W(F16, 12), W(F16, 16), W(F16, 4)}, .tol = 4},
    {"selective_scan_bf16", RLX_OP_SelectiveScan, AT(SelectiveScan, .state_size = 2), 5,
     {IN(BF16, 1, 5, 3), INF(BF16, CF_UNIFORM, 0, 1, 1, 5, 3), INF(BF16, CF_UNIFORM, -1, 0, 3, 2), IN(BF16, 1, 5, 2),
      IN(BF16, 1, 5, 2)}, .tol = 4},
    {"mamba2_f16", RLX_OP_Mamba2, AT(Mamba2, .head_dim = 2, .state_size = 2), 5,
     {IN(F16, 1, 4, 2, 2), INF(F16, CF_UNIFORM, 0, 1, 1, 4, 2), INF(F16, CF_UNIFORM, -1, 0, 2), IN(F16, 1, 4, 2, 2),
      IN(F16, 1, 4, 2, 2)}, .tol = 4},
    {"gdn_f16", RLX_OP_GatedDeltaNet, GDN(2, false, false), 5,
     {QK(F16, 1, 4, 2, 2), QK(F16, 1, 4, 2, 2), IN(F16, 1, 4, 2, 2), GATE(F16, 1, 4, 2), BETA(F16, 1, 4, 2)}, .tol = 4},
};
