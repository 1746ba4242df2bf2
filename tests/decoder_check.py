#!/usr/bin/python3
"""The Llama family's decoders (tests/fixtures/pretrained/{llama_tiny,llama3_gqa,mistral_window,qwen2_bias})
through `attn encode --model-dir … --json` with --ablate / --ablate-mlp / --logit-lens, and through
`attn generate --json`, against the hand-written
LlamaForCausalLM of tests/torchgen/decoder.py (Debian's python3-torch 1.13) with the hooks
intervention_check.py puts on GPT-2: a head's z (its columns of self_attn.merged) replaced by a forward
pre-hook on o_proj, an MLP's output by a forward hook on the MLP; "kvL.J" ablates the query heads
J·g … J·g + g − 1 that key/value head J serves. Every stage within 1e-4 · max(1, max |value|); the logit
lens (lm_head(model.norm(x)) on each residual stream) gives the same top tokens, their probabilities
within 1e-4. Generation as generate_check.py checks GPT-2's: attn's key/value cache (of the key/value
heads only) against PyTorch running the whole sequence at every step; the same tokens, greedy and
sampled (torch.manual_seed, one torch.rand(1) per step), each one's probability and every head's
attention from the predicting position within 1e-5.
    /usr/bin/python3 tests/decoder_check.py path/to/attn
"""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile

import torch

HERE = pathlib.Path(__file__).resolve().parent
PRETRAINED = HERE / "fixtures" / "pretrained"


def load(path, name):  # by path: PyTorch ships a package named torchgen
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IC = load(HERE / "intervention_check.py", "intervention_check")
GC = load(HERE / "generate_check.py", "generate_check")
PC = load(HERE / "patching_check.py", "patching_check")
HD = load(HERE / "head_detector_check.py", "head_detector_check")
D = load(HERE / "torchgen" / "decoder.py", "fixture_decoder")
ROWS = D.ROWS  # llama3_gqa takes both rows (a batch), the others the first


def decoder_model(name):
    """The fixture's model in PyTorch, its weights read back from model.safetensors."""
    config = json.loads((PRETRAINED / name / "config.json").read_text())
    c = D.with_head_dim(config)
    model = D.LlamaForCausalLM(c).eval()
    model.load_state_dict(IC.read_safetensors(PRETRAINED / name / "model.safetensors"), strict=False)
    return model, c


def run(model, ids):
    D.STAGES.clear()
    with torch.no_grad():
        model(torch.tensor(ids))
    return dict(D.STAGES)


def z_name(layer):
    return f"model.layers.{layer}.self_attn.merged"


def mlp_name(layer):
    return f"model.layers.{layer}.mlp.down_proj"


def ids_flags(rows):
    return [flag for row in rows for flag in ("--ids", " ".join(map(str, row)))]


def ablation_case(attn, name, rows, ablate, heads, mlps, kind):
    """`--ablate ablate` (heads: the query heads it names) and --ablate-mlp `mlps`, zero or mean."""
    model, c = decoder_model(name)
    ablation = IC.Ablation(heads, mlps, kind, c["head_dim"])
    if kind == "mean":  # the inputs' own means, every position real (no padding)
        IC.take_means(ablation, run(model, rows), z_name, mlp_name, [len(r) for r in rows])
    handles = ablation.register([l.self_attn.o_proj for l in model.model.layers], [l.mlp for l in model.model.layers])
    theirs = run(model, rows)
    for h in handles:
        h.remove()
    flags = ["--ablation", kind] + (["--ablate", ablate] if ablate else []) + \
            (["--ablate-mlp", ",".join(map(str, mlps))] if mlps else [])
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), *ids_flags(rows), *flags])
    IC.check(ours.get("ablation", {}).get("heads") == [list(h) for h in heads],
             f"{name} {' '.join(flags)}: attn ablates the query heads {heads}")
    IC.compare(f"{name} {' '.join(flags)}", ours, theirs, ablation, z_name, mlp_name)


def batch_case(attn, name, lines, stages, heads=None):
    """`attn batch` on JSON lines of several lengths (a mini-batch per length, two items each at most):
    each record's stages are PyTorch's on that item alone (every layer's, --heads keeping those heads)."""
    model, c = decoder_model(name)
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "items.jsonl"
        src.write_text("".join(json.dumps(line) + "\n" for line in lines))
        flags = ["--stages", ",".join(["tokens", *stages]), "--batch-size", "2"] + \
            (["--heads", ",".join(map(str, heads))] if heads else [])
        r = subprocess.run([attn, "batch", "--model-dir", str(PRETRAINED / name), str(src), "-o", "-", "--quiet", *flags],
                           capture_output=True, text=True, timeout=120)
    what = f"{name} batch {' '.join(flags)}"
    records = [json.loads(line) for line in r.stdout.splitlines()]
    IC.check(r.returncode == 0 and sorted(rec["line"] for rec in records) == list(range(1, len(lines) + 1)),
             f"{what}: a record per line ({r.stderr.strip()})")
    worst, compared, wrong = 0.0, 0, []
    for rec in records:
        line = lines[rec["line"] - 1]
        if "ids" in line and rec["ids"] != line["ids"]:
            wrong.append(f"line {rec['line']}: ids {rec['ids']}")
        theirs = run(model, [rec["ids"]])
        for stage, got in rec["stages"].items():
            want = theirs[stage][0]
            if heads and want.dim() == 3 and stage.split(".")[-2] == "self_attn":
                want = want[heads]
            got = torch.tensor(got["data"], dtype=torch.float64).reshape(got["shape"])
            if got.shape != want.shape:
                wrong.append(f"line {rec['line']}: {stage} of shape {list(got.shape)}, not {list(want.shape)}")
                continue
            worst = max(worst, ((got - want.double()).abs().max() / max(1.0, want.abs().max().item())).item())
            compared += 1
    IC.check(not wrong, f"{what}: each record keeps its line's ids, each stage PyTorch's shape {wrong}")
    IC.check(compared >= len(lines) * c["num_hidden_layers"] and worst <= 1e-4,
             f"{what}: {compared} stages within {worst:.1e} of PyTorch (1e-4 relative)")
    return records


def padding_case(attn, name, rows):
    """Rows of different lengths in one run (the shorter padded after its tokens): every stage at each
    row's real positions, and its next token, as PyTorch computes the row alone."""
    model, c = decoder_model(name)
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), *ids_flags(rows)])
    IC.check(ours["lengths"] == [len(r) for r in rows], f"{name} padding: the rows' lengths {ours['lengths']}")
    worst, compared = 0.0, 0
    for r, row in enumerate(rows):
        theirs = run(model, [row])
        for stage in ours["stages"]:
            if stage["name"] not in theirs:
                continue
            want = theirs[stage["name"]].double()
            got = torch.tensor(stage["data"], dtype=torch.float64).reshape(stage["shape"])
            got = got[r:r + 1] if got.shape[0] == len(rows) else got
            got = got[tuple(slice(0, n) for n in want.shape)]  # the real positions (query and key)
            worst = max(worst, ((got - want).abs().max() / max(1.0, want.abs().max().item())).item())
            compared += 1
    IC.check(compared > 0 and worst <= 1e-4, f"{name} padding {[len(r) for r in rows]}: {compared} stages at the real "
             f"positions and next_token_probs within {worst:.1e} of PyTorch on each row alone (1e-4 relative)")


def views_case(attn, name, ids, query, key):
    """first_token_attention from PyTorch's weights; --rotary QUERY,KEY: each head's pairs from PyTorch's
    rotated queries and keys, their sum its score, and by_distance[δ] PyTorch's score of the unrotated
    vectors rotated by the module's own LlamaRotaryEmbedding at positions δ and 0."""
    model, c = decoder_model(name)
    theirs = run(model, [ids])
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), "--ids", " ".join(map(str, ids)),
                               "--rotary", f"{query},{key}"])
    L, H, g, d = c["num_hidden_layers"], c["num_attention_heads"], c["num_attention_heads"] // c["num_key_value_heads"], c["head_dim"]
    sinks = torch.stack([theirs[f"model.layers.{l}.self_attn.attn_weights"][0, :, 1:, 0].mean(-1) for l in range(L)])
    sink_error = (torch.tensor(ours["first_token_attention"]) - sinks).abs().max().item()
    IC.check(sink_error <= 1e-6, f"{name}: first_token_attention within {sink_error:.1e} of PyTorch's weights (1e-6)")
    rotary = model.model.rotary_emb
    far = len(ours["rotary"]["layers"][0][0]["by_distance"])
    cos, sin = rotary(torch.arange(far)[None])
    worst = {"pairs": 0.0, "score": 0.0, "by_distance": 0.0}
    for l in range(L):
        for h in range(H):
            got = ours["rotary"]["layers"][l][h]
            stage = lambda s: theirs[f"model.layers.{l}.self_attn.{s}"][0]
            q_rot, k_rot = stage("queries_rotated")[h, query].double(), stage("keys_rotated")[h // g, key].double()
            half = q_rot.shape[0] // 2
            pairs = (q_rot[:half] * k_rot[:half] + q_rot[half:] * k_rot[half:]) / d ** 0.5
            worst["pairs"] = max(worst["pairs"], (torch.tensor(got["pairs"]) - pairs).abs().max().item())
            worst["score"] = max(worst["score"], abs(sum(got["pairs"]) + got["unrotated"] - stage("scores")[h, query, key].item()))
            norm = f"model.layers.{l}.self_attn.q_norm" in theirs  # Qwen3: the norms come before the rotation
            q, k = stage("q_norm" if norm else "q_proj")[h, query], stage("k_norm" if norm else "k_proj")[h // g, key]
            want = []
            for delta in range(far):  # the query at δ, the key at 0
                q_at, _ = D.apply_rotary_pos_emb(q[None, None], q[None, None], cos[:, delta:delta + 1], sin[:, delta:delta + 1])
                _, k_at = D.apply_rotary_pos_emb(k[None, None], k[None, None], cos[:, :1], sin[:, :1])
                want.append((q_at.flatten().double() @ k_at.flatten().double()).item() / d ** 0.5)
            worst["by_distance"] = max(worst["by_distance"], (torch.tensor(got["by_distance"]) - torch.tensor(want)).abs().max().item())
    IC.check(all(v <= 1e-5 for v in worst.values()),
             f"{name} --rotary {query},{key}: pairs, their sum against the scores stage and by_distance over {far} "
             f"distances within " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()) + " of PyTorch (1e-5)")


def lens_case(attn, name, rows, top_k=5):
    model, c = decoder_model(name)
    stages = run(model, rows)
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), *ids_flags(rows), "--logit-lens",
                               "--top-k", str(top_k)])["logit_lens"]
    names = ["model.embed_tokens"] + [f"model.layers.{i}" for i in range(c["num_hidden_layers"])]
    IC.check(ours["stages"] == names, f"{name} logit lens: the residual stream stages {names}")
    worst, same_ids = 0.0, True
    with torch.no_grad():
        for r, stage in enumerate(names):
            probs = torch.softmax(model.lm_head(model.model.norm(stages[stage])), dim=-1)
            got_p = torch.tensor(ours["probabilities"][r], dtype=torch.float64)
            got_ids = torch.tensor(ours["ids"][r])
            ref_p = probs.gather(-1, got_ids).to(torch.float64)  # the probabilities of attn's tokens
            worst = max(worst, float((got_p - ref_p).abs().max()))
            top = probs.topk(top_k, dim=-1)
            same_ids &= bool(torch.allclose(top.values.to(torch.float64), got_p, atol=1e-4))
    IC.check(same_ids and worst <= 1e-4,
             f"{name} logit lens: top {top_k} tokens of every stage equal PyTorch's (largest probability error {worst:.2e})")


def decoder_step(model):
    """The whole sequence through the decoder: the last position's logits, each layer's attention from it."""
    def step(ids):
        stages = run(model, [ids])
        return stages["logits"][0, -1], [stages[f"model.layers.{l}.self_attn.attn_weights"][0, :, -1]
                                          for l in range(len(model.model.layers))]
    return step


def generate_case(attn, name, prompt, new_tokens, temperature=0.0, top_k=0, top_p=1.0, seed=0):
    model, _ = decoder_model(name)
    args = ["--max-new-tokens", str(new_tokens), "--temperature", str(temperature), "--top-k", str(top_k),
            "--top-p", str(top_p), "--seed", str(seed)]
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), *prompt, *args], command="generate")
    theirs = GC.reference(decoder_step(model), ours["prompt"]["ids"], new_tokens, temperature, top_k, top_p, seed, None)
    got, want = [t["id"] for t in ours["generated"]], [t for t, _, _ in theirs]
    what = f"{name} generate {' '.join(prompt + args)}"
    IC.check(got == want, f"{what}: the tokens {got} are PyTorch's {want}")
    if got != want:
        return
    p_error = max(abs(t["probability"] - p) for t, (_, p, _) in zip(ours["generated"], theirs))
    a_error = max(float((torch.tensor(t["attention"]) - torch.stack(a)).abs().max())
                  for t, (_, _, a) in zip(ours["generated"], theirs))
    IC.check(p_error <= GC.TOLERANCE and a_error <= GC.TOLERANCE,
             f"{what}: probabilities within {p_error:.1e}, attention within {a_error:.1e} (<= {GC.TOLERANCE:g})")


def patch_case(attn, name, clean, corrupted, answer, wrong):
    """`attn patch --clean-ids … --corrupted-ids …` against patching_check.py's PyTorch hooks on the decoder."""
    model, c = decoder_model(name)
    ours = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / name), "--clean-ids", clean, "--corrupted-ids", corrupted,
                               "--answer-id", str(answer), "--wrong-id", str(wrong)], command="patch")
    layers = model.model.layers
    patcher = PC.Patcher(lambda ids: model(ids), lambda logits: float(logits[0, -1, answer] - logits[0, -1, wrong]),
                         [l.self_attn.o_proj for l in layers], list(layers), [l.self_attn for l in layers],
                         [l.mlp for l in layers], c["head_dim"])
    with torch.no_grad():
        results = patcher.sweeps(torch.tensor([ours["clean"]["ids"]]), torch.tensor([ours["corrupted"]["ids"]]),
                                 c["num_attention_heads"], len(ours["clean"]["ids"]))
    PC.compare_patching(f"{name} patch '{clean}' / '{corrupted}'", ours, *results)


def heads_case(attn, name, args):
    """`attn heads` against head_detector_check.py's restatement of TransformerLens's detectors."""
    model, c = decoder_model(name)
    ours = HD.attn_heads(attn, ["--model-dir", str(PRETRAINED / name), *args])
    HD.check_tokens(f"{name} heads", ours)
    rows = ours["sequences"]["ids"]
    S = max(map(len, rows))
    stages = run(model, [r + [0] * (S - len(r)) for r in rows])  # right padding: no real token sees it
    weights = [stages[f"model.layers.{l}.self_attn.attn_weights"] for l in range(c["num_hidden_layers"])]
    HD.compare(f"{name} heads {' '.join(args)}", ours, weights, (False, False, "mul"))


def main(attn):
    heads_case(attn, "llama3_gqa", ["--seq-len", "6", "--batch", "2", "--seed", "5"])
    heads_case(attn, "llama_tiny", ["--sentence", "the cat sat on the mat the cat sat", "--sentence", "a dog ran"])
    patch_case(attn, "llama3_gqa", "5 17 42 3 60", "5 17 9 3 60", 11, 29)
    patch_case(attn, "qwen2_bias", "1 33 2 63 14", "1 33 2 8 14", 7, 50)
    generate_case(attn, "llama3_gqa", ["--prompt-ids", "5 17 42"], 12)
    generate_case(attn, "llama3_gqa", ["--prompt-ids", "1 33 2 63"], 10, temperature=1.0, seed=1)
    generate_case(attn, "mistral_window", ["--prompt-ids", "5 17"], 10)  # past the window of 3: old keys hidden
    generate_case(attn, "mistral_window", ["--prompt-ids", "5 17 42"], 10, temperature=0.8, top_k=8, seed=3)
    generate_case(attn, "qwen2_bias", ["--prompt-ids", "7"], 8, temperature=1.2, top_p=0.8, seed=42)
    generate_case(attn, "llama_tiny", ["--prompt", "the cat sat"], 6, temperature=0.9, top_k=10, top_p=0.5, seed=7)
    ablation_case(attn, "llama3_gqa", ROWS, "0.1,kv1.1", [(0, 1), (1, 2), (1, 3)], [0], "zero")
    ablation_case(attn, "llama3_gqa", ROWS, "kv0.0", [(0, 0), (0, 1)], [1], "mean")
    ablation_case(attn, "mistral_window", ROWS[:1], "kv1.0", [(1, 0), (1, 1), (1, 2), (1, 3)], [], "mean")
    ablation_case(attn, "qwen2_bias", ROWS[:1], "1.3", [(1, 3)], [0, 1], "zero")
    batch_case(attn, "llama3_gqa", [{"ids": r} for r in [[5, 17, 42], [1, 33, 2, 63], [9, 8, 7], [60]]],
               ["self_attn.attn_weights", "self_attn.queries_rotated", "mlp.down_proj", "logits"], heads=[1, 3])
    sentences = [{"text": "the cat sat on the mat"}, {"text": "a dog"}]
    records = batch_case(attn, "llama_tiny", sentences, ["self_attn.attn_weights", "model.norm"])
    for rec, line in zip(sorted(records, key=lambda rec: rec["line"]), sentences):
        encoded = IC.attn_json(attn, ["--model-dir", str(PRETRAINED / "llama_tiny"), "--sentence", line["text"]])
        IC.check(rec["ids"] == encoded["input_ids"][0] and rec["tokens"] == encoded["tokens"][0], f"llama_tiny batch: {line['text']!r} tokenized as attn encode does")
    padding_case(attn, "llama3_gqa", [ROWS[0][:3], ROWS[1], ROWS[0][:6]])
    padding_case(attn, "mistral_window", [ROWS[0], ROWS[1][:2]])  # past the window of 3
    views_case(attn, "llama3_gqa", ROWS[0], 4, 1)
    views_case(attn, "qwen2_bias", ROWS[0], 3, 3)
    lens_case(attn, "llama3_gqa", ROWS)
    lens_case(attn, "mistral_window", ROWS[:1])
    failures = IC.failures + PC.failures + HD.failures
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
