"""torch.optim trajectories (SGD, Adam, AdamW; CPU, foreach=False, the 1.13 defaults) on a synthetic
loss, with clip_grad_norm_ and LambdaLR schedules. Writes optim.json: the parameters' names, shapes
and start values, the loss's c and d, and per run its settings (as given; the rest are torch's
defaults) and 20 steps of {loss, grad (before clipping), norm (clip_grad_norm_'s return; max_norm
inf where the run does not clip, which only measures), clipped_grad (where it clips), lr, params
after the step}; and clip_grad_norm_ alone on gradients of more sizes."""
import json
import math

import numpy as np
import torch

STEPS = 20
SHAPES = {"w": [3, 5], "b": [8], "v": [17], "s": [1]}


def floats(t):
    """float32 values as the shortest decimals that read back as the same float32."""
    return [float(repr(np.float32(v))) for v in t.detach().reshape(-1).tolist()]


# transformers' get_cosine_schedule_with_warmup / get_constant_schedule_with_warmup lambdas (4.x),
# written out: transformers is not installed next to Debian's torch.
def cosine_lambda(warmup, total, num_cycles=0.5):
    def lr_lambda(current_step):
        if current_step < warmup:
            return float(current_step) / float(max(1, warmup))
        progress = float(current_step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
    return lr_lambda


def constant_lambda(warmup):
    def lr_lambda(current_step):
        if current_step < warmup:
            return float(current_step) / float(max(1.0, warmup))
        return 1.0
    return lr_lambda


RUNS = {
    "sgd": dict(kind="sgd", lr=0.05),
    "sgd_momentum_wd": dict(kind="sgd", lr=0.05, momentum=0.9, weight_decay=0.01),
    "sgd_nesterov": dict(kind="sgd", lr=0.05, momentum=0.9, nesterov=True),
    "sgd_dampening": dict(kind="sgd", lr=0.05, momentum=0.9, dampening=0.1),
    "adam": dict(kind="adam"),
    "adam_wd": dict(kind="adam", weight_decay=0.1),
    "adamw": dict(kind="adamw"),
    "adamw_betas": dict(kind="adamw", lr=0.01, betas=[0.8, 0.99], eps=1e-6),
    "adamw_clip_cosine": dict(kind="adamw", lr=0.01, clip=0.5, schedule="cosine", warmup=5, total=20),
    "sgd_momentum_constant_warmup": dict(kind="sgd", lr=0.05, momentum=0.9, schedule="constant", warmup=5),
}


def optimizer(params, kind, lr=1e-3, **kw):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, **kw)
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    return (torch.optim.Adam if kind == "adam" else torch.optim.AdamW)(params, lr=lr, **kw)


def run(start, c, d, given):
    settings = dict(given)
    clip = settings.pop("clip", None)
    schedule, warmup, total = settings.pop("schedule", None), settings.pop("warmup", 0), settings.pop("total", 0)
    params = [p.clone().requires_grad_() for p in start]
    opt = optimizer(params, **settings)
    sched = None
    if schedule is not None:
        fn = cosine_lambda(warmup, total) if schedule == "cosine" else constant_lambda(warmup)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, fn)
    steps = []
    for _ in range(STEPS):
        opt.zero_grad()
        # Gradients that change with the parameters: cos(p) * c + 2 p d.
        loss = sum((torch.sin(p) * ci + p * p * di).sum() for p, ci, di in zip(params, c, d))
        loss.backward()
        rec = {"loss": float(loss), "grad": [floats(p.grad) for p in params]}
        rec["norm"] = float(torch.nn.utils.clip_grad_norm_(params, clip if clip is not None else math.inf))
        if clip is not None:
            rec["clipped_grad"] = [floats(p.grad) for p in params]
        rec["lr"] = opt.param_groups[0]["lr"]
        opt.step()
        if sched is not None:
            sched.step()
        rec["params"] = [floats(p) for p in params]
        steps.append(rec)
    return {"settings": given, "steps": steps}


def clip_case(g, sizes, max_norm):
    """clip_grad_norm_ alone on gradients of sizes that take every path of torch's norm kernel."""
    params = [torch.zeros(n, requires_grad=True) for n in sizes]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g) * 3
    grads = [floats(p.grad) for p in params]
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return {"max_norm": max_norm, "grad": grads, "norm": norm, "clipped_grad": [floats(p.grad) for p in params]}


def generate(out_dir):
    g = torch.Generator().manual_seed(2024)
    start = [torch.randn(s, generator=g) for s in SHAPES.values()]
    c = [torch.randn(s, generator=g) for s in SHAPES.values()]
    d = [torch.rand(s, generator=g) * 0.5 for s in SHAPES.values()]
    doc = {
        "params": [{"name": n, "shape": s, "data": floats(p)} for (n, s), p in zip(SHAPES.items(), start)],
        "c": [floats(t) for t in c],
        "d": [floats(t) for t in d],
        "runs": {name: run(start, c, d, settings) for name, settings in RUNS.items()},
        "clip_cases": [clip_case(g, [3, 6, 12, 33, 100], 0.3), clip_case(g, [2, 9, 20, 7], 0.7)],
    }
    (out_dir / "optim.json").write_text(json.dumps(doc, separators=(",", ":")))
