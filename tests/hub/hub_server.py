#!/usr/bin/env python3
"""A stand-in for the Hugging Face Hub, for tests/hub_check.py (standard library only).

    hub_server.py FIXTURES_DIR

serves repositories built from tests/fixtures/pretrained on two servers bound to 127.0.0.1, port 0
each, and prints "HUB_PORT CDN_PORT" on its first line. The hub answers HEAD and GET of
/{repo_id}/resolve/{revision}/{file} as huggingface.co does: X-Repo-Commit, ETag (a small file's git
blob sha1) and Content-Length; an LFS file (*.safetensors) is a 302 to the CDN, addressed as
http://localhost:CDN_PORT (another host than 127.0.0.1), with X-Linked-Etag (its sha256) and
X-Linked-Size; errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo).
Both servers take Range: bytes=N- and bytes=N-M. GET /api/models/{repo_id}/revision/{revision} answers as the Hub's API
(model_info with blobs): {"id", "sha": the commit, "siblings": [{"rfilename", "size", "blobId", "lfs":
{"sha256", "size", "pointerSize"}}]}, and POST /api/models/{repo_id}/paths-info/{revision} as the Hub's
paths-info (what the npm package @huggingface/hub asks before a download). Every answer carries CORS headers as huggingface.co's (any origin,
the Hub's headers exposed; OPTIONS answered), so that the page's client (web/hub.js) can read them.

Every request is logged (server, method, path, headers, status); control endpoints on the hub:
GET /_log (the log as JSON), POST /_reset (empty log, no faults), POST /_control with a JSON object of
faults: {"drop_after": N, "drop_times": K} closes the connection after N bytes of the CDN's next K
answers; {"corrupt": true} flips one byte of what the CDN sends; {"delay": S} sleeps S seconds per
4 KiB the CDN sends; {"ignore_range": true} makes the CDN answer 200 (the whole file) to a range.
Under /plain/ the hub is an ordinary web server: 200 with an HTML page, no Hub header.
"""
import hashlib
import http.server
import json
import pathlib
import sys
import threading
import time
import urllib.parse

GATED_TOKEN = "hf_attnlab_test_token"
CORS = {"Access-Control-Allow-Origin": "*",
        "Access-Control-Expose-Headers": "X-Repo-Commit, X-Error-Code, ETag, X-Linked-Etag, X-Linked-Size, "
                                         "Content-Range, Content-Length, Accept-Ranges"}
HTML = b"<!DOCTYPE html><html><head><title>Hugging Face</title></head><body>Not a config</body></html>\n"


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def commit_of(repo_id, revision):
    """A fixed fake commit hash per repository and revision."""
    return hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()


def sharded_files(safetensors, count):
    """A .safetensors file split as save_pretrained shards it: the tensors dealt over `count` files
    model-0000i-of-0000n.safetensors, and model.safetensors.index.json naming every tensor's shard."""
    n = int.from_bytes(safetensors[:8], "little")
    header, body = json.loads(safetensors[8:8 + n]), safetensors[8 + n:]
    names = sorted(k for k in header if k != "__metadata__")
    files, weight_map = {}, {}
    for i in range(count):
        shard = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        part, data = {}, b""
        for name in names[i::count]:
            begin, end = header[name]["data_offsets"]
            part[name] = dict(header[name], data_offsets=[len(data), len(data) + end - begin])
            data += body[begin:end]
            weight_map[name] = shard
        text = json.dumps(part).encode()
        text += b" " * (-len(text) % 8)
        files[shard] = len(text).to_bytes(8, "little") + text + data
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": len(body)}, "weight_map": weight_map}).encode()
    return files


def build_repos(fixtures):
    def folder(name):
        files = {p.name: p.read_bytes() for p in sorted((fixtures / name).iterdir()) if p.is_file()}
        files["README.md"] = b"# a model card attn must not download\n"
        files["flax_model.msgpack"] = b"weights attn must not download\n"
        return files

    gpt2 = folder("gpt2_tiny")
    weights = gpt2["model.safetensors"]
    no_weights = {k: v for k, v in gpt2.items() if k != "model.safetensors"}
    sharded = dict(no_weights, **sharded_files(weights, 1))
    two_shards = dict(no_weights, **sharded_files(weights, 2))
    shard_missing = {k: v for k, v in two_shards.items() if k != "model-00002-of-00002.safetensors"}
    return {
        "attnlab-test/gpt2-tiny": {"files": gpt2},
        "attnlab-test/bert-tiny": {"files": folder("bert_tiny")},
        "attnlab-test/gated-gpt2": {"files": gpt2, "token": GATED_TOKEN},
        "attnlab-test/gpt2-no-merges": {"files": {k: v for k, v in gpt2.items() if k != "merges.txt"}},
        "attnlab-test/html-config": {"files": dict(gpt2, **{"config.json": HTML})},
        "attnlab-test/gpt2-sharded": {"files": sharded},
        "attnlab-test/gpt2-two-shards": {"files": two_shards},
        "attnlab-test/gpt2-shard-missing": {"files": shard_missing},
        "attnlab-test/llama-tiny": {"files": folder("llama_tiny")},
        "attnlab-test/pythia-two-shards": {"files": folder("pythia_parallel")},
    }


class State:
    def __init__(self, repos):
        self.repos = repos
        self.lock = threading.Lock()
        self.log = []
        self.faults = {}
        # The CDN's bytes by sha256.
        self.blobs = {hashlib.sha256(data).hexdigest(): data
                      for repo in repos.values() for name, data in repo["files"].items() if is_lfs(name)}

    def record(self, server, handler, status):
        with self.lock:
            self.log.append({"server": server, "method": handler.command, "path": handler.path,
                             "headers": {k.lower(): v for k, v in handler.headers.items()}, "status": status})


def is_lfs(name):
    return name.endswith(".safetensors")


def lfs_pointer(data):
    sha = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()


def revisions(repo_id):
    names = {"main": commit_of(repo_id, "main"), "v1.0": commit_of(repo_id, "v1.0")}
    return {**names, **{commit: commit for commit in names.values()}}


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "attnlab-test-hub"
    state = None
    role = "hub"
    cdn_port = 0

    def log_message(self, *args):
        pass

    def send(self, status, headers, body=b"", declared=None):
        self.state.record(self.role, self, status)
        self.send_response(status)
        for key, value in {**CORS, **headers}.items():
            self.send_header(key, str(value))
        self.send_header("Content-Length", str(len(body) if declared is None else declared))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, extra=None):
        self.send(status, {"X-Error-Code": code, "Content-Type": "text/plain", **(extra or {})}, code.encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urllib.parse.urlsplit(self.path).path.lstrip("/").split("/")
        if parts[:2] == ["api", "models"] and "paths-info" in parts[3:5]:
            return self.paths_info(parts[2:], body)
        with self.state.lock:
            if self.path == "/_reset":
                self.state.log.clear()
                self.state.faults = {}
            elif self.path == "/_control":
                self.state.faults.update(json.loads(body or b"{}"))
        self.send_response(204)
        self.end_headers()

    def do_GET(self):
        if self.path == "/_log":
            with self.state.lock:
                body = json.dumps(self.state.log).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.answer()

    def do_HEAD(self):
        self.answer()

    def do_OPTIONS(self):  # a CORS preflight
        self.send(204, {"Access-Control-Allow-Methods": "GET, HEAD", "Access-Control-Allow-Headers": "Range, Authorization",
                        "Access-Control-Max-Age": "600"})

    def answer(self):
        if self.role == "cdn":
            return self.cdn()
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/plain/"):
            return self.send(200, {"Content-Type": "text/html"}, HTML)
        parts = path.lstrip("/").split("/")
        if parts[:2] == ["api", "models"] and "revision" in parts[3:5]:
            return self.model_info(parts[2:])
        if "resolve" not in parts[1:3] or len(parts) < parts.index("resolve") + 3:
            return self.error(404, "NotFound")
        at = parts.index("resolve")
        repo_id, revision = "/".join(parts[:at]), urllib.parse.unquote(parts[at + 1])
        filename = urllib.parse.unquote("/".join(parts[at + 2:]))
        found = self.access(repo_id, revision)
        if found is None:
            return
        repo, commit = found
        data = repo["files"].get(filename)
        if data is None:
            return self.error(404, "EntryNotFound", {"X-Repo-Commit": commit})
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes"}
        if is_lfs(filename):
            sha = hashlib.sha256(data).hexdigest()
            location = f"http://localhost:{self.cdn_port}/blobs/{sha}?file={urllib.parse.quote(filename)}"
            pointer = lfs_pointer(data)
            return self.send(302, {**headers, "Location": location, "ETag": f'"{git_sha1(pointer)}"',
                                   "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": len(data)})
        self.ranged(200, {**headers, "ETag": f'"{git_sha1(data)}"', "Content-Type": "application/octet-stream"}, data)

    def access(self, repo_id, revision):
        """(repo, commit), or None with the Hub's error sent: no such repository, gated, no such revision."""
        repo = self.state.repos.get(repo_id)
        if repo is None:
            return self.error(404, "RepoNotFound")
        if "token" in repo and self.headers.get("authorization") != f"Bearer {repo['token']}":
            return self.error(401, "GatedRepo")
        commit = revisions(repo_id).get(revision)
        if commit is None:
            return self.error(404, "RevisionNotFound")
        return repo, commit

    def api_repo(self, parts, word):
        """(repo_id, repo, commit) of /api/models/{repo_id}/{word}/{revision}, or None with the error sent."""
        at = parts.index(word)
        repo_id = "/".join(parts[:at])
        found = self.access(repo_id, urllib.parse.unquote("/".join(parts[at + 1:])))
        return None if found is None else (repo_id, *found)

    def paths_info(self, parts, body):
        """The Hub's POST /api/models/{repo_id}/paths-info/{revision} ({"paths": [...], "expand": true}), as
        huggingface.js's pathsInfo reads it: each file's oid (git blob sha1), size, lfs {oid: sha256, size,
        pointerSize} and, expanded, its last commit (here the revision's)."""
        found = self.api_repo(parts, "paths-info")
        if found is None:
            return
        _, repo, commit = found
        out = []
        for name in json.loads(body or b"{}").get("paths", []):
            data = repo["files"].get(name)
            if data is None:
                continue
            entry = {"type": "file", "path": name, "size": len(data), "oid": git_sha1(data),
                     "lastCommit": {"id": commit, "title": "fixtures", "date": "2026-01-01T00:00:00.000Z"}}
            if is_lfs(name):
                pointer = lfs_pointer(data)
                entry.update(oid=git_sha1(pointer), lfs={"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                                         "pointerSize": len(pointer)})
            out.append(entry)
        self.send(200, {"Content-Type": "application/json"}, json.dumps(out).encode())

    def model_info(self, parts):
        found = self.api_repo(parts, "revision")
        if found is None:
            return
        repo_id, repo, commit = found
        siblings = []
        for name, data in sorted(repo["files"].items()):
            entry = {"rfilename": name, "size": len(data), "blobId": git_sha1(data)}
            if is_lfs(name):
                pointer = lfs_pointer(data)
                entry.update(blobId=git_sha1(pointer), lfs={"sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                                                             "pointerSize": len(pointer)})
            siblings.append(entry)
        body = json.dumps({"id": repo_id, "sha": commit, "siblings": siblings}).encode()
        self.send(200, {"Content-Type": "application/json"}, body)

    def cdn(self):
        parts = urllib.parse.urlsplit(self.path).path.split("/")
        data = self.state.blobs.get(parts[-1]) if len(parts) == 3 and parts[1] == "blobs" else None
        if data is None:
            return self.send(404, {}, b"no such blob")
        with self.state.lock:
            faults = dict(self.state.faults)
            drop = faults.get("drop_times", 0) > 0 and self.command == "GET"
            if drop:
                self.state.faults["drop_times"] -= 1
        if faults.get("corrupt"):
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
        self.ranged(200, {"Content-Type": "application/octet-stream", "ETag": f'"{parts[-1]}"'}, data,
                    drop_after=faults.get("drop_after") if drop else None, delay=faults.get("delay", 0),
                    ignore_range=faults.get("ignore_range", False))

    def ranged(self, status, headers, data, drop_after=None, delay=0, ignore_range=False):
        """`data` whole, or from a Range's start (206); cut after `drop_after` bytes, the connection closed."""
        start, end = 0, len(data)
        spec = self.headers.get("Range")
        if spec and not ignore_range:
            first, _, last = spec[6:].partition("-")
            if not spec.startswith("bytes=") or not first.isdigit() or not (last == "" or last.isdigit()):
                return self.send(416, {}, b"")
            start, end = int(first), min(len(data), int(last) + 1 if last else len(data))
            if start >= len(data) or end <= start:
                return self.send(416, {"Content-Range": f"bytes */{len(data)}"}, b"")
            status = 206
            headers = {**headers, "Content-Range": f"bytes {start}-{end - 1}/{len(data)}"}
        body = data[start:end]
        if self.command == "HEAD" or (drop_after is None and not delay):
            return self.send(status, headers, body)
        self.send(status, headers, b"", declared=len(body))
        sent = body if drop_after is None else body[:drop_after]
        for i in range(0, len(sent), 4096):
            self.wfile.write(sent[i:i + 4096])
            self.wfile.flush()
            time.sleep(delay)
        self.close_connection = True


def serve(state, role, cdn_port=0):
    handler = type(f"{role}Handler", (Handler,), {"state": state, "role": role, "cdn_port": cdn_port})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True

    def handle_error(request, address):  # a client that went away (a cancelled download) is not an error
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            http.server.ThreadingHTTPServer.handle_error(server, request, address)
    server.handle_error = handle_error
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    state = State(build_repos(pathlib.Path(sys.argv[1])))
    cdn = serve(state, "cdn")
    hub = serve(state, "hub", cdn.server_address[1])
    print(hub.server_address[1], cdn.server_address[1], flush=True)
    sys.stdin.read()  # until the test closes our standard input (or ends)


if __name__ == "__main__":
    main()
