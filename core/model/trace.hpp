// What a pipeline computed: its named stages in order, each a tensor. The CLI prints it, the GUI draws
// it, the tests compare it (JSON form documented in docs/trace-json.md).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/json.hpp"
#include "core/base/tensor.hpp"
#include "core/torch/torch_print.hpp"

namespace attn {

struct Stage {
  std::string name;
  Tensor value;
  PrintDtype dtype = PrintDtype::float32;  // how the values are meant: floats, ids or a 0/1 mask
};

class Trace {
 public:
  void record(std::string name, Tensor value, PrintDtype dtype = PrintDtype::float32);
  const std::vector<Stage>& stages() const { return stages_; }
  const Tensor& at(const std::string& name) const;  // throws std::out_of_range for an unknown stage

 private:
  std::vector<Stage> stages_;
};

Tensor to_tensor(const MaskTensor& mask);

// A stage of a layer, under any model's naming: "layers.3.norm1" (the tutorials), "encoder.layer.3.…"
// (BERT), "h.3.ln_1" and the block's own "h.3" (GPT-2) → index 3, rest "norm1" (or ""), and the offset
// where the number starts. `rest` views `name` (no allocation: the UI asks every frame).
struct LayerStage {
  size_t index = 0;
  std::string_view rest;
  size_t number_at = 0;
};
std::optional<LayerStage> layer_of_stage(std::string_view name);
// [{"name", "shape", "data"}...]; ids and masks as integers, floats as float32.
Json stages_json(const Trace& trace);
// PyTorch's print() text of a stage.
std::string torch_repr(const Tensor& t, PrintDtype dtype = PrintDtype::float32);

}  // namespace attn
