#include "core/model/trace.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/base/error.hpp"

namespace attn {

void Hooks::add(std::string stage, StageHook hook) { hooks_.push_back({std::move(stage), std::move(hook)}); }

bool Hooks::has(const std::string& stage) const {
  return std::any_of(hooks_.begin(), hooks_.end(), [&](const Hook& h) { return h.stage == stage; });
}

void Hooks::run(const std::string& stage, Tensor& value) const {
  for (const Hook& h : hooks_) {
    if (h.stage != stage) continue;
    const std::vector<size_t> shape(value.shape().begin(), value.shape().end());
    h.run(value);
    h.reached = true;
    if (!std::equal(shape.begin(), shape.end(), value.shape().begin(), value.shape().end()))
      throw InputError("a hook on '" + stage + "' changed its shape");
  }
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string near_names(const std::string& name, const std::vector<std::string>& names) {
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const std::string& n : names) ranked.emplace_back(edit_distance(name, n), n);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) out += (i ? ", " : "") + ranked[i].second;
  return out;
}

void Hooks::check_reached(const Trace& trace) const {
  std::vector<std::string> names;
  for (const Stage& s : trace.stages()) names.push_back(s.name);
  for (const Hook& h : hooks_) {
    if (h.reached) continue;
    if (std::find(names.begin(), names.end(), h.stage) != names.end())
      throw InputError("stage '" + h.stage + "' is recorded but not handed on (an input, or computed inside a "
                       "fused step): it cannot be replaced; hook a stage after it");
    throw InputError("no stage named '" + h.stage + "' in this model; near names: " + near_names(h.stage, names));
  }
}

void Trace::stage(std::string name, Tensor& value, PrintDtype dtype) {
  if (hooks_) hooks_->run(name, value);
  stages_.push_back({std::move(name), value, dtype});
}

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
  for (std::string_view prefix : {"layers.", "encoder.layer.", "h.", "blocks.", "model.layers."}) {
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
