// exp, sin and cos exactly as PyTorch 1.13 computes them on float32 tensors on x86-64 (its AVX2
// Vectorized<float> calls Sleef's u10 functions, which differ from libm in the last bit), so that
// softmax and the positional-encoding table match PyTorch bit for bit.
#pragma once
#include <xsimd/xsimd.hpp>

namespace attn {

float torch_expf(float x);
float torch_sinf(float x);
float torch_cosf(float x);
// torch_expf on every lane.
xsimd::batch<float> torch_exp(const xsimd::batch<float>& x);

}  // namespace attn
