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

// C[m, n] = A[m, k] · op(B) (+ C when accumulate); op(B) = B[k, n], or B[n, k]ᵀ when b_transposed, or
// b_packed. Row-major with leading dimensions (elements between rows).
struct Gemm {
  size_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  size_t lda = 0;
  const float* b = nullptr;
  size_t ldb = 0;
  bool b_transposed = false;
  const PackedB* b_packed = nullptr;  // instead of b, ldb and b_transposed (same k and n)
  float* c = nullptr;
  size_t ldc = 0;
  bool accumulate = false;
  Rounding rounding = Rounding::fused;
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
};
void flash_attention(const FlashAttention& f, ThreadPool* pool = nullptr);

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
