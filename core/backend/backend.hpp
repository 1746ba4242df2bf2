// The small interface every compute backend implements (CPU SIMD here; OpenGL compute and CUDA in
// native/): device buffers of float32 and the operations the encoder needs. The CPU backend is the
// reference the others are checked against, op by op (native/backend_check.cpp: attn-backend-check).
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn {

enum class Activation;

// A float32 array that lives where the backend computes. Created only by Backend::allocate.
class Buffer {
 public:
  virtual ~Buffer() = default;
  size_t size() const { return size_; }  // in floats

 protected:
  explicit Buffer(size_t size) : size_(size) {}

 private:
  size_t size_;
};
using BufferPtr = std::unique_ptr<Buffer>;

// Fused attention over heads laid out as the Q/K/V projections produce them: q [B, Sq, H, D],
// k and v [B, Sk, H, D], out [B, Sq, H, D] (row stride H·D).
struct AttentionShape {
  size_t batch = 1, heads = 1, seq_q = 1, seq_k = 1, head_dim = 1;
  float scale = 1.0f;   // scores = q·kᵀ · scale (1/√D in the tutorial)
  bool causal = false;  // key j > query i masked (Sq == Sk)
  // Packed sequences of any lengths (self-attention, only where packs_sequences()): sequence b is rows
  // offsets[b] … offsets[b + 1] of q, k, v, out and key_keep (batch + 1 entries), seq_q and seq_k unused,
  // and its weights are [H, S_b, S_b], one sequence after the other.
  const size_t* offsets = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "gl", "cuda"
  virtual BufferPtr allocate(size_t size) = 0;
  virtual void upload(Buffer& dst, const float* src, size_t size) = 0;
  virtual void download(const Buffer& src, float* dst, size_t size) = 0;
  virtual void synchronize() {}  // wait for queued work (for timing)
  virtual bool packs_sequences() const { return false; }  // attention takes AttentionShape::offsets

  // A constant right-hand side of matmul (a weight): b [k, n], or [n, k] when transposed. A backend may
  // keep it in the layout its matmul reads fastest (the CPU packs it once), so such a buffer goes only
  // to matmul, with the same k, n and b_transposed.
  virtual BufferPtr upload_weight(const float* b, size_t k, size_t n, bool transposed) {
    (void)transposed;
    BufferPtr buffer = allocate(k * n);
    upload(*buffer, b, k * n);
    return buffer;
  }

  // c[m, n] = a[m, k] · b[k, n], or · b[n, k]ᵀ when b_transposed (nn.Linear's weight layout).
  virtual void matmul(const Buffer& a, const Buffer& b, Buffer& c, size_t m, size_t k, size_t n,
                      bool b_transposed) = 0;
  // A Linear layer: y = x[rows, in] · weightᵀ + bias, then the activation when given; weight [out, in]
  // from upload_weight(…, transposed). These steps, which a backend may fuse.
  virtual void linear(const Buffer& x, const Buffer& weight, const Buffer& bias, Buffer& y, size_t rows, size_t in,
                      size_t out, std::optional<Activation> activation = std::nullopt) {
    matmul(x, weight, y, rows, in, out, true);
    add_bias(y, bias, rows, out);
    if (activation) this->activation(y, rows * out, *activation);
  }
  virtual void add_bias(Buffer& x, const Buffer& bias, size_t rows, size_t n) = 0;  // x[r, :] += bias
  virtual void add(const Buffer& a, const Buffer& b, Buffer& out, size_t size) = 0;  // out may be a or b
  virtual void activation(Buffer& x, size_t size, Activation kind) = 0;  // relu or exact (erf) gelu
  virtual void softmax_rows(Buffer& x, size_t rows, size_t n) = 0;
  // y[r, :] = (x[r, :] − mean) / sqrt(var + eps) · gamma + beta (biased variance, as nn.LayerNorm).
  virtual void layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, Buffer& y, size_t rows,
                          size_t n, float eps) = 0;
  // softmax(q·kᵀ·scale, masked) · v without storing the scores. key_keep [B, Sk]: 1 = attend, 0 = masked
  // (padding); null = all keys. A masked score is −1e9 as in the tutorial's masked_fill, so a row with
  // every key masked averages all values uniformly. weights [B, H, Sq, Sk], when non-null, receives the
  // attention weights as well (only when a caller shows them).
  virtual void attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                         const AttentionShape& shape, Buffer* weights) = 0;
};

// "cpu", plus "gl" and "cuda" when built in (native/backends.cpp registers them).
std::unique_ptr<Backend> make_cpu_backend(size_t threads);

}  // namespace attn
