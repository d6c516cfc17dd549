# SPDX-License-Identifier: MIT OR Apache-2.0
"""Exports small real models to ONNX for tests/cli/test_onnx_models.sh.

usage: export_models.py OUT_DIR [NAME...]

Models (RANDOM weights from fixed seeds, eval mode, float32, TorchScript exporter):
  resnet18, mobilenet_v3_small, squeezenet1_0   torchvision, 224x224
  efficientnet_b0, regnet_y_400mf               torchvision, 64x64 (SiLU, squeeze-excitation,
                                                grouped convs), symbolic batch
  transformer_encoder   2-layer nn.TransformerEncoder, symbolic batch and sequence dims
  gpt                   tiny GPT: int64 token ids, embeddings, causal mask by masked_fill, tanh
                        GELU, tied head; symbolic batch and sequence dims
  rnn                   bidirectional 2-layer LSTM (seq-first) into a batch_first GRU; 3 outputs
  resample              ConvTranspose2d, PixelShuffle, bilinear (both align_corners) and
                        nearest upsampling, GroupNorm, InstanceNorm; symbolic batch
The models in the zoo (tests/onnx/zoo_export.py, scripts/onnx_zoo.sh) that pass; the zoo runs
many more with torch's current exporters.

For each model, writes to OUT_DIR:
  NAME.onnx     the exported model (graph input "x", graph outputs "y" or "y0", "y1", ...)
  NAME.x.npy    a random input (for models with symbolic dims, of other sizes than the export's)
  NAME.y.npy    torch's output for that input (NAME.y0.npy, NAME.y1.npy, ... for several)
Weights and inputs come from fixed seeds, so every run exports the same models. Prints one line
per model; exits non-zero when an export fails.
"""
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

OPSET = 14


def transformer_encoder():
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


class GPT(nn.Module):
    """Token + position embedding, 2 pre-norm blocks with hand-written causal self-attention,
    tanh-GELU MLP, final LayerNorm and a head tied to the token embedding."""

    def __init__(self, vocab=97, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(dict(ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d), ln2=nn.LayerNorm(d),
                               fc=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d))) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)))

    def forward(self, ids):
        b, t = ids.shape
        h = self.tok(ids) + self.pos(torch.arange(t))
        for blk in self.blocks:
            a = blk["ln1"](h)
            q, k, v = blk["qkv"](a).split(a.shape[-1], dim=-1)
            q, k, v = (z.reshape(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
            h = h + blk["proj"]((att @ v).transpose(1, 2).reshape(b, t, -1))
            h = h + blk["fc2"](F.gelu(blk["fc"](blk["ln2"](h)), approximate="tanh"))
        return self.head(self.ln(h))


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 16, num_layers=2, bidirectional=True)
        self.gru = nn.GRU(32, 8, batch_first=True)

    def forward(self, x):  # x: [seq, batch, 12]
        y, (h, c) = self.lstm(x)
        z, hg = self.gru(y.transpose(0, 1))
        return z, h, hg


class Resample(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.gn = nn.GroupNorm(4, 8)
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)
        self.inorm = nn.InstanceNorm2d(4, affine=True)

    def forward(self, x):
        h = F.silu(self.gn(self.up(x)))
        h = self.inorm(self.shuffle(self.conv(h)))
        a = F.interpolate(h, scale_factor=0.5, mode="bilinear", align_corners=False)
        b = F.interpolate(x, size=a.shape[-2:], mode="bilinear", align_corners=True)
        c = F.interpolate(x, scale_factor=4, mode="nearest")
        return torch.cat([a, b], 1), c


def random_buffers_and_constants(model):
    """BatchNorm running statistics and constant parameters (norm weights 1 / biases 0) would
    hide mistakes: make them random too."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        for p in model.parameters():
            if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                v = float(p.flatten()[0])
                if abs(v) < 0.1:
                    p.uniform_(-0.2, 0.2).add_(v)
                else:
                    p.mul_(torch.empty_like(p).uniform_(0.5, 1.5))


def rand_ids(*shape, gen):
    return torch.randint(0, 97, shape, generator=gen)


# name -> (constructor, example input at export, dynamic axes or None, input that is saved and run)
# Models with symbolic dims run on other sizes than the export used, so `rlx run` has to bind
# them from the input.
CNN = (1, 3, 224, 224)
BATCH = {"x": {0: "batch"}}
SEQ = {"x": {0: "batch", 1: "seq"}}
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), CNN, None, CNN),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), CNN, None, CNN),
    "squeezenet1_0": (lambda: torchvision.models.squeezenet1_0(weights=None), CNN, None, CNN),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(weights=None), (2, 3, 64, 64), BATCH,
                        (3, 3, 64, 64)),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(weights=None), (2, 3, 64, 64), BATCH,
                       (3, 3, 64, 64)),
    "transformer_encoder": (transformer_encoder, (2, 10, 64), SEQ, (3, 7, 64)),
    "gpt": (GPT, ("ids", 2, 9), SEQ, ("ids", 3, 6)),
    "rnn": (RNN, (5, 2, 12), None, (5, 2, 12)),
    "resample": (Resample, (2, 4, 5, 6), BATCH, (3, 4, 5, 6)),
}


def make_input(spec, gen):
    if spec[0] == "ids":
        return rand_ids(*spec[1:], gen=gen)
    return torch.randn(*spec, generator=gen, dtype=torch.float32)


def outputs(y):
    return [y] if isinstance(y, torch.Tensor) else list(y)


def export(name, out_dir):
    make, export_spec, dynamic_axes, run_spec = MODELS[name]
    torch.manual_seed(1234)
    model = make().eval()
    random_buffers_and_constants(model)
    gen = torch.Generator().manual_seed(4321)
    sample = make_input(export_spec, gen)
    x = make_input(run_spec, gen)
    # Gradients stay enabled: under no_grad, TransformerEncoderLayer takes a fused fast path
    # (aten::_transformer_encoder_layer_fwd) that has no ONNX export. Reference output and export
    # both use the plain path.
    ys = [y.detach() for y in outputs(model(x))]
    out_names = ["y"] if len(ys) == 1 else [f"y{i}" for i in range(len(ys))]
    axes = None
    if dynamic_axes:
        axes = dict(dynamic_axes)
        for o in out_names:
            axes[o] = {0: "batch"}
    torch.onnx.export(model, (sample,), f"{out_dir}/{name}.onnx", input_names=["x"], output_names=out_names,
                      opset_version=OPSET, do_constant_folding=True, dynamic_axes=axes)
    np.save(f"{out_dir}/{name}.x.npy", x.numpy())
    for o, y in zip(out_names, ys):
        np.save(f"{out_dir}/{name}.{o}.npy", y.numpy())
    dyn = f", dynamic axes {dynamic_axes['x']}" if dynamic_axes else ""
    shapes = ", ".join(str(list(y.shape)) for y in ys)
    print(f"{name}: exported (opset {OPSET}{dyn}), input {list(x.shape)}, output {shapes}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    names = argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    for n in names:
        export(n, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
