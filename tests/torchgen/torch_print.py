"""torch_print.json: repr() of float32/int64/bool tensors, torch.Size and lists of str.

Each tensor case keeps its values exactly (float32 as uint32 bit patterns, so NaN, -0.0 and inf
survive JSON) next to the text PyTorch 1.13 prints for it with the default print options.
"""
import json
import pathlib

import torch

NAN = float("nan")
INF = float("inf")


def _bits(t):
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def _tensor_case(name, t):
    assert not t.requires_grad
    if t.dtype == torch.float32:
        dtype, values = "float32", _bits(t)
    elif t.dtype == torch.int64:
        dtype, values = "int64", t.reshape(-1).tolist()
    elif t.dtype == torch.bool:
        dtype, values = "bool", t.reshape(-1).tolist()
    else:
        raise ValueError(t.dtype)
    return {"kind": "tensor", "name": name, "dtype": dtype, "shape": list(t.shape),
            "values": values, "repr": repr(t)}


def _f(values, shape=None):
    t = torch.tensor(values, dtype=torch.float32)
    return t.reshape(shape) if shape is not None else t


def _tutorial_cases(g):
    """The shapes the walkthrough prints: embeddings, scores, attention weights, masks."""
    cases = []
    for shape in ([4, 4], [4, 4, 6], [1, 4, 6], [4, 1, 4], [4, 4, 4], [2, 4, 3, 2]):
        cases.append(_tensor_case(f"randn{shape}", torch.randn(shape, generator=g)))
    q = torch.randn(4, 4, 6, generator=g)
    scores = q @ q.transpose(-1, -2) * 3.0
    cases.append(_tensor_case("scores", scores))
    weights = torch.softmax(scores, dim=-1)  # spans ~1e-5..1: sci mode
    cases.append(_tensor_case("attention weights", weights))
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    masked = scores.masked_fill(causal, -1e9)
    cases.append(_tensor_case("masked scores", masked))
    cases.append(_tensor_case("masked -inf", scores[0].masked_fill(causal, -INF)))
    cases.append(_tensor_case("masked softmax", torch.softmax(masked, dim=-1)))
    cases.append(_tensor_case("causal mask", causal))
    cases.append(_tensor_case("mask [1,4,6]", torch.rand(1, 4, 6, generator=g) > 0.5))
    cases.append(_tensor_case("mask [4,1,4]", torch.rand(4, 1, 4, generator=g) > 0.3))
    cases.append(_tensor_case("all true", torch.ones(3, dtype=torch.bool)))
    cases.append(_tensor_case("all false", torch.zeros(2, 2, dtype=torch.bool)))
    cases.append(_tensor_case("token ids", torch.randint(0, 30000, (2, 6), generator=g)))
    cases.append(_tensor_case("position ids", torch.arange(8).reshape(1, 8)))
    cases.append(_tensor_case("wide ids", torch.tensor([[1, -2, 1234567890123], [0, 7, -45]])))
    cases.append(_tensor_case("layer norm", torch.layer_norm(q, [6])))
    cases.append(_tensor_case("dropout-like", torch.tensor([[0.0, 1.25], [2.5, 0.0]])))
    return cases


def _mode_cases():
    """_Formatter's branches: int mode, sci mode, fixed, non-finite values and signed zeros."""
    f = _f
    return [
        _tensor_case("int mode", f(range(16), [4, 4])),
        _tensor_case("int mode negative", f([-3, 0, 12, -100])),
        _tensor_case("int mode ratio > 1000", f([1, 2000])),
        _tensor_case("int mode ratio == 1000", f([1, 1000])),
        _tensor_case("int mode > 1e8", f([3e8, 1])),
        _tensor_case("int mode 1e8", f([1e8, 5e7])),
        _tensor_case("int mode nan", f([1, NAN, -INF, INF])),
        _tensor_case("int mode -0", f([-0.0, 2, 0.0])),
        _tensor_case("all zero", torch.zeros(2, 3)),
        _tensor_case("all -0", f([-0.0, -0.0])),
        _tensor_case("only nan", f([NAN, NAN])),
        _tensor_case("negative nan", f([-NAN, 1.5, NAN])),
        _tensor_case("only inf", f([INF, -INF])),
        _tensor_case("mixed nan inf", f([1.5, NAN, INF, -INF, -0.0, 0.0, -2.25])),
        _tensor_case("sci nan inf", f([1e-5, NAN, INF, -INF, -0.0, 0.0, 3.0])),
        _tensor_case("fixed", f([0.5, -1.25, 3.14159, 99.9999])),
        _tensor_case("fixed ratio just below", f([0.1, 100.0])),
        _tensor_case("sci ratio", f([0.1, 100.1])),
        _tensor_case("sci min < 1e-4", f([1e-4, 0.5])),
        _tensor_case("sci min 2e-4", f([2e-4, 0.5])),
        _tensor_case("sci large", f([1.5e8, -2.5])),
        _tensor_case("very large small", f([1e30, -1e-30, 3.4028234663852886e38, 1.4e-45])),
        _tensor_case("subnormal", f([1.4e-45, 1e-40])),
        _tensor_case("negative zero fixed", f([-0.0, 0.5, -0.5])),
        _tensor_case("negative zero sci", f([-0.0, 1e-7, -1e-7])),
        _tensor_case("ties fixed", f([0.03125, 0.09375, 1.03125, 2.00005, -0.15625, 0.15625])),
        _tensor_case("ties sci", f([1.03125e-3, 2.5, 1e-6, 1.15625])),
        _tensor_case("int mode sci", f([12345, 1, -5, 0])),
        _tensor_case("rounding up width", f([9.99996, 0.5])),
        _tensor_case("sci rounding up", f([9.99996e-5, 0.5])),
    ]


def _scalar_and_empty_cases():
    return [
        _tensor_case("scalar 1.5", torch.tensor(1.5)),
        _tensor_case("scalar int mode", torch.tensor(3.0)),
        _tensor_case("scalar -0", torch.tensor(-0.0)),
        _tensor_case("scalar 0", torch.tensor(0.0)),
        _tensor_case("scalar nan", torch.tensor(NAN)),
        _tensor_case("scalar -inf", torch.tensor(-INF)),
        _tensor_case("scalar sci", torch.tensor(1e-5)),
        _tensor_case("scalar big", torch.tensor(123456789.0)),
        _tensor_case("scalar frac big", torch.tensor(1.5e9 + 0.5)),
        _tensor_case("scalar int64", torch.tensor(42)),
        _tensor_case("scalar int64 negative", torch.tensor(-7)),
        _tensor_case("scalar bool", torch.tensor(True)),
        _tensor_case("scalar bool false", torch.tensor(False)),
        _tensor_case("empty", torch.tensor([])),
        _tensor_case("empty [0,3]", torch.zeros(0, 3)),
        _tensor_case("empty [2,0,4]", torch.zeros(2, 0, 4)),
        _tensor_case("empty [1,2,3,0]", torch.zeros(1, 2, 3, 0)),
        _tensor_case("empty int64", torch.zeros(0, dtype=torch.int64)),
        _tensor_case("empty int64 [0,2]", torch.zeros(0, 2, dtype=torch.int64)),
        _tensor_case("empty bool", torch.zeros(3, 0, dtype=torch.bool)),
        _tensor_case("empty wide", torch.zeros(0, 4000000000, 4000000000, 4000000000,
                                              dtype=torch.int64)),
        _tensor_case("one element", _f([2.5])),
        _tensor_case("one element nested", _f([[[[2.5]]]])),
    ]


def _wrap_cases(g):
    """_vector_str puts floor((80 - indent) / (width + 2)) elements on a line."""
    return [
        _tensor_case("wrap [2,30]", torch.randn(2, 30, generator=g) * 1000),
        _tensor_case("wrap [3,17] sci", torch.randn(3, 17, generator=g) * 1e-3),
        _tensor_case("wrap [3,17] int64", torch.randint(-10**9, 10**9, (3, 17), generator=g)),
        _tensor_case("wrap [100]", torch.randn(100, generator=g)),
        _tensor_case("wrap [50] int mode", torch.arange(50.0) * 7),
        _tensor_case("wrap [2,2,2,40]", torch.randn(2, 2, 2, 40, generator=g)),
        _tensor_case("wrap bool [2,40]", torch.rand(2, 40, generator=g) > 0.5),
        _tensor_case("wrap one per line", _f([1.5e30, -2.5e-30] * 3)),
        _tensor_case("wrap exact fit", _f([1.0, 2.0] * 10) * 10000.0 + 0.5),
    ]


def _summary_cases(g):
    """numel > 1000: '...' rows and elements; the formatter sees only the kept values."""
    tail = torch.full((1001,), 0.5)
    tail[500] = 1e-9  # hidden by the summary, so it must not switch to sci mode
    return [
        _tensor_case("summary [2000]", torch.randn(2000, generator=g)),
        _tensor_case("summary [40,40]", torch.randn(40, 40, generator=g) * 100),
        _tensor_case("summary [3,20,30]", torch.randint(-50, 50, (3, 20, 30), generator=g).float()),
        _tensor_case("summary [1001] int64", torch.arange(1001)),
        _tensor_case("summary hidden small", tail),
        _tensor_case("summary [2,3,20,10] bool", torch.rand(2, 3, 20, 10, generator=g) > 0.5),
    ]


def _random_cases(g):
    """Small tensors of every rank with magnitudes from 1e-8 to 1e10, some non-finite values."""
    cases = []
    for i in range(60):
        rank = int(torch.randint(0, 5, (1,), generator=g))
        shape = torch.randint(1, 5, (rank,), generator=g).tolist()
        scale = 10.0 ** float(torch.randint(-8, 11, (1,), generator=g))
        t = torch.randn(shape, generator=g) * scale
        kind = i % 5
        if kind == 1:
            t = (t / scale * 10.0 ** (i % 4)).round()  # int mode, several widths
        elif kind == 2 and t.numel() > 1:
            t.view(-1)[0] = [NAN, INF, -INF, -0.0, 0.0][(i // 5) % 5]
        elif kind == 3:
            t = t.abs() * 1e-3
        cases.append(_tensor_case(f"random {i}", t))
    return cases


def _size_cases():
    shapes = [[], [4], [4, 4, 6], [1, 2, 3, 4], [0], [2, 0]]
    return [{"kind": "size", "shape": s, "repr": repr(torch.Size(s))} for s in shapes]


def _list_cases():
    lists = [
        ["나는", "오늘", "학교에", "간다"],
        [],
        ["the", "cat", "sat"],
        ["it's"],
        ['say "hi"'],
        ["both ' and \""],
        ["back\\slash", "tab\t", "nl\n", "cr\r"],
        ["\x00\x01\x1f\x7f", "\x80\x9f", "\xa0", "\xad", "é", "ü"],
        ["\u200b", "\u2028", "\u3000", "\ufeff", "\ue000", "\U000e0001", "\U0001f600", "\U0010fffd"],
        ["", " ", "[CLS]", "##ing"],
    ]
    return [{"kind": "list", "items": items, "repr": repr(items)} for items in lists]


def generate(out_dir: pathlib.Path) -> None:
    g = torch.Generator().manual_seed(1234)
    cases = (_tutorial_cases(g) + _mode_cases() + _scalar_and_empty_cases() + _wrap_cases(g)
             + _summary_cases(g) + _random_cases(g) + _size_cases() + _list_cases())
    with open(out_dir / "torch_print.json", "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
