// The CUDA side of the cuda backend on raw float pointers (device memory), so that the .cu files see
// neither xtensor nor the Backend classes; cuda_backend.cpp adapts it to Backend. Every function runs
// on the default stream, in order. A failing CUDA call throws std::runtime_error naming it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace attn::cuda {

// The device (number 0) and a cuBLAS handle. Throws InputError when there is no CUDA driver or device.
class Device {
 public:
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  std::string description() const;  // name, compute capability, memory
  float* allocate(size_t size);     // size floats; std::bad_alloc when the device is full
  void release(float* data) noexcept;
  void to_device(float* dst, const float* src, size_t size);
  void to_host(float* dst, const float* src, size_t size);
  void synchronize();
  // c[m, n] = a[m, k] · b[k, n] (or b[n, k]ᵀ), row-major, by cuBLAS in float32 (no TF32).
  void matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n, bool b_transposed);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

void add(const float* a, const float* b, float* out, size_t size, size_t period);  // out[i] = a[i] + b[i % period]
void activation(float* x, size_t size, bool gelu);  // relu, or the exact (erf) gelu
void softmax_rows(float* x, size_t rows, size_t n);
void layer_norm(const float* x, const float* gamma, const float* beta, float* y, size_t rows, size_t n, float eps);

// Backend::attention's layouts: q, out [B, Sq, H, D]; k, v [B, Sk, H, D]; keep [B, Sk] (1 = attend) or
// null; stats [B, H, Sq, 2] (each row's softmax max and sum) or null.
struct AttentionArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* keep = nullptr;
  float* out = nullptr;
  float* stats = nullptr;
  size_t batch = 1, heads = 1, seq_q = 1, seq_k = 1, head_dim = 1;
  float scale = 1.0f;
  bool causal = false;
};
constexpr size_t kMaxHeadDim = 512;  // the fused kernel keeps a query row in registers
void attention(const AttentionArgs& args);  // InputError when head_dim > kMaxHeadDim
// weights [B, H, Sq, Sk] from the stats a previous attention() call wrote.
void attention_weights(const AttentionArgs& args, float* weights);

}  // namespace attn::cuda
