#!/usr/bin/python3
"""`attn encode --ablate / --ablate-mlp` (and `attn tutorial --ablate`) against the same ablation done in
PyTorch (Debian's python3-torch 1.13), on every family: the first tutorial's single head (its script,
tests/torchgen/tutorial1.py), the second tutorial's classifier (post-norm and pre-norm), BERT and GPT-2
(the tiny checkpoints of tests/fixtures/pretrained). The PyTorch side uses the modules of
tests/torchgen with TransformerLens's definitions as forward hooks: a head's z (its columns of the
attention output, before the output projection) replaced by a forward pre-hook on that projection, an
MLP's output by a forward hook on the block. Mean ablation: the mean over the real tokens (padding
excluded) of every item of a clean run, of --mean-data's sentences or of the inputs. Every stage of
attn's trace is compared with PyTorch's (the ablated stage after the same replacement): max |diff|
<= 1e-4 * max(1, max |value|).
    /usr/bin/python3 tests/intervention_check.py path/to/attn
"""
import contextlib
import importlib.util
import io
import json
import pathlib
import subprocess
import sys
import tempfile

import torch

HERE = pathlib.Path(__file__).resolve().parent
PRETRAINED = HERE / "fixtures" / "pretrained"
TOLERANCE = 1e-4


def load(path, name):  # by path: PyTorch ships a package named torchgen
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = load(HERE / "torchgen" / "transformer.py", "fixture_transformer")
P = load(HERE / "torchgen" / "pretrained.py", "fixture_pretrained")
TUTORIAL = load(HERE / "torchgen" / "tutorial1.py", "fixture_tutorial1")
read_safetensors = load(HERE / "train_check.py", "train_check").read_safetensors
failures = []
worst = {}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attn_json(attn, args, command="encode"):
    r = subprocess.run([attn, command, "--json", *args], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn {command} {' '.join(args)} failed: {r.stderr.decode()}")
    return json.loads(r.stdout)


PADS = ("[PAD]", "<|endoftext|>")  # the classifier's and BERT's padding, GPT-2's


def real_lengths(tokens):
    """Each row's tokens before its trailing padding."""
    lengths = []
    for row in tokens:
        n = len(row)
        while n > 1 and row[n - 1] in PADS:
            n -= 1
        lengths.append(n)
    return lengths


def real_mean(z, lengths, cols):
    """z [B, S, W]: the mean over each item's first lengths[b] positions, of columns `cols`."""
    return torch.cat([z[b, :n, cols] for b, n in enumerate(lengths)]).mean(0)


class Ablation:
    """The hooks of one ablation on a PyTorch model: heads (layer, head) on the z stage, whole MLPs."""

    def __init__(self, heads, mlps, kind, head_dim, means=None):
        self.heads, self.mlps, self.kind, self.dk, self.means = heads, mlps, kind, head_dim, means or {}

    def fill_heads(self, layer, z):
        z = z.clone()
        for (l, h) in self.heads:
            if l == layer:
                cols = slice(h * self.dk, (h + 1) * self.dk)
                z[..., cols] = self.means[("head", l, h)] if self.kind == "mean" else 0.0
        return z

    def fill_mlp(self, layer, out):
        if layer not in self.mlps:
            return out
        return self.means[("mlp", layer)].expand_as(out).clone() if self.kind == "mean" else torch.zeros_like(out)

    def register(self, projections, mlps):
        handles = []
        for layer, module in enumerate(projections):
            handles.append(module.register_forward_pre_hook(lambda m, args, l=layer: (self.fill_heads(l, args[0]),)))
        for layer, module in enumerate(mlps):
            handles.append(module.register_forward_hook(lambda m, args, out, l=layer: self.fill_mlp(l, out)))
        return handles


def take_means(ablation, stages, z_name, mlp_name, lengths):
    for (l, h) in ablation.heads:
        cols = slice(h * ablation.dk, (h + 1) * ablation.dk)
        ablation.means[("head", l, h)] = real_mean(stages[z_name(l)], lengths, cols)
    for l in ablation.mlps:
        ablation.means[("mlp", l)] = real_mean(stages[mlp_name(l)], lengths, slice(None))


def compare(case, ours, theirs, ablation, z_name, mlp_name):
    """Every stage attn recorded against PyTorch's; the replaced stages after the replacement."""
    expected = dict(theirs)
    for layer in {l for l, _ in ablation.heads}:
        expected[z_name(layer)] = ablation.fill_heads(layer, theirs[z_name(layer)])
    for layer in ablation.mlps:
        expected[mlp_name(layer)] = ablation.fill_mlp(layer, theirs[mlp_name(layer)])
    worst_stage, worst_error, missing = "", 0.0, []
    for s in ours["stages"]:
        if s["name"] not in expected:
            missing.append(s["name"])
            continue
        ref = expected[s["name"]].to(torch.float64).reshape(-1)
        got = torch.tensor(s["data"], dtype=torch.float64)
        if got.shape != ref.shape:
            missing.append(s["name"] + " (shape)")
            continue
        error = float((got - ref).abs().max()) / max(1.0, float(ref.abs().max()))
        if error > worst_error:
            worst_stage, worst_error = s["name"], error
    worst[case] = worst_error
    check(not missing and worst_error <= TOLERANCE,
          f"{case}: {len(ours['stages'])} stages equal PyTorch's (largest error {worst_error:.2e} at "
          f"{worst_stage or '-'}, <= {TOLERANCE:g}){'; not compared: ' + ', '.join(missing) if missing else ''}")


def flags(heads, mlps, kind):
    out = ["--ablation", kind]
    if heads:
        out += ["--ablate", ",".join(f"{l}.{h}" for l, h in heads)]
    if mlps:
        out += ["--ablate-mlp", ",".join(map(str, mlps))]
    return out


# ------------------------------------------------------------------ the first tutorial's single head

def tutorial_case(attn, name, sentences, seed, d_model, mask, kind):
    """Its z is its output, the last stage: the ablation replaces it and nothing follows."""
    args = ["--seed", seed, "--d-model", str(d_model), "--mask", mask, "--ablate", "0.0", "--ablation", kind]
    ours = attn_json(attn, [*args, *[a for s in sentences for a in ("--sentence", s)]], "tutorial")
    with contextlib.redirect_stdout(io.StringIO()):  # the script prints as it goes
        _, tokens, stages = TUTORIAL.run(sentences, seed, d_model, 100, mask)
    theirs = dict(stages)
    z_name = lambda l: "attention_output"
    ablation = Ablation([(0, 0)], [], kind, d_model)
    if kind == "mean":
        take_means(ablation, theirs, z_name, None, real_lengths(tokens))
    compare(name, ours, theirs, ablation, z_name, None)


# ------------------------------------------------------------------ the tutorial's classifier

def classifier_model(config, weights):
    kw = {k: config[k] for k in ("activation", "norm_first")}
    main = {k: config[k] for k in ("vocab_size", "d_model", "num_heads", "num_layers", "num_classes", "d_ff", "max_len",
                                   "dropout")}
    model = T.TransformerClassifier(**main, **kw).eval()
    model.load_state_dict(read_safetensors(weights), strict=True)
    return model


def classifier_run(model, ids, mask_kind):
    T.STAGES.clear()
    x = torch.tensor(ids)
    m = T.make_mask(mask_kind, x)
    with torch.no_grad():
        model(x, None if m is None else m.unsqueeze(1))
    return dict(T.STAGES)


def classifier_case(attn, tmp, name, model_flags, mask_kind, heads, mlps, kind):
    weights = tmp / f"{name}.safetensors"
    ours = attn_json(attn, [*model_flags, "--mask", mask_kind, "--save-weights", str(weights), *flags(heads, mlps, kind)])
    c = ours["config"]
    model = classifier_model(c, weights)
    vocab = ours["vocab"]
    ids = [[vocab[t] for t in row] for row in ours["tokens"]]
    z_name = lambda l: f"layers.{l}.self_attn.attention_output"
    mlp_name = lambda l: f"layers.{l}.ffn.output"
    ablation = Ablation(heads, mlps, kind, c["d_model"] // c["num_heads"])
    if kind == "mean":
        take_means(ablation, classifier_run(model, ids, mask_kind), z_name, mlp_name, real_lengths(ours["tokens"]))
    handles = ablation.register([l.self_attn.W_O for l in model.encoder.layers], [l.ffn for l in model.encoder.layers])
    theirs = classifier_run(model, ids, mask_kind)
    for h in handles:
        h.remove()
    compare(name, ours, theirs, ablation, z_name, mlp_name)
    return ours


# ------------------------------------------------------------------ BERT and GPT-2

def pretrained_model(folder):
    config = json.loads((folder / "config.json").read_text())
    state = read_safetensors(folder / "model.safetensors")
    if config["model_type"] == "bert":
        model = P.BertModel(config)
    else:
        model = P.GPT2LMHeadModel(config)
    model.load_state_dict(state, strict=True)
    return config, model.eval()


def pretrained_run(model, stages):
    """The model on the inputs attn recorded (its tokenizer is tested elsewhere)."""
    P.STAGES.clear()
    ids = torch.tensor(stages["input_ids"]["data"]).reshape(stages["input_ids"]["shape"])
    with torch.no_grad():
        if "token_type_ids" in stages:
            types = torch.tensor(stages["token_type_ids"]["data"]).reshape(ids.shape)
            mask = torch.tensor(stages["attention_mask"]["data"]).reshape(ids.shape)
            model(ids, types, mask)
        else:
            model(ids)
    return dict(P.STAGES)


def pretrained_case(attn, name, folder, sentences, heads, mlps, kind, mean_data=None):
    config, model = pretrained_model(folder)
    bert = config["model_type"] == "bert"
    args = ["--model-dir", str(folder), *[a for s in sentences for a in ("--sentence", s)], *flags(heads, mlps, kind)]
    if mean_data:
        args += ["--mean-data", str(mean_data)]
    ours = attn_json(attn, args)
    by_name = {s["name"]: s for s in ours["stages"]}
    if bert:
        z_name = lambda l: f"encoder.layer.{l}.attention.self.context"
        mlp_name = lambda l: f"encoder.layer.{l}.output.dense"
        projections = [l.attention.output.dense for l in model.encoder.layer]
        mlps_modules = [l.output.dense for l in model.encoder.layer]
        heads_count = config["num_attention_heads"]
        width = config["hidden_size"]
    else:
        z_name = lambda l: f"h.{l}.attn.merged"
        mlp_name = lambda l: f"h.{l}.mlp.c_proj"
        projections = [b.attn.c_proj for b in model.transformer.h]
        mlps_modules = [b.mlp for b in model.transformer.h]
        heads_count = config["n_head"]
        width = config["n_embd"]
    ablation = Ablation(heads, mlps, kind, width // heads_count)
    if kind == "mean":
        if mean_data:
            clean = attn_json(attn, ["--model-dir", str(folder), "--sentences-file", str(mean_data)])
            clean_stages = {s["name"]: s for s in clean["stages"]}
            take_means(ablation, pretrained_run(model, clean_stages), z_name, mlp_name, real_lengths(clean["tokens"]))
        else:
            take_means(ablation, pretrained_run(model, by_name), z_name, mlp_name, real_lengths(ours["tokens"]))
    handles = ablation.register(projections, mlps_modules)
    theirs = pretrained_run(model, by_name)
    for h in handles:
        h.remove()
    # GPT-2's next_token_probs: the softmax at each row's last real position (PyTorch's at the last one).
    if not bert:
        logits = theirs["logits"]
        rows = [logits[b, n - 1] for b, n in enumerate(real_lengths(ours["tokens"]))]
        theirs["next_token_probs"] = torch.softmax(torch.stack(rows), dim=-1)
    compare(name, ours, theirs, ablation, z_name, mlp_name)
    return ours


def main(attn):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        post = ["--num-layers", "2", "--d-model", "16", "--num-heads", "4", "--seed", "3"]
        pre = ["--num-layers", "2", "--d-model", "12", "--num-heads", "3", "--seed", "4", "--norm-first",
               "--activation", "gelu"]
        korean = ["나는 오늘 학교에 간다", "나는 오늘 도서관에 간다", "오늘 나는 학교에서 공부한다", "나는 집에 간다"]
        tutorial_case(attn, "first tutorial zero", korean, "0", 6, "padding", "zero")
        tutorial_case(attn, "first tutorial mean", korean, "0", 6, "padding", "mean")
        tutorial_case(attn, "first tutorial mean, causal", ["the cat sat on the mat", "a dog", "x y z"], "42", 8,
                      "padding+causal", "mean")
        classifier_case(attn, tmp, "classifier zero heads", post, "padding", [(0, 1), (1, 3)], [], "zero")
        classifier_case(attn, tmp, "classifier mean heads", post, "padding", [(0, 0), (1, 2)], [], "mean")
        classifier_case(attn, tmp, "classifier zero mlp", post, "padding", [], [0], "zero")
        classifier_case(attn, tmp, "classifier mean head + mlp", post, "padding", [(1, 1)], [1], "mean")
        classifier_case(attn, tmp, "classifier pre-norm causal", pre, "causal", [(1, 0), (0, 2)], [0], "zero")
        bert, gpt2 = PRETRAINED / "bert_tiny", PRETRAINED / "gpt2_tiny"
        pretrained_case(attn, "bert zero heads", bert, ["the cat sat on the mat", "hello world"], [(0, 1), (1, 3)], [],
                        "zero")
        pretrained_case(attn, "bert mean head + mlp", bert, ["the cat sat on the mat", "hello world"], [(1, 0)], [0],
                        "mean")
        mean_data = tmp / "mean.txt"
        mean_data.write_text("the dog sat with the cat.\nthen the cat ran\nthe mat\n", encoding="utf-8")
        pretrained_case(attn, "gpt2 zero heads", gpt2, ["the cat sat on the mat", "the dog ran"], [(0, 2)], [], "zero")
        pretrained_case(attn, "gpt2 mean heads (--mean-data)", gpt2, ["the cat sat on the mat", "the dog ran"],
                        [(1, 1), (1, 3)], [], "mean", mean_data)
        pretrained_case(attn, "gpt2 zero mlp", gpt2, ["the cat sat on the mat"], [], [1], "zero")
        # The ablation changes what it must: a zeroed head's logits differ from the clean run's.
        clean = attn_json(attn, ["--model-dir", str(gpt2), "--sentence", "the cat sat on the mat"])
        ablated = attn_json(attn, ["--model-dir", str(gpt2), "--sentence", "the cat sat on the mat", "--ablate", "0.2"])
        logits = lambda d: torch.tensor(next(s["data"] for s in d["stages"] if s["name"] == "logits"))
        change = float((logits(clean) - logits(ablated)).abs().max())
        check(change > 1e-3, f"ablating GPT-2's head 0.2 changes its logits (by up to {change:.3f})")
    print(f"largest error over the cases: {max(worst.values()):.2e}")
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
