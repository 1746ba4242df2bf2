#!/usr/bin/env bash
# The main job: installs what is missing, builds, and serves the attention playground (the web build
# of ui/, default view = the first tutorial) on http://127.0.0.1:8000, printing the URL. The page is
# served cross-origin isolated (scripts/serve.py), so it runs the threaded build (build-web-mt).
#   scripts/run.sh                     # the playground (PORT=8001 scripts/run.sh for another port)
#   scripts/run.sh tutorial [ARGS…]    # `attn tutorial` in the terminal instead
#   scripts/run.sh --seed 1 …          # the same: options go to `attn tutorial`
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_attn
if [ $# -gt 0 ]; then
  [ "$1" = tutorial ] && shift
  exec build/native/attn tutorial "$@"
fi
cmake -S . -B build-web -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-web -j "$(nproc)" --target attn_playground > /dev/null
build_web_threads attn_playground
port=${PORT:-8000}
echo "attnlab playground: http://127.0.0.1:$port/   (Ctrl-C stops; \`scripts/run.sh tutorial\` prints the tutorial)"
exec /usr/bin/python3 scripts/serve.py build-web/web/site build-web-mt/web/site --port "$port"
