#include "native/cuda/cuda_backend.hpp"

#include <stdexcept>

#include "core/base/error.hpp"
#include "core/model/transformer.hpp"  // Activation
#include "native/cuda/cuda_ops.hpp"

namespace attn {
namespace {

class CudaBuffer final : public Buffer {
 public:
  CudaBuffer(cuda::Device& owner, size_t size) : Buffer(size), data(owner.allocate(size)), owner_(owner) {}
  ~CudaBuffer() override { owner_.release(data); }
  float* const data;  // device memory

 private:
  cuda::Device& owner_;
};

float* data(Buffer& buffer) { return static_cast<CudaBuffer&>(buffer).data; }
const float* data(const Buffer& buffer) { return static_cast<const CudaBuffer&>(buffer).data; }

size_t checked(const Buffer& buffer, size_t size) {
  if (size > buffer.size()) throw std::out_of_range("cuda backend: transfer larger than the buffer");
  return size;
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string device() const { return device_.description(); }
  BufferPtr allocate(size_t size) override { return std::make_unique<CudaBuffer>(device_, size); }
  void upload(Buffer& dst, const float* src, size_t size) override {
    device_.to_device(data(dst), src, checked(dst, size));
  }
  void download(const Buffer& src, float* dst, size_t size) override {
    device_.to_host(dst, data(src), checked(src, size));
  }
  void synchronize() override { device_.synchronize(); }
  void matmul(const Buffer& a, const Buffer& b, Buffer& c, size_t m, size_t k, size_t n,
              bool b_transposed) override {
    device_.matmul(data(a), data(b), data(c), m, k, n, b_transposed);
  }
  void add_bias(Buffer& x, const Buffer& bias, size_t rows, size_t n) override {
    cuda::add(data(x), data(bias), data(x), rows * n, n);
  }
  void add(const Buffer& a, const Buffer& b, Buffer& out, size_t size) override {
    cuda::add(data(a), data(b), data(out), size, size);
  }
  void activation(Buffer& x, size_t size, Activation kind) override {
    cuda::activation(data(x), size, kind == Activation::gelu);
  }
  void softmax_rows(Buffer& x, size_t rows, size_t n) override { cuda::softmax_rows(data(x), rows, n); }
  void layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, Buffer& y, size_t rows, size_t n,
                  float eps) override {
    cuda::layer_norm(data(x), data(gamma), data(beta), data(y), rows, n, eps);
  }
  void attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                 const AttentionShape& shape, Buffer* weights) override;

 private:
  cuda::Device device_;  // first member: made first, released last
  BufferPtr stats_;      // each attention row's max and sum, for the weights
};

void CudaBackend::attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                            const AttentionShape& shape, Buffer* weights) {
  if (shape.offsets) throw std::logic_error("cuda backend: packed sequences are not supported");  // packs_sequences()
  if (shape.causal && shape.seq_q != shape.seq_k) throw InputError("a causal mask needs as many queries as keys");
  size_t rows = shape.batch * shape.heads * shape.seq_q;
  if (weights && (!stats_ || stats_->size() < 2 * rows)) stats_ = allocate(2 * rows);
  cuda::AttentionArgs args;
  args.q = data(q);
  args.k = data(k);
  args.v = data(v);
  args.keep = key_keep ? data(*key_keep) : nullptr;
  args.out = data(out);
  args.stats = weights ? data(*stats_) : nullptr;
  args.batch = shape.batch;
  args.heads = shape.heads;
  args.seq_q = shape.seq_q;
  args.seq_k = shape.seq_k;
  args.head_dim = shape.head_dim;
  args.scale = shape.scale;
  args.causal = shape.causal;
  cuda::attention(args);
  if (weights) cuda::attention_weights(args, data(*weights));
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string& device) {
  auto backend = std::make_unique<CudaBackend>();
  device = backend->device();
  return backend;
}

}  // namespace attn
