#!/usr/bin/env bash
# Builds every fuzz target (tests/fuzz) with clang on libFuzzer under AddressSanitizer + UBSan in
# build-asan (cmake/sanitized.cmake: the tree of scripts/test.sh's sanitizers suite) and runs them, as
# many at once as there are cores. Two modes (docs/fuzzing.md):
#   scripts/fuzz.sh [SECONDS [TARGET...]]  explore: a random seed, SECONDS each (default 600); new inputs
#                                          are kept in build-asan/corpus/NAME and seed the next run.
#   scripts/fuzz.sh --gate [TARGET...]     the test command's run: seed 1 and each target's fixed number of
#                                          executions (tests/fuzz/CMakeLists.txt), from the committed corpus
#                                          and seeds alone, so one commit gets the same verdict on every
#                                          machine and every run.
# Invariants: no crash, no sanitizer report, no input over 1 s (-timeout=1; 10 s in the gate), at most 2048 MB resident
# (-rss_limit_mb), every refusal an InputError. A finding stops that target, keeps its input as
# build-asan/findings/NAME-*, and fails the script: fix it, minimise the input
# (fuzz_NAME -minimize_crash=1 …) and commit it to tests/fuzz/corpus/NAME.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
gate=false
if [ "${1:-}" = --gate ]; then gate=true; fi
seconds=${1:-600} only=" ${*:2} "  # SECONDS (or --gate), then the targets
"$root/scripts/deps.sh"
build=build-asan  # after scripts/test.sh, its fuzz targets are already built
mkdir -p $build
cmake -C cmake/sanitized.cmake -S . -B $build > $build/fuzz-configure.log 2>&1 || { cat $build/fuzz-configure.log; exit 1; }
cmake --build $build --target fuzz_all -j "$(nproc)"
mkdir -p $build/findings
fuzz_target() {  # NAME RUNS CORPUS SEED...: one target, explored for SECONDS or gated by RUNS; says how it went
  local name=$1 runs=$2 corpus=$3 log="$build/fuzz_$1.log" out="$build/corpus/$1" bound
  shift 3
  if $gate; then
    out="$build/gate-corpus/$name"  # new inputs of this run only: the next run starts where this one did
    rm -rf "$out"
    # A 10 s limit: an input near 1 s on a quiet machine could pass it or not on a loaded one.
    bound=(-seed=1 -runs="$runs" -timeout=10)
  else
    bound=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-1}")
  fi
  mkdir -p "$out"
  local start=$SECONDS
  if "$build/tests/fuzz/fuzz_$name" "${bound[@]}" -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$name-" "$out" "$corpus" "$@" > "$log" 2>&1; then
    echo "fuzz_$name: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*') runs in $((SECONDS - start)) s, no finding"
  else
    echo "fuzz_$name: FINDING ($build/findings/$name-*):"$'\n'"$(tail -n 30 "$log")"
    return 1
  fi
}
# One target per core at a time (each fuzzer is single-threaded), or FUZZ_JOBS at a time. On a machine
# busy with other work, FUZZ_TIMEOUT=10 keeps the time limit an input's, not the machine's.
failed=0 running=0 jobs=${FUZZ_JOBS:-$(nproc)}
while read -r name runs corpus seeds; do
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
  # shellcheck disable=SC2086  # the seed folders are separate arguments
  fuzz_target "$name" "$runs" "$corpus" $seeds &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
done < $build/tests/fuzz/targets.txt
for _ in $(seq "$running"); do wait -n || failed=$((failed + 1)); done
[ "$failed" -eq 0 ]
