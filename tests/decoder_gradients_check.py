#!/usr/bin/python3
"""`attn encode --model-dir D --save-gradients F` against autograd: every weight's gradient of the mean
next-token cross-entropy on the Llama-family fixtures (tests/torchgen/decoder.py's modules, the weights
read back from the folder), F.cross_entropy(logits[:, :-1], ids[:, 1:]) as a causal LM's training step
computes it (transformers' labels = input_ids). Each tensor within 1e-5 of PyTorch's, normalised by
max(1, its largest magnitude); the loss within 1e-6 relative; names and shapes the state_dict's (NeoX's
query_key_value fused, a tied lm_head's gradient in the embedding's).
    /usr/bin/python3 tests/decoder_gradients_check.py path/to/attn
"""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("attribution_check", HERE / "attribution_check.py")
A = importlib.util.module_from_spec(spec)
spec.loader.exec_module(A)
TOLERANCE, LOSS_TOLERANCE = 1e-5, 1e-6
# Two rows where the folder's positions allow, to check the sum over a batch.
IDS = {"llama3_gqa": [[5, 17, 42, 3, 60, 8], [1, 33, 2, 63, 14, 50]]}
NAMES = ("llama_tiny", "llama3_gqa", "qwen2_bias", "qwen3_norm", "mistral_window", "gemma2_cap", "gemma3_local",
         "pythia_parallel", "neox_sequential")


def case(program, name, tmp, worst):
    model, c = A.decoder_model(name)
    ids = IDS.get(name, [[5, 17, 42, 3, 60, 8, 29, 11]])
    out = tmp / f"{name}.safetensors"
    flags = [a for row in ids for a in ("--ids", " ".join(map(str, row)))]
    r = subprocess.run([program, "encode", "--model-dir", str(A.IC.PRETRAINED / name), *flags, "--save-gradients",
                        str(out)], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn encode --save-gradients on {name} failed: {r.stderr.decode()}")
    ours = A.IC.read_safetensors(out)
    tokens = torch.tensor(ids)
    logits = model(tokens)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    model.zero_grad()
    loss.backward()
    expected = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    if c["tie_word_embeddings"]:  # one parameter under both names; save_pretrained writes the embedding's
        expected = {k: v for k, v in expected.items() if k != "lm_head.weight"}
    A.check(sorted(ours) == sorted(expected), f"{name}: the gradients of the state_dict's {len(expected)} tensors")
    errors = {}
    for key in sorted(set(ours) & set(expected)):
        got, want = ours[key].double(), expected[key].double()
        errors[key] = float((got - want).abs().max()) / max(1.0, float(want.abs().max())) \
            if got.shape == want.shape else float("inf")
    key = max(errors, key=errors.get)
    worst[0] = max(worst[0], errors[key])
    A.check(errors[key] <= TOLERANCE, f"{name}: every gradient within {TOLERANCE:g} of autograd's "
                                      f"(the farthest {key}, {errors[key]:.1e})")
    with open(out, "rb") as f:
        header = f.read(int.from_bytes(f.read(8), "little"))
    ours_loss = float(json.loads(header)["__metadata__"]["loss"])
    A.check(abs(ours_loss - float(loss)) <= LOSS_TOLERANCE * max(1.0, abs(float(loss))), f"{name}: loss {ours_loss:.7f} equals PyTorch's {float(loss):.7f}")


def main(program):
    worst = [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            case(program, name, pathlib.Path(tmp), worst)
    print(f"largest normalised difference: {worst[0]:.1e}")
    if A.failures:
        raise SystemExit(f"{len(A.failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
