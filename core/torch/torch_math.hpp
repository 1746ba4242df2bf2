// exp, sin, cos and tanh exactly as PyTorch 1.13 computes them on float32 tensors on x86-64 (its AVX2
// Vectorized<float> calls Sleef's u10 functions, which differ from libm in the last bit), so that
// softmax and the positional-encoding table match PyTorch bit for bit.
#pragma once
#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace attn {

float torch_expf(float x);
// torch.tanh of a float32 tensor whose vectorized loop covers the element (GELU's tanh form; libm's
// tanhf differs in the last bit, and differs between glibc and the WebAssembly build's musl).
float torch_tanhf(float x);
// torch.sin / torch.cos of a one-element tensor. In a longer tensor an element's last bit can
// depend on its neighbours (see torch_sin below), so tables must use torch_sin / torch_cos.
float torch_sinf(float x);
float torch_cosf(float x);
// torch_expf and torch_tanhf on every lane.
xsimd::batch<float> torch_exp(const xsimd::batch<float>& x);
xsimd::batch<float> torch_tanh(const xsimd::batch<float>& x);

// torch.sin / torch.cos of a contiguous float32 tensor of n elements (out may equal x). Sleef
// chooses its argument reduction once per vector of 8 elements, counted from the tensor's first
// element: one element with |x| >= 125 (or inf, NaN) moves all 8 to the slower reduction, which
// rounds differently in about 1% of cases. PyTorch splits a tensor that way when one thread
// computes it (small tensors, or torch.set_num_threads(1)); when threads share a tensor, each share
// starts a new vector, which lines up with these only when the share is a multiple of 8.
void torch_sin(const float* x, float* out, std::size_t n);
void torch_cos(const float* x, float* out, std::size_t n);

}  // namespace attn
