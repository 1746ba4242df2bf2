// The fast kernels for wasm-simd128 (this file alone is compiled with its target flags: core/CMakeLists.txt).
#include "core/kernels/simd_kernels.hpp"

namespace attn {
namespace simd {

#if defined(__EMSCRIPTEN__)
const KernelTable* wasm_table() { return Kernels<xsimd::wasm, 6>::table("wasm-simd128"); }
#else
const KernelTable* wasm_table() { return nullptr; }
#endif

}  // namespace simd
}  // namespace attn
