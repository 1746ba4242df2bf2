// Refuses sizes that would not fit in memory before anything is allocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {

// Bytes the engine may use: physical memory natively, the heap's maximum in WebAssembly (2 GiB, the
// Emscripten default the web builds keep).
double memory_limit_bytes();
// Throws InputError naming `what` when `bytes` exceeds the limit.
void check_fits_in_memory(double bytes, const std::string& what);
// Whether xtensor can lay out a row-major tensor of this shape: each stride, the product of the
// dimensions after it, must fit its signed index type. A zero dimension empties the tensor but leaves
// the strides before it as large as the dimensions after it make them, so a size check misses this.
template <class Dims>
bool strides_fit(const Dims& shape) {
  std::ptrdiff_t product = 1;
  for (const auto dim : shape)
    if (dim != 0 && (uint64_t(dim) > uint64_t(PTRDIFF_MAX) || __builtin_mul_overflow(product, std::ptrdiff_t(dim), &product)))
      return false;
  return true;
}
// A line of /proc/self/status in bytes ("VmRSS:" now, "VmHWM:" the peak); 0 where there is none (node).
double process_status_bytes(const char* field);

}  // namespace attn
