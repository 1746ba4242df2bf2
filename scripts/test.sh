#!/usr/bin/env bash
# Builds and runs every test: native (Release), native under AddressSanitizer + UBSan, the WebAssembly
# build under node and in headless Chromium, and the fuzz targets' gate (scripts/fuzz.sh --gate: a fixed
# seed and number of executions per target, one per core at a time). Installs what is missing first
# (scripts/deps.sh); compiles through ccache (CMakeLists.txt), so a second clone on one machine reuses
# the first one's objects. Prints each suite's time at the end.
#   scripts/test.sh                          # every suite
#   scripts/test.sh native fuzz              # some: native, sanitizers, webassembly, fuzz
#   ctest --test-dir build -R 'cli.batch'    # one test or a few, once its suite is built (docs/building.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
suites=" ${*:-native sanitizers webassembly fuzz} "
for s in $suites; do
  [[ " native sanitizers webassembly fuzz " == *" $s "* ]] || { echo "unknown suite '$s' (native, sanitizers, webassembly, fuzz)"; exit 2; }
done
wanted() { [[ "$suites" == *" $1 "* ]]; }
started=$SECONDS
"$root/scripts/deps.sh"
export NODE_PATH=/usr/share/nodejs  # Debian's Emscripten needs it on every call
jobs=$(nproc)
command -v ccache > /dev/null && ccache --zero-stats > /dev/null

passed=0 failed=0 times=()
timed() {  # name, seconds since: one line of the summary
  times+=("$(printf '%-12s %4d:%02d' "$1" $(((SECONDS - $2) / 60)) $(((SECONDS - $2) % 60)))")
}
run_suite() {  # name, build dir, cmake args...
  local name=$1 dir=$2 start=$SECONDS; shift 2
  echo "== $name: configure and build ($dir)"
  mkdir -p "$dir"
  cmake -S . -B "$dir" "$@" > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs"
  echo "== $name: test"
  local log="$dir/ctest.log"
  if ctest --test-dir "$dir" -j "$jobs" --output-on-failure 2>&1 | tee "$log"; then :; fi
  local line total fails
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  fails=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
  timed "$name" "$start"
  [ -n "$total" ] || { echo "$name: ctest did not run"; failed=$((failed + 1)); return; }
  passed=$((passed + total - fails)); failed=$((failed + fails))
}

if wanted native; then run_suite native build -DCMAKE_BUILD_TYPE=Release; fi
# The sanitized tree (cmake/sanitized.cmake): the tests under ASan + UBSan, and the fuzz targets run below.
if wanted sanitizers; then run_suite sanitizers build-asan -C cmake/sanitized.cmake; fi
if wanted webassembly; then
  # The threaded playground (pthreads) for the browser test's cross-origin isolated page, and its
  # attn-bench.js for wasm.threads. The browser test and python.notebook also use the native suite's
  # attn and Python module (build/).
  echo "== webassembly with threads: build the playground and attn-bench.js (build-web-mt)"
  start=$SECONDS
  cmake -S . -B build-web-mt -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release -DATTN_WEB_THREADS=ON \
    -DATTN_BUILD_TESTS=OFF > build-web-mt.configure.log 2>&1 || { cat build-web-mt.configure.log; exit 1; }
  cmake --build build-web-mt -j "$jobs" --target attn_playground attn-bench
  timed webassembly-mt "$start"
  run_suite webassembly build-web -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release
fi
if wanted fuzz; then
  echo "== fuzz: every target's gate on libFuzzer under ASan + UBSan (scripts/fuzz.sh --gate)"
  start=$SECONDS log=build-asan/fuzz-gate.log
  set +e
  "$root/scripts/fuzz.sh" --gate 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
  # Each target a test: passed without a finding, failed with one (or the script failed before any ran).
  findings=$(grep -c ': FINDING' "$log" || true)
  passed=$((passed + $(grep -c ', no finding$' "$log" || true)))
  failed=$((failed + findings + (status != 0 && findings == 0 ? 1 : 0)))
  timed fuzz "$start"
fi

echo "== time per suite (build and tests)"
printf '  %s\n' "${times[@]}"
timed total "$started"
echo "  ${times[-1]}"
if command -v ccache > /dev/null; then
  echo "  ccache: $(ccache --print-stats | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {h += $2}
    $1 == "cache_miss" {m = $2} END {printf "%d hits, %d misses", h, m}')"
fi
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
