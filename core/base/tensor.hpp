// The engine's tensors: row-major float32 xtensor arrays; masks are 0/1 bytes.
#pragma once
#include <cstdint>
#include <string>
#include <xtensor/xarray.hpp>

namespace attn {

using Tensor = xt::xarray<float, xt::layout_type::row_major>;
using MaskTensor = xt::xarray<uint8_t, xt::layout_type::row_major>;
using Shape = std::vector<size_t>;

// "[2, 4, 4]": a shape (a Shape, or a tensor's own) as messages and the UI print it.
template <class S>
std::string shape_text(const S& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace attn
