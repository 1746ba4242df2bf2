// The model options every front end shares (attn encode, attn batch, attn train, the playground's
// Train tab), as the text the user gave, and how they become a model: config (a config file plus
// flags), vocabulary, and parameters (seeded or loaded). The CLI registers them (native/commands.hpp).
#pragma once
#include <optional>
#include <string>

#include "core/model/pretrained_files.hpp"
#include "core/model/transformer.hpp"
#include "core/text/tokenizer.hpp"
#include "core/torch/rng.hpp"

namespace attn {

struct ModelOptions {
  std::string config_file, seed, weights, vocab, mask = "padding";
  std::string model_dir, merges;  // a Hugging Face checkpoint
  std::string model_name;         // --model NAME[@REVISION]: the CLI makes it model_dir (native/hub.hpp)
  // Model sizes as flags (override the config file); empty = not given.
  std::string vocab_size, d_model, num_heads, num_layers, d_ff, max_len, num_classes, dropout, activation,
      pooling, layer_style;
  bool norm_first = false, post_norm = false, encoder_only = false, train = false;
};

// The config: `base` (a config's JSON keys; empty: the tutorial's defaults), --config over it, then the flags.
TransformerConfig model_config(const ModelOptions& o, const Json& base = Json::object());
// The --vocab file, if given.
std::optional<Vocab> model_vocab(const ModelOptions& o);
// Seeded (--seed, default 0) or loaded (--weights); vocab_size, when not configured, is `needed`.
TransformerModel build_model(const ModelOptions& o, TransformerConfig config, size_t needed, TorchGenerator& gen);
// The Hugging Face checkpoint the options name: --model-dir, or --config holding a transformers config
// (with --weights, --vocab and --merges by name). None: the tutorial's classifier. Flags of the
// classifier alone (--seed, sizes, --mask, --train) are refused beside a checkpoint.
std::optional<PretrainedFiles> pretrained_files(const ModelOptions& o);

}  // namespace attn
