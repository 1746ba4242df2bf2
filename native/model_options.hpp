// Turning the shared model options into a model: config (--config plus flags), vocabulary, and
// parameters (seeded or loaded).
#pragma once
#include <optional>

#include "core/tokenizer.hpp"
#include "core/transformer.hpp"
#include "native/commands.hpp"

namespace attn::cli {

// The config: `base` (a config's JSON keys; empty: the tutorial's defaults), --config over it, then the flags.
TransformerConfig model_config(const ModelOptions& o, const Json& base = Json::object());
// The --vocab file, if given.
std::optional<Vocab> model_vocab(const ModelOptions& o);
// Seeded (--seed, default 0) or loaded (--weights); vocab_size, when not configured, is `needed`.
TransformerModel build_model(const ModelOptions& o, TransformerConfig config, size_t needed, TorchGenerator& gen);

}  // namespace attn::cli
