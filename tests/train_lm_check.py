#!/usr/bin/python3
"""`attn train` of GPT-2 language models against PyTorch (Debian's python3-torch 1.13), through the files
it writes:
  1. --task induction with its defaults: the log records the phase change (the repeated segment's
     accuracy and the best induction score low at first, rising after a plateau, then >= 0.8 and >= 0.6
     with layer 0's previous-token score >= 0.6); the saved folder (--save-model-dir) loads into the
     hand-written GPT2LMHeadModel of tests/torchgen (load_state_dict strict, Hugging Face's names and
     layouts), whose logits equal `attn encode --model-dir`'s within 1e-5 and which, measured here on
     256 fresh sequences drawn by Python's generator, has the circuit: a layer-0 previous-token head and a
     later induction head (scores >= 0.6), and predicts >= 80 % of each repeated segment after its first
     token; the gradients (--save-grads) are named as PyTorch names the parameters.
  2. From scratch with a GPT-2 config.json and a Korean .txt: the character vocabulary (--save-vocab,
     --save-merges) gives each character of the text its own token, and the run's first loss is
     PyTorch's on the same initialisation (torch.manual_seed; tests/torchgen/gpt2_train.py's model).
  3. Fine-tuning the folder of 1 (--model-dir) on a JSON Lines file: the result loads into PyTorch.
With "quick" (the sanitized build) the run of 1 is 25 steps and what it learned is not checked.
    /usr/bin/python3 tests/train_lm_check.py path/to/attn [quick]
"""
import importlib.util
import json
import pathlib
import random
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("intervention_check", HERE / "intervention_check.py")
IC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(IC)
spec = importlib.util.spec_from_file_location("fixture_gpt2_train", HERE / "torchgen" / "gpt2_train.py")
G = importlib.util.module_from_spec(spec)
spec.loader.exec_module(G)
check, failures = IC.check, IC.failures
CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"  # the induction task's


def attn(binary, *args):
    r = subprocess.run([binary, *map(str, args)], capture_output=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"attn {' '.join(map(str, args))} failed: {r.stderr.decode()}")
    return r.stdout.decode()


def log_records(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def repeated_items(n, seed, length=32):
    """n sequences of `length` random tokens (Python's generator, not attn's), each with a segment of 4 to 12
    repeated at a random later place: [(ids, first, second, segment length)]."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        ids = [rng.randrange(len(CHARACTERS)) for _ in range(length)]
        k = rng.randint(4, 12)
        a = rng.randrange(0, length + 1 - 2 * k)
        b = rng.randrange(a + k, length + 1 - k)
        ids[b:b + k] = ids[a:a + k]
        items.append((ids, a, b, k))
    return items


def circuit(model, vocab, n_layer, items):
    """Per head: the previous-token score (TransformerLens's detector: the attention on the token before, over
    every position) and the induction (prefix-matching) score (from each position i of the second copy to
    i - (second - first) + 1); and the share of the second copy's tokens after its first predicted right."""
    ids = torch.tensor([[vocab[CHARACTERS[i]] for i in item[0]] for item in items])
    IC.P.STAGES.clear()
    with torch.no_grad():
        logits = model(ids)
    predicted = logits.argmax(-1)
    S = ids.shape[1]
    previous, induction = [], []
    for layer in range(n_layer):
        w = IC.P.STAGES[f"h.{layer}.attn.attn_weights"]  # [B, H, S, S]
        rows = torch.arange(1, S)
        previous.append(w[:, :, rows, rows - 1].sum(-1).mean(0) / S)
        hits = [w[b, :, i, i - (second - first) + 1] for b, (_, first, second, k) in enumerate(items)
                for i in range(second, second + k)]
        induction.append(torch.stack(hits).mean(0))
    right = [int(predicted[b, t - 1] == ids[b, t]) for b, (_, first, second, k) in enumerate(items)
             for t in range(second + 1, second + k)]
    return torch.stack(previous), torch.stack(induction), sum(right) / len(right)


def induction(binary, tmp, learns):
    """--task induction with its defaults (25 steps when quick)."""
    folder, log, grads = tmp / "induction", tmp / "induction.jsonl", tmp / "grads.safetensors"
    attn(binary, "train", "--task", "induction", *([] if learns else ["--steps", 25]), "--eval-every", 250 if learns else 25,
         "--log", log, "--save-model-dir", folder, "--save-grads", grads, "--quiet")
    config, model = IC.pretrained_model(folder)  # strict: every tensor under its Hugging Face name and shape
    check(True, "the saved folder loads into GPT2LMHeadModel (strict)")
    if learns:
        learned(model, config, folder, log)
    diff, _ = logits_difference(binary, folder, model, "abcdefabcdef")
    check(diff <= 1e-5, f"attn encode --model-dir on the trained folder: logits within {diff:.2e} of PyTorch's")
    names = set(IC.read_safetensors(grads))
    expected = {k for k, _ in model.named_parameters()}
    check(names == expected, "--save-grads names every gradient as PyTorch names its parameter")
    return folder


def learned(model, config, folder, log):
    evals = [r for r in log_records(log) if "val_loss" in r]
    first, last = evals[0], evals[-1]
    check(first["val_repeated_accuracy"] < 0.3 and first["induction_score"] < 0.3,
          f"induction, step {first['step']}: no circuit yet (repeated accuracy {first['val_repeated_accuracy']:.3f}, "
          f"induction score {first['induction_score']:.3f})")
    rise = next(r["step"] for r in evals if r["val_repeated_accuracy"] >= 0.5)
    check(rise > first["step"], f"the phase change: the repeated segment first predicted at step {rise}, after a plateau")
    check(last["val_repeated_accuracy"] >= 0.8 and last["induction_score"] >= 0.6 and last["previous_token_score"] >= 0.6,
          f"induction, step {last['step']}: repeated accuracy {last['val_repeated_accuracy']:.3f}, induction score "
          f"{last['induction_score']:.3f}, layer 0's previous-token score {last['previous_token_score']:.3f}")
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    items = repeated_items(256, seed=1)
    previous, induction_, accuracy = circuit(model, vocab, config["n_layer"], items)
    check(previous[0].max() >= 0.6 and induction_[1:].max() >= 0.6 and accuracy >= 0.8,
          f"PyTorch on 256 fresh sequences: layer 0's previous-token score {previous[0].max():.3f}, a later layer's "
          f"induction score {induction_[1:].max():.3f} (both >= 0.6), repeated accuracy {accuracy:.3f} (>= 0.8)")
    # The circuit is causal: layer 0's previous-token heads zero-ablated (as attn's --ablate and the Train
    # tab's ablation do), the induction head loses its pattern and the segment its predictions.
    heads = [(0, h) for h in range(config["n_head"]) if previous[0][h] >= 0.3]
    ablation = IC.Ablation(heads, [], "zero", config["n_embd"] // config["n_head"])
    handles = ablation.register([b.attn.c_proj for b in model.transformer.h], [])
    _, ablated_induction, ablated_accuracy = circuit(model, vocab, config["n_layer"], items)
    for h in handles:
        h.remove()
    check(ablated_induction[1:].max() < 0.3 and ablated_accuracy < 0.3,
          f"previous-token heads {heads} ablated: the induction score falls to {ablated_induction[1:].max():.3f}, "
          f"the repeated accuracy to {ablated_accuracy:.3f} (both < 0.3)")


def from_scratch(binary, tmp):
    text = "나는 학교에 간다\n너는 집에 간다\n우리는 도서관에서 공부한다\n" * 8
    data, cfg = tmp / "ko.txt", tmp / "gpt2.json"
    data.write_text(text, encoding="utf-8")
    config = {**G.BASE, "n_positions": 16}
    del config["vocab_size"]
    cfg.write_text(json.dumps(config))
    vocab_path, merges_path, log = tmp / "vocab.json", tmp / "merges.txt", tmp / "ko.jsonl"
    attn(binary, "train", "--config", cfg, "--data", data, "--seq-len", 16, "--steps", 1, "--batch-size", 4,
         "--no-shuffle", "--lr", "0.001", "--seed", 3, "--log", log, "--save-vocab", vocab_path,
         "--save-merges", merges_path, "--quiet")
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    symbols = IC.P.bytes_to_unicode()
    chars = sorted(set(text))
    ok = all(vocab.get("".join(symbols[b] for b in c.encode("utf-8"))) == i for i, c in enumerate(chars))
    check(ok, f"--save-vocab: the text's {len(chars)} characters are tokens 0 … {len(chars) - 1} in code point order")
    merges = merges_path.read_text(encoding="utf-8").splitlines()
    check(merges[0].startswith("#version") and all(len(m.split(" ")) == 2 for m in merges[1:]), "--save-merges: one pair a line")
    # PyTorch: the same initialisation and the first batch (windows 0-3 of the text, in order).
    config["vocab_size"] = len(vocab)
    torch.manual_seed(3)
    model = G.GPT2LMHeadModel(config).train()
    ids = [vocab["".join(symbols[b] for b in c.encode("utf-8"))] for c in text]
    windows = [ids[k * 16:(k + 1) * 16] for k in range(4)]
    ids_t, labels = G.batch(windows)
    loss = model(ids_t, labels).item()
    ours = log_records(log)[0]["loss"]
    check(abs(ours - loss) <= 1e-5 * abs(loss), f"from scratch: the first loss {ours:.6f} is PyTorch's {loss:.6f}")


def logits_difference(binary, folder, model, sentence):
    """The largest |difference| of `attn encode --model-dir folder`'s logits from PyTorch's, and attn's stages."""
    ours = IC.attn_json(binary, ["--model-dir", str(folder), "--sentence", sentence])
    stages = {s["name"]: s for s in ours["stages"]}
    ids = torch.tensor(stages["input_ids"]["data"]).reshape(stages["input_ids"]["shape"])
    with torch.no_grad():
        logits = model(ids)
    return (torch.tensor(stages["logits"]["data"]).reshape(logits.shape) - logits).abs().max().item(), stages


def attention_only(binary, tmp):
    """--attention-only on a task whose model has MLPs: GPT-2 with n_inner 0, whose MLP adds its c_proj.bias alone."""
    folder = tmp / "attention_only"
    attn(binary, "train", "--task", "halves", "--attention-only", "--steps", 5, "--save-model-dir", folder, "--quiet")
    config, model = IC.pretrained_model(folder)
    check(config["n_inner"] == 0, "--attention-only writes n_inner 0, and the folder loads into GPT2LMHeadModel (strict)")
    diff, stages = logits_difference(binary, folder, model, "abcDEFabcDEF")
    check(diff <= 1e-5 and "h.0.mlp.c_fc" not in stages,
          f"attention-only: logits within {diff:.2e} of PyTorch's, no MLP stage of width 0 recorded")


def fine_tune(binary, tmp, folder):
    data, out = tmp / "more.jsonl", tmp / "tuned"
    data.write_text('{"text": "abcabcabc"}\n{"text": "FEDFEDFED"}\n', encoding="utf-8")
    attn(binary, "train", "--model-dir", folder, "--data", data, "--steps", 3, "--save-model-dir", out, "--quiet")
    IC.pretrained_model(out)
    check(True, "--model-dir fine-tuning writes a folder that loads into GPT2LMHeadModel")


def main(binary, quick):
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        folder = induction(binary, tmp, not quick)
        attention_only(binary, tmp)
        from_scratch(binary, tmp)
        fine_tune(binary, tmp, folder)
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    # quick (under the sanitizers, ~9x slower): 25 steps, the files checked but not what the model learned.
    main(sys.argv[1], sys.argv[2:] == ["quick"])
