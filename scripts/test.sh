#!/usr/bin/env bash
# Builds and runs every test: native (Release), native under AddressSanitizer + UBSan, the
# WebAssembly build under node, and a bounded run of every fuzz target (ATTN_FUZZ_SECONDS each,
# default 16: 15 targets, one per core at a time, 2 minutes in all on 2 cores). Installs what is missing first (scripts/deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"
export NODE_PATH=/usr/share/nodejs  # Debian's Emscripten needs it on every call
jobs=$(nproc)

passed=0 failed=0
run_suite() {  # name, build dir, cmake args...
  local name=$1 dir=$2; shift 2
  echo "== $name: configure and build ($dir)"
  cmake -S . -B "$dir" "$@" > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs"
  echo "== $name: test"
  local log="$dir/ctest.log"
  if ctest --test-dir "$dir" -j "$jobs" --output-on-failure 2>&1 | tee "$log"; then :; fi
  local line total fails
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  fails=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
  [ -n "$total" ] || { echo "$name: ctest did not run"; failed=$((failed + 1)); return; }
  passed=$((passed + total - fails)); failed=$((failed + fails))
}

mkdir -p build build-asan build-web build-web-mt
run_suite native build -DCMAKE_BUILD_TYPE=Release
# The sanitized tree (cmake/sanitized.cmake): the tests under ASan + UBSan, and the fuzz targets run below.
run_suite sanitizers build-asan -C cmake/sanitized.cmake
# The threaded playground (pthreads) for the browser test's cross-origin isolated page, and its
# attn-bench.js for wasm.threads.
echo "== webassembly with threads: build the playground and attn-bench.js (build-web-mt)"
cmake -S . -B build-web-mt -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release -DATTN_WEB_THREADS=ON \
  -DATTN_BUILD_TESTS=OFF > build-web-mt.configure.log 2>&1 || { cat build-web-mt.configure.log; exit 1; }
cmake --build build-web-mt -j "$jobs" --target attn_playground attn-bench
run_suite webassembly build-web -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release
echo "== fuzz: every target for ${ATTN_FUZZ_SECONDS:=16} s on libFuzzer under ASan + UBSan (scripts/fuzz.sh)"
if "$root/scripts/fuzz.sh" "$ATTN_FUZZ_SECONDS"; then :; else failed=$((failed + 1)); fi

echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
