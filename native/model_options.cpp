#include "native/model_options.hpp"

#include <cstdlib>

#include "core/base/error.hpp"

namespace attn::cli {
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
  if (by_name) return PretrainedFiles{o.config_file, o.weights, o.vocab, o.merges, ""};
  if (!o.config_file.empty() || !o.weights.empty() || !o.vocab.empty() || !o.merges.empty())
    throw InputError("--model-dir takes the folder's config.json, weights and tokenizer files: drop --config, "
                     "--weights, --vocab and --merges, or name the files without --model-dir");
  return pretrained_files_in(o.model_dir);
}

void add_pretrained_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("--model-dir", o.model_dir,
                 "a Hugging Face BERT or GPT-2 folder: config.json, model.safetensors, vocab.txt (BERT) or "
                 "vocab.json + merges.txt (GPT-2), optional tokenizer_config.json");
  cmd.add_option("--merges", o.merges, "GPT-2's merges.txt, beside a transformers --config, --weights and --vocab");
}

void add_model_options(CLI::App& app, ModelOptions& o, bool seed_with_weights) {
  CLI::App* cmd = &app;
  cmd->add_option("--config", o.config_file, "model config JSON: vocab_size, d_model, num_heads, num_layers, d_ff, "
                                             "max_len, num_classes, dropout, norm_first, activation, pooling, "
                                             "layer_style, final_norm, classifier_head");
  auto* seed = cmd->add_option("--seed", o.seed, "initialise as PyTorch does after torch.manual_seed(N) (default 0)");
  auto* weights = cmd->add_option("--weights", o.weights, "load a PyTorch state_dict saved as safetensors");
  if (!seed_with_weights) weights->excludes(seed);
  cmd->add_option("--vocab", o.vocab, "vocabulary JSON {token: id}; default: built from the sentences");
  cmd->add_option("--mask", o.mask, "none | padding | causal | padding+causal")->capture_default_str();
  cmd->add_option("--vocab-size", o.vocab_size, "embedding rows (default: what the input needs)");
  cmd->add_option("--d-model", o.d_model, "model width (default 128)");
  cmd->add_option("--num-heads", o.num_heads, "attention heads; must divide d_model (default 8)");
  cmd->add_option("--num-layers", o.num_layers, "encoder layers (default 4)");
  cmd->add_option("--d-ff", o.d_ff, "feed-forward width (default 4 x d_model)");
  cmd->add_option("--max-len", o.max_len, "positional-encoding rows (default 512)");
  cmd->add_option("--num-classes", o.num_classes, "classifier outputs (default 5)");
  cmd->add_option("--dropout", o.dropout, "dropout probability (default 0.1; used with --train)");
  cmd->add_option("--activation", o.activation, "relu | gelu (default relu)");
  cmd->add_option("--pooling", o.pooling, "mean (the tutorial's x.mean(dim=1))");
  cmd->add_option("--layer-style", o.layer_style, "tutorial | torch (nn.TransformerEncoderLayer weights)");
  auto* pre = cmd->add_flag("--norm-first", o.norm_first, "pre-norm layers");
  cmd->add_flag("--post-norm", o.post_norm, "post-norm layers (the tutorial's; default)")->excludes(pre);
  cmd->add_flag("--encoder-only", o.encoder_only, "no pooling and fc: stop at the encoder output");
  cmd->add_flag("--train", o.train, "training mode: dropout draws from the generator, as PyTorch's train()");
}

}  // namespace attn::cli
