#include "core/kernels/fast_kernels.hpp"

#include <cmath>
#include <new>
#include <vector>

#include "core/base/error.hpp"
#include "core/kernels/simd_kernels.hpp"

namespace attn {
namespace {

// The widest instruction set this CPU runs, unless a benchmark forced one.
const simd::KernelTable* best_table() {
  if (const auto* wasm = simd::wasm_table()) return wasm;
  const auto cpu = xsimd::available_architectures();
  if (cpu.avx512f)
    if (const auto* t = simd::avx512_table()) return t;
  if (cpu.fma3_avx2)
    if (const auto* t = simd::avx2_table()) return t;
  return simd::sse42_table();
}

const simd::KernelTable*& active() {
  static const simd::KernelTable* table = best_table();
  return table;
}

}  // namespace

std::string kernel_isa() { return active()->isa; }

void set_kernel_isa(const std::string& isa) {
  const auto cpu = xsimd::available_architectures();
  const simd::KernelTable* table = nullptr;
  if (isa == "avx512" && cpu.avx512f) table = simd::avx512_table();
  if (isa == "avx2" && cpu.fma3_avx2) table = simd::avx2_table();
  if (isa == "sse4.2" && cpu.sse4_2) table = simd::sse42_table();
  if (isa == "wasm-simd128") table = simd::wasm_table();
  if (!table) throw InputError("instruction set '" + isa + "' is not available on this machine (it has " + kernel_isa() + ")");
  active() = table;
}

PackedB::PackedB(const float* b, size_t ldb, bool transposed, size_t k, size_t n)
    : k_(k), n_(n), panel_width_(active()->panel_width) {
  const size_t bytes = (n + panel_width_ - 1) / panel_width_ * panel_width_ * k * sizeof(float);
  data_.reset(static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
  if (!data_) throw std::bad_alloc();
  active()->pack_b(b, ldb, transposed, k, n, data_.get(), nullptr);
}

void gemm(const Gemm& g, ThreadPool* pool) {
  const PackedB* p = g.b_packed;
  if (p && (p->panel_width() != active()->panel_width || p->k() != g.k || p->n() != g.n))
    throw InputError("a packed matrix used with another shape or instruction set than it was packed for");
  active()->gemm(g, pool);
}

double fma_peak_flops(size_t iterations) { return active()->fma_peak(iterations); }

void flash_attention(const FlashAttention& f, ThreadPool* pool) {
  if (f.causal && !f.offsets && f.seq_q != f.seq_k) throw InputError("a causal mask needs as many queries as keys");
  active()->flash_attention(f, pool);
}

namespace reference {

void gemm(const Gemm& g) {
  for (size_t i = 0; i < g.m; ++i)
    for (size_t j = 0; j < g.n; ++j) {
      double acc = g.accumulate ? g.c[i * g.ldc + j] : 0.0;
      for (size_t p = 0; p < g.k; ++p)
        acc += double(g.a_transposed ? g.a[p * g.lda + i] : g.a[i * g.lda + p]) *
               double(g.b_transposed ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j]);
      float c = float(acc);
      if (g.bias) c += g.bias[j];
      g.c[i * g.ldc + j] = g.relu ? std::max(c, 0.0f) : c;
    }
}

void flash_attention(const FlashAttention& f) {
  const size_t D = f.head_dim, stride = f.heads * D;
  for (size_t b = 0; b < f.batch; ++b) {
    const SequenceSpan s = sequence_span(f, b);
    std::vector<double> w(s.seq_k);
    for (size_t h = 0; h < f.heads; ++h)
      for (size_t i = 0; i < s.seq_q; ++i) {
        const float* q = f.q + (s.q_row + i) * stride + h * D;
        double max = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < s.seq_k; ++j) {
          const float* k = f.k + (s.k_row + j) * stride + h * D;
          double dot = 0.0;
          for (size_t d = 0; d < D; ++d) dot += double(q[d]) * double(k[d]);
          const bool keep = (!f.key_keep || f.key_keep[s.k_row + j]) && (!f.causal || j <= i);
          w[j] = keep ? dot * double(f.scale) : -1e9;
          max = std::max(max, w[j]);
        }
        for (double& x : w) sum += x = std::exp(x - max);
        float* out = f.out + (s.q_row + i) * stride + h * D;
        for (size_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (size_t j = 0; j < s.seq_k; ++j) acc += w[j] * double(f.v[(s.k_row + j) * stride + h * D + d]);
          out[d] = float(acc / sum);
        }
      }
  }
}

}  // namespace reference
}  // namespace attn
