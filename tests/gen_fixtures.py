#!/usr/bin/python3
"""Writes every fixture in tests/fixtures from PyTorch (Debian's python3-torch 1.13).

Run with /usr/bin/python3. Each module in tests/torchgen/ has generate(out_dir) and writes its own
files; tests compare the engine against these files and never against our own earlier output.
    /usr/bin/python3 tests/gen_fixtures.py [--out DIR] [module ...]
The test `fixtures.reproducible` regenerates them all into a temporary folder and compares.
"""
import importlib.util
import pathlib
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent


def load(name):
    # By path: PyTorch ships a package named `torchgen`, which would shadow this folder.
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", HERE / "torchgen" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(args):
    out = HERE / "fixtures"
    if args[:1] == ["--out"]:
        out, args = pathlib.Path(args[1]), args[2:]
    names = args
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    mods = names or sorted(p.stem for p in (HERE / "torchgen").glob("*.py") if p.stem != "__init__")
    for name in mods:
        module = load(name)
        if not hasattr(module, "generate"):  # a reference another script loads (attribution.py)
            continue
        module.generate(out)
        print(f"fixtures: {name} written")


if __name__ == "__main__":
    main(sys.argv[1:])
