#!/usr/bin/python3
"""`attn batch` and `attn merge` end to end (Debian's python3-torch 1.13 for the reference), in sections:
  core     round trips of text, JSON Lines and standard input; every kind of bad item (exit 3,
           OUTPUT.errors.jsonl); byte-identical output whatever --threads and --batch-size; a run killed
           mid-way (SIGKILL) leaves no output, and --resume then gives exactly the uninterrupted output;
           N shards merged equal the single run; records' logits equal PyTorch's
           (tests/fixtures/transformer_small.json and the tutorial modules).
  formats  --format safetensors and npy-dir read back with numpy (a strict reader of our own: the
           safetensors package is not installed) equal the JSON Lines output of the same run; byte
           identical for every --threads/--batch-size; npy files byte for byte what numpy.save writes;
           logits equal PyTorch's; shards + merge in both formats.
  resume   kill + --resume in both formats.
  vocab    without --vocab: the vocabulary built in a first pass is the tutorial's ([PAD] = 0, words in
           order of first appearance, built here in Python), --save-vocab writes it, logits equal
           PyTorch's model of that vocabulary size, shards agree; standard input and bad inputs refused.
  merge    attn merge refuses (exit 2, nothing written) a missing, duplicated, incomplete or foreign
           shard, and a target it must not replace.
  finish   a run killed at each step of putting its output in place (ATTN_BATCH_TEST_CRASH) never
           leaves a complete-looking output that is not whole, and --resume then completes it exactly.
    /usr/bin/python3 tests/batch_check.py path/to/attn [SECTION...]   (default: all)
"""
import importlib.util
import io
import json
import os
import pathlib
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
SMALL = ["--d-model", "16", "--num-heads", "2", "--num-layers", "2", "--num-classes", "3", "--max-len", "40"]
WORDS = ["the", "cat", "sat", "on", "a", "mat", "고양이가", "잔다", "dogs", "run", "fast", "and", "slow", "in",
         "rain", "we", "see", "them", "every", "day", "학교에", "간다", "blue", "sky"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(attn, *args, stdin=None, timeout=120, env=None):
    return subprocess.run([attn, "batch", "--quiet", *args], input=stdin, capture_output=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def records(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines()]


def sentences(count, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 32))) for _ in range(count)]


def write_vocab(path, unk):
    tokens = ["[PAD]"] + (["[UNK]"] if unk else []) + WORDS
    path.write_text(json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False), encoding="utf-8")


def text_round_trip(attn, tmp):
    """Text with every kind of bad text line; output independent of threads and batch size."""
    lines = sentences(300, 1)
    bad = {5: b"bad \xff byte", 9: b"", 20: b"the zebra sat", 33: b" ".join([b"cat"] * 41)}
    raw = [bad.get(i + 1, s.encode()) for i, s in enumerate(lines)]
    src = tmp / "corpus.txt"
    src.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(raw) + b"\r\n")
    write_vocab(tmp / "vocab.json", unk=False)
    base = ["--vocab", str(tmp / "vocab.json"), *SMALL, "--stages", "tokens,logits,attention_weights"]
    outs = []
    for threads, size in [(1, 1), (2, 7), (3, 64)]:
        out = tmp / f"text_{threads}_{size}.jsonl"
        r = run(attn, str(src), "-o", str(out), "--threads", str(threads), "--batch-size", str(size), *base)
        check(r.returncode == 3, f"text --threads {threads} --batch-size {size}: exit 3 for bad items ({r.returncode})")
        outs.append((out.read_bytes(), pathlib.Path(str(out) + ".errors.jsonl").read_bytes()))
    check(all(o == outs[0] for o in outs), "text output byte-identical for every --threads and --batch-size")
    got = records(tmp / "text_1_1.jsonl")
    good = [i + 1 for i in range(len(lines)) if i + 1 not in bad]
    check([r["line"] for r in got] == good, "one record per good line, in input order")
    check(all(r["tokens"] == lines[r["line"] - 1].split() for r in got), "records carry the line's tokens")
    check(set(got[0]["stages"]) == {"layers.0.self_attn.attention_weights", "layers.1.self_attn.attention_weights",
                                    "logits"}, "--stages attention_weights expands over the layers")
    errors = records(str(tmp / "text_1_1.jsonl") + ".errors.jsonl")
    reasons = {e["line"]: e["reason"] for e in errors}
    check(sorted(reasons) == sorted(bad), "one error record per bad line")
    check(reasons.get(5) == "invalid UTF-8" and reasons.get(9) == "empty line" and
          "unknown token 'zebra'" in reasons.get(20, "") and "more than max_len 40" in reasons.get(33, ""),
          "errors name the reason: " + json.dumps(reasons))
    r = run(attn, "-", "-o", "-", "--threads", "2", *base, stdin=src.read_bytes())
    check(r.stdout == outs[0][0] and r.stderr == outs[0][1], "standard input to standard output, errors on stderr")
    write_vocab(tmp / "vocab_unk.json", unk=True)
    r = run(attn, str(src), "-o", str(tmp / "unk.jsonl"), "--vocab", str(tmp / "vocab_unk.json"), *SMALL)
    unk = {x["line"]: x for x in records(tmp / "unk.jsonl")}
    check(unk[20]["tokens"] == ["the", "[UNK]", "sat"], "an unknown word becomes [UNK] when the vocabulary has it")


def jsonl_items(count):
    items = []
    for i, s in enumerate(sentences(count, 2)):
        items.append(json.dumps({"id": f"s{i}", "text": s} if i % 2 else {"id": i, "ids": [1 + len(w) % 20 for w in s.split()]},
                                ensure_ascii=False))
    items[3] = '{"id": "s1", "text": "the cat"}'  # duplicate of line 2's id
    items[7] = '{"id": 70, "text": "the cat"'  # malformed
    items[11] = '{"id": "x11", "ids": [1, 99]}'  # outside the embedding table
    items[13] = '{"text": "the cat", "ids": [1]}'  # both
    items[17] = '{"id": "k", "text": "the cat"}'  # good; its id repeats in another shard below
    items[40] = '{"id": "k", "ids": [2, 3]}'
    return items


def jsonl_and_shards(attn, tmp):
    """JSON Lines with bad items; three shards merged equal the single run."""
    src = tmp / "items.jsonl"
    src.write_text("\n".join(jsonl_items(200)) + "\n", encoding="utf-8")
    base = ["--vocab", str(tmp / "vocab.json"), *SMALL]
    single = tmp / "single.jsonl"
    r = run(attn, str(src), "-o", str(single), "--threads", "2", *base)
    check(r.returncode == 3, "JSON Lines with bad items: exit 3")
    reasons = {e["line"]: e["reason"] for e in records(str(single) + ".errors.jsonl")}
    check(sorted(reasons) == [4, 8, 12, 14, 41], "JSON Lines errors on the bad lines: " + json.dumps(reasons))
    check(reasons.get(4) == "duplicate id (first on line 2)" and reasons.get(41) == "duplicate id (first on line 18)"
          and reasons.get(8, "").startswith("malformed JSON") and "outside the embedding table" in reasons.get(12, ""),
          "JSON Lines reasons")
    first = records(single)[0]
    check(first["id"] == 0 and "tokens" not in first and first["ids"] == json.loads(jsonl_items(200)[0])["ids"],
          "an ids item keeps its id and ids")
    shards = []
    for k in (1, 2, 3):
        out = tmp / f"shard{k}.jsonl"
        r = run(attn, str(src), "-o", str(out), "--shard", f"{k}/3", "--threads", "1", "--batch-size", "5", *base)
        check(r.returncode in (0, 3), f"shard {k}/3 runs ({r.returncode}: {r.stderr.decode()[-200:]})")
        check(all((x["line"] - 1) % 3 == k - 1 for x in records(out)), f"shard {k}/3 holds its lines only")
        shards.append(str(out))
    merged = tmp / "merged.jsonl"
    r = subprocess.run([attn, "merge", shards[2], shards[0], shards[1], shards[0] + ".errors.jsonl", "-o", str(merged)],
                       capture_output=True)  # a shard's errors file, as out.*.jsonl matches it, is left out
    check(r.returncode == 0, f"merge runs ({r.stderr.decode()[-200:]})")
    check(merged.read_bytes() == single.read_bytes(), "shards merged equal the single run")
    check(pathlib.Path(str(merged) + ".errors.jsonl").read_bytes() == pathlib.Path(str(single) + ".errors.jsonl").read_bytes(),
          "shards' errors merged equal the single run's")
    r = subprocess.run([attn, "merge", shards[0], shards[0], "-o", str(tmp / "twice.jsonl")], capture_output=True)
    check(r.returncode == 2 and b"are both shard 1/3" in r.stderr and not (tmp / "twice.jsonl").exists(),
          "merging a shard twice is refused")


def same_output(a, b):
    """Files byte for byte, or folders with the same files byte for byte."""
    a, b = pathlib.Path(a), pathlib.Path(b)
    if a.is_dir() != b.is_dir():
        return False
    if not a.is_dir():
        return a.read_bytes() == b.read_bytes()
    names = sorted(p.name for p in a.iterdir())
    return names == sorted(p.name for p in b.iterdir()) and all((a / n).read_bytes() == (b / n).read_bytes()
                                                                    for n in names)


def kill_and_resume(attn, tmp, fmt="jsonl"):
    """SIGKILL after the first checkpoint; no output appears; --resume gives the uninterrupted bytes."""
    src = tmp / "big.txt"
    if not src.exists():
        # Fewer under the sanitizers (several times slower), still enough to be killed mid-run.
        # 30,000 take about 2 s natively on a 2-core machine (6,000 once did; they now end in 0.4 s).
        count = int(os.environ.get("ATTN_BATCH_CHECK_SENTENCES", "30000"))
        src.write_text("\n".join(sentences(count, 3)) + "\n", encoding="utf-8")
    base = [str(src), "--vocab", str(tmp / "vocab.json"), "--d-model", "64", "--num-heads", "4", "--num-layers", "3",
            "--max-len", "40", "--threads", "2", "--format", fmt]
    whole = tmp / f"whole.{fmt}"
    r = run(attn, *base, "-o", str(whole), timeout=300)
    check(r.returncode == 0, f"{fmt}: uninterrupted run ({r.stderr.decode()[-200:]})")
    out = tmp / f"killed.{fmt}"
    progress = pathlib.Path(str(out) + ".progress")
    # Checkpoints every 50 ms rather than every second, so the kill lands well before the run ends.
    proc = subprocess.Popen([attn, "batch", "--quiet", *base, "-o", str(out)],
                            env={**os.environ, "ATTN_BATCH_TEST_CHECKPOINT_SECONDS": "0.05"})
    deadline = time.time() + 120
    while not progress.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # past the checkpoint: the .part files hold more than the progress file counts
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    check(killed, f"{fmt}: the run was still going when killed")
    check(not out.exists() and not pathlib.Path(str(out) + ".manifest.json").exists(),
          f"{fmt}: a killed run leaves no output and no manifest")
    saved = json.loads(progress.read_text()) if progress.exists() else {}
    check(saved.get("next_line", 1) > 1, f"{fmt}: a checkpoint was saved ({saved.get('next_line')})")
    # A count the progress file gives out of range (the fuzz finding of tests/fuzz/corpus/batch_progress)
    # is refused by name, and the run's files are left for a --resume with the real progress.
    original = progress.read_bytes()
    for key, value in (("next_line", 3.2222222e32), ("items", -1), ("failed", 2.5)):
        progress.write_text(json.dumps({**saved, key: value}))
        r = subprocess.run([attn, "batch", "--quiet", *base, "-o", str(out), "--resume"], capture_output=True)
        check(r.returncode == 2 and f'damaged: "{key}" must be an integer from 0 to 2^64 - 1'.encode() in r.stderr,
              f"{fmt}: --resume with {key} = {value} exits 2 naming it ({r.stderr.decode()[-200:]})")
    progress.write_bytes(original)
    r = subprocess.run([attn, "batch", "--quiet", *base, "-o", str(out), "--resume", "--stages", "logits"],
                       capture_output=True)
    check(r.returncode == 2 and b"other options" in r.stderr, f"{fmt}: --resume with other options is refused")
    r = run(attn, *base, "-o", str(out), "--resume", timeout=300)
    check(r.returncode == 0, f"{fmt}: --resume completes ({r.stderr.decode()[-200:]})")
    check(same_output(out, whole), f"{fmt}: killed + --resume equals the uninterrupted run byte for byte")
    check(pathlib.Path(str(out) + ".manifest.json").read_bytes() == pathlib.Path(str(whole) + ".manifest.json").read_bytes(),
          f"{fmt}: killed + --resume has the uninterrupted run's manifest")
    check(not progress.exists() and not pathlib.Path(str(out) + ".part").exists(), f"{fmt}: no .part or .progress left")


def against_pytorch(attn, tmp):
    """Logits of a few items: the fixture's, and the tutorial modules' run here."""
    fixture = json.loads((HERE / "fixtures" / "transformer_small.json").read_text())
    expected = next(s for s in fixture["stages"] if s["name"] == "logits")["data"]
    src = "".join(json.dumps({"id": i, "ids": ids}) + "\n" for i, ids in enumerate(fixture["ids"]))
    r = subprocess.run([attn, "batch", "--quiet", "-", "--vocab-size", "12", "--d-model", "16", "--num-heads", "2",
                        "--num-layers", "2", "--num-classes", "3", "--max-len", "32", "--stages", "logits"],
                       input=src.encode(), capture_output=True)
    got = [x for line in r.stdout.decode().splitlines() for x in json.loads(line)["stages"]["logits"]["data"]]
    check(len(got) == len(expected) and all(abs(a - b) <= 1e-5 * (1 + abs(b)) for a, b in zip(got, expected)),
          "logits equal the PyTorch fixture transformer_small.json")

    import torch
    spec = importlib.util.spec_from_file_location("transformer", HERE / "torchgen" / "transformer.py")
    T = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(T)
    vocab = json.loads((tmp / "vocab.json").read_text(encoding="utf-8"))
    torch.manual_seed(0)
    model = T.TransformerClassifier(vocab_size=len(vocab), d_model=16, num_heads=2, num_layers=2, num_classes=3,
                                    max_len=40).eval()
    ok = True
    for rec in records(tmp / "text_1_1.jsonl")[:5]:
        x = torch.tensor([rec["ids"]])
        with torch.no_grad():
            want = model(x, T.make_mask("padding", x).unsqueeze(1))[0].tolist()
        ok &= all(abs(a - b) <= 1e-5 * (1 + abs(b)) for a, b in zip(rec["stages"]["logits"]["data"], want))
    check(ok, "text items' logits equal PyTorch's TransformerClassifier on each sentence alone")


def pytorch_logits(vocab_size, rows):
    """The tutorial's TransformerClassifier (seed 0, SMALL's sizes) on each row of ids alone."""
    import torch
    spec = importlib.util.spec_from_file_location("transformer", HERE / "torchgen" / "transformer.py")
    T = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(T)
    torch.manual_seed(0)
    model = T.TransformerClassifier(vocab_size=vocab_size, d_model=16, num_heads=2, num_layers=2, num_classes=3,
                                    max_len=40).eval()
    out = []
    for ids in rows:
        x = torch.tensor([ids])
        with torch.no_grad():
            out.append(model(x, T.make_mask("padding", x).unsqueeze(1))[0].tolist())
    return out


def close(got, want):
    got, want = np.asarray(got, dtype=np.float64).ravel(), np.asarray(want, dtype=np.float64).ravel()
    return got.shape == want.shape and bool(np.all(np.abs(got - want) <= 1e-5 * (1 + np.abs(want))))


# --- formats ---

DTYPES = {"F32": "<f4", "I64": "<i8", "U8": "u1"}


def read_safetensors(path):
    """A strict reader: 8-byte length, JSON header padded to a multiple of 8 bytes, tensors one after the
    other with nothing left over, each aligned to its dtype's size."""
    data = pathlib.Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    assert length % 8 == 0, f"header length {length} is not a multiple of 8"
    header = json.loads(data[8:8 + length].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    body, tensors, offset = data[8 + length:], {}, 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        begin, end = entry["data_offsets"]
        dtype = np.dtype(DTYPES[entry["dtype"]])
        assert begin == offset, f"{name}: a gap or an overlap before it"
        assert begin % dtype.itemsize == 0, f"{name}: not aligned"
        assert end - begin == dtype.itemsize * int(np.prod(entry["shape"], dtype=np.int64)), f"{name}: wrong size"
        tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(entry["shape"])
        offset = end
    assert offset == len(body), "bytes left over after the last tensor"
    return tensors, metadata


def safetensors_rows(t, stages):
    """Each item of a --format safetensors file as docs/batch.md tells a NumPy user to read it."""
    starts = np.concatenate([[0], np.cumsum(t["length"])])
    index = [json.loads(line) for line in t["index"].tobytes().decode("utf-8").splitlines()]
    rows = []
    for i, line in enumerate(t["line"]):
        row = {"line": int(line), "length": int(t["length"][i]), "index": index[i], "stages": {}}
        if "ids" in t:
            row["ids"] = t["ids"][starts[i]:starts[i + 1]].tolist()
        for s in stages:
            if s + ".offsets" in t:
                o = t[s + ".offsets"]
                row["stages"][s] = t[s][o[i]:o[i + 1]].reshape(t[s + ".shape"][i])
            else:
                row["stages"][s] = t[s][i]
        rows.append(row)
    return rows


def npy_dir_rows(folder, stages):
    """Each item of a --format npy-dir folder; also whether every file is what numpy.save writes."""
    folder = pathlib.Path(folder)
    rows, same_as_numpy = [], True
    for entry in records(folder / "index.jsonl"):
        row = {"line": entry["line"], "length": entry["length"], "index": entry, "ids": entry.get("ids"), "stages": {}}
        for s in stages:
            path = folder / f"{entry['line']}.{s}.npy"
            arr = np.load(path)
            buf = io.BytesIO()
            np.save(buf, arr)
            same_as_numpy &= buf.getvalue() == path.read_bytes()
            row["stages"][s] = arr
        rows.append(row)
    return rows, same_as_numpy


def same_arrays(got, stage):
    want = np.array(stage["data"], dtype=np.float32).reshape(stage["shape"])
    return got.dtype == np.float32 and got.shape == want.shape and np.array_equal(got, want)


def formats(attn, tmp):
    """safetensors and npy-dir read back equal the JSON Lines records of the same run."""
    write_vocab(tmp / "vocab.json", unk=True)
    vocab_size = len(json.loads((tmp / "vocab.json").read_text(encoding="utf-8")))
    src = tmp / "items.jsonl"
    src.write_text("\n".join(jsonl_items(150)) + "\n", encoding="utf-8")
    base = [str(src), "--vocab", str(tmp / "vocab.json"), *SMALL, "--heads", "1",
            "--stages", "tokens,token_ids,embedding,attention_weights,logits"]
    ref = tmp / "ref.jsonl"
    r = run(attn, *base, "-o", str(ref), "--threads", "2")
    check(r.returncode == 3, f"formats: the JSON Lines run ({r.stderr.decode()[-300:]})")
    recs = records(ref)
    stage_names = list(recs[0]["stages"])
    for fmt in ("safetensors", "npy-dir"):
        outs = []
        for threads, size in [(1, 1), (3, 16)]:
            out = tmp / f"out_{threads}_{size}.{fmt}"
            r = run(attn, *base, "--format", fmt, "-o", str(out), "--threads", str(threads), "--batch-size", str(size))
            check(r.returncode == 3, f"{fmt} --threads {threads} --batch-size {size}: exit 3 ({r.stderr.decode()[-300:]})")
            outs.append(out)
        check(same_output(*outs), f"{fmt}: byte-identical for every --threads and --batch-size")
        out = outs[0]
        check(pathlib.Path(str(out) + ".errors.jsonl").read_bytes() == pathlib.Path(str(ref) + ".errors.jsonl").read_bytes(),
              f"{fmt}: the errors file is the JSON Lines run's")
        manifest = json.loads(pathlib.Path(str(out) + ".manifest.json").read_text())
        check(manifest["format"] == fmt and manifest["shard"] == "1/1" and manifest["items"] == len(recs) and
              manifest["failed"] == 5 and manifest["run"]["stages"] == stage_names, f"{fmt}: the manifest")
        if fmt == "safetensors":
            t, meta = read_safetensors(out)
            head = json.loads(meta["attn_batch"])
            check(head["run"] == manifest["run"] and head["items"] == len(recs),
                  "safetensors: the file's metadata names its run")
            check(manifest["files"]["output"] == out.stat().st_size, "safetensors: the manifest has the file's size")
            check([s for s in stage_names if s + ".offsets" not in t] == ["logits"] and
                  t["logits"].shape == (len(recs), 3), "safetensors: logits is one [items, classes] array; "
                                                       "stages of the item's length are packed with offsets and shapes")
            rows = safetensors_rows(t, stage_names)
            check(close([r["stages"]["logits"] for r in rows[:6]], pytorch_logits(vocab_size, [r["ids"] for r in rows[:6]])),
                  "safetensors: logits equal PyTorch's TransformerClassifier")
        else:
            rows, same_as_numpy = npy_dir_rows(out, stage_names)
            check(same_as_numpy, "npy-dir: every .npy is byte for byte what numpy.save writes")
            want = sorted(["index.jsonl"] + [f"{r['line']}.{s}.npy" for r in rows for s in stage_names])
            check(sorted(p.name for p in out.iterdir()) == want, "npy-dir: index.jsonl and one .npy per item and stage")
        ok = len(rows) == len(recs) > 100
        for row, rec in zip(rows, recs):
            ok &= row["line"] == rec["line"] and row["index"]["id"] == rec["id"] and row["length"] == len(rec["ids"])
            ok &= row["ids"] == rec["ids"] and row["index"].get("tokens") == rec.get("tokens")
            ok &= all(same_arrays(row["stages"][s], rec["stages"][s]) for s in stage_names)
        check(ok, f"{fmt}: every item's arrays, ids, tokens and id equal the JSON Lines records")

        shards = []
        for k in (1, 2, 3):
            shard = tmp / f"shard{k}.{fmt}"
            r = run(attn, *base, "--format", fmt, "-o", str(shard), "--shard", f"{k}/3", "--batch-size", "5")
            check(r.returncode in (0, 3), f"{fmt}: shard {k}/3 ({r.stderr.decode()[-200:]})")
            shards.append(str(shard))
        merged = tmp / f"merged.{fmt}"
        r = subprocess.run([attn, "merge", shards[1], shards[2], shards[0], "-o", str(merged)], capture_output=True)
        check(r.returncode == 0, f"{fmt}: merge runs ({r.stderr.decode()[-300:]})")
        check(same_output(merged, out) and all(
            pathlib.Path(str(merged) + ext).read_bytes() == pathlib.Path(str(out) + ext).read_bytes()
            for ext in (".errors.jsonl", ".manifest.json")), f"{fmt}: three shards merged equal the single run")
        # Shards with no item at all (more shards than lines), the empty one given first.
        one = tmp / "one.jsonl"
        one.write_text('{"id": "only", "text": "the cat sat"}\n', encoding="utf-8")
        few = [str(tmp / f"few{k}.{fmt}") for k in (1, 2, 3)]
        for k, path in enumerate(few, 1):
            run(attn, str(one), *base[1:], "--format", fmt, "-o", path, "--shard", f"{k}/3")
        single_one = tmp / f"one.{fmt}"
        run(attn, str(one), *base[1:], "--format", fmt, "-o", str(single_one))
        r = subprocess.run([attn, "merge", few[2], few[0], few[1], "-o", str(tmp / f"fewmerged.{fmt}")], capture_output=True)
        check(r.returncode == 0 and same_output(tmp / f"fewmerged.{fmt}", single_one),
              f"{fmt}: empty shards merged (the empty one first) equal the single run ({r.stderr.decode()[-200:]})")


def formats_resume(attn, tmp):
    """Killed + --resume in safetensors and npy-dir."""
    write_vocab(tmp / "vocab.json", unk=True)
    for fmt in ("safetensors", "npy-dir"):
        kill_and_resume(attn, tmp, fmt)


# --- vocabulary ---

def tutorial_vocab(raw_lines):
    """[PAD] = 0, then each word of each sentence in order of first appearance; a line that is not UTF-8
    adds nothing (the rule docs/batch.md gives, written here independently)."""
    vocab = {"[PAD]": 0}
    for raw in raw_lines:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for word in text.split():
            vocab.setdefault(word, len(vocab))
    return vocab


def vocab_pass(attn, tmp):
    """Without --vocab: the vocabulary of a first pass over the input."""
    raw = [s.encode() for s in sentences(120, 5)]
    raw[10] = b"zebra \xff"  # invalid UTF-8: adds no word
    raw[20] = b""
    raw[30] = " ".join(["longword"] + ["cat"] * 45).encode()  # refused (max_len 40), its words still count
    src = tmp / "corpus.txt"
    src.write_bytes(b"\n".join(raw) + b"\n")
    vocab = tutorial_vocab(raw)
    (tmp / "py_vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    base = [*SMALL, "--stages", "tokens,logits"]
    built, saved = tmp / "built.jsonl", tmp / "saved_vocab.json"
    r = run(attn, str(src), "-o", str(built), "--save-vocab", str(saved), *base)
    check(r.returncode == 3, f"vocab: a text file without --vocab runs ({r.stderr.decode()[-300:]})")
    got = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
    check("longword" in vocab and "zebra" not in vocab and got == vocab and list(got) == list(vocab),
          "vocab: --save-vocab writes the tutorial's vocabulary ([PAD] = 0, words by first appearance)")
    given = tmp / "given.jsonl"
    r = run(attn, str(src), "-o", str(given), "--vocab", str(tmp / "py_vocab.json"), *base)
    check(built.read_bytes() == given.read_bytes() and
          pathlib.Path(str(built) + ".errors.jsonl").read_bytes() == pathlib.Path(str(given) + ".errors.jsonl").read_bytes(),
          "vocab: the output equals the run with the vocabulary built in Python")
    reasons = {e["line"]: e["reason"] for e in records(str(built) + ".errors.jsonl")}
    check(sorted(reasons) == [11, 21, 31], f"vocab: bad lines are still errors: {reasons}")
    recs = records(built)
    check(len(recs) == 117 and close([x["stages"]["logits"]["data"] for x in recs[:6]],
                                     pytorch_logits(len(vocab), [x["ids"] for x in recs[:6]])),
          "vocab: logits equal PyTorch's TransformerClassifier with the vocabulary's size")
    shards = []
    for k in (1, 2, 3):
        shard = tmp / f"vshard{k}.jsonl"
        run(attn, str(src), "-o", str(shard), "--shard", f"{k}/3", *base)
        shards.append(str(shard))
    merged = tmp / "vmerged.jsonl"
    r = subprocess.run([attn, "merge", *shards, "-o", str(merged)], capture_output=True)
    check(r.returncode == 0 and merged.read_bytes() == built.read_bytes(),
          f"vocab: every shard builds the same vocabulary; merged equal the single run ({r.stderr.decode()[-200:]})")

    mixed = tmp / "mixed.jsonl"
    mixed.write_text('{"id": 1, "text": "b a"}\n{"id": 2, "ids": [1, 1]}\n{"id": 2.5, "text": "q"}\n'
                     '{"text": "c b"}\n', encoding="utf-8")
    r = run(attn, str(mixed), "-o", str(tmp / "mixed_out.jsonl"), "--save-vocab", str(tmp / "mixed_vocab.json"), *SMALL)
    got = (tmp / "mixed_vocab.json").read_text(encoding="utf-8") if (tmp / "mixed_vocab.json").exists() else ""
    check(r.returncode == 3 and json.loads(got or "{}") == {"[PAD]": 0, "b": 1, "a": 2, "c": 3},
          f"vocab: JSON Lines build it from their \"text\" ({got.strip()})")

    def refused(args, pattern, what, stdin=None):
        r = run(attn, *args, stdin=stdin)
        err = r.stderr.decode()
        check(r.returncode == 2 and re.search(pattern, err) is not None, f"vocab: refused: {what} ({err.strip()[-200:]})")

    text = src.read_bytes()
    refused(["-", *SMALL], "standard input cannot be read twice", "standard input without --vocab", stdin=text)
    refused(["-", "--vocab-size", "30", *SMALL], "a text input needs --vocab", "text on standard input", stdin=text)
    refused(["-", "--vocab-size", "30", "--input-format", "text", *SMALL], "on standard input needs --vocab",
            "--input-format text on standard input", stdin=b"")
    ids_only = tmp / "ids.jsonl"
    ids_only.write_text('{"ids": [1, 2]}\n', encoding="utf-8")
    refused([str(ids_only), *SMALL], "no sentence to build a vocabulary", "token ids without a size")
    refused(["-", "--vocab-size", "30", "--save-vocab", str(tmp / "never.json"), *SMALL], "has no vocabulary",
            "--save-vocab without a vocabulary", stdin=b'{"ids": [1]}\n')
    check(not (tmp / "never.json").exists(), "vocab: a refused --save-vocab writes nothing")

    # --resume checks the input and the vocabulary it implies.
    out = tmp / "resumed.jsonl"
    crash = {"ATTN_BATCH_TEST_CRASH": "before-commit"}
    r = run(attn, str(src), "-o", str(out), *base, env=crash)
    check(r.returncode == 99 and not out.exists(), "vocab: a run stopped before its output is in place")
    src.write_bytes(b"\n".join(raw) + b"\nnewword cat\n")
    refused([str(src), "-o", str(out), "--resume", *base], "another model or vocabulary",
            "--resume after the input's words changed")
    src.write_bytes(b"\n".join(raw) + b"\n")
    r = run(attn, str(src), "-o", str(out), "--resume", *base)
    check(r.returncode == 3 and out.read_bytes() == built.read_bytes(), "vocab: --resume on the same input completes")
    fixed = ["--vocab", str(tmp / "py_vocab.json")]
    r = run(attn, str(src), "-o", str(out), *fixed, *base, env=crash)
    before = out.read_bytes()  # the earlier complete output stays until a run puts its own in place
    swapped = list(raw)
    swapped[1] = b" ".join(reversed(raw[1].split()))
    src.write_bytes(b"\n".join(swapped) + b"\n")
    refused([str(src), "-o", str(out), "--resume", *fixed, *base], "not the input of the interrupted run",
            "--resume on a changed input")
    src.write_bytes(b"\n".join(raw[:50]) + b"\n")
    refused([str(src), "-o", str(out), "--resume", *fixed, *base], "fewer than the interrupted run",
            "--resume on a shorter input")
    check(out.read_bytes() == before and consistent(out), "vocab: refused resumes leave the output as it was")


# --- attn merge's refusals ---

def merge_refusals(attn, tmp):
    write_vocab(tmp / "vocab.json", unk=True)
    src = tmp / "items.jsonl"
    items = jsonl_items(60)
    src.write_text("\n".join(items) + "\n", encoding="utf-8")
    base = ["--vocab", str(tmp / "vocab.json"), *SMALL, "--threads", "1"]

    def shard(k, n, name, *extra, source=src, env=None):
        out = tmp / name
        r = run(attn, str(source), *base, "--shard", f"{k}/{n}", "-o", str(out), *extra, env=env)
        check(r.returncode in (0, 3, 99), f"merge: shard {name} ({r.stderr.decode()[-200:]})")
        return str(out)

    s = [shard(k, 3, f"s{k}.jsonl") for k in (1, 2, 3)]
    target = tmp / "refused.jsonl"

    def refused(paths, pattern, what, out=target):
        r = subprocess.run([attn, "merge", *paths, "-o", str(out)], capture_output=True)
        err = r.stderr.decode()
        nothing = not any(pathlib.Path(str(target) + ext).exists() for ext in ("", ".errors.jsonl", ".manifest.json"))
        check(r.returncode == 2 and re.search(pattern, err) is not None and nothing,
              f"merge: refused: {what} ({err.strip()[-220:]})")

    refused([s[0], s[1]], r"shard 3/3 of the run is missing", "a missing shard")
    refused([s[0], s[2]] + [shard(1, 3, "s1again.jsonl")], r"are both shard 1/3", "a shard twice")
    refused([s[0], shard(2, 3, "seed1.jsonl", "--seed", "1"), s[2]], r"not from the same run.*models differ",
            "a shard of another model")
    changed = tmp / "changed.jsonl"
    changed.write_text("\n".join(items[:-1] + ['{"id": "last", "text": "the cat"}']) + "\n", encoding="utf-8")
    refused([s[0], shard(2, 3, "changed2.jsonl", source=changed), s[2]], r"inputs differ", "a shard of another input")
    refused([s[0], shard(2, 3, "st2.safetensors", "--format", "safetensors"), s[2]], r"output formats differ",
            "a shard of another format")
    refused([shard(1, 2, "h1.jsonl"), s[1], s[2]], r"is shard 2/3 but .* is of 2 shards", "shards of two splits")
    for ext in ("", ".errors.jsonl", ".manifest.json"):
        shutil.copyfile(s[1] + ext, str(tmp / "cut.jsonl") + ext)
    with open(tmp / "cut.jsonl", "r+b") as f:
        f.truncate((tmp / "cut.jsonl").stat().st_size - 10)
    refused([s[0], str(tmp / "cut.jsonl"), s[2]], r"its manifest says", "a truncated shard")
    for ext in ("", ".errors.jsonl"):
        shutil.copyfile(s[1] + ext, str(tmp / "bare.jsonl") + ext)
    refused([s[0], str(tmp / "bare.jsonl"), s[2]], r"manifest.json' is missing", "a shard without its manifest")
    (tmp / "broken.jsonl.manifest.json").write_text("{", encoding="utf-8")
    shutil.copyfile(s[1], tmp / "broken.jsonl")
    refused([s[0], str(tmp / "broken.jsonl"), s[2]], r"is damaged", "a damaged manifest")
    stopped = shard(2, 3, "stopped.jsonl", env={"ATTN_BATCH_TEST_CRASH": "before-commit"})
    refused([s[0], stopped, s[2]], r"stopped.jsonl': its run is unfinished", "an unfinished shard")
    refused([s[0], "/nonexistent.jsonl", s[2]], r"cannot read '/nonexistent.jsonl'", "a missing file")
    st = [shard(k, 3, f"st{k}.safetensors", "--format", "safetensors") for k in (1, 2, 3)]
    r = subprocess.run([attn, "merge", *st, "-o", "-"], capture_output=True)
    check(r.returncode == 2 and b"only jsonl streams" in r.stderr, "merge: refused: safetensors to standard output")
    before = pathlib.Path(s[0]).read_bytes()
    r = subprocess.run([attn, "merge", *s, "-o", s[0]], capture_output=True)
    check(r.returncode == 2 and b"would overwrite the shard" in r.stderr and pathlib.Path(s[0]).read_bytes() == before,
          "merge: refused: an output that is one of the shards")
    nd = [shard(k, 3, f"nd{k}", "--format", "npy-dir") for k in (1, 2, 3)]
    foreign = tmp / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    r = subprocess.run([attn, "merge", *nd, "-o", str(foreign)], capture_output=True)
    check(r.returncode == 2 and b"not an output of --format npy-dir" in r.stderr and (foreign / "keep.txt").exists(),
          "merge: refused: replacing a folder it did not write")
    r = run(attn, str(src), *base, "--format", "npy-dir", "-o", str(foreign))
    check(r.returncode == 2 and b"not an output of --format npy-dir" in r.stderr and (foreign / "keep.txt").exists()
          and sorted(p.name for p in foreign.iterdir()) == ["keep.txt"], "batch: refused: npy-dir over a foreign folder")
    r = run(attn, str(src), *base, "-o", str(foreign))
    check(r.returncode == 2 and b"is a folder" in r.stderr, "batch: refused: a jsonl output that is a folder")
    r = subprocess.run([attn, "merge", *nd, "-o", str(tmp / "ndmerged")], capture_output=True)
    single = tmp / "ndsingle"
    run(attn, str(src), *base, "--format", "npy-dir", "-o", str(single))
    check(r.returncode == 0 and same_output(tmp / "ndmerged", single), "merge: npy-dir shards merged equal the single run")
    r = subprocess.run([attn, "merge", *nd, "-o", str(tmp / "ndmerged")], capture_output=True)
    check(r.returncode == 0 and same_output(tmp / "ndmerged", single), "merge: an earlier merged npy-dir is replaced")


# --- putting the output in place ---

def consistent(out):
    """Whatever is at OUTPUT is whole: its manifest and errors file are its own."""
    out = pathlib.Path(out)
    if not out.exists():
        return True
    try:
        m = json.loads(pathlib.Path(str(out) + ".manifest.json").read_text())
        errors_ok = pathlib.Path(str(out) + ".errors.jsonl").stat().st_size == m["files"]["errors"]
        if out.is_dir():
            return errors_ok and (out / "index.jsonl").stat().st_size == m["files"]["index.jsonl"]
        return errors_ok and out.stat().st_size == m["files"]["output"]
    except (OSError, KeyError, ValueError):
        return False


def finish(attn, tmp):
    """Killed at each step of putting the output in place, over an older output of another run."""
    write_vocab(tmp / "vocab.json", unk=True)
    src = tmp / "items.jsonl"
    src.write_text("\n".join(jsonl_items(50)) + "\n", encoding="utf-8")
    base = [str(src), "--vocab", str(tmp / "vocab.json"), *SMALL, "--threads", "2"]
    expect_present = {"before-commit": "old", "after-errors": None, "after-manifest": None, "after-output": "new"}
    for fmt in ("jsonl", "safetensors", "npy-dir"):
        ref = tmp / f"ref.{fmt}"
        run(attn, *base, "--format", fmt, "-o", str(ref))
        for point, present in expect_present.items():
            out = tmp / f"{point}.{fmt}"
            run(attn, *base, "--format", fmt, "-o", str(out), "--seed", "7")
            old = tmp / f"old.{fmt}"
            shutil.rmtree(old, ignore_errors=True)
            if out.is_dir():
                shutil.copytree(out, old)
            else:
                shutil.copyfile(out, old)
            r = run(attn, *base, "--format", fmt, "-o", str(out), env={"ATTN_BATCH_TEST_CRASH": point})
            state = "old" if out.exists() and same_output(out, old) else "new" if out.exists() and same_output(out, ref) \
                else None if not out.exists() else "other"
            check(r.returncode == 99 and state == present and consistent(out),
                  f"{fmt}: killed {point}: OUTPUT is {state} (expected {present}) and whole")
            r = run(attn, *base, "--format", fmt, "-o", str(out), "--resume")
            leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(out.name + ".") and
                         not p.name.endswith((".errors.jsonl", ".manifest.json"))]
            check(r.returncode == 3 and same_output(out, ref) and all(
                pathlib.Path(str(out) + ext).read_bytes() == pathlib.Path(str(ref) + ext).read_bytes()
                for ext in (".errors.jsonl", ".manifest.json")) and not leftovers,
                f"{fmt}: killed {point}, then --resume: the uninterrupted output, nothing left over {leftovers}")
        # A new run (no --resume) drops an earlier run's checkpoint before anything else, so a kill
        # before its own first checkpoint cannot leave that checkpoint beside the new working files.
        out = tmp / f"restarted.{fmt}"
        r1 = run(attn, *base, "--format", fmt, "-o", str(out), "--seed", "7", env={"ATTN_BATCH_TEST_CRASH": "before-commit"})
        r2 = run(attn, *base, "--format", fmt, "-o", str(out), env={"ATTN_BATCH_TEST_CRASH": "after-start"})
        progress = pathlib.Path(str(out) + ".progress")
        check(r1.returncode == r2.returncode == 99 and not progress.exists(),
              f"{fmt}: a new run removes an earlier run's .progress first")
        r = run(attn, *base, "--format", fmt, "-o", str(out), "--resume")
        check(r.returncode == 3 and same_output(out, ref), f"{fmt}: then --resume starts over and completes")


SECTIONS = {"core": None, "formats": formats, "resume": formats_resume, "vocab": vocab_pass, "merge": merge_refusals,
            "finish": finish}


def main(attn, sections):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="attn-batch-"))
    for name in sections or SECTIONS:
        part = tmp / name
        part.mkdir()
        if name == "core":
            text_round_trip(attn, part)
            jsonl_and_shards(attn, part)
            kill_and_resume(attn, part)
            against_pytorch(attn, part)
        else:
            SECTIONS[name](attn, part)
    if failures:
        print(f"{len(failures)} checks failed; files in {tmp}")
        return 1
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    unknown = [s for s in sys.argv[2:] if s not in SECTIONS]
    if len(sys.argv) < 2 or unknown:
        sys.exit(f"usage: batch_check.py ATTN [{' '.join(SECTIONS)}]; unknown: {unknown}")
    sys.exit(main(sys.argv[1], sys.argv[2:]))
