#!/usr/bin/python3
"""The two ends of scripts/bench.sh.

    bench_report.py machine RUN_DIR               # RUN_DIR/machine.json: CPU, memory, date, commit, versions
    bench_report.py report RUN_DIR REPORT SPEED  # REPORT, and docs/speed.md's summary between its markers

RUN_DIR holds machine.json, native-1.json and native-N.json (attn bench --torch --json), wasm-1.json and
wasm-N.json (node attn-bench.js --json, the threaded build), and ort.json (tests/ort/bench.js --json),
each optional but machine.json and native-1.json. The summary goes into docs/speed.md between the markers
<!-- bench:start --> and <!-- bench:end -->."""
import json
import os
import pathlib
import re
import subprocess
import sys
import time


def command_output(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine(run_dir):
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    emcc = re.search(r"\d+\.\d+\.\d+", command_output("emcc", "--version"))
    info = {"cpu": cpu, "cores": os.cpu_count(),
            "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
            "date": time.strftime("%Y-%m-%d"), "commit": command_output("git", "describe", "--always", "--dirty"),
            "emscripten": emcc.group(0) if emcc else "unknown", "node": command_output("node", "--version"),
            "chromium": command_output("/usr/bin/chromium", "--version").split(" built")[0]}
    (pathlib.Path(run_dir) / "machine.json").write_text(json.dumps(info))


def params_text(p):
    return ", ".join(f"{k} {v}" for k, v in p.items())


def ms(seconds):
    return f"{seconds * 1e3:.4g}"


def native_table(doc):
    peak = next((r["gflops"] for r in doc["results"] if r["case"] == "fma_peak"), None)
    lines = [f"Kernels {doc['isa']}, {doc['threads']} thread(s); PyTorch {doc.get('torch', 'not run')}"
             + (f"; FMA peak {peak:.1f} GFLOP/s." if peak else "."), "",
             "| case | size | attn ms | PyTorch ms | ratio | GFLOP/s | attn MB / PyTorch MB |",
             "|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        if r["case"] == "fma_peak":
            continue
        size = params_text(r["params"])
        if "fraction_of_peak" in r:
            size += f" ({100 * r['fraction_of_peak']:.0f} % of peak)"
        torch = ms(r["torch_median_s"]) if "torch_median_s" in r else "–"
        ratio = f"**{r['speedup']:.2f}×**" if "speedup" in r else "–"
        memory = f"{r['extra_memory_mb']:.0f} / {r['torch_extra_memory_mb']:.0f}" if "torch_extra_memory_mb" in r else \
            f"{r['extra_memory_mb']:.0f}"
        lines.append(f"| {r['case']} | {size} | {ms(r['median_s'])} | {torch} | {ratio} | {r['gflops']:.1f} | {memory} |")
    return lines


def wasm_table(one, many):
    lines = ["| case | size | 1 thread ms | " + (f"{many['threads']} threads ms |" if many else "") + " GFLOP/s (1 thread) |",
             "|---|---|---|" + ("---|" if many else "") + "---|"]
    later = {json.dumps([r["case"], r["params"]]): r for r in (many or {"results": []})["results"]}
    for r in one["results"]:
        if r["case"] == "fma_peak":
            continue
        other = later.get(json.dumps([r["case"], r["params"]]))
        cells = [r["case"], params_text(r["params"]), ms(r["median_s"])]
        if many:
            cells.append(ms(other["median_s"]) if other else "–")
        cells.append(f"{r['gflops']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ort_table(rows):
    lines = ["| where | threads | encoder | attnlab ms | onnxruntime-web ms | ratio | outputs within |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['where']} | {r['threads']} | {r['case']} | {r['attn_ms']:.1f} | {r['ort_ms']:.1f} | "
                     f"**{r['ratio']:.2f}×** | {r['max_difference']:.1e} |")
    return lines


def report(run_dir, report_path, summary_path):
    run = pathlib.Path(run_dir)
    load = lambda name: json.loads((run / name).read_text()) if (run / name).exists() else None
    machine_info = load("machine.json")
    native = [d for d in (load("native-1.json"), load("native-N.json")) if d]
    wasm_one, wasm_many, ort = load("wasm-1.json"), load("wasm-N.json"), load("ort.json")
    head = [f"Machine: {machine_info['cpu']}, {machine_info['cores']} cores, {machine_info['memory']}; "
            f"{machine_info['date']}, commit {machine_info['commit']}. PyTorch {native[0].get('torch', 'not run')}; Emscripten "
            f"{machine_info['emscripten']}, node {machine_info['node']}, {machine_info['chromium']}.", ""]
    out = ["# Benchmark report", "",
           "Written by `scripts/bench.sh` (every figure below comes from its latest run; rerun it to replace them). "
           "Ratios are the peer's time / attnlab's: above 1, attnlab is faster. docs/speed.md explains the cases "
           "and what bounds them.", ""] + head
    for doc in native:
        out += [f"## Native, {doc['threads']} thread(s), against PyTorch", ""] + native_table(doc) + [""]
    if wasm_one:
        out += ["## WebAssembly under node (the threaded build, attn-bench.js)", ""] + wasm_table(wasm_one, wasm_many) + [""]
    if ort:
        out += ["## WebAssembly against onnxruntime-web 1.30.0 (scripts/bench-ort.sh)", ""] + ort_table(ort) + [""]
    pathlib.Path(report_path).write_text("\n".join(out))

    summary = ["<!-- bench:start -->", f"From `scripts/bench.sh`'s latest run ([docs/bench-report.md]"
               "(bench-report.md) has every case). " + head[0], "",
               "| case | size | threads | ratio |", "|---|---|---|---|"]
    for doc in native:
        for r in doc["results"]:
            if "speedup" in r and r["case"] in ("encoder", "train", "sdpa") and \
                    (r["case"] != "sdpa" or r["params"]["seq"] == 4096) and r["params"].get("path") != "exact":
                summary.append(f"| {r['case']} against PyTorch | {params_text(r['params'])} | {doc['threads']} | "
                               f"{r['speedup']:.2f}× |")
    for r in ort or []:
        summary.append(f"| encoder against onnxruntime-web ({r['where']}) | {r['case']} | {r['threads']} | {r['ratio']:.2f}× |")
    summary.append("<!-- bench:end -->")
    text = pathlib.Path(summary_path).read_text()
    block = re.compile(r"<!-- bench:start -->.*<!-- bench:end -->", re.S)
    if not block.search(text):
        sys.exit(f"{summary_path}: no <!-- bench:start --> ... <!-- bench:end --> block")
    pathlib.Path(summary_path).write_text(block.sub(lambda _: "\n".join(summary), text))


if __name__ == "__main__":
    if sys.argv[1:2] == ["machine"] and len(sys.argv) == 3:
        machine(sys.argv[2])
    elif sys.argv[1:2] == ["report"] and len(sys.argv) == 5:
        report(*sys.argv[2:])
    else:
        sys.exit(__doc__)
