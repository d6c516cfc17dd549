#!/usr/bin/python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Reference trajectories of torch.optim for the step-by-step parity test of rlx_optim.

usage: torch_optim_ref.py OUT_DIR

Writes into OUT_DIR:
  manifest.txt        "steps T", one "param NAME DIM..." line per param, one
                      "config NAME KIND key=value..." line per configuration (keys are the field
                      names of rlx_optim_config; schedule fields are prefixed "schedule.")
  init_pI.npy         initial value of param I (f32)
  grads_pI.npy        [T, *shape] gradient of param I at every step (f32)
  NAME_pI.npy         [T, *shape] param I after every step of configuration NAME (f32)
  NAME_lr.npy         [T] learning rate used by every step (f64)
  NAME_norm.npy       [T] total gradient norm returned by clip_grad_norm_ (only when clipping)

SGD, Adam, AdamW, RMSprop and Adagrad are torch.optim's own classes, the schedules torch's
lr_scheduler classes (LinearLR warmup chained with SequentialLR), and the clipping
torch.nn.utils.clip_grad_value_ / clip_grad_norm_. torch 1.13 (Debian) has neither Lion nor Muon:
their updates are written below from the papers (Lion: Chen et al. 2023, "Symbolic Discovery of
Optimization Algorithms", Algorithm 2; Muon: Jordan et al. 2024, momentum + Newton-Schulz quintic
iteration with coefficients (3.4445, -4.7750, 2.0315)); Muon's rank-0/1 params use torch's AdamW.
"""
import math
import os
import sys

import numpy as np
import torch

STEPS = 20
SHAPES = [("p0", (6, 4)), ("p1", (5,)), ("p2", (3, 8)), ("p3", (2, 3, 4))]

# name, kind, settings (rlx_optim_config field names; unspecified = rlx_optim_config_init defaults)
CONFIGS = [
    ("sgd", "sgd", dict(lr=0.1)),
    ("sgd_momentum", "sgd", dict(lr=0.05, momentum=0.9)),
    ("sgd_dampening_wd", "sgd", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=1, weight_decay=0.01)),
    ("sgd_maximize", "sgd", dict(lr=0.1, momentum=0.5, maximize=1)),
    ("sgd_clip_norm", "sgd", dict(lr=0.1, momentum=0.9, clip_grad_norm=1.0)),
    ("sgd_step_schedule", "sgd",
     dict(lr=0.1, momentum=0.8, **{"schedule.kind": "step", "schedule.step_size": 4,
                                   "schedule.gamma": 0.5})),
    ("adam", "adam", dict(lr=0.01)),
    ("adam_wd", "adam", dict(lr=0.01, weight_decay=0.1)),
    ("adam_amsgrad", "adam", dict(lr=0.01, beta1=0.8, beta2=0.95, amsgrad=1)),
    ("adam_maximize", "adam", dict(lr=0.01, maximize=1, eps=1e-6)),
    ("adam_clip_value", "adam", dict(lr=0.01, clip_grad_value=0.5)),
    ("adam_warmup_linear", "adam",
     dict(lr=0.02, **{"schedule.kind": "linear", "schedule.warmup_steps": 3,
                      "schedule.warmup_start_factor": 0.25, "schedule.decay_steps": 10,
                      "schedule.min_lr": 0.001})),
    ("adamw", "adamw", dict(lr=0.01, weight_decay=0.1)),
    ("adamw_amsgrad", "adamw", dict(lr=0.01, weight_decay=0.05, amsgrad=1)),
    ("adamw_clip_warmup_cosine", "adamw",
     dict(lr=0.01, weight_decay=0.1, clip_grad_value=2.0, clip_grad_norm=1.5,
          **{"schedule.kind": "cosine", "schedule.warmup_steps": 5,
             "schedule.warmup_start_factor": 0.1, "schedule.decay_steps": 15,
             "schedule.min_lr": 1e-4})),
    ("rmsprop", "rmsprop", dict(lr=0.01)),
    ("rmsprop_momentum_wd", "rmsprop", dict(lr=0.01, momentum=0.9, weight_decay=0.01)),
    ("rmsprop_centered", "rmsprop", dict(lr=0.01, alpha=0.9, centered=1)),
    ("rmsprop_centered_momentum", "rmsprop", dict(lr=0.005, alpha=0.95, centered=1, momentum=0.8)),
    ("rmsprop_warmup", "rmsprop",
     dict(lr=0.01, **{"schedule.warmup_steps": 4, "schedule.warmup_start_factor": 0.1})),
    ("adagrad", "adagrad", dict(lr=0.1)),
    ("adagrad_decay_wd", "adagrad",
     dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1, weight_decay=0.01)),
    ("adagrad_clip_maximize", "adagrad", dict(lr=0.1, maximize=1, clip_grad_norm=10.0)),
    ("lion", "lion", dict(lr=0.001, weight_decay=0.1)),
    ("lion_cosine", "lion",
     dict(lr=0.002, beta1=0.95, beta2=0.98,
          **{"schedule.kind": "cosine", "schedule.decay_steps": 20, "schedule.min_lr": 2e-4})),
    ("muon", "muon", dict(lr=0.02)),
    ("muon_plain_wd", "muon",
     dict(lr=0.02, momentum=0.9, nesterov=0, weight_decay=0.1, ns_steps=3,
          muon_lr_adjust="match_rms_adamw", muon_aux_lr=0.001, beta2=0.99, eps=1e-8)),
    ("muon_clip_cosine", "muon",
     dict(lr=0.03, clip_grad_norm=8.0,
          **{"schedule.kind": "cosine", "schedule.warmup_steps": 4,
             "schedule.warmup_start_factor": 0.5, "schedule.decay_steps": 16,
             "schedule.min_lr": 0.003})),
]

# rlx_optim_config_init defaults (include/rlx/optim.h) for the fields the references read.
def defaults(kind):
    d = dict(lr=0.0, weight_decay=0.0, eps=1e-8, beta1=0.9, beta2=0.999, maximize=0, amsgrad=0,
             momentum=0.0, dampening=0.0, nesterov=0, alpha=0.99, centered=0, lr_decay=0.0,
             initial_accumulator_value=0.0, ns_steps=5, muon_lr_adjust="original",
             muon_aux_lr=0.0, clip_grad_value=0.0, clip_grad_norm=0.0)
    d.update({"schedule.kind": "constant", "schedule.warmup_steps": 0,
              "schedule.warmup_start_factor": 0.0, "schedule.decay_steps": 0,
              "schedule.min_lr": 0.0, "schedule.step_size": 0, "schedule.gamma": 0.1})
    if kind == "adagrad":
        d["eps"] = 1e-10
    if kind == "lion":
        d["beta2"] = 0.99
    if kind == "muon":
        d.update(momentum=0.95, nesterov=1, muon_aux_lr=3e-4, beta2=0.95, eps=1e-10)
    return d


class Lion:
    """Lion (Chen et al. 2023): c = b1 m + (1 - b1) g; p = p (1 - lr wd) - lr sign(c);
    m = b2 m + (1 - b2) g. f32 like the params."""

    def __init__(self, params, lr, beta1, beta2, weight_decay, maximize):
        self.params = params
        self.param_groups = [dict(lr=lr)]
        self.b1, self.b2, self.wd, self.maximize = beta1, beta2, weight_decay, maximize
        self.m = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self):
        lr = self.param_groups[0]["lr"]
        for p, m in zip(self.params, self.m):
            g = -p.grad if self.maximize else p.grad
            c = m.mul(self.b1).add(g, alpha=1 - self.b1)
            p.mul_(1 - lr * self.wd).add_(torch.sign(c), alpha=-lr)
            m.mul_(self.b2).add_(g, alpha=1 - self.b2)


def newton_schulz(G, steps):
    """Quintic Newton-Schulz iteration of Muon (Jordan et al. 2024), in float64 here."""
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G.double()
    X = X / (X.norm() + 1e-7)
    tall = X.size(0) > X.size(1)
    if tall:
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    if tall:
        X = X.T
    return X


class Muon:
    """Muon for params of rank >= 2, viewed as [dim0, rest] matrices: buf = lerp(buf, g, 1 - mu);
    u = lerp(g, buf, mu) (Nesterov) or buf; O = NewtonSchulz(u); p *= 1 - lr wd;
    p -= lr * adjust * O. Params of rank 0/1 go to torch.optim.AdamW at the aux lr."""

    def __init__(self, params, cfg):
        self.cfg = cfg
        self.param_groups = [dict(lr=cfg["lr"])]
        self.mats = [p for p in params if p.dim() >= 2]
        self.bufs = [torch.zeros_like(p) for p in self.mats]
        others = [p for p in params if p.dim() < 2]
        self.aux_base = cfg["muon_aux_lr"] if cfg["muon_aux_lr"] > 0 else cfg["lr"]
        self.aux = torch.optim.AdamW(others, lr=self.aux_base, betas=(cfg["beta1"], cfg["beta2"]),
                                     eps=cfg["eps"], weight_decay=cfg["weight_decay"],
                                     maximize=bool(cfg["maximize"])) if others else None

    @torch.no_grad()
    def step(self):
        cfg = self.cfg
        lr = self.param_groups[0]["lr"]
        mu = cfg["momentum"]
        for p, buf in zip(self.mats, self.bufs):
            g = -p.grad if cfg["maximize"] else p.grad
            g = g.reshape(p.size(0), -1)
            b2 = buf.view(p.size(0), -1)
            b2.lerp_(g, 1 - mu)
            u = g.lerp(b2, mu) if cfg["nesterov"] else b2
            o = newton_schulz(u, cfg["ns_steps"])
            rows, cols = o.shape
            if cfg["muon_lr_adjust"] == "original":
                adj = lr * math.sqrt(max(1.0, rows / cols))
            else:
                adj = lr * 0.2 * math.sqrt(max(rows, cols))
            p.mul_(1 - lr * cfg["weight_decay"])
            p.add_(o.reshape(p.shape).float(), alpha=-adj)
        if self.aux:
            self.aux.param_groups[0]["lr"] = self.aux_base * (lr / cfg["lr"])
            self.aux.step()


def make_optimizer(kind, c, params):
    betas = (c["beta1"], c["beta2"])
    mx = bool(c["maximize"])
    if kind == "sgd":
        return torch.optim.SGD(params, lr=c["lr"], momentum=c["momentum"], dampening=c["dampening"],
                               weight_decay=c["weight_decay"], nesterov=bool(c["nesterov"]),
                               maximize=mx)
    if kind == "adam":
        return torch.optim.Adam(params, lr=c["lr"], betas=betas, eps=c["eps"],
                                weight_decay=c["weight_decay"], amsgrad=bool(c["amsgrad"]),
                                maximize=mx)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=c["lr"], betas=betas, eps=c["eps"],
                                 weight_decay=c["weight_decay"], amsgrad=bool(c["amsgrad"]),
                                 maximize=mx)
    if kind == "rmsprop":
        return torch.optim.RMSprop(params, lr=c["lr"], alpha=c["alpha"], eps=c["eps"],
                                   weight_decay=c["weight_decay"], momentum=c["momentum"],
                                   centered=bool(c["centered"]), maximize=mx)
    if kind == "adagrad":
        return torch.optim.Adagrad(params, lr=c["lr"], lr_decay=c["lr_decay"],
                                   weight_decay=c["weight_decay"],
                                   initial_accumulator_value=c["initial_accumulator_value"],
                                   eps=c["eps"], maximize=mx)
    if kind == "lion":
        return Lion(params, c["lr"], c["beta1"], c["beta2"], c["weight_decay"], mx)
    if kind == "muon":
        return Muon(params, c)
    raise ValueError(kind)


def make_scheduler(c, opt):
    """torch lr_scheduler objects for the schedule fields (None = constant lr)."""
    from torch.optim import lr_scheduler as L
    kind = c["schedule.kind"]
    lr = c["lr"]
    if kind == "constant":
        main = L.LambdaLR(opt, lambda e: 1.0)
    elif kind == "cosine":
        main = L.CosineAnnealingLR(opt, T_max=c["schedule.decay_steps"], eta_min=c["schedule.min_lr"])
    elif kind == "linear":
        main = L.LinearLR(opt, start_factor=1.0, end_factor=c["schedule.min_lr"] / lr,
                          total_iters=c["schedule.decay_steps"])
    elif kind == "step":
        main = L.StepLR(opt, step_size=c["schedule.step_size"], gamma=c["schedule.gamma"])
    else:
        raise ValueError(kind)
    w = c["schedule.warmup_steps"]
    if w == 0:
        return main
    warm = L.LinearLR(opt, start_factor=c["schedule.warmup_start_factor"], end_factor=1.0,
                      total_iters=w)
    return L.SequentialLR(opt, [warm, main], milestones=[w])


class _Shim(torch.optim.Optimizer):
    """Lets torch's schedulers drive the lr of the hand-written Lion/Muon classes."""

    def __init__(self, inner):
        self.inner = inner
        self.param_groups = inner.param_groups
        self.defaults = {}
        self.state = {}

    def step(self, closure=None):
        self.inner.step()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(20240611)
    inits = [rng.standard_normal(s).astype(np.float32) for _, s in SHAPES]
    # Gradients with a per-step scale between 0.2 and 3, so clipping engages on some steps only.
    scales = rng.uniform(0.2, 3.0, size=STEPS)
    grads = [np.stack([rng.standard_normal(s) * scales[t] for t in range(STEPS)]).astype(np.float32)
             for _, s in SHAPES]
    for i, (name, _) in enumerate(SHAPES):
        np.save(os.path.join(out, f"init_p{i}.npy"), inits[i])
        np.save(os.path.join(out, f"grads_p{i}.npy"), grads[i])

    lines = [f"steps {STEPS}"]
    lines += ["param " + name + " " + " ".join(str(d) for d in s) for name, s in SHAPES]
    for name, kind, settings in CONFIGS:
        c = defaults(kind)
        c.update(settings)
        lines.append(f"config {name} {kind} " + " ".join(f"{k}={v}" for k, v in settings.items()))
        params = [torch.tensor(x).requires_grad_(True) for x in inits]
        opt = make_optimizer(kind, c, params)
        if kind in ("lion", "muon"):
            opt = _Shim(opt)
        sched = make_scheduler(c, opt)
        traj = [np.zeros((STEPS,) + s, np.float32) for _, s in SHAPES]
        lrs = np.zeros(STEPS)
        norms = np.zeros(STEPS)
        for t in range(STEPS):
            for p, g in zip(params, grads):
                p.grad = torch.tensor(g[t]).clone()
            if c["clip_grad_value"] > 0:
                torch.nn.utils.clip_grad_value_(params, c["clip_grad_value"])
            if c["clip_grad_norm"] > 0:
                norms[t] = float(torch.nn.utils.clip_grad_norm_(params, c["clip_grad_norm"]))
            lrs[t] = opt.param_groups[0]["lr"]
            opt.step()
            sched.step()
            for i, p in enumerate(params):
                traj[i][t] = p.detach().numpy()
        for i in range(len(SHAPES)):
            np.save(os.path.join(out, f"{name}_p{i}.npy"), traj[i])
        np.save(os.path.join(out, f"{name}_lr.npy"), lrs)
        if c["clip_grad_norm"] > 0:
            np.save(os.path.join(out, f"{name}_norm.npy"), norms)
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"torch {torch.__version__}: {len(CONFIGS)} configurations, {STEPS} steps, "
          f"{len(SHAPES)} params")


if __name__ == "__main__":
    main()
