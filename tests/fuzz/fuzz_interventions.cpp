// What --ablate, --ablate-mlp, --ablation, --detect, --error-measure, --token-range and --sweep take,
// and a stage name (the engine's or TransformerLens's) hooked on a small classifier: the first byte
// picks the model's family, the first line is the list, the rest the stage name; its bytes are also
// token ids whose heads the detectors score, and a clean and a corrupted input (its two halves) that
// the list's sweeps patch.
#include <algorithm>

#include "core/model/head_detectors.hpp"
#include "core/model/interventions.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/patching.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

const attn::LoadedModel& loaded_classifier();

const attn::TransformerModel& classifier() { return *loaded_classifier().classifier; }

const attn::LoadedModel& loaded_classifier() {
  static const attn::LoadedModel model = [] {
    attn::TransformerConfig c;
    c.vocab_size = 6;
    c.d_model = 4;
    c.num_heads = 2;
    c.num_layers = 2;
    c.max_len = 8;
    attn::TorchGenerator gen(0);
    attn::LoadedModel m;
    m.mask = attn::MaskKind::causal;
    m.classifier = std::make_shared<const attn::TransformerModel>(attn::init_transformer(c, gen));
    return m;
  }();
  return model;
}

// The bytes' two halves as token ids, patched from the first into the second.
void patch(const std::vector<attn::PatchKind>& kinds, const std::string& bytes) {
  const size_t n = std::min<size_t>(bytes.size(), 16);
  std::vector<std::vector<int64_t>> halves(2);
  for (size_t i = 0; i < n; ++i) halves[2 * i / n].push_back(uint8_t(bytes[i]) % 6);
  if (halves[0].empty() || halves[1].empty()) return;
  const attn::LoadedModel& m = loaded_classifier();
  attn::activation_patching(m, m.from_ids({halves[0]}), m.from_ids({halves[1]}), attn::label_margin(bytes.size() % 5), kinds);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t newline = std::min(text.find('\n'), text.size());
  const std::string list = text.substr(0, newline), name = newline < text.size() ? text.substr(newline + 1) : "";
  attn::ModelStages stages = attn::model_stages(classifier().config);
  if (data[0] % 3 != 0) stages.family = data[0] % 3 == 1 ? attn::StageFamily::bert : attn::StageFamily::gpt2;
  attn::fuzz::guarded([&] { attn::parse_heads(list, stages); });
  attn::fuzz::guarded([&] { attn::parse_layers(list, stages, "--ablate-mlp"); });
  attn::fuzz::guarded([&] { attn::parse_ablation_kind(list); });
  attn::fuzz::guarded([&] { attn::parse_error_measure(list); });
  attn::fuzz::guarded([&] { attn::parse_token_range(list, 6); });
  attn::fuzz::guarded([&] { patch(attn::parse_patch_kinds(list), name); });
  attn::fuzz::guarded([&] {
    const std::vector<attn::HeadKind> kinds = attn::parse_head_kinds(list);
    std::vector<int64_t> ids;
    for (size_t i = 0; i < std::min<size_t>(name.size(), 8); ++i) ids.push_back(int64_t(uint8_t(name[i]) % 6));
    if (ids.empty()) return;
    const attn::ModelStages classifier_stages = attn::model_stages(classifier().config);
    const attn::Trace trace = attn::classify(classifier(), ids, 1, ids.size(), attn::MaskKind::causal, nullptr);
    attn::detect_heads(classifier_stages, trace, ids, {ids.size()}, kinds, {attn::ErrorMeasure::mul, bool(data[0] & 4), bool(data[0] & 8)});
  });
  return attn::fuzz::guarded([&] {
    const std::string stage = attn::resolve_stage_name(stages, name);
    if (stages.family != attn::StageFamily::classifier) return;
    attn::Hooks hooks;
    hooks.add(stage, [](attn::Tensor& t) { std::fill(t.begin(), t.end(), 0.5f); });
    attn::classify(classifier(), {1, 2, 3, 4, 5, 0}, 2, 3, attn::MaskKind::padding, nullptr, &hooks);
  });
}
