# The sanitized tree (build-asan), preloaded with `cmake -C`: scripts/test.sh runs every test in it
# under AddressSanitizer + UBSan and scripts/fuzz.sh runs its libFuzzer targets, so the engine is built
# once for both. clang: libFuzzer needs it, and it compiles the sanitized engine in 60 % of g++'s time.
# -O1 -g1 (line tables): reports keep their lines at half the build time of -O2 -g.
set(CMAKE_C_COMPILER clang-14 CACHE STRING "")
set(CMAKE_CXX_COMPILER clang++-14 CACHE STRING "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG" CACHE STRING "")
set(ATTN_SANITIZE ON CACHE BOOL "")
set(ATTN_FUZZ ON CACHE BOOL "")
set(ATTN_WITH_CUDA OFF CACHE STRING "")  # built once, in the native suite
