// The fast kernels for sse4.2 (this file alone is compiled with its target flags: core/CMakeLists.txt).
#include "core/kernels/simd_kernels.hpp"

namespace attn {
namespace simd {

#if defined(__x86_64__) && !defined(__EMSCRIPTEN__)
const KernelTable* sse42_table() { return Kernels<xsimd::sse4_2, 6>::table("sse4.2"); }
#else
const KernelTable* sse42_table() { return nullptr; }
#endif

}  // namespace simd
}  // namespace attn
