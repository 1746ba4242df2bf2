// The CUDA backend: cuBLAS for matrix products, kernels of our own (native/cuda/cuda_ops.cu) for the
// rest, fused flash attention included. Checked op by op against the CPU backend by attn-backend-check.
#pragma once
#include <memory>
#include <string>

#include "core/backend/backend.hpp"

namespace attn {

// Device 0; `device` receives its name. Throws InputError when there is no CUDA driver or device.
// Release its buffers before it.
std::unique_ptr<Backend> make_cuda_backend(std::string& device);

}  // namespace attn
