#!/usr/bin/env bash
# Builds every fuzz target (tests/fuzz) with clang on libFuzzer under AddressSanitizer + UBSan in
# build-asan (cmake/sanitized.cmake: the tree of scripts/test.sh's sanitizers suite), then runs each
# (or each TARGET named after SECONDS) for SECONDS (default 600), as many at once as there are cores.
# Invariants: no crash, no sanitizer report, no input over 1 s (-timeout=1), at most 2048 MB resident
# (-rss_limit_mb), every refusal an InputError.
# New inputs go to build-asan/corpus/NAME; the committed corpus and the tests' files are the seeds. A
# finding stops that target, keeps its input as build-asan/findings/NAME-*, and fails the script: fix
# it, minimise the input (fuzz_NAME -minimize_crash=1 …) and commit it to tests/fuzz/corpus/NAME.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-600}
only=" ${*:2} "  # scripts/fuzz.sh SECONDS [TARGET...]
"$root/scripts/deps.sh"
build=build-asan  # after scripts/test.sh, its fuzz targets are already built
mkdir -p $build
cmake -C cmake/sanitized.cmake -S . -B $build > $build/fuzz-configure.log 2>&1 || { cat $build/fuzz-configure.log; exit 1; }
cmake --build $build --target fuzz_all -j "$(nproc)"
mkdir -p $build/findings
fuzz_target() {  # NAME CORPUS SEED...: one target for SECONDS; says how it went
  local name=$1 corpus=$2 log="$build/fuzz_$1.log"
  shift 2
  mkdir -p "$build/corpus/$name"
  if "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$name-" "$build/corpus/$name" "$corpus" "$@" > "$log" 2>&1; then
    echo "fuzz_$name: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*') runs in ${seconds} s, no finding"
  else
    echo "fuzz_$name: FINDING ($build/findings/$name-*):"$'\n'"$(tail -n 30 "$log")"
    return 1
  fi
}
# One target per core at a time (each fuzzer is single-threaded).
failed=0 running=0
while read -r name corpus seeds; do
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
  # shellcheck disable=SC2086  # the seed folders are separate arguments
  fuzz_target "$name" "$corpus" $seeds &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
done < $build/tests/fuzz/targets.txt
for _ in $(seq "$running"); do wait -n || failed=$((failed + 1)); done
[ "$failed" -eq 0 ]
