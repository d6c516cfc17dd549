# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: 3D Gaussian splatting (spec ir-special §5, semantics in docs/splatting.md).

An independent renderer written with PyTorch tensors in float64: the 3D covariance is built as a
matrix product R S S^T R^T, projected with the Jacobian of the pinhole camera, inverted with
torch.linalg.inv; compositing runs pixel by pixel. GaussianSplatRenderBackward is checked against
torch autograd of this renderer (nothing here mirrors the C kernel's reverse sweep or its dual
numbers). Prepare / Rasterize cases (built as Prepare -> Rasterize, body "prepare_rasterize") must
give the rendered image; a lone Prepare case compares the prepared buffer's numeric segments. The meta operand is a constant the build hook adds (META below), so the
dumped inputs are the six scene operands (and d_loss_rgba for the backward)."""

import math

import numpy as np
import torch

SH0 = 0.28209479177387814
SH1 = 0.4886025119029199

# The meta operand every splat case uses (tests/cases/cases_splat.c, splat_meta): camera at
# (0.3, 0.2, -4) looking at the origin, up +y, 50 degrees fov, near 0.1, far 100, background.
META = [0.3, 0.2, -4.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 50.0, 0.1, 100.0, 0.1, 0.15, 0.2,
        0, 0, 0, 0, 0, 0, 0, 0]


def settings(case):
    a = case["attrs"]
    return dict(W=int(a["width"]), H=int(a["height"]), tile=int(a["tile_size"]),
                radius_scale=float(a.get("radius_scale", 1.0)), cutoff=float(a["alpha_cutoff"]),
                steps=int(a["max_splat_steps"]), tmin=float(a["transmittance_threshold"]),
                max_list=int(a["max_list_entries"]))


def camera(meta, W, H):
    m = [float(v) for v in meta]
    pos, tgt, up = np.array(m[0:3]), np.array(m[3:6]), np.array(m[6:9])
    f = tgt - pos
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    u = np.cross(r, f)
    focal = 0.5 * H / math.tan(math.radians(m[9]) / 2)
    return dict(pos=torch.tensor(pos), V=torch.tensor(np.stack([r, u, f])), focal=focal, cx=W / 2, cy=H / 2,
                near=m[10], far=m[11], bg=torch.tensor(m[12:15]))


def project(scene, cam, st):
    """Per gaussian: None when not visible, else (mean [2], depth, radius, conic [a, b, c], opacity, colour [3])."""
    pos, scl, rot, opa, col, sh = scene
    N = pos.shape[0]
    C = sh.numel() // (3 * N)
    shc = sh.reshape(N, C, 3)
    out = []
    for i in range(N):
        t = pos[i] - cam["pos"]
        xc, yc, zc = cam["V"] @ t
        if not (cam["near"] <= zc.item() <= cam["far"] and zc.item() > 1e-9):
            out.append(None)
            continue
        fo = cam["focal"]
        mean = torch.stack([cam["cx"] + fo * xc / zc, cam["cy"] - fo * yc / zc])
        q = rot[i] / torch.linalg.norm(rot[i])
        x, y, z, w = q
        R = torch.stack([
            torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
            torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
            torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])])
        S = torch.diag(torch.exp(scl[i]))
        sigma = R @ S @ S.T @ R.T
        sig_cam = cam["V"] @ sigma @ cam["V"].T
        zero = torch.zeros((), dtype=torch.float64)
        J = torch.stack([torch.stack([fo / zc, zero, -fo * xc / zc ** 2]),
                         torch.stack([zero, -fo / zc, fo * yc / zc ** 2])])
        cov = J @ sig_cam @ J.T + 0.3 * torch.eye(2, dtype=torch.float64)
        det = torch.det(cov)
        if det.item() <= 0:
            out.append(None)
            continue
        inv = torch.linalg.inv(cov)
        conic = torch.stack([inv[0, 0], inv[0, 1], inv[1, 1]])
        mid = 0.5 * (cov[0, 0] + cov[1, 1]).item()
        lmax = mid + math.sqrt(max(0.1, mid * mid - det.item()))
        radius = st["radius_scale"] * 3.0 * math.sqrt(lmax)
        opacity = torch.sigmoid(opa[i])
        d = t / torch.linalg.norm(t)
        colour = col[i] + SH0 * shc[i, 0]
        if C >= 4:
            colour = colour + SH1 * (-d[1] * shc[i, 1] + d[2] * shc[i, 2] - d[0] * shc[i, 3])
        out.append((mean, zc.item(), radius, conic, opacity, colour))
    return out


def bin_tiles(proj, st):
    tx_n, ty_n = -(-st["W"] // st["tile"]), -(-st["H"] // st["tile"])
    rects = []
    for p in proj:
        if p is None:
            rects.append((0, 0, 0, 0))
            continue
        mx, my = p[0][0].item(), p[0][1].item()
        r, ts = p[2], st["tile"]

        def cl(v, hi):
            return min(max(v, 0), hi)
        rects.append((cl(math.floor((mx - r) / ts), tx_n), cl(math.floor((my - r) / ts), ty_n),
                      cl(math.floor((mx + r) / ts) + 1, tx_n), cl(math.floor((my + r) / ts) + 1, ty_n)))
    lists, used, dropped = {}, 0, 0
    for ty in range(ty_n):
        for tx in range(tx_n):
            members = [i for i, rc in enumerate(rects) if rc[0] <= tx < rc[2] and rc[1] <= ty < rc[3]]
            members.sort(key=lambda i: (proj[i][1], i))
            keep = members[:max(0, st["max_list"] - used)]
            dropped += len(members) - len(keep)
            lists[(tx, ty)] = (used, keep)
            used += len(keep)
    return rects, lists, used, dropped, tx_n, ty_n


def render(scene, meta, st):
    cam = camera(meta, st["W"], st["H"])
    proj = project(scene, cam, st)
    _, lists, _, _, _, _ = bin_tiles(proj, st)
    pixels = []
    for py in range(st["H"]):
        for px in range(st["W"]):
            _, members = lists[(px // st["tile"], py // st["tile"])]
            T = torch.ones((), dtype=torch.float64)
            rgb = torch.zeros(3, dtype=torch.float64)
            steps = 0
            for i in members:
                if steps >= st["steps"]:
                    break
                mean, _, _, conic, opacity, colour = proj[i]
                dx, dy = px + 0.5 - mean[0], py + 0.5 - mean[1]
                power = -0.5 * (conic[0] * dx * dx + 2 * conic[1] * dx * dy + conic[2] * dy * dy)
                if power.item() > 0:
                    continue
                alpha = torch.clamp(opacity * torch.exp(power), max=0.99)
                if alpha.item() < st["cutoff"]:
                    continue
                if (T * (1 - alpha)).item() < st["tmin"]:
                    break
                rgb = rgb + colour * alpha * T
                T = T * (1 - alpha)
                steps += 1
            pixels.append(torch.cat([rgb + T * cam["bg"], (1 - T).reshape(1)]))
    return torch.stack(pixels).reshape(-1)


def scene_tensors(xs, grad=False):
    N = xs[0].size // 3
    shapes = [(N, 3), (N, 3), (N, 4), (N,), (N, 3), (-1,)]
    return [torch.tensor(np.asarray(x, dtype=np.float64).reshape(s), requires_grad=grad) for x, s in zip(xs[:6], shapes)]


def ref_render(case, xs):
    with torch.no_grad():
        return render(scene_tensors(xs), META, settings(case)).numpy()


def ref_render_backward(case, xs):
    st = settings(case)
    clip = float(case["attrs"]["loss_grad_clip"])
    dl = np.asarray(xs[6], dtype=np.float64)
    if clip > 0:
        dl = np.clip(dl, -clip, clip)
    ts = scene_tensors(xs, grad=True)
    img = render(ts, META, st)
    (img * torch.tensor(dl)).sum().backward()
    return np.concatenate([t.grad.numpy().reshape(-1) for t in ts])


def ref_prepare(case, xs):
    st = settings(case)
    with torch.no_grad():
        ts = scene_tensors(xs)
        cam = camera(META, st["W"], st["H"])
        proj = project(ts, cam, st)
    rects, lists, used, dropped, tx_n, ty_n = bin_tiles(proj, st)
    N = len(proj)
    seg = {k: [] for k in ("g", "o", "conic", "col", "rect")}
    for p, rc in zip(proj, rects):
        if p is None:
            seg["g"] += [0, 0, 0, 0]
            seg["o"] += [0]
            seg["conic"] += [0, 0, 0]
            seg["col"] += [0, 0, 0]
        else:
            seg["g"] += [p[0][0].item(), p[0][1].item(), p[1], p[2]]
            seg["o"] += [p[4].item()]
            seg["conic"] += [v.item() for v in p[3]]
            seg["col"] += [v.item() for v in p[5]]
        seg["rect"] += list(rc)
    lst = [-1] * st["max_list"]
    ranges = []
    for ty in range(ty_n):
        for tx in range(tx_n):
            start, members = lists[(tx, ty)]
            lst[start:start + len(members)] = members
            ranges += [start, len(members)]
    bg = [float(v) for v in META[12:15]] * (st["W"] * st["H"])
    visible = sum(p is not None for p in proj)
    hdr = [N, st["W"], st["H"], st["tile"], tx_n, ty_n, used, dropped, visible, st["max_list"], st["steps"]]
    return np.array(seg["g"] + seg["o"] + seg["conic"] + seg["col"] + seg["rect"] + lst + ranges + bg + hdr,
                    dtype=np.float64)


def ref_prepare_rasterize(case, xs):
    if case["body"] != "prepare_rasterize_rs1.6":
        raise KeyError("no reference for Rasterize body " + case["body"])
    st = settings(case)
    st["radius_scale"] = 1.6
    with torch.no_grad():
        return render(scene_tensors(xs), META, st).numpy()


REF = {
    "GaussianSplatRender": ref_render,
    "GaussianSplatRenderBackward": ref_render_backward,
    "GaussianSplatPrepare": ref_prepare,
    "GaussianSplatRasterize": ref_prepare_rasterize,
}

# The kernels compute in double and round once to f32; the prepared buffer carries f32 values the
# rasterizer reads back (one more rounding); gradients sum over pixels.
OP_TOL = {"GaussianSplatRender": 4, "GaussianSplatPrepare": 4, "GaussianSplatRasterize": 64,
          "GaussianSplatRenderBackward": 64}
ACCUMULATING = set(REF)
