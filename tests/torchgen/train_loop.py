"""A plain PyTorch training loop, the reference `attn train` is checked against: torch.manual_seed(seed),
the tutorial's TransformerClassifier (tests/torchgen/transformer.py), model.train(), and per step the
batch, F.cross_entropy, backward, clip_grad_norm_ (or only the norm), optimizer.step() and the
LambdaLR schedule. Batches as core/train/train_data.hpp orders them: positions k·B … k·B+B−1 of the stream
randperm(N) + randperm(N) + … from torch.Generator().manual_seed(seed) (or 0, 1, …, N−1 cycling),
padded with 0. Writes train_loop.json: per case the data, settings and every step's record."""
import importlib.util
import json
import math
import pathlib

import torch
import torch.nn.functional as F

_spec = importlib.util.spec_from_file_location("fixture_transformer", pathlib.Path(__file__).with_name("transformer.py"))
T = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(T)


def cosine(warmup, total):  # transformers' get_cosine_schedule_with_warmup, num_cycles 0.5
    def f(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))
    return f


OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def data(n, vocab, classes, seed):
    g = torch.Generator().manual_seed(1000 + seed)
    items = []
    for i in range(n):
        length = 2 + int(torch.randint(0, 6, (1,), generator=g))
        ids = torch.randint(1, vocab, (length,), generator=g).tolist()
        items.append({"ids": ids, "label": (sum(ids) + i) % classes})
    return items


def batches(n, batch_size, seed, shuffle, steps):
    g = torch.Generator().manual_seed(seed)
    stream = []
    while len(stream) < steps * batch_size:
        stream += torch.randperm(n, generator=g).tolist() if shuffle else list(range(n))
    return [stream[k * batch_size:(k + 1) * batch_size] for k in range(steps)]


CASES = {
    "adamw_cosine_clip_dropout": dict(
        cfg=dict(vocab_size=12, d_model=16, num_heads=2, num_layers=2, num_classes=3, max_len=16, dropout=0.1),
        mask="padding", optimizer="adamw", opt=dict(lr=3e-3), warmup=3, schedule="cosine", clip=0.5,
        n=10, batch_size=4, shuffle=True, steps=20, seed=0),
    "sgd_nesterov_prenorm_gelu_causal_smoothing": dict(
        cfg=dict(vocab_size=10, d_model=8, num_heads=2, num_layers=1, num_classes=2, max_len=8, dropout=0.1,
                 activation="gelu", norm_first=True),
        mask="padding+causal", optimizer="sgd", opt=dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        label_smoothing=0.1, n=7, batch_size=3, shuffle=False, steps=20, seed=4),
    "adam_constant_warmup_no_dropout": dict(
        cfg=dict(vocab_size=9, d_model=12, num_heads=3, num_layers=2, num_classes=4, max_len=8, dropout=0.0),
        mask="none", optimizer="adam", opt=dict(lr=1e-2, weight_decay=0.05), warmup=4, schedule="constant",
        n=9, batch_size=5, shuffle=True, steps=20, seed=7),
}


def lr_lambda(schedule, warmup, total):
    if schedule == "cosine":
        return cosine(warmup, total)
    return lambda step: float(step) / float(max(1, warmup)) if step < warmup else 1.0


def run(cfg, mask, optimizer, opt, n, batch_size, shuffle, steps, seed, warmup=0, schedule="constant", clip=0.0,
        label_smoothing=0.0):
    items = data(n, cfg["vocab_size"], cfg["num_classes"], seed)
    torch.manual_seed(seed)
    kw = {k: v for k, v in cfg.items() if k in ("activation", "norm_first")}
    model = T.TransformerClassifier(**{k: v for k, v in cfg.items() if k not in kw}, **kw).train()
    optim = OPTIMIZERS[optimizer](model.parameters(), **opt)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lr_lambda(schedule, warmup, steps))
    records = []
    for step, batch in enumerate(batches(n, batch_size, seed, shuffle, steps)):
        seq = max(len(items[i]["ids"]) for i in batch)
        x = torch.tensor([items[i]["ids"] + [0] * (seq - len(items[i]["ids"])) for i in batch])
        y = torch.tensor([items[i]["label"] for i in batch])
        m = T.make_mask(mask, x)
        logits = model(x, None if m is None else m.unsqueeze(1))
        loss = F.cross_entropy(logits, y, label_smoothing=label_smoothing)
        optim.zero_grad()
        loss.backward()
        params = [p for p in model.parameters()]
        if clip > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, clip)
        else:
            norm = torch.norm(torch.stack([torch.norm(p.grad.detach(), 2.0) for p in params]), 2.0)
        lr = optim.param_groups[0]["lr"]
        optim.step()
        sched.step()
        records.append({"step": step + 1, "loss": T.floats(loss)[0],
                        "accuracy": float((logits.argmax(dim=1) == y).float().mean()), "lr": lr,
                        "grad_norm": T.floats(norm)[0]})
    return {"config": cfg, "mask": mask, "optimizer": optimizer, "options": opt, "warmup": warmup,
            "schedule": schedule, "clip_grad_norm": clip, "label_smoothing": label_smoothing, "items": items,
            "batch_size": batch_size, "shuffle": shuffle, "steps": steps, "seed": seed, "records": records,
            "final": [T.stage(k, v) for k, v in model.state_dict().items()]}


def generate(out_dir):
    doc = {name: run(**c) for name, c in CASES.items()}
    (out_dir / "train_loop.json").write_text(json.dumps(doc, separators=(",", ":")))
