"""train_data.json: the data side of `attn train` (core/train/train_data.*) computed by PyTorch.

- randperm: torch.randperm(n, generator=torch.Generator().manual_seed(seed)), and the generator's next
  draws after it (so the number of outputs a permutation consumes is pinned down too).
- split: the --val-fraction split: perm = torch.randperm(N, generator=Generator().manual_seed(seed)); the
  first k = min(max(floor(x * N + 0.5), 1), N - 1) entries of perm, sorted, are validation.
- order: batch k's item indices: positions k*B .. k*B+B-1 of the stream perm_0 + perm_1 + ..., each
  perm_e = torch.randperm(N, generator=g) drawn from ONE g = Generator().manual_seed(seed); without
  shuffling the stream is 0, 1, ..., N-1, 0, 1, ... (Not RandomSampler(generator=g): torch 1.13's
  draws a second, empty-sliced permutation at the end of every epoch.)
- tasks: the built-in tasks' items, generated here from their definition in core/train/train_data.hpp.
Permutations longer than FULL_LIMIT are stored as FNV-1a-64 of their int64 little-endian bytes plus
both ends.
"""
import json
import math
import pathlib

import torch

FULL_LIMIT = 100


def _fnv1a64(values):
    h = 0xCBF29CE484222325
    for v in values:
        for byte in int(v).to_bytes(8, "little"):
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randperm_cases():
    cases = []
    for seed in [0, 1, 42, 2**32 + 5, 2**64 - 1]:
        for n in [1, 2, 3, 10, 1000, 70000]:
            g = _gen(seed)
            perm = torch.randperm(n, generator=g).tolist()
            case = {"seed": seed, "n": n, "next": torch.randint(0, 1000, (3,), generator=g).tolist()}
            if n <= FULL_LIMIT:
                case["perm"] = perm
            else:
                case.update(fnv1a64=f"{_fnv1a64(perm):016x}", head=perm[:8], tail=perm[-8:])
            cases.append(case)
    return cases


def _split(n, fraction, seed):
    k = min(max(math.floor(fraction * n + 0.5), 1), n - 1)
    perm = torch.randperm(n, generator=_gen(seed)).tolist()
    val = sorted(perm[:k])
    return {"n": n, "fraction": fraction, "seed": seed, "val": val,
            "train": [i for i in range(n) if i not in set(val)]}


def _split_cases():
    # 0.25 * 10 = 2.5 and 0.5 * 7 = 3.5 round up; 0.01 * 5 and 0.99 * 5 are clamped to 1 and N - 1.
    return [_split(*c) for c in [(10, 0.2, 0), (10, 0.25, 3), (7, 0.5, 1), (5, 0.01, 2), (5, 0.99, 2),
                                 (2, 0.5, 7), (1000, 0.1, 42)]]


def _order(n, batch_size, seed, shuffle, steps):
    g = _gen(seed)
    stream = []
    while len(stream) < steps * batch_size:
        stream += torch.randperm(n, generator=g).tolist() if shuffle else list(range(n))
    batches = [stream[k * batch_size:(k + 1) * batch_size] for k in range(steps)]
    return {"n": n, "batch_size": batch_size, "seed": seed, "shuffle": shuffle, "batches": batches}


def _order_cases():
    return [_order(*c) for c in [(10, 4, 0, True, 8), (7, 3, 5, True, 10), (5, 8, 1, True, 4),
                                 (6, 4, 2, False, 4), (1, 2, 3, True, 3), (8, 4, 9, True, 6),
                                 (100, 32, 42, True, 20)]]


# --- the built-in tasks, as core/train/train_data.hpp defines them; draw(m) takes one generator output ---

def _draw(g, m):
    return int(torch.randint(0, m, (1,), generator=g))


SYMBOLS = [chr(ord("a") + i) for i in range(26)] + [chr(ord("A") + i) for i in range(6)]


def _duplicate(g, i):
    label = i % 2
    length = 4 + _draw(g, 7)
    perm = torch.randperm(32, generator=g).tolist()
    if label == 0:
        symbols = perm[:length]
    else:
        symbols = perm[:length - 1]
        twin = symbols[_draw(g, length - 1)]
        symbols.insert(_draw(g, length), twin)
    return [SYMBOLS[s] for s in symbols]


def _is_balanced(tokens):
    depth = 0
    for t in tokens:
        depth += 1 if t == "(" else -1
        if depth < 0:
            return False
    return depth == 0


def _balanced(g, length):
    out, depth = [], 0
    for pos in range(length):
        if depth == 0:
            opens = True
        elif depth == length - pos:
            opens = False
        else:
            opens = _draw(g, 2) == 0
        depth += 1 if opens else -1
        out.append("(" if opens else ")")
    return out


def _brackets(g, i):
    kind = i % 4
    if kind in (1, 3):
        return _balanced(g, 2 * (1 + _draw(g, 8)))
    if kind == 0:
        tokens = ["(" if _draw(g, 2) == 0 else ")" for _ in range(2 + _draw(g, 15))]
        if tokens.count("(") == tokens.count(")"):
            tokens[-1] = ")" if tokens[-1] == "(" else "("
        return tokens
    half = 1 + _draw(g, 8)
    while True:
        tokens = ["(" if p < half else ")" for p in torch.randperm(2 * half, generator=g).tolist()]
        if not _is_balanced(tokens):
            return tokens


SUBJECTS = ["나는", "너는", "우리는", "그는", "그녀는"]
TIMES = [None, "오늘", "내일", "어제"]
PLACES_TO = ["학교에", "도서관에", "집에"]
PLACES_AT = ["학교에서", "도서관에서", "집에서"]


def _places(g, i):
    subject = SUBJECTS[_draw(g, 5)]
    time = _draw(g, 4)
    before = time != 0 and _draw(g, 2) == 0
    study = _draw(g, 2) == 1
    past = time == 3
    words = [subject, PLACES_AT[i % 3] if study else PLACES_TO[i % 3]]
    words.append(("공부했다" if past else "공부한다") if study else ("갔다" if past else "간다"))
    if time:
        words.insert(0 if before else 1, TIMES[time])
    return words


def _asked(g, i):
    people = torch.randperm(5, generator=g).tolist()
    places = torch.randperm(3, generator=g).tolist()
    time = _draw(g, 4)
    past = time == 3
    words = [TIMES[time]] if time else []
    for k in range(3):
        study = _draw(g, 2) == 1
        words += [SUBJECTS[people[k]], PLACES_AT[places[k]] if study else PLACES_TO[places[k]]]
        if k < 2:
            words.append("공부하고" if study else "가고")
        else:
            words.append(("공부했다" if past else "공부한다") if study else ("갔다" if past else "간다"))
    words.append(SUBJECTS[people[places.index(i % 3)]])
    return words


TASKS = {"duplicate": (_duplicate, 2), "brackets": (_brackets, 2), "places": (_places, 3), "asked": (_asked, 3)}


def _task_cases():
    cases = []
    for name, (sample, classes) in TASKS.items():
        for seed in [0, 7]:
            g = _gen(seed)
            items = [{"tokens": sample(g, i), "label": i % classes} for i in range(24)]
            cases.append({"task": name, "seed": seed, "items": items})
    return cases


def generate(out_dir: pathlib.Path) -> None:
    doc = {"torch_version": torch.__version__, "randperm": _randperm_cases(), "split": _split_cases(),
           "order": _order_cases(), "tasks": _task_cases()}
    with open(out_dir / "train_data.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
