#include "core/model/model_options.hpp"

#include <cstdlib>

#include "core/base/error.hpp"
#include "core/base/parse.hpp"
#include "core/io/safetensors.hpp"

namespace attn {
namespace {

double parse_probability(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0.0 && v < 1.0))
    throw InputError(flag + " expects a number in [0, 1), got '" + text + "'");
  return v;
}

}  // namespace

// `base`, then --config on top of it, then the size flags.
TransformerConfig model_config(const ModelOptions& o, const Json& base) {
  const Json file = o.config_file.empty() ? Json::object() : read_json_file(o.config_file, "config file");
  if (!file.is_object()) throw InputError("config file '" + o.config_file + "' must hold a JSON object");
  Json j = base;
  j.update(file);
  const std::pair<const char*, const std::string*> sizes[] = {
      {"vocab_size", &o.vocab_size}, {"d_model", &o.d_model},   {"num_heads", &o.num_heads},
      {"num_layers", &o.num_layers}, {"d_ff", &o.d_ff},         {"max_len", &o.max_len},
      {"num_classes", &o.num_classes}};
  for (const auto& [key, text] : sizes)
    if (!text->empty()) j[key] = parse_size(std::string("--") + key, *text, 0);
  if (!o.dropout.empty()) j["dropout"] = parse_probability("--dropout", o.dropout);
  if (!o.activation.empty()) j["activation"] = o.activation;
  if (!o.pooling.empty()) j["pooling"] = o.pooling;
  if (!o.layer_style.empty()) j["layer_style"] = o.layer_style;
  if (o.norm_first) j["norm_first"] = true;
  if (o.post_norm) j["norm_first"] = false;
  if (o.encoder_only) j["classifier_head"] = false;
  return config_from_json(j);
}

std::optional<Vocab> model_vocab(const ModelOptions& o) {
  if (o.vocab.empty()) return std::nullopt;
  return read_vocab_file(o.vocab);
}

TransformerModel build_model(const ModelOptions& o, TransformerConfig config, size_t needed, TorchGenerator& gen) {
  if (config.vocab_size == 0) config.vocab_size = needed;  // not configured: as many as the inputs need
  if (!o.weights.empty()) return load_transformer(config, read_safetensors(o.weights));
  return init_transformer(config, gen);
}

std::optional<PretrainedFiles> pretrained_files(const ModelOptions& o) {
  const bool by_name = o.model_dir.empty() && !o.config_file.empty() &&
                       is_pretrained_config(read_json_file(o.config_file, "config file"));
  if (o.model_dir.empty() && !by_name) {
    if (!o.merges.empty()) throw InputError("--merges belongs to a GPT-2 checkpoint (--model-dir or its config.json)");
    return std::nullopt;
  }
  const std::pair<const char*, bool> classifier_only[] = {
      {"--seed", !o.seed.empty()}, {"--vocab-size", !o.vocab_size.empty()}, {"--d-model", !o.d_model.empty()},
      {"--num-heads", !o.num_heads.empty()}, {"--num-layers", !o.num_layers.empty()}, {"--d-ff", !o.d_ff.empty()},
      {"--max-len", !o.max_len.empty()}, {"--num-classes", !o.num_classes.empty()}, {"--dropout", !o.dropout.empty()},
      {"--activation", !o.activation.empty()}, {"--pooling", !o.pooling.empty()},
      {"--layer-style", !o.layer_style.empty()}, {"--norm-first", o.norm_first}, {"--post-norm", o.post_norm},
      {"--encoder-only", o.encoder_only}, {"--train", o.train}, {"--mask", o.mask != "padding"}};
  for (const auto& [flag, given] : classifier_only)
    if (given) throw InputError(std::string(flag) + " is an option of the tutorial's classifier, not of a checkpoint "
                                "(its config.json says what it is; BERT masks padding, GPT-2 the future)");
  if (by_name) return PretrainedFiles{o.config_file, o.weights, o.vocab, o.merges, "", ""};
  if (!o.config_file.empty() || !o.weights.empty() || !o.vocab.empty() || !o.merges.empty())
    throw InputError("--model-dir takes the folder's config.json, weights and tokenizer files: drop --config, "
                     "--weights, --vocab and --merges, or name the files without --model-dir");
  return pretrained_files_in(o.model_dir);
}

}  // namespace attn
