#!/usr/bin/python3
"""attn-gui computing on the gl backend under Xvfb (Mesa llvmpipe): the backend borrows the window's
OpenGL context (the backend line names gl and the borrowed context, nothing fell back to the exact
path), the UI still renders (check_png.py on the screenshot, an idle last frame), and the trace it shows
equals the cpu backend's within 1e-4. Usage: gui_gl_check.py ATTN_GUI"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
TOLERANCE = 1e-4


# Runs attn-gui on `backend` with the Transformer's weights shown; returns its output, screenshot and trace.
def run_gui(gui, backend, folder):
    png, trace = folder / f"{backend}.png", folder / f"{backend}.json"
    command = ["/usr/bin/xvfb-run", "-a", "-s", "-screen 0 1280x800x24", gui, "--hash", "model=transformer",
               "--stage", "layers.0.self_attn.attention_weights", "--backend", backend, "--screenshot", str(png),
               "--frames", "4", "--check-idle", "--trace", str(trace)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    print(output, end="")
    assert result.returncode == 0, f"attn-gui --backend {backend} exited with {result.returncode}"
    assert re.search(rf"^attn-gui: backend {backend}: {backend} backend: ", output, re.M), "no backend line"
    assert f"attn-gui: computed by {backend}\n" in output, f"not computed by {backend}"
    return output, png, json.loads(trace.read_text())


def compare(gl, cpu):
    assert {k: v for k, v in gl.items() if k != "stages"} == {k: v for k, v in cpu.items() if k != "stages"}
    names = [stage["name"] for stage in gl["stages"]]
    assert names == [stage["name"] for stage in cpu["stages"]], "different stages"
    assert "layers.0.self_attn.attention_weights" in names and "logits" in names, names
    worst = 0.0
    for a, b in zip(gl["stages"], cpu["stages"]):
        assert a["shape"] == b["shape"], a["name"]
        for x, y in zip(a["data"], b["data"]):
            worst = max(worst, abs(x - y) / max(1.0, abs(y)))
            assert abs(x - y) <= TOLERANCE * max(1.0, abs(y)), f"{a['name']}: gl {x}, cpu {y}"
    print(f"ok: {len(names)} stages, gl within {worst:.2g} of cpu")


with tempfile.TemporaryDirectory() as folder:
    output, png, gl_trace = run_gui(sys.argv[1], "gl", pathlib.Path(folder))
    assert "the calling thread's context, borrowed" in output, "gl did not borrow the window's context"
    subprocess.run([sys.executable, str(HERE / "check_png.py"), str(png), "1280", "800"], check=True)
    compare(gl_trace, run_gui(sys.argv[1], "cpu", pathlib.Path(folder))[2])
