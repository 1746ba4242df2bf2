// Interventions on any model the engine runs (the first tutorial's single attention, the second
// tutorial's classifier, BERT, GPT-2, the Llama family's decoders), all as hooks on
// named stages (core/model/trace.hpp): TransformerLens's hook names resolved to the engine's, and
// ablation of attention heads (their output z, before the output projection) and of feed-forward
// blocks, with zeros or with means taken from a clean run. docs/interventions.md lists the names.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/model/decoder.hpp"
#include "core/model/pretrained.hpp"
#include "core/model/trace.hpp"
#include "core/model/transformer.hpp"
#include "core/model/tutorial.hpp"

namespace attn {

enum class StageFamily { tutorial, classifier, bert, gpt2, decoder };

// "the first tutorial's attention", "the tutorial's classifier", "BERT", "GPT-2", "the Llama family's
// decoder" (for messages).
std::string stage_family_name(StageFamily family);

// What the stage names of a model depend on.
struct ModelStages {
  StageFamily family = StageFamily::classifier;
  size_t layers = 0, heads = 0, head_dim = 0;
  bool norm_first = false, final_norm = false;  // the classifier's
  size_t kv_heads = 0;  // the Llama family's key/value heads, each serving heads / kv_heads query heads; 0: none
  size_t group() const { return kv_heads ? heads / kv_heads : 1; }  // query heads per key/value head
  size_t hidden = 0;    // the residual stream's width when it is not heads · head_dim (Qwen3); 0: it is
  size_t width() const { return hidden ? hidden : heads * head_dim; }
};
ModelStages model_stages(const TransformerConfig& config);
ModelStages model_stages(const PretrainedConfig& config);
ModelStages model_stages(const DecoderConfig& config);
// The first tutorial: one layer of one head (d_model wide) whose output is the last stage.
ModelStages model_stages(const TutorialConfig& config);

// A TransformerLens hook name (hook_embed, blocks.L.attn.hook_z, …) as this model's stage name; any
// other name is returned as given (the engine's own names). Throws InputError for a TransformerLens
// name the model has no stage for, or a layer out of range.
std::string resolve_stage_name(const ModelStages& model, const std::string& name);
// The TransformerLens names `model` accepts, each with the engine's name it means.
std::vector<std::pair<std::string, std::string>> stage_aliases(const ModelStages& model);

struct HeadIndex {
  size_t layer = 0, head = 0;
  bool operator==(const HeadIndex& o) const { return layer == o.layer && head == o.head; }
  bool operator<(const HeadIndex& o) const { return layer != o.layer ? layer < o.layer : head < o.head; }
};
// "L.H[,L.H…]", each in range for `model`; else InputError naming the item. A decoder with grouped
// key/value heads also takes "kvL.J": key/value head J of layer L with every query head it serves.
std::vector<HeadIndex> parse_heads(const std::string& text, const ModelStages& model);
// "L[,L…]": layers for --ablate-mlp.
std::vector<size_t> parse_layers(const std::string& text, const ModelStages& model, const std::string& flag);
// The same lists read before the model is known (a playground setting), checked by check_ablation.
std::vector<HeadIndex> parse_head_list(const std::string& text, const std::string& flag);
std::vector<size_t> parse_layer_list(const std::string& text, const std::string& flag);
std::string head_list_text(const std::vector<HeadIndex>& heads);  // "0.1,1.3"
std::string layer_list_text(const std::vector<size_t>& layers);   // "0,2"

enum class AblationKind { zero, mean };
AblationKind parse_ablation_kind(const std::string& text);  // "zero" | "mean"
const char* ablation_kind_name(AblationKind kind);

struct Ablation {
  std::vector<HeadIndex> heads;
  std::vector<size_t> mlps;  // feed-forward blocks whose output is replaced
  AblationKind kind = AblationKind::zero;
  bool empty() const { return heads.empty() && mlps.empty(); }
  bool operator==(const Ablation& o) const { return heads == o.heads && mlps == o.mlps && kind == o.kind; }
};
// InputError naming the first head or layer out of range for `model`, or a model without heads.
void check_ablation(const Ablation& ablation, const ModelStages& model);

// {"heads": [[L, H], …], "mlps": [L, …], "kind"} (--json's "ablation") and the text report's first line
// ("ablated (zero): head 0.1 mlp 1\n"; empty without an ablation).
Json ablation_json(const Ablation& ablation);
std::string ablation_text(const Ablation& ablation);

// The stages an ablation replaces: a head's z (blocks.L.attn.hook_z, [B, S, H·d_head], head h the
// columns h·d_head …) and a block's MLP output (blocks.L.hook_mlp_out).
std::string head_output_stage(const ModelStages& model, size_t layer);
std::string mlp_output_stage(const ModelStages& model, size_t layer);
// blocks.L.hook_attn_out: the attention block's output, after the output projection.
std::string attention_output_stage(const ModelStages& model, size_t layer);
// The residual stream between the layers, layers + 1 stages: each layer's input (blocks.L.hook_resid_pre)
// and the last layer's output. Post-norm models' streams are the normalised ones they record.
std::vector<std::string> residual_stream_stages(const ModelStages& model);

// Hooks that ablate. Mean ablation replaces every position with the stage's mean over the real tokens
// (`lengths[b]` first positions of item b) of every item of `clean`, a run without interventions.
Hooks ablation_hooks(const ModelStages& model, const Ablation& ablation, const Trace* clean,
                     const std::vector<size_t>& lengths);

// `run` (a forward pass: const Hooks* → Trace) with the ablation's hooks, checked against `model`; mean
// ablation takes its means from a clean run of the same inputs (`lengths`: their real tokens). With
// `output` and `clean_output`, the clean run's `output` stage is kept there, to show what changed.
template <class Run>
Trace ablated_trace(const Ablation& ablation, const ModelStages& model, const std::vector<size_t>& lengths, const Run& run,
                    const char* output = nullptr, Tensor* clean_output = nullptr) {
  if (ablation.empty()) return run(nullptr);
  check_ablation(ablation, model);
  const Trace clean = run(nullptr);
  if (output && clean_output) *clean_output = clean.at(output);
  const Hooks hooks = ablation_hooks(model, ablation, &clean, lengths);
  return run(&hooks);
}

}  // namespace attn
