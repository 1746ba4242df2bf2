# Sourced by run.sh, bench.sh and bench-ort.sh: works from the checkout's root with the dependencies
# installed, and builds what they share.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh"
export NODE_PATH=/usr/share/nodejs  # Debian's Emscripten needs it on every call

# The native attn (build/native/attn).
build_attn() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build build -j "$(nproc)" --target attn > /dev/null
}

# Targets of the threaded WebAssembly build (build-web-mt: pthreads on Web Workers).
build_web_threads() {
  cmake -S . -B build-web-mt -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake -DCMAKE_BUILD_TYPE=Release -DATTN_WEB_THREADS=ON \
    -DATTN_BUILD_TESTS=OFF > /dev/null
  cmake --build build-web-mt -j "$(nproc)" --target "$@" > /dev/null
}
