#!/usr/bin/env bash
# The benchmark report: attn bench --torch natively at 1 thread and at every core, the WebAssembly cases
# under node (the threaded build, 1 thread and every core), and attnlab against onnxruntime-web under node
# and in Chromium (scripts/bench-ort.sh). Writes docs/bench-report.md (with the machine's CPU, the kernels,
# PyTorch's BLAS, the date) and the summary in README.md's speed section. About 20 minutes on 2 cores;
# run it on a quiet machine.
#   scripts/bench.sh            # everything
#   scripts/bench.sh --no-ort   # without the onnxruntime-web comparison
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"
export NODE_PATH=/usr/share/nodejs  # Debian's Emscripten needs it on every call
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target attn > /dev/null
cmake -S . -B build-web-mt -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release -DATTN_WEB_THREADS=ON \
  -DATTN_BUILD_TESTS=OFF > /dev/null
cmake --build build-web-mt -j "$(nproc)" --target attn-bench > /dev/null
run=build/bench-run
rm -rf "$run" && mkdir -p "$run"
cores=$(nproc)
blas=$(/usr/bin/python3 -c "from threadpoolctl import threadpool_info as i; print(', '.join(f\"{p['internal_api']} {p['version']} ({p['architecture']})\" for p in i() if p['user_api'] == 'blas') or 'unknown')" 2>/dev/null || echo unknown)
/usr/bin/python3 - "$run/machine.json" "$cores" "$blas" <<'PY'
import json, os, subprocess, sys, time
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
memory = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
json.dump({"cpu": cpu, "cores": int(sys.argv[2]), "memory": memory, "date": time.strftime("%Y-%m-%d"),
           "commit": out("git", "rev-parse", "--short", "HEAD"), "blas": sys.argv[3],
           "emscripten": out("emcc", "--version").splitlines()[0].split(")")[-1].strip() or "unknown",
           "node": out("node", "--version"), "chromium": out("/usr/bin/chromium", "--version")},
          open(sys.argv[1], "w"))
PY
for threads in $(printf '1\n%s\n' "$cores" | sort -un); do
  name=$([ "$threads" = 1 ] && echo 1 || echo N)
  echo "== attn bench --torch --threads $threads"
  build/native/attn bench --torch --json --threads "$threads" > "$run/native-$name.json"
  echo "== node attn-bench.js --threads $threads (WebAssembly)"
  node build-web-mt/attn-bench.js --json --threads "$threads" > "$run/wasm-$name.json"
done
[ "${1:-}" = --no-ort ] || scripts/bench-ort.sh --json "$root/$run/ort.json"
/usr/bin/python3 scripts/bench_report.py "$run" docs/bench-report.md README.md
echo "wrote docs/bench-report.md and README.md's summary"
