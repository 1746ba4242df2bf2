// The engine's tensors: row-major float32 xtensor arrays; masks are 0/1 bytes.
#pragma once
#include <cstdint>
#include <xtensor/xarray.hpp>

namespace attn {

using Tensor = xt::xarray<float, xt::layout_type::row_major>;
using MaskTensor = xt::xarray<uint8_t, xt::layout_type::row_major>;
using Shape = std::vector<size_t>;

}  // namespace attn
