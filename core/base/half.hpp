// Half-precision floats as checkpoints store them: bfloat16 (float32's top 16 bits) and IEEE float16,
// widened to float32 bit for bit as PyTorch's `.float()` widens them. The scalar conversions here are the
// reference the fast kernels' vector ones (core/kernels/simd_kernels.hpp) are tested against.
#pragma once
#include <cstdint>

#include "core/base/bits.hpp"

namespace attn {

enum class HalfType : uint8_t { bf16, f16 };

inline const char* half_name(HalfType t) { return t == HalfType::bf16 ? "bfloat16" : "float16"; }

inline float from_bf16(uint16_t b) { return float_from_bits(uint32_t(b) << 16); }

inline float from_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: mantissa × 2^-24, exact in float32
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  // inf and NaN; PyTorch converts through a float multiply, which quiets signalling NaNs.
  if (exponent == 31) return float_from_bits(sign | 0x7F800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0));
  return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline float from_half(HalfType t, uint16_t bits) { return t == HalfType::bf16 ? from_bf16(bits) : from_f16(bits); }

}  // namespace attn
