#!/usr/bin/python3
"""Weights cross both ways between `attn encode` and PyTorch (Debian's python3-torch 1.13):
1. a model initialised by `attn encode --seed` and saved with --save-weights loads into the
   tutorial's TransformerClassifier with load_state_dict(strict=True) and gives the same logits
   (and --save-npy's files load in NumPy);
2. PyTorch models (tutorial layers, pre-norm/GELU, and nn.TransformerEncoderLayer layers) saved as
   safetensors load into `attn encode --weights` and give PyTorch's logits.
    /usr/bin/python3 tests/torch_roundtrip.py path/to/attn
"""
import importlib.util
import json
import math
import pathlib
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent
TOLERANCE = 1e-5  # relative + absolute, as tests/test_transformer.cpp


def load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / "torchgen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = load("transformer")
ST = load("safetensors")


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", e
        begin, end = e["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").copy()).reshape(e["shape"])
    return out


class TorchLayerClassifier(nn.Module):
    """The tutorial's classifier with PyTorch's own encoder layers inside."""

    def __init__(self, vocab_size, d_model, num_heads, num_layers, num_classes, d_ff, max_len):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = T.PositionalEncoding(d_model, max_len, 0.1)
        layer = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model))
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, x, key_padding):
        h = self.pos_encoding(self.embedding(x) * math.sqrt(self.embedding.embedding_dim))
        return self.fc(self.encoder(h, src_key_padding_mask=key_padding).mean(dim=1))


def attn_logits(attn, args):
    out = subprocess.run([attn, "encode", "--json", *args], check=True, capture_output=True, text=True).stdout
    stage = {s["name"]: s for s in json.loads(out)["stages"]}["logits"]
    return torch.tensor(stage["data"]).reshape(stage["shape"])


def check(name, ours, theirs):
    err = (ours - theirs).abs()
    ok = bool((err <= TOLERANCE * (1 + theirs.abs())).all())
    print(f"{'ok ' if ok else 'FAIL'} {name}: max abs error {err.max().item():.3g}")
    return ok


def ids_args(ids):
    return [a for row in ids for a in ("--ids", " ".join(map(str, row)))]


def main(attn):
    ok = True
    tmp = pathlib.Path(tempfile.mkdtemp())
    ids = [[1, 2, 3, 0], [4, 5, 6, 7]]
    x = torch.tensor(ids)
    cfg = dict(vocab_size=8, d_model=16, num_heads=4, num_layers=2, num_classes=3, max_len=16)
    flags = ["--vocab-size", "8", "--d-model", "16", "--num-heads", "4", "--num-layers", "2", "--num-classes", "3",
             "--max-len", "16"]
    mask = T.make_mask("padding", x).unsqueeze(1)

    # 1. ours → PyTorch (and the stages as .npy files for NumPy)
    ours = attn_logits(attn, ["--seed", "3", "--save-weights", str(tmp / "ours.safetensors"),
                              "--save-npy", str(tmp / "npy"), *flags, *ids_args(ids)])
    model = T.TransformerClassifier(**cfg).eval()
    model.load_state_dict(read_safetensors(tmp / "ours.safetensors"), strict=True)
    with torch.no_grad():
        ok &= check("attn weights in PyTorch", ours, model(x, mask))
    ok &= check("logits.npy read by numpy", torch.from_numpy(np.load(tmp / "npy" / "logits.npy")), ours)

    # 2. PyTorch → ours, tutorial layers (pre-norm, GELU) and PyTorch's own layers
    torch.manual_seed(9)
    model = T.TransformerClassifier(**cfg, activation="gelu", norm_first=True).eval()
    (tmp / "pre.safetensors").write_bytes(ST._safetensors_file(model.state_dict()))
    with torch.no_grad():
        ok &= check("PyTorch pre-norm GELU weights in attn",
                    attn_logits(attn, ["--weights", str(tmp / "pre.safetensors"), "--activation", "gelu",
                                       "--norm-first", *flags, *ids_args(ids)]), model(x, mask))
    torch.manual_seed(10)
    model = TorchLayerClassifier(8, 16, 4, 2, 3, 32, 16).eval()
    (tmp / "torch.safetensors").write_bytes(ST._safetensors_file(model.state_dict()))
    with torch.no_grad():
        ok &= check("PyTorch nn.TransformerEncoderLayer weights in attn",
                    attn_logits(attn, ["--weights", str(tmp / "torch.safetensors"), "--layer-style", "torch",
                                       "--d-ff", "32", "--mask", "none", *flags, *ids_args([[1, 2, 3, 4], [4, 5, 6, 7]])]),
                    model(torch.tensor([[1, 2, 3, 4], [4, 5, 6, 7]]), None))
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1]) else 1)
