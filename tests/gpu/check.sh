#!/usr/bin/env bash
# The cuda backend on a machine with an NVIDIA GPU, in about 5 minutes (most of it the build): builds
# with -DATTN_WITH_CUDA=ON into build-cuda, checks every op and the whole model against the cpu backend
# (attn-backend-check), then runs the benchmarks. Needs the CUDA toolkit and what scripts/deps.sh
# installs (run that once where the network is reachable). Exit status: the first failing step's.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build="$root/build-cuda"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true  # which GPU
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DATTN_WITH_CUDA=ON -DATTN_BUILD_TESTS=OFF > "$build.configure.log" \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target attn attn-backend-check
# Each step is bounded so that a hung kernel cannot eat the machine's time.
timeout 120 "$build/native/attn-backend-check" --backend cuda
timeout 60 "$build/native/attn" bench sdpa --backend cuda
timeout 60 "$build/native/attn" bench encoder --backend cuda
