#include "core/model/trace.hpp"

#include <cctype>

#include <stdexcept>

namespace attn {

void Trace::record(std::string name, Tensor value, PrintDtype dtype) {
  stages_.push_back({std::move(name), std::move(value), dtype});
}

const Tensor& Trace::at(const std::string& name) const {
  for (const auto& s : stages_)
    if (s.name == name) return s.value;
  throw std::out_of_range("no stage named '" + name + "' in the trace");
}

Tensor to_tensor(const MaskTensor& mask) {
  Tensor t = Tensor::from_shape(mask.shape());
  std::copy(mask.begin(), mask.end(), t.begin());
  return t;
}

Json stages_json(const Trace& trace) {
  Json stages = Json::array();
  for (const auto& s : trace.stages()) {
    Json data = Json::array();
    for (float v : s.value) {
      if (s.dtype == PrintDtype::float32)
        data.push_back(v);
      else
        data.push_back(static_cast<int64_t>(v));
    }
    stages.push_back({{"name", s.name}, {"shape", Shape(s.value.shape().begin(), s.value.shape().end())},
                      {"data", std::move(data)}});
  }
  return stages;
}

std::string torch_repr(const Tensor& t, PrintDtype dtype) {
  return torch_repr(Shape(t.shape().begin(), t.shape().end()), std::vector<double>(t.begin(), t.end()), dtype);
}

std::optional<LayerStage> layer_of_stage(std::string_view name) {
  for (std::string_view prefix : {"layers.", "encoder.layer.", "h."}) {
    const size_t at = prefix.size();
    if (name.substr(0, at) != prefix || at >= name.size() || !std::isdigit(static_cast<unsigned char>(name[at]))) continue;
    size_t end = at, index = 0;
    for (; end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])); ++end)
      index = index * 10 + size_t(name[end] - '0');
    if ((end < name.size() && name[end] != '.') || end - at > 9) return std::nullopt;  // 9 digits: more than any model
    return LayerStage{index, end < name.size() ? name.substr(end + 1) : std::string_view(), at};
  }
  return std::nullopt;
}

}  // namespace attn
