// The first tutorial (docs/tutorials.md) as a pipeline: sentences → token ids → embedding ×
// √d_model → + positional encoding → Q/K/V (bias-free Linear) → masked scaled dot-product attention.
// With the same seed every parameter is drawn exactly as PyTorch draws it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/attention.hpp"
#include "core/base/json.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/trace.hpp"

namespace attn {

std::vector<std::string> tutorial_sentences();

struct TutorialConfig {
  std::vector<std::string> sentences = tutorial_sentences();
  uint64_t seed = 0;  // torch.manual_seed's value (negative seeds as two's complement)
  size_t d_model = 6;  // d_k = d_v = d_model
  size_t max_len = 100;
  MaskKind mask = MaskKind::padding;
};

struct TutorialParameters {
  Tensor embedding;      // [vocab, d_model], row [PAD] zero
  Tensor w_q, w_k, w_v;  // [d_model, d_model], PyTorch's [out, in]
};

struct TutorialRun {
  TutorialConfig config;
  Vocab vocab;
  TokenBatch batch;
  TutorialParameters parameters;
  Trace trace;  // token_ids … attention_output
};

// Throws InputError for anything PyTorch would refuse or that would not fit in memory. `hooks`
// (core/model/trace.hpp) replace stages by name: the interventions of core/model/interventions.hpp.
TutorialRun run_tutorial(const TutorialConfig& config, const Hooks* hooks = nullptr);
// The run's forward pass again, every buffer allocated once: token ids [B, S] → attention_output
// [B, S, d] with the kernels and order of run_tutorial, so bit-identical to its trace (what
// `attn bench tutorial` times).
class TutorialForward {
 public:
  explicit TutorialForward(const TutorialRun& run);
  const std::vector<float>& operator()(const std::vector<int64_t>& ids);

 private:
  const TutorialRun& run_;
  Tensor table_;
  std::vector<float> x_, q_, k_, v_, scores_, out_;
  std::vector<uint8_t> mask_;
};

// {"config", "vocab", "tokens", "stages"}: the `attn tutorial --json` document.
Json tutorial_json(const TutorialRun& run);

}  // namespace attn
