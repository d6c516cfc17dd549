#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Writes ONNX backend node tests (model.onnx + test_data_set_0/{input,output}_N.pb) from the
test-case generators of the installed onnx package, in the directory layout of Debian's
libonnx-testdata, for `rlx onnx-conformance`.

PyPI's onnx wheels ship the generators but not the generated data; Debian's data stops at
onnx 1.12 (opset 17). Usage:
    gen_node_tests.py OUT_DIR [--min-opset N]
Only tests whose default-domain opset import is >= N are written (default 0 = all). Prints how
many were written. Needs onnx and numpy only.
"""
import argparse
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def default_opset(model):
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 0


def value_proto(value, vi):
    """Serializes one test input/output the way the model's value type wants it."""
    t = vi.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vi.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vi.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vi.name)
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(value, vi.name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--min-opset", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    written = 0
    for case in node_cases.collect_testcases():
        if case.model is None or default_opset(case.model) < a.min_opset:
            continue
        d = os.path.join(a.out, case.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for k, (inputs, outputs) in enumerate(case.data_sets):
            sd = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(sd)
            g = case.model.graph
            for j, v in enumerate(inputs):
                with open(os.path.join(sd, f"input_{j}.pb"), "wb") as f:
                    f.write(value_proto(v, g.input[j]).SerializeToString())
            for j, v in enumerate(outputs):
                with open(os.path.join(sd, f"output_{j}.pb"), "wb") as f:
                    f.write(value_proto(v, g.output[j]).SerializeToString())
        written += 1
    print(f"gen_node_tests: wrote {written} node tests (opset >= {a.min_opset}) with onnx {onnx.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
