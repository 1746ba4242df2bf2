"""rng.json: PyTorch 1.13's CPU generator and default initialisation, bit for bit.

Each case seeds the generator (or uses a fresh torch.Generator for the default seed) and then runs
a list of steps in order on the same stream, so the fixture also pins down how many outputs each
operation consumes and what happens to the Box-Muller cache between calls.
float32 results are stored as uint32 bit patterns. Results longer than FULL_LIMIT elements are
stored as the FNV-1a-64 hash of their little-endian bit patterns plus the first and last 4 values.
See docs/torch-rng.md.
"""
import json
import math
import pathlib
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

SEEDS = [0, 1, 42, 2**32 + 5, 2**63 - 1, 2**64 - 1, -1, -12345]
RANDN_SIZES = list(range(1, 41)) + [54, 100, 1000, 4096]
FULL_LIMIT = 128


def _bits(t):
    return [v & 0xFFFFFFFF for v in t.detach().contiguous().view(torch.int32).reshape(-1).tolist()]


def _fnv1a64(bits):
    h = 0xCBF29CE484222325
    for word in bits:
        for byte in word.to_bytes(4, "little"):
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _floats(t):
    """A float32 result: every bit pattern, or for long results a hash plus both ends."""
    assert t.dtype == torch.float32
    bits = _bits(t)
    if len(bits) <= FULL_LIMIT:
        return {"bits": bits}
    return {"n": len(bits), "fnv1a64": f"{_fnv1a64(bits):016x}", "head": bits[:4], "tail": bits[-4:]}


def _run(step, gen):
    """Runs one step on the default generator (or gen, where the op takes one); adds its result."""
    op = step["op"]
    kw = {"generator": gen} if gen is not None else {}
    if op == "seed":
        torch.manual_seed(int(step["seed"]))
        step["initial_seed"] = torch.initial_seed()
    elif op == "randn":
        step["out"] = _floats(torch.randn(step["n"], **kw))
    elif op == "normal":
        step["out"] = _floats(torch.empty(step["n"]).normal_(step["mean"], step["std"], **kw))
    elif op == "rand":
        step["out"] = _floats(torch.rand(step["n"], **kw))
    elif op == "uniform":
        step["out"] = _floats(torch.empty(step["n"]).uniform_(step["from"], step["to"], **kw))
    elif op == "randint":
        step["values"] = torch.randint(step["low"], step["high"], (step["n"],), **kw).tolist()
    elif op == "raw64":
        step["values"] = torch.empty(step["n"], dtype=torch.int64).random_(-2**63, None, **kw).tolist()
    elif op == "bernoulli":
        step["out"] = _floats(torch.empty(step["n"]).bernoulli_(step["p"], **kw))
    elif op == "dropout":
        x = _dropout_input()
        step["x"] = _bits(x)
        step["out"] = _floats(F.dropout(x, step["p"], training=True))
    elif op == "linear":
        layer = nn.Linear(step["in"], step["out_features"], bias=step["has_bias"])
        step["weight"] = _floats(layer.weight)
        if step["has_bias"]:
            step["bias"] = _floats(layer.bias)
    elif op == "embedding":
        emb = nn.Embedding(step["num"], step["dim"], padding_idx=step["padding_idx"])
        step["out"] = _floats(emb.weight)
    elif op == "xavier":
        w = torch.empty(step["fan_out"], step["fan_in"])
        step["out"] = _floats(nn.init.xavier_uniform_(w, gain=step["gain"]))
    elif op == "kaiming":
        w = torch.empty(step["rows"], step["cols"])
        step["out"] = _floats(nn.init.kaiming_uniform_(w, a=step["a"]))
    else:
        raise ValueError(op)
    return step


def _dropout_input():
    # Mixed signs, a zero and a -0.0 (dropped elements come out as x * 0, so signs of zero matter).
    x = (torch.arange(40, dtype=torch.float32) - 17.0) * 0.37
    x[5] = -0.0
    return x


def _case(name, seed, steps):
    gen = None
    if seed is None:  # a fresh generator: torch's default seed 67280421310721
        gen = torch.Generator()
        initial = gen.initial_seed()
    else:
        torch.manual_seed(seed)
        initial = torch.initial_seed()
    steps = [_run(dict(s), gen) for s in steps]
    return {"name": name, "seed": None if seed is None else str(seed), "initial_seed": initial,
            "steps": steps}


def _randn_cases():
    cases = [_case(f"randn({n}) seed {s}", s, [{"op": "randn", "n": n}])
             for s in SEEDS for n in RANDN_SIZES]
    cases.append(_case("randn default seed", None, [{"op": "randn", "n": 20}, {"op": "randn", "n": 3},
                                                    {"op": "rand", "n": 5}]))
    return cases


def _normal_cases():
    shapes = [(1, 0.5, 2.5), (5, 0.5, 2.5), (15, -3.25, 0.75), (16, 0.5, 2.5), (17, -3.25, 0.75),
              (33, 0.1, 0.3), (5, 0.1, 0.3), (100, -3.2, 0.01), (1000, 1e3, 1e-3), (20, 1.5, 0.0),
              (3, 1.5, 0.0)]
    return [_case(f"normal_({n}, {m}, {sd}) seed {s}", s, [{"op": "normal", "n": n, "mean": m, "std": sd}])
            for s in (0, 42) for n, m, sd in shapes]


def _uniform_cases():
    b = 1 / math.sqrt(6)
    ranges = [(-0.37, 0.91), (-b, b), (2.0, 5.0), (-1e-3, 1e-3), (-100.0, 100.0), (0.3, 0.3), (0.0, 1.0)]
    cases = []
    for s in (0, 42, -1):
        for lo, hi in ranges:
            for n in (100, 1000):
                cases.append(_case(f"uniform_({n}, {lo}, {hi}) seed {s}", s,
                                   [{"op": "uniform", "n": n, "from": lo, "to": hi}]))
        cases.append(_case(f"rand seed {s}", s, [{"op": "rand", "n": 100}, {"op": "rand", "n": 1000}]))
    return cases


def _cache_cases():
    steps = [{"op": "randn", "n": 3}, {"op": "rand", "n": 5}, {"op": "randn", "n": 1},
             {"op": "randn", "n": 20}, {"op": "randn", "n": 1}, {"op": "randn", "n": 2},
             {"op": "normal", "n": 3, "mean": 2.0, "std": 3.0}, {"op": "randint", "n": 4, "low": 0, "high": 10},
             {"op": "normal", "n": 1, "mean": -1.0, "std": 0.5}, {"op": "bernoulli", "n": 3, "p": 0.5},
             {"op": "randn", "n": 1}, {"op": "randn", "n": 1}, {"op": "seed", "seed": "0"},
             {"op": "randn", "n": 1}, {"op": "randn", "n": 15}, {"op": "uniform", "n": 7, "from": -2, "to": 2},
             {"op": "randn", "n": 1}, {"op": "raw64", "n": 2}]
    cases = [_case(f"cache sequence seed {s}", s, steps) for s in (0, 42)]
    cases.append(_case("seed clears the cache", 7, [{"op": "randn", "n": 1}, {"op": "seed", "seed": "7"},
                                                    {"op": "randn", "n": 2}]))
    return cases


def _randint_cases():
    ranges = [(0, 10, 20), (-5, 5, 20), (0, 2**32 - 1, 8), (0, 2**32, 8), (-2**40, 2**40, 8),
              (-2**63, 2**63 - 1, 8), (3, 4, 5), (0, 30000, 12)]
    steps = [{"op": "randint", "n": n, "low": lo, "high": hi} for lo, hi, n in ranges]
    steps.append({"op": "raw64", "n": 2})
    return [_case(f"randint seed {s}", s, steps) for s in (0, 42)]


def _raw_cases():
    return [_case(f"raw64 seed {s}", s, [{"op": "raw64", "n": 8}]) for s in SEEDS]


def _linear_cases():
    def lin(i, o, bias=True):
        return {"op": "linear", "in": i, "out_features": o, "has_bias": bias}
    script_a = [{"op": "embedding", "num": 9, "dim": 6, "padding_idx": 0}] + [lin(6, 6, False)] * 3
    script_b = [{"op": "randn", "n": 80}] * 3 + [lin(8, 8), lin(8, 4), lin(4, 8, False)]
    shapes = [lin(3, 5), lin(1, 1), lin(16, 4, False), lin(0, 3), lin(5, 0), lin(7, 13), lin(64, 48)]
    return [_case("spec script (a)", 0, script_a), _case("spec script (b)", 0, script_b),
            _case("linear shapes seed 42", 42, shapes + [{"op": "raw64", "n": 1}]),
            _case("linear shapes seed -12345", -12345, shapes)]


def _embedding_cases():
    def emb(num, dim, pad):
        return {"op": "embedding", "num": num, "dim": dim, "padding_idx": pad}
    randn1 = {"op": "randn", "n": 1}
    steps = [emb(9, 6, 0), emb(3, 4, -1), emb(5, 3, 2), randn1, emb(4, 4, -4), emb(10, 7, None),
             emb(2, 3, 1), randn1, emb(1, 1, None), randn1, emb(40, 25, 39), emb(3, 5, -3), randn1]
    return [_case(f"embedding seed {s}", s, steps) for s in (0, 1)]


def _xavier_kaiming_cases():
    steps = [{"op": "xavier", "fan_out": fo, "fan_in": fi, "gain": g}
             for fo, fi, g in [(4, 6, 1.0), (10, 3, 1.0), (8, 8, 2.0), (7, 5, math.sqrt(2)), (100, 30, 1.0)]]
    steps += [{"op": "kaiming", "rows": r, "cols": c, "a": a}
              for r, c, a in [(5, 7, 0.0), (6, 6, math.sqrt(5)), (3, 2, 0.3), (0, 4, 1.0)]]
    steps.append({"op": "raw64", "n": 1})
    return [_case(f"init seed {s}", s, steps) for s in (0, 42)]


def _bernoulli_dropout_cases():
    bern = [{"op": "bernoulli", "n": 64, "p": p} for p in (0.3, 0.5, 0.0, 1.0, 0.999, 1e-3)]
    drop = [{"op": "dropout", "p": p} for p in (0.1, 0.5, 0.0, 1.0, 0.9)]
    tail = [{"op": "rand", "n": 4}]
    return [_case(f"bernoulli seed {s}", s, bern + tail) for s in (0, 42)] + \
           [_case(f"dropout seed {s}", s, drop + tail) for s in (0, 42)] + \
           [_case(f"dropout p={p} alone", 3, [{"op": "dropout", "p": p}] + tail) for p in (0.0, 1.0)]


def generate(out_dir: pathlib.Path) -> None:
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        # nn.Linear(0, 3) and kaiming_uniform_ on an empty weight warn that they draw nothing: intended.
        warnings.filterwarnings("ignore", message="Initializing zero-element tensors is a no-op")
        groups = {
            "randn": _randn_cases(),
            "normal": _normal_cases(),
            "uniform": _uniform_cases(),
            "cache": _cache_cases(),
            "randint": _randint_cases(),
            "raw64": _raw_cases(),
            "linear": _linear_cases(),
            "embedding": _embedding_cases(),
            "init": _xavier_kaiming_cases(),
            "bernoulli_dropout": _bernoulli_dropout_cases(),
        }
    doc = {"torch_version": torch.__version__, "groups": groups}
    (out_dir / "rng.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
