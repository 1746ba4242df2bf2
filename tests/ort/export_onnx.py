#!/usr/bin/python3
"""Exports attn bench's encoders to ONNX, for onnxruntime-web (bench.js).

    /usr/bin/python3 tests/ort/export_onnx.py DIR HEADS

DIR holds what `attn bench encoder --dump DIR` wrote: encoder_dD.safetensors (the tutorial's encoder
layers' state_dict), encoder_dD_input.npy and encoder_dD_output.npy (the engine's output). For each, this
loads the weights into the tutorial's modules (tests/torchgen/transformer.py, dropout 0, eval mode) with
load_state_dict(strict=True), checks PyTorch's output against the engine's (1e-4), and writes
encoder_dD.onnx with torch.onnx.export (opset 17, the input's fixed shape), with no package beyond
Debian's python3-torch.
"""
import importlib.util
import pathlib
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent


def load(name, path):
    # By path: PyTorch ships a package named `torchgen`.
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tutorial = load("fixture_transformer", HERE.parent / "torchgen" / "transformer.py")
tutorial.rec = lambda name, t: None  # the stage recorder's copies are not part of the model
warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # sqrt(d_k) of a fixed shape: intended
read_f32_safetensors = load("torch_load_check", HERE.parent / "torch_load_check.py").read_f32_safetensors


class Encoder(nn.Module):
    """attn's bare encoder: the tutorial's layers, no embedding, no final LayerNorm."""

    def __init__(self, layers, d_model, heads, d_ff):
        super().__init__()
        self.layers = nn.ModuleList([tutorial.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.0)
                                     for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def export(weights, heads):
    state = read_f32_safetensors(weights)
    d_model = state["layers.0.self_attn.W_Q.weight"].shape[0]
    d_ff = state["layers.0.ffn.linear1.weight"].shape[0]
    layers = len({name.split(".")[1] for name in state})
    model = Encoder(layers, d_model, heads, d_ff).eval()
    model.load_state_dict(state, strict=True)
    stem = str(weights)[:-len(".safetensors")]
    x = torch.from_numpy(np.load(stem + "_input.npy"))
    ours = torch.from_numpy(np.load(stem + "_output.npy"))
    with torch.no_grad():
        theirs = model(x)
    error = (theirs - ours).abs().max().item()
    print(f"{pathlib.Path(weights).name}: {layers} layers, d_model {d_model}, {heads} heads, d_ff {d_ff}, "
          f"input {list(x.shape)}; PyTorch's output within {error:.2e} of attn's")
    if not error <= 1e-4:
        sys.exit(f"{weights}: PyTorch's output differs from attn's by {error} (more than 1e-4)")
    torch.onnx.export(model, (x,), stem + ".onnx", input_names=["x"], output_names=["y"], opset_version=17)


def main(folder, heads):
    found = sorted(pathlib.Path(folder).glob("encoder_d*.safetensors"))
    if not found:
        sys.exit(f"{folder}: no encoder_d*.safetensors (run attn bench encoder --dump {folder})")
    for weights in found:
        export(weights, int(heads))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
