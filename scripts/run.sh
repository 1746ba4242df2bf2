#!/usr/bin/env bash
# The main job: installs what is missing, builds, and serves the attention playground (the web build
# of ui/, default view = the first tutorial) on http://127.0.0.1:8000, printing the URL. The page is
# served cross-origin isolated (scripts/serve.py), so it runs the threaded build (build-web-mt).
#   scripts/run.sh                     # the playground (PORT=8001 scripts/run.sh for another port)
#   scripts/run.sh tutorial [ARGS…]    # `attn tutorial` in the terminal instead
#   scripts/run.sh --seed 1 …          # the same: options go to `attn tutorial`
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"
export NODE_PATH=/usr/share/nodejs  # Debian's Emscripten needs it on every call
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target attn > /dev/null
if [ $# -gt 0 ]; then
  [ "$1" = tutorial ] && shift
  exec build/native/attn tutorial "$@"
fi
cmake -S . -B build-web -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-web -j "$(nproc)" --target attn_playground > /dev/null
cmake -S . -B build-web-mt -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release -DATTN_WEB_THREADS=ON \
  -DATTN_BUILD_TESTS=OFF > /dev/null
cmake --build build-web-mt -j "$(nproc)" --target attn_playground > /dev/null
port=${PORT:-8000}
echo "attnlab playground: http://127.0.0.1:$port/   (Ctrl-C stops; \`scripts/run.sh tutorial\` prints the tutorial)"
exec /usr/bin/python3 scripts/serve.py build-web/web/site build-web-mt/web/site --port "$port"
