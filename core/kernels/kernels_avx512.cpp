// The fast kernels for avx512 (this file alone is compiled with its target flags: core/CMakeLists.txt).
#include "core/kernels/simd_kernels.hpp"

namespace attn {
namespace simd {

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
const KernelTable* avx512_table() { return Kernels<xsimd::avx512f, 12>::table("avx512"); }
#else
const KernelTable* avx512_table() { return nullptr; }
#endif

}  // namespace simd
}  // namespace attn
