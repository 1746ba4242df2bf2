#!/usr/bin/python3
"""`attn patch` and `attn encode --logit-lens` against the same computations in PyTorch (Debian's
python3-torch 1.13), on the tiny GPT-2 of tests/fixtures/pretrained and on the tutorial's classifier
(post-norm with a padding mask, pre-norm with a causal one).

Activation patching as TransformerLens's patching.py defines it: run the clean and the corrupted input,
then the corrupted one again with one activation taken from the clean run, and report
(patched - corrupted) / (clean - corrupted) of the metric. The patches are PyTorch hooks on the modules
of tests/torchgen:
  heads      a forward pre-hook on the output projection replacing the head's columns of z (every position)
  resid_pre  a forward pre-hook on block L replacing one position of its input
  attn_out   a forward hook on block L's attention replacing its output
  mlp_out    a forward hook on block L's MLP replacing its output
The metric: GPT-2's logit difference at the last position, a classifier's logit of --label minus the
best other class's. Every recovery must be within 1e-4 of PyTorch's, every metric within 1e-4 relative.

The logit lens: each residual stream stage through the final LayerNorm and the unembedding (GPT-2:
softmax(ln_f(x) @ wte^T), top k) or the classifier's head (softmax(fc(norm(x))) per position, and
softmax(fc(norm(x).mean(1)))), within 1e-5, the top-k ids the same.
    /usr/bin/python3 tests/patching_check.py path/to/attn
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
spec = importlib.util.spec_from_file_location("intervention_check", HERE / "intervention_check.py")
IC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(IC)
T, P = IC.T, IC.P
RECOVERY_TOLERANCE, LENS_TOLERANCE = 1e-4, 1e-5
failures = []
worst = {"recovery": 0.0, "lens": 0.0}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attn(program, args):
    r = subprocess.run([program, *args], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn {' '.join(args)} failed: {r.stderr.decode()}")
    return json.loads(r.stdout)


class Patcher:
    """One model's four patch points as PyTorch modules, and how to run it and read its metric."""

    def __init__(self, run, metric, projections, blocks, attentions, mlps, head_dim):
        self.run, self.metric = run, metric  # run(ids) -> logits, with whatever hooks are registered
        self.projections, self.blocks, self.attentions, self.mlps, self.dk = projections, blocks, attentions, mlps, head_dim

    def capture(self, ids):
        """Every patch point's activation on a clean run: z, each block's input, attention and MLP outputs."""
        cache, handles = {}, []
        for l in range(len(self.blocks)):
            handles.append(self.projections[l].register_forward_pre_hook(lambda m, a, l=l: cache.__setitem__(("z", l), a[0])))
            handles.append(self.blocks[l].register_forward_pre_hook(lambda m, a, l=l: cache.__setitem__(("resid", l), a[0])))
            handles.append(self.attentions[l].register_forward_hook(
                lambda m, a, out, l=l: cache.__setitem__(("attn", l), out[0] if isinstance(out, tuple) else out)))
            handles.append(self.mlps[l].register_forward_hook(lambda m, a, out, l=l: cache.__setitem__(("mlp", l), out)))
        logits = self.run(ids)
        for h in handles:
            h.remove()
        return cache, self.metric(logits)

    def patched(self, ids, module, hook, pre):
        handle = module.register_forward_pre_hook(hook) if pre else module.register_forward_hook(hook)
        value = self.metric(self.run(ids))
        handle.remove()
        return value

    def sweeps(self, clean_ids, corrupted_ids, heads, seq):
        clean, clean_metric = self.capture(clean_ids)
        _, corrupted_metric = self.capture(corrupted_ids)
        span = clean_metric - corrupted_metric
        out = {"heads": [], "resid_pre": [], "attn_out": [], "mlp_out": []}
        for l in range(len(self.blocks)):
            row = []
            for h in range(heads):
                cols = slice(h * self.dk, (h + 1) * self.dk)

                def z_hook(m, args, l=l, cols=cols):
                    z = args[0].clone()
                    z[..., cols] = clean[("z", l)][..., cols]
                    return (z, *args[1:])
                row.append(self.patched(corrupted_ids, self.projections[l], z_hook, True))
            out["heads"].append(row)
            row = []
            for p in range(seq):
                def resid_hook(m, args, l=l, p=p):
                    x = args[0].clone()
                    x[:, p] = clean[("resid", l)][:, p]
                    return (x, *args[1:])
                row.append(self.patched(corrupted_ids, self.blocks[l], resid_hook, True))
            out["resid_pre"].append(row)

            def attn_hook(m, args, output, l=l):
                if isinstance(output, tuple):
                    return (clean[("attn", l)], *output[1:])
                return clean[("attn", l)]
            out["attn_out"].append(self.patched(corrupted_ids, self.attentions[l], attn_hook, False))
            out["mlp_out"].append(self.patched(corrupted_ids, self.mlps[l], lambda m, a, o, l=l: clean[("mlp", l)], False))
        recovery = {k: (torch.tensor(v, dtype=torch.float64) - corrupted_metric) / span for k, v in out.items()}
        return clean_metric, corrupted_metric, recovery


def compare_patching(case, ours, clean_metric, corrupted_metric, recovery):
    metric_error = max(abs(ours["clean"]["metric"] - clean_metric), abs(ours["corrupted"]["metric"] - corrupted_metric))
    scale = max(1.0, abs(clean_metric), abs(corrupted_metric))
    check(metric_error <= RECOVERY_TOLERANCE * scale,
          f"{case}: clean and corrupted metrics {clean_metric:.4f}, {corrupted_metric:.4f} (attn within {metric_error:.1e})")
    for kind, expected in recovery.items():
        got = torch.tensor(ours["patches"][kind]["recovery"], dtype=torch.float64)
        error = float((got - expected).abs().max()) if got.shape == expected.shape else float("inf")
        worst["recovery"] = max(worst["recovery"], error)
        check(error <= RECOVERY_TOLERANCE,
              f"{case}: {kind} {list(expected.shape)} recovery equals PyTorch's (largest difference {error:.1e}, "
              f"values {float(expected.min()):.3f} to {float(expected.max()):.3f})")


# ------------------------------------------------------------------ GPT-2

def gpt2_patcher(model, answer, wrong):
    h = model.transformer.h  # each block and module also takes its stage prefix: pre-hooks keep args[1:]
    return Patcher(lambda ids: model(ids), lambda logits: float(logits[0, -1, answer] - logits[0, -1, wrong]),
                   [b.attn.c_proj for b in h], list(h), [b.attn for b in h], [b.mlp for b in h],
                   model.transformer.wte.weight.shape[1] // h[0].attn.num_heads)


def gpt2_case(program, folder, clean, corrupted, answer, wrong):
    config, model = IC.pretrained_model(folder)
    ours = attn(program, ["patch", "--model-dir", str(folder), "--clean", clean, "--corrupted", corrupted,
                          "--answer", answer, "--wrong", wrong, "--json"])
    a, w = ours["metric"]["answer"]["id"], ours["metric"]["wrong"]["id"]
    patcher = gpt2_patcher(model, a, w)
    with torch.no_grad():
        results = patcher.sweeps(torch.tensor([ours["clean"]["ids"]]), torch.tensor([ours["corrupted"]["ids"]]),
                                 config["n_head"], len(ours["clean"]["ids"]))
    compare_patching(f"gpt2 '{clean}' / '{corrupted}'", ours, *results)
    check(ours["layers_run"] < ours["layers_full"],
          f"gpt2: resuming at the patched layer computes {ours['layers_run']} layers instead of {ours['layers_full']}")


def gpt2_lens_case(program, folder, sentences, k):
    config, model = IC.pretrained_model(folder)
    ours = attn(program, ["encode", "--model-dir", str(folder), *[a for s in sentences for a in ("--sentence", s)],
                          "--logit-lens", "--top-k", str(k), "--json"])
    stages = IC.pretrained_run(model, {s["name"]: s for s in ours["stages"]})
    lens = ours["logit_lens"]
    error, same_ids = 0.0, True
    for r, name in enumerate(lens["stages"]):
        with torch.no_grad():
            probs = torch.softmax(F.linear(model.transformer.ln_f(stages[name]), model.transformer.wte.weight), dim=-1)
        top = probs.topk(k, dim=-1)
        got_ids = torch.tensor(lens["ids"][r])
        got = torch.tensor(lens["probabilities"][r], dtype=torch.float64)
        same_ids = same_ids and torch.equal(got_ids, top.indices)
        error = max(error, float((got - top.values.to(torch.float64)).abs().max()))
    worst["lens"] = max(worst["lens"], error)
    check(lens["stages"] == ["embeddings"] + [f"h.{i}" for i in range(config["n_layer"])] and same_ids and
          error <= LENS_TOLERANCE,
          f"gpt2 logit lens: {len(lens['stages'])} stages, top-{k} ids PyTorch's, probabilities within {error:.1e}")


# ------------------------------------------------------------------ the classifier

def classifier_files(program, tmp, name, model_flags, clean, corrupted):
    """The seeded classifier's weights and vocabulary, as attn encode saves them for both sentences."""
    weights, vocab = tmp / f"{name}.safetensors", tmp / f"{name}.vocab.json"
    doc = attn(program, ["encode", *model_flags, "--sentence", clean, "--sentence", corrupted, "--save-weights",
                         str(weights), "--json"])
    vocab.write_text(json.dumps(doc["vocab"]), encoding="utf-8")
    return doc, weights, vocab


def without_seed(flags):
    i = flags.index("--seed")
    return flags[:i] + flags[i + 2:]


def classifier_case(program, tmp, name, model_flags, mask, clean, corrupted, label):
    doc, weights, vocab = classifier_files(program, tmp, name, [*model_flags, "--mask", mask], clean, corrupted)
    flags = [*without_seed(model_flags), "--mask", mask, "--weights", str(weights), "--vocab", str(vocab)]
    ours = attn(program, ["patch", *flags, "--clean", clean, "--corrupted", corrupted, "--label", str(label), "--json"])
    c = doc["config"]
    model = IC.classifier_model(c, weights)
    layers = model.encoder.layers

    def run(ids):
        m = T.make_mask(mask, ids)
        return model(ids, None if m is None else m.unsqueeze(1))

    def margin(logits):
        others = torch.cat([logits[0, :label], logits[0, label + 1:]])
        return float(logits[0, label] - others.max())
    patcher = Patcher(run, margin, [l.self_attn.W_O for l in layers], list(layers), [l.self_attn for l in layers],
                      [l.ffn for l in layers], c["d_model"] // c["num_heads"])
    with torch.no_grad():
        results = patcher.sweeps(torch.tensor([ours["clean"]["ids"]]), torch.tensor([ours["corrupted"]["ids"]]),
                                 c["num_heads"], len(ours["clean"]["ids"]))
    compare_patching(f"classifier {name}", ours, *results)
    lens_case(program, name, flags, clean, corrupted, model, run)


def lens_case(program, name, flags, clean, corrupted, model, run):
    ours = attn(program, ["encode", *flags, "--sentence", clean, "--sentence", corrupted, "--logit-lens", "--json"])
    vocab = ours["vocab"]
    ids = torch.tensor([[vocab[t] for t in row] for row in ours["tokens"]])
    T.STAGES.clear()
    with torch.no_grad():
        run(ids)
        stages = dict(T.STAGES)
        lens = ours["logit_lens"]
        error = 0.0
        for r, stage in enumerate(lens["stages"]):
            x = model.encoder.norm(stages[stage])
            per_position = torch.softmax(model.fc(x), dim=-1).to(torch.float64)
            pooled = torch.softmax(model.fc(x.mean(dim=1)), dim=-1).to(torch.float64)
            error = max(error, float((torch.tensor(lens["probabilities"][r], dtype=torch.float64) - per_position).abs().max()),
                        float((torch.tensor(lens["pooled"][r], dtype=torch.float64) - pooled).abs().max()))
    worst["lens"] = max(worst["lens"], error)
    check(error <= LENS_TOLERANCE, f"classifier {name} logit lens: {len(lens['stages'])} stages, per position and "
                                   f"pooled, within {error:.1e} of PyTorch's")


def main(program):
    gpt2 = IC.PRETRAINED / "gpt2_tiny"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        post = ["--num-layers", "2", "--d-model", "16", "--num-heads", "4", "--num-classes", "3", "--seed", "3"]
        pre = ["--num-layers", "3", "--d-model", "12", "--num-heads", "3", "--num-classes", "4", "--seed", "4",
               "--norm-first", "--activation", "gelu"]
        classifier_case(program, tmp, "post-norm padding", post, "padding", "나는 학교에 간다", "너는 학교에 간다", 1)
        classifier_case(program, tmp, "pre-norm causal", pre, "causal", "a b c d e", "a b x d e", 2)
        gpt2_case(program, gpt2, "the cat sat on the mat", "the dog sat on the mat", " the", " cat")
        gpt2_lens_case(program, gpt2, ["the cat sat on the mat", "hello world"], 5)
    print(f"largest differences: recovery {worst['recovery']:.1e}, logit lens {worst['lens']:.1e}")
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
