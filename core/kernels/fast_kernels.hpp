// The fast kernels: cache- and register-blocked matrix multiply on packed panels and flash-style
// attention, written once with xsimd and compiled for AVX-512, AVX2+FMA and SSE4.2 (chosen at run time
// by what the CPU has) and for WebAssembly SIMD128. kernels.hpp's PyTorch-order kernels and the plain
// loops in namespace reference are what the tests compare them with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/base/half.hpp"

namespace attn {

class ThreadPool;

enum class Rounding {
  exact,  // c = c + a·b, k in order, each step rounded: PyTorch's (netlib BLAS) bits exactly
  fused,  // fused multiply-add: faster, and at most as far from the true value
};

// op(B) packed once into the matrix multiply's column panels, for a B that many products share (a
// weight), which every call would otherwise pack again: in the layout of the instruction set active
// when it was packed.
class PackedB {
 public:
  PackedB(const float* b, size_t ldb, bool transposed, size_t k, size_t n);
  size_t k() const { return k_; }
  size_t n() const { return n_; }
  size_t panel_width() const { return panel_width_; }
  const float* data() const { return data_.get(); }

 private:
  size_t k_, n_, panel_width_;
  std::unique_ptr<float, decltype(&std::free)> data_{nullptr, &std::free};  // 64-byte aligned
};

// C[m, n] = op(A) · op(B) (+ C when accumulate); op(A) = A[m, k], or A[k, m]ᵀ when a_transposed (a
// weight's gradient, grad_yᵀ·x); op(B) = B[k, n], or B[n, k]ᵀ when b_transposed, or b_packed. Row-major
// with leading dimensions (elements between rows).
struct Gemm {
  size_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  size_t lda = 0;
  bool a_transposed = false;
  const float* b = nullptr;
  size_t ldb = 0;
  bool b_transposed = false;
  const PackedB* b_packed = nullptr;  // instead of b, ldb and b_transposed (same k and n)
  // Instead of b (with ldb and b_transposed): a half-precision op(B) (a bfloat16 or float16 weight),
  // widened to float32 as it is packed or read: the bits of the same product on the widened B.
  const uint16_t* b_half = nullptr;
  HalfType b_half_type = HalfType::bf16;
  float* c = nullptr;
  size_t ldc = 0;
  bool accumulate = false;
  Rounding rounding = Rounding::fused;
  // Then, as separate steps after the sum: C[i, j] += bias[j] (when non-null), and C = max(C, 0) when
  // relu; the bits of add_bias and a ReLU pass after the product, without their trips through memory.
  const float* bias = nullptr;
  bool relu = false;
};
void gemm(const Gemm& g, ThreadPool* pool = nullptr);

// Products of at most 4096 multiply-adds (the tutorial's 16×6×6) skip packing, which costs them more
// than it saves. Counted in 64 bits: in wasm32 2048³ wraps to 0 in a size_t.
inline bool small_product(size_t m, size_t n, size_t k) { return uint64_t(m) * n * k <= 4096; }

// out = softmax(q·kᵀ·scale, masked)·v for q [B, Sq, H, D], k/v [B, Sk, H, D], out [B, Sq, H, D],
// streaming over key blocks with an online softmax: memory O(block), never Sq×Sk. key_keep [B, Sk]
// (1 = attend) or null; causal masks key j > query i. Masked scores act as −1e9 (masked_fill), so a
// row with every key masked is the mean of all values, as in the tutorial.
struct FlashAttention {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  const uint8_t* key_keep = nullptr;
  size_t batch = 1, heads = 1, seq_q = 1, seq_k = 1, head_dim = 1;
  float scale = 1.0f;
  bool causal = false;
  // Packed sequences of any lengths (self-attention): sequence b is rows offsets[b] … offsets[b + 1] of
  // q, k, v, out and key_keep (batch + 1 entries); seq_q and seq_k are then unused. Null: [B, S] rows.
  const size_t* offsets = nullptr;
};
void flash_attention(const FlashAttention& f, ThreadPool* pool = nullptr);

// Sequence b's first row and length among the queries (q, out) and among the keys (k, v, key_keep).
struct SequenceSpan {
  size_t q_row, seq_q, k_row, seq_k;
};
inline SequenceSpan sequence_span(const FlashAttention& f, size_t b) {
  if (!f.offsets) return {b * f.seq_q, f.seq_q, b * f.seq_k, f.seq_k};
  const size_t row = f.offsets[b], length = f.offsets[b + 1] - row;
  return {row, length, row, length};
}

// One core's floating-point operations per second running `iterations` rounds of independent fused
// multiply-adds on the active instruction set (the machine's peak, measured).
double fma_peak_flops(size_t iterations);

// The instruction set the fast kernels use: "avx512", "avx2", "sse4.2" or "wasm-simd128".
std::string kernel_isa();
// Forces one (for benchmarks comparing them); throws InputError when this CPU lacks it.
void set_kernel_isa(const std::string& isa);

namespace reference {
void gemm(const Gemm& g);  // plain loops, double accumulation
void flash_attention(const FlashAttention& f);  // scores, softmax and weights·v materialised, in double
}  // namespace reference

}  // namespace attn
