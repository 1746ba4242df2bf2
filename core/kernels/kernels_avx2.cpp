// The fast kernels for avx2 (this file alone is compiled with its target flags: core/CMakeLists.txt).
#include "core/kernels/simd_kernels.hpp"

namespace attn {
namespace simd {

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
const KernelTable* avx2_table() { return Kernels<xsimd::fma3<xsimd::avx2>, 6>::table("avx2"); }
#else
const KernelTable* avx2_table() { return nullptr; }
#endif

}  // namespace simd
}  // namespace attn
