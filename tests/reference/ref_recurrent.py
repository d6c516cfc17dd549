# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: sequence models and state-space recurrences (spec ir-special §2).

Lstm / Gru / Rnn run through torch.nn.LSTM / GRU / RNN (batch_first, float64): the packed weights
(layer major, then direction; block (l, d) of w_ih is [G*H, in_l], of w_hh [G*H, H], biases [G*H])
are copied into torch's weight_ih_l{l}[_reverse] etc. Lstm and Rnn carry one combined bias (torch's
bias_ih = bias, bias_hh = 0); Gru keeps b_ih and b_hh apart. Initial states h0 (c0) are torch's.

SelectiveScan, Mamba2 and GatedDeltaNet are plain NumPy loops over the recurrences as the spec
writes them; GatedDeltaNetBackward is torch.autograd of a float64 torch transcription of the same
GatedDeltaNet recurrence (not of any backward formula), packed dq | dk | dv | dg | dbeta | (dstate)."""

import numpy as np
import torch


def _rnn_module(kind, in_size, hidden, layers, bidir, relu):
    kw = dict(input_size=in_size, hidden_size=hidden, num_layers=layers, bidirectional=bidir, batch_first=True,
              bias=True)
    if kind == "Lstm":
        return torch.nn.LSTM(**kw), 4
    if kind == "Gru":
        return torch.nn.GRU(**kw), 3
    return torch.nn.RNN(nonlinearity="relu" if relu else "tanh", **kw), 1


def ref_rnn(case, xs):
    a = case["attrs"]
    kind = case["op"]
    H, L, bidir, carry = a["hidden_size"], a["num_layers"], bool(a["bidirectional"]), bool(a["carry"])
    D = 2 if bidir else 1
    x = xs[0]
    B, S, I = x.shape
    mod, G = _rnn_module(kind, I, H, L, bidir, bool(a.get("relu", False)))
    mod = mod.double()
    w_ih, w_hh = xs[1].reshape(-1), xs[2].reshape(-1)
    n_bias = 2 if kind == "Gru" else 1
    biases = [xs[3 + i].reshape(-1) for i in range(n_bias)]
    off = 0
    with torch.no_grad():
        for l in range(L):
            in_l = I if l == 0 else D * H
            for d in range(D):
                blk = l * D + d
                sfx = "_l%d%s" % (l, "_reverse" if d else "")
                n = G * H * in_l
                getattr(mod, "weight_ih" + sfx).copy_(torch.from_numpy(w_ih[off:off + n].reshape(G * H, in_l)))
                off += n
                getattr(mod, "weight_hh" + sfx).copy_(
                    torch.from_numpy(w_hh[blk * G * H * H:(blk + 1) * G * H * H].reshape(G * H, H)))
                b0 = biases[0][blk * G * H:(blk + 1) * G * H]
                b1 = biases[1][blk * G * H:(blk + 1) * G * H] if n_bias == 2 else np.zeros(G * H)
                getattr(mod, "bias_ih" + sfx).copy_(torch.from_numpy(b0.copy()))
                getattr(mod, "bias_hh" + sfx).copy_(torch.from_numpy(b1.copy()))
        if S == 0:
            return np.zeros((B, 0, D * H))
        xt = torch.from_numpy(x)
        if carry:
            h0 = torch.from_numpy(xs[3 + n_bias])
            state = (h0, torch.from_numpy(xs[4 + n_bias])) if kind == "Lstm" else h0
            y, _ = mod(xt, state)
        else:
            y, _ = mod(xt)
    return y.numpy()


def ref_selective_scan(case, xs):
    x, delta, A, Bm, C = xs
    Bn, S, H = x.shape
    n = A.shape[1]
    y = np.zeros_like(x)
    for b in range(Bn):
        h = np.zeros((H, n))
        for t in range(S):
            dt = delta[b, t][:, None]  # [H, 1]
            h = np.exp(dt * A) * h + dt * Bm[b, t][None, :] * x[b, t][:, None]
            y[b, t] = h @ C[b, t]
    return y


def ref_mamba2(case, xs):
    x, dt, A, Bm, C = xs
    Bn, S, H, P = x.shape
    n = Bm.shape[-1]
    y = np.zeros_like(x)
    for b in range(Bn):
        st = np.zeros((H, P, n))
        for t in range(S):
            decay = np.exp(dt[b, t] * A)  # [H]
            st = decay[:, None, None] * st + dt[b, t][:, None, None] * x[b, t][:, :, None] * Bm[b, t][:, None, :]
            y[b, t] = np.einsum("hpi,hi->hp", st, C[b, t])
    return y


def _gdn_forward(lib, q, k, v, g, beta, state, per_channel):
    """The GatedDeltaNet recurrence in NumPy (lib = np) or torch (lib = torch): o [B,S,H,n]."""
    Bn, S, H, n = q.shape
    outs = []
    for b in range(Bn):
        heads = []
        for h in range(H):
            Sm = state[b, h] if state is not None else lib.zeros((n, n), dtype=q.dtype)
            rows = []
            for t in range(S):
                if per_channel:
                    Sm = lib.exp(g[b, t, h])[:, None] * Sm
                else:
                    Sm = lib.exp(g[b, t, h]) * Sm
                kk = k[b, t, h]
                sk = kk @ Sm  # sk[j] = sum_i k[i] S[i, j]
                d = (v[b, t, h] - sk) * beta[b, t, h]
                Sm = Sm + kk[:, None] * d[None, :]
                rows.append((q[b, t, h] @ Sm) / np.sqrt(n))
            heads.append(lib.stack(rows))  # [S, n]
        outs.append(lib.stack(heads, 1) if S else lib.zeros((0, H, n), dtype=q.dtype))  # [S, H, n]
    return lib.stack(outs)


def ref_gdn(case, xs):
    a = case["attrs"]
    carry = bool(a["carry_state"])
    state = xs[5] if carry else None
    return _gdn_forward(np, xs[0], xs[1], xs[2], xs[3], xs[4], state, bool(a["gate_per_channel"]))


def ref_gdn_backward(case, xs):
    a = case["attrs"]
    carry = bool(a["carry_state"])
    n_primal = 6 if carry else 5
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs[:n_primal]]
    dy = torch.tensor(xs[n_primal], dtype=torch.float64)
    state = ts[5] if carry else None
    o = _gdn_forward(torch, ts[0], ts[1], ts[2], ts[3], ts[4], state, bool(a["gate_per_channel"]))
    grads = torch.autograd.grad((o * dy).sum(), ts, allow_unused=True)
    parts = [(gr if gr is not None else torch.zeros_like(t)).reshape(-1) for gr, t in zip(grads, ts)]
    return torch.cat(parts).numpy()


REF = {
    "Lstm": ref_rnn,
    "Gru": ref_rnn,
    "Rnn": ref_rnn,
    "SelectiveScan": ref_selective_scan,
    "Mamba2": ref_mamba2,
    "GatedDeltaNet": ref_gdn,
    "GatedDeltaNetBackward": ref_gdn_backward,
}
