// float32 ↔ its IEEE-754 bit pattern (constants given by their bits, bit-exact comparisons).
#pragma once
#include <cstdint>
#include <cstring>

namespace attn {

inline float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);  // folds away at -O1 and above
  return f;
}

inline uint32_t bits_of(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace attn
