#!/usr/bin/python3
"""`attn generate --json` against the same generation in PyTorch (Debian's python3-torch 1.13) on the
tiny GPT-2 of tests/fixtures/pretrained, run with the hand-written GPT2LMHeadModel of tests/torchgen
on the whole sequence at every step (no cache: an independent check of attn's key/value cache).
Sampling restates transformers' logits warpers (TemperatureLogitsWarper, TopKLogitsWarper,
TopPLogitsWarper, in generate's order) and draws as docs/generate.md says: after
torch.manual_seed(seed), u = torch.rand(1) per step and the first token, in vocabulary order, whose
cumulative probability passes u. Checked: the same tokens; each one's probability within 1e-5; every
layer's and head's attention of the predicting position within 1e-5; the decoded text.
    /usr/bin/python3 tests/generate_check.py path/to/attn
"""
import importlib.util
import json
import pathlib
import subprocess
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
GPT2 = HERE / "fixtures" / "pretrained" / "gpt2_tiny"
TOLERANCE = 1e-5
spec = importlib.util.spec_from_file_location("intervention_check", HERE / "intervention_check.py")
IC = importlib.util.module_from_spec(spec)
spec.loader.exec_module(IC)
P = IC.P
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def warp(logits, temperature, top_k, top_p):
    """transformers' warpers, restated: temperature, then top-k, then top-p."""
    scores = logits / temperature
    if top_k > 0:
        k = min(top_k, scores.size(-1))
        scores = scores.masked_fill(scores < torch.topk(scores, k)[0][..., -1, None], -float("inf"))
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= (1 - top_p)
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(0, sorted_indices, remove), -float("inf"))
    return scores


def gpt2_step(model):
    """The whole sequence through GPT-2: the last position's logits, each layer's attention from it."""
    def step(ids):
        P.STAGES.clear()
        with torch.no_grad():
            logits = model(torch.tensor([ids]))[0, -1]
        return logits, [P.STAGES[f"h.{l}.attn.attn_weights"][0, :, -1] for l in range(len(model.transformer.h))]
    return step


def reference(step, prompt_ids, new_tokens, temperature, top_k, top_p, seed, end_id):
    """Generation by `step` (ids -> last logits, attention per layer), greedy or drawn as attn draws."""
    torch.manual_seed(seed)
    ids, out = list(prompt_ids), []
    for _ in range(new_tokens):
        logits, attention = step(ids)
        if temperature == 0:
            probs = torch.softmax(logits, dim=-1)
            token = int(torch.argmax(logits))
        else:
            probs = torch.softmax(warp(logits, temperature, top_k, top_p), dim=-1)
            u = float(torch.rand(1))
            cumulative = torch.cumsum(probs.double(), 0)
            token = int(torch.nonzero(cumulative > u * float(cumulative[-1]))[0])
        out.append((token, float(probs[token]), attention))
        ids.append(token)
        if token == end_id:
            break
    return out


def attn_generate(attn, prompt, args):
    r = subprocess.run([attn, "generate", "--model-dir", str(GPT2), "--prompt", prompt, "--json", *args],
                       capture_output=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"attn generate failed: {r.stderr.decode()}")
    return json.loads(r.stdout)


def case(attn, model, vocab, name, prompt, new_tokens, temperature=0.0, top_k=0, top_p=1.0, seed=0):
    args = ["--max-new-tokens", str(new_tokens), "--temperature", str(temperature), "--top-k", str(top_k),
            "--top-p", str(top_p), "--seed", str(seed)]
    ours = attn_generate(attn, prompt, args)
    theirs = reference(gpt2_step(model), ours["prompt"]["ids"], new_tokens, temperature, top_k, top_p, seed,
                       vocab.get("<|endoftext|>"))
    got = [t["id"] for t in ours["generated"]]
    want = [t for t, _, _ in theirs]
    check(got == want, f"{name}: the tokens {got} are PyTorch's {want}")
    if got != want:
        return
    p_error = max(abs(t["probability"] - p) for t, (_, p, _) in zip(ours["generated"], theirs))
    a_error = max(float((torch.tensor(t["attention"]) - torch.stack(a)).abs().max())
                  for t, (_, _, a) in zip(ours["generated"], theirs))
    check(p_error <= TOLERANCE and a_error <= TOLERANCE,
          f"{name}: probabilities within {p_error:.1e}, attention within {a_error:.1e} (<= {TOLERANCE:g})")
    inverse = {i: t for t, i in vocab.items()}
    decoder = {c: b for b, c in P.bytes_to_unicode().items()}
    raw = bytearray()
    for i in ours["prompt"]["ids"] + got:
        token = inverse[i]
        raw += token.encode("utf-8") if token == "<|endoftext|>" else bytes(decoder[c] for c in token)
    text = raw.decode("utf-8", "replace")
    check(text == ours["text"], f"{name}: the text is the tokens decoded as GPT2Tokenizer.decode does: {text!r}")


def main(attn):
    config, model = IC.pretrained_model(GPT2)
    vocab = json.loads((GPT2 / "vocab.json").read_text(encoding="utf-8"))
    case(attn, model, vocab, "greedy", "the cat sat", 8)
    case(attn, model, vocab, "greedy, one token", "the", 1)
    case(attn, model, vocab, "sampled, T 1", "the dog ran", 10, temperature=1.0, seed=1)
    case(attn, model, vocab, "sampled, T 0.7 top-k 5", "the cat sat", 10, temperature=0.7, top_k=5, seed=3)
    case(attn, model, vocab, "sampled, top-p 0.8", "the mat", 10, temperature=1.3, top_p=0.8, seed=42)
    case(attn, model, vocab, "sampled, top-k 10 and top-p 0.5", "the cat", 6, temperature=0.9, top_k=10, top_p=0.5,
         seed=7)
    one, three = (attn_generate(attn, "the dog ran", ["--max-new-tokens", "6", "--temperature", "1", "--seed", "5",
                                                      "--threads", n]) for n in ("1", "3"))
    check(one == three, "--threads 3 generates what --threads 1 does, every value the same")
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main(sys.argv[1])
