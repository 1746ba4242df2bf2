#!/usr/bin/python3
"""`attn heads` against TransformerLens's head detector (transformer_lens/head_detector.py:
get_previous_token_head_detection_pattern, get_duplicate_token_head_detection_pattern,
get_induction_head_detection_pattern and compute_head_attention_similarity_score, restated below
as that file computes them) on the attention weights of the same model run in PyTorch (Debian's
python3-torch 1.13, the modules of tests/torchgen): every family, both error measures, the
exclusions, random tokens and sentences. The random tokens must be torch.manual_seed(seed);
torch.randint(low, high, (batch, seq_len)), each row repeated once, inside the model's framing
tokens. Scores: |attn - PyTorch| <= 1e-5. TransformerLens rounds the abs score to 3 decimals;
both sides here leave it unrounded.
    /usr/bin/python3 tests/head_detector_check.py path/to/attn
"""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
TOLERANCE = 1e-5


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


I = load(HERE / "intervention_check.py", "intervention_check")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# ------------------------------------------------------------------ TransformerLens's definitions

def previous_token_pattern(tokens):
    detection_pattern = torch.zeros(tokens.shape[-1], tokens.shape[-1])
    detection_pattern[1:, :-1] = torch.eye(tokens.shape[-1] - 1)
    return torch.tril(detection_pattern)


def duplicate_token_pattern(tokens):
    token_pattern = tokens.repeat(tokens.shape[-1], 1).numpy()
    eq_mask = np.equal(token_pattern, token_pattern.T).astype(int)
    np.fill_diagonal(eq_mask, 0)
    return torch.tril(torch.as_tensor(eq_mask.astype(int)).float())


def induction_pattern(tokens):
    duplicate = duplicate_token_pattern(tokens)
    shifted = torch.roll(duplicate, shifts=1, dims=1)
    zeros_column = torch.zeros(duplicate.shape[0], 1)
    return torch.tril(torch.cat((zeros_column, shifted[:, 1:]), dim=1))


PATTERNS = {"previous_token": previous_token_pattern, "duplicate_token": duplicate_token_pattern,
            "induction": induction_pattern}


def similarity(attention, detection, exclude_bos, exclude_current_token, error_measure):
    attention = attention.clone()
    if error_measure == "mul":
        if exclude_bos:
            attention[:, 0] = 0
        if exclude_current_token:
            attention.fill_diagonal_(0)
        return ((attention * detection).sum() / attention.sum()).item()
    abs_diff = (attention - detection).abs()
    if exclude_bos:
        abs_diff[:, 0] = 0
    if exclude_current_token:
        abs_diff.fill_diagonal_(0)
    return 1 - (abs_diff.mean() * len(abs_diff)).item()


def expected_scores(weights, rows, kinds, options):
    """weights(layer) -> [B, H, S, S]; rows: each item's real ids. The mean over the items."""
    layers = len(weights)
    heads = weights[0].shape[1]
    out = {k: torch.zeros(layers, heads, dtype=torch.float64) for k in kinds}
    for b, ids in enumerate(rows):
        tokens = torch.tensor(ids)
        n = len(ids)
        for k in kinds:
            detection = PATTERNS[k](tokens)
            for layer in range(layers):
                for h in range(heads):
                    out[k][layer, h] += similarity(weights[layer][b, h, :n, :n], detection, *options) / len(rows)
    return out


# TransformerLens's all_composition_scores (HookedTransformer.py, utils.composition_scores) on the
# weights its from_pretrained holds by default: a pre-norm model's ln_1 scale folded into W_Q, W_K and
# W_V (fold_ln) and W_O centred over d_model (center_writing_weights); full d_model x d_model products.
def head_matrices(state, config):
    d, H = config["n_embd"] if "n_embd" in config else config["hidden_size"], config.get("n_head", config.get("num_attention_heads"))
    dh = d // H
    W = {k: [] for k in "QKVO"}
    for layer in range(config.get("n_layer", config.get("num_hidden_layers"))):
        if config["model_type"] == "gpt2":
            p = f"h.{layer}."
            c_attn, ln = state[p + "attn.c_attn.weight"].double(), state[p + "ln_1.weight"].double()
            proj = state[p + "attn.c_proj.weight"].double()  # Conv1D: [in, out]
            read = lambda k, h: c_attn[:, k * d + h * dh:k * d + (h + 1) * dh] * ln[:, None]
            write = lambda h: proj[h * dh:(h + 1) * dh, :] - proj[h * dh:(h + 1) * dh, :].mean(-1, keepdim=True)
        else:
            p = f"encoder.layer.{layer}.attention."
            lin = [state[p + f"self.{n}.weight"].double() for n in ("query", "key", "value")]  # [out, in]
            dense = state[p + "output.dense.weight"].double()
            read = lambda k, h: lin[k][h * dh:(h + 1) * dh, :].T
            write = lambda h: dense[:, h * dh:(h + 1) * dh].T
        for k, name in enumerate("QKV"):
            W[name].append(torch.stack([read(k, h) for h in range(H)]))
        W["O"].append(torch.stack([write(h) for h in range(H)]))
    return {k: torch.stack(v) for k, v in W.items()}  # [L, H, d, dh]; O: [L, H, dh, d]


def decoder_head_matrices(folder):
    """A Llama-family fixture's W_Q, W_K, W_V [L, n, H, d] and W_O [L, n, d, H] as TransformerLens holds them:
    the input norm's scale folded into the reading weights (Gemma's 1 + w), each key/value head repeated for its
    query heads, W_O centred for GPT-NeoX's LayerNorm only; NeoX's query_key_value split per head."""
    config = json.loads((folder / "config.json").read_text())
    files = [folder / "model.safetensors"] if (folder / "model.safetensors").exists() else sorted(folder.glob("model-*.safetensors"))
    state = {}
    for f in files:
        state.update({k: v.double() for k, v in I.read_safetensors(f).items()})
    H, n = config["hidden_size"], config["num_attention_heads"]
    kv, d = config.get("num_key_value_heads", n), config.get("head_dim") or H // n
    neox = config["model_type"] == "gpt_neox"
    W = {k: [] for k in "QKVO"}
    for layer in range(config["num_hidden_layers"]):
        p = f"gpt_neox.layers.{layer}." if neox else f"model.layers.{layer}."
        scale = state[p + "input_layernorm.weight"] + (1.0 if config["model_type"].startswith("gemma") else 0.0)
        if neox:  # [n, 3, d, H]: each head's q, k, v in turn
            qkv = state[p + "attention.query_key_value.weight"].view(n, 3, d, H)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
            o = state[p + "attention.dense.weight"]
        else:
            q = state[p + "self_attn.q_proj.weight"].view(n, d, H)
            k = state[p + "self_attn.k_proj.weight"].view(kv, d, H).repeat_interleave(n // kv, dim=0)
            v = state[p + "self_attn.v_proj.weight"].view(kv, d, H).repeat_interleave(n // kv, dim=0)
            o = state[p + "self_attn.o_proj.weight"]
        for name, m in zip("QKV", (q, k, v)):
            W[name].append(m.transpose(1, 2) * scale[None, :, None])
        o = o.view(H, n, d).permute(1, 2, 0)  # [n, d, H]
        W["O"].append(o - o.mean(-1, keepdim=True) if neox else o)
    return {k: torch.stack(v) for k, v in W.items()}


def decoder_composition_case(attn, name):
    folder = I.PRETRAINED / name
    ours = attn_heads(attn, ["--model-dir", str(folder), "--seq-len", "4", "--composition"])["composition"]
    W = decoder_head_matrices(folder)
    for mode in "QKV":
        theirs = composition_reference(W, mode)
        got = torch.tensor(ours[mode]["scores"], dtype=torch.float64)
        error = float((got - theirs).abs().max())
        check(got.shape == theirs.shape and error <= TOLERANCE and theirs.max() > 0,
              f"{name}: {mode}-composition equals TransformerLens's all_composition_scores (largest error {error:.1e})")


def composition_reference(W, mode):
    ov = W["V"] @ W["O"]
    qk = W["Q"] @ W["K"].transpose(-1, -2)
    right = {"Q": qk, "K": qk.transpose(-1, -2), "V": ov}[mode]
    left, right = ov[:, :, None, None], right[None, None]
    fro = lambda m: torch.linalg.matrix_norm(m, "fro")
    scores = fro(left @ right) / fro(left) / fro(right)
    L = ov.shape[0]
    mask = torch.arange(L)[:, None, None, None] < torch.arange(L)[None, None, :, None]
    return torch.where(mask, scores, torch.zeros_like(scores))


def composition_case(attn, case, folder):
    config, model = I.pretrained_model(folder)
    state = {k.removeprefix("transformer.").removeprefix("bert."): v for k, v in model.state_dict().items()}
    ours = attn_heads(attn, ["--model-dir", str(folder), "--seq-len", "4", "--composition"])["composition"]
    W = head_matrices(state, config)
    for mode in "QKV":
        theirs = composition_reference(W, mode)
        got = torch.tensor(ours[mode]["scores"], dtype=torch.float64)
        error = float((got - theirs).abs().max())
        check(got.shape == theirs.shape and error <= TOLERANCE and theirs.max() > 0,
              f"{case}: {mode}-composition of every pair of heads equals TransformerLens's all_composition_scores "
              f"(largest error {error:.1e}, largest score {float(theirs.max()):.3f})")


def fitted_case(attn, tmp):
    """A model of 24 positions (the halves task's): the default sequences fit it, and say so."""
    folder = tmp / "halves"
    subprocess.run([attn, "train", "--task", "halves", "--steps", "1", "--save-model-dir", str(folder), "--quiet"],
                   check=True, timeout=300)
    ours = attn_heads(attn, ["--model-dir", str(folder)])
    s = ours["sequences"]
    check(s["seq_len"] == 11 and s["seq_len_fitted"] and all(len(r) == 23 for r in s["ids"]),
          f"attn heads on a model of 24 positions: --seq-len {s['seq_len']} fitted (<|endoftext|> + 2 x 11 tokens)")


# ------------------------------------------------------------------ the cases

def attn_heads(attn, args):
    r = subprocess.run([attn, "heads", "--json", *args], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn heads {' '.join(args)} failed: {r.stderr.decode()}")
    return json.loads(r.stdout)


def option_flags(options):
    exclude_bos, exclude_current, measure = options
    return (["--exclude-bos"] if exclude_bos else []) + (["--exclude-current-token"] if exclude_current else []) + \
        ["--error-measure", measure]


def check_tokens(case, ours):
    s = ours["sequences"]
    if s["source"] != "random":
        return
    torch.manual_seed(s["seed"])
    drawn = torch.randint(s["token_range"][0], s["token_range"][1], (s["batch"], s["seq_len"]))
    rows = [s["before"] + r + r + s["after"] for r in drawn.tolist()]
    check(rows == s["ids"], f"{case}: the random tokens are torch.randint's after torch.manual_seed({s['seed']})")


def compare(case, ours, weights, options):
    kinds = list(ours["detectors"])
    theirs = expected_scores(weights, ours["sequences"]["ids"], kinds, options)
    error = max(float((torch.tensor(ours["detectors"][k]["scores"], dtype=torch.float64) - theirs[k]).abs().max())
                for k in kinds)
    check(error <= TOLERANCE, f"{case}: {', '.join(kinds)} scores equal TransformerLens's definitions on PyTorch's "
                              f"attention (largest error {error:.1e} <= {TOLERANCE:g})")
    return theirs


def pretrained_case(attn, case, folder, args, options):
    config, model = I.pretrained_model(folder)
    ours = attn_heads(attn, ["--model-dir", str(folder), *args, *option_flags(options)])
    check_tokens(case, ours)
    rows = ours["sequences"]["ids"]
    S = max(map(len, rows))
    pad = 0 if config["model_type"] == "bert" else config["vocab_size"] - 1
    ids = torch.tensor([r + [pad] * (S - len(r)) for r in rows])
    I.P.STAGES.clear()
    with torch.no_grad():
        if config["model_type"] == "bert":
            mask = torch.tensor([[1] * len(r) + [0] * (S - len(r)) for r in rows])
            model(ids, torch.zeros_like(ids), mask)
            name = "encoder.layer.{}.attention.self.attention_probs"
        else:
            model(ids)
            name = "h.{}.attn.attn_weights"
    layers = ours["layers"]
    return ours, compare(case, ours, [I.P.STAGES[name.format(l)] for l in range(layers)], options)


def classifier_case(attn, tmp, case, model_flags, mask, args, options):
    weights = tmp / "classifier.safetensors"
    # attn encode seeds the same model and saves it (attn heads --seed N seeds it the same way).
    encoded = I.attn_json(attn, [*model_flags, "--mask", mask, "--ids", "1", "--save-weights", str(weights)])
    model = I.classifier_model(encoded["config"], weights)
    ours = attn_heads(attn, [*model_flags, "--mask", mask, *args, *option_flags(options)])
    check_tokens(case, ours)
    rows = ours["sequences"]["ids"]
    S = max(map(len, rows))
    stages = I.classifier_run(model, [r + [0] * (S - len(r)) for r in rows], mask)
    weights_by_layer = [stages[f"layers.{l}.self_attn.attention_weights"] for l in range(ours["layers"])]
    return ours, compare(case, ours, weights_by_layer, options)


def main(attn):
    gpt2, bert = I.PRETRAINED / "gpt2_tiny", I.PRETRAINED / "bert_tiny"
    mul, abs_ = (False, False, "mul"), (False, False, "abs")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        pretrained_case(attn, "gpt2 random", gpt2, ["--seq-len", "12", "--batch", "3", "--seed", "5"], mul)
        pretrained_case(attn, "gpt2 excluding bos and the current token", gpt2, ["--seq-len", "7"], (True, True, "mul"))
        pretrained_case(attn, "gpt2 abs", gpt2, ["--seq-len", "6", "--batch", "2"], abs_)
        pretrained_case(attn, "gpt2 sentences", gpt2, ["--sentence", "the cat sat on the mat and the cat sat",
                                                        "--sentence", "the dog ran"], mul)
        pretrained_case(attn, "bert random", bert, ["--seq-len", "9", "--detect", "induction,previous_token"], mul)
        pretrained_case(attn, "bert abs excluding bos", bert, ["--seq-len", "5"], (True, False, "abs"))
        small = ["--num-layers", "2", "--d-model", "16", "--num-heads", "4", "--seed", "3", "--vocab-size", "40"]
        classifier_case(attn, tmp, "classifier causal", small, "causal", ["--seq-len", "10", "--batch", "2"], mul)
        classifier_case(attn, tmp, "classifier padding, token range", small, "padding",
                        ["--seq-len", "8", "--token-range", "5:12"], (False, True, "mul"))
        composition_case(attn, "gpt2 (pre-norm: ln_1 folded, W_O centred)", gpt2)
        composition_case(attn, "bert (post-norm: the weights as they are)", bert)
        for name in ("llama3_gqa", "qwen3_norm", "gemma2_cap", "pythia_parallel"):
            decoder_composition_case(attn, name)
        fitted_case(attn, tmp)
        # The scores mean what they say: a causal attention that is exactly the previous-token pattern
        # (TransformerLens's own check) is worth 1; here GPT-2's random heads are far from it.
        ours = attn_heads(attn, ["--model-dir", str(gpt2), "--seq-len", "12"])
        best = max(max(row) for row in ours["detectors"]["previous_token"]["scores"])
        check(0.0 < best < 0.9, f"an untrained tiny GPT-2 has no sharp previous-token head (best {best:.3f})")
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
