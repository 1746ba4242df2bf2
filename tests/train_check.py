#!/usr/bin/python3
"""`attn train` end to end, against Debian's python3-torch 1.13, in sections:
  torch    a labelled file trained by attn and by a plain PyTorch loop written here from the documented
           rules (vocabulary, seeded split, shuffled batches, torch.manual_seed, AdamW, clipping, cosine
           schedule): losses per step within 1e-5 relative; the saved weights load into PyTorch with
           load_state_dict(strict=True) and equal the loop's within 1e-4; the saved gradients equal the
           last step's p.grad; attn encode takes the saved weights + config + vocabulary and gives the
           trained model's logits.
  resume   a run killed with SIGKILL and continued with --resume ends in the uninterrupted run's bytes
           (weights and log); SIGINT checkpoints and exits 130; a checkpoint of another run is refused,
           naming what differs.
  tasks    each built-in task trained with its defaults alone reaches its documented validation
           accuracy; a model trained on `duplicate` has a head whose attention from a repeated token to
           its twin averages >= 0.5 on the validation items; one trained on `asked` is within 10 points
           of chance with its attention made uniform, and has a head whose attention from the last word
           to the asked person's place word averages >= 0.5 (all computed by PyTorch).
    /usr/bin/python3 tests/train_check.py path/to/attn [SECTION...]   (default: all)
"""
import importlib.util
import json
import math
import os
import pathlib
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent


def load(name):  # by path: PyTorch ships a package named torchgen
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", HERE / "torchgen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = load("transformer")
LOOP = load("train_loop")  # its schedule and batch order
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attn_train(attn, *args, timeout=600):
    return subprocess.run([attn, "train", "--quiet", *args], capture_output=True, timeout=timeout)


def read_safetensors(path):
    raw = pathlib.Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        if begin == end:  # no elements (an attention-only GPT-2's MLP of n_inner 0); frombuffer refuses them
            out[name] = torch.empty(e["shape"])
            continue
        dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[e["dtype"]]
        data = torch.frombuffer(bytearray(raw[8 + n + begin:8 + n + end]), dtype=dtype).float()  # widened as attn reads
        out[name] = data.reshape(e["shape"]) if e["shape"] else data.reshape(())
    return out


def log_records(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


# --- torch: the documented rules, written again in PyTorch ---

WORDS = ["나는", "오늘", "학교에", "간다", "the", "cat", "sat", "on", "a", "mat", "dogs", "run"]


def labelled_file(path, count, seed):
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 7))]
        lines.append(json.dumps({"id": f"s{i}", "text": " ".join(words), "label": len(words) % 3}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [json.loads(line) for line in lines]


def torch_loop(items, seed, steps, batch_size, val_fraction, lr, clip, warmup, cfg):
    vocab = {"[PAD]": 0}
    for item in items:
        for w in item["text"].split():
            vocab.setdefault(w, len(vocab))
    ids = [[vocab[w] for w in item["text"].split()] for item in items]
    labels = [item["label"] for item in items]
    g = torch.Generator().manual_seed(seed)
    k = max(1, min(len(items) - 1, math.floor(val_fraction * len(items) + 0.5)))
    val = sorted(torch.randperm(len(items), generator=g).tolist()[:k])
    train = [i for i in range(len(items)) if i not in val]
    torch.manual_seed(seed)
    model = T.TransformerClassifier(vocab_size=len(vocab), **cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, LOOP.cosine(warmup, steps))
    losses = []
    for positions in LOOP.batches(len(train), batch_size, seed, True, steps):
        batch = [train[i] for i in positions]
        seq = max(len(ids[i]) for i in batch)
        x = torch.tensor([ids[i] + [0] * (seq - len(ids[i])) for i in batch])
        y = torch.tensor([labels[i] for i in batch])
        loss = F.cross_entropy(model(x, T.make_mask("padding", x).unsqueeze(1)), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
    return model, vocab, losses


def close(a, b, tol):
    return all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def section_torch(attn, tmp):
    items = labelled_file(tmp / "data.jsonl", 40, 1)
    cfg = dict(d_model=16, num_heads=2, num_layers=2, num_classes=3, max_len=16, dropout=0.1)
    seed, steps, batch_size = 3, 15, 6
    out = {k: str(tmp / f"{k}.out") for k in ("weights", "config", "vocab", "grads", "log")}
    r = attn_train(attn, "--data", str(tmp / "data.jsonl"), "--val-fraction", "0.25", "--seed", str(seed),
                   "--steps", str(steps), "--batch-size", str(batch_size), "--d-model", "16", "--num-heads", "2",
                   "--num-layers", "2", "--max-len", "16", "--dropout", "0.1", "--optimizer", "adamw", "--lr", "0.01",
                   "--clip-grad-norm", "0.5", "--schedule", "cosine", "--warmup", "3", "--eval-every", "5",
                   "--save-weights", out["weights"], "--save-config", out["config"], "--save-vocab", out["vocab"],
                   "--save-grads", out["grads"], "--log", out["log"])
    check(r.returncode == 0, f"attn train --data runs ({r.stderr.decode()[-300:]})")
    if r.returncode:
        return
    model, vocab, losses = torch_loop(items, seed, steps, batch_size, 0.25, 0.01, 0.5, 3, cfg)
    log = log_records(out["log"])
    ours = [rec["loss"] for rec in log if "loss" in rec]
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, losses))
    check(len(ours) == steps and worst <= 1e-5, f"losses per step equal PyTorch's loop (max relative error {worst:.2e})")
    check([rec["step"] for rec in log if "val_loss" in rec] == [5, 10, 15], "evaluations at steps 5, 10 and 15")
    check(json.loads(pathlib.Path(out["vocab"]).read_text()) == vocab, "--save-vocab writes the documented vocabulary")
    saved = read_safetensors(out["weights"])
    fresh = T.TransformerClassifier(vocab_size=len(vocab), **cfg)
    fresh.load_state_dict(saved, strict=True)  # raises if a name or shape is off
    reference = model.state_dict()
    params_ok = all(close(saved[k].flatten().tolist(), reference[k].flatten().tolist(), 1e-4)
                    for k in reference if "W_K.bias" not in k)
    check(params_ok, "saved weights load with strict=True and equal the PyTorch loop's (1e-4)")
    grads = read_safetensors(out["grads"])
    named = dict(model.named_parameters())
    largest = max(p.grad.abs().max().item() for p in named.values())
    grads_ok = set(grads) == set(named) and all(
        (grads[k] - p.grad).abs().max().item() <= max(1e-5 * p.grad.abs().max().item(), 1e-6 * largest) * 10
        for k, p in named.items())
    check(grads_ok, "--save-grads holds the last step's p.grad, by state_dict name")
    enc = subprocess.run([attn, "encode", "--weights", out["weights"], "--config", out["config"], "--vocab",
                          out["vocab"], "--sentence", "나는 오늘 학교에 간다", "--json"], capture_output=True)
    check(enc.returncode == 0, "attn encode takes the saved weights, config and vocabulary")
    if enc.returncode == 0:
        stages = {s["name"]: s for s in json.loads(enc.stdout)["stages"]}
        with torch.no_grad():
            x = torch.tensor([[vocab[w] for w in "나는 오늘 학교에 간다".split()]])
            want = model.eval()(x, T.make_mask("padding", x).unsqueeze(1)).flatten().tolist()
        check(close(stages["logits"]["data"], want, 1e-4), "attn encode's logits are the trained model's")


# --- resume ---

def task_args(tmp, name):
    return ["--task", "duplicate", "--steps", "120", "--checkpoint-every", "4", "--eval-every", "40",
            "--save-weights", str(tmp / f"{name}.safetensors"), "--log", str(tmp / f"{name}.jsonl")]


def killed_run(attn, tmp, name, sig, wait_for_step):
    ckpt = tmp / f"{name}.ckpt"
    proc = subprocess.Popen([attn, "train", "--quiet", *task_args(tmp, name), "--checkpoint", str(ckpt)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = tmp / f"{name}.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= wait_for_step:
            break
        time.sleep(0.005)
    alive = proc.poll() is None
    proc.send_signal(sig)
    proc.wait()
    return alive, proc.returncode, ckpt, proc.stderr.read().decode()


def section_resume(attn, tmp):
    r = attn_train(attn, *task_args(tmp, "straight"))
    check(r.returncode == 0, "the uninterrupted run")
    want = [(tmp / f"straight.{ext}").read_bytes() for ext in ("safetensors", "jsonl")]
    for name, sig, step in [("killed", signal.SIGKILL, 30), ("interrupted", signal.SIGINT, 70)]:
        alive, status, ckpt, err = killed_run(attn, tmp, name, sig, step)
        check(alive, f"{name}: the run was stopped mid-way")
        if sig == signal.SIGINT:
            check(status == 130 and "--resume" in err, f"SIGINT exits 130 and says how to continue ({status}, {err!r})")
        check(not (tmp / f"{name}.safetensors").exists(), f"{name}: no weights written by a stopped run")
        r = attn_train(attn, *task_args(tmp, name), "--checkpoint", str(ckpt), "--resume")
        check(r.returncode == 0, f"{name}: --resume completes ({r.stderr.decode()[-200:]})")
        got = [(tmp / f"{name}.{ext}").read_bytes() if (tmp / f"{name}.{ext}").exists() else b""
               for ext in ("safetensors", "jsonl")]
        check(got == want, f"{name}: weights and log byte-identical to the uninterrupted run")
    r = attn_train(attn, *task_args(tmp, "other"), "--lr", "0.01", "--checkpoint", str(tmp / "killed.ckpt"), "--resume")
    err = r.stderr.decode()
    check(r.returncode == 2 and "another run" in err and "training settings" in err,
          f"a checkpoint of another run is refused, naming what differs ({err.strip()})")


# --- tasks ---

DOCUMENTED_ACCURACY = {"duplicate": 0.95, "brackets": 0.95, "places": 0.95, "asked": 0.95}


def twin_attention(model, items, vocab, mask):
    """The largest, over layers, heads and the two directions (later to earlier twin, earlier to later), mean
    attention from a repeated token to its twin."""
    best = 0.0
    with torch.no_grad():
        sums = {}
        count = 0
        for item in items:
            ids = [vocab[t] for t in item["text"].split()]
            pos = {}
            twin = None
            for j, t in enumerate(ids):
                if t in pos:
                    twin = (pos[t], j)
                pos.setdefault(t, j)
            if twin is None:
                continue
            forward_one(model, ids, mask)
            count += 1
            for name, w in T.STAGES.items():
                if name.endswith("attention_weights"):
                    for h in range(w.shape[1]):
                        i, j = twin
                        sums[(name, h, "back")] = sums.get((name, h, "back"), 0.0) + w[0, h, j, i].item()
                        sums[(name, h, "ahead")] = sums.get((name, h, "ahead"), 0.0) + w[0, h, i, j].item()
        best = max(v / count for v in sums.values()) if count else 0.0
    return best, count


def forward_one(model, ids, mask):
    T.STAGES.clear()
    x = torch.tensor([ids])
    return model(x, T.make_mask(mask, x).unsqueeze(1))


def asked_place(ids):
    """The position of the place word of the person asked about (the last word): the word after that
    person's clause subject."""
    return ids.index(ids[-1]) + 1


def asked_attention(model, items, vocab, mask):
    """The largest, over layers and heads, mean attention from the last word (the person asked about)
    to that person's place word; with its layer and head."""
    sums = {}
    with torch.no_grad():
        for item in items:
            ids = [vocab[t] for t in item["text"].split()]
            forward_one(model, ids, mask)
            for name, w in T.STAGES.items():
                if name.endswith("attention_weights"):
                    for h in range(w.shape[1]):
                        sums[(name, h)] = sums.get((name, h), 0.0) + w[0, h, -1, asked_place(ids)].item()
    (name, head), total = max(sums.items(), key=lambda kv: kv[1])
    return total / len(items), name, head


def uniform_sdpa(Q, K, V, mask=None, prefix=""):
    """Attention replaced by uniform weights over the keys the mask allows."""
    allowed = torch.ones(Q.shape[:-1] + K.shape[-2:-1]) if mask is None else (mask != 0).float().expand(
        Q.shape[:-1] + K.shape[-2:-1])
    weights = allowed / allowed.sum(-1, keepdim=True)
    T.rec(prefix + "attention_weights", weights)
    return torch.matmul(weights, V), weights


def accuracy(model, items, vocab, mask):
    with torch.no_grad():
        right = sum(int(forward_one(model, [vocab[t] for t in it["text"].split()], mask).argmax().item() == it["label"])
                    for it in items)
    return right / len(items)


def trained_model(files):
    config = json.loads(pathlib.Path(files["config"]).read_text())
    kw = {k: config[k] for k in ("d_model", "num_heads", "num_layers", "num_classes", "d_ff", "max_len", "dropout",
                                 "activation", "norm_first")}
    model = T.TransformerClassifier(vocab_size=config["vocab_size"], **kw).eval()
    model.load_state_dict(read_safetensors(files["weights"]), strict=True)
    vocab = json.loads(pathlib.Path(files["vocab"]).read_text())
    items = [json.loads(line) for line in pathlib.Path(files["val"]).read_text().splitlines()]
    return model, vocab, items, config["num_classes"]


def check_asked(files):
    """asked needs attention: the trained model in PyTorch is right as attn says, with uniform attention it
    is near chance, and a head attends from the question word to the asked person's place word."""
    model, vocab, items, classes = trained_model(files)
    mask = "padding+causal"  # the task's
    trained = accuracy(model, items, vocab, mask)
    check(trained >= 0.95, f"asked: PyTorch with the saved weights: {trained:.3f} right on {len(items)} items")
    real = T.scaled_dot_product_attention
    T.scaled_dot_product_attention = uniform_sdpa
    try:
        uniform = accuracy(model, items, vocab, mask)
    finally:
        T.scaled_dot_product_attention = real
    chance = 1 / classes
    check(abs(uniform - chance) <= 0.10, f"asked: with uniform attention {uniform:.3f} right, within 0.10 of chance "
                                         f"({chance:.3f})")
    mean, name, head = asked_attention(model, items, vocab, mask)
    check(mean >= 0.5, f"asked: {name} head {head} attends from the question word to the asked person's place "
                       f"word, {mean:.3f} on average over {len(items)} items")


def section_tasks(attn, tmp):
    for task, target in DOCUMENTED_ACCURACY.items():
        files = {k: str(tmp / f"{task}.{k}") for k in ("weights", "config", "vocab", "val", "log")}
        start = time.time()
        r = attn_train(attn, "--task", task, "--save-weights", files["weights"], "--save-config", files["config"],
                       "--save-vocab", files["vocab"], "--save-val-data", files["val"], "--log", files["log"])
        check(r.returncode == 0, f"{task}: attn train --task {task} runs ({r.stderr.decode()[-200:]})")
        if r.returncode:
            continue
        final = [rec for rec in log_records(files["log"]) if "val_accuracy" in rec][-1]
        check(final["val_accuracy"] >= target, f"{task}: validation accuracy {final['val_accuracy']:.3f} >= {target} "
                                               f"after {final['step']} steps ({time.time() - start:.1f} s)")
        if task == "asked":
            check_asked(files)
        if task != "duplicate":
            continue
        model, vocab, items, _ = trained_model(files)
        best, count = twin_attention(model, items, vocab, "padding+causal")  # the task's mask
        check(best >= 0.5, f"duplicate: a head attends between twins, {best:.3f} on average over {count} items")


SECTIONS = {"torch": section_torch, "resume": section_resume, "tasks": section_tasks}


def main(args):
    attn, names = args[0], args[1:] or list(SECTIONS)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            SECTIONS[name](attn, pathlib.Path(d))
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
