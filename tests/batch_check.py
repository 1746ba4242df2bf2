#!/usr/bin/python3
"""`attn batch` and `attn merge` end to end (Debian's python3-torch 1.13 for the reference):
round trips of text, JSON Lines and standard input; every kind of bad item (exit 3, OUTPUT.errors.jsonl);
byte-identical output whatever --threads and --batch-size; a run killed mid-way (SIGKILL) leaves no
output, and --resume then gives exactly the uninterrupted output; N shards merged equal the single run;
records' logits equal PyTorch's (tests/fixtures/transformer_small.json and the tutorial modules).
    /usr/bin/python3 tests/batch_check.py path/to/attn
"""
import importlib.util
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
SMALL = ["--d-model", "16", "--num-heads", "2", "--num-layers", "2", "--num-classes", "3", "--max-len", "40"]
WORDS = ["the", "cat", "sat", "on", "a", "mat", "고양이가", "잔다", "dogs", "run", "fast", "and", "slow", "in",
         "rain", "we", "see", "them", "every", "day", "학교에", "간다", "blue", "sky"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(attn, *args, stdin=None, timeout=120):
    return subprocess.run([attn, "batch", "--quiet", *args], input=stdin, capture_output=True, timeout=timeout)


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
    r = subprocess.run([attn, "merge", shards[2], shards[0], shards[1], "-o", str(merged)], capture_output=True)
    check(r.returncode == 0, f"merge runs ({r.stderr.decode()[-200:]})")
    check(merged.read_bytes() == single.read_bytes(), "shards merged equal the single run")
    check(pathlib.Path(str(merged) + ".errors.jsonl").read_bytes() == pathlib.Path(str(single) + ".errors.jsonl").read_bytes(),
          "shards' errors merged equal the single run's")
    r = subprocess.run([attn, "merge", shards[0], shards[0], "-o", str(tmp / "twice.jsonl")], capture_output=True)
    check(r.returncode == 2 and b"comes twice" in r.stderr, "merging a shard twice is refused")


def kill_and_resume(attn, tmp):
    """SIGKILL after the first checkpoint; no output appears; --resume gives the uninterrupted bytes."""
    src = tmp / "big.txt"
    src.write_text("\n".join(sentences(6000, 3)) + "\n", encoding="utf-8")
    base = [str(src), "--vocab", str(tmp / "vocab.json"), "--d-model", "64", "--num-heads", "4", "--num-layers", "3",
            "--max-len", "40", "--threads", "2"]
    whole = tmp / "whole.jsonl"
    r = run(attn, *base, "-o", str(whole), timeout=300)
    check(r.returncode == 0, f"uninterrupted run ({r.stderr.decode()[-200:]})")
    out = tmp / "killed.jsonl"
    progress = pathlib.Path(str(out) + ".progress")
    proc = subprocess.Popen([attn, "batch", "--quiet", *base, "-o", str(out)])
    deadline = time.time() + 120
    while not progress.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # past the checkpoint: the .part file holds more than the progress file counts
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    check(killed, "the run was still going when killed")
    check(not out.exists(), "a killed run leaves no output file")
    saved = json.loads(progress.read_text()) if progress.exists() else {}
    check(saved.get("next_line", 1) > 1, f"a checkpoint was saved ({saved.get('next_line')})")
    r = subprocess.run([attn, "batch", "--quiet", *base, "-o", str(out), "--resume", "--stages", "logits"],
                       capture_output=True)
    check(r.returncode == 2 and b"other options" in r.stderr, "--resume with other options is refused")
    r = run(attn, *base, "-o", str(out), "--resume", timeout=300)
    check(r.returncode == 0, f"--resume completes ({r.stderr.decode()[-200:]})")
    check(out.read_bytes() == whole.read_bytes(), "killed + --resume equals the uninterrupted run byte for byte")
    check(not progress.exists() and not pathlib.Path(str(out) + ".part").exists(), "no .part or .progress left")


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


def main(attn):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="attn-batch-"))
    text_round_trip(attn, tmp)
    jsonl_and_shards(attn, tmp)
    kill_and_resume(attn, tmp)
    against_pytorch(attn, tmp)
    if failures:
        print(f"{len(failures)} checks failed; files in {tmp}")
        return 1
    subprocess.run(["rm", "-rf", str(tmp)])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
