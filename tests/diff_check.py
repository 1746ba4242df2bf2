#!/usr/bin/python3
"""`attn diff` as a checker against PyTorch: the first tutorial's script (tests/torchgen/tutorial1.py, run
here by Debian's python3-torch 1.13) saves each stage as STAGE.npy (numpy.save, its own dtypes: int64 ids
and mask, float32 values); `attn diff` compares `attn tutorial --json` with that folder. Checked: every one
of the 13 stages compared, all bit-identical; one value of attention_weights moved by 1e-4 of itself is found (exit 1, that stage first, the
element's index, A's and B's values, its ULPs counted by numpy); a stage of another shape is listed and
fails; a missing one is listed and does not; the --json document says the same.
    /usr/bin/python3 tests/diff_check.py path/to/attn
"""
import contextlib
import importlib.util
import io
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
failures = []


def load(path, name):  # by path: PyTorch ships a package named torchgen
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def attn(binary, *args):
    return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=120)


def diff_json(binary, a, b, *flags):
    r = attn(binary, "diff", a, b, "--json", *flags)
    return r.returncode, json.loads(r.stdout) if r.stdout else None, r.stderr


def main():
    binary = sys.argv[1]
    tutorial = load(HERE / "torchgen" / "tutorial1.py", "fixture_tutorial1")
    cfg = dict(tutorial.CASES["default"])
    with contextlib.redirect_stdout(io.StringIO()):
        _, _, stages = tutorial.run(**cfg)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ref = tmp / "torch"
        ref.mkdir()
        arrays = {name: t.detach().numpy() for name, t in stages}
        for name, a in arrays.items():
            np.save(ref / f"{name}.npy", a)
        trace = tmp / "trace.json"
        r = attn(binary, "tutorial", "--json")
        check(r.returncode == 0, "attn tutorial --json")
        trace.write_text(r.stdout)

        status, doc, err = diff_json(binary, trace, ref, "--rtol", "1e-6", "--atol", "0")
        check(status == 0 and doc["passed"], f"the tutorial against PyTorch's .npy folder within rtol 1e-6 (exit {status}) {err}")
        check(doc["compared"] == 13 and len(doc["stages"]) == 13, f"13 stages compared ({doc['compared']})")
        identical = [s["name"] for s in doc["stages"] if s["status"] == "equal"]
        worst = max(s["max_ulps"] for s in doc["stages"])
        check(len(identical) == 13 and doc["first_differing"] is None,
              f"{len(identical)} of 13 stages bit-identical (the tutorial is PyTorch's bit for bit; "
              f"the largest difference {worst} ULPs), first_differing null")

        # One element moved: found, located and measured.
        w = arrays["attention_weights"].copy()
        index = (2, 1, 3)
        w[index] *= np.float32(1 + 1e-4)
        np.save(ref / "attention_weights.npy", w)
        status, doc, _ = diff_json(binary, trace, ref, "--rtol", "1e-6", "--atol", "0")
        s = next(s for s in doc["stages"] if s["name"] == "attention_weights")
        mine = np.array(json.loads(trace.read_text())["stages"][11]["data"], dtype=np.float32).reshape(w.shape)
        flat = int(np.ravel_multi_index(index, w.shape))
        ulps = abs(int(mine[index].view(np.int32)) - int(w[index].view(np.int32)))
        check(status == 1 and not doc["passed"], f"a moved value fails the diff (exit {status})")
        check(s["status"] == "beyond" and s["beyond"] == 1 and s["worst_index"] == flat,
              f"attention_weights: 1 element beyond, at flat index {flat} ({s['beyond']}, {s['worst_index']})")
        check(np.float32(s["worst_a"]) == mine[index] and np.float32(s["worst_b"]) == w[index] and s["max_ulps"] == ulps,
              f"its values and ULPs ({s['worst_a']}, {s['worst_b']}, {s['max_ulps']} ULPs; numpy: {ulps})")
        check(abs(s["max_abs"] - abs(float(mine[index]) - float(w[index]))) <= 1e-12, "its max |diff|")
        check(doc["first_differing"] == "attention_weights", f"the first differing stage: {doc['first_differing']}")
        np.save(ref / "attention_weights.npy", arrays["attention_weights"])

        # Another shape fails; a missing stage is listed only.
        np.save(ref / "query.npy", arrays["query"].transpose(0, 2, 1).copy())
        (ref / "value.npy").unlink()
        status, doc, _ = diff_json(binary, trace, ref, "--rtol", "1e-6")
        by_name = {s["name"]: s for s in doc["stages"]}
        check(status == 1 and by_name["query"]["status"] == "shape_differs" and by_name["query"]["shape_b"] == [4, 6, 4],
              f"a transposed query: shape_differs, exit 1 (exit {status})")
        check(by_name["value"]["status"] == "only_in_a" and doc["compared"] == 12, "a missing value: only_in_a, 12 compared")
        (ref / "query.npy").unlink()
        status, doc, _ = diff_json(binary, trace, ref, "--rtol", "1e-6")
        check(status == 0, f"stages missing from B alone do not fail (exit {status})")
        r = attn(binary, "diff", trace, ref, "--rtol", "1e-6")
        check("value  only_in_a" in r.stdout and "within the tolerance" in r.stdout, "the text report lists them")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


main()
