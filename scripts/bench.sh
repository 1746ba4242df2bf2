#!/usr/bin/env bash
# The benchmark report: attn bench --torch natively at 1 thread and at every core, the WebAssembly cases
# under node (the threaded build, 1 thread and every core), and attnlab against onnxruntime-web under node
# and in Chromium (scripts/bench-ort.sh). Writes docs/bench-report.md (with the machine's CPU, the kernels,
# PyTorch's BLAS, the date) and the summary at the top of docs/speed.md. About 20 minutes on 2 cores;
# run it on a quiet machine.
#   scripts/bench.sh            # everything
#   scripts/bench.sh --no-ort   # without the onnxruntime-web comparison
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_attn
build_web_threads attn-bench
run=build/bench-run
rm -rf "$run" && mkdir -p "$run"
cores=$(nproc)
/usr/bin/python3 scripts/bench_report.py machine "$run"
for threads in $(printf '1\n%s\n' "$cores" | sort -un); do
  name=$([ "$threads" = 1 ] && echo 1 || echo N)
  echo "== attn bench --torch --threads $threads"
  build/native/attn bench --torch --json --threads "$threads" > "$run/native-$name.json"
  echo "== node attn-bench.js --threads $threads (WebAssembly)"
  node build-web-mt/attn-bench.js --json --threads "$threads" > "$run/wasm-$name.json"
done
[ "${1:-}" = --no-ort ] || scripts/bench-ort.sh --json "$root/$run/ort.json"
/usr/bin/python3 scripts/bench_report.py report "$run" docs/bench-report.md docs/speed.md
echo "wrote docs/bench-report.md and docs/speed.md's summary"
