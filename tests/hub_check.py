#!/usr/bin/env python3
"""cli.hub: `attn … --model NAME[@REVISION]` against a local stand-in for the Hub (tests/hub/hub_server.py).

    hub_check.py ATTN ATTN_HUB_WATCH

Each check runs the built attn with HF_HOME and HF_HUB_CACHE in a temporary folder and HF_ENDPOINT
on the server: the outputs equal --model-dir's on the same fixtures; the cache is huggingface_hub's
layout, file by file, with blob names and contents checked against hashlib's digests of the fixtures;
cached runs make no request (the server's log); faults (a dropped connection, a corrupted byte, a
gated or missing repository, HTML for a config, a full disk) end as documented; two processes share
one download; a lock held as Python's filelock holds it (fcntl.flock) is waited for; a cache the npm
package @huggingface/hub wrote is read with no request, and attnlab's is read back by it.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import pty
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ATTN = os.path.abspath(sys.argv[1]) if __name__ == "__main__" else None  # imported: its Server alone
WATCH = os.path.abspath(sys.argv[2]) if __name__ == "__main__" and len(sys.argv) > 2 else None  # attn_hub_watch
ROOT = pathlib.Path(__file__).resolve().parent
FIXTURES = ROOT / "fixtures" / "pretrained"
GPT2 = "attnlab-test/gpt2-tiny"
BERT = "attnlab-test/bert-tiny"
TOKEN = "hf_attnlab_test_token"  # the gated repository's (hub_server.py)
SENTENCE = ["--sentence", "the dog sat", "--top-k", "3", "--json"]  # the document: every stage, no timing
failures = []


def check(condition, what, detail=""):
    print(("ok:   " if condition else "FAIL: ") + what + ("" if condition else f"\n      {detail}"))
    if not condition:
        failures.append(what)


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def etag_of(path):
    """The Hub's etag of a fixture file: sha256 for an LFS file, git's blob sha1 for the others."""
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest() if path.suffix == ".safetensors" else git_sha1(data)


class Server:
    def __init__(self):
        self.process = subprocess.Popen([sys.executable, str(ROOT / "hub" / "hub_server.py"), str(FIXTURES)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hub_port, cdn_port = self.process.stdout.readline().split()
        self.endpoint = f"http://127.0.0.1:{hub_port}"
        self.cdn = f"http://localhost:{cdn_port}"

    def post(self, path, body=None):
        data = json.dumps(body or {}).encode()
        urllib.request.urlopen(urllib.request.Request(self.endpoint + path, data=data, method="POST"), timeout=10)

    def reset(self, **faults):
        self.post("/_reset")
        if faults:
            self.post("/_control", faults)

    def log(self):
        with urllib.request.urlopen(self.endpoint + "/_log", timeout=10) as r:
            return json.loads(r.read())

    def commit(self, repo, revision="main"):
        """X-Repo-Commit of the repository's config.json (the log is reset after)."""
        request = urllib.request.Request(f"{self.endpoint}/{repo}/resolve/{revision}/config.json", method="HEAD")
        with urllib.request.urlopen(request, timeout=10) as r:
            commit = r.headers["X-Repo-Commit"]
        self.reset()
        return commit

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=10)


class Cache:
    """A fresh HF_HOME (with its hub/ cache) per scenario."""

    def __init__(self, root, name):
        self.home = pathlib.Path(root) / name
        self.hub = self.home / "hub"
        self.home.mkdir()

    def storage(self, repo):
        return self.hub / ("models--" + repo.replace("/", "--"))


def environment(server, cache, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "HUGGING")) and k != "TRANSFORMERS_OFFLINE"}
    env.update(HF_HOME=str(cache.home), HF_HUB_CACHE=str(cache.hub), HF_ENDPOINT=server.endpoint)
    env.update(extra)
    return env


def attn(args, server=None, cache=None, env=None, cwd=None, **popen):
    return subprocess.run([ATTN, *args], env=env or environment(server, cache), cwd=cwd, capture_output=True,
                          text=True, timeout=120, **popen)


def encode(model, server, cache, *more, env=None):
    return attn(["encode", "--model", model, *SENTENCE, *more], server, cache, env=env)


def reference(folder):
    args = ["encode", "--model-dir", str(FIXTURES / folder), *SENTENCE]
    r = subprocess.run([ATTN, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def refused(r, what, *words):
    """Exit 2 and every word in the message."""
    check(r.returncode == 2 and all(w in r.stderr for w in words),
          f"{what}: exit 2 naming {', '.join(words)}", f"exit {r.returncode}: {r.stderr.strip()}")


def requests(log, server=None, method=None, path_part=""):
    return [e for e in log if (server is None or e["server"] == server) and (method is None or e["method"] == method)
            and path_part in e["path"]]


def check_layout(cache, repo, folder, commit, optional_missing):
    """huggingface_hub's cache, file by file: blobs named by etag holding the fixture's bytes, snapshot
    entries as relative links to them, refs/main, .no_exist entries, the locks, no .incomplete left."""
    storage = cache.storage(repo)
    check((storage / "refs" / "main").read_text() == commit, f"{repo}: refs/main holds the commit")
    snapshot = storage / "snapshots" / commit
    for path in sorted((FIXTURES / folder).iterdir()):
        link = snapshot / path.name
        etag = etag_of(path)
        target = os.readlink(link) if link.is_symlink() else None
        check(target == f"../../blobs/{etag}", f"{repo}: snapshots/{path.name} -> ../../blobs/<etag>", target)
        check((storage / "blobs" / etag).read_bytes() == path.read_bytes(), f"{repo}: blobs/{etag[:12]}… is {path.name}")
        check((cache.hub / ".locks" / storage.name / f"{etag}.lock").exists(), f"{repo}: .locks/…/{etag[:12]}….lock")
    for name in optional_missing:
        marker = storage / ".no_exist" / commit / name
        check(marker.is_file() and marker.stat().st_size == 0, f"{repo}: .no_exist/<commit>/{name} is an empty file")
    check(sorted(p.name for p in snapshot.iterdir()) == sorted(p.name for p in (FIXTURES / folder).iterdir()),
          f"{repo}: the snapshot holds the needed files alone")
    check(not list((storage / "blobs").glob("*.incomplete")), f"{repo}: no .incomplete left")


def first_download(server, tmp, gpt2_ref, bert_ref):
    cache = Cache(tmp, "first")
    commit = server.commit(GPT2)
    r = encode(GPT2, server, cache)
    check(r.returncode == 0 and r.stdout == gpt2_ref, "gpt2: --model NAME prints what --model-dir prints", r.stderr)
    check("attn: downloading attnlab-test/gpt2-tiny model.safetensors: 0.2 MB" in r.stderr,
          "gpt2: a plain progress line per file when standard error is not a terminal", r.stderr)
    log = server.log()
    paths = {e["path"].split("/resolve/")[1].split("/", 1)[1] for e in requests(log, "hub")}
    check(paths == {"config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json",
                    "special_tokens_map.json", "generation_config.json"},
          "gpt2: only the files the model needs are asked for (no README.md, no flax_model.msgpack)", paths)
    check(requests(log, "hub", "HEAD", "/resolve/main/config.json") and
          not requests(log, "hub", path_part="/resolve/main/model.safetensors"),
          "gpt2: config.json asked at main, the other files at the commit it gave")
    cdn = requests(log, "cdn", "GET")
    check(len(cdn) == 1 and "model.safetensors" in cdn[0]["path"], "gpt2: the weights come from the redirect's host")
    check_layout(cache, GPT2, "gpt2_tiny", commit, ["generation_config.json"])

    bert_commit = server.commit(BERT)
    r = encode(BERT, server, cache, "--quiet")
    check(r.returncode == 0 and r.stdout == bert_ref, "bert: --model NAME prints what --model-dir prints", r.stderr)
    check(r.stderr == "", "--quiet: no progress", r.stderr)
    check_layout(cache, BERT, "bert_tiny", bert_commit, ["generation_config.json"])
    return cache, commit


def decoders(server, tmp):
    """Llama-family repositories: config.json tells the family, tokenizer.json is fetched, shards too."""
    cache = Cache(tmp, "decoders")
    for repo, folder, missing in [("attnlab-test/llama-tiny", "llama_tiny", []),
                                  ("attnlab-test/pythia-two-shards", "pythia_parallel", ["tokenizer.json"])]:
        server.reset()
        args = ["--ids", "1 2 3"] if missing else ["--sentence", "the dog sat"]
        r = attn(["encode", "--model", repo, *args, "--json", "--quiet"], server, cache)
        ref = subprocess.run([ATTN, "encode", "--model-dir", str(FIXTURES / folder), *args, "--json"],
                             capture_output=True, text=True, timeout=120)
        check(ref.returncode == 0 and r.returncode == 0 and r.stdout == ref.stdout,
              f"{repo}: --model NAME prints what --model-dir prints", r.stderr + ref.stderr)
        paths = {e["path"].split("/resolve/")[1].split("/", 1)[1] for e in requests(server.log(), "hub")}
        wanted = {p.name for p in (FIXTURES / folder).iterdir()} | {  # model.safetensors first: 404 when sharded
            "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"}
        check(paths == wanted, f"{repo}: config, weights (every shard), tokenizer.json and the optional files", paths)
        check_layout(cache, repo, folder, server.commit(repo), missing + ["generation_config.json"])


def cached_runs(server, cache, commit, gpt2_ref):
    server.reset()
    r = encode(GPT2, server, cache, env=environment(server, cache, HF_HUB_OFFLINE="1"))
    check(r.returncode == 0 and r.stdout == gpt2_ref and server.log() == [],
          "HF_HUB_OFFLINE=1: the same output and no request", (r.stderr, server.log()))
    r = encode(f"{GPT2}@{commit}", server, cache)
    check(r.returncode == 0 and r.stdout == gpt2_ref and server.log() == [],
          "@<commit> with a full snapshot: the same output and no request", (r.stderr, server.log()))
    r = encode(GPT2, server, cache, "--quiet")
    log = server.log()
    check(r.returncode == 0 and r.stdout == gpt2_ref and [e["method"] for e in log] == ["HEAD"],
          "online with a full snapshot: one HEAD (config.json gives the commit)", log)
    server.reset()
    r = encode(f"{GPT2}@v1.0", server, cache, "--quiet")
    gets = requests(server.log(), method="GET")
    tag_commit = (cache.storage(GPT2) / "refs" / "v1.0").read_text()
    check(r.returncode == 0 and r.stdout == gpt2_ref and tag_commit == server.commit(GPT2, "v1.0") != commit,
          "a tag: refs/v1.0 holds its own commit")
    check(not gets, "a tag of the same files: its blobs are the cached ones (no GET)", gets)
    # Another command, offline: the snapshot is its --model-dir.
    offline = environment(server, cache, HF_HUB_OFFLINE="1")
    for args in (["generate", "--prompt", "the dog", "--max-new-tokens", "3", "--temperature", "0"],
                 ["heads", "--sentence", "the dog sat on the mat", "--json"],
                 ["patch", "--clean", "the dog sat", "--corrupted", "the cat sat", "--answer-id", "5", "--wrong-id", "6", "--json"]):
        mine = attn([*args, "--model", GPT2, "--quiet"], env=offline)
        theirs = attn([*args, "--model-dir", str(FIXTURES / "gpt2_tiny")], env=offline)
        check(mine.returncode == 0 and mine.stdout == theirs.stdout, f"attn {args[0]} --model", mine.stderr)
    out = pathlib.Path(cache.home) / "batch.jsonl"
    sentences = pathlib.Path(cache.home) / "sentences.txt"
    sentences.write_text("the dog sat\nthe cat sat\n")
    mine = attn(["batch", "--model", GPT2, str(sentences), "-o", str(out), "--quiet"], env=offline)
    theirs = attn(["batch", "--model-dir", str(FIXTURES / "gpt2_tiny"), str(sentences), "-o", "-", "--quiet"], env=offline)
    check(mine.returncode == 0 and out.read_text() == theirs.stdout, "attn batch --model", mine.stderr)
    logs = [pathlib.Path(cache.home) / f"train{i}.jsonl" for i in (1, 2)]
    train = ["train", "--data", str(sentences), "--steps", "2", "--seq-len", "3", "--quiet"]
    mine = attn([*train, "--model", GPT2, "--log", str(logs[0])], env=offline)
    theirs = attn([*train, "--model-dir", str(FIXTURES / "gpt2_tiny"), "--log", str(logs[1])], env=offline)
    check(mine.returncode == 0 and theirs.returncode == 0 and logs[0].read_text() == logs[1].read_text(),
          "attn train --model (fine-tuning GPT-2: the same log)", mine.stderr + theirs.stderr)
    r = attn(["train", "--model", BERT, "--data", str(sentences), "--quiet"], env=offline)
    refused(r, "attn train --model (a BERT snapshot, which it does not fine-tune)", "snapshots/", "GPT-2")


def another_tools_files(server, tmp, bert_ref):
    """Blobs and snapshot files another tool put there are used as they are."""
    cache = Cache(tmp, "other-tool")
    commit = server.commit(BERT)
    storage = cache.storage(BERT)
    (storage / "blobs").mkdir(parents=True)
    weights = FIXTURES / "bert_tiny" / "model.safetensors"
    shutil.copyfile(weights, storage / "blobs" / etag_of(weights))
    (storage / "snapshots" / commit).mkdir(parents=True)
    shutil.copyfile(FIXTURES / "bert_tiny" / "vocab.txt", storage / "snapshots" / commit / "vocab.txt")
    r = encode(BERT, server, cache, "--quiet")
    gets = [e["path"] for e in requests(server.log(), method="GET")]
    check(r.returncode == 0 and r.stdout == bert_ref and not any("model.safetensors" in p or "vocab.txt" in p for p in gets),
          "a blob and a snapshot file another tool put there are used as they are", (r.stderr, gets))
    check(not (storage / "snapshots" / commit / "vocab.txt").is_symlink(), "another tool's snapshot file is left alone")


def faults(server, tmp, gpt2_ref):
    weights = FIXTURES / "gpt2_tiny" / "model.safetensors"
    sha = etag_of(weights)

    cache = Cache(tmp, "resume")
    server.reset(drop_after=50000, drop_times=1)
    r = encode(GPT2, server, cache)
    gets = requests(server.log(), "cdn", "GET")
    check(r.returncode == 0 and r.stdout == gpt2_ref and "resuming" in r.stderr, "a dropped connection is resumed", r.stderr)
    check([g["headers"].get("range") for g in gets] == [None, "bytes=50000-"] and gets[1]["status"] == 206,
          "the resumed GET asks Range: bytes=50000- and gets 206", gets)
    check((cache.storage(GPT2) / "blobs" / sha).read_bytes() == weights.read_bytes(), "the resumed blob is the file")

    cache = Cache(tmp, "restart")
    server.reset(drop_after=50000, drop_times=1, ignore_range=True)
    r = encode(GPT2, server, cache, "--quiet")
    gets = requests(server.log(), "cdn", "GET")
    check(r.returncode == 0 and r.stdout == gpt2_ref and [g["status"] for g in gets] == [200, 200],
          "a range answered with 200 starts the file over", (r.stderr, gets))

    cache = Cache(tmp, "truncated")
    server.reset(drop_after=50000, drop_times=2)
    r = encode(GPT2, server, cache, "--quiet")
    refused(r, "closed early twice", "model.safetensors", "stopped at 100000 of 153256 bytes", "run the command again")
    part = cache.storage(GPT2) / "blobs" / f"{sha}.incomplete"
    check(part.stat().st_size == 100000 and not (cache.storage(GPT2) / "snapshots").exists(),
          "closed early twice: the part is kept, the snapshot is not made")
    server.reset()
    r = encode(GPT2, server, cache, "--quiet")
    gets = requests(server.log(), "cdn", "GET")
    check(r.returncode == 0 and r.stdout == gpt2_ref and [g["headers"].get("range") for g in gets] == ["bytes=100000-"],
          "the next run resumes the kept part", (r.stderr, gets))

    cache = Cache(tmp, "corrupt")
    server.reset(corrupt=True)
    r = encode(GPT2, server, cache)
    refused(r, "a corrupted byte", "model.safetensors", "corrupt", "SHA-256", sha)
    blobs = cache.storage(GPT2) / "blobs"
    check(not (blobs / sha).exists() and not (blobs / f"{sha}.incomplete").exists(),
          "a corrupted file leaves no blob and no .incomplete")
    check(not (cache.storage(GPT2) / "snapshots").exists(), "a corrupted file leaves nothing in snapshots/")

    cache = Cache(tmp, "full")
    server.reset()
    limit = lambda: (resource.setrlimit(resource.RLIMIT_FSIZE, (60000, 60000)),
                     signal.signal(signal.SIGXFSZ, signal.SIG_IGN))
    r = subprocess.run([ATTN, "encode", "--model", GPT2, *SENTENCE, "--quiet"], env=environment(server, cache),
                       capture_output=True, text=True, timeout=120, preexec_fn=limit)
    refused(r, "a write error (a file size limit, as a full disk)", "cannot write", ".incomplete", "File too large")
    check(not (cache.storage(GPT2) / "snapshots").exists(), "a write error leaves nothing in snapshots/")


def access(server, tmp, gpt2_ref):
    gated = "attnlab-test/gated-gpt2"
    cache = Cache(tmp, "gated")
    server.reset()
    r = encode(gated, server, cache)
    refused(r, "a gated repository without a token", gated, "config.json", "401", "gated", "HF_TOKEN")
    r = encode(gated, server, cache, env=environment(server, cache, HF_TOKEN="hf_wrong"))
    refused(r, "a gated repository with a wrong token", gated, "may not read it")
    server.reset()
    r = encode(gated, server, cache, "--quiet", env=environment(server, cache, HF_TOKEN=TOKEN))
    log = server.log()
    check(r.returncode == 0 and r.stdout == gpt2_ref, "a gated repository with HF_TOKEN", r.stderr)
    check(all(e["headers"].get("authorization") == f"Bearer {TOKEN}" for e in requests(log, "hub")),
          "the token goes to the Hub with every request")
    cdn = requests(log, "cdn")
    check(cdn and all("authorization" not in e["headers"] for e in cdn), "the token never reaches the redirect's host")
    cache = Cache(tmp, "token-file")
    (cache.home / "token").write_text(TOKEN + "\n")
    r = encode(gated, server, cache, "--quiet")
    check(r.returncode == 0 and r.stdout == gpt2_ref, "the token from $HF_HOME/token", r.stderr)

    cache = Cache(tmp, "missing")
    r = encode("attnlab-test/no-such-repo", server, cache)
    refused(r, "a missing repository", "attnlab-test/no-such-repo", "not found", "config.json")
    r = encode(f"{GPT2}@no-such-branch", server, cache)
    refused(r, "a missing revision", GPT2, "no revision 'no-such-branch'")
    r = encode("attnlab-test/gpt2-no-merges", server, cache)
    refused(r, "a missing required file", "attnlab-test/gpt2-no-merges", "merges.txt")
    storage = cache.storage("attnlab-test/gpt2-no-merges")
    commit = server.commit("attnlab-test/gpt2-no-merges")
    check((storage / ".no_exist" / commit / "merges.txt").is_file() and not (storage / "snapshots").exists(),
          "a missing required file: .no_exist records it, no snapshot is made")
    r = encode("attnlab-test/html-config", server, cache)
    refused(r, "HTML where config.json should be", "config.json", "attnlab-test/html-config", "not valid JSON")
    r = encode(GPT2, server, cache, env=environment(server, cache, HF_ENDPOINT=server.endpoint + "/plain"))
    refused(r, "a web server that is no Hub", "config.json", "X-Repo-Commit")
    server.reset()
    r = encode("attnlab-test/gpt2-sharded", server, cache, "--quiet")
    check(r.returncode == 0 and r.stdout == gpt2_ref, "weights in one shard named by model.safetensors.index.json", r.stderr)
    r = encode("attnlab-test/gpt2-two-shards", server, cache, "--quiet")
    check(r.returncode == 0 and r.stdout == gpt2_ref, "weights in two shards: what one file gives", r.stderr)
    got = {e["path"].rsplit("file=", 1)[1] for e in requests(server.log(), "cdn", "GET", "-of-00002")}
    check(got == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, "two shards: both downloaded", got)
    r = encode("attnlab-test/gpt2-shard-missing", server, cache)
    refused(r, "a shard the repository lacks", "attnlab-test/gpt2-shard-missing", "model-00002-of-00002.safetensors")


def concurrency(server, tmp, gpt2_ref):
    cache = Cache(tmp, "concurrent")
    server.reset(delay=0.02)
    env = environment(server, cache)
    runs = [subprocess.Popen([ATTN, "encode", "--model", GPT2, *SENTENCE, "--quiet"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in runs]
    check(all(p.returncode == 0 and out == gpt2_ref for p, (out, _) in zip(runs, outputs)),
          "two processes into one empty cache both succeed", [err for _, err in outputs])
    log = server.log()
    gets = {}
    for e in requests(log, method="GET"):
        name = e["path"].rsplit("/", 1)[-1].split("?")[0]
        gets[name] = gets.get(name, 0) + 1
    check(len(gets) == 6 and set(gets.values()) == {1}, "each file is downloaded once (the other waits on its lock)", gets)
    check_layout(cache, GPT2, "gpt2_tiny", server.commit(GPT2), ["generation_config.json"])

    # A lock held as Python's filelock holds it (huggingface_hub downloading the blob) is waited for.
    cache = Cache(tmp, "locked")
    sha = etag_of(FIXTURES / "gpt2_tiny" / "model.safetensors")
    lock_path = cache.hub / ".locks" / cache.storage(GPT2).name / f"{sha}.lock"
    lock_path.parent.mkdir(parents=True)
    server.reset()
    with open(lock_path, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = subprocess.Popen([ATTN, "encode", "--model", GPT2, *SENTENCE],
                             env=environment(server, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        check(p.poll() is None and not requests(server.log(), "cdn"), "a held lock: attn waits, the weights unasked")
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0 and out == gpt2_ref and "waiting for another download of model.safetensors" in err,
          "a released lock: attn goes on", err)


def bad_names(server, tmp):
    cache = Cache(tmp, "bad")
    server.reset()
    for name, words in [("a//b", ["more than one '/'"]), ("../x", ["'../x'"]), ("a--b/c", ["'--' or '..'"]),
                        ("x" * 200, ["at most 96"]),
                        (f"{GPT2}@", ["revision is empty"]), (f"{GPT2}@..", ["holds '..'"]),
                        (f"{GPT2}@a\x01b", ["control character"]), (f"{GPT2}@/main", ["empty or '.' part"])]:
        r = encode(name, server, cache)
        refused(r, f"--model {name[:30]!r}", "is no folder", *words)
    refused(encode("", server, cache), "--model ''", "--model", "repository id is empty")
    check(server.log() == [] and not cache.hub.exists(), "malformed ids and revisions: no request, no cache")
    r = attn(["encode", "--model", GPT2, "--model-dir", str(FIXTURES / "gpt2_tiny")], server, cache)
    refused(r, "--model with --model-dir", "--model", "--model-dir")
    r = attn(["encode", "--model", GPT2, "--weights", "w.safetensors"], server, cache)
    refused(r, "--model with --weights", "drop --config, --weights")


def local_folder_wins(server, tmp, bert_ref):
    work = pathlib.Path(tmp) / "work"
    shutil.copytree(FIXTURES / "bert_tiny", work / GPT2)  # a folder named as the GPT-2 repository, holding BERT
    cache = Cache(tmp, "local")
    server.reset()
    r = attn(["encode", "--model", GPT2, *SENTENCE], server, cache, cwd=work)
    check(r.returncode == 0 and r.stdout == bert_ref and server.log() == [],
          "a local folder named as a repository wins, with no request", r.stderr)


def cancel_and_resume(server, tmp):
    """attn-gui's Cancel (native/gui/hub_download.cpp): snapshot()'s Watch returning false stops the weights'
    download with a message, the part kept; the next download resumes it with a Range request."""
    if WATCH is None:
        return check(False, "attn_hub_watch is given (hub_check.py ATTN ATTN_HUB_WATCH)")
    cache = Cache(tmp, "cancel")
    env = environment(server, cache)
    server.reset(delay=0.01)  # the weights in 4 KiB pieces, so the transfer reports progress on the way
    r = subprocess.run([WATCH, GPT2, "65536"], env=env, capture_output=True, text=True, timeout=120)
    parts = list((cache.storage(GPT2) / "blobs").glob("*.incomplete"))
    kept = parts[0].stat().st_size if parts else 0
    check(r.returncode == 3 and "model.safetensors of attnlab-test/gpt2-tiny@main was cancelled at" in r.stdout and
          kept >= 65536 and not (cache.storage(GPT2) / "snapshots").exists(),
          f"a cancelled download stops with a message, its part kept ({kept} bytes) and no snapshot", r.stdout + r.stderr)
    server.reset()
    r = subprocess.run([WATCH, GPT2, str(1 << 40)], env=env, capture_output=True, text=True, timeout=120)
    ranges = [e["headers"].get("range") for e in requests(server.log(), "cdn", "GET")]
    check(r.returncode == 0 and r.stdout.startswith("done: ") and ranges == [f"bytes={kept}-"],
          f"the next download resumes the cancelled part ({ranges})", r.stdout + r.stderr)


def npm_cache(server, cache, repo, revision, files):
    """@huggingface/hub's downloadFileToCacheDir of each file (tests/hub/npm_cache.mjs): {file: path}, or None."""
    r = subprocess.run(["node", str(ROOT / "hub" / "npm_cache.mjs"), server.endpoint, str(cache.hub), repo, revision,
                        *files], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"@huggingface/hub downloads {repo}@{revision[:8]}", r.stdout + r.stderr)
    return json.loads(r.stdout.splitlines()[-1]) if r.returncode == 0 else None


def npm_interop(server, tmp, gpt2_ref):
    """The npm package @huggingface/hub (huggingface.js, pinned) and attnlab share one cache: what either
    downloaded, the other reads with no request."""
    if not (ROOT / "hub" / "node_modules" / "@huggingface" / "hub").is_dir():
        return check(False, "the npm package @huggingface/hub is installed in tests/hub (scripts/deps.sh)")
    cache = Cache(tmp, "npm-wrote")
    commit = server.commit(GPT2)
    files = sorted(p.name for p in (FIXTURES / "gpt2_tiny").iterdir())
    if npm_cache(server, cache, GPT2, commit, files) is None:
        return
    server.reset()
    r = encode(f"{GPT2}@{commit}", server, cache, env=environment(server, cache, HF_HUB_OFFLINE="1"))
    check(r.returncode == 0 and r.stdout == gpt2_ref and not server.log(),
          "a cache @huggingface/hub wrote is read by attn --model NAME@COMMIT with no request", r.stderr + str(server.log()))

    cache = Cache(tmp, "attn-wrote")
    commit = server.commit(BERT)
    r = encode(BERT, server, cache, "--quiet")
    snapshot = cache.storage(BERT) / "snapshots" / commit
    files = sorted(p.name for p in snapshot.iterdir()) if snapshot.is_dir() else []
    server.reset()
    paths = npm_cache(server, cache, BERT, commit, files) or {}
    same = all(pathlib.Path(paths.get(f, "/none")).read_bytes() == (FIXTURES / "bert_tiny" / f).read_bytes() for f in files)
    check(r.returncode == 0 and files and same and all(str(snapshot) in p for p in paths.values()) and not server.log(),
          f"attnlab's cache is read by @huggingface/hub with no request ({len(files)} files of the snapshot)",
          str(paths) + str(server.log()))


def offline_and_unreachable(server, tmp, commit, gpt2_ref):
    cache = Cache(tmp, "offline")
    server.reset()
    env = environment(server, cache, HF_HUB_OFFLINE="1")
    refused(encode(GPT2, server, cache, env=env), "offline, an empty cache", "HF_HUB_OFFLINE", "refs/main")
    nowhere = environment(server, cache, HF_ENDPOINT="http://127.0.0.1:9")  # the discard port: refused
    refused(encode(GPT2, server, cache, env=nowhere), "an unreachable Hub, an empty cache", "cannot reach", "config.json")
    shutil.copytree(pathlib.Path(tmp) / "first" / "hub", cache.hub, symlinks=True)
    r = encode(GPT2, server, cache, "--quiet", env=nowhere)
    check(r.returncode == 0 and r.stdout == gpt2_ref, "an unreachable Hub: the cached revision is used", r.stderr)
    (cache.storage(GPT2) / "snapshots" / commit / "vocab.json").unlink()
    refused(encode(GPT2, server, cache, env=env), "offline, a file missing from the snapshot", "vocab.json", "not in the cache")
    check(server.log() == [], "offline misses: no request")


def terminal_progress(server, tmp):
    cache = Cache(tmp, "terminal")
    server.reset()
    leader, follower = pty.openpty()
    p = subprocess.Popen([ATTN, "encode", "--model", BERT, *SENTENCE], env=environment(server, cache),
                         stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    p.wait(timeout=120)
    os.close(leader)
    text = shown.decode(errors="replace")
    check(p.returncode == 0 and "\rattnlab-test/bert-tiny model.safetensors [" in text and "MB/s" in text
          and "left" in text and "downloading" not in text, "a terminal: one progress bar per file, redrawn with \\r", text)


def main():
    gpt2_ref, bert_ref = reference("gpt2_tiny"), reference("bert_tiny")
    server = Server()
    tmp = tempfile.mkdtemp(prefix="attn_hub_")
    try:
        cache, commit = first_download(server, tmp, gpt2_ref, bert_ref)
        cached_runs(server, cache, commit, gpt2_ref)
        decoders(server, tmp)
        another_tools_files(server, tmp, bert_ref)
        faults(server, tmp, gpt2_ref)
        access(server, tmp, gpt2_ref)
        concurrency(server, tmp, gpt2_ref)
        bad_names(server, tmp)
        local_folder_wins(server, tmp, bert_ref)
        offline_and_unreachable(server, tmp, commit, gpt2_ref)
        npm_interop(server, tmp, gpt2_ref)
        cancel_and_resume(server, tmp)
        terminal_progress(server, tmp)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
