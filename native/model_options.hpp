// Turning the shared model options into a model: config (--config plus flags), vocabulary, and
// parameters (seeded or loaded).
#pragma once
#include <optional>

#include "core/model/pretrained_files.hpp"
#include "core/text/tokenizer.hpp"
#include "core/model/transformer.hpp"
#include "native/commands.hpp"

namespace attn::cli {

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

}  // namespace attn::cli
