#!/usr/bin/python3
"""Writes docs/bench-report.md from the JSON files of one scripts/bench.sh run, and puts its summary into
README.md between the markers <!-- bench:start --> and <!-- bench:end -->.

Usage: bench_report.py RUN_DIR REPORT README
RUN_DIR holds machine.json, native-1.json and native-N.json (attn bench --torch --json), wasm-1.json and
wasm-N.json (node attn-bench.js --json, the threaded build), and ort.json (tests/ort/bench.js --json),
each optional but native-1.json."""
import json
import pathlib
import re
import sys


def params_text(p):
    return ", ".join(f"{k} {v}" for k, v in p.items())


def ms(seconds):
    return f"{seconds * 1e3:.4g}"


def native_table(doc):
    peak = next((r["gflops"] for r in doc["results"] if r["case"] == "fma_peak"), None)
    lines = [f"Kernels {doc['isa']}, {doc['threads']} thread(s); PyTorch {doc.get('torch', 'not run')}; "
             f"FMA peak {peak:.1f} GFLOP/s." if peak else
             f"Kernels {doc['isa']}, {doc['threads']} thread(s); PyTorch {doc.get('torch', 'not run')}.", "",
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


def main(run_dir, report_path, readme_path):
    run = pathlib.Path(run_dir)
    load = lambda name: json.loads((run / name).read_text()) if (run / name).exists() else None
    machine = load("machine.json")
    native = [d for d in (load("native-1.json"), load("native-N.json")) if d]
    wasm_one, wasm_many, ort = load("wasm-1.json"), load("wasm-N.json"), load("ort.json")
    head = [f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory']}; {machine['date']}, "
            f"commit {machine['commit']}. PyTorch's BLAS: {machine['blas']}. Emscripten {machine['emscripten']}, "
            f"node {machine['node']}, Chromium {machine['chromium']}.", ""]
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
               "(docs/bench-report.md) has every case). " + head[0], "",
               "| case | size | threads | ratio |", "|---|---|---|---|"]
    for doc in native:
        for r in doc["results"]:
            if "speedup" in r and r["case"] in ("encoder", "train", "sdpa") and (r["case"] != "sdpa" or
                                                                                r["params"]["seq"] == 4096):
                summary.append(f"| {r['case']} against PyTorch | {params_text(r['params'])} | {doc['threads']} | "
                               f"{r['speedup']:.2f}× |")
    for r in ort or []:
        summary.append(f"| encoder against onnxruntime-web ({r['where']}) | {r['case']} | {r['threads']} | {r['ratio']:.2f}× |")
    summary.append("<!-- bench:end -->")
    readme = pathlib.Path(readme_path).read_text()
    block = re.compile(r"<!-- bench:start -->.*<!-- bench:end -->", re.S)
    if not block.search(readme):
        sys.exit(f"{readme_path}: no <!-- bench:start --> ... <!-- bench:end --> block")
    pathlib.Path(readme_path).write_text(block.sub(lambda _: "\n".join(summary), readme))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
