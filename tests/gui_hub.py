#!/usr/bin/env python3
"""gui.hub: attn-gui --model ORG/NAME against the local stand-in for the Hub (tests/hub/hub_server.py), under Xvfb.

    gui_hub.py ATTN_GUI ATTN CHECK_PNG

With HF_HOME in a temporary folder and HF_ENDPOINT on the server: a Llama folder opened by its Hub name
shows what --model-dir shows (the trace of the frame shown equals attn encode --model-dir's), the cache
holds huggingface_hub's snapshot, the screenshot is a real image and the last frame idle; a second run
with HF_HUB_OFFLINE=1 asks nothing; a missing repository and a gated one exit 2 naming the problem, and
model=ORG/NAME in --hash asks for the model as --model does.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hub_check  # noqa: E402  (its Server and Cache)

GUI, ATTN, CHECK_PNG = sys.argv[1:4]
LLAMA = "attnlab-test/llama-tiny"
SENTENCE = "the cat sat on the mat"
failures = []


def check(condition, what, detail=""):
    print(("ok:   " if condition else "FAIL: ") + what + ("" if condition else f"\n      {detail}"))
    if not condition:
        failures.append(what)


def gui(args, env, out):
    # The X authority file in `out`: xvfb-run's own temporary folder, removed as an early exit (a refused
    # model) ends, sometimes fails to go and turns the exit status into 5.
    command = ["xvfb-run", "-a", "-f", f"{out}/xauthority", "-s", "-screen 0 1280x800x24", GUI, *args,
               "--screenshot", f"{out}/gui.png",
               "--frames", "4", "--check-idle", "--trace", f"{out}/trace.json"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def main():
    server = hub_check.Server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache = hub_check.Cache(tmp, "home")
            env = hub_check.environment(server, cache, ASAN_OPTIONS="detect_leaks=0")
            hash_ = "s=" + SENTENCE.replace(" ", "%20")
            r = gui(["--model", LLAMA, "--hash", hash_], env, tmp)
            check(r.returncode == 0, f"attn-gui --model {LLAMA} opens it", r.stdout + r.stderr)
            reference = subprocess.run([ATTN, "encode", "--model-dir", str(hub_check.FIXTURES / "llama_tiny"),
                                        "--sentence", SENTENCE, "--json"], capture_output=True, text=True, timeout=120)
            if r.returncode == 0 and reference.returncode == 0:
                shown = {s["name"]: s["data"] for s in json.load(open(f"{tmp}/trace.json"))["stages"]}
                expected = {s["name"]: s["data"] for s in json.loads(reference.stdout)["stages"]}
                common = [n for n in expected if n in shown]
                worst = max(max((abs(a - b) for a, b in zip(shown[n], expected[n])), default=0) for n in common)
                check(len(common) == len(expected) and worst <= 1e-6,
                      f"its stages are attn encode --model-dir's ({len(common)} of {len(expected)}, max |diff| {worst})")
                png = subprocess.run([sys.executable, CHECK_PNG, f"{tmp}/gui.png", "1280", "800"], capture_output=True, text=True)
                check(png.returncode == 0, "its screenshot shows the UI", png.stdout + png.stderr)
            snapshots = cache.storage(LLAMA) / "snapshots"
            names = sorted(p.name for p in next(snapshots.iterdir()).iterdir()) if snapshots.is_dir() else []
            check(names == sorted(p.name for p in (hub_check.FIXTURES / "llama_tiny").iterdir()),
                  f"huggingface_hub's snapshot holds the model's files: {names}")

            server.reset()
            offline = dict(env, HF_HUB_OFFLINE="1")
            r = gui(["--hash", f"model={LLAMA.replace('/', '%2F')}&{hash_}"], offline, tmp)
            check(r.returncode == 0 and not server.log(), "model= in the hash, offline, opens the cached model with no request",
                  r.stdout + r.stderr + str(server.log()))

            for name, words in [("attnlab-test/no-such-model", "was not found"), ("attnlab-test/gated-gpt2", "gated or private")]:
                r = gui(["--model", name], env, tmp)
                check(r.returncode == 2 and words in r.stderr,
                      f"attn-gui --model {name} exits 2 (got {r.returncode}): {r.stderr.strip()[-300:]}")
    finally:
        server.stop()
    print(f"{len(failures)} check(s) failed" if failures else "all gui.hub checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
