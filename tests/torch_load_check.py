#!/usr/bin/python3
"""Checks that PyTorch takes a safetensors file the engine wrote.

    /usr/bin/python3 tests/torch_load_check.py OURS.safetensors

OURS is what `attn_tests "[torch_check]"` writes: the engine's read of the fixture
encoder_bf16.safetensors, written back as F32 (the CTest test safetensors.torch_loads_ours runs
both). This script reads it with a reader of its own, strict about the layout, loads it into a
fresh TransformerEncoderLayer with load_state_dict(strict=True) and compares every tensor bit for
bit with PyTorch's own bfloat16 -> float32 conversion of the fixture's weights.
"""
import importlib.util
import json
import pathlib
import struct
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent


def fixture_module():
    # By path, as gen_fixtures.py loads it: PyTorch ships a package named `torchgen`.
    spec = importlib.util.spec_from_file_location("fixture_safetensors", HERE / "torchgen" / "safetensors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_f32_safetensors(path):
    data = pathlib.Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    assert length % 8 == 0, f"header length {length} is not a multiple of 8"
    header = json.loads(data[8:8 + length].decode("utf-8"))
    assert header.pop("__metadata__", None) in (None, {"format": "pt"})
    body, tensors, offset = data[8 + length:], {}, 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, end = entry["data_offsets"]
        assert entry["dtype"] == "F32" and begin == offset, (name, entry)
        array = np.frombuffer(body[begin:end], dtype="<f4").reshape(entry["shape"])
        tensors[name], offset = torch.from_numpy(array.copy()), end
    assert offset == len(body), "trailing bytes"
    return tensors


def main(path):
    layer = fixture_module().encoder_layer()
    expected = {k: v.bfloat16().float() for k, v in layer.state_dict().items()}
    for value in layer.state_dict().values():
        value.zero_()  # so that loading has to set every tensor
    layer.load_state_dict(read_f32_safetensors(path), strict=True)
    for name, value in layer.state_dict().items():
        assert torch.equal(value.view(torch.int32), expected[name].view(torch.int32)), name
    print(f"torch_load_check: PyTorch loaded {len(expected)} tensors from {path}, all equal")


if __name__ == "__main__":
    main(sys.argv[1])
