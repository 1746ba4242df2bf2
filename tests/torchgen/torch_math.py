"""torch_math.json: torch.exp, torch.sin, torch.cos and torch.tanh on float32, bit for bit.

PyTorch 1.13 (AVX2) computes them with Sleef's expf8_u10 / sinf8_u10 / cosf8_u10 / tanhf8_u10 on
vectors of 8 elements. All floats are stored as uint32 bit patterns.
  exp:        x and torch.exp(x) over one tensor (exp has no dependence between elements).
  sincos:     x, torch.sin(x), torch.cos(x) for each x alone: Sleef picks the argument reduction
              for sin/cos once per vector of 8, so each x gets a row of its own in an [n, 8]
              tensor of zeros, which gives what a one-element tensor gives.
  mixed:      one contiguous tensor whose vectors of 8 mix |x| < 125 with larger x, and its
              sin/cos (the elements' last bits then depend on their neighbours).
  positional: PositionalEncoding's div_term for each d_model (with the float32 factor it is
              exp(arange(0, d, 2) * factor) of), and for each (max_len, d_model) the FNV-1a-64
              of the bits of sin/cos(position * div_term) over the whole [max_len, d_model / 2]
              table plus a few sampled elements.
Run single-threaded (tests/gen_fixtures.py sets torch.set_num_threads(1)) so that the tensors
are split into vectors from their first element.
"""
import json
import math
import pathlib

import numpy as np
import torch

D_MODELS = [2, 6, 8, 16, 32, 64, 128, 512, 1024]
MAX_LENS = [5000, 37]
SAMPLES = 24  # sampled elements per positional table


def _bits(t):
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).reshape(-1).tolist()]


def _fnv1a64(bits):
    """FNV-1a 64 over the little-endian bytes of the uint32 bit patterns, as in rng.py."""
    h = 0xCBF29CE484222325
    for byte in np.asarray(bits, dtype="<u4").tobytes():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _f32(values):
    return torch.tensor(values, dtype=torch.float32)


def _neighbours(values):
    """Each value with the floats just below and above it."""
    out = []
    for v in values:
        t = _f32([v])
        out += [torch.nextafter(t, _f32([-math.inf])).item(), v, torch.nextafter(t, _f32([math.inf])).item()]
    return out


def _exp_inputs(g):
    sweep = torch.linspace(-110, 90, 3001)
    rand = torch.rand(2000, generator=g) * 200 - 110
    edges = _f32(_neighbours([-104, -100, -87.33654, 88.72283, 100])
                 + [0.0, -0.0, 88.7, 88.73, -103.5, -95, -90, -88, 1e-8, -1e-8, 1e-40, 1, -1, 0.5,
                    math.inf, -math.inf, 1e10, -1e10, 3.4e38, -3.4e38])
    return torch.cat([sweep, rand, edges])


def _sincos_inputs(g):
    rand = torch.rand(1500, generator=g) * 2e4 - 1e4
    sweep = torch.linspace(0, 100, 1001)
    # Uniform over the bit patterns of finite floats: every row of Sleef's 1/(2 pi) table.
    patterns = torch.randint(0, 0x7F800000, (300,), generator=g, dtype=torch.int64)
    signs = torch.randint(0, 2, (300,), generator=g, dtype=torch.int64) << 31
    anywhere = ((patterns | signs) - ((patterns | signs) >> 31 << 32)).to(torch.int32).view(torch.float32)
    edges = _f32(_neighbours([125, -125, 0.7, 39000, 2**23, 2**26, 2**90])
                 + [0.0, -0.0, 1e-30, 1e-40, -1e-40, math.pi, math.pi / 2, 1e5, -1e5, 12345.678, 1e6,
                    1e10, 1e20, 1e30, 3.4028235e38, -3.4028235e38, math.inf, -math.inf, math.nan])
    return torch.cat([rand, sweep, anywhere, edges])


def _alone(fn, x):
    """fn(x) with every element in a vector of its own (the other 7 lanes zero)."""
    rows = torch.zeros(x.numel(), 8)
    rows[:, 0] = x
    return fn(rows)[:, 0]


def _mixed_inputs(g):
    n = 1003  # not a multiple of 8: the last vector is partial
    small = torch.rand(n, generator=g) * 250 - 125
    large = torch.rand(n, generator=g) * 2e5 - 1e5
    return torch.where(torch.rand(n, generator=g) < 0.1, large, small)


def _tanh_inputs(g):
    """A multiple of 16 elements: PyTorch's vectorized loop then runs Sleef's tanhf8_u10 on all of them
    (a tail would go through std::tanh)."""
    sweep = torch.linspace(-10, 10, 4001)
    rand = torch.rand(2000, generator=g) * 20 - 10
    near_zero = (torch.rand(1000, generator=g) * 2 - 1) * 10.0 ** -torch.randint(0, 12, (1000,), generator=g).float()
    edges = _f32(_neighbours([8.664339742, -8.664339742, 0.5, 1e-4])
                 + [0.0, -0.0, 1e-30, 1e-40, -1e-40, 88.0, -88.0, 200.0, 3.4e38, math.inf, -math.inf, math.nan])
    x = torch.cat([sweep, rand, near_zero, edges])
    return torch.cat([x, torch.zeros((-x.numel()) % 16)])


def _positional(g):
    cases = []
    for d_model in D_MODELS:
        factor = -math.log(10000.0) / d_model
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * factor)  # as tutorial1.py does
        factor32 = _f32([factor])
        assert torch.equal(div_term, torch.exp(torch.arange(0, d_model, 2).float() * factor32))
        for max_len in MAX_LENS:
            position = torch.arange(0, max_len).unsqueeze(1).float()
            angle = position * div_term
            sin, cos = torch.sin(angle), torch.cos(angle)
            idx = torch.randint(0, angle.numel(), (SAMPLES,), generator=g).tolist()
            cases.append({
                "d_model": d_model, "max_len": max_len, "factor": _bits(factor32)[0],
                "div_term": _bits(div_term),
                "sin_fnv1a64": _fnv1a64(_bits(sin)), "cos_fnv1a64": _fnv1a64(_bits(cos)),
                "sample_index": idx,
                "sample_sin": [_bits(sin.reshape(-1)[i])[0] for i in idx],
                "sample_cos": [_bits(cos.reshape(-1)[i])[0] for i in idx],
            })
    return cases


def generate(out_dir: pathlib.Path) -> None:
    g = torch.Generator().manual_seed(20240613)
    x = _exp_inputs(g)
    doc = {"exp": {"x": _bits(x), "y": _bits(torch.exp(x))}}
    x = _sincos_inputs(g)
    doc["sincos"] = {"x": _bits(x), "sin": _bits(_alone(torch.sin, x)), "cos": _bits(_alone(torch.cos, x))}
    x = _mixed_inputs(g)
    doc["mixed"] = {"x": _bits(x), "sin": _bits(torch.sin(x)), "cos": _bits(torch.cos(x))}
    doc["positional"] = _positional(g)
    x = _tanh_inputs(g)
    doc["tanh"] = {"x": _bits(x), "y": _bits(torch.tanh(x))}
    (out_dir / "torch_math.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
