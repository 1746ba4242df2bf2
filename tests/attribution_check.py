#!/usr/bin/python3
"""`attn attribute --json` against the same methods computed independently in PyTorch
(tests/torchgen/attribution.py: autograd for the gradients, numpy's leggauss for Captum's
Gauss–Legendre rule, networkx's maximum flow), on the tiny GPT-2 and BERT of tests/fixtures/pretrained
and on the tutorial's classifier (post-norm with a padding mask, pre-norm with a causal one).

Every score within 1e-4 of PyTorch's (integrated gradients 1e-3, and its convergence delta too), the
targets the same, the logit attribution's parts adding up to the target's logit.
    /usr/bin/python3 tests/attribution_check.py path/to/attn
"""
import importlib.util
import json
import math
import pathlib
import subprocess
import sys
import tempfile

import torch

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("intervention_check", HERE / "intervention_check.py")
IC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(IC)
T, P = IC.T, IC.P
R = IC.load(HERE / "torchgen" / "attribution.py", "fixture_attribution")
TOLERANCE, IG_TOLERANCE = 1e-4, 1e-3
GRADIENT_METHODS = ("integrated-gradients", "gradient-x-input")
failures = []
worst = {}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attn(program, args):
    r = subprocess.run([program, "attribute", *args, "--json"], capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn attribute {' '.join(args)} failed: {r.stderr.decode()}")
    return json.loads(r.stdout)


def compare(case, method, got, expected, tolerance=None):
    tolerance = tolerance or (IG_TOLERANCE if method == "integrated-gradients" else TOLERANCE)
    got, expected = torch.tensor(got, dtype=torch.float64), torch.as_tensor(expected, dtype=torch.float64)
    error = float((got - expected).abs().max()) if got.shape == expected.shape else math.inf
    worst[method] = max(worst.get(method, 0.0), error)
    check(error <= tolerance, f"{case}: {method} {list(expected.shape)} equals PyTorch's within {error:.1e} "
                              f"(values {float(expected.min()):.4f} to {float(expected.max()):.4f})")


def gradient_cases(case, program, flags, ours_target, forward, x):
    """Both gradient methods of one model and input; `forward` runs token embeddings to the target's logit."""
    ig = attn(program, [*flags, "--method", "integrated-gradients", "--steps", "50"])
    check(ig["target"] == ours_target, f"{case}: integrated gradients attributes the same target")
    scores, at_input, at_baseline, delta = R.integrated_gradients(forward, x, 50)
    compare(case, "integrated-gradients", ig["scores"], scores)
    about = ig["integrated_gradients"]
    compare(case + " F(input), F(baseline), delta", "integrated-gradients",
            [about["input_value"], about["baseline_value"], about["delta"]], [at_input, at_baseline, delta])
    gxi = attn(program, [*flags, "--method", "gradient-x-input"])
    compare(case, "gradient-x-input", gxi["scores"], R.gradient_x_input(forward, x))


def attention_cases(case, program, flags, weights, outputs):
    """Rollout and flow from the attention weights [L, n, S, S] PyTorch recorded."""
    ours = attn(program, [*flags, "--method", "rollout"])
    joint = R.rollout(weights)
    check(ours["outputs"] == outputs, f"{case}: rollout follows the output positions {outputs}")
    compare(case, "rollout", ours["rollout"], joint)
    compare(case + " (scores)", "rollout", ours["scores"], joint[outputs].mean(axis=0))
    ours = attn(program, [*flags, "--method", "flow"])
    compare(case, "flow", ours["scores"], R.flow(weights, outputs).mean(axis=0))


def stacked_weights(stages, suffix):
    names = sorted((n for n in stages if n.endswith(suffix)), key=lambda n: int(n.split(".")[-4 if "encoder" in n else -3]))
    return torch.stack([stages[n][0] for n in names])


def replaced(module, embeds):
    """A forward hook making `module` (the token embedding) return `embeds`."""
    return module.register_forward_hook(lambda m, args, out: embeds)


# ------------------------------------------------------------------ GPT-2

def gpt2_case(program, sentence, target_id=None):
    folder = IC.PRETRAINED / "gpt2_tiny"
    config, model = IC.pretrained_model(folder)
    flags = ["--model-dir", str(folder), "--sentence", sentence]
    if target_id is not None:
        flags += ["--target-id", str(target_id)]
    ours = attn(program, [*flags, "--method", "logit-attribution"])
    ids = torch.tensor([ours["ids"]])
    P.STAGES.clear()
    with torch.no_grad():
        logits = model(ids)
    stages = dict(P.STAGES)
    position = ids.shape[1] - 1
    target = int(logits[0, position].argmax()) if target_id is None else target_id
    case = f"gpt2 '{sentence}' target {target}"
    check(ours["target"]["id"] == target and abs(ours["target"]["logit"] - float(logits[0, position, target])) <= TOLERANCE,
          f"{case}: the target is the {'top next token' if target_id is None else 'given id'}, its logit PyTorch's")
    names, values = R.logit_attribution(model, stages, target, position)
    check(ours["components"] == names, f"{case}: logit attribution's {len(names)} components")
    compare(case, "logit-attribution", ours["contributions"], values)
    total = sum(ours["contributions"])
    check(abs(total - float(logits[0, position, target])) <= TOLERANCE,
          f"{case}: the direct contributions add up to the logit ({total:.5f})")

    def forward(embeds):
        with_hook = replaced(model.transformer.wte, embeds)
        try:
            return model(ids.expand(embeds.shape[0], -1))[:, position, target]
        finally:
            with_hook.remove()
    with torch.no_grad():
        x = model.transformer.wte(ids)
    gradient_cases(case, program, flags, ours["target"], forward, x)
    attention_cases(case, program, flags, stacked_weights(stages, ".attn.attn_weights"), [position])


# ------------------------------------------------------------------ BERT

def bert_case(program, sentence):
    folder = IC.PRETRAINED / "bert_tiny"
    _, model = IC.pretrained_model(folder)
    flags = ["--model-dir", str(folder), "--sentence", sentence]
    ours = attn(program, [*flags, "--method", "rollout"])
    ids = torch.tensor([ours["ids"]])
    P.STAGES.clear()
    with torch.no_grad():
        model(ids, torch.zeros_like(ids), torch.ones_like(ids))
    check(ours["target"] is None, f"bert '{sentence}': no target (the base model has no output head)")
    attention_cases(f"bert '{sentence}'", program, flags, stacked_weights(dict(P.STAGES), ".attention_probs"), [0])


# ------------------------------------------------------------------ the classifier

def classifier_case(program, tmp, name, model_flags, mask, sentence):
    weights, vocab = tmp / f"{name}.safetensors", tmp / f"{name}.vocab.json"
    doc = json.loads(subprocess.run([program, "encode", *model_flags, "--mask", mask, "--sentence", sentence,
                                     "--save-weights", str(weights), "--json"], capture_output=True, check=True).stdout)
    vocab.write_text(json.dumps(doc["vocab"]), encoding="utf-8")
    seed = model_flags.index("--seed")
    seedless = model_flags[:seed] + model_flags[seed + 2:]
    flags = [*seedless, "--mask", mask, "--weights", str(weights), "--vocab", str(vocab), "--sentence", sentence]
    model = IC.classifier_model(doc["config"], weights)
    ids = torch.tensor([[doc["vocab"][t] for t in doc["tokens"][0]]])
    m = T.make_mask(mask, ids)
    m = None if m is None else m.unsqueeze(1)
    T.STAGES.clear()
    with torch.no_grad():
        logits = model(ids, m)
    stages = dict(T.STAGES)
    target = int(logits[0].argmax())
    ours = attn(program, [*flags, "--method", "gradient-x-input"])
    case = f"classifier {name} target class {target}"
    check(ours["target"]["id"] == target, f"{case}: the target is the top class")

    def forward(embeds):
        with_hook = replaced(model.embedding, embeds)
        try:
            return model(ids.expand(embeds.shape[0], -1), m)[:, target]
        finally:
            with_hook.remove()
    with torch.no_grad():
        x = model.embedding(ids)
    gradient_cases(case, program, flags, ours["target"], forward, x)
    attention_cases(case, program, flags, stacked_weights(stages, ".attention_weights"), list(range(ids.shape[1])))


D = IC.load(HERE / "torchgen" / "decoder.py", "fixture_decoder")
DECODER_IDS = [5, 9, 12, 3, 7, 20, 4, 8]


def decoder_model(name):
    """A Llama-family fixture in PyTorch (tests/torchgen/decoder.py), its weights read back, shards joined."""
    folder = IC.PRETRAINED / name
    c = D.with_head_dim(json.loads((folder / "config.json").read_text()))
    c.setdefault("tie_word_embeddings", True)  # Gemma's default, as tests/torchgen/decoder.py writes them
    files = [folder / "model.safetensors"] if (folder / "model.safetensors").exists() else \
        sorted(folder.glob("model-*.safetensors"))
    state = {}
    for f in files:
        state.update(IC.read_safetensors(f))
    model = D.model_class(c)(c).eval()
    model.load_state_dict(state, strict=False)
    return model, c


def decoder_case(program, name):
    """The gradient methods, rollout and flow on a decoder, through a forward hook on its token embedding
    (model.embed_tokens, NeoX's gpt_neox.embed_in), as Captum's LayerIntegratedGradients attributes there."""
    model, c = decoder_model(name)
    embedding = model.gpt_neox.embed_in if hasattr(model, "gpt_neox") else model.model.embed_tokens
    ids = torch.tensor([DECODER_IDS])
    flags = ["--model-dir", str(IC.PRETRAINED / name), "--ids", " ".join(map(str, DECODER_IDS))]
    ours = attn(program, [*flags, "--method", "gradient-x-input"])
    D.STAGES.clear()
    with torch.no_grad():
        logits = model(ids)
    stages = dict(D.STAGES)
    target = int(logits[0, -1].argmax())
    case = f"{name} target {target}"
    check(ours["target"]["id"] == target, f"{case}: the target is the top next token")

    def forward(embeds):
        with_hook = replaced(embedding, embeds)
        try:
            return model(ids.expand(embeds.shape[0], -1))[:, -1, target]
        finally:
            with_hook.remove()
    with torch.no_grad():
        x = embedding(ids)
    gradient_cases(case, program, flags, ours["target"], forward, x)
    # A token's embedding as the baseline (here id 0): no scale-invariant jump on the path, so it converges.
    ig = attn(program, [*flags, "--method", "integrated-gradients", "--baseline-id", "0"])
    with torch.no_grad():
        baseline = embedding(torch.zeros_like(ids))
    scores, at_input, at_baseline, delta = R.integrated_gradients(forward, x, 50, baseline)
    compare(case + " baseline token 0", "integrated-gradients", ig["scores"], scores)
    got = [ig["integrated_gradients"][k] for k in ("input_value", "baseline_value", "delta")]
    compare(case + " baseline token 0 F(input), F(baseline), delta", "integrated-gradients", got, [at_input, at_baseline, delta])
    check(abs(ig["integrated_gradients"]["delta"]) < 1e-2 and ig["integrated_gradients"]["baseline"] == "token 0's embedding",
          f"{case}: integrated gradients from token 0's embedding converge (delta {ig['integrated_gradients']['delta']:.1e})")
    weights = torch.stack([stages[f"model.layers.{l}.self_attn.attn_weights"][0] for l in range(c["num_hidden_layers"])])
    attention_cases(case, program, flags, weights, [len(DECODER_IDS) - 1])
    if c["model_type"].startswith("gemma"):  # its branch norms are not additive: refused (cli.attribute_decoder_gemma)
        return
    direct = attn(program, [*flags, "--method", "logit-attribution"])
    names, values = R.decoder_logit_attribution(model, c, stages, target, len(DECODER_IDS) - 1)
    check(direct["components"] == names, f"{case}: logit attribution's {len(names)} components")
    compare(case, "logit-attribution", direct["contributions"], values)
    total = sum(direct["contributions"])
    check(abs(total - float(logits[0, -1, target])) <= TOLERANCE, f"{case}: the direct contributions add up to the logit ({total:.5f})")


def threads_case(program):
    """--threads spreads the work; the document is the same to the last bit."""
    flags = ["--model-dir", str(IC.PRETRAINED / "gpt2_tiny"), "--sentence", "the cat sat on the mat",
             "--method", "integrated-gradients"]
    docs = [attn(program, [*flags, "--threads", str(n)]) for n in (1, 2, 3)]
    check(docs[0] == docs[1] == docs[2], "integrated gradients: the same document on 1, 2 and 3 threads")


def main(program):
    threads_case(program)
    gpt2_case(program, "the cat sat on the mat")
    gpt2_case(program, "hello world, the cat", target_id=5)
    bert_case(program, "the cat sat on the mat")
    for name in ("llama_tiny", "llama3_gqa", "qwen2_bias", "qwen3_norm", "mistral_window", "gemma2_cap",
                 "gemma3_local", "pythia_parallel", "neox_sequential"):
        decoder_case(program, name)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        post = ["--num-layers", "2", "--d-model", "16", "--num-heads", "4", "--num-classes", "3", "--seed", "3"]
        pre = ["--num-layers", "3", "--d-model", "12", "--num-heads", "3", "--num-classes", "4", "--seed", "4",
               "--norm-first", "--activation", "gelu"]
        classifier_case(program, tmp, "post-norm padding", post, "padding", "나는 학교에 간다 오늘")
        classifier_case(program, tmp, "pre-norm causal", pre, "causal", "a b c d e")
    print("largest differences: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
