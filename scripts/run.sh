#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs `attn tutorial` (extra arguments go to it,
# e.g. scripts/run.sh --seed 1 --mask causal).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target attn > /dev/null
exec build/native/attn tutorial "$@"
