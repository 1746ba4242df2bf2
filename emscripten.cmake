# Toolchain file for the WebAssembly build:
#   cmake -S . -B build-web -DCMAKE_TOOLCHAIN_FILE=emscripten.cmake
# Wraps Debian's Emscripten toolchain and the project's web settings; each line says why it is needed.
set(ENV{NODE_PATH} "/usr/share/nodejs")   # else emcc fails with "Cannot find module 'acorn'"
include(/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake)
# Node 20 rejects emcmake's default node flag; tests run under plain node with this flag.
set(CMAKE_CROSSCOMPILING_EMULATOR "/usr/bin/node;--no-experimental-fetch" CACHE STRING "" FORCE)
