// The CPU backend: buffers in host memory, the fast kernels (fast_kernels.hpp) on a thread pool.
#include <algorithm>
#include <cmath>
#include <vector>
#include <xsimd/xsimd.hpp>

#include "core/backend/backend.hpp"
#include "core/base/error.hpp"
#include "core/kernels/fast_kernels.hpp"
#include "core/kernels/kernels.hpp"
#include "core/base/threads.hpp"
#include "core/model/transformer.hpp"

namespace attn {
namespace {

class CpuBuffer : public Buffer {
 public:
  explicit CpuBuffer(size_t size) : Buffer(size), data(size) {}
  std::vector<float, xsimd::aligned_allocator<float, 64>> data;
};

// upload_weight's buffers: packed once for gemm (not readable as plain floats).
class CpuWeight : public Buffer {
 public:
  CpuWeight(const float* b, size_t k, size_t n, bool b_transposed)
      : Buffer(k * n), packed(b, b_transposed ? k : n, b_transposed, k, n), transposed(b_transposed) {}
  PackedB packed;
  bool transposed;
};

[[noreturn]] void weight_misused() { throw InputError("a weight buffer (upload_weight) goes only to matmul"); }
float* host(Buffer& b) {
  auto* buffer = dynamic_cast<CpuBuffer*>(&b);
  if (!buffer) weight_misused();
  return buffer->data.data();
}
const float* host(const Buffer& b) {
  const auto* buffer = dynamic_cast<const CpuBuffer*>(&b);
  if (!buffer) weight_misused();
  return buffer->data.data();
}

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(size_t threads) : pool_(threads) {}
  std::string name() const override { return "cpu"; }
  bool packs_sequences() const override { return true; }
  BufferPtr allocate(size_t size) override { return BufferPtr(new CpuBuffer(size)); }
  void upload(Buffer& dst, const float* src, size_t size) override { std::copy_n(src, size, host(dst)); }
  void download(const Buffer& src, float* dst, size_t size) override { std::copy_n(host(src), size, dst); }

  BufferPtr upload_weight(const float* b, size_t k, size_t n, bool transposed) override {
    return BufferPtr(new CpuWeight(b, k, n, transposed));
  }
  void matmul(const Buffer& a, const Buffer& b, Buffer& c, size_t m, size_t k, size_t n, bool b_transposed) override {
    gemm(product(a, b, c, m, k, n, b_transposed), &pool_);
  }
  // The bias and ReLU in the product's epilogue (the same bits as the separate steps); GELU after it.
  void linear(const Buffer& x, const Buffer& weight, const Buffer& bias, Buffer& y, size_t rows, size_t in, size_t out,
              std::optional<Activation> activation) override {
    Gemm g = product(x, weight, y, rows, in, out, true);
    g.bias = host(bias);
    g.relu = activation == Activation::relu;
    gemm(g, &pool_);
    if (activation && !g.relu) this->activation(y, rows * out, *activation);
  }
  static Gemm product(const Buffer& a, const Buffer& b, Buffer& c, size_t m, size_t k, size_t n, bool b_transposed) {
    Gemm g;
    g.m = m, g.n = n, g.k = k;
    g.a = host(a), g.lda = k;
    if (const auto* weight = dynamic_cast<const CpuWeight*>(&b)) {
      if (weight->transposed != b_transposed) throw InputError("a weight used in the other layout than uploaded");
      g.b_packed = &weight->packed;  // gemm checks k and n
    } else {
      g.b = host(b), g.ldb = b_transposed ? k : n, g.b_transposed = b_transposed;
    }
    g.c = host(c), g.ldc = n;
    return g;
  }
  void add_bias(Buffer& x, const Buffer& bias, size_t rows, size_t n) override {
    for (size_t r = 0; r < rows; ++r) attn::add(host(x) + r * n, host(bias), host(x) + r * n, n);
  }
  void add(const Buffer& a, const Buffer& b, Buffer& out, size_t size) override {
    attn::add(host(a), host(b), host(out), size);
  }
  void activation(Buffer& x, size_t size, Activation kind) override {
    float* p = host(x);
    if (kind == Activation::relu)
      for (size_t i = 0; i < size; ++i) p[i] = std::max(p[i], 0.0f);
    else
      for (size_t i = 0; i < size; ++i) p[i] = 0.5f * p[i] * (1.0f + std::erf(p[i] * 0.70710678f));
  }
  void softmax_rows(Buffer& x, size_t rows, size_t n) override { attn::softmax_rows(host(x), rows, n); }
  void layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, Buffer& y, size_t rows, size_t n,
                  float eps) override;
  void attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                 const AttentionShape& shape, Buffer* weights) override;

 private:
  void attention_weights(const FlashAttention& f, float* weights);
  ThreadPool pool_;
  std::vector<uint8_t> keep_;
};

// Two passes per row (mean, then the variance around it) in vectors of float, rows over the threads.
void CpuBackend::layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, Buffer& y, size_t rows,
                            size_t n, float eps) {
  using batch = xsimd::batch<float>;
  constexpr size_t L = batch::size;
  const float *g = host(gamma), *b = host(beta), *in_all = host(x);
  float* out_all = host(y);
  pool_.parallel_for(rows, [&](size_t r) {
    const float* in = in_all + r * n;
    float* out = out_all + r * n;
    const size_t nv = n / L * L;
    batch sum(0.0f);
    for (size_t i = 0; i < nv; i += L) sum += batch::load_unaligned(in + i);
    float total = xsimd::reduce_add(sum);
    for (size_t i = nv; i < n; ++i) total += in[i];
    const float mean = total / float(n);
    batch sq(0.0f);
    for (size_t i = 0; i < nv; i += L) {
      const batch d = batch::load_unaligned(in + i) - batch(mean);
      sq = xsimd::fma(d, d, sq);
    }
    float var = xsimd::reduce_add(sq);
    for (size_t i = nv; i < n; ++i) var += (in[i] - mean) * (in[i] - mean);
    const float rstd = 1.0f / std::sqrt(var / float(n) + eps);
    for (size_t i = 0; i < nv; i += L)
      xsimd::fma((batch::load_unaligned(in + i) - batch(mean)) * batch(rstd), batch::load_unaligned(g + i),
                 batch::load_unaligned(b + i))
          .store_unaligned(out + i);
    for (size_t i = nv; i < n; ++i) out[i] = (in[i] - mean) * rstd * g[i] + b[i];
  });
}

void CpuBackend::attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                           const AttentionShape& shape, Buffer* weights) {
  FlashAttention f;
  f.q = host(q), f.k = host(k), f.v = host(v), f.out = host(out);
  f.batch = shape.batch, f.heads = shape.heads, f.seq_q = shape.seq_q, f.seq_k = shape.seq_k;
  f.head_dim = shape.head_dim, f.scale = shape.scale, f.causal = shape.causal, f.offsets = shape.offsets;
  if (key_keep) {
    keep_.resize(shape.offsets ? shape.offsets[shape.batch] : shape.batch * shape.seq_k);
    std::transform(host(*key_keep), host(*key_keep) + keep_.size(), keep_.begin(),
                   [](float x) { return uint8_t(x != 0.0f); });
    f.key_keep = keep_.data();
  }
  flash_attention(f, &pool_);
  if (weights) attention_weights(f, host(*weights));
}

// softmax(q·kᵀ·scale, masked) for every head, materialised only for callers that show it.
void CpuBackend::attention_weights(const FlashAttention& f, float* weights) {
  const size_t stride = f.heads * f.head_dim;
  for (size_t b = 0; b < f.batch; ++b) {
    const SequenceSpan s = sequence_span(f, b);
    for (size_t h = 0; h < f.heads; ++h, weights += s.seq_q * s.seq_k) {
      Gemm g;
      g.m = s.seq_q, g.n = s.seq_k, g.k = f.head_dim;
      g.a = f.q + s.q_row * stride + h * f.head_dim, g.lda = stride;
      g.b = f.k + s.k_row * stride + h * f.head_dim, g.ldb = stride, g.b_transposed = true;
      g.c = weights, g.ldc = s.seq_k;
      gemm(g, &pool_);
      for (size_t i = 0; i < s.seq_q; ++i)
        for (size_t j = 0; j < s.seq_k; ++j) {
          const bool keep = (!f.key_keep || f.key_keep[s.k_row + j]) && (!f.causal || j <= i);
          float& score = weights[i * s.seq_k + j];
          score = keep ? score * f.scale : -1e9f;
        }
      attn::softmax_rows(weights, s.seq_q, s.seq_k);
    }
  }
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(size_t threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace attn
