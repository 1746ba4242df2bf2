// Hot loops of the engine, written once with xsimd: AVX2/AVX-512 natively, SIMD128 in WebAssembly.
// Row-major float32 buffers. Each function has a plain reference twin in namespace `reference`,
// which the tests compare it with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/kernels/fast_kernels.hpp"

namespace attn {

// C[m,n] = A[m,k] · B[k,n]. Each element is c = c + a·b over k in order, each product and sum
// rounded on its own: the order of PyTorch's small-batch bmm loop and of the reference BLAS Debian's
// PyTorch uses, so results are bit-identical to it (and the same natively and in WebAssembly).
void matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n);
// C[m,n] = A[m,k] · B[n,k]ᵀ (nn.Linear's weight layout, QKᵀ), then + bias[j] when bias is non-null, then
// max(C, 0) when relu: the bits of those steps after the product, without their passes over C.
void matmul_nt(const float* a, const float* b, float* c, size_t m, size_t k, size_t n, const float* bias = nullptr,
               bool relu = false);
// C[m,n] = A[k,m]ᵀ · B[k,n] (a weight's gradient, grad_yᵀ·x), read in place: the same sums as matmul of
// the transposed copy.
void matmul_tn(const float* a, const float* b, float* c, size_t m, size_t k, size_t n);
// A half-precision weight's bits ([k, n] for matmul, [n, k] for matmul_nt), widened as the product
// packs them: the same bits as the product with the widened weight.
struct HalfMatrix {
  const uint16_t* bits;
  HalfType type;
};
void matmul(const float* a, HalfMatrix b, float* c, size_t m, size_t k, size_t n);
void matmul_nt(const float* a, HalfMatrix b, float* c, size_t m, size_t k, size_t n, const float* bias = nullptr,
               bool relu = false);
// How matmul and matmul_nt compute on this thread while one is in scope (the previous one is restored
// after): Rounding::exact by default, on the calling thread. The training fast path (attn train
// --backend cpu) fuses the products; either may spread them over a pool, which leaves every bit as is
// (each element's sum keeps its order).
class ProductMode {
 public:
  ProductMode(Rounding rounding, ThreadPool* pool);
  ~ProductMode();
  ProductMode(const ProductMode&) = delete;
  ProductMode& operator=(const ProductMode&) = delete;

 private:
  Rounding previous_rounding_;
  ThreadPool* previous_pool_;
};
// fn(begin, end) over [0, n) in pieces of `grain` (the last shorter), spread over the pool of the
// ProductMode in scope (on this thread without one): for element- and row-wise steps, whose bits do not
// depend on how the items are split.
void parallel_pieces(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);
void multiply_scalar(float* x, size_t n, float s);  // x ⊗ s, as tensor * python float
void divide_scalar(float* x, size_t n, float s);    // x ⊘ s (a true division, as PyTorch's div)
void add(const float* a, const float* b, float* c, size_t n);
void multiply(const float* a, const float* b, float* c, size_t n);  // element by element
// x[i] = keep[i] ? x[i] : value (Tensor.masked_fill(mask == 0, value)).
void masked_fill(float* x, const uint8_t* keep, size_t n, float value);
// Softmax over each row of x[rows, n], in place, as PyTorch's CPU kernel: exp(x - max) with its exp,
// summed in its order, then × (1 / sum).
void softmax_rows(float* x, size_t rows, size_t n);
// Softmax's backward (_softmax_backward_data) over each row, in place on grad: (grad − Σ grad·out) · out,
// the sum in the order of softmax's own sum. `out` is softmax's result.
void softmax_backward_rows(const float* out, float* grad, size_t rows, size_t n);
// transformers' NewGELUActivation in float32, in place: x ← ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) with
// x³ as x·x·x (torch.pow) and torch.tanh's bits; tanh[i] (when given) keeps the tanh for the backward.
void gelu_new(float* x, float* tanh, size_t n);
// Tensor.sum(0) of a contiguous [rows, n] matrix (a Linear bias's gradient), in PyTorch's order.
void column_sums(const float* x, size_t rows, size_t n, float* out);

// Tensor.sum() of a contiguous row in the order of PyTorch's cascade-sum kernel (bit-identical to it
// for rows up to about 1000 elements, as the walkthrough's row sums need).
float tensor_sum(const float* x, size_t n);

namespace reference {
void matmul(const float* a, const float* b, float* c, size_t m, size_t k, size_t n);
void softmax_rows(float* x, size_t rows, size_t n);
}  // namespace reference

}  // namespace attn
