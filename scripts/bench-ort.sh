#!/usr/bin/env bash
# attnlab's WebAssembly engine against onnxruntime-web (pinned in tests/ort/package.json), the runtime
# in-browser transformer tools use: the same encoders (the tutorial classifier's, d_model 128, 4 layers,
# B 32 x S 16; and d_model 512, 6 layers, B 8 x S 128), weights and input, under node and in headless
# Chromium, at 1 thread and at every core; outputs checked to agree within 1e-4; ratios printed.
#   scripts/bench-ort.sh [--threads 1,2] [--no-chromium] [--json FILE]
# The weights and input are attn bench's (--dump), exported to ONNX by Debian's PyTorch
# (tests/ort/export_onnx.py). Results go to stdout; scripts/bench.sh keeps them in its report.
set -euo pipefail
source "$(dirname "$0")/common.sh"
"$root/scripts/deps-gui.sh"  # Chromium and playwright-core
[ -d tests/ort/node_modules/onnxruntime-web ] || (cd tests/ort && npm ci --no-audit --no-fund --loglevel=error)
build_web_threads attn-bench attn-bench-web
data=build-web-mt/ort
rm -rf "$data" && mkdir -p "$data"
echo "== attn bench encoder --dump $data, then its ONNX export"
node build-web-mt/attn-bench.js --threads 1 --dump "$data" encoder > /dev/null
/usr/bin/python3 tests/ort/export_onnx.py "$data" 8
echo "== attnlab and onnxruntime-web (ratio: onnxruntime-web's time / attnlab's; above 1, attnlab is faster)"
node tests/ort/bench.js "$data" build-web-mt "$@"
