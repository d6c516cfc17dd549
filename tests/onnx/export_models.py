# SPDX-License-Identifier: MIT OR Apache-2.0
"""Exports small real models to ONNX for tests/cli/test_onnx_models.sh.

usage: export_models.py OUT_DIR [NAME...]

For each model (torchvision resnet18, mobilenet_v3_small, squeezenet1_0 with RANDOM weights, and a
2-layer torch.nn.TransformerEncoder with d_model 64, 4 heads, batch_first, exported with symbolic
batch and sequence dims), in eval mode and float32, writes to OUT_DIR:
  NAME.onnx     the exported model (graph input "x", graph output "y")
  NAME.x.npy    a random input
  NAME.y.npy    torch's output for that input
Weights and inputs come from fixed seeds, so every run exports the same models. Prints one line
per model; exits non-zero when an export fails.
"""
import sys

import numpy as np
import torch
import torchvision

OPSET = 14


def transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


# name -> (constructor, input shape at export, dynamic axes or None, input shape of the saved input)
# The transformer is exported with symbolic batch and sequence dims and run on other sizes than
# the export used, so `rlx run` has to bind them from the input.
CNN_INPUT = (1, 3, 224, 224)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), CNN_INPUT, None, CNN_INPUT),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), CNN_INPUT, None, CNN_INPUT),
    "squeezenet1_0": (lambda: torchvision.models.squeezenet1_0(weights=None), CNN_INPUT, None, CNN_INPUT),
    "transformer_encoder": (transformer_encoder, (2, 10, 64),
                            {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, (3, 7, 64)),
}


def export(name, out_dir):
    make, export_shape, dynamic_axes, run_shape = MODELS[name]
    torch.manual_seed(1234)
    model = make().eval()
    # BatchNorm running statistics: random too (fresh ones are 0 / 1 and would hide mistakes).
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    gen = torch.Generator().manual_seed(4321)
    sample = torch.randn(*export_shape, generator=gen, dtype=torch.float32)
    x = torch.randn(*run_shape, generator=gen, dtype=torch.float32)
    # Gradients stay enabled: under no_grad, TransformerEncoderLayer takes a fused fast path
    # (aten::_transformer_encoder_layer_fwd) that has no ONNX export. Reference output and export
    # both use the plain path.
    y = model(x).detach()
    torch.onnx.export(model, (sample,), f"{out_dir}/{name}.onnx", input_names=["x"], output_names=["y"],
                      opset_version=OPSET, do_constant_folding=True, dynamic_axes=dynamic_axes)
    np.save(f"{out_dir}/{name}.x.npy", x.numpy().astype(np.float32))
    np.save(f"{out_dir}/{name}.y.npy", y.numpy().astype(np.float32))
    dyn = f", dynamic axes {dynamic_axes['x']}" if dynamic_axes else ""
    print(f"{name}: exported (opset {OPSET}{dyn}), input {list(x.shape)}, output {list(y.shape)}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    names = argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"unknown model(s): {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    for n in names:
        export(n, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
