#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Writes ONNX node tests for GridSample, AffineGrid and RoiAlign whose expected outputs come from
PyTorch in float64 (torch.nn.functional.grid_sample / affine_grid, torchvision.ops.roi_align), an
implementation independent of RLX's importer, in the layout `rlx onnx-conformance` reads
(test_*/model.onnx + test_data_set_0/{input,output}_N.pb). Usage: sample_torch_cases.py OUT_DIR

Left out where PyTorch and ONNX's reference implementation disagree and RLX follows ONNX (see
docs/onnx.md): AffineGrid with a single cell and align_corners. (Bicubic with border padding is
included: RLX clamps each tap there, as PyTorch and onnxruntime do.)
RoiAlign's max mode has no PyTorch counterpart (tests/unit/test_onnx_sample.c covers it).
Prints the number of tests written."""
import itertools
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision
from onnx import TensorProto, helper, numpy_helper


def write(root, name, node, inputs, expected, opset, inits=()):
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}
    graph_inputs = [helper.make_tensor_value_info(k, elem[v.dtype], v.shape) for k, v in inputs]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, expected.shape)
    graph = helper.make_graph([node], name, graph_inputs, [out], initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(root, "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(expected.astype(np.float32), "y").SerializeToString())


def grid_sample_cases(root, rng):
    n = 0
    torch_mode = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest", "bicubic": "bicubic", "cubic": "bicubic"}
    for opset, modes in ((16, ("bilinear", "nearest", "bicubic")), (20, ("linear", "nearest", "cubic"))):
        # bicubic + border last, so that adding it left the other cases' random data as it was
        combos = [c for c in itertools.product(modes, ("zeros", "border", "reflection"), (0, 1))
                  if not (torch_mode[c[0]] == "bicubic" and c[1] == "border")]
        combos += [(m, "border", a) for m in modes if torch_mode[m] == "bicubic" for a in (0, 1)]
        for mode, pad, align in combos:
            x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
            grid = rng.uniform(-1.5, 1.5, (2, 4, 7, 2)).astype(np.float32)
            y = F.grid_sample(torch.from_numpy(x).double(), torch.from_numpy(grid).double(), mode=torch_mode[mode],
                              padding_mode=pad, align_corners=bool(align)).numpy()
            node = helper.make_node("GridSample", ["X", "grid"], ["y"], mode=mode, padding_mode=pad, align_corners=align)
            write(root, f"gridsample{opset}_{mode}_{pad}_align{align}", node, [("X", x), ("grid", grid)], y, opset)
            n += 1
    # volumetric (opset 20): [N, C, D, H, W] with a [N, D', H', W', 3] grid
    for mode, pad, align in itertools.product(("linear", "nearest"), ("zeros", "border", "reflection"), (0, 1)):
        x = rng.standard_normal((2, 2, 3, 4, 5)).astype(np.float32)
        grid = rng.uniform(-1.4, 1.4, (2, 2, 3, 4, 3)).astype(np.float32)
        y = F.grid_sample(torch.from_numpy(x).double(), torch.from_numpy(grid).double(), mode=torch_mode[mode],
                          padding_mode=pad, align_corners=bool(align)).numpy()
        node = helper.make_node("GridSample", ["X", "grid"], ["y"], mode=mode, padding_mode=pad, align_corners=align)
        write(root, f"gridsample20_3d_{mode}_{pad}_align{align}", node, [("X", x), ("grid", grid)], y, 20)
        n += 1
    return n


def affine_grid_cases(root, rng):
    n = 0
    for size, align in itertools.product(([2, 3, 4, 5], [2, 1, 3, 2, 4]), (0, 1)):
        r = len(size) - 2
        theta = rng.standard_normal((2, r, r + 1)).astype(np.float32)
        y = F.affine_grid(torch.from_numpy(theta).double(), size, align_corners=bool(align)).numpy()
        node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align)
        init = numpy_helper.from_array(np.array(size, np.int64), "size")
        write(root, f"affinegrid_{r}d_align{align}", node, [("theta", theta)], y, 20, [init])
        n += 1
    return n


def roi_align_cases(root, rng):
    n = 0
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = np.array([[1, 2, 9, 11], [4, 4, 14, 20], [-3, -2, 6, 5], [5, 6, 5.5, 6.2], [0, 0, 19, 23]], np.float32)
    batch = np.array([0, 1, 1, 0, 1], np.int64)
    boxes = torch.cat([torch.from_numpy(batch).double()[:, None], torch.from_numpy(rois).double()], 1)
    for opset, ctm, ratio in itertools.product((10, 16), ("half_pixel", "output_half_pixel"), (2, 0)):
        if opset == 10 and ctm == "half_pixel":
            continue  # RoiAlign-10 has no coordinate_transformation_mode (it is output_half_pixel)
        y = torchvision.ops.roi_align(torch.from_numpy(x).double(), boxes, (3, 4), spatial_scale=0.5, sampling_ratio=ratio,
                                      aligned=ctm == "half_pixel").numpy()
        attrs = dict(output_height=3, output_width=4, sampling_ratio=ratio, spatial_scale=0.5, mode="avg")
        if opset >= 16:
            attrs["coordinate_transformation_mode"] = ctm
        node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["y"], **attrs)
        write(root, f"roialign{opset}_{ctm}_ratio{ratio}", node, [("X", x), ("rois", rois), ("batch_indices", batch)], y, opset)
        n += 1
    return n


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: sample_torch_cases.py OUT_DIR")
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(20)
    n = grid_sample_cases(root, rng) + affine_grid_cases(root, rng) + roi_align_cases(root, rng)
    print(n)


if __name__ == "__main__":
    main()
