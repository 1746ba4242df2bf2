// What a pipeline computed: its named stages in order, each a tensor. The CLI prints it, the GUI draws
// it, the tests compare it (JSON form documented in docs/trace-json.md). Interventions are hooks on
// those names (docs/interventions.md): a forward pass hands each stage to its trace, which first runs
// the hooks set on that name, so the forward continues from, and records, what the hooks left.
#pragma once
#include <functional>
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

// A hook changes a stage's tensor in place (its shape stays: a hook that changes it is an InputError).
using StageHook = std::function<void(Tensor& value)>;

class Hooks {
 public:
  // `stage` is the engine's name (resolve TransformerLens's names first: core/model/interventions.hpp).
  void add(std::string stage, StageHook hook);
  bool empty() const { return hooks_.empty(); }
  bool has(const std::string& stage) const;
  // Runs the hooks on `stage`, in the order added.
  void run(const std::string& stage, Tensor& value) const;
  // After a forward pass: an InputError for each hook whose stage the pass did not hand on, naming the
  // near names of `trace` (an unknown name), or saying the stage cannot be replaced (one it only records).
  void check_reached(const class Trace& trace) const;

 private:
  struct Hook {
    std::string stage;
    StageHook run;
    mutable bool reached = false;
  };
  std::vector<Hook> hooks_;
};

// The (at most three) names among `names` nearest to `name` (edit distance), as "a, b, c", for messages.
std::string near_names(const std::string& name, const std::vector<std::string>& names);

class Trace {
 public:
  explicit Trace(const Hooks* hooks = nullptr) : hooks_(hooks && !hooks->empty() ? hooks : nullptr) {}
  // A stage the forward pass continues from: the hooks on `name` change `value` first; a copy is recorded.
  void stage(std::string name, Tensor& value, PrintDtype dtype = PrintDtype::float32);
  // A stage the pass only records (computed inside a fused step, or an input): hooks cannot replace it.
  void record(std::string name, Tensor value, PrintDtype dtype = PrintDtype::float32);
  bool hooked(const std::string& name) const { return hooks_ && hooks_->has(name); }
  const std::vector<Stage>& stages() const { return stages_; }
  const Tensor& at(const std::string& name) const;  // throws std::out_of_range for an unknown stage

 private:
  std::vector<Stage> stages_;
  const Hooks* hooks_ = nullptr;
};

Tensor to_tensor(const MaskTensor& mask);

// A stage of a layer, under any model's naming: "layers.3.norm1" (the tutorials), "encoder.layer.3.…"
// (BERT), "h.3.ln_1" and the block's own "h.3" (GPT-2), "model.layers.3.…" (the Llama family), "blocks.3.…" (TransformerLens's names) → index 3,
// rest "norm1" (or ""), and the offset
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
